/*
** dovetail.h: the public C API of libdovetail.
**
** dovetail decides what capacity to launch for pending pods. A run takes an
** immutable catalog (instance types and their offerings), an immutable set of
** manifests (NodePools, Pods, workloads, Nodes, NodeClaims) and options (the
** clock), and returns a plan. The core is pure: the same inputs give a
** byte-identical plan.
**
** Conventions, as in libuv and SQLite:
**   - every function that can fail returns 0 or a negative DT_E* code and, when
**     given a non-NULL dt_error, fills it with a message a person can act on
**     (file, object, field, what was expected);
**   - every object is created by dt_thing_new/_load and released by
**     dt_thing_free; the comment at each declaration says who owns memory;
**   - all memory goes through one allocator, replaceable by dt_set_allocator
**     (used by the tests to inject failures).
*/
#ifndef DOVETAIL_H
#define DOVETAIL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DT_VERSION "0.1.0"

/* The library's public symbols; everything else in libdovetail.so is hidden
** (it is built with -fvisibility=hidden), as libuv's UV_EXTERN. */
#if defined(__GNUC__)
#define DT_EXPORT __attribute__((visibility("default")))
#else
#define DT_EXPORT
#endif

/* Error codes (negative). */
#define DT_EINVAL    (-1) /* bad input: manifest, catalog, quantity, option */
#define DT_ENOMEM    (-2) /* allocation failed */
#define DT_EIO       (-3) /* a file could not be read */
#define DT_ERANGE    (-4) /* a number outside what dovetail accepts */
#define DT_ELIMIT    (-5) /* an input past one of the limits below */
#define DT_ECANCELED (-6) /* the caller's cancel flag stopped a run */

/* A short description of an error code ("out of memory"); never NULL. */
DT_EXPORT const char *dt_strerror(int code);

/* Limits on input, so that the cost of reading anything is bounded by its
** size. Each is refused with a message that names the limit and where it was
** exceeded. Real clusters stay far inside them. */
#define DT_MAX_INPUT_BYTES (1024L * 1024 * 1024) /* one manifest, catalog or state file */
#define DT_MAX_DEPTH       256                   /* nesting of mappings and sequences */
#define DT_MAX_KEYS        65536                 /* keys in one mapping */
#define DT_MAX_ALIAS_NODES 100000                /* nodes YAML aliases may copy, per file */
#define DT_MAX_REPLICAS    1000000               /* replicas of one workload or VM pool */
#define DT_MAX_PODS        2000000               /* pods of all inputs together, replicas expanded */
#define DT_MAX_TYPES       10000                 /* instance types in one catalog (AWS us-east-1 has about 1,400) */
#define DT_MAX_PRICE       1e6                   /* $/hour of one offering */
#define DT_MAX_TERMS       255                   /* a pod's terms of one kind (node affinity, preferences, spreads) */

/* An error description. Filled by functions that fail; msg is always
** NUL-terminated. Caller-owned, usually on the stack. */
typedef struct dt_error {
  int code;
  char msg[1024];
} dt_error;

/* Replace the allocator used by libdovetail, cJSON and libyaml buffers that
** dovetail owns. Must be called before any other function. NULL restores the
** C library's malloc/realloc/free. */
DT_EXPORT void dt_set_allocator(void *(*malloc_fn)(size_t), void *(*realloc_fn)(void *, size_t),
                                void (*free_fn)(void *));

/* Free memory returned by dovetail (rendered plans, strings). */
DT_EXPORT void dt_free(void *p);

/* ------------------------------------------------------------------------
** Quantities
** ---------------------------------------------------------------------- */

/* Parse a Kubernetes quantity ("250m", "1.5Gi", "1e3", "129e6", "2") into its
** value times 1000, rounded up as Kubernetes does (so "100m" -> 100, "1" ->
** 1000, "1Ki" -> 1024000). Negative values are accepted here; callers that
** need a request reject them. Returns DT_EINVAL on garbage, DT_ERANGE when the
** milli-value does not fit in an int64. */
DT_EXPORT int dt_quantity_parse(const char *s, int64_t *milli, dt_error *err);

