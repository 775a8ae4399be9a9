/*
** alloc.c: the one allocator, arenas, growable strings and small helpers.
**
** All memory goes through dt__malloc and friends so a test can swap in a
** failing allocator (dt_set_allocator) and check that every path reports
** DT_ENOMEM instead of crashing.
*/

#include "internal.h"

#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *(*g_malloc)(size_t) = malloc;
static void *(*g_realloc)(void *, size_t) = realloc;
static void (*g_free)(void *) = free;

/* Set when an allocation fails in this thread, so a parser that reports
** only "failed" (cJSON) can be told apart from bad input. */
static _Thread_local int t_alloc_failed;

/* While set, cJSON allocates from this arena and frees nothing: a parse
** tree read once and dropped whole costs no malloc and no free per node
** (the per-node frees of a large tree also leave glibc tens of thousands of
** small chunks to consolidate at the next large allocation). */
static _Thread_local dt_arena *t_cj_arena;

static void *arena_take(dt_arena *a, size_t n);

static void *cj_malloc(size_t n) {
  void *p = t_cj_arena ? arena_take(t_cj_arena, n ? n : 1) : g_malloc(n ? n : 1);
  if (!p) t_alloc_failed = 1;
  return p;
}

static void cj_free(void *p) {
  if (!t_cj_arena) g_free(p);
}

dt_arena *dt__cj_arena(dt_arena *a) {
  dt_arena *old = t_cj_arena;
  t_cj_arena = a;
  return old;
}

static pthread_once_t g_hooks_once = PTHREAD_ONCE_INIT;

static void install_hooks(void) {
  cJSON_Hooks hooks = {cj_malloc, cj_free};
  cJSON_InitHooks(&hooks);
}

void dt__init(void) { pthread_once(&g_hooks_once, install_hooks); }

int dt__alloc_failed(int reset) {
  int v = t_alloc_failed;
  if (reset) t_alloc_failed = 0;
  return v;
}

void dt_set_allocator(void *(*m)(size_t), void *(*r)(void *, size_t), void (*f)(void *)) {
  if (m == NULL || r == NULL || f == NULL) {
    m = malloc;
    r = realloc;
    f = free;
  }
  g_malloc = m;
  g_realloc = r;
  g_free = f;
  dt__init();
}

void *dt__malloc(size_t n) {
  void *p = g_malloc(n ? n : 1);
  if (!p) t_alloc_failed = 1;
  return p;
}

void *dt__calloc(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) {
    t_alloc_failed = 1;
    return NULL;
  }
  size_t total = n * size;
  void *p = g_malloc(total ? total : 1);
  if (p)
    memset(p, 0, total);
  else
    t_alloc_failed = 1;
  return p;
}

void *dt__realloc(void *p, size_t n) {
  void *q = g_realloc(p, n ? n : 1);
  if (!q) t_alloc_failed = 1;
  return q;
}

void dt__free(void *p) {
  if (p) g_free(p);
}

void dt_free(void *p) { dt__free(p); }

char *dt__strndup(const char *s, size_t n) {
  char *p = dt__malloc(n + 1);
  if (p) {
    memcpy(p, s, n);
    p[n] = 0;
  }
  return p;
}

char *dt__strdup(const char *s) { return dt__strndup(s, strlen(s)); }

int dt__err(dt_error *err, int code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code;
  }
  return code;
}

const char *dt_strerror(int code) {
  switch (code) {
  case 0: return "success";
  case DT_EINVAL: return "invalid input";
  case DT_ENOMEM: return "out of memory";
  case DT_EIO: return "input/output error";
  case DT_ERANGE: return "number out of range";
  case DT_ELIMIT: return "input past a limit";
  case DT_ECANCELED: return "cancelled";
  default: return "unknown error";
  }
}

int dt__vec_grow(void **v, size_t *cap, size_t need, size_t elem) {
  size_t nc = *cap ? *cap : 8;
  while (nc < need) nc *= 2;
  void *p = dt__realloc(*v, nc * elem);
  if (!p) return DT_ENOMEM;
  *v = p;
  *cap = nc;
  return 0;
}

/* ---------------------------------------------------------------- arena */

struct dt_arena_chunk {
  dt_arena_chunk *next;
  size_t cap;
  /* data follows, aligned */
  max_align_t data[];
};

void *dt__arena_alloc(dt_arena *a, size_t n) {
  void *p = arena_take(a, n);
  if (p) memset(p, 0, n);
  return p;
}

void *dt__arena_raw(dt_arena *a, size_t n) { return arena_take(a, n); }

