/*
** serve.c: `dovetail serve`, the daemon. One libuv loop runs everything: the
** HTTP API (h2o on libuv), the provisioning batch window, the policy file
** watch, signals, and the provider. Objects applied through the API are kept
** as JSON text keyed by kind/namespace/name; a plan round parses them into a
** dt_manifests, plans, and launches the new NodeClaims through the provider.
** Launched claims go back into the store (with the pods they carry), so the
** next round sees them as in-flight capacity. State is written atomically
** (write, fsync, rename) after every change and read back at start.
**
** Providers: `sim`, an in-process cloud (launch latency zero, capacity
** unbounded unless --sim-ice marks offerings as out of capacity).
*/
#define _GNU_SOURCE
#include "dovetail.h"
#include "httpc.h"
#include "httpd.h"
#include "internal.h"

#include "../lua/policy.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#define MAX_DECISIONS 200

typedef struct obj {
  char *key;  /* Kind/namespace/name */
  char *json; /* the object, compact JSON */
} obj;

typedef struct instance {
  char *id, *claim, *type, *zone, *ct, *pool;
  double price;
  int64_t launched;
} instance;

typedef struct dtd {
  uv_loop_t *loop;
  dt_httpd http;
  uv_timer_t idle, max, debounce;
  uv_signal_t sighup, sigterm, sigint;
  uv_fs_event_t watch;
  bool watching, batch_open, stopping;
  /* configuration */
  const char *listen_host, *state_path, *policy_path, *token, *log_format;
  int port;
  uint64_t idle_ms, max_ms;
  int64_t ttl; /* unavailable marks, seconds */
  size_t body_limit;
  DT_VEC(char *) sim_ice; /* "type/zone/capacity-type" out of capacity in the sim cloud */
  const char *provider, *cloud_url, *cluster;
  uint64_t poll_ms, timeout_ms;
  int retries;
  uv_timer_t poll, circuit_timer;
  int64_t circuit_until;
  unsigned consecutive_failures;
  bool ready;
  bool state_valid; /* a state file this daemon can trust was read or written */
  char catalog_etag[256];
  uint64_t jitter;
  uint64_t provider_err;
  uint64_t start_seed;
  uv_timer_t state_timer, disrupt;
  uint64_t disrupt_ms;
  uv_timer_t again; /* a round after failed launches, so no pod is left waiting */
  dt_catalog *cat;
  dt_policy *policy;
  /* state */
  DT_VEC(obj) objs;
  DT_VEC(instance) insts;
  cJSON *decisions; /* recent, newest last */
  char *last_plan;
  uint64_t round, seq;
  char reload_result[600];
  /* metrics */
  double plan_ms_sum, cost;
  uint64_t plan_buckets[8], plans, pending, launched[3], reloads_ok, reloads_failed, provider_ok, provider_ice;
  uint64_t events;
} dtd;

static dtd D;

static const char *interruption_action(const char *kind, const instance *in, const char *state, const char *def);
static void reload_config(void);

static const double k_buckets[8] = {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5};

static int64_t wall(void) { return (int64_t)time(NULL); }

static cJSON *jget(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }
static const char *jstr(const cJSON *o, const char *k) { return cJSON_GetStringValue(jget(o, k)); }

/* ------------------------------------------------------------ logging */

static void logf_(const char *level, const char *event, const char *fmt, ...) DT_PRINTF(3, 4);
static void logf_(const char *level, const char *event, const char *fmt, ...) {
  char msg[2000], ts[40];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  dt__fmt_time(wall(), ts, sizeof ts);
  if (D.log_format && !strcmp(D.log_format, "logfmt")) {
    fprintf(stderr, "time=%s level=%s event=%s msg=\"%s\"\n", ts, level, event, msg);
  } else {
    dt_buf b = {0};
    dt__buf_printf(&b, "{\"time\":\"%s\",\"level\":\"%s\",\"event\":\"%s\",\"msg\":", ts, level, event);
    dt__buf_json_str(&b, msg);
    dt__buf_puts(&b, "}\n");
    if (b.p) fputs(b.p, stderr);
    dt__free(b.p);
  }
  fflush(stderr);
}

static void decision(const char *kind, const char *subject, const char *reason) {
  cJSON *d = cJSON_CreateObject();
  char ts[40];
  dt__fmt_time(wall(), ts, sizeof ts);
  cJSON_AddStringToObject(d, "time", ts);
  cJSON_AddStringToObject(d, "kind", kind);
  cJSON_AddStringToObject(d, "subject", subject);
  cJSON_AddStringToObject(d, "reason", reason);
  cJSON_AddItemToArray(D.decisions, d);
  while (cJSON_GetArraySize(D.decisions) > MAX_DECISIONS) cJSON_DeleteItemFromArray(D.decisions, 0);
  logf_("info", kind, "%s: %s", subject, reason);
}

/* ------------------------------------------------------------ the store */

static int obj_find(const char *key) {
  for (size_t i = 0; i < D.objs.n; i++)
    if (!strcmp(D.objs.v[i].key, key)) return (int)i;
  return -1;
}

static int obj_put(const char *key, const cJSON *o) {
  char *json = cJSON_PrintUnformatted(o);
  if (!json) return DT_ENOMEM;
  int at = obj_find(key);
  if (at >= 0) {
    free(D.objs.v[at].json);
    D.objs.v[at].json = json;
    return 0;
  }
  obj ob = {dt__strdup(key), json};
  if (!ob.key || dt__vec_push(&D.objs, ob)) {
    dt__free(ob.key);
    free(json);
    return DT_ENOMEM;
  }
  return 0;
}

static bool obj_del(const char *key) {
  int at = obj_find(key);
  if (at < 0) return false;
  dt__free(D.objs.v[at].key);
  free(D.objs.v[at].json);
  D.objs.v[at] = D.objs.v[--D.objs.n];
  return true;
}

/* Kubernetes' own bounds: names are DNS subdomains (253), namespaces DNS
** labels (63); kinds are short. Within them every key fits KEY_MAX, so two
** objects never share a key by truncation. */
#define KEY_MAX 400

/* The store key of an object, "Kind/namespace/name"; 0, or -1 with why. */
static int obj_key(const cJSON *o, char *out, size_t n, const char **why) {
  const cJSON *md = jget(o, "metadata");
  const char *kind = jstr(o, "kind");
  const char *ns = jstr(md, "namespace");
  const char *name = jstr(md, "name");
  bool cluster = kind && (!strcmp(kind, "NodePool") || !strcmp(kind, "NodeClaim") || !strcmp(kind, "Node") ||
                          !strcmp(kind, "RuntimeClass") || !strcmp(kind, "UnavailableOffering"));
  *why = !kind || !*kind       ? "kind: missing"
         : strlen(kind) > 63   ? "kind: longer than 63 characters"
         : !name || !*name     ? "metadata.name: missing"
         : strlen(name) > 253  ? "metadata.name: longer than 253 characters"
         : ns && strlen(ns) > 63 ? "metadata.namespace: longer than 63 characters"
                               : NULL;
  if (*why) return -1;
  snprintf(out, n, "%s/%s/%s", kind, cluster ? "" : (ns && *ns ? ns : "default"), name);
  return 0;
}

static int key_cmp(const void *a, const void *b) { return strcmp(((const obj *)a)->key, ((const obj *)b)->key); }

/* All objects as one manifest set (in key order, so rounds are deterministic). */
static dt_manifests *manifests(dt_error *err) {
  if (D.objs.n) qsort(D.objs.v, D.objs.n, sizeof *D.objs.v, key_cmp);
  dt_manifests *m = dt_manifests_new();
  if (!m) {
    snprintf(err->msg, sizeof err->msg, "out of memory");
    return NULL;
  }
  for (size_t i = 0; i < D.objs.n; i++)
    if (dt_manifests_add_buffer(m, D.objs.v[i].key, D.objs.v[i].json, strlen(D.objs.v[i].json), err)) {
      dt_manifests_free(m);
      return NULL;
    }
  return m;
}

/* ------------------------------------------------------------ state file */

