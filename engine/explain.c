/*
** explain.c: `dovetail plan --explain POD`, why one pod went where it went.
**
** The scheduler calls in around every try of that pod (sched_solve.c, solve):
** before the try, every existing node, every claim opened so far and every
** NodePool is asked, with the same tests the scheduler runs and without
** changing any state, whether it takes the pod and if not why; after the
** try, where the pod went. Once the plan is launched, the pod's claim
** says which offering it launched on, and every cheaper offering of the
** catalog is given the reason it was not that one. Nothing here feeds back
** into a decision: a plan run with explain renders byte-identically to one
** without.
*/
#include "explain.h"

#include "hooks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const k_effects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};

void dt__explain_free(dt_explain *ex) {
  if (!ex) return;
  cJSON_Delete(ex->attempt);
  cJSON_Delete(ex->doc);
  dt__free(ex->tried.v);
  dt__free(ex);
}

/* "ns/name" matches target "ns/name", or "name" alone. */
static bool name_match(const char *name, const char *target) {
  if (strchr(target, '/')) return !strcmp(name, target);
  const char *s = strchr(name, '/');
  return s && !strcmp(s + 1, target);
}

int dt__explain_begin(dt_plan *p, dt_error *err) {
  const char *target = p->opts.explain;
  const dt_manifests *m = p->manifests;
  size_t found = 0;
  char first[600] = "", second[600] = "", name[600];
  int kind = EX_PENDING;
  const char *node = NULL;
  int64_t podi = -1;
  uint32_t spec = 0;
  for (uint32_t i = 0; i < p->npods; i++) {
    dt__pod_name(p, &p->pods[i], name, sizeof name);
    if (!name_match(name, target)) continue;
    if (!found++) {
      snprintf(first, sizeof first, "%s", name);
      podi = i;
      spec = p->pods[i].spec;
    } else if (found == 2) {
      snprintf(second, sizeof second, "%s", name);
    }
  }
  /* one pending pod of that name, and others of the same name (a replica
  ** made for a pod being deleted, which holds its name until it is gone):
  ** the pending one is the one a plan decides on */
  size_t pending = found;
  bool same = true;
  for (size_t i = 0; i < m->pods.n; i++) { /* bound to a node by spec.nodeName */
    const dt_podspec *d = &m->pods.v[i];
    if (!d->node_name || d->owner) continue;
    snprintf(name, sizeof name, "%s/%s", d->ns, d->name);
    if (!name_match(name, target)) continue;
    same &= !strcmp(name, first);
    if (!found++) {
      snprintf(first, sizeof first, "%s", name);
      kind = EX_BOUND;
      node = d->node_name;
      spec = (uint32_t)i;
    } else if (found == 2) {
      snprintf(second, sizeof second, "%s", name);
    }
  }
  /* carried by an in-flight NodeClaim (dovetail.dev/pods): the claim's list
  ** or the list of the Node it registered, a name found there once */
  for (uint32_t i = 0; i < p->nnodes; i++) {
    const dt_node *src = p->nodes[i].src, *cl = p->nodes[i].claim;
    size_t nsrc = src->npods, nall = nsrc + (cl ? cl->npods : 0);
    for (size_t k = 0; k < nall; k++) {
      const char *n = k < nsrc ? src->pods[k] : cl->pods[k - nsrc];
      if (!name_match(n, target) || (found && kind == EX_INFLIGHT && !strcmp(n, first))) continue;
      same &= !strcmp(n, first);
      if (!found++) {
        snprintf(first, sizeof first, "%s", n);
        kind = EX_INFLIGHT;
        node = k < nsrc ? src->name : cl->name;
      } else if (found == 2) {
        snprintf(second, sizeof second, "%s", n);
      }
    }
  }
  /* the pod a claim carries: its spec, for its requests (a pending Pod of
  ** that name, or the workload whose replica <name>-<ordinal> it is) */
  bool spec_known = kind != EX_INFLIGHT;
  for (size_t i = 0; i < m->pods.n && !spec_known && found == 1; i++) {
    const dt_podspec *d = &m->pods.v[i];
    const char *base = d->owner ? dt__replica_base(d) : d->name;
    size_t nl = strlen(d->ns), bl = strlen(base);
    if (d->node_name || strncmp(first, d->ns, nl) || first[nl] != '/' || strncmp(first + nl + 1, base, bl)) continue;
    const char *rest = first + nl + 1 + bl;
    if (d->owner ? rest[0] == '-' && dt__ordinal_text(rest + 1) >= 0 : !*rest) {
      spec = (uint32_t)i;
      spec_known = true;
    }
  }
  if (!found)
    return dt__err(err, DT_EINVAL,
                   "explain: no pod %s in the input (it takes a pending pod, a pod bound to a node, or a pod of an "
                   "in-flight NodeClaim, as namespace/name or a name that is unique; pods the provisioner does not "
                   "plan are listed on standard error)",
                   target);
  if (found > 1 && pending == 1 && same) {
    found = 1;
    kind = EX_PENDING;
    node = NULL;
    spec = p->pods[podi].spec;
  }
  if (found > 1)
    return dt__err(err, DT_EINVAL, "explain: %s names %zu pods (%s, %s%s); give namespace/name", target, found, first,
                   second, found > 2 ? ", ..." : "");
  dt_explain *ex = dt__calloc(1, sizeof *ex);
  if (!ex) return DT_ENOMEM;
  ex->kind = kind;
  ex->node = node;
  ex->spec = spec;
  ex->spec_known = spec_known;
  ex->node_at = -1;
  snprintf(ex->pod, sizeof ex->pod, "%s", first);
  p->ex = ex;
  p->ex_pod = podi;
  return 0;
}

