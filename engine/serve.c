/*
** serve.c: `dovetail serve`, the daemon's front. One libuv loop runs the
** controller (controller.c) on libuv's clock, the HTTP API (h2o on libuv),
** the policy file watch and signals. Options come from one table read by
** the command line, --config and SIGHUP alike. The HTTP API's handlers are
** in api.c.
*/
#define _GNU_SOURCE
#include "daemon.h"
#include "provider.h"
#include "httpc.h"
#include "httpd.h"
#include "store.h"
#include "reader.h"

#include <errno.h>
#include <fcntl.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static void reload_config(void);

static void on_debounce(uv_timer_t *t) {
  (void)t;
  reload("file changed");
}

static void on_watch(uv_fs_event_t *h, const char *file, int events, int status) {
  (void)h;
  (void)events;
  (void)status;
  const char *base = strrchr(D.policy_path, '/');
  base = base ? base + 1 : D.policy_path;
  if (file && strcmp(file, base)) return;
  tm_start(&D.debounce, on_debounce, 30, 0); /* editors write in bursts */
}

static void on_close_noop(uv_handle_t *h) { (void)h; }

static void on_signal(uv_signal_t *s, int sig) {
  if (sig == SIGHUP) {
    reload("SIGHUP");
    reload_config();
    return;
  }
  if (D.stopping) return;
  D.stopping = true;
  logf_("info", "stop", "signal %d: writing state and stopping", sig);
  launch_waiting(SIZE_MAX); /* the last round's launches, written ahead, go out before the stop */
  int rc = save_state();
  logf_(rc ? "error" : "info", "stop", rc ? "state NOT written" : "state written");
  uv_stop(s->loop);
}

/* ------------------------------------------------------------ main */

/*
** Options: one table read by the command line, --config and SIGHUP alike
** (Redis's config table). RUNTIME options may change on SIGHUP; the rest
** need a restart. A SIGHUP applies nothing unless every value it carries
** reads, so a typo never leaves half a configuration in force.
*/
typedef enum opt_kind { O_STR, O_DUR_MS, O_DUR_S, O_INT, O_SIZE, O_LIST, O_COUNT_PCT, O_COUNT } opt_kind;

typedef struct opt {
  const char *name;
  opt_kind kind;
  bool runtime;
  void *field;
  const char *help;
} opt;

static const char *g_listen = "127.0.0.1:8080", *g_catalog, *g_token_file;

