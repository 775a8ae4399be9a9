/*
** internal.h: declarations shared by the engine's files. Nothing here is
** public; the public API is dovetail.h. Internal non-static names use dt__.
*/
#ifndef DT_INTERNAL_H
#define DT_INTERNAL_H

#include "dovetail.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#if defined(__GNUC__)
#define DT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define DT_PRINTF(a, b)
#endif

/* The annotation on a NodeClaim naming the pods nominated to it. */
#define DT_A_PODS "dovetail.dev/pods"
/* on the NodeClaims the daemon writes ahead of its launches (not on applied ones) */
#define DT_A_LAUNCHED "dovetail.dev/launched-by-daemon"

#define DT_STR_(x) #x
#define DT_STR(x)  DT_STR_(x) /* a macro's value as a string literal */

/* ---------------------------------------------------------------- memory */

void *dt__malloc(size_t n);
void *dt__calloc(size_t n, size_t size);
void *dt__realloc(void *p, size_t n);
void dt__free(void *p);
char *dt__strdup(const char *s); /* caller frees with dt__free */
char *dt__strndup(const char *s, size_t n);

/* Install the allocation hooks into cJSON (once per process). */
void dt__init(void);
/* Whether an allocation failed in this thread since the last reset. */
int dt__alloc_failed(int reset);

/* Fill err (if any) and return code. */
int dt__err(dt_error *err, int code, const char *fmt, ...) DT_PRINTF(3, 4);

/*
** An arena: per-run memory released in one call. Allocation failure sets
** a->oom and returns NULL; callers check a->oom once at the end of a phase.
*/
typedef struct dt_arena_chunk dt_arena_chunk;
typedef struct dt_arena {
  dt_arena_chunk *head;
  size_t used, cap; /* within head */
  int oom;
} dt_arena;

void *dt__arena_alloc(dt_arena *a, size_t n);  /* zeroed, 16-byte aligned */
void *dt__arena_raw(dt_arena *a, size_t n);    /* the same, not zeroed: for arrays written before they are read */
void dt__arena_reserve(dt_arena *a, size_t n); /* a first chunk of at least n bytes (no-op once allocated) */
char *dt__arena_strdup(dt_arena *a, const char *s);
void dt__arena_free(dt_arena *a);
void dt__arena_reset(dt_arena *a); /* empty again, its largest chunk kept */

/* Make cJSON allocate from a (NULL: the heap again) in this thread, frees
** doing nothing meanwhile; returns the arena it replaces. */
dt_arena *dt__cj_arena(dt_arena *a);

/* A growable string. On allocation failure oom is set and further writes are
** dropped, so a renderer checks once at the end. Owner frees p with dt__free.
** With a sink, dt__buf_spill hands what the buffer holds to it and starts
** the buffer again: renderers spill between items, so a large document is
** never whole in memory; a sink that fails sets ioerr (and oom, to drop
** what follows). */
typedef struct dt_buf {
  char *p;
  size_t len, cap;
  int oom;
  dt_write_fn sink;
  void *sink_ud;
  int ioerr;
} dt_buf;

/* To the sink once the buffer holds 64 KiB (all: whatever it holds); a
** no-op without a sink. */
void dt__buf_spill(dt_buf *b, bool all);

void dt__buf_putn(dt_buf *b, const char *s, size_t n);
void dt__buf_puts(dt_buf *b, const char *s);
void dt__buf_putc(dt_buf *b, char c);
void dt__buf_printf(dt_buf *b, const char *fmt, ...) DT_PRINTF(2, 3);
void dt__buf_json_str(dt_buf *b, const char *s);       /* a quoted, escaped JSON string */
char *dt__buf_take(dt_buf *b, size_t *len);            /* NUL-terminates; NULL if oom */
void dt__buf_utf8(dt_buf *b, const char *s, size_t n); /* invalid UTF-8 bytes become U+FFFD */
size_t dt__utf8_seq(const char *s, size_t n);          /* length of the UTF-8 sequence at s, 0 if invalid */
size_t dt__utf8_valid(const char *s, size_t n);        /* length of the longest valid UTF-8 prefix */

/* Growable array of fixed-size elements. */
#define DT_VEC(T)                                                                                                      \
  struct {                                                                                                             \
    T *v;                                                                                                              \
    size_t n, cap;                                                                                                     \
  }
