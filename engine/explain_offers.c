/*
** explain_offers.c: the second half of `plan --explain POD`: once the plan
** is launched, the pod's claim and the offering it launched on, and every
** cheaper offering of the catalog with the reason it was not that one
** (requirements, a NodePool limit, unavailability, a reservation used up,
** a policy's price or score).
*/
#include "explain.h"
#include "hooks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { W_POOL_REQ, W_REQ, W_SMALL, W_OPTIONS, W_ZONE, W_CT, W_TOPO, W_UNAVAILABLE, W_SPOT, W_RESERVED, W_ORDER, W_N };
static const char *const k_why[W_N] = {"excluded by the NodePool's requirements",
                                       "excluded by the requirements of the pods on the claim",
                                       "too small for the claim's pods",
                                       "not among the claim's instance-type options",
                                       "zone not allowed by a requirement",
                                       "capacity type not allowed by a requirement",
                                       "excluded by topology spread or (anti-)affinity",
                                       "unavailable",
                                       "spot price above the maximum",
                                       "reserved capacity the claim did not hold",
                                       "launch order"};
static const char *const k_why_key[W_N] = {
    "nodePoolRequirement", "podRequirement", "tooSmall",    "notAnOption", "zone", "capacityType", "topology",
    "unavailable",         "spotMaxPrice",   "reservation", "launchOrder"};

const char *ex_str(const cJSON *o, const char *k);

typedef struct offer {
  uint32_t t, o;
  double price;
} offer;

static const dt_plan *g_sort_p; /* qsort has no context argument in C11 */
static int offer_cmp(const void *a, const void *b) {
  const offer *x = a, *y = b;
  if (x->price != y->price) return x->price < y->price ? -1 : 1;
  const rt_type *tx = &g_sort_p->types[x->t], *ty = &g_sort_p->types[y->t];
  if (tx->rank != ty->rank) return tx->rank < ty->rank ? -1 : 1;
  const rt_off *ox = &tx->off[x->o], *oy = &ty->off[y->o];
  if (ox->zone != oy->zone) return g_sort_p->zone_rank[ox->zone] < g_sort_p->zone_rank[oy->zone] ? -1 : 1;
  return ox->ct < oy->ct ? -1 : ox->ct > oy->ct;
}

/* The requirement of r on key that excludes value v (v = 0: absent). */
static const dt_req *excluding(const dt_plan *p, const dt_reqs *r, dt_sym key, dt_sym v) {
  const dt_req *q = dt__reqs_get(r, key);
  return q && !dt__req_has(&p->syms, q, v) ? q : NULL;
}

