/*
** fakecloud.c: `dovetail fakecloud`, an in-memory cloud speaking the `http`
** provider's REST contract (README "Provider contract"), for specs, demos
** and users' own tests. Launches are idempotent per NodeClaim, so a daemon
** that retries never gets two instances for one claim.
**
**   GET    /catalog                 the catalog, with an ETag (304 on If-None-Match)
**   POST   /instances               201 {instance}, or 409 {"error":"InsufficientCapacity"}
**   DELETE /instances/{id}          200, or 404
**   GET    /instances?cluster=C     {"instances":[...]} with state and statusReason
**   POST   /admin/ice               body "type/zone/capacity-type": no capacity there from now on
**   POST   /admin/preempt/{id}      stop the instance with statusReason stopped_by_preemption
**   POST   /admin/terminate/{id}    the instance terminated (or in the state the body names, such
**                                   as "shutting-down"), and still listed
**   POST   /admin/reid/{id}         the instance listed under a new id from now on (the body's,
**                                   when it has one)
**   POST   /admin/fail              body "N": the next N API requests answer 503
**   POST   /admin/hang              body "N": the next N API requests get no answer at all
**   POST   /admin/lose              body "N": the next N launches happen but get no answer
**   POST   /admin/garble            body "N": the next N API requests get a 200 with an HTML page
**   POST   /admin/hide              body "N": the next N listings leave every instance out
**   POST   /admin/slow              body "MS": from now on every API request is answered MS ms late
**   POST   /admin/throttle          body "N S": the next N API requests answer 429 with Retry-After: S
**                                   (seconds; "N S date": as an HTTP date S seconds ahead; a method
**                                   after them, "N S POST": only that method's requests)
**   GET    /admin/stats             {"requests", "mostAtOnce", "throttled", "early"}: API requests
**                                   received, the most awaiting a late answer at once, those
**                                   answered 429, and those that came before a Retry-After given
**                                   had passed (of the throttled method)
*/
#define _GNU_SOURCE
#include "../engine/httpc.h"
#include "../engine/httpd.h"
#include "../engine/internal.h"
#include "dovetail.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef struct finst {
  char *id, *cluster, *claim, *type, *zone, *ct, *pool, *state, *reason;
  double max_price;   /* spot: the request's maxPrice, < 0 none */
  char *interruption; /* spot: interruptionBehavior, "" none */
} finst;

static struct {
  dt_httpd http;
  const char *catalog;
  size_t catalog_len;
  char etag[40];
  DT_VEC(char *) ice;
  DT_VEC(finst) insts;
  long fail, hang, lose, garble, hide, slow_ms, throttle, throttle_s;
  bool throttle_date;      /* Retry-After as an HTTP date */
  char throttle_method[8]; /* only requests of this method are throttled; "" all */
  unsigned long seq;
  unsigned long requests, throttled, early, late, most_late; /* /admin/stats */
  uint64_t come_back;                                        /* uv_now: the last Retry-After given passes */
  uv_signal_t sigterm, sigint;
} F;

static char *dup_json_str(const cJSON *o, const char *k) {
  const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
  return dt__strdup(v ? v : "");
}

static cJSON *inst_json(const finst *in) {
  cJSON *o = cJSON_CreateObject();
  const dt_field fields[] = {
      {"id", in->id},     {"cluster", in->cluster}, {"claim", in->claim},  {"instanceType", in->type},
      {"zone", in->zone}, {"capacityType", in->ct}, {"nodePool", in->pool}};
  dt__json_put_fields(o, fields, 7);
  if (in->max_price >= 0) cJSON_AddNumberToObject(o, "maxPrice", in->max_price);
  if (*in->interruption) cJSON_AddStringToObject(o, "interruptionBehavior", in->interruption);
  cJSON_AddStringToObject(o, "state", in->state);
  cJSON_AddStringToObject(o, "statusReason", in->reason);
  return o;
}

static int send_json(h2o_req_t *req, int status, cJSON *o) {
  char *t = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  dt__httpd_respond(req, status, "application/json", t ? t : "{}", t ? strlen(t) : 2);
  cJSON_free(t);
  return 0;
}

