/*
** load.c: a bounded HTTP load client for `dovetail serve` (loopback only).
** Starts the daemon, then for GET /v1/plan and PUT /v1/objects: a closed
** loop of 16 concurrent requests for 3 s (requests/s, p50, p99), and an
** open loop paced at 1,000 requests/s for 3 s (errors, p99). Then the time
** from writing a policy file to the daemon deciding with the new policy.
** Then the controller at scale, each on a fresh daemon with --state: one
** PUT of 5,000 and of 20,000 diverse pods until every planned claim has
** launched, with the loop's lag (p99 from /metrics); 5,000 and 20,000 pods
** PUT one by one (time per object); a policy reload during a 1,000-claim
** round.
**
**   build/rel/load [path/to/dovetail]
*/
#define _GNU_SOURCE
#include <curl/curl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static size_t sink(char *p, size_t s, size_t n, void *u) {
  (void)p, (void)u;
  return s * n;
}

typedef struct slot {
  CURL *e;
  double t0;
  char body[512];
} slot;

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static char base[64];
static unsigned long seq;

static void setup(slot *s, bool put) {
  char url[128];
  snprintf(url, sizeof url, "%s%s", base, put ? "/v1/objects" : "/v1/plan");
  curl_easy_reset(s->e);
  curl_easy_setopt(s->e, CURLOPT_URL, url);
  curl_easy_setopt(s->e, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(s->e, CURLOPT_PRIVATE, s);
  curl_easy_setopt(s->e, CURLOPT_TIMEOUT_MS, 5000L);
  if (put) {
    snprintf(s->body, sizeof s->body,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"load-%lu\",\"namespace\":\"load\"},"
             "\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"}}}]}}",
             seq++ % 2000);
    curl_easy_setopt(s->e, CURLOPT_CUSTOMREQUEST, "PUT");
    curl_easy_setopt(s->e, CURLOPT_POSTFIELDS, s->body);
  }
  s->t0 = now_ms();
}

/* rate 0: closed loop with `conc` in flight; else open loop at `rate`/s. */
static void run(const char *name, bool put, int conc, double rate, double secs) {
  CURLM *m = curl_multi_init();
  slot sl[256];
  int free_[256], nfree = 0;
  size_t cap = 200000, n = 0, errors = 0;
  double *lat = malloc(cap * sizeof *lat);
  int maxc = rate > 0 ? 256 : conc;
  for (int i = 0; i < maxc; i++) {
    sl[i].e = curl_easy_init();
    free_[nfree++] = i;
  }
  double start = now_ms(), next = start;
  size_t issued = 0;
  int running = 0;
  for (;;) {
    double t = now_ms();
    bool more = t - start < secs * 1000;
    while (more && nfree && (rate <= 0 || t >= next)) {
      slot *s = &sl[free_[--nfree]];
      setup(s, put);
      curl_multi_add_handle(m, s->e);
      issued++;
      next += rate > 0 ? 1000.0 / rate : 0;
      if (rate > 0) break;
    }
    if (!more && !running && issued) {
      int r;
      curl_multi_perform(m, &r);
      if (!r) break;
    }
    curl_multi_perform(m, &running);
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(m, &left))) {
      if (msg->msg != CURLMSG_DONE) continue;
      slot *s;
      long code = 0;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
      curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
      if (msg->data.result != CURLE_OK || code != 200) errors++;
      if (n < cap) lat[n++] = now_ms() - s->t0;
      curl_multi_remove_handle(m, msg->easy_handle);
      free_[nfree++] = (int)(s - sl);
    }
    if (!more && running == 0) break;
    /* Closed loop: a slot a response just freed carries the next request at
    ** once. Polling first would wait out the timeout whenever every request
    ** in flight had finished (nothing left to wake the poll), which capped
    ** the loop at about conc per 10 ms. */
    if (more && rate <= 0 && nfree) continue;
    curl_multi_poll(m, NULL, 0, rate > 0 ? 1 : 10, NULL);
  }
  double el = (now_ms() - start) / 1000;
  qsort(lat, n, sizeof *lat, cmpd);
  printf("%-28s %8.0f req/s  p50 %6.2f ms  p99 %6.2f ms  %zu requests, %zu errors\n", name, (double)n / el,
         n ? lat[n / 2] : 0, n ? lat[(size_t)((double)n * 0.99)] : 0, n, errors);
  for (int i = 0; i < maxc; i++) curl_easy_cleanup(sl[i].e);
  curl_multi_cleanup(m);
  free(lat);
}

