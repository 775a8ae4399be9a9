/*
** plan.c: a plan's renderings, written from its results alone
** (dt_plan_result, built by plan_result.c once the solver is done): the
** Plan document (JSON, through cJSON and the one styled JSON writer), the
** NodeClaims (YAML, and one object at a time for the daemon) and the table.
** Rendering only reads; the same plan renders byte-identically every time.
*/
#include "result.h"

#include <stdlib.h>
#include <string.h>

/* A preformatted number (a price, milliseconds): printed as written. */
static void put_raw(cJSON *o, const char *key, const char *text) { dt__json_put(o, key, cJSON_CreateRaw(text)); }

/* ------------------------------------------------------------- JSON */

cJSON *dt__claim_doc(const dt_claim_info *k, bool replacement) {
  cJSON *c = cJSON_CreateObject();
  if (replacement) {
    dt__json_put_str(c, "apiVersion", "karpenter.sh/v1");
    dt__json_put_str(c, "kind", "NodeClaim");
  }
  const dt_field fields[] = {{"name", k->name},
                             {"nodePool", k->nodepool},
                             {"instanceType", k->instance_type},
                             {"zone", k->zone},
                             {"capacityType", k->capacity_type}};
  dt__json_put_fields(c, fields, 5);
  dt__json_put_price(c, "price", k->price);
  if (!replacement) {
    if (k->reservation_id) dt__json_put_str(c, "reservationID", k->reservation_id);
    cJSON *req = dt__json_put(c, "requests", cJSON_CreateObject());
    for (size_t r = 0; r < k->nrequests; r++) dt__json_put_str(req, k->requests[r].name, k->requests[r].quantity);
  }
  dt__json_put_strs(c, "pods", k->pods, k->npods);
  /* the last of pods that are CapacityBuffers' chunks, nominated to no claim */
  if (k->nvirtual) dt__json_put_num(c, "virtualPods", (double)k->nvirtual);
  dt__json_put_strs(c, "instanceTypeOptions", k->instance_type_options, k->noptions);
  /* NodeOverlays changed an option's price or capacity (the NodeClaim's overlay-applied annotations) */
  if (k->price_overlaid) dt__json_put(c, "priceOverlayApplied", cJSON_CreateTrue());
  if (k->capacity_overlaid) dt__json_put(c, "capacityOverlayApplied", cJSON_CreateTrue());
  if (replacement && k->nlabels) {
    cJSON *lab = dt__json_put(c, "labels", cJSON_CreateObject());
    for (size_t i = 0; i < k->nlabels; i++) dt__json_put_str(lab, k->labels[i].key, k->labels[i].value);
  }
  return c;
}

/* Every result's policyErrors, one shape for plan, disrupt and pool. */
void dt__json_put_policy_errors(cJSON *o, const dt_policy_error_rec *v, size_t n) {
  cJSON *arr = dt__json_put(o, "policyErrors", cJSON_CreateArray());
  for (size_t i = 0; i < n; i++) {
    cJSON *e = dt__json_put(arr, NULL, cJSON_CreateObject());
    dt__json_put_str(e, "policy", v[i].policy);
    dt__json_put_str(e, "hook", v[i].hook);
    dt__json_put_str(e, "message", v[i].message);
    dt__json_put_num(e, "count", (double)v[i].count);
    dt__json_put(e, "disabled", cJSON_CreateBool(v[i].disabled));
  }
}