/* n bytes, 16-byte aligned, not cleared. */
static void *arena_take(dt_arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (!a->head || a->used + n > a->cap) {
    size_t cap = n > 65536 ? n : 65536;
    if (a->head && a->cap * 2 > cap && a->cap < (1u << 24)) cap = a->cap * 2;
    dt_arena_chunk *c = dt__malloc(sizeof *c + cap);
    if (!c) {
      a->oom = 1;
      return NULL;
    }
    c->next = a->head;
    c->cap = cap;
    a->head = c;
    a->used = 0;
    a->cap = cap;
  }
  void *p = (char *)a->head->data + a->used;
  a->used += n;
  return p;
}

void dt__arena_reserve(dt_arena *a, size_t n) {
  if (a->head) return;
  void *p = arena_take(a, n); /* not cleared: what is carved from it later is */
  if (p) a->used = 0;         /* the first chunk, empty again */
}

char *dt__arena_strdup(dt_arena *a, const char *s) {
  size_t n = strlen(s);
  char *p = dt__arena_alloc(a, n + 1);
  if (p) memcpy(p, s, n + 1);
  return p;
}

void dt__arena_reset(dt_arena *a) {
  if (!a->head) return;
  dt_arena_chunk *keep = a->head, *c = keep->next; /* the newest is the largest */
  while (c) {
    dt_arena_chunk *n = c->next;
    dt__free(c);
    c = n;
  }
  keep->next = NULL;
  a->used = 0;
  a->cap = keep->cap;
}

void dt__arena_free(dt_arena *a) {
  dt_arena_chunk *c = a->head;
  while (c) {
    dt_arena_chunk *n = c->next;
    dt__free(c);
    c = n;
  }
  memset(a, 0, sizeof *a);
}

/* ------------------------------------------------------------------ buf */

static int buf_reserve(dt_buf *b, size_t extra) {
  if (b->oom) return -1;
  if (b->len + extra + 1 <= b->cap) return 0;
  size_t nc = b->cap ? b->cap : 256;
  while (nc < b->len + extra + 1) nc *= 2;
  char *p = dt__realloc(b->p, nc);
  if (!p) {
    b->oom = 1;
    return -1;
  }
  b->p = p;
  b->cap = nc;
  return 0;
}

void dt__buf_putn(dt_buf *b, const char *s, size_t n) {
  if (buf_reserve(b, n)) return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
}

void dt__buf_puts(dt_buf *b, const char *s) { dt__buf_putn(b, s, strlen(s)); }

void dt__buf_spill(dt_buf *b, bool all) {
  if (!b->sink || b->oom || !b->len || (!all && b->len < 65536)) return;
  if (b->sink(b->sink_ud, b->p, b->len)) b->ioerr = b->oom = 1;
  b->len = 0;
  b->p[0] = 0;
}

const char dt__join_end[] = "";

size_t dt__join_(char *dst, size_t cap, ...) {
  va_list ap;
  va_start(ap, cap);
  size_t len = 0;
  for (const char *s = va_arg(ap, const char *); s != dt__join_end; s = va_arg(ap, const char *)) {
    if (!s) s = "(null)";
    size_t n = strlen(s);
    if (len + 1 < cap) {
      size_t room = cap - 1 - len;
      memcpy(dst + len, s, n < room ? n : room);
    }
    len += n;
  }
  va_end(ap);
  if (cap) dst[len < cap - 1 ? len : cap - 1] = 0;
  return len;
}

void dt__sig_u32(dt_buf *b, uint32_t v) { dt__buf_putn(b, (const char *)&v, sizeof v); }

void dt__sig_i64(dt_buf *b, int64_t v) { dt__buf_putn(b, (const char *)&v, sizeof v); }

void dt__sig_str(dt_buf *b, const char *s) {
  size_t n = s ? strlen(s) : 0;
  dt__sig_u32(b, s ? (uint32_t)n : UINT32_MAX);
  if (n) dt__buf_putn(b, s, n);
}

void dt__buf_putc(dt_buf *b, char c) { dt__buf_putn(b, &c, 1); }

void dt__buf_printf(dt_buf *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof tmp) {
    dt__buf_putn(b, tmp, (size_t)n);
    return;
  }
  if (buf_reserve(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

/* Length of the valid UTF-8 sequence at s (1..4), 0 if invalid. Overlong
** forms, surrogates and code points past U+10FFFF are invalid, as RFC 3629. */
size_t dt__utf8_seq(const char *p, size_t n) {
  const unsigned char *s = (const unsigned char *)p;
  unsigned c = s[0];
  if (c < 0x80) return 1;
  size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (!len || len > n || c > 0xF4) return 0;
  for (size_t i = 1; i < len; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] > 0x9F) || (c == 0xF0 && s[1] < 0x90) ||
      (c == 0xF4 && s[1] > 0x8F))
    return 0;
  return len;
}