/* The instance whose id is the percent-encoded path segment id[0..len). */
static int find(const char *id, size_t len) {
  char *d = dt__httpc_unescape(id, len);
  int at = -1;
  for (size_t i = 0; d && i < F.insts.n && at < 0; i++)
    if (!strcmp(F.insts.v[i].id, d)) at = (int)i;
  dt__free(d);
  return at;
}

/* *field replaced by a copy of v. */
static void set_str(char **field, const char *v) {
  dt__free(*field);
  *field = dt__strdup(v);
}

/* *field replaced by the request's body, or by def when it has none. */
static void set_body_or(h2o_req_t *req, char **field, const char *def) {
  char *b = req->entity.len ? dt__strndup(req->entity.base, req->entity.len) : NULL;
  set_str(field, b ? b : def);
  dt__free(b);
}

/* Whether /admin/throttle applies to req's method (any, when it named none). */
static bool throttle_method_is(h2o_req_t *req) {
  return !F.throttle_method[0] || dt__httpd_method(req, F.throttle_method);
}

/* /admin/fail, /hang, /lose: the body is how many requests it applies to. */
static int set_count(h2o_req_t *req, long *counter) {
  char n[32];
  snprintf(n, sizeof n, "%.*s", (int)(req->entity.len < 31 ? req->entity.len : 31), req->entity.base);
  *counter = atol(n);
  return dt__httpd_respond(req, 200, "application/json", "{}", 2);
}

static int api(h2o_req_t *req);

/* A request answered late (/admin/slow): its timer, and the request while
** its connection lasts (the pool's holder clears it when the request goes). */
typedef struct late_req {
  uv_timer_t timer;
  h2o_req_t *req;
} late_req;
typedef struct late_holder {
  late_req *l;
} late_holder;

static void late_gone(void *p) {
  late_holder *h = p;
  if (h->l) h->l->req = NULL;
}

static void late_free(uv_handle_t *t) { dt__free(t->data); }

static void on_late(uv_timer_t *t) {
  late_req *l = t->data;
  F.late--;
  if (l->req) api(l->req);
  uv_close((uv_handle_t *)t, late_free);
}

/* API requests are counted, and answered late under /admin/slow; the
** /admin/ controls never are. */
static int on_req(h2o_handler_t *self, h2o_req_t *req) {
  (void)self;
  if (req->path_normalized.len < 7 || memcmp(req->path_normalized.base, "/admin/", 7)) {
    F.requests++;
    if (F.come_back > uv_now(uv_default_loop()) && throttle_method_is(req)) F.early++;
    if (F.slow_ms > 0) {
      late_req *l = dt__calloc(1, sizeof *l);
      late_holder *h = h2o_mem_alloc_shared(&req->pool, sizeof *h, late_gone);
      if (!l) return dt__httpd_error(req, 503, "out of memory");
      h->l = l;
      l->req = req;
      uv_timer_init(uv_default_loop(), &l->timer);
      l->timer.data = l;
      uv_timer_start(&l->timer, on_late, (uint64_t)F.slow_ms, 0);
      if (++F.late > F.most_late) F.most_late = F.late;
      return 0;
    }
  }
  return api(req);
}

