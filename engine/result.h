/*
** result.h: the results of a disruption pass and of the VM pools' round as
** plain structs, shared by the code that decides (disrupt.c, pool.c) and
** the code that reads them (the accessors and renderers in disrupt_out.c
** and pool.c). Every string a result holds lives in its own arena, so a
** result outlives the manifests and catalog it was computed from. The
** cJSON document the JSON and YAML renderings write is built from these
** structs once the run is done, never in the middle of a decision.
*/
#ifndef DT_RESULT_H
#define DT_RESULT_H

#include "model.h"

/* One NodePool's disruption budget for one reason, as the pass began. */
typedef struct dt_budget_rec {
  const char *nodepool, *reason;
  int64_t allowed; /* -1: unlimited */
  int64_t nodes, disrupting;
} dt_budget_rec;

/* A hook's failures in one run, as every result lists them under
** policyErrors: the policy's file, the hook, the last message, how many
** calls failed and whether the hook was turned off for the rest of the run. */
typedef struct dt_policy_error_rec {
  const char *policy, *hook, *message;
  int64_t count;
  bool disabled;
} dt_policy_error_rec;
typedef DT_VEC(dt_policy_error_rec) dt_policy_error_vec;

/* Append the failures policy p has on record to v, strings copied into a;
** DT_ENOMEM or 0. */
int dt__policy_errors_take(const dt_policy *p, dt_arena *a, dt_policy_error_vec *v);

/* o.policyErrors = the records, each {policy, hook, message, count, disabled}. */
void dt__json_put_policy_errors(cJSON *o, const dt_policy_error_rec *v, size_t n);

struct dt_disruption {
  dt_arena arena;
  DT_VEC(dt_command_info) commands;
  DT_VEC(dt_blocked_info) blocked;
  DT_VEC(dt_budget_rec) budgets;
  bool has_budgets;
  DT_VEC(const char *) notes; /* what its plans noted of the input, each once, as first noted */
  dt_symtab notes_seen;
  const char *explain_node;     /* --explain's node, NULL when none was asked for */
  DT_VEC(const char *) explain; /* that node's steps */
  dt_policy_error_vec policy_errors;
  bool has_policy_errors; /* a policy was given */
  cJSON *root;            /* the document, built from the above by dt__disrupt_doc_build */
  dt_disrupt_stats stats;
};

/* Build d->root from the result; 0 or DT_ENOMEM. */
int dt__disrupt_doc_build(dt_disruption *d, int64_t now);

/* One action of a pool's round: the public part and what the document
** adds to it. */
typedef struct dt_pool_act {
  dt_pool_action_info info;
  const char **reuses; /* info.reuses_volumes, NULL when none were found */
  cJSON *object;       /* the VirtualMachine as it is to be (owned by the result); NULL none */
} dt_pool_act;

/* One pool of the round, with its actions acts[first .. first + n). */
typedef struct dt_pool_rec {
  dt_pool_info info;
  bool has_max_unavailable, has_outdated;
  DT_VEC(const char *) notes;
} dt_pool_rec;

struct dt_pools {
  dt_arena arena;
  DT_VEC(dt_pool_rec) pools;
  DT_VEC(dt_pool_act) acts;
  DT_VEC(const char *) notes; /* VMs owned by pools not in the input */
  dt_policy_error_vec policy_errors;
  bool has_policy_errors;         /* a policy was given */
  DT_VEC(dt_pool_create) creates; /* for dt_plan_run: VMs that will need capacity */
  cJSON *root;                    /* the document, built from the above by dt__pools_doc_build */
  dt_pools_stats stats;
};

/* Build r->root from the result; 0 or DT_ENOMEM. */
int dt__pools_doc_build(dt_pools *r, int64_t now);

/* A new claim as a plan's JSON writes it (plan.c), or with replacement as a
** disruption command's replacement: apiVersion and kind first, and neither
** a reservation nor requests. */
cJSON *dt__claim_doc(const dt_claim_info *k, bool replacement);

/* ------------------------------------------------------------ plans */

/* A plan's results: everything its accessors and renderings read, built by
** dt__plan_result_build once the solver is done (plan_result.c) and read by
** the renderer (plan.c). Every string lives in arena. */
typedef struct dt_binding_info {
  const char *pod, *node;
  bool claim; /* node is a NodeClaim in flight, not a Node */
  bool virt;  /* pod is a CapacityBuffer's chunk: held there, never nominated */
} dt_binding_info;

