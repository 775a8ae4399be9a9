/*
** serve.c: `dovetail serve`, the daemon's front. One libuv loop runs the
** controller (controller.c) on libuv's clock, the HTTP API (h2o on libuv),
** the policy file watch and signals. Options come from one table read by
** the command line, --config and SIGHUP alike.
*/
#define _GNU_SOURCE
#include "daemon.h"
#include "provider.h"
#include "httpc.h"
#include "httpd.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void reload_config(void);

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
  tm_start(&D.debounce, on_debounce, 30, 0); /* editors write in bursts */
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
  launch_waiting(SIZE_MAX); /* the last round's launches, written ahead, go out before the stop */
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

static void store_one(const cJSON *o, void *ud) {
  char key[KEY_MAX];
  const char *why;
  if (!obj_key(o, key, sizeof key, &why) && !obj_put(key, o)) (*(size_t *)ud)++;
}

/* Objects read and keyed: store them all (one batch), answer, start the window. */
static int store_objects(h2o_req_t *req, cJSON *docs) {
  size_t n = 0;
  dt__each_object(docs, store_one, &n);
  char msg[100];
  snprintf(msg, sizeof msg, "{\"applied\":%zu}\n", n);
  logf_("debug", "apply", "%zu objects applied", n);
  D.requeue_ms = REQUEUE_BASE_MS;
  state_dirty();
  arm_batch();
  return respond(req, 200, "application/json", msg, strlen(msg));
}

/*
** A large body (a whole cluster at once) is read on the thread pool, so the
** loop keeps serving while 20,000 objects are parsed and checked; the
** answer follows when they are stored. If the client goes away first, the
** objects are still stored (they were valid) and nobody is answered.
*/
#define PUT_ASYNC_BYTES (256u << 10)

typedef struct put_work put_work;
typedef struct put_holder {
  put_work *w; /* NULL once the work is done */
} put_holder;

struct put_work {
  uv_work_t req;
  h2o_req_t *hreq; /* NULL when the client went away */
  put_holder *holder;
  char *body;
  size_t len;
  cJSON *docs;
  DT_VEC(char *) keys, texts; /* each object's key and compact JSON */
  dt_error err;
  int rc;
};

static void put_gone(void *p) {
  put_holder *h = p;
  if (h->w) h->w->hreq = NULL;
}

static void print_one(const cJSON *o, void *ud) {
  put_work *w = ud;
  char key[KEY_MAX];
  const char *why;
  if (w->rc || obj_key(o, key, sizeof key, &why)) return;
  char *k = dt__strdup(key), *json = cJSON_PrintUnformatted(o);
  if (!k || !json || dt__vec_push(&w->keys, k) || dt__vec_push(&w->texts, json)) {
    dt__free(k);
    free(json);
    w->rc = dt__err(&w->err, DT_ENOMEM, "out of memory");
  }
}

/* On the thread pool: read, check, key and print every object. */
static void put_run(uv_work_t *r) {
  put_work *w = r->data;
  w->rc = dt__request_objects(w->body, w->len, &w->docs, &w->err);
  if (!w->rc) dt__each_object(w->docs, print_one, w);
}

static void put_done(uv_work_t *r, int status) {
  put_work *w = r->data;
  if (w->hreq) w->holder->w = NULL;
  if (status) {
    if (w->hreq) respond_error(w->hreq, 503, "the request was cancelled");
  } else if (w->rc) {
    if (w->hreq) respond_error(w->hreq, 400, w->err.msg);
  } else {
    for (size_t i = 0; i < w->keys.n; i++) {
      obj_put_text(w->keys.v[i], w->texts.v[i]);
      w->texts.v[i] = NULL;
    }
    D.requeue_ms = REQUEUE_BASE_MS;
    state_dirty();
    arm_batch();
    char msg[100];
    snprintf(msg, sizeof msg, "{\"applied\":%zu}\n", w->keys.n);
    if (w->hreq) respond(w->hreq, 200, "application/json", msg, strlen(msg));
  }
  for (size_t i = 0; i < w->keys.n; i++) {
    dt__free(w->keys.v[i]);
    free(w->texts.v[i]);
  }
  dt__free(w->keys.v);
  dt__free(w->texts.v);
  cJSON_Delete(w->docs);
  dt__free(w->body);
  dt__free(w);
}

