/*
** unit.c: C-level tests the Lua specs cannot reach.
**
**   oom:  a fault-injecting allocator (as Lua's ltests.c) fails the Nth
**         allocation for every N until a whole load-plan-render cycle
**         succeeds; every failure must come back as DT_ENOMEM, with no crash
**         and (under ASan) no leak.
**   api:  the public API's contracts (errors filled, NULL-safe frees).
**   lp:   the simplex on LPs whose optimum is known (degenerate,
**         infeasible, unbounded, warm-started), and the pivots it takes on
**         a degenerate pattern LP (spec/fixtures/lp-degenerate.txt), and
**         the pivots cost packing makes on a small group whose LPs are
**         degenerate (spec/fixtures/small-65x2.json).
**   overlay: a disruption pass on a cluster compiled once decides as one
**         compiling every simulation, byte for byte.
**   sym:  a symbol table's strings stay where they were put as it grows
**         (its blocks, a string longer than a block), and a clone reads its
**         source's strings and keeps its own apart.
**   results: the typed results' accessors (plan claims and unschedulable
**         pods, disruption commands and blocked nodes, pool actions) give
**         what the JSON renderings print, in their order, and outlive the
**         inputs they were computed from.
*/
#include "dovetail.h"
#include "schedule.h"

#include <errno.h>
#include <math.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

#define CHECK(cond, ...)                                                                                               \
  do {                                                                                                                 \
    if (cond) {                                                                                                        \
      passed++;                                                                                                        \
    } else {                                                                                                           \
      failed++;                                                                                                        \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                                      \
      printf(__VA_ARGS__);                                                                                             \
      printf("\n");                                                                                                    \
    }                                                                                                                  \
  } while (0)

static long budget = -1; /* allocations left before failing; -1 = never fail */

static void *f_malloc(size_t n) {
  if (budget == 0) return NULL;
  if (budget > 0) budget--;
  return malloc(n);
}

static void *f_realloc(void *p, size_t n) {
  if (budget == 0) return NULL;
  if (budget > 0) budget--;
  return realloc(p, n);
}

static const char *k_catalog = "{\"zones\":[\"z1\",\"z2\"],\"instanceTypes\":["
                               "{\"name\":\"a\",\"cpu\":2,\"memoryMiB\":4096,\"onDemandPrice\":0.1,\"spotPrice\":0.05,"
                               "\"labels\":{\"x\":\"y\"}},"
                               "{\"name\":\"b\",\"cpu\":8,\"memoryMiB\":16384,\"onDemandPrice\":0.4,"
                               "\"offerings\":[{\"zone\":\"z1\",\"capacityType\":\"on-demand\",\"available\":3}]}],"
                               "\"reservations\":[{\"id\":\"r1\",\"instanceType\":\"b\",\"zone\":\"z2\",\"count\":1}]}";

/* Karpenter's KWOK instance-type list shape, with a legacy offering. */
static const char *k_kwok =
    "[{\"name\":\"c-2x\",\"architecture\":\"amd64\",\"operatingSystems\":[\"linux\"],"
    "\"resources\":{\"cpu\":\"2\",\"memory\":\"4Gi\",\"pods\":\"32\",\"ephemeral-storage\":\"20Gi\",\"nvidia.com/"
    "gpu\":\"1\"},"
    "\"offerings\":[{\"Price\":0.05,\"Available\":true,\"Requirements\":["
    "{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\":[\"spot\",\"on-demand\"]},"
    "{\"key\":\"topology.kubernetes.io/zone\",\"operator\":\"In\",\"values\":[\"za\",\"zb\"]}]},"
    "{\"CapacityType\":\"on-demand\",\"Zone\":\"zc\",\"Price\":0.07,\"Available\":false}]}]";

static const char *k_manifests =
    "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\n"
    "spec:\n  limits: {cpu: 100}\n  template:\n    metadata: {labels: {team: a}}\n"
    "    spec:\n      requirements: [{key: x, operator: In, values: [y, z]}]\n"
    "      taints: [{key: k, value: v, effect: NoSchedule}]\n"
    "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"
    "spec:\n  replicas: 5\n  template:\n    spec:\n"
    "      tolerations: [{operator: Exists}]\n"
    "      nodeSelector: {team: a}\n"
    "      containers: [{name: c, resources: {requests: {cpu: 500m, memory: 1Gi}}}]\n"
    "---\napiVersion: v1\nkind: Pod\nmetadata: {name: huge}\n"
    "spec:\n  tolerations: [{operator: Exists}]\n"
    "  containers: [{name: c, resources: {requests: {cpu: \"64\"}}}]\n"
    "---\napiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {team: a}}\n"
    "status: {allocatable: {cpu: 1, memory: 1Gi, pods: 10}}\n"
    "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: skip}\n"
    "---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent}\n"
    "spec:\n  template:\n    spec:\n      tolerations: [{operator: Exists}]\n"
    "      containers: [{name: a, ports: [{hostPort: 9100}], resources: {requests: {cpu: 100m}}}]\n"
    "---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\n"
    "spec:\n  replicas: 3\n  template:\n    metadata: {labels: {app: db}}\n    spec:\n"
    "      tolerations: [{operator: Exists}]\n"
    "      topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone,\n"
    "        whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app: db}}}]\n"
    "      affinity:\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n"
    "            - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: db}}}\n"
    "        nodeAffinity:\n          preferredDuringSchedulingIgnoredDuringExecution:\n"
    "            - {weight: 5, preference: {matchExpressions: [{key: x, operator: In, values: [z]}]}}\n"
    "      containers: [{name: c, resources: {requests: {cpu: 1, memory: 1Gi}}}]\n"
    "---\napiVersion: pool.kubevirt.io/v1beta1\nkind: VirtualMachinePool\nmetadata: {name: vp}\n"
    "spec:\n  replicas: 3\n  selector: {matchLabels: {app: vp}}\n  autohealing: {}\n"
    "  scaleInStrategy: {proactive: {selectionPolicy: {orderedPolicies: [{matchLabels: {t: a}}], basePolicy: "
    "Random}}}\n"
    "  virtualMachineTemplate:\n    metadata: {labels: {app: vp}}\n"
    "    spec:\n      runStrategy: Always\n      dataVolumeTemplates: [{metadata: {name: d}}]\n"
    "      template:\n        spec:\n          tolerations: [{operator: Exists}]\n"
    "          domain: {cpu: {cores: 1}, memory: {guest: 1Gi}}\n"
    "          volumes: [{name: d, dataVolume: {name: d}}]\n"
    "---\napiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: vp-1\n  labels: {app: vp}\n"
    "  ownerReferences: [{kind: VirtualMachinePool, name: vp, controller: true}]\n"
    "spec:\n  runStrategy: Always\n  template: {spec: {domain: {cpu: {cores: 2}}}}\n"
    "status: {printableStatus: Unschedulable, startFailure: {consecutiveFailCount: 3}}\n"
    "---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: d-0}\n"
    "---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: dis}\n"
    "spec:\n  disruption: {budgets: [{nodes: \"50%\"}, {nodes: \"0\", schedule: \"@daily\", duration: 1h}]}\n"
    "  template:\n    spec:\n      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: "
    "[on-demand]}]\n"
    "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: m1\n  annotations: {dovetail.dev/nodepool-hash: \"0\"}\n"
    "  labels: {node.kubernetes.io/instance-type: b, topology.kubernetes.io/zone: z1,\n"
    "    karpenter.sh/capacity-type: on-demand, karpenter.sh/nodepool: dis}\n"
    "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: m2\n"
    "  labels: {node.kubernetes.io/instance-type: b, topology.kubernetes.io/zone: z1,\n"
    "    karpenter.sh/capacity-type: on-demand, karpenter.sh/nodepool: dis}\n"
    "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: m3\n"
    "  labels: {node.kubernetes.io/instance-type: b, topology.kubernetes.io/zone: z1,\n"
    "    karpenter.sh/capacity-type: on-demand, karpenter.sh/nodepool: dis}\n"
    "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: m4\n"
    "  labels: {node.kubernetes.io/instance-type: b, topology.kubernetes.io/zone: z1,\n"
    "    karpenter.sh/capacity-type: on-demand, karpenter.sh/nodepool: dis}\n"
    "---\napiVersion: v1\nkind: Pod\nmetadata: {name: q1, labels: {app: q}}\n"
    "spec: {nodeName: m2, containers: [{name: c, resources: {requests: {cpu: 1}}}]}\n"
    "---\napiVersion: v1\nkind: Pod\nmetadata: {name: q2, labels: {app: q}}\n"
    "spec: {nodeName: m3, containers: [{name: c, resources: {requests: {cpu: 1}}}]}\n"
    "---\napiVersion: v1\nkind: Pod\nmetadata: {name: q3}\n"
    "spec: {nodeName: m1, containers: [{name: c, resources: {requests: {cpu: 1}}}]}\n"
    "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: q}\n"
    "spec: {selector: {matchLabels: {app: q}}, maxUnavailable: 1}\n"
    /* plain pods in a plain pool: cost packing (column generation) runs */
    "---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: open}\n"
    "spec:\n  template:\n    spec:\n      requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: "
    "[a]}]\n"
    "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api}\n"
    "spec:\n  replicas: 4\n  template:\n    spec:\n"
    "      containers: [{name: c, resources: {requests: {cpu: 700m, memory: 1Gi}}}]\n"
    "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: cache}\n"
    "spec:\n  replicas: 3\n  template:\n    spec:\n"
    "      containers: [{name: c, resources: {requests: {cpu: 200m, memory: 2500Mi}}}]\n";

/* One full cycle; returns 0, DT_ENOMEM or another error. */
static dt_error g_err;

/* A policy with the hooks a plan, a pool and a disruption pass call. */
static const char *k_policy =
    "return {\n"
    "  price = function(offers) local out = {} for i, o in ipairs(offers) do out[i] = o.price * 1.01 end return out "
    "end,\n"
    "  rank = function(claim, offers) local s = {} for i, o in ipairs(offers) do s[i] = o.price end return s end,\n"
    "  scale_in = function(pool, vms) local o = {} for i = #vms, 1, -1 do o[#o + 1] = vms[i] end return o end,\n"
    "  consolidation_order = function(c) local o = {} for i = 1, #c do o[i] = c[i] end return o end,\n"
    "}\n";

static int discard(void *ud, const char *data, size_t len) { return 0; }

/* with_err 0: every call gets NULL for its dt_error, and must still say
** DT_ENOMEM; with_policy: the cycle runs with k_policy's hooks. */
static int cycle_with(int *stage, int with_err, int with_policy) {
  dt_error err = {0}, *e = with_err ? &err : NULL;
  dt_catalog *c = NULL;
  dt_manifests *m = NULL;
  dt_plan *p = NULL;
  dt_policy *pol = NULL;
  char *text = NULL;
  int rc;
  *stage = 0;
  if ((rc = dt_catalog_load_buffer("cat", k_catalog, strlen(k_catalog), &c, e))) goto done;
  *stage = 1;
  if (!(m = dt_manifests_new())) {
    rc = DT_ENOMEM;
    goto done;
  }
  if ((rc = dt_manifests_add_buffer(m, "m", k_manifests, strlen(k_manifests), e))) goto done;
  *stage = 2;
  if (with_policy && (rc = dt_policy_load_buffer("p.lua", k_policy, strlen(k_policy), NULL, &pol, e))) goto done;
  dt_plan_opts po = {0};
  po.policy = pol;
  if ((rc = dt_plan_run(c, m, &po, &p, e))) goto done;
  *stage = 3;
  for (int f = 0; f < 3; f++) {
    if (!(text = dt_plan_render(p, (dt_format)f, NULL))) {
      rc = DT_ENOMEM;
      goto done;
    }
    dt_free(text);
    text = NULL;
    if ((rc = dt_plan_write(p, (dt_format)f, discard, NULL))) goto done;
  }
  *stage = 4;
  dt_pools *pools = NULL;
  dt_pool_opts pl = {0};
  pl.policy = pol;
  if ((rc = dt_pools_run(m, &pl, &pools, e))) goto done;
  for (int f = 0; f < 3 && !rc; f++) {
    if (!(text = dt_pools_render(pools, (dt_format)f, NULL))) rc = DT_ENOMEM;
    dt_free(text);
    text = NULL;
  }
  dt_pools_free(pools);
  if (rc) goto done;
  *stage = 5;
  dt_disruption *dis = NULL;
  dt_disrupt_opts dopt = {0};
  dopt.explain = "n1";
  dopt.policy = pol;
  if ((rc = dt_disrupt_run(c, m, &dopt, &dis, e))) goto done;
  for (int f = 0; f < 3 && !rc; f++) {
    if (!(text = dt_disrupt_render(dis, (dt_format)f, NULL))) rc = DT_ENOMEM;
    dt_free(text);
    text = NULL;
  }
  dt_disrupt_free(dis);
  if (rc) goto done;
  *stage = 6;
  /* A KWOK list, written out in dovetail's format and read back. */
  dt_catalog_free(c);
  c = NULL;
  if ((rc = dt_catalog_load_buffer("kwok", k_kwok, strlen(k_kwok), &c, e))) goto done;
  size_t len;
  if (!(text = dt_catalog_json(c, &len))) {
    rc = DT_ENOMEM;
    goto done;
  }
  dt_catalog *back = NULL;
  rc = dt_catalog_load_buffer("kwok.json", text, len, &back, e);
  dt_catalog_free(back);
  if (rc) goto done;
  *stage = 7;
done:
  g_err = err;
  dt_free(text);
  dt_plan_free(p);
  dt_policy_free(pol);
  dt_manifests_free(m);
  dt_catalog_free(c);
  return rc;
}

