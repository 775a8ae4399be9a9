/*
** ctl_claims.c: NodeClaims in the store. Pods nominated to the claims a
** round launched, claims that come up (their pods may run) or go (their
** pods are pending again), and replacements that launch before the claims
** they replace are deleted, one group per disruption command.
*/
#define _GNU_SOURCE
#include "cluster.h"
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

/* The stored NodeClaim named claim, its store key in key[0..n); NULL when
** there is none. The pointer is good until the store next changes. */
static const obj *claim_obj(const char *claim, char *key, size_t n) {
  snprintf(key, n, "NodeClaim//%s", claim);
  int at = obj_find(key);
  return at < 0 ? NULL : &D.objs.v[at];
}

bool claim_stored(const char *claim) {
  char key[KEY_MAX + 16];
  return claim_obj(claim, key, sizeof key) != NULL;
}

/* Whether ob's text is the one its pods and event spans were kept for. */
static bool spans_known(const obj *ob) { return ob->span_gen == ob->gen; }

/* The stored NodeClaim named claim, parsed; NULL when there is none. */
cJSON *claim_get(const char *claim) {
  char key[KEY_MAX + 16];
  const obj *ob = claim_obj(claim, key, sizeof key);
  return ob ? cJSON_Parse(ob->json) : NULL;
}

/* Store o as the NodeClaim named claim, and free it. */
void claim_put(const char *claim, cJSON *o) {
  char key[KEY_MAX + 16];
  snprintf(key, sizeof key, "NodeClaim//%s", claim);
  if (o) obj_put(key, o);
  cJSON_Delete(o);
}

#define GONE_S   3600  /* how long a machine let go is remembered */
#define GONE_MAX 10000 /* and how many at most, the oldest forgotten first */

/* Whether the Node of this name and provider ID is the node of a machine:
** named as its claim, or its provider ID ends in "/" and the instance id. */
static bool node_of(const char *name, const char *pid, const char *claim, const char *id) {
  size_t pl = pid ? strlen(pid) : 0, il = id ? strlen(id) : 0;
  return (name && claim && !strcmp(name, claim)) ||
         (pid && il && pl > il && pid[pl - il - 1] == '/' && !strcmp(pid + pl - il, id));
}

/* Node n (as stored under key) marked as being deleted, now. */
static void mark_deleting(const char *key, const cJSON *n) {
  if (dt__jstr(jget(n, "metadata"), "deletionTimestamp")) return;
  cJSON *o = cJSON_Duplicate(n, true);
  char ts[40];
  dt__fmt_time(wall(), ts, sizeof ts);
  if (o) put_in(o, "metadata", "deletionTimestamp", ts);
  if (o) obj_put(key, o);
  cJSON_Delete(o);
}

/* The machines let go by claim and by instance id: each Node applied looks
** itself up here (a re-list of 10,000 Nodes after a 9,000-node pool was
** deleted compared each with every machine, and took twice as long). Built
** again on first use after D.gone changes; a map that ran out of memory
** stays so, and the lookup scans. */
static struct {
  dt_namemap claims, ids; /* keyed by D.gone's strings: the latest entry's index */
  bool stale;
} gone_ix = {.stale = true};

void gone_free(void) {
  for (size_t i = 0; i < D.gone.n; i++) dt__free(D.gone.v[i].claim), dt__free(D.gone.v[i].id);
  dt__free(D.gone.v);
  memset(&D.gone, 0, sizeof D.gone);
  dt__namemap_free(&gone_ix.claims);
  dt__namemap_free(&gone_ix.ids);
  gone_ix.stale = true;
}

static void gone_reindex(void) {
  if (!gone_ix.stale) return;
  dt__namemap_free(&gone_ix.claims);
  dt__namemap_free(&gone_ix.ids);
  for (size_t i = 0; i < D.gone.n; i++) { /* the latest entry of a name wins */
    const char *c = D.gone.v[i].claim, *id = D.gone.v[i].id;
    if (*c) dt__namemap_set(&gone_ix.claims, c, strlen(c), (int32_t)i);
    if (*id) dt__namemap_set(&gone_ix.ids, id, strlen(id), (int32_t)i);
  }
  gone_ix.stale = false;
}

/* The latest machine let go that a Node of this name and provider ID is,
** within GONE_S; -1 when none. */
static int32_t gone_find(const char *name, const char *pid, int64_t now) {
  gone_reindex();
  int32_t at = -1;
  if (gone_ix.claims.oom || gone_ix.ids.oom) {
    for (size_t i = D.gone.n; i-- > 0 && at < 0;)
      if (node_of(name, pid, D.gone.v[i].claim, D.gone.v[i].id)) at = (int32_t)i;
  } else {
    if (name) at = dt__namemap_get(&gone_ix.claims, name, strlen(name), -1);
    for (const char *s = pid ? strchr(pid, '/') : NULL; s; s = strchr(s + 1, '/')) {
      int32_t j = dt__namemap_get(&gone_ix.ids, s + 1, strlen(s + 1), -1);
      if (j > at) at = j;
    }
  }
  return at >= 0 && now - D.gone.v[at].at < GONE_S ? at : -1;
}