static const opt k_opts[] = {
    {"listen", O_STR, false, &g_listen, "HOST:PORT   HTTP API (default 127.0.0.1:8080; port 0 picks one, logged)"},
    {"catalog", O_STR, false, &g_catalog,
     "NAME|FILE  instance catalog: aws-us-east-1 (default), azure-eastus, or a file"},
    {"policy", O_STR, false, &D.policy_path, "FILE        a Lua policy, watched and hot-reloaded (also on SIGHUP)"},
    {"policy-dir", O_STR, false, &D.policy_dir,
     "DIR     where NodePools' dovetail.dev/policy: NAME are found as NAME.lua (default policies; read\n"
     "                       again by the next round or pass when changed)"},
    {"scheduler-config", O_STR, false, &D.scheduler_config,
     "FILE  Karpenter's --scheduler-config document: podTopologySpread.defaultConstraints for pods that\n"
     "                       declare no spread (read at the start)"},
    {"state", O_STR, false, &D.state_path, "FILE         crash-safe state (written atomically, once per round)"},
    {"batch-idle", O_DUR_MS, true, &D.idle_ms, "DUR     provisioning batch idle window (default 1s)"},
    {"batch-max", O_DUR_MS, true, &D.max_ms, "DUR      provisioning batch maximum window (default 10s)"},
    {"unavailable-ttl", O_DUR_S, true, &D.ttl,
     "DUR  how long an offering stays unavailable after insufficient capacity or a spot warning (default 3m)"},
    {"preemption-ttl", O_DUR_S, true, &D.preempt_ttl,
     "DUR   how long after a polled preemption (default 1h, as IBM Cloud's provider)"},
    {"unhealthy-timeout", O_DUR_S, true, &D.unhealthy_s,
     "DUR  a node Ready=False/Unknown, or stopped by the cloud, this long is replaced (default 5m)"},
    {"startup-timeout", O_DUR_S, true, &D.startup_timeout_s,
     "DUR  a launched claim whose node has not initialized after DUR is deleted (default 15m)"},
    {"registration", O_STR, false, &D.registration,
     "auto|node|launch  a launched claim is initialized when its Node is Ready (node), at launch (launch), or "
     "as node once the cluster feed has sent any Node (auto, the default)"},
    {"max-unhealthy", O_COUNT_PCT, true, &D.max_unhealthy,
     "N|P%  remediation stops when more of a pool's nodes are unhealthy (default 100%)"},
    {"token-file", O_STR, false, &g_token_file,
     "FILE    require Authorization: Bearer <token> (except /healthz, /readyz)"},
    {"body-limit", O_SIZE, false, &D.http_lim.body, "BYTES   largest request body (default 16 MiB)"},
    {"max-connections", O_COUNT, false, &D.http_lim.conns,
     "N  HTTP connections at once; past it one idle 5 s or more gives way, or the new one is closed (default 32)"},
    {"reply-limit", O_SIZE, false, &D.http_lim.replies,
     "BYTES  replies held for clients still reading them; a larger one is answered 503 with Retry-After (default "
     "256 MiB)"},
    {"stall-timeout", O_DUR_MS, false, &D.http_lim.stall_ms,
     "DUR  an HTTP connection that moves no byte this long is shut (default 60s; 0 never)"},
    {"log-format", O_STR, true, &D.log_format, "json|logfmt"},
    {"sim-ice", O_LIST, false, &D.sim_ice,
     "TYPE/ZONE/CT  the sim provider reports insufficient capacity for it (repeatable)"},
    {"provider", O_STR, false, &D.provider,
     "sim|http  the cloud: in-process (default) or the REST contract over libcurl"},
    {"cloud-url", O_STR, false, &D.cloud_url, "URL      the http provider's base URL (e.g. a dovetail fakecloud)"},
    {"cluster", O_STR, false, &D.cluster, "NAME       tags instances, filters GET /instances (default dovetail)"},
    {"poll", O_DUR_MS, true, &D.poll_ms, "DUR           instance and catalog polling (default 60s)"},
    {"timeout", O_DUR_MS, true, &D.timeout_ms, "DUR        per provider request, from when it is sent (default 10s)"},
    {"cloud-connections", O_COUNT, false, &D.cloud_conns,
     "N  requests to the cloud at once; the rest wait their turn in order (default 16)"},
    {"cloud-reply-limit", O_SIZE, false, &D.cloud_reply,
     "BYTES  longest reply read from the cloud; a longer one is cut off and fails (default 64 MiB)"},
    {"retries", O_INT, true, &D.retries, "N          launch retries on 5xx, 429 or transport errors (default 3)"},
    {"disrupt-interval", O_DUR_MS, true, &D.disrupt_ms,
     "DUR  health remediation and a disruption pass every DUR (default 10s; 0 turns it off)"},
};
#define NOPTS (sizeof k_opts / sizeof k_opts[0])

static void usage(FILE *f) {
  fputs("usage: dovetail serve [options]\n"
        "  --config FILE        options as a YAML or JSON map (listen, catalog, batch-idle, ...); flags override\n"
        "  --recover            start from the state journal's last good record, saying what was dropped\n",
        f);
  for (size_t i = 0; i < NOPTS; i++)
    fprintf(f, "  --%s %s%s\n", k_opts[i].name, k_opts[i].help, k_opts[i].runtime ? " [SIGHUP]" : "");
}

static int duration_ms(const char *s, uint64_t *out) {
  int64_t ms;
  if (dt__duration_ms_parse(s, &ms)) return -1;
  *out = (uint64_t)ms;
  return 0;
}

