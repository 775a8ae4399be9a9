/*
** controller.c: the reconcile loop. It owns the cluster state (objects,
** claims, instances, unavailable marks), runs provisioning rounds and
** disruption passes, carries their commands out through the provider, and
** takes its time from the clock it is given: libuv's in `dovetail serve`
** (serve.c puts the HTTP API, options and signals in front of it), a virtual
** one in `dovetail simulate` (simulate.c). It is the only place that
** decides; every decision goes into the decision log with its reason.
**
** Objects applied through the API are kept as JSON text keyed by
** kind/namespace/name; a round parses them into a dt_manifests, plans, and
** launches the new NodeClaims. Launched claims go back into the store (with
** the pods nominated to them), so the next round sees them as in-flight
** capacity and a disruption pass counts the pods on them. State is a
** snapshot plus an append-only journal, one fsync per batch, read back at
** start (see "state file" below).
**
** A round: plan, nominate bindings to in-flight claims, launch new claims
** (written ahead), requeue what is left pending with backoff. Every
** --disrupt-interval: health remediation, then a disruption pass whose
** replacements launch before the nodes they replace are deleted.
**
** Providers: `sim`, an in-process cloud (launch latency zero, capacity
** unbounded unless --sim-ice marks offerings as out of capacity); `http`,
** the REST contract over libcurl; and the simulator's cloud (ctl.h).
*/
#define _GNU_SOURCE
#include "daemon.h"
#include "httpc.h"
#include "model.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

dtd dt__daemon;
static const char *interruption_action(const char *kind, const instance *in, const char *state, const char *def);

const double dt__plan_buckets[8] = {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5};
const double dt__lag_buckets[8] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5};

/* ------------------------------------------------------------ the clock */

/*
** The controller takes its time from a clock it is given: libuv's in
** `dovetail serve`, a virtual one in `dovetail simulate`, which drives the
** same code through dt__ctl_run_until. Every timer the controller arms goes
** through tm_*: on the virtual clock a timer is an entry due at a virtual
** time, and nothing waits in real time.
*/
int64_t wall(void) { return D.virt ? D.vnow / 1000 : (int64_t)time(NULL); }

static void tm_init(uv_timer_t *t) {
  if (!D.virt) uv_timer_init(D.loop, t);
}

static int vt_find(const uv_timer_t *t) {
  for (size_t i = 0; i < D.vt.n; i++)
    if (D.vt.v[i].t == t) return (int)i;
  return -1;
}

void tm_stop(uv_timer_t *t) {
  if (!D.virt) {
    uv_timer_stop(t);
    return;
  }
  int at = vt_find(t);
  if (at >= 0) D.vt.v[at] = D.vt.v[--D.vt.n];
}

void tm_start(uv_timer_t *t, uv_timer_cb cb, uint64_t ms, uint64_t repeat) {
  if (!D.virt) {
    uv_timer_start(t, cb, ms, repeat);
    return;
  }
  tm_stop(t);
  vtimer v = {t, cb, D.vnow + (int64_t)ms, ++D.vseq, repeat};
  if (dt__vec_push(&D.vt, v)) logf_("error", "clock", "out of memory arming a timer");
}

static bool tm_active(uv_timer_t *t) { return D.virt ? vt_find(t) >= 0 : uv_is_active((uv_handle_t *)t) != 0; }

static void tm_close(uv_timer_t *t, uv_close_cb cb) {
  if (!D.virt) {
    uv_close((uv_handle_t *)t, cb);
    return;
  }
  tm_stop(t);
  cb((uv_handle_t *)t);
}

int64_t dt__ctl_next_due(void) {
  int64_t best = INT64_MAX;
  for (size_t i = 0; i < D.vt.n; i++)
    if (D.vt.v[i].due < best) best = D.vt.v[i].due;
  return best;
}

int64_t dt__ctl_now_ms(void) { return D.vnow; }

/* Fire every virtual timer due at or before t (earliest first, then in
** arming order), then stand at t. */
void dt__ctl_run_until(int64_t t) {
  for (;;) {
    int at = -1;
    for (size_t i = 0; i < D.vt.n; i++) {
      const vtimer *v = &D.vt.v[i];
      if (v->due <= t && (at < 0 || v->due < D.vt.v[at].due || (v->due == D.vt.v[at].due && v->seq < D.vt.v[at].seq)))
        at = (int)i;
    }
    if (at < 0) break;
    vtimer v = D.vt.v[at];
    if (v.due > D.vnow) D.vnow = v.due;
    if (v.repeat) {
      D.vt.v[at].due += (int64_t)v.repeat;
      D.vt.v[at].seq = ++D.vseq;
    } else {
      D.vt.v[at] = D.vt.v[--D.vt.n];
    }
    v.cb(v.t);
  }
  if (t > D.vnow) D.vnow = t;
}


/* ------------------------------------------------------------ logging */

void logf_(const char *level, const char *event, const char *fmt, ...) {
  if (D.quiet) return;
  char msg[2000], ts[40];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  dt__fmt_time(wall(), ts, sizeof ts);
  if (D.log_format && !strcmp(D.log_format, "logfmt")) {
    fprintf(stderr, "time=%s level=%s event=%s msg=\"%s\"\n", ts, level, event, msg);
  } else {
    dt_buf b = {0};
    dt__buf_printf(&b, "{\"time\":\"%s\",\"level\":\"%s\",\"event\":\"%s\",\"msg\":", ts, level, event);
    dt__buf_json_str(&b, msg);
    dt__buf_puts(&b, "}\n");
    if (b.p) fputs(b.p, stderr);
    dt__free(b.p);
  }
  fflush(stderr);
}

static void log_decision(const char *kind, const char *subject, const char *reason) {
  cJSON *d = cJSON_CreateObject();
  char ts[40];
  dt__fmt_time(wall(), ts, sizeof ts);
  cJSON_AddStringToObject(d, "time", ts);
  cJSON_AddStringToObject(d, "kind", kind);
  cJSON_AddStringToObject(d, "subject", subject);
  cJSON_AddStringToObject(d, "reason", reason);
  cJSON_AddItemToArray(D.decisions, d);
  while (cJSON_GetArraySize(D.decisions) > MAX_DECISIONS) cJSON_DeleteItemFromArray(D.decisions, 0);
  snprintf(D.last_decision, sizeof D.last_decision, "%s %s: %s", kind, subject, reason);
  if (D.obs && D.obs->decision) D.obs->decision(D.obs->ud, kind, subject, reason);
  logf_("info", kind, "%s: %s", subject, reason);
}

/* ------------------------------------------------------------ the store */

static void journal_put(const char *key, const char *json);
static void journal_del(const char *op, const char *field, const char *v);

/*
** The object store: objects by key in a vector, found through an interned
** key -> slot map, so applying 20,000 objects one by one is linear. Keys of
** deleted objects stay interned (slot -1) until dead keys outnumber live
** ones; then the map is rebuilt.
*/
static void store_rehash(void) {
  dt__symtab_free(&D.keys);
  D.slot.n = 0;
  for (size_t i = 0; i < D.objs.n; i++) {
    dt_sym s = dt__sym(&D.keys, D.objs.v[i].key);
    while (!D.keys.oom && D.slot.n <= s)
      if (dt__vec_push(&D.slot, (int32_t)-1)) D.keys.oom = 1;
    if (!D.keys.oom) D.slot.v[s] = (int32_t)i;
  }
}

static int obj_find(const char *key) {
  dt_sym s = dt__sym_find(&D.keys, key);
  return s && s < D.slot.n ? D.slot.v[s] : -1;
}

int obj_put_text(const char *key, char *json);

int obj_put(const char *key, const cJSON *o) {
  char *json = cJSON_PrintUnformatted(o);
  return json ? obj_put_text(key, json) : DT_ENOMEM;
}

/* Store json (compact JSON from cJSON, which the store now owns) under key. */
int obj_put_text(const char *key, char *json) {
  journal_put(key, json);
  int at = obj_find(key);
  if (at >= 0) {
    free(D.objs.v[at].json);
    D.objs.v[at].json = json;
    return 0;
  }
  obj ob = {dt__strdup(key), json};
  dt_sym s = dt__sym(&D.keys, key);
  while (!D.keys.oom && D.slot.n <= s)
    if (dt__vec_push(&D.slot, (int32_t)-1)) D.keys.oom = 1;
  if (!ob.key || D.keys.oom || dt__vec_push(&D.objs, ob)) {
    dt__free(ob.key);
    free(json);
    return DT_ENOMEM;
  }
  D.slot.v[s] = (int32_t)(D.objs.n - 1);
  D.sorted = false;
  return 0;
}

static bool obj_del(const char *key) {
  int at = obj_find(key);
  if (at < 0) return false;
  journal_del("del", "key", key);
  D.slot.v[dt__sym_find(&D.keys, key)] = -1;
  dt__free(D.objs.v[at].key);
  free(D.objs.v[at].json);
  D.objs.v[at] = D.objs.v[--D.objs.n];
  if ((size_t)at < D.objs.n) D.slot.v[dt__sym_find(&D.keys, D.objs.v[at].key)] = at;
  D.sorted = false;
  if (D.keys.n > 1024 && D.keys.n > 2 * D.objs.n) store_rehash();
  return true;
}


static int key_cmp(const void *a, const void *b) { return strcmp(((const obj *)a)->key, ((const obj *)b)->key); }

/* All objects as one manifest set (in key order, so rounds are deterministic). */
static dt_manifests *manifests(dt_error *err) {
  if (D.objs.n && !D.sorted) {
    qsort(D.objs.v, D.objs.n, sizeof *D.objs.v, key_cmp);
    store_rehash();
    D.sorted = true;
  }
  dt_manifests *m = dt_manifests_new();
  if (!m) {
    snprintf(err->msg, sizeof err->msg, "out of memory");
    return NULL;
  }
  for (size_t i = 0; i < D.objs.n; i++)
    if (dt_manifests_add_buffer(m, D.objs.v[i].key, D.objs.v[i].json, strlen(D.objs.v[i].json), err)) {
      dt_manifests_free(m);
      return NULL;
    }
  return m;
}

/* ------------------------------------------------------------ state file */

/*
** State is a snapshot (STATE: every object and instance, written whole:
** write, fsync, rename) and a journal beside it (STATE.journal: one JSON
** line per change since the snapshot, appended and fsynced once per batch).
** A round costs one small append and one fsync, however many claims it
** launches; the snapshot is rewritten (compaction) when the journal has
** grown past the snapshot's size, and at a clean stop. At start the
** snapshot is read, then the journal replayed: a last line cut short by a
** crash is dropped with a note; a damaged line before it stops the start,
** unless --recover, which keeps what came before it and says what was lost.
*/
static void inst_json(dt_buf *b, const instance *in) {
  dt__buf_puts(b, "{\"id\":");
  dt__buf_json_str(b, in->id);
  dt__buf_puts(b, ",\"claim\":");
  dt__buf_json_str(b, in->claim);
  dt__buf_puts(b, ",\"instanceType\":");
  dt__buf_json_str(b, in->type);
  dt__buf_puts(b, ",\"zone\":");
  dt__buf_json_str(b, in->zone);
  dt__buf_puts(b, ",\"capacityType\":");
  dt__buf_json_str(b, in->ct);
  dt__buf_puts(b, ",\"nodePool\":");
  dt__buf_json_str(b, in->pool);
  dt__buf_printf(b, ",\"launched\":%lld}", (long long)in->launched);
}

/* Record a change for the journal (nothing while replaying or without --state). */
static void journal_put(const char *key, const char *json) {
  if (!D.state_path || D.replaying) return;
  dt__buf_puts(&D.jbuf, "{\"op\":\"put\",\"key\":");
  dt__buf_json_str(&D.jbuf, key);
  dt__buf_puts(&D.jbuf, ",\"obj\":");
  dt__buf_puts(&D.jbuf, json);
  dt__buf_puts(&D.jbuf, "}\n");
}

static void journal_del(const char *op, const char *field, const char *v) {
  if (!D.state_path || D.replaying) return;
  dt__buf_printf(&D.jbuf, "{\"op\":\"%s\",\"%s\":", op, field);
  dt__buf_json_str(&D.jbuf, v);
  dt__buf_puts(&D.jbuf, "}\n");
}

static void journal_inst(const instance *in) {
  if (!D.state_path || D.replaying) return;
  dt__buf_puts(&D.jbuf, "{\"op\":\"inst\",\"inst\":");
  inst_json(&D.jbuf, in);
  dt__buf_puts(&D.jbuf, "}\n");
}

int save_state(void);

