/*
** pack_fill.c: plan E of the cost packer (see pack.c), node-by-node fills
** for groups of many shapes, in milliseconds where column generation takes
** a second.
**
** One construction opens a node at a time. For each candidate type it fills
** an empty node, adding again and again the shape whose cpu and memory
** shares best match the room left (their dot product), weighted by how much
** the shape is worth per unit of its size, so a node's resources run out
** together; the fill's worth is the sum of its pods' values, and the type
** whose fill is worth most per dollar is opened, shrunk to the cheapest
** type that holds its pods, and repeated while every shape in it lasts.
** A type's last ratio bounds what it can offer next (the pods left only
** thin out), so the types are tried best first and the search stops at the
** first whose last ratio is below the best fill of this step. Six settings
** (two ways to value a pod, two weightings, and a variant that starts each
** node with the most valuable pod left) are run in turn within a budget of
** work counted in shape checks, not time, so the plan is the same on any
** machine; the cheapest plan is kept.
**
** On the bench's many-shape dumps this lands 0.4-3.3% above the pattern
** LP's bound in 5-9 ms, where column generation lands 0.6-1.4% above in
** about a second; on some of them it is the cheaper of the two, so both
** run and the cheaper plan is kept.
*/
#include "pack_int.h"

#define FILL_WORK 3000000L /* shape checks after which no further setting starts (about 8 ms at 217 shapes) */
#define FILL_STOP 300000000L /* ... at which a run stops, not taken (about 1 s: thousands of small one-off pods) */
#define FILL_PODS 0.3      /* weight of the pod slot a pod takes, against its cpu and memory shares */

typedef struct fill {
  const dt_plan *p;
  const rt_pool *pl;
  const shape *sh;
  size_t ns;
  const cand *by_price;
  uint32_t nc;
  const uint32_t *front; /* the undominated candidates, cheapest first */
  uint32_t nf;
  /* Per front type f, the shapes that fit it alone (fit[f * ns + i], nfit[f]
  ** of them, those whose pods ran out taken out as they go) with their cpu
  ** and memory shares of the type and their worth per unit of size. */
  uint32_t *nfit, *fit;
  float *xc, *xm, *dens;
  double *y;    /* a pod's value, per shape */
  double *last; /* per front type: the ratio of its last fill */
  uint32_t *ord;
  uint8_t *elite; /* front types opened or shrunk to by the runs without a seed */
  int64_t *rem, *take, *best_take;
  uint32_t *got, *best_got, *cands, ngot, nbest;
  long work;
} fill;

/* Shares of a type's capacity; 0 where it has none of a resource. */
static double share(int64_t req, int64_t cap) { return cap > 0 ? (double)req / (double)cap : 0; }

/* Front type f's capacity. */
static const int64_t *front_cap(const fill *F, uint32_t f) { return F->pl->eff[F->by_price[F->front[f]].type]; }

/* Values and the per-type tables for one construction. ymode 0: the
** cheapest price per pod of the shape alone on one type; 1: the cheapest
** price of its largest share of one type. */
static void setup(fill *F, int ymode, int a) {
  const dt_plan *p = F->p;
  for (size_t s = 0; s < F->ns; s++) {
    double b = INFINITY;
    static const int64_t zero[DT_RES_MAX];
    for (uint32_t f = 0; f < F->nf; f++) {
      const cand *c = &F->by_price[F->front[f]];
      const int64_t *cap = F->pl->eff[c->type];
      if (!fits_in(p, cap, F->sh[s].req)) continue;
      double v;
      if (ymode == 0) {
        int64_t k = fit_count(p, cap, zero, F->sh[s].req, INT64_MAX);
        v = c->price / (double)k;
      } else {
        double most = 0;
        for (uint32_t r = 0; r < p->nres; r++) most = fmax(most, share(F->sh[s].req[r], cap[r]));
        v = c->price * most;
      }
      b = fmin(b, v);
    }
    F->y[s] = b;
  }
  for (uint32_t f = 0; f < F->nf; f++) {
    const int64_t *cap = front_cap(F, f);
    uint32_t n = 0;
    size_t at = (size_t)f * F->ns;
    for (size_t s = 0; s < F->ns; s++) {
      if (!F->sh[s].pods.n || !fits_in(p, cap, F->sh[s].req)) continue;
      double xc = share(F->sh[s].req[DT_R_CPU], cap[DT_R_CPU]), xm = share(F->sh[s].req[DT_R_MEM], cap[DT_R_MEM]);
      double w = xc + xm + FILL_PODS * share(F->sh[s].req[DT_R_PODS], cap[DT_R_PODS]);
      double d = w > 0 ? F->y[s] / w : 0;
      F->fit[at + n] = (uint32_t)s;
      F->xc[at + n] = (float)xc;
      F->xm[at + n] = (float)xm;
      F->dens[at + n] = (float)(a == 2 ? d * d : d);
      n++;
    }
    F->nfit[f] = n;
    F->last[f] = INFINITY;
    F->ord[f] = f;
  }
}

