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

#define CG_MAXS   256   /* shapes one pattern LP takes; a group of more is solved in parts */
#define CG_ONE_MAX 1024  /* shapes up to which the many-shape pass runs (parts of CG_MAXS: each costs a second) */
#define CG_BUDGET 2000  /* pricing rounds per group, its rounding's included */
#define CG_ENOUGH 12    /* improving patterns that end a round's pricing */
#define CG_KNAPS  32    /* knapsacks per round at most */
#define CG_GAP    0.002 /* stop pricing when the LP is this close to its bound */
#define CG_PRUNE  0.01  /* many shapes: patterns whose reduced cost is above this share of their price leave the LP */
/* Simplex pivots one plan D may make: CG_PIVOTS and CG_PIVOTS_POD per pod
** of the group (each of the many-shape passes its own). The bench's
** many-shape groups (5,968 pods, 217-227 shapes) take 10,000-56,000 a pass;
** 130 pods of 65 shapes took 660,000 (12 s), their pattern LPs as
** degenerate as they come. Once spent, pricing stops and rounding finishes
** alone (finish_alone); the plans beside D stand as ever. */
#define CG_PIVOTS     20000L
#define CG_PIVOTS_POD 10L

/* The work one pattern LP may do. Few shapes: a knapsack's search is short
** and the LP small. Many: the master has hundreds of rows, so each round adds
** more patterns, each knapsack searches longer (a short search stalls the LP
** percents above its optimum), and rounding prices little for each LP of
** what is left (it starts from the first LP's patterns). All are counts,
** not time. */
typedef struct cg_tune {
  int iters;      /* pricing rounds for the first LP */
  int iters_rest; /* ... and for each LP of what its whole nodes leave */
  uint32_t add;   /* patterns added per round */
  long knap;      /* search nodes per knapsack ... */
  long knap_lp;   /* ... and again with the LP bound, when the first ran out */
} cg_tune;

static const cg_tune tune_few = {60, 60, 6, 100, 300};
static const cg_tune tune_many = {200, 2, 16, 1000, 3000};
#define CG_ADD_MAX 16 /* the largest add above */

typedef struct colset {
  size_t n;
  DT_VEC(uint32_t) type; /* index into by_price */
  DT_VEC(int64_t) cnt;   /* n x ns */
  DT_VEC(double) x;      /* the last LP's solution */
  /* What makes the two loops over all patterns cheap on hundreds of shapes:
  ** a hash of each pattern (colset_add's test for one already there) and
  ** the shapes each holds, all patterns' one after the other, pattern j's
  ** ending at nzend[j] (spmat_grow). */
  DT_VEC(uint64_t) hash;
  DT_VEC(uint32_t) nzs, nzend;
} colset;

static void colset_free(colset *c) {
  dt__free(c->type.v);
  dt__free(c->cnt.v);
  dt__free(c->x.v);
  dt__free(c->hash.v);
  dt__free(c->nzs.v);
  dt__free(c->nzend.v);
  memset(c, 0, sizeof *c);
}

static uint64_t pattern_hash(uint32_t type, const int64_t *cnt, size_t ns) {
  uint64_t h = 1469598103934665603ull ^ type; /* FNV-1a over the counts */
  for (size_t s = 0; s < ns; s++) h = (h ^ (uint64_t)cnt[s]) * 1099511628211ull;
  return h;
}

static int colset_add(colset *c, uint32_t type, const int64_t *cnt, size_t ns) {
  uint64_t h = pattern_hash(type, cnt, ns);
  for (size_t j = 0; j < c->n; j++) /* never the same pattern twice */
    if (c->hash.v[j] == h && c->type.v[j] == type && !memcmp(&c->cnt.v[j * ns], cnt, ns * sizeof *cnt)) return 0;
  if (dt__vec_push(&c->type, type) || dt__vec_push(&c->x, 0.0) || dt__vec_push(&c->hash, h)) return DT_ENOMEM;
  for (size_t s = 0; s < ns; s++)
    if (dt__vec_push(&c->cnt, cnt[s]) || (cnt[s] && dt__vec_push(&c->nzs, (uint32_t)s))) return DT_ENOMEM;
  if (dt__vec_push(&c->nzend, (uint32_t)c->nzs.n)) return DT_ENOMEM;
  c->n++;
  return 0;
}

