/*
** topo.c: topology spread, pod affinity and pod anti-affinity, as Karpenter's
** topology.go and topologygroup.go.
**
** A group counts the pods matching one label selector (in some namespaces)
** per domain of one topology key: zone, capacity type, hostname (each node
** and each claim is its own host), or any other label with values to take
** (DOM_LABEL: Karpenter's custom-key spreads, such as a capacity-spread label
** that NodePools split between spot and on-demand). A claim takes a value
** of such a key by a requirement on it, which the NodeClaim's labels carry.
** A pod's constraint names a group and how to read it:
**   spread    a domain is valid if count + self - min <= maxSkew, where min is
**             the lowest count over the domains the pod may use (0 for
**             hostname, since a new node can always be made, and 0 when
**             fewer than minDomains domains exist); the claim collapses to
**             the valid domain with the lowest count;
**   affinity  only domains that already hold a matching pod, except that a
**             pod selecting itself may start in one when none does;
**   anti      only domains that hold no matching pod; and, the other way
**             round, a pod selected by someone's anti-affinity avoids the
**             domains where those pods are ("owners").
** Pods on a claim whose zone is not yet decided are not counted for spread
** and affinity; for anti-affinity they count in every zone the claim may
** still take, which is pessimistic as Karpenter is.
*/
#include "sched_int.h"

#include <string.h>

static int32_t host_get(const dt_i32vec *v, uint32_t h) { return h < v->n ? v->v[h] : 0; }

static int host_add(dt_i32vec *v, uint32_t h, int32_t d) {
  if (v->n <= h) { /* grown once to h, not doubled step by step */
    if (h + 1 > v->cap && dt__vec_grow((void **)&v->v, &v->cap, (size_t)h + 1, sizeof *v->v)) return DT_ENOMEM;
    memset(v->v + v->n, 0, (h + 1 - v->n) * sizeof *v->v);
    v->n = h + 1;
  }
  v->v[h] += d;
  return 0;
}

/* Group lookups and group-by-pod matches this thread has made: the work
** of finding what selects what, which the unit tests hold to a count. */
static _Thread_local unsigned long long topo_work;

unsigned long long dt__topo_work(void) { return topo_work; }

/* Whether a pod with these labels in namespace ns is counted by g. */
static bool selects(const dt_plan *p, const rt_group *g, const rt_spec *s) {
  topo_work++;
  if (g->sel_null) return false;
  bool ns_ok = g->ns_all;
  for (uint32_t i = 0; i < g->nns && !ns_ok; i++) ns_ok = g->ns[i] == s->ns;
  if (!ns_ok) return false;
  for (uint32_t i = 0; i < g->sel.n; i++) {
    const dt_req *r = &g->sel.r[i];
    dt_sym v = 0;
    for (uint32_t k = 0; k < s->nlabels; k++)
      if (s->lk[k] == r->key) {
        v = s->lv[k];
        break;
      }
    if (!dt__req_has(&p->syms, r, v)) return false;
  }
  return true;
}

static int domain_of(const dt_plan *p, dt_sym key) {
  if (key == p->k_zone) return DOM_ZONE;
  if (key == p->k_hostname) return DOM_HOST;
  if (key == p->k_ct) return DOM_CT;
  /* another key: a label of the instance types, or one of the user's; not
  ** the other labels the cloud or Karpenter sets (instance type, NodePool,
  ** zone ID where no EC2NodeClass maps it to a zone...), whose values a
  ** claim cannot take by a requirement */
  if (slot_of(p, key) < 0 && (is_well_known(p, key) || !strcmp(dt__sym_str(&p->syms, key), DT_L_ZONE_ID))) return -1;
  return DOM_LABEL;
}

/* Node n's value of label key, 0 when it has none. */
static dt_sym node_label(const rt_node *n, dt_sym key) {
  for (uint32_t k = 0; k < n->nlabels; k++)
    if (n->lk[k] == key) return n->lval[k];
  return 0;
}

/* Value v's bit in L, 0 when it is not one of L's. */
static uint64_t lkey_find(const rt_lkey *L, dt_sym v) {
  for (uint32_t i = 0; i < L->n; i++)
    if (L->v[i] == v) return 1ull << i;
  return 0;
}

/* Value v's bit in L, added when new; false when L is full. */
static bool lkey_bit(rt_lkey *L, dt_sym v, uint64_t *bit) {
  if ((*bit = lkey_find(L, v))) return true;
  if (L->n == TOPO_LVALS) return false;
  L->v[L->n] = v;
  *bit = 1ull << L->n++;
  return true;
}