int64_t gone_at(const char *id) {
  gone_reindex();
  int32_t at = -1;
  if (gone_ix.ids.oom) {
    for (size_t i = D.gone.n; i-- > 0 && at < 0;)
      if (!strcmp(D.gone.v[i].id, id)) at = (int32_t)i;
  } else {
    at = dt__namemap_get(&gone_ix.ids, id, strlen(id), -1);
  }
  return at < 0 ? -1 : D.gone.v[at].at;
}

/* The daemon let a machine go (deleted it, or the cloud no longer has it):
** its Node takes no new pods from here, as Karpenter's termination deletes
** the Node. The Node in the store is marked as being deleted, and one that
** comes again (a cluster feed that lags) is stored so, for GONE_S. Left
** alone, the Node kept its room: rounds placed new pods on a machine that
** no longer ran, and launched nothing for them. */
void node_gone(const char *claim, const char *id) {
  int64_t now = wall();
  gone_ix.stale = true;
  size_t keep = 0;
  for (size_t i = 0; i < D.gone.n; i++) /* the expired, and the oldest past GONE_MAX - 1 */
    if (now - D.gone.v[i].at < GONE_S && D.gone.n - i < GONE_MAX)
      D.gone.v[keep++] = D.gone.v[i];
    else
      dt__free(D.gone.v[i].claim), dt__free(D.gone.v[i].id);
  D.gone.n = keep;
  struct gone_machine g = {dt__strdup(claim ? claim : ""), dt__strdup(id ? id : ""), now};
  if (!g.claim || !g.id || dt__vec_push(&D.gone, g)) dt__free(g.claim), dt__free(g.id);
  /* by the name and provider ID each Node's put recorded: a search of every
  ** Node's text for the machine made deleting a 5,000-node pool take 5 s */
  for (size_t i = 0; i < D.objs.n; i++) {
    const obj *ob = &D.objs.v[i];
    if (ob->kind != OBJ_NODE || strncmp(ob->key, "Node//", 6) || !node_of(ob->key + 6, ob->pid, claim, id)) continue;
    cJSON *n = cJSON_Parse(ob->json);
    if (n) mark_deleting(ob->key, n); /* replaces in place: i stays valid */
    cJSON_Delete(n);
  }
}

bool awaits_node(void) {
  const char *r = D.registration ? D.registration : "launch";
  return !strcmp(r, "node") || (!strcmp(r, "auto") && D.seen_node);
}

/* Whether the Node n of claim has initialized as Karpenter's lifecycle
** controller judges it (and the plans' initializing nodes read it):
** labelled karpenter.sh/initialized, or Ready with none of the ephemeral
** taints and none of the claim's startupTaints (key, value and effect). */
static bool node_initialized(const cJSON *n, const char *claim) {
  const char *lab = dt__jstr(jget(jget(n, "metadata"), "labels"), "karpenter.sh/initialized");
  if (lab && !strcmp(lab, "true")) return true;
  if (!cond_true(n, "Ready")) return false;
  cJSON *k = claim_get(claim);
  const cJSON *startup = jget(jget(k, "spec"), "startupTaints");
  bool tainted = false;
  const cJSON *t;
  cJSON_ArrayForEach(t, jget(jget(n, "spec"), "taints")) {
    const char *key = dt__jstr(t, "key");
    if (!key) continue;
    tainted |= dt__ephemeral_taint(key);
    const cJSON *st;
    cJSON_ArrayForEach(st, startup) {
      static const char *const f[] = {"key", "value", "effect"};
      bool same = true;
      for (int q = 0; q < 3 && same; q++) {
        const char *a = dt__jstr(st, f[q]), *b = dt__jstr(t, f[q]);
        same = !strcmp(a ? a : "", b ? b : "");
      }
      tainted |= same;
    }
  }
  cJSON_Delete(k);
  return !tainted;
}

/* A Node applied: the node of a machine the daemon let go is stored as
** being deleted (node_gone); else, when it is the node of a claim this
** daemon launched (by the provider ID ending in the instance id), the claim
** records it in status.nodeName, as Karpenter's registration does, so that
** plans and disruption passes see one machine, not the claim and a second,
** empty node. */
bool node_up_for(const char *claim, const char *id) {
  for (size_t i = 0; i < D.objs.n; i++) {
    const obj *ob = &D.objs.v[i];
    if (ob->kind != OBJ_NODE || strncmp(ob->key, "Node//", 6) || !node_of(ob->key + 6, ob->pid, claim, id)) continue;
    cJSON *n = cJSON_Parse(ob->json);
    bool up = n && !dt__jstr(jget(n, "metadata"), "deletionTimestamp") && node_initialized(n, claim);
    cJSON_Delete(n);
    if (up) return true;
  }
  return false;
}