static int save_state(void) {
  if (!D.state_path) return 0;
  uv_timer_stop(&D.state_timer);
  /* objects are kept as JSON text: the file is their concatenation */
  dt_buf b = {0};
  dt__buf_puts(&b, "{\"objects\":[");
  for (size_t i = 0; i < D.objs.n; i++) {
    if (i) dt__buf_putc(&b, ',');
    dt__buf_puts(&b, D.objs.v[i].json);
  }
  dt__buf_puts(&b, "],\"instances\":[");
  for (size_t i = 0; i < D.insts.n; i++) {
    const instance *in = &D.insts.v[i];
    dt__buf_puts(&b, i ? ",{\"id\":" : "{\"id\":");
    dt__buf_json_str(&b, in->id);
    dt__buf_puts(&b, ",\"claim\":");
    dt__buf_json_str(&b, in->claim);
    dt__buf_puts(&b, ",\"instanceType\":");
    dt__buf_json_str(&b, in->type);
    dt__buf_puts(&b, ",\"zone\":");
    dt__buf_json_str(&b, in->zone);
    dt__buf_puts(&b, ",\"capacityType\":");
    dt__buf_json_str(&b, in->ct);
    dt__buf_puts(&b, ",\"nodePool\":");
    dt__buf_json_str(&b, in->pool);
    dt__buf_printf(&b, ",\"launched\":%lld}", (long long)in->launched);
  }
  dt__buf_puts(&b, "]}\n");
  if (b.oom) {
    dt__free(b.p);
    return DT_ENOMEM;
  }
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", D.state_path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  bool ok = fd >= 0 && write(fd, b.p, b.len) == (ssize_t)b.len && fsync(fd) == 0;
  if (fd >= 0) ok &= close(fd) == 0;
  ok = ok && rename(tmp, D.state_path) == 0;
  dt__free(b.p);
  if (!ok) {
    logf_("error", "state", "cannot write %s: %s", D.state_path, strerror(errno));
    unlink(tmp);
    return DT_EIO;
  }
  D.state_valid = true;
  return 0;
}

static void on_state_timer(uv_timer_t *t) {
  (void)t;
  save_state();
}

/* Applied objects are written within 50 ms, many applies in one write;
** launches and instance changes are written at once (save_state). */
static void state_dirty(void) {
  if (D.state_path && !uv_is_active((uv_handle_t *)&D.state_timer))
    uv_timer_start(&D.state_timer, on_state_timer, 50, 0);
}

static void inst_free(instance *in) {
  dt__free(in->id);
  dt__free(in->claim);
  dt__free(in->type);
  dt__free(in->zone);
  dt__free(in->ct);
  dt__free(in->pool);
}

static int add_instance(const char *id, const char *claim, const char *type, const char *zone, const char *ct,
                        const char *pool, double price, int64_t launched) {
  for (size_t i = 0; id && i < D.insts.n; i++)
    if (!strcmp(D.insts.v[i].id, id)) return 0; /* adopted by a poll while its launch reply was on the way */
  /* A provider may leave fields out (GET /instances without nodePool): an
  ** instance is only ever adopted with an id and a claim. */
  if (!id || !claim) return DT_EINVAL;
  instance in = {dt__strdup(id),         dt__strdup(claim),    dt__strdup(type ? type : ""),
                 dt__strdup(zone ? zone : ""), dt__strdup(ct ? ct : ""), dt__strdup(pool ? pool : ""),
                 price,                  launched};
  if (!in.id || !in.claim || !in.type || !in.zone || !in.ct || !in.pool || dt__vec_push(&D.insts, in)) {
    inst_free(&in);
    return DT_ENOMEM;
  }
  return 0;
}

/* Read the state back. A file whose shape is wrong stops the start: read as
** empty, it would make every running instance look like an orphan. The
** sim provider's instance list is the state's own, so reconciling adopts
** every instance whose claim is in the store and forgets the rest. */
static int load_state(dt_error *err) {
  if (!D.state_path || access(D.state_path, F_OK)) return 0;
  char *text;
  size_t len;
  if (dt__read_file(D.state_path, &text, &len, err)) return DT_EIO;
  cJSON *root = cJSON_ParseWithLength(text, len);
  dt__free(text);
  const char *path = D.state_path;
  if (!root) return dt__err(err, DT_EINVAL, "%s: not a dovetail state file (invalid JSON)", path);
  const cJSON *objs = jget(root, "objects"), *insts = jget(root, "instances"), *o;
  int rc = 0;
  size_t i = 0;
  if (!cJSON_IsObject(root))
    rc = dt__err(err, DT_EINVAL, "%s: not a dovetail state file (expected an object with objects[] and instances[])",
                 path);
  else if (!cJSON_IsArray(objs) || !cJSON_IsArray(insts))
    rc = dt__err(err, DT_EINVAL, "%s: not a dovetail state file: %s: missing or not an array", path,
                 !cJSON_IsArray(objs) ? "objects" : "instances");
  const cJSON *scan = rc ? NULL : objs;
  cJSON_ArrayForEach(o, scan) {
    char key[KEY_MAX];
    const char *why;
    if (!cJSON_IsObject(o) || obj_key(o, key, sizeof key, &why)) {
      rc = dt__err(err, DT_EINVAL, "%s: objects[%zu]: %s", path, i, cJSON_IsObject(o) ? why : "expected an object");
      break;
    }
    i++;
  }
  i = 0;
  scan = rc ? NULL : insts;
  cJSON_ArrayForEach(o, scan) {
    static const char *const need[] = {"id", "claim", "instanceType", "zone", "capacityType"};
    for (size_t k = 0; k < 5 && !rc; k++)
      if (!jstr(o, need[k]) || !*jstr(o, need[k]))
        rc = dt__err(err, DT_EINVAL, "%s: instances[%zu].%s: missing or not a string", path, i, need[k]);
    i++;
  }
  if (rc) {
    cJSON_Delete(root);
    return rc;
  }
  cJSON_ArrayForEach(o, objs) {
    char key[KEY_MAX];
    const char *why;
    if (!obj_key(o, key, sizeof key, &why)) obj_put(key, o);
  }
  cJSON_ArrayForEach(o, insts) {
    const char *claim = jstr(o, "claim");
    char key[KEY_MAX + 16];
    snprintf(key, sizeof key, "NodeClaim//%s", claim);
    if (obj_find(key) < 0) continue; /* its claim is gone: forget it */
    add_instance(jstr(o, "id"), claim, jstr(o, "instanceType"), jstr(o, "zone"), jstr(o, "capacityType"),
                 jstr(o, "nodePool"), cJSON_GetNumberValue(jget(o, "price")),
                 (int64_t)cJSON_GetNumberValue(jget(o, "launched")));
  }
  cJSON_Delete(root);
  D.state_valid = true;
  logf_("info", "state", "read %s: %zu objects, %zu instances", D.state_path, D.objs.n, D.insts.n);
  return 0;
}

static void arm_batch(void);

/* ------------------------------------------------------------ provider */

/* Mark an offering unavailable for the TTL (an UnavailableOffering object). */
static void mark_unavailable(const char *ct, const char *type, const char *zone, const char *why) {
  char ts[40], name[600], key[800];
  dt__fmt_time(wall() + D.ttl, ts, sizeof ts);
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
  decision("unavailable", subj, reason);
}

/* Drop marks whose time has come. */
static void expire_marks(void) {
  int64_t now = wall();
  for (size_t i = 0; i < D.objs.n;) {
    if (strncmp(D.objs.v[i].key, "UnavailableOffering/", 20)) {
      i++;
      continue;
    }
    cJSON *o = cJSON_Parse(D.objs.v[i].json);
    const char *e = jstr(jget(o, "spec"),
                                                                          "expiresAt");
    int64_t t = 0;
    bool gone = e && !dt_time_parse(e, &t, NULL) && t <= now;
    cJSON_Delete(o);
    if (gone)
      obj_del(D.objs.v[i].key);
    else
      i++;
  }
}

/* The sim cloud: launches succeed unless the offering is listed by --sim-ice. */
static int sim_launch(const char *type, const char *zone, const char *ct, char *id, size_t n) {
  char k[600];
  snprintf(k, sizeof k, "%s/%s/%s", type, zone, ct);
  for (size_t i = 0; i < D.sim_ice.n; i++)
    if (!strcmp(D.sim_ice.v[i], k)) return -1;
  snprintf(id, n, "i-%016llx", (unsigned long long)dt__hash64(k, strlen(k)) ^ (unsigned long long)++D.seq);
  return 0;
}

/* ------------------------------------------------------------ provider */

typedef struct launch_ctx {
  char *claim, *type, *zone, *ct, *pool;
  int attempt;
  uv_timer_t retry;
} launch_ctx;

static void lc_free(uv_handle_t *h) {
  launch_ctx *lc = h->data;
  dt__free(lc->claim);
  dt__free(lc->type);
  dt__free(lc->zone);
  dt__free(lc->ct);
  dt__free(lc->pool);
  dt__free(lc);
}

static void lc_done(launch_ctx *lc) { uv_close((uv_handle_t *)&lc->retry, lc_free); }

