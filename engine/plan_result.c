/*
** plan_result.c: a plan's results, taken from the solver's state once it is
** done. dt__plan_result_build copies into the result's own arena everything
** the accessors and the renderer (plan.c) read: the new claims with what
** their NodeClaim objects need (requirements, labels, the NodePool's
** template, the instance type's labels and allocatable), the bindings, the
** unschedulable pods, the offerings marked unavailable, the notes and the
** summary's figures. dt_plan_run then frees the solver's state
** (dt__plan_state_free), so a plan outlives the catalog and manifests it
** was computed from, and nothing reads the solver's state after the run.
*/
#include "schedule.h"
#include "sched_int.h"

#include "hooks.h"

#include <stdlib.h>
#include <string.h>

/* A distinct list of a claim's launchable types (rt_claim.final): claims
** opened for like pods often end with equal lists, and what the result
** derives from one (hundreds of names, sorted or not) is then built once
** and shared, read-only, by their records. */
typedef struct optset {
  const uint32_t *final; /* the first claim's list, alive until the build ends */
  uint32_t n;
  const char **opts;   /* the names in the list's order (price order) */
  const char **sorted; /* the names by name; NULL until a claim needs them */
} optset;

/* The types of one option list that offer at one offering (zone, capacity
** type and reservation) of one NodePool: a claim's pinned instance types. */
typedef struct pinset {
  uint32_t set, pool, zone, ct;
  dt_sym resv;
  uint32_t npin;
  uint32_t *pin;       /* the types, in the list's order */
  const char **sorted; /* their names by name; NULL until a claim pins them */
} pinset;

/* Open addressing over the indices of a vector (ix + 1, 0 empty). */
typedef struct htab {
  uint64_t *h;
  uint32_t *ix;
  uint32_t cap, n;
} htab;

typedef DT_VEC(dt_ncreq) ncreqs;

typedef struct rb {
  dt_plan *p;
  dt_arena *a;
  const char **tname;                        /* each type's name in the result, copied once */
  const char *zname[64], *rname[DT_RES_MAX]; /* the same for the zones and resources */
  uint8_t rkind[DT_RES_MAX];                 /* each resource's quantity format, QTY_* */
  int32_t *tidx;                             /* each type's record in res.types, -1 none yet */
  uint32_t *by_rank;                         /* the types by name (their ranks) */
  uint32_t *mark;                            /* names_sorted's marks, stamp the last one */
  uint32_t stamp;
  uint64_t *offz;   /* per NodePool, type and capacity type: the zones offers_at finds */
  bool *offz_ready; /* per NodePool: its part of offz filled */
  /* the zones' and capacity types' names as arrays in the result: &zone1[z]
  ** is the one value of every claim pinned to zone z, shared */
  const char **zone1, **ct1;
  DT_VEC(optset) sets;
  DT_VEC(pinset) pins;
  htab set_tab, pin_tab;
  const uint32_t *last_final; /* the list the claim before had (launch shares a list */
  uint32_t last_n, last_set;  /* among like claims in a row), and its set */
  ncreqs rs;                  /* a claim's requirements while they are gathered */
} rb;

static const rt_off *claim_off(const dt_plan *p, const rt_claim *k) { return &p->types[k->type].off[k->off]; }

static const char *res_str(rb *b, const char *s) { return s ? dt__arena_strdup(b->a, s) : NULL; }

/* s[0..n) and a NUL in the result, not cleared first as it is all written. */
static const char *res_strn(rb *b, const char *s, size_t n) {
  char *v = dt__arena_raw(b->a, n + 1);
  if (v) {
    memcpy(v, s, n);
    v[n] = 0;
  }
  return v;
}

static const char *res_pod(rb *b, uint32_t pod) {
  const rt_pod *pd = &b->p->pods[pod];
  const dt_podspec *s = &b->p->manifests->pods.v[pd->spec];
  size_t a = strlen(s->ns), n = strlen(s->name);
  char tmp[700];
  if (pd->ordinal < 0 && a + n + 2 <= sizeof tmp) { /* <namespace>/<name> as dt__pod_name writes it, in place */
    char *v = dt__arena_raw(b->a, a + n + 2);
    if (v) {
      memcpy(v, s->ns, a);
      v[a] = '/';
      memcpy(v + a + 1, s->name, n + 1);
    }
    return v;
  }
  dt__pod_name(b->p, pd, tmp, sizeof tmp);
  return res_strn(b, tmp, strlen(tmp));
}

/* How dt__fmt_quantity writes a resource's quantities: cores (whole or
** milli), bytes (with the largest binary suffix that divides), plain. */
enum { QTY_CPU, QTY_BYTES, QTY_PLAIN };

static uint8_t qty_kind(const char *res) {
  if (!strcmp(res, "cpu")) return QTY_CPU;
  return !strcmp(res, "memory") || !strcmp(res, "ephemeral-storage") || !strncmp(res, "hugepages-", 10) ? QTY_BYTES
                                                                                                        : QTY_PLAIN;
}

/* v in decimal at out; its length. */
static size_t put_u64(char *out, uint64_t v) {
  char d[20];
  size_t n = 0;
  do d[n++] = (char)('0' + v % 10);
  while (v /= 10);
  for (size_t i = 0; i < n; i++) out[i] = d[n - 1 - i];
  return n;
}

