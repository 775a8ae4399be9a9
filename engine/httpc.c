/*
** httpc.c: libcurl's multi interface on a libuv loop. Each socket curl wants
** watched gets a uv_poll; curl's timer is a uv_timer. Completed transfers
** call their callback from the loop.
**
** Requests beyond the connection limit wait here, in order, rather than in
** curl's own queue (CURLMOPT_MAX_HOST_CONNECTIONS), where a transfer's
** timeout runs while it waits: 500 launches behind 16 connections to a
** cloud answering in a second would time out by the hundred and be sent
** again. A Retry-After on a 429 or 503 holds what has not started of the
** same method: the cloud said when to come back, and every launch of a
** burst would otherwise hear it once and retry on its own clock. Only of
** the same method, as clouds meter their APIs by action (EC2's RunInstances,
** Describe* and TerminateInstances each have a bucket of their own): a
** throttled launch that held the listings too would leave interruptions and
** lost instances unseen for as long as it asked.
*/
#define _GNU_SOURCE
#include "httpc.h"

#include "internal.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct xfer {
  CURL *easy;
  dt_buf body;
  char etag[256];
  long retry_after_ms;
  long timeout_ms;
  bool too_big; /* the reply passed max_reply: cut off */
  struct curl_slist *hdr;
  char *payload;
  dt_httpc_cb cb;
  void *ud;
  struct xfer *next; /* waiting: the one after */
  int kind;          /* its queue: K_READ, K_WRITE or K_DELETE */
  uint64_t seq;      /* order of arrival, across the queues */
} xfer;

/* Requests wait in one queue per method, each with its own hold. */
enum { K_READ, K_WRITE, K_DELETE, NKIND }; /* GET (and HEAD); POST, PUT and PATCH; DELETE */

typedef struct sockctx {
  uv_poll_t poll;
  curl_socket_t fd;
} sockctx;

static CURLM *M;
static uv_loop_t *L;
static uv_timer_t T, more, hold; /* curl's timer; the next slice of completed transfers; the end of a hold */
static size_t inflight, running, nwait, max_conn = 16, max_reply = 64u << 20;
static struct {
  xfer *head, *tail;
  uint64_t hold_until; /* uv_now: none of this queue starts before */
} Q[NKIND];
static uint64_t arrivals;
static bool quiet; /* dt__httpc_quiesce: nothing more starts */

/* Completed transfers handed to their callbacks per loop turn: 4,000 launch
** replies arriving together are 4,000 callbacks, and in one turn they kept
** the loop (the API, /healthz) waiting over a second. */
#define DONE_SLICE 64

static void on_more(uv_timer_t *t);
static void pump(void);

static void xfer_free(xfer *x) {
  curl_easy_cleanup(x->easy);
  curl_slist_free_all(x->hdr);
  dt__free(x->body.p);
  dt__free(x->payload);
  dt__free(x);
}

static void done(void) {
  CURLMsg *msg;
  int left = 0, n = 0;
  while (n < DONE_SLICE && (msg = curl_multi_info_read(M, &left))) {
    n++;
    if (msg->msg != CURLMSG_DONE) continue;
    xfer *x = NULL;
    long code = 0;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
    curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
    const char *err = msg->data.result == CURLE_OK ? NULL : curl_easy_strerror(msg->data.result);
    char big[96];
    if (x->too_big) {
      snprintf(big, sizeof big, "the reply is larger than the limit (%zu bytes)", max_reply);
      err = big;
    }
    curl_multi_remove_handle(M, msg->easy_handle);
    inflight--;
    running--;
    if (err) code = 0;
    long ra = (code == 429 || code == 503) ? x->retry_after_ms : -1;
    if (ra >= 0) {
      uv_update_time(L); /* from now, not from when this turn of the loop began */
      uint64_t until = uv_now(L) + (uint64_t)(ra < DT_HTTPC_HOLD_MAX_MS ? ra : DT_HTTPC_HOLD_MAX_MS);
      if (until > Q[x->kind].hold_until) Q[x->kind].hold_until = until;
    }
    dt_httpc_reply r = {code, x->body.p ? x->body.p : "", x->body.len, x->etag[0] ? x->etag : NULL, err, ra, false};
    x->cb(x->ud, &r);
    xfer_free(x);
  }
  pump();
  if (n == DONE_SLICE && left > 0) uv_timer_start(&more, on_more, 0, 0); /* the rest after the loop's I/O */
}

static void on_more(uv_timer_t *t) {
  (void)t;
  if (M) done();
}

static void on_poll(uv_poll_t *p, int status, int events) {
  sockctx *c = p->data;
  int flags = status < 0 ? CURL_CSELECT_ERR : 0, running;
  if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
  if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
  curl_multi_socket_action(M, c->fd, flags, &running);
  done();
}

static void free_sock(uv_handle_t *h) { dt__free(h->data); }

