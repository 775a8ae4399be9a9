/*
** disrupt.c: what to take away. One pass runs Karpenter's methods in order
** (emptiness, drift, expiry, multi-node and single-node consolidation) over
** the cluster in the manifests, under the NodePools' disruption budgets, and
** says why every node it leaves alone stays.
**
** Karpenter stops a loop at the first method that yields commands and starts
** the next loop with those commands in flight. A pass here goes on instead:
** each method sees the nodes earlier commands removed (their pods moved where
** the simulation put them, replacements in flight) and the budgets they used,
** so one pass prints what a run of Karpenter's loops would issue.
**
** Every consolidation decision is a real scheduling simulation: the
** candidates' pods become pending and the scheduler places them on the other
** nodes and at most one new claim, with every scheduling constraint.
**
** A pass runs a hundred simulations or more on clusters of thousands of
** nodes, each of which differs from the last by a few nodes. So the cluster
** is compiled once per pass (dt__cluster_new: names interned, nodes and pod
** specs compiled, what the pods bound to each node use summed) and each
** simulation plans an overlay of it: which nodes its view holds, which pods
** are pending or left out. A command's moves and replacements are told to
** the cluster (dt__cluster_bind, dt__cluster_add_node). The overlay decides
** as compiling the view from scratch would, byte for byte; spec/unit.c
** compares the two (dt__disrupt_run_rebuild) on generated clusters.
**
** Static NodePools (spec.replicas) follow Karpenter's static capacity: never
** consolidated (emptiness or underutilization), drift replaced one for one
** from the template while the pool is not above its replicas and
** limits.nodes leaves room, expiry as any node, and a pool above its
** replicas scaled down first (Overprovisioned), ignoring budgets.
*/
#include "schedule.h"

#include "hooks.h"
#include "result.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define MULTI_MAX 100        /* candidates a multi-node command may take */
#define SPOT_TO_SPOT_MIN 15  /* cheaper spot options single-node spot-to-spot needs */
#define BALANCED_K 2.0       /* Balanced approves a move scoring >= 1/k */

typedef struct dnode {
  dt_node *n;       /* the manifest node, or a replacement made by this pass */
  int pool;         /* NodePool index, -1 when none in the input manages it */
  int ct;           /* capacity type, -1 unknown */
  const char *type, *zone;
  double price;     /* $/h of its offering; reserved at the on-demand price; < 0 unknown */
  bool removed, extra;
  bool pending;     /* removed by a command that replaces it (still counted by a static pool) */
  bool empty;
  double cost;      /* RescheduleDisruptionCost: 1 + sum of positive pod eviction costs */
  DT_VEC(uint32_t) pods; /* bound pods (indices into st.pods) */
  char why[400];    /* why it stays, the last reason recorded */
  char drift[300];  /* why it drifted, "" when it has not */
} dnode;

typedef struct poolbudget {
  int64_t nodes, disrupting;
  int64_t value[3]; /* per reason bit index: Empty, Drifted, Underutilized; INT64_MAX unlimited */
  double cost, disruption; /* pool totals for Balanced */
} poolbudget;

typedef struct state {
  const dt_catalog *cat;
  dt_compiled_catalog *cc; /* the catalog compiled once for every simulation of the pass (rebuild mode) */
  dt_cluster *cl;          /* the cluster compiled once: each simulation is an overlay on it */
  bool rebuild;            /* compile every simulation's view from scratch (the reference the overlay matches) */
  const dt_manifests *m;
  dt_disrupt_opts o;
  dt_arena arena;
  dt_podspec *pods; /* bound pods, shallow copies (node_name re-pointed as pods move) */
  size_t npods;
  DT_VEC(dnode) nodes;
  poolbudget *pb;
  int64_t *pdb_allowed;
  int32_t *pod_pdb; /* per pod: the PDB covering it, -1 none, -2 several */
  dt_symtab types;  /* catalog type name -> index + 1 */
  dt_disruption *r; /* the result: commands, blocked nodes, budgets, explain steps */
  uint64_t sims;
  int rc;
} state;

static const char *const k_reason[3] = {"Empty", "Drifted", "Underutilized"};

/* ------------------------------------------------------------ output */


/* A string for the result: copied into its arena (NULL stays NULL). */
static const char *rstr(state *st, const char *s) { return s ? dt__arena_strdup(&st->r->arena, s) : NULL; }

static bool explaining(const state *st, size_t i) {
  return st->r->explain_node && !strcmp(st->nodes.v[i].n->name, st->o.explain);
}

static void explain_step(state *st, const char *msg) {
  const char *s = rstr(st, msg);
  if (!s || dt__vec_push(&st->r->explain, s)) st->r->arena.oom = 1;
}

/* Record why node i stays, and the step for --explain. */
static void why(state *st, size_t i, const char *fmt, ...) DT_PRINTF(3, 4);
static void why(state *st, size_t i, const char *fmt, ...) {
  dnode *d = &st->nodes.v[i];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->why, sizeof d->why, fmt, ap);
  va_end(ap);
  if (!explaining(st, i)) return;
  const dt_disruption *r = st->r;
  if (r->explain.n && !strcmp(r->explain.v[r->explain.n - 1], d->why)) return; /* methods repeat themselves */
  explain_step(st, d->why);
}