/* ------------------------------------------------------------------------
** Catalog: instance types, offerings and reservations
** ---------------------------------------------------------------------- */

typedef struct dt_catalog dt_catalog;

/* Load a catalog from a JSON file (see DESIGN "Inputs"). On success *out owns
** the catalog; release it with dt_catalog_free. */
DT_EXPORT int dt_catalog_load_file(const char *path, dt_catalog **out, dt_error *err);

/* Load a catalog from a buffer; name is used in error messages. The buffer is
** copied as needed; the caller keeps ownership of buf. */
DT_EXPORT int dt_catalog_load_buffer(const char *name, const char *buf, size_t len, dt_catalog **out, dt_error *err);

/* Load the bundled catalog (AWS us-east-1, compiled into the library). */
DT_EXPORT int dt_catalog_load_default(dt_catalog **out, dt_error *err);

/* Load a catalog by name or path, as the command's --catalog takes it: a
** value naming an existing file (or "-", standard input) is read as a file;
** otherwise it names a bundled catalog ("aws-us-east-1", "azure-eastus"); a
** value that is neither fails with DT_EINVAL and a message listing the
** bundled names (one that looks like a path, with a '/' or a .json, .yaml
** or .yml ending, fails as the file it names). NULL loads the default.
** Files may be in dovetail's catalog format or Karpenter's KWOK
** instance-type list. On success *out owns the catalog (dt_catalog_free). */
DT_EXPORT int dt_catalog_load_named(const char *name_or_path, dt_catalog **out, dt_error *err);

/* The name of bundled catalog i (the default is 0), NULL past the last.
** Static strings. */
DT_EXPORT const char *dt_catalog_bundled(size_t i);

/* The catalog written out in dovetail's catalog format, whatever format it
** was read from: offerings explicit, overhead where the file gave it, labels
** the file gave (derived ones are derived again on loading). Loading the text
** gives a catalog that plans identically. The caller frees it with dt_free;
** NULL on allocation failure. *len (if non-NULL) gets its length. */
DT_EXPORT char *dt_catalog_json(const dt_catalog *c, size_t *len);

/* Number of instance types in a catalog. */
DT_EXPORT size_t dt_catalog_size(const dt_catalog *c);

/* What a catalog says about one instance type (index < dt_catalog_size).
** Strings point into the catalog and live as long as it does. */
typedef struct dt_type_info {
  const char *name;
  const char *arch;
  int64_t cpu_milli;    /* allocatable, after overhead */
  int64_t memory_bytes; /* allocatable, after overhead */
  int64_t pods;
  int64_t gpus;
  double on_demand_price; /* < 0 when unknown */
  double cheapest_price;  /* cheapest available offering, < 0 when none */
  size_t offerings;
} dt_type_info;

DT_EXPORT int dt_catalog_type(const dt_catalog *c, size_t index, dt_type_info *out);

DT_EXPORT void dt_catalog_free(dt_catalog *c);

/* ------------------------------------------------------------------------
** Manifests: the cluster as Kubernetes objects
** ---------------------------------------------------------------------- */

typedef struct dt_manifests dt_manifests;

/* An empty manifest set. NULL on allocation failure. */
DT_EXPORT dt_manifests *dt_manifests_new(void);

/* Parse a YAML (multi-document) or JSON file, single objects or kind: List,
** and add its objects. path "-" reads standard input. On error nothing from
** that file is added and err names the file, the object and the field. */
DT_EXPORT int dt_manifests_add_file(dt_manifests *m, const char *path, dt_error *err);

/* The cluster's default topology spread constraints, from the document
** Karpenter's --scheduler-config takes (podTopologySpread.defaultConstraints):
** each pod of m that declares none of its own gets them, with the selector
** kube-scheduler deduces for it (its Services', its ReplicaSet's or
** StatefulSet's). Call after every input is added. "-" reads standard input. */
DT_EXPORT int dt_manifests_scheduler_config(dt_manifests *m, const char *path, dt_error *err);

