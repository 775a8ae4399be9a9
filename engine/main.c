/*
** main.c: the dovetail command.
**
**   dovetail plan [--catalog F] [-o json|yaml|table] [--now T] [--seed N] [--explain POD]
**                 [--scheduler-config F] FILE...
**   dovetail disrupt [--catalog F] [-o ...] [--now T] [--policy F] [--explain NODE] [--spot-to-spot] FILE...
**   dovetail pool [-o json|yaml|table] [--now T] [--seed N] [--policy F] FILE...
**   dovetail catalog [--catalog F] [-o table|json] [--type GLOB] [--zone Z] ... [--convert]
**   dovetail check [--explain] POLICY...
**   dovetail version
** A catalog F is a file or the name of a bundled catalog (aws-us-east-1, azure-eastus).
*/
#include "dovetail.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int dt__serve_main(int argc, char **argv);     /* serve.c */
int dt__fakecloud_main(int argc, char **argv); /* providers/fakecloud.c */
int dt__simulate_main(int argc, char **argv);  /* simulate.c */
int dt__catalog_main(int argc, char **argv);   /* catalogcmd.c */
int dt__uint_parse(const char *s, unsigned long long *out, char **end); /* alloc.c */

static const char *k_usage =
    "usage: dovetail <command> [options] [FILE...]\n"
    "\n"
    "commands:\n"
    "  plan      place pending pods on existing nodes and new node claims\n"
    "  serve     the daemon: HTTP API, batching, provider, hot reload (dovetail serve --help)\n"
    "  simulate  replay days of a cluster on a virtual clock through the daemon's controller; compare\n"
    "            policies (dovetail simulate --help)\n"
    "  fakecloud an in-memory cloud speaking the http provider's contract (for tests and demos)\n"
    "  disrupt   what to take away: emptiness, drift, expiry, consolidation under budgets\n"
    "  pool      converge KubeVirt VirtualMachinePools: VMs to create, delete, update, heal\n"
    "  catalog   list a catalog's instance types and offerings, filtered; --convert writes it in dovetail's\n"
    "            format (dovetail catalog --help)\n"
    "  check     validate policy files (syntax, hooks, selftest); --explain lists overridden hooks\n"
    "  version   print the version\n"
    "\n"
    "plan options:\n"
    "  --catalog NAME|FILE  a bundled catalog (aws-us-east-1, the default; azure-eastus) or a catalog file\n"
    "                      (dovetail's JSON, or Karpenter's KWOK instance types)\n"
    "  -o, --output FMT   json | yaml | table (default: table on a terminal, else json)\n"
    "  --now RFC3339      the clock (default: now; give it to make a decision byte-reproducible)\n"
    "  --seed N           seed for names and randomised choices (default 0)\n"
    "  --packing MODE     cost (default: first-fit-decreasing, then a strictly cheaper re-pack)\n"
    "                     or ffd (Karpenter's first-fit-decreasing exactly)\n"
    "  --policy FILE      a Lua policy whose hooks apply to every NodePool\n"
    "  --policy-dir DIR   where NodePools' dovetail.dev/policy: NAME are found as NAME.lua (default policies)\n"
    "  --unavailable FILE UnavailableOffering marks (capacity type, instance type, zone, expiry)\n"
    "  --timings          add parse and scheduling times to the JSON summary\n"
    "  --scheduler-config FILE  Karpenter's --scheduler-config document: podTopologySpread.defaultConstraints\n"
    "                     for pods that declare none (their selector deduced as kube-scheduler does)\n"
    "  --explain POD      why that pod went where it went, instead of the plan (text; -o json for a document)\n"
    "disrupt options: --catalog, -o, --now, --seed, --policy, --policy-dir, --scheduler-config, and\n"
    "  --explain NODE     every step that node went through\n"
    "  --spot-to-spot     allow spot-to-spot consolidation (off, as Karpenter's feature gate)\n"
    "pool options: -o, --now, --seed (the Random selection policy), --policy (its scale_in hook)\n"
    "FILE is YAML or JSON (multi-document, kind: List); - reads standard input; -f FILE as kubectl.\n"
    "-o takes kubectl's spellings too: -oyaml, -o=yaml, --output=yaml.\n";

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmd_check(int argc, char **argv) {
  int explain = 0, bad = 0, n = 0;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs("usage: dovetail check [--explain] POLICY.lua...\n"
            "Load each policy as plan would (syntax with file:line, hook names and types, its selftest(), every\n"
            "hook on a golden input); --explain lists which hooks it overrides.\n"
            "exit status: 0 every policy loads, 1 one does not, 2 bad usage\n",
            stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--explain")) {
      explain = 1;
      continue;
    }
    if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "dovetail: unknown option %s (dovetail check --help lists them)\n", argv[i]);
      return 2;
    }
    n++;
    dt_error err = {0};
    dt_policy *p = NULL;
    if (dt_policy_load_file(argv[i], NULL, &p, &err)) {
      fprintf(stderr, "%s\n", err.msg);
      bad = 1;
      continue;
    }
    printf("%s: ok\n", argv[i]);
    if (explain) {
      static const char *all[] = {"price",           "score",    "rank",    "consolidation_order", "approve", "budget",
                                  "on_interruption", "scale_in", "selftest"};
      const char *h = dt_policy_hooks(p);
      for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        size_t len = strlen(all[k]);
        bool has = false;
        for (const char *q = strstr(h, all[k]); q && !has; q = strstr(q + 1, all[k]))
          has = (q == h || q[-1] == ' ') && (q[len] == 0 || q[len] == ' ');
        bool test = !strcmp(all[k], "selftest"); /* no hook: the policy's own test, run at load */
        printf("  %-20s %s\n", all[k],
               has    ? (test ? "defined (passed)" : "overridden")
               : test ? "none"
                      : "built-in default");
      }
    }
    dt_policy_free(p);
  }
  if (!n) {
    fputs("usage: dovetail check [--explain] FILE...\n", stderr);
    return 2;
  }
  return bad;
}