/* ------------------------------------------------------------ one try */

static cJSON *entry(cJSON *list, const char *key, const char *name) {
  cJSON *e = dt__json_put(list, NULL, cJSON_CreateObject());
  dt__json_put_str(e, key, name);
  return e;
}

void ex_put_buf(cJSON *o, const char *key, dt_buf *b) {
  dt__json_put_str(o, key, b->p ? b->p : "");
  dt__free(b->p);
  memset(b, 0, sizeof *b);
}

void ex_describe_reqs(const dt_plan *p, const dt_req *r, dt_buf *b) { dt__req_describe(&p->syms, r, b); }

static void taint_text(const dt_plan *p, const rt_taint *t, dt_buf *b) {
  dt__buf_printf(b, "%s", dt__sym_str(&p->syms, t->key));
  const char *v = dt__sym_str(&p->syms, t->value);
  if (v && *v) dt__buf_printf(b, "=%s", v);
  dt__buf_printf(b, ":%s", k_effects[t->effect]);
}

/* The first resource of req that does not fit alloc - used. */
static void short_of(const dt_plan *p, const int64_t *alloc, const int64_t *used, const int64_t *req, dt_buf *b) {
  for (uint32_t r = 0; r < p->nres; r++) {
    if (req[r] <= alloc[r] - used[r]) continue;
    char need[64], free_[64], all[64];
    dt__fmt_quantity(need, sizeof need, p->res_names[r], req[r]);
    dt__fmt_quantity(free_, sizeof free_, p->res_names[r], alloc[r] - used[r] > 0 ? alloc[r] - used[r] : 0);
    dt__fmt_quantity(all, sizeof all, p->res_names[r], alloc[r]);
    dt__buf_printf(b, "not enough %s: needs %s, %s free of %s allocatable", p->res_names[r], need, free_, all);
    return;
  }
}

/* Who requires label key k of class c: the pod, or its volumes alone. */
static const char *who_requires(const dt_plan *p, const rt_class *c, dt_sym k) {
  return dt__sched_key_from_volume(p, &p->specs[c->spec_idx], k) ? "the pod's volumes require " : "the pod requires ";
}

/* "<who> requires <r>" of class c; a requirement that admits no value,
** where its volumes and the pod exclude each other, as each of them. */
static void requires_text(const dt_plan *p, const rt_class *c, const dt_req *r, dt_buf *b) {
  dt_buf why = {0};
  if (dt__sched_describe_conflict(p, c, r, &why)) {
    dt__buf_printf(b, "the pod's requirements on %s exclude each other (%s)", dt__sym_str(&p->syms, r->key),
                   why.p ? why.p : "");
  } else {
    dt__buf_puts(b, who_requires(p, c, r->key));
    ex_describe_reqs(p, r, b);
  }
  b->oom |= why.oom;
  dt__free(why.p);
}