static void step(state *st, size_t i, const char *fmt, ...) DT_PRINTF(3, 4);
static void step(state *st, size_t i, const char *fmt, ...) {
  if (!explaining(st, i)) return;
  char msg[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  explain_step(st, msg);
}

/* ------------------------------------------------------------ the model */

static const dt_ctype *find_type(state *st, const char *name) {
  dt_sym s = name ? dt__sym_find(&st->types, name) : 0;
  return s ? &st->cat->types[s - 1] : NULL;
}

static double offer_price(const dt_ctype *t, const char *zone, int ct) {
  if (!t || !zone || ct < 0) return -1;
  for (size_t i = 0; i < t->noff; i++)
    if (t->off[i].ct == ct && !strcmp(t->off[i].zone, zone))
      return ct == DT_CT_RESERVED && t->od_price >= 0 ? t->od_price : t->off[i].price;
  return ct == DT_CT_RESERVED ? t->od_price : -1;
}

static double eviction_cost(const dt_podspec *p) {
  double c = 1.0 + (double)p->deletion_cost / 134217728.0 + (double)p->priority / 33554432.0;
  return c < -10 ? -10 : c > 10 ? 10 : c;
}

static int64_t scaled(int64_t v, bool pct, int64_t of) { return pct ? (v * of + 99) / 100 : v; } /* rounds up */

/* The disruption cost and emptiness of node i, from its reschedulable pods. */
static void node_cost(state *st, dnode *d) {
  d->cost = 1.0;
  for (size_t k = 0; k < d->pods.n; k++) {
    const dt_podspec *p = &st->pods[d->pods.v[k]];
    if (p->daemon) continue;
    double c = eviction_cost(p);
    if (c > 0) d->cost += c;
  }
  d->empty = d->cost <= 1.0;
}

static bool node_matches_pool(const dt_node *n, const dt_nodepool *p, char *out, size_t len) {
  for (size_t i = 0; i < p->reqs.n; i++) {
    const dt_mreq *q = &p->reqs.v[i];
    const char *v = dt__kv_get(n->labels.v, n->labels.n, q->key);
    if (!v) continue; /* a label the node does not carry is not drift */
    if (!dt__mreq_match(q, n->labels.v, n->labels.n)) {
      snprintf(out, len, "label %s=%s no longer satisfies the NodePool's requirement %s %s", q->key, v, q->key,
               dt__op_name(q->op));
      return false;
    }
  }
  return true;
}

/*
** Pods nominated to an in-flight claim (its dovetail.dev/pods annotation, as
** Karpenter nominates pods to the NodeClaim launched for them) are on that
** claim for disruption: a claim launched for pods is never "empty" while
** they wait for it. Replicas are matched by their expanded names. Appends
** the nominated pods, one each, to st->pods (sized by the caller).
*/
typedef struct nom {
  size_t spec;
  int64_t ordinal; /* -1 for a Pod */
  const char *node;
} nom;

static int nom_cmp(const void *a, const void *b) {
  const nom *x = a, *y = b;
  if (x->spec != y->spec) return x->spec < y->spec ? -1 : 1;
  return (x->ordinal > y->ordinal) - (x->ordinal < y->ordinal);
}

/* Work in the number of nominations, not of replicas: each nominated name
** is looked up as a pending Pod, or as "<workload>-<ordinal>" of a pending
** workload; the pods are appended in input order, as bound pods are. */
static int nominated(state *st, size_t cap) {
  const dt_manifests *m = st->m;
  dt_symtab specs = {0}, seen = {0}; /* pending "ns/name" -> spec index + 1; names taken */
  DT_VEC(size_t) spec_of = {0};
  DT_VEC(nom) noms = {0};
  int rc = 0;
  for (size_t i = 0; i < m->pods.n && !rc; i++) {
    const dt_podspec *p = &m->pods.v[i];
    if (p->node_name) continue;
    char k[600];
    snprintf(k, sizeof k, "%s/%s", p->ns, p->name);
    dt_sym sy = dt__sym(&specs, k);
    while (!specs.oom && spec_of.n <= sy)
      if (dt__vec_push(&spec_of, (size_t)0)) specs.oom = 1;
    if (specs.oom) rc = DT_ENOMEM;
    else if (!spec_of.v[sy]) spec_of.v[sy] = i + 1;
  }
  for (size_t i = 0; i < m->nodes.n && !rc && specs.n; i++)
    for (size_t k = 0; k < m->nodes.v[i].npods && !rc; k++) {
      const char *name = m->nodes.v[i].pods[k];
      uint32_t before = seen.n;
      dt__sym(&seen, name);
      if (seen.oom) rc = DT_ENOMEM;
      if (rc || seen.n == before) continue; /* one claim per pod: the first names it */
      dt_sym sy = dt__sym_find(&specs, name);
      nom n = {0, -1, m->nodes.v[i].name};
      bool found = sy && !m->pods.v[spec_of.v[sy] - 1].owner;
      if (found) {
        n.spec = spec_of.v[sy] - 1;
      } else { /* "<ns>/<workload>-<ordinal>" */
        const char *dash = strrchr(name, '-');
        char *end = NULL;
        long long o = dash ? strtoll(dash + 1, &end, 10) : -1;
        if (dash && end && !*end && end != dash + 1 && o >= 0) {
          char base[600];
          snprintf(base, sizeof base, "%.*s", (int)(dash - name), name);
          sy = dt__sym_find(&specs, base);
          const dt_podspec *t = sy ? &m->pods.v[spec_of.v[sy] - 1] : NULL;
          if (t && t->owner && o < t->count) {
            n.spec = spec_of.v[sy] - 1;
            n.ordinal = o;
            found = true;
          }
        }
      }
      if (found && dt__vec_push(&noms, n)) rc = DT_ENOMEM;
    }
  if (!rc && noms.n) qsort(noms.v, noms.n, sizeof *noms.v, nom_cmp);
  for (size_t i = 0; i < noms.n && !rc && st->npods < cap; i++) {
    const dt_podspec *p = &m->pods.v[noms.v[i].spec];
    dt_podspec c = *p;
    c.count = 1;
    c.owner = NULL;
    c.node_name = (char *)noms.v[i].node;
    if (noms.v[i].ordinal >= 0) {
      char name[600];
      snprintf(name, sizeof name, "%s-%lld", p->name, (long long)noms.v[i].ordinal);
      if (!(c.name = dt__arena_strdup(&st->arena, name))) rc = DT_ENOMEM;
    }
    st->pods[st->npods++] = c;
  }
  dt__symtab_free(&specs);
  dt__symtab_free(&seen);
  dt__free(spec_of.v);
  dt__free(noms.v);
  return rc;
}

static int build(state *st) {
  const dt_manifests *m = st->m;
  for (size_t i = 0; i < st->cat->ntypes; i++)
    if (dt__sym(&st->types, st->cat->types[i].name) != i + 1) return DT_ENOMEM;
  /* bound pods, then pods nominated to in-flight claims */
  size_t nb = 0;
  for (size_t i = 0; i < m->pods.n; i++) nb += m->pods.v[i].node_name != NULL;
  for (size_t i = 0; i < m->nodes.n; i++) nb += m->nodes.v[i].npods;
  st->pods = dt__arena_alloc(&st->arena, (nb ? nb : 1) * sizeof *st->pods);
  st->pod_pdb = dt__arena_alloc(&st->arena, (nb ? nb : 1) * sizeof *st->pod_pdb);
  if (!st->pods || !st->pod_pdb) return DT_ENOMEM;
  for (size_t i = 0; i < m->pods.n; i++)
    if (m->pods.v[i].node_name) st->pods[st->npods++] = m->pods.v[i];
  if (nominated(st, nb)) return DT_ENOMEM;
  /* nodes, with their pods; a NodeClaim a Node in the input stands for is
  ** that Node (one machine, not an empty second one) */
  int32_t *paired = dt__arena_alloc(&st->arena, (m->nodes.n ? m->nodes.n : 1) * sizeof *paired);
  if (!paired || dt__claims_paired(m, paired)) return DT_ENOMEM;
  dt_symtab names = {0};
  for (size_t i = 0; i < m->nodes.n; i++) {
    dt_node *n = &m->nodes.v[i];
    if (paired[i] >= 0) continue;
    dnode d = {0};
    d.n = n;
    d.pool = -1;
    const char *pn = dt__kv_get(n->labels.v, n->labels.n, DT_L_NODEPOOL);
    for (size_t k = 0; pn && k < m->pools.n; k++)
      if (!strcmp(m->pools.v[k].name, pn)) d.pool = (int)k;
    d.type = dt__kv_get(n->labels.v, n->labels.n, DT_L_INSTANCE_TYPE);
    d.zone = dt__kv_get(n->labels.v, n->labels.n, DT_L_ZONE);
    const char *ct = dt__kv_get(n->labels.v, n->labels.n, DT_L_CAPACITY_TYPE);
    d.ct = ct ? dt__ct_parse(ct) : -1;
    d.price = offer_price(find_type(st, d.type), d.zone, d.ct);
    /* pods name their node by its name, or a claim by its node's name */
    if (dt__vec_push(&st->nodes, d) || dt__sym(&names, n->name) == 0 ||
        (n->node_name && !dt__sym(&names, n->node_name))) {
      dt__symtab_free(&names);
      return DT_ENOMEM;
    }
  }
  int32_t *at = dt__calloc(names.n + 1, sizeof *at);
  if (!at) {
    dt__symtab_free(&names);
    return DT_ENOMEM;
  }
  for (size_t i = st->nodes.n; i-- > 0;) {
    const dt_node *n = st->nodes.v[i].n;
    at[dt__sym_find(&names, n->name)] = (int32_t)i + 1;
    if (n->node_name) at[dt__sym_find(&names, n->node_name)] = (int32_t)i + 1;
  }
  for (size_t i = 0; i < st->npods; i++) {
    dt_sym s = dt__sym_find(&names, st->pods[i].node_name);
    if (s && at[s] && dt__vec_push(&st->nodes.v[at[s] - 1].pods, (uint32_t)i)) st->rc = DT_ENOMEM;
  }
  dt__free(at);
  int oom = names.oom;
  dt__symtab_free(&names);
  if (oom || st->rc) return DT_ENOMEM;
  for (size_t i = 0; i < st->nodes.n; i++) node_cost(st, &st->nodes.v[i]);
  /* PDBs: what each allows now (status.disruptionsAllowed, else computed
  ** from the pods it selects, percentages rounded up as Kubernetes does). */
  st->pdb_allowed = dt__arena_alloc(&st->arena, (m->pdbs.n ? m->pdbs.n : 1) * sizeof *st->pdb_allowed);
  if (!st->pdb_allowed) return DT_ENOMEM;
  for (size_t i = 0; i < st->npods; i++) st->pod_pdb[i] = -1;
  for (size_t k = 0; k < m->pdbs.n; k++) {
    const dt_pdb *b = &m->pdbs.v[k];
    int64_t healthy = 0;
    for (size_t i = 0; i < st->npods; i++) {
      const dt_podspec *p = &st->pods[i];
      if (strcmp(p->ns, b->ns) || !dt__selector_match(&b->sel, p->labels.v, p->labels.n)) continue;
      st->pod_pdb[i] = st->pod_pdb[i] == -1 ? (int32_t)k : -2;
      healthy++;
    }
    int64_t allowed;
    if (b->allowed >= 0)
      allowed = b->allowed;
    else if (b->has_min)
      allowed = healthy - scaled(b->min_avail, b->min_pct, healthy);
    else if (b->has_max)
      allowed = scaled(b->max_unavail, b->max_pct, healthy);
    else
      allowed = healthy; /* an empty spec allows everything */
    st->pdb_allowed[k] = allowed < 0 ? 0 : allowed;
  }
  return 0;
}

/* ------------------------------------------------------------ budgets */

static bool budget_active(const dt_budget *b, int64_t now) {
  if (!b->scheduled) return true;
  int64_t hit = dt__cron_next(&b->cron, now - b->duration);
  return hit >= 0 && hit <= now;
}

int64_t dt__budget_nodes(const dt_nodepool *p, unsigned reason, int64_t now, int64_t nodes) {
  int64_t v = INT64_MAX;
  for (size_t k = 0; k < p->nbudgets; k++) {
    const dt_budget *bu = &p->budgets[k];
    if (!(bu->reasons & reason) || !budget_active(bu, now)) continue;
    int64_t n = scaled(bu->nodes, bu->pct, nodes);
    if (n < v) v = n;
  }
  return v;
}

static int budgets(state *st) {
  const dt_manifests *m = st->m;
  st->pb = dt__arena_alloc(&st->arena, (m->pools.n ? m->pools.n : 1) * sizeof *st->pb);
  if (!st->pb) return DT_ENOMEM;
  for (size_t i = 0; i < st->nodes.n; i++) {
    const dnode *d = &st->nodes.v[i];
    if (d->pool < 0) continue;
    poolbudget *b = &st->pb[d->pool];
    if (d->n->initialized && !d->n->deleting) b->nodes++;
    bool tainted = false;
    for (size_t t = 0; t < d->n->ntaints; t++) tainted |= !strcmp(d->n->taints[t].key, "karpenter.sh/disrupted");
    if (!d->n->ready || d->n->deleting || tainted) b->disrupting++;
    b->cost += d->price > 0 ? d->price : 0;
    b->disruption += d->cost;
  }
  st->r->has_budgets = true;
  for (size_t pi = 0; pi < m->pools.n; pi++) {
    const dt_nodepool *p = &m->pools.v[pi];
    poolbudget *b = &st->pb[pi];
    for (int r = 0; r < 3; r++) {
      int64_t v = dt__budget_nodes(p, 1u << r, st->o.now, b->nodes);
      if (dt__policy_has(st->o.policy, DT_HOOK_BUDGET)) {
        int64_t a = v == INT64_MAX ? -1 : (v - b->disrupting > 0 ? v - b->disrupting : 0);
        const dt_hook_field f[] = {{"now", DT_HF_NUMBER, NULL, (double)st->o.now},
                                   {"nodes", DT_HF_NUMBER, NULL, (double)b->nodes},
                                   {"disrupting", DT_HF_NUMBER, NULL, (double)b->disrupting},
                                   {"allowed", DT_HF_NUMBER, NULL, (double)a}};
        const dt_hook_rec ctx = {f, a < 0 ? 3 : 4}; /* allowed is nil when unlimited */
        if (dt__policy_budget(st->o.policy, p->name, k_reason[r], &ctx, &a) == 0)
          v = a < 0 ? INT64_MAX : a + b->disrupting;
      }
      b->value[r] = v;
      int64_t allowed = v == INT64_MAX ? -1 : (v - b->disrupting > 0 ? v - b->disrupting : 0);
      dt_budget_rec e = {rstr(st, p->name), k_reason[r], allowed, b->nodes, b->disrupting};
      if (!e.nodepool || dt__vec_push(&st->r->budgets, e)) return DT_ENOMEM;
    }
  }
  return 0;
}

static int64_t allowed(state *st, int pool, int reason_bit) {
  const poolbudget *b = &st->pb[pool];
  int64_t v = b->value[reason_bit];
  if (v == INT64_MAX) return INT64_MAX;
  return v - b->disrupting > 0 ? v - b->disrupting : 0;
}

/* ------------------------------------------------------------ candidates */

/* Whether node i may be disrupted at all, and if its pods allow it. */
static bool eligible(state *st, size_t i, bool check_pods) {
  dnode *d = &st->nodes.v[i];
  const dt_node *n = d->n;
  if (d->removed) return false;
  if (d->pool < 0) {
    why(st, i, "not managed by a NodePool in the input");
    return false;
  }
  if (!n->initialized) {
    why(st, i, "not initialized yet");
    return false;
  }
  if (n->deleting) {
    why(st, i, "already being deleted");
    return false;
  }
  if (n->dnd) {
    why(st, i, "do-not-disrupt: the node is annotated karpenter.sh/do-not-disrupt");
    return false;
  }
  for (size_t t = 0; t < n->ntaints; t++)
    if (!strcmp(n->taints[t].key, "karpenter.sh/disrupted")) {
      why(st, i, "already disrupting (karpenter.sh/disrupted taint)");
      return false;
    }
  if (!check_pods) return true;
  for (size_t k = 0; k < d->pods.n; k++) {
    uint32_t pi = d->pods.v[k];
    const dt_podspec *p = &st->pods[pi];
    if (p->daemon) continue;
    if (p->dnd || p->dnd_until > st->o.now) {
      why(st, i, "do-not-disrupt: pod %s/%s is annotated karpenter.sh/do-not-disrupt", p->ns, p->name);
      return false;
    }
    if (st->pod_pdb[pi] == -2) {
      why(st, i, "PDB: pod %s/%s is covered by more than one PodDisruptionBudget", p->ns, p->name);
      return false;
    }
    if (st->pod_pdb[pi] >= 0 && st->pdb_allowed[st->pod_pdb[pi]] <= 0) {
      const dt_pdb *b = &st->m->pdbs.v[st->pod_pdb[pi]];
      why(st, i, "PDB: PodDisruptionBudget %s/%s allows no eviction of pod %s/%s now", b->ns, b->name, p->ns, p->name);
      return false;
    }
  }
  return true;
}

static int64_t age(const state *st, const dt_node *n) { return n->created ? st->o.now - n->created : 0; }

/* Consolidatable: consolidateAfter has elapsed since the last pod event. */
static bool settled(state *st, size_t i) {
  const dnode *d = &st->nodes.v[i];
  const dt_nodepool *p = &st->m->pools.v[d->pool];
  if (p->consolidate_after < 0) {
    why(st, i, "consolidateAfter: Never");
    return false;
  }
  int64_t since = d->n->last_pod_event > d->n->created ? d->n->last_pod_event : d->n->created;
  if (since && st->o.now - since < p->consolidate_after) {
    why(st, i, "consolidateAfter %llds not elapsed (%llds since the last pod event)",
        (long long)p->consolidate_after, (long long)(st->o.now - since));
    return false;
  }
  return true;
}

typedef struct cand {
  uint32_t node;
  double ratio; /* price / disruption cost: cheapest to disrupt per dollar first */
} cand;

typedef DT_VEC(cand) candvec;

static int cand_cmp(const void *a, const void *b) {
  const cand *x = a, *y = b;
  if (x->ratio != y->ratio) return x->ratio > y->ratio ? -1 : 1;
  return x->node < y->node ? -1 : x->node > y->node;
}

/* ------------------------------------------------------------ simulation */

typedef struct sim {
  dt_plan *plan;
  dt_manifests view;
  uint32_t *view_node; /* view node -> dnode */
  size_t nview;
  uint32_t *view_pod;  /* view pod -> st pod */
  bool *moving;        /* per view pod */
  size_t nclaims;
  const rt_claim *claim; /* the single new claim, when nclaims == 1 */
  dt_nodepool *pools;    /* the view's NodePools: static ones hold what they have, or one more */
  uint8_t *ovpod;        /* an overlay's pods (st->pods itself is the view's): bound, pending or absent */
  char fail[500];
} sim;

static void sim_free(sim *s) {
  dt_plan_free(s->plan);
  dt__free(s->pools);
  dt__free(s->view.nodes.v);
  if (!s->ovpod) dt__free(s->view.pods.v);
  dt__free(s->ovpod);
  dt__free(s->view_node);
  dt__free(s->view_pod);
  dt__free(s->moving);
  memset(s, 0, sizeof *s);
}

/* Re-schedule the pods of the nodes in cands[0..n) onto every other node and
** new claims. Static NodePools plan no claims of their own in the view, but
** pool spool gets swant (the replacement of a static node the command
** removes). Returns 0 with s->fail set when a pod fits nowhere. */
static int simulate(state *st, const uint32_t *cands, size_t n, bool consolidation, int spool, int64_t swant,
                    sim *s) {
  memset(s, 0, sizeof *s);
  bool *in = dt__calloc(st->nodes.n ? st->nodes.n : 1, 1);
  if (!in) return DT_ENOMEM;
  for (size_t k = 0; k < n; k++) in[cands[k]] = true;
  s->view = *st->m;
  s->view.vmpools.n = 0; /* pools are planned by dovetail plan, not here */
  s->view.nodes.v = dt__malloc((st->nodes.n ? st->nodes.n : 1) * sizeof *s->view.nodes.v);
  s->view_node = dt__malloc((st->nodes.n ? st->nodes.n : 1) * sizeof *s->view_node);
  if (st->cl) /* the view's pods are st->pods, each bound, pending or absent */
    s->ovpod = dt__malloc(st->npods ? st->npods : 1);
  else
    s->view.pods.v = dt__malloc((st->npods ? st->npods : 1) * sizeof *s->view.pods.v);
  s->view_pod = dt__malloc((st->npods ? st->npods : 1) * sizeof *s->view_pod);
  s->moving = dt__calloc(st->npods ? st->npods : 1, 1);
  if (!s->view.nodes.v || !s->view_node || !(s->view.pods.v || s->ovpod) || !s->view_pod || !s->moving) {
    dt__free(in);
    return DT_ENOMEM;
  }
  size_t nn = 0, np = 0;
  for (size_t i = 0; i < st->nodes.n; i++) {
    const dnode *d = &st->nodes.v[i];
    if (d->removed || in[i]) continue;
    dt_node copy = *d->n;
    /* Consolidation does not move pods onto nodes still inside their own
    ** consolidateAfter window (Karpenter's IsConsolidationSimulation). */
    if (consolidation && d->pool >= 0 && d->n->initialized) {
      const dt_nodepool *p = &st->m->pools.v[d->pool];
      int64_t since = d->n->last_pod_event > d->n->created ? d->n->last_pod_event : d->n->created;
      if (p->consolidate_after > 0 && since && st->o.now - since < p->consolidate_after) copy.unschedulable = true;
    }
    s->view_node[nn] = (uint32_t)i;
    s->view.nodes.v[nn++] = copy;
  }
  s->nview = nn;
  bool *on = dt__calloc(st->npods ? st->npods : 1, 1);
  if (!on) {
    dt__free(in);
    return DT_ENOMEM;
  }
  for (size_t k = 0; k < n; k++) {
    const dnode *d = &st->nodes.v[cands[k]];
    for (size_t j = 0; j < d->pods.n; j++) on[d->pods.v[j]] = true;
  }
  for (size_t i = 0; i < st->npods && s->ovpod; i++) { /* an overlay: pods keep their places in st->pods */
    bool mv = on[i];
    /* every pod of the state names its node (bound or nominated) */
    s->ovpod[i] = !mv ? DT_OV_BOUND : st->pods[i].daemon ? DT_OV_ABSENT /* DaemonSet pods go with their node */
                                                         : DT_OV_PENDING;
    s->moving[i] = mv;
    s->view_pod[i] = (uint32_t)i;
  }
  if (s->ovpod) {
    s->view.pods.v = st->pods;
    np = st->npods;
  }
  for (size_t i = 0; i < st->npods && !s->ovpod; i++) {
    dt_podspec p = st->pods[i];
    bool mv = on[i];
    if (mv && p.daemon) continue; /* DaemonSet pods go with their node */
    if (mv) p.node_name = NULL;
    s->moving[np] = mv;
    s->view_pod[np] = (uint32_t)i;
    s->view.pods.v[np++] = p;
  }
  dt__free(in);
  dt__free(on);
  s->view.nodes.n = s->view.nodes.cap = nn;
  s->view.pods.n = s->view.pods.cap = np;
  bool any_static = false;
  for (size_t k = 0; k < st->m->pools.n; k++) any_static |= st->m->pools.v[k].replicas >= 0;
  if (any_static) {
    if (!(s->pools = dt__malloc(st->m->pools.n * sizeof *s->pools))) return DT_ENOMEM;
    memcpy(s->pools, st->m->pools.v, st->m->pools.n * sizeof *s->pools);
    s->view.pools.v = s->pools;
    for (size_t k = 0; k < st->m->pools.n; k++) {
      if (s->pools[k].replicas < 0) continue;
      int64_t have = 0; /* as the plan counts a static pool's claims */
      for (size_t i = 0; i < nn; i++) {
        const char *own = dt__kv_get(s->view.nodes.v[i].labels.v, s->view.nodes.v[i].labels.n, DT_L_NODEPOOL);
        have += own && !s->view.nodes.v[i].deleting && !strcmp(own, s->pools[k].name);
      }
      s->pools[k].replicas = have + ((int)k == spool ? swant : 0);
    }
  }
  dt_plan_opts po = {0};
  po.now = st->o.now;
  po.seed = st->o.seed + st->sims;
  po.packing = DT_PACKING_FFD;
  po.policy = st->o.policy;
  po.pool_policies = st->o.pool_policies;
  po.pool_policy_names = st->o.pool_policy_names;
  po.npool_policies = st->o.npool_policies;
  po.cancel = st->o.cancel;
  dt_error err = {0};
  st->sims++;
  int rc;
  if (st->cl) {
    const dt_overlay ov = {s->view_node, s->ovpod};
    rc = dt__plan_run_overlay(st->cat, st->cl, &s->view, &ov, &po, &s->plan, &err);
  } else {
    if (!st->cc && dt__catalog_compile(st->cat, &st->cc, NULL)) st->cc = NULL; /* compiled per run then */
    rc = st->cc ? dt__plan_run_compiled(st->cat, st->cc, &s->view, &po, false, &s->plan, &err)
                : dt_plan_run(st->cat, &s->view, &po, &s->plan, &err);
  }
  if (rc == DT_ECANCELED) return rc;
  if (rc) {
    if (rc != DT_ENOMEM) snprintf(s->fail, sizeof s->fail, "simulation failed: %s", err.msg);
    return rc == DT_ENOMEM ? rc : 0;
  }
  const dt_plan *p = s->plan;
  for (size_t i = 0; i < p->unsched.n && !s->fail[0]; i++) {
    const rt_pod *pod = &p->pods[p->unsched.v[i].pod];
    if (!s->moving[pod->spec]) continue;
    const dt_podspec *ps = &s->view.pods.v[pod->spec];
    snprintf(s->fail, sizeof s->fail, "would not fit: pod %s/%s: %s", ps->ns, ps->name, p->unsched.v[i].reason);
  }
  /* A decision must not rest on a node that has not initialized. */
  for (size_t i = 0; i < p->bindings.n && !s->fail[0]; i++) {
    const rt_pod *pod = &p->pods[p->bindings.v[i].pod];
    const rt_node *nd = &p->nodes[p->bindings.v[i].node];
    if (!s->moving[pod->spec] || nd->src->initialized) continue;
    snprintf(s->fail, sizeof s->fail, "would land on %s, which has not initialized", nd->src->name);
  }
  for (size_t i = 0; i < p->claims.n; i++)
    if (p->claims.v[i]->type >= 0) {
      s->nclaims++;
      s->claim = p->claims.v[i];
    }
  return 0;
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
                : free_reserved         ? 0
                : t->src->od_price >= 0 ? t->src->od_price
                                        : of->price;
    if (pr > *worst) *worst = pr;
    if (pr < *best) {
      *best = pr;
      *best_zone = of->zone;
    }
  }
}

