/*
** sched_solve.c: placing pods, first-fit-decreasing as Karpenter's
** scheduler: each pod tries existing and in-flight nodes, then the claims
** opened in this run (least loaded first), then a new claim from each
** NodePool by weight, relaxing its preferences in Karpenter's order when
** nothing takes it; a pod nothing takes gets the reason people read. The
** scheduler's own tests are exported read-only to explain.c at the end.
*/
#include "sched_int.h"

/* ---------------------------------------------------------- scheduling */

enum { FIT = 0, FAIL_NOW = 1, FAIL_EVER = 2 };

typedef struct run {
  dt_plan *p;
  bool reserved_error;      /* the last attempt hit a ReservedOfferingError */
  DT_VEC(rt_claim *) order; /* open claims, (pods, idx) ascending */
  DT_VEC(uint32_t) bstart;  /* per pod count: where its block of the order starts (reorder) */
  uint32_t *nfailed;        /* per class: how many claims in order it can never join */
  size_t nfailed_cap;
  DT_VEC(uint64_t) open; /* per claim (by idx): a bit set while it is in order */
  DT_VEC(uint32_t) at;   /* per claim (by idx): its position in order */
  DT_VEC(uint64_t) cand; /* scratch: (position << 32 | idx) of the claims a class may join */
  /* The component-wise minimum of the requests from each queue position to
  ** its end, in runs: it only grows along the queue (which is sorted largest
  ** first) and changes at few positions. Runs are kept last first: run k
  ** holds from minat[k] up to the start of run k - 1, its minimum at
  ** minrun[k * nres]; mincur is the run at the position last asked for
  ** (positions are asked in order, so it only moves towards 0). */
  DT_VEC(uint32_t) minat;
  DT_VEC(int64_t) minrun;
  size_t mincur;
  uint64_t *offz;              /* offered_zones */
  uint64_t *allz;              /* offered_zones: per pool and capacity type, the zones all its types offer */
  bool zones_borrowed;         /* offz and allz are the cluster's (zones_match) */
  int64_t failmin[DT_RES_MAX]; /* min over pods that failed in this pass */
  uint32_t pos, qlen;
  uint32_t *scratch; /* a claim's options filtered, before they are kept (p->ntypes) */
  dt_req *mscratch;  /* claim_add's merged requirements, before they are kept */
  size_t mcap;
  /* the last topology failure, for the unschedulable reason */
  int32_t topo_fail_class;
  uint32_t topo_fail;
} run;

bool dt__sched_pool_ok(dt_plan *p, rt_class *c, uint32_t pi) {
  if (c->pool_ok[pi] < 0) {
    rt_pool *pl = &p->pools[pi];
    const dt_req *bad;
    c->pool_ok[pi] = (int8_t)(tolerates(p, c->spec, pl->taints, pl->ntaints, c->tol_pref, NULL) &&
                              compatible(p, &pl->reqs, &c->reqs, &bad) &&
                              !dt__sched_ports_conflict(p, p->specs[c->spec_idx].ports, p->specs[c->spec_idx].nports,
                                                        pl->ds_ports, pl->nds_ports));
  }
  return c->pool_ok[pi];
}

static int node_fits(run *R, uint32_t ni, rt_class *c, uint64_t *Z, uint8_t *C) {
  dt_plan *p = R->p;
  rt_node *n = &p->nodes[ni];
  /* a Node or claim being deleted takes no new pods, as Karpenter leaves nodes marked for deletion out */
  if (n->closed || n->src->sim_closed || machine_deleting(n)) return FAIL_EVER;
  /* Cordoned, or a registered Node not Ready (an in-flight NodeClaim is not
  ** Ready yet by nature): only pods that tolerate its taint. */
  const char *ct = node_condition_taint(n);
  if (ct && !tolerates_taint(c->spec, ct, "", "NoSchedule")) return FAIL_EVER;
  if (!fits(p, n->alloc, n->used, c->req)) return FAIL_EVER;
  if (!tolerates(p, c->spec, n->taints, n->ntaints, c->tol_pref, NULL)) return FAIL_EVER;
  if (!node_labels_match(p, n, &c->reqs)) return FAIL_EVER;
  const rt_spec *s = &p->specs[c->spec_idx];
  if (dt__sched_ports_conflict(p, s->ports, s->nports, n->ports.v, n->ports.n)) return FAIL_EVER;
  if (n->nvlim && s->ncsi && !dt__sched_vols_fit(n, s, NULL)) return FAIL_EVER; /* its CSINode's volume limit */
  *Z = node_zmask(n);
  *C = node_cmask(n);
  if (c->topo) {
    uint32_t why;
    int t = dt__topo_check(p, c, ni, NULL, UINT32_MAX, Z, C, NULL, &why);
    if (t) return t;
  }
  return FIT;
}

static bool class_failed(rt_class *c, uint32_t idx) {
  uint32_t w = idx / 64;
  return w < c->nfail_words && (c->claim_failed[w] >> (idx % 64) & 1);
}

static int set_failed(rt_class *c, uint32_t idx) {
  uint32_t w = idx / 64;
  if (w >= c->nfail_words) {
    uint32_t nw = w + 1 > c->nfail_words * 2 ? w + 1 : c->nfail_words * 2;
    uint64_t *b = dt__realloc(c->claim_failed, nw * sizeof *b);
    if (!b) return DT_ENOMEM;
    memset(b + c->nfail_words, 0, (nw - c->nfail_words) * sizeof *b);
    c->claim_failed = b;
    c->nfail_words = nw;
  }
  c->claim_failed[w] |= 1ull << (idx % 64);
  return 0;
}

/* Karpenter's strict minValues: the options must keep N distinct values. */
bool dt__min_values_ok(const dt_plan *p, const dt_reqs *r, const uint32_t *opt, uint32_t n) {
  for (uint32_t i = 0; i < r->n; i++) {
    int32_t need = r->r[i].min_values;
    if (need <= 0) continue;
    dt_sym key = r->r[i].key;
    int16_t slot = slot_of(p, key);
    dt_sym seen[64];
    int32_t nseen = 0;
    for (uint32_t k = 0; k < n && nseen < need; k++) {
      dt_sym v = key == p->k_type ? p->types[opt[k]].name : slot >= 0 ? p->types[opt[k]].lv[slot] : 0;
      if (!v) continue;
      bool dup = false;
      for (int32_t q = 0; q < nseen && !dup; q++) dup = seen[q] == v;
      if (!dup && nseen < 64) seen[nseen++] = v;
    }
    if (nseen < need) return false;
  }
  return true;
}