/* The values of L NodePool i gives (its In requirement or template label on
** the key, its types' labels) into *m; with add, values new to L join it
** (false when L is full), else only those L holds count. */
static bool pool_values(const dt_plan *p, rt_lkey *L, uint32_t i, bool add, uint64_t *m) {
  const rt_pool *pl = &p->pools[i];
  const dt_req *r = dt__reqs_get(&pl->reqs, L->key);
  int16_t slot = slot_of(p, L->key);
  uint64_t bit;
  for (uint32_t j = 0; r && !r->complement && j < r->n; j++) {
    if (add && !lkey_bit(L, r->v[j], &bit)) return false;
    *m |= add ? bit : lkey_find(L, r->v[j]);
  }
  for (uint32_t j = 0; slot >= 0 && j < pl->ntypes; j++) {
    dt_sym v = p->types[pl->types[j]].lv[slot];
    if (!v || (r && !dt__req_has(&p->syms, r, v))) continue;
    if (add && !lkey_bit(L, v, &bit)) return false;
    *m |= add ? bit : lkey_find(L, v);
  }
  return true;
}

/* The index of key among p->lkeys, made on first use from the values the
** pools' requirements and labels (In), their types' labels and the nodes'
** labels give it, as Karpenter's buildDomainGroups and countDomains; -3
** when more than TOPO_LVALS values do (not modelled), or DT_ENOMEM. A key
** no pool or type gives a value is modelled all the same: no claim can take
** one (Karpenter's requirement on it is incompatible with every NodePool),
** so a node's pod may only go where an existing node carries it. */
static int lkey_of(dt_plan *p, dt_sym key) {
  for (size_t i = 0; i < p->lkeys.n; i++)
    if (p->lkeys.v[i].key == key) return p->lkeys.v[i].full ? -3 : (int)i;
  rt_lkey L;
  memset(&L, 0, sizeof L);
  L.key = key;
  bool full = false;
  uint64_t bit;
  for (uint32_t i = 0; i < p->npools && !full; i++) full = !pool_values(p, &L, i, true, &L.universe);
  for (uint32_t h = 0; h < p->nnodes && !full; h++) {
    dt_sym v = node_label(&p->nodes[h], key);
    if (v && !machine_deleting(&p->nodes[h])) full = !lkey_bit(&L, v, &bit);
  }
  if (full) { /* remembered as not modelled */
    L.n = 0;
    L.universe = 0;
    L.full = true;
  }
  if (dt__vec_push(&p->lkeys, L)) return DT_ENOMEM;
  return full ? -3 : (int)p->lkeys.n - 1;
}

/* The values of L host h may take: an existing node's own; a claim's (of
** pool, for the claim not made yet; hr its requirements, or the claim's
** own when NULL) those of the pools and types its requirement on the key
** allows, and none where its pool does not define the key (a label of no
** instance type): Karpenter's requirement on it is incompatible there. */
static uint64_t host_lmask(const dt_plan *p, const rt_lkey *L, uint32_t h, const dt_reqs *hr, uint32_t pool) {
  uint64_t m = 0;
  if (h < p->nnodes) {
    dt_sym v = node_label(&p->nodes[h], L->key);
    return v ? lkey_find(L, v) : 0;
  }
  if (h - p->nnodes < p->claims.n) {
    const rt_claim *k = p->claims.v[h - p->nnodes];
    if (!hr) hr = &k->reqs;
    pool = k->pool;
  }
  if (pool < p->npools && slot_of(p, L->key) < 0 && !dt__reqs_get(&p->pools[pool].reqs, L->key)) return 0;
  const dt_req *r = hr ? dt__reqs_get(hr, L->key) : NULL;
  for (uint32_t i = 0; i < L->n; i++)
    if (L->universe >> i & 1 && (!r || dt__req_has(&p->syms, r, L->v[i]))) m |= 1ull << i;
  return m;
}

/* The values of L class c's requirements allow. */
static uint64_t class_lmask(const dt_plan *p, const rt_class *c, const rt_lkey *L) {
  const dt_req *r = dt__reqs_get(&c->reqs, L->key);
  uint64_t m = 0;
  for (uint32_t i = 0; i < L->n; i++)
    if (!r || dt__req_has(&p->syms, r, L->v[i])) m |= 1ull << i;
  return m;
}

static int pin_find(const topo_pins *pins, uint32_t lk) {
  for (uint32_t i = 0; i < pins->n; i++)
    if (pins->v[i].lk == lk) return (int)i;
  return -1;
}

/* Pin key lk to mask; false when the pins are full. */
static bool pin_set(topo_pins *pins, uint32_t lk, uint64_t mask) {
  int i = pin_find(pins, lk);
  if (i < 0) {
    if (pins->n == TOPO_PINS) return false;
    i = (int)pins->n++;
    pins->v[i].lk = lk;
  }
  pins->v[i].mask = mask;
  return true;
}

bool dt__topo_pin(dt_plan *p, const topo_pins *pins, dt_reqs *r) {
  bool changed = false;
  for (uint32_t i = 0; i < pins->n; i++) {
    const rt_lkey *L = &p->lkeys.v[pins->v[i].lk];
    dt_sym vals[TOPO_LVALS];
    uint32_t n = 0;
    for (uint32_t d = 0; d < L->n; d++)
      if (pins->v[i].mask >> d & 1) vals[n++] = L->v[d];
    dt_req q;
    dt__req_make(&p->arena, &q, L->key, DT_OP_IN, vals, n, &p->syms);
    dt_reqs out;
    dt__reqs_add(&p->arena, &p->syms, r, &q, &out);
    changed |= !dt__reqs_equal(&out, r);
    *r = out;
  }
  return changed;
}