/* Resource r's quantity milli in the result, as dt__fmt_quantity writes it
** (the same text without a printf per value: a plan writes thousands). */
static const char *res_qty(rb *b, uint32_t r, int64_t milli) {
  char tmp[64];
  size_t n;
  if (milli < 0) { /* none in a plan; the general routine for them all the same */
    dt__fmt_quantity(tmp, sizeof tmp, b->p->res_names[r], milli);
    return res_str(b, tmp);
  }
  uint64_t v = (uint64_t)milli;
  if (v % 1000) {
    n = put_u64(tmp, v);
    tmp[n++] = 'm';
  } else {
    v /= 1000;
    int k = -1;
    if (b->rkind[r] == QTY_BYTES && v)
      while (k < 5 && v % 1024 == 0) v /= 1024, k++;
    n = put_u64(tmp, v);
    if (k >= 0) {
      tmp[n++] = "KMGTPE"[k];
      tmp[n++] = 'i';
    }
  }
  return res_strn(b, tmp, n);
}

static dt_kvs res_kvs(rb *b, const dt_kvs *src) {
  dt_kvs out = {0};
  dt_kv *v = dt__arena_alloc(b->a, src->n * sizeof *v + 1);
  for (size_t i = 0; v && i < src->n; i++)
    v[i] = (dt_kv){(char *)res_str(b, src->v[i].key), (char *)res_str(b, src->v[i].val)};
  if (v) out = (dt_kvs){src->n, v};
  return out;
}

static const dt_taint *res_taints(rb *b, const dt_taint *t, size_t n) {
  dt_taint *v = dt__arena_alloc(b->a, n * sizeof *v + 1);
  for (size_t i = 0; v && i < n; i++)
    v[i] = (dt_taint){(char *)res_str(b, t[i].key), (char *)res_str(b, t[i].value), (char *)res_str(b, t[i].effect)};
  return v;
}

/* ------------------------------------------------------------ option lists */

/* The names of types ti[0..n) by name into out, through the types' ranks
** (one pass over the types, not a sort by strcmp). */
static void names_sorted(rb *b, const uint32_t *ti, uint32_t n, const char **out) {
  const dt_plan *p = b->p;
  if (n == 1) {
    out[0] = b->tname[ti[0]];
    return;
  }
  uint32_t stamp = ++b->stamp, *mark = b->mark;
  const uint32_t *by_rank = b->by_rank;
  for (uint32_t i = 0; i < n; i++) mark[ti[i]] = stamp;
  size_t k = 0;
  for (uint32_t r = 0; r < p->ntypes && k < n; r++)
    if (mark[by_rank[r]] == stamp) out[k++] = b->tname[by_rank[r]];
}

/* The slot of the entry hashed h in t for which same(b, entry, key) holds,
** or the empty slot where it goes (*ix == 0); NULL when out of memory. The
** table doubles at half full, so a probe ends. */
static uint32_t *htab_slot(htab *t, uint64_t h, bool (*same)(const rb *, uint32_t, const void *), const rb *b,
                           const void *key) {
  if (2 * (t->n + 1) > t->cap) {
    uint32_t cap = t->cap ? 2 * t->cap : 64;
    uint64_t *nh = dt__malloc(cap * sizeof *nh);
    uint32_t *nix = dt__calloc(cap, sizeof *nix);
    if (!nh || !nix) {
      dt__free(nh);
      dt__free(nix);
      return NULL;
    }
    for (uint32_t i = 0; i < t->cap; i++) {
      if (!t->ix[i]) continue;
      uint32_t j = (uint32_t)t->h[i] & (cap - 1);
      while (nix[j]) j = (j + 1) & (cap - 1);
      nh[j] = t->h[i];
      nix[j] = t->ix[i];
    }
    dt__free(t->h);
    dt__free(t->ix);
    t->h = nh;
    t->ix = nix;
    t->cap = cap;
  }
  uint32_t j = (uint32_t)h & (t->cap - 1);
  while (t->ix[j] && (t->h[j] != h || !same(b, t->ix[j] - 1, key))) j = (j + 1) & (t->cap - 1);
  t->h[j] = h;
  return &t->ix[j];
}

static void htab_free(htab *t) {
  dt__free(t->h);
  dt__free(t->ix);
}

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v;
  h *= 0x9e3779b97f4a7c15ull;
  return h ^ h >> 29;
}

typedef struct final_key {
  const uint32_t *v;
  uint32_t n;
} final_key;

static bool same_final(const rb *b, uint32_t s, const void *key) {
  const optset *o = &b->sets.v[s];
  const final_key *f = key;
  return o->n == f->n && (o->final == f->v || !f->n || !memcmp(o->final, f->v, f->n * sizeof *f->v));
}

/* The option set of claim k's list, made on first use; its index in
** b->sets, or UINT32_MAX when out of memory. */
static uint32_t option_set(rb *b, const rt_claim *k) {
  if (b->last_final && k->final == b->last_final && k->nfinal == b->last_n) return b->last_set;
  /* hashed by its length and at most 32 of its types spread over it (a
  ** list is hundreds long and same_final compares the whole) */
  uint64_t h = mix(0, k->nfinal);
  uint32_t step = k->nfinal / 32 + 1;
  for (uint32_t i = 0; i < k->nfinal; i += step) h = mix(h, k->final[i]);
  final_key key = {k->final, k->nfinal};
  uint32_t *slot = htab_slot(&b->set_tab, h, same_final, b, &key);
  if (!slot) return UINT32_MAX;
  if (!*slot) {
    const char **opts = dt__arena_raw(b->a, k->nfinal * sizeof *opts + 1);
    if (!opts || dt__vec_push(&b->sets, ((optset){k->final, k->nfinal, opts, NULL}))) return UINT32_MAX;
    for (uint32_t j = 0; j < k->nfinal; j++) opts[j] = b->tname[k->final[j]];
    *slot = (uint32_t)b->sets.n;
    b->set_tab.n++;
  }
  b->last_final = k->final;
  b->last_n = k->nfinal;
  return b->last_set = *slot - 1;
}