static int api(h2o_req_t *req) {
  const char *rest;
  size_t rl;
  if (dt__httpd_path(req, "/admin/slow") && dt__httpd_method(req, "POST")) return set_count(req, &F.slow_ms);
  if (dt__httpd_path(req, "/admin/throttle") && dt__httpd_method(req, "POST")) {
    char b[64];
    snprintf(b, sizeof b, "%.*s", (int)(req->entity.len < 63 ? req->entity.len : 63), req->entity.base);
    char more[2][8] = {"", ""};
    F.throttle_s = 1;
    if (sscanf(b, "%ld %ld %7s %7s", &F.throttle, &F.throttle_s, more[0], more[1]) < 1) F.throttle = 0;
    F.throttle_date = false;
    F.throttle_method[0] = 0;
    for (int i = 0; i < 2; i++)
      if (!strcmp(more[i], "date"))
        F.throttle_date = true;
      else if (more[i][0])
        snprintf(F.throttle_method, sizeof F.throttle_method, "%s", more[i]);
    return dt__httpd_respond(req, 200, "application/json", "{}", 2);
  }
  if (dt__httpd_path(req, "/admin/stats") && dt__httpd_method(req, "GET")) {
    char b[200];
    snprintf(b, sizeof b, "{\"requests\":%lu,\"mostAtOnce\":%lu,\"throttled\":%lu,\"early\":%lu}", F.requests,
             F.most_late, F.throttled, F.early);
    return dt__httpd_respond(req, 200, "application/json", b, strlen(b));
  }
  if (dt__httpd_path(req, "/admin/ice") && dt__httpd_method(req, "POST")) {
    char *s = dt__strndup(req->entity.base, req->entity.len);
    if (!s || dt__vec_push(&F.ice, s)) return dt__httpd_error(req, 503, "out of memory");
    return dt__httpd_respond(req, 200, "application/json", "{}", 2);
  }
  if (dt__httpd_path(req, "/admin/fail") && dt__httpd_method(req, "POST")) return set_count(req, &F.fail);
  /* POST /admin/{preempt,terminate,reid}/{id}: what the cloud does to one instance */
  static const char *const verbs[] = {"/admin/preempt/", "/admin/terminate/", "/admin/reid/"};
  int verb = -1;
  for (int k = 0; k < 3 && verb < 0; k++)
    if (dt__httpd_prefix(req, verbs[k], &rest, &rl) && dt__httpd_method(req, "POST")) verb = k;
  if (verb >= 0) {
    int at = find(rest, rl);
    if (at < 0) return dt__httpd_error(req, 404, "no such instance");
    finst *in = &F.insts.v[at];
    if (verb == 0) { /* stopped by preemption */
      set_str(&in->state, "stopped");
      set_str(&in->reason, "stopped_by_preemption");
    } else if (verb == 1) { /* ended by the cloud, and still listed (as AWS lists them for about an hour) */
      set_body_or(req, &in->state, "terminated");
    } else { /* the same instance, listed from now on under another id */
      char id[60];
      snprintf(id, sizeof id, "i-%016lx", ++F.seq * 0x9e3779b97f4a7c15ul);
      set_body_or(req, &in->id, id);
    }
    return send_json(req, 200, inst_json(in));
  }
  if (dt__httpd_path(req, "/admin/hang") && dt__httpd_method(req, "POST")) return set_count(req, &F.hang);
  if (dt__httpd_path(req, "/admin/lose") && dt__httpd_method(req, "POST")) return set_count(req, &F.lose);
  if (dt__httpd_path(req, "/admin/garble") && dt__httpd_method(req, "POST")) return set_count(req, &F.garble);
  if (dt__httpd_path(req, "/admin/hide") && dt__httpd_method(req, "POST")) return set_count(req, &F.hide);
  if (F.hang > 0) { /* never answer: the client's timeout decides */
    F.hang--;
    return 0;
  }
  if (F.fail > 0) {
    F.fail--;
    return dt__httpd_error(req, 503, "injected failure");
  }
  if (F.garble > 0) { /* a proxy's page where the API's JSON should be */
    static const char page[] = "<html><body><h1>Service Unavailable</h1></body></html>\n";
    F.garble--;
    return dt__httpd_respond(req, 200, "text/html", page, sizeof page - 1);
  }
  if (F.throttle > 0 && throttle_method_is(req)) {
    char v[64];
    F.throttle--;
    F.throttled++;
    F.come_back = uv_now(uv_default_loop()) + (uint64_t)F.throttle_s * 1000;
    snprintf(v, sizeof v, "%ld", F.throttle_s);
    if (F.throttle_date) { /* IMF-fixdate, RFC 9110; whole seconds, so the wait is S - 1 to S */
      time_t at = time(NULL) + F.throttle_s;
      struct tm g;
      strftime(v, sizeof v, "%a, %d %b %Y %H:%M:%S GMT", gmtime_r(&at, &g));
      F.come_back -= 1000; /* the date's second began up to a second before now + S */
    }
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, h2o_strdup(&req->pool, v, SIZE_MAX).base,
                   strlen(v));
    return dt__httpd_error(req, 429, "Throttling: rate exceeded");
  }
  if (dt__httpd_path(req, "/catalog") && dt__httpd_method(req, "GET")) {
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_IF_NONE_MATCH, -1);
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ETAG, NULL, F.etag, strlen(F.etag));
    if (i >= 0 &&
        h2o_memis(req->headers.entries[i].value.base, req->headers.entries[i].value.len, F.etag, strlen(F.etag)))
      return dt__httpd_respond(req, 304, "application/json", "", 0);
    return dt__httpd_respond(req, 200, "application/json", F.catalog, F.catalog_len);
  }
  if (dt__httpd_path(req, "/instances") && dt__httpd_method(req, "POST")) {
    cJSON *b = cJSON_ParseWithLength(req->entity.base, req->entity.len);
    const char *claim = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "claim"));
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "instanceType"));
    const char *zone = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "zone"));
    const char *ct = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "capacityType"));
    if (!claim || !type || !zone || !ct) {
      cJSON_Delete(b);
      return dt__httpd_error(req, 400, "expected claim, instanceType, zone and capacityType");
    }
    for (size_t i = 0; i < F.insts.n; i++) /* idempotent per claim */
      if (!strcmp(F.insts.v[i].claim, claim)) {
        cJSON_Delete(b);
        return send_json(req, 201, inst_json(&F.insts.v[i]));
      }
    char k[600];
    snprintf(k, sizeof k, "%s/%s/%s", type, zone, ct);
    for (size_t i = 0; i < F.ice.n; i++)
      if (!strcmp(F.ice.v[i], k)) {
        cJSON_Delete(b);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "error", "InsufficientCapacity");
        cJSON_AddStringToObject(e, "message", k);
        return send_json(req, 409, e);
      }
    char id[40];
    snprintf(id, sizeof id, "i-%016lx", ++F.seq * 0x9e3779b97f4a7c15ul);
    const cJSON *mp = cJSON_GetObjectItemCaseSensitive(b, "maxPrice");
    finst in = {dt__strdup(id),
                dup_json_str(b, "cluster"),
                dt__strdup(claim),
                dt__strdup(type),
                dt__strdup(zone),
                dt__strdup(ct),
                dup_json_str(b, "nodePool"),
                dt__strdup("running"),
                dt__strdup(""),
                cJSON_IsNumber(mp) ? mp->valuedouble : -1,
                dup_json_str(b, "interruptionBehavior")};
    cJSON_Delete(b);
    if (dt__vec_push(&F.insts, in)) return dt__httpd_error(req, 503, "out of memory");
    if (F.lose > 0) { /* launched, but the answer is lost */
      F.lose--;
      return 0;
    }
    return send_json(req, 201, inst_json(&F.insts.v[F.insts.n - 1]));
  }
  if (dt__httpd_path(req, "/instances") && dt__httpd_method(req, "GET")) {
    char *cl = NULL; /* ?cluster=C, decoded */
    if (req->query_at != SIZE_MAX)
      for (const char *q = req->path.base + req->query_at + 1, *e = req->path.base + req->path.len; q < e && !cl;) {
        const char *amp = memchr(q, '&', (size_t)(e - q)), *end = amp ? amp : e;
        if (end - q >= 8 && !memcmp(q, "cluster=", 8) && !(cl = dt__httpc_unescape(q + 8, (size_t)(end - q - 8))))
          return dt__httpd_error(req, 400, "cluster: bad percent-encoding");
        q = end + 1;
      }
    cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "instances");
    bool hide = F.hide > 0; /* a listing that lags the launches: nothing in it */
    if (hide) F.hide--;
    for (size_t i = 0; i < F.insts.n && !hide; i++)
      if (!cl || !strcmp(F.insts.v[i].cluster, cl)) cJSON_AddItemToArray(arr, inst_json(&F.insts.v[i]));
    dt__free(cl);
    return send_json(req, 200, o);
  }
  if (dt__httpd_prefix(req, "/instances/", &rest, &rl) && dt__httpd_method(req, "DELETE")) {
    int at = find(rest, rl);
    if (at < 0) return dt__httpd_error(req, 404, "no such instance");
    finst *in = &F.insts.v[at];
    set_str(&in->state, "terminated");
    cJSON *o = inst_json(in);
    dt__free(in->id), dt__free(in->cluster), dt__free(in->claim), dt__free(in->type), dt__free(in->zone);
    dt__free(in->ct), dt__free(in->pool), dt__free(in->state), dt__free(in->reason), dt__free(in->interruption);
    F.insts.v[at] = F.insts.v[--F.insts.n];
    return send_json(req, 200, o);
  }
  return dt__httpd_error(req, 404, "no such endpoint");
}