bool dt__topo_pins_type_key(const dt_plan *p, const topo_pins *pins) {
  for (uint32_t i = 0; i < pins->n; i++)
    if (slot_of(p, p->lkeys.v[pins->v[i].lk].key) >= 0) return true;
  return false;
}

/* The group for (kind, key, selector, namespaces); created on first use.
** Returns the index, -1 for a topology key dovetail does not model, or
** DT_ENOMEM. */
/* The part of a group's signature its node filter makes: the pod's node
** selector and required terms (bit 0), its tolerations (bit 1). */
static void filter_sig(const dt_podspec *d, uint8_t fmode, dt_buf *b) {
  dt__sig_u32(b, fmode);
  if (fmode & 1) {
    dt__sig_kvs(b, &d->node_selector);
    dt__sig_u32(b, (uint32_t)d->nterms);
    for (size_t t = 0; t < d->nterms; t++) dt__sig_mreqs(b, &d->terms[t]);
  }
  if (fmode & 2) dt__sig_tols(b, d);
}

/* A new group's node filter, compiled: one requirement set per required
** term, each with the node selector (one set when there are no terms). */
static int filter_compile(dt_plan *p, rt_group *g) {
  const dt_podspec *d = p->specs[g->fspec].src;
  if (!(g->fmode & 1)) return 0;
  g->nfterms = d->nterms ? (uint32_t)d->nterms : 1;
  g->fterms = dt__arena_alloc(&p->arena, g->nfterms * sizeof *g->fterms);
  if (!g->fterms) return DT_ENOMEM;
  for (uint32_t t = 0; t < g->nfterms; t++) {
    memset(&g->fterms[t], 0, sizeof g->fterms[t]);
    if (dt__sched_compile_selector_kvs(p, &d->node_selector, &g->fterms[t])) return DT_ENOMEM;
    if (d->nterms && dt__sched_compile_mreqs(p, &d->terms[t], &g->fterms[t])) return DT_ENOMEM;
  }
  return 0;
}

/* Whether existing node h passes g's node filter (pods on it count). */
static bool filter_passes(const dt_plan *p, const rt_group *g, uint32_t h) {
  const rt_node *n = &p->nodes[h];
  if (g->fmode & 2 && !tolerates(p, p->specs[g->fspec].src, n->taints, n->ntaints, false, NULL)) return false;
  if (!(g->fmode & 1)) return true;
  for (uint32_t t = 0; t < g->nfterms; t++)
    if (node_labels_match(p, n, &g->fterms[t])) return true;
  return false;
}