/* Set s's names by name, made on first use; NULL when out of memory. */
static const char **set_sorted(rb *b, uint32_t s) {
  optset *o = &b->sets.v[s];
  if (!o->sorted && (o->sorted = dt__arena_raw(b->a, o->n * sizeof *o->sorted + 1)))
    names_sorted(b, o->final, o->n, o->sorted);
  return o->sorted;
}

/* ------------------------------------------------------------ claims */

/* Whether planned pod i is a CapacityBuffer's chunk (a virtual pod). */
static bool pod_virtual(const dt_plan *p, uint32_t i) { return p->manifests->pods.v[p->pods[i].spec].buffer; }

/* Claim k, of option set s, as the accessors give it. */
static void claim_info(rb *b, const rt_claim *k, uint32_t s, dt_claim_info *c) {
  dt_plan *p = b->p;
  const rt_off *o = claim_off(p, k);
  c->name = res_str(b, dt__sym_str(&p->syms, k->name));
  c->nodepool = p->res.pools[k->pool].name; /* the pool record's copy */
  c->instance_type = b->tname[k->type];
  c->zone = b->zname[o->zone];
  c->capacity_type = dt__ct_names[o->ct];
  c->reservation_id = o->resv ? res_str(b, dt__sym_str(&p->syms, o->resv)) : NULL;
  c->price = o->price;
  dt_resource_info *req = dt__arena_alloc(b->a, p->nres * sizeof *req + 1);
  for (uint32_t r = 0; req && r < p->nres; r++) {
    if (!k->used[r]) continue;
    req[c->nrequests++] = (dt_resource_info){b->rname[r], res_qty(b, r, k->used[r]), k->used[r]};
  }
  c->requests = req;
  /* its pods in the order placed, a CapacityBuffer's chunks last */
  const char **pods = dt__arena_alloc(b->a, k->pods.n * sizeof *pods + 1);
  size_t np = 0;
  for (int virt = 0; virt < 2; virt++)
    for (size_t j = 0; pods && j < k->pods.n; j++)
      if (pod_virtual(p, k->pods.v[j]) == virt) {
        pods[np++] = res_pod(b, k->pods.v[j]);
        c->nvirtual += (size_t)virt;
      }
  c->pods = pods;
  c->npods = pods ? k->pods.n : 0;
  c->instance_type_options = b->sets.v[s].opts;
  c->noptions = k->nfinal;
  int32_t row = p->ovl ? dt__ovl_row(p->ovl, p->pools[k->pool].src->name) : -1;
  for (uint32_t j = 0; row >= 0 && j < k->nfinal; j++) {
    uint8_t f = p->ovl->flags[(size_t)row * p->ovl->ntypes + k->final[j]];
    c->price_overlaid |= (f & OVL_F_PRICE) ? 1 : 0;
    c->capacity_overlaid |= (f & OVL_F_CAP) ? 1 : 0;
  }
}

/* ------------------------------------------------- NodeClaim requirements */

