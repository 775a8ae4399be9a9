/*
** manifest.c: Kubernetes objects to the model. Validation happens here, at
** the boundary, so every error names the file, the object (Kind ns/name)
** and the field; the scheduler then trusts its inputs.
**
** This file holds what every reader uses (field parsers, freeing), the table
** of readers by kind and the entry points; the readers are in mf_nodepool.c
** (NodePools), mf_pod.c (pods, workloads, nodes and claims, PDBs, volumes)
** and mf_kubevirt.c (VirtualMachinePools, VirtualMachines); reader.h is what
** they share.
*/
#include "reader.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* What a reader that failed returns: out of memory or bad input, the same
** whether or not the caller passed a dt_error. */
int mf_failed(const mctx *x) { return x->code ? x->code : DT_EINVAL; }

int mf_bad(mctx *x, const char *field, const char *fmt, ...) DT_PRINTF(3, 4);
int mf_bad(mctx *x, const char *field, const char *fmt, ...) {
  char msg[700];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (x->code != DT_ENOMEM) x->code = DT_EINVAL;
  return dt__err(x->err, x->code, "%s: %s: %s%s%s", x->file, x->obj, field ? field : "", field ? ": " : "", msg);
}

int mf_oom(mctx *x) {
  x->code = DT_ENOMEM;
  return dt__err(x->err, DT_ENOMEM, "%s: out of memory", x->file);
}

/* Whether v is a whole number from lo to hi (Kubernetes' integer fields). */
bool mf_is_int_in(const cJSON *v, double lo, double hi) {
  return cJSON_IsNumber(v) && v->valuedouble >= lo && v->valuedouble <= hi && v->valuedouble == floor(v->valuedouble);
}

/* A list field's preamble: 1 when it is absent or null (no list); an error
** naming the field when it is not a list; else 0, with *n its length and *v
** zeroed room for as many elements of size bytes. */
int mf_list_room(mctx *x, const cJSON *arr, const char *field, const char *what, size_t size, void **v, size_t *n) {
  *n = 0;
  if (!arr || cJSON_IsNull(arr)) return 1;
  if (!cJSON_IsArray(arr)) return mf_bad(x, field, "expected %s", what);
  *n = (size_t)cJSON_GetArraySize(arr);
  return (*v = dt__calloc(*n ? *n : 1, size)) ? 0 : mf_oom(x);
}

