/*
** plan.c: rendering a plan as JSON (for tools), YAML (applyable NodeClaims)
** or a table (for people). Rendering only reads the plan; the same plan
** renders byte-identically every time.
*/
#include "schedule.h"

#include "../lua/policy.h"

#include <string.h>


static const rt_off *claim_off(const dt_plan *p, const rt_claim *k) {
  return &p->types[k->type].off[k->off];
}

static void json_requests(const dt_plan *p, dt_buf *b, const int64_t *v, const char *indent) {
  dt__buf_puts(b, "{");
  int first = 1;
  for (uint32_t r = 0; r < p->nres; r++) {
    if (!v[r]) continue;
    char q[64];
    dt__fmt_quantity(q, sizeof q, p->res_names[r], v[r]);
    dt__buf_printf(b, "%s\n%s  ", first ? "" : ",", indent);
    dt__buf_json_str(b, p->res_names[r]);
    dt__buf_puts(b, ": ");
    dt__buf_json_str(b, q);
    first = 0;
  }
  dt__buf_printf(b, "%s}", first ? "" : "\n      ");
}

static void render_json(const dt_plan *p, dt_buf *b) {
  char tmp[700], price[64];
  dt__fmt_time(p->opts.now ? p->opts.now : 946684800, tmp, sizeof tmp);
  dt__buf_printf(b, "{\n  \"apiVersion\": \"dovetail.dev/v1alpha1\",\n  \"kind\": \"Plan\",\n  \"now\": \"%s\",\n", tmp);
  dt__buf_puts(b, "  \"nodeClaims\": [");
  int first = 1;
  for (size_t i = 0; i < p->claims.n; i++) {
    const rt_claim *k = p->claims.v[i];
    if (k->type < 0) continue;
    const rt_type *t = &p->types[k->type];
    const rt_off *o = claim_off(p, k);
    dt__buf_puts(b, first ? "\n    {\n" : ",\n    {\n");
    first = 0;
    dt__buf_puts(b, "      \"name\": ");
    dt__buf_json_str(b, dt__sym_str(&p->syms, k->name));
    dt__buf_puts(b, ",\n      \"nodePool\": ");
    dt__buf_json_str(b, p->pools[k->pool].src->name);
    dt__buf_puts(b, ",\n      \"instanceType\": ");
    dt__buf_json_str(b, t->src->name);
    dt__buf_puts(b, ",\n      \"zone\": ");
    dt__buf_json_str(b, dt__sym_str(&p->syms, p->zones[o->zone]));
    dt__buf_printf(b, ",\n      \"capacityType\": \"%s\"", dt__ct_names[o->ct]);
    dt__fmt_price(price, sizeof price, o->price);
    dt__buf_printf(b, ",\n      \"price\": %s", price);
    if (o->resv) {
      dt__buf_puts(b, ",\n      \"reservationID\": ");
      dt__buf_json_str(b, dt__sym_str(&p->syms, o->resv));
    }
    dt__buf_puts(b, ",\n      \"requests\": ");
    json_requests(p, b, k->used, "      ");
    dt__buf_puts(b, ",\n      \"pods\": [");
    for (size_t j = 0; j < k->pods.n; j++) {
      dt__pod_name(p, &p->pods[k->pods.v[j]], tmp, sizeof tmp);
      dt__buf_puts(b, j ? ", " : "");
      dt__buf_json_str(b, tmp);
    }
    dt__buf_puts(b, "],\n      \"instanceTypeOptions\": [");
    for (uint32_t j = 0; j < k->nfinal; j++) {
      dt__buf_puts(b, j ? ", " : "");
      dt__buf_json_str(b, p->types[k->final[j]].src->name);
    }
    dt__buf_puts(b, "]\n    }");
  }
  dt__buf_puts(b, first ? "],\n" : "\n  ],\n");
  dt__buf_puts(b, "  \"bindings\": [");
  for (size_t i = 0; i < p->bindings.n; i++) {
    const rt_binding *bd = &p->bindings.v[i];
    dt__pod_name(p, &p->pods[bd->pod], tmp, sizeof tmp);
    dt__buf_puts(b, i ? ",\n    {\"pod\": " : "\n    {\"pod\": ");
    dt__buf_json_str(b, tmp);
    dt__buf_puts(b, ", \"node\": ");
    dt__buf_json_str(b, p->nodes[bd->node].src->name);
    dt__buf_puts(b, "}");
  }
  dt__buf_puts(b, p->bindings.n ? "\n  ],\n" : "],\n");
  dt__buf_puts(b, "  \"unschedulable\": [");
  for (size_t i = 0; i < p->unsched.n; i++) {
    const rt_unsched *u = &p->unsched.v[i];
    dt__pod_name(p, &p->pods[u->pod], tmp, sizeof tmp);
    dt__buf_puts(b, i ? ",\n    {\"pod\": " : "\n    {\"pod\": ");
    dt__buf_json_str(b, tmp);
    dt__buf_puts(b, ", \"reason\": ");
    dt__buf_json_str(b, u->reason);
    dt__buf_puts(b, "}");
  }
  dt__buf_puts(b, p->unsched.n ? "\n  ],\n" : "],\n");
  dt__buf_puts(b, "  \"unavailableOfferings\": [");
  for (size_t i = 0; i < p->marks.n; i++) {
    const dt_mark *mk = &p->manifests->marks.v[p->marks.v[i]];
    dt__fmt_time(mk->expires, tmp, sizeof tmp);
    dt__buf_printf(b, "%s{\"capacityType\": \"%s\", \"instanceType\": ", i ? ",\n    " : "\n    ", dt__ct_names[mk->ct]);
    dt__buf_json_str(b, mk->instance_type);
    dt__buf_puts(b, ", \"zone\": ");
    dt__buf_json_str(b, mk->zone);
    dt__buf_printf(b, ", \"expiresAt\": \"%s\"}", tmp);
  }
  dt__buf_puts(b, p->marks.n ? "\n  ],\n" : "],\n");
  dt__buf_puts(b, "  \"policyErrors\": [");
  size_t nerr = 0;
  for (size_t i = 0; i < p->policies.n; i++) {
    const dt_policy_err *e;
    size_t n = dt__policy_errors(p->policies.v[i], &e);
    for (size_t k = 0; k < n; k++, nerr++) {
      dt__buf_puts(b, nerr ? ",\n    {\"policy\": " : "\n    {\"policy\": ");
      dt__buf_json_str(b, dt__policy_name(p->policies.v[i]));
      dt__buf_printf(b, ", \"hook\": \"%s\", \"count\": %zu, \"disabled\": %s, \"error\": ", e[k].hook, e[k].count,
                     e[k].disabled ? "true" : "false");
      dt__buf_json_str(b, e[k].message);
      dt__buf_puts(b, "}");
    }
  }
  dt__buf_puts(b, nerr ? "\n  ],\n" : "],\n");
  dt__buf_puts(b, "  \"notes\": [");
  for (size_t i = 0; i < p->notes.n; i++) {
    dt__buf_puts(b, i ? ",\n    " : "\n    ");
    dt__buf_json_str(b, p->notes.v[i]);
  }
  dt__buf_puts(b, p->notes.n ? "\n  ],\n" : "],\n");
  /* Summary. */
  size_t by_ct[DT_CT_N] = {0};
  for (size_t i = 0; i < p->claims.n; i++)
    if (p->claims.v[i]->type >= 0) by_ct[claim_off(p, p->claims.v[i])->ct]++;
  dt__fmt_price(price, sizeof price, p->stats.hourly_cost);
  dt__buf_printf(b,
                 "  \"summary\": {\n    \"pods\": %zu,\n    \"scheduled\": %zu,\n    \"unschedulable\": %zu,\n"
                 "    \"alreadyBound\": %zu,\n    \"nodes\": %zu,\n    \"existingNodes\": %u,\n"
                 "    \"hourlyCost\": %s,\n    \"nodesByCapacityType\": {\"on-demand\": %zu, \"spot\": %zu, "
                 "\"reserved\": %zu}",
                 p->stats.pods, p->stats.scheduled, p->stats.unschedulable, p->bound_already, p->stats.nodes,
                 p->nnodes, price, by_ct[DT_CT_ON_DEMAND], by_ct[DT_CT_SPOT], by_ct[DT_CT_RESERVED]);
  if (p->opts.timings)
    dt__buf_printf(b, ",\n    \"timings\": {\"parseMs\": %.3f, \"scheduleMs\": %.3f}", p->opts.parse_ms,
                   p->stats.schedule_ms);
  dt__buf_puts(b, "\n  }\n}\n");
}

