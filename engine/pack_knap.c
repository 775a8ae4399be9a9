/*
** pack_knap.c: the cost packer's knapsack (pack_cg.c prices the pattern
** LP with it): the most valuable pods one node holds, by a bounded
** depth-first search, and for a node too large to search, its LP
** relaxation rounded, whose resource prices then bound the search.
*/
#include "pack_int.h"

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
  K.budget = K.budget0;
  K.have_lam = false;
  knap_dfs(&K, 0, 0);
  if (K.budget < 0) {
    /* Cut short: round the LP relaxation, then search again with its bound. */
    knap_lp(&K);
    if (K.have_lam) {
      K.budget = K.budget_lp;
      memset(K.used, 0, sizeof K.used);
      memset(K.cur, 0, ns * sizeof *K.cur);
      knap_dfs(&K, 0, 0);
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
  X(lim, n) X(cur, n) X(best, n) X(suf, n + 1) X(tab, (n + DT_RES_MAX) * DT_RES_MAX) X(rv, n) X(rub, n) X(rx, n)       \
      X(rcnt, n) X(lsuf, n + 1) X(req, n) X(shape, n) X(rat, n)
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
