/*
** disrupt.c: what to take away. One pass runs Karpenter's methods in order
** (emptiness, drift, expiry, multi-node and single-node consolidation) over
** the cluster in the manifests, under the NodePools' disruption budgets, and
** says why every node it leaves alone stays.
**
** Karpenter stops a loop at the first method that yields commands and starts
** the next loop with those commands in flight. A pass here goes on instead:
** each method sees the nodes earlier commands removed (their pods moved where
** the simulation put them, replacements in flight) and the budgets they used,
** so one pass prints what a run of Karpenter's loops would issue.
**
** Every consolidation decision is a real scheduling simulation: the
** candidates' pods become pending and the scheduler places them on the other
** nodes and at most one new claim, with every scheduling constraint.
**
** A pass runs a hundred simulations or more on clusters of thousands of
** nodes, each of which differs from the last by a few nodes. So the cluster
** is compiled once per pass (dt__cluster_new: names interned, nodes and pod
** specs compiled, what the pods bound to each node use summed) and each
** simulation plans an overlay of it: which nodes its view holds, which pods
** are pending or left out. A command's moves and replacements are told to
** the cluster (dt__cluster_bind, dt__cluster_add_node). The overlay decides
** as compiling the view from scratch would, byte for byte; spec/unit.c
** compares the two (dt__disrupt_run_rebuild) on generated clusters.
**
** Static NodePools (spec.replicas) follow Karpenter's static capacity: never
** consolidated (emptiness or underutilization), drift replaced one for one
** from the template while the pool is not above its replicas and
** limits.nodes leaves room, expiry as any node, and a pool above its
** replicas scaled down first (Overprovisioned), ignoring budgets.
*/
#include "disrupt_int.h"

/* ------------------------------------------------------------ output */

/* A string for the result: copied into its arena (NULL stays NULL). */
const char *dt__dr_rstr(state *st, const char *s) { return s ? dt__arena_strdup(&st->r->arena, s) : NULL; }

static bool explaining(const state *st, size_t i) {
  return st->r->explain_node && !strcmp(st->nodes.v[i].n->name, st->o.explain);
}

void dt__dr_explain_step(state *st, const char *msg) {
  const char *s = dt__dr_rstr(st, msg);
  if (!s || dt__vec_push(&st->r->explain, s)) st->r->arena.oom = 1;
}

/* Record why node i stays, and the step for --explain. */
void dt__dr_why(state *st, size_t i, const char *fmt, ...) {
  dnode *d = &st->nodes.v[i];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->why, sizeof d->why, fmt, ap);
  va_end(ap);
  if (!explaining(st, i)) return;
  const dt_disruption *r = st->r;
  if (r->explain.n && !strcmp(r->explain.v[r->explain.n - 1], d->why)) return; /* methods repeat themselves */
  dt__dr_explain_step(st, d->why);
}