static int put_objects(h2o_req_t *req) {
  dt_error err = {0};
  cJSON *docs = NULL;
  if (req->entity.len >= PUT_ASYNC_BYTES) {
    put_work *w = dt__calloc(1, sizeof *w);
    put_holder *h = h2o_mem_alloc_shared(&req->pool, sizeof *h, put_gone);
    if (!w || !(w->body = dt__malloc(req->entity.len))) {
      dt__free(w);
      return respond_error(req, 503, "out of memory");
    }
    memcpy(w->body, req->entity.base, req->entity.len);
    w->len = req->entity.len;
    w->hreq = req;
    w->holder = h;
    h->w = w;
    w->req.data = w;
    if (uv_queue_work(D.loop, &w->req, put_run, put_done) == 0) return 0;
    h->w = NULL;
    dt__free(w->body);
    dt__free(w);
    return respond_error(req, 503, "cannot queue the request");
  }
  if (dt__request_objects(req->entity.base, req->entity.len, &docs, &err)) return respond_error(req, 400, err.msg);
  int rc = store_objects(req, docs);
  cJSON_Delete(docs);
  return rc;
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
    return respond_error(req, 400,
                         "expected /v1/objects/{kind}/{namespace}/{name} (namespace - for cluster-scoped; "
                         "names are percent-decoded and hold no /)");
  const char *kind = seg[0], *ns = seg[1], *name = seg[2];
  snprintf(key, sizeof key, "%s/%s/%s", kind, strcmp(ns, "-") ? ns : "", name);
  if (!forget(key, NULL)) return respond_error(req, 404, "no such object");
  logf_("info", "delete", "%s", key);
  state_dirty();
  if (strcmp(kind, "Pod")) arm_batch(); /* a pod that goes leaves nothing to provision */
  return respond(req, 200, "application/json", "{\"deleted\":1}\n", 14);
}

/* Interruption events: EventBridge shapes (AWS) by instance id. While a
** round holds the policy, an event is queued and handled when it ends. */
static int post_event(h2o_req_t *req) {
  cJSON *e = cJSON_ParseWithLength(req->entity.base, req->entity.len);
  if (!e) return respond_error(req, 400, "expected a JSON event");
  if (!dt__jstr(e, "detail-type") || !dt__jstr(jget(e, "detail"), "instance-id")) {
    cJSON_Delete(e);
    return respond_error(req, 400, "expected detail-type and detail.instance-id");
  }
  char action[32], body[100];
  if (D.planning && D.policy) {
    if (dt__vec_push(&D.queued, e)) {
      cJSON_Delete(e);
      return respond_error(req, 503, "out of memory queueing the event");
    }
    return respond(req, 202, "application/json", "{\"action\":\"queued\"}\n", 20);
  }
  handle_event(e, action, sizeof action);
  cJSON_Delete(e);
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
  cJSON_AddStringToObject(pol, "nodePoolPolicyErrors", D.pool_errors);
  cJSON_AddStringToObject(s, "lastConfigReload", D.config_result);
  cJSON *rep = cJSON_AddArrayToObject(s, "replacing");
  for (size_t i = 0; i < D.replacing.n; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "nodeClaim", D.replacing.v[i].claim);
    cJSON_AddStringToObject(o, "replaces", D.replacing.v[i].olds);
    cJSON_AddStringToObject(o, "reason", D.replacing.v[i].why);
    cJSON_AddItemToArray(rep, o);
  }
  char *text = cJSON_Print(s);
  cJSON_Delete(s);
  respond(req, 200, "application/json", text ? text : "{}", text ? strlen(text) : 2);
  free(text);
  return 0;
}

/* VMs by owning pool and status (status.printableStatus; "Pending" until a
** node runs them). */
static void vm_gauge(dt_buf *b) {
  typedef struct vmc {
    char key[KEY_MAX + 64];
    size_t n;
  } vmc;
  DT_VEC(vmc) c = {0};
  for (size_t i = 0; i < D.objs.n; i++) {
    if (strncmp(D.objs.v[i].key, "VirtualMachine/", 15)) continue;
    cJSON *o = cJSON_Parse(D.objs.v[i].json);
    const cJSON *ow = jget(jget(o, "metadata"), "ownerReferences");
    const char *pool = ow && ow->child ? dt__jstr(ow->child, "name") : NULL;
    const char *st = dt__jstr(jget(o, "status"), "printableStatus");
    vmc k = {{0}, 1};
    snprintf(k.key, sizeof k.key, "vmpool=\"%s\",state=\"%s\"", pool ? pool : "", st ? st : "Pending");
    cJSON_Delete(o);
    bool found = false;
    for (size_t j = 0; j < c.n && !found; j++)
      if (!strcmp(c.v[j].key, k.key)) c.v[j].n++, found = true;
    if (!found && dt__vec_push(&c, k)) break;
  }
  for (size_t j = 0; j < c.n; j++) dt__buf_printf(b, "dovetail_vms{%s} %zu\n", c.v[j].key, c.v[j].n);
  dt__free(c.v);
}

