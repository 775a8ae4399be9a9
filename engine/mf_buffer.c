/*
** mf_buffer.c: CapacityBuffers (autoscaling.x-k8s.io), as Karpenter's
** CapacityBuffer support (its feature gate of that name; the
** capacitybuffer controller, state/virtualpods and provisioning/buffers.go
** in kubernetes-sigs/karpenter).
**
** A buffer asks for headroom: N chunks shaped as a pod template, kept as
** placeholder pods the scheduler places like any pending pod, so that
** capacity exists before the workload needs it. The template is a
** PodTemplate of the buffer's namespace (spec.podTemplateRef) or a
** Deployment's, ReplicaSet's or StatefulSet's (spec.scalableRef); N is
** spec.replicas, or spec.percentage of the scalable workload's replicas
** (rounded up, at least one), the larger of the two when both are given,
** and at most as many chunks as fit in spec.limits when given (alone, the
** limits say how many).
**
** dovetail plays the buffer controller too: a buffer's chunks are a
** workload of N replicas named capacity-buffer-<name>-<k> (k from 1, as
** Karpenter names its virtual pods), the template's pod without its
** claims' volumes and node name, queued after every real pod (the
** kube-scheduler binds real pods to the room before the next round sees
** the placeholders), and never nominated to a claim.
*/
#include "reader.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void mf_buffer_free(dt_buffer *b) {
  dt__free(b->ns);
  dt__free(b->name);
  dt__free(b->tmpl);
  dt__free(b->kind);
  dt__free(b->target);
  dt__rlist_free(&b->limits);
}

static const char *const k_spec_fields[] = {"provisioningStrategy", "podTemplateRef", "scalableRef", "replicas",
                                            "percentage",           "limits",         NULL};

/* A reference's name: a non-empty string, as the CRD's MinLength 1. */
static int ref_name(mctx *x, const cJSON *ref, const char *field, const char *key, char **out) {
  char f[200];
  dt__join(f, sizeof f, field, ".", key);
  const char *n = mf_get_str(ref, key);
  if (!n || !*n) return mf_bad(x, f, "missing");
  return (*out = dt__strdup(n)) ? 0 : mf_oom(x);
}

static int count_field(mctx *x, const cJSON *spec, const char *key, bool *has, int64_t *v) {
  const cJSON *c = mf_get(spec, key);
  char f[100];
  dt__join(f, sizeof f, "spec.", key);
  if (!c || cJSON_IsNull(c)) return 0;
  if (!mf_is_int_in(c, 0, 2147483647)) return mf_bad(x, f, "expected an integer from 0 to 2147483647");
  *has = true;
  *v = (int64_t)c->valuedouble;
  return 0;
}

int mf_capacity_buffer(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (mf_meta(x, o, &ns, &name, true) || mf_check_duplicate(x, ns, name)) return mf_failed(x);
  const cJSON *spec = mf_get(o, "spec");
  if (!cJSON_IsObject(spec)) return mf_bad(x, "spec", "missing or not a map");
  if (mf_known_fields(x, spec, "spec", k_spec_fields)) return mf_failed(x);
  dt_buffer b = {0};
  b.file = x->file;
  int rc = !(b.ns = dt__strdup(ns)) || !(b.name = dt__strdup(name)) ? mf_oom(x) : 0;
  const cJSON *pt = mf_get(spec, "podTemplateRef"), *sr = mf_get(spec, "scalableRef");
  bool has_pt = pt && !cJSON_IsNull(pt), has_sr = sr && !cJSON_IsNull(sr);
  if (!rc && has_pt && has_sr)
    rc = mf_bad(x, "spec", "You must define either PodTemplateRef or ScalableRef, but not both (the CRD's rule)");
  if (!rc && has_pt)
    rc = cJSON_IsObject(pt) ? ref_name(x, pt, "spec.podTemplateRef", "name", &b.tmpl)
                            : mf_bad(x, "spec.podTemplateRef", "expected a map with name");
  if (!rc && has_sr) {
    const char *g = mf_get_str(sr, "apiGroup");
    if (!cJSON_IsObject(sr))
      rc = mf_bad(x, "spec.scalableRef", "expected a map with kind and name");
    else if (!(rc = ref_name(x, sr, "spec.scalableRef", "kind", &b.kind)) &&
             !(rc = ref_name(x, sr, "spec.scalableRef", "name", &b.target)))
      b.group_ok = !g || !*g || !strcmp(g, "apps"); /* Karpenter resolves the apps group alone */
  }
  if (!rc) rc = count_field(x, spec, "replicas", &b.has_replicas, &b.replicas);
  if (!rc) rc = count_field(x, spec, "percentage", &b.has_pct, &b.pct);
  const cJSON *lim = mf_get(spec, "limits");
  if (!rc && lim && !cJSON_IsNull(lim)) {
    b.has_limits = true;
    rc = mf_parse_rlist(x, lim, "spec.limits", &b.limits, false);
  }
  if (!rc && has_pt && !b.has_replicas && !b.has_limits)
    rc = mf_bad(x, "spec", "If podTemplateRef is set, replicas or limits must also be set (the CRD's rule)");
  if (!rc && dt__vec_push(&x->m->buffers, b)) rc = mf_oom(x);
  if (rc) {
    mf_buffer_free(&b);
    return mf_failed(x);
  }
  return 0;
}

