/*
** sched.c: Karpenter's provisioning scheduler, first-fit-decreasing.
**
** A run compiles the catalog and the manifests into integer form (interned
** labels, resource vectors in milli-units, per-NodePool lists of compatible
** instance types), then places pods one by one in Karpenter's order:
** sorted by cpu, then memory, descending; each pod tries existing and
** in-flight nodes, then the node claims opened in this run (least loaded
** first), then a new claim from each NodePool by weight. A claim keeps every
** instance type that still fits its pods; at the end it launches the best
** offering of the remaining types. See reference: karpenter.md 1.3-1.5, 1.12.
**
** What makes it fast without changing a decision:
**   - pods with the same requests and constraints form a class; a claim or
**     node that refused a class refuses it for the rest of the run (claims
**     only fill up and narrow), so each (claim, class) pair fails once;
**   - a claim's options are kept in price order and pruned from the front:
**     the types a pod skipped over before the first that fits cannot fit
**     once the pod is added;
**   - a claim that cannot fit even the smallest pod still queued is closed
**     and leaves the search;
**   - a disruption pass's simulations plan overlays of one compiled cluster
**     (dt__plan_run_overlay, at the end of this file): nodes, pod specs and
**     names are compiled once, and a bound pod's use reaches its node
**     through a per-name sum, so a simulation does integer work per node,
**     not string work per pod; the pod names in-flight claims carry
**     (dovetail.dev/pods) are indexed once per cluster, not per simulation;
**   - a policy's score hook is called once per offering and plan, and each
**     claim's best offering by score is found natively (score_pick).
**
** The phases live in their own files, in run order: sched_compile.c (the
** catalog, NodePools and nodes), sched_pods.c (pods, classes, topology
** groups), sched_solve.c (placing pods), sched_launch.c (each claim's
** offering); sched_int.h is what they share. This file holds the entry
** (dt_plan_run and its variants, static pools' claims) and, at its end, the
** compiled cluster that a disruption pass's simulations overlay.
*/
#include "sched_int.h"

#include <stdatomic.h>

/* ------------------------------------------------------------ helpers */

/* Whether instance type t satisfies the requirements' label constraints and
** has an available offering within the masks. */
bool dt__type_labels_ok(const dt_plan *p, const rt_type *t, const dt_reqs *r) {
  for (uint32_t i = 0; i < r->n; i++) {
    int16_t s = slot_of(p, r->r[i].key);
    if (s < 0) continue;
    if (!dt__req_has(&p->syms, &r->r[i], t->lv[s])) return false;
  }
  return true;
}

bool dt__type_ok(const dt_plan *p, const rt_type *t, const dt_reqs *r, uint64_t zmask, uint8_t ctmask,
                 double spot_max) {
  return dt__type_labels_ok(p, t, r) && type_offered(t, zmask, ctmask, spot_max);
}

void dt__reqs_order(const dt_plan *p, const dt_reqs *r, uint32_t *idx) {
  for (uint32_t i = 0; i < r->n; i++) {
    uint32_t k = i;
    for (; k > 0 && key_before(p, r->r[i].key, r->r[idx[k - 1]].key); k--) idx[k] = idx[k - 1];
    idx[k] = i;
  }
}

void dt__pod_name(const dt_plan *p, const rt_pod *pod, char *buf, size_t n) {
  const dt_podspec *s = &p->manifests->pods.v[pod->spec];
  size_t a = strlen(s->ns), b = strlen(s->name);
  if (pod->ordinal < 0 && a + b + 2 <= n) { /* the common case, without printf */
    memcpy(buf, s->ns, a);
    buf[a] = '/';
    memcpy(buf + a + 1, s->name, b + 1);
  } else if (pod->ordinal < 0) {
    snprintf(buf, n, "%s/%s", s->ns, s->name);
  } else {
    snprintf(buf, n, "%s/%s-%lld", s->ns, dt__replica_base(s), (long long)pod->ordinal);
  }
}

/* -------------------------------------------------------------- entry */

