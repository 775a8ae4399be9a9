/*
** mf_spread.c: the cluster's default topology spread constraints, as
** Karpenter's --scheduler-config mirrors kube-scheduler's PodTopologySpread
** defaultConstraints (Karpenter's scheduling/defaultconstraints.go).
**
** The configuration is Karpenter's document:
**
**   podTopologySpread:
**     defaultConstraints:
**     - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}
**
** read strictly (an unknown field is an error) and validated as
** kube-scheduler validates its arguments. Each pod that declares no
** topologySpreadConstraints of its own gets these, with the selector
** kube-scheduler deduces for it (helper.DefaultSelector): the selectors of
** the Services of its namespace that select it, merged, and its
** controller's selector (a ReplicaSet's or StatefulSet's) added; a pod for
** which nothing is deduced gets none. A workload's replicas dovetail makes
** take the workload's own selector. The constraints join the pods when the
** input is read whole, before any plan.
*/
#include "reader.h"

#include <stdlib.h>
#include <string.h>

/* A Kubernetes qualified name ([prefix/]name, the name 1-63 of
** [A-Za-z0-9_.-], alphanumeric at both ends; the prefix a DNS subdomain). */
static bool qualified_name(const char *k) {
  const char *slash = strrchr(k, '/'), *n = slash ? slash + 1 : k;
  size_t nl = strlen(n);
  if (!nl || nl > 63 || (slash && (slash == k || slash - k > 253))) return false;
  for (size_t i = 0; i < nl; i++) {
    char c = n[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && ((c != '-' && c != '_' && c != '.') || i == 0 || i == nl - 1)) return false;
  }
  /* the prefix: a DNS subdomain, its labels of [a-z0-9-], alphanumeric at both ends */
  for (const char *c = k, *label = k; slash && c <= slash; c++) {
    bool alnum = (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9');
    if (c == slash || *c == '.') {
      if (c == label || c[-1] == '-') return false;
      label = c + 1;
    } else if (!alnum && (*c != '-' || c == label)) {
      return false;
    }
  }
  return true;
}

static int cfg_bad(dt_error *err, const char *file, const char *field, const char *what) {
  return dt__err(err, DT_EINVAL, "%s: scheduler config: %s: %s", file, field, what);
}

/* Only these keys in object o: the first other one is named in the error. */
static int only_keys(dt_error *err, const char *file, const cJSON *o, const char *path, const char *const *keys) {
  const cJSON *c;
  cJSON_ArrayForEach(c, o) {
    bool known = false;
    for (size_t i = 0; keys[i] && !known; i++) known = !strcmp(c->string, keys[i]);
    if (!known) {
      char f[300], why[200];
      const char *near = mf_nearest(c->string, keys, 2);
      snprintf(f, sizeof f, "%s%s%s", path, *path ? "." : "", c->string);
      snprintf(why, sizeof why, "unknown field%s%s%s", near ? " (did you mean " : "", near ? near : "",
               near ? "?)" : "");
      return cfg_bad(err, file, f, why);
    }
  }
  return 0;
}

/* The constraints of the document, validated; parsed as a pod's are. */
static int read_constraints(const char *file, const cJSON *doc, dt_podspec *out, dt_error *err) {
  static const char *const top[] = {"podTopologySpread", NULL}, *const pts[] = {"defaultConstraints", NULL},
                           *const tsc[] = {"maxSkew",       "topologyKey",        "whenUnsatisfiable",
                                           "minDomains",    "nodeAffinityPolicy", "nodeTaintsPolicy",
                                           "labelSelector", "matchLabelKeys",     NULL};
  if (!cJSON_IsObject(doc)) return cfg_bad(err, file, "(document)", "expected a map with podTopologySpread");
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(doc, "podTopologySpread");
  int rc = only_keys(err, file, doc, "", top);
  if (rc) return rc;
  if (!p || cJSON_IsNull(p)) return 0;
  if (!cJSON_IsObject(p)) return cfg_bad(err, file, "podTopologySpread", "expected a map");
  if ((rc = only_keys(err, file, p, "podTopologySpread", pts))) return rc;
  const cJSON *dc = cJSON_GetObjectItemCaseSensitive(p, "defaultConstraints"), *c;
  if (!dc || cJSON_IsNull(dc)) return 0;
  if (!cJSON_IsArray(dc)) return cfg_bad(err, file, "podTopologySpread.defaultConstraints", "expected a list");
  size_t i = 0;
  cJSON_ArrayForEach(c, dc) {
    char f[200];
    snprintf(f, sizeof f, "podTopologySpread.defaultConstraints[%zu]", i++);
    if (!cJSON_IsObject(c)) return cfg_bad(err, file, f, "expected a map");
    if ((rc = only_keys(err, file, c, f, tsc))) return rc;
    char g[260];
    snprintf(g, sizeof g, "%s.labelSelector", f);
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(c, "labelSelector"),
                *mlk = cJSON_GetObjectItemCaseSensitive(c, "matchLabelKeys"), *ms = mf_get(c, "maxSkew");
    if (ls && !cJSON_IsNull(ls))
      return cfg_bad(err, file, g, "must not be set: the selector is deduced for each pod, as kube-scheduler does");
    snprintf(g, sizeof g, "%s.matchLabelKeys", f);
    if (mlk && !cJSON_IsNull(mlk) && cJSON_GetArraySize(mlk) > 0)
      return cfg_bad(err, file, g, "must not be set: it has no effect on default constraints");
    snprintf(g, sizeof g, "%s.maxSkew", f);
    if (cJSON_IsNumber(ms) && ms->valuedouble > INT32_MAX)
      return cfg_bad(err, file, g, "expected an integer from 1 to 2147483647");
    const char *key = mf_get_str(c, "topologyKey"), *wu = mf_get_str(c, "whenUnsatisfiable");
    snprintf(g, sizeof g, "%s.topologyKey", f);
    if (key && *key && !qualified_name(key)) return cfg_bad(err, file, g, "not a valid label name");
    snprintf(g, sizeof g, "%s.whenUnsatisfiable", f);
    if (!mf_get(c, "whenUnsatisfiable")) return cfg_bad(err, file, g, "missing: DoNotSchedule or ScheduleAnyway");
    if (!wu) return cfg_bad(err, file, g, "expected DoNotSchedule or ScheduleAnyway");
  }
  /* each one as a pod's constraint reads it (maxSkew, key, policies) */
  if (i > DT_MAX_TERMS)
    return cfg_bad(err, file, "podTopologySpread.defaultConstraints",
                   "more than 255 constraints; dovetail takes at most 255");
  mctx x = {NULL, file, "SchedulerConfiguration", "scheduler config", err, 0};
  if (mf_parse_spreads(&x, dc, "podTopologySpread.defaultConstraints", out)) return x.code ? x.code : DT_EINVAL;
  for (size_t a = 0; a < out->nspread; a++)
    for (size_t b = 0; b < a; b++)
      if (!strcmp(out->spread[a].key, out->spread[b].key) && out->spread[a].anyway == out->spread[b].anyway)
        return dt__err(err, DT_EINVAL,
                       "%s: scheduler config: podTopologySpread.defaultConstraints[%zu]: repeats [%zu] (%s, %s), which "
                       "kube-scheduler refuses",
                       file, a, b, out->spread[a].key, out->spread[a].anyway ? "ScheduleAnyway" : "DoNotSchedule");
  return 0;
}

/* key In [val] appended to sel. */
static int sel_append(dt_selector *sel, const char *key, const char *val) {
  dt_mreq *nv = dt__realloc(sel->expr.v, (sel->expr.n + 1) * sizeof *nv);
  if (!nv) return DT_ENOMEM;
  sel->expr.v = nv;
  dt_mreq *q = &sel->expr.v[sel->expr.n];
  memset(q, 0, sizeof *q);
  q->op = DT_OP_IN;
  if (!(q->key = dt__strdup(key)) || !(q->vals = dt__calloc(1, sizeof *q->vals)) || !(q->vals[0] = dt__strdup(val))) {
    dt__free(q->key);
    dt__free(q->vals);
    return DT_ENOMEM;
  }
  q->n = 1;
  sel->expr.n++;
  sel->present = true;
  return 0;
}

/* key In [val] appended to sel, unless it says so already. */
static int sel_add(dt_selector *sel, const char *key, const char *val) {
  for (size_t i = 0; i < sel->expr.n; i++)
    if (sel->expr.v[i].op == DT_OP_IN && sel->expr.v[i].n == 1 && !strcmp(sel->expr.v[i].key, key) &&
        !strcmp(sel->expr.v[i].vals[0], val))
      return 0;
  return sel_append(sel, key, val);
}

static int sel_copy_into(dt_selector *to, const dt_selector *from) {
  for (size_t i = 0; i < from->expr.n; i++) {
    const dt_mreq *r = &from->expr.v[i];
    dt_mreq *nv = dt__realloc(to->expr.v, (to->expr.n + 1) * sizeof *nv);
    if (!nv) return DT_ENOMEM;
    to->expr.v = nv;
    dt_mreq *q = &to->expr.v[to->expr.n];
    memset(q, 0, sizeof *q);
    q->op = r->op;
    if (!(q->key = dt__strdup(r->key)) || !(q->vals = dt__calloc(r->n ? r->n : 1, sizeof *q->vals))) {
      dt__free(q->key);
      return DT_ENOMEM;
    }
    to->expr.n++;
    for (size_t k = 0; k < r->n; k++, q->n++)
      if (!(q->vals[k] = dt__strdup(r->vals[k]))) return DT_ENOMEM;
    to->present = true;
  }
  return 0;
}

/* The workloads of the input by "ns/Kind/name" (those of no replicas too):
** symbol i + 1 is at[i]. */
typedef struct workloads {
  dt_symtab names;
  const dt_podspec **at;
} workloads;

static void workloads_add(workloads *w, const dt_podspec *p) {
  char k[800];
  if (!p->owner) return;
  snprintf(k, sizeof k, "%s/%s", p->ns, p->owner);
  dt_sym s = dt__sym(&w->names, k);
  if (s) w->at[s - 1] = p; /* a name twice (refused by the reader) would keep the last */
}

static int workloads_index(const dt_manifests *m, workloads *w) {
  if (!(w->at = dt__malloc((m->pods.n + m->idle.n + 1) * sizeof *w->at))) return DT_ENOMEM;
  for (size_t i = 0; i < m->pods.n && !w->names.oom; i++) workloads_add(w, &m->pods.v[i]);
  for (size_t i = 0; i < m->idle.n && !w->names.oom; i++) workloads_add(w, &m->idle.v[i]);
  return w->names.oom ? DT_ENOMEM : 0;
}

/* The workload of the input named "Kind/name" in namespace ns. */
static const dt_podspec *workload(const workloads *w, const char *ns, const char *owner) {
  char k[800];
  snprintf(k, sizeof k, "%s/%s", ns, owner);
  dt_sym s = dt__sym_find(&w->names, k);
  return s ? w->at[s - 1] : NULL;
}

/* The Services of the input by one pair of their selectors (the pair the
** fewest others of their namespace share), so that a pod meets only the
** Services one of its labels names, and the ReplicationControllers by name. */
typedef struct svc_index {
  dt_symtab keys;        /* "ns\1key\1value"; "ns\1" an empty selector (every pod); "ns\2ReplicationController/x" */
  uint32_t *head, *tail; /* by key: the first and last Service (index + 1) filed there */
  uint32_t *next;        /* by Service: the next of its key, in input order (index + 1) */
  uint32_t *rc;          /* by key: the ReplicationController (index + 1) */
  DT_VEC(uint32_t) cand; /* a pod's Services, gathered */
  DT_VEC(const dt_kv *) lab; /* the pod's labels by key, for looking up selector pairs */
  dt_buf b;
} svc_index;

/* The key of a selector pair (k NULL: the namespace's every-pod key), or
** of a controller (ctl); NULL when out of memory. */
static const char *svc_key(svc_index *x, const char *ns, const char *k, const char *v, const char *ctl) {
  x->b.len = 0;
  dt__buf_puts(&x->b, ns);
  dt__buf_putc(&x->b, ctl ? '\2' : '\1');
  if (ctl) dt__buf_puts(&x->b, ctl);
  if (k) {
    dt__buf_puts(&x->b, k);
    dt__buf_putc(&x->b, '\1');
    dt__buf_puts(&x->b, v);
  }
  dt__buf_putc(&x->b, 0);
  return x->b.oom ? NULL : x->b.p;
}

static void svc_index_free(svc_index *x) {
  dt__symtab_free(&x->keys);
  dt__free(x->head), dt__free(x->tail), dt__free(x->next), dt__free(x->rc), dt__free(x->cand.v), dt__free(x->lab.v),
      dt__free(x->b.p);
}

static int svc_index_make(const dt_manifests *m, svc_index *x) {
  const char *k;
  for (size_t i = 0; i < m->services.n; i++) { /* every key first */
    const dt_service *v = &m->services.v[i];
    if (!v->has_sel) continue;
    if (v->rc) {
      if (!(k = svc_key(x, v->ns, NULL, NULL, v->rc)) || !dt__sym(&x->keys, k)) return DT_ENOMEM;
      continue;
    }
    if (!v->sel.n && (!(k = svc_key(x, v->ns, NULL, NULL, NULL)) || !dt__sym(&x->keys, k))) return DT_ENOMEM;
    for (size_t p = 0; p < v->sel.n; p++)
      if (!(k = svc_key(x, v->ns, v->sel.v[p].key, v->sel.v[p].val, NULL)) || !dt__sym(&x->keys, k)) return DT_ENOMEM;
  }
  size_t nk = (size_t)x->keys.n + 1;
  uint32_t *cnt = dt__calloc(nk, sizeof *cnt);
  x->head = dt__calloc(nk, sizeof *x->head), x->tail = dt__calloc(nk, sizeof *x->tail);
  x->rc = dt__calloc(nk, sizeof *x->rc), x->next = dt__calloc(m->services.n + 1, sizeof *x->next);
  if (!cnt || !x->head || !x->tail || !x->rc || !x->next) {
    dt__free(cnt);
    return DT_ENOMEM;
  }
  for (size_t i = 0; i < m->services.n; i++) {
    const dt_service *v = &m->services.v[i];
    for (size_t p = 0; v->has_sel && !v->rc && p < v->sel.n; p++)
      if ((k = svc_key(x, v->ns, v->sel.v[p].key, v->sel.v[p].val, NULL))) cnt[dt__sym_find(&x->keys, k)]++;
  }
  for (size_t i = 0; i < m->services.n; i++) {
    const dt_service *v = &m->services.v[i];
    if (!v->has_sel) continue;
    dt_sym at = 0;
    if (v->rc) {
      if ((k = svc_key(x, v->ns, NULL, NULL, v->rc))) x->rc[dt__sym_find(&x->keys, k)] = (uint32_t)i + 1;
      continue;
    }
    if (!v->sel.n && (k = svc_key(x, v->ns, NULL, NULL, NULL))) at = dt__sym_find(&x->keys, k);
    for (size_t p = 0; p < v->sel.n; p++) {
      dt_sym s = (k = svc_key(x, v->ns, v->sel.v[p].key, v->sel.v[p].val, NULL)) ? dt__sym_find(&x->keys, k) : 0;
      if (s && (!at || cnt[s] < cnt[at])) at = s;
    }
    if (!at) continue;
    if (x->tail[at])
      x->next[x->tail[at] - 1] = (uint32_t)i + 1;
    else
      x->head[at] = (uint32_t)i + 1;
    x->tail[at] = (uint32_t)i + 1;
  }
  dt__free(cnt);
  return x->b.oom ? DT_ENOMEM : 0;
}

static int u32_cmp(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static int kvp_cmp(const void *a, const void *b) {
  return strcmp((*(const dt_kv *const *)a)->key, (*(const dt_kv *const *)b)->key);
}

/* The value of label key among the pod's labels by key (x->lab); NULL none. */
static const char *lab_get(const svc_index *x, const char *key) {
  size_t lo = 0, hi = x->lab.n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(x->lab.v[mid]->key, key);
    if (!c) return x->lab.v[mid]->val;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

/* The Services filed under key k that select pod d (its labels in x->lab),
** into x->cand. A pair is looked up by key, not by a scan of the labels:
** Services and pods sharing a selector of 1,000 pairs by a YAML alias
** took seconds for 13 KB. */
static int svc_gather(svc_index *x, const dt_manifests *m, const dt_podspec *d, const char *k) {
  (void)d;
  dt_sym s = k ? dt__sym_find(&x->keys, k) : 0;
  for (uint32_t i = s ? x->head[s] : 0; i; i = x->next[i - 1]) {
    const dt_service *v = &m->services.v[i - 1];
    bool all = true;
    for (size_t p = 0; p < v->sel.n && all; p++) {
      const char *have = lab_get(x, v->sel.v[p].key);
      all = have && !strcmp(have, v->sel.v[p].val);
    }
    if (all && dt__vec_push(&x->cand, i - 1)) return DT_ENOMEM;
  }
  return 0;
}

/* sel's pairs into merged (its keys' positions in ix), a key set twice
** taking the later value. */
static int merge_pairs(dt_kvs *merged, dt_namemap *ix, const dt_kvs *sel) {
  for (size_t k = 0; k < sel->n; k++) {
    const char *key = sel->v[k].key;
    size_t at = (size_t)dt__namemap_get(ix, key, strlen(key), (int32_t)merged->n);
    if (at == merged->n && !dt__namemap_set(ix, key, strlen(key), (int32_t)at)) return DT_ENOMEM;
    if (at == merged->n) {
      dt_kv *nv = dt__realloc(merged->v, (merged->n + 1) * sizeof *nv);
      if (!nv) return DT_ENOMEM;
      merged->v = nv;
      merged->n++;
    } else {
      dt__free(merged->v[at].key);
      dt__free(merged->v[at].val);
    }
    merged->v[at].key = dt__strdup(sel->v[k].key);
    merged->v[at].val = dt__strdup(sel->v[k].val);
    if (!merged->v[at].key || !merged->v[at].val) return DT_ENOMEM;
  }
  return 0;
}

/* The selector kube-scheduler deduces for pod d: the merged selectors of
** its namespace's Services that select it (a key two set: the last one's),
** then its controller's (a ReplicaSet's or StatefulSet's; a workload's
** replicas take the workload's own). Nothing deduced: sel stays absent. */
static int deduce(const dt_manifests *m, const workloads *w, svc_index *x, const dt_podspec *d, dt_selector *sel) {
  dt_kvs merged = {0};
  int rc = 0;
  /* the Services first, in input order, then the pod's ReplicationController,
  ** whose values win (labels.Merge), taken whether or not it selects the pod */
  x->cand.n = 0;
  x->lab.n = 0;
  for (size_t l = 0; l < d->labels.n && !rc; l++)
    if (dt__vec_push(&x->lab, &d->labels.v[l])) rc = DT_ENOMEM;
  if (x->lab.n > 1) qsort(x->lab.v, x->lab.n, sizeof *x->lab.v, kvp_cmp);
  for (size_t l = 0; l < d->labels.n && !rc; l++)
    rc = svc_gather(x, m, d, svc_key(x, d->ns, d->labels.v[l].key, d->labels.v[l].val, NULL));
  if (!rc) rc = svc_gather(x, m, d, svc_key(x, d->ns, NULL, NULL, NULL));
  if (!rc && x->b.oom) rc = DT_ENOMEM;
  if (x->cand.n > 1) qsort(x->cand.v, x->cand.n, sizeof *x->cand.v, u32_cmp);
  dt_namemap ix = {0}; /* merged's keys: the Services' own strings */
  for (size_t j = 0; j < x->cand.n && !rc; j++) rc = merge_pairs(&merged, &ix, &m->services.v[x->cand.v[j]].sel);
  const char *ck = d->controller && !rc ? svc_key(x, d->ns, NULL, NULL, d->controller) : NULL;
  dt_sym s = ck ? dt__sym_find(&x->keys, ck) : 0;
  if (s && x->rc[s]) rc = merge_pairs(&merged, &ix, &m->services.v[x->rc[s] - 1].sel);
  bool fresh = !sel->expr.n; /* merged's keys are distinct: nothing to look for in an empty selector */
  for (size_t k = 0; k < merged.n && !rc; k++)
    rc = fresh ? sel_append(sel, merged.v[k].key, merged.v[k].val) : sel_add(sel, merged.v[k].key, merged.v[k].val);
  dt__namemap_free(&ix);
  dt__kvs_free(&merged);
  const dt_podspec *owner = NULL;
  if (d->owner && (!strncmp(d->owner, "ReplicaSet/", 11) || !strncmp(d->owner, "StatefulSet/", 12) ||
                   !strncmp(d->owner, "Deployment/", 11)))
    owner = d;
  else if (d->controller && (!strncmp(d->controller, "ReplicaSet/", 11) || !strncmp(d->controller, "StatefulSet/", 12)))
    owner = workload(w, d->ns, d->controller);
  if (!rc && owner && owner->sel.present) rc = sel_copy_into(sel, &owner->sel);
  return rc;
}

/* The constraints of c given to pod d, with selector sel. A kept pod's copy
** (borrowed) gets an array of the set's own, the kept one left as it is. */
static int give(dt_podspec *d, const dt_podspec *c, const dt_selector *sel) {
  if (!d->borrowed) dt__free(d->spread); /* topologySpreadConstraints: [] is none of its own, read as an empty list */
  d->nspread = 0;
  if (!(d->spread = dt__calloc(c->nspread, sizeof *d->spread))) return DT_ENOMEM;
  if (d->borrowed) {
    d->spread_own = true; /* the set frees it */
    d->shape = 0;         /* a pod with spreads compiles in full */
  }
  for (size_t i = 0; i < c->nspread; i++) {
    dt_spread *s = &d->spread[d->nspread++];
    *s = c->spread[i];
    s->match_label_keys = NULL;
    s->nmlk = 0;
    s->dflt = true;
    memset(&s->sel, 0, sizeof s->sel);
    if (!(s->key = dt__strdup(c->spread[i].key)) || sel_copy_into(&s->sel, sel)) return DT_ENOMEM;
  }
  return 0;
}

int dt__spread_defaults_read(const char *path, dt_podspec *cfg, dt_error *err) {
  dt__init();
  char *buf;
  size_t len;
  int rc = dt__read_file_max(path, 1 << 20, "the limit on a scheduler configuration", &buf, &len, err);
  if (rc) return rc;
  const char *file = strcmp(path, "-") ? path : "<stdin>";
  cJSON *docs = NULL;
  dt_arena tree = {0};
  rc = dt__doc_parse_in(&tree, file, buf, len, &docs, err);
  dt__free(buf);
  /* nothing (or comments, or empty documents alone) is no configuration, as
  ** Karpenter's empty value */
  const cJSON *doc = NULL, *d;
  int ndocs = 0;
  for (d = rc ? NULL : docs->child; d; d = d->next)
    if (!cJSON_IsNull(d)) doc = d, ndocs++;
  if (ndocs > 1)
    rc = dt__err(err, DT_EINVAL, "%s: scheduler config: expected one document (Karpenter's --scheduler-config), got %d",
                 file, ndocs);
  if (!rc && doc) rc = read_constraints(file, doc, cfg, err);
  dt__arena_free(&tree);
  if (rc) {
    mf_pod_free(cfg);
    memset(cfg, 0, sizeof *cfg);
  }
  return rc;
}

int dt__spread_defaults_apply(dt_manifests *m, const dt_podspec *cfg, dt_error *err) {
  if (!cfg || !cfg->nspread) return 0;
  int brc = dt_manifests_finish(m, err); /* a buffer's chunks get them too, as Karpenter's virtual pods */
  if (brc) return brc;
  /* every pod that declares none of its own: the defaults, with its selector
  ** (its controller and its namespace's Services looked up, once indexed) */
  workloads w = {0};
  svc_index ix = {0};
  int rc = svc_index_make(m, &ix);
  if (!rc) rc = workloads_index(m, &w);
  for (size_t i = 0; i < m->pods.n && !rc; i++) {
    dt_podspec *d = &m->pods.v[i];
    if (d->nspread) continue;
    dt_selector sel = {0};
    rc = deduce(m, &w, &ix, d, &sel);
    if (!rc && sel.present) rc = give(d, cfg, &sel);
    mf_selector_free(&sel);
  }
  dt__symtab_free(&w.names);
  dt__free(w.at);
  svc_index_free(&ix);
  if (rc == DT_ENOMEM) dt__err(err, DT_ENOMEM, "out of memory");
  return rc;
}

int dt_manifests_scheduler_config(dt_manifests *m, const char *path, dt_error *err) {
  dt_podspec cfg = {0}; /* the constraints, read as a pod's */
  int rc = dt__spread_defaults_read(path, &cfg, err);
  if (!rc) rc = dt__spread_defaults_apply(m, &cfg, err);
  mf_pod_free(&cfg);
  return rc;
}