static int cmp_cstr(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Append a requirement whose n values v are in the result's arena, sorting
** them by name unless they already are. */
static int push_vals(ncreqs *out, const char *key, const char *op, const char **v, size_t n, int32_t mv, bool sorted) {
  if (n > 1 && !sorted) qsort(v, n, sizeof *v, cmp_cstr);
  return dt__vec_push(out, ((dt_ncreq){key, op, n, v, mv, NULL}));
}

/* The same with values vals[0..n) (strings of the result) copied into it. */
static int push_req(rb *b, ncreqs *out, const char *key, const char *op, const char *const *vals, size_t n, int32_t mv,
                    bool sorted) {
  const char **v = n ? dt__arena_alloc(b->a, n * sizeof *v) : NULL;
  if (n && !v) return DT_ENOMEM;
  memcpy(v, vals, n * sizeof *v);
  return push_vals(out, key, op, v, n, mv, sorted);
}

/* A requirement as Karpenter writes it (NodeSelectorRequirement): In or
** NotIn with their values, Exists, DoesNotExist, and bounds as Gt and Lt
** (Gte and Lte only where Gt and Lt cannot say it, as older CRDs know no
** more), each with the key's minValues. */
static int push_dt_req(rb *b, ncreqs *out, const dt_req *r) {
  const dt_plan *p = b->p;
  const char *key = res_str(b, dt__sym_str(&p->syms, r->key));
  int32_t mv = r->min_values;
  char num[32];
  if (r->has_gte || r->has_lte) {
    if (r->has_gte) {
      snprintf(num, sizeof num, "%lld", (long long)(r->gte > 0 ? r->gte - 1 : r->gte));
      if (dt__vec_push(out, ((dt_ncreq){key, r->gte > 0 ? "Gt" : "Gte", 0, NULL, mv, res_str(b, num)})))
        return DT_ENOMEM;
    }
    if (r->has_lte) {
      bool lt = r->lte >= -1 && r->lte < INT64_MAX;
      snprintf(num, sizeof num, "%lld", (long long)(lt ? r->lte + 1 : r->lte));
      if (dt__vec_push(out, ((dt_ncreq){key, lt ? "Lt" : "Lte", 0, NULL, mv, res_str(b, num)}))) return DT_ENOMEM;
    }
    if (!r->n) return 0;
  }
  const char **v = r->n ? dt__arena_alloc(b->a, r->n * sizeof *v) : NULL;
  if (r->n && !v) return DT_ENOMEM;
  for (uint32_t i = 0; i < r->n; i++) v[i] = res_str(b, dt__sym_str(&p->syms, r->v[i]));
  return push_vals(out, key, dt__op_name(dt__req_operator(r)), v, r->n, mv, false);
}

/* Pool pi's part of b->offz: per type and capacity type, the zones where
** the type offers within the pool's spot maxPrice, availability aside (the
** claim's own offering may be the unit it used up). */
static const uint64_t *pool_zones(rb *b, uint32_t pi) {
  const dt_plan *p = b->p;
  uint64_t *m = &b->offz[(size_t)pi * p->ntypes * DT_CT_N];
  if (!b->offz_ready[pi]) {
    for (uint32_t t = 0; t < p->ntypes; t++)
      for (uint32_t o = 0; o < p->types[t].noff; o++) {
        const rt_off *of = &p->types[t].off[o];
        if (dt__spot_ok(of, p->pools[pi].spot_max)) m[(size_t)t * DT_CT_N + of->ct] |= 1ull << of->zone;
      }
    b->offz_ready[pi] = true;
  }
  return m;
}

/* Whether type t offers at offering o's zone and capacity type (and its
** reservation, when it names one); zones: the pool's, as pool_zones. */
static bool offers_at(const dt_plan *p, const uint64_t *zones, uint32_t t, const rt_off *o) {
  if (o->ct != DT_CT_RESERVED || !o->resv) return zones[(size_t)t * DT_CT_N + o->ct] >> o->zone & 1;
  for (uint32_t i = 0; i < p->types[t].noff; i++) {
    const rt_off *of = &p->types[t].off[i];
    if (of->zone == o->zone && of->ct == o->ct && of->resv == o->resv) return true;
  }
  return false;
}

typedef struct pin_key {
  uint32_t set, pool;
  const rt_off *o;
} pin_key;

static bool same_pins(const rb *b, uint32_t i, const void *key) {
  const pinset *ps = &b->pins.v[i];
  const pin_key *q = key;
  return ps->set == q->set && ps->pool == q->pool && ps->zone == q->o->zone && ps->ct == q->o->ct &&
         ps->resv == (q->o->ct == DT_CT_RESERVED ? q->o->resv : 0);
}

/* The types of option set s that offer at offering o of pool pi, made on
** first use; NULL when out of memory. */
static pinset *pin_set(rb *b, uint32_t s, uint32_t pi, const rt_off *o) {
  const dt_plan *p = b->p;
  dt_sym resv = o->ct == DT_CT_RESERVED ? o->resv : 0; /* offers_at reads it for reservations only */
  uint64_t h = mix(mix(mix(s, pi), (uint64_t)o->zone << 8 | o->ct), resv);
  pin_key key = {s, pi, o};
  uint32_t *slot = htab_slot(&b->pin_tab, h, same_pins, b, &key);
  if (!slot) return NULL;
  if (!*slot) {
    const optset *os = &b->sets.v[s];
    uint32_t *pin = dt__malloc((os->n ? os->n : 1) * sizeof *pin), npin = 0;
    if (!pin) return NULL;
    const uint64_t *zm = pool_zones(b, pi);
    for (uint32_t i = 0; i < os->n; i++)
      if (offers_at(p, zm, os->final[i], o)) pin[npin++] = os->final[i];
    if (dt__vec_push(&b->pins, ((pinset){s, pi, o->zone, o->ct, resv, npin, pin, NULL}))) {
      dt__free(pin);
      return NULL;
    }
    *slot = (uint32_t)b->pins.n;
    b->pin_tab.n++;
  }
  return &b->pins.v[*slot - 1];
}

/*
** The first requirements of a NodeClaim, as Karpenter builds them: the
** instance types the claim may launch (at most 600), its zones and capacity
** types. They are pinned to the offering the plan priced (and its
** reservation), with the types that offer there; when that would leave
** fewer values than a minValues asks, they stay as open as the claim's
** requirements allow, the capacity types narrowed to those its types offer,
** as Karpenter narrows them. The instance types' values are option set s's
** (or its pin set's) sorted names, shared by every claim with the same.
** *pinned: whether they were pinned.
*/
static int fixed_reqs(rb *b, const rt_claim *k, uint32_t s, ncreqs *rs, bool *pinned) {
  const dt_plan *p = b->p;
  const rt_off *o = claim_off(p, k);
  const char **types = NULL, **zv = NULL, **cv = NULL, *zones[64], *cts[DT_CT_N];
  size_t ntypes = 0, nzones = 0, ncts = 0;
  pinset *ps = pin_set(b, s, k->pool, o);
  if (!ps) return DT_ENOMEM;
  *pinned = ps->npin && dt__min_values_ok(p, &k->reqs, ps->pin, ps->npin);
  if (*pinned) {
    if (!ps->sorted && (ps->sorted = dt__arena_raw(b->a, ps->npin * sizeof *ps->sorted)))
      names_sorted(b, ps->pin, ps->npin, ps->sorted);
    types = ps->sorted;
    ntypes = ps->npin;
    zv = &b->zone1[o->zone];
    cv = &b->ct1[o->ct];
    nzones = ncts = 1;
  } else {
    types = k->nfinal ? set_sorted(b, s) : NULL;
    ntypes = k->nfinal;
    const uint64_t *zm = pool_zones(b, k->pool);
    uint64_t at[DT_CT_N] = {0}; /* per open capacity type, the open zones some type offers in */
    for (int ct = 0; ct < DT_CT_N; ct++)
      for (uint32_t i = 0; i < k->nfinal && (k->copen >> ct & 1); i++)
        at[ct] |= zm[(size_t)k->final[i] * DT_CT_N + ct] & k->zopen;
    uint64_t any = 0;
    for (int ct = 0; ct < DT_CT_N; ct++) any |= at[ct];
    for (uint32_t z = 0; z < p->nzones; z++)
      if (any >> z & 1) zones[nzones++] = b->zname[z];
    for (int ct = 0; ct < DT_CT_N; ct++)
      if (at[ct]) cts[ncts++] = dt__ct_names[ct];
  }
  if (ntypes && !types) return DT_ENOMEM;
  const dt_req *rt = dt__reqs_get(&k->reqs, p->k_type), *rz = dt__reqs_get(&k->reqs, p->k_zone),
               *rc_ = dt__reqs_get(&k->reqs, p->k_ct);
  int rc = push_vals(rs, DT_L_INSTANCE_TYPE, "In", types, ntypes, rt ? rt->min_values : 0, true);
  if (!rc && zv) /* pinned: one zone and one capacity type, shared */
    rc = push_vals(rs, DT_L_ZONE, "In", zv, 1, rz ? rz->min_values : 0, true) ||
         push_vals(rs, DT_L_CAPACITY_TYPE, "In", cv, 1, rc_ ? rc_->min_values : 0, true);
  else if (!rc)
    rc = push_req(b, rs, DT_L_ZONE, "In", zones, nzones, rz ? rz->min_values : 0, false) ||
         push_req(b, rs, DT_L_CAPACITY_TYPE, "In", cts, ncts, rc_ ? rc_->min_values : 0, false);
  if (!rc && *pinned && o->resv) {
    const char *resv = res_str(b, dt__sym_str(&p->syms, o->resv));
    rc = push_req(b, rs, DT_L_RESERVATION, "In", &resv, 1, 0, true);
  }
  return rc ? DT_ENOMEM : 0;
}

/* Claim k's (of option set s) requirements into rec (see dt_claim_rec): the fixed ones, then
** the NodePool's and its pods' others, and the node class label. */
static int claim_reqs(rb *b, const rt_claim *k, uint32_t s, const dt_claim_pool *pool, dt_claim_rec *rec) {
  const dt_plan *p = b->p;
  const rt_off *o = claim_off(p, k);
  ncreqs rs = b->rs; /* the previous claim's vector, emptied */
  rs.n = 0;
  bool pinned;
  int rc = fixed_reqs(b, k, s, &rs, &pinned);
  rec->nfixed = rs.n;
  rec->resv_lo = rec->resv_hi = 0;
  bool has_class = false;
  for (uint32_t i = 0; !rc && i < k->reqs.n; i++) {
    const dt_req *r = &k->reqs.r[i];
    /* the hostname is a placeholder of the plan's (Karpenter drops it too) */
    if (r->key == p->k_type || r->key == p->k_zone || r->key == p->k_ct || r->key == p->k_hostname ||
        (r->key == p->k_resv && pinned && o->resv))
      continue;
    has_class |= pool->class_key && !strcmp(dt__sym_str(&p->syms, r->key), pool->class_key);
    size_t at = rs.n;
    rc = push_dt_req(b, &rs, r);
    if (r->key == p->k_resv) rec->resv_lo = at - rec->nfixed, rec->resv_hi = rs.n - rec->nfixed;
  }
  if (!rc && pool->class_key && !has_class) rc = push_req(b, &rs, pool->class_key, "In", &pool->class_name, 1, 0, true);
  dt_ncreq *v = rc ? NULL : dt__arena_alloc(b->a, rs.n * sizeof *v + 1);
  if (v) memcpy(v, rs.v, rs.n * sizeof *v);
  rec->reqs = v;
  rec->nreqs = v ? rs.n : 0;
  b->rs = rs;
  return v ? 0 : DT_ENOMEM;
}

/*
** Labels Karpenter gives a NodeClaim for its requirements on labels no
** instance type defines (resolveCustomLabelsFromRequirements): In takes a
** value (the first by name, where Karpenter takes any), NotIn and Exists the
** smallest integer they allow (where Karpenter draws one at random), so a
** pod that required the label finds it on the node. Those its NodePool's
** template labels set are left out. Into v (k->reqs.n at most), the
** strings the plan's or a's; their count, or -1 out of memory.
*/
ptrdiff_t dt__claim_custom_labels(const dt_plan *p, const rt_claim *k, dt_arena *a, dt_label_info *v) {
  size_t n = 0;
  for (uint32_t i = 0; i < k->reqs.n; i++) {
    const dt_req *r = &k->reqs.r[i];
    if (is_well_known(p, r->key) || r->key == p->k_interruptible) continue;
    const char *key = dt__sym_str(&p->syms, r->key), *val = NULL;
    const dt_kvs *own = &p->pools[k->pool].src->labels; /* the template's labels it has anyway */
    if (dt__kv_get(own->v, own->n, key) || !strcmp(key, DT_L_ZONE_ID)) continue; /* a zone's ID: its subnet's */
    char num[32];
    dt_op op = dt__req_operator(r);
    if (op == DT_OP_IN) {
      for (uint32_t j = 0; j < r->n; j++)
        if (!val || strcmp(dt__sym_str(&p->syms, r->v[j]), val) < 0) val = dt__sym_str(&p->syms, r->v[j]);
    } else if (op == DT_OP_NOTIN || op == DT_OP_EXISTS) {
      for (int64_t x = r->has_gte && r->gte > 0 ? r->gte : 0; !val && (!r->has_lte || x <= r->lte); x++) {
        snprintf(num, sizeof num, "%lld", (long long)x);
        dt_sym s = dt__sym_find(&p->syms, num);
        if (!s || dt__req_has(&p->syms, r, s)) val = num;
      }
      if (val == num && !(val = dt__arena_strdup(a, num))) return -1;
    }
    if (val) v[n++] = (dt_label_info){key, val};
  }
  return (ptrdiff_t)n;
}

/* The claim's custom labels, on its record (for its NodeClaim) and its info. */
static int custom_labels(rb *b, const rt_claim *k, dt_claim_rec *rec, dt_claim_info *info) {
  dt_label_info *v = dt__arena_alloc(b->a, k->reqs.n * sizeof *v + 1);
  dt_kv *kv = dt__arena_alloc(b->a, k->reqs.n * sizeof *kv + 1);
  ptrdiff_t n = v && kv ? dt__claim_custom_labels(b->p, k, b->a, v) : -1;
  if (n < 0) return DT_ENOMEM;
  for (ptrdiff_t i = 0; i < n; i++) {
    v[i] = (dt_label_info){res_str(b, v[i].key), res_str(b, v[i].value)};
    kv[i] = (dt_kv){(char *)v[i].key, (char *)v[i].value};
  }
  rec->custom = kv;
  rec->ncustom = (size_t)n;
  info->labels = v;
  info->nlabels = (size_t)n;
  return 0;
}

/* ------------------------------------------------------------ pools, types */

/* The NodePools' records, in the plan's pool order. */
static int result_pools(rb *b) {
  dt_plan *p = b->p;
  dt_plan_result *r = &p->res;
  r->pools = dt__arena_alloc(b->a, p->npools * sizeof *r->pools + 1);
  if (!r->pools) return DT_ENOMEM;
  r->npools = p->npools;
  for (uint32_t i = 0; i < p->npools; i++) {
    const dt_nodepool *np = p->pools[i].src;
    dt_claim_pool *c = &r->pools[i];
    c->name = res_str(b, np->name);
    c->uid = res_str(b, np->uid);
    c->termination_grace = res_str(b, np->termination_grace);
    c->labels = res_kvs(b, &np->labels);
    c->annotations = res_kvs(b, &np->annotations);
    c->hash = np->hash;
    const dt_nodeclass *nc = p->pools[i].nodeclass;
    if (nc) {
      c->has_nc = true;
      c->nc_hash = nc->hash;
      c->nc_k_hash = res_str(b, nc->k_hash);
      c->nc_k_hash_version = res_str(b, nc->k_hash_version);
      c->zones = dt__arena_alloc(b->a, nc->nzones * sizeof *c->zones + 1);
      c->zone_ids = dt__arena_alloc(b->a, nc->nzones * sizeof *c->zone_ids + 1);
      if (!c->zones || !c->zone_ids) return DT_ENOMEM;
      for (size_t z = 0; z < nc->nzones; z++) {
        c->zones[z] = res_str(b, nc->zones[z]);
        c->zone_ids[z] = res_str(b, nc->zone_ids[z]);
      }
      c->nzones = nc->nzones;
    }
    c->expire_after = np->expire_after;
    c->taints = res_taints(b, np->taints, c->ntaints = np->ntaints);
    c->startup = res_taints(b, np->startup, c->nstartup = np->nstartup);
    const cJSON *ref = np->node_class_ref;
    if (ref && !(c->node_class_ref = cJSON_Duplicate(ref, true))) return DT_ENOMEM;
    /* the node class label Karpenter adds: <group>/<kind in lower case> */
    const char *cg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ref, "group")),
               *ck = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ref, "kind")),
               *cn = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ref, "name"));
    if (ref && cg && ck && cn) {
      char key[300];
      size_t at = (size_t)snprintf(key, sizeof key, "%s/", cg);
      for (const char *ch = ck; *ch && at + 1 < sizeof key; ch++)
        key[at++] = (char)(*ch >= 'A' && *ch <= 'Z' ? *ch - 'A' + 'a' : *ch);
      key[at] = 0;
      c->class_key = res_str(b, key);
      c->class_name = res_str(b, cn);
    }
  }
  return 0;
}