static int get_metrics(h2o_req_t *req) {
  dt_buf b = {0};
  size_t marks = 0;
  for (size_t i = 0; i < D.objs.n; i++) marks += !strncmp(D.objs.v[i].key, "UnavailableOffering/", 20);
  dt__buf_printf(
      &b,
      "# HELP dovetail_pending_pods Pods the last plan could not place.\n# TYPE dovetail_pending_pods gauge\n"
      "dovetail_pending_pods %llu\n",
      (unsigned long long)D.pending);
  dt__buf_puts(&b, "# HELP dovetail_claims_launched_total NodeClaims launched, by capacity type.\n"
                   "# TYPE dovetail_claims_launched_total counter\n");
  static const char *cts[3] = {"reserved", "spot", "on-demand"};
  for (int i = 0; i < 3; i++)
    dt__buf_printf(&b, "dovetail_claims_launched_total{capacity_type=\"%s\"} %llu\n", cts[i],
                   (unsigned long long)D.launched[i]);
  dt__buf_puts(
      &b,
      "# HELP dovetail_plan_duration_seconds Time to plan a round.\n# TYPE dovetail_plan_duration_seconds histogram\n");
  for (int i = 0; i < 8; i++)
    dt__buf_printf(&b, "dovetail_plan_duration_seconds_bucket{le=\"%g\"} %llu\n", k_buckets[i],
                   (unsigned long long)D.plan_buckets[i]);
  dt__buf_printf(&b,
                 "dovetail_plan_duration_seconds_bucket{le=\"+Inf\"} %llu\ndovetail_plan_duration_seconds_sum %.6f\n"
                 "dovetail_plan_duration_seconds_count %llu\n",
                 (unsigned long long)D.plans, D.plan_ms_sum, (unsigned long long)D.plans);
  dt__buf_printf(
      &b,
      "# HELP dovetail_hourly_cost Hourly cost of the last plan's new claims.\n# TYPE dovetail_hourly_cost gauge\n"
      "dovetail_hourly_cost %.6f\n",
      D.cost);
  dt__buf_printf(&b,
                 "# HELP dovetail_unavailable_offerings Offerings marked unavailable.\n"
                 "# TYPE dovetail_unavailable_offerings gauge\ndovetail_unavailable_offerings %zu\n",
                 marks);
  dt__buf_printf(
      &b,
      "# HELP dovetail_policy_reloads_total Policy reloads, by result.\n# TYPE dovetail_policy_reloads_total counter\n"
      "dovetail_policy_reloads_total{result=\"ok\"} %llu\ndovetail_policy_reloads_total{result=\"error\"} %llu\n",
      (unsigned long long)D.reloads_ok, (unsigned long long)D.reloads_failed);
  dt__buf_printf(&b,
                 "# HELP dovetail_provider_requests_total Provider launches, by outcome.\n"
                 "# TYPE dovetail_provider_requests_total counter\n"
                 "dovetail_provider_requests_total{outcome=\"ok\"} %llu\n"
                 "dovetail_provider_requests_total{outcome=\"insufficient_capacity\"} %llu\n"
                 "dovetail_provider_requests_total{outcome=\"error\"} %llu\n",
                 (unsigned long long)D.provider_ok, (unsigned long long)D.provider_ice,
                 (unsigned long long)D.provider_err);
  dt__buf_printf(
      &b,
      "# HELP dovetail_interruption_events_total Events posted.\n# TYPE dovetail_interruption_events_total counter\n"
      "dovetail_interruption_events_total %llu\n",
      (unsigned long long)D.events);
  dt__buf_printf(&b,
                 "# HELP dovetail_nodes_deleted_total NodeClaims deleted by disruption and remediation.\n"
                 "# TYPE dovetail_nodes_deleted_total counter\ndovetail_nodes_deleted_total %llu\n",
                 (unsigned long long)D.deleted);
  dt__buf_printf(&b,
                 "# HELP dovetail_remediations_total Unhealthy nodes replaced.\n"
                 "# TYPE dovetail_remediations_total counter\ndovetail_remediations_total %llu\n"
                 "# HELP dovetail_remediation_paused_total Passes where maxUnhealthy stopped remediation.\n"
                 "# TYPE dovetail_remediation_paused_total counter\ndovetail_remediation_paused_total %llu\n",
                 (unsigned long long)D.remediations, (unsigned long long)D.remediation_paused);
  dt__buf_puts(&b, "# HELP dovetail_vmpool_actions_total VirtualMachinePool actions carried out, by kind.\n"
                   "# TYPE dovetail_vmpool_actions_total counter\n");
  static const char *vk[4] = {"create", "delete", "update", "heal"};
  for (int i = 0; i < 4; i++)
    for (size_t k = 0; k < D.vm_actions.n; k++)
      dt__buf_printf(&b, "dovetail_vmpool_actions_total{vmpool=\"%s\",action=\"%s\"} %llu\n", D.vm_actions.v[k].pool,
                     vk[i], (unsigned long long)D.vm_actions.v[k].n[i]);
  dt__buf_puts(&b, "# HELP dovetail_vms VirtualMachines in the store, by pool and printable status.\n"
                   "# TYPE dovetail_vms gauge\n");
  vm_gauge(&b);
  dt__buf_puts(&b, "# HELP dovetail_loop_lag_seconds How late the event loop ran a 100 ms timer.\n"
                   "# TYPE dovetail_loop_lag_seconds histogram\n");
  for (int i = 0; i < 8; i++)
    dt__buf_printf(&b, "dovetail_loop_lag_seconds_bucket{le=\"%g\"} %llu\n", k_lag_buckets[i],
                   (unsigned long long)D.lag_buckets[i]);
  dt__buf_printf(&b,
                 "dovetail_loop_lag_seconds_bucket{le=\"+Inf\"} %llu\ndovetail_loop_lag_seconds_sum %.6f\n"
                 "dovetail_loop_lag_seconds_count %llu\n",
                 (unsigned long long)D.lag_count, D.lag_sum, (unsigned long long)D.lag_count);
  respond(req, 200, "text/plain; version=0.0.4", b.p ? b.p : "", b.len);
  dt__free(b.p);
  return 0;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req) {
  (void)self;
  bool probe = path_is(req, "/healthz") || path_is(req, "/readyz");
  if (probe && !method_is(req, "GET") && !method_is(req, "HEAD"))
    return respond_error(req, 405, "method not allowed: this endpoint answers GET");
  if (path_is(req, "/healthz")) return respond(req, 200, "text/plain", "ok\n", 3);
  if (path_is(req, "/readyz"))
    return D.ready ? respond(req, 200, "text/plain", "ready\n", 6)
                   : respond(req, 503, "text/plain", "reconciling with the cloud\n", 27);
  if (!authorized(req)) return respond_error(req, 401, "a bearer token is required");
  /* the read endpoints answer GET (and HEAD, which h2o answers without a body) */
  bool read = path_is(req, "/metrics") || path_is(req, "/v1/plan") || path_is(req, "/v1/state") ||
              path_is(req, "/v1/decisions") || path_is(req, "/v1/pools");
  if (read && !method_is(req, "GET") && !method_is(req, "HEAD"))
    return respond_error(req, 405, "method not allowed: this endpoint answers GET");
  if (path_is(req, "/metrics")) return get_metrics(req);
  if (path_is(req, "/v1/plan"))
    return D.last_plan ? respond(req, 200, "application/json", D.last_plan, strlen(D.last_plan))
                       : respond_error(req, 503, "no plan yet: apply objects first");
  if (path_is(req, "/v1/state")) return get_state(req);
  if (path_is(req, "/v1/pools"))
    return D.last_pools ? respond(req, 200, "application/json", D.last_pools, strlen(D.last_pools))
                        : respond_error(req, 503, "no pool round yet: apply a VirtualMachinePool first");
  if (path_is(req, "/v1/decisions")) {
    char *t = cJSON_Print(D.decisions);
    respond(req, 200, "application/json", t ? t : "[]", t ? strlen(t) : 2);
    free(t);
    return 0;
  }
  if (path_is(req, "/v1/objects") && method_is(req, "PUT")) return put_objects(req);
  const char *rest;
  size_t rlen;
  if (dt__httpd_prefix(req, "/v1/objects/", &rest, &rlen) && method_is(req, "DELETE"))
    return delete_object(req, rest, rlen);
  if (path_is(req, "/v1/events") && method_is(req, "POST")) return post_event(req);
  if (path_is(req, "/v1/objects") || path_is(req, "/v1/events") || dt__httpd_prefix(req, "/v1/objects/", &rest, &rlen))
    return respond_error(req, 405, "method not allowed: PUT /v1/objects, DELETE /v1/objects/..., POST /v1/events");
  return respond_error(req, 404, "no such endpoint");
}