int mf_pod_template(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (mf_meta(x, o, &ns, &name, true) || mf_check_duplicate(x, ns, name)) return mf_failed(x);
  const cJSON *tmpl = mf_get(o, "template");
  if (!cJSON_IsObject(tmpl)) return mf_bad(x, "template", "missing or not an object");
  dt_podspec p = {0};
  p.count = 1;
  p.file = (char *)x->file;
  p.created = mf_created_at(o);
  if (!(p.ns = dt__strdup(ns)) || !(p.name = dt__strdup(name))) goto nomem;
  if (mf_parse_kvs(x, mf_get(mf_get(tmpl, "metadata"), "labels"), "template.metadata.labels", &p.labels) ||
      mf_podspec(x, tmpl, "template.spec", &p))
    goto fail;
  if (dt__vec_push(&x->m->templates, p)) goto nomem;
  return 0;
nomem:
  mf_oom(x);
fail:
  mf_pod_free(&p);
  return mf_failed(x);
}

/* The template a buffer names: a PodTemplate of its namespace, or the
** scalable workload (kind/name) with its replicas; NULL, and why, when
** there is none. */
static const dt_podspec *buffer_template(const dt_manifests *m, const dt_buffer *b, int64_t *replicas,
                                         const char **why) {
  *replicas = 0;
  if (b->tmpl) {
    for (size_t i = 0; i < m->templates.n; i++)
      if (!strcmp(m->templates.v[i].ns, b->ns) && !strcmp(m->templates.v[i].name, b->tmpl)) return &m->templates.v[i];
    *why = "its podTemplateRef names no PodTemplate of the input";
    return NULL;
  }
  if (!b->kind) {
    *why = "it names neither podTemplateRef nor scalableRef";
    return NULL;
  }
  if (!b->group_ok ||
      (strcmp(b->kind, "Deployment") && strcmp(b->kind, "ReplicaSet") && strcmp(b->kind, "StatefulSet"))) {
    *why = "its scalableRef is no apps Deployment, ReplicaSet or StatefulSet (what Karpenter resolves)";
    return NULL;
  }
  char owner[600];
  dt__join(owner, sizeof owner, b->kind, "/", b->target);
  const DT_VEC(dt_podspec) * lists[] = {(const void *)&m->pods, (const void *)&m->idle};
  for (size_t l = 0; l < 2; l++)
    for (size_t i = 0; i < lists[l]->n; i++) {
      const dt_podspec *w = &lists[l]->v[i];
      if (w->owner && !w->buffer && !strcmp(w->owner, owner) && !strcmp(w->ns, b->ns)) {
        *replicas = l ? 0 : w->count;
        return w;
      }
    }
  *why = "its scalableRef names no workload of the input";
  return NULL;
}

/* How many chunks fit in the buffer's limits: for each limited resource the
** template asks for (pods aside), floor(limit / request), the least of
** them; -1 when no limit bounds anything. */
static int64_t limit_replicas(const dt_buffer *b, const dt_podspec *t) {
  int64_t best = -1;
  for (size_t i = 0; i < b->limits.n; i++) {
    const char *r = b->limits.v[i].name;
    int64_t req = strcmp(r, "pods") ? dt__rlist_get(&t->requests, r) : 0;
    if (req <= 0) continue;
    double n = floor((double)b->limits.v[i].milli / (double)req);
    int64_t k = n > 2147483647.0 ? 2147483647 : (int64_t)n;
    if (best < 0 || k < best) best = k;
  }
  return best;
}

/* Whether chunk names base-1..base-want of namespace ns are taken: by a Pod
** of one of those names, or by a workload of that base name (its replicas
** are base-<k>); a plan, a nomination and --explain tell pods by name. */
static bool names_taken(const dt_manifests *m, const char *ns, const char *base, int64_t want) {
  size_t bl = strlen(base);
  for (size_t i = 0; i < m->pods.n; i++) {
    const dt_podspec *p = &m->pods.v[i];
    if (strncmp(p->name, base, bl) || strcmp(p->ns, ns)) continue;
    if (p->owner ? !p->name[bl] : p->name[bl] == '-') {
      if (p->owner) return true;
      int64_t k = dt__ordinal_text(p->name + bl + 1);
      if (k >= 1 && k <= want) return true;
    }
  }
  return false;
}

