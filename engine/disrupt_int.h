/*
** disrupt_int.h: what the disruption pass's files share. disrupt.c builds
** the model of the cluster (nodes, their prices and pods, budgets,
** candidates) and runs the methods in order; disrupt_sim.c simulates
** removing candidates (an overlay plan of the cluster compiled once),
** applies Karpenter's price rule and turns a decision into a command, and
** calls the policy's hooks; disrupt_methods.c holds the methods themselves
** (static NodePools' scale-down, emptiness, drift and expiry, multi- and
** single-node consolidation).
*/
#ifndef DT_DISRUPT_INT_H
#define DT_DISRUPT_INT_H

#include "cluster.h"

#include "hooks.h"
#include "result.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define MULTI_MAX        100 /* candidates a multi-node command may take */
#define SPOT_TO_SPOT_MIN 15  /* cheaper spot options single-node spot-to-spot needs */
#define BALANCED_K       2.0 /* Balanced approves a move scoring >= 1/k */

typedef struct dnode {
  dt_node *n;           /* the manifest node, or a replacement made by this pass */
  const dt_node *claim; /* the NodeClaim in the input this Node registered (paired), or NULL */
  int pool;             /* NodePool index, -1 when none in the input manages it */
  int ct;               /* capacity type, -1 unknown */
  const char *type, *zone;
  double price; /* $/h of its offering; reserved at the on-demand price; < 0 unknown */
  bool removed, extra;
  bool tainted; /* a command took it already: karpenter.sh/disrupted on its Node, or on the claim the
                ** Node registered (the daemon taints its own claims; the Node is the cluster's) */
  bool pending; /* removed by a command that replaces it (still counted by a static pool) */
  bool held;    /* runs pods the caller could not read (dt_disrupt_opts.held_nodes) */
  bool empty;
  double cost;           /* RescheduleDisruptionCost: 1 + sum of positive pod eviction costs */
  DT_VEC(uint32_t) pods; /* bound pods (indices into st.pods) */
  char why[400];         /* why it stays, the last reason recorded */
  char drift[300];       /* why it drifted, "" when it has not */
} dnode;

/* Initialized, as Karpenter's StateNode: an in-flight claim is not; a Node
** its NodeClaim registered is once the claim says Initialized or the Node
** carries karpenter.sh/initialized (a Node alone, with no claim, is). */
static inline bool dt__dr_initialized(const dnode *d) {
  if (!d->n->initialized) return false;
  return !d->claim || d->claim->initialized || d->n->init_label;
}

/* The machine's NodeClaim in the input: the one its Node registered, or the
** node itself when it is an in-flight claim; NULL for a Node alone. */
static inline const dt_node *dt__dr_claim_of(const dnode *d) {
  return d->claim ? d->claim : d->n->claim_name ? d->n : NULL;
}

/* The machine's expireAfter and the clock it runs from: its NodeClaim's own
** (spec.expireAfter, creationTimestamp), as Karpenter's expiration
** controller, else the NodePool's from the node's creation. */
static inline int64_t dt__dr_expire_after(const dnode *d, const dt_nodepool *p) {
  const dt_node *c = dt__dr_claim_of(d);
  return c && c->has_expire ? c->expire_after : p->expire_after;
}
/* A terminationGracePeriod bounds the machine's draining (its NodeClaim's,
** else its NodePool's template's): drift then goes ahead past do-not-disrupt
** pods and PodDisruptionBudgets, as Karpenter's eventual disruption. */
static inline bool dt__dr_tgp(const dnode *d, const dt_nodepool *p) {
  const dt_node *c = dt__dr_claim_of(d);
  return c ? c->has_tgp : p->termination_grace != NULL;
}
static inline int64_t dt__dr_born(const dnode *d) {
  return d->claim && d->claim->created ? d->claim->created : d->n->created;
}