/* ------------------------------------------------------------- YAML */


static cJSON *add_obj(cJSON *parent, const char *key) {
  return dt__json_put(parent, key, cJSON_CreateObject());
}

static void add_req(cJSON *arr, const char *key, const char *val) {
  cJSON *r = cJSON_CreateObject();
  if (!r) return;
  cJSON_AddItemToArray(arr, r);
  dt__json_put_str(r, "key", key);
  dt__json_put_str(r, "operator", "In");
  cJSON *v = dt__json_put(r, "values", cJSON_CreateArray());
  cJSON *s = cJSON_CreateString(val);
  if (!v || !s || !cJSON_AddItemToArray(v, s)) cJSON_Delete(s);
}

static void add_taints(cJSON *spec, const char *key, const dt_taint *t, size_t n) {
  if (!n) return;
  cJSON *arr = dt__json_put(spec, key, cJSON_CreateArray());
  if (!arr) return;
  for (size_t i = 0; i < n; i++) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return;
    cJSON_AddItemToArray(arr, o);
    dt__json_put_str(o, "key", t[i].key);
    if (t[i].value[0]) dt__json_put_str(o, "value", t[i].value);
    dt__json_put_str(o, "effect", t[i].effect);
  }
}

/* A duration as Karpenter's CRD writes it ("168h", "1h30m", "Never"). */
static void fmt_duration(int64_t s, char *out, size_t n) {
  if (s < 0) {
    snprintf(out, n, "Never");
    return;
  }
  size_t at = 0;
  if (s >= 3600) at += (size_t)snprintf(out + at, n - at, "%lldh", (long long)(s / 3600));
  if (s % 3600 >= 60) at += (size_t)snprintf(out + at, n - at, "%lldm", (long long)(s % 3600 / 60));
  if (s % 60 || !at) snprintf(out + at, n - at, "%llds", (long long)(s % 60));
}

