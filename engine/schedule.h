/*
** schedule.h: the solver's state, the compiled run model (types and their
** offerings, NodePools, pod specs and classes, nodes) and what a run decided
** (claims, bindings), for the code that runs the solver: the scheduler
** (sched*.c, with its private sched_int.h), cost packing, topology, --explain,
** the disruption pass's simulations (which plan overlays of a cluster
** compiled once and read the claims they decide), and plan_result.c, which
** copies a run's decisions into its results. Nothing else reads it: the
** renderer (plan.c), the daemon and the Lua module read the results
** (result.h, dovetail.h). Everything here lives in the plan's arena and
** symbol table and is freed with the run's state (dt__plan_state_free).
*/
#ifndef DT_SCHED_H
#define DT_SCHED_H

#include "cluster.h"
#include "model.h"
#include "result.h"

#include <math.h>
#include <string.h>

#define DT_RES_MAX 16
enum { DT_R_CPU = 0, DT_R_MEM = 1, DT_R_PODS = 2, DT_R_EPH = 3 };

typedef struct rt_off {
  uint8_t zone, ct;
  double price;
  double cap;    /* spot: the most it may cost unless the NodePool sets a maximum: the type's
                 ** on-demand price (Cluster API's default maxPrice); INFINITY otherwise */
  int64_t avail; /* remaining launches, -1 unbounded */
  int64_t held;  /* reserved offerings: units held by claims during the solve */
  dt_sym resv;
  uint8_t gone; /* why avail is 0 before any launch: OFF_* (for --explain) */
} rt_off;

enum { OFF_OK = 0, OFF_CATALOG = 1, OFF_MARK = 2, OFF_PRICE_HOOK = 3 };

/* Whether a spot offering is within the price a pool may pay: the pool's
** dovetail.dev/spot-max-price when set (spot_max finite), else the
** offering's default cap. Other capacity types always are. */
static inline bool dt__spot_ok(const rt_off *o, double spot_max) {
  return o->ct != DT_CT_SPOT || o->price <= (spot_max < INFINITY ? spot_max : o->cap);
}

typedef struct rt_type {
  const dt_ctype *src;
  dt_sym name;
  int64_t alloc[DT_RES_MAX];
  int64_t cap[DT_RES_MAX];
  dt_sym *lv; /* label value per type-key slot, 0 = absent */
  uint32_t noff;
  rt_off *off;
  double min_price;   /* cheapest offering, for option order */
  const char *family; /* its .../instance-family label, NULL none (catalog-owned) */
  int64_t gpus;       /* its GPUs (dt__ctype_gpus), counted once when compiled */
  uint32_t rank;      /* position among the types by name: ties compare integers */
  /* launch's memo of the best offering within a claim's masks (claims
  ** holding no reservation), a few masks at once since claims of zonal
  ** spreads alternate between zones; dropped when an availability count
  ** changes, and worth nothing unless memo_gen is the plan's launch's */
  uint64_t memo_gen;
  struct rt_memo {
    uint64_t zmask;
    double price, spot_max;
    int32_t off;
    uint8_t ctmask;
    bool ok;
  } memo[4];
  uint8_t memo_next; /* the entry the next miss replaces */
} rt_type;

/* A taint's effect, in the order of the names the engine prints. */
typedef enum dt_taint_effect {
  DT_TAINT_NO_SCHEDULE = 0,
  DT_TAINT_PREFER_NO_SCHEDULE = 1,
  DT_TAINT_NO_EXECUTE = 2
} dt_taint_effect;

typedef struct rt_taint {
  dt_sym key, value;
  uint8_t effect; /* a dt_taint_effect */
} rt_taint;

/* Topology groups: pods counted per domain for spread, affinity and
** anti-affinity (Karpenter's topology.go / topologygroup.go). */
enum { TG_SPREAD = 0, TG_AFF = 1, TG_ANTI = 2 };
enum { DOM_ZONE = 0, DOM_HOST = 1, DOM_CT = 2, DOM_LABEL = 3 };

/* A topology key other than zone, hostname and capacity type (DOM_LABEL):
** its domains are the values the NodePools' requirements and labels, their
** types' labels and the existing nodes' labels give it (Karpenter's
** buildDomainGroups and countDomains), at most TOPO_LVALS of them. A claim
** takes one by a requirement on the key; pods count per value (rt_group's
** zone and ozone arrays, indexed as v). */
#define TOPO_LVALS 64
typedef struct rt_lkey {
  dt_sym key;
  uint32_t n;
  dt_sym v[TOPO_LVALS];
  uint64_t universe; /* the values the pools and their types give */
  bool full;         /* more than TOPO_LVALS values: not modelled (n 0) */
} rt_lkey;

