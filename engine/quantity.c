/*
** quantity.c: Kubernetes resource quantities, exactly.
**
** A quantity is <signed decimal><suffix>, the suffix binary (Ki..Ei), decimal
** SI (n, u, m, "", k, M, G, T, P, E) or a decimal exponent (e3, E-2). We keep
** the decimal digits as an integer and the scale as powers of ten and two, so
** "0.1" times 1000 is exactly 100, never 99.99999. Values are returned as
** milli-units rounded up, as resource.Quantity.MilliValue does.
*/
#include "internal.h"

#include <string.h>

typedef __int128 i128;

static const struct {
  const char *s;
  int p10, p2;
} k_suffix[] = {
    {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"k", 3, 0},   {"M", 6, 0},   {"G", 9, 0},
    {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},  {"", 0, 0},
};

int dt_quantity_parse(const char *s, int64_t *milli, dt_error *err) {
  if (!s || !*s) return dt__err(err, DT_EINVAL, "empty quantity");
  const char *p = s;
  int neg = 0;
  if (*p == '+' || *p == '-') neg = *p++ == '-';
  i128 mant = 0;
  int digits = 0, frac = 0, seen_dot = 0, sig = 0;
  for (;; p++) {
    if (*p >= '0' && *p <= '9') {
      digits++;
      if (mant == 0 && *p == '0' && !seen_dot) continue;
      if (sig >= 30) {
        /* Beyond 30 significant digits: integer digits overflow below;
        ** fractional ones are below any resolution we keep. */
        if (!seen_dot) return dt__err(err, DT_ERANGE, "quantity \"%s\" is too large", s);
        continue;
      }
      mant = mant * 10 + (*p - '0');
      if (mant) sig++;
      if (seen_dot) frac++;
    } else if (*p == '.' && !seen_dot) {
      seen_dot = 1;
    } else {
      break;
    }
  }
  if (!digits) return dt__err(err, DT_EINVAL, "invalid quantity \"%s\": expected a number such as 250m, 1.5Gi or 2", s);
  int p10 = -frac, p2 = 0;
  if ((*p == 'e' || *p == 'E') && (p[1] == '-' || p[1] == '+' || (p[1] >= '0' && p[1] <= '9'))) {
    const char *q = p + 1;
    int eneg = 0, e = 0, ed = 0;
    if (*q == '+' || *q == '-') eneg = *q++ == '-';
    while (*q >= '0' && *q <= '9') {
      if (e < 1000) e = e * 10 + (*q - '0');
      q++;
      ed++;
    }
    if (!ed || *q) return dt__err(err, DT_EINVAL, "invalid quantity \"%s\": bad exponent", s);
    p10 += eneg ? -e : e;
  } else {
    size_t i;
    for (i = 0; i < sizeof k_suffix / sizeof k_suffix[0]; i++)
      if (strcmp(p, k_suffix[i].s) == 0) break;
    if (i == sizeof k_suffix / sizeof k_suffix[0])
      return dt__err(err, DT_EINVAL,
                     "invalid quantity \"%s\": unknown suffix \"%s\" (expected one of n u m k M G T P E "
                     "Ki Mi Gi Ti Pi Ei or an exponent such as e3)",
                     s, p);
    p10 += k_suffix[i].p10;
    p2 = k_suffix[i].p2;
  }
  p10 += 3; /* milli */
  const i128 lim = (i128)INT64_MAX;
  i128 v = mant;
  if (v != 0) {
    for (; p2 > 0; p2--) {
      v *= 2;
      if (v > lim) goto range;
    }
    for (; p10 > 0; p10--) {
      v *= 10;
      if (v > lim) goto range;
    }
    if (p10 < 0) {
      i128 div = 1;
      int all_zero = 0;
      for (; p10 < 0; p10++) {
        div *= 10;
        if (div > v * 10 + 10) {
          all_zero = 1; /* the value is below 1 milli-unit */
          break;
        }
      }
      if (all_zero)
        v = neg ? 0 : 1;
      else if (neg)
        v = v / div;
      else
        v = (v + div - 1) / div;
    }
  }
  if (v > lim) goto range; /* digits alone can pass the limit ("9223372036854775808m") */
  *milli = (int64_t)(neg ? -v : v);
  return 0;
range:
  return dt__err(err, DT_ERANGE, "quantity \"%s\" is too large", s);
}

void dt__fmt_quantity(char *out, size_t n, const char *resource, int64_t milli) {
  if (strcmp(resource, "cpu") == 0) {
    if (milli % 1000 == 0)
      snprintf(out, n, "%lld", (long long)(milli / 1000));
    else
      snprintf(out, n, "%lldm", (long long)milli);
    return;
  }
  if (milli % 1000 != 0) {
    snprintf(out, n, "%lldm", (long long)milli);
    return;
  }
  int64_t v = milli / 1000;
  bool bytes = strcmp(resource, "memory") == 0 || strcmp(resource, "ephemeral-storage") == 0 ||
               strncmp(resource, "hugepages-", 10) == 0;
  static const char *bin[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  if (bytes && v != 0) {
    int k = -1;
    while (k < 5 && v % 1024 == 0) {
      v /= 1024;
      k++;
    }
    if (k >= 0) {
      snprintf(out, n, "%lld%s", (long long)v, bin[k]);
      return;
    }
  }
  snprintf(out, n, "%lld", (long long)v);
}
