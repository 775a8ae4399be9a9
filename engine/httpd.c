/*
** httpd.c: h2o (libuv flavour) set up for one handler; request helpers.
*/
#define _GNU_SOURCE
#include "httpd.h"

#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct dt_httpd_conn {
  uv_tcp_t tcp; /* first: h2o's close callback hands back the handle */
  dt_httpd *srv;
  h2o_socket_t *sock;
  uint64_t moved, still_since; /* bytes through the socket at the last sweep; since when unchanged */
  dt_httpd_conn *prev, *next;
};

static void conn_gone(uv_handle_t *h) {
  dt_httpd_conn *c = (dt_httpd_conn *)h;
  dt_httpd *s = c->srv;
  if (c->prev)
    c->prev->next = c->next;
  else
    s->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  s->nconns--;
  free(c);
}

static uint64_t conn_moved(const dt_httpd_conn *c);

/* Shut a connection: shutdown(2) rather than a close, so h2o sees its read
** end or its write fail and closes the connection through its own path. */
static bool conn_shut(dt_httpd_conn *c) {
  uv_os_fd_t fd;
  return uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0 && shutdown(fd, SHUT_RDWR) == 0;
}

/* The bytes each connection moved, brought up to date at now. */
static void conns_update(dt_httpd *s, uint64_t now) {
  for (dt_httpd_conn *c = s->conns; c; c = c->next) {
    if (uv_is_closing((uv_handle_t *)&c->tcp)) continue;
    uint64_t m = conn_moved(c);
    if (m != c->moved) {
      c->moved = m;
      c->still_since = now;
    }
  }
}

/* At the limit, the connection still the longest gives way to a new one
** when it has moved nothing for 5 s (an idle keep-alive, a reader that
** stopped; not a request whose large body is being parsed, which takes well
** under that): a flood of idle connections cannot keep out a health probe. */
#define EVICT_STILL_MS 5000

static bool make_room(dt_httpd *s, uint64_t now) {
  conns_update(s, now);
  dt_httpd_conn *old = NULL;
  for (dt_httpd_conn *c = s->conns; c; c = c->next)
    if (!uv_is_closing((uv_handle_t *)&c->tcp) && (!old || c->still_since < old->still_since)) old = c;
  if (!old || now - old->still_since < EVICT_STILL_MS || !conn_shut(old)) return false;
  old->still_since = now;
  s->refused_conns++;
  return true;
}

static void on_accept(uv_stream_t *listener, int status) {
  dt_httpd *s = listener->data;
  if (status != 0) return;
  dt_httpd_conn *c = h2o_mem_alloc(sizeof *c);
  memset(c, 0, sizeof *c);
  uv_tcp_init(listener->loop, &c->tcp);
  if (uv_accept(listener, (uv_stream_t *)&c->tcp) != 0) {
    uv_close((uv_handle_t *)&c->tcp, (uv_close_cb)free);
    return;
  }
  uint64_t now = uv_now(listener->loop);
  if (s->lim.conns && s->nconns >= s->lim.conns && !make_room(s, now)) {
    s->refused_conns++; /* taken off the backlog and closed: the client knows at once */
    uv_close((uv_handle_t *)&c->tcp, (uv_close_cb)free);
    return;
  }
  c->srv = s;
  c->still_since = now;
  c->next = s->conns;
  if (s->conns) s->conns->prev = c;
  s->conns = c;
  s->nconns++;
  c->sock = h2o_uv_socket_create((uv_stream_t *)&c->tcp, conn_gone);
  h2o_accept(&s->accept, c->sock);
}

/* Bytes that went through the socket: read, and written to the kernel (what
** libuv still queues has not moved). */
static uint64_t conn_moved(const dt_httpd_conn *c) {
  size_t queued = uv_stream_get_write_queue_size((const uv_stream_t *)&c->tcp);
  return (uint64_t)c->sock->bytes_read + c->sock->bytes_written - queued;
}

/* Shut the connections that moved no byte for stall_ms. */
static void on_sweep(uv_timer_t *t) {
  dt_httpd *s = t->data;
  uint64_t now = uv_now(t->loop);
  conns_update(s, now);
  for (dt_httpd_conn *c = s->conns; c; c = c->next)
    if (!uv_is_closing((uv_handle_t *)&c->tcp) && now - c->still_since >= s->lim.stall_ms) {
      if (conn_shut(c)) s->stalled++;
      c->still_since = now; /* once */
    }
}

