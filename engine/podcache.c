/*
** podcache.c: parsed pods kept from one manifest set to the next. The
** controller reads its whole store into a dt_manifests every round; most
** objects are pods whose text has not changed since the last round, and
** reading them (JSON, then the pod reader) was most of a round's work. A
** pod read once is kept here, by object name and the version the caller
** gave its text, and a later set that meets the same name and version adds
** the parsed pod instead of reading the text again. Nodes and NodeClaims
** are kept the same way (their dt_node), under the same rules; a
** NodeClaim whose new text differs from the kept one only in its nominated
** pods and last pod event (the places the caller says) is the kept node
** with those two values read again (add_patched).
**
** What a set holds is what dt_manifests_add_buffer would give, byte for
** byte: an object is kept only when reading it added exactly one pod (or
** node), one sequence number and one duplicate-detection entry, and nothing else (no
** note, no other object, no VM default); adding it from here takes the next
** sequence number, records the duplicate entry and counts the pod against
** DT_MAX_PODS as the reader does. A set that would refuse it (a duplicate,
** the pod limit) reads the kept text instead, so the error is the reader's.
**
** Ownership: a set borrows a kept pod (its podspec is marked borrowed and
** dt_manifests_free leaves it), so the cache must outlive every set that
** used it. dt__podcache_sweep drops what no add used since the last sweep;
** call it when the sets made before that are freed.
*/
#include "model.h"

#include <stdlib.h>
#include <string.h>

typedef struct pc_entry {
  uint64_t gen;
  bool live;
  bool is_node; /* keeps a Node or NodeClaim (node), else a Pod (pod) */
  char *file;   /* the object name: the kept pod's file */
  char *seen;   /* its duplicate-detection key, "Pod/ns/name" as the reader makes it */
  size_t seen_len;
  dt_sym seen_sym; /* the key's symbol in the cache's keys (0: none) */
  char *text;      /* what was read, for a set that must read it again */
  size_t len;
  /* A NodeClaim's text: where its nominated pods and last pod event are
  ** (dt__manifests_add_cached's spans), when the caller knew them */
  bool has_spans;
  uint32_t span[4];
  dt_podspec pod;
  dt_node node;
} pc_entry;

/* The reader's duplicate-detection key of a pod (mf_check_duplicate). */
static char *seen_key(const dt_podspec *p) {
  char key[600];
  snprintf(key, sizeof key, "Pod/%s/%s", p->ns ? p->ns : "", p->name);
  return dt__strdup(key);
}

/* A node's: "Node//name" or "NodeClaim//name" (cluster-scoped). */
static char *node_seen_key(const dt_node *n) {
  char key[600];
  snprintf(key, sizeof key, "%s//%s", n->kind, n->name);
  return dt__strdup(key);
}

struct dt_podcache {
  dt_symtab names; /* object name -> entry (by symbol) */
  /* The kept objects' duplicate-detection keys: a new set starts with their
  ** table (its strings borrowed), so adding a kept object interns nothing.
  ** Remade from the live entries at a sweep once mostly dropped keys; the
  ** table before stays until the next remake, for the set that borrowed it. */
  dt_symtab keys, keys_prev;
  DT_VEC(pc_entry) by_sym; /* indexed by name symbol */
  /* by name symbol: an add used the entry since the last sweep (apart from
  ** the entries, so that a sweep reads bytes, not every entry) */
  DT_VEC(uint8_t) used;
  DT_VEC(uint32_t) live; /* symbols of the live entries */
  /* Kept pods' shapes (dt_podspec.shape): signature -> number. Made again
  ** from the live pods once mostly dropped shapes; a set's pods all carry
  ** numbers of one table (the sweep that remakes it runs between sets). */
  dt_symtab shapes;
  /* Kept Pods' "ns/name" and kept nodes' pods (dt_podspec.name_id,
  ** dt_node.pod_ids). Made again from the live entries once mostly dropped
  ** names; the node arrays it replaces are the set's of that sweep, freed
  ** at the next sweep (retired). */
  dt_symtab podnames;
  DT_VEC(uint32_t *) retired;
  uint32_t epoch; /* changes when names get new symbols (renumber); never 0 */
};