int dt__vec_grow(void **v, size_t *cap, size_t need, size_t elem);
#define dt__vec_push(vec, x)                                                                                           \
  ((vec)->n < (vec)->cap || dt__vec_grow((void **)&(vec)->v, &(vec)->cap, (vec)->n + 1, sizeof(*(vec)->v)) == 0        \
       ? ((vec)->v[(vec)->n++] = (x), 0)                                                                               \
       : DT_ENOMEM)

/* Read a whole file ("-" = stdin). *out is NUL-terminated, caller frees. */
int dt__read_file(const char *path, char **out, size_t *len, dt_error *err);
/* The same, refused past max bytes (what: the limit's name, for the error). */
int dt__read_file_max(const char *path, size_t max, const char *what, char **out, size_t *len, dt_error *err);

/* "3m", "1h30m", "90s" to seconds; -1 on a malformed duration. */
int dt__duration_parse(const char *s, int64_t *out);
/* "0", "250ms" or a Go-style duration, for options: milliseconds; -1 when malformed. */
int dt__duration_ms_parse(const char *s, int64_t *ms);
/* s as a non-negative decimal number, the text after it in *end (as
** strtoull); -1 when s does not begin with a digit or passes 2^64 - 1
** (strtoull takes "-1" and " 7", and saturates). */
int dt__uint_parse(const char *s, unsigned long long *out, char **end);

/* Monotonic milliseconds, for phase timings only (never in decisions). */
double dt__now_ms(void);
void dt__fmt_time(int64_t t, char *out, size_t n);    /* RFC 3339, UTC */
int64_t dt__days_from_civil(int64_t y, int m, int d); /* days since 1970-01-01 */
void dt__civil_from_days(int64_t days, int64_t *y, int *m, int *d);

/* A bundled catalog's bytes by name (providers/catalog.c); -1 if there is
** none of that name. */
int dt__catalog_bundled(const char *name, const char **buf, size_t *len);

/* Format a price the same way everywhere ("%.6g" trimmed). */
void dt__fmt_price(char *out, size_t n, double v);

/* ------------------------------------------------------------ quantities */

/* Format a milli-value as a canonical Kubernetes quantity for resource r
** ("cpu": "1500m"; memory: "512Mi" when exact, else bytes). */
void dt__fmt_quantity(char *out, size_t n, const char *resource, int64_t milli);

/* ------------------------------------------------------------- symbols */

/*
** Interned strings: label keys, label values, names. A symbol is a dense
** index (0 is "none"), so sets of values are sorted integer arrays and
** comparisons are integer compares. Numeric values are parsed once, for the
** Gt/Lt operators.
*/
typedef uint32_t dt_sym;

typedef struct dt_symtab {
  char **str;
  uint32_t *len;
  int64_t *num;
  uint8_t *isnum;
  uint32_t n, cap;
  uint32_t *slots; /* open addressing, index+1 */
  uint32_t nslots;
  uint32_t nborrowed; /* strings [0, nborrowed) belong to the table this one was cloned from */
  int oom;
  struct dt_symblk *blk; /* where its own strings are kept, the newest block first */
} dt_symtab;

dt_sym dt__sym(dt_symtab *t, const char *s);
dt_sym dt__symn(dt_symtab *t, const char *s, size_t n);
dt_sym dt__sym_find(const dt_symtab *t, const char *s); /* 0 if absent */
static inline const char *dt__sym_str(const dt_symtab *t, dt_sym s) { return t->str[s]; }
void dt__symtab_free(dt_symtab *t);
/* dst (empty) as a copy of src whose strings it borrows: src must outlive it
** and not change while it lives. 0, or DT_ENOMEM. */
int dt__symtab_clone(dt_symtab *dst, const dt_symtab *src);

/*
** A map from strings it does not own to int32 values: a lookup table for
** names that some longer-lived structure already holds (a node's nominated
** pods, a pass's pod names), where interning them would copy every string
** and its numbering is never read. Keys must outlive the map and not change.
*/
typedef struct dt_namemap {
  struct dt_namekey *slots; /* open addressing; s NULL is free */
  uint32_t n, nslots;
  int oom;
} dt_namemap;

