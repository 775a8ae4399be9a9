/*
** pack.c: cost-aware packing after first-fit-decreasing.
**
** Karpenter's first-fit-decreasing keeps adding pods to a claim while any
** instance type still fits them, so on a broad catalog claims drift to the
** largest (often memory-optimised, often dear) types. This pass re-packs the
** claims whose pods carry no topology, host port or label-selection
** constraints:
**
**   1. solve the covering LP of the pods' summed requests over the pool's
**      instance types (lp.c); its duals price a unit of each resource;
**   2. open nodes greedily: for each of the types with the best reduced cost,
**      fill a node largest-pod-first and value its contents at the dual
**      prices; keep the type with the lowest price per unit of value;
**   3. at launch every node shrinks to the cheapest type that fits it.
**
** The result replaces first-fit's claims only when it is strictly cheaper,
** so it is never worse. Pools with limits, minValues or capacity
** reservations are left to first-fit (their accounting is first-fit's).
*/
#include "schedule.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int dt__lp_cover(int m, int n, const double *a, const double *c, const double *d, double *y, double *obj);

#define PACK_TOPK 48

typedef struct shape {
  int64_t req[DT_RES_MAX];
  DT_VEC(uint32_t) pods;
  size_t next; /* pods handed out so far */
} shape;

typedef DT_VEC(rt_claim *) claim_vec;

typedef struct cand {
  uint32_t type;
  double price;
  double reduced;
} cand;

static int cmp_cand(const void *a, const void *b) {
  const cand *x = a, *y = b;
  if (x->reduced != y->reduced) return x->reduced < y->reduced ? -1 : 1;
  return x->type < y->type ? -1 : x->type > y->type;
}

/* Cheapest non-reserved available offering of t within the masks; with
** unbounded_only, only offerings without an availability count. */
static double offer_price(const rt_type *t, uint64_t zm, uint8_t cm, bool unbounded_only, double spot_max) {
  double best = INFINITY;
  for (uint32_t o = 0; o < t->noff; o++) {
    const rt_off *of = &t->off[o];
    if (of->ct == DT_CT_RESERVED || of->avail == 0 || (unbounded_only && of->avail != -1)) continue;
    if (!(zm >> of->zone & 1) || !(cm >> of->ct & 1)) continue;
    if (of->ct == DT_CT_SPOT && of->price > spot_max) continue;
    if (of->price < best) best = of->price;
  }
  return best;
}

static bool fits_in(const dt_plan *p, const int64_t *alloc, const int64_t *used) {
  for (uint32_t r = 0; r < p->nres; r++)
    if (used[r] > alloc[r]) return false;
  return true;
}

/* What first-fit's claim will cost at launch (cheapest fitting option). */
static double claim_price(const dt_plan *p, const rt_claim *k) {
  const rt_pool *pl = &p->pools[k->pool];
  double best = INFINITY;
  for (uint32_t i = 0; i < k->nopt; i++) {
    const rt_type *t = &p->types[k->opt[i]];
    if (!fits_in(p, pl->eff[k->opt[i]], k->used)) continue;
    for (uint32_t o = 0; o < t->noff; o++) {
      const rt_off *of = &t->off[o];
      if (of->avail == 0 || !(k->zmask >> of->zone & 1) || !(k->ctmask >> of->ct & 1)) continue;
      if (of->ct == DT_CT_SPOT && of->price > pl->spot_max) continue;
      if (of->ct == DT_CT_RESERVED) return 0; /* already paid: never re-pack these */
      if (of->price < best) best = of->price;
    }
  }
  return best;
}

static bool simple_pod(const dt_plan *p, uint32_t podi) {
  const rt_pod *pod = &p->pods[podi];
  const rt_spec *s = &p->specs[pod->spec];
  const rt_class *c = &p->classes.v[pod->cls];
  return !c->topo && !s->nsel && !s->nports;
}

