/*
** ctl_launch.c: the controller's hand on the cloud. Unavailable offerings
** (marks with a TTL), launches as contexts that go out a slice per loop turn
** with a failed state and backoff per offering, deletes, and what the
** providers answer: launch outcomes, the cloud's instances and catalog.
** The providers themselves are behind provider.h.
*/
#define _GNU_SOURCE
#include "controller.h"
#include "model.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Mark an offering unavailable for the TTL (an UnavailableOffering object). */
void mark_unavailable(const char *ct, const char *type, const char *zone, const char *why, int64_t ttl) {
  char ts[40], name[600], key[800];
  dt__fmt_time(wall() + ttl, ts, sizeof ts);
  snprintf(name, sizeof name, "%s.%s.%s", ct, type, zone);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "apiVersion", "dovetail.dev/v1alpha1");
  cJSON_AddStringToObject(o, "kind", "UnavailableOffering");
  cJSON_AddObjectToObject(o, "metadata");
  cJSON_AddStringToObject(jget(o, "metadata"), "name", name);
  cJSON *sp = cJSON_AddObjectToObject(o, "spec");
  cJSON_AddStringToObject(sp, "capacityType", ct);
  cJSON_AddStringToObject(sp, "instanceType", type);
  cJSON_AddStringToObject(sp, "zone", zone);
  cJSON_AddStringToObject(sp, "expiresAt", ts);
  snprintf(key, sizeof key, "UnavailableOffering//%s", name);
  obj_put(key, o);
  cJSON_Delete(o);
  char subj[700];
  snprintf(subj, sizeof subj, "%s/%s/%s", type, zone, ct);
  char reason[700];
  snprintf(reason, sizeof reason, "%s; unavailable until %s", why, ts);
  log_decision("unavailable", subj, reason);
}

/* Drop marks whose time has come. */
void expire_marks(void) {
  if (!D.nkind[OBJ_MARK]) return;
  int64_t now = wall();
  for (size_t i = 0; i < D.objs.n;) {
    if (D.objs.v[i].kind != OBJ_MARK) {
      i++;
      continue;
    }
    cJSON *o = cJSON_Parse(D.objs.v[i].json);
    const char *e = dt__jstr(jget(o, "spec"), "expiresAt");
    int64_t t = 0;
    bool gone = e && !dt_time_parse(e, &t, NULL) && t <= now;
    cJSON_Delete(o);
    if (gone)
      obj_del(D.objs.v[i].key);
    else
      i++;
  }
}

/* ------------------------------------------------------------ provider */

void lc_free(uv_handle_t *h) {
  launch_ctx *lc = h->data;
  dt__free(lc->claim);
  dt__free(lc->type);
  dt__free(lc->zone);
  dt__free(lc->ct);
  dt__free(lc->pool);
  dt__free(lc);
}

void lc_done(launch_ctx *lc) { tm_close(&lc->retry, lc_free); }

static void drop_claim(const char *claim) {
  char key[800];
  snprintf(key, sizeof key, "NodeClaim//%s", claim);
  obj_del(key);
  const instance *in = inst_of(claim);
  node_gone(claim, in ? in->id : NULL);
  if (in) inst_remove((size_t)(in - D.insts.v));
}

/* A launched claim is a node from now on: Initialized and Ready, created
** now (disruption considers it, consolidateAfter counts from here). */
static void claim_initialized(const char *claim) {
  char key[800], ts[40];
  snprintf(key, sizeof key, "NodeClaim//%s", claim);
  int at = obj_find(key);
  if (at < 0) return;
  cJSON *o = cJSON_Parse(D.objs.v[at].json);
  if (!o) return;
  dt__fmt_time(wall(), ts, sizeof ts);
  cJSON *md = jget(o, "metadata");
  cJSON_DeleteItemFromObjectCaseSensitive(md, "creationTimestamp");
  cJSON_AddStringToObject(md, "creationTimestamp", ts);
  cJSON *st = jget(o, "status");
  if (!st) st = cJSON_AddObjectToObject(o, "status");
  cJSON_DeleteItemFromObjectCaseSensitive(st, "conditions");
  cJSON *cs = cJSON_AddArrayToObject(st, "conditions");
  static const char *types[] = {"Initialized", "Ready"};
  for (int i = 0; i < 2; i++) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "type", types[i]);
    cJSON_AddStringToObject(c, "status", "True");
    cJSON_AddItemToArray(cs, c);
  }
  obj_put(key, o);
  cJSON_Delete(o);
}