/* Keep only the patterns with keep[j], in their order. */
static void colset_keep(colset *c, size_t ns, const uint8_t *keep) {
  size_t w = 0, wz = 0;
  for (size_t j = 0, z0 = 0; j < c->n; j++) {
    size_t z1 = c->nzend.v[j];
    if (keep[j]) {
      c->type.v[w] = c->type.v[j];
      c->x.v[w] = c->x.v[j];
      c->hash.v[w] = c->hash.v[j];
      memmove(&c->cnt.v[w * ns], &c->cnt.v[j * ns], ns * sizeof *c->cnt.v);
      memmove(&c->nzs.v[wz], &c->nzs.v[z0], (z1 - z0) * sizeof *c->nzs.v);
      wz += z1 - z0;
      c->nzend.v[w++] = (uint32_t)wz;
    }
    z0 = z1;
  }
  c->n = c->type.n = c->x.n = c->hash.n = c->nzend.n = w;
  c->cnt.n = w * ns;
  c->nzs.n = wz;
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
  knap *K;           /* the knapsacks' workspace */
  int64_t *got;      /* take_node's counts, ns */
  int64_t *single;   /* round_rest's one-shape node, ns */
  long *rounds_left; /* pricing rounds the group may still spend (CG_BUDGET) */
  const cg_tune *tune;
  const uint8_t *ban; /* per candidate (by_price): left out of the LP; NULL none */
  bool dive;          /* many shapes, or fewer than two pods a shape: round by type as well (round_dive) */
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

/* The master's columns by column (sparse), scaled by demand; columns only
** ever join, so each LP adds the new ones' non-zeros to the last one's. */
typedef struct spmat {
  int *start, *row;
  double *val, *c, *x;
  size_t built, nz, capz, capn; /* columns in the matrix so far; capacities */
} spmat;

static void spmat_free(spmat *A) {
  dt__free(A->start);
  dt__free(A->row);
  dt__free(A->val);
  dt__free(A->c);
  dt__free(A->x);
}

static int spmat_grow(spmat *A, const cg_ctx *g, const colset *cols, const int32_t *rowof, const int64_t *dem) {
  size_t n = cols->n, ns = g->ns;
  if (n + 1 > A->capn) {
    size_t nn = 2 * n + 16;
    int *ns_ = dt__realloc(A->start, (nn + 1) * sizeof *A->start);
    if (ns_) A->start = ns_;
    double *nc_ = ns_ ? dt__realloc(A->c, nn * sizeof *A->c) : NULL;
    if (nc_) A->c = nc_;
    double *nx = nc_ ? dt__realloc(A->x, nn * sizeof *A->x) : NULL;
    if (!nx) return DT_ENOMEM;
    A->x = nx;
    A->capn = nn;
  }
  for (; A->built < n; A->built++) {
    size_t j = A->built;
    A->start[j] = (int)A->nz;
    A->c[j] = g->by_price[cols->type.v[j]].price;
    for (uint32_t z = j ? cols->nzend.v[j - 1] : 0; z < cols->nzend.v[j] && !(g->ban && g->ban[cols->type.v[j]]); z++) {
      uint32_t s = cols->nzs.v[z];
      int64_t k = cols->cnt.v[j * ns + s];
      if (rowof[s] < 0) continue;
      if (A->nz + 1 > A->capz) {
        size_t nn = 2 * A->capz + 64;
        int *nr = dt__realloc(A->row, nn * sizeof *A->row);
        if (nr) A->row = nr;
        double *nv = nr ? dt__realloc(A->val, nn * sizeof *A->val) : NULL;
        if (!nv) return DT_ENOMEM;
        A->val = nv;
        A->capz = nn;
      }
      A->row[A->nz] = rowof[s];
      A->val[A->nz++] = (double)(k < dem[s] ? k : dem[s]) / (double)dem[s];
    }
  }
  A->start[n] = (int)A->nz;
  return 0;
}

/* price_round reads at most CG_KNAPS + 1 entries of its queue in order
** (then it stops), so only those are kept of the hundreds of types in the
** front: queue[0..*nq) is a heap with the greatest at the root, e joins it
** when below that, and sort_first sorts it at the end. cmp_priced is a
** total order (types are distinct), so these are the first entries of the
** whole queue sorted, whatever the order they come in. The larger types
** tend to promise more per unit of price, so they are offered first: the
** heap then fills with its final entries early and turns the rest away at
** the root. */
#define CG_QUEUE (CG_KNAPS + 1)
static void keep_first(priced *h, uint32_t *nq, priced e) {
  uint32_t n = *nq, i;
  if (n < CG_QUEUE) { /* not full: sift up */
    for (i = (*nq)++; i > 0 && cmp_priced(&h[(i - 1) / 2], &e) < 0; i = (i - 1) / 2) h[i] = h[(i - 1) / 2];
    h[i] = e;
    return;
  }
  if (cmp_priced(&e, &h[0]) >= 0) return;
  for (i = 0;;) { /* replace the root: sift down */
    uint32_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && cmp_priced(&h[c + 1], &h[c]) > 0) c++;
    if (cmp_priced(&h[c], &e) <= 0) break;
    h[i] = h[c];
    i = c;
  }
  h[i] = e;
}

static void sort_first(priced *q, uint32_t n) {
  for (uint32_t j = 1; j < n; j++) {
    priced e = q[j];
    uint32_t i = j;
    for (; i > 0 && cmp_priced(&e, &q[i - 1]) < 0; i--) q[i] = q[i - 1];
    q[i] = e;
  }
}

