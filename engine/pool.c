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

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct pvm {
  const dt_vm *v;
  int tier;     /* first ordered-policy entry the VM matches; n when none */
  int base;     /* the base policy ordering it */
  int calm;     /* Random: 0 halted, 1 not ready, 2 running and ready */
  uint64_t rnd; /* Random: the seeded key */
} pvm;

struct dt_pools {
  cJSON *root;
  DT_VEC(dt_pool_create) creates; /* for dt_plan_run: VMs that will need capacity */
  dt_pools_stats stats;
};

/* ------------------------------------------------------------ matching */

static bool entry_match(const dt_selentry *e, const dt_vm *v) {
  if (e->labels.present && !dt__selector_match(&e->labels, v->labels.v, v->labels.n)) return false;
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
    snprintf(out, n, "base policy Random, %s", c->calm == 0 ? "halted first" : c->calm == 1 ? "not ready first" : "seeded");
    break;
  default:
    snprintf(out, n, "base policy %s (index %lld)", dt__sort_names[sp->base], (long long)c->v->index);
  }
}

/* ------------------------------------------------------------ output */

typedef struct ctx {
  const dt_manifests *m;
  const dt_pool_opts *o;
  dt_pools *r;
  dt_symtab volumes; /* "ns/name" of PVCs and DataVolumes */
} ctx;



static void put_time(cJSON *o, const char *k, int64_t t) {
  char tmp[40];
  dt__fmt_time(t, tmp, sizeof tmp);
  dt__json_put_str(o, k, tmp);
}

static cJSON *action(cJSON *list, const char *name, const char *reason) {
  cJSON *a = dt__json_put(list, NULL, cJSON_CreateObject());
  dt__json_put_str(a, "name", name);
  dt__json_put_str(a, "reason", reason);
  return a;
}

/* VMs held back without names: so many wait for the burst limit or a halt. */
static void wait_count(cJSON *list, const char *what, int64_t count, const char *reason) {
  cJSON *a = dt__json_put(list, NULL, cJSON_CreateObject());
  dt__json_put_str(a, "for", what);
  dt__json_put_num(a, "count", (double)count);
  dt__json_put_str(a, "reason", reason);
}

