/*
** manifest.c: Kubernetes objects to the model. Validation happens here, at
** the boundary, so every error names the file, the object (Kind ns/name)
** and the field; the scheduler then trusts its inputs.
*/
#include "model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Requests above these are typing mistakes, not workloads. */
#define MAX_CPU_MILLI (1000000LL * 1000)              /* 1,000,000 cores */
#define MAX_BYTES_MILLI (((int64_t)1 << 50) * 1000)  /* 1 PiB */
#define MAX_REPLICAS DT_MAX_REPLICAS

typedef struct mctx {
  dt_manifests *m;
  const char *file; /* owned by m->files */
  const char *kind;
  char obj[512]; /* "Pod default/web" */
  dt_error *err;
  int code; /* the error being reported: DT_ENOMEM stays once it happened */
} mctx;

/* What a reader that failed returns: out of memory or bad input, the same
** whether or not the caller passed a dt_error. */
static int failed(const mctx *x) { return x->code ? x->code : DT_EINVAL; }

static int bad(mctx *x, const char *field, const char *fmt, ...) DT_PRINTF(3, 4);
static int bad(mctx *x, const char *field, const char *fmt, ...) {
  char msg[700];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (x->code != DT_ENOMEM) x->code = DT_EINVAL;
  return dt__err(x->err, x->code, "%s: %s: %s%s%s", x->file, x->obj, field ? field : "",
                 field ? ": " : "", msg);
}

static int oom(mctx *x) {
  x->code = DT_ENOMEM;
  return dt__err(x->err, DT_ENOMEM, "%s: out of memory", x->file);
}

static const cJSON *get(const cJSON *o, const char *k) {
  return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

static const char *get_str(const cJSON *o, const char *k) {
  const cJSON *v = get(o, k);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ------------------------------------------------------------- freeing */

static void mreqs_free(dt_mreqs *r) {
  for (size_t i = 0; i < r->n; i++) {
    dt__free(r->v[i].key);
    for (size_t j = 0; j < r->v[i].n; j++) dt__free(r->v[i].vals[j]);
    dt__free(r->v[i].vals);
  }
  dt__free(r->v);
}

static void taints_free(dt_taint *t, size_t n) {
  for (size_t i = 0; i < n; i++) {
    dt__free(t[i].key);
    dt__free(t[i].value);
    dt__free(t[i].effect);
  }
  dt__free(t);
}

static void pool_free(dt_nodepool *p) {
  dt__free(p->name);
  dt__kvs_free(&p->labels);
  mreqs_free(&p->reqs);
  taints_free(p->taints, p->ntaints);
  taints_free(p->startup, p->nstartup);
  dt__rlist_free(&p->limits);
  cJSON_Delete(p->node_class_ref);
  dt__free(p->uid);
  dt__free(p->termination_grace);
  dt__kvs_free(&p->annotations);
  dt__free(p->policy);
  for (size_t i = 0; i < p->nbudgets; i++) {
    dt__free(p->budgets[i].schedule);
    dt__cron_free(&p->budgets[i].cron);
  }
  dt__free(p->budgets);
}

static void selector_free(dt_selector *s) { mreqs_free(&s->expr); }

static void strs_free(char **v, size_t n) {
  for (size_t i = 0; i < n; i++) dt__free(v[i]);
  dt__free(v);
}

static void terms_free(dt_podterm *t, size_t n) {
  for (size_t i = 0; i < n; i++) {
    selector_free(&t[i].sel);
    dt__free(t[i].key);
    strs_free(t[i].ns, t[i].nns);
  }
  dt__free(t);
}

static void pod_free(dt_podspec *p) {
  for (size_t i = 0; i < p->npref; i++) mreqs_free(&p->pref[i].reqs);
  dt__free(p->pref);
  terms_free(p->aff, p->naff);
  terms_free(p->anti, p->nanti);
  terms_free(p->paff, p->npaff);
  terms_free(p->panti, p->npanti);
  for (size_t i = 0; i < p->nspread; i++) {
    dt__free(p->spread[i].key);
    selector_free(&p->spread[i].sel);
    strs_free(p->spread[i].match_label_keys, p->spread[i].nmlk);
  }
  dt__free(p->spread);
  for (size_t i = 0; i < p->nports; i++) dt__free(p->ports[i].ip);
  dt__free(p->ports);
  dt__free(p->runtime_class);
  dt__free(p->ns);
  dt__free(p->name);
  dt__free(p->owner);
  dt__free(p->parent);
  selector_free(&p->sel);
  strs_free(p->pvcs, p->npvcs);
  dt__rlist_free(&p->requests);
  dt__kvs_free(&p->labels);
  dt__kvs_free(&p->node_selector);
  for (size_t i = 0; i < p->nterms; i++) mreqs_free(&p->terms[i]);
  dt__free(p->terms);
  for (size_t i = 0; i < p->ntol; i++) {
    dt__free(p->tol[i].key);
    dt__free(p->tol[i].op);
    dt__free(p->tol[i].value);
    dt__free(p->tol[i].effect);
  }
  dt__free(p->tol);
  dt__free(p->node_name);
  dt__free(p->claim);
}

static void topo_free(dt_topo_obj *t) {
  dt__free(t->key);
  dt__free(t->volume);
  dt__free(t->storage_class);
  mreqs_free(&t->term);
}

static void node_free(dt_node *n) {
  dt__free(n->name);
  dt__free(n->pool_hash);
  dt__free(n->claim_name);
  dt__free(n->node_name);
  dt__free(n->provider_id);
  dt__kvs_free(&n->labels);
  dt__rlist_free(&n->allocatable);
  taints_free(n->taints, n->ntaints);
  for (size_t i = 0; i < n->npods; i++) dt__free(n->pods[i]);
  dt__free(n->pods);
}

static void vmpool_free(dt_vmpool *p);
static void vm_free(dt_vm *v);
static void pdb_free(dt_pdb *p);

dt_manifests *dt_manifests_new(void) { return dt__calloc(1, sizeof(dt_manifests)); }

void dt_manifests_free(dt_manifests *m) {
  if (!m) return;
  for (size_t i = 0; i < m->pools.n; i++) pool_free(&m->pools.v[i]);
  for (size_t i = 0; i < m->pods.n; i++) pod_free(&m->pods.v[i]);
  for (size_t i = 0; i < m->daemonsets.n; i++) pod_free(&m->daemonsets.v[i]);
  for (size_t i = 0; i < m->runtime_classes.n; i++) {
    dt__free(m->runtime_classes.v[i].name);
    dt__rlist_free(&m->runtime_classes.v[i].overhead);
  }
  dt__free(m->daemonsets.v);
  dt__free(m->runtime_classes.v);
  for (size_t i = 0; i < m->marks.n; i++) {
    dt__free(m->marks.v[i].instance_type);
    dt__free(m->marks.v[i].zone);
    dt__free(m->marks.v[i].name);
  }
  dt__free(m->marks.v);
  for (size_t i = 0; i < m->nodes.n; i++) node_free(&m->nodes.v[i]);
  for (size_t i = 0; i < m->vmpools.n; i++) vmpool_free(&m->vmpools.v[i]);
  for (size_t i = 0; i < m->pdbs.n; i++) pdb_free(&m->pdbs.v[i]);
  dt__free(m->pdbs.v);
  for (size_t i = 0; i < m->vms.n; i++) vm_free(&m->vms.v[i]);
  for (size_t i = 0; i < m->volumes.n; i++) dt__free(m->volumes.v[i]);
  for (size_t i = 0; i < m->topo.n; i++) topo_free(&m->topo.v[i]);
  dt__free(m->topo.v);
  dt__free(m->vmpools.v);
  dt__free(m->vms.v);
  dt__free(m->volumes.v);
  for (size_t i = 0; i < m->files.n; i++) dt__free(m->files.v[i]);
  dt__symtab_free(&m->seen);
  dt__free(m->seen_file.v);
  dt__free(m->pools.v);
  dt__free(m->pods.v);
  dt__free(m->nodes.v);
  dt__free(m->files.v);
  dt__free(m->notes.p);
  dt__free(m);
}

const char *dt_manifests_notes(const dt_manifests *m) { return m->notes.p ? m->notes.p : ""; }

size_t dt_manifests_nodepools(const dt_manifests *m) { return m->pools.n; }

const char *dt_manifests_nodepool_policy(const dt_manifests *m, size_t i) {
  return i < m->pools.n ? m->pools.v[i].policy : NULL;
}

/* -------------------------------------------------------------- fields */

static int parse_kvs(mctx *x, const cJSON *o, const char *field, dt_kvs *out) {
  if (!o || cJSON_IsNull(o)) return 0;
  if (!cJSON_IsObject(o)) return bad(x, field, "expected a map of strings");
  size_t n = (size_t)cJSON_GetArraySize(o);
  out->v = dt__calloc(n ? n : 1, sizeof *out->v);
  if (!out->v) return oom(x);
  char tmp[64];
  for (const cJSON *c = o->child; c; c = c->next) {
    const char *v = dt__scalar(c, tmp, sizeof tmp);
    if (!v || cJSON_IsNull(c)) {
      char f[300];
      snprintf(f, sizeof f, "%s.%s", field, c->string);
      return bad(x, f, "expected a string");
    }
    out->v[out->n].key = dt__strdup(c->string);
    out->v[out->n].val = dt__strdup(v);
    out->n++;
    if (!out->v[out->n - 1].key || !out->v[out->n - 1].val) return oom(x);
  }
  return 0;
}

/* Whether check_request would refuse v: the hot path asks this first and
** formats the field's name only for the message. */
static bool request_absurd(const char *res, int64_t v) {
  return v < 0 || (v > MAX_CPU_MILLI && !strcmp(res, "cpu")) ||
         (v > MAX_BYTES_MILLI && (!strcmp(res, "memory") || !strcmp(res, "ephemeral-storage")));
}

static int check_request(mctx *x, const char *field, const char *res, int64_t v) {
  if (v < 0) return bad(x, field, "must not be negative");
  if (strcmp(res, "cpu") == 0 && v > MAX_CPU_MILLI)
    return bad(x, field, "%lld cores is absurd (at most 1000000)", (long long)(v / 1000));
  if ((strcmp(res, "memory") == 0 || strcmp(res, "ephemeral-storage") == 0) && v > MAX_BYTES_MILLI)
    return bad(x, field, "larger than 1Pi is absurd");
  return 0;
}

/* Where a field is, as "PATH.LIST[I]TAIL" (or "PATHTAIL" without a list):
** written out only when an error names it. */
typedef struct where {
  const char *path, *list;
  size_t i;
  const char *tail;
} where;

static void where_fmt(const where *w, char *out, size_t n) {
  if (w->list)
    snprintf(out, n, "%s.%s[%zu]%s", w->path, w->list, w->i, w->tail);
  else
    snprintf(out, n, "%s%s", w->path, w->tail);
}

/* A map of quantities (requests, limits, allocatable) at w. */
static int rlist_at(mctx *x, const cJSON *o, const where *w, dt_rlist *out, bool is_request) {
  if (!o || cJSON_IsNull(o)) return 0;
  char field[300], tmp[64], f[400];
  if (!cJSON_IsObject(o)) {
    where_fmt(w, field, sizeof field);
    return bad(x, field, "expected a map of quantities");
  }
  for (const cJSON *c = o->child; c; c = c->next) {
    const char *s = dt__scalar(c, tmp, sizeof tmp);
    int64_t v;
    dt_error qe;
    int rc = s && !cJSON_IsBool(c) ? dt_quantity_parse(s, &v, &qe) : DT_EINVAL;
    /* Limits and capacities beyond what int64 milli-units hold are
    ** "unlimited" in practice (9.2 PB of memory). */
    if (rc == DT_ERANGE && !is_request && s[0] != '-') {
      v = INT64_MAX;
      rc = 0;
    }
    if (rc || (is_request && request_absurd(c->string, v)) || (!is_request && v < 0)) {
      where_fmt(w, field, sizeof field);
      snprintf(f, sizeof f, "%s.%s", field, c->string);
      if (!s || cJSON_IsBool(c)) return bad(x, f, "expected a quantity such as 500m or 1Gi");
      if (rc) return bad(x, f, "%s", qe.msg);
      if (is_request) {
        check_request(x, f, c->string, v);
        return failed(x);
      }
      return bad(x, f, "must not be negative");
    }
    if (dt__rlist_add(out, c->string, v, DT_RL_SET)) return oom(x);
  }
  return 0;
}

static int parse_rlist(mctx *x, const cJSON *o, const char *field, dt_rlist *out, bool is_request) {
  where w = {field, NULL, 0, ""};
  return rlist_at(x, o, &w, out, is_request);
}

static int parse_mreqs(mctx *x, const cJSON *arr, const char *field, dt_mreqs *out,
                       bool allow_min_values) {
  if (!arr || cJSON_IsNull(arr)) return 0;
  if (!cJSON_IsArray(arr)) return bad(x, field, "expected a list of requirements");
  size_t n = (size_t)cJSON_GetArraySize(arr), i = 0;
  out->v = dt__calloc(n ? n : 1, sizeof *out->v);
  if (!out->v) return oom(x);
  char f[300], tmp[64];
  for (const cJSON *r = arr->child; r; r = r->next, i++) {
    dt_mreq *q = &out->v[out->n++];
    const char *key = get_str(r, "key");
    const char *op = get_str(r, "operator");
    snprintf(f, sizeof f, "%s[%zu].key", field, i);
    if (!key || !*key) return bad(x, f, "missing or not a string");
    q->key = dt__strdup(key);
    if (!q->key) return oom(x);
    snprintf(f, sizeof f, "%s[%zu].operator", field, i);
    if (!op || dt__op_parse(op, &q->op))
      return bad(x, f, "expected In, NotIn, Exists, DoesNotExist, Gt or Lt, got %s%s%s",
                 op ? "\"" : "", op ? op : "nothing", op ? "\"" : "");
    const cJSON *vals = get(r, "values");
    snprintf(f, sizeof f, "%s[%zu].values", field, i);
    if (vals && !cJSON_IsNull(vals) && !cJSON_IsArray(vals)) return bad(x, f, "expected a list");
    size_t nv = vals ? (size_t)cJSON_GetArraySize(vals) : 0;
    if ((q->op == DT_OP_IN || q->op == DT_OP_NOTIN) && nv == 0)
      return bad(x, f, "%s needs at least one value (key %s)", dt__op_name(q->op), key);
    if ((q->op == DT_OP_EXISTS || q->op == DT_OP_DOESNOTEXIST) && nv != 0)
      return bad(x, f, "%s takes no values (key %s)", dt__op_name(q->op), key);
    if (q->op >= DT_OP_GT && nv != 1)
      return bad(x, f, "%s takes exactly one integer value (key %s)", dt__op_name(q->op), key);
    q->vals = dt__calloc(nv ? nv : 1, sizeof *q->vals);
    if (!q->vals) return oom(x);
    size_t k = 0;
    for (const cJSON *v = vals ? vals->child : NULL; v; v = v->next, k++) {
      const char *s = dt__scalar(v, tmp, sizeof tmp);
      if (!s || cJSON_IsNull(v)) {
        snprintf(f, sizeof f, "%s[%zu].values[%zu]", field, i, k);
        return bad(x, f, "expected a string");
      }
      if (q->op >= DT_OP_GT) {
        char *end;
        errno = 0;
        strtoll(s, &end, 10);
        if (!*s || *end || errno == ERANGE) {
          snprintf(f, sizeof f, "%s[%zu].values[0]", field, i);
          return errno == ERANGE ? bad(x, f, "%s needs an integer from %lld to %lld, got \"%.100s\"",
                                       dt__op_name(q->op), (long long)INT64_MIN, (long long)INT64_MAX, s)
                                 : bad(x, f, "%s needs an integer, got \"%.100s\"", dt__op_name(q->op), s);
        }
      }
      q->vals[q->n] = dt__strdup(s);
      if (!q->vals[q->n]) return oom(x);
      q->n++;
    }
    const cJSON *mv = get(r, "minValues");
    if (mv && !cJSON_IsNull(mv)) {
      snprintf(f, sizeof f, "%s[%zu].minValues", field, i);
      if (!allow_min_values) return bad(x, f, "only NodePool requirements take minValues");
      if (!cJSON_IsNumber(mv) || mv->valuedouble < 1 || mv->valuedouble > 50 ||
          mv->valuedouble != floor(mv->valuedouble))
        return bad(x, f, "expected an integer from 1 to 50");
      q->min_values = (int)mv->valuedouble;
      if (q->op == DT_OP_IN && (size_t)q->min_values > q->n)
        return bad(x, f, "%d is more than the %zu values allowed by In", q->min_values, q->n);
    }
  }
  return 0;
}

static int parse_taints(mctx *x, const cJSON *arr, const char *field, dt_taint **out, size_t *nout) {
  if (!arr || cJSON_IsNull(arr)) return 0;
  if (!cJSON_IsArray(arr)) return bad(x, field, "expected a list of taints");
  size_t n = (size_t)cJSON_GetArraySize(arr), i = 0;
  *out = dt__calloc(n ? n : 1, sizeof **out);
  if (!*out) return oom(x);
  char f[300];
  for (const cJSON *t = arr->child; t; t = t->next, i++) {
    dt_taint *d = &(*out)[(*nout)++];
    const char *key = get_str(t, "key"), *val = get_str(t, "value"), *eff = get_str(t, "effect");
    snprintf(f, sizeof f, "%s[%zu].key", field, i);
    if (!key || !*key) return bad(x, f, "missing or not a string");
    snprintf(f, sizeof f, "%s[%zu].effect", field, i);
    if (!eff || (strcmp(eff, "NoSchedule") && strcmp(eff, "PreferNoSchedule") &&
                 strcmp(eff, "NoExecute")))
      return bad(x, f, "expected NoSchedule, PreferNoSchedule or NoExecute");
    d->key = dt__strdup(key);
    d->value = dt__strdup(val ? val : "");
    d->effect = dt__strdup(eff);
    if (!d->key || !d->value || !d->effect) return oom(x);
  }
  return 0;
}

static int parse_tolerations(mctx *x, const cJSON *arr, const char *field, dt_podspec *p) {
  if (!arr || cJSON_IsNull(arr)) return 0;
  if (!cJSON_IsArray(arr)) return bad(x, field, "expected a list of tolerations");
  size_t n = (size_t)cJSON_GetArraySize(arr), i = 0;
  p->tol = dt__calloc(n ? n : 1, sizeof *p->tol);
  if (!p->tol) return oom(x);
  char f[300];
  for (const cJSON *t = arr->child; t; t = t->next, i++) {
    dt_toleration *d = &p->tol[p->ntol++];
    const char *key = get_str(t, "key"), *op = get_str(t, "operator"), *val = get_str(t, "value"),
               *eff = get_str(t, "effect");
    snprintf(f, sizeof f, "%s[%zu].operator", field, i);
    if (op && strcmp(op, "Equal") && strcmp(op, "Exists"))
      return bad(x, f, "expected Equal or Exists, got \"%s\"", op);
    if ((!key || !*key) && (!op || strcmp(op, "Exists")))
      return bad(x, f, "an empty key needs operator Exists");
    snprintf(f, sizeof f, "%s[%zu].effect", field, i);
    if (eff && *eff && strcmp(eff, "NoSchedule") && strcmp(eff, "PreferNoSchedule") &&
        strcmp(eff, "NoExecute"))
      return bad(x, f, "expected NoSchedule, PreferNoSchedule or NoExecute");
    d->key = key && *key ? dt__strdup(key) : NULL;
    d->op = dt__strdup(op ? op : "Equal");
    d->value = dt__strdup(val ? val : "");
    d->effect = eff && *eff ? dt__strdup(eff) : NULL;
    if ((key && *key && !d->key) || !d->op || !d->value || (eff && *eff && !d->effect))
      return oom(x);
  }
  return 0;
}

/* ------------------------------------------------------------ objects */

static int meta(mctx *x, const cJSON *o, const char **ns, const char **name, bool namespaced) {
  const cJSON *md = get(o, "metadata");
  *name = get_str(md, "name");
  *ns = namespaced ? get_str(md, "namespace") : NULL;
  if (namespaced && (!*ns || !**ns)) *ns = "default";
  if (!*name || !**name) {
    snprintf(x->obj, sizeof x->obj, "%s (unnamed)", x->kind);
    return bad(x, "metadata.name", "missing");
  }
  /* Kubernetes' own bounds (DNS subdomain names, DNS label namespaces):
  ** within them every "Kind/namespace/name" key fits, so none collide. */
  if (strlen(*name) > 253 || (*ns && strlen(*ns) > 63)) {
    snprintf(x->obj, sizeof x->obj, "%s %.60s...", x->kind, *name);
    return strlen(*name) > 253 ? bad(x, "metadata.name", "longer than 253 characters")
                               : bad(x, "metadata.namespace", "longer than 63 characters");
  }
  if (namespaced)
    snprintf(x->obj, sizeof x->obj, "%s %s/%s", x->kind, *ns, *name);
  else
    snprintf(x->obj, sizeof x->obj, "%s %s", x->kind, *name);
  return 0;
}

static int check_duplicate(mctx *x, const char *ns, const char *name) {
  char key[600];
  snprintf(key, sizeof key, "%s/%s/%s", x->kind, ns ? ns : "", name);
  dt_manifests *m = x->m;
  dt_sym s = dt__sym(&m->seen, key);
  if (!s) return oom(x);
  while (m->seen_file.n <= s)
    if (dt__vec_push(&m->seen_file, (const char *)NULL)) return oom(x);
  if (m->seen_file.v[s])
    return bad(x, "metadata.name", "duplicate object (first defined in %s)", m->seen_file.v[s]);
  m->seen_file.v[s] = x->file;
  return 0;
}

static int64_t created_at(const cJSON *o) {
  const char *ts = get_str(get(o, "metadata"), "creationTimestamp");
  int64_t t = 0;
  if (ts && dt_time_parse(ts, &t, NULL)) t = 0;
  return t;
}

static int parse_duration_or_never(mctx *x, const cJSON *v, const char *field, int64_t *out) {
  if (!v || cJSON_IsNull(v)) return 0;
  const char *s = cJSON_IsString(v) ? v->valuestring : NULL;
  if (s && !strcmp(s, "Never")) {
    *out = -1;
    return 0;
  }
  if (!s || dt__duration_parse(s, out)) return bad(x, field, "expected a duration such as 30s, 10m or 720h, or Never");
  return 0;
}

/* spec.disruption (consolidationPolicy, consolidateAfter, budgets) and the
** template's expireAfter; the template hash for drift. */
static int nodepool_disruption(mctx *x, const cJSON *spec, dt_nodepool *p, bool v1beta1) {
  const cJSON *d = get(spec, "disruption"), *tspec = get(get(spec, "template"), "spec");
  char f[300];
  p->expire_after = 720 * 3600;
  /* v1beta1 kept expireAfter under spec.disruption; Karpenter's conversion
  ** webhook moves it to the template, as here */
  const cJSON *exp = v1beta1 && get(d, "expireAfter") ? get(d, "expireAfter") : get(tspec, "expireAfter");
  if (parse_duration_or_never(x, exp, v1beta1 && get(d, "expireAfter") ? "spec.disruption.expireAfter"
                                                                       : "spec.template.spec.expireAfter",
                              &p->expire_after) ||
      parse_duration_or_never(x, get(d, "consolidateAfter"), "spec.disruption.consolidateAfter", &p->consolidate_after))
    return failed(x);
  const char *cp = get_str(d, "consolidationPolicy");
  if (get(d, "consolidationPolicy") && !cJSON_IsNull(get(d, "consolidationPolicy"))) {
    if (cp && !strcmp(cp, "WhenEmpty")) p->consolidation = DT_CONSOL_WHEN_EMPTY;
    else if (cp && v1beta1 && !strcmp(cp, "WhenUnderutilized")) p->consolidation = DT_CONSOL_EMPTY_OR_UNDER;
    else if (cp && !strcmp(cp, "WhenEmptyOrUnderutilized")) p->consolidation = DT_CONSOL_EMPTY_OR_UNDER;
    else if (cp && !strcmp(cp, "Balanced")) p->consolidation = DT_CONSOL_BALANCED;
    else return bad(x, "spec.disruption.consolidationPolicy", "expected WhenEmpty, WhenEmptyOrUnderutilized or Balanced");
  }
  const cJSON *bs = get(d, "budgets");
  if (bs && !cJSON_IsNull(bs) && !cJSON_IsArray(bs)) return bad(x, "spec.disruption.budgets", "expected a list");
  size_t nb = cJSON_IsArray(bs) ? (size_t)cJSON_GetArraySize(bs) : 0;
  if (nb > 50) return bad(x, "spec.disruption.budgets", "at most 50 budgets (%zu given)", nb);
  if (!(p->budgets = dt__calloc(nb ? nb : 1, sizeof *p->budgets))) return oom(x);
  if (!nb) { /* Karpenter's default: one budget of 10% */
    p->budgets[0] = (dt_budget){10, true, false, {0}, NULL, 0, DT_REASON_ALL};
    p->nbudgets = 1;
  }
  size_t i = 0;
  for (const cJSON *b = cJSON_IsArray(bs) ? bs->child : NULL; b; b = b->next, i++) {
    dt_budget *bu = &p->budgets[p->nbudgets++];
    bu->reasons = DT_REASON_ALL;
    char tmp[64];
    const char *nv = dt__scalar(get(b, "nodes"), tmp, sizeof tmp);
    snprintf(f, sizeof f, "spec.disruption.budgets[%zu].nodes", i);
    /* Karpenter's pattern: ^((100|[0-9]{1,2})%%|[0-9]+)$ */
    size_t len = nv ? strlen(nv) : 0;
    bool pct = len > 1 && nv[len - 1] == '%';
    bool digits = len > (size_t)pct;
    for (size_t k = 0; k + pct < len && digits; k++) digits = nv[k] >= '0' && nv[k] <= '9';
    long long v = digits ? strtoll(nv, NULL, 10) : -1;
    if (!digits || (pct && (len > 4 || v > 100)) || v > 1000000000)
      return bad(x, f, "expected a node count such as 5 or a percentage from 0%% to 100%%, got \"%s\"", nv ? nv : "");
    bu->nodes = v;
    bu->pct = pct;
    const char *sch = get_str(b, "schedule"), *dur = get_str(b, "duration");
    if (!!sch != !!dur) {
      snprintf(f, sizeof f, "spec.disruption.budgets[%zu].%s", i, sch ? "duration" : "schedule");
      return bad(x, f, "schedule and duration go together");
    }
    if (sch) {
      char why[300];
      snprintf(f, sizeof f, "spec.disruption.budgets[%zu].schedule", i);
      if (dt__cron_parse(sch, &bu->cron, why, sizeof why)) return bad(x, f, "\"%s\": %s", sch, why);
      if (!(bu->schedule = dt__strdup(sch))) return oom(x);
      snprintf(f, sizeof f, "spec.disruption.budgets[%zu].duration", i);
      /* whole minutes, as the disruption-controls design validates it
      ** (^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$): schedules fire on minutes */
      if (dt__duration_parse(dur, &bu->duration) || bu->duration <= 0 || bu->duration % 60)
        return bad(x, f, "expected a positive duration in hours and minutes such as 8h, 30m or 1h30m, got \"%s\"", dur);
      bu->scheduled = true;
    }
    const cJSON *rs = get(b, "reasons");
    if (rs && !cJSON_IsNull(rs)) {
      snprintf(f, sizeof f, "spec.disruption.budgets[%zu].reasons", i);
      if (!cJSON_IsArray(rs)) return bad(x, f, "expected a list of Empty, Drifted, Underutilized");
      bu->reasons = 0;
      for (const cJSON *r = rs->child; r; r = r->next) {
        const char *rv = cJSON_IsString(r) ? r->valuestring : "";
        if (!strcmp(rv, "Empty")) bu->reasons |= DT_REASON_EMPTY;
        else if (!strcmp(rv, "Drifted")) bu->reasons |= DT_REASON_DRIFTED;
        else if (!strcmp(rv, "Underutilized")) bu->reasons |= DT_REASON_UNDERUTILIZED;
        else return bad(x, f, "unknown reason \"%s\" (Empty, Drifted, Underutilized)", rv);
      }
      if (!bu->reasons) bu->reasons = DT_REASON_ALL;
    }
  }
  /* The drift hash: the template without what Karpenter leaves out of it
  ** (requirements are checked against node labels instead). */
  cJSON *t = cJSON_Duplicate(get(spec, "template"), 1);
  cJSON *ts = cJSON_GetObjectItemCaseSensitive(t, "spec");
  cJSON_DeleteItemFromObjectCaseSensitive(ts, "requirements");
  cJSON_DeleteItemFromObjectCaseSensitive(ts, "expireAfter");
  cJSON_DeleteItemFromObjectCaseSensitive(ts, "terminationGracePeriod");
  dt_buf b = {0};
  dt__json_canon(t, &b);
  p->hash = dt__hash64(b.p ? b.p : "", b.len);
  int rc = b.oom || (get(spec, "template") && !t) ? oom(x) : 0;
  dt__free(b.p);
  cJSON_Delete(t);
  return rc;
}

/* Fields a NodePool may carry, per object path (Karpenter's CRD, v1 and
** v1beta1); anything else is a misspelling to point out, not to ignore. */
static const struct {
  const char *path, *const *keys;
} k_nodepool_fields[] = {
    {"", (const char *const[]){"apiVersion", "kind", "metadata", "spec", "status", NULL}},
    {"spec", (const char *const[]){"template", "disruption", "limits", "weight", "replicas", NULL}},
    {"spec.template", (const char *const[]){"metadata", "spec", NULL}},
    {"spec.template.metadata", (const char *const[]){"labels", "annotations", NULL}},
    {"spec.template.spec", (const char *const[]){"requirements", "taints", "startupTaints", "nodeClassRef",
                                                  "expireAfter", "terminationGracePeriod", "kubelet", NULL}},
    {"spec.disruption", (const char *const[]){"consolidateAfter", "consolidationPolicy", "budgets", "expireAfter", NULL}},
    {"spec.template.spec.nodeClassRef", (const char *const[]){"group", "kind", "name", "apiVersion", NULL}},
};

static size_t edit_distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b), d[33][33];
  if (n > 32 || m > 32) return 99;
  for (size_t i = 0; i <= n; i++) d[i][0] = i;
  for (size_t j = 0; j <= m; j++) d[0][j] = j;
  for (size_t i = 1; i <= n; i++)
    for (size_t j = 1; j <= m; j++) {
      size_t s = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]), u = d[i - 1][j] + 1, l = d[i][j - 1] + 1;
      d[i][j] = s < u ? (s < l ? s : l) : (u < l ? u : l);
    }
  return d[n][m];
}