/* Read v for o; with apply, store it in o's field. 0, or -1 with why. */
static int opt_set(const opt *o, const char *v, bool apply, char *why, size_t n) {
  uint64_t ms = 0;
  char *end = NULL;
  switch (o->kind) {
  case O_STR:
    if (apply) *(const char **)o->field = v;
    return 0;
  case O_LIST:
    if (apply) {
      char *c = dt__strdup(v);
      if (!c || dt__vec_push((DT_VEC(char *) *)o->field, c)) return dt__free(c), snprintf(why, n, "out of memory"), -1;
    }
    return 0;
  case O_DUR_MS:
  case O_DUR_S:
    if (duration_ms(v, &ms)) break;
    if (apply && o->kind == O_DUR_MS) *(uint64_t *)o->field = ms;
    if (apply && o->kind == O_DUR_S) *(int64_t *)o->field = (int64_t)(ms / 1000);
    return 0;
  case O_INT: {
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < 0 || x > 100) break;
    if (apply) *(int *)o->field = (int)x;
    return 0;
  }
  case O_SIZE: { /* bytes, or with a unit: Ki, Mi, Gi (and KiB ...), k, M, G */
    static const struct {
      const char *s;
      unsigned long long m;
    } units[] = {{"", 1},
                 {"Ki", 1ULL << 10},
                 {"KiB", 1ULL << 10},
                 {"Mi", 1ULL << 20},
                 {"MiB", 1ULL << 20},
                 {"Gi", 1ULL << 30},
                 {"GiB", 1ULL << 30},
                 {"k", 1000},
                 {"K", 1000},
                 {"KB", 1000},
                 {"M", 1000000},
                 {"MB", 1000000},
                 {"G", 1000000000},
                 {"GB", 1000000000}};
    unsigned long long x;
    if (dt__uint_parse(v, &x, &end)) break;
    size_t u = 0;
    while (u < sizeof units / sizeof *units && strcmp(end, units[u].s)) u++;
    if (u == sizeof units / sizeof *units || x > (unsigned long long)DT_MAX_INPUT_BYTES) break;
    x *= units[u].m;
    if (x < 1 || x > (unsigned long long)DT_MAX_INPUT_BYTES) break;
    if (apply) *(size_t *)o->field = (size_t)x;
    return 0;
  }
  case O_COUNT: {
    unsigned long long x;
    if (dt__uint_parse(v, &x, &end) || *end || x < 1 || x > 1000000) break;
    if (apply) *(size_t *)o->field = (size_t)x;
    return 0;
  }
  case O_COUNT_PCT: {
    unsigned long long x;
    if (dt__uint_parse(v, &x, &end)) break; /* "-1" was 2^64 - 1 nodes */
    bool pct = *end == '%' && end[1] == 0;
    if ((*end && !pct) || (pct && x > 100)) break;
    if (apply) {
      *(uint64_t *)o->field = x;
      D.max_unhealthy_pct = pct;
    }
    return 0;
  }
  }
  static const char *const expect[] = {"",
                                       "a duration such as 1s, 500ms or 3m",
                                       "a duration such as 30s or 5m",
                                       "an integer from 0 to 100",
                                       "a byte count from 1 to 1 GiB (64Mi, 16777216)",
                                       "",
                                       "a count or a percentage such as 3 or 40%",
                                       "a count from 1 to 1000000"};
  snprintf(why, n, "--%s: expected %s, got \"%s\"", o->name, expect[o->kind], v);
  return -1;
}

static const opt *opt_find(const char *flag) {
  if (strncmp(flag, "--", 2)) return NULL;
  for (size_t i = 0; i < NOPTS; i++)
    if (!strcmp(flag + 2, k_opts[i].name)) return &k_opts[i];
  return NULL;
}

/* The option nearest to name (no dashes), within two edits; NULL none. */
static const char *opt_near(const char *name) {
  const char *near = NULL;
  size_t best = 3;
  for (size_t i = 0; i < NOPTS; i++) {
    size_t d = mf_edit_distance(name, k_opts[i].name);
    if (d < best) best = d, near = k_opts[i].name;
  }
  return near;
}

/* How many of the arguments config_args made came from the --config file
** (the first ones), so an error in their values names the file. */
static int g_config_nargs;

/* A copy of s at the end of a vector of strings; non-zero, and nothing
** added, when out of memory. */
static int push_copy(char ***v, size_t *n, size_t *cap, const char *s) {
  char *c = dt__strdup(s);
  if (!c || dt__vec_grow((void **)v, cap, *n + 1, sizeof **v)) {
    dt__free(c);
    return -1;
  }
  (*v)[(*n)++] = c;
  return 0;
}