/* A topology check's narrowing of a claim on such keys: the values left of
** key lkeys[lk], to become a requirement on it. */
#define TOPO_PINS 8
typedef struct topo_pins {
  uint32_t n;
  struct {
    uint32_t lk;
    uint64_t mask;
  } v[TOPO_PINS];
} topo_pins;

typedef DT_VEC(int32_t) dt_i32vec;

typedef struct rt_group {
  uint8_t kind, dom;
  dt_sym key;
  bool sel_null; /* an absent selector matches no pod */
  bool ns_all;   /* every namespace (namespaceSelector: {}); ns unused */
  dt_reqs sel;   /* over pod labels */
  uint32_t nns;
  dt_sym *ns;                      /* namespaces the group counts */
  uint32_t lk;                     /* DOM_LABEL: its key, p->lkeys.v[lk] */
  int32_t zone[64], ct[DT_CT_N];   /* matching pods per domain (DOM_LABEL: per value of its key) */
  uint64_t zdom;                   /* a zone (or label) spread's domains from existing nodes its filter passes */
  uint64_t pdom;                   /* a spread honouring taints: the domains of the NodePools its pod tolerates */
  int32_t ozone[64], oct[DT_CT_N]; /* pods declaring this anti-affinity (inverse) */
  dt_i32vec host, ohost;           /* per host id: nodes, then claims */
  int64_t total;
  int64_t example_spec, example_ordinal; /* a matching pod, for messages; -1 none */
  int64_t owner_spec, owner_ordinal;     /* a pod declaring it (anti-affinity), for messages; -1 none */
  /* A spread's node filter (Karpenter's TopologyNodeFilter): only pods on
  ** existing nodes it passes count. fmode bit 0: the nodes must match one of
  ** fterms (the pod's nodeSelector with each required node affinity term);
  ** bit 1: the pod (spec fspec) must tolerate their taints. */
  uint8_t fmode;
  uint32_t fspec, nfterms;
  dt_reqs *fterms;
  const char *desc; /* "app=web", for messages */
} rt_group;

/* One topology constraint of a class. */
typedef struct rt_tc {
  uint32_t group;
  uint8_t kind;
  bool self;  /* the pod matches the group's selector */
  bool owner; /* a required anti-affinity the pod declares (recorded as owner) */
  int32_t max_skew, min_domains;
  bool dflt; /* a spread the pod has from the cluster's defaults (dt_spread.dflt) */
} rt_tc;

typedef struct rt_port {
  int32_t port;
  dt_sym proto, ip;
} rt_port;

/* Relaxation state of a pod (Karpenter's preferences.go, in order). */
typedef struct rt_relax {
  uint8_t term;     /* required node-affinity term in use */
  uint8_t paff;     /* heaviest preferred pod-affinity terms dropped */
  uint8_t panti;    /* heaviest preferred pod-anti-affinity terms dropped */
  uint8_t pref;     /* heaviest preferred node-affinity terms dropped */
  uint8_t anyway;   /* ScheduleAnyway spreads dropped */
  uint8_t tol_pref; /* PreferNoSchedule taints tolerated */
} rt_relax;

/* A StatefulSet's replica whose claims the input holds: its own volume terms
** and fault, in place of its spec's (volume_topology). */
typedef struct rt_ordvol {
  int64_t ordinal;
  uint32_t nvol;
  const dt_mreqs **vol;
  const char *invalid;
} rt_ordvol;

typedef struct rt_spec {
  const dt_podspec *src;
  int64_t req[DT_RES_MAX];
  dt_sym ns;
  uint32_t nlabels;
  dt_sym *lk, *lv; /* sorted by key */
  uint32_t nsel;
  /* Its shape (dt_podspec.shape): the pod cache's number times two, or a
  ** number this plan gave the shape's signature times two plus one; 0 none. */
  uint32_t shape;
  uint32_t *sel;                                  /* groups whose selector matches this pod */
  uint8_t *paff_order, *panti_order, *pref_order; /* by weight, heaviest first */
  uint32_t nports;
  rt_port *ports;
  int32_t base_class; /* class of the unrelaxed pod, -1 until compiled */
  uint32_t nvol;
  const dt_mreqs **vol; /* where its volumes can be: each a term its node must meet too (arena) */
  uint32_t ncsi;
  uint64_t *csi;        /* its volumes a CSI driver attaches: driver << 32 | PVC ("ns/name"), symbols (arena) */
  const char *invalid;  /* why its claims keep it from being planned when it is pending (claim_invalid), or NULL */
  uint32_t nord;
  rt_ordvol *ord;       /* a StatefulSet's replicas with claims of their own in the input, by ordinal (arena) */
  int32_t *tgroup;      /* per topology term (spread, affinity, preferred, anti, preferred anti, each as
                        ** written): its group, -1 for a key not modelled; NULL until the groups are built */
} rt_spec;

