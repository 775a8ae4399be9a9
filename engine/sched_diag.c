/*
** sched_diag.c: why a pod fits nowhere, in words a person can act on. Per
** NodePool the first reason that holds, in the order Karpenter's messages
** give them: a taint, a requirement, a host port, a static pool, the nodes
** limit; then what the allowed types lack (the largest allocatable of each
** resource the pod wants more of) or that no single type fits all. When a
** class is blocked by topology, the constraint that failed, found by running
** its last check again on a fresh host. Found once per class and shared by
** its pods; reads the solver's state, never changes a decision.
*/
#include "sched_int.h"

/* Whether requirement key k of spec s comes from where its volumes can be
** (rt_spec.vol, or a replica's own) and not from the pod's node selector or
** affinity: a reason then names the volumes, which the pod does not show. */
bool dt__sched_key_from_volume(const dt_plan *p, const rt_spec *s, dt_sym k) {
  const dt_podspec *d = s->src;
  for (size_t i = 0; i < d->node_selector.n; i++)
    if (dt__sym_find(&p->syms, req_key(p, d->node_selector.v[i].key)) == k) return false;
  for (size_t t = 0; t < d->nterms; t++)
    for (size_t i = 0; i < d->terms[t].n; i++)
      if (dt__sym_find(&p->syms, req_key(p, d->terms[t].v[i].key)) == k) return false;
  for (uint32_t o = 0; o <= s->nord; o++) {
    const dt_mreqs *const *vol = o < s->nord ? s->ord[o].vol : s->vol;
    uint32_t nv = o < s->nord ? s->ord[o].nvol : s->nvol;
    for (uint32_t v = 0; v < nv; v++)
      for (size_t i = 0; i < vol[v]->n; i++)
        if (dt__sym_find(&p->syms, req_key(p, vol[v]->v[i].key)) == k) return true;
  }
  return false;
}

