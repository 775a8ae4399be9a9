/*
** httpc.c: libcurl's multi interface on a libuv loop. Each socket curl wants
** watched gets a uv_poll; curl's timer is a uv_timer. Completed transfers
** call their callback from the loop.
*/
#define _GNU_SOURCE
#include "httpc.h"

#include "internal.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

typedef struct xfer {
  CURL *easy;
  dt_buf body;
  char etag[256];
  struct curl_slist *hdr;
  char *payload;
  dt_httpc_cb cb;
  void *ud;
} xfer;

typedef struct sockctx {
  uv_poll_t poll;
  curl_socket_t fd;
} sockctx;

static CURLM *M;
static uv_loop_t *L;
static uv_timer_t T, more; /* curl's timer; the next slice of completed transfers */
static size_t inflight;

/* Completed transfers handed to their callbacks per loop turn: 4,000 launch
** replies arriving together are 4,000 callbacks, and in one turn they kept
** the loop (the API, /healthz) waiting over a second. */
#define DONE_SLICE 64

static void on_more(uv_timer_t *t);

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
    curl_multi_remove_handle(M, msg->easy_handle);
    inflight--;
    x->cb(x->ud, err ? 0 : code, x->body.p ? x->body.p : "", x->body.len, x->etag[0] ? x->etag : NULL, err);
    curl_easy_cleanup(x->easy);
    curl_slist_free_all(x->hdr);
    dt__free(x->body.p);
    dt__free(x->payload);
    dt__free(x);
  }
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

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  xfer *x = ud;
  dt__buf_putn(&x->body, p, sz * n);
  return x->body.oom ? 0 : sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud) {
  xfer *x = ud;
  size_t len = sz * n;
  if (len > 5 && !strncasecmp(p, "ETag:", 5)) {
    const char *v = p + 5;
    while (*v == ' ') v++;
    size_t vl = len - (size_t)(v - p);
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n')) vl--;
    snprintf(x->etag, sizeof x->etag, "%.*s", (int)vl, v);
  }
  return len;
}

int dt__httpc_init(uv_loop_t *loop) {
  if (curl_global_init(CURL_GLOBAL_DEFAULT)) return -1;
  L = loop;
  M = curl_multi_init();
  if (!M) return -1;
  uv_timer_init(loop, &T);
  uv_timer_init(loop, &more);
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
  CURL *e = x->easy;
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
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
    x->payload = dt__strdup(body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->payload);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
  }
  if (curl_multi_add_handle(M, e) != CURLM_OK) {
    curl_easy_cleanup(e);
    curl_slist_free_all(x->hdr);
    dt__free(x->payload);
    dt__free(x);
    return -1;
  }
  inflight++;
  return 0;
}

size_t dt__httpc_in_flight(void) { return inflight; }

static void on_close_noop(uv_handle_t *h) { (void)h; }

void dt__httpc_close(void) {
  if (!M) return;
  curl_multi_cleanup(M);
  M = NULL;
  uv_close((uv_handle_t *)&T, on_close_noop);
  uv_close((uv_handle_t *)&more, on_close_noop);
  curl_global_cleanup();
}