dt_podcache *dt__podcache_new(void) {
  dt_podcache *c = dt__calloc(1, sizeof(dt_podcache));
  if (c) c->epoch = 1;
  return c;
}

static void entry_drop(pc_entry *e) {
  if (!e->live) return;
  if (e->is_node) {
    dt__free(e->node.pod_ids);
    dt__mf_node_free(&e->node);
  } else {
    dt__mf_pod_free(&e->pod);
  }
  dt__free(e->file);
  dt__free(e->seen);
  dt__free(e->text);
  memset(e, 0, sizeof *e);
}

void dt__podcache_free(dt_podcache *c) {
  if (!c) return;
  for (size_t i = 0; i < c->live.n; i++) entry_drop(&c->by_sym.v[c->live.v[i]]);
  dt__free(c->by_sym.v);
  dt__free(c->used.v);
  dt__free(c->live.v);
  dt__symtab_free(&c->names);
  dt__symtab_free(&c->keys);
  dt__symtab_free(&c->keys_prev);
  dt__symtab_free(&c->shapes);
  dt__symtab_free(&c->podnames);
  for (size_t i = 0; i < c->retired.n; i++) dt__free(c->retired.v[i]);
  dt__free(c->retired.v);
  dt__free(c);
}

bool dt__podcache_keeps_node(const char *name) {
  return !strncmp(name, "Node/", 5) || !strncmp(name, "NodeClaim/", 10);
}

uint32_t dt__podcache_find(const dt_podcache *c, const char *name, uint64_t gen) {
  dt_sym s = c ? dt__sym_find(&c->names, name) : 0;
  return s && s < c->by_sym.n && c->by_sym.v[s].live && c->by_sym.v[s].gen == gen ? s : 0;
}

/* A symbol stands for one name until renumber, which changes the epoch. */
uint32_t dt__podcache_find_hinted(const dt_podcache *c, const char *name, uint64_t gen, uint32_t *hint,
                                  uint32_t *epoch) {
  if (!c) return 0;
  dt_sym s = *hint && *epoch == c->epoch ? *hint : dt__sym_find(&c->names, name);
  *hint = s;
  *epoch = s ? c->epoch : 0;
  return s && s < c->by_sym.n && c->by_sym.v[s].live && c->by_sym.v[s].gen == gen ? s : 0;
}

void dt__podcache_prefetch(const dt_podcache *c, uint32_t kept, bool whole) {
  if (!c || !kept || kept >= c->by_sym.n) return;
  const char *a = (const char *)&c->by_sym.v[kept], *b = a + (whole ? sizeof(pc_entry) : 1);
  for (; a < b; a += 64) __builtin_prefetch(a);
}

/* Add e's pod to m as the pod reader would; 1 when m would refuse it
** (the caller reads the text, for the reader's error). */
static int add_kept(dt_manifests *m, dt_podcache *c, pc_entry *e) {
  if (!e->is_node && m->npods + 1 > DT_MAX_PODS) return 1;
  uint32_t had = m->seen.n; /* one lookup: a symbol below it was there before */
  /* a set started with the cache's keys (this very table) has the entry's symbol */
  dt_sym s = e->seen_sym;
  if (!s || s >= m->seen.nborrowed || s >= c->keys.n || m->seen.str[s] != c->keys.str[s])
    s = dt__symn(&m->seen, e->seen, e->seen_len);
  if (!s) return DT_ENOMEM;
  if (s < had && s < m->seen_file.n && m->seen_file.v[s]) return 1;
  while (m->seen_file.n <= s)
    if (dt__vec_push(&m->seen_file, (const char *)NULL)) return DT_ENOMEM;
  if (e->is_node) {
    dt_node n = e->node;
    n.seq = m->seq;
    n.borrowed = true;
    if (dt__vec_push(&m->nodes, n)) return DT_ENOMEM;
  } else {
    dt_podspec p = e->pod;
    p.seq = m->seq;
    p.borrowed = true;
    if (dt__vec_push(&m->pods, p)) return DT_ENOMEM;
    m->npods++;
  }
  m->seen_file.v[s] = e->file;
  m->seq++;
  c->used.v[e - c->by_sym.v] = 1;
  return 0;
}

