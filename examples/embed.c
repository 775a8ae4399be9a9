/*
** embed.c: libdovetail from C. Plans examples/quickstart.yaml on the bundled
** catalog and prints the figures, each new claim and unschedulable pod as
** the plan's accessors give them, and the NodeClaims to apply.
**
**   cc examples/embed.c $(pkg-config --cflags --libs dovetail) -o embed   (installed)
**   make examples/embed && ./examples/embed                                 (in the tree)
*/
#include <dovetail.h>
#include <stdio.h>

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "examples/quickstart.yaml";
  dt_error err = {0};
  dt_catalog *catalog = NULL;
  dt_manifests *m = NULL;
  dt_plan *plan = NULL;
  int rc = 1;
  if (dt_catalog_load_default(&catalog, &err)) goto out;
  if (!(m = dt_manifests_new())) goto out;
  if (dt_manifests_add_file(m, path, &err)) goto out;
  dt_plan_opts opts = {.now = 0, .seed = 0};
  if (dt_plan_run(catalog, m, &opts, &plan, &err)) goto out;
  dt_plan_stats st;
  dt_plan_stats_get(plan, &st);
  printf("%zu pods: %zu scheduled on %zu new node%s for $%.4f/hour, %zu unschedulable\n", st.pods, st.scheduled,
         st.nodes, st.nodes == 1 ? "" : "s", st.hourly_cost, st.unschedulable);
  /* The decisions, read as sqlite3_column_* reads a row: the strings belong
  ** to the plan and live until dt_plan_free. */
  dt_claim_info c;
  for (size_t i = 0; dt_plan_claim(plan, i, &c) == 0; i++)
    printf("claim %s: %s in %s (%s, $%g/hour) for %zu pods of NodePool %s\n", c.name, c.instance_type, c.zone,
           c.capacity_type, c.price, c.npods, c.nodepool);
  dt_unschedulable_info u;
  for (size_t i = 0; dt_plan_unschedulable(plan, i, &u) == 0; i++) printf("unschedulable %s: %s\n", u.pod, u.reason);
  char *yaml = dt_plan_render(plan, DT_FORMAT_YAML, NULL);
  if (yaml) fputs(yaml, stdout);
  dt_free(yaml);
  rc = 0;
out:
  if (rc) fprintf(stderr, "embed: %s\n", err.msg[0] ? err.msg : "out of memory");
  dt_plan_free(plan);
  dt_manifests_free(m);
  dt_catalog_free(catalog);
  return rc;
}
