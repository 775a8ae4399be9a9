/*
** sched_compile.c: the first half of compiling a run: the catalog (types,
** offerings, zones, the names ranked), the offering snapshot the policy
** hooks see and its price hook, unavailable-offering marks, the NodePools
** (requirements, taints, compatible types in price order) and the nodes
** (labels, allocatable, what their pods use). Everything goes into the
** plan's arena and symbol table; a compiled cluster (sched.c) keeps this
** work for many simulations.
*/
#include "sched_int.h"

/* ------------------------------------------------------------ compile */

typedef struct name_key {
  const char *name;
  uint32_t idx;
} name_key;

static int cmp_name_key(const void *a, const void *b) {
  const name_key *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* Types' and zones' positions by name, so that ties in the hot loops compare
** integers. */
static int rank_names(dt_plan *p) {
  size_t n = p->ntypes > p->nzones ? p->ntypes : p->nzones;
  name_key *k = dt__malloc((n ? n : 1) * sizeof *k);
  if (!k) return DT_ENOMEM;
  for (uint32_t i = 0; i < p->ntypes; i++) k[i] = (name_key){p->types[i].src->name, i};
  qsort(k, p->ntypes, sizeof *k, cmp_name_key);
  for (uint32_t i = 0; i < p->ntypes; i++) p->types[k[i].idx].rank = i;
  for (uint32_t i = 0; i < p->nzones; i++) k[i] = (name_key){dt__sym_str(&p->syms, p->zones[i]), i};
  qsort(k, p->nzones, sizeof *k, cmp_name_key);
  for (uint32_t i = 0; i < p->nzones; i++) p->zone_rank[k[i].idx] = (uint8_t)i;
  dt__free(k);
  return 0;
}

int dt__sched_compile_catalog(dt_plan *p, dt_error *err) {
  const dt_catalog *c = p->catalog;
  if (c->nzones > 64) return dt__err(err, DT_ERANGE, "%s: %zu zones; dovetail supports at most 64", c->name, c->nzones);
  p->nzones = (uint32_t)c->nzones;
  for (size_t i = 0; i < c->nzones; i++) p->zones[i] = dt__sym(&p->syms, c->zones[i]);
  /* Type keys: every label key any type carries. */
  for (size_t i = 0; i < c->ntypes; i++)
    for (size_t k = 0; k < c->types[i].labels.n; k++) dt__sym(&p->syms, c->types[i].labels.v[k].key);
  p->nkeyslot = p->syms.n + 1;
  p->keyslot = A(p, p->nkeyslot * sizeof *p->keyslot);
  if (!p->keyslot) return DT_ENOMEM;
  memset(p->keyslot, 0xff, p->nkeyslot * sizeof *p->keyslot);
  p->slot_key = A(p, p->nkeyslot * sizeof *p->slot_key);
  if (!p->slot_key) return DT_ENOMEM;
  for (size_t i = 0; i < c->ntypes; i++)
    for (size_t k = 0; k < c->types[i].labels.n; k++) {
      dt_sym s = dt__sym(&p->syms, c->types[i].labels.v[k].key);
      if (p->keyslot[s] < 0) {
        p->keyslot[s] = (int16_t)p->nslots;
        p->slot_key[p->nslots++] = s;
      }
    }
  p->ntypes = (uint32_t)c->ntypes;
  p->types = A(p, (c->ntypes ? c->ntypes : 1) * sizeof *p->types);
  if (!p->types) return DT_ENOMEM;
  for (size_t i = 0; i < c->ntypes; i++) {
    const dt_ctype *ct = &c->types[i];
    rt_type *t = &p->types[i];
    t->src = ct;
    t->name = dt__sym(&p->syms, ct->name);
    int rc;
    if ((rc = rlist_vec(p, &ct->capacity, t->cap, err)) || (rc = rlist_vec(p, &ct->allocatable, t->alloc, err)))
      return rc;
    t->lv = A(p, (p->nslots ? p->nslots : 1) * sizeof *t->lv);
    t->off = A(p, (ct->noff ? ct->noff : 1) * sizeof *t->off);
    if (!t->lv || !t->off) return DT_ENOMEM;
    for (size_t k = 0; k < ct->labels.n; k++)
      t->lv[p->keyslot[dt__sym(&p->syms, ct->labels.v[k].key)]] = dt__sym(&p->syms, ct->labels.v[k].val);
    t->noff = (uint32_t)ct->noff;
    for (size_t k = 0; k < ct->labels.n; k++) /* for the hooks' snapshot: the last such label */
      if (strstr(ct->labels.v[k].key, "/instance-family")) t->family = ct->labels.v[k].val;
    t->gpus = dt__ctype_gpus(ct);
    t->min_price = INFINITY;
    for (size_t k = 0; k < ct->noff; k++) {
      const dt_coffer *o = &ct->off[k];
      rt_off *r = &t->off[k];
      dt_sym z = dt__sym(&p->syms, o->zone);
      for (uint32_t zi = 0; zi < p->nzones; zi++)
        if (p->zones[zi] == z) r->zone = (uint8_t)zi;
      r->ct = (uint8_t)o->ct;
      r->price = o->price;
      r->cap = o->ct == DT_CT_SPOT && ct->od_price >= 0 ? ct->od_price : INFINITY;
      r->avail = o->available;
      r->gone = o->available == 0 ? OFF_CATALOG : OFF_OK;
      r->resv = o->reservation ? dt__sym(&p->syms, o->reservation) : 0;
      if (r->avail != 0 && o->price < t->min_price) t->min_price = o->price;
    }
  }
  /* types by name symbol; the first of a name wins, as a scan would find it */
  p->ntype_at = p->syms.n;
  p->type_at = A(p, (p->ntype_at ? p->ntype_at : 1) * sizeof *p->type_at);
  if (!p->type_at) return DT_ENOMEM;
  memset(p->type_at, 0xff, p->ntype_at * sizeof *p->type_at);
  for (uint32_t i = p->ntypes; i-- > 0;) p->type_at[p->types[i].name] = (int32_t)i;
  return rank_names(p);
}

static const rt_type *find_type(const dt_plan *p, const char *name);

/* The offerings as policy hooks see them, in catalog order. */
int dt__sched_build_snapshot(dt_plan *p) {
  size_t n = 0;
  p->off_base = A(p, (p->ntypes + 1) * sizeof *p->off_base);
  if (!p->off_base) return DT_ENOMEM;
  for (uint32_t t = 0; t < p->ntypes; t++) {
    p->off_base[t] = (uint32_t)n;
    n += p->types[t].noff;
  }
  p->nsnapshot = n;
  /* only hooks read the offerings: a plan without a policy leaves them out */
  bool hooks = p->opts.policy != NULL;
  for (size_t k = 0; k < p->opts.npool_policies; k++) hooks |= p->opts.pool_policies[k] != NULL;
  if (!hooks) return 0;
  dt_cluster *cl = p->cl;
  const dt_manifests *m = p->manifests;
  if (cl && cl->snap && cl->nsnap == n && cl->snap_marks == m->marks.v && cl->snap_nmarks == m->marks.n &&
      cl->snap_now == p->opts.now) {
    p->snapshot = cl->snap; /* read-only, as every plan's */
    return 0;
  }
  /* a compiled catalog's offerings with no mark applied: the same for every
  ** plan on it, so built once and kept by the catalog (out of memory: each
  ** plan builds its own) */
  dt_plan *home = !cl && !p->marks.n ? p->snap_home : NULL;
  if (home && home->snapshot && home->nsnapshot == n) {
    p->snapshot = home->snapshot;
    return 0;
  }
  p->snapshot = A_RAW(p, (n ? n : 1) * sizeof *p->snapshot); /* every one written below */
  if (!p->snapshot) return DT_ENOMEM;
  for (uint32_t t = 0; t < p->ntypes; t++) {
    const rt_type *ty = &p->types[t];
    const char *family = ty->family;
    int64_t gpus = ty->gpus;
    for (uint32_t o = 0; o < ty->noff; o++) {
      const rt_off *of = &ty->off[o];
      p->snapshot[p->off_base[t] + o] = (dt_hook_offer){ty->src->name,
                                                        dt__sym_str(&p->syms, p->zones[of->zone]),
                                                        dt__ct_names[of->ct],
                                                        of->resv ? dt__sym_str(&p->syms, of->resv) : NULL,
                                                        of->price,
                                                        ty->src->od_price,
                                                        of->avail,
                                                        ty->alloc[DT_R_CPU],
                                                        ty->alloc[DT_R_MEM] / 1000,
                                                        gpus,
                                                        family,
                                                        ty->src->arch};
    }
  }
  if (home && (home->snapshot = dt__arena_raw(&home->arena, (n ? n : 1) * sizeof *home->snapshot))) {
    memcpy(home->snapshot, p->snapshot, n * sizeof *home->snapshot);
    home->nsnapshot = n;
  }
  if (cl) { /* kept for the cluster's next overlay (out of memory: each builds its own) */
    dt__free(cl->snap);
    cl->snap = dt__malloc((n ? n : 1) * sizeof *cl->snap);
    if (cl->snap) memcpy(cl->snap, p->snapshot, n * sizeof *cl->snap);
    cl->nsnap = n, cl->snap_marks = m->marks.v, cl->snap_nmarks = m->marks.n, cl->snap_now = p->opts.now;
  }
  return 0;
}

int dt__sched_use_policy(dt_plan *p, dt_policy *pol) {
  for (size_t i = 0; i < p->policies.n; i++)
    if (p->policies.v[i] == pol) return 0;
  if (dt__vec_push(&p->policies, pol)) return DT_ENOMEM;
  dt__policy_clear_errors(pol);
  /* a failed snapshot leaves the hooks unused: defaults apply. Offerings
  ** copied from a compiled catalog, no mark applied and not priced yet, are
  ** that catalog's, which the policy may know by its number. */
  uint64_t token = !p->marks.n && p->priced == PRICED_NONE ? p->src_id : 0;
  dt__policy_round(pol, p->opts.now, p->opts.seed, p->snapshot, p->nsnapshot, token);
  return 0;
}

/* The price hook of the plan's policy re-prices every offering once. */
int dt__sched_apply_price_hook(dt_plan *p) {
  dt_policy *pol = p->opts.policy;
  if (!dt__policy_has(pol, DT_HOOK_PRICE)) return 0;
  int rc = dt__sched_use_policy(p, pol);
  if (rc) return rc;
  if (p->priced == PRICED_COPY) { /* the pass's prices are in the copy: its outcome recorded again */
    dt__policy_price_repeat(pol);
    return 0;
  }
  double *out = dt__malloc((p->nsnapshot ? p->nsnapshot : 1) * sizeof *out);
  if (!out) return DT_ENOMEM;
  if (dt__policy_price(pol, out) == 0) {
    for (uint32_t t = 0; t < p->ntypes; t++) {
      rt_type *ty = &p->types[t];
      ty->min_price = INFINITY;
      for (uint32_t o = 0; o < ty->noff; o++) {
        double v = out[p->off_base[t] + o];
        rt_off *of = &dt__offs_mut(p, t)[o];
        if (isnan(v)) {
          if (of->avail != 0) of->gone = OFF_PRICE_HOOK;
          of->avail = 0;
        } else
          of->price = v;
        if (ty->off[o].avail != 0 && ty->off[o].price < ty->min_price) ty->min_price = ty->off[o].price;
      }
    }
  }
  dt__free(out);
  return 0;
}

/* Unavailable offerings still within their TTL at opts.now. */
int dt__sched_apply_marks(dt_plan *p) {
  const dt_manifests *m = p->manifests;
  int64_t now = p->opts.now;
  for (size_t i = 0; i < m->marks.n; i++) {
    const dt_mark *mk = &m->marks.v[i];
    if (mk->expires <= now) continue; /* expired marks vanish by the clock */
    rt_type *t = (rt_type *)find_type(p, mk->instance_type);
    dt_sym z = dt__sym_find(&p->syms, mk->zone);
    bool hit = false;
    for (uint32_t o = 0; t && z && o < t->noff; o++)
      if (t->off[o].ct == mk->ct && p->zones[t->off[o].zone] == z) {
        if (t->off[o].avail != 0) { /* a priced copy has it marked already */
          rt_off *of = &dt__offs_mut(p, (uint32_t)(t - p->types))[o];
          of->gone = OFF_MARK;
          of->avail = 0;
        }
        hit = true;
      }
    if (!hit) {
      note_in(p, "%s: UnavailableOffering %s names no offering in the catalog (%s %s %s)", mk->file, mk->name,
              dt__ct_names[mk->ct], mk->instance_type, mk->zone);
      continue;
    }
    if (dt__vec_push(&p->marks, (uint32_t)i)) return DT_ENOMEM;
    /* the cheapest available offering may have changed */
    t->min_price = INFINITY;
    for (uint32_t o = 0; o < t->noff; o++)
      if (t->off[o].avail != 0 && t->off[o].price < t->min_price) t->min_price = t->off[o].price;
  }
  return 0;
}

static const rt_type *find_type(const dt_plan *p, const char *name) {
  dt_sym s = dt__sym_find(&p->syms, name);
  return s && s < p->ntype_at && p->type_at[s] >= 0 ? &p->types[p->type_at[s]] : NULL;
}

/* Sort keys carry what the comparison needs: qsort has no context argument
** in C11 and the core keeps no global state. */
typedef struct price_key {
  double price;
  uint32_t rank; /* the type's position by name */
  uint32_t idx;
} price_key;

static int cmp_price_key(const void *a, const void *b) {
  const price_key *x = a, *y = b;
  if (x->price != y->price) return x->price < y->price ? -1 : 1;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Order types[0..n) (indices into p->types) by price[i], then name. */
int dt__sched_sort_by_price(dt_plan *p, uint32_t *types, const double *price, uint32_t n) {
  if (n < 2) return 0;
  price_key *k = dt__malloc(n * sizeof *k);
  if (!k) return DT_ENOMEM;
  for (uint32_t i = 0; i < n; i++) k[i] = (price_key){price[i], p->types[types[i]].rank, types[i]};
  qsort(k, n, sizeof *k, cmp_price_key);
  for (uint32_t i = 0; i < n; i++) types[i] = k[i].idx;
  dt__free(k);
  return 0;
}

static int cmp_pool(const void *a, const void *b) {
  const rt_pool *x = a, *y = b;
  if (x->src->weight != y->src->weight) return x->src->weight > y->src->weight ? -1 : 1;
  return -strcmp(x->src->name, y->src->name); /* ties: name descending, as Karpenter */
}

/* Requirements are added all at once (dt__reqs_add_many): one at a time,
** each copied the set so far, and a nodeSelector of 5,000 keys took 2.3 GB. */
int dt__sched_compile_mreqs(dt_plan *p, const dt_mreqs *m, dt_reqs *out) {
  if (!m->n) return 0;
  dt_req *q = dt__malloc(m->n * sizeof *q);
  if (!q) return DT_ENOMEM;
  for (size_t k = 0; k < m->n; k++)
    if (compile_mreq(p, &m->v[k], &q[k])) {
      dt__free(q);
      return DT_ENOMEM;
    }
  dt__reqs_add_many(&p->arena, &p->syms, out, q, m->n, out);
  dt__free(q);
  return 0;
}

int dt__sched_compile_selector_kvs(dt_plan *p, const dt_kvs *kv, dt_reqs *out) {
  if (!kv->n) return 0;
  dt_req *q = dt__malloc(kv->n * sizeof *q);
  if (!q) return DT_ENOMEM;
  for (size_t k = 0; k < kv->n; k++) {
    bool zid = p->nzid && !strcmp(kv->v[k].key, DT_L_ZONE_ID);
    dt_sym v = dt__sym(&p->syms, zid ? zone_of_id(p, kv->v[k].val) : kv->v[k].val),
           key = dt__sym(&p->syms, req_key(p, kv->v[k].key));
    if (!interruptible(p, key, DT_OP_IN, &v, 1, &q[k])) dt__req_make(&p->arena, &q[k], key, DT_OP_IN, &v, 1, &p->syms);
  }
  dt__reqs_add_many(&p->arena, &p->syms, out, q, kv->n, out);
  dt__free(q);
  return 0;
}

rt_port *dt__sched_compile_ports(dt_plan *p, const dt_podspec *s) {
  rt_port *out = A(p, (s->nports ? s->nports : 1) * sizeof *out);
  for (size_t i = 0; out && i < s->nports; i++)
    out[i] = (rt_port){s->ports[i].port, dt__sym(&p->syms, s->ports[i].proto), dt__sym(&p->syms, s->ports[i].ip)};
  return out;
}

static bool port_conflict(const dt_plan *p, const rt_port *a, const rt_port *b) {
  if (a->port != b->port || a->proto != b->proto) return false;
  dt_sym any = dt__sym_find(&p->syms, "0.0.0.0");
  return a->ip == b->ip || a->ip == any || b->ip == any;
}

bool dt__sched_ports_conflict(const dt_plan *p, const rt_port *a, uint32_t na, const rt_port *b, size_t nb) {
  for (uint32_t i = 0; i < na; i++)
    for (size_t k = 0; k < nb; k++)
      if (port_conflict(p, &a[i], &b[k])) return true;
  return false;
}

/*
** DaemonSet overhead per (NodePool, instance type), as Karpenter's daemon
** overhead groups: a DaemonSet counts when it tolerates the pool's taints
** (PreferNoSchedule implicitly) and one of its node-affinity alternatives is
** compatible with the pool's requirements and the type. Claims then pack
** against allocatable minus that overhead.
*/
/* DaemonSet d's required alternatives (its node selector with each term of
** its node affinity, or alone), each compiled with its zone and
** capacity-type masks and the types whose labels it admits (a bit per type
** of the plan), once a plan; NULL when out of memory. */
typedef struct rt_dsalts {
  uint32_t n;
  dt_reqs *r;
  uint64_t *z;
  uint8_t *c;
  uint64_t *bits;
} rt_dsalts;

static const rt_dsalts *ds_alts(dt_plan *p, size_t d) {
  const dt_manifests *m = p->manifests;
  if (!p->ds_alts && !(p->ds_alts = A(p, m->daemonsets.n * sizeof *p->ds_alts))) return NULL;
  rt_dsalts *da = &p->ds_alts[d];
  if (da->r) return da;
  const dt_podspec *ds = &m->daemonsets.v[d];
  size_t n = ds->nterms ? ds->nterms : 1, words = (p->ntypes + 63) / 64;
  da->r = A(p, n * sizeof *da->r);
  da->z = A(p, n * sizeof *da->z);
  da->c = A(p, n);
  da->bits = A(p, n * words * sizeof *da->bits + 1);
  if (!da->r || !da->z || !da->c || !da->bits) return da->r = NULL, NULL;
  for (size_t a = 0; a < n; a++) {
    dt__sched_compile_selector_kvs(p, &ds->node_selector, &da->r[a]);
    if (ds->nterms && dt__sched_compile_mreqs(p, &ds->terms[a], &da->r[a])) return da->r = NULL, NULL;
    masks(p, &da->r[a], &da->z[a], &da->c[a]);
    for (uint32_t t = 0; t < p->ntypes; t++)
      if (dt__type_labels_ok(p, &p->types[t], &da->r[a])) da->bits[a * words + t / 64] |= 1ull << (t % 64);
  }
  da->n = (uint32_t)n;
  return p->arena.oom || p->syms.oom ? (da->r = NULL, NULL) : da;
}

/* Which of pool pl's types (a byte each) DaemonSet d lands on: its
** alternatives (node selector with each term) compiled once a plan, with
** the types each admits by label; per pool only which are compatible with
** it (base: its requirements as a new node meets them) and the offerings
** their zones and capacity types leave. Compiled per pool and type, 10
** DaemonSets of 100 terms over 20 pools took 12 s and 6.8 GB. */
static int ds_lands(dt_plan *p, const rt_pool *pl, size_t d, const dt_reqs *base, uint64_t zm, uint8_t cm,
                    const uint8_t **out) {
  uint8_t *land = A(p, pl->ntypes ? pl->ntypes : 1);
  const rt_dsalts *da = ds_alts(p, d);
  size_t words = (p->ntypes + 63) / 64, ng = 0;
  struct grp {
    uint64_t z;
    uint8_t c;
    uint64_t *bits;
  } *g = da ? A_RAW(p, (da->n ? da->n : 1) * sizeof *g) : NULL;
  if (!land || !g) return DT_ENOMEM;
  for (uint32_t a = 0; a < da->n; a++) {
    const dt_req *bad;
    uint64_t z = da->z[a] & zm;
    uint8_t c = (uint8_t)(da->c[a] & cm);
    if (!z || !c || !compatible(p, base, &da->r[a], &bad)) continue; /* no offering, or not on this pool */
    size_t k = 0;
    while (k < ng && (g[k].z != z || g[k].c != c)) k++;
    if (k == ng) {
      g[ng].z = z, g[ng].c = c;
      if (!(g[ng++].bits = A(p, words * sizeof(uint64_t)))) return DT_ENOMEM;
    }
    for (size_t w = 0; w < words; w++) g[k].bits[w] |= da->bits[(size_t)a * words + w];
  }
  for (uint32_t t = 0; t < pl->ntypes && ng; t++) {
    uint32_t ti = pl->types[t];
    for (size_t k = 0; k < ng && !land[t]; k++)
      land[t] = (g[k].bits[ti / 64] >> (ti % 64) & 1) && type_offered(&p->types[ti], g[k].z, g[k].c, pl->spot_max);
  }
  *out = land;
  return 0;
}

static int daemon_overhead(dt_plan *p, rt_pool *pl, uint64_t zm, uint8_t cm, dt_error *err) {
  const dt_manifests *m = p->manifests;
  pl->eff = A(p, (p->ntypes ? p->ntypes : 1) * sizeof *pl->eff);
  if (!pl->eff) return DT_ENOMEM;
  for (uint32_t t = 0; t < p->ntypes; t++) pl->eff[t] = pl->alloc[t];
  if (!m->daemonsets.n) return 0;
  int64_t(*over)[DT_RES_MAX] = A(p, p->ntypes * sizeof *over);
  if (!over) return DT_ENOMEM;
  /* The pool's requirements as a DaemonSet's pods meet them: a new node
  ** becomes registered and initialized (karpenter.sh/registered and
  ** /initialized "true"), which Karpenter's NodeClaimTemplate adds for its
  ** DaemonSet simulation alone, so an agent that waits for them counts. */
  static char k_reg[] = DT_L_REGISTERED, k_init[] = DT_L_INITIALIZED, k_true[] = "true";
  dt_kv life_kv[] = {{k_reg, k_true}, {k_init, k_true}};
  dt_kvs life = {2, life_kv};
  dt_reqs lr = {0}, base;
  if (dt__sched_compile_selector_kvs(p, &life, &lr)) return DT_ENOMEM;
  dt__reqs_merge(&p->arena, &p->syms, &pl->reqs, &lr, &base);
  bool any = false;
  /* the types each DaemonSet lands on, by the hash of its node selector and
  ** required terms: DaemonSets that share them (a chart's agents, an
  ** anchor's copies) are matched against the types once */
  dt_namemap seen = {0}; /* by node selector and terms, as text: the first DaemonSet of them */
  uint8_t **lands = A(p, m->daemonsets.n * sizeof *lands);
  if (!lands) return DT_ENOMEM;
  for (size_t d = 0; d < m->daemonsets.n; d++) {
    const dt_podspec *ds = &m->daemonsets.v[d];
    if (ds->dra || !tolerates(p, ds, pl->taints, pl->ntaints, true, NULL)) continue; /* Karpenter skips DRA's */
    int64_t req[DT_RES_MAX] = {0};
    int rc = rlist_vec(p, &ds->requests, req, err);
    if (rc) {
      dt__namemap_free(&seen);
      return rc;
    }
    dt_buf sb = {0};
    for (size_t k = 0; k < ds->node_selector.n; k++)
      dt__buf_printf(&sb, "%s=%s\x1f", ds->node_selector.v[k].key, ds->node_selector.v[k].val);
    for (size_t a = 0; a < ds->nterms; a++) {
      dt__buf_putc(&sb, '\x1e');
      for (size_t k = 0; k < ds->terms[a].n; k++) {
        const dt_mreq *q = &ds->terms[a].v[k];
        dt__buf_printf(&sb, "%s %d", q->key, (int)q->op);
        for (size_t v = 0; v < q->n; v++) dt__buf_printf(&sb, " %s", q->vals[v]);
        dt__buf_putc(&sb, '\x1f');
      }
    }
    if (sb.oom) {
      dt__free(sb.p);
      dt__namemap_free(&seen);
      return DT_ENOMEM;
    }
    const char *key = dt__arena_strdup(&p->arena, sb.p ? sb.p : "");
    size_t kl = sb.len;
    dt__free(sb.p);
    bool added;
    int32_t *at = key ? dt__namemap_put(&seen, key, kl, -1, &added) : NULL;
    if (!at) {
      dt__namemap_free(&seen);
      return DT_ENOMEM;
    }
    const uint8_t *same = *at >= 0 ? lands[*at] : NULL;
    if (!same && (rc = ds_lands(p, pl, d, &base, zm, cm, &same))) {
      dt__namemap_free(&seen);
      return rc;
    }
    if (*at < 0) *at = (int32_t)d;
    lands[d] = (uint8_t *)same;
    bool used = false;
    for (uint32_t t = 0; t < pl->ntypes; t++) {
      if (!same[t]) continue;
      for (uint32_t r = 0; r < DT_RES_MAX; r++) over[pl->types[t]][r] += req[r];
      used = any = true;
    }
    if (used && ds->nports) {
      rt_port *np = A(p, (pl->nds_ports + ds->nports) * sizeof *np);
      rt_port *dp = dt__sched_compile_ports(p, ds);
      if (!np || !dp) {
        dt__namemap_free(&seen);
        return DT_ENOMEM;
      }
      if (pl->nds_ports) memcpy(np, pl->ds_ports, pl->nds_ports * sizeof *np);
      memcpy(np + pl->nds_ports, dp, ds->nports * sizeof *np);
      pl->ds_ports = np;
      pl->nds_ports += (uint32_t)ds->nports;
    }
  }
  dt__namemap_free(&seen);
  if (!any) return 0;
  for (uint32_t t = 0; t < pl->ntypes; t++) {
    uint32_t ti = pl->types[t];
    int64_t *e = A(p, sizeof(int64_t) * DT_RES_MAX);
    if (!e) return DT_ENOMEM;
    for (uint32_t r = 0; r < DT_RES_MAX; r++) e[r] = pl->alloc[ti][r] - over[ti][r];
    pl->eff[ti] = e;
  }
  return 0;
}

/* Whether an overlay's offerings are those its cluster's kept pool types
** were chosen under; when not, the kept ones are dropped and these become
** the cluster's. False when nothing can be kept (no cluster, out of memory). */
static bool overlay_offers_same(dt_plan *p) {
  dt_cluster *cl = p->cl;
  if (!cl) return false;
  /* offerings that are the priced copy the kept types were chosen under */
  uint32_t gen = p->priced ? cl->priced.gen : 0;
  if (gen && cl->ptypes && cl->ptypes_gen == gen && cl->nptypes == p->npools) return true;
  size_t n = 0;
  for (uint32_t t = 0; t < p->ntypes; t++) n += p->types[t].noff;
  bool same = cl->ptypes && cl->nptypes == p->npools && cl->nptypes_offers == 3 * n;
  for (uint32_t t = 0, k = 0; same && t < p->ntypes; t++)
    for (uint32_t o = 0; same && o < p->types[t].noff; o++, k += 3) {
      const rt_off *of = &p->types[t].off[o];
      same = !memcmp(&cl->ptypes_offers[k], &of->price, sizeof(double)) &&
             !memcmp(&cl->ptypes_offers[k + 1], &of->cap, sizeof(double)) &&
             cl->ptypes_offers[k + 2] == (of->avail != 0);
    }
  if (same) {
    if (gen) cl->ptypes_gen = gen;
    return true;
  }
  cl->ptypes_gen = gen;
  cl->ptypes = A(cl->base, (p->npools ? p->npools : 1) * sizeof *cl->ptypes);
  cl->ptypes_offers = A(cl->base, (n ? 3 * n : 1) * sizeof(double));
  if (!cl->ptypes || !cl->ptypes_offers) {
    cl->ptypes = NULL;
    return false;
  }
  memset(cl->ptypes, 0, (p->npools ? p->npools : 1) * sizeof *cl->ptypes);
  cl->nptypes = p->npools;
  cl->nptypes_offers = 3 * n;
  for (uint32_t t = 0, k = 0; t < p->ntypes; t++)
    for (uint32_t o = 0; o < p->types[t].noff; o++, k += 3) {
      const rt_off *of = &p->types[t].off[o];
      cl->ptypes_offers[k] = of->price;
      cl->ptypes_offers[k + 1] = of->cap;
      cl->ptypes_offers[k + 2] = of->avail != 0;
    }
  return true;
}

/* The kept types of the pool at position i, when kept for this very pool. */
static pool_types *kept_pool_types(dt_plan *p, uint32_t i, uint64_t zm, uint8_t cm) {
  if (!p->cl || !p->cl->ptypes || i >= p->cl->nptypes) return NULL;
  pool_types *k = &p->cl->ptypes[i];
  const rt_pool *pl = &p->pools[i];
  const dt_nodepool *np = pl->src;
  bool same = k->types && k->reqs == np->reqs.v && k->nreqs == np->reqs.n && k->labels == np->labels.v &&
              k->nlabels == np->labels.n && k->name == np->name && k->zm == zm && k->cm == cm &&
              !memcmp(&k->spot_max, &pl->spot_max, sizeof(double));
  return same ? k : NULL;
}

static pool_types *keep_pool_types(dt_plan *p, uint32_t i, uint64_t zm, uint8_t cm) {
  if (!p->cl || !p->cl->ptypes || i >= p->cl->nptypes) return NULL;
  const rt_pool *pl = &p->pools[i];
  const dt_nodepool *np = pl->src;
  uint32_t *types = A(p->cl->base, (pl->ntypes ? pl->ntypes : 1) * sizeof *types);
  if (!types) return NULL;
  memcpy(types, pl->types, pl->ntypes * sizeof *types);
  p->cl->ptypes[i] = (pool_types){np->reqs.v, np->labels.v, np->name, np->reqs.n, np->labels.n, zm,   cm, pl->spot_max,
                                  types,      pl->ntypes,   0,        0,          false,        false};
  return &p->cl->ptypes[i];
}

/* The pool's instance types satisfying its requirements, cheapest first;
** *kept: the cluster's entry for them (found or just kept), NULL none. */
static int pool_types_of(dt_plan *p, uint32_t i, const dt_reqs *r, uint64_t zm, uint8_t cm, bool keep,
                         pool_types **kept) {
  rt_pool *pl = &p->pools[i];
  *kept = NULL;
  pl->types = A(p, (p->ntypes ? p->ntypes : 1) * sizeof *pl->types);
  if (!pl->types) return DT_ENOMEM;
  pool_types *k = keep ? kept_pool_types(p, i, zm, cm) : NULL;
  if (k) {
    memcpy(pl->types, k->types, k->ntypes * sizeof *pl->types);
    pl->ntypes = k->ntypes;
    *kept = k;
    return 0;
  }
  for (uint32_t t = 0; t < p->ntypes; t++)
    if (dt__type_ok(p, &p->types[t], r, zm, cm, pl->spot_max)) pl->types[pl->ntypes++] = t;
  double *pr = dt__malloc((pl->ntypes ? pl->ntypes : 1) * sizeof *pr);
  if (!pr) return DT_ENOMEM;
  for (uint32_t t = 0; t < pl->ntypes; t++) pr[t] = p->types[pl->types[t]].min_price;
  int rc = dt__sched_sort_by_price(p, pl->types, pr, pl->ntypes);
  dt__free(pr);
  if (!rc && keep) *kept = keep_pool_types(p, i, zm, cm);
  return rc;
}

/* A NodePool requirement on a label of the catalog's provider (Karpenter's
** AWS provider gives every instance type karpenter.k8s.aws/instance-* labels,
** and its requirements filter them) that no type in this catalog carries:
** it cannot be checked, so the types are not filtered by it, and a note
** says so rather than launch silently what the requirement might exclude. */
static void unknown_provider_label(dt_plan *p, const dt_nodepool *np, const char *key) {
  static const struct {
    const char *provider, *domain, *says;
  } doms[] = {{"aws", "karpenter.k8s.aws/", "AWS"},
              {"azure", "karpenter.azure.com/", "Azure"},
              {"kwok", "karpenter.kwok.sh/", "KWOK"}};
  for (size_t d = 0; d < sizeof doms / sizeof *doms; d++) {
    if (strcmp(p->catalog->provider, doms[d].provider) || strncmp(key, doms[d].domain, strlen(doms[d].domain)))
      continue;
    dt_sym s = dt__sym_find(&p->syms, key);
    if (s && slot_of(p, s) >= 0) return;
    note_in(p,
            "%s: NodePool %s: requirement %s: no instance type in catalog %s has this label, so it is not checked; "
            "Karpenter's %s provider gives it to its types (add it to the catalog's labels to have it filter)",
            np->file, np->name, key, p->catalog->name, doms[d].says);
  }
}

/* The EC2NodeClass a NodePool names (karpenter.k8s.aws, EC2NodeClass), when
** the input holds it; a note when the input holds others but not that one. */
static const dt_nodeclass *nodeclass_of(dt_plan *p, const dt_nodepool *np) {
  const char *missing;
  const dt_nodeclass *nc = dt__nodeclass_of(p->manifests, np, &missing);
  if (missing)
    note_in(p,
            "%s: NodePool %s: spec.template.spec.nodeClassRef: EC2NodeClass %s is not in the input (which holds other "
            "EC2NodeClasses); its nodes are sized with the catalog's defaults",
            np->file, np->name, missing);
  return nc;
}

/* The zones of an EC2NodeClass's subnets, as a requirement on the pool:
** Karpenter's AWS provider offers a type only in those zones. */
static int subnet_zones(dt_plan *p, const dt_nodepool *np, const dt_nodeclass *nc, dt_reqs *r) {
  dt_sym *v = A(p, nc->nzones * sizeof *v);
  if (!v) return DT_ENOMEM;
  bool known = false;
  for (size_t i = 0; i < nc->nzones; i++) {
    v[i] = dt__sym(&p->syms, nc->zones[i]);
    if (!v[i]) return DT_ENOMEM;
    for (uint32_t z = 0; z < p->nzones; z++) known |= p->zones[z] == v[i];
  }
  if (!known)
    note_in(p,
            "%s: EC2NodeClass %s: status.subnets: its subnets are in zone%s %s%s, none of which catalog %s offers; "
            "NodePool %s launches nothing",
            nc->file, nc->name, nc->nzones > 1 ? "s" : "", nc->zones[0], nc->nzones > 1 ? ", ..." : "",
            p->catalog->name, np->name);
  dt_req q;
  dt__req_make(&p->arena, &q, p->k_zone, DT_OP_IN, v, (uint32_t)nc->nzones, &p->syms);
  dt__reqs_add(&p->arena, &p->syms, r, &q, r);
  return p->arena.oom || p->syms.oom ? DT_ENOMEM : 0;
}

/* rt_pool.alloc: each type's allocatable on the pool's nodes; the catalog's
** unless its EC2NodeClass's kubelet or volumes change it, with the extended
** resources NodeOverlays give it on this pool. */
static int pool_alloc(dt_plan *p, rt_pool *pl, const dt_nodeclass *nc, dt_error *err) {
  pl->alloc = A(p, (p->ntypes ? p->ntypes : 1) * sizeof *pl->alloc);
  if (!pl->alloc) return DT_ENOMEM;
  for (uint32_t t = 0; t < p->ntypes; t++) pl->alloc[t] = p->types[t].alloc;
  for (uint32_t k = 0; nc && k < pl->ntypes; k++) {
    const rt_type *ty = &p->types[pl->types[k]];
    int64_t cap[4], al[4];
    if (!dt__aws_node_resources(p->catalog, ty->src, nc, cap, al)) continue;
    if (ty->alloc[DT_R_CPU] == al[DT_NODE_CPU] && ty->alloc[DT_R_MEM] == al[DT_NODE_MEM] &&
        ty->alloc[DT_R_PODS] == al[DT_NODE_PODS] && ty->alloc[DT_R_EPH] == al[DT_NODE_EPH])
      continue;
    int64_t *v = A(p, DT_RES_MAX * sizeof *v);
    if (!v) return DT_ENOMEM;
    memcpy(v, ty->alloc, DT_RES_MAX * sizeof *v);
    v[DT_R_CPU] = al[DT_NODE_CPU], v[DT_R_MEM] = al[DT_NODE_MEM], v[DT_R_PODS] = al[DT_NODE_PODS];
    v[DT_R_EPH] = al[DT_NODE_EPH];
    pl->alloc[pl->types[k]] = v;
  }
  int32_t row = p->ovl ? dt__ovl_row(p->ovl, pl->src->name) : -1;
  for (uint32_t k = 0; row >= 0 && k < pl->ntypes; k++) {
    size_t c = (size_t)row * p->ovl->ntypes + pl->types[k];
    if (!p->ovl->ncap[c]) continue;
    int64_t *v = A(p, DT_RES_MAX * sizeof *v);
    if (!v) return DT_ENOMEM;
    memcpy(v, pl->alloc[pl->types[k]], DT_RES_MAX * sizeof *v);
    for (uint16_t i = 0; i < p->ovl->ncap[c]; i++) { /* Karpenter's capacity overlay sets each resource it names */
      int ri = res_index(p, p->ovl->cap[c][i].name, err);
      if (ri < 0) return ri;
      v[ri] = p->ovl->cap[c][i].milli;
    }
    pl->alloc[pl->types[k]] = v;
  }
  return 0;
}

/* dt_plan.zid: every zone ID the EC2NodeClasses' subnets name, once. */
static int zone_ids(dt_plan *p) {
  const dt_manifests *m = p->manifests;
  size_t n = 0;
  for (size_t i = 0; i < m->nodeclasses.n; i++) n += m->nodeclasses.v[i].nzones;
  p->nzid = 0;
  if (!n) return 0;
  p->zid = A(p, n * sizeof *p->zid);
  p->zid_zone = A(p, n * sizeof *p->zid_zone);
  if (!p->zid || !p->zid_zone) return DT_ENOMEM;
  for (size_t i = 0; i < m->nodeclasses.n; i++) {
    const dt_nodeclass *c = &m->nodeclasses.v[i];
    for (size_t k = 0; k < c->nzones; k++) {
      if (!c->zone_ids[k]) continue;
      bool seen = false;
      for (size_t j = 0; j < p->nzid && !seen; j++) seen = !strcmp(p->zid[j], c->zone_ids[k]);
      if (!seen) p->zid[p->nzid] = c->zone_ids[k], p->zid_zone[p->nzid++] = c->zones[k];
    }
  }
  return 0;
}

int dt__sched_compile_pools(dt_plan *p, dt_error *err) {
  const dt_manifests *m = p->manifests;
  if (zone_ids(p)) return DT_ENOMEM;
  p->npools = (uint32_t)m->pools.n;
  p->pools = A(p, (p->npools ? p->npools : 1) * sizeof *p->pools);
  if (!p->pools) return DT_ENOMEM;
  for (uint32_t i = 0; i < p->npools; i++) p->pools[i].src = &m->pools.v[i];
  qsort(p->pools, p->npools, sizeof *p->pools, cmp_pool);
  bool keep = overlay_offers_same(p); /* an overlay: the pools' types as the cluster's last overlay chose them */
  for (uint32_t i = 0; i < p->npools; i++) {
    rt_pool *pl = &p->pools[i];
    const dt_nodepool *np = pl->src;
    if (!strcmp(p->catalog->provider, "aws")) {
      char why[300];
      for (size_t k = 0; k < np->labels.n; k++)
        if (dt__aws_label_refused(np->labels.v[k].key, why, sizeof why))
          return dt__err(err, DT_EINVAL, "%s: NodePool %s: spec.template.metadata.labels.%s: label %.100s %s", np->file,
                         np->name, np->labels.v[k].key, np->labels.v[k].key, why);
      for (size_t k = 0; k < np->reqs.n; k++)
        if (dt__aws_label_refused(np->reqs.v[k].key, why, sizeof why))
          return dt__err(err, DT_EINVAL, "%s: NodePool %s: spec.template.spec.requirements: label %.100s %s", np->file,
                         np->name, np->reqs.v[k].key, why);
    }
    pl->name = dt__sym(&p->syms, np->name);
    pl->replicas = np->replicas;
    pl->spot_max = np->spot_max >= 0 ? np->spot_max : INFINITY;
    pl->policy = p->opts.policy;
    if (np->policy) {
      pl->policy = NULL;
      for (size_t k = 0; k < p->opts.npool_policies; k++)
        if (!strcmp(p->opts.pool_policy_names[k], np->policy)) pl->policy = p->opts.pool_policies[k];
      /* A missing policy costs this pool its hooks, never the plan: the
      ** built-in defaults decide for it and the note says why. */
      if (!pl->policy)
        note_in(
            p,
            "%s: NodePool %s: metadata.annotations.dovetail.dev/policy: no policy named \"%s\" was loaded (is it "
            "in the policy directory, and does it pass dovetail check?); the built-in defaults decide for this pool",
            np->file, np->name, np->policy);
    }
    dt_reqs r = {0};
    dt_req *qs = dt__malloc((np->reqs.n + np->labels.n + 1) * sizeof *qs);
    if (!qs) return DT_ENOMEM;
    size_t nq = 0;
    for (size_t k = 0; k < np->reqs.n; k++)
      if (compile_mreq(p, &np->reqs.v[k], &qs[nq++])) {
        dt__free(qs);
        return DT_ENOMEM;
      }
    for (size_t k = 0; k < np->labels.n; k++) {
      dt_sym v = dt__sym(&p->syms, np->labels.v[k].val);
      dt__req_make(&p->arena, &qs[nq++], dt__sym(&p->syms, np->labels.v[k].key), DT_OP_IN, &v, 1, &p->syms);
    }
    dt__reqs_add_many(&p->arena, &p->syms, &r, qs, nq, &r);
    dt__free(qs);
    dt_req q;
    dt__req_make(&p->arena, &q, p->k_pool, DT_OP_IN, &pl->name, 1, &p->syms);
    dt__reqs_add(&p->arena, &p->syms, &r, &q, &r);
    const dt_nodeclass *nc = pl->nodeclass = nodeclass_of(p, np);
    if (nc && nc->nzones && subnet_zones(p, np, nc, &r)) return DT_ENOMEM;
    pl->reqs = r;
    pl->ntaints = (uint32_t)np->ntaints;
    pl->taints = compile_taints(p, np->taints, np->ntaints);
    uint64_t zm;
    uint8_t cm;
    masks(p, &r, &zm, &cm);
    if (!pl->taints) return DT_ENOMEM;
    pool_types *kept;
    int trc = pool_types_of(p, i, &r, zm, cm, keep, &kept);
    if (trc) return trc;
    char buf[600];
    const char *out = dt__x_pool_left_out(pl, buf, sizeof buf);
    if (out) {
      note_in(p, "%s: NodePool %s: %s; no claim is launched for it, as Karpenter's provisioner leaves it out", np->file,
              np->name, out);
      pl->ntypes = 0;
    } else if (pl->ntypes == 0) {
      note_in(p, "NodePool %s: no instance type in the catalog satisfies its requirements", np->name);
    }
    for (size_t k = 0; k < np->reqs.n; k++) unknown_provider_label(p, np, np->reqs.v[k].key);
    for (size_t k = 0; k < np->reqs.n; k++) pl->has_min_values |= np->reqs.v[k].min_values > 0;
    for (uint32_t k = 0; k < pl->ntaints; k++)
      pl->has_prefer_taint |= pl->taints[k].effect == DT_TAINT_PREFER_NO_SCHEDULE;
    p->any_prefer_taint |= pl->has_prefer_taint;
    /* what its types offer (kept with its types, under the same offerings) */
    if (kept && kept->universe_ok) {
      pl->has_reserved |= kept->has_reserved;
      pl->universe_z = kept->universe_z;
      pl->universe_c = kept->universe_c;
      p->universe_z |= kept->universe_z;
      p->universe_c |= kept->universe_c;
    } else {
      uint64_t uz = 0;
      uint8_t uc = 0;
      bool resv = false;
      for (uint32_t t = 0; t < pl->ntypes; t++) {
        const rt_type *ty = &p->types[pl->types[t]];
        for (uint32_t o = 0; o < ty->noff; o++)
          if (off_ok(&ty->off[o], zm, cm, pl->spot_max)) {
            resv |= ty->off[o].ct == DT_CT_RESERVED;
            uz |= 1ull << ty->off[o].zone;
            uc |= (uint8_t)(1u << ty->off[o].ct);
          }
      }
      pl->has_reserved |= resv;
      pl->universe_z = uz;
      pl->universe_c = uc;
      p->universe_z |= uz;
      p->universe_c |= uc;
      if (kept) {
        kept->universe_z = uz;
        kept->universe_c = uc;
        kept->has_reserved = resv;
        kept->universe_ok = true;
      }
    }
    int arc = pool_alloc(p, pl, nc, err);
    if (arc) return arc;
    int drc = daemon_overhead(p, pl, zm, cm, err);
    if (drc) return drc;
    for (uint32_t k = 0; k < DT_RES_MAX; k++) pl->remaining[k] = INT64_MAX;
    pl->nodes_remaining = -1;
    for (size_t k = 0; k < np->limits.n; k++) {
      if (strcmp(np->limits.v[k].name, "nodes") == 0) {
        pl->nodes_remaining = np->limits.v[k].milli / 1000;
        pl->has_limits = true;
        continue;
      }
      int ri = res_index(p, np->limits.v[k].name, err);
      if (ri < 0) return ri;
      pl->remaining[ri] = np->limits.v[k].milli;
      pl->has_limits = true;
    }
  }
  if (!p->cl) p->early_syms = p->syms.n; /* an overlay has its cluster's: what every view interns alike */
  return 0;
}

/* Nodes in the order existing capacity is tried: initialized first, then by
** name; nodes of the same name in input order. */
static int cmp_node(const void *a, const void *b) {
  const rt_node *x = a, *y = b;
  bool xi = x->src->initialized && !x->initializing, yi = y->src->initialized && !y->initializing;
  if (xi != yi) return xi ? -1 : 1;
  int c = strcmp(x->src->name, y->src->name);
  return c ? c : (x->src > y->src) - (x->src < y->src);
}

/* rt_node.initializing: a Node of NodePool `pool` without the
** karpenter.sh/initialized label that is NotReady or still carries an
** ephemeral taint or one of its NodePool's startupTaints. Karpenter's state
** leaves those taints out until the node initializes (statenode.go Taints)
** and its provisioner does not ask for readiness, so pods are planned onto
** it rather than onto a new node. A Ready node without them is as good as
** initialized and is left as it is. */
static void initializing(dt_plan *p, const dt_node *n, dt_sym pool, rt_node *r) {
  if (!pool || n->claim_name) return;
  const char *init = dt__kv_get(n->labels.v, n->labels.n, "karpenter.sh/initialized");
  if (init && !strcmp(init, "true")) return;
  const dt_nodepool *np = NULL;
  for (uint32_t k = 0; k < p->npools && !np; k++)
    if (p->pools[k].name == pool) np = p->pools[k].src;
  uint32_t keep = 0, nleft = 0;
  rt_taint left[8];
  bool any = !n->ready;
  for (size_t i = 0; i < n->ntaints; i++) {
    const dt_taint *t = &n->taints[i];
    bool startup = false;
    for (size_t k = 0; np && k < np->nstartup && !startup; k++) {
      const dt_taint *s = &np->startup[k];
      startup = !strcmp(s->key, t->key) && !strcmp(s->effect ? s->effect : "", t->effect ? t->effect : "") &&
                !strcmp(s->value ? s->value : "", t->value ? t->value : "");
    }
    if ((startup || dt__ephemeral_taint(t->key)) && nleft < 8) {
      left[nleft++] = r->taints[i];
      any = true;
    } else {
      r->taints[keep++] = r->taints[i];
    }
  }
  /* the taints left out after the others, so a claim found initialized
  ** (dt__sched_node_initialized) puts them back */
  memcpy(r->taints + keep, left, nleft * sizeof *left);
  r->initializing = any;
  r->ntaints = keep;
}

/* The DaemonSets compiled once for every node's ds_want. */
static int ds_compile(dt_plan *p, dt_error *err) {
  const dt_manifests *m = p->manifests;
  size_t n = m->daemonsets.n;
  p->ds_ready = true;
  p->ds_req = A(p, n * sizeof *p->ds_req);
  p->ds_alt = A(p, n * sizeof *p->ds_alt);
  p->nds_alt = A(p, n * sizeof *p->nds_alt);
  if (!p->ds_req || !p->ds_alt || !p->nds_alt) return DT_ENOMEM;
  for (size_t d = 0; d < n; d++) {
    const dt_podspec *ds = &m->daemonsets.v[d];
    memset(p->ds_req[d], 0, sizeof p->ds_req[d]);
    int rc = rlist_vec(p, &ds->requests, p->ds_req[d], err);
    if (rc) return rc;
    p->nds_alt[d] = ds->nterms ? (uint32_t)ds->nterms : 1;
    p->ds_alt[d] = A(p, p->nds_alt[d] * sizeof **p->ds_alt);
    if (!p->ds_alt[d]) return DT_ENOMEM;
    for (uint32_t a = 0; a < p->nds_alt[d]; a++) {
      memset(&p->ds_alt[d][a], 0, sizeof p->ds_alt[d][a]);
      if (dt__sched_compile_selector_kvs(p, &ds->node_selector, &p->ds_alt[d][a]) ||
          (ds->nterms && dt__sched_compile_mreqs(p, &ds->terms[a], &p->ds_alt[d][a])))
        return DT_ENOMEM;
    }
  }
  return 0;
}

/* rt_node.ds_want: the DaemonSets whose pods belong on r. */
static int ds_want(dt_plan *p, rt_node *r, dt_error *err) {
  const dt_manifests *m = p->manifests;
  if (!m->daemonsets.n) return 0;
  int rc;
  if (!p->ds_ready && (rc = ds_compile(p, err))) return rc;
  int64_t sum[DT_RES_MAX] = {0};
  bool any = false;
  for (size_t d = 0; d < m->daemonsets.n; d++) {
    if (m->daemonsets.v[d].dra || !tolerates(p, &m->daemonsets.v[d], r->taints, r->ntaints, true, NULL)) continue;
    bool ok = false;
    for (uint32_t a = 0; a < p->nds_alt[d] && !ok; a++) ok = node_labels_match(p, r, &p->ds_alt[d][a]);
    if (!ok) continue;
    for (uint32_t k = 0; k < DT_RES_MAX; k++) sum[k] = dt__qty_add(sum[k], p->ds_req[d][k]);
    any = true;
  }
  if (!any) return 0;
  int64_t *w = A(p, sizeof sum);
  if (!w) return DT_ENOMEM;
  memcpy(w, sum, sizeof sum);
  r->ds_want = w;
  return 0;
}

void dt__sched_ds_reserve(rt_node *r, const int64_t *bound) {
  if (!r->ds_want) return;
  for (uint32_t k = 0; k < DT_RES_MAX; k++) {
    int64_t due = r->ds_want[k] - (bound ? bound[k] : 0);
    if (due > 0) r->used[k] = dt__qty_add(r->used[k], due);
  }
}

void dt__sched_node_initialized(rt_node *r) {
  r->initializing = false;
  r->ntaints = r->ntaints_all;
}

int dt__sched_compile_node(dt_plan *p, const dt_node *n, rt_node *r, node_facts *f, dt_error *err) {
  memset(r, 0, sizeof *r);
  memset(f, 0, sizeof *f);
  f->type = -1;
  const char *own = dt__kv_get(n->labels.v, n->labels.n, DT_L_NODEPOOL);
  f->own = own ? dt__sym(&p->syms, own) : 0;
  r->src = n;
  r->name = dt__sym(&p->syms, n->name);
  r->nlabels = (uint32_t)n->labels.n;
  r->lk = A(p, (n->labels.n + 1) * sizeof *r->lk);
  r->lval = A(p, (n->labels.n + 1) * sizeof *r->lval);
  if (!r->lk || !r->lval) return DT_ENOMEM;
  const char *itype = NULL, *pool = NULL;
  for (size_t k = 0; k < n->labels.n; k++) {
    r->lk[k] = dt__sym(&p->syms, n->labels.v[k].key);
    r->lval[k] = dt__sym(&p->syms, n->labels.v[k].val);
    if (!strcmp(n->labels.v[k].key, DT_L_INSTANCE_TYPE)) itype = n->labels.v[k].val;
    if (!strcmp(n->labels.v[k].key, DT_L_NODEPOOL)) pool = n->labels.v[k].val;
  }
  f->itype = itype;
  f->pool = pool ? dt__sym(&p->syms, pool) : 0;
  const rt_type *t = itype ? find_type(p, itype) : NULL;
  f->type = t ? (int32_t)(t - p->types) : -1;
  if (n->allocatable.n) {
    int rc = rlist_vec(p, &n->allocatable, r->alloc, err);
    if (rc) return rc;
    if (!r->alloc[DT_R_PODS]) r->alloc[DT_R_PODS] = 110 * 1000;
  } else if (!t) {
    f->skip = true;
    return 0;
  } else {
    /* a claim not launched yet: its type's allocatable on its pool's nodes */
    const int64_t *al = t->alloc;
    for (uint32_t k = 0; k < p->npools && f->pool; k++)
      if (p->pools[k].name == f->pool && p->pools[k].alloc) al = p->pools[k].alloc[f->type];
    memcpy(r->alloc, al, sizeof r->alloc);
  }
  r->ntaints = r->ntaints_all = (uint32_t)n->ntaints;
  r->taints = compile_taints(p, n->taints, n->ntaints);
  if (!r->taints) return DT_ENOMEM;
  initializing(p, n, f->pool, r);
  int rc = ds_want(p, r, err);
  if (rc) return rc;
  r->zone = r->ct = -1;
  for (uint32_t k = 0; k < r->nlabels; k++) {
    if (r->lk[k] == p->k_zone)
      for (uint32_t z = 0; z < p->nzones; z++)
        if (p->zones[z] == r->lval[k]) r->zone = (int)z;
    if (r->lk[k] == p->k_ct)
      for (int c = 0; c < DT_CT_N; c++)
        if (p->ct_sym[c] == r->lval[k]) r->ct = c;
  }
  return 0;
}

/* A static pool counts every NodeClaim and Node of its own, whatever the
** catalog knows of them; those being deleted only against limits. */
void dt__sched_count_static(dt_plan *p, const dt_node *n, dt_sym own) {
  for (uint32_t k = 0; own && k < p->npools; k++)
    if (p->pools[k].replicas >= 0 && p->pools[k].name == own) {
      p->pools[k].static_all++;
      p->pools[k].static_have += !n->deleting;
    }
}

void dt__sched_skipped_node(dt_plan *p, const dt_node *n, const char *itype) {
  note_in(p, "%s: %s %s has no status.allocatable and %s; skipped", n->file, n->kind, n->name,
          itype ? "its instance type is not in the catalog" : "no instance-type label");
}

void dt__sched_node_pool(dt_plan *p, rt_node *r, dt_sym pool) {
  r->pool = -1;
  for (uint32_t k = 0; pool && k < p->npools; k++)
    if (p->pools[k].name == pool) r->pool = (int)k;
}

/* What the nodes, sorted, hold of reservations and of their pools' limits;
** type[i] is node i's instance type (-1 unknown), or NULL to look it up. */
void dt__sched_charge_nodes(dt_plan *p, const int32_t *type) {
  /* Nodes and in-flight claims in a capacity reservation hold one unit each:
  ** a plan never launches into a reservation more than it has left. */
  for (uint32_t i = 0; i < p->nnodes; i++) {
    const rt_node *r = &p->nodes[i];
    for (uint32_t k = 0; k < r->nlabels; k++) {
      if (r->lk[k] != p->k_resv) continue;
      bool found = false;
      for (uint32_t t = 0; t < p->ntypes && !found; t++)
        for (uint32_t o = 0; o < p->types[t].noff && !found; o++) {
          const rt_off *of = &p->types[t].off[o];
          if (of->ct == DT_CT_RESERVED && of->resv == r->lval[k]) {
            if (of->avail > 0) dt__offs_mut(p, t)[o].avail--;
            found = true;
          }
        }
    }
  }
  /* Existing nodes count against their pool's limits (by capacity when we
  ** know the type, else by allocatable). */
  for (uint32_t i = 0; i < p->nnodes; i++) {
    rt_node *r = &p->nodes[i];
    if (r->pool < 0) continue;
    rt_pool *pl = &p->pools[r->pool];
    bool limited = false;
    for (uint32_t k = 0; k < p->nres; k++) limited |= pl->remaining[k] != INT64_MAX;
    if (limited) {
      const rt_type *t = NULL;
      if (type)
        t = type[i] >= 0 ? &p->types[type[i]] : NULL;
      else
        for (uint32_t k = 0; k < r->nlabels; k++)
          if (r->lk[k] == p->k_type) t = find_type(p, dt__sym_str(&p->syms, r->lval[k]));
      for (uint32_t k = 0; k < p->nres; k++)
        if (pl->remaining[k] != INT64_MAX)
          pl->remaining[k] = dt__qty_add(pl->remaining[k] > DT_QTY_CAP ? DT_QTY_CAP : pl->remaining[k],
                                         -(t ? t->cap[k] : r->alloc[k]));
    }
    if (pl->nodes_remaining > 0) pl->nodes_remaining--;
  }
}

int dt__sched_compile_nodes_overlay(dt_plan *p, dt_error *err);

int dt__sched_compile_nodes(dt_plan *p, dt_error *err) {
  if (p->ov) return dt__sched_compile_nodes_overlay(p, err);
  const dt_manifests *m = p->manifests;
  p->nodes = A(p, (m->nodes.n ? m->nodes.n : 1) * sizeof *p->nodes);
  if (!p->nodes) return DT_ENOMEM;
  /* A Node that a NodeClaim in the input already stands for is the same
  ** capacity: keep the Node (it is registered), drop the claim. */
  int32_t *paired = A(p, (m->nodes.n ? m->nodes.n : 1) * sizeof *paired);
  int32_t *at = A(p, (m->nodes.n ? m->nodes.n : 1) * sizeof *at); /* input node -> plan node, -1 none */
  if (!paired || !at || dt__claims_paired(m, paired)) return DT_ENOMEM;
  for (size_t i = 0; i < m->nodes.n; i++) {
    const dt_node *n = &m->nodes.v[i];
    at[i] = -1;
    if (paired[i] >= 0) continue;
    at[i] = (int32_t)p->nnodes;
    rt_node *r = &p->nodes[p->nnodes];
    node_facts f;
    int rc = dt__sched_compile_node(p, n, r, &f, err);
    if (rc) return rc;
    dt__sched_count_static(p, n, f.own);
    if (f.skip) {
      dt__sched_skipped_node(p, n, f.itype);
      continue;
    }
    dt__sched_node_pool(p, r, f.pool);
    p->nnodes++;
  }
  /* A claim's nominated pods (dovetail.dev/pods) wait for its Node: they are
  ** on it, not pending, until they are bound. */
  for (size_t i = 0; i < m->nodes.n; i++)
    if (paired[i] >= 0 && at[paired[i]] >= 0 && (size_t)at[paired[i]] < p->nnodes &&
        p->nodes[at[paired[i]]].src == &m->nodes.v[paired[i]]) {
      p->nodes[at[paired[i]]].claim = &m->nodes.v[i];
      p->nodes[at[paired[i]]].closed = dt__node_disrupted(&m->nodes.v[i]);
      /* its NodeClaim says Initialized (the daemon's own say so at launch) */
      if (m->nodes.v[i].initialized) dt__sched_node_initialized(&p->nodes[at[paired[i]]]);
    }
  qsort(p->nodes, p->nnodes, sizeof *p->nodes, cmp_node);
  dt__sched_charge_nodes(p, NULL);
  return 0;
}

/* Node index by name symbol: a node's name, or the node name a NodeClaim
** carries; the first node of a name in the plan's order wins. Built on
** first use. */
int32_t dt__sched_node_by_sym(dt_plan *p, dt_sym s) {
  if (!p->node_at) {
    uint32_t n = 0;
    dt_sym *alias = A(p, (p->nnodes ? p->nnodes : 1) * sizeof *alias);
    if (!alias) return -1;
    for (uint32_t i = 0; i < p->nnodes; i++) {
      const dt_node *d = p->nodes[i].src;
      alias[i] = d->node_name ? dt__sym(&p->syms, d->node_name) : 0;
      if (p->nodes[i].name > n) n = p->nodes[i].name;
      if (alias[i] > n) n = alias[i];
    }
    p->node_at = A(p, ((size_t)n + 1) * sizeof *p->node_at);
    if (!p->node_at) return -1;
    p->nnode_at = n + 1;
    for (uint32_t i = 0; i <= n; i++) p->node_at[i] = -1;
    for (uint32_t i = p->nnodes; i-- > 0;) { /* the first node of a name wins */
      if (alias[i]) p->node_at[alias[i]] = (int32_t)i;
      p->node_at[p->nodes[i].name] = (int32_t)i;
    }
  }
  return s && s < p->nnode_at ? p->node_at[s] : -1;
}

int32_t dt__sched_node_by_name(dt_plan *p, const char *name) {
  dt__sched_node_by_sym(p, 0); /* the index first: it interns the claims' node names */
  return dt__sched_node_by_sym(p, dt__sym_find(&p->syms, name));
}