/* Why offering o of type t is not the claim's; pods_sum is what its pods
** request. Returns a W_* and writes the detail into b. */
static int offering_why(const dt_plan *p, const rt_claim *k, const rt_class *c, const int64_t *pods_sum, uint32_t ti,
                        uint32_t oi, dt_buf *b) {
  const rt_pool *pl = &p->pools[k->pool];
  const rt_type *t = &p->types[ti];
  const rt_off *of = &t->off[oi];
  /* labels of the type against the pool's, then the claim's requirements */
  for (uint32_t i = 0; i < pl->reqs.n; i++) {
    int16_t s = dt__x_slot(p, pl->reqs.r[i].key);
    if (s < 0 || dt__req_has(&p->syms, &pl->reqs.r[i], t->lv[s])) continue;
    dt__buf_printf(b, "NodePool %s requires ", pl->src->name);
    ex_describe_reqs(p, &pl->reqs.r[i], b);
    return W_POOL_REQ;
  }
  for (uint32_t i = 0; i < k->reqs.n; i++) {
    int16_t s = dt__x_slot(p, k->reqs.r[i].key);
    if (s < 0 || dt__req_has(&p->syms, &k->reqs.r[i], t->lv[s])) continue;
    const dt_req *mine = c ? excluding(p, &c->reqs, k->reqs.r[i].key, t->lv[s]) : NULL;
    dt__buf_puts(b, !mine                                                             ? "a pod on the claim requires "
                    : dt__sched_key_from_volume(p, &p->specs[c->spec_idx], mine->key) ? "the pod's volumes require "
                                                                                      : "the pod requires ");
    ex_describe_reqs(p, mine ? mine : &k->reqs.r[i], b);
    return W_REQ;
  }
  if (!dt__x_fits(p, pl->eff[ti], pods_sum, (int64_t[DT_RES_MAX]){0})) {
    for (uint32_t r = 0; r < p->nres; r++) {
      if (pods_sum[r] <= pl->eff[ti][r]) continue;
      char need[64], has[64];
      dt__fmt_quantity(need, sizeof need, p->res_names[r], pods_sum[r]);
      dt__fmt_quantity(has, sizeof has, p->res_names[r], pl->eff[ti][r] > 0 ? pl->eff[ti][r] : 0);
      dt__buf_printf(b, "%s: the claim's pods (%zu) need %s, it has %s allocatable%s", p->res_names[r], k->pods.n, need,
                     has, pl->eff[ti] != pl->alloc[ti] ? " after DaemonSet overhead" : "");
      break;
    }
    return W_SMALL;
  }
  bool option = false;
  for (uint32_t i = 0; i < k->nopt && !option; i++) option = k->opt[i] == ti;
  if (!option) {
    bool over = false;
    for (uint32_t r = 0; r < p->nres && pl->has_limits && !over; r++)
      over = pl->remaining[r] != INT64_MAX && t->cap[r] > pl->remaining[r];
    if (k->repacked)
      dt__buf_puts(b, "cost-aware packing keeps a node's 60 cheapest holding types as its options");
    else if (over)
      dt__buf_printf(b, "its capacity is more than NodePool %s's limits leave", pl->src->name);
    else
      dt__buf_puts(b, "dropped from the claim's options as its pods joined");
    return W_OPTIONS;
  }
  uint64_t rz;
  uint8_t rc;
  dt__x_masks(p, &k->reqs, &rz, &rc);
  const char *zone = dt__sym_str(&p->syms, p->zones[of->zone]);
  if (!(rz >> of->zone & 1)) {
    const dt_req *q = dt__reqs_get(&k->reqs, p->k_zone);
    dt__buf_printf(b, "zone %s: ", zone);
    if (q) ex_describe_reqs(p, q, b);
    return W_ZONE;
  }
  if (!(rc >> of->ct & 1)) {
    const dt_req *q = dt__reqs_get(&k->reqs, p->k_ct);
    dt__buf_printf(b, "%s: ", dt__ct_names[of->ct]);
    if (q) ex_describe_reqs(p, q, b);
    return W_CT;
  }
  if (!(k->zmask >> of->zone & 1) || !(k->ctmask >> of->ct & 1)) {
    bool zone_too = !(k->zmask >> of->zone & 1);
    dt__buf_printf(b, "the topology constraints of the claim's pods keep it to %s ",
                   zone_too ? "zones" : "capacity types");
    bool first = true;
    for (uint32_t z = 0; zone_too && z < p->nzones; z++)
      if (k->zmask >> z & 1) {
        dt__buf_printf(b, "%s%s", first ? "" : ", ", dt__sym_str(&p->syms, p->zones[z]));
        first = false;
      }
    for (int ct = 0; !zone_too && ct < DT_CT_N; ct++)
      if (k->ctmask >> ct & 1) {
        dt__buf_printf(b, "%s%s", first ? "" : ", ", dt__ct_names[ct]);
        first = false;
      }
    return W_TOPO;
  }
  if (of->avail == 0) {
    if (of->gone == OFF_CATALOG) {
      dt__buf_puts(b, "the catalog marks it unavailable");
    } else if (of->gone == OFF_MARK) {
      for (size_t i = 0; i < p->marks.n; i++) {
        const dt_mark *mk = &p->manifests->marks.v[p->marks.v[i]];
        if (mk->ct != of->ct || strcmp(mk->instance_type, t->src->name) || strcmp(mk->zone, zone)) continue;
        char when[40];
        dt__fmt_time(mk->expires, when, sizeof when);
        dt__buf_printf(b, "UnavailableOffering %s until %s", mk->name, when);
        break;
      }
    } else if (of->gone == OFF_PRICE_HOOK) {
      dt__buf_printf(b, "the price hook of policy %s excluded it", dt__policy_name(p->opts.policy));
    } else {
      dt__buf_printf(b, "its %lld units are all launched by this plan's other claims",
                     (long long)t->src->off[oi].available);
    }
    return W_UNAVAILABLE;
  }
  if (!dt__spot_ok(of, pl->spot_max)) {
    char pr[64], cap[64];
    dt__fmt_price(pr, sizeof pr, of->price);
    dt__fmt_price(cap, sizeof cap, isfinite(pl->spot_max) ? pl->spot_max : of->cap);
    dt__buf_printf(b, "$%s is above %s $%s", pr,
                   isfinite(pl->spot_max) ? "the NodePool's dovetail.dev/spot-max-price" : "the on-demand price,", cap);
    if (!isfinite(pl->spot_max)) dt__buf_puts(b, " (Cluster API's default maxPrice)");
    return W_SPOT;
  }
  if (of->ct == DT_CT_RESERVED) {
    dt__buf_printf(b, "capacity reservation %s: its units were held by other claims",
                   of->resv ? dt__sym_str(&p->syms, of->resv) : "(unnamed)");
    return W_RESERVED;
  }
  const rt_off *chosen = &p->types[k->type].off[k->off];
  if (chosen->ct == DT_CT_RESERVED)
    dt__buf_puts(b, "reserved capacity is launched first while it lasts");
  else if (dt__policy_has(pl->policy, DT_HOOK_RANK) || dt__policy_has(pl->policy, DT_HOOK_SCORE))
    dt__buf_printf(b, "the %s hook of policy %s chose the launched offering",
                   dt__policy_has(pl->policy, DT_HOOK_RANK) ? "rank" : "score", dt__policy_name(pl->policy));
  else
    dt__buf_puts(b, "not the launch order's first");
  return W_ORDER;
}