static void on_again(uv_timer_t *t) {
  (void)t;
  if (D.circuit_until <= wall()) arm_batch();
}

/*
** An offering whose launches keep failing (not for capacity: errors, after
** their retries) goes into a failed state with backoff, as Cluster API does
** with a machine that keeps failing: after FAILS_BEFORE_BACKOFF in a row it
** is marked unavailable for 30 s, doubling per further failure up to 10 min,
** so the next rounds launch elsewhere instead of failing every 2 s. A launch
** that succeeds clears the count.
*/
#define FAILS_BEFORE_BACKOFF 3

static void doubt_add(const char *claim);

static int fail_find(const launch_ctx *lc, bool add) {
  char k[600];
  snprintf(k, sizeof k, "%s/%s/%s", lc->type, lc->zone, lc->ct);
  for (size_t i = 0; i < D.failing.n; i++)
    if (!strcmp(D.failing.v[i].key, k)) return (int)i;
  if (!add) return -1;
  failing f = {dt__strdup(k), 0, 0};
  if (!f.key || dt__vec_push(&D.failing, f)) {
    dt__free(f.key);
    return -1;
  }
  return (int)D.failing.n - 1;
}

/* Launches of one round that fail together are one failure of their
** offering: 8 launches timing out at once backed it off for 10 minutes. */
static void launch_failed_again(const launch_ctx *lc) {
  int at = fail_find(lc, true);
  if (at < 0) return;
  failing *f = &D.failing.v[at];
  if (f->count && f->round == lc->round) return;
  f->round = lc->round;
  unsigned n = ++f->count;
  if (n < FAILS_BEFORE_BACKOFF) return;
  int64_t ttl = 30;
  for (unsigned i = FAILS_BEFORE_BACKOFF; i < n && ttl < 600; i++) ttl *= 2;
  if (ttl > 600) ttl = 600;
  char why[200];
  snprintf(why, sizeof why, "launches failed in %u rounds in a row; backing off %llds", n, (long long)ttl);
  mark_unavailable(lc->ct, lc->type, lc->zone, why, ttl);
}

static void launch_succeeded(const launch_ctx *lc) {
  int at = fail_find(lc, false);
  if (at < 0) return;
  dt__free(D.failing.v[at].key);
  D.failing.v[at] = D.failing.v[--D.failing.n];
}

/* A launched claim's node registered and initialized: it takes pods, and a
** replacement lets the nodes it replaces go. */
void node_up(const char *claim) {
  instance *in = inst_of(claim);
  if (!in) return; /* deleted while it started */
  in->initialized = true;
  claim_initialized(claim);
  claim_running(claim);
  replacement_done(claim, true);
}

void on_node_up(uv_timer_t *t) {
  launch_ctx *lc = t->data;
  node_up(lc->claim);
  state_dirty();
  lc_done(lc);
}

