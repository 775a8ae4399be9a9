/*
** lp.c: the simplex behind cost-aware packing.
**
**   minimise  sum_j c_j x_j   subject to  sum_j a_rj x_j >= d_r (each row r),  x >= 0
**
** Two LPs have this form: the covering LP (rows are resources, columns
** instance types) and the pattern LP of column generation (rows are pod
** shapes, columns node patterns; a knapsack's relaxation has its own simplex
** below, dt__knap_relax). Columns outnumber rows, and a pattern holds few of the shapes,
** so columns are sparse (compressed by column) and a revised simplex keeps an
** explicit m x m basis inverse: an iteration prices every column through its
** non-zeros and updates the inverse in O(m^2). The inverse is computed afresh
** from the basis every max(LP_REFRESH, m) pivots (O(m^3), so O(m^2) a pivot
** on average), and rounding error cannot build up over the hundreds of
** pivots an LP of many shapes takes. The entering column has the most
** negative reduced cost per unit of its length (entering). Once a run of
** degenerate pivots starts, Bland's rule chooses until a pivot moves, at
** most LP_RETURNS times a solve and then for the rest of it: switching back
** without end can cycle. Bland's rule cannot cycle in exact arithmetic, but
** it can crawl: on a pattern LP whose optimum is one node holding one pod of
** each of 64 shapes (every other basic value 0) it took 30,000-40,000
** pivots an LP, and rounding solves dozens of them (seconds for 64 pods). So
** once a degenerate run is LP_LEX pivots a row longer, rows leave by the
** lexicographic rule for the rest of the solve (leaving_lex), the entering
** column chosen as before. A solution that does not cover the rows
** or has absurd values (a pivot on a tiny element of a nearly singular
** basis) is solved again from the artificials, then once more pivoting
** only on elements above 1e-9. Big-M
** artificials give the first basis, or a basis passed in: column generation
** adds columns to a solved LP, whose basis stays feasible, and its rounding
** solves the LP again for smaller demands from a basis of the last one's
** columns, which the dual simplex (dual_phase) makes feasible. Callers need the
** duals y (what a unit of each row is worth at the optimum) and, for column
** generation, the primal x.
*/
#include "pack_int.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#define LP_REFRESH 64 /* pivots between fresh inverses */
#define LP_RETURNS 16 /* times a solve may go back from Bland's rule to the scaled largest reduced cost */
#define LP_LEX     4  /* pivots a row of Bland's rule in one degenerate run before the lexicographic rule */

static _Thread_local long lp_pivots;          /* this thread's, for dt__lp_pivots */
static _Thread_local long lp_stop = LONG_MAX; /* no pivot at or past this count (dt__lp_stop_at) */

long dt__lp_pivots(void) { return lp_pivots; }

bool dt__lp_spent(void) { return lp_pivots >= lp_stop; }

long dt__lp_stop_at(long at) {
  long old = lp_stop;
  lp_stop = at;
  return old;
}