/*
** Static NodePools (spec.replicas), as Karpenter's static provisioning
** controller: a pool with fewer NodeClaims than replicas (its Nodes and
** in-flight claims not being deleted) gets the difference, within what
** limits.nodes leaves once every claim of the pool is counted (those being
** deleted too). Pending pods never size it. Each claim takes the offering
** the pool's requirements allow that launch would choose (reserved while
** available, then the cheapest, or the rank hook's), chosen before any pod,
** and pods then use it as they use in-flight capacity. A pool above its
** replicas is scaled down by dovetail disrupt (Overprovisioned).
*/
static int static_claims(dt_plan *p) {
  static const int64_t zero[DT_RES_MAX];
  for (uint32_t pi = 0; pi < p->npools; pi++) {
    rt_pool *pl = &p->pools[pi];
    const dt_nodepool *np = pl->src;
    if (pl->replicas < 0) continue;
    int64_t want = pl->replicas - pl->static_have, limit = -1;
    for (size_t i = 0; i < np->limits.n; i++)
      if (!strcmp(np->limits.v[i].name, "nodes")) limit = np->limits.v[i].milli / 1000;
    if (want < 0)
      note(p,
           "NodePool %s is static (spec.replicas %lld) and has %lld NodeClaims: dovetail disrupt scales it down "
           "(Overprovisioned)",
           np->name, (long long)pl->replicas, (long long)pl->static_have);
    if (want <= 0) continue;
    if (limit >= 0 && limit - pl->static_all < want) {
      int64_t room = limit - pl->static_all > 0 ? limit - pl->static_all : 0;
      note(p,
           "NodePool %s is static (spec.replicas %lld, %lld NodeClaims): limits.nodes %lld leaves room for %lld "
           "more (claims being deleted count until they are gone)",
           np->name, (long long)pl->replicas, (long long)pl->static_have, (long long)limit, (long long)room);
      want = room;
    }
    uint32_t *opt = A(p, (pl->ntypes ? pl->ntypes : 1) * sizeof *opt), n = 0;
    if (!opt) return DT_ENOMEM;
    for (uint32_t i = 0; i < pl->ntypes; i++)
      if (fits(p, pl->eff[pl->types[i]], zero, zero)) opt[n++] = pl->types[i];
    uint64_t zm;
    uint8_t cm;
    masks(p, &pl->reqs, &zm, &cm);
    int64_t made = 0;
    const char *why = NULL;
    if (!n)
      why = "no instance type of the catalog satisfies its requirements and holds its DaemonSets";
    else if (pl->has_min_values && !dt__min_values_ok(p, &pl->reqs, opt, n))
      why = "its instance types cannot meet its minValues";
    for (; !why && made < want; made++) {
      rt_claim *k = A(p, sizeof *k);
      uint32_t *one = A(p, sizeof *one);
      if (!k || !one) return DT_ENOMEM;
      k->pool = pi;
      k->idx = (uint32_t)p->claims.n;
      k->reqs = pl->reqs;
      k->zmask = k->zopen = zm;
      k->ctmask = k->copen = cm;
      k->type = k->off = -1;
      k->fixed = true;
      int32_t bt = -1, bo = -1;
      for (uint32_t i = 0; i < n; i++) {
        const rt_type *t = &p->types[opt[i]];
        for (uint32_t o = 0; o < t->noff; o++) {
          const rt_off *of = &t->off[o];
          if (!off_ok(of, zm, cm, pl->spot_max) || (of->avail >= 0 && of->avail - of->held <= 0)) continue;
          if (dt__sched_off_better(p, opt[i], o, bt, bo, NULL)) {
            bt = (int32_t)opt[i];
            bo = (int32_t)o;
          }
        }
      }
      const char *excluded = NULL;
      if (bt >= 0) {
        int rc = dt__sched_hook_pick(p, k, opt, n, &bt, &bo, &excluded);
        if (rc) return rc;
      }
      if (bt < 0 || (p->types[bt].off[bo].avail >= 0 && p->types[bt].off[bo].avail - p->types[bt].off[bo].held <= 0)) {
        why = excluded ? excluded : "every offering its requirements allow is exhausted (availability counts)";
        break;
      }
      rt_off *of = &dt__offs_mut(p, (uint32_t)bt)[bo];
      k->zmask = 1ull << of->zone;
      k->ctmask = (uint8_t)(1u << of->ct);
      one[0] = (uint32_t)bt;
      k->opt = one;
      k->nopt = 1;
      /* the unit is its own from now: other claims see it held */
      if (of->avail >= 0) {
        of->held++;
        if (dt__vec_push(&k->held, p->off_base[bt] + (uint32_t)bo)) return DT_ENOMEM;
      }
      if (dt__vec_push(&p->claims, k)) {
        dt__free(k->held.v);
        return DT_ENOMEM;
      }
    }
    if (why)
      note(p, "NodePool %s is static (spec.replicas %lld, %lld NodeClaims): %lld of %lld new NodeClaims planned: %s",
           np->name, (long long)pl->replicas, (long long)pl->static_have, (long long)made, (long long)want, why);
    else
      note(p, "NodePool %s is static (spec.replicas %lld): %lld NodeClaims exist, %lld planned", np->name,
           (long long)pl->replicas, (long long)pl->static_have, (long long)made);
  }
  p->nfixed = (uint32_t)p->claims.n;
  return 0;
}

/* VMs that VirtualMachinePools are about to create need capacity: their
** virt-launcher pods join the pending pods, so a pool's scale-out and the
** nodes it needs are planned in one run. The plan then reads a view of the
** manifests (in its arena) with those pods appended. */
static int add_pool_vms(dt_plan *p, dt_error *err) {
  const dt_manifests *m = p->manifests;
  if (!m->vmpools.n) return 0;
  dt_pool_opts po = {p->opts.now, p->opts.seed, p->opts.policy};
  dt_pools *r = NULL;
  int rc = dt__pools_run_lean(m, &po, &r, err);
  if (rc) return rc;
  size_t nc, extra = 0;
  const dt_pool_create *c = dt__pools_creates(r, &nc);
  for (size_t i = 0; i < nc; i++) extra += m->vmpools.v[c[i].pool].runs;
  if (extra) {
    dt_manifests *view = A(p, sizeof *view);
    dt_podspec *pods = A(p, (m->pods.n + extra) * sizeof *pods);
    if (!view || !pods) {
      dt_pools_free(r);
      return DT_ENOMEM;
    }
    *view = *m;
    if (m->pods.n) memcpy(pods, m->pods.v, m->pods.n * sizeof *pods);
    size_t n = m->pods.n;
    for (size_t i = 0; i < nc; i++) {
      const dt_vmpool *vp = &m->vmpools.v[c[i].pool];
      if (!vp->runs) continue;
      char name[600];
      snprintf(name, sizeof name, "virt-launcher-%s-%lld", vp->name, (long long)c[i].index);
      pods[n] = vp->launcher;
      pods[n].name = dt__arena_strdup(&p->arena, name);
      pods[n].count = 1;
      pods[n].owner = NULL;
      pods[n].seq = m->seq + n;
      n++;
    }
    view->pods.v = pods;
    view->pods.n = view->pods.cap = n;
    p->manifests = view;
    note(p, "%zu VMs that VirtualMachinePools create join the pending pods as virt-launcher pods", extra);
  }
  dt_pools_free(r);
  return p->arena.oom ? DT_ENOMEM : 0;
}