/* What m holds, to tell what reading one object added. */
typedef struct counts {
  size_t pools, pods, nodes, daemonsets, rcs, marks, vmpools, vms, volumes, pdbs, topo, notes, seq;
  int64_t npods;
  const char *varch;
} counts;

static counts count(const dt_manifests *m) {
  return (counts){m->pools.n, m->pods.n,    m->nodes.n, m->daemonsets.n, m->runtime_classes.n,
                  m->marks.n, m->vmpools.n, m->vms.n,   m->volumes.n,    m->pdbs.n,
                  m->topo.n,  m->notes.len, m->seq,     m->npods,        m->vm_default_arch};
}

/* Whether reading one object took a before to a after by one plain pod. */
static bool one_pod(const counts *a, const counts *b) {
  return b->pods == a->pods + 1 && b->npods == a->npods + 1 && b->seq == a->seq + 1 && b->pools == a->pools &&
         b->nodes == a->nodes && b->daemonsets == a->daemonsets && b->rcs == a->rcs && b->marks == a->marks &&
         b->vmpools == a->vmpools && b->vms == a->vms && b->volumes == a->volumes && b->pdbs == a->pdbs &&
         b->topo == a->topo && b->notes == a->notes && b->varch == a->varch;
}

/* Whether reading one object took a before to a after by one plain node. */
static bool one_node(const counts *a, const counts *b) {
  return b->nodes == a->nodes + 1 && b->pods == a->pods && b->npods == a->npods && b->seq == a->seq + 1 &&
         b->pools == a->pools && b->daemonsets == a->daemonsets && b->rcs == a->rcs && b->marks == a->marks &&
         b->vmpools == a->vmpools && b->vms == a->vms && b->volumes == a->volumes && b->pdbs == a->pdbs &&
         b->topo == a->topo && b->notes == a->notes && b->varch == a->varch;
}

/* The pod's requests as indices of the four resources every plan begins
** with (plan_begin's order), when they name no other. */
static void base_requests(dt_podspec *p) {
  static const char *const base[4] = {"cpu", "memory", "pods", "ephemeral-storage"};
  p->nbase = 0;
  if (!p->requests.n || p->requests.n > 4) return;
  for (size_t i = 0; i < p->requests.n; i++) {
    int k = 0;
    while (k < 4 && strcmp(p->requests.v[i].name, base[k])) k++;
    if (k == 4) return;
    p->base_k[i] = (uint8_t)k;
    p->base_milli[i] = p->requests.v[i].milli;
  }
  p->nbase = (uint8_t)p->requests.n;
}

/* Whether a pod compiles by its shape alone: nothing but its namespace,
** labels, node selector and tolerations (and requests) to read. */
static bool has_shape(const dt_podspec *p) {
  return !(p->nterms || p->npref || p->naff || p->nanti || p->npaff || p->npanti || p->nspread || p->nports ||
           p->npvcs || p->vm_arch);
}

/* A pod's shape signature, when it has one: what compiling its spec and,
** with its requests, its unrelaxed class reads of it. */
bool dt__pod_shape_sig(const dt_podspec *p, dt_buf *b) {
  if (!has_shape(p)) return false;
  dt__pod_base_sig(p, b);
  return !b->oom;
}

void dt__sig_kvs(dt_buf *b, const dt_kvs *kv) {
  dt__sig_u32(b, (uint32_t)kv->n);
  for (size_t i = 0; i < kv->n; i++) {
    dt__sig_str(b, kv->v[i].key);
    dt__sig_str(b, kv->v[i].val);
  }
}

void dt__sig_mreqs(dt_buf *b, const dt_mreqs *r) {
  dt__sig_u32(b, (uint32_t)r->n);
  for (size_t i = 0; i < r->n; i++) {
    const dt_mreq *m = &r->v[i];
    dt__sig_str(b, m->key);
    dt__sig_u32(b, (uint32_t)m->op);
    dt__sig_i64(b, m->min_values);
    dt__sig_u32(b, (uint32_t)m->n);
    for (size_t k = 0; k < m->n; k++) dt__sig_str(b, m->vals[k]);
  }
}