static cJSON *summary_doc(const dt_plan_result *p) {
  size_t by_ct[DT_CT_N] = {0};
  for (size_t i = 0; i < p->nclaims; i++)
    for (int ct = 0; ct < DT_CT_N; ct++) by_ct[ct] += !strcmp(p->claims[i].capacity_type, dt__ct_names[ct]);
  char tmp[64];
  cJSON *s = cJSON_CreateObject();
  dt__json_put_num(s, "pods", (double)p->stats.pods);
  dt__json_put_num(s, "scheduled", (double)p->stats.scheduled);
  dt__json_put_num(s, "unschedulable", (double)p->stats.unschedulable);
  dt__json_put_num(s, "alreadyBound", (double)p->bound_already);
  dt__json_put_num(s, "nodes", (double)p->stats.nodes);
  dt__json_put_num(s, "existingNodes", (double)p->existing_nodes);
  dt__fmt_price(tmp, sizeof tmp, p->stats.hourly_cost);
  put_raw(s, "hourlyCost", tmp);
  cJSON *ct = dt__json_put(s, "nodesByCapacityType", cJSON_CreateObject());
  dt__json_put_num(ct, "on-demand", (double)by_ct[DT_CT_ON_DEMAND]);
  dt__json_put_num(ct, "spot", (double)by_ct[DT_CT_SPOT]);
  dt__json_put_num(ct, "reserved", (double)by_ct[DT_CT_RESERVED]);
  if (p->timings) {
    cJSON *t = dt__json_put(s, "timings", cJSON_CreateObject());
    snprintf(tmp, sizeof tmp, "%.3f", p->parse_ms);
    put_raw(t, "parseMs", tmp);
    snprintf(tmp, sizeof tmp, "%.3f", p->stats.schedule_ms);
    put_raw(t, "scheduleMs", tmp);
  }
  return s;
}

static cJSON *binding_doc(const dt_binding_info *b) {
  cJSON *e = cJSON_CreateObject();
  dt__json_put_str(e, "pod", b->pod);
  dt__json_put_str(e, "node", b->node);
  return e;
}

static cJSON *unsched_doc(const dt_unschedulable_info *u) {
  cJSON *e = cJSON_CreateObject();
  dt__json_put_str(e, "pod", u->pod);
  dt__json_put_str(e, "reason", u->reason);
  return e;
}

/* The Plan document; with items false its three long lists (nodeClaims,
** bindings, unschedulable) are left empty, for render_json to stream. */
static cJSON *plan_doc(const dt_plan_result *r, bool items) {
  dt__init();
  dt__alloc_failed(1);
  char tmp[700];
  cJSON *d = cJSON_CreateObject();
  dt__json_put_str(d, "apiVersion", "dovetail.dev/v1alpha1");
  dt__json_put_str(d, "kind", "Plan");
  dt__fmt_time(r->now ? r->now : 946684800, tmp, sizeof tmp);
  dt__json_put_str(d, "now", tmp);
  cJSON *claims = dt__json_put(d, "nodeClaims", cJSON_CreateArray());
  for (size_t i = 0; items && i < r->nclaims; i++) dt__json_put(claims, NULL, dt__claim_doc(&r->claims[i], false));
  cJSON *bs = dt__json_put(d, "bindings", cJSON_CreateArray());
  for (size_t i = 0; items && i < r->nbindings; i++) dt__json_put(bs, NULL, binding_doc(&r->bindings[i]));
  cJSON *us = dt__json_put(d, "unschedulable", cJSON_CreateArray());
  for (size_t i = 0; items && i < r->nunsched; i++) dt__json_put(us, NULL, unsched_doc(&r->unsched[i]));
  cJSON *ms = dt__json_put(d, "unavailableOfferings", cJSON_CreateArray());
  for (size_t i = 0; i < r->nmarks; i++) {
    const dt_mark_rec *mk = &r->marks[i];
    cJSON *e = dt__json_put(ms, NULL, cJSON_CreateObject());
    dt__json_put_str(e, "capacityType", mk->capacity_type);
    dt__json_put_str(e, "instanceType", mk->instance_type);
    dt__json_put_str(e, "zone", mk->zone);
    dt__fmt_time(mk->expires, tmp, sizeof tmp);
    dt__json_put_str(e, "expiresAt", tmp);
  }
  dt__json_put_policy_errors(d, r->policy_errors.v, r->policy_errors.n);
  cJSON *notes = dt__json_put(d, "notes", cJSON_CreateArray());
  for (size_t i = 0; i < r->nnotes; i++) dt__json_put_str(notes, NULL, r->notes[i]);
  dt__json_put(d, "summary", summary_doc(r));
  if (dt__alloc_failed(1)) {
    cJSON_Delete(d);
    return NULL;
  }
  return d;
}

cJSON *dt__plan_result_doc(const dt_plan_result *r) { return plan_doc(r, true); }