/* The names every plan interns first, in this order (the catalog's follow),
** and the base resources. */
static int plan_begin(dt_plan *p) {
  p->k_zone = dt__sym(&p->syms, DT_L_ZONE);
  p->k_ct = dt__sym(&p->syms, DT_L_CAPACITY_TYPE);
  p->k_type = dt__sym(&p->syms, DT_L_INSTANCE_TYPE);
  p->k_pool = dt__sym(&p->syms, DT_L_NODEPOOL);
  p->k_hostname = dt__sym(&p->syms, DT_L_HOSTNAME);
  p->k_interruptible = dt__sym(&p->syms, DT_L_INTERRUPTIBLE);
  p->k_resv = dt__sym(&p->syms, DT_L_RESERVATION);
  p->k_arch = dt__sym(&p->syms, DT_L_ARCH);
  p->k_os = dt__sym(&p->syms, DT_L_OS);
  p->k_region = dt__sym(&p->syms, DT_L_REGION);
  for (int i = 0; i < DT_CT_N; i++) p->ct_sym[i] = dt__sym(&p->syms, dt__ct_names[i]);
  static const char *base[] = {"cpu", "memory", "pods", "ephemeral-storage"};
  int rc = 0;
  for (int i = 0; i < 4 && rc >= 0; i++) rc = res_index(p, base[i], NULL);
  return rc < 0 || p->syms.oom ? DT_ENOMEM : 0;
}

/*
** A catalog compiled once for many runs on it (a disruption pass's
** simulations): a plan stopped after compile_catalog. A run given it starts
** from a copy: its symbol table borrows the compiled names (so every symbol
** has the number compile_catalog would give it), type keys and label values
** are shared read-only, and the types and their offerings are copied (marks,
** price hooks and launches change them). The decisions are the same, byte
** for byte; the catalog is not compiled again.
*/
struct dt_compiled_catalog {
  dt_plan *base;
};

int dt__catalog_compile(const dt_catalog *catalog, dt_compiled_catalog **out, dt_error *err) {
  *out = NULL;
  dt_compiled_catalog *cc = dt__calloc(1, sizeof *cc);
  dt_plan *p = dt__calloc(1, sizeof *p);
  if (!cc || !p) {
    dt__free(cc), dt__free(p);
    return dt__err(err, DT_ENOMEM, "out of memory");
  }
  p->catalog = catalog;
  p->ex_pod = -1;
  int rc = plan_begin(p);
  if (!rc) rc = dt__sched_compile_catalog(p, err);
  if (!rc && (p->arena.oom || p->syms.oom)) rc = DT_ENOMEM;
  if (rc) {
    dt_plan_free(p);
    dt__free(cc);
    return rc == DT_ENOMEM ? dt__err(err, rc, "out of memory") : rc;
  }
  static _Atomic uint64_t compiled;
  p->src_id = atomic_fetch_add(&compiled, 1) + 1;
  cc->base = p;
  *out = cc;
  return 0;
}

int dt__overlaid_prices(const dt_catalog *catalog, const dt_manifests *m, size_t n, const char *const *type,
                        const char *const *zone, const int *ct, double *price, dt_error *err) {
  if (!m || !m->nodeoverlays.n || !n) return 0;
  dt_plan *p = dt__calloc(1, sizeof *p);
  if (!p) return dt__err(err, DT_ENOMEM, "out of memory");
  p->catalog = catalog;
  p->manifests = m;
  p->ex_pod = -1;
  int rc = plan_begin(p);
  if (!rc) rc = dt__sched_compile_catalog(p, err);
  if (!rc) rc = dt__sched_overlays(p);
  for (size_t i = 0; !rc && i < n; i++) {
    if (!type[i] || !zone[i] || ct[i] < 0 || ct[i] == DT_CT_RESERVED) continue;
    dt_sym ts = dt__sym_find(&p->syms, type[i]), zs = dt__sym_find(&p->syms, zone[i]);
    int32_t t = ts && ts < p->ntype_at ? p->type_at[ts] : -1;
    for (uint32_t o = 0; t >= 0 && zs && o < p->types[t].noff; o++) {
      const rt_off *of = &p->types[t].off[o];
      if (of->ct == ct[i] && p->zones[of->zone] == zs) price[i] = of->price;
    }
  }
  if (!rc && (p->arena.oom || p->syms.oom)) rc = DT_ENOMEM;
  dt_plan_free(p);
  return rc == DT_ENOMEM ? dt__err(err, rc, "out of memory") : rc;
}

void dt__catalog_compiled_free(dt_compiled_catalog *cc) {
  if (!cc) return;
  dt_plan_free(cc->base);
  dt__free(cc);
}

static int share_offers(dt_plan *p, const rt_type *types);

/* types: b's, or a cluster's priced copy, whose offerings the plan shares
** until it changes them (dt__offs_mut) */
static int copy_compiled(dt_plan *p, const dt_plan *b, const rt_type *types) {
  if (dt__symtab_clone(&p->syms, &b->syms)) return DT_ENOMEM;
  p->k_zone = b->k_zone, p->k_ct = b->k_ct, p->k_type = b->k_type, p->k_pool = b->k_pool;
  p->k_hostname = b->k_hostname, p->k_interruptible = b->k_interruptible, p->k_resv = b->k_resv;
  p->k_arch = b->k_arch, p->k_os = b->k_os, p->k_region = b->k_region;
  memcpy(p->ct_sym, b->ct_sym, sizeof p->ct_sym);
  p->nres = b->nres;
  memcpy(p->res_names, b->res_names, sizeof p->res_names);
  p->nzones = b->nzones;
  memcpy(p->zones, b->zones, sizeof p->zones);
  memcpy(p->zone_rank, b->zone_rank, sizeof p->zone_rank);
  p->nkeyslot = b->nkeyslot, p->nslots = b->nslots, p->keyslot = b->keyslot, p->slot_key = b->slot_key;
  p->ntype_at = b->ntype_at, p->type_at = b->type_at;
  p->ntypes = b->ntypes;
  p->src_id = b->src_id;
  if (types) return share_offers(p, types);
  p->types = dt__types_copy(&p->arena, b->types, b->ntypes);
  return p->types ? 0 : DT_ENOMEM;
}