int dt__httpd_start(dt_httpd *s, uv_loop_t *loop, const char *listen, const dt_httpd_limits *lim, dt_httpd_handler h,
                    char *err, size_t n) {
  const char *colon = strrchr(listen, ':');
  if (!colon) {
    snprintf(err, n, "expected HOST:PORT, got \"%s\"", listen);
    return -1;
  }
  snprintf(s->host, sizeof s->host, "%.*s", (int)(colon - listen), listen);
  char *end;
  long port = strtol(colon + 1, &end, 10);
  if (*end || port < 0 || port > 65535) {
    snprintf(err, n, "bad port in \"%s\"", listen);
    return -1;
  }
  s->lim = *lim;
  h2o_config_init(&s->config);
  s->config.max_request_entity_size = lim->body;
  /* HTTP/1.1 only: HTTP/2 would let one connection hold 100 requests' bodies
  ** and replies at once (and nothing here needs it) */
  s->config.http1.upgrade_to_http2 = 0;
  h2o_hostconf_t *hc = h2o_config_register_host(&s->config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
  h2o_pathconf_t *pc = h2o_config_register_path(hc, "/", 0);
  h2o_handler_t *hd = h2o_create_handler(pc, sizeof *hd);
  hd->on_req = h;
  h2o_context_init(&s->ctx, loop, &s->config);
  s->accept.ctx = &s->ctx;
  s->accept.hosts = s->config.hosts;
  struct sockaddr_in addr;
  uv_tcp_init(loop, &s->listener);
  s->listener.data = s;
  int r;
  if ((r = uv_ip4_addr(s->host, (int)port, &addr)) ||
      (r = uv_tcp_bind(&s->listener, (const struct sockaddr *)&addr, 0)) ||
      (r = uv_listen((uv_stream_t *)&s->listener, 128, on_accept))) {
    snprintf(err, n, "cannot listen on %s: %s", listen, uv_strerror(r));
    return -1;
  }
  struct sockaddr_in bound;
  int blen = sizeof bound;
  uv_tcp_getsockname(&s->listener, (struct sockaddr *)&bound, &blen);
  s->port = ntohs(bound.sin_port);
  uv_timer_init(loop, &s->sweep);
  s->sweep.data = s;
  if (lim->stall_ms) {
    uint64_t every = lim->stall_ms / 4 ? lim->stall_ms / 4 : 1;
    uv_timer_start(&s->sweep, on_sweep, every, every);
    uv_unref((uv_handle_t *)&s->sweep);
  }
  return 0;
}

static void on_close_noop(uv_handle_t *h) { (void)h; }

void dt__httpd_close(dt_httpd *s) {
  uv_close((uv_handle_t *)&s->listener, on_close_noop);
  uv_close((uv_handle_t *)&s->sweep, on_close_noop);
  /* the connections still open (idle keep-alives) shut too: h2o closes each
  ** through its own path, its timers with it, before its context goes */
  for (dt_httpd_conn *c = s->conns; c; c = c->next)
    if (!uv_is_closing((uv_handle_t *)&c->tcp)) conn_shut(c);
}

size_t dt__httpd_conns(const dt_httpd *s) { return s->nconns; }

/* After the loop has run the listener's close: release h2o's context and
** configuration (what LeakSanitizer would otherwise report at exit). */
void dt__httpd_dispose(dt_httpd *s) {
  h2o_context_dispose(&s->ctx);
  h2o_config_dispose(&s->config);
}

/* A reply body in h2o's shared memory: counted in reply_bytes until the
** last request that sends it is done with it. */
struct dt_httpd_blob {
  dt_httpd *srv;
  size_t len;
  char data[];
};

static void blob_gone(void *p) {
  dt_httpd_blob *b = p;
  b->srv->reply_bytes -= b->len;
}

static dt_httpd_blob *blob_new(dt_httpd *s, h2o_mem_pool_t *pool, const char *text, size_t len) {
  dt_httpd_blob *b = h2o_mem_alloc_shared(pool, sizeof *b + len, blob_gone);
  b->srv = s;
  b->len = len;
  if (len) memcpy(b->data, text, len);
  s->reply_bytes += len;
  return b;
}

dt_httpd_blob *dt__httpd_blob(dt_httpd *s, const char *text, size_t len) { return blob_new(s, NULL, text, len); }

void dt__httpd_blob_release(dt_httpd_blob *b) {
  if (b) h2o_mem_release_shared(b);
}

static dt_httpd *server_of(h2o_req_t *req) { return H2O_STRUCT_FROM_MEMBER(dt_httpd, ctx, req->conn->ctx); }

static const char *reason_of(int status) {
  return status == 200   ? "OK"
         : status == 201 ? "Created"
         : status == 202 ? "Accepted"
         : status == 304 ? "Not Modified"
         : status == 400 ? "Bad Request"
         : status == 401 ? "Unauthorized"
         : status == 404 ? "Not Found"
         : status == 405 ? "Method Not Allowed"
         : status == 409 ? "Conflict"
         : status == 413 ? "Payload Too Large"
         : status == 429 ? "Too Many Requests"
         : status == 503 ? "Service Unavailable"
                         : "";
}

/* The reply: b's bytes, or only their length to a HEAD. */
static void send_blob(h2o_req_t *req, int status, const char *ctype, dt_httpd_blob *b, size_t len) {
  static h2o_generator_t generator = {NULL, NULL};
  req->res.status = status;
  req->res.reason = reason_of(status);
  req->res.content_length = len;
  h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, ctype, strlen(ctype));
  h2o_start_response(req, &generator);
  h2o_iovec_t v = h2o_iovec_init(b->data, b->len);
  if (dt__httpd_method(req, "HEAD"))
    h2o_send(req, NULL, 0, H2O_SEND_STATE_FINAL);
  else
    h2o_send(req, &v, 1, H2O_SEND_STATE_FINAL);
}

