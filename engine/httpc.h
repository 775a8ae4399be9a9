/*
** httpc.h: asynchronous HTTP requests over libcurl's multi interface, driven
** by a libuv loop (curl_multi_socket_action with uv_poll and uv_timer).
*/
#ifndef DT_HTTPC_H
#define DT_HTTPC_H

#include <stddef.h>
#include <uv.h>

/* status is the HTTP status, 0 when the request failed (err says why). */
typedef void (*dt_httpc_cb)(void *ud, long status, const char *body, size_t len, const char *etag, const char *err);

int dt__httpc_init(uv_loop_t *loop);
/* body may be NULL; if_none_match may be NULL. Returns 0 or -1 (cb not called). */
int dt__httpc_request(const char *method, const char *url, const char *body, const char *if_none_match, long timeout_ms,
                      dt_httpc_cb cb, void *ud);
size_t dt__httpc_in_flight(void);
void dt__httpc_close(void);

#endif