void node_applied(const cJSON *n) {
  int64_t now = wall();
  const char *nname = dt__jstr(jget(n, "metadata"), "name"), *pid = dt__jstr(jget(n, "spec"), "providerID");
  if (gone_find(nname, pid, now) >= 0) {
    char key[KEY_MAX + 16];
    snprintf(key, sizeof key, "Node//%s", nname ? nname : "");
    mark_deleting(key, n);
    return;
  }
  const instance *in = n ? node_instance(n) : NULL;
  const char *name = dt__jstr(jget(n, "metadata"), "name");
  if (in && !in->initialized && awaits_node() && node_initialized(n, in->claim)) {
    char claim[KEY_MAX];
    snprintf(claim, sizeof claim, "%s", in->claim);
    node_up(claim); /* Karpenter's registration and initialization: it takes pods; a replacement lets the old go */
    state_dirty();
    in = inst_of(claim);
  }
  /* a Node named as its claim is paired with it by that name
  ** (dt__claims_paired); only a Node named otherwise needs the record */
  cJSON *o = in && name && strcmp(name, in->claim) ? claim_get(in->claim) : NULL;
  if (o) {
    const char *had = dt__jstr(jget(o, "status"), "nodeName");
    if (!had || strcmp(had, name)) {
      char claim[KEY_MAX];
      snprintf(claim, sizeof claim, "%s", in->claim);
      put_in(o, "status", "nodeName", name);
      claim_put(claim, o);
      o = NULL;
    }
  }
  cJSON_Delete(o);
}

/* o.field.key = v, creating the field's object. */
void put_in(cJSON *o, const char *field, const char *key, const char *v) {
  cJSON *f = jget(o, field);
  if (!cJSON_IsObject(f)) {
    cJSON_DeleteItemFromObjectCaseSensitive(o, field);
    f = cJSON_AddObjectToObject(o, field);
  }
  cJSON_DeleteItemFromObjectCaseSensitive(f, key);
  cJSON_AddStringToObject(f, key, v);
}

void set_annotation(cJSON *o, const char *k, const char *v) {
  cJSON *md = jget(o, "metadata");
  if (md) put_in(md, "annotations", k, v);
}

/* The time of the claim's last pod event, which consolidateAfter counts from. */
void pod_event(cJSON *o) {
  char ts[40];
  dt__fmt_time(wall(), ts, sizeof ts);
  put_in(o, "status", "lastPodEventTime", ts);
}

typedef struct binding {
  const char *node;
  char *pod;
} binding;

static int binding_cmp(const void *a, const void *b) {
  const binding *x = a, *y = b;
  int c = strcmp(x->node, y->node);
  return c ? c : strcmp(x->pod, y->pod);
}

/*
** Pods a round binds to in-flight claims are nominated to them, as
** Karpenter nominates pods to the NodeClaims that will hold them: the pods
** go into the claim's dovetail.dev/pods, so the next round does not plan
** them again and a disruption pass counts them on the claim.
*/

static void nominate_to(const char *claim, const binding *bs, size_t n);

/* The placements on Nodes the disruption passes hold, replaced. */
void assumed_free(void) {
  for (size_t i = 0; i < D.nassumed; i++) {
    dt__free(D.assumed_pods[i]);
    dt__free(D.assumed_nodes[i]);
  }
  dt__free(D.assumed_pods);
  dt__free(D.assumed_nodes);
  D.assumed_pods = D.assumed_nodes = NULL;
  D.nassumed = 0;
}

/* A placement the next disruption pass holds: pod on node (a Node, or a
** claim for a CapacityBuffer's chunk). */
static void assume(const char *pod, const char *node) {
  char *ap = dt__strdup(pod), *an = ap ? dt__strdup(node) : NULL;
  if (an) {
    D.assumed_pods[D.nassumed] = ap;
    D.assumed_nodes[D.nassumed++] = an;
  } else {
    dt__free(ap);
  }
}

void nominate(const dt_plan *p) {
  size_t n = dt_plan_binding_count(p), nv = 0;
  /* CapacityBuffers' chunks are never nominated: where the round placed them
  ** (a new claim, one in flight, a Node) is held by the next pass, as
  ** Karpenter keeps a node hosting buffer pods from being empty */
  for (size_t i = 0, nc = dt_plan_claim_count(p); i < nc; i++) {
    dt_claim_info c;
    if (!dt_plan_claim(p, i, &c)) nv += c.nvirtual;
  }
  binding *bs = dt__calloc(n ? n : 1, sizeof *bs);
  assumed_free();
  D.assumed_pods = dt__calloc(n + nv ? n + nv : 1, sizeof *D.assumed_pods);
  D.assumed_nodes = dt__calloc(n + nv ? n + nv : 1, sizeof *D.assumed_nodes);
  if (!bs || !D.assumed_pods || !D.assumed_nodes) {
    dt__free(bs);
    assumed_free();
    return;
  }
  for (size_t i = 0, nc = dt_plan_claim_count(p); i < nc; i++) {
    dt_claim_info c;
    if (dt_plan_claim(p, i, &c)) continue;
    for (size_t j = c.npods - c.nvirtual; j < c.npods; j++) assume(c.pods[j], c.name);
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    char pod[600];
    const char *node;
    if (dt_plan_binding(p, i, pod, sizeof pod, &node)) continue;
    char key[KEY_MAX + 16];
    if (dt__plan_binding_virtual(p, i)) { /* a buffer's chunk: held, never bound */
      assume(pod, node);
      continue;
    }
    if (!claim_obj(node, key, sizeof key)) { /* a Node: the kube-scheduler binds; until then, held there */
      if (D.obs && D.obs->bound) D.obs->bound(D.obs->ud, node, pod);
      assume(pod, node);
      continue;
    }
    if (!(bs[k].pod = dt__strdup(pod))) continue;
    bs[k++].node = node;
  }
  qsort(bs, k, sizeof *bs, binding_cmp);
  for (size_t i = 0; i < k;) {
    size_t j = i;
    while (j < k && !strcmp(bs[j].node, bs[i].node)) j++;
    nominate_to(bs[i].node, bs + i, j - i);
    i = j;
  }
  for (size_t i = 0; i < k; i++) dt__free(bs[i].pod);
  dt__free(bs);
}