static int share_offers(dt_plan *p, const rt_type *types) {
  size_t noff = 0;
  dt_cluster *cl = p->cl;
  size_t tbytes = (p->ntypes ? p->ntypes : 1) * sizeof *p->types;
  if (cl && types == cl->priced.types && !cl->lend.user) {
    if (cl->lend.gen != cl->priced.gen) {
      cl->lend.types = dt__arena_raw(&cl->base->arena, tbytes);
      cl->lend.gen = cl->lend.types ? cl->priced.gen : 0;
      if (cl->lend.types) memcpy(cl->lend.types, types, p->ntypes * sizeof *p->types);
    }
    if (cl->lend.types) {
      p->types = cl->lend.types;
      cl->lend.user = p;
      p->lent = true;
    }
  }
  if (!p->lent) {
    p->types = dt__arena_raw(&p->arena, tbytes);
    if (p->types) memcpy(p->types, types, p->ntypes * sizeof *p->types);
  }
  p->off_at = dt__arena_raw(&p->arena, (p->ntypes ? p->ntypes : 1) * sizeof *p->off_at);
  p->own = dt__arena_alloc(&p->arena, p->ntypes ? p->ntypes : 1);
  if (!p->types || !p->off_at || !p->own) return DT_ENOMEM;
  for (uint32_t t = 0; t < p->ntypes; t++) {
    p->off_at[t] = (uint32_t)noff;
    noff += types[t].noff;
  }
  /* room for every type's, taken without clearing: only what is copied in is touched */
  p->off_own = dt__arena_raw(&p->arena, (noff ? noff : 1) * sizeof *p->off_own);
  return p->off_own ? 0 : DT_ENOMEM;
}

/* Every byte of the types and their offerings is copied over: taken from
** the arena without clearing, the offerings in one block. */
rt_type *dt__types_copy(dt_arena *a, const rt_type *from, uint32_t n) {
  size_t noff = 0;
  for (uint32_t t = 0; t < n; t++) noff += from[t].noff;
  rt_type *types = dt__arena_raw(a, (n ? n : 1) * sizeof *types);
  rt_off *off = dt__arena_raw(a, (noff ? noff : 1) * sizeof *off);
  if (!types || !off) return NULL;
  memcpy(types, from, n * sizeof *types);
  for (uint32_t t = 0; t < n; t++) {
    memcpy(off, from[t].off, types[t].noff * sizeof *off);
    types[t].off = off;
    off += types[t].noff;
  }
  return types;
}

/* Whether an overlay may start from its cluster's priced copy: taken under
** the same marks, clock and policy, whose price hook (if any) answered for
** the whole pass. */
static bool priced_same(const dt_cluster *cl, const dt_manifests *m, const dt_plan_opts *o) {
  return cl->priced.types && cl->priced.marks == m->marks.v && cl->priced.nmarks == m->marks.n &&
         cl->priced.now == o->now && cl->priced.policy == o->policy &&
         (!dt__policy_has(o->policy, DT_HOOK_PRICE) || dt__policy_pass_priced(o->policy));
}

/* After an overlay's marks and price hook: its offerings become the
** cluster's priced copy when it has none for them (out of memory: none). */
static void priced_keep(dt_plan *p) {
  dt_cluster *cl = p->cl;
  if (!cl || p->priced == PRICED_COPY) return;
  rt_type *t = dt__types_copy(&cl->base->arena, p->types, p->ntypes);
  if (!t) return;
  cl->priced.types = t;
  cl->priced.marks = p->manifests->marks.v;
  cl->priced.nmarks = p->manifests->marks.n;
  cl->priced.now = p->opts.now;
  cl->priced.policy = p->opts.policy;
  cl->priced.gen++;
  p->priced = PRICED_KEPT;
}