static cJSON *claim_yaml(const dt_plan *p, const rt_claim *k) {
  const rt_type *t = &p->types[k->type];
  const rt_off *o = claim_off(p, k);
  const dt_nodepool *np = p->pools[k->pool].src;
  const char *zone = dt__sym_str(&p->syms, p->zones[o->zone]);
  cJSON *d = cJSON_CreateObject();
  if (!d) return NULL;
  dt__json_put_str(d, "apiVersion", "karpenter.sh/v1");
  dt__json_put_str(d, "kind", "NodeClaim");
  cJSON *md = add_obj(d, "metadata");
  dt__json_put_str(md, "name", dt__sym_str(&p->syms, k->name));
  cJSON *labels = add_obj(md, "labels");
  for (size_t i = 0; i < np->labels.n; i++) dt__json_put_str(labels, np->labels.v[i].key, np->labels.v[i].val);
  dt__json_put_str(labels, DT_L_NODEPOOL, np->name);
  for (size_t i = 0; i < t->src->labels.n; i++)
    if (!cJSON_GetObjectItemCaseSensitive(labels, t->src->labels.v[i].key))
      dt__json_put_str(labels, t->src->labels.v[i].key, t->src->labels.v[i].val);
  dt__json_put_str(labels, DT_L_ZONE, zone);
  dt__json_put_str(labels, DT_L_CAPACITY_TYPE, dt__ct_names[o->ct]);
  if (o->ct == DT_CT_SPOT) dt__json_put_str(labels, DT_L_INTERRUPTIBLE, "true");
  if (o->resv) dt__json_put_str(labels, DT_L_RESERVATION, dt__sym_str(&p->syms, o->resv));
  if (np->uid) { /* the API server takes an owner only with its uid */
    cJSON *own = dt__json_put(md, "ownerReferences", cJSON_CreateArray());
    cJSON *o = dt__json_put(own, NULL, cJSON_CreateObject());
    dt__json_put_str(o, "apiVersion", "karpenter.sh/v1");
    dt__json_put_str(o, "kind", "NodePool");
    dt__json_put_str(o, "name", np->name);
    dt__json_put_str(o, "uid", np->uid);
    dt__json_put(o, "blockOwnerDeletion", cJSON_CreateTrue());
  }
  cJSON *ann = add_obj(md, "annotations");
  for (size_t i = 0; i < np->annotations.n; i++) dt__json_put_str(ann, np->annotations.v[i].key, np->annotations.v[i].val);
  dt_buf pods = {0};
  char tmp[700];
  for (size_t j = 0; j < k->pods.n; j++) {
    dt__pod_name(p, &p->pods[k->pods.v[j]], tmp, sizeof tmp);
    if (j) dt__buf_putc(&pods, ',');
    dt__buf_puts(&pods, tmp);
  }
  dt__json_put_str(ann, DT_A_PODS, pods.p ? pods.p : "");
  dt__free(pods.p);
  dt__fmt_price(tmp, sizeof tmp, o->price);
  dt__json_put_str(ann, "dovetail.dev/price", tmp);
  cJSON *spec = add_obj(d, "spec");
  if (np->node_class_ref) dt__json_put(spec, "nodeClassRef", cJSON_Duplicate(np->node_class_ref, true));
  char dur[40];
  fmt_duration(np->expire_after, dur, sizeof dur);
  dt__json_put_str(spec, "expireAfter", dur);
  if (np->termination_grace) dt__json_put_str(spec, "terminationGracePeriod", np->termination_grace);
  cJSON *reqs = dt__json_put(spec, "requirements", cJSON_CreateArray());
  if (reqs) {
    add_req(reqs, DT_L_NODEPOOL, np->name);
    add_req(reqs, DT_L_INSTANCE_TYPE, t->src->name);
    add_req(reqs, DT_L_ZONE, zone);
    add_req(reqs, DT_L_CAPACITY_TYPE, dt__ct_names[o->ct]);
    if (o->resv) add_req(reqs, DT_L_RESERVATION, dt__sym_str(&p->syms, o->resv));
  }
  cJSON *res = add_obj(add_obj(spec, "resources"), "requests");
  for (uint32_t r = 0; r < p->nres && res; r++) {
    if (!k->used[r]) continue;
    dt__fmt_quantity(tmp, sizeof tmp, p->res_names[r], k->used[r]);
    dt__json_put_str(res, p->res_names[r], tmp);
  }
  if (spec) {
    add_taints(spec, "taints", np->taints, np->ntaints);
    add_taints(spec, "startupTaints", np->startup, np->nstartup);
  }
  cJSON *alloc = add_obj(add_obj(d, "status"), "allocatable");
  for (uint32_t r = 0; r < p->nres && alloc; r++) {
    if (!t->alloc[r]) continue;
    dt__fmt_quantity(tmp, sizeof tmp, p->res_names[r], t->alloc[r]);
    dt__json_put_str(alloc, p->res_names[r], tmp);
  }
  return d;
}

