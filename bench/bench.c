/*
** bench.c: `make bench`. Generates the workloads in memory as the JSON a
** user would feed (a kind: List of Pods), then times parsing and scheduling
** separately through the public API.
**
** Cases:
**   karpenter-generic-N  Karpenter's scheduling benchmark catalog (400 fake
**                        types, scheduling_benchmark_test.go) with N generic
**                        pods, seed 42.
**   azure-100k           100,000 pods drawn from the Azure 2017 VM request
**                        shapes (bench/workload-azure-vm-2017.json) on the
**                        bundled AWS us-east-1 catalog, amd64, no GPU.
**   peak-*               the Azure peak hour (5,968 pods) on the full catalog
**                        and on c/m/r gen >= 5 <= 32 vCPU, on-demand or with
**                        spot, first-fit against cost packing, each against
**                        three lower bounds: the covering LP, the assignment
**                        LP (glpsol) and the pattern LP (GLPK's library,
**                        column generation with exact knapsack pricing).
**   many-*               the same four catalog cases on the many-shape
**                        workload (bench/workload-many-shapes.json: 5,968
**                        pods in 217 shapes, exact counts); the pattern LP
**                        with partial pricing and 5 minutes of CPU, reported
**                        as optimal or as a bound with its gap.
**   many-190k-full-od    those shapes resampled to 190,000 pods, full
**                        catalog on-demand: cost packing's time at tens of
**                        thousands of nodes.
**   distinct-5k-full-od  5,000 pods each of its own shape: cost packing's
**                        time when shapes are as many as pods.
**   distinct-64-full-spot 64 such pods with spot allowed: a small group
**                        whose pattern LP is degenerate.
**
** DOVETAIL_BENCH_ONLY=distinct runs only the two distinct-* cases.
** DOVETAIL_BENCH_ONLY=million adds azure-1m (the same shapes, 1,000,000
** pods) and compares its time per pod with azure-100k's: three pairs of
** runs one after the other, the median ratio and its range.
**
** DOVETAIL_BENCH_DUMP=DIR writes each peak-*, many-* and azure-1m case's
** manifests to DIR/CASE.json for `dovetail plan`; DOVETAIL_BENCH_NO_PATTERN=1
** skips the pattern LP (the assignment LP stands in) when only the plans are
** wanted.
**
** Each line reports pods, nodes, $/h, the LP lower bound ratio (fractional
** nodes covering summed cpu, memory and pods, solved by glpsol when it is
** installed), parse and scheduling milliseconds, pods/s and peak RSS.
*/
#define _GNU_SOURCE
#include "dovetail.h"

#include <glpk.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint64_t rng;
static uint64_t next(void) {
  uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* CPU time of this process, ms: on a shared machine the wall time of a
** single-threaded run grows with the load, this does not. */
static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* DOVETAIL_BENCH_DUMP=DIR: a case's manifests to DIR/NAME.json, for
** `dovetail plan` under a profiler. */
static void dump(const char *name, const char *text, size_t len) {
  const char *dir = getenv("DOVETAIL_BENCH_DUMP");
  if (!dir) return;
  char path[512];
  snprintf(path, sizeof path, "%s/%s.json", dir, name);
  FILE *f = fopen(path, "w");
  if (!f || fwrite(text, 1, len, f) != len) fprintf(stderr, "bench: cannot write %s\n", path);
  if (f) fclose(f);
}

static double peak_rss_mib(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_maxrss / 1024.0;
}

/* An LP type for the lower bound. */
typedef struct lp_type {
  double cpu, mem, pods, price; /* allocatable cores, GiB, pods; $/h */
} lp_type;

/* Solve the CPLEX LP file at path with glpsol and remove it; NAN when glpsol
** is missing or fails. */
static double glpsol(const char *path) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "glpsol --lp %s -o /dev/stdout 2>/dev/null", path);
  FILE *p = popen(cmd, "r");
  double obj = NAN;
  char line[512];
  while (p && fgets(line, sizeof line, p))
    if (sscanf(line, "Objective: obj = %lf", &obj) == 1) break;
  if (p) {
    while (fgets(line, sizeof line, p)) {
    }
    pclose(p);
  }
  remove(path);
  return obj;
}

/* min sum price_t x_t  s.t. sum cpu_t x_t >= C, mem, pods; x >= 0. */
static double lp_bound(const lp_type *t, size_t n, double C, double M, double P) {
  char path[] = "/tmp/dovetail-lp-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return NAN;
  FILE *f = fdopen(fd, "w");
  fprintf(f, "Minimize\n obj:");
  for (size_t i = 0; i < n; i++) fprintf(f, " + %.9f x%zu", t[i].price, i);
  fprintf(f, "\nSubject To\n cpu:");
  for (size_t i = 0; i < n; i++) fprintf(f, " + %.6f x%zu", t[i].cpu, i);
  fprintf(f, " >= %.6f\n mem:", C);
  for (size_t i = 0; i < n; i++) fprintf(f, " + %.6f x%zu", t[i].mem, i);
  fprintf(f, " >= %.6f\n pods:", M);
  for (size_t i = 0; i < n; i++) fprintf(f, " + %.6f x%zu", t[i].pods, i);
  fprintf(f, " >= %.6f\nEnd\n", P);
  fclose(f);
  return glpsol(path);
}

typedef struct result {
  const char *name;
  size_t pods, nodes;
  double cost, parse_ms, sched_ms, lp;
  double parse_cpu_ms, plan_cpu_ms; /* CPU time of the parse and of dt_plan_run */
} result;

static void report(const result *r) {
  char ratio[32] = "n/a";
  if (!isnan(r->lp) && r->lp > 0) snprintf(ratio, sizeof ratio, "%.3f", r->cost / r->lp);
  printf("%-24s %7zu %6zu %10.3f %9s %9.1f %9.1f %10.0f %9.1f\n", r->name, r->pods, r->nodes, r->cost,
         ratio, r->parse_ms, r->sched_ms, r->sched_ms > 0 ? (double)r->pods / (r->sched_ms / 1e3) : 0.0,
         peak_rss_mib());
  fflush(stdout);
}

static dt_packing g_packing = DT_PACKING_COST;
static dt_policy *g_policy;