/*
** Replacements are launched before the nodes they replace are deleted
** (Karpenter's order): the old claims are tainted karpenter.sh/disrupted
** (no new pods, no second command) while the replacement launches; once it
** has launched and initialized, they are deleted; if it fails, they are
** untainted and stay.
*/

static void taint_disrupted(const char *claim, bool on) {
  cJSON *o = claim_get(claim);
  if (!o) return;
  cJSON *spec = jget(o, "spec");
  if (!spec) spec = cJSON_AddObjectToObject(o, "spec");
  cJSON *ts = jget(spec, "taints");
  if (!cJSON_IsArray(ts)) {
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "taints");
    ts = cJSON_AddArrayToObject(spec, "taints");
  }
  int at = -1, i = 0;
  const cJSON *t;
  cJSON_ArrayForEach(t, ts) {
    if (dt__jstr(t, "key") && !strcmp(dt__jstr(t, "key"), "karpenter.sh/disrupted")) at = i;
    i++;
  }
  if (on && at < 0) {
    cJSON *nt = cJSON_CreateObject();
    cJSON_AddStringToObject(nt, "key", "karpenter.sh/disrupted");
    cJSON_AddStringToObject(nt, "effect", "NoSchedule");
    cJSON_AddItemToArray(ts, nt);
  } else if (!on && at >= 0) {
    cJSON_DeleteItemFromArray(ts, at);
  }
  claim_put(claim, o);
}

bool being_replaced(const char *claim) {
  for (size_t i = 0; i < D.replacing.n; i++) {
    const char *s = D.replacing.v[i].olds;
    size_t n = strlen(claim);
    for (const char *q = strstr(s, claim); q; q = strstr(q + 1, claim))
      if ((q == s || q[-1] == ',') && (q[n] == 0 || q[n] == ',')) return true;
  }
  return false;
}

/* The replacement claim launched (ok) or failed: carry out or abort. */
void replacement_done(const char *claim, bool ok) {
  int at = -1;
  for (size_t i = 0; i < D.replacing.n && at < 0; i++)
    if (!strcmp(D.replacing.v[i].claim, claim)) at = (int)i;
  if (at < 0) return;
  replacing *r = &D.replacing.v[at];
  uint64_t group = r->group;
  size_t waiting = 0, members = 0;
  r->launched = ok;
  for (size_t i = 0; i < D.replacing.n; i++) {
    waiting += D.replacing.v[i].group == group && !D.replacing.v[i].launched;
    members += D.replacing.v[i].group == group;
  }
  if (ok && waiting) return; /* the command's other replacements are still on their way */
  /* every replacement of the command has launched, or one failed: the old
  ** claims go, or stay untainted (replacements already up stay as capacity) */
  char *olds = r->olds, *why = r->why;
  r->olds = r->why = NULL;
  for (char *s = olds, *e; s && *s; s = e ? e + 1 : NULL) {
    e = strchr(s, ',');
    if (e) *e = 0;
    char subj[KEY_MAX], reason[900];
    snprintf(subj, sizeof subj, "NodeClaim %s", s);
    if (ok) {
      snprintf(reason, sizeof reason, "%s: replaced by NodeClaim %s%s, which has launched; deleted", why, claim,
               members > 1 ? " and the command's other replacements" : "");
      delete_instance(s, reason);
    } else {
      snprintf(reason, sizeof reason, "%s: replacement NodeClaim %s failed to launch; the node stays", why, claim);
      log_decision("disrupt-aborted", subj, reason);
      taint_disrupted(s, false);
    }
  }
  dt__free(olds);
  dt__free(why);
  for (size_t i = 0; i < D.replacing.n;) {
    replacing *q = &D.replacing.v[i];
    if (q->group != group) {
      i++;
      continue;
    }
    dt__free(q->claim), dt__free(q->olds), dt__free(q->why);
    D.replacing.v[i] = D.replacing.v[--D.replacing.n];
  }
  state_dirty();
  arm_batch();
}