/* What depends on the whole input, made once every input is added: the
** chunks of its CapacityBuffers (virtual pods), and the virt-launcher pods
** of VMs sized by KubeVirt instancetypes. A plan or disruption pass
** over m, and dt_manifests_scheduler_config, call it when the caller has
** not; call it first to read its notes before them. */
DT_EXPORT int dt_manifests_finish(dt_manifests *m, dt_error *err);

/* As dt_manifests_add_file, from a buffer; name labels error messages. */
DT_EXPORT int dt_manifests_add_buffer(dt_manifests *m, const char *name, const char *buf, size_t len, dt_error *err);

/* Notes gathered while parsing (unknown kinds skipped, ...), one per line;
** owned by m, valid until the next add or free. Never NULL. */
DT_EXPORT const char *dt_manifests_notes(const dt_manifests *m);

/* The number of NodePools, and the policy name NodePool i asks for with the
** dovetail.dev/policy annotation (NULL if none). Owned by m. */
DT_EXPORT size_t dt_manifests_nodepools(const dt_manifests *m);
DT_EXPORT const char *dt_manifests_nodepool_policy(const dt_manifests *m, size_t i);

DT_EXPORT void dt_manifests_free(dt_manifests *m);

/* ------------------------------------------------------------------------
** Plans
** ---------------------------------------------------------------------- */

typedef struct dt_policy dt_policy; /* see "Policies" below */

typedef enum dt_format { DT_FORMAT_JSON = 0, DT_FORMAT_YAML = 1, DT_FORMAT_TABLE = 2 } dt_format;

typedef enum dt_packing {
  DT_PACKING_COST = 0, /* first-fit-decreasing, then a re-pack kept only when strictly cheaper */
  DT_PACKING_FFD = 1   /* Karpenter's first-fit-decreasing, exactly */
} dt_packing;

typedef struct dt_plan_opts {
  int64_t now;   /* the clock, Unix seconds; 0 = 2000-01-01T00:00:00Z */
  uint64_t seed; /* for decisions that need randomness; names are derived from it */
  int timings;   /* non-zero: include phase timings (not byte-stable) in the summary */
  dt_packing packing;
  double parse_ms;                 /* time the caller spent parsing, reported when timings is set */
  dt_policy *policy;               /* optional: hooks for every NodePool */
  dt_policy *const *pool_policies; /* optional: policies named by NodePools' dovetail.dev/policy */
  const char *const *pool_policy_names;
  size_t npool_policies;
  const char *explain;        /* optional: a pending pod ("namespace/name", or "name" when unique) whose
                       ** every step is recorded; see dt_plan_explain_render */
  const volatile int *cancel; /* optional: once *cancel is non-zero (set from another thread), the run
                              ** stops at its next check and returns DT_ECANCELED with nothing decided */
} dt_plan_opts;

typedef struct dt_plan dt_plan;

/* ------------------------------------------------------------------------
** Policies: Lua 5.4 files returning a table of hooks (see docs/policies.md)
** ---------------------------------------------------------------------- */

/* Limits of a policy's sandbox; zero fields take the defaults shown. */
typedef struct dt_policy_limits {
  size_t memory_bytes;   /* per Lua state: 64 MiB */
  uint64_t instructions; /* per hook call: 50,000,000 VM instructions */
  double wall_ms;        /* per hook call: 250 ms */
  unsigned max_failures; /* consecutive failures before a hook is disabled: 5 */
} dt_policy_limits;

/* Load and validate a policy: syntax (file:line), the returned table, hook
** names and types, the policy's own selftest() if defined, and each hook on a
** golden input. On success *out owns the policy; free with dt_policy_free.
** A policy object is not thread-safe: one plan at a time. */
DT_EXPORT int dt_policy_load_file(const char *path, const dt_policy_limits *limits, dt_policy **out, dt_error *err);

