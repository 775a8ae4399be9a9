/*
** httpd.c: h2o (libuv flavour) set up for one handler; request helpers.
*/
#define _GNU_SOURCE
#include "httpd.h"

#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void on_accept(uv_stream_t *listener, int status) {
  dt_httpd *s = listener->data;
  if (status != 0) return;
  uv_tcp_t *conn = h2o_mem_alloc(sizeof *conn);
  uv_tcp_init(listener->loop, conn);
  if (uv_accept(listener, (uv_stream_t *)conn) != 0) {
    uv_close((uv_handle_t *)conn, (uv_close_cb)free);
    return;
  }
  h2o_socket_t *sock = h2o_uv_socket_create((uv_stream_t *)conn, (uv_close_cb)free);
  h2o_accept(&s->accept, sock);
}

int dt__httpd_start(dt_httpd *s, uv_loop_t *loop, const char *listen, size_t body_limit, dt_httpd_handler h, char *err,
                    size_t n) {
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
  h2o_config_init(&s->config);
  s->config.max_request_entity_size = body_limit;
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
  return 0;
}

static void on_close_noop(uv_handle_t *h) { (void)h; }

void dt__httpd_close(dt_httpd *s) { uv_close((uv_handle_t *)&s->listener, on_close_noop); }

/* After the loop has run the listener's close: release h2o's context and
** configuration (what LeakSanitizer would otherwise report at exit). */
void dt__httpd_dispose(dt_httpd *s) {
  h2o_context_dispose(&s->ctx);
  h2o_config_dispose(&s->config);
}

int dt__httpd_respond(h2o_req_t *req, int status, const char *ctype, const char *body, size_t len) {
  const char *reason = status == 200   ? "OK"
                       : status == 201 ? "Created"
                       : status == 304 ? "Not Modified"
                       : status == 400 ? "Bad Request"
                       : status == 401 ? "Unauthorized"
                       : status == 404 ? "Not Found"
                       : status == 409 ? "Conflict"
                       : status == 413 ? "Payload Too Large"
                       : status == 503 ? "Service Unavailable"
                                       : "";
  req->res.status = status;
  req->res.reason = reason;
  h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, ctype, strlen(ctype));
  h2o_send_inline(req, body, len);
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