/* The outcome of a launch: launched (id), insufficient capacity, or failed (msg). */
void dt__ctl_launched(launch_ctx *lc, dt_launch_outcome outcome, const char *id, const char *msg) {
  char subj[800], reason[1200];
  snprintf(subj, sizeof subj, "NodeClaim %s", lc->claim);
  if (outcome == DT_LAUNCH_OK) {
    D.provider_ok++;
    D.consecutive_failures = 0;
    int cti = !strcmp(lc->ct, "reserved") ? 0 : !strcmp(lc->ct, "spot") ? 1 : 2;
    D.launched[cti]++;
    launch_succeeded(lc);
    bool adopted = id && inst_with_id(id); /* a poll listed it while its reply was on the way */
    add_instance(id, lc->claim, lc->type, lc->zone, lc->ct, lc->pool, 0, wall());
    instance *fresh = adopted || !id ? NULL : inst_with_id(id);
    if (fresh) fresh->vouched = false; /* until a listing has it */
    snprintf(reason, sizeof reason, "launched %s as %s in %s (%s) for NodePool %s", id, lc->type, lc->zone, lc->ct,
             lc->pool);
    log_decision("launch", subj, reason);
    if (D.cloud && lc->startup_ms) { /* its node comes up later, or never (the startup timeout then acts) */
      for (size_t i = 0; i < D.insts.n; i++)
        if (!strcmp(D.insts.v[i].claim, lc->claim)) D.insts.v[i].initialized = false;
      state_dirty();
      if (lc->startup_ms > 0) {
        tm_start(&lc->retry, on_node_up, (uint64_t)lc->startup_ms, 0);
        return;
      }
      lc_done(lc);
      return;
    }
    if (!D.cloud && awaits_node()) { /* initialized when its Node is (node_applied), or the startup timeout acts */
      instance *in = inst_of(lc->claim);
      /* adopted while the answer was on the way, its Node may have come
      ** and initialized it already: reset, it waited for a Node that had
      ** come, and the startup timeout deleted a node running pods */
      if (in && !(adopted && in->initialized)) in->initialized = node_up_for(lc->claim, id);
      state_dirty();
    } else {
      node_up(lc->claim);
    }
  } else if (outcome == DT_LAUNCH_NO_CAPACITY) {
    D.provider_ice++;
    D.consecutive_failures = 0;
    snprintf(reason, sizeof reason, "launch of %s in %s (%s) failed: InsufficientCapacity", lc->type, lc->zone, lc->ct);
    log_decision("launch-failed", subj, reason);
    mark_unavailable(lc->ct, lc->type, lc->zone, "insufficient capacity at launch", D.ttl);
    drop_claim(lc->claim);
    replacement_done(lc->claim, false);
    arm_batch();
  } else {
    D.provider_err++;
    snprintf(reason, sizeof reason, "launch of %s in %s (%s) failed: %s; its pods wait for the next round", lc->type,
             lc->zone, lc->ct, msg);
    log_decision("launch-failed", subj, reason);
    if (!lc->not_sent) {
      launch_failed_again(lc); /* a circuit open says nothing of the offering */
      doubt_add(lc->claim);
    }
    drop_claim(lc->claim);
    replacement_done(lc->claim, false);
    tm_start(&D.again, on_again, 2000, 0);
  }
  /* The claim was written ahead; its outcome joins the round's one write. A
  ** crash before it finds the claim at restart and adopts its instance. */
  state_dirty();
  lc_done(lc);
}

void on_cloud_answer(uv_timer_t *t) {
  launch_ctx *lc = t->data;
  dt__ctl_launched(lc, lc->outcome, lc->id, "the cloud refused the launch");
}

/* A launch of claim as this offering, not started yet; NULL out of memory. */
launch_ctx *launch_new(const char *claim, const char *type, const char *zone, const char *ct, const char *pool) {
  launch_ctx *lc = dt__calloc(1, sizeof *lc);
  if (!lc) return NULL;
  lc->claim = dt__strdup(claim);
  lc->type = dt__strdup(type);
  lc->zone = dt__strdup(zone);
  lc->ct = dt__strdup(ct);
  lc->pool = dt__strdup(pool);
  lc->round = D.round;
  tm_init(&lc->retry);
  lc->retry.data = lc;
  if (!lc->claim || !lc->type || !lc->zone || !lc->ct || !lc->pool) {
    lc_done(lc);
    return NULL;
  }
  return lc;
}

