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

#endif
