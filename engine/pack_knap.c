/*
** pack_knap.c: the cost packer's knapsack (pack_cg.c prices the pattern
** LP with it): the most valuable pods one node holds, by a bounded
** depth-first search, and for a node too large to search, its LP
** relaxation rounded, whose resource prices then bound the search.
*/
#include "pack_int.h"

/* One node of the search: the shapes from position i on, value what those
** before it earn. The caller has counted the node against the budget and
** recorded value as an answer; each child is checked the same way here
** before the call, so that a leaf or a node past the budget costs no call.
** The body is inlined with na a constant for the common resource counts,
** so that the loops over resources unroll. No bound can be NaN. */
typedef void expand_fn(knap *K, uint32_t i, double value);

static inline __attribute__((always_inline)) void expand_body(knap *K, uint32_t i, double value, const uint32_t na,
                                                              expand_fn *self) {
  int64_t *room = K->room; /* cap less what the node holds */
  /* Bound: no resource can earn more than its best value per unit, nor
  ** (with have_lam) more than the Lagrangian bound at the LP's resource
  ** prices. value + the least of the bounds is below the best iff value +
  ** one of them is (rounding is monotone), so each is tested as it comes. */
  const double thr = K->bestv * (1 + 1e-12);
  const double *suf = &K->suf[(size_t)i * na];
  for (uint32_t q = 0; q < na; q++) /* an infinite suf[q] never cuts: room is never below 0 */
    if (value + (double)room[q] * suf[q] <= thr) return;
  if (K->have_lam) {
    double lb = 0;
    for (uint32_t q = 0; q < na; q++) lb += K->lamc[q] * (double)room[q];
    if (value + (lb + K->lsuf[i]) <= thr) return;
  }
  const int64_t *req = &K->rq[(size_t)i * na];
  int64_t c = K->lim[i]; /* how many fit (fit_count) */
  for (uint32_t q = 0; q < na && c > 0; q++)
    if (req[q] > 0) {
      int64_t f = room[q] > 0 ? room[q] / req[q] : 0;
      if (f < c) c = f;
    }
  for (uint32_t q = 0; q < na; q++) room[q] -= c * req[q];
  const double val = K->val[i];
  if (i + 1 == K->k) {
    /* The last shape: fewer copies are worth less (every value is above
    ** zero) and are no nodes of the budget, so the most is the only answer
    ** this node can give. */
    double v = value + (double)c * val;
    if (v > K->bestv) {
      K->cur[i] = c;
      K->bestv = v;
      memcpy(K->best, K->cur, K->k * sizeof *K->cur);
      K->cur[i] = 0;
    }
    for (uint32_t q = 0; q < na; q++) room[q] += c * req[q];
    return;
  }
  for (;;) {
    K->cur[i] = c;
    double v = value + (double)c * val;
    if (v > K->bestv) {
      K->bestv = v;
      memcpy(K->best, K->cur, K->k * sizeof *K->cur);
    }
    if (K->budget-- > 0) self(K, i + 1, v);
    if (c == 0 || K->budget <= 0) break;
    c--;
    for (uint32_t q = 0; q < na; q++) room[q] += req[q];
  }
  for (uint32_t q = 0; q < na; q++) room[q] += c * req[q];
  K->cur[i] = 0;
}

static void expand_1(knap *K, uint32_t i, double value) { expand_body(K, i, value, 1, expand_1); }
static void expand_2(knap *K, uint32_t i, double value) { expand_body(K, i, value, 2, expand_2); }
static void expand_3(knap *K, uint32_t i, double value) { expand_body(K, i, value, 3, expand_3); }
static void expand_4(knap *K, uint32_t i, double value) { expand_body(K, i, value, 4, expand_4); }
static void expand_n(knap *K, uint32_t i, double value) { expand_body(K, i, value, K->na, expand_n); }

