/*
** sched_int.h: what the scheduler's files share (sched.c, sched_compile.c,
** sched_pods.c, sched_solve.c, sched_launch.c): the arena macro, the small
** predicates every phase calls (static inline, so the hot loops keep them
** inlined), the types more than one phase reads, and the functions one
** phase calls in another. Private to the scheduler; schedule.h is what the
** rest of the engine sees.
*/
#ifndef DT_SCHED_INT_H
#define DT_SCHED_INT_H

#include "schedule.h"

#include "hooks.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define A(p, n)     dt__arena_alloc(&(p)->arena, (n))
#define A_RAW(p, n) dt__arena_raw(&(p)->arena, (n)) /* not zeroed */

/* ------------------------------------------------------------ helpers */

static inline int res_index(dt_plan *p, const char *name, dt_error *err) {
  /* the base resources are the first four of every plan (plan_begin): most
  ** requests name only them, so they are found without a scan */
  if (p->nres >= 4) switch (name[0]) {
    case 'c':
      if (!strcmp(name, "cpu")) return DT_R_CPU;
      break;
    case 'm':
      if (!strcmp(name, "memory")) return DT_R_MEM;
      break;
    case 'p':
      if (!strcmp(name, "pods")) return DT_R_PODS;
      break;
    case 'e':
      if (!strcmp(name, "ephemeral-storage")) return DT_R_EPH;
      break;
    default: break;
    }
  for (uint32_t i = 0; i < p->nres; i++)
    if (strcmp(p->res_names[i], name) == 0) return (int)i;
  if (p->nres == DT_RES_MAX)
    return dt__err(err, DT_ERANGE, "more than %d distinct resource names (at \"%s\")", DT_RES_MAX, name);
  p->res_names[p->nres] = dt__arena_strdup(&p->arena, name);
  if (!p->res_names[p->nres]) return DT_ENOMEM;
  return (int)p->nres++;
}

static inline int rlist_vec(dt_plan *p, const dt_rlist *r, int64_t *out, dt_error *err) {
  for (size_t i = 0; i < r->n; i++) {
    int k = res_index(p, r->v[i].name, err);
    if (k < 0) return k;
    out[k] = r->v[i].milli;
  }
  return 0;
}

static inline dt_taint_effect taint_effect(const char *e) {
  return strcmp(e, "PreferNoSchedule") == 0 ? DT_TAINT_PREFER_NO_SCHEDULE
         : strcmp(e, "NoExecute") == 0      ? DT_TAINT_NO_EXECUTE
                                            : DT_TAINT_NO_SCHEDULE;
}

static inline rt_taint *compile_taints(dt_plan *p, const dt_taint *t, size_t n) {
  rt_taint *out = A(p, (n ? n : 1) * sizeof *out);
  if (!out) return NULL;
  for (size_t i = 0; i < n; i++) {
    out[i].key = dt__sym(&p->syms, t[i].key);
    out[i].value = dt__sym(&p->syms, t[i].value);
    out[i].effect = (uint8_t)taint_effect(t[i].effect);
  }
  return out;
}

/* Whether node r's labels satisfy every requirement of q (an absent label
** is the empty value, which only NotIn and DoesNotExist allow). */
static inline bool node_labels_match(const dt_plan *p, const rt_node *r, const dt_reqs *q) {
  for (uint32_t i = 0; i < q->n; i++) {
    dt_sym v = 0;
    for (uint32_t k = 0; k < r->nlabels; k++)
      if (r->lk[k] == q->r[i].key) v = r->lval[k];
    if (!dt__req_has(&p->syms, &q->r[i], v)) return false;
  }
  return true;
}