/* Fail the Nth allocation for every N until the whole cycle succeeds: every
** failure must come back as DT_ENOMEM, and the cycle must complete. */
static void test_oom(int with_err, int with_policy) {
  int stage;
  CHECK(cycle_with(&stage, with_err, with_policy) == 0 && stage == 7, "the cycle (err %d, policy %d) succeeds",
        with_err, with_policy);
  dt_set_allocator(f_malloc, f_realloc, free);
  long n;
  int bad = 0;
  for (n = 0; n < 400000; n++) {
    budget = n;
    int rc = cycle_with(&stage, with_err, with_policy);
    if (rc == 0) break;
    if (rc != DT_ENOMEM && !bad) {
      bad = 1;
      CHECK(0, "allocation %ld failed at stage %d with %d (%s) instead of DT_ENOMEM (err %d, policy %d): %s", n, stage,
            rc, dt_strerror(rc), with_err, with_policy, with_err ? g_err.msg : "");
    }
  }
  budget = -1;
  dt_set_allocator(NULL, NULL, NULL);
  CHECK(!bad, "every injected allocation failure reports DT_ENOMEM (err %d, policy %d)", with_err, with_policy);
  CHECK(n > 100 && n < 400000, "the cycle (err %d, policy %d) completes once enough allocations succeed (%ld)",
        with_err, with_policy, n);
  printf("oom (err %d, policy %d): %ld allocation points exercised\n", with_err, with_policy, n);
}

/* A plan whose cost packing has more than 64 shapes in one group (solved in
** parts, and by plan E): plain pods of 66 shapes, two of each (column
** generation passes over groups of one pod per shape), in a pool of type a. */
static int plan_many_shapes(void) {
  char *text = malloc(132 * 200 + 512);
  if (!text) return DT_ENOMEM;
  int len = sprintf(text, "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: open}\n"
                          "spec:\n  template:\n    spec:\n      requirements: [{key: node.kubernetes.io/instance-type, "
                          "operator: In, values: [a]}]\n");
  for (int i = 0; i < 132; i++)
    len += sprintf(text + len,
                   "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p%d}\n"
                   "spec: {containers: [{name: c, resources: {requests: {cpu: %dm, memory: %dMi}}}]}\n",
                   i, 50 + 5 * (i / 2), 64 + 24 * (i / 2));
  dt_catalog *c = NULL;
  dt_manifests *m = NULL;
  dt_plan *p = NULL;
  int rc = dt_catalog_load_buffer("cat", k_catalog, strlen(k_catalog), &c, NULL);
  if (!rc && !(m = dt_manifests_new())) rc = DT_ENOMEM;
  if (!rc) rc = dt_manifests_add_buffer(m, "m", text, (size_t)len, NULL);
  dt_plan_opts po = {0};
  if (!rc) rc = dt_plan_run(c, m, &po, &p, NULL);
  dt_plan_stats st;
  if (!rc) {
    dt_plan_stats_get(p, &st);
    if (st.scheduled != 132) rc = DT_EINVAL;
  }
  dt_plan_free(p);
  dt_manifests_free(m);
  dt_catalog_free(c);
  free(text);
  return rc;
}

static void test_oom_many_shapes(void) {
  CHECK(plan_many_shapes() == 0, "a plan of 66 shapes succeeds");
  dt_set_allocator(f_malloc, f_realloc, free);
  long n;
  int bad = 0;
  for (n = 0; n < 400000; n++) {
    budget = n;
    int rc = plan_many_shapes();
    if (rc == 0) break;
    if (rc != DT_ENOMEM && !bad) {
      bad = 1;
      CHECK(0, "allocation %ld failed with %d (%s) instead of DT_ENOMEM (66 shapes)", n, rc, dt_strerror(rc));
    }
  }
  budget = -1;
  dt_set_allocator(NULL, NULL, NULL);
  CHECK(!bad, "every injected allocation failure reports DT_ENOMEM (66 shapes)");
  CHECK(n > 100 && n < 400000, "the 66-shape plan completes once enough allocations succeed (%ld)", n);
  printf("oom (66 shapes): %ld allocation points exercised\n", n);
}

static void test_api(void) {
  dt_error err = {0};
  int64_t v;
  CHECK(dt_quantity_parse("1.5Gi", &v, &err) == 0 && v == 1610612736000LL, "1.5Gi");
  CHECK(dt_quantity_parse("1e3", &v, &err) == 0 && v == 1000000, "1e3");
  CHECK(dt_quantity_parse("12Qi", &v, &err) == DT_EINVAL && strstr(err.msg, "Qi"), "bad suffix");
  dt_catalog_free(NULL);
  dt_manifests_free(NULL);
  dt_plan_free(NULL);
  dt_catalog *c = NULL;
  CHECK(dt_catalog_load_default(&c, &err) == 0 && dt_catalog_size(c) > 1000, "bundled catalog loads");
  dt_type_info ti;
  int found = 0;
  for (size_t i = 0; c && i < dt_catalog_size(c); i++) {
    dt_catalog_type(c, i, &ti);
    if (strcmp(ti.name, "m5.large") == 0) {
      found = 1;
      CHECK(ti.cpu_milli == 1930 && ti.memory_bytes == 6903LL * 1024 * 1024 && ti.pods == 29,
            "m5.large allocatable is 1930m / 6903Mi / 29 (got %lld / %lld / %lld)", (long long)ti.cpu_milli,
            (long long)ti.memory_bytes, (long long)ti.pods);
    }
  }
  CHECK(found, "m5.large is in the bundled catalog");
  CHECK(dt_catalog_type(c, 1u << 30, &ti) == DT_EINVAL, "out-of-range type index is an error");
  dt_catalog_free(c);
  c = NULL;
  CHECK(!strcmp(dt_catalog_bundled(0), "aws-us-east-1") && !strcmp(dt_catalog_bundled(1), "azure-eastus") &&
            !dt_catalog_bundled(2),
        "the bundled catalogs are named, the default first");
  CHECK(dt_catalog_load_named("azure-eastus", &c, &err) == 0 && dt_catalog_size(c) > 500, "azure-eastus loads by name");
  found = 0;
  for (size_t i = 0; c && i < dt_catalog_size(c); i++) {
    dt_catalog_type(c, i, &ti);
    if (strcmp(ti.name, "Standard_D4s_v5") == 0) {
      found = 1;
      /* Karpenter's Azure overhead: 16 GiB less 7.5%, kube-reserved 140m and 2662Mi, eviction 750Mi */
      CHECK(ti.cpu_milli == 3860 && ti.memory_bytes == 12313637683LL && ti.pods == 250,
            "Standard_D4s_v5 allocatable is 3860m / 12313637683 bytes / 250 (got %lld / %lld / %lld)",
            (long long)ti.cpu_milli, (long long)ti.memory_bytes, (long long)ti.pods);
    }
  }
  CHECK(found, "Standard_D4s_v5 is in the Azure catalog");
  dt_catalog_free(c);
  c = NULL;
  CHECK(dt_catalog_load_named("gcp-us-central1", &c, &err) == DT_EINVAL &&
            strstr(err.msg, "aws-us-east-1, azure-eastus"),
        "an unknown catalog name lists the bundled ones: %s", err.msg);
  CHECK(dt_catalog_load_named("/no/such/catalog.json", &c, &err) == DT_EIO && strstr(err.msg, "cannot open"),
        "a path that does not exist is reported as a file: %s", err.msg);
  CHECK(dt_catalog_load_named(NULL, &c, &err) == 0 && dt_catalog_size(c) > 1000, "NULL loads the default");
  dt_catalog_free(c);
  int64_t t;
  CHECK(dt_time_parse("2026-11-22T10:00:00Z", &t, &err) == 0 && t == 1795341600, "RFC 3339 time");
  CHECK(dt_time_parse("2026-11-22", &t, &err) == DT_EINVAL, "date without time is rejected");
}