void dt__sig_tols(dt_buf *b, const dt_podspec *p) {
  dt__sig_u32(b, (uint32_t)p->ntol);
  for (size_t i = 0; i < p->ntol; i++) {
    dt__sig_str(b, p->tol[i].key);
    dt__sig_str(b, p->tol[i].op);
    dt__sig_str(b, p->tol[i].value);
    dt__sig_str(b, p->tol[i].effect);
  }
}

void dt__pod_base_sig(const dt_podspec *p, dt_buf *b) {
  dt__sig_str(b, p->ns);
  dt__sig_kvs(b, &p->labels);
  dt__sig_kvs(b, &p->node_selector);
  dt__sig_tols(b, p);
}

static bool str_eq(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

static bool kvs_eq(const dt_kvs *a, const dt_kvs *b) {
  if (a->n != b->n) return false;
  for (size_t i = 0; i < a->n; i++)
    if (!str_eq(a->v[i].key, b->v[i].key) || !str_eq(a->v[i].val, b->v[i].val)) return false;
  return true;
}

/* Whether p has the signature of e, which has one, compared field by field
** as dt__pod_shape_sig writes them. */
bool dt__pod_same_shape(const dt_podspec *p, const dt_podspec *e) {
  if (!has_shape(p) || p->ntol != e->ntol || !str_eq(p->ns, e->ns) || !kvs_eq(&p->labels, &e->labels) ||
      !kvs_eq(&p->node_selector, &e->node_selector))
    return false;
  for (size_t i = 0; i < p->ntol; i++)
    if (!str_eq(p->tol[i].key, e->tol[i].key) || !str_eq(p->tol[i].op, e->tol[i].op) ||
        !str_eq(p->tol[i].value, e->tol[i].value) || !str_eq(p->tol[i].effect, e->tol[i].effect))
      return false;
  return true;
}

static uint32_t shape_of(dt_symtab *shapes, const dt_podspec *p) {
  dt_buf b = {0};
  uint32_t s = dt__pod_shape_sig(p, &b) && b.p ? dt__symn(shapes, b.p, b.len) : 0;
  dt__free(b.p);
  return s;
}

/* A Pod's "ns/name" in the name table, as a plan writes it (dt__pod_name,
** whose 600-byte buffer holds it whole); 0 for a workload, a name that
** long, or out of memory. */
static uint32_t pod_name_id(dt_symtab *names, const dt_podspec *p) {
  if (p->owner || !p->ns || !p->name) return 0;
  size_t a = strlen(p->ns), b = strlen(p->name);
  if (a + b + 2 > 600) return 0;
  char key[600];
  memcpy(key, p->ns, a);
  key[a] = '/';
  memcpy(key + a + 1, p->name, b);
  return dt__symn(names, key, a + 1 + b);
}

/* A node's pods in the name table; NULL when it has none or out of memory.
** A name that the node's last version (was, its numbers of this table)
** has at the place the walk reached, or one further (a pod that left),
** takes that number without a lookup. */
static uint32_t *node_pod_ids(dt_symtab *names, const dt_node *n, const dt_node *was) {
  if (!n->npods) return NULL;
  uint32_t *ids = dt__malloc(n->npods * sizeof *ids);
  size_t j = 0, wn = was && was->pod_ids ? was->npods : 0;
  for (size_t k = 0; ids && k < n->npods; k++) {
    if (j < wn && !strcmp(was->pods[j], n->pods[k])) {
      ids[k] = was->pod_ids[j++];
      continue;
    }
    if (j + 1 < wn && !strcmp(was->pods[j + 1], n->pods[k])) {
      ids[k] = was->pod_ids[j + 1];
      j += 2;
      continue;
    }
    if (!(ids[k] = dt__sym(names, n->pods[k]))) {
      dt__free(ids);
      ids = NULL;
    }
  }
  return ids;
}

/* Keep the pod (or node) that reading name's text just added to m. */
static int keep(dt_podcache *c, dt_manifests *m, bool is_node, const char *name, uint64_t gen, const char *buf,
                size_t len, const uint32_t *spans) {
  dt_sym s = dt__sym(&c->names, name);
  if (!s) return DT_ENOMEM;
  while (c->by_sym.n <= s) {
    pc_entry z;
    memset(&z, 0, sizeof z);
    if (dt__vec_push(&c->by_sym, z)) return DT_ENOMEM;
  }
  while (c->used.n < c->by_sym.n)
    if (dt__vec_push(&c->used, (uint8_t)0)) return DT_ENOMEM;
  pc_entry *e = &c->by_sym.v[s];
  bool was_live = e->live;
  dt_podspec *p = is_node ? NULL : &m->pods.v[m->pods.n - 1];
  dt_node *n = is_node ? &m->nodes.v[m->nodes.n - 1] : NULL;
  /* the node's names numbered before its last version goes: they are
  ** mostly that version's (pods nominated to it, or one that left) */
  if (n) n->pod_ids = node_pod_ids(&c->podnames, n, was_live && e->is_node ? &e->node : NULL);
  entry_drop(e);
  e->file = dt__strdup(name);
  e->seen = is_node ? node_seen_key(n) : seen_key(p);
  e->text = dt__malloc(len + 1);
  if (!e->file || !e->seen || !e->text || (!was_live && dt__vec_push(&c->live, (uint32_t)s))) {
    dt__free(e->file);
    dt__free(e->seen);
    dt__free(e->text);
    memset(e, 0, sizeof *e);
    if (n) { /* the set's node stays its own, without numbers */
      dt__free(n->pod_ids);
      n->pod_ids = NULL;
    }
    if (was_live) { /* no longer live: out of the live list */
      for (size_t i = 0; i < c->live.n; i++)
        if (c->live.v[i] == s) c->live.v[i] = c->live.v[--c->live.n];
    }
    return DT_ENOMEM;
  }
  e->seen_len = strlen(e->seen);
  e->seen_sym = dt__symn(&c->keys, e->seen, e->seen_len); /* 0 when out of memory: looked up then */
  memcpy(e->text, buf, len);
  e->text[len] = 0;
  e->len = len;
  e->gen = gen;
  e->live = true;
  c->used.v[s] = 1;
  e->is_node = is_node;
  e->has_spans = is_node && spans;
  if (e->has_spans) memcpy(e->span, spans, sizeof e->span);
  if (is_node) {
    e->node = *n;
    e->node.file = e->file;
    n->borrowed = true; /* the cache owns it now; the set keeps its file */
  } else {
    base_requests(p);
    p->shape = shape_of(&c->shapes, p); /* 0 when out of memory: compiled in full */
    p->name_id = pod_name_id(&c->podnames, p);
    e->pod = *p;
    e->pod.file = e->file;
    p->borrowed = true;
  }
  return 0;
}

/* A set's first add starts its duplicate-detection keys as the cache's
** (borrowed, unused: a key is a duplicate once a file is recorded for it). */
static int start_set(dt_manifests *m, const dt_podcache *c) {
  if (m->seen.n || c->keys.n < 2 || c->keys.oom) return 0;
  if (dt__symtab_clone(&m->seen, &c->keys)) return DT_ENOMEM;
  if (dt__vec_grow((void **)&m->seen_file.v, &m->seen_file.cap, m->seen.n, sizeof *m->seen_file.v)) return DT_ENOMEM;
  memset(m->seen_file.v, 0, m->seen.n * sizeof *m->seen_file.v);
  m->seen_file.n = m->seen.n;
  return 0;
}

/* Whether t[0..n) has spans sp in order (pods before the event, or after)
** within it; a, e: the first span, then the second. */
static bool spans_order(const uint32_t *sp, size_t n, uint32_t *a, uint32_t *e) {
  bool pods_first = sp[0] < sp[2];
  a[0] = pods_first ? sp[0] : sp[2], e[0] = pods_first ? sp[1] : sp[3];
  a[1] = pods_first ? sp[2] : sp[0], e[1] = pods_first ? sp[3] : sp[1];
  return a[0] <= e[0] && e[0] <= a[1] && a[1] <= e[1] && e[1] <= n;
}

static bool plain(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == '"' || s[i] == '\\') return false;
  return true;
}

