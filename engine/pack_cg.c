/*
** pack_cg.c: plan D of the cost packer (see pack.c), column generation over
** node patterns and the rounding of its LP to whole nodes.
*/
#include "pack_int.h"

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
  double *lsuf; /* with have_lam: from position i on, what the shapes earn above their price at lam */
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
    bound = fmin(bound, lb + K->lsuf[i]);
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
  K->lsuf[k] = 0;
  for (uint32_t j = k; j-- > 0;) {
    double net = K->val[j];
    for (uint32_t r = 0; r < p->nres; r++) net -= K->lam[r] * (double)K->req[j][r];
    K->lsuf[j] = K->lsuf[j + 1] + (net > 0 ? net * (double)K->lim[j] : 0);
  }
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
  K->lsuf = dt__malloc((n + 1) * sizeof *K->lsuf);
  return K->req && K->val && K->dens && K->lim && K->cur && K->best && K->shape && K->suf && K->tab && K->rv &&
                 K->rub && K->rx && K->rat && K->rcnt && K->lsuf
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
  dt__free(K->lsuf);
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
    if (!rc) rc = dt__pack_greedy_plans(g->p, g->pl, sub, ns, cands, g->by_price, g->nc, tail);
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


int dt__pack_colgen(const dt_plan *p, const rt_pool *pl, const shape *shapes, size_t ns, const cand *by_price,
                    uint32_t nc, cand *cands, packing *out, double *lp_obj) {
  knap K;
  size_t most = ns < CG_MAXS ? ns : CG_MAXS; /* shapes in one pattern LP */
  int64_t *got = dt__malloc(most * sizeof *got), *single = dt__malloc(most * sizeof *single);
  uint32_t *front = dt__malloc(nc * sizeof *front);
  int rc = knap_init(&K, most);
  if (!rc && (!got || !single || !front)) rc = DT_ENOMEM;
  long rounds_left = CG_BUDGET;
  cg_ctx g = {p, pl, shapes, ns, by_price, nc, front, 0, &K, got, single, &rounds_left};
  *lp_obj = 0;
  if (!rc) {
    g.nfront = undominated(p, pl, by_price, nc, front);
    rc = ns <= CG_MAXS ? colgen(&g, cands, out, lp_obj) : colgen_parts(&g, cands, out, lp_obj);
  }
  knap_close(&K);
  dt__free(got);
  dt__free(single);
  dt__free(front);
  return rc;
}