/* ------------------------------------------------------------ main */

/*
** Options: one table read by the command line, --config and SIGHUP alike
** (Redis's config table). RUNTIME options may change on SIGHUP; the rest
** need a restart. A SIGHUP applies nothing unless every value it carries
** reads, so a typo never leaves half a configuration in force.
*/
typedef enum opt_kind { O_STR, O_DUR_MS, O_DUR_S, O_INT, O_SIZE, O_LIST, O_COUNT_PCT } opt_kind;

typedef struct opt {
  const char *name;
  opt_kind kind;
  bool runtime;
  void *field;
  const char *help;
} opt;

static const char *g_listen = "127.0.0.1:8080", *g_catalog, *g_token_file;

static const opt k_opts[] = {
    {"listen", O_STR, false, &g_listen, "HOST:PORT   HTTP API (default 127.0.0.1:8080; port 0 picks one, logged)"},
    {"catalog", O_STR, false, &g_catalog,
     "NAME|FILE  instance catalog: aws-us-east-1 (default), azure-eastus, or a file"},
    {"policy", O_STR, false, &D.policy_path, "FILE        a Lua policy, watched and hot-reloaded (also on SIGHUP)"},
    {"policy-dir", O_STR, false, &D.policy_dir,
     "DIR     where NodePools' dovetail.dev/policy: NAME are found as NAME.lua (reloaded when changed)"},
    {"state", O_STR, false, &D.state_path, "FILE         crash-safe state (written atomically, once per round)"},
    {"batch-idle", O_DUR_MS, true, &D.idle_ms, "DUR     provisioning batch idle window (default 1s)"},
    {"batch-max", O_DUR_MS, true, &D.max_ms, "DUR      provisioning batch maximum window (default 10s)"},
    {"unavailable-ttl", O_DUR_S, true, &D.ttl,
     "DUR  how long an offering stays unavailable after insufficient capacity or a spot warning (default 3m)"},
    {"preemption-ttl", O_DUR_S, true, &D.preempt_ttl,
     "DUR   how long after a polled preemption (default 1h, as IBM Cloud's provider)"},
    {"unhealthy-timeout", O_DUR_S, true, &D.unhealthy_s,
     "DUR  a node Ready=False/Unknown, or stopped by the cloud, this long is replaced (default 5m)"},
    {"startup-timeout", O_DUR_S, true, &D.startup_timeout_s,
     "DUR  a launched claim whose node has not initialized after DUR is deleted (default 15m)"},
    {"max-unhealthy", O_COUNT_PCT, true, &D.max_unhealthy,
     "N|P%  remediation stops when more of a pool's nodes are unhealthy (default 100%)"},
    {"token-file", O_STR, false, &g_token_file,
     "FILE    require Authorization: Bearer <token> (except /healthz, /readyz)"},
    {"body-limit", O_SIZE, false, &D.body_limit, "BYTES   largest request body (default 16 MiB)"},
    {"log-format", O_STR, true, &D.log_format, "json|logfmt"},
    {"sim-ice", O_LIST, false, &D.sim_ice,
     "TYPE/ZONE/CT  the sim provider reports insufficient capacity for it (repeatable)"},
    {"provider", O_STR, false, &D.provider,
     "sim|http  the cloud: in-process (default) or the REST contract over libcurl"},
    {"cloud-url", O_STR, false, &D.cloud_url, "URL      the http provider's base URL (e.g. a dovetail fakecloud)"},
    {"cluster", O_STR, false, &D.cluster, "NAME       tags instances, filters GET /instances (default dovetail)"},
    {"poll", O_DUR_MS, true, &D.poll_ms, "DUR           instance and catalog polling (default 60s)"},
    {"timeout", O_DUR_MS, true, &D.timeout_ms, "DUR        per provider request (default 10s)"},
    {"retries", O_INT, true, &D.retries, "N          launch retries on 5xx or transport errors (default 3)"},
    {"disrupt-interval", O_DUR_MS, true, &D.disrupt_ms,
     "DUR  health remediation and a disruption pass every DUR (default 10s; 0 turns it off)"},
};
#define NOPTS (sizeof k_opts / sizeof k_opts[0])

