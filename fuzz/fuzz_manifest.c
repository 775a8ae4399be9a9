/* Manifests (YAML and JSON) through the reader, a plan on a small catalog,
** a disruption pass and a pool run, every render of each, and the objects
** to apply (each claim's NodeClaim, planned and launched; each VM). */
#include "internal.h"

#include <stdlib.h>

static const char k_catalog[] =
    "{\"region\":\"test-1\",\"provider\":\"generic\",\"zones\":[\"test-1a\",\"test-1b\"],\"instanceTypes\":["
    "{\"name\":\"small\",\"family\":\"t\",\"cpu\":2,\"memoryMiB\":4096,\"maxPods\":10,\"onDemandPrice\":0.1,"
    "\"spotPrice\":0.04},"
    "{\"name\":\"large\",\"family\":\"t\",\"cpu\":8,\"memoryMiB\":16384,\"maxPods\":40,\"onDemandPrice\":0.4,"
    "\"gpu\":1,\"gpuName\":\"t4\"}],"
    "\"reservations\":[{\"id\":\"cr-1\",\"instanceType\":\"small\",\"zone\":\"test-1a\",\"count\":1}]}";

static dt_catalog *cat;

static void render_all(char *(*render)(const void *, dt_format, size_t *), const void *r) {
  for (int f = DT_FORMAT_JSON; f <= DT_FORMAT_TABLE; f++) dt_free(render(r, (dt_format)f, NULL));
}

static char *plan_render(const void *p, dt_format f, size_t *n) { return dt_plan_render(p, f, n); }
static char *disrupt_render(const void *p, dt_format f, size_t *n) { return dt_disrupt_render(p, f, n); }
static char *pools_render(const void *p, dt_format f, size_t *n) { return dt_pools_render(p, f, n); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dt_error err;
  if (!cat && dt_catalog_load_buffer("catalog", k_catalog, sizeof k_catalog - 1, &cat, &err)) abort();
  dt_manifests *m = dt_manifests_new();
  if (!m) return 0;
  if (dt_manifests_add_buffer(m, "fuzz", (const char *)data, size, &err) == 0) {
    dt_plan_opts o = {0};
    o.now = 1795435200;
    dt_plan *p = NULL;
    if (dt_plan_run(cat, m, &o, &p, &err) == 0) {
      render_all(plan_render, p);
      for (size_t i = 0; i < dt_plan_claim_count(p); i++)
        for (int launched = 0; launched < 2; launched++) dt_free(dt_plan_claim_object(p, i, launched, NULL));
    }
    dt_plan_free(p);
    dt_disrupt_opts d = {0};
    d.now = o.now;
    dt_disruption *r = NULL;
    if (dt_disrupt_run(cat, m, &d, &r, &err) == 0) render_all(disrupt_render, r);
    dt_disrupt_free(r);
    dt_pool_opts po = {0};
    po.now = o.now;
    dt_pools *pl = NULL;
    if (dt_pools_run(m, &po, &pl, &err) == 0) {
      render_all(pools_render, pl);
      for (size_t i = 0; i < dt_pools_action_count(pl); i++) dt_free(dt_pools_action_object(pl, i, NULL));
    }
    dt_pools_free(pl);
  }
  dt_manifests_free(m);
  return 0;
}
