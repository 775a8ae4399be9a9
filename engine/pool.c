/*
** pool.c: the VirtualMachinePool controller. For each pool it decides, in
** KubeVirt's reconcile order, which failing VMs to heal, which VMs the pool
** releases, how many VMs to create (names with gap filling) or delete (by
** the selection policy), and which outdated VMs to update, under
** maxUnavailable and the burst limit.
**
** Where KubeVirt's controller falls short of its own design this follows the
** design: an ordered list of selectors with a base policy behind it (never a
** filter that runs dry), an opportunistic scale-in that deletes halted VMs,
** and exponential backoff between autohealing attempts. README "VM pools"
** lists every difference.
**
** Pure: the clock and the seed come in, nothing else is read.
*/
#include "model.h"

#include "hooks.h"
#include "result.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct pvm {
  const dt_vm *v;
  bool vmi_stale;      /* a current VM whose VMI is of an older revision (vmi_outdated) */
  const char *vmi_rev; /* ... that revision; NULL: the VMI carries no revision label */
  bool vmi_dv;         /* ... and the revisions' data volume templates differ */
  const char *why;     /* ... and how that is known */
  int tier;     /* first ordered-policy entry the VM matches; n when none */
  int base;     /* the base policy ordering it */
  int calm;     /* Random: 0 halted, 1 not ready, 2 running and ready */
  uint64_t rnd; /* Random: the seeded key */
} pvm;

/* ------------------------------------------------------------ matching */

/* A selection entry against a VM, as KubeVirt's filterVMsBasedOnSelectors:
** its label selector against the VM template's labels only (those after
** the VM's own metadata labels in v->labels). */
static bool entry_match(const dt_selentry *e, const dt_vm *v) {
  if (e->labels.present &&
      !dt__selector_match(&e->labels, v->labels.v + v->nmeta_labels, v->labels.n - v->nmeta_labels))
    return false;
  for (size_t i = 0; i < e->node.n; i++)
    if (!dt__mreq_match(&e->node.v[i], v->node_selector.v, v->node_selector.n)) return false;
  return true;
}

/* ------------------------------------------------------------ ordering */

static uint64_t mix(uint64_t x) { /* splitmix64 finaliser */
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static int cmp_i64(int64_t a, int64_t b) { return a < b ? -1 : a > b; }

static int pvm_cmp(const void *pa, const void *pb) {
  const pvm *a = pa, *b = pb;
  if (a->tier != b->tier) return a->tier < b->tier ? -1 : 1;
  int c = 0;
  switch (a->base) {
  case DT_SORT_RANDOM:
    c = a->calm != b->calm ? (a->calm < b->calm ? -1 : 1) : (a->rnd < b->rnd ? -1 : a->rnd > b->rnd);
    break;
  case DT_SORT_OLDEST: c = cmp_i64(a->v->created, b->v->created); break;
  case DT_SORT_NEWEST: c = cmp_i64(b->v->created, a->v->created); break;
  case DT_SORT_DESCENDING: c = cmp_i64(b->v->index, a->v->index); break;
  default: break; /* AscendingOrder: the tie-break below */
  }
  if (c) return c;
  if ((c = cmp_i64(a->v->index, b->v->index))) return c;
  return strcmp(a->v->name, b->v->name);
}

/* Order VMs by the selection policy: the first entry each matches, then the
** base policy; ties by index, then name. */
static void order_vms(pvm *c, size_t n, const dt_selpolicy *sp, uint64_t seed) {
  for (size_t i = 0; i < n; i++) {
    const dt_vm *v = c[i].v;
    c[i].tier = (int)sp->n;
    for (size_t k = 0; k < sp->n; k++)
      if (entry_match(&sp->v[k], v)) {
        c[i].tier = (int)k;
        break;
      }
    c[i].base = sp->base;
    c[i].calm = v->halted ? 0 : !v->ready ? 1 : 2;
    c[i].rnd = mix(seed ^ dt__hash64(v->name, strlen(v->name)));
  }
  qsort(c, n, sizeof *c, pvm_cmp);
}

static void why_selected(const dt_selpolicy *sp, const pvm *c, char *out, size_t n) {
  if (c->tier < (int)sp->n) {
    if (sp->selectors_first && c->tier == 0)
      snprintf(out, n, "matches selectionPolicy.selectors");
    else
      snprintf(out, n, "matches selectionPolicy.orderedPolicies[%d]", c->tier - (sp->selectors_first ? 1 : 0));
    return;
  }
  char t[40];
  switch (sp->base) {
  case DT_SORT_OLDEST:
  case DT_SORT_NEWEST:
    dt__fmt_time(c->v->created, t, sizeof t);
    snprintf(out, n, "%s (created %s)", sp->base == DT_SORT_OLDEST ? "oldest" : "newest", t);
    break;
  case DT_SORT_RANDOM:
    snprintf(out, n, "base policy Random, %s",
             c->calm == 0   ? "halted first"
             : c->calm == 1 ? "not ready first"
                            : "seeded");
    break;
  default: snprintf(out, n, "base policy %s (index %lld)", dt__sort_names[sp->base], (long long)c->v->index);
  }
}

/* ------------------------------------------------------------ output */

typedef struct ctx {
  const dt_manifests *m;
  const dt_pool_opts *o;
  dt_pools *r;
  dt_symtab volumes;   /* "ns/name" of PVCs and DataVolumes */
  dt_symtab vmis;      /* "ns/name" of VirtualMachineInstances: symbol k + 1 is m->vmis.v[k] */
  dt_pool_act scratch; /* written instead of an action that found no memory (the run then fails) */
  bool lean;           /* decisions only: no VM objects, no document (dt__pools_run_lean) */
} ctx;

static void put_time(cJSON *o, const char *k, int64_t t) {
  char tmp[40];
  dt__fmt_time(t, tmp, sizeof tmp);
  dt__json_put_str(o, k, tmp);
}

static void suffix_name(cJSON *o, const char *key, const dt_vmpool *p, int64_t idx, bool only_dv) {
  cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsString(v)) return;
  bool is_dv = !only_dv;
  for (size_t i = 0; i < p->ndv && !is_dv; i++) is_dv = !strcmp(p->dv[i], v->valuestring);
  if (!is_dv) return;
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s-%lld", v->valuestring, (long long)idx);
  cJSON_SetValuestring(v, tmp);
}

static char *hash_hex(uint64_t h, char *out) {
  snprintf(out, 17, "%016llx", (unsigned long long)h);
  return out;
}