/* The value slot of s[0..n): found, or added holding dflt (*added tells);
** NULL when out of memory. */
int32_t *dt__namemap_put(dt_namemap *m, const char *s, size_t n, int32_t dflt, bool *added);
/* The value of s[0..n), or dflt when absent. */
int32_t dt__namemap_get(const dt_namemap *m, const char *s, size_t n, int32_t dflt);
/* s[0..n) holding v from now on, found or added; false when out of memory. */
bool dt__namemap_set(dt_namemap *m, const char *s, size_t n, int32_t v);
/* Take s[0..n) out of the map; false when it was not in it. */
bool dt__namemap_del(dt_namemap *m, const char *s, size_t n);
void dt__namemap_free(dt_namemap *m);

/* ---------------------------------------------------------- requirements */

/* Node selector operators as written in manifests. */
typedef enum dt_op {
  DT_OP_IN,
  DT_OP_NOTIN,
  DT_OP_EXISTS,
  DT_OP_DOESNOTEXIST,
  DT_OP_GT,
  DT_OP_LT,
  DT_OP_GTE,
  DT_OP_LTE
} dt_op;

int dt__op_parse(const char *s, dt_op *op);
const char *dt__op_name(dt_op op);

/*
** One requirement in canonical form, as Karpenter's Requirement:
** complement=0: the value set v (In; empty = DoesNotExist);
** complement=1: every value except v (NotIn; empty = Exists).
** Bounds (gte/lte) restrict a complement set to integers within them.
*/
typedef struct dt_req {
  dt_sym key;
  uint8_t complement;
  uint8_t has_gte, has_lte;
  int32_t min_values; /* 0 = none */
  int64_t gte, lte;
  uint32_t n;
  dt_sym *v; /* sorted, arena-owned */
} dt_req;

/* A set of requirements, sorted by key, at most one per key. */
typedef struct dt_reqs {
  uint32_t n;
  dt_req *r;
} dt_reqs;

void dt__req_make(dt_arena *a, dt_req *out, dt_sym key, dt_op op, const dt_sym *vals, uint32_t n, const dt_symtab *t);
void dt__req_intersect(dt_arena *a, const dt_symtab *t, const dt_req *x, const dt_req *y, dt_req *out);
bool dt__req_has(const dt_symtab *t, const dt_req *r, dt_sym v); /* v = 0: the key is absent */
bool dt__req_intersects(const dt_symtab *t, const dt_req *x, const dt_req *y);
dt_op dt__req_operator(const dt_req *r);
const dt_req *dt__reqs_get(const dt_reqs *s, dt_sym key);
/* out = s ∩ {r}; out may alias nothing; arena-owned. */
void dt__reqs_add(dt_arena *a, const dt_symtab *t, const dt_reqs *s, const dt_req *r, dt_reqs *out);
void dt__reqs_merge(dt_arena *a, const dt_symtab *t, const dt_reqs *x, const dt_reqs *y, dt_reqs *out);
/* The same into buf (room for x->n + y->n): a caller that keeps the result
** only when it differs from x copies it to the arena then. */
void dt__reqs_merge_into(dt_arena *a, const dt_symtab *t, const dt_reqs *x, const dt_reqs *y, dt_req *buf,
                         dt_reqs *out);
/* out = s ∩ items[0..n), as adding each in turn, in O((|s| + n) log n). */
void dt__reqs_add_many(dt_arena *a, const dt_symtab *t, const dt_reqs *s, const dt_req *items, size_t n, dt_reqs *out);
bool dt__reqs_equal(const dt_reqs *x, const dt_reqs *y);
/* Describe a requirement for messages: "zone In [a, b]". */
void dt__req_describe(const dt_symtab *t, const dt_req *r, dt_buf *b);

/* Signatures: values appended as raw bytes, interned by length (dt__symn),
** so that equal signatures mean equal values and building one costs no
** formatting. */
/* dt__join(dst, cap, s1, s2, ...): the strings one after the other into dst,
** cut to cap - 1 bytes and NUL-terminated, as snprintf with "%s%s..." does
** (a NULL string is written "(null)", as glibc does), at a fraction of the
** cost. Returns the length the whole would have. */
extern const char dt__join_end[];
size_t dt__join_(char *dst, size_t cap, ...);
#define dt__join(dst, cap, ...) dt__join_((dst), (cap), __VA_ARGS__, dt__join_end)