/* Why existing node ni does not take class c (as node_fits), or false when it does. */
static bool node_refuses(const dt_plan *p, uint32_t ni, const rt_class *c, dt_buf *b) {
  const rt_node *n = &p->nodes[ni];
  const char *ct = node_condition_taint(n);
  bool refused = ct && !tolerates_taint(c->spec, ct, "", "NoSchedule");
  if (n->src->unschedulable && refused) {
    dt__buf_puts(b,
                 "cordoned (spec.unschedulable): taint node.kubernetes.io/unschedulable:NoSchedule is not tolerated");
    return true;
  }
  if (machine_deleting(n)) {
    dt__buf_puts(b, "being deleted (metadata.deletionTimestamp): takes no new pods");
    return true;
  }
  if (refused) {
    dt__buf_puts(b, "not Ready: taint node.kubernetes.io/not-ready:NoSchedule is not tolerated");
    return true;
  }
  if (!dt__x_fits(p, n->alloc, n->used, c->req)) {
    short_of(p, n->alloc, n->used, c->req, b);
    return true;
  }
  const rt_taint *t = NULL;
  if (!dt__x_tolerates(p, c->spec, n->taints, n->ntaints, c->tol_pref, &t)) {
    dt__buf_puts(b, "taint ");
    taint_text(p, t, b);
    dt__buf_puts(b, " is not tolerated");
    return true;
  }
  for (uint32_t i = 0; i < c->reqs.n; i++) {
    const dt_req *r = &c->reqs.r[i];
    dt_sym v = 0;
    for (uint32_t k = 0; k < n->nlabels; k++)
      if (n->lk[k] == r->key) v = n->lval[k];
    if (dt__req_has(&p->syms, r, v)) continue;
    requires_text(p, c, r, b);
    if (v)
      dt__buf_printf(b, "; the node has %s=%s", dt__sym_str(&p->syms, r->key), dt__sym_str(&p->syms, v));
    else
      dt__buf_printf(b, "; the node has no label %s", dt__sym_str(&p->syms, r->key));
    return true;
  }
  const rt_spec *s = &p->specs[c->spec_idx];
  if (dt__x_ports_conflict(p, s->ports, s->nports, n->ports.v, n->ports.n)) {
    dt__buf_puts(b, "a host port of the pod is taken on it");
    return true;
  }
  uint32_t over;
  if (n->nvlim && s->ncsi && !dt__sched_vols_fit(n, s, &over)) {
    dt__buf_printf(
        b, "its CSINode attaches at most %d volumes of %s and %d are attached or planned: the pod's would pass it",
        n->vlim[over].limit, dt__sym_str(&p->syms, n->vlim[over].driver), n->vlim[over].used);
    return true;
  }
  if (c->topo) {
    uint64_t Z = n->zone >= 0 ? 1ull << n->zone : 0;
    uint8_t C = n->ct >= 0 ? (uint8_t)(1u << n->ct) : 0;
    uint32_t why;
    if (dt__topo_check(p, c, ni, NULL, UINT32_MAX, &Z, &C, NULL, &why)) {
      dt__topo_explain(p, c, why, b);
      return true;
    }
  }
  return false;
}

/* Whether a reserved offering the options could launch is still free;
** *any tells whether the options have one at all (reserve() in sched_solve.c). */
static bool reservation_free(const dt_plan *p, const rt_pool *pl, const uint32_t *opt, uint32_t n, uint64_t zm,
                             uint8_t cm, const rt_claim *k, bool *any) {
  *any = false;
  for (uint32_t i = 0; i < n; i++) {
    const rt_type *t = &p->types[opt[i]];
    for (uint32_t o = 0; o < t->noff; o++) {
      const rt_off *of = &t->off[o];
      if (of->ct != DT_CT_RESERVED || of->avail == 0 || !(zm >> of->zone & 1) || !(cm >> of->ct & 1) ||
          !dt__spot_ok(of, pl->spot_max))
        continue;
      *any = true;
      bool held = false;
      for (size_t h = 0; k && h < k->held.n && !held; h++) held = k->held.v[h] == p->off_base[opt[i]] + o;
      if (held || of->avail < 0 || of->avail - of->held > 0) return true;
    }
  }
  return false;
}