static void usage(FILE *f) {
  fputs("usage: dovetail serve [options]\n"
        "  --config FILE        options as a YAML or JSON map (listen, catalog, batch-idle, ...); flags override\n"
        "  --recover            start from the state journal's last good record, saying what was dropped\n",
        f);
  for (size_t i = 0; i < NOPTS; i++)
    fprintf(f, "  --%s %s%s\n", k_opts[i].name, k_opts[i].help, k_opts[i].runtime ? " [SIGHUP]" : "");
}

static int duration_ms(const char *s, uint64_t *out) {
  int64_t ms;
  if (dt__duration_ms_parse(s, &ms)) return -1;
  *out = (uint64_t)ms;
  return 0;
}

/* Read v for o; with apply, store it in o's field. 0, or -1 with why. */
static int opt_set(const opt *o, const char *v, bool apply, char *why, size_t n) {
  uint64_t ms = 0;
  char *end = NULL;
  switch (o->kind) {
  case O_STR:
    if (apply) *(const char **)o->field = v;
    return 0;
  case O_LIST:
    if (apply) {
      char *c = dt__strdup(v);
      if (!c || dt__vec_push((DT_VEC(char *) *)o->field, c)) return dt__free(c), snprintf(why, n, "out of memory"), -1;
    }
    return 0;
  case O_DUR_MS:
  case O_DUR_S:
    if (duration_ms(v, &ms)) break;
    if (apply && o->kind == O_DUR_MS) *(uint64_t *)o->field = ms;
    if (apply && o->kind == O_DUR_S) *(int64_t *)o->field = (int64_t)(ms / 1000);
    return 0;
  case O_INT: {
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < 0 || x > 100) break;
    if (apply) *(int *)o->field = (int)x;
    return 0;
  }
  case O_SIZE: {
    unsigned long long x = strtoull(v, &end, 10);
    if (!*v || *end || x < 1 || x > (unsigned long long)DT_MAX_INPUT_BYTES) break;
    if (apply) *(size_t *)o->field = (size_t)x;
    return 0;
  }
  case O_COUNT_PCT: {
    unsigned long long x = strtoull(v, &end, 10);
    bool pct = *end == '%' && end[1] == 0;
    if (!*v || (*end && !pct) || (pct && x > 100)) break;
    if (apply) {
      *(uint64_t *)o->field = x;
      D.max_unhealthy_pct = pct;
    }
    return 0;
  }
  }
  static const char *const expect[] = {"",
                                       "a duration such as 1s, 500ms or 3m",
                                       "a duration such as 30s or 5m",
                                       "an integer from 0 to 100",
                                       "a byte count from 1",
                                       "",
                                       "a count or a percentage such as 3 or 40%"};
  snprintf(why, n, "--%s: expected %s, got \"%s\"", o->name, expect[o->kind], v);
  return -1;
}