enum { CMD_PLAN, CMD_POOL, CMD_DISRUPT };

static const char *k_usage_plan =
    "usage: dovetail plan [options] FILE...\n"
    "Place every pending pod on an existing node, an in-flight NodeClaim or a new node claim.\n"
    "  --catalog NAME|FILE  a bundled catalog (aws-us-east-1, the default; azure-eastus) or a catalog file\n"
    "                      (dovetail's JSON, or Karpenter's KWOK instance types)\n"
    "  -o, --output FMT   json | yaml (NodeClaims to apply) | table (default: table on a terminal, else json)\n"
    "  --now RFC3339      the clock (default: now; give it to make a decision byte-reproducible)\n"
    "  --seed N           seed for names and randomised choices (default 0)\n"
    "  --packing MODE     cost (default) or ffd (Karpenter's first-fit-decreasing exactly)\n"
    "  --policy FILE      a Lua policy whose hooks apply to every NodePool\n"
    "  --policy-dir DIR   where NodePools' dovetail.dev/policy: NAME are found as NAME.lua (default policies)\n"
    "  --unavailable FILE UnavailableOffering marks\n"
    "  --timings          add parse and scheduling times to the JSON summary\n"
    "  --scheduler-config FILE  Karpenter's --scheduler-config document: podTopologySpread.defaultConstraints\n"
    "                     for pods that declare none (their selector deduced as kube-scheduler does)\n"
    "  --explain POD      print instead why POD (namespace/name, or name when unique) went where it went: the\n"
    "                     nodes, claims and NodePools tried and why each did not take it, the offering launched\n"
    "                     and the cheaper ones not chosen, or why it is unschedulable; text, or a document with\n"
    "                     -o json or -o yaml\n"
    "  -f FILE            an input file, as kubectl (repeatable); - reads standard input\n"
    "exit status: 0 planned (unschedulable pods are listed, not an error), 1 bad input or an --explain POD\n"
    "that is not in the input, 2 bad usage\n";

static const char *k_usage_disrupt =
    "usage: dovetail disrupt [options] FILE...\n"
    "What Karpenter's disruption controller would take away now, and why every other node stays.\n"
    "  --catalog NAME|FILE, -o FMT, --now RFC3339, --seed N, --policy FILE, --policy-dir DIR, -f FILE,\n"
    "  --unavailable FILE, --scheduler-config FILE: as plan\n"
    "  --explain NODE     every step that node went through\n"
    "  --spot-to-spot     allow spot-to-spot consolidation (off, as Karpenter's feature gate)\n"
    "exit status: 0 decided, 1 bad input, 2 bad usage\n";