/* The pods annotation's entries as the node reader takes them (mf_node:
** split at commas, spaces trimmed, empty entries skipped); false when an
** entry is not "namespace/name" (the reader's error, left to the reader)
** or out of memory. An entry that the node's last version (was) has where
** the walk reached, or one further (a pod that left), takes that string:
** taken[j] marks was->pods[j] as moved to the new list. */
static bool parse_pods(const char *v, size_t n, const dt_node *was, bool *taken, char ***out, size_t *nout) {
  const char *end = v + n;
  size_t room = 0, np = 0, j = 0;
  for (const char *s = v; s < end; s++) room += *s == ',';
  char **pods = n ? dt__malloc((room + 1) * sizeof *pods) : NULL;
  bool *fresh = n ? dt__calloc(room + 1, sizeof *fresh) : NULL; /* strings made here, not taken */
  bool ok = !n || (pods && fresh);
  for (const char *s = v; ok && s < end;) {
    const char *e = memchr(s, ',', (size_t)(end - s));
    size_t len = e ? (size_t)(e - s) : (size_t)(end - s);
    while (len && (*s == ' ')) s++, len--;
    while (len && s[len - 1] == ' ') len--;
    if (len) {
      size_t at = j < was->npods && !strncmp(was->pods[j], s, len) && !was->pods[j][len]               ? j
                  : j + 1 < was->npods && !strncmp(was->pods[j + 1], s, len) && !was->pods[j + 1][len] ? j + 1
                                                                                                       : SIZE_MAX;
      if (at != SIZE_MAX) { /* the same string as before: it holds a '/' */
        pods[np++] = was->pods[at];
        taken[at] = true;
        j = at + 1;
      } else {
        ok = memchr(s, '/', len) && (pods[np] = dt__strndup(s, len));
        fresh[np] = ok;
        np += ok;
      }
    }
    s = e ? e + 1 : end;
  }
  if (!ok) {
    for (size_t i = 0; i < np; i++)
      if (fresh[i]) dt__free(pods[i]);
    memset(taken, 0, was->npods * sizeof *taken);
    dt__free(pods);
    dt__free(fresh);
    return false;
  }
  dt__free(fresh);
  *out = pods;
  *nout = np;
  return true;
}