/* The bounded depth-first search from the empty node. */
static void knap_dfs(knap *K) {
  if (K->k == 0 || K->budget-- <= 0) return; /* the root counts as a node */
  expand_fn *f = K->na == 1   ? expand_1
                 : K->na == 2 ? expand_2
                 : K->na == 3 ? expand_3
                 : K->na == 4 ? expand_4
                              : expand_n;
  f(K, 0, 0);
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
  if (!dt__knap_relax(nr, k, T, v, ub, x, lam, basis, K->rat, b)) return;
  memset(K->lam, 0, sizeof K->lam);
  for (uint32_t q = 0; q < nr; q++) K->lam[res[q]] = fmax(lam[q], 0) * top / (double)K->cap[res[q]];
  K->have_lam = true;
  for (uint32_t q = 0; q < K->na; q++) K->lamc[q] = K->lam[K->res[q]];
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
  for (uint32_t i = 0; i < k; i++) {     /* top up, densest first */
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
double dt__knapsack(knap *Kp, const dt_plan *p, const shape *sh, size_t ns, const double *pi, const int64_t *lim,
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
      if (sh[s].req[r] > 0) {
        double f = cap[r] > 0 ? (double)sh[s].req[r] / (double)cap[r] : INFINITY;
        if (f > size) size = f;
      }
    if (!isfinite(size)) continue; /* does not fit at all */
    /* Insertion, densest first, ties by shape: after every entry at least
    ** as dense (a binary search; no density is NaN). */
    double d = pi[s] / size;
    uint32_t lo = 0, hi = K.k;
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (dens[mid] < d)
        hi = mid;
      else
        lo = mid + 1;
    }
    memmove(&dens[lo + 1], &dens[lo], (K.k - lo) * sizeof *dens);
    memmove(&K.shape[lo + 1], &K.shape[lo], (K.k - lo) * sizeof *K.shape);
    dens[lo] = d;
    K.shape[lo] = (uint32_t)s;
    K.k++;
  }
  for (uint32_t i = 0; i < K.k; i++) {
    K.req[i] = sh[K.shape[i]].req;
    K.val[i] = pi[K.shape[i]];
    K.lim[i] = lim[K.shape[i]];
  }
  K.na = 0;
  for (uint32_t r = 0; r < p->nres; r++) {
    bool asked = false;
    for (uint32_t i = 0; i < K.k && !asked; i++) asked = K.req[i][r] > 0;
    if (asked) K.capc[K.na] = cap[r], K.res[K.na++] = r;
  }
  uint32_t na = K.na;
  for (uint32_t q = 0; q < na; q++) {
    uint32_t r = K.res[q];
    K.suf[(size_t)K.k * na + q] = 0;
    for (uint32_t i = K.k; i-- > 0;) {
      double v = K.req[i][r] > 0 ? K.val[i] / (double)K.req[i][r] : INFINITY, after = K.suf[(size_t)(i + 1) * na + q];
      K.suf[(size_t)i * na + q] = v > after ? v : after;
    }
  }
  for (uint32_t i = 0; i < K.k; i++)
    for (uint32_t q = 0; q < na; q++) K.rq[(size_t)i * na + q] = K.req[i][K.res[q]];
  memcpy(K.room, K.capc, sizeof K.room);
  memset(K.cur, 0, ns * sizeof *K.cur);
  memset(K.best, 0, ns * sizeof *K.best);
  K.bestv = 0;
  K.budget = K.budget0;
  K.have_lam = false;
  knap_dfs(&K);
  if (K.budget < 0) {
    /* Cut short: round the LP relaxation, then search again with its bound. */
    knap_lp(&K);
    if (K.have_lam) {
      K.budget = K.budget_lp;
      memcpy(K.room, K.capc, sizeof K.room);
      memset(K.cur, 0, ns * sizeof *K.cur);
      knap_dfs(&K);
    }
  }
  memset(out, 0, ns * sizeof *out);
  for (uint32_t i = 0; i < K.k; i++) out[K.shape[i]] = K.best[i];
  return K.bestv;
}

/* The knapsack's arrays for ns shapes, carved from one allocation: the
** 8-byte elements first, then the pointers, then the smaller ones. */
#define KNAP_ARRAYS(X)                                                                                                 \
  X(val, n)                                                                                                            \
  X(dens, n)                                                                                                           \
  X(lim, n)                                                                                                            \
  X(cur, n)                                                                                                            \
  X(best, n)                                                                                                           \
  X(suf, (n + 1) * DT_RES_MAX)                                                                                         \
  X(rq, n *DT_RES_MAX)                                                                                                 \
  X(tab, (n + DT_RES_MAX) * DT_RES_MAX)                                                                                \
  X(rv, n) X(rub, n) X(rx, n) X(rcnt, n) X(lsuf, n + 1) X(req, n) X(shape, n) X(rat, n)
int dt__knap_init(knap *K, size_t ns) {
  memset(K, 0, sizeof *K);
  size_t n = ns ? ns : 1, size = 0;
#define KNAP_SIZE(f, cnt) size += (cnt) * sizeof *K->f;
  KNAP_ARRAYS(KNAP_SIZE)
  char *b = dt__malloc(size);
  if (!b) return DT_ENOMEM;
#define KNAP_CARVE(f, cnt) K->f = (void *)b, b += (cnt) * sizeof *K->f;
  KNAP_ARRAYS(KNAP_CARVE)
  return 0;
}

void dt__knap_close(knap *K) {
  dt__free(K->val); /* the allocation's start */
  memset(K, 0, sizeof *K);
}