typedef struct verdict {
  bool ok;
  bool replace;
  bool free_reserved; /* the candidates are not all reserved: a reserved unit costs nothing more */
  double savings, new_price;
  int ct;
  uint32_t nopt;
  uint32_t opt[600];  /* the options the price rule keeps, price order */
  double best[600];   /* each one's cheapest compatible offering */
  char reason[500];
} verdict;

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
static void price_rule(state *st, const sim *s, const uint32_t *cands, size_t n, bool single, verdict *v) {
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
    snprintf(v->reason, sizeof v->reason, "spot-to-spot consolidation is disabled (Karpenter's default; "
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
  v->ok = true;
  v->replace = true;
  v->savings = price - v->new_price;
}

/* Balanced: a move is approved when (savings / pool cost) / (disruption /
** pool disruption) >= 1/k, k = 2. */
static bool balanced_ok(state *st, const uint32_t *cands, size_t n, double savings, char *out, size_t len) {
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
  return (dt_disrupt_node_info){rstr(st, d->n->name),
                                rstr(st, st->m->pools.v[d->pool].name),
                                rstr(st, d->type),
                                rstr(st, d->zone),
                                d->ct >= 0 ? dt__ct_names[d->ct] : NULL,
                                d->price > 0 ? d->price : 0,
                                np};
}

/* Apply a command to the state: nodes go, their pods move where the
** simulation put them, replacements join in flight. */
static int apply(state *st, const uint32_t *cands, size_t n, const sim *s, const char *reason, const char *detail,
                 const verdict *v) {
  const dt_plan *p = s ? s->plan : NULL;
  dt_arena *ra = &st->r->arena;
  bool replace = s && s->nclaims > 0;
  dt_command_info c = {rstr(st, reason), replace ? "replace" : "delete", rstr(st, detail), 0, n, NULL, 0, NULL};
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
    *o = (dt_claim_info){.name = rstr(st, cname),
                         .nodepool = rstr(st, p->pools[k->pool].src->name),
                         .instance_type = rstr(st, tname),
                         .zone = rstr(st, zone),
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
      moved[o->npods++] = rstr(st, pname);
    }
    bool chosen = v && v->replace && k == s->claim;
    size_t nopt = chosen ? v->nopt : k->nfinal < 600 ? k->nfinal : 600;
    const char **opts = dt__arena_alloc(ra, nopt * sizeof *opts + 1);
    if (!opts) return DT_ENOMEM;
    o->instance_type_options = opts;
    o->noptions = nopt;
    for (size_t q = 0; q < nopt; q++) opts[q] = rstr(st, p->types[chosen ? v->opt[q] : k->final[q]].src->name);
    /* The replacement joins the cluster in flight. It outlives the
    ** simulation's plan, so strings from the plan's symbols are copied. */
    dt_node *nn = dt__arena_alloc(&st->arena, sizeof *nn);
    dt_kv *lab = dt__arena_alloc(&st->arena, 4 * sizeof *lab);
    zone = dt__arena_strdup(&st->arena, zone);
    if (!nn || !lab || !zone) return DT_ENOMEM;
    lab[0] = (dt_kv){DT_L_INSTANCE_TYPE, (char *)tname};
    lab[1] = (dt_kv){DT_L_ZONE, (char *)zone};
    lab[2] = (dt_kv){DT_L_CAPACITY_TYPE, (char *)dt__ct_names[ct]};
    lab[3] = (dt_kv){DT_L_NODEPOOL, (char *)p->pools[k->pool].src->name};
    nn->name = nn->claim_name = dt__arena_strdup(&st->arena, cname);
    nn->kind = "NodeClaim";
    nn->file = "(replacement)";
    nn->labels = (dt_kvs){4, lab};
    nn->ready = true;
    nn->created = st->o.now;
    dnode d = {0};
    d.n = nn;
    d.extra = true;
    d.pool = (int)(p->pools[k->pool].src - st->m->pools.v);
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
    node_cost(st, &st->nodes.v[target]);
  }
  c.savings = price - newp;
  if (dt__vec_push(&st->r->commands, c)) return DT_ENOMEM;
  for (size_t k = 0; k < n; k++) {
    dnode *d = &st->nodes.v[cands[k]];
    d->removed = true;
    st->pb[d->pool].disrupting++;
    for (size_t q = 0; q < d->pods.n; q++) {
      int32_t b = st->pod_pdb[d->pods.v[q]];
      if (b >= 0 && st->pdb_allowed[b] > 0 && !st->pods[d->pods.v[q]].daemon) st->pdb_allowed[b]--;
    }
    step(st, cands[k], "%s: %s", reason, replace ? "replaced" : "deleted");
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
  r->f[7] = (dt_hook_field){"age", DT_HF_NUMBER, NULL, (double)age(st, d->n)};
  *out = (dt_hook_rec){r->f, 8};
}

/* consolidation_order: the policy may reorder the candidates. */
static int order_hook(state *st, cand *c, size_t n) {
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
static bool approve_hook(state *st, const uint32_t *cands, size_t n, const char *action, double savings,
                         double price, char *out, size_t len) {
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

/* ------------------------------------------------------------ methods */

static bool is_static(const state *st, int pool) { return pool >= 0 && st->m->pools.v[pool].replicas >= 0; }

static bool disrupted_taint(const dt_node *n) {
  for (size_t t = 0; t < n->ntaints; t++)
    if (!strcmp(n->taints[t].key, "karpenter.sh/disrupted")) return true;
  return false;
}

/* A static pool's claims as Karpenter's NodePoolState counts them: running
** (not being deleted and not disrupting), pending disruption (tainted, or
** removed by a command that replaces them), and all of them (those being
** deleted count against limits.nodes until they are gone). except is a node
** left out of running and pending (a command's candidate), or SIZE_MAX. */
static void static_counts(const state *st, int pool, size_t except, int64_t *running, int64_t *pending,
                          int64_t *all) {
  *running = *pending = *all = 0;
  for (size_t i = 0; i < st->nodes.n; i++) {
    const dnode *d = &st->nodes.v[i];
    if (d->pool != pool) continue;
    ++*all;
    if (i == except || d->n->deleting || (d->removed && !d->pending)) continue;
    if (d->removed || disrupted_taint(d->n))
      ++*pending;
    else
      ++*running;
  }
}

/* limits.nodes of a pool, -1 when unset. */
static int64_t node_limit(const dt_nodepool *p) {
  for (size_t i = 0; i < p->limits.n; i++)
    if (!strcmp(p->limits.v[i].name, "nodes")) return p->limits.v[i].milli / 1000;
  return -1;
}

#define STATIC_WHY                                                                                              \
  "static NodePool %s (spec.replicas %lld): Karpenter never consolidates a static pool (emptiness or "          \
  "underutilization); drift and expiry still replace its nodes"

typedef struct scaledown {
  uint32_t node;
  int rank;      /* 0 unlaunched claim, 1 empty, 2 pods, 3 pods with do-not-disrupt */
  double cost;   /* rescheduling cost x lifetime remaining */
} scaledown;

static int scaledown_cmp(const void *a, const void *b) {
  const scaledown *x = a, *y = b;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  if (x->rank >= 2 && x->cost != y->cost) return x->cost < y->cost ? -1 : 1;
  return 0;
}

/*
** Karpenter's static deprovisioning controller: a static pool with more
** running claims than replicas deletes the difference, first claims that
** never launched (no provider ID), then empty nodes (DaemonSet pods only and
** none with an active do-not-disrupt), then nodes without do-not-disrupt pods
** before those with, each group by rescheduling cost (the sum of its pods'
** eviction costs) times the share of its lifetime left; ties by name. The
** user asked for less capacity, so no disruption budget holds it back; its
** pods go where the simulation puts them, and pods that fit nowhere do not
** stop it.
*/
static int static_scale_down(state *st) {
  int rc = 0;
  for (size_t pi = 0; pi < st->m->pools.n && !rc; pi++) {
    const dt_nodepool *np = &st->m->pools.v[pi];
    if (np->replicas < 0) continue;
    int64_t running, pending, all;
    static_counts(st, (int)pi, SIZE_MAX, &running, &pending, &all);
    if (running <= np->replicas) continue;
    int64_t excess = running - np->replicas;
    scaledown *c = dt__malloc((st->nodes.n ? st->nodes.n : 1) * sizeof *c);
    uint32_t *take = dt__malloc((st->nodes.n ? st->nodes.n : 1) * sizeof *take);
    if (!c || !take) {
      dt__free(c);
      dt__free(take);
      return DT_ENOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < st->nodes.n; i++) {
      const dnode *d = &st->nodes.v[i];
      if (d->pool != (int)pi || d->removed || d->n->deleting || disrupted_taint(d->n)) continue;
      scaledown e = {(uint32_t)i, 2, 0};
      bool dnd = false, only_daemons = true;
      double cost = 0;
      for (size_t k = 0; k < d->pods.n; k++) {
        const dt_podspec *p = &st->pods[d->pods.v[k]];
        dnd |= p->dnd || p->dnd_until > st->o.now;
        only_daemons &= p->daemon;
        cost += eviction_cost(p);
      }
      double life = 1.0;
      if (np->expire_after > 0 && d->n->created) {
        life = (double)(np->expire_after - age(st, d->n)) / (double)np->expire_after;
        life = life < 0 ? 0 : life > 1 ? 1 : life;
      }
      if (d->n->claim_name && !d->n->provider_id && !d->n->node_name)
        e.rank = 0;
      else if (only_daemons && !dnd)
        e.rank = 1;
      else
        e.rank = dnd ? 3 : 2;
      e.cost = cost * life;
      c[n++] = e;
    }
    /* ties by name: the candidates are in node order, which a stable pass keeps */
    for (size_t i = 1; i < n; i++)
      for (size_t j = i; j > 0; j--) {
        int o = scaledown_cmp(&c[j - 1], &c[j]);
        if (o < 0 || (o == 0 && strcmp(st->nodes.v[c[j - 1].node].n->name, st->nodes.v[c[j].node].n->name) <= 0))
          break;
        scaledown t = c[j - 1];
        c[j - 1] = c[j];
        c[j] = t;
      }
    size_t nt = 0;
    static const char *const how[] = {"a NodeClaim that never launched", "empty", "the cheapest to reschedule",
                                      "the cheapest to reschedule (do-not-disrupt pods are evicted last)"};
    for (size_t k = 0; k < n && (int64_t)nt < excess; k++) {
      take[nt++] = c[k].node;
      step(st, c[k].node, "static scale-down: NodePool %s runs %lld NodeClaims for spec.replicas %lld; taken as %s",
           np->name, (long long)running, (long long)np->replicas, how[c[k].rank]);
    }
    sim s;
    rc = simulate(st, take, nt, false, -1, 0, &s);
    if (!rc) {
      char detail[700];
      snprintf(detail, sizeof detail,
               "static NodePool %s runs %lld NodeClaims for spec.replicas %lld: Karpenter's static deprovisioning "
               "deletes %zu (claims that never launched, then empty nodes, then the cheapest to reschedule), "
               "budgets aside%s%s",
               np->name, (long long)running, (long long)np->replicas, nt, s.fail[0] ? "; " : "", s.fail);
      rc = apply(st, take, nt, &s, "Overprovisioned", detail, NULL);
    }
    sim_free(&s);
    dt__free(c);
    dt__free(take);
  }
  return rc;
}

static int emptiness(state *st) {
  candvec cs = {0};
  for (size_t i = 0; i < st->nodes.n; i++) {
    dnode *d = &st->nodes.v[i];
    if (!d->extra && !d->removed && is_static(st, d->pool)) {
      if (!d->why[0]) why(st, i, STATIC_WHY, st->m->pools.v[d->pool].name, (long long)st->m->pools.v[d->pool].replicas);
      continue;
    }
    if (d->extra || !d->empty || !eligible(st, i, true) || !settled(st, i)) continue;
    cand c = {(uint32_t)i, d->price > 0 ? d->price : 0};
    if (dt__vec_push(&cs, c)) return DT_ENOMEM;
  }
  if (cs.n) qsort(cs.v, cs.n, sizeof *cs.v, cand_cmp);
  uint32_t *take = dt__malloc((cs.n ? cs.n : 1) * sizeof *take);
  if (!take) {
    dt__free(cs.v);
    return DT_ENOMEM;
  }
  size_t nt = 0;
  for (size_t k = 0; k < cs.n; k++) {
    int pool = st->nodes.v[cs.v[k].node].pool;
    int64_t a = allowed(st, pool, 0);
    step(st, cs.v[k].node, "emptiness: empty; budget for Empty in NodePool %s: %s", st->m->pools.v[pool].name,
         a == INT64_MAX ? "unlimited" : a > 0 ? "available" : "0");
    if (a <= 0) {
      why(st, cs.v[k].node, "budget: NodePool %s allows no more Empty disruptions now", st->m->pools.v[pool].name);
      continue;
    }
    take[nt++] = cs.v[k].node;
    st->pb[pool].disrupting++; /* reserve while choosing; apply() counts it again */
  }
  for (size_t k = 0; k < nt; k++) st->pb[st->nodes.v[take[k]].pool].disrupting--;
  int rc = nt ? apply(st, take, nt, NULL, "Empty", NULL, NULL) : 0;
  dt__free(take);
  dt__free(cs.v);
  return rc;
}

/* Drift and expiry: each candidate alone, any number of replacements. */
static int replace_each(state *st, bool expiry) {
  candvec cs = {0};
  for (size_t i = 0; i < st->nodes.n; i++) {
    dnode *d = &st->nodes.v[i];
    if (d->extra || d->removed) continue;
    char *reason = d->drift;
    if (expiry) {
      /* forceful (as Karpenter's expiration controller): no budget, no pod blocks */
      if (d->pool < 0 || !d->n->initialized || d->n->deleting) continue;
      const dt_nodepool *p = &st->m->pools.v[d->pool];
      if (p->expire_after < 0 || !d->n->created || age(st, d->n) < p->expire_after) continue;
    } else {
      if (!eligible(st, i, true)) continue;
      const dt_nodepool *p = &st->m->pools.v[d->pool];
      char hex[17];
      snprintf(hex, sizeof hex, "%016llx", (unsigned long long)p->hash);
      if (d->n->pool_hash && strcmp(d->n->pool_hash, hex))
        snprintf(reason, sizeof d->drift, "NodePool template changed (hash %s, now %s)", d->n->pool_hash, hex);
      else if (!node_matches_pool(d->n, p, reason, sizeof d->drift)) {
      } else
        continue;
      step(st, i, "drift: %s", reason);
    }
    /* empty first, then oldest */
    cand c = {(uint32_t)i, (d->empty ? 1e18 : 0) + (double)age(st, d->n)};
    if (dt__vec_push(&cs, c)) return DT_ENOMEM;
  }
  if (cs.n) qsort(cs.v, cs.n, sizeof *cs.v, cand_cmp);
  /* Karpenter's static drift waits while a static pool is above its
  ** replicas (running and pending disruption): judged once, before this
  ** method's own commands, as one pass of its loop does. */
  bool *over = dt__calloc(st->m->pools.n + 1, sizeof *over);
  if (!over) {
    dt__free(cs.v);
    return DT_ENOMEM;
  }
  for (size_t pi = 0; pi < st->m->pools.n; pi++) {
    int64_t r, q, a;
    if (st->m->pools.v[pi].replicas < 0) continue;
    static_counts(st, (int)pi, SIZE_MAX, &r, &q, &a);
    over[pi] = r + q > st->m->pools.v[pi].replicas;
  }
  int rc = 0;
  for (size_t k = 0; k < cs.n && !rc; k++) {
    uint32_t i = cs.v[k].node;
    int pool = st->nodes.v[i].pool;
    const dt_nodepool *np = &st->m->pools.v[pool];
    bool stat = is_static(st, pool);
    if (!expiry && allowed(st, pool, 1) <= 0) {
      why(st, i, "drifted, but budget: NodePool %s allows no more Drifted disruptions now", st->m->pools.v[pool].name);
      continue;
    }
    /* A static node is replaced from its pool's template (one for one):
    ** drift within limits.nodes, counting every claim of the pool; expiry
    ** as the static provisioner refills a pool below its replicas. */
    int spool = -1;
    int64_t swant = 0;
    if (stat) {
      int64_t r, q, a, limit = node_limit(np);
      if (!expiry && over[pool]) {
        why(st, i, "drifted, but static NodePool %s is above spec.replicas %lld: it is scaled down first", np->name,
            (long long)np->replicas);
        continue;
      }
      static_counts(st, pool, expiry ? i : SIZE_MAX, &r, &q, &a);
      int64_t room = limit < 0 ? 1 : limit - a;
      if (!expiry && room <= 0) {
        why(st, i, "drifted, but static NodePool %s is at limits.nodes %lld: its replacement would pass it", np->name,
            (long long)limit);
        continue;
      }
      spool = pool;
      swant = !expiry ? 1 : (r + q < np->replicas && room > 0 && np->replicas - r > 0);
    }
    sim s;
    if ((rc = simulate(st, &i, 1, false, spool, swant, &s))) {
      sim_free(&s);
      break;
    }
    if (stat && !expiry) {
      /* Karpenter's static drift does not simulate the node's pods: they
      ** are evicted and provisioned for like any pending pod. */
      char detail[700];
      snprintf(detail, sizeof detail, "%s; static NodePool %s: replaced from its template%s%s", st->nodes.v[i].drift,
               np->name, s.fail[0] ? "; " : "", s.fail);
      rc = apply(st, &i, 1, &s, "Drifted", detail, NULL);
      st->nodes.v[i].pending = true;
    } else if (s.fail[0] && !expiry) {
      why(st, i, "drifted, but %s", s.fail);
    } else {
      char detail[500];
      if (expiry)
        snprintf(detail, sizeof detail, "expireAfter %llds reached (age %llds)%s%s",
                 (long long)st->m->pools.v[pool].expire_after, (long long)age(st, st->nodes.v[i].n),
                 s.fail[0] ? "; " : "", s.fail);
      else
        snprintf(detail, sizeof detail, "%s", st->nodes.v[i].drift);
      rc = apply(st, &i, 1, &s, expiry ? "Expired" : "Drifted", detail, NULL);
      st->nodes.v[i].pending = !expiry;
    }
    sim_free(&s);
  }
  dt__free(over);
  dt__free(cs.v);
  return rc;
}

/* Consolidation candidates in Karpenter's order: price / disruption cost. */
static int consolidation_candidates(state *st, candvec *cs) {
  for (size_t i = 0; i < st->nodes.n; i++) {
    dnode *d = &st->nodes.v[i];
    if (d->extra || d->removed) continue;
    if (is_static(st, d->pool)) { /* a reason drift or expiry gave stays: it says more */
      if (!d->why[0]) why(st, i, STATIC_WHY, st->m->pools.v[d->pool].name, (long long)st->m->pools.v[d->pool].replicas);
      continue;
    }
    if (!eligible(st, i, true)) continue;
    const dt_nodepool *p = &st->m->pools.v[d->pool];
    if (d->empty) continue; /* emptiness's, under the Empty budget */
    if (p->consolidation == DT_CONSOL_WHEN_EMPTY) {
      why(st, i, "consolidationPolicy WhenEmpty: the node has pods");
      continue;
    }
    if (!settled(st, i)) continue;
    if (d->price <= 0) {
      why(st, i, "price unknown: instance type %s in zone %s (%s) is not in the catalog", d->type ? d->type : "?",
          d->zone ? d->zone : "?", d->ct >= 0 ? dt__ct_names[d->ct] : "?");
      continue;
    }
    cand c = {(uint32_t)i, d->price / d->cost};
    if (dt__vec_push(cs, c)) return DT_ENOMEM;
  }
  if (cs->n) qsort(cs->v, cs->n, sizeof *cs->v, cand_cmp);
  return order_hook(st, cs->v, cs->n);
}

static bool approve(state *st, const uint32_t *c, size_t n, const verdict *v, double savings, char *out, size_t len) {
  double price = 0;
  for (size_t i = 0; i < n; i++) price += st->nodes.v[c[i]].price;
  return balanced_ok(st, c, n, savings, out, len) &&
         approve_hook(st, c, n, v->replace ? "replace" : "delete", savings, price, out, len);
}

/* Whether removing cands[0..n) is a valid consolidation; fills v and s. */
static int try_consolidate(state *st, const uint32_t *cands, size_t n, bool single, sim *s, verdict *v) {
  memset(v, 0, offsetof(verdict, opt));
  int rc = simulate(st, cands, n, true, -1, 0, s);
  if (rc) return rc;
  if (s->fail[0]) {
    snprintf(v->reason, sizeof v->reason, "%s", s->fail);
    return 0;
  }
  if (s->nclaims > 1) {
    snprintf(v->reason, sizeof v->reason, "would need %zu new nodes; consolidation replaces with at most one",
             s->nclaims);
    return 0;
  }
  double price = 0;
  for (size_t i = 0; i < n; i++) price += st->nodes.v[cands[i]].price;
  if (s->nclaims == 0) {
    v->ok = true;
    v->savings = price;
  } else {
    price_rule(st, s, cands, n, single, v);
  }
  if (v->ok && !approve(st, cands, n, v, v->savings, v->reason, sizeof v->reason)) v->ok = false;
  return 0;
}

/* One multi-node command, if any; *made tells. */
static int multi_node_once(state *st, bool *made) {
  candvec cs = {0};
  int rc = consolidation_candidates(st, &cs);
  uint32_t *pre = dt__malloc((cs.n ? cs.n : 1) * sizeof *pre);
  if (rc || !pre) {
    dt__free(cs.v);
    dt__free(pre);
    return rc ? rc : DT_ENOMEM;
  }
  /* filtered in order by budget, each taking one */
  size_t n = 0;
  int64_t *used = dt__calloc(st->m->pools.n ? st->m->pools.n : 1, sizeof *used);
  for (size_t k = 0; used && k < cs.n && n < MULTI_MAX; k++) {
    int pool = st->nodes.v[cs.v[k].node].pool;
    if (allowed(st, pool, 2) - used[pool] <= 0) continue;
    used[pool]++;
    pre[n++] = cs.v[k].node;
  }
  dt__free(used);
  size_t lo = 2, hi = n, best = 0;
  sim bs = {0};
  verdict *bv = dt__calloc(1, sizeof *bv), *v = dt__calloc(1, sizeof *v);
  if (!bv || !v) rc = DT_ENOMEM;
  while (!rc && lo <= hi) {
    size_t mid = (lo + hi) / 2;
    sim s;
    rc = try_consolidate(st, pre, mid, false, &s, v);
    if (!rc && v->ok) {
      sim_free(&bs);
      bs = s;
      if (bs.plan && bs.plan->manifests == &s.view) bs.plan->manifests = &bs.view; /* the view moved with it */
      *bv = *v;
      best = mid;
      lo = mid + 1;
    } else {
      sim_free(&s);
      hi = mid - 1;
    }
  }
  for (size_t k = 0; k < best; k++) step(st, pre[k], "multi-node consolidation: removed with %zu others", best - 1);
  if (!rc && best) rc = apply(st, pre, best, &bs, "Underutilized", "multi-node consolidation", bv);
  *made = best > 0;
  sim_free(&bs);
  dt__free(bv);
  dt__free(v);
  dt__free(pre);
  dt__free(cs.v);
  return rc;
}

/* Karpenter starts a new loop after each command, and multi-node runs again
** before single-node gets a turn: repeat it while it finds commands. */
static int multi_node(state *st) {
  bool made = true;
  int rc = 0;
  while (!rc && made) rc = multi_node_once(st, &made);
  return rc;
}

static int single_node(state *st) {
  candvec cs = {0};
  int rc = consolidation_candidates(st, &cs);
  if (rc) {
    dt__free(cs.v);
    return rc;
  }
  /* round-robin across NodePools, each in its own order */
  cand *rr = dt__malloc((cs.n ? cs.n : 1) * sizeof *rr);
  size_t *at = dt__calloc(st->m->pools.n + 1, sizeof *at);
  verdict *v = dt__calloc(1, sizeof *v);
  if (!rr || !at || !v) rc = DT_ENOMEM;
  for (size_t placed = 0, round = 0; !rc && placed < cs.n; round++)
    for (size_t pi = 0; pi < st->m->pools.n; pi++) {
      size_t seen = 0;
      for (size_t k = 0; k < cs.n; k++)
        if (st->nodes.v[cs.v[k].node].pool == (int)pi && seen++ == round) rr[placed++] = cs.v[k];
    }
  for (size_t k = 0; !rc && k < cs.n; k++) {
    uint32_t i = rr[k].node;
    int pool = st->nodes.v[i].pool;
    if (st->nodes.v[i].removed) continue;
    if (allowed(st, pool, 2) <= 0) {
      why(st, i, "budget: NodePool %s allows no more Underutilized disruptions now", st->m->pools.v[pool].name);
      continue;
    }
    sim s;
    rc = try_consolidate(st, &i, 1, true, &s, v);
    if (!rc && v->ok) {
      step(st, i, "single-node consolidation: %s, saves $%.4f/h", s.nclaims ? "replace" : "delete", v->savings);
      rc = apply(st, &i, 1, &s, "Underutilized", "single-node consolidation", v);
    } else if (!rc) {
      why(st, i, "consolidation: %s", v->reason);
    }
    sim_free(&s);
  }
  dt__free(rr);
  dt__free(at);
  dt__free(v);
  dt__free(cs.v);
  return rc;
}

/* ------------------------------------------------------------ run */

/*
** The cluster every simulation of the pass overlays: the nodes of the state
** in order (a node's id is its index), then the pods. A cluster that does
** not compile (more resource names than a plan holds) leaves the pass to
** compile each simulation, which then reports the error as before.
*/
static int cluster(state *st) {
  if (st->rebuild) return 0;
  dt_error e = {0};
  int rc = dt__cluster_new(st->cat, st->m, &st->cl, &e);
  for (size_t i = 0; !rc && i < st->nodes.n; i++) rc = dt__cluster_add_node(st->cl, st->nodes.v[i].n, &e);
  if (!rc) rc = dt__cluster_set_pods(st->cl, st->pods, st->npods, &e);
  if (rc) {
    dt__cluster_free(st->cl);
    st->cl = NULL;
  }
  return rc == DT_ENOMEM ? rc : 0;
}

static int disrupt_run(const dt_catalog *catalog, const dt_manifests *m, const dt_disrupt_opts *opts, bool rebuild,
                       dt_disruption **out, dt_error *err) {
  dt__init();
  double t0 = dt__now_ms();
  *out = NULL;
  state st = {0};
  st.cat = catalog;
  st.m = m;
  st.rebuild = rebuild;
  if (opts) st.o = *opts;
  if (!st.o.now) st.o.now = 946684800;
  dt_disruption *r = st.r = dt__calloc(1, sizeof *r);
  if (!r) return dt__err(err, DT_ENOMEM, "out of memory");
  dt__alloc_failed(1);
  if (st.o.explain) r->explain_node = dt__arena_strdup(&r->arena, st.o.explain);
  int rc = st.o.explain && !r->explain_node ? DT_ENOMEM : 0;
  if (!rc) rc = build(&st);
  if (!rc) rc = cluster(&st);
  if (!rc) rc = budgets(&st);
  if (!rc) rc = static_scale_down(&st);
  if (!rc) rc = emptiness(&st);
  if (!rc) rc = replace_each(&st, false);
  if (!rc) rc = replace_each(&st, true);
  if (!rc) rc = multi_node(&st);
  if (!rc) rc = single_node(&st);
  for (size_t i = 0; !rc && i < st.nodes.n; i++) {
    const dnode *d = &st.nodes.v[i];
    if (d->extra || d->removed) continue;
    dt_blocked_info b = {rstr(&st, d->n->name),
                         rstr(&st, d->why[0] ? d->why
                                             : "nothing to do: not empty, drifted or expired, and no cheaper "
                                               "arrangement was found")};
    if (dt__vec_push(&r->blocked, b)) rc = DT_ENOMEM;
    r->stats.blocked++;
  }
  for (size_t i = 0; i < st.nodes.n; i++) r->stats.nodes += !st.nodes.v[i].extra; /* a paired claim is its Node */
  if (!rc && r->explain_node) {
    bool found = false;
    for (size_t i = 0; i < m->nodes.n && !found; i++) found = !strcmp(m->nodes.v[i].name, st.o.explain);
    if (!found) explain_step(&st, "no such node in the input");
  }
  if (!rc && st.o.policy) {
    const dt_policy_err *pe;
    size_t ne = dt__policy_errors(st.o.policy, &pe);
    r->has_policy_errors = true;
    for (size_t i = 0; i < ne && !rc; i++) {
      dt_hook_error_rec e = {rstr(&st, pe[i].hook), rstr(&st, pe[i].message)};
      if (dt__vec_push(&r->policy_errors, e)) rc = DT_ENOMEM;
    }
  }
  r->stats.simulations = st.sims;
  if (!rc && (dt__alloc_failed(1) || r->arena.oom || st.arena.oom || st.types.oom)) rc = DT_ENOMEM;
  if (!rc) rc = dt__disrupt_doc_build(r, st.o.now);
  for (size_t i = 0; i < st.nodes.n; i++) dt__free(st.nodes.v[i].pods.v);
  dt__free(st.nodes.v);
  dt__symtab_free(&st.types);
  dt__arena_free(&st.arena);
  dt__catalog_compiled_free(st.cc);
  dt__cluster_free(st.cl);
  if (rc) {
    dt_disrupt_free(r);
    return dt__err(err, rc, "%s", rc == DT_ECANCELED ? "cancelled" : "out of memory");
  }
  r->stats.run_ms = dt__now_ms() - t0;
  *out = r;
  return 0;
}

int dt_disrupt_run(const dt_catalog *catalog, const dt_manifests *m, const dt_disrupt_opts *opts, dt_disruption **out,
                   dt_error *err) {
  if (opts && opts->explain && m) { /* as plan --explain: a node not in the input is an error */
    bool found = false;
    for (size_t i = 0; i < m->nodes.n && !found; i++) found = !strcmp(m->nodes.v[i].name, opts->explain);
    if (!found) {
      *out = NULL;
      return dt__err(err, DT_EINVAL, "explain: no node %s in the input (it takes a Node or a NodeClaim by name)",
                     opts->explain);
    }
  }
  return disrupt_run(catalog, m, opts, false, out, err);
}

int dt__disrupt_run_rebuild(const dt_catalog *catalog, const dt_manifests *m, const dt_disrupt_opts *opts,
                            dt_disruption **out, dt_error *err) {
  return disrupt_run(catalog, m, opts, true, out, err);
}