/* A pod pending in the input whose claims Karpenter refuses (rt_spec.invalid) is
** not planned, as its provisioner's Validate drops it; one moving off a node
** is, as Karpenter's simulations reschedule it without validating. A pod
** that asks for DRA is never planned, pending or moving. */
static inline const rt_ordvol *spec_ord(const rt_spec *s, int64_t ordinal) {
  uint32_t lo = 0, hi = s->nord;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (s->ord[mid].ordinal < ordinal)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < s->nord && s->ord[lo].ordinal == ordinal ? &s->ord[lo] : NULL;
}

/* Whether label key k a class of spec s requires comes from its volumes
** alone, not from the pod's node selector or affinity (sched_diag.c). */
bool dt__sched_key_from_volume(const dt_plan *p, const rt_spec *s, dt_sym k);

/* Why pod `ordinal` of spec s is refused (NULL: it is not). */
static inline const char *pod_refused(const rt_spec *s, int64_t ordinal) {
  /* Karpenter's scheduler refuses every pod it would place that asks for
  ** DRA, pending or moving (its --ignore-dra-requests, on by default) */
  if (s->src->dra)
    return "the pod asks for Dynamic Resource Allocation (spec.resourceClaims or a container's resources.claims), "
           "which Karpenter does not provision for (its --ignore-dra-requests, on by default)";
  if (s->src->node_name || s->src->evicted) return NULL;
  if (s->src->refused) return s->src->refused;
  const rt_ordvol *o = s->nord ? spec_ord(s, ordinal) : NULL;
  return o ? o->invalid : s->invalid;
}

typedef struct rt_pool {
  const dt_nodepool *src;
  dt_sym name;
  dt_reqs reqs; /* requirements ∩ template labels ∩ nodepool label */
  uint32_t ntaints;
  rt_taint *taints;
  uint32_t ntypes;
  uint32_t *types;               /* compatible, price order */
  const dt_nodeclass *nodeclass; /* the EC2NodeClass the input holds for it, NULL none */
  const int64_t **alloc; /* per catalog type: its allocatable on this pool's nodes (its EC2NodeClass's kubelet) */
  const int64_t **eff;   /* per catalog type: that allocatable minus DaemonSet overhead */
  uint32_t nds_ports;
  rt_port *ds_ports;              /* host ports of DaemonSets landing on this pool's nodes */
  double spot_max;                /* maxPrice for spot offerings; INFINITY when unset */
  dt_policy *policy;              /* hooks for this pool: its own, or the plan's */
  size_t launched, launched_spot; /* claims launched so far in this plan */
  bool has_min_values;
  bool has_reserved; /* some type has a reserved offering this pool may launch */
  bool has_prefer_taint;
  bool has_limits;
  uint64_t universe_z; /* the zones and capacity types its types' offerings give */
  uint8_t universe_c;
  int64_t remaining[DT_RES_MAX];   /* INT64_MAX when unlimited */
  int64_t nodes_remaining;         /* -1 unlimited */
  int64_t replicas;                /* static pools (spec.replicas): how many NodeClaims it keeps; -1 dynamic */
  int64_t static_have, static_all; /* its nodes and claims in the input: not being deleted, and all */
} rt_pool;

/* A class's view of one NodePool, built the first time the class opens a
** claim there: the merged requirements, their masks, and the pool's types
** (price order) whose labels those requirements allow and whose
** allocatable holds one pod; what changes during a run (topology masks,
** limits, offerings left) is tested per claim on this shorter list. */
typedef struct rt_popt {
  dt_reqs nr;
  uint64_t zm;
  uint8_t cm;
  bool ready;
  uint32_t n;
  uint32_t *opt;
  /* New claims' options (sched_solve.c new_claim): while no NodePool limit
  ** is near, they depend only on the masks topology leaves, so the last few
  ** lists are kept and shared (an option list is never written once made).
  ** capmax: per resource, the most capacity among opt (arena, lazily). */
  struct rt_newopt *memo;
  uint32_t nmemo, next_memo;
  int64_t *capmax;
} rt_popt;