/* The record of type t, made on first use; its index, -1 when out of memory. */
/* The record of type t on pool pl's nodes, made on first use (one per type,
** and one per pool whose EC2NodeClass changes the type's allocatable); its
** index, -1 when out of memory. */
static int32_t type_rec(rb *b, uint32_t t, uint32_t pl) {
  dt_plan *p = b->p;
  const int64_t *alloc = p->pools[pl].alloc ? p->pools[pl].alloc[t] : p->types[t].alloc;
  size_t at = alloc == p->types[t].alloc ? t : (size_t)(pl + 1) * (p->ntypes + 1) + t;
  if (b->tidx[at] >= 0) return b->tidx[at];
  dt_plan_result *r = &p->res;
  const rt_type *rt = &p->types[t];
  dt_claim_type *c = &r->types[r->ntypes];
  c->labels = res_kvs(b, &rt->src->labels);
  dt_resource_info *al = dt__arena_alloc(b->a, p->nres * sizeof *al + 1);
  if (!al) return -1;
  for (uint32_t i = 0; i < p->nres; i++) {
    if (!alloc[i]) continue;
    al[c->nalloc++] = (dt_resource_info){b->rname[i], res_qty(b, i, alloc[i]), alloc[i]};
  }
  c->alloc = al;
  return b->tidx[at] = (int32_t)r->ntypes++;
}

