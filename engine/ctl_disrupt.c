/*
** ctl_disrupt.c: taking nodes away. A disruption pass's commands carried
** out (a delete, or replacements launched first), health remediation of
** nodes NotReady or instances stopped past --unhealthy-timeout (stopped
** above maxUnhealthy), claims that never initialized deleted after
** --startup-timeout, and the timer that runs all of it every
** --disrupt-interval.
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

/* A name for a replacement claim, unique in the store. */
static void replacement_name(const char *pool, const char *seed, char *out, size_t n) {
  for (uint64_t k = 0;; k++) {
    char buf[KEY_MAX + 40];
    snprintf(buf, sizeof buf, "%s/%llu/%llu", seed, (unsigned long long)D.start_seed, (unsigned long long)(D.seq + k));
    uint64_t h = dt__hash64(buf, strlen(buf));
    static const char digits[] = "0123456789bcdfghjklmnpqrstvwxz";
    char suf[6];
    for (int i = 0; i < 5; i++, h /= 30) suf[i] = digits[h % 30];
    suf[5] = 0;
    snprintf(out, n, "%s-%s", pool, suf);
    cJSON *o = claim_get(out);
    cJSON_Delete(o);
    if (!o) break;
  }
  D.seq++;
}

/* The claim this daemon launched that a command's node is: the pass names a
** NodeClaim and the Node it registered by the Node's name (one machine), so
** a name that is no claim of ours is looked up as a Node, matched to its
** claim by name or provider ID as health remediation does. NULL when the
** node is not one of ours. */
static const instance *machine_of(const char *name) {
  const instance *in = inst_of(name);
  if (in) return in;
  char key[KEY_MAX + 8];
  snprintf(key, sizeof key, "Node//%s", name);
  int i = obj_find(key);
  if (i < 0) return NULL;
  cJSON *o = cJSON_Parse(D.objs.v[i].json);
  in = o ? node_instance(o) : NULL;
  cJSON_Delete(o);
  return in;
}

/* One disruption command: claims this daemon launched only; a replacement
** is launched first and the nodes go once it is up (one replacement; a
** command with several deletes first and lets the next round launch them). */
bool carry_out(const dt_command_info *c) {
  const char *reason = c->reason, *action = c->action;
  dt_buf olds = {0};
  bool any = false;
  for (size_t k = 0; k < c->nnodes; k++) {
    const instance *in = machine_of(c->nodes[k].name);
    const char *name = in ? in->claim : c->nodes[k].name;
    char subj[KEY_MAX], why[900];
    snprintf(subj, sizeof subj, "NodeClaim %s", name);
    if (!in || being_replaced(name)) {
      snprintf(why, sizeof why, "%s %s: %s", reason, action,
               in ? "already being replaced" : "not a claim this daemon launched; left to its owner");
      log_decision("disrupt-skipped", subj, why);
      continue;
    }
    if (olds.len) dt__buf_putc(&olds, ',');
    dt__buf_puts(&olds, name);
  }
  if (olds.len && !olds.oom) {
    any = true;
    char why[600];
    if (c->nreplacements >= 1) {
      /* every replacement launches, each with the pods the pass placed on
      ** it; the old claims go once all are up (pods the pass put on other
      ** nodes are planned again then) */
      uint64_t group = ++D.groups;
      char savings[64];
      dt__fmt_price(savings, sizeof savings, c->savings);
      snprintf(why, sizeof why, "%s%s%s (saves $%s/h)", reason, c->detail ? ": " : "", c->detail ? c->detail : "",
               savings);
      for (size_t k = 0; k < c->nreplacements; k++) {
        const dt_claim_info *r = &c->replacements[k];
        char name[KEY_MAX];
        replacement_name(r->nodepool, olds.p, name, sizeof name);
        dt_buf mine = {0};
        for (size_t q = 0; q < r->npods; q++) {
          if (mine.len) dt__buf_putc(&mine, ',');
          dt__buf_puts(&mine, r->pods[q]);
        }
        if (!mine.oom)
          replace_with(name, r->nodepool, r->instance_type, r->zone, r->capacity_type, r->labels, r->nlabels,
                       mine.p ? mine.p : "", olds.p, why, group, r->price, r->requests, r->nrequests);
        dt__free(mine.p);
      }
      launch_group(group);
    } else {
      for (char *s = olds.p, *e; s && *s; s = e ? e + 1 : NULL) {
        e = strchr(s, ',');
        if (e) *e = 0;
        const instance *in = inst_of(s);
        snprintf(why, sizeof why, "%s: %s (instance %s)%s%s", reason, action, in ? in->id : "?", c->detail ? ": " : "",
                 c->detail ? c->detail : "");
        delete_instance(s, why);
      }
    }
  }
  dt__free(olds.p);
  return any;
}