static void on_signal(uv_signal_t *s, int sig) {
  (void)sig;
  uv_stop(s->loop);
}

int dt__fakecloud_main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  const char *listen = "127.0.0.1:8081", *catalog = NULL;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--listen") && i + 1 < argc)
      listen = argv[++i];
    else if (!strcmp(argv[i], "--catalog") && i + 1 < argc)
      catalog = argv[++i];
    else if (!strcmp(argv[i], "--ice") && i + 1 < argc) {
      char *s = dt__strdup(argv[++i]);
      if (!s || dt__vec_push(&F.ice, s)) return 1;
    } else {
      bool help = !strcmp(argv[i], "-h") || !strcmp(argv[i], "--help");
      fputs("usage: dovetail fakecloud [--listen HOST:PORT] [--catalog NAME|FILE] [--ice TYPE/ZONE/CT]...\n"
            "An in-memory cloud speaking the http provider's contract, for tests and demos (see README).\n"
            "Test controls (POST, body in parentheses): /admin/ice (TYPE/ZONE/CT), /admin/preempt/ID,\n"
            "/admin/terminate/ID (terminated, still listed; STATE: that state instead, such as shutting-down),\n"
            "/admin/reid/ID (listed under a new id; NEW-ID: that one),\n"
            "/admin/fail (N: the next N requests 503), /admin/hang (N: no answer), /admin/lose (N: launched,\n"
            "answer lost), /admin/garble (N: a 200 with an HTML page), /admin/hide (N: listings with no\n"
            "instance), /admin/slow (MS: every request that late), /admin/throttle (N S: the next N requests\n"
            "429 with Retry-After: S; N S date: S as an HTTP date; N S METHOD: only that method's requests);\n"
            "GET /admin/stats.\n"
            "/admin/* requests count for none of them.\n",
            help ? stdout : stderr);
      return help ? 0 : 2;
    }
  }
  struct stat st;
  bool by_name = !catalog || (strcmp(catalog, "-") && stat(catalog, &st)); /* not a file: a bundled catalog */
  dt_error err = {0};
  if (by_name && !dt__catalog_bundled(catalog ? catalog : dt_catalog_bundled(0), &F.catalog, &F.catalog_len)) {
    /* served as the library has it compiled in */
  } else if (by_name) { /* neither a file nor a bundled name: said as serve says it, with the bundled names */
    dt_catalog *c = NULL;
    if (!dt_catalog_load_named(catalog, &c, &err)) snprintf(err.msg, sizeof err.msg, "%s: changed while read", catalog);
    dt_catalog_free(c);
    fprintf(stderr, "dovetail fakecloud: %s\n", err.msg);
    return 1;
  } else {
    char *t = NULL;
    size_t len;
    dt_catalog *c = NULL; /* a catalog file the daemon would refuse is refused here, where it names the file */
    if (dt__read_file(catalog, &t, &len, &err) || dt_catalog_load_buffer(catalog, t, len, &c, &err)) {
      dt__free(t);
      fprintf(stderr, "dovetail fakecloud: %s\n", err.msg);
      return 1;
    }
    dt_catalog_free(c);
    F.catalog = t;
    F.catalog_len = len;
  }
  snprintf(F.etag, sizeof F.etag, "\"%016llx\"", (unsigned long long)dt__hash64(F.catalog, F.catalog_len));
  uv_loop_t *loop = uv_default_loop();
  char msg[600];
  dt_httpd_limits lim = {1 << 20, 0, 0, 0}; /* a test double: every client the daemon opens */
  if (dt__httpd_start(&F.http, loop, listen, &lim, on_req, msg, sizeof msg)) {
    fprintf(stderr, "dovetail fakecloud: %s\n", msg);
    return 1;
  }
  uv_signal_init(loop, &F.sigterm);
  uv_signal_init(loop, &F.sigint);
  uv_signal_start(&F.sigterm, on_signal, SIGTERM);
  uv_signal_start(&F.sigint, on_signal, SIGINT);
  fprintf(stderr, "{\"event\":\"listening\",\"msg\":\"http://%s:%d\"}\n", F.http.host, F.http.port);
  fflush(stderr);
  uv_run(loop, UV_RUN_DEFAULT);
  return 0;
}