static void drop_claim(const char *claim) {
  char key[800];
  snprintf(key, sizeof key, "NodeClaim//%s", claim);
  obj_del(key);
  for (size_t i = 0; i < D.insts.n; i++)
    if (!strcmp(D.insts.v[i].claim, claim)) {
      inst_free(&D.insts.v[i]);
      D.insts.v[i] = D.insts.v[--D.insts.n];
      break;
    }
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

static void on_circuit_close(uv_timer_t *t) {
  (void)t;
  logf_("info", "circuit", "closed: launches resume");
  arm_batch();
}

static void on_again(uv_timer_t *t) {
  (void)t;
  if (D.circuit_until <= wall()) arm_batch();
}

/* The outcome of a launch: 0 launched (id), 1 insufficient capacity, 2 failed. */
static void launch_done(launch_ctx *lc, int outcome, const char *id, const char *msg) {
  char subj[800], reason[1200];
  snprintf(subj, sizeof subj, "NodeClaim %s", lc->claim);
  if (outcome == 0) {
    D.provider_ok++;
    D.consecutive_failures = 0;
    int cti = !strcmp(lc->ct, "reserved") ? 0 : !strcmp(lc->ct, "spot") ? 1 : 2;
    D.launched[cti]++;
    add_instance(id, lc->claim, lc->type, lc->zone, lc->ct, lc->pool, 0, wall());
    claim_initialized(lc->claim);
    snprintf(reason, sizeof reason, "launched %s as %s in %s (%s) for NodePool %s", id, lc->type, lc->zone, lc->ct,
             lc->pool);
    decision("launch", subj, reason);
  } else if (outcome == 1) {
    D.provider_ice++;
    D.consecutive_failures = 0;
    snprintf(reason, sizeof reason, "launch of %s in %s (%s) failed: InsufficientCapacity", lc->type, lc->zone, lc->ct);
    decision("launch-failed", subj, reason);
    mark_unavailable(lc->ct, lc->type, lc->zone, "insufficient capacity at launch");
    drop_claim(lc->claim);
    arm_batch();
  } else {
    D.provider_err++;
    snprintf(reason, sizeof reason, "launch of %s in %s (%s) failed: %s; its pods wait for the next round", lc->type,
             lc->zone, lc->ct, msg);
    decision("launch-failed", subj, reason);
    drop_claim(lc->claim);
    uv_timer_start(&D.again, on_again, 2000, 0);
  }
  save_state();
  lc_done(lc);
}

static void http_launch(launch_ctx *lc);

static void on_retry(uv_timer_t *t) { http_launch(t->data); }

static void on_launch_reply(void *ud, long status, const char *body, size_t len, const char *etag, const char *err) {
  (void)etag;
  launch_ctx *lc = ud;
  if (status == 201) {
    cJSON *o = cJSON_ParseWithLength(body, len);
    const char *id = jstr(o, "id");
    char idb[200];
    snprintf(idb, sizeof idb, "%s", id ? id : "");
    cJSON_Delete(o);
    if (idb[0]) {
      launch_done(lc, 0, idb, NULL);
      return;
    }
    err = "201 without an instance id";
  } else if (status == 409) {
    launch_done(lc, 1, NULL, NULL);
    return;
  }
  char msg[300];
  snprintf(msg, sizeof msg, "%s", err ? err : "");
  if (!err) snprintf(msg, sizeof msg, "HTTP %ld", status);
  /* 4xx other than 409 will not get better by retrying */
  bool retry = status == 0 || status >= 500 || status == 429;
  if (++D.consecutive_failures >= 5 && D.circuit_until <= wall()) {
    D.circuit_until = wall() + 30;
    uv_timer_start(&D.circuit_timer, on_circuit_close, 30000, 0);
    logf_("error", "circuit", "open for 30s after %u consecutive provider failures (last: %s)", D.consecutive_failures, msg);
  }
  if (retry && lc->attempt < D.retries && D.circuit_until <= wall()) {
    /* jittered exponential backoff: 500 ms x 2^attempt x [0.5, 1.5) */
    D.jitter = D.jitter * 6364136223846793005ull + 1442695040888963407ull;
    double j = 0.5 + (double)(D.jitter >> 11) / 9007199254740992.0;
    uint64_t delay = (uint64_t)(500.0 * (double)(1u << lc->attempt) * j);
    logf_("warn", "retry", "NodeClaim %s: %s; retry %d in %llu ms", lc->claim, msg, lc->attempt + 1,
          (unsigned long long)delay);
    uv_timer_start(&lc->retry, on_retry, delay, 0);
    return;
  }
  launch_done(lc, 2, NULL, msg);
}

static void http_launch(launch_ctx *lc) {
  if (D.circuit_until > wall()) {
    launch_done(lc, 2, NULL, "the provider circuit is open");
    return;
  }
  lc->attempt++;
  cJSON *b = cJSON_CreateObject();
  cJSON_AddStringToObject(b, "cluster", D.cluster);
  cJSON_AddStringToObject(b, "claim", lc->claim);
  cJSON_AddStringToObject(b, "instanceType", lc->type);
  cJSON_AddStringToObject(b, "zone", lc->zone);
  cJSON_AddStringToObject(b, "capacityType", lc->ct);
  cJSON_AddStringToObject(b, "nodePool", lc->pool);
  char *body = cJSON_PrintUnformatted(b);
  cJSON_Delete(b);
  char url[1200];
  snprintf(url, sizeof url, "%s/instances", D.cloud_url);
  if (!body || dt__httpc_request("POST", url, body, NULL, (long)D.timeout_ms, on_launch_reply, lc))
    launch_done(lc, 2, NULL, "cannot start the request");
  free(body);
}

static void launch(const char *claim, const char *type, const char *zone, const char *ct, const char *pool) {
  launch_ctx *lc = dt__calloc(1, sizeof *lc);
  if (!lc) return;
  lc->claim = dt__strdup(claim);
  lc->type = dt__strdup(type);
  lc->zone = dt__strdup(zone);
  lc->ct = dt__strdup(ct);
  lc->pool = dt__strdup(pool);
  uv_timer_init(D.loop, &lc->retry);
  lc->retry.data = lc;
  if (!lc->claim || !lc->type || !lc->zone || !lc->ct || !lc->pool) {
    lc_done(lc);
    return;
  }
  if (D.cloud_url) {
    http_launch(lc);
    return;
  }
  char id[64];
  if (sim_launch(type, zone, ct, id, sizeof id))
    launch_done(lc, 1, NULL, NULL);
  else
    launch_done(lc, 0, id, NULL);
}

static void on_delete_reply(void *ud, long status, const char *body, size_t len, const char *etag, const char *err) {
  (void)body, (void)len, (void)etag;
  char *id = ud;
  if (status != 200 && status != 404) logf_("warn", "delete", "instance %s: %s", id, err ? err : "unexpected status");
  dt__free(id);
}

/* Poll the cloud's instance list: forget what it no longer has, adopt
** instances of claims we hold, and replace instances stopped by preemption
** (IBM-style polled interruptions). */
static void on_instances(void *ud, long status, const char *body, size_t len, const char *etag, const char *err) {
  (void)ud, (void)etag;
  if (status != 200) {
    logf_("warn", "poll", "GET /instances: %s", err ? err : "unexpected status");
    return;
  }
  cJSON *o = cJSON_ParseWithLength(body, len);
  const cJSON *list = jget(o, "instances"), *in;
  bool changed = false;
  /* adopt: claims in the store without an instance, which the cloud has */
  cJSON_ArrayForEach(in, list) {
    const char *id = jstr(in, "id");
    const char *claim = jstr(in, "claim");
    const char *state = jstr(in, "state");
    const char *why = jstr(in, "statusReason");
    if (!id || !claim) continue;
    char key[800];
    snprintf(key, sizeof key, "NodeClaim//%s", claim);
    bool known = false;
    for (size_t i = 0; i < D.insts.n && !known; i++) known = !strcmp(D.insts.v[i].id, id);
    if (!known && obj_find(key) >= 0) {
      add_instance(id, claim, jstr(in, "instanceType"),
                   jstr(in, "zone"),
                   jstr(in, "capacityType"),
                   jstr(in, "nodePool"), 0, wall());
      decision("adopt", id, "the cloud has an instance for a claim we hold");
      known = changed = true;
    }
    if (!known && D.ready && state && strcmp(state, "terminated")) {
      /* Launched for a claim this daemon no longer holds: garbage, but only
      ** when the instance carries this cluster's name and a state file this
      ** daemon wrote or read says what it holds. Anything else is left
      ** alone: a lost or foreign state must never cost a fleet. */
      const char *owner = jstr(in, "cluster");
      if (!owner || strcmp(owner, D.cluster) || !D.state_valid) {
        char why2[300];
        snprintf(why2, sizeof why2, "the cloud has an instance this daemon cannot account for (%s); left alone",
                 !owner ? "no cluster tag" : strcmp(owner, D.cluster) ? "another cluster's" : "no state file");
        logf_("warn", "unaccounted", "instance %s: %s", id, why2);
        continue;
      }
      decision("orphan", id, "the cloud has an instance for a claim this daemon does not hold: deleted");
      char url[1200];
      snprintf(url, sizeof url, "%s/instances/%s", D.cloud_url, id);
      char *idc = dt__strdup(id);
      if (idc && dt__httpc_request("DELETE", url, NULL, NULL, (long)D.timeout_ms, on_delete_reply, idc)) dt__free(idc);
      continue;
    }
    const instance *kin = NULL;
    for (size_t i = 0; i < D.insts.n && !kin; i++)
      if (!strcmp(D.insts.v[i].id, id)) kin = &D.insts.v[i];
    if (known && kin && state && !strcmp(state, "stopped") && why && !strcmp(why, "stopped_by_preemption") &&
        strcmp(interruption_action("preemption", kin, state, "drain"), "ignore")) {
      char subj[300], reason[600];
      snprintf(subj, sizeof subj, "instance %s", id);
      mark_unavailable(jstr(in, "capacityType"),
                       jstr(in, "instanceType"),
                       jstr(in, "zone"), "stopped by preemption");
      snprintf(reason, sizeof reason, "stopped by preemption: delete it and replace NodeClaim %s", claim);
      decision("interruption", subj, reason);
      char url[1200];
      snprintf(url, sizeof url, "%s/instances/%s", D.cloud_url, id);
      char *idc = dt__strdup(id);
      if (idc && dt__httpc_request("DELETE", url, NULL, NULL, (long)D.timeout_ms, on_delete_reply, idc)) dt__free(idc);
      drop_claim(claim);
      D.events++;
      changed = true;
    }
  }
  /* forget: instances the cloud no longer has (and claims never launched) */
  for (size_t i = 0; i < D.insts.n;) {
    bool seen = false;
    cJSON_ArrayForEach(in, list) seen |= !strcmp(jstr(in, "id") ?: "",
                                                 D.insts.v[i].id);
    if (seen) {
      i++;
      continue;
    }
    decision("forget", D.insts.v[i].id, "the cloud no longer has this instance; its pods are pending again");
    char claim[600];
    snprintf(claim, sizeof claim, "%s", D.insts.v[i].claim);
    drop_claim(claim);
    changed = true;
  }
  if (!D.ready) {
    /* claims held without an instance after a restart: launched by nobody */
    for (size_t i = 0; i < D.objs.n;) {
      if (strncmp(D.objs.v[i].key, "NodeClaim//", 11)) {
        i++;
        continue;
      }
      const char *claim = D.objs.v[i].key + 11;
      bool has = false;
      for (size_t k = 0; k < D.insts.n && !has; k++) has = !strcmp(D.insts.v[k].claim, claim);
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
  }
  cJSON_Delete(o);
  if (changed) {
    save_state();
    arm_batch();
  }
}

static void on_catalog(void *ud, long status, const char *body, size_t len, const char *etag, const char *err) {
  (void)ud;
  if (status == 304) return;
  if (status != 200) {
    logf_("warn", "catalog", "GET /catalog: %s", err ? err : "unexpected status");
    return;
  }
  dt_catalog *c = NULL;
  dt_error e = {0};
  if (dt_catalog_load_buffer("cloud:/catalog", body, len, &c, &e)) {
    logf_("error", "catalog", "the cloud's catalog is invalid, keeping the current one: %s", e.msg);
    return;
  }
  dt_catalog_free(D.cat);
  D.cat = c;
  snprintf(D.catalog_etag, sizeof D.catalog_etag, "%s", etag ? etag : "");
  logf_("info", "catalog", "refreshed from the cloud (%zu bytes, ETag %s)", len, D.catalog_etag);
}

static void on_poll_timer(uv_timer_t *t) {
  (void)t;
  char url[1200];
  snprintf(url, sizeof url, "%s/instances?cluster=%s", D.cloud_url, D.cluster);
  if (dt__httpc_request("GET", url, NULL, NULL, (long)D.timeout_ms, on_instances, NULL))
    logf_("error", "poll", "cannot start GET /instances");
  snprintf(url, sizeof url, "%s/catalog", D.cloud_url);
  if (dt__httpc_request("GET", url, NULL, D.catalog_etag[0] ? D.catalog_etag : NULL, (long)D.timeout_ms, on_catalog,
                        NULL))
    logf_("error", "catalog", "cannot start GET /catalog");
}

/* ------------------------------------------------------------ disruption */

static void on_delete_reply(void *ud, long status, const char *body, size_t len, const char *etag, const char *err);

/* Every --disrupt-interval: one disruption pass over the cluster the daemon
** holds. A command is carried out by deleting the claims it names (only
** claims this daemon launched); their pods are planned again in the next
** round, which launches the replacement the command priced. */
static void on_disrupt(uv_timer_t *t) {
  (void)t;
  if (!D.ready || D.batch_open) return; /* provisioning first, as Karpenter's pending-pods rule */
  dt_error err = {0};
  expire_marks();
  dt_manifests *m = manifests(&err);
  if (!m) return;
  dt_disrupt_opts o = {0};
  o.now = wall();
  o.seed = D.start_seed ^ ++D.round;
  o.policy = D.policy;
  dt_disruption *d = NULL;
  if (dt_disrupt_run(D.cat, m, &o, &d, &err)) {
    logf_("error", "disrupt", "%s", err.msg);
    dt_manifests_free(m);
    return;
  }
  char *text = dt_disrupt_render(d, DT_FORMAT_JSON, NULL);
  cJSON *r = text ? cJSON_Parse(text) : NULL;
  dt_free(text);
  const cJSON *c, *n;
  bool changed = false;
  cJSON_ArrayForEach(c, jget(r, "commands")) {
    const char *reason = jstr(c, "reason");
    const char *action = jstr(c, "action");
    cJSON_ArrayForEach(n, jget(c, "nodes")) {
      const char *name = jstr(n, "name");
      int at = -1;
      for (size_t i = 0; name && i < D.insts.n && at < 0; i++)
        if (!strcmp(D.insts.v[i].claim, name)) at = (int)i;
      char subj[700], why[900];
      snprintf(subj, sizeof subj, "NodeClaim %s", name ? name : "?");
      if (at < 0) {
        snprintf(why, sizeof why, "%s %s: not a claim this daemon launched; left to its owner", reason, action);
        decision("disrupt-skipped", subj, why);
        continue;
      }
      snprintf(why, sizeof why, "%s: %s (instance %s)", reason, action, D.insts.v[at].id);
      decision("disrupt", subj, why);
      if (D.cloud_url) {
        char url[1200];
        snprintf(url, sizeof url, "%s/instances/%s", D.cloud_url, D.insts.v[at].id);
        char *idc = dt__strdup(D.insts.v[at].id);
        if (idc && dt__httpc_request("DELETE", url, NULL, NULL, (long)D.timeout_ms, on_delete_reply, idc)) dt__free(idc);
      }
      char claim[600];
      snprintf(claim, sizeof claim, "%s", name);
      drop_claim(claim);
      changed = true;
    }
  }
  cJSON_Delete(r);
  dt_disrupt_free(d);
  dt_manifests_free(m);
  if (changed) {
    save_state();
    arm_batch();
  }
}

/* ------------------------------------------------------------ a round */

static void plan_round(void) {
  dt_error err = {0};
  expire_marks();
  dt_manifests *m = manifests(&err);
  if (!m) {
    logf_("error", "plan", "%s", err.msg);
    return;
  }
  dt_plan_opts o = {0};
  o.now = wall();
  o.seed = ++D.round ^ D.start_seed; /* claim names differ across restarts */
  o.policy = D.policy;
  dt_plan *p = NULL;
  double t0 = dt__now_ms();
  if (dt_plan_run(D.cat, m, &o, &p, &err)) {
    logf_("error", "plan", "%s", err.msg);
    dt_manifests_free(m);
    return;
  }
  double ms = dt__now_ms() - t0;
  D.plans++;
  D.plan_ms_sum += ms / 1000;
  for (int b = 0; b < 8; b++)
    if (ms / 1000 <= k_buckets[b]) D.plan_buckets[b]++;
  dt_plan_stats st;
  dt_plan_stats_get(p, &st);
  size_t len;
  char *yaml = dt_plan_render(p, DT_FORMAT_YAML, NULL);
  dt_free(D.last_plan);
  D.last_plan = dt_plan_render(p, DT_FORMAT_JSON, &len);
  D.pending = st.unschedulable;
  /* Launch every new claim; the applyable YAML carries the pods they take. */
  cJSON *docs = NULL;
  typedef struct claim {
    const cJSON *obj;
    const char *name, *type, *zone, *ct, *pool;
  } claim;
  DT_VEC(claim) cs = {0};
  if (yaml && !dt__doc_parse("plan", yaml, strlen(yaml), &docs, &err)) {
    const cJSON *c;
    cJSON_ArrayForEach(c, docs) {
      const cJSON *lab = jget(jget(c, "metadata"), "labels");
      claim k = {c, jstr(jget(c, "metadata"), "name"), jstr(lab, "node.kubernetes.io/instance-type"),
                 jstr(lab, "topology.kubernetes.io/zone"), jstr(lab, "karpenter.sh/capacity-type"),
                 jstr(lab, "karpenter.sh/nodepool")};
      if (!k.name || !k.type || !k.zone || !k.ct || !k.pool) continue;
      char key[800];
      snprintf(key, sizeof key, "NodeClaim//%s", k.name);
      obj_put(key, c); /* in flight from now: the next round does not launch its pods again */
      if (dt__vec_push(&cs, k)) logf_("error", "plan", "out of memory: NodeClaim %s is not launched", k.name);
    }
  }
  /* Write ahead: the claims are in the state file before any request leaves,
  ** so a crash mid-launch finds them at restart and adopts what the cloud
  ** made for them (launches are idempotent per claim). */
  if (cs.n) save_state();
  for (size_t i = 0; i < cs.n; i++) launch(cs.v[i].name, cs.v[i].type, cs.v[i].zone, cs.v[i].ct, cs.v[i].pool);
  dt__free(cs.v);
  cJSON_Delete(docs);
  dt_free(yaml);
  D.cost = st.hourly_cost;
  logf_("info", "plan", "round %llu: %zu pending pods, %zu scheduled, %zu new claims, %zu unschedulable, %.1f ms",
        (unsigned long long)D.round, st.pods, st.scheduled, st.nodes, st.unschedulable, ms);
  dt_plan_free(p);
  dt_manifests_free(m);
  state_dirty(); /* marks that expired; launches wrote their own */
}

static void on_batch(uv_timer_t *t) {
  (void)t;
  uv_timer_stop(&D.idle);
  uv_timer_stop(&D.max);
  D.batch_open = false;
  plan_round();
}

/* A change arrived: (re)start the idle window; the max window bounds it. */
static void arm_batch(void) {
  uv_timer_start(&D.idle, on_batch, D.idle_ms, 0);
  if (!D.batch_open) {
    D.batch_open = true;
    uv_timer_start(&D.max, on_batch, D.max_ms, 0);
  }
}

/* ------------------------------------------------------------ reload */

static void reload(const char *why) {
  if (!D.policy) return;
  dt_error err = {0};
  int changed = 0;
  char ts[40];
  dt__fmt_time(wall(), ts, sizeof ts);
  if (dt_policy_reload(D.policy, &changed, &err)) {
    D.reloads_failed++;
    snprintf(D.reload_result, sizeof D.reload_result, "%s: kept the previous policy: %s", ts, err.msg);
    logf_("error", "reload", "%s (%s): %s; the previous policy stays in force", D.policy_path, why, err.msg);
  } else if (changed) {
    D.reloads_ok++;
    snprintf(D.reload_result, sizeof D.reload_result, "%s: reloaded (hooks: %s)", ts, dt_policy_hooks(D.policy));
    logf_("info", "reload", "%s (%s): reloaded; hooks: %s", D.policy_path, why, dt_policy_hooks(D.policy));
  }
}

static void on_debounce(uv_timer_t *t) {
  (void)t;
  reload("file changed");
}

static void on_watch(uv_fs_event_t *h, const char *file, int events, int status) {
  (void)h;
  (void)events;
  (void)status;
  const char *base = strrchr(D.policy_path, '/');
  base = base ? base + 1 : D.policy_path;
  if (file && strcmp(file, base)) return;
  uv_timer_start(&D.debounce, on_debounce, 30, 0); /* editors write in bursts */
}

static void on_close_noop(uv_handle_t *h) { (void)h; }

static void on_signal(uv_signal_t *s, int sig) {
  if (sig == SIGHUP) {
    reload("SIGHUP");
    reload_config();
    return;
  }
  if (D.stopping) return;
  D.stopping = true;
  logf_("info", "stop", "signal %d: writing state and stopping", sig);
  int rc = save_state();
  logf_(rc ? "error" : "info", "stop", rc ? "state NOT written" : "state written");
  uv_stop(s->loop);
}

/* ------------------------------------------------------------ HTTP */

#define respond dt__httpd_respond
#define respond_error dt__httpd_error
#define path_is dt__httpd_path
#define method_is dt__httpd_method

static bool authorized(h2o_req_t *req) {
  if (!D.token) return true;
  ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);
  if (i < 0) return false;
  const h2o_iovec_t *v = &req->headers.entries[i].value;
  size_t tl = strlen(D.token);
  return v->len == tl + 7 && !memcmp(v->base, "Bearer ", 7) && !memcmp(v->base + 7, D.token, tl);
}

static int put_objects(h2o_req_t *req) {
  dt_error err = {0};
  cJSON *docs = NULL;
  if (!req->entity.len) return respond_error(req, 400, "empty body: send YAML or JSON objects");
  if (dt__doc_parse("request", req->entity.base, req->entity.len, &docs, &err)) return respond_error(req, 400, err.msg);
  /* validate first: nothing is stored unless every object reads */
  dt_manifests *check = dt_manifests_new();
  int rc = check ? dt_manifests_add_buffer(check, "request", req->entity.base, req->entity.len, &err) : DT_ENOMEM;
  dt_manifests_free(check);
  if (rc) {
    cJSON_Delete(docs);
    return respond_error(req, 400, err.msg);
  }
  size_t n = 0;
  const cJSON *d;
  for (int pass = 0; pass < 2; pass++) /* check every key, then store */
    cJSON_ArrayForEach(d, docs) {
      const cJSON *items = jget(d, "items");
      const cJSON *one = d;
      const cJSON *list = cJSON_IsArray(items) ? items->child : NULL;
      for (const cJSON *o = list ? list : one; o; o = list ? o->next : NULL) {
        if (!cJSON_IsObject(o)) continue;
        char key[KEY_MAX];
        const char *why;
        if (obj_key(o, key, sizeof key, &why)) {
          char msg[300];
          snprintf(msg, sizeof msg, "request: %s", why);
          cJSON_Delete(docs);
          return respond_error(req, 400, msg);
        }
        if (pass == 1) {
          obj_put(key, o);
          n++;
        }
      }
    }
  cJSON_Delete(docs);
  char msg[100];
  snprintf(msg, sizeof msg, "{\"applied\":%zu}\n", n);
  logf_("debug", "apply", "%zu objects applied", n);
  state_dirty();
  arm_batch();
  return respond(req, 200, "application/json", msg, strlen(msg));
}

/* Percent-decode one path segment into out; -1 when it is malformed or
** decodes to a '/' (names never hold one: "%2F" is not a separator). */
static int path_segment(const char *s, size_t n, char *out, size_t cap) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int c = (unsigned char)s[i];
    if (c == '%') {
      if (i + 2 >= n) return -1;
      char hex[3] = {s[i + 1], s[i + 2], 0}, *end;
      c = (int)strtol(hex, &end, 16);
      if (*end || c == 0) return -1;
      i += 2;
    }
    if (c == '/' || k + 1 >= cap) return -1;
    out[k++] = (char)c;
  }
  out[k] = 0;
  return 0;
}