/* Whether draining the node evicts pod p (so its PodDisruptionBudget has a
** say), as Karpenter's terminator: not a pod that tolerates the
** karpenter.sh/disrupted:NoSchedule taint (it stays to the end), nor, under a
** PDB whose unhealthyPodEvictionPolicy is AlwaysAllow, one not Ready (the
** PDB lets it go), nor a static pod's mirror. DaemonSet pods are evicted too
** (Karpenter's IsEvictable). */
static inline bool dt__dr_pdb_applies(const dt_podspec *p, const dt_pdb *b) {
  if (p->mirror) return false;
  for (size_t i = 0; i < p->ntol; i++) {
    const dt_toleration *t = &p->tol[i];
    bool exists = t->op && !strcmp(t->op, "Exists");
    bool key = !t->key ? exists : !strcmp(t->key, "karpenter.sh/disrupted") && (exists || !t->value || !*t->value);
    bool eff = !t->effect || !*t->effect || !strcmp(t->effect, "NoSchedule");
    if (key && eff) return false;
  }
  return !(b && b->always_allow && p->unready);
}

/* The node's last pod event, its creation or its claim's initialization
** (Karpenter counts consolidateAfter from the Initialized condition when no
** pod event came), the latest of them. Karpenter keeps lastPodEventTime on
** the NodeClaim: when the Node is in the input too, the claim it registered
** is read as well. */
static inline int64_t dt__dr_since(const dnode *d) {
  int64_t t = d->n->last_pod_event > d->n->created ? d->n->last_pod_event : d->n->created;
  if (d->n->initialized_at > t) t = d->n->initialized_at;
  if (d->claim && d->claim->initialized_at > t) t = d->claim->initialized_at;
  return d->claim && d->claim->last_pod_event > t ? d->claim->last_pod_event : t;
}

typedef struct poolbudget {
  int64_t nodes, disrupting;
  int64_t value[3];        /* per reason bit index: Empty, Drifted, Underutilized; INT64_MAX unlimited */
  double cost, disruption; /* pool totals for Balanced */
} poolbudget;

typedef struct state {
  const dt_catalog *cat;
  const struct dt_compiled_catalog *cc_shared; /* the caller's, the cluster starts from; NULL: compiles it */
  dt_compiled_catalog *cc; /* the catalog compiled once for every simulation of the pass (rebuild mode) */
  dt_cluster *cl;          /* the cluster compiled once: each simulation is an overlay on it */
  bool rebuild;            /* compile every simulation's view from scratch (the reference the overlay matches) */
  bool no_screen;          /* simulate every single-node candidate (the reference the screen matches) */
  const dt_manifests *m;
  dt_disrupt_opts o;
  dt_arena arena;
  dt_podspec *pods; /* bound pods, shallow copies (node_name re-pointed as pods move) */
  size_t npods;
  uint32_t *pod_ident; /* 0, 1, ... npods - 1: an overlay's view pods are st's pods (arena; made on first use) */
  DT_VEC(dnode) nodes;
  poolbudget *pb;
  int64_t *pdb_allowed;
  int32_t *pod_pdb; /* per pod: the PDB covering it, -1 none, -2 several */
  dt_symtab types;  /* catalog type name -> index + 1 */
  dt_disruption *r; /* the result: commands, blocked nodes, budgets, explain steps */
  uint64_t sims;    /* simulations, screened ones too: the next one's seed */
  uint64_t plans;   /* plans run: simulations and the screen's */
  uint64_t screened;
  struct screen *scr;   /* single-node consolidation's screen (disrupt_sim.c), NULL until used */
  unsigned budget_held; /* consolidation candidates a budget held back */
  /* The pods bound to a machine being deleted that Karpenter reschedules
  ** (per m->pods, NULL when none): taken as pending pods where the last round
  ** nominated them (gone: per m->nodes, that machine), else left there. */
  uint8_t *mov, *gone, *got;
  int rc;
} state;

/* Inside its NodePool's consolidateAfter window: its last pod event is less
** than consolidateAfter ago (with 0, only a clock behind the event; never
** for Never). */
bool dt__dr_settling(const state *st, const dnode *d);