/* How the plan's JSON reads: lists of names, and each binding, unschedulable
** pod, mark and policy error on one line; the rest one field per line. */
static bool plan_one_line(const cJSON *n, const cJSON *parent) {
  static const char *const lines[] = {"pods", "instanceTypeOptions", "nodesByCapacityType", "timings"};
  static const char *const rows[] = {"bindings", "unschedulable", "unavailableOfferings", "policyErrors"};
  const char *key = n->string, *pkey = parent ? parent->string : NULL;
  for (size_t i = 0; key && i < sizeof lines / sizeof *lines; i++)
    if (!strcmp(key, lines[i])) return true;
  for (size_t i = 0; pkey && cJSON_IsArray(parent) && i < sizeof rows / sizeof *rows; i++)
    if (!strcmp(pkey, rows[i])) return true;
  return false;
}

/* Item i of the list named key, made when it is printed. */
static cJSON *list_item(const dt_plan_result *r, const char *key, size_t i) {
  if (!strcmp(key, "nodeClaims")) return dt__claim_doc(&r->claims[i], false);
  return !strcmp(key, "bindings") ? binding_doc(&r->bindings[i]) : unsched_doc(&r->unsched[i]);
}

/* The document as dt__json_styled prints it whole, its long lists an item
** at a time: a plan of 60,000 nodes held 500 MB of document tree. */
static void render_json(const dt_plan_result *r, dt_buf *b) {
  cJSON *d = plan_doc(r, false);
  if (!d) {
    b->oom = 1;
    return;
  }
  dt__buf_putc(b, '{');
  for (const cJSON *c = d->child; c; c = c->next) {
    dt__json_indent(b, 1);
    dt__buf_json_str(b, c->string);
    dt__buf_puts(b, ": ");
    size_t n = !strcmp(c->string, "nodeClaims")      ? r->nclaims
               : !strcmp(c->string, "bindings")      ? r->nbindings
               : !strcmp(c->string, "unschedulable") ? r->nunsched
                                                     : 0;
    if (!n) {
      dt__json_styled(c, d, b, 1, plan_one_line);
    } else {
      dt__buf_putc(b, '[');
      for (size_t i = 0; i < n && !b->oom; i++) {
        dt__alloc_failed(1);
        cJSON *e = list_item(r, c->string, i);
        if (!e || dt__alloc_failed(1)) b->oom = 1;
        dt__json_indent(b, 2);
        if (e) dt__json_styled(e, c, b, 2, plan_one_line);
        if (i + 1 < n) dt__buf_putc(b, ',');
        cJSON_Delete(e);
        dt__buf_spill(b, false);
      }
      dt__json_indent(b, 1);
      dt__buf_putc(b, ']');
    }
    if (c->next) dt__buf_putc(b, ',');
  }
  dt__json_indent(b, 0);
  dt__buf_puts(b, "}\n");
  cJSON_Delete(d);
}

/* ------------------------------------------------------------- YAML */

static cJSON *add_obj(cJSON *parent, const char *key) { return dt__json_put(parent, key, cJSON_CreateObject()); }

/* ------------------------------------------------- NodeClaim requirements */

static int cmp_ncreq(const void *a, const void *b) {
  const dt_ncreq *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  return c ? c : strcmp(x->op, y->op);
}

