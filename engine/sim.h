/*
** sim.h: what the simulator's files share (simulate.c: a run on the
** controller, the simulated cloud, the observer and the invariants;
** sim_scenario.c: the workload's trace and scenario, read and played;
** sim_report.c: summaries, the JSON series and the HTML report;
** sim_main.c: the command line). Internal to the command: the names below
** map to dt__sim_ symbols.
*/
#ifndef DT_SIM_H
#define DT_SIM_H

#include "ctl.h"
#include "dovetail.h"
#include "internal.h"
#include "model.h"
#include "store.h"

#include "hooks.h"

#include <stdio.h>

#define HOUR_MS    3600000.0
#define WARNING_MS 120000 /* the spot interruption notice: two minutes */

enum { POD_FUTURE, POD_PENDING, POD_RUNNING, POD_GONE };
#define ON_NODE (-2) /* spod.claim of a pod running on a Node the cluster started with */

typedef struct spod {
  dt_sym name;
  int64_t arrive, life; /* ms; life < 0: stays */
  int64_t cpu, mem;     /* requests, milli-units */
  int state;
  int32_t claim;     /* while running: its claim, or ON_NODE */
  int64_t since;     /* pending since, or running since */
  double run_ms;     /* time spent running */
  const char *owner; /* a scenario's Deployment, or NULL */
} spod;

typedef struct sclaim {
  dt_sym name;
  char *id, *type, *zone, *ct, *pool;
  double price;
  int64_t added, removed; /* -1 while alive */
  int64_t alloc_cpu, alloc_mem, alloc_pods;
  int64_t used_cpu, used_mem, used_pods;
  DT_VEC(uint32_t) pods; /* may hold pods that moved on: check pod.claim */
  /* The nominated pods it was last told may run (on_running) and their
  ** names' symbols: a claim's list grows at its end and loses the pods that
  ** departed, so the next call looks up only what follows */
  char *told;
  size_t ntold;
  DT_VEC(dt_sym) told_syms, syms; /* syms: the next call's, swapped in */
  bool live;
  bool disrupting; /* taken for a budgeted disruption (Empty, Drifted, Underutilized) */
} sclaim;

/* A NodePool as applied, parsed for its disruption budgets. */
typedef struct spool {
  char *name;
  dt_manifests *m; /* holds the one NodePool */
} spool;

enum { EV_ARRIVE, EV_DEPART, EV_SCENARIO, EV_WARN };

typedef struct sevent {
  int64_t t;
  uint64_t seq;
  int kind;
  uint32_t idx;
} sevent;

/* An offering the scenario makes unavailable from .. to (ms). */
typedef struct outage {
  char *type, *zone, *ct;
  int64_t from, to;
} outage;

typedef struct deployment {
  char *ns, *name;
  cJSON *tmpl; /* the pod template */
  int64_t replicas;
  /* the ReplicaSet the simulator stores for it ("<name>-simulated", its
  ** selector, no replicas of its own) and its pods' controller; NULL: none
  ** (no selector, or the input holds an object of that name) */
  char *rs;
} deployment;

typedef struct sample {
  int64_t t;
  int nodes[DT_CT_N];
  double hourly, cost;
  size_t pending, running;
  double wait_p50, wait_p99;
  double cpu_req, cpu_alloc, mem_req, mem_alloc; /* cores, GiB */
  size_t disruptions, interruptions, policy_errors, launches;
} sample;

typedef struct reason_count {
  char reason[48];
  size_t n;
} reason_count;

/* The inputs every run shares. */
typedef struct inputs {
  const char *catalog;
  cJSON *cluster;  /* documents */
  cJSON *scenario; /* events, sorted by time */
  DT_VEC(int64_t) scen_at;
  /* the trace, as columns */
  DT_VEC(int64_t) t_arrive, t_life, t_cpu, t_mem;
  cJSON *advisor;
  int64_t duration_ms, step_ms, latency_ms, startup_ms;
  uint64_t seed;
  dt_ctl_config cfg;
  bool check;
} inputs;

