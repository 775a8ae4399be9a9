/*
** cron.c: standard five-field cron schedules (minute hour day-of-month month
** day-of-week), UTC, as disruption budgets use them: lists, ranges, steps,
** month and day names, 7 as Sunday, and the @yearly/@annually, @monthly,
** @weekly, @daily/@midnight and @hourly macros. When both day fields are
** restricted a day matches either (Vixie cron and robfig/cron, which
** Karpenter uses, agree). Debian ships no C cron library, hence this file.
*/
#include "internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const k_months[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                       "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const k_days[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

static int num(const char **p, int lo, int names_base, const char *const *names, int nnames, int *out) {
  const char *s = *p;
  if (isdigit((unsigned char)*s)) {
    long v = 0;
    while (isdigit((unsigned char)*s) && v < 1000) v = v * 10 + (*s++ - '0');
    *out = (int)v;
    *p = s;
    return 0;
  }
  for (int i = 0; names && i < nnames; i++)
    if (!strncasecmp(s, names[i], 3) && !isalpha((unsigned char)s[3])) {
      *out = names_base + i;
      *p = s + 3;
      return 0;
    }
  (void)lo;
  return -1;
}

/* One field into a bitmask over [lo, hi]. */
static int field(const char *s, int lo, int hi, int names_base, const char *const *names, int nnames, uint64_t *mask,
                 bool *star, char *why, size_t n, const char *what) {
  *mask = 0;
  *star = false;
  const char *p = s;
  while (*p) {
    int a, b, step = 1;
    if (*p == '*' || *p == '?') {
      a = lo;
      b = hi;
      p++;
      if (*p != '/') *star = true;
    } else {
      if (num(&p, lo, names_base, names, nnames, &a)) goto bad;
      b = a;
      if (*p == '-') {
        p++;
        if (num(&p, lo, names_base, names, nnames, &b)) goto bad;
      }
    }
    if (*p == '/') {
      p++;
      if (!isdigit((unsigned char)*p)) goto bad;
      step = 0;
      while (isdigit((unsigned char)*p) && step < 1000) step = step * 10 + (*p++ - '0');
      if (step < 1) goto bad;
      if (a == b && s[0] != '*') b = hi; /* "5/15" means 5-hi/15 */
    }
    if (a < lo || b > hi || a > b) {
      snprintf(why, n, "%s: %d-%d is outside %d-%d", what, a, b, lo, hi);
      return -1;
    }
    for (int v = a; v <= b; v += step) *mask |= 1ull << v;
    if (*p == ',') {
      p++;
      if (!*p) goto bad;
    } else if (*p) {
      goto bad;
    }
  }
  if (*mask) return 0;
bad:
  snprintf(why, n, "%s field \"%s\" is not a cron field (numbers, names, *, ranges a-b, steps /n, lists)", what, s);
  return -1;
}

/* ------------------------------------------------------------ time zones */