/* --config FILE (YAML or JSON): a map of the long options without their
** dashes ({listen: "127.0.0.1:8080", sim-ice: [a, b], ...}), read before the
** command line, so flags override it. *outv's strings are owned by the
** caller (free with free_args). */
static int config_args(int argc, char **argv, int *outc, char ***outv, char *why, size_t wn) {
  const char *path = NULL;
  for (int i = 0; i + 1 < argc; i++)
    if (!strcmp(argv[i], "--config")) path = argv[i + 1];
  DT_VEC(char *) v = {0};
  int rc = 0;
  snprintf(why, wn, "out of memory"); /* what a failed copy below leaves */
  if (path) {
    dt_error err = {0};
    char *text = NULL;
    size_t len;
    cJSON *docs = NULL;
    if (dt__read_file(path, &text, &len, &err) || dt__doc_parse(path, text, len, &docs, &err)) {
      snprintf(why, wn, "--config: %s", err.msg);
      rc = -1;
    }
    dt__free(text);
    const cJSON *m = docs ? docs->child : NULL, *c;
    if (!rc && !cJSON_IsObject(m)) {
      snprintf(why, wn, "--config %s: expected a map of options", path);
      rc = -1;
    }
    const cJSON *map = rc ? NULL : m;
    cJSON_ArrayForEach(c, map) {
      char flag[200], tmp[64];
      snprintf(flag, sizeof flag, "--%s", c->string);
      if (!rc && !opt_find(flag) && strcmp(flag, "--recover")) {
        const char *near = opt_near(c->string);
        snprintf(why, wn, "--config %s: %s: unknown option%s%s%s", path, c->string, near ? " (did you mean " : "",
                 near ? near : "", near ? "?)" : "");
        rc = -1;
      }
      const opt *oc = opt_find(flag);
      if (!rc && cJSON_IsArray(c) && oc && oc->kind != O_LIST) {
        snprintf(why, wn, "--config %s: %s: expected one value, got a list (only repeatable options take one)", path,
                 c->string);
        rc = -1;
      }
      const cJSON *items = cJSON_IsArray(c) ? c->child : c;
      for (const cJSON *it = items; it && !rc; it = cJSON_IsArray(c) ? it->next : NULL) {
        const char *val = dt__scalar(it, tmp, sizeof tmp);
        if (!val || cJSON_IsBool(it) || cJSON_IsNull(it)) {
          snprintf(why, wn, "--config %s: %s: expected a string or a number", path, c->string);
          rc = -1;
        } else if (push_copy(&v.v, &v.n, &v.cap, flag) || push_copy(&v.v, &v.n, &v.cap, val)) {
          rc = -1;
        }
      }
    }
    cJSON_Delete(docs);
  }
  g_config_nargs = (int)v.n;
  for (int i = 0; i < argc && !rc; i++) {
    if (!strcmp(argv[i], "--config") && i + 1 < argc) {
      i++;
      continue;
    }
    const char *eq = !strncmp(argv[i], "--", 2) ? strchr(argv[i], '=') : NULL;
    if (eq) { /* --name=value: two arguments, as everything after reads them */
      char *name = dt__strndup(argv[i], (size_t)(eq - argv[i]));
      if (!name || push_copy(&v.v, &v.n, &v.cap, name) || push_copy(&v.v, &v.n, &v.cap, eq + 1)) rc = -1;
      dt__free(name);
      continue;
    }
    if (push_copy(&v.v, &v.n, &v.cap, argv[i])) rc = -1;
  }
  if (rc) {
    for (size_t i = 0; i < v.n; i++) dt__free(v.v[i]);
    dt__free(v.v);
    return -1;
  }
  *outc = (int)v.n;
  *outv = v.v;
  return 0;
}

static void free_args(int argc, char **argv) {
  for (int i = 0; i < argc; i++) dt__free(argv[i]);
  dt__free(argv);
}

