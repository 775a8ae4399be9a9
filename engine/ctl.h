/*
** ctl.h: the controller's seams, internal to the program. The controller
** (engine/serve.c) owns the cluster state and decides; it is driven by one
** of two clocks. `dovetail serve` runs it on libuv's real clock with the
** HTTP API in front; `dovetail simulate` (engine/simulate.c) runs the same
** code on a virtual clock, with a simulated cloud in place of the provider
** and an observer that records what happened.
**
** On the virtual clock nothing waits: dt__ctl_run_until fires the timers the
** controller armed, in due order, and rounds run to completion inline.
*/
#ifndef DT_CTL_H
#define DT_CTL_H

#include "internal.h"

#include <stdbool.h>
#include <stdint.h>

/* Launch outcomes, as the provider reports them. */
typedef enum dt_launch_outcome {
  DT_LAUNCH_OK = 0,          /* launched: the instance id is set */
  DT_LAUNCH_NO_CAPACITY = 1, /* insufficient capacity for the offering */
  DT_LAUNCH_FAILED = 2       /* any other failure */
} dt_launch_outcome;

/* A simulated cloud. launch decides a launch's outcome now, says after how
** long (virtual milliseconds) the controller learns it, and, for a launch
** that succeeds, how long after that its node initializes (< 0: never; the
** startup timeout then takes the claim back). */
typedef struct dt_ctl_cloud {
  void *ud;
  dt_launch_outcome (*launch)(void *ud, const char *claim, const char *type, const char *zone, const char *ct, char *id,
                              size_t idn, int64_t *delay_ms, int64_t *startup_ms);
  void (*terminate)(void *ud, const char *id); /* the controller deleted the instance */
} dt_ctl_cloud;

/* What the controller did, as it does it. */
typedef struct dt_ctl_observer {
  void *ud;
  /* an instance joined (added) or left the controller's books */
  void (*instance)(void *ud, bool added, const char *id, const char *claim, const char *type, const char *zone,
                   const char *ct, const char *pool);
  /* the pods nominated to an initialized claim may run there now */
  void (*running)(void *ud, const char *claim, const char *pods);
  void (*decision)(void *ud, const char *kind, const char *subject, const char *reason);
  /* a round placed a pending pod ("namespace/name") on a Node that is no
  ** claim of the controller's: the kube-scheduler binds it there (optional) */
  void (*bound)(void *ud, const char *node, const char *pod);
} dt_ctl_observer;

/* Settings of a controller on the virtual clock; zero fields take serve's
** defaults. */
typedef struct dt_ctl_config {
  int64_t start_ms; /* the virtual clock's start, Unix milliseconds */
  uint64_t seed;
  uint64_t idle_ms, max_ms, disrupt_ms;
  int64_t ttl_s, preempt_ttl_s, unhealthy_s, startup_timeout_s;
  dt_packing packing;
  dt_catalog *cat;        /* borrowed */
  dt_policy *policy;      /* borrowed; NULL for the built-ins */
  const char *policy_dir; /* NodePools' own policies; NULL: none */
  const char *scheduler_config; /* --scheduler-config FILE; NULL: none */
  const dt_ctl_cloud *cloud;
  const dt_ctl_observer *obs;
} dt_ctl_config;

int dt__ctl_start_virtual(const dt_ctl_config *c, dt_error *err);
void dt__ctl_stop(void); /* everything released */

int64_t dt__ctl_next_due(void); /* INT64_MAX when no timer is armed */
int64_t dt__ctl_now_ms(void);
void dt__ctl_run_until(int64_t t_ms);

/* Changes from outside, as the HTTP API makes them. */
int dt__ctl_apply(const cJSON *o, dt_error *err); /* store (or replace) one object; a round follows */
/* key "Kind/namespace/name"; a deleted Pod leaves its claim (claim, when the
** caller knows which, else every claim is looked at) */
bool dt__ctl_delete(const char *key, const char *claim);
void dt__ctl_event(cJSON *e, char *action, size_t n); /* an interruption event (EventBridge shape) */
void dt__ctl_catalog_changed(void); /* the catalog was replaced or changed in place: rounds compile it again */
size_t dt__ctl_pods(void);          /* stored Pods */
/* Read a stored object, parsed (caller frees), or NULL. */
cJSON *dt__ctl_get(const char *key);

#endif