/*
** A zone as its transitions: from at[i] on, local time is UTC + off[i]
** seconds; before at[0], UTC + before. Read from the 64-bit section of a
** TZif file (RFC 8536) under TZDIR or /usr/share/zoneinfo; past the last
** transition (2037 in Debian's files) the last offset holds.
*/
struct dt_tz {
  size_t n;
  int64_t *at;
  int32_t *off;
  int32_t before;
};

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int tz_load(const char *name, dt_tz **out, char *why, size_t wn) {
  for (const char *s = name; *s; s++)
    if (!isalnum((unsigned char)*s) && !strchr("/_+-", *s)) {
      snprintf(why, wn, "time zone \"%s\": expected an Area/City name such as Europe/Berlin", name);
      return -1;
    }
  if (!*name || name[0] == '/' || strstr(name, "..")) {
    snprintf(why, wn, "time zone \"%s\": expected an Area/City name such as Europe/Berlin", name);
    return -1;
  }
  const char *dir = getenv("TZDIR");
  char path[600];
  snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", name);
  char *buf = NULL;
  size_t len = 0;
  dt_error err;
  if (dt__read_file(path, &buf, &len, &err)) {
    snprintf(why, wn, "time zone \"%s\": not in the time-zone database (%s)", name, path);
    return -1;
  }
  const unsigned char *p = (const unsigned char *)buf, *end = p + len;
  int rc = -1;
  dt_tz *z = NULL;
  /* v1 header and block (32-bit times), then the v2 header and block */
  if (len < 44 || memcmp(p, "TZif", 4) || p[4] < '2') goto bad;
  uint32_t cnt[6];
  for (int i = 0; i < 6; i++) cnt[i] = be32(p + 20 + 4 * i);
  size_t v1 = (size_t)cnt[3] * 5 + (size_t)cnt[4] * 6 + cnt[5] + (size_t)cnt[2] * 8 + cnt[1] + cnt[0];
  p += 44 + v1;
  if (p + 44 > end || memcmp(p, "TZif", 4)) goto bad;
  for (int i = 0; i < 6; i++) cnt[i] = be32(p + 20 + 4 * i);
  uint32_t nt = cnt[3], ntypes = cnt[4];
  p += 44;
  if (ntypes == 0 || nt > 100000 || ntypes > 256 || p + (size_t)nt * 9 + (size_t)ntypes * 6 > end) goto bad;
  z = dt__calloc(1, sizeof *z);
  if (!z || !(z->at = dt__calloc(nt ? nt : 1, sizeof *z->at)) || !(z->off = dt__calloc(nt ? nt : 1, sizeof *z->off)))
    goto oom;
  const unsigned char *times = p, *idx = p + (size_t)nt * 8, *types = idx + nt;
  for (uint32_t i = 0; i < nt; i++) {
    uint64_t hi = be32(times + 8 * i), lo = be32(times + 8 * i + 4);
    z->at[i] = (int64_t)(hi << 32 | lo);
    if (idx[i] >= ntypes) goto bad;
    z->off[i] = (int32_t)be32(types + 6 * idx[i]);
  }
  z->n = nt;
  z->before = (int32_t)be32(types); /* the first type: local time before any transition */
  *out = z;
  dt__free(buf);
  return 0;
bad:
  snprintf(why, wn, "time zone \"%s\": %s is not a TZif (version 2 or later) file", name, path);
  goto fail;
oom:
  snprintf(why, wn, "out of memory");
fail:
  if (z) {
    dt__free(z->at);
    dt__free(z->off);
    dt__free(z);
  }
  dt__free(buf);
  return rc;
}

static int32_t tz_offset(const dt_tz *z, int64_t utc) {
  size_t lo = 0, hi = z->n; /* the last transition at or before utc */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (z->at[mid] <= utc)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo ? z->off[lo - 1] : z->before;
}

void dt__cron_free(dt_cron *c) {
  if (c->tz) {
    dt__free(c->tz->at);
    dt__free(c->tz->off);
    dt__free(c->tz);
  }
  c->tz = NULL;
}

/* ------------------------------------------------------------------ cron */

static int64_t next_utc(const dt_cron *c, int64_t after);
static int parse_fields(const char *spec, dt_cron *c, char *why, size_t n);

int dt__cron_parse(const char *spec, dt_cron *c, char *why, size_t n) {
  while (isspace((unsigned char)*spec)) spec++;
  if (!strncmp(spec, "CRON_TZ=", 8) || !strncmp(spec, "TZ=", 3)) {
    const char *z = strchr(spec, '=') + 1, *sp = z;
    while (*sp && !isspace((unsigned char)*sp)) sp++;
    char name[200];
    snprintf(name, sizeof name, "%.*s", (int)(sp - z), z);
    dt_tz *tz = NULL;
    if (tz_load(name, &tz, why, n)) return -1;
    int rc = parse_fields(sp, c, why, n); /* the five fields (one zone: a second prefix is no field) */
    if (rc) {
      dt_cron tmp = {.tz = tz};
      dt__cron_free(&tmp);
      return rc;
    }
    c->tz = tz;
    return 0;
  }
  return parse_fields(spec, c, why, n);
}

