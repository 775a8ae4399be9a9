/*
** ctl_store.c: the controller's books. The object store (objects as JSON
** text by kind/namespace/name, found through an interned key map), the
** instances it launched, and the state file that keeps both across
** restarts: a snapshot plus an append-only journal, one fsync per batch.
*/
#define _GNU_SOURCE
#include "controller.h"
#include "httpc.h"
#include "model.h"
#include "store.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void journal_put(const char *key, const char *json);
static void journal_del(const char *op, const char *field, const char *v);

/*
** The object store: objects by key in a vector, found through an interned
** key -> slot map, so applying 20,000 objects one by one is linear. Keys of
** deleted objects stay interned (slot -1) until dead keys outnumber live
** ones; then the map is rebuilt.
*/
static int key_cmp(const void *a, const void *b) { return strcmp(((const obj *)a)->key, ((const obj *)b)->key); }

static void store_rehash(void) {
  dt__symtab_free(&D.keys);
  D.slot.n = 0;
  for (size_t i = 0; i < D.objs.n; i++) {
    dt_sym s = dt__sym(&D.keys, D.objs.v[i].key);
    while (!D.keys.oom && D.slot.n <= s)
      if (dt__vec_push(&D.slot, (int32_t)-1)) D.keys.oom = 1;
    if (!D.keys.oom) D.slot.v[s] = (int32_t)i;
    D.objs.v[i].sym = s;
  }
}

/* Put the store in key order when it is mostly in order already, as it is
** between rounds: objects put since the last sort sit at the end and a
** delete moved the last object into the hole (the slots it filled are
** kept in D.dirty). Those are set aside, the rest (in order since the last
** sort) is compacted to the front, and the few set aside are sorted and
** merged in from the back, each placed by a binary search: r log n key
** comparisons for r objects out of place rather than a sort's n log n or
** a pass comparing every neighbour. Keys are distinct, so the order is
** qsort's. False (nothing moved) when the set-aside part would be large or
** out of memory. */
static bool store_merge_sort(void) {
  obj *v = D.objs.v;
  size_t n = D.objs.n, clean = D.clean_n < n ? D.clean_n : n, r = n - clean;
  bool *dirty = dt__calloc(clean + 1, sizeof *dirty);
  if (!dirty) return false;
  for (size_t i = 0; i < D.dirty.n; i++)
    if (D.dirty.v[i] < clean && !dirty[D.dirty.v[i]]) {
      dirty[D.dirty.v[i]] = true;
      r++;
    }
  obj *rest = r <= n / 4 ? dt__malloc((r ? r : 1) * sizeof *rest) : NULL;
  if (!rest) { /* mostly out of order: a sort of the whole does better */
    dt__free(dirty);
    return false;
  }
  size_t k = 0, j = 0;
  for (size_t i = 0; i < clean; i++)
    if (dirty[i])
      rest[j++] = v[i];
    else
      v[k++] = v[i];
  for (size_t i = clean; i < n; i++) rest[j++] = v[i];
  dt__free(dirty);
  qsort(rest, r, sizeof *rest, key_cmp);
  for (size_t w = n, a = k, b = r; b--;) { /* from the back: the kept part's end is never overwritten early */
    size_t lo = 0, hi = a;                 /* the first kept object after rest[b] */
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (strcmp(v[mid].key, rest[b].key) > 0)
        hi = mid;
      else
        lo = mid + 1;
    }
    w -= a - lo;
    memmove(&v[w], &v[lo], (a - lo) * sizeof *v);
    a = lo;
    v[--w] = rest[b];
  }
  dt__free(rest);
  return true;
}

/* The store in key order (rounds are deterministic); the map follows the
** objects to their new slots by the symbols they keep. */
void store_sort(void) {
  if (!D.objs.n || D.sorted) return;
  if (!store_merge_sort()) qsort(D.objs.v, D.objs.n, sizeof *D.objs.v, key_cmp);
  D.clean_n = D.objs.n;
  D.dirty.n = 0;
  if (D.keys.oom) {
    store_rehash();
  } else {
    for (size_t i = 0; i < D.objs.n; i++) D.slot.v[D.objs.v[i].sym] = (int32_t)i;
  }
  D.sorted = true;
}

