/*
** httpd.h: the HTTP server the daemon and the fake cloud share: h2o on the
** caller's libuv loop, one handler for every path (internal).
*/
#ifndef DT_HTTPD_H
#define DT_HTTPD_H

#include <h2o.h>
#include <stdbool.h>
#include <uv.h>

/*
** What one client may hold of the server. HTTP/1.1 only (one request at a
** time a connection), so request bodies in memory are at most conns x body;
** a reply is held until the client has read it, so replies are counted and
** one that would pass `replies` is answered 503 with Retry-After instead; a
** connection that moves no byte for stall_ms (a reader that stopped
** reading) is shut. 0 turns a limit off.
*/
typedef struct dt_httpd_limits {
  size_t body;       /* largest request body */
  size_t conns;      /* connections at once; past it a new one is closed at once */
  size_t replies;    /* bytes of replies not yet read by their clients */
  uint64_t stall_ms; /* a connection with no byte moved this long is shut */
} dt_httpd_limits;

typedef struct dt_httpd_conn dt_httpd_conn;

/* A reply body shared by every request that sends it (the plan, read by many
** clients at once, is held once): refcounted h2o memory, counted in
** `replies` while it lives. */
typedef struct dt_httpd_blob dt_httpd_blob;

typedef struct dt_httpd {
  h2o_globalconf_t config;
  h2o_context_t ctx;
  h2o_accept_ctx_t accept;
  uv_tcp_t listener;
  uv_timer_t sweep;
  char host[256];
  int port; /* the bound port (useful with port 0) */
  dt_httpd_limits lim;
  dt_httpd_conn *conns; /* open connections, newest first */
  size_t nconns, reply_bytes;
  uint64_t refused_conns, refused_replies, stalled; /* for /metrics: connections refused or given way, ... */
} dt_httpd;

typedef int (*dt_httpd_handler)(h2o_handler_t *self, h2o_req_t *req);

/* Listen on HOST:PORT; 0 or -1 with a message in err. */
int dt__httpd_start(dt_httpd *s, uv_loop_t *loop, const char *listen, const dt_httpd_limits *lim, dt_httpd_handler h,
                    char *err, size_t n);
void dt__httpd_close(dt_httpd *s);
void dt__httpd_dispose(dt_httpd *s);
size_t dt__httpd_conns(const dt_httpd *s); /* connections still open */ /* once the loop has closed the listener */

int dt__httpd_respond(h2o_req_t *req, int status, const char *ctype, const char *body, size_t len);
/* The text as a shared reply body; release it when the owner is done with
** it, requests that still send it keep their own reference. */
dt_httpd_blob *dt__httpd_blob(dt_httpd *s, const char *text, size_t len);
void dt__httpd_blob_release(dt_httpd_blob *b);
/* Whether a reply of len bytes would pass the limit on replies; if so, the
** request is answered 503 with Retry-After. dt__httpd_respond asks itself. */
bool dt__httpd_busy(h2o_req_t *req, size_t len);
int dt__httpd_respond_blob(h2o_req_t *req, int status, const char *ctype, dt_httpd_blob *b);
int dt__httpd_error(h2o_req_t *req, int status, const char *msg); /* {"error": msg} */
int dt__httpd_retry(h2o_req_t *req, int status, const char *msg); /* the same, with Retry-After: 1 */
bool dt__httpd_path(const h2o_req_t *req, const char *path);      /* the path, query aside */
bool dt__httpd_prefix(const h2o_req_t *req, const char *prefix, const char **rest, size_t *len);
bool dt__httpd_method(const h2o_req_t *req, const char *method);

#endif