/* As dt_policy_load_file from a buffer; name is used as the chunk name. */
DT_EXPORT int dt_policy_load_buffer(const char *name, const char *buf, size_t len, const dt_policy_limits *limits,
                                    dt_policy **out, dt_error *err);

/* Hot swap: re-read the policy's file, build and validate a new state, and
** swap it in atomically. On any error the old state stays in force and the
** error is returned. *changed (if non-NULL) tells whether anything changed:
** reloading an unchanged file is a no-op. */
DT_EXPORT int dt_policy_reload(dt_policy *p, int *changed, dt_error *err);

/*
** The policies NodePools name with the dovetail.dev/policy annotation, read
** from a directory as NAME.lua. dt_policy_dir_sync loads the ones the
** manifests name and reloads those whose file changed; a policy that is
** missing or broken is left out (its NodePool falls back to the built-in
** defaults) and its error is kept, so one bad file never stops other pools.
** dt_policy_dir_errors: the errors of the last sync, one per line ("" when
** none), owned by d. dt_policy_dir_apply points opts at the loaded
** policies; they stay valid until the next sync or dt_policy_dir_free.
*/
typedef struct dt_policy_dir dt_policy_dir;
DT_EXPORT int dt_policy_dir_open(const char *dir, dt_policy_dir **out, dt_error *err);
DT_EXPORT void dt_policy_dir_sync(dt_policy_dir *d, const dt_manifests *m);
DT_EXPORT const char *dt_policy_dir_errors(const dt_policy_dir *d);
DT_EXPORT void dt_policy_dir_apply(const dt_policy_dir *d, dt_policy *const **policies, const char *const **names,
                                   size_t *n);
DT_EXPORT void dt_policy_dir_free(dt_policy_dir *d);

/* The hooks the policy overrides, space-separated ("price rank"). Owned by p. */
DT_EXPORT const char *dt_policy_hooks(const dt_policy *p);

/* The lines the policy wrote with dovetail.log since it was loaded or the
** log was last cleared, each "file:line: level: message\n" ("" when none;
** at most 64 KiB are kept). Owned by p, valid until the next call into p. */
DT_EXPORT const char *dt_policy_log(const dt_policy *p);
DT_EXPORT void dt_policy_log_clear(dt_policy *p);

DT_EXPORT void dt_policy_free(dt_policy *p);

/* Run the scheduler: pending pods are placed on existing and in-flight nodes,
** then on new node claims. Pure: no I/O, no clock other than opts->now.
** catalog and manifests are only read and may be shared between threads.
** On success *out owns the plan; release it with dt_plan_free. The plan
** holds its results and does not read catalog or manifests after the run:
** they may be freed first. */
DT_EXPORT int dt_plan_run(const dt_catalog *catalog, const dt_manifests *manifests, const dt_plan_opts *opts,
                          dt_plan **out, dt_error *err);

/* Render a plan. Returns a NUL-terminated string the caller frees with
** dt_free, or NULL on allocation failure; *len (if non-NULL) gets its length. */
DT_EXPORT char *dt_plan_render(const dt_plan *plan, dt_format format, size_t *len);

/* Where dt_plan_write sends a rendering, a piece at a time: len bytes at
** data (not NUL-terminated, valid only during the call); nonzero stops the
** rendering. */
typedef int (*dt_write_fn)(void *ud, const char *data, size_t len);

/* The same bytes as dt_plan_render, handed to write in pieces of about 64
** KiB as they are rendered, so a plan of tens of thousands of nodes is
** never whole in memory as text or as a document tree. Returns 0, DT_ENOMEM,
** or DT_EIO when write returned nonzero (what was written stays written). */
DT_EXPORT int dt_plan_write(const dt_plan *plan, dt_format format, dt_write_fn write, void *ud);