#define NEWOPT_MEMO 4
typedef struct rt_newopt {
  uint64_t zm;
  uint8_t cm;
  uint32_t n;
  uint32_t *opt;
  int64_t mx[DT_RES_MAX]; /* per resource, the most capacity among opt (the limits' charge) */
} rt_newopt;

typedef struct rt_class {
  int64_t req[DT_RES_MAX];
  dt_reqs reqs;
  const dt_podspec *spec; /* tolerations */
  uint32_t spec_idx;
  const rt_ordvol *ov; /* made for a StatefulSet replica with claims of its own: its volume terms; NULL the spec's */
  bool tol_pref;
  uint32_t ntc;
  rt_tc *tc;
  uint64_t elig_z; /* zones the pod's requirements allow */
  uint8_t elig_c;
  bool topo;              /* has constraints or is selected by an anti-affinity group */
  int8_t *pool_ok;        /* per pool: -1 unknown, 0 no, 1 yes (taints and requirements) */
  rt_popt *popt;          /* per pool, lazily (NULL until the class first opens a claim) */
  uint64_t *claim_failed; /* bitset over claims */
  uint32_t nfail_words;
  uint32_t node_cursor; /* existing nodes before it cannot take this class */
  bool no_new_claim;    /* no pool can open a claim for it (permanent within a run) */
} rt_class;

/* Whether class c's requirement r admits no value because the In
** requirements on its key (the pod's and its volumes') exclude each other;
** if so they are appended to b (sched_diag.c). */
bool dt__sched_describe_conflict(const dt_plan *p, const rt_class *c, const dt_req *r, dt_buf *b);

typedef struct rt_pod {
  uint32_t cls, spec;
  int64_t ordinal; /* -1 for a plain Pod */
  uint64_t seq;
} rt_pod;

typedef struct rt_node {
  const dt_node *src;
  const dt_node *claim; /* the NodeClaim in the input this Node registered (paired), or NULL */
  /* A Karpenter Node registered but not initialized (no karpenter.sh/initialized
  ** label; NotReady, or an ephemeral or startup taint still on it): it takes
  ** pods regardless of readiness and of those taints (left out of taints), as
  ** Karpenter's provisioner; a disruption simulation landing a pod on it fails. */
  bool initializing;
  uint32_t ntaints_all; /* with the taints an initializing node leaves out (after the others) */
  /* What the DaemonSets whose pods belong on this node ask for (their
  ** tolerations and node affinity against its taints and labels), NULL none:
  ** the room its DaemonSet pods not bound yet will take (used grows by the
  ** part the bound DaemonSet pods do not cover), as Karpenter's existing node. */
  const int64_t *ds_want;
  DT_VEC(rt_port) ports;
  /* Its CSINode's volume limits, as Karpenter's VolumeUsage: per driver the
  ** volumes it can attach and those its pods' claims attach (vols: driver
  ** << 32 | PVC, each once). */
  uint32_t nvlim;
  struct rt_vlim {
    dt_sym driver;
    int32_t limit, used;
  } * vlim;
  DT_VEC(uint64_t) vols;
  int zone; /* index, -1 unknown */
  int ct;   /* -1 unknown */
  dt_sym name;
  uint32_t nlabels;
  dt_sym *lk, *lval; /* in the Node's order */
  uint32_t ntaints;
  rt_taint *taints;
  int64_t alloc[DT_RES_MAX], used[DT_RES_MAX];
  int pool;    /* -1 if not ours */
  bool closed; /* its claim was taken by a command (karpenter.sh/disrupted) while its Node carries no taint */
} rt_node;

typedef struct rt_claim {
  uint32_t pool, idx;
  dt_reqs reqs;
  uint64_t zmask;
  uint8_t ctmask;
  uint32_t *opt, nopt; /* remaining options (a suffix of a private copy) */
  int64_t used[DT_RES_MAX];
  /* Per resource, the most any of its options held (eff) when a pod first
  ** fitted none, and has_optmax from then on: a pod past it in any resource
  ** fits no option, found without trying each. Options only ever drop out,
  ** so it stays an upper bound. */
  int64_t optmax[DT_RES_MAX];
  bool has_optmax;
  DT_VEC(uint32_t) pods;
  DT_VEC(rt_port) ports;
  DT_VEC(uint32_t) held; /* reserved offerings holding a unit for this claim (snapshot indices) */
  bool had_reserved;
  bool closed;
  bool repacked;  /* made by cost-aware packing (pack.c) */
  bool fixed;     /* a static pool's claim: type and offering chosen before any pod */
  uint64_t zopen; /* zones and capacity types its requirements allow (for the NodeClaim's requirements) */
  uint8_t copen;
  /* result */
  int32_t type, off;
  dt_sym name;
  uint32_t nfinal; /* launchable options, price order */
  uint32_t *final;
} rt_claim;