/* Karpenter's queue order, against a plain sort on the whole key: pods
** grouped by spec as the compiler pushes them, many specs sharing a key,
** hundreds of keys, and specs whose seq comes
** out of turn (their key's run must then be sorted by itself). */
static const rt_spec *g_queue_specs;
static int cmp_queue_ref(const void *a, const void *b) {
  const rt_spec *sp = g_queue_specs;
  const rt_pod *x = a, *y = b;
  const rt_spec *s = &sp[x->spec], *t = &sp[y->spec];
  if (s->req[DT_R_CPU] != t->req[DT_R_CPU]) return s->req[DT_R_CPU] > t->req[DT_R_CPU] ? -1 : 1;
  if (s->req[DT_R_MEM] != t->req[DT_R_MEM]) return s->req[DT_R_MEM] > t->req[DT_R_MEM] ? -1 : 1;
  if (s->src->created != t->src->created) return s->src->created < t->src->created ? -1 : 1;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

static void test_queue_order(void) {
  enum { NSPEC = 400, NPOD = 6000 };
  static dt_podspec src[NSPEC];
  static rt_spec specs[NSPEC];
  static rt_pod in[NPOD], out[NPOD], ref[NPOD];
  uint64_t x = 7;
  for (int round = 0; round < 3; round++) {
    size_t n = 0;
    for (uint32_t si = 0; si < NSPEC; si++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      uint32_t r = (uint32_t)(x >> 33);
      memset(&specs[si], 0, sizeof specs[si]);
      specs[si].src = &src[si];
      specs[si].req[DT_R_CPU] = 250 * (int64_t)(1 + r % (round == 0 ? 3 : 40));
      specs[si].req[DT_R_MEM] = 512 * (int64_t)(1 + (r >> 8) % 4);
      src[si].created = 1700000000 + (int64_t)((r >> 12) % (round == 2 ? 50 : 2));
      /* round 1: some specs' seq out of turn */
      uint64_t seq = round == 1 && (r >> 20) % 5 == 0 ? (uint64_t)(NSPEC - si) * 3 : (uint64_t)si * 3 + 1;
      int64_t copies = (int64_t)((r >> 24) % 30);
      for (int64_t o = 0; o < copies && n < NPOD; o++) in[n++] = (rt_pod){si, si, (r >> 22) % 2 ? o : -1, seq};
    }
    int rc = dt__sched_queue_order(specs, in, n, out);
    memcpy(ref, in, n * sizeof *in);
    g_queue_specs = specs;
    qsort(ref, n, sizeof *ref, cmp_queue_ref);
    bool same = rc == 0;
    for (size_t i = 0; i < n && same; i++)
      same = out[i].spec == ref[i].spec && out[i].ordinal == ref[i].ordinal && out[i].seq == ref[i].seq;
    CHECK(same, "queue order, round %d: %zu pods in the order of a sort on the whole key", round, n);
  }
  CHECK(dt__sched_queue_order(specs, in, 0, out) == 0, "queue order of no pods");
}

/* A degenerate pattern LP from column generation's rounding (its file
** says how it was made), solved from the basis it was given: it must reach
** the cold optimum, dual feasible, in a bounded number of pivots (Bland's
** rule alone took 31,950 on it). */
static void test_lp_degenerate(void) {
  const char *path = "spec/fixtures/lp-degenerate.txt";
  FILE *f = fopen(path, "r");
  CHECK(f != NULL, "%s: %s", path, strerror(errno));
  if (!f) return;
  char line[256];
  long at = 0;
  while (fgets(line, sizeof line, f) && line[0] == '#') at = ftell(f);
  fseek(f, at, SEEK_SET);
  int m = 0, n = 0;
  bool ok = fscanf(f, "%d %d", &m, &n) == 2 && m > 0 && m <= 256 && n > 0 && n <= 100000;
  int *start = ok ? malloc(((size_t)n + 1) * sizeof *start) : NULL,
      *basis = ok ? malloc((size_t)m * sizeof *basis) : NULL;
  double *c = ok ? malloc((size_t)n * sizeof *c) : NULL, *d = ok ? malloc((size_t)m * sizeof *d) : NULL;
  double *y = ok ? malloc((size_t)m * sizeof *y) : NULL, *yc = ok ? malloc((size_t)m * sizeof *yc) : NULL;
  double *x = ok ? malloc((size_t)n * sizeof *x) : NULL;
  int *row = NULL;
  double *val = NULL;
  ok = ok && start && basis && c && d && y && yc && x;
  for (int j = 0; ok && j <= n; j++) ok = fscanf(f, "%d", &start[j]) == 1 && start[j] >= (j ? start[j - 1] : 0);
  if (ok && (row = malloc(((size_t)start[n] + 1) * sizeof *row)) &&
      (val = malloc(((size_t)start[n] + 1) * sizeof *val)))
    for (int k = 0; ok && k < start[n]; k++)
      ok = fscanf(f, "%d:%lf", &row[k], &val[k]) == 2 && row[k] >= 0 && row[k] < m;
  else
    ok = false;
  for (int j = 0; ok && j < n; j++) ok = fscanf(f, "%lf", &c[j]) == 1;
  for (int r = 0; ok && r < m; r++) ok = fscanf(f, "%lf", &d[r]) == 1;
  for (int r = 0; ok && r < m; r++) ok = fscanf(f, "%d", &basis[r]) == 1;
  fclose(f);
  CHECK(ok, "%s: read", path);
  if (ok) {
    double warm_obj = 0, cold_obj = 0;
    long before = dt__lp_pivots();
    int rc = dt__lp_cover_sparse(m, n, start, row, val, c, d, y, x, &warm_obj, basis, NULL);
    long pivots = dt__lp_pivots() - before;
    int rc2 = dt__lp_cover_sparse(m, n, start, row, val, c, d, yc, x, &cold_obj, NULL, NULL);
    double worst = 0; /* the least reduced cost at the warm solve's duals */
    for (int j = 0; j < n; j++) {
      double rcj = c[j];
      for (int k = start[j]; k < start[j + 1]; k++) rcj -= y[row[k]] * val[k];
      if (rcj < worst) worst = rcj;
    }
    CHECK(rc == 0 && rc2 == 0 && fabs(warm_obj - cold_obj) < 1e-9 * (1 + cold_obj) && worst > -1e-9,
          "degenerate pattern LP: %g from its basis, %g cold, least reduced cost %g", warm_obj, cold_obj, worst);
    CHECK(pivots < 2000, "degenerate pattern LP of %d rows solved in %ld pivots", m, pivots);
  }
  free(start);
  free(basis);
  free(c);
  free(d);
  free(y);
  free(yc);
  free(x);
  free(row);
  free(val);
}

/* Cost packing's pattern LPs are bounded in pivots, not only in pricing
** rounds: 65 Deployments of two replicas each, each of its own requests
** (spec/fixtures/small-65x2.json), on the bundled catalog. Their LPs are as
** degenerate as they come, and column generation made 660,000 pivots
** (12 s) for these 130 pods. */
static void test_cost_packing_work(void) {
  dt_error err = {0};
  dt_catalog *c = NULL;
  dt_manifests *m = dt_manifests_new();
  dt_plan *p = NULL;
  dt_plan_opts o = {0};
  o.now = 1795341600;
  int rc = !m || dt_catalog_load_default(&c, &err) || dt_manifests_add_file(m, "spec/fixtures/small-65x2.json", &err);
  long before = dt__lp_pivots();
  if (!rc) rc = dt_plan_run(c, m, &o, &p, &err);
  long pivots = dt__lp_pivots() - before;
  dt_plan_stats st = {0};
  if (!rc && p) dt_plan_stats_get(p, &st);
  CHECK(!rc && st.scheduled == 130, "small-65x2: %zu of 130 pods planned (%d: %s)", st.scheduled, rc, err.msg);
  CHECK(pivots < 100000, "small-65x2: %ld simplex pivots", pivots);
  dt_plan_free(p);
  dt_manifests_free(m);
  dt_catalog_free(c);
}

/* Known LPs: minimise c.x subject to A x >= d, x >= 0. */
static void test_lp(void) {
  double y[4], x[4], obj;
  /* two rows, two columns: covering row 0 with column 1 (cost 2 < 3) is optimal: x = (0, 4), 8,
  ** row 1 (x1 + 3 x2 >= 6) slack, so its dual is 0 and row 0's is 2 */
  const double a1[] = {1, 1, 1, 3}, c1[] = {3, 2}, d1[] = {4, 6};
  CHECK(dt__lp_cover(2, 2, a1, c1, d1, y, x, &obj) == 0 && fabs(obj - 8) < 1e-9 && fabs(x[0]) < 1e-9 &&
            fabs(x[1] - 4) < 1e-9 && fabs(y[0] - 2) < 1e-9 && fabs(y[1]) < 1e-9,
        "simple LP: obj %g x (%g, %g) y (%g, %g)", obj, x[0], x[1], y[0], y[1]);
  /* degenerate: x1 >= 1, x2 >= 1, x1 + x2 >= 2 meet at one vertex (1, 1), three rows tight */
  const double a2[] = {1, 0, 0, 1, 1, 1}, c2[] = {1, 1}, d2[] = {1, 1, 2};
  CHECK(dt__lp_cover(3, 2, a2, c2, d2, y, x, &obj) == 0 && fabs(obj - 2) < 1e-9 && fabs(x[0] - 1) < 1e-9 &&
            fabs(x[1] - 1) < 1e-9,
        "degenerate LP: obj %g x (%g, %g)", obj, x[0], x[1]);
  /* duals of a degenerate optimum still price every column at >= 0 reduced cost */
  CHECK(c2[0] - (y[0] * a2[0] + y[1] * a2[2] + y[2] * a2[4]) > -1e-9 &&
            c2[1] - (y[0] * a2[1] + y[1] * a2[3] + y[2] * a2[5]) > -1e-9 && y[0] >= -1e-9 && y[1] >= -1e-9 &&
            y[2] >= -1e-9,
        "degenerate LP: dual feasible (%g, %g, %g)", y[0], y[1], y[2]);
  /* infeasible: row 1 is demanded and no column covers it */
  const double a3[] = {1, 0}, c3[] = {1}, d3[] = {1, 1};
  CHECK(dt__lp_cover(2, 1, a3, c3, d3, y, x, &obj) == -1, "infeasible LP is refused");
  /* unbounded: a column that pays to be used without limit */
  const double a4[] = {1}, c4[] = {-1}, d4[] = {1};
  CHECK(dt__lp_cover(1, 1, a4, c4, d4, y, x, &obj) == -1, "unbounded LP is refused");
  /* no rows is not an LP; more than 64 neither */
  CHECK(dt__lp_cover(0, 1, a4, c4, d4, y, x, &obj) == -1, "an LP without rows is refused");
  /* warm start: solve with two columns, add a cheaper third and start from the old basis; the
  ** optimum must equal a cold solve of all three */
  const double a5[] = {2, 1, 1, 1, 3, 1}, c5[] = {4, 5, 1.5}, d5[] = {8, 9};
  const double a5a[] = {2, 1, 1, 3};
  int basis[2] = {DT_LP_COLD, 0};
  double warm_obj, cold_obj, yc[2];
  int ok = dt__lp_cover_warm(2, 2, a5a, c5, d5, y, x, &warm_obj, basis) == 0;
  /* the basis names columns of the two-column LP: still valid in the three-column one */
  ok = ok && dt__lp_cover_warm(2, 3, a5, c5, d5, y, x, &warm_obj, basis) == 0;
  ok = ok && dt__lp_cover(2, 3, a5, c5, d5, yc, x, &cold_obj) == 0;
  CHECK(ok && fabs(warm_obj - cold_obj) < 1e-9 && fabs(y[0] - yc[0]) < 1e-9 && fabs(y[1] - yc[1]) < 1e-9,
        "warm start reaches the cold optimum (%g vs %g)", warm_obj, cold_obj);
  /* smaller demands from the optimal basis: it no longer covers them, and the dual simplex
  ** from it must reach the cold optimum */
  const double d6[] = {1, 8};
  double d6_cold, yd[2];
  ok = dt__lp_cover_warm(2, 3, a5, c5, d6, yd, x, &warm_obj, basis) == 0;
  ok = ok && dt__lp_cover(2, 3, a5, c5, d6, yc, x, &d6_cold) == 0;
  CHECK(ok && fabs(warm_obj - d6_cold) < 1e-9 && fabs(yd[0] - yc[0]) < 1e-9 && fabs(yd[1] - yc[1]) < 1e-9,
        "a warm start for other demands reaches the cold optimum (%g vs %g)", warm_obj, d6_cold);
  /* an inverse that does not belong to its basis (as one drifted on a nearly singular basis):
  ** for the basis (artificial 0, column 2) this one gives the artificial the value 1e-8 and
  ** duals of 0.06 / 17 on both rows, at which nothing enters, so the warm solve ends with
  ** the artificial in the basis and reports the LP infeasible; it must be solved again from
  ** the artificials. bigm is lp.c's: (the largest cost + 1) x 1e6. */
  {
    const int st[] = {0, 2, 4, 6}, rw[] = {0, 1, 0, 1, 0, 1};
    const double vl[] = {2, 1, 1, 3, 1, 1};
    double bigm = (5 + 1) * 1e6, t = 0.06 / 17, inv[4] = {(t - 13.5) / bigm, (t + 12) / bigm, 9, -8};
    int wb[2] = {-1 - 2 - 0, 2};
    double xs[3];
    CHECK(dt__lp_cover_sparse(2, 3, st, rw, vl, c5, d5, y, xs, &warm_obj, wb, inv) == 0 &&
              fabs(warm_obj - cold_obj) < 1e-9,
          "a warm solve that fails is solved again cold (%g vs %g)", warm_obj, cold_obj);
  }
  /* a garbage warm basis falls back to the cold start */
  int junk[2] = {7, -99};
  CHECK(dt__lp_cover_warm(2, 3, a5, c5, d5, y, x, &warm_obj, junk) == 0 && fabs(warm_obj - cold_obj) < 1e-9,
        "a bad warm basis falls back to a cold start");
}

/*
** overlay: a disruption pass plans each simulation as an overlay of the
** cluster compiled once (dt__plan_run_overlay). Its output must be the
** pass's output with every simulation compiled from its own view
** (dt__disrupt_run_rebuild), byte for byte, on clusters that exercise what
** the overlay keeps: custom labels in varying orders, node selectors on
** them, host ports, DaemonSet pods, topology spread and anti-affinity,
** do-not-disrupt pods, PDBs, a static pool, drifted nodes, claims in
** flight with nominated pods, and commands that move pods between
** simulations.
*/
static uint64_t ov_rng;
static unsigned ov_next(unsigned n) {
  ov_rng = ov_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (unsigned)(ov_rng >> 33) % n;
}

static void ov_put(char **b, size_t *len, size_t *cap, const char *fmt, ...) {
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int n = vsnprintf(*b + *len, *cap - *len, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < *cap - *len) {
      *len += (size_t)n;
      return;
    }
    *cap = *cap * 2 + (size_t)n + 1;
    *b = realloc(*b, *cap);
  }
}