/* ------------------------------------------------------------ the result */

bool dt__claim_pods_omitted(const dt_plan_result *r, size_t i) {
  const dt_claim_info *c = &r->claims[i];
  const dt_claim_pool *np = &r->pools[r->recs[i].pool];
  size_t bytes = 1024; /* dovetail's own annotations beside them, and Karpenter's hashes */
  for (size_t j = 0; j < np->annotations.n; j++)
    bytes += strlen(np->annotations.v[j].key) + strlen(np->annotations.v[j].val);
  for (size_t j = 0; j + c->nvirtual < c->npods; j++) bytes += strlen(c->pods[j]) + 1;
  return bytes > 256 * 1024;
}

static int result_claims(rb *b) {
  dt_plan *p = b->p;
  dt_plan_result *r = &p->res;
  size_t n = 0;
  for (size_t i = 0; i < p->claims.n; i++) n += p->claims.v[i]->type >= 0;
  r->claims = dt__arena_alloc(b->a, n * sizeof *r->claims + 1);
  r->recs = dt__arena_alloc(b->a, n * sizeof *r->recs + 1);
  r->types = dt__arena_alloc(b->a, n * sizeof *r->types + 1);
  if (!r->claims || !r->recs || !r->types) return DT_ENOMEM;
  for (size_t i = 0; i < p->claims.n; i++) {
    const rt_claim *k = p->claims.v[i];
    if (k->type < 0) continue;
    dt_claim_rec *rec = &r->recs[r->nclaims];
    uint32_t s = option_set(b, k);
    if (s == UINT32_MAX) return DT_ENOMEM;
    claim_info(b, k, s, &r->claims[r->nclaims++]);
    int32_t t = type_rec(b, (uint32_t)k->type, k->pool);
    if (t < 0) return DT_ENOMEM;
    rec->type = (uint32_t)t;
    rec->pool = k->pool;
    r->pools[k->pool].used = true;
    int rc = claim_reqs(b, k, s, &r->pools[k->pool], rec);
    if (rc || (rc = custom_labels(b, k, rec, &r->claims[r->nclaims - 1]))) return rc;
    if (dt__claim_pods_omitted(r, r->nclaims - 1)) {
      const dt_claim_info *c = &r->claims[r->nclaims - 1];
      note(p,
           "NodeClaim %s: the names of its %zu pods pass, with its other annotations, the 256 KiB the API server "
           "allows an object's annotations: -o yaml leaves dovetail.dev/pods out (dovetail.dev/pods-omitted: %zu); "
           "fed back, its pods are planned again, onto its room first",
           c->name, c->npods - c->nvirtual, c->npods - c->nvirtual);
    }
  }
  return 0;
}