/* Why claim k does not take class c (as claim_add), or false when it does. */
static bool claim_refuses(dt_plan *p, const rt_claim *k, const rt_class *c, dt_buf *b) {
  const rt_pool *pl = &p->pools[k->pool];
  const rt_spec *s = &p->specs[c->spec_idx];
  const rt_taint *t = NULL;
  const dt_req *bad = NULL;
  if (!dt__x_tolerates(p, c->spec, pl->taints, pl->ntaints, c->tol_pref, &t)) {
    dt__buf_printf(b, "its NodePool %s has taint ", pl->src->name);
    taint_text(p, t, b);
    dt__buf_puts(b, ", which the pod does not tolerate");
    return true;
  }
  if (!dt__x_compatible(p, &pl->reqs, &c->reqs, &bad)) {
    requires_text(p, c, bad, b);
    dt__buf_printf(b, ", which its NodePool %s does not allow", pl->src->name);
    return true;
  }
  if (dt__x_ports_conflict(p, s->ports, s->nports, pl->ds_ports, pl->nds_ports)) {
    dt__buf_printf(b, "a host port of the pod conflicts with a DaemonSet of NodePool %s", pl->src->name);
    return true;
  }
  if (dt__x_ports_conflict(p, s->ports, s->nports, k->ports.v, k->ports.n)) {
    dt__buf_puts(b, "a host port of the pod is taken by a pod on the claim");
    return true;
  }
  dt_reqs nr = k->reqs;
  uint64_t zm = k->zmask;
  uint8_t cm = k->ctmask;
  if (c->reqs.n) {
    if (!dt__x_compatible(p, &k->reqs, &c->reqs, &bad)) {
      const dt_req *ex = dt__reqs_get(&k->reqs, bad->key);
      requires_text(p, c, bad, b);
      if (ex) {
        dt__buf_puts(b, " but the claim's pods and NodePool allow ");
        ex_describe_reqs(p, ex, b);
      }
      return true;
    }
    dt__reqs_merge(&p->arena, &p->syms, &k->reqs, &c->reqs, &nr);
    uint64_t z2;
    uint8_t c2;
    dt__x_masks(p, &nr, &z2, &c2);
    zm &= z2;
    cm &= c2;
  }
  bool any_fit = false;
  for (uint32_t i = 0; i < k->nopt && !any_fit; i++) any_fit = dt__x_fits(p, pl->eff[k->opt[i]], k->used, c->req);
  if (!any_fit) {
    int64_t sum[DT_RES_MAX];
    for (uint32_t r = 0; r < DT_RES_MAX; r++) sum[r] = k->used[r] + c->req[r];
    dt__buf_printf(b, "none of its remaining instance types (%u) holds its pods (%zu) and this one (", k->nopt,
                   k->pods.n);
    for (uint32_t r = 0, first = 1; r < p->nres; r++) {
      if (!sum[r] || r == DT_R_PODS) continue;
      char q[64];
      dt__fmt_quantity(q, sizeof q, p->res_names[r], sum[r]);
      dt__buf_printf(b, "%s%s %s", first ? "" : ", ", p->res_names[r], q);
      first = 0;
    }
    dt__buf_puts(b, ")");
    return true;
  }
  if (c->topo) {
    uint32_t why;
    if (dt__topo_check(p, c, p->nnodes + k->idx, NULL, UINT32_MAX, &zm, &cm, NULL, &why)) {
      dt__topo_explain(p, c, why, b);
      return true;
    }
  }
  uint32_t *opt = dt__arena_alloc(&p->arena, (k->nopt ? k->nopt : 1) * sizeof *opt), n = 0;
  if (!opt) return false;
  for (uint32_t i = 0; i < k->nopt; i++)
    if (dt__x_fits(p, pl->eff[k->opt[i]], k->used, c->req) &&
        dt__type_ok(p, &p->types[k->opt[i]], &nr, zm, cm, pl->spot_max))
      opt[n++] = k->opt[i];
  if (!n) {
    dt__buf_puts(b, "no instance type that holds it has an available offering in the zones and capacity types the "
                    "claim and the pod both allow");
    return true;
  }
  if (pl->has_min_values && !dt__min_values_ok(p, &nr, opt, n)) {
    dt__buf_printf(b, "with it the claim's options would not meet NodePool %s's minValues", pl->src->name);
    return true;
  }
  bool any;
  if (pl->has_reserved && !reservation_free(p, pl, opt, n, zm, cm, k, &any) && (any || k->had_reserved)) {
    dt__buf_puts(b, "the capacity reservation units it could use are held by other claims (deferred)");
    return true;
  }
  return false;
}