static void put_requests(const dt_plan *p, cJSON *o, const char *key, const int64_t *v) {
  cJSON *r = dt__json_put(o, key, cJSON_CreateObject());
  for (uint32_t i = 0; i < p->nres; i++) {
    if (!v[i]) continue;
    char q[64];
    dt__fmt_quantity(q, sizeof q, p->res_names[i], v[i]);
    dt__json_put_str(r, p->res_names[i], q);
  }
}

static void put_price(cJSON *o, const char *key, double v) {
  char tmp[64];
  dt__fmt_price(tmp, sizeof tmp, v);
  dt__json_put_num(o, key, strtod(tmp, NULL)); /* the plan's rounding */
}

const char *ex_price_text(const cJSON *v, char *out, size_t n) {
  dt__fmt_price(out, n, cJSON_GetNumberValue(v));
  return out;
}

static int cheaper(dt_plan *p, const rt_claim *k, const rt_class *c, cJSON *doc) {
  const rt_off *chosen = &p->types[k->type].off[k->off];
  int64_t sum[DT_RES_MAX] = {0};
  for (size_t j = 0; j < k->pods.n; j++)
    for (uint32_t r = 0; r < DT_RES_MAX; r++) sum[r] += p->specs[p->pods[k->pods.v[j]].spec].req[r];
  size_t n = 0;
  for (uint32_t t = 0; t < p->ntypes; t++) n += p->types[t].noff;
  offer *v = dt__malloc((n ? n : 1) * sizeof *v);
  if (!v) return DT_ENOMEM;
  n = 0;
  for (uint32_t t = 0; t < p->ntypes; t++)
    for (uint32_t o = 0; o < p->types[t].noff; o++) {
      const rt_off *of = &p->types[t].off[o];
      if (t == (uint32_t)k->type && o == (uint32_t)k->off) continue;
      if (of->price < chosen->price) v[n++] = (offer){t, o, of->price};
    }
  g_sort_p = p;
  qsort(v, n, sizeof *v, offer_cmp);
  cJSON *ch = dt__json_put(doc, "cheaperOfferings", cJSON_CreateObject());
  dt__json_put_num(ch, "count", (double)n);
  cJSON *groups[W_N] = {0}, *last[W_N] = {0};
  size_t counts[W_N] = {0}, listed[W_N] = {0};
  cJSON *glist = dt__json_put(ch, "byReason", cJSON_CreateArray());
  int order[W_N], norder = 0; /* reasons in the order they first appear, cheapest first */
  dt_buf b = {0};
  for (size_t i = 0; i < n; i++) {
    int w = offering_why(p, k, c, sum, v[i].t, v[i].o, &b);
    if (!counts[w]) order[norder++] = w;
    counts[w]++;
    const rt_type *t = &p->types[v[i].t];
    const rt_off *of = &t->off[v[i].o];
    const char *zone = dt__sym_str(&p->syms, p->zones[of->zone]);
    /* the same type, capacity type, price and reason in several zones: one entry */
    cJSON *e = last[w];
    if (e && !strcmp(ex_str(e, "instanceType"), t->src->name) &&
        !strcmp(ex_str(e, "capacityType"), dt__ct_names[of->ct]) &&
        cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "price")) == v[i].price &&
        !strcmp(ex_str(e, "why"), b.p ? b.p : "")) {
      dt__json_put(cJSON_GetObjectItemCaseSensitive(e, "zones"), NULL, cJSON_CreateString(zone));
    } else if (listed[w] < EX_OFFERS_MAX) {
      if (!groups[w]) groups[w] = cJSON_CreateArray();
      e = last[w] = dt__json_put(groups[w], NULL, cJSON_CreateObject());
      dt__json_put_str(e, "instanceType", t->src->name);
      dt__json_put(dt__json_put(e, "zones", cJSON_CreateArray()), NULL, cJSON_CreateString(zone));
      dt__json_put_str(e, "capacityType", dt__ct_names[of->ct]);
      dt__json_put_num(e, "price", v[i].price);
      ex_put_buf(e, "why", &b);
      listed[w]++;
    } else {
      last[w] = NULL;
    }
    dt__free(b.p);
    memset(&b, 0, sizeof b);
  }
  for (int i = 0; i < norder; i++) {
    int w = order[i];
    cJSON *g = dt__json_put(glist, NULL, cJSON_CreateObject());
    dt__json_put_str(g, "reason", k_why_key[w]);
    dt__json_put_str(g, "description", k_why[w]);
    dt__json_put_num(g, "count", (double)counts[w]); /* offerings, each type in each zone */
    dt__json_put(g, "cheapest", groups[w]);
    groups[w] = NULL;
  }
  for (int w = 0; w < W_N; w++) cJSON_Delete(groups[w]);
  dt__free(v);
  return 0;
}

