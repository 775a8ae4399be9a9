/*
** disrupt_out.c: a disruption pass's result read and written. The pass
** (disrupt.c) leaves its decisions as plain structs in the result's arena
** (result.h); the accessors hand them out, the table is printed from them,
** and the Disruption document, built from them once the pass is done, is
** what the JSON and YAML renderings write (through dt__doc_write) and what
** the Lua module's tables are made from. Rendering only reads: the same
** result renders byte-identically every time.
*/
#include "result.h"

#include <string.h>

static cJSON *node_doc(const dt_disrupt_node_info *d) {
  cJSON *o = cJSON_CreateObject();
  dt__json_put_str(o, "name", d->name);
  dt__json_put_str(o, "nodePool", d->nodepool);
  if (d->instance_type) dt__json_put_str(o, "instanceType", d->instance_type);
  if (d->zone) dt__json_put_str(o, "zone", d->zone);
  if (d->capacity_type) dt__json_put_str(o, "capacityType", d->capacity_type);
  dt__json_put_price(o, "price", d->price);
  dt__json_put_num(o, "pods", (double)d->pods);
  return o;
}

static cJSON *command_doc(const dt_command_info *c) {
  cJSON *o = cJSON_CreateObject();
  dt__json_put_str(o, "reason", c->reason);
  dt__json_put_str(o, "action", c->action);
  cJSON *jn = dt__json_put(o, "nodes", cJSON_CreateArray());
  for (size_t k = 0; k < c->nnodes; k++) dt__json_put(jn, NULL, node_doc(&c->nodes[k]));
  cJSON *jr = dt__json_put(o, "replacements", cJSON_CreateArray());
  for (size_t k = 0; k < c->nreplacements; k++) dt__json_put(jr, NULL, dt__claim_doc(&c->replacements[k], true));
  dt__json_put_price(o, "savings", c->savings);
  if (c->detail) dt__json_put_str(o, "detail", c->detail);
  return o;
}

static void budgets_doc(const dt_disruption *d, cJSON *root) {
  cJSON *jb = dt__json_put(root, "budgets", cJSON_CreateArray());
  for (size_t i = 0; i < d->budgets.n; i++) {
    const dt_budget_rec *b = &d->budgets.v[i];
    cJSON *e = dt__json_put(jb, NULL, cJSON_CreateObject());
    dt__json_put_str(e, "nodePool", b->nodepool);
    dt__json_put_str(e, "reason", b->reason);
    if (b->allowed < 0)
      dt__json_put_str(e, "allowed", "unlimited");
    else
      dt__json_put_num(e, "allowed", (double)b->allowed);
    dt__json_put_num(e, "nodes", (double)b->nodes);
    dt__json_put_num(e, "disrupting", (double)b->disrupting);
  }
}

int dt__disrupt_doc_build(dt_disruption *d, int64_t now) {
  dt__init();
  dt__alloc_failed(1);
  cJSON *root = d->root = cJSON_CreateObject();
  dt__json_put_str(root, "apiVersion", "dovetail.dev/v1alpha1");
  dt__json_put_str(root, "kind", "Disruption");
  char tmp[40];
  dt__fmt_time(now, tmp, sizeof tmp);
  dt__json_put_str(root, "now", tmp);
  cJSON *cs = dt__json_put(root, "commands", cJSON_CreateArray());
  for (size_t i = 0; i < d->commands.n; i++) dt__json_put(cs, NULL, command_doc(&d->commands.v[i]));
  if (d->has_budgets) budgets_doc(d, root);
  cJSON *bl = dt__json_put(root, "blocked", cJSON_CreateArray());
  for (size_t i = 0; i < d->blocked.n; i++) {
    cJSON *b = dt__json_put(bl, NULL, cJSON_CreateObject());
    dt__json_put_str(b, "node", d->blocked.v[i].node);
    dt__json_put_str(b, "reason", d->blocked.v[i].reason);
  }
  if (d->explain_node) {
    cJSON *e = dt__json_put(root, "explain", cJSON_CreateObject());
    dt__json_put_str(e, "node", d->explain_node);
    dt__json_put_strs(e, "steps", d->explain.v, d->explain.n);
  }
  if (d->notes.n) dt__json_put_strs(root, "notes", d->notes.v, d->notes.n);
  if (d->has_policy_errors) dt__json_put_policy_errors(root, d->policy_errors.v, d->policy_errors.n);
  const dt_disrupt_stats *st = &d->stats;
  cJSON *sum = dt__json_put(root, "summary", cJSON_CreateObject());
  dt__json_put_num(sum, "nodes", (double)st->nodes);
  dt__json_put_num(sum, "commands", (double)st->commands);
  dt__json_put_num(sum, "disrupted", (double)st->disrupted);
  dt__json_put_num(sum, "blocked", (double)st->blocked);
  dt__json_put_price(sum, "savings", st->savings);
  dt__json_put_num(sum, "simulations", (double)st->simulations);
  dt__json_put_num(sum, "screened", (double)st->screened);
  return dt__alloc_failed(1) ? DT_ENOMEM : 0;
}