static int delete_object(h2o_req_t *req, const char *p, size_t len) {
  /* /v1/objects/{kind}/{ns}/{name}; ns "-" for cluster-scoped objects */
  char seg[3][260], key[KEY_MAX * 2];
  int nseg = 0;
  bool ok = true;
  for (size_t at = 0; ok && at <= len;) {
    const char *slash = memchr(p + at, '/', len - at);
    size_t end = slash ? (size_t)(slash - p) : len;
    ok = nseg < 3 && !path_segment(p + at, end - at, seg[nseg], sizeof seg[nseg]) && seg[nseg][0];
    nseg++;
    at = end + 1;
  }
  if (!ok || nseg != 3)
    return respond_error(req, 400, "expected /v1/objects/{kind}/{namespace}/{name} (namespace - for cluster-scoped; "
                                   "names are percent-decoded and hold no /)");
  const char *kind = seg[0], *ns = seg[1], *name = seg[2];
  snprintf(key, sizeof key, "%s/%s/%s", kind, strcmp(ns, "-") ? ns : "", name);
  if (!obj_del(key)) return respond_error(req, 404, "no such object");
  if (!strcmp(kind, "NodeClaim"))
    for (size_t i = 0; i < D.insts.n; i++)
      if (!strcmp(D.insts.v[i].claim, name)) {
        inst_free(&D.insts.v[i]);
        D.insts.v[i] = D.insts.v[--D.insts.n];
        break;
      }
  logf_("info", "delete", "%s", key);
  state_dirty();
  arm_batch();
  return respond(req, 200, "application/json", "{\"deleted\":1}\n", 14);
}