static char *ov_cluster(unsigned seed, size_t *len) {
  static const char *types[] = {"m5.large", "m5.xlarge", "c5.xlarge", "r5.large", "m5.2xlarge", "c5.2xlarge"};
  static const char *zones[] = {"us-east-1a", "us-east-1b", "us-east-1c"};
  size_t cap = 1 << 16;
  char *b = malloc(cap);
  *len = 0;
  ov_rng = seed * 7919u + 1;
  ov_put(&b, len, &cap,
         "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":["
         "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"default\"},\"spec\":{"
         "\"disruption\":{\"budgets\":[{\"nodes\":\"%s\"}]},\"template\":{\"spec\":{\"requirements\":["
         "{\"key\":\"kubernetes.io/arch\",\"operator\":\"In\",\"values\":[\"amd64\"]},"
         "{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\":[\"on-demand\"%s]},"
         "{\"key\":\"karpenter.k8s.aws/instance-category\",\"operator\":\"In\",\"values\":[\"c\",\"m\",\"r\"]}]}}}}",
         ov_next(2) ? "50%" : "100%", ov_next(2) ? ",\"spot\"" : "");
  bool stat = ov_next(3) == 0;
  if (stat)
    ov_put(&b, len, &cap,
           ",{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"fixed\"},"
           "\"spec\":{\"replicas\":%u,\"template\":{\"spec\":{\"requirements\":["
           "{\"key\":\"node.kubernetes.io/instance-type\",\"operator\":\"In\",\"values\":[\"m5.large\"]}]}}}}",
           1 + ov_next(3));
  unsigned nn = 8 + ov_next(40), pods = 0;
  for (unsigned i = 0; i < nn; i++) {
    bool fixed = stat && i % 7 == 3, claim = !fixed && ov_next(8) == 0, team = ov_next(3) == 0;
    const char *type = fixed ? "m5.large" : types[ov_next(6)], *zone = zones[ov_next(3)];
    const char *ct = !fixed && ov_next(4) == 0 ? "spot" : "on-demand";
    char extra[200] = "";
    if (team) /* custom labels, in either order */
      snprintf(extra, sizeof extra,
               ov_next(2) ? ",\"team\":\"t%u\",\"env\":\"e%u\"" : ",\"env\":\"e%u\",\"team\":\"t%u\"", ov_next(2),
               ov_next(2));
    char ann[300] = "";
    size_t an = 0;
    if (ov_next(10) == 0)
      an += (size_t)snprintf(ann + an, sizeof ann - an, "\"dovetail.dev/nodepool-hash\":\"0000000000000000\"");
    if (claim)
      an += (size_t)snprintf(ann + an, sizeof ann - an, "%s\"dovetail.dev/pods\":\"default/w-%u,default/nom-%u\"",
                             an ? "," : "", i, i);
    if (ov_next(15) == 0)
      an += (size_t)snprintf(ann + an, sizeof ann - an, "%s\"karpenter.sh/do-not-disrupt\":\"true\"", an ? "," : "");
    ov_put(&b, len, &cap,
           ",{\"apiVersion\":\"%s\",\"kind\":\"%s\",\"metadata\":{\"name\":\"n-%u\","
           "\"creationTimestamp\":\"2026-11-%02uT00:00:00Z\",\"annotations\":{%s},\"labels\":{"
           "\"node.kubernetes.io/instance-type\":\"%s\",\"topology.kubernetes.io/zone\":\"%s\","
           "\"karpenter.sh/capacity-type\":\"%s\",\"karpenter.sh/nodepool\":\"%s\",\"kubernetes.io/"
           "arch\":\"amd64\"%s}}%s}",
           claim ? "karpenter.sh/v1" : "v1", claim ? "NodeClaim" : "Node", i, 1 + ov_next(20), ann, type, zone, ct,
           fixed ? "fixed" : "default", extra,
           ov_next(12) == 0
               ? ",\"spec\":{\"taints\":[{\"key\":\"dedicated\",\"value\":\"x\",\"effect\":\"NoSchedule\"}]}"
               : "");
    unsigned np = ov_next(9);
    for (unsigned k = 0; k < np; k++, pods++) {
      unsigned kind = ov_next(12), app = ov_next(5);
      char spec[600] = "", meta[400] = "";
      size_t sn = 0, mn = 0;
      if (kind == 0) /* a DaemonSet's pod */
        mn += (size_t)snprintf(meta + mn, sizeof meta - mn,
                               ",\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"name\":\"ds\"}]");
      if (kind == 1 && team) /* selects the node's own custom labels, in another order */
        sn += (size_t)snprintf(spec + sn, sizeof spec - sn, ",\"nodeSelector\":{\"env\":\"e%u\",\"team\":\"t%u\"}",
                               ov_next(2), ov_next(2));
      if (kind == 2)
        sn +=
            (size_t)snprintf(spec + sn, sizeof spec - sn,
                             ",\"topologySpreadConstraints\":[{\"maxSkew\":1,"
                             "\"topologyKey\":\"topology.kubernetes.io/zone\",\"whenUnsatisfiable\":\"DoNotSchedule\","
                             "\"labelSelector\":{\"matchLabels\":{\"app\":\"a%u\"}}}]",
                             app);
      if (kind == 3)
        sn += (size_t)snprintf(spec + sn, sizeof spec - sn,
                               ",\"affinity\":{\"podAntiAffinity\":{"
                               "\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"topologyKey\":"
                               "\"kubernetes.io/hostname\",\"labelSelector\":{\"matchLabels\":{\"app\":\"a%u\"}}}]}}",
                               app);
      if (kind == 4)
        mn += (size_t)snprintf(meta + mn, sizeof meta - mn,
                               ",\"annotations\":{\"karpenter.sh/do-not-disrupt\":\"true\"}");
      if (kind == 5)
        mn +=
            (size_t)snprintf(meta + mn, sizeof meta - mn,
                             ",\"annotations\":{\"controller.kubernetes.io/pod-deletion-cost\":\"%u\"}", ov_next(1000));
      if (kind == 6)
        sn += (size_t)snprintf(spec + sn, sizeof spec - sn, ",\"tolerations\":[{\"operator\":\"Exists\"}]");
      ov_put(&b, len, &cap,
             ",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p-%u\",\"namespace\":\"default\","
             "\"labels\":{\"app\":\"a%u\"}%s},\"spec\":{\"nodeName\":\"n-%u\"%s,\"containers\":[{\"name\":\"c\","
             "%s\"resources\":{\"requests\":{\"cpu\":\"%um\",\"memory\":\"%uMi\"}}}]}}",
             pods, app, meta, i, spec, kind == 7 ? "\"ports\":[{\"containerPort\":80,\"hostPort\":8080}]," : "",
             50 + ov_next(900), 64 + ov_next(2000));
    }
    if (i > 0 && ov_next(10) == 0) /* a NodeClaim that the Node before it stands for (one machine) */
      ov_put(&b, len, &cap,
             ",{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\",\"metadata\":{\"name\":\"c-%u\","
             "\"labels\":{\"karpenter.sh/nodepool\":\"default\"}},\"status\":{\"nodeName\":\"n-%u\"}}",
             i, i - 1);
    if (claim) /* pending pods nominated to the claim */
      ov_put(&b, len, &cap,
             ",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"nom-%u\",\"namespace\":\"default\"},"
             "\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"300m\"}}}]}}",
             i);
  }
  if (ov_next(2))
    ov_put(
        &b, len, &cap,
        ",{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"name\":\"pdb\","
        "\"namespace\":\"default\"},\"spec\":{\"maxUnavailable\":%u,\"selector\":{\"matchLabels\":{\"app\":\"a%u\"}}}}",
        ov_next(3), ov_next(5));
  ov_put(&b, len, &cap, "]}");
  return b;
}

/* One pass both ways on manifests m; 1 when the outputs are equal. */
static int ov_same(const dt_catalog *c, const dt_manifests *m, const char *what, unsigned seed, int spot_to_spot,
                   dt_policy *pol) {
  dt_error err = {0};
  dt_disrupt_opts o = {0};
  o.policy = pol;
  dt_time_parse("2026-11-23T12:00:00Z", &o.now, NULL);
  o.seed = seed;
  o.spot_to_spot = spot_to_spot;
  dt_disruption *a = NULL, *r = NULL;
  int ra = dt_disrupt_run(c, m, &o, &a, &err), rr = dt__disrupt_run_rebuild(c, m, &o, &r, &err);
  char *ta = ra ? NULL : dt_disrupt_render(a, DT_FORMAT_JSON, NULL);
  char *tr = rr ? NULL : dt_disrupt_render(r, DT_FORMAT_JSON, NULL);
  int same = ra == rr && (ra || (ta && tr && !strcmp(ta, tr)));
  if (!same) {
    printf("overlay differs on %s (seed %u):\n", what, seed);
    for (size_t i = 0; ta && tr && ta[i]; i++)
      if (ta[i] != tr[i]) {
        printf("  overlay: ...%.300s\n  rebuild: ...%.300s\n", ta + (i > 200 ? i - 200 : 0),
               tr + (i > 200 ? i - 200 : 0));
        break;
      }
  }
  dt_free(ta);
  dt_free(tr);
  dt_disrupt_free(a);
  dt_disrupt_free(r);
  return same;
}

static void test_overlay(void) {
  dt_error err = {0};
  dt_catalog *c = NULL;
  if (dt_catalog_load_default(&c, &err)) {
    CHECK(0, "the bundled catalog loads: %s", err.msg);
    return;
  }
  /* a policy whose score and consolidation order change what the simulations launch and try */
  static const char *k_ov_policy =
      "return {\n"
      "  score = function(o) return (o.capacityType == 'spot' and 2 or 1) * o.price * (o.family == 'c5' and 0.8 or 1) "
      "end,\n"
      "  consolidation_order = function(c) local o = {} for i = #c, 1, -1 do o[#o + 1] = c[i] end return o end,\n"
      "}\n";
  dt_policy *pol = NULL;
  CHECK(dt_policy_load_buffer("overlay.lua", k_ov_policy, strlen(k_ov_policy), NULL, &pol, &err) == 0,
        "the overlay spec's policy loads: %s", err.msg);
  unsigned bad = 0, runs = 0, commands = 0;
  for (unsigned seed = 1; seed <= 60; seed++) {
    size_t len;
    char *text = ov_cluster(seed, &len);
    dt_manifests *m = dt_manifests_new();
    if (dt_manifests_add_buffer(m, "cluster.json", text, len, &err)) {
      CHECK(0, "generated cluster %u parses: %s", seed, err.msg);
    } else {
      for (int s2s = 0; s2s < 2; s2s++, runs++) bad += !ov_same(c, m, "a generated cluster", seed, s2s, NULL);
      if (seed % 3 == 0 && pol) bad += !ov_same(c, m, "a generated cluster with a policy", seed, 0, pol), runs++;
      dt_disruption *d = NULL;
      dt_disrupt_opts o = {0};
      dt_time_parse("2026-11-23T12:00:00Z", &o.now, NULL);
      if (!dt_disrupt_run(c, m, &o, &d, &err)) {
        dt_disrupt_stats st;
        dt_disrupt_stats_get(d, &st);
        commands += (unsigned)st.commands;
      }
      dt_disrupt_free(d);
    }
    dt_manifests_free(m);
    free(text);
  }
  static const char *files[] = {"examples/disrupt.yaml", "examples/simulate/cluster.yaml",
                                "spec/fixtures/cluster-dump.yaml"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    dt_manifests *m = dt_manifests_new();
    if (dt_manifests_add_file(m, files[i], &err)) {
      CHECK(0, "%s loads: %s", files[i], err.msg);
    } else {
      for (int s2s = 0; s2s < 2; s2s++, runs++) bad += !ov_same(c, m, files[i], 0, s2s, NULL);
    }
    dt_manifests_free(m);
  }
  CHECK(bad == 0,
        "a disruption pass on the compiled cluster decides as one compiling every simulation (%u of %u differ)", bad,
        runs);
  CHECK(commands > 60, "the generated clusters make commands that move pods between simulations (%u)", commands);
  printf("overlay: %u passes compared, %u commands\n", runs, commands);
  dt_policy_free(pol);
  dt_catalog_free(c);
}

/*
** screen: single-node consolidation refuses, without simulating, a
** candidate its simulation could only refuse (disrupt_sim.c). A pass with
** the screen must make the same commands, budgets and blocked nodes as one
** simulating every candidate; only a screened node's reason differs. The
** clusters: the overlay's, and packed fleets (one large pod a node, a few
** nodes with room, cheaper and dearer types, spot, NodePools restricted to
** one family, a node the plan skips) where the screen refuses most; in some,
** no c5 spot is left to launch, and a spot node whose one pod a c5.large
** holds is replaced on-demand, which the screen must let through.
*/
static const char *jstr(const cJSON *o, const char *k);
static bool same_str(const char *a, const char *b);

static char *scr_fleet(unsigned seed, size_t *len) {
  static const char *types[] = {"c5.xlarge", "c5.2xlarge", "m5.xlarge", "m5.large", "r5.large"};
  static const char *zones[] = {"us-east-1a", "us-east-1b", "us-east-1c"};
  size_t cap = 1 << 16;
  char *b = malloc(cap);
  *len = 0;
  ov_rng = seed * 104729u + 7;
  bool family = ov_next(2);
  /* marked: no c5 spot to launch in any zone (as after interruptions), every
  ** node full but the first, a spot c5.2xlarge with one pod a c5.large holds:
  ** its replacement is on-demand, taken as it is cheaper */
  bool marked = family && ov_next(2);
  const char *budget = ov_next(4) ? "100%" : "20%";
  bool spot = marked || ov_next(2) == 0, big = marked || ov_next(2);
  ov_put(
      &b, len, &cap,
      "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":["
      "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"default\"},\"spec\":{"
      "\"disruption\":{\"budgets\":[{\"nodes\":\"%s\"}]},\"template\":{\"spec\":{\"requirements\":["
      "{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\":[\"on-demand\"%s]},"
      "{\"key\":\"karpenter.k8s.aws/instance-family\",\"operator\":\"In\",\"values\":[%s]},"
      "{\"key\":\"karpenter.k8s.aws/instance-size\",\"operator\":\"In\",\"values\":[\"large\",\"xlarge\"%s]}]}}}},"
      "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"agent\",\"namespace\":"
      "\"kube-system\"},\"spec\":{\"template\":{\"spec\":{\"tolerations\":[{\"operator\":\"Exists\"}],\"containers\":"
      "[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"}}}]}}}}",
      budget, spot ? ",\"spot\"" : "", family ? "\"c5\"" : "\"c5\",\"m5\",\"r5\",\"t3\",\"c6a\",\"m6a\"",
      big ? ",\"2xlarge\"" : "");
  for (unsigned t = 0; marked && t < 3; t++)
    for (unsigned z = 0; z < 6; z++)
      ov_put(&b, len, &cap,
             ",{\"apiVersion\":\"dovetail.dev/v1alpha1\",\"kind\":\"UnavailableOffering\",\"metadata\":{"
             "\"name\":\"spot.c5.%u.%u\"},\"spec\":{\"capacityType\":\"spot\",\"instanceType\":\"c5.%s\","
             "\"zone\":\"us-east-1%c\",\"expiresAt\":\"2027-01-01T00:00:00Z\"}}",
             t, z, (const char *[]){"large", "xlarge", "2xlarge"}[t], "abcdef"[z]);
  unsigned nn = 20 + ov_next(60), pods = 0;
  for (unsigned i = 0; i < nn; i++) {
    bool first = marked && i == 0;
    const char *type = first    ? "c5.2xlarge"
                       : marked ? "c5.xlarge"
                       : family ? (ov_next(4) ? "c5.xlarge" : "c5.2xlarge")
                                : types[ov_next(5)];
    const char *ct = first || ov_next(6) == 0 ? "spot" : "on-demand";
    unsigned day = 1 + ov_next(20), zone = ov_next(3);
    ov_put(&b, len, &cap,
           ",{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"f-%u\","
           "\"creationTimestamp\":\"2026-11-%02uT00:00:00Z\",\"labels\":{"
           "\"node.kubernetes.io/instance-type\":\"%s\",\"topology.kubernetes.io/zone\":\"%s\","
           "\"karpenter.sh/capacity-type\":\"%s\",\"karpenter.sh/nodepool\":\"default\",\"kubernetes.io/"
           "arch\":\"amd64\"}}%s}",
           i, day, type, zones[zone], ct,
           /* others' pods stay off it, so it keeps its one pod */
           first ? ",\"spec\":{\"taints\":[{\"key\":\"solo\",\"effect\":\"NoSchedule\"}]}" : "");
    ov_put(&b, len, &cap,
           ",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"agent-%u\",\"namespace\":\"kube-system\","
           "\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"name\":\"agent\"}]},\"spec\":{\"nodeName\":\"f-%u\","
           "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"}}}]}}",
           i, i);
    /* most nodes packed by one large pod, some holding small ones (room for others' pods) */
    unsigned np = !marked && ov_next(12) == 0 ? 1 + ov_next(3) : 1;
    bool small = !marked && (np > 1 || ov_next(16) == 0);
    for (unsigned k = 0; k < np; k++, pods++) {
      unsigned app = ov_next(4);
      unsigned cpu = first    ? 1000 + ov_next(800)
                     : marked ? 2900 + ov_next(800)
                     : small  ? 100 + ov_next(500)
                              : 1200 + ov_next(2500);
      unsigned mem = small ? 64 + ov_next(500) : 1024 + ov_next(first || marked ? 1500 : 5000);
      ov_put(&b, len, &cap,
             ",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"w-%u\",\"namespace\":\"default\","
             "\"labels\":{\"app\":\"a%u\"}},\"spec\":{\"nodeName\":\"f-%u\",%s\"containers\":[{\"name\":\"c\","
             "\"resources\":{\"requests\":{\"cpu\":\"%um\",\"memory\":\"%uMi\"}}}]}}",
             pods, app, i, first ? "\"tolerations\":[{\"key\":\"solo\",\"operator\":\"Exists\"}]," : "", cpu, mem);
    }
  }
  if (ov_next(3) == 0) /* a Node the plan skips in every view (no allocatable, a type the catalog lacks) */
    ov_put(&b, len, &cap,
           ",{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"mystery\",\"labels\":{"
           "\"node.kubernetes.io/instance-type\":\"x9.unknown\",\"karpenter.sh/nodepool\":\"elsewhere\"}}},"
           "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"m-1\",\"namespace\":\"default\"},"
           "\"spec\":{\"nodeName\":\"mystery\",\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
           "{\"cpu\":\"1\"}}}]}}");
  ov_put(&b, len, &cap, "]}");
  return b;
}