static const char *k_usage_pool =
    "usage: dovetail pool [options] FILE...\n"
    "The actions that converge each KubeVirt VirtualMachinePool.\n"
    "  -o, --output FMT   json | yaml | table (default: table on a terminal, else json)\n"
    "  --now RFC3339, --seed N (the Random selection policy), --policy FILE (its scale_in hook), -f FILE\n"
    "exit status: 0 decided, 1 bad input, 2 bad usage\n";

/* plan, pool and disrupt share their options; pool ignores the catalog and packing. */
/* plan, disrupt and pool: the command line, once read. */
typedef struct planargs {
  int cmd;
  const char *explain, *catalog, *out, *policy, *policy_dir, *scheduler_config;
  bool spot_to_spot;
  const char **files;
  int nfiles;
  dt_plan_opts opts;
  dt_format fmt;
} planargs;

static const char *cmd_name(int cmd) { return cmd == CMD_DISRUPT ? "disrupt" : cmd == CMD_POOL ? "pool" : "plan"; }

/* One option that takes a value (v, the next argument, or NULL); 1 when it
** took it, 0 when it took only itself, -1 when a is not such an option, 2
** after saying what is wrong. */
static int plan_option(planargs *pa, const char *a, const char *v) {
  dt_error err = {0};
  /* each command's own: what another takes is no option of this one */
  bool plan = pa->cmd == CMD_PLAN, pool = pa->cmd == CMD_POOL;
  if ((!plan && (!strcmp(a, "--timings") || !strcmp(a, "--packing"))) ||
      (pool && (!strcmp(a, "--catalog") || !strcmp(a, "--policy-dir") || !strcmp(a, "--unavailable"))))
    return -1;
  if (!strcmp(a, "--timings")) {
    pa->opts.timings = 1;
    return 0;
  }
  if (!strcmp(a, "--spot-to-spot") && pa->cmd == CMD_DISRUPT) {
    pa->spot_to_spot = true;
    return 0;
  }
  if (!v) return -1;
  if (!strcmp(a, "-f") || !strcmp(a, "--unavailable")) /* kubectl's -f FILE; UnavailableOffering objects */
    pa->files[pa->nfiles++] = v;
  else if (!strcmp(a, "--policy"))
    pa->policy = v;
  else if (!strcmp(a, "--explain") && pa->cmd != CMD_POOL)
    pa->explain = v;
  else if (!strcmp(a, "--policy-dir"))
    pa->policy_dir = v;
  else if (!strcmp(a, "--scheduler-config") && pa->cmd != CMD_POOL)
    pa->scheduler_config = v;
  else if (!strcmp(a, "--catalog"))
    pa->catalog = v;
  else if (!strcmp(a, "-o") || !strcmp(a, "--output"))
    pa->out = v;
  else if (!strcmp(a, "--now")) {
    if (dt_time_parse(v, &pa->opts.now, &err)) {
      fprintf(stderr, "dovetail: --now: %s\n", err.msg);
      return 2;
    }
  } else if (!strcmp(a, "--seed")) {
    char *end;
    unsigned long long seed;
    if (dt__uint_parse(v, &seed, &end) || *end) {
      fprintf(stderr, "dovetail: --seed: expected a non-negative integer, got \"%s\"\n", v);
      return 2;
    }
    pa->opts.seed = seed;
  } else if (!strcmp(a, "--packing")) {
    if (strcmp(v, "ffd") && strcmp(v, "cost")) {
      fprintf(stderr, "dovetail: --packing: expected ffd or cost, got \"%s\"\n", v);
      return 2;
    }
    pa->opts.packing = !strcmp(v, "ffd") ? DT_PACKING_FFD : DT_PACKING_COST;
  } else {
    return -1;
  }
  return 1;
}