int obj_find(const char *key) {
  dt_sym s = dt__sym_find(&D.keys, key);
  int at = s && s < D.slot.n ? D.slot.v[s] : -1;
  assert(at < 0 || ((size_t)at < D.objs.n && !strcmp(D.objs.v[at].key, key))); /* the map points at its object */
  return at;
}

int obj_put_text(const char *key, char *json);

static uint8_t key_kind(const char *key) {
  if (!strncmp(key, "Pod/", 4)) return OBJ_POD;
  if (dt__podcache_keeps_node(key)) return OBJ_NODE;
  if (!strncmp(key, "UnavailableOffering/", 20)) return OBJ_MARK;
  if (!strncmp(key, "VirtualMachinePool/", 19)) return OBJ_VMPOOL;
  return OBJ_OTHER;
}

int obj_put(const char *key, const cJSON *o) {
  char *json = cJSON_PrintUnformatted(o);
  return json ? obj_put_text(key, json) : DT_ENOMEM;
}

/* ------------------------------------------------------------ nominations */

/* The values of every "dovetail.dev/pods" key in a claim's compact text,
** decoded and joined by commas, into b. The annotations' key is the one
** that counts; another of the name elsewhere only adds names, which a
** caller (unnominate) checks against the annotation itself. */
static void nom_names(const char *json, dt_buf *b) {
  static const char pat[] = "\"" DT_A_PODS "\":\"";
  for (const char *q = json ? strstr(json, pat) : NULL; q; q = strstr(q + 1, pat)) {
    const char *v = q + sizeof pat - 1, *e = v;
    bool esc = false;
    while (*e && *e != '"') {
      if (*e == '\\') {
        esc = true;
        if (e[1]) e++;
      }
      e++;
    }
    if (!*e) break;
    if (b->len) dt__buf_putc(b, ',');
    if (!esc) {
      dt__buf_putn(b, v, (size_t)(e - v));
      continue;
    }
    cJSON *str = cJSON_ParseWithLength(v - 1, (size_t)(e - v) + 2);
    if (cJSON_IsString(str)) dt__buf_puts(b, str->valuestring);
    cJSON_Delete(str);
  }
}

static void nom_add(const char *claim, const char *pod, size_t n) {
  int32_t at;
  if (D.nom_free) {
    at = D.nom_free - 1;
    D.nom_free = D.nom_e.v[at].next;
  } else {
    nom_entry z = {NULL, NULL, -1};
    if (dt__vec_push(&D.nom_e, z)) {
      D.nom_oom = true;
      return;
    }
    at = (int32_t)D.nom_e.n - 1;
  }
  nom_entry *e = &D.nom_e.v[at];
  e->pod = dt__strndup(pod, n);
  e->claim = dt__strdup(claim);
  bool added;
  int32_t *head = e->pod && e->claim ? dt__namemap_put(&D.nom, e->pod, n, -1, &added) : NULL;
  if (!head) {
    dt__free(e->pod);
    dt__free(e->claim);
    *e = (nom_entry){NULL, NULL, D.nom_free};
    D.nom_free = at + 1;
    D.nom_oom = true;
    return;
  }
  /* the new entry goes second, so the map's key stays the head's string */
  if (*head < 0) {
    *head = at;
    e->next = -1;
  } else {
    e->next = D.nom_e.v[*head].next;
    D.nom_e.v[*head].next = at;
  }
}