/* 1 when a pass with the screen decides as one without it. */
static int scr_same(const dt_catalog *c, const dt_manifests *m, const char *what, unsigned seed, int spot_to_spot,
                    dt_policy *pol, unsigned *screened) {
  dt_error err = {0};
  dt_disrupt_opts o = {0};
  o.policy = pol;
  o.spot_to_spot = spot_to_spot;
  dt_time_parse("2026-11-23T12:00:00Z", &o.now, NULL);
  o.seed = seed;
  dt_disruption *a = NULL, *r = NULL;
  int ra = dt_disrupt_run(c, m, &o, &a, &err), rr = dt__disrupt_run_unscreened(c, m, &o, &r, &err);
  char *ta = ra ? NULL : dt_disrupt_render(a, DT_FORMAT_JSON, NULL);
  char *tr = rr ? NULL : dt_disrupt_render(r, DT_FORMAT_JSON, NULL);
  cJSON *ja = ta ? cJSON_Parse(ta) : NULL, *jr = tr ? cJSON_Parse(tr) : NULL;
  int same = ra == rr;
  if (same && !ra) {
    same = ja && jr;
    static const char *keys[] = {"commands", "budgets"};
    for (size_t k = 0; same && k < 2; k++)
      same = cJSON_Compare(cJSON_GetObjectItemCaseSensitive(ja, keys[k]), cJSON_GetObjectItemCaseSensitive(jr, keys[k]),
                           true);
    const cJSON *ba = cJSON_GetObjectItemCaseSensitive(ja, "blocked"),
                *br = cJSON_GetObjectItemCaseSensitive(jr, "blocked");
    same = same && cJSON_GetArraySize(ba) == cJSON_GetArraySize(br);
    for (int i = 0; same && i < cJSON_GetArraySize(ba); i++) {
      const cJSON *x = cJSON_GetArrayItem(ba, i), *y = cJSON_GetArrayItem(br, i);
      const char *rx = jstr(x, "reason"), *ry = jstr(y, "reason");
      same = same_str(jstr(x, "node"), jstr(y, "node")) && rx && ry;
      if (same && strcmp(rx, ry)) {
        /* screened: refused as the simulation refused it, for a reason it found itself */
        same = strstr(rx, "fits on no other node") || strstr(rx, "fit on no other node");
        same = same && !strncmp(rx, "consolidation: ", 15) && !strncmp(ry, "consolidation: ", 15);
      }
    }
    dt_disrupt_stats sa;
    dt_disrupt_stats_get(a, &sa);
    *screened += (unsigned)sa.screened;
  }
  if (!same)
    printf("the screen changes the pass on %s (seed %u):\n  screened: %.600s\n  simulated: %.600s\n", what, seed,
           ta ? ta : "(error)", tr ? tr : "(error)");
  cJSON_Delete(ja);
  cJSON_Delete(jr);
  dt_free(ta);
  dt_free(tr);
  dt_disrupt_free(a);
  dt_disrupt_free(r);
  return same;
}

static void test_screen(void) {
  dt_error err = {0};
  dt_catalog *c = NULL;
  if (dt_catalog_load_default(&c, &err)) {
    CHECK(0, "the bundled catalog loads: %s", err.msg);
    return;
  }
  /* the price hook makes c5 dearer and spot cheaper than the catalog says:
  ** the screen must weigh the prices the simulations pay */
  static const char *k_policy = "return {\n"
                                "  price = function(offers) local out = {} for i, o in ipairs(offers) do\n"
                                "    out[i] = o.price * (o.family == 'c5' and 1.7 or 1) * (o.capacityType == 'spot' "
                                "and 0.5 or 1) end return out end,\n"
                                "  score = function(o) return o.price * (o.family == 'm5' and 0.9 or 1) end,\n"
                                "}\n";
  /* and one that launches no spot: a spot node's replacement is then
  ** on-demand, taken when it is cheaper */
  static const char *k_no_spot = "return { price = function(offers) local out = {} for i, o in ipairs(offers) do\n"
                                 "  if o.capacityType ~= 'spot' then out[i] = o.price end end return out end }\n";
  dt_policy *pol = NULL, *nospot = NULL;
  CHECK(dt_policy_load_buffer("screen.lua", k_policy, strlen(k_policy), NULL, &pol, &err) == 0,
        "the screen spec's policy loads: %s", err.msg);
  CHECK(dt_policy_load_buffer("no-spot.lua", k_no_spot, strlen(k_no_spot), NULL, &nospot, &err) == 0,
        "the screen spec's second policy loads: %s", err.msg);
  unsigned bad = 0, runs = 0, screened = 0;
  for (unsigned seed = 1; seed <= 120; seed++) {
    size_t len;
    char *text = seed <= 60 ? ov_cluster(seed, &len) : scr_fleet(seed, &len);
    const char *what = seed <= 60 ? "a generated cluster" : "a packed fleet";
    dt_manifests *m = dt_manifests_new();
    if (dt_manifests_add_buffer(m, "cluster.json", text, len, &err)) {
      CHECK(0, "generated cluster %u parses: %s", seed, err.msg);
    } else {
      bad += !scr_same(c, m, what, seed, 0, NULL, &screened), runs++;
      if (seed % 2 == 0 && pol) bad += !scr_same(c, m, what, seed, 0, pol, &screened), runs++;
      if (seed % 2 == 1 && nospot) bad += !scr_same(c, m, what, seed, 0, nospot, &screened), runs++;
      if (seed % 3 == 0) bad += !scr_same(c, m, what, seed, 1, NULL, &screened), runs++;
    }
    dt_manifests_free(m);
    free(text);
  }
  static const char *files[] = {"examples/disrupt.yaml", "examples/simulate/cluster.yaml",
                                "spec/fixtures/cluster-dump.yaml"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    dt_manifests *m = dt_manifests_new();
    if (dt_manifests_add_file(m, files[i], &err))
      CHECK(0, "%s loads: %s", files[i], err.msg);
    else
      for (int s2s = 0; s2s < 2; s2s++, runs++) bad += !scr_same(c, m, files[i], 0, s2s, NULL, &screened);
    dt_manifests_free(m);
  }
  CHECK(bad == 0, "a pass with the screen decides as one simulating every candidate (%u of %u differ)", bad, runs);
  /* 1,075 (747 while a node the plan skips turned the screen off for its pass) */
  CHECK(screened > 1000, "the screen refused candidates on the generated clusters (%u)", screened);
  printf("screen: %u passes compared, %u candidates screened\n", runs, screened);
  dt_policy_free(pol);
  dt_policy_free(nospot);
  dt_catalog_free(c);
}

/* ------------------------------------------------------------ results */

