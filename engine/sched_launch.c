/*
** sched_launch.c: choosing what each claim launches as: the cheapest
** offering (or the best by a policy's score or rank hook) among the
** instance types the claim still fits, within its zones, capacity types,
** reservations and the pool's spot price limit; the claims' names; and the
** launchable options a NodeClaim lists.
*/
#include "sched_int.h"

#include <stdatomic.h>

/* ------------------------------------------------------------ launch */

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static int name_claim(dt_plan *p, rt_claim *k) {
  const char *pool = p->pools[k->pool].src->name;
  uint64_t s = p->opts.seed ^ 0x646f7665ull;
  for (const char *c = pool; *c; c++) s = (s ^ (unsigned char)*c) * 1099511628211ull;
  s ^= (uint64_t)k->idx * 0x9e3779b97f4a7c15ull;
  for (int attempt = 0; attempt < 1000; attempt++) {
    uint64_t h = splitmix(&s);
    char name[300], suf[6];
    for (int i = 0; i < 5; i++) {
      suf[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[h % 36];
      h /= 36;
    }
    suf[5] = 0;
    snprintf(name, sizeof name, "%s-%s", pool, suf);
    if (dt__sym_find(&p->syms, name)) continue; /* taken by a node, claim or label */
    k->name = dt__sym(&p->syms, name);
    return k->name ? 0 : DT_ENOMEM;
  }
  return DT_ERANGE;
}

/*
** The rank hook scores the launchable offerings of a finished claim (lower
** wins, nil excludes); ties go to the instance type name, then the zone. A
** failing hook leaves the default choice in place.
*/
static int rank_hook(dt_plan *p, rt_claim *k, const uint32_t *types, uint32_t ntypes, int32_t *bt, int32_t *bo,
                     const char **excluded) {
  rt_pool *pl = &p->pools[k->pool];
  int rc = dt__sched_use_policy(p, pl->policy);
  if (rc) return rc;
  size_t n = 0;
  for (uint32_t i = 0; i < ntypes; i++) n += p->types[types[i]].noff;
  uint32_t *idx = dt__malloc((n ? n : 1) * sizeof *idx);
  double *score = dt__malloc((n ? n : 1) * sizeof *score);
  if (!idx || !score) {
    dt__free(idx);
    dt__free(score);
    return DT_ENOMEM;
  }
  n = 0;
  for (uint32_t i = 0; i < ntypes; i++) {
    const rt_type *t = &p->types[types[i]];
    for (uint32_t o = 0; o < t->noff; o++)
      if (off_ok(&t->off[o], k->zmask, k->ctmask, pl->spot_max)) idx[n++] = p->off_base[types[i]] + o;
  }
  dt_hook_claim hc = {pl->src->name,     k->pods.n,   k->used[DT_R_CPU], k->used[DT_R_MEM] / 1000,
                      pl->launched_spot, pl->launched};
  if (n && dt__policy_rank(pl->policy, &hc, idx, n, score) == 0) {
    int32_t best = -1;
    for (size_t i = 0; i < n; i++) {
      if (isnan(score[i])) continue;
      if (best < 0 || score[i] < score[best]) {
        best = (int32_t)i;
        continue;
      }
      if (score[i] > score[best]) continue;
      const dt_hook_offer *a = &p->snapshot[idx[i]], *b = &p->snapshot[idx[best]];
      int c = strcmp(a->instance_type, b->instance_type);
      if (c < 0 || (c == 0 && strcmp(a->zone, b->zone) < 0)) best = (int32_t)i;
    }
    if (best < 0) {
      *bt = -1;
      dt_buf msg = {0};
      dt__buf_printf(&msg, "the rank hook of policy %s excluded every offering that fits", dt__policy_name(pl->policy));
      *excluded = arena_buf(p, &msg);
    } else {
      uint32_t g = idx[best];
      for (uint32_t t = 0; t < p->ntypes; t++)
        if (g >= p->off_base[t] && g < p->off_base[t] + p->types[t].noff) {
          *bt = (int32_t)t;
          *bo = (int32_t)(g - p->off_base[t]);
          break;
        }
    }
  }
  dt__free(idx);
  dt__free(score);
  return 0;
}

/*
** The score hook: score(offering) depends on the offering alone, so it is
** computed once per offering and plan, when a claim that could launch on it
** first launches, and cached; each claim then takes the lowest-scored of its
** launchable offerings natively (ties by instance type name, then zone, as
** rank's), without calling Lua. A type's best offering is memoised per
** claim masks, as type_best's. A failing hook leaves the default choice.
*/
static score_cache *score_cache_for(dt_plan *p, const dt_policy *pol) {
  for (size_t i = 0; i < p->scores.n; i++)
    if (p->scores.v[i].pol == pol) return &p->scores.v[i];
  /* a score is read only where known says it was written */
  score_cache c = {pol, A_RAW(p, (p->nsnapshot ? p->nsnapshot : 1) * sizeof(double)),
                   A(p, p->nsnapshot ? p->nsnapshot : 1)};
  if (!c.score || !c.known || dt__vec_push(&p->scores, c)) return NULL;
  return &p->scores.v[p->scores.n - 1];
}

/* The score context (schedule.h score_ctx) of claim k under policy pol; NULL
** when out of memory. */
static score_ctx *sctx_for(dt_plan *p, const rt_claim *k, const dt_policy *pol, double smax) {
  for (uint32_t i = 0; i < p->nsctx; i++) {
    score_ctx *c = &p->sctx[i];
    if (c->zmask == k->zmask && c->ctmask == k->ctmask && c->pol == pol && c->spot_max == smax) return c;
  }
  score_ctx *c = &p->sctx[p->nsctx < SCORE_CTXS ? p->nsctx++ : p->next_sctx++ % SCORE_CTXS];
  size_t n = p->ntypes ? p->ntypes : 1;
  if (!c->known && (!(c->off = A_RAW(p, n * sizeof *c->off)) || !(c->score = A_RAW(p, n * sizeof *c->score)) ||
                    !(c->known = A_RAW(p, n))))
    return NULL;
  memset(c->known, 0, n);
  c->pol = pol;
  c->zmask = k->zmask;
  c->ctmask = k->ctmask;
  c->spot_max = smax;
  return c;
}

/* Type t's scored answers are stale (an availability count of it changed). */
static void sctx_drop_type(dt_plan *p, uint32_t t) {
  for (uint32_t i = 0; i < p->nsctx; i++) p->sctx[i].known[t] = 0;
}

static int score_pick(dt_plan *p, rt_claim *k, const uint32_t *types, uint32_t ntypes, int32_t *bt, int32_t *bo,
                      const char **excluded) {
  rt_pool *pl = &p->pools[k->pool];
  int rc = dt__sched_use_policy(p, pl->policy);
  if (rc) return rc;
  score_cache *sc = score_cache_for(p, pl->policy);
  if (!sc) return DT_ENOMEM;
  double smax = pl->spot_max;
  score_ctx *cx = sctx_for(p, k, pl->policy, smax);
  if (!cx) return DT_ENOMEM;
  /* the launchable offerings of types not answered yet, scored in one batch */
  size_t nmiss = 0, cap = 0;
  for (uint32_t i = 0; i < ntypes; i++)
    if (!cx->known[types[i]]) cap += p->types[types[i]].noff;
  uint32_t *miss = cap ? dt__malloc(cap * sizeof *miss) : NULL;
  double *val = cap ? dt__malloc(cap * sizeof *val) : NULL;
  if (cap && (!miss || !val)) {
    dt__free(miss);
    dt__free(val);
    return DT_ENOMEM;
  }
  for (uint32_t i = 0; i < ntypes && cap; i++) {
    const rt_type *t = &p->types[types[i]];
    if (cx->known[types[i]]) continue;
    for (uint32_t o = 0; o < t->noff; o++) {
      uint32_t g = p->off_base[types[i]] + o;
      if (off_ok(&t->off[o], k->zmask, k->ctmask, smax) && !sc->known[g]) miss[nmiss++] = g;
    }
  }
  bool ok = !nmiss || dt__policy_score(pl->policy, miss, nmiss, val) == 0;
  for (size_t i = 0; ok && i < nmiss; i++) {
    sc->score[miss[i]] = val[i];
    sc->known[miss[i]] = 1;
  }
  dt__free(miss);
  dt__free(val);
  if (!ok) return 0; /* the default choice stands */
  int32_t best_t = -1, best_o = -1;
  double best = 0;
  bool any = false; /* any launchable offering at all */
  for (uint32_t i = 0; i < ntypes; i++) {
    uint32_t ti = types[i];
    const rt_type *t = &p->types[ti];
    if (!cx->known[ti]) {
      int32_t to = -1;
      double ts = 0;
      bool some = false; /* a launchable offering of this type */
      for (uint32_t o = 0; o < t->noff; o++) {
        if (!off_ok(&t->off[o], k->zmask, k->ctmask, smax)) continue;
        some = true;
        double v = sc->score[p->off_base[types[i]] + o];
        if (isnan(v)) continue;
        if (to < 0 || v < ts || (v == ts && p->zone_rank[t->off[o].zone] < p->zone_rank[t->off[to].zone])) {
          to = (int32_t)o;
          ts = v;
        }
      }
      cx->off[ti] = to;
      cx->score[ti] = to < 0 && some ? NAN : ts; /* -1 and NAN: offerings, all excluded; -1 and 0: none */
      cx->known[ti] = 1;
    }
    int32_t off = cx->off[ti];
    double v = cx->score[ti];
    any |= off >= 0 || isnan(v);
    if (off < 0) continue;
    if (best_t < 0 || v < best || (v == best && t->rank < p->types[best_t].rank)) {
      best_t = (int32_t)ti;
      best_o = off;
      best = v;
    }
  }
  if (!any) return 0; /* nothing launchable: as rank, the default stands */
  if (best_t < 0) {
    *bt = -1;
    dt_buf msg = {0};
    dt__buf_printf(&msg, "the score hook of policy %s excluded every offering that fits", dt__policy_name(pl->policy));
    *excluded = arena_buf(p, &msg);
    return 0;
  }
  *bt = best_t;
  *bo = best_o;
  return 0;
}

/* The policy's choice of offering for claim k among types[0..n), if it has
** one: rank's when the policy defines it (it sees the claim), else score's. */
int dt__sched_hook_pick(dt_plan *p, rt_claim *k, const uint32_t *types, uint32_t n, int32_t *bt, int32_t *bo,
                        const char **excluded) {
  dt_policy *pol = p->pools[k->pool].policy;
  if (dt__policy_has(pol, DT_HOOK_RANK)) return rank_hook(p, k, types, n, bt, bo, excluded);
  if (dt__policy_has(pol, DT_HOOK_SCORE)) return score_pick(p, k, types, n, bt, bo, excluded);
  return 0;
}

/* Whether type t has devices (GPUs, Neuron: dt__is_device) that what used[]
** asks for leaves idle. */
static bool idle_devices(const dt_plan *p, uint32_t t, const int64_t *used) {
  for (uint32_t r = DT_R_EPH + 1; used && r < p->nres; r++)
    if (p->types[t].alloc[r] > 0 && used[r] <= 0 && dt__is_device(p->res_names[r])) return true;
  return false;
}

/* Whether offering o of type t beats offering bo of type bt (bt < 0: none
** yet) under the default rank: reserved while available, then cheapest, then
** (used not NULL) a type without devices used[] leaves idle, then instance
** type name, then zone name. */
bool dt__sched_off_better(const dt_plan *p, uint32_t t, uint32_t o, int32_t bt, int32_t bo, const int64_t *used) {
  if (bt < 0) return true;
  const rt_off *of = &p->types[t].off[o], *bof = &p->types[bt].off[bo];
  bool rr = of->ct == DT_CT_RESERVED, br = bof->ct == DT_CT_RESERVED;
  if (rr != br) return rr;
  if (of->price != bof->price) return of->price < bof->price;
  if (t != (uint32_t)bt && idle_devices(p, t, used) != idle_devices(p, (uint32_t)bt, used))
    return !idle_devices(p, t, used);
  if (t != (uint32_t)bt) return p->types[t].rank < p->types[bt].rank;
  return p->zone_rank[of->zone] < p->zone_rank[bof->zone];
}

/* The best offering of type ti for claim k by the default rank (-1 if none)
** and its cheapest price. Reserved offerings count only for the units the
** claim holds; claims holding none share a memo per type and masks. */
static int32_t type_best_slow(dt_plan *p, const rt_claim *k, uint32_t ti, double *cheapest);

static inline int32_t type_best(dt_plan *p, const rt_claim *k, uint32_t ti, double *cheapest) {
  const rt_type *t = &p->types[ti];
  if (!k->held.n && t->memo_gen == p->memo_gen) {
    double smax = p->pools[k->pool].spot_max;
    for (int i = 0; i < 4; i++) {
      const struct rt_memo *m = &t->memo[i];
      if (m->zmask == k->zmask && m->ok && m->ctmask == k->ctmask && m->spot_max == smax) {
        *cheapest = m->price;
        return m->off;
      }
    }
  }
  return type_best_slow(p, k, ti, cheapest);
}

static void memo_drop(rt_type *t) {
  for (int i = 0; i < 4; i++) t->memo[i].ok = false;
  t->memo_next = 0;
}

static void memo_put(const dt_plan *p, rt_type *t, const rt_claim *k, double price, double spot_max, int32_t off) {
  if (t->memo_gen != p->memo_gen) { /* another launch's */
    memo_drop(t);
    t->memo_gen = p->memo_gen;
  }
  t->memo[t->memo_next] = (struct rt_memo){k->zmask, price, spot_max, off, k->ctmask, true};
  t->memo_next = (uint8_t)((t->memo_next + 1) % 4);
}

static int32_t type_best_slow(dt_plan *p, const rt_claim *k, uint32_t ti, double *cheapest) {
  rt_type *t = &p->types[ti];
  double smax = p->pools[k->pool].spot_max;
  int32_t bo = -1;
  double ch = INFINITY;
  for (uint32_t o = 0; o < t->noff; o++) {
    const rt_off *of = &t->off[o];
    if (!off_ok(of, k->zmask, k->ctmask, smax)) continue;
    if (of->ct == DT_CT_RESERVED) {
      bool held = false;
      for (size_t h = 0; h < k->held.n && !held; h++) held = k->held.v[h] == p->off_base[ti] + o;
      if (!held) continue;
    }
    if (of->price < ch) ch = of->price;
    if (dt__sched_off_better(p, ti, o, bo < 0 ? -1 : (int32_t)ti, bo, NULL)) bo = (int32_t)o;
  }
  if (!k->held.n) memo_put(p, t, k, ch, smax, bo);
  *cheapest = ch;
  return bo;
}

static int launch_claim(dt_plan *p, rt_claim *k, uint32_t *fin, uint32_t n, int32_t bt, int32_t bo);

/* Whether type t offers in the masks at all, availability aside; its
** cheapest such price into *price. */
static bool offers_in(const rt_type *t, uint64_t zm, uint8_t cm, double spot_max, double *price) {
  bool any = false;
  for (uint32_t o = 0; o < t->noff; o++) {
    const rt_off *of = &t->off[o];
    if (!(zm >> of->zone & 1) || !(cm >> of->ct & 1) || !dt__spot_ok(of, spot_max)) continue;
    if (!any || of->price < *price) *price = of->price;
    any = true;
  }
  return any;
}

/* A static pool's claim launches the offering chosen for it; its options
** are every type of the pool that holds what it carries, as Karpenter's
** static NodeClaim leaves the choice among them to the cloud provider. */
static int launch_fixed(dt_plan *p, rt_claim *k) {
  rt_pool *pl = &p->pools[k->pool];
  uint32_t ti = k->opt[0];
  double ch;
  int32_t bo = type_best(p, k, ti, &ch);
  uint64_t zm;
  uint8_t cm;
  masks(p, &k->reqs, &zm, &cm);
  k->zopen &= zm;
  k->copen &= cm;
  uint32_t *fin = A(p, (pl->ntypes + 1) * sizeof *fin), n = 0, at = UINT32_MAX;
  double *price = dt__malloc((pl->ntypes + 1) * sizeof *price);
  if (!fin || !price) {
    dt__free(price);
    return DT_ENOMEM;
  }
  for (uint32_t i = 0; i < pl->ntypes; i++) {
    const rt_type *t = &p->types[pl->types[i]];
    if (!fits(p, pl->eff[pl->types[i]], k->used, (int64_t[DT_RES_MAX]){0}) || !dt__type_labels_ok(p, t, &k->reqs) ||
        !offers_in(t, k->zopen, k->copen, pl->spot_max, &price[n]))
      continue;
    fin[n++] = pl->types[i];
  }
  int rc = dt__sched_sort_by_price(p, fin, price, n);
  dt__free(price);
  if (rc) return rc;
  for (uint32_t i = 0; i < n && at == UINT32_MAX; i++)
    if (fin[i] == ti) at = i;
  if (at == UINT32_MAX) fin[at = n++] = ti;
  if (at >= 600) { /* the type it launches is among the options written */
    memmove(&fin[600], &fin[599], (at - 599) * sizeof *fin);
    fin[599] = ti;
  }
  k->final = fin;
  k->nfinal = n < 600 ? n : 600;
  return launch_claim(p, k, &k->opt[0], 1, bo >= 0 ? (int32_t)ti : -1, bo);
}

/*
** The types of a pool ordered by their cheapest launchable offering under
** one claim's masks (then by name), for the claims that hold no
** reservation: those share type_best's prices, so a claim's launchable
** types in price order are this order filtered, not a sort of their own.
** Kept for a few mask sets at a time, until an availability count changes.
*/
typedef struct type_order {
  uint32_t pool;
  uint64_t zmask, gen;
  uint8_t ctmask;
  uint32_t n;
  uint32_t *types; /* arena */
} type_order;

#define TYPE_ORDERS 8

/*
** The orders an overlay's cluster keeps: at the start of a launch (no
** counted offering used yet) on offerings that are the cluster's priced
** copy, a pool's order under a claim's masks is the same in every overlay
** of the pass, so it is worked out once. kept_order_for: the entry for k's
** pool and masks (types NULL: to be filled), or NULL when none may be kept.
*/
static kept_order *kept_order_for(dt_plan *p, const rt_claim *k) {
  dt_cluster *cl = p->cl;
  if (!cl || !p->priced || p->avail_gen || k->held.n) return NULL;
  const rt_pool *pl = &p->pools[k->pool];
  for (uint32_t i = 0; i < cl->nkorder; i++) {
    kept_order *e = &cl->korder[i];
    if (e->gen == cl->priced.gen && e->pool == k->pool && e->zmask == k->zmask && e->ctmask == k->ctmask &&
        dt__pool_is(pl, e->spot_max, e->npool, e->pool_types))
      return e;
  }
  kept_order *e = &cl->korder[cl->nkorder < KEPT_ORDERS ? cl->nkorder++ : cl->next_korder++ % KEPT_ORDERS];
  memset(e, 0, sizeof *e);
  return e;
}

/* Keep o, just worked out for k, in e (out of memory: e stays empty). */
static void kept_order_fill(dt_plan *p, const rt_claim *k, kept_order *e, const type_order *o) {
  dt_plan *b = p->cl->base;
  const rt_pool *pl = &p->pools[k->pool];
  uint32_t *pt = A(b, (pl->ntypes ? pl->ntypes : 1) * sizeof *pt), *ty = A(b, (o->n ? o->n : 1) * sizeof *ty);
  int32_t *off = A(b, (o->n ? o->n : 1) * sizeof *off);
  double *pr = A(b, (o->n ? o->n : 1) * sizeof *pr);
  if (!pt || !ty || !off || !pr) return;
  memcpy(pt, pl->types, pl->ntypes * sizeof *pt);
  for (uint32_t i = 0; i < o->n; i++) {
    ty[i] = o->types[i];
    off[i] = type_best(p, k, ty[i], &pr[i]); /* the memo's, just worked out */
  }
  *e = (kept_order){k->pool, p->cl->priced.gen, pl->ntypes, o->n, k->zmask, pl->spot_max, k->ctmask, pt, ty, off, pr};
}

static const type_order *type_order_for(dt_plan *p, const rt_claim *k, type_order *cache, uint32_t *ncache,
                                        uint32_t *next, double *price) {
  for (uint32_t i = 0; i < *ncache; i++) {
    const type_order *o = &cache[i];
    if (o->pool == k->pool && o->zmask == k->zmask && o->ctmask == k->ctmask && o->gen == p->avail_gen) return o;
  }
  const rt_pool *pl = &p->pools[k->pool];
  type_order *o = &cache[*ncache < TYPE_ORDERS ? (*ncache)++ : (*next)++ % TYPE_ORDERS];
  *o = (type_order){k->pool,   k->zmask, p->avail_gen,
                    k->ctmask, 0,        A(p, (pl->ntypes ? pl->ntypes : 1) * sizeof(uint32_t))};
  if (!o->types) return NULL;
  kept_order *kept = kept_order_for(p, k);
  if (kept && kept->types) {
    memcpy(o->types, kept->types, kept->n * sizeof *o->types);
    o->n = kept->n;
    for (uint32_t i = 0; i < kept->n; i++)
      memo_put(p, &p->types[kept->types[i]], k, kept->price[i], kept->spot_max, kept->off[i]);
    return o;
  }
  for (uint32_t i = 0; i < pl->ntypes; i++) {
    double ch;
    if (type_best(p, k, pl->types[i], &ch) < 0) continue;
    price[o->n] = ch;
    o->types[o->n++] = pl->types[i];
  }
  if (dt__sched_sort_by_price(p, o->types, price, o->n)) return NULL;
  if (kept) kept_order_fill(p, k, kept, o);
  return o;
}

/*
** A claim's launchable options in the order above, each with its best
** offering, for claims that hold no reservation: many claims have equal
** option lists (each in its own array, filtered apart), so the list is
** found by a hash of the options and masks, checked in full, and a claim
** then only drops the types its pods outgrew. Kept for a few lists at a
** time, until an availability count changes.
*/
typedef struct launch_set {
  uint64_t hash, zmask, gen;
  uint32_t pool, nopt, n, cap;
  uint8_t ctmask;
  bool ok;
  uint32_t *opt;  /* the options it was built from (nopt) */
  uint32_t *type; /* launchable options, the order's order (n) */
  int32_t *off;   /* ... and each one's best offering */
  double *price;  /* ... and its price, ascending (no reserved offering: none is held) */
} launch_set;

#define LAUNCH_SETS 16

static uint64_t launch_hash(const rt_claim *k) {
  uint64_t h = 1469598103934665603ull ^ ((uint64_t)k->pool << 40 ^ (uint64_t)k->ctmask << 32 ^ k->nopt);
  h = (h ^ k->zmask) * 1099511628211ull;
  for (uint32_t i = 0; i < k->nopt; i++) h = (h ^ k->opt[i]) * 1099511628211ull;
  return h;
}

static void launch_sets_free(launch_set *ls) {
  for (int i = 0; i < LAUNCH_SETS; i++) {
    dt__free(ls[i].opt);
    dt__free(ls[i].type);
    dt__free(ls[i].off);
    dt__free(ls[i].price);
  }
}

/* k's launch set (k holds no reservation), built from ord (the pool's order
** under k's masks, NULL when k has one option at most) on a miss; NULL only
** when out of memory. member is all zero, and left so. */
static const launch_set *launch_set_for(dt_plan *p, const rt_claim *k, launch_set *sets, uint32_t *next,
                                        const type_order *ord, uint8_t *member) {
  uint64_t h = launch_hash(k);
  for (int i = 0; i < LAUNCH_SETS; i++) {
    const launch_set *s = &sets[i];
    if (s->ok && s->hash == h && s->gen == p->avail_gen && s->pool == k->pool && s->zmask == k->zmask &&
        s->ctmask == k->ctmask && s->nopt == k->nopt && !memcmp(s->opt, k->opt, k->nopt * sizeof *k->opt))
      return s;
  }
  launch_set *s = &sets[(*next)++ % LAUNCH_SETS];
  if (k->nopt > s->cap) {
    uint32_t cap = k->nopt;
    uint32_t *o = dt__realloc(s->opt, cap * sizeof *o), *t = o ? dt__realloc(s->type, cap * sizeof *t) : NULL;
    if (o) s->opt = o;
    if (t) s->type = t;
    int32_t *f = t ? dt__realloc(s->off, cap * sizeof *f) : NULL;
    if (f) s->off = f;
    double *pr = f ? dt__realloc(s->price, cap * sizeof *pr) : NULL;
    if (!pr) {
      s->ok = false;
      return NULL;
    }
    s->price = pr;
    s->cap = cap;
  }
  *s = (launch_set){h,         k->zmask, p->avail_gen, k->pool, k->nopt, 0,       s->cap,
                    k->ctmask, true,     s->opt,       s->type, s->off,  s->price};
  memcpy(s->opt, k->opt, k->nopt * sizeof *k->opt);
  double ch;
  if (ord) {
    for (uint32_t i = 0; i < k->nopt; i++) member[k->opt[i]] = 1;
    for (uint32_t i = 0; i < ord->n; i++)
      if (member[ord->types[i]]) {
        s->type[s->n] = ord->types[i];
        s->off[s->n] = type_best(p, k, ord->types[i], &ch);
        s->price[s->n++] = ch;
      }
    for (uint32_t i = 0; i < k->nopt; i++) member[k->opt[i]] = 0;
  } else {
    for (uint32_t i = 0; i < k->nopt; i++) {
      int32_t o = type_best(p, k, k->opt[i], &ch);
      if (o < 0) continue;
      s->type[s->n] = k->opt[i];
      s->off[s->n] = o;
      s->price[s->n++] = ch;
    }
  }
  return s;
}

int dt__sched_launch(dt_plan *p) {
  uint32_t most = 1;
  for (size_t ci = 0; ci < p->claims.n; ci++)
    if (p->claims.v[ci]->nopt > most) most = p->claims.v[ci]->nopt;
  for (uint32_t pi = 0; pi < p->npools; pi++)
    if (p->pools[pi].ntypes > most) most = p->pools[pi].ntypes;
  double *price = dt__malloc(most * sizeof *price);
  uint8_t *member = dt__calloc(p->ntypes ? p->ntypes : 1, 1);
  if (!price || !member) {
    dt__free(price);
    dt__free(member);
    return DT_ENOMEM;
  }
  type_order orders[TYPE_ORDERS];
  uint32_t norders = 0, next_order = 0, next_set = 0;
  launch_set sets[LAUNCH_SETS] = {0};
  /* every type's memo is another launch's, in one step */
  static _Atomic uint64_t launches;
  p->memo_gen = atomic_fetch_add(&launches, 1) + 1;
  p->nsctx = p->next_sctx = 0; /* the contexts' arrays are kept for reuse */
  /* A claim like the one before it (same options, masks and contents, no
  ** reservation, no availability count changed since) has the same
  ** launchable types and best offering: cost packing makes many such. */
  struct {
    const rt_claim *k;
    int64_t used[DT_RES_MAX];
    uint64_t gen;
    uint32_t n;
    int32_t bt, bo;
  } last = {0};
  int rc = 0;
  for (size_t ci = 0; ci < p->claims.n && !rc; ci++) {
    if ((ci & 63) == 63 && dt__cancelled(p)) {
      rc = DT_ECANCELED;
      break;
    }
    rt_claim *k = p->claims.v[ci];
    if (k->fixed) {
      rc = launch_fixed(p, k);
      continue;
    }
    k->zopen = k->zmask;
    k->copen = k->ctmask;
    const rt_claim *q = last.k;
    int64_t used[DT_RES_MAX];
    memcpy(used, k->used, sizeof used);
    if (q && q->opt == k->opt && q->nopt == k->nopt && q->pool == k->pool && q->zmask == k->zmask &&
        q->ctmask == k->ctmask && !k->held.n && last.gen == p->avail_gen && !memcmp(last.used, used, sizeof used)) {
      k->final = q->final;
      k->nfinal = q->nfinal;
      rc = launch_claim(p, k, q->final, last.n, last.bt, last.bo);
      continue;
    }
    /* Types still fitting everything, each priced by its best offering. */
    uint32_t *fin = A_RAW(p, (k->nopt ? k->nopt : 1) * sizeof *fin), n = 0;
    if (!fin) {
      rc = DT_ENOMEM;
      break;
    }
    int32_t bt = -1, bo = -1;
    const rt_off *best = NULL; /* (bt, bo)'s offering: most options lose on its price alone */
    const int64_t *const *eff = p->pools[k->pool].eff;
    static const int64_t zero[DT_RES_MAX];
#define CONSIDER(T, O)                                                                                                 \
  do {                                                                                                                 \
    const rt_off *of = &p->types[T].off[O];                                                                            \
    bool better;                                                                                                       \
    if (!best)                                                                                                         \
      better = true;                                                                                                   \
    else if ((of->ct == DT_CT_RESERVED) != (best->ct == DT_CT_RESERVED))                                               \
      better = of->ct == DT_CT_RESERVED;                                                                               \
    else if (of->price != best->price)                                                                                 \
      better = of->price < best->price;                                                                                \
    else                                                                                                               \
      better = dt__sched_off_better(p, T, (uint32_t)(O), bt, bo, k->used);                                             \
    if (better) {                                                                                                      \
      bt = (int32_t)(T);                                                                                               \
      bo = (O);                                                                                                        \
      best = of;                                                                                                       \
    }                                                                                                                  \
  } while (0)
    if (!k->held.n) { /* the shared launch set, in order: keep what still fits */
      const type_order *ord = NULL;
      if (k->nopt > 1 && !(ord = type_order_for(p, k, orders, &norders, &next_order, price))) {
        rc = DT_ENOMEM;
        break;
      }
      const launch_set *ls = launch_set_for(p, k, sets, &next_set, ord, member);
      if (!ls) {
        rc = DT_ENOMEM;
        break;
      }
      for (uint32_t i = 0; i < ls->n; i++) {
        uint32_t t = ls->type[i];
        if (!fits(p, eff[t], k->used, zero)) continue;
        if (!best || ls->price[i] <= best->price) CONSIDER(t, ls->off[i]); /* a dearer one never wins */
        fin[n++] = t;
      }
    } else {
      for (uint32_t i = 0; i < k->nopt; i++) {
        if (!fits(p, eff[k->opt[i]], k->used, zero)) continue;
        double cheapest;
        int32_t o = type_best(p, k, k->opt[i], &cheapest);
        if (o < 0) continue;
        CONSIDER(k->opt[i], o);
        price[n] = cheapest;
        fin[n++] = k->opt[i];
      }
      /* its own prices, sorted */
      if (n > 1 && (rc = dt__sched_sort_by_price(p, fin, price, n))) break;
    }
#undef CONSIDER
    k->final = fin;
    k->nfinal = n < 600 ? n : 600;
    if (!k->held.n) {
      last.k = k;
      memcpy(last.used, used, sizeof used);
      last.gen = p->avail_gen;
      last.n = n;
      last.bt = bt;
      last.bo = bo;
    } else {
      last.k = NULL;
    }
    rc = launch_claim(p, k, fin, n, bt, bo);
  }
  dt__free(price);
  dt__free(member);
  launch_sets_free(sets);
  return rc;
}

/* Launch claim k on (bt, bo) unless the rank hook decides otherwise; fin[n]
** are the types still fitting, cheapest first. */
static int launch_claim(dt_plan *p, rt_claim *k, uint32_t *fin, uint32_t n, int32_t bt, int32_t bo) {
  rt_pool *pl = &p->pools[k->pool];
  const char *excluded = NULL;
  if (bt >= 0) {
    int rc = dt__sched_hook_pick(p, k, fin, n, &bt, &bo, &excluded);
    if (rc) return rc;
  }
  if (bt < 0 && excluded) {
    for (size_t i = 0; i < k->pods.n; i++)
      if (dt__sched_unschedulable(p, k->pods.v[i], excluded)) return DT_ENOMEM;
    return 0;
  }
  if (bt < 0) {
    for (size_t i = 0; i < k->pods.n; i++)
      if (dt__sched_unschedulable(p, k->pods.v[i],
                                  "every offering of the instance types that fit is exhausted (availability counts)"))
        return DT_ENOMEM;
    return 0;
  }
  k->type = bt;
  k->off = bo;
  /* The claim requests its pods plus the DaemonSet overhead of its type. */
  const int64_t *e = p->pools[k->pool].eff[bt], *al = p->pools[k->pool].alloc[bt];
  for (uint32_t r = 0; r < p->nres; r++) k->used[r] += al[r] - e[r];
  rt_off *of = &dt__offs_mut(p, (uint32_t)bt)[bo];
  if (of->avail > 0) {
    of->avail--;
    memo_drop(&p->types[bt]);
    sctx_drop_type(p, (uint32_t)bt);
    p->avail_gen++;
  }
  /* the units this claim held are released: the chosen one is now consumed */
  for (size_t h = 0; h < k->held.n; h++)
    for (uint32_t t = 0; t < p->ntypes; t++)
      if (k->held.v[h] >= p->off_base[t] && k->held.v[h] < p->off_base[t] + p->types[t].noff)
        dt__offs_mut(p, t)[k->held.v[h] - p->off_base[t]].held--;
  k->held.n = 0;
  pl->launched++;
  if (of->ct == DT_CT_SPOT) pl->launched_spot++;
  int rc = name_claim(p, k);
  if (rc) return rc;
  p->stats.nodes++;
  p->stats.hourly_cost += of->price;
  p->stats.scheduled += k->pods.n;
  return 0;
}