/* Whether zones z (one mask per capacity type) meet masks zm, cm. */
static inline bool zones_meet(const uint64_t *z, uint64_t zm, uint8_t cm) {
  return ((cm & 1) && (z[0] & zm)) || ((cm >> 1 & 1) && (z[1] & zm)) || ((cm >> 2 & 1) && (z[2] & zm));
}

/* Whether type ti has an offering a claim of pool pi with masks zm, cm may
** launch (type_offered, through R->offz). */
static inline bool offered(const run *R, uint32_t pi, uint32_t ti, uint64_t zm, uint8_t cm) {
  return zones_meet(&R->offz[((size_t)pi * R->p->ntypes + ti) * DT_CT_N], zm, cm);
}

/* Options of k that fit used + req under requirements nr and masks. */
static uint32_t filter_options(const run *R, const rt_pool *pl, const uint32_t *opt, uint32_t nopt, const int64_t *used,
                               const int64_t *req, const dt_reqs *nr, bool labels, uint64_t zm, uint8_t cm,
                               uint32_t *out) {
  const dt_plan *p = R->p;
  uint32_t pi = (uint32_t)(pl - p->pools), n = 0;
  bool every = zones_meet(&R->allz[(size_t)pi * DT_CT_N], zm, cm); /* then every option is offered */
  for (uint32_t i = 0; i < nopt; i++) {
    if ((every || offered(R, pi, opt[i], zm, cm)) && fits(p, pl->eff[opt[i]], used, req) &&
        (!labels || dt__type_labels_ok(p, &p->types[opt[i]], nr))) {
      if (out) out[n] = opt[i];
      n++;
    }
  }
  return n;
}

/* Whether p's offerings are its cluster's priced copy's, unchanged: an
** overlay that started from the copy and has written none. */
static bool shares_priced(const dt_plan *p) {
  return p->cl && p->priced == PRICED_COPY && p->own && !memchr(p->own, 1, p->ntypes);
}

/* Whether the cluster's kept zones were found for p's pools (and p shares
** the priced copy they were found under). */
static bool zones_match(const dt_plan *p) {
  const dt_cluster *cl = p->cl;
  if (!shares_priced(p) || !cl->zones.gen || cl->zones.gen != cl->priced.gen || cl->zones.npools != p->npools)
    return false;
  size_t at = 0;
  for (uint32_t pi = 0; pi < p->npools; pi++) {
    if (!dt__pool_is(&p->pools[pi], cl->zones.spot_max[pi], cl->zones.ntypes[pi], &cl->zones.types[at])) return false;
    at += cl->zones.ntypes[pi];
  }
  return true;
}

/* Keep R's zones in the cluster for the overlays after it, in its base's
** arena (out of memory: none kept). */
static void zones_keep(run *R) {
  const dt_plan *p = R->p;
  dt_cluster *cl = p->cl;
  dt_plan *b = cl->base;
  size_t per = (size_t)p->ntypes * DT_CT_N, n = p->npools * per, nt = 0;
  for (uint32_t pi = 0; pi < p->npools; pi++) nt += p->pools[pi].ntypes;
  uint32_t np = p->npools ? p->npools : 1;
  cl->zones.gen = 0;
  cl->zones.offz = A_RAW(b, (n ? n : 1) * sizeof *cl->zones.offz);
  cl->zones.allz = A_RAW(b, np * DT_CT_N * sizeof *cl->zones.allz);
  cl->zones.spot_max = A_RAW(b, np * sizeof *cl->zones.spot_max);
  cl->zones.ntypes = A_RAW(b, np * sizeof *cl->zones.ntypes);
  cl->zones.types = A_RAW(b, (nt ? nt : 1) * sizeof *cl->zones.types);
  if (!cl->zones.offz || !cl->zones.allz || !cl->zones.spot_max || !cl->zones.ntypes || !cl->zones.types) return;
  memcpy(cl->zones.offz, R->offz, n * sizeof *R->offz);
  memcpy(cl->zones.allz, R->allz, p->npools * DT_CT_N * sizeof *R->allz);
  size_t at = 0;
  for (uint32_t pi = 0; pi < p->npools; pi++) {
    const rt_pool *pl = &p->pools[pi];
    cl->zones.spot_max[pi] = pl->spot_max;
    cl->zones.ntypes[pi] = pl->ntypes;
    if (pl->ntypes) memcpy(&cl->zones.types[at], pl->types, pl->ntypes * sizeof *pl->types);
    at += pl->ntypes;
  }
  cl->zones.npools = p->npools;
  cl->zones.gen = cl->priced.gen;
}

/* R->offz: per pool, type and capacity type, the zones where the type has an
** offering a claim of the pool may launch (off_ok with every zone and
** capacity type allowed); R->allz: per pool and capacity type, the zones
** where every type of the pool has one (a claim whose masks meet them needs
** no test per option). Offerings do not change while pods are placed:
** counts are spent at launch. */
static int offered_zones(run *R) {
  const dt_plan *p = R->p;
  size_t per = (size_t)p->ntypes * DT_CT_N;
  size_t n = p->npools * per;
  if (zones_match(p)) { /* what the loop below would find again */
    R->offz = p->cl->zones.offz;
    R->allz = p->cl->zones.allz;
    R->zones_borrowed = true;
    return 0;
  }
  if (!(R->offz = dt__calloc(n ? n : 1, sizeof *R->offz)) ||
      !(R->allz = dt__malloc((p->npools ? p->npools : 1) * DT_CT_N * sizeof *R->allz)))
    return DT_ENOMEM;
  for (uint32_t pi = 0; pi < p->npools; pi++) {
    for (uint32_t ti = 0; ti < p->ntypes; ti++) {
      const rt_type *t = &p->types[ti];
      for (uint32_t o = 0; o < t->noff; o++)
        if (off_ok(&t->off[o], ~0ull, 0xff, p->pools[pi].spot_max))
          R->offz[pi * per + (size_t)ti * DT_CT_N + t->off[o].ct] |= 1ull << t->off[o].zone;
    }
    const rt_pool *pl = &p->pools[pi];
    for (int ct = 0; ct < DT_CT_N; ct++) {
      uint64_t z = ~0ull;
      for (uint32_t i = 0; i < pl->ntypes; i++) z &= R->offz[pi * per + (size_t)pl->types[i] * DT_CT_N + ct];
      R->allz[pi * DT_CT_N + ct] = pl->ntypes ? z : 0;
    }
  }
  if (shares_priced(p)) zones_keep(R);
  return 0;
}