/* Why NodePool pi cannot open a claim for class c (as new_claim), or false. */
static bool pool_refuses(dt_plan *p, uint32_t pi, rt_class *c, dt_buf *b) {
  const rt_pool *pl = &p->pools[pi];
  const rt_spec *s = &p->specs[c->spec_idx];
  const rt_taint *t = NULL;
  const dt_req *bad = NULL;
  if (dt__x_pool_unusable(pl, b)) return true;
  if (!dt__x_tolerates(p, c->spec, pl->taints, pl->ntaints, c->tol_pref, &t)) {
    dt__buf_puts(b, "taint ");
    taint_text(p, t, b);
    dt__buf_puts(b, t->effect == DT_TAINT_PREFER_NO_SCHEDULE
                        ? " is not tolerated (PreferNoSchedule taints are avoided until the last relaxation)"
                        : " is not tolerated");
    return true;
  }
  if (!dt__x_compatible(p, &pl->reqs, &c->reqs, &bad) ||
      dt__x_ports_conflict(p, s->ports, s->nports, pl->ds_ports, pl->nds_ports) || pl->nodes_remaining == 0) {
    dt__x_diagnose_pool(p, c, pi, b);
    return true;
  }
  if (!pl->ntypes) {
    dt__buf_puts(b, "no instance type in the catalog satisfies its requirements");
    return true;
  }
  dt_reqs nr;
  dt__reqs_merge(&p->arena, &p->syms, &pl->reqs, &c->reqs, &nr);
  uint64_t zm;
  uint8_t cm;
  dt__x_masks(p, &nr, &zm, &cm);
  if (c->topo) {
    uint32_t why;
    if (dt__topo_check(p, c, p->nnodes + (uint32_t)p->claims.n, &nr, pi, &zm, &cm, NULL, &why)) {
      dt__topo_explain(p, c, why, b);
      return true;
    }
  }
  uint32_t *opt = dt__arena_alloc(&p->arena, pl->ntypes * sizeof *opt), n = 0;
  if (!opt) return false;
  static const int64_t zero[DT_RES_MAX];
  for (uint32_t i = 0; i < pl->ntypes; i++) {
    const rt_type *ty = &p->types[pl->types[i]];
    bool over = false;
    for (uint32_t r = 0; r < p->nres && pl->has_limits && !over; r++)
      over = pl->remaining[r] != INT64_MAX && ty->cap[r] > pl->remaining[r];
    if (!over && dt__x_fits(p, pl->eff[pl->types[i]], zero, c->req) && dt__type_ok(p, ty, &nr, zm, cm, pl->spot_max))
      opt[n++] = pl->types[i];
  }
  if (!n) {
    dt__x_diagnose_pool(p, c, pi, b);
    return true;
  }
  if (pl->has_min_values && !dt__min_values_ok(p, &nr, opt, n)) {
    dt__buf_printf(b, "NodePool %s couldn't meet minValues for the pod's requirements", pl->src->name);
    return true;
  }
  bool any;
  if (pl->has_reserved && !reservation_free(p, pl, opt, n, zm, cm, NULL, &any) && any) {
    dt__buf_puts(b, "deferred: the capacity reservation units it could use are held by other claims of this plan");
    return true;
  }
  return false;
}