/* The pool's current revision as KubeVirt names it and labels its VMs with
** (kubevirt.io/vm-pool-revision-name), into buf; false without a generation. */
static bool revision_name(const dt_vmpool *p, char *buf, size_t n) {
  if (!p->generation) return false;
  snprintf(buf, n, "%s-%lld", p->name, (long long)p->generation);
  return true;
}

/* o.labels[kubevirt.io/vm-pool-revision-name] = rev, o.labels made when absent. */
static void put_revision(cJSON *o, const char *rev) {
  cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "labels");
  if (!cJSON_IsObject(l)) {
    cJSON_DeleteItemFromObjectCaseSensitive(o, "labels");
    l = dt__json_put(o, "labels", cJSON_CreateObject());
  }
  cJSON_DeleteItemFromObjectCaseSensitive(l, "kubevirt.io/vm-pool-revision-name");
  dt__json_put_str(l, "kubevirt.io/vm-pool-revision-name", rev);
}

/* The VirtualMachine the pool creates at index idx: the template, indexed
** (data volumes and the volumes that use them get "-<idx>", and with
** spec.nameGeneration ConfigMap and Secret references too), owned by the
** pool and stamped with the template hash (and autohealing's attempt). */
static cJSON *vm_object(const dt_vmpool *p, const char *name, int64_t idx, int64_t attempt, int64_t now) {
  cJSON *o = cJSON_CreateObject();
  dt__json_put_str(o, "apiVersion", "kubevirt.io/v1");
  dt__json_put_str(o, "kind", "VirtualMachine");
  cJSON *md = dt__json_put(o, "metadata", cJSON_CreateObject());
  dt__json_put_str(md, "name", name);
  dt__json_put_str(md, "namespace", p->ns);
  const cJSON *tmd = cJSON_GetObjectItemCaseSensitive(p->tmpl, "metadata");
  cJSON *labels = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(tmd, "labels"), 1);
  if (!labels) labels = cJSON_CreateObject();
  dt__json_put(md, "labels", labels);
  char rev[600];
  bool has_rev = revision_name(p, rev, sizeof rev);
  if (has_rev) put_revision(md, rev);
  cJSON *ann = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(tmd, "annotations"), 1);
  if (!ann) ann = cJSON_CreateObject();
  dt__json_put(md, "annotations", ann);
  char hex[17];
  dt__json_put_str(ann, "dovetail.dev/template-hash", hash_hex(p->hash, hex));
  if (attempt > 0) {
    char a[24];
    snprintf(a, sizeof a, "%lld", (long long)attempt);
    dt__json_put_str(ann, "dovetail.dev/heal-attempt", a);
    put_time(ann, "dovetail.dev/healed-at", now);
  }
  cJSON *owners = dt__json_put(md, "ownerReferences", cJSON_CreateArray());
  cJSON *ow = dt__json_put(owners, NULL, cJSON_CreateObject());
  dt__json_put_str(ow, "apiVersion", "pool.kubevirt.io/v1beta1");
  dt__json_put_str(ow, "kind", "VirtualMachinePool");
  dt__json_put_str(ow, "name", p->name);
  if (p->uid) dt__json_put_str(ow, "uid", p->uid); /* a pool from the cluster has one; the API server needs it */
  dt__json_put(ow, "controller", cJSON_CreateTrue());
  dt__json_put(ow, "blockOwnerDeletion", cJSON_CreateTrue());
  cJSON *fin = dt__json_put(md, "finalizers", cJSON_CreateArray());
  dt__json_put(fin, NULL, cJSON_CreateString("pool.kubevirt.io/finalizer"));
  cJSON *spec = dt__json_put(o, "spec", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(p->tmpl, "spec"), 1));
  cJSON *vt = cJSON_GetObjectItemCaseSensitive(spec, "template");
  if (has_rev && cJSON_IsObject(vt)) { /* and on its VMI template, as KubeVirt's injectPoolRevisionLabelsIntoVM */
    cJSON *vmd = cJSON_GetObjectItemCaseSensitive(vt, "metadata");
    if (!cJSON_IsObject(vmd)) {
      cJSON_DeleteItemFromObjectCaseSensitive(vt, "metadata");
      vmd = dt__json_put(vt, "metadata", cJSON_CreateObject());
    }
    put_revision(vmd, rev);
  }
  cJSON *dvt = cJSON_GetObjectItemCaseSensitive(spec, "dataVolumeTemplates");
  for (cJSON *d = cJSON_IsArray(dvt) ? dvt->child : NULL; d; d = d->next)
    suffix_name(cJSON_GetObjectItemCaseSensitive(d, "metadata"), "name", p, idx, false);
  cJSON *vols = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(spec, "template"), "spec"), "volumes");
  for (cJSON *v = cJSON_IsArray(vols) ? vols->child : NULL; v; v = v->next) {
    suffix_name(cJSON_GetObjectItemCaseSensitive(v, "dataVolume"), "name", p, idx, true);
    suffix_name(cJSON_GetObjectItemCaseSensitive(v, "persistentVolumeClaim"), "claimName", p, idx, true);
    /* spec.nameGeneration, as KubeVirt's indexVMSpec: ConfigMap and Secret
    ** references (cloud-init's secret references among them) get "-<idx>" */
    if (p->name_gen & DT_NAMEGEN_CONFIGMAPS)
      suffix_name(cJSON_GetObjectItemCaseSensitive(v, "configMap"), "name", p, idx, false);
    if (p->name_gen & DT_NAMEGEN_SECRETS) {
      suffix_name(cJSON_GetObjectItemCaseSensitive(v, "secret"), "secretName", p, idx, false);
      static const char *const ci[] = {"cloudInitNoCloud", "cloudInitConfigDrive"};
      static const char *const refs[] = {"secretRef", "networkDataSecretRef"};
      for (int i = 0; i < 2; i++)
        for (int k = 0; k < 2; k++)
          suffix_name(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, ci[i]), refs[k]), "name", p,
                      idx, false);
    }
  }
  return o;
}

/* ------------------------------------------------------------ one pool */

typedef struct budget {
  int64_t max, left;
} budget;

static int64_t max_unavailable(const dt_vmpool *p, int64_t base) {
  int64_t mu = p->max_unavail_pct ? base * p->max_unavail / 100 : p->max_unavail; /* floor, as KubeVirt */
  return mu < 1 ? 1 : mu;
}