/* How many pods of shape s fit in alloc after used. */
static int64_t fit_count(const dt_plan *p, const int64_t *alloc, const int64_t *used, const int64_t *req, int64_t cap) {
  int64_t cnt = cap;
  for (uint32_t r = 0; r < p->nres && cnt > 0; r++)
    if (req[r] > 0) {
      int64_t room = alloc[r] - used[r];
      int64_t f = room > 0 ? room / req[r] : 0;
      if (f < cnt) cnt = f;
    }
  return cnt;
}

/* A packing under construction: per node, a type and per-shape counts. */
typedef struct packing {
  size_t nodes;
  DT_VEC(uint32_t) type;  /* candidate index per node */
  DT_VEC(int64_t) count;  /* nodes x shapes */
  double cost;
} packing;

static void packing_free(packing *k) {
  dt__free(k->type.v);
  dt__free(k->count.v);
  memset(k, 0, sizeof *k);
}

static int packing_add(packing *k, uint32_t cand, const int64_t *counts, size_t nshapes, double price) {
  if (dt__vec_push(&k->type, cand)) return DT_ENOMEM;
  for (size_t s = 0; s < nshapes; s++)
    if (dt__vec_push(&k->count, counts[s])) return DT_ENOMEM;
  k->nodes++;
  k->cost += price;
  return 0;
}

/* The cheapest candidate (price order) that holds used; -1 if none. */
static int32_t cheapest_fit(const dt_plan *p, const rt_pool *pl, const cand *by_price, uint32_t nc, const int64_t *used) {
  for (uint32_t i = 0; i < nc; i++)
    if (fits_in(p, pl->eff[by_price[i].type], used)) return (int32_t)i;
  return -1;
}

/*
** Greedy: open one node at a time; for each candidate type fill it largest
** shape first and value the contents with per-shape values v[]; keep the
** type with the lowest price per unit of value; then shrink the node to the
** cheapest type that holds what went in.
*/
static int greedy(const dt_plan *p, const rt_pool *pl, const shape *shapes, size_t ns, const cand *cands,
                  uint32_t ntry, const cand *by_price, uint32_t nc, const double *v, packing *out) {
  int64_t *rem = dt__malloc(ns * sizeof *rem), *take = dt__malloc(ns * sizeof *take),
          *best_take = dt__malloc(ns * sizeof *best_take);
  int rc = 0;
  if (!rem || !take || !best_take) {
    rc = DT_ENOMEM;
    goto out;
  }
  size_t left = 0;
  for (size_t s = 0; s < ns; s++) left += (rem[s] = (int64_t)shapes[s].pods.n);
  while (left) {
    double best_eff = INFINITY;
    int32_t best = -1;
    for (uint32_t i = 0; i < nc && (i < ntry || best < 0); i++) {
      const int64_t *alloc = pl->eff[cands[i].type];
      int64_t used[DT_RES_MAX] = {0};
      double value = 0;
      for (size_t s = 0; s < ns; s++) {
        int64_t cnt = rem[s] ? fit_count(p, alloc, used, shapes[s].req, rem[s]) : 0;
        take[s] = cnt;
        for (uint32_t r = 0; r < p->nres && cnt; r++) used[r] += cnt * shapes[s].req[r];
        value += (double)cnt * v[s];
      }
      if (value <= 0) continue;
      double eff = cands[i].price / value;
      if (eff < best_eff) {
        best_eff = eff;
        best = (int32_t)i;
        memcpy(best_take, take, ns * sizeof *take);
      }
    }
    if (best < 0) {
      rc = DT_EINVAL; /* a pod fits no candidate */
      break;
    }
    /* The same node again while every shape it takes lasts: the greedy
    ** would choose it again, since nothing it compared has changed. */
    int64_t repeat = INT64_MAX;
    for (size_t s = 0; s < ns; s++)
      if (best_take[s] > 0 && rem[s] / best_take[s] < repeat) repeat = rem[s] / best_take[s];
    bool others = false;
    for (size_t s = 0; s < ns && !others; s++) others = best_take[s] == 0 && rem[s] > 0;
    if (others && repeat > 1) repeat = 1; /* another shape may change the choice once this one thins */
    int64_t used[DT_RES_MAX] = {0};
    for (size_t s = 0; s < ns; s++)
      for (uint32_t r = 0; r < p->nres; r++) used[r] += best_take[s] * shapes[s].req[r];
    int32_t c = cheapest_fit(p, pl, by_price, nc, used);
    for (int64_t k = 0; k < repeat && !rc; k++) {
      for (size_t s = 0; s < ns; s++) {
        rem[s] -= best_take[s];
        left -= (size_t)best_take[s];
      }
      rc = packing_add(out, (uint32_t)c, best_take, ns, by_price[c].price);
    }
    if (rc) break;
  }
out:
  dt__free(rem);
  dt__free(take);
  dt__free(best_take);
  return rc;
}