/* With opts->explain: why that pod went where it went (the NodePools and
** nodes considered and why each did not take it, the offering launched for
** it and the cheaper ones not chosen, or why it is unschedulable), as text
** (DT_FORMAT_TABLE) or a PlanExplanation document (JSON or YAML). NULL when
** the plan was run without explain or on allocation failure; the caller
** frees with dt_free. dt_plan_run fails with DT_EINVAL, naming the pod, when
** the pod is not among the plan's pods. */
DT_EXPORT char *dt_plan_explain_render(const dt_plan *plan, dt_format format, size_t *len);

/* Figures of a plan. */
typedef struct dt_plan_stats {
  size_t pods;      /* pending pods considered */
  size_t scheduled; /* placed on new claims or existing nodes */
  size_t unschedulable;
  size_t nodes;       /* new node claims */
  double hourly_cost; /* sum of the chosen offerings' prices */
  double schedule_ms; /* wall time of the scheduling phase */
} dt_plan_stats;

DT_EXPORT void dt_plan_stats_get(const dt_plan *plan, dt_plan_stats *out);

/* The plan's bindings of pending pods to existing nodes and in-flight
** claims, in plan order: pod i as "namespace/name" into pod (n bytes), and
** *node the node's name (owned by the plan, valid until dt_plan_free).
** Returns DT_ERANGE past the end. */
DT_EXPORT size_t dt_plan_binding_count(const dt_plan *plan);
DT_EXPORT int dt_plan_binding(const dt_plan *plan, size_t i, char *pod, size_t n, const char **node);

/*
** Reading a plan's decisions, as sqlite3_column_*: a count, and a get by
** index that fills a caller's struct. The struct's strings and arrays point
** into the plan's own result arena: they stay valid, unchanged, until
** dt_plan_free, and the caller never frees them. The getters return 0, or
** DT_ERANGE (out untouched) when i is past the count. They read what the
** plan's renderings print, in the same order: dt_plan_claim(plan, i) is the
** i-th entry of the JSON's nodeClaims and the i-th NodeClaim of the YAML.
*/

/* A resource of a claim: its name ("cpu", "memory", "pods", an extended
** resource), the canonical quantity the plan prints ("1500m", "512Mi") and
** the value times 1000 (as dt_quantity_parse gives it). */
typedef struct dt_resource_info {
  const char *name;
  const char *quantity;
  int64_t milli;
} dt_resource_info;

/* A label: its key and value. */
typedef struct dt_label_info {
  const char *key, *value;
} dt_label_info;

/* A new node claim: the offering it launches as and the pods it takes. */
typedef struct dt_claim_info {
  const char *name; /* the NodeClaim's metadata.name */
  const char *nodepool;
  const char *instance_type;
  const char *zone;
  const char *capacity_type;  /* "on-demand", "spot" or "reserved" */
  const char *reservation_id; /* the capacity reservation launched into; NULL unless reserved */
  double price;               /* $/hour of the offering */
  size_t npods;
  const char *const *pods; /* "namespace/name", in the order the plan placed them */
  size_t nrequests;
  const dt_resource_info *requests; /* what its pods request, resources not requested left out */
  size_t noptions;
  const char *const *instance_type_options; /* the types it may launch as, cheapest first */
  /* The labels its requirements give it beyond its NodePool's and its
  ** type's, as Karpenter's custom labels: a value a pod requires, or one a
  ** topology spread took (capacity-spread: 3). A replacement carries them. */
  size_t nlabels;
  const dt_label_info *labels;
  /* of pods, the last nvirtual are CapacityBuffers' chunks (virtual pods):
  ** they size the claim but no pod is nominated to it for them */
  size_t nvirtual;
  /* NodeOverlays changed the price (of an offering), or the capacity, of
  ** one of its options on its NodePool: Karpenter's
  ** karpenter.sh/price-overlay-applied and capacity-overlay-applied */
  int price_overlaid, capacity_overlaid;
} dt_claim_info;

DT_EXPORT size_t dt_plan_claim_count(const dt_plan *plan);
DT_EXPORT int dt_plan_claim(const dt_plan *plan, size_t i, dt_claim_info *out);