int dt__topo_group(dt_plan *p, int kind, const char *key, const dt_selector *sel, char *const *ns, size_t nns,
                   uint32_t fspec, uint8_t fmode, dt_sym own_ns, const char *const *mlk_vals, size_t nmlk) {
  topo_work++;
  dt_sym k = dt__sym(&p->syms, key);
  int dom = domain_of(p, k), lk = 0;
  if (dom < 0) return -1;
  if (dom == DOM_LABEL && (lk = lkey_of(p, k)) < 0) return lk;
  bool ns_all = nns == DT_NS_ALL;
  if (ns_all) nns = 0;
  dt_arena *a = &p->arena;
  dt_reqs r = {0};
  /* The selector's expressions and matchLabelKeys' values (the pod's own
  ** values of those keys join the selector), every value of each, added
  ** at once; then its namespaces, every one. */
  size_t nexpr = sel->present ? sel->expr.n : 0, nq = 0, most = 1;
  for (size_t i = 0; i < nexpr; i++)
    if (sel->expr.v[i].n > most) most = sel->expr.v[i].n;
  dt_req *q = dt__malloc((nexpr + nmlk + 1) * sizeof *q);
  dt_sym *vals = dt__malloc(most * sizeof *vals), *nsv = dt__malloc((nns + 1) * sizeof *nsv);
  dt_buf sig = {0}, desc = {0};
  int rc = -1;
  if (!q || !vals || !nsv) {
    rc = DT_ENOMEM;
    goto out;
  }
  for (size_t i = 0; i < nexpr; i++) {
    const dt_mreq *m = &sel->expr.v[i];
    for (size_t j = 0; j < m->n; j++) vals[j] = dt__sym(&p->syms, m->vals[j]);
    dt__req_make(a, &q[nq++], dt__sym(&p->syms, m->key), m->op, vals, (uint32_t)m->n, &p->syms);
  }
  for (size_t i = 0; i + 1 < nmlk * 2; i += 2) {
    dt_sym v = dt__sym(&p->syms, mlk_vals[i + 1]);
    dt__req_make(a, &q[nq++], dt__sym(&p->syms, mlk_vals[i]), DT_OP_IN, &v, 1, &p->syms);
  }
  dt__reqs_add_many(a, &p->syms, &r, q, nq, &r);
  uint32_t n = 0;
  if (nns == 0 && !ns_all) nsv[n++] = own_ns;
  for (size_t i = 0; i < nns; i++) nsv[n++] = dt__sym(&p->syms, ns[i]);
  dt__sig_u32(&sig, (uint32_t)kind | (uint32_t)dom << 8 | (uint32_t)sel->present << 16 | (uint32_t)ns_all << 17);
  if (dom == DOM_LABEL) dt__sig_u32(&sig, k);
  dt__sig_u32(&sig, r.n);
  for (uint32_t i = 0; i < r.n; i++) dt__req_sig(&r.r[i], &sig);
  dt__sig_u32(&sig, n);
  dt__buf_putn(&sig, (const char *)nsv, n * sizeof *nsv);
  if (fmode) filter_sig(p->specs[fspec].src, fmode, &sig);
  if (sig.oom || !sig.p) {
    rc = DT_ENOMEM;
    goto out;
  }
  dt_sym gs = dt__symn(&p->group_sigs, sig.p, sig.len);
  if (!gs) {
    rc = DT_ENOMEM;
    goto out;
  }
  if (gs <= p->groups.n) {
    rc = (int)gs - 1; /* symbols are dense: the n-th new signature is group n-1 */
    goto out;
  }
  /* A new group: its selector in words, named alike whatever the interning order. */
  uint32_t order[64], *idx = r.n <= 64 ? order : dt__arena_alloc(a, r.n * sizeof *idx);
  if (!idx) {
    rc = DT_ENOMEM;
    goto out;
  }
  dt__reqs_order(p, &r, idx);
  for (uint32_t i = 0; i < r.n; i++) {
    dt__req_describe(&p->syms, &r.r[idx[i]], &desc);
    if (i + 1 < r.n) dt__buf_puts(&desc, ", ");
  }
  if (desc.oom) {
    rc = DT_ENOMEM;
    goto out;
  }
  rt_group g;
  memset(&g, 0, sizeof g);
  g.kind = (uint8_t)kind;
  g.dom = (uint8_t)dom;
  g.key = k;
  g.lk = (uint32_t)lk;
  g.sel_null = !sel->present;
  g.ns_all = ns_all;
  g.sel = r;
  g.nns = n;
  g.ns = dt__arena_alloc(a, (n ? n : 1) * sizeof *g.ns);
  g.example_spec = g.example_ordinal = g.owner_spec = g.owner_ordinal = -1;
  g.desc = dt__arena_strdup(a, desc.p ? desc.p : "everything");
  if (!g.ns || !g.desc || dt__vec_push(&p->groups, g)) {
    rc = DT_ENOMEM;
    goto out;
  }
  memcpy(p->groups.v[p->groups.n - 1].ns, nsv, n * sizeof *nsv);
  rc = (int)p->groups.n - 1;
  if (fmode) {
    rt_group *ng = &p->groups.v[rc];
    ng->fmode = fmode;
    ng->fspec = fspec;
    if (filter_compile(p, ng)) rc = DT_ENOMEM;
  }
  /* A spread honouring taints takes as domains only those of the NodePools
  ** whose taints its pod tolerates, as Karpenter's TopologyDomainGroup */
  if (rc >= 0 && kind == TG_SPREAD && fmode & 2) {
    rt_group *ng = &p->groups.v[rc];
    const dt_podspec *src = p->specs[fspec].src;
    for (uint32_t i = 0; i < p->npools; i++) {
      const rt_pool *pl = &p->pools[i];
      if (!tolerates(p, src, pl->taints, pl->ntaints, false, NULL)) continue;
      if (dom == DOM_ZONE) ng->pdom |= pl->universe_z;
      if (dom == DOM_CT) ng->pdom |= pl->universe_c;
      if (dom == DOM_LABEL) pool_values(p, &p->lkeys.v[lk], i, false, &ng->pdom);
    }
  }
  /* Karpenter's countDomains: the zones of existing nodes the spread's
  ** filter passes are domains too, with or without pods, even where no
  ** NodePool launches (the kube-scheduler counts them alike) */
  for (uint32_t h = 0; rc >= 0 && kind == TG_SPREAD && (dom == DOM_ZONE || dom == DOM_LABEL) && h < p->nnodes; h++) {
    rt_group *ng = &p->groups.v[rc];
    const rt_node *n = &p->nodes[h];
    if (machine_deleting(n) || (ng->fmode && !filter_passes(p, ng, h))) continue;
    if (dom == DOM_ZONE && n->zone >= 0) ng->zdom |= 1ull << n->zone;
    if (dom == DOM_LABEL) ng->zdom |= host_lmask(p, &p->lkeys.v[lk], h, NULL, UINT32_MAX);
  }
out:
  dt__free(q);
  dt__free(vals);
  dt__free(nsv);
  dt__free(sig.p);
  dt__free(desc.p);
  return rc;
}