static bool claim_has(const rt_claim *k, uint32_t podi) {
  for (size_t j = 0; j < k->pods.n; j++)
    if (k->pods.v[j] == podi) return true;
  return false;
}

/* A pod that is not pending: bound to a node, or carried by an in-flight
** claim; it was not planned. */
static int explain_not_pending(dt_plan *p, cJSON *doc) {
  const dt_explain *ex = p->ex;
  char tmp[1400];
  const dt_podspec *d = &p->manifests->pods.v[ex->spec];
  if (ex->kind == EX_BOUND || ex->spec_known) {
    int64_t req[DT_RES_MAX] = {0};
    for (size_t i = 0; i < d->requests.n; i++)
      for (uint32_t r = 0; r < p->nres; r++)
        if (!strcmp(p->res_names[r], d->requests.v[i].name)) req[r] = d->requests.v[i].milli;
    put_requests(p, doc, "requests", req);
  }
  dt__json_put_str(doc, "outcome", ex->kind == EX_BOUND ? "bound" : "inFlight");
  dt__json_put_str(doc, "node", ex->node);
  snprintf(tmp, sizeof tmp,
           ex->kind == EX_BOUND
               ? "already bound to node %s (spec.nodeName): not a pending pod, so not planned; it uses "
                 "that node's room"
               : "already carried by in-flight NodeClaim %s (its dovetail.dev/pods annotation): not "
                 "planned again, it uses that claim's room",
           ex->node);
  dt__json_put_str(doc, "summary", tmp);
  return p->arena.oom ? DT_ENOMEM : 0;
}