static void relaxed(const dt_plan *p, const dt_podspec *d, const rt_relax *rx, cJSON *list) {
  char tmp[200];
  if (rx->term) {
    snprintf(tmp, sizeof tmp, "required node affinity: term %u of %zu in use (the ones before it are dropped)",
             rx->term + 1, d->nterms);
    dt__json_put(list, NULL, cJSON_CreateString(tmp));
  }
  const struct {
    unsigned n;
    const char *what;
  } steps[] = {{rx->paff, "preferred pod-affinity terms dropped (heaviest first)"},
               {rx->panti, "preferred pod anti-affinity terms dropped (heaviest first)"},
               {rx->pref, "preferred node-affinity terms dropped (heaviest first)"},
               {rx->anyway, "ScheduleAnyway topology spreads dropped"}};
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
    if (steps[i].n) {
      snprintf(tmp, sizeof tmp, "%u %s", steps[i].n, steps[i].what);
      dt__json_put(list, NULL, cJSON_CreateString(tmp));
    }
  if (rx->tol_pref && p->any_prefer_taint)
    dt__json_put(list, NULL, cJSON_CreateString("PreferNoSchedule taints tolerated (the last relaxation)"));
}

static void more(cJSON *o, const char *key, size_t n, const char *what) {
  if (!n) return;
  char tmp[120];
  snprintf(tmp, sizeof tmp, "%zu more %s", n, what);
  dt__json_put_str(o, key, tmp);
}

void dt__explain_attempt(dt_plan *p, uint32_t ci, const rt_relax *rx, rt_claim *const *order, size_t norder,
                         uint32_t pass, uint32_t pos, uint32_t qlen) {
  dt_explain *ex = p->ex;
  rt_class *c = &p->classes.v[ci];
  ex->tries++;
  ex->pass = pass;
  ex->pos = pos;
  ex->qlen = qlen;
  ex->cls = ci;
  ex->tried.n = 0;
  cJSON_Delete(ex->attempt);
  cJSON *a = ex->attempt = cJSON_CreateObject();
  if (!a) return;
  dt_buf b = {0};
  relaxed(p, c->spec, rx, dt__json_put(a, "relaxed", cJSON_CreateArray()));
  /* 1. Existing nodes and in-flight claims, in order, up to the first that takes it. */
  cJSON *nodes = dt__json_put(a, "nodes", cJSON_CreateArray());
  size_t listed = 0, unlisted = 0;
  const char *taken = NULL; /* what takes it before a new claim is tried */
  for (uint32_t i = 0; i < p->nnodes; i++) {
    bool no = node_refuses(p, i, c, &b);
    if (listed < EX_LIST_MAX || !no) {
      cJSON *e = entry(nodes, "name", p->nodes[i].src->name);
      dt__json_put_str(e, "kind", p->nodes[i].src->claim_name ? "NodeClaim" : "Node");
      if (no)
        ex_put_buf(e, "reason", &b);
      else
        dt__json_put_str(e, "takes", "the first that fits, in order: initialized first, then by name");
      listed++;
    } else {
      unlisted++;
    }
    dt__free(b.p);
    memset(&b, 0, sizeof b);
    if (!no) {
      taken = "an existing node takes it first";
      break;
    }
  }
  more(a, "moreNodes", unlisted, "nodes refuse it");
  /* 2. Claims opened in this plan, least loaded first. */
  cJSON *claims = dt__json_put(a, "claims", cJSON_CreateArray());
  listed = unlisted = 0;
  for (size_t i = 0; i < norder && !taken; i++) {
    const rt_claim *k = order[i];
    bool no = claim_refuses(p, k, c, &b);
    if (listed < EX_LIST_MAX || !no) {
      char label[80];
      snprintf(label, sizeof label, "claim %u of this plan", k->idx + 1);
      cJSON *e = entry(claims, "claim", label);
      dt__json_put_str(e, "nodePool", p->pools[k->pool].src->name);
      dt__json_put_num(e, "pods", (double)k->pods.n);
      if (no)
        ex_put_buf(e, "reason", &b);
      else
        dt__json_put_str(e, "takes", "the least loaded open claim that fits");
      if (dt__vec_push(&ex->tried, (rt_claim *)k)) p->arena.oom = 1;
      listed++;
    } else {
      unlisted++;
    }
    dt__free(b.p);
    memset(&b, 0, sizeof b);
    if (!no) taken = "a claim opened earlier in this plan takes it first";
  }
  more(a, "moreClaims", unlisted, "claims refuse it");
  /* 3. NodePools by weight: the first that can open a claim does. */
  cJSON *pools = dt__json_put(a, "nodePools", cJSON_CreateArray());
  int opener = -1;
  for (uint32_t pi = 0; pi < p->npools; pi++) {
    const rt_pool *pl = &p->pools[pi];
    cJSON *e = entry(pools, "name", pl->src->name);
    dt__json_put_num(e, "weight", pl->src->weight);
    if (opener >= 0) {
      char tmp[400];
      snprintf(tmp, sizeof tmp, "not tried: NodePool %s comes first in weight order", p->pools[opener].src->name);
      dt__json_put_str(e, "reason", tmp);
      continue;
    }
    if (pool_refuses(p, pi, c, &b)) {
      ex_put_buf(e, "reason", &b);
    } else if (c->no_new_claim) {
      dt__json_put_str(e, "reason", "a pod of the same constraints found no NodePool earlier in this plan");
    } else {
      opener = (int)pi;
      char tmp[200];
      snprintf(tmp, sizeof tmp, "%s a NodeClaim for it%s%s", taken ? "would open" : "can open",
               taken ? ", but " : ": the first NodePool in weight order that can", taken ? taken : "");
      dt__json_put_str(e, "opens", tmp);
    }
  }
  dt__free(b.p);
}