/* One requirement of a NodeClaim as it is written: the key, the operator,
** the values (sorted by name) and minValues; num: the one value of Gt, Lt,
** Gte or Lte, NULL for the other operators. */
typedef struct dt_ncreq {
  const char *key, *op;
  size_t n;
  const char *const *vals;
  int32_t min_values;
  const char *num;
} dt_ncreq;

/* What a NodePool gives each of its NodeClaims. */
typedef struct dt_claim_pool {
  const char *name, *uid, *termination_grace; /* uid, termination_grace: NULL when absent */
  dt_kvs labels, annotations;
  cJSON *node_class_ref;              /* owned by the result; NULL when absent */
  const char *class_key, *class_name; /* the node class label (<group>/<kind>), NULL when the ref lacks one */
  uint64_t hash;
  bool has_nc;                               /* its EC2NodeClass is in the input: */
  uint64_t nc_hash;                          /* its drift hash */
  const char *nc_k_hash, *nc_k_hash_version; /* Karpenter's hash annotations on it, NULL none */
  size_t nzones;                             /* its subnets' zones and their zone IDs (NULL unknown) */
  const char **zones, **zone_ids;
  int64_t expire_after; /* seconds; -1 Never */
  size_t ntaints, nstartup;
  const dt_taint *taints, *startup;
  bool used; /* a new claim is of this pool */
} dt_claim_pool;

/* What an instance type gives the NodeClaims launched as it. */
typedef struct dt_claim_type {
  dt_kvs labels;
  size_t nalloc;
  const dt_resource_info *alloc; /* allocatable, the plan's resources in order, zeros left out */
} dt_claim_type;

/* What a claim's NodeClaim object needs beyond its dt_claim_info. */
typedef struct dt_claim_rec {
  uint32_t pool, type; /* into the result's pools and types */
  size_t ncustom;
  const dt_kv *custom; /* labels for requirements no type defines, each set unless already set */
  /* The requirements as the plan writes them: first the claim's instance
  ** types, zones and capacity types (and reservation when pinned to one),
  ** nfixed of them; then the others, in the claim's order; unsorted. The
  ** launched claim pins the first ones to its offering instead, and leaves
  ** out others[resv_lo .. resv_hi) (a reservation requirement the offering's
  ** reservation replaces) when it has one. */
  size_t nreqs, nfixed, resv_lo, resv_hi;
  const dt_ncreq *reqs;
} dt_claim_rec;

/* An offering the manifests marked unavailable, in force for the plan. */
typedef struct dt_mark_rec {
  const char *capacity_type, *instance_type, *zone;
  int64_t expires;
} dt_mark_rec;

typedef struct dt_plan_result {
  dt_arena arena;
  size_t nclaims, nbindings, nunsched, npools, ntypes, nmarks, nnotes;
  dt_claim_info *claims;
  dt_claim_rec *recs; /* recs[i]: the rest of claims[i]'s NodeClaim */
  dt_claim_pool *pools;
  dt_claim_type *types;
  dt_binding_info *bindings;
  dt_unschedulable_info *unsched;
  dt_mark_rec *marks;
  const char **notes;
  dt_policy_error_vec policy_errors; /* every policy's, in the order the plan used them */
  dt_plan_stats stats;
  size_t bound_already, existing_nodes;
  int64_t now;
  bool timings;
  double parse_ms;
} dt_plan_result;

/* Free r's arena and what it owns. */
void dt__plan_result_free(dt_plan_result *r);

/* The plan's document (kind Plan), its renderings and claim i's NodeClaim
** object (plan.c); NULL when out of memory. */
cJSON *dt__plan_result_doc(const dt_plan_result *r);
char *dt__plan_result_render(const dt_plan_result *r, dt_format format, size_t *len);
int dt__plan_result_write(const dt_plan_result *r, dt_format format, dt_write_fn write, void *ud);
char *dt__plan_result_claim_object(const dt_plan_result *r, size_t i, bool launched, size_t *len);

/* Whether claim i's NodeClaim, as -o yaml writes it, leaves its pods out
** of dovetail.dev/pods (writing dovetail.dev/pods-omitted: their count):
** their names with its template's annotations would pass the 256 KiB the
** API server allows all of an object's annotations (plan_result.c). */
bool dt__claim_pods_omitted(const dt_plan_result *r, size_t i);

#endif
