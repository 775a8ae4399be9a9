/*
** sched.c: Karpenter's provisioning scheduler, first-fit-decreasing.
**
** A run compiles the catalog and the manifests into integer form (interned
** labels, resource vectors in milli-units, per-NodePool lists of compatible
** instance types), then places pods one by one in Karpenter's order:
** sorted by cpu, then memory, descending; each pod tries existing and
** in-flight nodes, then the node claims opened in this run (least loaded
** first), then a new claim from each NodePool by weight. A claim keeps every
** instance type that still fits its pods; at the end it launches the best
** offering of the remaining types. See reference: karpenter.md 1.3-1.5, 1.12.
**
** What makes it fast without changing a decision:
**   - pods with the same requests and constraints form a class; a claim or
**     node that refused a class refuses it for the rest of the run (claims
**     only fill up and narrow), so each (claim, class) pair fails once;
**   - a claim's options are kept in price order and pruned from the front:
**     the types a pod skipped over before the first that fits cannot fit
**     once the pod is added;
**   - a claim that cannot fit even the smallest pod still queued is closed
**     and leaves the search.
*/
#include "sched.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t dt__rlist_get(const dt_rlist *r, const char *name);

#define A(p, n) dt__arena_alloc(&(p)->arena, (n))

/* ------------------------------------------------------------ helpers */

static int res_index(dt_plan *p, const char *name, dt_error *err) {
  for (uint32_t i = 0; i < p->nres; i++)
    if (strcmp(p->res_names[i], name) == 0) return (int)i;
  if (p->nres == DT_RES_MAX)
    return dt__err(err, DT_ERANGE, "more than %d distinct resource names (at \"%s\")", DT_RES_MAX,
                   name);
  p->res_names[p->nres] = dt__arena_strdup(&p->arena, name);
  if (!p->res_names[p->nres]) return DT_ENOMEM;
  return (int)p->nres++;
}

static int rlist_vec(dt_plan *p, const dt_rlist *r, int64_t *out, dt_error *err) {
  for (size_t i = 0; i < r->n; i++) {
    int k = res_index(p, r->v[i].name, err);
    if (k < 0) return k;
    out[k] = r->v[i].milli;
  }
  return 0;
}

static int taint_effect(const char *e) {
  return strcmp(e, "PreferNoSchedule") == 0 ? 1 : strcmp(e, "NoExecute") == 0 ? 2 : 0;
}

static rt_taint *compile_taints(dt_plan *p, const dt_taint *t, size_t n) {
  rt_taint *out = A(p, (n ? n : 1) * sizeof *out);
  if (!out) return NULL;
  for (size_t i = 0; i < n; i++) {
    out[i].key = dt__sym(&p->syms, t[i].key);
    out[i].value = dt__sym(&p->syms, t[i].value);
    out[i].effect = (uint8_t)taint_effect(t[i].effect);
  }
  return out;
}