/* SIGHUP: re-read --config for the options marked [SIGHUP], then the
** command line, whose flags override the file as at the start. The listen
** address, provider, catalog and state file need a restart. */
static const char *g_config_path;
static char **g_hup_argv; /* the last applied SIGHUP's strings, which options point into */
static int g_argc0;       /* the command line, read again after the file on SIGHUP */
static char **g_argv0;
static int g_hup_argc;

/* Whether option o already holds v: a restart-only option the file leaves
** as it is is no news on SIGHUP (lists are not compared). */
static bool opt_same(const opt *o, const char *v) {
  if (o->kind == O_STR) {
    const char *cur = *(const char *const *)o->field;
    return cur && !strcmp(cur, v);
  }
  if (o->kind == O_LIST || o->kind == O_COUNT_PCT) return true;
  union {
    uint64_t u;
    int64_t i;
    int n;
    size_t z;
  } got = {0};
  opt t = *o;
  t.field = &got;
  char why[200];
  if (opt_set(&t, v, true, why, sizeof why)) return false;
  size_t size = o->kind == O_DUR_MS  ? sizeof got.u
                : o->kind == O_DUR_S ? sizeof got.i
                : o->kind == O_INT   ? sizeof got.n
                                     : sizeof got.z;
  return !memcmp(&got, o->field, size);
}

/* The next option of the arguments from i (a flag without a value, such as
** --recover, skipped); its index, or argc. */
static int next_opt(int argc, char **argv, int i) {
  while (i < argc && !strcmp(argv[i], "--recover")) i++;
  return i;
}

static void reload_config(void) {
  if (!g_config_path) {
    logf_("info", "config", "SIGHUP: started without --config, so no options are re-read%s",
          D.policy ? "" : " (and there is no --policy to reload)");
    return;
  }
  int argc;
  char **argv;
  char why[700] = "", ts[40];
  dt__fmt_time(wall(), ts, sizeof ts);
  /* the file, then the command line again: its flags still win */
  bool parsed = config_args(g_argc0, g_argv0, &argc, &argv, why, sizeof why) == 0, ok = parsed;
  for (int pass = 0; ok && pass < 2; pass++) /* every value reads, then all apply */
    for (int i = next_opt(argc, argv, 0); ok && i + 1 < argc; i = next_opt(argc, argv, i + 2)) {
      const opt *o = opt_find(argv[i]);
      bool later = false; /* the same option again further on: that one is in force */
      for (int j = next_opt(argc, argv, i + 2); o && o->kind != O_LIST && j + 1 < argc && !later;
           j = next_opt(argc, argv, j + 2))
        later = !strcmp(argv[j], argv[i]);
      if (!o) {
        snprintf(why, sizeof why, "%s: unknown option", argv[i]);
        ok = false;
      } else if (!o->runtime) {
        if (pass == 0 && !later && !opt_same(o, argv[i + 1]))
          logf_("warn", "config", "%s: needs a restart to change; ignored", argv[i]);
      } else if (opt_set(o, argv[i + 1], pass == 1, why, sizeof why)) {
        ok = false;
      }
    }
  if (!ok) {
    if (parsed) free_args(argc, argv);
    snprintf(D.config_result, sizeof D.config_result, "%s: not reloaded, the running settings stay: %s", ts, why);
    logf_("error", "config", "%s: %s", g_config_path, D.config_result);
    return;
  }
  free_args(g_hup_argc, g_hup_argv);
  g_hup_argc = argc, g_hup_argv = argv;
  if (D.cloud_url) tm_start(&D.poll, on_poll_timer, D.poll_ms, D.poll_ms);
  if (D.disrupt_ms)
    tm_start(&D.disrupt, on_disrupt, D.disrupt_ms, D.disrupt_ms);
  else
    tm_stop(&D.disrupt);
  snprintf(D.config_result, sizeof D.config_result, "%s: reloaded", ts);
  logf_("info", "config", "%s reloaded", g_config_path);
}

/* The loop's lag: a timer every 100 ms notes how late it fires, which is
** how long the callback before it held the loop. */
#define LAG_EVERY_MS 100

