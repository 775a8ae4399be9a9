/*
** cluster.h: how the rest of the engine runs the solver many times on one
** input without reading its state: a catalog compiled once for many plans
** (the daemon's rounds), a cluster compiled once for many simulations (a
** disruption pass), the overlays those simulations plan, and the passes
** built on them. The solver's state itself is in schedule.h, which only
** the code that runs the solver reads.
*/
#ifndef DT_CLUSTER_H
#define DT_CLUSTER_H

#include "model.h"

/* A catalog compiled once for many runs on it (sched.c): dt__plan_run_compiled
** gives the same plan as dt_plan_run without compiling the catalog again,
** its typed results built when results is true (a daemon's round) and not
** for a disruption pass's simulations, which read the solver's state.
** The compiled catalog must outlive the plans and not be shared between
** threads. */
typedef struct dt_compiled_catalog dt_compiled_catalog;
int dt__catalog_compile(const dt_catalog *catalog, dt_compiled_catalog **out, dt_error *err);

/* The prices of n running machines (instance type, zone, capacity type:
** -1 unknown) as the input's NodeOverlays leave their offerings, into
** price[i] where an overlay changed it (the rest left as they are): a
** disruption pass weighs a node at the price a plan would give its
** replacement. Reserved capacity keeps its price. */
int dt__overlaid_prices(const dt_catalog *catalog, const dt_manifests *m, size_t n, const char *const *type,
                        const char *const *zone, const int *ct, double *price, dt_error *err);
void dt__catalog_compiled_free(dt_compiled_catalog *cc);
/* Whether binding i of a plan places a CapacityBuffer's chunk (held there,
** never nominated). */
bool dt__plan_binding_virtual(const dt_plan *p, size_t i);
int dt__plan_run_compiled(const dt_catalog *catalog, const dt_compiled_catalog *cc, const dt_manifests *manifests,
                          const dt_plan_opts *opts, bool results, dt_plan **out, dt_error *err);

/*
** A cluster compiled once for many simulations on it (a disruption pass):
** the catalog, the NodePools' names, every node (interned labels,
** allocatable, taints) and every pod spec (requests, labels, ports) are
** compiled into one base plan whose symbol table each simulation clones.
** A simulation is an overlay on it: which cluster nodes its view holds and,
** per pod, whether it stays bound, becomes pending or is left out. It plans
** what dt_plan_run plans on the same view, decision for decision; only
** integer work is left per simulation.
**
** The pods are the caller's array, which must outlive the cluster; a
** simulation's view reads that very array. A pod moved between
** simulations is told with dt__cluster_bind: the cluster keeps what the
** pods bound to each node name use, so a plan charges its nodes without
** visiting the pods. Nodes are added in the order of the caller's node ids
** and may be added between simulations.
** Overlay plans share the cluster's pod specs and write their per-plan
** fields (class, selecting groups): one plan runs at a time, and a plan
** that has finished reads neither. Not for use from several threads.
*/
typedef struct dt_cluster dt_cluster;
typedef enum dt_overlay_pod { DT_OV_BOUND = 0, DT_OV_PENDING = 1, DT_OV_ABSENT = 2 } dt_overlay_pod;
typedef struct dt_overlay {
  const uint32_t *node; /* per node of the view: its cluster node id, increasing */
  const uint8_t *pod;   /* per pod of the cluster: a dt_overlay_pod */
  /* The pods that are not bound (pending or absent), increasing, so a plan
  ** that need not visit every pod visits these; NULL: not listed. */
  const uint32_t *moved;
  uint32_t nmoved;
} dt_overlay;
int dt__cluster_new(const dt_catalog *catalog, const dt_manifests *m, dt_cluster **out, dt_error *err);
/* The same from the catalog compiled once (cc outlives the cluster). */
int dt__cluster_new_compiled(const dt_catalog *catalog, const struct dt_compiled_catalog *cc, const dt_manifests *m,
                             dt_cluster **out, dt_error *err);
/* Compile node n (caller-owned, outliving the cluster) as the next node id. */
int dt__cluster_add_node(dt_cluster *cl, const dt_node *n, dt_error *err);
/* Compile the pods once, after the first nodes. */
int dt__cluster_set_pods(dt_cluster *cl, const dt_podspec *pods, size_t n, dt_error *err);
/* Pod `pod` of the array is now bound to node name `node` (the caller has
** set its node_name so): every change of a pod's node goes through here. */
int dt__cluster_bind(dt_cluster *cl, size_t pod, const char *node);
void dt__cluster_free(dt_cluster *cl);
/* The plan the cluster compiled into: what it noted of the input. */
const dt_plan *dt__cluster_plan(const dt_cluster *cl);
/* Plan view (whose pods are the cluster's array) as the overlay says. */
int dt__plan_run_overlay(const dt_catalog *catalog, dt_cluster *cl, const dt_manifests *view, const dt_overlay *ov,
                         const dt_plan_opts *opts, dt_plan **out, dt_error *err);

/* dt_disrupt_run with every simulation compiled from its own view, as
** before the cluster was compiled once: the reference the overlay must
** match byte for byte (spec/unit.c compares them). */
int dt__disrupt_run_rebuild(const dt_catalog *catalog, const dt_manifests *m, const dt_disrupt_opts *opts,
                            dt_disruption **out, dt_error *err);
/* dt_disrupt_run with every single-node candidate simulated, none screened
** (disrupt_sim.c): the same commands, byte for byte; a screened candidate's
** reason differs (spec/unit.c compares them). */
int dt__disrupt_run_unscreened(const dt_catalog *catalog, const dt_manifests *m, const dt_disrupt_opts *opts,
                               dt_disruption **out, dt_error *err);
/* dt_disrupt_run (without explain) whose cluster starts from the catalog
** compiled once (dt__catalog_compile): the same pass, byte for byte. */
int dt__disrupt_run_compiled(const dt_catalog *catalog, const struct dt_compiled_catalog *cc, const dt_manifests *m,
                             const dt_disrupt_opts *opts, dt_disruption **out, dt_error *err);

#endif
