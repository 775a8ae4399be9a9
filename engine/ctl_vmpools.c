/*
** ctl_vmpools.c: KubeVirt VirtualMachinePools converged by the controller
** at every round: the pool engine's actions (create, delete, update, heal)
** become VirtualMachine objects in the store, and their pods are planned
** with the rest.
*/
#define _GNU_SOURCE
#include "controller.h"
#include "httpc.h"
#include "model.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void vm_key(const cJSON *pool, const cJSON *a, char *out, size_t n) {
  snprintf(out, n, "VirtualMachine/%s/%s", dt__jstr(pool, "namespace") ? dt__jstr(pool, "namespace") : "default",
           dt__jstr(a, "name") ? dt__jstr(a, "name") : "");
}

/* Carry out one kind of pool action: its VM objects go into the store, or
** out of it. */
static size_t pool_actions(const cJSON *pool, const char *kind, bool remove) {
  const cJSON *a;
  size_t n = 0;
  cJSON_ArrayForEach(a, jget(pool, kind)) {
    char key[KEY_MAX + 32], subj[KEY_MAX + 32];
    vm_key(pool, a, key, sizeof key);
    const cJSON *obj = jget(a, "object");
    const char *what = dt__jstr(a, "action");
    if (what && !strcmp(what, "wait")) continue; /* a heal waiting for its backoff */
    if (remove) {
      obj_del(key);
    } else if (obj) {
      cJSON *copy = cJSON_Duplicate(obj, true);
      /* a VM created (or re-created) here runs nowhere yet: Provisioning, so
      ** its virt-launcher pod joins this round's pending pods */
      if (copy && strcmp(kind, "update")) put_in(copy, "status", "printableStatus", "Provisioning");
      if (copy) obj_put(key, copy);
      cJSON_Delete(copy);
    } else {
      continue;
    }
    snprintf(subj, sizeof subj, "VirtualMachine %s/%s", dt__jstr(pool, "namespace"), dt__jstr(a, "name"));
    char why[900];
    snprintf(why, sizeof why, "%s%s%s: %s", kind, what ? " " : "", what ? what : "",
             dt__jstr(a, "reason") ? dt__jstr(a, "reason") : "");
    log_decision("vmpool", subj, why);
    n++;
  }
  return n;
}

/*
** VirtualMachinePools converge in the daemon as `dovetail pool` decides:
** each round's creations, deletions, updates and heals become VirtualMachine
** objects in the store (or leave it), within KubeVirt's burst limit, and
** the VMs that need a node become virt-launcher pods of the same round's
** plan. The last result is served at /v1/pools.
*/
void converge_pools(void) {
  bool any = false;
  for (size_t i = 0; i < D.objs.n && !any; i++) any = !strncmp(D.objs.v[i].key, "VirtualMachinePool/", 19);
  if (!any) return;
  dt_error err = {0};
  dt_manifests *m = manifests(&err);
  if (!m) {
    logf_("error", "pools", "%s", err.msg);
    return;
  }
  dt_pool_opts po = {wall(), D.start_seed ^ D.round, D.policy};
  dt_pools *r = NULL;
  if (dt_pools_run(m, &po, &r, &err)) {
    logf_("error", "pools", "%s", err.msg);
    dt_manifests_free(m);
    return;
  }
  size_t len;
  char *text = dt_pools_render(r, DT_FORMAT_JSON, &len);
  cJSON *doc = text ? cJSON_ParseWithLength(text, len) : NULL;
  const cJSON *pool;
  cJSON_ArrayForEach(pool, jget(doc, "pools")) {
    char name[KEY_MAX];
    snprintf(name, sizeof name, "%s/%s", dt__jstr(pool, "namespace") ? dt__jstr(pool, "namespace") : "",
             dt__jstr(pool, "name") ? dt__jstr(pool, "name") : "");
    pool_count *pc = NULL;
    for (size_t i = 0; i < D.vm_actions.n && !pc; i++)
      if (!strcmp(D.vm_actions.v[i].pool, name)) pc = &D.vm_actions.v[i];
    if (!pc) {
      pool_count z = {dt__strdup(name), {0}};
      if (!z.pool || dt__vec_push(&D.vm_actions, z)) {
        dt__free(z.pool);
        continue;
      }
      pc = &D.vm_actions.v[D.vm_actions.n - 1];
    }
    pc->n[0] += pool_actions(pool, "create", false);
    pc->n[1] += pool_actions(pool, "delete", true);
    pc->n[2] += pool_actions(pool, "update", false);
    pc->n[3] += pool_actions(pool, "heal", false);
  }
  cJSON_Delete(doc);
  dt_pools_stats ps;
  dt_pools_stats_get(r, &ps);
  D.pools_waiting = ps.waiting; /* held back (burst, maxUnavailable): the requeue timer comes back */
  dt_free(D.last_pools);
  D.last_pools = text;
  dt_pools_free(r);
  dt_manifests_free(m);
}
