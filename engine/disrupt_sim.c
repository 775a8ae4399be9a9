/*
** disrupt_sim.c: a disruption pass's simulations (see disrupt.c): the
** candidates removed from an overlay of the cluster compiled once and their
** pods planned again; Karpenter's price rule on the result; a decision made
** into a command; the policy's ordering and approval hooks.
*/
#include "disrupt_int.h"
#include "schedule.h"

/* ------------------------------------------------------------ simulation */

void dt__dr_sim_free(sim *s) {
  dt_plan_free(s->plan);
  dt__free(s->pools);
  dt__free(s->view.nodes.v);
  if (!s->ovpod) dt__free(s->view.pods.v);
  if (!s->overlay) dt__free(s->view_pod);
  dt__free(s->ovpod);
  dt__free(s->ovmoved);
  dt__free(s->view_node);
  dt__free(s->moving);
  memset(s, 0, sizeof *s);
}

void dt__dr_sim_move(sim *dst, sim *src) {
  *dst = *src;
  if (dst->plan && dst->plan->manifests == &src->view) dst->plan->manifests = &dst->view; /* the view moved with it */
  memset(src, 0, sizeof *src);
}

/* The view's nodes: the state's, less the removed ones and the candidates
** (in[]). Consolidation does not move pods onto nodes still inside their own
** consolidateAfter window (Karpenter's IsConsolidationSimulation). */
static void view_nodes(const state *st, const bool *in, bool consolidation, sim *s) {
  size_t nn = 0;
  for (size_t i = 0; i < st->nodes.n; i++) {
    const dnode *d = &st->nodes.v[i];
    if (d->removed || in[i]) continue;
    dt_node copy = *d->n;
    /* a machine a command took already takes no pods, whether its Node or
    ** only its claim carries the taint (Karpenter leaves nodes marked for
    ** deletion out of its simulations) */
    if (d->tainted || d->held ||
        (consolidation && d->pool >= 0 && dt__dr_initialized(d) && st->m->pools.v[d->pool].consolidate_after > 0 &&
         dt__dr_settling(st, d)))
      copy.sim_closed = true;
    s->view_node[nn] = (uint32_t)i;
    s->view.nodes.v[nn++] = copy;
  }
  s->nview = nn;
  s->view.nodes.n = s->view.nodes.cap = nn;
}

_Static_assert(DT_OV_BOUND == 0, "an overlay's pods start bound when zeroed");

/* The view's pods: those on the candidates (on[]) pending again, their
** DaemonSet pods gone with their node, the rest as they are. On a compiled
** cluster an overlay marks each pod of st->pods in place; otherwise the
** pods are copied. */
static void view_pods(const state *st, const bool *on, sim *s) {
  size_t np = 0;
  if (s->ovpod) {
    /* every pod of the state names its node (bound or nominated): the
    ** overlay starts zeroed (DT_OV_BOUND, not moving) and only the pods
    ** on the candidates are marked, so a simulation does not walk every
    ** pod of the cluster twice */
    for (uint32_t j = 0; j < s->novmoved; j++) {
      uint32_t i = s->ovmoved[j];
      s->ovpod[i] = st->pods[i].daemon ? DT_OV_ABSENT : DT_OV_PENDING;
      s->moving[i] = true;
    }
    s->view.pods.v = st->pods;
    np = st->npods;
  }
  for (size_t i = 0; i < st->npods && !s->ovpod; i++) {
    dt_podspec p = st->pods[i];
    bool mv = on[i];
    if (mv && p.daemon) continue;
    if (mv) {
      p.node_name = NULL;
      p.evicted = true;
    }
    s->moving[np] = mv;
    s->view_pod[np] = (uint32_t)i;
    s->view.pods.v[np++] = p;
  }
  s->view.pods.n = s->view.pods.cap = np;
}

/* Static NodePools plan no claims of their own in the view: each wants the
** nodes it keeps, and pool spool swant more (the replacement of a static
** node the command removes). */
static int view_static_pools(const state *st, int spool, int64_t swant, sim *s) {
  bool any_static = false;
  for (size_t k = 0; k < st->m->pools.n; k++) any_static |= st->m->pools.v[k].replicas >= 0;
  if (!any_static) return 0;
  if (!(s->pools = dt__malloc(st->m->pools.n * sizeof *s->pools))) return DT_ENOMEM;
  memcpy(s->pools, st->m->pools.v, st->m->pools.n * sizeof *s->pools);
  s->view.pools.v = s->pools;
  for (size_t k = 0; k < st->m->pools.n; k++) {
    if (s->pools[k].replicas < 0) continue;
    int64_t have = 0; /* as the plan counts a static pool's claims */
    for (size_t i = 0; i < s->nview; i++) {
      const char *own = dt__kv_get(s->view.nodes.v[i].labels.v, s->view.nodes.v[i].labels.n, DT_L_NODEPOOL);
      have += own && !s->view.nodes.v[i].deleting && !strcmp(own, s->pools[k].name);
    }
    s->pools[k].replicas = have + ((int)k == spool ? swant : 0);
  }
  return 0;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* The view of the cluster without cands[0..n): its nodes, pods and static
** pools in s. */
static int view_build(state *st, const uint32_t *cands, size_t n, bool consolidation, int spool, int64_t swant,
                      sim *s) {
  size_t nn1 = st->nodes.n ? st->nodes.n : 1, np1 = st->npods ? st->npods : 1;
  s->view = *st->m;
  s->view.vmpools.n = 0; /* pools are planned by dovetail plan, not here */
  s->view.pods.v = NULL; /* never the manifests' own: sim_free frees a copy */
  s->view.nodes.v = dt__malloc(nn1 * sizeof *s->view.nodes.v);
  s->view_node = dt__malloc(nn1 * sizeof *s->view_node);
  if (st->cl) { /* the view's pods are st->pods, each bound (0), pending or absent */
    s->overlay = true;
    s->ovpod = dt__calloc(np1, 1);
    if (!st->pod_ident && (st->pod_ident = dt__arena_alloc(&st->arena, np1 * sizeof *st->pod_ident)))
      for (size_t i = 0; i < st->npods; i++) st->pod_ident[i] = (uint32_t)i;
    s->view_pod = st->pod_ident;
  } else {
    s->view.pods.v = dt__malloc(np1 * sizeof *s->view.pods.v);
    s->view_pod = dt__malloc(np1 * sizeof *s->view_pod);
  }
  s->moving = dt__calloc(np1, 1);
  bool *in = dt__calloc(nn1, 1), *on = dt__calloc(np1, 1);
  int rc = 0;
  if (!s->view.nodes.v || !s->view_node || !(s->view.pods.v || s->ovpod) || !s->view_pod || !s->moving || !in || !on)
    rc = DT_ENOMEM;
  size_t nmoved = 0;
  for (size_t k = 0; !rc && k < n; k++) {
    const dnode *d = &st->nodes.v[cands[k]];
    in[cands[k]] = true;
    nmoved += d->pods.n;
    for (size_t j = 0; j < d->pods.n; j++) on[d->pods.v[j]] = true;
  }
  /* an overlay's pods not bound, listed in order, each once: those on the candidates */
  if (!rc && s->ovpod && !(s->ovmoved = dt__malloc((nmoved ? nmoved : 1) * sizeof *s->ovmoved))) rc = DT_ENOMEM;
  if (!rc && s->ovpod) {
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
      const dnode *d = &st->nodes.v[cands[k]];
      for (size_t j = 0; j < d->pods.n; j++) s->ovmoved[m++] = d->pods.v[j];
    }
    qsort(s->ovmoved, m, sizeof *s->ovmoved, cmp_u32);
    for (size_t j = 0; j < m; j++)
      if (!j || s->ovmoved[j] != s->ovmoved[j - 1]) s->ovmoved[s->novmoved++] = s->ovmoved[j];
  }
  if (!rc) {
    view_nodes(st, in, consolidation, s);
    view_pods(st, on, s);
  }
  dt__free(in);
  dt__free(on);
  return rc ? rc : view_static_pools(st, spool, swant, s);
}

