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
#include "result.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Carry out the actions of one list of a pool: VM objects go into the
** store, or out of it. */
static size_t pool_actions(const dt_pools *r, const dt_pool_info *pool, dt_pool_list list) {
  static const char *const k_list[] = {"create", "delete", "update", "heal"};
  size_t n = 0;
  for (size_t i = pool->first_action; i < pool->first_action + pool->nactions; i++) {
    dt_pool_action_info a;
    if (dt_pools_action(r, i, &a) || a.list != list) continue;
    if (a.action && !strcmp(a.action, "wait")) continue; /* a heal waiting for its backoff */
    char key[KEY_MAX + 32], subj[KEY_MAX + 32];
    snprintf(key, sizeof key, "VirtualMachine/%s/%s", a.ns, a.vm ? a.vm : "");
    size_t len = 0;
    char *text = list == DT_POOL_DELETE ? NULL : dt_pools_action_object(r, i, &len);
    /* a VM rewritten without a restart (or halted, or left to restart on its
    ** own) keeps running as it was; any other update, a re-creation or a
    ** deletion ends its running instance */
    bool in_place =
        a.action && (!strcmp(a.action, "rewrite") || !strcmp(a.action, "apply") || !strcmp(a.action, "wait-for-halt"));
    if (list == DT_POOL_DELETE) {
      obj_del(key);
    } else if (text) {
      cJSON *copy = cJSON_ParseWithLength(text, len);
      dt_free(text);
      /* a VM created (or re-created) here runs nowhere yet: Provisioning, so
      ** its virt-launcher pod joins this round's pending pods */
      if (copy && list != DT_POOL_UPDATE) put_in(copy, "status", "printableStatus", "Provisioning");
      /* in place, its status stays */
      int at = copy && in_place ? obj_find(key) : -1;
      cJSON *old = at >= 0 ? cJSON_Parse(D.objs.v[at].json) : NULL;
      cJSON *st = old ? cJSON_DetachItemFromObjectCaseSensitive(old, "status") : NULL;
      if (st && !cJSON_AddItemToObject(copy, "status", st)) cJSON_Delete(st);
      cJSON_Delete(old);
      if (copy) obj_put(key, copy);
      cJSON_Delete(copy);
    } else {
      continue;
    }
    /* otherwise KubeVirt deletes its VMI: the one stored would say it still
    ** runs the old revision, and restart it again at every round */
    if (list != DT_POOL_CREATE && !in_place) {
      char vk[KEY_MAX + 32];
      snprintf(vk, sizeof vk, "VirtualMachineInstance/%s/%s", a.ns, a.vm ? a.vm : "");
      if (obj_find(vk) >= 0) obj_del(vk);
    }
    snprintf(subj, sizeof subj, "VirtualMachine %s/%s", a.ns, a.vm);
    char why[900];
    snprintf(why, sizeof why, "%s%s%s: %s", k_list[list], a.action ? " " : "", a.action ? a.action : "",
             a.reason ? a.reason : "");
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
  if (!D.nkind[OBJ_VMPOOL]) return;
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
  dt_pool_info pool;
  for (size_t k = 0; !dt_pools_pool(r, k, &pool); k++) {
    char name[KEY_MAX];
    snprintf(name, sizeof name, "%s/%s", pool.ns, pool.name);
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
    pc->n[0] += pool_actions(r, &pool, DT_POOL_CREATE);
    pc->n[1] += pool_actions(r, &pool, DT_POOL_DELETE);
    pc->n[2] += pool_actions(r, &pool, DT_POOL_UPDATE);
    pc->n[3] += pool_actions(r, &pool, DT_POOL_HEAL);
  }
  size_t len;
  char *text = dt_pools_render(r, DT_FORMAT_JSON, &len); /* served at /v1/pools */
  dt_pools_stats ps;
  dt_pools_stats_get(r, &ps);
  D.pools_waiting = ps.waiting; /* held back (burst, maxUnavailable): the requeue timer comes back */
  dt_free(D.last_pools);
  D.last_pools = text;
  D.last_pools_gen++;
  dt_pools_free(r);
  dt_manifests_free(m);
}