/*
** Karpenter's reservation manager (reservationmanager.go, nodeclaim.go
** offeringsToReserve): a claim holds one unit of every reserved offering any
** of its options could launch on, because the launch, not the scheduler,
** picks the type; units it can no longer use are released. Strict mode: a
** claim that could use a reservation but holds none (the units are held by
** other claims), or that would lose all the reservations it held, is a
** ReservedOfferingError — the pod waits for the next plan rather than falling
** through to another offering or a lower-weight NodePool.
** Returns 0 and sets *ok, or DT_ENOMEM.
*/
static int reserve(dt_plan *p, rt_claim *k, const uint32_t *opt, uint32_t nopt, uint64_t zm, uint8_t cm, bool *ok) {
  const rt_pool *pl = &p->pools[k->pool];
  *ok = true;
  if (!pl->has_reserved) return 0;
  DT_VEC(uint32_t) want = {0};
  bool compatible_exists = false;
  for (uint32_t i = 0; i < nopt; i++) {
    const rt_type *t = &p->types[opt[i]];
    for (uint32_t o = 0; o < t->noff; o++) {
      const rt_off *of = &t->off[o];
      if (of->ct != DT_CT_RESERVED || !off_ok(of, zm, cm, pl->spot_max)) continue;
      compatible_exists = true;
      if (dt__vec_push(&want, p->off_base[opt[i]] + o)) {
        dt__free(want.v);
        return DT_ENOMEM;
      }
    }
  }
  /* What k keeps, and what it can newly take. */
  DT_VEC(uint32_t) next = {0};
  int rc = 0;
  for (size_t i = 0; i < want.n && !rc; i++) {
    uint32_t g = want.v[i];
    bool has = false;
    for (size_t h = 0; h < k->held.n && !has; h++) has = k->held.v[h] == g;
    const rt_off *of = NULL;
    for (uint32_t t = 0; t < p->ntypes && !of; t++)
      if (g >= p->off_base[t] && g < p->off_base[t] + p->types[t].noff) of = &p->types[t].off[g - p->off_base[t]];
    if (has || of->avail < 0 || of->avail - of->held > 0)
      if (dt__vec_push(&next, g)) rc = DT_ENOMEM;
  }
  if (!rc && ((compatible_exists && !next.n) || (k->had_reserved && !next.n))) *ok = false;
  if (!rc && *ok) {
    /* release what is no longer compatible, take what is new */
    for (size_t h = 0; h < k->held.n; h++) {
      bool keep = false;
      for (size_t i = 0; i < next.n && !keep; i++) keep = next.v[i] == k->held.v[h];
      if (keep) continue;
      for (uint32_t t = 0; t < p->ntypes; t++)
        if (k->held.v[h] >= p->off_base[t] && k->held.v[h] < p->off_base[t] + p->types[t].noff)
          dt__offs_mut(p, t)[k->held.v[h] - p->off_base[t]].held--;
    }
    for (size_t i = 0; i < next.n; i++) {
      bool had = false;
      for (size_t h = 0; h < k->held.n && !had; h++) had = k->held.v[h] == next.v[i];
      if (had) continue;
      for (uint32_t t = 0; t < p->ntypes; t++)
        if (next.v[i] >= p->off_base[t] && next.v[i] < p->off_base[t] + p->types[t].noff)
          dt__offs_mut(p, t)[next.v[i] - p->off_base[t]].held++;
    }
    dt__free(k->held.v);
    k->held.v = next.v;
    k->held.n = next.n;
    k->held.cap = next.cap;
    next.v = NULL;
    k->had_reserved |= k->held.n > 0;
  }
  dt__free(next.v);
  dt__free(want.v);
  return rc;
}

/* k->optmax (schedule.h) for k's options now. */
static void set_optmax(const dt_plan *p, rt_claim *k) {
  const int64_t *const *eff = p->pools[k->pool].eff;
  for (uint32_t r = 0; r < p->nres; r++) k->optmax[r] = INT64_MIN;
  for (uint32_t i = 0; i < k->nopt; i++)
    for (uint32_t r = 0; r < p->nres; r++)
      k->optmax[r] = eff[k->opt[i]][r] > k->optmax[r] ? eff[k->opt[i]][r] : k->optmax[r];
  k->has_optmax = k->nopt > 0;
}

/* out[r]: the most capacity any of types opt[0..n) has of resource r (0 when none). */
static void cap_max(const dt_plan *p, const uint32_t *opt, uint32_t n, int64_t *out) {
  for (uint32_t r = 0; r < p->nres; r++) out[r] = 0;
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t r = 0; r < p->nres; r++) out[r] = p->types[opt[i]].cap[r] > out[r] ? p->types[opt[i]].cap[r] : out[r];
}