/* Each shape alone on its cheapest type per pod; the remainder of a shape on
** the cheapest type that holds it. */
static int homogeneous(const dt_plan *p, const rt_pool *pl, const shape *shapes, size_t ns, const cand *by_price,
                       uint32_t nc, double *per_pod, packing *out) {
  int64_t *counts = dt__calloc(ns ? ns : 1, sizeof *counts);
  if (!counts) return DT_ENOMEM;
  int rc = 0;
  static const int64_t zero[DT_RES_MAX];
  for (size_t s = 0; s < ns && !rc; s++) {
    int64_t n = (int64_t)shapes[s].pods.n;
    double best = INFINITY;
    int32_t bt = -1;
    int64_t bk = 0;
    for (uint32_t i = 0; i < nc; i++) {
      int64_t k = fit_count(p, pl->eff[by_price[i].type], zero, shapes[s].req, n);
      if (k > 0 && by_price[i].price / (double)k < best) {
        best = by_price[i].price / (double)k;
        bt = (int32_t)i;
        bk = k;
      }
    }
    if (bt < 0) {
      rc = DT_EINVAL;
      break;
    }
    per_pod[s] = best;
    memset(counts, 0, ns * sizeof *counts);
    counts[s] = bk;
    for (int64_t full = n / bk; full > 0 && !rc; full--) rc = packing_add(out, (uint32_t)bt, counts, ns, by_price[bt].price);
    int64_t r = n % bk;
    if (r && !rc) {
      int64_t used[DT_RES_MAX] = {0};
      for (uint32_t q = 0; q < p->nres; q++) used[q] = r * shapes[s].req[q];
      int32_t c = cheapest_fit(p, pl, by_price, nc, used);
      counts[s] = r;
      rc = packing_add(out, (uint32_t)c, counts, ns, by_price[c].price);
    }
  }
  dt__free(counts);
  return rc;
}

static int cmp_by_price(const void *a, const void *b) {
  const cand *x = a, *y = b;
  if (x->price != y->price) return x->price < y->price ? -1 : 1;
  return x->type < y->type ? -1 : x->type > y->type;
}