static size_t grab(char *p, size_t s, size_t n, void *u) {
  char *b = u;
  size_t l = strlen(b), k = s * n;
  if (l + k < 8191) {
    memcpy(b + l, p, k);
    b[l + k] = 0;
  }
  return k;
}

static void get(const char *path, char *out) {
  CURL *e = curl_easy_init();
  char url[128];
  snprintf(url, sizeof url, "%s%s", base, path);
  out[0] = 0;
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, grab);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, out);
  curl_easy_perform(e);
  curl_easy_cleanup(e);
}

#define BIG (1 << 21)
static size_t grab_big(char *p, size_t s, size_t n, void *u) {
  char *b = u;
  size_t l = strlen(b), k = s * n;
  if (l + k < BIG - 1) {
    memcpy(b + l, p, k);
    b[l + k] = 0;
  }
  return k;
}

static long put(const char *body, size_t len) {
  CURL *e = curl_easy_init();
  char url[128], out[8192] = "";
  long code = 0;
  snprintf(url, sizeof url, "%s/v1/objects", base);
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "PUT");
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)len);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, grab);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, out);
  curl_easy_perform(e);
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_cleanup(e);
  return code;
}

/* Start `bin serve` with extra options; returns its pid and sets base. */
static char logp[160];

static pid_t daemon_start(const char *bin, const char *dir, const char *const *extra) {
  char state[160];
  snprintf(logp, sizeof logp, "%s/log-%lu", dir, seq);
  snprintf(state, sizeof state, "%s/state-%lu.json", dir, seq++);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    const char *args[24] = {bin, "serve", "--listen", "127.0.0.1:0", "--state", state};
    int n = 6;
    for (int i = 0; extra && extra[i] && n < 23; i++) args[n++] = extra[i];
    args[n] = NULL;
    if (!freopen(logp, "w", stderr)) _exit(127);
    execv(bin, (char *const *)args);
    _exit(127);
  }
  int port = 0;
  for (int i = 0; i < 400 && !port; i++) {
    usleep(10000);
    FILE *l = fopen(logp, "r");
    char line[1024];
    while (l && fgets(line, sizeof line, l)) {
      char *p = strstr(line, "http://127.0.0.1:");
      if (p) port = atoi(p + 17);
    }
    if (l) fclose(l);
  }
  snprintf(base, sizeof base, "http://127.0.0.1:%d", port);
  if (!port) kill(pid, SIGKILL);
  return port ? pid : -1;
}

static void daemon_stop(pid_t pid) {
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
}

/* GET path into body (BIG bytes at most). */
static void get_big(const char *path, char *body) {
  body[0] = 0;
  CURL *e = curl_easy_init();
  char url[128];
  snprintf(url, sizeof url, "%s%s", base, path);
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, grab_big);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, (void *)body);
  curl_easy_perform(e);
  curl_easy_cleanup(e);
}

/* A metric's value (the first line starting with name). */
static double metric(const char *name) {
  static char body[BIG];
  get_big("/metrics", body);
  size_t nl = strlen(name);
  double sum = 0;
  for (char *p = body; (p = strstr(p, name)); p++)
    if ((p == body || p[-1] == '\n') && (p[nl] == ' ' || p[nl] == '{')) sum += atof(strchr(p, ' ') + 1);
  return sum;
}