/* What plan p noted of the input, into the result's notes, each once. */
int dt__dr_take_notes(state *st, const dt_plan *p) {
  dt_disruption *r = st->r;
  for (size_t i = 0; i < p->input_notes.n; i++) {
    const char *n = p->notes.v[p->input_notes.v[i]];
    size_t before = r->notes_seen.n;
    if (!dt__sym(&r->notes_seen, n)) return DT_ENOMEM;
    if (r->notes_seen.n == before) continue;
    const char *s = dt__dr_rstr(st, n);
    if (!s || dt__vec_push(&r->notes, s)) return DT_ENOMEM;
  }
  return 0;
}

/* Plan the view as Karpenter's simulation does (first-fit, the pass's
** clock, seed and policies), on the compiled cluster when there is one. A
** simulation takes the next seed; the screen's plan (below), which launches
** nothing, takes none, so the simulations' seeds are those of a pass
** without it. */
static int view_plan(state *st, sim *s, bool simulation, dt_error *err) {
  dt_plan_opts po = {0};
  po.now = st->o.now;
  po.seed = st->o.seed + st->sims;
  po.packing = DT_PACKING_FFD;
  po.policy = st->o.policy;
  po.pool_policies = st->o.pool_policies;
  po.pool_policy_names = st->o.pool_policy_names;
  po.npool_policies = st->o.npool_policies;
  po.cancel = st->o.cancel;
  if (simulation) st->sims++;
  st->plans++;
  int rc;
  if (st->cl) {
    const dt_overlay ov = {s->view_node, s->ovpod, s->ovmoved, s->novmoved};
    rc = dt__plan_run_overlay(st->cat, st->cl, &s->view, &ov, &po, &s->plan, err);
  } else {
    if (!st->cc && dt__catalog_compile(st->cat, &st->cc, NULL)) st->cc = NULL; /* compiled per run then */
    rc = st->cc ? dt__plan_run_compiled(st->cat, st->cc, &s->view, &po, false, &s->plan, err)
                : dt_plan_run(st->cat, &s->view, &po, &s->plan, err);
  }
  /* the notes of the input are the same in every plan of the pass: the
  ** first one's are taken, not each simulation's formatted and hashed again */
  return rc || st->plans > 1 ? rc : dt__dr_take_notes(st, s->plan);
}

/* Whether a moving pod may land on plan node nd of s's view, as Karpenter's
** StateNode.Initialized: a Node with its NodeClaim in the input is
** initialized once the claim says so or the Node carries
** karpenter.sh/initialized (a Ready Node that lacks both is still in its
** initialization loop, dt__dr_initialized); a Node alone is. */
static bool dest_initialized(const state *st, const sim *s, const rt_node *nd) {
  if (!nd->src->initialized || nd->initializing) return false;
  ptrdiff_t v = nd->src - s->view.nodes.v;
  return v < 0 || (size_t)v >= s->nview || dt__dr_initialized(&st->nodes.v[s->view_node[v]]);
}

/* s->fail: why the simulated plan cannot carry the decision (a moving pod
** fits nowhere, or lands on a node that has not initialized); the plan's
** new claims counted. */
static void view_verdict(const state *st, sim *s) {
  const dt_plan *p = s->plan;
  for (size_t i = 0; i < p->unsched.n && !s->fail[0]; i++) {
    const rt_pod *pod = &p->pods[p->unsched.v[i].pod];
    if (!s->moving[pod->spec]) continue;
    const dt_podspec *ps = &s->view.pods.v[pod->spec];
    snprintf(s->fail, sizeof s->fail, "would not fit: pod %s/%s: %s", ps->ns, ps->name, p->unsched.v[i].reason);
  }
  for (size_t i = 0; i < p->bindings.n && !s->fail[0]; i++) {
    const rt_pod *pod = &p->pods[p->bindings.v[i].pod];
    const rt_node *nd = &p->nodes[p->bindings.v[i].node];
    if (!s->moving[pod->spec] || dest_initialized(st, s, nd)) continue;
    snprintf(s->fail, sizeof s->fail, "would land on %s, which has not initialized", nd->src->name);
  }
  for (size_t i = 0; i < p->claims.n; i++)
    if (p->claims.v[i]->type >= 0) {
      s->nclaims++;
      s->claim = p->claims.v[i];
    }
}