/* One round of pricing at the duals pi (per pod of each shape): the
** improving patterns into pr[0..*np) (pr[i]'s counts at cnt[i * ns]), and
** the best value per unit of price any type may reach into *most. */
static void price_round(const cg_ctx *g, const double *pi, const int64_t *dem, priced *queue, priced *pr, int64_t *cnt,
                        uint32_t *np_out, double *most_out) {
  const dt_plan *p = g->p;
  size_t ns = g->ns;
  double maxr[DT_RES_MAX];
  for (uint32_t r = 0; r < p->nres; r++) {
    maxr[r] = 0; /* no term is NaN: the larger by comparison, not fmax (a library call) */
    for (size_t s = 0; s < ns; s++) {
      double v = g->sh[s].req[r] > 0 ? pi[s] / (double)g->sh[s].req[r] : (pi[s] > 0 ? INFINITY : 0);
      if (v > maxr[r]) maxr[r] = v;
    }
  }
  /* Partial pricing: types in order of the most their best pattern could
  ** be worth per unit of price; stop after CG_ENOUGH improving patterns or
  ** CG_KNAPS knapsacks, the rest bounded by that order's next entry. */
  uint32_t np = 0, nq = 0;
  double most = 0;
  for (uint32_t f = g->nfront; f-- > 0;) { /* dearest first: see keep_first */
    if (g->ban && g->ban[g->front[f]]) continue;
    const cand *cd = &g->by_price[g->front[f]];
    const int64_t *cap = g->pl->eff[cd->type];
    double ub = INFINITY;
    for (uint32_t r = 0; r < p->nres; r++)
      if (isfinite(maxr[r])) {
        double v = (double)(cap[r] > 0 ? cap[r] : 0) * maxr[r];
        if (v < ub) ub = v;
      }
    if (ub <= cd->price * (1 + 1e-9))
      most = fmax(most, ub / cd->price);
    else
      keep_first(queue, &nq, (priced){g->front[f], cd->price / ub}); /* ratio: price per most value */
  }
  sort_first(queue, nq);
  for (uint32_t q = 0, done = 0; q < nq; q++) {
    if (np >= CG_ENOUGH || done >= CG_KNAPS) {
      most = fmax(most, 1 / queue[q].ratio);
      break;
    }
    const cand *cd = &g->by_price[queue[q].type];
    double v = dt__knapsack(g->K, p, g->sh, ns, pi, dem, g->pl->eff[cd->type], &cnt[(size_t)np * ns]);
    done++;
    most = fmax(most, v / cd->price);
    if (v > cd->price * (1 + 1e-7)) pr[np++] = (priced){queue[q].type, cd->price / v};
  }
  *np_out = np;
  *most_out = most;
}

/* The best few of pr[0..np) (at most tune->add) join cols, each with its
** own counts; *added whether any was new. */
static int add_best(const cg_ctx *g, colset *cols, const priced *pr, uint32_t np, const int64_t *cnt, bool *added) {
  uint32_t idx[CG_ADD_MAX], nadd = 0;
  for (uint32_t k = 0; k < np && nadd < g->tune->add; k++) {
    uint32_t best = UINT32_MAX;
    for (uint32_t i = 0; i < np; i++) {
      bool taken = false;
      for (uint32_t q = 0; q < nadd; q++) taken |= idx[q] == i;
      if (!taken && (best == UINT32_MAX || cmp_priced(&pr[i], &pr[best]) < 0)) best = i;
    }
    idx[nadd++] = best;
  }
  size_t before = cols->n;
  int rc = 0;
  for (uint32_t q = 0; q < nadd && !rc; q++)
    rc = colset_add(cols, pr[idx[q]].type, &cnt[(size_t)idx[q] * g->ns], g->ns);
  *added = cols->n > before;
  return rc;
}

/* The basis one LP of rounding ended on, for the next (round_rest): the
** shapes' rows then and its columns (as lp.c's basis: j a pattern, -1 - r
** row r's surplus, -1 - m - r its artificial). */
typedef struct carry {
  uint32_t m;
  int32_t *rowof; /* ns */
  int *basis;     /* m */
} carry;

static void carry_free(carry *cr) {
  dt__free(cr->rowof);
  dt__free(cr->basis);
  memset(cr, 0, sizeof *cr);
}