/* For every spec, the groups that count it. */
/* The key topo_select reads a pod by: its namespace and labels. */
static void label_key(const rt_spec *s, dt_buf *key) {
  key->len = 0;
  dt__sig_u32(key, s->ns);
  dt__sig_u32(key, s->nlabels);
  dt__buf_putn(key, (const char *)s->lk, s->nlabels * sizeof *s->lk);
  dt__buf_putn(key, (const char *)s->lv, s->nlabels * sizeof *s->lv);
}

int dt__topo_label_reps(const rt_spec *specs, uint32_t n, uint32_t *rep) {
  dt_namemap seen = {0};
  dt_buf key = {0};
  int rc = 0;
  for (uint32_t i = 0; i < n && !rc; i++) {
    label_key(&specs[i], &key);
    bool added;
    int32_t *v = key.oom || !key.p ? NULL : dt__namemap_put(&seen, key.p, key.len, (int32_t)i, &added);
    if (!v)
      rc = DT_ENOMEM;
    else
      rep[i] = (uint32_t)*v;
  }
  dt__free(key.p);
  dt__namemap_free(&seen);
  return rc;
}

/* A label of a distinct label set: the index topo_select finds a group's
** candidate sets by. */
typedef struct lab {
  dt_sym key, val;
  uint32_t set;
} lab;

static int cmp_lab(const void *a, const void *b) {
  const lab *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  if (x->val != y->val) return x->val < y->val ? -1 : 1;
  return x->set < y->set ? -1 : x->set > y->set;
}

/* Where labs[0..n) holds (key, val): [*from, return value). */
static size_t lab_range(const lab *labs, size_t n, dt_sym key, dt_sym val, size_t *from) {
  size_t bound[2];
  for (int upper = 0; upper < 2; upper++) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      bool before =
          labs[mid].key < key || (labs[mid].key == key && (upper ? labs[mid].val <= val : labs[mid].val < val));
      if (before)
        lo = mid + 1;
      else
        hi = mid;
    }
    bound[upper] = lo;
  }
  *from = bound[0];
  return bound[1];
}

/* Label sets below this many set x group pairs are matched pair by pair. */
#define SELECT_INDEX_PAIRS 4096

/*
** What a group selects is read from a pod's namespace and labels only, and
** pods of one workload share them: each distinct set is matched against the
** groups once and its pods share the list (an overlay reads the sets from
** its cluster, found once for all overlays). With many sets and many groups
** (one selector a workload, one workload a node) a group is tried only on
** the sets that carry a value of its narrowest In requirement, found in an
** index of the sets' labels; a group with no In requirement is tried on
** every set. Each set's list is in group order either way.
*/
int dt__topo_select(dt_plan *p) {
  if (!p->groups.n) { /* nothing to select (an overlay's specs may hold what a last plan's selected) */
    for (uint32_t i = 0; i < p->nspecs; i++) p->specs[i].nsel = 0;
    return 0;
  }
  uint32_t ng = (uint32_t)p->groups.n, *own = NULL, *sets = NULL, nsets = 0, *nhit = NULL;
  const uint32_t *rep = p->ov && p->cl->label_rep.n == p->nspecs ? p->cl->label_rep.v : NULL;
  lab *labs = NULL;
  size_t nlabs = 0;
  DT_VEC(uint64_t) pairs = {0}; /* set << 32 | group */
  int rc = 0;
  if (!rep) {
    own = dt__malloc((p->nspecs ? p->nspecs : 1) * sizeof *own);
    if (!own || dt__topo_label_reps(p->specs, p->nspecs, own)) {
      rc = DT_ENOMEM;
      goto out;
    }
    rep = own;
  }
  sets = dt__malloc((p->nspecs ? p->nspecs : 1) * sizeof *sets);
  if (!sets) {
    rc = DT_ENOMEM;
    goto out;
  }
  for (uint32_t i = 0; i < p->nspecs; i++)
    if (rep[i] == i) {
      sets[nsets] = i;
      nlabs += p->specs[i].nlabels;
      nsets++;
    }
  nhit = dt__calloc(nsets + 1, sizeof *nhit);
  if (!nhit) {
    rc = DT_ENOMEM;
    goto out;
  }
  bool indexed = (uint64_t)nsets * ng >= SELECT_INDEX_PAIRS;
  if (indexed) {
    labs = dt__malloc((nlabs ? nlabs : 1) * sizeof *labs);
    if (!labs) {
      rc = DT_ENOMEM;
      goto out;
    }
    size_t at = 0;
    for (uint32_t k = 0; k < nsets; k++) {
      const rt_spec *sp = &p->specs[sets[k]];
      for (uint32_t l = 0; l < sp->nlabels; l++) labs[at++] = (lab){sp->lk[l], sp->lv[l], k};
    }
    qsort(labs, nlabs, sizeof *labs, cmp_lab);
  }
  for (uint32_t g = 0; g < ng && !rc; g++) {
    const rt_group *gr = &p->groups.v[g];
    if (gr->sel_null) continue;
    const dt_req *narrow = NULL; /* the In requirement whose values the fewest sets carry */
    size_t fewest = SIZE_MAX;
    for (uint32_t r = 0; indexed && r < gr->sel.n; r++) {
      const dt_req *q = &gr->sel.r[r];
      if (q->complement) continue;
      size_t c = 0, from;
      for (uint32_t v = 0; v < q->n; v++) c += lab_range(labs, nlabs, q->key, q->v[v], &from) - from;
      if (c < fewest) {
        fewest = c;
        narrow = q;
      }
    }
    if (!narrow) {
      for (uint32_t k = 0; k < nsets && !rc; k++)
        if (selects(p, gr, &p->specs[sets[k]])) rc = dt__vec_push(&pairs, (uint64_t)k << 32 | g);
      continue;
    }
    for (uint32_t v = 0; v < narrow->n && !rc; v++) {
      size_t x, end = lab_range(labs, nlabs, narrow->key, narrow->v[v], &x);
      for (; x < end && !rc; x++)
        if (selects(p, gr, &p->specs[sets[labs[x].set]])) rc = dt__vec_push(&pairs, (uint64_t)labs[x].set << 32 | g);
    }
  }
  if (rc) goto out;
  /* each set's groups, in group order: the pairs were made group by group */
  for (size_t k = 0; k < pairs.n; k++) nhit[pairs.v[k] >> 32]++;
  for (uint32_t k = 0; k < nsets; k++) {
    rt_spec *sp = &p->specs[sets[k]];
    sp->sel = dt__arena_alloc(&p->arena, (nhit[k] ? nhit[k] : 1) * sizeof *sp->sel);
    if (!sp->sel) {
      rc = DT_ENOMEM;
      goto out;
    }
    sp->nsel = 0;
  }
  for (size_t k = 0; k < pairs.n; k++) {
    rt_spec *sp = &p->specs[sets[pairs.v[k] >> 32]];
    sp->sel[sp->nsel++] = (uint32_t)pairs.v[k];
  }
  for (uint32_t i = 0; i < p->nspecs; i++)
    if (rep[i] != i) {
      p->specs[i].sel = p->specs[rep[i]].sel;
      p->specs[i].nsel = p->specs[rep[i]].nsel;
    }
out:
  dt__free(own);
  dt__free(sets);
  dt__free(nhit);
  dt__free(labs);
  dt__free(pairs.v);
  return rc;
}