static void nom_remove(const char *claim, const char *pod, size_t n) {
  int32_t head = dt__namemap_get(&D.nom, pod, n, -1), prev = -1;
  for (int32_t at = head; at >= 0; prev = at, at = D.nom_e.v[at].next) {
    nom_entry *e = &D.nom_e.v[at];
    if (strcmp(e->claim, claim)) continue;
    int32_t next = e->next;
    if (prev >= 0) {
      D.nom_e.v[prev].next = next;
    } else { /* the head goes: the map is keyed by the next one's string, or drops the pod */
      dt__namemap_del(&D.nom, pod, n);
      if (next >= 0 && !dt__namemap_set(&D.nom, D.nom_e.v[next].pod, n, next)) D.nom_oom = true;
    }
    dt__free(e->pod);
    dt__free(e->claim);
    *e = (nom_entry){NULL, NULL, D.nom_free};
    D.nom_free = at + 1;
    return;
  }
}

/* Claim's nominations from the text old to the text new (either NULL). */
static void nom_update(const char *claim, const char *old, const char *new) {
  dt_buf a = {0}, b = {0};
  nom_names(old, &a);
  nom_names(new, &b);
  if (a.oom || b.oom) D.nom_oom = true;
  if (a.len != b.len || (a.len && memcmp(a.p, b.p, a.len))) {
    for (const char *s = a.p, *end = a.p + a.len; s && s < end;) {
      const char *c = memchr(s, ',', (size_t)(end - s));
      size_t len = c ? (size_t)(c - s) : (size_t)(end - s);
      if (len) nom_remove(claim, s, len);
      s = c ? c + 1 : NULL;
    }
    for (const char *s = b.p, *end = b.p + b.len; s && s < end;) {
      const char *c = memchr(s, ',', (size_t)(end - s));
      size_t len = c ? (size_t)(c - s) : (size_t)(end - s);
      bool dup = false; /* listed twice in one claim: one entry */
      for (int32_t at = dt__namemap_get(&D.nom, s, len, -1); len && at >= 0 && !dup; at = D.nom_e.v[at].next)
        dup = !strcmp(D.nom_e.v[at].claim, claim);
      if (len && !dup) nom_add(claim, s, len);
      s = c ? c + 1 : NULL;
    }
  }
  dt__free(a.p);
  dt__free(b.p);
}

bool nom_holders(const char *pod, char ***out, size_t *n) {
  *out = NULL;
  *n = 0;
  if (D.nom_oom) return false;
  size_t k = 0;
  for (int32_t at = dt__namemap_get(&D.nom, pod, strlen(pod), -1); at >= 0; at = D.nom_e.v[at].next) k++;
  if (!k) return true;
  char **v = dt__calloc(k, sizeof *v);
  if (!v) return false;
  for (int32_t at = dt__namemap_get(&D.nom, pod, strlen(pod), -1); at >= 0; at = D.nom_e.v[at].next)
    if (!(v[(*n)++] = dt__strdup(D.nom_e.v[at].claim))) {
      for (size_t i = 0; i < *n; i++) dt__free(v[i]);
      dt__free(v);
      *n = 0;
      return false;
    }
  *out = v;
  return true;
}

void nom_free_all(void) {
  for (size_t i = 0; i < D.nom_e.n; i++) {
    dt__free(D.nom_e.v[i].pod);
    dt__free(D.nom_e.v[i].claim);
  }
  dt__free(D.nom_e.v);
  memset(&D.nom_e, 0, sizeof D.nom_e);
  dt__namemap_free(&D.nom);
  memset(&D.nom, 0, sizeof D.nom);
  D.nom_free = 0;
  D.nom_oom = false;
}

/* A Node's spec.providerID, copied (from n, its parsed form, when the
** caller has read it; else from json); NULL for anything else or none. */
static char *node_pid(const char *key, const char *json, const cJSON *n) {
  if (strncmp(key, "Node//", 6)) return NULL;
  cJSON *o = n ? NULL : cJSON_Parse(json);
  const char *pid = dt__jstr(jget(n ? n : o, "spec"), "providerID");
  char *c = pid ? dt__strdup(pid) : NULL;
  cJSON_Delete(o);
  return c;
}

/* Store json (compact JSON from cJSON, which the store now owns) under key. */
int obj_put_text(const char *key, char *json) { return obj_put_node(key, json, NULL); }