static const opt *opt_find(const char *flag) {
  if (strncmp(flag, "--", 2)) return NULL;
  for (size_t i = 0; i < NOPTS; i++)
    if (!strcmp(flag + 2, k_opts[i].name)) return &k_opts[i];
  return NULL;
}

/* --config FILE (YAML or JSON): a map of the long options without their
** dashes ({listen: "127.0.0.1:8080", sim-ice: [a, b], ...}), read before the
** command line, so flags override it. *outv's strings are owned by the
** caller (free with free_args). */
static int config_args(int argc, char **argv, int *outc, char ***outv, char *why, size_t wn) {
  const char *path = NULL;
  for (int i = 0; i + 1 < argc; i++)
    if (!strcmp(argv[i], "--config")) path = argv[i + 1];
  DT_VEC(char *) v = {0};
  int rc = 0;
  if (path) {
    dt_error err = {0};
    char *text = NULL;
    size_t len;
    cJSON *docs = NULL;
    if (dt__read_file(path, &text, &len, &err) || dt__doc_parse(path, text, len, &docs, &err)) {
      snprintf(why, wn, "--config: %s", err.msg);
      rc = -1;
    }
    dt__free(text);
    const cJSON *m = docs ? docs->child : NULL, *c;
    if (!rc && !cJSON_IsObject(m)) {
      snprintf(why, wn, "--config %s: expected a map of options", path);
      rc = -1;
    }
    const cJSON *map = rc ? NULL : m;
    cJSON_ArrayForEach(c, map) {
      char flag[200], tmp[64];
      snprintf(flag, sizeof flag, "--%s", c->string);
      const cJSON *items = cJSON_IsArray(c) ? c->child : c;
      for (const cJSON *it = items; it && !rc; it = cJSON_IsArray(c) ? it->next : NULL) {
        const char *val = dt__scalar(it, tmp, sizeof tmp);
        if (!val || cJSON_IsBool(it) || cJSON_IsNull(it)) {
          snprintf(why, wn, "--config %s: %s: expected a string or a number", path, c->string);
          rc = -1;
        } else if (dt__vec_push(&v, dt__strdup(flag)) || dt__vec_push(&v, dt__strdup(val))) {
          rc = -1;
        }
      }
    }
    cJSON_Delete(docs);
  }
  for (int i = 0; i < argc && !rc; i++) {
    if (!strcmp(argv[i], "--config") && i + 1 < argc) {
      i++;
      continue;
    }
    if (dt__vec_push(&v, dt__strdup(argv[i]))) rc = -1;
  }
  if (rc) {
    for (size_t i = 0; i < v.n; i++) dt__free(v.v[i]);
    dt__free(v.v);
    return -1;
  }
  *outc = (int)v.n;
  *outv = v.v;
  return 0;
}

static void free_args(int argc, char **argv) {
  for (int i = 0; i < argc; i++) dt__free(argv[i]);
  dt__free(argv);
}

/* SIGHUP: re-read --config for the options marked [SIGHUP]. The listen
** address, provider, catalog and state file need a restart. */
static const char *g_config_path;
static char **g_hup_argv; /* the last applied SIGHUP's strings, which options point into */
static int g_hup_argc;

/* Whether option o already holds v: a restart-only option the file leaves
** as it is is no news on SIGHUP. */
static bool opt_same(const opt *o, const char *v) {
  char *end;
  if (o->kind == O_STR) {
    const char *cur = *(const char *const *)o->field;
    return cur && !strcmp(cur, v);
  }
  if (o->kind == O_SIZE) {
    unsigned long long x = strtoull(v, &end, 10);
    return *v && !*end && x == *(const size_t *)o->field;
  }
  return false;
}

static void reload_config(void) {
  if (!g_config_path) return;
  char *argv0[] = {(char *)"--config", (char *)g_config_path};
  int argc;
  char **argv;
  char why[700] = "", ts[40];
  dt__fmt_time(wall(), ts, sizeof ts);
  bool parsed = config_args(2, argv0, &argc, &argv, why, sizeof why) == 0, ok = parsed;
  for (int pass = 0; ok && pass < 2; pass++) /* every value reads, then all apply */
    for (int i = 0; ok && i + 1 < argc; i += 2) {
      const opt *o = opt_find(argv[i]);
      if (!o) {
        snprintf(why, sizeof why, "%s: unknown option", argv[i]);
        ok = false;
      } else if (!o->runtime) {
        if (pass == 0 && !opt_same(o, argv[i + 1]))
          logf_("warn", "config", "%s: needs a restart to change; ignored", argv[i]);
      } else if (opt_set(o, argv[i + 1], pass == 1, why, sizeof why)) {
        ok = false;
      }
    }
  if (!ok) {
    if (parsed) free_args(argc, argv);
    snprintf(D.config_result, sizeof D.config_result, "%s: not reloaded, the running settings stay: %s", ts, why);
    logf_("error", "config", "%s: %s", g_config_path, D.config_result);
    return;
  }
  free_args(g_hup_argc, g_hup_argv);
  g_hup_argc = argc, g_hup_argv = argv;
  if (D.cloud_url) tm_start(&D.poll, on_poll_timer, D.poll_ms, D.poll_ms);
  if (D.disrupt_ms)
    tm_start(&D.disrupt, on_disrupt, D.disrupt_ms, D.disrupt_ms);
  else
    tm_stop(&D.disrupt);
  snprintf(D.config_result, sizeof D.config_result, "%s: reloaded", ts);
  logf_("info", "config", "%s reloaded", g_config_path);
}