static const char *jstr(const cJSON *o, const char *k) {
  return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static bool same_str(const char *a, const char *b) { return a && b && !strcmp(a, b); }

/* v[0..n) are the strings of JSON array arr, in order. */
static bool same_strs(const cJSON *arr, const char *const *v, size_t n) {
  if (!cJSON_IsArray(arr) || (size_t)cJSON_GetArraySize(arr) != n) return false;
  size_t i = 0;
  for (const cJSON *c = arr->child; c; c = c->next, i++)
    if (!same_str(c->valuestring, v[i])) return false;
  return true;
}

/* A price as the JSON writes it. */
static bool same_price(const cJSON *j, double v) {
  char tmp[64];
  snprintf(tmp, sizeof tmp, "%.6g", v);
  double w = strtod(tmp, NULL);
  return cJSON_IsNumber(j) && fabs(j->valuedouble - w) < 1e-12;
}

static void test_plan_results(const dt_catalog *c, dt_manifests *m) {
  dt_error err = {0};
  dt_plan_opts o = {0};
  o.now = 1795341600;
  dt_plan *p = NULL;
  CHECK(dt_plan_run(c, m, &o, &p, &err) == 0, "plan: %s", err.msg);
  if (!p) return;
  char *text = dt_plan_render(p, DT_FORMAT_JSON, NULL);
  cJSON *doc = cJSON_Parse(text);
  dt_free(text);
  dt_plan_stats st;
  dt_plan_stats_get(p, &st);
  const cJSON *jc = cJSON_GetObjectItemCaseSensitive(doc, "nodeClaims");
  size_t n = dt_plan_claim_count(p);
  CHECK(n > 0 && n == st.nodes && n == (size_t)cJSON_GetArraySize(jc), "one claim per new node (%zu, %zu)", n,
        st.nodes);
  size_t pods = 0;
  dt_claim_info k;
  for (size_t i = 0; !dt_plan_claim(p, i, &k); i++) {
    const cJSON *j = cJSON_GetArrayItem(jc, (int)i);
    CHECK(same_str(k.name, jstr(j, "name")) && same_str(k.nodepool, jstr(j, "nodePool")) &&
              same_str(k.instance_type, jstr(j, "instanceType")) && same_str(k.zone, jstr(j, "zone")) &&
              same_str(k.capacity_type, jstr(j, "capacityType")),
          "claim %zu is the JSON's nodeClaims[%zu] (%s)", i, i, k.name ? k.name : "NULL");
    CHECK(same_price(cJSON_GetObjectItemCaseSensitive(j, "price"), k.price) && k.price > 0, "claim %zu's price", i);
    CHECK(same_strs(cJSON_GetObjectItemCaseSensitive(j, "pods"), k.pods, k.npods) && k.npods > 0, "claim %zu's pods",
          i);
    CHECK(same_strs(cJSON_GetObjectItemCaseSensitive(j, "instanceTypeOptions"), k.instance_type_options, k.noptions) &&
              k.noptions > 0,
          "claim %zu's options", i);
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(j, "requests");
    bool reqs = k.nrequests == (size_t)cJSON_GetArraySize(req);
    for (size_t r = 0; r < k.nrequests; r++) {
      int64_t milli = 0;
      reqs &= same_str(k.requests[r].quantity, jstr(req, k.requests[r].name)) &&
              dt_quantity_parse(k.requests[r].quantity, &milli, NULL) == 0 &&
              (milli == k.requests[r].milli || !strcmp(k.requests[r].name, "memory"));
    }
    CHECK(reqs, "claim %zu's requests", i);
    CHECK((k.reservation_id != NULL) == !strcmp(k.capacity_type, "reserved"), "claim %zu's reservation", i);
    /* its NodeClaim object: as planned, every option; as launched, the planned type alone */
    for (int launched = 0; launched < 2; launched++) {
      size_t len = 0;
      char *obj = dt_plan_claim_object(p, i, launched, &len);
      cJSON *o = obj ? cJSON_ParseWithLength(obj, len) : NULL;
      const cJSON *md = cJSON_GetObjectItemCaseSensitive(o, "metadata"), *types = NULL, *r;
      cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(
                                cJSON_GetObjectItemCaseSensitive(o, "spec"),
                                "requirements")) if (same_str("node.kubernetes.io/instance-type", jstr(r, "key")))
          types = cJSON_GetObjectItemCaseSensitive(r, "values");
      CHECK(o && len == strlen(obj) && same_str("NodeClaim", jstr(o, "kind")) && same_str(k.name, jstr(md, "name")) &&
                same_str(k.nodepool, jstr(cJSON_GetObjectItemCaseSensitive(md, "labels"), "karpenter.sh/nodepool")) &&
                (launched ? cJSON_GetArraySize(types) == 1 &&
                                same_str(k.instance_type, cJSON_GetArrayItem(types, 0)->valuestring)
                          : cJSON_GetArraySize(types) >= 1),
            "claim %zu's NodeClaim object (launched %d)", i, launched);
      cJSON_Delete(o);
      dt_free(obj);
    }
    pods += k.npods;
  }
  dt_claim_info untouched = {.name = "kept"};
  CHECK(dt_plan_claim(p, n, &untouched) == DT_ERANGE && !strcmp(untouched.name, "kept"),
        "a claim past the count is DT_ERANGE and leaves out alone");
  CHECK(!dt_plan_claim_object(p, n, 0, NULL), "no object past the count");
  const cJSON *ju = cJSON_GetObjectItemCaseSensitive(doc, "unschedulable");
  size_t nu = dt_plan_unschedulable_count(p);
  CHECK(nu == st.unschedulable && nu == (size_t)cJSON_GetArraySize(ju) && nu > 0, "unschedulable pods (%zu)", nu);
  dt_unschedulable_info u;
  bool huge = false;
  for (size_t i = 0; !dt_plan_unschedulable(p, i, &u); i++) {
    const cJSON *j = cJSON_GetArrayItem(ju, (int)i);
    CHECK(same_str(u.pod, jstr(j, "pod")) && same_str(u.reason, jstr(j, "reason")) && *u.reason,
          "unschedulable %zu is the JSON's", i);
    huge |= !strcmp(u.pod, "default/huge");
  }
  CHECK(huge, "the pod asking for 64 cpu is unschedulable");
  CHECK(dt_plan_unschedulable(p, nu, &u) == DT_ERANGE, "unschedulable past the count");
  CHECK(pods + dt_plan_binding_count(p) + nu == st.pods,
        "every pending pod is on a claim, bound or unschedulable (%zu + %zu + %zu of %zu)", pods,
        dt_plan_binding_count(p), nu, st.pods);
  cJSON_Delete(doc);
  /* the results live in the plan: the inputs may go first */
  dt_manifests_free(m);
  CHECK(dt_plan_claim(p, 0, &k) == 0 && k.name && strlen(k.name) > 0 && k.npods && strchr(k.pods[0], '/'),
        "claims outlive the manifests");
  dt_plan_free(p);
}

static void test_disrupt_results(const dt_catalog *c, const dt_manifests *m) {
  dt_error err = {0};
  dt_disrupt_opts o = {0};
  o.now = 1795341600;
  dt_disruption *d = NULL;
  CHECK(dt_disrupt_run(c, m, &o, &d, &err) == 0, "disrupt: %s", err.msg);
  if (!d) return;
  char *text = dt_disrupt_render(d, DT_FORMAT_JSON, NULL);
  cJSON *doc = cJSON_Parse(text);
  dt_free(text);
  dt_disrupt_stats st;
  dt_disrupt_stats_get(d, &st);
  const cJSON *jc = cJSON_GetObjectItemCaseSensitive(doc, "commands");
  size_t n = dt_disrupt_command_count(d), nodes = 0;
  CHECK(n > 0 && n == st.commands && n == (size_t)cJSON_GetArraySize(jc), "commands (%zu)", n);
  dt_command_info k;
  for (size_t i = 0; !dt_disrupt_command(d, i, &k); i++) {
    const cJSON *j = cJSON_GetArrayItem(jc, (int)i);
    CHECK(same_str(k.reason, jstr(j, "reason")) && same_str(k.action, jstr(j, "action")) &&
              (k.detail ? same_str(k.detail, jstr(j, "detail")) : !jstr(j, "detail")) &&
              same_price(cJSON_GetObjectItemCaseSensitive(j, "savings"), k.savings),
          "command %zu is the JSON's commands[%zu]", i, i);
    const cJSON *jn = cJSON_GetObjectItemCaseSensitive(j, "nodes");
    bool same = k.nnodes == (size_t)cJSON_GetArraySize(jn) && k.nnodes > 0;
    for (size_t q = 0; same && q < k.nnodes; q++) {
      const cJSON *x = cJSON_GetArrayItem(jn, (int)q);
      same = same_str(k.nodes[q].name, jstr(x, "name")) && same_str(k.nodes[q].nodepool, jstr(x, "nodePool")) &&
             (double)k.nodes[q].pods == cJSON_GetObjectItemCaseSensitive(x, "pods")->valuedouble;
    }
    CHECK(same, "command %zu's nodes", i);
    const cJSON *jr = cJSON_GetObjectItemCaseSensitive(j, "replacements");
    same =
        k.nreplacements == (size_t)cJSON_GetArraySize(jr) && !strcmp(k.action, k.nreplacements ? "replace" : "delete");
    for (size_t q = 0; same && q < k.nreplacements; q++) {
      const cJSON *x = cJSON_GetArrayItem(jr, (int)q);
      const dt_claim_info *r = &k.replacements[q];
      same = same_str(r->name, jstr(x, "name")) && same_str(r->instance_type, jstr(x, "instanceType")) &&
             same_strs(cJSON_GetObjectItemCaseSensitive(x, "pods"), r->pods, r->npods) && !r->nrequests &&
             !r->reservation_id;
    }
    CHECK(same, "command %zu's replacements", i);
    nodes += k.nnodes;
  }
  CHECK(nodes == st.disrupted, "the commands' nodes are the disrupted ones");
  CHECK(dt_disrupt_command(d, n, &k) == DT_ERANGE, "a command past the count");
  const cJSON *jb = cJSON_GetObjectItemCaseSensitive(doc, "blocked");
  size_t nb = dt_disrupt_blocked_count(d);
  CHECK(nb == st.blocked && nb == (size_t)cJSON_GetArraySize(jb) && nb + nodes == st.nodes,
        "every node is disrupted or blocked (%zu + %zu of %zu)", nodes, nb, st.nodes);
  dt_blocked_info b;
  for (size_t i = 0; !dt_disrupt_blocked(d, i, &b); i++) {
    const cJSON *j = cJSON_GetArrayItem(jb, (int)i);
    CHECK(same_str(b.node, jstr(j, "node")) && same_str(b.reason, jstr(j, "reason")), "blocked %zu is the JSON's", i);
  }
  CHECK(dt_disrupt_blocked(d, nb, &b) == DT_ERANGE, "blocked past the count");
  cJSON_Delete(doc);
  dt_disrupt_free(d);
}

static void test_pool_results(const dt_manifests *m) {
  static const char *const lists[] = {"create", "delete", "update", "heal", "detached", "waiting"};
  dt_error err = {0};
  dt_pool_opts o = {1795341600, 1, NULL};
  dt_pools *r = NULL;
  CHECK(dt_pools_run(m, &o, &r, &err) == 0, "pool: %s", err.msg);
  if (!r) return;
  char *text = dt_pools_render(r, DT_FORMAT_JSON, NULL);
  cJSON *doc = cJSON_Parse(text);
  dt_free(text);
  dt_pools_stats st;
  dt_pools_stats_get(r, &st);
  const cJSON *jp = cJSON_GetObjectItemCaseSensitive(doc, "pools");
  CHECK(dt_pools_pool_count(r) == st.pools && st.pools == 1 && cJSON_GetArraySize(jp) == 1, "one pool");
  dt_pool_info pi;
  size_t seen = 0, by_list[6] = {0};
  for (size_t k = 0; !dt_pools_pool(r, k, &pi); k++) {
    const cJSON *j = cJSON_GetArrayItem(jp, (int)k);
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "status");
    CHECK(same_str(pi.ns, jstr(j, "namespace")) && same_str(pi.name, jstr(j, "name")) && pi.replicas == 3 &&
              (double)pi.current == cJSON_GetObjectItemCaseSensitive(s, "current")->valuedouble &&
              (double)pi.max_unavailable == cJSON_GetObjectItemCaseSensitive(s, "maxUnavailable")->valuedouble,
          "pool %zu is the JSON's pools[%zu]", k, k);
    CHECK(pi.first_action == seen, "a pool's actions follow the previous pool's");
    /* each list of the JSON, in order, is the pool's actions of that list */
    int at[6] = {0};
    for (size_t i = pi.first_action; i < pi.first_action + pi.nactions; i++) {
      dt_pool_action_info a;
      CHECK(dt_pools_action(r, i, &a) == 0, "action %zu", i);
      const cJSON *x = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, lists[a.list]), at[a.list]++);
      CHECK(x && same_str(a.ns, pi.ns) && same_str(a.pool, pi.name) && same_str(a.reason, jstr(x, "reason")) &&
                (a.vm ? same_str(a.vm, jstr(x, "name")) && a.count == 1 : a.count > 1) &&
                (a.action ? same_str(a.action, jstr(x, "action")) : !jstr(x, "action")),
            "action %zu is the JSON's %s[%d]", i, lists[a.list], at[a.list] - 1);
      size_t len = 0;
      char *obj = dt_pools_action_object(r, i, &len);
      cJSON *o = obj ? cJSON_ParseWithLength(obj, len) : NULL;
      const cJSON *xo = cJSON_GetObjectItemCaseSensitive(x, "object");
      CHECK(a.list == DT_POOL_CREATE
                ? o && same_str("VirtualMachine", jstr(o, "kind")) &&
                      same_str(a.vm, jstr(cJSON_GetObjectItemCaseSensitive(o, "metadata"), "name")) &&
                      cJSON_Compare(o, xo, true)
                : (o != NULL) == (xo != NULL),
            "action %zu's object is the JSON's", i);
      cJSON_Delete(o);
      dt_free(obj);
      by_list[a.list]++;
    }
    for (int l = 0; l < 6; l++)
      CHECK(at[l] == cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, lists[l])), "every %s action", lists[l]);
    seen += pi.nactions;
  }
  CHECK(seen == dt_pools_action_count(r) && by_list[DT_POOL_CREATE] == st.create && by_list[DT_POOL_HEAL] == st.heal &&
            st.create > 0 && st.heal > 0,
        "the actions add up to the summary (%zu create, %zu heal)", st.create, st.heal);
  dt_pool_action_info a;
  CHECK(dt_pools_action(r, seen, &a) == DT_ERANGE && dt_pools_pool(r, 1, &pi) == DT_ERANGE &&
            !dt_pools_action_object(r, seen, NULL),
        "past the counts");
  cJSON_Delete(doc);
  dt_pools_free(r);
}