/* Claim i's NodeClaim object (karpenter.sh/v1) as JSON text, ready for the
** API server: what `plan -o yaml` prints for it. With launched, the claim
** as the daemon launches it: its instance-type requirement pinned to the
** planned type alone (the plan already met its minValues). The caller frees
** it with dt_free; NULL when i is past the count or out of memory. */
DT_EXPORT char *dt_plan_claim_object(const dt_plan *plan, size_t i, int launched, size_t *len);

/* A pending pod the plan could place nowhere, and why (the message the
** renderings print). */
typedef struct dt_unschedulable_info {
  const char *pod; /* "namespace/name" */
  const char *reason;
} dt_unschedulable_info;

DT_EXPORT size_t dt_plan_unschedulable_count(const dt_plan *plan);
DT_EXPORT int dt_plan_unschedulable(const dt_plan *plan, size_t i, dt_unschedulable_info *out);

DT_EXPORT void dt_plan_free(dt_plan *plan);

/* ------------------------------------------------------------------------
** VM pools: KubeVirt VirtualMachinePools converged (see README "VM pools")
** ---------------------------------------------------------------------- */

typedef struct dt_pool_opts {
  int64_t now;       /* the clock, Unix seconds; 0 = 2000-01-01T00:00:00Z */
  uint64_t seed;     /* the Random selection policy's seed */
  dt_policy *policy; /* optional: its scale_in hook may reorder scale-in candidates */
} dt_pool_opts;

typedef struct dt_pools dt_pools;

/* Compute the actions that converge every VirtualMachinePool in manifests:
** VMs to create, delete, update and heal, VMs detached, and what waits.
** Pure and deterministic. On success *out owns the result (dt_pools_free). */
DT_EXPORT int dt_pools_run(const dt_manifests *manifests, const dt_pool_opts *opts, dt_pools **out, dt_error *err);

/* Render as JSON, YAML or a table; the caller frees with dt_free. NULL on
** allocation failure. */
DT_EXPORT char *dt_pools_render(const dt_pools *r, dt_format format, size_t *len);

typedef struct dt_pools_stats {
  size_t pools, create, del, update, heal, detached, waiting;
  double run_ms; /* wall time of dt_pools_run */
} dt_pools_stats;

DT_EXPORT void dt_pools_stats_get(const dt_pools *r, dt_pools_stats *out);

/*
** Reading the pool actions, as the plan's claims are read (see "Reading a
** plan's decisions"): strings point into the result and stay valid until
** dt_pools_free; the getters return 0 or DT_ERANGE past the count. Actions
** come pool by pool (pools by namespace, then name), each pool's in the
** order they were decided: heals, then creations or deletions, then updates,
** with the VMs detached and those left waiting among them.
*/
typedef enum dt_pool_list {
  DT_POOL_CREATE = 0,   /* a VM to create (its object in the result) */
  DT_POOL_DELETE = 1,   /* a VM to delete */
  DT_POOL_UPDATE = 2,   /* an outdated VM to update: action says how */
  DT_POOL_HEAL = 3,     /* a failing VM: action "recreate", or "wait" for its backoff or the burst limit */
  DT_POOL_DETACHED = 4, /* a VM whose labels left the selector: released from the pool */
  DT_POOL_WAITING = 5   /* a VM (or, vm NULL, a number of VMs) held back for the burst limit or maxUnavailable */
} dt_pool_list;

typedef struct dt_pool_action_info {
  const char *ns;       /* the pool's namespace */
  const char *pool;     /* the VirtualMachinePool's name */
  dt_pool_list list;    /* which of the pool's lists the action is in */
  const char *vm;       /* the VirtualMachine's name; NULL for a count of VMs waiting */
  const char *action;   /* "recreate", "wait", "restart", "apply", "wait-for-halt"; NULL when the list says it */
  const char *reason;   /* why, as the renderings print it */
  int64_t count;        /* VMs the action stands for: 1, or the count of VMs waiting */
  const char *wait_for; /* DT_POOL_WAITING: "burst", "maxUnavailable" or "halt"; else NULL */
  int preserve_state;   /* deletions and re-creating heals: 0 or 1 (the pool's preserve policy); else -1 */
  int64_t attempt;      /* DT_POOL_HEAL: the healing attempt (1 first); else 0 */
  int64_t failures;     /* DT_POOL_HEAL: the VM's consecutive start failures */
  int64_t next_allowed; /* DT_POOL_HEAL: Unix seconds from which the attempt may run */
  size_t nreuses;
  const char *const *reuses_volumes; /* DT_POOL_CREATE: data volumes already there that the VM takes over */
} dt_pool_action_info;