void dt__explain_outcome(dt_plan *p, bool placed, size_t nbindings, size_t nclaims, rt_claim *const *order,
                         size_t norder) {
  dt_explain *ex = p->ex;
  ex->node_at = -1;
  ex->claim_at = NULL;
  ex->new_claim = false;
  if (!placed) return;
  if (p->bindings.n > nbindings) {
    ex->node_at = (int32_t)p->bindings.v[nbindings].node;
  } else if (p->claims.n > nclaims) {
    ex->claim_at = p->claims.v[nclaims];
    ex->new_claim = true;
  } else {
    for (size_t i = 0; i < norder && !ex->claim_at; i++)
      if (order[i]->pods.n && order[i]->pods.v[order[i]->pods.n - 1] == (uint32_t)p->ex_pod) ex->claim_at = order[i];
  }
}

/* ------------------------------------------------------------- render */

const char *ex_str(const cJSON *o, const char *k) {
  return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static void text_requests(dt_buf *b, const cJSON *r) {
  bool first = true;
  for (const cJSON *c = r ? r->child : NULL; c; c = c->next) {
    dt__buf_printf(b, "%s%s %s", first ? "" : ", ", c->string, c->valuestring);
    first = false;
  }
  if (first) dt__buf_puts(b, "none");
}

static void text_list(dt_buf *b, const cJSON *list, const char *key, const char *title) {
  if (!cJSON_GetArraySize(list)) return;
  dt__buf_printf(b, "  %s:\n", title);
  for (const cJSON *e = list->child; e; e = e->next) {
    const char *name = ex_str(e, "name");
    const char *label = ex_str(e, key);
    dt__buf_printf(b, "    %s", label ? label : "");
    if (name && strcmp(key, "name")) dt__buf_printf(b, " (%s)", name);
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(e, "weight");
    if (w) dt__buf_printf(b, " (weight %d)", (int)w->valuedouble);
    const char *np = ex_str(e, "nodePool");
    if (np)
      dt__buf_printf(b, " [NodePool %s, pods: %d]", np,
                     (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "pods")));
    const char *why = ex_str(e, "reason"), *takes = ex_str(e, "takes"), *opens = ex_str(e, "opens");
    dt__buf_printf(b, ": %s\n", why ? why : takes ? takes : opens ? opens : "");
  }
}