/* The command line into pa; -1 to go on, else the exit status. */
static int plan_args(planargs *pa, int argc, char **argv) {
  bool now_set = false;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    /* kubectl's spellings: -oyaml, -o=yaml (--output=yaml is any --name=value below) */
    if (!strncmp(a, "-o=", 3) || (!strncmp(a, "-o", 2) && a[2] && a[2] != '=')) {
      pa->out = strchr(a, '=') ? strchr(a, '=') + 1 : a + 2;
      continue;
    }
    const char *eq = !strncmp(a, "--", 2) ? strchr(a, '=') : NULL;
    if (eq) { /* --name=value, as kubectl and GNU tools take it */
      char name[64];
      int took = -1;
      if ((size_t)(eq - a) < sizeof name) {
        snprintf(name, sizeof name, "%.*s", (int)(eq - a), a);
        took = plan_option(pa, name, eq + 1);
        now_set |= took == 1 && !strcmp(name, "--now");
      }
      if (took == 2) return 2;
      if (took == 1) continue;
      fprintf(stderr, "dovetail: unknown option %s (dovetail %s --help lists them)\n", a, cmd_name(pa->cmd));
      return 2;
    }
    int took = plan_option(pa, a, v);
    if (took == 2) return 2;
    if (took >= 0) {
      now_set |= !strcmp(a, "--now");
      i += took;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(pa->cmd == CMD_DISRUPT ? k_usage_disrupt : pa->cmd == CMD_POOL ? k_usage_pool : k_usage_plan, stdout);
      return 0;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "dovetail: unknown or incomplete option %s (dovetail %s --help lists them)\n", a,
              cmd_name(pa->cmd));
      return 2;
    } else {
      pa->files[pa->nfiles++] = a;
    }
  }
  if (!now_set) pa->opts.now = (int64_t)time(NULL); /* a real cluster is judged now, not in 2000 */
  pa->fmt = isatty(1) ? DT_FORMAT_TABLE : DT_FORMAT_JSON;
  if (pa->out) {
    if (!strcmp(pa->out, "json"))
      pa->fmt = DT_FORMAT_JSON;
    else if (!strcmp(pa->out, "yaml"))
      pa->fmt = DT_FORMAT_YAML;
    else if (!strcmp(pa->out, "table"))
      pa->fmt = DT_FORMAT_TABLE;
    else {
      fprintf(stderr, "dovetail: -o: expected json, yaml or table, got \"%s\"\n", pa->out);
      return 2;
    }
  }
  if (!pa->nfiles) {
    fprintf(stderr, "dovetail: no input: give FILE..., -f FILE or - for standard input (dovetail %s --help)\n",
            cmd_name(pa->cmd));
    return 2;
  }
  /* standard input reads once: a second reader would find it empty */
  int stdin_uses =
      (pa->scheduler_config && !strcmp(pa->scheduler_config, "-")) + (pa->policy && !strcmp(pa->policy, "-"));
  for (int i = 0; i < pa->nfiles; i++) stdin_uses += !strcmp(pa->files[i], "-");
  if (stdin_uses > 1) {
    fprintf(stderr, "dovetail: - (standard input) given %d times; it can be read once\n", stdin_uses);
    return 2;
  }
  return -1;
}

/* dt_plan_write's sink: the FILE ud. */
static int write_out(void *ud, const char *data, size_t len) { return fwrite(data, 1, len, ud) != len; }