static const char *const k_reason[3] = {"Empty", "Drifted", "Underutilized"};

typedef struct cand {
  uint32_t node;
  double ratio; /* price / disruption cost: cheapest to disrupt per dollar first */
} cand;

typedef DT_VEC(cand) candvec;

typedef struct sim {
  dt_plan *plan;
  dt_manifests view;
  uint32_t *view_node; /* view node -> dnode */
  size_t nview;
  uint32_t *view_pod; /* view pod -> st pod (an overlay's: st->pod_ident, not its own) */
  bool *moving;       /* per view pod */
  size_t nclaims;
  const struct rt_claim *claim; /* the single new claim, when nclaims == 1 */
  dt_nodepool *pools;           /* the view's NodePools: static ones hold what they have, or one more */
  uint8_t *ovpod;               /* an overlay's pods (st->pods itself is the view's): bound, pending or absent */
  uint32_t *ovmoved;            /* its pods not bound, increasing */
  uint32_t novmoved;
  bool overlay; /* the view overlays st's compiled cluster: view_pod is st's */
  char fail[500];
} sim;

typedef struct verdict {
  bool ok;
  bool replace;
  bool free_reserved; /* the candidates are not all reserved: a reserved unit costs nothing more */
  double savings, new_price;
  int ct;
  uint32_t nopt;
  uint32_t opt[600]; /* the options the price rule keeps, price order */
  double best[600];  /* each one's cheapest compatible offering */
  char reason[500];
} verdict;

int64_t dt__dr_age(const state *st, const dt_node *n);
void dt__dr_node_cost(state *st, dnode *d);
const char *dt__dr_rstr(state *st, const char *s);
int dt__dr_take_notes(state *st, const struct dt_plan *p);
void dt__dr_step(state *st, size_t i, const char *fmt, ...);
int64_t dt__dr_allowed(state *st, int pool, int reason_bit);
bool dt__dr_eligible(state *st, size_t i, bool check_pods);
bool dt__dr_managed(const state *st, size_t i);
double dt__dr_eviction_cost(const dt_podspec *p);
bool dt__dr_node_matches_pool(const dt_node *n, const dt_nodepool *p, char *out, size_t len);
bool dt__dr_settled(state *st, size_t i);
void dt__dr_why(state *st, size_t i, const char *fmt, ...);
int dt__dr_budgets(state *st);
int dt__dr_build(state *st);
void dt__dr_explain_step(state *st, const char *msg);
int dt__dr_apply(state *st, const uint32_t *cands, size_t n, const sim *s, const char *reason, const char *detail,
                 const verdict *v);
bool dt__dr_approve_hook(state *st, const uint32_t *cands, size_t n, const char *action, double savings, double price,
                         char *out, size_t len);
bool dt__dr_balanced_ok(state *st, const uint32_t *cands, size_t n, double savings, char *out, size_t len);
int dt__dr_order_hook(state *st, cand *c, size_t n);
void dt__dr_price_rule(state *st, const sim *s, const uint32_t *cands, size_t n, bool single, verdict *v);
void dt__dr_sim_free(sim *s);
/* *src into *dst (its plan reads the view where it now is); src left empty. */
void dt__dr_sim_move(sim *dst, sim *src);
int dt__dr_simulate(state *st, const uint32_t *cands, size_t n, bool consolidation, int spool, int64_t swant, sim *s);
int dt__dr_emptiness(state *st);
int dt__dr_multi_node(state *st);
int dt__dr_replace_each(state *st, bool expiry);
int dt__dr_single_node(state *st);
/* Whether single-node consolidation's simulation of candidate i could only
** refuse it (1, the reason in out), or must run (0); < 0 an error. */
int dt__dr_screen(state *st, uint32_t i, char *out, size_t len);
void dt__dr_screen_free(state *st);
int dt__dr_static_scale_down(state *st);

#endif