/* A replacement claim as the provisioner writes its claims, from its
** NodePool as stored: the template's labels, annotations, taints, startup
** taints, nodeClassRef, expireAfter and terminationGracePeriod, its
** requirements narrowed to the offering, the owner reference, and the
** hashes drift is told by (the template's, and its EC2NodeClass's when
** stored); without them a replacement could never drift. */
static void from_pool(cJSON *o, const char *pool, const char *type, const char *zone, const char *ct,
                      const dt_label_info *labels, size_t nlabels) {
  char key[KEY_MAX + 16];
  snprintf(key, sizeof key, "NodePool//%s", pool);
  int at = obj_find(key);
  if (at < 0) return;
  const char *text = D.objs.v[at].json;
  cJSON *np = cJSON_Parse(text);
  dt_manifests *m = np ? dt_manifests_new() : NULL;
  dt_error err = {0};
  if (!m || dt_manifests_add_buffer(m, key, text, strlen(text), &err) || m->pools.n != 1) {
    dt_manifests_free(m);
    cJSON_Delete(np);
    return;
  }
  const dt_nodepool *p = &m->pools.v[0];
  const char *ncname = dt__jstr(p->node_class_ref, "name"), *nckind = dt__jstr(p->node_class_ref, "kind");
  if (ncname && nckind && !strcmp(nckind, "EC2NodeClass")) {
    snprintf(key, sizeof key, "EC2NodeClass//%s", ncname);
    int nat = obj_find(key);
    if (nat >= 0) dt_manifests_add_buffer(m, key, D.objs.v[nat].json, strlen(D.objs.v[nat].json), &err);
  }
  const dt_nodeclass *nc = dt__nodeclass_of(m, p, NULL);
  cJSON *md = jget(o, "metadata");
  for (size_t z = 0; nc && z < nc->nzones; z++) /* the zone's ID from its subnets, as the provisioner's claims */
    if (nc->zone_ids[z] && !strcmp(nc->zones[z], zone)) put_in(md, "labels", DT_L_ZONE_ID, nc->zone_ids[z]);
  const cJSON *tmpl = jget(jget(np, "spec"), "template"), *tspec = jget(tmpl, "spec"), *c;
  cJSON_ArrayForEach(c, jget(jget(tmpl, "metadata"), "labels")) if (cJSON_IsString(c) &&
                                                                    !jget(jget(md, "labels"), c->string))
      put_in(md, "labels", c->string, c->valuestring);
  cJSON_ArrayForEach(c, jget(jget(tmpl, "metadata"), "annotations")) if (cJSON_IsString(c))
      set_annotation(o, c->string, c->valuestring);
  cJSON *ann = jget(md, "annotations");
  if (ann)
    dt__claim_drift_marks(ann, p->hash, nc ? &nc->hash : NULL, nc ? nc->k_hash : NULL, nc ? nc->k_hash_version : NULL);
  dt__claim_owner(md, p->name, p->uid);
  cJSON *spec = cJSON_AddObjectToObject(o, "spec");
  static const char *const copied[] = {"nodeClassRef", "taints", "startupTaints", "expireAfter",
                                       "terminationGracePeriod"};
  for (size_t i = 0; spec && i < sizeof copied / sizeof *copied; i++)
    if (jget(tspec, copied[i])) {
      cJSON *c2 = cJSON_Duplicate(jget(tspec, copied[i]), 1);
      if (c2 && !cJSON_AddItemToObject(spec, copied[i], c2)) cJSON_Delete(c2);
    }
  cJSON *reqs = spec ? cJSON_AddArrayToObject(spec, "requirements") : NULL;
  static const char *const pinned[] = {DT_L_INSTANCE_TYPE, DT_L_ZONE, DT_L_CAPACITY_TYPE};
  const char *vals[] = {type, zone, ct};
  cJSON_ArrayForEach(c, jget(tspec, "requirements")) {
    const char *k = dt__jstr(c, "key");
    bool pin = false;
    for (int i = 0; i < 3 && k; i++) pin |= !strcmp(k, pinned[i]);
    for (size_t i = 0; i < nlabels && k; i++) pin |= !strcmp(k, labels[i].key);
    if (reqs && !pin) cJSON_AddItemToArray(reqs, cJSON_Duplicate(c, 1));
  }
  for (size_t i = 0; reqs && i < 3 + nlabels; i++) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "key", i < 3 ? pinned[i] : labels[i - 3].key);
    cJSON_AddStringToObject(r, "operator", "In");
    cJSON *v = cJSON_AddArrayToObject(r, "values");
    if (v) cJSON_AddItemToArray(v, cJSON_CreateString(i < 3 ? vals[i] : labels[i - 3].value));
    cJSON_AddItemToArray(reqs, r);
  }
  dt_manifests_free(m);
  cJSON_Delete(np);
}

