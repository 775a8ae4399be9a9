/*
** sim_main.c: `dovetail simulate`'s command line: options, the cluster and
** the spot advisor data read, the runs made and their outputs written.
*/
#define _GNU_SOURCE
#include "sim.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

extern const char dt__bundled_advisor[];
extern const char dt__bundled_advisor_end[];

static const char *k_sim_usage =
    "usage: dovetail simulate -f CLUSTER.yaml [--trace FILE.csv[.gz]] [--scenario FILE.yaml] [options]\n"
    "Replay a cluster on a virtual clock through the daemon's own controller, with a simulated cloud.\n"
    "  -f, --filename FILE   the cluster to start from (NodePools, Nodes, pods, VM pools); repeatable\n"
    "  --trace FILE          pod arrivals: "
    "arrival_s,batch,cpu_millicores,memory_MiB,duration_s,duration_hi_s,censored\n"
    "                        (the Azure 2017 trace's format; .gz read as is)\n"
    "  --trace-limit N       only the first N arrivals\n"
    "  --scenario FILE       timed events: apply, delete, scale, unavailable, interrupt, price, pods, failStartup\n"
    "  --duration DUR        how long to simulate (default: the trace's last arrival, else the last event, + 1h)\n"
    "  --catalog NAME|FILE   aws-us-east-1 (default), azure-eastus, or a catalog file\n"
    "  --policy FILE         a run with this Lua policy; repeatable (each run: same inputs, same seed)\n"
    "  --baseline            add a run with first-fit-decreasing and no policy (Karpenter's behaviour)\n"
    "  --packing cost|ffd    packing of the runs without --baseline (default cost)\n"
    "  --policy-dir DIR      NodePools' own policies (dovetail.dev/policy: NAME)\n"
    "  --scheduler-config FILE  default topology spreads (podTopologySpread.defaultConstraints), as serve\n"
    "  --seed N              randomness: names, interruptions (default 1)\n"
    "  --start RFC3339       the virtual clock's start (default 2026-01-01T00:00:00Z)\n"
    "  --step DUR            time-series step (default 1m)\n"
    "  --disrupt-interval DUR  a disruption pass every DUR (default 5m; 0 turns it off)\n"
    "  --batch-idle DUR, --batch-max DUR  provisioning batch windows (default 1s, 10s)\n"
    "  --launch-latency DUR  the cloud's answer to a launch (default 5s)\n"
    "  --startup DUR         from the launch's answer to an initialized node (default 60s)\n"
    "  --startup-timeout DUR a claim whose node has not initialized after DUR is deleted (default 15m)\n"
    "  --unavailable-ttl DUR how long an offering stays unavailable after a refusal (default 3m)\n"
    "  --spot-advisor FILE   interruption buckets per type (default: bundled AWS Spot Instance Advisor us-east-1)\n"
    "  --out FILE            the time series and summaries as JSON\n"
    "  --report FILE.html    a self-contained HTML report with SVG charts\n"
    "  --check               check the invariants at every step; a violation is an error (exit 1)\n"
    "  --timings             per run on standard error: wall time, simulated seconds per wall second, peak RSS\n"
    "  -o table|json         the summary on standard output (default table)\n"
    "exit status: 0 done, 1 bad input or an invariant broken, 2 bad usage\n";

static int sim_usage(FILE *f, int rc) {
  fputs(k_sim_usage, f);
  return rc;
}

static int dur_opt(const char *flag, const char *v, int64_t *out_ms) {
  if (!dt__duration_ms_parse(v, out_ms)) return 0;
  fprintf(stderr, "dovetail simulate: %s: expected a duration (90s, 10m, 2h), got \"%s\"\n", flag, v);
  return -1;
}

/* The command line, once read. */
typedef struct simargs {
  DT_VEC(const char *) files, policies;
  const char *trace, *scenario, *out, *report, *advisor, *format;
  bool baseline, timings;
  dt_packing packing;
  int64_t duration;
  size_t limit;
} simargs;