static void on_lag(uv_timer_t *t) {
  double now = dt__now_ms(), late = now - D.lag_expect;
  if (late < 0) late = 0;
  D.lag_expect = now + LAG_EVERY_MS;
  D.lag_count++;
  D.lag_sum += late / 1000;
  for (int b = 0; b < 8; b++)
    if (late / 1000 <= k_lag_buckets[b]) D.lag_buckets[b]++;
  tm_start(t, on_lag, LAG_EVERY_MS, 0);
}

/* The defaults the options change. */
static void serve_defaults(void) {
  D.idle_ms = 1000;
  D.max_ms = 10000;
  D.ttl = 180;
  D.preempt_ttl = 3600;
  D.unhealthy_s = 300;
  D.startup_timeout_s = 900;
  D.max_unhealthy = 100;
  D.max_unhealthy_pct = true;
  D.http_lim = (dt_httpd_limits){.body = 16u << 20, .conns = 32, .replies = 256u << 20, .stall_ms = 60000};
  D.provider = "sim";
  D.registration = "auto";
  D.cluster = "dovetail";
  D.poll_ms = 60000;
  D.timeout_ms = 10000;
  D.cloud_conns = 16;
  D.cloud_reply = (size_t)64 << 20;
  D.retries = 3;
  D.disrupt_ms = 10000;
  D.requeue_ms = REQUEUE_BASE_MS;
}

/* The options (the config file's, then the command line's); -1 to go on,
** else the exit status. */
static int serve_args(int argc, char **argv) {
  char why[700];
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    const opt *o = opt_find(a);
    if (!strcmp(a, "--recover")) { /* a flag: past a damaged journal record */
      D.recover = true;
      continue;
    }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    }
    if (!o || !v) {
      fprintf(stderr, "dovetail serve: %s option %s\n", o ? "incomplete" : "unknown", a);
      usage(stderr);
      return 2;
    }
    if (opt_set(o, v, true, why, sizeof why)) {
      if (i < g_config_nargs) /* the file's: named, as its line is not the command line's */
        fprintf(stderr, "dovetail serve: --config %s: %s\n", g_config_path, why);
      else
        fprintf(stderr, "dovetail serve: %s\n", why);
      return 2;
    }
    i++;
  }
  if (strcmp(D.provider, "sim") && strcmp(D.provider, "http")) {
    fprintf(stderr, "dovetail serve: --provider: expected sim or http, got \"%s\"\n", D.provider);
    return 2;
  }
  if (strcmp(D.registration, "auto") && strcmp(D.registration, "node") && strcmp(D.registration, "launch")) {
    fprintf(stderr, "dovetail serve: --registration: expected auto, node or launch, got \"%s\"\n", D.registration);
    return 2;
  }
  if (!strcmp(D.provider, "http") != !!D.cloud_url) {
    fprintf(stderr, "dovetail serve: --provider http and --cloud-url URL go together\n");
    return 2;
  }
  return -1;
}

/* Open files up to the hard limit, as Go programs (Karpenter's among them)
** raise theirs at start: a round's launches are one request, and one
** socket, per claim, and systemd starts a service with a soft limit of
** 1,024 (its hard limit is 524,288), which a few thousand launches to a
** cloud that answers in a second would pass. */
static void files_limit(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= rl.rlim_max) return;
  rlim_t was = rl.rlim_cur;
  rl.rlim_cur = rl.rlim_max;
  if (!setrlimit(RLIMIT_NOFILE, &rl))
    logf_("debug", "limits", "open files: %llu, was %llu", (unsigned long long)rl.rlim_cur, (unsigned long long)was);
}