void dt__dr_step(state *st, size_t i, const char *fmt, ...) {
  if (!explaining(st, i)) return;
  char msg[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  dt__dr_explain_step(st, msg);
}

/* ------------------------------------------------------------ the model */

static const dt_ctype *find_type(state *st, const char *name) {
  dt_sym s = name ? dt__sym_find(&st->types, name) : 0;
  return s ? &st->cat->types[s - 1] : NULL;
}

static double offer_price(const dt_ctype *t, const char *zone, int ct) {
  if (!t || !zone || ct < 0) return -1;
  for (size_t i = 0; i < t->noff; i++)
    if (t->off[i].ct == ct && !strcmp(t->off[i].zone, zone))
      return ct == DT_CT_RESERVED && t->od_price >= 0 ? t->od_price : t->off[i].price;
  return ct == DT_CT_RESERVED ? t->od_price : -1;
}

double dt__dr_eviction_cost(const dt_podspec *p) {
  double c = 1.0 + (double)p->deletion_cost / 134217728.0 + (double)p->priority / 33554432.0;
  return c < -10 ? -10 : c > 10 ? 10 : c;
}

static int64_t scaled(int64_t v, bool pct, int64_t of) { return pct ? (v * of + 99) / 100 : v; } /* rounds up */

/* The disruption cost and emptiness of node i, from its reschedulable pods. */
void dt__dr_node_cost(state *st, dnode *d) {
  d->cost = 1.0;
  size_t moving = 0; /* reschedulable pods: a node with one is not empty, whatever its priority */
  for (size_t k = 0; k < d->pods.n; k++) {
    const dt_podspec *p = &st->pods[d->pods.v[k]];
    if (p->daemon) continue;
    moving++;
    double c = dt__dr_eviction_cost(p);
    if (c > 0) d->cost += c;
  }
  d->empty = !moving;
}

bool dt__dr_node_matches_pool(const dt_node *n, const dt_nodepool *p, char *out, size_t len) {
  for (size_t i = 0; i < p->reqs.n; i++) {
    const dt_mreq *q = &p->reqs.v[i];
    const char *v = dt__kv_get(n->labels.v, n->labels.n, q->key);
    if (!v) continue; /* a label the node does not carry is not drift */
    if (!dt__mreq_match(q, n->labels.v, n->labels.n)) {
      int at = snprintf(out, len, "label %s=%s no longer satisfies the NodePool's requirement %s %s", q->key, v, q->key,
                        dt__op_name(q->op));
      for (size_t j = 0; j < q->n && at >= 0 && (size_t)at < len; j++) /* its values, as [a, b] */
        at += snprintf(out + at, len - (size_t)at, "%s%s%s", j ? ", " : " [", q->vals[j], j + 1 == q->n ? "]" : "");
      return false;
    }
  }
  return true;
}

/*
** Pods nominated to an in-flight claim (its dovetail.dev/pods annotation, as
** Karpenter nominates pods to the NodeClaim launched for them) are on that
** claim for disruption: a claim launched for pods is never "empty" while
** they wait for it. Replicas are matched by their expanded names. Appends
** the nominated pods, one each, to st->pods (sized by the caller).
*/
typedef struct nom {
  size_t spec;
  int64_t ordinal; /* -1 for a Pod */
  const char *node;
} nom;

static int nom_cmp(const void *a, const void *b) {
  const nom *x = a, *y = b;
  if (x->spec != y->spec) return x->spec < y->spec ? -1 : 1;
  return (x->ordinal > y->ordinal) - (x->ordinal < y->ordinal);
}

/* The nominated pods, one each, in input order: a pending pod's first
** nomination (in node order) puts it on that node. */
static int nominations_add(state *st, size_t cap, nom *noms, size_t n) {
  const dt_manifests *m = st->m;
  if (n) qsort(noms, n, sizeof *noms, nom_cmp);
  for (size_t i = 0; i < n && st->npods < cap; i++) {
    const dt_podspec *p = &m->pods.v[noms[i].spec];
    dt_podspec c = *p;
    c.count = 1;
    c.owner = NULL;
    c.node_name = (char *)noms[i].node;
    if (noms[i].ordinal >= 0) { /* one replica: its claims are its ordinal's */
      char name[600];
      snprintf(name, sizeof name, "%s-%lld", dt__replica_base(p), (long long)noms[i].ordinal);
      if (!(c.name = dt__arena_strdup(&st->arena, name))) return DT_ENOMEM;
      c.replica_of = p->name;
      c.replica_ordinal = noms[i].ordinal;
    }
    st->pods[st->npods++] = c;
    if (st->got) st->got[noms[i].spec] = 1;
  }
  return 0;
}

/* Whether pod i is taken as pending (not bound, or moving off a machine
** being deleted); and whether node i may take pod j's nomination. */
static bool pending_pod(const state *st, size_t i) { return !st->m->pods.v[i].node_name || (st->mov && st->mov[i]); }
static bool nominates(const state *st, size_t node, size_t pod) { return !(st->mov && st->mov[pod] && st->gone[node]); }

/* nominated() by name numbers below top + 1 (no pending workload): each
** number is one pending pod's, so the pods nominated come out in input order
** by walking the pods once, with no sort. */
static int nominated_ids(state *st, size_t cap, uint32_t top) {
  const dt_manifests *m = st->m;
  int32_t *spec_of = dt__calloc((size_t)top + 1, sizeof *spec_of); /* number -> pending pod + 1 */
  uint8_t *seen = dt__calloc((size_t)top + 1, 1);
  const char **on = dt__calloc(m->pods.n ? m->pods.n : 1, sizeof *on); /* pending pod -> its node, NULL none */
  int rc = spec_of && seen && on ? 0 : DT_ENOMEM;
  bool any = false;
  for (size_t i = 0; i < m->pods.n && !rc; i++) {
    const dt_podspec *p = &m->pods.v[i];
    if (!pending_pod(st, i)) continue;
    any = true;
    if (!spec_of[p->name_id]) spec_of[p->name_id] = (int32_t)i + 1;
  }
  for (size_t i = 0; i < m->nodes.n && !rc && any; i++)
    for (size_t k = 0; k < m->nodes.v[i].npods; k++) {
      uint32_t id = m->nodes.v[i].pod_ids[k];
      if (seen[id] || (spec_of[id] && !nominates(st, i, (size_t)spec_of[id] - 1)))
        continue; /* one claim per pod: the first names it */
      seen[id] = 1;
      if (spec_of[id]) on[spec_of[id] - 1] = m->nodes.v[i].name;
    }
  for (size_t i = 0; i < m->pods.n && !rc && any && st->npods < cap; i++) {
    if (!on[i]) continue;
    dt_podspec c = m->pods.v[i];
    c.count = 1;
    c.owner = NULL;
    c.node_name = (char *)on[i];
    st->pods[st->npods++] = c;
    if (st->got) st->got[i] = 1;
  }
  dt__free(spec_of);
  dt__free(seen);
  dt__free(on);
  return rc;
}

typedef DT_VEC(nom) nom_vec;

/* Pending pod `name` ("ns/name", or "ns/<workload>-<ordinal>") on node:
** a nomination, unless the pod was named before (one node per pod: the
** first names it) or is not pending, or is the pod of a machine being
** deleted and node (node_i in m->nodes, SIZE_MAX for none) is one too. */
static int nominate_name(const state *st, dt_namemap *specs, dt_namemap *seen, const dt_namemap *pods, nom_vec *noms,
                         const char *name, const char *node, size_t node_i) {
  const dt_manifests *m = st->m;
  size_t len = strlen(name);
  bool added;
  if (node_i != SIZE_MAX && st->mov) {
    int32_t own = dt__namemap_get(specs, name, len, 0);
    if (own && !nominates(st, node_i, (size_t)own - 1)) return 0;
  }
  if (!dt__namemap_put(seen, name, len, 0, &added)) return DT_ENOMEM;
  if (!added) return 0;
  int32_t sy = dt__namemap_get(specs, name, len, 0);
  nom n = {0, -1, node};
  bool found = sy && !m->pods.v[sy - 1].owner;
  if (found) {
    n.spec = (size_t)sy - 1;
  } else if (!dt__namemap_get(pods, name, len, 0)) {
    /* "<ns>/<workload>-<ordinal>", the ordinal as a plan writes it, of a
    ** replica no pod of the input stands for (a pod of that name makes the
    ** nomination an old one: the pod is where it is) */
    const char *dash = strrchr(name, '-');
    int64_t o = dash ? dt__ordinal_text(dash + 1) : -1;
    if (o >= 0) {
      size_t bl = (size_t)(dash - name);
      sy = dt__namemap_get(specs, name, bl < 599 ? bl : 599, 0);
      const dt_podspec *t = sy ? &m->pods.v[sy - 1] : NULL;
      if (t && t->owner && o >= t->ordinal_base && o - t->ordinal_base < t->count) {
        n.spec = (size_t)sy - 1;
        n.ordinal = o;
        found = true;
      }
    }
  }
  return found && dt__vec_push(noms, n) ? DT_ENOMEM : 0;
}

/* Work in the number of nominations, not of replicas: each nominated name
** is looked up as a pending Pod, or as "<workload>-<ordinal>" of a pending
** workload; the pods are appended in input order, as bound pods are. */
static int nominated(state *st, size_t cap) {
  const dt_manifests *m = st->m;
  /* pending "ns/name" -> spec index + 1 (the first such pod), and the names
  ** taken; the keys are written once into one block, each cut at 599 bytes
  ** as the 600-byte key buffer always cut them (a workload's base name is
  ** cut the same way; a nominated name is looked up whole) */
  dt_namemap specs = {0}, seen = {0}, pods = {0}; /* pods: "ns/name" of the input's Pods, not being deleted */
  nom_vec noms = {0};
  int rc = 0;
  size_t total = 0;
  /* by number (dt_podspec.name_id, dt_node.pod_ids) when every pending pod
  ** is a Pod with one and every node's names have theirs: equal numbers are
  ** equal names, and no workload is pending to take a "-<ordinal>" name */
  bool ids = !st->o.nassumed; /* assumed placements are names */
  uint32_t top = 0;
  for (size_t i = 0; i < m->pods.n; i++) {
    const dt_podspec *p = &m->pods.v[i];
    if (!pending_pod(st, i)) continue;
    ids &= !p->owner && p->name_id;
    if (p->name_id > top) top = p->name_id;
  }
  for (size_t i = 0; i < m->nodes.n && ids; i++) {
    const dt_node *n = &m->nodes.v[i];
    ids &= !n->npods || n->pod_ids;
    for (size_t k = 0; ids && k < n->npods; k++)
      if (n->pod_ids[k] > top) top = n->pod_ids[k];
  }
  if (ids) return nominated_ids(st, cap, top);
  for (size_t i = 0; i < m->pods.n; i++)
    if (pending_pod(st, i))
      total += strlen(m->pods.v[i].ns) +
               strlen(m->pods.v[i].owner ? dt__replica_base(&m->pods.v[i]) : m->pods.v[i].name) + 2;
  char *keys = dt__malloc(total ? total : 1), *w = keys;
  if (!keys) rc = DT_ENOMEM;
  for (size_t i = 0; i < m->pods.n && !rc; i++) {
    const dt_podspec *p = &m->pods.v[i];
    if (!pending_pod(st, i)) continue;
    const char *base = p->owner ? dt__replica_base(p) : p->name; /* a workload's: its replicas' base */
    size_t a = strlen(p->ns), b = strlen(base), n = a + 1 + b;
    memcpy(w, p->ns, a);
    w[a] = '/';
    memcpy(w + a + 1, base, b);
    if (n > 599) n = 599;
    w[n] = 0;
    bool added;
    int32_t *v = dt__namemap_put(&specs, w, n, 0, &added);
    if (!v)
      rc = DT_ENOMEM;
    else if (added)
      *v = (int32_t)i + 1;
    w += a + b + 2;
  }
  for (size_t i = 0; i < m->pods.n && !rc && specs.n; i++) {
    const dt_podspec *p = &m->pods.v[i];
    char k[600];
    bool added;
    if (p->owner || p->terminating) continue;
    snprintf(k, sizeof k, "%s/%s", p->ns, p->name);
    const char *key = dt__arena_strdup(&st->arena, k); /* the map keeps the key, not a copy */
    if (!key || !dt__namemap_put(&pods, key, strlen(key), 1, &added)) rc = DT_ENOMEM;
  }
  for (size_t i = 0; i < m->nodes.n && !rc && specs.n; i++)
    for (size_t k = 0; k < m->nodes.v[i].npods && !rc; k++)
      rc = nominate_name(st, &specs, &seen, &pods, &noms, m->nodes.v[i].pods[k], m->nodes.v[i].name, i);
  for (size_t i = 0; i < st->o.nassumed && !rc && specs.n; i++) /* after the claims': a claim's nomination stands */
    rc = nominate_name(st, &specs, &seen, &pods, &noms, st->o.assumed_pods[i], st->o.assumed_nodes[i], SIZE_MAX);
  if (!rc) rc = nominations_add(st, cap, noms.v, noms.n);
  dt__namemap_free(&specs);
  dt__namemap_free(&seen);
  dt__namemap_free(&pods);
  dt__free(keys);
  dt__free(noms.v);
  return rc;
}

static int str_cmp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Whether a caller's sorted list of node names holds node d: by its name,
** the node name a claim carries, or the claim a Node registered. */
static bool node_listed(const dnode *d, const char *const *list, size_t n) {
  const char *names[3] = {d->n->name, d->n->node_name, d->claim ? d->claim->name : NULL};
  for (int k = 0; k < 3; k++)
    if (names[k] && n && bsearch(&names[k], list, n, sizeof *list, str_cmp)) return true;
  return false;
}

/*
** The pods Karpenter reschedules (dt__pod_reschedulable) off machines being
** deleted: a Node or its NodeClaim (paired as the pass pairs them) with a
** deletionTimestamp. A plan places them anew; here each is where the last
** round nominated it (a claim launched for it, or a Node the round put it
** on), so that claim is not "empty" while it waits for them, and the room
** they will take is not given away, else on the machine it is leaving
** (st->mov, st->gone, st->got).
*/
static int moving_off_deleting(state *st, const int32_t *paired) {
  const dt_manifests *m = st->m;
  bool any = false;
  for (size_t i = 0; i < m->nodes.n && !any; i++) any = m->nodes.v[i].deleting;
  if (!any) return 0;
  st->gone = dt__arena_alloc(&st->arena, m->nodes.n);
  if (!st->gone) return DT_ENOMEM;
  for (size_t i = 0; i < m->nodes.n; i++)
    if (m->nodes.v[i].deleting) st->gone[i] = st->gone[paired[i] >= 0 ? (size_t)paired[i] : i] = 1;
  dt_symtab gone = {0}; /* the names the machines being deleted go by */
  for (size_t i = 0; i < m->nodes.n; i++) {
    if (paired[i] >= 0 && st->gone[paired[i]]) st->gone[i] = 1; /* the claim of a Node being deleted */
    if (st->gone[i]) dt__sym(&gone, m->nodes.v[i].name);
  }
  st->mov = dt__arena_alloc(&st->arena, m->pods.n ? m->pods.n : 1);
  st->got = dt__arena_alloc(&st->arena, m->pods.n ? m->pods.n : 1);
  int rc = gone.oom || !st->mov || !st->got ? DT_ENOMEM : 0;
  any = false;
  for (size_t i = 0; i < m->pods.n && !rc; i++) {
    const dt_podspec *p = &m->pods.v[i];
    st->mov[i] =
        p->node_name && dt__sym_find(&gone, p->node_name) && dt__pod_reschedulable(p) && !dt__pdb_fully_blocks(m, p);
    any |= st->mov[i];
  }
  if (!any) st->mov = NULL;
  dt__symtab_free(&gone);
  return rc;
}

int dt__dr_build(state *st) {
  const dt_manifests *m = st->m;
  for (size_t i = 0; i < st->cat->ntypes; i++)
    if (dt__sym(&st->types, st->cat->types[i].name) != i + 1) return DT_ENOMEM;
  /* bound pods, then pods nominated to in-flight claims */
  size_t nb = 0;
  for (size_t i = 0; i < m->pods.n; i++) nb += m->pods.v[i].node_name != NULL;
  for (size_t i = 0; i < m->nodes.n; i++) nb += m->nodes.v[i].npods;
  nb += st->o.nassumed;
  /* written up to npods, below, before anything reads them */
  st->pods = dt__arena_raw(&st->arena, (nb ? nb : 1) * sizeof *st->pods);
  st->pod_pdb = dt__arena_raw(&st->arena, (nb ? nb : 1) * sizeof *st->pod_pdb);
  if (!st->pods || !st->pod_pdb) return DT_ENOMEM;
  /* a NodeClaim a Node in the input stands for is that Node (one machine,
  ** not an empty second one) */
  int32_t *paired = dt__arena_alloc(&st->arena, (m->nodes.n ? m->nodes.n : 1) * sizeof *paired);
  if (!paired || dt__claims_paired(m, paired) || moving_off_deleting(st, paired)) return DT_ENOMEM;
  for (size_t i = 0; i < m->pods.n; i++)
    if (m->pods.v[i].node_name && !(st->mov && st->mov[i])) st->pods[st->npods++] = m->pods.v[i];
  if (nominated(st, nb)) return DT_ENOMEM;
  for (size_t i = 0; st->mov && i < m->pods.n; i++) /* nominated nowhere else: where they are */
    if (st->mov[i] && !st->got[i]) st->pods[st->npods++] = m->pods.v[i];
  /* nodes, with their pods */
  dt_symtab names = {0};
  /* m->nodes index -> st->nodes index + 1, for the claims paired with a Node */
  int32_t *dn_of = dt__arena_alloc(&st->arena, (m->nodes.n ? m->nodes.n : 1) * sizeof *dn_of);
  if (!dn_of) return DT_ENOMEM;
  for (size_t i = 0; i < m->nodes.n; i++) {
    dt_node *n = &m->nodes.v[i];
    if (paired[i] >= 0) continue;
    dn_of[i] = (int32_t)st->nodes.n + 1;
    dnode d = {0};
    d.n = n;
    d.tainted = dt__node_disrupted(n);
    d.pool = -1;
    const char *pn = dt__kv_get(n->labels.v, n->labels.n, DT_L_NODEPOOL);
    for (size_t k = 0; pn && k < m->pools.n; k++)
      if (!strcmp(m->pools.v[k].name, pn)) d.pool = (int)k;
    d.type = dt__kv_get(n->labels.v, n->labels.n, DT_L_INSTANCE_TYPE);
    d.zone = dt__kv_get(n->labels.v, n->labels.n, DT_L_ZONE);
    const char *ct = dt__kv_get(n->labels.v, n->labels.n, DT_L_CAPACITY_TYPE);
    d.ct = ct ? dt__ct_parse(ct) : -1;
    d.price = offer_price(find_type(st, d.type), d.zone, d.ct);
    /* pods name their node by its name, or a claim by its node's name */
    if (dt__vec_push(&st->nodes, d) || dt__sym(&names, n->name) == 0 ||
        (n->node_name && !dt__sym(&names, n->node_name))) {
      dt__symtab_free(&names);
      return DT_ENOMEM;
    }
  }
  /* the machines at the prices NodeOverlays give their offerings, as a
  ** plan prices their replacements: at the catalog's, a node whose own
  ** type an overlay made cheaper was replaced by its own type, endlessly */
  if (m->nodeoverlays.n && st->nodes.n) {
    size_t nn = st->nodes.n;
    const char **ty = dt__malloc(nn * sizeof *ty), **zo = dt__malloc(nn * sizeof *zo);
    int *ct = dt__malloc(nn * sizeof *ct);
    double *pr = dt__malloc(nn * sizeof *pr);
    dt_error e = {0};
    int prc = ty && zo && ct && pr ? 0 : DT_ENOMEM;
    for (size_t i = 0; !prc && i < nn; i++) {
      const dnode *d = &st->nodes.v[i];
      ty[i] = d->type, zo[i] = d->zone, ct[i] = d->ct, pr[i] = d->price;
    }
    if (!prc) prc = dt__overlaid_prices(st->cat, m, nn, ty, zo, ct, pr, &e);
    for (size_t i = 0; !prc && i < nn; i++)
      if (st->nodes.v[i].price >= 0) st->nodes.v[i].price = pr[i];
    dt__free(ty), dt__free(zo), dt__free(ct), dt__free(pr);
    if (prc == DT_ENOMEM) {
      dt__symtab_free(&names);
      return DT_ENOMEM;
    }
  }
  /* pods nominated to a claim that a Node stands for are on that Node: a
  ** claim launched for pods is not empty once its Node registers and before
  ** they are bound */
  for (size_t i = 0; i < m->nodes.n; i++)
    if (paired[i] >= 0 && !dt__sym(&names, m->nodes.v[i].name)) {
      dt__symtab_free(&names);
      return DT_ENOMEM;
    }
  int32_t *at = dt__calloc(names.n + 1, sizeof *at);
  if (!at) {
    dt__symtab_free(&names);
    return DT_ENOMEM;
  }
  for (size_t i = st->nodes.n; i-- > 0;) {
    const dt_node *n = st->nodes.v[i].n;
    at[dt__sym_find(&names, n->name)] = (int32_t)i + 1;
    if (n->node_name) at[dt__sym_find(&names, n->node_name)] = (int32_t)i + 1;
  }
  for (size_t i = 0; i < m->nodes.n; i++) {
    if (paired[i] < 0) continue;
    st->nodes.v[dn_of[paired[i]] - 1].claim = &m->nodes.v[i];
    st->nodes.v[dn_of[paired[i]] - 1].tainted |= dt__node_disrupted(&m->nodes.v[i]);
    dt_sym s = dt__sym_find(&names, m->nodes.v[i].name);
    if (s && !at[s]) at[s] = dn_of[paired[i]];
  }
  for (size_t i = 0; i < st->npods; i++) {
    /* a terminating pod is going (not rescheduled, no do-not-disrupt or PDB of
    ** its own), except a StatefulSet's, whose replacement waits for it (Karpenter's
    ** IsReschedulable); its requests still hold the node's room in simulations */
    if (st->pods[i].terminating && !st->pods[i].sts) continue;
    dt_sym s = dt__sym_find(&names, st->pods[i].node_name);
    if (!s || !at[s]) continue;
    /* a pod nominated to a claim its Node stands for names the Node from here
    ** on, as the simulations' views know the machine by the Node alone: its
    ** room stays taken there (else a pass found room the next round's plan
    ** does not, took a node away and the round launched it again) */
    const dt_node *n = st->nodes.v[at[s] - 1].n;
    if (strcmp(st->pods[i].node_name, n->name) && (!n->node_name || strcmp(st->pods[i].node_name, n->node_name)))
      st->pods[i].node_name = n->name;
    if (dt__vec_push(&st->nodes.v[at[s] - 1].pods, (uint32_t)i)) st->rc = DT_ENOMEM;
  }
  dt__free(at);
  int oom = names.oom;
  dt__symtab_free(&names);
  if (oom || st->rc) return DT_ENOMEM;
  for (size_t i = 0; i < st->nodes.n; i++) {
    dnode *d = &st->nodes.v[i];
    dt__dr_node_cost(st, d);
    d->held = node_listed(d, st->o.held_nodes, st->o.nheld);
    if (d->held)
      dt__dr_why(st, i,
                 "runs a pod the reader refused (left out of the pass): not disrupted, and no destination for "
                 "other pods, while that pod is unknown");
  }
  /* PDBs: what each allows now (status.disruptionsAllowed, else computed
  ** from the pods it selects, percentages rounded up as Kubernetes does). */
  st->pdb_allowed = dt__arena_alloc(&st->arena, (m->pdbs.n ? m->pdbs.n : 1) * sizeof *st->pdb_allowed);
  if (!st->pdb_allowed) return DT_ENOMEM;
  for (size_t i = 0; i < st->npods; i++) st->pod_pdb[i] = -1;
  for (size_t k = 0; k < m->pdbs.n; k++) {
    const dt_pdb *b = &m->pdbs.v[k];
    int64_t healthy = 0;
    for (size_t i = 0; i < st->npods; i++) {
      const dt_podspec *p = &st->pods[i];
      if (strcmp(p->ns, b->ns) || !dt__selector_match(&b->sel, p->labels.v, p->labels.n)) continue;
      st->pod_pdb[i] = st->pod_pdb[i] == -1 ? (int32_t)k : -2;
      healthy++;
    }
    int64_t allowed;
    if (b->allowed >= 0)
      allowed = b->allowed;
    else if (b->has_min)
      allowed = healthy - scaled(b->min_avail, b->min_pct, healthy);
    else if (b->has_max)
      allowed = scaled(b->max_unavail, b->max_pct, healthy);
    else
      allowed = healthy; /* an empty spec allows everything */
    st->pdb_allowed[k] = allowed < 0 ? 0 : allowed;
  }
  return 0;
}

/* ------------------------------------------------------------ budgets */

/* Active while the schedule's last hit is less than the duration ago: its
** next hit after now - duration is not after now. A window reaching back past
** 1970 starts there (the cron reads no earlier time, and -1 is "no hit"). */
static bool budget_active(const dt_budget *b, int64_t now) {
  if (!b->scheduled) return true;
  int64_t hit = dt__cron_next(&b->cron, b->duration < now ? now - b->duration : 0);
  return hit >= 0 && hit <= now;
}

int64_t dt__budget_nodes(const dt_nodepool *p, unsigned reason, int64_t now, int64_t nodes) {
  int64_t v = INT64_MAX;
  for (size_t k = 0; k < p->nbudgets; k++) {
    const dt_budget *bu = &p->budgets[k];
    if (!(bu->reasons & reason)) continue;
    if (bu->fail_closed) return 0; /* Karpenter's GetAllowedDisruptions on a schedule it cannot parse */
    if (!budget_active(bu, now)) continue;
    int64_t n = scaled(bu->nodes, bu->pct, nodes);
    if (n < v) v = n;
  }
  return v;
}

int dt__dr_budgets(state *st) {
  const dt_manifests *m = st->m;
  st->pb = dt__arena_alloc(&st->arena, (m->pools.n ? m->pools.n : 1) * sizeof *st->pb);
  if (!st->pb) return DT_ENOMEM;
  for (size_t i = 0; i < st->nodes.n; i++) {
    const dnode *d = &st->nodes.v[i];
    if (d->pool < 0) continue;
    poolbudget *b = &st->pb[d->pool];
    b->cost += d->price > 0 ? d->price : 0;
    b->disruption += d->cost;
    /* Karpenter's BuildDisruptionBudgetMapping: initialized nodes only, those
    ** being deleted among them; NotReady or marked ones are disrupting */
    if (!dt__dr_initialized(d)) continue;
    b->nodes++;
    if (!d->n->ready || d->n->deleting || d->tainted) b->disrupting++;
  }
  st->r->has_budgets = true;
  for (size_t pi = 0; pi < m->pools.n; pi++) {
    const dt_nodepool *p = &m->pools.v[pi];
    poolbudget *b = &st->pb[pi];
    for (int r = 0; r < 3; r++) {
      int64_t v = dt__budget_nodes(p, 1u << r, st->o.now, b->nodes);
      if (dt__policy_has(st->o.policy, DT_HOOK_BUDGET)) {
        int64_t a = v == INT64_MAX ? -1 : (v - b->disrupting > 0 ? v - b->disrupting : 0);
        const dt_hook_field f[] = {{"now", DT_HF_NUMBER, NULL, (double)st->o.now},
                                   {"nodes", DT_HF_NUMBER, NULL, (double)b->nodes},
                                   {"disrupting", DT_HF_NUMBER, NULL, (double)b->disrupting},
                                   {"allowed", DT_HF_NUMBER, NULL, (double)a}};
        const dt_hook_rec ctx = {f, a < 0 ? 3 : 4}; /* allowed is nil when unlimited */
        if (dt__policy_budget(st->o.policy, p->name, k_reason[r], &ctx, &a) == 0)
          v = a < 0 ? INT64_MAX : a + b->disrupting;
      }
      b->value[r] = v;
      int64_t allowed = v == INT64_MAX ? -1 : (v - b->disrupting > 0 ? v - b->disrupting : 0);
      dt_budget_rec e = {dt__dr_rstr(st, p->name), k_reason[r], allowed, b->nodes, b->disrupting};
      if (!e.nodepool || dt__vec_push(&st->r->budgets, e)) return DT_ENOMEM;
    }
  }
  return 0;
}

int64_t dt__dr_allowed(state *st, int pool, int reason_bit) {
  const poolbudget *b = &st->pb[pool];
  int64_t v = b->value[reason_bit];
  if (v == INT64_MAX) return INT64_MAX;
  return v - b->disrupting > 0 ? v - b->disrupting : 0;
}

/* ------------------------------------------------------------ candidates */

/* Whether the caller may take node i away (dt_disrupt_opts.managed): by
** its name, the node name a claim carries, or the claim a Node registered. */
bool dt__dr_managed(const state *st, size_t i) {
  const dnode *d = &st->nodes.v[i];
  if (d->held) return false;
  return !st->o.managed || node_listed(d, st->o.managed, st->o.nmanaged);
}

/* Whether node i may be disrupted at all, and if its pods allow it. */
bool dt__dr_eligible(state *st, size_t i, bool check_pods) {
  dnode *d = &st->nodes.v[i];
  const dt_node *n = d->n;
  if (d->removed) return false;
  if (d->pool < 0) {
    dt__dr_why(st, i, "not managed by a NodePool in the input");
    return false;
  }
  if (d->held) return false; /* its reason is set */
  if (!dt__dr_managed(st, i)) {
    dt__dr_why(st, i, "not launched here: left to its owner");
    return false;
  }
  if (!dt__dr_initialized(d)) {
    dt__dr_why(st, i, "not initialized yet");
    return false;
  }
  if (n->deleting) {
    dt__dr_why(st, i, "already being deleted");
    return false;
  }
  if (n->dnd) {
    dt__dr_why(st, i, "do-not-disrupt: the node is annotated karpenter.sh/do-not-disrupt");
    return false;
  }
  if (d->tainted) {
    dt__dr_why(st, i, "already disrupting (karpenter.sh/disrupted taint)");
    return false;
  }
  if (!check_pods) return true;
  for (size_t k = 0; k < d->pods.n; k++) {
    uint32_t pi = d->pods.v[k];
    const dt_podspec *p = &st->pods[pi];
    /* do-not-disrupt holds whatever the pod (Karpenter lets DaemonSet and mirror pods block too) */
    if (p->dnd || p->dnd_until > st->o.now) {
      char until[40] = "";
      if (!p->dnd) { /* a duration from the pod's start: when the hold ends */
        char t[32];
        dt__fmt_time(p->dnd_until, t, sizeof t);
        snprintf(until, sizeof until, " (until %s)", t);
      }
      dt__dr_why(st, i, "do-not-disrupt: pod %s/%s is annotated karpenter.sh/do-not-disrupt%s", p->ns, p->name, until);
      return false;
    }
    if (st->pod_pdb[pi] == -1 || !dt__dr_pdb_applies(p, st->pod_pdb[pi] >= 0 ? &st->m->pdbs.v[st->pod_pdb[pi]] : NULL))
      continue;
    if (st->pod_pdb[pi] == -2) {
      dt__dr_why(st, i, "PDB: pod %s/%s is covered by more than one PodDisruptionBudget", p->ns, p->name);
      return false;
    }
    if (st->pod_pdb[pi] >= 0 && st->pdb_allowed[st->pod_pdb[pi]] <= 0) {
      const dt_pdb *b = &st->m->pdbs.v[st->pod_pdb[pi]];
      dt__dr_why(st, i, "PDB: PodDisruptionBudget %s/%s allows no eviction of pod %s/%s now", b->ns, b->name, p->ns,
                 p->name);
      return false;
    }
  }
  return true;
}

int64_t dt__dr_age(const state *st, const dt_node *n) { return n->created ? st->o.now - n->created : 0; }

/* Consolidatable: consolidateAfter has elapsed since the last pod event. */
bool dt__dr_settled(state *st, size_t i) {
  const dnode *d = &st->nodes.v[i];
  const dt_nodepool *p = &st->m->pools.v[d->pool];
  if (p->consolidate_after < 0) {
    dt__dr_why(st, i, "consolidateAfter: Never");
    return false;
  }
  if (dt__dr_settling(st, d)) {
    dt__dr_why(st, i, "consolidateAfter %llds not elapsed (%llds since its last pod event or initialization)",
               (long long)p->consolidate_after, (long long)(st->o.now - dt__dr_since(d)));
    return false;
  }
  return true;
}

bool dt__dr_settling(const state *st, const dnode *d) {
  const dt_nodepool *p = &st->m->pools.v[d->pool];
  int64_t since = dt__dr_since(d);
  return p->consolidate_after >= 0 && since && st->o.now - since < p->consolidate_after;
}

/* ------------------------------------------------------------ run */

/*
** The cluster every simulation of the pass overlays: the nodes of the state
** in order (a node's id is its index), then the pods. A cluster that does
** not compile (more resource names than a plan holds) leaves the pass to
** compile each simulation, which then reports the error as before.
*/
static int cluster(state *st) {
  if (st->rebuild) return 0;
  dt_error e = {0};
  int rc = dt__cluster_new_compiled(st->cat, st->cc_shared, st->m, &st->cl, &e);
  for (size_t i = 0; !rc && i < st->nodes.n; i++) rc = dt__cluster_add_node(st->cl, st->nodes.v[i].n, &e);
  if (!rc) rc = dt__cluster_set_pods(st->cl, st->pods, st->npods, &e);
  if (!rc) rc = dt__dr_take_notes(st, dt__cluster_plan(st->cl));
  if (rc) {
    dt__cluster_free(st->cl);
    st->cl = NULL;
  }
  return rc == DT_ENOMEM ? rc : 0;
}

/* Whether consolidation's answer may change with the clock alone: a node
** inside its consolidateAfter window (it becomes a candidate, and a place
** for others' pods, once it ends), or a pod's do-not-disrupt until a time. */
static bool time_pending(const state *st) {
  for (size_t i = 0; i < st->nodes.n; i++) {
    const dnode *d = &st->nodes.v[i];
    /* the pass's own replacements (extra) come with its commands, and a pass with a command is
    ** not consolidated whatever the clock */
    if (!d->removed && !d->extra && d->pool >= 0 && dt__dr_settling(st, d)) return true;
  }
  for (size_t k = 0; k < st->npods; k++)
    if (st->pods[k].dnd_until > st->o.now) return true;
  return false;
}

static int disrupt_run_held(const dt_catalog *catalog, const dt_compiled_catalog *cc, const dt_manifests *m,
                            const dt_disrupt_opts *opts, bool rebuild, bool screen, dt_disruption **out, dt_error *err);

/* Where a plan of m places its CapacityBuffers' chunks on the input's nodes
** and claims, as Karpenter's provisioner last placed its virtual pods (a
** node hosting them is not empty): into *pods and *nodes, n of them. The
** caller frees both arrays and their strings. */
static int buffer_placements(const dt_catalog *catalog, const dt_manifests *m, const dt_disrupt_opts *o, char ***pods,
                             char ***nodes, size_t *n, dt_error *err) {
  *pods = *nodes = NULL;
  *n = 0;
  bool any = false;
  for (size_t i = 0; i < m->pods.n && !any; i++) any = m->pods.v[i].buffer;
  if (!any) return 0;
  dt_plan_opts po = {.now = o->now, .seed = o->seed, .packing = DT_PACKING_FFD};
  dt_plan *p = NULL;
  int rc = dt_plan_run(catalog, m, &po, &p, err);
  size_t nb = rc ? 0 : dt_plan_binding_count(p);
  if (!rc && (!(*pods = dt__calloc(nb + 1, sizeof **pods)) || !(*nodes = dt__calloc(nb + 1, sizeof **nodes))))
    rc = dt__err(err, DT_ENOMEM, "out of memory");
  for (size_t i = 0; i < nb && !rc; i++) {
    char pod[600];
    const char *node;
    if (!dt__plan_binding_virtual(p, i) || dt_plan_binding(p, i, pod, sizeof pod, &node)) continue;
    if (!((*pods)[*n] = dt__strdup(pod)) || !((*nodes)[*n] = dt__strdup(node))) {
      dt__free((*pods)[*n]);
      rc = dt__err(err, DT_ENOMEM, "out of memory");
      break;
    }
    (*n)++;
  }
  dt_plan_free(p);
  return rc;
}

static int disrupt_run(const dt_catalog *catalog, const dt_compiled_catalog *cc, const dt_manifests *m,
                       const dt_disrupt_opts *opts, bool rebuild, bool screen, dt_disruption **out, dt_error *err) {
  dt__init();
  *out = NULL;
  int brc = m ? dt_manifests_finish((dt_manifests *)m, err) : 0; /* the first pass makes the chunks */
  if (brc) return brc;
  /* a caller that says where no pending pod was placed (a one-shot pass):
  ** the buffers' chunks where a plan puts them on the cluster, held */
  if (m && m->buffers.n && (!opts || !opts->nassumed)) {
    char **bp, **bn;
    size_t nbp;
    dt_disrupt_opts o2 = opts ? *opts : (dt_disrupt_opts){0};
    brc = buffer_placements(catalog, m, &o2, &bp, &bn, &nbp, err);
    o2.assumed_pods = (const char *const *)bp;
    o2.assumed_nodes = (const char *const *)bn;
    o2.nassumed = nbp;
    if (!brc) brc = disrupt_run_held(catalog, cc, m, &o2, rebuild, screen, out, err);
    for (size_t i = 0; i < nbp; i++) dt__free(bp[i]), dt__free(bn[i]);
    dt__free(bp), dt__free(bn);
    return brc;
  }
  return disrupt_run_held(catalog, cc, m, opts, rebuild, screen, out, err);
}

/* disrupt_run, with the placements it holds given */
static int disrupt_run_held(const dt_catalog *catalog, const dt_compiled_catalog *cc, const dt_manifests *m,
                            const dt_disrupt_opts *opts, bool rebuild, bool screen, dt_disruption **out,
                            dt_error *err) {
  double t0 = dt__now_ms();
  *out = NULL;
  state st = {0};
  st.cat = catalog;
  st.cc_shared = cc;
  st.m = m;
  st.rebuild = rebuild;
  st.no_screen = !screen;
  if (opts) st.o = *opts;
  if (!st.o.now) st.o.now = 946684800;
  dt_disruption *r = st.r = dt__calloc(1, sizeof *r);
  if (!r) return dt__err(err, DT_ENOMEM, "out of memory");
  dt__alloc_failed(1);
  if (st.o.explain) r->explain_node = dt__arena_strdup(&r->arena, st.o.explain);
  int rc = st.o.explain && !r->explain_node ? DT_ENOMEM : 0;
  if (!rc) rc = dt__dr_build(&st);
  if (!rc) rc = cluster(&st);
  dt__policy_pass_begin(st.o.policy, st.cl != NULL); /* every simulation priced alike */
  if (!rc) rc = dt__dr_budgets(&st);
  if (!rc) rc = dt__dr_static_scale_down(&st);
  if (!rc) rc = dt__dr_emptiness(&st);
  if (!rc) rc = dt__dr_replace_each(&st, false);
  if (!rc) rc = dt__dr_replace_each(&st, true);
  if (!rc && !st.o.skip_consolidation) {
    size_t before = r->commands.n;
    unsigned long reads = dt__policy_reads(st.o.policy);
    rc = dt__dr_multi_node(&st);
    if (!rc) rc = dt__dr_single_node(&st);
    r->stats.consolidated = !rc && r->commands.n == before && !st.budget_held && !time_pending(&st) &&
                            dt__policy_reads(st.o.policy) == reads && !st.o.npool_policies;
  }
  dt__policy_pass_end(st.o.policy);
  for (size_t i = 0; !rc && i < st.nodes.n; i++) {
    const dnode *d = &st.nodes.v[i];
    if (d->extra || d->removed) continue;
    dt_blocked_info b = {dt__dr_rstr(&st, d->n->name),
                         dt__dr_rstr(&st, d->why[0] ? d->why
                                                    : "nothing to do: not empty, drifted or expired, and no cheaper "
                                                      "arrangement was found")};
    if (dt__vec_push(&r->blocked, b)) rc = DT_ENOMEM;
    r->stats.blocked++;
  }
  for (size_t i = 0; i < st.nodes.n; i++) r->stats.nodes += !st.nodes.v[i].extra; /* a paired claim is its Node */
  if (!rc && r->explain_node) {
    bool found = false;
    for (size_t i = 0; i < m->nodes.n && !found; i++) found = !strcmp(m->nodes.v[i].name, st.o.explain);
    if (!found) dt__dr_explain_step(&st, "no such node in the input");
  }
  if (!rc && st.o.policy) {
    r->has_policy_errors = true;
    rc = dt__policy_errors_take(st.o.policy, &r->arena, &r->policy_errors);
  }
  r->stats.simulations = st.plans;
  r->stats.screened = st.screened;
  if (!rc && (dt__alloc_failed(1) || r->arena.oom || st.arena.oom || st.types.oom)) rc = DT_ENOMEM;
  if (!rc) rc = dt__disrupt_doc_build(r, st.o.now);
  for (size_t i = 0; i < st.nodes.n; i++) dt__free(st.nodes.v[i].pods.v);
  dt__free(st.nodes.v);
  dt__symtab_free(&st.types);
  dt__arena_free(&st.arena);
  dt__catalog_compiled_free(st.cc);
  dt__cluster_free(st.cl);
  dt__dr_screen_free(&st);
  if (rc) {
    dt_disrupt_free(r);
    return dt__err(err, rc, "%s", rc == DT_ECANCELED ? "cancelled" : "out of memory");
  }
  r->stats.run_ms = dt__now_ms() - t0;
  *out = r;
  return 0;
}

int dt_disrupt_run(const dt_catalog *catalog, const dt_manifests *m, const dt_disrupt_opts *opts, dt_disruption **out,
                   dt_error *err) {
  if (opts && opts->explain && m) { /* as plan --explain: a node not in the input is an error */
    bool found = false;
    for (size_t i = 0; i < m->nodes.n && !found; i++) found = !strcmp(m->nodes.v[i].name, opts->explain);
    if (!found) {
      *out = NULL;
      return dt__err(err, DT_EINVAL, "explain: no node %s in the input (it takes a Node or a NodeClaim by name)",
                     opts->explain);
    }
  }
  return disrupt_run(catalog, NULL, m, opts, false, true, out, err);
}

int dt__disrupt_run_rebuild(const dt_catalog *catalog, const dt_manifests *m, const dt_disrupt_opts *opts,
                            dt_disruption **out, dt_error *err) {
  return disrupt_run(catalog, NULL, m, opts, true, true, out, err);
}

int dt__disrupt_run_compiled(const dt_catalog *catalog, const dt_compiled_catalog *cc, const dt_manifests *m,
                             const dt_disrupt_opts *opts, dt_disruption **out, dt_error *err) {
  return disrupt_run(catalog, cc, m, opts, false, true, out, err);
}

int dt__disrupt_run_unscreened(const dt_catalog *catalog, const dt_manifests *m, const dt_disrupt_opts *opts,
                               dt_disruption **out, dt_error *err) {
  return disrupt_run(catalog, NULL, m, opts, false, false, out, err);
}