const cJSON *mf_get(const cJSON *o, const char *k) {
  return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

const char *mf_get_str(const cJSON *o, const char *k) {
  const cJSON *v = mf_get(o, k);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ------------------------------------------------------------- freeing */

void mf_mreqs_free(dt_mreqs *r) {
  for (size_t i = 0; i < r->n; i++) {
    dt__free(r->v[i].key);
    for (size_t j = 0; j < r->v[i].n; j++) dt__free(r->v[i].vals[j]);
    dt__free(r->v[i].vals);
  }
  dt__free(r->v);
}

static void taints_free(dt_taint *t, size_t n) {
  for (size_t i = 0; i < n; i++) {
    dt__free(t[i].key);
    dt__free(t[i].value);
    dt__free(t[i].effect);
  }
  dt__free(t);
}

void mf_pool_free(dt_nodepool *p) {
  dt__free(p->name);
  dt__free(p->k_hash);
  dt__free(p->k_hash_version);
  dt__kvs_free(&p->labels);
  mf_mreqs_free(&p->reqs);
  taints_free(p->taints, p->ntaints);
  taints_free(p->startup, p->nstartup);
  dt__rlist_free(&p->limits);
  cJSON_Delete(p->node_class_ref);
  dt__free(p->uid);
  dt__free(p->termination_grace);
  dt__free(p->unusable);
  dt__kvs_free(&p->annotations);
  dt__free(p->policy);
  for (size_t i = 0; i < p->nbudgets; i++) {
    dt__free(p->budgets[i].schedule);
    dt__cron_free(&p->budgets[i].cron);
  }
  dt__free(p->budgets);
}

void mf_selector_free(dt_selector *s) { mf_mreqs_free(&s->expr); }

void mf_strs_free(char **v, size_t n) {
  for (size_t i = 0; i < n; i++) dt__free(v[i]);
  dt__free(v);
}

static void terms_free(dt_podterm *t, size_t n) {
  for (size_t i = 0; i < n; i++) {
    mf_selector_free(&t[i].sel);
    dt__free(t[i].key);
    mf_strs_free(t[i].ns, t[i].nns);
    mf_selector_free(&t[i].ns_sel);
  }
  dt__free(t);
}

void mf_spreads_free(dt_spread *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    dt__free(s[i].key);
    mf_selector_free(&s[i].sel);
    mf_strs_free(s[i].match_label_keys, s[i].nmlk);
  }
  dt__free(s);
}

void mf_pod_free(dt_podspec *p) {
  for (size_t i = 0; i < p->npref; i++) mf_mreqs_free(&p->pref[i].reqs);
  dt__free(p->pref);
  terms_free(p->aff, p->naff);
  terms_free(p->anti, p->nanti);
  terms_free(p->paff, p->npaff);
  terms_free(p->panti, p->npanti);
  mf_spreads_free(p->spread, p->nspread);
  for (size_t i = 0; i < p->nports; i++) dt__free(p->ports[i].ip);
  dt__free(p->ports);
  dt__free(p->runtime_class);
  dt__free(p->vm_itype);
  dt__free(p->ns);
  dt__free(p->name);
  dt__free(p->owner);
  dt__free(p->parent);
  mf_selector_free(&p->sel);
  mf_strs_free(p->pvcs, p->npvcs);
  for (size_t i = 0; i < p->nvct; i++) {
    dt__free(p->vct[i].name);
    dt__free(p->vct[i].cls);
  }
  dt__free(p->vct);
  dt__rlist_free(&p->requests);
  dt__kvs_free(&p->labels);
  dt__kvs_free(&p->node_selector);
  for (size_t i = 0; i < p->nterms; i++) mf_mreqs_free(&p->terms[i]);
  dt__free(p->terms);
  for (size_t i = 0; i < p->ntol; i++) {
    dt__free(p->tol[i].key);
    dt__free(p->tol[i].op);
    dt__free(p->tol[i].value);
    dt__free(p->tol[i].effect);
  }
  dt__free(p->tol);
  dt__free(p->node_name);
  dt__free(p->claim);
  dt__free(p->controller);
}

void mf_topo_free(dt_topo_obj *t) {
  dt__free(t->key);
  dt__free(t->volume);
  dt__free(t->storage_class);
  mf_mreqs_free(&t->term);
  dt__free(t->driver);
  for (size_t i = 0; i < t->nlim; i++) dt__free(t->lim_driver[i]);
  dt__free(t->lim_driver);
  dt__free(t->lim_count);
}

void mf_node_free(dt_node *n) {
  dt__free(n->name);
  dt__free(n->pool_hash);
  dt__free(n->k_hash);
  dt__free(n->k_hash_version);
  dt__free(n->drifted);
  dt__free(n->image_id);
  dt__free(n->nc_hash);
  dt__free(n->nc_k_hash);
  dt__free(n->nc_k_hash_version);
  dt__free(n->claim_name);
  dt__free(n->node_name);
  dt__free(n->provider_id);
  dt__kvs_free(&n->labels);
  dt__rlist_free(&n->allocatable);
  taints_free(n->taints, n->ntaints);
  for (size_t i = 0; i < n->npods; i++) dt__free(n->pods[i]);
  dt__free(n->pods);
}

void mf_vmpool_free(dt_vmpool *p);
void mf_vm_free(dt_vm *v);
void mf_pdb_free(dt_pdb *p);

dt_manifests *dt_manifests_new(void) { return dt__calloc(1, sizeof(dt_manifests)); }

void dt_manifests_free(dt_manifests *m) {
  if (!m) return;
  for (size_t i = 0; i < m->pools.n; i++) mf_pool_free(&m->pools.v[i]);
  for (size_t i = 0; i < m->nodeclasses.n; i++) mf_nodeclass_free(&m->nodeclasses.v[i]);
  dt__free(m->nodeclasses.v);
  for (size_t i = 0; i < m->vmis.n; i++) mf_vmi_free(&m->vmis.v[i]);
  dt__free(m->vmis.v);
  for (size_t i = 0; i < m->pool_revs.n; i++) mf_pool_rev_free(&m->pool_revs.v[i]);
  dt__free(m->pool_revs.v);
  for (size_t i = 0; i < m->pods.n; i++)
    if (!m->pods.v[i].borrowed) mf_pod_free(&m->pods.v[i]);
    else if (m->pods.v[i].spread_own)
      mf_spreads_free(m->pods.v[i].spread, m->pods.v[i].nspread);
  for (size_t i = 0; i < m->daemonsets.n; i++) mf_pod_free(&m->daemonsets.v[i]);
  for (size_t i = 0; i < m->idle.n; i++) mf_pod_free(&m->idle.v[i]);
  dt__free(m->idle.v);
  for (size_t i = 0; i < m->templates.n; i++) mf_pod_free(&m->templates.v[i]);
  dt__free(m->templates.v);
  for (size_t i = 0; i < m->buffers.n; i++) mf_buffer_free(&m->buffers.v[i]);
  dt__free(m->buffers.v);
  for (size_t i = 0; i < m->nodeoverlays.n; i++) mf_overlay_free(&m->nodeoverlays.v[i]);
  dt__free(m->nodeoverlays.v);
  for (size_t i = 0; i < m->itypes.n; i++) mf_itype_free(&m->itypes.v[i]);
  dt__free(m->itypes.v);
  for (size_t i = 0; i < m->namespaces.n; i++) mf_namespace_free(&m->namespaces.v[i]);
  dt__free(m->namespaces.v);
  for (size_t i = 0; i < m->services.n; i++) mf_service_free(&m->services.v[i]);
  dt__free(m->services.v);
  for (size_t i = 0; i < m->runtime_classes.n; i++) {
    dt__free(m->runtime_classes.v[i].name);
    dt__rlist_free(&m->runtime_classes.v[i].overhead);
  }
  dt__free(m->daemonsets.v);
  dt__free(m->runtime_classes.v);
  for (size_t i = 0; i < m->marks.n; i++) {
    dt__free(m->marks.v[i].instance_type);
    dt__free(m->marks.v[i].zone);
    dt__free(m->marks.v[i].name);
  }
  dt__free(m->marks.v);
  for (size_t i = 0; i < m->nodes.n; i++)
    if (!m->nodes.v[i].borrowed) mf_node_free(&m->nodes.v[i]);
  for (size_t i = 0; i < m->vmpools.n; i++) mf_vmpool_free(&m->vmpools.v[i]);
  for (size_t i = 0; i < m->pdbs.n; i++) mf_pdb_free(&m->pdbs.v[i]);
  dt__free(m->pdbs.v);
  for (size_t i = 0; i < m->vms.n; i++) mf_vm_free(&m->vms.v[i]);
  for (size_t i = 0; i < m->volumes.n; i++) dt__free(m->volumes.v[i]);
  for (size_t i = 0; i < m->topo.n; i++) mf_topo_free(&m->topo.v[i]);
  dt__free(m->topo.v);
  dt__free(m->vmpools.v);
  dt__free(m->vms.v);
  dt__free(m->volumes.v);
  for (size_t i = 0; i < m->files.n; i++) dt__free(m->files.v[i]);
  dt__symtab_free(&m->seen);
  dt__free(m->seen_file.v);
  dt__free(m->pools.v);
  dt__free(m->pods.v);
  dt__free(m->nodes.v);
  dt__free(m->files.v);
  dt__free(m->notes.p);
  dt__free(m);
}

const char *dt_manifests_notes(const dt_manifests *m) { return m->notes.p ? m->notes.p : ""; }

size_t dt_manifests_nodepools(const dt_manifests *m) { return m->pools.n; }

const char *dt_manifests_nodepool_policy(const dt_manifests *m, size_t i) {
  return i < m->pools.n ? m->pools.v[i].policy : NULL;
}

/* -------------------------------------------------------------- fields */

int mf_parse_kvs(mctx *x, const cJSON *o, const char *field, dt_kvs *out) {
  if (!o || cJSON_IsNull(o)) return 0;
  if (!cJSON_IsObject(o)) return mf_bad(x, field, "expected a map of strings");
  size_t n = (size_t)cJSON_GetArraySize(o);
  out->v = dt__calloc(n ? n : 1, sizeof *out->v);
  if (!out->v) return mf_oom(x);
  char tmp[64];
  for (const cJSON *c = o->child; c; c = c->next) {
    const char *v = dt__scalar(c, tmp, sizeof tmp);
    if (!v || cJSON_IsNull(c)) {
      char f[300];
      dt__join(f, sizeof f, field, ".", c->string);
      return mf_bad(x, f, "expected a string");
    }
    out->v[out->n].key = dt__strdup(c->string);
    out->v[out->n].val = dt__strdup(v);
    out->n++;
    if (!out->v[out->n - 1].key || !out->v[out->n - 1].val) return mf_oom(x);
  }
  return 0;
}

/* Whether check_request would refuse v: the hot path asks this first and
** formats the field's name only for the message. */
bool mf_request_absurd(const char *res, int64_t v) {
  return v < 0 || (v > MAX_CPU_MILLI && !strcmp(res, "cpu")) || v > MAX_BYTES_MILLI;
}

int mf_check_request(mctx *x, const char *field, const char *res, int64_t v) {
  if (v < 0) return mf_bad(x, field, "must not be negative");
  if (strcmp(res, "cpu") == 0 && v > MAX_CPU_MILLI)
    return mf_bad(x, field, "%lld cores is absurd (at most 1000000)", (long long)(v / 1000));
  if ((strcmp(res, "memory") == 0 || strcmp(res, "ephemeral-storage") == 0) && v > MAX_BYTES_MILLI)
    return mf_bad(x, field, "larger than 1Pi is absurd");
  if (v > MAX_BYTES_MILLI)
    return mf_bad(x, field, "%lld is absurd (at most %lld)", (long long)(v / 1000),
                  (long long)(MAX_BYTES_MILLI / 1000));
  return 0;
}

static void where_fmt(const where *w, char *out, size_t n) {
  if (w->list)
    snprintf(out, n, "%s.%s[%zu]%s", w->path, w->list, w->i, w->tail);
  else
    dt__join(out, n, w->path, w->tail);
}

/* A map of quantities (requests, limits, allocatable) at w. */
int mf_rlist_at(mctx *x, const cJSON *o, const where *w, dt_rlist *out, bool is_request) {
  if (!o || cJSON_IsNull(o)) return 0;
  char field[300], tmp[64], f[400];
  if (!cJSON_IsObject(o)) {
    where_fmt(w, field, sizeof field);
    return mf_bad(x, field, "expected a map of quantities");
  }
  for (const cJSON *c = o->child; c; c = c->next) {
    /* a container's resource without a domain is one Kubernetes defines
    ** (its API server refuses any other: memroy is no resource) */
    static const char *const standard[] = {"cpu", "memory", "ephemeral-storage", NULL};
    if (w->list && !strchr(c->string, '/') && strncmp(c->string, "hugepages-", 10) && !mf_one_of(c->string, standard)) {
      const char *near = mf_nearest(c->string, standard, 2);
      where_fmt(w, field, sizeof field);
      dt__join(f, sizeof f, field, ".", c->string);
      return mf_bad(x, f,
                    "not a resource a container can ask for (cpu, memory, ephemeral-storage, hugepages-<size>, or "
                    "an extended resource with its domain, such as nvidia.com/gpu)%s%s%s",
                    near ? "; did you mean " : "", near ? near : "", near ? "?" : "");
    }
    const char *s = dt__scalar(c, tmp, sizeof tmp);
    int64_t v;
    dt_error qe;
    int rc = s && !cJSON_IsBool(c) ? dt_quantity_parse(s, &v, &qe) : DT_EINVAL;
    /* Limits and capacities beyond what int64 milli-units hold are
    ** "unlimited" in practice (9.2 PB of memory). */
    if (rc == DT_ERANGE && !is_request && s[0] != '-') {
      v = INT64_MAX;
      rc = 0;
    }
    if (rc || (is_request && mf_request_absurd(c->string, v)) || (!is_request && v < 0)) {
      where_fmt(w, field, sizeof field);
      dt__join(f, sizeof f, field, ".", c->string);
      if (!s || cJSON_IsBool(c)) return mf_bad(x, f, "expected a quantity such as 500m or 1Gi");
      if (rc) return mf_bad(x, f, "%s", qe.msg);
      if (is_request) {
        mf_check_request(x, f, c->string, v);
        return mf_failed(x);
      }
      return mf_bad(x, f, "must not be negative");
    }
    /* an extended resource (a name in a domain other than kubernetes.io's)
    ** is counted in whole units, as the API server requires */
    const char *slash = strchr(c->string, '/');
    size_t dl = slash ? (size_t)(slash - c->string) : 0; /* the domain's length */
    bool native = (dl == 13 && !strncmp(c->string, "kubernetes.io", 13)) ||
                  (dl > 14 && !strncmp(slash - 14, ".kubernetes.io", 14));
    if (is_request && slash && v % 1000 && !native) {
      where_fmt(w, field, sizeof field);
      dt__join(f, sizeof f, field, ".", c->string);
      return mf_bad(x, f, "%s is not a whole number (an extended resource is counted in whole units)", s);
    }
    if (dt__rlist_add(out, c->string, v, DT_RL_SET)) return mf_oom(x);
  }
  return 0;
}

int mf_parse_rlist(mctx *x, const cJSON *o, const char *field, dt_rlist *out, bool is_request) {
  where w = {field, NULL, 0, ""};
  return mf_rlist_at(x, o, &w, out, is_request);
}

int mf_parse_mreqs(mctx *x, const cJSON *arr, const char *field, dt_mreqs *out, bool allow_min_values) {
  size_t n, i = 0;
  int lr = mf_list_room(x, arr, field, "a list of requirements", sizeof *out->v, (void **)&out->v, &n);
  if (lr) return lr > 0 ? 0 : lr;
  char f[300], tmp[64];
  for (const cJSON *r = arr->child; r; r = r->next, i++) {
    dt_mreq *q = &out->v[out->n++];
    const char *key = mf_get_str(r, "key");
    const char *op = mf_get_str(r, "operator");
    snprintf(f, sizeof f, "%s[%zu].key", field, i);
    if (!key || !*key) return mf_bad(x, f, "missing or not a string");
    q->key = dt__strdup(key);
    if (!q->key) return mf_oom(x);
    snprintf(f, sizeof f, "%s[%zu].operator", field, i);
    if (!op || dt__op_parse(op, &q->op))
      return mf_bad(x, f, "expected In, NotIn, Exists, DoesNotExist, Gt or Lt, got %s%s%s", op ? "\"" : "",
                    op ? op : "nothing", op ? "\"" : "");
    const cJSON *vals = mf_get(r, "values");
    snprintf(f, sizeof f, "%s[%zu].values", field, i);
    if (vals && !cJSON_IsNull(vals) && !cJSON_IsArray(vals)) return mf_bad(x, f, "expected a list");
    size_t nv = vals ? (size_t)cJSON_GetArraySize(vals) : 0;
    if ((q->op == DT_OP_IN || q->op == DT_OP_NOTIN) && nv == 0)
      return mf_bad(x, f, "%s needs at least one value (key %s)", dt__op_name(q->op), key);
    if ((q->op == DT_OP_EXISTS || q->op == DT_OP_DOESNOTEXIST) && nv != 0)
      return mf_bad(x, f, "%s takes no values (key %s)", dt__op_name(q->op), key);
    if (q->op >= DT_OP_GT && nv != 1)
      return mf_bad(x, f, "%s takes exactly one integer value (key %s)", dt__op_name(q->op), key);
    q->vals = dt__calloc(nv ? nv : 1, sizeof *q->vals);
    if (!q->vals) return mf_oom(x);
    size_t k = 0;
    for (const cJSON *v = vals ? vals->child : NULL; v; v = v->next, k++) {
      const char *s = dt__scalar(v, tmp, sizeof tmp);
      if (!s || cJSON_IsNull(v)) {
        snprintf(f, sizeof f, "%s[%zu].values[%zu]", field, i, k);
        return mf_bad(x, f, "expected a string");
      }
      if (q->op >= DT_OP_GT) {
        char *end;
        errno = 0;
        strtoll(s, &end, 10);
        if (!*s || *end || errno == ERANGE) {
          snprintf(f, sizeof f, "%s[%zu].values[0]", field, i);
          return errno == ERANGE ? mf_bad(x, f, "%s needs an integer from %lld to %lld, got \"%.100s\"",
                                          dt__op_name(q->op), (long long)INT64_MIN, (long long)INT64_MAX, s)
                                 : mf_bad(x, f, "%s needs an integer, got \"%.100s\"", dt__op_name(q->op), s);
        }
      }
      q->vals[q->n] = dt__strdup(s);
      if (!q->vals[q->n]) return mf_oom(x);
      q->n++;
    }
    const cJSON *mv = mf_get(r, "minValues");
    if (mv && !cJSON_IsNull(mv)) {
      snprintf(f, sizeof f, "%s[%zu].minValues", field, i);
      if (!allow_min_values) return mf_bad(x, f, "only NodePool requirements take minValues");
      if (!mf_is_int_in(mv, 1, 50)) return mf_bad(x, f, "expected an integer from 1 to 50");
      q->min_values = (int)mv->valuedouble;
      if (q->op == DT_OP_IN && (size_t)q->min_values > q->n)
        return mf_bad(x, f, "%d is more than the %zu values allowed by In", q->min_values, q->n);
    }
  }
  return 0;
}

int mf_parse_taints(mctx *x, const cJSON *arr, const char *field, dt_taint **out, size_t *nout) {
  size_t n, i = 0;
  int lr = mf_list_room(x, arr, field, "a list of taints", sizeof **out, (void **)out, &n);
  if (lr) return lr > 0 ? 0 : lr;
  char f[300];
  for (const cJSON *t = arr->child; t; t = t->next, i++) {
    dt_taint *d = &(*out)[(*nout)++];
    const char *key = mf_get_str(t, "key"), *val = mf_get_str(t, "value"), *eff = mf_get_str(t, "effect");
    snprintf(f, sizeof f, "%s[%zu].key", field, i);
    if (!key || !*key) return mf_bad(x, f, "missing or not a string");
    snprintf(f, sizeof f, "%s[%zu].effect", field, i);
    if (!eff || (strcmp(eff, "NoSchedule") && strcmp(eff, "PreferNoSchedule") && strcmp(eff, "NoExecute")))
      return mf_bad(x, f, "expected NoSchedule, PreferNoSchedule or NoExecute");
    d->key = dt__strdup(key);
    d->value = dt__strdup(val ? val : "");
    d->effect = dt__strdup(eff);
    if (!d->key || !d->value || !d->effect) return mf_oom(x);
  }
  return 0;
}

int mf_parse_tolerations(mctx *x, const cJSON *arr, const char *field, dt_podspec *p) {
  size_t n, i = 0;
  int lr = mf_list_room(x, arr, field, "a list of tolerations", sizeof *p->tol, (void **)&p->tol, &n);
  if (lr) return lr > 0 ? 0 : lr;
  char f[300];
  for (const cJSON *t = arr->child; t; t = t->next, i++) {
    dt_toleration *d = &p->tol[p->ntol++];
    const char *key = mf_get_str(t, "key"), *op = mf_get_str(t, "operator"), *val = mf_get_str(t, "value"),
               *eff = mf_get_str(t, "effect");
    snprintf(f, sizeof f, "%s[%zu].operator", field, i);
    if (op && strcmp(op, "Equal") && strcmp(op, "Exists"))
      return mf_bad(x, f, "expected Equal or Exists, got \"%s\"", op);
    if ((!key || !*key) && (!op || strcmp(op, "Exists"))) return mf_bad(x, f, "an empty key needs operator Exists");
    snprintf(f, sizeof f, "%s[%zu].effect", field, i);
    if (eff && *eff && strcmp(eff, "NoSchedule") && strcmp(eff, "PreferNoSchedule") && strcmp(eff, "NoExecute"))
      return mf_bad(x, f, "expected NoSchedule, PreferNoSchedule or NoExecute");
    d->key = key && *key ? dt__strdup(key) : NULL;
    d->op = dt__strdup(op ? op : "Equal");
    d->value = dt__strdup(val ? val : "");
    d->effect = eff && *eff ? dt__strdup(eff) : NULL;
    if ((key && *key && !d->key) || !d->op || !d->value || (eff && *eff && !d->effect)) return mf_oom(x);
  }
  return 0;
}

/* ------------------------------------------------------------ objects */

int mf_meta(mctx *x, const cJSON *o, const char **ns, const char **name, bool namespaced) {
  const cJSON *md = mf_get(o, "metadata");
  *name = mf_get_str(md, "name");
  *ns = namespaced ? mf_get_str(md, "namespace") : NULL;
  const cJSON *nv = mf_get(md, "name"), *sv = namespaced ? mf_get(md, "namespace") : NULL;
  bool bad_name = nv && !cJSON_IsString(nv) && !cJSON_IsNull(nv),
       bad_ns = sv && !cJSON_IsString(sv) && !cJSON_IsNull(sv);
  if (bad_name || bad_ns) {
    dt__join(x->obj, sizeof x->obj, x->kind, *name ? " " : " (unnamed)", *name ? *name : "");
    return mf_bad(x, bad_name ? "metadata.name" : "metadata.namespace", "must be a string");
  }
  if (namespaced && (!*ns || !**ns)) *ns = "default";
  if (!*name || !**name) {
    dt__join(x->obj, sizeof x->obj, x->kind, " (unnamed)");
    return mf_bad(x, "metadata.name", "missing");
  }
  /* Kubernetes' own bounds (DNS subdomain names, DNS label namespaces):
  ** within them every "Kind/namespace/name" key fits, so none collide. */
  if (strlen(*name) > 253 || (*ns && strlen(*ns) > 63)) {
    snprintf(x->obj, sizeof x->obj, "%s %.60s...", x->kind, *name);
    return strlen(*name) > 253 ? mf_bad(x, "metadata.name", "longer than 253 characters")
                               : mf_bad(x, "metadata.namespace", "longer than 63 characters");
  }
  /* and no "/": "Kind/namespace/name" keys are unique only without one;
  ** no ",": dovetail.dev/pods lists a claim's pods by name, comma-separated */
  const char *bad = strchr(*name, '/') ? "/" : strchr(*name, ',') ? "," : NULL;
  const char *bad_ns_c = !*ns ? NULL : strchr(*ns, '/') ? "/" : strchr(*ns, ',') ? "," : NULL;
  if (bad || bad_ns_c) {
    snprintf(x->obj, sizeof x->obj, "%s %.60s", x->kind, *name);
    return bad ? mf_bad(x, "metadata.name", "holds a \"%s\" (Kubernetes names never do)", bad)
               : mf_bad(x, "metadata.namespace", "holds a \"%s\" (Kubernetes namespaces never do)", bad_ns_c);
  }
  if (namespaced)
    dt__join(x->obj, sizeof x->obj, x->kind, " ", *ns, "/", *name);
  else
    dt__join(x->obj, sizeof x->obj, x->kind, " ", *name);
  return 0;
}

int mf_check_duplicate(mctx *x, const char *ns, const char *name) {
  char key[600];
  dt__join(key, sizeof key, x->kind, "/", ns ? ns : "", "/", name);
  dt_manifests *m = x->m;
  dt_sym s = dt__sym(&m->seen, key);
  if (!s) return mf_oom(x);
  while (m->seen_file.n <= s)
    if (dt__vec_push(&m->seen_file, (const char *)NULL)) return mf_oom(x);
  if (m->seen_file.v[s]) return mf_bad(x, "metadata.name", "duplicate object (first defined in %s)", m->seen_file.v[s]);
  m->seen_file.v[s] = x->file;
  return 0;
}

int64_t mf_created_at(const cJSON *o) {
  const char *ts = mf_get_str(mf_get(o, "metadata"), "creationTimestamp");
  int64_t t = 0;
  if (ts && dt_time_parse(ts, &t, NULL)) t = 0;
  return t;
}

int mf_parse_duration_or_never(mctx *x, const cJSON *v, const char *field, int64_t *out) {
  if (!v || cJSON_IsNull(v)) return 0;
  const char *s = cJSON_IsString(v) ? v->valuestring : NULL;
  if (s && !strcmp(s, "Never")) {
    *out = -1;
    return 0;
  }
  if (!s || dt__duration_parse(s, out))
    return mf_bad(x, field, "expected a duration such as 30s, 10m or 720h, or Never");
  return 0;
}

static int claim_object(mctx *x, const cJSON *o) { return mf_node(x, o, true); }
static int node_object(mctx *x, const cJSON *o) { return mf_node(x, o, false); }
static int workload_object(mctx *x, const cJSON *o) { return mf_workload(x, o, false); }
static int daemonset_object(mctx *x, const cJSON *o) { return mf_workload(x, o, true); }

/* The kinds dovetail reads: an apiVersion ending in "/" names a group (any
** version of it), any other one exactly. Other kinds are noted and skipped. */
typedef struct reader {
  const char *kind, *api;
  int (*read)(mctx *x, const cJSON *o);
} reader;

static const reader k_readers[] = {
    {"NodePool", "karpenter.sh/", mf_nodepool},
    {"NodeClaim", "karpenter.sh/", claim_object},
    {"NodeOverlay", "karpenter.sh/", mf_nodeoverlay},
    {"EC2NodeClass", "karpenter.k8s.aws/", mf_nodeclass},
    {"Pod", "v1", mf_pod},
    {"Node", "v1", node_object},
    {"Deployment", "apps/", workload_object},
    {"ReplicaSet", "apps/", workload_object},
    {"StatefulSet", "apps/", workload_object},
    {"DaemonSet", "apps/", daemonset_object},
    {"RuntimeClass", "node.k8s.io/", mf_runtime_class},
    {"Namespace", "v1", mf_namespace},
    {"UnavailableOffering", "dovetail.dev/", mf_unavailable},
    {"PodDisruptionBudget", "policy/", mf_pdb},
    {"VirtualMachinePool", "pool.kubevirt.io/", mf_vmpool},
    {"VirtualMachine", "kubevirt.io/", mf_vm},
    {"VirtualMachineInstance", "kubevirt.io/", mf_vmi},
    {"ControllerRevision", "apps/", mf_ctrl_revision},
    {"KubeVirt", "kubevirt.io/", mf_kubevirt},
    {"VirtualMachineInstancetype", "instancetype.kubevirt.io/", mf_itype},
    {"VirtualMachineClusterInstancetype", "instancetype.kubevirt.io/", mf_itype},
    {"PersistentVolume", "v1", mf_persistent_volume},
    {"StorageClass", "storage.k8s.io/", mf_storage_class},
    {"CSINode", "storage.k8s.io/", mf_csinode},
    {"PersistentVolumeClaim", "v1", mf_volume},
    {"DataVolume", "cdi.kubevirt.io/", mf_volume},
    {"Service", "v1", mf_service},
    {"ReplicationController", "v1", mf_service},
    {"CapacityBuffer", "autoscaling.x-k8s.io/", mf_capacity_buffer},
    {"PodTemplate", "v1", mf_pod_template},
};

/* Where an object is in its file, for the errors that cannot name it yet:
** "document 2", or "document 1, items[41]" inside a List. */
static const char *where_in_file(char *buf, size_t n, size_t docno, size_t item) {
  if (item == SIZE_MAX)
    snprintf(buf, n, "document %zu", docno);
  else
    snprintf(buf, n, "document %zu, items[%zu]", docno, item);
  return buf;
}

static int object(mctx *x, const cJSON *o, size_t docno, size_t item) {
  char at[64];
  if (!cJSON_IsObject(o)) {
    if (cJSON_IsNull(o) && item == SIZE_MAX) return 0; /* empty document */
    return dt__err(x->err, DT_EINVAL, "%s: %s: expected a Kubernetes object (a map)", x->file,
                   where_in_file(at, sizeof at, docno, item));
  }
  const char *kind = mf_get_str(o, "kind");
  const char *api = mf_get_str(o, "apiVersion");
  if (!kind) {
    const cJSON *md = mf_get(o, "metadata");
    const char *nm = mf_get_str(md, "name"), *ns = mf_get_str(md, "namespace");
    return dt__err(x->err, DT_EINVAL, "%s: %s%s%s%s%s%s: kind: missing", x->file,
                   where_in_file(at, sizeof at, docno, item), nm ? " (" : "", nm && ns ? ns : "", nm && ns ? "/" : "",
                   nm ? nm : "", nm ? ")" : "");
  }
  x->kind = kind;
  dt__join(x->obj, sizeof x->obj, kind);
  size_t klen = strlen(kind);
  if (klen >= 4 && strcmp(kind + klen - 4, "List") == 0 && mf_get(o, "items")) {
    const cJSON *items = mf_get(o, "items");
    if (!cJSON_IsArray(items)) return mf_bad(x, "items", "expected a list");
    size_t i = 0;
    for (const cJSON *it = items->child; it; it = it->next, i++)
      if (object(x, it, docno, i)) return mf_failed(x);
    return 0;
  }
  if (!api) { /* named as the readers name it, when it says who it is */
    const cJSON *md = mf_get(o, "metadata");
    const char *nm = mf_get_str(md, "name"), *ns = mf_get_str(md, "namespace");
    if (nm && ns)
      dt__join(x->obj, sizeof x->obj, kind, " ", ns, "/", nm);
    else if (nm)
      dt__join(x->obj, sizeof x->obj, kind, " ", nm);
    return mf_bad(x, "apiVersion", "missing");
  }
  const reader *other_case = NULL; /* a kind of the group spelt another way */
  for (size_t i = 0; i < sizeof k_readers / sizeof *k_readers; i++) {
    const reader *r = &k_readers[i];
    size_t al = strlen(r->api);
    if (r->api[al - 1] == '/' ? strncmp(api, r->api, al) : strcmp(api, r->api)) continue;
    if (strcmp(kind, r->kind)) {
      if (!other_case && !strcasecmp(kind, r->kind)) other_case = r;
      continue;
    }
    /* Karpenter's kinds are served at v1 and, converted, v1beta1: another
    ** version is none the API server knows, not one to read as v1 */
    bool karpenter = !strcmp(r->api, "karpenter.sh/") || !strcmp(r->api, "karpenter.k8s.aws/");
    /* the NodeOverlay CRD serves v1alpha1 alone */
    if (r->read == mf_nodeoverlay && strcmp(api + al, "v1alpha1"))
      return mf_bad(x, "apiVersion", "%s is no version of %s (%sv1alpha1)", api, kind, r->api);
    if (karpenter && r->read != mf_nodeoverlay && strcmp(api + al, "v1") && strcmp(api + al, "v1beta1"))
      return mf_bad(x, "apiVersion", "%s is no version of %s (%sv1, or v1beta1 as Karpenter converts it)", api, kind,
                    r->api);
    /* the CapacityBuffer CRD Karpenter installs serves v1beta1 alone */
    if (!strcmp(r->api, "autoscaling.x-k8s.io/") && strcmp(api + al, "v1beta1"))
      return mf_bad(x, "apiVersion", "%s is no version of %s (%sv1beta1)", api, kind, r->api);
    return r->read(x, o);
  }
  /* the API server knows no such kind (kinds are case-sensitive): an error, not a skip */
  if (other_case)
    return dt__err(x->err, DT_EINVAL, "%s: %s: kind: %s is no kind of %s (kinds are case-sensitive: %s?)", x->file,
                   where_in_file(at, sizeof at, docno, item), kind, api, other_case->kind);
  const char *nm = mf_get_str(mf_get(o, "metadata"), "name");
  dt__buf_printf(&x->m->notes, "%s: %s %s (%s): not used by plan, skipped\n", x->file, kind, nm ? nm : "(unnamed)",
                 api);
  return 0;
}

/* Where a file's objects start, so a bad file adds nothing. */
typedef struct mark_t {
  size_t np, nnc, nvmi, nprev, npod, nn, ns, nl, nds, nidle, nbuf, novl, nit, ntmpl, nrc, nmk, nvp, nvm, nvol, npdb,
      ntopo, nnsp, nsvc;
  int64_t npods;
  const char *varch, *varch_file;
} mark_t;

static mark_t mark_of(const dt_manifests *m) {
  return (mark_t){m->pools.n,
                  m->nodeclasses.n,
                  m->vmis.n,
                  m->pool_revs.n,
                  m->pods.n,
                  m->nodes.n,
                  m->seen_file.n,
                  m->notes.len,
                  m->daemonsets.n,
                  m->idle.n,
                  m->buffers.n,
                  m->nodeoverlays.n,
                  m->itypes.n,
                  m->templates.n,
                  m->runtime_classes.n,
                  m->marks.n,
                  m->vmpools.n,
                  m->vms.n,
                  m->volumes.n,
                  m->pdbs.n,
                  m->topo.n,
                  m->namespaces.n,
                  m->services.n,
                  m->npods,
                  m->vm_default_arch,
                  m->vm_default_arch_file};
}

static void roll_back(dt_manifests *m, const mark_t *k, const char *file) {
  m->npods = k->npods;
  m->vm_default_arch = k->varch;
  m->vm_default_arch_file = k->varch_file;
  while (m->pools.n > k->np) mf_pool_free(&m->pools.v[--m->pools.n]);
  while (m->nodeclasses.n > k->nnc) mf_nodeclass_free(&m->nodeclasses.v[--m->nodeclasses.n]);
  while (m->vmis.n > k->nvmi) mf_vmi_free(&m->vmis.v[--m->vmis.n]);
  while (m->pool_revs.n > k->nprev) mf_pool_rev_free(&m->pool_revs.v[--m->pool_revs.n]);
  while (m->pods.n > k->npod) mf_pod_free(&m->pods.v[--m->pods.n]);
  while (m->nodes.n > k->nn) mf_node_free(&m->nodes.v[--m->nodes.n]);
  while (m->daemonsets.n > k->nds) mf_pod_free(&m->daemonsets.v[--m->daemonsets.n]);
  while (m->idle.n > k->nidle) mf_pod_free(&m->idle.v[--m->idle.n]);
  while (m->buffers.n > k->nbuf) mf_buffer_free(&m->buffers.v[--m->buffers.n]);
  while (m->nodeoverlays.n > k->novl) mf_overlay_free(&m->nodeoverlays.v[--m->nodeoverlays.n]);
  while (m->itypes.n > k->nit) mf_itype_free(&m->itypes.v[--m->itypes.n]);
  while (m->templates.n > k->ntmpl) mf_pod_free(&m->templates.v[--m->templates.n]);
  while (m->pdbs.n > k->npdb) mf_pdb_free(&m->pdbs.v[--m->pdbs.n]);
  while (m->vmpools.n > k->nvp) mf_vmpool_free(&m->vmpools.v[--m->vmpools.n]);
  while (m->vms.n > k->nvm) mf_vm_free(&m->vms.v[--m->vms.n]);
  while (m->volumes.n > k->nvol) dt__free(m->volumes.v[--m->volumes.n]);
  while (m->topo.n > k->ntopo) mf_topo_free(&m->topo.v[--m->topo.n]);
  while (m->namespaces.n > k->nnsp) mf_namespace_free(&m->namespaces.v[--m->namespaces.n]);
  while (m->services.n > k->nsvc) mf_service_free(&m->services.v[--m->services.n]);
  while (m->marks.n > k->nmk) {
    dt_mark *mk = &m->marks.v[--m->marks.n];
    dt__free(mk->instance_type);
    dt__free(mk->zone);
    dt__free(mk->name);
  }
  while (m->runtime_classes.n > k->nrc) {
    dt_runtimeclass *r = &m->runtime_classes.v[--m->runtime_classes.n];
    dt__free(r->name);
    dt__rlist_free(&r->overhead);
  }
  for (size_t i = 0; i < m->seen_file.n; i++)
    if (i >= k->ns || m->seen_file.v[i] == file) m->seen_file.v[i] = NULL;
  m->notes.len = k->nl;
  if (m->notes.p) m->notes.p[k->nl] = 0;
}

/* A JSON List read item by item: each item parsed on its own into an arena
** emptied after it, so memory holds one item's tree, not the whole file's. */
typedef struct streamed {
  mctx *x;
  dt_arena tree;
  int rc;       /* an item's reader failed: the file's error */
  bool whole;   /* an item cJSON refuses: parse the file whole, which says where */
  size_t items; /* items handed over */
} streamed;

static int stream_item(void *arg, const char *text, size_t n) {
  streamed *st = arg;
  st->items++;
  dt__arena_reset(&st->tree);
  dt_arena *old = dt__cj_arena(&st->tree);
  const char *end = NULL;
  cJSON *o = cJSON_ParseWithLengthOpts(text, n, &end, false);
  dt__cj_arena(old);
  /* Malformed, or a key twice: the file is parsed whole, which says where. */
  if (!o || end != text + n || st->tree.oom || dt__json_dup(o, NULL, 0)) {
    st->whole = true;
    return 1;
  }
  /* After a reader failed, the rest is only parsed: malformed JSON anywhere
  ** is the file's error, as when it is parsed whole. */
  if (!st->rc && object(st->x, o, 1, st->items - 1)) st->rc = mf_failed(st->x);
  return 0;
}

int dt_manifests_add_buffer(dt_manifests *m, const char *name, const char *buf, size_t len, dt_error *err) {
  dt__init();
  char *file = dt__strdup(name);
  if (!file || dt__vec_push(&m->files, file)) {
    dt__free(file);
    return dt__err(err, DT_ENOMEM, "out of memory");
  }
  mark_t at = mark_of(m);
  mctx x = {m, file, NULL, {0}, err, 0};
  if (err) err->code = 0;
  /* Nothing at all: read as no objects, but said, since an empty pipe is
  ** more often a command that failed upstream than an empty cluster. */
  size_t lead = 0;
  while (lead < len && (buf[lead] == ' ' || buf[lead] == '\t' || buf[lead] == '\r' || buf[lead] == '\n')) lead++;
  if (lead == len) dt__buf_printf(&m->notes, "%s: empty, read as no objects\n", file);
  int rc = 0;
  streamed st = {&x, {0}, 0, false, 0};
  int how = dt__json_list_each(buf, len, stream_item, &st);
  dt__arena_free(&st.tree);
  if (how == 1 && !st.rc) return 0;
  if (how == 1) {
    rc = st.rc;
  } else {
    if (st.items) { /* what the items before read: read again below */
      roll_back(m, &at, file);
      x = (mctx){m, file, NULL, {0}, err, 0};
      if (err) err->code = 0;
    }
    cJSON *docs = NULL;
    dt_arena tree = {0}; /* the parse tree, read once and dropped whole */
    rc = dt__doc_parse_in(&tree, name, buf, len, &docs, err);
    if (rc) {
      dt__arena_free(&tree);
      m->files.n--;
      dt__free(file);
      return rc;
    }
    size_t docno = 1;
    for (const cJSON *d = docs->child; d && !rc; d = d->next, docno++) rc = object(&x, d, docno, SIZE_MAX);
    dt__arena_free(&tree);
  }
  if (rc) {
    roll_back(m, &at, file);
    if (x.code == DT_ENOMEM || (err && err->code == DT_ENOMEM)) rc = DT_ENOMEM;
    if (rc == DT_ENOMEM && err && !err->msg[0]) mf_oom(&x);
    return rc;
  }
  return 0;
}

int dt_manifests_add_file(dt_manifests *m, const char *path, dt_error *err) {
  char *buf;
  size_t len;
  int rc = dt__read_file(path, &buf, &len, err);
  if (rc) return rc;
  rc = dt_manifests_add_buffer(m, strcmp(path, "-") == 0 ? "<stdin>" : path, buf, len, err);
  dt__free(buf);
  return rc;
}
