/*
** plan.c: a plan's results and their renderings. Once the solver is done,
** dt__plan_result_build copies its decisions (new claims, bindings,
** unschedulable pods) into plain structs in the result's own arena; the
** public accessors hand those out, and the JSON document and the table are
** written from them, through cJSON and the one styled JSON writer. The YAML
** NodeClaims still read the solver's requirements (the claims' label
** requirements are not results yet). Rendering only reads; the same plan
** renders byte-identically every time.
*/
#include "schedule.h"

#include "hooks.h"

#include <stdlib.h>
#include <string.h>

static const rt_off *claim_off(const dt_plan *p, const rt_claim *k) { return &p->types[k->type].off[k->off]; }

/* A preformatted number (a price, milliseconds): printed as written. */
static void put_raw(cJSON *o, const char *key, const char *text) { dt__json_put(o, key, cJSON_CreateRaw(text)); }

/* ------------------------------------------------------------ results */

static const char *res_str(dt_plan *p, const char *s) { return dt__arena_strdup(&p->res.arena, s); }

static const char *res_pod(dt_plan *p, uint32_t pod) {
  char tmp[700];
  dt__pod_name(p, &p->pods[pod], tmp, sizeof tmp);
  return res_str(p, tmp);
}

/* Claim k as the accessors give it; strings in the result's arena. */
static void claim_info(dt_plan *p, const rt_claim *k, dt_claim_info *c) {
  dt_arena *a = &p->res.arena;
  const rt_type *t = &p->types[k->type];
  const rt_off *o = claim_off(p, k);
  char tmp[64];
  c->name = res_str(p, dt__sym_str(&p->syms, k->name));
  c->nodepool = res_str(p, p->pools[k->pool].src->name);
  c->instance_type = res_str(p, t->src->name);
  c->zone = res_str(p, dt__sym_str(&p->syms, p->zones[o->zone]));
  c->capacity_type = dt__ct_names[o->ct];
  c->reservation_id = o->resv ? res_str(p, dt__sym_str(&p->syms, o->resv)) : NULL;
  c->price = o->price;
  dt_resource_info *req = dt__arena_alloc(a, p->nres * sizeof *req + 1);
  for (uint32_t r = 0; req && r < p->nres; r++) {
    if (!k->used[r]) continue;
    dt__fmt_quantity(tmp, sizeof tmp, p->res_names[r], k->used[r]);
    req[c->nrequests++] = (dt_resource_info){res_str(p, p->res_names[r]), res_str(p, tmp), k->used[r]};
  }
  c->requests = req;
  const char **pods = dt__arena_alloc(a, k->pods.n * sizeof *pods + 1);
  for (size_t j = 0; pods && j < k->pods.n; j++) pods[j] = res_pod(p, k->pods.v[j]);
  c->pods = pods;
  c->npods = pods ? k->pods.n : 0;
  const char **opts = dt__arena_alloc(a, k->nfinal * sizeof *opts + 1);
  for (uint32_t j = 0; opts && j < k->nfinal; j++) opts[j] = res_str(p, p->types[k->final[j]].src->name);
  c->instance_type_options = opts;
  c->noptions = opts ? k->nfinal : 0;
}