static void render_table(const dt_disruption *d, dt_buf *b) {
  char tmp[64];
  for (size_t i = 0; i < d->commands.n; i++) {
    const dt_command_info *c = &d->commands.v[i];
    dt__buf_printf(b, "%-13s %-8s", c->reason, c->action);
    for (size_t k = 0; k < c->nnodes; k++) dt__buf_printf(b, " %s", c->nodes[k].name);
    for (size_t k = 0; k < c->nreplacements; k++)
      dt__buf_printf(b, " -> %s %s", c->replacements[k].instance_type, c->replacements[k].capacity_type);
    dt__fmt_price(tmp, sizeof tmp, c->savings);
    dt__buf_printf(b, "  saves $%s/h\n", tmp);
  }
  for (size_t i = 0; i < d->blocked.n; i++)
    dt__buf_printf(b, "left alone    %s: %s\n", d->blocked.v[i].node, d->blocked.v[i].reason);
  for (size_t i = 0; i < d->explain.n; i++) dt__buf_printf(b, "explain: %s\n", d->explain.v[i]);
  for (size_t i = 0; i < d->notes.n; i++) dt__buf_printf(b, "note: %s\n", d->notes.v[i]);
  const dt_disrupt_stats *s = &d->stats;
  dt__buf_printf(b, "%zu command%s, %zu of %zu nodes disrupted, saves $%.4f/hour\n", s->commands,
                 s->commands == 1 ? "" : "s", s->disrupted, s->nodes, s->savings);
}

char *dt_disrupt_render(const dt_disruption *d, dt_format format, size_t *len) {
  dt_buf b = {0};
  dt__init();
  if (format == DT_FORMAT_TABLE)
    render_table(d, &b);
  else
    dt__doc_write(d->root, format, &b);
  return dt__buf_take(&b, len);
}

void dt_disrupt_stats_get(const dt_disruption *d, dt_disrupt_stats *out) { *out = d->stats; }

size_t dt_disrupt_command_count(const dt_disruption *d) { return d->commands.n; }

int dt_disrupt_command(const dt_disruption *d, size_t i, dt_command_info *out) {
  if (i >= d->commands.n) return DT_ERANGE;
  *out = d->commands.v[i];
  return 0;
}

size_t dt_disrupt_blocked_count(const dt_disruption *d) { return d->blocked.n; }

int dt_disrupt_blocked(const dt_disruption *d, size_t i, dt_blocked_info *out) {
  if (i >= d->blocked.n) return DT_ERANGE;
  *out = d->blocked.v[i];
  return 0;
}

void dt_disrupt_free(dt_disruption *d) {
  if (!d) return;
  cJSON_Delete(d->root);
  dt__free(d->commands.v);
  dt__free(d->blocked.v);
  dt__free(d->budgets.v);
  dt__free(d->explain.v);
  dt__free(d->notes.v);
  dt__symtab_free(&d->notes_seen);
  dt__free(d->policy_errors.v);
  dt__arena_free(&d->arena);
  dt__free(d);
}

const cJSON *dt__disrupt_doc(const dt_disruption *d) { return d->root; }