/* Why NodePool pi takes no pod of class c whatever its types: a taint, a
** requirement, a host port, a static pool or its nodes limit; appended to b.
** False when none of those holds. */
static bool diagnose_pool_terms(dt_plan *p, rt_class *c, uint32_t pi, dt_buf *b) {
  const rt_spec *s = &p->specs[c->spec_idx];
  rt_pool *pl = &p->pools[pi];
  const char *pn = pl->src->name;
  const rt_taint *t = NULL;
  const dt_req *bad = NULL;
  if (!tolerates(p, c->spec, pl->taints, pl->ntaints, true, &t)) {
    static const char *eff[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
    dt__buf_printf(b, "NodePool %s has taint %s=%s:%s that the pod does not tolerate", pn,
                   dt__sym_str(&p->syms, t->key), dt__sym_str(&p->syms, t->value), eff[t->effect]);
    return true;
  }
  if (!compatible(p, &pl->reqs, &c->reqs, &bad)) {
    bad = first_incompatible(p, &pl->reqs, &c->reqs);
    const dt_req *ex = dt__reqs_get(&pl->reqs, bad->key);
    dt__buf_puts(b, dt__sched_key_from_volume(p, s, bad->key) ? "the pod's volumes require " : "pod requires ");
    dt__req_describe(&p->syms, bad, b);
    if (ex) {
      dt__buf_printf(b, " but NodePool %s allows ", pn);
      dt__req_describe(&p->syms, ex, b);
    } else if (bad->key == p->k_hostname) {
      dt__buf_printf(b,
                     ": a new node of NodePool %s gets a hostname of its own, so only an existing node named so "
                     "qualifies",
                     pn);
    } else {
      dt__buf_printf(b, " but NodePool %s does not define label %s", pn, dt__sym_str(&p->syms, bad->key));
    }
    return true;
  }
  if (dt__sched_ports_conflict(p, s->ports, s->nports, pl->ds_ports, pl->nds_ports)) {
    dt__buf_printf(b, "a host port of the pod conflicts with a DaemonSet on NodePool %s", pn);
    return true;
  }
  if (pl->replicas >= 0) {
    dt__buf_printf(b,
                   "NodePool %s is static (spec.replicas %lld): pods open no NodeClaims on it, and none of its "
                   "nodes has room",
                   pn, (long long)pl->replicas);
    return true;
  }
  if (pl->nodes_remaining == 0) {
    dt__buf_printf(b, "NodePool %s has reached its nodes limit", pn);
    return true;
  }
  return false;
}

/* What the types a NodePool allows a class offer: per resource the largest
** allocatable and its type, how many types are allowed at all, whether the
** pool's limits left some out, and the zones and capacity types allowed. */
typedef struct pool_room {
  int64_t best[DT_RES_MAX];
  const rt_type *bt[DT_RES_MAX];
  uint32_t allowed;
  bool limited;
  uint64_t zm;
  uint8_t cm;
} pool_room;

static void pool_room_of(dt_plan *p, rt_class *c, const rt_pool *pl, pool_room *pr) {
  memset(pr, 0, sizeof *pr);
  dt_reqs nr;
  dt__reqs_merge(&p->arena, &p->syms, &pl->reqs, &c->reqs, &nr);
  masks(p, &nr, &pr->zm, &pr->cm);
  for (uint32_t i = 0; i < pl->ntypes; i++) {
    const rt_type *ty = &p->types[pl->types[i]];
    if (!dt__type_ok(p, ty, &nr, pr->zm, pr->cm, pl->spot_max)) continue;
    pr->allowed++;
    bool over = false;
    for (uint32_t r = 0; r < p->nres && pl->has_limits; r++)
      over |= pl->remaining[r] != INT64_MAX && ty->cap[r] > pl->remaining[r];
    if (over) {
      pr->limited = true;
      continue;
    }
    const int64_t *e = pl->eff[pl->types[i]];
    for (uint32_t r = 0; r < p->nres; r++)
      if (e[r] > pr->best[r] || !pr->bt[r]) {
        pr->best[r] = e[r];
        pr->bt[r] = ty;
      }
  }
}

/* Whether value v is one of q's. */
static bool mreq_has(const dt_mreq *q, const char *v) {
  for (size_t i = 0; i < q->n; i++)
    if (!strcmp(q->vals[i], v)) return true;
  return false;
}

/* Whether class c's requirement r admits no value because the In
** requirements on its key exclude each other (a volume bound in one zone and
** a claim template's class in another, or a volume and the pod's own node
** selector); if so each of them is appended to b ("its volumes (...)
** require In [a] and In [b]"). The pod's own are its node selector and,
** with one term, its node affinity; the volumes' are the spec's, or the
** replica's own the class was made for. */
bool dt__sched_describe_conflict(const dt_plan *p, const rt_class *c, const dt_req *r, dt_buf *b) {
  const rt_spec *s = &p->specs[c->spec_idx];
  const dt_podspec *d = s->src;
  if (r->complement || r->n || r->has_gte || r->has_lte || (!s->nvol && !s->nord)) return false;
  const char *key = dt__sym_str(&p->syms, r->key), *sel = NULL;
  const dt_mreq *all[64];
  size_t n = 0, nown;
  for (size_t i = 0; i < d->node_selector.n; i++)
    if (!strcmp(req_key(p, d->node_selector.v[i].key), key)) sel = d->node_selector.v[i].val;
  for (size_t i = 0; d->nterms == 1 && i < d->terms[0].n && n < 64; i++)
    if (d->terms[0].v[i].op == DT_OP_IN && !strcmp(req_key(p, d->terms[0].v[i].key), key)) all[n++] = &d->terms[0].v[i];
  nown = n;
  const dt_mreqs *const *vol = c->ov ? c->ov->vol : s->vol;
  for (uint32_t v = 0, nv = c->ov ? c->ov->nvol : s->nvol; v < nv; v++)
    for (size_t i = 0; i < vol[v]->n && n < 64; i++)
      if (vol[v]->v[i].op == DT_OP_IN && !strcmp(req_key(p, vol[v]->v[i].key), key)) all[n++] = &vol[v]->v[i];
  if (n == nown || n + (sel != NULL) < 2) return false;
  /* a value every one of them takes: then they do not exclude each other */
  for (size_t j = 0; j < all[0]->n; j++) {
    const char *v = all[0]->vals[j];
    bool ok = !sel || !strcmp(sel, v);
    for (size_t i = 1; i < n && ok; i++) ok = mreq_has(all[i], v);
    if (ok) return false;
  }
  if (sel) dt__buf_printf(b, "its nodeSelector says %s; ", sel);
  for (size_t i = 0; i < n; i++) {
    if (i == 0 && nown) dt__buf_puts(b, "its node affinity requires");
    if (i == nown)
      dt__buf_puts(b, "its volumes (a PersistentVolume's node affinity, a StorageClass's allowedTopologies) require");
    dt__buf_puts(b, i && i != nown ? " and In [" : " In [");
    for (size_t j = 0; j < all[i]->n && j < 8; j++) dt__buf_printf(b, "%s%s", j ? ", " : "", all[i]->vals[j]);
    dt__buf_puts(b, all[i]->n > 8 ? ", ...]" : "]");
    if (i + 1 == nown) dt__buf_puts(b, "; ");
  }
  return true;
}

/* No type of the pool is allowed: the pod's requirements, as it wrote them. */
static void diagnose_no_type(dt_plan *p, rt_class *c, const char *pn, const pool_room *pr, dt_buf *b) {
  for (uint32_t k = 0; k < c->reqs.n; k++) { /* a requirement that admits no value: where it comes from */
    dt_buf why = {0};
    bool conflict = dt__sched_describe_conflict(p, c, &c->reqs.r[k], &why);
    if (conflict)
      dt__buf_printf(b, "no node of NodePool %s can hold the pod: on %s %s, which no node meets at once", pn,
                     dt__sym_str(&p->syms, c->reqs.r[k].key), why.p ? why.p : "");
    b->oom |= why.oom;
    dt__free(why.p);
    if (conflict) return;
  }
  dt__buf_printf(b, "no instance type in NodePool %s satisfies the pod's requirements", pn);
  uint32_t *idx = c->reqs.n ? A(p, c->reqs.n * sizeof *idx) : NULL;
  if (idx) {
    dt__reqs_order(p, &c->reqs, idx);
    dt__buf_puts(b, " (");
    for (uint32_t k = 0; k < c->reqs.n; k++) {
      if (k) dt__buf_puts(b, ", ");
      dt__req_describe(&p->syms, &c->reqs.r[idx[k]], b);
    }
    dt__buf_puts(b, ")");
  }
  if (!(pr->cm & ~(1u << DT_CT_RESERVED)) || !pr->zm)
    dt__buf_puts(b, " with an available offering in the allowed zones and capacity types");
}

/* Types are allowed but none is large enough: each resource the pod wants
** more of than the largest type has, or, when each alone fits, that no
** single type fits them all. */
static void diagnose_sizes(dt_plan *p, rt_class *c, const rt_pool *pl, const pool_room *pr, dt_buf *b) {
  const char *pn = pl->src->name;
  bool said = false;
  for (uint32_t r = 0; r < p->nres; r++) {
    if (c->req[r] <= pr->best[r]) continue;
    char need[64], have[64], cap[64];
    dt__fmt_quantity(need, sizeof need, p->res_names[r], c->req[r]);
    dt__fmt_quantity(have, sizeof have, p->res_names[r], pr->best[r]);
    dt__fmt_quantity(cap, sizeof cap, p->res_names[r], pr->bt[r] ? pr->bt[r]->cap[r] : 0);
    if (!pr->best[r])
      dt__buf_printf(b, "%sno instance type in NodePool %s has %s", said ? ", and " : "", pn, p->res_names[r]);
    else
      dt__buf_printf(
          b, "%sno instance type in NodePool %s has %s %s; the largest allowed (%s) has %s allocatable of %s",
          said ? ", and " : "", pn, need, p->res_names[r], dt__sym_str(&p->syms, pr->bt[r]->name), have, cap);
    said = true;
  }
  if (pr->limited && said) dt__buf_puts(b, " within its limits");
  if (said && pl->src && p->manifests->daemonsets.n) dt__buf_puts(b, " after DaemonSet overhead");
  if (said) return;
  if (pl->has_min_values) {
    dt__buf_printf(b, "NodePool %s couldn't meet minValues for the pod's requirements", pn);
    return;
  }
  dt__buf_printf(b, "no single instance type in NodePool %s fits all of the pod's requests (", pn);
  for (uint32_t r = 0, first = 1; r < p->nres; r++) {
    if (!c->req[r] || r == DT_R_PODS) continue;
    char q[64];
    dt__fmt_quantity(q, sizeof q, p->res_names[r], c->req[r]);
    dt__buf_printf(b, "%s%s %s", first ? "" : ", ", p->res_names[r], q);
    first = 0;
  }
  dt__buf_puts(b, pr->limited ? ") within its limits" : ")");
}

const char *dt__x_pool_left_out(const rt_pool *pl, char *buf, size_t n) {
  const dt_nodepool *np = pl->src;
  const dt_nodeclass *nc = pl->nodeclass;
  if (np->unusable) return np->unusable;
  if (nc && nc->family == DT_AMI_WINDOWS)
    snprintf(buf, n,
             "its EC2NodeClass %s runs Windows (%s), whose nodes dovetail does not model (kubernetes.io/os windows, "
             "the windows-build label, amd64 only)",
             nc->name, nc->family_name);
  else if (nc && nc->unready)
    snprintf(buf, n, "its EC2NodeClass %s has %s", nc->name, nc->unready);
  else
    return NULL;
  return buf;
}

bool dt__x_pool_unusable(const rt_pool *pl, dt_buf *b) {
  char buf[600];
  const char *why = dt__x_pool_left_out(pl, buf, sizeof buf);
  if (why) dt__buf_printf(b, "NodePool %s launches nothing: %s", pl->src->name, why);
  return why != NULL;
}

/* Why NodePool pi cannot open a claim for class c, appended to b. */
static void diagnose_pool(dt_plan *p, rt_class *c, uint32_t pi, dt_buf *b) {
  const rt_pool *pl = &p->pools[pi];
  if (dt__x_pool_unusable(pl, b)) return;
  if (diagnose_pool_terms(p, c, pi, b)) return;
  pool_room pr;
  pool_room_of(p, c, pl, &pr);
  if (!pr.allowed)
    diagnose_no_type(p, c, pl->src->name, &pr, b);
  else if (pr.limited && !pr.bt[0])
    dt__buf_printf(b, "NodePool %s limits leave no room for another node", pl->src->name);
  else
    diagnose_sizes(p, c, pl, &pr, b);
}

/* A reason a person can act on, per NodePool, for a pod that fits nowhere:
** the first DIAG_POOLS NodePools in the order they are tried, then how many
** more (every pod of the class carries the text, and 15,000 pods of 150
** NodePools each made 300 MB of plan; --explain gives every NodePool's). */
#define DIAG_POOLS 8
static const char *diagnose(dt_plan *p, rt_class *c) {
  dt_buf b = {0};
  if (p->npools == 0) {
    dt__buf_puts(&b, "no NodePool in the input, and no existing node fits");
    return arena_buf(p, &b);
  }
  for (uint32_t pi = 0; pi < p->npools && pi < DIAG_POOLS; pi++) {
    if (pi) dt__buf_puts(&b, "; ");
    diagnose_pool(p, c, pi, &b);
  }
  if (p->npools > DIAG_POOLS)
    dt__buf_printf(&b, "; and %u more NodePools (dovetail plan --explain POD gives each)", p->npools - DIAG_POOLS);
  return arena_buf(p, &b);
}

int dt__sched_unschedulable(dt_plan *p, uint32_t podi, const char *reason) {
  rt_unsched u = {podi, reason};
  return dt__vec_push(&p->unsched, u);
}

/* Re-run class c's last topology check on a fresh host to find the
** constraint that failed, if topology is what blocks it; NULL otherwise. */
static const char *topo_reason(dt_plan *p, rt_class *c) {
  if (!c->topo) return NULL;
  for (uint32_t pi = 0; pi < p->npools; pi++) {
    if (!dt__sched_pool_ok(p, c, pi)) continue;
    dt_reqs nr;
    dt__reqs_merge(&p->arena, &p->syms, &p->pools[pi].reqs, &c->reqs, &nr);
    uint64_t zm;
    uint8_t cm;
    masks(p, &nr, &zm, &cm);
    uint32_t f;
    if (dt__topo_check(p, c, p->nnodes + (uint32_t)p->claims.n, &nr, pi, &zm, &cm, NULL, &f)) {
      dt_buf b = {0};
      dt__topo_explain(p, c, f, &b);
      return arena_buf(p, &b);
    }
  }
  return NULL;
}

/* Whatever is left in the queue is unschedulable: each pod with the reason
** of its last (relaxed) class, found once per class. */
int dt__sched_report_unschedulable(dt_plan *p, const uint32_t *queue, uint32_t qn, const int32_t *last_class) {
  const char **reason = dt__calloc(p->classes.n ? p->classes.n : 1, sizeof *reason);
  if (!reason) return DT_ENOMEM;
  int rc = 0;
  for (uint32_t i = 0; i < qn && !rc; i++) {
    uint32_t podi = queue[i];
    int ci = last_class[podi];
    if (ci < 0) {
      rc = dt__sched_unschedulable(
          p, podi,
          "deferred: a capacity reservation this pod's NodePool can use is held by other node claims of "
          "this plan; plan again once they launch (feed their NodeClaims back as input)");
      continue;
    }
    rt_class *c = &p->classes.v[ci];
    if (!reason[ci]) {
      const char *why = topo_reason(p, c);
      reason[ci] = why ? why : diagnose(p, c);
    }
    rc = dt__sched_unschedulable(p, podi, reason[ci]);
  }
  dt__free(reason);
  return rc;
}

/* For explain.c: one NodePool's reason, as an unschedulable pod gets it. */
void dt__x_diagnose_pool(dt_plan *p, rt_class *c, uint32_t pi, dt_buf *b) { diagnose_pool(p, c, pi, b); }