/* ... with, for a Node the caller has read, its parsed form (n: its
** provider ID is taken from it, not read from json again). */
int obj_put_node(const char *key, char *json, const cJSON *n) {
  if (!strncmp(key, "Node//", 6)) D.seen_node = true;
  int at = obj_find(key);
  if (at >= 0 && !strcmp(D.objs.v[at].json, json)) {
    /* as stored: no change (a watcher's re-list of the whole cluster wrote it all to the journal
    ** again, and counted as a change of the cluster that a consolidated pass must look at again) */
    cJSON_free(json);
    return 0;
  }
  char *pid = node_pid(key, json, n);
  if (!strncmp(key, "NodeClaim//", 11)) nom_update(key + 11, at >= 0 ? D.objs.v[at].json : NULL, json);
  journal_put(key, json);
  D.store_changes++;
  if (at >= 0) {
    cJSON_free(D.objs.v[at].json);
    D.objs.v[at].json = json;
    D.objs.v[at].gen = ++D.obj_gen;
    dt__free(D.objs.v[at].pid);
    D.objs.v[at].pid = pid;
    return 0;
  }
  obj ob = {dt__strdup(key), json, ++D.obj_gen, 0, 0, 0, 0, 0, 0, 0, 0, key_kind(key), pid};
  dt_sym s = ob.sym = dt__sym(&D.keys, key);
  while (!D.keys.oom && D.slot.n <= s)
    if (dt__vec_push(&D.slot, (int32_t)-1)) D.keys.oom = 1;
  if (!ob.key || D.keys.oom || dt__vec_push(&D.objs, ob)) {
    dt__free(ob.key);
    dt__free(ob.pid);
    cJSON_free(json);
    return DT_ENOMEM;
  }
  D.slot.v[s] = (int32_t)(D.objs.n - 1);
  D.nkind[ob.kind]++;
  D.sorted = false;
  return 0;
}

bool obj_del(const char *key) {
  int at = obj_find(key);
  if (at < 0) return false;
  journal_del("del", "key", key);
  if (!strncmp(key, "NodeClaim//", 11)) nom_update(key + 11, D.objs.v[at].json, NULL);
  D.store_changes++;
  D.slot.v[dt__sym_find(&D.keys, key)] = -1;
  D.nkind[D.objs.v[at].kind]--;
  dt__free(D.objs.v[at].key);
  cJSON_free(D.objs.v[at].json);
  dt__free(D.objs.v[at].pid);
  D.objs.v[at] = D.objs.v[--D.objs.n];
  /* the last object fills the hole: the sorted part ends before it, and
  ** the hole is out of place (out of memory: all is sorted again) */
  if (D.clean_n > D.objs.n) D.clean_n = D.objs.n;
  if ((size_t)at < D.clean_n && dt__vec_push(&D.dirty, (uint32_t)at)) D.clean_n = 0;
  if ((size_t)at < D.objs.n) D.slot.v[dt__sym_find(&D.keys, D.objs.v[at].key)] = at;
  D.sorted = false;
  if (D.keys.n > 1024 && D.keys.n > 2 * D.objs.n) store_rehash();
  return true;
}