static int known_fields(mctx *x, const cJSON *o, const char *path, const char *const *keys) {
  const cJSON *c;
  cJSON_ArrayForEach(c, o) {
    bool ok = false;
    const char *near = NULL;
    size_t best = 3;
    for (const char *const *k = keys; *k && !ok; k++) {
      ok = !strcmp(c->string, *k);
      size_t dist = edit_distance(c->string, *k);
      if (dist < best) best = dist, near = *k;
    }
    if (ok) continue;
    char f[300];
    snprintf(f, sizeof f, "%s%s%s", path, *path ? "." : "", c->string);
    return near ? bad(x, f, "unknown field (did you mean %s?)", near) : bad(x, f, "unknown field");
  }
  return 0;
}

/* Karpenter's restricted labels: its own domain and Kubernetes' (but for
** node.kubernetes.io and node-restriction.kubernetes.io), except the
** well-known labels a NodePool may require; never the hostname. */
static const char *restricted_label(const char *key) {
  static const char *const allowed[] = {DT_L_ZONE, "topology.kubernetes.io/region", DT_L_INSTANCE_TYPE, DT_L_ARCH,
                                        DT_L_OS, DT_L_CAPACITY_TYPE, "kubernetes.io/os", NULL};
  for (const char *const *a = allowed; *a; a++)
    if (!strcmp(key, *a)) return NULL;
  if (!strcmp(key, DT_L_HOSTNAME)) return "is restricted: a node's hostname is its own";
  if (!strcmp(key, DT_L_NODEPOOL)) return "is restricted: Karpenter sets it to the NodePool's name";
  const char *slash = strchr(key, '/');
  if (!slash) return NULL;
  char dom[256];
  snprintf(dom, sizeof dom, "%.*s", (int)(slash - key), key);
  size_t dl = strlen(dom);
  static const char *const excepted[] = {"node.kubernetes.io", "node-restriction.kubernetes.io", "node-role.kubernetes.io",
                                         NULL};
  for (const char *const *e = excepted; *e; e++) {
    size_t el = strlen(*e);
    if (dl >= el && !strcmp(dom + dl - el, *e) && (dl == el || dom[dl - el - 1] == '.')) return NULL;
  }
  static const char *const doms[] = {"kubernetes.io", "k8s.io", "karpenter.sh", NULL};
  for (const char *const *r = doms; *r; r++) {
    size_t rl = strlen(*r);
    if (dl >= rl && !strcmp(dom + dl - rl, *r) && (dl == rl || dom[dl - rl - 1] == '.'))
      return "is in a restricted domain (kubernetes.io, k8s.io and karpenter.sh are Karpenter's and Kubernetes')";
  }
  return NULL;
}

/* A qualified name as Karpenter's CRDs write its pattern for label keys and
** taints: an optional DNS-subdomain prefix and '/', then a name that starts
** and ends with a letter or digit and holds only those, '-', '_' and '.'. */
static bool qualified_name(const char *s) {
  const char *slash = strchr(s, '/'), *name = s;
  if (slash) {
    if (slash == s || strchr(slash + 1, '/')) return false;
    for (const char *lab = s; lab < slash;) { /* dot-separated lowercase labels */
      const char *e = lab;
      while (e < slash && *e != '.') e++;
      if (e == lab) return false;
      for (const char *c = lab; c < e; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || (*c == '-' && c != lab && c + 1 != e)))
          return false;
      lab = e < slash ? e + 1 : e;
      if (e < slash && lab == slash) return false; /* a trailing dot */
    }
    name = slash + 1;
  }
  size_t n = strlen(name);
  if (!n) return false;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && ((i == 0 || i == n - 1) || (c != '-' && c != '_' && c != '.'))) return false;
  }
  return true;
}