static int render_yaml(const dt_plan *p, dt_buf *b) {
  dt__init();
  dt__alloc_failed(1);
  cJSON *docs = cJSON_CreateArray();
  if (!docs) return DT_ENOMEM;
  for (size_t i = 0; i < p->claims.n; i++) {
    if (p->claims.v[i]->type < 0) continue;
    cJSON *d = claim_yaml(p, p->claims.v[i]);
    if (!d) {
      cJSON_Delete(docs);
      return DT_ENOMEM;
    }
    cJSON_AddItemToArray(docs, d);
  }
  int rc = dt__alloc_failed(1) ? DT_ENOMEM : 0;
  if (!rc && docs->child) rc = dt__yaml_emit(docs, b);
  /* Pods that fit nowhere are reported as comments, so nothing is lost. */
  for (size_t i = 0; i < p->unsched.n; i++) {
    char tmp[700];
    dt__pod_name(p, &p->pods[p->unsched.v[i].pod], tmp, sizeof tmp);
    dt__buf_printf(b, "# unschedulable %s: %s\n", tmp, p->unsched.v[i].reason);
  }
  cJSON_Delete(docs);
  return rc;
}

/* ------------------------------------------------------------ table */

static void pad(dt_buf *b, const char *s, size_t w) {
  dt__buf_puts(b, s);
  for (size_t n = strlen(s); n < w; n++) dt__buf_putc(b, ' ');
}