/* Re-pack one group: claims[0..n) share a pool and requirements. */
static int repack_group(dt_plan *p, rt_claim **claims, size_t n, claim_vec *out, bool *replaced) {
  *replaced = false;
  const rt_claim *k0 = claims[0];
  const rt_pool *pl = &p->pools[k0->pool];
  uint32_t m = p->nres;
  int rc = 0;
  DT_VEC(shape) shapes = {0};
  cand *cands = NULL, *by_price = NULL;
  double *a = NULL, *c = NULL, *vdual = NULL, *vhomo = NULL;
  packing plans[3];
  memset(plans, 0, sizeof plans);
  double ffd_cost = 0;
  for (size_t i = 0; i < n; i++) {
    ffd_cost += claim_price(p, claims[i]);
    for (size_t j = 0; j < claims[i]->pods.n; j++) {
      uint32_t podi = claims[i]->pods.v[j];
      const int64_t *req = p->specs[p->pods[podi].spec].req;
      size_t s = 0;
      while (s < shapes.n && memcmp(shapes.v[s].req, req, sizeof shapes.v[s].req)) s++;
      if (s == shapes.n) {
        shape sh;
        memset(&sh, 0, sizeof sh);
        memcpy(sh.req, req, sizeof sh.req);
        if (dt__vec_push(&shapes, sh)) {
          rc = DT_ENOMEM;
          goto out;
        }
      }
      if (dt__vec_push(&shapes.v[s].pods, podi)) {
        rc = DT_ENOMEM;
        goto out;
      }
    }
  }
  if (!isfinite(ffd_cost) || ffd_cost <= 0) goto out;
  /* Largest first: cpu, then memory. */
  for (size_t i = 1; i < shapes.n; i++)
    for (size_t j = i; j > 0; j--) {
      const int64_t *x = shapes.v[j].req, *y = shapes.v[j - 1].req;
      if (x[DT_R_CPU] > y[DT_R_CPU] || (x[DT_R_CPU] == y[DT_R_CPU] && x[DT_R_MEM] > y[DT_R_MEM])) {
        shape t = shapes.v[j];
        shapes.v[j] = shapes.v[j - 1];
        shapes.v[j - 1] = t;
      }
    }
  size_t ns = shapes.n;
  /* Candidates: the pool's types matching the group's requirements, priced by
  ** their cheapest unbounded offering. */
  cands = dt__malloc((pl->ntypes ? pl->ntypes : 1) * sizeof *cands);
  by_price = dt__malloc((pl->ntypes ? pl->ntypes : 1) * sizeof *by_price);
  vdual = dt__malloc(ns * sizeof *vdual);
  vhomo = dt__malloc(ns * sizeof *vhomo);
  if (!cands || !by_price || !vdual || !vhomo) {
    rc = DT_ENOMEM;
    goto out;
  }
  uint32_t nc = 0;
  for (uint32_t i = 0; i < pl->ntypes; i++) {
    const rt_type *t = &p->types[pl->types[i]];
    if (!dt__type_ok(p, t, &k0->reqs, k0->zmask, k0->ctmask, pl->spot_max)) continue;
    double pr = offer_price(t, k0->zmask, k0->ctmask, true, pl->spot_max);
    if (!isfinite(pr) || pr <= 0) continue;
    cands[nc++] = (cand){pl->types[i], pr, 0};
  }
  if (!nc) goto out;
  memcpy(by_price, cands, nc * sizeof *cands);
  qsort(by_price, nc, sizeof *by_price, cmp_by_price);
  /* Plan A: every shape on its own best type. Its per-pod prices also value
  ** pods for plan C. */
  rc = homogeneous(p, pl, shapes.v, ns, by_price, nc, vhomo, &plans[0]);
  if (rc == DT_EINVAL) {
    rc = 0; /* a pod fits no candidate: leave the group to first-fit */
    goto out;
  }
  if (rc) goto out;
  /* The covering LP's duals value a unit of each resource. */
  {
    double d[DT_RES_MAX], y[DT_RES_MAX], scale[DT_RES_MAX], w[DT_RES_MAX] = {0}, lp;
    uint32_t rows[DT_RES_MAX], nrows = 0;
    for (uint32_t r = 0; r < m; r++) {
      double dem = 0;
      for (size_t s = 0; s < ns; s++) dem += (double)shapes.v[s].req[r] * (double)shapes.v[s].pods.n;
      if (dem <= 0) continue;
      scale[nrows] = dem;
      d[nrows] = 1.0;
      rows[nrows++] = r;
    }
    a = dt__malloc((size_t)nrows * nc * sizeof *a + 1);
    c = dt__malloc(nc * sizeof *c + 1);
    if (!a || !c) {
      rc = DT_ENOMEM;
      goto out;
    }
    for (uint32_t i = 0; i < nc; i++) {
      c[i] = cands[i].price;
      for (uint32_t q = 0; q < nrows; q++) {
        double v = (double)pl->eff[cands[i].type][rows[q]];
        a[(size_t)q * nc + i] = v > 0 ? v / scale[q] : 0;
      }
    }
    bool have_lp = dt__lp_cover((int)nrows, (int)nc, a, c, d, y, &lp) == 0;
    for (uint32_t q = 0; have_lp && q < nrows; q++) w[rows[q]] = y[q] / scale[q];
    for (uint32_t i = 0; i < nc; i++) {
      double v = 0;
      for (uint32_t r = 0; r < m; r++) {
        int64_t e = pl->eff[cands[i].type][r];
        v += w[r] * (double)(e > 0 ? e : 0);
      }
      cands[i].reduced = cands[i].price - v;
    }
    for (size_t s = 0; s < ns; s++) {
      vdual[s] = 0;
      for (uint32_t r = 0; r < m; r++) vdual[s] += w[r] * (double)shapes.v[s].req[r];
    }
    qsort(cands, nc, sizeof *cands, cmp_cand);
    /* Plan B: greedy valued by the LP duals, over the best reduced costs. */
    if (have_lp && (rc = greedy(p, pl, shapes.v, ns, cands, PACK_TOPK, by_price, nc, vdual, &plans[1])) == DT_EINVAL)
      rc = 0;
    if (rc) goto out;
  }
  /* Plan C: greedy valued by the homogeneous per-pod prices, so complementary
  ** pods share a node when that beats packing each shape alone. */
  if ((rc = greedy(p, pl, shapes.v, ns, cands, PACK_TOPK, by_price, nc, vhomo, &plans[2])) == DT_EINVAL) rc = 0;
  if (rc) goto out;
  int best = -1;
  for (int i = 0; i < 3; i++) {
    size_t placed = 0;
    for (size_t q = 0; q < plans[i].count.n; q++) placed += (size_t)plans[i].count.v[q];
    size_t total = 0;
    for (size_t s = 0; s < ns; s++) total += shapes.v[s].pods.n;
    if (!plans[i].nodes || placed != total) continue;
    if (best < 0 || plans[i].cost < plans[best].cost - 1e-9) best = i;
  }
  if (best < 0 || !(plans[best].cost < ffd_cost - 1e-9)) goto out;
  /* Materialise the chosen plan as claims. */
  {
    const packing *pk = &plans[best];
    claim_vec made = {0};
    for (size_t node = 0; node < pk->nodes && !rc; node++) {
      rt_claim *k = dt__arena_alloc(&p->arena, sizeof *k);
      if (!k || dt__vec_push(&made, k)) {
        rc = DT_ENOMEM;
        break;
      }
      k->pool = k0->pool;
      k->reqs = k0->reqs;
      k->zmask = k0->zmask;
      k->ctmask = k0->ctmask;
      k->type = k->off = -1;
      for (size_t s = 0; s < ns && !rc; s++)
        for (int64_t q = 0; q < pk->count.v[node * ns + s] && !rc; q++) {
          if (dt__vec_push(&k->pods, shapes.v[s].pods.v[shapes.v[s].next++])) rc = DT_ENOMEM;
          for (uint32_t r = 0; r < m; r++) k->used[r] += shapes.v[s].req[r];
        }
      /* Options: the cheapest types that hold it (as a launch request would
      ** carry), so launch may still pick a cheaper bounded offering. */
      uint32_t *opt = dt__arena_alloc(&p->arena, 60 * sizeof *opt), no = 0;
      if (!opt) {
        rc = DT_ENOMEM;
        break;
      }
      for (uint32_t i = 0; i < nc && no < 60; i++)
        if (fits_in(p, pl->eff[by_price[i].type], k->used)) opt[no++] = by_price[i].type;
      k->opt = opt;
      k->nopt = no;
    }
    for (size_t i = 0; i < made.n && !rc; i++)
      if (dt__vec_push(out, made.v[i])) rc = DT_ENOMEM;
    if (rc)
      for (size_t i = 0; i < made.n; i++) dt__free(made.v[i]->pods.v);
    else
      *replaced = true;
    dt__free(made.v);
  }
out:
  for (int i = 0; i < 3; i++) packing_free(&plans[i]);
  dt__free(cands);
  dt__free(by_price);
  dt__free(vdual);
  dt__free(vhomo);
  dt__free(a);
  dt__free(c);
  for (size_t s = 0; s < shapes.n; s++) dt__free(shapes.v[s].pods.v);
  dt__free(shapes.v);
  return rc;
}