/* Send the launch to the provider; its outcome comes to dt__ctl_launched. */
void launch_start(launch_ctx *lc) { D.prov->launch(lc); }

/* The simulator's cloud (ctl.h): it answers at once what will happen; the
** answer arrives after its latency, the node after its start-up. */
static void virtual_launch(launch_ctx *lc) {
  int64_t delay = 0;
  lc->outcome = D.cloud->launch(D.cloud->ud, lc->claim, lc->type, lc->zone, lc->ct, lc->id, sizeof lc->id, &delay,
                                &lc->startup_ms);
  tm_start(&lc->retry, on_cloud_answer, delay > 0 ? (uint64_t)delay : 0, 0);
}

static void virtual_terminate(const char *id) {
  if (D.cloud->terminate) D.cloud->terminate(D.cloud->ud, id);
}

const dt_provider dt__provider_virtual = {"virtual", virtual_launch, virtual_terminate, NULL};

void launch_claim(const char *claim, const char *type, const char *zone, const char *ct, const char *pool) {
  launch_ctx *lc = launch_new(claim, type, zone, ct, pool);
  if (lc) launch_start(lc);
}

/* A launch that failed on the wire (a timeout, a 5xx, a reply without an
** id) may have launched all the same; its claim is gone and its pods are
** planned again. An instance the cloud lists for it within DOUBT_S is this
** daemon's, whatever the trust in the state, and is deleted: it was left
** alone as unaccounted when such failures outnumbered the instances held. */
#define DOUBT_S 3600
static void doubt_add(const char *claim) {
  int64_t now = wall();
  for (size_t i = 0; i < D.doubts.n;)
    if (D.doubts.v[i].until <= now) {
      dt__free(D.doubts.v[i].claim);
      D.doubts.v[i] = D.doubts.v[--D.doubts.n];
    } else {
      i++;
    }
  doubt d = {dt__strdup(claim), now + DOUBT_S};
  if (!d.claim || dt__vec_push(&D.doubts, d)) dt__free(d.claim);
}

static bool doubt_take(const char *claim) {
  for (size_t i = 0; i < D.doubts.n; i++)
    if (!strcmp(D.doubts.v[i].claim, claim)) {
      bool live = D.doubts.v[i].until > wall();
      dt__free(D.doubts.v[i].claim);
      D.doubts.v[i] = D.doubts.v[--D.doubts.n];
      return live;
    }
  return false;
}

/* An instance no claim holds, deleted and counted. */
static void delete_orphan(const char *id, const char *why) {
  log_decision("orphan", id, why);
  D.prov->terminate(id);
  D.orphans_deleted++;
}

/* The ids of the listing a poll is reading (dt__ctl_instances), keyed by the
** listing's own strings: asked once per instance held, a scan of the
** listing made each poll quadratic in the fleet. Out of memory, listed()
** scans. */
static dt_namemap listed_ids;

/* Whether the listing has an instance of that id. */
static bool listed(const cJSON *list, const char *id) {
  if (listed_ids.n && !listed_ids.oom) return dt__namemap_get(&listed_ids, id, strlen(id), 0) != 0;
  const cJSON *in;
  cJSON_ArrayForEach(in, list) {
    const char *v = dt__jstr(in, "id");
    if (v && !strcmp(v, id)) return true;
  }
  return false;
}

/* The instances a poll left alone, said once a poll: a cloud listing
** thousands of them wrote a line each per poll (millions a minute). */
typedef struct unaccounted {
  size_t n;
  char first[200], why[200];
} unaccounted;