/* Append the changes recorded since the last flush, then fsync: the one
** write a batch costs. */
static int journal_flush(void) {
  if (!D.state_path) return 0;
  tm_stop(&D.state_timer);
  if (!D.jbuf.len) return 0;
  if (D.jbuf.oom || D.jsize + D.jbuf.len > D.snapshot_size + (1u << 20)) return save_state(); /* compaction */
  char path[4200];
  snprintf(path, sizeof path, "%s.journal", D.state_path);
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
  bool ok = fd >= 0 && write(fd, D.jbuf.p, D.jbuf.len) == (ssize_t)D.jbuf.len && fsync(fd) == 0;
  if (fd >= 0) ok &= close(fd) == 0;
  if (!ok) {
    logf_("error", "state", "cannot append to %s: %s", path, strerror(errno));
    return DT_EIO;
  }
  D.jsize += D.jbuf.len;
  D.jbuf.len = 0;
  return 0;
}

/* The snapshot: everything, written whole; the journal starts again empty. */
int save_state(void) {
  if (!D.state_path) return 0;
  tm_stop(&D.state_timer);
  /* objects are kept as JSON text: the file is their concatenation */
  dt_buf b = {0};
  dt__buf_puts(&b, "{\"objects\":[");
  for (size_t i = 0; i < D.objs.n; i++) {
    if (i) dt__buf_putc(&b, ',');
    dt__buf_puts(&b, D.objs.v[i].json);
  }
  dt__buf_puts(&b, "],\"instances\":[");
  for (size_t i = 0; i < D.insts.n; i++) {
    if (i) dt__buf_putc(&b, ',');
    inst_json(&b, &D.insts.v[i]);
  }
  dt__buf_puts(&b, "]}\n");
  if (b.oom) {
    dt__free(b.p);
    return DT_ENOMEM;
  }
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", D.state_path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  bool ok = fd >= 0 && write(fd, b.p, b.len) == (ssize_t)b.len && fsync(fd) == 0;
  if (fd >= 0) ok &= close(fd) == 0;
  ok = ok && rename(tmp, D.state_path) == 0;
  size_t size = b.len;
  dt__free(b.p);
  if (!ok) {
    logf_("error", "state", "cannot write %s: %s", D.state_path, strerror(errno));
    unlink(tmp);
    return DT_EIO;
  }
  /* the snapshot holds every change: the journal starts over */
  snprintf(tmp, sizeof tmp, "%s.journal", D.state_path);
  if (truncate(tmp, 0) && errno != ENOENT) logf_("error", "state", "cannot truncate %s: %s", tmp, strerror(errno));
  D.jbuf.len = 0;
  D.jbuf.oom = 0;
  D.jsize = 0;
  D.snapshot_size = size;
  D.state_valid = true;
  return 0;
}

static void on_state_timer(uv_timer_t *t) {
  (void)t;
  journal_flush();
}

/* Applied objects are written within 50 ms, many applies in one write;
** launches and instance changes are written at once (save_state). */
void state_dirty(void) {
  if (D.state_path && !tm_active(&D.state_timer))
    tm_start(&D.state_timer, on_state_timer, 50, 0);
}

static void inst_free(instance *in) {
  dt__free(in->id);
  dt__free(in->claim);
  dt__free(in->type);
  dt__free(in->zone);
  dt__free(in->ct);
  dt__free(in->pool);
}

static int add_instance(const char *id, const char *claim, const char *type, const char *zone, const char *ct,
                        const char *pool, double price, int64_t launched) {
  for (size_t i = 0; id && i < D.insts.n; i++)
    if (!strcmp(D.insts.v[i].id, id)) return 0; /* adopted by a poll while its launch reply was on the way */
  /* A provider may leave fields out (GET /instances without nodePool): an
  ** instance is only ever adopted with an id and a claim. */
  if (!id || !claim) return DT_EINVAL;
  instance in = {dt__strdup(id),         dt__strdup(claim),    dt__strdup(type ? type : ""),
                 dt__strdup(zone ? zone : ""), dt__strdup(ct ? ct : ""), dt__strdup(pool ? pool : ""),
                 price,                  launched, 0, true};
  if (!in.id || !in.claim || !in.type || !in.zone || !in.ct || !in.pool || dt__vec_push(&D.insts, in)) {
    inst_free(&in);
    return DT_ENOMEM;
  }
  journal_inst(&D.insts.v[D.insts.n - 1]);
  if (D.obs && D.obs->instance) D.obs->instance(D.obs->ud, true, in.id, in.claim, in.type, in.zone, in.ct, in.pool);
  return 0;
}

/* Forget instance i (swap-remove: indices after it move). */
static void inst_remove(size_t i) {
  journal_del("uninst", "id", D.insts.v[i].id);
  const instance *in = &D.insts.v[i];
  if (D.obs && D.obs->instance) D.obs->instance(D.obs->ud, false, in->id, in->claim, in->type, in->zone, in->ct, in->pool);
  inst_free(&D.insts.v[i]);
  D.insts.v[i] = D.insts.v[--D.insts.n];
}

/* Apply one journal record; -1 when it is not one. */
static int replay_one(const cJSON *r) {
  const char *op = dt__jstr(r, "op");
  char key[KEY_MAX];
  const char *why;
  if (!op) return -1;
  if (!strcmp(op, "put")) {
    const cJSON *o = jget(r, "obj");
    if (!cJSON_IsObject(o) || obj_key(o, key, sizeof key, &why)) return -1;
    return obj_put(key, o) == DT_ENOMEM ? -1 : 0;
  }
  if (!strcmp(op, "del") && dt__jstr(r, "key")) {
    obj_del(dt__jstr(r, "key"));
    return 0;
  }
  const cJSON *in = jget(r, "inst");
  if (!strcmp(op, "inst") && dt__jstr(in, "id") && dt__jstr(in, "claim"))
    return add_instance(dt__jstr(in, "id"), dt__jstr(in, "claim"), dt__jstr(in, "instanceType"), dt__jstr(in, "zone"),
                        dt__jstr(in, "capacityType"), dt__jstr(in, "nodePool"), 0,
                        dt__to_i64(cJSON_GetNumberValue(jget(in, "launched")))) == DT_ENOMEM
               ? -1
               : 0;
  if (!strcmp(op, "uninst") && dt__jstr(r, "id")) {
    for (size_t i = 0; i < D.insts.n; i++)
      if (!strcmp(D.insts.v[i].id, dt__jstr(r, "id"))) {
        inst_remove(i);
        break;
      }
    return 0;
  }
  return -1;
}

/* Replay STATE.journal over the snapshot just read. */
static int replay(dt_error *err) {
  char path[4200];
  snprintf(path, sizeof path, "%s.journal", D.state_path);
  if (access(path, F_OK)) return 0;
  char *text;
  size_t len;
  if (dt__read_file(path, &text, &len, err)) return DT_EIO;
  D.replaying = true;
  size_t line = 0, applied = 0;
  int rc = 0;
  for (char *s = text; s < text + len && !rc;) {
    char *nl = memchr(s, '\n', (size_t)(text + len - s));
    line++;
    if (!nl) { /* the last record, cut short by a crash: never acknowledged */
      logf_("warn", "state", "%s:%zu: an incomplete last record (a crash while writing it) is dropped", path, line);
      break;
    }
    cJSON *r = cJSON_ParseWithLength(s, (size_t)(nl - s));
    bool bad = !r || replay_one(r);
    cJSON_Delete(r);
    if (bad && !D.recover) {
      rc = dt__err(err, DT_EINVAL, "%s:%zu: a damaged record; nothing was changed. Start with --recover to keep the "
                   "%zu records before it and drop the rest", path, line, applied);
    } else if (bad) {
      size_t rest = 1;
      for (char *q = nl + 1; q < text + len; q++) rest += *q == '\n';
      logf_("warn", "recover", "%s:%zu: a damaged record; kept the %zu records before it, dropped it and the %zu after",
            path, line, applied, rest - 1);
      break;
    }
    applied++;
    s = nl + 1;
  }
  D.replaying = false;
  dt__free(text);
  return rc;
}

/* Read the state back. A file whose shape is wrong stops the start: read as
** empty, it would make every running instance look like an orphan. The
** sim provider's instance list is the state's own, so reconciling adopts
** every instance whose claim is in the store and forgets the rest. */
int load_state(dt_error *err) {
  if (!D.state_path || access(D.state_path, F_OK)) return 0;
  char *text;
  size_t len;
  if (dt__read_file(D.state_path, &text, &len, err)) return DT_EIO;
  cJSON *root = cJSON_ParseWithLength(text, len);
  dt__free(text);
  const char *path = D.state_path;
  if (!root) return dt__err(err, DT_EINVAL, "%s: not a dovetail state file (invalid JSON)", path);
  int rc = dt__state_check(path, root, err);
  if (rc) {
    cJSON_Delete(root);
    return rc;
  }
  const cJSON *objs = jget(root, "objects"), *insts = jget(root, "instances"), *o;
  cJSON_ArrayForEach(o, objs) {
    char key[KEY_MAX];
    const char *why;
    if (!obj_key(o, key, sizeof key, &why)) obj_put(key, o);
  }
  cJSON_ArrayForEach(o, insts) {
    const char *claim = dt__jstr(o, "claim");
    char key[KEY_MAX + 16];
    snprintf(key, sizeof key, "NodeClaim//%s", claim);
    if (obj_find(key) < 0) continue; /* its claim is gone: forget it */
    add_instance(dt__jstr(o, "id"), claim, dt__jstr(o, "instanceType"), dt__jstr(o, "zone"), dt__jstr(o, "capacityType"),
                 dt__jstr(o, "nodePool"), cJSON_GetNumberValue(jget(o, "price")),
                 dt__to_i64(cJSON_GetNumberValue(jget(o, "launched"))));
  }
  cJSON_Delete(root);
  D.state_valid = true;
  rc = replay(err);
  if (rc) return rc;
  for (size_t i = 0; i < D.insts.n;) { /* instances whose claim is gone are forgotten */
    char key[KEY_MAX + 16];
    snprintf(key, sizeof key, "NodeClaim//%s", D.insts.v[i].claim);
    if (obj_find(key) < 0)
      inst_remove(i);
    else
      i++;
  }
  logf_("info", "state", "read %s: %zu objects, %zu instances", D.state_path, D.objs.n, D.insts.n);
  return 0;
}

void arm_batch(void);

/* ------------------------------------------------------------ provider */

/* Mark an offering unavailable for the TTL (an UnavailableOffering object). */
static void mark_unavailable(const char *ct, const char *type, const char *zone, const char *why, int64_t ttl) {
  char ts[40], name[600], key[800];
  dt__fmt_time(wall() + ttl, ts, sizeof ts);
  snprintf(name, sizeof name, "%s.%s.%s", ct, type, zone);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "apiVersion", "dovetail.dev/v1alpha1");
  cJSON_AddStringToObject(o, "kind", "UnavailableOffering");
  cJSON_AddObjectToObject(o, "metadata");
  cJSON_AddStringToObject(jget(o, "metadata"), "name", name);
  cJSON *sp = cJSON_AddObjectToObject(o, "spec");
  cJSON_AddStringToObject(sp, "capacityType", ct);
  cJSON_AddStringToObject(sp, "instanceType", type);
  cJSON_AddStringToObject(sp, "zone", zone);
  cJSON_AddStringToObject(sp, "expiresAt", ts);
  snprintf(key, sizeof key, "UnavailableOffering//%s", name);
  obj_put(key, o);
  cJSON_Delete(o);
  char subj[700];
  snprintf(subj, sizeof subj, "%s/%s/%s", type, zone, ct);
  char reason[700];
  snprintf(reason, sizeof reason, "%s; unavailable until %s", why, ts);
  log_decision("unavailable", subj, reason);
}

/* Drop marks whose time has come. */
static void expire_marks(void) {
  int64_t now = wall();
  for (size_t i = 0; i < D.objs.n;) {
    if (strncmp(D.objs.v[i].key, "UnavailableOffering/", 20)) {
      i++;
      continue;
    }
    cJSON *o = cJSON_Parse(D.objs.v[i].json);
    const char *e = dt__jstr(jget(o, "spec"),
                                                                          "expiresAt");
    int64_t t = 0;
    bool gone = e && !dt_time_parse(e, &t, NULL) && t <= now;
    cJSON_Delete(o);
    if (gone)
      obj_del(D.objs.v[i].key);
    else
      i++;
  }
}