/* Replies up to this size always go, so health, metrics and errors still
** answer while large replies wait for their readers; an HTTP/1.1 connection
** holds one reply at a time, so these hold at most conns x SMALL_REPLY. */
#define SMALL_REPLY (64u << 10)

int dt__httpd_retry(h2o_req_t *req, int status, const char *msg) {
  h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT("1"));
  return dt__httpd_error(req, status, msg);
}

bool dt__httpd_busy(h2o_req_t *req, size_t len) {
  dt_httpd *s = server_of(req);
  if (!s->lim.replies || len <= SMALL_REPLY || s->reply_bytes + len <= s->lim.replies) return false;
  s->refused_replies++;
  dt__httpd_retry(req, 503, "busy: replies to other clients are still being read; retry");
  return true;
}

int dt__httpd_respond(h2o_req_t *req, int status, const char *ctype, const char *body, size_t len) {
  size_t keep = dt__httpd_method(req, "HEAD") ? 0 : len; /* a HEAD is told the length only */
  if (dt__httpd_busy(req, keep)) return 0;
  send_blob(req, status, ctype, blob_new(server_of(req), &req->pool, body, keep), len);
  return 0;
}

int dt__httpd_respond_blob(h2o_req_t *req, int status, const char *ctype, dt_httpd_blob *b) {
  h2o_mem_link_shared(&req->pool, b); /* the request's reference, dropped with its pool */
  send_blob(req, status, ctype, b, b->len);
  return 0;
}

int dt__httpd_error(h2o_req_t *req, int status, const char *msg) {
  dt_buf b = {0};
  dt__buf_puts(&b, "{\"error\":");
  dt__buf_json_str(&b, msg);
  dt__buf_puts(&b, "}\n");
  dt__httpd_respond(req, status, "application/json", b.p ? b.p : "{}", b.p ? b.len : 2);
  dt__free(b.p);
  return 0;
}

static size_t path_len(const h2o_req_t *req) {
  size_t len = req->path_normalized.len;
  const char *q = memchr(req->path_normalized.base, '?', len);
  return q ? (size_t)(q - req->path_normalized.base) : len;
}

bool dt__httpd_path(const h2o_req_t *req, const char *p) {
  size_t n = strlen(p);
  return path_len(req) == n && !memcmp(req->path_normalized.base, p, n);
}

/* On the raw path: what follows the prefix is still percent-encoded, so an
** encoded "/" inside a name is not taken for a separator. */
bool dt__httpd_prefix(const h2o_req_t *req, const char *prefix, const char **rest, size_t *len) {
  size_t n = strlen(prefix), l = req->path.len;
  const char *q = memchr(req->path.base, '?', l);
  if (q) l = (size_t)(q - req->path.base);
  if (l <= n || memcmp(req->path.base, prefix, n)) return false;
  *rest = req->path.base + n;
  *len = l - n;
  return true;
}

bool dt__httpd_method(const h2o_req_t *req, const char *m) {
  return h2o_memis(req->method.base, req->method.len, m, strlen(m));
}