/* A label value: empty, or at most 63 characters that start and end with a
** letter or digit and hold only those, '-', '_' and '.'. */
static bool label_value(const char *s) {
  size_t n = strlen(s);
  return n == 0 || (n <= 63 && !strchr(s, '/') && qualified_name(s));
}

/* Karpenter's duration pattern without Never: ^([0-9]+(s|m|h))+$. */
static bool whole_duration(const char *s) {
  if (!*s) return false;
  while (*s) {
    if (*s < '0' || *s > '9') return false;
    while (*s >= '0' && *s <= '9') s++;
    if (*s != 's' && *s != 'm' && *s != 'h') return false;
    s++;
  }
  return true;
}

static int nodepool_validate(mctx *x, const cJSON *o) {
  for (size_t i = 0; i < sizeof k_nodepool_fields / sizeof k_nodepool_fields[0]; i++) {
    const cJSON *at = o;
    char path[64];
    snprintf(path, sizeof path, "%s", k_nodepool_fields[i].path);
    for (char *save = NULL, *t = strtok_r(path, ".", &save); t && at; t = strtok_r(NULL, ".", &save)) at = get(at, t);
    if (cJSON_IsObject(at) && known_fields(x, at, k_nodepool_fields[i].path, k_nodepool_fields[i].keys))
      return failed(x);
  }
  const cJSON *tm = get(get(get(o, "spec"), "template"), "metadata"), *c;
  const cJSON *labels = get(tm, "labels"); /* its shape is checked where it is read; only mappings here */
  if (!cJSON_IsObject(labels)) labels = NULL;
  cJSON_ArrayForEach(c, labels) {
    const char *why = restricted_label(c->string);
    char f[400];
    snprintf(f, sizeof f, "spec.template.metadata.labels.%s", c->string);
    if (why) return bad(x, f, "label %s %s", c->string, why);
    if (strlen(c->string) > 316 || !qualified_name(c->string))
      return bad(x, f, "not a valid label key (an optional DNS prefix and '/', then letters, digits, '-', '_' and '.')");
    if (cJSON_IsString(c) && !label_value(c->valuestring))
      return bad(x, f, "\"%.100s\" is not a valid label value (at most 63 letters, digits, '-', '_' and '.', "
                       "starting and ending with a letter or digit)", c->valuestring);
  }
  size_t i = 0;
  cJSON_ArrayForEach(c, get(get(get(get(o, "spec"), "template"), "spec"), "requirements")) {
    const char *key = get_str(c, "key"), *why = key ? restricted_label(key) : NULL;
    char f[300];
    snprintf(f, sizeof f, "spec.template.spec.requirements[%zu].key", i++);
    if (why) return bad(x, f, "label %s %s", key, why);
    if (key && (strlen(key) > 316 || !qualified_name(key)))
      return bad(x, f, "\"%.100s\" is not a valid label key (an optional DNS prefix and '/', then letters, digits, "
                       "'-', '_' and '.')", key);
    const cJSON *r, *fields = cJSON_IsObject(c) ? c : NULL; /* a requirement that is not a mapping is refused later */
    cJSON_ArrayForEach(r, fields) {
      static const char *const rk[] = {"key", "operator", "values", "minValues", NULL};
      bool ok = false;
      for (const char *const *k = rk; *k && !ok; k++) ok = !strcmp(r->string, *k);
      snprintf(f, sizeof f, "spec.template.spec.requirements[%zu].%s", i - 1, r->string);
      if (!ok) return bad(x, f, "unknown field (a requirement has key, operator, values and minValues)");
    }
  }
  return 0;
}

/* spec.template.spec.nodeClassRef: v1 names group, kind and name (each a
** non-empty string, the group without '/'); a v1beta1 reference (apiVersion,
** kind, name) is converted as Karpenter's conversion webhook did, the group
** from apiVersion and, where left out, the AWS provider's default node class
** (karpenter.k8s.aws, EC2NodeClass). */
static int nodeclass_ref(mctx *x, const cJSON *ref, bool v1beta1, dt_nodepool *p) {
  if (!ref || cJSON_IsNull(ref)) return 0;
  const char *field = "spec.template.spec.nodeClassRef";
  if (!cJSON_IsObject(ref)) return bad(x, field, "expected a mapping with group, kind and name");
  char f[300];
  const char *group = get_str(ref, "group"), *kind = get_str(ref, "kind"), *name = get_str(ref, "name");
  const char *api = get_str(ref, "apiVersion");
  char gbuf[256];
  if (v1beta1) {
    if (get(ref, "group")) return bad(x, "spec.template.spec.nodeClassRef.group", "v1beta1 names apiVersion, not group");
    if (api) snprintf(gbuf, sizeof gbuf, "%.*s", (int)strcspn(api, "/"), api);
    group = api ? gbuf : "karpenter.k8s.aws";
    if (!get(ref, "kind")) kind = "EC2NodeClass";
  } else if (get(ref, "apiVersion")) {
    return bad(x, "spec.template.spec.nodeClassRef.apiVersion", "unknown field in karpenter.sh/v1 (did you mean group?)");
  }
  static const char *const keys[] = {"group", "kind", "name"};
  const char *vals[] = {group, kind, name};
  for (int i = 0; i < 3; i++) {
    snprintf(f, sizeof f, "%s.%s", field, keys[i]);
    const cJSON *v = get(ref, keys[i]);
    if (!vals[i] || !*vals[i] || (v && !cJSON_IsString(v)))
      return bad(x, f, "%s a non-empty string (Karpenter's NodeClaims require group, kind and name)",
                 v ? "expected" : "missing: expected");
  }
  if (strchr(group, '/')) {
    snprintf(f, sizeof f, "%s.group", field);
    return bad(x, f, "\"%s\" is an API group without a version: no '/'", group);
  }
  cJSON *c = cJSON_CreateObject();
  if (!c || !dt__json_put(c, "group", cJSON_CreateString(group)) || !dt__json_put(c, "kind", cJSON_CreateString(kind)) ||
      !dt__json_put(c, "name", cJSON_CreateString(name))) {
    cJSON_Delete(c);
    return oom(x);
  }
  p->node_class_ref = c;
  return 0;
}

static int nodepool(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (meta(x, o, &ns, &name, false) || check_duplicate(x, NULL, name) || nodepool_validate(x, o)) return failed(x);
  bool v1beta1 = !strcmp(get_str(o, "apiVersion"), "karpenter.sh/v1beta1");
  dt_nodepool p = {0};
  p.file = (char *)x->file;
  p.seq = x->m->seq++;
  int rc = DT_ENOMEM;
  if (!(p.name = dt__strdup(name))) {
    rc = oom(x);
    goto fail;
  }
  const cJSON *spec = get(o, "spec");
  const cJSON *tmpl = get(spec, "template");
  const cJSON *tspec = get(tmpl, "spec");
  const cJSON *w = get(spec, "weight");
  rc = DT_EINVAL;
  if (w && !cJSON_IsNull(w)) {
    if (!cJSON_IsNumber(w) || w->valuedouble < 0 || w->valuedouble > 100 ||
        w->valuedouble != floor(w->valuedouble)) {
      bad(x, "spec.weight", "expected an integer from 0 to 100");
      goto fail;
    }
    p.weight = (int)w->valuedouble;
  }
  /* spec.replicas makes the pool static (Karpenter's static capacity): it
  ** keeps that many NodeClaims whatever the pods, takes no weight, and of
  ** the limits only nodes (its CRD's rules). */
  p.replicas = -1;
  const cJSON *rep = get(spec, "replicas");
  if (rep && !cJSON_IsNull(rep)) {
    if (!cJSON_IsNumber(rep) || rep->valuedouble < 0 || rep->valuedouble > MAX_REPLICAS ||
        rep->valuedouble != floor(rep->valuedouble)) {
      bad(x, "spec.replicas", "expected a whole number of nodes from 0 to %lld", (long long)MAX_REPLICAS);
      goto fail;
    }
    p.replicas = (int64_t)rep->valuedouble;
    if (w && !cJSON_IsNull(w)) {
      bad(x, "spec.weight", "a static NodePool (spec.replicas set) takes no weight: pods never choose it by priority");
      goto fail;
    }
  }
  if (parse_kvs(x, get(get(tmpl, "metadata"), "labels"), "spec.template.metadata.labels", &p.labels) ||
      parse_mreqs(x, get(tspec, "requirements"), "spec.template.spec.requirements", &p.reqs, true) ||
      parse_taints(x, get(tspec, "taints"), "spec.template.spec.taints", &p.taints, &p.ntaints) ||
      parse_taints(x, get(tspec, "startupTaints"), "spec.template.spec.startupTaints", &p.startup,
                   &p.nstartup) ||
      parse_rlist(x, get(spec, "limits"), "spec.limits", &p.limits, false))
    goto fail;
  for (size_t i = 0; p.replicas >= 0 && i < p.limits.n; i++)
    if (strcmp(p.limits.v[i].name, "nodes")) {
      char f[300];
      snprintf(f, sizeof f, "spec.limits.%s", p.limits.v[i].name);
      bad(x, f, "a static NodePool (spec.replicas set) takes only limits.nodes");
      goto fail;
    }
  for (size_t i = 0; i < p.ntaints + p.nstartup; i++) {
    const dt_taint *t = i < p.ntaints ? &p.taints[i] : &p.startup[i - p.ntaints];
    const char *list = i < p.ntaints ? "taints" : "startupTaints";
    size_t k = i < p.ntaints ? i : i - p.ntaints;
    char f[300];
    snprintf(f, sizeof f, "spec.template.spec.%s[%zu].%s", list, k, qualified_name(t->key) ? "value" : "key");
    if (!qualified_name(t->key) || (t->value[0] && !qualified_name(t->value))) {
      bad(x, f, "\"%.100s\" is not a valid taint %s (an optional DNS prefix and '/', then letters, digits, '-', '_' "
                "and '.', starting and ending with a letter or digit)",
          qualified_name(t->key) ? t->value : t->key, qualified_name(t->key) ? "value" : "key");
      goto fail;
    }
  }
  p.spot_max = -1;
  const cJSON *mp = get(get(get(o, "metadata"), "annotations"), "dovetail.dev/spot-max-price");
  if (mp && !cJSON_IsNull(mp)) {
    char tmp[64], *end;
    const char *v = dt__scalar(mp, tmp, sizeof tmp);
    double d = v ? strtod(v, &end) : -1;
    if (!v || *end || !(d >= 0) || !isfinite(d)) {
      bad(x, "metadata.annotations.dovetail.dev/spot-max-price", "expected a price in $/hour, such as \"0.05\"");
      goto fail;
    }
    p.spot_max = d;
  }
  const char *pn = get_str(get(get(o, "metadata"), "annotations"), "dovetail.dev/policy");
  if (pn && *pn && !(p.policy = dt__strdup(pn))) {
    rc = oom(x);
    goto fail;
  }
  /* Control planes on spot lose etcd quorum when several are interrupted at
  ** once: a NodePool is one by its template label or by a requirement that
  ** its nodes carry the role (In or Exists). */
  const char *role = NULL;
  for (size_t i = 0; i < p.labels.n && !role; i++)
    if (!strcmp(p.labels.v[i].key, "node-role.kubernetes.io/control-plane") ||
        !strcmp(p.labels.v[i].key, "node-role.kubernetes.io/master"))
      role = p.labels.v[i].key;
  for (size_t i = 0; i < p.reqs.n && !role; i++)
    if ((!strcmp(p.reqs.v[i].key, "node-role.kubernetes.io/control-plane") ||
         !strcmp(p.reqs.v[i].key, "node-role.kubernetes.io/master")) &&
        (p.reqs.v[i].op == DT_OP_IN || p.reqs.v[i].op == DT_OP_EXISTS))
      role = p.reqs.v[i].key;
  if (role) {
    bool spot_ok = true;
    for (size_t k = 0; k < p.reqs.n; k++) {
      const dt_mreq *q = &p.reqs.v[k];
      if (strcmp(q->key, DT_L_CAPACITY_TYPE)) continue;
      bool listed = false;
      for (size_t j = 0; j < q->n; j++) listed |= !strcmp(q->vals[j], "spot");
      if ((q->op == DT_OP_IN && !listed) || (q->op == DT_OP_NOTIN && listed) || q->op == DT_OP_DOESNOTEXIST)
        spot_ok = false;
    }
    if (spot_ok) {
      bad(x, "spec.template.spec.requirements",
          "a control-plane NodePool (%s) must not allow spot capacity: interruptions of several "
          "control-plane nodes lose etcd quorum; add karpenter.sh/capacity-type In [on-demand]",
          role);
      goto fail;
    }
  }
  if (nodepool_disruption(x, spec, &p, v1beta1)) goto fail;
  if (nodeclass_ref(x, get(tspec, "nodeClassRef"), v1beta1, &p)) goto fail;
  /* What the NodeClaims it makes carry: its uid (ownerReferences), the
  ** template's annotations and terminationGracePeriod. */
  const cJSON *tg = get(tspec, "terminationGracePeriod");
  const char *uid = get_str(get(o, "metadata"), "uid"), *tgp = get_str(tspec, "terminationGracePeriod");
  if (tg && !cJSON_IsNull(tg) && (!tgp || !whole_duration(tgp))) {
    bad(x, "spec.template.spec.terminationGracePeriod", "expected a duration in hours, minutes and seconds such as 24h, "
        "1h30m or 90s (Karpenter's pattern: no Never, no units below a second)");
    goto fail;
  }
  if ((uid && !(p.uid = dt__strdup(uid))) || (tgp && !(p.termination_grace = dt__strdup(tgp)))) {
    rc = oom(x);
    goto fail;
  }
  if (parse_kvs(x, get(get(tmpl, "metadata"), "annotations"), "spec.template.metadata.annotations", &p.annotations))
    goto fail;
  /* Contradictions: requirements on one key (and template labels) that no
  ** value can satisfy make a NodePool that can never launch anything. */
  {
    dt_symtab st = {0};
    dt_arena ar = {0};
    char f[300];
    rc = 0;
    for (size_t i = 0; i < p.reqs.n && !rc; i++) {
      const dt_mreq *a = &p.reqs.v[i];
      dt_req acc;
      dt_sym vals[64];
      size_t nv = a->n < 64 ? a->n : 64;
      for (size_t k = 0; k < nv; k++) vals[k] = dt__sym(&st, a->vals[k]);
      dt__req_make(&ar, &acc, dt__sym(&st, a->key), a->op, vals, (uint32_t)nv, &st);
      dt_buf why = {0};
      dt__buf_printf(&why, "%s %s", a->key, dt__op_name(a->op));
      for (size_t j = 0; j < p.reqs.n + p.labels.n && !rc; j++) {
        dt_req b;
        if (j < p.reqs.n) {
          if (j == i || strcmp(p.reqs.v[j].key, a->key)) continue;
          const dt_mreq *q = &p.reqs.v[j];
          size_t n2 = q->n < 64 ? q->n : 64;
          for (size_t k = 0; k < n2; k++) vals[k] = dt__sym(&st, q->vals[k]);
          dt__req_make(&ar, &b, acc.key, q->op, vals, (uint32_t)n2, &st);
          dt__buf_printf(&why, " and %s", dt__op_name(q->op));
        } else {
          const dt_kv *l = &p.labels.v[j - p.reqs.n];
          if (strcmp(l->key, a->key)) continue;
          vals[0] = dt__sym(&st, l->val);
          dt__req_make(&ar, &b, acc.key, DT_OP_IN, vals, 1, &st);
          dt__buf_printf(&why, " and template label %s=%s", l->key, l->val);
        }
        bool ok = dt__req_intersects(&st, &acc, &b);
        dt__req_intersect(&ar, &st, &acc, &b, &acc);
        if (!ok) {
          snprintf(f, sizeof f, "spec.template.spec.requirements[%zu]", i);
          rc = bad(x, f, "contradictory requirements: %s leave no value for %s",
                   why.p ? why.p : a->key, a->key);
        }
      }
      dt__free(why.p);
    }
    int soom = st.oom || ar.oom;
    dt__symtab_free(&st);
    dt__arena_free(&ar);
    if (!rc && soom) rc = oom(x);
    if (rc) goto fail;
  }
  if (dt__vec_push(&x->m->pools, p)) {
    rc = oom(x);
    goto fail;
  }
  return 0;
fail:
  pool_free(&p);
  return rc ? rc : DT_EINVAL;
}