static int popcount64(uint64_t x) { return __builtin_popcountll(x); }

/* Record `count` pods of spec s (class c, may be NULL for bound pods) placed on
** host h whose zone may be any of Z and capacity type any of C. */
int dt__topo_record(dt_plan *p, uint32_t si, const rt_class *c, uint32_t h, uint64_t Z, uint8_t C, int32_t count,
                    int64_t ordinal) {
  /* The groups selecting a pod are its class's (the class signature holds
  ** them): a class's spec is read, not each pod's, at a million pods. */
  const rt_spec *s = &p->specs[c ? c->spec_idx : si];
  for (uint32_t i = 0; i < s->nsel; i++) {
    rt_group *g = &p->groups.v[s->sel[i]];
    if (g->fmode && h < p->nnodes && !filter_passes(p, g, h)) continue; /* a node the spread's filter leaves out */
    bool all = g->kind == TG_ANTI;
    if (g->dom == DOM_HOST) {
      if (host_add(&g->host, h, count)) return DT_ENOMEM;
    } else if (g->dom == DOM_ZONE) {
      if (all || popcount64(Z) == 1)
        for (uint32_t z = 0; z < p->nzones; z++)
          if (Z >> z & 1) g->zone[z] += count;
    } else if (g->dom == DOM_LABEL) {
      const rt_lkey *L = &p->lkeys.v[g->lk];
      uint64_t m = host_lmask(p, L, h, NULL, UINT32_MAX);
      if (all || popcount64(m) == 1)
        for (uint32_t d = 0; d < L->n; d++)
          if (m >> d & 1) g->zone[d] += count;
    } else {
      if (all || popcount64(C) == 1)
        for (int k = 0; k < DT_CT_N; k++)
          if (C >> k & 1) g->ct[k] += count;
    }
    g->total += count;
    if (g->example_spec < 0) {
      g->example_spec = si;
      g->example_ordinal = ordinal;
    }
  }
  /* Owners of required anti-affinity: others must avoid them. */
  const dt_podspec *src = s->src;
  size_t nown = c ? c->ntc : src->nanti;
  for (size_t t = 0; t < nown; t++) {
    int gi;
    if (c) {
      if (!c->tc[t].owner) continue;
      gi = (int)c->tc[t].group;
    } else if (s->tgroup) { /* found for the spec by build_groups: spreads, affinities, then these */
      gi = s->tgroup[src->nspread + src->naff + src->npaff + t];
    } else {
      char *const *tns;
      size_t tnns;
      if (dt__term_ns(p, s, &src->anti[t], &tns, &tnns)) return DT_ENOMEM;
      gi = dt__topo_group(p, TG_ANTI, src->anti[t].key, &src->anti[t].sel, tns, tnns, 0, 0, s->ns, NULL, 0);
      if (gi == DT_ENOMEM) return DT_ENOMEM;
      if (gi < 0) continue;
    }
    rt_group *g = &p->groups.v[gi];
    if (g->owner_spec < 0) {
      g->owner_spec = si;
      g->owner_ordinal = ordinal;
    }
    if (g->dom == DOM_HOST) {
      if (host_add(&g->ohost, h, count)) return DT_ENOMEM;
    } else if (g->dom == DOM_ZONE) {
      for (uint32_t z = 0; z < p->nzones; z++)
        if (Z >> z & 1) g->ozone[z] += count;
    } else if (g->dom == DOM_LABEL) {
      const rt_lkey *L = &p->lkeys.v[g->lk];
      uint64_t m = host_lmask(p, L, h, NULL, UINT32_MAX);
      for (uint32_t d = 0; d < L->n; d++)
        if (m >> d & 1) g->ozone[d] += count;
    } else {
      for (int q = 0; q < DT_CT_N; q++)
        if (C >> q & 1) g->oct[q] += count;
    }
  }
  return 0;
}

