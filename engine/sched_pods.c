/*
** sched_pods.c: the second half of compiling a run: the pending pods in
** Karpenter's queue order, their specs (requests, labels, ports, volume
** topology), the topology groups their terms name, and the classes that
** pods with the same requests and constraints share (a class is what the
** solver tests against claims and nodes, once per pair).
*/
#include "sched_int.h"

/* Karpenter's queue order: cpu descending, memory descending, creation
** time, then input order (Karpenter uses the UID, which we do not have).
** The first three are a spec's; the pods of a spec come in input order. */
typedef struct queue_key {
  int64_t last; /* a CapacityBuffer's chunks: after every real pod */
  int64_t cpu, mem, created;
  uint32_t n; /* pods with this key (in the sorted copy, the key's index) */
} queue_key;

static int cmp_queue_key(const void *a, const void *b) {
  const queue_key *x = a, *y = b;
  if (x->last != y->last) return x->last < y->last ? -1 : 1;
  if (x->cpu != y->cpu) return x->cpu > y->cpu ? -1 : 1;
  if (x->mem != y->mem) return x->mem > y->mem ? -1 : 1;
  return x->created < y->created ? -1 : x->created > y->created;
}

static int cmp_input_order(const void *a, const void *b) {
  const rt_pod *x = a, *y = b;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

/* The n pods of in[] into out[] in queue order. Pods share few keys (a
** Deployment's replicas one, a cluster of plain Pods its shapes times its
** creation seconds), so the distinct keys are sorted and the pods dealt
** into their places in one stable pass, instead of sorting a key per pod:
** at a million pods that sort and its buffers were a tenth of the plan.
** Each key's pods are then in input order unless the input was not (a
** spec's seq out of turn): such a run is sorted by itself. */
int dt__sched_queue_order(const rt_spec *specs, const rt_pod *in, size_t n, rt_pod *out) {
  /* A spec's pods are pushed together: each run of them adds at most one
  ** key, so keys[] never moves under the map that points into it. */
  size_t runs = 0;
  for (size_t i = 0; i < n; i++) runs += !i || in[i].spec != in[i - 1].spec;
  queue_key *keys = dt__malloc((runs ? runs : 1) * sizeof *keys);
  uint32_t *kof = dt__malloc((n ? n : 1) * sizeof *kof), nk = 0;
  dt_namemap seen = {0}; /* a key's bytes (cpu, memory, creation) -> its index in keys[] */
  int rc = 0;
  if (!keys || !kof) {
    rc = DT_ENOMEM;
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    if (i && in[i].spec == in[i - 1].spec) {
      kof[i] = kof[i - 1];
      keys[kof[i]].n++;
      continue;
    }
    const rt_spec *s = &specs[in[i].spec];
    keys[nk] = (queue_key){s->src->buffer, s->req[DT_R_CPU], s->req[DT_R_MEM], s->src->created, 0};
    bool added;
    int32_t *q = dt__namemap_put(&seen, (const char *)&keys[nk], offsetof(queue_key, n), (int32_t)nk, &added);
    if (!q) {
      rc = DT_ENOMEM;
      goto out;
    }
    nk += added;
    kof[i] = (uint32_t)*q;
    keys[kof[i]].n++;
  }
  /* The keys in order; each key's first place is the pods of the keys before it. */
  uint32_t *at = dt__malloc((nk ? nk : 1) * sizeof *at);
  queue_key *sorted = dt__malloc((nk ? nk : 1) * sizeof *sorted);
  if (!at || !sorted) {
    dt__free(at);
    dt__free(sorted);
    rc = DT_ENOMEM;
    goto out;
  }
  for (uint32_t q = 0; q < nk; q++) {
    sorted[q] = keys[q];
    sorted[q].n = q;
  }
  qsort(sorted, nk, sizeof *sorted, cmp_queue_key);
  uint32_t pos = 0;
  for (uint32_t r = 0; r < nk; r++) {
    at[sorted[r].n] = pos;
    pos += keys[sorted[r].n].n;
  }
  for (size_t i = 0; i < n; i++) out[at[kof[i]]++] = in[i];
  /* Each key's run now ends at at[q]. */
  for (uint32_t q = 0; q < nk; q++) {
    size_t end = at[q], start = end - keys[q].n;
    for (size_t i = start + 1; i < end; i++)
      if (cmp_input_order(&out[i - 1], &out[i]) > 0) {
        qsort(out + start, end - start, sizeof *out, cmp_input_order);
        break;
      }
  }
  dt__free(at);
  dt__free(sorted);
out:
  dt__namemap_free(&seen);
  dt__free(keys);
  dt__free(kof);
  return rc;
}

static int cmp_u8_weight(const dt_podterm *t, uint8_t a, uint8_t b) {
  return t[a].weight != t[b].weight ? (t[a].weight > t[b].weight ? -1 : 1) : (a < b ? -1 : 1);
}

/* Indices of weighted terms, heaviest first (stable). */
static uint8_t *weight_order(dt_plan *p, const dt_podterm *t, size_t n) {
  uint8_t *o = A(p, n ? n : 1);
  if (!o) return NULL;
  for (size_t i = 0; i < n && i < 255; i++) o[i] = (uint8_t)i;
  for (size_t i = 1; i < n && i < 255; i++)
    for (size_t k = i; k > 0 && cmp_u8_weight(t, o[k], o[k - 1]) < 0; k--) {
      uint8_t x = o[k];
      o[k] = o[k - 1];
      o[k - 1] = x;
    }
  return o;
}

static uint8_t *pref_order(dt_plan *p, const dt_prefterm *t, size_t n) {
  uint8_t *o = A(p, n ? n : 1);
  if (!o) return NULL;
  for (size_t i = 0; i < n && i < 255; i++) o[i] = (uint8_t)i;
  for (size_t i = 1; i < n && i < 255; i++)
    for (size_t k = i; k > 0 && t[o[k]].weight > t[o[k - 1]].weight; k--) {
      uint8_t x = o[k];
      o[k] = o[k - 1];
      o[k - 1] = x;
    }
  return o;
}

static int cmp_label(const void *a, const void *b) {
  const dt_sym *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* A spread's node filter (rt_group.fmode): the pod's node selector and
** required terms unless nodeAffinityPolicy is Ignore, its tolerations when
** nodeTaintsPolicy is Honor. */
static uint8_t spread_filter(const dt_podspec *d, size_t t) {
  bool aff = !d->spread[t].affinity_ignore && (d->node_selector.n || d->nterms);
  return (uint8_t)((aff ? 1 : 0) | (d->spread[t].taints_honor ? 2 : 0));
}

/*
** The namespaces term t of spec s counts pods in, into *ns and *nns
** (DT_NS_ALL: every one): its list, and the Namespace objects its
** namespaceSelector selects (as Karpenter's buildNamespaceList); where the
** input holds no Namespace, such a selector takes every namespace, and says so.
*/
int dt__term_ns(dt_plan *p, const rt_spec *s, const dt_podterm *t, char *const **ns, size_t *nns) {
  *ns = t->ns;
  *nns = t->all_ns ? DT_NS_ALL : t->nns;
  if (t->all_ns || !t->ns_sel.present) return 0;
  const dt_manifests *m = p->manifests;
  if (!m->namespaces.n) {
    note_in(p,
            "%s: pod %s/%s: a namespaceSelector selects namespaces by their labels, and the input holds no Namespace: "
            "every namespace is taken",
            s->src->file, s->src->ns, s->src->name);
    *nns = DT_NS_ALL;
    return 0;
  }
  char **v = A(p, (t->nns + m->namespaces.n + 1) * sizeof *v);
  if (!v) return DT_ENOMEM;
  size_t n = 0;
  for (size_t i = 0; i < t->nns; i++) v[n++] = t->ns[i];
  for (size_t i = 0; i < m->namespaces.n; i++) {
    const dt_namespace *q = &m->namespaces.v[i];
    if (dt__selector_match(&t->ns_sel, q->labels.v, q->labels.n)) v[n++] = q->name;
  }
  *ns = v;
  *nns = n;
  return 0;
}

/* The group of one term (spread or affinity); -1 when its key is not modelled (said in a note). */
static int term_group(dt_plan *p, const rt_spec *s, int kind, const char *key, const dt_selector *sel, char *const *ns,
                      size_t nns, char *const *mlk, size_t nmlk, uint8_t fmode) {
  const char *vals[32];
  size_t n = 0;
  for (size_t i = 0; i < nmlk && n < 16; i++)
    for (uint32_t k = 0; k < s->nlabels; k++)
      if (!strcmp(dt__sym_str(&p->syms, s->lk[k]), mlk[i])) {
        vals[2 * n] = mlk[i];
        vals[2 * n + 1] = dt__sym_str(&p->syms, s->lv[k]);
        n++;
      }
  /* a zone ID names one zone: spreading over zone IDs is spreading over zones */
  const char *tk = p->nzid && !strcmp(key, DT_L_ZONE_ID) ? DT_L_ZONE : key;
  int g = dt__topo_group(p, kind, tk, sel, ns, nns, (uint32_t)(s - p->specs), fmode, s->ns, vals, n);
  if (g == -1 || g == -3)
    note_in(p,
            g == -3 ? "%s: pod %s/%s: topology key %s has more than 64 values among the NodePools, instance types and "
                      "nodes, which dovetail does not model; the constraint is ignored"
                    : "%s: pod %s/%s: topology key %s is a label the cloud or Karpenter sets (instance type, NodePool, "
                      "region...), whose domains dovetail does not model; the constraint is ignored",
            s->src->file, s->src->ns, s->src->name, key);
  return g == -3 ? -1 : g;
}

/* A pod whose only constraints past a shape's (namespace, labels, node
** selector, tolerations) are topology spreads and pod (anti-)affinities:
** equal such pods compile to the same symbols and groups, and are selected
** by the same groups, so with the same requests they share a class. */
static bool has_term_shape(const dt_podspec *d) {
  return (d->nspread || d->naff || d->nanti || d->npaff || d->npanti) &&
         !(d->nterms || d->npref || d->nports || d->npvcs || d->vm_arch);
}

static void selector_sig(dt_buf *b, const dt_selector *sel) {
  dt__sig_u32(b, sel->present);
  dt__sig_mreqs(b, &sel->expr);
}

static void podterms_sig(dt_buf *b, const dt_podterm *t, size_t n) {
  dt__sig_u32(b, (uint32_t)n);
  for (size_t i = 0; i < n; i++) {
    dt__sig_i64(b, t[i].weight);
    selector_sig(b, &t[i].sel);
    dt__sig_str(b, t[i].key);
    dt__sig_u32(b, (uint32_t)t[i].nns | (uint32_t)t[i].all_ns << 31);
    for (size_t k = 0; k < t[i].nns; k++) dt__sig_str(b, t[i].ns[k]);
    selector_sig(b, &t[i].ns_sel);
  }
}

/* The signature of a pod has_term_shape accepts: its shape's fields, then
** every field of its spreads and pod terms. */
static void term_shape_sig(const dt_podspec *d, dt_buf *b) {
  dt__pod_base_sig(d, b);
  dt__sig_u32(b, (uint32_t)d->nspread);
  for (size_t i = 0; i < d->nspread; i++) {
    const dt_spread *t = &d->spread[i];
    dt__sig_i64(b, t->max_skew);
    dt__sig_i64(b, t->min_domains);
    dt__sig_str(b, t->key);
    dt__sig_u32(b, t->anyway);
    dt__sig_u32(b, (uint32_t)t->affinity_ignore << 1 | t->taints_honor);
    selector_sig(b, &t->sel);
    dt__sig_u32(b, (uint32_t)t->nmlk);
    for (size_t k = 0; k < t->nmlk; k++) dt__sig_str(b, t->match_label_keys[k]);
  }
  podterms_sig(b, d->aff, d->naff);
  podterms_sig(b, d->paff, d->npaff);
  podterms_sig(b, d->anti, d->nanti);
  podterms_sig(b, d->panti, d->npanti);
}

/* Whether spec s has a shape of has_term_shape's (its groups and class are
** then shared with the first spec of its shape, outside an overlay). */
static bool term_shaped(const dt_plan *p, const rt_spec *s) {
  return !p->ov && (s->shape & 1) && has_term_shape(s->src);
}

/* Whether spec f's term groups may serve a spec of its shape: every key
** is modelled (one that is not is noted for each pod that has it). */
static bool shared_groups(const rt_spec *f) {
  const dt_podspec *d = f->src;
  size_t nt = d->nspread + d->naff + d->npaff + d->nanti + d->npanti;
  for (size_t t = 0; t < nt; t++)
    if (f->tgroup[t] < 0) return false;
  return true;
}

/* For each pod with topology terms, the first such pod of its term shape
** (has_term_shape's: same namespace, labels, selectors and terms, so the
** same groups); NO_REP for one of no such shape. A simulation (an overlay)
** then finds each shape's groups once, not once per pod. */
#define NO_REP UINT32_MAX

int dt__sched_termed_reps(dt_cluster *cl) {
  cl->termed_rep.n = 0;
  if (dt__vec_grow((void **)&cl->termed_rep.v, &cl->termed_rep.cap, cl->termed.n + 1, sizeof *cl->termed_rep.v))
    return DT_ENOMEM;
  dt_namemap first = {0};
  int rc = 0;
  for (size_t k = 0; k < cl->termed.n && !rc; k++) {
    const rt_spec *s = &cl->specs[cl->termed.v[k]];
    uint32_t sh = s->shape, rep = NO_REP;
    if ((sh & 1) && has_term_shape(s->src)) { /* plan_shape's, from the term signature */
      bool added;
      int32_t *at = dt__namemap_put(&first, (const char *)&sh, sizeof sh, (int32_t)k, &added);
      if (!at)
        rc = DT_ENOMEM;
      else
        rep = (uint32_t)*at;
    }
    cl->termed_rep.v[cl->termed_rep.n++] = rep;
  }
  dt__namemap_free(&first);
  return rc;
}

/* Create every group any pod refers to, so each spec's selected-by list is
** complete. Only the pods with topology terms, termed[0..n), are visited:
** the others' tgroup stays NULL. */
static int build_groups(dt_plan *p, const uint32_t *termed, uint32_t n) {
  /* an overlay: the first pod present of each term shape (p->cl->termed_rep) */
  const rt_spec **first = p->ov && n ? A(p, n * sizeof *first) : NULL;
  if (p->ov && n && !first) return DT_ENOMEM;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t i = termed[k];
    rt_spec *s = &p->specs[i];
    const dt_podspec *d = s->src;
    s->tgroup = NULL; /* an overlay's specs are the cluster's: the last plan's groups mean nothing here */
    if (spec_absent(p, i)) continue;
    const rt_spec *f = NULL, **rep = NULL;
    if (first) {
      uint32_t r = p->cl->termed_rep.v[k];
      rep = r != NO_REP ? &first[r] : NULL;
      f = rep ? *rep : NULL;
    } else if (term_shaped(p, s) && s->shape < p->shape_spec.n) {
      f = p->shape_spec.v[s->shape];
    }
    if (f && f != s && f->tgroup && shared_groups(f)) { /* the first pod of its shape found them */
      s->tgroup = f->tgroup;
      continue;
    }
    if (rep && !*rep) *rep = s;
    size_t nt = d->nspread + d->naff + d->npaff + d->nanti + d->npanti, at = 0;
    int32_t *tg = nt ? A(p, nt * sizeof *tg) : NULL;
    if (nt && !tg) return DT_ENOMEM;
    for (size_t t = 0; t < d->nspread; t++)
      if ((tg[at++] = term_group(p, s, TG_SPREAD, d->spread[t].key, &d->spread[t].sel, NULL, 0,
                                 d->spread[t].match_label_keys, d->spread[t].nmlk, spread_filter(d, t))) == DT_ENOMEM)
        return DT_ENOMEM;
    const dt_podterm *lists[4] = {d->aff, d->paff, d->anti, d->panti};
    size_t ns[4] = {d->naff, d->npaff, d->nanti, d->npanti};
    for (int l = 0; l < 4; l++)
      for (size_t t = 0; t < ns[l]; t++) {
        char *const *tns;
        size_t tnns;
        if (dt__term_ns(p, s, &lists[l][t], &tns, &tnns) ||
            (tg[at++] = term_group(p, s, l < 2 ? TG_AFF : TG_ANTI, lists[l][t].key, &lists[l][t].sel, tns, tnns, NULL,
                                   0, 0)) == DT_ENOMEM)
          return DT_ENOMEM;
      }
    s->tgroup = tg;
  }
  if (p->ov && !p->cl->termed.n) return 0; /* no pod has terms: no group, now or later, and every nsel stays 0 */
  return dt__topo_select(p);
}

static bool spec_selected_by(const rt_spec *s, uint32_t g) {
  for (uint32_t i = 0; i < s->nsel; i++)
    if (s->sel[i] == g) return true;
  return false;
}

/* The signature of a class: what pods must agree on to share it. */
static void class_sig(const dt_plan *p, const rt_spec *s, const rt_relax *rx, const dt_reqs *reqs, const rt_tc *tcs,
                      uint32_t ntc, dt_buf *sig) {
  const dt_podspec *d = s->src;
  dt__sig_i64(sig, rx->tol_pref);
  dt__buf_putn(sig, (const char *)s->req, p->nres * sizeof *s->req);
  dt__sig_u32(sig, reqs->n);
  for (uint32_t k = 0; k < reqs->n; k++) dt__req_sig(&reqs->r[k], sig);
  dt__sig_u32(sig, (uint32_t)d->ntol);
  for (size_t k = 0; k < d->ntol; k++) {
    dt__sig_str(sig, d->tol[k].key ? d->tol[k].key : "");
    dt__sig_str(sig, d->tol[k].op);
    dt__sig_str(sig, d->tol[k].value);
    dt__sig_str(sig, d->tol[k].effect ? d->tol[k].effect : "");
  }
  dt__sig_u32(sig, ntc);
  for (uint32_t k = 0; k < ntc; k++) {
    const rt_tc *t = &tcs[k];
    dt__sig_u32(sig, t->group);
    dt__sig_u32(sig, t->kind);
    dt__sig_i64(sig, t->self);
    dt__sig_i64(sig, t->owner);
    dt__sig_i64(sig, t->max_skew);
    dt__sig_i64(sig, t->min_domains);
    dt__sig_i64(sig, t->dflt);
  }
  dt__sig_u32(sig, s->nsel);
  if (s->nsel) dt__buf_putn(sig, (const char *)s->sel, s->nsel * sizeof *s->sel);
  dt__sig_u32(sig, s->nports);
  for (uint32_t k = 0; k < s->nports; k++) {
    dt__sig_i64(sig, s->ports[k].port);
    dt__sig_u32(sig, s->ports[k].proto);
    dt__sig_u32(sig, s->ports[k].ip);
  }
  if (s->ncsi) { /* its volumes count against a node's limits: pods of other volumes are other classes */
    dt__sig_u32(sig, s->ncsi);
    dt__buf_putn(sig, (const char *)s->csi, s->ncsi * sizeof *s->csi);
  }
}

/*
** The class of a spec under a relaxation state: its requirements, its
** topology constraints and its tolerations, interned by signature so pods
** with the same constraints share failure caches. Returns the class index
** or a negative error.
*/
static int class_make(dt_plan *p, uint32_t si, const rt_ordvol *ov, const rt_relax *rx);
static int class_topo(dt_plan *p, uint32_t si, const rt_relax *rx, rt_tc *tcs, const dt_reqs *reqs_in,
                      const rt_ordvol *ov);

/* What an unrelaxed pod of a shape has its class by (its first bytes up to
** the plan's resources). */
typedef struct class_key {
  uint32_t shape, pad;
  int64_t req[DT_RES_MAX];
} class_key;

int dt__sched_class_for(dt_plan *p, uint32_t si, int64_t ordinal, const rt_relax *rx) {
  rt_spec *s = &p->specs[si];
  const rt_ordvol *ov = s->nord ? spec_ord(s, ordinal) : NULL; /* a replica with claims of its own */
  if (ov) return class_make(p, si, ov, rx);
  bool plain = !rx->term && !rx->paff && !rx->panti && !rx->pref && !rx->anyway && !rx->tol_pref;
  if (plain && s->base_class >= 0) return s->base_class;
  /* A pod of a shape (no terms, volumes, ports or preferences, or only
  ** topology terms, which its shape then covers, with the groups that select
  ** it: those follow from its namespace and labels) whose class depends on
  ** nothing else than its shape and requests: one with the same
  ** both found or made its class already, interning all it would intern. */
  class_key key;
  size_t klen = 0;
  if (plain && s->shape && !s->nvol && ((!s->nsel && !s->tgroup) || term_shaped(p, s)) && p->nres <= DT_RES_MAX) {
    memset(&key, 0, sizeof key);
    key.shape = s->shape;
    memcpy(key.req, s->req, p->nres * sizeof *s->req);
    klen = offsetof(class_key, req) + p->nres * sizeof *s->req;
    int32_t memo = dt__namemap_get(&p->class_memo, (const char *)&key, klen, -1);
    if (memo >= 0) return memo;
  }
  int ci = class_make(p, si, NULL, rx);
  if (ci >= 0 && klen) {
    char *k = A(p, klen);
    bool added;
    int32_t *v = k ? dt__namemap_put(&p->class_memo, memcpy(k, &key, klen), klen, -1, &added) : NULL;
    if (!v) return DT_ENOMEM;
    *v = ci;
  }
  return ci;
}

/* The class of spec si's pod relaxed as rx says; ov: a replica's own volume terms. */
static int class_make(dt_plan *p, uint32_t si, const rt_ordvol *ov, const rt_relax *rx) {
  rt_spec *s = &p->specs[si];
  const dt_podspec *d = s->src;
  dt_reqs reqs = {0};
  dt__sched_compile_selector_kvs(p, &d->node_selector, &reqs);
  if (d->vm_arch && !dt__kv_get(d->node_selector.v, d->node_selector.n, DT_L_ARCH)) {
    /* KubeVirt's virt-launcher pod selects the VMI's architecture (the
    ** cluster's default when unset); the VMI's own nodeSelector wins */
    const char *a = *d->vm_arch ? d->vm_arch : p->manifests->vm_default_arch ? p->manifests->vm_default_arch : "amd64";
    dt_kvs one = {1, &(dt_kv){(char *)DT_L_ARCH, (char *)a}};
    dt__sched_compile_selector_kvs(p, &one, &reqs);
  }
  if (d->nterms && dt__sched_compile_mreqs(p, &d->terms[rx->term], &reqs)) return DT_ENOMEM;
  for (uint32_t v = 0, nv = ov ? ov->nvol : s->nvol; v < nv; v++)
    if (dt__sched_compile_mreqs(p, ov ? ov->vol[v] : s->vol[v], &reqs)) return DT_ENOMEM;
  if (rx->pref < d->npref && dt__sched_compile_mreqs(p, &d->pref[s->pref_order[rx->pref]].reqs, &reqs))
    return DT_ENOMEM;
  /* Topology constraints: as many as the pod has (the reader bounds each
  ** kind), on the stack when few. */
  rt_tc few[32], *tcs = few;
  size_t most = d->nspread + d->naff + d->npaff + d->nanti + d->npanti;
  if (most > sizeof few / sizeof *few && !(tcs = dt__malloc(most * sizeof *tcs))) return DT_ENOMEM;
  int rc = class_topo(p, si, rx, tcs, &reqs, ov);
  if (tcs != few) dt__free(tcs);
  return rc;
}

/* The rest of class_make: the topology constraints into tcs (room for all),
** then the class found or made. */
static int class_topo(dt_plan *p, uint32_t si, const rt_relax *rx, rt_tc *tcs, const dt_reqs *reqs_in,
                      const rt_ordvol *ov) {
  rt_spec *s = &p->specs[si];
  const dt_podspec *d = s->src;
  dt_reqs reqs = *reqs_in;
  uint32_t ntc = 0;
  uint32_t anyway_seen = 0;
  for (size_t t = 0; t < d->nspread; t++) {
    if (d->spread[t].anyway && anyway_seen++ < rx->anyway) continue;
    int g = s->tgroup ? s->tgroup[t]
                      : term_group(p, s, TG_SPREAD, d->spread[t].key, &d->spread[t].sel, NULL, 0,
                                   d->spread[t].match_label_keys, d->spread[t].nmlk, spread_filter(d, t));
    if (g == DT_ENOMEM) return g;
    if (g < 0) continue;
    tcs[ntc++] = (rt_tc){(uint32_t)g,
                         TG_SPREAD,
                         spec_selected_by(s, (uint32_t)g),
                         false,
                         d->spread[t].max_skew,
                         d->spread[t].min_domains,
                         d->spread[t].dflt};
  }
  struct {
    const dt_podterm *t;
    size_t n;
    const uint8_t *order;
    uint8_t dropped;
    int kind;
    bool required;
    size_t first; /* its terms' place in s->tgroup */
  } lists[4] = {
      {d->aff, d->naff, NULL, 0, TG_AFF, true, d->nspread},
      {d->paff, d->npaff, s->paff_order, rx->paff, TG_AFF, false, d->nspread + d->naff},
      {d->anti, d->nanti, NULL, 0, TG_ANTI, true, d->nspread + d->naff + d->npaff},
      {d->panti, d->npanti, s->panti_order, rx->panti, TG_ANTI, false, d->nspread + d->naff + d->npaff + d->nanti}};
  for (int l = 0; l < 4; l++)
    for (size_t k = lists[l].dropped; k < lists[l].n; k++) {
      size_t ti = lists[l].order ? lists[l].order[k] : k;
      const dt_podterm *t = &lists[l].t[ti];
      int g;
      if (s->tgroup) {
        g = s->tgroup[lists[l].first + ti];
      } else {
        char *const *tns;
        size_t tnns;
        g = dt__term_ns(p, s, t, &tns, &tnns);
        if (!g) g = term_group(p, s, lists[l].kind, t->key, &t->sel, tns, tnns, NULL, 0, 0);
      }
      if (g == DT_ENOMEM) return g;
      if (g < 0) continue;
      tcs[ntc++] = (rt_tc){(uint32_t)g,
                           (uint8_t)lists[l].kind,
                           spec_selected_by(s, (uint32_t)g),
                           lists[l].required && lists[l].kind == TG_ANTI,
                           0,
                           0,
                           false};
    }
  bool inverse = false;
  for (uint32_t i = 0; i < s->nsel; i++) inverse |= p->groups.v[s->sel[i]].kind == TG_ANTI;
  dt_buf sig = {0};
  class_sig(p, s, rx, &reqs, tcs, ntc, &sig);
  /* a replica's own claims: its own class, which keeps them for its reasons
  ** (requirements that admit nothing are alike, whatever made them) */
  if (ov) dt__buf_printf(&sig, "\x1dord %u %lld", si, (long long)ov->ordinal);
  /* Pods whose requests, requirements, tolerations, topology constraints,
  ** selecting groups and host ports agree share a class, whatever spec
  ** they come from: the class is all the scheduler reads. */
  dt_sym cs = sig.p && !sig.oom ? dt__symn(&p->class_sigs, sig.p, sig.len) : 0;
  dt__free(sig.p);
  if (!cs) return DT_ENOMEM;
  while (p->class_of_sig.n <= cs)
    if (dt__vec_push(&p->class_of_sig, UINT32_MAX)) return DT_ENOMEM;
  if (p->class_of_sig.v[cs] != UINT32_MAX) return (int)p->class_of_sig.v[cs];
  rt_class c;
  memset(&c, 0, sizeof c);
  memcpy(c.req, s->req, sizeof c.req);
  c.reqs = reqs;
  c.spec = d;
  c.spec_idx = si;
  c.ov = ov;
  c.tol_pref = rx->tol_pref;
  c.ntc = ntc;
  c.tc = A(p, (ntc ? ntc : 1) * sizeof *c.tc);
  c.pool_ok = A(p, p->npools ? p->npools : 1);
  if (!c.tc || !c.pool_ok) return DT_ENOMEM;
  memcpy(c.tc, tcs, ntc * sizeof *tcs);
  memset(c.pool_ok, 0xff, p->npools);
  masks(p, &reqs, &c.elig_z, &c.elig_c);
  c.topo = ntc > 0 || inverse;
  p->class_of_sig.v[cs] = (uint32_t)p->classes.n;
  if (dt__vec_push(&p->classes, c)) return DT_ENOMEM;
  return (int)p->classes.n - 1;
}

/*
** How many pods of each workload still need a node: its replicas, less the
** pods in the input that its selector matches in its namespace (a running
** Deployment is not planned again, as its ReplicaSet controller counts),
** and nothing for a ReplicaSet whose owning Deployment is in the input
** (the Deployment counts them once). A Pod's own entry is 1. Arena-owned.
*/
static const dt_podspec *g_ns_specs; /* qsort has no context argument in C11 */
static int ns_cmp(const void *a, const void *b) {
  const dt_podspec *x = &g_ns_specs[*(const uint32_t *)a], *y = &g_ns_specs[*(const uint32_t *)b];
  int c = strcmp(x->ns, y->ns);
  return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

/* Whether bound pod d, on a machine being deleted, is planned again with the
** pending pods: Karpenter provisions for those it would reschedule before
** they are evicted (their node's room no longer theirs). */
static bool replanned_off_deleting(dt_plan *p, const dt_podspec *d) {
  if (p->ov || !d->node_name) return false;
  int32_t n = dt__sched_node_by_name(p, d->node_name);
  return n >= 0 && machine_deleting(&p->nodes[n]) && dt__pod_reschedulable(d) && !dt__pdb_fully_blocks(p->manifests, d);
}

/* The ordinal q writes, when it is one of StatefulSet d's (from its
** ordinal_base below count more), in the form its controller writes it
** (decimal, no sign, no leading zero); -1 for none. */
static int64_t ordinal_in(const dt_podspec *d, const char *q) {
  int64_t k = dt__ordinal_text(q);
  return k >= d->ordinal_base && k - d->ordinal_base < d->count ? k : -1;
}

/* The ordinal of StatefulSet replica `name` (its pod's name, <d>-<ordinal>), -1 none. */
static int64_t sts_ordinal(const dt_podspec *d, const char *name) {
  size_t bl = strlen(d->name);
  if (strncmp(name, d->name, bl) || name[bl] != '-') return -1;
  return ordinal_in(d, name + bl + 1);
}

static int i64_cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The ordinals of StatefulSet d's replicas that have no pod, given the
** sorted ordinals of those that have (duplicates allowed), into the arena. */
static const int64_t *sts_missing(dt_plan *p, const dt_podspec *d, const int64_t *have, size_t nhave, int64_t nwant) {
  int64_t *out = A(p, (size_t)(nwant ? nwant : 1) * sizeof *out);
  if (!out) return NULL;
  size_t h = 0;
  int64_t n = 0;
  for (int64_t k = d->ordinal_base; k < d->ordinal_base + d->count && n < nwant; k++) {
    while (h < nhave && have[h] < k) h++;
    if (h < nhave && have[h] == k) continue;
    out[n++] = k;
  }
  return out;
}

static int64_t *replicas_wanted(dt_plan *p, const int64_t ***missing) {
  const dt_manifests *m = p->manifests;
  int64_t *want = A(p, (p->nspecs ? p->nspecs : 1) * sizeof *want);
  *missing = NULL;
  if (!want) return NULL;
  DT_VEC(int64_t) ords = {0}; /* a StatefulSet's replicas that have a pod */
  bool lost = false;
  dt_symtab owners = {0}; /* "Deployment/ns/name" of the workloads in the input */
  uint32_t *byns = NULL;
  size_t nplain = 0;
  /* an overlay visits only the workloads: every other spec wants its count */
  uint32_t nvisit = p->ov ? (uint32_t)p->cl->owned.n : p->nspecs;
  for (uint32_t k = 0; k < nvisit; k++) {
    uint32_t si = p->ov ? p->cl->owned.v[k] : k;
    const dt_podspec *d = &m->pods.v[si];
    want[si] = spec_absent(p, si) ? 0 : d->count;
    if (spec_absent(p, si)) continue;
    char k[800];
    if (d->owner && !strncmp(d->owner, "Deployment/", 11)) {
      snprintf(k, sizeof k, "Deployment/%s/%s", d->ns, d->name);
      dt__sym(&owners, k);
    }
  }
  for (uint32_t k = 0; k < nvisit; k++) {
    uint32_t si = p->ov ? p->cl->owned.v[k] : k;
    const dt_podspec *d = &m->pods.v[si];
    if (!d->owner || d->buffer || spec_absent(p, si)) continue; /* a buffer's chunks are all virtual */
    char k[800];
    if (d->parent) {
      snprintf(k, sizeof k, "Deployment/%s/%s", d->ns, d->parent + 11);
      if (dt__sym_find(&owners, k)) {
        want[si] = 0;
        continue;
      }
    }
    bool sts = !strncmp(d->owner, "StatefulSet/", 12);
    if (!d->sel.present && !sts) continue;
    if (!byns) { /* the Pods, sorted by namespace, built once for the first selector */
      byns = dt__malloc((p->nspecs ? p->nspecs : 1) * sizeof *byns);
      if (!byns) {
        owners.oom = 1;
        break;
      }
      for (uint32_t q = 0; q < p->nspecs; q++)
        if (!m->pods.v[q].owner && !spec_absent(p, q)) byns[nplain++] = q;
      g_ns_specs = m->pods.v;
      qsort(byns, nplain, sizeof *byns, ns_cmp);
    }
    size_t lo = 0, hi = nplain; /* the first Pod of d's namespace */
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (strcmp(m->pods.v[byns[mid]].ns, d->ns) < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
    int64_t have = 0;
    /* a Deployment's pods are its ReplicaSets', whose selectors add the
    ** pod-template-hash: a bare Pod that carries the Deployment's labels (a
    ** chart's test Pod) is none of its replicas */
    bool deploy = !strncmp(d->owner, "Deployment/", 11);
    ords.n = 0;
    for (size_t q = lo; q < nplain && have < d->count && !strcmp(m->pods.v[byns[q]].ns, d->ns); q++) {
      const dt_podspec *o = &m->pods.v[byns[q]];
      if (deploy && !o->rs && !dt__kv_get(o->labels.v, o->labels.n, "pod-template-hash")) continue;
      /* A StatefulSet's replicas are its ordinals' names, whatever their
      ** labels: a pod of that name is one the controller cannot make again
      ** (and one of another name is none of its replicas). Being deleted,
      ** it is made again once gone, unless it is planned again already off a
      ** machine being deleted. */
      int64_t k = sts ? sts_ordinal(d, o->name) : 0;
      if (k < 0 || (o->terminating && !(sts && replanned_off_deleting(p, o)))) continue;
      if (!sts && d->sel.present && !dt__selector_match(&d->sel, o->labels.v, o->labels.n)) continue;
      if (sts && dt__vec_push(&ords, k)) lost = true;
      have++;
    }
    want[si] = d->count - have;
    if (sts && ords.n && !lost) { /* the replicas made are the ordinals without a pod */
      qsort(ords.v, ords.n, sizeof *ords.v, i64_cmp);
      size_t u = 0; /* two pods of one name (a listing's and a file's) are one replica */
      for (size_t q = 0; q < ords.n; q++)
        if (!u || ords.v[u - 1] != ords.v[q]) ords.v[u++] = ords.v[q];
      want[si] = d->count - (int64_t)u;
      if (!*missing) *missing = A(p, (p->nspecs ? p->nspecs : 1) * sizeof **missing); /* zeroed: NULL each */
      if (!*missing || !((*missing)[si] = sts_missing(p, d, ords.v, u, want[si]))) lost = true;
    }
  }
  bool oom = owners.oom || lost;
  dt__symtab_free(&owners);
  dt__free(byns);
  dt__free(ords.v);
  return oom ? NULL : want;
}

/*
** Why a pending pod's claim keeps it from being planned, as Karpenter's
** ValidatePersistentVolumeClaims (and kube-scheduler's VolumeBinding before
** it) refuses it; NULL when nothing is wrong. pvc NULL: the claim is not in
** an input that gives claims of its namespace. A volume or class that is
** not in the input counts only when the input holds objects of that kind,
** have[0] PersistentVolumes and have[1] StorageClasses (a dump of pods
** alone says nothing of their volumes).
*/
static const char *claim_invalid(dt_plan *p, const dt_podspec *d, const char *name, const dt_topo_obj *pvc,
                                 const dt_topo_obj *pv, const dt_topo_obj *sc, const char *cls,
                                 const uint32_t have[2]) {
  const char *vol = pvc ? pvc->volume : NULL;
  const char *why; /* the fault; a %s in it is the claim's volume, or its class when it names none */
  if (!pvc)
    why = "is not in the input, which holds PersistentVolumeClaims: Karpenter provisions for the pod once it exists";
  else if (pvc->deleting)
    why = "is being deleted (metadata.deletionTimestamp)";
  else if (pvc->lost)
    why = vol ? "is Lost (status.phase): bound to PersistentVolume %s, which no longer exists"
              : "is Lost (status.phase): bound to a PersistentVolume that no longer exists";
  else if (vol && !pv && have[0])
    why = "names PersistentVolume %s (spec.volumeName), which is not in the input";
  else if (vol && pv && pv->deleting)
    why = "is bound to PersistentVolume %s, which is being deleted";
  else if (vol && !pvc->bind_completed)
    why = "names PersistentVolume %s but has no pv.kubernetes.io/bind-completed annotation: kube-scheduler takes it "
          "as unbound";
  else if (!vol && !cls && (pvc->class_given || have[1]))
    why = pvc->class_given ? "is unbound and its spec.storageClassName is \"\" (no dynamic provisioning)"
                           : "is unbound and names no StorageClass (spec.storageClassName), and the input's "
                             "StorageClasses have no default (storageclass.kubernetes.io/is-default-class)";
  else if (!vol && !cls)
    return NULL; /* the class the API server gave it is not in the input */
  else if (!vol && !sc && have[1])
    why = "is unbound and its StorageClass %s is not in the input";
  else if (!vol && sc && sc->immediate)
    why = "is unbound and its StorageClass %s binds Immediate (volumeBindingMode): the volume is bound before the pod "
          "is placed, not where a new node is";
  else
    return NULL;
  const char *arg = vol ? vol : cls;
  dt_buf b = {0};
  dt__buf_printf(&b, "PersistentVolumeClaim %s/%s ", d->ns, name);
  const char *at = strstr(why, "%s");
  if (at) {
    dt__buf_putn(&b, why, (size_t)(at - why));
    dt__buf_puts(&b, arg);
    dt__buf_puts(&b, at + 2);
  } else {
    dt__buf_puts(&b, why);
  }
  if (b.oom) {
    p->arena.oom = 1;
    dt__free(b.p);
    return NULL;
  }
  const char *r = arena_buf(p, &b);
  if (!r) p->arena.oom = 1;
  return r;
}

/* What volume topology reads of the input: its PVCs, PVs and StorageClasses
** by "KIND:key" (index + 1 in m->topo), claims and DataVolumes by "VOL:ns/name",
** the namespaces it gives claims of by "NS:ns"; how many PVs (have[0]) and
** StorageClasses (have[1]) it holds; its default StorageClass. */
typedef struct vol_ix {
  dt_symtab topo;
  uint32_t have[2];
  const dt_topo_obj *dflt;
  uint32_t *pvc, npvc; /* the PVCs' indices in m->topo, by key ("ns/name"), for a StatefulSet's by prefix */
} vol_ix;

static dt_sym vol_sym(const vol_ix *ix, const char *kind, const char *ns, const char *name) {
  char k[700];
  snprintf(k, sizeof k, "%s:%s%s%s", kind, ns ? ns : "", ns ? "/" : "", name);
  return dt__sym_find(&ix->topo, k);
}

static bool vol_has(const vol_ix *ix, const char *kind, const char *ns, const char *name) {
  return vol_sym(ix, kind, ns, name) != 0;
}

/* A PVC, PV or StorageClass of the input; NULL none. */
static const dt_topo_obj *vol_find(const dt_plan *p, const vol_ix *ix, const char *kind, const char *ns,
                                   const char *name) {
  dt_sym v = vol_sym(ix, kind, ns, name);
  return v ? &p->manifests->topo.v[v - 1] : NULL;
}

/* What one claim brings a pod: a term its node must meet too (NULL none),
** the volume a CSI driver attaches (driver << 32 | claim; 0 none) and why
** Karpenter refuses the pod for it (NULL nothing). */
typedef struct claim_at {
  const dt_mreqs *term;
  uint64_t csi;
  const char *invalid;
} claim_at;

/* Claim `name` of pod d, as the input has it. */
static claim_at claim_topology(dt_plan *p, const vol_ix *ix, const dt_podspec *d, const char *name) {
  claim_at r = {0};
  const dt_topo_obj *pvc = vol_find(p, ix, "PVC", d->ns, name), *pv = NULL, *sc = NULL, *where = NULL, *by = NULL;
  if (pvc && pvc->volume) pv = where = by = vol_find(p, ix, "PV", NULL, pvc->volume);
  /* its class: the one it names, or, naming none, the default the API
  ** server gives it (a class of the input annotated is-default-class) */
  const char *cls = pvc ? pvc->storage_class : NULL;
  if (cls) {
    sc = vol_find(p, ix, "SC", NULL, cls);
  } else if (pvc && !pvc->class_given && ix->dflt) {
    sc = ix->dflt;
    cls = ix->dflt->key;
  }
  /* a claim the input lacks is missing only where the input gives claims of
  ** its namespace (`kubectl get pvc -n a` says nothing of b's), and not
  ** when it holds a DataVolume of its name, which makes it (CDI) */
  if (pvc || (!vol_has(ix, "VOL", d->ns, name) && vol_has(ix, "NS", NULL, d->ns)))
    r.invalid = claim_invalid(p, d, name, pvc, pv, sc, cls, ix->have);
  if (!pvc) return r; /* not in the input: nothing known of where it is */
  /* unbound, or its PV not in the input: the class's driver (kube-scheduler's CSI limits) */
  if (!by && cls) {
    by = sc;
    /* an Immediate class's claim is refused above; any other brings its
    ** allowed topologies (the API server makes an unset mode Immediate) */
    if (!pvc->volume) where = by && !by->immediate ? by : NULL;
  }
  if (where && where->term.n) r.term = &where->term;
  /* the driver that attaches it: the PV's, or the class's provisioner (Karpenter's volumeusage.go) */
  if (by && by->driver) r.csi = (uint64_t)dt__sym(&p->syms, by->driver) << 32 | dt__sym(&p->syms, pvc->key);
  return r;
}

/* A fault of a claim template, as the reason the replicas wait:
** "<Kind> ns/name: volumeClaimTemplate data names ...". */
static const char *vct_fault(dt_plan *p, const dt_podspec *d, const dt_vct *v, const char *fmt, ...) DT_PRINTF(4, 5);
static const char *vct_fault(dt_plan *p, const dt_podspec *d, const dt_vct *v, const char *fmt, ...) {
  const char *slash = d->owner ? strchr(d->owner, '/') : NULL;
  const char *kind = slash ? d->owner : d->replica_of ? "StatefulSet" : "Pod";
  dt_buf b = {0};
  dt__buf_printf(&b, "%.*s %s/%s: %s %s ", slash ? (int)(slash - d->owner) : (int)strlen(kind), kind, d->ns,
                 d->replica_of ? d->replica_of : d->name, v->ephemeral ? "ephemeral volume" : "volumeClaimTemplate",
                 v->name);
  va_list ap;
  va_start(ap, fmt);
  char tail[512]; /* its fault with one name (a class: 253 characters at most), never cut */
  vsnprintf(tail, sizeof tail, fmt, ap);
  va_end(ap);
  dt__buf_puts(&b, tail);
  if (b.oom) {
    dt__free(b.p);
    p->arena.oom = 1;
    return NULL;
  }
  const char *r = arena_buf(p, &b);
  if (!r) p->arena.oom = 1;
  return r;
}

/* The claim a StatefulSet's controller makes from template v for a replica
** whose claim is not there yet: unbound, of the template's class (or the
** default), so where its class allows, as Karpenter takes an unbound claim. */
static claim_at template_topology(dt_plan *p, const vol_ix *ix, const dt_podspec *d, const dt_vct *v) {
  claim_at r = {0};
  const char *cls = v->class_given ? v->cls : ix->dflt ? ix->dflt->key : NULL;
  const dt_topo_obj *sc = cls && *cls ? vol_find(p, ix, "SC", NULL, cls) : NULL;
  if (cls && !*cls)
    r.invalid = vct_fault(p, d, v, "names storageClassName \"\": its claims are unbound, with no dynamic provisioning");
  else if (!cls && ix->have[1])
    r.invalid = vct_fault(p, d, v,
                          "names no StorageClass (spec.storageClassName), and the input's StorageClasses have no "
                          "default (storageclass.kubernetes.io/is-default-class)");
  else if (cls && !sc && ix->have[1])
    r.invalid = vct_fault(p, d, v, "names StorageClass %s, which is not in the input", cls);
  if (!sc) return r;
  /* its volume is made where the class allows: before the pod is placed
  ** when the class binds Immediate (somewhere in those topologies), or where
  ** the pod goes when it waits for the first consumer */
  if (sc->term.n) r.term = &sc->term;
  if (sc->driver) r.csi = (uint64_t)dt__sym(&p->syms, sc->driver) << 32; /* one claim per replica: never shared */
  return r;
}

/* Volume e (0 none) to spec s's, once; a template's (PVC 0) once per claim. */
static void csi_push(rt_spec *s, uint64_t e) {
  for (uint32_t j = 0; j < s->ncsi && (uint32_t)e; j++)
    if (s->csi[j] == e) return;
  if (e) s->csi[s->ncsi++] = e;
}

/* Claim template v of replica <wl>-<k>: its claim if the input holds it,
** else the one made from the template (an ephemeral volume's always is). */
static claim_at replica_claim(dt_plan *p, const vol_ix *ix, const dt_podspec *d, const dt_vct *v, const char *wl,
                              int64_t k) {
  char name[600];
  snprintf(name, sizeof name, "%s-%s-%lld", v->name, wl, (long long)k);
  return !v->ephemeral && vol_find(p, ix, "PVC", d->ns, name) ? claim_topology(p, ix, d, name)
                                                              : template_topology(p, ix, d, v);
}

/*
** Volume topology, as Karpenter's: a pod's PersistentVolumeClaim bound to a
** PersistentVolume brings the volume's required node affinity; one not yet
** bound whose StorageClass waits for the first consumer brings the class's
** allowed topologies. Either is a term the pod's node must also meet (a
** pod whose volume is in us-east-1d is planned in us-east-1d).
** A StatefulSet's replica <name>-<k> has its templates' claims
** <template>-<name>-<k>: those the input holds are read as claims, in
** s->ord for the replicas that have any (the claims a replica scaled away
** keeps bind it to its volume's zone when it comes back); the others are made
** from the template, unbound, of its class.
*/
static int volume_topology(dt_plan *p, const vol_ix *ix, const dt_podspec *d, rt_spec *s) {
  const dt_manifests *m = p->manifests;
  s->invalid = NULL;
  s->nord = 0;
  s->ord = NULL;
  if ((!d->npvcs && !d->nvct) || !m->topo.n) return 0;
  size_t nc = d->npvcs + d->nvct;
  if (!(s->vol = A(p, nc * sizeof *s->vol)) || !(s->csi = A(p, nc * sizeof *s->csi))) return DT_ENOMEM;
  for (size_t i = 0; i < d->npvcs; i++) {
    claim_at c = claim_topology(p, ix, d, d->pvcs[i]);
    if (!s->invalid) s->invalid = c.invalid;
    if (c.term) s->vol[s->nvol++] = c.term;
    csi_push(s, c.csi);
  }
  uint32_t nshared = s->nvol;
  const char *shared_invalid = s->invalid;
  for (size_t i = 0; i < d->nvct; i++) { /* one replica alone: its own claims */
    claim_at c = d->replica_of ? replica_claim(p, ix, d, &d->vct[i], d->replica_of, d->replica_ordinal)
                               : template_topology(p, ix, d, &d->vct[i]);
    if (!s->invalid) s->invalid = c.invalid;
    if (c.term) s->vol[s->nvol++] = c.term;
    csi_push(s, c.csi);
  }
  if (!d->nvct || !ix->npvc || d->replica_of) return p->arena.oom ? DT_ENOMEM : 0;
  /* the replicas whose claims the input holds: each template's claims
  ** <template>-<name>-<ordinal> found by their prefix among the input's,
  ** so the work follows the claims there are, not the replicas (a
  ** replica's pod being there or not is the plan's business, replicas_wanted) */
  DT_VEC(int64_t) ks = {0};
  DT_VEC(rt_ordvol) ord = {0};
  int rc = 0;
  for (size_t i = 0; i < d->nvct && !rc; i++) {
    char pre[800];
    if (d->vct[i].ephemeral) continue; /* a new pod's: never there before it */
    int pl = snprintf(pre, sizeof pre, "%s/%s-%s-", d->ns, d->vct[i].name, d->name);
    if (pl < 0 || (size_t)pl >= sizeof pre) continue;
    uint32_t lo = 0, hi = ix->npvc;
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (strcmp(m->topo.v[ix->pvc[mid]].key, pre) < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
    for (uint32_t q = lo; q < ix->npvc && !rc && !strncmp(m->topo.v[ix->pvc[q]].key, pre, (size_t)pl); q++) {
      int64_t k = ordinal_in(d, m->topo.v[ix->pvc[q]].key + pl);
      if (k >= 0 && dt__vec_push(&ks, k)) rc = DT_ENOMEM;
    }
  }
  if (ks.n > 1) qsort(ks.v, ks.n, sizeof *ks.v, i64_cmp);
  for (size_t j = 0; j < ks.n && !rc; j++) {
    int64_t k = ks.v[j];
    if (j && ks.v[j - 1] == k) continue;
    rt_ordvol o = {k, 0, A(p, nc * sizeof *o.vol), shared_invalid};
    if (!o.vol) {
      rc = DT_ENOMEM;
      break;
    }
    for (uint32_t v = 0; v < nshared; v++) o.vol[o.nvol++] = s->vol[v];
    for (size_t i = 0; i < d->nvct; i++) {
      claim_at c = replica_claim(p, ix, d, &d->vct[i], d->name, k);
      if (!o.invalid) o.invalid = c.invalid;
      if (c.term) o.vol[o.nvol++] = c.term;
    }
    if (dt__vec_push(&ord, o)) rc = DT_ENOMEM;
  }
  dt__free(ks.v);
  if (!rc && ord.n) {
    if ((s->ord = A(p, ord.n * sizeof *s->ord)))
      memcpy(s->ord, ord.v, ord.n * sizeof *s->ord);
    else
      rc = DT_ENOMEM;
    s->nord = (uint32_t)ord.n;
  }
  dt__free(ord.v);
  return rc ? rc : p->arena.oom ? DT_ENOMEM : 0;
}

/* Whether volume e (driver << 32 | PVC) is attached to n already; a
** replica's claim made from a template (PVC 0) is its own, never shared. */
static bool vols_have(const rt_node *n, uint64_t e) {
  for (size_t q = 0; q < n->vols.n && (uint32_t)e; q++)
    if (n->vols.v[q] == e) return true;
  return false;
}

bool dt__sched_vols_fit(const rt_node *n, const rt_spec *s, uint32_t *over) {
  for (uint32_t l = 0; l < n->nvlim; l++) {
    int64_t more = 0;
    for (uint32_t j = 0; j < s->ncsi; j++) {
      if ((dt_sym)(s->csi[j] >> 32) == n->vlim[l].driver) more += !vols_have(n, s->csi[j]);
    }
    if (more && n->vlim[l].used + more > n->vlim[l].limit) {
      if (over) *over = l;
      return false;
    }
  }
  return true;
}

int dt__sched_vols_add(rt_node *n, const rt_spec *s) {
  for (uint32_t j = 0; j < s->ncsi; j++)
    for (uint32_t l = 0; l < n->nvlim; l++) {
      if ((dt_sym)(s->csi[j] >> 32) != n->vlim[l].driver) continue;
      if (vols_have(n, s->csi[j])) break;
      if (dt__vec_push(&n->vols, s->csi[j])) return DT_ENOMEM;
      n->vlim[l].used++;
      break;
    }
  return 0;
}

/* The nodes' CSINode volume limits, with nothing attached yet: the pods
** bound to them and nominated to them attach theirs as they are read. */
static int volume_limits(dt_plan *p) {
  const dt_manifests *m = p->manifests;
  p->any_vlim = false;
  for (uint32_t i = 0; i < p->nnodes; i++) {
    p->nodes[i].nvlim = 0;
    p->nodes[i].vlim = NULL;
    memset(&p->nodes[i].vols, 0, sizeof p->nodes[i].vols);
  }
  for (size_t i = 0; i < m->topo.n; i++) {
    const dt_topo_obj *t = &m->topo.v[i];
    if (strcmp(t->kind, "CSI") || !t->nlim) continue;
    int32_t n = dt__sched_node_by_name(p, t->key);
    if (n < 0 || p->nodes[n].nvlim) continue;
    rt_node *r = &p->nodes[n];
    if (!(r->vlim = A(p, t->nlim * sizeof *r->vlim))) return DT_ENOMEM;
    for (size_t k = 0; k < t->nlim; k++)
      r->vlim[r->nvlim++] = (struct rt_vlim){dt__sym(&p->syms, t->lim_driver[k]), (int32_t)t->lim_count[k], 0};
    p->any_vlim = true;
  }
  return 0;
}

/* The shape of a pod the pod cache did not number (a plan's input, read
** once): its signature numbered in this plan, so that the replicas a
** listing prints one by one compile once; the pod before is compared first,
** as a listing prints replicas one after another. Pods with topology terms
** get a shape of their own signature (term_shape_sig) outside an overlay.
** 0 when it has none, or out of memory (it is then compiled in full). */
static uint32_t plan_shape(dt_plan *p, const dt_podspec *d) {
  bool terms = !p->ov && has_term_shape(d);
  if (!terms && p->shape_last && dt__pod_same_shape(d, p->shape_last)) return p->shape_last_id;
  p->shape_buf.len = 0;
  p->shape_buf.oom = 0;
  bool sig = terms ? (term_shape_sig(d, &p->shape_buf), !p->shape_buf.oom) : dt__pod_shape_sig(d, &p->shape_buf);
  dt_sym s = sig && p->shape_buf.p ? dt__symn(&p->shape_sigs, p->shape_buf.p, p->shape_buf.len) : 0;
  if (!s || s >= UINT32_MAX / 2) return 0;
  if (!terms) { /* dt__pod_same_shape compares with a pod of a plain shape only */
    p->shape_last = d;
    p->shape_last_id = 2 * s + 1;
  }
  return 2 * s + 1;
}

/* One pod spec compiled on its own: requests (with its RuntimeClass's
** overhead), interned labels sorted by key, term orders, host ports.
** *rc_missing tells that its RuntimeClass is not in the input. */
int dt__sched_compile_spec(dt_plan *p, const dt_podspec *d, rt_spec *s, bool *rc_missing, dt_error *err) {
  const dt_manifests *m = p->manifests;
  int rc;
  s->src = d;
  s->base_class = -1;
  s->tgroup = NULL;
  *rc_missing = false;
  if (d->nbase && p->nres >= 4) { /* a kept pod's requests, by index (podcache.c) */
    for (uint8_t k = 0; k < d->nbase; k++) s->req[d->base_k[k]] = d->base_milli[k];
  } else if ((rc = rlist_vec(p, &d->requests, s->req, err))) {
    return rc;
  }
  if (d->runtime_class && !d->has_overhead) {
    bool found = false;
    for (size_t k = 0; k < m->runtime_classes.n && !found; k++)
      if (!strcmp(m->runtime_classes.v[k].name, d->runtime_class)) {
        int64_t o[DT_RES_MAX] = {0};
        if ((rc = rlist_vec(p, &m->runtime_classes.v[k].overhead, o, err))) return rc;
        for (uint32_t r = 0; r < DT_RES_MAX; r++) s->req[r] = dt__qty_add(s->req[r], o[r]);
        found = true;
      }
    *rc_missing = !found;
  }
  /* another pod of the same shape compiled first: every string below is
  ** interned already, so its symbols (and its orders, from the same terms)
  ** are what compiling this one would give */
  s->shape = d->shape && d->shape < UINT32_MAX / 2 ? 2 * d->shape : plan_shape(p, d);
  const rt_spec *f = s->shape && s->shape < p->shape_spec.n ? p->shape_spec.v[s->shape] : NULL;
  if (f) {
    s->ns = f->ns;
    s->nlabels = f->nlabels;
    s->lk = f->lk;
    s->lv = f->lv;
    s->paff_order = f->paff_order;
    s->panti_order = f->panti_order;
    s->pref_order = f->pref_order;
    s->nports = 0;
    s->ports = f->ports;
    return 0;
  }
  s->ns = dt__sym(&p->syms, d->ns);
  s->nlabels = (uint32_t)d->labels.n;
  dt_sym *kv = A(p, (d->labels.n ? d->labels.n : 1) * 2 * sizeof *kv);
  s->lk = A(p, (d->labels.n ? d->labels.n : 1) * sizeof *s->lk);
  s->lv = A(p, (d->labels.n ? d->labels.n : 1) * sizeof *s->lv);
  if (!kv || !s->lk || !s->lv) return DT_ENOMEM;
  for (size_t k = 0; k < d->labels.n; k++) {
    kv[2 * k] = dt__sym(&p->syms, d->labels.v[k].key);
    kv[2 * k + 1] = dt__sym(&p->syms, d->labels.v[k].val);
  }
  qsort(kv, d->labels.n, 2 * sizeof *kv, cmp_label);
  for (size_t k = 0; k < d->labels.n; k++) {
    s->lk[k] = kv[2 * k];
    s->lv[k] = kv[2 * k + 1];
  }
  s->paff_order = weight_order(p, d->paff, d->npaff);
  s->panti_order = weight_order(p, d->panti, d->npanti);
  s->pref_order = pref_order(p, d->pref, d->npref);
  s->nports = (uint32_t)d->nports;
  s->ports = dt__sched_compile_ports(p, d);
  if (!s->paff_order || !s->panti_order || !s->pref_order || !s->ports) return DT_ENOMEM;
  if (s->shape) {
    while (p->shape_spec.n <= s->shape)
      if (dt__vec_push(&p->shape_spec, (const rt_spec *)NULL)) return DT_ENOMEM;
    p->shape_spec.v[s->shape] = s;
  }
  return 0;
}

void dt__sched_runtime_class_note(dt_plan *p, const dt_podspec *d) {
  note_in(p, "%s: pod %s/%s: RuntimeClass %s is not in the input; its overhead is not counted", d->file, d->ns, d->name,
          d->runtime_class);
}

static const dt_topo_obj *g_pvc_topo; /* qsort has no context argument in C11 */
static int pvc_key_cmp(const void *a, const void *b) {
  return strcmp(g_pvc_topo[*(const uint32_t *)a].key, g_pvc_topo[*(const uint32_t *)b].key);
}

/* Volume topology of every spec, indexed by m->topo. */
int dt__sched_volume_topologies(dt_plan *p, rt_spec *specs, uint32_t n) {
  const dt_manifests *m = p->manifests;
  int rc = 0;
  vol_ix ix = {0};
  for (size_t i = 0; i < m->topo.n && !ix.topo.oom; i++) {
    const dt_topo_obj *t = &m->topo.v[i];
    char k[700];
    snprintf(k, sizeof k, "%s:%s", t->kind, t->key);
    dt__sym(&ix.topo, k); /* kinds and names are unique (duplicates are refused), so object i is symbol i + 1 */
    ix.have[0] += !strcmp(t->kind, "PV");
    ix.have[1] += !strcmp(t->kind, "SC");
    if (!ix.dflt && !strcmp(t->kind, "SC") && t->is_default) ix.dflt = t; /* the first of the input's so annotated */
  }
  for (size_t i = 0; i < m->volumes.n && !ix.topo.oom; i++) { /* claims and DataVolumes, after the objects */
    char k[700];
    snprintf(k, sizeof k, "VOL:%s", m->volumes.v[i]);
    dt__sym(&ix.topo, k);
  }
  for (size_t i = 0; i < m->topo.n && !ix.topo.oom; i++) { /* the namespaces the input gives claims of */
    const char *key = m->topo.v[i].key, *slash = strchr(key, '/');
    char k[700];
    if (strcmp(m->topo.v[i].kind, "PVC") || !slash) continue;
    snprintf(k, sizeof k, "NS:%.*s", (int)(slash - key), key);
    dt__sym(&ix.topo, k);
  }
  bool sts = false; /* a StatefulSet with claim templates: its claims are looked up by prefix */
  for (uint32_t si = 0; si < n && !sts; si++) sts = specs[si].src->nvct > 0;
  if (sts && !ix.topo.oom) {
    ix.pvc = dt__malloc((m->topo.n ? m->topo.n : 1) * sizeof *ix.pvc);
    if (!ix.pvc) rc = DT_ENOMEM;
    for (size_t i = 0; ix.pvc && i < m->topo.n; i++)
      if (!strcmp(m->topo.v[i].kind, "PVC")) ix.pvc[ix.npvc++] = (uint32_t)i;
    g_pvc_topo = m->topo.v;
    if (ix.npvc > 1) qsort(ix.pvc, ix.npvc, sizeof *ix.pvc, pvc_key_cmp);
  }
  for (uint32_t si = 0; si < n && !rc && !ix.topo.oom; si++) rc = volume_topology(p, &ix, specs[si].src, &specs[si]);
  if (ix.topo.oom || p->arena.oom) rc = DT_ENOMEM;
  dt__symtab_free(&ix.topo);
  dt__free(ix.pvc);
  return rc;
}

int dt__sched_cluster_specs(dt_plan *p);
void dt__sched_overlay_use(dt_plan *p, bool *scan, size_t *bound);

/* The plan's own index by name. */
static int claims_ix_names(dt_plan *p, claims_ix *ix) {
  ix->own_built = true;
  for (uint32_t i = 0; i < p->nnodes; i++)
    for (int w = 0; w < 2 && !machine_deleting(&p->nodes[i]); w++) { /* a node's own list, then its claim's */
      const dt_node *n = w ? p->nodes[i].claim : p->nodes[i].src;
      for (size_t k = 0; n && k < n->npods; k++) {
        const char *name = n->pods[k];
        bool added;
        int32_t *at = dt__namemap_put(&ix->own, name, strlen(name), -1, &added);
        if (!at) return DT_ENOMEM;
        *at = (int32_t)i; /* the last node that carries it */
      }
    }
  return 0;
}

static int claims_ix_build(dt_plan *p, claims_ix *ix) {
  memset(ix, 0, sizeof *ix);
  if (p->ov) {
    int rc = dt__sched_claims_ix_cluster(p, ix);
    if (rc || ix->cl) return rc;
  }
  bool ids = true;
  uint32_t top = 0;
  for (uint32_t i = 0; i < p->nnodes; i++)
    for (int w = 0; w < 2; w++) { /* a node's own list, then its claim's */
      const dt_node *n = w ? p->nodes[i].claim : p->nodes[i].src;
      if (!n) continue;
      ix->any |= n->npods > 0;
      ids &= !n->npods || n->pod_ids;
      for (size_t k = 0; ids && k < n->npods; k++)
        if (n->pod_ids[k] > top) top = n->pod_ids[k];
    }
  if (!ix->any) return 0;
  if (!ids) return claims_ix_names(p, ix);
  if (!(ix->own_id = dt__malloc(((size_t)top + 1) * sizeof *ix->own_id))) return DT_ENOMEM;
  memset(ix->own_id, 0xff, ((size_t)top + 1) * sizeof *ix->own_id);
  ix->nid = top + 1;
  for (uint32_t i = 0; i < p->nnodes; i++)
    for (int w = 0; w < 2 && !machine_deleting(&p->nodes[i]); w++) {
      const dt_node *n = w ? p->nodes[i].claim : p->nodes[i].src;
      for (size_t k = 0; n && k < n->npods; k++)
        ix->own_id[n->pod_ids[k]] = (int32_t)i; /* the last node that carries it */
    }
  return 0;
}

/* The plan node that carries pod `name`, -1 none (-2 out of memory). */
static int32_t claims_ix_node(dt_plan *p, claims_ix *ix, const char *name) {
  size_t len = strlen(name);
  if (!ix->cl && !ix->own_built && claims_ix_names(p, ix)) return -2;
  if (!ix->cl) return dt__namemap_get(&ix->own, name, len, -1);
  if (dt__sched_claims_ix_names(p->cl)) return -2;
  const dt_cluster *cl = ix->cl;
  int32_t best = -1;
  for (int32_t e = dt__namemap_get(&cl->claimed, name, len, -1); e >= 0; e = cl->claimed_on.v[e].next) {
    int32_t at = p->ov_at[cl->claimed_on.v[e].node];
    if (at > best) best = at;
  }
  return best;
}

/* Whether pod d is looked up by its name number (an ordinal's name is its own). */
static bool claims_ix_by_id(const claims_ix *ix, const dt_podspec *d, int64_t ordinal) {
  return ordinal < 0 && d->name_id && (ix->own_id || (ix->cl && !ix->cl->claimed_noid));
}

/* The plan node that carries the pod whose name has number id, -1 none. */
static int32_t claims_ix_id(const dt_plan *p, const claims_ix *ix, uint32_t id) {
  if (ix->own_id) return id < ix->nid ? ix->own_id[id] : -1;
  const dt_cluster *cl = ix->cl;
  int32_t best = -1;
  for (int32_t e = id < cl->claimed_id.n ? cl->claimed_id.v[id] : -1; e >= 0; e = cl->claimed_id_on.v[e].next) {
    int32_t at = p->ov_at[cl->claimed_id_on.v[e].node];
    if (at > best) best = at;
  }
  return best;
}

/* Whether pod d (spec s), one pod and no workload's, is looked up by number
** and, carried by a claim, would only add its requests to that node: no
** host ports, no topology terms, and no topology group selects it, so the
** class it would be given is read by nothing (dt__topo_record records
** nothing for it). */
static bool claimed_plainly(const dt_plan *p, const claims_ix *ix, const dt_podspec *d, const rt_spec *s) {
  return !d->owner && claims_ix_by_id(ix, d, -1) && !s->nports && !s->nsel && !d->nspread && !d->naff && !d->npaff &&
         !d->nanti && !d->npanti && !p->groups.n;
}

static void claims_ix_free(claims_ix *ix) {
  dt__namemap_free(&ix->own);
  dt__free(ix->own_id);
}

int dt__sched_compile_pods(dt_plan *p, dt_error *err) {
  const dt_manifests *m = p->manifests;
  int rc = 0;
  uint32_t *termed, ntermed = 0; /* the pods with topology terms */
  if (p->ov) {
    if ((rc = dt__sched_cluster_specs(p))) return rc;
    termed = p->cl->termed.v;
    ntermed = (uint32_t)p->cl->termed.n;
  } else {
    p->nspecs = (uint32_t)m->pods.n;
    p->specs = A(p, (m->pods.n ? m->pods.n : 1) * sizeof *p->specs);
    termed = A_RAW(p, (m->pods.n ? m->pods.n : 1) * sizeof *termed);
    if (!p->specs || !termed) return DT_ENOMEM;
    for (uint32_t si = 0; si < p->nspecs; si++) p->specs[si].src = &m->pods.v[si];
    if ((rc = dt__sched_volume_topologies(p, p->specs, p->nspecs))) return rc;
    for (uint32_t si = 0; si < p->nspecs; si++) {
      const dt_podspec *d = &m->pods.v[si];
      bool missing;
      if ((rc = dt__sched_compile_spec(p, d, &p->specs[si], &missing, err))) return rc;
      if (missing) dt__sched_runtime_class_note(p, d);
      if (d->nspread || d->naff || d->npaff || d->nanti || d->npanti) termed[ntermed++] = si;
    }
  }
  if ((rc = build_groups(p, termed, ntermed))) return rc;

  const int64_t **missing; /* per StatefulSet some of whose replicas have pods: the ordinals of those that have not */
  int64_t *want = replicas_wanted(p, &missing);
  if (!want) return DT_ENOMEM;

  /* Pods an in-flight claim already carries (dovetail.dev/pods). */
  claims_ix claimed;
  if ((rc = claims_ix_build(p, &claimed))) {
    claims_ix_free(&claimed);
    return rc;
  }
  /* An overlay's nodes take their bound pods' use from the per-name sums;
  ** the pods themselves are visited only when something else needs them. */
  bool scan = true;
  if ((rc = volume_limits(p))) {
    claims_ix_free(&claimed);
    return rc;
  }
  if (p->ov) dt__sched_overlay_use(p, &scan, &p->bound_already);
  DT_VEC(rt_pod) pods = {0};
  int64_t(*ds_bound)[DT_RES_MAX] = NULL; /* per node: its bound DaemonSet pods' requests */
  /* without a scan an overlay visits only its pending pods: those of its list */
  const uint32_t *visit = p->ov && !scan ? p->ov->moved : NULL;
  uint32_t nvisit = visit ? p->ov->nmoved : p->nspecs;
  size_t most = 0; /* the pods below at most: the vector is sized once, not doubled and copied */
  for (uint32_t k = 0; k < nvisit; k++) {
    uint32_t si = visit ? visit[k] : k;
    if (p->ov ? p->ov->pod[si] == DT_OV_PENDING : !m->pods.v[si].node_name)
      most += (size_t)(p->ov && !m->pods.v[si].owner ? m->pods.v[si].count : want[si]);
  }
  if (most && dt__vec_grow((void **)&pods.v, &pods.cap, most, sizeof *pods.v)) rc = DT_ENOMEM;
  for (uint32_t k = 0; k < nvisit && !rc; k++) {
    uint32_t si = visit ? visit[k] : k;
    if (p->ov && p->ov->pod[si] != DT_OV_PENDING && (!scan || p->ov->pod[si] == DT_OV_ABSENT)) continue;
    const dt_podspec *d = &m->pods.v[si];
    rt_spec *s = &p->specs[si];
    int32_t n = -1;
    if (p->ov ? p->ov->pod[si] == DT_OV_BOUND : d->node_name != NULL)
      n = p->ov ? dt__sched_node_by_sym(p, p->cl->pod_node[si]) : dt__sched_node_by_name(p, d->node_name);
    /* Karpenter provisions for the pods of nodes being deleted with the
    ** pending ones, before they are evicted: those it would reschedule are
    ** planned again, their node's room no longer theirs. */
    if (n >= 0 && replanned_off_deleting(p, d)) {
      p->from_deleting += (size_t)d->count;
    } else if (p->ov ? p->ov->pod[si] == DT_OV_BOUND : d->node_name != NULL) {
      if (n < 0) {
        note(p, "%s: pod %s/%s is bound to node %s, which is not in the input; ignored", d->file, d->ns, d->name,
             d->node_name);
      } else {
        rt_node *nd = &p->nodes[n];
        if (!p->ov)
          for (uint32_t r = 0; r < DT_RES_MAX; r++)
            nd->used[r] = dt__qty_add(nd->used[r], dt__qty_mul(s->req[r], d->count));
        if (!p->ov && d->daemon && nd->ds_want) {
          if (!ds_bound && !(ds_bound = dt__calloc(p->nnodes, sizeof *ds_bound))) rc = DT_ENOMEM;
          for (uint32_t r = 0; ds_bound && r < DT_RES_MAX; r++)
            ds_bound[n][r] = dt__qty_add(ds_bound[n][r], dt__qty_mul(s->req[r], d->count));
        }
        for (uint32_t k = 0; k < s->nports && !rc; k++)
          if (dt__vec_push(&nd->ports, s->ports[k])) rc = DT_ENOMEM;
        if (!rc && nd->nvlim && s->ncsi) rc = dt__sched_vols_add(nd, s); /* finished pods are not read */
        if (!rc) rc = dt__topo_record(p, si, NULL, (uint32_t)n, node_zmask(nd), node_cmask(nd), (int32_t)d->count, -1);
      }
      if (!p->ov) p->bound_already += (size_t)d->count;
      continue;
    }
    if (!p->ov && claimed.any && want[si] == 1 && claimed_plainly(p, &claimed, d, s)) {
      int32_t cn = claims_ix_id(p, &claimed, d->name_id);
      if (cn >= 0) { /* what the loop below does for it, less the class nothing reads */
        rt_node *nd = &p->nodes[cn];
        for (uint32_t r = 0; r < DT_RES_MAX; r++) nd->used[r] = dt__qty_add(nd->used[r], s->req[r]);
        p->bound_already++;
        continue;
      }
    }
    rt_relax none = {0};
    s->base_class = -1; /* an overlay's specs are the cluster's: the last plan's class means nothing here */
    int ci = dt__sched_class_for(p, si, -1, &none);
    if (ci < 0) {
      rc = ci;
      break;
    }
    s->base_class = ci;
    int64_t nwant = p->ov && !d->owner ? d->count : want[si]; /* an overlay's want holds only its workloads */
    /* a StatefulSet's replicas are its ordinals (from spec.ordinals.start) that have no pod */
    const int64_t *ords = missing ? missing[si] : NULL;
    for (int64_t o = 0; o < nwant; o++) {
      int64_t ordinal = !d->owner ? -1 : ords ? ords[o] : d->ordinal_base + o;
      rt_pod pod = {(uint32_t)ci, si, ordinal, d->seq};
      if (s->nord && spec_ord(s, ordinal)) { /* claims of its own: a class of its own */
        int oc = dt__sched_class_for(p, si, ordinal, &none);
        if (oc < 0) {
          rc = oc;
          break;
        }
        pod.cls = (uint32_t)oc;
      }
      if (claimed.any) {
        int32_t cn;
        if (claims_ix_by_id(&claimed, d, pod.ordinal)) { /* by number: the same name, the same nodes */
          cn = claims_ix_id(p, &claimed, d->name_id);
        } else {
          char name[600];
          dt__pod_name(p, &pod, name, sizeof name);
          cn = claims_ix_node(p, &claimed, name);
          if (cn == -2) {
            rc = DT_ENOMEM;
            break;
          }
        }
        if (cn >= 0) {
          rt_node *nd = &p->nodes[cn];
          for (uint32_t r = 0; r < DT_RES_MAX; r++) nd->used[r] = dt__qty_add(nd->used[r], s->req[r]);
          for (uint32_t k = 0; k < s->nports && !rc; k++)
            if (dt__vec_push(&nd->ports, s->ports[k])) rc = DT_ENOMEM;
          if (!rc && nd->nvlim && s->ncsi) rc = dt__sched_vols_add(nd, s);
          if (!rc)
            rc =
                dt__topo_record(p, si, &p->classes.v[ci], (uint32_t)cn, node_zmask(nd), node_cmask(nd), 1, pod.ordinal);
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
  claims_ix_free(&claimed);
  if (p->from_deleting)
    note(p,
         "%zu pod%s on nodes being deleted planned again: Karpenter provisions for them with the pending pods, before "
         "they are evicted",
         p->from_deleting, p->from_deleting == 1 ? "" : "s");
  /* the room DaemonSet pods not bound yet will take (an overlay's comes with its use) */
  for (uint32_t n = 0; !rc && !p->ov && n < p->nnodes; n++)
    dt__sched_ds_reserve(&p->nodes[n], ds_bound ? ds_bound[n] : NULL);
  dt__free(ds_bound);
  if (rc) {
    dt__free(pods.v);
    return rc;
  }
  p->npods = (uint32_t)pods.n;
  p->pods = A_RAW(p, (pods.n ? pods.n : 1) * sizeof *p->pods); /* every one written by dt__sched_queue_order */
  rc = p->pods ? dt__sched_queue_order(p->specs, pods.v, pods.n, p->pods) : DT_ENOMEM;
  dt__free(pods.v);
  return rc;
}