/* The score hook's best launchable offering of each type for claims of one
** policy, masks and spot maximum (sched_launch.c score_pick): looked up by
** type index, known[t] set once computed; a plan keeps a few such contexts
** and forgets a type's entries when an availability count of it changes. */
typedef struct score_ctx {
  const struct dt_policy *pol;
  uint64_t zmask;
  double spot_max;
  uint8_t ctmask;
  int32_t *off;   /* per type: the offering, -1 none */
  double *score;  /* per type: its score; NAN with off -1: offerings, all excluded */
  uint8_t *known; /* per type */
} score_ctx;
#define SCORE_CTXS 8

/* A policy's score(offering) results in one plan, computed when first needed. */
typedef struct score_cache {
  const struct dt_policy *pol;
  double *score;  /* per snapshot offering; NAN excludes */
  uint8_t *known; /* whether score[i] has been computed */
} score_cache;

typedef struct rt_binding {
  uint32_t pod, node;
} rt_binding;

typedef struct rt_unsched {
  uint32_t pod;
  const char *reason; /* arena */
} rt_unsched;

struct dt_plan {
  dt_plan_result res; /* built by dt_plan_run, not by the overlay and compiled runs of a disruption pass */
  /* the manifests' DaemonSets compiled for nodes (ds_want): per DaemonSet its
  ** requests and node-affinity alternatives (nds_alt[d] sets from ds_alt[d]) */
  bool ds_ready;
  int64_t (*ds_req)[DT_RES_MAX];
  dt_reqs **ds_alt;
  uint32_t *nds_alt;
  dt_arena arena;
  dt_symtab syms;
  int32_t *node_at; /* node by name symbol (node_by_name) */
  int32_t *ov_at;   /* an overlay plan's node index per cluster node id, -1 when not in the view */
  uint32_t nnode_at;
  const dt_catalog *catalog;
  const dt_manifests *manifests;
  dt_plan_opts opts;
  /* resources */
  uint32_t nres;
  const char *res_names[DT_RES_MAX];
  /* zones */
  uint32_t nzones;
  dt_sym zones[64];
  uint8_t zone_rank[64]; /* position among the zones by name */
  uint64_t avail_gen;    /* bumped whenever launch uses up a counted offering */
  uint64_t memo_gen;     /* this plan's launch's, unique in the process (rt_type.memo_gen) */
  /* well-known keys */
  dt_sym k_zone, k_ct, k_type, k_pool, k_hostname, k_resv, k_arch, k_os, k_region, k_interruptible;
  /* zone IDs (topology.k8s.aws/zone-id) and the zones they name, from the
  ** EC2NodeClasses' subnets: a requirement or topology key on the zone ID
  ** is read as one on the zone */
  size_t nzid;
  const char **zid, **zid_zone;
  dt_sym ct_sym[DT_CT_N];
  int16_t *keyslot; /* by symbol, -1 if not a type key; size nkeyslot */
  uint32_t nkeyslot, nslots;
  dt_sym *slot_key;
  uint32_t ntypes;
  rt_type *types;
  int32_t *type_at; /* type by name symbol, -1 none; size ntype_at */
  uint32_t ntype_at;
  uint32_t npools;
  rt_pool *pools; /* weight order */
  DT_VEC(rt_class) classes;
  dt_symtab class_sigs;
  DT_VEC(uint32_t) class_of_sig;
  /* Pods of one shape (dt_podspec.shape): the spec compiled first, whose
  ** symbols the others take, and an unrelaxed pod's class by its shape and
  ** requests (the signature every such pod would intern). */
  DT_VEC(const struct rt_spec *) shape_spec;
  dt_namemap class_memo;
  dt_symtab shape_sigs;         /* the shapes of pods the pod cache did not number */
  dt_buf shape_buf;             /* a signature's bytes, reused */
  const dt_podspec *shape_last; /* the last pod plan_shape numbered, and its number */
  uint32_t shape_last_id;
  uint32_t nspecs;
  rt_spec *specs;
  DT_VEC(rt_group) groups;
  dt_symtab group_sigs;
  DT_VEC(rt_lkey) lkeys; /* the DOM_LABEL groups' keys */
  uint64_t universe_z; /* zones any pool can launch in */
  uint8_t universe_c;
  bool any_prefer_taint;
  bool any_vlim; /* a node has a CSINode volume limit: bound pods are visited for their volumes */
  uint32_t npods;
  rt_pod *pods; /* queue order */
  uint32_t nnodes;
  rt_node *nodes; /* initialized first, then name */
  DT_VEC(rt_claim *) claims;
  uint32_t nfixed; /* claims[0..nfixed) are static pools' claims, planned before any pod */
  DT_VEC(rt_binding) bindings;
  DT_VEC(rt_unsched) unsched;
  DT_VEC(char *) notes;   /* arena strings */
  DT_VEC(uint32_t) input_notes; /* those of notes that tell of the input, not of this plan (note_in) */
  DT_VEC(uint32_t) marks; /* manifests' unavailable offerings in force */
  /* policies used by this plan, and the offering snapshot their hooks see */
  DT_VEC(dt_policy *) policies;
  DT_VEC(struct score_cache) scores; /* each policy's score hook results, per snapshot offering */
  score_ctx sctx[SCORE_CTXS];        /* score_pick's per-type answers, by claim context */
  uint32_t nsctx, next_sctx;
  uint32_t *off_base; /* per type: index of its first offering in the snapshot */
  struct dt_hook_offer *snapshot;
  size_t nsnapshot;
  dt_plan_stats stats;
  size_t bound_already;  /* pods bound to nodes or in-flight claims before the run */
  size_t from_deleting;  /* pods of nodes being deleted, planned again */
  int64_t ex_pod;        /* that pod's index in pods, -1 when none is explained or it is not pending */
  uint32_t early_syms;   /* symbols interned up to the NodePools: messages keep their order (key_before) */
  uint64_t src_id;       /* the compiled catalog its types were copied from (dt__catalog_compile), 0 none */
  dt_plan *snap_home;    /* that catalog's base, which keeps the hooks' view of its offerings unmarked */
  struct dt_cluster *cl; /* an overlay plan's cluster (its specs are the cluster's), else NULL */
  const struct dt_overlay *ov;
  uint8_t priced; /* an overlay's offerings: PRICED_* (its cluster's priced copy, sched_int.h) */
  /* An overlay started from the priced copy reads that copy's offerings
  ** until it changes a type's (dt__offs_mut): off_own has room for every
  ** type's at off_at[t], own[t] tells which are copied in. NULL otherwise. */
  rt_off *off_own;
  uint32_t *off_at;
  uint8_t *own;
  bool lent;             /* types is its cluster's lent copy (dt_cluster.lend), not its own */
  struct dt_explain *ex; /* --explain POD: what that pod went through (explain.c); NULL otherwise */
  /* What the input's NodeOverlays change, per NodePool and type
  ** (sched_overlay.c); NULL when it holds none. An overlay plan reads its
  ** cluster base's. */
  const struct rt_ovl *ovl;
  /* Per DaemonSet of the manifests, its required alternatives (node
  ** selector with each term) compiled once, with the types whose labels
  ** each admits (daemon_overhead, sched_compile.c); NULL until asked. */
  struct rt_dsalts *ds_alts;
};