static bool unavailable(const dt_vm *v) { return v->deleting || v->halted || !v->ready; }

/* Whether VM v's instance template is the pool's, its own index and
** spec.nameGeneration's indexing (either way: KubeVirt does not tell a VM
** outdated by that setting) taken out, and its data volume templates too. */
static bool same_vmi(const dt_vmpool *p, const dt_vm *v) {
  bool same = false;
  for (unsigned bits = 0; bits < 4 && !same; bits++) same = v->vmi_hash_ng[bits] == p->vmi_hash;
  return same && v->dvt_hash == p->dvt_hash;
}

/* Whether VM v has the template's labels (its own, not its instance
** template's: those are in the instance template's hash). Labels it has
** beyond them may be anyone's and say nothing. */
static bool has_template_labels(const dt_vmpool *p, const dt_vm *v) {
  const cJSON *l = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p->tmpl, "metadata"), "labels");
  for (const cJSON *e = cJSON_IsObject(l) ? l->child : NULL; e; e = e->next) {
    const char *mine = dt__kv_get(v->labels.v, v->nmeta_labels, e->string);
    if (!cJSON_IsString(e) || !mine || strcmp(mine, e->valuestring)) return false;
  }
  return true;
}

static const dt_pool_rev *pool_rev(const dt_manifests *m, const char *ns, const char *name) {
  for (size_t i = 0; name && i < m->pool_revs.n; i++)
    if (!strcmp(m->pool_revs.v[i].name, name) && !strcmp(m->pool_revs.v[i].ns, ns)) return &m->pool_revs.v[i];
  return NULL;
}

/* Whether VM v has its pool's template: by the template hash dovetail
** stamps on the VMs it makes; else, as KubeVirt's isOutdatedVM, by the
** revision label the pool controller puts on them (the pool's current
** generation), or by the template the ControllerRevision that label names
** holds; else by comparing templates, less what the cluster adds
** (strip_server_fields), and the VM's own labels and run strategy. */
static bool current(const dt_manifests *m, const dt_vmpool *p, const dt_vm *v) {
  if (v->tmpl_hash) {
    char hex[17];
    return !strcmp(v->tmpl_hash, hash_hex(p->hash, hex));
  }
  char rev[600];
  if (v->revision && revision_name(p, rev, sizeof rev) && !strcmp(v->revision, rev)) return true;
  /* KubeVirt's isOutdatedVM itself: the template its revision stored against the pool's */
  const dt_pool_rev *r = pool_rev(m, v->ns, v->revision);
  if (r) return r->tmpl_hash == p->rev_hash;
  /* the VM-level part of the template too: its labels, its run strategy */
  return same_vmi(p, v) && has_template_labels(p, v) &&
         (!p->run_strategy || !v->run_strategy || p->run_strategy == v->run_strategy);
}

static const char *const k_failing[] = {
    "CrashLoopBackOff", "Unschedulable", "DataVolumeError", "PvcNotFound", "ErrImagePull", "ImagePullBackOff", NULL};

static bool failing(const dt_vmpool *p, const dt_vm *v, int64_t now, char *why, size_t n) {
  if (v->deleting || v->halted) return false;
  if (v->fail_count >= p->heal_threshold) {
    snprintf(why, n, "failed to start %lld times in a row (startUpFailureThreshold %lld)", (long long)v->fail_count,
             (long long)p->heal_threshold);
    return true;
  }
  if (v->ready || !v->status || !v->not_ready_since) return false;
  for (const char *const *s = k_failing; *s; s++)
    if (!strcmp(*s, v->status) && now - v->not_ready_since >= p->heal_min_failing) {
      snprintf(why, n, "%s and not ready for %llds (minFailingToStartDuration %llds)", v->status,
               (long long)(now - v->not_ready_since), (long long)p->heal_min_failing);
      return true;
    }
  return false;
}

/* Backoff before attempt a (1-based): none for the first, then
** base * factor^(a-2), capped. A count whose last heal is older than twice
** the cap starts again at 1. */
static int64_t heal_delay(const dt_vmpool *p, int64_t attempt) {
  if (attempt <= 1) return 0;
  double d = (double)p->heal_base * pow(p->heal_factor, (double)(attempt - 2));
  return d >= (double)p->heal_cap ? p->heal_cap : (int64_t)d;
}

static int cmp_index(const void *a, const void *b) { return cmp_i64(*(const int64_t *)a, *(const int64_t *)b); }

/* One pool's round: what every phase reads and writes. */
typedef struct poolrun {
  ctx *x;
  size_t pi;
  const dt_vmpool *p;
  int64_t now;
  dt_pool_rec *rec; /* the pool's record in the result (pools are added only before a pool's round) */
  pvm *act;         /* the pool's VMs (selector matched) */
  bool *healing;    /* by VM index: re-created by autohealing this round */
  size_t nact, ndel, nready, nunavail;
  int64_t count, diff, creates_left, deletes_left;
  char tmp[700];
} poolrun;

/* A string for the result, in its arena (NULL stays NULL). */
static const char *rstr(ctx *x, const char *s) { return s ? dt__arena_strdup(&x->r->arena, s) : NULL; }

/* A new action of the pool's round in list; vm NULL for a count of VMs. The
** pointer is good until the next action. Out of memory, the scratch action
** is returned and the run fails at its end. */
static dt_pool_act *action(poolrun *r, dt_pool_list list, const char *vm, const char *reason) {
  ctx *x = r->x;
  dt_pool_act a = {.info = {.ns = r->rec->info.ns,
                            .pool = r->rec->info.name,
                            .list = list,
                            .vm = rstr(x, vm),
                            .reason = rstr(x, reason),
                            .count = 1,
                            .preserve_state = -1}};
  if (dt__vec_push(&x->r->acts, a)) {
    x->r->arena.oom = 1;
    x->scratch = a;
    return &x->scratch;
  }
  r->rec->info.nactions++;
  return &x->r->acts.v[x->r->acts.n - 1];
}

/* The VM object of action a (owned by the result from here). */
static void put_object(poolrun *r, dt_pool_act *a, cJSON *o) {
  if (a == &r->x->scratch)
    cJSON_Delete(o);
  else
    a->object = o;
}

/* VMs held back without names: so many wait for the burst limit or a halt. */
static void wait_count(poolrun *r, const char *what, int64_t count, const char *reason) {
  dt_pool_act *a = action(r, DT_POOL_WAITING, NULL, reason);
  a->info.wait_for = what;
  a->info.count = count;
}