/* Whether the pod tolerates every taint. PreferNoSchedule taints block too
** unless prefer_ok: Karpenter avoids them until the last relaxation step. */
static inline bool tolerates(const dt_plan *p, const dt_podspec *s, const rt_taint *t, uint32_t n, bool prefer_ok,
                             const rt_taint **which) {
  for (uint32_t i = 0; i < n; i++) {
    if (t[i].effect == DT_TAINT_PREFER_NO_SCHEDULE && prefer_ok) continue;
    static const char *eff[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
    if (!tolerates_taint(s, dt__sym_str(&p->syms, t[i].key), dt__sym_str(&p->syms, t[i].value), eff[t[i].effect])) {
      if (which) *which = &t[i];
      return false;
    }
  }
  return true;
}

/*
** cluster.x-k8s.io/interruptible is "true" on every spot offering and absent
** on the others (Cluster API): a requirement on it is a requirement on the
** capacity type, so it holds for new claims, existing nodes and DaemonSets
** alike. Returns whether r was one and has been rewritten.
*/
static inline bool interruptible(dt_plan *p, dt_sym key, dt_op op, const dt_sym *vals, uint32_t n, dt_req *out) {
  if (key != p->k_interruptible) return false;
  bool has_true = false;
  for (uint32_t i = 0; i < n; i++) has_true |= !strcmp(dt__sym_str(&p->syms, vals[i]), "true");
  dt_sym spot = p->ct_sym[DT_CT_SPOT], none = dt__sym(&p->syms, "(no such capacity type)");
  bool want_spot = op == DT_OP_EXISTS || (op == DT_OP_IN && has_true);
  bool no_spot = op == DT_OP_DOESNOTEXIST || (op == DT_OP_NOTIN && has_true);
  if (want_spot)
    dt__req_make(&p->arena, out, p->k_ct, DT_OP_IN, &spot, 1, &p->syms);
  else if (no_spot)
    dt__req_make(&p->arena, out, p->k_ct, DT_OP_NOTIN, &spot, 1, &p->syms);
  else if (op == DT_OP_NOTIN)
    dt__req_make(&p->arena, out, p->k_ct, DT_OP_EXISTS, NULL, 0, &p->syms); /* excludes only other values */
  else
    dt__req_make(&p->arena, out, p->k_ct, DT_OP_IN, &none, 1, &p->syms); /* a value no offering has */
  return true;
}

/* Label keys a requirement is read under, as Karpenter's NormalizedLabels
** (core pkg/apis/v1/labels.go; the AWS provider adds the EBS CSI driver's
** zone key): the deprecated beta keys and a volume's zone key select the
** stable label every node carries. Only node requirements (nodeSelector,
** node affinity, volumes, NodePools): a pod label selector's keys stay. */
static inline const char *normalized_key(const char *k) {
  static const char *const map[][2] = {
      {"failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone"},
      {"failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region"},
      {"beta.kubernetes.io/arch", "kubernetes.io/arch"},
      {"beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type"},
      {"beta.kubernetes.io/os", "kubernetes.io/os"},
      {"topology.ebs.csi.aws.com/zone", "topology.kubernetes.io/zone"},
  };
  if (k[0] != 'f' && k[0] != 'b' && k[0] != 't') return k;
  for (size_t i = 0; i < sizeof map / sizeof *map; i++)
    if (!strcmp(k, map[i][0])) return map[i][1];
  return k;
}

/* A zone ID's zone (dt_plan.zid), or the value as it is. */
static inline const char *zone_of_id(const dt_plan *p, const char *v) {
  for (size_t i = 0; i < p->nzid; i++)
    if (!strcmp(p->zid[i], v)) return p->zid_zone[i];
  return v;
}

/* A label key as requirements and topology keys read it: normalized_key,
** and the zone ID as the zone when the EC2NodeClasses name zone IDs. */
static inline const char *req_key(const dt_plan *p, const char *k) {
  return p->nzid && !strcmp(k, DT_L_ZONE_ID) ? DT_L_ZONE : normalized_key(k);
}

static inline int compile_mreq(dt_plan *p, const dt_mreq *m, dt_req *out) {
  dt_sym stack[32];
  dt_sym *vals = m->n <= 32 ? stack : A(p, m->n * sizeof *vals);
  if (!vals) return DT_ENOMEM;
  bool zid = p->nzid && !strcmp(m->key, DT_L_ZONE_ID);
  for (size_t i = 0; i < m->n; i++) vals[i] = dt__sym(&p->syms, zid ? zone_of_id(p, m->vals[i]) : m->vals[i]);
  dt_sym key = dt__sym(&p->syms, req_key(p, m->key));
  if (!interruptible(p, key, m->op, vals, (uint32_t)m->n, out))
    dt__req_make(&p->arena, out, key, m->op, vals, (uint32_t)m->n, &p->syms);
  out->min_values = m->min_values;
  return 0;
}

static inline int16_t slot_of(const dt_plan *p, dt_sym key) { return key < p->nkeyslot ? p->keyslot[key] : -1; }

/* Allowed zones and capacity types of a requirement set. */
static inline void masks(const dt_plan *p, const dt_reqs *r, uint64_t *zmask, uint8_t *ctmask) {
  const dt_req *z = dt__reqs_get(r, p->k_zone), *c = dt__reqs_get(r, p->k_ct);
  *zmask = 0;
  for (uint32_t i = 0; i < p->nzones; i++)
    if (!z || dt__req_has(&p->syms, z, p->zones[i])) *zmask |= 1ull << i;
  *ctmask = 0;
  for (int i = 0; i < DT_CT_N; i++)
    if (!c || dt__req_has(&p->syms, c, p->ct_sym[i])) *ctmask |= (uint8_t)(1u << i);
}

/* An offering a claim may launch: available, in its zones and capacity
** types, and for spot not above the pool's maxPrice. */
static inline bool off_ok(const rt_off *o, uint64_t zmask, uint8_t ctmask, double spot_max) {
  return o->avail != 0 && (zmask >> o->zone & 1) && (ctmask >> o->ct & 1) && dt__spot_ok(o, spot_max);
}

/* Whether some offering of type t is one a claim may launch (off_ok). */
static inline bool type_offered(const rt_type *t, uint64_t zmask, uint8_t ctmask, double spot_max) {
  for (uint32_t i = 0; i < t->noff; i++)
    if (off_ok(&t->off[i], zmask, ctmask, spot_max)) return true;
  return false;
}

static inline bool fits(const dt_plan *p, const int64_t *alloc, const int64_t *used, const int64_t *req) {
  /* Written as a difference: req may be a sentinel as large as INT64_MAX. */
  for (uint32_t r = 0; r < p->nres; r++)
    if (req[r] > alloc[r] - used[r]) return false;
  return true;
}

/* Whether spec si is left out of this plan (an overlay's absent pod). */
static inline bool spec_absent(const dt_plan *p, uint32_t si) { return p->ov && p->ov->pod[si] == DT_OV_ABSENT; }

static inline bool is_well_known(const dt_plan *p, dt_sym key) {
  return key == p->k_zone || key == p->k_ct || key == p->k_type || key == p->k_pool || key == p->k_hostname ||
         key == p->k_resv || key == p->k_arch || key == p->k_os || key == p->k_region || slot_of(p, key) >= 0;
}

/*
** Karpenter's Requirements.Compatible with AllowUndefinedWellKnownLabels: a
** custom label the pod requires must be defined by the node side unless the
** pod only excludes it; shared keys must intersect. On failure *bad is the
** pod's offending requirement.
*/
static inline bool compatible(const dt_plan *p, const dt_reqs *node, const dt_reqs *pod, const dt_req **bad) {
  for (uint32_t i = 0; i < pod->n; i++) {
    const dt_req *in = &pod->r[i];
    const dt_req *ex = dt__reqs_get(node, in->key);
    if (!ex) {
      dt_op op = dt__req_operator(in);
      /* A new node's hostname is a placeholder of its own (as Karpenter's
      ** NodeClaims carry): a pod that names hosts fits existing nodes only. */
      bool names_host = in->key == p->k_hostname && !in->complement;
      if (names_host || (!is_well_known(p, in->key) && op != DT_OP_NOTIN && op != DT_OP_DOESNOTEXIST)) {
        *bad = in;
        return false;
      }
      continue;
    }
    if (!dt__req_intersects(&p->syms, ex, in)) {
      *bad = in;
      return false;
    }
  }
  return true;
}

/*
** The order requirements are named in messages: keys interned before any
** node or pod (the well-known ones, the catalog's, the NodePools') in that
** order, then the others by name. A plan's interning order past the pools
** depends on which nodes its view holds, so a message must not.
*/
static inline bool key_before(const dt_plan *p, dt_sym a, dt_sym b) {
  bool ea = a < p->early_syms, eb = b < p->early_syms;
  if (ea || eb) return ea && eb ? a < b : ea;
  return strcmp(dt__sym_str(&p->syms, a), dt__sym_str(&p->syms, b)) < 0;
}

/* compatible()'s offending requirement as messages name it: the first, in
** key_before's order, of those the node side refuses. */
static inline const dt_req *first_incompatible(const dt_plan *p, const dt_reqs *node, const dt_reqs *pod) {
  const dt_req *first = NULL, *bad;
  for (uint32_t i = 0; i < pod->n; i++) {
    const dt_reqs one = {1, &pod->r[i]};
    if (!compatible(p, node, &one, &bad) && (!first || key_before(p, bad->key, first->key))) first = bad;
  }
  return first;
}

static inline const char *arena_buf(dt_plan *p, dt_buf *b) {
  const char *s = dt__arena_strdup(&p->arena, b->p ? b->p : "");
  dt__free(b->p);
  memset(b, 0, sizeof *b);
  return s;
}

/* A note, formatted whole into the plan's arena (names are up to 253
** characters, and a note is never cut mid-name or mid-character); input:
** it tells of the input (note_in). */
static inline void note_add(dt_plan *p, bool input, const char *fmt, va_list ap) {
  va_list aq;
  va_copy(aq, ap);
  int n = vsnprintf(NULL, 0, fmt, aq);
  va_end(aq);
  char *s = n < 0 ? NULL : (char *)dt__arena_alloc(&p->arena, (size_t)n + 1);
  if (!s) return;
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  if (dt__vec_push(&p->notes, s) || (input && dt__vec_push(&p->input_notes, (uint32_t)p->notes.n - 1)))
    p->arena.oom = 1;
}

static inline void note(dt_plan *p, const char *fmt, ...) DT_PRINTF(2, 3);
static inline void note(dt_plan *p, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  note_add(p, false, fmt, ap);
  va_end(ap);
}

/* A note that tells of the input (an object left out, a constraint not
** modelled), the same in every plan of it: a disruption passes these on,
** where a note of one plan's outcome would mislead. */
static inline void note_in(dt_plan *p, const char *fmt, ...) DT_PRINTF(2, 3);
static inline void note_in(dt_plan *p, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  note_add(p, true, fmt, ap);
  va_end(ap);
}

static inline uint64_t node_zmask(const rt_node *n) { return n->zone >= 0 ? 1ull << n->zone : 0; }
static inline uint8_t node_cmask(const rt_node *n) { return n->ct >= 0 ? (uint8_t)(1u << n->ct) : 0; }

/* ------------------------------------------------------------ shared types */

/*
** One node compiled on its own: interned labels, allocatable (its own, or
** its instance type's), taints, zone and capacity type. What depends on the
** plan's NodePools (which pool owns it) is left to the caller. *skip is set
** when the node has neither allocatable nor a known instance type.
*/
typedef struct node_facts {
  dt_sym own;   /* its first karpenter.sh/nodepool label (static pools count it) */
  dt_sym pool;  /* its last one (the pool it belongs to) */
  int32_t type; /* the instance type its last instance-type label names, -1 none */
  const char *itype;
  bool skip;
} node_facts;

/* A node of a compiled cluster (dt__cluster_new, in sched.c). */
typedef struct cnode {
  rt_node node; /* compiled in the base; pool, use and ports are each plan's */
  node_facts f;
  bool may_pair; /* a NodeClaim that may stand for a Node of the view (by nodeName, providerID or name) */
} cnode;

/* What the pods bound to one node name use, summed (a node takes the use of
** its name and of its alias). */
typedef struct claim_on {
  uint32_t node; /* cluster node id */
  int32_t next;  /* the next entry of the same name, -1 none */
} claim_on;

/*
** The pod names the plan's nodes carry (dovetail.dev/pods): a name is on
** the last node in plan order that carries it. A plan interns its nodes'
** names; an overlay whose nodes carry its cluster's very lists looks them up
** in the cluster's index instead (dt__sched_claims_ix_cluster), which holds
** the same names with every node that carries each, so the answer is the
** same.
*/
typedef struct claims_ix {
  dt_namemap own; /* a plan's own index: name -> its node (the names are its nodes') */
  bool own_built;
  /* or, when every node's names are numbered (dt_node.pod_ids): number ->
  ** its node, for pods with a number (dt_podspec.name_id); the names are
  ** indexed too only when a pod without one is looked up */
  int32_t *own_id;
  uint32_t nid;
  const struct dt_cluster *cl; /* or the cluster's index, through p->ov_at */
  bool any;                    /* some node carries a name */
} claims_ix;

/* The cluster's index of the names its nodes carry, brought up to its
** nodes; ix->cl stays NULL when a node of the view carries other names than
** its cluster node (the plan then builds its own). */
int dt__sched_claims_ix_cluster(dt_plan *p, claims_ix *ix);
/* The cluster's index by name brought up to its nodes. */
int dt__sched_claims_ix_names(struct dt_cluster *cl);

typedef struct name_use {
  __int128 used[DT_RES_MAX]; /* exact: pods are added and taken away again; read saturated */
  int64_t pods;  /* sum of the pods' counts */
  int64_t specs; /* pod specs */
  __int128 ds[DT_RES_MAX]; /* of it, DaemonSet pods' */
  bool listed;   /* in used_names */
} name_use;

/* A NodePool's instance types in price order (dt__sched_compile_pools), kept
** for the cluster's later overlays: the view's NodePools are the input's,
** copied (only a static pool's replicas differ), so the same source
** requirements, labels and name give the same types under the same
** offerings. */
typedef struct pool_types {
  const void *reqs, *labels, *name; /* the NodePool's, by address */
  size_t nreqs, nlabels;
  uint64_t zm;
  uint8_t cm;
  double spot_max;
  uint32_t *types, ntypes;
  uint64_t universe_z; /* the zones and capacity types its types' offerings add to the plan's */
  uint8_t universe_c;
  bool has_reserved; /* ... and whether one of those is reserved */
  bool universe_ok;  /* the three above are known */
} pool_types;

/* A pool's types in launch's order under one claim's masks, each with its
** best offering and cheapest price (sched_launch.c), kept by a cluster for
** the overlays that start from the same priced copy. */
typedef struct kept_order {
  uint32_t pool, gen, npool, n;
  uint64_t zmask;
  double spot_max;
  uint8_t ctmask;
  uint32_t *pool_types; /* the pool's types it was ordered from (npool) */
  uint32_t *types;      /* (n) */
  int32_t *off;
  double *price;
} kept_order;

#define KEPT_ORDERS 8

struct dt_cluster {
  dt_plan *base; /* the catalog and NodePools compiled; every name below interned */
  DT_VEC(cnode) nodes;
  DT_VEC(uint32_t) byname; /* node ids by name, ties by id */
  const dt_podspec *pods;
  uint32_t npods;
  rt_spec *specs;            /* per pod, in the base's arena */
  dt_sym *pod_node;          /* per pod: its node name's symbol (dt__cluster_bind keeps it) */
  DT_VEC(name_use) use;      /* by node name symbol */
  DT_VEC(dt_sym) used_names; /* symbols with a use entry, each once */
  /* the few pods a plan must visit one by one (spec ids, ascending) */
  DT_VEC(uint32_t) termed;     /* spread or pod (anti-)affinity terms: topology groups */
  DT_VEC(uint32_t) termed_rep; /* per termed entry: the first entry of its term shape, or NO_REP */
  DT_VEC(uint32_t) label_rep;  /* per pod: the first pod of its namespace and labels (dt__topo_label_reps) */
  DT_VEC(uint32_t) owned;      /* workloads: replicas, selectors */
  bool ported;                 /* some pod has host ports */
  bool has_pods;
  /* Pod names the nodes carry (dovetail.dev/pods), each with the nodes that
  ** name it: built on the first overlay that looks one up, extended as nodes
  ** are added, so a simulation does not intern every nominated name again. */
  dt_namemap claimed; /* name (the nodes' own strings) -> its first entry in claimed_on */
  DT_VEC(claim_on) claimed_on;
  uint32_t claimed_upto; /* nodes [0, claimed_upto) are in the index */
  /* The same by name number (dt_node.pod_ids), while every node that
  ** carries names has them (claimed_noid tells one did not): the index by
  ** name is then built only when a pod without a number is looked up. */
  DT_VEC(int32_t) claimed_id; /* number -> its first entry in claimed_id_on, -1 none */
  DT_VEC(claim_on) claimed_id_on;
  uint32_t claimed_id_upto;
  bool claimed_noid;
  /* The hooks' offerings of an overlay (dt__sched_build_snapshot): the same
  ** for every overlay under the same marks and clock, so built once. */
  struct dt_hook_offer *snap;
  size_t nsnap;
  const dt_mark *snap_marks;
  size_t snap_nmarks;
  int64_t snap_now;
  /* The NodePools' types, per pool position, in the base's arena, and the
  ** offerings they were chosen under: (price, cap, available) per offering. */
  pool_types *ptypes;
  uint32_t nptypes;
  double *ptypes_offers;
  size_t nptypes_offers;
  uint32_t ptypes_gen; /* the priced copy (below) they were chosen under, 0 none */
  /* The types and offerings as an overlay has them after the marks and the
  ** price hook: a pass's prices are fixed (dt__policy_pass_begin), so every
  ** later overlay under the same marks, clock and policy starts from this
  ** copy rather than marking and pricing the catalog again. In the base's
  ** arena; gen counts the copies taken (0: none yet). */
  struct {
    rt_type *types;
    const dt_mark *marks;
    size_t nmarks;
    int64_t now;
    const dt_policy *policy;
    uint32_t gen;
  } priced;
  /* The priced copy's types once more, lent to one overlay at a time
  ** (user) instead of a copy of its own: an overlay writes a type only
  ** through dt__offs_mut, which points it at the overlay's own offerings,
  ** and in launch's memo, which launch drops before it reads; the types
  ** whose offerings the overlay owned are copied back from the priced copy
  ** when it is freed. In the base's arena; gen is the priced copy's. */
  struct {
    rt_type *types;
    const dt_plan *user;
    uint32_t gen;
  } lend;
  /* Which catalog types' labels a NodePool's requirements merged with a
  ** class's allow (a bit per type), for the last few such requirements
  ** whose symbols are all the base's: a simulation's new claim asks this
  ** of every type of its pool, and the next simulation asks it again. In
  ** the base's arena. */
  struct {
    dt_reqs nr;
    uint64_t *ok;
  } labeled[16];
  uint32_t nlabeled, next_labeled;
  kept_order korder[KEPT_ORDERS]; /* in the base's arena */
  uint32_t nkorder, next_korder;
  /* The zones each type offers per NodePool and capacity type, and those
  ** every type of a pool offers (sched_solve.c's offered_zones), as an
  ** overlay that still shares the priced copy's offerings found them; kept
  ** with the pools' spot maxima and types they were found for. In the
  ** base's arena. */
  struct {
    uint32_t gen; /* the priced copy's, 0 none */
    uint32_t npools;
    uint64_t *offz, *allz;
    double *spot_max; /* per pool */
    uint32_t *ntypes; /* per pool */
    uint32_t *types;  /* the pools' types, one after the other */
  } zones;
};

/* An overlay plan's offerings (dt_plan.priced) until its pools are compiled:
** marked and priced by itself, started from its cluster's priced copy, or
** marked and priced by itself and kept as that copy. */
enum { PRICED_NONE = 0, PRICED_COPY = 1, PRICED_KEPT = 2 };

/* ------------------------------------------------- across the phases */

/* Whether pool pl has spot maximum spot_max and types[0..n) (what a
** cluster kept something for), byte for byte. */
static inline bool dt__pool_is(const rt_pool *pl, double spot_max, uint32_t n, const uint32_t *types) {
  return !memcmp(&spot_max, &pl->spot_max, sizeof spot_max) && n == pl->ntypes &&
         (!n || !memcmp(types, pl->types, n * sizeof *types));
}

/* sched.c: types[0..n) and their offerings copied into a (NULL: out of memory) */
rt_type *dt__types_copy(dt_arena *a, const rt_type *from, uint32_t n);

/* sched_overlay.c: the input's NodeOverlays resolved into p->ovl, the
** offerings' prices overlaid (an overlay plan reads its cluster base's,
** whose types it copied); and the row of pool np in it, -1 none. */
int dt__sched_overlays(dt_plan *p);
int32_t dt__ovl_row(const rt_ovl *o, const char *pool);

/* sched_compile.c */
int dt__sched_apply_marks(dt_plan *p);
int dt__sched_apply_price_hook(dt_plan *p);
int dt__sched_build_snapshot(dt_plan *p);
void dt__sched_charge_nodes(dt_plan *p, const int32_t *type);
int dt__sched_compile_catalog(dt_plan *p, dt_error *err);
int dt__sched_compile_mreqs(dt_plan *p, const dt_mreqs *m, dt_reqs *out);
int dt__sched_compile_node(dt_plan *p, const dt_node *n, rt_node *r, node_facts *f, dt_error *err);
void dt__sched_node_initialized(rt_node *r); /* its NodeClaim says Initialized: the taints left out come back */
/* used grows by what r's DaemonSets ask beyond bound (the requests of its bound DaemonSet pods; NULL none) */
void dt__sched_ds_reserve(rt_node *r, const int64_t *bound);
int dt__sched_compile_nodes(dt_plan *p, dt_error *err);
int dt__sched_compile_pools(dt_plan *p, dt_error *err);
rt_port *dt__sched_compile_ports(dt_plan *p, const dt_podspec *s);
int dt__sched_compile_selector_kvs(dt_plan *p, const dt_kvs *kv, dt_reqs *out);
void dt__sched_count_static(dt_plan *p, const dt_node *n, dt_sym own);
int32_t dt__sched_node_by_name(dt_plan *p, const char *name);
int32_t dt__sched_node_by_sym(dt_plan *p, dt_sym s);
void dt__sched_node_pool(dt_plan *p, rt_node *r, dt_sym pool);
bool dt__sched_ports_conflict(const dt_plan *p, const rt_port *a, uint32_t na, const rt_port *b, size_t nb);
void dt__sched_skipped_node(dt_plan *p, const dt_node *n, const char *itype);
int dt__sched_sort_by_price(dt_plan *p, uint32_t *types, const double *price, uint32_t n);
int dt__sched_use_policy(dt_plan *p, dt_policy *pol);

/* sched_pods.c */
int dt__sched_class_for(dt_plan *p, uint32_t si, int64_t ordinal, const rt_relax *rx);
int dt__sched_compile_pods(dt_plan *p, dt_error *err);
int dt__sched_compile_spec(dt_plan *p, const dt_podspec *d, rt_spec *s, bool *rc_missing, dt_error *err);
void dt__sched_runtime_class_note(dt_plan *p, const dt_podspec *d);
int dt__sched_volume_topologies(dt_plan *p, rt_spec *specs, uint32_t n);

/* sched_solve.c */
bool dt__sched_pool_ok(dt_plan *p, rt_class *c, uint32_t pi);
int dt__sched_solve(dt_plan *p);

/* sched_diag.c */
int dt__sched_unschedulable(dt_plan *p, uint32_t podi, const char *reason);
/* Each pod left in queue[0..qn) unschedulable, with the reason of its last
** class (last_class[pod]; -1 - class when deferred for a reservation). */
int dt__sched_report_unschedulable(dt_plan *p, const uint32_t *queue, uint32_t qn, const int32_t *last_class);

/* sched_launch.c */
int dt__sched_hook_pick(dt_plan *p, rt_claim *k, const uint32_t *types, uint32_t n, int32_t *bt, int32_t *bo,
                        const char **excluded);
int dt__sched_launch(dt_plan *p);
bool dt__sched_off_better(const dt_plan *p, uint32_t t, uint32_t o, int32_t bt, int32_t bo, const int64_t *used);

/* sched.c */
int dt__sched_cluster_specs(dt_plan *p);
int dt__sched_termed_reps(dt_cluster *cl); /* per termed pod, the first of its term shape */
int dt__sched_compile_nodes_overlay(dt_plan *p, dt_error *err);
void dt__sched_overlay_use(dt_plan *p, bool *scan, size_t *bound);

#endif