int dt__plan_result_build(dt_plan *p) {
  dt_plan_result *r = &p->res;
  dt_arena *a = &r->arena;
  size_t n = 0;
  for (size_t i = 0; i < p->claims.n; i++) n += p->claims.v[i]->type >= 0;
  r->claims = dt__arena_alloc(a, n * sizeof *r->claims + 1);
  r->claim_src = dt__arena_alloc(a, n * sizeof *r->claim_src + 1);
  for (size_t i = 0; r->claims && r->claim_src && i < p->claims.n; i++)
    if (p->claims.v[i]->type >= 0) {
      r->claim_src[r->nclaims] = p->claims.v[i];
      claim_info(p, p->claims.v[i], &r->claims[r->nclaims++]);
    }
  r->bindings = dt__arena_alloc(a, p->bindings.n * sizeof *r->bindings + 1);
  for (size_t i = 0; r->bindings && i < p->bindings.n; i++) {
    const rt_binding *bd = &p->bindings.v[i];
    r->bindings[r->nbindings++] = (dt_binding_info){res_pod(p, bd->pod), res_str(p, p->nodes[bd->node].src->name)};
  }
  r->unsched = dt__arena_alloc(a, p->unsched.n * sizeof *r->unsched + 1);
  for (size_t i = 0; r->unsched && i < p->unsched.n; i++)
    r->unsched[r->nunsched++] =
        (dt_unschedulable_info){res_pod(p, p->unsched.v[i].pod), res_str(p, p->unsched.v[i].reason)};
  for (size_t i = 0; i < p->policies.n; i++)
    if (dt__policy_errors_take(p->policies.v[i], a, &r->policy_errors)) return DT_ENOMEM;
  return a->oom ? DT_ENOMEM : 0;
}

int dt__policy_errors_take(const dt_policy *pol, dt_arena *a, dt_policy_error_vec *v) {
  const dt_policy_err *e;
  size_t n = dt__policy_errors(pol, &e);
  const char *name = dt__arena_strdup(a, dt__policy_name(pol));
  for (size_t i = 0; i < n; i++) {
    dt_policy_error_rec r = {name, dt__arena_strdup(a, e[i].hook), dt__arena_strdup(a, e[i].message),
                             (int64_t)e[i].count, e[i].disabled};
    if (dt__vec_push(v, r)) return DT_ENOMEM;
  }
  return a->oom ? DT_ENOMEM : 0;
}

/* ------------------------------------------------------------- JSON */