/*
** spec.requirements of a NodeClaim, as Karpenter builds them: the NodePool's
** requirements (with minValues) narrowed by its pods', the template's labels
** as In, the node class label, and the instance types, zones and capacity
** types the claim may launch in (plan_result.c), sorted by key. launched:
** the claim as the daemon launches it, pinned to its offering (the planned
** type alone, its minValues met by the plan).
*/
static int claim_requirements(const dt_claim_info *c, const dt_claim_rec *k, cJSON *arr, bool launched) {
  dt_ncreq *rs = dt__malloc((k->nreqs + 4) * sizeof *rs);
  if (!rs) return DT_ENOMEM;
  size_t n = 0;
  if (launched) {
    rs[n++] = (dt_ncreq){DT_L_INSTANCE_TYPE, "In", 1, &c->instance_type, 0, NULL};
    rs[n++] = (dt_ncreq){DT_L_ZONE, "In", 1, &c->zone, 0, NULL};
    rs[n++] = (dt_ncreq){DT_L_CAPACITY_TYPE, "In", 1, &c->capacity_type, 0, NULL};
    if (c->reservation_id) rs[n++] = (dt_ncreq){DT_L_RESERVATION, "In", 1, &c->reservation_id, 0, NULL};
  } else {
    for (size_t i = 0; i < k->nfixed; i++) rs[n++] = k->reqs[i];
  }
  for (size_t i = k->nfixed; i < k->nreqs; i++) {
    size_t j = i - k->nfixed;
    if (!(launched && c->reservation_id && j >= k->resv_lo && j < k->resv_hi)) rs[n++] = k->reqs[i];
  }
  if (n) qsort(rs, n, sizeof *rs, cmp_ncreq);
  for (size_t i = 0; i < n; i++) {
    const dt_ncreq *q = &rs[i];
    cJSON *r = dt__json_put(arr, NULL, cJSON_CreateObject());
    dt__json_put_str(r, "key", q->key);
    dt__json_put_str(r, "operator", q->op);
    if (q->num || q->n) {
      cJSON *v = dt__json_put(r, "values", cJSON_CreateArray());
      if (q->num) dt__json_put(v, NULL, cJSON_CreateString(q->num));
      for (size_t j = 0; j < q->n; j++) dt__json_put(v, NULL, cJSON_CreateString(q->vals[j]));
    }
    if (q->min_values > 0) dt__json_put_num(r, "minValues", q->min_values);
  }
  dt__free(rs);
  return 0;
}