/* A pod on a new claim: the claim, its offering and the rule that chose it,
** then the cheaper offerings and why not. */
static int explain_new_claim(dt_plan *p, cJSON *doc, const rt_claim *k, const rt_class *c) {
  const dt_explain *ex = p->ex;
  char tmp[1400];
  const rt_type *t = &p->types[k->type];
  const rt_off *of = &t->off[k->off];
  const rt_pool *pl = &p->pools[k->pool];
  dt__json_put_str(doc, "outcome", "newNodeClaim");
  const char *how = k->repacked ? "cost-aware packing re-packed first-fit's claims of this NodePool and put it on"
                    : ex->claim_at == k && ex->new_claim ? "it opened"
                                                         : "it joined";
  snprintf(tmp, sizeof tmp, "%s NodeClaim %s of NodePool %s: %s in %s, %s, $", how, dt__sym_str(&p->syms, k->name),
           pl->src->name, t->src->name, dt__sym_str(&p->syms, p->zones[of->zone]), dt__ct_names[of->ct]);
  char pr[64];
  dt__fmt_price(pr, sizeof pr, of->price);
  snprintf(tmp + strlen(tmp), sizeof tmp - strlen(tmp), "%s/hour", pr);
  dt__json_put_str(doc, "summary", tmp);
  cJSON *nc = dt__json_put(doc, "nodeClaim", cJSON_CreateObject());
  dt__json_put_str(nc, "name", dt__sym_str(&p->syms, k->name));
  dt__json_put_str(nc, "nodePool", pl->src->name);
  dt__json_put_num(nc, "nodePoolWeight", pl->src->weight);
  dt__json_put_str(nc, "instanceType", t->src->name);
  dt__json_put_str(nc, "zone", dt__sym_str(&p->syms, p->zones[of->zone]));
  dt__json_put_str(nc, "capacityType", dt__ct_names[of->ct]);
  put_price(nc, "price", of->price);
  if (of->resv) dt__json_put_str(nc, "reservationID", dt__sym_str(&p->syms, of->resv));
  dt__json_put_num(nc, "pods", (double)k->pods.n);
  put_requests(p, nc, "requests", k->used);
  dt__json_put_num(nc, "instanceTypeOptions", (double)k->nfinal);
  dt__json_put(nc, "repacked", cJSON_CreateBool(k->repacked));
  const char *rule = of->ct == DT_CT_RESERVED                    ? "reserved capacity while it lasts"
                     : dt__policy_has(pl->policy, DT_HOOK_RANK)  ? "the policy's rank hook"
                     : dt__policy_has(pl->policy, DT_HOOK_SCORE) ? "the policy's score hook"
                                                                 : "the cheapest available offering of the types "
                                                                   "that hold the claim's pods; ties by instance "
                                                                   "type, then zone";
  dt__json_put_str(nc, "chosenBy", rule);
  return cheaper(p, k, c, doc);
}