/* Lowest-count domain among cand whose count passes the rule; -1 if none. */
static int pick_spread(const int32_t *cnt, int n, uint64_t cand, uint64_t elig, const rt_tc *tc) {
  int ndom = popcount64(elig);
  int64_t min = INT32_MAX;
  for (int d = 0; d < n; d++)
    if (elig >> d & 1 && cnt[d] < min) min = cnt[d];
  if (ndom == 0 || (tc->min_domains && ndom < tc->min_domains)) min = 0;
  int best = -1;
  for (int d = 0; d < n; d++) {
    if (!(cand >> d & 1)) continue;
    if ((int64_t)cnt[d] + tc->self - min > tc->max_skew) continue;
    if (best < 0 || cnt[d] < cnt[best]) best = d;
  }
  return best;
}

/*
** Check the class's topology on host h; narrow *Z and *C to what it allows,
** and (on a claim, whose requirements are hr, or its own when NULL) pins the
** values of other label keys it may take. Returns 0 (fits), 1 (not now:
** counts may change) or 2 (never on this host). *fail gets the failing
** constraint index, or ntc + group index for an inverse anti-affinity.
*/
int dt__topo_check(const dt_plan *p, const rt_class *c, uint32_t h, const dt_reqs *hr, uint32_t pool, uint64_t *Z,
                   uint8_t *C, topo_pins *pins, uint32_t *fail) {
  uint64_t z = *Z;
  uint8_t ct = *C;
  topo_pins own;
  if (!pins) pins = &own;
  pins->n = 0;
  bool node = h < p->nnodes;
  for (uint32_t i = 0; i < c->ntc; i++) {
    const rt_tc *tc = &c->tc[i];
    const rt_group *g = &p->groups.v[tc->group];
    *fail = i;
    if (g->dom == DOM_HOST) {
      int32_t n = host_get(&g->host, h);
      if (tc->kind == TG_SPREAD && n + tc->self > tc->max_skew) return 2;
      if (tc->kind == TG_ANTI && n > 0) return 2;
      if (tc->kind == TG_AFF && n == 0 && !(tc->self && g->total == 0)) return 1;
      continue;
    }
    const rt_lkey *L = g->dom == DOM_LABEL ? &p->lkeys.v[g->lk] : NULL;
    int pi = L ? pin_find(pins, g->lk) : -1;
    uint64_t cur, elig;
    int nd;
    const int32_t *cnt = g->dom == DOM_CT ? g->ct : g->zone;
    bool honor = tc->kind == TG_SPREAD && g->fmode & 2; /* domains from the pools it tolerates */
    if (L) {
      cur = pi >= 0 ? pins->v[pi].mask : host_lmask(p, L, h, hr, pool);
      if (!cur) { /* a host without the label is in no domain: anti-affinity passes it, the others never */
        if (tc->kind == TG_ANTI) continue;
        return 2;
      }
      nd = (int)L->n;
      uint64_t all = L->n == 64 ? UINT64_MAX : (1ull << L->n) - 1;
      elig = (tc->kind == TG_SPREAD ? (honor ? g->pdom : L->universe) | g->zdom : all) & class_lmask(p, c, L);
    } else {
      nd = g->dom == DOM_ZONE ? (int)p->nzones : DT_CT_N;
      cur = g->dom == DOM_ZONE ? z : ct;
      uint64_t pz = honor ? g->pdom : p->universe_z, pc = honor ? g->pdom : p->universe_c;
      elig = g->dom == DOM_ZONE ? ((pz | g->zdom) & c->elig_z) : (uint64_t)(pc & c->elig_c);
    }
    uint64_t next = 0;
    if (tc->kind == TG_SPREAD) {
      int d = pick_spread(cnt, nd, cur & elig, elig, tc);
      if (d < 0) return 1;
      next = 1ull << d;
    } else if (tc->kind == TG_AFF) {
      for (int d = 0; d < nd; d++)
        if ((cur & elig) >> d & 1 && cnt[d] > 0) next |= 1ull << d;
      if (!next && tc->self && g->total == 0)
        for (int d = 0; d < nd && !next; d++)
          if ((cur & elig) >> d & 1) next = 1ull << d; /* bootstrap in the first allowed domain */
      if (!next) return 1;
    } else {
      for (int d = 0; d < nd; d++)
        if (cur >> d & 1 && cnt[d] == 0) next |= 1ull << d;
      if (!next) return 2;
    }
    if (L) {
      if (!node && next != cur && !pin_set(pins, g->lk, next)) return 2;
    } else if (g->dom == DOM_ZONE) {
      z = next;
    } else {
      ct = (uint8_t)next;
    }
  }
  /* Inverse anti-affinity: avoid where pods that exclude us are. */
  const rt_spec *s = &p->specs[c->spec_idx];
  for (uint32_t i = 0; i < s->nsel; i++) {
    const rt_group *g = &p->groups.v[s->sel[i]];
    if (g->kind != TG_ANTI) continue;
    *fail = c->ntc + s->sel[i];
    if (g->dom == DOM_HOST) {
      if (host_get(&g->ohost, h) > 0) return 2;
    } else if (g->dom == DOM_ZONE) {
      for (uint32_t d = 0; d < p->nzones; d++)
        if (g->ozone[d] > 0) z &= ~(1ull << d);
      if (!z) return 2;
    } else if (g->dom == DOM_LABEL) {
      const rt_lkey *L = &p->lkeys.v[g->lk];
      int pi = pin_find(pins, g->lk);
      uint64_t cur = pi >= 0 ? pins->v[pi].mask : host_lmask(p, L, h, hr, pool), next = cur;
      if (!cur) continue;
      for (uint32_t d = 0; d < L->n; d++)
        if (g->ozone[d] > 0) next &= ~(1ull << d);
      if (!next) return 2;
      if (!node && next != cur && !pin_set(pins, g->lk, next)) return 2;
    } else {
      for (int d = 0; d < DT_CT_N; d++)
        if (g->oct[d] > 0) ct &= (uint8_t) ~(1u << d);
      if (!ct) return 2;
    }
  }
  *Z = z;
  *C = ct;
  return 0;
}

