/* Plans at scale from a few bytes: up to 1,500 pods of up to 40 shapes on
** the bundled AWS catalog, under one or two NodePools, first-fit and cost
** packing both. Inputs the manifest target can reach stay small (a few dozen
** pods), and first-fit's bookkeeping over hundreds of open claims of every
** pod count, or column generation over dozens of shapes, need more.
**
** The input: byte 0 the number of shapes (1 + b % 40); byte 1 the variant
** (bits 0-1 the NodePool's types: c/m/r of generation 5 and up with at most
** 32, 8 or 64 vCPUs, or every amd64 type; bit 2 spot allowed; bit 3 a cpu
** limit; bit 4 a second NodePool of weight 10 for memory-optimised types;
** bit 5 half the pods in a second namespace); then two bytes per shape (its
** cpu and memory, from the tables below); then pairs (shape, count - 1)
** until the input ends or 1,500 pods. Every plan must account for every pod
** exactly once (on a claim or unschedulable), and without a limit cost
** packing must never cost more than first-fit. */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PODS 1500

static const unsigned k_cpu_m[16] = {50,   100,  125,  250,  375,  500,  750,   1000,
                                     1500, 2000, 3000, 4000, 6000, 8000, 15000, 30000};
static const unsigned k_mem_mi[16] = {64,   128,  256,  512,  768,   1024,  1536,  2048,
                                      3072, 4096, 6144, 8192, 12288, 16384, 32768, 65536};

static dt_catalog *cat;

typedef struct buf {
  char *p;
  size_t len, cap;
} buf;

static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(buf *b, const char *fmt, ...) {
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0) abort();
    if ((size_t)n < b->cap - b->len) {
      b->len += (size_t)n;
      return;
    }
    b->cap = 2 * b->cap + (size_t)n + 1;
    if (!(b->p = realloc(b->p, b->cap))) abort();
  }
}

static void pool(buf *b, const char *name, int weight, unsigned types, bool spot, bool limit) {
  static const char *const cpu_lt[] = {"33", "9", "65", NULL};
  put(b, "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"%s\"},\"spec\":{", name);
  if (weight) put(b, "\"weight\":%d,", weight);
  if (limit) put(b, "\"limits\":{\"cpu\":\"2000\"},");
  put(b,
      "\"template\":{\"spec\":{\"requirements\":["
      "{\"key\":\"kubernetes.io/arch\",\"operator\":\"In\",\"values\":[\"amd64\"]},"
      "{\"key\":\"karpenter.k8s.aws/instance-gpu-count\",\"operator\":\"DoesNotExist\"},"
      "{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\":[\"on-demand\"%s]}",
      spot ? ",\"spot\"" : "");
  if (weight)
    put(b, ",{\"key\":\"karpenter.k8s.aws/instance-category\",\"operator\":\"In\",\"values\":[\"r\"]}");
  else if (cpu_lt[types & 3])
    put(b,
        ",{\"key\":\"karpenter.k8s.aws/instance-category\",\"operator\":\"In\",\"values\":[\"c\",\"m\",\"r\"]},"
        "{\"key\":\"karpenter.k8s.aws/instance-generation\",\"operator\":\"Gt\",\"values\":[\"4\"]},"
        "{\"key\":\"karpenter.k8s.aws/instance-cpu\",\"operator\":\"Lt\",\"values\":[\"%s\"]}",
        cpu_lt[types & 3]);
  put(b, "]}}}}");
}

/* Pod "namespace/pK" counted in seen[K]: abort on a pod twice, or one that
** was not asked for. */
static void count_pod(uint8_t *seen, size_t n, const char *pod) {
  const char *slash = strchr(pod, '/');
  unsigned long k = strtoul(slash ? slash + 2 : "", NULL, 10);
  if (!slash || k >= n || seen[k]++) abort();
}

/* Every pod p0..p(n-1) once: on a claim or unschedulable. */
static void check_accounts(const dt_plan *p, size_t n) {
  uint8_t *seen = calloc(n ? n : 1, 1);
  if (!seen) abort();
  size_t count = 0;
  dt_claim_info ci;
  for (size_t i = 0; !dt_plan_claim(p, i, &ci); i++, count += ci.npods)
    for (size_t j = 0; j < ci.npods; j++) count_pod(seen, n, ci.pods[j]);
  dt_unschedulable_info u;
  for (size_t i = 0; !dt_plan_unschedulable(p, i, &u); i++, count++) count_pod(seen, n, u.pod);
  if (count != n) abort(); /* a pod lost */
  free(seen);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dt_error err;
  if (!cat && dt_catalog_load_default(&cat, &err)) abort();
  if (size < 4) return 0;
  unsigned ns = 1 + data[0] % 40, variant = data[1];
  if (size < 2 + 2 * (size_t)ns) return 0;
  const uint8_t *sh = data + 2;
  buf b = {malloc(1 << 16), 0, 1 << 16};
  if (!b.p) abort();
  put(&b, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[");
  pool(&b, "default", 0, variant & 3, variant & 4, variant & 8);
  if (variant & 16) {
    put(&b, ",");
    pool(&b, "memory", 10, 0, variant & 4, false);
  }
  size_t n = 0;
  for (size_t i = 2 + 2 * (size_t)ns; i + 1 < size && n < MAX_PODS; i += 2) {
    unsigned s = data[i] % ns, count = 1 + data[i + 1];
    for (unsigned c = 0; c < count && n < MAX_PODS; c++, n++)
      put(&b,
          ",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p%zu\",\"namespace\":\"%s\"},\"spec\":{"
          "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"%um\",\"memory\":\"%uMi\"}}}]}}",
          n, variant & 32 && n % 2 ? "other" : "default", k_cpu_m[sh[2 * s] % 16], k_mem_mi[sh[2 * s + 1] % 16]);
  }
  put(&b, "]}");
  dt_manifests *m = dt_manifests_new();
  if (!m) abort();
  if (dt_manifests_add_buffer(m, "fuzz", b.p, b.len, &err)) abort(); /* made here: always valid */
  double cost[2] = {0, 0};
  for (int k = 0; k < 2; k++) {
    dt_plan_opts o = {0};
    o.now = 1795435200;
    o.packing = k ? DT_PACKING_COST : DT_PACKING_FFD;
    dt_plan *p = NULL;
    if (dt_plan_run(cat, m, &o, &p, &err)) abort(); /* no input here is bad; only memory may run out */
    check_accounts(p, n);
    dt_plan_stats st;
    dt_plan_stats_get(p, &st);
    cost[k] = st.hourly_cost;
    dt_plan_free(p);
  }
  if (!(variant & 8) && cost[1] > cost[0] * (1 + 1e-9) + 1e-9) abort(); /* cost packing above first-fit */
  dt_manifests_free(m);
  free(b.p);
  return 0;
}