size_t dt__utf8_valid(const char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    size_t k = dt__utf8_seq(s + i, n - i);
    if (!k) return i;
    i += k;
  }
  return n;
}

void dt__buf_utf8(dt_buf *b, const char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    size_t ok = dt__utf8_valid(s + i, n - i);
    dt__buf_putn(b, s + i, ok);
    i += ok;
    if (i < n) {
      dt__buf_puts(b, "\xEF\xBF\xBD"); /* U+FFFD REPLACEMENT CHARACTER */
      i++;
    }
  }
}

void dt__buf_json_str(dt_buf *b, const char *s) {
  dt__buf_putc(b, '"');
  const char *run = s;
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c >= 0x80) { /* JSON text is UTF-8: a stray byte becomes U+FFFD */
      size_t k = dt__utf8_seq(s, strnlen(s, 4));
      if (k) {
        s += k - 1;
        continue;
      }
      dt__buf_putn(b, run, (size_t)(s - run));
      dt__buf_puts(b, "\xEF\xBF\xBD");
      run = s + 1;
      continue;
    }
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    dt__buf_putn(b, run, (size_t)(s - run));
    switch (c) {
    case '"': dt__buf_puts(b, "\\\""); break;
    case '\\': dt__buf_puts(b, "\\\\"); break;
    case '\n': dt__buf_puts(b, "\\n"); break;
    case '\t': dt__buf_puts(b, "\\t"); break;
    case '\r': dt__buf_puts(b, "\\r"); break;
    default: dt__buf_printf(b, "\\u%04x", c);
    }
    run = s + 1;
  }
  dt__buf_putn(b, run, (size_t)(s - run));
  dt__buf_putc(b, '"');
}

char *dt__buf_take(dt_buf *b, size_t *len) {
  if (buf_reserve(b, 0)) {
    dt__free(b->p);
    memset(b, 0, sizeof *b);
    return NULL;
  }
  b->p[b->len] = 0;
  char *p = b->p;
  if (len) *len = b->len;
  memset(b, 0, sizeof *b);
  return p;
}

/* ------------------------------------------------------------------ misc */

int dt__read_file(const char *path, char **out, size_t *len, dt_error *err) {
  return dt__read_file_max(path, (size_t)DT_MAX_INPUT_BYTES, "the limit on one input file", out, len, err);
}

int dt__read_file_max(const char *path, size_t max, const char *what, char **out, size_t *len, dt_error *err) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (f == stdin) path = "<stdin>"; /* as every message names it */
  if (!f) return dt__err(err, DT_EIO, "%s: cannot open: %s", path, strerror(errno));
  dt_buf b = {0};
  char tmp[65536];
  size_t n;
  errno = 0;
  while (b.len <= max && (n = fread(tmp, 1, sizeof tmp, f)) > 0) dt__buf_putn(&b, tmp, n);
  int bad = ferror(f), why = errno;
  if (f != stdin) fclose(f);
  if (b.len > max) {
    dt__free(b.p);
    return dt__err(err, DT_ELIMIT, "%s: larger than %zu bytes (%s)", path, max, what);
  }
  if (bad) {
    dt__free(b.p);
    return dt__err(err, DT_EIO, "%s: read error%s%s", path, why ? ": " : "", why ? strerror(why) : "");
  }
  if (b.oom) {
    dt__free(b.p);
    return dt__err(err, DT_ENOMEM, "%s: out of memory reading the file", path);
  }
  if (!b.p) {
    b.p = dt__malloc(1);
    if (!b.p) return dt__err(err, DT_ENOMEM, "out of memory");
    b.p[0] = 0;
  }
  *out = b.p;
  *len = b.len;
  return 0;
}

double dt__now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void dt__fmt_price(char *out, size_t n, double v) {
  /* Prices are rounded to 1e-7 $/h so sums print the same on every machine. */
  double r = round(v * 1e7) / 1e7;
  snprintf(out, n, "%.7f", r);
  char *dot = strchr(out, '.');
  if (dot) {
    char *e = out + strlen(out) - 1;
    while (e > dot && *e == '0') *e-- = 0;
    if (e == dot) *e = 0;
  }
}