/* One option that takes a value; 0, or 2 after saying what is wrong. */
static int sim_option(const char *a, const char *val, inputs *in, simargs *o) {
  int64_t v;
  char *end;
  if (!strcmp(a, "-f") || !strcmp(a, "--filename")) return dt__vec_push(&o->files, val) ? 2 : 0;
  if (!strcmp(a, "--policy")) return dt__vec_push(&o->policies, val) ? 2 : 0;
  if (!strcmp(a, "--trace"))
    o->trace = val;
  else if (!strcmp(a, "--scenario"))
    o->scenario = val;
  else if (!strcmp(a, "--catalog"))
    in->catalog = val;
  else if (!strcmp(a, "--policy-dir"))
    in->cfg.policy_dir = val;
  else if (!strcmp(a, "--scheduler-config"))
    in->cfg.scheduler_config = val;
  else if (!strcmp(a, "--out"))
    o->out = val;
  else if (!strcmp(a, "--report"))
    o->report = val;
  else if (!strcmp(a, "--spot-advisor"))
    o->advisor = val;
  else if (!strcmp(a, "-o") || !strcmp(a, "--output"))
    o->format = val;
  else if (!strcmp(a, "--packing")) {
    if (strcmp(val, "cost") && strcmp(val, "ffd")) {
      fprintf(stderr, "dovetail simulate: --packing: expected cost or ffd, got \"%s\"\n", val);
      return 2;
    }
    o->packing = !strcmp(val, "ffd") ? DT_PACKING_FFD : DT_PACKING_COST;
  } else if (!strcmp(a, "--seed") || !strcmp(a, "--trace-limit")) {
    unsigned long long n;
    if (dt__uint_parse(val, &n, &end) || *end) {
      fprintf(stderr, "dovetail simulate: %s: expected a non-negative integer, got \"%s\"\n", a, val);
      return 2;
    }
    if (!strcmp(a, "--seed"))
      in->seed = n;
    else
      o->limit = (size_t)n;
  } else if (!strcmp(a, "--start")) {
    int64_t t;
    dt_error e = {0};
    if (dt_time_parse(val, &t, &e)) {
      fprintf(stderr, "dovetail simulate: --start: %s\n", e.msg);
      return 2;
    }
    in->cfg.start_ms = t * 1000;
  } else if (!strcmp(a, "--duration")) {
    if (dur_opt(a, val, &o->duration)) return 2;
  } else if (!strcmp(a, "--step")) {
    if (dur_opt(a, val, &in->step_ms) || in->step_ms < 1000) {
      fprintf(stderr, "dovetail simulate: --step: at least 1s\n");
      return 2;
    }
  } else if (!strcmp(a, "--disrupt-interval")) {
    if (dur_opt(a, val, &v)) return 2;
    in->cfg.disrupt_ms = (uint64_t)v;
  } else if (!strcmp(a, "--batch-idle") || !strcmp(a, "--batch-max")) {
    if (dur_opt(a, val, &v) || v <= 0) return 2;
    *(!strcmp(a, "--batch-idle") ? &in->cfg.idle_ms : &in->cfg.max_ms) = (uint64_t)v;
  } else if (!strcmp(a, "--launch-latency")) {
    if (dur_opt(a, val, &in->latency_ms)) return 2;
  } else if (!strcmp(a, "--startup")) {
    if (dur_opt(a, val, &in->startup_ms)) return 2;
  } else if (!strcmp(a, "--startup-timeout") || !strcmp(a, "--unavailable-ttl")) {
    if (dur_opt(a, val, &v) || v < 1000) return 2;
    *(!strcmp(a, "--startup-timeout") ? &in->cfg.startup_timeout_s : &in->cfg.ttl_s) = v / 1000;
  } else {
    fprintf(stderr, "dovetail simulate: unknown option %s\n", a);
    return sim_usage(stderr, 2);
  }
  return 0;
}

/* The command line into in and o; -1 to go on, else the exit status. */
static int sim_args(int argc, char **argv, inputs *in, simargs *o) {
  in->step_ms = 60000;
  in->latency_ms = 5000;
  in->startup_ms = 60000;
  in->seed = 1;
  in->cfg.disrupt_ms = 300000;
  in->cfg.idle_ms = 1000;
  in->cfg.max_ms = 10000;
  in->cfg.start_ms = dt__days_from_civil(2026, 1, 1) * 86400000;
  o->format = "table";
  o->packing = DT_PACKING_COST;
  o->duration = -1;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) return sim_usage(stdout, 0);
    if (!strcmp(a, "--baseline") || !strcmp(a, "--check") || !strcmp(a, "--timings")) {
      *(!strcmp(a, "--baseline") ? &o->baseline : !strcmp(a, "--check") ? &in->check : &o->timings) = true;
      continue;
    }
    if (!strncmp(a, "-o", 2) && a[2]) { /* -oyaml, -o=json */
      o->format = a + 2 + (a[2] == '=');
      continue;
    }
    if (!strncmp(a, "--output=", 9)) {
      o->format = a + 9;
      continue;
    }
    if (!val) {
      fprintf(stderr, "dovetail simulate: %s option %s\n",
              a[0] == '-' ? "incomplete or unknown" : "unexpected argument", a);
      return sim_usage(stderr, 2);
    }
    i++;
    int rc = sim_option(a, val, in, o);
    if (rc) return rc;
  }
  if (strcmp(o->format, "table") && strcmp(o->format, "json")) {
    fprintf(stderr, "dovetail simulate: -o: expected table or json, got \"%s\"\n", o->format);
    return 2;
  }
  if (!o->files.n) {
    fprintf(stderr, "dovetail simulate: the cluster to start from is missing (-f CLUSTER.yaml: at least a NodePool)\n");
    return sim_usage(stderr, 2);
  }
  return -1;
}