/* Try to add a pod of class ci to claim k. */
static int claim_add(run *R, rt_claim *k, uint32_t ci, uint32_t podi, int *res) {
  dt_plan *p = R->p;
  rt_class *c = &p->classes.v[ci];
  rt_pool *pl = &p->pools[k->pool];
  *res = FAIL_EVER;
  if (!dt__sched_pool_ok(p, c, k->pool)) return 0;
  const rt_spec *s = &p->specs[c->spec_idx];
  if (dt__sched_ports_conflict(p, s->ports, s->nports, k->ports.v, k->ports.n)) return 0;
  dt_reqs nr = k->reqs;
  uint64_t zm = k->zmask;
  uint8_t cm = k->ctmask;
  bool changed = false, reqs_changed = false; /* the claim's options all meet k->reqs already */
  if (c->reqs.n) {
    const dt_req *bad;
    if (!compatible(p, &k->reqs, &c->reqs, &bad)) return 0;
    /* Merged in scratch space, kept in the arena only when it narrows the
    ** claim: a pod per claim tried, and most change nothing (20,000
    ** replicas of a pod selecting on 5 of a NodePool's 100 labels kept
    ** 100 MB of copies). */
    size_t need = (size_t)k->reqs.n + c->reqs.n;
    if (need > R->mcap) {
      dt_req *g = dt__realloc(R->mscratch, need * sizeof *g);
      if (!g) return DT_ENOMEM;
      R->mscratch = g;
      R->mcap = need;
    }
    dt__reqs_merge_into(&p->arena, &p->syms, &k->reqs, &c->reqs, R->mscratch, &nr);
    changed = reqs_changed = !dt__reqs_equal(&nr, &k->reqs);
    if (!changed)
      nr = k->reqs;
    else {
      dt_req *keep = dt__arena_raw(&p->arena, nr.n * sizeof *keep);
      if (!keep) return DT_ENOMEM;
      memcpy(keep, nr.r, nr.n * sizeof *keep);
      nr.r = keep;
    }
    if (changed) {
      uint64_t z2;
      uint8_t c2;
      masks(p, &nr, &z2, &c2);
      zm &= z2;
      cm &= c2;
    }
  }
  /* Resources first: no option fitting is final for this claim and class,
  ** whatever topology says, and it is the cheap test. */
  if (k->has_optmax && !fits(p, k->optmax, k->used, c->req)) return 0;
  uint32_t first = 0;
  while (first < k->nopt && !fits(p, pl->eff[k->opt[first]], k->used, c->req)) first++;
  if (first == k->nopt) {
    if (!k->has_optmax) set_optmax(p, k);
    return 0;
  }
  /* A static claim's type and offering were chosen before any pod: a pod
  ** takes it as it is or not at all. */
  if (k->fixed && changed && (!dt__type_labels_ok(p, &p->types[k->opt[0]], &nr) || !zm || !cm)) return 0;
  if (c->topo) {
    uint32_t why;
    topo_pins pins;
    int t = dt__topo_check(p, c, p->nnodes + k->idx, &nr, UINT32_MAX, &zm, &cm, &pins, &why);
    if (t) {
      *res = t;
      R->topo_fail_class = (int32_t)ci;
      R->topo_fail = why;
      return 0;
    }
    changed |= zm != k->zmask || cm != k->ctmask;
    if (pins.n && dt__topo_pin(p, &pins, &nr)) /* a value of a custom topology key taken */
      changed = reqs_changed = true;
  }
  if (k->fixed) {
    if (!zm || !cm) {
      *res = FAIL_NOW;
      return 0;
    }
    k->reqs = nr;
  } else if (!changed && !pl->has_min_values && !pl->has_reserved) {
    k->opt += first;
    k->nopt -= first;
  } else {
    uint32_t *opt = R->scratch; /* kept in the arena only once the pod joins */
    uint32_t keep = filter_options(R, pl, k->opt, k->nopt, k->used, c->req, &nr, reqs_changed, zm, cm, opt);
    if (!keep) {
      *res = c->topo ? FAIL_NOW : FAIL_EVER;
      return 0;
    }
    if (pl->has_min_values && !dt__min_values_ok(p, &nr, opt, keep)) return 0;
    bool rok;
    int rrc = reserve(p, k, opt, keep, zm, cm, &rok);
    if (rrc) return rrc;
    if (!rok) {
      *res = FAIL_NOW;
      R->reserved_error = true;
      return 0;
    }
    if (!(k->opt = A_RAW(p, (keep ? keep : 1) * sizeof *k->opt))) return DT_ENOMEM;
    memcpy(k->opt, opt, keep * sizeof *opt);
    k->nopt = keep;
    k->reqs = nr;
    k->zmask = zm;
    k->ctmask = cm;
  }
  for (uint32_t r = 0; r < p->nres; r++) k->used[r] += c->req[r];
  if (dt__vec_push(&k->pods, podi)) return DT_ENOMEM;
  for (uint32_t q = 0; q < s->nports; q++)
    if (dt__vec_push(&k->ports, s->ports[q])) return DT_ENOMEM;
  int rc = dt__topo_record(p, p->pods[podi].spec, c, p->nnodes + k->idx, k->zmask, k->ctmask, 1, p->pods[podi].ordinal);
  if (rc) return rc;
  *res = FIT;
  return 0;
}

/* The order is kept in blocks of claims holding equally many pods, the
** blocks by count ascending and contiguous: block c is positions
** [bstart[c], bstart[c + 1]) (the last block ends at order.n). A claim that
** gains a pod trades places with the last claim of its block and the block
** boundary moves past it, so it heads the next block; a claim opening or
** leaving shifts one claim per block. Each costs O(1) or O(blocks), never a
** walk over claims of one size, of which there may be thousands. Within a
** block the order is this history's, as Karpenter's (an unstable sort of
** its new NodeClaims by pod count before each pod) is its sort's. */
static void order_set(run *R, size_t i, rt_claim *k) {
  R->order.v[i] = k;
  R->at.v[k->idx] = (uint32_t)i;
}

/* Where block c ends: the next block's start, or the order's end. */
static size_t block_end(const run *R, size_t c) { return c + 1 < R->bstart.n ? R->bstart.v[c + 1] : R->order.n; }

/* The claim at position i gained a pod: from block pods.n - 1 to pods.n. */
static int reorder(run *R, size_t i) {
  rt_claim *k = R->order.v[i];
  size_t c = k->pods.n - 1, last = block_end(R, c) - 1;
  if (k->pods.n >= R->bstart.n && dt__vec_push(&R->bstart, (uint32_t)R->order.n)) return DT_ENOMEM;
  order_set(R, i, R->order.v[last]);
  order_set(R, last, k);
  R->bstart.v[c + 1]--;
  return 0;
}

/* Claim k, with one pod, joins the order at the end of block 1: the first
** claim of each later block moves to that block's end, one slot on. An
** empty block only moves its start: its start is then the slot just
** vacated, whose stale entry must not be "moved" onto itself (that would
** point the claim it names at the wrong position). */
static int order_push(run *R, rt_claim *k) {
  if (dt__vec_push(&R->order, k)) return DT_ENOMEM;
  while (R->at.n <= k->idx)
    if (dt__vec_push(&R->at, 0u)) return DT_ENOMEM;
  while (R->open.n <= k->idx / 64)
    if (dt__vec_push(&R->open, (uint64_t)0)) return DT_ENOMEM;
  R->open.v[k->idx / 64] |= 1ull << (k->idx % 64);
  while (R->bstart.n < 2)
    if (dt__vec_push(&R->bstart, (uint32_t)(R->order.n - 1))) return DT_ENOMEM;
  size_t free = R->order.n - 1;
  for (size_t c = R->bstart.n; c-- > 2;) {
    if (R->bstart.v[c] != free) order_set(R, free, R->order.v[R->bstart.v[c]]);
    free = R->bstart.v[c]++;
  }
  order_set(R, free, k);
  return 0;
}

