/*
** sched.c: Karpenter's provisioning scheduler, first-fit-decreasing.
**
** A run compiles the catalog and the manifests into integer form (interned
** labels, resource vectors in milli-units, per-NodePool lists of compatible
** instance types), then places pods one by one in Karpenter's order:
** sorted by cpu, then memory, descending; each pod tries existing and
** in-flight nodes, then the node claims opened in this run (least loaded
** first), then a new claim from each NodePool by weight. A claim keeps every
** instance type that still fits its pods; at the end it launches the best
** offering of the remaining types. See reference: karpenter.md 1.3-1.5, 1.12.
**
** What makes it fast without changing a decision:
**   - pods with the same requests and constraints form a class; a claim or
**     node that refused a class refuses it for the rest of the run (claims
**     only fill up and narrow), so each (claim, class) pair fails once;
**   - a claim's options are kept in price order and pruned from the front:
**     the types a pod skipped over before the first that fits cannot fit
**     once the pod is added;
**   - a claim that cannot fit even the smallest pod still queued is closed
**     and leaves the search;
**   - a disruption pass's simulations plan overlays of one compiled cluster
**     (dt__plan_run_overlay, at the end of this file): nodes, pod specs and
**     names are compiled once, and a bound pod's use reaches its node
**     through a per-name sum, so a simulation does integer work per node,
**     not string work per pod; the pod names in-flight claims carry
**     (dovetail.dev/pods) are indexed once per cluster, not per simulation;
**   - a policy's score hook is called once per offering and plan, and each
**     claim's best offering by score is found natively (score_pick).
*/
#include "schedule.h"

#include "hooks.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>


#define A(p, n) dt__arena_alloc(&(p)->arena, (n))

/* ------------------------------------------------------------ helpers */

static int res_index(dt_plan *p, const char *name, dt_error *err) {
  /* the base resources are the first four of every plan (plan_begin): most
  ** requests name only them, so they are found without a scan */
  if (p->nres >= 4) switch (name[0]) {
    case 'c': if (!strcmp(name, "cpu")) return DT_R_CPU; break;
    case 'm': if (!strcmp(name, "memory")) return DT_R_MEM; break;
    case 'p': if (!strcmp(name, "pods")) return DT_R_PODS; break;
    case 'e': if (!strcmp(name, "ephemeral-storage")) return DT_R_EPH; break;
    default: break;
    }
  for (uint32_t i = 0; i < p->nres; i++)
    if (strcmp(p->res_names[i], name) == 0) return (int)i;
  if (p->nres == DT_RES_MAX)
    return dt__err(err, DT_ERANGE, "more than %d distinct resource names (at \"%s\")", DT_RES_MAX,
                   name);
  p->res_names[p->nres] = dt__arena_strdup(&p->arena, name);
  if (!p->res_names[p->nres]) return DT_ENOMEM;
  return (int)p->nres++;
}

static int rlist_vec(dt_plan *p, const dt_rlist *r, int64_t *out, dt_error *err) {
  for (size_t i = 0; i < r->n; i++) {
    int k = res_index(p, r->v[i].name, err);
    if (k < 0) return k;
    out[k] = r->v[i].milli;
  }
  return 0;
}

static dt_taint_effect taint_effect(const char *e) {
  return strcmp(e, "PreferNoSchedule") == 0 ? DT_TAINT_PREFER_NO_SCHEDULE
         : strcmp(e, "NoExecute") == 0      ? DT_TAINT_NO_EXECUTE
                                            : DT_TAINT_NO_SCHEDULE;
}

static rt_taint *compile_taints(dt_plan *p, const dt_taint *t, size_t n) {
  rt_taint *out = A(p, (n ? n : 1) * sizeof *out);
  if (!out) return NULL;
  for (size_t i = 0; i < n; i++) {
    out[i].key = dt__sym(&p->syms, t[i].key);
    out[i].value = dt__sym(&p->syms, t[i].value);
    out[i].effect = (uint8_t)taint_effect(t[i].effect);
  }
  return out;
}