/* The cluster: every document of every file (a List's items each), checked
** as plan would read them. */
static int read_cluster(inputs *in, const simargs *o, dt_error *err) {
  int rc = 0;
  in->cluster = cJSON_CreateArray();
  dt_manifests *m = dt_manifests_new();
  if (!in->cluster || !m) rc = dt__err(err, DT_ENOMEM, "out of memory");
  for (size_t i = 0; !rc && i < o->files.n; i++) {
    char *buf;
    size_t len;
    cJSON *docs = NULL;
    if ((rc = dt__read_file(o->files.v[i], &buf, &len, err))) break;
    rc = dt_manifests_add_buffer(m, o->files.v[i], buf, len, err);
    if (!rc) rc = dt__doc_parse(o->files.v[i], buf, len, &docs, err);
    dt__free(buf);
    cJSON *d;
    while (!rc && docs && (d = cJSON_DetachItemFromArray(docs, 0))) {
      const cJSON *items = cJSON_GetObjectItemCaseSensitive(d, "items");
      if (cJSON_IsArray(items) && dt__jstr(d, "kind") && !strcmp(dt__jstr(d, "kind"), "List")) {
        cJSON *it;
        while ((it = cJSON_DetachItemFromArray((cJSON *)items, 0))) cJSON_AddItemToArray(in->cluster, it);
        cJSON_Delete(d);
      } else {
        cJSON_AddItemToArray(in->cluster, d);
      }
    }
    cJSON_Delete(docs);
  }
  dt_manifests_free(m);
  return rc;
}

/* The spot advisor's buckets: the file given, or the bundled us-east-1 data. */
static int read_advisor(inputs *in, const char *advisor, dt_error *err) {
  char *buf = NULL;
  size_t len = 0;
  int rc = advisor ? dt__read_file(advisor, &buf, &len, err) : 0;
  if (!rc) {
    in->advisor =
        advisor ? cJSON_ParseWithLength(buf, len)
                : cJSON_ParseWithLength(dt__bundled_advisor, (size_t)(dt__bundled_advisor_end - dt__bundled_advisor));
    if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(in->advisor, "instanceTypes")))
      rc = dt__err(err, DT_EINVAL, "%s: expected {\"instanceTypes\": {TYPE: {\"r\": BUCKET}}}",
                   advisor ? advisor : "the bundled spot advisor data");
  }
  dt__free(buf);
  return rc;
}

/* The runs: the baseline first, then one per policy (or the built-ins). */
static run *make_runs(const inputs *in, const simargs *o, size_t *nruns) {
  size_t n = (o->baseline ? 1 : 0) + (o->policies.n ? o->policies.n : o->baseline ? 0 : 1), k = 0;
  run *runs = dt__calloc(n, sizeof *runs);
  if (!runs) return NULL;
  if (o->baseline) runs[k++] = (run){.in = in, .label = "baseline (ffd)", .packing = DT_PACKING_FFD};
  for (size_t i = 0; i < o->policies.n; i++) {
    const char *base = strrchr(o->policies.v[i], '/');
    runs[k++] = (run){
        .in = in, .label = base ? base + 1 : o->policies.v[i], .policy_path = o->policies.v[i], .packing = o->packing};
  }
  if (!o->policies.n && !o->baseline)
    runs[k++] = (run){
        .in = in, .label = o->packing == DT_PACKING_FFD ? "built-in (ffd)" : "built-in (cost)", .packing = o->packing};
  *nruns = n;
  return runs;
}

/* The summary table or JSON on standard output, --out and --report. */
static int write_outputs(const simargs *o, const cJSON *doc, run *runs, const summary *ss, size_t nruns,
                         dt_error *err) {
  if (!strcmp(o->format, "json")) {
    dt_buf b = {0};
    dt__doc_write(doc, DT_FORMAT_JSON, &b);
    if (b.p) fputs(b.p, stdout);
    dt__free(b.p);
  } else {
    print_table(stdout, runs, ss, nruns);
  }
  if (o->out) {
    dt_buf b = {0};
    dt__doc_write(doc, DT_FORMAT_JSON, &b);
    FILE *f = b.p ? fopen(o->out, "wb") : NULL;
    bool ok = f && fwrite(b.p, 1, b.len, f) == b.len;
    if (f) ok &= fclose(f) == 0;
    dt__free(b.p);
    if (!ok) return dt__err(err, DT_EIO, "--out %s: cannot be written", o->out);
  }
  return o->report ? write_report(o->report, runs, ss, nruns, err) : 0;
}