/* Read, run and print; 0, or 1 after saying why. */
static int plan_run(planargs *pa) {
  bool pool = pa->cmd == CMD_POOL;
  dt_plan_opts *opts = &pa->opts;
  dt_error err = {0};
  int rc = 1;
  dt_catalog *cat = NULL;
  dt_manifests *m = NULL;
  dt_plan *plan = NULL;
  dt_pools *pools = NULL;
  dt_disruption *dis = NULL;
  dt_policy_dir *pdir = NULL;
  char *text = NULL;
  size_t len;
  double t0 = now_ms();
  if (!pool && dt_catalog_load_named(pa->catalog, &cat, &err)) goto done;
  if (!(m = dt_manifests_new())) {
    snprintf(err.msg, sizeof err.msg, "out of memory");
    goto done;
  }
  for (int i = 0; i < pa->nfiles; i++)
    if (dt_manifests_add_file(m, pa->files[i], &err)) goto done;
  if (dt_manifests_finish(m, &err)) goto done;
  if (pa->scheduler_config && dt_manifests_scheduler_config(m, pa->scheduler_config, &err)) goto done;
  fputs(dt_manifests_notes(m), stderr);
  if (pa->policy && dt_policy_load_file(pa->policy, NULL, &opts->policy, &err)) goto done;
  if (!pool) {
    /* NodePools' own policies: one that is missing or broken is reported
    ** and its pools fall back to the built-ins; the run goes on */
    if (dt_policy_dir_open(pa->policy_dir, &pdir, &err)) goto done;
    dt_policy_dir_sync(pdir, m);
    fputs(dt_policy_dir_errors(pdir), stderr);
    dt_policy_dir_apply(pdir, &opts->pool_policies, &opts->pool_policy_names, &opts->npool_policies);
  }
  if (pa->cmd == CMD_DISRUPT) {
    dt_disrupt_opts d = {.now = opts->now,
                         .seed = opts->seed,
                         .policy = opts->policy,
                         .spot_to_spot = pa->spot_to_spot,
                         .explain = pa->explain,
                         .pool_policies = opts->pool_policies,
                         .pool_policy_names = opts->pool_policy_names,
                         .npool_policies = opts->npool_policies};
    if (dt_disrupt_run(cat, m, &d, &dis, &err)) goto done;
    text = dt_disrupt_render(dis, pa->fmt, &len);
  } else if (pool) {
    dt_pool_opts po = {opts->now, opts->seed, opts->policy};
    if (dt_pools_run(m, &po, &pools, &err)) goto done;
    text = dt_pools_render(pools, pa->fmt, &len);
  } else {
    opts->parse_ms = now_ms() - t0;
    opts->explain = pa->explain;
    if (dt_plan_run(cat, m, opts, &plan, &err)) goto done;
    /* --explain prints that pod's explanation instead of the plan: text
    ** unless -o asks for the document */
    if (pa->explain) text = dt_plan_explain_render(plan, pa->out ? pa->fmt : DT_FORMAT_TABLE, &len);
  }
  fputs(dt_policy_log(opts->policy), stderr); /* what the policy said with dovetail.log */
  if (plan && !pa->explain) {
    /* written as it is rendered: a plan of tens of thousands of nodes is
    ** never whole in memory as text */
    int wrc = dt_plan_write(plan, pa->fmt, write_out, stdout);
    if (wrc || fflush(stdout)) {
      snprintf(err.msg, sizeof err.msg, "%s",
               wrc == DT_ENOMEM ? "out of memory rendering the plan" : "cannot write the plan to standard output");
      goto done;
    }
    rc = 0;
    goto done;
  }
  if (!text) {
    snprintf(err.msg, sizeof err.msg, "out of memory rendering the plan");
    goto done;
  }
  if (fwrite(text, 1, len, stdout) != len || fflush(stdout)) {
    snprintf(err.msg, sizeof err.msg, "cannot write the plan to standard output");
    goto done;
  }
  rc = 0;
done:
  if (rc) fprintf(stderr, "dovetail: %s\n", err.msg);
  dt_free(text);
  dt_plan_free(plan);
  dt_pools_free(pools);
  dt_disrupt_free(dis);
  dt_policy_free(opts->policy);
  dt_policy_dir_free(pdir);
  dt_manifests_free(m);
  dt_catalog_free(cat);
  return rc;
}

static int cmd_plan(int argc, char **argv, int cmd) {
  planargs pa = {.cmd = cmd, .policy_dir = "policies"};
  pa.files = calloc((size_t)argc + 1, sizeof *pa.files);
  if (!pa.files) return 2;
  int rc = plan_args(&pa, argc, argv);
  if (rc < 0) rc = plan_run(&pa);
  free(pa.files);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(k_usage, stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "plan")) return cmd_plan(argc - 2, argv + 2, CMD_PLAN);
  if (!strcmp(cmd, "pool")) return cmd_plan(argc - 2, argv + 2, CMD_POOL);
  if (!strcmp(cmd, "serve")) return dt__serve_main(argc - 2, argv + 2);
  if (!strcmp(cmd, "fakecloud")) return dt__fakecloud_main(argc - 2, argv + 2);
  if (!strcmp(cmd, "simulate")) return dt__simulate_main(argc - 2, argv + 2);
  if (!strcmp(cmd, "disrupt")) return cmd_plan(argc - 2, argv + 2, CMD_DISRUPT);
  if (!strcmp(cmd, "check")) return cmd_check(argc - 2, argv + 2);
  if (!strcmp(cmd, "catalog")) return dt__catalog_main(argc - 2, argv + 2);
  if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
    printf("dovetail %s\n", DT_VERSION);
    return 0;
  }
  if (!strcmp(cmd, "help") || !strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
    fputs(k_usage, stdout);
    return 0;
  }
  fprintf(stderr, "dovetail: unknown command \"%s\"\n%s", cmd, k_usage);
  return 2;
}