/*
** A NodeClaim's text changes mostly in two values: its nominated pods and
** its last pod event (the controller writes them into known places of the
** text, ctl_claims.c). When the kept claim's text and the new one are the
** same outside those places, reading the new one would give the kept node
** with only those two values read again: the kept node is patched instead
** of the text being read. 1: not such a change (or out of memory), the
** caller reads the text.
*/
static int add_patched(dt_manifests *m, dt_podcache *c, const char *name, uint64_t gen, const char *buf, size_t len,
                       const uint32_t *spans) {
  dt_sym s = dt__sym_find(&c->names, name);
  pc_entry *e = s && s < c->by_sym.n ? &c->by_sym.v[s] : NULL;
  uint32_t oa[2], oe[2], na[2], ne[2];
  if (!e || !e->live || !e->is_node || !e->has_spans || !spans_order(e->span, e->len, oa, oe) ||
      !spans_order(spans, len, na, ne) || (e->span[0] < e->span[2]) != (spans[0] < spans[2]))
    return 1;
  /* the text around and between the two values, byte for byte */
  if (oa[0] != na[0] || oa[1] - oe[0] != na[1] - ne[0] || e->len - oe[1] != len - ne[1] ||
      memcmp(e->text, buf, na[0]) || memcmp(e->text + oe[0], buf + ne[0], na[1] - ne[0]) ||
      memcmp(e->text + oe[1], buf + ne[1], len - ne[1]))
    return 1;
  const char *pv = buf + spans[0], *ev = buf + spans[2];
  size_t pn = spans[1] - spans[0], en = spans[3] - spans[2];
  char ts[64];
  if (!plain(pv, pn) || !plain(ev, en) || en >= sizeof ts) return 1;
  memcpy(ts, ev, en);
  ts[en] = 0;
  dt_node n = e->node;
  char *text = dt__malloc(len + 1);
  bool *taken = dt__calloc(e->node.npods ? e->node.npods : 1, sizeof *taken);
  if (!text || !taken || !parse_pods(pv, pn, &e->node, taken, &n.pods, &n.npods)) {
    dt__free(text);
    dt__free(taken);
    return 1;
  }
  memcpy(text, buf, len);
  text[len] = 0;
  n.last_pod_event = 0; /* as the reader leaves a time it cannot read */
  dt_time_parse(ts, &n.last_pod_event, NULL);
  n.pod_ids = node_pod_ids(&c->podnames, &n, &e->node);
  for (size_t i = 0; i < e->node.npods; i++)
    if (!taken[i]) dt__free(e->node.pods[i]);
  dt__free(taken);
  dt__free(e->node.pods);
  dt__free(e->node.pod_ids);
  dt__free(e->text);
  e->node = n;
  e->text = text;
  e->len = len;
  e->gen = gen;
  memcpy(e->span, spans, sizeof e->span);
  return add_kept(m, c, e); /* 1: the set refuses it, and reading the text gives the reader's error */
}