static void render_text(const cJSON *d, dt_buf *b) {
  dt__buf_printf(b, "pod %s\n", ex_str(d, "pod"));
  dt__buf_puts(b, "  requests: ");
  text_requests(b, cJSON_GetObjectItemCaseSensitive(d, "requests"));
  dt__buf_putc(b, '\n');
  dt__buf_printf(b, "  result: %s\n", ex_str(d, "summary"));
  const cJSON *q = cJSON_GetObjectItemCaseSensitive(d, "queue");
  if (q)
    dt__buf_printf(b,
                   "  queue: %d of %d pending pods (cpu, then memory, descending); last tried in pass %d (tries: %d)\n",
                   (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(q, "position")),
                   (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(q, "of")),
                   (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(q, "pass")),
                   (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(q, "tries")));
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(d, "lastTry");
  if (t) {
    const cJSON *rl = cJSON_GetObjectItemCaseSensitive(t, "relaxed");
    if (cJSON_GetArraySize(rl)) {
      dt__buf_puts(b, "  relaxed (Karpenter's order):\n");
      for (const cJSON *e = rl->child; e; e = e->next) dt__buf_printf(b, "    %s\n", e->valuestring);
    }
    text_list(b, cJSON_GetObjectItemCaseSensitive(t, "nodes"), "name",
              "existing nodes and in-flight NodeClaims, tried first");
    const char *m = ex_str(t, "moreNodes");
    if (m) dt__buf_printf(b, "    (%s)\n", m);
    text_list(b, cJSON_GetObjectItemCaseSensitive(t, "claims"), "claim",
              "NodeClaims opened earlier in this plan, least loaded first");
    if ((m = ex_str(t, "moreClaims"))) dt__buf_printf(b, "    (%s)\n", m);
    text_list(b, cJSON_GetObjectItemCaseSensitive(t, "nodePools"), "name", "NodePools, by weight");
  }
  const char *why = ex_str(d, "whyNotNewNodeClaim");
  if (why) dt__buf_printf(b, "  why not a new NodeClaim: %s\n", why);
  const cJSON *nc = cJSON_GetObjectItemCaseSensitive(d, "nodeClaim");
  if (nc) {
    char pr[64];
    dt__buf_printf(b, "  launched: %s in %s, %s, $%s/hour; chosen by %s\n", ex_str(nc, "instanceType"),
                   ex_str(nc, "zone"), ex_str(nc, "capacityType"),
                   ex_price_text(cJSON_GetObjectItemCaseSensitive(nc, "price"), pr, sizeof pr), ex_str(nc, "chosenBy"));
    dt__buf_printf(b, "  the claim: pods: %d, requests ",
                   (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(nc, "pods")));
    text_requests(b, cJSON_GetObjectItemCaseSensitive(nc, "requests"));
    dt__buf_printf(b, "; %d instance-type options\n",
                   (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(nc, "instanceTypeOptions")));
  }
  const cJSON *ch = cJSON_GetObjectItemCaseSensitive(d, "cheaperOfferings");
  if (ch) {
    int n = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(ch, "count"));
    char pr[64];
    dt__buf_printf(b, "  cheaper offerings not chosen: %d%s\n", n, n ? ", by reason (cheapest first):" : "");
    for (const cJSON *g = cJSON_GetObjectItemCaseSensitive(ch, "byReason")->child; g; g = g->next) {
      int cnt = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(g, "count"));
      dt__buf_printf(b, "    %s: %d\n", ex_str(g, "description"), cnt);
      int shown = 0;
      for (const cJSON *o = cJSON_GetObjectItemCaseSensitive(g, "cheapest")->child; o; o = o->next) {
        const cJSON *zs = cJSON_GetObjectItemCaseSensitive(o, "zones");
        dt__buf_printf(b, "      %s %s $%s in ", ex_str(o, "instanceType"), ex_str(o, "capacityType"),
                       ex_price_text(cJSON_GetObjectItemCaseSensitive(o, "price"), pr, sizeof pr));
        for (const cJSON *z = zs->child; z; z = z->next, shown++)
          dt__buf_printf(b, "%s%s", z == zs->child ? "" : ", ", z->valuestring);
        dt__buf_printf(b, ": %s\n", ex_str(o, "why"));
      }
      if (cnt > shown) dt__buf_printf(b, "      ... and %d more offerings\n", cnt - shown);
    }
  }
}

const cJSON *dt__plan_explain_doc(const dt_plan *plan) { return plan && plan->ex ? plan->ex->doc : NULL; }

char *dt_plan_explain_render(const dt_plan *plan, dt_format format, size_t *len) {
  if (!plan || !plan->ex || !plan->ex->doc) return NULL;
  dt_buf b = {0};
  if (format == DT_FORMAT_TABLE)
    render_text(plan->ex->doc, &b);
  else
    dt__doc_write(plan->ex->doc, format, &b);
  return dt__buf_take(&b, len);
}
