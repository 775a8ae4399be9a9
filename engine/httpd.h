/*
** httpd.h: the HTTP server the daemon and the fake cloud share: h2o on the
** caller's libuv loop, one handler for every path (internal).
*/
#ifndef DT_HTTPD_H
#define DT_HTTPD_H

#include <h2o.h>
#include <stdbool.h>
#include <uv.h>

typedef struct dt_httpd {
  h2o_globalconf_t config;
  h2o_context_t ctx;
  h2o_accept_ctx_t accept;
  uv_tcp_t listener;
  char host[256];
  int port; /* the bound port (useful with port 0) */
} dt_httpd;

typedef int (*dt_httpd_handler)(h2o_handler_t *self, h2o_req_t *req);

/* Listen on HOST:PORT; 0 or -1 with a message in err. */
int dt__httpd_start(dt_httpd *s, uv_loop_t *loop, const char *listen, size_t body_limit, dt_httpd_handler h, char *err,
                    size_t n);
void dt__httpd_close(dt_httpd *s);
void dt__httpd_dispose(dt_httpd *s); /* once the loop has closed the listener */

int dt__httpd_respond(h2o_req_t *req, int status, const char *ctype, const char *body, size_t len);
int dt__httpd_error(h2o_req_t *req, int status, const char *msg); /* {"error": msg} */
bool dt__httpd_path(const h2o_req_t *req, const char *path);      /* the path, query aside */
bool dt__httpd_prefix(const h2o_req_t *req, const char *prefix, const char **rest, size_t *len);
bool dt__httpd_method(const h2o_req_t *req, const char *method);

#endif