/* Effective requests of a pod spec (KEP-753 sidecars, init max, overhead). */
static int pod_requests(mctx *x, const cJSON *spec, const char *path, dt_rlist *out) {
  dt_rlist sum = {0}, init_max = {0}, sidecars = {0};
  char f[300];
  int rc = 0;
  static const char *lists[] = {"containers", "initContainers"};
  for (int li = 0; li < 2 && !rc; li++) {
    const cJSON *cs = get(spec, lists[li]);
    if (cs && !cJSON_IsArray(cs)) {
      snprintf(f, sizeof f, "%s.%s", path, lists[li]);
      rc = bad(x, f, "expected a list");
      break;
    }
    size_t i = 0;
    for (const cJSON *c = cs ? cs->child : NULL; c && !rc; c = c->next, i++) {
      dt_rlist req = {0}, lim = {0};
      const cJSON *res = get(c, "resources");
      where wr = {path, lists[li], i, ".resources.requests"}, wl = {path, lists[li], i, ".resources.limits"};
      rc = rlist_at(x, get(res, "requests"), &wr, &req, true);
      if (!rc) rc = rlist_at(x, get(res, "limits"), &wl, &lim, true);
      /* A limit without a request defaults the request, as the API server does. */
      for (size_t k = 0; !rc && k < lim.n; k++) {
        bool has = false;
        for (size_t q = 0; q < req.n; q++) has |= strcmp(req.v[q].name, lim.v[k].name) == 0;
        if (!has && dt__rlist_add(&req, lim.v[k].name, lim.v[k].milli, DT_RL_SET)) rc = oom(x);
      }
      const char *rp = get_str(c, "restartPolicy");
      bool sidecar = li == 1 && rp && strcmp(rp, "Always") == 0;
      for (size_t k = 0; !rc && k < req.n; k++) {
        const char *rn = req.v[k].name;
        int64_t v = req.v[k].milli;
        if (li == 0) {
          if (dt__rlist_add(&sum, rn, v, DT_RL_SUM)) rc = oom(x);
        } else if (sidecar) {
          if (dt__rlist_add(&sidecars, rn, v, DT_RL_SUM)) rc = oom(x);
        } else {
          if (dt__rlist_add(&init_max, rn, dt__rlist_get(&sidecars, rn) + v, DT_RL_MAX)) rc = oom(x);
        }
      }
      if (!rc && sidecar)
        for (size_t k = 0; k < sidecars.n && !rc; k++)
          if (dt__rlist_add(&init_max, sidecars.v[k].name, sidecars.v[k].milli, DT_RL_MAX)) rc = oom(x);
      dt__rlist_free(&req);
      dt__rlist_free(&lim);
    }
  }
  if (!rc) {
    for (size_t k = 0; k < sidecars.n && !rc; k++)
      if (dt__rlist_add(&sum, sidecars.v[k].name, sidecars.v[k].milli, DT_RL_SUM)) rc = oom(x);
    for (size_t k = 0; k < init_max.n && !rc; k++)
      if (dt__rlist_add(&sum, init_max.v[k].name, init_max.v[k].milli, DT_RL_MAX)) rc = oom(x);
    /* Pod-level resources (spec.resources, Kubernetes 1.32+): where set,
    ** they are the pod's requests for those resources, whatever its
    ** containers ask; limits stand in for missing requests, as for a
    ** container. */
    const cJSON *pres = get(spec, "resources");
    if (!rc && pres && !cJSON_IsNull(pres)) {
      dt_rlist preq = {0}, plim = {0};
      where wr = {path, NULL, 0, ".resources.requests"}, wl = {path, NULL, 0, ".resources.limits"};
      rc = rlist_at(x, get(pres, "requests"), &wr, &preq, true);
      if (!rc) rc = rlist_at(x, get(pres, "limits"), &wl, &plim, true);
      for (size_t k = 0; k < plim.n && !rc; k++)
        if (!dt__rlist_get(&preq, plim.v[k].name) && dt__rlist_add(&preq, plim.v[k].name, plim.v[k].milli, DT_RL_SET))
          rc = oom(x);
      for (size_t k = 0; k < preq.n && !rc; k++)
        if (dt__rlist_add(&sum, preq.v[k].name, preq.v[k].milli, DT_RL_SET)) rc = oom(x);
      dt__rlist_free(&preq);
      dt__rlist_free(&plim);
    }
    dt_rlist ovh = {0};
    where wo = {path, NULL, 0, ".overhead"};
    if (!rc) rc = rlist_at(x, get(spec, "overhead"), &wo, &ovh, true);
    for (size_t k = 0; k < ovh.n && !rc; k++)
      if (dt__rlist_add(&sum, ovh.v[k].name, ovh.v[k].milli, DT_RL_SUM)) rc = oom(x);
    dt__rlist_free(&ovh);
    if (!rc && dt__rlist_add(&sum, "pods", 1000, DT_RL_SET)) rc = oom(x);
    for (size_t k = 0; k < sum.n && !rc; k++) {
      if (!request_absurd(sum.v[k].name, sum.v[k].milli)) continue;
      snprintf(f, sizeof f, "%s (total requests).%s", path, sum.v[k].name);
      rc = check_request(x, f, sum.v[k].name, sum.v[k].milli);
    }
  }
  dt__rlist_free(&init_max);
  dt__rlist_free(&sidecars);
  if (rc) {
    dt__rlist_free(&sum);
    return rc;
  }
  *out = sum;
  return 0;
}

static int parse_strs(mctx *x, const cJSON *arr, const char *field, char ***out, size_t *n) {
  if (!arr || cJSON_IsNull(arr)) return 0;
  if (!cJSON_IsArray(arr)) return bad(x, field, "expected a list of strings");
  size_t cnt = (size_t)cJSON_GetArraySize(arr);
  *out = dt__calloc(cnt ? cnt : 1, sizeof **out);
  if (!*out) return oom(x);
  for (const cJSON *c = arr->child; c; c = c->next) {
    if (!cJSON_IsString(c)) return bad(x, field, "expected a list of strings");
    if (!((*out)[(*n)++] = dt__strdup(c->valuestring))) return oom(x);
  }
  return 0;
}

/* matchLabels become In requirements; matchExpressions keep their operator. */
static int parse_selector(mctx *x, const cJSON *o, const char *field, dt_selector *sel) {
  if (!o || cJSON_IsNull(o)) return 0;
  if (!cJSON_IsObject(o)) return bad(x, field, "expected a label selector");
  sel->present = true;
  const cJSON *ml = get(o, "matchLabels"), *me = get(o, "matchExpressions");
  char f[300], tmp[64];
  size_t n = (ml ? (size_t)cJSON_GetArraySize(ml) : 0);
  if (me && !cJSON_IsNull(me)) {
    snprintf(f, sizeof f, "%s.matchExpressions", field);
    if (parse_mreqs(x, me, f, &sel->expr, false)) return failed(x);
    for (size_t i = 0; i < sel->expr.n; i++)
      if (sel->expr.v[i].op > DT_OP_DOESNOTEXIST) {
        snprintf(f, sizeof f, "%s.matchExpressions[%zu].operator", field, i);
        return bad(x, f, "label selectors take In, NotIn, Exists or DoesNotExist");
      }
  }
  if (!n) return 0;
  if (!cJSON_IsObject(ml)) {
    snprintf(f, sizeof f, "%s.matchLabels", field);
    return bad(x, f, "expected a map of strings");
  }
  dt_mreq *nv = dt__realloc(sel->expr.v, (sel->expr.n + n) * sizeof *nv);
  if (!nv) return oom(x);
  sel->expr.v = nv;
  for (const cJSON *c = ml->child; c; c = c->next) {
    const char *v = dt__scalar(c, tmp, sizeof tmp);
    snprintf(f, sizeof f, "%s.matchLabels.%s", field, c->string);
    if (!v) return bad(x, f, "expected a string");
    dt_mreq *q = &sel->expr.v[sel->expr.n++];
    memset(q, 0, sizeof *q);
    q->op = DT_OP_IN;
    q->key = dt__strdup(c->string);
    q->vals = dt__calloc(1, sizeof *q->vals);
    if (!q->key || !q->vals || !(q->vals[0] = dt__strdup(v))) return oom(x);
    q->n = 1;
  }
  return 0;
}

static int parse_podterms(mctx *x, const cJSON *arr, const char *field, bool weighted, dt_podterm **out,
                          size_t *n) {
  if (!arr || cJSON_IsNull(arr)) return 0;
  if (!cJSON_IsArray(arr)) return bad(x, field, "expected a list");
  size_t cnt = (size_t)cJSON_GetArraySize(arr), i = 0;
  *out = dt__calloc(cnt ? cnt : 1, sizeof **out);
  if (!*out) return oom(x);
  char f[400];
  for (const cJSON *t = arr->child; t; t = t->next, i++) {
    dt_podterm *d = &(*out)[(*n)++];
    const cJSON *term = t;
    if (weighted) {
      const cJSON *w = get(t, "weight");
      snprintf(f, sizeof f, "%s[%zu].weight", field, i);
      if (!cJSON_IsNumber(w) || w->valuedouble < 1 || w->valuedouble > 100)
        return bad(x, f, "expected an integer from 1 to 100");
      d->weight = (int)w->valuedouble;
      term = get(t, "podAffinityTerm");
      snprintf(f, sizeof f, "%s[%zu].podAffinityTerm", field, i);
      if (!cJSON_IsObject(term)) return bad(x, f, "missing");
    } else {
      snprintf(f, sizeof f, "%s[%zu]", field, i);
    }
    char g[500];
    const char *key = get_str(term, "topologyKey");
    snprintf(g, sizeof g, "%s.topologyKey", f);
    if (!key || !*key) return bad(x, g, "missing");
    if (!(d->key = dt__strdup(key))) return oom(x);
    snprintf(g, sizeof g, "%s.labelSelector", f);
    if (parse_selector(x, get(term, "labelSelector"), g, &d->sel)) return failed(x);
    snprintf(g, sizeof g, "%s.namespaces", f);
    if (parse_strs(x, get(term, "namespaces"), g, &d->ns, &d->nns)) return failed(x);
  }
  return 0;
}

static int parse_spreads(mctx *x, const cJSON *arr, const char *field, dt_podspec *p) {
  if (!arr || cJSON_IsNull(arr)) return 0;
  if (!cJSON_IsArray(arr)) return bad(x, field, "expected a list");
  size_t cnt = (size_t)cJSON_GetArraySize(arr), i = 0;
  p->spread = dt__calloc(cnt ? cnt : 1, sizeof *p->spread);
  if (!p->spread) return oom(x);
  char f[400];
  for (const cJSON *t = arr->child; t; t = t->next, i++) {
    dt_spread *d = &p->spread[p->nspread++];
    const cJSON *ms = get(t, "maxSkew"), *md = get(t, "minDomains");
    const char *key = get_str(t, "topologyKey"), *wu = get_str(t, "whenUnsatisfiable");
    snprintf(f, sizeof f, "%s[%zu].maxSkew", field, i);
    if (!cJSON_IsNumber(ms) || ms->valuedouble < 1 || ms->valuedouble != floor(ms->valuedouble))
      return bad(x, f, "expected an integer >= 1");
    d->max_skew = ms->valuedouble > 1e6 ? 1000000 : (int)ms->valuedouble;
    if (md && !cJSON_IsNull(md)) {
      snprintf(f, sizeof f, "%s[%zu].minDomains", field, i);
      if (!cJSON_IsNumber(md) || md->valuedouble < 1 || md->valuedouble != floor(md->valuedouble))
        return bad(x, f, "expected an integer >= 1");
      d->min_domains = md->valuedouble > 1e6 ? 1000000 : (int)md->valuedouble;
    }
    snprintf(f, sizeof f, "%s[%zu].topologyKey", field, i);
    if (!key || !*key) return bad(x, f, "missing");
    snprintf(f, sizeof f, "%s[%zu].whenUnsatisfiable", field, i);
    if (wu && strcmp(wu, "DoNotSchedule") && strcmp(wu, "ScheduleAnyway"))
      return bad(x, f, "expected DoNotSchedule or ScheduleAnyway");
    d->anyway = wu && !strcmp(wu, "ScheduleAnyway");
    if (!(d->key = dt__strdup(key))) return oom(x);
    snprintf(f, sizeof f, "%s[%zu].labelSelector", field, i);
    if (parse_selector(x, get(t, "labelSelector"), f, &d->sel)) return failed(x);
    snprintf(f, sizeof f, "%s[%zu].matchLabelKeys", field, i);
    if (parse_strs(x, get(t, "matchLabelKeys"), f, &d->match_label_keys, &d->nmlk)) return failed(x);
  }
  return 0;
}

static int parse_ports(mctx *x, const cJSON *spec, const char *path, dt_podspec *p) {
  static const char *lists[] = {"containers", "initContainers"};
  char f[400];
  for (int li = 0; li < 2; li++) {
    const cJSON *cs = get(spec, lists[li]);
    size_t ci = 0;
    for (const cJSON *c = cJSON_IsArray(cs) ? cs->child : NULL; c; c = c->next, ci++) {
      const cJSON *ports = get(c, "ports");
      size_t pi = 0;
      for (const cJSON *pt = cJSON_IsArray(ports) ? ports->child : NULL; pt; pt = pt->next, pi++) {
        const cJSON *hp = get(pt, "hostPort");
        if (!hp || cJSON_IsNull(hp)) continue;
        snprintf(f, sizeof f, "%s.%s[%zu].ports[%zu].hostPort", path, lists[li], ci, pi);
        if (!cJSON_IsNumber(hp) || hp->valuedouble < 0 || hp->valuedouble > 65535)
          return bad(x, f, "expected a port number");
        if (hp->valuedouble == 0) continue;
        dt_hostport *np = dt__realloc(p->ports, (p->nports + 1) * sizeof *np);
        if (!np) return oom(x);
        p->ports = np;
        dt_hostport *d = &p->ports[p->nports++];
        memset(d, 0, sizeof *d);
        d->port = (int)hp->valuedouble;
        const char *proto = get_str(pt, "protocol"), *ip = get_str(pt, "hostIP");
        snprintf(d->proto, sizeof d->proto, "%s", proto ? proto : "TCP");
        if (!(d->ip = dt__strdup(ip && *ip ? ip : "0.0.0.0"))) return oom(x);
      }
    }
  }
  return 0;
}

/* matchFields (every DaemonSet pod has one): metadata.name is the only field
** Kubernetes allows, and a node's name is its kubernetes.io/hostname label,
** so each becomes a hostname requirement of the same term. */
static int match_fields(mctx *x, const cJSON *arr, const char *field, dt_mreqs *term) {
  dt_mreqs mf = {0};
  if (parse_mreqs(x, arr, field, &mf, false)) {
    mreqs_free(&mf);
    return failed(x);
  }
  dt_mreq *nv = mf.n ? dt__realloc(term->v, (term->n + mf.n) * sizeof *nv) : term->v;
  if (mf.n && !nv) {
    mreqs_free(&mf);
    return oom(x);
  }
  term->v = nv;
  for (size_t i = 0; i < mf.n; i++) {
    if (strcmp(mf.v[i].key, "metadata.name")) {
      char f[400], key[200];
      snprintf(f, sizeof f, "%s[%zu].key", field, i);
      snprintf(key, sizeof key, "%s", mf.v[i].key);
      for (size_t k = i; k < mf.n; k++) term->v[term->n++] = mf.v[k]; /* freed with the term */
      dt__free(mf.v);
      return bad(x, f, "matchFields supports metadata.name only (as Kubernetes), got \"%s\"", key);
    }
    char *host = dt__strdup(DT_L_HOSTNAME);
    if (!host) {
      for (size_t k = i; k < mf.n; k++) term->v[term->n++] = mf.v[k];
      dt__free(mf.v);
      return oom(x);
    }
    dt__free(mf.v[i].key);
    mf.v[i].key = host;
    term->v[term->n++] = mf.v[i];
  }
  dt__free(mf.v);
  return 0;
}