static int on_socket(CURL *e, curl_socket_t s, int what, void *userp, void *socketp) {
  (void)e;
  (void)userp;
  sockctx *c = socketp;
  if (what == CURL_POLL_REMOVE) {
    if (c) {
      uv_poll_stop(&c->poll);
      uv_close((uv_handle_t *)&c->poll, free_sock);
      curl_multi_assign(M, s, NULL);
    }
    return 0;
  }
  if (!c) {
    c = dt__calloc(1, sizeof *c);
    if (!c) return -1;
    c->fd = s;
    uv_poll_init_socket(L, &c->poll, s);
    c->poll.data = c;
    curl_multi_assign(M, s, c);
  }
  int ev = 0;
  if (what & CURL_POLL_IN) ev |= UV_READABLE;
  if (what & CURL_POLL_OUT) ev |= UV_WRITABLE;
  uv_poll_start(&c->poll, ev, on_poll);
  return 0;
}

static void on_timeout(uv_timer_t *t) {
  (void)t;
  int running;
  curl_multi_socket_action(M, CURL_SOCKET_TIMEOUT, 0, &running);
  done();
}

/* curl asks again with each transfer added: a timeout already due sooner
** is kept, so a burst of requests is started as it comes, not all at once
** when the burst ends (4,000 launches' connects in one call held the loop). */
static int on_timer(CURLM *m, long ms, void *userp) {
  (void)m;
  (void)userp;
  uint64_t due = ms > 0 ? (uint64_t)ms : 1;
  if (ms < 0)
    uv_timer_stop(&T);
  else if (!uv_is_active((uv_handle_t *)&T) || uv_timer_get_due_in(&T) > due)
    uv_timer_start(&T, on_timeout, due, 0);
  return 0;
}

static long retry_after_ms(const char *v);

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  xfer *x = ud;
  if (sz * n > max_reply - x->body.len) { /* a cloud (or a proxy) that never stops talking */
    x->too_big = true;
    return 0;
  }
  dt__buf_putn(&x->body, p, sz * n);
  return x->body.oom ? 0 : sz * n;
}

/* When header line p (len bytes) is field name ("Name:"), its value without
** the spaces around it into out; else false. */
static bool header_value(const char *p, size_t len, const char *name, char *out, size_t cap) {
  size_t nl = strlen(name);
  if (len <= nl || strncasecmp(p, name, nl)) return false;
  const char *v = p + nl;
  while (v < p + len && (*v == ' ' || *v == '\t')) v++;
  size_t vl = len - (size_t)(v - p);
  while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' ' || v[vl - 1] == '\t')) vl--;
  snprintf(out, cap, "%.*s", (int)(vl < cap ? vl : cap - 1), v);
  return true;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud) {
  xfer *x = ud;
  size_t len = sz * n;
  char v[128];
  if (!header_value(p, len, "ETag:", x->etag, sizeof x->etag) && header_value(p, len, "Retry-After:", v, sizeof v))
    x->retry_after_ms = retry_after_ms(v);
  return len;
}

/* Retry-After's value (RFC 9110 10.2.3): delay-seconds or an HTTP date;
** -1 when it is neither. */
static long retry_after_ms(const char *v) {
  char *end;
  if (*v >= '0' && *v <= '9') {
    unsigned long long s = strtoull(v, &end, 10);
    if (*end) return -1;
    return s > (unsigned long long)DT_HTTPC_HOLD_MAX_MS / 1000 ? DT_HTTPC_HOLD_MAX_MS : (long)s * 1000;
  }
  time_t at = curl_getdate(v, NULL);
  if (at < 0) return -1;
  time_t now = time(NULL);
  if (at <= now) return 0;
  return at - now > DT_HTTPC_HOLD_MAX_MS / 1000 ? DT_HTTPC_HOLD_MAX_MS : (long)(at - now) * 1000;
}

/* Send x now, its timeout counted from here; -1 when curl will not. */
static int send_now(xfer *x) {
  curl_easy_setopt(x->easy, CURLOPT_TIMEOUT_MS, x->timeout_ms);
  if (curl_multi_add_handle(M, x->easy) != CURLM_OK) return -1;
  running++;
  return 0;
}

/* A request that waited: sent, or failed back to its owner. */
static void start(xfer *x) {
  if (!send_now(x)) return;
  inflight--;
  dt_httpc_reply r = {0, "", 0, NULL, "cannot start the transfer", -1, false};
  x->cb(x->ud, &r);
  xfer_free(x);
}

static void on_hold(uv_timer_t *t) {
  (void)t;
  pump();
}

/* The hold's timer: due when the first hold over a waiting request ends. */
static void arm_hold(uint64_t now) {
  uint64_t wake = 0;
  for (int i = 0; i < NKIND; i++)
    if (Q[i].head && Q[i].hold_until > now && (!wake || Q[i].hold_until < wake)) wake = Q[i].hold_until;
  if (wake && (!uv_is_active((uv_handle_t *)&hold) || uv_timer_get_due_in(&hold) > wake - now))
    uv_timer_start(&hold, on_hold, wake - now, 0);
}