void dt__sig_u32(dt_buf *b, uint32_t v);
void dt__sig_i64(dt_buf *b, int64_t v);
void dt__sig_str(dt_buf *b, const char *s);   /* NULL and "" differ */
void dt__req_sig(const dt_req *r, dt_buf *b); /* every field, all values */

/* -------------------------------------------------------------- YAML/JSON */

/*
** Parse YAML (multi-document) or JSON text into a cJSON array of documents.
** YAML plain scalars resolve to null, booleans and numbers as YAML 1.2's core
** schema does; numbers keep their original text in valuestring so quantities
** such as "1e3" are read as written. On error err names the file and the line
** and column.
*/
int dt__doc_parse(const char *name, const char *buf, size_t len, cJSON **out, dt_error *err);
/* As dt__doc_parse, every node in a: the tree is dropped with a
** (dt__arena_free), never with cJSON_Delete, and no node may outlive a. */
int dt__doc_parse_in(dt_arena *a, const char *name, const char *buf, size_t len, cJSON **out, dt_error *err);
/* A JSON document that is one List object (kind ending in "List", an
** "items" array, each top-level key once): fn gets each item's text in
** order, to parse on its own, so the whole tree is never in memory. Returns
** 1 when every item was handed over, -1 when fn returned non-zero, and 0
** when buf is not such a List or its structure is broken (then possibly
** after some items: parse it whole, which says what is wrong). */
int dt__json_list_each(const char *buf, size_t len, int (*fn)(void *arg, const char *item, size_t n), void *arg);
/* The same for a JSON object whose keys are exactly keys[0..nkeys) (at most
** 8), each once and each an array: fn gets every item of keys[0]'s array,
** then of keys[1]'s, ..., with the key's number and the item's index. */
int dt__json_arrays_each(const char *buf, size_t len, const char *const *keys, size_t nkeys,
                         int (*fn)(void *arg, size_t key, size_t index, const char *item, size_t n), void *arg);

/* A JSON number as an integer, clamped to +-9e18 (NaN is 0): converting a
** double past int64 is undefined behaviour, and inputs may hold 1e300. */
/* Sums of requests (a node's bound pods, a pod's containers) saturate at
** DT_QTY_CAP milli-units: more than any machine has (2 PiB of memory), and
** two such values add without overflow. A pod's request of one resource
** is at most 1 PiB (reader.h), a node's allocatable at most DT_QTY_CAP. */
#define DT_QTY_CAP ((int64_t)1 << 61)
static inline int64_t dt__qty_add(int64_t a, int64_t b) { /* a, b in [-DT_QTY_CAP, DT_QTY_CAP] */
  int64_t s = a + b;
  return s > DT_QTY_CAP ? DT_QTY_CAP : s < -DT_QTY_CAP ? -DT_QTY_CAP : s;
}
static inline int64_t dt__qty_mul(int64_t v, int64_t n) { /* v in [0, DT_QTY_CAP], n >= 0 */
  return n > 0 && v > DT_QTY_CAP / n ? DT_QTY_CAP : v * n;
}

static inline int64_t dt__to_i64(double d) {
  return d != d ? 0 : d > 9e18 ? (int64_t)9e18 : d < -9e18 ? -(int64_t)9e18 : (int64_t)d;
}

