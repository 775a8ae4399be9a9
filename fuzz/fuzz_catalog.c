/* Catalogs: any bytes to the catalog reader, and a plan on what it reads. */
#include "internal.h"

static const char k_pods[] =
    "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\nspec: {template: {spec: {}}}\n---\n"
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 5\n  template:\n    spec:\n"
    "      containers: [{name: c, resources: {requests: {cpu: 500m, memory: 1Gi}}}]\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dt_error err;
  dt_catalog *c = NULL;
  if (dt_catalog_load_buffer("fuzz", (const char *)data, size, &c, &err) == 0) {
    dt_manifests *m = dt_manifests_new();
    if (m && dt_manifests_add_buffer(m, "pods", k_pods, sizeof k_pods - 1, &err) == 0) {
      dt_plan_opts o = {0};
      dt_plan *p = NULL;
      if (dt_plan_run(c, m, &o, &p, &err) == 0) dt_free(dt_plan_render(p, DT_FORMAT_YAML, NULL));
      dt_plan_free(p);
    }
    dt_manifests_free(m);
  }
  dt_catalog_free(c);
  return 0;
}