/* All objects as one manifest set (in key order, so rounds are deterministic). */
dt_manifests *manifests(dt_error *err) {
  store_sort();
  dt_manifests *m = dt_manifests_new();
  if (!m) {
    snprintf(err->msg, sizeof err->msg, "out of memory");
    return NULL;
  }
  for (size_t i = 0; i < D.objs.n; i++)
    if (dt_manifests_add_buffer(m, D.objs.v[i].key, D.objs.v[i].json, strlen(D.objs.v[i].json), err)) {
      /* as the rounds leave it out (and say so): the set rolled back what it read of it */
      if (err->code == DT_EINVAL && dt__obj_left_out(D.objs.v[i].key)) {
        err->code = 0;
        err->msg[0] = 0;
        continue;
      }
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
int journal_flush(void) {
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
  if (D.state_path && !tm_active(&D.state_timer)) tm_start(&D.state_timer, on_state_timer, 50, 0);
}

void inst_free(instance *in) {
  dt__free(in->id);
  dt__free(in->claim);
  dt__free(in->type);
  dt__free(in->zone);
  dt__free(in->ct);
  dt__free(in->pool);
}

/* The instances' indexes: looked up per listed instance, per poll, a scan
** of every instance held was quadratic (a 4,000-instance fleet held the
** loop for a second a poll). A map that ran out of memory stays so, and
** lookups then scan. */
static void inst_index(size_t i) {
  instance *in = &D.insts.v[i];
  bool added;
  dt__namemap_set(&D.inst_ids, in->id, strlen(in->id), (int32_t)i);
  int32_t *v = dt__namemap_put(&D.inst_claims, in->claim, strlen(in->claim), (int32_t)i, &added);
  if (v && !added) D.inst_claim_dups++;
}

/* The instance whose claim (by_claim) or id is s. */
static instance *inst_by(bool by_claim, const char *s) {
  const dt_namemap *m = by_claim ? &D.inst_claims : &D.inst_ids;
  if (!m->oom) {
    int32_t i = dt__namemap_get(m, s, strlen(s), -1);
    return i < 0 ? NULL : &D.insts.v[i];
  }
  for (size_t i = 0; i < D.insts.n; i++)
    if (!strcmp(by_claim ? D.insts.v[i].claim : D.insts.v[i].id, s)) return &D.insts.v[i];
  return NULL;
}

instance *inst_with_id(const char *id) { return inst_by(false, id); }

instance *inst_of(const char *claim) { return inst_by(true, claim); }

int add_instance(const char *id, const char *claim, const char *type, const char *zone, const char *ct,
                 const char *pool, double price, int64_t launched) {
  if (id && inst_with_id(id)) return 0; /* adopted by a poll while its launch reply was on the way */
  /* A provider may leave fields out (GET /instances without nodePool): an
  ** instance is only ever adopted with an id and a claim. */
  if (!id || !claim) return DT_EINVAL;
  instance in = {.id = dt__strdup(id),
                 .claim = dt__strdup(claim),
                 .type = dt__strdup(type ? type : ""),
                 .zone = dt__strdup(zone ? zone : ""),
                 .ct = dt__strdup(ct ? ct : ""),
                 .pool = dt__strdup(pool ? pool : ""),
                 .price = price,
                 .launched = launched,
                 .initialized = true,
                 .vouched = true};
  if (!in.id || !in.claim || !in.type || !in.zone || !in.ct || !in.pool || dt__vec_push(&D.insts, in)) {
    inst_free(&in);
    return DT_ENOMEM;
  }
  inst_index(D.insts.n - 1);
  journal_inst(&D.insts.v[D.insts.n - 1]);
  if (D.obs && D.obs->instance) D.obs->instance(D.obs->ud, true, in.id, in.claim, in.type, in.zone, in.ct, in.pool);
  return 0;
}

/* Forget instance i (swap-remove: indices after it move). */
void inst_remove(size_t i) {
  journal_del("uninst", "id", D.insts.v[i].id);
  const instance *in = &D.insts.v[i];
  if (D.obs && D.obs->instance)
    D.obs->instance(D.obs->ud, false, in->id, in->claim, in->type, in->zone, in->ct, in->pool);
  size_t last = D.insts.n - 1, idl = strlen(in->id), cl = strlen(in->claim);
  dt__namemap_del(&D.inst_ids, in->id, idl);
  bool claim_here = dt__namemap_get(&D.inst_claims, in->claim, cl, -1) == (int32_t)i;
  if (claim_here) dt__namemap_del(&D.inst_claims, in->claim, cl);
  char *claim = D.inst_claim_dups && claim_here ? dt__strdup(in->claim) : NULL;
  inst_free(&D.insts.v[i]);
  D.insts.v[i] = D.insts.v[last];
  D.insts.n = last;
  if (i < last) { /* the last instance moved to i */
    const instance *mv = &D.insts.v[i];
    size_t ml = strlen(mv->claim);
    dt__namemap_set(&D.inst_ids, mv->id, strlen(mv->id), (int32_t)i);
    if (dt__namemap_get(&D.inst_claims, mv->claim, ml, -1) == (int32_t)last)
      dt__namemap_set(&D.inst_claims, mv->claim, ml, (int32_t)i);
  }
  for (size_t j = 0; claim && j < D.insts.n; j++) /* another instance of that claim takes the key */
    if (!strcmp(D.insts.v[j].claim, claim)) {
      dt__namemap_set(&D.inst_claims, D.insts.v[j].claim, strlen(claim), (int32_t)j);
      break;
    }
  dt__free(claim);
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
    const instance *gone = inst_with_id(dt__jstr(r, "id"));
    if (gone) inst_remove((size_t)(gone - D.insts.v));
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
    bool bad = !r || dt__json_dup(r, NULL, 0) || replay_one(r);
    cJSON_Delete(r);
    if (bad && !D.recover) {
      rc = dt__err(err, DT_EINVAL,
                   "%s:%zu: a damaged record; nothing was changed. Start with --recover to keep the "
                   "%zu records before it and drop the rest",
                   path, line, applied);
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

/* One instance of the snapshot, at index at: held, when its NodeClaim is
** among the objects read. */
static int load_instance(const char *path, const cJSON *o, size_t at, dt_error *err) {
  const char *claim = dt__jstr(o, "claim");
  if (!claim_stored(claim))
    /* The daemon drops a claim and its instance together, so a snapshot
    ** never holds one without the other: this file was cut or edited, and
    ** read on, the instance would be deleted as an orphan at the first poll. */
    return dt__err(err, DT_EINVAL,
                   "%s: instances[%zu] (%s) belongs to NodeClaim %s, which is not among the state's objects: the "
                   "file is damaged; nothing was started (its instances would be deleted as orphans)",
                   path, at, dt__jstr(o, "id") ? dt__jstr(o, "id") : "?", claim ? claim : "?");
  add_instance(dt__jstr(o, "id"), claim, dt__jstr(o, "instanceType"), dt__jstr(o, "zone"), dt__jstr(o, "capacityType"),
               dt__jstr(o, "nodePool"), cJSON_GetNumberValue(jget(o, "price")),
               dt__to_i64(cJSON_GetNumberValue(jget(o, "launched"))));
  return 0;
}

/*
** The snapshot as the daemon writes it ({"objects": [...], "instances":
** [...]}) is read an item at a time: the tree of a 64 MB snapshot of 200,000
** objects took 1.1 GB, its items one by one take what the store keeps. An
** item that does not parse, or is not what dt__state_check wants, sends the
** file to be read whole, which says what and where exactly.
*/
typedef struct snap_read {
  const char *path;
  dt_error *err;
  int rc;     /* DT_ENOMEM, or an instance's claim missing: said as it is */
  bool whole; /* read the file whole for the error */
} snap_read;

static int snap_item(void *arg, size_t key, size_t index, const char *item, size_t n) {
  snap_read *s = arg;
  cJSON *o = NULL;
  dt_error e = {0};
  int rc = dt__json_parse_one(s->path, item, n, &o, &e);
  if (rc == DT_ENOMEM) {
    s->rc = dt__err(s->err, DT_ENOMEM, "%s: out of memory", s->path);
    return -1;
  }
  char k[KEY_MAX];
  bool ok = !rc && (key == 0 ? !dt__state_object_why(o, k, sizeof k) : !dt__state_instance_missing(o));
  if (!ok) {
    s->whole = true;
  } else if (key == 0) {
    if (obj_put(k, o)) s->rc = dt__err(s->err, DT_ENOMEM, "%s: out of memory", s->path);
  } else {
    s->rc = load_instance(s->path, o, index, s->err);
  }
  cJSON_Delete(o);
  return s->whole || s->rc ? -1 : 0;
}

/* The snapshot read whole: what dt__state_check finds wrong stops the start. */
static int load_whole(const char *path, const char *text, size_t len, dt_error *err) {
  cJSON *root = NULL;
  int rc = dt__json_parse_one(path, text, len, &root, err);
  if (rc && rc != DT_ENOMEM) {
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", err->msg);
    return dt__err(err, DT_EINVAL, "%s; not a dovetail state file: nothing was started", why);
  }
  if (rc) return rc;
  rc = dt__state_check(path, root, err);
  const cJSON *objs = rc ? NULL : jget(root, "objects"), *insts = rc ? NULL : jget(root, "instances"), *o;
  size_t at = 0;
  cJSON_ArrayForEach(o, objs) {
    char key[KEY_MAX];
    const char *why;
    if (!obj_key(o, key, sizeof key, &why)) obj_put(key, o);
  }
  cJSON_ArrayForEach(o, insts) {
    if ((rc = load_instance(path, o, at++, err))) break;
  }
  cJSON_Delete(root);
  return rc;
}

/* Read the state back. A file whose shape is wrong stops the start: read as
** empty, it would make every running instance look like an orphan. The
** sim provider's instance list is the state's own, so reconciling adopts
** every instance whose claim is in the store and forgets the rest. What the
** snapshot holds is on disk already: it is not written to the journal again. */
int load_state(dt_error *err) {
  if (!D.state_path || access(D.state_path, F_OK)) return 0;
  char *text;
  size_t len;
  if (dt__read_file(D.state_path, &text, &len, err)) return DT_EIO;
  /* Read as strictly as a manifest: text after the document, or a key
  ** twice (`"objects": [], "objects": [...]` read the first, empty, list),
  ** stops the start, never read as less than the file says. */
  static const char *const keys[] = {"objects", "instances"};
  snap_read s = {D.state_path, err, 0, false};
  D.replaying = true;
  int how = dt__json_arrays_each(text, len, keys, 2, snap_item, &s);
  int rc = s.rc;
  if (!rc && how != 1) rc = load_whole(D.state_path, text, len, err); /* puts again what it puts: the same */
  D.replaying = false;
  dt__free(text);
  if (rc) return rc;
#ifdef __GLIBC__
  malloc_trim(0); /* the parse's garbage back to the system, not kept for the life of the daemon */
#endif
  D.state_valid = true;
  rc = replay(err);
  if (rc) return rc;
  for (size_t i = 0; i < D.insts.n;) { /* instances whose claim the journal deleted are forgotten, and said so */
    if (!claim_stored(D.insts.v[i].claim)) {
      logf_("warn", "state", "instance %s: its NodeClaim %s was deleted (journal); it is no longer held",
            D.insts.v[i].id, D.insts.v[i].claim);
      inst_remove(i);
    } else
      i++;
  }
  /* A claim that had not initialized when the daemon stopped (no Initialized
  ** condition) waits for its Node again, its startup timeout counted from
  ** its launch. */
  for (size_t i = 0; i < D.insts.n && awaits_node(); i++) {
    cJSON *k = claim_get(D.insts.v[i].claim);
    D.insts.v[i].initialized = cond_true(k, "Initialized");
    cJSON_Delete(k);
  }
  logf_("info", "state", "read %s: %zu objects, %zu instances", D.state_path, D.objs.n, D.insts.n);
  return 0;
}

void arm_batch(void);

/* The Node registered for a claim: by name, or by the provider ID that ends
** with its instance id. */
const instance *node_instance(const cJSON *node) {
  const char *name = dt__jstr(jget(node, "metadata"), "name");
  const char *pid = dt__jstr(jget(node, "spec"), "providerID");
  const instance *in = name ? inst_of(name) : NULL;
  for (const char *s = pid ? strchr(pid, '/') : NULL; s && !in; s = strchr(s + 1, '/')) in = inst_with_id(s + 1);
  return in;
}