/* a[k] += f * b[k] for k < n, two at a time (the same numbers as one at a
** time: each element's arithmetic is unchanged; a[k] + (-f) * b[k] is
** a[k] - f * b[k] exactly), or four at a time where the processor has AVX:
** the same multiply and add per element (no fused multiply-add: the target
** is AVX alone, and C11 mode does not contract), in half the instructions.
** The pattern LP of many shapes spends a third of its time here. */
typedef double v2d __attribute__((vector_size(16), aligned(8)));
static void axpy2(double *a, const double *b, double f, int n) {
  int k = 0;
  v2d fv = {f, f};
  for (; k + 2 <= n; k += 2) {
    v2d x, z;
    memcpy(&x, a + k, sizeof x);
    memcpy(&z, b + k, sizeof z);
    x += fv * z;
    memcpy(a + k, &x, sizeof x);
  }
  for (; k < n; k++) a[k] += f * b[k];
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
__attribute__((target("avx"))) static void axpy4(double *a, const double *b, double f, int n) {
  int k = 0;
  __m256d fv = _mm256_set1_pd(f);
  for (; k + 8 <= n; k += 8) {
    __m256d x = _mm256_add_pd(_mm256_loadu_pd(a + k), _mm256_mul_pd(fv, _mm256_loadu_pd(b + k)));
    __m256d x2 = _mm256_add_pd(_mm256_loadu_pd(a + k + 4), _mm256_mul_pd(fv, _mm256_loadu_pd(b + k + 4)));
    _mm256_storeu_pd(a + k, x);
    _mm256_storeu_pd(a + k + 4, x2);
  }
  _mm256_zeroupper(); /* the rest of the program is SSE: no transition penalty */
  for (; k < n; k++) a[k] += f * b[k];
}

static void axpy(double *a, const double *b, double f, int n) {
  if (n >= 8 && __builtin_cpu_supports("avx"))
    axpy4(a, b, f, n);
  else
    axpy2(a, b, f, n);
}
#else
#define axpy axpy2
#endif

/* The LP being solved: columns 0..n-1 structural (sparse), n..n+m-1 the rows'
** surplus (-e_r, cost 0), n+m..n+2m-1 their artificials (+e_r, cost bigm). */
typedef struct lp {
  int m, n;
  const int *start, *row;
  const double *val, *c;
  double bigm;
  const double *shift; /* NULL, or added to the costs of the first n + m columns (dual_phase) */
  const double *wt;    /* NULL, or per structural column 1 / sqrt(1 + |a_j|^2): the entering rule's scale */
} lp;

static double cost_of(const lp *L, int j) {
  double c = j < L->n ? L->c[j] : j < L->n + L->m ? 0.0 : L->bigm;
  return L->shift && j < L->n + L->m ? c + L->shift[j] : c;
}

/* Column j as a dense vector into v[m]. */
static void column(const lp *L, int j, double *v) {
  memset(v, 0, (size_t)L->m * sizeof *v);
  if (j < L->n)
    for (int k = L->start[j]; k < L->start[j + 1]; k++) v[L->row[k]] += L->val[k];
  else if (j < L->n + L->m)
    v[j - L->n] = -1;
  else
    v[j - L->n - L->m] = 1;
}

/* inv = B^-1 for the basis' columns by Gauss-Jordan with partial pivoting;
** b is m x m scratch. False when singular. */
static bool invert(const lp *L, const int *basis, double *b, double *inv, double *col) {
  int m = L->m;
  for (int k = 0; k < m; k++) {
    column(L, basis[k], col);
    for (int r = 0; r < m; r++) b[(size_t)r * m + k] = col[r];
  }
  for (int r = 0; r < m; r++)
    for (int k = 0; k < m; k++) inv[(size_t)r * m + k] = r == k;
  for (int cc = 0; cc < m; cc++) {
    int piv = cc;
    for (int r = cc + 1; r < m; r++)
      if (fabs(b[(size_t)r * m + cc]) > fabs(b[(size_t)piv * m + cc])) piv = r;
    if (fabs(b[(size_t)piv * m + cc]) < 1e-12) return false;
    if (piv != cc)
      for (int k = 0; k < m; k++) {
        double t = b[(size_t)cc * m + k];
        b[(size_t)cc * m + k] = b[(size_t)piv * m + k];
        b[(size_t)piv * m + k] = t;
        t = inv[(size_t)cc * m + k];
        inv[(size_t)cc * m + k] = inv[(size_t)piv * m + k];
        inv[(size_t)piv * m + k] = t;
      }
    double f = b[(size_t)cc * m + cc];
    for (int k = 0; k < m; k++) {
      b[(size_t)cc * m + k] /= f;
      inv[(size_t)cc * m + k] /= f;
    }
    for (int r = 0; r < m; r++) {
      double g = b[(size_t)r * m + cc];
      if (r == cc || g == 0) continue;
      axpy(&b[(size_t)r * m], &b[(size_t)cc * m], -g, m);
      axpy(&inv[(size_t)r * m], &inv[(size_t)cc * m], -g, m);
    }
  }
  return true;
}

/* xb = B^-1 d (demands below 0 count as 0). */
static void basic_values(int m, const double *inv, const double *d, double *xb) {
  for (int r = 0; r < m; r++) {
    xb[r] = 0;
    for (int k = 0; k < m; k++) xb[r] += inv[(size_t)r * m + k] * (d[k] > 0 ? d[k] : 0);
  }
}

/* Column j's reduced cost at duals y: c_j - y a_j. */
static double reduced_cost(const lp *L, const double *y, int j) {
  double rc = cost_of(L, j);
  if (j < L->n)
    for (int k = L->start[j]; k < L->start[j + 1]; k++) rc -= y[L->row[k]] * L->val[k];
  else
    rc += y[j - L->n];
  return rc;
}

/* The entering column: the most negative reduced cost at duals y, each
** scaled by its column's length when L->wt is given (a static stand-in for
** steepest edge: a pattern LP's columns range from a few pods of a shape in
** demand by thousands to all of a shape's few, and the unscaled rule favours
** the long ones, taking hundreds of small steps more); with bland, the first
** one (Bland's rule, which cannot cycle). -1 when none is negative: the
** basis is optimal. The structural columns are priced four at a time, each
** summed in its own order as alone (the same numbers), so that the four
** sums overlap instead of waiting on one another. A negative reduced cost's
** scaled value is never below it (scales are at most 1), so four that are
** none of them below the best need no scaling. */
static int entering(const lp *L, const double *y, bool bland) {
  int enter = -1, n = L->n;
  double best = 0, rcs[4];
  const int *row = L->row, *start = L->start;
  const double *val = L->val;
  for (int j0 = 0; j0 < n + L->m; j0 += 4) {
    int w = j0 + 4 <= n ? 4 : 1;
    if (w == 4) {
      double r0 = L->c[j0], r1 = L->c[j0 + 1], r2 = L->c[j0 + 2], r3 = L->c[j0 + 3];
      int k0 = start[j0], e0 = start[j0 + 1], k1 = e0, e1 = start[j0 + 2], k2 = e1, e2 = start[j0 + 3], k3 = e2,
          e3 = start[j0 + 4];
      int len = e0 - k0; /* the four together while all have non-zeros left */
      if (e1 - k1 < len) len = e1 - k1;
      if (e2 - k2 < len) len = e2 - k2;
      if (e3 - k3 < len) len = e3 - k3;
      for (int t = 0; t < len; t++) {
        r0 -= y[row[k0 + t]] * val[k0 + t];
        r1 -= y[row[k1 + t]] * val[k1 + t];
        r2 -= y[row[k2 + t]] * val[k2 + t];
        r3 -= y[row[k3 + t]] * val[k3 + t];
      }
      k0 += len, k1 += len, k2 += len, k3 += len;
      for (; k0 < e0; k0++) r0 -= y[row[k0]] * val[k0];
      for (; k1 < e1; k1++) r1 -= y[row[k1]] * val[k1];
      for (; k2 < e2; k2++) r2 -= y[row[k2]] * val[k2];
      for (; k3 < e3; k3++) r3 -= y[row[k3]] * val[k3];
      rcs[0] = r0, rcs[1] = r1, rcs[2] = r2, rcs[3] = r3;
      if (!(r0 < best || r1 < best || r2 < best || r3 < best)) continue; /* none of the four can enter */
    } else {
      rcs[0] = reduced_cost(L, y, j0);
      j0 -= 3; /* one column this time */
    }
    for (int q = 0; q < w; q++) {
      int j = w == 4 ? j0 + q : j0 + 3;
      double rc_ = rcs[q], sc = !L->wt ? rc_ : j < n ? rc_ * L->wt[j] : rc_ * 0.7071067811865476;
      if (sc < best && rc_ < -1e-9 * (1 + fabs(cost_of(L, j)))) {
        best = sc;
        enter = j;
        if (bland) return enter;
      }
    }
  }
  return enter;
}

/* The direction u = B^-1 a_enter of a structural or surplus column. */
static void direction(const lp *L, const double *binv, int enter, double *u) {
  int m = L->m, n = L->n;
  memset(u, 0, (size_t)m * sizeof *u);
  if (enter < n) {
    for (int k = L->start[enter]; k < L->start[enter + 1]; k++)
      for (int r = 0; r < m; r++) u[r] += binv[(size_t)r * m + L->row[k]] * L->val[k];
  } else {
    for (int r = 0; r < m; r++) u[r] = -binv[(size_t)r * m + (enter - n)];
  }
}

/* Of the rows tied at the least ratio (basic values within 1e-11 of 0 are
** 0), the one whose row of B^-1 divided by its element of u is
** lexicographically least: the simplex then moves as on demands raised by
** e, e^2, ... (e tiny), where no basic value is 0, and cannot cycle. */
static int leaving_lex(int m, const double *binv, const double *xb, const double *u, double ptol, double *ratio) {
  int leave = -1;
  double least = INFINITY;
  for (int r = 0; r < m; r++)
    if (u[r] > ptol) {
      double q = xb[r] <= 1e-11 ? 0 : xb[r] / u[r];
      if (q < least) least = q;
    }
  for (int r = 0; r < m; r++) {
    if (!(u[r] > ptol)) continue;
    double q = xb[r] <= 1e-11 ? 0 : xb[r] / u[r];
    if (q > least + 1e-12 * (1 + least)) continue;
    if (leave < 0) {
      leave = r;
      continue;
    }
    const double *a = &binv[(size_t)r * m], *b = &binv[(size_t)leave * m];
    for (int k = 0; k < m; k++) {
      double x = a[k] / u[r], z = b[k] / u[leave];
      if (fabs(x - z) <= 1e-11 * (1 + fabs(x) + fabs(z))) continue;
      if (x < z) leave = r;
      break;
    }
  }
  *ratio = least;
  return leave;
}

/* The direction u (direction) and the row that leaves by the ratio test
** (pivots on elements above ptol only; with bland, ties to the lowest
** basic column; with lex, leaving_lex); *ratio the step. -1 when none:
** unbounded. */
static int leaving(const lp *L, const double *binv, const int *basis, const double *xb, int enter, bool bland, bool lex,
                   double ptol, double *u, double *ratio) {
  int m = L->m, leave = -1;
  direction(L, binv, enter, u);
  if (lex) return leaving_lex(m, binv, xb, u, ptol, ratio);
  *ratio = INFINITY;
  for (int r = 0; r < m; r++)
    if (u[r] > ptol) {
      double q = xb[r] / u[r];
      if (q < *ratio - 1e-15 || (bland && q <= *ratio + 1e-15 && leave >= 0 && basis[r] < basis[leave])) {
        *ratio = q < *ratio ? q : *ratio;
        leave = r;
      }
    }
  return leave;
}

/* y = c_B B^-1 */
static void duals(const lp *L, const int *basis, const double *binv, double *cb, double *y) {
  int m = L->m;
  for (int k = 0; k < m; k++) cb[k] = cost_of(L, basis[k]);
  for (int r = 0; r < m; r++) y[r] = 0;
  for (int k = 0; k < m; k++)
    if (cb[k] != 0) axpy(y, &binv[(size_t)k * m], cb[k], m);
}

/* The pivot on row leave of direction u: the inverse and the basic values
** updated in place. */
static void pivot(int m, double *binv, double *xb, const double *u, int leave) {
  double piv = u[leave];
  double *lr = &binv[(size_t)leave * m];
  for (int k = 0; k < m; k++) lr[k] /= piv;
  xb[leave] /= piv;
  for (int r = 0; r < m; r++) {
    if (r == leave || u[r] == 0) continue;
    axpy(&binv[(size_t)r * m], lr, -u[r], m);
    xb[r] -= u[r] * xb[leave];
  }
}

/*
** The dual simplex from a basis made for other demands (column generation's
** rounding solves the LP again for what is left, from the basis the last
** solve ended on): the costs of the columns with a reduced cost below zero
** are first raised to make it zero, so the basis is dual feasible, then the
** most negative basic value leaves and the dual ratio test picks the
** entering column (a pattern or a surplus, never an artificial). Ends
** primal feasible, and the primal simplex, at the true costs, finishes;
** false when it cannot (no column to enter, its pivots spent), and the
** caller starts from the artificials.
*/
static bool dual_phase(const lp *L0, int *basis, double *binv, double *xb, const double *d, double *y, double *cb,
                       double *u, uint8_t *isbasic, double *scratch, double *fresh, double *col) {
  int m = L0->m, n = L0->n;
  size_t mm = (size_t)m * (size_t)m;
  memset(isbasic, 0, (size_t)(n + 2 * m));
  for (int r = 0; r < m; r++) isbasic[basis[r]] = 1;
  /* Costs shifted up so that no reduced cost is below zero at the start:
  ** the basis is then dual feasible for them. */
  double *shift = dt__calloc((size_t)(n + m), sizeof *shift);
  if (!shift) return false;
  lp L1 = *L0, *L = &L1;
  bool ok = false;
  duals(L, basis, binv, cb, y);
  for (int j = 0; j < n + m; j++) {
    if (isbasic[j]) continue;
    double dj = reduced_cost(L, y, j);
    if (dj < 0) shift[j] = -dj;
  }
  L1.shift = shift;
  for (int iter = 0, since = 0; iter < 4 * m + 50 && lp_pivots < lp_stop; iter++, since++) {
    if (since >= LP_REFRESH && since >= m) {
      if (invert(L, basis, scratch, fresh, col)) {
        memcpy(binv, fresh, mm * sizeof *binv);
        basic_values(m, binv, d, xb);
      }
      since = 0;
    }
    int leave = -1;
    double worst = 0;
    for (int r = 0; r < m; r++)
      if (xb[r] < -1e-9 * (1 + fabs(d[r])) && xb[r] < worst) worst = xb[r], leave = r;
    if (leave < 0) {
      ok = true;
      break;
    }
    duals(L, basis, binv, cb, y);
    const double *rho = &binv[(size_t)leave * m];
    int enter = -1;
    double best = INFINITY, balpha = 0;
    for (int j = 0; j < n + m; j++) {
      if (isbasic[j]) continue;
      double dj = cost_of(L, j), alpha = 0;
      if (j < n)
        for (int k = L->start[j]; k < L->start[j + 1]; k++) {
          dj -= y[L->row[k]] * L->val[k];
          alpha += rho[L->row[k]] * L->val[k];
        }
      else
        dj += y[j - n], alpha = -rho[j - n];
      if (alpha >= -1e-9) continue;
      double q = (dj > 0 ? dj : 0) / -alpha;
      if (q < best - 1e-12 || (q <= best + 1e-12 && -alpha > balpha)) best = q, enter = j, balpha = -alpha;
    }
    if (enter < 0) break;
    direction(L, binv, enter, u);
    if (!(u[leave] < -1e-12)) break;
    pivot(m, binv, xb, u, leave);
    lp_pivots++;
    isbasic[basis[leave]] = 0;
    isbasic[enter] = 1;
    basis[leave] = enter;
  }
  dt__free(shift);
  return ok;
}

static int solve(int m, int n, const int *start, const int *row, const double *val, const double *c, const double *d,
                 double *y, double *x, double *obj, int *warm, double *inv, double ptol) {
  lp L = {m, n, start, row, val, c, 0, NULL, NULL};
  for (int j = 0; j < n; j++) L.bigm = fmax(L.bigm, c[j]);
  L.bigm = (L.bigm + 1) * 1e6;
  size_t mm = (size_t)m * (size_t)m;
  double *binv = inv ? inv : dt__malloc(mm * sizeof *binv), *scratch = dt__malloc(mm * sizeof *scratch),
         *fresh = dt__malloc(mm * sizeof *fresh), *xb = dt__malloc((size_t)m * sizeof *xb),
         *u = dt__malloc((size_t)m * sizeof *u), *col = dt__malloc((size_t)m * sizeof *col),
         *cb = dt__malloc((size_t)m * sizeof *cb);
  int *basis = dt__malloc((size_t)m * sizeof *basis);
  uint8_t *isbasic = dt__malloc((size_t)n + 2 * (size_t)m);
  double *wt = dt__malloc(((size_t)n + 1) * sizeof *wt);
  int rc = 0;
  if (!binv || !scratch || !fresh || !xb || !u || !col || !cb || !basis || !isbasic || !wt) {
    rc = DT_ENOMEM;
    goto out;
  }
  for (int j = 0; j < n; j++) {
    double q = 1;
    for (int k = start[j]; k < start[j + 1]; k++) q += val[k] * val[k];
    wt[j] = 1 / sqrt(q);
  }
  L.wt = wt;
  bool warm_ok = warm && warm[0] != DT_LP_COLD;
  for (int r = 0; r < m && warm_ok; r++) {
    int e = warm[r];
    warm_ok = (e >= 0 && e < n) || (e < 0 && -1 - e < 2 * m);
    basis[r] = e >= 0 ? e : -1 - e < m ? n + (-1 - e) : n + m + (-1 - e - m);
  }
  /* The caller's inverse, when it has one for this basis (inv[0] not NaN),
  ** saves inverting it again. */
  if (warm_ok && !(inv && !isnan(inv[0])) && !invert(&L, basis, scratch, binv, col)) warm_ok = false;
  if (warm_ok) { /* a basis that does not cover the demands: the dual simplex from it */
    basic_values(m, binv, d, xb);
    bool primal = true;
    for (int r = 0; r < m && primal; r++) primal = xb[r] >= -1e-7 * (1 + fabs(d[r]));
    if (!primal) warm_ok = dual_phase(&L, basis, binv, xb, d, y, cb, u, isbasic, scratch, fresh, col);
    for (int r = 0; r < m; r++)
      if (xb[r] < 0) xb[r] = 0;
  }
  if (!warm_ok) {
    memset(binv, 0, mm * sizeof *binv);
    for (int r = 0; r < m; r++) {
      basis[r] = n + m + r; /* artificial */
      binv[(size_t)r * m + r] = 1;
      xb[r] = d[r] > 0 ? d[r] : 0;
    }
  }
  int stalled = 0, since = 0, returns = 0;
  bool bland = false, lex = false;
  long limit = 50L * (n + m) + 1000;
  for (long iter = 0; iter < limit && lp_pivots < lp_stop; iter++) {
    if (since >= LP_REFRESH && since >= m) { /* a fresh inverse; keep the old one if this one fails */
      if (invert(&L, basis, scratch, fresh, col)) {
        memcpy(binv, fresh, mm * sizeof *binv);
        basic_values(m, binv, d, xb);
        for (int r = 0; r < m; r++)
          if (xb[r] < 0) xb[r] = 0;
      }
      since = 0;
    }
    /* duals y = c_B B^-1 */
    duals(&L, basis, binv, cb, y);
    bland = bland || stalled > 2 * m;
    lex = lex || (bland && stalled > LP_LEX * m + 2 * m);
    int enter = entering(&L, y, bland && !lex);
    if (enter < 0) break;
    double ratio;
    int leave = leaving(&L, binv, basis, xb, enter, bland, lex, ptol, u, &ratio);
    if (leave < 0) { /* unbounded: cannot happen with non-negative costs */
      rc = -1;
      goto out;
    }
    stalled = ratio <= 1e-12 ? stalled + 1 : 0;
    /* A step that moved ends the degenerate run: back to the faster rule
    ** (Bland's, kept to the end, takes tens of thousands of pivots on a
    ** pattern LP of hundreds of rows), at most LP_RETURNS times a solve, so
    ** that it cannot cycle for ever. */
    if (bland && !stalled && returns < LP_RETURNS) bland = false, returns++;
    /* pivot */
    pivot(m, binv, xb, u, leave);
    lp_pivots++;
    basis[leave] = enter;
    since++;
  }
  double z = 0;
  if (x)
    for (int j = 0; j < n; j++) x[j] = 0;
  for (int r = 0; r < m; r++) {
    if (basis[r] >= n + m && xb[r] > 1e-9) { /* an artificial stayed: infeasible */
      rc = -1;
      goto out;
    }
    z += cost_of(&L, basis[r]) * xb[r];
    if (x && basis[r] < n) x[basis[r]] = xb[r];
  }
  if (warm)
    for (int r = 0; r < m; r++)
      warm[r] = basis[r] < n ? basis[r] : basis[r] < n + m ? -1 - (basis[r] - n) : -1 - m - (basis[r] - n - m);
  *obj = z;
out:
  if (inv && rc) inv[0] = NAN; /* no inverse to hand back */
  if (!inv) dt__free(binv);
  dt__free(fresh);
  dt__free(scratch);
  dt__free(xb);
  dt__free(u);
  dt__free(col);
  dt__free(cb);
  dt__free(basis);
  dt__free(isbasic);
  dt__free(wt);
  return rc;
}

/* Whether x covers every row's demand (to a relative 1e-7). */
static bool covers(int m, int n, const int *start, const int *row, const double *val, const double *d, const double *x,
                   double *act) {
  for (int r = 0; r < m; r++) act[r] = 0;
  for (int j = 0; j < n; j++)
    for (int k = start[j]; k < start[j + 1]; k++) act[row[k]] += val[k] * x[j];
  for (int r = 0; r < m; r++)
    if (act[r] < d[r] - 1e-7 * (1 + fabs(d[r]))) return false;
  return true;
}

/* Whether a solution is numbers a covering LP can have: a nearly singular
** basis can pass the rows' check with values past any demand. */
static bool sane(int n, const double *x, double obj) {
  if (!isfinite(obj)) return false;
  for (int j = 0; j < n; j++)
    if (!(x[j] <= 1e9)) return false;
  return true;
}

/* The solve, checked: a warm start whose inverse has drifted (a refresh can
** fail on a nearly singular basis and leave the old one) can end on a basis
** that does not cover the rows, covers them with absurd values, or keeps an
** artificial (the solve then reports the LP infeasible); a warm solve that
** fails or whose solution fails the checks is solved again from the
** artificials, and a cold one once more pivoting only on larger elements. */
int dt__lp_cover_sparse(int m, int n, const int *start, const int *row, const double *val, const double *c,
                        const double *d, double *y, double *x, double *obj, int *warm, double *inv) {
  if (m <= 0 || n < 0) return -1;
  double *xs = x ? x : dt__malloc(((size_t)n + 1) * sizeof *xs), *act = dt__malloc((size_t)m * sizeof *act);
  bool was_warm = warm && warm[0] != DT_LP_COLD;
  int rc = !xs || !act ? DT_ENOMEM : solve(m, n, start, row, val, c, d, y, xs, obj, warm, inv, 1e-12);
  bool ok = false; /* the solution at hand checked and good */
  for (int again = was_warm ? 0 : 1; again < 2 && rc != DT_ENOMEM; again++) {
    if (!rc && (ok = covers(m, n, start, row, val, d, xs, act) && sane(n, xs, *obj))) break;
    if (warm) warm[0] = DT_LP_COLD;
    if (inv) inv[0] = NAN;
    rc = solve(m, n, start, row, val, c, d, y, xs, obj, warm, inv, again ? 1e-9 : 1e-12);
  }
  if (!rc && !ok && !(covers(m, n, start, row, val, d, xs, act) && sane(n, xs, *obj))) rc = -1;
  if (!x) dt__free(xs);
  dt__free(act);
  return rc;
}

/* The dense forms: a is m x n, row-major. */
int dt__lp_cover_warm(int m, int n, const double *a, const double *c, const double *d, double *y, double *x,
                      double *obj, int *warm) {
  if (m <= 0 || n < 0) return -1;
  size_t nz = 0;
  for (size_t k = 0; k < (size_t)m * (size_t)n; k++) nz += a[k] != 0;
  int *start = dt__malloc(((size_t)n + 1) * sizeof *start), *row = dt__malloc((nz ? nz : 1) * sizeof *row);
  double *val = dt__malloc((nz ? nz : 1) * sizeof *val);
  int rc = DT_ENOMEM;
  if (start && row && val) {
    int k = 0;
    for (int j = 0; j < n; j++) {
      start[j] = k;
      for (int r = 0; r < m; r++)
        if (a[(size_t)r * n + j] != 0) {
          row[k] = r;
          val[k++] = a[(size_t)r * n + j];
        }
    }
    start[n] = k;
    rc = dt__lp_cover_sparse(m, n, start, row, val, c, d, y, x, obj, warm, NULL);
  }
  dt__free(start);
  dt__free(row);
  dt__free(val);
  return rc;
}

int dt__lp_cover(int m, int n, const double *a, const double *c, const double *d, double *y, double *x, double *obj) {
  return dt__lp_cover_warm(m, n, a, c, d, y, x, obj, NULL);
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
bool dt__knap_relax(uint32_t nr, uint32_t k, double *T, const double *v, const double *ub, double *x, double *lam,
                    int32_t *basis, uint8_t *at_ub, double *b) {
  uint32_t N = k + nr;
  for (uint32_t r = 0; r < nr; r++) {
    for (uint32_t j = k; j < N; j++) T[(size_t)r * N + j] = j - k == r;
    basis[r] = (int32_t)(k + r);
    b[r] = 1;
  }
  for (uint32_t j = 0; j < k; j++) at_ub[j] = 0;
#define OBJ(j) ((j) < k ? v[j] : 0.0)
#define BASIC  2 /* at_ub[j] of an item in the basis (its bound is then moot) */
#define UB(j)  ((j) < k ? ub[j] : INFINITY)
  bool done = false;
  int stalled = 0;
  for (uint32_t iter = 0; iter < 20 * N + 100 && !done; iter++) {
    /* entering: the largest gain (Dantzig), or after a run of degenerate
    ** pivots the first that gains (Bland) */
    int32_t e = -1;
    double gain = 1e-12, de = 0, cb[DT_RES_MAX];
    for (uint32_t r = 0; r < nr; r++) cb[r] = OBJ((uint32_t)basis[r]);
    for (uint32_t j = 0; j < N; j++) {
      bool basic = j < k && at_ub[j] == BASIC;
      for (uint32_t r = 0; r < nr && !basic && j >= k; r++) basic = basis[r] == (int32_t)j;
      if (basic) continue;
      double d = OBJ(j);
      for (uint32_t r = 0; r < nr; r++) d -= cb[r] * T[(size_t)r * N + j];
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
    if ((uint32_t)e < k) at_ub[e] = BASIC;
  }
  if (!done) return false;
  for (uint32_t j = 0; j < k; j++) x[j] = at_ub[j] == 1 ? ub[j] : 0;
  for (uint32_t r = 0; r < nr; r++) {
    if ((uint32_t)basis[r] < k) x[basis[r]] = b[r];
    lam[r] = 0;
  }
  for (uint32_t r = 0; r < nr; r++)
    for (uint32_t i = 0; i < nr; i++) lam[r] += OBJ((uint32_t)basis[i]) * T[(size_t)i * N + k + r];
#undef OBJ
#undef UB
#undef BASIC
  return true;
}