/* The claim at position i leaves the order: the last claim of its block
** takes its place, and the last claim of each later block moves to the
** slot before that block; an empty block only moves its start (as in
** order_push). */
static void order_remove(run *R, size_t i) {
  rt_claim *k = R->order.v[i];
  R->open.v[k->idx / 64] &= ~(1ull << (k->idx % 64));
  size_t c = k->pods.n, free = block_end(R, c) - 1;
  assert(i < R->order.n && R->at.v[k->idx] == i && c < R->bstart.n && i >= R->bstart.v[c] && i <= free);
  order_set(R, i, R->order.v[free]);
  for (size_t b = c + 1; b < R->bstart.n; b++) {
    size_t end = block_end(R, b);
    if (end - 1 != free) order_set(R, free, R->order.v[end - 1]);
    free = end - 1;
    R->bstart.v[b]--;
  }
  R->order.n--;
}

/* Whether no option of k can take even the smallest pod still to try. */
static bool claim_full(run *R, rt_claim *k) {
  dt_plan *p = R->p;
  int64_t mn[DT_RES_MAX];
  memcpy(mn, R->failmin, sizeof mn);
  if (R->pos + 1 < R->qlen) {
    while (R->mincur > 0 && R->minat.v[R->mincur - 1] <= R->pos + 1) R->mincur--;
    const int64_t *q = &R->minrun.v[R->mincur * p->nres];
    for (uint32_t r = 0; r < p->nres; r++) mn[r] = q[r] < mn[r] ? q[r] : mn[r];
  }
  for (uint32_t i = 0; i < k->nopt; i++)
    if (fits(p, p->pools[k->pool].eff[k->opt[i]], k->used, mn)) return false;
  return true;
}

/* The types whose labels nr allows, a bit each, as an overlay's cluster
** keeps them (dt_cluster.labeled); NULL when nr names a symbol the cluster's
** base does not have, or out of memory. */
static const uint64_t *cluster_labeled(dt_plan *p, const dt_reqs *nr) {
  dt_cluster *cl = p->cl;
  for (uint32_t i = 0; i < cl->nlabeled; i++)
    if (dt__reqs_equal(&cl->labeled[i].nr, nr)) return cl->labeled[i].ok;
  dt_arena *a = &cl->base->arena;
  uint32_t nsym = (uint32_t)cl->base->syms.n;
  for (uint32_t i = 0; i < nr->n; i++) {
    if (nr->r[i].key >= nsym) return NULL;
    for (uint32_t v = 0; v < nr->r[i].n; v++)
      if (nr->r[i].v[v] >= nsym) return NULL;
  }
  dt_reqs keep = {nr->n, dt__arena_raw(a, (nr->n ? nr->n : 1) * sizeof *keep.r)};
  uint64_t *ok = dt__arena_alloc(a, ((p->ntypes + 63) / 64 + 1) * sizeof *ok);
  if (!keep.r || !ok) return NULL;
  for (uint32_t i = 0; i < nr->n; i++) {
    keep.r[i] = nr->r[i];
    if (nr->r[i].n && !(keep.r[i].v = dt__arena_raw(a, nr->r[i].n * sizeof *keep.r[i].v))) return NULL;
    if (nr->r[i].n) memcpy(keep.r[i].v, nr->r[i].v, nr->r[i].n * sizeof *keep.r[i].v);
  }
  for (uint32_t t = 0; t < p->ntypes; t++)
    if (dt__type_labels_ok(p, &p->types[t], nr)) ok[t >> 6] |= 1ull << (t & 63);
  uint32_t at = cl->nlabeled < 16 ? cl->nlabeled++ : cl->next_labeled++ % 16;
  cl->labeled[at].nr = keep;
  cl->labeled[at].ok = ok;
  return ok;
}

/* Class ci's options on pool pi before topology, limits and offerings. */
static rt_popt *pool_options(dt_plan *p, uint32_t ci, uint32_t pi) {
  rt_class *c = &p->classes.v[ci];
  const rt_pool *pl = &p->pools[pi];
  if (!c->popt && !(c->popt = A(p, p->npools * sizeof *c->popt))) return NULL;
  rt_popt *po = &c->popt[pi];
  if (po->ready) return po;
  dt__reqs_merge(&p->arena, &p->syms, &pl->reqs, &c->reqs, &po->nr);
  masks(p, &po->nr, &po->zm, &po->cm);
  if (!(po->opt = A(p, (pl->ntypes ? pl->ntypes : 1) * sizeof *po->opt))) return NULL;
  const uint64_t *lab = p->cl ? cluster_labeled(p, &po->nr) : NULL;
  static const int64_t zero[DT_RES_MAX];
  for (uint32_t i = 0; i < pl->ntypes; i++) {
    uint32_t t = pl->types[i];
    if (fits(p, pl->eff[t], zero, c->req) &&
        (lab ? lab[t >> 6] >> (t & 63) & 1 : dt__type_labels_ok(p, &p->types[t], &po->nr)))
      po->opt[po->n++] = t;
  }
  po->ready = true;
  return po;
}

