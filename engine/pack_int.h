/*
** pack_int.h: what the cost packer's files share: pod shapes, candidate
** instance types, packings under construction and the small helpers they
** use. pack.c groups claims, runs the greedy plans and materialises the
** chosen packing; pack_cg.c solves the pattern LP by column generation and
** rounds it; pack_knap.c is the knapsack that prices its patterns.
*/
#ifndef DT_PACK_INT_H
#define DT_PACK_INT_H

#include "schedule.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CG_FEW 64 /* shapes up to which a group gets the few-shape settings (pack_cg.c) */

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

/* A packing under construction: per node, a type and the pods of each
** shape it holds. Kept sparse, as a node holds few of a group's shapes: a
** count of every shape per node came to nodes x shapes (hundreds of
** megabytes at tens of thousands of nodes and hundreds of shapes). Node
** n's shapes, ascending, and their counts are the entries from start.v[n]
** to start.v[n + 1]. */
typedef struct packing {
  size_t nodes;
  DT_VEC(uint32_t) type;  /* candidate index per node */
  DT_VEC(uint32_t) start; /* per node its first entry, then one past the last node's */
  DT_VEC(uint32_t) shape; /* per entry */
  DT_VEC(int64_t) cnt;    /* per entry: its pods, above 0 */
  double cost;
} packing;

static inline bool fits_in(const dt_plan *p, const int64_t *alloc, const int64_t *used) {
  for (uint32_t r = 0; r < p->nres; r++)
    if (used[r] > alloc[r]) return false;
  return true;
}

/* How many pods of shape s fit in alloc after used. */
static inline int64_t fit_count(const dt_plan *p, const int64_t *alloc, const int64_t *used, const int64_t *req,
                                int64_t cap) {
  int64_t cnt = cap;
  for (uint32_t r = 0; r < p->nres && cnt > 0; r++)
    if (req[r] > 0) {
      int64_t room = alloc[r] - used[r];
      int64_t f = room > 0 ? room / req[r] : 0;
      if (f < cnt) cnt = f;
    }
  return cnt;
}

static inline void packing_free(packing *k) {
  dt__free(k->type.v);
  dt__free(k->start.v);
  dt__free(k->shape.v);
  dt__free(k->cnt.v);
  memset(k, 0, sizeof *k);
}

/* One node of type cand holding counts[s] pods of each shape s. */
static inline int packing_add(packing *k, uint32_t cand, const int64_t *counts, size_t nshapes, double price) {
  if (!k->start.n && dt__vec_push(&k->start, 0u)) return DT_ENOMEM;
  for (size_t s = 0; s < nshapes; s++)
    if (counts[s] && (dt__vec_push(&k->shape, (uint32_t)s) || dt__vec_push(&k->cnt, counts[s]))) return DT_ENOMEM;
  if (dt__vec_push(&k->type, cand) || dt__vec_push(&k->start, (uint32_t)k->cnt.n)) return DT_ENOMEM;
  k->nodes++;
  k->cost += price;
  return 0;
}

/* One node of type cand holding cnt[shape[i]] pods of each of the n shapes
** listed, ascending: packing_add without a pass over every shape. */
static inline int packing_add_listed(packing *k, uint32_t cand, const uint32_t *shape, uint32_t n, const int64_t *cnt,
                                     double price) {
  if (!k->start.n && dt__vec_push(&k->start, 0u)) return DT_ENOMEM;
  for (uint32_t i = 0; i < n; i++)
    if (dt__vec_push(&k->shape, shape[i]) || dt__vec_push(&k->cnt, cnt[shape[i]])) return DT_ENOMEM;
  if (dt__vec_push(&k->type, cand) || dt__vec_push(&k->start, (uint32_t)k->cnt.n)) return DT_ENOMEM;
  k->nodes++;
  k->cost += price;
  return 0;
}

/* Node n of src, added to k (over the same shapes). */
static inline int packing_add_node(packing *k, const packing *src, size_t n, double price) {
  if (!k->start.n && dt__vec_push(&k->start, 0u)) return DT_ENOMEM;
  for (uint32_t e = src->start.v[n]; e < src->start.v[n + 1]; e++)
    if (dt__vec_push(&k->shape, src->shape.v[e]) || dt__vec_push(&k->cnt, src->cnt.v[e])) return DT_ENOMEM;
  if (dt__vec_push(&k->type, src->type.v[n]) || dt__vec_push(&k->start, (uint32_t)k->cnt.n)) return DT_ENOMEM;
  k->nodes++;
  k->cost += price;
  return 0;
}

/* The pods a packing places. */
static inline size_t packing_pods(const packing *k) {
  size_t n = 0;
  for (size_t e = 0; e < k->cnt.n; e++) n += (size_t)k->cnt.v[e];
  return n;
}