/* NodeOverlays resolved (sched_overlay.c): per row (a NodePool of the
** manifests, in their order) and type, whether its prices were overlaid
** (OVL_F_PRICE) and the extended resources its capacity gains. */
enum { OVL_F_PRICE = 1, OVL_F_CAP = 2 };
typedef struct rt_ovl_res {
  const char *name;
  int64_t milli;
} rt_ovl_res;
typedef struct rt_ovl {
  uint32_t nrows, ntypes;
  const char **row_pool;  /* the NodePool's name of each row */
  uint8_t *flags;         /* [row * ntypes + t]: OVL_F_* */
  const rt_ovl_res **cap; /* [row * ntypes + t]: ncap[...] resources, NULL none */
  uint16_t *ncap;
  const char **notes; /* what resolving noted, said by every plan that reads it */
  size_t nnotes;
} rt_ovl;

/* Type t's offerings, the plan's own to change: every write to an
** offering goes through here (an overlay shares its cluster's priced copy
** until it writes). */
static inline rt_off *dt__offs_mut(dt_plan *p, uint32_t t) {
  if (p->own && !p->own[t]) {
    rt_off *o = p->off_own + p->off_at[t];
    memcpy(o, p->types[t].off, p->types[t].noff * sizeof *o);
    p->types[t].off = o;
    p->own[t] = 1;
  }
  return p->types[t].off;
}

/* Build p->res from the solved plan (plan_result.c); 0 or DT_ENOMEM. */
int dt__plan_result_build(dt_plan *p);

