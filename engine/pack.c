/*
** pack.c: cost-aware packing after first-fit-decreasing.
**
** Karpenter's first-fit-decreasing keeps adding pods to a claim while any
** instance type still fits them, so on a broad catalog claims drift to the
** largest (often memory-optimised, often dear) types. This pass re-packs the
** claims whose pods carry no topology, host port or label-selection
** constraints, group by group (same pool, same requirements):
**
**   D. column generation over node patterns (below): the pattern LP's whole
**      nodes, then the rest by the cheapest of three roundings (solving
**      again for what is left, rounding the last LP up, the greedy plans);
**      a group of more than CG_MAXS shapes in parts of at most CG_MAXS
**      shapes dealt out in turn, each solved so;
**   A. each shape alone on its cheapest type per pod;
**   B. greedy: open nodes one at a time, for each of the types with the best
**      reduced cost under the covering LP's duals fill a node largest pod
**      first, keep the type with the lowest price per unit of value;
**   C. the same valuing pods at plan A's per-pod prices.
**
** A, B and C run when D fails or lands more than 1% above its LP. Every node
** shrinks to the cheapest type that holds it; at the same price, to a type
** without devices (GPUs, Neuron) the pods do not ask for. The work is
** bounded by a count of pricing rounds per group (CG_BUDGET), not by the
** clock, so the same input always gives the same plan.
**
** The result replaces first-fit's claims only when it is strictly cheaper,
** so it is never worse. In a pool with limits it is charged as first-fit
** charges claims and must fit what first-fit's claims were charged plus what
** is left; with minValues every node's options must still meet them (else
** first-fit's claims stay). Pools with capacity reservations are left to
** first-fit (its reservation accounting is first-fit's).
*/
#include "schedule.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
  bool unwanted; /* carries devices (GPUs, Neuron, ...) no pod of the group asks for */
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
    if (!dt__spot_ok(of, spot_max)) continue;
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
      if (!dt__spot_ok(of, pl->spot_max)) continue;
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

/* The candidate (index into by_price) holding up to n pods of shape req at
** the lowest price per pod: *k pods, *per_pod each; -1 if none holds one. */
static int32_t best_alone(const dt_plan *p, const rt_pool *pl, const cand *by_price, uint32_t nc, const int64_t *req,
                          int64_t n, int64_t *k, double *per_pod) {
  static const int64_t zero[DT_RES_MAX];
  int32_t bt = -1;
  *k = 0;
  *per_pod = INFINITY;
  for (uint32_t i = 0; i < nc; i++) {
    int64_t c = fit_count(p, pl->eff[by_price[i].type], zero, req, n);
    if (c > 0 && by_price[i].price / (double)c < *per_pod) {
      *per_pod = by_price[i].price / (double)c;
      bt = (int32_t)i;
      *k = c;
    }
  }
  return bt;
}