/*
** Health remediation, as Cluster API's MachineHealthCheck: a node whose
** Ready condition has been False or Unknown for --unhealthy-timeout, or
** whose instance the cloud reports stopped or deallocated for as long, is
** replaced through the launch-before-delete path; when more of a pool's
** nodes are unhealthy than --max-unhealthy allows, remediation stops for
** that pool (a mass failure is not fixed by replacing everything).
*/
/* Claims launched longer ago than --startup-timeout whose nodes never
** initialized are deleted (Karpenter's registration timeout); their pods are
** planned again, and a replacement that never came up ends its command. */
static bool startup_timeouts(void) {
  int64_t now = wall();
  bool acted = false;
  for (size_t i = 0; i < D.insts.n;) {
    const instance *in = &D.insts.v[i];
    if (in->initialized || !D.startup_timeout_s || now - in->launched < D.startup_timeout_s) {
      i++;
      continue;
    }
    char claim[KEY_MAX], why[600];
    snprintf(claim, sizeof claim, "%s", in->claim);
    snprintf(why, sizeof why,
             "Unhealthy: NodeClaim %s launched %llds ago as %s and has not initialized (startup timeout %llds)", claim,
             (long long)(now - in->launched), in->id, (long long)D.startup_timeout_s);
    D.remediations++;
    delete_instance(claim, why); /* removes instance i */
    replacement_done(claim, false);
    acted = true;
  }
  return acted;
}

static bool remediate(void) {
  int64_t now = wall();
  DT_VEC(const instance *) sick = {0};
  DT_VEC(const char *) whys = {0};
  static char reasons[64][300];
  for (size_t i = 0; i < D.objs.n; i++) {
    if (D.objs.v[i].kind != OBJ_NODE || strncmp(D.objs.v[i].key, "Node//", 6)) continue;
    cJSON *o = cJSON_Parse(D.objs.v[i].json);
    const cJSON *c;
    cJSON_ArrayForEach(c, jget(jget(o, "status"), "conditions")) {
      const char *t = dt__jstr(c, "type"), *s = dt__jstr(c, "status"), *lt = dt__jstr(c, "lastTransitionTime");
      int64_t since = 0;
      if (!t || strcmp(t, "Ready") || !s || !strcmp(s, "True") || !lt || dt_time_parse(lt, &since, NULL)) continue;
      const instance *in = node_instance(o);
      if (!in || now - since < D.unhealthy_s || sick.n >= 64) continue;
      snprintf(reasons[sick.n], sizeof reasons[0], "Unhealthy: node %s Ready=%s for %llds (timeout %llds)",
               dt__jstr(jget(o, "metadata"), "name"), s, (long long)(now - since), (long long)D.unhealthy_s);
      if (!dt__vec_push(&sick, in)) dt__vec_push(&whys, reasons[sick.n - 1]);
    }
    cJSON_Delete(o);
  }
  for (size_t i = 0; i < D.insts.n && sick.n < 64; i++) {
    const instance *in = &D.insts.v[i];
    if (!in->down_since || now - in->down_since < D.unhealthy_s) continue;
    bool dup = false;
    for (size_t k = 0; k < sick.n; k++) dup |= sick.v[k] == in;
    if (dup) continue;
    snprintf(reasons[sick.n], sizeof reasons[0],
             "Unhealthy: the cloud reports instance %s stopped or deallocated for %llds", in->id,
             (long long)(now - in->down_since));
    if (!dt__vec_push(&sick, in)) dt__vec_push(&whys, reasons[sick.n - 1]);
  }
  bool acted = false;
  for (size_t i = 0; i < sick.n && whys.n == sick.n; i++) {
    const instance *in = sick.v[i];
    if (!in || being_replaced(in->claim)) continue;
    size_t total = 0, bad = 0;
    for (size_t k = 0; k < D.insts.n; k++) total += !strcmp(D.insts.v[k].pool, in->pool);
    for (size_t k = 0; k < sick.n; k++) bad += sick.v[k] && !strcmp(sick.v[k]->pool, in->pool);
    size_t max = D.max_unhealthy_pct ? total * D.max_unhealthy / 100 : D.max_unhealthy;
    if (bad > max) {
      char subj[KEY_MAX], why[400];
      snprintf(subj, sizeof subj, "NodePool %s", in->pool);
      snprintf(why, sizeof why, "%zu of %zu nodes unhealthy, more than maxUnhealthy %llu%s: remediation stops", bad,
               total, (unsigned long long)D.max_unhealthy, D.max_unhealthy_pct ? "%" : "");
      log_decision("remediation-paused", subj, why);
      D.remediation_paused++;
      for (size_t k = i; k < sick.n; k++) /* once per pool */
        if (sick.v[k] && !strcmp(sick.v[k]->pool, in->pool) && k != i) sick.v[k] = NULL;
      continue;
    }
    char name[KEY_MAX], *pods = claim_pods(in->claim);
    char claim[KEY_MAX], type[200], zone[200], ct[40], pool[300];
    snprintf(claim, sizeof claim, "%s", in->claim);
    snprintf(type, sizeof type, "%s", in->type), snprintf(zone, sizeof zone, "%s", in->zone);
    snprintf(ct, sizeof ct, "%s", in->ct), snprintf(pool, sizeof pool, "%s", in->pool);
    replacement_name(pool, claim, name, sizeof name);
    D.remediations++;
    cJSON *old = claim_get(claim); /* its replacement keeps the values its requirements took */
    dt_label_info pinned[32];
    size_t npinned = old ? claim_pinned_labels(old, pinned, 32) : 0;
    replace_with(name, pool, type, zone, ct, pinned, npinned, pods ? pods : "", claim, whys.v[i], ++D.groups,
                 in->price > 0 ? in->price : -1, NULL, 0);
    cJSON_Delete(old);
    launch_group(D.groups); /* may move D.insts */
    dt__free(pods);
    for (size_t k = i + 1; k < sick.n; k++) sick.v[k] = NULL; /* pointers into D.insts are stale now */
    acted = true;
    break; /* one at a time; the next pass takes the next */
  }
  dt__free(sick.v);
  dt__free(whys.v);
  return acted;
}