/* The sim cloud: launches succeed unless the offering is listed by --sim-ice. */
static int sim_launch(const char *type, const char *zone, const char *ct, char *id, size_t n) {
  char k[600];
  snprintf(k, sizeof k, "%s/%s/%s", type, zone, ct);
  for (size_t i = 0; i < D.sim_ice.n; i++)
    if (!strcmp(D.sim_ice.v[i], k)) return -1;
  snprintf(id, n, "i-%016llx", (unsigned long long)dt__hash64(k, strlen(k)) ^ (unsigned long long)++D.seq);
  return 0;
}

/* ------------------------------------------------------------ claims */

/* The stored NodeClaim named claim, parsed; NULL when there is none. */
static cJSON *claim_get(const char *claim) {
  char key[KEY_MAX + 16];
  snprintf(key, sizeof key, "NodeClaim//%s", claim);
  int at = obj_find(key);
  return at < 0 ? NULL : cJSON_Parse(D.objs.v[at].json);
}

/* Store o as the NodeClaim named claim, and free it. */
static void claim_put(const char *claim, cJSON *o) {
  char key[KEY_MAX + 16];
  snprintf(key, sizeof key, "NodeClaim//%s", claim);
  if (o) obj_put(key, o);
  cJSON_Delete(o);
}

/* o.field.key = v, creating the field's object. */
static void put_in(cJSON *o, const char *field, const char *key, const char *v) {
  cJSON *f = jget(o, field);
  if (!cJSON_IsObject(f)) {
    cJSON_DeleteItemFromObjectCaseSensitive(o, field);
    f = cJSON_AddObjectToObject(o, field);
  }
  cJSON_DeleteItemFromObjectCaseSensitive(f, key);
  cJSON_AddStringToObject(f, key, v);
}

static void set_annotation(cJSON *o, const char *k, const char *v) {
  cJSON *md = jget(o, "metadata");
  if (md) put_in(md, "annotations", k, v);
}

/* The time of the claim's last pod event, which consolidateAfter counts from. */
static void pod_event(cJSON *o) {
  char ts[40];
  dt__fmt_time(wall(), ts, sizeof ts);
  put_in(o, "status", "lastPodEventTime", ts);
}

typedef struct binding {
  const char *node;
  char *pod;
} binding;

static int binding_cmp(const void *a, const void *b) {
  const binding *x = a, *y = b;
  int c = strcmp(x->node, y->node);
  return c ? c : strcmp(x->pod, y->pod);
}

/*
** Pods a round binds to in-flight claims are nominated to them, as
** Karpenter nominates pods to the NodeClaims that will hold them: the pods
** go into the claim's dovetail.dev/pods, so the next round does not plan
** them again and a disruption pass counts them on the claim.
*/
static void claim_running(const char *claim);

static void nominate(const dt_plan *p) {
  size_t n = dt_plan_binding_count(p);
  binding *bs = dt__calloc(n ? n : 1, sizeof *bs);
  if (!bs) return;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    char pod[600];
    const char *node;
    if (dt_plan_binding(p, i, pod, sizeof pod, &node)) continue;
    char key[KEY_MAX + 16];
    snprintf(key, sizeof key, "NodeClaim//%s", node);
    if (obj_find(key) < 0 || !(bs[k].pod = dt__strdup(pod))) continue; /* a Node: the kube-scheduler binds */
    bs[k++].node = node;
  }
  qsort(bs, k, sizeof *bs, binding_cmp);
  for (size_t i = 0; i < k;) {
    size_t j = i;
    cJSON *o = claim_get(bs[i].node);
    const char *cur = dt__jstr(jget(jget(o, "metadata"), "annotations"), DT_A_PODS);
    dt_buf b = {0};
    dt__buf_puts(&b, cur ? cur : "");
    for (; j < k && !strcmp(bs[j].node, bs[i].node); j++) {
      if (b.len) dt__buf_putc(&b, ',');
      dt__buf_puts(&b, bs[j].pod);
    }
    if (o && !b.oom) {
      set_annotation(o, DT_A_PODS, b.p ? b.p : "");
      pod_event(o);
      char why[200];
      snprintf(why, sizeof why, "%zu pending pods nominated to it", j - i);
      log_decision("nominate", bs[i].node, why);
      claim_put(bs[i].node, o);
      claim_running(bs[i].node);
    } else {
      cJSON_Delete(o);
    }
    dt__free(b.p);
    i = j;
  }
  for (size_t i = 0; i < k; i++) dt__free(bs[i].pod);
  dt__free(bs);
}

static void launch_claim(const char *claim, const char *type, const char *zone, const char *ct, const char *pool);
static void delete_instance(const char *claim, const char *why);

/*
** Replacements are launched before the nodes they replace are deleted
** (Karpenter's order): the old claims are tainted karpenter.sh/disrupted
** (no new pods, no second command) while the replacement launches; once it
** has launched and initialized, they are deleted; if it fails, they are
** untainted and stay.
*/

static void taint_disrupted(const char *claim, bool on) {
  cJSON *o = claim_get(claim);
  if (!o) return;
  cJSON *spec = jget(o, "spec");
  if (!spec) spec = cJSON_AddObjectToObject(o, "spec");
  cJSON *ts = jget(spec, "taints");
  if (!cJSON_IsArray(ts)) {
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "taints");
    ts = cJSON_AddArrayToObject(spec, "taints");
  }
  int at = -1, i = 0;
  const cJSON *t;
  cJSON_ArrayForEach(t, ts) {
    if (dt__jstr(t, "key") && !strcmp(dt__jstr(t, "key"), "karpenter.sh/disrupted")) at = i;
    i++;
  }
  if (on && at < 0) {
    cJSON *nt = cJSON_CreateObject();
    cJSON_AddStringToObject(nt, "key", "karpenter.sh/disrupted");
    cJSON_AddStringToObject(nt, "effect", "NoSchedule");
    cJSON_AddItemToArray(ts, nt);
  } else if (!on && at >= 0) {
    cJSON_DeleteItemFromArray(ts, at);
  }
  claim_put(claim, o);
}

static bool being_replaced(const char *claim) {
  for (size_t i = 0; i < D.replacing.n; i++) {
    const char *s = D.replacing.v[i].olds;
    size_t n = strlen(claim);
    for (const char *q = strstr(s, claim); q; q = strstr(q + 1, claim))
      if ((q == s || q[-1] == ',') && (q[n] == 0 || q[n] == ',')) return true;
  }
  return false;
}

/* The replacement claim launched (ok) or failed: carry out or abort. */
static void replacement_done(const char *claim, bool ok) {
  int at = -1;
  for (size_t i = 0; i < D.replacing.n && at < 0; i++)
    if (!strcmp(D.replacing.v[i].claim, claim)) at = (int)i;
  if (at < 0) return;
  replacing *r = &D.replacing.v[at];
  uint64_t group = r->group;
  size_t waiting = 0, members = 0;
  r->launched = ok;
  for (size_t i = 0; i < D.replacing.n; i++) {
    waiting += D.replacing.v[i].group == group && !D.replacing.v[i].launched;
    members += D.replacing.v[i].group == group;
  }
  if (ok && waiting) return; /* the command's other replacements are still on their way */
  /* every replacement of the command has launched, or one failed: the old
  ** claims go, or stay untainted (replacements already up stay as capacity) */
  char *olds = r->olds, *why = r->why;
  r->olds = r->why = NULL;
  for (char *s = olds, *e; s && *s; s = e ? e + 1 : NULL) {
    e = strchr(s, ',');
    if (e) *e = 0;
    char subj[KEY_MAX], reason[900];
    snprintf(subj, sizeof subj, "NodeClaim %s", s);
    if (ok) {
      snprintf(reason, sizeof reason, "%s: replaced by NodeClaim %s%s, which has launched; deleted", why, claim,
               members > 1 ? " and the command's other replacements" : "");
      delete_instance(s, reason);
    } else {
      snprintf(reason, sizeof reason, "%s: replacement NodeClaim %s failed to launch; the node stays", why, claim);
      log_decision("disrupt-aborted", subj, reason);
      taint_disrupted(s, false);
    }
  }
  dt__free(olds);
  dt__free(why);
  for (size_t i = 0; i < D.replacing.n;) {
    replacing *q = &D.replacing.v[i];
    if (q->group != group) {
      i++;
      continue;
    }
    dt__free(q->claim), dt__free(q->olds), dt__free(q->why);
    D.replacing.v[i] = D.replacing.v[--D.replacing.n];
  }
  state_dirty();
  arm_batch();
}

/* Launch a claim named name of this offering, carrying pods, to replace
** the claims in olds (comma-separated) for why. */
static void replace_with(const char *name, const char *pool, const char *type, const char *zone, const char *ct,
                         const char *pods, const char *olds, const char *why, uint64_t group) {
  if (!pool || !type || !zone || !ct) return; /* a command without its offering: nothing to launch */
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "apiVersion", "karpenter.sh/v1");
  cJSON_AddStringToObject(o, "kind", "NodeClaim");
  cJSON *md = cJSON_AddObjectToObject(o, "metadata");
  cJSON_AddStringToObject(md, "name", name);
  cJSON *lab = cJSON_AddObjectToObject(md, "labels");
  cJSON_AddStringToObject(lab, "karpenter.sh/nodepool", pool);
  cJSON_AddStringToObject(lab, "node.kubernetes.io/instance-type", type);
  cJSON_AddStringToObject(lab, "topology.kubernetes.io/zone", zone);
  cJSON_AddStringToObject(lab, "karpenter.sh/capacity-type", ct);
  if (!strcmp(ct, "spot")) cJSON_AddStringToObject(lab, "cluster.x-k8s.io/interruptible", "true");
  set_annotation(o, DT_A_PODS, pods);
  set_annotation(o, "dovetail.dev/replaces", olds);
  pod_event(o);
  replacing r = {dt__strdup(name), dt__strdup(olds), dt__strdup(why), group, false};
  if (!r.claim || !r.olds || !r.why || dt__vec_push(&D.replacing, r)) {
    dt__free(r.claim), dt__free(r.olds), dt__free(r.why);
    cJSON_Delete(o);
    return;
  }
  claim_put(name, o);
  for (const char *s = olds; *s;) {
    const char *e = strchr(s, ',');
    char one[KEY_MAX];
    snprintf(one, sizeof one, "%.*s", (int)(e ? e - s : (ptrdiff_t)strlen(s)), s);
    taint_disrupted(one, true);
    if (!e) break;
    s = e + 1;
  }
  char subj[KEY_MAX], reason[1200];
  snprintf(subj, sizeof subj, "NodeClaim %s", olds);
  snprintf(reason, sizeof reason, "%s: launching replacement NodeClaim %s (%s in %s, %s) before deleting", why, name, type,
           zone, ct);
  log_decision("replace", subj, reason);
}

/* Launch the replacements of a command, written ahead first. Each is staged
** before any launches: a launch may answer at once, and the old claims go
** only when all of them are up. */
static void launch_group(uint64_t group) {
  journal_flush();
  DT_VEC(char *) names = {0};
  for (size_t i = 0; i < D.replacing.n; i++) {
    char *n = D.replacing.v[i].group == group ? dt__strdup(D.replacing.v[i].claim) : NULL;
    if (n && dt__vec_push(&names, n)) dt__free(n);
  }
  for (size_t i = 0; i < names.n; i++) {
    bool staged = false; /* still: an earlier one may have failed and ended the group */
    for (size_t k = 0; k < D.replacing.n && !staged; k++) staged = !strcmp(D.replacing.v[k].claim, names.v[i]);
    cJSON *o = staged ? claim_get(names.v[i]) : NULL;
    const cJSON *lab = jget(jget(o, "metadata"), "labels");
    const char *type = dt__jstr(lab, DT_L_INSTANCE_TYPE), *zone = dt__jstr(lab, DT_L_ZONE);
    const char *ct = dt__jstr(lab, DT_L_CAPACITY_TYPE), *pool = dt__jstr(lab, DT_L_NODEPOOL);
    if (type && zone && ct && pool) launch_claim(names.v[i], type, zone, ct, pool);
    cJSON_Delete(o);
    dt__free(names.v[i]);
  }
  dt__free(names.v);
}

/* The pods nominated to a claim, or "" (owned by the caller). */
static char *claim_pods(const char *claim) {
  cJSON *o = claim_get(claim);
  const char *p = dt__jstr(jget(jget(o, "metadata"), "annotations"), DT_A_PODS);
  char *s = dt__strdup(p ? p : "");
  cJSON_Delete(o);
  return s;
}

static const struct instance *inst_of(const char *claim);