/* The first hit after `after`: in a zone, the fields are matched on local
** time; a local time the zone skips (spring forward) does not happen, and one
** it repeats (fall back) happens at its first occurrence. */
int64_t dt__cron_next(const dt_cron *c, int64_t after) {
  if (!c->tz) return next_utc(c, after);
  int64_t local = after + tz_offset(c->tz, after);
  for (int tries = 0; tries < 1000; tries++) {
    int64_t l = next_utc(c, local); /* the next matching wall-clock time */
    if (l < 0) return -1;
    /* the instants showing l: with the offset in force a day before or after */
    int64_t ua = l - tz_offset(c->tz, l - 86400), ub = l - tz_offset(c->tz, l + 86400), best = -1;
    if (ua + tz_offset(c->tz, ua) == l && ua > after) best = ua;
    if (ub + tz_offset(c->tz, ub) == l && ub > after && (best < 0 || ub < best)) best = ub;
    if (best >= 0) return best;
    local = l; /* skipped by the zone, or not after `after`: the next wall-clock time */
  }
  return -1;
}

static int parse_fields(const char *spec, dt_cron *c, char *why, size_t n) {
  static const struct {
    const char *name, *expr;
  } macros[] = {{"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
                {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
                {"@hourly", "0 * * * *"}};
  memset(c, 0, sizeof *c);
  while (isspace((unsigned char)*spec)) spec++;
  if (spec[0] == '@') {
    for (size_t i = 0; i < sizeof macros / sizeof macros[0]; i++)
      if (!strcasecmp(spec, macros[i].name)) return parse_fields(macros[i].expr, c, why, n);
    snprintf(why, n, "unknown macro \"%s\" (@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)", spec);
    return -1;
  }
  char buf[256], *f[6];
  snprintf(buf, sizeof buf, "%s", spec);
  int nf = 0;
  for (char *save = NULL, *t = strtok_r(buf, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
    if (nf == 5) {
      nf++;
      break;
    }
    f[nf++] = t;
  }
  if (nf != 5) {
    snprintf(why, n, "expected 5 fields (minute hour day-of-month month day-of-week), got %s",
             nf > 5 ? "more" : "fewer");
    return -1;
  }
  uint64_t m;
  bool star;
  if (field(f[0], 0, 59, 0, NULL, 0, &c->minute, &star, why, n, "minute")) return -1;
  if (field(f[1], 0, 23, 0, NULL, 0, &m, &star, why, n, "hour")) return -1;
  c->hour = (uint32_t)m;
  if (field(f[2], 1, 31, 0, NULL, 0, &m, &c->dom_star, why, n, "day-of-month")) return -1;
  c->dom = (uint32_t)m;
  if (field(f[3], 1, 12, 1, k_months, 12, &m, &star, why, n, "month")) return -1;
  c->month = (uint16_t)m;
  if (field(f[4], 0, 7, 0, k_days, 7, &m, &c->dow_star, why, n, "day-of-week")) return -1;
  if (m & (1u << 7)) m |= 1; /* 7 is Sunday too */
  c->dow = (uint8_t)(m & 0x7f);
  return 0;
}

static bool day_ok(const dt_cron *c, int d, int dow) {
  bool dm = c->dom >> d & 1, wm = c->dow >> dow & 1;
  if (c->dom_star || c->dow_star) return dm && wm;
  return dm || wm;
}

static int64_t next_utc(const dt_cron *c, int64_t after) {
  int64_t t = (after >= 0 ? after / 60 : (after - 59) / 60) * 60 + 60;
  int64_t limit = after + 5 * 366 * 86400LL;
  while (t <= limit) {
    int64_t days = (t >= 0 ? t / 86400 : (t - 86399) / 86400), y;
    int m, d;
    dt__civil_from_days(days, &y, &m, &d);
    int64_t sod = t - days * 86400;
    int h = (int)(sod / 3600), mi = (int)(sod / 60 % 60);
    int dow = (int)(((days % 7) + 11) % 7); /* 1970-01-01 was a Thursday */
    if (!(c->month >> m & 1)) {
      t = dt__days_from_civil(m == 12 ? y + 1 : y, m == 12 ? 1 : m + 1, 1) * 86400;
    } else if (!day_ok(c, d, dow)) {
      t = (days + 1) * 86400;
    } else if (!(c->hour >> h & 1)) {
      t = days * 86400 + (int64_t)(h + 1) * 3600;
    } else if (!(c->minute >> mi & 1)) {
      t += 60;
    } else {
      return t;
    }
  }
  return -1;
}