/* A first basis for the master of m rows (rowof) from the last one's (cr):
** its patterns and its rows' surpluses that are still rows, as many as are
** independent (kept by elimination), and the surplus of each row none of
** them pivots on. The dual simplex (lp.c) starts from it when it does not
** cover the new demands. Cold when out of memory. */
static void crash_from(const carry *cr, const spmat *A, size_t n, const int32_t *rowof, size_t ns, uint32_t m,
                       int *basis) {
  double *W = dt__malloc((size_t)m * m * sizeof *W), *v = dt__malloc(m * sizeof *v);
  int32_t *newrow = dt__malloc(cr->m * sizeof *newrow), *piv = dt__malloc(m * sizeof *piv);
  uint8_t *pivoted = dt__calloc(m, 1);
  uint32_t k = 0;
  basis[0] = DT_LP_COLD;
  if (!W || !v || !newrow || !piv || !pivoted) goto out;
  for (uint32_t q = 0; q < cr->m; q++) newrow[q] = -1;
  for (size_t s = 0; s < ns; s++)
    if (cr->rowof[s] >= 0) newrow[cr->rowof[s]] = rowof[s];
  for (uint32_t i0 = 0; i0 < 2 * cr->m && k < m; i0++) { /* the patterns first, then the surpluses */
    uint32_t i = i0 % cr->m;
    int e = cr->basis[i], enc;
    if ((i0 < cr->m) != (e >= 0)) continue;
    memset(v, 0, m * sizeof *v);
    if (e >= 0 && (size_t)e < n) {
      for (int z = A->start[e]; z < A->start[e + 1]; z++) v[A->row[z]] += A->val[z];
      enc = e;
    } else if (e < 0 && -1 - e < (int)cr->m && newrow[-1 - e] >= 0) {
      v[newrow[-1 - e]] = -1;
      enc = -1 - newrow[-1 - e];
    } else
      continue;
    for (uint32_t a = 0; a < k; a++) { /* eliminate the accepted columns' pivots */
      double f = v[piv[a]];
      if (f != 0)
        for (uint32_t r = 0; r < m; r++) v[r] -= f * W[(size_t)a * m + r];
    }
    int32_t best = -1;
    for (uint32_t r = 0; r < m; r++)
      if (!pivoted[r] && fabs(v[r]) > 1e-9 && (best < 0 || fabs(v[r]) > fabs(v[best]))) best = (int32_t)r;
    if (best < 0) continue; /* dependent on those taken */
    for (uint32_t r = 0; r < m; r++) W[(size_t)k * m + r] = v[r] / v[best];
    piv[k] = best;
    pivoted[best] = 1;
    basis[k++] = enc;
  }
  for (uint32_t r = 0; r < m; r++)
    if (!pivoted[r]) basis[k++] = -1 - (int)r;
out:
  dt__free(W);
  dt__free(v);
  dt__free(newrow);
  dt__free(piv);
  dt__free(pivoted);
}

/* Keep the basis an LP ended on (carry). */
static int carry_keep(carry *cr, const int32_t *rowof, size_t ns, const int *basis, uint32_t m) {
  if (!cr->rowof && !(cr->rowof = dt__malloc(ns * sizeof *cr->rowof))) return DT_ENOMEM;
  int *nb = dt__realloc(cr->basis, m * sizeof *nb);
  if (!nb) return DT_ENOMEM;
  cr->basis = nb;
  memcpy(cr->rowof, rowof, ns * sizeof *rowof);
  memcpy(cr->basis, basis, m * sizeof *basis);
  cr->m = m;
  return 0;
}

/* The patterns worth keeping in an LP of many shapes at the duals pi (per
** pod of each shape, demands dem): keep[j] set for those the last solution
** uses and those whose reduced cost is at most CG_PRUNE of their price. A
** pattern the LP can do without by more than that rarely enters again, and
** every pivot prices every pattern: the LP of 217 shapes starts from the
** parts' thousands of patterns, and rounding solves it dozens of times. */
static void worth_keeping(const cg_ctx *g, const colset *cols, const int64_t *dem, const double *pi, uint8_t *keep) {
  size_t ns = g->ns;
  for (size_t j = 0; j < cols->n; j++) {
    double price = g->by_price[cols->type.v[j]].price, rc = price;
    for (uint32_t z = j ? cols->nzend.v[j - 1] : 0; z < cols->nzend.v[j]; z++) {
      uint32_t s = cols->nzs.v[z];
      int64_t k = cols->cnt.v[j * ns + s];
      rc -= (double)(k < dem[s] ? k : dem[s]) * pi[s];
    }
    keep[j] |= cols->x.v[j] > 1e-9 || rc <= CG_PRUNE * price;
  }
}

/* The patterns not worth keeping leave cols, the basis' (every one of them
** kept) renumbered, the LP's matrix A emptied to be built again: its
** inverse still holds, the basis' columns the same in the same order. */
static int prune_cols(const cg_ctx *g, colset *cols, const int64_t *dem, const double *pi, int *basis, uint32_t m,
                      spmat *A) {
  size_t n = cols->n;
  uint8_t *keep = dt__calloc(n + 1, 1);
  int32_t *nj = dt__malloc((n + 1) * sizeof *nj);
  if (!keep || !nj) {
    dt__free(keep);
    dt__free(nj);
    return DT_ENOMEM;
  }
  for (uint32_t r = 0; r < m; r++)
    if (basis[r] >= 0) keep[basis[r]] = 1;
  worth_keeping(g, cols, dem, pi, keep);
  int32_t w = 0;
  for (size_t j = 0; j < n; j++) nj[j] = keep[j] ? w++ : -1;
  for (uint32_t r = 0; r < m; r++)
    if (basis[r] >= 0) basis[r] = nj[basis[r]];
  colset_keep(cols, g->ns, keep);
  spmat_free(A);
  memset(A, 0, sizeof *A);
  dt__free(keep);
  dt__free(nj);
  return 0;
}