/* The loop lag's p99 from the histogram's buckets (an upper bound). */
static double lag_p99(void) {
  static const char *le[] = {"0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "1", "5"};
  double count = metric("dovetail_loop_lag_seconds_count");
  for (int i = 0; i < 8; i++) {
    char name[96];
    snprintf(name, sizeof name, "dovetail_loop_lag_seconds_bucket{le=\"%s\"}", le[i]);
    if (metric(name) >= 0.99 * count) return atof(le[i]) * 1000;
  }
  return 5000;
}

/* The start of a JSON List holding a NodePool that requires key In [values]. */
static size_t list_head(char *b, size_t cap, const char *key, const char *values) {
  return (size_t)snprintf(b, cap,
                          "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{\"apiVersion\":\"karpenter.sh/v1\","
                          "\"kind\":\"NodePool\",\"metadata\":{\"name\":\"default\"},\"spec\":{\"template\":{\"spec\":"
                          "{\"requirements\":[{\"key\":\"%s\",\"operator\":\"In\",\"values\":[%s]}]}}}}",
                          key, values);
}

/* n diverse pods (8 shapes, 20 namespaces, a third spread over zones) and
** a NodePool, as one JSON List. */
static char *workload(int n, size_t *len) {
  static const char *cpu[] = {"250m", "500m", "1", "2", "4", "750m", "1500m", "3"};
  static const char *mem[] = {"256Mi", "1Gi", "2Gi", "4Gi", "8Gi", "1536Mi", "3Gi", "6Gi"};
  size_t cap = (size_t)n * 600 + 4096, l = 0;
  char *b = malloc(cap);
  l += list_head(b, cap, "karpenter.k8s.aws/instance-category", "\"c\",\"m\",\"r\"");
  for (int i = 0; i < n; i++) {
    int s = (i * 7 + i / 13) % 8;
    l += (size_t)snprintf(b + l, cap - l,
                          ",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p-%d\",\"namespace\":"
                          "\"ns-%d\",\"labels\":{\"app\":\"a%d\"}},\"spec\":{%s\"containers\":[{\"name\":\"c\","
                          "\"resources\":{\"requests\":{\"cpu\":\"%s\",\"memory\":\"%s\"}}}]}}",
                          i, i % 20, i % 50,
                          i % 3 == 0 ? "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":"
                                       "\"topology.kubernetes.io/zone\",\"whenUnsatisfiable\":\"ScheduleAnyway\","
                                       "\"labelSelector\":{\"matchLabels\":{\"app\":\"x\"}}}],"
                                     : "",
                          cpu[s], mem[s]);
  }
  l += (size_t)snprintf(b + l, cap - l, "]}");
  *len = l;
  return b;
}

/* One PUT of n pods until every claim the round planned has launched. */
static void bulk(const char *bin, const char *dir, int n) {
  const char *extra[] = {"--batch-idle", "100ms", "--disrupt-interval", "10s", NULL};
  pid_t pid = daemon_start(bin, dir, extra);
  if (pid < 0) return;
  size_t len;
  char *body = workload(n, &len);
  double t0 = now_ms();
  long code = put(body, len);
  double planned = 0, launched = 0;
  for (int i = 0; i < 6000; i++) { /* the first round's new claims, from the daemon's log */
    FILE *l = fopen(logp, "r");
    char line[2048];
    while (l && !planned && fgets(line, sizeof line, l)) {
      char *s = strstr(line, "scheduled, ");
      if (strstr(line, "\"event\":\"plan\"") && s) planned = atof(s + 11);
    }
    if (l) fclose(l);
    launched = metric("dovetail_claims_launched_total");
    if (planned > 0 && launched >= planned) break;
    usleep(5000);
  }
  double el = now_ms() - t0;
  char name[64];
  snprintf(name, sizeof name, "PUT %d pods -> launched", n);
  printf("%-28s %7.0f ms (HTTP %ld; %.0f claims; loop lag p99 <= %.0f ms; targets < %s s, lag < 50 ms)\n", name, el,
         code, launched, lag_p99(), n > 5000 ? "5" : "1.5");
  free(body);
  daemon_stop(pid);
}

/* n pods PUT one at a time (no round in between: long batch windows). */
static double one_by_one(const char *bin, const char *dir, int n) {
  const char *extra[] = {"--batch-idle", "600s", "--batch-max", "600s", "--disrupt-interval", "0", NULL};
  pid_t pid = daemon_start(bin, dir, extra);
  if (pid < 0) return 0;
  double t0 = now_ms();
  char body[512];
  for (int i = 0; i < n; i++) {
    int l = snprintf(body, sizeof body,
                     "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"one-%d\",\"namespace\":"
                     "\"ns-%d\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
                     "{\"cpu\":\"100m\"}}}]}}",
                     i, i % 20);
    put(body, (size_t)l);
  }
  double per = (now_ms() - t0) * 1000 / n;
  daemon_stop(pid);
  return per;
}

/* A policy rewritten delay_us after 1,000 pods arrive (while their round
** plans, renders or launches 1,000 claims): ms from the write to deciding. */
static double reload_during_round(const char *bin, const char *dir, useconds_t delay_us, double *launched) {
  char pol[200];
  snprintf(pol, sizeof pol, "%s/round-policy.lua", dir);
  FILE *f = fopen(pol, "w");
  fputs("return { price = function(o) local p = {} for i, x in ipairs(o) do p[i] = x.price end return p end }\n", f);
  fclose(f);
  const char *extra[] = {"--batch-idle", "10ms", "--disrupt-interval", "0", "--policy", pol, NULL};
  pid_t pid = daemon_start(bin, dir, extra);
  if (pid < 0) return -1;
  /* 1,000 pods of 30 vCPU on types of at most 32: one claim each */
  size_t cap = 1000 * 400 + 1024, l = 0;
  char *b = malloc(cap);
  l += list_head(b, cap, "karpenter.k8s.aws/instance-cpu", "\"32\"");
  for (int i = 0; i < 1000; i++)
    l += (size_t)snprintf(b + l, cap - l,
                          ",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"big-%d\"},\"spec\":"
                          "{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"30\"}}}]}}",
                          i);
  l += (size_t)snprintf(b + l, cap - l, "]}");
  put(b, l);
  usleep(delay_us);
  f = fopen(pol, "w");
  fputs("return { rank = function(_, o) local s = {} for i, x in ipairs(o) do s[i] = x.price end return s end }\n", f);
  fclose(f);
  double t0 = now_ms();
  static char body[BIG];
  for (int i = 0; i < 5000; i++) {
    get_big("/v1/state", body);
    if (strstr(body, "\"hooks\":\t\"rank\"")) break;
    usleep(1000);
  }
  double ms = now_ms() - t0;
  *launched = metric("dovetail_claims_launched_total");
  free(b);
  daemon_stop(pid);
  return ms;
}

/* The write lands at every stage of the round: before it, while it plans,
** while its result is rendered, while its claims are written and launched. */
static void reload_during_rounds(const char *bin, const char *dir) {
  static const useconds_t delays[] = {5000, 15000, 25000, 35000, 45000, 60000, 80000, 120000};
  size_t n = sizeof delays / sizeof *delays;
  double worst = 0, sum = 0, launched = 0;
  for (size_t i = 0; i < n; i++) {
    double ms = reload_during_round(bin, dir, delays[i], &launched);
    if (ms < 0) return;
    sum += ms;
    if (ms > worst) worst = ms;
  }
  printf("%-28s mean %.1f ms, worst %.1f ms over writes 5-120 ms into the round (%.0f claims launched; "
         "target < 100 ms)\n", "reload during 1,000 claims", sum / (double)n, worst, launched);
}

int main(int argc, char **argv) {
  const char *bin = argc > 1 ? argv[1] : "build/rel/dovetail";
  char dir[] = "/tmp/dovetail-load-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  char pol[128];
  snprintf(pol, sizeof pol, "%s/policy.lua", dir);
  FILE *f = fopen(pol, "w");
  fputs("return { rank = function(_, o) local s = {} for i, x in ipairs(o) do s[i] = x.price end return s end }\n", f);
  fclose(f);
  const char *extra[] = {"--policy", pol, NULL};
  pid_t pid = daemon_start(bin, dir, extra);
  if (pid < 0) {
    fprintf(stderr, "load: the daemon did not start\n");
    return 1;
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  run("PUT /v1/objects closed x16", true, 16, 0, 3);
  run("PUT /v1/objects at 1000/s", true, 0, 1000, 3);
  sleep(2); /* let a batch window close so there is a plan */
  run("GET /v1/plan closed x16", false, 16, 0, 3);
  run("GET /v1/plan at 1000/s", false, 0, 1000, 3);
  /* policy write -> the new policy deciding (its hooks in /v1/state) */
  double total = 0, worst = 0;
  int reps = 10;
  for (int r = 0; r < reps; r++) {
    const char *hook = r % 2 ? "rank" : "price";
    f = fopen(pol, "w");
    if (r % 2)
      fputs("return { rank = function(_, o) local s = {} for i, x in ipairs(o) do s[i] = x.price end return s end }\n", f);
    else
      fputs("return { price = function(o) local p = {} for i, x in ipairs(o) do p[i] = x.price end return p end }\n", f);
    fclose(f);
    double t0 = now_ms();
    char body[8192], want[64];
    snprintf(want, sizeof want, "\"hooks\":\t\"%s\"", hook);
    for (int i = 0; i < 2000; i++) {
      get("/v1/state", body);
      if (strstr(body, want)) break;
      usleep(1000);
    }
    double dt = now_ms() - t0;
    total += dt;
    if (dt > worst) worst = dt;
    usleep(100000);
  }
  printf("%-28s mean %.1f ms, worst %.1f ms over %d writes (target < 100 ms)\n", "policy write -> deciding",
         total / reps, worst, reps);
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
  bulk(bin, dir, 5000);
  bulk(bin, dir, 20000);
  double p5 = one_by_one(bin, dir, 5000), p20 = one_by_one(bin, dir, 20000);
  printf("%-28s %7.0f us/object at 5,000, %.0f at 20,000 (ratio %.2f; target <= 1.5)\n", "PUT one by one", p5, p20,
         p5 > 0 ? p20 / p5 : 0);
  reload_during_rounds(bin, dir);
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd)) return 1;
  return 0;
}