static int podspec(mctx *x, const cJSON *tmpl, const char *path, dt_podspec *p) {
  const cJSON *spec = get(tmpl, "spec");
  char f[300];
  if (!cJSON_IsObject(spec)) {
    snprintf(f, sizeof f, "%s", path);
    return bad(x, f, "missing or not an object");
  }
  if (pod_requests(x, spec, path, &p->requests)) return failed(x);
  const cJSON *vol;
  cJSON_ArrayForEach(vol, get(spec, "volumes")) {
    const char *cn = get_str(get(vol, "persistentVolumeClaim"), "claimName");
    if (!cn) continue;
    char **nv = dt__realloc(p->pvcs, (p->npvcs + 1) * sizeof *nv);
    if (!nv) return oom(x);
    p->pvcs = nv;
    if (!(p->pvcs[p->npvcs] = dt__strdup(cn))) return oom(x);
    p->npvcs++;
  }
  /* field names are written out only for fields that are there */
  if (get(spec, "nodeSelector")) {
    snprintf(f, sizeof f, "%s.nodeSelector", path);
    if (parse_kvs(x, get(spec, "nodeSelector"), f, &p->node_selector)) return failed(x);
  }
  if (get(spec, "tolerations")) {
    snprintf(f, sizeof f, "%s.tolerations", path);
    if (parse_tolerations(x, get(spec, "tolerations"), f, p)) return failed(x);
  }
  const cJSON *terms = get(get(get(get(spec, "affinity"), "nodeAffinity"),
                               "requiredDuringSchedulingIgnoredDuringExecution"),
                           "nodeSelectorTerms");
  if (terms && !cJSON_IsNull(terms)) {
    snprintf(f, sizeof f, "%s.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", path);
    if (!cJSON_IsArray(terms)) return bad(x, f, "expected a list");
    size_t n = (size_t)cJSON_GetArraySize(terms), i = 0;
    p->terms = dt__calloc(n ? n : 1, sizeof *p->terms);
    if (!p->terms) return oom(x);
    for (const cJSON *t = terms->child; t; t = t->next, i++) {
      char g[400];
      snprintf(g, sizeof g, "%s[%zu].matchExpressions", f, i);
      p->nterms++;
      if (parse_mreqs(x, get(t, "matchExpressions"), g, &p->terms[i], false)) return failed(x);
      snprintf(g, sizeof g, "%s[%zu].matchFields", f, i);
      if (match_fields(x, get(t, "matchFields"), g, &p->terms[i])) return failed(x);
    }
  }
  const cJSON *na = get(get(spec, "affinity"), "nodeAffinity");
  const cJSON *pref = get(na, "preferredDuringSchedulingIgnoredDuringExecution");
  if (pref && !cJSON_IsNull(pref)) {
    snprintf(f, sizeof f, "%s.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution", path);
    if (!cJSON_IsArray(pref)) return bad(x, f, "expected a list");
    size_t n = (size_t)cJSON_GetArraySize(pref), i = 0;
    p->pref = dt__calloc(n ? n : 1, sizeof *p->pref);
    if (!p->pref) return oom(x);
    for (const cJSON *t = pref->child; t; t = t->next, i++) {
      char g[500];
      const cJSON *w = get(t, "weight");
      snprintf(g, sizeof g, "%s[%zu].weight", f, i);
      if (!cJSON_IsNumber(w) || w->valuedouble < 1 || w->valuedouble > 100)
        return bad(x, g, "expected an integer from 1 to 100");
      p->pref[i].weight = (int)w->valuedouble;
      p->npref++;
      snprintf(g, sizeof g, "%s[%zu].preference.matchExpressions", f, i);
      if (parse_mreqs(x, get(get(t, "preference"), "matchExpressions"), g, &p->pref[i].reqs, false))
        return failed(x);
    }
  }
  const cJSON *aff = get(get(spec, "affinity"), "podAffinity");
  const cJSON *anti = get(get(spec, "affinity"), "podAntiAffinity");
  char g[400];
  if (aff || anti) {
  snprintf(g, sizeof g, "%s.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution", path);
  if (parse_podterms(x, get(aff, "requiredDuringSchedulingIgnoredDuringExecution"), g, false, &p->aff, &p->naff))
    return failed(x);
  snprintf(g, sizeof g, "%s.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution", path);
  if (parse_podterms(x, get(aff, "preferredDuringSchedulingIgnoredDuringExecution"), g, true, &p->paff, &p->npaff))
    return failed(x);
  snprintf(g, sizeof g, "%s.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution", path);
  if (parse_podterms(x, get(anti, "requiredDuringSchedulingIgnoredDuringExecution"), g, false, &p->anti, &p->nanti))
    return failed(x);
  snprintf(g, sizeof g, "%s.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution", path);
  if (parse_podterms(x, get(anti, "preferredDuringSchedulingIgnoredDuringExecution"), g, true, &p->panti, &p->npanti))
    return failed(x);
  }
  if (get(spec, "topologySpreadConstraints")) {
    snprintf(g, sizeof g, "%s.topologySpreadConstraints", path);
    if (parse_spreads(x, get(spec, "topologySpreadConstraints"), g, p)) return failed(x);
  }
  if (parse_ports(x, spec, path, p)) return failed(x);
  const char *rc = get_str(spec, "runtimeClassName");
  if (rc && *rc && !(p->runtime_class = dt__strdup(rc))) return oom(x);
  const cJSON *ovh = get(spec, "overhead");
  p->has_overhead = ovh && cJSON_IsObject(ovh) && ovh->child;
  const char *nn = get_str(spec, "nodeName");
  if (nn && *nn && !(p->node_name = dt__strdup(nn))) return oom(x);
  return 0;
}

/* What disruption needs of a bound pod: do-not-disrupt ("true" or a
** duration from the pod's start), deletion cost, priority, DaemonSet owner. */
static int pod_disruption(mctx *x, const cJSON *o, dt_podspec *p) {
  const cJSON *md = get(o, "metadata"), *ann = get(md, "annotations");
  const char *dnd = get_str(ann, "karpenter.sh/do-not-disrupt");
  if (dnd && !strcmp(dnd, "true")) {
    p->dnd = true;
  } else if (dnd && *dnd) {
    int64_t d, start = p->created;
    const char *ts = get_str(get(o, "status"), "startTime");
    if (ts) dt_time_parse(ts, &start, NULL);
    if (dt__duration_parse(dnd, &d))
      dt__buf_printf(&x->m->notes, "%s: %s: metadata.annotations.karpenter.sh/do-not-disrupt: \"%s\" is neither \"true\" "
                     "nor a duration; ignored (as Karpenter)\n", x->file, x->obj, dnd);
    else
      p->dnd_until = start + d;
  }
  const char *dc = get_str(ann, "controller.kubernetes.io/pod-deletion-cost");
  if (dc) {
    char *end;
    long long v = strtoll(dc, &end, 10);
    if (*end || end == dc) return bad(x, "metadata.annotations.controller.kubernetes.io/pod-deletion-cost",
                                      "expected an integer");
    p->deletion_cost = v;
  }
  const cJSON *pr = get(get(o, "spec"), "priority");
  if (cJSON_IsNumber(pr)) p->priority = dt__to_i64(pr->valuedouble);
  const cJSON *owners = get(md, "ownerReferences");
  for (const cJSON *c = cJSON_IsArray(owners) ? owners->child : NULL; c; c = c->next) {
    const char *k = get_str(c, "kind");
    if (k && !strcmp(k, "DaemonSet")) p->daemon = true;
  }
  const cJSON *mirror = get(ann, "kubernetes.io/config.mirror");
  if (mirror) p->daemon = true; /* static pods stay with their node */
  return 0;
}

/* Pods of all inputs together stay within DT_MAX_PODS, so a few small
** workloads cannot ask for gigabytes. */
static int count_pods(mctx *x, int64_t n, const char *field) {
  if (x->m->npods + n > DT_MAX_PODS)
    return bad(x, field, "%lld pods in all inputs together would exceed %d (the limit on pods)",
               (long long)(x->m->npods + n), DT_MAX_PODS);
  x->m->npods += n;
  return 0;
}

static int pod(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (meta(x, o, &ns, &name, true) || check_duplicate(x, ns, name)) return failed(x);
  const char *phase = get_str(get(o, "status"), "phase");
  if (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))) return 0;
  /* A pod without a node is planned only when Karpenter's provisioner would
  ** plan it: not gated, not nominated to a node by the kube-scheduler, not
  ** being deleted, not a DaemonSet's or a Node's (those come with their node). */
  const cJSON *spec = get(o, "spec"), *md = get(o, "metadata");
  if (!get_str(spec, "nodeName")) {
    const cJSON *gates = get(spec, "schedulingGates");
    const char *skip = cJSON_GetArraySize(gates) > 0                   ? "scheduling-gated"
                       : get_str(get(o, "status"), "nominatedNodeName") ? "nominated to a node"
                       : get_str(md, "deletionTimestamp")              ? "being deleted"
                                                                      : NULL;
    const cJSON *ow;
    cJSON_ArrayForEach(ow, get(md, "ownerReferences")) {
      const char *k = get_str(ow, "kind");
      if (!skip && k && (!strcmp(k, "DaemonSet") || !strcmp(k, "Node"))) skip = "owned by a DaemonSet or a Node";
    }
    if (skip) {
      dt__buf_printf(&x->m->notes, "%s: %s: %s, not provisioned (as Karpenter)\n", x->file, x->obj, skip);
      return 0;
    }
  }
  dt_podspec p = {0};
  p.count = 1;
  p.file = (char *)x->file;
  p.seq = x->m->seq++;
  p.created = created_at(o);
  if (!(p.ns = dt__strdup(ns)) || !(p.name = dt__strdup(name))) goto nomem;
  if (parse_kvs(x, get(get(o, "metadata"), "labels"), "metadata.labels", &p.labels) ||
      podspec(x, o, "spec", &p) || pod_disruption(x, o, &p) || count_pods(x, 1, "metadata.name"))
    goto fail;
  if (dt__vec_push(&x->m->pods, p)) goto nomem;
  return 0;
nomem:
  oom(x);
fail:
  pod_free(&p);
  return failed(x);
}

static int workload(mctx *x, const cJSON *o, bool daemonset) {
  const char *ns, *name;
  if (meta(x, o, &ns, &name, true) || check_duplicate(x, ns, name)) return failed(x);
  const cJSON *spec = get(o, "spec");
  const cJSON *r = daemonset ? NULL : get(spec, "replicas");
  int64_t replicas = 1;
  if (r && !cJSON_IsNull(r)) {
    if (!cJSON_IsNumber(r) || r->valuedouble < 0 || r->valuedouble != floor(r->valuedouble) ||
        r->valuedouble > MAX_REPLICAS)
      return bad(x, "spec.replicas", "expected an integer from 0 to %d", MAX_REPLICAS);
    replicas = (int64_t)r->valuedouble;
  }
  const cJSON *tmpl = get(spec, "template");
  if (!cJSON_IsObject(tmpl)) return bad(x, "spec.template", "missing or not an object");
  dt_podspec p = {0};
  p.count = replicas;
  p.file = (char *)x->file;
  p.seq = x->m->seq++;
  p.created = created_at(o);
  char owner[600];
  snprintf(owner, sizeof owner, "%s/%s", x->kind, name);
  if (!(p.ns = dt__strdup(ns)) || !(p.name = dt__strdup(name)) || !(p.owner = dt__strdup(owner)))
    goto nomem;
  if (parse_kvs(x, get(get(tmpl, "metadata"), "labels"), "spec.template.metadata.labels",
                &p.labels) ||
      podspec(x, tmpl, "spec.template.spec", &p) || parse_selector(x, get(spec, "selector"), "spec.selector", &p.sel))
    goto fail;
  /* A ReplicaSet a Deployment owns: the Deployment counts its replicas. */
  const cJSON *ow;
  cJSON_ArrayForEach(ow, get(get(o, "metadata"), "ownerReferences")) {
    const char *k = get_str(ow, "kind"), *on = get_str(ow, "name");
    char parent[600];
    snprintf(parent, sizeof parent, "%s/%s", k ? k : "", on ? on : "");
    if (!daemonset && k && on && !strcmp(k, "Deployment") && !p.parent && !(p.parent = dt__strdup(parent))) goto nomem;
  }
  if (replicas == 0) {
    pod_free(&p);
    return 0;
  }
  if (!daemonset && count_pods(x, replicas, "spec.replicas")) goto fail;
  if (daemonset ? dt__vec_push(&x->m->daemonsets, p) : dt__vec_push(&x->m->pods, p)) goto nomem;
  return 0;
nomem:
  oom(x);
fail:
  pod_free(&p);
  return failed(x);
}

static int unavailable(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (meta(x, o, &ns, &name, false) || check_duplicate(x, NULL, name)) return failed(x);
  const cJSON *spec = get(o, "spec");
  const char *ct = get_str(spec, "capacityType"), *it = get_str(spec, "instanceType"), *zone = get_str(spec, "zone");
  dt_mark mk = {0};
  mk.ct = ct ? dt__ct_parse(ct) : -1;
  if (mk.ct < 0) return bad(x, "spec.capacityType", "expected on-demand, spot or reserved");
  if (!it || !*it) return bad(x, "spec.instanceType", "missing");
  if (!zone || !*zone) return bad(x, "spec.zone", "missing");
  const char *exp = get_str(spec, "expiresAt"), *at = get_str(spec, "markedAt"), *ttl = get_str(spec, "ttl");
  if (exp) {
    if (dt_time_parse(exp, &mk.expires, NULL)) return bad(x, "spec.expiresAt", "expected an RFC 3339 time");
  } else {
    int64_t t0, d = 180; /* Karpenter's AWS provider keeps ICE marks 3 minutes */
    if (!at || dt_time_parse(at, &t0, NULL))
      return bad(x, "spec.markedAt", "expected an RFC 3339 time (or give spec.expiresAt)");
    if (ttl && dt__duration_parse(ttl, &d)) return bad(x, "spec.ttl", "expected a duration such as 3m or 1h");
    mk.expires = t0 + d;
  }
  mk.file = (char *)x->file;
  mk.instance_type = dt__strdup(it);
  mk.zone = dt__strdup(zone);
  mk.name = dt__strdup(name);
  if (!mk.instance_type || !mk.zone || !mk.name || dt__vec_push(&x->m->marks, mk)) {
    dt__free(mk.instance_type);
    dt__free(mk.zone);
    dt__free(mk.name);
    return oom(x);
  }
  return 0;
}

static int runtime_class(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (meta(x, o, &ns, &name, false) || check_duplicate(x, NULL, name)) return failed(x);
  dt_runtimeclass rc = {0};
  if (!(rc.name = dt__strdup(name))) return oom(x);
  if (parse_rlist(x, get(get(o, "overhead"), "podFixed"), "overhead.podFixed", &rc.overhead, true) ||
      dt__vec_push(&x->m->runtime_classes, rc)) {
    dt__free(rc.name);
    dt__rlist_free(&rc.overhead);
    return x->code ? x->code : oom(x);
  }
  return 0;
}

static int node(mctx *x, const cJSON *o, bool is_claim) {
  const char *ns, *name;
  if (meta(x, o, &ns, &name, false) || check_duplicate(x, NULL, name)) return failed(x);
  dt_node n = {0};
  n.file = (char *)x->file;
  n.kind = (char *)(is_claim ? "NodeClaim" : "Node");
  n.seq = x->m->seq++;
  const cJSON *md = get(o, "metadata"), *spec = get(o, "spec"), *st = get(o, "status");
  if (!(n.name = dt__strdup(name))) goto nomem;
  if (parse_kvs(x, get(md, "labels"), "metadata.labels", &n.labels) ||
      parse_rlist(x, get(st, "allocatable"), "status.allocatable", &n.allocatable, false) ||
      parse_taints(x, get(spec, "taints"), "spec.taints", &n.taints, &n.ntaints))
    goto fail;
  n.created = created_at(o);
  n.ready = true;
  const char *del = get_str(md, "deletionTimestamp");
  if (del && (dt_time_parse(del, &n.deleting, NULL) || !n.deleting)) n.deleting = 1;
  const cJSON *ann = get(md, "annotations");
  const char *dnd = get_str(ann, "karpenter.sh/do-not-disrupt");
  n.dnd = dnd && !strcmp(dnd, "true");
  const char *ph = get_str(ann, "dovetail.dev/nodepool-hash");
  if (ph && !(n.pool_hash = dt__strdup(ph))) goto nomem;
  bool claim_init = false;
  const cJSON *conds = get(st, "conditions");
  for (const cJSON *c = cJSON_IsArray(conds) ? conds->child : NULL; c; c = c->next) {
    const char *t = get_str(c, "type"), *cs = get_str(c, "status");
    if (t && cs && !strcmp(t, "Ready")) n.ready = !strcmp(cs, "True");
    if (t && cs && !strcmp(t, "Initialized")) claim_init = !strcmp(cs, "True");
  }
  const char *lpe = get_str(st, "lastPodEventTime");
  if (lpe) dt_time_parse(lpe, &n.last_pod_event, NULL);
  if (is_claim) {
    if (!(n.claim_name = dt__strdup(name))) goto nomem;
    const char *pid = get_str(st, "providerID");
    if (pid && *pid && !(n.provider_id = dt__strdup(pid))) goto nomem;
    const char *nn = get_str(st, "nodeName");
    if (nn && *nn && !(n.node_name = dt__strdup(nn))) goto nomem;
    /* Requirements with a single In value become labels (our own claims
    ** carry both; a claim from a cluster may only have requirements). */
    dt_mreqs reqs = {0};
    if (parse_mreqs(x, get(spec, "requirements"), "spec.requirements", &reqs, true)) {
      mreqs_free(&reqs);
      goto fail;
    }
    for (size_t i = 0; i < reqs.n; i++) {
      if (reqs.v[i].op != DT_OP_IN || reqs.v[i].n != 1) continue;
      bool has = false;
      for (size_t k = 0; k < n.labels.n; k++) has |= strcmp(n.labels.v[k].key, reqs.v[i].key) == 0;
      if (has) continue;
      dt_kv *nv = dt__realloc(n.labels.v, (n.labels.n + 1) * sizeof *nv);
      if (!nv) {
        mreqs_free(&reqs);
        goto nomem;
      }
      n.labels.v = nv;
      nv[n.labels.n].key = dt__strdup(reqs.v[i].key);
      nv[n.labels.n].val = dt__strdup(reqs.v[i].vals[0]);
      n.labels.n++;
      if (!nv[n.labels.n - 1].key || !nv[n.labels.n - 1].val) {
        mreqs_free(&reqs);
        goto nomem;
      }
    }
    mreqs_free(&reqs);
    const char *pods = get_str(get(md, "annotations"), DT_A_PODS);
    for (const char *s = pods; s && *s;) {
      const char *e = strchr(s, ',');
      size_t len = e ? (size_t)(e - s) : strlen(s);
      while (len && (*s == ' ')) s++, len--;
      while (len && s[len - 1] == ' ') len--;
      if (len) {
        char **np = dt__realloc(n.pods, (n.npods + 1) * sizeof *np);
        if (!np) goto nomem;
        n.pods = np;
        if (!(np[n.npods] = dt__strndup(s, len))) goto nomem;
        if (!strchr(np[n.npods], '/')) {
          n.npods++;
          bad(x, "metadata.annotations." DT_A_PODS, "expected namespace/name entries, got \"%.*s\"",
              (int)len, s);
          goto fail;
        }
        n.npods++;
      }
      s = e ? e + 1 : NULL;
    }
    /* In flight until the node registers; a claim from the cluster with
    ** Initialized=True counts as initialized. */
    n.initialized = claim_init;
  } else {
    const cJSON *u = get(spec, "unschedulable");
    n.unschedulable = cJSON_IsTrue(u);
    const char *pid = get_str(spec, "providerID");
    if (pid && *pid && !(n.provider_id = dt__strdup(pid))) goto nomem;
    n.initialized = true;
    if (n.allocatable.n == 0) {
      /* A Node without status.allocatable only makes sense if its instance
      ** type is in the catalog; the scheduler derives it then. */
    }
  }
  if (dt__vec_push(&x->m->nodes, n)) goto nomem;
  return 0;
nomem:
  oom(x);
fail:
  node_free(&n);
  return failed(x);
}