/* What the daemon reads before it listens: the catalog, the policies, the
** token and the state (which must be writable). 0, or 1 after saying why. */
static int serve_open(void) {
  dt_error err = {0};
  files_limit();
  if (dt_catalog_load_named(g_catalog, &D.cat, &err) ||
      (D.policy_path && dt_policy_load_file(D.policy_path, NULL, &D.policy, &err)) ||
      dt_policy_dir_open(D.policy_dir ? D.policy_dir : "policies", &D.pdir, &err) ||
      (D.scheduler_config && dt__spread_defaults_read(D.scheduler_config, &D.spread_cfg, &err))) {
    fprintf(stderr, "dovetail serve: %s\n", err.msg);
    return 1;
  }
  if (g_token_file) {
    char *t;
    size_t len;
    if (dt__read_file(g_token_file, &t, &len, &err)) {
      fprintf(stderr, "dovetail serve: --token-file: %s\n", err.msg);
      return 1;
    }
    while (len && (t[len - 1] == '\n' || t[len - 1] == '\r' || t[len - 1] == ' ')) t[--len] = 0;
    if (!len) {
      dt__free(t);
      fprintf(stderr, "dovetail serve: --token-file %s is empty\n", g_token_file);
      return 1;
    }
    D.token = t;
  }
  D.decisions = cJSON_CreateArray();
  if (load_state(&err)) {
    fprintf(stderr, "dovetail serve: %s\n", err.msg);
    return 1;
  }
  /* A state that cannot be written stops the start: running on, the daemon
  ** would launch what it cannot remember. */
  if (D.state_path && save_state()) {
    fprintf(stderr, "dovetail serve: --state %s: cannot be written: %s\n", D.state_path, strerror(errno));
    return 1;
  }
  return 0;
}

/* The loop's handles: the HTTP API, timers, signals, the policy watch.
** 0, or 1 after saying why. */
static int loop_open(void) {
  D.loop = uv_default_loop();
  char msg[600];
  if (dt__httpd_start(&D.http, D.loop, g_listen, &D.http_lim, dt__serve_on_req, msg, sizeof msg)) {
    fprintf(stderr, "dovetail serve: --listen: %s\n", msg);
    return 1;
  }
  D.port = D.http.port;
  uv_timer_t *timers[] = {&D.idle,        &D.max,     &D.debounce, &D.poll, &D.circuit_timer, &D.again,
                          &D.state_timer, &D.disrupt, &D.requeue,  &D.lag,  &D.launch_tick,   &D.delete_retry};
  for (size_t i = 0; i < sizeof timers / sizeof *timers; i++) uv_timer_init(D.loop, timers[i]);
  uv_idle_init(D.loop, &D.launch_idle);
  D.jitter = (uint64_t)wall();
  D.start_seed = (uint64_t)wall() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
  D.lag_expect = dt__now_ms() + LAG_EVERY_MS;
  tm_start(&D.lag, on_lag, LAG_EVERY_MS, 0);
  if (D.disrupt_ms) tm_start(&D.disrupt, on_disrupt, D.disrupt_ms, D.disrupt_ms);
  if (D.cloud_url && dt__httpc_init(D.loop, D.cloud_conns, D.cloud_reply)) {
    fprintf(stderr, "dovetail serve: cannot start libcurl\n");
    return 1;
  }
  D.prov = D.cloud_url ? &dt__provider_http : &dt__provider_sim;
  D.ready = !D.cloud_url;
  uv_signal_init(D.loop, &D.sighup);
  uv_signal_init(D.loop, &D.sigterm);
  uv_signal_init(D.loop, &D.sigint);
  uv_signal_start(&D.sighup, on_signal, SIGHUP);
  uv_signal_start(&D.sigterm, on_signal, SIGTERM);
  uv_signal_start(&D.sigint, on_signal, SIGINT);
  if (D.policy_path) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", D.policy_path);
    char *slash = strrchr(dir, '/');
    if (slash)
      *slash = 0;
    else
      snprintf(dir, sizeof dir, ".");
    uv_fs_event_init(D.loop, &D.watch);
    D.watching = uv_fs_event_start(&D.watch, on_watch, dir, 0) == 0;
  }
  return 0;
}