/* Instance id, left alone as unaccounted for at a poll that did not trust
** its orphans, left alone for the life of the process, whatever later polls
** find (a state that lost them launches a second fleet, whose instances
** would otherwise make the first fleet's orphans trusted). */
static void keep_alone(const char *id) {
  char *k = dt__strdup(id);
  if (!k || dt__vec_push(&D.alone_keys, k)) {
    dt__free(k);
    return;
  }
  if (!dt__namemap_set(&D.alone, k, strlen(k), 1)) D.alone_keys.n--, dt__free(k);
}

/* Whether a Node of the cluster (in the store) runs on instance id. */
static bool node_runs_on(const char *id) {
  size_t il = strlen(id);
  for (size_t i = 0; i < D.objs.n; i++) {
    const obj *ob = &D.objs.v[i];
    size_t pl = ob->pid ? strlen(ob->pid) : 0;
    if (ob->kind == OBJ_NODE && pl > il && ob->pid[pl - il - 1] == '/' && !strcmp(ob->pid + pl - il, id)) return true;
  }
  return false;
}

/* An instance the cloud has that this daemon does not hold: adopted when
** its claim is in the store, deleted as an orphan when it carries this
** cluster's name, a state file says what the daemon holds, the poll's
** orphans are no more than what its books vouch for (trusted), no Node of
** the cluster runs on it, and no earlier poll left it alone; else left
** alone (a lost, new or foreign state must never cost a fleet). A claim holds one
** instance: listed under a new id while its own is not listed, the claim's
** instance is taken to be that one; listed beside its own, the second is
** left alone. True when the books changed. */
static bool poll_unknown(const cJSON *list, const cJSON *in, const char *id, const char *claim, const char *state,
                         bool trusted, unaccounted *u) {
  if (claim_stored(claim)) {
    const instance *was = inst_of(claim);
    if (was && listed(list, was->id)) {
      if (!u->n++) {
        snprintf(u->first, sizeof u->first, "%s", id);
        snprintf(u->why, sizeof u->why, "a second instance for NodeClaim %s, which has %s", claim, was->id);
      }
      return false;
    }
    char reason[300] = "the cloud has an instance for a claim we hold";
    if (was) {
      snprintf(reason, sizeof reason, "the cloud lists NodeClaim %s's instance under this id, not %s", claim, was->id);
      inst_remove((size_t)(was - D.insts.v));
    }
    add_instance(id, claim, dt__jstr(in, "instanceType"), dt__jstr(in, "zone"), dt__jstr(in, "capacityType"),
                 dt__jstr(in, "nodePool"), 0, wall());
    instance *got = inst_with_id(id);
    /* waiting for Nodes: initialized once its Node has (now, or when it comes: node_applied) */
    if (got && !D.cloud && awaits_node()) got->initialized = node_up_for(claim, id);
    log_decision("adopt", id, reason);
    return true;
  }
  if (!D.ready || !state || !strcmp(state, "terminated")) return false;
  const char *owner = dt__jstr(in, "cluster");
  if (owner && !strcmp(owner, D.cluster) && doubt_take(claim)) {
    char reason[300];
    snprintf(reason, sizeof reason, "launched for NodeClaim %s after all, whose launch had failed: deleted", claim);
    delete_orphan(id, reason);
    return false;
  }
  bool ours = owner && !strcmp(owner, D.cluster);
  bool before = ours && dt__namemap_get(&D.alone, id, strlen(id), 0), node = ours && !before && node_runs_on(id);
  if (!ours || !D.state_valid || !trusted || before || node) {
    if (ours && !before && !node) keep_alone(id);
    if (!u->n++) {
      snprintf(u->first, sizeof u->first, "%s", id);
      snprintf(u->why, sizeof u->why, "%s",
               !owner                     ? "no cluster tag"
               : strcmp(owner, D.cluster) ? "another cluster's"
               : !D.state_valid           ? "no state file"
               : !trusted                 ? "more of this cluster's instances than the state holds: a state that does "
                                            "not match the cloud deletes nothing"
               : node                     ? "a Node of the cluster runs on it"
                                          : "left alone since a poll could not account for it");
    }
    return false;
  }
  int64_t let_go = gone_at(id);
  if (let_go >= 0 && wall() - let_go < 60)
    return false; /* let go within the minute: a listing sent before its delete */
  delete_orphan(id, "the cloud has an instance for a claim this daemon does not hold: deleted");
  return false;
}

