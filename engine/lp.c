/*
** lp.c: the covering LP behind cost-aware packing.
**
**   minimise  sum_t c_t x_t   subject to  sum_t a_rt x_t >= d_r (each resource r),  x >= 0
**
** m (resources) is tiny and n (instance types) is a few thousand, so a
** revised simplex with an explicit m x m basis inverse is the right tool: each
** iteration prices every column once. Big-M artificials give the first basis.
** The packer needs the dual prices y (what a unit of each resource is worth
** at the optimum) to value a node's contents, and, for column generation over
** node patterns, the primal x (how many nodes of each pattern).
*/
#include "internal.h"

#include <math.h>
#include <string.h>

#define LP_MAXM 64

/* Solve; y[m] receives the duals, x[n] (when not NULL) the primal, *obj the
** optimum. Returns 0, or -1 when the LP is infeasible (some demanded row no
** column covers). */
int dt__lp_cover(int m, int n, const double *a /* m x n, row-major */, const double *c, const double *d,
                 double *y, double *x, double *obj) {
  if (m <= 0 || m > LP_MAXM) return -1;
  /* Columns: n structural, m surplus (-e_r, cost 0), m artificial (+e_r, cost M). */
  double bigm = 0;
  for (int j = 0; j < n; j++) bigm = fmax(bigm, c[j]);
  bigm = (bigm + 1) * 1e6;
  int basis[LP_MAXM];
  double binv[LP_MAXM][LP_MAXM], xb[LP_MAXM];
  memset(binv, 0, sizeof binv);
  for (int r = 0; r < m; r++) {
    basis[r] = n + m + r; /* artificial */
    binv[r][r] = 1;
    xb[r] = d[r] > 0 ? d[r] : 0;
  }
#define COLV(j, r) ((j) < n ? a[(size_t)(r) * n + (j)] : (j) < n + m ? ((j) - n == (r) ? -1.0 : 0.0) : ((j) - n - m == (r) ? 1.0 : 0.0))
#define COST(j) ((j) < n ? c[j] : (j) < n + m ? 0.0 : bigm)
  for (int iter = 0; iter < 50 * (n + m); iter++) {
    /* duals y = c_B B^-1 */
    for (int r = 0; r < m; r++) {
      y[r] = 0;
      for (int k = 0; k < m; k++) y[r] += COST(basis[k]) * binv[k][r];
    }
    /* entering column: most negative reduced cost (Dantzig) */
    int enter = -1;
    double best = -1e-12;
    for (int j = 0; j < n + m; j++) {
      double rc = COST(j);
      for (int r = 0; r < m; r++) rc -= y[r] * COLV(j, r);
      if (rc < best * (1 + 1e-12)) {
        best = rc;
        enter = j;
      }
    }
    if (enter < 0) break;
    /* direction u = B^-1 a_enter */
    double u[LP_MAXM];
    for (int r = 0; r < m; r++) {
      u[r] = 0;
      for (int k = 0; k < m; k++) u[r] += binv[r][k] * COLV(enter, k);
    }
    int leave = -1;
    double ratio = INFINITY;
    for (int r = 0; r < m; r++)
      if (u[r] > 1e-12 && xb[r] / u[r] < ratio) {
        ratio = xb[r] / u[r];
        leave = r;
      }
    if (leave < 0) return -1; /* unbounded: cannot happen with non-negative costs */
    /* pivot */
    double piv = u[leave];
    for (int k = 0; k < m; k++) binv[leave][k] /= piv;
    xb[leave] /= piv;
    for (int r = 0; r < m; r++) {
      if (r == leave || u[r] == 0) continue;
      double f = u[r];
      for (int k = 0; k < m; k++) binv[r][k] -= f * binv[leave][k];
      xb[r] -= f * xb[leave];
    }
    basis[leave] = enter;
  }
  double z = 0;
  if (x)
    for (int j = 0; j < n; j++) x[j] = 0;
  for (int r = 0; r < m; r++) {
    if (basis[r] >= n + m && xb[r] > 1e-9) return -1; /* an artificial stayed: infeasible */
    z += COST(basis[r]) * xb[r];
    if (x && basis[r] < n) x[basis[r]] = xb[r];
  }
#undef COLV
#undef COST
  *obj = z;
  return 0;
}
