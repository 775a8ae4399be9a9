/*
** sim.c: the `sim` provider, a cloud in the daemon's own process. A launch
** answers at once: an instance id, or insufficient capacity for the
** offerings --sim-ice lists ("type/zone/capacity-type"). Nothing is billed
** and nothing is deleted; it is for trying the daemon out and for specs.
*/
#include "../engine/controller.h"

#include <stdio.h>
#include <string.h>

static void sim_launch(launch_ctx *lc) {
  char k[600], id[64];
  snprintf(k, sizeof k, "%s/%s/%s", lc->type, lc->zone, lc->ct);
  for (size_t i = 0; i < D.sim_ice.n; i++)
    if (!strcmp(D.sim_ice.v[i], k)) {
      dt__ctl_launched(lc, DT_LAUNCH_NO_CAPACITY, NULL, NULL);
      return;
    }
  snprintf(id, sizeof id, "i-%016llx", (unsigned long long)dt__hash64(k, strlen(k)) ^ (unsigned long long)++D.seq);
  dt__ctl_launched(lc, DT_LAUNCH_OK, id, NULL);
}

static void sim_terminate(const char *id) { (void)id; }

const dt_provider dt__provider_sim = {"sim", sim_launch, sim_terminate, NULL};