int dt__manifests_add_cached(dt_manifests *m, dt_podcache *c, const char *name, uint64_t gen, uint32_t kept,
                             const char *buf, size_t len, const uint32_t *spans, dt_error *err) {
  if (start_set(m, c)) return dt__err(err, DT_ENOMEM, "out of memory");
  pc_entry *e = kept && kept < c->by_sym.n ? &c->by_sym.v[kept] : NULL;
  if (e && e->live && e->gen == gen) {
    int rc = add_kept(m, c, e);
    if (rc <= 0) return rc == DT_ENOMEM ? dt__err(err, rc, "out of memory") : 0;
    return dt_manifests_add_buffer(m, name, e->text, e->len, err);
  }
  if (!buf) return dt__err(err, DT_EINVAL, "internal: %s is not kept and no text was given", name);
  bool is_node = dt__podcache_keeps_node(name);
  if (is_node && spans) {
    int rc = add_patched(m, c, name, gen, buf, len, spans);
    if (rc <= 0) return rc == DT_ENOMEM ? dt__err(err, rc, "out of memory") : 0;
  }
  counts a = count(m);
  int rc = dt_manifests_add_buffer(m, name, buf, len, err);
  if (rc) return rc;
  counts b = count(m);
  if (is_node ? !one_node(&a, &b) : strncmp(name, "Pod/", 4) || !one_pod(&a, &b)) return 0;
  if (keep(c, m, is_node, name, gen, buf, len, spans)) return 0; /* out of memory: read again next time */
  return 0;
}

/* The names of entries dropped stay interned until they outnumber the live
** ones; then the table is made again from the live names (entries move to
** their new symbols: no handle from dt__podcache_find outlives a sweep). */
static void renumber(dt_podcache *c) {
  dt_symtab names = {0};
  DT_VEC(pc_entry) by_sym = {0};
  for (size_t i = 0; i < c->live.n; i++) {
    pc_entry *e = &c->by_sym.v[c->live.v[i]];
    dt_sym s = dt__sym(&names, e->file);
    while (!names.oom && by_sym.n <= s) {
      pc_entry z;
      memset(&z, 0, sizeof z);
      if (dt__vec_push(&by_sym, z)) names.oom = 1;
    }
    if (names.oom) { /* keep the old table */
      dt__symtab_free(&names);
      dt__free(by_sym.v);
      return;
    }
    by_sym.v[s] = *e;
  }
  for (size_t i = 0; i < c->live.n; i++) c->live.v[i] = dt__sym_find(&names, c->by_sym.v[c->live.v[i]].file);
  dt__symtab_free(&c->names);
  dt__free(c->by_sym.v);
  c->names = names;
  c->by_sym.v = by_sym.v, c->by_sym.n = by_sym.n, c->by_sym.cap = by_sym.cap;
  c->epoch = c->epoch == UINT32_MAX ? 1 : c->epoch + 1;
}