static int run(const char *name, dt_catalog *cat, const char *manifests, size_t len, double lp,
               result *out) {
  dt_error err = {0};
  dt_manifests *m = dt_manifests_new();
  double t0 = now_ms(), c0 = cpu_ms();
  if (!m || dt_manifests_add_buffer(m, name, manifests, len, &err)) {
    fprintf(stderr, "bench %s: %s\n", name, err.msg);
    return 1;
  }
  double parse = now_ms() - t0, c1 = cpu_ms();
  dt_plan *plan;
  dt_plan_opts opts = {0};
  opts.packing = g_packing;
  opts.policy = g_policy;
  if (dt_plan_run(cat, m, &opts, &plan, &err)) {
    fprintf(stderr, "bench %s: %s\n", name, err.msg);
    return 1;
  }
  double c2 = cpu_ms();
  dt_plan_stats st;
  dt_plan_stats_get(plan, &st);
  if (st.unschedulable) fprintf(stderr, "bench %s: %zu pods unschedulable\n", name, st.unschedulable);
  *out = (result){name, st.pods, st.nodes, st.hourly_cost, parse, st.schedule_ms, lp, c1 - c0, c2 - c1};
  dt_plan_free(plan);
  dt_manifests_free(m);
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The generic and diverse cases: five runs (DOVETAIL_BENCH_REPS=1 for
** one, under a profiler), the median of the parse and of the scheduling
** times reported (a single run of a few milliseconds mostly measures the
** machine's other work), and their ranges printed. */
static int run_median(const char *name, dt_catalog *cat, const char *manifests, size_t len, double lp, result *out) {
  const char *env = getenv("DOVETAIL_BENCH_REPS");
  int reps = env && atoi(env) >= 1 && atoi(env) <= 99 ? atoi(env) : 5;
  double parse[99], sched[99];
  for (int i = 0; i < reps; i++) {
    if (run(name, cat, manifests, len, lp, out)) return 1;
    parse[i] = out->parse_ms;
    sched[i] = out->sched_ms;
  }
  qsort(parse, reps, sizeof *parse, cmp_double);
  qsort(sched, reps, sizeof *sched, cmp_double);
  out->parse_ms = parse[reps / 2];
  out->sched_ms = sched[reps / 2];
  report(out);
  printf("%-24s medians of %d runs; range: parse %.1f-%.1f ms, schedule %.1f-%.1f ms (%.0f-%.0f pods/s)\n", name, reps,
         parse[0], parse[reps - 1], sched[0], sched[reps - 1], (double)out->pods / (sched[reps - 1] / 1e3),
         (double)out->pods / (sched[0] / 1e3));
  return 0;
}

static const char *k_pool_generic =
    "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"default\"},"
    "\"spec\":{\"limits\":{\"cpu\":\"10000000\",\"memory\":\"10000000Gi\"},\"template\":{\"spec\":{}}}}";

/* Karpenter's fake.InstanceTypes(400). */
static char *karpenter_catalog(size_t *len, lp_type *lp) {
  char *buf;
  FILE *f = open_memstream(&buf, len);
  fprintf(f, "{\"region\":\"test-region\",\"provider\":\"generic\",\"zones\":[\"test-zone-1\",\"test-zone-2\",\"test-zone-3\"],\"instanceTypes\":[");
  for (int i = 0; i < 400; i++) {
    int cpu = i + 1, gib = 2 * (i + 1), pods = 10 * (i + 1);
    double price = 0.1 * cpu + 0.1 * gib * 1.073741824; /* GB = GiB x 1.0737 */
    fprintf(f,
            "%s{\"name\":\"fake-it-%d\",\"cpu\":%d,\"memoryMiB\":%d,\"maxPods\":%d,\"onDemandPrice\":%.6f,"
            "\"overhead\":{\"cpu\":\"100m\",\"memory\":\"10Mi\"},\"offerings\":["
            "{\"zone\":\"test-zone-1\",\"capacityType\":\"spot\",\"price\":%.6f},"
            "{\"zone\":\"test-zone-2\",\"capacityType\":\"spot\",\"price\":%.6f},"
            "{\"zone\":\"test-zone-1\",\"capacityType\":\"on-demand\",\"price\":%.6f},"
            "{\"zone\":\"test-zone-2\",\"capacityType\":\"on-demand\",\"price\":%.6f},"
            "{\"zone\":\"test-zone-3\",\"capacityType\":\"on-demand\",\"price\":%.6f}]}",
            i ? "," : "", i, cpu, gib * 1024, pods, price, price, price, price, price, price);
    lp[i] = (lp_type){cpu - 0.1, gib - 10.0 / 1024, pods, price};
  }
  fprintf(f, "]}");
  fclose(f);
  return buf;
}

static char *generic_pods(int n, size_t *len, double *C, double *M) {
  static const char *cpu[] = {"100m", "250m", "500m", "1000m", "1500m"};
  static const double cpuv[] = {0.1, 0.25, 0.5, 1, 1.5};
  static const char *mem[] = {"100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"};
  static const double memv[] = {100.0 / 1024, 0.25, 0.5, 1, 2, 4};
  char *buf;
  FILE *f = open_memstream(&buf, len);
  fprintf(f, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[%s", k_pool_generic);
  rng = 42;
  *C = *M = 0;
  for (int i = 0; i < n; i++) {
    int c = (int)(next() % 5), m = (int)(next() % 6);
    *C += cpuv[c];
    *M += memv[m];
    fprintf(f,
            ",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pod-%d\",\"namespace\":\"default\"},"
            "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"requests\":{\"cpu\":\"%s\",\"memory\":\"%s\"}}}]}}",
            i, cpu[c], mem[m]);
  }
  fprintf(f, "]}");
  fclose(f);
  return buf;
}

/* Karpenter's makeDiversePods: five equal classes. */
static char *diverse_pods(int n, size_t *len, double *C, double *M) {
  static const char *cpu[] = {"100m", "250m", "500m", "1000m", "1500m"};
  static const double cpuv[] = {0.1, 0.25, 0.5, 1, 1.5};
  static const char *mem[] = {"100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"};
  static const double memv[] = {100.0 / 1024, 0.25, 0.5, 1, 2, 4};
  char *buf;
  FILE *f = open_memstream(&buf, len);
  fprintf(f, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[%s", k_pool_generic);
  rng = 42;
  *C = *M = 0;
  int per = n / 5;
  for (int i = 0; i < n; i++) {
    int c = (int)(next() % 5), m = (int)(next() % 6), v = (int)(next() % 7);
    int cls = i / per < 5 ? i / per : 0;
    *C += cpuv[c];
    *M += memv[m];
    char labels[128], extra[1024] = "";
    if (cls == 4)
      snprintf(labels, sizeof labels, "{\"app\":\"nginx\"}");
    else
      snprintf(labels, sizeof labels, "{\"my-label\":\"value-%d\"}", v);
    if (cls == 1 || cls == 2)
      snprintf(extra, sizeof extra,
               ",\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"%s\",\"whenUnsatisfiable\":"
               "\"DoNotSchedule\",\"labelSelector\":{\"matchLabels\":{\"my-label\":\"value-%d\"}}}]",
               cls == 1 ? "topology.kubernetes.io/zone" : "kubernetes.io/hostname", v);
    else if (cls == 3)
      snprintf(extra, sizeof extra,
               ",\"affinity\":{\"podAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"topologyKey\":"
               "\"topology.kubernetes.io/zone\",\"labelSelector\":{\"matchLabels\":{\"my-label\":\"value-%d\"}}}]}}",
               v);
    else if (cls == 4)
      snprintf(extra, sizeof extra,
               ",\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"topologyKey\":"
               "\"kubernetes.io/hostname\",\"labelSelector\":{\"matchLabels\":{\"app\":\"nginx\"}}}]}}");
    fprintf(f,
            ",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pod-%d\",\"namespace\":\"default\","
            "\"labels\":%s},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"requests\":"
            "{\"cpu\":\"%s\",\"memory\":\"%s\"}}}]%s}}",
            i, labels, cpu[c], mem[m], extra);
  }
  fprintf(f, "]}");
  fclose(f);
  return buf;
}

/* The Azure VM request shapes, read from the JSON copied into bench/. */
/* The shapes drawn by the last azure_pods call, for the assignment bound. */
#define MAX_SHAPES 1024
static int g_nshapes, g_shape_cpu[MAX_SHAPES], g_shape_mem[MAX_SHAPES];
static long g_shape_drawn[MAX_SHAPES];

/* The shapes of a workload file: each "cpu_millicores", then its
** "memory_MiB" and "count", in order; *ns of them, their total returned. */
static long read_shapes(const char *path, int *cpu_m, int *mem_mi, int *count, int *ns) {
  FILE *sf = fopen(path, "r");
  if (!sf) return -1;
  char *text = NULL;
  size_t cap = 0, len = 0, got;
  char chunk[65536];
  while ((got = fread(chunk, 1, sizeof chunk, sf)) > 0) {
    if (len + got + 1 > cap) {
      cap = 2 * (len + got + 1);
      text = realloc(text, cap);
    }
    memcpy(text + len, chunk, got);
    len += got;
  }
  fclose(sf);
  if (!text) return -1;
  text[len] = 0;
  long total = 0;
  *ns = 0;
  for (const char *q = text; (q = strstr(q, "\"cpu_millicores\":")) && *ns < MAX_SHAPES;) {
    const char *mq = strstr(q, "\"memory_MiB\":"), *cq = strstr(q, "\"count\":");
    if (!mq || !cq) break;
    cpu_m[*ns] = atoi(q + strlen("\"cpu_millicores\":"));
    mem_mi[*ns] = atoi(mq + strlen("\"memory_MiB\":"));
    count[*ns] = atoi(cq + strlen("\"count\":"));
    total += count[(*ns)++];
    q = cq;
  }
  free(text);
  return total;
}

/* A List's start and its NodePool, its requirements open: amd64, no GPU
** or other accelerator; the caller adds requirements and closes them. */
static const char *const k_list_pool =
    "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":["
    "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"default\"},"
    "\"spec\":{\"template\":{\"spec\":{\"requirements\":["
    "{\"key\":\"kubernetes.io/arch\",\"operator\":\"In\",\"values\":[\"amd64\"]},"
    "{\"key\":\"karpenter.k8s.aws/instance-gpu-count\",\"operator\":\"DoesNotExist\"},"
    "{\"key\":\"karpenter.k8s.aws/instance-accelerator-count\",\"operator\":\"DoesNotExist\"}";

static char *azure_pods(const char *shapes_path, int n, const char *extra_reqs, size_t *len, double *C, double *M) {
  static int cpu_m[MAX_SHAPES], mem_mi[MAX_SHAPES], count[MAX_SHAPES];
  int ns;
  long total = read_shapes(shapes_path, cpu_m, mem_mi, count, &ns);
  if (total <= 0) return NULL;
  char *buf;
  FILE *f = open_memstream(&buf, len);
  fprintf(f, "%s%s]}}}}", k_list_pool, extra_reqs);
  rng = 42;
  *C = *M = 0;
  g_nshapes = ns;
  for (int i = 0; i < ns; i++) {
    g_shape_cpu[i] = cpu_m[i];
    g_shape_mem[i] = mem_mi[i];
    g_shape_drawn[i] = 0;
  }
  /* n > 0: a resample of n pods; otherwise every shape's exact count. */
  int exact = n <= 0, s = 0;
  long left_in_shape = count[0];
  if (exact) n = (int)total;
  for (int i = 0; i < n; i++) {
    if (exact) {
      while (!left_in_shape) left_in_shape = count[++s];
      left_in_shape--;
    } else {
      long r = (long)(next() % (uint64_t)total);
      s = 0;
      while (r >= count[s]) r -= count[s++];
    }
    g_shape_drawn[s]++;
    *C += cpu_m[s] / 1000.0;
    *M += mem_mi[s] / 1024.0;
    fprintf(f,
            ",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"vm-%d\",\"namespace\":\"default\"},"
            "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"requests\":{\"cpu\":\"%dm\",\"memory\":\"%dMi\"}}}]}}",
            i, cpu_m[s], mem_mi[s]);
  }
  fprintf(f, "]}");
  fclose(f);
  return buf;
}

/* LP bound over the bundled catalog's amd64, GPU-free types; subset = c/m/r
** families of generation >= 5 up to 32 vCPU; spot: whether spot prices count. */
static bool in_subset(const dt_type_info *ti) {
  const char *n = ti->name;
  if (n[0] != 'c' && n[0] != 'm' && n[0] != 'r') return false;
  if (n[1] < '5' || n[1] > '9') return false;
  return ti->cpu_milli <= 32000 + 1000;
}

/* The hourly price a bound counts type ti at: amd64, no GPU, launchable, in
** the subset when asked; spot: its cheapest offering. -1 when it does not
** count. */
static double bound_price(const dt_type_info *ti, int subset, int spot) {
  double price = spot ? ti->cheapest_price : ti->on_demand_price;
  if (strcmp(ti->arch, "amd64") || ti->gpus || ti->cheapest_price < 0 || price <= 0) return -1;
  if (subset && !in_subset(ti)) return -1;
  return price;
}

/* The types a bound counts, cpu in units of cpu_unit millicores and memory
** in units of mem_unit bytes; *k of them. */
static lp_type *bound_types(dt_catalog *aws, int subset, int spot, double cpu_unit, double mem_unit, size_t *k) {
  size_t nt = dt_catalog_size(aws);
  lp_type *t = calloc(nt ? nt : 1, sizeof *t);
  *k = 0;
  for (size_t i = 0; i < nt; i++) {
    dt_type_info ti;
    dt_catalog_type(aws, i, &ti);
    double price = bound_price(&ti, subset, spot);
    if (price < 0) continue;
    t[(*k)++] = (lp_type){ti.cpu_milli / cpu_unit, ti.memory_bytes / mem_unit, (double)ti.pods, price};
  }
  return t;
}

static double aws_bound(dt_catalog *aws, double C, double M, double P, int subset, int spot) {
  size_t k;
  lp_type *alp = bound_types(aws, subset, spot, 1000.0, 1073741824.0, &k);
  double b = lp_bound(alp, k, C, M, P);
  free(alp);
  return b;
}

/*
** A tighter bound than the covering LP: fractional nodes, but each pod's
** cpu and memory must sit on the same (fractional) node type. The covering
** LP can buy cpu on 0.5 GiB burstable types and memory on 2 TiB ones, which
** no pod can use; this one cannot.
*/
static double assignment_bound(dt_catalog *aws, int subset, int spot) {
  char path[] = "/tmp/dovetail-alp-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return NAN;
  FILE *f = fdopen(fd, "w");
  size_t nt = dt_catalog_size(aws);
  dt_type_info *ti = calloc(nt, sizeof *ti);
  double *price = calloc(nt, sizeof *price); /* < 0: not counted */
  for (size_t i = 0; i < nt; i++) {
    dt_catalog_type(aws, i, &ti[i]);
    price[i] = bound_price(&ti[i], subset, spot);
  }
  fprintf(f, "Minimize\n obj:");
  for (size_t i = 0; i < nt; i++)
    if (price[i] >= 0) fprintf(f, " + %.9f x%zu", price[i], i);
  fprintf(f, "\nSubject To\n");
  for (size_t i = 0; i < nt; i++) {
    if (price[i] < 0) continue;
    fprintf(f, " c%zu:", i);
    for (int s = 0; s < g_nshapes; s++) fprintf(f, " + %.6f y%d_%zu", g_shape_cpu[s] / 1000.0, s, i);
    fprintf(f, " - %.6f x%zu <= 0\n m%zu:", ti[i].cpu_milli / 1000.0, i, i);
    for (int s = 0; s < g_nshapes; s++) fprintf(f, " + %.6f y%d_%zu", g_shape_mem[s] / 1024.0, s, i);
    fprintf(f, " - %.6f x%zu <= 0\n p%zu:", ti[i].memory_bytes / 1073741824.0, i, i);
    for (int s = 0; s < g_nshapes; s++) fprintf(f, " + y%d_%zu", s, i);
    fprintf(f, " - %lld x%zu <= 0\n", (long long)ti[i].pods, i);
  }
  for (int s = 0; s < g_nshapes; s++) {
    fprintf(f, " n%d:", s);
    for (size_t i = 0; i < nt; i++)
      if (price[i] >= 0) fprintf(f, " + y%d_%zu", s, i);
    fprintf(f, " >= %ld\n", g_shape_drawn[s]);
  }
  fprintf(f, "End\n");
  fclose(f);
  free(ti);
  free(price);
  return glpsol(path);
}

/*
** The tightest of the three: the pattern (configuration) LP of Gilmore and
** Gomory. A column is one whole node, an instance type and how many pods of
** each shape it holds; the LP covers every shape's count with columns at
** least cost. Every plan is a solution of it, so its optimum bounds every
** plan from below; only the rounding of columns to whole nodes is relaxed.
** Solved here with GLPK by column generation, each type's best column an
** exact integer knapsack (glp_intopt), independent of the engine's own.
** Returns Farley's bound obj / max(value/price), exact at the optimum; *st
** says whether it is the LP's optimum (every knapsack of the last round
** proven, none improving) or a bound, then with the last master's value
** (the LP optimum lies between the two).
*/
typedef struct bound_status {
  bool optimal;
  double master; /* the last restricted master's optimum: the LP's is at most this */
  int rounds, unproven;
  double ms;
} bound_status;

/* GLPK's branch and bound calls this: the best bound of its open nodes, so a
** search its time limit cuts short still bounds the knapsack from above. */
static void mip_bound_cb(glp_tree *tree, void *info) {
  double *bnd = info;
  int best = glp_ios_best_node(tree);
  if (best) {
    double b = glp_ios_node_bound(tree, best);
    if (b < *bnd) *bnd = b;
  }
}

typedef struct ratio_ix {
  double ratio;
  size_t i;
} ratio_ix;

static int cmp_ratio_desc(const void *a, const void *b) {
  const ratio_ix *x = a, *y = b;
  if (x->ratio != y->ratio) return x->ratio > y->ratio ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

static double pattern_bound(dt_catalog *aws, int subset, int spot, bound_status *st) {
  size_t k;
  lp_type *ty = bound_types(aws, subset, spot, 1.0, 1048576.0, &k); /* millicores, MiB: the shapes' units */
  /* Drop types a no dearer type holds at least as much of everything as. */
  size_t nk = 0;
  for (size_t i = 0; i < k; i++) {
    int dom = 0;
    for (size_t j = 0; j < k && !dom; j++)
      dom = j != i && ty[j].cpu >= ty[i].cpu && ty[j].mem >= ty[i].mem && ty[j].pods >= ty[i].pods &&
            (ty[j].price < ty[i].price || (ty[j].price == ty[i].price && j < i));
    if (!dom) ty[nk++] = ty[i];
  }
  int ns = g_nshapes;
  glp_term_out(GLP_OFF);
  glp_prob *lp = glp_create_prob();
  glp_set_obj_dir(lp, GLP_MIN);
  glp_add_rows(lp, ns);
  for (int s = 0; s < ns; s++) glp_set_row_bnds(lp, s + 1, GLP_LO, (double)g_shape_drawn[s], 0);
  int *ind = calloc((size_t)ns + 2, sizeof *ind);
  double *val = calloc((size_t)ns + 2, sizeof *val), *pi = calloc((size_t)ns + 1, sizeof *pi);
  double t_start = cpu_ms();
  *st = (bound_status){0};
  /* Start: each shape alone on its cheapest type per pod. */
  for (int s = 0; s < ns; s++) {
    double best = INFINITY;
    int cnt = 0;
    size_t bt = 0;
    for (size_t i = 0; i < nk; i++) {
      double c = floor(fmin(fmin(ty[i].cpu / g_shape_cpu[s], ty[i].mem / g_shape_mem[s]), ty[i].pods));
      if (c >= 1 && ty[i].price / c < best) best = ty[i].price / c, cnt = (int)c, bt = i;
    }
    int j = glp_add_cols(lp, 1);
    glp_set_col_bnds(lp, j, GLP_LO, 0, 0);
    glp_set_obj_coef(lp, j, ty[bt].price);
    ind[1] = s + 1, val[1] = cnt;
    glp_set_mat_col(lp, j, 1, ind, val);
  }
  /* One knapsack per type: maximise sum pi_s a_s within cpu, memory, pods. */
  glp_prob **kp = calloc(nk, sizeof *kp);
  for (size_t i = 0; i < nk; i++) {
    kp[i] = glp_create_prob();
    glp_set_obj_dir(kp[i], GLP_MAX);
    glp_add_rows(kp[i], 3);
    glp_set_row_bnds(kp[i], 1, GLP_UP, 0, ty[i].cpu);
    glp_set_row_bnds(kp[i], 2, GLP_UP, 0, ty[i].mem);
    glp_set_row_bnds(kp[i], 3, GLP_UP, 0, ty[i].pods);
    glp_add_cols(kp[i], ns);
    for (int s = 0; s < ns; s++) {
      glp_set_col_kind(kp[i], s + 1, GLP_IV);
      glp_set_col_bnds(kp[i], s + 1, GLP_DB, 0, (double)g_shape_drawn[s]);
      int ri[4] = {0, 1, 2, 3};
      double rv[4] = {0, g_shape_cpu[s], g_shape_mem[s], 1};
      glp_set_mat_col(kp[i], s + 1, 3, ri, rv);
    }
  }
  glp_smcp sp;
  glp_init_smcp(&sp);
  sp.msg_lev = GLP_MSG_OFF;
  glp_iocp ip;
  glp_init_iocp(&ip);
  ip.msg_lev = GLP_MSG_OFF;
  ip.tm_lim = 500; /* ms per knapsack */
  double bound = NAN, mip_bnd;
  ip.cb_func = mip_bound_cb;
  ip.cb_info = &mip_bnd;
  /* Few shapes: every type priced exactly each round. Hundreds: partial
  ** pricing (types by their relaxation's value per dollar, at most 16 new
  ** patterns a round), 300 ms a knapsack, 5 minutes of CPU in all; then the bound
  ** is Farley's and reported with its gap. */
  bool many = ns > 48;
  ip.tm_lim = many ? 300 : 500;
  ratio_ix *order = calloc(nk ? nk : 1, sizeof *order);
  double *ubs = calloc(nk ? nk : 1, sizeof *ubs);
  for (int iter = 0; iter < 5000 && cpu_ms() - t_start < 300e3; iter++) {
    if (glp_simplex(lp, &sp) || glp_get_status(lp) != GLP_OPT) break;
    double obj = glp_get_obj_val(lp), most = 0;
    int unproven = 0;
    st->rounds = iter + 1;
    st->master = obj;
    for (int s = 0; s < ns; s++) pi[s] = glp_get_row_dual(lp, s + 1);
    int added = 0;
    /* The knapsack's LP relaxation bounds it; the integer search runs only
    ** when that bound could pay for the node, and if its time runs out the
    ** best bound of its open nodes stands in for it (valid, a little weaker). */
    size_t nq = 0;
    for (size_t i = 0; i < nk; i++) {
      for (int s = 0; s < ns; s++) glp_set_obj_coef(kp[i], s + 1, pi[s] > 0 ? pi[s] : 0);
      ubs[i] = glp_simplex(kp[i], &sp) || glp_get_status(kp[i]) != GLP_OPT ? INFINITY : glp_get_obj_val(kp[i]);
      if (ubs[i] <= ty[i].price * (1 + 1e-9))
        most = fmax(most, ubs[i] / ty[i].price);
      else
        order[nq++] = (ratio_ix){ubs[i] / ty[i].price, i};
    }
    if (many) qsort(order, nq, sizeof *order, cmp_ratio_desc);
    for (size_t q = 0; q < nq; q++) {
      size_t i = order[q].i;
      double ub = ubs[i];
      if (many && added >= 16) { /* the rest unpriced this round: their relaxations bound them */
        most = fmax(most, ub / ty[i].price);
        unproven++;
        continue;
      }
      mip_bnd = ub;
      int irc = glp_intopt(kp[i], &ip), mst = glp_mip_status(kp[i]);
      if (mst != GLP_OPT && mst != GLP_FEAS) {
        most = fmax(most, fmin(ub, mip_bnd) / ty[i].price);
        unproven++;
        continue;
      }
      double v = glp_mip_obj_val(kp[i]), proven = irc == 0 && mst == GLP_OPT ? v : fmax(v, fmin(ub, mip_bnd));
      unproven += !(irc == 0 && mst == GLP_OPT);
      if (proven / ty[i].price > most) most = proven / ty[i].price;
      if (v <= ty[i].price * (1 + 1e-9)) continue;
      int n = 0;
      for (int s = 0; s < ns; s++) {
        double a = glp_mip_col_val(kp[i], s + 1);
        if (a > 0.5) ind[++n] = s + 1, val[n] = floor(a + 0.5);
      }
      int j = glp_add_cols(lp, 1);
      glp_set_col_bnds(lp, j, GLP_LO, 0, 0);
      glp_set_obj_coef(lp, j, ty[i].price);
      glp_set_mat_col(lp, j, n, ind, val);
      added++;
    }
    double lb = most > 1 ? obj / most : obj;
    if (isnan(bound) || lb > bound) bound = lb;
    st->unproven = unproven;
    if (!added && unproven && ip.tm_lim < 20000) { /* nothing found in time: look longer */
      ip.tm_lim *= 4;
      continue;
    }
    if (!added) {
      st->optimal = !unproven;
      if (st->optimal) bound = obj;
      break;
    }
  }
  st->ms = cpu_ms() - t_start;
  free(order);
  free(ubs);
  free(ind);
  free(val);
  free(pi);
  for (size_t i = 0; i < nk; i++) glp_delete_prob(kp[i]);
  free(kp);
  glp_delete_prob(lp);
  free(ty);
  return bound;
}

/* A workload on the full catalog and on the subset, on-demand and with spot:
** n pods resampled from the shapes file, or (n = 0) its exact counts. */
static int catalog_pairs(dt_catalog *aws, const char *shapes, const char *prefix, int n) {
  /* The requirements that select the subset and the capacity types. */
  static const char *subset_reqs =
      ",{\"key\":\"karpenter.k8s.aws/instance-category\",\"operator\":\"In\",\"values\":[\"c\",\"m\",\"r\"]}"
      ",{\"key\":\"karpenter.k8s.aws/instance-generation\",\"operator\":\"Gt\",\"values\":[\"4\"]}"
      ",{\"key\":\"karpenter.k8s.aws/instance-cpu\",\"operator\":\"Lt\",\"values\":[\"33\"]}";
  static const char *od = ",{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\":[\"on-demand\"]}";
  static const char *both =
      ",{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\":[\"on-demand\",\"spot\"]}";
  int rc = 0;
  for (int subset = 0; subset < 2; subset++)
    for (int spot = 0; spot < 2; spot++) {
      char reqs[1024], name[64];
      snprintf(reqs, sizeof reqs, "%s%s", subset ? subset_reqs : "", spot ? both : od);
      snprintf(name, sizeof name, "%s-%s-%s", prefix, subset ? "cmr5-32" : "full", spot ? "spot" : "od");
      size_t len;
      double C, M;
      char *pods = azure_pods(shapes, n, reqs, &len, &C, &M);
      if (!pods) return 1;
      dump(name, pods, len);
      long npods = 0;
      for (int s = 0; s < g_nshapes; s++) npods += g_shape_drawn[s];
      double bound = aws_bound(aws, C, M, (double)npods, subset, spot);
      result ffd, cost;
      char n1[80], n2[80];
      snprintf(n1, sizeof n1, "%s/ffd", name);
      snprintf(n2, sizeof n2, "%s/cost", name);
      /* Decisions are deterministic; the time is the best of five runs of
      ** each, taken in turn so that both see the same state of the heap. */
      for (int rep = 0; rep < 5; rep++)
        for (int pass = 0; pass < 2; pass++) {
          result *r = pass ? &cost : &ffd, once;
          g_packing = pass ? DT_PACKING_COST : DT_PACKING_FFD;
          rc |= run(pass ? n2 : n1, aws, pods, len, bound, &once);
          if (!rep || once.sched_ms < r->sched_ms) *r = once;
        }
      report(&ffd);
      report(&cost);
      bound_status bs;
      /* DOVETAIL_BENCH_NO_PATTERN=1 skips the pattern LP (minutes on many shapes): the assignment LP stands in. */
      const char *nopat = getenv("DOVETAIL_BENCH_NO_PATTERN");
      double tight = assignment_bound(aws, subset, spot);
      double pat = nopat && *nopat == '1' ? (bs = (bound_status){.optimal = 0, .master = tight}, tight)
                                          : pattern_bound(aws, subset, spot, &bs);
      /* The pattern LP is at least the assignment LP: when pricing was cut
      ** short, the larger of the two bounds stands. */
      if (!bs.optimal && tight > pat) pat = tight;
      char status[160];
      if (bs.optimal)
        snprintf(status, sizeof status, "optimal, %d rounds, %.0f s", bs.rounds, bs.ms / 1e3);
      else
        snprintf(status, sizeof status, "a bound: the LP is within [%.2f, %.2f], gap %.2f%%, %d knapsacks unproven, %d rounds, %.0f s",
                 pat, bs.master, 100 * (bs.master / pat - 1), bs.unproven, bs.rounds, bs.ms / 1e3);
      printf("%-24s %d shapes; ffd %.3fx -> cost %.3fx of the covering LP ($%.2f/h); %.3fx -> %.3fx of the assignment LP "
             "($%.2f/h); %.3fx -> %.3fx of the pattern LP ($%.2f/h, %s); scheduling time %.2fx ffd\n",
             name, g_nshapes, ffd.cost / bound, cost.cost / bound, bound, ffd.cost / tight, cost.cost / tight, tight,
             ffd.cost / pat, cost.cost / pat, pat, status, cost.sched_ms / (ffd.sched_ms > 0 ? ffd.sched_ms : 1));
      free(pods);
    }
  return rc;
}

/* First-fit against cost packing on one workload, best of three runs of
** each: both lines, then cost packing's plan and time against first-fit's. */
static int ffd_vs_cost(dt_catalog *aws, const char *name, const char *pods, size_t len, int nshapes) {
  char label[2][64]; /* a result keeps its name's pointer */
  result ffd, cost;
  int rc = 0;
  for (int rep = 0; rep < 3; rep++)
    for (int pass = 0; pass < 2; pass++) {
      result *r = pass ? &cost : &ffd, once;
      g_packing = pass ? DT_PACKING_COST : DT_PACKING_FFD;
      snprintf(label[pass], sizeof label[pass], "%s/%s", name, pass ? "cost" : "ffd");
      rc |= run(label[pass], aws, pods, len, NAN, &once);
      if (!rep || once.sched_ms < r->sched_ms) *r = once;
    }
  report(&ffd);
  report(&cost);
  printf("%-24s %d shapes; cost packing $%.2f/h on %zu nodes against first-fit's $%.2f/h; scheduling time %.1fx ffd\n",
         name, nshapes, cost.cost, cost.nodes, ffd.cost, cost.sched_ms / (ffd.sched_ms > 0 ? ffd.sched_ms : 1));
  return rc;
}

/* The many-shape workload resampled to 190,000 pods on the full catalog,
** on-demand: tens of thousands of nodes, for how cost packing's work after
** the LP (rounding, emptying nodes into the others' room) grows with them.
** Best of three runs of each. */
static int many_scale(dt_catalog *aws) {
  static const char *od = ",{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\":[\"on-demand\"]}";
  size_t len;
  double C, M;
  char *pods = azure_pods("bench/workload-many-shapes.json", 190000, od, &len, &C, &M);
  if (!pods) return 1;
  dump("many-190k-full-od", pods, len);
  int rc = ffd_vs_cost(aws, "many-190k-full-od", pods, len, g_nshapes);
  free(pods);
  return rc;
}

/* n pods each of its own shape, full catalog, amd64, no GPU or other
** accelerator, capacity types cts, drawn from seed: cost packing's time
** and cost against first-fit's, best of three runs of each.
**   distinct-5k-full-od: cpu 10m, 11m, ... and memory drawn in 16-4,016 Mi,
**     as when every workload's requests are sized on their own; on-demand.
**   distinct-64-full-spot: cpu 10-3,109m and memory 16-6,415 Mi drawn, spot
**     allowed: a small group whose pattern LP is degenerate (its optimum is
**     one node holding them all, every other basic value 0), where a simplex
**     that crawls costs seconds for 64 pods; seed 6 is a draw Bland's rule
**     alone took 17.8 s over. */
static int distinct(dt_catalog *aws, const char *name, const char *cts, uint64_t seed, int n, bool drawn_cpu) {
  char *pods;
  size_t len;
  FILE *f = open_memstream(&pods, &len);
  if (!f) return 1;
  fprintf(f, "%s,{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\":[%s]}]}}}}", k_list_pool, cts);
  rng = seed;
  for (int i = 0; i < n; i++) {
    int cpu = drawn_cpu ? 10 + (int)(next() % 3100) : 10 + i;
    int mem = drawn_cpu ? 16 + (int)(next() % 6400) : 16 + (int)(next() % 4001);
    fprintf(f,
            ",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"d-%d\",\"namespace\":\"default\"},"
            "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"requests\":{\"cpu\":\"%dm\","
            "\"memory\":\"%dMi\"}}}]}}",
            i, cpu, mem);
  }
  fprintf(f, "]}");
  fclose(f);
  dump(name, pods, len);
  int rc = ffd_vs_cost(aws, name, pods, len, n);
  free(pods);
  return rc;
}

/* A VirtualMachinePool of 100,000 VMs scaling in by 10,000 with a
** two-selector ordered policy (canary first, then zone c) and Oldest behind
** them: the time of dt_pools_run (best of 5), parse and render reported
** apart. */
static int pool_bench(void) {
  const size_t n = 100000;
  size_t cap = n * 600 + 4096, len = 0; /* a VM is under 520 bytes */
  char *b = malloc(cap);
  if (!b) return 1;
  len += (size_t)snprintf(b + len, cap - len,
      "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{\"apiVersion\":\"pool.kubevirt.io/v1beta1\","
      "\"kind\":\"VirtualMachinePool\",\"metadata\":{\"name\":\"big\",\"annotations\":{\"dovetail.dev/burst-replicas\":\"10000\"}},\"spec\":{\"replicas\":%zu,"
      "\"selector\":{\"matchLabels\":{\"app\":\"big\"}},\"scaleInStrategy\":{\"proactive\":{\"selectionPolicy\":"
      "{\"orderedPolicies\":[{\"matchLabels\":{\"tier\":\"canary\"}},{\"labelSelector\":{\"matchExpressions\":"
      "[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"c\"]}]}}],\"basePolicy\":\"Oldest\"}}},"
      "\"virtualMachineTemplate\":{\"metadata\":{\"labels\":{\"app\":\"big\"}},\"spec\":{\"runStrategy\":\"Always\","
      "\"template\":{\"spec\":{\"domain\":{\"cpu\":{\"cores\":2},\"memory\":{\"guest\":\"4Gi\"}}}}}}}}",
      n - 10000);
  uint64_t x = 42;
  for (size_t i = 0; i < n; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    unsigned r = (unsigned)(x >> 33);
    const char *tier = r % 100 < 3 ? "canary" : "stable";
    char zone = "abc"[(r >> 8) % 3];
    long day = 1 + (long)((r >> 12) % 28), hour = (long)((r >> 20) % 24);
    len += (size_t)snprintf(b + len, cap - len,
        ",{\"apiVersion\":\"kubevirt.io/v1\",\"kind\":\"VirtualMachine\",\"metadata\":{\"name\":\"big-%zu\","
        "\"creationTimestamp\":\"2026-10-%02ldT%02ld:00:00Z\",\"labels\":{\"app\":\"big\",\"tier\":\"%s\","
        "\"zone\":\"%c\"},\"ownerReferences\":[{\"kind\":\"VirtualMachinePool\",\"name\":\"big\","
        "\"controller\":true}]},\"spec\":{\"runStrategy\":\"Always\",\"template\":{\"spec\":{\"domain\":"
        "{\"cpu\":{\"cores\":2},\"memory\":{\"guest\":\"4Gi\"}}}}},\"status\":{\"ready\":true,"
        "\"printableStatus\":\"Running\"}}",
        i, day, hour, tier, zone);
  }
  len += (size_t)snprintf(b + len, cap - len, "]}");
  dt_error err = {0};
  double t0 = now_ms();
  dt_manifests *m = dt_manifests_new();
  if (!m || dt_manifests_add_buffer(m, "pool-100k", b, len, &err)) {
    fprintf(stderr, "bench: %s\n", err.msg);
    return 1;
  }
  double parse = now_ms() - t0, best = 1e18, render = 0;
  dt_pools_stats st = {0};
  for (int rep = 0; rep < 5; rep++) {
    dt_pools *r;
    dt_pool_opts o = {0};
    if (dt_pools_run(m, &o, &r, &err)) {
      fprintf(stderr, "bench: %s\n", err.msg);
      return 1;
    }
    dt_pools_stats_get(r, &st);
    if (st.run_ms < best) best = st.run_ms;
    double t1 = now_ms();
    size_t out;
    char *text = dt_pools_render(r, DT_FORMAT_JSON, &out);
    render = now_ms() - t1;
    dt_free(text);
    dt_pools_free(r);
  }
  printf("%-24s %7zu VMs, %zu deletes, run %.1f ms (best of 5; target < 200), parse %.0f ms, render %.0f ms, "
         "rss %.0f MiB\n",
         "pool-100k-scale-in-10k", n, st.del, best, parse, render, peak_rss_mib());
  dt_manifests_free(m);
  free(b);
  return st.del == 10000 ? 0 : 1;
}

/* A cluster of n nodes with 10 pods each on the bundled AWS catalog: mixed
** 2xlarge types over three zones at about 45% cpu use, 2% empty, 1% drifted
** (their NodePool hash changed), the default 10% budget. One disrupt pass.
** packed: a consolidated fleet instead, n c6a.2xlarge nodes each full with
** two pods of 3.4-3.7 cores (a NodePool of c6a types), 1% holding one pod
** (a c6a.xlarge would do): single-node consolidation's every candidate.
** DOVETAIL_BENCH_DUMP=DIR writes each cluster to DIR for `dovetail disrupt
** --now 2026-11-23T12:00:00Z`. */
static int disrupt_bench(dt_catalog *aws, size_t n, bool packed) {
  size_t cap = n * 10 * 330 + n * 520 + 4096, len = 0;
  char *b = malloc(cap);
  if (!b) return 1;
  len += (size_t)snprintf(
      b + len, cap - len,
      "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\","
      "\"metadata\":{\"name\":\"default\"},\"spec\":{\"template\":{\"spec\":{\"requirements\":["
      "{\"key\":\"kubernetes.io/arch\",\"operator\":\"In\",\"values\":[\"amd64\"]},"
      "{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\":[\"on-demand\"]},"
      "{\"key\":\"%s\",\"operator\":\"In\",\"values\":[%s]}]}}}}",
      packed ? "karpenter.k8s.aws/instance-family" : "karpenter.k8s.aws/instance-category",
      packed ? "\"c6a\"" : "\"c\",\"m\",\"r\"");
  static const char *types[] = {"m5.2xlarge", "c5.2xlarge", "r5.2xlarge"};
  static const char *zones[] = {"us-east-1a", "us-east-1b", "us-east-1c"};
  uint64_t x = 7;
  size_t npods = 0;
  for (size_t i = 0; i < n; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    unsigned r = (unsigned)(x >> 33);
    bool empty = !packed && r % 100 < 2, drifted = !packed && r % 100 == 2, half = packed && r % 100 < 1;
    len += (size_t)snprintf(
        b + len, cap - len,
        ",{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-%zu\","
        "\"creationTimestamp\":\"2026-11-01T00:00:00Z\"%s,\"labels\":{\"node.kubernetes.io/instance-type\":\"%s\","
        "\"topology.kubernetes.io/zone\":\"%s\",\"karpenter.sh/capacity-type\":\"on-demand\","
        "\"karpenter.sh/nodepool\":\"default\",\"kubernetes.io/arch\":\"amd64\"}}}",
        i, drifted ? ",\"annotations\":{\"dovetail.dev/nodepool-hash\":\"0000000000000000\"}" : "",
        packed ? "c6a.2xlarge" : types[i % 3], zones[(i / 3) % 3]);
    for (int k = 0; k < (packed ? (half ? 1 : 2) : 10) && !empty; k++, npods++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      unsigned q = (unsigned)(x >> 33);
      len += (size_t)snprintf(
          b + len, cap - len,
          ",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pod-%zu-%d\",\"namespace\":\"default\","
          "\"labels\":{\"app\":\"app-%u\"}},\"spec\":{\"nodeName\":\"node-%zu\",\"containers\":[{\"name\":\"c\","
          "\"resources\":{\"requests\":{\"cpu\":\"%um\",\"memory\":\"%uMi\"}}}]}}",
          i, k, q % 50, i, packed ? 3400 + q % 300 : 100 + q % 500, 256 + (q >> 9) % 1792);
    }
  }
  len += (size_t)snprintf(b + len, cap - len, "]}");
  const char *dump = getenv("DOVETAIL_BENCH_DUMP"); /* a directory: the cluster as `dovetail disrupt` reads it */
  if (dump) {
    char path[512];
    snprintf(path, sizeof path, "%s/disrupt-%zuk-%s.json", dump, n / 1000, packed ? "packed" : "nodes");
    FILE *f = fopen(path, "w");
    if (!f || fwrite(b, 1, len, f) != len) fprintf(stderr, "bench: cannot write %s\n", path);
    if (f) fclose(f);
  }
  dt_error err = {0};
  double t0 = now_ms();
  dt_manifests *m = dt_manifests_new();
  if (!m || dt_manifests_add_buffer(m, "disrupt", b, len, &err)) {
    fprintf(stderr, "bench: %s\n", err.msg);
    return 1;
  }
  double parse = now_ms() - t0;
  dt_disruption *d;
  dt_disrupt_opts o = {0};
  dt_time_parse("2026-11-23T12:00:00Z", &o.now, NULL);
  double c0 = cpu_ms();
  if (dt_disrupt_run(aws, m, &o, &d, &err)) {
    fprintf(stderr, "bench: %s\n", err.msg);
    return 1;
  }
  double cpu = cpu_ms() - c0;
  dt_disrupt_stats st;
  dt_disrupt_stats_get(d, &st);
  char name[64];
  snprintf(name, sizeof name, "disrupt-%zuk-%s", n / 1000, packed ? "packed" : "nodes");
  printf("%-24s %7zu nodes, %zu pods: %zu command%s, %zu nodes disrupted, saves $%.2f/h, %zu simulations, %zu "
         "screened, pass %.0f ms (%.0f ms of CPU; target < %s), parse %.0f ms, rss %.0f MiB\n",
         name, n, npods, st.commands, st.commands == 1 ? "" : "s", st.disrupted, st.savings, st.simulations,
         st.screened, st.run_ms, cpu, n <= 1000 ? "1 s" : "1.5 s", parse, peak_rss_mib());
  dt_disrupt_free(d);
  dt_manifests_free(m);
  free(b);
  return 0;
}

static double median3(const double *v) {
  double a = v[0], b = v[1], c = v[2];
  return a > b ? (b > c ? b : a > c ? c : a) : (a > c ? a : b > c ? c : b);
}

static double min3(const double *v) { return fmin(v[0], fmin(v[1], v[2])); }
static double max3(const double *v) { return fmax(v[0], fmax(v[1], v[2])); }

/* The same shapes, ten times as many: time per pod against 100,000's, as
** the median and range of three pairs of runs taken one after the other
** (100k, 1M, 100k, 1M, ...), so that a change in the machine's load
** weighs on both sizes alike; and the peak RSS per pod, the JSON text
** included, taken after the first 1M run (the 100k text is made again for
** each later pair). first is the 100k run already reported. */
static int million(dt_catalog *aws, const char *shapes, const result *first) {
  size_t len, small_len;
  double C, M, c, m;
  char *pods = azure_pods(shapes, 1000000, "", &len, &C, &M);
  if (!pods) return 1;
  dump("azure-1m", pods, len);
  double bound = aws_bound(aws, C, M, 1000000, 0, 1);
  double parse[3], sched[3], parse_cpu[3], plan_cpu[3];
  double rss = 0;
  int rc = 0;
  for (int i = 0; i < 3 && !rc; i++) {
    result s = *first, big;
    if (i) {
      char *small = azure_pods(shapes, 100000, "", &small_len, &c, &m);
      rc |= !small || run("azure-100k", aws, small, small_len, first->lp, &s);
      free(small);
    }
    rc |= run("azure-1m", aws, pods, len, bound, &big);
    if (rc) break;
    report(&big);
    if (!i) rss = peak_rss_mib();
    parse[i] = (big.parse_ms / 1e6) / (s.parse_ms / 1e5);
    sched[i] = (big.sched_ms / 1e6) / (s.sched_ms / 1e5);
    parse_cpu[i] = (big.parse_cpu_ms / 1e6) / (s.parse_cpu_ms / 1e5);
    plan_cpu[i] = (big.plan_cpu_ms / 1e6) / (s.plan_cpu_ms / 1e5);
  }
  free(pods);
  if (rc) return rc;
  printf("azure-1m                 time per pod vs 100k (median of 3 pairs, range): parse %.2fx (%.2f-%.2f), "
         "schedule %.2fx (%.2f-%.2f); peak RSS %.0f bytes per pod\n",
         median3(parse), min3(parse), max3(parse), median3(sched), min3(sched), max3(sched),
         rss * 1048576.0 / 1e6);
  printf("azure-1m                 CPU time per pod vs 100k (median of 3 pairs, range): parse %.2fx (%.2f-%.2f), "
         "plan %.2fx (%.2f-%.2f)\n",
         median3(parse_cpu), min3(parse_cpu), max3(parse_cpu), median3(plan_cpu), min3(plan_cpu), max3(plan_cpu));
  return 0;
}

int main(int argc, char **argv) {
  dt_error err = {0};
  int rc = 0;
  /* (a) Karpenter's benchmark catalog with generic pods. */
  size_t clen;
  lp_type lp[400];
  char *ctext = karpenter_catalog(&clen, lp);
  dt_catalog *kc;
  if (dt_catalog_load_buffer("karpenter-400", ctext, clen, &kc, &err)) {
    fprintf(stderr, "bench: %s\n", err.msg);
    return 1;
  }
  free(ctext);
  static const int sizes[] = {1000, 5000, 20000};
  const char *only =
      getenv("DOVETAIL_BENCH_ONLY"); /* generic | diverse | policy | peak | many | distinct | pool | disrupt | azure */
  if (only && !strcmp(only, "pool")) return pool_bench();
  if (only && !strcmp(only, "disrupt")) { /* without a filter it runs last: peak RSS is per process */
    dt_catalog *aws;
    if (dt_catalog_load_default(&aws, &err)) return 1;
    rc |= disrupt_bench(aws, 1000, false);
    rc |= disrupt_bench(aws, 10000, false);
    rc |= disrupt_bench(aws, 10000, true);
    dt_catalog_free(aws);
    return rc;
  }
  if (only && (!strcmp(only, "load") || !strcmp(only, "simulate"))) return 0; /* make bench runs them */
  /* The plan rows' columns; the pool and disrupt rows print their own. */
  printf("%-24s %7s %6s %10s %9s %9s %9s %10s %9s\n", "case", "pods", "nodes", "$/h", "lp-ratio", "parse-ms",
         "sched-ms", "pods/s", "rss-MiB");
  for (int i = 0; i < 3 && (!only || !strcmp(only, "generic")); i++) {
    size_t len;
    double C, M;
    char *pods = generic_pods(sizes[i], &len, &C, &M);
    char name[64];
    snprintf(name, sizeof name, "karpenter-generic-%dk", sizes[i] / 1000);
    /* Lower bound uses the cheapest (spot = on-demand here) price. */
    double bound = lp_bound(lp, 400, C, M, sizes[i]);
    result r;
    rc |= run_median(name, kc, pods, len, bound, &r);
    free(pods);
  }
  /* Karpenter's diverse workload on the same catalog. */
  double prev = 0;
  for (int i = 0; i < 3 && (!only || !strcmp(only, "diverse")); i++) {
    size_t len;
    double C, M;
    char *pods = diverse_pods(sizes[i], &len, &C, &M);
    char name[64];
    snprintf(name, sizeof name, "karpenter-diverse-%dk", sizes[i] / 1000);
    double bound = lp_bound(lp, 400, C, M, sizes[i]);
    result r;
    rc |= run_median(name, kc, pods, len, bound, &r);
    if (prev > 0)
      printf("%-24s time per pod vs previous size: %.2fx (linear = 1.00)\n", name,
             (r.sched_ms / sizes[i]) / (prev / sizes[i - 1]));
    prev = r.sched_ms;
    free(pods);
  }
  dt_catalog_free(kc);
  /* Policy runtime: plan time on the diverse 20k workload without a policy,
  ** with policies/default.lua, with a score hook doing real work and with
  ** the same work in a rank hook (medians of 5, interleaved), and hot reload
  ** of a 500-line policy. */
  if (!only || !strcmp(only, "policy")) {
    size_t len;
    double C, M;
    dt_catalog *kc2;
    char *ct = karpenter_catalog(&len, lp);
    dt_catalog_load_buffer("karpenter-400", ct, len, &kc2, &err);
    free(ct);
    ct = diverse_pods(20000, &len, &C, &M);
    /* the work: a family weight, price per core, a penalty on scarce spot */
    static const char *work =
        "local W = { m5 = 0.9, c5 = 0.95, r5 = 1.0, m6i = 0.92, c6i = 0.97 }\n"
        "local function s(o)\n"
        "  local fam = o.family or o.instanceType:match('^[^.]+') or ''\n"
        "  local per_core = o.price / math.max(o.cpuMilli, 1) * 1000\n"
        "  local v = (o.capacityType == 'reserved' and 0 or 1e9) + o.price * (W[fam] or 1.1) + per_core * 1e-3\n"
        "  if o.capacityType == 'spot' and (o.available or 2) < 2 then v = v + 0.5 end\n"
        "  return v\n"
        "end\n";
    char score_path[] = "/tmp/dovetail-score-XXXXXX", rank_path[] = "/tmp/dovetail-rank-XXXXXX";
    FILE *sf = fdopen(mkstemp(score_path), "w"), *rf = fdopen(mkstemp(rank_path), "w");
    fprintf(sf, "%sreturn { score = s }\n", work);
    fprintf(rf, "%sreturn { rank = function(_, offs) local out = {} for i, o in ipairs(offs) do out[i] = s(o) end "
                "return out end }\n", work);
    fclose(sf);
    fclose(rf);
    const char *files[] = {NULL, "policies/default.lua", score_path, rank_path};
    double ms[4][5];
    result r;
    for (int rep = 0; rep < 5; rep++)
      for (int v = 0; v < 4; v++) {
        g_policy = NULL;
        if (files[v] && dt_policy_load_file(files[v], NULL, &g_policy, &err)) {
          fprintf(stderr, "bench: %s\n", err.msg);
          return 1;
        }
        rc |= run("diverse-20k", kc2, ct, len, NAN, &r);
        ms[v][rep] = r.sched_ms;
        dt_policy_free(g_policy);
        g_policy = NULL;
      }
    double med[4];
    for (int v = 0; v < 4; v++) {
      for (int i = 1; i < 5; i++) /* insertion sort of five */
        for (int j = i; j > 0 && ms[v][j] < ms[v][j - 1]; j--) {
          double t = ms[v][j];
          ms[v][j] = ms[v][j - 1];
          ms[v][j - 1] = t;
        }
      med[v] = ms[v][2];
    }
    printf("%-24s diverse 20k plan %.1f ms without a policy; policies/default.lua %.1f ms (%.2fx); a score hook "
           "doing real work %.1f ms (%.2fx); the same work in rank %.1f ms (%.2fx) (medians of 5)\n",
           "policy-overhead", med[0], med[1], med[1] / med[0], med[2], med[2] / med[0], med[3], med[3] / med[0]);
    remove(score_path);
    remove(rank_path);
    free(ct);
    dt_catalog_free(kc2);
    /* a 500-line policy: default.lua's hooks plus 480 lines of helpers */
    char path[] = "/tmp/dovetail-policy-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "local policy = {}\nlocal helpers = {}\n");
    for (int i = 0; i < 160; i++)
      fprintf(f, "function helpers.h%d(x)\n  return (x or 0) * %d + %d\nend\n", i, i + 1, i);
    fprintf(f, "function policy.rank(_, offerings)\n  local out = {}\n  for i, o in ipairs(offerings) do\n"
               "    out[i] = (o.capacityType == \"reserved\" and 0 or 1e9) + o.price\n  end\n  return out\nend\n"
               "function policy.selftest() return helpers.h1(1) == 3 end\nreturn policy\n");
    fclose(f);
    dt_policy *pol;
    if (dt_policy_load_file(path, NULL, &pol, &err)) {
      fprintf(stderr, "bench: %s\n", err.msg);
      return 1;
    }
    double total = 0;
    int n = 0;
    for (int rep = 0; rep < 20; rep++) {
      f = fopen(path, "a");
      fprintf(f, "-- edit %d\n", rep); /* a real change each time */
      fclose(f);
      int changed;
      double t0 = now_ms();
      if (dt_policy_reload(pol, &changed, &err) || !changed) {
        fprintf(stderr, "bench: reload: %s\n", err.msg);
        rc = 1;
        break;
      }
      total += now_ms() - t0;
      n++;
    }
    printf("%-24s load + validate + swap of a 500-line policy: %.2f ms (mean of %d)\n", "policy-reload",
           n ? total / n : 0, n);
    dt_policy_free(pol);
    remove(path);
    if (only) return rc;
  }
  if (!only || !strcmp(only, "peak")) {
    dt_catalog *aws;
    if (dt_catalog_load_default(&aws, &err)) {
      fprintf(stderr, "bench: %s\n", err.msg);
      return 1;
    }
    rc |= catalog_pairs(aws, "bench/workload-azure-vm-2017-peak-hour.json", "peak", 5968);
    dt_catalog_free(aws);
  }
  if (!only || !strcmp(only, "many") || !strcmp(only, "distinct")) {
    dt_catalog *aws;
    if (dt_catalog_load_default(&aws, &err)) {
      fprintf(stderr, "bench: %s\n", err.msg);
      return 1;
    }
    if (!only || strcmp(only, "distinct")) {
      rc |= catalog_pairs(aws, "bench/workload-many-shapes.json", "many", 0);
      rc |= many_scale(aws);
    }
    rc |= distinct(aws, "distinct-5k-full-od", "\"on-demand\"", 5, 5000, false);
    rc |= distinct(aws, "distinct-64-full-spot", "\"on-demand\",\"spot\"", 6, 64, true);
    dt_catalog_free(aws);
    if (only) return rc;
  }
  if (!only) rc |= pool_bench();
  if (only && strcmp(only, "azure") && strcmp(only, "million")) return rc;
  /* (b) 100,000 real-shape pods on the bundled AWS catalog. */
  dt_catalog *aws;
  if (dt_catalog_load_default(&aws, &err)) {
    fprintf(stderr, "bench: %s\n", err.msg);
    return 1;
  }
  size_t len;
  double C, M;
  const char *shapes = argc > 1 ? argv[1] : "bench/workload-azure-vm-2017.json";
  char *pods = azure_pods(shapes, 100000, "", &len, &C, &M);
  if (!pods) {
    fprintf(stderr, "bench: cannot read %s\n", shapes);
    return 1;
  }
  double bound = aws_bound(aws, C, M, 100000, 0, 1);
  result r;
  rc |= run("azure-100k", aws, pods, len, bound, &r);
  report(&r);
  free(pods);
  if (only && !strcmp(only, "million")) rc |= million(aws, shapes, &r);
  if (!only) {
    rc |= disrupt_bench(aws, 1000, false);
    rc |= disrupt_bench(aws, 10000, false);
    rc |= disrupt_bench(aws, 10000, true);
  }
  dt_catalog_free(aws);
  return rc;
}