cJSON *dt__claim_doc(const dt_claim_info *k, bool replacement) {
  cJSON *c = cJSON_CreateObject();
  if (replacement) {
    dt__json_put_str(c, "apiVersion", "karpenter.sh/v1");
    dt__json_put_str(c, "kind", "NodeClaim");
  }
  dt__json_put_str(c, "name", k->name);
  dt__json_put_str(c, "nodePool", k->nodepool);
  dt__json_put_str(c, "instanceType", k->instance_type);
  dt__json_put_str(c, "zone", k->zone);
  dt__json_put_str(c, "capacityType", k->capacity_type);
  dt__json_put_price(c, "price", k->price);
  if (!replacement) {
    if (k->reservation_id) dt__json_put_str(c, "reservationID", k->reservation_id);
    cJSON *req = dt__json_put(c, "requests", cJSON_CreateObject());
    for (size_t r = 0; r < k->nrequests; r++) dt__json_put_str(req, k->requests[r].name, k->requests[r].quantity);
  }
  dt__json_put_strs(c, "pods", k->pods, k->npods);
  dt__json_put_strs(c, "instanceTypeOptions", k->instance_type_options, k->noptions);
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

static cJSON *summary_doc(const dt_plan *p) {
  size_t by_ct[DT_CT_N] = {0};
  for (size_t i = 0; i < p->res.nclaims; i++)
    for (int ct = 0; ct < DT_CT_N; ct++) by_ct[ct] += !strcmp(p->res.claims[i].capacity_type, dt__ct_names[ct]);
  char tmp[64];
  cJSON *s = cJSON_CreateObject();
  dt__json_put_num(s, "pods", (double)p->stats.pods);
  dt__json_put_num(s, "scheduled", (double)p->stats.scheduled);
  dt__json_put_num(s, "unschedulable", (double)p->stats.unschedulable);
  dt__json_put_num(s, "alreadyBound", (double)p->bound_already);
  dt__json_put_num(s, "nodes", (double)p->stats.nodes);
  dt__json_put_num(s, "existingNodes", (double)p->nnodes);
  dt__fmt_price(tmp, sizeof tmp, p->stats.hourly_cost);
  put_raw(s, "hourlyCost", tmp);
  cJSON *ct = dt__json_put(s, "nodesByCapacityType", cJSON_CreateObject());
  dt__json_put_num(ct, "on-demand", (double)by_ct[DT_CT_ON_DEMAND]);
  dt__json_put_num(ct, "spot", (double)by_ct[DT_CT_SPOT]);
  dt__json_put_num(ct, "reserved", (double)by_ct[DT_CT_RESERVED]);
  if (p->opts.timings) {
    cJSON *t = dt__json_put(s, "timings", cJSON_CreateObject());
    snprintf(tmp, sizeof tmp, "%.3f", p->opts.parse_ms);
    put_raw(t, "parseMs", tmp);
    snprintf(tmp, sizeof tmp, "%.3f", p->stats.schedule_ms);
    put_raw(t, "scheduleMs", tmp);
  }
  return s;
}

cJSON *dt__plan_doc(const dt_plan *p) {
  dt__init();
  dt__alloc_failed(1);
  char tmp[700];
  cJSON *d = cJSON_CreateObject();
  dt__json_put_str(d, "apiVersion", "dovetail.dev/v1alpha1");
  dt__json_put_str(d, "kind", "Plan");
  dt__fmt_time(p->opts.now ? p->opts.now : 946684800, tmp, sizeof tmp);
  dt__json_put_str(d, "now", tmp);
  const dt_plan_result *r = &p->res;
  cJSON *claims = dt__json_put(d, "nodeClaims", cJSON_CreateArray());
  for (size_t i = 0; i < r->nclaims; i++) dt__json_put(claims, NULL, dt__claim_doc(&r->claims[i], false));
  cJSON *bs = dt__json_put(d, "bindings", cJSON_CreateArray());
  for (size_t i = 0; i < r->nbindings; i++) {
    cJSON *e = dt__json_put(bs, NULL, cJSON_CreateObject());
    dt__json_put_str(e, "pod", r->bindings[i].pod);
    dt__json_put_str(e, "node", r->bindings[i].node);
  }
  cJSON *us = dt__json_put(d, "unschedulable", cJSON_CreateArray());
  for (size_t i = 0; i < r->nunsched; i++) {
    cJSON *e = dt__json_put(us, NULL, cJSON_CreateObject());
    dt__json_put_str(e, "pod", r->unsched[i].pod);
    dt__json_put_str(e, "reason", r->unsched[i].reason);
  }
  cJSON *ms = dt__json_put(d, "unavailableOfferings", cJSON_CreateArray());
  for (size_t i = 0; i < p->marks.n; i++) {
    const dt_mark *mk = &p->manifests->marks.v[p->marks.v[i]];
    cJSON *e = dt__json_put(ms, NULL, cJSON_CreateObject());
    dt__json_put_str(e, "capacityType", dt__ct_names[mk->ct]);
    dt__json_put_str(e, "instanceType", mk->instance_type);
    dt__json_put_str(e, "zone", mk->zone);
    dt__fmt_time(mk->expires, tmp, sizeof tmp);
    dt__json_put_str(e, "expiresAt", tmp);
  }
  dt__json_put_policy_errors(d, p->res.policy_errors.v, p->res.policy_errors.n);
  cJSON *notes = dt__json_put(d, "notes", cJSON_CreateArray());
  for (size_t i = 0; i < p->notes.n; i++) dt__json_put_str(notes, NULL, p->notes.v[i]);
  dt__json_put(d, "summary", summary_doc(p));
  if (dt__alloc_failed(1)) {
    cJSON_Delete(d);
    return NULL;
  }
  return d;
}

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

static void render_json(const dt_plan *p, dt_buf *b) {
  cJSON *d = dt__plan_doc(p);
  if (!d) {
    b->oom = 1;
    return;
  }
  dt__json_styled(d, NULL, b, 0, plan_one_line);
  dt__buf_putc(b, '\n');
  cJSON_Delete(d);
}

/* ------------------------------------------------------------- YAML */

static cJSON *add_obj(cJSON *parent, const char *key) { return dt__json_put(parent, key, cJSON_CreateObject()); }

/* ------------------------------------------------- NodeClaim requirements */

/* One requirement of a NodeClaim, before it is written: the key, the
** operator, the values (sorted by name) and minValues. */
typedef struct ncreq {
  const char *key, *op;
  size_t n;
  const char **vals;
  int32_t min_values;
  char num[32]; /* the one value of Gt and Lt */
} ncreq;

typedef DT_VEC(ncreq) ncreqs;
typedef DT_VEC(const char **) strsvec;

static int cmp_cstr(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static int cmp_ncreq(const void *a, const void *b) {
  const ncreq *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  return c ? c : strcmp(x->op, y->op);
}

static int push_req(ncreqs *out, const char *key, const char *op, const char **vals, size_t n, int32_t mv) {
  ncreq r = {key, op, n, vals, mv, ""};
  if (n > 1) qsort(vals, n, sizeof *vals, cmp_cstr);
  return dt__vec_push(out, r);
}

/* Values of r by name, in a fresh array (freed by the caller). */
static const char **req_values(const dt_plan *p, const dt_req *r) {
  const char **v = dt__malloc((r->n ? r->n : 1) * sizeof *v);
  for (uint32_t i = 0; v && i < r->n; i++) v[i] = dt__sym_str(&p->syms, r->v[i]);
  return v;
}

/* A requirement as Karpenter writes it (NodeSelectorRequirement): In or
** NotIn with their values, Exists, DoesNotExist, and bounds as Gt and Lt
** (Gte and Lte only where Gt and Lt cannot say it, as older CRDs know no
** more), each with the key's minValues. */
static int push_dt_req(const dt_plan *p, ncreqs *out, const dt_req *r, strsvec *owned) {
  const char *key = dt__sym_str(&p->syms, r->key);
  int32_t mv = r->min_values;
  if (r->has_gte || r->has_lte) {
    if (r->has_gte) {
      ncreq q = {key, r->gte > 0 ? "Gt" : "Gte", 0, NULL, mv, ""};
      snprintf(q.num, sizeof q.num, "%lld", (long long)(r->gte > 0 ? r->gte - 1 : r->gte));
      if (dt__vec_push(out, q)) return DT_ENOMEM;
    }
    if (r->has_lte) {
      ncreq q = {key, r->lte >= -1 && r->lte < INT64_MAX ? "Lt" : "Lte", 0, NULL, mv, ""};
      snprintf(q.num, sizeof q.num, "%lld", (long long)(r->lte >= -1 && r->lte < INT64_MAX ? r->lte + 1 : r->lte));
      if (dt__vec_push(out, q)) return DT_ENOMEM;
    }
    if (!r->n) return 0;
  }
  dt_op op = dt__req_operator(r);
  const char **v = NULL;
  if (r->n) {
    if (!(v = req_values(p, r)) || dt__vec_push(owned, v)) {
      dt__free(v);
      return DT_ENOMEM;
    }
  }
  return push_req(out, key, dt__op_name(op), v, r->n, mv);
}

/* Whether type t offers in zone z and capacity type ct (and reservation
** resv when reserved), availability aside: the claim's own offering may be
** the unit it used up. */
static bool offers_at(const rt_type *t, int z, int ct, dt_sym resv, double spot_max) {
  for (uint32_t o = 0; o < t->noff; o++) {
    const rt_off *of = &t->off[o];
    if ((z < 0 || of->zone == z) && of->ct == ct && (ct != DT_CT_RESERVED || !resv || of->resv == resv) &&
        dt__spot_ok(of, spot_max))
      return true;
  }
  return false;
}

/*
** spec.requirements of a NodeClaim, as Karpenter builds them: the NodePool's
** requirements (with minValues) narrowed by its pods', the template's labels
** as In, the node class label, and the instance types the claim may launch
** (at most 600). The capacity type and zone are pinned to the offering the
** plan priced (and its reservation), with the types that offer there; when
** that would leave fewer values than a minValues asks, they stay as open as
** the claim's requirements allow, the capacity types narrowed to those its
** types offer, as Karpenter narrows them. launched: the claim as the daemon
** launches it, on the planned type alone (its minValues met by the plan).
*/
static int claim_requirements(const dt_plan *p, const rt_claim *k, cJSON *arr, const char *class_key,
                              const char *class_name, bool launched) {
  const rt_pool *pl = &p->pools[k->pool];
  const rt_off *o = claim_off(p, k);
  ncreqs rs = {0};
  strsvec owned = {0};
  int rc = 0;
  uint32_t *pin = dt__malloc((k->nfinal ? k->nfinal : 1) * sizeof *pin), npin = 0;
  const char **types = dt__malloc((k->nfinal + 1) * sizeof *types), *zones[64], *cts[DT_CT_N], *resv[1];
  size_t ntypes = 0, nzones = 0, ncts = 0;
  if (!pin || !types) rc = DT_ENOMEM;
  for (uint32_t i = 0; !rc && i < k->nfinal; i++)
    if (launched ? (int32_t)k->final[i] == k->type
                 : offers_at(&p->types[k->final[i]], o->zone, o->ct, o->resv, pl->spot_max))
      pin[npin++] = k->final[i];
  if (launched && !npin && pin) pin[npin++] = (uint32_t)k->type;
  bool pinned = !rc && npin && (launched || dt__min_values_ok(p, &k->reqs, pin, npin));
  if (!rc && pinned) {
    for (uint32_t i = 0; i < npin; i++) types[ntypes++] = p->types[pin[i]].src->name;
    zones[nzones++] = dt__sym_str(&p->syms, p->zones[o->zone]);
    cts[ncts++] = dt__ct_names[o->ct];
  } else if (!rc) {
    for (uint32_t i = 0; i < k->nfinal; i++) types[ntypes++] = p->types[k->final[i]].src->name;
    for (uint32_t z = 0; z < p->nzones; z++) {
      bool any = false;
      for (int ct = 0; ct < DT_CT_N && !any && (k->zopen >> z & 1); ct++)
        for (uint32_t i = 0; i < k->nfinal && !any && (k->copen >> ct & 1); i++)
          any = offers_at(&p->types[k->final[i]], (int)z, ct, 0, pl->spot_max);
      if (any) zones[nzones++] = dt__sym_str(&p->syms, p->zones[z]);
    }
    for (int ct = 0; ct < DT_CT_N; ct++) {
      bool any = false;
      for (uint32_t i = 0; i < k->nfinal && !any && (k->copen >> ct & 1); i++)
        for (uint32_t z = 0; z < p->nzones && !any; z++)
          any = (k->zopen >> z & 1) && offers_at(&p->types[k->final[i]], (int)z, ct, 0, pl->spot_max);
      if (any) cts[ncts++] = dt__ct_names[ct];
    }
  }
  const dt_req *rt = dt__reqs_get(&k->reqs, p->k_type), *rz = dt__reqs_get(&k->reqs, p->k_zone),
               *rc_ = dt__reqs_get(&k->reqs, p->k_ct);
  if (!rc)
    rc = push_req(&rs, DT_L_INSTANCE_TYPE, "In", types, ntypes, rt && !launched ? rt->min_values : 0) ||
         push_req(&rs, DT_L_ZONE, "In", zones, nzones, rz && !launched ? rz->min_values : 0) ||
         push_req(&rs, DT_L_CAPACITY_TYPE, "In", cts, ncts, rc_ && !launched ? rc_->min_values : 0);
  if (!rc && pinned && o->resv) {
    resv[0] = dt__sym_str(&p->syms, o->resv);
    rc = push_req(&rs, DT_L_RESERVATION, "In", resv, 1, 0);
  }
  bool has_class = false;
  for (uint32_t i = 0; !rc && i < k->reqs.n; i++) {
    const dt_req *r = &k->reqs.r[i];
    /* the hostname is a placeholder of the plan's (Karpenter drops it too) */
    if (r->key == p->k_type || r->key == p->k_zone || r->key == p->k_ct || r->key == p->k_hostname ||
        (r->key == p->k_resv && pinned && o->resv))
      continue;
    has_class |= class_key && !strcmp(dt__sym_str(&p->syms, r->key), class_key);
    rc = push_dt_req(p, &rs, r, &owned);
  }
  if (!rc && class_key && !has_class) rc = push_req(&rs, class_key, "In", &class_name, 1, 0);
  if (!rc && rs.n) qsort(rs.v, rs.n, sizeof *rs.v, cmp_ncreq);
  for (size_t i = 0; !rc && i < rs.n; i++) {
    const ncreq *q = &rs.v[i];
    cJSON *r = dt__json_put(arr, NULL, cJSON_CreateObject());
    dt__json_put_str(r, "key", q->key);
    dt__json_put_str(r, "operator", q->op);
    if (q->num[0] || q->n) {
      cJSON *v = dt__json_put(r, "values", cJSON_CreateArray());
      if (q->num[0]) dt__json_put(v, NULL, cJSON_CreateString(q->num));
      for (size_t j = 0; j < q->n; j++) dt__json_put(v, NULL, cJSON_CreateString(q->vals[j]));
    }
    if (q->min_values > 0) dt__json_put_num(r, "minValues", q->min_values);
  }
  for (size_t i = 0; i < owned.n; i++) dt__free(owned.v[i]);
  dt__free(owned.v);
  dt__free(rs.v);
  dt__free(pin);
  dt__free(types);
  return rc ? DT_ENOMEM : 0;
}

/*
** Labels Karpenter gives a NodeClaim for its requirements on labels no
** instance type defines (resolveCustomLabelsFromRequirements): In takes a
** value (the first by name, where Karpenter takes any), NotIn and Exists the
** smallest integer they allow (where Karpenter draws one at random), so a
** pod that required the label finds it on the node.
*/
static void custom_labels(const dt_plan *p, const rt_claim *k, cJSON *labels) {
  for (uint32_t i = 0; i < k->reqs.n; i++) {
    const dt_req *r = &k->reqs.r[i];
    if (r->key == p->k_zone || r->key == p->k_ct || r->key == p->k_type || r->key == p->k_pool ||
        r->key == p->k_hostname || r->key == p->k_resv || r->key == p->k_arch || r->key == p->k_os ||
        r->key == p->k_region || r->key == p->k_interruptible || dt__slot_of(p, r->key) >= 0)
      continue;
    const char *key = dt__sym_str(&p->syms, r->key);
    if (cJSON_GetObjectItemCaseSensitive(labels, key)) continue;
    dt_op op = dt__req_operator(r);
    if (op == DT_OP_IN) {
      const char *best = NULL;
      for (uint32_t j = 0; j < r->n; j++)
        if (!best || strcmp(dt__sym_str(&p->syms, r->v[j]), best) < 0) best = dt__sym_str(&p->syms, r->v[j]);
      if (best) dt__json_put_str(labels, key, best);
    } else if (op == DT_OP_NOTIN || op == DT_OP_EXISTS) {
      int64_t v = r->has_gte && r->gte > 0 ? r->gte : 0;
      for (bool taken = true; taken && (!r->has_lte || v <= r->lte);) {
        char num[32];
        snprintf(num, sizeof num, "%lld", (long long)v);
        dt_sym s = dt__sym_find(&p->syms, num);
        taken = s && !dt__req_has(&p->syms, r, s);
        if (!taken)
          dt__json_put_str(labels, key, num);
        else
          v++;
      }
    }
  }
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

static cJSON *claim_yaml(const dt_plan *p, const rt_claim *k, bool launched) {
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
  /* the node class label Karpenter adds: <group>/<kind in lower case> */
  char class_key[300] = "";
  const char *class_name = NULL;
  const cJSON *ref = np->node_class_ref;
  const char *cg = ref ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ref, "group")) : NULL,
             *ck = ref ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ref, "kind")) : NULL;
  class_name = ref ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ref, "name")) : NULL;
  if (cg && ck && class_name) {
    size_t at = (size_t)snprintf(class_key, sizeof class_key, "%s/", cg);
    for (const char *c = ck; *c && at + 1 < sizeof class_key; c++)
      class_key[at++] = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
    class_key[at] = 0;
    if (!cJSON_GetObjectItemCaseSensitive(labels, class_key)) dt__json_put_str(labels, class_key, class_name);
  }
  custom_labels(p, k, labels);
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
  for (size_t i = 0; i < np->annotations.n; i++)
    dt__json_put_str(ann, np->annotations.v[i].key, np->annotations.v[i].val);
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
  /* the template hash dovetail disrupt tells drift by */
  snprintf(tmp, sizeof tmp, "%016llx", (unsigned long long)np->hash);
  dt__json_put_str(ann, "dovetail.dev/nodepool-hash", tmp);
  cJSON *spec = add_obj(d, "spec");
  if (np->node_class_ref) dt__json_put(spec, "nodeClassRef", cJSON_Duplicate(np->node_class_ref, true));
  char dur[40];
  fmt_duration(np->expire_after, dur, sizeof dur);
  dt__json_put_str(spec, "expireAfter", dur);
  if (np->termination_grace) dt__json_put_str(spec, "terminationGracePeriod", np->termination_grace);
  cJSON *reqs = dt__json_put(spec, "requirements", cJSON_CreateArray());
  if (reqs && claim_requirements(p, k, reqs, class_key[0] ? class_key : NULL, class_name, launched)) {
    cJSON_Delete(d);
    return NULL;
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

/* The plan's new NodeClaims as documents; NULL when out of memory. */
static cJSON *claim_docs(const dt_plan *p, bool launched) {
  dt__init();
  dt__alloc_failed(1);
  cJSON *docs = cJSON_CreateArray();
  if (!docs) return NULL;
  for (size_t i = 0; i < p->claims.n; i++) {
    if (p->claims.v[i]->type < 0) continue;
    cJSON *d = claim_yaml(p, p->claims.v[i], launched);
    if (!d) {
      cJSON_Delete(docs);
      return NULL;
    }
    cJSON_AddItemToArray(docs, d);
  }
  if (dt__alloc_failed(1)) {
    cJSON_Delete(docs);
    return NULL;
  }
  return docs;
}

static int render_yaml(const dt_plan *p, dt_buf *b, bool launched) {
  cJSON *docs = claim_docs(p, launched);
  if (!docs) return DT_ENOMEM;
  int rc = docs->child ? dt__yaml_emit(docs, b) : 0;
  /* A NodeClaim needs a nodeClassRef (Karpenter's CRD requires it); say so
  ** of the pools that have none rather than print claims that will not apply. */
  for (uint32_t pi = 0; pi < p->npools; pi++) {
    bool used = false;
    for (size_t i = 0; i < p->claims.n && !used; i++) used = p->claims.v[i]->type >= 0 && p->claims.v[i]->pool == pi;
    if (used && !p->pools[pi].src->node_class_ref)
      dt__buf_printf(b,
                     "# NodePool %s has no spec.template.spec.nodeClassRef: Karpenter's NodeClaim schema requires "
                     "one, so its NodeClaims above do not apply as they are\n",
                     p->pools[pi].src->name);
  }
  /* Pods that fit nowhere are reported as comments, so nothing is lost. */
  for (size_t i = 0; i < p->res.nunsched; i++)
    dt__buf_printf(b, "# unschedulable %s: %s\n", p->res.unsched[i].pod, p->res.unsched[i].reason);
  cJSON_Delete(docs);
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

static void render_table(const dt_plan *p, dt_buf *b) {
  static const char *head[] = {"NODEPOOL", "NAME", "INSTANCE TYPE", "ZONE", "CAPACITY",
                               "$/HOUR",   "CPU",  "MEMORY",        "PODS"};
  const dt_plan_result *r = &p->res;
  size_t w[NC];
  for (int i = 0; i < NC; i++) w[i] = strlen(head[i]);
  char cell[NC][128];
  for (size_t i = 0; i < r->nclaims; i++) {
    table_row(&r->claims[i], cell);
    for (int c = 0; c < NC; c++)
      if (strlen(cell[c]) > w[c]) w[c] = strlen(cell[c]);
  }
  if (p->stats.nodes) {
    for (int c = 0; c < NC; c++) pad(b, head[c], c + 1 < NC ? w[c] + 2 : 0);
    dt__buf_putc(b, '\n');
    for (size_t i = 0; i < r->nclaims; i++) {
      table_row(&r->claims[i], cell);
      for (int c = 0; c < NC; c++) pad(b, cell[c], c + 1 < NC ? w[c] + 2 : 0);
      dt__buf_putc(b, '\n');
    }
    dt__buf_putc(b, '\n');
  }
  char price[64];
  dt__fmt_price(price, sizeof price, p->stats.hourly_cost);
  dt__buf_printf(b, "%zu new node%s, $%s/hour; %zu of %zu pending pods scheduled (%zu on existing nodes)\n",
                 p->stats.nodes, p->stats.nodes == 1 ? "" : "s", price, p->stats.scheduled, p->stats.pods,
                 r->nbindings);
  if (r->nunsched) {
    dt__buf_printf(b, "%zu unschedulable:\n", r->nunsched);
    for (size_t i = 0; i < r->nunsched; i++) dt__buf_printf(b, "  %s: %s\n", r->unsched[i].pod, r->unsched[i].reason);
  }
  for (size_t i = 0; i < p->notes.n; i++) dt__buf_printf(b, "note: %s\n", p->notes.v[i]);
}

char *dt_plan_render(const dt_plan *plan, dt_format format, size_t *len) {
  dt_buf b = {0};
  if (format == DT_FORMAT_YAML) {
    if (render_yaml(plan, &b, false)) b.oom = 1;
  } else if (format == DT_FORMAT_TABLE) {
    render_table(plan, &b);
  } else {
    render_json(plan, &b);
  }
  return dt__buf_take(&b, len);
}

char *dt_plan_claim_object(const dt_plan *plan, size_t i, int launched, size_t *len) {
  if (!plan || i >= plan->res.nclaims) return NULL;
  dt__init();
  dt__alloc_failed(1);
  cJSON *d = claim_yaml(plan, plan->res.claim_src[i], launched != 0);
  char *text = d && !dt__alloc_failed(1) ? cJSON_PrintUnformatted(d) : NULL;
  cJSON_Delete(d);
  if (text && len) *len = strlen(text);
  return text;
}

size_t dt_plan_binding_count(const dt_plan *p) { return p->res.nbindings; }

int dt_plan_binding(const dt_plan *p, size_t i, char *pod, size_t n, const char **node) {
  if (i >= p->res.nbindings) return DT_ERANGE;
  if (n) snprintf(pod, n, "%s", p->res.bindings[i].pod);
  *node = p->res.bindings[i].node;
  return 0;
}

size_t dt_plan_claim_count(const dt_plan *p) { return p->res.nclaims; }

int dt_plan_claim(const dt_plan *p, size_t i, dt_claim_info *out) {
  if (i >= p->res.nclaims) return DT_ERANGE;
  *out = p->res.claims[i];
  return 0;
}

size_t dt_plan_unschedulable_count(const dt_plan *p) { return p->res.nunsched; }

int dt_plan_unschedulable(const dt_plan *p, size_t i, dt_unschedulable_info *out) {
  if (i >= p->res.nunsched) return DT_ERANGE;
  *out = p->res.unsched[i];
  return 0;
}