static int result_rest(rb *b) {
  dt_plan *p = b->p;
  dt_plan_result *r = &p->res;
  r->bindings = dt__arena_alloc(b->a, p->bindings.n * sizeof *r->bindings + 1);
  for (size_t i = 0; r->bindings && i < p->bindings.n; i++) {
    const rt_binding *bd = &p->bindings.v[i];
    const dt_node *n = p->nodes[bd->node].src;
    r->bindings[r->nbindings++] =
        (dt_binding_info){res_pod(b, bd->pod), res_str(b, n->name), n->claim_name && !strcmp(n->kind, "NodeClaim"),
                          pod_virtual(p, bd->pod)};
  }
  r->unsched = dt__arena_alloc(b->a, p->unsched.n * sizeof *r->unsched + 1);
  for (size_t i = 0; r->unsched && i < p->unsched.n; i++)
    r->unsched[r->nunsched++] =
        (dt_unschedulable_info){res_pod(b, p->unsched.v[i].pod), res_str(b, p->unsched.v[i].reason)};
  r->marks = dt__arena_alloc(b->a, p->marks.n * sizeof *r->marks + 1);
  for (size_t i = 0; r->marks && i < p->marks.n; i++) {
    const dt_mark *mk = &p->manifests->marks.v[p->marks.v[i]];
    r->marks[r->nmarks++] =
        (dt_mark_rec){dt__ct_names[mk->ct], res_str(b, mk->instance_type), res_str(b, mk->zone), mk->expires};
  }
  r->notes = dt__arena_alloc(b->a, p->notes.n * sizeof *r->notes + 1);
  for (size_t i = 0; r->notes && i < p->notes.n; i++) r->notes[r->nnotes++] = res_str(b, p->notes.v[i]);
  for (size_t i = 0; i < p->policies.n; i++)
    if (dt__policy_errors_take(p->policies.v[i], b->a, &r->policy_errors)) return DT_ENOMEM;
  r->stats = p->stats;
  r->bound_already = p->bound_already;
  r->existing_nodes = p->nnodes;
  r->now = p->opts.now;
  r->timings = p->opts.timings;
  r->parse_ms = p->opts.parse_ms;
  return 0;
}