/* Each shape alone on its cheapest type per pod; the remainder of a shape on
** the cheapest type that holds it. */
static int homogeneous(const dt_plan *p, const rt_pool *pl, const shape *shapes, size_t ns, const cand *by_price,
                       uint32_t nc, double *per_pod, packing *out) {
  int64_t *counts = dt__calloc(ns ? ns : 1, sizeof *counts);
  if (!counts) return DT_ENOMEM;
  int rc = 0;
  for (size_t s = 0; s < ns && !rc; s++) {
    int64_t n = (int64_t)shapes[s].pods.n;
    per_pod[s] = 0;
    if (!n) continue;
    int64_t bk;
    int32_t bt = best_alone(p, pl, by_price, nc, shapes[s].req, n, &bk, &per_pod[s]);
    if (bt < 0) {
      rc = DT_EINVAL;
      break;
    }
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

/* ------------------------------------------------------------------------
** Column generation over node patterns: Gilmore and Gomory's cutting-stock
** LP with one bin kind per instance type. A pattern is one node: a type and
** how many pods of each shape it holds. The master LP covers each shape's
** demand with patterns at least cost; its duals price a pod of each shape,
** and the best new pattern for a type is a knapsack over the shapes at those
** prices. The LP optimum bounds every plan of these pods from below; its
** solution is rounded by taking whole nodes and solving again for the rest.
** ---------------------------------------------------------------------- */

#define CG_MAXS 64         /* shapes one pattern LP takes; a group of more is solved in parts */
#define CG_ITERS 60        /* pricing rounds for the first LP */
#define CG_ITERS_REST 60   /* ... and for each LP of what its whole nodes leave */
#define CG_ADD 6           /* patterns added per round */
#define CG_BUDGET 2000     /* pricing rounds per group, its rounding's included */
#define CG_ENOUGH 12       /* improving patterns that end a round's pricing */
#define CG_KNAPS 32        /* knapsacks per round at most */
#define CG_GAP 0.002       /* stop pricing when the LP is this close to its bound */
#define KNAP_BUDGET 100    /* search nodes per knapsack ... */
#define KNAP_BUDGET_LP 300 /* ... and again with the LP bound, when the first ran out */

typedef struct knap {
  const dt_plan *p;
  const int64_t *cap;
  uint32_t k;                     /* shapes worth something, in search order */
  const int64_t **req;            /* these arrays: ns entries (suf: ns + 1), from knap_ws */
  double *val, *dens;
  int64_t *lim;
  uint32_t *shape;
  double (*suf)[DT_RES_MAX]; /* best value per unit of r from position i on */
  int64_t used[DT_RES_MAX];
  int64_t *cur, *best;
  double *tab, *rv, *rub, *rx; /* knap_lp's tableau (DT_RES_MAX x (ns + DT_RES_MAX)) and vectors */
  uint8_t *rat;
  int64_t *rcnt;
  double bestv;
  long budget;
  bool have_lam;
  double lam[DT_RES_MAX]; /* the LP relaxation's price of a unit of each resource */
} knap;

static void knap_dfs(knap *K, uint32_t i, double value) {
  if (value > K->bestv) {
    K->bestv = value;
    memcpy(K->best, K->cur, K->k * sizeof *K->cur);
  }
  if (i == K->k || K->budget-- <= 0) return;
  /* Bound: no resource can earn more than its best value per unit. */
  double bound = INFINITY;
  for (uint32_t r = 0; r < K->p->nres; r++)
    if (isfinite(K->suf[i][r])) bound = fmin(bound, (double)(K->cap[r] - K->used[r]) * K->suf[i][r]);
  if (K->have_lam) { /* Lagrangian bound at the LP's resource prices */
    double lb = 0;
    for (uint32_t r = 0; r < K->p->nres; r++) lb += K->lam[r] * (double)(K->cap[r] - K->used[r]);
    for (uint32_t j = i; j < K->k; j++) {
      double net = K->val[j];
      for (uint32_t r = 0; r < K->p->nres; r++) net -= K->lam[r] * (double)K->req[j][r];
      if (net > 0) lb += net * (double)K->lim[j];
    }
    bound = fmin(bound, lb);
  }
  if (value + bound <= K->bestv * (1 + 1e-12)) return;
  const int64_t *req = K->req[i];
  int64_t c = fit_count(K->p, K->cap, K->used, req, K->lim[i]);
  for (uint32_t r = 0; r < K->p->nres; r++) K->used[r] += c * req[r];
  for (;;) {
    K->cur[i] = c;
    knap_dfs(K, i + 1, value + (double)c * K->val[i]);
    if (c == 0 || K->budget <= 0) break;
    c--;
    for (uint32_t r = 0; r < K->p->nres; r++) K->used[r] -= req[r];
  }
  for (uint32_t r = 0; r < K->p->nres; r++) K->used[r] -= c * req[r];
  K->cur[i] = 0;
}

/*
** The knapsack's LP relaxation: maximise v.x subject to A x <= 1 (one row
** per resource, scaled by capacity) and 0 <= x_i <= ub_i. Rows are few (the
** resources the pods ask for), so a primal simplex with bounded variables on
** a full tableau of nr rows by k + nr columns (the last nr the rows' slacks)
** costs O(nr (k + nr)) a pivot. x[k] receives the solution and lam[nr] the
** rows' duals, the price of a unit of each resource. False when it did not
** reach the optimum within its pivots (x and lam are then unusable).
*/
static bool knap_relax(uint32_t nr, uint32_t k, double *T, const double *v, const double *ub, double *x, double *lam,
                       int32_t *basis, uint8_t *at_ub, double *b) {
  uint32_t N = k + nr;
  for (uint32_t r = 0; r < nr; r++) {
    for (uint32_t j = k; j < N; j++) T[(size_t)r * N + j] = j - k == r;
    basis[r] = (int32_t)(k + r);
    b[r] = 1;
  }
  for (uint32_t j = 0; j < k; j++) at_ub[j] = 0;
#define OBJ(j) ((j) < k ? v[j] : 0.0)
#define UB(j) ((j) < k ? ub[j] : INFINITY)
  bool done = false;
  int stalled = 0;
  for (uint32_t iter = 0; iter < 20 * N + 100 && !done; iter++) {
    /* entering: the largest gain (Dantzig), or after a run of degenerate
    ** pivots the first that gains (Bland) */
    int32_t e = -1;
    double gain = 1e-12, de = 0;
    for (uint32_t j = 0; j < N; j++) {
      bool basic = false;
      for (uint32_t r = 0; r < nr && !basic; r++) basic = basis[r] == (int32_t)j;
      if (basic) continue;
      double d = OBJ(j);
      for (uint32_t r = 0; r < nr; r++) d -= OBJ((uint32_t)basis[r]) * T[(size_t)r * N + j];
      bool up = j < k && at_ub[j];
      double g = up ? -d : d;
      if (g > gain) {
        gain = g;
        e = (int32_t)j;
        de = d;
        if (stalled > (int)(2 * nr)) break;
      }
    }
    if (e < 0) {
      done = true;
      break;
    }
    double sgn = de > 0 ? 1 : -1; /* raise from 0, or lower from its bound */
    double t = UB((uint32_t)e);
    int32_t leave = -1;
    bool leave_up = false;
    for (uint32_t r = 0; r < nr; r++) {
      double alpha = sgn * T[(size_t)r * N + (uint32_t)e];
      if (alpha > 1e-12) {
        double q = b[r] / alpha;
        if (q < t) t = q, leave = (int32_t)r, leave_up = false;
      } else if (alpha < -1e-12 && isfinite(UB((uint32_t)basis[r]))) {
        double q = (UB((uint32_t)basis[r]) - b[r]) / -alpha;
        if (q < t) t = q, leave = (int32_t)r, leave_up = true;
      }
    }
    if (!isfinite(t)) return false; /* unbounded: an item that needs nothing and has no limit */
    stalled = t <= 1e-12 ? stalled + 1 : 0;
    for (uint32_t r = 0; r < nr; r++) b[r] -= sgn * t * T[(size_t)r * N + (uint32_t)e];
    if (leave < 0) { /* the entering variable reaches its other bound first */
      at_ub[e] = !at_ub[e];
      continue;
    }
    uint32_t L = (uint32_t)leave, out = (uint32_t)basis[L];
    double enter_val = sgn > 0 ? ((uint32_t)e < k && at_ub[e] ? ub[e] : 0) + t : UB((uint32_t)e) - t;
    if (out < k) at_ub[out] = leave_up;
    double piv = T[(size_t)L * N + (uint32_t)e];
    for (uint32_t j = 0; j < N; j++) T[(size_t)L * N + j] /= piv;
    for (uint32_t r = 0; r < nr; r++) {
      double f = T[(size_t)r * N + (uint32_t)e];
      if (r == L || f == 0) continue;
      for (uint32_t j = 0; j < N; j++) T[(size_t)r * N + j] -= f * T[(size_t)L * N + j];
    }
    basis[L] = e;
    b[L] = enter_val;
    if ((uint32_t)e < k) at_ub[e] = 0;
  }
  if (!done) return false;
  for (uint32_t j = 0; j < k; j++) x[j] = at_ub[j] ? ub[j] : 0;
  for (uint32_t r = 0; r < nr; r++) {
    if ((uint32_t)basis[r] < k) x[basis[r]] = b[r];
    lam[r] = 0;
  }
  for (uint32_t r = 0; r < nr; r++)
    for (uint32_t i = 0; i < nr; i++) lam[r] += OBJ((uint32_t)basis[i]) * T[(size_t)i * N + k + r];
#undef OBJ
#undef UB
  return true;
}

/* For a node too large to search: the knapsack's LP relaxation, rounded
** down and topped up densest first; its resource prices then give the
** search a Lagrangian bound. On a large node rounding loses at most a few
** pods' worth. */
static void knap_lp(knap *K) {
  const dt_plan *p = K->p;
  uint32_t res[DT_RES_MAX], nr = 0, k = K->k;
  for (uint32_t r = 0; r < p->nres; r++) {
    bool used = false;
    for (uint32_t i = 0; i < k && !used; i++) used = K->req[i][r] > 0;
    if (used && K->cap[r] > 0) res[nr++] = r;
  }
  if (!nr || !k) return;
  uint32_t N = k + nr;
  double top = 0, lam[DT_RES_MAX], b[DT_RES_MAX];
  int32_t basis[DT_RES_MAX];
  double *T = K->tab, *v = K->rv, *ub = K->rub, *x = K->rx;
  for (uint32_t i = 0; i < k; i++) top = fmax(top, K->val[i]);
  for (uint32_t i = 0; i < k; i++) {
    for (uint32_t q = 0; q < nr; q++) T[(size_t)q * N + i] = (double)K->req[i][res[q]] / (double)K->cap[res[q]];
    v[i] = K->val[i] / top;
    ub[i] = (double)K->lim[i];
  }
  if (!knap_relax(nr, k, T, v, ub, x, lam, basis, K->rat, b)) return;
  memset(K->lam, 0, sizeof K->lam);
  for (uint32_t q = 0; q < nr; q++) K->lam[res[q]] = fmax(lam[q], 0) * top / (double)K->cap[res[q]];
  K->have_lam = true;
  int64_t used[DT_RES_MAX] = {0}, *cnt = K->rcnt;
  double value = 0;
  for (uint32_t i = 0; i < k; i++) {
    cnt[i] = (int64_t)floor(x[i] + 1e-9);
    if (cnt[i] > K->lim[i]) cnt[i] = K->lim[i];
    if (cnt[i] < 0) cnt[i] = 0;
    for (uint32_t r = 0; r < p->nres; r++) used[r] += cnt[i] * K->req[i][r];
  }
  if (!fits_in(p, K->cap, used)) return; /* numerical trouble: keep the search's answer */
  for (uint32_t i = 0; i < k; i++) { /* top up, densest first */
    int64_t more = fit_count(p, K->cap, used, K->req[i], K->lim[i] - cnt[i]);
    cnt[i] += more;
    for (uint32_t r = 0; r < p->nres; r++) used[r] += more * K->req[i][r];
    value += (double)cnt[i] * K->val[i];
  }
  if (value > K->bestv) {
    K->bestv = value;
    memcpy(K->best, cnt, k * sizeof *cnt);
  }
}

/* The most valuable pods (at most lim[s] of shape s, worth pi[s] each) one
** node of capacity cap holds: counts into out[ns], the value returned. A
** bounded depth-first search, densest shape first and most copies first, so
** the budget cuts it short only after a good answer is in hand. */
static double knapsack(knap *Kp, const dt_plan *p, const shape *sh, size_t ns, const double *pi, const int64_t *lim,
                       const int64_t *cap, int64_t *out) {
  knap K = *Kp; /* the workspace's arrays; the rest is this search's */
  K.p = p;
  K.cap = cap;
  K.k = 0;
  double *dens = K.dens;
  for (size_t s = 0; s < ns; s++) {
    if (pi[s] <= 0 || lim[s] <= 0) continue;
    double size = 0;
    for (uint32_t r = 0; r < p->nres; r++)
      if (sh[s].req[r] > 0) size = fmax(size, cap[r] > 0 ? (double)sh[s].req[r] / (double)cap[r] : INFINITY);
    if (!isfinite(size)) continue; /* does not fit at all */
    uint32_t j = K.k++;
    while (j > 0 && dens[j - 1] < pi[s] / size) { /* insertion: densest first, ties by shape */
      dens[j] = dens[j - 1];
      K.shape[j] = K.shape[j - 1];
      j--;
    }
    dens[j] = pi[s] / size;
    K.shape[j] = (uint32_t)s;
  }
  for (uint32_t i = 0; i < K.k; i++) {
    K.req[i] = sh[K.shape[i]].req;
    K.val[i] = pi[K.shape[i]];
    K.lim[i] = lim[K.shape[i]];
  }
  for (uint32_t r = 0; r < p->nres; r++) {
    K.suf[K.k][r] = 0;
    for (uint32_t i = K.k; i-- > 0;) {
      double v = K.req[i][r] > 0 ? K.val[i] / (double)K.req[i][r] : INFINITY;
      K.suf[i][r] = fmax(v, K.suf[i + 1][r]);
    }
  }
  memset(K.used, 0, sizeof K.used);
  memset(K.cur, 0, ns * sizeof *K.cur);
  memset(K.best, 0, ns * sizeof *K.best);
  K.bestv = 0;
  K.budget = KNAP_BUDGET;
  K.have_lam = false;
  knap_dfs(&K, 0, 0);
  if (K.budget < 0) {
    /* Cut short: round the LP relaxation, then search again with its bound. */
    knap_lp(&K);
    if (K.have_lam) {
      K.budget = KNAP_BUDGET_LP;
      memset(K.used, 0, sizeof K.used);
      memset(K.cur, 0, ns * sizeof *K.cur);
      knap_dfs(&K, 0, 0);
    }
  }
  memset(out, 0, ns * sizeof *out);
  for (uint32_t i = 0; i < K.k; i++) out[K.shape[i]] = K.best[i];
  return K.bestv;
}

/* The knapsack's arrays for ns shapes, in one allocation. */
static int knap_init(knap *K, size_t ns) {
  memset(K, 0, sizeof *K);
  size_t n = ns ? ns : 1;
  K->req = dt__malloc(n * sizeof *K->req);
  K->val = dt__malloc(n * sizeof *K->val);
  K->dens = dt__malloc(n * sizeof *K->dens);
  K->lim = dt__malloc(n * sizeof *K->lim);
  K->cur = dt__malloc(n * sizeof *K->cur);
  K->best = dt__malloc(n * sizeof *K->best);
  K->shape = dt__malloc(n * sizeof *K->shape);
  K->suf = dt__malloc((n + 1) * sizeof *K->suf);
  K->tab = dt__malloc(DT_RES_MAX * (n + DT_RES_MAX) * sizeof *K->tab);
  K->rv = dt__malloc(n * sizeof *K->rv);
  K->rub = dt__malloc(n * sizeof *K->rub);
  K->rx = dt__malloc(n * sizeof *K->rx);
  K->rat = dt__malloc(n * sizeof *K->rat);
  K->rcnt = dt__malloc(n * sizeof *K->rcnt);
  return K->req && K->val && K->dens && K->lim && K->cur && K->best && K->shape && K->suf && K->tab && K->rv &&
                 K->rub && K->rx && K->rat && K->rcnt
             ? 0
             : DT_ENOMEM;
}

static void knap_close(knap *K) {
  dt__free(K->req);
  dt__free(K->val);
  dt__free(K->dens);
  dt__free(K->lim);
  dt__free(K->cur);
  dt__free(K->best);
  dt__free(K->shape);
  dt__free(K->suf);
  dt__free(K->tab);
  dt__free(K->rv);
  dt__free(K->rub);
  dt__free(K->rx);
  dt__free(K->rat);
  dt__free(K->rcnt);
  memset(K, 0, sizeof *K);
}

typedef struct colset {
  size_t n;
  DT_VEC(uint32_t) type; /* index into by_price */
  DT_VEC(int64_t) cnt;   /* n x ns */
  DT_VEC(double) x;      /* the last LP's solution */
} colset;

static void colset_free(colset *c) {
  dt__free(c->type.v);
  dt__free(c->cnt.v);
  dt__free(c->x.v);
  memset(c, 0, sizeof *c);
}

static int colset_add(colset *c, uint32_t type, const int64_t *cnt, size_t ns) {
  for (size_t j = 0; j < c->n; j++) /* never the same pattern twice */
    if (c->type.v[j] == type && !memcmp(&c->cnt.v[j * ns], cnt, ns * sizeof *cnt)) return 0;
  if (dt__vec_push(&c->type, type) || dt__vec_push(&c->x, 0.0)) return DT_ENOMEM;
  for (size_t s = 0; s < ns; s++)
    if (dt__vec_push(&c->cnt, cnt[s])) return DT_ENOMEM;
  c->n++;
  return 0;
}

typedef struct cg_ctx {
  const dt_plan *p;
  const rt_pool *pl;
  const shape *sh;
  size_t ns;
  const cand *by_price; /* every candidate, cheapest first */
  uint32_t nc;
  const uint32_t *front; /* the candidates no cheaper one holds at least as much as */
  uint32_t nfront;
  knap *K;         /* the knapsacks' workspace */
  int64_t *got;    /* take_node's counts, ns */
  int64_t *single; /* round_rest's one-shape node, ns */
  long *rounds_left; /* pricing rounds the group may still spend (CG_BUDGET) */
} cg_ctx;

typedef struct priced {
  uint32_t type;
  double ratio; /* price per value: below 1 improves the LP */
} priced;

static int cmp_priced(const void *a, const void *b) {
  const priced *x = a, *y = b;
  if (x->ratio != y->ratio) return x->ratio < y->ratio ? -1 : 1;
  return x->type < y->type ? -1 : x->type > y->type;
}

/* Solve the pattern LP for dem[] by column generation; cols->x receives it,
** *lp_obj its cost (a lower bound on any plan when pricing was exact).
** Returns 0, DT_ENOMEM, or DT_EINVAL when the LP cannot be solved. */
static int cg_lp(const cg_ctx *g, const int64_t *dem, colset *cols, int iters, double *lp_obj) {
  const dt_plan *p = g->p;
  size_t ns = g->ns;
  int rc = 0;
  uint32_t m = 0;
  int32_t *rowof = dt__malloc(ns * sizeof *rowof);
  int *basis = dt__malloc(ns * sizeof *basis), *start = NULL, *row = NULL;
  double *d = dt__malloc(ns * sizeof *d), *y = dt__malloc(ns * sizeof *y), *pi = dt__malloc(ns * sizeof *pi);
  double *val = NULL, *c = NULL, *x = NULL, *inv = NULL;
  priced *pr = dt__malloc((g->nfront ? g->nfront : 1) * sizeof *pr),
         *queue = dt__malloc((g->nfront ? g->nfront : 1) * sizeof *queue);
  int64_t *cnt = dt__malloc(ns * (g->nfront + 1) * sizeof *cnt);
  size_t built = 0, nz = 0, capz = 0, capn = 0; /* columns in the sparse matrix so far */
  if (!rowof || !basis || !d || !y || !pi || !pr || !queue || !cnt) {
    rc = DT_ENOMEM;
    goto out;
  }
  for (size_t s = 0; s < ns; s++) rowof[s] = dem[s] > 0 ? (int32_t)m++ : -1;
  if (!m) goto out;
  if (!(inv = dt__malloc((size_t)m * m * sizeof *inv))) {
    rc = DT_ENOMEM;
    goto out;
  }
  inv[0] = NAN;
  for (uint32_t q = 0; q < m; q++) d[q] = 1;
  basis[0] = DT_LP_COLD; /* each iteration starts from the last one's basis */
  for (int iter = 0; iter < iters; iter++) {
    /* Columns only ever join: add the new ones' non-zeros, scaled by demand. */
    size_t n = cols->n;
    if (n + 1 > capn) {
      size_t nn = 2 * n + 16;
      int *ns_ = dt__realloc(start, (nn + 1) * sizeof *start);
      if (ns_) start = ns_;
      double *nc_ = ns_ ? dt__realloc(c, nn * sizeof *c) : NULL;
      if (nc_) c = nc_;
      double *nx = nc_ ? dt__realloc(x, nn * sizeof *x) : NULL;
      if (!nx) {
        rc = DT_ENOMEM;
        goto out;
      }
      x = nx;
      capn = nn;
    }
    for (; built < n; built++) {
      start[built] = (int)nz;
      c[built] = g->by_price[cols->type.v[built]].price;
      for (size_t s = 0; s < ns; s++) {
        int64_t k = cols->cnt.v[built * ns + s];
        if (!k || rowof[s] < 0) continue;
        if (nz + 1 > capz) {
          size_t nn = 2 * capz + 64;
          int *nr = dt__realloc(row, nn * sizeof *row);
          if (nr) row = nr;
          double *nv = nr ? dt__realloc(val, nn * sizeof *val) : NULL;
          if (!nv) {
            rc = DT_ENOMEM;
            goto out;
          }
          val = nv;
          capz = nn;
        }
        row[nz] = rowof[s];
        val[nz++] = (double)(k < dem[s] ? k : dem[s]) / (double)dem[s];
      }
    }
    start[n] = (int)nz;
    double obj;
    int lrc = dt__lp_cover_sparse((int)m, (int)n, start, row, val, c, d, y, x, &obj, basis, inv);
    if (lrc) {
      rc = lrc == DT_ENOMEM ? DT_ENOMEM : DT_EINVAL;
      goto out;
    }
    memcpy(cols->x.v, x, n * sizeof *x);
    *lp_obj = obj;
    for (size_t s = 0; s < ns; s++) pi[s] = rowof[s] >= 0 && y[rowof[s]] > 0 ? y[rowof[s]] / (double)dem[s] : 0;
    /* The group's pricing budget spent, this LP's solution stands. */
    if (*g->rounds_left <= 0) break;
    --*g->rounds_left;
    /* Pricing: each undominated type's best pattern at these prices. */
    double maxr[DT_RES_MAX];
    for (uint32_t r = 0; r < p->nres; r++) {
      maxr[r] = 0;
      for (size_t s = 0; s < ns; s++)
        maxr[r] = fmax(maxr[r], g->sh[s].req[r] > 0 ? pi[s] / (double)g->sh[s].req[r] : (pi[s] > 0 ? INFINITY : 0));
    }
    /* Partial pricing: types in order of the most their best pattern could
    ** be worth per unit of price; stop after CG_ENOUGH improving patterns or
    ** CG_KNAPS knapsacks, the rest bounded by that order's next entry. */
    uint32_t np = 0, nq = 0;
    double most = 0; /* the best value per unit of price any type may reach */
    for (uint32_t f = 0; f < g->nfront; f++) {
      const cand *cd = &g->by_price[g->front[f]];
      const int64_t *cap = g->pl->eff[cd->type];
      double ub = INFINITY;
      for (uint32_t r = 0; r < p->nres; r++)
        if (isfinite(maxr[r])) ub = fmin(ub, (double)(cap[r] > 0 ? cap[r] : 0) * maxr[r]);
      if (ub <= cd->price * (1 + 1e-9))
        most = fmax(most, ub / cd->price);
      else
        queue[nq++] = (priced){g->front[f], cd->price / ub}; /* ratio: price per most value */
    }
    qsort(queue, nq, sizeof *queue, cmp_priced);
    for (uint32_t q = 0, done = 0; q < nq; q++) {
      if (np >= CG_ENOUGH || done >= CG_KNAPS) {
        most = fmax(most, 1 / queue[q].ratio);
        break;
      }
      const cand *cd = &g->by_price[queue[q].type];
      double v = knapsack(g->K, p, g->sh, ns, pi, dem, g->pl->eff[cd->type], &cnt[(size_t)np * ns]);
      done++;
      most = fmax(most, v / cd->price);
      if (v > cd->price * (1 + 1e-7)) pr[np++] = (priced){queue[q].type, cd->price / v};
    }
    if (!np || (most > 0 && obj / most >= obj * (1 - CG_GAP))) break;
    /* The best few, each with its own counts (pr[i] indexes cnt by i). */
    uint32_t idx[CG_ADD], nadd = 0;
    for (uint32_t k = 0; k < np && nadd < CG_ADD; k++) {
      uint32_t best = UINT32_MAX;
      for (uint32_t i = 0; i < np; i++) {
        bool taken = false;
        for (uint32_t q = 0; q < nadd; q++) taken |= idx[q] == i;
        if (!taken && (best == UINT32_MAX || cmp_priced(&pr[i], &pr[best]) < 0)) best = i;
      }
      idx[nadd++] = best;
    }
    size_t before = cols->n;
    for (uint32_t q = 0; q < nadd && !rc; q++) rc = colset_add(cols, pr[idx[q]].type, &cnt[(size_t)idx[q] * ns], ns);
    if (rc) goto out;
    if (cols->n == before) break; /* nothing new: the LP is as good as pricing can tell */
  }
out:
  dt__free(inv);
  dt__free(rowof);
  dt__free(basis);
  dt__free(d);
  dt__free(y);
  dt__free(pi);
  dt__free(pr);
  dt__free(queue);
  dt__free(cnt);
  dt__free(start);
  dt__free(row);
  dt__free(val);
  dt__free(c);
  dt__free(x);
  return rc;
}

/* Take one node holding min(cnt, rem) of each shape; false when empty. */
static int take_node(const cg_ctx *g, const int64_t *cnt, int64_t *rem, size_t *left, packing *out, bool *took) {
  int64_t *got = g->got;
  int64_t used[DT_RES_MAX] = {0};
  size_t any = 0;
  *took = false;
  for (size_t s = 0; s < g->ns; s++) {
    got[s] = cnt[s] < rem[s] ? cnt[s] : rem[s];
    any += (size_t)got[s];
    for (uint32_t r = 0; r < g->p->nres; r++) used[r] += got[s] * g->sh[s].req[r];
  }
  if (!any) return 0;
  int32_t c = cheapest_fit(g->p, g->pl, g->by_price, g->nc, used);
  if (c < 0) return DT_EINVAL;
  for (size_t s = 0; s < g->ns; s++) rem[s] -= got[s];
  *left -= any;
  *took = true;
  return packing_add(out, (uint32_t)c, got, g->ns, g->by_price[c].price);
}

/* Take floor(x) nodes of each pattern of the last LP, largest x first
** (ties by age), each cut to what is left; *any says whether one was. */
static int take_whole(const cg_ctx *g, const colset *cols, int64_t *rem, size_t *left, packing *out, uint32_t *ord,
                      bool *any) {
  size_t ns = g->ns;
  int rc = 0;
  *any = false;
  for (uint32_t j = 0; j < cols->n; j++) {
    uint32_t i = j;
    while (i > 0 && cols->x.v[ord[i - 1]] < cols->x.v[j]) {
      ord[i] = ord[i - 1];
      i--;
    }
    ord[i] = j;
  }
  for (uint32_t q = 0; q < cols->n && !rc && *left; q++) {
    uint32_t j = ord[q];
    double whole = floor(cols->x.v[j] + 1e-9);
    for (double k = 0; k < whole && !rc && *left; k++) {
      bool took;
      rc = take_node(g, &cols->cnt.v[(size_t)j * ns], rem, left, out, &took);
      if (!took) break;
      *any = true;
    }
  }
  return rc;
}

/* What is left, one shape at a time on the cheapest type that holds it. */
static int finish_alone(const cg_ctx *g, int64_t *rem, size_t left, packing *out) {
  static const int64_t zero[DT_RES_MAX];
  int rc = 0;
  for (size_t s = 0; s < g->ns && !rc && left; s++)
    while (rem[s] > 0 && !rc) {
      int64_t *cnt = g->single, bk = 0;
      memset(cnt, 0, g->ns * sizeof *cnt);
      for (uint32_t i = 0; i < g->nc && !bk; i++)
        bk = fit_count(g->p, g->pl->eff[g->by_price[i].type], zero, g->sh[s].req, rem[s]);
      if (!bk) return DT_EINVAL;
      cnt[s] = bk;
      bool took;
      rc = take_node(g, cnt, rem, &left, out, &took);
    }
  return rc;
}

/* Round the rest: solve again for what is left and take its whole nodes;
** when none is whole, round the largest fraction up. */
static int round_rest(const cg_ctx *g, colset *cols, int64_t *rem, size_t left, packing *out) {
  size_t ns = g->ns;
  int rc = 0;
  uint32_t *ord = NULL;
  for (size_t round = 0; !rc && left && round < 2 * ns + 8; round++) {
    double obj;
    if ((rc = cg_lp(g, rem, cols, CG_ITERS_REST, &obj))) break;
    uint32_t *no = dt__realloc(ord, cols->n * sizeof *ord + 1);
    if (!no) {
      rc = DT_ENOMEM;
      break;
    }
    ord = no;
    bool any;
    rc = take_whole(g, cols, rem, &left, out, ord, &any);
    if (!rc && !any && left && cols->n) {
      /* No whole node: round up the pattern carrying the most pods in the
      ** LP (x times what it holds of what is left). */
      uint32_t up = ord[0];
      double most = -1;
      for (uint32_t j = 0; j < cols->n; j++) {
        double held = 0;
        for (size_t q = 0; q < ns; q++) {
          int64_t c = cols->cnt.v[(size_t)j * ns + q];
          held += (double)(c < rem[q] ? c : rem[q]);
        }
        if (cols->x.v[j] * held > most + 1e-12) {
          most = cols->x.v[j] * held;
          up = j;
        }
      }
      bool took;
      rc = take_node(g, &cols->cnt.v[(size_t)up * ns], rem, &left, out, &took);
      if (!rc && !took) break;
    }
  }
  if (!rc) rc = finish_alone(g, rem, left, out);
  dt__free(ord);
  return rc;
}

/* Round the last LP up: one node of each pattern with a fractional part,
** largest part first (ties by age), each cut to what is left, so patterns
** later in the order shrink to what the earlier ones left them. */
static int round_up(const cg_ctx *g, const colset *cols, int64_t *rem, size_t left, packing *out) {
  uint32_t *ord = dt__malloc(cols->n * sizeof *ord + 1), no = 0;
  if (!ord) return DT_ENOMEM;
  for (uint32_t j = 0; j < cols->n; j++) {
    double f = cols->x.v[j] - floor(cols->x.v[j] + 1e-9);
    if (f <= 1e-9) continue;
    uint32_t i = no++;
    while (i > 0) {
      double fo = cols->x.v[ord[i - 1]] - floor(cols->x.v[ord[i - 1]] + 1e-9);
      if (fo >= f) break;
      ord[i] = ord[i - 1];
      i--;
    }
    ord[i] = j;
  }
  int rc = 0;
  for (uint32_t q = 0; q < no && !rc && left; q++) {
    bool took;
    rc = take_node(g, &cols->cnt.v[(size_t)ord[q] * g->ns], rem, &left, out, &took);
  }
  dt__free(ord);
  return rc ? rc : finish_alone(g, rem, left, out);
}

static int greedy_plans(const dt_plan *p, const rt_pool *pl, const shape *shapes, size_t ns, cand *cands,
                        const cand *by_price, uint32_t nc, packing *plans);

/* Plan D: the pattern LP's whole nodes, then the rest by further rounding
** or by the greedy plans, whichever costs less. On a large group the whole
** nodes are nearly everything; on a small one the rest is, and rounding a
** fractional solution of a few nodes can lose to a greedy fill. */
static int colgen(const cg_ctx *g, cand *cands, packing *out, double *lp_obj) {
  size_t ns = g->ns;
  int64_t *rem = dt__malloc(ns * sizeof *rem), *rest = dt__malloc(ns * sizeof *rest),
          *cnt = dt__malloc(ns * sizeof *cnt);
  shape *sub = dt__malloc(ns * sizeof *sub);
  size_t left = 0;
  colset cols = {0};
  packing tail[5];
  memset(tail, 0, sizeof tail);
  int rc = 0;
  uint32_t *ord = NULL;
  if (!rem || !rest || !cnt || !sub) {
    rc = DT_ENOMEM;
    goto out;
  }
  for (size_t s = 0; s < ns; s++) left += (size_t)(rem[s] = (int64_t)g->sh[s].pods.n);
  /* Seed: each shape alone on the type holding it most cheaply per pod. */
  for (size_t s = 0; s < ns && !rc; s++) {
    int64_t bk = 0;
    double per_pod;
    memset(cnt, 0, ns * sizeof *cnt);
    int32_t bt = best_alone(g->p, g->pl, g->by_price, g->nc, g->sh[s].req, rem[s], &bk, &per_pod);
    if (bt < 0) rc = DT_EINVAL;
    cnt[s] = bk;
    if (!rc) rc = colset_add(&cols, (uint32_t)bt, cnt, ns);
  }
  bool any;
  if (!rc) rc = cg_lp(g, rem, &cols, CG_ITERS, lp_obj);
  if (!rc && !(ord = dt__malloc(cols.n * sizeof *ord + 1))) rc = DT_ENOMEM;
  if (!rc) rc = take_whole(g, &cols, rem, &left, out, ord, &any);
  if (rc || !left) goto out;
  {
    memcpy(rest, rem, ns * sizeof *rem);
    if ((rc = round_up(g, &cols, rest, left, &tail[4])) == DT_EINVAL) rc = 0;
    memcpy(rest, rem, ns * sizeof *rem);
    if (!rc && (rc = round_rest(g, &cols, rest, left, &tail[3])) == DT_EINVAL) rc = 0;
    for (size_t s = 0; s < ns; s++) {
      sub[s] = g->sh[s];
      sub[s].pods.n = (size_t)rem[s];
    }
    if (!rc) rc = greedy_plans(g->p, g->pl, sub, ns, cands, g->by_price, g->nc, tail);
    if (rc) goto out;
    int best = -1;
    for (int i = 0; i < 5; i++) {
      size_t placed = 0;
      for (size_t q = 0; q < tail[i].count.n; q++) placed += (size_t)tail[i].count.v[q];
      if (placed == left && (best < 0 || tail[i].cost < tail[best].cost - 1e-9)) best = i;
    }
    if (best < 0) {
      rc = DT_EINVAL;
      goto out;
    }
    for (size_t n = 0; n < tail[best].nodes && !rc; n++) {
      uint32_t c = tail[best].type.v[n];
      rc = packing_add(out, c, &tail[best].count.v[n * ns], ns, g->by_price[c].price);
    }
  }
out:
  for (int i = 0; i < 5; i++) packing_free(&tail[i]);
  dt__free(ord);
  dt__free(rem);
  dt__free(rest);
  dt__free(cnt);
  dt__free(sub);
  colset_free(&cols);
  return rc;
}

/*
** A group of more than CG_MAXS shapes: column generation on parts of at most
** CG_MAXS shapes each, dealt out in turn from the group's order (largest
** first), so that every part holds large and small, cpu-heavy and
** memory-heavy shapes in about the group's proportions and finds the pods
** that complement each other within itself. Pods of different parts never
** share a node; on hundreds of shapes that costs about what rounding does
** (the bench reports both against the whole group's pattern LP), and a
** pattern LP of m shapes costs O(m^2) a pivot. The parts share the group's
** pricing budget; *lp_obj is the sum of their LPs (not a bound on the whole).
*/
static int colgen_parts(const cg_ctx *g, cand *cands, packing *out, double *lp_obj) {
  size_t ns = g->ns, nparts = (ns + CG_MAXS - 1) / CG_MAXS;
  int64_t *row = dt__calloc(ns, sizeof *row);
  shape *dealt = dt__malloc(ns * sizeof *dealt);
  size_t *orig = dt__malloc(ns * sizeof *orig);
  int rc = !row || !dealt || !orig ? DT_ENOMEM : 0;
  for (size_t part = 0, w = 0; part < nparts && !rc; part++)
    for (size_t s = part; s < ns; s += nparts) {
      dealt[w] = g->sh[s];
      orig[w++] = s;
    }
  *lp_obj = 0;
  long share = *g->rounds_left / (long)nparts;
  for (size_t part = 0, off = 0; part < nparts && !rc; part++) {
    cg_ctx sub = *g;
    long left = share;
    sub.rounds_left = &left;
    sub.sh = dealt + off;
    sub.ns = (ns - part + nparts - 1) / nparts; /* shapes part, part + nparts, ... */
    packing pk = {0};
    double lp = 0;
    rc = colgen(&sub, cands, &pk, &lp);
    *lp_obj += lp;
    for (size_t node = 0; node < pk.nodes && !rc; node++) {
      memset(row, 0, ns * sizeof *row);
      for (size_t q = 0; q < sub.ns; q++) row[orig[off + q]] = pk.count.v[node * sub.ns + q];
      uint32_t c = pk.type.v[node];
      rc = packing_add(out, c, row, ns, g->by_price[c].price);
    }
    packing_free(&pk);
    off += sub.ns;
  }
  dt__free(row);
  dt__free(dealt);
  dt__free(orig);
  return rc;
}

/* The candidates (cheapest first) no cheaper or equal one dominates. */
static uint32_t undominated(const dt_plan *p, const rt_pool *pl, const cand *by_price, uint32_t nc, uint32_t *front) {
  uint32_t nf = 0;
  for (uint32_t i = 0; i < nc; i++) {
    const int64_t *e = pl->eff[by_price[i].type];
    bool dom = false;
    for (uint32_t f = 0; f < nf && !dom; f++) {
      const int64_t *o = pl->eff[by_price[front[f]].type];
      dom = true;
      for (uint32_t r = 0; r < p->nres && dom; r++) dom = o[r] >= e[r];
    }
    if (!dom) front[nf++] = i;
  }
  return nf;
}

/* Cheapest first; at the same price, a type without devices the pods do
** not ask for before one with them. */
static int cmp_by_price(const void *a, const void *b) {
  const cand *x = a, *y = b;
  if (x->price != y->price) return x->price < y->price ? -1 : 1;
  if (x->unwanted != y->unwanted) return x->unwanted ? 1 : -1;
  return x->type < y->type ? -1 : x->type > y->type;
}

/* Plans A, B and C: greedy re-packs, for groups with too many shapes for
** column generation. A pod that fits no candidate leaves the group alone. */
static int greedy_plans(const dt_plan *p, const rt_pool *pl, const shape *shapes, size_t ns, cand *cands,
                        const cand *by_price, uint32_t nc, packing *plans) {
  uint32_t m = p->nres;
  int rc = 0;
  double *a = NULL, *c = NULL, *vdual = dt__malloc(ns * sizeof *vdual), *vhomo = dt__malloc(ns * sizeof *vhomo);
  if (!vdual || !vhomo) {
    rc = DT_ENOMEM;
    goto out;
  }
  /* Plan A: every shape on its own best type. Its per-pod prices also value
  ** pods for plan C. */
  rc = homogeneous(p, pl, shapes, ns, by_price, nc, vhomo, &plans[0]);
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
      for (size_t s = 0; s < ns; s++) dem += (double)shapes[s].req[r] * (double)shapes[s].pods.n;
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
    int lrc = dt__lp_cover((int)nrows, (int)nc, a, c, d, y, NULL, &lp);
    if (lrc == DT_ENOMEM) {
      rc = DT_ENOMEM;
      goto out;
    }
    bool have_lp = lrc == 0;
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
      for (uint32_t r = 0; r < m; r++) vdual[s] += w[r] * (double)shapes[s].req[r];
    }
    qsort(cands, nc, sizeof *cands, cmp_cand);
    /* Plan B: greedy valued by the LP duals, over the best reduced costs. */
    if (have_lp && (rc = greedy(p, pl, shapes, ns, cands, PACK_TOPK, by_price, nc, vdual, &plans[1])) == DT_EINVAL)
      rc = 0;
    if (rc) goto out;
  }
  /* Plan C: greedy valued by the homogeneous per-pod prices, so complementary
  ** pods share a node when that beats packing each shape alone. */
  if ((rc = greedy(p, pl, shapes, ns, cands, PACK_TOPK, by_price, nc, vhomo, &plans[2])) == DT_EINVAL) rc = 0;
  if (rc) goto out;
out:
  dt__free(vdual);
  dt__free(vhomo);
  dt__free(a);
  dt__free(c);
  return rc;
}

