/*
** model.c: small containers shared by the catalog and manifest readers:
** resource lists (name -> milli-value) and label maps.
*/
#include "model.h"

#include <stdlib.h>
#include <string.h>

/* Capacity types, as Karpenter's karpenter.sh/capacity-type names them. */
const char *const dt__ct_names[DT_CT_N] = {"reserved", "spot", "on-demand"};

int dt__ct_parse(const char *s) {
  for (int i = 0; i < DT_CT_N; i++)
    if (strcmp(s, dt__ct_names[i]) == 0) return i;
  return -1;
}

int dt__rlist_add(dt_rlist *r, const char *name, int64_t milli, dt_rlist_mode mode) {
  for (size_t i = 0; i < r->n; i++)
    if (strcmp(r->v[i].name, name) == 0) {
      if (mode == DT_RL_SET)
        r->v[i].milli = milli;
      else if (mode == DT_RL_SUM) /* saturating: the total is then refused as absurd */
        r->v[i].milli = milli > 0 && r->v[i].milli > INT64_MAX - milli ? INT64_MAX : r->v[i].milli + milli;
      else if (milli > r->v[i].milli)
        r->v[i].milli = milli;
      return 0;
    }
  dt_rq *nv = dt__realloc(r->v, (r->n + 1) * sizeof *nv);
  if (!nv) return DT_ENOMEM;
  r->v = nv;
  r->v[r->n].name = dt__strdup(name);
  if (!r->v[r->n].name) return DT_ENOMEM;
  r->v[r->n].milli = milli;
  r->n++;
  return 0;
}

int64_t dt__rlist_get(const dt_rlist *r, const char *name) {
  for (size_t i = 0; i < r->n; i++)
    if (strcmp(r->v[i].name, name) == 0) return r->v[i].milli;
  return 0;
}

void dt__rlist_free(dt_rlist *r) {
  for (size_t i = 0; i < r->n; i++) dt__free(r->v[i].name);
  dt__free(r->v);
  memset(r, 0, sizeof *r);
}

void dt__kvs_free(dt_kvs *k) {
  for (size_t i = 0; i < k->n; i++) {
    dt__free(k->v[i].key);
    dt__free(k->v[i].val);
  }
  dt__free(k->v);
  memset(k, 0, sizeof *k);
}

/* ------------------------------------------------ label selectors */

const char *dt__kv_get(const dt_kv *v, size_t n, const char *key) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(v[i].key, key)) return v[i].val;
  return NULL;
}

bool dt__mreq_match(const dt_mreq *q, const dt_kv *kv, size_t n) {
  const char *val = dt__kv_get(kv, n, q->key);
  bool in = false;
  for (size_t k = 0; val && k < q->n; k++) in |= !strcmp(q->vals[k], val);
  switch (q->op) {
  case DT_OP_IN: return in;
  case DT_OP_NOTIN: return !in;
  case DT_OP_EXISTS: return val != NULL;
  case DT_OP_DOESNOTEXIST: return val == NULL;
  default: {
    if (!val || !q->n) return false;
    char *e1, *e2;
    long long a = strtoll(val, &e1, 10), b = strtoll(q->vals[0], &e2, 10);
    if (*e1 || *e2) return false;
    if (q->op == DT_OP_GT) return a > b;
    if (q->op == DT_OP_LT) return a < b;
    if (q->op == DT_OP_GTE) return a >= b;
    return a <= b;
  }
  }
}

bool dt__selector_match(const dt_selector *s, const dt_kv *kv, size_t n) {
  if (!s->present) return false;
  for (size_t i = 0; i < s->expr.n; i++)
    if (!dt__mreq_match(&s->expr.v[i], kv, n)) return false;
  return true;
}

bool dt__node_disrupted(const dt_node *n) {
  for (size_t t = 0; n && t < n->ntaints; t++)
    if (!strcmp(n->taints[t].key, "karpenter.sh/disrupted")) return true;
  return false;
}

int dt__claims_paired(const dt_manifests *m, int32_t *out) {
  dt_symtab names = {0}, pids = {0}; /* Node names and provider IDs -> index + 1 */
  DT_VEC(int32_t) by_name = {0}, by_pid = {0};
  int rc = 0;
  for (size_t i = 0; i < m->nodes.n && !rc; i++) {
    const dt_node *n = &m->nodes.v[i];
    out[i] = -1;
    if (n->claim_name) continue;
    dt_sym s = dt__sym(&names, n->name);
    while (!rc && !names.oom && by_name.n <= s)
      if (dt__vec_push(&by_name, (int32_t)-1)) rc = DT_ENOMEM;
    if (names.oom) rc = DT_ENOMEM;
    if (!rc && by_name.v[s] < 0) by_name.v[s] = (int32_t)i;
    if (!n->provider_id || rc) continue;
    s = dt__sym(&pids, n->provider_id);
    while (!rc && !pids.oom && by_pid.n <= s)
      if (dt__vec_push(&by_pid, (int32_t)-1)) rc = DT_ENOMEM;
    if (pids.oom) rc = DT_ENOMEM;
    if (!rc && by_pid.v[s] < 0) by_pid.v[s] = (int32_t)i;
  }
  for (size_t i = 0; i < m->nodes.n && !rc; i++) {
    const dt_node *n = &m->nodes.v[i];
    if (!n->claim_name) continue;
    dt_sym s = n->node_name ? dt__sym_find(&names, n->node_name) : 0;
    if (s && by_name.v[s] >= 0) {
      out[i] = by_name.v[s];
      continue;
    }
    s = n->provider_id ? dt__sym_find(&pids, n->provider_id) : 0;
    if (s && by_pid.v[s] >= 0) {
      out[i] = by_pid.v[s];
      continue;
    }
    /* A claim that names no node and no machine the Nodes have, and a Node of
    ** its own name, are one machine (a provider that names nodes after their
    ** claims, as KWOK does, or a daemon's claim before it records the Node):
    ** counted apart, the machine was twice its size, and a pass took the empty
    ** twin for underutilized and deleted the full one. Only a Node that says
    ** what it holds (its allocatable or its instance type) stands for the
    ** machine: a bare one would leave it no room at all. */
    s = !n->node_name ? dt__sym_find(&names, n->claim_name) : 0;
    const dt_node *nd = s && by_name.v[s] >= 0 ? &m->nodes.v[by_name.v[s]] : NULL;
    if (nd && (nd->allocatable.n || dt__kv_get(nd->labels.v, nd->labels.n, "node.kubernetes.io/instance-type")))
      out[i] = by_name.v[s];
  }
  dt__symtab_free(&names);
  dt__symtab_free(&pids);
  dt__free(by_name.v);
  dt__free(by_pid.v);
  return rc;
}

bool dt__pdb_fully_blocks(const dt_manifests *m, const dt_podspec *p) {
  for (size_t i = 0; i < m->pdbs.n; i++) {
    const dt_pdb *b = &m->pdbs.v[i];
    bool full = (b->has_max && b->max_unavail == 0) || (b->has_min && b->min_pct && b->min_avail == 100);
    if (full && !strcmp(b->ns, p->ns) && dt__selector_match(&b->sel, p->labels.v, p->labels.n)) return true;
  }
  return false;
}