/* An instance of ours as the cloud reports it: terminated (or shutting
** down), it is forgotten and its pods are planned again; stopped by
** preemption, it is replaced (the policy's on_interruption may keep its
** offering available);
** stopped or deallocated otherwise (still billed), unhealthy from this poll
** on (remediated after the timeout). True when the books changed. */
static bool poll_known(instance *kin, const char *id, const char *claim, const char *state, const char *why) {
  /* while a round holds the policy, a preemption waits for the next poll */
  const char *act = state && !strcmp(state, "stopped") && why && !strcmp(why, "stopped_by_preemption") && !D.planning
                        ? interruption_action("preemption", kin, state, "drain")
                        : "ignore";
  if (strcmp(act, "ignore")) {
    char subj[300], reason[600];
    snprintf(subj, sizeof subj, "instance %s", id);
    /* "keep-offering": replace the node, leave the offering available */
    if (!strcmp(act, "drain")) mark_unavailable(kin->ct, kin->type, kin->zone, "stopped by preemption", D.preempt_ttl);
    snprintf(reason, sizeof reason, "stopped by preemption: delete it and replace NodeClaim %s", claim);
    log_decision("interruption", subj, reason);
    D.prov->terminate(id);
    drop_claim(claim);
    D.events++;
    return true;
  }
  if (state && (!strcmp(state, "terminated") || !strcmp(state, "shutting-down"))) {
    /* listed for a while after it ends (AWS keeps terminated instances about an hour): gone */
    log_decision("forget", id, "the cloud reports this instance terminated; its pods are pending again");
    drop_claim(claim);
    return true;
  }
  bool down = state && (!strcmp(state, "stopped") || !strcmp(state, "deallocated") || !strcmp(state, "stopping"));
  if (down && !kin->down_since) kin->down_since = wall();
  if (!down) kin->down_since = 0;
  return false;
}

/* Instances the cloud no longer has are forgotten: their pods are pending
** again. Not at the first listing that leaves one out: a cloud's listings
** lag its launches (eventually consistent), and forgetting an instance that
** runs launches a second one for its pods. Gone means left out of
** MISSING_POLLS listings in a row over MISSING_GRACE_S seconds or more
** (Karpenter's garbage collection looks every two minutes).
**
** Nor when more than MISSING_MASS_PCT percent of the instances held, and
** more than MISSING_MASS_OK, would go at once: that is a listing gone wrong
** (a filter, a region, an API fault), not a fleet gone, and forgetting it
** would launch a second fleet and then delete the first as orphans when the
** listing came back (Cluster Autoscaler stops scaling when more than 45% of
** the nodes, and more than 3, are unready). Nothing is forgotten while it
** lasts; an instance listed as terminated still is, and a machine that is
** really gone has a Node that goes NotReady and is remediated. True when
** any was forgotten. */
#define MISSING_POLLS    3
#define MISSING_GRACE_S  30
#define MISSING_MASS_PCT 45
#define MISSING_MASS_OK  3
static bool missing_due(const instance *k, int64_t now) {
  return k->missing_polls >= MISSING_POLLS && now - k->missing_since >= MISSING_GRACE_S;
}