/* What a claim is charged against its pool's limit on resource r: the
** largest capacity among its options, as first-fit charges it. */
static int64_t max_cap(const dt_plan *p, const rt_claim *k, uint32_t r) {
  int64_t mx = 0;
  for (uint32_t i = 0; i < k->nopt; i++)
    if (p->types[k->opt[i]].cap[r] > mx) mx = p->types[k->opt[i]].cap[r];
  return mx;
}

/* Re-pack one group: claims[0..n) share a pool and requirements. */
static int repack_group(dt_plan *p, rt_claim **claims, size_t n, claim_vec *out, bool *replaced) {
  *replaced = false;
  const rt_claim *k0 = claims[0];
  rt_pool *pl = &p->pools[k0->pool];
  uint32_t m = p->nres;
  int rc = 0;
  DT_VEC(shape) shapes = {0};
  cand *cands = NULL, *by_price = NULL;
  uint32_t *front = NULL;
  packing plans[4];
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
  if (!cands || !by_price) {
    rc = DT_ENOMEM;
    goto out;
  }
  uint32_t nc = 0;
  for (uint32_t i = 0; i < pl->ntypes; i++) {
    const rt_type *t = &p->types[pl->types[i]];
    if (!dt__type_ok(p, t, &k0->reqs, k0->zmask, k0->ctmask, pl->spot_max)) continue;
    double pr = offer_price(t, k0->zmask, k0->ctmask, true, pl->spot_max);
    if (!isfinite(pr) || pr <= 0) continue;
    bool unwanted = false; /* devices are the domain-qualified resources */
    for (uint32_t r = DT_R_EPH + 1; r < m && !unwanted; r++) {
      if (!strchr(p->res_names[r], '/')) continue;
      bool asked = false;
      for (size_t s = 0; s < ns && !asked; s++) asked = shapes.v[s].req[r] > 0;
      unwanted = !asked && t->cap[r] > 0;
    }
    cands[nc++] = (cand){pl->types[i], pr, 0, unwanted};
  }
  if (!nc) goto out;
  memcpy(by_price, cands, nc * sizeof *cands);
  qsort(by_price, nc, sizeof *by_price, cmp_by_price);
  /* Plan D: column generation over node patterns, for groups of few enough
  ** shapes; otherwise (or if it fails) the greedy plans A, B and C. */
  bool have_d = false;
  {
    knap K;
    size_t most = ns < CG_MAXS ? ns : CG_MAXS; /* shapes in one pattern LP */
    int64_t *got = dt__malloc(most * sizeof *got), *single = dt__malloc(most * sizeof *single);
    front = dt__malloc(nc * sizeof *front);
    rc = knap_init(&K, most);
    if (!rc && (!got || !single || !front)) rc = DT_ENOMEM;
    long rounds_left = CG_BUDGET;
    cg_ctx g = {p, pl, shapes.v, ns, by_price, nc, front, 0, &K, got, single, &rounds_left};
    double lp_obj = 0;
    if (!rc) {
      g.nfront = undominated(p, pl, by_price, nc, front);
      rc = ns <= CG_MAXS ? colgen(&g, cands, &plans[3], &lp_obj) : colgen_parts(&g, cands, &plans[3], &lp_obj);
    }
    knap_close(&K);
    dt__free(got);
    dt__free(single);
    /* Within 1% of the LP there is little for the greedy plans to find. */
    have_d = !rc && plans[3].cost <= lp_obj * 1.01;
    if (rc == DT_EINVAL) rc = 0;
    if (rc) goto out;
  }
  if (!have_d && (rc = greedy_plans(p, pl, shapes.v, ns, cands, by_price, nc, plans))) goto out;
  int best = -1;
  for (int i = 0; i < 4; i++) {
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
    int64_t delta[DT_RES_MAX] = {0};
    for (size_t node = 0; node < pk->nodes && !rc; node++) {
      rt_claim *k = dt__arena_alloc(&p->arena, sizeof *k);
      if (!k || dt__vec_push(&made, k)) {
        rc = DT_ENOMEM;
        break;
      }
      k->pool = k0->pool;
      k->repacked = true;
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
      ** carry), so launch may still pick a cheaper bounded offering. A node
      ** like the one before it shares its options. */
      if (node > 0 && pk->type.v[node] == pk->type.v[node - 1] &&
          !memcmp(&pk->count.v[node * ns], &pk->count.v[(node - 1) * ns], ns * sizeof *pk->count.v)) {
        k->opt = made.v[node - 1]->opt;
        k->nopt = made.v[node - 1]->nopt;
        continue;
      }
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
    /* minValues: every node's options must still meet them. Limits: the
    ** re-pack is charged as first-fit's claims were (each claim
    ** the largest capacity among its options) and must fit in what
    ** first-fit's claims were charged plus what the pool has left. */
    bool within = true;
    for (size_t i = 0; i < made.n && !rc && within && pl->has_min_values; i++)
      within = dt__min_values_ok(p, &made.v[i]->reqs, made.v[i]->opt, made.v[i]->nopt);
    if (!rc && within && pl->has_limits) {
      for (uint32_t r = 0; r < m && within; r++) {
        if (pl->remaining[r] == INT64_MAX) continue;
        int64_t was = 0, now = 0;
        for (size_t i = 0; i < n; i++) was += max_cap(p, claims[i], r);
        for (size_t i = 0; i < made.n; i++) now += max_cap(p, made.v[i], r);
        within = now <= was + pl->remaining[r];
        if (within) delta[r] = was - now;
      }
      if (within && pl->nodes_remaining >= 0) within = made.n <= n + (size_t)pl->nodes_remaining;
    }
    if (!rc && !within) {
      for (size_t i = 0; i < made.n; i++) dt__free(made.v[i]->pods.v);
      dt__free(made.v);
      goto out;
    }
    if (!rc && pl->has_limits) {
      for (uint32_t r = 0; r < m; r++)
        if (pl->remaining[r] != INT64_MAX) pl->remaining[r] += delta[r];
      if (pl->nodes_remaining >= 0) pl->nodes_remaining += (int64_t)n - (int64_t)made.n;
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
  for (int i = 0; i < 4; i++) packing_free(&plans[i]);
  dt__free(front);
  dt__free(cands);
  dt__free(by_price);
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
    bool ok = !pl->has_reserved && k->pods.n > 0 && !k->fixed; /* a static pool's claims stay as planned */
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
