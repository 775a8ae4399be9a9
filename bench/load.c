/*
** load.c: a bounded HTTP load client for `dovetail serve` (loopback only).
** Starts the daemon, then for GET /v1/plan and PUT /v1/objects: a closed
** loop of 16 concurrent requests for 3 s (requests/s, p50, p99), and an
** open loop paced at 1,000 requests/s for 3 s (errors, p99). Then the time
** from writing a policy file to the daemon deciding with the new policy.
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

int main(int argc, char **argv) {
  const char *bin = argc > 1 ? argv[1] : "build/rel/dovetail";
  char dir[] = "/tmp/dovetail-load-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  char pol[128], logp[128], state[128];
  snprintf(pol, sizeof pol, "%s/policy.lua", dir);
  snprintf(logp, sizeof logp, "%s/log", dir);
  snprintf(state, sizeof state, "%s/state.json", dir);
  FILE *f = fopen(pol, "w");
  fputs("return { rank = function(_, o) local s = {} for i, x in ipairs(o) do s[i] = x.price end return s end }\n", f);
  fclose(f);
  pid_t pid = fork();
  if (pid == 0) {
    freopen(logp, "w", stderr);
    execl(bin, bin, "serve", "--listen", "127.0.0.1:0", "--policy", pol, "--state", state, (char *)NULL);
    _exit(127);
  }
  int port = 0;
  for (int i = 0; i < 200 && !port; i++) {
    usleep(20000);
    FILE *l = fopen(logp, "r");
    char line[1024];
    while (l && fgets(line, sizeof line, l)) {
      char *p = strstr(line, "http://127.0.0.1:");
      if (p) port = atoi(p + 17);
    }
    if (l) fclose(l);
  }
  if (!port) {
    fprintf(stderr, "load: the daemon did not start\n");
    kill(pid, SIGKILL);
    return 1;
  }
  snprintf(base, sizeof base, "http://127.0.0.1:%d", port);
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
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd)) return 1;
  return 0;
}
