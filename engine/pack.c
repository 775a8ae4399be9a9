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
**      again for what is left, rounding the last LP up, the greedy plans),
**      and with many shapes, or with most pods each of a shape of its own,
**      a fourth, by type (pack_cg.c's round_dive);
**      a group of more than CG_FEW shapes both in parts of at most CG_FEW
**      shapes dealt out in turn, each solved so, and as one LP over up to
**      CG_MAXS shapes with longer pricing that starts from the parts'
**      patterns, the cheaper kept;
**   A. each shape alone on its cheapest type per pod;
**   B. greedy: open nodes one at a time, for each of the types with the best
**      reduced cost under the covering LP's duals fill a node largest pod
**      first, keep the type with the lowest price per unit of value;
**   C. the same valuing pods at plan A's per-pod prices;
**   E. with more than CG_FEW shapes, or fewer than two pods a shape,
**      node-by-node fills (pack_fill.c).
**
** A, B and C run when D fails or lands more than 1% above its LP. Where E
** runs, the nodes of the plan chosen among A to D, and of
** plan E, that fit in the room the others leave (in their types as they
** are, so never dearer) are emptied into it, emptiest first, and the
** cheaper of the two is kept. Every node shrinks to the cheapest type that
** holds it; at the same price, to a type
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
#include "pack_int.h"

#define PACK_TOPK 48
#define GREEDY_STOP 60000000L /* shape checks of one greedy plan: thousands of shapes on thousands of nodes */

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

/*
** Greedy: open one node at a time; for each candidate type fill it largest
** shape first and value the contents with per-shape values v[]; keep the
** type with the lowest price per unit of value; then shrink the node to the
** cheapest type that holds what went in.
*/
static int greedy(const dt_plan *p, const rt_pool *pl, const shape *shapes, size_t ns, const cand *cands, uint32_t ntry,
                  const cand *by_price, uint32_t nc, const double *v, packing *out) {
  int64_t *rem = dt__malloc(ns * sizeof *rem), *take = dt__malloc(ns * sizeof *take),
          *best_take = dt__malloc(ns * sizeof *best_take);
  int rc = 0;
  if (!rem || !take || !best_take) {
    rc = DT_ENOMEM;
    goto out;
  }
  size_t left = 0;
  long work = 0; /* shapes tried: past GREEDY_STOP the plan stops short, and is not taken */
  for (size_t s = 0; s < ns; s++) left += (rem[s] = (int64_t)shapes[s].pods.n);
  while (left && work <= GREEDY_STOP) {
    double best_eff = INFINITY;
    int32_t best = -1;
    work += (long)(ntry < nc ? ntry : nc) * (long)ns;
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
    for (int64_t full = n / bk; full > 0 && !rc; full--)
      rc = packing_add(out, (uint32_t)bt, counts, ns, by_price[bt].price);
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
int dt__pack_greedy_plans(const dt_plan *p, const rt_pool *pl, const shape *shapes, size_t ns, cand *cands,
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

/* How full node i is: its fullest resource's share of its type. */
static double node_fill(const dt_plan *p, const rt_pool *pl, const cand *by_price, const packing *k,
                        const int64_t *used, size_t i) {
  const int64_t *cap = pl->eff[by_price[k->type.v[i]].type];
  double f = 0;
  for (uint32_t r = 0; r < p->nres; r++)
    if (cap[r] > 0) f = fmax(f, (double)used[i * DT_RES_MAX + r] / (double)cap[r]);
  return f;
}

/*
** The room each node has left in its type, per resource, over the nodes in
** drain order (ord), for the fullest node that holds a pod: a segment tree
** whose every entry is the most room any node below it has in each
** resource. A subtree where some resource has less room than the pod asks
** for holds no node for it; a leaf is one node's room, so reaching one that
** passes is the exact fit test. The search goes fullest (rightmost) first
** and returns the position the scan from the fullest down would reach
** first, in about log N steps per pod rather than N. Nodes out of the
** search (emptied, or the one being drained) have no room at all.
*/
typedef struct room_tree {
  size_t leaves; /* a power of two, at least the nodes */
  uint32_t nres;
  int64_t *mx;   /* (2 * leaves) x nres; entry 1 the root, leaves from `leaves` on */
  uint32_t *pos; /* per node: its position in the drain order */
} room_tree;

#define NO_ROOM INT64_MIN

static void room_pull(room_tree *t, size_t e) {
  for (e /= 2; e >= 1; e /= 2)
    for (uint32_t r = 0; r < t->nres; r++) {
      int64_t a = t->mx[2 * e * t->nres + r], b = t->mx[(2 * e + 1) * t->nres + r];
      t->mx[e * t->nres + r] = a > b ? a : b;
    }
}

/* Position o's room: cap less used (NULL: none). */
static void room_set(room_tree *t, size_t o, const int64_t *cap, const int64_t *used) {
  int64_t *leaf = &t->mx[(t->leaves + o) * t->nres];
  for (uint32_t r = 0; r < t->nres; r++) leaf[r] = cap ? cap[r] - used[r] : NO_ROOM;
  room_pull(t, t->leaves + o);
}

static bool room_holds(const room_tree *t, size_t e, const int64_t *req) {
  for (uint32_t r = 0; r < t->nres; r++)
    if (t->mx[e * t->nres + r] < req[r]) return false;
  return true;
}

/* The rightmost position whose node holds req; -1 none. */
static ptrdiff_t room_find(const room_tree *t, const int64_t *req) {
  size_t e = 1;
  if (!room_holds(t, e, req)) return -1;
  for (;;) {
    if (e >= t->leaves) return (ptrdiff_t)(e - t->leaves);
    if (room_holds(t, 2 * e + 1, req)) {
      e = 2 * e + 1;
      continue;
    }
    if (room_holds(t, 2 * e, req)) {
      e = 2 * e;
      continue;
    }
    /* Neither child passes on its own maxima though this entry did (they
    ** came from different nodes): back up to the nearest left sibling
    ** not yet tried that passes. */
    for (;;) {
      while (e > 1 && !(e & 1)) e /= 2; /* up past left children */
      if (e <= 1) return -1;
      e = e - 1; /* the left sibling of a right child */
      if (room_holds(t, e, req)) break;
    }
  }
}

/* What emptying nodes works with: pods moved into a node join its list
** (head per node, next and shape per move), and a node's pods are its row
** in the packing and that list, gathered into row (ns, zero between uses). */
typedef struct drain_ws {
  int64_t *row;
  uint32_t *head, *next, *shape, nadd;
  uint32_t *moved; /* a drain's moves, (node, shape) pairs */
} drain_ws;

#define NO_MOVE UINT32_MAX

/* Node i's pods per shape into D->row (set), or out of it (clear). */
static void node_row(const packing *k, drain_ws *D, size_t i, bool set) {
  for (uint32_t e = k->start.v[i]; e < k->start.v[i + 1]; e++) D->row[k->shape.v[e]] = set ? k->cnt.v[e] : 0;
  for (uint32_t a = D->head[i]; a != NO_MOVE; a = D->next[a]) D->row[D->shape[a]] = set ? D->row[D->shape[a]] + 1 : 0;
}

/* Try to move every pod of node i (at position oi) into the room other
** live nodes have left in their types (the fullest that holds each pod
** first); all or nothing. */
static bool drain_one(const dt_plan *p, const rt_pool *pl, const shape *sh, size_t ns, const cand *by_price,
                      const packing *k, int64_t *used, room_tree *rt, const uint32_t *ord, size_t oi, drain_ws *D) {
  size_t nm = 0, i = ord[oi];
  bool ok = true;
  room_set(rt, oi, NULL, NULL); /* not into itself */
  node_row(k, D, i, true);
  for (size_t s = 0; s < ns && ok; s++)
    for (int64_t q = 0; q < D->row[s] && ok; q++) {
      ptrdiff_t o = room_find(rt, sh[s].req);
      ok = o >= 0;
      if (!ok) break;
      size_t j = ord[o];
      for (uint32_t r = 0; r < p->nres; r++) used[j * DT_RES_MAX + r] += sh[s].req[r];
      room_set(rt, (size_t)o, pl->eff[by_price[k->type.v[j]].type], &used[j * DT_RES_MAX]);
      D->moved[2 * nm] = (uint32_t)j;
      D->moved[2 * nm++ + 1] = (uint32_t)s;
    }
  node_row(k, D, i, false);
  for (size_t q = 0; q < nm; q++) { /* commit the moves, or undo the room taken */
    size_t j = D->moved[2 * q], s = D->moved[2 * q + 1];
    if (ok) {
      D->shape[D->nadd] = (uint32_t)s;
      D->next[D->nadd] = D->head[j];
      D->head[j] = D->nadd++;
    } else {
      for (uint32_t r = 0; r < p->nres; r++) used[j * DT_RES_MAX + r] -= sh[s].req[r];
      room_set(rt, rt->pos[j], pl->eff[by_price[k->type.v[j]].type], &used[j * DT_RES_MAX]);
    }
  }
  if (!ok) room_set(rt, oi, pl->eff[by_price[k->type.v[i]].type], &used[i * DT_RES_MAX]);
  return ok;
}

typedef struct fill_ix {
  double fill;
  uint32_t i;
} fill_ix;

static int cmp_fill(const void *a, const void *b) {
  const fill_ix *x = a, *y = b;
  if (x->fill != y->fill) return x->fill < y->fill ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

/* Empty what nodes it can into the others' room, emptiest first, and shrink
** every node left to the cheapest type that holds it; k is replaced when
** that is cheaper. Moves only ever fit a node's type: never dearer. */
static int drain_nodes(const dt_plan *p, const rt_pool *pl, const shape *sh, size_t ns, const cand *by_price,
                       uint32_t nc, packing *k) {
  size_t N = k->nodes, pods = packing_pods(k);
  int64_t *used = dt__calloc(N ? N * DT_RES_MAX : 1, sizeof *used);
  bool *alive = dt__malloc(N + 1);
  fill_ix *fx = dt__malloc((N + 1) * sizeof *fx);
  uint32_t *ord = dt__malloc((N + 1) * sizeof *ord);
  drain_ws D = {dt__calloc(ns ? ns : 1, sizeof *D.row),
                dt__malloc((N + 1) * sizeof *D.head),
                dt__malloc((pods + 1) * sizeof *D.next),
                dt__malloc((pods + 1) * sizeof *D.shape),
                0,
                dt__malloc((2 * pods + 1) * sizeof *D.moved)};
  packing nk = {0};
  room_tree rt = {1, p->nres, NULL, NULL};
  while (rt.leaves < N) rt.leaves *= 2;
  rt.mx = dt__malloc(2 * rt.leaves * (p->nres ? p->nres : 1) * sizeof *rt.mx);
  rt.pos = dt__malloc((N + 1) * sizeof *rt.pos);
  int rc = !used || !alive || !fx || !ord || !D.row || !D.head || !D.next || !D.shape || !D.moved || !rt.mx || !rt.pos
               ? DT_ENOMEM
               : 0;
  for (size_t i = 0; i < N && !rc; i++) {
    alive[i] = true;
    D.head[i] = NO_MOVE;
    for (uint32_t e = k->start.v[i]; e < k->start.v[i + 1]; e++)
      for (uint32_t r = 0; r < p->nres; r++) used[i * DT_RES_MAX + r] += k->cnt.v[e] * sh[k->shape.v[e]].req[r];
  }
  for (size_t i = 0; i < N && !rc; i++) fx[i] = (fill_ix){node_fill(p, pl, by_price, k, used, i), (uint32_t)i};
  if (!rc) qsort(fx, N, sizeof *fx, cmp_fill);
  for (size_t o = 0; o < N && !rc; o++) ord[o] = fx[o].i;
  for (size_t e = 0; e < 2 * rt.leaves * p->nres && !rc; e++) rt.mx[e] = NO_ROOM;
  for (size_t o = 0; o < N && !rc; o++) {
    size_t j = ord[o];
    rt.pos[j] = (uint32_t)o;
    room_set(&rt, o, pl->eff[by_price[k->type.v[j]].type], &used[j * DT_RES_MAX]);
  }
  for (size_t o = 0; o < N && !rc; o++)
    if (drain_one(p, pl, sh, ns, by_price, k, used, &rt, ord, o, &D)) alive[ord[o]] = false;
  for (size_t i = 0; i < N && !rc; i++) {
    if (!alive[i]) continue;
    int32_t c = cheapest_fit(p, pl, by_price, nc, &used[i * DT_RES_MAX]);
    if (c < 0) c = (int32_t)k->type.v[i];
    node_row(k, &D, i, true);
    rc = packing_add(&nk, (uint32_t)c, D.row, ns, by_price[c].price);
    node_row(k, &D, i, false);
  }
  if (!rc && nk.cost < k->cost - 1e-9) {
    packing t = *k;
    *k = nk;
    nk = t;
  }
  packing_free(&nk);
  dt__free(rt.mx);
  dt__free(rt.pos);
  dt__free(used);
  dt__free(alive);
  dt__free(fx);
  dt__free(ord);
  dt__free(D.row);
  dt__free(D.head);
  dt__free(D.next);
  dt__free(D.shape);
  dt__free(D.moved);
  return rc;
}

/* Materialise the chosen packing pk of the group claims[0..n) as claims
** into out (*replaced when it was), unless minValues or the pool's limits
** rule it out. */
static int materialise(dt_plan *p, rt_claim **claims, size_t n, const packing *pk, shape *shapes, size_t ns,
                       const cand *by_price, uint32_t nc, claim_vec *out, bool *replaced) {
  const rt_claim *k0 = claims[0];
  rt_pool *pl = &p->pools[k0->pool];
  uint32_t m = p->nres;
  int rc = 0;
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
    uint32_t e0 = pk->start.v[node], e1 = pk->start.v[node + 1];
    for (uint32_t e = e0; e < e1 && !rc; e++) {
      shape *sh = &shapes[pk->shape.v[e]];
      for (int64_t q = 0; q < pk->cnt.v[e] && !rc; q++) {
        if (dt__vec_push(&k->pods, sh->pods.v[sh->next++])) rc = DT_ENOMEM;
        for (uint32_t r = 0; r < m; r++) k->used[r] += sh->req[r];
      }
    }
    /* Options: the cheapest types that hold it (as a launch request would
    ** carry), so launch may still pick a cheaper bounded offering. A node
    ** like the one before it shares its options. */
    uint32_t p0 = node ? pk->start.v[node - 1] : 0;
    if (node > 0 && pk->type.v[node] == pk->type.v[node - 1] && e1 - e0 == e0 - p0 &&
        (e1 == e0 || (!memcmp(&pk->shape.v[e0], &pk->shape.v[p0], (e1 - e0) * sizeof *pk->shape.v) &&
                      !memcmp(&pk->cnt.v[e0], &pk->cnt.v[p0], (e1 - e0) * sizeof *pk->cnt.v)))) {
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
    return rc;
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
  return rc;
}

/* Largest first (cpu, then memory), ties in the order first seen (held in
** next while the shapes are sorted). */
static int cmp_shape(const void *a, const void *b) {
  const shape *x = a, *y = b;
  if (x->req[DT_R_CPU] != y->req[DT_R_CPU]) return x->req[DT_R_CPU] > y->req[DT_R_CPU] ? -1 : 1;
  if (x->req[DT_R_MEM] != y->req[DT_R_MEM]) return x->req[DT_R_MEM] > y->req[DT_R_MEM] ? -1 : 1;
  return (x->next > y->next) - (x->next < y->next);
}

/* A shape's requests hashed (a multiply and shift per resource). */
static size_t req_hash(const int64_t *req) {
  uint64_t h = 0x9e3779b97f4a7c15u;
  for (int r = 0; r < DT_RES_MAX; r++) {
    h = (h ^ (uint64_t)req[r]) * 0xff51afd7ed558ccdu;
    h ^= h >> 32;
  }
  return (size_t)h;
}

/* The shape table at twice its size, the n shapes so far in it. */
static int shape_slots(const shape *v, size_t n, uint32_t **slot, size_t *nslot) {
  size_t ns = *nslot * 2;
  uint32_t *t = dt__malloc(ns * sizeof *t);
  if (!t) return DT_ENOMEM;
  memset(t, 0xff, ns * sizeof *t);
  for (size_t i = 0; i < n; i++) {
    size_t h = req_hash(v[i].req) & (ns - 1);
    while (t[h] != UINT32_MAX) h = (h + 1) & (ns - 1);
    t[h] = (uint32_t)i;
  }
  dt__free(*slot);
  *slot = t;
  *nslot = ns;
  return 0;
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
  packing plans[5];
  memset(plans, 0, sizeof plans);
  double ffd_cost = 0;
  /* Shapes by request, found through an open-addressed table. */
  size_t nslot = 64;
  uint32_t *slot = dt__malloc(nslot * sizeof *slot);
  if (!slot) {
    rc = DT_ENOMEM;
    goto out;
  }
  memset(slot, 0xff, nslot * sizeof *slot);
  for (size_t i = 0; i < n; i++) {
    ffd_cost += claim_price(p, claims[i]);
    for (size_t j = 0; j < claims[i]->pods.n; j++) {
      uint32_t podi = claims[i]->pods.v[j];
      const int64_t *req = p->specs[p->pods[podi].spec].req;
      size_t h = req_hash(req) & (nslot - 1);
      while (slot[h] != UINT32_MAX && memcmp(shapes.v[slot[h]].req, req, sizeof shapes.v->req))
        h = (h + 1) & (nslot - 1);
      uint32_t s = slot[h];
      if (s == UINT32_MAX) {
        shape sh;
        memset(&sh, 0, sizeof sh);
        memcpy(sh.req, req, sizeof sh.req);
        if (dt__vec_push(&shapes, sh)) {
          rc = DT_ENOMEM;
          goto out;
        }
        slot[h] = s = (uint32_t)shapes.n - 1;
        if (2 * shapes.n > nslot && (rc = shape_slots(shapes.v, shapes.n, &slot, &nslot))) goto out;
      }
      if (dt__vec_push(&shapes.v[s].pods, podi)) {
        rc = DT_ENOMEM;
        goto out;
      }
    }
  }
  if (!isfinite(ffd_cost) || ffd_cost <= 0) goto out;
  /* Largest first: cpu, then memory; otherwise as first seen. */
  for (size_t i = 0; i < shapes.n; i++) shapes.v[i].next = i;
  qsort(shapes.v, shapes.n, sizeof *shapes.v, cmp_shape);
  for (size_t i = 0; i < shapes.n; i++) shapes.v[i].next = 0;
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
    bool unwanted = false;
    for (uint32_t r = DT_R_EPH + 1; r < m && !unwanted; r++) {
      if (!dt__is_device(p->res_names[r])) continue;
      bool asked = false;
      for (size_t s = 0; s < ns && !asked; s++) asked = shapes.v[s].req[r] > 0;
      unwanted = !asked && t->cap[r] > 0;
    }
    cands[nc++] = (cand){pl->types[i], pr, 0, unwanted};
  }
  if (!nc) goto out;
  memcpy(by_price, cands, nc * sizeof *cands);
  qsort(by_price, nc, sizeof *by_price, cmp_by_price);
  /* Plan D: column generation over node patterns; otherwise (or if it
  ** fails) the greedy plans A, B and C. Not when most pods of a group of
  ** many shapes are each of a shape of their own: a pattern is then a node
  ** of one-of-a-kind pods, pricing a knapsack over every shape for every
  ** type, which took 11 s for 100 such pods and 19 s for 1,000, where
  ** plan E (below) finds cheaper plans in milliseconds. */
  size_t total = 0;
  for (size_t s = 0; s < ns; s++) total += shapes.v[s].pods.n;
  bool have_d = false;
  if (ns <= CG_FEW || total >= 2 * ns) {
    double lp_obj = 0;
    rc = dt__pack_colgen(p, pl, shapes.v, ns, by_price, nc, cands, &plans[3], &lp_obj);
    /* Within 1% of the LP there is little for the greedy plans to find. */
    have_d = !rc && plans[3].cost <= lp_obj * 1.01;
    if (rc == DT_EINVAL) rc = 0;
    if (rc) goto out;
  }
  if (!have_d && (rc = dt__pack_greedy_plans(p, pl, shapes.v, ns, cands, by_price, nc, plans))) goto out;
  /* Plan E: with many shapes, or pods mostly of shapes of their own (where
  ** the LP's optimum is a few nodes and rounding it loses most), node-by-node
  ** fills take milliseconds and on some groups beat the LP's rounding. */
  bool fill = ns > CG_FEW || total < 2 * ns;
  if (fill && (rc = dt__pack_fill(p, pl, shapes.v, ns, by_price, nc, &plans[4])) == DT_EINVAL) rc = 0;
  if (rc) goto out;
  int best = -1;
  for (int i = 0; i < 4; i++) {
    if (!plans[i].nodes || packing_pods(&plans[i]) != total) continue;
    if (best < 0 || plans[i].cost < plans[best].cost - 1e-9) best = i;
  }
  /* Many shapes: rounding hundreds of fractional patterns leaves room in
  ** many nodes, and some nodes fit in the others' room; plan E is compared
  ** with the best of the others once both are emptied so. */
  if (best >= 0 && fill && (rc = drain_nodes(p, pl, shapes.v, ns, by_price, nc, &plans[best]))) goto out;
  if (plans[4].nodes && packing_pods(&plans[4]) == total) {
    if ((rc = drain_nodes(p, pl, shapes.v, ns, by_price, nc, &plans[4]))) goto out;
    if (best < 0 || plans[4].cost < plans[best].cost - 1e-9) best = 4;
  }
  if (best < 0 || !(plans[best].cost < ffd_cost - 1e-9)) goto out;
  rc = materialise(p, claims, n, &plans[best], shapes.v, ns, by_price, nc, out, replaced);
out:
  dt__free(slot);
  for (int i = 0; i < 5; i++) packing_free(&plans[i]);
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