/* results: the typed results (dt_plan_claim and friends) are built, as a
** caller outside the engine reads them; a disruption pass's simulations
** read the solver's state and skip them. */
static int plan_run(const dt_catalog *catalog, const dt_compiled_catalog *cc, dt_cluster *cl, const dt_overlay *ov,
                    bool results, const dt_manifests *manifests, const dt_plan_opts *opts, dt_plan **out,
                    dt_error *err) {
  *out = NULL;
  /* the first plan over manifests makes their CapacityBuffers' chunks (once) */
  if (!cl && manifests) {
    int brc = dt_manifests_finish((dt_manifests *)manifests, err);
    if (brc) return brc;
  }
  dt_plan *p = dt__calloc(1, sizeof *p);
  if (!p) return dt__err(err, DT_ENOMEM, "out of memory");
  p->catalog = catalog;
  p->manifests = manifests;
  p->ex_pod = -1;
  if (opts) p->opts = *opts;
  double t0 = dt__now_ms();
  int rc;
  if (cl) {
    /* one chunk for what an overlay allocates most: its nodes, a name index, the types */
    dt__arena_reserve(&p->arena, manifests->nodes.n * (sizeof(rt_node) + 4 * sizeof(int32_t)) +
                                     cl->base->ntypes * (sizeof(rt_type) + 8 * sizeof(rt_off)) +
                                     cl->base->syms.n * sizeof(int32_t) + (1u << 20));
    p->cl = cl;
    p->ov = ov;
    p->opts.explain = NULL; /* explain.c reads the manifests' own pods */
    p->priced = priced_same(cl, manifests, &p->opts) ? PRICED_COPY : PRICED_NONE;
    if ((rc = copy_compiled(p, cl->base, p->priced ? cl->priced.types : NULL))) goto fail;
    p->early_syms = cl->base->early_syms;
  } else if (cc && !manifests->vmpools.n) { /* the pools' VMs would intern names before the catalog's */
    if ((rc = copy_compiled(p, cc->base, NULL))) goto fail;
    p->snap_home = cc->base;
  } else {
    if ((rc = plan_begin(p)) || (rc = add_pool_vms(p, err)) || (rc = dt__sched_compile_catalog(p, err))) goto fail;
  }
  if ((rc = dt__sched_overlays(p)) || (rc = dt__sched_apply_marks(p)) || (rc = dt__sched_build_snapshot(p)) ||
      (rc = dt__sched_apply_price_hook(p)))
    goto fail;
  priced_keep(p);
  if ((rc = dt__sched_compile_pools(p, err)) || (rc = dt__sched_compile_nodes(p, err))) goto fail;
  if ((rc = dt__sched_compile_pods(p, err)) || (rc = static_claims(p))) goto fail;
  if (p->opts.explain && (rc = dt__explain_begin(p, err))) goto fail;
  if ((rc = dt__sched_solve(p))) goto fail;
  if (!dt__cancelled(p) && p->opts.packing != DT_PACKING_FFD && (rc = dt__pack_improve(p))) goto fail;
  if (dt__cancelled(p)) {
    rc = DT_ECANCELED;
    goto fail;
  }
  if ((rc = dt__sched_launch(p))) goto fail;
  if (p->ex && (rc = dt__explain_finish(p))) goto fail;
  if (p->arena.oom || p->syms.oom || p->class_sigs.oom || p->group_sigs.oom) {
    rc = DT_ENOMEM;
    goto fail;
  }
  p->stats.pods = p->npods;
  p->stats.scheduled += p->bindings.n;
  p->stats.unschedulable = p->unsched.n;
  p->stats.schedule_ms = dt__now_ms() - t0;
  if (results) {
    if ((rc = dt__plan_result_build(p))) goto fail;
    dt__plan_state_free(p);
  }
  *out = p;
  return 0;
fail:
  if (rc == DT_ECANCELED) {
    dt__err(err, rc, "cancelled");
  } else if (rc == DT_ENOMEM || p->arena.oom || p->syms.oom) {
    rc = DT_ENOMEM;
    dt__err(err, rc, "out of memory while planning");
  } else if (err && !err->msg[0]) {
    dt__err(err, rc, "planning failed");
  }
  dt_plan_free(p);
  return rc;
}

int dt_plan_run(const dt_catalog *catalog, const dt_manifests *manifests, const dt_plan_opts *opts, dt_plan **out,
                dt_error *err) {
  return plan_run(catalog, NULL, NULL, NULL, true, manifests, opts, out, err);
}

int dt__plan_run_compiled(const dt_catalog *catalog, const dt_compiled_catalog *cc, const dt_manifests *manifests,
                          const dt_plan_opts *opts, bool results, dt_plan **out, dt_error *err) {
  return plan_run(catalog, cc, NULL, NULL, results, manifests, opts, out, err);
}

int dt__plan_run_overlay(const dt_catalog *catalog, dt_cluster *cl, const dt_manifests *view, const dt_overlay *ov,
                         const dt_plan_opts *opts, dt_plan **out, dt_error *err) {
  if (view->pods.v != cl->pods || view->pods.n != cl->npods || view->vmpools.n) {
    *out = NULL;
    return dt__err(err, DT_EINVAL, "internal: an overlay's view must hold the cluster's pods and no VM pools");
  }
  return plan_run(catalog, NULL, cl, ov, false, view, opts, out, err);
}

/* ------------------------------------------------------------ the cluster */

int dt__cluster_new(const dt_catalog *catalog, const dt_manifests *m, dt_cluster **out, dt_error *err) {
  return dt__cluster_new_compiled(catalog, NULL, m, out, err);
}

int dt__cluster_new_compiled(const dt_catalog *catalog, const dt_compiled_catalog *cc, const dt_manifests *m,
                             dt_cluster **out, dt_error *err) {
  *out = NULL;
  dt_cluster *cl = dt__calloc(1, sizeof *cl);
  dt_plan *p = dt__calloc(1, sizeof *p);
  if (!cl || !p) {
    dt__free(cl), dt__free(p);
    return dt__err(err, DT_ENOMEM, "out of memory");
  }
  cl->base = p;
  p->catalog = catalog;
  p->manifests = m;
  p->ex_pod = -1;
  /* the order a plan interns names in: the catalog's (or their copy), then the pools' */
  int rc = cc ? copy_compiled(p, cc->base, NULL) : plan_begin(p);
  if (!rc && !cc) rc = dt__sched_compile_catalog(p, err);
  if (!rc) rc = dt__sched_overlays(p); /* its overlays read these prices and this capacity */
  if (!rc) rc = dt__sched_compile_pools(p, err);
  if (!rc && (p->arena.oom || p->syms.oom)) rc = DT_ENOMEM;
  if (rc) {
    dt__cluster_free(cl);
    return rc == DT_ENOMEM ? dt__err(err, rc, "out of memory") : rc;
  }
  *out = cl;
  return 0;
}

