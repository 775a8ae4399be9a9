/*
** main.c: the dovetail command.
**
**   dovetail plan [--catalog F] [-o json|yaml|table] [--now T] [--seed N] [--explain POD] FILE...
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
    "  --explain POD      why that pod went where it went, instead of the plan (text; -o json for a document)\n"
    "disrupt options: --catalog, -o, --now, --seed, --policy, --policy-dir, and\n"
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
      static const char *all[] = {"price", "score", "rank", "consolidation_order", "approve", "budget",
                                  "on_interruption", "scale_in", "selftest"};
      const char *h = dt_policy_hooks(p);
      for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        size_t len = strlen(all[k]);
        bool has = false;
        for (const char *q = strstr(h, all[k]); q && !has; q = strstr(q + 1, all[k]))
          has = (q == h || q[-1] == ' ') && (q[len] == 0 || q[len] == ' ');
        printf("  %-20s %s\n", all[k], has ? "overridden" : "built-in default");
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
    "  --catalog NAME|FILE, -o FMT, --now RFC3339, --seed N, --policy FILE, --policy-dir DIR, -f FILE: as plan\n"
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
static int cmd_plan(int argc, char **argv, int cmd) {
  bool pool = cmd == CMD_POOL;
  const char *explain = NULL;
  int spot_to_spot = 0;
  const char *catalog_path = NULL, *out = NULL, *policy_path = NULL, *policy_dir = "policies";
  dt_plan_opts opts = {0};
  dt_error err = {0};
  const char **files = calloc((size_t)argc + 1, sizeof *files);
  int nfiles = 0;
  if (!files) return 2;
  bool now_set = false;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    /* kubectl's spellings: -oyaml, -o=yaml, --output=yaml */
    if (!strncmp(a, "--output=", 9) || !strncmp(a, "-o=", 3) || (!strncmp(a, "-o", 2) && a[2] && a[2] != '=')) {
      out = strchr(a, '=') ? strchr(a, '=') + 1 : a + 2;
      continue;
    }
    if (!strcmp(a, "-f") && v) { /* kubectl's -f FILE, repeatable */
      files[nfiles++] = v;
      i++;
      continue;
    }
    if (!strcmp(a, "--policy") && v) {
      policy_path = v;
      i++;
    } else if (!strcmp(a, "--explain") && v && cmd != CMD_POOL) {
      explain = v;
      i++;
    } else if (!strcmp(a, "--spot-to-spot") && cmd == CMD_DISRUPT) {
      spot_to_spot = 1;
    } else if (!strcmp(a, "--policy-dir") && v) {
      policy_dir = v;
      i++;
    } else if (!strcmp(a, "--unavailable") && v) {
      files[nfiles++] = v; /* UnavailableOffering objects, read like any manifest */
      i++;
    } else if (!strcmp(a, "--catalog") && v) {
      catalog_path = v;
      i++;
    } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && v) {
      out = v;
      i++;
    } else if (!strcmp(a, "--now") && v) {
      if (dt_time_parse(v, &opts.now, &err)) {
        fprintf(stderr, "dovetail: --now: %s\n", err.msg);
        free(files);
        return 2;
      }
      now_set = true;
      i++;
    } else if (!strcmp(a, "--seed") && v) {
      char *end;
      opts.seed = strtoull(v, &end, 10);
      if (*end || !*v) {
        fprintf(stderr, "dovetail: --seed: expected a non-negative integer, got \"%s\"\n", v);
        free(files);
        return 2;
      }
      i++;
    } else if (!strcmp(a, "--packing") && v) {
      if (!strcmp(v, "ffd"))
        opts.packing = DT_PACKING_FFD;
      else if (!strcmp(v, "cost"))
        opts.packing = DT_PACKING_COST;
      else {
        fprintf(stderr, "dovetail: --packing: expected ffd or cost, got \"%s\"\n", v);
        free(files);
        return 2;
      }
      i++;
    } else if (!strcmp(a, "--timings")) {
      opts.timings = 1;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(cmd == CMD_DISRUPT ? k_usage_disrupt : cmd == CMD_POOL ? k_usage_pool : k_usage_plan, stdout);
      free(files);
      return 0;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "dovetail: unknown or incomplete option %s (dovetail %s --help lists them)\n", a,
              cmd == CMD_DISRUPT ? "disrupt" : cmd == CMD_POOL ? "pool" : "plan");
      free(files);
      return 2;
    } else {
      files[nfiles++] = a;
    }
  }
  if (!now_set) opts.now = (int64_t)time(NULL); /* a real cluster is judged now, not in 2000 */
  dt_format fmt = isatty(1) ? DT_FORMAT_TABLE : DT_FORMAT_JSON;
  if (out) {
    if (!strcmp(out, "json"))
      fmt = DT_FORMAT_JSON;
    else if (!strcmp(out, "yaml"))
      fmt = DT_FORMAT_YAML;
    else if (!strcmp(out, "table"))
      fmt = DT_FORMAT_TABLE;
    else {
      fprintf(stderr, "dovetail: -o: expected json, yaml or table, got \"%s\"\n", out);
      free(files);
      return 2;
    }
  }
  if (!nfiles) {
    fprintf(stderr, "dovetail: no input: give FILE..., -f FILE or - for standard input (dovetail %s --help)\n",
            cmd == CMD_DISRUPT ? "disrupt" : cmd == CMD_POOL ? "pool" : "plan");
    free(files);
    return 2;
  }
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
  if (!pool && dt_catalog_load_named(catalog_path, &cat, &err)) goto done;
  if (!(m = dt_manifests_new())) {
    snprintf(err.msg, sizeof err.msg, "out of memory");
    goto done;
  }
  for (int i = 0; i < nfiles; i++)
    if (dt_manifests_add_file(m, files[i], &err)) goto done;
  fputs(dt_manifests_notes(m), stderr);
  if (policy_path && dt_policy_load_file(policy_path, NULL, &opts.policy, &err)) goto done;
  if (!pool) {
    /* NodePools' own policies: one that is missing or broken is reported
    ** and its pools fall back to the built-ins; the run goes on */
    if (dt_policy_dir_open(policy_dir, &pdir, &err)) goto done;
    dt_policy_dir_sync(pdir, m);
    fputs(dt_policy_dir_errors(pdir), stderr);
    dt_policy_dir_apply(pdir, &opts.pool_policies, &opts.pool_policy_names, &opts.npool_policies);
  }
  if (cmd == CMD_DISRUPT) {
    dt_disrupt_opts d = {opts.now, opts.seed, opts.policy, spot_to_spot, explain,
                         opts.pool_policies, opts.pool_policy_names, opts.npool_policies, NULL};
    if (dt_disrupt_run(cat, m, &d, &dis, &err)) goto done;
    text = dt_disrupt_render(dis, fmt, &len);
  } else if (pool) {
    dt_pool_opts po = {opts.now, opts.seed, opts.policy};
    if (dt_pools_run(m, &po, &pools, &err)) goto done;
    text = dt_pools_render(pools, fmt, &len);
  } else {
    opts.parse_ms = now_ms() - t0;
    opts.explain = explain;
    if (dt_plan_run(cat, m, &opts, &plan, &err)) goto done;
    /* --explain prints that pod's explanation instead of the plan: text
    ** unless -o asks for the document */
    text = explain ? dt_plan_explain_render(plan, out ? fmt : DT_FORMAT_TABLE, &len) : dt_plan_render(plan, fmt, &len);
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
  dt_policy_free(opts.policy);
  dt_policy_dir_free(pdir);
  dt_manifests_free(m);
  dt_catalog_free(cat);
  free(files);
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