/* Re-schedule the pods of the nodes in cands[0..n) onto every other node and
** new claims. Static NodePools plan no claims of their own in the view, but
** pool spool gets swant (the replacement of a static node the command
** removes). Returns 0 with s->fail set when a pod fits nowhere. */
int dt__dr_simulate(state *st, const uint32_t *cands, size_t n, bool consolidation, int spool, int64_t swant, sim *s) {
  memset(s, 0, sizeof *s);
  int rc = view_build(st, cands, n, consolidation, spool, swant, s);
  if (rc) return rc;
  dt_error err = {0};
  rc = view_plan(st, s, true, &err);
  if (rc == DT_ECANCELED || rc == DT_ENOMEM) return rc;
  if (rc) {
    snprintf(s->fail, sizeof s->fail, "simulation failed: %s", err.msg);
    return 0;
  }
  view_verdict(st, s);
  return 0;
}

/* ------------------------------------------------------------ screen */

/*
** Single-node consolidation simulates each candidate alone, and each
** simulation plans the whole cluster: on a fleet of packed nodes, where the
** simulation refuses nearly every candidate, a pass over 10,000 nodes made
** 10,000 simulations (22 s). The screen refuses, without simulating, a
** candidate its simulation could only refuse: some of its pods fit on no
** other initialized node that takes pods (allocatable less what its pods
** request, as the plan charges them; a moving pod that lands on a node not
** yet initialized fails the simulation), so they would all need the one
** replacement, and no
** instance type of any NodePool with an offering cheaper than the candidate
** holds them together (allocatable less DaemonSet overhead, as a claim's
** options are sized; a reserved offering counts as free). Each test is one
** the simulation makes too, with fewer constraints (no labels, taints,
** ports, topology or limits), so it refuses only what the simulation would;
** the reason says what it found instead. The rooms and types come from one
** plan of the cluster as it is, made again after a command changes it.
** Where a node's room is not known (a node of the view the plan left out,
** other than one it skips in every view; names two nodes answer to),
** nothing is screened.
*/
typedef struct screen {
  size_t cmds, nodes; /* the pass's commands and nodes when built: stale after either grows */
  bool off;           /* nothing screened */
  uint32_t nres;
  size_t nn;        /* nodes (the state's) */
  uint8_t *take;    /* per node: 0 takes no pod (or is not in the view), 1 room known, 2 room unknown */
  size_t nunknown;  /* nodes with take 2 */
  int64_t *room;    /* per node, nres each */
  uint32_t *by_cpu; /* the nodes with take 1, most cpu room first */
  size_t nby;
  int64_t *req;      /* per pod of the state, nres each */
  uint8_t *has_req;  /* per pod */
  size_t ntypes;     /* (NodePool, type) pairs, cheapest offering first */
  double *tprice;    /* each one's cheapest offering ($0 reserved) */
  double *tprice_ns; /* ... and its cheapest that is not spot */
  int64_t *teff;     /* its allocatable less DaemonSet overhead, nres each */
} screen;

void dt__dr_screen_free(state *st) {
  screen *c = st->scr;
  if (!c) return;
  dt__free(c->take);
  dt__free(c->room);
  dt__free(c->by_cpu);
  dt__free(c->req);
  dt__free(c->has_req);
  dt__free(c->tprice);
  dt__free(c->tprice_ns);
  dt__free(c->teff);
  dt__free(c);
  st->scr = NULL;
}

typedef struct cpu_ix {
  int64_t cpu;
  uint32_t i;
} cpu_ix;