static int cmp_owned(const void *a, const void *b, const dt_manifests *m) {
  uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
  const dt_podspec *x = &m->pods.v[i], *y = &m->pods.v[j];
  int c = strcmp(x->ns, y->ns);
  if (!c) c = strcmp(x->name, y->name);
  return c ? c : (i > j) - (i < j); /* input order: qsort is not stable */
}
static _Thread_local const dt_manifests *t_owned_m;
static int cmp_owned_t(const void *a, const void *b) { return cmp_owned(a, b, t_owned_m); }
static bool same_name(const dt_manifests *m, uint32_t i, uint32_t j) {
  return !strcmp(m->pods.v[i].ns, m->pods.v[j].ns) && !strcmp(m->pods.v[i].name, m->pods.v[j].name);
}

/* dt_podspec.rname: workloads of one namespace and name (a Deployment and
** a StatefulSet web) would make replicas of the same names, which the
** nominations of claims, and the daemon's, take as one pod. A StatefulSet
** keeps its ordinals' names (its pods' real ones); the others are named
** after <name>-<kind>, or <name>-<kind>-<n> where a workload of the
** namespace has that name already, so every base is its namespace's own. */
static int replica_names(dt_manifests *m, dt_error *err) {
  uint32_t *ix = dt__malloc((m->pods.n ? m->pods.n : 1) * sizeof *ix), n = 0;
  if (!ix) return dt__err(err, DT_ENOMEM, "out of memory");
  for (size_t i = 0; i < m->pods.n; i++) {
    m->pods.v[i].rname = NULL; /* a kept copy's is its last set's */
    if (m->pods.v[i].owner && !m->pods.v[i].buffer) ix[n++] = (uint32_t)i;
  }
  t_owned_m = m;
  qsort(ix, n, sizeof *ix, cmp_owned_t);
  t_owned_m = NULL;
  dt_symtab taken = {0}; /* "ns/base" of every workload's replicas */
  int rc = 0;
  bool any = false;
  for (uint32_t k = 0; k < n && !rc; k++) {
    char key[800];
    snprintf(key, sizeof key, "%s/%s", m->pods.v[ix[k]].ns, m->pods.v[ix[k]].name);
    if (!dt__sym(&taken, key)) rc = dt__err(err, DT_ENOMEM, "out of memory");
    any |= k && same_name(m, ix[k - 1], ix[k]);
  }
  for (uint32_t a = 0, b; any && a < n && !rc; a = b) {
    for (b = a + 1; b < n && same_name(m, ix[a], ix[b]);) b++;
    for (uint32_t k = a; b - a > 1 && k < b && !rc; k++) {
      dt_podspec *d = &m->pods.v[ix[k]];
      const char *slash = strchr(d->owner, '/');
      if (!slash || !strncmp(d->owner, "StatefulSet/", 12)) continue;
      char kind[64], nm[700], key[800];
      size_t kl = (size_t)(slash - d->owner) < sizeof kind - 1 ? (size_t)(slash - d->owner) : sizeof kind - 1;
      for (size_t c = 0; c < kl; c++) kind[c] = (char)tolower((unsigned char)d->owner[c]);
      kind[kl] = 0;
      for (int nth = 1;; nth++) {
        if (nth == 1)
          snprintf(nm, sizeof nm, "%s-%s", d->name, kind);
        else
          snprintf(nm, sizeof nm, "%s-%s-%d", d->name, kind, nth);
        snprintf(key, sizeof key, "%s/%s", d->ns, nm);
        if (!dt__sym_find(&taken, key)) break;
      }
      char *r = dt__strdup(nm);
      if (!r || dt__vec_push(&m->files, r) || !dt__sym(&taken, key)) {
        if (r && (!m->files.n || m->files.v[m->files.n - 1] != r)) dt__free(r);
        rc = dt__err(err, DT_ENOMEM, "out of memory");
      } else {
        d->rname = r;
      }
    }
  }
  dt__symtab_free(&taken);
  dt__free(ix);
  return rc;
}

