/*
** provider.h: where the controller's launches and deletes go (internal to
** the command). A provider is a table of calls the controller makes on the
** loop; what the cloud answers comes back on the loop through the
** controller's entry points below, at once or later.
**
** Implementations: `sim` (providers/sim.c: in process, launches succeed
** unless --sim-ice lists the offering), `http` (providers/http.c: the REST
** contract over libcurl, with retries, backoff and a circuit breaker), and
** the simulator's cloud (ctl_launch.c, over ctl.h's dt_ctl_cloud).
*/
#ifndef DT_PROVIDER_H
#define DT_PROVIDER_H

#include "ctl.h"
#include "internal.h"

struct launch_ctx;

typedef struct dt_provider {
  const char *name;
  /* Launch the context's claim on its offering; the outcome comes to
  ** dt__ctl_launched. */
  void (*launch)(struct launch_ctx *lc);
  /* Delete an instance; nothing comes back (the next poll tells). */
  void (*terminate)(const char *id);
  /* Optional, every --poll: the cloud's instances and catalog, which come
  ** to dt__ctl_instances and dt__ctl_catalog. */
  void (*poll)(void);
} dt_provider;

extern const dt_provider dt__provider_sim, dt__provider_http, dt__provider_virtual;

/* The controller's entry points for the cloud's answers (on the loop). */
void dt__ctl_launched(struct launch_ctx *lc, dt_launch_outcome outcome, const char *id, const char *msg);
void dt__ctl_instances(const cJSON *list);                           /* the instances array of GET /instances */
void dt__ctl_catalog(dt_catalog *c, const char *etag, size_t bytes); /* a new catalog, now the controller's */

#endif