static void note(poolrun *r, const char *fmt, ...) DT_PRINTF(2, 3);
static void note(poolrun *r, const char *fmt, ...) {
  char msg[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *s = rstr(r->x, msg);
  if (!s || dt__vec_push(&r->rec->notes, s)) r->x->r->arena.oom = 1;
}

/* The pool's record in the result and the VMs it owns (those whose
** labels left the selector are released). */
static int pool_open(poolrun *r, const size_t *vms, size_t nvms) {
  const dt_vmpool *p = r->p;
  ctx *x = r->x;
  char hex[17];
  dt_pool_rec rec = {.info = {.ns = rstr(x, p->ns),
                              .name = rstr(x, p->name),
                              .replicas = p->replicas,
                              .outdated = -1,
                              .template_hash = rstr(x, hash_hex(p->hash, hex)),
                              .first_action = x->r->acts.n}};
  if (x->r->arena.oom || dt__vec_push(&x->r->pools, rec)) return DT_ENOMEM;
  r->rec = &x->r->pools.v[x->r->pools.n - 1];
  r->act = dt__calloc(nvms ? nvms : 1, sizeof *r->act);
  r->healing = dt__calloc(x->m->vms.n ? x->m->vms.n : 1, 1);
  if (!r->act || !r->healing) return DT_ENOMEM;
  for (size_t k = 0; k < nvms; k++) {
    const dt_vm *v = &x->m->vms.v[vms[k]];
    if (!dt__selector_match(&p->selector, v->labels.v, v->nmeta_labels)) {
      action(r, DT_POOL_DETACHED, v->name,
             "labels no longer match spec.selector: released from the pool; its name stays taken until it is "
             "deleted or re-attached");
      x->r->stats.detached++;
      continue;
    }
    r->act[r->nact++].v = v;
    r->ndel += v->deleting != 0;
    r->nready += !unavailable(v);
    r->nunavail += unavailable(v);
  }
  r->count = (int64_t)r->nact, r->diff = p->replicas - r->count;
  r->rec->info.current = r->count;
  /* names the API server refuses, as KubeVirt's own creates would fail:
  ** said here rather than printed as objects that cannot be applied */
  char rev[600];
  size_t nl = strlen(p->name) + 1 + (size_t)snprintf(NULL, 0, "%lld", (long long)(p->replicas ? p->replicas - 1 : 0));
  if (r->diff > 0 && nl > 253)
    note(r,
         "its VMs' names (%s-<index>) would be %zu characters, over the 253 a name may have: the API server "
         "refuses them, as it would KubeVirt's",
         p->name, nl);
  if (revision_name(p, rev, sizeof rev) && strlen(rev) > 63)
    note(r,
         "its revision label value %s is %zu characters, over the 63 a label value may have: the API server "
         "refuses the VMs that carry it, as it would KubeVirt's",
         rev, strlen(rev));
  r->rec->info.ready = (int64_t)r->nready;
  r->rec->info.unavailable = (int64_t)r->nunavail;
  r->creates_left = p->burst, r->deletes_left = p->burst;
  return 0;
}

/* 1. Autohealing: failing VMs re-created, with backoff between attempts. */
static void pool_heal(poolrun *r) {
  const dt_vmpool *p = r->p;
  int64_t now = r->now;
  char why[600];
  for (size_t k = 0; p->autoheal && k < r->nact; k++) {
    const dt_vm *v = r->act[k].v;
    if (!failing(p, v, now, why, sizeof why)) continue;
    int64_t attempt = 1;
    if (v->healed_at && v->heal_attempt > 0 && now - v->healed_at <= 2 * p->heal_cap) attempt = v->heal_attempt + 1;
    int64_t next = attempt > 1 ? v->healed_at + heal_delay(p, attempt) : now;
    dt_pool_act *a;
    if (r->diff < 0 && p->scale_in != DT_STRAT_UNMANAGED && r->deletes_left > 0) {
      /* the pool scales in: the failing VM goes and counts toward it (KubeVirt heals, then scales) */
      snprintf(r->tmp, sizeof r->tmp, "%s; the pool scales in %lld → %lld: deleted, not re-created", why,
               (long long)r->count, (long long)p->replicas);
      action(r, DT_POOL_DELETE, v->name, r->tmp)->info.preserve_state = p->preserve != DT_PRESERVE_DISABLED;
      r->healing[v - r->x->m->vms.v] = true;
      r->deletes_left--;
      r->diff++;
      r->x->r->stats.del++;
      continue;
    }
    if (next > now || r->deletes_left <= 0 || r->creates_left <= 0) {
      snprintf(r->tmp, sizeof r->tmp, "%s; attempt %lld waits %s", why, (long long)attempt,
               next > now ? "for its backoff" : "for the burst limit");
      a = action(r, DT_POOL_HEAL, v->name, r->tmp);
      a->info.action = "wait";
    } else {
      snprintf(r->tmp, sizeof r->tmp, "%s: delete and re-create (attempt %lld)", why, (long long)attempt);
      a = action(r, DT_POOL_HEAL, v->name, r->tmp);
      a->info.action = "recreate";
      a->info.preserve_state = p->preserve != DT_PRESERVE_DISABLED;
      if (!r->x->lean) put_object(r, a, vm_object(p, v->name, v->index, attempt, now));
      r->healing[v - r->x->m->vms.v] = true;
      r->deletes_left--;
      r->creates_left--;
    }
    a->info.attempt = attempt;
    a->info.failures = v->fail_count;
    a->info.next_allowed = next > now ? next : now;
    r->x->r->stats.heal++;
  }
}

/* 2. Scale out: the lowest free indexes, skipping names any VM holds. */
static int pool_scale_out(poolrun *r, const int64_t *used, size_t nused) {
  const dt_vmpool *p = r->p;
  int64_t want = r->diff < r->creates_left ? r->diff : r->creates_left;
  int64_t idx = 0;
  size_t u = 0;
  int rc = 0;
  for (int64_t made = 0; made < want; idx++) {
    while (u < nused && used[u] < idx) u++;
    if (u < nused && used[u] == idx) continue;
    char name[600];
    snprintf(name, sizeof name, "%s-%lld", p->name, (long long)idx);
    snprintf(r->tmp, sizeof r->tmp, "scale out %lld → %lld: lowest free index", (long long)r->count,
             (long long)p->replicas);
    dt_pool_act *a = action(r, DT_POOL_CREATE, name, r->tmp);
    for (size_t d = 0; d < p->ndv; d++) {
      char key[1300];
      snprintf(key, sizeof key, "%s/%s-%lld", p->ns, p->dv[d], (long long)idx);
      if (!dt__sym_find(&r->x->volumes, key)) continue;
      if (!a->reuses && !(a->reuses = dt__arena_alloc(&r->x->r->arena, p->ndv * sizeof *a->reuses))) break;
      a->reuses[a->info.nreuses++] = rstr(r->x, strchr(key, '/') + 1);
      a->info.reuses_volumes = a->reuses;
    }
    if (!r->x->lean) put_object(r, a, vm_object(p, name, idx, 0, r->now));
    dt_pool_create pc = {r->pi, idx};
    if (dt__vec_push(&r->x->r->creates, pc)) rc = DT_ENOMEM;
    made++;
    r->x->r->stats.create++;
  }
  if (r->diff > want) {
    snprintf(r->tmp, sizeof r->tmp, "%lld more VMs wait for the next round (burst limit %lld per round)",
             (long long)(r->diff - want), (long long)p->burst);
    wait_count(r, "burst", r->diff - want, r->tmp);
    r->x->r->stats.waiting++;
  }
  return rc;
}

/* The order scale-in takes candidates in: the scale_in hook's when the
** policy has one (*hooked), else the pool's selection policy's. */
static int scale_in_order(poolrun *r, pvm *cand, size_t nc, int64_t remove, size_t *ord, bool *hooked) {
  const dt_vmpool *p = r->p;
  const dt_pool_opts *o = r->x->o;
  *hooked = false;
  if (!dt__policy_has(o->policy, DT_HOOK_SCALE_IN)) {
    for (size_t k = 0; k < nc; k++) ord[k] = k;
    return 0;
  }
  size_t nl = 0;
  for (size_t k = 0; k < nc; k++) nl += cand[k].v->labels.n;
  dt_hook_vm *hv = dt__calloc(nc ? nc : 1, sizeof *hv);
  const char **lab = dt__calloc(nl ? 2 * nl : 1, sizeof *lab);
  int rc = hv && lab ? 0 : DT_ENOMEM;
  for (size_t k = 0, at = 0; !rc && k < nc; k++) {
    const dt_vm *v = cand[k].v;
    hv[k] = (dt_hook_vm){v->name, v->status, v->index, v->created, v->ready, v->halted, lab + 2 * at, 0};
    for (size_t q = 0; q < v->labels.n; q++) {
      /* metadata labels first; a template label of the same key does not override */
      if (dt__kv_get(v->labels.v, q, v->labels.v[q].key)) continue;
      lab[2 * at] = v->labels.v[q].key;
      lab[2 * at + 1] = v->labels.v[q].val;
      at++;
      hv[k].nlabels++;
    }
  }
  dt_hook_pool hp = {p->ns, p->name, p->replicas, r->count, remove};
  if (!rc) *hooked = dt__policy_scale_in(o->policy, &hp, hv, nc, ord) == 0;
  dt__free(lab);
  dt__free(hv);
  return rc;
}

/* 3. Scale in: what the selection policy puts first, at most the burst
** limit a round (VMs already being deleted count toward it); maxUnavailable
** holds updates only, as KubeVirt's scaleIn. */
static int pool_scale_in(poolrun *r) {
  const dt_vmpool *p = r->p;
  int64_t remove = -r->diff - (int64_t)r->ndel;
  if (r->ndel) note(r, "%zu VMs are already being deleted and count toward the scale-in", r->ndel);
  if (remove > 0 && p->scale_in == DT_STRAT_UNMANAGED) {
    note(r, "scaleInStrategy unmanaged: %lld VMs above replicas are left to the user", (long long)remove);
    return 0;
  }
  if (remove <= 0) return 0;
  dt_pools_stats *st = &r->x->r->stats;
  bool opp = p->scale_in == DT_STRAT_OPPORTUNISTIC, hooked = false;
  size_t nc = 0;
  pvm *cand = dt__calloc(r->nact ? r->nact : 1, sizeof *cand);
  size_t *ord = dt__malloc((r->nact ? r->nact : 1) * sizeof *ord);
  int rc = cand && ord ? 0 : DT_ENOMEM;
  for (size_t k = 0; !rc && k < r->nact; k++) {
    const dt_vm *v = r->act[k].v;
    if (v->deleting || r->healing[v - r->x->m->vms.v] || (opp && !v->halted)) continue;
    cand[nc++].v = v;
  }
  if (!rc) {
    order_vms(cand, nc, &p->scale_sel, r->x->o->seed ^ dt__hash64(p->name, strlen(p->name)));
    rc = scale_in_order(r, cand, nc, remove, ord, &hooked);
  }
  size_t take = (size_t)remove < nc ? (size_t)remove : nc;
  for (size_t k = 0; !rc && k < take; k++) {
    const pvm *c = &cand[ord[k]];
    char sel[300];
    why_selected(&p->scale_sel, c, sel, sizeof sel);
    if (r->deletes_left <= 0) {
      snprintf(r->tmp, sizeof r->tmp, "scale in %lld → %lld (%s%s): waits for the burst limit", (long long)r->count,
               (long long)p->replicas, sel, hooked ? ", order from the scale_in hook" : "");
      action(r, DT_POOL_WAITING, c->v->name, r->tmp)->info.wait_for = "burst";
      st->waiting++;
      continue;
    }
    r->deletes_left--;
    snprintf(r->tmp, sizeof r->tmp, "scale in %lld → %lld: %s%s", (long long)r->count, (long long)p->replicas, sel,
             hooked ? ", order from the scale_in hook" : "");
    action(r, DT_POOL_DELETE, c->v->name, r->tmp)->info.preserve_state = p->preserve != DT_PRESERVE_DISABLED;
    st->del++;
  }
  if (!rc && opp && (size_t)remove > nc) {
    snprintf(r->tmp, sizeof r->tmp, "scaleInStrategy opportunistic: %lld more VMs are deleted once they halt",
             (long long)((size_t)remove - nc));
    wait_count(r, "halt", (int64_t)((size_t)remove - nc), r->tmp);
    st->waiting++;
  }
  dt__free(ord);
  dt__free(cand);
  return rc;
}

/* KubeVirt's isOutdatedVMI for a current VM: its VMI was started from
** another revision (kubevirt.io/vm-pool-revision-name) whose instance
** template differs, read from the two ControllerRevisions when the input
** holds both, else from the VM's RestartRequired condition (KubeVirt's VM
** controller sets it when the VM's spec changed under a running VMI).
** Equal templates only get the VMI relabelled: nothing to do here. The
** VMI's revision into o. */
static bool vmi_outdated(const poolrun *r, pvm *o) {
  const dt_vm *v = o->v;
  const dt_manifests *m = r->x->m;
  /* only a proactive update restarts (KubeVirt's update skips proactiveUpdate otherwise) */
  if (!v->revision || !m->vmis.n || v->halted || v->deleting || r->p->update != DT_STRAT_PROACTIVE) return false;
  char key[1200];
  snprintf(key, sizeof key, "%s/%s", v->ns, v->name);
  dt_sym s = dt__sym_find(&r->x->vmis, key);
  const dt_vmi *vmi = s ? &m->vmis.v[s - 1] : NULL;
  /* a VMI already going is not restarted again */
  if (!vmi || vmi->deleting || (vmi->revision && !strcmp(vmi->revision, v->revision))) return false;
  const dt_pool_rev *now = pool_rev(m, v->ns, v->revision), *then = pool_rev(m, v->ns, vmi->revision);
  bool differ;
  if (!vmi->revision) {
    differ = true; /* a VMI without the label: KubeVirt restarts it */
    o->why = "the VM's is the pool's";
  } else if (m->pool_revs.n) {
    /* with the revisions at hand, as KubeVirt reads them: the VM's own
    ** missing, no update; the VMI's missing, a restart */
    differ = now && (!then || now->vmi_hash != then->vmi_hash || now->dvt_hash != then->dvt_hash);
    o->why = !then ? "the VMI's ControllerRevision is gone" : "the ControllerRevisions differ";
  } else {
    differ = v->restart_required;
    o->why = "the VM says RestartRequired";
  }
  if (!differ) return false;
  o->vmi_stale = true;
  o->vmi_rev = vmi->revision;
  o->vmi_dv = now && then && now->dvt_hash != then->dvt_hash;
  return true;
}

/* How one outdated VM is updated (into r->tmp, the action's name into
** *what), or NULL after recording that it waits for maxUnavailable. */
static const char *update_one(poolrun *r, const pvm *o, int64_t mu_update, int64_t *left) {
  const dt_vmpool *p = r->p;
  const dt_vm *v = o->v;
  bool dv_changed = o->vmi_stale ? o->vmi_dv : v->dvt_hash != p->dvt_hash;
  if (o->vmi_stale) {
    if (!v->ready || *left > 0) {
      if (v->ready) (*left)--;
      bool label = o->vmi_rev != NULL;
      snprintf(r->tmp, sizeof r->tmp, "%s%s%s (%s)%s: %s as KubeVirt's isOutdatedVMI",
               label ? "its VMI runs revision " : "its VMI carries no revision label", label ? o->vmi_rev : "",
               label ? ", whose instance template is not its own" : "", o->why,
               v->ready ? "" : "; not ready, so without counting against maxUnavailable",
               dv_changed ? "re-created" : "restarted");
      return dv_changed ? "recreate" : "restart";
    }
    snprintf(r->tmp, sizeof r->tmp, "its VMI runs revision %s; waits for maxUnavailable (%lld)",
             o->vmi_rev ? o->vmi_rev : "(none)", (long long)mu_update);
    action(r, DT_POOL_WAITING, v->name, r->tmp)->info.wait_for = "maxUnavailable";
    r->x->r->stats.waiting++;
    return NULL;
  }
  if (same_vmi(p, v)) {
    /* KubeVirt's opportunisticUpdate rewrites the VM, and its VMI, whose
    ** revision's instance template is the same, only gets the new revision
    ** label (proactiveUpdateTypePatchRevisionLabel): nothing restarts */
    bool halts = p->run_strategy && p->run_strategy != v->run_strategy && !v->halted;
    snprintf(r->tmp, sizeof r->tmp,
             "template changed outside its instance template (the VM's labels, annotations or spec): the VM is "
             "rewritten without a restart%s",
             halts ? "; its new run strategy applies, which may stop it" : "");
    return "rewrite";
  }
  if (v->halted) {
    snprintf(r->tmp, sizeof r->tmp, "template changed; halted, the new spec applies at its next start");
    return "apply";
  }
  if (p->update == DT_STRAT_OPPORTUNISTIC) {
    snprintf(r->tmp, sizeof r->tmp,
             "template changed; updateStrategy opportunistic: the spec is rewritten and the "
             "running VM picks it up when it next restarts");
    return "wait-for-halt";
  }
  if (!v->ready) {
    snprintf(r->tmp, sizeof r->tmp, "template changed; not ready, so %s without counting against maxUnavailable",
             dv_changed ? "re-created" : "restarted");
    return dv_changed ? "recreate" : "restart";
  }
  if (*left > 0) {
    (*left)--;
    char sel[300];
    why_selected(&p->update_sel, o, sel, sizeof sel);
    snprintf(r->tmp, sizeof r->tmp, "template changed%s; %s",
             dv_changed ? " (data volumes too: delete and re-create)" : "", sel);
    return dv_changed ? "recreate" : "restart";
  }
  snprintf(r->tmp, sizeof r->tmp, "template changed; waits for maxUnavailable (%lld)", (long long)mu_update);
  action(r, DT_POOL_WAITING, v->name, r->tmp)->info.wait_for = "maxUnavailable";
  r->x->r->stats.waiting++;
  return NULL;
}

/* A VM rewritten in place keeps its firmware UUID and serial (KubeVirt's
** preserveVMIdentityFields): without them KubeVirt's VM controller puts new
** ones in, says RestartRequired, and the guest comes back as another machine
** (cloud-init takes the UUID for its instance-id). A re-created VM is new. */
static void keep_identity(cJSON *vm, const dt_vm *v) {
  if (!vm || (!v->fw_uuid && !v->fw_serial)) return;
  cJSON *t = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(vm, "spec"), "template");
  cJSON *spec = cJSON_GetObjectItemCaseSensitive(t, "spec");
  cJSON *dom = cJSON_GetObjectItemCaseSensitive(spec, "domain");
  if (!cJSON_IsObject(dom)) return;
  cJSON *fw = cJSON_GetObjectItemCaseSensitive(dom, "firmware");
  if (!cJSON_IsObject(fw)) {
    cJSON_DeleteItemFromObjectCaseSensitive(dom, "firmware");
    fw = dt__json_put(dom, "firmware", cJSON_CreateObject());
  }
  if (v->fw_uuid) {
    cJSON_DeleteItemFromObjectCaseSensitive(fw, "uuid");
    dt__json_put_str(fw, "uuid", v->fw_uuid);
  }
  if (v->fw_serial) {
    cJSON_DeleteItemFromObjectCaseSensitive(fw, "serial");
    dt__json_put_str(fw, "serial", v->fw_serial);
  }
}