static void put_absent(cJSON *o, const char *key, const char *val) {
  if (!cJSON_GetObjectItemCaseSensitive(o, key)) dt__json_put_str(o, key, val);
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

/* metadata of claim i's NodeClaim: name, labels, owner, annotations (the
** daemon's launched claims, which no API server stores, keep every pod). */
static void claim_meta(const dt_plan_result *r, size_t i, cJSON *md, bool launched) {
  const dt_claim_info *c = &r->claims[i];
  const dt_claim_rec *k = &r->recs[i];
  const dt_claim_pool *np = &r->pools[k->pool];
  const dt_claim_type *t = &r->types[k->type];
  dt__json_put_str(md, "name", c->name);
  cJSON *labels = add_obj(md, "labels");
  for (size_t j = 0; j < np->labels.n; j++) dt__json_put_str(labels, np->labels.v[j].key, np->labels.v[j].val);
  dt__json_put_str(labels, DT_L_NODEPOOL, np->name);
  if (np->class_key) put_absent(labels, np->class_key, np->class_name);
  for (size_t j = 0; j < k->ncustom; j++) put_absent(labels, k->custom[j].key, k->custom[j].val);
  for (size_t j = 0; j < t->labels.n; j++) put_absent(labels, t->labels.v[j].key, t->labels.v[j].val);
  dt__json_put_str(labels, DT_L_ZONE, c->zone);
  for (size_t z = 0; z < np->nzones; z++) /* the zone's ID from the EC2NodeClass's subnets, as the AWS provider */
    if (np->zone_ids[z] && !strcmp(np->zones[z], c->zone)) dt__json_put_str(labels, DT_L_ZONE_ID, np->zone_ids[z]);
  dt__json_put_str(labels, DT_L_CAPACITY_TYPE, c->capacity_type);
  if (!strcmp(c->capacity_type, dt__ct_names[DT_CT_SPOT])) dt__json_put_str(labels, DT_L_INTERRUPTIBLE, "true");
  if (c->reservation_id) dt__json_put_str(labels, DT_L_RESERVATION, c->reservation_id);
  dt__claim_owner(md, np->name, np->uid);
  cJSON *ann = add_obj(md, "annotations");
  for (size_t j = 0; j < np->annotations.n; j++)
    dt__json_put_str(ann, np->annotations.v[j].key, np->annotations.v[j].val);
  if (!launched && dt__claim_pods_omitted(r, i)) {
    char n[32];
    snprintf(n, sizeof n, "%zu", c->npods - c->nvirtual);
    dt__json_put_str(ann, "dovetail.dev/pods-omitted", n);
  } else {
    dt_buf pods = {0};
    for (size_t j = 0; j < c->npods - c->nvirtual; j++) { /* a buffer's chunks are never nominated */
      if (j) dt__buf_putc(&pods, ',');
      dt__buf_puts(&pods, c->pods[j]);
    }
    dt__json_put_str(ann, DT_A_PODS, pods.p ? pods.p : "");
    dt__free(pods.p);
  }
  char tmp[64];
  dt__fmt_price(tmp, sizeof tmp, c->price);
  dt__json_put_str(ann, "dovetail.dev/price", tmp);
  if (c->price_overlaid) dt__json_put_str(ann, "karpenter.sh/price-overlay-applied", "true");
  if (c->capacity_overlaid) dt__json_put_str(ann, "karpenter.sh/capacity-overlay-applied", "true");
  dt__claim_drift_marks(ann, np->hash, np->has_nc ? &np->nc_hash : NULL, np->nc_k_hash, np->nc_k_hash_version);
}

void dt__claim_owner(cJSON *md, const char *pool, const char *uid) {
  if (!uid) return;
  cJSON *own = dt__json_put(md, "ownerReferences", cJSON_CreateArray());
  cJSON *o = dt__json_put(own, NULL, cJSON_CreateObject());
  dt__json_put_str(o, "apiVersion", "karpenter.sh/v1");
  dt__json_put_str(o, "kind", "NodePool");
  dt__json_put_str(o, "name", pool);
  dt__json_put_str(o, "uid", uid);
  dt__json_put(o, "blockOwnerDeletion", cJSON_CreateTrue());
}

/* Each mark replaces one of its key already there (a template annotation). */
static void put_mark(cJSON *ann, const char *key, const char *v) {
  cJSON_DeleteItemFromObjectCaseSensitive(ann, key);
  dt__json_put_str(ann, key, v);
}

void dt__claim_drift_marks(cJSON *ann, uint64_t pool_hash, const uint64_t *nc_hash, const char *k_hash,
                           const char *k_version) {
  char tmp[24];
  /* the template hash dovetail disrupt tells drift by */
  snprintf(tmp, sizeof tmp, "%016llx", (unsigned long long)pool_hash);
  put_mark(ann, "dovetail.dev/nodepool-hash", tmp);
  if (!nc_hash) return;
  /* the EC2NodeClass's, as Karpenter's AWS provider annotates the claims it launches */
  snprintf(tmp, sizeof tmp, "%016llx", (unsigned long long)*nc_hash);
  put_mark(ann, "dovetail.dev/ec2nodeclass-hash", tmp);
  if (k_hash && k_version) {
    put_mark(ann, "karpenter.k8s.aws/ec2nodeclass-hash", k_hash);
    put_mark(ann, "karpenter.k8s.aws/ec2nodeclass-hash-version", k_version);
  }
}

/* Claim i's NodeClaim object; NULL when out of memory. */
static cJSON *claim_yaml(const dt_plan_result *r, size_t i, bool launched) {
  const dt_claim_info *c = &r->claims[i];
  const dt_claim_rec *k = &r->recs[i];
  const dt_claim_pool *np = &r->pools[k->pool];
  const dt_claim_type *t = &r->types[k->type];
  cJSON *d = cJSON_CreateObject();
  if (!d) return NULL;
  dt__json_put_str(d, "apiVersion", "karpenter.sh/v1");
  dt__json_put_str(d, "kind", "NodeClaim");
  claim_meta(r, i, add_obj(d, "metadata"), launched);
  cJSON *spec = add_obj(d, "spec");
  if (np->node_class_ref) dt__json_put(spec, "nodeClassRef", cJSON_Duplicate(np->node_class_ref, true));
  char dur[40];
  fmt_duration(np->expire_after, dur, sizeof dur);
  dt__json_put_str(spec, "expireAfter", dur);
  if (np->termination_grace) dt__json_put_str(spec, "terminationGracePeriod", np->termination_grace);
  cJSON *reqs = dt__json_put(spec, "requirements", cJSON_CreateArray());
  if (reqs && claim_requirements(c, k, reqs, launched)) {
    cJSON_Delete(d);
    return NULL;
  }
  cJSON *res = add_obj(add_obj(spec, "resources"), "requests");
  for (size_t j = 0; j < c->nrequests && res; j++) dt__json_put_str(res, c->requests[j].name, c->requests[j].quantity);
  if (spec) {
    add_taints(spec, "taints", np->taints, np->ntaints);
    add_taints(spec, "startupTaints", np->startup, np->nstartup);
  }
  cJSON *alloc = add_obj(add_obj(d, "status"), "allocatable");
  for (size_t j = 0; j < t->nalloc && alloc; j++) dt__json_put_str(alloc, t->alloc[j].name, t->alloc[j].quantity);
  return d;
}

typedef struct claim_src {
  const dt_plan_result *r;
  bool launched;
} claim_src;

static const cJSON *claim_at(void *ud, size_t i, bool *owned) {
  const claim_src *c = ud;
  dt__alloc_failed(1);
  cJSON *d = claim_yaml(c->r, i, c->launched);
  if (dt__alloc_failed(1)) {
    cJSON_Delete(d);
    d = NULL;
  }
  *owned = true;
  return d;
}

/* A YAML comment line "# " and t's text, which it frees: line breaks and
** other control characters become spaces and invalid UTF-8 U+FFFD, so
** nothing a name carries (a claim's name is any string the API server
** took) can end the comment and put an object into the stream. */
static void comment_line(dt_buf *b, dt_buf *t) {
  dt_buf c = {0};
  dt__buf_utf8(&c, t->p ? t->p : "", t->len);
  for (size_t i = 0; c.p && i < c.len; i++)
    if ((unsigned char)c.p[i] < 0x20 || c.p[i] == 0x7f) c.p[i] = ' ';
  dt__buf_puts(b, "# ");
  if (c.p) dt__buf_puts(b, c.p);
  dt__buf_putc(b, '\n');
  dt__free(c.p);
  dt__free(t->p);
  memset(t, 0, sizeof *t);
}

/* The plan's new NodeClaims, a document each, made as they are emitted. */
static int render_yaml(const dt_plan_result *p, dt_buf *b, bool launched) {
  dt__init();
  claim_src src = {p, launched};
  int rc = p->nclaims ? dt__yaml_emit_each(p->nclaims, claim_at, &src, b) : 0;
  /* A NodeClaim needs a nodeClassRef (Karpenter's CRD requires it); say so
  ** of the pools that have none rather than print claims that will not apply. */
  for (size_t pi = 0; pi < p->npools; pi++)
    if (p->pools[pi].used && !p->pools[pi].node_class_ref)
      dt__buf_printf(b,
                     "# NodePool %s has no spec.template.spec.nodeClassRef: Karpenter's NodeClaim schema requires "
                     "one, so its NodeClaims above do not apply as they are\n",
                     p->pools[pi].name);
  /* Pods that fit nowhere are reported as comments, so nothing is lost. */
  for (size_t i = 0; i < p->nunsched; i++) {
    dt_buf t = {0};
    dt__buf_printf(&t, "unschedulable %s: %s", p->unsched[i].pod, p->unsched[i].reason);
    comment_line(b, &t);
    dt__buf_spill(b, false);
  }
  return rc;
}

/* ------------------------------------------------------------ table */

static void pad(dt_buf *b, const char *s, size_t w) {
  dt__buf_puts(b, s);
  for (size_t n = strlen(s); n < w; n++) dt__buf_putc(b, ' ');
}

/* A claim's request of resource name, 0 when it asks for none. */
static int64_t request_of(const dt_claim_info *k, const char *name) {
  for (size_t r = 0; r < k->nrequests; r++)
    if (!strcmp(k->requests[r].name, name)) return k->requests[r].milli;
  return 0;
}

enum { NC = 9 };

static void table_row(const dt_claim_info *k, char cell[NC][128]) {
  snprintf(cell[0], 128, "%s", k->nodepool);
  snprintf(cell[1], 128, "%s", k->name);
  snprintf(cell[2], 128, "%s", k->instance_type);
  snprintf(cell[3], 128, "%s", k->zone);
  snprintf(cell[4], 128, "%s", k->capacity_type);
  dt__fmt_price(cell[5], 128, k->price);
  dt__fmt_quantity(cell[6], 128, "cpu", request_of(k, "cpu"));
  snprintf(cell[7], 128, "%.1fGi", (double)request_of(k, "memory") / 1000.0 / 1073741824.0);
  snprintf(cell[8], 128, "%zu", k->npods);
}

static void render_table(const dt_plan_result *r, dt_buf *b) {
  static const char *head[] = {"NODEPOOL", "NAME", "INSTANCE TYPE", "ZONE", "CAPACITY",
                               "$/HOUR",   "CPU",  "MEMORY",        "PODS"};
  size_t w[NC];
  for (int i = 0; i < NC; i++) w[i] = strlen(head[i]);
  char cell[NC][128];
  for (size_t i = 0; i < r->nclaims; i++) {
    table_row(&r->claims[i], cell);
    for (int c = 0; c < NC; c++)
      if (strlen(cell[c]) > w[c]) w[c] = strlen(cell[c]);
  }
  if (r->stats.nodes) {
    for (int c = 0; c < NC; c++) pad(b, head[c], c + 1 < NC ? w[c] + 2 : 0);
    dt__buf_putc(b, '\n');
    for (size_t i = 0; i < r->nclaims; i++) {
      table_row(&r->claims[i], cell);
      for (int c = 0; c < NC; c++) pad(b, cell[c], c + 1 < NC ? w[c] + 2 : 0);
      dt__buf_putc(b, '\n');
      dt__buf_spill(b, false);
    }
    dt__buf_putc(b, '\n');
  }
  char price[64];
  dt__fmt_price(price, sizeof price, r->stats.hourly_cost);
  size_t on_claims = 0;
  for (size_t i = 0; i < r->nbindings; i++) on_claims += r->bindings[i].claim;
  dt__buf_printf(b, "%zu new node%s, $%s/hour; %zu of %zu pending pods scheduled (%zu on existing nodes",
                 r->stats.nodes, r->stats.nodes == 1 ? "" : "s", price, r->stats.scheduled, r->stats.pods,
                 r->nbindings - on_claims);
  if (on_claims) dt__buf_printf(b, ", %zu on claims in flight", on_claims);
  dt__buf_puts(b, ")\n");
  if (r->nunsched) {
    dt__buf_printf(b, "%zu unschedulable:\n", r->nunsched);
    for (size_t i = 0; i < r->nunsched; i++) {
      dt__buf_printf(b, "  %s: %s\n", r->unsched[i].pod, r->unsched[i].reason);
      dt__buf_spill(b, false);
    }
  }
  for (size_t i = 0; i < r->nnotes; i++) dt__buf_printf(b, "note: %s\n", r->notes[i]);
}

static void render(const dt_plan_result *r, dt_format format, dt_buf *b) {
  if (format == DT_FORMAT_YAML) {
    if (render_yaml(r, b, false)) b->oom = 1;
  } else if (format == DT_FORMAT_TABLE) {
    render_table(r, b);
  } else {
    render_json(r, b);
  }
}

char *dt__plan_result_render(const dt_plan_result *r, dt_format format, size_t *len) {
  dt_buf b = {0};
  render(r, format, &b);
  return dt__buf_take(&b, len);
}

int dt__plan_result_write(const dt_plan_result *r, dt_format format, dt_write_fn write, void *ud) {
  dt_buf b = {.sink = write, .sink_ud = ud};
  render(r, format, &b);
  dt__buf_spill(&b, true);
  dt__free(b.p);
  return b.ioerr ? DT_EIO : b.oom ? DT_ENOMEM : 0;
}

char *dt__plan_result_claim_object(const dt_plan_result *r, size_t i, bool launched, size_t *len) {
  if (i >= r->nclaims) return NULL;
  dt__init();
  dt__alloc_failed(1);
  cJSON *d = claim_yaml(r, i, launched);
  char *text = d && !dt__alloc_failed(1) ? cJSON_PrintUnformatted(d) : NULL;
  cJSON_Delete(d);
  if (text && len) *len = strlen(text);
  return text;
}