/* Solve the pattern LP for dem[] by column generation; cols->x receives it,
** *lp_obj its cost (a lower bound on any plan when pricing was exact), and
** pi_out (when not NULL) the last LP's duals per pod of each shape. With
** prune, the patterns not worth keeping at the first LP's duals leave cols
** (worth_keeping). Returns 0, DT_ENOMEM, or DT_EINVAL when the LP cannot be
** solved. */
static int cg_lp(const cg_ctx *g, const int64_t *dem, colset *cols, int iters, double *lp_obj, carry *cr,
                 double *pi_out, bool prune) {
  size_t ns = g->ns;
  int rc = 0;
  uint32_t m = 0;
  int32_t *rowof = dt__malloc(ns * sizeof *rowof);
  int *basis = dt__malloc(ns * sizeof *basis);
  double *d = dt__malloc(ns * sizeof *d), *y = dt__malloc(ns * sizeof *y), *pi = dt__malloc(ns * sizeof *pi);
  double *inv = NULL;
  priced *pr = dt__malloc((g->nfront ? g->nfront : 1) * sizeof *pr),
         *queue = dt__malloc((g->nfront ? g->nfront : 1) * sizeof *queue);
  int64_t *cnt = dt__malloc(ns * (g->nfront + 1) * sizeof *cnt);
  spmat A = {0};
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
    size_t n = cols->n;
    if ((rc = spmat_grow(&A, g, cols, rowof, dem))) goto out;
    if (iter == 0 && cr && cr->m) crash_from(cr, &A, n, rowof, ns, m, basis);
    double obj;
    int lrc = dt__lp_cover_sparse((int)m, (int)n, A.start, A.row, A.val, A.c, d, y, A.x, &obj, basis, inv);
    if (lrc) {
      rc = lrc == DT_ENOMEM ? DT_ENOMEM : DT_EINVAL;
      goto out;
    }
    memcpy(cols->x.v, A.x, n * sizeof *A.x);
    *lp_obj = obj;
    if (cr && (rc = carry_keep(cr, rowof, ns, basis, m))) goto out;
    for (size_t s = 0; s < ns; s++) pi[s] = rowof[s] >= 0 && y[rowof[s]] > 0 ? y[rowof[s]] / (double)dem[s] : 0;
    if (pi_out) memcpy(pi_out, pi, ns * sizeof *pi);
    if (iter == 0 && prune && (rc = prune_cols(g, cols, dem, pi, basis, m, &A))) goto out;
    /* The group's pricing budget (rounds or pivots) spent, this LP's solution stands. */
    if (*g->rounds_left <= 0 || dt__lp_spent()) break;
    --*g->rounds_left;
    uint32_t np;
    double most;
    price_round(g, pi, dem, queue, pr, cnt, &np, &most);
    if (!np || (most > 0 && obj / most >= obj * (1 - CG_GAP))) break;
    bool added;
    if ((rc = add_best(g, cols, pr, np, cnt, &added))) goto out;
    if (!added) break; /* nothing new: the LP is as good as pricing can tell */
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
  spmat_free(&A);
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
** when none is whole, round the largest fraction up. With many shapes each
** LP starts from the basis the last one ended on (crash_from; the dual
** simplex makes it cover what is left), not from the artificials: a cold
** start of a master of hundreds of rows takes about three pivots a row. */
static int round_rest(const cg_ctx *g, colset *cols, int64_t *rem, size_t left, packing *out) {
  size_t ns = g->ns;
  int rc = 0;
  uint32_t *ord = NULL;
  carry cr = {0}; /* each round's LP starts from the last one's basis */
  for (size_t round = 0; !rc && left && round < 2 * ns + 8 && !dt__lp_spent(); round++) {
    double obj;
    if ((rc = cg_lp(g, rem, cols, g->tune->iters_rest, &obj, g->ns > CG_FEW ? &cr : NULL, NULL, false))) break;
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
  carry_free(&cr);
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

/* ------------------------------------------------------------------------
** Rounding by type. With many shapes the LP spreads a large type's nodes
** over dozens of patterns, none of them whole; but the patterns of one type
** together are X of its nodes holding y[s] pods of each shape, and their
** average, y / X, fits one node. So whole nodes are taken by type, each its
** share of y topped up, and what is left solved again; when no type has a
** whole node left, the one carrying the most cost is either rounded up or
** left out of the LP, whichever of the two LPs that follow costs less.
** ---------------------------------------------------------------------- */

#define CG_CHEAP 0.002 /* a rounding up that may lose at most this share of the LP is taken unweighed */

/* The LP's nodes of candidate c: returns how many (X), y[s] the pods of
** each shape they hold. */
static double type_load(const cg_ctx *g, const colset *cols, uint32_t c, double *y) {
  double X = 0;
  memset(y, 0, g->ns * sizeof *y);
  for (size_t j = 0; j < cols->n; j++) {
    if (cols->type.v[j] != c || cols->x.v[j] <= 1e-9) continue;
    X += cols->x.v[j];
    for (size_t s = 0; s < g->ns; s++) y[s] += cols->x.v[j] * (double)cols->cnt.v[j * g->ns + s];
  }
  return X;
}

/* k nodes of candidate c, each holding y / X (rounded down, cut to what is
** left) and then what else fits, largest shape first. */
static int take_share(const cg_ctx *g, uint32_t c, const double *y, double X, int64_t k, int64_t *rem, size_t *left,
                      packing *out) {
  const int64_t *cap = g->pl->eff[g->by_price[c].type];
  int64_t *cnt = g->single;
  int rc = 0;
  for (int64_t n = 0; n < k && !rc && *left; n++) {
    int64_t used[DT_RES_MAX] = {0};
    for (size_t s = 0; s < g->ns; s++) {
      int64_t a = (int64_t)floor(y[s] / X + 1e-9);
      cnt[s] = a < rem[s] ? a : rem[s];
      for (uint32_t r = 0; r < g->p->nres; r++) used[r] += cnt[s] * g->sh[s].req[r];
    }
    if (!fits_in(g->p, cap, used)) { /* rounding error: fill from empty */
      memset(cnt, 0, g->ns * sizeof *cnt);
      memset(used, 0, sizeof used);
    }
    for (size_t s = 0; s < g->ns; s++) {
      int64_t more = fit_count(g->p, cap, used, g->sh[s].req, rem[s] - cnt[s]);
      cnt[s] += more;
      for (uint32_t r = 0; r < g->p->nres; r++) used[r] += more * g->sh[s].req[r];
    }
    bool took;
    rc = take_node(g, cnt, rem, left, out, &took);
    if (!took) break;
  }
  return rc;
}

/* The candidate whose LP nodes cost most, among those with a whole one
** when any has (*whole); UINT32_MAX when the LP has none. */
static uint32_t heaviest(const cg_ctx *g, const colset *cols, double *X, bool *whole) {
  uint32_t best = UINT32_MAX;
  memset(X, 0, g->nc * sizeof *X);
  for (size_t j = 0; j < cols->n; j++) X[cols->type.v[j]] += cols->x.v[j] > 1e-9 ? cols->x.v[j] : 0;
  *whole = false;
  for (uint32_t c = 0; c < g->nc; c++) {
    if (X[c] <= 1e-9) continue;
    bool w = X[c] >= 1 - 1e-9;
    if (best == UINT32_MAX || (w && !*whole) ||
        (w == *whole && X[c] * g->by_price[c].price > X[best] * g->by_price[best].price))
      best = c, *whole = w;
  }
  return best;
}

/* The LP's cost for rem, INFINITY when it has none. */
static int lp_cost(const cg_ctx *g, const int64_t *rem, colset *cols, double *cost) {
  int rc = cg_lp(g, rem, cols, g->tune->iters_rest, cost, NULL, NULL, false);
  if (rc == DT_EINVAL) *cost = INFINITY;
  return rc == DT_EINVAL ? 0 : rc;
}

/* Round the rest by type (above); lp is the group's LP, for scale. */
static int round_dive(const cg_ctx *g0, colset *cols, int64_t *rem, size_t left, double lp, packing *out) {
  size_t ns = g0->ns;
  cg_ctx g = *g0;
  uint8_t *ban = dt__calloc(g.nc, 1);
  double *X = dt__malloc(g.nc * sizeof *X), *y = dt__malloc(ns * sizeof *y);
  int64_t *trial = dt__malloc(ns * sizeof *trial);
  int rc = !ban || !X || !y || !trial ? DT_ENOMEM : 0;
  long none = 0; /* the LPs here price nothing: over the patterns at hand */
  g.ban = ban;
  g.rounds_left = &none;
  for (size_t round = 0; !rc && left && round < 2 * ns + 8 && !dt__lp_spent(); round++) {
    double obj, up = INFINITY, down = INFINITY;
    bool whole;
    if ((rc = cg_lp(&g, rem, cols, g.tune->iters_rest, &obj, NULL, NULL, false))) break;
    uint32_t t = heaviest(&g, cols, X, &whole);
    if (t == UINT32_MAX) break;
    double Xt = type_load(&g, cols, t, y), price = g.by_price[t].price;
    if (whole || (1 - Xt) * price <= CG_CHEAP * lp) {
      rc = take_share(&g, t, y, Xt, whole ? (int64_t)floor(Xt + 1e-9) : 1, rem, &left, out);
      continue;
    }
    /* Up: one node of t and the LP of the rest; down: the LP without t. */
    packing one = {0};
    size_t tl = left;
    memcpy(trial, rem, ns * sizeof *rem);
    rc = take_share(&g, t, y, Xt, 1, trial, &tl, &one);
    if (!rc) rc = lp_cost(&g, trial, cols, &up);
    ban[t] = 1;
    if (!rc) rc = lp_cost(&g, rem, cols, &down);
    if (!rc && one.cost + up <= down) {
      ban[t] = 0;
      for (size_t n = 0; n < one.nodes && !rc; n++)
        rc = packing_add_node(out, &one, n, g.by_price[one.type.v[n]].price);
      memcpy(rem, trial, ns * sizeof *rem);
      left = tl;
    }
    packing_free(&one);
  }
  if (rc == DT_EINVAL) rc = 0;
  if (!rc) rc = finish_alone(&g, rem, left, out);
  dt__free(ban);
  dt__free(X);
  dt__free(y);
  dt__free(trial);
  return rc;
}

/* Plan D: the pattern LP's whole nodes, then the rest by further rounding
** or by the greedy plans, whichever costs less. On a large group the whole
** nodes are nearly everything; on a small one the rest is, and rounding a
** fractional solution of a few nodes can lose to a greedy fill. */
static int colgen(const cg_ctx *g, cand *cands, packing *out, double *lp_obj, colset *io) {
  size_t ns = g->ns;
  int64_t *rem = dt__malloc(ns * sizeof *rem), *rest = dt__malloc(ns * sizeof *rest),
          *cnt = dt__malloc(ns * sizeof *cnt);
  shape *sub = dt__malloc(ns * sizeof *sub);
  size_t left = 0;
  colset own = {0}, *cols = io ? io : &own, ws = {0};
  packing tail[6];
  memset(tail, 0, sizeof tail);
  int rc = 0;
  uint32_t *ord = NULL;
  double *pi = NULL; /* the LP's duals per pod of each shape */
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
    if (!rc) rc = colset_add(cols, (uint32_t)bt, cnt, ns);
  }
  bool any;
  bool many = ns > CG_FEW; /* one LP over all of a many-shape group's shapes */
  if (!rc && !(pi = dt__malloc(ns * sizeof *pi))) rc = DT_ENOMEM;
  if (!rc) rc = cg_lp(g, rem, cols, g->tune->iters, lp_obj, NULL, pi, many);
  if (!rc && !(ord = dt__malloc(cols->n * sizeof *ord + 1))) rc = DT_ENOMEM;
  if (!rc) rc = take_whole(g, cols, rem, &left, out, ord, &any);
  if (rc || !left) goto out;
  {
    memcpy(rest, rem, ns * sizeof *rem);
    if ((rc = round_up(g, cols, rest, left, &tail[4])) == DT_EINVAL) rc = 0;
    memcpy(rest, rem, ns * sizeof *rem);
    /* Many shapes: rounding's LPs over the patterns worth keeping at the
    ** LP's duals (for the group's demands), and those pricing adds. */
    colset *rcols = cols;
    if (!rc && many) {
      int64_t *dem = cnt;
      uint8_t *keep = dt__calloc(cols->n + 1, 1);
      for (size_t s = 0; s < ns; s++) dem[s] = (int64_t)g->sh[s].pods.n;
      if (!keep) rc = DT_ENOMEM;
      if (!rc) worth_keeping(g, cols, dem, pi, keep);
      for (size_t j = 0; j < cols->n && !rc; j++)
        if (keep[j]) rc = colset_add(&ws, cols->type.v[j], &cols->cnt.v[j * ns], ns);
      dt__free(keep);
      rcols = &ws;
    }
    if (!rc && (rc = round_rest(g, rcols, rest, left, &tail[3])) == DT_EINVAL) rc = 0;
    memcpy(rest, rem, ns * sizeof *rem);
    if (!rc && g->dive && ns <= CG_FEW && (rc = round_dive(g, cols, rest, left, *lp_obj, &tail[5])) == DT_EINVAL)
      rc = 0;
    for (size_t s = 0; s < ns; s++) {
      sub[s] = g->sh[s];
      sub[s].pods.n = (size_t)rem[s];
    }
    if (!rc) rc = dt__pack_greedy_plans(g->p, g->pl, sub, ns, cands, g->by_price, g->nc, tail);
    if (rc) goto out;
    int best = -1;
    for (int i = 0; i < 6; i++) {
      size_t placed = packing_pods(&tail[i]);
      if (placed == left && (best < 0 || tail[i].cost < tail[best].cost - 1e-9)) best = i;
    }
    if (best < 0) {
      rc = DT_EINVAL;
      goto out;
    }
    for (size_t n = 0; n < tail[best].nodes && !rc; n++) {
      rc = packing_add_node(out, &tail[best], n, g->by_price[tail[best].type.v[n]].price);
    }
  }
out:
  for (int i = 0; i < 6; i++) packing_free(&tail[i]);
  dt__free(ord);
  dt__free(rem);
  dt__free(rest);
  dt__free(cnt);
  dt__free(sub);
  colset_free(&own);
  colset_free(&ws);
  dt__free(pi);
  return rc;
}

/*
** A group of more than maxs shapes: column generation on parts of at most
** maxs shapes each, dealt out in turn from the group's order (largest
** first), so that every part holds large and small, cpu-heavy and
** memory-heavy shapes in about the group's proportions and finds the pods
** that complement each other within itself. Pods of different parts never
** share a node (on the bench's 217 shapes, parts of 64 land 3% above one
** LP over all of them), and a pattern LP of m shapes costs O(m^2) a pivot.
** The parts share the group's pricing budget; *lp_obj is the sum of their
** LPs (not a bound on the whole).
*/
static int colgen_parts(const cg_ctx *g, size_t maxs, cand *cands, packing *out, double *lp_obj, colset *all) {
  size_t ns = g->ns, nparts = (ns + maxs - 1) / maxs;
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
    colset pc = {0};
    double lp = 0;
    rc = colgen(&sub, cands, &pk, &lp, &pc);
    *lp_obj += lp;
    for (size_t j = 0; j < pc.n && !rc && all; j++) { /* the part's patterns, for one LP over all shapes */
      memset(row, 0, ns * sizeof *row);
      for (size_t q = 0; q < sub.ns; q++) row[orig[off + q]] = pc.cnt.v[j * sub.ns + q];
      rc = colset_add(all, pc.type.v[j], row, ns);
    }
    colset_free(&pc);
    memset(row, 0, ns * sizeof *row); /* each node's entries are set, then cleared */
    for (size_t node = 0; node < pk.nodes && !rc; node++) {
      uint32_t c = pk.type.v[node], e0 = pk.start.v[node], e1 = pk.start.v[node + 1];
      for (uint32_t e = e0; e < e1; e++) row[orig[off + pk.shape.v[e]]] = pk.cnt.v[e];
      rc = packing_add(out, c, row, ns, g->by_price[c].price);
      for (uint32_t e = e0; e < e1; e++) row[orig[off + pk.shape.v[e]]] = 0;
    }
    packing_free(&pk);
    off += sub.ns;
  }
  dt__free(row);
  dt__free(dealt);
  dt__free(orig);
  return rc;
}

uint32_t dt__pack_front(const dt_plan *p, const rt_pool *pl, const shape *sh, size_t ns, const cand *by_price,
                        uint32_t nc, uint32_t *front) {
  uint32_t res[DT_RES_MAX], nr = 0; /* what a type has of a resource no pod asks for does not make it better */
  for (uint32_t r = 0; r < p->nres; r++) {
    bool asked = false;
    for (size_t s = 0; s < ns && !asked; s++) asked = sh[s].req[r] > 0;
    if (asked) res[nr++] = r;
  }
  uint32_t nf = 0;
  for (uint32_t i = 0; i < nc; i++) {
    const int64_t *e = pl->eff[by_price[i].type];
    bool dom = false;
    for (uint32_t f = 0; f < nf && !dom; f++) {
      const int64_t *o = pl->eff[by_price[front[f]].type];
      dom = true;
      for (uint32_t q = 0; q < nr && dom; q++) dom = o[res[q]] >= e[res[q]];
    }
    if (!dom) front[nf++] = i;
  }
  return nf;
}

/* One plan D with the given settings: one LP, or parts of at most maxs;
** io (when not NULL) the patterns it starts from and those it found. */
static int colgen_tuned(cg_ctx *g, const cg_tune *tune, size_t maxs, cand *cands, packing *out, double *lp_obj,
                        colset *io) {
  long rounds_left = CG_BUDGET;
  g->tune = tune;
  g->rounds_left = &rounds_left;
  g->K->budget0 = tune->knap;
  g->K->budget_lp = tune->knap_lp;
  *lp_obj = 0;
  size_t pods = 0;
  for (size_t s = 0; s < g->ns; s++) pods += g->sh[s].pods.n;
  long was = dt__lp_stop_at(dt__lp_pivots() + CG_PIVOTS + CG_PIVOTS_POD * (long)pods);
  int rc = g->ns <= maxs ? colgen(g, cands, out, lp_obj, io) : colgen_parts(g, maxs, cands, out, lp_obj, io);
  dt__lp_stop_at(was);
  return rc;
}

/* Few shapes: one LP with the few-shape settings. Many: that in parts of
** CG_FEW shapes (pods of different parts never share a node), and one LP
** over up to CG_MAXS shapes with the many-shape settings, starting from
** the parts' patterns, so that its LP is never above the parts' (it finds
** the nodes that mix the parts' pods, but rounding its hundreds of
** fractional patterns can lose more where nodes are large); the cheaper of
** the two, *lp_obj the LP (or the parts' LPs) of the one chosen. */
int dt__pack_colgen(const dt_plan *p, const rt_pool *pl, const shape *shapes, size_t ns, const cand *by_price,
                    uint32_t nc, cand *cands, packing *out, double *lp_obj) {
  knap K;
  size_t most = ns < CG_MAXS ? ns : CG_MAXS; /* shapes in one pattern LP */
  int64_t *got = dt__malloc(most * sizeof *got), *single = dt__malloc(most * sizeof *single);
  uint32_t *front = dt__malloc(nc * sizeof *front);
  int rc = dt__knap_init(&K, most);
  if (!rc && (!got || !single || !front)) rc = DT_ENOMEM;
  cg_ctx g = {p, pl, shapes, ns, by_price, nc, front, 0, &K, got, single, NULL, NULL, NULL, ns > CG_FEW};
  size_t total = 0;
  for (size_t s = 0; s < ns; s++) total += shapes[s].pods.n;
  g.dive = ns > CG_FEW || total < 2 * ns;
  packing one = {0};
  colset parts = {0}; /* the parts' patterns: the one LP starts from them */
  double lp_one = 0;
  *lp_obj = 0;
  if (!rc) {
    g.nfront = dt__pack_front(p, pl, shapes, ns, by_price, nc, front);
    rc = colgen_tuned(&g, &tune_few, CG_FEW, cands, out, lp_obj, ns > CG_FEW && ns <= CG_MAXS ? &parts : NULL);
  }
  if ((!rc || rc == DT_EINVAL) && ns > CG_FEW && ns <= CG_ONE_MAX) {
    int rc1 = colgen_tuned(&g, &tune_many, CG_MAXS, cands, &one, &lp_one, ns <= CG_MAXS ? &parts : NULL);
    if (!rc1 && (rc || one.cost < out->cost - 1e-9)) {
      packing t = *out;
      *out = one;
      one = t;
      *lp_obj = lp_one;
      rc = 0;
    } else if (rc1 == DT_ENOMEM)
      rc = rc1;
  }
  packing_free(&one);
  colset_free(&parts);
  dt__knap_close(&K);
  dt__free(got);
  dt__free(single);
  dt__free(front);
  return rc;
}
