/*
** lp.c: the simplex behind cost-aware packing.
**
**   minimise  sum_j c_j x_j   subject to  sum_j a_rj x_j >= d_r (each row r),  x >= 0
**
** Three LPs have this form: the covering LP (rows are resources, columns
** instance types), the pattern LP of column generation (rows are pod shapes,
** columns node patterns) and the dual of a knapsack's relaxation. Rows are
** few (at most 64) and columns many, so a revised simplex with an explicit
** m x m basis inverse is the right tool: each iteration prices every column
** once. Big-M artificials give the first basis, or a basis passed in (column
** generation adds columns to a solved LP, whose basis stays feasible).
** Callers need the duals y (what a unit of each row is worth at the optimum)
** and, for column generation, the primal x.
*/
#include "schedule.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#define LP_MAXM 64

/* B^-1 of the basis' columns by Gauss-Jordan with partial pivoting; false
** when singular. */
static bool invert(int m, double (*b)[LP_MAXM], double (*inv)[LP_MAXM]) {
  for (int r = 0; r < m; r++)
    for (int k = 0; k < m; k++) inv[r][k] = r == k;
  for (int col = 0; col < m; col++) {
    int piv = col;
    for (int r = col + 1; r < m; r++)
      if (fabs(b[r][col]) > fabs(b[piv][col])) piv = r;
    if (fabs(b[piv][col]) < 1e-12) return false;
    for (int k = 0; k < m; k++) {
      double t = b[col][k];
      b[col][k] = b[piv][k];
      b[piv][k] = t;
      t = inv[col][k];
      inv[col][k] = inv[piv][k];
      inv[piv][k] = t;
    }
    double f = b[col][col];
    for (int k = 0; k < m; k++) {
      b[col][k] /= f;
      inv[col][k] /= f;
    }
    for (int r = 0; r < m; r++) {
      if (r == col || b[r][col] == 0) continue;
      double g = b[r][col];
      for (int k = 0; k < m; k++) {
        b[r][k] -= g * b[col][k];
        inv[r][k] -= g * inv[col][k];
      }
    }
  }
  return true;
}

/* Solve; y[m] receives the duals, x[n] (when not NULL) the primal, *obj the
** optimum. basis (when not NULL) carries a starting basis in and the final
** one out, m entries: j < n a column, -1 - r row r's surplus, -1 - m - r its
** artificial; DT_LP_COLD in basis[0] asks for the usual start. Column
** generation passes the last basis back with more columns: it stays
** feasible, so the simplex starts where it stopped. Returns 0, or -1 when
** the LP is infeasible (some demanded row no column covers). */
int dt__lp_cover_warm(int m, int n, const double *a, const double *c, const double *d, double *y, double *x,
                      double *obj, int *warm) {
  if (m <= 0 || m > LP_MAXM) return -1;
  /* Columns: n structural, m surplus (-e_r, cost 0), m artificial (+e_r, cost M). */
  double bigm = 0;
  for (int j = 0; j < n; j++) bigm = fmax(bigm, c[j]);
  bigm = (bigm + 1) * 1e6;
  int basis[LP_MAXM];
  double binv[LP_MAXM][LP_MAXM], xb[LP_MAXM];
#define COLV(j, r) ((j) < n ? a[(size_t)(r) * n + (j)] : (j) < n + m ? ((j) - n == (r) ? -1.0 : 0.0) : ((j) - n - m == (r) ? 1.0 : 0.0))
#define COST(j) ((j) < n ? c[j] : (j) < n + m ? 0.0 : bigm)
  bool warm_ok = warm && warm[0] != DT_LP_COLD;
  for (int r = 0; r < m && warm_ok; r++) {
    int e = warm[r];
    basis[r] = e >= 0 ? e : -1 - e < m ? n + (-1 - e) : n + m + (-1 - e - m);
    warm_ok = (e >= 0 && e < n) || (e < 0 && -1 - e < 2 * m);
  }
  if (warm_ok) {
    double bm[LP_MAXM][LP_MAXM];
    for (int r = 0; r < m; r++)
      for (int k = 0; k < m; k++) bm[r][k] = COLV(basis[k], r);
    warm_ok = invert(m, bm, binv);
    for (int r = 0; r < m && warm_ok; r++) {
      xb[r] = 0;
      for (int k = 0; k < m; k++) xb[r] += binv[r][k] * (d[k] > 0 ? d[k] : 0);
      warm_ok = xb[r] >= -1e-9;
      if (xb[r] < 0) xb[r] = 0;
    }
  }
  if (!warm_ok) {
    memset(binv, 0, sizeof binv);
    for (int r = 0; r < m; r++) {
      basis[r] = n + m + r; /* artificial */
      binv[r][r] = 1;
      xb[r] = d[r] > 0 ? d[r] : 0;
    }
  }
  int stalled = 0;
  for (int iter = 0; iter < 50 * (n + m); iter++) {
    /* duals y = c_B B^-1 */
    for (int r = 0; r < m; r++) {
      y[r] = 0;
      for (int k = 0; k < m; k++) y[r] += COST(basis[k]) * binv[k][r];
    }
    /* entering column: most negative reduced cost (Dantzig); after a run
    ** of degenerate pivots, the first one (Bland), which cannot cycle */
    int enter = -1;
    double best = 0;
    bool bland = stalled > 2 * m;
    for (int j = 0; j < n + m; j++) {
      double rc = COST(j);
      for (int r = 0; r < m; r++) rc -= y[r] * COLV(j, r);
      if (rc < -1e-9 * (1 + fabs(COST(j))) && rc < best) {
        best = rc;
        enter = j;
        if (bland) break;
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
      if (u[r] > 1e-12) {
        double q = xb[r] / u[r];
        if (q < ratio - 1e-15 || (bland && q <= ratio + 1e-15 && leave >= 0 && basis[r] < basis[leave])) {
          ratio = q < ratio ? q : ratio;
          leave = r;
        }
      }
    if (leave < 0) return -1; /* unbounded: cannot happen with non-negative costs */
    stalled = ratio <= 1e-12 ? stalled + 1 : 0;
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
  if (warm)
    for (int r = 0; r < m; r++)
      warm[r] = basis[r] < n ? basis[r] : basis[r] < n + m ? -1 - (basis[r] - n) : -1 - m - (basis[r] - n - m);
  *obj = z;
  return 0;
}

int dt__lp_cover(int m, int n, const double *a, const double *c, const double *d, double *y, double *x,
                 double *obj) {
  return dt__lp_cover_warm(m, n, a, c, d, y, x, obj, NULL);
}