int dt__explain_finish(dt_plan *p) {
  dt_explain *ex = p->ex;
  cJSON *doc = ex->doc = cJSON_CreateObject();
  if (!doc) return DT_ENOMEM;
  char tmp[1400];
  dt__json_put_str(doc, "apiVersion", "dovetail.dev/v1alpha1");
  dt__json_put_str(doc, "kind", "PlanExplanation");
  dt__fmt_time(p->opts.now ? p->opts.now : 946684800, tmp, sizeof tmp);
  dt__json_put_str(doc, "now", tmp);
  dt__json_put_str(doc, "pod", ex->pod);
  if (ex->kind != EX_PENDING) return explain_not_pending(p, doc);
  uint32_t podi = (uint32_t)p->ex_pod;
  const rt_spec *s = &p->specs[ex->spec];
  put_requests(p, doc, "requests", s->req);
  if (!pod_refused(s, p->pods[podi].ordinal)) { /* a refused pod is never queued */
    cJSON *q = dt__json_put(doc, "queue", cJSON_CreateObject());
    uint32_t at = 0, of = 0; /* among the pods queued: those refused for their claims never are */
    for (uint32_t i = 0; i < p->npods; i++) {
      if (pod_refused(&p->specs[p->pods[i].spec], p->pods[i].ordinal)) continue;
      at += i < podi;
      of++;
    }
    dt__json_put_num(q, "position", (double)at + 1);
    dt__json_put_num(q, "of", (double)of);
    dt__json_put_num(q, "pass", (double)ex->pass + 1);
    dt__json_put_num(q, "tries", (double)ex->tries);
  }
  /* where it is now: a node, a launched claim, or nowhere */
  int32_t node = -1;
  for (size_t i = 0; i < p->bindings.n && node < 0; i++)
    if (p->bindings.v[i].pod == podi) node = (int32_t)p->bindings.v[i].node;
  const rt_claim *k = NULL;
  for (size_t i = 0; i < p->claims.n && !k && node < 0; i++)
    if (p->claims.v[i]->type >= 0 && claim_has(p->claims.v[i], podi)) k = p->claims.v[i];
  const char *unsched = NULL;
  for (size_t i = 0; i < p->unsched.n && !unsched; i++)
    if (p->unsched.v[i].pod == podi) unsched = p->unsched.v[i].reason;
  /* the last try, claims named once launched */
  if (ex->attempt) {
    cJSON *claims = cJSON_GetObjectItemCaseSensitive(ex->attempt, "claims");
    size_t j = 0;
    for (cJSON *e = claims ? claims->child : NULL; e && j < ex->tried.n; e = e->next, j++) {
      const rt_claim *t = ex->tried.v[j];
      bool live = false;
      for (size_t i = 0; i < p->claims.n && !live; i++) live = p->claims.v[i] == t;
      if (live && t->type >= 0)
        dt__json_put_str(e, "name", dt__sym_str(&p->syms, t->name));
      else if (!live)
        dt__json_put_str(e, "name", "(re-packed by cost-aware packing)");
    }
    dt__json_put(doc, "lastTry", ex->attempt);
    ex->attempt = NULL;
  }
  const rt_class *c = &p->classes.v[ex->cls];
  if (node >= 0) {
    const dt_node *n = p->nodes[node].src;
    dt__json_put_str(doc, "outcome", n->claim_name ? "inFlightNodeClaim" : "existingNode");
    dt__json_put_str(doc, "node", n->name);
    snprintf(tmp, sizeof tmp,
             "bound to %s %s: existing nodes and in-flight NodeClaims are tried before any new "
             "NodeClaim (Karpenter's order), and it is the first in that order with room for it",
             n->claim_name ? "in-flight NodeClaim" : "node", n->name);
    dt__json_put_str(doc, "summary", tmp);
    const cJSON *pools =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "lastTry"), "nodePools");
    const char *would = NULL;
    for (const cJSON *e = pools ? pools->child : NULL; e && !would; e = e->next)
      if (cJSON_GetObjectItemCaseSensitive(e, "opens"))
        would = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "name"));
    if (would)
      snprintf(tmp, sizeof tmp, "existing capacity comes first; a new NodeClaim would have come from NodePool %s",
               would);
    else
      snprintf(tmp, sizeof tmp,
               "existing capacity comes first; besides, no NodePool could open a NodeClaim for it "
               "(see lastTry.nodePools)");
    dt__json_put_str(doc, "whyNotNewNodeClaim", tmp);
  } else if (k) {
    if (explain_new_claim(p, doc, k, c)) return DT_ENOMEM;
  } else {
    dt__json_put_str(doc, "outcome", "unschedulable");
    dt__json_put_str(doc, "summary", unsched ? unsched : "not placed");
  }
  return p->arena.oom ? DT_ENOMEM : 0;
}