static void render_table(const dt_plan *p, dt_buf *b) {
  static const char *head[] = {"NODEPOOL", "NAME", "INSTANCE TYPE", "ZONE", "CAPACITY", "$/HOUR", "CPU", "MEMORY", "PODS"};
  enum { NC = 9 };
  size_t w[NC];
  for (int i = 0; i < NC; i++) w[i] = strlen(head[i]);
  char cell[NC][128];
#define ROW(k)                                                                                            \
  do {                                                                                                    \
    const rt_off *o_ = claim_off(p, k);                                                                   \
    snprintf(cell[0], 128, "%s", p->pools[(k)->pool].src->name);                                          \
    snprintf(cell[1], 128, "%s", dt__sym_str(&p->syms, (k)->name));                                       \
    snprintf(cell[2], 128, "%s", p->types[(k)->type].src->name);                                          \
    snprintf(cell[3], 128, "%s", dt__sym_str(&p->syms, p->zones[o_->zone]));                              \
    snprintf(cell[4], 128, "%s", dt__ct_names[o_->ct]);                                                    \
    dt__fmt_price(cell[5], 128, o_->price);                                                               \
    dt__fmt_quantity(cell[6], 128, "cpu", (k)->used[DT_R_CPU]);                                           \
    snprintf(cell[7], 128, "%.1fGi", (double)(k)->used[DT_R_MEM] / 1000.0 / 1073741824.0);            \
    snprintf(cell[8], 128, "%zu", (k)->pods.n);                                                           \
  } while (0)
  for (size_t i = 0; i < p->claims.n; i++) {
    const rt_claim *k = p->claims.v[i];
    if (k->type < 0) continue;
    ROW(k);
    for (int c = 0; c < NC; c++)
      if (strlen(cell[c]) > w[c]) w[c] = strlen(cell[c]);
  }
  if (p->stats.nodes) {
    for (int c = 0; c < NC; c++) pad(b, head[c], c + 1 < NC ? w[c] + 2 : 0);
    dt__buf_putc(b, '\n');
    for (size_t i = 0; i < p->claims.n; i++) {
      const rt_claim *k = p->claims.v[i];
      if (k->type < 0) continue;
      ROW(k);
      for (int c = 0; c < NC; c++) pad(b, cell[c], c + 1 < NC ? w[c] + 2 : 0);
      dt__buf_putc(b, '\n');
    }
    dt__buf_putc(b, '\n');
  }
#undef ROW
  char price[64], tmp[700];
  dt__fmt_price(price, sizeof price, p->stats.hourly_cost);
  dt__buf_printf(b, "%zu new node%s, $%s/hour; %zu of %zu pending pods scheduled (%zu on existing nodes)\n",
                 p->stats.nodes, p->stats.nodes == 1 ? "" : "s", price, p->stats.scheduled, p->stats.pods,
                 p->bindings.n);
  if (p->unsched.n) {
    dt__buf_printf(b, "%zu unschedulable:\n", p->unsched.n);
    for (size_t i = 0; i < p->unsched.n; i++) {
      dt__pod_name(p, &p->pods[p->unsched.v[i].pod], tmp, sizeof tmp);
      dt__buf_printf(b, "  %s: %s\n", tmp, p->unsched.v[i].reason);
    }
  }
  for (size_t i = 0; i < p->notes.n; i++) dt__buf_printf(b, "note: %s\n", p->notes.v[i]);
}

char *dt_plan_render(const dt_plan *plan, dt_format format, size_t *len) {
  dt_buf b = {0};
  if (format == DT_FORMAT_YAML) {
    if (render_yaml(plan, &b)) b.oom = 1;
  } else if (format == DT_FORMAT_TABLE) {
    render_table(plan, &b);
  } else {
    render_json(plan, &b);
  }
  return dt__buf_take(&b, len);
}

size_t dt_plan_binding_count(const dt_plan *p) { return p->bindings.n; }

int dt_plan_binding(const dt_plan *p, size_t i, char *pod, size_t n, const char **node) {
  if (i >= p->bindings.n) return DT_ERANGE;
  const rt_binding *bd = &p->bindings.v[i];
  dt__pod_name(p, &p->pods[bd->pod], pod, n);
  *node = p->nodes[bd->node].src->name;
  return 0;
}