int dt__pack_improve(dt_plan *p) {
  size_t nclaims = p->claims.n;
  if (!nclaims) return 0;
  int rc = 0;
  bool *eligible = dt__calloc(nclaims, sizeof *eligible);
  bool *grouped = dt__calloc(nclaims, sizeof *grouped);
  bool *replaced = dt__calloc(nclaims, sizeof *replaced);
  size_t *members = dt__malloc(nclaims * sizeof *members);
  rt_claim **group = dt__malloc(nclaims * sizeof *group);
  claim_vec fresh = {0};
  if (!eligible || !grouped || !replaced || !members || !group) {
    rc = DT_ENOMEM;
    goto out;
  }
  for (size_t i = 0; i < nclaims; i++) {
    const rt_claim *k = p->claims.v[i];
    const rt_pool *pl = &p->pools[k->pool];
    bool ok = !pl->has_limits && !pl->has_min_values && !pl->has_reserved && k->pods.n > 0;
    for (size_t j = 0; j < k->pods.n && ok; j++) ok = simple_pod(p, k->pods.v[j]);
    eligible[i] = ok;
  }
  /* Groups: same pool, same requirements and masks. */
  for (size_t i = 0; i < nclaims && !rc; i++) {
    if (grouped[i] || !eligible[i]) continue;
    size_t n = 0;
    for (size_t j = i; j < nclaims; j++) {
      if (grouped[j] || !eligible[j]) continue;
      const rt_claim *a = p->claims.v[i], *b = p->claims.v[j];
      if (a->pool != b->pool || a->zmask != b->zmask || a->ctmask != b->ctmask || !dt__reqs_equal(&a->reqs, &b->reqs))
        continue;
      members[n] = j;
      group[n++] = p->claims.v[j];
      grouped[j] = true;
    }
    bool done;
    rc = repack_group(p, group, n, &fresh, &done);
    if (!rc && done)
      for (size_t g = 0; g < n; g++) replaced[members[g]] = true;
  }
  if (rc || !fresh.n) goto out;
  /* First-fit's surviving claims in order, then the re-packed nodes. */
  {
    size_t w = 0;
    for (size_t i = 0; i < nclaims; i++) {
      rt_claim *k = p->claims.v[i];
      if (replaced[i]) {
        dt__free(k->pods.v);
        dt__free(k->ports.v);
        dt__free(k->held.v);
        continue;
      }
      p->claims.v[w++] = k;
    }
    p->claims.n = w;
    for (size_t i = 0; i < fresh.n && !rc; i++)
      if (dt__vec_push(&p->claims, fresh.v[i])) {
        /* not in the plan's list: free it here */
        for (size_t j = i; j < fresh.n; j++) dt__free(fresh.v[j]->pods.v);
        rc = DT_ENOMEM;
      }
    for (size_t i = 0; i < p->claims.n; i++) p->claims.v[i]->idx = (uint32_t)i;
    fresh.n = 0;
  }
out:
  for (size_t i = 0; i < fresh.n; i++) dt__free(fresh.v[i]->pods.v);
  dt__free(fresh.v);
  dt__free(eligible);
  dt__free(grouped);
  dt__free(replaced);
  dt__free(members);
  dt__free(group);
  return rc;
}