static int new_claim(run *R, uint32_t ci, uint32_t podi, int *res) {
  dt_plan *p = R->p;
  *res = FAIL_EVER;
  for (uint32_t pi = 0; pi < p->npools; pi++) {
    rt_class *c = &p->classes.v[ci];
    rt_pool *pl = &p->pools[pi];
    if (pl->replicas >= 0 || !dt__sched_pool_ok(p, c, pi) || pl->nodes_remaining == 0 || !pl->ntypes) continue;
    rt_popt *po = pool_options(p, ci, pi);
    if (!po) return DT_ENOMEM;
    dt_reqs nr = po->nr;
    uint64_t zm = po->zm;
    uint8_t cm = po->cm;
    uint32_t host = p->nnodes + (uint32_t)p->claims.n;
    topo_pins pins = {0};
    if (c->topo) {
      uint32_t why;
      int t = dt__topo_check(p, c, host, &nr, pi, &zm, &cm, &pins, &why);
      if (t) {
        if (*res == FAIL_EVER || t == FAIL_NOW) *res = FAIL_NOW; /* a new claim may work later */
        R->topo_fail_class = (int32_t)ci;
        R->topo_fail = why;
        continue;
      }
    }
    uint32_t *opt, n = 0, lim[DT_RES_MAX], nlim = 0;
    for (uint32_t r = 0; pl->has_limits && r < p->nres; r++)
      if (pl->remaining[r] != INT64_MAX) lim[nlim++] = r;
    const rt_newopt *e = NULL;
    bool far = true; /* no option's capacity passes a limit's remainder */
    if (nlim && !po->capmax) {
      if (!(po->capmax = A(p, p->nres * sizeof *po->capmax))) return DT_ENOMEM;
      cap_max(p, po->opt, po->n, po->capmax);
    }
    for (uint32_t l = 0; l < nlim && far; l++) far = po->capmax[lim[l]] <= pl->remaining[lim[l]];
    for (uint32_t i = 0; far && i < po->nmemo && !e; i++)
      if (po->memo[i].zm == zm && po->memo[i].cm == cm) e = &po->memo[i];
    if (e) {
      opt = e->opt;
      n = e->n;
    } else {
      if (!(opt = A_RAW(p, (po->n ? po->n : 1) * sizeof *opt))) return DT_ENOMEM;
      for (uint32_t i = 0; i < po->n; i++) {
        const rt_type *t = &p->types[po->opt[i]];
        bool over = false;
        for (uint32_t l = 0; l < nlim && !over; l++) over = t->cap[lim[l]] > pl->remaining[lim[l]];
        if (!over && offered(R, pi, po->opt[i], zm, cm)) opt[n++] = po->opt[i];
      }
      if (far) {
        if (!po->memo && !(po->memo = A(p, NEWOPT_MEMO * sizeof *po->memo))) return DT_ENOMEM;
        rt_newopt *m = &po->memo[po->nmemo < NEWOPT_MEMO ? po->nmemo++ : po->next_memo++ % NEWOPT_MEMO];
        *m = (rt_newopt){zm, cm, n, opt, {0}};
        cap_max(p, opt, n, m->mx);
        e = m;
      }
    }
    /* a value of a custom topology key taken: on a key of the types' labels,
    ** only the types with that value stay options */
    if (pins.n && dt__topo_pin(p, &pins, &nr) && dt__topo_pins_type_key(p, &pins)) {
      uint32_t *keep = A_RAW(p, (n ? n : 1) * sizeof *keep), m = 0;
      if (!keep) return DT_ENOMEM;
      for (uint32_t i = 0; i < n; i++)
        if (dt__type_labels_ok(p, &p->types[opt[i]], &nr)) keep[m++] = opt[i];
      opt = keep;
      n = m;
      e = NULL; /* its largest capacities were the options' before */
    }
    if (!n || (pl->has_min_values && !dt__min_values_ok(p, &nr, opt, n))) continue;
    rt_claim *k = A(p, sizeof *k);
    if (!k) return DT_ENOMEM;
    k->pool = pi;
    bool rok;
    int rrc = reserve(p, k, opt, n, zm, cm, &rok);
    if (rrc) return rrc;
    if (!rok) {
      /* A reservation this pool could use is held by other claims: the pod
      ** waits rather than falling through to a lower-weight NodePool. */
      R->reserved_error = true;
      *res = FAIL_NOW;
      return 0;
    }
    k->pool = pi;
    k->idx = (uint32_t)p->claims.n;
    k->reqs = nr;
    k->zmask = zm;
    k->ctmask = cm;
    k->opt = opt;
    k->nopt = n;
    k->type = k->off = -1;
    for (uint32_t r = 0; r < p->nres; r++) k->used[r] = c->req[r];
    /* In the plan's list first, so dt_plan_free releases k's vectors on any failure. */
    if (dt__vec_push(&p->claims, k) || dt__vec_push(&k->pods, podi) || order_push(R, k)) return DT_ENOMEM;
    const rt_spec *s = &p->specs[c->spec_idx];
    for (uint32_t q = 0; q < s->nports; q++)
      if (dt__vec_push(&k->ports, s->ports[q])) return DT_ENOMEM;
    int rc = dt__topo_record(p, p->pods[podi].spec, c, host, zm, cm, 1, p->pods[podi].ordinal);
    if (rc) return rc;
    /* Limits are charged pessimistically: the largest capacity among the
    ** claim's options, as Karpenter's subtractMax. */
    if (pl->has_limits) {
      for (uint32_t l = 0; l < nlim; l++) {
        int64_t mx = 0;
        if (e)
          mx = e->mx[lim[l]];
        else
          for (uint32_t i = 0; i < n; i++) mx = p->types[opt[i]].cap[lim[l]] > mx ? p->types[opt[i]].cap[lim[l]] : mx;
        pl->remaining[lim[l]] -= mx;
      }
      if (pl->nodes_remaining > 0) pl->nodes_remaining--;
    }
    *res = FIT;
    return 0;
  }
  return 0;
}