/* The policy's say on an interruption: "drain", "keep-offering" or "ignore"
** replace the built-in action (def). */
static const char *interruption_action(const char *kind, const instance *in, const char *state, const char *def) {
  static char act[32];
  snprintf(act, sizeof act, "%s", def);
  const dt_hook_field f[] = {{"kind", 0, kind, 0},          {"instanceId", 0, in->id, 0}, {"nodeClaim", 0, in->claim, 0},
                             {"instanceType", 0, in->type, 0}, {"zone", 0, in->zone, 0},     {"capacityType", 0, in->ct, 0},
                             {"state", 0, state ? state : "", 0}};
  const dt_hook_rec ev = {f, 7};
  dt__policy_on_interruption(D.policy, &ev, act, sizeof act);
  return act;
}

/* Interruption events: EventBridge shapes (AWS) by instance id. */
static int post_event(h2o_req_t *req) {
  cJSON *e = cJSON_ParseWithLength(req->entity.base, req->entity.len);
  if (!e) return respond_error(req, 400, "expected a JSON event");
  const char *dtype = jstr(e, "detail-type");
  const cJSON *det = jget(e, "detail");
  const char *id = jstr(det, "instance-id");
  const char *state = jstr(det, "state");
  if (!dtype || !id) {
    cJSON_Delete(e);
    return respond_error(req, 400, "expected detail-type and detail.instance-id");
  }
  int at = -1;
  for (size_t i = 0; i < D.insts.n && at < 0; i++)
    if (!strcmp(D.insts.v[i].id, id)) at = (int)i;
  D.events++;
  char subj[300], reason[600];
  snprintf(subj, sizeof subj, "instance %s", id);
  if (at < 0) {
    snprintf(reason, sizeof reason, "%s for an instance this daemon did not launch; ignored", dtype);
    decision("event", subj, reason);
    cJSON_Delete(e);
    return respond(req, 200, "application/json", "{\"action\":\"ignored\"}\n", 21);
  }
  instance *in = &D.insts.v[at];
  bool spot = !strcmp(dtype, "EC2 Spot Instance Interruption Warning");
  bool drain = spot || !strcmp(dtype, "AWS Health Event") ||
               (!strcmp(dtype, "EC2 Instance State-change Notification") && state &&
                (!strcmp(state, "stopping") || !strcmp(state, "stopped") || !strcmp(state, "shutting-down") ||
                 !strcmp(state, "terminated")));
  const char *action = "noted";
  const char *kind = spot ? "spot-interruption" : !strcmp(dtype, "EC2 Instance Rebalance Recommendation") ? "rebalance"
                     : !strcmp(dtype, "AWS Health Event") ? "scheduled-change" : "state-change";
  const char *act = interruption_action(kind, in, state, drain ? (spot ? "drain" : "keep-offering") : "ignore");
  drain = strcmp(act, "ignore") != 0;
  if (!drain) {
    snprintf(reason, sizeof reason, "%s: no action%s", dtype,
             !strcmp(kind, "rebalance") ? " (as Karpenter)" : D.policy ? " (policy on_interruption)" : "");
    decision("event", subj, reason);
  } else {
    if (!strcmp(act, "drain") && (spot || strcmp(in->ct, "spot") == 0))
      mark_unavailable(in->ct, in->type, in->zone, spot ? "spot interruption warning" : dtype);
    char key[800];
    snprintf(key, sizeof key, "NodeClaim//%s", in->claim);
    snprintf(reason, sizeof reason, "%s: drain NodeClaim %s and replace its pods", dtype, in->claim);
    decision("interruption", subj, reason);
    obj_del(key);
    inst_free(in);
    D.insts.v[at] = D.insts.v[--D.insts.n];
    action = "replaced";
    save_state();
    arm_batch();
  }
  cJSON_Delete(e);
  char body[100];
  snprintf(body, sizeof body, "{\"action\":\"%s\"}\n", action);
  return respond(req, 200, "application/json", body, strlen(body));
}