/* Start what waits, oldest first, while connections are free and its
** queue is not held; then wake when the first hold over a waiting request
** ends. */
static void pump(void) {
  if (!M || quiet) return;
  uint64_t now = uv_now(L);
  while (running < max_conn) {
    int k = -1;
    for (int i = 0; i < NKIND; i++)
      if (Q[i].head && Q[i].hold_until <= now && (k < 0 || Q[i].head->seq < Q[k].head->seq)) k = i;
    if (k < 0) break;
    xfer *x = Q[k].head;
    if (!(Q[k].head = x->next)) Q[k].tail = NULL;
    nwait--;
    x->next = NULL;
    start(x);
  }
  arm_hold(now);
}

int dt__httpc_init(uv_loop_t *loop, size_t max_connections, size_t max_reply_bytes) {
  if (curl_global_init(CURL_GLOBAL_DEFAULT)) return -1;
  L = loop;
  max_conn = max_connections ? max_connections : 16;
  max_reply = max_reply_bytes ? max_reply_bytes : 64u << 20;
  M = curl_multi_init();
  if (!M) return -1;
  uv_timer_init(loop, &T);
  uv_timer_init(loop, &more);
  uv_timer_init(loop, &hold);
  curl_multi_setopt(M, CURLMOPT_SOCKETFUNCTION, on_socket);
  curl_multi_setopt(M, CURLMOPT_TIMERFUNCTION, on_timer);
  return 0;
}

int dt__httpc_request(const char *method, const char *url, const char *body, const char *if_none_match, long timeout_ms,
                      dt_httpc_cb cb, void *ud) {
  xfer *x = dt__calloc(1, sizeof *x);
  if (!x || !(x->easy = curl_easy_init())) {
    dt__free(x);
    return -1;
  }
  x->cb = cb;
  x->ud = ud;
  x->timeout_ms = timeout_ms;
  x->retry_after_ms = -1;
  CURL *e = x->easy;
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
  curl_easy_setopt(e, CURLOPT_PRIVATE, x);
  x->hdr = curl_slist_append(NULL, "Content-Type: application/json");
  if (if_none_match) {
    char h[300];
    snprintf(h, sizeof h, "If-None-Match: %s", if_none_match);
    x->hdr = curl_slist_append(x->hdr, h);
  }
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->hdr);
  if (body) {
    if (!(x->payload = dt__strdup(body))) {
      xfer_free(x);
      return -1;
    }
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->payload);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
  }
  if (!x->hdr) {
    xfer_free(x);
    return -1;
  }
  x->kind = !strcmp(method, "GET") || !strcmp(method, "HEAD") ? K_READ : !strcmp(method, "DELETE") ? K_DELETE : K_WRITE;
  x->seq = arrivals++;
  /* sent at once only when nothing older may go first (a reply's callback
  ** asks before the slot it freed goes to a request that waits), its own
  ** queue's included */
  bool older = false;
  for (int i = 0; i < NKIND; i++) older |= Q[i].head && Q[i].hold_until <= uv_now(L);
  if (running < max_conn && Q[x->kind].hold_until <= uv_now(L) && !older && !quiet) {
    if (send_now(x)) {
      xfer_free(x);
      return -1;
    }
  } else {
    if (Q[x->kind].tail)
      Q[x->kind].tail->next = x;
    else
      Q[x->kind].head = x;
    Q[x->kind].tail = x;
    nwait++;
    if (!quiet) arm_hold(uv_now(L)); /* what waits on a connection starts as transfers end */
  }
  inflight++;
  return 0;
}

size_t dt__httpc_in_flight(void) { return inflight; }
size_t dt__httpc_waiting(void) { return nwait; }

static void on_close_noop(uv_handle_t *h) { (void)h; }

void dt__httpc_quiesce(void) { quiet = true; }

void dt__httpc_close(void) {
  if (!M) return;
  for (int i = 0; i < NKIND; i++) {
    while (Q[i].head) { /* never sent: their owners let go of what they hold */
      xfer *x = Q[i].head;
      Q[i].head = x->next;
      inflight--;
      dt_httpc_reply r = {0, "", 0, NULL, "not sent: closing", -1, true};
      x->cb(x->ud, &r);
      xfer_free(x);
    }
    Q[i].tail = NULL;
  }
  nwait = 0;
  curl_multi_cleanup(M);
  M = NULL;
  uv_close((uv_handle_t *)&T, on_close_noop);
  uv_close((uv_handle_t *)&more, on_close_noop);
  uv_close((uv_handle_t *)&hold, on_close_noop);
  curl_global_cleanup();
}

char *dt__httpc_escape(const char *s) {
  char *e = curl_easy_escape(NULL, s, 0), *r = e ? dt__strdup(e) : NULL;
  curl_free(e);
  return r;
}

char *dt__httpc_unescape(const char *s, size_t n) {
  int len = 0;
  char *u = n <= INT32_MAX ? curl_easy_unescape(NULL, s, (int)n, &len) : NULL;
  char *r = u && strlen(u) == (size_t)len ? dt__strndup(u, (size_t)len) : NULL;
  curl_free(u);
  return r;
}