/* 4. Updates, once the pool is at its replica count (as KubeVirt). */
static int pool_update(poolrun *r, int64_t mu_update) {
  const dt_vmpool *p = r->p;
  size_t nout = 0;
  pvm *out_of = dt__calloc(r->nact ? r->nact : 1, sizeof *out_of);
  if (!out_of) return DT_ENOMEM;
  /* KubeVirt's update selectors scope the rollout (its update() filters by
  ** them): the outdated VMs they leave out are not updated */
  const dt_selentry *scope = p->update_sel.selectors_first && p->update_sel.n ? &p->update_sel.v[0] : NULL;
  size_t outside = 0;
  for (size_t k = 0; k < r->nact; k++) {
    const dt_vm *v = r->act[k].v;
    pvm o = {.v = v};
    if (v->deleting || r->healing[v - r->x->m->vms.v] || (current(r->x->m, p, v) && !vmi_outdated(r, &o))) continue;
    if (scope && !entry_match(scope, v)) {
      outside++;
      continue;
    }
    out_of[nout++] = o;
  }
  if (outside)
    note(r, "%zu outdated VMs are outside updateStrategy's selectors and are not updated (as KubeVirt)", outside);
  r->rec->has_outdated = true;
  r->rec->info.outdated = (int64_t)nout;
  if (!nout) {
  } else if (r->diff != 0) {
    note(r, "%zu outdated VMs wait until the pool is at its replica count", nout);
  } else if (p->update == DT_STRAT_UNMANAGED) {
    note(r, "updateStrategy unmanaged: %zu outdated VMs are left to the user", nout);
  } else {
    order_vms(out_of, nout, &p->update_sel, r->x->o->seed ^ dt__hash64(p->name, strlen(p->name)));
    int64_t left = mu_update - (int64_t)r->nunavail;
    int64_t updates_left = p->burst; /* KubeVirt's burst limit holds for updates as for creations */
    for (size_t k = 0; k < nout; k++) {
      const dt_vm *v = out_of[k].v;
      if (updates_left <= 0) {
        snprintf(r->tmp, sizeof r->tmp,
                 "template changed; %zu outdated VMs wait for the next round (burst limit %lld per round)", nout - k,
                 (long long)p->burst);
        wait_count(r, "burst", (int64_t)(nout - k), r->tmp);
        r->x->r->stats.waiting++;
        break;
      }
      updates_left--;
      const char *what = update_one(r, &out_of[k], mu_update, &left);
      if (!what) continue;
      dt_pool_act *a = action(r, DT_POOL_UPDATE, v->name, r->tmp);
      a->info.action = what;
      if (!r->x->lean) { /* the VM as it is to be */
        cJSON *vm = vm_object(p, v->name, v->index, 0, r->now);
        if (strcmp(what, "recreate")) keep_identity(vm, v);
        put_object(r, a, vm);
      }
      r->x->r->stats.update++;
    }
  }
  dt__free(out_of);
  return 0;
}