/* Days since 1970-01-01 from a civil date and back (Howard Hinnant's
** algorithms, public domain). */
int64_t dt__days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int dt_time_parse(const char *s, int64_t *out, dt_error *err) {
  int y, mo, d, h, mi, se, n = 0;
  static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (!s || sscanf(s, "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &se, &n) != 6 || y < 0 || mo < 1 ||
      mo > 12 || d < 1 || d > mdays[mo - 1] ||
      (mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))) || h < 0 || h > 23 || mi < 0 || mi > 59 ||
      se < 0 || se > 60)
    return dt__err(err, DT_EINVAL, "invalid time \"%s\": expected RFC 3339, e.g. 2026-11-22T10:00:00Z", s ? s : "");
  const char *p = s + n;
  if (*p == '.') {
    p++;
    while (*p >= '0' && *p <= '9') p++;
  }
  int64_t off = 0;
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    int oh, om;
    if (!(p[1] >= '0' && p[1] <= '9' && p[2] >= '0' && p[2] <= '9' && p[3] == ':' && p[4] >= '0' && p[4] <= '9' &&
          p[5] >= '0' && p[5] <= '9') ||
        sscanf(p + 1, "%2d:%2d", &oh, &om) != 2 || oh > 23 || om > 59)
      return dt__err(err, DT_EINVAL, "invalid time \"%s\": bad zone offset", s);
    off = (oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
    p += 6;
  } else {
    return dt__err(err, DT_EINVAL, "invalid time \"%s\": missing zone (Z or +hh:mm)", s);
  }
  if (*p) return dt__err(err, DT_EINVAL, "invalid time \"%s\": trailing text", s);
  *out = dt__days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - off;
  return 0;
}

int dt__uint_parse(const char *s, unsigned long long *out, char **end) {
  if (!s || *s < '0' || *s > '9') return -1;
  errno = 0;
  *out = strtoull(s, end, 10);
  return errno == ERANGE ? -1 : 0;
}

/* A duration for an option, in milliseconds: "0", "250ms" (whole
** milliseconds only) or a Go-style duration (dt__duration_parse). 0, or -1. */
int dt__duration_ms_parse(const char *s, int64_t *ms) {
  int64_t v;
  size_t n = s ? strlen(s) : 0;
  if (n == 1 && s[0] == '0') {
    *ms = 0;
    return 0;
  }
  if (n > 2 && !strcmp(s + n - 2, "ms")) {
    char *end;
    long long x = strtoll(s, &end, 10);
    if (end != s + n - 2 || x < 0) return -1;
    *ms = x;
    return 0;
  }
  if (dt__duration_parse(s, &v) || v < 0 || v > INT64_MAX / 1000) return -1;
  *ms = v * 1000;
  return 0;
}

/* Go-style durations as Kubernetes objects write them (time.ParseDuration):
** "3m", "1h30m", "90s", "500ms", "1.5h". Fractions of a second are dropped. */
int dt__duration_parse(const char *s, int64_t *out) {
  if (!s || !*s) return -1;
  const char *p = s;
  int64_t total = 0;
  while (*p) {
    if ((*p < '0' || *p > '9') && *p != '.') return -1;
    int64_t v = 0, frac = 0, scale = 1;
    bool digits = false;
    while (*p >= '0' && *p <= '9') {
      if (v > INT64_MAX / 10 - 10) return -1;
      v = v * 10 + (*p++ - '0');
      digits = true;
    }
    if (*p == '.') {
      p++;
      for (; *p >= '0' && *p <= '9'; p++, digits = true)
        if (scale < 1000000000) { /* nine places: finer than the units below need */
          frac = frac * 10 + (*p - '0');
          scale *= 10;
        }
    }
    if (!digits) return -1;
    int64_t unit;
    if (p[0] == 'm' && p[1] == 's') {
      frac = (v % 1000 * scale + frac) / 1000; /* of a second, over scale */
      v /= 1000;
      unit = 1;
      p += 2;
    } else if (*p == 'h') {
      unit = 3600;
      p++;
    } else if (*p == 'm') {
      unit = 60;
      p++;
    } else if (*p == 's') {
      unit = 1;
      p++;
    } else {
      return -1;
    }
    if (v > INT64_MAX / unit - total - unit) return -1;
    total += v * unit + (int64_t)((__int128)frac * unit / scale);
  }
  *out = total;
  return 0;
}

/* RFC 3339 UTC text of Unix seconds. */
void dt__civil_from_days(int64_t days, int64_t *y, int *m, int *d) {
  days += 719468;
  int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  int64_t doe = days - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

void dt__fmt_time(int64_t t, char *out, size_t n) {
  int64_t days = t / 86400, rem = t % 86400, y;
  if (rem < 0) {
    rem += 86400;
    days--;
  }
  int m, d;
  dt__civil_from_days(days, &y, &m, &d);
  snprintf(out, n, "%04lld-%02d-%02dT%02lld:%02lld:%02lldZ", (long long)y, m, d, (long long)(rem / 3600),
           (long long)(rem / 60 % 60), (long long)(rem % 60));
}