static int get_state(h2o_req_t *req) {
  cJSON *s = cJSON_CreateObject();
  cJSON *insts = cJSON_AddArrayToObject(s, "instances"), *marks = cJSON_AddArrayToObject(s, "unavailableOfferings");
  for (size_t i = 0; i < D.insts.n; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", D.insts.v[i].id);
    cJSON_AddStringToObject(o, "nodeClaim", D.insts.v[i].claim);
    cJSON_AddStringToObject(o, "instanceType", D.insts.v[i].type);
    cJSON_AddStringToObject(o, "zone", D.insts.v[i].zone);
    cJSON_AddStringToObject(o, "capacityType", D.insts.v[i].ct);
    cJSON_AddItemToArray(insts, o);
  }
  for (size_t i = 0; i < D.objs.n; i++) {
    if (strncmp(D.objs.v[i].key, "UnavailableOffering/", 20)) continue;
    cJSON *o = cJSON_Parse(D.objs.v[i].json);
    cJSON *spec = cJSON_DetachItemFromObjectCaseSensitive(o, "spec");
    if (spec) cJSON_AddItemToArray(marks, spec);
    cJSON_Delete(o);
  }
  cJSON_AddNumberToObject(s, "objects", (double)D.objs.n);
  cJSON_AddNumberToObject(s, "rounds", (double)D.round);
  cJSON *pol = cJSON_AddObjectToObject(s, "policy");
  cJSON_AddStringToObject(pol, "path", D.policy_path ? D.policy_path : "");
  cJSON_AddStringToObject(pol, "hooks", D.policy ? dt_policy_hooks(D.policy) : "");
  cJSON_AddStringToObject(pol, "lastReload", D.reload_result);
  char *text = cJSON_Print(s);
  cJSON_Delete(s);
  respond(req, 200, "application/json", text ? text : "{}", text ? strlen(text) : 2);
  free(text);
  return 0;
}

static int get_metrics(h2o_req_t *req) {
  dt_buf b = {0};
  size_t marks = 0;
  for (size_t i = 0; i < D.objs.n; i++) marks += !strncmp(D.objs.v[i].key, "UnavailableOffering/", 20);
  dt__buf_printf(&b, "# HELP dovetail_pending_pods Pods the last plan could not place.\n# TYPE dovetail_pending_pods gauge\n"
                     "dovetail_pending_pods %llu\n", (unsigned long long)D.pending);
  dt__buf_puts(&b, "# HELP dovetail_claims_launched_total NodeClaims launched, by capacity type.\n"
                   "# TYPE dovetail_claims_launched_total counter\n");
  static const char *cts[3] = {"reserved", "spot", "on-demand"};
  for (int i = 0; i < 3; i++)
    dt__buf_printf(&b, "dovetail_claims_launched_total{capacity_type=\"%s\"} %llu\n", cts[i],
                   (unsigned long long)D.launched[i]);
  dt__buf_puts(&b, "# HELP dovetail_plan_duration_seconds Time to plan a round.\n# TYPE dovetail_plan_duration_seconds histogram\n");
  for (int i = 0; i < 8; i++)
    dt__buf_printf(&b, "dovetail_plan_duration_seconds_bucket{le=\"%g\"} %llu\n", k_buckets[i],
                   (unsigned long long)D.plan_buckets[i]);
  dt__buf_printf(&b, "dovetail_plan_duration_seconds_bucket{le=\"+Inf\"} %llu\ndovetail_plan_duration_seconds_sum %.6f\n"
                     "dovetail_plan_duration_seconds_count %llu\n",
                 (unsigned long long)D.plans, D.plan_ms_sum, (unsigned long long)D.plans);
  dt__buf_printf(&b, "# HELP dovetail_hourly_cost Hourly cost of the last plan's new claims.\n# TYPE dovetail_hourly_cost gauge\n"
                     "dovetail_hourly_cost %.6f\n", D.cost);
  dt__buf_printf(&b, "# HELP dovetail_unavailable_offerings Offerings marked unavailable.\n"
                     "# TYPE dovetail_unavailable_offerings gauge\ndovetail_unavailable_offerings %zu\n", marks);
  dt__buf_printf(&b, "# HELP dovetail_policy_reloads_total Policy reloads, by result.\n# TYPE dovetail_policy_reloads_total counter\n"
                     "dovetail_policy_reloads_total{result=\"ok\"} %llu\ndovetail_policy_reloads_total{result=\"error\"} %llu\n",
                 (unsigned long long)D.reloads_ok, (unsigned long long)D.reloads_failed);
  dt__buf_printf(&b, "# HELP dovetail_provider_requests_total Provider launches, by outcome.\n"
                     "# TYPE dovetail_provider_requests_total counter\n"
                     "dovetail_provider_requests_total{outcome=\"ok\"} %llu\n"
                     "dovetail_provider_requests_total{outcome=\"insufficient_capacity\"} %llu\n"
                     "dovetail_provider_requests_total{outcome=\"error\"} %llu\n",
                 (unsigned long long)D.provider_ok, (unsigned long long)D.provider_ice,
                 (unsigned long long)D.provider_err);
  dt__buf_printf(&b, "# HELP dovetail_interruption_events_total Events posted.\n# TYPE dovetail_interruption_events_total counter\n"
                     "dovetail_interruption_events_total %llu\n", (unsigned long long)D.events);
  respond(req, 200, "text/plain; version=0.0.4", b.p ? b.p : "", b.len);
  dt__free(b.p);
  return 0;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req) {
  (void)self;
  if (path_is(req, "/healthz")) return respond(req, 200, "text/plain", "ok\n", 3);
  if (path_is(req, "/readyz"))
    return D.ready ? respond(req, 200, "text/plain", "ready\n", 6)
                   : respond(req, 503, "text/plain", "reconciling with the cloud\n", 27);
  if (!authorized(req)) return respond_error(req, 401, "a bearer token is required");
  /* the read endpoints answer GET (and HEAD, which h2o answers without a body) */
  bool read = path_is(req, "/metrics") || path_is(req, "/v1/plan") || path_is(req, "/v1/state") ||
              path_is(req, "/v1/decisions");
  if (read && !method_is(req, "GET") && !method_is(req, "HEAD"))
    return respond_error(req, 405, "method not allowed: this endpoint answers GET");
  if (path_is(req, "/metrics")) return get_metrics(req);
  if (path_is(req, "/v1/plan"))
    return D.last_plan ? respond(req, 200, "application/json", D.last_plan, strlen(D.last_plan))
                       : respond_error(req, 503, "no plan yet: apply objects first");
  if (path_is(req, "/v1/state")) return get_state(req);
  if (path_is(req, "/v1/decisions")) {
    char *t = cJSON_Print(D.decisions);
    respond(req, 200, "application/json", t ? t : "[]", t ? strlen(t) : 2);
    free(t);
    return 0;
  }
  if (path_is(req, "/v1/objects") && method_is(req, "PUT")) return put_objects(req);
  const char *rest;
  size_t rlen;
  if (dt__httpd_prefix(req, "/v1/objects/", &rest, &rlen) && method_is(req, "DELETE")) return delete_object(req, rest, rlen);
  if (path_is(req, "/v1/events") && method_is(req, "POST")) return post_event(req);
  if (path_is(req, "/v1/objects") || path_is(req, "/v1/events") || dt__httpd_prefix(req, "/v1/objects/", &rest, &rlen))
    return respond_error(req, 405, "method not allowed: PUT /v1/objects, DELETE /v1/objects/..., POST /v1/events");
  return respond_error(req, 404, "no such endpoint");
}

