/*
** sym.c: string interning. Label keys and values become dense integers so
** the scheduler compares integers and keeps value sets as sorted arrays.
*/
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Eight bytes a step (the class and group signatures interned here run to
** hundreds of bytes); a symbol's number is its order of first sight, so the
** hash decides only where a string is looked up, never an output. */
static uint32_t hash(const char *s, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n, w;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    memcpy(&w, s + i, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  w = 0;
  memcpy(&w, s + i, n - i);
  h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
  return (uint32_t)(h ^ h >> 29);
}

/* A decimal integer in int64's range, as strconv.ParseInt(s, 10, 64). */
static int parse_int(const char *s, size_t n, int64_t *out) {
  if (n == 0 || n > 20) return 0;
  size_t i = 0;
  int neg = 0;
  if (s[0] == '-' || s[0] == '+') {
    neg = s[0] == '-';
    i = 1;
    if (n == 1) return 0;
  }
  uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return 0;
    unsigned d = (unsigned)(s[i] - '0');
    if (v > (lim - d) / 10) return 0; /* out of range */
    v = v * 10 + d;
  }
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return 1;
}

static int rehash(dt_symtab *t, uint32_t nslots) {
  uint32_t *slots = dt__calloc(nslots, sizeof *slots);
  if (!slots) return -1;
  for (uint32_t i = 1; i < t->n; i++) {
    uint32_t h = hash(t->str[i], t->len[i]) & (nslots - 1);
    while (slots[h]) h = (h + 1) & (nslots - 1);
    slots[h] = i;
  }
  dt__free(t->slots);
  t->slots = slots;
  t->nslots = nslots;
  return 0;
}

/* A table's own strings, one after another in blocks that grow with it,
** rather than an allocation each. */
struct dt_symblk {
  struct dt_symblk *next;
  size_t used, cap;
  char data[];
};

static char *sym_store(dt_symtab *t, const char *s, size_t n) {
  struct dt_symblk *b = t->blk;
  if (!b || b->cap - b->used < n + 1) {
    size_t cap = b ? b->cap * 2 : 4096;
    if (cap > (1u << 20)) cap = 1u << 20;
    if (cap < n + 1) cap = n + 1;
    struct dt_symblk *nb = dt__malloc(sizeof *nb + cap);
    if (!nb) return NULL;
    nb->next = b;
    nb->used = 0;
    nb->cap = cap;
    t->blk = b = nb;
  }
  char *out = b->data + b->used;
  memcpy(out, s, n);
  out[n] = 0;
  b->used += n + 1;
  return out;
}

dt_sym dt__symn(dt_symtab *t, const char *s, size_t n) {
  if (t->oom) return 0;
  if (t->n == 0) {
    /* Symbol 0 is "none": the empty, never-matching entry. */
    t->cap = 256;
    t->str = dt__calloc(t->cap, sizeof *t->str);
    t->len = dt__calloc(t->cap, sizeof *t->len);
    t->num = dt__calloc(t->cap, sizeof *t->num);
    t->isnum = dt__calloc(t->cap, sizeof *t->isnum);
    if (!t->str || !t->len || !t->num || !t->isnum || rehash(t, 512)) goto oom;
    t->str[0] = sym_store(t, "", 0);
    if (!t->str[0]) goto oom;
    t->n = 1;
  }
  uint32_t h = hash(s, n) & (t->nslots - 1);
  while (t->slots[h]) {
    uint32_t i = t->slots[h];
    if (t->len[i] == n && memcmp(t->str[i], s, n) == 0) return i;
    h = (h + 1) & (t->nslots - 1);
  }
  if (t->n == t->cap) {
    uint32_t nc = t->cap * 2;
    char **str = dt__realloc(t->str, nc * sizeof *str);
    if (!str) goto oom;
    t->str = str;
    uint32_t *len = dt__realloc(t->len, nc * sizeof *len);
    if (!len) goto oom;
    t->len = len;
    int64_t *num = dt__realloc(t->num, nc * sizeof *num);
    if (!num) goto oom;
    t->num = num;
    uint8_t *isnum = dt__realloc(t->isnum, nc * sizeof *isnum);
    if (!isnum) goto oom;
    t->isnum = isnum;
    t->cap = nc;
  }
  uint32_t id = t->n;
  t->str[id] = sym_store(t, s, n);
  if (!t->str[id]) goto oom;
  t->len[id] = (uint32_t)n;
  t->isnum[id] = (uint8_t)parse_int(s, n, &t->num[id]);
  t->n++;
  t->slots[h] = id;
  if (t->n * 2 > t->nslots && rehash(t, t->nslots * 2)) goto oom;
  return id;
oom:
  t->oom = 1;
  return 0;
}

dt_sym dt__sym(dt_symtab *t, const char *s) { return dt__symn(t, s, strlen(s)); }

dt_sym dt__sym_find(const dt_symtab *t, const char *s) {
  if (t->n == 0) return 0;
  size_t n = strlen(s);
  uint32_t h = hash(s, n) & (t->nslots - 1);
  while (t->slots[h]) {
    uint32_t i = t->slots[h];
    if (t->len[i] == n && memcmp(t->str[i], s, n) == 0) return i;
    h = (h + 1) & (t->nslots - 1);
  }
  return 0;
}