static bool forget_missing(const cJSON *list) {
  bool changed = false;
  int64_t now = wall();
  size_t due = 0, fresh = 0;
  const char *first = NULL;
  for (size_t i = 0; i < D.insts.n; i++) {
    instance *k = &D.insts.v[i];
    if (listed(list, k->id)) {
      k->missing_since = 0;
      k->missing_polls = 0;
      continue;
    }
    if (!k->missing_polls++) {
      k->missing_since = now;
      if (!fresh++) first = k->id;
    }
    due += missing_due(k, now);
  }
  if (fresh == 1) /* one line a poll, however many: a listing of nothing named a whole fleet a line each */
    logf_("info", "poll", "instance %s: not in the cloud's listing; forgotten if it stays out %d listings and %d s",
          first, MISSING_POLLS, MISSING_GRACE_S);
  else if (fresh)
    logf_("info", "poll",
          "%zu instances (the first, %s) not in the cloud's listing; forgotten if they stay out %d listings and %d s",
          fresh, first, MISSING_POLLS, MISSING_GRACE_S);
  bool mass = due > MISSING_MASS_OK && due * 100 > (size_t)MISSING_MASS_PCT * D.insts.n;
  if (mass && !D.held_back)
    logf_("error", "poll",
          "the cloud's listing has left out %zu of the %zu instances held for %d listings and %d s: taken for a "
          "listing gone wrong, none is forgotten while more than %d%% of them (and more than %d) would be",
          due, D.insts.n, MISSING_POLLS, MISSING_GRACE_S, MISSING_MASS_PCT, MISSING_MASS_OK);
  else if (!mass && D.held_back)
    logf_("info", "poll", "the cloud's listing is no longer taken for one gone wrong (%zu of %zu instances left out)",
          due, D.insts.n);
  D.held_back = mass ? due : 0;
  if (mass) return false;
  for (size_t i = 0; i < D.insts.n;) {
    if (!missing_due(&D.insts.v[i], now)) {
      i++;
      continue;
    }
    log_decision("forget", D.insts.v[i].id, "the cloud no longer has this instance; its pods are pending again");
    char claim[600];
    snprintf(claim, sizeof claim, "%s", D.insts.v[i].claim);
    drop_claim(claim);
    changed = true;
  }
  return changed;
}

/* Whether the stored claim json is one this daemon wrote ahead of a launch
** (a round's or a replacement's), not one applied through the API. */
static bool written_ahead(const char *json) {
  cJSON *o = cJSON_Parse(json);
  const cJSON *an = jget(jget(o, "metadata"), "annotations");
  bool ours = jget(an, DT_A_LAUNCHED) || jget(an, "dovetail.dev/replaces");
  cJSON_Delete(o);
  return ours;
}

/* The first poll after a start: claims this daemon wrote ahead and holds
** without an instance were launched by nobody; their pods are planned again.
** Claims applied through the API are the user's (in flight elsewhere, or a
** registered machine): they are left alone, as before the restart. Then the
** daemon is ready. */
static bool reconcile_claims(void) {
  bool changed = false;
  for (size_t i = 0; i < D.objs.n;) {
    bool has = strncmp(D.objs.v[i].key, "NodeClaim//", 11) != 0; /* only claims need an instance */
    const char *claim = has ? NULL : D.objs.v[i].key + 11;
    if (!has && !written_ahead(D.objs.v[i].json)) has = true; /* applied: not ours to reconcile */
    if (!has) has = inst_of(claim) != NULL;
    if (has) {
      i++;
      continue;
    }
    logf_("info", "reconcile", "NodeClaim %s has no instance: its pods are planned again", claim);
    obj_del(D.objs.v[i].key);
    changed = true;
  }
  D.ready = true;
  logf_("info", "ready", "reconciled with the cloud: %zu instances", D.insts.n);
  if (D.objs.n) arm_batch();
  return changed;
}