/* The string member k of object o; NULL if absent or not a string. */
static inline const char *dt__jstr(const cJSON *o, const char *k) {
  return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

/* Text of a scalar (string or number with its original text); NULL if the
** item is not a scalar. Numbers without original text are formatted into tmp. */
const char *dt__scalar(const cJSON *item, char *tmp, size_t n);

/* Emit a cJSON tree as YAML into b (block style, keys in tree order). */
int dt__yaml_emit(const cJSON *docs, dt_buf *b);
/* The same for n documents made one at a time: doc(ud, i, &owned) returns
** document i (NULL: out of memory), which is deleted after it is emitted
** when owned; the buffer spills between documents. */
typedef const cJSON *dt_yaml_doc_fn(void *ud, size_t i, bool *owned);
int dt__yaml_emit_each(size_t n, dt_yaml_doc_fn *doc, void *ud, dt_buf *b);

/* A time zone's UTC offsets from the system's time-zone database (TZif). */
typedef struct dt_tz dt_tz;

/* Cron schedules (cron.c): five fields, in UTC or, after CRON_TZ=Area/City
** (or TZ=), in that zone's local time, daylight saving included. A schedule
** with a zone owns it: dt__cron_free. */
typedef struct dt_cron {
  uint64_t minute;
  uint32_t hour, dom;
  uint16_t month;
  uint8_t dow;
  bool dom_star, dow_star;
  dt_tz *tz; /* NULL: UTC */
} dt_cron;
int dt__cron_parse(const char *spec, dt_cron *c, char *why, size_t n); /* 0, or -1 with why */
int64_t dt__cron_next(const dt_cron *c, int64_t after);                /* first hit > after, -1 if none in 5 years */
void dt__cron_free(dt_cron *c);

/* JSON text: canonical (compact, object keys sorted bytewise, numbers as
** written), so equal values hash equal whatever their key order; output is
** pretty (two-space indent, keys in tree order). */
void dt__json_canon(const cJSON *n, dt_buf *b);
/* Pretty, but the containers on_one_line picks (given the container and
** its parent) written on one line: {"k": v, "k2": v2}, [a, b]. */
typedef bool (*dt_json_inline)(const cJSON *n, const cJSON *parent);
void dt__json_styled(const cJSON *n, const cJSON *parent, dt_buf *b, int depth, dt_json_inline on_one_line);
void dt__json_indent(dt_buf *b, int depth);   /* a new line, then depth levels of indent */
/* A key twice in one object of doc, depth first: 1, and where (when not
** NULL) gets its place, "items[3].metadata.labels: duplicate key \"app\"";
** 0 when there is none; DT_ENOMEM. */
int dt__json_dup(const cJSON *doc, char *where, size_t n);
/* One JSON document as the manifest reader takes it: UTF-8, within the
** limits, nothing but whitespace after it, no key twice; errors name
** name, the line and column, or the duplicate key's place. */
int dt__json_parse_one(const char *name, const char *buf, size_t len, cJSON **out, dt_error *err);
uint64_t dt__hash64(const char *s, size_t n); /* FNV-1a */

/* Building result documents: attach v under key (arrays ignore the key);
** on failure v is freed and NULL returned, and dt__alloc_failed() tells at
** the end. dt__doc_write renders one document as pretty JSON or YAML. */
cJSON *dt__json_put(cJSON *parent, const char *key, cJSON *v);
void dt__json_put_str(cJSON *o, const char *key, const char *v);
/* o[f[i].key] = f[i].val for the n fields f, strings in that order. */
typedef struct dt_field {
  const char *key, *val;
} dt_field;
void dt__json_put_fields(cJSON *o, const dt_field *f, size_t n);
/* A price as dt__fmt_price writes it (a raw JSON number), and a list of strings. */
void dt__json_put_price(cJSON *o, const char *key, double price);
void dt__json_put_strs(cJSON *o, const char *key, const char *const *v, size_t n);
void dt__json_put_num(cJSON *o, const char *key, double v);
void dt__doc_write(const cJSON *root, dt_format format, dt_buf *b);

/* The results as the documents their JSON is written from, each built from
** the result's typed structs (for the Lua module, which builds its tables'
** figures and notes from them, and their decisions from the accessors):
** the plan's is the caller's to free (NULL when out of memory), the others
** belong to their result. */
cJSON *dt__plan_doc(const dt_plan *plan);
/* What every NodeClaim dovetail writes carries, planned or written by the
** daemon as a replacement: the owner reference to its NodePool (only with the
** pool's uid: the API server takes none without), and on its annotations the
** marks drift is told by: the NodePool's template hash and, with its
** EC2NodeClass (nc_hash not NULL), that one's and Karpenter's where it has it. */
void dt__claim_owner(cJSON *md, const char *pool, const char *uid);
void dt__claim_drift_marks(cJSON *ann, uint64_t pool_hash, const uint64_t *nc_hash, const char *k_hash,
                           const char *k_version);
const cJSON *dt__plan_explain_doc(const dt_plan *plan); /* NULL without explain */
const cJSON *dt__disrupt_doc(const dt_disruption *d);
const cJSON *dt__pools_doc(const dt_pools *r);

#endif