/* The loop's lag: a timer every 100 ms notes how late it fires, which is
** how long the callback before it held the loop. */
#define LAG_EVERY_MS 100

static void on_lag(uv_timer_t *t) {
  double now = dt__now_ms(), late = now - D.lag_expect;
  if (late < 0) late = 0;
  D.lag_expect = now + LAG_EVERY_MS;
  D.lag_count++;
  D.lag_sum += late / 1000;
  for (int b = 0; b < 8; b++)
    if (late / 1000 <= k_lag_buckets[b]) D.lag_buckets[b]++;
  tm_start(t, on_lag, LAG_EVERY_MS, 0);
}

/* The defaults the options change. */
static void serve_defaults(void) {
  D.idle_ms = 1000;
  D.max_ms = 10000;
  D.ttl = 180;
  D.preempt_ttl = 3600;
  D.unhealthy_s = 300;
  D.startup_timeout_s = 900;
  D.max_unhealthy = 100;
  D.max_unhealthy_pct = true;
  D.body_limit = 16u << 20;
  D.provider = "sim";
  D.cluster = "dovetail";
  D.poll_ms = 60000;
  D.timeout_ms = 10000;
  D.retries = 3;
  D.disrupt_ms = 10000;
  D.requeue_ms = REQUEUE_BASE_MS;
}

/* The options (the config file's, then the command line's); -1 to go on,
** else the exit status. */
static int serve_args(int argc, char **argv) {
  char why[700];
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    const opt *o = opt_find(a);
    if (!strcmp(a, "--recover")) { /* a flag: past a damaged journal record */
      D.recover = true;
      continue;
    }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    }
    if (!o || !v) {
      fprintf(stderr, "dovetail serve: %s option %s\n", o ? "incomplete" : "unknown", a);
      usage(stderr);
      return 2;
    }
    if (opt_set(o, v, true, why, sizeof why)) {
      fprintf(stderr, "dovetail serve: %s\n", why);
      return 2;
    }
    i++;
  }
  if (strcmp(D.provider, "sim") && strcmp(D.provider, "http")) {
    fprintf(stderr, "dovetail serve: --provider: expected sim or http, got \"%s\"\n", D.provider);
    return 2;
  }
  if (!strcmp(D.provider, "http") != !!D.cloud_url) {
    fprintf(stderr, "dovetail serve: --provider http and --cloud-url URL go together\n");
    return 2;
  }
  return -1;
}

/* What the daemon reads before it listens: the catalog, the policies, the
** token and the state (which must be writable). 0, or 1 after saying why. */
static int serve_open(void) {
  dt_error err = {0};
  if (dt_catalog_load_named(g_catalog, &D.cat, &err) ||
      (D.policy_path && dt_policy_load_file(D.policy_path, NULL, &D.policy, &err)) ||
      dt_policy_dir_open(D.policy_dir ? D.policy_dir : "policies", &D.pdir, &err)) {
    fprintf(stderr, "dovetail serve: %s\n", err.msg);
    return 1;
  }
  if (g_token_file) {
    char *t;
    size_t len;
    if (dt__read_file(g_token_file, &t, &len, &err)) {
      fprintf(stderr, "dovetail serve: --token-file: %s\n", err.msg);
      return 1;
    }
    while (len && (t[len - 1] == '\n' || t[len - 1] == '\r' || t[len - 1] == ' ')) t[--len] = 0;
    if (!len) {
      dt__free(t);
      fprintf(stderr, "dovetail serve: --token-file %s is empty\n", g_token_file);
      return 1;
    }
    D.token = t;
  }
  D.decisions = cJSON_CreateArray();
  if (load_state(&err)) {
    fprintf(stderr, "dovetail serve: %s\n", err.msg);
    return 1;
  }
  /* A state that cannot be written stops the start: running on, the daemon
  ** would launch what it cannot remember. */
  if (D.state_path && save_state()) {
    fprintf(stderr, "dovetail serve: --state %s: cannot be written: %s\n", D.state_path, strerror(errno));
    return 1;
  }
  return 0;
}