/* ------------------------------------------------------------- VM pools */

const char *const dt__sort_names[5] = {"Random", "Oldest", "Newest", "AscendingOrder", "DescendingOrder"};

#define DEFAULT_BURST 250
#define DEFAULT_HEAL_THRESHOLD 3
#define DEFAULT_MIN_FAILING (5 * 60)
#define DEFAULT_HEAL_BASE 60
#define DEFAULT_HEAL_FACTOR 2.0
#define DEFAULT_HEAL_CAP (30 * 60)

static void selpolicy_free(dt_selpolicy *s) {
  for (size_t i = 0; i < s->n; i++) {
    selector_free(&s->v[i].labels);
    mreqs_free(&s->v[i].node);
  }
  dt__free(s->v);
  memset(s, 0, sizeof *s);
}

static void vmpool_free(dt_vmpool *p) {
  dt__free(p->uid);
  dt__free(p->ns);
  dt__free(p->name);
  selector_free(&p->selector);
  selpolicy_free(&p->scale_sel);
  selpolicy_free(&p->update_sel);
  cJSON_Delete(p->tmpl);
  strs_free(p->dv, p->ndv);
  pod_free(&p->launcher);
}

static void vm_free(dt_vm *v) {
  dt__free(v->ns);
  dt__free(v->name);
  dt__free(v->owner);
  dt__kvs_free(&v->labels);
  dt__kvs_free(&v->node_selector);
  dt__free(v->status);
  dt__free(v->revision);
  dt__free(v->tmpl_hash);
}

static uint64_t canon_hash(mctx *x, const cJSON *v, int *rc) {
  dt_buf b = {0};
  dt__json_canon(v, &b);
  uint64_t h = dt__hash64(b.p ? b.p : "", b.len);
  if (b.oom) *rc = oom(x);
  dt__free(b.p);
  return h;
}

/* One selection entry: {labelSelector, nodeSelectorRequirementMatcher}, or
** a bare label selector (matchLabels / matchExpressions). */
static int sel_entry(mctx *x, const cJSON *o, const char *field, dt_selentry *e) {
  char f[400];
  if (!cJSON_IsObject(o)) return bad(x, field, "expected a selector");
  const cJSON *ls = get(o, "labelSelector"), *nm = get(o, "nodeSelectorRequirementMatcher");
  if (!ls && !nm) return parse_selector(x, o, field, &e->labels);
  snprintf(f, sizeof f, "%s.labelSelector", field);
  if (parse_selector(x, ls, f, &e->labels)) return failed(x);
  if (ls && !e->labels.present) e->labels.present = true;
  snprintf(f, sizeof f, "%s.nodeSelectorRequirementMatcher", field);
  return parse_mreqs(x, nm, f, &e->node, false);
}

static int parse_sort(mctx *x, const cJSON *v, const char *field, int *out) {
  const char *s = cJSON_IsString(v) ? v->valuestring : NULL;
  for (int i = 0; s && i < 5; i++)
    if (!strcmp(s, dt__sort_names[i])) {
      *out = i;
      return 0;
    }
  return bad(x, field, "expected Random, Oldest, Newest, AscendingOrder or DescendingOrder");
}

/* selectionPolicy: the design's orderedPolicies + basePolicy, and KubeVirt's
** single selectors + sortPolicy (its selectors become the first entry: a
** priority, with the base policy behind it, never a filter that runs dry). */
static int sel_policy(mctx *x, const cJSON *o, const char *field, dt_selpolicy *s) {
  if (!o || cJSON_IsNull(o)) return 0;
  char f[400];
  if (!cJSON_IsObject(o)) return bad(x, field, "expected an object");
  const cJSON *ord = get(o, "orderedPolicies"), *one = get(o, "selectors");
  size_t n = (one && !cJSON_IsNull(one) ? 1 : 0) + (cJSON_IsArray(ord) ? (size_t)cJSON_GetArraySize(ord) : 0);
  if (ord && !cJSON_IsNull(ord) && !cJSON_IsArray(ord)) {
    snprintf(f, sizeof f, "%s.orderedPolicies", field);
    return bad(x, f, "expected a list of label selectors");
  }
  if (!(s->v = dt__calloc(n ? n : 1, sizeof *s->v))) return oom(x);
  if (one && !cJSON_IsNull(one)) {
    snprintf(f, sizeof f, "%s.selectors", field);
    s->n++;
    s->selectors_first = true;
    if (sel_entry(x, one, f, &s->v[0])) return failed(x);
  }
  size_t i = 0;
  for (const cJSON *c = cJSON_IsArray(ord) ? ord->child : NULL; c; c = c->next, i++) {
    snprintf(f, sizeof f, "%s.orderedPolicies[%zu]", field, i);
    if (sel_entry(x, c, f, &s->v[s->n++])) return failed(x);
  }
  const cJSON *bp = get(o, "basePolicy"), *sp = get(o, "sortPolicy");
  int b1 = -1, b2 = -1;
  snprintf(f, sizeof f, "%s.basePolicy", field);
  if (bp && !cJSON_IsNull(bp) && parse_sort(x, bp, f, &b1)) return failed(x);
  snprintf(f, sizeof f, "%s.sortPolicy", field);
  if (sp && !cJSON_IsNull(sp) && parse_sort(x, sp, f, &b2)) return failed(x);
  if (b1 >= 0 && b2 >= 0 && b1 != b2) return bad(x, f, "disagrees with basePolicy; set one of them");
  s->base = b1 >= 0 ? b1 : b2 >= 0 ? b2 : DT_SORT_RANDOM;
  s->base_set = b1 >= 0 || b2 >= 0;
  return 0;
}

static int parse_preserve(mctx *x, const cJSON *o, const char *field, int *out) {
  const cJSON *v = get(o, "statePreservation");
  if (!v || cJSON_IsNull(v)) return 0;
  const char *s = cJSON_IsString(v) ? v->valuestring : "";
  if (!strcmp(s, "Disabled")) *out = DT_PRESERVE_DISABLED;
  else if (!strcmp(s, "Offline")) *out = DT_PRESERVE_OFFLINE;
  else if (!strcmp(s, "Online")) *out = DT_PRESERVE_ONLINE;
  else return bad(x, field, "expected Disabled, Offline or Online");
  return 0;
}

/* scaleInStrategy / updateStrategy: at most one of unmanaged, opportunistic
** and proactive (the admission webhook's rule). */
static int strategy(mctx *x, const cJSON *o, const char *field, int *strat, int *preserve, dt_selpolicy *sel) {
  *strat = DT_STRAT_PROACTIVE;
  if (!o || cJSON_IsNull(o)) return 0;
  if (!cJSON_IsObject(o)) return bad(x, field, "expected an object");
  static const char *names[] = {"proactive", "opportunistic", "unmanaged"};
  int seen = 0;
  char f[400];
  for (int i = 0; i < 3; i++) {
    const cJSON *v = get(o, names[i]);
    if (!v || cJSON_IsNull(v)) continue;
    if (seen++) return bad(x, field, "only one strategy can be configured at a time");
    *strat = i;
    snprintf(f, sizeof f, "%s.%s", field, names[i]);
    if (!cJSON_IsObject(v)) return bad(x, f, "expected an object");
    snprintf(f, sizeof f, "%s.%s.statePreservation", field, names[i]);
    if (preserve && parse_preserve(x, v, f, preserve)) return failed(x);
    snprintf(f, sizeof f, "%s.%s.selectionPolicy", field, names[i]);
    if (i == DT_STRAT_PROACTIVE && sel_policy(x, get(v, "selectionPolicy"), f, sel)) return failed(x);
  }
  for (const cJSON *c = o->child; c; c = c->next)
    if (strcmp(c->string, "proactive") && strcmp(c->string, "opportunistic") && strcmp(c->string, "unmanaged")) {
      snprintf(f, sizeof f, "%s.%s", field, c->string);
      return bad(x, f, "unknown strategy (expected proactive, opportunistic or unmanaged)");
    }
  return 0;
}

static bool vmi_runs(const cJSON *vmspec) {
  const char *rs = get_str(vmspec, "runStrategy");
  if (rs) return strcmp(rs, "Halted") && strcmp(rs, "Manual");
  return cJSON_IsTrue(get(vmspec, "running"));
}

/* The architectures KubeVirt's admission accepts for a VMI (its
** ValidateVirtualMachineInstancePerArch); returned as static strings. */
static const char *vm_arch(const char *s) {
  static const char *const archs[] = {"amd64", "arm64", "s390x"};
  for (int i = 0; s && i < 3; i++)
    if (!strcmp(s, archs[i])) return archs[i];
  return NULL;
}

/* The virt-launcher pod a VMI template needs: domain requests (memory
** defaulting to the guest memory, cpu to 100m per vCPU as KubeVirt's default
** cpuAllocationRatio of 10 gives), with the template's placement fields, and
** its spec.architecture, which KubeVirt's virt-launcher pods select as
** kubernetes.io/arch (the cluster's default architecture when unset). */
static int vmi_podspec(mctx *x, const cJSON *vmi, const char *path, dt_podspec *p) {
  char f[400];
  const cJSON *spec = get(vmi, "spec");
  snprintf(f, sizeof f, "%s.spec", path);
  if (!cJSON_IsObject(spec)) return bad(x, f, "missing or not an object");
  const cJSON *arch = get(spec, "architecture");
  const char *va = "";
  if (arch && !cJSON_IsNull(arch) && !(cJSON_IsString(arch) && !*arch->valuestring)) {
    snprintf(f, sizeof f, "%s.spec.architecture", path);
    if (!(va = vm_arch(cJSON_GetStringValue(arch))))
      return bad(x, f, "unsupported architecture %s%s%s (KubeVirt runs amd64, arm64 and s390x)",
                 cJSON_IsString(arch) ? "\"" : "", cJSON_IsString(arch) ? arch->valuestring : "(not a string)",
                 cJSON_IsString(arch) ? "\"" : "");
  }
  const cJSON *domain = get(spec, "domain");
  dt_rlist req = {0};
  snprintf(f, sizeof f, "%s.spec.domain.resources.requests", path);
  if (parse_rlist(x, get(get(domain, "resources"), "requests"), f, &req, true)) {
    dt__rlist_free(&req);
    return failed(x);
  }
  int rc = 0;
  char tmp[64];
  if (!dt__rlist_get(&req, "memory")) {
    const char *g = dt__scalar(get(get(domain, "memory"), "guest"), tmp, sizeof tmp);
    int64_t v;
    dt_error qe;
    snprintf(f, sizeof f, "%s.spec.domain.memory.guest", path);
    if (g && dt_quantity_parse(g, &v, &qe))
      rc = bad(x, f, "%s", qe.msg);
    else if (g && dt__rlist_add(&req, "memory", v, DT_RL_SET))
      rc = oom(x);
  }
  if (!rc && !dt__rlist_get(&req, "cpu")) {
    const cJSON *cpu = get(domain, "cpu");
    int64_t vcpus = 1;
    static const char *dims[] = {"cores", "sockets", "threads"};
    for (int i = 0; i < 3 && !rc; i++) {
      const cJSON *d = get(cpu, dims[i]);
      snprintf(f, sizeof f, "%s.spec.domain.cpu.%s", path, dims[i]);
      if (!d || cJSON_IsNull(d)) continue;
      if (!cJSON_IsNumber(d) || d->valuedouble < 1 || d->valuedouble > 4096 || d->valuedouble != floor(d->valuedouble))
        rc = bad(x, f, "expected an integer from 1 to 4096");
      else
        vcpus *= (int64_t)d->valuedouble;
    }
    if (!rc && dt__rlist_add(&req, "cpu", vcpus * 100, DT_RL_SET)) rc = oom(x);
  }
  if (rc) {
    dt__rlist_free(&req);
    return rc;
  }
  /* Placement fields have the same names and shapes in a VMI spec as in a pod spec. */
  cJSON *pod = cJSON_CreateObject(), *ps = pod ? cJSON_AddObjectToObject(pod, "spec") : NULL;
  static const char *keep[] = {"nodeSelector", "affinity", "tolerations", "topologySpreadConstraints"};
  bool ok = ps != NULL;
  for (int i = 0; i < 4 && ok; i++) {
    const cJSON *v = get(spec, keep[i]);
    cJSON *d = v ? cJSON_Duplicate(v, 1) : NULL;
    if (v && (!d || !cJSON_AddItemToObject(ps, keep[i], d))) {
      cJSON_Delete(d);
      ok = false;
    }
  }
  if (!ok) {
    cJSON_Delete(pod);
    dt__rlist_free(&req);
    return oom(x);
  }
  snprintf(f, sizeof f, "%s.spec", path);
  rc = podspec(x, pod, f, p);
  cJSON_Delete(pod);
  if (rc) {
    dt__rlist_free(&req);
    return rc;
  }
  dt__rlist_free(&p->requests);
  if (dt__rlist_add(&req, "pods", 1000, DT_RL_SET)) {
    dt__rlist_free(&req);
    return oom(x);
  }
  p->requests = req;
  p->vm_arch = va;
  return 0;
}

static int ann_duration(mctx *x, const cJSON *ann, const char *key, int64_t *out) {
  const char *s = get_str(ann, key);
  if (!s) return 0;
  char f[300];
  snprintf(f, sizeof f, "metadata.annotations.%s", key);
  if (dt__duration_parse(s, out) || *out <= 0) return bad(x, f, "expected a positive duration such as 90s, 5m or 1h");
  return 0;
}