/* Tell the observer which pods may run on an initialized claim now. */
static void claim_running(const char *claim) {
  if (!D.obs || !D.obs->running || !inst_of(claim)) return;
  char *p = claim_pods(claim);
  if (p) D.obs->running(D.obs->ud, claim, p);
  dt__free(p);
}

/* ------------------------------------------------------------ provider */

typedef struct launch_ctx {
  char *claim, *type, *zone, *ct, *pool;
  int attempt;
  uv_timer_t retry;
  dt_launch_outcome outcome; /* a simulated cloud's answer, due when the retry timer fires */
  char id[128];
  int64_t startup_ms; /* then its node initializes after this long; < 0 never */
} launch_ctx;

static void lc_free(uv_handle_t *h) {
  launch_ctx *lc = h->data;
  dt__free(lc->claim);
  dt__free(lc->type);
  dt__free(lc->zone);
  dt__free(lc->ct);
  dt__free(lc->pool);
  dt__free(lc);
}

static void lc_done(launch_ctx *lc) { tm_close(&lc->retry, lc_free); }

static void drop_claim(const char *claim) {
  char key[800];
  snprintf(key, sizeof key, "NodeClaim//%s", claim);
  obj_del(key);
  for (size_t i = 0; i < D.insts.n; i++)
    if (!strcmp(D.insts.v[i].claim, claim)) {
      inst_remove(i);
      break;
    }
}

/* A launched claim is a node from now on: Initialized and Ready, created
** now (disruption considers it, consolidateAfter counts from here). */
static void claim_initialized(const char *claim) {
  char key[800], ts[40];
  snprintf(key, sizeof key, "NodeClaim//%s", claim);
  int at = obj_find(key);
  if (at < 0) return;
  cJSON *o = cJSON_Parse(D.objs.v[at].json);
  if (!o) return;
  dt__fmt_time(wall(), ts, sizeof ts);
  cJSON *md = jget(o, "metadata");
  cJSON_DeleteItemFromObjectCaseSensitive(md, "creationTimestamp");
  cJSON_AddStringToObject(md, "creationTimestamp", ts);
  cJSON *st = jget(o, "status");
  if (!st) st = cJSON_AddObjectToObject(o, "status");
  cJSON_DeleteItemFromObjectCaseSensitive(st, "conditions");
  cJSON *cs = cJSON_AddArrayToObject(st, "conditions");
  static const char *types[] = {"Initialized", "Ready"};
  for (int i = 0; i < 2; i++) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "type", types[i]);
    cJSON_AddStringToObject(c, "status", "True");
    cJSON_AddItemToArray(cs, c);
  }
  obj_put(key, o);
  cJSON_Delete(o);
}

static void on_circuit_close(uv_timer_t *t) {
  (void)t;
  logf_("info", "circuit", "closed: launches resume");
  arm_batch();
}

static void on_again(uv_timer_t *t) {
  (void)t;
  if (D.circuit_until <= wall()) arm_batch();
}

/*
** An offering whose launches keep failing (not for capacity: errors, after
** their retries) goes into a failed state with backoff, as Cluster API does
** with a machine that keeps failing: after FAILS_BEFORE_BACKOFF in a row it
** is marked unavailable for 30 s, doubling per further failure up to 10 min,
** so the next rounds launch elsewhere instead of failing every 2 s. A launch
** that succeeds clears the count.
*/
#define FAILS_BEFORE_BACKOFF 3

static int fail_find(const launch_ctx *lc, bool add) {
  char k[600];
  snprintf(k, sizeof k, "%s/%s/%s", lc->type, lc->zone, lc->ct);
  for (size_t i = 0; i < D.failing.n; i++)
    if (!strcmp(D.failing.v[i].key, k)) return (int)i;
  if (!add) return -1;
  failing f = {dt__strdup(k), 0};
  if (!f.key || dt__vec_push(&D.failing, f)) {
    dt__free(f.key);
    return -1;
  }
  return (int)D.failing.n - 1;
}

static void launch_failed_again(const launch_ctx *lc) {
  int at = fail_find(lc, true);
  if (at < 0) return;
  unsigned n = ++D.failing.v[at].count;
  if (n < FAILS_BEFORE_BACKOFF) return;
  int64_t ttl = 30;
  for (unsigned i = FAILS_BEFORE_BACKOFF; i < n && ttl < 600; i++) ttl *= 2;
  if (ttl > 600) ttl = 600;
  char why[200];
  snprintf(why, sizeof why, "%u launches in a row failed; backing off %llds", n, (long long)ttl);
  mark_unavailable(lc->ct, lc->type, lc->zone, why, ttl);
}

static void launch_succeeded(const launch_ctx *lc) {
  int at = fail_find(lc, false);
  if (at < 0) return;
  dt__free(D.failing.v[at].key);
  D.failing.v[at] = D.failing.v[--D.failing.n];
}

/* A launched claim's node registered and initialized: it takes pods, and a
** replacement lets the nodes it replaces go. */
static void node_up(const char *claim) {
  instance *in = NULL;
  for (size_t i = 0; i < D.insts.n && !in; i++)
    if (!strcmp(D.insts.v[i].claim, claim)) in = &D.insts.v[i];
  if (!in) return; /* deleted while it started */
  in->initialized = true;
  claim_initialized(claim);
  claim_running(claim);
  replacement_done(claim, true);
}

static void on_node_up(uv_timer_t *t) {
  launch_ctx *lc = t->data;
  node_up(lc->claim);
  state_dirty();
  lc_done(lc);
}

/* The outcome of a launch: launched (id), insufficient capacity, or failed (msg). */
static void launch_done(launch_ctx *lc, dt_launch_outcome outcome, const char *id, const char *msg) {
  char subj[800], reason[1200];
  snprintf(subj, sizeof subj, "NodeClaim %s", lc->claim);
  if (outcome == DT_LAUNCH_OK) {
    D.provider_ok++;
    D.consecutive_failures = 0;
    int cti = !strcmp(lc->ct, "reserved") ? 0 : !strcmp(lc->ct, "spot") ? 1 : 2;
    D.launched[cti]++;
    launch_succeeded(lc);
    add_instance(id, lc->claim, lc->type, lc->zone, lc->ct, lc->pool, 0, wall());
    snprintf(reason, sizeof reason, "launched %s as %s in %s (%s) for NodePool %s", id, lc->type, lc->zone, lc->ct,
             lc->pool);
    log_decision("launch", subj, reason);
    if (D.cloud && lc->startup_ms) { /* its node comes up later, or never (the startup timeout then acts) */
      for (size_t i = 0; i < D.insts.n; i++)
        if (!strcmp(D.insts.v[i].claim, lc->claim)) D.insts.v[i].initialized = false;
      state_dirty();
      if (lc->startup_ms > 0) {
        tm_start(&lc->retry, on_node_up, (uint64_t)lc->startup_ms, 0);
        return;
      }
      lc_done(lc);
      return;
    }
    node_up(lc->claim);
  } else if (outcome == DT_LAUNCH_NO_CAPACITY) {
    D.provider_ice++;
    D.consecutive_failures = 0;
    snprintf(reason, sizeof reason, "launch of %s in %s (%s) failed: InsufficientCapacity", lc->type, lc->zone, lc->ct);
    log_decision("launch-failed", subj, reason);
    mark_unavailable(lc->ct, lc->type, lc->zone, "insufficient capacity at launch", D.ttl);
    drop_claim(lc->claim);
    replacement_done(lc->claim, false);
    arm_batch();
  } else {
    D.provider_err++;
    snprintf(reason, sizeof reason, "launch of %s in %s (%s) failed: %s; its pods wait for the next round", lc->type,
             lc->zone, lc->ct, msg);
    log_decision("launch-failed", subj, reason);
    launch_failed_again(lc);
    drop_claim(lc->claim);
    replacement_done(lc->claim, false);
    tm_start(&D.again, on_again, 2000, 0);
  }
  /* The claim was written ahead; its outcome joins the round's one write. A
  ** crash before it finds the claim at restart and adopts its instance. */
  state_dirty();
  lc_done(lc);
}

static void http_launch(launch_ctx *lc);

static void on_retry(uv_timer_t *t) { http_launch(t->data); }

static void on_launch_reply(void *ud, long status, const char *body, size_t len, const char *etag, const char *err) {
  (void)etag;
  launch_ctx *lc = ud;
  if (status == 201) {
    cJSON *o = cJSON_ParseWithLength(body, len);
    const char *id = dt__jstr(o, "id");
    char idb[200];
    snprintf(idb, sizeof idb, "%s", id ? id : "");
    cJSON_Delete(o);
    if (idb[0]) {
      launch_done(lc, DT_LAUNCH_OK, idb, NULL);
      return;
    }
    err = "201 without an instance id";
  } else if (status == 409) {
    launch_done(lc, DT_LAUNCH_NO_CAPACITY, NULL, NULL);
    return;
  }
  char msg[300];
  snprintf(msg, sizeof msg, "%s", err ? err : "");
  if (!err) snprintf(msg, sizeof msg, "HTTP %ld", status);
  /* 4xx other than 409 will not get better by retrying */
  bool retry = status == 0 || status >= 500 || status == 429;
  if (++D.consecutive_failures >= 5 && D.circuit_until <= wall()) {
    D.circuit_until = wall() + 30;
    tm_start(&D.circuit_timer, on_circuit_close, 30000, 0);
    logf_("error", "circuit", "open for 30s after %u consecutive provider failures (last: %s)", D.consecutive_failures, msg);
  }
  /* lc->attempt counts the requests sent (http_launch counts each): after
  ** the first, retry n = attempt of --retries, 500 ms x 2^(n-1) x [0.5, 1.5) */
  if (retry && lc->attempt <= D.retries && D.circuit_until <= wall()) {
    D.jitter = D.jitter * 6364136223846793005ull + 1442695040888963407ull;
    double j = 0.5 + (double)(D.jitter >> 11) / 9007199254740992.0;
    uint64_t delay = (uint64_t)(500.0 * (double)(1u << (lc->attempt - 1)) * j);
    logf_("warn", "retry", "NodeClaim %s: %s; retry %d in %llu ms", lc->claim, msg, lc->attempt,
          (unsigned long long)delay);
    tm_start(&lc->retry, on_retry, delay, 0);
    return;
  }
  launch_done(lc, DT_LAUNCH_FAILED, NULL, msg);
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
  for (size_t i = 0; max < 0 && i < dt_catalog_size(D.cat); i++) {
    dt_type_info t;
    if (!dt_catalog_type(D.cat, i, &t) && !strcmp(t.name, type)) max = t.on_demand_price;
  }
  return max;
}