/* Free the solver's state of p, keeping its results, figures and
** explanation (a plan built with results no longer reads its catalog and
** manifests); dt_plan_free calls it too. */
void dt__plan_state_free(dt_plan *p);

/* The n pods of in[] into out[] in Karpenter's queue order: cpu and then
** memory descending, creation time, then input order (seq, ordinal); 0 or
** DT_ENOMEM. specs[pod.spec] gives each pod's requests and creation time. */
int dt__sched_queue_order(const rt_spec *specs, const rt_pod *in, size_t n, rt_pod *out);

/* Pod display name "ns/name" into buf. */
void dt__pod_name(const dt_plan *p, const rt_pod *pod, char *buf, size_t n);

bool dt__type_ok(const dt_plan *p, const rt_type *t, const dt_reqs *r, uint64_t zmask, uint8_t ctmask, double spot_max);
/* The order messages name requirements in, as indices into r->r: keys the
** catalog and NodePools define in their order, then the others by name. */
void dt__reqs_order(const dt_plan *p, const dt_reqs *r, uint32_t *idx);
/* Whether instance type t's labels satisfy the requirements (offerings aside). */
bool dt__type_labels_ok(const dt_plan *p, const rt_type *t, const dt_reqs *r);
/* Claim k's custom labels (plan_result.c) into v, k->reqs.n at most; the count, or -1 out of memory. */
ptrdiff_t dt__claim_custom_labels(const dt_plan *p, const rt_claim *k, dt_arena *a, dt_label_info *v);
int dt__pack_improve(dt_plan *p);
/* Whether options opt[0..n) satisfy every minValues of requirements r. */
bool dt__min_values_ok(const dt_plan *p, const dt_reqs *r, const uint32_t *opt, uint32_t n);

/* Whether the caller asked the run to stop (dt_plan_opts.cancel). */
static inline bool dt__cancelled(const dt_plan *p) { return p->opts.cancel && *p->opts.cancel; }

/* sched_solve.c, for explain.c: the scheduler's own tests, each read-only. */
bool dt__x_tolerates(const dt_plan *p, const dt_podspec *s, const rt_taint *t, uint32_t n, bool prefer_ok,
                     const rt_taint **which);
bool dt__x_compatible(const dt_plan *p, const dt_reqs *node, const dt_reqs *pod, const dt_req **bad);
void dt__x_masks(const dt_plan *p, const dt_reqs *r, uint64_t *zmask, uint8_t *ctmask);
bool dt__x_fits(const dt_plan *p, const int64_t *alloc, const int64_t *used, const int64_t *req);
int16_t dt__x_slot(const dt_plan *p, dt_sym key);
bool dt__x_ports_conflict(const dt_plan *p, const rt_port *a, uint32_t na, const rt_port *b, size_t nb);
void dt__x_diagnose_pool(dt_plan *p, rt_class *c, uint32_t pi, dt_buf *b);
/* Why Karpenter's provisioner leaves NodePool pl out (being deleted, not
** ready, its EC2NodeClass not ready or one dovetail does not model), in
** buf[0..n) or the pool's own text; NULL when it does not. */
const char *dt__x_pool_left_out(const rt_pool *pl, char *buf, size_t n);
/* The same as a pod's reason, "NodePool NAME launches nothing: WHY",
** appended to b; false when it is not left out. */
bool dt__x_pool_unusable(const rt_pool *pl, dt_buf *b);

/* explain.c: --explain POD. begin finds the pod (DT_EINVAL when it is not
** in the plan); attempt records, before each try of that pod, why every
** node, open claim and NodePool takes it or not, and outcome where it went;
** finish adds the launched offering and the cheaper ones it was not. */
int dt__explain_begin(dt_plan *p, dt_error *err);
void dt__explain_attempt(dt_plan *p, uint32_t ci, const rt_relax *rx, rt_claim *const *order, size_t norder,
                         uint32_t pass, uint32_t pos, uint32_t qlen);
void dt__explain_outcome(dt_plan *p, bool placed, size_t nbindings, size_t nclaims, rt_claim *const *order,
                         size_t norder);
int dt__explain_finish(dt_plan *p);
void dt__explain_free(struct dt_explain *ex);