int dt_manifests_finish(dt_manifests *m, dt_error *err) {
  if (m->finished) return 0;
  m->finished = true;
  int rc = mf_itypes_resolve(m, err); /* VMs sized by their instancetypes, before chunks borrow a template */
  if (!rc) rc = replica_names(m, err);
  if (rc) return rc;
  for (size_t i = 0; i < m->buffers.n; i++) {
    const dt_buffer *b = &m->buffers.v[i];
    int64_t scal = 0;
    const char *why = NULL;
    const dt_podspec *t = buffer_template(m, b, &scal, &why);
    if (!t) {
      dt__buf_printf(&m->notes, "%s: CapacityBuffer %s/%s: %s; not provisioned (as Karpenter)\n", b->file, b->ns,
                     b->name, why);
      continue;
    }
    /* Karpenter's computeReplicas: the largest of replicas and the
    ** percentage of the workload's (rounded up, at least one when both are
    ** positive), then capped by what the limits hold */
    bool sized = false;
    int64_t want = 0;
    if (b->has_replicas) want = b->replicas, sized = true;
    if (b->has_pct && !b->tmpl && scal > 0) {
      int64_t pr = (int64_t)ceil((double)scal * (double)b->pct / 100.0);
      if (pr < 1 && b->pct > 0) pr = 1;
      if (!sized || pr > want) want = pr;
      sized = true;
    }
    int64_t lr = b->has_limits ? limit_replicas(b, t) : -1;
    if (lr >= 0) want = sized && want < lr ? want : lr;
    if (want <= 0 && b->has_limits && lr < 0 && !sized) /* Karpenter's computeReplicas: 0, and nothing says why */
      dt__buf_printf(&m->notes,
                     "%s: CapacityBuffer %s/%s: spec.limits names no resource its pods request (a pod's own count, "
                     "pods, is none of them), and it sets neither replicas nor percentage: no chunk, as Karpenter\n",
                     b->file, b->ns, b->name);
    if (want <= 0) continue;
    if (m->npods + want > DT_MAX_PODS)
      return dt__err(err, DT_ELIMIT, "%s: CapacityBuffer %s/%s: %lld chunks take the pods of all inputs past %d",
                     b->file, b->ns, b->name, (long long)want, DT_MAX_PODS);
    /* the chunks: the template's pod, borrowed (it lives as long as m), under
    ** the buffer's names; its claims' volumes and node name left out */
    char nm[600], ow[600];
    snprintf(nm, sizeof nm, "capacity-buffer-%s", b->name); /* Karpenter's, unless a pod of the input has it */
    for (int k = 1; k <= 9 && names_taken(m, b->ns, nm, want); k++)
      snprintf(nm, sizeof nm, k == 1 ? "capacity-buffer-%s-virtual" : "capacity-buffer-%s-virtual-%d", b->name, k);
    if (names_taken(m, b->ns, nm, want)) {
      dt__buf_printf(&m->notes,
                     "%s: CapacityBuffer %s/%s: the input's pods take every name its chunks could have; "
                     "not provisioned\n",
                     b->file, b->ns, b->name);
      continue;
    }
    if (strcmp(nm + 16, b->name))
      dt__buf_printf(&m->notes,
                     "%s: CapacityBuffer %s/%s: pods of the input are named as its chunks; they are "
                     "%s-<k>\n",
                     b->file, b->ns, b->name, nm);
    snprintf(ow, sizeof ow, "CapacityBuffer/%s", b->name);
    char *name = dt__strdup(nm), *owner = dt__strdup(ow);
    if (!name || !owner || dt__vec_push(&m->files, name)) {
      dt__free(name), dt__free(owner);
      return dt__err(err, DT_ENOMEM, "out of memory");
    }
    if (dt__vec_push(&m->files, owner)) {
      dt__free(owner);
      return dt__err(err, DT_ENOMEM, "out of memory");
    }
    dt_podspec c = *t;
    c.ns = b->ns;
    c.name = name;
    c.owner = owner;
    c.file = (char *)b->file;
    c.count = want;
    c.ordinal_base = 1;
    c.borrowed = true; /* nothing of it is the set's to free */
    c.spread_own = false;
    c.buffer = true;
    c.sts = c.rs = c.daemon = c.mirror = c.terminating = false;
    c.parent = NULL;
    c.controller = NULL;
    c.node_name = NULL;
    c.claim = NULL;
    c.npvcs = 0;
    c.nvct = 0;
    c.priority = INT32_MIN; /* Karpenter's VirtualPodPriority */
    c.shape = 0;
    c.name_id = 0;
    c.replica_of = NULL;
    c.seq = m->seq++;
    memset(&c.sel, 0, sizeof c.sel);
    if (dt__vec_push(&m->pods, c)) return dt__err(err, DT_ENOMEM, "out of memory");
    m->npods += want;
  }
  return 0;
}