static void test_results(void) {
  dt_error err = {0};
  dt_catalog *c = NULL;
  dt_manifests *m = dt_manifests_new();
  CHECK(dt_catalog_load_buffer("catalog", k_catalog, strlen(k_catalog), &c, &err) == 0, "catalog: %s", err.msg);
  CHECK(m && dt_manifests_add_buffer(m, "manifests", k_manifests, strlen(k_manifests), &err) == 0, "manifests: %s",
        err.msg);
  if (c && m) {
    test_disrupt_results(c, m);
    test_pool_results(m);
    test_plan_results(c, m); /* frees m */
  } else {
    dt_manifests_free(m);
  }
  dt_catalog_free(c);
}

/* Every rendering of a plan and every claim's object, as text; NULL out of memory. */
static char *plan_texts(const dt_plan *p) {
  char *all = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&all, &len);
  for (int fmt = 0; f && fmt < 3; fmt++) {
    char *t = dt_plan_render(p, (dt_format)fmt, NULL);
    fprintf(f, "%s\n", t ? t : "(null)");
    dt_free(t);
  }
  for (size_t i = 0; f && i < dt_plan_claim_count(p); i++)
    for (int launched = 0; launched < 2; launched++) {
      char *t = dt_plan_claim_object(p, i, launched, NULL);
      fprintf(f, "%s\n", t ? t : "(null)");
      dt_free(t);
    }
  if (f) fclose(f);
  return all;
}

typedef struct sink {
  FILE *f;
  int calls, fail_at; /* fail_at: the call that fails (0: none) */
} sink;

static int sink_write(void *ud, const char *data, size_t len) {
  sink *k = ud;
  if (++k->calls == k->fail_at) return 1;
  return fwrite(data, 1, len, k->f) != len;
}

/* dt_plan_write hands out the bytes dt_plan_render returns, in pieces as a
** large plan renders (1,800 nodes and 3 unschedulable pods: every list
** spills), in each format; a sink that fails stops it with DT_EIO. */
static void test_plan_write(void) {
  enum { NPODS = 1803 };
  char *text = malloc(NPODS * 160 + 64);
  int len = 0;
  for (int i = 0; text && i < NPODS; i++)
    len += sprintf(text + len,
                   "---\napiVersion: v1\nkind: Pod\nmetadata: {name: w%d}\n"
                   "spec: {containers: [{name: c, resources: {requests: {cpu: '%s'}}}]}\n",
                   i, i < 1800 ? "1500m" : "100");
  dt_catalog *c = NULL;
  dt_manifests *m = dt_manifests_new();
  dt_plan *p = NULL;
  dt_plan_opts po = {0};
  int rc = !text || !m ? DT_ENOMEM : dt_catalog_load_buffer("cat", k_catalog, strlen(k_catalog), &c, NULL);
  if (!rc) rc = dt_manifests_add_buffer(m, "m", text, (size_t)len, NULL);
  if (!rc) rc = dt_plan_run(c, m, &po, &p, NULL);
  CHECK(rc == 0, "the 1,803-pod plan runs (%d)", rc);
  for (int fmt = 0; p && fmt < 3; fmt++) {
    size_t n = 0, wn = 0;
    char *want = dt_plan_render(p, (dt_format)fmt, &n), *got = NULL;
    sink k = {open_memstream(&got, &wn), 0, 0};
    int wrc = k.f ? dt_plan_write(p, (dt_format)fmt, sink_write, &k) : DT_ENOMEM;
    if (k.f) fclose(k.f);
    CHECK(wrc == 0 && want && got && wn == n && !memcmp(want, got, n),
          "format %d: dt_plan_write wrote the %zu bytes dt_plan_render returns (%d, %zu bytes)", fmt, n, wrc, wn);
    CHECK(fmt == 2 || k.calls > 1, "format %d: %zu bytes went out in %d pieces", fmt, n, k.calls);
    dt_free(want);
    free(got);
    got = NULL;
    k = (sink){open_memstream(&got, &wn), 0, 2};
    wrc = k.f ? dt_plan_write(p, (dt_format)fmt, sink_write, &k) : DT_ENOMEM;
    if (k.f) fclose(k.f);
    CHECK(fmt == 2 || (wrc == DT_EIO && k.calls == 2),
          "format %d: a sink failing at its second piece: %d after %d calls", fmt, wrc, k.calls);
    free(got);
  }
  CHECK(dt_plan_write(NULL, DT_FORMAT_JSON, sink_write, NULL) == DT_EINVAL, "no plan: DT_EINVAL");
  dt_plan_free(p);
  dt_manifests_free(m);
  dt_catalog_free(c);
  free(text);
}

/* A plan reads nothing of its catalog and manifests once dt_plan_run has
** returned: both may be freed first, and it renders the same. */
/* Requirements grow with labels, not with their square: a NodePool of
** 4,000 template labels and a pod selecting on all of them, a DaemonSet
** selecting on 150 (merged with the pool's for every type), and a pod
** anti-affinity selector of 100 values, planned with every byte the engine
** asks for counted. Adding each requirement by copying the set so far took
** gigabytes for such inputs. */
static size_t g_asked;
static void *count_malloc(size_t n) {
  g_asked += n;
  return malloc(n);
}
static void *count_realloc(void *p, size_t n) {
  g_asked += n;
  return realloc(p, n);
}

/* Plan text (named name; the bundled catalog, or the unit's with
** !bundled) with every byte the engine asks for counted into *asked;
** returns dt_plan_run's code (1 when the inputs do not load), its figures
** into *st. Consumes text (a dt_buf's). */
static int plan_counted(const char *name, dt_buf *text, bool bundled, dt_plan_stats *st, size_t *asked, dt_error *err) {
  dt_catalog *c = NULL;
  dt_manifests *m = dt_manifests_new();
  dt_plan *p = NULL;
  dt_plan_opts o = {0};
  o.now = 1795341600;
  memset(st, 0, sizeof *st);
  int rc = text->oom || !m ||
           (bundled ? dt_catalog_load_default(&c, err)
                    : dt_catalog_load_buffer("cat", k_catalog, strlen(k_catalog), &c, err)) ||
           dt_manifests_add_buffer(m, name, text->p, text->len, err);
  g_asked = 0;
  dt_set_allocator(count_malloc, count_realloc, free);
  if (!rc) rc = dt_plan_run(c, m, &o, &p, err);
  dt_set_allocator(NULL, NULL, NULL);
  *asked = g_asked;
  if (!rc && p) dt_plan_stats_get(p, st);
  dt_plan_free(p);
  dt_manifests_free(m);
  dt_catalog_free(c);
  dt__free(text->p);
  return rc;
}