int dt__plan_result_build(dt_plan *p) {
  size_t n = p->ntypes + 1;
  rb b = {.p = p, .a = &p->res.arena};
  b.tname = dt__calloc(n, sizeof *b.tname);
  size_t ntidx = (size_t)(p->npools + 1) * n; /* per type, then per pool and type (type_rec) */
  b.tidx = dt__malloc(ntidx * sizeof *b.tidx);
  b.by_rank = dt__malloc(n * sizeof *b.by_rank);
  b.mark = dt__calloc(n, sizeof *b.mark);
  b.offz = dt__calloc((size_t)(p->npools ? p->npools : 1) * n * DT_CT_N, sizeof *b.offz);
  b.offz_ready = dt__calloc(p->npools ? p->npools : 1, sizeof *b.offz_ready);
  int rc = b.tname && b.tidx && b.by_rank && b.mark && b.offz && b.offz_ready ? 0 : DT_ENOMEM;
  for (size_t i = 0; !rc && i < ntidx; i++) b.tidx[i] = -1;
  for (uint32_t t = 0; !rc && t < p->ntypes; t++) {
    b.by_rank[p->types[t].rank] = t;
    if (!(b.tname[t] = res_str(&b, p->types[t].src->name))) rc = DT_ENOMEM;
  }
  for (uint32_t z = 0; !rc && z < p->nzones; z++) b.zname[z] = res_str(&b, dt__sym_str(&p->syms, p->zones[z]));
  if (!rc && (!(b.zone1 = dt__arena_raw(b.a, (p->nzones + 1) * sizeof *b.zone1)) ||
              !(b.ct1 = dt__arena_raw(b.a, DT_CT_N * sizeof *b.ct1))))
    rc = DT_ENOMEM;
  if (!rc) {
    memcpy(b.zone1, b.zname, p->nzones * sizeof *b.zone1);
    memcpy(b.ct1, dt__ct_names, DT_CT_N * sizeof *b.ct1);
  }
  for (uint32_t r = 0; !rc && r < p->nres; r++) {
    b.rname[r] = res_str(&b, p->res_names[r]);
    b.rkind[r] = qty_kind(p->res_names[r]);
  }
  if (!rc) rc = result_pools(&b);
  if (!rc) rc = result_claims(&b);
  if (!rc) rc = result_rest(&b);
  dt__free(b.tname);
  dt__free(b.tidx);
  dt__free(b.by_rank);
  dt__free(b.mark);
  dt__free(b.offz);
  dt__free(b.offz_ready);
  for (size_t i = 0; i < b.pins.n; i++) dt__free(b.pins.v[i].pin);
  dt__free(b.pins.v);
  dt__free(b.sets.v);
  dt__free(b.rs.v);
  htab_free(&b.pin_tab);
  htab_free(&b.set_tab);
  return rc ? rc : b.a->oom ? DT_ENOMEM : 0;
}

int dt__policy_errors_take(const dt_policy *pol, dt_arena *a, dt_policy_error_vec *v) {
  const dt_policy_err *e;
  size_t n = dt__policy_errors(pol, &e);
  const char *name = dt__arena_strdup(a, dt__policy_name(pol));
  for (size_t i = 0; i < n; i++) {
    dt_policy_error_rec r = {name, dt__arena_strdup(a, e[i].hook), dt__arena_strdup(a, e[i].message),
                             (int64_t)e[i].count, e[i].disabled};
    if (dt__vec_push(v, r)) return DT_ENOMEM;
  }
  return a->oom ? DT_ENOMEM : 0;
}

void dt__plan_result_free(dt_plan_result *r) {
  for (size_t i = 0; i < r->npools; i++) cJSON_Delete(r->pools[i].node_class_ref);
  dt__free(r->policy_errors.v);
  dt__arena_free(&r->arena);
}

/* ------------------------------------------------------------ public */

cJSON *dt__plan_doc(const dt_plan *p) { return dt__plan_result_doc(&p->res); }

char *dt_plan_render(const dt_plan *plan, dt_format format, size_t *len) {
  return dt__plan_result_render(&plan->res, format, len);
}

int dt_plan_write(const dt_plan *plan, dt_format format, dt_write_fn write, void *ud) {
  return plan && write ? dt__plan_result_write(&plan->res, format, write, ud) : DT_EINVAL;
}

char *dt_plan_claim_object(const dt_plan *plan, size_t i, int launched, size_t *len) {
  return plan ? dt__plan_result_claim_object(&plan->res, i, launched != 0, len) : NULL;
}

size_t dt_plan_binding_count(const dt_plan *p) { return p->res.nbindings; }

bool dt__plan_binding_virtual(const dt_plan *p, size_t i) { return i < p->res.nbindings && p->res.bindings[i].virt; }

int dt_plan_binding(const dt_plan *p, size_t i, char *pod, size_t n, const char **node) {
  if (i >= p->res.nbindings) return DT_ERANGE;
  if (n) snprintf(pod, n, "%s", p->res.bindings[i].pod);
  *node = p->res.bindings[i].node;
  return 0;
}

size_t dt_plan_claim_count(const dt_plan *p) { return p->res.nclaims; }

int dt_plan_claim(const dt_plan *p, size_t i, dt_claim_info *out) {
  if (i >= p->res.nclaims) return DT_ERANGE;
  *out = p->res.claims[i];
  return 0;
}

size_t dt_plan_unschedulable_count(const dt_plan *p) { return p->res.nunsched; }

int dt_plan_unschedulable(const dt_plan *p, size_t i, dt_unschedulable_info *out) {
  if (i >= p->res.nunsched) return DT_ERANGE;
  *out = p->res.unsched[i];
  return 0;
}