/* Whether the pod tolerates every taint. PreferNoSchedule taints block too
** unless prefer_ok: Karpenter avoids them until the last relaxation step. */
static bool tolerates(const dt_plan *p, const dt_podspec *s, const rt_taint *t, uint32_t n, bool prefer_ok,
                      const rt_taint **which) {
  for (uint32_t i = 0; i < n; i++) {
    if (t[i].effect == DT_TAINT_PREFER_NO_SCHEDULE && prefer_ok) continue;
    const char *key = dt__sym_str(&p->syms, t[i].key);
    const char *val = dt__sym_str(&p->syms, t[i].value);
    static const char *eff[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
    bool ok = false;
    for (size_t k = 0; k < s->ntol && !ok; k++) {
      const dt_toleration *o = &s->tol[k];
      if (o->effect && strcmp(o->effect, eff[t[i].effect])) continue;
      if (!o->key) {
        ok = strcmp(o->op, "Exists") == 0;
        continue;
      }
      if (strcmp(o->key, key)) continue;
      ok = strcmp(o->op, "Exists") == 0 || strcmp(o->value, val) == 0;
    }
    if (!ok) {
      if (which) *which = &t[i];
      return false;
    }
  }
  return true;
}

/*
** cluster.x-k8s.io/interruptible is "true" on every spot offering and absent
** on the others (Cluster API): a requirement on it is a requirement on the
** capacity type, so it holds for new claims, existing nodes and DaemonSets
** alike. Returns whether r was one and has been rewritten.
*/
static bool interruptible(dt_plan *p, dt_sym key, dt_op op, const dt_sym *vals, uint32_t n, dt_req *out) {
  if (key != p->k_interruptible) return false;
  bool has_true = false;
  for (uint32_t i = 0; i < n; i++) has_true |= !strcmp(dt__sym_str(&p->syms, vals[i]), "true");
  dt_sym spot = p->ct_sym[DT_CT_SPOT], none = dt__sym(&p->syms, "(no such capacity type)");
  bool want_spot = op == DT_OP_EXISTS || (op == DT_OP_IN && has_true);
  bool no_spot = op == DT_OP_DOESNOTEXIST || (op == DT_OP_NOTIN && has_true);
  if (want_spot)
    dt__req_make(&p->arena, out, p->k_ct, DT_OP_IN, &spot, 1, &p->syms);
  else if (no_spot)
    dt__req_make(&p->arena, out, p->k_ct, DT_OP_NOTIN, &spot, 1, &p->syms);
  else if (op == DT_OP_NOTIN)
    dt__req_make(&p->arena, out, p->k_ct, DT_OP_EXISTS, NULL, 0, &p->syms); /* excludes only other values */
  else
    dt__req_make(&p->arena, out, p->k_ct, DT_OP_IN, &none, 1, &p->syms); /* a value no offering has */
  return true;
}

static int compile_mreq(dt_plan *p, const dt_mreq *m, dt_req *out) {
  dt_sym stack[32];
  dt_sym *vals = m->n <= 32 ? stack : A(p, m->n * sizeof *vals);
  if (!vals) return DT_ENOMEM;
  for (size_t i = 0; i < m->n; i++) vals[i] = dt__sym(&p->syms, m->vals[i]);
  dt_sym key = dt__sym(&p->syms, m->key);
  if (!interruptible(p, key, m->op, vals, (uint32_t)m->n, out))
    dt__req_make(&p->arena, out, key, m->op, vals, (uint32_t)m->n, &p->syms);
  out->min_values = m->min_values;
  return 0;
}

static int16_t slot_of(const dt_plan *p, dt_sym key) {
  return key < p->nkeyslot ? p->keyslot[key] : -1;
}

int16_t dt__slot_of(const dt_plan *p, dt_sym key) { return slot_of(p, key); }

/* Allowed zones and capacity types of a requirement set. */
static void masks(const dt_plan *p, const dt_reqs *r, uint64_t *zmask, uint8_t *ctmask) {
  const dt_req *z = dt__reqs_get(r, p->k_zone), *c = dt__reqs_get(r, p->k_ct);
  *zmask = 0;
  for (uint32_t i = 0; i < p->nzones; i++)
    if (!z || dt__req_has(&p->syms, z, p->zones[i])) *zmask |= 1ull << i;
  *ctmask = 0;
  for (int i = 0; i < DT_CT_N; i++)
    if (!c || dt__req_has(&p->syms, c, p->ct_sym[i])) *ctmask |= (uint8_t)(1u << i);
}

/* An offering a claim may launch: available, in its zones and capacity
** types, and for spot not above the pool's maxPrice. */
static bool off_ok(const rt_off *o, uint64_t zmask, uint8_t ctmask, double spot_max) {
  return o->avail != 0 && (zmask >> o->zone & 1) && (ctmask >> o->ct & 1) && dt__spot_ok(o, spot_max);
}

/* Whether instance type t satisfies the requirements' label constraints and
** has an available offering within the masks. */
bool dt__type_labels_ok(const dt_plan *p, const rt_type *t, const dt_reqs *r) {
  for (uint32_t i = 0; i < r->n; i++) {
    int16_t s = slot_of(p, r->r[i].key);
    if (s < 0) continue;
    if (!dt__req_has(&p->syms, &r->r[i], t->lv[s])) return false;
  }
  return true;
}

bool dt__type_ok(const dt_plan *p, const rt_type *t, const dt_reqs *r, uint64_t zmask, uint8_t ctmask,
                 double spot_max) {
  if (!dt__type_labels_ok(p, t, r)) return false;
  for (uint32_t i = 0; i < t->noff; i++)
    if (off_ok(&t->off[i], zmask, ctmask, spot_max)) return true;
  return false;
}

static bool fits(const dt_plan *p, const int64_t *alloc, const int64_t *used, const int64_t *req) {
  /* Written as a difference: req may be a sentinel as large as INT64_MAX. */
  for (uint32_t r = 0; r < p->nres; r++)
    if (req[r] > alloc[r] - used[r]) return false;
  return true;
}

/* Whether spec si is left out of this plan (an overlay's absent pod). */
static bool spec_absent(const dt_plan *p, uint32_t si) { return p->ov && p->ov->pod[si] == DT_OV_ABSENT; }

static bool is_well_known(const dt_plan *p, dt_sym key) {
  return key == p->k_zone || key == p->k_ct || key == p->k_type || key == p->k_pool ||
         key == p->k_hostname || key == p->k_resv || key == p->k_arch || key == p->k_os ||
         key == p->k_region || slot_of(p, key) >= 0;
}

/*
** Karpenter's Requirements.Compatible with AllowUndefinedWellKnownLabels: a
** custom label the pod requires must be defined by the node side unless the
** pod only excludes it; shared keys must intersect. On failure *bad is the
** pod's offending requirement.
*/
static bool compatible(const dt_plan *p, const dt_reqs *node, const dt_reqs *pod, const dt_req **bad) {
  for (uint32_t i = 0; i < pod->n; i++) {
    const dt_req *in = &pod->r[i];
    const dt_req *ex = dt__reqs_get(node, in->key);
    if (!ex) {
      dt_op op = dt__req_operator(in);
      /* A new node's hostname is a placeholder of its own (as Karpenter's
      ** NodeClaims carry): a pod that names hosts fits existing nodes only. */
      bool names_host = in->key == p->k_hostname && !in->complement;
      if (names_host || (!is_well_known(p, in->key) && op != DT_OP_NOTIN && op != DT_OP_DOESNOTEXIST)) {
        *bad = in;
        return false;
      }
      continue;
    }
    if (!dt__req_intersects(&p->syms, ex, in)) {
      *bad = in;
      return false;
    }
  }
  return true;
}

/*
** The order requirements are named in messages: keys interned before any
** node or pod (the well-known ones, the catalog's, the NodePools') in that
** order, then the others by name. A plan's interning order past the pools
** depends on which nodes its view holds, so a message must not.
*/
static bool key_before(const dt_plan *p, dt_sym a, dt_sym b) {
  bool ea = a < p->early_syms, eb = b < p->early_syms;
  if (ea || eb) return ea && eb ? a < b : ea;
  return strcmp(dt__sym_str(&p->syms, a), dt__sym_str(&p->syms, b)) < 0;
}

void dt__reqs_order(const dt_plan *p, const dt_reqs *r, uint32_t *idx) {
  for (uint32_t i = 0; i < r->n; i++) {
    uint32_t k = i;
    for (; k > 0 && key_before(p, r->r[i].key, r->r[idx[k - 1]].key); k--) idx[k] = idx[k - 1];
    idx[k] = i;
  }
}

/* compatible()'s offending requirement as messages name it: the first, in
** key_before's order, of those the node side refuses. */
static const dt_req *first_incompatible(const dt_plan *p, const dt_reqs *node, const dt_reqs *pod) {
  const dt_req *first = NULL, *bad;
  for (uint32_t i = 0; i < pod->n; i++) {
    const dt_reqs one = {1, &pod->r[i]};
    if (!compatible(p, node, &one, &bad) && (!first || key_before(p, bad->key, first->key))) first = bad;
  }
  return first;
}

static const char *arena_buf(dt_plan *p, dt_buf *b) {
  const char *s = dt__arena_strdup(&p->arena, b->p ? b->p : "");
  dt__free(b->p);
  memset(b, 0, sizeof *b);
  return s;
}

static void note(dt_plan *p, const char *fmt, ...) DT_PRINTF(2, 3);
static void note(dt_plan *p, const char *fmt, ...) {
  char tmp[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  char *s = dt__arena_strdup(&p->arena, tmp);
  if (s && dt__vec_push(&p->notes, s)) p->arena.oom = 1;
}

void dt__pod_name(const dt_plan *p, const rt_pod *pod, char *buf, size_t n) {
  const dt_podspec *s = &p->manifests->pods.v[pod->spec];
  if (pod->ordinal < 0)
    snprintf(buf, n, "%s/%s", s->ns, s->name);
  else
    snprintf(buf, n, "%s/%s-%lld", s->ns, s->name, (long long)pod->ordinal);
}

/* ------------------------------------------------------------ compile */

typedef struct name_key {
  const char *name;
  uint32_t idx;
} name_key;

static int cmp_name_key(const void *a, const void *b) {
  const name_key *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* Types' and zones' positions by name, so that ties in the hot loops compare
** integers. */
static int rank_names(dt_plan *p) {
  size_t n = p->ntypes > p->nzones ? p->ntypes : p->nzones;
  name_key *k = dt__malloc((n ? n : 1) * sizeof *k);
  if (!k) return DT_ENOMEM;
  for (uint32_t i = 0; i < p->ntypes; i++) k[i] = (name_key){p->types[i].src->name, i};
  qsort(k, p->ntypes, sizeof *k, cmp_name_key);
  for (uint32_t i = 0; i < p->ntypes; i++) p->types[k[i].idx].rank = i;
  for (uint32_t i = 0; i < p->nzones; i++) k[i] = (name_key){dt__sym_str(&p->syms, p->zones[i]), i};
  qsort(k, p->nzones, sizeof *k, cmp_name_key);
  for (uint32_t i = 0; i < p->nzones; i++) p->zone_rank[k[i].idx] = (uint8_t)i;
  dt__free(k);
  return 0;
}

static int compile_catalog(dt_plan *p, dt_error *err) {
  const dt_catalog *c = p->catalog;
  if (c->nzones > 64)
    return dt__err(err, DT_ERANGE, "%s: %zu zones; dovetail supports at most 64", c->name, c->nzones);
  p->nzones = (uint32_t)c->nzones;
  for (size_t i = 0; i < c->nzones; i++) p->zones[i] = dt__sym(&p->syms, c->zones[i]);
  /* Type keys: every label key any type carries. */
  for (size_t i = 0; i < c->ntypes; i++)
    for (size_t k = 0; k < c->types[i].labels.n; k++) dt__sym(&p->syms, c->types[i].labels.v[k].key);
  p->nkeyslot = p->syms.n + 1;
  p->keyslot = A(p, p->nkeyslot * sizeof *p->keyslot);
  if (!p->keyslot) return DT_ENOMEM;
  memset(p->keyslot, 0xff, p->nkeyslot * sizeof *p->keyslot);
  p->slot_key = A(p, p->nkeyslot * sizeof *p->slot_key);
  if (!p->slot_key) return DT_ENOMEM;
  for (size_t i = 0; i < c->ntypes; i++)
    for (size_t k = 0; k < c->types[i].labels.n; k++) {
      dt_sym s = dt__sym(&p->syms, c->types[i].labels.v[k].key);
      if (p->keyslot[s] < 0) {
        p->keyslot[s] = (int16_t)p->nslots;
        p->slot_key[p->nslots++] = s;
      }
    }
  p->ntypes = (uint32_t)c->ntypes;
  p->types = A(p, (c->ntypes ? c->ntypes : 1) * sizeof *p->types);
  if (!p->types) return DT_ENOMEM;
  for (size_t i = 0; i < c->ntypes; i++) {
    const dt_ctype *ct = &c->types[i];
    rt_type *t = &p->types[i];
    t->src = ct;
    t->name = dt__sym(&p->syms, ct->name);
    int rc;
    if ((rc = rlist_vec(p, &ct->capacity, t->cap, err)) || (rc = rlist_vec(p, &ct->allocatable, t->alloc, err)))
      return rc;
    t->lv = A(p, (p->nslots ? p->nslots : 1) * sizeof *t->lv);
    t->off = A(p, (ct->noff ? ct->noff : 1) * sizeof *t->off);
    if (!t->lv || !t->off) return DT_ENOMEM;
    for (size_t k = 0; k < ct->labels.n; k++)
      t->lv[p->keyslot[dt__sym(&p->syms, ct->labels.v[k].key)]] = dt__sym(&p->syms, ct->labels.v[k].val);
    t->noff = (uint32_t)ct->noff;
    for (size_t k = 0; k < ct->labels.n; k++) /* for the hooks' snapshot: the last such label */
      if (strstr(ct->labels.v[k].key, "/instance-family")) t->family = ct->labels.v[k].val;
    t->min_price = INFINITY;
    for (size_t k = 0; k < ct->noff; k++) {
      const dt_coffer *o = &ct->off[k];
      rt_off *r = &t->off[k];
      dt_sym z = dt__sym(&p->syms, o->zone);
      for (uint32_t zi = 0; zi < p->nzones; zi++)
        if (p->zones[zi] == z) r->zone = (uint8_t)zi;
      r->ct = (uint8_t)o->ct;
      r->price = o->price;
      r->cap = o->ct == DT_CT_SPOT && ct->od_price >= 0 ? ct->od_price : INFINITY;
      r->avail = o->available;
      r->gone = o->available == 0 ? OFF_CATALOG : OFF_OK;
      r->resv = o->reservation ? dt__sym(&p->syms, o->reservation) : 0;
      if (r->avail != 0 && o->price < t->min_price) t->min_price = o->price;
    }
  }
  /* types by name symbol; the first of a name wins, as a scan would find it */
  p->ntype_at = p->syms.n;
  p->type_at = A(p, (p->ntype_at ? p->ntype_at : 1) * sizeof *p->type_at);
  if (!p->type_at) return DT_ENOMEM;
  memset(p->type_at, 0xff, p->ntype_at * sizeof *p->type_at);
  for (uint32_t i = p->ntypes; i-- > 0;) p->type_at[p->types[i].name] = (int32_t)i;
  return rank_names(p);
}

static const rt_type *find_type(const dt_plan *p, const char *name);

/* The offerings as policy hooks see them, in catalog order. */
static int build_snapshot(dt_plan *p) {
  size_t n = 0;
  p->off_base = A(p, (p->ntypes + 1) * sizeof *p->off_base);
  if (!p->off_base) return DT_ENOMEM;
  for (uint32_t t = 0; t < p->ntypes; t++) {
    p->off_base[t] = (uint32_t)n;
    n += p->types[t].noff;
  }
  p->snapshot = A(p, (n ? n : 1) * sizeof *p->snapshot);
  if (!p->snapshot) return DT_ENOMEM;
  for (uint32_t t = 0; t < p->ntypes; t++) {
    const rt_type *ty = &p->types[t];
    const char *family = ty->family;
    for (uint32_t o = 0; o < ty->noff; o++) {
      const rt_off *of = &ty->off[o];
      p->snapshot[p->off_base[t] + o] = (dt_hook_offer){
          ty->src->name, dt__sym_str(&p->syms, p->zones[of->zone]), dt__ct_names[of->ct],
          of->resv ? dt__sym_str(&p->syms, of->resv) : NULL, of->price, ty->src->od_price, of->avail,
          ty->alloc[DT_R_CPU], ty->alloc[DT_R_MEM] / 1000, 0, family, ty->src->arch};
    }
  }
  p->nsnapshot = n;
  return 0;
}

static int use_policy(dt_plan *p, dt_policy *pol) {
  for (size_t i = 0; i < p->policies.n; i++)
    if (p->policies.v[i] == pol) return 0;
  if (dt__vec_push(&p->policies, pol)) return DT_ENOMEM;
  dt__policy_clear_errors(pol);
  /* a failed snapshot leaves the hooks unused: defaults apply */
  dt__policy_round(pol, p->opts.now, p->opts.seed, p->snapshot, p->nsnapshot);
  return 0;
}

/* The price hook of the plan's policy re-prices every offering once. */
static int apply_price_hook(dt_plan *p) {
  dt_policy *pol = p->opts.policy;
  if (!dt__policy_has(pol, DT_HOOK_PRICE)) return 0;
  int rc = use_policy(p, pol);
  if (rc) return rc;
  double *out = dt__malloc((p->nsnapshot ? p->nsnapshot : 1) * sizeof *out);
  if (!out) return DT_ENOMEM;
  if (dt__policy_price(pol, out) == 0) {
    for (uint32_t t = 0; t < p->ntypes; t++) {
      rt_type *ty = &p->types[t];
      ty->min_price = INFINITY;
      for (uint32_t o = 0; o < ty->noff; o++) {
        double v = out[p->off_base[t] + o];
        if (isnan(v)) {
          if (ty->off[o].avail != 0) ty->off[o].gone = OFF_PRICE_HOOK;
          ty->off[o].avail = 0;
        } else
          ty->off[o].price = v;
        if (ty->off[o].avail != 0 && ty->off[o].price < ty->min_price) ty->min_price = ty->off[o].price;
      }
    }
  }
  dt__free(out);
  return 0;
}

/* Unavailable offerings still within their TTL at opts.now. */
static int apply_marks(dt_plan *p) {
  const dt_manifests *m = p->manifests;
  int64_t now = p->opts.now;
  for (size_t i = 0; i < m->marks.n; i++) {
    const dt_mark *mk = &m->marks.v[i];
    if (mk->expires <= now) continue; /* expired marks vanish by the clock */
    rt_type *t = (rt_type *)find_type(p, mk->instance_type);
    dt_sym z = dt__sym_find(&p->syms, mk->zone);
    bool hit = false;
    for (uint32_t o = 0; t && z && o < t->noff; o++)
      if (t->off[o].ct == mk->ct && p->zones[t->off[o].zone] == z) {
        if (t->off[o].avail != 0) t->off[o].gone = OFF_MARK;
        t->off[o].avail = 0;
        hit = true;
      }
    if (!hit) {
      note(p, "%s: UnavailableOffering %s names no offering in the catalog (%s %s %s)", mk->file, mk->name,
           dt__ct_names[mk->ct], mk->instance_type, mk->zone);
      continue;
    }
    if (dt__vec_push(&p->marks, (uint32_t)i)) return DT_ENOMEM;
    /* the cheapest available offering may have changed */
    t->min_price = INFINITY;
    for (uint32_t o = 0; o < t->noff; o++)
      if (t->off[o].avail != 0 && t->off[o].price < t->min_price) t->min_price = t->off[o].price;
  }
  return 0;
}

static const rt_type *find_type(const dt_plan *p, const char *name) {
  dt_sym s = dt__sym_find(&p->syms, name);
  return s && s < p->ntype_at && p->type_at[s] >= 0 ? &p->types[p->type_at[s]] : NULL;
}

/* Sort keys carry what the comparison needs: qsort has no context argument
** in C11 and the core keeps no global state. */
typedef struct price_key {
  double price;
  uint32_t rank; /* the type's position by name */
  uint32_t idx;
} price_key;

static int cmp_price_key(const void *a, const void *b) {
  const price_key *x = a, *y = b;
  if (x->price != y->price) return x->price < y->price ? -1 : 1;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Order types[0..n) (indices into p->types) by price[i], then name. */
static int sort_by_price(dt_plan *p, uint32_t *types, const double *price, uint32_t n) {
  if (n < 2) return 0;
  price_key *k = dt__malloc(n * sizeof *k);
  if (!k) return DT_ENOMEM;
  for (uint32_t i = 0; i < n; i++) k[i] = (price_key){price[i], p->types[types[i]].rank, types[i]};
  qsort(k, n, sizeof *k, cmp_price_key);
  for (uint32_t i = 0; i < n; i++) types[i] = k[i].idx;
  dt__free(k);
  return 0;
}

static int cmp_pool(const void *a, const void *b) {
  const rt_pool *x = a, *y = b;
  if (x->src->weight != y->src->weight) return x->src->weight > y->src->weight ? -1 : 1;
  return -strcmp(x->src->name, y->src->name); /* ties: name descending, as Karpenter */
}

static int compile_mreqs(dt_plan *p, const dt_mreqs *m, dt_reqs *out) {
  for (size_t k = 0; k < m->n; k++) {
    dt_req q;
    if (compile_mreq(p, &m->v[k], &q)) return DT_ENOMEM;
    dt__reqs_add(&p->arena, &p->syms, out, &q, out);
  }
  return 0;
}

static int compile_selector_kvs(dt_plan *p, const dt_kvs *kv, dt_reqs *out) {
  for (size_t k = 0; k < kv->n; k++) {
    dt_req q;
    dt_sym v = dt__sym(&p->syms, kv->v[k].val), key = dt__sym(&p->syms, kv->v[k].key);
    if (!interruptible(p, key, DT_OP_IN, &v, 1, &q)) dt__req_make(&p->arena, &q, key, DT_OP_IN, &v, 1, &p->syms);
    dt__reqs_add(&p->arena, &p->syms, out, &q, out);
  }
  return 0;
}

static rt_port *compile_ports(dt_plan *p, const dt_podspec *s) {
  rt_port *out = A(p, (s->nports ? s->nports : 1) * sizeof *out);
  for (size_t i = 0; out && i < s->nports; i++)
    out[i] = (rt_port){s->ports[i].port, dt__sym(&p->syms, s->ports[i].proto), dt__sym(&p->syms, s->ports[i].ip)};
  return out;
}

static bool port_conflict(const dt_plan *p, const rt_port *a, const rt_port *b) {
  if (a->port != b->port || a->proto != b->proto) return false;
  dt_sym any = dt__sym_find(&p->syms, "0.0.0.0");
  return a->ip == b->ip || a->ip == any || b->ip == any;
}

static bool ports_conflict(const dt_plan *p, const rt_port *a, uint32_t na, const rt_port *b, size_t nb) {
  for (uint32_t i = 0; i < na; i++)
    for (size_t k = 0; k < nb; k++)
      if (port_conflict(p, &a[i], &b[k])) return true;
  return false;
}

/*
** DaemonSet overhead per (NodePool, instance type), as Karpenter's daemon
** overhead groups: a DaemonSet counts when it tolerates the pool's taints
** (PreferNoSchedule implicitly) and one of its node-affinity alternatives is
** compatible with the pool's requirements and the type. Claims then pack
** against allocatable minus that overhead.
*/
static int daemon_overhead(dt_plan *p, rt_pool *pl, uint64_t zm, uint8_t cm, dt_error *err) {
  const dt_manifests *m = p->manifests;
  pl->eff = A(p, (p->ntypes ? p->ntypes : 1) * sizeof *pl->eff);
  if (!pl->eff) return DT_ENOMEM;
  for (uint32_t t = 0; t < p->ntypes; t++) pl->eff[t] = p->types[t].alloc;
  if (!m->daemonsets.n) return 0;
  int64_t(*over)[DT_RES_MAX] = A(p, p->ntypes * sizeof *over);
  if (!over) return DT_ENOMEM;
  bool any = false;
  for (size_t d = 0; d < m->daemonsets.n; d++) {
    const dt_podspec *ds = &m->daemonsets.v[d];
    if (!tolerates(p, ds, pl->taints, pl->ntaints, true, NULL)) continue;
    int64_t req[DT_RES_MAX] = {0};
    int rc = rlist_vec(p, &ds->requests, req, err);
    if (rc) return rc;
    size_t nalt = ds->nterms ? ds->nterms : 1;
    bool used = false;
    for (uint32_t t = 0; t < pl->ntypes; t++) {
      const rt_type *ty = &p->types[pl->types[t]];
      bool ok = false;
      for (size_t a = 0; a < nalt && !ok; a++) {
        dt_reqs r = {0};
        compile_selector_kvs(p, &ds->node_selector, &r);
        if (ds->nterms && compile_mreqs(p, &ds->terms[a], &r)) return DT_ENOMEM;
        const dt_req *bad;
        if (!compatible(p, &pl->reqs, &r, &bad)) continue;
        dt_reqs mr;
        dt__reqs_merge(&p->arena, &p->syms, &pl->reqs, &r, &mr);
        uint64_t z2;
        uint8_t c2;
        masks(p, &mr, &z2, &c2);
        ok = dt__type_ok(p, ty, &mr, z2 & zm, c2 & cm, pl->spot_max);
      }
      if (!ok) continue;
      for (uint32_t r = 0; r < DT_RES_MAX; r++) over[pl->types[t]][r] += req[r];
      used = any = true;
    }
    if (used && ds->nports) {
      rt_port *np = A(p, (pl->nds_ports + ds->nports) * sizeof *np);
      rt_port *dp = compile_ports(p, ds);
      if (!np || !dp) return DT_ENOMEM;
      if (pl->nds_ports) memcpy(np, pl->ds_ports, pl->nds_ports * sizeof *np);
      memcpy(np + pl->nds_ports, dp, ds->nports * sizeof *np);
      pl->ds_ports = np;
      pl->nds_ports += (uint32_t)ds->nports;
    }
  }
  if (!any) return 0;
  for (uint32_t t = 0; t < pl->ntypes; t++) {
    uint32_t ti = pl->types[t];
    int64_t *e = A(p, sizeof(int64_t) * DT_RES_MAX);
    if (!e) return DT_ENOMEM;
    for (uint32_t r = 0; r < DT_RES_MAX; r++) e[r] = p->types[ti].alloc[r] - over[ti][r];
    pl->eff[ti] = e;
  }
  return 0;
}

static int compile_pools(dt_plan *p, dt_error *err) {
  const dt_manifests *m = p->manifests;
  p->npools = (uint32_t)m->pools.n;
  p->pools = A(p, (p->npools ? p->npools : 1) * sizeof *p->pools);
  if (!p->pools) return DT_ENOMEM;
  for (uint32_t i = 0; i < p->npools; i++) p->pools[i].src = &m->pools.v[i];
  qsort(p->pools, p->npools, sizeof *p->pools, cmp_pool);
  for (uint32_t i = 0; i < p->npools; i++) {
    rt_pool *pl = &p->pools[i];
    const dt_nodepool *np = pl->src;
    pl->name = dt__sym(&p->syms, np->name);
    pl->replicas = np->replicas;
    pl->spot_max = np->spot_max >= 0 ? np->spot_max : INFINITY;
    pl->policy = p->opts.policy;
    if (np->policy) {
      pl->policy = NULL;
      for (size_t k = 0; k < p->opts.npool_policies; k++)
        if (!strcmp(p->opts.pool_policy_names[k], np->policy)) pl->policy = p->opts.pool_policies[k];
      /* A missing policy costs this pool its hooks, never the plan: the
      ** built-in defaults decide for it and the note says why. */
      if (!pl->policy)
        note(p, "%s: NodePool %s: metadata.annotations.dovetail.dev/policy: no policy named \"%s\" was loaded (is it "
             "in the policy directory, and does it pass dovetail check?); the built-in defaults decide for this pool",
             np->file, np->name, np->policy);
    }
    dt_reqs r = {0};
    for (size_t k = 0; k < np->reqs.n; k++) {
      dt_req q;
      if (compile_mreq(p, &np->reqs.v[k], &q)) return DT_ENOMEM;
      dt__reqs_add(&p->arena, &p->syms, &r, &q, &r);
    }
    for (size_t k = 0; k < np->labels.n; k++) {
      dt_req q;
      dt_sym v = dt__sym(&p->syms, np->labels.v[k].val);
      dt__req_make(&p->arena, &q, dt__sym(&p->syms, np->labels.v[k].key), DT_OP_IN, &v, 1, &p->syms);
      dt__reqs_add(&p->arena, &p->syms, &r, &q, &r);
    }
    dt_req q;
    dt__req_make(&p->arena, &q, p->k_pool, DT_OP_IN, &pl->name, 1, &p->syms);
    dt__reqs_add(&p->arena, &p->syms, &r, &q, &r);
    pl->reqs = r;
    pl->ntaints = (uint32_t)np->ntaints;
    pl->taints = compile_taints(p, np->taints, np->ntaints);
    uint64_t zm;
    uint8_t cm;
    masks(p, &r, &zm, &cm);
    pl->types = A(p, (p->ntypes ? p->ntypes : 1) * sizeof *pl->types);
    if (!pl->types || !pl->taints) return DT_ENOMEM;
    for (uint32_t t = 0; t < p->ntypes; t++)
      if (dt__type_ok(p, &p->types[t], &r, zm, cm, pl->spot_max)) pl->types[pl->ntypes++] = t;
    {
      double *pr = dt__malloc((pl->ntypes ? pl->ntypes : 1) * sizeof *pr);
      if (!pr) return DT_ENOMEM;
      for (uint32_t t = 0; t < pl->ntypes; t++) pr[t] = p->types[pl->types[t]].min_price;
      int src = sort_by_price(p, pl->types, pr, pl->ntypes);
      dt__free(pr);
      if (src) return src;
    }
    if (pl->ntypes == 0) note(p, "NodePool %s: no instance type in the catalog satisfies its requirements", np->name);
    for (size_t k = 0; k < np->reqs.n; k++) pl->has_min_values |= np->reqs.v[k].min_values > 0;
    for (uint32_t k = 0; k < pl->ntaints; k++) pl->has_prefer_taint |= pl->taints[k].effect == DT_TAINT_PREFER_NO_SCHEDULE;
    p->any_prefer_taint |= pl->has_prefer_taint;
    for (uint32_t t = 0; t < pl->ntypes; t++) {
      const rt_type *ty = &p->types[pl->types[t]];
      for (uint32_t o = 0; o < ty->noff; o++)
        if (off_ok(&ty->off[o], zm, cm, pl->spot_max)) {
          pl->has_reserved |= ty->off[o].ct == DT_CT_RESERVED;
          p->universe_z |= 1ull << ty->off[o].zone;
          p->universe_c |= (uint8_t)(1u << ty->off[o].ct);
        }
    }
    int drc = daemon_overhead(p, pl, zm, cm, err);
    if (drc) return drc;
    for (uint32_t k = 0; k < DT_RES_MAX; k++) pl->remaining[k] = INT64_MAX;
    pl->nodes_remaining = -1;
    for (size_t k = 0; k < np->limits.n; k++) {
      if (strcmp(np->limits.v[k].name, "nodes") == 0) {
        pl->nodes_remaining = np->limits.v[k].milli / 1000;
        pl->has_limits = true;
        continue;
      }
      int ri = res_index(p, np->limits.v[k].name, err);
      if (ri < 0) return ri;
      pl->remaining[ri] = np->limits.v[k].milli;
      pl->has_limits = true;
    }
  }
  if (!p->cl) p->early_syms = p->syms.n; /* an overlay has its cluster's: what every view interns alike */
  return 0;
}

/* Nodes in the order existing capacity is tried: initialized first, then by
** name; nodes of the same name in input order. */
static int cmp_node(const void *a, const void *b) {
  const rt_node *x = a, *y = b;
  if (x->src->initialized != y->src->initialized) return x->src->initialized ? -1 : 1;
  int c = strcmp(x->src->name, y->src->name);
  return c ? c : (x->src > y->src) - (x->src < y->src);
}

/*
** One node compiled on its own: interned labels, allocatable (its own, or
** its instance type's), taints, zone and capacity type. What depends on the
** plan's NodePools (which pool owns it) is left to the caller. *skip is set
** when the node has neither allocatable nor a known instance type.
*/
typedef struct node_facts {
  dt_sym own;     /* its first karpenter.sh/nodepool label (static pools count it) */
  dt_sym pool;    /* its last one (the pool it belongs to) */
  int32_t type;   /* the instance type its last instance-type label names, -1 none */
  const char *itype;
  bool skip;
} node_facts;

/* A node of a compiled cluster (dt__cluster_new, at the end of this file). */
typedef struct cnode {
  rt_node node; /* compiled in the base; pool, use and ports are each plan's */
  node_facts f;
  bool may_pair; /* a NodeClaim that may stand for a Node of the view (by nodeName or providerID) */
} cnode;

/* What the pods bound to one node name use, summed (a node takes the use of
** its name and of its alias). */
typedef struct name_use {
  int64_t used[DT_RES_MAX];
  int64_t pods;  /* sum of the pods' counts */
  int64_t specs; /* pod specs */
  bool listed;   /* in used_names */
} name_use;

typedef struct claim_on {
  uint32_t node; /* cluster node id */
  int32_t next;  /* the next entry of the same name, -1 none */
} claim_on;

struct dt_cluster {
  dt_plan *base; /* the catalog and NodePools compiled; every name below interned */
  DT_VEC(cnode) nodes;
  DT_VEC(uint32_t) byname; /* node ids by name, ties by id */
  const dt_podspec *pods;
  uint32_t npods;
  rt_spec *specs;         /* per pod, in the base's arena */
  dt_sym *pod_node;       /* per pod: its node name's symbol (dt__cluster_bind keeps it) */
  DT_VEC(name_use) use;   /* by node name symbol */
  DT_VEC(dt_sym) used_names; /* symbols with a use entry, each once */
  /* the few pods a plan must visit one by one (spec ids, ascending) */
  DT_VEC(uint32_t) rc_missing; /* RuntimeClass not in the input (a note) */
  DT_VEC(uint32_t) termed;     /* spread or pod (anti-)affinity terms: topology groups */
  DT_VEC(uint32_t) owned;      /* workloads: replicas, selectors */
  bool ported;                 /* some pod has host ports */
  bool has_pods;
  /* Pod names the nodes carry (dovetail.dev/pods), each with the nodes that
  ** name it: built on the first overlay that looks one up, extended as nodes
  ** are added, so a simulation does not intern every nominated name again. */
  dt_symtab claimed;
  DT_VEC(int32_t) claimed_head; /* per name symbol: its first entry in claimed_on, -1 none */
  DT_VEC(claim_on) claimed_on;
  uint32_t claimed_upto;        /* nodes [0, claimed_upto) are in the index */
};

static int compile_node(dt_plan *p, const dt_node *n, rt_node *r, node_facts *f, dt_error *err) {
  memset(r, 0, sizeof *r);
  memset(f, 0, sizeof *f);
  f->type = -1;
  const char *own = dt__kv_get(n->labels.v, n->labels.n, DT_L_NODEPOOL);
  f->own = own ? dt__sym(&p->syms, own) : 0;
  r->src = n;
  r->name = dt__sym(&p->syms, n->name);
  r->nlabels = (uint32_t)n->labels.n;
  r->lk = A(p, (n->labels.n + 1) * sizeof *r->lk);
  r->lval = A(p, (n->labels.n + 1) * sizeof *r->lval);
  if (!r->lk || !r->lval) return DT_ENOMEM;
  const char *itype = NULL, *pool = NULL;
  for (size_t k = 0; k < n->labels.n; k++) {
    r->lk[k] = dt__sym(&p->syms, n->labels.v[k].key);
    r->lval[k] = dt__sym(&p->syms, n->labels.v[k].val);
    if (!strcmp(n->labels.v[k].key, DT_L_INSTANCE_TYPE)) itype = n->labels.v[k].val;
    if (!strcmp(n->labels.v[k].key, DT_L_NODEPOOL)) pool = n->labels.v[k].val;
  }
  f->itype = itype;
  f->pool = pool ? dt__sym(&p->syms, pool) : 0;
  const rt_type *t = itype ? find_type(p, itype) : NULL;
  f->type = t ? (int32_t)(t - p->types) : -1;
  if (n->allocatable.n) {
    int rc = rlist_vec(p, &n->allocatable, r->alloc, err);
    if (rc) return rc;
    if (!r->alloc[DT_R_PODS]) r->alloc[DT_R_PODS] = 110 * 1000;
  } else if (!t) {
    f->skip = true;
    return 0;
  } else {
    memcpy(r->alloc, t->alloc, sizeof r->alloc);
  }
  r->ntaints = (uint32_t)n->ntaints;
  r->taints = compile_taints(p, n->taints, n->ntaints);
  if (!r->taints) return DT_ENOMEM;
  r->zone = r->ct = -1;
  for (uint32_t k = 0; k < r->nlabels; k++) {
    if (r->lk[k] == p->k_zone)
      for (uint32_t z = 0; z < p->nzones; z++)
        if (p->zones[z] == r->lval[k]) r->zone = (int)z;
    if (r->lk[k] == p->k_ct)
      for (int c = 0; c < DT_CT_N; c++)
        if (p->ct_sym[c] == r->lval[k]) r->ct = c;
  }
  return 0;
}

/* A static pool counts every NodeClaim and Node of its own, whatever the
** catalog knows of them; those being deleted only against limits. */
static void count_static(dt_plan *p, const dt_node *n, dt_sym own) {
  for (uint32_t k = 0; own && k < p->npools; k++)
    if (p->pools[k].replicas >= 0 && p->pools[k].name == own) {
      p->pools[k].static_all++;
      p->pools[k].static_have += !n->deleting;
    }
}

static void skipped_node(dt_plan *p, const dt_node *n, const char *itype) {
  note(p, "%s: %s %s has no status.allocatable and %s; skipped", n->file, n->kind, n->name,
       itype ? "its instance type is not in the catalog" : "no instance-type label");
}

static void node_pool(dt_plan *p, rt_node *r, dt_sym pool) {
  r->pool = -1;
  for (uint32_t k = 0; pool && k < p->npools; k++)
    if (p->pools[k].name == pool) r->pool = (int)k;
}

/* What the nodes, sorted, hold of reservations and of their pools' limits;
** type[i] is node i's instance type (-1 unknown), or NULL to look it up. */
static void charge_nodes(dt_plan *p, const int32_t *type) {
  /* Nodes and in-flight claims in a capacity reservation hold one unit each:
  ** a plan never launches into a reservation more than it has left. */
  for (uint32_t i = 0; i < p->nnodes; i++) {
    const rt_node *r = &p->nodes[i];
    for (uint32_t k = 0; k < r->nlabels; k++) {
      if (r->lk[k] != p->k_resv) continue;
      bool found = false;
      for (uint32_t t = 0; t < p->ntypes && !found; t++)
        for (uint32_t o = 0; o < p->types[t].noff && !found; o++) {
          rt_off *of = &p->types[t].off[o];
          if (of->ct == DT_CT_RESERVED && of->resv == r->lval[k]) {
            if (of->avail > 0) of->avail--;
            found = true;
          }
        }
    }
  }
  /* Existing nodes count against their pool's limits (by capacity when we
  ** know the type, else by allocatable). */
  for (uint32_t i = 0; i < p->nnodes; i++) {
    rt_node *r = &p->nodes[i];
    if (r->pool < 0) continue;
    rt_pool *pl = &p->pools[r->pool];
    bool limited = false;
    for (uint32_t k = 0; k < p->nres; k++) limited |= pl->remaining[k] != INT64_MAX;
    if (limited) {
      const rt_type *t = NULL;
      if (type)
        t = type[i] >= 0 ? &p->types[type[i]] : NULL;
      else
        for (uint32_t k = 0; k < r->nlabels; k++)
          if (r->lk[k] == p->k_type) t = find_type(p, dt__sym_str(&p->syms, r->lval[k]));
      for (uint32_t k = 0; k < p->nres; k++)
        if (pl->remaining[k] != INT64_MAX) pl->remaining[k] -= t ? t->cap[k] : r->alloc[k];
    }
    if (pl->nodes_remaining > 0) pl->nodes_remaining--;
  }
}

static int compile_nodes_overlay(dt_plan *p, dt_error *err);

static int compile_nodes(dt_plan *p, dt_error *err) {
  if (p->ov) return compile_nodes_overlay(p, err);
  const dt_manifests *m = p->manifests;
  p->nodes = A(p, (m->nodes.n ? m->nodes.n : 1) * sizeof *p->nodes);
  if (!p->nodes) return DT_ENOMEM;
  /* A Node that a NodeClaim in the input already stands for is the same
  ** capacity: keep the Node (it is registered), drop the claim. */
  int32_t *paired = A(p, (m->nodes.n ? m->nodes.n : 1) * sizeof *paired);
  if (!paired || dt__claims_paired(m, paired)) return DT_ENOMEM;
  for (size_t i = 0; i < m->nodes.n; i++) {
    const dt_node *n = &m->nodes.v[i];
    if (paired[i] >= 0) continue;
    rt_node *r = &p->nodes[p->nnodes];
    node_facts f;
    int rc = compile_node(p, n, r, &f, err);
    if (rc) return rc;
    count_static(p, n, f.own);
    if (f.skip) {
      skipped_node(p, n, f.itype);
      continue;
    }
    node_pool(p, r, f.pool);
    p->nnodes++;
  }
  qsort(p->nodes, p->nnodes, sizeof *p->nodes, cmp_node);
  charge_nodes(p, NULL);
  return 0;
}

/* Node index by name symbol: a node's name, or the node name a NodeClaim
** carries; the first node of a name in the plan's order wins. Built on
** first use. */
static int32_t node_by_sym(dt_plan *p, dt_sym s) {
  if (!p->node_at) {
    uint32_t n = 0;
    dt_sym *alias = A(p, (p->nnodes ? p->nnodes : 1) * sizeof *alias);
    if (!alias) return -1;
    for (uint32_t i = 0; i < p->nnodes; i++) {
      const dt_node *d = p->nodes[i].src;
      alias[i] = d->node_name ? dt__sym(&p->syms, d->node_name) : 0;
      if (p->nodes[i].name > n) n = p->nodes[i].name;
      if (alias[i] > n) n = alias[i];
    }
    p->node_at = A(p, ((size_t)n + 1) * sizeof *p->node_at);
    if (!p->node_at) return -1;
    p->nnode_at = n + 1;
    for (uint32_t i = 0; i <= n; i++) p->node_at[i] = -1;
    for (uint32_t i = p->nnodes; i-- > 0;) { /* the first node of a name wins */
      if (alias[i]) p->node_at[alias[i]] = (int32_t)i;
      p->node_at[p->nodes[i].name] = (int32_t)i;
    }
  }
  return s && s < p->nnode_at ? p->node_at[s] : -1;
}

static int32_t node_by_name(dt_plan *p, const char *name) {
  node_by_sym(p, 0); /* the index first: it interns the claims' node names */
  return node_by_sym(p, dt__sym_find(&p->syms, name));
}

static uint64_t node_zmask(const rt_node *n) { return n->zone >= 0 ? 1ull << n->zone : 0; }
static uint8_t node_cmask(const rt_node *n) { return n->ct >= 0 ? (uint8_t)(1u << n->ct) : 0; }

typedef struct pod_key {
  int64_t cpu, mem, created;
  rt_pod pod;
} pod_key;

/* Karpenter's queue order: cpu descending, memory descending, creation
** time, then input order (Karpenter uses the UID, which we do not have). */
static int cmp_pod(const void *a, const void *b) {
  const pod_key *x = a, *y = b;
  if (x->cpu != y->cpu) return x->cpu > y->cpu ? -1 : 1;
  if (x->mem != y->mem) return x->mem > y->mem ? -1 : 1;
  if (x->created != y->created) return x->created < y->created ? -1 : 1;
  if (x->pod.seq != y->pod.seq) return x->pod.seq < y->pod.seq ? -1 : 1;
  return x->pod.ordinal < y->pod.ordinal ? -1 : x->pod.ordinal > y->pod.ordinal;
}

static int cmp_u8_weight(const dt_podterm *t, uint8_t a, uint8_t b) {
  return t[a].weight != t[b].weight ? (t[a].weight > t[b].weight ? -1 : 1) : (a < b ? -1 : 1);
}

/* Indices of weighted terms, heaviest first (stable). */
static uint8_t *weight_order(dt_plan *p, const dt_podterm *t, size_t n) {
  uint8_t *o = A(p, n ? n : 1);
  if (!o) return NULL;
  for (size_t i = 0; i < n && i < 255; i++) o[i] = (uint8_t)i;
  for (size_t i = 1; i < n && i < 255; i++)
    for (size_t k = i; k > 0 && cmp_u8_weight(t, o[k], o[k - 1]) < 0; k--) {
      uint8_t x = o[k];
      o[k] = o[k - 1];
      o[k - 1] = x;
    }
  return o;
}

static uint8_t *pref_order(dt_plan *p, const dt_prefterm *t, size_t n) {
  uint8_t *o = A(p, n ? n : 1);
  if (!o) return NULL;
  for (size_t i = 0; i < n && i < 255; i++) o[i] = (uint8_t)i;
  for (size_t i = 1; i < n && i < 255; i++)
    for (size_t k = i; k > 0 && t[o[k]].weight > t[o[k - 1]].weight; k--) {
      uint8_t x = o[k];
      o[k] = o[k - 1];
      o[k - 1] = x;
    }
  return o;
}

static int cmp_label(const void *a, const void *b) {
  const dt_sym *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* The group of one term (spread or affinity); -1 when its key is not modelled. */
static int term_group(dt_plan *p, const rt_spec *s, int kind, const char *key, const dt_selector *sel,
                      char *const *ns, size_t nns, char *const *mlk, size_t nmlk) {
  const char *vals[32];
  size_t n = 0;
  for (size_t i = 0; i < nmlk && n < 16; i++)
    for (uint32_t k = 0; k < s->nlabels; k++)
      if (!strcmp(dt__sym_str(&p->syms, s->lk[k]), mlk[i])) {
        vals[2 * n] = mlk[i];
        vals[2 * n + 1] = dt__sym_str(&p->syms, s->lv[k]);
        n++;
      }
  int g = dt__topo_group(p, kind, key, sel, ns, nns, s->ns, vals, n);
  if (g == -1)
    note(p, "%s: pod %s/%s: topology key %s is not modelled (zone, hostname and capacity type are); the constraint is ignored",
         s->src->file, s->src->ns, s->src->name, key);
  return g;
}

/* Create every group any pod refers to, so each spec's selected-by list is complete. */
static int build_groups(dt_plan *p) {
  /* an overlay visits only the pods with terms */
  uint32_t n = p->ov ? (uint32_t)p->cl->termed.n : p->nspecs;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t i = p->ov ? p->cl->termed.v[k] : k;
    const rt_spec *s = &p->specs[i];
    const dt_podspec *d = s->src;
    if (spec_absent(p, i)) continue;
    for (size_t t = 0; t < d->nspread; t++)
      if (term_group(p, s, TG_SPREAD, d->spread[t].key, &d->spread[t].sel, NULL, 0, d->spread[t].match_label_keys,
                     d->spread[t].nmlk) == DT_ENOMEM)
        return DT_ENOMEM;
    const dt_podterm *lists[4] = {d->aff, d->paff, d->anti, d->panti};
    size_t ns[4] = {d->naff, d->npaff, d->nanti, d->npanti};
    for (int l = 0; l < 4; l++)
      for (size_t t = 0; t < ns[l]; t++)
        if (term_group(p, s, l < 2 ? TG_AFF : TG_ANTI, lists[l][t].key, &lists[l][t].sel, lists[l][t].ns,
                       lists[l][t].nns, NULL, 0) == DT_ENOMEM)
          return DT_ENOMEM;
  }
  if (p->ov && !p->cl->termed.n) return 0; /* no pod has terms: no group, now or later, and every nsel stays 0 */
  return dt__topo_select(p);
}

static bool spec_selected_by(const rt_spec *s, uint32_t g) {
  for (uint32_t i = 0; i < s->nsel; i++)
    if (s->sel[i] == g) return true;
  return false;
}

/*
** The class of a spec under a relaxation state: its requirements, its
** topology constraints and its tolerations, interned by signature so pods
** with the same constraints share failure caches. Returns the class index
** or a negative error.
*/
static int class_for(dt_plan *p, uint32_t si, const rt_relax *rx) {
  rt_spec *s = &p->specs[si];
  const dt_podspec *d = s->src;
  if (!rx->term && !rx->paff && !rx->panti && !rx->pref && !rx->anyway && !rx->tol_pref && s->base_class >= 0)
    return s->base_class;
  dt_reqs reqs = {0};
  compile_selector_kvs(p, &d->node_selector, &reqs);
  if (d->vm_arch && !dt__kv_get(d->node_selector.v, d->node_selector.n, DT_L_ARCH)) {
    /* KubeVirt's virt-launcher pod selects the VMI's architecture (the
    ** cluster's default when unset); the VMI's own nodeSelector wins */
    const char *a = *d->vm_arch ? d->vm_arch : p->manifests->vm_default_arch ? p->manifests->vm_default_arch : "amd64";
    dt_kvs one = {1, &(dt_kv){(char *)DT_L_ARCH, (char *)a}};
    compile_selector_kvs(p, &one, &reqs);
  }
  if (d->nterms && compile_mreqs(p, &d->terms[rx->term], &reqs)) return DT_ENOMEM;
  for (uint32_t v = 0; v < s->nvol; v++)
    if (compile_mreqs(p, s->vol[v], &reqs)) return DT_ENOMEM;
  if (rx->pref < d->npref && compile_mreqs(p, &d->pref[s->pref_order[rx->pref]].reqs, &reqs)) return DT_ENOMEM;
  /* Topology constraints. */
  rt_tc tcs[256];
  uint32_t ntc = 0;
  uint32_t anyway_seen = 0;
  for (size_t t = 0; t < d->nspread && ntc < 256; t++) {
    if (d->spread[t].anyway && anyway_seen++ < rx->anyway) continue;
    int g = term_group(p, s, TG_SPREAD, d->spread[t].key, &d->spread[t].sel, NULL, 0, d->spread[t].match_label_keys,
                       d->spread[t].nmlk);
    if (g == DT_ENOMEM) return g;
    if (g < 0) continue;
    tcs[ntc++] = (rt_tc){(uint32_t)g, TG_SPREAD, spec_selected_by(s, (uint32_t)g), false, d->spread[t].max_skew,
                         d->spread[t].min_domains};
  }
  struct {
    const dt_podterm *t;
    size_t n;
    const uint8_t *order;
    uint8_t dropped;
    int kind;
    bool required;
  } lists[4] = {{d->aff, d->naff, NULL, 0, TG_AFF, true},
                {d->paff, d->npaff, s->paff_order, rx->paff, TG_AFF, false},
                {d->anti, d->nanti, NULL, 0, TG_ANTI, true},
                {d->panti, d->npanti, s->panti_order, rx->panti, TG_ANTI, false}};
  for (int l = 0; l < 4; l++)
    for (size_t k = lists[l].dropped; k < lists[l].n && ntc < 256; k++) {
      const dt_podterm *t = &lists[l].t[lists[l].order ? lists[l].order[k] : k];
      int g = term_group(p, s, lists[l].kind, t->key, &t->sel, t->ns, t->nns, NULL, 0);
      if (g == DT_ENOMEM) return g;
      if (g < 0) continue;
      tcs[ntc++] = (rt_tc){(uint32_t)g, (uint8_t)lists[l].kind, spec_selected_by(s, (uint32_t)g),
                           lists[l].required && lists[l].kind == TG_ANTI, 0, 0};
    }
  bool inverse = false;
  for (uint32_t i = 0; i < s->nsel; i++) inverse |= p->groups.v[s->sel[i]].kind == TG_ANTI;
  /* Signature. */
  dt_buf sig = {0};
  dt__buf_printf(&sig, "%d|", rx->tol_pref);
  for (uint32_t r = 0; r < p->nres; r++) dt__buf_printf(&sig, "%lld,", (long long)s->req[r]);
  dt__buf_putc(&sig, '|');
  for (uint32_t k = 0; k < reqs.n; k++) {
    dt__req_describe(&p->syms, &reqs.r[k], &sig);
    dt__buf_putc(&sig, ';');
  }
  dt__buf_putc(&sig, '|');
  for (size_t k = 0; k < d->ntol; k++)
    dt__buf_printf(&sig, "%s/%s/%s/%s;", d->tol[k].key ? d->tol[k].key : "", d->tol[k].op, d->tol[k].value,
                   d->tol[k].effect ? d->tol[k].effect : "");
  dt__buf_putc(&sig, '|');
  for (uint32_t k = 0; k < ntc; k++)
    dt__buf_printf(&sig, "%u/%u/%d/%d/%d/%d;", tcs[k].group, tcs[k].kind, tcs[k].self, tcs[k].owner, tcs[k].max_skew,
                   tcs[k].min_domains);
  dt__buf_putc(&sig, '|');
  for (uint32_t k = 0; k < s->nsel; k++) dt__buf_printf(&sig, "%u,", s->sel[k]);
  dt__buf_putc(&sig, '|');
  for (uint32_t k = 0; k < s->nports; k++)
    dt__buf_printf(&sig, "%d/%u/%u,", s->ports[k].port, s->ports[k].proto, s->ports[k].ip);
  /* Pods whose requests, requirements, tolerations, topology constraints,
  ** selecting groups and host ports agree share a class, whatever spec
  ** they come from: the class is all the scheduler reads. */
  dt_sym cs = sig.p && !sig.oom ? dt__sym(&p->class_sigs, sig.p) : 0;
  dt__free(sig.p);
  if (!cs) return DT_ENOMEM;
  while (p->class_of_sig.n <= cs)
    if (dt__vec_push(&p->class_of_sig, UINT32_MAX)) return DT_ENOMEM;
  if (p->class_of_sig.v[cs] != UINT32_MAX) return (int)p->class_of_sig.v[cs];
  rt_class c;
  memset(&c, 0, sizeof c);
  memcpy(c.req, s->req, sizeof c.req);
  c.reqs = reqs;
  c.spec = d;
  c.spec_idx = si;
  c.tol_pref = rx->tol_pref;
  c.ntc = ntc;
  c.tc = A(p, (ntc ? ntc : 1) * sizeof *c.tc);
  c.pool_ok = A(p, p->npools ? p->npools : 1);
  if (!c.tc || !c.pool_ok) return DT_ENOMEM;
  memcpy(c.tc, tcs, ntc * sizeof *tcs);
  memset(c.pool_ok, 0xff, p->npools);
  masks(p, &reqs, &c.elig_z, &c.elig_c);
  c.topo = ntc > 0 || inverse;
  p->class_of_sig.v[cs] = (uint32_t)p->classes.n;
  if (dt__vec_push(&p->classes, c)) return DT_ENOMEM;
  return (int)p->classes.n - 1;
}

/*
** How many pods of each workload still need a node: its replicas, less the
** pods in the input that its selector matches in its namespace (a running
** Deployment is not planned again, as its ReplicaSet controller counts),
** and nothing for a ReplicaSet whose owning Deployment is in the input
** (the Deployment counts them once). A Pod's own entry is 1. Arena-owned.
*/
static const dt_podspec *g_ns_specs; /* qsort has no context argument in C11 */
static int ns_cmp(const void *a, const void *b) {
  const dt_podspec *x = &g_ns_specs[*(const uint32_t *)a], *y = &g_ns_specs[*(const uint32_t *)b];
  int c = strcmp(x->ns, y->ns);
  return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

static int64_t *replicas_wanted(dt_plan *p) {
  const dt_manifests *m = p->manifests;
  int64_t *want = A(p, (p->nspecs ? p->nspecs : 1) * sizeof *want);
  if (!want) return NULL;
  dt_symtab owners = {0}; /* "Deployment/ns/name" of the workloads in the input */
  uint32_t *byns = NULL;
  size_t nplain = 0;
  /* an overlay visits only the workloads: every other spec wants its count */
  uint32_t nvisit = p->ov ? (uint32_t)p->cl->owned.n : p->nspecs;
  for (uint32_t k = 0; k < nvisit; k++) {
    uint32_t si = p->ov ? p->cl->owned.v[k] : k;
    const dt_podspec *d = &m->pods.v[si];
    want[si] = spec_absent(p, si) ? 0 : d->count;
    if (spec_absent(p, si)) continue;
    char k[800];
    if (d->owner && !strncmp(d->owner, "Deployment/", 11)) {
      snprintf(k, sizeof k, "Deployment/%s/%s", d->ns, d->name);
      dt__sym(&owners, k);
    }
  }
  for (uint32_t k = 0; k < nvisit; k++) {
    uint32_t si = p->ov ? p->cl->owned.v[k] : k;
    const dt_podspec *d = &m->pods.v[si];
    if (!d->owner || spec_absent(p, si)) continue;
    char k[800];
    if (d->parent) {
      snprintf(k, sizeof k, "Deployment/%s/%s", d->ns, d->parent + 11);
      if (dt__sym_find(&owners, k)) {
        want[si] = 0;
        continue;
      }
    }
    if (!d->sel.present) continue;
    if (!byns) { /* the Pods, sorted by namespace, built once for the first selector */
      byns = dt__malloc((p->nspecs ? p->nspecs : 1) * sizeof *byns);
      if (!byns) {
        owners.oom = 1;
        break;
      }
      for (uint32_t q = 0; q < p->nspecs; q++)
        if (!m->pods.v[q].owner && !spec_absent(p, q)) byns[nplain++] = q;
      g_ns_specs = m->pods.v;
      qsort(byns, nplain, sizeof *byns, ns_cmp);
    }
    size_t lo = 0, hi = nplain; /* the first Pod of d's namespace */
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (strcmp(m->pods.v[byns[mid]].ns, d->ns) < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
    int64_t have = 0;
    for (size_t q = lo; q < nplain && have < d->count && !strcmp(m->pods.v[byns[q]].ns, d->ns); q++) {
      const dt_podspec *o = &m->pods.v[byns[q]];
      if (dt__selector_match(&d->sel, o->labels.v, o->labels.n)) have++;
    }
    want[si] = d->count - have;
  }
  bool oom = owners.oom;
  dt__symtab_free(&owners);
  dt__free(byns);
  return oom ? NULL : want;
}

/*
** Volume topology, as Karpenter's: a pod's PersistentVolumeClaim bound to a
** PersistentVolume brings the volume's required node affinity; one not yet
** bound whose StorageClass waits for the first consumer brings the class's
** allowed topologies. Either is a term the pod's node must also meet (a
** pod whose volume is in us-east-1d is planned in us-east-1d). The index
** in topo is built from m->topo ("KIND:key" -> index + 1).
*/
static int volume_topology(dt_plan *p, const dt_symtab *topo, const dt_podspec *d, rt_spec *s) {
  const dt_manifests *m = p->manifests;
  if (!d->npvcs || !m->topo.n) return 0;
  if (!(s->vol = A(p, d->npvcs * sizeof *s->vol))) return DT_ENOMEM;
  for (size_t i = 0; i < d->npvcs; i++) {
    char k[700];
    snprintf(k, sizeof k, "PVC:%s/%s", d->ns, d->pvcs[i]);
    dt_sym c = dt__sym_find(topo, k);
    if (!c) continue; /* not in the input: nothing known of where it is */
    const dt_topo_obj *pvc = &m->topo.v[c - 1], *where = NULL;
    if (pvc->volume) {
      snprintf(k, sizeof k, "PV:%s", pvc->volume);
      dt_sym v = dt__sym_find(topo, k);
      where = v ? &m->topo.v[v - 1] : NULL;
    } else if (pvc->storage_class) {
      snprintf(k, sizeof k, "SC:%s", pvc->storage_class);
      dt_sym v = dt__sym_find(topo, k);
      where = v && m->topo.v[v - 1].wait_for_consumer ? &m->topo.v[v - 1] : NULL;
    }
    if (where && where->term.n) s->vol[s->nvol++] = &where->term;
  }
  return 0;
}

/* One pod spec compiled on its own: requests (with its RuntimeClass's
** overhead), interned labels sorted by key, term orders, host ports.
** *rc_missing tells that its RuntimeClass is not in the input. */
static int compile_spec(dt_plan *p, const dt_podspec *d, rt_spec *s, bool *rc_missing, dt_error *err) {
  const dt_manifests *m = p->manifests;
  int rc;
  s->src = d;
  s->base_class = -1;
  *rc_missing = false;
  if ((rc = rlist_vec(p, &d->requests, s->req, err))) return rc;
  if (d->runtime_class && !d->has_overhead) {
    bool found = false;
    for (size_t k = 0; k < m->runtime_classes.n && !found; k++)
      if (!strcmp(m->runtime_classes.v[k].name, d->runtime_class)) {
        int64_t o[DT_RES_MAX] = {0};
        if ((rc = rlist_vec(p, &m->runtime_classes.v[k].overhead, o, err))) return rc;
        for (uint32_t r = 0; r < DT_RES_MAX; r++) s->req[r] += o[r];
        found = true;
      }
    *rc_missing = !found;
  }
  s->ns = dt__sym(&p->syms, d->ns);
  s->nlabels = (uint32_t)d->labels.n;
  dt_sym *kv = A(p, (d->labels.n ? d->labels.n : 1) * 2 * sizeof *kv);
  s->lk = A(p, (d->labels.n ? d->labels.n : 1) * sizeof *s->lk);
  s->lv = A(p, (d->labels.n ? d->labels.n : 1) * sizeof *s->lv);
  if (!kv || !s->lk || !s->lv) return DT_ENOMEM;
  for (size_t k = 0; k < d->labels.n; k++) {
    kv[2 * k] = dt__sym(&p->syms, d->labels.v[k].key);
    kv[2 * k + 1] = dt__sym(&p->syms, d->labels.v[k].val);
  }
  qsort(kv, d->labels.n, 2 * sizeof *kv, cmp_label);
  for (size_t k = 0; k < d->labels.n; k++) {
    s->lk[k] = kv[2 * k];
    s->lv[k] = kv[2 * k + 1];
  }
  s->paff_order = weight_order(p, d->paff, d->npaff);
  s->panti_order = weight_order(p, d->panti, d->npanti);
  s->pref_order = pref_order(p, d->pref, d->npref);
  s->nports = (uint32_t)d->nports;
  s->ports = compile_ports(p, d);
  if (!s->paff_order || !s->panti_order || !s->pref_order || !s->ports) return DT_ENOMEM;
  return 0;
}

static void runtime_class_note(dt_plan *p, const dt_podspec *d) {
  note(p, "%s: pod %s/%s: RuntimeClass %s is not in the input; its overhead is not counted", d->file, d->ns,
       d->name, d->runtime_class);
}

/* Volume topology of every spec, indexed by m->topo. */
static int volume_topologies(dt_plan *p, rt_spec *specs, uint32_t n) {
  const dt_manifests *m = p->manifests;
  int rc = 0;
  dt_symtab topo = {0}; /* "PVC:ns/name", "PV:name", "SC:name" -> index + 1 in m->topo */
  for (size_t i = 0; i < m->topo.n && !topo.oom; i++) {
    char k[700];
    snprintf(k, sizeof k, "%s:%s", m->topo.v[i].kind, m->topo.v[i].key);
    dt__sym(&topo, k); /* kinds and names are unique (duplicates are refused), so object i is symbol i + 1 */
  }
  for (uint32_t si = 0; si < n && !rc; si++) rc = volume_topology(p, &topo, specs[si].src, &specs[si]);
  if (topo.oom) rc = DT_ENOMEM;
  dt__symtab_free(&topo);
  return rc;
}

static int cluster_specs(dt_plan *p);
static void overlay_use(dt_plan *p, bool *scan, size_t *bound);

/*
** The pod names the plan's nodes carry (dovetail.dev/pods): a name is on
** the last node in plan order that carries it. A plan interns its nodes'
** names; an overlay whose nodes carry its cluster's very lists looks them up
** in the cluster's index instead (claims_ix_cluster), which holds the same
** names with every node that carries each, so the answer is the same.
*/
typedef struct claims_ix {
  dt_symtab own;                /* a plan's own index: name -> its node */
  DT_VEC(int32_t) own_node;
  const struct dt_cluster *cl;  /* or the cluster's index, through p->ov_at */
  bool any;                     /* some node carries a name */
} claims_ix;

static int claims_ix_cluster(dt_plan *p, claims_ix *ix);

static int claims_ix_build(dt_plan *p, claims_ix *ix) {
  memset(ix, 0, sizeof *ix);
  if (p->ov) {
    int rc = claims_ix_cluster(p, ix);
    if (rc || ix->cl) return rc;
  }
  for (uint32_t i = 0; i < p->nnodes; i++)
    for (size_t k = 0; k < p->nodes[i].src->npods; k++) {
      dt_sym sy = dt__sym(&ix->own, p->nodes[i].src->pods[k]);
      while (ix->own_node.n <= sy)
        if (dt__vec_push(&ix->own_node, -1)) break;
      if (sy && sy < ix->own_node.n) ix->own_node.v[sy] = (int32_t)i;
    }
  ix->any = ix->own.n > 0;
  return 0;
}

/* The plan node that carries pod `name`, -1 none. */
static int32_t claims_ix_node(const dt_plan *p, const claims_ix *ix, const char *name) {
  if (!ix->cl) {
    dt_sym c = dt__sym_find(&ix->own, name);
    return c && c < ix->own_node.n ? ix->own_node.v[c] : -1;
  }
  const dt_cluster *cl = ix->cl;
  dt_sym c = dt__sym_find(&cl->claimed, name);
  int32_t best = -1;
  for (int32_t e = c && c < cl->claimed_head.n ? cl->claimed_head.v[c] : -1; e >= 0; e = cl->claimed_on.v[e].next) {
    int32_t at = p->ov_at[cl->claimed_on.v[e].node];
    if (at > best) best = at;
  }
  return best;
}

static void claims_ix_free(claims_ix *ix) {
  dt__symtab_free(&ix->own);
  dt__free(ix->own_node.v);
}

static int compile_pods(dt_plan *p, dt_error *err) {
  const dt_manifests *m = p->manifests;
  int rc = 0;
  if (p->ov) {
    if ((rc = cluster_specs(p))) return rc;
  } else {
    p->nspecs = (uint32_t)m->pods.n;
    p->specs = A(p, (m->pods.n ? m->pods.n : 1) * sizeof *p->specs);
    if (!p->specs) return DT_ENOMEM;
    for (uint32_t si = 0; si < p->nspecs; si++) p->specs[si].src = &m->pods.v[si];
    if ((rc = volume_topologies(p, p->specs, p->nspecs))) return rc;
    for (uint32_t si = 0; si < p->nspecs; si++) {
      bool missing;
      if ((rc = compile_spec(p, &m->pods.v[si], &p->specs[si], &missing, err))) return rc;
      if (missing) runtime_class_note(p, &m->pods.v[si]);
    }
  }
  if ((rc = build_groups(p))) return rc;

  int64_t *want = replicas_wanted(p);
  if (!want) return DT_ENOMEM;

  /* Pods an in-flight claim already carries (dovetail.dev/pods). */
  claims_ix claimed;
  if ((rc = claims_ix_build(p, &claimed))) return rc;
  /* An overlay's nodes take their bound pods' use from the per-name sums;
  ** the pods themselves are visited only when something else needs them. */
  bool scan = true;
  if (p->ov) overlay_use(p, &scan, &p->bound_already);
  DT_VEC(rt_pod) pods = {0};
  for (uint32_t si = 0; si < p->nspecs && !rc; si++) {
    if (p->ov && p->ov->pod[si] != DT_OV_PENDING && (!scan || p->ov->pod[si] == DT_OV_ABSENT)) continue;
    const dt_podspec *d = &m->pods.v[si];
    rt_spec *s = &p->specs[si];
    if (p->ov ? p->ov->pod[si] == DT_OV_BOUND : d->node_name != NULL) {
      int32_t n = p->ov ? node_by_sym(p, p->cl->pod_node[si]) : node_by_name(p, d->node_name);
      if (n < 0) {
        note(p, "%s: pod %s/%s is bound to node %s, which is not in the input; ignored", d->file, d->ns, d->name,
             d->node_name);
      } else {
        rt_node *nd = &p->nodes[n];
        if (!p->ov)
          for (uint32_t r = 0; r < DT_RES_MAX; r++) nd->used[r] += s->req[r] * d->count;
        for (uint32_t k = 0; k < s->nports && !rc; k++)
          if (dt__vec_push(&nd->ports, s->ports[k])) rc = DT_ENOMEM;
        if (!rc) rc = dt__topo_record(p, si, NULL, (uint32_t)n, node_zmask(nd), node_cmask(nd), (int32_t)d->count, -1);
      }
      if (!p->ov) p->bound_already += (size_t)d->count;
      continue;
    }
    rt_relax none = {0};
    s->base_class = -1; /* an overlay's specs are the cluster's: the last plan's class means nothing here */
    int ci = class_for(p, si, &none);
    if (ci < 0) {
      rc = ci;
      break;
    }
    s->base_class = ci;
    int64_t nwant = p->ov && !d->owner ? d->count : want[si]; /* an overlay's want holds only its workloads */
    for (int64_t o = 0; o < nwant; o++) {
      rt_pod pod = {(uint32_t)ci, si, d->owner ? o : -1, d->seq};
      if (claimed.any) {
        char name[600];
        dt__pod_name(p, &pod, name, sizeof name);
        int32_t cn = claims_ix_node(p, &claimed, name);
        if (cn >= 0) {
          rt_node *nd = &p->nodes[cn];
          for (uint32_t r = 0; r < DT_RES_MAX; r++) nd->used[r] += s->req[r];
          for (uint32_t k = 0; k < s->nports && !rc; k++)
            if (dt__vec_push(&nd->ports, s->ports[k])) rc = DT_ENOMEM;
          if (!rc)
            rc = dt__topo_record(p, si, &p->classes.v[ci], (uint32_t)cn, node_zmask(nd), node_cmask(nd), 1,
                                 pod.ordinal);
          p->bound_already++;
          continue;
        }
      }
      if (dt__vec_push(&pods, pod)) {
        rc = DT_ENOMEM;
        break;
      }
    }
  }
  claims_ix_free(&claimed);
  if (rc) {
    dt__free(pods.v);
    return rc;
  }
  p->npods = (uint32_t)pods.n;
  p->pods = A(p, (pods.n ? pods.n : 1) * sizeof *p->pods);
  pod_key *keys = dt__malloc((pods.n ? pods.n : 1) * sizeof *keys);
  if (!p->pods || !keys) {
    dt__free(keys);
    dt__free(pods.v);
    return DT_ENOMEM;
  }
  for (uint32_t i = 0; i < p->npods; i++) {
    const rt_spec *s = &p->specs[pods.v[i].spec];
    keys[i] = (pod_key){s->req[DT_R_CPU], s->req[DT_R_MEM], s->src->created, pods.v[i]};
  }
  qsort(keys, p->npods, sizeof *keys, cmp_pod);
  for (uint32_t i = 0; i < p->npods; i++) p->pods[i] = keys[i].pod;
  dt__free(keys);
  dt__free(pods.v);
  return 0;
}

/* ---------------------------------------------------------- scheduling */

enum { FIT = 0, FAIL_NOW = 1, FAIL_EVER = 2 };

typedef struct run {
  dt_plan *p;
  bool reserved_error; /* the last attempt hit a ReservedOfferingError */
  DT_VEC(rt_claim *) order; /* open claims, (pods, idx) ascending */
  int64_t *minsuf;          /* per queue position: component-wise min of the rest */
  int64_t failmin[DT_RES_MAX]; /* min over pods that failed in this pass */
  uint32_t pos, qlen;
  /* the last topology failure, for the unschedulable reason */
  int32_t topo_fail_class;
  uint32_t topo_fail;
} run;

static bool pool_ok(dt_plan *p, rt_class *c, uint32_t pi) {
  if (c->pool_ok[pi] < 0) {
    rt_pool *pl = &p->pools[pi];
    const dt_req *bad;
    c->pool_ok[pi] = (int8_t)(tolerates(p, c->spec, pl->taints, pl->ntaints, c->tol_pref, NULL) &&
                              compatible(p, &pl->reqs, &c->reqs, &bad) &&
                              !ports_conflict(p, p->specs[c->spec_idx].ports, p->specs[c->spec_idx].nports,
                                              pl->ds_ports, pl->nds_ports));
  }
  return c->pool_ok[pi];
}

static int node_fits(run *R, uint32_t ni, rt_class *c, uint64_t *Z, uint8_t *C) {
  dt_plan *p = R->p;
  rt_node *n = &p->nodes[ni];
  if (n->src->unschedulable) return FAIL_EVER;
  /* A registered Node that is not Ready takes no new pods (the kubelet's
  ** not-ready taint); an in-flight NodeClaim is not Ready yet by nature. */
  if (!n->src->ready && !n->src->claim_name) return FAIL_EVER;
  if (!fits(p, n->alloc, n->used, c->req)) return FAIL_EVER;
  if (!tolerates(p, c->spec, n->taints, n->ntaints, c->tol_pref, NULL)) return FAIL_EVER;
  for (uint32_t i = 0; i < c->reqs.n; i++) {
    const dt_req *r = &c->reqs.r[i];
    dt_sym v = 0;
    for (uint32_t k = 0; k < n->nlabels; k++)
      if (n->lk[k] == r->key) v = n->lval[k];
    if (!dt__req_has(&p->syms, r, v)) return FAIL_EVER;
  }
  const rt_spec *s = &p->specs[c->spec_idx];
  if (ports_conflict(p, s->ports, s->nports, n->ports.v, n->ports.n)) return FAIL_EVER;
  *Z = node_zmask(n);
  *C = node_cmask(n);
  if (c->topo) {
    uint32_t why;
    int t = dt__topo_check(p, c, ni, Z, C, &why);
    if (t) return t;
  }
  return FIT;
}

static bool class_failed(rt_class *c, uint32_t idx) {
  uint32_t w = idx / 64;
  return w < c->nfail_words && (c->claim_failed[w] >> (idx % 64) & 1);
}

static int set_failed(rt_class *c, uint32_t idx) {
  uint32_t w = idx / 64;
  if (w >= c->nfail_words) {
    uint32_t nw = w + 1 > c->nfail_words * 2 ? w + 1 : c->nfail_words * 2;
    uint64_t *b = dt__realloc(c->claim_failed, nw * sizeof *b);
    if (!b) return DT_ENOMEM;
    memset(b + c->nfail_words, 0, (nw - c->nfail_words) * sizeof *b);
    c->claim_failed = b;
    c->nfail_words = nw;
  }
  c->claim_failed[w] |= 1ull << (idx % 64);
  return 0;
}

static bool claim_before(const rt_claim *a, const rt_claim *b) {
  return a->pods.n != b->pods.n ? a->pods.n < b->pods.n : a->idx < b->idx;
}

/* Karpenter's strict minValues: the options must keep N distinct values. */
bool dt__min_values_ok(const dt_plan *p, const dt_reqs *r, const uint32_t *opt, uint32_t n) {
  for (uint32_t i = 0; i < r->n; i++) {
    int32_t need = r->r[i].min_values;
    if (need <= 0) continue;
    dt_sym key = r->r[i].key;
    int16_t slot = slot_of(p, key);
    dt_sym seen[64];
    int32_t nseen = 0;
    for (uint32_t k = 0; k < n && nseen < need; k++) {
      dt_sym v = key == p->k_type ? p->types[opt[k]].name : slot >= 0 ? p->types[opt[k]].lv[slot] : 0;
      if (!v) continue;
      bool dup = false;
      for (int32_t q = 0; q < nseen && !dup; q++) dup = seen[q] == v;
      if (!dup && nseen < 64) seen[nseen++] = v;
    }
    if (nseen < need) return false;
  }
  return true;
}

/* Options of k that fit used + req under requirements nr and masks. */
static uint32_t filter_options(dt_plan *p, const rt_pool *pl, const uint32_t *opt, uint32_t nopt, const int64_t *used,
                               const int64_t *req, const dt_reqs *nr, uint64_t zm, uint8_t cm, uint32_t *out) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < nopt; i++) {
    const rt_type *t = &p->types[opt[i]];
    if (fits(p, pl->eff[opt[i]], used, req) && dt__type_ok(p, t, nr, zm, cm, pl->spot_max)) {
      if (out) out[n] = opt[i];
      n++;
    }
  }
  return n;
}

/*
** Karpenter's reservation manager (reservationmanager.go, nodeclaim.go
** offeringsToReserve): a claim holds one unit of every reserved offering any
** of its options could launch on, because the launch, not the scheduler,
** picks the type; units it can no longer use are released. Strict mode: a
** claim that could use a reservation but holds none (the units are held by
** other claims), or that would lose all the reservations it held, is a
** ReservedOfferingError — the pod waits for the next plan rather than falling
** through to another offering or a lower-weight NodePool.
** Returns 0 and sets *ok, or DT_ENOMEM.
*/
static int reserve(dt_plan *p, rt_claim *k, const uint32_t *opt, uint32_t nopt, uint64_t zm, uint8_t cm, bool *ok) {
  const rt_pool *pl = &p->pools[k->pool];
  *ok = true;
  if (!pl->has_reserved) return 0;
  DT_VEC(uint32_t) want = {0};
  bool compatible_exists = false;
  for (uint32_t i = 0; i < nopt; i++) {
    const rt_type *t = &p->types[opt[i]];
    for (uint32_t o = 0; o < t->noff; o++) {
      const rt_off *of = &t->off[o];
      if (of->ct != DT_CT_RESERVED || !off_ok(of, zm, cm, pl->spot_max)) continue;
      compatible_exists = true;
      if (dt__vec_push(&want, p->off_base[opt[i]] + o)) {
        dt__free(want.v);
        return DT_ENOMEM;
      }
    }
  }
  /* What k keeps, and what it can newly take. */
  DT_VEC(uint32_t) next = {0};
  int rc = 0;
  for (size_t i = 0; i < want.n && !rc; i++) {
    uint32_t g = want.v[i];
    bool has = false;
    for (size_t h = 0; h < k->held.n && !has; h++) has = k->held.v[h] == g;
    rt_off *of = NULL;
    for (uint32_t t = 0; t < p->ntypes && !of; t++)
      if (g >= p->off_base[t] && g < p->off_base[t] + p->types[t].noff) of = &p->types[t].off[g - p->off_base[t]];
    if (has || of->avail < 0 || of->avail - of->held > 0)
      if (dt__vec_push(&next, g)) rc = DT_ENOMEM;
  }
  if (!rc && ((compatible_exists && !next.n) || (k->had_reserved && !next.n))) *ok = false;
  if (!rc && *ok) {
    /* release what is no longer compatible, take what is new */
    for (size_t h = 0; h < k->held.n; h++) {
      bool keep = false;
      for (size_t i = 0; i < next.n && !keep; i++) keep = next.v[i] == k->held.v[h];
      if (keep) continue;
      for (uint32_t t = 0; t < p->ntypes; t++)
        if (k->held.v[h] >= p->off_base[t] && k->held.v[h] < p->off_base[t] + p->types[t].noff)
          p->types[t].off[k->held.v[h] - p->off_base[t]].held--;
    }
    for (size_t i = 0; i < next.n; i++) {
      bool had = false;
      for (size_t h = 0; h < k->held.n && !had; h++) had = k->held.v[h] == next.v[i];
      if (had) continue;
      for (uint32_t t = 0; t < p->ntypes; t++)
        if (next.v[i] >= p->off_base[t] && next.v[i] < p->off_base[t] + p->types[t].noff)
          p->types[t].off[next.v[i] - p->off_base[t]].held++;
    }
    dt__free(k->held.v);
    k->held.v = next.v;
    k->held.n = next.n;
    k->held.cap = next.cap;
    next.v = NULL;
    k->had_reserved |= k->held.n > 0;
  }
  dt__free(next.v);
  dt__free(want.v);
  return rc;
}

/* Try to add a pod of class ci to claim k. */
static int claim_add(run *R, rt_claim *k, uint32_t ci, uint32_t podi, int *res) {
  dt_plan *p = R->p;
  rt_class *c = &p->classes.v[ci];
  rt_pool *pl = &p->pools[k->pool];
  *res = FAIL_EVER;
  if (!pool_ok(p, c, k->pool)) return 0;
  const rt_spec *s = &p->specs[c->spec_idx];
  if (ports_conflict(p, s->ports, s->nports, k->ports.v, k->ports.n)) return 0;
  dt_reqs nr = k->reqs;
  uint64_t zm = k->zmask;
  uint8_t cm = k->ctmask;
  bool changed = false;
  if (c->reqs.n) {
    const dt_req *bad;
    if (!compatible(p, &k->reqs, &c->reqs, &bad)) return 0;
    dt__reqs_merge(&p->arena, &p->syms, &k->reqs, &c->reqs, &nr);
    changed = !dt__reqs_equal(&nr, &k->reqs);
    if (changed) {
      uint64_t z2;
      uint8_t c2;
      masks(p, &nr, &z2, &c2);
      zm &= z2;
      cm &= c2;
    }
  }
  /* Resources first: no option fitting is final for this claim and class,
  ** whatever topology says, and it is the cheap test. */
  uint32_t first = 0;
  while (first < k->nopt && !fits(p, pl->eff[k->opt[first]], k->used, c->req)) first++;
  if (first == k->nopt) return 0;
  /* A static claim's type and offering were chosen before any pod: a pod
  ** takes it as it is or not at all. */
  if (k->fixed && changed && (!dt__type_labels_ok(p, &p->types[k->opt[0]], &nr) || !zm || !cm)) return 0;
  if (c->topo) {
    uint32_t why;
    int t = dt__topo_check(p, c, p->nnodes + k->idx, &zm, &cm, &why);
    if (t) {
      *res = t;
      R->topo_fail_class = (int32_t)ci;
      R->topo_fail = why;
      return 0;
    }
    changed |= zm != k->zmask || cm != k->ctmask;
  }
  if (k->fixed) {
    if (!zm || !cm) {
      *res = FAIL_NOW;
      return 0;
    }
    k->reqs = nr;
  } else if (!changed && !pl->has_min_values && !pl->has_reserved) {
    k->opt += first;
    k->nopt -= first;
  } else {
    uint32_t keep = filter_options(p, pl, k->opt, k->nopt, k->used, c->req, &nr, zm, cm, NULL);
    if (!keep) {
      *res = c->topo ? FAIL_NOW : FAIL_EVER;
      return 0;
    }
    uint32_t *opt = A(p, keep * sizeof *opt);
    if (!opt) return DT_ENOMEM;
    filter_options(p, pl, k->opt, k->nopt, k->used, c->req, &nr, zm, cm, opt);
    if (pl->has_min_values && !dt__min_values_ok(p, &nr, opt, keep)) return 0;
    int64_t sum[DT_RES_MAX];
    for (uint32_t r = 0; r < DT_RES_MAX; r++) sum[r] = k->used[r] + c->req[r];
    uint32_t nfit = 0;
    for (uint32_t i = 0; i < keep; i++) /* reservations follow the types that fit the new sum */
      if (fits(p, pl->eff[opt[i]], sum, (int64_t[DT_RES_MAX]){0})) opt[nfit++] = opt[i];
    keep = nfit;
    bool rok;
    int rrc = reserve(p, k, opt, keep, zm, cm, &rok);
    if (rrc) return rrc;
    if (!rok) {
      *res = FAIL_NOW;
      R->reserved_error = true;
      return 0;
    }
    k->opt = opt;
    k->nopt = keep;
    k->reqs = nr;
    k->zmask = zm;
    k->ctmask = cm;
  }
  for (uint32_t r = 0; r < p->nres; r++) k->used[r] += c->req[r];
  if (dt__vec_push(&k->pods, podi)) return DT_ENOMEM;
  for (uint32_t q = 0; q < s->nports; q++)
    if (dt__vec_push(&k->ports, s->ports[q])) return DT_ENOMEM;
  int rc = dt__topo_record(p, p->pods[podi].spec, c, p->nnodes + k->idx, k->zmask, k->ctmask, 1, p->pods[podi].ordinal);
  if (rc) return rc;
  *res = FIT;
  return 0;
}

/* Keep R->order sorted after claim at position i gained a pod. */
static void reorder(run *R, size_t i) {
  rt_claim **o = R->order.v;
  while (i + 1 < R->order.n && claim_before(o[i + 1], o[i])) {
    rt_claim *t = o[i];
    o[i] = o[i + 1];
    o[i + 1] = t;
    i++;
  }
}

/* Whether no option of k can take even the smallest pod still to try. */
static bool claim_full(run *R, rt_claim *k) {
  dt_plan *p = R->p;
  int64_t mn[DT_RES_MAX];
  memcpy(mn, R->failmin, sizeof mn);
  if (R->pos + 1 < R->qlen) {
    const int64_t *q = &R->minsuf[(size_t)(R->pos + 1) * p->nres];
    for (uint32_t r = 0; r < p->nres; r++) mn[r] = q[r] < mn[r] ? q[r] : mn[r];
  }
  for (uint32_t i = 0; i < k->nopt; i++)
    if (fits(p, p->pools[k->pool].eff[k->opt[i]], k->used, mn)) return false;
  return true;
}

static int new_claim(run *R, uint32_t ci, uint32_t podi, int *res) {
  dt_plan *p = R->p;
  *res = FAIL_EVER;
  for (uint32_t pi = 0; pi < p->npools; pi++) {
    rt_class *c = &p->classes.v[ci];
    rt_pool *pl = &p->pools[pi];
    if (pl->replicas >= 0 || !pool_ok(p, c, pi) || pl->nodes_remaining == 0 || !pl->ntypes) continue;
    dt_reqs nr;
    dt__reqs_merge(&p->arena, &p->syms, &pl->reqs, &c->reqs, &nr);
    uint64_t zm;
    uint8_t cm;
    masks(p, &nr, &zm, &cm);
    uint32_t host = p->nnodes + (uint32_t)p->claims.n;
    if (c->topo) {
      uint32_t why;
      int t = dt__topo_check(p, c, host, &zm, &cm, &why);
      if (t) {
        if (*res == FAIL_EVER || t == FAIL_NOW) *res = FAIL_NOW; /* a new claim may work later */
        R->topo_fail_class = (int32_t)ci;
        R->topo_fail = why;
        continue;
      }
    }
    uint32_t *opt = A(p, pl->ntypes * sizeof *opt), n = 0;
    if (!opt) return DT_ENOMEM;
    static const int64_t zero[DT_RES_MAX];
    for (uint32_t i = 0; i < pl->ntypes; i++) {
      const rt_type *t = &p->types[pl->types[i]];
      if (pl->has_limits) {
        bool over = false;
        for (uint32_t r = 0; r < p->nres && !over; r++)
          over = pl->remaining[r] != INT64_MAX && t->cap[r] > pl->remaining[r];
        if (over) continue;
      }
      if (fits(p, pl->eff[pl->types[i]], zero, c->req) && dt__type_ok(p, t, &nr, zm, cm, pl->spot_max))
        opt[n++] = pl->types[i];
    }
    if (!n || (pl->has_min_values && !dt__min_values_ok(p, &nr, opt, n))) continue;
    rt_claim *k = A(p, sizeof *k);
    if (!k) return DT_ENOMEM;
    k->pool = pi;
    bool rok;
    int rrc = reserve(p, k, opt, n, zm, cm, &rok);
    if (rrc) return rrc;
    if (!rok) {
      /* A reservation this pool could use is held by other claims: the pod
      ** waits rather than falling through to a lower-weight NodePool. */
      R->reserved_error = true;
      *res = FAIL_NOW;
      return 0;
    }
    k->pool = pi;
    k->idx = (uint32_t)p->claims.n;
    k->reqs = nr;
    k->zmask = zm;
    k->ctmask = cm;
    k->opt = opt;
    k->nopt = n;
    k->type = k->off = -1;
    for (uint32_t r = 0; r < p->nres; r++) k->used[r] = c->req[r];
    /* In the plan's list first, so dt_plan_free releases k's vectors on any failure. */
    if (dt__vec_push(&p->claims, k) || dt__vec_push(&k->pods, podi) || dt__vec_push(&R->order, k))
      return DT_ENOMEM;
    const rt_spec *s = &p->specs[c->spec_idx];
    for (uint32_t q = 0; q < s->nports; q++)
      if (dt__vec_push(&k->ports, s->ports[q])) return DT_ENOMEM;
    int rc = dt__topo_record(p, p->pods[podi].spec, c, host, zm, cm, 1, p->pods[podi].ordinal);
    if (rc) return rc;
    reorder(R, R->order.n - 1);
    /* Limits are charged pessimistically: the largest capacity among the
    ** claim's options, as Karpenter's subtractMax. */
    if (pl->has_limits) {
      for (uint32_t r = 0; r < p->nres; r++) {
        if (pl->remaining[r] == INT64_MAX) continue;
        int64_t mx = 0;
        for (uint32_t i = 0; i < n; i++) mx = p->types[opt[i]].cap[r] > mx ? p->types[opt[i]].cap[r] : mx;
        pl->remaining[r] -= mx;
      }
      if (pl->nodes_remaining > 0) pl->nodes_remaining--;
    }
    *res = FIT;
    return 0;
  }
  return 0;
}

/* Why NodePool pi cannot open a claim for class c, appended to b. */
static void diagnose_pool(dt_plan *p, rt_class *c, uint32_t pi, dt_buf *b) {
  const rt_spec *s = &p->specs[c->spec_idx];
  rt_pool *pl = &p->pools[pi];
  const char *pn = pl->src->name;
  const rt_taint *t = NULL;
  const dt_req *bad = NULL;
  if (!tolerates(p, c->spec, pl->taints, pl->ntaints, true, &t)) {
    static const char *eff[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
    dt__buf_printf(b, "NodePool %s has taint %s=%s:%s that the pod does not tolerate", pn,
                   dt__sym_str(&p->syms, t->key), dt__sym_str(&p->syms, t->value), eff[t->effect]);
    return;
  }
  if (!compatible(p, &pl->reqs, &c->reqs, &bad)) {
    bad = first_incompatible(p, &pl->reqs, &c->reqs);
    const dt_req *ex = dt__reqs_get(&pl->reqs, bad->key);
    dt__buf_puts(b, "pod requires ");
    dt__req_describe(&p->syms, bad, b);
    if (ex) {
      dt__buf_printf(b, " but NodePool %s allows ", pn);
      dt__req_describe(&p->syms, ex, b);
    } else if (bad->key == p->k_hostname) {
      dt__buf_printf(b, ": a new node of NodePool %s gets a hostname of its own, so only an existing node named so "
                         "qualifies", pn);
    } else {
      dt__buf_printf(b, " but NodePool %s does not define label %s", pn, dt__sym_str(&p->syms, bad->key));
    }
    return;
  }
  if (ports_conflict(p, s->ports, s->nports, pl->ds_ports, pl->nds_ports)) {
    dt__buf_printf(b, "a host port of the pod conflicts with a DaemonSet on NodePool %s", pn);
    return;
  }
  if (pl->replicas >= 0) {
    dt__buf_printf(b, "NodePool %s is static (spec.replicas %lld): pods open no NodeClaims on it, and none of its "
                      "nodes has room", pn, (long long)pl->replicas);
    return;
  }
  if (pl->nodes_remaining == 0) {
    dt__buf_printf(b, "NodePool %s has reached its nodes limit", pn);
    return;
  }
  dt_reqs nr;
  dt__reqs_merge(&p->arena, &p->syms, &pl->reqs, &c->reqs, &nr);
  uint64_t zm;
  uint8_t cm;
  masks(p, &nr, &zm, &cm);
  /* Largest allocatable per resource among the types allowed. */
  int64_t best[DT_RES_MAX] = {0};
  const rt_type *bt[DT_RES_MAX] = {0};
  uint32_t allowed = 0;
  bool limited = false;
  for (uint32_t i = 0; i < pl->ntypes; i++) {
    const rt_type *ty = &p->types[pl->types[i]];
    if (!dt__type_ok(p, ty, &nr, zm, cm, pl->spot_max)) continue;
    allowed++;
    bool over = false;
    for (uint32_t r = 0; r < p->nres && pl->has_limits; r++)
      over |= pl->remaining[r] != INT64_MAX && ty->cap[r] > pl->remaining[r];
    if (over) {
      limited = true;
      continue;
    }
    const int64_t *e = pl->eff[pl->types[i]];
    for (uint32_t r = 0; r < p->nres; r++)
      if (e[r] > best[r] || !bt[r]) {
        best[r] = e[r];
        bt[r] = ty;
      }
  }
  if (!allowed) {
    dt__buf_printf(b, "no instance type in NodePool %s satisfies the pod's requirements", pn);
    uint32_t *idx = c->reqs.n ? A(p, c->reqs.n * sizeof *idx) : NULL;
    if (idx) {
      dt__reqs_order(p, &c->reqs, idx);
      dt__buf_puts(b, " (");
      for (uint32_t k = 0; k < c->reqs.n; k++) {
        if (k) dt__buf_puts(b, ", ");
        dt__req_describe(&p->syms, &c->reqs.r[idx[k]], b);
      }
      dt__buf_puts(b, ")");
    }
    if (!(cm & ~(1u << DT_CT_RESERVED)) || !zm)
      dt__buf_puts(b, " with an available offering in the allowed zones and capacity types");
    return;
  }
  if (limited && !bt[0]) {
    dt__buf_printf(b, "NodePool %s limits leave no room for another node", pn);
    return;
  }
  bool said = false;
  for (uint32_t r = 0; r < p->nres; r++) {
    if (c->req[r] <= best[r]) continue;
    char need[64], have[64], cap[64];
    dt__fmt_quantity(need, sizeof need, p->res_names[r], c->req[r]);
    dt__fmt_quantity(have, sizeof have, p->res_names[r], best[r]);
    dt__fmt_quantity(cap, sizeof cap, p->res_names[r], bt[r] ? bt[r]->cap[r] : 0);
    if (!best[r])
      dt__buf_printf(b, "%sno instance type in NodePool %s has %s", said ? ", and " : "", pn, p->res_names[r]);
    else
      dt__buf_printf(b, "%sno instance type in NodePool %s has %s %s; the largest allowed (%s) has %s allocatable of %s",
                     said ? ", and " : "", pn, need, p->res_names[r], dt__sym_str(&p->syms, bt[r]->name), have,
                     cap);
    said = true;
  }
  if (limited && said) dt__buf_puts(b, " within its limits");
  if (said && pl->src && p->manifests->daemonsets.n) dt__buf_puts(b, " after DaemonSet overhead");
  if (!said) {
    if (pl->has_min_values) {
      dt__buf_printf(b, "NodePool %s couldn't meet minValues for the pod's requirements", pn);
      return;
    }
    dt__buf_printf(b, "no single instance type in NodePool %s fits all of the pod's requests (", pn);
    for (uint32_t r = 0, first = 1; r < p->nres; r++) {
      if (!c->req[r] || r == DT_R_PODS) continue;
      char q[64];
      dt__fmt_quantity(q, sizeof q, p->res_names[r], c->req[r]);
      dt__buf_printf(b, "%s%s %s", first ? "" : ", ", p->res_names[r], q);
      first = 0;
    }
    dt__buf_puts(b, limited ? ") within its limits" : ")");
  }
}

/* A reason a person can act on, per NodePool, for a pod that fits nowhere. */
static const char *diagnose(dt_plan *p, rt_class *c) {
  dt_buf b = {0};
  if (p->npools == 0) {
    dt__buf_puts(&b, "no NodePool in the input, and no existing node fits");
    return arena_buf(p, &b);
  }
  for (uint32_t pi = 0; pi < p->npools; pi++) {
    if (pi) dt__buf_puts(&b, "; ");
    diagnose_pool(p, c, pi, &b);
  }
  return arena_buf(p, &b);
}

static int unschedulable(dt_plan *p, uint32_t podi, const char *reason) {
  rt_unsched u = {podi, reason};
  return dt__vec_push(&p->unsched, u);
}

/* One relaxation step, in Karpenter's order; false when nothing is left. */
static bool relax(const dt_plan *p, const rt_spec *s, rt_relax *rx) {
  const dt_podspec *d = s->src;
  if (d->nterms > (size_t)rx->term + 1) {
    rx->term++;
    return true;
  }
  if (rx->paff < d->npaff) {
    rx->paff++;
    return true;
  }
  if (rx->panti < d->npanti) {
    rx->panti++;
    return true;
  }
  if (rx->pref < d->npref) {
    rx->pref++;
    return true;
  }
  size_t anyway = 0;
  for (size_t i = 0; i < d->nspread; i++) anyway += d->spread[i].anyway;
  if (rx->anyway < anyway) {
    rx->anyway++;
    return true;
  }
  if (!rx->tol_pref && p->any_prefer_taint) {
    rx->tol_pref = 1;
    return true;
  }
  return false;
}

/* Place one pod of class ci; *placed tells whether it went somewhere. */
static int try_place(run *R, uint32_t ci, uint32_t podi, bool *placed) {
  dt_plan *p = R->p;
  int rc = 0, res;
  *placed = false;
  /* 1. existing and in-flight nodes, in order */
  bool all_ever = true;
  for (uint32_t i = p->classes.v[ci].node_cursor; i < p->nnodes; i++) {
    rt_class *c = &p->classes.v[ci];
    uint64_t Z;
    uint8_t C;
    res = node_fits(R, i, c, &Z, &C);
    if (res == FIT) {
      rt_node *n = &p->nodes[i];
      for (uint32_t r = 0; r < p->nres; r++) n->used[r] += c->req[r];
      const rt_spec *s = &p->specs[c->spec_idx];
      for (uint32_t q = 0; q < s->nports; q++)
        if (dt__vec_push(&n->ports, s->ports[q])) return DT_ENOMEM;
      rt_binding bnd = {podi, i};
      if (dt__vec_push(&p->bindings, bnd)) return DT_ENOMEM;
      *placed = true;
      return dt__topo_record(p, p->pods[podi].spec, c, i, Z, C, 1, p->pods[podi].ordinal);
    }
    if (res == FAIL_NOW) all_ever = false;
    if (all_ever) c->node_cursor = i + 1;
  }
  /* 1b. static pools' claims: in flight before any pod, as existing capacity */
  for (uint32_t i = 0; i < p->nfixed; i++) {
    rt_claim *k = p->claims.v[i];
    if (class_failed(&p->classes.v[ci], k->idx)) continue;
    if ((rc = claim_add(R, k, ci, podi, &res))) return rc;
    if (res == FIT) {
      *placed = true;
      return 0;
    }
    if (res == FAIL_EVER && (rc = set_failed(&p->classes.v[ci], k->idx))) return rc;
  }
  /* 2. claims opened in this run, least loaded first */
  for (size_t i = 0; i < R->order.n && !rc; i++) {
    rt_claim *k = R->order.v[i];
    if (class_failed(&p->classes.v[ci], k->idx)) continue;
    rc = claim_add(R, k, ci, podi, &res);
    if (rc) return rc;
    if (res == FIT) {
      reorder(R, i);
      *placed = true;
      return 0;
    }
    if (res != FAIL_EVER) continue;
    rc = set_failed(&p->classes.v[ci], k->idx);
    if (!rc && claim_full(R, k)) {
      k->closed = true;
      memmove(&R->order.v[i], &R->order.v[i + 1], (R->order.n - i - 1) * sizeof *R->order.v);
      R->order.n--;
      i--;
    }
  }
  if (rc) return rc;
  /* 3. a new claim from each NodePool, by weight */
  if (p->classes.v[ci].no_new_claim) return 0;
  rc = new_claim(R, ci, podi, &res);
  if (rc) return rc;
  if (res == FIT) {
    *placed = true;
    return 0;
  }
  if (res == FAIL_EVER) p->classes.v[ci].no_new_claim = true;
  return 0;
}

static int solve(dt_plan *p) {
  run R;
  memset(&R, 0, sizeof R);
  R.p = p;
  int rc = 0;
  uint32_t *queue = dt__malloc((p->npods ? p->npods : 1) * sizeof *queue);
  uint32_t *next = dt__malloc((p->npods ? p->npods : 1) * sizeof *next);
  int32_t *last_class = dt__malloc((p->npods ? p->npods : 1) * sizeof *last_class);
  R.minsuf = dt__malloc(((size_t)p->npods + 1) * p->nres * sizeof *R.minsuf);
  if (!queue || !next || !R.minsuf || !last_class) {
    rc = DT_ENOMEM;
    goto out;
  }
  for (uint32_t i = 0; i < p->npods; i++) queue[i] = i;
  uint32_t qn = p->npods, pass = 0;
  /*
  ** Karpenter's queue: a pod that fails goes to the back; the run stops
  ** when a whole pass places nothing. Pods whose constraints depend on
  ** others (affinity, spread) converge this way.
  */
  for (;; pass++) {
    if (dt__cancelled(p)) {
      rc = DT_ECANCELED;
      goto out;
    }
    R.qlen = qn;
    for (uint32_t i = qn; i-- > 0;) {
      const int64_t *q = p->specs[p->pods[queue[i]].spec].req;
      int64_t *m = &R.minsuf[(size_t)i * p->nres];
      for (uint32_t r = 0; r < p->nres; r++) m[r] = i + 1 < qn && m[p->nres + r] < q[r] ? m[p->nres + r] : q[r];
    }
    for (uint32_t r = 0; r < DT_RES_MAX; r++) R.failmin[r] = INT64_MAX;
    uint32_t nn = 0;
    for (R.pos = 0; R.pos < qn; R.pos++) {
      if ((R.pos & 255) == 255 && dt__cancelled(p)) {
        rc = DT_ECANCELED;
        goto out;
      }
      uint32_t podi = queue[R.pos];
      const rt_pod *pod = &p->pods[podi];
      rt_relax rx;
      memset(&rx, 0, sizeof rx);
      bool placed = false;
      int ci = (int)pod->cls;
      for (;;) {
        R.topo_fail_class = -1;
        R.reserved_error = false;
        /* --explain: recorded before and after, never changing the try */
        bool ex = p->ex_pod == (int64_t)podi;
        size_t nb = p->bindings.n, nk = p->claims.n;
        if (ex) dt__explain_attempt(p, (uint32_t)ci, &rx, R.order.v, R.order.n, pass, R.pos, qn);
        if ((rc = try_place(&R, (uint32_t)ci, podi, &placed)) != 0) goto out;
        if (ex) dt__explain_outcome(p, placed, nb, nk, R.order.v, R.order.n);
        /* Deferred for a reservation: not relaxed, as Karpenter's trySchedule. */
        if (placed || R.reserved_error || !relax(p, &p->specs[pod->spec], &rx)) break;
        if ((ci = class_for(p, pod->spec, &rx)) < 0) {
          rc = ci;
          goto out;
        }
      }
      if (placed) continue;
      last_class[podi] = R.reserved_error ? -1 - ci : ci;
      next[nn++] = podi;
      const int64_t *q = p->specs[pod->spec].req;
      for (uint32_t r = 0; r < p->nres; r++) R.failmin[r] = q[r] < R.failmin[r] ? q[r] : R.failmin[r];
    }
    bool progress = nn < qn;
    uint32_t *t = queue;
    queue = next;
    next = t;
    qn = nn;
    if (!qn || !progress) break;
  }
  /* Whatever is left is unschedulable: explain with the relaxed class. */
  {
    const char **reason = dt__calloc(p->classes.n ? p->classes.n : 1, sizeof *reason);
    if (!reason) {
      rc = DT_ENOMEM;
      goto out;
    }
    for (uint32_t i = 0; i < qn && !rc; i++) {
      uint32_t podi = queue[i];
      int ci = last_class[podi];
      if (ci < 0) {
        rc = unschedulable(p, podi,
                           "deferred: a capacity reservation this pod's NodePool can use is held by other node claims of "
                           "this plan; plan again once they launch (feed their NodeClaims back as input)");
        continue;
      }
      rt_class *c = &p->classes.v[ci];
      if (!reason[ci]) {
        /* Re-run the last attempt's topology check on a fresh host to find
        ** the constraint that failed, if topology is what blocks it. */
        const char *why = NULL;
        if (c->topo) {
          for (uint32_t pi = 0; pi < p->npools && !why; pi++) {
            if (!pool_ok(p, c, pi)) continue;
            dt_reqs nr;
            dt__reqs_merge(&p->arena, &p->syms, &p->pools[pi].reqs, &c->reqs, &nr);
            uint64_t zm;
            uint8_t cm;
            masks(p, &nr, &zm, &cm);
            uint32_t f;
            if (dt__topo_check(p, c, p->nnodes + (uint32_t)p->claims.n, &zm, &cm, &f)) {
              dt_buf b = {0};
              dt__topo_explain(p, c, f, &b);
              why = arena_buf(p, &b);
            }
          }
        }
        reason[ci] = why ? why : diagnose(p, c);
      }
      rc = unschedulable(p, podi, reason[ci]);
    }
    dt__free(reason);
  }
out:
  dt__free(queue);
  dt__free(next);
  dt__free(last_class);
  dt__free(R.minsuf);
  dt__free(R.order.v);
  return rc;
}

/* ------------------------------------------------------------ launch */

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static int name_claim(dt_plan *p, rt_claim *k) {
  const char *pool = p->pools[k->pool].src->name;
  uint64_t s = p->opts.seed ^ 0x646f7665ull;
  for (const char *c = pool; *c; c++) s = (s ^ (unsigned char)*c) * 1099511628211ull;
  s ^= (uint64_t)k->idx * 0x9e3779b97f4a7c15ull;
  for (int attempt = 0; attempt < 1000; attempt++) {
    uint64_t h = splitmix(&s);
    char name[300], suf[6];
    for (int i = 0; i < 5; i++) {
      suf[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[h % 36];
      h /= 36;
    }
    suf[5] = 0;
    snprintf(name, sizeof name, "%s-%s", pool, suf);
    if (dt__sym_find(&p->syms, name)) continue; /* taken by a node, claim or label */
    k->name = dt__sym(&p->syms, name);
    return k->name ? 0 : DT_ENOMEM;
  }
  return DT_ERANGE;
}

/*
** The rank hook scores the launchable offerings of a finished claim (lower
** wins, nil excludes); ties go to the instance type name, then the zone. A
** failing hook leaves the default choice in place.
*/
static int rank_hook(dt_plan *p, rt_claim *k, const uint32_t *types, uint32_t ntypes, int32_t *bt, int32_t *bo,
                     const char **excluded) {
  rt_pool *pl = &p->pools[k->pool];
  int rc = use_policy(p, pl->policy);
  if (rc) return rc;
  size_t n = 0;
  for (uint32_t i = 0; i < ntypes; i++) n += p->types[types[i]].noff;
  uint32_t *idx = dt__malloc((n ? n : 1) * sizeof *idx);
  double *score = dt__malloc((n ? n : 1) * sizeof *score);
  if (!idx || !score) {
    dt__free(idx);
    dt__free(score);
    return DT_ENOMEM;
  }
  n = 0;
  for (uint32_t i = 0; i < ntypes; i++) {
    const rt_type *t = &p->types[types[i]];
    for (uint32_t o = 0; o < t->noff; o++)
      if (off_ok(&t->off[o], k->zmask, k->ctmask, pl->spot_max)) idx[n++] = p->off_base[types[i]] + o;
  }
  dt_hook_claim hc = {pl->src->name, k->pods.n, k->used[DT_R_CPU], k->used[DT_R_MEM] / 1000, pl->launched_spot,
                      pl->launched};
  if (n && dt__policy_rank(pl->policy, &hc, idx, n, score) == 0) {
    int32_t best = -1;
    for (size_t i = 0; i < n; i++) {
      if (isnan(score[i])) continue;
      if (best < 0 || score[i] < score[best]) {
        best = (int32_t)i;
        continue;
      }
      if (score[i] > score[best]) continue;
      const dt_hook_offer *a = &p->snapshot[idx[i]], *b = &p->snapshot[idx[best]];
      int c = strcmp(a->instance_type, b->instance_type);
      if (c < 0 || (c == 0 && strcmp(a->zone, b->zone) < 0)) best = (int32_t)i;
    }
    if (best < 0) {
      *bt = -1;
      dt_buf msg = {0};
      dt__buf_printf(&msg, "the rank hook of policy %s excluded every offering that fits", dt__policy_name(pl->policy));
      *excluded = arena_buf(p, &msg);
    } else {
      uint32_t g = idx[best];
      for (uint32_t t = 0; t < p->ntypes; t++)
        if (g >= p->off_base[t] && g < p->off_base[t] + p->types[t].noff) {
          *bt = (int32_t)t;
          *bo = (int32_t)(g - p->off_base[t]);
          break;
        }
    }
  }
  dt__free(idx);
  dt__free(score);
  return 0;
}

/*
** The score hook: score(offering) depends on the offering alone, so it is
** computed once per offering and plan, when a claim that could launch on it
** first launches, and cached; each claim then takes the lowest-scored of its
** launchable offerings natively (ties by instance type name, then zone, as
** rank's), without calling Lua. A type's best offering is memoised per
** claim masks, as type_best's. A failing hook leaves the default choice.
*/
static score_cache *score_cache_for(dt_plan *p, const dt_policy *pol) {
  for (size_t i = 0; i < p->scores.n; i++)
    if (p->scores.v[i].pol == pol) return &p->scores.v[i];
  score_cache c = {pol, A(p, (p->nsnapshot ? p->nsnapshot : 1) * sizeof(double)), A(p, p->nsnapshot ? p->nsnapshot : 1)};
  if (!c.score || !c.known || dt__vec_push(&p->scores, c)) return NULL;
  return &p->scores.v[p->scores.n - 1];
}

static bool smemo_hit(const rt_type *t, const rt_claim *k, const dt_policy *pol, double smax) {
  return t->smemo_ok && t->smemo_pol == pol && t->smemo_zmask == k->zmask && t->smemo_ctmask == k->ctmask &&
         t->smemo_spot_max == smax;
}

static int score_pick(dt_plan *p, rt_claim *k, const uint32_t *types, uint32_t ntypes, int32_t *bt, int32_t *bo,
                      const char **excluded) {
  rt_pool *pl = &p->pools[k->pool];
  int rc = use_policy(p, pl->policy);
  if (rc) return rc;
  score_cache *sc = score_cache_for(p, pl->policy);
  if (!sc) return DT_ENOMEM;
  double smax = pl->spot_max;
  /* the launchable offerings not scored yet, in one batch */
  size_t nmiss = 0, cap = 0;
  for (uint32_t i = 0; i < ntypes; i++)
    if (!smemo_hit(&p->types[types[i]], k, pl->policy, smax)) cap += p->types[types[i]].noff;
  uint32_t *miss = cap ? dt__malloc(cap * sizeof *miss) : NULL;
  double *val = cap ? dt__malloc(cap * sizeof *val) : NULL;
  if (cap && (!miss || !val)) {
    dt__free(miss);
    dt__free(val);
    return DT_ENOMEM;
  }
  for (uint32_t i = 0; i < ntypes && cap; i++) {
    const rt_type *t = &p->types[types[i]];
    if (smemo_hit(t, k, pl->policy, smax)) continue;
    for (uint32_t o = 0; o < t->noff; o++) {
      uint32_t g = p->off_base[types[i]] + o;
      if (off_ok(&t->off[o], k->zmask, k->ctmask, smax) && !sc->known[g]) miss[nmiss++] = g;
    }
  }
  bool ok = !nmiss || dt__policy_score(pl->policy, miss, nmiss, val) == 0;
  for (size_t i = 0; ok && i < nmiss; i++) {
    sc->score[miss[i]] = val[i];
    sc->known[miss[i]] = 1;
  }
  dt__free(miss);
  dt__free(val);
  if (!ok) return 0; /* the default choice stands */
  int32_t best_t = -1, best_o = -1;
  double best = 0;
  bool any = false; /* any launchable offering at all */
  for (uint32_t i = 0; i < ntypes; i++) {
    rt_type *t = &p->types[types[i]];
    if (!smemo_hit(t, k, pl->policy, smax)) {
      int32_t to = -1;
      double ts = 0;
      bool some = false; /* a launchable offering of this type */
      for (uint32_t o = 0; o < t->noff; o++) {
        if (!off_ok(&t->off[o], k->zmask, k->ctmask, smax)) continue;
        some = true;
        double v = sc->score[p->off_base[types[i]] + o];
        if (isnan(v)) continue;
        if (to < 0 || v < ts || (v == ts && p->zone_rank[t->off[o].zone] < p->zone_rank[t->off[to].zone])) {
          to = (int32_t)o;
          ts = v;
        }
      }
      t->smemo_ok = true;
      t->smemo_pol = pl->policy;
      t->smemo_zmask = k->zmask;
      t->smemo_ctmask = k->ctmask;
      t->smemo_spot_max = smax;
      t->smemo_off = to;
      t->smemo_score = to < 0 && some ? NAN : ts; /* -1 and NAN: offerings, all excluded; -1 and 0: none */
    }
    any |= t->smemo_off >= 0 || isnan(t->smemo_score);
    if (t->smemo_off < 0) continue;
    double v = t->smemo_score;
    if (best_t < 0 || v < best || (v == best && t->rank < p->types[best_t].rank)) {
      best_t = (int32_t)types[i];
      best_o = t->smemo_off;
      best = v;
    }
  }
  if (!any) return 0; /* nothing launchable: as rank, the default stands */
  if (best_t < 0) {
    *bt = -1;
    dt_buf msg = {0};
    dt__buf_printf(&msg, "the score hook of policy %s excluded every offering that fits", dt__policy_name(pl->policy));
    *excluded = arena_buf(p, &msg);
    return 0;
  }
  *bt = best_t;
  *bo = best_o;
  return 0;
}

/* The policy's choice of offering for claim k among types[0..n), if it has
** one: rank's when the policy defines it (it sees the claim), else score's. */
static int hook_pick(dt_plan *p, rt_claim *k, const uint32_t *types, uint32_t n, int32_t *bt, int32_t *bo,
                     const char **excluded) {
  dt_policy *pol = p->pools[k->pool].policy;
  if (dt__policy_has(pol, DT_HOOK_RANK)) return rank_hook(p, k, types, n, bt, bo, excluded);
  if (dt__policy_has(pol, DT_HOOK_SCORE)) return score_pick(p, k, types, n, bt, bo, excluded);
  return 0;
}

/* Whether type t has devices (domain-qualified resources: GPUs, Neuron)
** that what used[] asks for leaves idle. */
static bool idle_devices(const dt_plan *p, uint32_t t, const int64_t *used) {
  for (uint32_t r = DT_R_EPH + 1; used && r < p->nres; r++)
    if (p->types[t].alloc[r] > 0 && used[r] <= 0 && strchr(p->res_names[r], '/')) return true;
  return false;
}

/* Whether offering o of type t beats offering bo of type bt (bt < 0: none
** yet) under the default rank: reserved while available, then cheapest, then
** (used not NULL) a type without devices used[] leaves idle, then instance
** type name, then zone name. */
static bool off_better(const dt_plan *p, uint32_t t, uint32_t o, int32_t bt, int32_t bo, const int64_t *used) {
  if (bt < 0) return true;
  const rt_off *of = &p->types[t].off[o], *bof = &p->types[bt].off[bo];
  bool rr = of->ct == DT_CT_RESERVED, br = bof->ct == DT_CT_RESERVED;
  if (rr != br) return rr;
  if (of->price != bof->price) return of->price < bof->price;
  if (t != (uint32_t)bt && idle_devices(p, t, used) != idle_devices(p, (uint32_t)bt, used))
    return !idle_devices(p, t, used);
  if (t != (uint32_t)bt) return p->types[t].rank < p->types[bt].rank;
  return p->zone_rank[of->zone] < p->zone_rank[bof->zone];
}

/* The best offering of type ti for claim k by the default rank (-1 if none)
** and its cheapest price. Reserved offerings count only for the units the
** claim holds; claims holding none share a memo per type and masks. */
static int32_t type_best(dt_plan *p, const rt_claim *k, uint32_t ti, double *cheapest) {
  rt_type *t = &p->types[ti];
  double smax = p->pools[k->pool].spot_max;
  bool memo = !k->held.n;
  if (memo && t->memo_ok && t->memo_zmask == k->zmask && t->memo_ctmask == k->ctmask && t->memo_spot_max == smax) {
    *cheapest = t->memo_price;
    return t->memo_off;
  }
  int32_t bo = -1;
  double ch = INFINITY;
  for (uint32_t o = 0; o < t->noff; o++) {
    const rt_off *of = &t->off[o];
    if (!off_ok(of, k->zmask, k->ctmask, smax)) continue;
    if (of->ct == DT_CT_RESERVED) {
      bool held = false;
      for (size_t h = 0; h < k->held.n && !held; h++) held = k->held.v[h] == p->off_base[ti] + o;
      if (!held) continue;
    }
    if (of->price < ch) ch = of->price;
    if (off_better(p, ti, o, bo < 0 ? -1 : (int32_t)ti, bo, NULL)) bo = (int32_t)o;
  }
  if (memo) {
    t->memo_ok = true;
    t->memo_zmask = k->zmask;
    t->memo_ctmask = k->ctmask;
    t->memo_spot_max = smax;
    t->memo_off = bo;
    t->memo_price = ch;
  }
  *cheapest = ch;
  return bo;
}

static int launch_claim(dt_plan *p, rt_claim *k, uint32_t *fin, uint32_t n, int32_t bt, int32_t bo);

/* Whether type t offers in the masks at all, availability aside; its
** cheapest such price into *price. */
static bool offers_in(const rt_type *t, uint64_t zm, uint8_t cm, double spot_max, double *price) {
  bool any = false;
  for (uint32_t o = 0; o < t->noff; o++) {
    const rt_off *of = &t->off[o];
    if (!(zm >> of->zone & 1) || !(cm >> of->ct & 1) || !dt__spot_ok(of, spot_max)) continue;
    if (!any || of->price < *price) *price = of->price;
    any = true;
  }
  return any;
}

/* A static pool's claim launches the offering chosen for it; its options
** are every type of the pool that holds what it carries, as Karpenter's
** static NodeClaim leaves the choice among them to the cloud provider. */
static int launch_fixed(dt_plan *p, rt_claim *k) {
  rt_pool *pl = &p->pools[k->pool];
  uint32_t ti = k->opt[0];
  double ch;
  int32_t bo = type_best(p, k, ti, &ch);
  uint64_t zm;
  uint8_t cm;
  masks(p, &k->reqs, &zm, &cm);
  k->zopen &= zm;
  k->copen &= cm;
  uint32_t *fin = A(p, (pl->ntypes + 1) * sizeof *fin), n = 0, at = UINT32_MAX;
  double *price = dt__malloc((pl->ntypes + 1) * sizeof *price);
  if (!fin || !price) {
    dt__free(price);
    return DT_ENOMEM;
  }
  for (uint32_t i = 0; i < pl->ntypes; i++) {
    const rt_type *t = &p->types[pl->types[i]];
    if (!fits(p, pl->eff[pl->types[i]], k->used, (int64_t[DT_RES_MAX]){0}) || !dt__type_labels_ok(p, t, &k->reqs) ||
        !offers_in(t, k->zopen, k->copen, pl->spot_max, &price[n]))
      continue;
    fin[n++] = pl->types[i];
  }
  int rc = sort_by_price(p, fin, price, n);
  dt__free(price);
  if (rc) return rc;
  for (uint32_t i = 0; i < n && at == UINT32_MAX; i++)
    if (fin[i] == ti) at = i;
  if (at == UINT32_MAX) fin[at = n++] = ti;
  if (at >= 600) { /* the type it launches is among the options written */
    memmove(&fin[600], &fin[599], (at - 599) * sizeof *fin);
    fin[599] = ti;
  }
  k->final = fin;
  k->nfinal = n < 600 ? n : 600;
  return launch_claim(p, k, &k->opt[0], 1, bo >= 0 ? (int32_t)ti : -1, bo);
}

/*
** The types of a pool ordered by their cheapest launchable offering under
** one claim's masks (then by name), for the claims that hold no
** reservation: those share type_best's prices, so a claim's launchable
** types in price order are this order filtered, not a sort of their own.
** Kept for a few mask sets at a time, until an availability count changes.
*/
typedef struct type_order {
  uint32_t pool;
  uint64_t zmask, gen;
  uint8_t ctmask;
  uint32_t n;
  uint32_t *types; /* arena */
} type_order;

#define TYPE_ORDERS 8

static const type_order *type_order_for(dt_plan *p, const rt_claim *k, type_order *cache, uint32_t *ncache,
                                        uint32_t *next, double *price) {
  for (uint32_t i = 0; i < *ncache; i++) {
    const type_order *o = &cache[i];
    if (o->pool == k->pool && o->zmask == k->zmask && o->ctmask == k->ctmask && o->gen == p->avail_gen) return o;
  }
  const rt_pool *pl = &p->pools[k->pool];
  type_order *o = &cache[*ncache < TYPE_ORDERS ? (*ncache)++ : (*next)++ % TYPE_ORDERS];
  *o = (type_order){k->pool, k->zmask, p->avail_gen, k->ctmask, 0, A(p, (pl->ntypes ? pl->ntypes : 1) * sizeof(uint32_t))};
  if (!o->types) return NULL;
  for (uint32_t i = 0; i < pl->ntypes; i++) {
    double ch;
    if (type_best(p, k, pl->types[i], &ch) < 0) continue;
    price[o->n] = ch;
    o->types[o->n++] = pl->types[i];
  }
  if (sort_by_price(p, o->types, price, o->n)) return NULL;
  return o;
}

static int launch(dt_plan *p) {
  uint32_t most = 1;
  for (size_t ci = 0; ci < p->claims.n; ci++)
    if (p->claims.v[ci]->nopt > most) most = p->claims.v[ci]->nopt;
  for (uint32_t pi = 0; pi < p->npools; pi++)
    if (p->pools[pi].ntypes > most) most = p->pools[pi].ntypes;
  double *price = dt__malloc(most * sizeof *price);
  uint8_t *member = dt__calloc(p->ntypes ? p->ntypes : 1, 1);
  uint32_t *sorted = dt__malloc(most * sizeof *sorted);
  if (!price || !member || !sorted) {
    dt__free(price);
    dt__free(member);
    dt__free(sorted);
    return DT_ENOMEM;
  }
  type_order orders[TYPE_ORDERS];
  uint32_t norders = 0, next_order = 0;
  for (uint32_t t = 0; t < p->ntypes; t++) p->types[t].memo_ok = p->types[t].smemo_ok = false;
  /* A claim like the one before it (same options, masks and contents, no
  ** reservation, no availability count changed since) has the same
  ** launchable types and best offering: cost packing makes many such. */
  struct {
    const rt_claim *k;
    int64_t used[DT_RES_MAX];
    uint64_t gen;
    uint32_t n;
    int32_t bt, bo;
  } last = {0};
  int rc = 0;
  for (size_t ci = 0; ci < p->claims.n && !rc; ci++) {
    if ((ci & 63) == 63 && dt__cancelled(p)) {
      rc = DT_ECANCELED;
      break;
    }
    rt_claim *k = p->claims.v[ci];
    if (k->fixed) {
      rc = launch_fixed(p, k);
      continue;
    }
    k->zopen = k->zmask;
    k->copen = k->ctmask;
    const rt_claim *q = last.k;
    int64_t used[DT_RES_MAX];
    memcpy(used, k->used, sizeof used);
    if (q && q->opt == k->opt && q->nopt == k->nopt && q->pool == k->pool && q->zmask == k->zmask &&
        q->ctmask == k->ctmask && !k->held.n && last.gen == p->avail_gen && !memcmp(last.used, used, sizeof used)) {
      k->final = q->final;
      k->nfinal = q->nfinal;
      rc = launch_claim(p, k, q->final, last.n, last.bt, last.bo);
      continue;
    }
    /* Types still fitting everything, each priced by its best offering. */
    uint32_t *fin = A(p, (k->nopt ? k->nopt : 1) * sizeof *fin), n = 0;
    if (!fin) {
      rc = DT_ENOMEM;
      break;
    }
    int32_t bt = -1, bo = -1;
    for (uint32_t i = 0; i < k->nopt; i++) {
      if (!fits(p, p->pools[k->pool].eff[k->opt[i]], k->used, (int64_t[DT_RES_MAX]){0})) continue;
      double cheapest;
      int32_t o = type_best(p, k, k->opt[i], &cheapest);
      if (o < 0) continue;
      if (off_better(p, k->opt[i], (uint32_t)o, bt, bo, k->used)) {
        bt = (int32_t)k->opt[i];
        bo = o;
      }
      price[n] = cheapest;
      fin[n++] = k->opt[i];
    }
    const type_order *ord = NULL;
    if (n > 1 && !k->held.n && !(ord = type_order_for(p, k, orders, &norders, &next_order, price))) {
      rc = DT_ENOMEM;
      break;
    }
    uint32_t j = 0;
    if (ord) { /* the shared order, filtered to this claim's types (every one is in it) */
      for (uint32_t i = 0; i < n; i++) member[fin[i]] = 1;
      for (uint32_t i = 0; i < ord->n && j < n; i++)
        if (member[ord->types[i]]) sorted[j++] = ord->types[i];
      for (uint32_t i = 0; i < n; i++) member[fin[i]] = 0;
      assert(j == n);
      if (j == n) memcpy(fin, sorted, n * sizeof *fin);
    }
    if (j != n && n > 1) { /* its own prices, sorted (the shared order's build reused the array) */
      for (uint32_t i = 0; ord && i < n; i++) type_best(p, k, fin[i], &price[i]);
      if ((rc = sort_by_price(p, fin, price, n))) break;
    }
    k->final = fin;
    k->nfinal = n < 600 ? n : 600;
    if (!k->held.n) {
      last.k = k;
      memcpy(last.used, used, sizeof used);
      last.gen = p->avail_gen;
      last.n = n;
      last.bt = bt;
      last.bo = bo;
    } else {
      last.k = NULL;
    }
    rc = launch_claim(p, k, fin, n, bt, bo);
  }
  dt__free(price);
  dt__free(member);
  dt__free(sorted);
  return rc;
}

/* Launch claim k on (bt, bo) unless the rank hook decides otherwise; fin[n]
** are the types still fitting, cheapest first. */
static int launch_claim(dt_plan *p, rt_claim *k, uint32_t *fin, uint32_t n, int32_t bt, int32_t bo) {
  rt_pool *pl = &p->pools[k->pool];
  const char *excluded = NULL;
  if (bt >= 0) {
    int rc = hook_pick(p, k, fin, n, &bt, &bo, &excluded);
    if (rc) return rc;
  }
  if (bt < 0 && excluded) {
    for (size_t i = 0; i < k->pods.n; i++)
      if (unschedulable(p, k->pods.v[i], excluded)) return DT_ENOMEM;
    return 0;
  }
  if (bt < 0) {
    for (size_t i = 0; i < k->pods.n; i++)
      if (unschedulable(p, k->pods.v[i],
                        "every offering of the instance types that fit is exhausted (availability counts)"))
        return DT_ENOMEM;
    return 0;
  }
  k->type = bt;
  k->off = bo;
  /* The claim requests its pods plus the DaemonSet overhead of its type. */
  const int64_t *e = p->pools[k->pool].eff[bt];
  for (uint32_t r = 0; r < p->nres; r++) k->used[r] += p->types[bt].alloc[r] - e[r];
  rt_off *of = &p->types[bt].off[bo];
  if (of->avail > 0) {
    of->avail--;
    p->types[bt].memo_ok = p->types[bt].smemo_ok = false;
    p->avail_gen++;
  }
  /* the units this claim held are released: the chosen one is now consumed */
  for (size_t h = 0; h < k->held.n; h++)
    for (uint32_t t = 0; t < p->ntypes; t++)
      if (k->held.v[h] >= p->off_base[t] && k->held.v[h] < p->off_base[t] + p->types[t].noff)
        p->types[t].off[k->held.v[h] - p->off_base[t]].held--;
  k->held.n = 0;
  pl->launched++;
  if (of->ct == DT_CT_SPOT) pl->launched_spot++;
  int rc = name_claim(p, k);
  if (rc) return rc;
  p->stats.nodes++;
  p->stats.hourly_cost += of->price;
  p->stats.scheduled += k->pods.n;
  return 0;
}

/* ------------------------------------------------------- for explain.c */

bool dt__x_tolerates(const dt_plan *p, const dt_podspec *s, const rt_taint *t, uint32_t n, bool prefer_ok,
                     const rt_taint **which) {
  return tolerates(p, s, t, n, prefer_ok, which);
}
bool dt__x_compatible(const dt_plan *p, const dt_reqs *node, const dt_reqs *pod, const dt_req **bad) {
  return compatible(p, node, pod, bad);
}
void dt__x_masks(const dt_plan *p, const dt_reqs *r, uint64_t *zmask, uint8_t *ctmask) { masks(p, r, zmask, ctmask); }
bool dt__x_fits(const dt_plan *p, const int64_t *alloc, const int64_t *used, const int64_t *req) {
  return fits(p, alloc, used, req);
}
int16_t dt__x_slot(const dt_plan *p, dt_sym key) { return slot_of(p, key); }
bool dt__x_ports_conflict(const dt_plan *p, const rt_port *a, uint32_t na, const rt_port *b, size_t nb) {
  return ports_conflict(p, a, na, b, nb);
}
void dt__x_diagnose_pool(dt_plan *p, rt_class *c, uint32_t pi, dt_buf *b) { diagnose_pool(p, c, pi, b); }
int dt__x_class_for(dt_plan *p, uint32_t si, const rt_relax *rx) { return class_for(p, si, rx); }

/* -------------------------------------------------------------- entry */

/*
** Static NodePools (spec.replicas), as Karpenter's static provisioning
** controller: a pool with fewer NodeClaims than replicas (its Nodes and
** in-flight claims not being deleted) gets the difference, within what
** limits.nodes leaves once every claim of the pool is counted (those being
** deleted too). Pending pods never size it. Each claim takes the offering
** the pool's requirements allow that launch would choose (reserved while
** available, then the cheapest, or the rank hook's), chosen before any pod,
** and pods then use it as they use in-flight capacity. A pool above its
** replicas is scaled down by dovetail disrupt (Overprovisioned).
*/
static int static_claims(dt_plan *p) {
  static const int64_t zero[DT_RES_MAX];
  for (uint32_t pi = 0; pi < p->npools; pi++) {
    rt_pool *pl = &p->pools[pi];
    const dt_nodepool *np = pl->src;
    if (pl->replicas < 0) continue;
    int64_t want = pl->replicas - pl->static_have, limit = -1;
    for (size_t i = 0; i < np->limits.n; i++)
      if (!strcmp(np->limits.v[i].name, "nodes")) limit = np->limits.v[i].milli / 1000;
    if (want < 0)
      note(p, "NodePool %s is static (spec.replicas %lld) and has %lld NodeClaims: dovetail disrupt scales it down "
              "(Overprovisioned)", np->name, (long long)pl->replicas, (long long)pl->static_have);
    if (want <= 0) continue;
    if (limit >= 0 && limit - pl->static_all < want) {
      int64_t room = limit - pl->static_all > 0 ? limit - pl->static_all : 0;
      note(p, "NodePool %s is static (spec.replicas %lld, %lld NodeClaims): limits.nodes %lld leaves room for %lld "
              "more (claims being deleted count until they are gone)",
           np->name, (long long)pl->replicas, (long long)pl->static_have, (long long)limit, (long long)room);
      want = room;
    }
    uint32_t *opt = A(p, (pl->ntypes ? pl->ntypes : 1) * sizeof *opt), n = 0;
    if (!opt) return DT_ENOMEM;
    for (uint32_t i = 0; i < pl->ntypes; i++)
      if (fits(p, pl->eff[pl->types[i]], zero, zero)) opt[n++] = pl->types[i];
    uint64_t zm;
    uint8_t cm;
    masks(p, &pl->reqs, &zm, &cm);
    int64_t made = 0;
    const char *why = NULL;
    if (!n)
      why = "no instance type of the catalog satisfies its requirements and holds its DaemonSets";
    else if (pl->has_min_values && !dt__min_values_ok(p, &pl->reqs, opt, n))
      why = "its instance types cannot meet its minValues";
    for (; !why && made < want; made++) {
      rt_claim *k = A(p, sizeof *k);
      uint32_t *one = A(p, sizeof *one);
      if (!k || !one) return DT_ENOMEM;
      k->pool = pi;
      k->idx = (uint32_t)p->claims.n;
      k->reqs = pl->reqs;
      k->zmask = k->zopen = zm;
      k->ctmask = k->copen = cm;
      k->type = k->off = -1;
      k->fixed = true;
      int32_t bt = -1, bo = -1;
      for (uint32_t i = 0; i < n; i++) {
        const rt_type *t = &p->types[opt[i]];
        for (uint32_t o = 0; o < t->noff; o++) {
          const rt_off *of = &t->off[o];
          if (!off_ok(of, zm, cm, pl->spot_max) || (of->avail >= 0 && of->avail - of->held <= 0)) continue;
          if (off_better(p, opt[i], o, bt, bo, NULL)) {
            bt = (int32_t)opt[i];
            bo = (int32_t)o;
          }
        }
      }
      const char *excluded = NULL;
      if (bt >= 0) {
        int rc = hook_pick(p, k, opt, n, &bt, &bo, &excluded);
        if (rc) return rc;
      }
      if (bt < 0 || (p->types[bt].off[bo].avail >= 0 &&
                     p->types[bt].off[bo].avail - p->types[bt].off[bo].held <= 0)) {
        why = excluded ? excluded : "every offering its requirements allow is exhausted (availability counts)";
        break;
      }
      rt_off *of = &p->types[bt].off[bo];
      k->zmask = 1ull << of->zone;
      k->ctmask = (uint8_t)(1u << of->ct);
      one[0] = (uint32_t)bt;
      k->opt = one;
      k->nopt = 1;
      /* the unit is its own from now: other claims see it held */
      if (of->avail >= 0) {
        of->held++;
        if (dt__vec_push(&k->held, p->off_base[bt] + (uint32_t)bo)) return DT_ENOMEM;
      }
      if (dt__vec_push(&p->claims, k)) {
        dt__free(k->held.v);
        return DT_ENOMEM;
      }
    }
    if (why)
      note(p, "NodePool %s is static (spec.replicas %lld, %lld NodeClaims): %lld of %lld new NodeClaims planned: %s",
           np->name, (long long)pl->replicas, (long long)pl->static_have, (long long)made, (long long)want, why);
    else
      note(p, "NodePool %s is static (spec.replicas %lld): %lld NodeClaims exist, %lld planned", np->name,
           (long long)pl->replicas, (long long)pl->static_have, (long long)made);
  }
  p->nfixed = (uint32_t)p->claims.n;
  return 0;
}

/* VMs that VirtualMachinePools are about to create need capacity: their
** virt-launcher pods join the pending pods, so a pool's scale-out and the
** nodes it needs are planned in one run. The plan then reads a view of the
** manifests (in its arena) with those pods appended. */
static int add_pool_vms(dt_plan *p, dt_error *err) {
  const dt_manifests *m = p->manifests;
  if (!m->vmpools.n) return 0;
  dt_pool_opts po = {p->opts.now, p->opts.seed, p->opts.policy};
  dt_pools *r = NULL;
  int rc = dt_pools_run(m, &po, &r, err);
  if (rc) return rc;
  size_t nc, extra = 0;
  const dt_pool_create *c = dt__pools_creates(r, &nc);
  for (size_t i = 0; i < nc; i++) extra += m->vmpools.v[c[i].pool].runs;
  if (extra) {
    dt_manifests *view = A(p, sizeof *view);
    dt_podspec *pods = A(p, (m->pods.n + extra) * sizeof *pods);
    if (!view || !pods) {
      dt_pools_free(r);
      return DT_ENOMEM;
    }
    *view = *m;
    if (m->pods.n) memcpy(pods, m->pods.v, m->pods.n * sizeof *pods);
    size_t n = m->pods.n;
    for (size_t i = 0; i < nc; i++) {
      const dt_vmpool *vp = &m->vmpools.v[c[i].pool];
      if (!vp->runs) continue;
      char name[600];
      snprintf(name, sizeof name, "virt-launcher-%s-%lld", vp->name, (long long)c[i].index);
      pods[n] = vp->launcher;
      pods[n].name = dt__arena_strdup(&p->arena, name);
      pods[n].count = 1;
      pods[n].owner = NULL;
      pods[n].seq = m->seq + n;
      n++;
    }
    view->pods.v = pods;
    view->pods.n = view->pods.cap = n;
    p->manifests = view;
    note(p, "%zu VMs that VirtualMachinePools create join the pending pods as virt-launcher pods", extra);
  }
  dt_pools_free(r);
  return p->arena.oom ? DT_ENOMEM : 0;
}

/* The names every plan interns first, in this order (the catalog's follow),
** and the base resources. */
static int plan_begin(dt_plan *p) {
  p->k_zone = dt__sym(&p->syms, DT_L_ZONE);
  p->k_ct = dt__sym(&p->syms, DT_L_CAPACITY_TYPE);
  p->k_type = dt__sym(&p->syms, DT_L_INSTANCE_TYPE);
  p->k_pool = dt__sym(&p->syms, DT_L_NODEPOOL);
  p->k_hostname = dt__sym(&p->syms, DT_L_HOSTNAME);
  p->k_interruptible = dt__sym(&p->syms, DT_L_INTERRUPTIBLE);
  p->k_resv = dt__sym(&p->syms, DT_L_RESERVATION);
  p->k_arch = dt__sym(&p->syms, DT_L_ARCH);
  p->k_os = dt__sym(&p->syms, DT_L_OS);
  p->k_region = dt__sym(&p->syms, DT_L_REGION);
  for (int i = 0; i < DT_CT_N; i++) p->ct_sym[i] = dt__sym(&p->syms, dt__ct_names[i]);
  static const char *base[] = {"cpu", "memory", "pods", "ephemeral-storage"};
  int rc = 0;
  for (int i = 0; i < 4 && rc >= 0; i++) rc = res_index(p, base[i], NULL);
  return rc < 0 || p->syms.oom ? DT_ENOMEM : 0;
}

/*
** A catalog compiled once for many runs on it (a disruption pass's
** simulations): a plan stopped after compile_catalog. A run given it starts
** from a copy: its symbol table borrows the compiled names (so every symbol
** has the number compile_catalog would give it), type keys and label values
** are shared read-only, and the types and their offerings are copied (marks,
** price hooks and launches change them). The decisions are the same, byte
** for byte; the catalog is not compiled again.
*/
struct dt_compiled_catalog {
  dt_plan *base;
};

int dt__catalog_compile(const dt_catalog *catalog, dt_compiled_catalog **out, dt_error *err) {
  *out = NULL;
  dt_compiled_catalog *cc = dt__calloc(1, sizeof *cc);
  dt_plan *p = dt__calloc(1, sizeof *p);
  if (!cc || !p) {
    dt__free(cc), dt__free(p);
    return dt__err(err, DT_ENOMEM, "out of memory");
  }
  p->catalog = catalog;
  p->ex_pod = -1;
  int rc = plan_begin(p);
  if (!rc) rc = compile_catalog(p, err);
  if (!rc && (p->arena.oom || p->syms.oom)) rc = DT_ENOMEM;
  if (rc) {
    dt_plan_free(p);
    dt__free(cc);
    return rc == DT_ENOMEM ? dt__err(err, rc, "out of memory") : rc;
  }
  cc->base = p;
  *out = cc;
  return 0;
}

void dt__catalog_compiled_free(dt_compiled_catalog *cc) {
  if (!cc) return;
  dt_plan_free(cc->base);
  dt__free(cc);
}

static int copy_compiled(dt_plan *p, const dt_plan *b) {
  if (dt__symtab_clone(&p->syms, &b->syms)) return DT_ENOMEM;
  p->k_zone = b->k_zone, p->k_ct = b->k_ct, p->k_type = b->k_type, p->k_pool = b->k_pool;
  p->k_hostname = b->k_hostname, p->k_interruptible = b->k_interruptible, p->k_resv = b->k_resv;
  p->k_arch = b->k_arch, p->k_os = b->k_os, p->k_region = b->k_region;
  memcpy(p->ct_sym, b->ct_sym, sizeof p->ct_sym);
  p->nres = b->nres;
  memcpy(p->res_names, b->res_names, sizeof p->res_names);
  p->nzones = b->nzones;
  memcpy(p->zones, b->zones, sizeof p->zones);
  memcpy(p->zone_rank, b->zone_rank, sizeof p->zone_rank);
  p->nkeyslot = b->nkeyslot, p->nslots = b->nslots, p->keyslot = b->keyslot, p->slot_key = b->slot_key;
  p->ntype_at = b->ntype_at, p->type_at = b->type_at;
  p->ntypes = b->ntypes;
  p->types = A(p, (b->ntypes ? b->ntypes : 1) * sizeof *p->types);
  if (!p->types) return DT_ENOMEM;
  memcpy(p->types, b->types, b->ntypes * sizeof *p->types);
  for (uint32_t t = 0; t < p->ntypes; t++) {
    rt_off *off = A(p, (p->types[t].noff ? p->types[t].noff : 1) * sizeof *off);
    if (!off) return DT_ENOMEM;
    memcpy(off, b->types[t].off, p->types[t].noff * sizeof *off);
    p->types[t].off = off;
  }
  return 0;
}

static int plan_run(const dt_catalog *catalog, const dt_compiled_catalog *cc, dt_cluster *cl, const dt_overlay *ov,
                    const dt_manifests *manifests, const dt_plan_opts *opts, dt_plan **out, dt_error *err) {
  *out = NULL;
  dt_plan *p = dt__calloc(1, sizeof *p);
  if (!p) return dt__err(err, DT_ENOMEM, "out of memory");
  p->catalog = catalog;
  p->manifests = manifests;
  p->ex_pod = -1;
  if (opts) p->opts = *opts;
  double t0 = dt__now_ms();
  int rc;
  if (cl) {
    /* one chunk for what an overlay allocates most: its nodes, a name index, the types */
    dt__arena_reserve(&p->arena, manifests->nodes.n * (sizeof(rt_node) + 4 * sizeof(int32_t)) +
                                     cl->base->ntypes * (sizeof(rt_type) + 8 * sizeof(rt_off)) +
                                     cl->base->syms.n * sizeof(int32_t) + (1u << 20));
    p->cl = cl;
    p->ov = ov;
    p->opts.explain = NULL; /* explain.c reads the manifests' own pods */
    if ((rc = copy_compiled(p, cl->base))) goto fail;
    p->early_syms = cl->base->early_syms;
  } else if (cc && !manifests->vmpools.n) { /* the pools' VMs would intern names before the catalog's */
    if ((rc = copy_compiled(p, cc->base))) goto fail;
  } else {
    if ((rc = plan_begin(p)) || (rc = add_pool_vms(p, err)) || (rc = compile_catalog(p, err))) goto fail;
  }
  if ((rc = apply_marks(p)) || (rc = build_snapshot(p)) ||
      (rc = apply_price_hook(p)) || (rc = compile_pools(p, err)) || (rc = compile_nodes(p, err))) goto fail;
  if ((rc = compile_pods(p, err)) || (rc = static_claims(p))) goto fail;
  if (p->opts.explain && (rc = dt__explain_begin(p, err))) goto fail;
  if ((rc = solve(p))) goto fail;
  if (!dt__cancelled(p) && p->opts.packing != DT_PACKING_FFD && (rc = dt__pack_improve(p))) goto fail;
  if (dt__cancelled(p)) {
    rc = DT_ECANCELED;
    goto fail;
  }
  if ((rc = launch(p))) goto fail;
  if (p->ex && (rc = dt__explain_finish(p))) goto fail;
  if (p->arena.oom || p->syms.oom || p->class_sigs.oom || p->group_sigs.oom) {
    rc = DT_ENOMEM;
    goto fail;
  }
  p->stats.pods = p->npods;
  p->stats.scheduled += p->bindings.n;
  p->stats.unschedulable = p->unsched.n;
  p->stats.schedule_ms = dt__now_ms() - t0;
  *out = p;
  return 0;
fail:
  if (rc == DT_ECANCELED) {
    dt__err(err, rc, "cancelled");
  } else if (rc == DT_ENOMEM || p->arena.oom || p->syms.oom) {
    rc = DT_ENOMEM;
    dt__err(err, rc, "out of memory while planning");
  } else if (err && !err->msg[0]) {
    dt__err(err, rc, "planning failed");
  }
  dt_plan_free(p);
  return rc;
}

int dt_plan_run(const dt_catalog *catalog, const dt_manifests *manifests, const dt_plan_opts *opts, dt_plan **out,
                dt_error *err) {
  return plan_run(catalog, NULL, NULL, NULL, manifests, opts, out, err);
}

int dt__plan_run_compiled(const dt_catalog *catalog, const dt_compiled_catalog *cc, const dt_manifests *manifests,
                          const dt_plan_opts *opts, dt_plan **out, dt_error *err) {
  return plan_run(catalog, cc, NULL, NULL, manifests, opts, out, err);
}

int dt__plan_run_overlay(const dt_catalog *catalog, dt_cluster *cl, const dt_manifests *view, const dt_overlay *ov,
                         const dt_plan_opts *opts, dt_plan **out, dt_error *err) {
  if (view->pods.v != cl->pods || view->pods.n != cl->npods || view->vmpools.n) {
    *out = NULL;
    return dt__err(err, DT_EINVAL, "internal: an overlay's view must hold the cluster's pods and no VM pools");
  }
  return plan_run(catalog, NULL, cl, ov, view, opts, out, err);
}

/* ------------------------------------------------------------ the cluster */

int dt__cluster_new(const dt_catalog *catalog, const dt_manifests *m, dt_cluster **out, dt_error *err) {
  *out = NULL;
  dt_cluster *cl = dt__calloc(1, sizeof *cl);
  dt_plan *p = dt__calloc(1, sizeof *p);
  if (!cl || !p) {
    dt__free(cl), dt__free(p);
    return dt__err(err, DT_ENOMEM, "out of memory");
  }
  cl->base = p;
  p->catalog = catalog;
  p->manifests = m;
  p->ex_pod = -1;
  /* the order a plan interns names in: the catalog's, then the pools' */
  int rc = plan_begin(p);
  if (!rc) rc = compile_catalog(p, err);
  if (!rc) rc = compile_pools(p, err);
  if (!rc && (p->arena.oom || p->syms.oom)) rc = DT_ENOMEM;
  if (rc) {
    dt__cluster_free(cl);
    return rc == DT_ENOMEM ? dt__err(err, rc, "out of memory") : rc;
  }
  *out = cl;
  return 0;
}

int dt__cluster_add_node(dt_cluster *cl, const dt_node *n, dt_error *err) {
  dt_plan *p = cl->base;
  cnode c;
  memset(&c, 0, sizeof c);
  int rc = compile_node(p, n, &c.node, &c.f, err);
  if (rc) return rc;
  c.node.pool = -1;
  c.may_pair = n->claim_name && (n->node_name || n->provider_id);
  if (cl->has_pods && n->node_name) dt__sym(&p->syms, n->node_name); /* as a plan's node index interns it */
  uint32_t id = (uint32_t)cl->nodes.n;
  if (dt__vec_push(&cl->nodes, c) || dt__vec_push(&cl->byname, id)) return DT_ENOMEM;
  /* by name, after every node of the same name */
  size_t lo = 0, hi = cl->byname.n - 1;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (strcmp(cl->nodes.v[cl->byname.v[mid]].node.src->name, n->name) <= 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  memmove(&cl->byname.v[lo + 1], &cl->byname.v[lo], (cl->byname.n - 1 - lo) * sizeof *cl->byname.v);
  cl->byname.v[lo] = id;
  return p->arena.oom || p->syms.oom ? DT_ENOMEM : 0;
}

/* Pod i's use added (sign 1) to, or taken (-1) from, its node name. */
static int name_use_add(dt_cluster *cl, uint32_t i, int sign) {
  dt_sym s = cl->pod_node[i];
  if (!s) return 0;
  while (cl->use.n <= s) {
    name_use z;
    memset(&z, 0, sizeof z);
    if (dt__vec_push(&cl->use, z)) return DT_ENOMEM;
  }
  name_use *u = &cl->use.v[s];
  if (!u->listed) {
    if (dt__vec_push(&cl->used_names, s)) return DT_ENOMEM;
    u->listed = true;
  }
  int64_t count = cl->pods[i].count;
  for (uint32_t r = 0; r < DT_RES_MAX; r++) u->used[r] += sign * cl->specs[i].req[r] * count;
  u->pods += sign * count;
  u->specs += sign;
  return 0;
}

int dt__cluster_set_pods(dt_cluster *cl, const dt_podspec *pods, size_t n, dt_error *err) {
  dt_plan *p = cl->base;
  cl->pods = pods;
  cl->npods = (uint32_t)n;
  cl->specs = A(p, (n ? n : 1) * sizeof *cl->specs);
  cl->pod_node = A(p, (n ? n : 1) * sizeof *cl->pod_node);
  if (!cl->specs || !cl->pod_node) return DT_ENOMEM;
  for (size_t i = 0; i < n; i++) cl->specs[i].src = &pods[i];
  int rc = volume_topologies(p, cl->specs, (uint32_t)n);
  for (size_t i = 0; i < n && !rc; i++) {
    const dt_podspec *d = &pods[i];
    bool missing;
    rc = compile_spec(p, d, &cl->specs[i], &missing, err);
    if (!rc && missing) rc = dt__vec_push(&cl->rc_missing, (uint32_t)i);
    if (!rc && (d->nspread || d->naff || d->npaff || d->nanti || d->npanti)) rc = dt__vec_push(&cl->termed, (uint32_t)i);
    if (!rc && d->owner) rc = dt__vec_push(&cl->owned, (uint32_t)i);
    cl->ported |= d->nports > 0;
  }
  if (rc) return rc;
  /* then what a plan interns after its pods: the claims' node names */
  for (size_t i = 0; i < cl->nodes.n; i++)
    if (cl->nodes.v[i].node.src->node_name) dt__sym(&p->syms, cl->nodes.v[i].node.src->node_name);
  cl->has_pods = true;
  for (uint32_t i = 0; i < cl->npods && !rc; i++) {
    cl->pod_node[i] = pods[i].node_name ? dt__sym(&p->syms, pods[i].node_name) : 0;
    rc = name_use_add(cl, i, 1);
  }
  return rc ? rc : p->arena.oom || p->syms.oom ? DT_ENOMEM : 0;
}

int dt__cluster_bind(dt_cluster *cl, size_t pod, const char *node) {
  int rc = name_use_add(cl, (uint32_t)pod, -1);
  cl->pod_node[pod] = node ? dt__sym(&cl->base->syms, node) : 0;
  if (!rc) rc = name_use_add(cl, (uint32_t)pod, 1);
  return rc ? rc : cl->base->syms.oom ? DT_ENOMEM : 0;
}

void dt__cluster_free(dt_cluster *cl) {
  if (!cl) return;
  dt_plan_free(cl->base);
  dt__free(cl->nodes.v);
  dt__free(cl->byname.v);
  dt__free(cl->use.v);
  dt__free(cl->used_names.v);
  dt__free(cl->rc_missing.v);
  dt__free(cl->termed.v);
  dt__free(cl->owned.v);
  dt__symtab_free(&cl->claimed);
  dt__free(cl->claimed_head.v);
  dt__free(cl->claimed_on.v);
  dt__free(cl);
}

/* The view's nodes from the cluster's: what compile_nodes makes of them,
** without a string compare. */
static int compile_nodes_overlay(dt_plan *p, dt_error *err) {
  (void)err;
  const dt_manifests *m = p->manifests;
  const dt_cluster *cl = p->cl;
  size_t nv = m->nodes.n;
  p->nodes = A(p, (nv ? nv : 1) * sizeof *p->nodes);
  int32_t *type = A(p, (nv ? nv : 1) * sizeof *type);
  int32_t *at = A(p, (cl->nodes.n ? cl->nodes.n : 1) * sizeof *at);
  p->ov_at = A(p, (cl->nodes.n ? cl->nodes.n : 1) * sizeof *p->ov_at);
  if (!p->nodes || !type || !at || !p->ov_at) return DT_ENOMEM;
  memset(p->ov_at, 0xff, cl->nodes.n * sizeof *p->ov_at);
  bool pairs = false;
  for (size_t i = 0; i < nv; i++) pairs |= cl->nodes.v[p->ov->node[i]].may_pair;
  int32_t *paired = NULL;
  if (pairs) {
    paired = A(p, nv * sizeof *paired);
    if (!paired || dt__claims_paired(m, paired)) return DT_ENOMEM;
  }
  memset(at, 0xff, cl->nodes.n * sizeof *at);
  for (size_t i = 0; i < nv; i++) {
    const cnode *c = &cl->nodes.v[p->ov->node[i]];
    if (paired && paired[i] >= 0) continue;
    count_static(p, &m->nodes.v[i], c->f.own);
    if (c->f.skip) {
      skipped_node(p, &m->nodes.v[i], c->f.itype);
      continue;
    }
    at[p->ov->node[i]] = (int32_t)i;
  }
  /* cmp_node's order: initialized first, then by name, then view order */
  for (int init = 1; init >= 0; init--)
    for (size_t k = 0; k < cl->byname.n; k++) {
      uint32_t id = cl->byname.v[k];
      int32_t vi = at[id];
      if (vi < 0 || m->nodes.v[vi].initialized != (bool)init) continue;
      p->ov_at[id] = (int32_t)p->nnodes;
      rt_node *r = &p->nodes[p->nnodes];
      *r = cl->nodes.v[id].node;
      r->src = &m->nodes.v[vi];
      node_pool(p, r, cl->nodes.v[id].f.pool);
      type[p->nnodes++] = cl->nodes.v[id].f.type;
    }
  charge_nodes(p, type);
  return 0;
}

/* The cluster's index of the names its nodes carry, brought up to its
** nodes; ix->cl stays NULL when a node of the view carries other names than
** its cluster node (the plan then builds its own). */
static int claims_ix_cluster(dt_plan *p, claims_ix *ix) {
  dt_cluster *cl = p->cl;
  bool any = false;
  for (uint32_t id = 0; id < cl->nodes.n; id++) {
    int32_t at = p->ov_at[id];
    if (at < 0) continue;
    const dt_node *v = p->nodes[at].src, *c = cl->nodes.v[id].node.src;
    if (v->pods != c->pods || v->npods != c->npods) return 0;
    any |= v->npods > 0;
  }
  for (; cl->claimed_upto < cl->nodes.n; cl->claimed_upto++) {
    const dt_node *n = cl->nodes.v[cl->claimed_upto].node.src;
    for (size_t k = 0; k < n->npods; k++) {
      dt_sym sy = dt__sym(&cl->claimed, n->pods[k]);
      if (cl->claimed.oom) return DT_ENOMEM;
      while (cl->claimed_head.n <= sy)
        if (dt__vec_push(&cl->claimed_head, -1)) return DT_ENOMEM;
      claim_on e = {cl->claimed_upto, cl->claimed_head.v[sy]};
      if (dt__vec_push(&cl->claimed_on, e)) return DT_ENOMEM;
      cl->claimed_head.v[sy] = (int32_t)cl->claimed_on.n - 1;
    }
  }
  ix->cl = cl;
  ix->any = any;
  return 0;
}

/* An overlay plan's specs are the cluster's. */
static int cluster_specs(dt_plan *p) {
  const dt_cluster *cl = p->cl;
  p->nspecs = cl->npods;
  p->specs = cl->specs;
  for (size_t k = 0; k < cl->rc_missing.n; k++)
    if (!spec_absent(p, cl->rc_missing.v[k])) runtime_class_note(p, &cl->pods[cl->rc_missing.v[k]]);
  return 0;
}

/*
** What bound pods use of an overlay's nodes, from the per-name sums: each
** node takes the sums of the names it answers to, less the pods this plan
** moves or leaves out. *scan tells that the pods must still be visited one
** by one (topology groups, host ports, or pods bound to a node outside the
** view, which each get a note); *bound is how many pods are bound.
*/
static void overlay_use(dt_plan *p, bool *scan, size_t *bound) {
  const dt_cluster *cl = p->cl;
  node_by_sym(p, 0); /* the name index */
  int64_t orphans = 0, pods = 0;
  for (size_t k = 0; k < cl->used_names.n; k++) {
    dt_sym s = cl->used_names.v[k];
    const name_use *u = &cl->use.v[s];
    pods += u->pods;
    int32_t n = node_by_sym(p, s);
    if (n < 0) {
      orphans += u->specs;
      continue;
    }
    for (uint32_t r = 0; r < DT_RES_MAX; r++) p->nodes[n].used[r] += u->used[r];
  }
  for (uint32_t si = 0; si < cl->npods; si++) {
    if (p->ov->pod[si] == DT_OV_BOUND) continue; /* most pods stay bound */
    dt_sym s = cl->pod_node[si];
    if (!s) continue;
    int64_t count = cl->pods[si].count;
    pods -= count;
    int32_t n = node_by_sym(p, s);
    if (n < 0) {
      orphans--;
      continue;
    }
    for (uint32_t r = 0; r < DT_RES_MAX; r++) p->nodes[n].used[r] -= cl->specs[si].req[r] * count;
  }
  *scan = orphans > 0 || p->groups.n || cl->ported;
  *bound = (size_t)pods;
}

void dt_plan_stats_get(const dt_plan *plan, dt_plan_stats *out) { *out = plan->stats; }

void dt_plan_free(dt_plan *p) {
  if (!p) return;
  dt__explain_free(p->ex);
  dt__free(p->marks.v);
  for (size_t i = 0; i < p->policies.n; i++) dt__policy_round_end(p->policies.v[i]);
  dt__free(p->policies.v);
  dt__free(p->scores.v);
  for (size_t i = 0; i < p->classes.n; i++) dt__free(p->classes.v[i].claim_failed);
  dt__free(p->classes.v);
  dt__free(p->class_of_sig.v);
  dt__symtab_free(&p->class_sigs);
  for (size_t i = 0; i < p->groups.n; i++) {
    dt__free(p->groups.v[i].host.v);
    dt__free(p->groups.v[i].ohost.v);
  }
  dt__free(p->groups.v);
  dt__symtab_free(&p->group_sigs);
  for (uint32_t i = 0; p->nodes && i < p->nnodes; i++) dt__free(p->nodes[i].ports.v);
  for (size_t i = 0; i < p->claims.n; i++) {
    dt__free(p->claims.v[i]->pods.v);
    dt__free(p->claims.v[i]->ports.v);
    dt__free(p->claims.v[i]->held.v);
  }
  dt__free(p->claims.v);
  dt__free(p->bindings.v);
  dt__free(p->unsched.v);
  dt__free(p->notes.v);
  dt__symtab_free(&p->syms);
  dt__arena_free(&p->arena);
  dt__free(p);
}