static int vmpool(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (meta(x, o, &ns, &name, true) || check_duplicate(x, ns, name)) return failed(x);
  const cJSON *spec = get(o, "spec"), *md = get(o, "metadata"), *ann = get(md, "annotations");
  if (!cJSON_IsObject(spec)) return bad(x, "spec", "missing or not an object");
  dt_vmpool p = {0};
  p.file = (char *)x->file;
  p.seq = x->m->seq++;
  p.replicas = 1; /* KubeVirt's value for an unset replicas */
  p.max_unavail = 100;
  p.max_unavail_pct = true;
  p.burst = DEFAULT_BURST;
  p.heal_threshold = DEFAULT_HEAL_THRESHOLD;
  const char *uid = get_str(md, "uid");
  if (uid && *uid && !(p.uid = dt__strdup(uid))) return oom(x);
  p.heal_min_failing = DEFAULT_MIN_FAILING;
  p.heal_base = DEFAULT_HEAL_BASE;
  p.heal_factor = DEFAULT_HEAL_FACTOR;
  p.heal_cap = DEFAULT_HEAL_CAP;
  p.update_sel.base = DT_SORT_ASCENDING;
  char tmp[64];
  int rc = 0;
  if (!(p.ns = dt__strdup(ns)) || !(p.name = dt__strdup(name))) goto nomem;
  const cJSON *gen = get(md, "generation");
  if (cJSON_IsNumber(gen)) p.generation = dt__to_i64(gen->valuedouble);
  const cJSON *r = get(spec, "replicas");
  if (r && !cJSON_IsNull(r)) {
    if (!cJSON_IsNumber(r) || r->valuedouble < 0 || r->valuedouble != floor(r->valuedouble) || r->valuedouble > MAX_REPLICAS) {
      rc = bad(x, "spec.replicas", "expected an integer from 0 to %d", MAX_REPLICAS);
      goto fail;
    }
    p.replicas = (int64_t)r->valuedouble;
  }
  const cJSON *paused = get(spec, "paused");
  if (paused && !cJSON_IsNull(paused) && !cJSON_IsBool(paused)) {
    rc = bad(x, "spec.paused", "expected true or false");
    goto fail;
  }
  p.paused = cJSON_IsTrue(paused);
  const cJSON *sel = get(spec, "selector");
  if (!cJSON_IsObject(sel)) {
    rc = bad(x, "spec.selector", "missing; a VirtualMachinePool needs a label selector");
    goto fail;
  }
  if (parse_selector(x, sel, "spec.selector", &p.selector)) goto fail;
  const cJSON *tmpl = get(spec, "virtualMachineTemplate");
  if (!cJSON_IsObject(tmpl)) {
    rc = bad(x, "spec.virtualMachineTemplate", "missing or not an object");
    goto fail;
  }
  /* The selector must select the VMs the template makes (admission rule). */
  dt_kvs tl = {0};
  if (parse_kvs(x, get(get(tmpl, "metadata"), "labels"), "spec.virtualMachineTemplate.metadata.labels", &tl)) {
    dt__kvs_free(&tl);
    goto fail;
  }
  for (size_t i = 0; i < p.selector.expr.n && !rc; i++) {
    const dt_mreq *q = &p.selector.expr.v[i];
    const char *v = NULL;
    for (size_t k = 0; k < tl.n; k++)
      if (!strcmp(tl.v[k].key, q->key)) v = tl.v[k].val;
    bool in = false;
    for (size_t k = 0; v && k < q->n; k++) in |= !strcmp(q->vals[k], v);
    bool ok = q->op == DT_OP_IN ? in : q->op == DT_OP_NOTIN ? !in : q->op == DT_OP_EXISTS ? v != NULL : v == NULL;
    if (!ok)
      rc = bad(x, "spec.selector", "does not match spec.virtualMachineTemplate.metadata.labels (on %s)", q->key);
  }
  dt__kvs_free(&tl);
  if (rc) goto fail;
  const cJSON *vmspec = get(tmpl, "spec");
  if (!cJSON_IsObject(vmspec)) {
    rc = bad(x, "spec.virtualMachineTemplate.spec", "missing or not an object");
    goto fail;
  }
  const cJSON *vmi = get(vmspec, "template");
  if (!cJSON_IsObject(vmi)) {
    rc = bad(x, "spec.virtualMachineTemplate.spec.template", "missing or not an object");
    goto fail;
  }
  p.runs = vmi_runs(vmspec);
  if (vmi_podspec(x, vmi, "spec.virtualMachineTemplate.spec.template", &p.launcher) ||
      parse_kvs(x, get(get(vmi, "metadata"), "labels"), "spec.virtualMachineTemplate.spec.template.metadata.labels",
                &p.launcher.labels))
    goto fail;
  const cJSON *dvt = get(vmspec, "dataVolumeTemplates");
  if (dvt && !cJSON_IsNull(dvt)) {
    if (!cJSON_IsArray(dvt)) {
      rc = bad(x, "spec.virtualMachineTemplate.spec.dataVolumeTemplates", "expected a list");
      goto fail;
    }
    size_t n = (size_t)cJSON_GetArraySize(dvt), i = 0;
    if (!(p.dv = dt__calloc(n ? n : 1, sizeof *p.dv))) goto nomem;
    for (const cJSON *d = dvt->child; d; d = d->next, i++) {
      const char *dn = get_str(get(d, "metadata"), "name");
      if (!dn || !*dn) {
        char f[200];
        snprintf(f, sizeof f, "spec.virtualMachineTemplate.spec.dataVolumeTemplates[%zu].metadata.name", i);
        rc = bad(x, f, "missing");
        goto fail;
      }
      if (!(p.dv[p.ndv++] = dt__strdup(dn))) goto nomem;
    }
  }
  const cJSON *ng = get(spec, "nameGeneration");
  if (ng && !cJSON_IsNull(ng)) {
    if (!cJSON_IsObject(ng)) {
      rc = bad(x, "spec.nameGeneration", "expected an object");
      goto fail;
    }
    static const struct {
      const char *key;
      unsigned bit;
    } ngf[] = {{"appendIndexToConfigMapRefs", DT_NAMEGEN_CONFIGMAPS}, {"appendIndexToSecretRefs", DT_NAMEGEN_SECRETS}};
    for (const cJSON *c = ng->child; c; c = c->next) {
      char f[300];
      snprintf(f, sizeof f, "spec.nameGeneration.%s", c->string);
      int k = !strcmp(c->string, ngf[0].key) ? 0 : !strcmp(c->string, ngf[1].key) ? 1 : -1;
      if (k < 0) {
        rc = bad(x, f, "unknown field (expected appendIndexToConfigMapRefs or appendIndexToSecretRefs)");
        goto fail;
      }
      if (!cJSON_IsNull(c) && !cJSON_IsBool(c)) {
        rc = bad(x, f, "expected true or false");
        goto fail;
      }
      if (cJSON_IsTrue(c)) p.name_gen |= ngf[k].bit;
    }
  }
  p.hash = canon_hash(x, tmpl, &rc);
  if (p.name_gen) { /* the VMs it makes differ with it: part of what makes a VM current */
    char hx[40];
    snprintf(hx, sizeof hx, "%016llx/%u", (unsigned long long)p.hash, p.name_gen);
    p.hash = dt__hash64(hx, strlen(hx));
  }
  p.vmi_hash = canon_hash(x, vmi, &rc);
  p.dvt_hash = canon_hash(x, dvt && !cJSON_IsNull(dvt) ? dvt : NULL, &rc);
  if (rc || !(p.tmpl = cJSON_Duplicate(tmpl, 1))) goto nomem;

  const cJSON *mu = get(spec, "maxUnavailable");
  if (mu && !cJSON_IsNull(mu)) {
    if (cJSON_IsNumber(mu)) {
      if (mu->valuedouble < 1 || mu->valuedouble != floor(mu->valuedouble) || mu->valuedouble > MAX_REPLICAS) {
        rc = bad(x, "spec.maxUnavailable", "an integer must be greater than 0");
        goto fail;
      }
      p.max_unavail = (int64_t)mu->valuedouble;
      p.max_unavail_pct = false;
    } else {
      const char *s = cJSON_IsString(mu) ? mu->valuestring : "";
      size_t len = strlen(s);
      char *end = NULL;
      long v = len > 1 && s[len - 1] == '%' ? strtol(s, &end, 10) : -1;
      if (!end || end != s + len - 1 || v < 1 || v > 100) {
        rc = bad(x, "spec.maxUnavailable", "expected an integer > 0 or a percentage from 1%% to 100%%, got \"%s\"", s);
        goto fail;
      }
      p.max_unavail = v;
    }
  }
  if (strategy(x, get(spec, "scaleInStrategy"), "spec.scaleInStrategy", &p.scale_in, &p.preserve, &p.scale_sel) ||
      strategy(x, get(spec, "updateStrategy"), "spec.updateStrategy", &p.update, NULL, &p.update_sel))
    goto fail;
  const cJSON *ah = get(spec, "autohealing");
  if (ah && !cJSON_IsNull(ah)) {
    if (!cJSON_IsObject(ah)) {
      rc = bad(x, "spec.autohealing", "expected an object");
      goto fail;
    }
    p.autoheal = true;
    const cJSON *t = get(ah, "startUpFailureThreshold");
    if (t && !cJSON_IsNull(t)) {
      if (!cJSON_IsNumber(t) || t->valuedouble < 1 || t->valuedouble != floor(t->valuedouble) || t->valuedouble > 1e6) {
        rc = bad(x, "spec.autohealing.startUpFailureThreshold", "expected an integer of at least 1");
        goto fail;
      }
      p.heal_threshold = (int64_t)t->valuedouble;
    }
    const cJSON *d = get(ah, "minFailingToStartDuration");
    if (d && !cJSON_IsNull(d)) {
      const char *s = dt__scalar(d, tmp, sizeof tmp);
      if (!cJSON_IsString(d) || dt__duration_parse(s, &p.heal_min_failing)) {
        rc = bad(x, "spec.autohealing.minFailingToStartDuration", "expected a duration such as 5m or 300s");
        goto fail;
      }
    }
  }
  const char *burst = get_str(ann, "dovetail.dev/burst-replicas");
  if (burst) {
    char *end;
    long v = strtol(burst, &end, 10);
    if (*end || end == burst || v < 1 || v > MAX_REPLICAS) {
      rc = bad(x, "metadata.annotations.dovetail.dev/burst-replicas", "expected an integer of at least 1");
      goto fail;
    }
    p.burst = v;
  }
  if (ann_duration(x, ann, "dovetail.dev/heal-backoff-base", &p.heal_base) ||
      ann_duration(x, ann, "dovetail.dev/heal-backoff-cap", &p.heal_cap))
    goto fail;
  const char *fac = get_str(ann, "dovetail.dev/heal-backoff-factor");
  if (fac) {
    char *end;
    double v = strtod(fac, &end);
    if (*end || end == fac || !(v >= 1 && v <= 100)) {
      rc = bad(x, "metadata.annotations.dovetail.dev/heal-backoff-factor", "expected a number from 1 to 100");
      goto fail;
    }
    p.heal_factor = v;
  }
  if (!(p.launcher.ns = dt__strdup(ns)) || !(p.launcher.name = dt__strdup(name))) goto nomem;
  p.launcher.file = (char *)x->file;
  if (dt__vec_push(&x->m->vmpools, p)) goto nomem;
  return 0;
nomem:
  oom(x);
fail:
  vmpool_free(&p);
  return failed(x);
}

/* Strip "-<idx>" from names VMs got by indexing (their own data volumes), so
** a VM's template compares with the pool's unindexed one. */
static void deindex(cJSON *o, const char *key, const char *suffix, char **dv, size_t ndv) {
  cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsString(v)) return;
  size_t len = strlen(v->valuestring), sl = strlen(suffix);
  if (len <= sl || strcmp(v->valuestring + len - sl, suffix)) return;
  for (size_t i = 0; i < ndv; i++)
    if (!strcmp(dv[i], v->valuestring)) {
      v->valuestring[len - sl] = 0;
      return;
    }
}

/* The references spec.nameGeneration indexes, as KubeVirt's pool controller
** (indexVMSpec): a ConfigMap volume's name; a Secret volume's secretName
** and cloud-init's userData/networkData secret references. For each in the
** kinds of bits: the name is de-indexed when it ends in suffix, else marked
** so that it matches no pool template. Returns whether the volume has any. */
static bool ref_fix(cJSON *o, const char *key, const char *suffix, bool apply) {
  cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsString(v)) return false;
  if (!apply) return true;
  size_t len = strlen(v->valuestring), sl = strlen(suffix);
  if (len > sl && !strcmp(v->valuestring + len - sl, suffix)) {
    v->valuestring[len - sl] = 0;
  } else {
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s\x01", v->valuestring);
    cJSON_SetValuestring(v, tmp);
  }
  return true;
}

static bool indexed_refs(cJSON *vol, unsigned bits, const char *suffix, bool apply) {
  bool any = false;
  cJSON *cm = cJSON_GetObjectItemCaseSensitive(vol, "configMap");
  if (cm) any |= ref_fix(cm, "name", suffix, apply && (bits & DT_NAMEGEN_CONFIGMAPS));
  cJSON *sec = cJSON_GetObjectItemCaseSensitive(vol, "secret");
  if (sec) any |= ref_fix(sec, "secretName", suffix, apply && (bits & DT_NAMEGEN_SECRETS));
  static const char *const ci[] = {"cloudInitNoCloud", "cloudInitConfigDrive"};
  static const char *const refs[] = {"secretRef", "networkDataSecretRef"};
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 2; k++)
      any |= ref_fix(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(vol, ci[i]), refs[k]), "name",
                     suffix, apply && (bits & DT_NAMEGEN_SECRETS));
  return any;
}

static int vm_hashes(mctx *x, const cJSON *vmspec, dt_vm *v) {
  int rc = 0;
  cJSON *vmi = cJSON_Duplicate(get(vmspec, "template"), 1);
  cJSON *dvt = cJSON_Duplicate(get(vmspec, "dataVolumeTemplates"), 1);
  char suffix[32];
  snprintf(suffix, sizeof suffix, "-%lld", (long long)v->index);
  char *names[64];
  size_t nn = 0;
  for (cJSON *d = cJSON_IsArray(dvt) ? dvt->child : NULL; d && nn < 64; d = d->next) {
    cJSON *mdn = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d, "metadata"), "name");
    if (cJSON_IsString(mdn)) names[nn++] = mdn->valuestring;
  }
  cJSON *vols = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(vmi, "spec"), "volumes");
  if (v->index >= 0) {
    for (cJSON *vol = cJSON_IsArray(vols) ? vols->child : NULL; vol; vol = vol->next) {
      deindex(cJSON_GetObjectItemCaseSensitive(vol, "dataVolume"), "name", suffix, names, nn);
      deindex(cJSON_GetObjectItemCaseSensitive(vol, "persistentVolumeClaim"), "claimName", suffix, names, nn);
    }
    for (size_t i = 0; i < nn; i++) {
      size_t len = strlen(names[i]), sl = strlen(suffix);
      if (len > sl && !strcmp(names[i] + len - sl, suffix)) names[i][len - sl] = 0;
    }
  }
  v->vmi_hash = canon_hash(x, vmi, &rc);
  v->dvt_hash = canon_hash(x, dvt, &rc);
  /* As the template would be under each spec.nameGeneration setting. */
  bool refs = false;
  for (cJSON *vol = cJSON_IsArray(vols) && v->index >= 0 ? vols->child : NULL; vol && !refs; vol = vol->next)
    refs = indexed_refs(vol, 0, suffix, false);
  for (unsigned bits = 0; bits < 4; bits++) {
    v->vmi_hash_ng[bits] = v->vmi_hash;
    if (!bits || !refs) continue;
    cJSON *c = cJSON_Duplicate(vmi, 1);
    if (!c) {
      rc = oom(x);
      break;
    }
    cJSON *cv = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, "spec"), "volumes");
    for (cJSON *vol = cv->child; vol; vol = vol->next) indexed_refs(vol, bits, suffix, true);
    v->vmi_hash_ng[bits] = canon_hash(x, c, &rc);
    cJSON_Delete(c);
  }
  cJSON_Delete(vmi);
  cJSON_Delete(dvt);
  return rc;
}

static bool one_of(const char *s, const char *const *set) {
  for (; s && *set; set++)
    if (!strcmp(s, *set)) return true;
  return false;
}

static int vm(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (meta(x, o, &ns, &name, true) || check_duplicate(x, ns, name)) return failed(x);
  const cJSON *md = get(o, "metadata"), *spec = get(o, "spec"), *st = get(o, "status");
  const cJSON *ann = get(md, "annotations");
  dt_vm v = {0};
  v.file = (char *)x->file;
  v.seq = x->m->seq++;
  v.created = created_at(o);
  v.index = -1;
  if (!(v.ns = dt__strdup(ns)) || !(v.name = dt__strdup(name))) goto nomem;
  const char *dash = strrchr(name, '-');
  if (dash && dash[1]) {
    char *end;
    long long i = strtoll(dash + 1, &end, 10);
    if (!*end && dash[1] >= '0' && dash[1] <= '9' && i >= 0) v.index = i;
  }
  const char *del = get_str(md, "deletionTimestamp");
  if (del && dt_time_parse(del, &v.deleting, NULL)) {
    bad(x, "metadata.deletionTimestamp", "expected an RFC 3339 time");
    goto fail;
  }
  if (del && !v.deleting) v.deleting = 1;
  const cJSON *owners = get(md, "ownerReferences");
  for (const cJSON *c = cJSON_IsArray(owners) ? owners->child : NULL; c; c = c->next) {
    const char *k = get_str(c, "kind"), *n = get_str(c, "name");
    if (k && n && !strcmp(k, "VirtualMachinePool") && !cJSON_IsFalse(get(c, "controller")) && !v.owner)
      if (!(v.owner = dt__strdup(n))) goto nomem;
  }
  if (parse_kvs(x, get(md, "labels"), "metadata.labels", &v.labels)) goto fail;
  v.nmeta_labels = v.labels.n;
  dt_kvs tl = {0};
  const cJSON *vmi = get(spec, "template");
  if (parse_kvs(x, get(get(vmi, "metadata"), "labels"), "spec.template.metadata.labels", &tl)) {
    dt__kvs_free(&tl);
    goto fail;
  }
  if (tl.n) {
    dt_kv *nv = dt__realloc(v.labels.v, (v.labels.n + tl.n) * sizeof *nv);
    if (!nv) {
      dt__kvs_free(&tl);
      goto nomem;
    }
    v.labels.v = nv;
    memcpy(v.labels.v + v.labels.n, tl.v, tl.n * sizeof *tl.v);
    v.labels.n += tl.n;
    dt__free(tl.v);
  }
  if (parse_kvs(x, get(get(vmi, "spec"), "nodeSelector"), "spec.template.spec.nodeSelector", &v.node_selector)) goto fail;
  const char *rev = NULL;
  for (size_t i = 0; i < v.nmeta_labels; i++)
    if (!strcmp(v.labels.v[i].key, "kubevirt.io/vm-pool-revision-name")) rev = v.labels.v[i].val;
  const char *th = get_str(ann, "dovetail.dev/template-hash");
  if ((rev && !(v.revision = dt__strdup(rev))) || (th && !(v.tmpl_hash = dt__strdup(th)))) goto nomem;
  const char *ha = get_str(ann, "dovetail.dev/heal-attempt"), *hat = get_str(ann, "dovetail.dev/healed-at");
  if (ha) {
    char *end;
    long long a = strtoll(ha, &end, 10);
    if (*end || end == ha || a < 0 || a > 1000000) {
      bad(x, "metadata.annotations.dovetail.dev/heal-attempt", "expected a non-negative integer");
      goto fail;
    }
    v.heal_attempt = a;
  }
  if (hat && dt_time_parse(hat, &v.healed_at, NULL)) {
    bad(x, "metadata.annotations.dovetail.dev/healed-at", "expected an RFC 3339 time");
    goto fail;
  }
  bool runs = vmi_runs(spec);
  v.has_status = cJSON_IsObject(st);
  const char *ps = get_str(st, "printableStatus");
  if (ps && !(v.status = dt__strdup(ps))) goto nomem;
  v.halted = !runs || (ps && !strcmp(ps, "Stopped"));
  v.ready = cJSON_IsTrue(get(st, "ready"));
  const cJSON *fc = get(get(st, "startFailure"), "consecutiveFailCount");
  if (fc && !cJSON_IsNull(fc)) {
    if (!cJSON_IsNumber(fc) || fc->valuedouble < 0) {
      bad(x, "status.startFailure.consecutiveFailCount", "expected a non-negative integer");
      goto fail;
    }
    v.fail_count = dt__to_i64(fc->valuedouble);
  }
  const cJSON *conds = get(st, "conditions");
  for (const cJSON *c = cJSON_IsArray(conds) ? conds->child : NULL; c; c = c->next) {
    const char *t = get_str(c, "type"), *s = get_str(c, "status");
    if (!t || strcmp(t, "Ready") || !s) continue;
    if (!strcmp(s, "True")) v.ready = true;
    const char *ts = get_str(c, "lastProbeTime");
    if (!ts || !*ts) ts = get_str(c, "lastTransitionTime");
    if (strcmp(s, "True") && ts) dt_time_parse(ts, &v.not_ready_since, NULL);
  }
  if (vm_hashes(x, spec, &v)) goto fail;
  /* A VM that should run but has no node yet needs capacity: its virt-launcher
  ** pod joins the pending pods. */
  static const char *const waiting[] = {"Provisioning", "Pending", "Unschedulable", "ErrorUnschedulable",
                                        "WaitingForVolumeBinding", NULL};
  if (runs && !v.deleting && one_of(ps, waiting) && cJSON_IsObject(vmi)) {
    dt_podspec p = {0};
    char pn[600];
    snprintf(pn, sizeof pn, "virt-launcher-%s", name);
    p.count = 1;
    p.file = (char *)x->file;
    p.seq = v.seq;
    p.created = v.created;
    if (!(p.ns = dt__strdup(ns)) || !(p.name = dt__strdup(pn))) {
      pod_free(&p);
      goto nomem;
    }
    if (vmi_podspec(x, vmi, "spec.template", &p) || parse_kvs(x, get(get(vmi, "metadata"), "labels"), "spec.template.metadata.labels", &p.labels)) {
      pod_free(&p);
      goto fail;
    }
    if (dt__vec_push(&x->m->pods, p)) {
      pod_free(&p);
      goto nomem;
    }
  }
  if (dt__vec_push(&x->m->vms, v)) goto nomem;
  return 0;
nomem:
  oom(x);
fail:
  vm_free(&v);
  return failed(x);
}


