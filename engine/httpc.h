/*
** httpc.h: asynchronous HTTP requests over libcurl's multi interface, driven
** by a libuv loop (curl_multi_socket_action with uv_poll and uv_timer).
*/
#ifndef DT_HTTPC_H
#define DT_HTTPC_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

/* A reply: status is the HTTP status, 0 when the request failed (err says
** why); retry_after_ms the Retry-After it carried (seconds or an HTTP date),
** -1 none. */
typedef struct dt_httpc_reply {
  long status;
  const char *body;
  size_t len;
  const char *etag, *err;
  long retry_after_ms;
  bool dropped; /* never sent: the client is closing (dt__httpc_quiesce) */
} dt_httpc_reply;
typedef void (*dt_httpc_cb)(void *ud, const dt_httpc_reply *r);

/* At most max_connections requests run at once (0: 16); the others wait
** their turn in order, their timeouts counted from when they start. A 429
** or 503 carrying Retry-After holds every request of its method (reads,
** deletes, the others) not yet started until then (at most
** DT_HTTPC_HOLD_MAX_MS). A reply longer than max_reply bytes
** (0: 64 MiB) is cut off and fails. */
#define DT_HTTPC_HOLD_MAX_MS 300000L
int dt__httpc_init(uv_loop_t *loop, size_t max_connections, size_t max_reply);
/* body may be NULL; if_none_match may be NULL. Returns 0 or -1 (cb not called). */
int dt__httpc_request(const char *method, const char *url, const char *body, const char *if_none_match, long timeout_ms,
                      dt_httpc_cb cb, void *ud);
size_t dt__httpc_in_flight(void); /* running and waiting */
size_t dt__httpc_waiting(void);   /* waiting for a connection, or for a Retry-After to pass */
/* Start nothing more: requests waiting stay unsent, and dt__httpc_close
** hands them back to their callbacks as dropped. */
void dt__httpc_quiesce(void);
void dt__httpc_close(void);
/* s percent-encoded for a URL's path segment or query value (libcurl's
** escaping: all but ALPHA, DIGIT and -._~), and back; NULL when out of
** memory or, unescaping, when it holds an encoded NUL. dt__free the result. */
char *dt__httpc_escape(const char *s);
char *dt__httpc_unescape(const char *s, size_t n);

#endif