static void note(cJSON *pool, const char *fmt, ...) DT_PRINTF(2, 3);
static void note(cJSON *pool, const char *fmt, ...) {
  char msg[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  dt__json_put(cJSON_GetObjectItemCaseSensitive(pool, "notes"), NULL, cJSON_CreateString(msg));
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
  if (p->generation) {
    char rev[600];
    snprintf(rev, sizeof rev, "%s-%lld", p->name, (long long)p->generation);
    cJSON_DeleteItemFromObjectCaseSensitive(labels, "kubevirt.io/vm-pool-revision-name");
    dt__json_put_str(labels, "kubevirt.io/vm-pool-revision-name", rev);
  }
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

static bool current(const dt_vmpool *p, const dt_vm *v) {
  if (v->tmpl_hash) {
    char hex[17];
    return !strcmp(v->tmpl_hash, hash_hex(p->hash, hex));
  }
  return v->vmi_hash_ng[p->name_gen & 3] == p->vmi_hash && v->dvt_hash == p->dvt_hash;
}

static const char *const k_failing[] = {"CrashLoopBackOff", "Unschedulable", "DataVolumeError", "PvcNotFound",
                                        "ErrImagePull", "ImagePullBackOff", NULL};

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

static int run_pool(ctx *x, size_t pi, const size_t *vms, size_t nvms, const int64_t *used, size_t nused,
                    cJSON *out) {
  const dt_vmpool *p = &x->m->vmpools.v[pi];
  int64_t now = x->o->now;
  cJSON *po = dt__json_put(out, NULL, cJSON_CreateObject());
  dt__json_put_str(po, "name", p->name);
  dt__json_put_str(po, "namespace", p->ns);
  char hex[17], why[600], tmp[700];
  dt__json_put_str(po, "templateHash", hash_hex(p->hash, hex));
  cJSON *jcreate = cJSON_CreateArray(), *jdelete = cJSON_CreateArray(), *jupdate = cJSON_CreateArray();
  cJSON *jheal = cJSON_CreateArray(), *jdetached = cJSON_CreateArray(), *jwait = cJSON_CreateArray();
  cJSON *figures = dt__json_put(po, "status", cJSON_CreateObject());
  dt__json_put(po, "create", jcreate);
  dt__json_put(po, "delete", jdelete);
  dt__json_put(po, "update", jupdate);
  dt__json_put(po, "heal", jheal);
  dt__json_put(po, "detached", jdetached);
  dt__json_put(po, "waiting", jwait);
  dt__json_put(po, "notes", cJSON_CreateArray());
  dt_pools_stats *st = &x->r->stats;

  /* Owned VMs: released when their labels leave the selector. */
  pvm *act = dt__calloc(nvms ? nvms : 1, sizeof *act);
  bool *healing = dt__calloc(x->m->vms.n ? x->m->vms.n : 1, 1);
  if (!act || !healing) {
    dt__free(act);
    dt__free(healing);
    return DT_ENOMEM;
  }
  size_t nact = 0, ndel = 0, nready = 0, nunavail = 0;
  for (size_t k = 0; k < nvms; k++) {
    const dt_vm *v = &x->m->vms.v[vms[k]];
    if (!dt__selector_match(&p->selector, v->labels.v, v->nmeta_labels)) {
      action(jdetached, v->name,
             "labels no longer match spec.selector: released from the pool; its name stays taken until it is "
             "deleted or re-attached");
      st->detached++;
      continue;
    }
    act[nact++].v = v;
    ndel += v->deleting != 0;
    nready += !unavailable(v);
    nunavail += unavailable(v);
  }
  int64_t count = (int64_t)nact, diff = p->replicas - count;
  dt__json_put_num(figures, "replicas", (double)p->replicas);
  dt__json_put_num(figures, "current", (double)count);
  dt__json_put_num(figures, "ready", (double)nready);
  dt__json_put_num(figures, "unavailable", (double)nunavail);

  int64_t creates_left = p->burst, deletes_left = p->burst;

  /* 1. Autohealing. */
  size_t nheal = 0;
  if (p->autoheal) {
    for (size_t k = 0; k < nact; k++) {
      const dt_vm *v = act[k].v;
      if (!failing(p, v, now, why, sizeof why)) continue;
      int64_t attempt = 1;
      if (v->healed_at && v->heal_attempt > 0 && now - v->healed_at <= 2 * p->heal_cap) attempt = v->heal_attempt + 1;
      int64_t next = attempt > 1 ? v->healed_at + heal_delay(p, attempt) : now;
      cJSON *a;
      if (next > now || deletes_left <= 0 || creates_left <= 0) {
        snprintf(tmp, sizeof tmp, "%s; attempt %lld waits %s", why, (long long)attempt,
                 next > now ? "for its backoff" : "for the burst limit");
        a = action(jheal, v->name, tmp);
        dt__json_put_str(a, "action", "wait");
      } else {
        snprintf(tmp, sizeof tmp, "%s: delete and re-create (attempt %lld)", why, (long long)attempt);
        a = action(jheal, v->name, tmp);
        dt__json_put_str(a, "action", "recreate");
        dt__json_put(a, "preserveState", cJSON_CreateBool(p->preserve != DT_PRESERVE_DISABLED));
        dt__json_put(a, "object", vm_object(p, v->name, v->index, attempt, now));
        healing[v - x->m->vms.v] = true;
        deletes_left--;
        creates_left--;
        nheal++;
      }
      dt__json_put_num(a, "attempt", (double)attempt);
      dt__json_put_num(a, "failures", (double)v->fail_count);
      put_time(a, "nextAllowed", next > now ? next : now);
      st->heal++;
    }
  }

  int64_t mu_scale = max_unavailable(p, p->replicas > count ? p->replicas : count);
  int64_t mu_update = max_unavailable(p, p->replicas);
  dt__json_put_num(figures, "maxUnavailable", (double)mu_update);
  int rc = 0;

  if (p->paused) {
    note(po, "paused: no scaling or updates (autohealing still runs)");
    goto done;
  }

  /* 2. Scale out: the lowest free indexes, skipping names any VM holds. */
  if (diff > 0) {
    int64_t want = diff < creates_left ? diff : creates_left;
    int64_t idx = 0;
    size_t u = 0;
    for (int64_t made = 0; made < want; idx++) {
      while (u < nused && used[u] < idx) u++;
      if (u < nused && used[u] == idx) continue;
      char name[600];
      snprintf(name, sizeof name, "%s-%lld", p->name, (long long)idx);
      snprintf(tmp, sizeof tmp, "scale out %lld → %lld: lowest free index", (long long)count, (long long)p->replicas);
      cJSON *a = action(jcreate, name, tmp);
      cJSON *reuse = NULL;
      for (size_t d = 0; d < p->ndv; d++) {
        char key[1300];
        snprintf(key, sizeof key, "%s/%s-%lld", p->ns, p->dv[d], (long long)idx);
        if (!dt__sym_find(&x->volumes, key)) continue;
        if (!reuse) reuse = dt__json_put(a, "reusesVolumes", cJSON_CreateArray());
        dt__json_put(reuse, NULL, cJSON_CreateString(strchr(key, '/') + 1));
      }
      dt__json_put(a, "object", vm_object(p, name, idx, 0, now));
      dt_pool_create pc = {pi, idx};
      if (dt__vec_push(&x->r->creates, pc)) rc = DT_ENOMEM;
      made++;
      st->create++;
    }
    if (diff > want) {
      snprintf(tmp, sizeof tmp, "%lld more VMs wait for the next round (burst limit %lld per round)",
               (long long)(diff - want), (long long)p->burst);
      wait_count(jwait, "burst", diff - want, tmp);
      st->waiting++;
    }
  }

  /* 3. Scale in. VMs already being deleted count toward it. */
  if (diff < 0) {
    int64_t remove = -diff - (int64_t)ndel;
    if (ndel) note(po, "%zu VMs are already being deleted and count toward the scale-in", ndel);
    if (remove > 0 && p->scale_in == DT_STRAT_UNMANAGED) {
      note(po, "scaleInStrategy unmanaged: %lld VMs above replicas are left to the user", (long long)remove);
    } else if (remove > 0) {
      bool opp = p->scale_in == DT_STRAT_OPPORTUNISTIC;
      size_t nc = 0;
      pvm *cand = dt__calloc(nact ? nact : 1, sizeof *cand);
      if (!cand) {
        rc = DT_ENOMEM;
        goto done;
      }
      for (size_t k = 0; k < nact; k++) {
        const dt_vm *v = act[k].v;
        if (v->deleting || healing[v - x->m->vms.v] || (opp && !v->halted)) continue;
        cand[nc++].v = v;
      }
      order_vms(cand, nc, &p->scale_sel, x->o->seed ^ dt__hash64(p->name, strlen(p->name)));
      size_t *ord = dt__malloc((nc ? nc : 1) * sizeof *ord);
      dt_hook_vm *hv = dt__calloc(nc ? nc : 1, sizeof *hv);
      const char **lab = NULL;
      bool hooked = false;
      if (!ord || !hv) rc = DT_ENOMEM;
      if (!rc && dt__policy_has(x->o->policy, DT_HOOK_SCALE_IN)) {
        size_t nl = 0;
        for (size_t k = 0; k < nc; k++) nl += cand[k].v->labels.n;
        if (!(lab = dt__calloc(nl ? 2 * nl : 1, sizeof *lab))) rc = DT_ENOMEM;
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
        dt_hook_pool hp = {p->ns, p->name, p->replicas, count, remove};
        if (!rc) hooked = dt__policy_scale_in(x->o->policy, &hp, hv, nc, ord) == 0;
      } else if (!rc) {
        for (size_t k = 0; k < nc; k++) ord[k] = k;
      }
      int64_t left = mu_scale - (int64_t)nunavail;
      size_t take = (size_t)remove < nc ? (size_t)remove : nc;
      for (size_t k = 0; !rc && k < take; k++) {
        const pvm *c = &cand[ord[k]];
        char sel[300];
        why_selected(&p->scale_sel, c, sel, sizeof sel);
        bool free_slot = unavailable(c->v);
        if (deletes_left <= 0 || (!free_slot && left <= 0)) {
          snprintf(tmp, sizeof tmp, "scale in %lld → %lld (%s%s): waits for %s", (long long)count,
                   (long long)p->replicas, sel, hooked ? ", order from the scale_in hook" : "",
                   deletes_left <= 0 ? "the burst limit" : "maxUnavailable");
          cJSON *a = action(jwait, c->v->name, tmp);
          dt__json_put_str(a, "for", deletes_left <= 0 ? "burst" : "maxUnavailable");
          st->waiting++;
          continue;
        }
        if (!free_slot) left--;
        deletes_left--;
        snprintf(tmp, sizeof tmp, "scale in %lld → %lld: %s%s", (long long)count, (long long)p->replicas, sel,
                 hooked ? ", order from the scale_in hook" : "");
        cJSON *a = action(jdelete, c->v->name, tmp);
        dt__json_put(a, "preserveState", cJSON_CreateBool(p->preserve != DT_PRESERVE_DISABLED));
        st->del++;
      }
      if (opp && (size_t)remove > nc) {
        snprintf(tmp, sizeof tmp, "scaleInStrategy opportunistic: %lld more VMs are deleted once they halt",
                 (long long)((size_t)remove - nc));
        wait_count(jwait, "halt", (int64_t)((size_t)remove - nc), tmp);
        st->waiting++;
      }
      dt__free(lab);
      dt__free(hv);
      dt__free(ord);
      dt__free(cand);
    }
  }

  /* 4. Updates, once the pool is at its replica count (as KubeVirt). */
  {
    size_t nout = 0;
    pvm *out_of = dt__calloc(nact ? nact : 1, sizeof *out_of);
    if (!out_of) {
      rc = DT_ENOMEM;
      goto done;
    }
    for (size_t k = 0; k < nact; k++) {
      const dt_vm *v = act[k].v;
      if (v->deleting || healing[v - x->m->vms.v] || current(p, v)) continue;
      out_of[nout++].v = v;
    }
    dt__json_put_num(figures, "outdated", (double)nout);
    if (!nout) {
    } else if (diff != 0) {
      note(po, "%zu outdated VMs wait until the pool is at its replica count", nout);
    } else if (p->update == DT_STRAT_UNMANAGED) {
      note(po, "updateStrategy unmanaged: %zu outdated VMs are left to the user", nout);
    } else {
      order_vms(out_of, nout, &p->update_sel, x->o->seed ^ dt__hash64(p->name, strlen(p->name)));
      int64_t left = mu_update - (int64_t)nunavail;
      int64_t updates_left = p->burst; /* KubeVirt's burst limit holds for updates as for creations */
      for (size_t k = 0; k < nout; k++) {
        const dt_vm *v = out_of[k].v;
        if (updates_left <= 0) {
          snprintf(tmp, sizeof tmp, "template changed; %zu outdated VMs wait for the next round (burst limit %lld per round)",
                   nout - k, (long long)p->burst);
          wait_count(jwait, "burst", (int64_t)(nout - k), tmp);
          st->waiting++;
          break;
        }
        updates_left--;
        bool dv_changed = v->dvt_hash != p->dvt_hash;
        const char *what;
        if (v->halted) {
          what = "apply";
          snprintf(tmp, sizeof tmp, "template changed; halted, the new spec applies at its next start");
        } else if (p->update == DT_STRAT_OPPORTUNISTIC) {
          what = "wait-for-halt";
          snprintf(tmp, sizeof tmp, "template changed; updateStrategy opportunistic: the spec is rewritten and the "
                                    "running VM picks it up when it next restarts");
        } else if (!v->ready) {
          what = dv_changed ? "recreate" : "restart";
          snprintf(tmp, sizeof tmp, "template changed; not ready, so %s without counting against maxUnavailable",
                   dv_changed ? "re-created" : "restarted");
        } else if (left > 0) {
          left--;
          what = dv_changed ? "recreate" : "restart";
          char sel[300];
          why_selected(&p->update_sel, &out_of[k], sel, sizeof sel);
          snprintf(tmp, sizeof tmp, "template changed%s; %s", dv_changed ? " (data volumes too: delete and re-create)" : "", sel);
        } else {
          snprintf(tmp, sizeof tmp, "template changed; waits for maxUnavailable (%lld)", (long long)mu_update);
          cJSON *a = action(jwait, v->name, tmp);
          dt__json_put_str(a, "for", "maxUnavailable");
          st->waiting++;
          continue;
        }
        cJSON *a = action(jupdate, v->name, tmp);
        dt__json_put_str(a, "action", what);
        dt__json_put(a, "object", vm_object(p, v->name, v->index, 0, now)); /* the VM as it is to be */
        st->update++;
      }
    }
    dt__free(out_of);
  }
done:
  dt__free(act);
  dt__free(healing);
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

int dt_pools_run(const dt_manifests *m, const dt_pool_opts *opts, dt_pools **out, dt_error *err) {
  dt__init();
  double t0 = dt__now_ms();
  dt_pool_opts o = opts ? *opts : (dt_pool_opts){0};
  if (!o.now) o.now = 946684800;
  *out = NULL;
  dt_pools *r = dt__calloc(1, sizeof *r);
  if (!r) return dt__err(err, DT_ENOMEM, "out of memory");
  ctx x = {m, &o, r, {0}};
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
  /* Group VMs by owning pool, and the indexes of "<pool>-<i>" names in use
  ** in each pool's namespace (owned or not: detached and foreign VMs keep
  ** their names). Counting sort keeps it linear in the number of VMs. */
  for (size_t i = 0; i < nv && !rc; i++) {
    const dt_vm *v = &m->vms.v[i];
    owner[i] = namer[i] = SIZE_MAX;
    if (v->owner) {
      snprintf(key, sizeof key, "%s/%s", v->ns, v->owner);
      dt_sym s = dt__sym_find(&pools, key);
      if (s) {
        owner[i] = s - 1;
        start[s]++;
      }
    }
    if (v->index >= 0) {
      const char *dash = strrchr(v->name, '-');
      snprintf(key, sizeof key, "%s/%.*s", v->ns, (int)(dash - v->name), v->name);
      dt_sym s = dt__sym_find(&pools, key);
      if (s) {
        namer[i] = s - 1;
        ustart[s]++;
      }
    }
  }
  for (size_t i = 1; i <= np && !rc; i++) {
    start[i] += start[i - 1];
    ustart[i] += ustart[i - 1];
  }
  size_t *fill = dt__calloc(np + 1, sizeof *fill), *ufill = dt__calloc(np + 1, sizeof *ufill);
  if (!fill || !ufill) rc = DT_ENOMEM;
  for (size_t i = 0; i < nv && !rc; i++) {
    if (owner[i] != SIZE_MAX) members[start[owner[i]] + fill[owner[i]]++] = i;
    if (namer[i] != SIZE_MAX) used[ustart[namer[i]] + ufill[namer[i]]++] = m->vms.v[i].index;
  }
  dt__free(fill);
  dt__free(ufill);
  for (size_t i = 0; i < np && !rc; i++)
    qsort(used + ustart[i], ustart[i + 1] - ustart[i], sizeof *used, cmp_index);
  g_sort_m = m;
  if (!rc) qsort(order, np, sizeof *order, pool_cmp_q);

  cJSON *root = r->root = cJSON_CreateObject();
  dt__json_put_str(root, "apiVersion", "dovetail.dev/v1alpha1");
  dt__json_put_str(root, "kind", "PoolActions");
  put_time(root, "now", o.now);
  cJSON *jp = dt__json_put(root, "pools", cJSON_CreateArray());
  if (!jp) rc = DT_ENOMEM;
  for (size_t k = 0; k < np && !rc; k++) {
    size_t i = order[k];
    rc = run_pool(&x, i, members + start[i], start[i + 1] - start[i], used + ustart[i], ustart[i + 1] - ustart[i], jp);
    r->stats.pools++;
  }
  /* Orphans: VMs naming a pool that is not in the input. */
  for (size_t i = 0; i < nv && !rc; i++)
    if (m->vms.v[i].owner && owner[i] == SIZE_MAX) {
      cJSON *notes = cJSON_GetObjectItemCaseSensitive(root, "notes");
      if (!notes) notes = dt__json_put(root, "notes", cJSON_CreateArray());
      snprintf(key, sizeof key, "%s: VirtualMachine %s/%s is owned by VirtualMachinePool %s, which is not in the input",
               m->vms.v[i].file, m->vms.v[i].ns, m->vms.v[i].name, m->vms.v[i].owner);
      dt__json_put(notes, NULL, cJSON_CreateString(key));
    }
  if (!rc && o.policy) {
    const dt_policy_err *pe;
    size_t ne = dt__policy_errors(o.policy, &pe);
    cJSON *je = dt__json_put(root, "policyErrors", cJSON_CreateArray());
    for (size_t i = 0; i < ne; i++) {
      cJSON *e = dt__json_put(je, NULL, cJSON_CreateObject());
      dt__json_put_str(e, "policy", dt__policy_name(o.policy));
      dt__json_put_str(e, "hook", pe[i].hook);
      dt__json_put_str(e, "message", pe[i].message);
      dt__json_put_num(e, "count", (double)pe[i].count);
      dt__json_put(e, "disabled", cJSON_CreateBool(pe[i].disabled));
    }
  }
  cJSON *sum = dt__json_put(root, "summary", cJSON_CreateObject());
  dt__json_put_num(sum, "pools", (double)r->stats.pools);
  dt__json_put_num(sum, "create", (double)r->stats.create);
  dt__json_put_num(sum, "delete", (double)r->stats.del);
  dt__json_put_num(sum, "update", (double)r->stats.update);
  dt__json_put_num(sum, "heal", (double)r->stats.heal);
  dt__json_put_num(sum, "detached", (double)r->stats.detached);
  dt__json_put_num(sum, "waiting", (double)r->stats.waiting);
  if (!rc && (dt__alloc_failed(1) || pools.oom || x.volumes.oom)) rc = DT_ENOMEM;
  dt__symtab_free(&pools);
  dt__symtab_free(&x.volumes);
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

/* ------------------------------------------------------------ render */

static void table_list(dt_buf *b, const cJSON *pool, const char *list, const char *verb) {
  const cJSON *l = cJSON_GetObjectItemCaseSensitive(pool, list);
  for (const cJSON *a = l ? l->child : NULL; a; a = a->next) {
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "name"));
    const char *act = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "action"));
    const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "reason"));
    dt__buf_printf(b, "  %-13s %-28s %s\n", act ? act : verb, name ? name : "-", why ? why : "");
  }
}