int dt__simulate_main(int argc, char **argv) {
  inputs in = {0};
  simargs o = {0};
  int rc = sim_args(argc, argv, &in, &o);
  if (rc >= 0) {
    dt__free(o.files.v), dt__free(o.policies.v);
    return rc;
  }
  rc = 0;
#ifdef __GLIBC__
  /* Every plan takes and frees arenas of megabytes: left to glibc's
  ** defaults each is mapped and unmapped, and its pages faulted in again,
  ** thousands of times a simulated hour. A simulation keeps them instead
  ** (its peak is what it holds at once, not more). */
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
#endif
  dt_error err = {0};
  run *runs = NULL;
  summary *ss = NULL;
  size_t nruns = 0;
  cJSON *doc = NULL;
  rc = read_cluster(&in, &o, &err);
  if (!rc && o.trace) rc = read_trace(&in, o.trace, o.limit, &err);
  if (!rc && o.scenario) rc = read_scenario(&in, o.scenario, &err);
  if (!rc) rc = read_advisor(&in, o.advisor, &err);
  if (rc) goto done;
  if (o.duration < 0) { /* an hour past the last arrival or event */
    int64_t last = 0;
    if (in.t_arrive.n) last = in.t_arrive.v[in.t_arrive.n - 1];
    if (in.scen_at.n && in.scen_at.v[in.scen_at.n - 1] > last) last = in.scen_at.v[in.scen_at.n - 1];
    o.duration = last + 3600000;
  }
  in.duration_ms = o.duration;
  runs = make_runs(&in, &o, &nruns);
  ss = dt__calloc(nruns ? nruns : 1, sizeof *ss);
  if (!runs || !ss) {
    rc = dt__err(&err, DT_ENOMEM, "out of memory");
    goto done;
  }
  bool tty = isatty(2);
  doc = cJSON_CreateObject();
  cJSON_AddNumberToObject(doc, "seed", (double)in.seed);
  cJSON_AddNumberToObject(doc, "durationSeconds", (double)(in.duration_ms / 1000));
  cJSON_AddNumberToObject(doc, "stepSeconds", (double)(in.step_ms / 1000));
  cJSON *jr = cJSON_AddArrayToObject(doc, "runs");
  for (size_t i = 0; i < nruns && !rc; i++) {
    double w0 = dt__now_ms();
    rc = run_one(&runs[i], i, nruns, tty, &err);
    if (!rc && o.timings) {
      struct rusage ru;
      getrusage(RUSAGE_SELF, &ru);
      double wall_s = (dt__now_ms() - w0) / 1000;
      fprintf(stderr, "%s: %.0f simulated s in %.1f s wall (%.0fx real time), %zu pods, peak RSS %ld MiB\n",
              runs[i].label, (double)in.duration_ms / 1000, wall_s,
              wall_s > 0 ? (double)in.duration_ms / 1000 / wall_s : 0, runs[i].arrivals, ru.ru_maxrss / 1024);
    }
    if (!rc) {
      ss[i] = summarize(&runs[i]);
      cJSON_AddItemToArray(jr, run_json(&runs[i], &ss[i]));
    }
    dt__ctl_stop(); /* the controller's state goes; the run's records stay for the report */
    /* its policy (a Lua state and the garbage its hooks left) and catalog go too: kept to the
    ** end, each run added its high-water mark to the peak RSS of all the runs after it */
    dt_policy_free(runs[i].policy), runs[i].policy = NULL;
    dt_catalog_free(runs[i].cat), runs[i].cat = NULL;
    if (!rc && in.check && runs[i].violation[0])
      rc = dt__err(&err, DT_EINVAL, "%s: invariant broken %s", runs[i].label, runs[i].violation);
  }
  if (tty) fputs("\r\033[K", stderr);
  if (!rc) rc = write_outputs(&o, doc, runs, ss, nruns, &err);
done:
  if (rc) fprintf(stderr, "dovetail simulate: %s\n", err.msg);
  cJSON_Delete(doc);
  for (size_t i = 0; runs && i < nruns; i++) run_free(&runs[i]);
  dt__free(runs), dt__free(ss);
  dt__free(o.files.v), dt__free(o.policies.v);
  cJSON_Delete(in.cluster), cJSON_Delete(in.scenario), cJSON_Delete(in.advisor);
  dt__free(in.t_arrive.v), dt__free(in.t_life.v), dt__free(in.t_cpu.v), dt__free(in.t_mem.v), dt__free(in.scen_at.v);
  return rc ? 1 : 0;
}