int dt__symtab_clone(dt_symtab *dst, const dt_symtab *src) {
  memset(dst, 0, sizeof *dst);
  if (!src->n) return 0;
  dst->str = dt__malloc(src->cap * sizeof *dst->str);
  dst->len = dt__malloc(src->cap * sizeof *dst->len);
  dst->num = dt__malloc(src->cap * sizeof *dst->num);
  dst->isnum = dt__malloc(src->cap * sizeof *dst->isnum);
  dst->slots = dt__malloc(src->nslots * sizeof *dst->slots);
  if (!dst->str || !dst->len || !dst->num || !dst->isnum || !dst->slots) {
    dt__free(dst->str), dt__free(dst->len), dt__free(dst->num), dt__free(dst->isnum), dt__free(dst->slots);
    memset(dst, 0, sizeof *dst);
    dst->oom = 1;
    return DT_ENOMEM;
  }
  memcpy(dst->str, src->str, src->n * sizeof *dst->str);
  memcpy(dst->len, src->len, src->n * sizeof *dst->len);
  memcpy(dst->num, src->num, src->n * sizeof *dst->num);
  memcpy(dst->isnum, src->isnum, src->n * sizeof *dst->isnum);
  memcpy(dst->slots, src->slots, src->nslots * sizeof *dst->slots);
  dst->n = dst->nborrowed = src->n;
  dst->cap = src->cap;
  dst->nslots = src->nslots;
  return 0;
}

void dt__symtab_free(dt_symtab *t) {
  for (struct dt_symblk *b = t->blk, *next; b; b = next) {
    next = b->next;
    dt__free(b);
  }
  dt__free(t->str);
  dt__free(t->len);
  dt__free(t->num);
  dt__free(t->isnum);
  dt__free(t->slots);
  memset(t, 0, sizeof *t);
}

/* ------------------------------------------------------------ name maps */

struct dt_namekey {
  const char *s;
  uint32_t len, h;
  int32_t v;
};

static int namemap_grow(dt_namemap *m, uint32_t nslots) {
  struct dt_namekey *slots = dt__calloc(nslots, sizeof *slots);
  if (!slots) return -1;
  for (uint32_t i = 0; i < m->nslots; i++) {
    if (!m->slots[i].s) continue;
    uint32_t h = m->slots[i].h & (nslots - 1);
    while (slots[h].s) h = (h + 1) & (nslots - 1);
    slots[h] = m->slots[i];
  }
  dt__free(m->slots);
  m->slots = slots;
  m->nslots = nslots;
  return 0;
}

int32_t *dt__namemap_put(dt_namemap *m, const char *s, size_t n, int32_t dflt, bool *added) {
  *added = false;
  if (m->oom) return NULL;
  if ((m->n + 1) * 2 > m->nslots && namemap_grow(m, m->nslots ? m->nslots * 2 : 256)) {
    m->oom = 1;
    return NULL;
  }
  uint32_t hv = hash(s, n), h = hv & (m->nslots - 1);
  for (; m->slots[h].s; h = (h + 1) & (m->nslots - 1)) {
    struct dt_namekey *k = &m->slots[h];
    if (k->h == hv && k->len == n && memcmp(k->s, s, n) == 0) return &k->v;
  }
  m->slots[h] = (struct dt_namekey){s, (uint32_t)n, hv, dflt};
  m->n++;
  *added = true;
  return &m->slots[h].v;
}

int32_t dt__namemap_get(const dt_namemap *m, const char *s, size_t n, int32_t dflt) {
  if (!m->n) return dflt;
  uint32_t hv = hash(s, n), h = hv & (m->nslots - 1);
  for (; m->slots[h].s; h = (h + 1) & (m->nslots - 1)) {
    const struct dt_namekey *k = &m->slots[h];
    if (k->h == hv && k->len == n && memcmp(k->s, s, n) == 0) return k->v;
  }
  return dflt;
}

bool dt__namemap_set(dt_namemap *m, const char *s, size_t n, int32_t v) {
  bool added;
  int32_t *at = dt__namemap_put(m, s, n, v, &added);
  if (at) *at = v;
  return at != NULL;
}

bool dt__namemap_del(dt_namemap *m, const char *s, size_t n) {
  if (!m->n) return false;
  uint32_t mask = m->nslots - 1, hv = hash(s, n), i = hv & mask;
  for (; m->slots[i].s; i = (i + 1) & mask) {
    const struct dt_namekey *k = &m->slots[i];
    if (k->h == hv && k->len == n && memcmp(k->s, s, n) == 0) break;
  }
  if (!m->slots[i].s) return false;
  /* Backward shift: a later key of the run moves into the hole unless its
  ** home lies cyclically after the hole and at or before its own slot. */
  for (uint32_t j = (i + 1) & mask; m->slots[j].s; j = (j + 1) & mask) {
    uint32_t home = m->slots[j].h & mask;
    bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (stays) continue;
    m->slots[i] = m->slots[j];
    i = j;
  }
  m->slots[i].s = NULL;
  m->n--;
  return true;
}

void dt__namemap_free(dt_namemap *m) {
  dt__free(m->slots);
  memset(m, 0, sizeof *m);
}