/* The labels a stored claim's requirements pinned beyond its offering and
** NodePool (In one value, carried as that label: a value a pod required, or
** one a topology spread took), at most max, into out; the strings claim's. */
size_t claim_pinned_labels(const cJSON *claim, dt_label_info *out, size_t max) {
  static const char *const offering[] = {DT_L_INSTANCE_TYPE, DT_L_ZONE, DT_L_CAPACITY_TYPE, DT_L_NODEPOOL};
  const cJSON *labels = jget(jget(claim, "metadata"), "labels"), *r;
  size_t n = 0;
  cJSON_ArrayForEach(r, jget(jget(claim, "spec"), "requirements")) {
    const char *k = dt__jstr(r, "key"), *op = dt__jstr(r, "operator");
    const cJSON *v = jget(r, "values");
    if (!k || !op || strcmp(op, "In") || cJSON_GetArraySize(v) != 1 || !cJSON_IsString(v->child) || n == max) continue;
    bool skip = false;
    for (size_t i = 0; i < sizeof offering / sizeof *offering; i++) skip |= !strcmp(k, offering[i]);
    const char *have = dt__jstr(labels, k);
    if (!skip && have && !strcmp(have, v->child->valuestring)) out[n++] = (dt_label_info){k, have};
  }
  return n;
}

/* Launch a claim named name of this offering, carrying pods, to replace
** the claims in olds (comma-separated) for why. */
void replace_with(const char *name, const char *pool, const char *type, const char *zone, const char *ct,
                  const dt_label_info *labels, size_t nlabels, const char *pods, const char *olds, const char *why,
                  uint64_t group, double price, const dt_resource_info *req, size_t nreq) {
  if (!pool || !type || !zone || !ct) return; /* a command without its offering: nothing to launch */
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "apiVersion", "karpenter.sh/v1");
  cJSON_AddStringToObject(o, "kind", "NodeClaim");
  cJSON *md = cJSON_AddObjectToObject(o, "metadata");
  cJSON_AddStringToObject(md, "name", name);
  cJSON *lab = cJSON_AddObjectToObject(md, "labels");
  cJSON_AddStringToObject(lab, "karpenter.sh/nodepool", pool);
  cJSON_AddStringToObject(lab, "node.kubernetes.io/instance-type", type);
  cJSON_AddStringToObject(lab, "topology.kubernetes.io/zone", zone);
  cJSON_AddStringToObject(lab, "karpenter.sh/capacity-type", ct);
  if (!strcmp(ct, "spot")) cJSON_AddStringToObject(lab, "cluster.x-k8s.io/interruptible", "true");
  for (size_t i = 0; i < nlabels; i++) put_in(md, "labels", labels[i].key, labels[i].value);
  set_annotation(o, DT_A_PODS, pods);
  set_annotation(o, "dovetail.dev/replaces", olds);
  set_annotation(o, DT_A_LAUNCHED, "true");
  if (price >= 0) { /* what a round's claim carries: its price, what its pods request */
    char tmp[64];
    dt__fmt_price(tmp, sizeof tmp, price);
    set_annotation(o, "dovetail.dev/price", tmp);
  }
  from_pool(o, pool, type, zone, ct, labels, nlabels);
  for (size_t i = 0; i < nreq; i++) {
    cJSON *spec = jget(o, "spec");
    if (!cJSON_IsObject(spec)) spec = cJSON_AddObjectToObject(o, "spec");
    cJSON *res = jget(spec, "resources");
    if (!cJSON_IsObject(res)) res = cJSON_AddObjectToObject(spec, "resources");
    put_in(res, "requests", req[i].name, req[i].quantity);
  }
  pod_event(o);
  replacing r = {dt__strdup(name), dt__strdup(olds), dt__strdup(why), group, false};
  if (!r.claim || !r.olds || !r.why || dt__vec_push(&D.replacing, r)) {
    dt__free(r.claim), dt__free(r.olds), dt__free(r.why);
    cJSON_Delete(o);
    return;
  }
  claim_put(name, o);
  for (const char *s = olds; *s;) {
    const char *e = strchr(s, ',');
    char one[KEY_MAX];
    snprintf(one, sizeof one, "%.*s", (int)(e ? e - s : (ptrdiff_t)strlen(s)), s);
    taint_disrupted(one, true);
    if (!e) break;
    s = e + 1;
  }
  char subj[KEY_MAX], reason[1200];
  snprintf(subj, sizeof subj, "NodeClaim %s", olds);
  snprintf(reason, sizeof reason, "%s: launching replacement NodeClaim %s (%s in %s, %s) before deleting", why, name,
           type, zone, ct);
  log_decision("replace", subj, reason);
}

/* Launch the replacements of a command, written ahead first. Each is staged
** before any launches: a launch may answer at once, and the old claims go
** only when all of them are up. */
void launch_group(uint64_t group) {
  journal_flush();
  DT_VEC(char *) names = {0};
  for (size_t i = 0; i < D.replacing.n; i++) {
    char *n = D.replacing.v[i].group == group ? dt__strdup(D.replacing.v[i].claim) : NULL;
    if (n && dt__vec_push(&names, n)) dt__free(n);
  }
  for (size_t i = 0; i < names.n; i++) {
    bool staged = false; /* still: an earlier one may have failed and ended the group */
    for (size_t k = 0; k < D.replacing.n && !staged; k++) staged = !strcmp(D.replacing.v[k].claim, names.v[i]);
    cJSON *o = staged ? claim_get(names.v[i]) : NULL;
    const cJSON *lab = jget(jget(o, "metadata"), "labels");
    const char *type = dt__jstr(lab, DT_L_INSTANCE_TYPE), *zone = dt__jstr(lab, DT_L_ZONE);
    const char *ct = dt__jstr(lab, DT_L_CAPACITY_TYPE), *pool = dt__jstr(lab, DT_L_NODEPOOL);
    if (type && zone && ct && pool) launch_claim(names.v[i], type, zone, ct, pool);
    cJSON_Delete(o);
    dt__free(names.v[i]);
  }
  dt__free(names.v);
}