/* One pool's round, in KubeVirt's order: heal, then (unless paused) scale
** out or in, then update. */
static int run_pool(ctx *x, size_t pi, const size_t *vms, size_t nvms, const int64_t *used, size_t nused) {
  poolrun r = {.x = x, .pi = pi, .p = &x->m->vmpools.v[pi], .now = x->o->now};
  int rc = pool_open(&r, vms, nvms);
  const dt_vmpool *p = r.p;
  if (!rc && !p->deleting) pool_heal(&r);
  int64_t mu_update = max_unavailable(p, p->replicas);
  if (!rc) {
    r.rec->has_max_unavailable = true;
    r.rec->info.max_unavailable = mu_update;
  }
  if (!rc && p->deleting) { /* KubeVirt's execute: no sync for a pool being deleted (handlePoolDeletion) */
    note(&r, "being deleted: nothing is created, deleted, healed or updated; its VMs go with it");
  } else if (!rc && p->paused) {
    note(&r, "paused: no scaling or updates (autohealing still runs)");
  } else if (!rc) {
    if (r.diff > 0) rc = pool_scale_out(&r, used, nused);
    if (!rc && r.diff < 0) rc = pool_scale_in(&r);
    if (!rc) rc = pool_update(&r, mu_update);
  }
  dt__free(r.act);
  dt__free(r.healing);
  return rc;
}