/* lp.c: minimise c.x subject to A x >= d, x >= 0; the warm form starts from
** (and returns) a basis of m entries. A dense (m x n, row-major) or by
** columns (column j's non-zeros at start[j]..start[j+1] of row[] and val[]).
** inv (NULL, or m x m of the caller's) holds the basis' inverse between
** warm solves: NaN in inv[0] when it holds none. Returns 0, -1 when the LP
** is infeasible or unbounded, or DT_ENOMEM. */
#define DT_LP_COLD INT32_MIN
int dt__lp_cover_sparse(int m, int n, const int *start, const int *row, const double *val, const double *c,
                        const double *d, double *y, double *x, double *obj, int *basis, double *inv);
int dt__lp_cover(int m, int n, const double *a, const double *c, const double *d, double *y, double *x, double *obj);
int dt__lp_cover_warm(int m, int n, const double *a, const double *c, const double *d, double *y, double *x,
                      double *obj, int *basis);
/* Simplex pivots the calling thread has made so far (its work), and the
** count at which its solves stop pivoting (LONG_MAX: never), the last one
** returned: a solve stopped so ends on the basis it has, as at its own
** limit of pivots. */
long dt__lp_pivots(void);
long dt__lp_stop_at(long at);
bool dt__lp_spent(void); /* the pivots up to that count made */

/* topo.c */
#define DT_NS_ALL ((size_t)-1) /* dt__topo_group's nns for a term over every namespace */
/* The namespaces term t of spec s counts pods in (sched_pods.c): *nns DT_NS_ALL for every one. */
int dt__term_ns(dt_plan *p, const struct rt_spec *s, const dt_podterm *t, char *const **ns, size_t *nns);
int dt__topo_group(dt_plan *p, int kind, const char *key, const dt_selector *sel, char *const *ns, size_t nns,
                   uint32_t fspec, uint8_t fmode, dt_sym own_ns, const char *const *mlk_vals, size_t nmlk);
int dt__topo_select(dt_plan *p);
unsigned long long dt__topo_work(void); /* this thread's group lookups and matches so far */
/* Per spec, the first of specs[0..n) with its namespace and labels (what
** topo_select reads). */
int dt__topo_label_reps(const struct rt_spec *specs, uint32_t n, uint32_t *rep);
int dt__topo_record(dt_plan *p, uint32_t spec, const rt_class *c, uint32_t host, uint64_t Z, uint8_t C, int32_t count,
                    int64_t ordinal);
/* Whether node n's CSINode limits take spec s's volumes besides those
** attached (else *over, when given, is the limit passed); attach them. */
bool dt__sched_vols_fit(const rt_node *n, const rt_spec *s, uint32_t *over);
int dt__sched_vols_add(rt_node *n, const rt_spec *s);
/* (pool: the pool of the claim not made yet, host nnodes + claims.n) */
int dt__topo_check(const dt_plan *p, const rt_class *c, uint32_t host, const dt_reqs *hr, uint32_t pool, uint64_t *Z,
                   uint8_t *C, topo_pins *pins, uint32_t *fail);
/* Narrow *r by pins (requirements on their keys); true when it changed. */
bool dt__topo_pin(dt_plan *p, const topo_pins *pins, dt_reqs *r);
/* Whether the pins name a key some instance type carries as a label. */
bool dt__topo_pins_type_key(const dt_plan *p, const topo_pins *pins);
void dt__topo_explain(const dt_plan *p, const rt_class *c, uint32_t fail, dt_buf *b);

/* Whether one of pod s's tolerations tolerates the taint key=val:effect. */
static inline bool tolerates_taint(const dt_podspec *s, const char *key, const char *val, const char *effect) {
  for (size_t k = 0; k < s->ntol; k++) {
    const dt_toleration *o = &s->tol[k];
    if (o->effect && strcmp(o->effect, effect)) continue;
    if (!o->key ? !strcmp(o->op, "Exists")
                : !strcmp(o->key, key) && (!strcmp(o->op, "Exists") || !strcmp(o->value, val)))
      return true;
  }
  return false;
}

/* Whether the machine is being deleted: its Node or the NodeClaim it
** registered (Karpenter's MarkedForDeletion). */
static inline bool machine_deleting(const rt_node *n) { return n->src->deleting || (n->claim && n->claim->deleting); }

/* The NoSchedule taint a Node carries for its condition, whether or not the
** dump shows it (it takes only pods that tolerate it, as Karpenter's existing
** nodes and the kube-scheduler take them): cordoned, or a registered Node
** that is not Ready (not one still initializing); NULL for neither. */
static inline const char *node_condition_taint(const rt_node *n) {
  if (n->src->unschedulable) return "node.kubernetes.io/unschedulable";
  if (!n->src->ready && !n->src->claim_name && !n->initializing) return "node.kubernetes.io/not-ready";
  return NULL;
}

#endif