/* The pods nominated to a claim, or "" (owned by the caller). */
char *claim_pods(const char *claim) {
  char key[KEY_MAX + 16];
  const obj *ob = claim_obj(claim, key, sizeof key);
  if (ob && spans_known(ob)) return dt__strndup(ob->json + ob->pods_at, ob->pods_end - ob->pods_at);
  cJSON *o = ob ? cJSON_Parse(ob->json) : NULL;
  const char *p = dt__jstr(jget(jget(o, "metadata"), "annotations"), DT_A_PODS);
  char *s = dt__strdup(p ? p : "");
  cJSON_Delete(o);
  return s;
}

/* Tell the observer which pods may run on an initialized claim now. */
void claim_running(const char *claim) {
  if (!D.obs || !D.obs->running || !inst_of(claim)) return;
  char *p = claim_pods(claim);
  if (p) D.obs->running(D.obs->ud, claim, p);
  dt__free(p);
}

/*
** Taking a departed pod out of its claim's nominated pods happens once per
** pod that leaves, on a claim whose text grows with its pods. Reading and
** printing the claim each time gives text that differs from the stored one
** only in two string values: the pods annotation, which set_annotation
** leaves last in the annotations, and status.lastPodEventTime, which
** pod_event leaves last in the status. So the first change prints the
** claim once with markers in those places and keeps where they are in the
** text (obj.span_gen, pods_at..event_end); a later change while the text is
** the same (its gen unchanged) writes the new values into those places,
** byte for byte what reading and printing would give. Spans are kept only
** when both markers occur once and both values are plain text (no byte
** that JSON escapes), so the text between them is the printer's.
*/
#define MARK_PODS       "\001pods\001" /* octal: a hex escape would take the "e" of "event" */
#define MARK_EVENT      "\001event\001"
#define MARK_PODS_JSON  "\\u0001pods\\u0001" /* as cJSON prints them */
#define MARK_EVENT_JSON "\\u0001event\\u0001"

static bool plain(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == '"' || s[i] == '\\') return false;
  return true;
}

/* The one occurrence of mark in t, or NULL. */
static const char *only(const char *t, const char *mark) {
  const char *at = strstr(t, mark);
  return at && !strstr(at + 1, mark) ? at : NULL;
}

/* cur[0..n) without the names equal to name, as a comma list (the reader's
** own walk: empty names stay). *found tells whether name was there. */
static void list_without(dt_buf *b, const char *cur, size_t n, const char *name, bool *found) {
  size_t nl = strlen(name);
  const char *end = cur + n, *ra = NULL, *re = NULL; /* a run of entries kept, copied in one piece */
  for (const char *s = cur; s && s < end;) {
    const char *e = memchr(s, ',', (size_t)(end - s));
    size_t len = e ? (size_t)(e - s) : (size_t)(end - s);
    bool drop = len == nl && !memcmp(s, name, nl);
    if (len && !drop) {
      if (!ra) ra = s;
      re = s + len;
    } else { /* the run ends here: entries joined by commas, after one when b has something */
      if (ra) {
        if (b->len) dt__buf_putc(b, ',');
        dt__buf_putn(b, ra, (size_t)(re - ra));
        ra = NULL;
      }
      if (drop)
        *found = true;
      else if (b->len) /* an empty entry */
        dt__buf_putc(b, ',');
    }
    s = e ? e + 1 : NULL;
  }
  if (ra) {
    if (b->len) dt__buf_putc(b, ',');
    dt__buf_putn(b, ra, (size_t)(re - ra));
  }
}

/* Store under key the text t with pods and ev in place of the spans
** [pa, pe) and [ea, ee) (disjoint), and keep their new places. */
static void put_spliced(const char *key, const char *t, size_t pa, size_t pe, size_t ea, size_t ee, const char *pods,
                        size_t np, const char *ev, size_t ne) {
  size_t n = strlen(t), first_a = pa < ea ? pa : ea, first_e = pa < ea ? pe : ee;
  size_t second_a = pa < ea ? ea : pa, second_e = pa < ea ? ee : pe;
  const char *v1 = pa < ea ? pods : ev, *v2 = pa < ea ? ev : pods;
  size_t n1 = pa < ea ? np : ne, n2 = pa < ea ? ne : np;
  char *out = dt__malloc(n - (first_e - first_a) - (second_e - second_a) + n1 + n2 + 1), *w = out;
  if (!out) return; /* out of memory: the claim keeps the pod */
  memcpy(w, t, first_a), w += first_a;
  memcpy(w, v1, n1), w += n1;
  size_t a1 = first_a, e1 = first_a + n1;
  memcpy(w, t + first_e, second_a - first_e), w += second_a - first_e;
  size_t a2 = (size_t)(w - out);
  memcpy(w, v2, n2), w += n2;
  size_t e2 = (size_t)(w - out);
  memcpy(w, t + second_e, n - second_e + 1);
  if (obj_put_text(key, out)) return;
  obj *ob = &D.objs.v[obj_find(key)];
  ob->span_gen = ob->gen;
  ob->pods_at = (uint32_t)(pa < ea ? a1 : a2), ob->pods_end = (uint32_t)(pa < ea ? e1 : e2);
  ob->event_at = (uint32_t)(pa < ea ? a2 : a1), ob->event_end = (uint32_t)(pa < ea ? e2 : e1);
}