/* ------------------------------------------------------------ all pools */

static int pool_cmp(const void *a, const void *b, const dt_manifests *m) {
  const dt_vmpool *x = &m->vmpools.v[*(const size_t *)a], *y = &m->vmpools.v[*(const size_t *)b];
  int c = strcmp(x->ns, y->ns);
  return c ? c : strcmp(x->name, y->name);
}

static const dt_manifests *g_sort_m; /* qsort has no context argument in C11 */
static int pool_cmp_q(const void *a, const void *b) { return pool_cmp(a, b, g_sort_m); }

/* Group VMs by owning pool (members of pool i: members[start[i] ..
** start[i + 1]]), and the indexes of "<pool>-<i>" names in use in each
** pool's namespace, sorted (used[ustart[i] .. ustart[i + 1]]; owned or not:
** detached and foreign VMs keep their names). A counting sort keeps it
** linear in the number of VMs; pool symbol k+1 is pool k. */
static int group_vms(const dt_manifests *m, dt_symtab *pools, size_t *start, size_t *members, size_t *ustart,
                     int64_t *used, size_t *owner, size_t *namer) {
  size_t np = m->vmpools.n, nv = m->vms.n;
  char key[1200];
  for (size_t i = 0; i < nv; i++) {
    const dt_vm *v = &m->vms.v[i];
    owner[i] = namer[i] = SIZE_MAX;
    if (v->owner) {
      snprintf(key, sizeof key, "%s/%s", v->ns, v->owner);
      dt_sym s = dt__sym_find(pools, key);
      const char *puid = s ? m->vmpools.v[s - 1].uid : NULL;
      if (s && puid && v->owner_uid && strcmp(puid, v->owner_uid)) s = 0; /* an earlier pool's of that name */
      if (s) {
        owner[i] = s - 1;
        start[s]++;
      }
    }
    if (v->index >= 0) {
      const char *dash = strrchr(v->name, '-');
      snprintf(key, sizeof key, "%s/%.*s", v->ns, (int)(dash - v->name), v->name);
      dt_sym s = dt__sym_find(pools, key);
      if (s) {
        namer[i] = s - 1;
        ustart[s]++;
      }
    }
  }
  for (size_t i = 1; i <= np; i++) {
    start[i] += start[i - 1];
    ustart[i] += ustart[i - 1];
  }
  size_t *fill = dt__calloc(np + 1, sizeof *fill), *ufill = dt__calloc(np + 1, sizeof *ufill);
  int rc = fill && ufill ? 0 : DT_ENOMEM;
  for (size_t i = 0; i < nv && !rc; i++) {
    if (owner[i] != SIZE_MAX) members[start[owner[i]] + fill[owner[i]]++] = i;
    if (namer[i] != SIZE_MAX) used[ustart[namer[i]] + ufill[namer[i]]++] = m->vms.v[i].index;
  }
  dt__free(fill);
  dt__free(ufill);
  for (size_t i = 0; i < np && !rc; i++) qsort(used + ustart[i], ustart[i + 1] - ustart[i], sizeof *used, cmp_index);
  return rc;
}