static void http_launch(launch_ctx *lc) {
  if (D.circuit_until > wall()) {
    launch_done(lc, DT_LAUNCH_FAILED, NULL, "the provider circuit is open");
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
  char url[1200];
  snprintf(url, sizeof url, "%s/instances", D.cloud_url);
  if (!body || dt__httpc_request("POST", url, body, NULL, (long)D.timeout_ms, on_launch_reply, lc))
    launch_done(lc, DT_LAUNCH_FAILED, NULL, "cannot start the request");
  free(body);
}

static void on_cloud_answer(uv_timer_t *t) {
  launch_ctx *lc = t->data;
  launch_done(lc, lc->outcome, lc->id, "the cloud refused the launch");
}

/* A launch of claim as this offering, not started yet; NULL out of memory. */
static launch_ctx *launch_new(const char *claim, const char *type, const char *zone, const char *ct, const char *pool) {
  launch_ctx *lc = dt__calloc(1, sizeof *lc);
  if (!lc) return NULL;
  lc->claim = dt__strdup(claim);
  lc->type = dt__strdup(type);
  lc->zone = dt__strdup(zone);
  lc->ct = dt__strdup(ct);
  lc->pool = dt__strdup(pool);
  tm_init(&lc->retry);
  lc->retry.data = lc;
  if (!lc->claim || !lc->type || !lc->zone || !lc->ct || !lc->pool) {
    lc_done(lc);
    return NULL;
  }
  return lc;
}

/* Send the launch to the provider; its outcome comes to launch_done. */
static void launch_start(launch_ctx *lc) {
  if (D.cloud_url) {
    http_launch(lc);
    return;
  }
  if (D.cloud) { /* the answer comes after the cloud's latency and the node's start-up */
    int64_t delay = 0;
    lc->outcome = D.cloud->launch(D.cloud->ud, lc->claim, lc->type, lc->zone, lc->ct, lc->id, sizeof lc->id, &delay,
                                  &lc->startup_ms);
    tm_start(&lc->retry, on_cloud_answer, delay > 0 ? (uint64_t)delay : 0, 0);
    return;
  }
  char id[64];
  if (sim_launch(lc->type, lc->zone, lc->ct, id, sizeof id))
    launch_done(lc, DT_LAUNCH_NO_CAPACITY, NULL, NULL);
  else
    launch_done(lc, DT_LAUNCH_OK, id, NULL);
}

static void launch_claim(const char *claim, const char *type, const char *zone, const char *ct, const char *pool) {
  launch_ctx *lc = launch_new(claim, type, zone, ct, pool);
  if (lc) launch_start(lc);
}

static void on_delete_reply(void *ud, long status, const char *body, size_t len, const char *etag, const char *err) {
  (void)body, (void)len, (void)etag;
  char *id = ud;
  if (status != 200 && status != 404) logf_("warn", "delete", "instance %s: %s", id, err ? err : "unexpected status");
  dt__free(id);
}

/* Poll the cloud's instance list: forget what it no longer has, adopt
** instances of claims we hold, and replace instances stopped by preemption
** (IBM-style polled interruptions). */
static void on_instances(void *ud, long status, const char *body, size_t len, const char *etag, const char *err) {
  (void)ud, (void)etag;
  if (status != 200) {
    logf_("warn", "poll", "GET /instances: %s", err ? err : "unexpected status");
    return;
  }
  cJSON *o = cJSON_ParseWithLength(body, len);
  const cJSON *list = jget(o, "instances"), *in;
  bool changed = false;
  /* adopt: claims in the store without an instance, which the cloud has */
  cJSON_ArrayForEach(in, list) {
    const char *id = dt__jstr(in, "id");
    const char *claim = dt__jstr(in, "claim");
    const char *state = dt__jstr(in, "state");
    const char *why = dt__jstr(in, "statusReason");
    if (!id || !claim) continue;
    char key[800];
    snprintf(key, sizeof key, "NodeClaim//%s", claim);
    bool known = false;
    for (size_t i = 0; i < D.insts.n && !known; i++) known = !strcmp(D.insts.v[i].id, id);
    if (!known && obj_find(key) >= 0) {
      add_instance(id, claim, dt__jstr(in, "instanceType"),
                   dt__jstr(in, "zone"),
                   dt__jstr(in, "capacityType"),
                   dt__jstr(in, "nodePool"), 0, wall());
      log_decision("adopt", id, "the cloud has an instance for a claim we hold");
      known = changed = true;
    }
    if (!known && D.ready && state && strcmp(state, "terminated")) {
      /* Launched for a claim this daemon no longer holds: garbage, but only
      ** when the instance carries this cluster's name and a state file this
      ** daemon wrote or read says what it holds. Anything else is left
      ** alone: a lost or foreign state must never cost a fleet. */
      const char *owner = dt__jstr(in, "cluster");
      if (!owner || strcmp(owner, D.cluster) || !D.state_valid) {
        char why2[300];
        snprintf(why2, sizeof why2, "the cloud has an instance this daemon cannot account for (%s); left alone",
                 !owner ? "no cluster tag" : strcmp(owner, D.cluster) ? "another cluster's" : "no state file");
        logf_("warn", "unaccounted", "instance %s: %s", id, why2);
        continue;
      }
      log_decision("orphan", id, "the cloud has an instance for a claim this daemon does not hold: deleted");
      char url[1200];
      snprintf(url, sizeof url, "%s/instances/%s", D.cloud_url, id);
      char *idc = dt__strdup(id);
      if (idc && dt__httpc_request("DELETE", url, NULL, NULL, (long)D.timeout_ms, on_delete_reply, idc)) dt__free(idc);
      continue;
    }
    const instance *kin = NULL;
    for (size_t i = 0; i < D.insts.n && !kin; i++)
      if (!strcmp(D.insts.v[i].id, id)) kin = &D.insts.v[i];
    /* while a round holds the policy, a preemption waits for the next poll */
    const char *act = known && kin && state && !strcmp(state, "stopped") && why &&
                              !strcmp(why, "stopped_by_preemption") && !D.planning
                          ? interruption_action("preemption", kin, state, "drain")
                          : "ignore";
    if (known && kin && strcmp(act, "ignore")) {
      char subj[300], reason[600];
      snprintf(subj, sizeof subj, "instance %s", id);
      /* "keep-offering": replace the node, leave the offering available */
      if (!strcmp(act, "drain")) mark_unavailable(kin->ct, kin->type, kin->zone, "stopped by preemption", D.preempt_ttl);
      snprintf(reason, sizeof reason, "stopped by preemption: delete it and replace NodeClaim %s", claim);
      log_decision("interruption", subj, reason);
      char url[1200];
      snprintf(url, sizeof url, "%s/instances/%s", D.cloud_url, id);
      char *idc = dt__strdup(id);
      if (idc && dt__httpc_request("DELETE", url, NULL, NULL, (long)D.timeout_ms, on_delete_reply, idc)) dt__free(idc);
      drop_claim(claim);
      D.events++;
      changed = true;
      continue;
    }
    /* stopped or deallocated by the cloud, still billed: unhealthy from
    ** the first poll that says so (remediated after the timeout) */
    instance *hin = (instance *)kin;
    if (hin) {
      bool down = state && (!strcmp(state, "stopped") || !strcmp(state, "deallocated") || !strcmp(state, "stopping"));
      if (down && !hin->down_since) hin->down_since = wall();
      if (!down) hin->down_since = 0;
    }
  }
  /* forget: instances the cloud no longer has (and claims never launched) */
  for (size_t i = 0; i < D.insts.n;) {
    bool seen = false;
    cJSON_ArrayForEach(in, list) seen |= !strcmp(dt__jstr(in, "id") ?: "",
                                                 D.insts.v[i].id);
    if (seen) {
      i++;
      continue;
    }
    log_decision("forget", D.insts.v[i].id, "the cloud no longer has this instance; its pods are pending again");
    char claim[600];
    snprintf(claim, sizeof claim, "%s", D.insts.v[i].claim);
    drop_claim(claim);
    changed = true;
  }
  if (!D.ready) {
    /* claims held without an instance after a restart: launched by nobody */
    for (size_t i = 0; i < D.objs.n;) {
      if (strncmp(D.objs.v[i].key, "NodeClaim//", 11)) {
        i++;
        continue;
      }
      const char *claim = D.objs.v[i].key + 11;
      bool has = false;
      for (size_t k = 0; k < D.insts.n && !has; k++) has = !strcmp(D.insts.v[k].claim, claim);
      if (has) {
        i++;
        continue;
      }
      logf_("info", "reconcile", "NodeClaim %s has no instance: its pods are planned again", claim);
      obj_del(D.objs.v[i].key);
      changed = true;
    }
    D.ready = true;
    logf_("info", "ready", "reconciled with the cloud: %zu instances", D.insts.n);
    if (D.objs.n) arm_batch();
  }
  cJSON_Delete(o);
  if (changed) {
    journal_flush();
    arm_batch();
  }
}

static void on_catalog(void *ud, long status, const char *body, size_t len, const char *etag, const char *err) {
  (void)ud;
  if (status == 304) return;
  if (status != 200) {
    logf_("warn", "catalog", "GET /catalog: %s", err ? err : "unexpected status");
    return;
  }
  dt_catalog *c = NULL;
  dt_error e = {0};
  if (dt_catalog_load_buffer("cloud:/catalog", body, len, &c, &e)) {
    logf_("error", "catalog", "the cloud's catalog is invalid, keeping the current one: %s", e.msg);
    return;
  }
  if (D.planning) { /* the round on the thread pool reads the catalog: swap after it */
    dt_catalog_free(D.next_cat);
    D.next_cat = c;
  } else {
    dt_catalog_free(D.cat);
    D.cat = c;
  }
  snprintf(D.catalog_etag, sizeof D.catalog_etag, "%s", etag ? etag : "");
  logf_("info", "catalog", "refreshed from the cloud (%zu bytes, ETag %s)", len, D.catalog_etag);
}

void on_poll_timer(uv_timer_t *t) {
  (void)t;
  char url[1200];
  snprintf(url, sizeof url, "%s/instances?cluster=%s", D.cloud_url, D.cluster);
  if (dt__httpc_request("GET", url, NULL, NULL, (long)D.timeout_ms, on_instances, NULL))
    logf_("error", "poll", "cannot start GET /instances");
  snprintf(url, sizeof url, "%s/catalog", D.cloud_url);
  if (dt__httpc_request("GET", url, NULL, D.catalog_etag[0] ? D.catalog_etag : NULL, (long)D.timeout_ms, on_catalog,
                        NULL))
    logf_("error", "catalog", "cannot start GET /catalog");
}

/* ------------------------------------------------------------ disruption */

/* Delete a claim this daemon launched: its instance through the provider,
** the claim from the store; its pods are planned again. */
static void delete_instance(const char *claim, const char *why) {
  char subj[KEY_MAX], copy[KEY_MAX];
  snprintf(copy, sizeof copy, "%s", claim);
  snprintf(subj, sizeof subj, "NodeClaim %s", copy);
  for (size_t i = 0; i < D.insts.n; i++)
    if (!strcmp(D.insts.v[i].claim, copy) && D.cloud_url) {
      char url[1200];
      snprintf(url, sizeof url, "%s/instances/%s", D.cloud_url, D.insts.v[i].id);
      char *idc = dt__strdup(D.insts.v[i].id);
      if (idc && dt__httpc_request("DELETE", url, NULL, NULL, (long)D.timeout_ms, on_delete_reply, idc)) dt__free(idc);
    } else if (!strcmp(D.insts.v[i].claim, copy) && D.cloud && D.cloud->terminate) {
      D.cloud->terminate(D.cloud->ud, D.insts.v[i].id);
    }
  log_decision("disrupt", subj, why);
  drop_claim(copy);
  D.deleted++;
}

static const instance *inst_of(const char *claim) {
  for (size_t i = 0; i < D.insts.n; i++)
    if (!strcmp(D.insts.v[i].claim, claim)) return &D.insts.v[i];
  return NULL;
}

/* A name for a replacement claim, unique in the store. */
static void replacement_name(const char *pool, const char *seed, char *out, size_t n) {
  for (uint64_t k = 0;; k++) {
    char buf[KEY_MAX + 40];
    snprintf(buf, sizeof buf, "%s/%llu/%llu", seed, (unsigned long long)D.start_seed, (unsigned long long)(D.seq + k));
    uint64_t h = dt__hash64(buf, strlen(buf));
    static const char digits[] = "0123456789bcdfghjklmnpqrstvwxz";
    char suf[6];
    for (int i = 0; i < 5; i++, h /= 30) suf[i] = digits[h % 30];
    suf[5] = 0;
    snprintf(out, n, "%s-%s", pool, suf);
    cJSON *o = claim_get(out);
    cJSON_Delete(o);
    if (!o) break;
  }
  D.seq++;
}

/* One disruption command: claims this daemon launched only; a replacement
** is launched first and the nodes go once it is up (one replacement; a
** command with several deletes first and lets the next round launch them). */
static bool carry_out(const cJSON *c) {
  const char *reason = dt__jstr(c, "reason"), *action = dt__jstr(c, "action");
  const cJSON *n, *repl = jget(c, "replacements");
  dt_buf olds = {0}, pods = {0};
  bool any = false;
  cJSON_ArrayForEach(n, jget(c, "nodes")) {
    const char *name = dt__jstr(n, "name");
    char subj[KEY_MAX], why[900];
    snprintf(subj, sizeof subj, "NodeClaim %s", name ? name : "?");
    if (!name || !inst_of(name) || being_replaced(name)) {
      snprintf(why, sizeof why, "%s %s: %s", reason, action,
               name && inst_of(name) ? "already being replaced" : "not a claim this daemon launched; left to its owner");
      log_decision("disrupt-skipped", subj, why);
      continue;
    }
    if (olds.len) dt__buf_putc(&olds, ',');
    dt__buf_puts(&olds, name);
    char *p = claim_pods(name);
    if (p && *p) {
      if (pods.len) dt__buf_putc(&pods, ',');
      dt__buf_puts(&pods, p);
    }
    dt__free(p);
  }
  if (olds.len && !olds.oom && !pods.oom) {
    any = true;
    char why[600];
    if (cJSON_GetArraySize(repl) >= 1) {
      /* every replacement launches, each with the pods the pass placed on
      ** it; the old claims go once all are up (pods the pass put on other
      ** nodes are planned again then) */
      uint64_t group = ++D.groups;
      const cJSON *r;
      snprintf(why, sizeof why, "%s (saves $%s/h)", reason, dt__jstr(c, "savings") ? dt__jstr(c, "savings") : "?");
      cJSON_ArrayForEach(r, repl) {
        char name[KEY_MAX];
        const char *pool = dt__jstr(r, "nodePool") ? dt__jstr(r, "nodePool") : "replacement";
        replacement_name(pool, olds.p, name, sizeof name);
        const cJSON *its = jget(r, "pods"), *q;
        dt_buf mine = {0};
        cJSON_ArrayForEach(q, its) {
          if (!cJSON_IsString(q)) continue;
          if (mine.len) dt__buf_putc(&mine, ',');
          dt__buf_puts(&mine, q->valuestring);
        }
        const char *carry = cJSON_IsArray(its) ? (mine.p ? mine.p : "") : pods.p ? pods.p : "";
        if (!mine.oom)
          replace_with(name, pool, dt__jstr(r, "instanceType"), dt__jstr(r, "zone"), dt__jstr(r, "capacityType"), carry,
                       olds.p, why, group);
        dt__free(mine.p);
      }
      launch_group(group);
    } else {
      for (char *s = olds.p, *e; s && *s; s = e ? e + 1 : NULL) {
        e = strchr(s, ',');
        if (e) *e = 0;
        const instance *in = inst_of(s);
        snprintf(why, sizeof why, "%s: %s (instance %s)", reason, action, in ? in->id : "?");
        delete_instance(s, why);
      }
    }
  }
  dt__free(olds.p);
  dt__free(pods.p);
  return any;
}

/* The Node registered for a claim: by name, or by the provider ID that ends
** with its instance id. */
static const instance *node_instance(const cJSON *node) {
  const char *name = dt__jstr(jget(node, "metadata"), "name");
  const char *pid = dt__jstr(jget(node, "spec"), "providerID");
  for (size_t i = 0; i < D.insts.n; i++) {
    const instance *in = &D.insts.v[i];
    size_t pl = pid ? strlen(pid) : 0, il = strlen(in->id);
    if ((name && !strcmp(name, in->claim)) || (pid && pl > il && pid[pl - il - 1] == '/' && !strcmp(pid + pl - il, in->id)))
      return in;
  }
  return NULL;
}

/*
** Health remediation, as Cluster API's MachineHealthCheck: a node whose
** Ready condition has been False or Unknown for --unhealthy-timeout, or
** whose instance the cloud reports stopped or deallocated for as long, is
** replaced through the launch-before-delete path; when more of a pool's
** nodes are unhealthy than --max-unhealthy allows, remediation stops for
** that pool (a mass failure is not fixed by replacing everything).
*/
/* Claims launched longer ago than --startup-timeout whose nodes never
** initialized are deleted (Karpenter's registration timeout); their pods are
** planned again, and a replacement that never came up ends its command. */
static bool startup_timeouts(void) {
  int64_t now = wall();
  bool acted = false;
  for (size_t i = 0; i < D.insts.n;) {
    const instance *in = &D.insts.v[i];
    if (in->initialized || !D.startup_timeout_s || now - in->launched < D.startup_timeout_s) {
      i++;
      continue;
    }
    char claim[KEY_MAX], why[600];
    snprintf(claim, sizeof claim, "%s", in->claim);
    snprintf(why, sizeof why, "Unhealthy: NodeClaim %s launched %llds ago as %s and has not initialized (startup timeout %llds)",
             claim, (long long)(now - in->launched), in->id, (long long)D.startup_timeout_s);
    D.remediations++;
    delete_instance(claim, why); /* removes instance i */
    replacement_done(claim, false);
    acted = true;
  }
  return acted;
}

static bool remediate(void) {
  int64_t now = wall();
  DT_VEC(const instance *) sick = {0};
  DT_VEC(const char *) whys = {0};
  static char reasons[64][300];
  for (size_t i = 0; i < D.objs.n; i++) {
    if (strncmp(D.objs.v[i].key, "Node//", 6)) continue;
    cJSON *o = cJSON_Parse(D.objs.v[i].json);
    const cJSON *c;
    cJSON_ArrayForEach(c, jget(jget(o, "status"), "conditions")) {
      const char *t = dt__jstr(c, "type"), *s = dt__jstr(c, "status"), *lt = dt__jstr(c, "lastTransitionTime");
      int64_t since = 0;
      if (!t || strcmp(t, "Ready") || !s || !strcmp(s, "True") || !lt || dt_time_parse(lt, &since, NULL)) continue;
      const instance *in = node_instance(o);
      if (!in || now - since < D.unhealthy_s || sick.n >= 64) continue;
      snprintf(reasons[sick.n], sizeof reasons[0], "Unhealthy: node %s Ready=%s for %llds (timeout %llds)",
               dt__jstr(jget(o, "metadata"), "name"), s, (long long)(now - since), (long long)D.unhealthy_s);
      if (!dt__vec_push(&sick, in)) dt__vec_push(&whys, reasons[sick.n - 1]);
    }
    cJSON_Delete(o);
  }
  for (size_t i = 0; i < D.insts.n && sick.n < 64; i++) {
    const instance *in = &D.insts.v[i];
    if (!in->down_since || now - in->down_since < D.unhealthy_s) continue;
    bool dup = false;
    for (size_t k = 0; k < sick.n; k++) dup |= sick.v[k] == in;
    if (dup) continue;
    snprintf(reasons[sick.n], sizeof reasons[0], "Unhealthy: the cloud reports instance %s stopped or deallocated for %llds",
             in->id, (long long)(now - in->down_since));
    if (!dt__vec_push(&sick, in)) dt__vec_push(&whys, reasons[sick.n - 1]);
  }
  bool acted = false;
  for (size_t i = 0; i < sick.n && whys.n == sick.n; i++) {
    const instance *in = sick.v[i];
    if (!in || being_replaced(in->claim)) continue;
    size_t total = 0, bad = 0;
    for (size_t k = 0; k < D.insts.n; k++) total += !strcmp(D.insts.v[k].pool, in->pool);
    for (size_t k = 0; k < sick.n; k++) bad += sick.v[k] && !strcmp(sick.v[k]->pool, in->pool);
    size_t max = D.max_unhealthy_pct ? total * D.max_unhealthy / 100 : D.max_unhealthy;
    if (bad > max) {
      char subj[KEY_MAX], why[400];
      snprintf(subj, sizeof subj, "NodePool %s", in->pool);
      snprintf(why, sizeof why, "%zu of %zu nodes unhealthy, more than maxUnhealthy %llu%s: remediation stops", bad, total,
               (unsigned long long)D.max_unhealthy, D.max_unhealthy_pct ? "%" : "");
      log_decision("remediation-paused", subj, why);
      D.remediation_paused++;
      for (size_t k = i; k < sick.n; k++) /* once per pool */
        if (sick.v[k] && !strcmp(sick.v[k]->pool, in->pool) && k != i) sick.v[k] = NULL;
      continue;
    }
    char name[KEY_MAX], *pods = claim_pods(in->claim);
    char claim[KEY_MAX], type[200], zone[200], ct[40], pool[300];
    snprintf(claim, sizeof claim, "%s", in->claim);
    snprintf(type, sizeof type, "%s", in->type), snprintf(zone, sizeof zone, "%s", in->zone);
    snprintf(ct, sizeof ct, "%s", in->ct), snprintf(pool, sizeof pool, "%s", in->pool);
    replacement_name(pool, claim, name, sizeof name);
    D.remediations++;
    replace_with(name, pool, type, zone, ct, pods ? pods : "", claim, whys.v[i], ++D.groups);
    launch_group(D.groups); /* may move D.insts */
    dt__free(pods);
    for (size_t k = i + 1; k < sick.n; k++) sick.v[k] = NULL; /* pointers into D.insts are stale now */
    acted = true;
    break; /* one at a time; the next pass takes the next */
  }
  dt__free(sick.v);
  dt__free(whys.v);
  return acted;
}

/* Every --disrupt-interval: health remediation, then one disruption pass
** over the cluster the daemon holds, its commands carried out on the claims
** it launched. */
static void dispatch(bool disrupt);

void on_disrupt(uv_timer_t *t) {
  (void)t;
  if (!D.ready || D.batch_open || D.planning) return; /* provisioning first, as Karpenter's pending-pods rule */
  expire_marks();
  bool timed_out = startup_timeouts();
  if (remediate() || timed_out) {
    journal_flush();
    arm_batch();
  }
  dispatch(true); /* the pass runs on the thread pool; round_done carries out its commands */
}

/* ------------------------------------------------------------ a round */

/* ------------------------------------------------------------ VM pools */

static void vm_key(const cJSON *pool, const cJSON *a, char *out, size_t n) {
  snprintf(out, n, "VirtualMachine/%s/%s", dt__jstr(pool, "namespace") ? dt__jstr(pool, "namespace") : "default",
           dt__jstr(a, "name") ? dt__jstr(a, "name") : "");
}

/* Carry out one kind of pool action: its VM objects go into the store, or
** out of it. */
static size_t pool_actions(const cJSON *pool, const char *kind, bool remove) {
  const cJSON *a;
  size_t n = 0;
  cJSON_ArrayForEach(a, jget(pool, kind)) {
    char key[KEY_MAX + 32], subj[KEY_MAX + 32];
    vm_key(pool, a, key, sizeof key);
    const cJSON *obj = jget(a, "object");
    const char *what = dt__jstr(a, "action");
    if (what && !strcmp(what, "wait")) continue; /* a heal waiting for its backoff */
    if (remove) {
      obj_del(key);
    } else if (obj) {
      cJSON *copy = cJSON_Duplicate(obj, true);
      /* a VM created (or re-created) here runs nowhere yet: Provisioning, so
      ** its virt-launcher pod joins this round's pending pods */
      if (copy && strcmp(kind, "update")) put_in(copy, "status", "printableStatus", "Provisioning");
      if (copy) obj_put(key, copy);
      cJSON_Delete(copy);
    } else {
      continue;
    }
    snprintf(subj, sizeof subj, "VirtualMachine %s/%s", dt__jstr(pool, "namespace"), dt__jstr(a, "name"));
    char why[900];
    snprintf(why, sizeof why, "%s%s%s: %s", kind, what ? " " : "", what ? what : "", dt__jstr(a, "reason") ? dt__jstr(a, "reason") : "");
    log_decision("vmpool", subj, why);
    n++;
  }
  return n;
}

/*
** VirtualMachinePools converge in the daemon as `dovetail pool` decides:
** each round's creations, deletions, updates and heals become VirtualMachine
** objects in the store (or leave it), within KubeVirt's burst limit, and
** the VMs that need a node become virt-launcher pods of the same round's
** plan. The last result is served at /v1/pools.
*/
static void converge_pools(void) {
  bool any = false;
  for (size_t i = 0; i < D.objs.n && !any; i++) any = !strncmp(D.objs.v[i].key, "VirtualMachinePool/", 19);
  if (!any) return;
  dt_error err = {0};
  dt_manifests *m = manifests(&err);
  if (!m) {
    logf_("error", "pools", "%s", err.msg);
    return;
  }
  dt_pool_opts po = {wall(), D.start_seed ^ D.round, D.policy};
  dt_pools *r = NULL;
  if (dt_pools_run(m, &po, &r, &err)) {
    logf_("error", "pools", "%s", err.msg);
    dt_manifests_free(m);
    return;
  }
  size_t len;
  char *text = dt_pools_render(r, DT_FORMAT_JSON, &len);
  cJSON *doc = text ? cJSON_ParseWithLength(text, len) : NULL;
  const cJSON *pool;
  cJSON_ArrayForEach(pool, jget(doc, "pools")) {
    char name[KEY_MAX];
    snprintf(name, sizeof name, "%s/%s", dt__jstr(pool, "namespace") ? dt__jstr(pool, "namespace") : "",
             dt__jstr(pool, "name") ? dt__jstr(pool, "name") : "");
    pool_count *pc = NULL;
    for (size_t i = 0; i < D.vm_actions.n && !pc; i++)
      if (!strcmp(D.vm_actions.v[i].pool, name)) pc = &D.vm_actions.v[i];
    if (!pc) {
      pool_count z = {dt__strdup(name), {0}};
      if (!z.pool || dt__vec_push(&D.vm_actions, z)) {
        dt__free(z.pool);
        continue;
      }
      pc = &D.vm_actions.v[D.vm_actions.n - 1];
    }
    pc->n[0] += pool_actions(pool, "create", false);
    pc->n[1] += pool_actions(pool, "delete", true);
    pc->n[2] += pool_actions(pool, "update", false);
    pc->n[3] += pool_actions(pool, "heal", false);
  }
  cJSON_Delete(doc);
  dt_pools_stats ps;
  dt_pools_stats_get(r, &ps);
  D.pools_waiting = ps.waiting; /* held back (burst, maxUnavailable): the requeue timer comes back */
  dt_free(D.last_pools);
  D.last_pools = text;
  dt_pools_free(r);
  dt_manifests_free(m);
}


static void on_requeue(uv_timer_t *t);

/*
** A round runs in two halves so the loop never waits on it: on the loop,
** marks expire, VM pools converge and the store is copied (sorted, so
** rounds are deterministic); on libuv's thread pool, the copy is read into
** manifests, NodePool policies are synced and the plan is made and
** rendered; back on the loop, claims are stored, written ahead and
** launched, bindings nominated, and the requeue timer set. While a round
** is on the pool, the policies belong to it: reloads, disruption passes,
** policy-routed events and polled preemptions wait for its end.
*/
typedef struct round_work {
  uv_work_t req;
  bool disrupt; /* a disruption pass rather than a provisioning round */
  size_t n;
  char **key, **json; /* the store, copied */
  dt_plan_opts o;
  int rc;
  dt_error err;
  dt_manifests *m;
  dt_plan *p;
  cJSON *claims; /* the plan's NodeClaims, parsed from its YAML; or the pass's result */
  char *json_text;
  size_t json_len;
  double ms;
  char *pool_errors;
} round_work;

static void round_free(round_work *w) {
  for (size_t i = 0; i < w->n; i++) {
    dt__free(w->key[i]);
    dt__free(w->json[i]);
  }
  dt__free(w->key);
  dt__free(w->json);
  dt_plan_free(w->p);
  dt_manifests_free(w->m);
  cJSON_Delete(w->claims);
  dt_free(w->json_text);
  dt__free(w->pool_errors);
  dt__free(w);
}

/* On the thread pool: nothing here touches the daemon's state but the
** policies, which the loop leaves alone while D.planning. */
static void round_run(uv_work_t *req) {
  round_work *w = req->data;
  if (!(w->m = dt_manifests_new())) {
    w->rc = dt__err(&w->err, DT_ENOMEM, "out of memory");
    return;
  }
  for (size_t i = 0; i < w->n && !w->rc; i++)
    w->rc = dt_manifests_add_buffer(w->m, w->key[i], w->json[i], strlen(w->json[i]), &w->err);
  if (w->rc) return;
  if (D.pdir) {
    dt_policy_dir_sync(D.pdir, w->m);
    w->pool_errors = dt__strdup(dt_policy_dir_errors(D.pdir));
    dt_policy_dir_apply(D.pdir, &w->o.pool_policies, &w->o.pool_policy_names, &w->o.npool_policies);
  }
  double t0 = dt__now_ms();
  if (w->disrupt) {
    dt_disrupt_opts o = {w->o.now, w->o.seed, w->o.policy, 0, NULL, w->o.pool_policies, w->o.pool_policy_names,
                         w->o.npool_policies, w->o.cancel};
    dt_disruption *r = NULL;
    if ((w->rc = dt_disrupt_run(D.cat, w->m, &o, &r, &w->err))) return;
    w->ms = dt__now_ms() - t0;
    char *text = dt_disrupt_render(r, DT_FORMAT_JSON, NULL);
    w->claims = text ? cJSON_Parse(text) : NULL;
    if (!w->claims) w->rc = dt__err(&w->err, DT_ENOMEM, "out of memory rendering the disruption pass");
    dt_free(text);
    dt_disrupt_free(r);
    return;
  }
  if ((w->rc = dt_plan_run(D.cat, w->m, &w->o, &w->p, &w->err))) return;
  w->ms = dt__now_ms() - t0;
  char *yaml = dt__plan_render_launched(w->p, NULL); /* each claim as it launches: one instance type */
  w->json_text = dt_plan_render(w->p, DT_FORMAT_JSON, &w->json_len);
  dt_error perr = {0};
  if (!yaml || !w->json_text || dt__doc_parse("plan", yaml, strlen(yaml), &w->claims, &perr))
    w->rc = dt__err(&w->err, DT_ENOMEM, "out of memory rendering the plan");
  dt_free(yaml);
}

static void after_round(void);
void reload(const char *why);

/* Back on the loop: carry the plan out. */
static void on_launch_tick(uv_timer_t *t);

static void round_done(uv_work_t *req, int status) {
  round_work *w = req->data;
  D.planning = false;
  if (D.reload_pending) { /* the policy is free again: the new one decides from the next round */
    D.reload_pending = false;
    reload("file changed during a round");
  }
  if (!status && w->rc == DT_ECANCELED) { /* stopped for a new policy: nothing of it is carried out */
    logf_("info", "plan", "%s stopped: the policy changed while it ran; planning again",
          w->disrupt ? "disruption pass" : "round");
    if (!w->disrupt) D.round_pending = true;
    round_free(w);
    after_round();
    return;
  }
  if (status || w->rc) {
    logf_("error", "plan", "%s", status ? "the round was cancelled" : w->err.msg);
    round_free(w);
    after_round();
    return;
  }
  if (w->pool_errors && *w->pool_errors) logf_("error", "policy", "%s", w->pool_errors);
  snprintf(D.pool_errors, sizeof D.pool_errors, "%s", w->pool_errors ? w->pool_errors : "");
  if (w->disrupt) {
    bool changed = false;
    const cJSON *c;
    cJSON_ArrayForEach(c, jget(w->claims, "commands")) changed |= carry_out(c);
    if (changed) {
      journal_flush();
      arm_batch();
    }
    round_free(w);
    after_round();
    return;
  }
  double ms = w->ms;
  D.plans++;
  D.plan_ms_sum += ms / 1000;
  for (int b = 0; b < 8; b++)
    if (ms / 1000 <= k_buckets[b]) D.plan_buckets[b]++;
  dt_plan_stats st;
  dt_plan_stats_get(w->p, &st);
  dt_free(D.last_plan);
  D.last_plan = w->json_text;
  w->json_text = NULL;
  D.pending = st.unschedulable;
  /* Launch every new claim; the applyable YAML carries the pods they take. */
  typedef struct claim {
    const char *name, *type, *zone, *ct, *pool;
  } claim;
  DT_VEC(claim) cs = {0};
  const cJSON *c;
  cJSON_ArrayForEach(c, w->claims) {
    const cJSON *lab = jget(jget(c, "metadata"), "labels");
    claim k = {dt__jstr(jget(c, "metadata"), "name"), dt__jstr(lab, "node.kubernetes.io/instance-type"),
               dt__jstr(lab, "topology.kubernetes.io/zone"), dt__jstr(lab, "karpenter.sh/capacity-type"),
               dt__jstr(lab, "karpenter.sh/nodepool")};
    if (!k.name || !k.type || !k.zone || !k.ct || !k.pool) continue;
    char key[KEY_MAX + 16];
    snprintf(key, sizeof key, "NodeClaim//%s", k.name);
    obj_put(key, c); /* in flight from now: the next round does not launch its pods again */
    if (dt__vec_push(&cs, k)) logf_("error", "plan", "out of memory: NodeClaim %s is not launched", k.name);
  }
  /* Write ahead: the claims are in the state file before any request leaves,
  ** so a crash mid-launch finds them at restart and adopts what the cloud
  ** made for them (launches are idempotent per claim). */
  if (cs.n) journal_flush();
  for (size_t i = 0; i < cs.n; i++) {
    launch_ctx *lc = launch_new(cs.v[i].name, cs.v[i].type, cs.v[i].zone, cs.v[i].ct, cs.v[i].pool);
    if (!lc || dt__vec_push(&D.to_launch, lc)) {
      if (lc) lc_done(lc);
      logf_("error", "plan", "out of memory: NodeClaim %s is not launched", cs.v[i].name);
    }
  }
  dt__free(cs.v);
  if (D.to_launch.n) tm_start(&D.launch_tick, on_launch_tick, 0, 0);
  nominate(w->p);
  D.cost = st.hourly_cost;
  logf_("info", "plan", "round %llu: %zu pending pods, %zu scheduled, %zu new claims, %zu unschedulable, %.1f ms",
        (unsigned long long)D.round, st.pods, st.scheduled, st.nodes, st.unschedulable, ms);
  /* Pods left pending (unschedulable, or deferred for a reservation other
  ** claims hold) are planned again on a timer with backoff, so a fallback
  ** happens by itself when the cluster changes under them. */
  if (st.unschedulable || D.pools_waiting) {
    tm_start(&D.requeue, on_requeue, D.requeue_ms, 0);
    D.requeue_ms = D.requeue_ms * 2 > REQUEUE_MAX_MS ? REQUEUE_MAX_MS : D.requeue_ms * 2;
  } else {
    tm_stop(&D.requeue);
    D.requeue_ms = REQUEUE_BASE_MS;
  }
  round_free(w);
  state_dirty(); /* marks that expired; launches wrote their own */
  after_round();
}

/*
** A round's launches go out a slice per loop turn, so a large round does not
** hold the loop (a policy write, a probe, an event are served between
** slices). They were written ahead; they go in the order the plan made them.
*/
#define LAUNCH_SLICE 64

void launch_waiting(size_t most) {
  size_t n = D.to_launch.n < most ? D.to_launch.n : most;
  for (size_t i = 0; i < n; i++) launch_start(D.to_launch.v[i]);
  memmove(D.to_launch.v, D.to_launch.v + n, (D.to_launch.n - n) * sizeof *D.to_launch.v);
  D.to_launch.n -= n;
}

static void on_launch_tick(uv_timer_t *t) {
  launch_waiting(LAUNCH_SLICE);
  if (D.to_launch.n) tm_start(t, on_launch_tick, 0, 0);
}

/* Copy the store and queue the work (a round, or a disruption pass). */
static void dispatch(bool disrupt) {
  if (D.objs.n && !D.sorted) {
    qsort(D.objs.v, D.objs.n, sizeof *D.objs.v, key_cmp);
    store_rehash();
    D.sorted = true;
  }
  round_work *w = dt__calloc(1, sizeof *w);
  if (w) {
    w->key = dt__calloc(D.objs.n + 1, sizeof *w->key);
    w->json = dt__calloc(D.objs.n + 1, sizeof *w->json);
  }
  bool ok = w && w->key && w->json;
  for (size_t i = 0; ok && i < D.objs.n; i++) {
    w->key[i] = dt__strdup(D.objs.v[i].key);
    w->json[i] = dt__strdup(D.objs.v[i].json);
    w->n = i + 1;
    ok = w->key[i] && w->json[i];
  }
  if (!ok) {
    logf_("error", "plan", "out of memory copying the store; the round is skipped");
    if (w) round_free(w);
    return;
  }
  w->disrupt = disrupt;
  w->o.now = wall();
  w->o.seed = disrupt ? D.start_seed ^ ++D.round : ++D.round ^ D.start_seed; /* names differ across restarts */
  w->o.policy = D.policy;
  w->o.packing = D.packing;
  D.cancel = 0;
  w->o.cancel = &D.cancel;
  w->req.data = w;
  D.planning = true;
  if (D.virt) { /* the virtual clock stands still while the round runs */
    round_run(&w->req);
    round_done(&w->req, 0);
    return;
  }
  if (uv_queue_work(D.loop, &w->req, round_run, round_done)) {
    D.planning = false;
    logf_("error", "plan", "cannot queue the round");
    round_free(w);
  }
}

static void plan_round(void) {
  if (D.planning) { /* one round at a time: this one follows it */
    D.round_pending = true;
    return;
  }
  expire_marks();
  converge_pools();
  dispatch(false);
}

void handle_event(cJSON *e, char *action, size_t n);

/* What waited for a round on the thread pool. */
static void after_round(void) {
  if (D.next_cat) {
    dt_catalog_free(D.cat);
    D.cat = D.next_cat;
    D.next_cat = NULL;
  }
  if (D.reload_pending) {
    D.reload_pending = false;
    reload("file changed during a round");
  }
  for (size_t i = 0; i < D.queued.n; i++) {
    char act[32];
    handle_event(D.queued.v[i], act, sizeof act);
    cJSON_Delete(D.queued.v[i]);
  }
  D.queued.n = 0;
  if (D.round_pending) {
    D.round_pending = false;
    arm_batch();
  }
}

static void on_requeue(uv_timer_t *t) {
  (void)t;
  if (!D.batch_open && D.circuit_until <= wall()) plan_round();
}

static void on_batch(uv_timer_t *t) {
  (void)t;
  tm_stop(&D.idle);
  tm_stop(&D.max);
  D.batch_open = false;
  plan_round();
}

/* A change arrived: (re)start the idle window; the max window bounds it. */
void arm_batch(void) {
  tm_start(&D.idle, on_batch, D.idle_ms, 0);
  if (!D.batch_open) {
    D.batch_open = true;
    tm_start(&D.max, on_batch, D.max_ms, 0);
  }
}

/* ------------------------------------------------------------ reload */

void reload(const char *why) {
  if (!D.policy) return;
  if (D.planning) { /* the round on the thread pool holds the policy: it stops early, and the new
                    ** policy decides the round that follows */
    D.reload_pending = true;
    if (dt__policy_file_changed(D.policy)) D.cancel = 1;
    return;
  }
  dt_error err = {0};
  int changed = 0;
  char ts[40];
  dt__fmt_time(wall(), ts, sizeof ts);
  if (dt_policy_reload(D.policy, &changed, &err)) {
    D.reloads_failed++;
    snprintf(D.reload_result, sizeof D.reload_result, "%s: kept the previous policy: %s", ts, err.msg);
    logf_("error", "reload", "%s (%s): %s; the previous policy stays in force", D.policy_path, why, err.msg);
  } else if (changed) {
    D.reloads_ok++;
    snprintf(D.reload_result, sizeof D.reload_result, "%s: reloaded (hooks: %s)", ts, dt_policy_hooks(D.policy));
    logf_("info", "reload", "%s (%s): reloaded; hooks: %s", D.policy_path, why, dt_policy_hooks(D.policy));
  }
}

/* Take name out of a claim's nominated pods; true when it was there. A
** pod that leaves a node is a pod event (consolidateAfter counts again). */
static bool unnominate(const char *claim, const char *name) {
  cJSON *o = claim_get(claim);
  const char *cur = dt__jstr(jget(jget(o, "metadata"), "annotations"), DT_A_PODS);
  size_t n = strlen(name);
  bool found = false;
  dt_buf b = {0};
  for (const char *s = cur; s && *s;) {
    const char *e = strchr(s, ',');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    if (len == n && !memcmp(s, name, n)) {
      found = true;
    } else {
      if (b.len) dt__buf_putc(&b, ',');
      dt__buf_printf(&b, "%.*s", (int)len, s);
    }
    s = e ? e + 1 : NULL;
  }
  if (found && !b.oom) {
    set_annotation(o, DT_A_PODS, b.p ? b.p : "");
    pod_event(o);
    claim_put(claim, o);
  } else {
    cJSON_Delete(o);
  }
  dt__free(b.p);
  return found;
}

/* Delete a stored object as the API does: a NodeClaim's instance leaves the
** books, a Pod leaves the claim it was nominated to (claim, when the caller
** knows it, else every claim is looked at). */
bool forget(const char *key, const char *claim) {
  if (!obj_del(key)) return false;
  if (!strncmp(key, "NodeClaim//", 11)) {
    for (size_t i = 0; i < D.insts.n; i++)
      if (!strcmp(D.insts.v[i].claim, key + 11)) {
        inst_remove(i);
        break;
      }
  } else if (!strncmp(key, "Pod/", 4)) {
    const char *name = key + 4;
    if (claim && unnominate(claim, name)) return true;
    size_t n = strlen(name);
    DT_VEC(char *) holders = {0};
    for (size_t i = 0; i < D.objs.n; i++) {
      const obj *ob = &D.objs.v[i];
      if (strncmp(ob->key, "NodeClaim//", 11)) continue;
      for (const char *q = strstr(ob->json, name); q; q = strstr(q + 1, name))
        if ((q[-1] == '"' || q[-1] == ',') && (q[n] == '"' || q[n] == ',')) {
          char *c = dt__strdup(ob->key + 11);
          if (c && dt__vec_push(&holders, c)) dt__free(c);
          break;
        }
    }
    for (size_t i = 0; i < holders.n; i++) {
      unnominate(holders.v[i], name);
      dt__free(holders.v[i]);
    }
    dt__free(holders.v);
  }
  return true;
}

/* The policy's say on an interruption: "drain", "keep-offering" or "ignore"
** replace the built-in action (def). */
static const char *interruption_action(const char *kind, const instance *in, const char *state, const char *def) {
  static char act[32];
  snprintf(act, sizeof act, "%s", def);
  const dt_hook_field f[] = {{"kind", DT_HF_STRING, kind, 0},          {"instanceId", DT_HF_STRING, in->id, 0}, {"nodeClaim", DT_HF_STRING, in->claim, 0},
                             {"instanceType", DT_HF_STRING, in->type, 0}, {"zone", DT_HF_STRING, in->zone, 0},     {"capacityType", DT_HF_STRING, in->ct, 0},
                             {"state", DT_HF_STRING, state ? state : "", 0}};
  const dt_hook_rec ev = {f, 7};
  dt__policy_on_interruption(D.policy, &ev, act, sizeof act);
  return act;
}

/* One interruption event (already checked to carry detail-type and an
** instance id): ignored, noted, or the claim drained and replaced. */
void handle_event(cJSON *e, char *action, size_t n) {
  const char *dtype = dt__jstr(e, "detail-type");
  const cJSON *det = jget(e, "detail");
  const char *id = dt__jstr(det, "instance-id");
  const char *state = dt__jstr(det, "state");
  int at = -1;
  for (size_t i = 0; i < D.insts.n && at < 0; i++)
    if (!strcmp(D.insts.v[i].id, id)) at = (int)i;
  D.events++;
  char subj[300], reason[600];
  snprintf(subj, sizeof subj, "instance %s", id);
  if (at < 0) {
    snprintf(reason, sizeof reason, "%s for an instance this daemon did not launch; ignored", dtype);
    log_decision("event", subj, reason);
    snprintf(action, n, "ignored");
    return;
  }
  instance *in = &D.insts.v[at];
  bool spot = !strcmp(dtype, "EC2 Spot Instance Interruption Warning");
  bool drain = spot || !strcmp(dtype, "AWS Health Event") ||
               (!strcmp(dtype, "EC2 Instance State-change Notification") && state &&
                (!strcmp(state, "stopping") || !strcmp(state, "stopped") || !strcmp(state, "shutting-down") ||
                 !strcmp(state, "terminated")));
  snprintf(action, n, "noted");
  const char *kind = spot ? "spot-interruption" : !strcmp(dtype, "EC2 Instance Rebalance Recommendation") ? "rebalance"
                     : !strcmp(dtype, "AWS Health Event") ? "scheduled-change" : "state-change";
  const char *act = interruption_action(kind, in, state, drain ? (spot ? "drain" : "keep-offering") : "ignore");
  drain = strcmp(act, "ignore") != 0;
  if (!drain) {
    snprintf(reason, sizeof reason, "%s: no action%s", dtype,
             !strcmp(kind, "rebalance") ? " (as Karpenter)" : D.policy ? " (policy on_interruption)" : "");
    log_decision("event", subj, reason);
    return;
  }
  if (!strcmp(act, "drain") && (spot || strcmp(in->ct, "spot") == 0))
    mark_unavailable(in->ct, in->type, in->zone, spot ? "spot interruption warning" : dtype, D.ttl);
  char key[KEY_MAX + 16];
  snprintf(key, sizeof key, "NodeClaim//%s", in->claim);
  snprintf(reason, sizeof reason, "%s: drain NodeClaim %s and replace its pods", dtype, in->claim);
  log_decision("interruption", subj, reason);
  obj_del(key);
  inst_remove((size_t)at);
  snprintf(action, n, "replaced");
  journal_flush();
  arm_batch();
}

/* Everything the daemon holds, released (at a stop, or a start that fails). */
void ctl_free(void) {
  for (size_t i = 0; i < D.to_launch.n; i++) lc_done(D.to_launch.v[i]);
  dt__free(D.to_launch.v);
  for (size_t i = 0; i < D.objs.n; i++) {
    dt__free(D.objs.v[i].key);
    free(D.objs.v[i].json);
  }
  dt__free(D.objs.v);
  dt__symtab_free(&D.keys);
  dt__free(D.slot.v);
  for (size_t i = 0; i < D.insts.n; i++) inst_free(&D.insts.v[i]);
  dt__free(D.insts.v);
  for (size_t i = 0; i < D.replacing.n; i++) {
    dt__free(D.replacing.v[i].claim);
    dt__free(D.replacing.v[i].olds);
    dt__free(D.replacing.v[i].why);
  }
  dt__free(D.replacing.v);
  for (size_t i = 0; i < D.vm_actions.n; i++) dt__free(D.vm_actions.v[i].pool);
  dt__free(D.vm_actions.v);
  for (size_t i = 0; i < D.failing.n; i++) dt__free(D.failing.v[i].key);
  dt__free(D.failing.v);
  for (size_t i = 0; i < D.sim_ice.n; i++) dt__free(D.sim_ice.v[i]);
  dt__free(D.sim_ice.v);
  cJSON_Delete(D.decisions);
  for (size_t i = 0; i < D.queued.n; i++) cJSON_Delete(D.queued.v[i]);
  dt__free(D.queued.v);
  dt_free(D.last_plan);
  dt_free(D.last_pools);
  dt__free((char *)D.token);
  dt__free(D.jbuf.p);
  dt_policy_dir_free(D.pdir);
  dt_policy_free(D.policy);
  dt_catalog_free(D.cat);
  dt_catalog_free(D.next_cat);
  dt__free(D.vt.v);
  memset(&D, 0, sizeof D);
}

/* ------------------------------------------------------------ the virtual clock's driver */

int dt__ctl_start_virtual(const dt_ctl_config *c, dt_error *err) {
  ctl_free();
  D.virt = true;
  D.quiet = true;
  D.vnow = c->start_ms;
  D.idle_ms = c->idle_ms ? c->idle_ms : 1000;
  D.max_ms = c->max_ms ? c->max_ms : 10000;
  D.disrupt_ms = c->disrupt_ms;
  D.ttl = c->ttl_s ? c->ttl_s : 180;
  D.preempt_ttl = c->preempt_ttl_s ? c->preempt_ttl_s : 3600;
  D.unhealthy_s = c->unhealthy_s ? c->unhealthy_s : 300;
  D.startup_timeout_s = c->startup_timeout_s ? c->startup_timeout_s : 900;
  D.max_unhealthy = 100;
  D.max_unhealthy_pct = true;
  D.provider = "simulated";
  D.requeue_ms = REQUEUE_BASE_MS;
  D.packing = c->packing;
  D.cat = c->cat;
  D.policy = c->policy;
  D.cloud = c->cloud;
  D.obs = c->obs;
  D.start_seed = c->seed;
  D.jitter = c->seed;
  D.ready = true;
  D.decisions = cJSON_CreateArray();
  if (!D.decisions) return dt__err(err, DT_ENOMEM, "out of memory");
  if (c->policy_dir && dt_policy_dir_open(c->policy_dir, &D.pdir, err)) return err ? err->code : DT_EINVAL;
  if (D.disrupt_ms) tm_start(&D.disrupt, on_disrupt, D.disrupt_ms, D.disrupt_ms);
  return 0;
}

void dt__ctl_stop(void) {
  /* launches still waiting for the cloud's answer hold memory of their own */
  while (D.vt.n) {
    vtimer v = D.vt.v[--D.vt.n];
    if (v.cb == on_cloud_answer || v.cb == on_node_up) lc_free((uv_handle_t *)v.t);
  }
  D.cat = NULL;    /* borrowed */
  D.policy = NULL; /* borrowed */
  ctl_free();
}

int dt__ctl_apply(const cJSON *o, dt_error *err) {
  char key[KEY_MAX];
  const char *why;
  if (obj_key(o, key, sizeof key, &why)) return dt__err(err, DT_EINVAL, "%s", why);
  if (obj_put(key, o)) return dt__err(err, DT_ENOMEM, "out of memory storing %s", key);
  D.requeue_ms = REQUEUE_BASE_MS;
  arm_batch();
  return 0;
}

bool dt__ctl_delete(const char *key, const char *claim) {
  if (!forget(key, claim)) return false;
  if (strncmp(key, "Pod/", 4)) arm_batch(); /* a pod that goes leaves nothing to provision */
  return true;
}

void dt__ctl_event(cJSON *e, char *action, size_t n) { handle_event(e, action, n); }

size_t dt__ctl_count(const char *prefix) {
  size_t n = 0, len = strlen(prefix);
  for (size_t i = 0; i < D.objs.n; i++) n += !strncmp(D.objs.v[i].key, prefix, len);
  return n;
}

cJSON *dt__ctl_get(const char *key) {
  int at = obj_find(key);
  return at < 0 ? NULL : cJSON_Parse(D.objs.v[at].json);
}