DT_EXPORT size_t dt_pools_action_count(const dt_pools *r);
DT_EXPORT int dt_pools_action(const dt_pools *r, size_t i, dt_pool_action_info *out);

/* Action i's VirtualMachine as it is to be (creations, updates, re-creating
** heals) as JSON text, freed by the caller with dt_free; NULL when the
** action carries no object, i is past the count, or out of memory. */
DT_EXPORT char *dt_pools_action_object(const dt_pools *r, size_t i, size_t *len);

/* A pool of the round: its figures and its actions, which are actions
** first_action .. first_action + nactions - 1 of dt_pools_action. */
typedef struct dt_pool_info {
  const char *ns, *name;
  int64_t replicas;                    /* spec.replicas */
  int64_t current, ready, unavailable; /* its VMs (selector matched), ready ones, and the others */
  int64_t max_unavailable;             /* the updates' maxUnavailable */
  int64_t outdated;                    /* VMs whose template changed; -1 when not looked at (a paused pool) */
  const char *template_hash;           /* the hash its VMs are stamped with (dovetail.dev/template-hash) */
  size_t first_action, nactions;
} dt_pool_info;

DT_EXPORT size_t dt_pools_pool_count(const dt_pools *r);
DT_EXPORT int dt_pools_pool(const dt_pools *r, size_t i, dt_pool_info *out);
DT_EXPORT void dt_pools_free(dt_pools *r);

/* ------------------------------------------------------------------------
** Disruption: what to take away (see README "Disruption")
** ---------------------------------------------------------------------- */

typedef struct dt_disrupt_opts {
  int64_t now;                     /* the clock, Unix seconds; 0 = 2000-01-01T00:00:00Z */
  uint64_t seed;                   /* names of replacement NodeClaims */
  dt_policy *policy;               /* optional: consolidation_order, approve and budget hooks (and price, rank) */
  int spot_to_spot;                /* non-zero: allow spot-to-spot consolidation (Karpenter's feature gate, off) */
  const char *explain;             /* optional: a node whose every step is recorded in the result's explain[] */
  dt_policy *const *pool_policies; /* optional: policies named by NodePools, as dt_plan_opts */
  const char *const *pool_policy_names;
  size_t npool_policies;
  const volatile int *cancel; /* optional: as dt_plan_opts */
  /* optional: the only nodes the pass may take away, by name (a NodeClaim's
  ** or its Node's), sorted by strcmp; the others are left alone ("not
  ** managed here") but still hold pods and count in budgets. NULL: every node. */
  const char *const *managed;
  size_t nmanaged;
  /* non-zero: no multi- or single-node consolidation this pass, as Karpenter
  ** skips it while the cluster is "consolidated" (the caller knows that
  ** nothing changed since a pass whose stats said consolidated) */
  int skip_consolidation;
  /* optional: pending pods ("namespace/name", or a workload's
  ** "namespace/name-<ordinal>") that a plan placed on existing nodes (by
  ** name), held there as pods nominated to a claim are: consolidation
  ** does not hand their room to a candidate's pods, as Karpenter's
  ** simulation schedules the pending pods too. A pod nominated to a claim,
  ** or bound, keeps that. */
  const char *const *assumed_pods, *const *assumed_nodes;
  size_t nassumed;
  /* optional: nodes (by name, as managed) running pods the caller left out
  ** of manifests (it could not read them), sorted by strcmp: never taken
  ** away, not even when expired, and no destination for other pods, since
  ** what they hold is not known */
  const char *const *held_nodes;
  size_t nheld;
} dt_disrupt_opts;