/* One run: a policy (or the built-ins) over the inputs. */
typedef struct run {
  const inputs *in;
  const char *label;
  const char *policy_path;
  dt_packing packing;
  dt_catalog *cat;
  dt_policy *policy;
  dt_symtab names;          /* pod names and claim names */
  DT_VEC(int32_t) pod_of;   /* name symbol -> pod index + 1 */
  DT_VEC(int32_t) claim_of; /* name symbol -> claim index + 1 */
  DT_VEC(spod) pods;
  DT_VEC(sclaim) claims;
  DT_VEC(sevent) heap;
  uint64_t seq;
  DT_VEC(outage) outages;
  DT_VEC(deployment) deps;
  DT_VEC(spool) npools;
  bool check_budgets;   /* false when a policy's budget hook decides them */
  DT_VEC(double) waits; /* seconds, every pending episode that ended */
  size_t waits_seen;    /* waits before this step */
  DT_VEC(sample) series;
  DT_VEC(reason_count) reasons;
  int64_t now, t0;
  double hourly, cost, lifetime_cost;
  int64_t last_cost_t;
  size_t arrivals, departed, launches, disruptions, interruptions, live_nodes[DT_CT_N];
  size_t in_state[4]; /* pods by state (POD_*): a step's counts without a walk over every pod */
  size_t policy_errors_before;
  char last_decision[1600];
  char violation[1200];  /* the first invariant broken, or "" */
  int64_t fail_startups; /* launches whose nodes will never initialize */
} run;

typedef struct summary {
  double cost, pod_hours, cost_per_pod_hour, wait_p50, wait_p99;
  size_t pods, launches, disruptions, interruptions, pending_end, policy_errors;
} summary;

/* A test build (dovetail-faults) breaks the invariant named in
** DOVETAIL_SIM_FAULT on purpose, so the specs can show that --check catches
** it (or, for the daemon, stretches a window the specs aim at); in dovetail
** itself no fault is ever on. */
bool dt__sim_fault(const char *name);
#define FAULT(name) dt__sim_fault(name)

#define violate            dt__sim_violate
#define apply_object       dt__sim_apply_object
#define depart             dt__sim_depart
#define interrupt_claim    dt__sim_interrupt_claim
#define map_get            dt__sim_map_get
#define pod_object         dt__sim_pod_object
#define pod_requests       dt__sim_pod_requests
#define policy_error_count dt__sim_policy_error_count
#define print_table        dt__sim_print_table
#define quantile           dt__sim_quantile
#define read_scenario      dt__sim_read_scenario
#define read_trace         dt__sim_read_trace
#define run_free           dt__sim_run_free
#define run_json           dt__sim_run_json
#define run_one            dt__sim_run_one
#define scenario_event     dt__sim_scenario_event
#define summarize          dt__sim_summarize
#define track              dt__sim_track
#define write_report       dt__sim_write_report

/* The first invariant broken in a run, with the simulated time. */
void violate(run *r, const char *fmt, ...) DT_PRINTF(2, 3);
void apply_object(run *r, const cJSON *o);
void depart(run *r, uint32_t pi);
void interrupt_claim(run *r, uint32_t ci);
int32_t map_get(const run *r, bool claim, dt_sym s);
cJSON *pod_object(const char *ns, const char *name, int64_t cpu, int64_t mem, const cJSON *tmpl);
void pod_requests(const cJSON *o, int64_t *cpu, int64_t *mem);
size_t policy_error_count(const run *r);
void print_table(FILE *f, run *runs, const summary *ss, size_t n);
double quantile(double *v, size_t n, double q);
int read_scenario(inputs *in, const char *path, dt_error *err);
int read_trace(inputs *in, const char *path, size_t limit, dt_error *err);
void run_free(run *r);
cJSON *run_json(run *r, const summary *s);
int run_one(run *r, size_t k, size_t nruns, bool tty, dt_error *err);
void scenario_event(run *r, uint32_t idx);
summary summarize(run *r);
int32_t track(run *r, const char *ns, const char *name, int64_t cpu, int64_t mem, int64_t life, const char *owner);
int write_report(const char *path, run *runs, const summary *ss, size_t n, dt_error *err);

#endif