/* A graceful stop: the round on the thread pool, the plans being freed
** there and the provider calls sent (up to 10 s) finish, the state is
** written, the handles close. */
static void loop_close(void) {
  while (D.planning || D.plan_frees) uv_run(D.loop, UV_RUN_ONCE);
  uv_timer_t *timers[] = {&D.poll, &D.disrupt, &D.idle, &D.max, &D.requeue, &D.lag};
  for (size_t i = 0; i < sizeof timers / sizeof *timers; i++) tm_stop(timers[i]);
  if (D.cloud_url) dt__httpc_quiesce(); /* what waits for a connection is not sent, as launches not yet started */
  for (int i = 0; i < 200 && D.cloud_url && dt__httpc_in_flight() > dt__httpc_waiting(); i++)
    uv_run(D.loop, UV_RUN_ONCE);
  save_state();
  dt__serve_api_close();
  dt__httpd_close(&D.http);
  uv_handle_t *handles[] = {
      (uv_handle_t *)&D.idle,        (uv_handle_t *)&D.max,           (uv_handle_t *)&D.debounce,
      (uv_handle_t *)&D.poll,        (uv_handle_t *)&D.again,         (uv_handle_t *)&D.state_timer,
      (uv_handle_t *)&D.disrupt,     (uv_handle_t *)&D.circuit_timer, (uv_handle_t *)&D.requeue,
      (uv_handle_t *)&D.lag,         (uv_handle_t *)&D.launch_tick,   (uv_handle_t *)&D.launch_idle,
      (uv_handle_t *)&D.delete_retry};
  for (size_t i = 0; i < sizeof handles / sizeof *handles; i++) uv_close(handles[i], on_close_noop);
  dt__httpc_close();
  uv_close((uv_handle_t *)&D.sighup, on_close_noop);
  uv_close((uv_handle_t *)&D.sigterm, on_close_noop);
  uv_close((uv_handle_t *)&D.sigint, on_close_noop);
  if (D.watching) uv_close((uv_handle_t *)&D.watch, on_close_noop);
  uv_run(D.loop, UV_RUN_NOWAIT);
  /* the shut connections close as h2o reads their end (up to 2 s) */
  for (int i = 0; i < 200 && dt__httpd_conns(&D.http); i++) {
    uv_run(D.loop, UV_RUN_NOWAIT);
    if (dt__httpd_conns(&D.http)) uv_sleep(10);
  }
  dt__httpd_dispose(&D.http);
}

int dt__serve_main(int argc0, char **argv0) {
  signal(SIGPIPE, SIG_IGN);
#ifdef __GLIBC__
  /* Rounds run on libuv's pool threads, and glibc gives each thread that
  ** allocates an arena of its own (up to 8 per core), which fragments apart:
  ** over a 42-minute soak the daemon's RSS went from 72 to 158 MB and stayed
  ** there, against 46-54 MB with two arenas. MALLOC_ARENA_MAX, when set,
  ** still decides. */
  if (!getenv("MALLOC_ARENA_MAX")) mallopt(M_ARENA_MAX, 2);
#endif
  int argc;
  char **argv;
  char why[700];
  if (config_args(argc0, argv0, &argc, &argv, why, sizeof why)) {
    fprintf(stderr, "dovetail serve: %s\n", why);
    return 2;
  }
  for (int i = 0; i + 1 < argc0; i++)
    if (!strcmp(argv0[i], "--config")) g_config_path = argv0[i + 1];
  g_argc0 = argc0;
  g_argv0 = argv0;
  serve_defaults();
  int rc = serve_args(argc, argv); /* -1: go on; 0 after --help */
  bool go = rc < 0;
  if (go) go = !(rc = serve_open());
  if (go) go = !(rc = loop_open());
  if (go) {
    logf_("info", "listening", "http://%s:%d (catalog %s, %zu objects from state)", D.http.host, D.port,
          g_catalog ? g_catalog : "bundled", D.objs.n);
    if (!D.token && strcmp(D.http.host, "127.0.0.1") && strcmp(D.http.host, "::1") && strcmp(D.http.host, "localhost"))
      logf_("warn", "listening",
            "%s is not loopback and no --token-file is set: anyone who reaches it can "
            "apply objects and launch instances",
            D.http.host);
    if (D.cloud_url)
      tm_start(&D.poll, on_poll_timer, 0, D.poll_ms); /* reconcile first, then every poll interval */
    else if (D.objs.n)
      arm_batch();
    uv_run(D.loop, UV_RUN_DEFAULT);
    loop_close();
    logf_("info", "stopped", "%llu rounds", (unsigned long long)D.round);
  }
  ctl_free();
  free_args(argc, argv); /* options point into them until here */
  free_args(g_hup_argc, g_hup_argv);
  return rc;
}