/* KubeVirt's own configuration: the architecture VMs without
** spec.architecture get (status.defaultArchitecture, the one in force, else
** spec.configuration.architectureConfiguration.defaultArchitecture; KubeVirt
** falls back to its operator's architecture, taken here as amd64). */
static int kubevirt(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (meta(x, o, &ns, &name, true) || check_duplicate(x, ns, name)) return DT_EINVAL;
  const char *field = "status.defaultArchitecture";
  const cJSON *v = get(get(o, "status"), "defaultArchitecture");
  if (!cJSON_IsString(v) || !*v->valuestring) {
    field = "spec.configuration.architectureConfiguration.defaultArchitecture";
    v = get(get(get(get(o, "spec"), "configuration"), "architectureConfiguration"), "defaultArchitecture");
  }
  if (!v || cJSON_IsNull(v) || (cJSON_IsString(v) && !*v->valuestring)) return 0;
  const char *a = vm_arch(cJSON_GetStringValue(v));
  if (!a)
    return bad(x, field, "unsupported architecture %s (KubeVirt runs amd64, arm64 and s390x)",
               cJSON_IsString(v) ? v->valuestring : "(not a string)");
  if (x->m->vm_default_arch && strcmp(x->m->vm_default_arch, a)) {
    dt__buf_printf(&x->m->notes, "%s: KubeVirt %s/%s: %s %s differs from the %s that %s gives; the first stays\n",
                   x->file, ns, name, field, a, x->m->vm_default_arch, x->m->vm_default_arch_file);
    return 0;
  }
  if (!x->m->vm_default_arch) {
    x->m->vm_default_arch = a;
    x->m->vm_default_arch_file = x->file;
  }
  return 0;
}

static int topo_push(mctx *x, dt_topo_obj *t) {
  if (dt__vec_push(&x->m->topo, *t)) {
    topo_free(t);
    return oom(x);
  }
  return 0;
}

static int volume(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (meta(x, o, &ns, &name, true) || check_duplicate(x, ns, name)) return failed(x);
  char key[600];
  snprintf(key, sizeof key, "%s/%s", ns, name);
  char *s = dt__strdup(key);
  if (!s || dt__vec_push(&x->m->volumes, s)) {
    dt__free(s);
    return oom(x);
  }
  if (strcmp(x->kind, "PersistentVolumeClaim")) return 0;
  const cJSON *spec = get(o, "spec");
  const char *vn = get_str(spec, "volumeName"), *sc = get_str(spec, "storageClassName");
  dt_topo_obj t = {"PVC", dt__strdup(key), vn && *vn ? dt__strdup(vn) : NULL, sc && *sc ? dt__strdup(sc) : NULL, false,
                   {0}};
  if (!t.key || (vn && *vn && !t.volume) || (sc && *sc && !t.storage_class)) {
    topo_free(&t);
    return oom(x);
  }
  return topo_push(x, &t);
}

/* A PersistentVolume: where it can be attached (its required node affinity). */
static int persistent_volume(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (meta(x, o, &ns, &name, false) || check_duplicate(x, NULL, name)) return failed(x);
  dt_topo_obj t = {"PV", dt__strdup(name), NULL, NULL, false, {0}};
  if (!t.key) return oom(x);
  const cJSON *terms = get(get(get(get(o, "spec"), "nodeAffinity"), "required"), "nodeSelectorTerms");
  if (cJSON_GetArraySize(terms) > 1)
    dt__buf_printf(&x->m->notes, "%s: %s: spec.nodeAffinity has %d terms; pods follow the first\n", x->file, x->obj,
                   cJSON_GetArraySize(terms));
  if (terms && terms->child &&
      parse_mreqs(x, get(terms->child, "matchExpressions"),
                  "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions", &t.term, false)) {
    topo_free(&t);
    return failed(x);
  }
  return topo_push(x, &t);
}

/* A StorageClass: WaitForFirstConsumer and its allowedTopologies (each
** label's values; one term, as Karpenter reads the first). */
static int storage_class(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (meta(x, o, &ns, &name, false) || check_duplicate(x, NULL, name)) return failed(x);
  const char *mode = get_str(o, "volumeBindingMode");
  dt_topo_obj t = {"SC", dt__strdup(name), NULL, NULL, mode && !strcmp(mode, "WaitForFirstConsumer"), {0}};
  if (!t.key) return oom(x);
  const cJSON *at = get(o, "allowedTopologies");
  if (at && at->child) {
    cJSON *exprs = cJSON_CreateArray(), *e;
    cJSON_ArrayForEach(e, get(at->child, "matchLabelExpressions")) {
      cJSON *r = cJSON_CreateObject();
      cJSON_AddStringToObject(r, "key", get_str(e, "key") ? get_str(e, "key") : "");
      cJSON_AddStringToObject(r, "operator", "In");
      cJSON_AddItemToObject(r, "values", cJSON_Duplicate(get(e, "values"), true));
      cJSON_AddItemToArray(exprs, r);
    }
    int rc = parse_mreqs(x, exprs, "allowedTopologies[0].matchLabelExpressions", &t.term, false);
    cJSON_Delete(exprs);
    if (rc) {
      topo_free(&t);
      return failed(x);
    }
  }
  return topo_push(x, &t);
}

static void pdb_free(dt_pdb *p) {
  dt__free(p->ns);
  dt__free(p->name);
  selector_free(&p->sel);
}

static int int_or_pct(mctx *x, const cJSON *v, const char *field, int64_t *out, bool *pct) {
  if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble == floor(v->valuedouble)) {
    *out = (int64_t)v->valuedouble;
    return 0;
  }
  const char *s = cJSON_IsString(v) ? v->valuestring : "";
  size_t len = strlen(s);
  char *end;
  long long n = strtoll(s, &end, 10);
  if (len > 1 && s[len - 1] == '%' && end == s + len - 1 && n >= 0 && n <= 100) {
    *out = n;
    *pct = true;
    return 0;
  }
  return bad(x, field, "expected a non-negative integer or a percentage");
}

static int pdb(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (meta(x, o, &ns, &name, true) || check_duplicate(x, ns, name)) return failed(x);
  const cJSON *spec = get(o, "spec");
  dt_pdb p = {0};
  p.file = (char *)x->file;
  p.allowed = -1;
  if (!(p.ns = dt__strdup(ns)) || !(p.name = dt__strdup(name))) goto nomem;
  if (parse_selector(x, get(spec, "selector"), "spec.selector", &p.sel)) goto fail;
  const cJSON *mn = get(spec, "minAvailable"), *mx = get(spec, "maxUnavailable");
  if (mn && !cJSON_IsNull(mn) && mx && !cJSON_IsNull(mx)) {
    bad(x, "spec", "minAvailable and maxUnavailable are exclusive");
    goto fail;
  }
  if (mn && !cJSON_IsNull(mn)) {
    p.has_min = true;
    if (int_or_pct(x, mn, "spec.minAvailable", &p.min_avail, &p.min_pct)) goto fail;
  }
  if (mx && !cJSON_IsNull(mx)) {
    p.has_max = true;
    if (int_or_pct(x, mx, "spec.maxUnavailable", &p.max_unavail, &p.max_pct)) goto fail;
  }
  const cJSON *da = get(get(o, "status"), "disruptionsAllowed");
  if (cJSON_IsNumber(da)) p.allowed = dt__to_i64(da->valuedouble);
  if (dt__vec_push(&x->m->pdbs, p)) goto nomem;
  return 0;
nomem:
  oom(x);
fail:
  pdb_free(&p);
  return failed(x);
}

static int object(mctx *x, const cJSON *o, size_t docno) {
  if (!cJSON_IsObject(o)) {
    if (cJSON_IsNull(o)) return 0; /* empty document */
    return dt__err(x->err, DT_EINVAL, "%s: document %zu: expected a Kubernetes object (a map)",
                   x->file, docno);
  }
  const char *kind = get_str(o, "kind");
  const char *api = get_str(o, "apiVersion");
  if (!kind) {
    const char *nm = get_str(get(o, "metadata"), "name");
    return dt__err(x->err, DT_EINVAL, "%s: document %zu%s%s: kind: missing", x->file, docno,
                   nm ? " " : "", nm ? nm : "");
  }
  x->kind = kind;
  snprintf(x->obj, sizeof x->obj, "%s", kind);
  size_t klen = strlen(kind);
  if (klen >= 4 && strcmp(kind + klen - 4, "List") == 0 && get(o, "items")) {
    const cJSON *items = get(o, "items");
    if (!cJSON_IsArray(items)) return bad(x, "items", "expected a list");
    for (const cJSON *it = items->child; it; it = it->next)
      if (object(x, it, docno)) return failed(x);
    return 0;
  }
  if (!api) return bad(x, "apiVersion", "missing");
  if (!strcmp(kind, "NodePool") && !strncmp(api, "karpenter.sh/", 13)) return nodepool(x, o);
  if (!strcmp(kind, "NodeClaim") && !strncmp(api, "karpenter.sh/", 13)) return node(x, o, true);
  if (!strcmp(kind, "Pod") && !strcmp(api, "v1")) return pod(x, o);
  if (!strcmp(kind, "Node") && !strcmp(api, "v1")) return node(x, o, false);
  if ((!strcmp(kind, "Deployment") || !strcmp(kind, "ReplicaSet") || !strcmp(kind, "StatefulSet")) &&
      !strncmp(api, "apps/", 5))
    return workload(x, o, false);
  if (!strcmp(kind, "DaemonSet") && !strncmp(api, "apps/", 5)) return workload(x, o, true);
  if (!strcmp(kind, "RuntimeClass") && !strncmp(api, "node.k8s.io/", 12)) return runtime_class(x, o);
  if (!strcmp(kind, "UnavailableOffering") && !strncmp(api, "dovetail.dev/", 13)) return unavailable(x, o);
  if (!strcmp(kind, "PodDisruptionBudget") && !strncmp(api, "policy/", 7)) return pdb(x, o);
  if (!strcmp(kind, "VirtualMachinePool") && !strncmp(api, "pool.kubevirt.io/", 17)) return vmpool(x, o);
  if (!strcmp(kind, "VirtualMachine") && !strncmp(api, "kubevirt.io/", 12)) return vm(x, o);
  if (!strcmp(kind, "KubeVirt") && !strncmp(api, "kubevirt.io/", 12)) return kubevirt(x, o);
  if (!strcmp(kind, "PersistentVolume") && !strcmp(api, "v1")) return persistent_volume(x, o);
  if (!strcmp(kind, "StorageClass") && !strncmp(api, "storage.k8s.io/", 15)) return storage_class(x, o);
  if ((!strcmp(kind, "PersistentVolumeClaim") && !strcmp(api, "v1")) ||
      (!strcmp(kind, "DataVolume") && !strncmp(api, "cdi.kubevirt.io/", 16)))
    return volume(x, o);
  const char *nm = get_str(get(o, "metadata"), "name");
  dt__buf_printf(&x->m->notes, "%s: %s %s (%s): not used by plan, skipped\n", x->file, kind,
                 nm ? nm : "(unnamed)", api);
  return 0;
}

int dt_manifests_add_buffer(dt_manifests *m, const char *name, const char *buf, size_t len,
                            dt_error *err) {
  cJSON *docs = NULL;
  int rc = dt__doc_parse(name, buf, len, &docs, err);
  if (rc) return rc;
  char *file = dt__strdup(name);
  if (!file || dt__vec_push(&m->files, file)) {
    dt__free(file);
    cJSON_Delete(docs);
    return dt__err(err, DT_ENOMEM, "out of memory");
  }
  /* Remember where we were, so a bad file adds nothing. */
  size_t np = m->pools.n, npod = m->pods.n, nn = m->nodes.n, ns = m->seen_file.n, nl = m->notes.len;
  size_t nds = m->daemonsets.n, nrc = m->runtime_classes.n, nmk = m->marks.n;
  size_t nvp = m->vmpools.n, nvm = m->vms.n, nvol = m->volumes.n, npdb = m->pdbs.n, ntopo = m->topo.n;
  int64_t npods = m->npods;
  const char *varch = m->vm_default_arch, *varch_file = m->vm_default_arch_file;
  mctx x = {m, file, NULL, {0}, err, 0};
  if (err) err->code = 0;
  size_t docno = 1;
  rc = 0;
  for (const cJSON *d = docs->child; d && !rc; d = d->next, docno++) rc = object(&x, d, docno);
  cJSON_Delete(docs);
  if (rc) {
    m->npods = npods;
    m->vm_default_arch = varch;
    m->vm_default_arch_file = varch_file;
    while (m->pools.n > np) pool_free(&m->pools.v[--m->pools.n]);
    while (m->pods.n > npod) pod_free(&m->pods.v[--m->pods.n]);
    while (m->nodes.n > nn) node_free(&m->nodes.v[--m->nodes.n]);
    while (m->daemonsets.n > nds) pod_free(&m->daemonsets.v[--m->daemonsets.n]);
    while (m->pdbs.n > npdb) pdb_free(&m->pdbs.v[--m->pdbs.n]);
    while (m->vmpools.n > nvp) vmpool_free(&m->vmpools.v[--m->vmpools.n]);
    while (m->vms.n > nvm) vm_free(&m->vms.v[--m->vms.n]);
    while (m->volumes.n > nvol) dt__free(m->volumes.v[--m->volumes.n]);
    while (m->topo.n > ntopo) topo_free(&m->topo.v[--m->topo.n]);
    while (m->marks.n > nmk) {
      dt_mark *mk = &m->marks.v[--m->marks.n];
      dt__free(mk->instance_type);
      dt__free(mk->zone);
      dt__free(mk->name);
    }
    while (m->runtime_classes.n > nrc) {
      dt_runtimeclass *r = &m->runtime_classes.v[--m->runtime_classes.n];
      dt__free(r->name);
      dt__rlist_free(&r->overhead);
    }
    for (size_t i = 0; i < m->seen_file.n; i++)
      if (i >= ns || m->seen_file.v[i] == file) m->seen_file.v[i] = NULL;
    m->notes.len = nl;
    if (m->notes.p) m->notes.p[nl] = 0;
    if (x.code == DT_ENOMEM || (err && err->code == DT_ENOMEM)) rc = DT_ENOMEM;
    if (rc == DT_ENOMEM && err && !err->msg[0]) oom(&x);
    return rc;
  }
  return 0;
}

int dt_manifests_add_file(dt_manifests *m, const char *path, dt_error *err) {
  char *buf;
  size_t len;
  int rc = dt__read_file(path, &buf, &len, err);
  if (rc) return rc;
  rc = dt_manifests_add_buffer(m, strcmp(path, "-") == 0 ? "<stdin>" : path, buf, len, err);
  dt__free(buf);
  return rc;
}