int dt__cluster_add_node(dt_cluster *cl, const dt_node *n, dt_error *err) {
  dt_plan *p = cl->base;
  cnode c;
  memset(&c, 0, sizeof c);
  int rc = dt__sched_compile_node(p, n, &c.node, &c.f, err);
  if (rc) return rc;
  c.node.pool = -1;
  c.may_pair = n->claim_name != NULL; /* by nodeName, providerID or its own name (dt__claims_paired) */
  if (cl->has_pods && n->node_name) dt__sym(&p->syms, n->node_name); /* as a plan's node index interns it */
  uint32_t id = (uint32_t)cl->nodes.n;
  if (dt__vec_push(&cl->nodes, c) || dt__vec_push(&cl->byname, id)) return DT_ENOMEM;
  /* by name, after every node of the same name */
  size_t lo = 0, hi = cl->byname.n - 1;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (strcmp(cl->nodes.v[cl->byname.v[mid]].node.src->name, n->name) <= 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  memmove(&cl->byname.v[lo + 1], &cl->byname.v[lo], (cl->byname.n - 1 - lo) * sizeof *cl->byname.v);
  cl->byname.v[lo] = id;
  return p->arena.oom || p->syms.oom ? DT_ENOMEM : 0;
}

/* Pod i's use added (sign 1) to, or taken (-1) from, its node name. */
static int name_use_add(dt_cluster *cl, uint32_t i, int sign) {
  dt_sym s = cl->pod_node[i];
  if (!s) return 0;
  while (cl->use.n <= s) {
    name_use z;
    memset(&z, 0, sizeof z);
    if (dt__vec_push(&cl->use, z)) return DT_ENOMEM;
  }
  name_use *u = &cl->use.v[s];
  if (!u->listed) {
    if (dt__vec_push(&cl->used_names, s)) return DT_ENOMEM;
    u->listed = true;
  }
  int64_t count = cl->pods[i].count;
  for (uint32_t r = 0; r < DT_RES_MAX; r++) u->used[r] += (__int128)sign * cl->specs[i].req[r] * count;
  if (cl->pods[i].daemon)
    for (uint32_t r = 0; r < DT_RES_MAX; r++) u->ds[r] += (__int128)sign * cl->specs[i].req[r] * count;
  u->pods += sign * count;
  u->specs += sign;
  return 0;
}

int dt__cluster_set_pods(dt_cluster *cl, const dt_podspec *pods, size_t n, dt_error *err) {
  dt_plan *p = cl->base;
  cl->pods = pods;
  cl->npods = (uint32_t)n;
  cl->specs = A(p, (n ? n : 1) * sizeof *cl->specs);
  cl->pod_node = A(p, (n ? n : 1) * sizeof *cl->pod_node);
  if (!cl->specs || !cl->pod_node) return DT_ENOMEM;
  for (size_t i = 0; i < n; i++) cl->specs[i].src = &pods[i];
  int rc = dt__sched_volume_topologies(p, cl->specs, (uint32_t)n);
  for (size_t i = 0; i < n && !rc; i++) {
    const dt_podspec *d = &pods[i];
    bool missing;
    rc = dt__sched_compile_spec(p, d, &cl->specs[i], &missing, err);
    if (!rc && missing) dt__sched_runtime_class_note(p, d); /* once, in the base: no overlay plan repeats it */
    if (!rc && (d->nspread || d->naff || d->npaff || d->nanti || d->npanti))
      rc = dt__vec_push(&cl->termed, (uint32_t)i);
    if (!rc && d->owner) rc = dt__vec_push(&cl->owned, (uint32_t)i);
    cl->ported |= d->nports > 0;
  }
  if (!rc) rc = dt__sched_termed_reps(cl);
  cl->label_rep.n = 0;
  if (!rc && !dt__vec_grow((void **)&cl->label_rep.v, &cl->label_rep.cap, n + 1, sizeof *cl->label_rep.v) &&
      !dt__topo_label_reps(cl->specs, (uint32_t)n, cl->label_rep.v))
    cl->label_rep.n = n; /* else (out of memory) overlays find the sets themselves */
  if (rc) return rc;
  /* then what a plan interns after its pods: the claims' node names */
  for (size_t i = 0; i < cl->nodes.n; i++)
    if (cl->nodes.v[i].node.src->node_name) dt__sym(&p->syms, cl->nodes.v[i].node.src->node_name);
  cl->has_pods = true;
  for (uint32_t i = 0; i < cl->npods && !rc; i++) {
    cl->pod_node[i] = pods[i].node_name ? dt__sym(&p->syms, pods[i].node_name) : 0;
    rc = name_use_add(cl, i, 1);
  }
  return rc ? rc : p->arena.oom || p->syms.oom ? DT_ENOMEM : 0;
}

int dt__cluster_bind(dt_cluster *cl, size_t pod, const char *node) {
  int rc = name_use_add(cl, (uint32_t)pod, -1);
  cl->pod_node[pod] = node ? dt__sym(&cl->base->syms, node) : 0;
  if (!rc) rc = name_use_add(cl, (uint32_t)pod, 1);
  return rc ? rc : cl->base->syms.oom ? DT_ENOMEM : 0;
}

const dt_plan *dt__cluster_plan(const dt_cluster *cl) { return cl->base; }

void dt__cluster_free(dt_cluster *cl) {
  if (!cl) return;
  dt_plan_free(cl->base);
  dt__free(cl->nodes.v);
  dt__free(cl->byname.v);
  dt__free(cl->use.v);
  dt__free(cl->used_names.v);
  dt__free(cl->termed.v);
  dt__free(cl->termed_rep.v);
  dt__free(cl->label_rep.v);
  dt__free(cl->owned.v);
  dt__namemap_free(&cl->claimed);
  dt__free(cl->claimed_on.v);
  dt__free(cl->claimed_id.v);
  dt__free(cl->claimed_id_on.v);
  dt__free(cl->snap);
  dt__free(cl);
}

/* The view's nodes from the cluster's: what compile_nodes makes of them,
** without a string compare. */
int dt__sched_compile_nodes_overlay(dt_plan *p, dt_error *err) {
  (void)err;
  const dt_manifests *m = p->manifests;
  const dt_cluster *cl = p->cl;
  size_t nv = m->nodes.n;
  p->nodes = A(p, (nv ? nv : 1) * sizeof *p->nodes);
  int32_t *type = A(p, (nv ? nv : 1) * sizeof *type);
  int32_t *at = A(p, (cl->nodes.n ? cl->nodes.n : 1) * sizeof *at);
  p->ov_at = A(p, (cl->nodes.n ? cl->nodes.n : 1) * sizeof *p->ov_at);
  if (!p->nodes || !type || !at || !p->ov_at) return DT_ENOMEM;
  memset(p->ov_at, 0xff, cl->nodes.n * sizeof *p->ov_at);
  bool pairs = false;
  for (size_t i = 0; i < nv; i++) pairs |= cl->nodes.v[p->ov->node[i]].may_pair;
  int32_t *paired = NULL;
  if (pairs) {
    paired = A(p, nv * sizeof *paired);
    if (!paired || dt__claims_paired(m, paired)) return DT_ENOMEM;
  }
  memset(at, 0xff, cl->nodes.n * sizeof *at);
  /* Nodes whose NodeClaim says Initialized: not initializing, whatever the Node shows */
  bool *claim_init = paired ? A(p, nv * sizeof *claim_init) : NULL;
  if (paired && !claim_init) return DT_ENOMEM;
  if (paired) memset(claim_init, 0, nv * sizeof *claim_init);
  for (size_t i = 0; paired && i < nv; i++)
    if (paired[i] >= 0 && m->nodes.v[i].initialized) claim_init[paired[i]] = true;
  for (size_t i = 0; i < nv; i++) {
    const cnode *c = &cl->nodes.v[p->ov->node[i]];
    if (paired && paired[i] >= 0) continue;
    dt__sched_count_static(p, &m->nodes.v[i], c->f.own);
    if (c->f.skip) {
      dt__sched_skipped_node(p, &m->nodes.v[i], c->f.itype);
      continue;
    }
    at[p->ov->node[i]] = (int32_t)i;
  }
  /* cmp_node's order: initialized first, then by name, then view order */
  for (int init = 1; init >= 0; init--)
    for (size_t k = 0; k < cl->byname.n; k++) {
      uint32_t id = cl->byname.v[k];
      int32_t vi = at[id];
      if (vi < 0) continue;
      bool ing = cl->nodes.v[id].node.initializing && !(claim_init && claim_init[vi]);
      if ((m->nodes.v[vi].initialized && !ing) != (bool)init) continue;
      p->ov_at[id] = (int32_t)p->nnodes;
      rt_node *r = &p->nodes[p->nnodes];
      *r = cl->nodes.v[id].node;
      r->src = &m->nodes.v[vi];
      r->claim = NULL;
      if (claim_init && claim_init[vi]) dt__sched_node_initialized(r);
      dt__sched_node_pool(p, r, cl->nodes.v[id].f.pool);
      type[p->nnodes++] = cl->nodes.v[id].f.type;
    }
  dt__sched_charge_nodes(p, type);
  return 0;
}

int dt__sched_claims_ix_cluster(dt_plan *p, claims_ix *ix) {
  dt_cluster *cl = p->cl;
  bool any = false;
  for (uint32_t id = 0; id < cl->nodes.n; id++) {
    int32_t at = p->ov_at[id];
    if (at < 0) continue;
    const dt_node *v = p->nodes[at].src, *c = cl->nodes.v[id].node.src;
    if (v->pods != c->pods || v->npods != c->npods) return 0;
    any |= v->npods > 0;
  }
  for (; !cl->claimed_noid && cl->claimed_id_upto < cl->nodes.n; cl->claimed_id_upto++) {
    const dt_node *n = cl->nodes.v[cl->claimed_id_upto].node.src;
    if (n->npods && !n->pod_ids) {
      cl->claimed_noid = true;
      break;
    }
    for (size_t k = 0; k < n->npods; k++) {
      uint32_t id = n->pod_ids[k];
      while (cl->claimed_id.n <= id)
        if (dt__vec_push(&cl->claimed_id, -1)) return DT_ENOMEM;
      claim_on e = {cl->claimed_id_upto, cl->claimed_id.v[id]};
      if (dt__vec_push(&cl->claimed_id_on, e)) return DT_ENOMEM;
      cl->claimed_id.v[id] = (int32_t)cl->claimed_id_on.n - 1;
    }
  }
  if (cl->claimed_noid && dt__sched_claims_ix_names(cl)) return DT_ENOMEM;
  ix->cl = cl;
  ix->any = any;
  return 0;
}

int dt__sched_claims_ix_names(dt_cluster *cl) {
  for (; cl->claimed_upto < cl->nodes.n; cl->claimed_upto++) {
    const dt_node *n = cl->nodes.v[cl->claimed_upto].node.src;
    for (size_t k = 0; k < n->npods; k++) {
      bool added;
      int32_t *head = dt__namemap_put(&cl->claimed, n->pods[k], strlen(n->pods[k]), -1, &added);
      if (!head) return DT_ENOMEM;
      claim_on e = {cl->claimed_upto, *head};
      if (dt__vec_push(&cl->claimed_on, e)) return DT_ENOMEM;
      *head = (int32_t)cl->claimed_on.n - 1;
    }
  }
  return 0;
}

/* An overlay plan's specs are the cluster's. */
int dt__sched_cluster_specs(dt_plan *p) {
  const dt_cluster *cl = p->cl;
  p->nspecs = cl->npods;
  p->specs = cl->specs;
  return 0;
}

/*
** What bound pods use of an overlay's nodes, from the per-name sums: each
** node takes the sums of the names it answers to, less the pods this plan
** moves or leaves out. *scan tells that the pods must still be visited one
** by one (topology groups, host ports, or pods bound to a node outside the
** view, which each get a note); *bound is how many pods are bound.
*/
void dt__sched_overlay_use(dt_plan *p, bool *scan, size_t *bound) {
  const dt_cluster *cl = p->cl;
  dt__sched_node_by_sym(p, 0); /* the name index */
  int64_t orphans = 0, pods = 0;
  for (size_t k = 0; k < cl->used_names.n; k++) {
    dt_sym s = cl->used_names.v[k];
    const name_use *u = &cl->use.v[s];
    pods += u->pods;
    int32_t n = dt__sched_node_by_sym(p, s);
    if (n < 0) {
      orphans += u->specs;
      continue;
    }
    for (uint32_t r = 0; r < DT_RES_MAX; r++)
      p->nodes[n].used[r] =
          dt__qty_add(p->nodes[n].used[r], u->used[r] > DT_QTY_CAP ? DT_QTY_CAP : (int64_t)u->used[r]);
  }
  uint32_t nvisit = p->ov->moved ? p->ov->nmoved : cl->npods;
  for (uint32_t k = 0; k < nvisit; k++) {
    uint32_t si = p->ov->moved ? p->ov->moved[k] : k;
    if (p->ov->pod[si] == DT_OV_BOUND) continue; /* most pods stay bound */
    dt_sym s = cl->pod_node[si];
    if (!s) continue;
    int64_t count = cl->pods[si].count;
    pods -= count;
    int32_t n = dt__sched_node_by_sym(p, s);
    if (n < 0) {
      orphans--;
      continue;
    }
    for (uint32_t r = 0; r < DT_RES_MAX; r++) p->nodes[n].used[r] -= cl->specs[si].req[r] * count;
  }
  /* the room DaemonSet pods not bound yet will take, as a plan's nodes */
  for (uint32_t n = 0; n < p->nnodes; n++) {
    rt_node *r = &p->nodes[n];
    if (!r->ds_want) continue;
    int64_t b[DT_RES_MAX] = {0};
    dt_sym s = r->name;
    if (s < cl->use.n)
      for (uint32_t k = 0; k < DT_RES_MAX; k++)
        b[k] = cl->use.v[s].ds[k] > DT_QTY_CAP ? DT_QTY_CAP : (int64_t)cl->use.v[s].ds[k];
    dt__sched_ds_reserve(r, b);
  }
  *scan = orphans > 0 || p->groups.n || cl->ported || p->any_vlim;
  *bound = (size_t)pods;
}

void dt_plan_stats_get(const dt_plan *plan, dt_plan_stats *out) { *out = plan->stats; }

/* An overlay gives its lent types back as it found them. */
static void lend_return(dt_plan *p) {
  dt_cluster *cl = p->cl;
  if (!p->lent) return;
  for (uint32_t t = 0; p->own && t < p->ntypes; t++)
    if (p->own[t]) cl->lend.types[t] = cl->priced.types[t];
  cl->lend.user = NULL;
  p->lent = false;
  p->types = NULL;
}

void dt__plan_state_free(dt_plan *p) {
  lend_return(p);
  dt__free(p->marks.v);
  for (size_t i = 0; i < p->policies.n; i++) dt__policy_round_end(p->policies.v[i]);
  dt__free(p->policies.v);
  dt__free(p->scores.v);
  for (size_t i = 0; i < p->classes.n; i++) dt__free(p->classes.v[i].claim_failed);
  dt__free(p->classes.v);
  dt__free(p->class_of_sig.v);
  dt__symtab_free(&p->class_sigs);
  dt__free(p->shape_spec.v);
  dt__namemap_free(&p->class_memo);
  dt__symtab_free(&p->shape_sigs);
  dt__free(p->shape_buf.p);
  memset(&p->shape_buf, 0, sizeof p->shape_buf);
  p->shape_last = NULL;
  for (size_t i = 0; i < p->groups.n; i++) {
    dt__free(p->groups.v[i].host.v);
    dt__free(p->groups.v[i].ohost.v);
  }
  dt__free(p->groups.v);
  dt__free(p->lkeys.v);
  dt__symtab_free(&p->group_sigs);
  for (uint32_t i = 0; p->nodes && i < p->nnodes; i++) {
    dt__free(p->nodes[i].ports.v);
    dt__free(p->nodes[i].vols.v);
  }
  for (size_t i = 0; i < p->claims.n; i++) {
    dt__free(p->claims.v[i]->pods.v);
    dt__free(p->claims.v[i]->ports.v);
    dt__free(p->claims.v[i]->held.v);
  }
  dt__free(p->claims.v);
  dt__free(p->bindings.v);
  dt__free(p->unsched.v);
  dt__free(p->notes.v);
  dt__free(p->input_notes.v);
  dt__symtab_free(&p->syms);
  dt__arena_free(&p->arena);
  /* what outlives the state: the results, the figures, the explanation */
  dt_plan_result res = p->res;
  dt_plan_stats stats = p->stats;
  struct dt_explain *ex = p->ex;
  memset(p, 0, sizeof *p);
  p->res = res;
  p->stats = stats;
  p->ex = ex;
}

void dt_plan_free(dt_plan *p) {
  if (!p) return;
  dt__plan_state_free(p);
  dt__explain_free(p->ex);
  dt__plan_result_free(&p->res);
  dt__free(p);
}