/* The keys again from the live entries; the table before stays for the
** set made before this sweep, the one before that is let go (its sets are
** freed). Out of memory: the old table stays in use. */
static void remake_keys(dt_podcache *c) {
  dt_symtab keys = {0};
  for (size_t i = 0; i < c->live.n && !keys.oom; i++) {
    const pc_entry *e = &c->by_sym.v[c->live.v[i]];
    dt__symn(&keys, e->seen, e->seen_len);
  }
  if (keys.oom) {
    dt__symtab_free(&keys);
    return;
  }
  for (size_t i = 0; i < c->live.n; i++) {
    pc_entry *e = &c->by_sym.v[c->live.v[i]];
    e->seen_sym = dt__sym_find(&keys, e->seen);
  }
  dt__symtab_free(&c->keys_prev);
  c->keys_prev = c->keys;
  c->keys = keys;
}

/* The shapes again from the live pods. Out of memory: each keeps 0. */
static void remake_shapes(dt_podcache *c) {
  dt_symtab shapes = {0};
  for (size_t i = 0; i < c->live.n; i++) {
    pc_entry *e = &c->by_sym.v[c->live.v[i]];
    if (!e->is_node) e->pod.shape = shape_of(&shapes, &e->pod);
  }
  dt__symtab_free(&c->shapes);
  c->shapes = shapes;
}

/* The name table again from the live entries. The current set keeps the
** numbers and node arrays it copied (all of the old table); new arrays go
** to the entries, the old ones are retired. Out of memory: the old table
** stays. */
static void remake_podnames(dt_podcache *c) {
  dt_symtab names = {0};
  size_t nodes = 0;
  for (size_t i = 0; i < c->live.n && !names.oom; i++) {
    const pc_entry *e = &c->by_sym.v[c->live.v[i]];
    if (!e->is_node) {
      pod_name_id(&names, &e->pod);
      continue;
    }
    nodes += e->node.pod_ids != NULL;
    for (size_t k = 0; k < e->node.npods && e->node.pod_ids; k++) dt__sym(&names, e->node.pods[k]);
  }
  if (names.oom || dt__vec_grow((void **)&c->retired.v, &c->retired.cap, c->retired.n + nodes, sizeof *c->retired.v)) {
    dt__symtab_free(&names);
    return;
  }
  for (size_t i = 0; i < c->live.n; i++) {
    pc_entry *e = &c->by_sym.v[c->live.v[i]];
    if (!e->is_node) {
      e->pod.name_id = pod_name_id(&names, &e->pod);
    } else if (e->node.pod_ids) {
      c->retired.v[c->retired.n++] = e->node.pod_ids;
      e->node.pod_ids = node_pod_ids(&names, &e->node, NULL);
    }
  }
  dt__symtab_free(&c->podnames);
  c->podnames = names;
}

void dt__podcache_sweep(dt_podcache *c) {
  /* the node arrays retired at the last sweep: the set that used them is freed */
  for (size_t i = 0; i < c->retired.n; i++) dt__free(c->retired.v[i]);
  c->retired.n = 0;
  for (size_t i = 0; i < c->live.n;) {
    uint32_t s = c->live.v[i];
    if (c->used.v[s]) {
      c->used.v[s] = 0;
      i++;
      continue;
    }
    entry_drop(&c->by_sym.v[s]);
    c->live.v[i] = c->live.v[--c->live.n];
  }
  if (c->names.n > 4096 && c->names.n > 4 * (c->live.n + 1)) renumber(c);
  if (c->keys.n > 4096 && c->keys.n > 4 * (c->live.n + 1)) remake_keys(c);
  if (c->shapes.n > 4096 && c->shapes.n > 4 * (c->live.n + 1)) remake_shapes(c);
  if (c->podnames.n > 4096 && c->podnames.n > 4 * (c->live.n + 1)) remake_podnames(c);
}