/* The cheapest candidate (price order) that holds used; -1 if none. */
static inline int32_t cheapest_fit(const dt_plan *p, const rt_pool *pl, const cand *by_price, uint32_t nc,
                                   const int64_t *used) {
  for (uint32_t i = 0; i < nc; i++)
    if (fits_in(p, pl->eff[by_price[i].type], used)) return (int32_t)i;
  return -1;
}

/* The candidate (index into by_price) holding up to n pods of shape req at
** the lowest price per pod: *k pods, *per_pod each; -1 if none holds one. */
static inline int32_t best_alone(const dt_plan *p, const rt_pool *pl, const cand *by_price, uint32_t nc,
                                 const int64_t *req, int64_t n, int64_t *k, double *per_pod) {
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

/* lp.c: a knapsack's LP relaxation, max v.x subject to T x <= 1 (nr rows of
** k + nr columns, the last nr the slacks), 0 <= x <= ub; x and lam (the
** rows' duals) out; false when it did not reach the optimum. */
bool dt__knap_relax(uint32_t nr, uint32_t k, double *T, const double *v, const double *ub, double *x, double *lam,
                    int32_t *basis, uint8_t *at_ub, double *b);

/* pack_knap.c: a knapsack's workspace, for ns shapes (dt__knap_init). */
typedef struct knap {
  const dt_plan *p;
  const int64_t *cap;
  uint32_t k;          /* shapes worth something, in search order */
  const int64_t **req; /* these arrays: ns entries (suf: ns + 1), from dt__knap_init */
  double *val, *dens;
  int64_t *lim;
  uint32_t *shape;
  /* The search's resources: those some shape of this knapsack asks for
  ** (na of them, res[q] the resource), the rest never binding; the arrays
  ** below are over these, packed (rq and suf: na a position). */
  uint32_t na, res[DT_RES_MAX];
  int64_t capc[DT_RES_MAX], room[DT_RES_MAX]; /* room: capc less what the search's node holds */
  int64_t *rq;                                /* per position: its shape's requests */
  double *suf;                                /* per position: best value per unit of each resource from there on */
  int64_t *cur, *best;
  double *tab, *rv, *rub, *rx; /* knap_lp's tableau (DT_RES_MAX x (ns + DT_RES_MAX)) and vectors */
  uint8_t *rat;
  int64_t *rcnt;
  double bestv;
  long budget, budget0, budget_lp; /* search nodes left; and per search (cg_tune) */
  bool have_lam;
  double *lsuf;            /* with have_lam: from position i on, what the shapes earn above their price at lam */
  double lam[DT_RES_MAX];  /* the LP relaxation's price of a unit of each resource */
  double lamc[DT_RES_MAX]; /* ... packed as the search's resources */
} knap;

/* The most valuable pods (at most lim[s] of shape s, worth pi[s] each) one
** node of capacity cap holds: counts into out[ns], the value returned.
** Searches at most K->budget0 nodes, then K->budget_lp with the LP bound. */
double dt__knapsack(knap *Kp, const dt_plan *p, const shape *sh, size_t ns, const double *pi, const int64_t *lim,
                    const int64_t *cap, int64_t *out);
int dt__knap_init(knap *K, size_t ns);
void dt__knap_close(knap *K);

/* The greedy plans A, B and C (pack.c) into plans[0..2]. */
int dt__pack_greedy_plans(const dt_plan *p, const rt_pool *pl, const shape *shapes, size_t ns, cand *cands,
                          const cand *by_price, uint32_t nc, packing *plans);

/* The candidates (indices into by_price, cheapest first) that no cheaper
** or equal one dominates (holds at least as much of every resource the
** shapes ask for), into front; their count returned (pack_cg.c). */
uint32_t dt__pack_front(const dt_plan *p, const rt_pool *pl, const shape *sh, size_t ns, const cand *by_price,
                        uint32_t nc, uint32_t *front);

/* Plan E (pack_fill.c): node-by-node fills, the cheapest of a few settings,
** into out; DT_EINVAL when a pod fits no candidate. */
int dt__pack_fill(const dt_plan *p, const rt_pool *pl, const shape *shapes, size_t ns, const cand *by_price,
                  uint32_t nc, packing *out);

/* Plan D (pack_cg.c): the pattern LP by column generation over the
** candidates (by_price: cheapest first), rounded to whole nodes, into out;
** *lp_obj the LP's cost. DT_EINVAL when it cannot be solved. */
int dt__pack_colgen(const dt_plan *p, const rt_pool *pl, const shape *shapes, size_t ns, const cand *by_price,
                    uint32_t nc, cand *cands, packing *out, double *lp_obj);

#endif