/* Fill an empty node of front type f (with one pod of seed first, when
** seed >= 0); F->take and F->got hold what went in; its value returned. */
static double fill_one(fill *F, uint32_t f, int32_t seed) {
  const dt_plan *p = F->p;
  const int64_t *cap = front_cap(F, f);
  size_t at = (size_t)f * F->ns;
  uint32_t n = F->nfit[f];
  for (uint32_t i = 0; i < n;) /* shapes whose pods ran out leave for good */
    if (!F->rem[F->fit[at + i]]) {
      n--;
      F->fit[at + i] = F->fit[at + n];
      F->xc[at + i] = F->xc[at + n];
      F->xm[at + i] = F->xm[at + n];
      F->dens[at + i] = F->dens[at + n];
    } else {
      i++;
    }
  F->nfit[f] = n;
  int64_t used[DT_RES_MAX] = {0};
  double value = 0;
  F->ngot = 0;
  if (seed >= 0) {
    F->take[seed] = 1;
    F->got[F->ngot++] = (uint32_t)seed;
    for (uint32_t r = 0; r < p->nres; r++) used[r] = F->sh[seed].req[r];
    value = F->y[seed];
  }
  uint32_t nc = 0;
  for (uint32_t i = 0; i < n; i++) F->cands[nc++] = i;
  double cc = (double)cap[DT_R_CPU], cm = (double)cap[DT_R_MEM];
  for (;;) {
    float rc = cc > 0 ? (float)((cc - (double)used[DT_R_CPU]) / cc) : 0;
    float rm = cm > 0 ? (float)((cm - (double)used[DT_R_MEM]) / cm) : 0;
    int64_t best = -1;
    float bd = -1;
    uint32_t keep = 0;
    F->work += nc;
    for (uint32_t q = 0; q < nc; q++) { /* room only shrinks: a shape that stops fitting leaves */
      uint32_t i = F->cands[q], s = F->fit[at + i];
      if (F->take[s] >= F->rem[s]) continue;
      bool ok = true;
      for (uint32_t r = 0; r < p->nres && ok; r++) ok = used[r] + F->sh[s].req[r] <= cap[r];
      if (!ok) continue;
      F->cands[keep++] = i;
      float d = (F->xc[at + i] * rc + F->xm[at + i] * rm) * F->dens[at + i];
      if (d > bd) {
        bd = d;
        best = i;
      }
    }
    nc = keep;
    if (best < 0 || F->work > FILL_STOP) break;
    uint32_t s = F->fit[at + best];
    if (!F->take[s]) F->got[F->ngot++] = s;
    F->take[s]++;
    for (uint32_t r = 0; r < p->nres; r++) used[r] += F->sh[s].req[r];
    value += F->y[s];
  }
  return value;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* One construction into out; DT_EINVAL when a pod fits no candidate. */
static int construct(fill *F, int ymode, int a, bool seeded, packing *out) {
  const dt_plan *p = F->p;
  setup(F, ymode, a);
  size_t left = 0;
  for (size_t s = 0; s < F->ns; s++) left += (size_t)(F->rem[s] = (int64_t)F->sh[s].pods.n);
  while (left) {
    for (uint32_t i = 1; i < F->nf; i++) { /* best last ratio first; nearly sorted already */
      uint32_t x = F->ord[i], j = i;
      for (; j > 0 && F->last[F->ord[j - 1]] < F->last[x]; j--) F->ord[j] = F->ord[j - 1];
      F->ord[j] = x;
    }
    int32_t seed = -1;
    bool elite_holds = false;
    if (seeded) {
      for (size_t s = 0; s < F->ns; s++)
        if (F->rem[s] && (seed < 0 || F->y[s] > F->y[seed])) seed = (int32_t)s;
      for (uint32_t f = 0; f < F->nf && !elite_holds; f++)
        elite_holds = F->elite[f] && fits_in(p, front_cap(F, f), F->sh[seed].req);
    }
    double br = -1;
    int64_t bf = -1;
    for (uint32_t oi = 0; oi < F->nf; oi++) {
      uint32_t f = F->ord[oi];
      if (!seeded && F->last[f] <= br) break;
      if (seeded &&
          (!fits_in(p, front_cap(F, f), F->sh[seed].req) || (elite_holds && !F->elite[f])))
        continue;
      double ratio = fill_one(F, f, seed) / F->by_price[F->front[f]].price;
      F->last[f] = ratio;
      if (ratio > br) {
        br = ratio;
        bf = f;
        F->nbest = F->ngot;
        for (uint32_t i = 0; i < F->ngot; i++) F->best_take[F->best_got[i] = F->got[i]] = F->take[F->got[i]];
      }
      for (uint32_t i = 0; i < F->ngot; i++) F->take[F->got[i]] = 0;
    }
    if (bf < 0 || !F->nbest || F->work > FILL_STOP) return DT_EINVAL;
    int64_t load[DT_RES_MAX] = {0}, rep = INT64_MAX;
    qsort(F->best_got, F->nbest, sizeof *F->best_got, cmp_u32); /* a node's shapes ascending */
    for (uint32_t i = 0; i < F->nbest; i++) {
      uint32_t s = F->best_got[i];
      for (uint32_t r = 0; r < p->nres; r++) load[r] += F->best_take[s] * F->sh[s].req[r];
      if (F->rem[s] / F->best_take[s] < rep) rep = F->rem[s] / F->best_take[s];
    }
    int32_t c = cheapest_fit(p, F->pl, F->by_price, F->nc, load);
    if (c < 0) return DT_EINVAL;
    for (int64_t k = 0; k < rep; k++)
      if (packing_add_listed(out, (uint32_t)c, F->best_got, F->nbest, F->best_take, F->by_price[c].price))
        return DT_ENOMEM;
    for (uint32_t i = 0; i < F->nbest; i++) {
      uint32_t s = F->best_got[i];
      F->rem[s] -= F->best_take[s] * rep;
      left -= (size_t)(F->best_take[s] * rep);
      F->best_take[s] = 0;
    }
    if (!seeded) {
      F->elite[bf] = 1;
      for (uint32_t f = 0; f < F->nf; f++)
        if (F->front[f] == (uint32_t)c) F->elite[f] = 1;
    }
  }
  return 0;
}

int dt__pack_fill(const dt_plan *p, const rt_pool *pl, const shape *shapes, size_t ns, const cand *by_price,
                  uint32_t nc, packing *out) {
  static const struct {
    int ymode, a;
    bool seeded;
  } runs[] = {{1, 2, false}, {0, 1, false}, {1, 1, false}, {1, 1, true}, {0, 1, true}, {1, 2, true}};
  fill F;
  memset(&F, 0, sizeof F);
  F.p = p;
  F.pl = pl;
  F.sh = shapes;
  F.ns = ns;
  F.by_price = by_price;
  F.nc = nc;
  size_t nfns = (size_t)(nc ? nc : 1) * (ns ? ns : 1);
  uint32_t *front = dt__malloc((nc ? nc : 1) * sizeof *front);
  F.nfit = dt__malloc((nc ? nc : 1) * sizeof *F.nfit);
  F.fit = dt__malloc(nfns * sizeof *F.fit);
  F.xc = dt__malloc(nfns * sizeof *F.xc);
  F.xm = dt__malloc(nfns * sizeof *F.xm);
  F.dens = dt__malloc(nfns * sizeof *F.dens);
  F.y = dt__malloc((ns ? ns : 1) * sizeof *F.y);
  F.last = dt__malloc((nc ? nc : 1) * sizeof *F.last);
  F.ord = dt__malloc((nc ? nc : 1) * sizeof *F.ord);
  F.elite = dt__calloc(nc ? nc : 1, 1);
  F.rem = dt__malloc((ns ? ns : 1) * sizeof *F.rem);
  F.take = dt__calloc(ns ? ns : 1, sizeof *F.take);
  F.best_take = dt__calloc(ns ? ns : 1, sizeof *F.best_take);
  F.got = dt__malloc((ns ? ns : 1) * sizeof *F.got);
  F.best_got = dt__malloc((ns ? ns : 1) * sizeof *F.best_got);
  F.cands = dt__malloc((ns ? ns : 1) * sizeof *F.cands);
  int rc = 0;
  if (!front || !F.nfit || !F.fit || !F.xc || !F.xm || !F.dens || !F.y || !F.last || !F.ord || !F.elite || !F.rem ||
      !F.take || !F.best_take || !F.got || !F.best_got || !F.cands) {
    rc = DT_ENOMEM;
    goto out;
  }
  F.front = front;
  F.nf = dt__pack_front(p, pl, shapes, ns, by_price, nc, front);
  long est[2] = {0, 0}; /* the work of the last run without and with a seed */
  for (size_t v = 0; v < sizeof runs / sizeof *runs && !rc; v++) {
    long e = est[runs[v].seeded] ? est[runs[v].seeded] : 3 * est[0];
    if (v > 0 && F.work + e > FILL_WORK) continue;
    long w0 = F.work;
    packing pk = {0};
    rc = construct(&F, runs[v].ymode, runs[v].a, runs[v].seeded, &pk);
    est[runs[v].seeded] = F.work - w0;
    bool over = rc == DT_EINVAL && F.work > FILL_STOP; /* out of work: the plans so far stand */
    if (over) rc = 0;
    if (!rc && !over && (!out->nodes || pk.cost < out->cost - 1e-9)) {
      packing t = *out;
      *out = pk;
      pk = t;
    }
    packing_free(&pk);
    if (over) break;
  }
out:
  dt__free(front);
  dt__free(F.nfit);
  dt__free(F.fit);
  dt__free(F.xc);
  dt__free(F.xm);
  dt__free(F.dens);
  dt__free(F.y);
  dt__free(F.last);
  dt__free(F.ord);
  dt__free(F.elite);
  dt__free(F.rem);
  dt__free(F.take);
  dt__free(F.best_take);
  dt__free(F.got);
  dt__free(F.best_got);
  dt__free(F.cands);
  return rc;
}