char *dt_pools_render(const dt_pools *r, dt_format format, size_t *len) {
  dt_buf b = {0};
  dt__init();
  if (format == DT_FORMAT_TABLE) {
    for (const cJSON *p = cJSON_GetObjectItemCaseSensitive(r->root, "pools")->child; p; p = p->next) {
      const cJSON *s = cJSON_GetObjectItemCaseSensitive(p, "status");
      dt__buf_printf(&b, "pool %s/%s: %d of %d replicas, %d ready, maxUnavailable %d\n",
                     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "namespace")),
                     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "name")),
                     (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(s, "current")),
                     (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(s, "replicas")),
                     (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(s, "ready")),
                     (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(s, "maxUnavailable")));
      table_list(&b, p, "heal", "heal");
      table_list(&b, p, "detached", "detach");
      table_list(&b, p, "create", "create");
      table_list(&b, p, "delete", "delete");
      table_list(&b, p, "update", "update");
      table_list(&b, p, "waiting", "wait");
      const cJSON *n = cJSON_GetObjectItemCaseSensitive(p, "notes");
      for (const cJSON *c = n ? n->child : NULL; c; c = c->next) dt__buf_printf(&b, "  note: %s\n", c->valuestring);
    }
    const dt_pools_stats *s = &r->stats;
    dt__buf_printf(&b, "%zu pools: %zu create, %zu delete, %zu update, %zu heal, %zu detached, %zu waiting\n",
                   s->pools, s->create, s->del, s->update, s->heal, s->detached, s->waiting);
  } else if (format == DT_FORMAT_YAML) {
    /* the VirtualMachines to apply, as plan -o yaml prints NodeClaims: each
    ** creation, update and re-creating heal's object (the actions and their
    ** reasons stay in -o json and the table) */
    cJSON *docs = cJSON_CreateArray();
    dt_buf unowned = {0};
    static const char *const kinds[] = {"create", "update", "heal"};
    for (const cJSON *pl = cJSON_GetObjectItemCaseSensitive(r->root, "pools")->child; pl && docs; pl = pl->next) {
      bool told = false;
      for (size_t k = 0; k < 3; k++) {
        const cJSON *a;
        cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(pl, kinds[k])) {
          const cJSON *obj = cJSON_GetObjectItemCaseSensitive(a, "object");
          if (!obj) continue;
          const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
          const cJSON *own = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(md, "ownerReferences"), 0);
          if (!own || cJSON_GetObjectItemCaseSensitive(own, "uid")) {
            if (!cJSON_AddItemReferenceToArray(docs, (cJSON *)obj)) b.oom = 1;
            continue;
          }
          /* The API server refuses an ownerReference without the owner's
          ** uid: a pool that has none (not read from a cluster) owns
          ** nothing it can apply, and a comment says so. */
          cJSON *copy = cJSON_Duplicate(obj, 1);
          if (!copy || !cJSON_AddItemToArray(docs, copy)) {
            cJSON_Delete(copy);
            b.oom = 1;
            continue;
          }
          cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(copy, "metadata"), "ownerReferences");
          if (!told)
            dt__buf_printf(&unowned,
                           "# VirtualMachinePool %s/%s has no metadata.uid, so its VMs above carry no ownerReferences "
                           "(the API server takes an owner only with its uid); read the pool from the cluster "
                           "(kubectl get -o yaml) to have them owned\n",
                           cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pl, "namespace")),
                           cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pl, "name")));
          told = true;
        }
      }
    }
    if (!docs || (docs->child && dt__yaml_emit(docs, &b))) b.oom = 1;
    if (unowned.oom) b.oom = 1;
    if (unowned.p) dt__buf_puts(&b, unowned.p);
    dt__free(unowned.p);
    cJSON_Delete(docs);
  } else {
    dt__doc_write(r->root, format, &b);
  }
  return dt__buf_take(&b, len);
}

const dt_pool_create *dt__pools_creates(const dt_pools *r, size_t *n) {
  *n = r->creates.n;
  return r->creates.v;
}

void dt_pools_stats_get(const dt_pools *r, dt_pools_stats *out) { *out = r->stats; }

const cJSON *dt__pools_doc(const dt_pools *r) { return r->root; }

void dt_pools_free(dt_pools *r) {
  if (!r) return;
  cJSON_Delete(r->root);
  dt__free(r->creates.v);
  dt__free(r);
}