/* The loop's handles: the HTTP API, timers, signals, the policy watch.
** 0, or 1 after saying why. */
static int loop_open(void) {
  D.loop = uv_default_loop();
  char msg[600];
  if (dt__httpd_start(&D.http, D.loop, g_listen, D.body_limit, on_req, msg, sizeof msg)) {
    fprintf(stderr, "dovetail serve: --listen: %s\n", msg);
    return 1;
  }
  D.port = D.http.port;
  uv_timer_t *timers[] = {&D.idle,        &D.max,     &D.debounce, &D.poll, &D.circuit_timer, &D.again,
                          &D.state_timer, &D.disrupt, &D.requeue,  &D.lag,  &D.launch_tick};
  for (size_t i = 0; i < sizeof timers / sizeof *timers; i++) uv_timer_init(D.loop, timers[i]);
  D.jitter = (uint64_t)wall();
  D.start_seed = (uint64_t)wall() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
  D.lag_expect = dt__now_ms() + LAG_EVERY_MS;
  tm_start(&D.lag, on_lag, LAG_EVERY_MS, 0);
  if (D.disrupt_ms) tm_start(&D.disrupt, on_disrupt, D.disrupt_ms, D.disrupt_ms);
  if (D.cloud_url && dt__httpc_init(D.loop)) {
    fprintf(stderr, "dovetail serve: cannot start libcurl\n");
    return 1;
  }
  D.prov = D.cloud_url ? &dt__provider_http : &dt__provider_sim;
  D.ready = !D.cloud_url;
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
    if (slash)
      *slash = 0;
    else
      snprintf(dir, sizeof dir, ".");
    uv_fs_event_init(D.loop, &D.watch);
    D.watching = uv_fs_event_start(&D.watch, on_watch, dir, 0) == 0;
  }
  return 0;
}

/* A graceful stop: the round on the thread pool and the provider calls in
** flight (up to 10 s) finish, the state is written, the handles close. */
static void loop_close(void) {
  while (D.planning) uv_run(D.loop, UV_RUN_ONCE);
  uv_timer_t *timers[] = {&D.poll, &D.disrupt, &D.idle, &D.max, &D.requeue, &D.lag};
  for (size_t i = 0; i < sizeof timers / sizeof *timers; i++) tm_stop(timers[i]);
  for (int i = 0; i < 200 && D.cloud_url && dt__httpc_in_flight(); i++) uv_run(D.loop, UV_RUN_ONCE);
  save_state();
  dt__httpd_close(&D.http);
  uv_handle_t *handles[] = {(uv_handle_t *)&D.idle,    (uv_handle_t *)&D.max,           (uv_handle_t *)&D.debounce,
                            (uv_handle_t *)&D.poll,    (uv_handle_t *)&D.again,         (uv_handle_t *)&D.state_timer,
                            (uv_handle_t *)&D.disrupt, (uv_handle_t *)&D.circuit_timer, (uv_handle_t *)&D.requeue,
                            (uv_handle_t *)&D.lag,     (uv_handle_t *)&D.launch_tick};
  for (size_t i = 0; i < sizeof handles / sizeof *handles; i++) uv_close(handles[i], on_close_noop);
  dt__httpc_close();
  uv_close((uv_handle_t *)&D.sighup, on_close_noop);
  uv_close((uv_handle_t *)&D.sigterm, on_close_noop);
  uv_close((uv_handle_t *)&D.sigint, on_close_noop);
  if (D.watching) uv_close((uv_handle_t *)&D.watch, on_close_noop);
  uv_run(D.loop, UV_RUN_NOWAIT);
  dt__httpd_dispose(&D.http);
}

int dt__serve_main(int argc0, char **argv0) {
  signal(SIGPIPE, SIG_IGN);
  int argc;
  char **argv;
  char why[700];
  if (config_args(argc0, argv0, &argc, &argv, why, sizeof why)) {
    fprintf(stderr, "dovetail serve: %s\n", why);
    return 2;
  }
  for (int i = 0; i + 1 < argc0; i++)
    if (!strcmp(argv0[i], "--config")) g_config_path = argv0[i + 1];
  serve_defaults();
  int rc = serve_args(argc, argv); /* -1: go on; 0 after --help */
  bool go = rc < 0;
  if (go) go = !(rc = serve_open());
  if (go) go = !(rc = loop_open());
  if (go) {
    logf_("info", "listening", "http://%s:%d (catalog %s, %zu objects from state)", D.http.host, D.port,
          g_catalog ? g_catalog : "bundled", D.objs.n);
    if (D.cloud_url)
      tm_start(&D.poll, on_poll_timer, 0, D.poll_ms); /* reconcile first, then every poll interval */
    else if (D.objs.n)
      arm_batch();
    uv_run(D.loop, UV_RUN_DEFAULT);
    loop_close();
    logf_("info", "stopped", "%llu rounds", (unsigned long long)D.round);
  }
  ctl_free();
  free_args(argc, argv); /* options point into them until here */
  free_args(g_hup_argc, g_hup_argv);
  return rc;
}