/* Whether the pod tolerates every NoSchedule/NoExecute taint. PreferNoSchedule
** taints never block (Karpenter only avoids them during relaxation). */
static bool tolerates(const dt_plan *p, const dt_podspec *s, const rt_taint *t, uint32_t n,
                      const rt_taint **which) {
  for (uint32_t i = 0; i < n; i++) {
    if (t[i].effect == 1) continue;
    const char *key = dt__sym_str(&p->syms, t[i].key);
    const char *val = dt__sym_str(&p->syms, t[i].value);
    static const char *eff[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
    bool ok = false;
    for (size_t k = 0; k < s->ntol && !ok; k++) {
      const dt_toleration *o = &s->tol[k];
      if (o->effect && strcmp(o->effect, eff[t[i].effect])) continue;
      if (!o->key) {
        ok = strcmp(o->op, "Exists") == 0;
        continue;
      }
      if (strcmp(o->key, key)) continue;
      ok = strcmp(o->op, "Exists") == 0 || strcmp(o->value, val) == 0;
    }
    if (!ok) {
      if (which) *which = &t[i];
      return false;
    }
  }
  return true;
}

static int compile_mreq(dt_plan *p, const dt_mreq *m, dt_req *out) {
  dt_sym stack[32];
  dt_sym *vals = m->n <= 32 ? stack : A(p, m->n * sizeof *vals);
  if (!vals) return DT_ENOMEM;
  for (size_t i = 0; i < m->n; i++) vals[i] = dt__sym(&p->syms, m->vals[i]);
  dt__req_make(&p->arena, out, dt__sym(&p->syms, m->key), m->op, vals, (uint32_t)m->n, &p->syms);
  out->min_values = m->min_values;
  return 0;
}

static int16_t slot_of(const dt_plan *p, dt_sym key) {
  return key < p->nkeyslot ? p->keyslot[key] : -1;
}

/* Allowed zones and capacity types of a requirement set. */
static void masks(const dt_plan *p, const dt_reqs *r, uint64_t *zmask, uint8_t *ctmask) {
  const dt_req *z = dt__reqs_get(r, p->k_zone), *c = dt__reqs_get(r, p->k_ct);
  *zmask = 0;
  for (uint32_t i = 0; i < p->nzones; i++)
    if (!z || dt__req_has(&p->syms, z, p->zones[i])) *zmask |= 1ull << i;
  *ctmask = 0;
  for (int i = 0; i < DT_CT_N; i++)
    if (!c || dt__req_has(&p->syms, c, p->ct_sym[i])) *ctmask |= (uint8_t)(1u << i);
}

static bool off_ok(const rt_off *o, uint64_t zmask, uint8_t ctmask) {
  return o->avail != 0 && (zmask >> o->zone & 1) && (ctmask >> o->ct & 1);
}

/* Whether instance type t satisfies the requirements' label constraints and
** has an available offering within the masks. */
static bool type_ok(const dt_plan *p, const rt_type *t, const dt_reqs *r, uint64_t zmask,
                    uint8_t ctmask) {
  for (uint32_t i = 0; i < r->n; i++) {
    int16_t s = slot_of(p, r->r[i].key);
    if (s < 0) continue;
    if (!dt__req_has(&p->syms, &r->r[i], t->lv[s])) return false;
  }
  for (uint32_t i = 0; i < t->noff; i++)
    if (off_ok(&t->off[i], zmask, ctmask)) return true;
  return false;
}

static bool fits(const dt_plan *p, const int64_t *alloc, const int64_t *used, const int64_t *req) {
  for (uint32_t r = 0; r < p->nres; r++)
    if (used[r] + req[r] > alloc[r]) return false;
  return true;
}

static bool is_well_known(const dt_plan *p, dt_sym key) {
  return key == p->k_zone || key == p->k_ct || key == p->k_type || key == p->k_pool ||
         key == p->k_hostname || key == p->k_resv || key == p->k_arch || key == p->k_os ||
         key == p->k_region || slot_of(p, key) >= 0;
}

/*
** Karpenter's Requirements.Compatible with AllowUndefinedWellKnownLabels: a
** custom label the pod requires must be defined by the node side unless the
** pod only excludes it; shared keys must intersect. On failure *bad is the
** pod's offending requirement.
*/
static bool compatible(const dt_plan *p, const dt_reqs *node, const dt_reqs *pod, const dt_req **bad) {
  for (uint32_t i = 0; i < pod->n; i++) {
    const dt_req *in = &pod->r[i];
    const dt_req *ex = dt__reqs_get(node, in->key);
    if (!ex) {
      dt_op op = dt__req_operator(in);
      if (!is_well_known(p, in->key) && op != DT_OP_NOTIN && op != DT_OP_DOESNOTEXIST) {
        *bad = in;
        return false;
      }
      continue;
    }
    if (!dt__req_intersects(&p->syms, ex, in)) {
      *bad = in;
      return false;
    }
  }
  return true;
}

static const char *arena_buf(dt_plan *p, dt_buf *b) {
  const char *s = dt__arena_strdup(&p->arena, b->p ? b->p : "");
  dt__free(b->p);
  memset(b, 0, sizeof *b);
  return s;
}

static void note(dt_plan *p, const char *fmt, ...) DT_PRINTF(2, 3);
static void note(dt_plan *p, const char *fmt, ...) {
  char tmp[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  char *s = dt__arena_strdup(&p->arena, tmp);
  if (s && dt__vec_push(&p->notes, s)) p->arena.oom = 1;
}

void dt__pod_name(const dt_plan *p, const rt_pod *pod, char *buf, size_t n) {
  const dt_podspec *s = &p->manifests->pods.v[pod->spec];
  if (pod->ordinal < 0)
    snprintf(buf, n, "%s/%s", s->ns, s->name);
  else
    snprintf(buf, n, "%s/%s-%lld", s->ns, s->name, (long long)pod->ordinal);
}

/* ------------------------------------------------------------ compile */

static int compile_catalog(dt_plan *p, dt_error *err) {
  const dt_catalog *c = p->catalog;
  if (c->nzones > 64)
    return dt__err(err, DT_ERANGE, "%s: %zu zones; dovetail supports at most 64", c->name, c->nzones);
  p->nzones = (uint32_t)c->nzones;
  for (size_t i = 0; i < c->nzones; i++) p->zones[i] = dt__sym(&p->syms, c->zones[i]);
  /* Type keys: every label key any type carries. */
  for (size_t i = 0; i < c->ntypes; i++)
    for (size_t k = 0; k < c->types[i].labels.n; k++) dt__sym(&p->syms, c->types[i].labels.v[k].key);
  p->nkeyslot = p->syms.n + 1;
  p->keyslot = A(p, p->nkeyslot * sizeof *p->keyslot);
  if (!p->keyslot) return DT_ENOMEM;
  memset(p->keyslot, 0xff, p->nkeyslot * sizeof *p->keyslot);
  p->slot_key = A(p, p->nkeyslot * sizeof *p->slot_key);
  if (!p->slot_key) return DT_ENOMEM;
  for (size_t i = 0; i < c->ntypes; i++)
    for (size_t k = 0; k < c->types[i].labels.n; k++) {
      dt_sym s = dt__sym(&p->syms, c->types[i].labels.v[k].key);
      if (p->keyslot[s] < 0) {
        p->keyslot[s] = (int16_t)p->nslots;
        p->slot_key[p->nslots++] = s;
      }
    }
  p->ntypes = (uint32_t)c->ntypes;
  p->types = A(p, (c->ntypes ? c->ntypes : 1) * sizeof *p->types);
  if (!p->types) return DT_ENOMEM;
  for (size_t i = 0; i < c->ntypes; i++) {
    const dt_ctype *ct = &c->types[i];
    rt_type *t = &p->types[i];
    t->src = ct;
    t->name = dt__sym(&p->syms, ct->name);
    int rc;
    if ((rc = rlist_vec(p, &ct->capacity, t->cap, err)) || (rc = rlist_vec(p, &ct->allocatable, t->alloc, err)))
      return rc;
    t->lv = A(p, (p->nslots ? p->nslots : 1) * sizeof *t->lv);
    t->off = A(p, (ct->noff ? ct->noff : 1) * sizeof *t->off);
    if (!t->lv || !t->off) return DT_ENOMEM;
    for (size_t k = 0; k < ct->labels.n; k++)
      t->lv[p->keyslot[dt__sym(&p->syms, ct->labels.v[k].key)]] = dt__sym(&p->syms, ct->labels.v[k].val);
    t->noff = (uint32_t)ct->noff;
    t->min_price = INFINITY;
    for (size_t k = 0; k < ct->noff; k++) {
      const dt_coffer *o = &ct->off[k];
      rt_off *r = &t->off[k];
      dt_sym z = dt__sym(&p->syms, o->zone);
      for (uint32_t zi = 0; zi < p->nzones; zi++)
        if (p->zones[zi] == z) r->zone = (uint8_t)zi;
      r->ct = (uint8_t)o->ct;
      r->price = o->price;
      r->avail = o->available;
      r->resv = o->reservation ? dt__sym(&p->syms, o->reservation) : 0;
      if (r->avail != 0 && o->price < t->min_price) t->min_price = o->price;
    }
  }
  return 0;
}

static const rt_type *find_type(const dt_plan *p, const char *name) {
  dt_sym s = dt__sym_find(&p->syms, name);
  if (!s) return NULL;
  for (uint32_t i = 0; i < p->ntypes; i++)
    if (p->types[i].name == s) return &p->types[i];
  return NULL;
}

/* Sort keys carry what the comparison needs: qsort has no context argument
** in C11 and the core keeps no global state. */
typedef struct price_key {
  double price;
  const char *name;
  uint32_t idx;
} price_key;

static int cmp_price_key(const void *a, const void *b) {
  const price_key *x = a, *y = b;
  if (x->price != y->price) return x->price < y->price ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* Order types[0..n) (indices into p->types) by price[i], then name. */
static int sort_by_price(dt_plan *p, uint32_t *types, const double *price, uint32_t n) {
  if (n < 2) return 0;
  price_key *k = dt__malloc(n * sizeof *k);
  if (!k) return DT_ENOMEM;
  for (uint32_t i = 0; i < n; i++) k[i] = (price_key){price[i], p->types[types[i]].src->name, types[i]};
  qsort(k, n, sizeof *k, cmp_price_key);
  for (uint32_t i = 0; i < n; i++) types[i] = k[i].idx;
  dt__free(k);
  return 0;
}

static int cmp_pool(const void *a, const void *b) {
  const rt_pool *x = a, *y = b;
  if (x->src->weight != y->src->weight) return x->src->weight > y->src->weight ? -1 : 1;
  return -strcmp(x->src->name, y->src->name); /* ties: name descending, as Karpenter */
}

static int compile_pools(dt_plan *p, dt_error *err) {
  const dt_manifests *m = p->manifests;
  p->npools = (uint32_t)m->pools.n;
  p->pools = A(p, (p->npools ? p->npools : 1) * sizeof *p->pools);
  if (!p->pools) return DT_ENOMEM;
  for (uint32_t i = 0; i < p->npools; i++) p->pools[i].src = &m->pools.v[i];
  qsort(p->pools, p->npools, sizeof *p->pools, cmp_pool);
  for (uint32_t i = 0; i < p->npools; i++) {
    rt_pool *pl = &p->pools[i];
    const dt_nodepool *np = pl->src;
    pl->name = dt__sym(&p->syms, np->name);
    dt_reqs r = {0};
    for (size_t k = 0; k < np->reqs.n; k++) {
      dt_req q;
      if (compile_mreq(p, &np->reqs.v[k], &q)) return DT_ENOMEM;
      dt__reqs_add(&p->arena, &p->syms, &r, &q, &r);
    }
    for (size_t k = 0; k < np->labels.n; k++) {
      dt_req q;
      dt_sym v = dt__sym(&p->syms, np->labels.v[k].val);
      dt__req_make(&p->arena, &q, dt__sym(&p->syms, np->labels.v[k].key), DT_OP_IN, &v, 1, &p->syms);
      dt__reqs_add(&p->arena, &p->syms, &r, &q, &r);
    }
    dt_req q;
    dt__req_make(&p->arena, &q, p->k_pool, DT_OP_IN, &pl->name, 1, &p->syms);
    dt__reqs_add(&p->arena, &p->syms, &r, &q, &r);
    pl->reqs = r;
    pl->ntaints = (uint32_t)np->ntaints;
    pl->taints = compile_taints(p, np->taints, np->ntaints);
    uint64_t zm;
    uint8_t cm;
    masks(p, &r, &zm, &cm);
    pl->types = A(p, (p->ntypes ? p->ntypes : 1) * sizeof *pl->types);
    if (!pl->types || !pl->taints) return DT_ENOMEM;
    for (uint32_t t = 0; t < p->ntypes; t++)
      if (type_ok(p, &p->types[t], &r, zm, cm)) pl->types[pl->ntypes++] = t;
    {
      double *pr = dt__malloc((pl->ntypes ? pl->ntypes : 1) * sizeof *pr);
      if (!pr) return DT_ENOMEM;
      for (uint32_t t = 0; t < pl->ntypes; t++) pr[t] = p->types[pl->types[t]].min_price;
      int src = sort_by_price(p, pl->types, pr, pl->ntypes);
      dt__free(pr);
      if (src) return src;
    }
    if (pl->ntypes == 0) note(p, "NodePool %s: no instance type in the catalog satisfies its requirements", np->name);
    for (uint32_t k = 0; k < DT_RES_MAX; k++) pl->remaining[k] = INT64_MAX;
    pl->nodes_remaining = -1;
    for (size_t k = 0; k < np->limits.n; k++) {
      if (strcmp(np->limits.v[k].name, "nodes") == 0) {
        pl->nodes_remaining = np->limits.v[k].milli / 1000;
        pl->has_limits = true;
        continue;
      }
      int ri = res_index(p, np->limits.v[k].name, err);
      if (ri < 0) return ri;
      pl->remaining[ri] = np->limits.v[k].milli;
      pl->has_limits = true;
    }
  }
  return 0;
}

static int cmp_node(const void *a, const void *b) {
  const rt_node *x = a, *y = b;
  if (x->src->initialized != y->src->initialized) return x->src->initialized ? -1 : 1;
  return strcmp(x->src->name, y->src->name);
}

static int compile_nodes(dt_plan *p, dt_error *err) {
  const dt_manifests *m = p->manifests;
  p->nodes = A(p, (m->nodes.n ? m->nodes.n : 1) * sizeof *p->nodes);
  if (!p->nodes) return DT_ENOMEM;
  /* A Node that a NodeClaim in the input already stands for is the same
  ** capacity: keep the Node (it is registered), drop the claim. */
  for (size_t i = 0; i < m->nodes.n; i++) {
    const dt_node *n = &m->nodes.v[i];
    bool dup = false;
    if (n->claim_name && n->node_name)
      for (size_t k = 0; k < m->nodes.n && !dup; k++)
        dup = !m->nodes.v[k].claim_name && strcmp(m->nodes.v[k].name, n->node_name) == 0;
    if (dup) continue;
    rt_node *r = &p->nodes[p->nnodes];
    memset(r, 0, sizeof *r);
    r->src = n;
    r->name = dt__sym(&p->syms, n->name);
    r->nlabels = (uint32_t)n->labels.n;
    r->lk = A(p, (n->labels.n + 1) * sizeof *r->lk);
    r->lval = A(p, (n->labels.n + 1) * sizeof *r->lval);
    if (!r->lk || !r->lval) return DT_ENOMEM;
    const char *itype = NULL, *pool = NULL;
    for (size_t k = 0; k < n->labels.n; k++) {
      r->lk[k] = dt__sym(&p->syms, n->labels.v[k].key);
      r->lval[k] = dt__sym(&p->syms, n->labels.v[k].val);
      if (!strcmp(n->labels.v[k].key, DT_L_INSTANCE_TYPE)) itype = n->labels.v[k].val;
      if (!strcmp(n->labels.v[k].key, DT_L_NODEPOOL)) pool = n->labels.v[k].val;
    }
    if (n->allocatable.n) {
      int rc = rlist_vec(p, &n->allocatable, r->alloc, err);
      if (rc) return rc;
      if (!r->alloc[DT_R_PODS]) r->alloc[DT_R_PODS] = 110 * 1000;
    } else {
      const rt_type *t = itype ? find_type(p, itype) : NULL;
      if (!t) {
        note(p, "%s: %s %s has no status.allocatable and %s; skipped", n->file, n->kind, n->name,
             itype ? "its instance type is not in the catalog" : "no instance-type label");
        continue;
      }
      memcpy(r->alloc, t->alloc, sizeof r->alloc);
    }
    r->ntaints = (uint32_t)n->ntaints;
    r->taints = compile_taints(p, n->taints, n->ntaints);
    if (!r->taints) return DT_ENOMEM;
    r->pool = -1;
    for (uint32_t k = 0; pool && k < p->npools; k++)
      if (!strcmp(p->pools[k].src->name, pool)) r->pool = (int)k;
    p->nnodes++;
  }
  qsort(p->nodes, p->nnodes, sizeof *p->nodes, cmp_node);
  /* Existing nodes count against their pool's limits (by capacity when we
  ** know the type, else by allocatable). */
  for (uint32_t i = 0; i < p->nnodes; i++) {
    rt_node *r = &p->nodes[i];
    if (r->pool < 0) continue;
    rt_pool *pl = &p->pools[r->pool];
    const rt_type *t = NULL;
    for (uint32_t k = 0; k < r->nlabels; k++)
      if (r->lk[k] == p->k_type) t = find_type(p, dt__sym_str(&p->syms, r->lval[k]));
    for (uint32_t k = 0; k < p->nres; k++)
      if (pl->remaining[k] != INT64_MAX) pl->remaining[k] -= t ? t->cap[k] : r->alloc[k];
    if (pl->nodes_remaining > 0) pl->nodes_remaining--;
  }
  return 0;
}

static rt_node *node_by_name(dt_plan *p, const char *name) {
  dt_sym s = dt__sym_find(&p->syms, name);
  for (uint32_t i = 0; s && i < p->nnodes; i++) {
    const dt_node *n = p->nodes[i].src;
    if (p->nodes[i].name == s || (n->node_name && strcmp(n->node_name, name) == 0)) return &p->nodes[i];
  }
  return NULL;
}

typedef struct pod_key {
  int64_t cpu, mem, created;
  rt_pod pod;
} pod_key;

/* Karpenter's queue order: cpu descending, memory descending, creation
** time, then input order (Karpenter uses the UID, which we do not have). */
static int cmp_pod(const void *a, const void *b) {
  const pod_key *x = a, *y = b;
  if (x->cpu != y->cpu) return x->cpu > y->cpu ? -1 : 1;
  if (x->mem != y->mem) return x->mem > y->mem ? -1 : 1;
  if (x->created != y->created) return x->created < y->created ? -1 : 1;
  if (x->pod.seq != y->pod.seq) return x->pod.seq < y->pod.seq ? -1 : 1;
  return x->pod.ordinal < y->pod.ordinal ? -1 : x->pod.ordinal > y->pod.ordinal;
}

static int compile_pods(dt_plan *p, dt_error *err) {
  const dt_manifests *m = p->manifests;
  /* Pods an in-flight claim already carries (dovetail.dev/pods). */
  dt_symtab claimed = {0};
  DT_VEC(rt_node *) claimed_node = {0};
  for (uint32_t i = 0; i < p->nnodes; i++)
    for (size_t k = 0; k < p->nodes[i].src->npods; k++) {
      dt_sym s = dt__sym(&claimed, p->nodes[i].src->pods[k]);
      while (claimed_node.n <= s)
        if (dt__vec_push(&claimed_node, (rt_node *)NULL)) break;
      if (s && s < claimed_node.n) claimed_node.v[s] = &p->nodes[i];
    }
  /* Classes: pods with identical requests and constraints. */
  dt_symtab sigs = {0};
  DT_VEC(uint32_t) sig_class = {0};
  DT_VEC(rt_class) classes = {0};
  DT_VEC(rt_pod) pods = {0};
  int rc = 0;
  for (size_t si = 0; si < m->pods.n && !rc; si++) {
    const dt_podspec *s = &m->pods.v[si];
    int64_t req[DT_RES_MAX] = {0};
    if ((rc = rlist_vec(p, &s->requests, req, err))) break;
    if (s->node_name) {
      rt_node *n = node_by_name(p, s->node_name);
      if (!n) {
        note(p, "%s: pod %s/%s is bound to node %s, which is not in the input; ignored", s->file, s->ns,
             s->name, s->node_name);
      } else {
        for (uint32_t r = 0; r < DT_RES_MAX; r++) n->used[r] += req[r] * s->count;
      }
      p->bound_already += (size_t)s->count;
      continue;
    }
    /* Requirements: nodeSelector + the first required node-affinity term. */
    dt_reqs reqs = {0};
    for (size_t k = 0; k < s->node_selector.n; k++) {
      dt_req q;
      dt_sym v = dt__sym(&p->syms, s->node_selector.v[k].val);
      dt__req_make(&p->arena, &q, dt__sym(&p->syms, s->node_selector.v[k].key), DT_OP_IN, &v, 1, &p->syms);
      dt__reqs_add(&p->arena, &p->syms, &reqs, &q, &reqs);
    }
    if (s->nterms)
      for (size_t k = 0; k < s->terms[0].n; k++) {
        dt_req q;
        if (compile_mreq(p, &s->terms[0].v[k], &q)) {
          rc = DT_ENOMEM;
          break;
        }
        dt__reqs_add(&p->arena, &p->syms, &reqs, &q, &reqs);
      }
    dt_buf sig = {0};
    for (uint32_t r = 0; r < p->nres; r++) dt__buf_printf(&sig, "%lld,", (long long)req[r]);
    dt__buf_putc(&sig, '|');
    for (uint32_t k = 0; k < reqs.n; k++) {
      dt__req_describe(&p->syms, &reqs.r[k], &sig);
      dt__buf_putc(&sig, ';');
    }
    dt__buf_putc(&sig, '|');
    for (size_t k = 0; k < s->ntol; k++)
      dt__buf_printf(&sig, "%s/%s/%s/%s;", s->tol[k].key ? s->tol[k].key : "", s->tol[k].op,
                     s->tol[k].value, s->tol[k].effect ? s->tol[k].effect : "");
    dt_sym cs = sig.p ? dt__sym(&sigs, sig.p) : 0;
    dt__free(sig.p);
    if (!cs || sig.oom) {
      rc = DT_ENOMEM;
      break;
    }
    while (sig_class.n <= cs && !rc)
      if (dt__vec_push(&sig_class, UINT32_MAX)) rc = DT_ENOMEM;
    if (rc) break;
    if (sig_class.v[cs] == UINT32_MAX) {
      rt_class c = {0};
      memcpy(c.req, req, sizeof req);
      c.reqs = reqs;
      c.spec = s;
      sig_class.v[cs] = (uint32_t)classes.n;
      if (dt__vec_push(&classes, c)) {
        rc = DT_ENOMEM;
        break;
      }
    }
    uint32_t ci = sig_class.v[cs];
    for (int64_t o = 0; o < s->count; o++) {
      rt_pod pod = {ci, (uint32_t)si, s->owner ? o : -1, s->seq};
      if (claimed.n) {
        char name[600];
        dt__pod_name(p, &pod, name, sizeof name);
        dt_sym c = dt__sym_find(&claimed, name);
        if (c && c < claimed_node.n && claimed_node.v[c]) {
          rt_node *n = claimed_node.v[c];
          for (uint32_t r = 0; r < DT_RES_MAX; r++) n->used[r] += req[r];
          p->bound_already++;
          continue;
        }
      }
      if (dt__vec_push(&pods, pod)) {
        rc = DT_ENOMEM;
        break;
      }
    }
  }
  dt__symtab_free(&claimed);
  dt__free(claimed_node.v);
  dt__symtab_free(&sigs);
  dt__free(sig_class.v);
  if (rc) {
    dt__free(classes.v);
    dt__free(pods.v);
    return rc;
  }
  /* Move into the arena so the plan owns one allocation family. */
  p->nclasses = (uint32_t)classes.n;
  p->classes = A(p, (classes.n ? classes.n : 1) * sizeof *p->classes);
  p->npods = (uint32_t)pods.n;
  p->pods = A(p, (pods.n ? pods.n : 1) * sizeof *p->pods);
  if (p->classes && p->pods) {
    if (classes.n) memcpy(p->classes, classes.v, classes.n * sizeof *classes.v);
    if (pods.n) memcpy(p->pods, pods.v, pods.n * sizeof *pods.v);
  }
  dt__free(classes.v);
  dt__free(pods.v);
  if (!p->classes || !p->pods) return DT_ENOMEM;
  for (uint32_t i = 0; i < p->nclasses; i++) {
    p->classes[i].pool_ok = A(p, (p->npools ? p->npools : 1));
    if (!p->classes[i].pool_ok) return DT_ENOMEM;
    memset(p->classes[i].pool_ok, 0xff, p->npools);
  }
  pod_key *keys = dt__malloc((p->npods ? p->npods : 1) * sizeof *keys);
  if (!keys) return DT_ENOMEM;
  for (uint32_t i = 0; i < p->npods; i++) {
    const rt_class *c = &p->classes[p->pods[i].cls];
    keys[i] = (pod_key){c->req[DT_R_CPU], c->req[DT_R_MEM], m->pods.v[p->pods[i].spec].created, p->pods[i]};
  }
  qsort(keys, p->npods, sizeof *keys, cmp_pod);
  for (uint32_t i = 0; i < p->npods; i++) p->pods[i] = keys[i].pod;
  dt__free(keys);
  return 0;
}

/* ---------------------------------------------------------- scheduling */

typedef struct run {
  dt_plan *p;
  DT_VEC(rt_claim *) order; /* open claims, (pods, idx) ascending */
  int64_t *minsuf;          /* per queue position: component-wise min of the rest */
  uint32_t pos;             /* queue position */
} run;

static bool pool_ok(dt_plan *p, rt_class *c, uint32_t pi) {
  if (c->pool_ok[pi] < 0) {
    rt_pool *pl = &p->pools[pi];
    const dt_req *bad;
    c->pool_ok[pi] = (int8_t)(tolerates(p, c->spec, pl->taints, pl->ntaints, NULL) &&
                              compatible(p, &pl->reqs, &c->reqs, &bad));
  }
  return c->pool_ok[pi];
}

static bool node_fits(dt_plan *p, rt_node *n, rt_class *c) {
  if (n->src->unschedulable) return false;
  if (!fits(p, n->alloc, n->used, c->req)) return false;
  if (!tolerates(p, c->spec, n->taints, n->ntaints, NULL)) return false;
  for (uint32_t i = 0; i < c->reqs.n; i++) {
    const dt_req *r = &c->reqs.r[i];
    dt_sym v = 0;
    for (uint32_t k = 0; k < n->nlabels; k++)
      if (n->lk[k] == r->key) v = n->lval[k];
    if (!dt__req_has(&p->syms, r, v)) return false;
  }
  return true;
}

static bool class_failed(rt_class *c, uint32_t idx) {
  uint32_t w = idx / 64;
  return w < c->nfail_words && (c->claim_failed[w] >> (idx % 64) & 1);
}

static int set_failed(rt_class *c, uint32_t idx) {
  uint32_t w = idx / 64;
  if (w >= c->nfail_words) {
    uint32_t nw = w + 1 > c->nfail_words * 2 ? w + 1 : c->nfail_words * 2;
    uint64_t *b = dt__realloc(c->claim_failed, nw * sizeof *b);
    if (!b) return DT_ENOMEM;
    memset(b + c->nfail_words, 0, (nw - c->nfail_words) * sizeof *b);
    c->claim_failed = b;
    c->nfail_words = nw;
  }
  c->claim_failed[w] |= 1ull << (idx % 64);
  return 0;
}

static bool claim_before(const rt_claim *a, const rt_claim *b) {
  return a->pods.n != b->pods.n ? a->pods.n < b->pods.n : a->idx < b->idx;
}

/* Try to add a pod of class c to claim k. */
static int claim_add(run *R, rt_claim *k, rt_class *c, uint32_t podi, bool *added) {
  dt_plan *p = R->p;
  *added = false;
  if (!pool_ok(p, c, k->pool)) return 0;
  dt_reqs nr = k->reqs;
  bool changed = false;
  if (c->reqs.n) {
    const dt_req *bad;
    if (!compatible(p, &k->reqs, &c->reqs, &bad)) return 0;
    dt__reqs_merge(&p->arena, &p->syms, &k->reqs, &c->reqs, &nr);
    changed = !dt__reqs_equal(&nr, &k->reqs);
  }
  if (!changed) {
    uint32_t i = 0;
    for (; i < k->nopt; i++)
      if (fits(p, p->types[k->opt[i]].alloc, k->used, c->req)) break;
    if (i == k->nopt) return 0;
    k->opt += i;
    k->nopt -= i;
  } else {
    uint64_t zm;
    uint8_t cm;
    masks(p, &nr, &zm, &cm);
    uint32_t keep = 0;
    for (uint32_t i = 0; i < k->nopt; i++) {
      const rt_type *t = &p->types[k->opt[i]];
      if (fits(p, t->alloc, k->used, c->req) && type_ok(p, t, &nr, zm, cm)) keep++;
    }
    if (!keep) return 0;
    uint32_t *opt = A(p, keep * sizeof *opt), n = 0;
    if (!opt) return DT_ENOMEM;
    for (uint32_t i = 0; i < k->nopt; i++) {
      const rt_type *t = &p->types[k->opt[i]];
      if (fits(p, t->alloc, k->used, c->req) && type_ok(p, t, &nr, zm, cm)) opt[n++] = k->opt[i];
    }
    k->opt = opt;
    k->nopt = n;
    k->reqs = nr;
    k->zmask = zm;
    k->ctmask = cm;
  }
  for (uint32_t r = 0; r < p->nres; r++) k->used[r] += c->req[r];
  if (dt__vec_push(&k->pods, podi)) return DT_ENOMEM;
  *added = true;
  return 0;
}

/* Keep R->order sorted after claim at position i gained a pod. */
static void reorder(run *R, size_t i) {
  rt_claim **o = R->order.v;
  while (i + 1 < R->order.n && claim_before(o[i + 1], o[i])) {
    rt_claim *t = o[i];
    o[i] = o[i + 1];
    o[i + 1] = t;
    i++;
  }
}

/* Whether no option of k can take even the smallest pod still queued. */
static bool claim_full(run *R, rt_claim *k) {
  dt_plan *p = R->p;
  if (R->pos + 1 >= p->npods) return false;
  const int64_t *mn = &R->minsuf[(size_t)(R->pos + 1) * p->nres];
  for (uint32_t i = 0; i < k->nopt; i++)
    if (fits(p, p->types[k->opt[i]].alloc, k->used, mn)) return false;
  return true;
}

static int new_claim(run *R, rt_class *c, uint32_t podi, bool *added) {
  dt_plan *p = R->p;
  *added = false;
  for (uint32_t pi = 0; pi < p->npools; pi++) {
    rt_pool *pl = &p->pools[pi];
    if (!pool_ok(p, c, pi) || pl->nodes_remaining == 0 || !pl->ntypes) continue;
    dt_reqs nr;
    dt__reqs_merge(&p->arena, &p->syms, &pl->reqs, &c->reqs, &nr);
    uint64_t zm;
    uint8_t cm;
    masks(p, &nr, &zm, &cm);
    uint32_t *opt = A(p, pl->ntypes * sizeof *opt), n = 0;
    if (!opt) return DT_ENOMEM;
    static const int64_t zero[DT_RES_MAX];
    for (uint32_t i = 0; i < pl->ntypes; i++) {
      const rt_type *t = &p->types[pl->types[i]];
      if (pl->has_limits) {
        bool over = false;
        for (uint32_t r = 0; r < p->nres && !over; r++)
          over = pl->remaining[r] != INT64_MAX && t->cap[r] > pl->remaining[r];
        if (over) continue;
      }
      if (fits(p, t->alloc, zero, c->req) && type_ok(p, t, &nr, zm, cm)) opt[n++] = pl->types[i];
    }
    if (!n) continue;
    rt_claim *k = A(p, sizeof *k);
    if (!k) return DT_ENOMEM;
    k->pool = pi;
    k->idx = (uint32_t)p->claims.n;
    k->reqs = nr;
    k->zmask = zm;
    k->ctmask = cm;
    k->opt = opt;
    k->nopt = n;
    k->type = k->off = -1;
    for (uint32_t r = 0; r < p->nres; r++) k->used[r] = c->req[r];
    /* In the plan's list first, so dt_plan_free releases k->pods on any failure. */
    if (dt__vec_push(&p->claims, k) || dt__vec_push(&k->pods, podi) || dt__vec_push(&R->order, k))
      return DT_ENOMEM;
    reorder(R, R->order.n - 1);
    /* Limits are charged pessimistically: the largest capacity among the
    ** claim's options, as Karpenter's subtractMax. */
    if (pl->has_limits) {
      for (uint32_t r = 0; r < p->nres; r++) {
        if (pl->remaining[r] == INT64_MAX) continue;
        int64_t mx = 0;
        for (uint32_t i = 0; i < n; i++) mx = p->types[opt[i]].cap[r] > mx ? p->types[opt[i]].cap[r] : mx;
        pl->remaining[r] -= mx;
      }
      if (pl->nodes_remaining > 0) pl->nodes_remaining--;
    }
    *added = true;
    return 0;
  }
  return 0;
}

/* A reason a person can act on, per NodePool, for a pod that fits nowhere. */
static const char *diagnose(dt_plan *p, rt_class *c) {
  dt_buf b = {0};
  if (p->npools == 0) {
    dt__buf_puts(&b, "no NodePool in the input, and no existing node fits");
    return arena_buf(p, &b);
  }
  for (uint32_t pi = 0; pi < p->npools; pi++) {
    rt_pool *pl = &p->pools[pi];
    const char *pn = pl->src->name;
    if (pi) dt__buf_puts(&b, "; ");
    const rt_taint *t = NULL;
    const dt_req *bad = NULL;
    if (!tolerates(p, c->spec, pl->taints, pl->ntaints, &t)) {
      static const char *eff[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
      dt__buf_printf(&b, "NodePool %s has taint %s=%s:%s that the pod does not tolerate", pn,
                     dt__sym_str(&p->syms, t->key), dt__sym_str(&p->syms, t->value), eff[t->effect]);
      continue;
    }
    if (!compatible(p, &pl->reqs, &c->reqs, &bad)) {
      const dt_req *ex = dt__reqs_get(&pl->reqs, bad->key);
      dt__buf_puts(&b, "pod requires ");
      dt__req_describe(&p->syms, bad, &b);
      if (ex) {
        dt__buf_printf(&b, " but NodePool %s allows ", pn);
        dt__req_describe(&p->syms, ex, &b);
      } else {
        dt__buf_printf(&b, " but NodePool %s does not define label %s", pn,
                       dt__sym_str(&p->syms, bad->key));
      }
      continue;
    }
    if (pl->nodes_remaining == 0) {
      dt__buf_printf(&b, "NodePool %s has reached its nodes limit", pn);
      continue;
    }
    dt_reqs nr;
    dt__reqs_merge(&p->arena, &p->syms, &pl->reqs, &c->reqs, &nr);
    uint64_t zm;
    uint8_t cm;
    masks(p, &nr, &zm, &cm);
    /* Largest allocatable per resource among the types allowed. */
    int64_t best[DT_RES_MAX] = {0};
    const rt_type *bt[DT_RES_MAX] = {0};
    uint32_t allowed = 0;
    bool limited = false;
    for (uint32_t i = 0; i < pl->ntypes; i++) {
      const rt_type *ty = &p->types[pl->types[i]];
      if (!type_ok(p, ty, &nr, zm, cm)) continue;
      allowed++;
      bool over = false;
      for (uint32_t r = 0; r < p->nres && pl->has_limits; r++)
        over |= pl->remaining[r] != INT64_MAX && ty->cap[r] > pl->remaining[r];
      if (over) {
        limited = true;
        continue;
      }
      for (uint32_t r = 0; r < p->nres; r++)
        if (ty->alloc[r] > best[r] || !bt[r]) {
          best[r] = ty->alloc[r];
          bt[r] = ty;
        }
    }
    if (!allowed) {
      dt__buf_printf(&b, "no instance type in NodePool %s satisfies the pod's requirements", pn);
      if (c->reqs.n) {
        dt__buf_puts(&b, " (");
        for (uint32_t k = 0; k < c->reqs.n; k++) {
          if (k) dt__buf_puts(&b, ", ");
          dt__req_describe(&p->syms, &c->reqs.r[k], &b);
        }
        dt__buf_puts(&b, ")");
      }
      if (!(cm & ~(1u << DT_CT_RESERVED)) || !zm)
        dt__buf_puts(&b, " with an available offering in the allowed zones and capacity types");
      continue;
    }
    if (limited && !bt[0]) {
      dt__buf_printf(&b, "NodePool %s limits leave no room for another node", pn);
      continue;
    }
    bool said = false;
    for (uint32_t r = 0; r < p->nres; r++) {
      if (c->req[r] <= best[r]) continue;
      char need[64], have[64], cap[64];
      dt__fmt_quantity(need, sizeof need, p->res_names[r], c->req[r]);
      dt__fmt_quantity(have, sizeof have, p->res_names[r], best[r]);
      dt__fmt_quantity(cap, sizeof cap, p->res_names[r], bt[r] ? bt[r]->cap[r] : 0);
      if (!best[r])
        dt__buf_printf(&b, "%sno instance type in NodePool %s has %s", said ? ", and " : "", pn,
                       p->res_names[r]);
      else
        dt__buf_printf(&b, "%sno instance type in NodePool %s has %s %s; the largest allowed (%s) has %s allocatable of %s",
                       said ? ", and " : "", pn, need, p->res_names[r],
                       dt__sym_str(&p->syms, bt[r]->name), have, cap);
      said = true;
    }
    if (limited && said) dt__buf_puts(&b, " within its limits");
    if (!said) {
      dt__buf_printf(&b, "no single instance type in NodePool %s fits all of the pod's requests (", pn);
      for (uint32_t r = 0, first = 1; r < p->nres; r++) {
        if (!c->req[r] || r == DT_R_PODS) continue;
        char q[64];
        dt__fmt_quantity(q, sizeof q, p->res_names[r], c->req[r]);
        dt__buf_printf(&b, "%s%s %s", first ? "" : ", ", p->res_names[r], q);
        first = 0;
      }
      dt__buf_puts(&b, limited ? ") within its limits" : ")");
    }
  }
  return arena_buf(p, &b);
}

static int unschedulable(dt_plan *p, uint32_t podi, const char *reason) {
  rt_unsched u = {podi, reason};
  return dt__vec_push(&p->unsched, u);
}

static int solve(dt_plan *p) {
  run R = {0};
  R.p = p;
  int rc = 0;
  /* Suffix minima of the queue's requests, for closing full claims. */
  if (p->npods) {
    R.minsuf = dt__malloc((size_t)p->npods * p->nres * sizeof *R.minsuf);
    if (!R.minsuf) return DT_ENOMEM;
    for (uint32_t i = p->npods; i-- > 0;) {
      const int64_t *q = p->classes[p->pods[i].cls].req;
      int64_t *m = &R.minsuf[(size_t)i * p->nres];
      for (uint32_t r = 0; r < p->nres; r++)
        m[r] = i + 1 < p->npods && m[p->nres + r] < q[r] ? m[p->nres + r] : q[r];
    }
  }
  const char **reason = dt__calloc(p->nclasses ? p->nclasses : 1, sizeof *reason);
  if (!reason) {
    dt__free(R.minsuf);
    return DT_ENOMEM;
  }
  for (R.pos = 0; R.pos < p->npods && !rc; R.pos++) {
    uint32_t podi = R.pos;
    rt_class *c = &p->classes[p->pods[podi].cls];
    bool placed = false;
    /* 1. existing and in-flight nodes, in order */
    for (uint32_t i = c->node_cursor; i < p->nnodes; i++) {
      if (node_fits(p, &p->nodes[i], c)) {
        for (uint32_t r = 0; r < p->nres; r++) p->nodes[i].used[r] += c->req[r];
        rt_binding bnd = {podi, i};
        if (dt__vec_push(&p->bindings, bnd)) rc = DT_ENOMEM;
        placed = true;
        break;
      }
      c->node_cursor = i + 1;
    }
    if (placed) continue;
    /* 2. claims opened in this run, least loaded first */
    for (size_t i = 0; i < R.order.n && !rc; i++) {
      rt_claim *k = R.order.v[i];
      if (class_failed(c, k->idx)) continue;
      rc = claim_add(&R, k, c, podi, &placed);
      if (placed) {
        reorder(&R, i);
        break;
      }
      if (!rc) rc = set_failed(c, k->idx);
      if (!rc && claim_full(&R, k)) {
        k->closed = true;
        memmove(&R.order.v[i], &R.order.v[i + 1], (R.order.n - i - 1) * sizeof *R.order.v);
        R.order.n--;
        i--;
      }
    }
    if (placed || rc) continue;
    /* 3. a new claim from each NodePool, by weight */
    if (!c->no_new_claim) {
      rc = new_claim(&R, c, podi, &placed);
      if (!placed) c->no_new_claim = true;
    }
    if (placed || rc) continue;
    uint32_t ci = p->pods[podi].cls;
    if (!reason[ci]) reason[ci] = diagnose(p, c);
    rc = unschedulable(p, podi, reason[ci]);
  }
  dt__free(reason);
  dt__free(R.minsuf);
  dt__free(R.order.v);
  return rc;
}

/* ------------------------------------------------------------ launch */

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static int name_claim(dt_plan *p, rt_claim *k) {
  const char *pool = p->pools[k->pool].src->name;
  uint64_t s = p->opts.seed ^ 0x646f7665ull;
  for (const char *c = pool; *c; c++) s = (s ^ (unsigned char)*c) * 1099511628211ull;
  s ^= (uint64_t)k->idx * 0x9e3779b97f4a7c15ull;
  for (int attempt = 0; attempt < 1000; attempt++) {
    uint64_t h = splitmix(&s);
    char name[300], suf[6];
    for (int i = 0; i < 5; i++) {
      suf[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[h % 36];
      h /= 36;
    }
    suf[5] = 0;
    snprintf(name, sizeof name, "%s-%s", pool, suf);
    if (dt__sym_find(&p->syms, name)) continue; /* taken by a node, claim or label */
    k->name = dt__sym(&p->syms, name);
    return k->name ? 0 : DT_ENOMEM;
  }
  return DT_ERANGE;
}

static int launch(dt_plan *p) {
  for (size_t ci = 0; ci < p->claims.n; ci++) {
    rt_claim *k = p->claims.v[ci];
    /* Types still fitting everything, each priced by its best offering. */
    uint32_t *fin = A(p, (k->nopt ? k->nopt : 1) * sizeof *fin), n = 0;
    if (!fin) return DT_ENOMEM;
    double *price = dt__malloc((k->nopt ? k->nopt : 1) * sizeof *price);
    if (!price) return DT_ENOMEM;
    int32_t bt = -1, bo = -1;
    for (uint32_t i = 0; i < k->nopt; i++) {
      rt_type *t = &p->types[k->opt[i]];
      if (!fits(p, t->alloc, k->used, (int64_t[DT_RES_MAX]){0})) continue;
      double cheapest = INFINITY;
      for (uint32_t o = 0; o < t->noff; o++) {
        const rt_off *of = &t->off[o];
        if (!off_ok(of, k->zmask, k->ctmask)) continue;
        if (of->price < cheapest) cheapest = of->price;
        /* Default rank: reserved while available, then cheapest, then
        ** instance type name, then zone name. */
        bool better;
        if (bt < 0) {
          better = true;
        } else {
          const rt_off *bof = &p->types[bt].off[bo];
          bool rr = of->ct == DT_CT_RESERVED, br = bof->ct == DT_CT_RESERVED;
          if (rr != br)
            better = rr;
          else if (of->price != bof->price)
            better = of->price < bof->price;
          else if (t->name != p->types[bt].name)
            better = strcmp(t->src->name, p->types[bt].src->name) < 0;
          else
            better = strcmp(dt__sym_str(&p->syms, p->zones[of->zone]),
                            dt__sym_str(&p->syms, p->zones[bof->zone])) < 0;
        }
        if (better) {
          bt = (int32_t)k->opt[i];
          bo = (int32_t)o;
        }
      }
      if (cheapest == INFINITY) continue;
      price[n] = cheapest;
      fin[n++] = k->opt[i];
    }
    int src = sort_by_price(p, fin, price, n);
    dt__free(price);
    if (src) return src;
    k->final = fin;
    k->nfinal = n < 600 ? n : 600;
    if (bt < 0) {
      for (size_t i = 0; i < k->pods.n; i++)
        if (unschedulable(p, k->pods.v[i],
                          "every offering of the instance types that fit is exhausted (availability counts)"))
          return DT_ENOMEM;
      continue;
    }
    k->type = bt;
    k->off = bo;
    rt_off *of = &p->types[bt].off[bo];
    if (of->avail > 0) of->avail--;
    int rc = name_claim(p, k);
    if (rc) return rc;
    p->stats.nodes++;
    p->stats.hourly_cost += of->price;
    p->stats.scheduled += k->pods.n;
  }
  return 0;
}

/* -------------------------------------------------------------- entry */

int dt_plan_run(const dt_catalog *catalog, const dt_manifests *manifests, const dt_plan_opts *opts,
                dt_plan **out, dt_error *err) {
  *out = NULL;
  dt_plan *p = dt__calloc(1, sizeof *p);
  if (!p) return dt__err(err, DT_ENOMEM, "out of memory");
  p->catalog = catalog;
  p->manifests = manifests;
  if (opts) p->opts = *opts;
  double t0 = dt__now_ms();
  p->k_zone = dt__sym(&p->syms, DT_L_ZONE);
  p->k_ct = dt__sym(&p->syms, DT_L_CAPACITY_TYPE);
  p->k_type = dt__sym(&p->syms, DT_L_INSTANCE_TYPE);
  p->k_pool = dt__sym(&p->syms, DT_L_NODEPOOL);
  p->k_hostname = dt__sym(&p->syms, DT_L_HOSTNAME);
  p->k_resv = dt__sym(&p->syms, DT_L_RESERVATION);
  p->k_arch = dt__sym(&p->syms, DT_L_ARCH);
  p->k_os = dt__sym(&p->syms, DT_L_OS);
  p->k_region = dt__sym(&p->syms, DT_L_REGION);
  for (int i = 0; i < DT_CT_N; i++) p->ct_sym[i] = dt__sym(&p->syms, dt__ct_names[i]);
  static const char *base[] = {"cpu", "memory", "pods", "ephemeral-storage"};
  int rc = 0;
  for (int i = 0; i < 4 && rc >= 0; i++) rc = res_index(p, base[i], NULL);
  if (rc < 0 || p->syms.oom) {
    rc = DT_ENOMEM;
    goto fail;
  }
  if ((rc = compile_catalog(p, err)) || (rc = compile_pools(p, err)) || (rc = compile_nodes(p, err)) ||
      (rc = compile_pods(p, err)) || (rc = solve(p)) || (rc = launch(p)))
    goto fail;
  if (p->arena.oom || p->syms.oom) {
    rc = DT_ENOMEM;
    goto fail;
  }
  p->stats.pods = p->npods;
  p->stats.scheduled += p->bindings.n;
  p->stats.unschedulable = p->unsched.n;
  p->stats.schedule_ms = dt__now_ms() - t0;
  *out = p;
  return 0;
fail:
  if (rc == DT_ENOMEM || p->arena.oom || p->syms.oom) {
    rc = DT_ENOMEM;
    dt__err(err, rc, "out of memory while planning");
  } else if (err && !err->msg[0]) {
    dt__err(err, rc, "planning failed");
  }
  dt_plan_free(p);
  return rc;
}

void dt_plan_stats_get(const dt_plan *plan, dt_plan_stats *out) { *out = plan->stats; }

void dt_plan_free(dt_plan *p) {
  if (!p) return;
  for (uint32_t i = 0; p->classes && i < p->nclasses; i++) dt__free(p->classes[i].claim_failed);
  for (size_t i = 0; i < p->claims.n; i++) dt__free(p->claims.v[i]->pods.v);
  dt__free(p->claims.v);
  dt__free(p->bindings.v);
  dt__free(p->unsched.v);
  dt__free(p->notes.v);
  dt__symtab_free(&p->syms);
  dt__arena_free(&p->arena);
  dt__free(p);
}