/* ------------------------------------------------------------ main */

static const char *k_serve_usage =
    "usage: dovetail serve [options]\n"
    "  --config FILE        options as a YAML or JSON map (listen, catalog, batch-idle, ...); flags override\n"
    "  --listen HOST:PORT   HTTP API (default 127.0.0.1:8080; port 0 picks one, logged)\n"
    "  --catalog FILE       instance catalog (default: bundled AWS us-east-1)\n"
    "  --policy FILE        a Lua policy, watched and hot-reloaded (also on SIGHUP)\n"
    "  --state FILE         crash-safe state (written atomically after every change)\n"
    "  --batch-idle DUR     provisioning batch idle window (default 1s)\n"
    "  --batch-max DUR      provisioning batch maximum window (default 10s)\n"
    "  --unavailable-ttl DUR  how long an offering stays unavailable (default 3m)\n"
    "  --token-file FILE    require Authorization: Bearer <token> (except /healthz, /readyz)\n"
    "  --body-limit BYTES   largest request body (default 16 MiB)\n"
    "  --log-format json|logfmt\n"
    "  --sim-ice TYPE/ZONE/CT  the sim provider reports insufficient capacity for it (repeatable)\n"
    "  --provider sim|http  the cloud: in-process (default) or the REST contract over libcurl\n"
    "  --cloud-url URL      the http provider's base URL (e.g. a dovetail fakecloud)\n"
    "  --cluster NAME       tags instances, filters GET /instances (default dovetail)\n"
    "  --poll DUR           instance and catalog polling (default 60s)\n"
    "  --timeout DUR        per provider request (default 10s)\n"
    "  --retries N          launch retries on 5xx or transport errors (default 3)\n"
    "  --disrupt-interval DUR  a disruption pass (emptiness, drift, expiry, consolidation) every DUR\n"
    "                       (default 10s; 0 turns it off)\n";

static int duration_ms(const char *s, uint64_t *out) {
  int64_t v;
  if (!strcmp(s, "0") || !strcmp(s, "0s")) {
    *out = 0;
    return 0;
  }
  size_t n = strlen(s);
  if (n > 2 && !strcmp(s + n - 2, "ms")) {
    char *end;
    long long ms = strtoll(s, &end, 10);
    if (end != s + n - 2 || ms < 0) return -1;
    *out = (uint64_t)ms;
    return 0;
  }
  if (dt__duration_parse(s, &v) || v < 0) return -1;
  *out = (uint64_t)v * 1000;
  return 0;
}

/* --config FILE (YAML or JSON): a map of the long options without their
** dashes ({listen: "127.0.0.1:8080", sim-ice: [a, b], ...}), read before the
** command line, so flags override it. */
static int config_args(int argc, char **argv, int *outc, char ***outv) {
  const char *path = NULL;
  for (int i = 0; i + 1 < argc; i++)
    if (!strcmp(argv[i], "--config")) path = argv[i + 1];
  DT_VEC(char *) v = {0};
  if (path) {
    dt_error err = {0};
    char *text;
    size_t len;
    cJSON *docs = NULL;
    if (dt__read_file(path, &text, &len, &err) || dt__doc_parse(path, text, len, &docs, &err)) {
      fprintf(stderr, "dovetail serve: --config: %s\n", err.msg);
      return -1;
    }
    dt__free(text);
    const cJSON *m = docs ? docs->child : NULL, *c;
    if (!cJSON_IsObject(m)) {
      fprintf(stderr, "dovetail serve: --config %s: expected a map of options\n", path);
      cJSON_Delete(docs);
      return -1;
    }
    cJSON_ArrayForEach(c, m) {
      char flag[200], tmp[64];
      snprintf(flag, sizeof flag, "--%s", c->string);
      const cJSON *items = cJSON_IsArray(c) ? c->child : c;
      for (const cJSON *it = items; it; it = cJSON_IsArray(c) ? it->next : NULL) {
        const char *val = dt__scalar(it, tmp, sizeof tmp);
        if (!val || cJSON_IsBool(it) || cJSON_IsNull(it)) {
          fprintf(stderr, "dovetail serve: --config %s: %s: expected a string or a number\n", path, c->string);
          cJSON_Delete(docs);
          return -1;
        }
        dt__vec_push(&v, dt__strdup(flag));
        dt__vec_push(&v, dt__strdup(val));
      }
    }
    cJSON_Delete(docs);
  }
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--config") && i + 1 < argc) {
      i++;
      continue;
    }
    dt__vec_push(&v, dt__strdup(argv[i]));
  }
  *outc = (int)v.n;
  *outv = v.v;
  return 0;
}


/* SIGHUP: re-read --config for the settings that can change while running
** (windows, TTL, intervals, timeouts, retries, log format). The listen
** address, provider, catalog and state file need a restart. */
static const char *g_config_path;

static int duration_ms(const char *s, uint64_t *out);

static void reload_config(void) {
  if (!g_config_path) return;
  char *argv0[] = {(char *)"--config", (char *)g_config_path};
  int argc;
  char **argv;
  if (config_args(2, argv0, &argc, &argv)) {
    logf_("error", "config", "%s: not reloaded (see above); the running settings stay", g_config_path);
    return;
  }
  int applied = 0;
  for (int i = 0; i + 1 < argc; i += 2) {
    uint64_t ms;
    const char *a = argv[i], *v = argv[i + 1];
    bool dur = !duration_ms(v, &ms);
    if (!strcmp(a, "--batch-idle") && dur) D.idle_ms = ms, applied++;
    else if (!strcmp(a, "--batch-max") && dur) D.max_ms = ms, applied++;
    else if (!strcmp(a, "--unavailable-ttl") && dur) D.ttl = (int64_t)(ms / 1000), applied++;
    else if (!strcmp(a, "--poll") && dur && ms) {
      D.poll_ms = ms, applied++;
      if (D.cloud_url) uv_timer_start(&D.poll, on_poll_timer, ms, ms);
    } else if (!strcmp(a, "--timeout") && dur) D.timeout_ms = ms, applied++;
    else if (!strcmp(a, "--disrupt-interval") && dur) {
      D.disrupt_ms = ms, applied++;
      if (ms) uv_timer_start(&D.disrupt, on_disrupt, ms, ms);
      else uv_timer_stop(&D.disrupt);
    } else if (!strcmp(a, "--retries")) D.retries = atoi(v), applied++;
  }
  for (int i = 0; i < argc; i++) dt__free(argv[i]);
  dt__free(argv);
  logf_("info", "config", "%s reloaded: %d settings applied", g_config_path, applied);
}