/* Every --disrupt-interval: health remediation, then one disruption pass
** over the cluster the daemon holds, its commands carried out on the claims
** it launched. */

/* Whether a pod still holds Node `name` up: bound there, not a DaemonSet's,
** not a mirror pod, not finished. */
static bool holds_node(const char *json, const char *name) {
  char pat[KEY_MAX + 16];
  snprintf(pat, sizeof pat, "\"nodeName\":\"%s\"", name);
  if (!strstr(json, pat)) return false; /* most pods: not parsed */
  cJSON *o = cJSON_Parse(json);
  const char *nn = dt__jstr(jget(o, "spec"), "nodeName"), *phase = dt__jstr(jget(o, "status"), "phase");
  bool holds = nn && !strcmp(nn, name) && !(phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")));
  const cJSON *r;
  cJSON_ArrayForEach(r, jget(jget(o, "metadata"), "ownerReferences")) {
    const char *k = dt__jstr(r, "kind");
    if (k && (!strcmp(k, "DaemonSet") || !strcmp(k, "Node"))) holds = false;
  }
  cJSON_Delete(o);
  return holds;
}

/*
** A Node of a claim this daemon launched that someone else is deleting
** (`kubectl delete node`: a deletionTimestamp, Karpenter's termination
** finalizer holding it while it drains): once its pods have left, its claim
** and instance go, as Karpenter's termination controller deletes the
** NodeClaim and the instance with it. The pods' new room is the rounds'
** (they plan the pods of nodes being deleted).
*/
static bool deleted_nodes(void) {
  bool acted = false;
  for (size_t i = 0; i < D.objs.n; i++) {
    if (strncmp(D.objs.v[i].key, "Node//", 6) || !strstr(D.objs.v[i].json, "\"deletionTimestamp\"")) continue;
    cJSON *o = cJSON_Parse(D.objs.v[i].json);
    const cJSON *md = jget(o, "metadata");
    const instance *in = dt__jstr(md, "deletionTimestamp") ? node_instance(o) : NULL;
    char name[KEY_MAX], claim[KEY_MAX];
    snprintf(name, sizeof name, "%s", dt__jstr(md, "name") ? dt__jstr(md, "name") : "");
    if (in) snprintf(claim, sizeof claim, "%s", in->claim);
    cJSON_Delete(o);
    if (!in) continue;
    bool held = false;
    for (size_t k = 0; k < D.objs.n && !held; k++)
      held = D.objs.v[k].kind == OBJ_POD && holds_node(D.objs.v[k].json, name);
    if (held) continue;
    char why[KEY_MAX + 200];
    snprintf(why, sizeof why, "Node %s is being deleted and has drained: its NodeClaim and instance go with it", name);
    delete_instance(claim, why); /* the store changes: scan again from the start next pass */
    acted = true;
    break;
  }
  return acted;
}

void on_disrupt(uv_timer_t *t) {
  (void)t;
  if (!D.ready || D.batch_open || D.planning) return; /* provisioning first, as Karpenter's pending-pods rule */
  expire_marks();
  bool timed_out = startup_timeouts();
  timed_out |= deleted_nodes();
  if (remediate() || timed_out) {
    journal_flush();
    arm_batch();
  }
  dispatch(true); /* the pass runs on the thread pool; round_done carries out its commands */
}
