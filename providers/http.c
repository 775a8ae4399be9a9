/*
** http.c: the `http` provider, the REST contract over libcurl on the loop:
** POST /instances launches (201 with an id; 409 insufficient capacity),
** DELETE /instances/ID deletes, GET /instances?cluster= and GET /catalog
** (with its ETag) are polled. Failed launches are retried with jittered
** exponential backoff (--retries), no sooner than a Retry-After the cloud
** gave; after five failures in a row (throttling with a Retry-After is not
** one) the circuit opens for 30 s and launches fail at once.
*/
#define _GNU_SOURCE
#include "../engine/controller.h"
#include "../engine/httpc.h"
#include "../engine/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void http_launch(launch_ctx *lc);

static void on_retry(uv_timer_t *t) { http_launch(t->data); }

/* 1 s doubled n times, at most cap ms: the wait before a delete is sent
** again, or before a poll that failed ahead of the first reconciliation. */
static uint64_t doubling_ms(unsigned n, uint64_t cap) {
  uint64_t ms = (uint64_t)1000 << (n < 16 ? n : 16);
  return ms < cap ? ms : cap;
}

static void on_circuit_close(uv_timer_t *t) {
  (void)t;
  logf_("info", "circuit", "closed: launches resume");
  arm_batch();
}

/* The cloud's URL for path followed by what, percent-encoded (an id or a
** cluster name may hold '#', '?', '&', '/' or a space); dt__free it. */
static char *cloud_url(const char *path, const char *what) {
  char *esc = dt__httpc_escape(what);
  size_t n = esc ? strlen(D.cloud_url) + strlen(path) + strlen(esc) + 1 : 0;
  char *url = esc ? dt__malloc(n) : NULL;
  if (url) snprintf(url, n, "%s%s%s", D.cloud_url, path, esc);
  dt__free(esc);
  return url;
}

static void on_launch_reply(void *ud, const dt_httpc_reply *r) {
  launch_ctx *lc = ud;
  if (r->dropped) { /* never sent, as a launch not yet started at a stop */
    lc_done(lc);
    return;
  }
  long status = r->status;
  const char *err = r->err;
  if (status == 201) {
    cJSON *o = cJSON_ParseWithLength(r->body, r->len);
    const char *id = dt__jstr(o, "id");
    if (id && *id) {
      dt__ctl_launched(lc, DT_LAUNCH_OK, id, NULL);
      cJSON_Delete(o);
      return;
    }
    cJSON_Delete(o);
    err = "201 without an instance id";
  } else if (status == 409) {
    dt__ctl_launched(lc, DT_LAUNCH_NO_CAPACITY, NULL, NULL);
    return;
  }
  char msg[300];
  snprintf(msg, sizeof msg, "%s", err ? err : "");
  if (!err) snprintf(msg, sizeof msg, "HTTP %ld", status);
  /* 4xx other than 409 will not get better by retrying. A 429 or 503 with
  ** Retry-After is the cloud asking for time, not failing: it does not count
  ** towards opening the circuit, and the retry waits at least that long. */
  bool retry = status == 0 || status >= 500 || status == 429;
  bool asked = r->retry_after_ms >= 1000; /* "come back at once", again and again, is failing */
  if (!asked && ++D.consecutive_failures >= 5 && D.circuit_until <= wall()) {
    D.circuit_until = wall() + 30;
    tm_start(&D.circuit_timer, on_circuit_close, 30000, 0);
    logf_("error", "circuit", "open for 30s after %u consecutive provider failures (last: %s)", D.consecutive_failures,
          msg);
  }
  /* lc->attempt counts the requests sent (http_launch counts each): after
  ** the first, retry n = attempt of --retries, 500 ms x 2^(n-1) x [0.5, 1.5) */
  if (retry && lc->attempt <= D.retries && D.circuit_until <= wall()) {
    D.jitter = D.jitter * 6364136223846793005ull + 1442695040888963407ull;
    double j = 0.5 + (double)(D.jitter >> 11) / 9007199254740992.0;
    uint64_t delay = (uint64_t)(500.0 * (double)(1u << (lc->attempt - 1)) * j);
    if (asked && (uint64_t)r->retry_after_ms > delay) delay = (uint64_t)r->retry_after_ms;
    logf_("warn", "retry", "NodeClaim %s: %s%s; retry %d in %llu ms", lc->claim, msg, asked ? " (Retry-After)" : "",
          lc->attempt, (unsigned long long)delay);
    tm_start(&lc->retry, on_retry, delay, 0);
    return;
  }
  dt__ctl_launched(lc, DT_LAUNCH_FAILED, NULL, msg);
}