int dt__serve_main(int argc0, char **argv0) {
  signal(SIGPIPE, SIG_IGN);
  int argc;
  char **argv;
  if (config_args(argc0, argv0, &argc, &argv)) return 2;
  for (int i = 0; i + 1 < argc0; i++)
    if (!strcmp(argv0[i], "--config")) g_config_path = argv0[i + 1];
  const char *listen = "127.0.0.1:8080", *catalog = NULL, *token_file = NULL;
  D.idle_ms = 1000;
  D.max_ms = 10000;
  D.ttl = 180;
  D.body_limit = 16u << 20;
  D.provider = "sim";
  D.cluster = "dovetail";
  D.poll_ms = 60000;
  D.timeout_ms = 10000;
  D.retries = 3;
  D.disrupt_ms = 10000;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    uint64_t ms;
    if (!strcmp(a, "--listen") && v) listen = argv[++i];
    else if (!strcmp(a, "--catalog") && v) catalog = argv[++i];
    else if (!strcmp(a, "--policy") && v) D.policy_path = argv[++i];
    else if (!strcmp(a, "--state") && v) D.state_path = argv[++i];
    else if (!strcmp(a, "--token-file") && v) token_file = argv[++i];
    else if (!strcmp(a, "--log-format") && v) D.log_format = argv[++i];
    else if (!strcmp(a, "--provider") && v) D.provider = argv[++i];
    else if (!strcmp(a, "--cloud-url") && v) D.cloud_url = argv[++i];
    else if (!strcmp(a, "--cluster") && v) D.cluster = argv[++i];
    else if (!strcmp(a, "--retries") && v) D.retries = atoi(argv[++i]);
    else if (!strcmp(a, "--body-limit") && v) D.body_limit = (size_t)strtoull(argv[++i], NULL, 10);
    else if (!strcmp(a, "--sim-ice") && v) {
      char *s = dt__strdup(argv[++i]);
      if (!s || dt__vec_push(&D.sim_ice, s)) return 2;
    } else if ((!strcmp(a, "--batch-idle") || !strcmp(a, "--batch-max") || !strcmp(a, "--unavailable-ttl") ||
                !strcmp(a, "--poll") || !strcmp(a, "--timeout") || !strcmp(a, "--disrupt-interval")) && v) {
      if (duration_ms(v, &ms)) {
        fprintf(stderr, "dovetail serve: %s: expected a duration such as 1s, 500ms or 3m, got \"%s\"\n", a, v);
        return 2;
      }
      if (!strcmp(a, "--batch-idle")) D.idle_ms = ms;
      else if (!strcmp(a, "--batch-max")) D.max_ms = ms;
      else if (!strcmp(a, "--poll")) D.poll_ms = ms;
      else if (!strcmp(a, "--disrupt-interval")) D.disrupt_ms = ms;
      else if (!strcmp(a, "--timeout")) D.timeout_ms = ms;
      else D.ttl = (int64_t)(ms / 1000);
      i++;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(k_serve_usage, stdout);
      return 0;
    } else {
      fprintf(stderr, "dovetail serve: unknown or incomplete option %s\n%s", a, k_serve_usage);
      return 2;
    }
  }
  if (strcmp(D.provider, "sim") && strcmp(D.provider, "http")) {
    fprintf(stderr, "dovetail serve: --provider: expected sim or http, got \"%s\"\n", D.provider);
    return 2;
  }
  if (!strcmp(D.provider, "http") != !!D.cloud_url) {
    fprintf(stderr, "dovetail serve: --provider http and --cloud-url URL go together\n");
    return 2;
  }
  dt_error err = {0};
  if (catalog ? dt_catalog_load_file(catalog, &D.cat, &err) : dt_catalog_load_default(&D.cat, &err)) {
    fprintf(stderr, "dovetail serve: %s\n", err.msg);
    return 1;
  }
  if (D.policy_path && dt_policy_load_file(D.policy_path, NULL, &D.policy, &err)) {
    fprintf(stderr, "dovetail serve: %s\n", err.msg);
    return 1;
  }
  if (token_file) {
    char *t;
    size_t len;
    if (dt__read_file(token_file, &t, &len, &err)) {
      fprintf(stderr, "dovetail serve: --token-file: %s\n", err.msg);
      return 1;
    }
    while (len && (t[len - 1] == '\n' || t[len - 1] == '\r' || t[len - 1] == ' ')) t[--len] = 0;
    if (!len) {
      fprintf(stderr, "dovetail serve: --token-file %s is empty\n", token_file);
      return 1;
    }
    D.token = t;
  }
  D.decisions = cJSON_CreateArray();
  if (load_state(&err)) {
    fprintf(stderr, "dovetail serve: %s\n", err.msg);
    return 1;
  }
  D.loop = uv_default_loop();
  char msg[600];
  if (dt__httpd_start(&D.http, D.loop, listen, D.body_limit, on_req, msg, sizeof msg)) {
    fprintf(stderr, "dovetail serve: --listen: %s\n", msg);
    return 1;
  }
  D.port = D.http.port;
  uv_timer_init(D.loop, &D.idle);
  uv_timer_init(D.loop, &D.poll);
  uv_timer_init(D.loop, &D.circuit_timer);
  D.jitter = (uint64_t)wall();
  D.start_seed = (uint64_t)wall() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
  uv_timer_init(D.loop, &D.again);
  uv_timer_init(D.loop, &D.state_timer);
  uv_timer_init(D.loop, &D.disrupt);
  if (D.disrupt_ms) uv_timer_start(&D.disrupt, on_disrupt, D.disrupt_ms, D.disrupt_ms);
  if (D.cloud_url && dt__httpc_init(D.loop)) {
    fprintf(stderr, "dovetail serve: cannot start libcurl\n");
    return 1;
  }
  D.ready = !D.cloud_url;
  uv_timer_init(D.loop, &D.max);
  uv_timer_init(D.loop, &D.debounce);
  uv_signal_init(D.loop, &D.sighup);
  uv_signal_init(D.loop, &D.sigterm);
  uv_signal_init(D.loop, &D.sigint);
  uv_signal_start(&D.sighup, on_signal, SIGHUP);
  uv_signal_start(&D.sigterm, on_signal, SIGTERM);
  uv_signal_start(&D.sigint, on_signal, SIGINT);
  if (D.policy_path) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", D.policy_path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else snprintf(dir, sizeof dir, ".");
    uv_fs_event_init(D.loop, &D.watch);
    D.watching = uv_fs_event_start(&D.watch, on_watch, dir, 0) == 0;
  }
  logf_("info", "listening", "http://%s:%d (catalog %s, %zu objects from state)", D.http.host, D.port,
        catalog ? catalog : "bundled", D.objs.n);
  if (D.cloud_url)
    uv_timer_start(&D.poll, on_poll_timer, 0, D.poll_ms); /* reconcile first, then every poll interval */
  else if (D.objs.n)
    arm_batch();
  uv_run(D.loop, UV_RUN_DEFAULT);
  /* graceful stop: finish the provider calls in flight (up to 10 s) */
  uv_timer_stop(&D.poll);
  uv_timer_stop(&D.disrupt);
  uv_timer_stop(&D.idle);
  uv_timer_stop(&D.max);
  for (int i = 0; i < 200 && D.cloud_url && dt__httpc_in_flight(); i++) uv_run(D.loop, UV_RUN_ONCE);
  save_state();
  /* graceful stop: close handles, let in-flight requests finish */
  dt__httpd_close(&D.http);
  uv_close((uv_handle_t *)&D.idle, on_close_noop);
  uv_close((uv_handle_t *)&D.max, on_close_noop);
  uv_close((uv_handle_t *)&D.debounce, on_close_noop);
  uv_close((uv_handle_t *)&D.poll, on_close_noop);
  uv_close((uv_handle_t *)&D.again, on_close_noop);
  uv_close((uv_handle_t *)&D.state_timer, on_close_noop);
  uv_close((uv_handle_t *)&D.disrupt, on_close_noop);
  uv_close((uv_handle_t *)&D.circuit_timer, on_close_noop);
  dt__httpc_close();
  uv_close((uv_handle_t *)&D.sighup, on_close_noop);
  uv_close((uv_handle_t *)&D.sigterm, on_close_noop);
  uv_close((uv_handle_t *)&D.sigint, on_close_noop);
  if (D.watching) uv_close((uv_handle_t *)&D.watch, on_close_noop);
  uv_run(D.loop, UV_RUN_NOWAIT);
  logf_("info", "stopped", "%llu rounds", (unsigned long long)D.round);
  for (int i = 0; i < argc; i++) dt__free(argv[i]); /* options point into them until here */
  dt__free(argv);
  return 0;
}
