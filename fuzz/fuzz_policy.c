/* Policies: any text as a policy (load, selftest, every hook on the golden
** input), then a plan and a disruption pass that call its hooks on a fixed
** cluster. Budgets are small so a slow input is a finding, not a stall. */
#include "internal.h"

#include <stdlib.h>

static const char k_cluster[] =
    "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\nspec: {template: {spec: {}}}\n---\n"
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  creationTimestamp: \"2026-11-20T00:00:00Z\"\n  labels:\n"
    "    node.kubernetes.io/instance-type: small\n    topology.kubernetes.io/zone: test-1a\n"
    "    karpenter.sh/capacity-type: on-demand\n    karpenter.sh/nodepool: default\n---\n"
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 3\n  template:\n    spec:\n"
    "      containers: [{name: c, resources: {requests: {cpu: 500m, memory: 1Gi}}}]\n";
static const char k_catalog[] =
    "{\"zones\":[\"test-1a\",\"test-1b\"],\"instanceTypes\":["
    "{\"name\":\"small\",\"cpu\":2,\"memoryMiB\":4096,\"onDemandPrice\":0.1,\"spotPrice\":0.04},"
    "{\"name\":\"large\",\"cpu\":8,\"memoryMiB\":16384,\"onDemandPrice\":0.4}]}";

static dt_catalog *cat;
static dt_manifests *m;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dt_error err;
  if (!cat) {
    m = dt_manifests_new();
    if (dt_catalog_load_buffer("catalog", k_catalog, sizeof k_catalog - 1, &cat, &err) ||
        dt_manifests_add_buffer(m, "cluster", k_cluster, sizeof k_cluster - 1, &err))
      abort();
  }
  dt_policy_limits lim = {8u << 20, 2000000, 200, 5};
  dt_policy *pol = NULL;
  if (dt_policy_load_buffer("fuzz.lua", (const char *)data, size, &lim, &pol, &err) == 0) {
    dt_plan_opts o = {0};
    o.now = 1795435200;
    o.policy = pol;
    dt_plan *p = NULL;
    if (dt_plan_run(cat, m, &o, &p, &err) == 0) dt_free(dt_plan_render(p, DT_FORMAT_JSON, NULL));
    dt_plan_free(p);
    dt_disrupt_opts d = {0};
    d.now = o.now;
    d.policy = pol;
    dt_disruption *r = NULL;
    if (dt_disrupt_run(cat, m, &d, &r, &err) == 0) dt_free(dt_disrupt_render(r, DT_FORMAT_YAML, NULL));
    dt_disrupt_free(r);
    dt_policy_free(pol);
  }
  return 0;
}
