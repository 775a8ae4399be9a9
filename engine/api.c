/*
** api.c: the daemon's HTTP API (h2o on libuv): objects in (PUT, DELETE,
** watch-style events), the plan, the state, decisions, pools, metrics and
** health out, with a bearer token when --token-file is given. Handlers run
** on the loop and hand the controller its changes; large bodies are parsed
** on the thread pool.
*/
#define _GNU_SOURCE
#include "daemon.h"
#include "httpc.h"
#include "httpd.h"
#include "store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define respond       dt__httpd_respond
#define respond_error dt__httpd_error
#define path_is       dt__httpd_path
#define method_is     dt__httpd_method

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
  if (!obj_key(o, key, sizeof key, &why) && !obj_put(key, o)) {
    (*(size_t *)ud)++;
    if (!strncmp(key, "Node//", 6)) node_applied(o);
  }
}

/* Objects stored, changes of them since the store had made `before`: the
** state is to be written and the batch window opens. A body with no object,
** or with each as it is stored (a watcher's re-list of the whole cluster),
** changes nothing and starts no round: a re-list of 20,000 pods ran one. */
static void objects_applied(uint64_t before) {
  if (D.store_changes == before) return;
  D.requeue_ms = REQUEUE_BASE_MS;
  state_dirty();
  arm_batch();
}

/* Objects read and keyed: store them all (one batch), answer, start the window. */
static int store_objects(h2o_req_t *req, cJSON *docs) {
  size_t n = 0;
  uint64_t before = D.store_changes;
  dt__each_object(docs, store_one, &n);
  char msg[100];
  snprintf(msg, sizeof msg, "{\"applied\":%zu}\n", n);
  logf_("debug", "apply", "%zu objects applied", n);
  objects_applied(before);
  return respond(req, 200, "application/json", msg, strlen(msg));
}

/*
** A large body (a whole cluster at once) is read on the thread pool, so the
** loop keeps serving while 20,000 objects are parsed and checked; the
** answer follows when they are stored. If the client goes away first, the
** objects are still stored (they were valid) and nobody is answered.
*/
#define PUT_ASYNC_BYTES (256u << 10)

/* Large bodies parsed at once: each costs several times its size while it is
** read (the text, its tree, each object printed), so more wait for their
** client to retry (429 with Retry-After, as the API server's priority and
** fairness answers) instead of adding up. */
#define PUT_PARSING_MAX 2
static unsigned g_parsing;
static uint64_t g_refused_parsing;

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
    cJSON_free(json);
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
  g_parsing--;
  if (w->hreq) w->holder->w = NULL;
  if (status) {
    if (w->hreq) respond_error(w->hreq, 503, "the request was cancelled");
  } else if (w->rc) {
    if (w->hreq) respond_error(w->hreq, 400, w->err.msg);
  } else {
    uint64_t before = D.store_changes;
    for (size_t i = 0; i < w->keys.n; i++) {
      cJSON *node = strncmp(w->keys.v[i], "Node//", 6) ? NULL : cJSON_Parse(w->texts.v[i]);
      obj_put_node(w->keys.v[i], w->texts.v[i], node);
      w->texts.v[i] = NULL;
      if (node) node_applied(node);
      cJSON_Delete(node);
    }
    objects_applied(before);
    char msg[100];
    snprintf(msg, sizeof msg, "{\"applied\":%zu}\n", w->keys.n);
    if (w->hreq) respond(w->hreq, 200, "application/json", msg, strlen(msg));
  }
  for (size_t i = 0; i < w->keys.n; i++) {
    dt__free(w->keys.v[i]);
    cJSON_free(w->texts.v[i]);
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
    if (g_parsing >= PUT_PARSING_MAX) {
      g_refused_parsing++;
      return dt__httpd_retry(req, 429, "other large bodies are being read; retry");
    }
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
    if (uv_queue_work(D.loop, &w->req, put_run, put_done) == 0) {
      g_parsing++;
      return 0;
    }
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
  const char *kind = seg[0], *ns = strcmp(seg[1], "-") ? seg[1] : "", *name = seg[2];
  snprintf(key, sizeof key, "%s/%s/%s", kind, ns, name);
  if (!forget(key, NULL)) return respond_error(req, 404, "no such object");
  logf_("info", "delete", "%s %s%s%s", kind, ns, *ns ? "/" : "", name);
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
    cJSON_AddBoolToObject(o, "initialized", D.insts.v[i].initialized);
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
  cJSON_free(text);
  return 0;
}

/* VMs by owning pool (namespace/name) and status (status.printableStatus;
** "Pending" until a node runs them). */
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
    const char *ns = dt__jstr(jget(o, "metadata"), "namespace");
    const char *st = dt__jstr(jget(o, "status"), "printableStatus");
    vmc k = {{0}, 1};
    /* the pool as dovetail_vmpool_actions_total names it: namespace/name */
    snprintf(k.key, sizeof k.key, "vmpool=\"%s%s%s\",state=\"%s\"", pool ? (ns ? ns : "default") : "", pool ? "/" : "",
             pool ? pool : "", st ? st : "Pending");
    cJSON_Delete(o);
    bool found = false;
    for (size_t j = 0; j < c.n && !found; j++)
      if (!strcmp(c.v[j].key, k.key)) c.v[j].n++, found = true;
    if (!found && dt__vec_push(&c, k)) break;
  }
  for (size_t j = 0; j < c.n; j++) dt__buf_printf(b, "dovetail_vms{%s} %zu\n", c.v[j].key, c.v[j].n);
  dt__free(c.v);
}

