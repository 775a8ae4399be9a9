/*
** req.c: the requirements algebra of Karpenter's pkg/scheduling.
**
** A requirement is a value set or its complement, optionally bounded to an
** integer range. In, NotIn, Exists, DoesNotExist, Gt and Lt all map onto that
** form, which makes intersection a few set operations on sorted integer
** arrays. Matching rules (see reference: karpenter.md section 1.6):
**   - intersecting two complements unions their exclusions;
**   - bounds intersect as max(gte), min(lte); crossing bounds mean
**     DoesNotExist; a concrete result drops its bounds;
**   - two requirements are compatible when their intersection is non-empty,
**     or when both are NotIn/DoesNotExist (a node without the label
**     satisfies both).
*/
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static const char *k_ops[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"};

int dt__op_parse(const char *s, dt_op *op) {
  for (int i = 0; i < 8; i++)
    if (strcmp(s, k_ops[i]) == 0) {
      *op = (dt_op)i;
      return 0;
    }
  return -1;
}

const char *dt__op_name(dt_op op) { return k_ops[op]; }

static int cmp_sym(const void *a, const void *b) {
  dt_sym x = *(const dt_sym *)a, y = *(const dt_sym *)b;
  return x < y ? -1 : x > y;
}

static bool within(const dt_symtab *t, const dt_req *r, dt_sym v) {
  if (!r->has_gte && !r->has_lte) return true;
  if (!v || !t->isnum[v]) return false;
  int64_t n = t->num[v];
  return (!r->has_gte || n >= r->gte) && (!r->has_lte || n <= r->lte);
}

static bool contains(const dt_req *r, dt_sym v) {
  size_t lo = 0, hi = r->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (r->v[mid] == v) return true;
    if (r->v[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return false;
}

void dt__req_make(dt_arena *a, dt_req *out, dt_sym key, dt_op op, const dt_sym *vals, uint32_t n, const dt_symtab *t) {
  memset(out, 0, sizeof *out);
  out->key = key;
  switch (op) {
  case DT_OP_IN:
  case DT_OP_NOTIN:
    out->complement = op == DT_OP_NOTIN;
    if (n) {
      out->v = dt__arena_alloc(a, n * sizeof *out->v);
      if (!out->v) return;
      memcpy(out->v, vals, n * sizeof *vals);
      qsort(out->v, n, sizeof *out->v, cmp_sym);
      uint32_t k = 0;
      for (uint32_t i = 0; i < n; i++)
        if (k == 0 || out->v[k - 1] != out->v[i]) out->v[k++] = out->v[i];
      out->n = k;
    }
    break;
  case DT_OP_EXISTS: out->complement = 1; break;
  case DT_OP_DOESNOTEXIST: break;
  case DT_OP_GT:
  case DT_OP_GTE:
  case DT_OP_LT:
  case DT_OP_LTE: {
    /* Values were validated as one integer at parse time. */
    int64_t x = n && t->isnum[vals[0]] ? t->num[vals[0]] : 0;
    out->complement = 1;
    if (op == DT_OP_GT || op == DT_OP_GTE) {
      if (op == DT_OP_GT && x == INT64_MAX) {
        out->complement = 0; /* nothing is greater: DoesNotExist */
        break;
      }
      out->has_gte = 1;
      out->gte = op == DT_OP_GT ? x + 1 : x;
    } else {
      if (op == DT_OP_LT && x == INT64_MIN) {
        out->complement = 0;
        break;
      }
      out->has_lte = 1;
      out->lte = op == DT_OP_LT ? x - 1 : x;
    }
    break;
  }
  }
}

/* x ∩ y's bounds (Gt, Lt) into r; false when they leave no value. */
static bool join_bounds(const dt_req *x, const dt_req *y, dt_req *r) {
  r->has_gte = x->has_gte || y->has_gte;
  r->has_lte = x->has_lte || y->has_lte;
  r->gte = x->has_gte && y->has_gte ? (x->gte > y->gte ? x->gte : y->gte) : x->has_gte ? x->gte : y->gte;
  r->lte = x->has_lte && y->has_lte ? (x->lte < y->lte ? x->lte : y->lte) : x->has_lte ? x->lte : y->lte;
  return !(r->has_gte && r->has_lte && r->gte > r->lte);
}

/* The next value that both sorted lists x->v and y->v hold, from *i and *j
** on, into *v; false when none is left. */
static inline bool next_common(const dt_req *x, const dt_req *y, uint32_t *i, uint32_t *j, dt_sym *v) {
  while (*i < x->n && *j < y->n) {
    if (x->v[*i] < y->v[*j])
      ++*i;
    else if (y->v[*j] < x->v[*i])
      ++*j;
    else {
      *v = x->v[*i];
      ++*i;
      ++*j;
      return true;
    }
  }
  return false;
}

void dt__req_intersect(dt_arena *a, const dt_symtab *t, const dt_req *x, const dt_req *y, dt_req *out) {
  dt_req r = {0};
  r.key = x->key;
  r.min_values = x->min_values > y->min_values ? x->min_values : y->min_values;
  r.complement = x->complement && y->complement;
  if (!join_bounds(x, y, &r)) {
    memset(&r, 0, sizeof r); /* DoesNotExist */
    r.key = x->key;
    r.min_values = x->min_values > y->min_values ? x->min_values : y->min_values;
    *out = r;
    return;
  }
  /* The values are made in scratch space, and the arena keeps a copy only
  ** when they are not already one of the two sides' (intersecting a set
  ** with a wider one, the common case, allocates nothing: requirements are
  ** merged per pool, type and pod, and a NotIn of thousands of values
  ** copied each time took gigabytes). */
  uint32_t cap = x->n + y->n;
  dt_sym *v = cap ? dt__malloc(cap * sizeof *v) : NULL;
  uint32_t n = 0;
  if (cap && !v) { /* the arena's failure, as its own would be */
    a->oom = 1;
    *out = r;
    return;
  }
  uint32_t i = 0, j = 0;
  if (x->complement && y->complement) {
    while (i < x->n || j < y->n) { /* union */
      if (j == y->n || (i < x->n && x->v[i] < y->v[j]))
        v[n++] = x->v[i++];
      else if (i == x->n || y->v[j] < x->v[i])
        v[n++] = y->v[j++];
      else {
        v[n++] = x->v[i++];
        j++;
      }
    }
  } else if (x->complement || y->complement) {
    const dt_req *c = x->complement ? x : y, *k = x->complement ? y : x;
    for (i = 0; i < k->n; i++)
      if (!contains(c, k->v[i])) v[n++] = k->v[i];
  } else {
    dt_sym s;
    while (next_common(x, y, &i, &j, &s)) v[n++] = s;
  }
  /* Drop values outside the bounds. */
  if (r.has_gte || r.has_lte) {
    uint32_t k = 0;
    for (i = 0; i < n; i++)
      if (within(t, &r, v[i])) v[k++] = v[i];
    n = k;
  }
  r.n = n;
  if (!n)
    r.v = NULL;
  else if (n == x->n && !memcmp(v, x->v, n * sizeof *v))
    r.v = x->v;
  else if (n == y->n && !memcmp(v, y->v, n * sizeof *v))
    r.v = y->v;
  else if ((r.v = dt__arena_alloc(a, n * sizeof *v)))
    memcpy(r.v, v, n * sizeof *v);
  else
    r.n = 0;
  dt__free(v);
  if (!r.complement) r.has_gte = r.has_lte = 0;
  *out = r;
}

dt_op dt__req_operator(const dt_req *r) {
  if (r->complement) return r->n ? DT_OP_NOTIN : DT_OP_EXISTS;
  return r->n ? DT_OP_IN : DT_OP_DOESNOTEXIST;
}

bool dt__req_has(const dt_symtab *t, const dt_req *r, dt_sym v) {
  if (!v) {
    /* The label is absent: only NotIn and DoesNotExist accept that. */
    dt_op op = dt__req_operator(r);
    return op == DT_OP_DOESNOTEXIST || (op == DT_OP_NOTIN && !r->has_gte && !r->has_lte);
  }
  if (r->complement) return !contains(r, v) && within(t, r, v);
  return contains(r, v) && within(t, r, v);
}

/* Whether x ∩ y has a value, without allocating. */
static bool nonempty(const dt_symtab *t, const dt_req *x, const dt_req *y) {
  dt_req b = {0};
  if (!join_bounds(x, y, &b)) return false;
  if (x->complement && y->complement) return true;
  if (x->complement || y->complement) {
    const dt_req *c = x->complement ? x : y, *k = x->complement ? y : x;
    for (uint32_t i = 0; i < k->n; i++)
      if (!contains(c, k->v[i]) && within(t, &b, k->v[i])) return true;
    return false;
  }
  uint32_t i = 0, j = 0;
  dt_sym s;
  while (next_common(x, y, &i, &j, &s))
    if (within(t, &b, s)) return true;
  return false;
}

bool dt__req_intersects(const dt_symtab *t, const dt_req *x, const dt_req *y) {
  if (nonempty(t, x, y)) return true;
  dt_op ox = dt__req_operator(x), oy = dt__req_operator(y);
  return (ox == DT_OP_NOTIN || ox == DT_OP_DOESNOTEXIST) && (oy == DT_OP_NOTIN || oy == DT_OP_DOESNOTEXIST);
}

static bool req_equal(const dt_req *x, const dt_req *y) {
  return x->key == y->key && x->complement == y->complement && x->has_gte == y->has_gte && x->has_lte == y->has_lte &&
         (!x->has_gte || x->gte == y->gte) && (!x->has_lte || x->lte == y->lte) && x->n == y->n &&
         x->min_values == y->min_values && (x->n == 0 || memcmp(x->v, y->v, x->n * sizeof *x->v) == 0);
}

const dt_req *dt__reqs_get(const dt_reqs *s, dt_sym key) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (s->r[mid].key == key) return &s->r[mid];
    if (s->r[mid].key < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

void dt__reqs_add(dt_arena *a, const dt_symtab *t, const dt_reqs *s, const dt_req *r, dt_reqs *out) {
  dt_req *nr = dt__arena_alloc(a, (s->n + 1) * sizeof *nr);
  if (!nr) {
    *out = *s;
    return;
  }
  uint32_t k = 0, i = 0;
  bool done = false;
  for (; i < s->n; i++) {
    if (!done && s->r[i].key == r->key) {
      dt__req_intersect(a, t, &s->r[i], r, &nr[k++]);
      done = true;
    } else if (!done && s->r[i].key > r->key) {
      nr[k++] = *r;
      nr[k++] = s->r[i];
      done = true;
    } else {
      nr[k++] = s->r[i];
    }
  }
  if (!done) nr[k++] = *r;
  out->r = nr;
  out->n = k;
}

/* Both sorted by key, one entry a key: one pass, one allocation (adding
** y's entries one at a time copied x whole for each, and merges run per
** pool, type and pod: a NodePool of 70 labels took 353 MiB). */
void dt__reqs_merge(dt_arena *a, const dt_symtab *t, const dt_reqs *x, const dt_reqs *y, dt_reqs *out) {
  if (!y->n) {
    *out = *x;
    return;
  }
  dt_req *nr = dt__arena_raw(a, ((size_t)x->n + y->n) * sizeof *nr);
  if (!nr) {
    *out = *x;
    return;
  }
  dt__reqs_merge_into(a, t, x, y, nr, out);
}

void dt__reqs_merge_into(dt_arena *a, const dt_symtab *t, const dt_reqs *x, const dt_reqs *y, dt_req *nr,
                         dt_reqs *out) {
  uint32_t i = 0, j = 0, k = 0;
  while (i < x->n || j < y->n) {
    if (j == y->n || (i < x->n && x->r[i].key < y->r[j].key))
      nr[k++] = x->r[i++];
    else if (i == x->n || y->r[j].key < x->r[i].key)
      nr[k++] = y->r[j++];
    else
      dt__req_intersect(a, t, &x->r[i++], &y->r[j++], &nr[k++]);
  }
  out->r = nr;
  out->n = k;
}

typedef struct keyed {
  dt_sym key;
  uint32_t seq;
} keyed;

static int cmp_keyed(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void dt__reqs_add_many(dt_arena *a, const dt_symtab *t, const dt_reqs *s, const dt_req *items, size_t n, dt_reqs *out) {
  if (n < 8) { /* few: one at a time */
    dt_reqs cur = *s;
    for (size_t i = 0; i < n; i++) dt__reqs_add(a, t, &cur, &items[i], &cur);
    *out = cur;
    return;
  }
  keyed *ord = dt__malloc(n * sizeof *ord);
  dt_req *nr = ord ? dt__arena_raw(a, n * sizeof *nr) : NULL;
  if (!nr) {
    dt__free(ord);
    a->oom = 1;
    *out = *s;
    return;
  }
  for (size_t i = 0; i < n; i++) ord[i] = (keyed){items[i].key, (uint32_t)i};
  qsort(ord, n, sizeof *ord, cmp_keyed); /* by key, then in their order: each key's entries fold as added */
  uint32_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const dt_req *r = &items[ord[i].seq];
    if (k && nr[k - 1].key == r->key)
      dt__req_intersect(a, t, &nr[k - 1], r, &nr[k - 1]);
    else
      nr[k++] = *r;
  }
  dt__free(ord);
  dt_reqs add = {k, nr};
  dt__reqs_merge(a, t, s, &add, out);
}

bool dt__reqs_equal(const dt_reqs *x, const dt_reqs *y) {
  if (x->n != y->n) return false;
  for (uint32_t i = 0; i < x->n; i++)
    if (!req_equal(&x->r[i], &y->r[i])) return false;
  return true;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

void dt__req_sig(const dt_req *r, dt_buf *b) {
  dt__sig_u32(b, r->key);
  dt__sig_u32(b, (uint32_t)r->complement | (uint32_t)r->has_gte << 8 | (uint32_t)r->has_lte << 16);
  dt__sig_u32(b, (uint32_t)r->min_values);
  if (r->has_gte) dt__sig_i64(b, r->gte);
  if (r->has_lte) dt__sig_i64(b, r->lte);
  dt__sig_u32(b, r->n);
  if (r->n) dt__buf_putn(b, (const char *)r->v, r->n * sizeof *r->v);
}

void dt__req_describe(const dt_symtab *t, const dt_req *r, dt_buf *b) {
  dt__buf_puts(b, dt__sym_str(t, r->key));
  dt_op op = dt__req_operator(r);
  if (r->has_gte || r->has_lte) {
    if (r->has_gte) dt__buf_printf(b, " >= %lld", (long long)r->gte);
    if (r->has_gte && r->has_lte) dt__buf_puts(b, " and");
    if (r->has_lte) dt__buf_printf(b, " <= %lld", (long long)r->lte);
    if (!r->n) return;
    dt__buf_puts(b, ",");
  }
  dt__buf_printf(b, " %s", dt__op_name(op));
  if (!r->n) return;
  const char *stack[16];
  const char **names = r->n <= 16 ? stack : dt__malloc(r->n * sizeof *names);
  if (!names) return;
  for (uint32_t i = 0; i < r->n; i++) names[i] = dt__sym_str(t, r->v[i]);
  qsort(names, r->n, sizeof *names, cmp_str);
  dt__buf_puts(b, " [");
  for (uint32_t i = 0; i < r->n && i < 12; i++) dt__buf_printf(b, "%s%s", i ? ", " : "", names[i]);
  if (r->n > 12) dt__buf_printf(b, ", ... %u more", r->n - 12);
  dt__buf_puts(b, "]");
  if (names != stack) dt__free((void *)names);
}