static void test_many_labels(void) {
  dt_buf b = {0};
  dt__buf_puts(&b, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{\"apiVersion\":\"karpenter.sh/v1\","
                   "\"kind\":\"NodePool\",\"metadata\":{\"name\":\"default\"},\"spec\":{\"template\":{\"metadata\":"
                   "{\"labels\":{");
  for (int i = 0; i < 4000; i++) dt__buf_printf(&b, "%s\"l%d\":\"v%d\"", i ? "," : "", i, i);
  dt__buf_puts(&b,
               "}},\"spec\":{\"requirements\":[]}}}},{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":"
               "{\"name\":\"p\",\"namespace\":\"default\",\"labels\":{\"app\":\"a99\"}},\"spec\":{\"nodeSelector\":{");
  for (int i = 0; i < 4000; i++) dt__buf_printf(&b, "%s\"l%d\":\"v%d\"", i ? "," : "", i, i);
  dt__buf_puts(&b, "},\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
                   "\"topologyKey\":\"kubernetes.io/hostname\",\"labelSelector\":{\"matchExpressions\":[{\"key\":"
                   "\"app\",\"operator\":\"In\",\"values\":[");
  for (int i = 0; i < 100; i++) dt__buf_printf(&b, "%s\"a%d\"", i ? "," : "", i);
  dt__buf_puts(&b, "]}]}}]}},\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"100m\"}}}]}},"
                   "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"ds\",\"namespace\":"
                   "\"default\"},\"spec\":{\"template\":{\"spec\":{\"nodeSelector\":{");
  for (int i = 0; i < 150; i++) dt__buf_printf(&b, "%s\"l%d\":\"v%d\"", i ? "," : "", i, i);
  dt__buf_puts(&b, "},\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"10m\"}}}]}}}}]}");
  dt_error err = {0};
  dt_plan_stats st;
  size_t asked;
  int rc = plan_counted("labels.json", &b, false, &st, &asked, &err);
  CHECK(!rc && st.scheduled == 1, "4,000 labels: the pod is planned (%d: %s)", rc, err.msg);
  CHECK(asked < 64u << 20, "4,000 labels: the plan asked for %zu bytes in all", asked);
}

/* A pod tried on a claim keeps a merged copy of their requirements only
** when it narrows the claim: 20,000 replicas selecting on 5 of a
** NodePool's 100 labels on the bundled catalog, every byte asked for
** counted (97 MB in all; each try kept a copy of the pool's 100
** requirements: 195 MB). */
static void test_selector_replicas(void) {
  dt_buf b = {0};
  dt__buf_puts(&b, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{\"apiVersion\":\"karpenter.sh/v1\","
                   "\"kind\":\"NodePool\",\"metadata\":{\"name\":\"default\"},\"spec\":{\"template\":{\"metadata\":"
                   "{\"labels\":{");
  for (int i = 0; i < 100; i++) dt__buf_printf(&b, "%s\"l%d\":\"v%d\"", i ? "," : "", i, i);
  dt__buf_puts(&b, "}},\"spec\":{\"requirements\":[]}}}},{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
                   "\"metadata\":{\"name\":\"web\",\"namespace\":\"default\"},\"spec\":{\"replicas\":20000,"
                   "\"template\":{\"spec\":{\"nodeSelector\":{\"l1\":\"v1\",\"l2\":\"v2\",\"l3\":\"v3\","
                   "\"l4\":\"v4\",\"l5\":\"v5\"},\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
                   "{\"cpu\":\"100m\"}}}]}}}}]}");
  dt_error err = {0};
  dt_plan_stats st;
  size_t asked;
  int rc = plan_counted("replicas.json", &b, true, &st, &asked, &err);
  CHECK(!rc && st.scheduled == 20000, "20,000 selecting replicas: %zu planned (%d: %s)", st.scheduled, rc, err.msg);
  CHECK(asked < 128u << 20, "20,000 selecting replicas: the plan asked for %zu bytes in all", asked);
}

/* What selects what is found through an index of the pods' labels: 3,000
** workloads of one pod, each spread over hostnames by its own selector, are
** 3,000 label sets and 3,000 groups; matching every set against every group
** was 9 million matches (1 s; 30,000 such pods 9.7 s, 0.37 s now). */
static void test_topo_select_indexed(void) {
  dt_buf b = {0};
  dt__buf_puts(&b, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{\"apiVersion\":\"karpenter.sh/v1\","
                   "\"kind\":\"NodePool\",\"metadata\":{\"name\":\"default\"},\"spec\":{\"template\":{\"spec\":"
                   "{\"requirements\":[]}}}}");
  for (int i = 0; i < 3000; i++)
    dt__buf_printf(&b,
                   ",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p%d\",\"namespace\":\"default\","
                   "\"labels\":{\"app\":\"a%d\"}},\"spec\":{\"topologySpreadConstraints\":[{\"maxSkew\":1,"
                   "\"topologyKey\":\"kubernetes.io/hostname\",\"whenUnsatisfiable\":\"DoNotSchedule\","
                   "\"labelSelector\":{\"matchLabels\":{\"app\":\"a%d\"}}}],\"containers\":[{\"name\":\"c\","
                   "\"resources\":{\"requests\":{\"cpu\":\"100m\"}}}]}}",
                   i, i, i);
  dt__buf_puts(&b, "]}");
  dt_error err = {0};
  dt_plan_stats st;
  size_t asked;
  unsigned long long before = dt__topo_work();
  int rc = plan_counted("selectors.json", &b, true, &st, &asked, &err);
  unsigned long long work = dt__topo_work() - before;
  CHECK(!rc && st.scheduled == 3000, "3,000 selectors: %zu planned (%d: %s)", st.scheduled, rc, err.msg);
  CHECK(work < 100000, "3,000 selectors: %llu group lookups and matches", work);
}

/* A disruption pass's simulations find each term shape's groups once, and
** an owner's anti-affinity group through its pod's terms: 150 nodes of 4
** pods, each pod spread over zones and kept off its app's other pods'
** hosts (5 apps): 240 lookups; every simulation looking up every pod's
** groups again made 7,204 (3,000 such nodes: 13.6 s, 2.3 s now). */
static void test_disrupt_topo_work(void) {
  dt_buf b = {0};
  static const char *const zones[3] = {"us-east-1a", "us-east-1b", "us-east-1c"};
  dt__buf_puts(&b, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{\"apiVersion\":\"karpenter.sh/v1\","
                   "\"kind\":\"NodePool\",\"metadata\":{\"name\":\"default\"},\"spec\":{\"template\":{\"spec\":"
                   "{\"requirements\":[]}},\"disruption\":{\"consolidationPolicy\":\"WhenEmptyOrUnderutilized\"}}}");
  for (int n = 0; n < 150; n++) {
    dt__buf_printf(&b,
                   ",{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n%d\",\"creationTimestamp\":"
                   "\"2026-11-20T00:00:00Z\",\"labels\":{\"node.kubernetes.io/instance-type\":\"m5.2xlarge\","
                   "\"topology.kubernetes.io/zone\":\"%s\",\"karpenter.sh/capacity-type\":\"on-demand\","
                   "\"karpenter.sh/nodepool\":\"default\",\"kubernetes.io/hostname\":\"n%d\"}},\"spec\":{},"
                   "\"status\":{\"allocatable\":{\"cpu\":\"8\",\"memory\":\"32Gi\",\"pods\":\"110\"}}}",
                   n, zones[n % 3], n);
    for (int k = 0; k < 4; k++) {
      int app = (n * 4 + k) % 5;
      dt__buf_printf(&b,
                     ",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p%d-%d\",\"namespace\":"
                     "\"default\",\"labels\":{\"app\":\"a%d\"}},\"spec\":{\"nodeName\":\"n%d\","
                     "\"topologySpreadConstraints\":[{\"maxSkew\":50,\"topologyKey\":\"topology.kubernetes.io/zone\","
                     "\"whenUnsatisfiable\":\"DoNotSchedule\",\"labelSelector\":{\"matchLabels\":{\"app\":"
                     "\"a%d\"}}}],\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution"
                     "\":[{\"topologyKey\":\"kubernetes.io/hostname\",\"labelSelector\":{\"matchLabels\":{\"app\":"
                     "\"a%d\"}}}]}},\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":"
                     "\"500m\",\"memory\":\"1Gi\"}}}]},\"status\":{\"phase\":\"Running\"}}",
                     n, k, app, n, app, app);
    }
  }
  dt__buf_puts(&b, "]}");
  dt_error err = {0};
  dt_catalog *c = NULL;
  dt_manifests *m = dt_manifests_new();
  dt_disruption *d = NULL;
  int rc =
      b.oom || !m || dt_catalog_load_default(&c, &err) || dt_manifests_add_buffer(m, "terms.json", b.p, b.len, &err);
  dt_disrupt_opts o = {0};
  o.now = 1795341600;
  unsigned long long before = dt__topo_work();
  if (!rc) rc = dt_disrupt_run(c, m, &o, &d, &err);
  unsigned long long work = dt__topo_work() - before;
  dt_command_info ci;
  size_t ncmd = 0;
  while (!rc && !dt_disrupt_command(d, ncmd, &ci)) ncmd++;
  CHECK(!rc && ncmd > 0, "150 nodes with spread and anti-affinity: %zu commands (%d: %s)", ncmd, rc, err.msg);
  CHECK(work < 1500, "150 nodes with spread and anti-affinity: %llu group lookups and matches", work);
  dt_disrupt_free(d);
  dt_manifests_free(m);
  dt_catalog_free(c);
  dt__free(b.p);
}

/* A plan needs only which VMs a VirtualMachinePool creates, not their
** objects: 250 VMs of 400 DataVolumes each, every byte asked for counted
** (the VMs' objects and the PoolActions document took 360 MiB). */
static void test_pool_vms_lean(void) {
  dt_buf b = {0};
  dt__buf_puts(&b, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{\"apiVersion\":\"karpenter.sh/v1\","
                   "\"kind\":\"NodePool\",\"metadata\":{\"name\":\"vms\"},\"spec\":{\"template\":{\"spec\":"
                   "{\"requirements\":[]}}}},{\"apiVersion\":\"pool.kubevirt.io/v1beta1\",\"kind\":"
                   "\"VirtualMachinePool\",\"metadata\":{\"name\":\"web\",\"namespace\":\"default\"},\"spec\":"
                   "{\"replicas\":250,\"selector\":{\"matchLabels\":{\"app\":\"web\"}},\"virtualMachineTemplate\":"
                   "{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":{\"runStrategy\":\"Always\","
                   "\"dataVolumeTemplates\":[");
  for (int i = 0; i < 400; i++)
    dt__buf_printf(&b,
                   "%s{\"metadata\":{\"name\":\"d%d\"},\"spec\":{\"storage\":{\"resources\":{\"requests\":"
                   "{\"storage\":\"1Gi\"}}},\"sourceRef\":{\"kind\":\"DataSource\",\"name\":\"fedora\"}}}",
                   i ? "," : "", i);
  dt__buf_puts(&b, "],\"template\":{\"spec\":{\"domain\":{\"cpu\":{\"cores\":1},\"memory\":{\"guest\":\"1Gi\"}},"
                   "\"volumes\":[]}}}}}}]}");
  dt_error err = {0};
  dt_plan_stats st;
  size_t asked;
  int rc = plan_counted("pool.json", &b, false, &st, &asked, &err);
  CHECK(!rc && st.pods == 250, "a pool of 250 VMs: %zu launcher pods (%d: %s)", st.pods, rc, err.msg);
  CHECK(asked < 32u << 20, "a pool of 250 VMs of 400 volumes: the plan asked for %zu bytes in all", asked);
}

static void test_plan_outlives_inputs(void) {
  dt_error err = {0};
  dt_catalog *c = NULL;
  dt_manifests *m = dt_manifests_new();
  dt_plan *p = NULL;
  dt_plan_opts o = {0};
  o.now = 1795341600;
  if (dt_catalog_load_buffer("cat", k_catalog, strlen(k_catalog), &c, &err) || !m ||
      dt_manifests_add_buffer(m, "m", k_manifests, strlen(k_manifests), &err) || dt_plan_run(c, m, &o, &p, &err)) {
    CHECK(0, "the plan runs: %s", err.msg);
    dt_manifests_free(m);
    dt_catalog_free(c);
    return;
  }
  char *before = plan_texts(p);
  dt_manifests_free(m);
  dt_catalog_free(c);
  char *after = plan_texts(p);
  CHECK(before && after && strstr(before, "kind: NodeClaim") && strstr(before, "team: a") && !strcmp(before, after),
        "a plan renders the same after its catalog and manifests are freed");
  free(before);
  free(after);
  dt_plan_free(p);
}

static void test_sym(void) {
  dt_symtab t = {0};
  enum { N = 20000 };
  static const char *at[N];
  char buf[64];
  bool ok = true;
  for (int i = 0; i < N && ok; i++) {
    snprintf(buf, sizeof buf, "name-%d", i);
    dt_sym s = dt__sym(&t, buf);
    ok = s == (dt_sym)i + 1 && dt__sym(&t, buf) == s;
    at[i] = dt__sym_str(&t, s);
  }
  CHECK(ok, "symbols are numbered in order and found again");
  size_t big = (2u << 20) + 17; /* longer than the largest block */
  char *long_s = malloc(big + 1);
  memset(long_s, 'x', big);
  long_s[big] = 0;
  dt_sym ls = dt__sym(&t, long_s);
  CHECK(ls == N + 1 && !strcmp(dt__sym_str(&t, ls), long_s) && dt__sym(&t, "after") == N + 2,
        "a string longer than a block is kept whole");
  for (int i = 0; i < N && ok; i++) {
    snprintf(buf, sizeof buf, "name-%d", i);
    ok = dt__sym_str(&t, (dt_sym)i + 1) == at[i] && !strcmp(at[i], buf) && dt__sym_find(&t, buf) == (dt_sym)i + 1;
  }
  CHECK(ok, "every string stays where it was put while the table grew");
  CHECK(dt__sym(&t, "") == dt__sym(&t, "") && dt__sym_str(&t, 0)[0] == 0 && dt__symn(&t, "ab", 1) == dt__sym(&t, "a"),
        "the empty string and a prefix by length");
  dt_symtab c;
  CHECK(dt__symtab_clone(&c, &t) == 0 && dt__sym_str(&c, 5) == dt__sym_str(&t, 5),
        "a clone reads its source's strings");
  dt_sym own = dt__sym(&c, "only-in-the-clone");
  CHECK(own == t.n && !dt__sym_find(&t, "only-in-the-clone") && !strcmp(dt__sym_str(&c, own), "only-in-the-clone"),
        "a clone's own strings are its own");
  dt__symtab_free(&c);
  CHECK(!strcmp(dt__sym_str(&t, ls), long_s), "freeing a clone leaves its source's strings");
  dt__symtab_free(&t);
  free(long_s);
}

/* Deleting from a name map keeps every other key findable: random puts and
** deletes against a plain array, through growth and long probe runs. */
static void test_namemap_del(void) {
  enum { K = 3000 };
  static char names[K][16];
  static bool in[K];
  dt_namemap m = {0};
  bool ok = true;
  uint32_t x = 12345;
  for (int i = 0; i < K; i++) snprintf(names[i], sizeof names[i], "i-%d", i);
  for (int step = 0; step < 200000 && ok; step++) {
    x = x * 1103515245u + 12345u;
    int k = (int)((x >> 8) % K);
    bool added;
    if ((x >> 4) & 1) {
      int32_t *v = dt__namemap_put(&m, names[k], strlen(names[k]), k, &added);
      ok = v && *v == k && added == !in[k];
      in[k] = true;
    } else {
      ok = dt__namemap_del(&m, names[k], strlen(names[k])) == in[k];
      in[k] = false;
    }
    if (step % 997 == 0) {
      uint32_t n = 0;
      for (int j = 0; j < K && ok; j++) {
        n += in[j];
        ok = dt__namemap_get(&m, names[j], strlen(names[j]), -1) == (in[j] ? j : -1);
      }
      ok = ok && n == m.n;
    }
  }
  CHECK(ok, "a name map finds every key it holds, and none it let go, through 200,000 puts and deletes");
  dt__namemap_free(&m);
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "screen")) { /* one test alone, while working on it */
    test_screen();
    printf("unit: %d passed, %d failed\n", passed, failed);
    return failed != 0;
  }
  test_api();
  test_sym();
  test_namemap_del();
  test_results();
  test_plan_outlives_inputs();
  test_many_labels();
  test_pool_vms_lean();
  test_selector_replicas();
  test_topo_select_indexed();
  test_disrupt_topo_work();
  test_plan_write();
  test_lp();
  test_lp_degenerate();
  test_cost_packing_work();
  test_queue_order();
  test_overlay();
  test_screen();
  CHECK(!strcmp(dt_strerror(DT_ENOMEM), "out of memory") && !strcmp(dt_strerror(12345), "unknown error"),
        "dt_strerror");
  test_oom(1, 0);
  test_oom(0, 0);
  test_oom(1, 1);
  test_oom(0, 1);
  test_oom_many_shapes();
  printf("unit: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
