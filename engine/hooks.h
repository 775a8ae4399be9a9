/*
** hooks.h: the hooks the engine calls (internal). The engine declares them;
** lua/policy.c implements them on Lua policy files (the public half,
** dt_policy_*, is in dovetail.h). So the engine includes nothing of lua/,
** and lua/ includes only the engine's headers.
**
** The hooks are functions bound at link time rather than a table of
** callbacks: there is one implementation, and the hot paths (price, score,
** rank per offering) pay no indirection. Another policy language would
** implement the same functions.
*/
#ifndef DT_HOOKS_H
#define DT_HOOKS_H

#include "internal.h"

enum {
  DT_HOOK_PRICE,
  DT_HOOK_RANK,
  DT_HOOK_CONSOLIDATION_ORDER,
  DT_HOOK_APPROVE,
  DT_HOOK_BUDGET,
  DT_HOOK_ON_INTERRUPTION,
  DT_HOOK_SCALE_IN,
  DT_HOOK_SCORE,
  DT_HOOK_N
};

extern const char *const dt__hook_names[DT_HOOK_N];

/* One offering as hooks see it. */
typedef struct dt_hook_offer {
  const char *instance_type, *zone, *capacity_type, *reservation;
  double price, on_demand_price;
  int64_t available; /* -1 unbounded */
  int64_t cpu_milli, memory_bytes, gpus;
  const char *family, *arch;
} dt_hook_offer;

/* A claim as the rank hook sees it. */
typedef struct dt_hook_claim {
  const char *node_pool;
  size_t pods;
  int64_t cpu_milli, memory_bytes;
  size_t spot_in_pool, nodes_in_pool; /* launched so far in this plan, for ratio policies */
} dt_hook_claim;

/* Whether the policy defines a hook (and it is not disabled). */
bool dt__policy_has(const dt_policy *p, int hook);

/*
** Begin a decision round: the clock and seed hooks see, and the offering
** snapshot shared (read-only) by every call of this round. token, when not
** 0, names the snapshot's content (the same token, the same offerings): a
** round with the token of the last one skips comparing them. Returns 0 or an
** error if the snapshot cannot be built (the caller then uses defaults).
*/
int dt__policy_round(dt_policy *p, int64_t now, uint64_t seed, const dt_hook_offer *offers, size_t n, uint64_t token);
void dt__policy_round_end(dt_policy *p);

/*
** A disruption pass: from pass_begin to pass_end every plan is one of the
** pass's simulations, priced alike. The price hook runs for the first plan
** and its prices (or its failure) stand for the others, while the offerings'
** table and the loaded policy stay the same. fixed: every plan of the pass
** gives the offerings its first plan gave (its plans overlay one compiled
** cluster, under the same marks and clock), so only the first is compared
** with the kept table. NULL is no policy.
*/
void dt__policy_pass_begin(dt_policy *p, bool fixed);
/* Reads of the clock and of math.random its hooks have made (0 for NULL):
** a result that read neither depends on its inputs only. */
unsigned long dt__policy_reads(const dt_policy *p);
void dt__policy_pass_end(dt_policy *p);

/* price(offerings): out[i] = price, or NAN to make the offering unavailable.
** Returns 0, or -1 when the hook failed (defaults apply; the error is recorded).
** Once per plan, or once per disruption pass (above). */
int dt__policy_price(dt_policy *p, double *out);
/* In a disruption pass whose prices the hook gave already: whether so, and
** that outcome again for a plan that starts from offerings already priced
** (a failure recorded in its errors as dt__policy_price would; -1 none). */
bool dt__policy_pass_priced(const dt_policy *p);
int dt__policy_price_repeat(dt_policy *p);

/* rank(claim, offerings): idx[] indexes the round's snapshot; score[i] is the
** score (lower wins) or NAN to exclude. Returns 0 or -1 (defaults apply). */
int dt__policy_rank(dt_policy *p, const dt_hook_claim *claim, const uint32_t *idx, size_t n, double *score);

/* score(offering), once for each of n offerings (idx[] indexes the round's
** snapshot): score[i] is the score (lower wins) or NAN to exclude. One
** protected call and one budget for the batch. Returns 0 or -1 (defaults
** apply). */
int dt__policy_score(dt_policy *p, const uint32_t *idx, size_t n, double *score);

/* A VM and its pool as the scale_in hook sees them. labels holds nlabels
** key, value pairs (2 * nlabels strings). */
typedef struct dt_hook_vm {
  const char *name, *status;
  int64_t index, created;
  bool ready, halted;
  const char *const *labels;
  size_t nlabels;
} dt_hook_vm;

typedef struct dt_hook_pool {
  const char *ns, *name;
  int64_t replicas, current, remove;
} dt_hook_pool;

/* scale_in(pool, vms): vms in the engine's order; order[] receives a
** permutation of 0..n-1 (the hook's order, then the VMs it left out in the
** engine's order). Returns 0, or -1 when the hook failed (engine order kept). */
int dt__policy_scale_in(dt_policy *p, const dt_hook_pool *pool, const dt_hook_vm *vms, size_t n, size_t *order);

/* A record passed to the disruption hooks: a table of named strings and
** numbers (kind: a string, a number or a boolean). */
typedef enum dt_hook_kind { DT_HF_STRING = 0, DT_HF_NUMBER = 1, DT_HF_BOOL = 2 } dt_hook_kind;

typedef struct dt_hook_field {
  const char *key;
  dt_hook_kind kind;
  const char *s;
  double num;
} dt_hook_field;

typedef struct dt_hook_rec {
  const dt_hook_field *f;
  size_t nf;
} dt_hook_rec;

/* consolidation_order(candidates): recs carry a "name" field; order[] as
** for scale_in. approve(command): cmd with nodes[] of recs; *ok is the
** verdict (nil counts as approval). budget(pool, reason, ctx): *allowed is
** replaced by the hook's integer (nil keeps it; -1 means unlimited in and
** out). Each returns 0, or -1 when the hook failed (the default stands). */
int dt__policy_consolidation_order(dt_policy *p, const dt_hook_rec *recs, size_t n, size_t *order);
int dt__policy_approve(dt_policy *p, const dt_hook_rec *cmd, const dt_hook_rec *nodes, size_t n, bool *ok);
int dt__policy_budget(dt_policy *p, const char *pool, const char *reason, const dt_hook_rec *ctx, int64_t *allowed);

/* on_interruption(event): event is a record (kind, instanceId, nodeClaim,
** instanceType, zone, capacityType, state). *action gets "drain", "keep-offering"
** (drain, no unavailable mark) or "ignore" (copied into action, size n); it is
** left alone when the hook returns nil. Returns 0 or -1 (default stands). */
int dt__policy_on_interruption(dt_policy *p, const dt_hook_rec *event, char *action, size_t n);

/* Errors recorded since load, for the plan's policyErrors. */
typedef struct dt_policy_err {
  const char *hook;
  const char *message; /* file:line and traceback */
  size_t count;
  bool disabled;
} dt_policy_err;
size_t dt__policy_errors(const dt_policy *p, const dt_policy_err **out);
const char *dt__policy_name(const dt_policy *p);
void dt__policy_clear_errors(dt_policy *p);
/* Whether the policy's file now holds other text than the loaded one (so a
** reload would change something). */
bool dt__policy_file_changed(const dt_policy *p);

#endif