/* One relaxation step, in Karpenter's order; false when nothing is left
** (each count stops at 255, its type's top: never wraps round to relax forever). */
static bool relax(const dt_plan *p, const rt_spec *s, rt_relax *rx) {
  const dt_podspec *d = s->src;
  if (d->nterms > (size_t)rx->term + 1 && rx->term < UINT8_MAX) {
    rx->term++;
    return true;
  }
  if (rx->paff < d->npaff && rx->paff < UINT8_MAX) {
    rx->paff++;
    return true;
  }
  if (rx->panti < d->npanti && rx->panti < UINT8_MAX) {
    rx->panti++;
    return true;
  }
  if (rx->pref < d->npref && rx->pref < UINT8_MAX) {
    rx->pref++;
    return true;
  }
  size_t anyway = 0;
  for (size_t i = 0; i < d->nspread; i++) anyway += d->spread[i].anyway;
  if (rx->anyway < anyway && rx->anyway < UINT8_MAX) {
    rx->anyway++;
    return true;
  }
  if (!rx->tol_pref && p->any_prefer_taint) {
    rx->tol_pref = 1;
    return true;
  }
  return false;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Try the claim at position i of the order for a pod of class ci: *placed
** on a fit; *gone when it failed for good and can take no pod still to
** come, and so left the order. */
static int try_open_claim(run *R, uint32_t ci, uint32_t podi, size_t i, bool *placed, bool *gone) {
  dt_plan *p = R->p;
  rt_claim *k = R->order.v[i];
  int res;
  *gone = false;
  int rc = claim_add(R, k, ci, podi, &res);
  if (rc) return rc;
  if (res == FIT) {
    if ((rc = reorder(R, i))) return rc;
    *placed = true;
    return 0;
  }
  if (res != FAIL_EVER) return 0;
  if ((rc = set_failed(&p->classes.v[ci], k->idx))) return rc;
  R->nfailed[ci]++;
  if (claim_full(R, k)) {
    k->closed = true;
    for (size_t c = 0; c < p->classes.n; c++) R->nfailed[c] -= class_failed(&p->classes.v[c], k->idx);
    order_remove(R, i);
    *gone = true;
  }
  return 0;
}

/* Place one pod of class ci; *placed tells whether it went somewhere. */
static int try_place(run *R, uint32_t ci, uint32_t podi, bool *placed) {
  dt_plan *p = R->p;
  int rc = 0, res;
  *placed = false;
  /* 1. existing and in-flight nodes, in order */
  bool all_ever = true;
  for (uint32_t i = p->classes.v[ci].node_cursor; i < p->nnodes; i++) {
    rt_class *c = &p->classes.v[ci];
    uint64_t Z;
    uint8_t C;
    res = node_fits(R, i, c, &Z, &C);
    if (res == FIT) {
      rt_node *n = &p->nodes[i];
      for (uint32_t r = 0; r < p->nres; r++) n->used[r] += c->req[r];
      const rt_spec *s = &p->specs[c->spec_idx];
      for (uint32_t q = 0; q < s->nports; q++)
        if (dt__vec_push(&n->ports, s->ports[q])) return DT_ENOMEM;
      if (n->nvlim && s->ncsi && (rc = dt__sched_vols_add(n, s))) return rc;
      rt_binding bnd = {podi, i};
      if (dt__vec_push(&p->bindings, bnd)) return DT_ENOMEM;
      *placed = true;
      return dt__topo_record(p, p->pods[podi].spec, c, i, Z, C, 1, p->pods[podi].ordinal);
    }
    if (res == FAIL_NOW) all_ever = false;
    if (all_ever) c->node_cursor = i + 1;
  }
  /* 1b. static pools' claims: in flight before any pod, as existing capacity */
  for (uint32_t i = 0; i < p->nfixed; i++) {
    rt_claim *k = p->claims.v[i];
    if (class_failed(&p->classes.v[ci], k->idx)) continue;
    if ((rc = claim_add(R, k, ci, podi, &res))) return rc;
    if (res == FIT) {
      *placed = true;
      return 0;
    }
    if (res == FAIL_EVER && (rc = set_failed(&p->classes.v[ci], k->idx))) return rc;
  }
  if (p->classes.n > R->nfailed_cap) { /* relaxing a pod's preferences makes classes */
    size_t cap = p->classes.n * 2;
    uint32_t *nf = dt__realloc(R->nfailed, cap * sizeof *nf);
    if (!nf) return DT_ENOMEM;
    memset(nf + R->nfailed_cap, 0, (cap - R->nfailed_cap) * sizeof *nf);
    R->nfailed = nf;
    R->nfailed_cap = cap;
  }
  /* 2. claims opened in this run, least loaded first, skipping those the
  ** class can never join: none to try when it can join none (pods sorted
  ** largest first meet that often); when it can join few, those few are
  ** found through the bitmaps and tried in the order's order. */
  rt_class *cl = &p->classes.v[ci];
  size_t n = R->order.n;
  if (n >= 64 && (size_t)R->nfailed[ci] * 4 >= n * 3) {
    R->cand.n = 0;
    for (size_t w = 0; w < R->open.n; w++) {
      uint64_t bits = R->open.v[w] & ~(w < cl->nfail_words ? cl->claim_failed[w] : 0);
      for (; bits; bits &= bits - 1) {
        uint32_t idx = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(bits));
        if (dt__vec_push(&R->cand, (uint64_t)R->at.v[idx] << 32 | idx)) return DT_ENOMEM;
      }
    }
    if (R->cand.n > 1) qsort(R->cand.v, R->cand.n, sizeof *R->cand.v, cmp_u64); /* none yet: no array */
    for (size_t q = 0; q < R->cand.n; q++) {
      bool gone;
      uint32_t idx = (uint32_t)R->cand.v[q];
      assert(R->order.v[R->at.v[idx]]->idx == idx); /* the order and the positions agree */
      if ((rc = try_open_claim(R, ci, podi, R->at.v[idx], placed, &gone)) || *placed) return rc;
    }
  } else {
    for (size_t i = 0; i < R->order.n && R->nfailed[ci] < R->order.n; i++) {
      if (class_failed(cl, R->order.v[i]->idx)) continue;
      bool gone;
      if ((rc = try_open_claim(R, ci, podi, i, placed, &gone)) || *placed) return rc;
      if (gone) i--;
    }
  }
  /* 3. a new claim from each NodePool, by weight */
  if (p->classes.v[ci].no_new_claim) return 0;
  rc = new_claim(R, ci, podi, &res);
  if (rc) return rc;
  if (res == FIT) {
    *placed = true;
    return 0;
  }
  if (res == FAIL_EVER) p->classes.v[ci].no_new_claim = true;
  return 0;
}

/* The runs of run.minat for the queue: for each position, the
** component-wise minimum of the requests of the pods from there to the end
** (a million pods of a few shapes make a handful of runs, where one entry
** per position and resource was tens of megabytes written each pass). */
static int queue_minsuf(run *R, const uint32_t *queue, uint32_t qn) {
  dt_plan *p = R->p;
  uint32_t nres = p->nres;
  R->minat.n = R->minrun.n = 0;
  R->mincur = 0;
  if (!qn) return 0;
  /* From the end back: a run closes where the minimum changes. */
  int64_t cur[DT_RES_MAX];
  /* A pod's requests are its class's (the class signature holds them):
  ** the few classes stay in cache where a million specs, read in queue
  ** order, would not. */
  memcpy(cur, p->classes.v[p->pods[queue[qn - 1]].cls].req, nres * sizeof *cur);
  uint32_t start = qn - 1;
  for (uint32_t i = qn - 1; i-- > 0;) {
    const int64_t *q = p->classes.v[p->pods[queue[i]].cls].req;
    bool lower = false;
    for (uint32_t r = 0; r < nres; r++) lower |= q[r] < cur[r];
    if (lower) {
      if (dt__vec_push(&R->minat, start)) return DT_ENOMEM;
      for (uint32_t r = 0; r < nres; r++)
        if (dt__vec_push(&R->minrun, cur[r])) return DT_ENOMEM;
      for (uint32_t r = 0; r < nres; r++) cur[r] = q[r] < cur[r] ? q[r] : cur[r];
    }
    start = i;
  }
  if (dt__vec_push(&R->minat, start)) return DT_ENOMEM;
  for (uint32_t r = 0; r < nres; r++)
    if (dt__vec_push(&R->minrun, cur[r])) return DT_ENOMEM;
  R->mincur = R->minat.n - 1; /* the run from position 0 */
  return 0;
}