/* A Prometheus histogram of eight cumulative buckets (le[i] and its count),
** +Inf, the sum and the count. */
static void histogram(dt_buf *b, const char *name, const char *help, const double *le, const uint64_t *bucket,
                      uint64_t count, double sum) {
  dt__buf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
  for (int i = 0; i < 8; i++)
    dt__buf_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name, le[i], (unsigned long long)bucket[i]);
  dt__buf_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name, (unsigned long long)count, name,
                 sum, name, (unsigned long long)count);
}

static int get_metrics(h2o_req_t *req) {
  dt_buf b = {0};
  size_t marks = D.nkind[OBJ_MARK];
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
  histogram(&b, "dovetail_plan_duration_seconds", "Time to plan a round.", k_buckets, D.plan_buckets, D.plans,
            D.plan_ms_sum);
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
                 "# TYPE dovetail_nodes_deleted_total counter\ndovetail_nodes_deleted_total %llu\n"
                 "# HELP dovetail_orphans_deleted_total Instances deleted that no NodeClaim held.\n"
                 "# TYPE dovetail_orphans_deleted_total counter\ndovetail_orphans_deleted_total %llu\n"
                 "# HELP dovetail_instances_held_back Instances the cloud's listing left out that are not forgotten, "
                 "the listing taken for one gone wrong.\n"
                 "# TYPE dovetail_instances_held_back gauge\ndovetail_instances_held_back %zu\n",
                 (unsigned long long)D.deleted, (unsigned long long)D.orphans_deleted, D.held_back);
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
  dt__buf_printf(&b,
                 "# HELP dovetail_disruption_passes_total Disruption passes, by whether consolidation ran or was "
                 "skipped (nothing changed since a pass found the cluster consolidated).\n"
                 "# TYPE dovetail_disruption_passes_total counter\n"
                 "dovetail_disruption_passes_total{consolidation=\"ran\"} %llu\n"
                 "dovetail_disruption_passes_total{consolidation=\"skipped\"} %llu\n",
                 (unsigned long long)D.passes[0], (unsigned long long)D.passes[1]);
  dt__buf_printf(&b,
                 "# HELP dovetail_http_connections HTTP connections open.\n# TYPE dovetail_http_connections gauge\n"
                 "dovetail_http_connections %zu\n"
                 "# HELP dovetail_http_reply_bytes Bytes of replies held until their clients read them.\n"
                 "# TYPE dovetail_http_reply_bytes gauge\ndovetail_http_reply_bytes %zu\n"
                 "# HELP dovetail_http_refused_total HTTP connections and requests turned away or shut, by limit.\n"
                 "# TYPE dovetail_http_refused_total counter\n"
                 "dovetail_http_refused_total{limit=\"max-connections\"} %llu\n"
                 "dovetail_http_refused_total{limit=\"reply-limit\"} %llu\n"
                 "dovetail_http_refused_total{limit=\"stall-timeout\"} %llu\n"
                 "dovetail_http_refused_total{limit=\"parsing\"} %llu\n",
                 D.http.nconns, D.http.reply_bytes, (unsigned long long)D.http.refused_conns,
                 (unsigned long long)D.http.refused_replies, (unsigned long long)D.http.stalled,
                 (unsigned long long)g_refused_parsing);
  dt__buf_printf(&b,
                 "# HELP dovetail_cloud_requests Requests to the cloud not yet answered: running, or waiting for a "
                 "connection or for a Retry-After to pass.\n# TYPE dovetail_cloud_requests gauge\n"
                 "dovetail_cloud_requests{state=\"running\"} %zu\ndovetail_cloud_requests{state=\"waiting\"} %zu\n",
                 dt__httpc_in_flight() - dt__httpc_waiting(), dt__httpc_waiting());
  histogram(&b, "dovetail_loop_lag_seconds", "How late the event loop ran a 100 ms timer.", k_lag_buckets,
            D.lag_buckets, D.lag_count, D.lag_sum);
  respond(req, 200, "text/plain; version=0.0.4", b.p ? b.p : "", b.len);
  dt__free(b.p);
  return 0;
}

/* The plan and the pools are read by many clients, some slowly: each
** generation is copied once into a reply every request shares. */
typedef struct shared_reply {
  uint64_t gen;
  dt_httpd_blob *blob;
} shared_reply;

static shared_reply g_plan, g_pools;

static int respond_shared(h2o_req_t *req, shared_reply *r, const char *text, uint64_t gen) {
  if (!r->blob || r->gen != gen) { /* a new copy is memory, and waits like any other reply */
    dt__httpd_blob_release(r->blob);
    r->blob = NULL;
    size_t len = strlen(text);
    if (dt__httpd_busy(req, len)) return 0;
    r->blob = dt__httpd_blob(&D.http, text, len);
    r->gen = gen;
  }
  return dt__httpd_respond_blob(req, 200, "application/json", r->blob);
}

void dt__serve_api_close(void) {
  dt__httpd_blob_release(g_plan.blob);
  dt__httpd_blob_release(g_pools.blob);
  g_plan.blob = g_pools.blob = NULL;
}

int dt__serve_on_req(h2o_handler_t *self, h2o_req_t *req) {
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
    return D.last_plan ? respond_shared(req, &g_plan, D.last_plan, D.last_plan_gen)
                       : respond_error(req, 503, "no plan yet: apply objects first");
  if (path_is(req, "/v1/state")) return get_state(req);
  if (path_is(req, "/v1/pools"))
    return D.last_pools ? respond_shared(req, &g_pools, D.last_pools, D.last_pools_gen)
                        : respond_error(req, 503, "no pool round yet: apply a VirtualMachinePool first");
  if (path_is(req, "/v1/decisions")) {
    char *t = cJSON_Print(D.decisions);
    respond(req, 200, "application/json", t ? t : "[]", t ? strlen(t) : 2);
    cJSON_free(t);
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