/* After the pools: notes on VMs owned by pools not in the input, and the
** policy's errors. */
static void pools_tail(ctx *x, const size_t *owner) {
  const dt_manifests *m = x->m;
  dt_pools *r = x->r;
  char key[1200];
  for (size_t i = 0; i < m->vms.n; i++)
    if (m->vms.v[i].owner && owner[i] == SIZE_MAX) {
      snprintf(key, sizeof key,
               "%s: VirtualMachine %s/%s is owned by VirtualMachinePool %s%s%s, which is not in the input%s",
               m->vms.v[i].file, m->vms.v[i].ns, m->vms.v[i].name, m->vms.v[i].owner,
               m->vms.v[i].owner_uid ? " uid " : "", m->vms.v[i].owner_uid ? m->vms.v[i].owner_uid : "",
               m->vms.v[i].owner_uid ? " (one of that name with another uid is: its VMs are not this pool's; the "
                                       "name stays taken)"
                                     : "");
      const char *s = rstr(x, key);
      if (!s || dt__vec_push(&r->notes, s)) r->arena.oom = 1;
    }
  if (x->o->policy) {
    r->has_policy_errors = true;
    if (dt__policy_errors_take(x->o->policy, &r->arena, &r->policy_errors)) r->arena.oom = 1;
  }
}

static int pools_run(const dt_manifests *m, const dt_pool_opts *opts, bool lean, dt_pools **out, dt_error *err) {
  dt__init();
  double t0 = dt__now_ms();
  dt_pool_opts o = opts ? *opts : (dt_pool_opts){0};
  if (!o.now) o.now = 946684800;
  *out = NULL;
  dt_pools *r = dt__calloc(1, sizeof *r);
  if (!r) return dt__err(err, DT_ENOMEM, "out of memory");
  ctx x = {.m = m, .o = &o, .r = r, .lean = lean};
  size_t np = m->vmpools.n, nv = m->vms.n;
  size_t *order = dt__malloc((np ? np : 1) * sizeof *order);
  size_t *start = dt__calloc(np + 1, sizeof *start), *members = dt__malloc((nv ? nv : 1) * sizeof *members);
  size_t *ustart = dt__calloc(np + 1, sizeof *ustart);
  int64_t *used = dt__malloc((nv ? nv : 1) * sizeof *used);
  size_t *owner = dt__malloc((nv ? nv : 1) * sizeof *owner), *namer = dt__malloc((nv ? nv : 1) * sizeof *namer);
  dt_symtab pools = {0};
  int rc = 0;
  dt__alloc_failed(1);
  if (!order || !start || !members || !ustart || !used || !owner || !namer) rc = DT_ENOMEM;
  /* pool symbol k+1 is pool k ("ns/name" is unique) */
  char key[1200];
  for (size_t i = 0; i < np && !rc; i++) {
    snprintf(key, sizeof key, "%s/%s", m->vmpools.v[i].ns, m->vmpools.v[i].name);
    if (dt__sym(&pools, key) != i + 1) rc = DT_ENOMEM;
    order[i] = i;
  }
  for (size_t i = 0; i < m->volumes.n && !rc; i++)
    if (!dt__sym(&x.volumes, m->volumes.v[i])) rc = DT_ENOMEM;
  for (size_t i = 0; i < m->vmis.n && !rc; i++) {
    snprintf(key, sizeof key, "%s/%s", m->vmis.v[i].ns, m->vmis.v[i].name);
    if (dt__sym(&x.vmis, key) != i + 1) rc = DT_ENOMEM;
  }
  if (!rc) rc = group_vms(m, &pools, start, members, ustart, used, owner, namer);
  g_sort_m = m;
  if (!rc) qsort(order, np, sizeof *order, pool_cmp_q);

  for (size_t k = 0; k < np && !rc; k++) {
    size_t i = order[k];
    rc = run_pool(&x, i, members + start[i], start[i + 1] - start[i], used + ustart[i], ustart[i + 1] - ustart[i]);
    r->stats.pools++;
  }
  if (!rc) pools_tail(&x, owner);
  if (!rc && (dt__alloc_failed(1) || pools.oom || x.volumes.oom || x.vmis.oom || r->arena.oom)) rc = DT_ENOMEM;
  if (!rc && !lean) rc = dt__pools_doc_build(r, o.now);
  dt__symtab_free(&pools);
  dt__symtab_free(&x.volumes);
  dt__symtab_free(&x.vmis);
  dt__free(order);
  dt__free(start);
  dt__free(members);
  dt__free(ustart);
  dt__free(used);
  dt__free(owner);
  dt__free(namer);
  if (rc) {
    dt_pools_free(r);
    return dt__err(err, rc, "out of memory");
  }
  r->stats.run_ms = dt__now_ms() - t0;
  *out = r;
  return 0;
}

int dt_pools_run(const dt_manifests *m, const dt_pool_opts *opts, dt_pools **out, dt_error *err) {
  return pools_run(m, opts, false, out, err);
}

int dt__pools_run_lean(const dt_manifests *m, const dt_pool_opts *opts, dt_pools **out, dt_error *err) {
  return pools_run(m, opts, true, out, err);
}