static int cpu_ix_cmp(const void *a, const void *b) {
  const cpu_ix *x = a, *y = b;
  if (x->cpu != y->cpu) return x->cpu > y->cpu ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

typedef struct tprice_ix {
  double price, price_ns;
  uint32_t i;
} tprice_ix;

static int tprice_cmp(const void *a, const void *b) {
  const tprice_ix *x = a, *y = b;
  if (x->price != y->price) return x->price < y->price ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

/* Whether some node besides `self` has every resource's room for req. */
static bool scr_fits_elsewhere(const screen *c, uint32_t self, const int64_t *req) {
  for (size_t k = 0; k < c->nby; k++) {
    uint32_t i = c->by_cpu[k];
    const int64_t *room = &c->room[(size_t)i * c->nres];
    if (room[DT_R_CPU] < req[DT_R_CPU]) return false; /* and every node after it */
    if (i == self) continue;
    bool ok = true;
    for (uint32_t r = 0; r < c->nres && ok; r++) ok = req[r] <= room[r];
    if (ok) return true;
  }
  return false;
}

/* The screen from one plan of the cluster as it is. */
static int screen_build(state *st, screen *c) {
  sim s;
  memset(&s, 0, sizeof s);
  int rc = view_build(st, NULL, 0, true, -1, 0, &s);
  dt_error err = {0};
  if (!rc) rc = view_plan(st, &s, false, &err);
  c->cmds = st->r->commands.n;
  c->nodes = st->nodes.n;
  c->off = true;
  if (rc == DT_ECANCELED || rc == DT_ENOMEM || (rc && !s.plan)) {
    dt__dr_sim_free(&s);
    return rc == DT_ECANCELED || rc == DT_ENOMEM ? rc : 0;
  }
  const dt_plan *p = s.plan;
  rc = 0;
  if (!p || !p->nodes || !p->specs || p->nres < DT_R_MEM + 1) {
    dt__dr_sim_free(&s);
    return 0;
  }
  uint32_t nres = c->nres = p->nres;
  size_t nn = c->nn = st->nodes.n, np = st->npods;
  c->take = dt__calloc(nn ? nn : 1, 1);
  c->room = dt__calloc((nn ? nn : 1) * nres, sizeof *c->room);
  c->by_cpu = dt__malloc((nn ? nn : 1) * sizeof *c->by_cpu);
  c->req = dt__calloc((np ? np : 1) * nres, sizeof *c->req);
  c->has_req = dt__calloc(np ? np : 1, 1);
  uint8_t *named = dt__calloc(p->syms.n + 1, 1);
  if (!c->take || !c->room || !c->by_cpu || !c->req || !c->has_req || !named) rc = DT_ENOMEM;
  bool collide = false;
  for (size_t v = 0; !rc && v < s.nview; v++) c->take[s.view_node[v]] = 2; /* in the view: known below */
  for (uint32_t k = 0; !rc && k < p->nnodes; k++) {
    const rt_node *r = &p->nodes[k];
    ptrdiff_t v = r->src - s.view.nodes.v;
    if (v < 0 || (size_t)v >= s.nview) continue;
    uint32_t i = s.view_node[v];
    /* a name two nodes answer to gives its pods' use to one of them, which
    ** one may differ in a candidate's view */
    dt_sym alias = r->src->node_name ? dt__sym_find(&p->syms, r->src->node_name) : 0;
    if (r->name <= p->syms.n && named[r->name]++) collide = true;
    if (alias && alias != r->name && alias <= p->syms.n && named[alias]++) collide = true;
    /* as the solver's node_fits: nodes that take no pod at all; and nodes
    ** not initialized, where a moving pod makes the simulation refuse */
    if (r->src->unschedulable || r->src->sim_closed || r->closed || machine_deleting(r) ||
        (!r->src->ready && !r->src->claim_name) || !dest_initialized(st, &s, r)) {
      c->take[i] = 0;
      continue;
    }
    c->take[i] = 1;
    for (uint32_t q = 0; q < nres; q++) c->room[(size_t)i * nres + q] = r->alloc[q] - r->used[q];
  }
  /* a node the plan skips (no allocatable, and an instance type the catalog
  ** does not know) is skipped in every view: no room, not an unknown one */
  for (size_t i = 0; !rc && i < nn; i++) {
    const dnode *d = &st->nodes.v[i];
    if (c->take[i] == 2 && !d->n->allocatable.n && (!d->type || !dt__sym_find(&st->types, d->type))) c->take[i] = 0;
  }
  cpu_ix *order = rc ? NULL : dt__malloc((nn ? nn : 1) * sizeof *order);
  if (!rc && !order) rc = DT_ENOMEM;
  for (size_t i = 0; !rc && i < nn; i++) {
    c->nunknown += c->take[i] == 2;
    if (c->take[i] == 1) order[c->nby++] = (cpu_ix){c->room[i * nres + DT_R_CPU], (uint32_t)i};
  }
  if (!rc && c->nby) qsort(order, c->nby, sizeof *order, cpu_ix_cmp);
  for (size_t k = 0; !rc && k < c->nby; k++) c->by_cpu[k] = order[k].i;
  dt__free(order);
  for (uint32_t k = 0; !rc && k < p->nspecs; k++) {
    ptrdiff_t v = p->specs[k].src - s.view.pods.v;
    if (v < 0 || (size_t)v >= s.view.pods.n) continue;
    uint32_t sp = s.view_pod[v];
    if (sp >= np) continue;
    memcpy(&c->req[(size_t)sp * nres], p->specs[k].req, nres * sizeof *c->req);
    c->has_req[sp] = 1;
  }
  /* every NodePool's types, each by its cheapest offering */
  size_t nt = 0;
  for (uint32_t pi = 0; pi < p->npools; pi++) nt += p->pools[pi].ntypes;
  tprice_ix *ix = dt__malloc((nt ? nt : 1) * sizeof *ix);
  int64_t *eff = dt__malloc((nt ? nt : 1) * nres * sizeof *eff);
  c->tprice = dt__malloc((nt ? nt : 1) * sizeof *c->tprice);
  c->tprice_ns = dt__malloc((nt ? nt : 1) * sizeof *c->tprice_ns);
  c->teff = dt__malloc((nt ? nt : 1) * nres * sizeof *c->teff);
  if (!ix || !eff || !c->tprice || !c->tprice_ns || !c->teff) rc = DT_ENOMEM;
  size_t m = 0;
  for (uint32_t pi = 0; !rc && pi < p->npools; pi++) {
    const rt_pool *pl = &p->pools[pi];
    uint64_t zm;
    uint8_t cm;
    dt__x_masks(p, &pl->reqs, &zm, &cm);
    for (uint32_t k = 0; k < pl->ntypes; k++) {
      const rt_type *t = &p->types[pl->types[k]];
      double lo = INFINITY, lo_ns = INFINITY;
      for (uint32_t o = 0; o < t->noff; o++) {
        /* an offering the pool's claims may launch: in its zones and
        ** capacity types, spot within its maximum, and available; a
        ** reservation's units free (a candidate's own unit comes back in
        ** its view, and moving into a reservation costs nothing more) */
        const rt_off *of = &t->off[o];
        if (!(zm >> of->zone & 1) || !(cm >> of->ct & 1) || !dt__spot_ok(of, pl->spot_max)) continue;
        if (of->ct != DT_CT_RESERVED && of->avail == 0) continue;
        double pr = of->ct == DT_CT_RESERVED ? 0 : of->price;
        if (pr < lo) lo = pr; /* NaN never is */
        if (of->ct != DT_CT_SPOT && pr < lo_ns) lo_ns = pr;
      }
      if (lo == INFINITY) continue;
      ix[m] = (tprice_ix){lo, lo_ns, (uint32_t)m};
      memcpy(&eff[m * nres], pl->eff[pl->types[k]], nres * sizeof *eff);
      m++;
    }
  }
  if (!rc) {
    if (m) qsort(ix, m, sizeof *ix, tprice_cmp);
    for (size_t k = 0; k < m; k++) {
      c->tprice[k] = ix[k].price;
      c->tprice_ns[k] = ix[k].price_ns;
      memcpy(&c->teff[k * nres], &eff[(size_t)ix[k].i * nres], nres * sizeof *eff);
    }
    c->ntypes = m;
    c->off = collide;
  }
  dt__free(ix);
  dt__free(eff);
  dt__free(named);
  dt__dr_sim_free(&s);
  return rc;
}

int dt__dr_screen(state *st, uint32_t cand, char *out, size_t len) {
  if (st->no_screen) return 0;
  screen *c = st->scr;
  if (c && (c->cmds != st->r->commands.n || c->nodes != st->nodes.n)) dt__dr_screen_free(st);
  if (!st->scr) {
    if (!(c = st->scr = dt__calloc(1, sizeof *c))) return DT_ENOMEM;
    int rc = screen_build(st, c);
    if (rc) return rc;
  }
  c = st->scr;
  const dnode *d = &st->nodes.v[cand];
  if (c->off || cand >= c->nn || d->price <= 0) return 0;
  if (c->nunknown > (c->take[cand] == 2)) return 0;
  uint32_t nres = c->nres;
  int64_t sum[DT_RES_MAX] = {0};
  size_t nalone = 0;
  uint32_t first = 0;
  for (size_t k = 0; k < d->pods.n; k++) {
    uint32_t j = d->pods.v[k];
    const dt_podspec *ps = &st->pods[j];
    if (ps->daemon) continue; /* it goes with its node */
    if (!c->has_req[j]) return 0;
    const int64_t *req = &c->req[(size_t)j * nres];
    if (scr_fits_elsewhere(c, cand, req)) continue;
    int64_t count = ps->count > 0 ? ps->count : 1;
    for (uint32_t r = 0; r < nres; r++) sum[r] = dt__qty_add(sum[r], dt__qty_mul(req[r] < 0 ? 0 : req[r], count));
    if (!nalone++) first = j;
  }
  if (!nalone) return 0;
  /* a spot node whose replacement would launch spot again is refused while
  ** spot-to-spot consolidation is off: only a reserved or on-demand one
  ** cheaper than it would be taken */
  bool no_spot = d->ct == DT_CT_SPOT && !st->o.spot_to_spot;
  for (size_t k = 0; k < c->ntypes && c->tprice[k] < d->price; k++) {
    if (no_spot && !(c->tprice_ns[k] < d->price)) continue;
    const int64_t *eff = &c->teff[k * nres];
    bool ok = true;
    for (uint32_t r = 0; r < nres && ok; r++) ok = sum[r] <= eff[r];
    if (ok) return 0;
  }
  const dt_podspec *f = &st->pods[first];
  const char *kind = no_spot ? "an on-demand or reserved offering" : "an offering";
  const char *why = no_spot ? " (spot-to-spot consolidation is disabled)" : "";
  if (nalone == 1)
    snprintf(out, len,
             "not cheaper: pod %s/%s fits on no other node, and no instance type with %s cheaper than the node's "
             "$%.4f/h holds it%s",
             f->ns, f->name, kind, d->price, why);
  else
    snprintf(out, len,
             "not cheaper: %zu of its pods (%s/%s and %zu more) fit on no other node, and no instance type with %s "
             "cheaper than the node's $%.4f/h holds them together%s",
             nalone, f->ns, f->name, nalone - 1, kind, d->price, why);
  return 1;
}

/* Whether the claim may launch offering o of type t: available, or a
** reserved unit the claim itself holds or launched into (the simulation
** counted it out of the reservation for this very claim). */
static bool claim_may(const dt_plan *p, const rt_claim *k, const rt_type *t, uint32_t o) {
  const rt_off *of = &t->off[o];
  if (of->avail != 0) return true;
  if (of->ct != DT_CT_RESERVED) return false;
  uint32_t ti = (uint32_t)(t - p->types), g = p->off_base[ti] + o;
  if (k->type >= 0 && (uint32_t)k->type == ti && k->off >= 0 && (uint32_t)k->off == o) return true;
  for (size_t h = 0; h < k->held.n; h++)
    if (k->held.v[h] == g) return true;
  return false;
}

/* The capacity type a claim would launch with: reserved while a compatible
** reservation lasts, then spot, then on-demand (Karpenter's precedence). */
static int launch_ct(const dt_plan *p, const rt_claim *k) {
  for (int ct = 0; ct < DT_CT_N; ct++) {
    if (!(k->ctmask >> ct & 1)) continue;
    for (uint32_t i = 0; i < k->nfinal; i++) {
      const rt_type *t = &p->types[k->final[i]];
      for (uint32_t o = 0; o < t->noff; o++)
        if (t->off[o].ct == ct && (k->zmask >> t->off[o].zone & 1) && claim_may(p, k, t, o)) return ct;
    }
  }
  return DT_CT_ON_DEMAND;
}

/* The most expensive compatible offering of type t in capacity type ct
** (WorstLaunchPrice), and the cheapest (for savings). A reserved unit costs
** its on-demand price when reserved nodes are being replaced, and nothing
** when on-demand or spot nodes move into it: it is already paid for, so
** the capacity-reservation design always prefers the move. */
static void launch_prices(const dt_plan *p, const rt_claim *k, const rt_type *t, int ct, bool free_reserved,
                          double *worst, double *best, int *best_zone) {
  *worst = -1;
  *best = INFINITY;
  for (uint32_t o = 0; o < t->noff; o++) {
    const rt_off *of = &t->off[o];
    if (of->ct != ct || !(k->zmask >> of->zone & 1) || !claim_may(p, k, t, o)) continue;
    double pr = of->ct != DT_CT_RESERVED ? of->price
                : free_reserved          ? 0
                : t->src->od_price >= 0  ? t->src->od_price
                                         : of->price;
    if (pr > *worst) *worst = pr;
    if (pr < *best) {
      *best = pr;
      *best_zone = of->zone;
    }
  }
}

/* An option by its cheapest offering; ties keep their order. */
typedef struct ranked {
  double price;
  uint32_t pos, opt;
} ranked;

static int ranked_cmp(const void *a, const void *b) {
  const ranked *x = a, *y = b;
  if (x->price != y->price) return x->price < y->price ? -1 : 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Karpenter's price rule for one new claim replacing nodes costing `price`. */
void dt__dr_price_rule(state *st, const sim *s, const uint32_t *cands, size_t n, bool single, verdict *v) {
  const dt_plan *p = s->plan;
  const rt_claim *k = s->claim;
  double price = 0;
  bool all_spot = true, all_reserved = true;
  for (size_t i = 0; i < n; i++) {
    price += st->nodes.v[cands[i]].price;
    all_spot &= st->nodes.v[cands[i]].ct == DT_CT_SPOT;
    all_reserved &= st->nodes.v[cands[i]].ct == DT_CT_RESERVED;
  }
  v->free_reserved = !all_reserved;
  int ct = launch_ct(p, k);
  v->ct = ct;
  if (all_spot && ct == DT_CT_SPOT && !st->o.spot_to_spot) {
    snprintf(v->reason, sizeof v->reason,
             "spot-to-spot consolidation is disabled (Karpenter's default; "
             "--spot-to-spot enables it)");
    return;
  }
  /* filterOutSameInstanceType: replacing m nodes by one of a type being
  ** removed only pays below the cheapest such candidate */
  double same_cap = INFINITY;
  if (!single)
    for (size_t i = 0; i < n; i++)
      for (uint32_t o = 0; o < k->nfinal; o++) {
        const dnode *d = &st->nodes.v[cands[i]];
        if (d->type && !strcmp(p->types[k->final[o]].src->name, d->type) && d->price < same_cap) same_cap = d->price;
      }
  double cheapest_worst = INFINITY;
  v->nopt = 0;
  v->new_price = INFINITY;
  for (uint32_t o = 0; o < k->nfinal && v->nopt < 600; o++) {
    const rt_type *t = &p->types[k->final[o]];
    double worst, best;
    int bz = 0;
    launch_prices(p, k, t, ct, v->free_reserved, &worst, &best, &bz);
    if (worst < 0) continue;
    if (worst < cheapest_worst) cheapest_worst = worst;
    if (!(worst < price) || best >= same_cap) continue;
    v->best[v->nopt] = best;
    v->opt[v->nopt++] = k->final[o];
    if (best < v->new_price) v->new_price = best;
  }
  if (!v->nopt) {
    snprintf(v->reason, sizeof v->reason,
             "not cheaper: the replacement's worst-case %s price is $%.4f/h, the node%s cost $%.4f/h", dt__ct_names[ct],
             cheapest_worst == INFINITY ? 0 : cheapest_worst, n > 1 ? "s" : "", price);
    return;
  }
  if (all_spot && ct == DT_CT_SPOT && single) {
    if (v->nopt < SPOT_TO_SPOT_MIN) {
      snprintf(v->reason, sizeof v->reason,
               "spot-to-spot: only %u spot options are cheaper than the node; %d are needed", v->nopt,
               SPOT_TO_SPOT_MIN);
      return;
    }
    /* launch with the 15 cheapest, so the launch does not re-trigger consolidation */
    ranked *r = dt__malloc(v->nopt * sizeof *r);
    if (r) {
      for (uint32_t i = 0; i < v->nopt; i++) r[i] = (ranked){v->best[i], i, v->opt[i]};
      qsort(r, v->nopt, sizeof *r, ranked_cmp);
      for (uint32_t i = 0; i < SPOT_TO_SPOT_MIN; i++) {
        v->opt[i] = r[i].opt;
        v->best[i] = r[i].price;
      }
      dt__free(r);
      v->nopt = SPOT_TO_SPOT_MIN;
    }
  }
  /* RemoveInstanceTypeOptionsByPriceAndMinValues under the Strict policy
  ** (Karpenter's default): the cheaper options must still meet minValues */
  if (p->pools[k->pool].has_min_values && !dt__min_values_ok(p, &k->reqs, v->opt, v->nopt)) {
    snprintf(v->reason, sizeof v->reason,
             "not cheaper within minValues: the %u cheaper instance types do not meet the NodePool's minValues",
             v->nopt);
    return;
  }
  v->ok = true;
  v->replace = true;
  v->savings = price - v->new_price;
}

/* Balanced: a move is approved when (savings / pool cost) / (disruption /
** pool disruption) >= 1/k, k = 2. */
bool dt__dr_balanced_ok(state *st, const uint32_t *cands, size_t n, double savings, char *out, size_t len) {
  for (size_t i = 0; i < n; i++) {
    int pi = st->nodes.v[cands[i]].pool;
    if (st->m->pools.v[pi].consolidation != DT_CONSOL_BALANCED) continue;
    double src = 0, all = 0, dis = 0;
    for (size_t j = 0; j < n; j++) {
      all += st->nodes.v[cands[j]].price;
      if (st->nodes.v[cands[j]].pool == pi) {
        src += st->nodes.v[cands[j]].price;
        dis += st->nodes.v[cands[j]].cost;
      }
    }
    double share = all > 0 ? savings * src / all : 0;
    const poolbudget *b = &st->pb[pi];
    double score = share <= 0 ? 0 : dis <= 0 ? INFINITY : (share / b->cost) / (dis / b->disruption);
    if (score < 1.0 / BALANCED_K) {
      snprintf(out, len, "Balanced: score %.3f < %.2f (savings $%.4f/h of $%.4f/h, disruption %.1f of %.1f)", score,
               1.0 / BALANCED_K, share, b->cost, dis, b->disruption);
      return false;
    }
  }
  return true;
}

/* ------------------------------------------------------------ commands */

static dt_disrupt_node_info node_info(state *st, uint32_t i) {
  const dnode *d = &st->nodes.v[i];
  size_t np = 0;
  for (size_t k = 0; k < d->pods.n; k++) np += !st->pods[d->pods.v[k]].daemon;
  return (dt_disrupt_node_info){dt__dr_rstr(st, d->n->name),
                                dt__dr_rstr(st, st->m->pools.v[d->pool].name),
                                dt__dr_rstr(st, d->type),
                                dt__dr_rstr(st, d->zone),
                                d->ct >= 0 ? dt__ct_names[d->ct] : NULL,
                                d->price > 0 ? d->price : 0,
                                np};
}

/* Apply a command to the state: nodes go, their pods move where the
** simulation put them, replacements join in flight. */
int dt__dr_apply(state *st, const uint32_t *cands, size_t n, const sim *s, const char *reason, const char *detail,
                 const verdict *v) {
  const dt_plan *p = s ? s->plan : NULL;
  dt_arena *ra = &st->r->arena;
  bool replace = s && s->nclaims > 0;
  dt_command_info c = {
      dt__dr_rstr(st, reason), replace ? "replace" : "delete", dt__dr_rstr(st, detail), 0, n, NULL, 0, NULL};
  dt_disrupt_node_info *nodes = dt__arena_alloc(ra, n * sizeof *nodes + 1);
  if (!nodes) return DT_ENOMEM;
  c.nodes = nodes;
  double price = 0;
  for (size_t k = 0; k < n; k++) {
    nodes[k] = node_info(st, cands[k]);
    price += st->nodes.v[cands[k]].price > 0 ? st->nodes.v[cands[k]].price : 0;
  }
  size_t nrepl = 0;
  for (size_t i = 0; p && i < p->claims.n; i++) nrepl += p->claims.v[i]->type >= 0;
  dt_claim_info *repl = dt__arena_alloc(ra, nrepl * sizeof *repl + 1);
  if (!repl) return DT_ENOMEM;
  c.replacements = repl;
  double newp = 0;
  /* replacements: every new claim of the simulation */
  for (size_t i = 0; p && i < p->claims.n; i++) {
    const rt_claim *k = p->claims.v[i];
    if (k->type < 0) continue;
    const rt_type *t = &p->types[k->type];
    const rt_off *of = &t->off[k->off];
    const char *tname = t->src->name, *zone = dt__sym_str(&p->syms, p->zones[of->zone]);
    int ct = of->ct;
    double pr = of->price;
    if (v && v->replace && k == s->claim) { /* the price rule's choice: its cheapest remaining option */
      const rt_type *bt = &p->types[v->opt[0]];
      double w, b;
      int bz = of->zone;
      launch_prices(p, k, bt, v->ct, v->free_reserved, &w, &b, &bz);
      tname = bt->src->name;
      zone = dt__sym_str(&p->syms, p->zones[bz]);
      ct = v->ct;
      pr = b;
    }
    newp += pr;
    const char *cname = dt__sym_str(&p->syms, k->name);
    dt_claim_info *o = &repl[c.nreplacements++];
    *o = (dt_claim_info){.name = dt__dr_rstr(st, cname),
                         .nodepool = dt__dr_rstr(st, p->pools[k->pool].src->name),
                         .instance_type = dt__dr_rstr(st, tname),
                         .zone = dt__dr_rstr(st, zone),
                         .capacity_type = dt__ct_names[ct],
                         .price = pr};
    const char **moved = dt__arena_alloc(ra, k->pods.n * sizeof *moved + 1); /* the candidates' pods it takes */
    if (!moved) return DT_ENOMEM;
    o->pods = moved;
    for (size_t j = 0; j < k->pods.n; j++) {
      const rt_pod *pod = &p->pods[k->pods.v[j]];
      char pname[700];
      if (!s->moving[pod->spec]) continue;
      dt__pod_name(p, pod, pname, sizeof pname);
      moved[o->npods++] = dt__dr_rstr(st, pname);
    }
    bool chosen = v && v->replace && k == s->claim;
    size_t nopt = chosen ? v->nopt : k->nfinal < 600 ? k->nfinal : 600;
    const char **opts = dt__arena_alloc(ra, nopt * sizeof *opts + 1);
    if (!opts) return DT_ENOMEM;
    o->instance_type_options = opts;
    o->noptions = nopt;
    for (size_t q = 0; q < nopt; q++) opts[q] = dt__dr_rstr(st, p->types[chosen ? v->opt[q] : k->final[q]].src->name);
    /* the values its requirements took (a custom label a pod requires, a
    ** topology spread's), which the replacement must carry */
    dt_label_info *cl = dt__arena_alloc(ra, k->reqs.n * sizeof *cl + 1);
    ptrdiff_t ncl = cl ? dt__claim_custom_labels(p, k, ra, cl) : -1;
    if (ncl < 0) return DT_ENOMEM;
    for (ptrdiff_t q = 0; q < ncl; q++)
      cl[q] = (dt_label_info){dt__dr_rstr(st, cl[q].key), dt__dr_rstr(st, cl[q].value)};
    o->labels = cl;
    o->nlabels = (size_t)ncl;
    /* The replacement joins the cluster in flight. It outlives the
    ** simulation's plan, so strings from the plan's symbols are copied. */
    dt_node *nn = dt__arena_alloc(&st->arena, sizeof *nn);
    dt_kv *lab = dt__arena_alloc(&st->arena, (4 + (size_t)ncl) * sizeof *lab);
    zone = dt__arena_strdup(&st->arena, zone);
    if (!nn || !lab || !zone) return DT_ENOMEM;
    lab[0] = (dt_kv){DT_L_INSTANCE_TYPE, (char *)tname};
    lab[1] = (dt_kv){DT_L_ZONE, (char *)zone};
    lab[2] = (dt_kv){DT_L_CAPACITY_TYPE, (char *)dt__ct_names[ct]};
    lab[3] = (dt_kv){DT_L_NODEPOOL, (char *)p->pools[k->pool].src->name};
    for (ptrdiff_t q = 0; q < ncl; q++)
      if (!(lab[4 + q].key = dt__arena_strdup(&st->arena, cl[q].key)) ||
          !(lab[4 + q].val = dt__arena_strdup(&st->arena, cl[q].value)))
        return DT_ENOMEM;
    nn->name = nn->claim_name = dt__arena_strdup(&st->arena, cname);
    nn->kind = "NodeClaim";
    nn->file = "(replacement)";
    nn->labels = (dt_kvs){4 + (size_t)ncl, lab};
    nn->ready = true;
    nn->created = st->o.now;
    dnode d = {0};
    d.n = nn;
    d.extra = true;
    d.pool = (int)(p->pools[k->pool].src - s->view.pools.v); /* the view's pools: the pass's, or their copy in order */
    d.type = tname;
    d.zone = zone;
    d.ct = ct;
    d.price = pr;
    if (!nn->name || dt__vec_push(&st->nodes, d)) return DT_ENOMEM;
    if (st->cl && dt__cluster_add_node(st->cl, nn, NULL)) return DT_ENOMEM; /* its node id is its index */
    uint32_t di = (uint32_t)st->nodes.n - 1;
    for (size_t q = 0; q < k->pods.n; q++) {
      uint32_t sp = s->view_pod[p->pods[k->pods.v[q]].spec];
      st->pods[sp].node_name = nn->name;
      if (st->cl && dt__cluster_bind(st->cl, sp, nn->name)) return DT_ENOMEM;
      if (dt__vec_push(&st->nodes.v[di].pods, sp)) return DT_ENOMEM;
    }
  }
  /* pods that moved onto existing nodes */
  for (size_t i = 0; p && i < p->bindings.n; i++) {
    uint32_t vp = p->pods[p->bindings.v[i].pod].spec;
    if (!s->moving[vp]) continue;
    uint32_t target = s->view_node[p->nodes[p->bindings.v[i].node].src - s->view.nodes.v];
    uint32_t sp = s->view_pod[vp];
    st->pods[sp].node_name = st->nodes.v[target].n->name;
    if (st->cl && dt__cluster_bind(st->cl, sp, st->pods[sp].node_name)) return DT_ENOMEM;
    if (dt__vec_push(&st->nodes.v[target].pods, sp)) return DT_ENOMEM;
    dt__dr_node_cost(st, &st->nodes.v[target]);
  }
  c.savings = price - newp;
  if (dt__vec_push(&st->r->commands, c)) return DT_ENOMEM;
  for (size_t k = 0; k < n; k++) {
    dnode *d = &st->nodes.v[cands[k]];
    d->removed = true;
    st->pb[d->pool].disrupting++;
    for (size_t q = 0; q < d->pods.n; q++) {
      int32_t b = st->pod_pdb[d->pods.v[q]];
      if (b >= 0 && st->pdb_allowed[b] > 0 && dt__dr_pdb_applies(&st->pods[d->pods.v[q]], &st->m->pdbs.v[b]))
        st->pdb_allowed[b]--;
    }
    dt__dr_step(st, cands[k], "%s: %s", reason, replace ? "replaced" : "deleted");
  }
  st->r->stats.commands++;
  st->r->stats.disrupted += n;
  st->r->stats.savings += price - newp;
  return 0;
}

/* ------------------------------------------------------------ hooks */

typedef struct noderec {
  dt_hook_field f[8];
} noderec;

static void node_rec(state *st, uint32_t i, noderec *r, dt_hook_rec *out) {
  const dnode *d = &st->nodes.v[i];
  size_t np = 0;
  for (size_t k = 0; k < d->pods.n; k++) np += !st->pods[d->pods.v[k]].daemon;
  r->f[0] = (dt_hook_field){"name", DT_HF_STRING, d->n->name, 0};
  r->f[1] = (dt_hook_field){"nodePool", DT_HF_STRING, d->pool >= 0 ? st->m->pools.v[d->pool].name : "", 0};
  r->f[2] = (dt_hook_field){"instanceType", DT_HF_STRING, d->type ? d->type : "", 0};
  r->f[3] = (dt_hook_field){"capacityType", DT_HF_STRING, d->ct >= 0 ? dt__ct_names[d->ct] : "", 0};
  r->f[4] = (dt_hook_field){"price", DT_HF_NUMBER, NULL, d->price > 0 ? d->price : 0};
  r->f[5] = (dt_hook_field){"pods", DT_HF_NUMBER, NULL, (double)np};
  r->f[6] = (dt_hook_field){"disruptionCost", DT_HF_NUMBER, NULL, d->cost};
  r->f[7] = (dt_hook_field){"age", DT_HF_NUMBER, NULL, (double)dt__dr_age(st, d->n)};
  *out = (dt_hook_rec){r->f, 8};
}

/* consolidation_order: the policy may reorder the candidates. */
int dt__dr_order_hook(state *st, cand *c, size_t n) {
  if (!n || !dt__policy_has(st->o.policy, DT_HOOK_CONSOLIDATION_ORDER)) return 0;
  noderec *nr = dt__malloc(n * sizeof *nr);
  dt_hook_rec *recs = dt__malloc(n * sizeof *recs);
  size_t *order = dt__malloc(n * sizeof *order);
  cand *copy = dt__malloc(n * sizeof *copy);
  int rc = 0;
  if (!nr || !recs || !order || !copy) {
    rc = DT_ENOMEM;
  } else {
    for (size_t k = 0; k < n; k++) node_rec(st, c[k].node, &nr[k], &recs[k]);
    if (dt__policy_consolidation_order(st->o.policy, recs, n, order) == 0) {
      memcpy(copy, c, n * sizeof *c);
      for (size_t k = 0; k < n; k++) c[k] = copy[order[k]];
    }
  }
  dt__free(nr);
  dt__free(recs);
  dt__free(order);
  dt__free(copy);
  return rc;
}

/* approve: the policy's verdict on a command the built-in rules accepted. */
bool dt__dr_approve_hook(state *st, const uint32_t *cands, size_t n, const char *action, double savings, double price,
                         char *out, size_t len) {
  if (!dt__policy_has(st->o.policy, DT_HOOK_APPROVE)) return true;
  noderec *nr = dt__malloc((n ? n : 1) * sizeof *nr);
  dt_hook_rec *recs = dt__malloc((n ? n : 1) * sizeof *recs);
  bool ok = true;
  if (nr && recs) {
    double dis = 0;
    int pool = st->nodes.v[cands[0]].pool;
    for (size_t k = 0; k < n; k++) {
      node_rec(st, cands[k], &nr[k], &recs[k]);
      dis += st->nodes.v[cands[k]].cost;
    }
    const dt_hook_field f[] = {{"reason", DT_HF_STRING, "Underutilized", 0},
                               {"action", DT_HF_STRING, action, 0},
                               {"nodePool", DT_HF_STRING, st->m->pools.v[pool].name, 0},
                               {"savings", DT_HF_NUMBER, NULL, savings},
                               {"price", DT_HF_NUMBER, NULL, price},
                               {"newPrice", DT_HF_NUMBER, NULL, price - savings},
                               {"disruption", DT_HF_NUMBER, NULL, dis},
                               {"poolCost", DT_HF_NUMBER, NULL, st->pb[pool].cost},
                               {"poolDisruption", DT_HF_NUMBER, NULL, st->pb[pool].disruption},
                               {"now", DT_HF_NUMBER, NULL, (double)st->o.now}};
    const dt_hook_rec cmd = {f, sizeof f / sizeof f[0]};
    if (dt__policy_approve(st->o.policy, &cmd, recs, n, &ok) == 0 && !ok)
      snprintf(out, len, "the policy's approve hook rejected the command (saves $%.4f/h)", savings);
  }
  dt__free(nr);
  dt__free(recs);
  return ok;
}