typedef struct dt_disruption dt_disruption;

/* One disruption pass over the cluster in manifests: emptiness, drift,
** expiry, multi-node and single-node consolidation in that order, under the
** NodePools' budgets. Pure and deterministic. On success *out owns the
** result (dt_disrupt_free). */
DT_EXPORT int dt_disrupt_run(const dt_catalog *catalog, const dt_manifests *manifests, const dt_disrupt_opts *opts,
                             dt_disruption **out, dt_error *err);

/* Render as JSON, YAML or a table; the caller frees with dt_free. */
DT_EXPORT char *dt_disrupt_render(const dt_disruption *d, dt_format format, size_t *len);

typedef struct dt_disrupt_stats {
  size_t nodes; /* nodes considered */
  size_t commands, disrupted, blocked;
  size_t simulations; /* plans run: the candidates simulated, and the screen's plans of the cluster */
  size_t screened;    /* single-node candidates refused without a simulation (they could only be refused) */
  double savings;     /* $/hour */
  double run_ms;
  /* consolidation ran and found nothing that time alone can change: no
  ** candidate held back by a budget, no node inside its consolidateAfter
  ** window, no pod's do-not-disrupt until a time, no policy hook that read
  ** the clock or math.random. Until the cluster changes, a pass would find
  ** nothing again (Karpenter's markConsolidated). */
  int consolidated;
} dt_disrupt_stats;

DT_EXPORT void dt_disrupt_stats_get(const dt_disruption *d, dt_disrupt_stats *out);

/*
** Reading a disruption pass's decisions, as a plan's (see "Reading a plan's
** decisions"): strings and arrays point into the result and stay valid
** until dt_disrupt_free; the getters return 0 or DT_ERANGE past the count.
** Commands come in the order the pass made them, which is the order to
** carry them out in.
*/

/* A node a command takes away. */
typedef struct dt_disrupt_node_info {
  const char *name;
  const char *nodepool;
  const char *instance_type; /* NULL when the node does not say */
  const char *zone;          /* NULL when the node does not say */
  const char *capacity_type; /* NULL when the node does not say */
  double price;              /* $/hour of its offering; 0 when unknown */
  size_t pods;               /* pods on it, DaemonSet pods aside */
} dt_disrupt_node_info;

/* A command: nodes to delete, or to replace by the replacements (new node
** claims, launched first). A replacement is a dt_claim_info whose pods are
** the pods of the command's nodes it takes; its requests are empty and its
** reservation_id NULL. */
typedef struct dt_command_info {
  const char *reason; /* "Empty", "Drifted", "Expired", "Underutilized", ... */
  const char *action; /* "delete" or "replace" */
  const char *detail; /* more on the reason; NULL when none */
  double savings;     /* $/hour: the nodes' prices less the replacements' */
  size_t nnodes;
  const dt_disrupt_node_info *nodes;
  size_t nreplacements;
  const dt_claim_info *replacements;
} dt_command_info;

DT_EXPORT size_t dt_disrupt_command_count(const dt_disruption *d);
DT_EXPORT int dt_disrupt_command(const dt_disruption *d, size_t i, dt_command_info *out);

/* A node the pass left alone, and why. */
typedef struct dt_blocked_info {
  const char *node;
  const char *reason;
} dt_blocked_info;

DT_EXPORT size_t dt_disrupt_blocked_count(const dt_disruption *d);
DT_EXPORT int dt_disrupt_blocked(const dt_disruption *d, size_t i, dt_blocked_info *out);
DT_EXPORT void dt_disrupt_free(dt_disruption *d);

/* Parse an RFC 3339 timestamp ("2026-11-22T10:00:00Z", offsets allowed) into
** Unix seconds. */
DT_EXPORT int dt_time_parse(const char *s, int64_t *out, dt_error *err);

#ifdef __cplusplus
}
#endif
#endif