/* The most a spot launch may cost: the NodePool's dovetail.dev/spot-max-price,
** else the type's on-demand price (Cluster API's default); < 0 unknown. */
static double spot_max_price(const char *pool, const char *type) {
  char key[KEY_MAX + 16];
  snprintf(key, sizeof key, "NodePool//%s", pool);
  int at = obj_find(key);
  cJSON *np = at >= 0 ? cJSON_Parse(D.objs.v[at].json) : NULL;
  const char *v = dt__jstr(jget(jget(np, "metadata"), "annotations"), "dovetail.dev/spot-max-price");
  double max = v ? strtod(v, NULL) : -1;
  cJSON_Delete(np);
  const dt_ctype *t = max < 0 ? dt__catalog_named(D.cat, type) : NULL;
  return t ? t->od_price : max;
}

static void http_launch(launch_ctx *lc) {
  if (D.circuit_until > wall()) {
    lc->not_sent = true;
    dt__ctl_launched(lc, DT_LAUNCH_FAILED, NULL, "the provider circuit is open");
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
  if (!strcmp(lc->ct, "spot")) {
    /* the cloud-neutral parts of a spot request, for a provider to map
    ** (AWS: MaxPrice, InstanceInterruptionBehavior; IBM: availability
    ** class spot, preemption action) */
    double max = spot_max_price(lc->pool, lc->type);
    if (max >= 0) cJSON_AddNumberToObject(b, "maxPrice", max);
    cJSON_AddStringToObject(b, "interruptionBehavior", "terminate");
  }
  char *body = cJSON_PrintUnformatted(b);
  cJSON_Delete(b);
  char *url = cloud_url("/instances", "");
  if (!body || !url || dt__httpc_request("POST", url, body, NULL, (long)D.timeout_ms, on_launch_reply, lc))
    dt__ctl_launched(lc, DT_LAUNCH_FAILED, NULL, "cannot start the request");
  cJSON_free(body);
  dt__free(url);
}

/* Deletes the cloud did not carry out (a transport error, 5xx or 429) are
** sent again, 1 s, 2 s, 4 s ... (at most 60 s) later and no sooner than a
** Retry-After, up to DELETE_TRIES times: a claim is gone from the books
** once its delete is sent, so a delete dropped after one try left its
** instance running, billed and held by no claim. */
#define DELETE_TRIES 10
typedef struct del_retry {
  char *id;
  int tries;  /* sent so far */
  int64_t at; /* waiting: wall ms, sent again from then */
} del_retry;
static DT_VEC(del_retry) g_dels;

static void on_delete_retry(uv_timer_t *t);

static void arm_deletes(void) {
  int64_t next = INT64_MAX, now = (int64_t)dt__now_ms();
  for (size_t i = 0; i < g_dels.n; i++)
    if (g_dels.v[i].at < next) next = g_dels.v[i].at;
  if (g_dels.n) tm_start(&D.delete_retry, on_delete_retry, next > now ? (uint64_t)(next - now) : 0, 0);
}

static void send_delete(char *id, int tries);

static void on_delete_reply(void *ud, const dt_httpc_reply *r) {
  del_retry *dc = ud;
  bool gone = r->status == 200 || r->status == 404;
  bool again = !gone && !r->dropped && (r->status == 0 || r->status >= 500 || r->status == 429);
  if (!gone && !r->dropped) {
    char st[32];
    snprintf(st, sizeof st, "HTTP %ld", r->status);
    logf_("warn", "delete", "instance %s: %s%s", dc->id, r->err ? r->err : st,
          again && dc->tries < DELETE_TRIES ? "; sent again later" : "; given up: the instance may still run");
  }
  if (again && dc->tries < DELETE_TRIES) {
    int64_t wait = (int64_t)doubling_ms((unsigned)dc->tries - 1, 60000);
    if (r->retry_after_ms > wait) wait = r->retry_after_ms;
    dc->at = (int64_t)dt__now_ms() + wait;
    if (!dt__vec_push(&g_dels, *dc)) {
      dt__free(dc);
      arm_deletes();
      return;
    }
  }
  dt__free(dc->id);
  dt__free(dc);
}

static void on_delete_retry(uv_timer_t *t) {
  (void)t;
  int64_t now = (int64_t)dt__now_ms();
  for (size_t i = 0; i < g_dels.n;)
    if (g_dels.v[i].at <= now) {
      del_retry d = g_dels.v[i];
      g_dels.v[i] = g_dels.v[--g_dels.n];
      send_delete(d.id, d.tries);
    } else {
      i++;
    }
  arm_deletes();
}

static void send_delete(char *id, int tries) {
  /* percent-encoded: an id holding '#', '?' or '/' named another resource */
  char *url = cloud_url("/instances/", id);
  if (!url) {
    logf_("error", "delete", "instance %s: out of memory", id);
    dt__free(id);
    return;
  }
  del_retry *dc = dt__malloc(sizeof *dc);
  if (!dc) {
    dt__free(id);
    dt__free(url);
    return;
  }
  *dc = (del_retry){id, tries + 1, 0};
  if (dt__httpc_request("DELETE", url, NULL, NULL, (long)D.timeout_ms, on_delete_reply, dc)) {
    logf_("error", "delete", "instance %s: cannot start the request", id);
    dt__free(id);
    dt__free(dc);
  }
  dt__free(url);
}

/* Ask the http provider to delete instance id. */
static void http_delete(const char *id) {
  char *idc = dt__strdup(id);
  if (idc) send_delete(idc, 0);
}

static bool polling, cataloguing; /* a GET /instances, a GET /catalog not yet answered */

static unsigned unready_polls; /* polls that failed before the first reconciliation */

/* A listing that is not one (a proxy's HTML page, a truncated body, no
** "instances" array) is a failed poll: read as an empty listing, it would
** forget every instance held and launch the fleet again. */
static void on_instances(void *ud, const dt_httpc_reply *r) {
  (void)ud;
  polling = false;
  cJSON *o = r->status == 200 ? cJSON_ParseWithLength(r->body, r->len) : NULL;
  const cJSON *list = jget(o, "instances");
  if (!cJSON_IsArray(list)) {
    logf_("warn", "poll", "GET /instances: %s",
          r->status != 200 ? (r->err ? r->err : "unexpected status")
          : !o             ? "the reply is not JSON; nothing is read from it"
                           : "the reply has no \"instances\" array; nothing is read from it");
    cJSON_Delete(o);
    if (!D.ready) { /* not ready until it reconciles: try again in 1 s, 2 s, ... up to --poll */
      tm_start(&D.poll, on_poll_timer, doubling_ms(unready_polls++, D.poll_ms), D.poll_ms);
    }
    return;
  }
  dt__ctl_instances(list);
  cJSON_Delete(o);
}

static void on_catalog(void *ud, const dt_httpc_reply *r) {
  (void)ud;
  cataloguing = false;
  if (r->status == 304) return;
  if (r->status != 200) {
    logf_("warn", "catalog", "GET /catalog: %s", r->err ? r->err : "unexpected status");
    return;
  }
  dt_catalog *c = NULL;
  dt_error e = {0};
  const char *etag = r->etag;
  if (dt_catalog_load_buffer("cloud:/catalog", r->body, r->len, &c, &e)) {
    logf_("error", "catalog", "the cloud's catalog is invalid, keeping the current one: %s", e.msg);
    return;
  }
  if (!dt_catalog_size(c)) { /* every pod would turn unschedulable, and nothing would say why */
    logf_("error", "catalog", "the cloud's catalog has no instance type, keeping the current one");
    dt_catalog_free(c);
    return;
  }
  dt__ctl_catalog(c, etag, r->len);
}

/* A poll still waiting its turn behind launches is not sent twice. */
static void http_poll(void) {
  char *url = cloud_url("/instances?cluster=", D.cluster);
  if (!polling &&
      !(polling = url && !dt__httpc_request("GET", url, NULL, NULL, (long)D.timeout_ms, on_instances, NULL)))
    logf_("error", "poll", "cannot start GET /instances");
  dt__free(url);
  url = cloud_url("/catalog", "");
  if (!cataloguing &&
      !(cataloguing = url && !dt__httpc_request("GET", url, NULL, D.catalog_etag[0] ? D.catalog_etag : NULL,
                                                (long)D.timeout_ms, on_catalog, NULL)))
    logf_("error", "catalog", "cannot start GET /catalog");
  dt__free(url);
}

const dt_provider dt__provider_http = {"http", http_launch, http_delete, http_poll};