/* One pod's attempt in a pass: its class, then its preferences relaxed in
** Karpenter's order until something takes it or nothing is left to relax.
** *ci is the class of the last try. */
static int place_pod(run *R, uint32_t podi, uint32_t pass, uint32_t qn, bool *placed, int *ci) {
  dt_plan *p = R->p;
  const rt_pod *pod = &p->pods[podi];
  rt_relax rx;
  memset(&rx, 0, sizeof rx);
  *placed = false;
  *ci = (int)pod->cls;
  for (;;) {
    R->topo_fail_class = -1;
    R->reserved_error = false;
    /* --explain: recorded before and after, never changing the try */
    bool ex = p->ex_pod == (int64_t)podi;
    size_t nb = p->bindings.n, nk = p->claims.n;
    if (ex) dt__explain_attempt(p, (uint32_t)*ci, &rx, R->order.v, R->order.n, pass, R->pos, qn);
    int rc = try_place(R, (uint32_t)*ci, podi, placed);
    if (rc) return rc;
    if (ex) dt__explain_outcome(p, *placed, nb, nk, R->order.v, R->order.n);
    /* Deferred for a reservation: not relaxed, as Karpenter's trySchedule. */
    if (*placed || R->reserved_error || !relax(p, &p->specs[pod->spec], &rx)) return 0;
    if ((*ci = dt__sched_class_for(p, pod->spec, pod->ordinal, &rx)) < 0) return *ci;
  }
}

int dt__sched_solve(dt_plan *p) {
  run R;
  memset(&R, 0, sizeof R);
  R.p = p;
  int rc = 0;
  uint32_t *queue = dt__malloc((p->npods ? p->npods : 1) * sizeof *queue);
  uint32_t *next = dt__malloc((p->npods ? p->npods : 1) * sizeof *next);
  int32_t *last_class = dt__malloc((p->npods ? p->npods : 1) * sizeof *last_class);
  R.scratch = dt__malloc((p->ntypes ? p->ntypes : 1) * sizeof *R.scratch);
  if (!queue || !next || !last_class || !R.scratch || offered_zones(&R)) {
    rc = DT_ENOMEM;
    goto out;
  }
  uint32_t qn = 0, pass = 0;
  for (uint32_t i = 0; i < p->npods && !rc; i++) {
    const char *why = pod_refused(&p->specs[p->pods[i].spec], p->pods[i].ordinal);
    if (why)
      rc = dt__sched_unschedulable(p, i, why);
    else
      queue[qn++] = i;
  }
  if (rc) goto out;
  /*
  ** Karpenter's queue: a pod that fails goes to the back; the run stops
  ** when a whole pass places nothing. Pods whose constraints depend on
  ** others (affinity, spread) converge this way.
  */
  for (;; pass++) {
    if (dt__cancelled(p)) {
      rc = DT_ECANCELED;
      goto out;
    }
    R.qlen = qn;
    if ((rc = queue_minsuf(&R, queue, qn))) goto out;
    for (uint32_t r = 0; r < DT_RES_MAX; r++) R.failmin[r] = INT64_MAX;
    uint32_t nn = 0;
    for (R.pos = 0; R.pos < qn; R.pos++) {
      if ((R.pos & 255) == 255 && dt__cancelled(p)) {
        rc = DT_ECANCELED;
        goto out;
      }
      uint32_t podi = queue[R.pos];
      bool placed;
      int ci;
      if ((rc = place_pod(&R, podi, pass, qn, &placed, &ci))) goto out;
      if (placed) continue;
      last_class[podi] = R.reserved_error ? -1 - ci : ci;
      next[nn++] = podi;
      const int64_t *q = p->specs[p->pods[podi].spec].req;
      for (uint32_t r = 0; r < p->nres; r++) R.failmin[r] = q[r] < R.failmin[r] ? q[r] : R.failmin[r];
    }
    bool progress = nn < qn;
    uint32_t *t = queue;
    queue = next;
    next = t;
    qn = nn;
    if (!qn || !progress) break;
  }
  rc = dt__sched_report_unschedulable(p, queue, qn, last_class);
out:
  dt__free(queue);
  dt__free(next);
  dt__free(last_class);
  dt__free(R.minat.v);
  dt__free(R.minrun.v);
  dt__free(R.scratch);
  dt__free(R.mscratch);
  dt__free(R.order.v);
  dt__free(R.nfailed);
  dt__free(R.bstart.v);
  dt__free(R.at.v);
  if (!R.zones_borrowed) {
    dt__free(R.offz);
    dt__free(R.allz);
  }
  dt__free(R.open.v);
  dt__free(R.cand.v);
  return rc;
}

/* ------------------------------------------------------- for explain.c */

bool dt__x_tolerates(const dt_plan *p, const dt_podspec *s, const rt_taint *t, uint32_t n, bool prefer_ok,
                     const rt_taint **which) {
  return tolerates(p, s, t, n, prefer_ok, which);
}
bool dt__x_compatible(const dt_plan *p, const dt_reqs *node, const dt_reqs *pod, const dt_req **bad) {
  return compatible(p, node, pod, bad);
}
void dt__x_masks(const dt_plan *p, const dt_reqs *r, uint64_t *zmask, uint8_t *ctmask) { masks(p, r, zmask, ctmask); }
bool dt__x_fits(const dt_plan *p, const int64_t *alloc, const int64_t *used, const int64_t *req) {
  return fits(p, alloc, used, req);
}
int16_t dt__x_slot(const dt_plan *p, dt_sym key) { return slot_of(p, key); }
bool dt__x_ports_conflict(const dt_plan *p, const rt_port *a, uint32_t na, const rt_port *b, size_t nb) {
  return dt__sched_ports_conflict(p, a, na, b, nb);
}