/* The claim o with pods as its nominated pods and a pod event now, stored
** under key; its spans kept when the markers allow. */
static void put_marked(const char *key, cJSON *o, const char *pods, const char *ev) {
  set_annotation(o, DT_A_PODS, MARK_PODS);
  put_in(o, "status", "lastPodEventTime", MARK_EVENT);
  char *t = cJSON_PrintUnformatted(o);
  const char *mp = t ? only(t, MARK_PODS_JSON) : NULL, *me = t ? only(t, MARK_EVENT_JSON) : NULL;
  if (mp && me && plain(pods, strlen(pods)) && plain(ev, strlen(ev)) && strlen(t) < UINT32_MAX) {
    size_t pa = (size_t)(mp - t), ea = (size_t)(me - t);
    put_spliced(key, t, pa, pa + strlen(MARK_PODS_JSON), ea, ea + strlen(MARK_EVENT_JSON), pods, strlen(pods), ev,
                strlen(ev));
    dt__free(t);
    return;
  }
  dt__free(t);
  set_annotation(o, DT_A_PODS, pods);
  put_in(o, "status", "lastPodEventTime", ev);
  obj_put(key, o);
}

/* Store claim key's nominated pods (b) with a pod event at ts: spliced into
** its text where its spans are known (spans), else put back from its parse
** tree o. The claim is found again: the store may have changed since. */
static void put_pods(const char *key, bool spans, cJSON *o, const dt_buf *b, const char *ts) {
  if (!spans) {
    put_marked(key, o, b->p ? b->p : "", ts);
    return;
  }
  const obj *ob = &D.objs.v[obj_find(key)];
  put_spliced(key, ob->json, ob->pods_at, ob->pods_end, ob->event_at, ob->event_end, b->p ? b->p : "", b->len, ts,
              strlen(ts));
}

/* Take name out of a claim's nominated pods; true when it was there. A
** pod that leaves a node is a pod event (consolidateAfter counts again). */
bool unnominate(const char *claim, const char *name) {
  char key[KEY_MAX + 16], ts[40];
  const obj *ob = claim_obj(claim, key, sizeof key);
  if (!ob) return false;
  bool found = false, spans = spans_known(ob);
  dt_buf b = {0};
  cJSON *o = NULL;
  if (spans) {
    list_without(&b, ob->json + ob->pods_at, ob->pods_end - ob->pods_at, name, &found);
  } else {
    o = cJSON_Parse(ob->json);
    const char *cur = dt__jstr(jget(jget(o, "metadata"), "annotations"), DT_A_PODS);
    if (cur) list_without(&b, cur, strlen(cur), name, &found);
  }
  if (found && !b.oom) {
    dt__fmt_time(wall(), ts, sizeof ts);
    put_pods(key, spans, o, &b, ts);
  }
  cJSON_Delete(o);
  dt__free(b.p);
  return found;
}

/* Add bs[0..n) (one claim's) to the claim's nominated pods, with a pod
** event; the claim's text is read and printed only when its spans are not
** known. */
static void nominate_to(const char *claim, const binding *bs, size_t n) {
  char key[KEY_MAX + 16], ts[40], why[200];
  const obj *ob = claim_obj(claim, key, sizeof key);
  if (!ob) return;
  bool spans = spans_known(ob);
  for (size_t j = 0; j < n && spans; j++) spans = plain(bs[j].pod, strlen(bs[j].pod));
  cJSON *o = spans ? NULL : cJSON_Parse(ob->json);
  const char *cur = o ? dt__jstr(jget(jget(o, "metadata"), "annotations"), DT_A_PODS) : NULL;
  dt_buf b = {0};
  if (spans)
    dt__buf_putn(&b, ob->json + ob->pods_at, ob->pods_end - ob->pods_at);
  else
    dt__buf_puts(&b, cur ? cur : "");
  for (size_t j = 0; j < n; j++) {
    if (b.len) dt__buf_putc(&b, ',');
    dt__buf_puts(&b, bs[j].pod);
  }
  if ((spans || o) && !b.oom) {
    dt__fmt_time(wall(), ts, sizeof ts);
    snprintf(why, sizeof why, "%zu pending pods nominated to it", n);
    log_decision("nominate", claim, why);
    put_pods(key, spans, o, &b, ts);
    claim_running(claim);
  }
  cJSON_Delete(o);
  dt__free(b.p);
}