/* The cloud's instance list, polled: adopt instances of claims we hold,
** delete orphans, replace instances stopped by preemption (IBM-style polled
** interruptions), note stopped ones, forget what the cloud no longer has. */
void dt__ctl_instances(const cJSON *list) {
  const cJSON *in;
  bool changed = false;
  /* Orphans are deleted only while they are no more than the instances
  ** held: a lost answer or a crash mid-launch leaves a few, while a state
  ** file that is empty, new or another fleet's makes every running instance
  ** look like one, and deleting them would cost the fleet. */
  size_t orphans = 0, held = 0;
  for (size_t i = 0; i < D.insts.n; i++) held += D.insts.v[i].vouched;
  cJSON_ArrayForEach(in, list) {
    const char *id = dt__jstr(in, "id"), *claim = dt__jstr(in, "claim"), *state = dt__jstr(in, "state"),
               *owner = dt__jstr(in, "cluster");
    if (id) dt__namemap_set(&listed_ids, id, strlen(id), 1);
    if (!id || !claim || inst_with_id(id) || (state && !strcmp(state, "terminated"))) continue;
    if (claim_stored(claim))
      held++; /* adopted below */
    else if (owner && !strcmp(owner, D.cluster))
      orphans++;
  }
  bool trusted = orphans <= held;
  unaccounted u = {0};
  cJSON_ArrayForEach(in, list) {
    const char *id = dt__jstr(in, "id"), *claim = dt__jstr(in, "claim"), *state = dt__jstr(in, "state");
    if (!id || !claim) continue;
    instance *kin = inst_with_id(id);
    if (!kin && poll_unknown(list, in, id, claim, state, trusted, &u)) { /* adopted: ours from now */
      changed = true;
      kin = inst_with_id(id);
    }
    if (kin) changed |= poll_known(kin, id, claim, state, dt__jstr(in, "statusReason"));
  }
  if (u.n == 1)
    logf_("warn", "unaccounted",
          "instance %s: the cloud has an instance this daemon cannot account for (%s); left alone", u.first, u.why);
  else if (u.n)
    logf_("warn", "unaccounted",
          "%zu instances the cloud has that this daemon cannot account for (the first, %s: %s); left alone", u.n,
          u.first, u.why);
  for (size_t i = 0; i < D.insts.n; i++) /* listed: its launch is the cloud's now */
    if (!D.insts.v[i].vouched && listed(list, D.insts.v[i].id)) D.insts.v[i].vouched = true;
  changed |= forget_missing(list);
  dt__namemap_free(&listed_ids);
  if (!D.ready) changed |= reconcile_claims();
  if (changed) {
    journal_flush();
    arm_batch();
  }
}

/* A catalog the provider fetched: the round on the thread pool reads the
** current one, so a new one waits for its end. */
void dt__ctl_catalog(dt_catalog *c, const char *etag, size_t bytes) {
  if (D.planning) {
    dt_catalog_free(D.next_cat);
    D.next_cat = c;
  } else {
    dt_catalog_free(D.cat);
    D.cat = c;
    dt__ctl_catalog_changed();
  }
  snprintf(D.catalog_etag, sizeof D.catalog_etag, "%s", etag ? etag : "");
  logf_("info", "catalog", "refreshed from the cloud (%zu bytes, ETag %s)", bytes, D.catalog_etag);
}

void on_poll_timer(uv_timer_t *t) {
  (void)t;
  if (D.prov->poll) D.prov->poll();
}

/* Delete a claim this daemon launched: its instance through the provider,
** the claim from the store; its pods are planned again. */
void delete_instance(const char *claim, const char *why) {
  char subj[KEY_MAX], copy[KEY_MAX];
  snprintf(copy, sizeof copy, "%s", claim);
  snprintf(subj, sizeof subj, "NodeClaim %s", copy);
  const instance *in = inst_of(copy);
  if (in) D.prov->terminate(in->id);
  for (size_t i = 0; in && D.inst_claim_dups && i < D.insts.n; i++) /* a claim held twice (an old state's) */
    if (&D.insts.v[i] != in && !strcmp(D.insts.v[i].claim, copy)) D.prov->terminate(D.insts.v[i].id);
  log_decision("disrupt", subj, why);
  drop_claim(copy);
  D.deleted++;
}