/* Why a topology check failed, for an unschedulable pod. */
void dt__topo_explain(const dt_plan *p, const rt_class *c, uint32_t fail, dt_buf *b) {
  static const char *dom_name[] = {"zone", "node", "capacity type", "value"};
  const rt_group *g;
  if (fail >= c->ntc) {
    g = &p->groups.v[fail - c->ntc];
    dt__buf_printf(b, "anti-affinity declared by ");
  } else {
    g = &p->groups.v[c->tc[fail].group];
  }
  const char *key = dt__sym_str(&p->syms, g->key);
  char ex[600] = "";
  int64_t es = fail >= c->ntc ? g->owner_spec : g->example_spec,
          eo = fail >= c->ntc ? g->owner_ordinal : g->example_ordinal;
  if (es >= 0) {
    rt_pod tmp = {0, (uint32_t)es, eo, 0};
    dt__pod_name(p, &tmp, ex, sizeof ex);
  }
  if (fail >= c->ntc) {
    dt__buf_printf(b, "pod %s on %s excludes this pod from every allowed %s", ex[0] ? ex : "(unknown)", key,
                   dom_name[g->dom]);
    return;
  }
  const rt_tc *tc = &c->tc[fail];
  if (g->dom == DOM_LABEL && tc->kind != TG_ANTI && !p->lkeys.v[g->lk].universe)
    dt__buf_printf(b,
                   "%s on %s: no NodePool's requirements or labels, nor instance type's labels, give %s a value a "
                   "new node could take, and no node it fits carries one",
                   tc->kind == TG_SPREAD ? "topology spread" : "pod affinity", key, key);
  else if (tc->kind == TG_SPREAD)
    dt__buf_printf(b, "topology spread on %s: maxSkew %d would be exceeded in every allowed %s (selector %s)", key,
                   tc->max_skew, dom_name[g->dom], g->desc);
  else if (tc->kind == TG_AFF)
    dt__buf_printf(b, "pod affinity on %s: no allowed %s has a pod matching %s", key, dom_name[g->dom], g->desc);
  else if (ex[0])
    dt__buf_printf(b, "anti-affinity with pod %s on %s: every allowed %s already has a pod matching %s", ex, key,
                   dom_name[g->dom], g->desc);
  else
    dt__buf_printf(b, "anti-affinity on %s: every allowed %s already has a pod matching %s", key, dom_name[g->dom],
                   g->desc);
  if (tc->dflt) dt__buf_printf(b, " (a default constraint of --scheduler-config)");
}
