/*
** mf_pod.c: the readers of what runs: pods and their specs (requests, node
** selection, affinity, spread, ports), workloads, DaemonSets, runtime
** classes, unavailable offerings, nodes and NodeClaims, PodDisruptionBudgets,
** and the volumes and storage classes that place pods.
*/
#include "reader.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A Pod's container statuses by name (containerStatuses, then
** initContainerStatuses: of one name twice, the last, as Kubernetes' map of
** them keeps), and whether a resize is Infeasible (the first
** PodResizePending condition's reason), read once per pod. */
typedef struct cstatus {
  const char *name;
  const cJSON *o;
  where at;
  size_t seq;
} cstatus;

typedef struct pod_status {
  cstatus *v;
  size_t n;
  bool infeasible;
} pod_status;

static int cstatus_cmp(const void *a, const void *b) {
  const cstatus *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

static int pod_status_read(const cJSON *status, pod_status *ps) {
  static const char *const lists[] = {"containerStatuses", "initContainerStatuses"};
  size_t n = 0;
  for (int l = 0; l < 2; l++) n += (size_t)cJSON_GetArraySize(mf_get(status, lists[l]));
  if (n && !(ps->v = dt__malloc(n * sizeof *ps->v))) return DT_ENOMEM;
  for (int l = 0; l < 2; l++) {
    size_t i = 0;
    const cJSON *arr = mf_get(status, lists[l]);
    for (const cJSON *c = cJSON_IsArray(arr) ? arr->child : NULL; c; c = c->next, i++) {
      const char *name = mf_get_str(c, "name");
      if (name) ps->v[ps->n] = (cstatus){name, c, {"status", lists[l], i, ""}, ps->n}, ps->n++;
    }
  }
  if (ps->n > 1) qsort(ps->v, ps->n, sizeof *ps->v, cstatus_cmp);
  const cJSON *cond;
  cJSON_ArrayForEach(cond, mf_get(status, "conditions")) {
    const char *t = mf_get_str(cond, "type"), *why = mf_get_str(cond, "reason");
    if (t && !strcmp(t, "PodResizePending")) {
      ps->infeasible = why && !strcmp(why, "Infeasible");
      break;
    }
  }
  return 0;
}

/* The status of container name; NULL when none. */
static const cstatus *container_status(const pod_status *ps, const char *name) {
  size_t lo = 0, hi = ps->n;
  while (name && lo < hi) { /* past the last of that name */
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(ps->v[mid].name, name) <= 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return name && lo && !strcmp(ps->v[lo - 1].name, name) ? &ps->v[lo - 1] : NULL;
}

/* A container's requests as the scheduler counts a pod being resized in
** place (Kubernetes' resource helpers with status resources, which
** Karpenter's resources.Ceiling asks for): with a status that reports its
** resources, the most of each of the spec's requests (req), the resources
** the kubelet set (status.resources.requests) and those it admitted
** (allocatedResources); a resize the node cannot take (the PodResizePending
** condition, reason Infeasible) counts the status only. */
static int resized_requests(mctx *x, const pod_status *ps, const cJSON *c, dt_rlist *req) {
  const cstatus *st = container_status(ps, mf_get_str(c, "name"));
  const cJSON *res = st ? mf_get(st->o, "resources") : NULL;
  if (!res || cJSON_IsNull(res)) return 0;
  dt_rlist act = {0}, alloc = {0};
  where wa = st->at, wl = st->at;
  wa.tail = ".resources.requests";
  wl.tail = ".allocatedResources";
  int rc = mf_rlist_at(x, mf_get(res, "requests"), &wa, &act, true);
  if (!rc) rc = mf_rlist_at(x, mf_get(st->o, "allocatedResources"), &wl, &alloc, true);
  if (!rc && ps->infeasible) dt__rlist_free(req); /* the spec's ask is what cannot be had */
  for (size_t k = 0; k < act.n && !rc; k++)
    if (dt__rlist_add(req, act.v[k].name, act.v[k].milli, DT_RL_MAX)) rc = mf_oom(x);
  for (size_t k = 0; k < alloc.n && !rc; k++)
    if (dt__rlist_add(req, alloc.v[k].name, alloc.v[k].milli, DT_RL_MAX)) rc = mf_oom(x);
  dt__rlist_free(&act);
  dt__rlist_free(&alloc);
  return rc;
}

/* Effective requests of a pod spec (KEP-753 sidecars, init max, overhead);
** status, a Pod's, for containers being resized in place. */
static int pod_requests(mctx *x, const cJSON *spec, const cJSON *status, const char *path, dt_rlist *out) {
  dt_rlist sum = {0}, init_max = {0}, sidecars = {0};
  char f[300];
  pod_status ps = {0};
  int rc = status && pod_status_read(status, &ps) ? mf_oom(x) : 0;
  static const char *lists[] = {"containers", "initContainers"};
  for (int li = 0; li < 2 && !rc; li++) {
    const cJSON *cs = mf_get(spec, lists[li]);
    if (cs && !cJSON_IsArray(cs)) {
      dt__join(f, sizeof f, path, ".", lists[li]);
      rc = mf_bad(x, f, "expected a list");
      break;
    }
    size_t i = 0;
    for (const cJSON *c = cs ? cs->child : NULL; c && !rc; c = c->next, i++) {
      dt_rlist req = {0}, lim = {0};
      const cJSON *res = mf_get(c, "resources");
      where wr = {path, lists[li], i, ".resources.requests"}, wl = {path, lists[li], i, ".resources.limits"};
      rc = mf_rlist_at(x, mf_get(res, "requests"), &wr, &req, true);
      if (!rc) rc = mf_rlist_at(x, mf_get(res, "limits"), &wl, &lim, true);
      /* A limit without a request defaults the request, as the API server does. */
      for (size_t k = 0; !rc && k < lim.n; k++) {
        bool has = false;
        for (size_t q = 0; q < req.n; q++) has |= strcmp(req.v[q].name, lim.v[k].name) == 0;
        if (!has && dt__rlist_add(&req, lim.v[k].name, lim.v[k].milli, DT_RL_SET)) rc = mf_oom(x);
      }
      const char *rp = mf_get_str(c, "restartPolicy");
      bool sidecar = li == 1 && rp && strcmp(rp, "Always") == 0;
      if (!rc && ps.n && (li == 0 || sidecar)) rc = resized_requests(x, &ps, c, &req);
      for (size_t k = 0; !rc && k < req.n; k++) {
        const char *rn = req.v[k].name;
        int64_t v = req.v[k].milli;
        if (li == 0) {
          if (dt__rlist_add(&sum, rn, v, DT_RL_SUM)) rc = mf_oom(x);
        } else if (sidecar) {
          if (dt__rlist_add(&sidecars, rn, v, DT_RL_SUM)) rc = mf_oom(x);
        } else {
          if (dt__rlist_add(&init_max, rn, dt__qty_add(dt__rlist_get(&sidecars, rn), v), DT_RL_MAX)) rc = mf_oom(x);
        }
      }
      if (!rc && sidecar)
        for (size_t k = 0; k < sidecars.n && !rc; k++)
          if (dt__rlist_add(&init_max, sidecars.v[k].name, sidecars.v[k].milli, DT_RL_MAX)) rc = mf_oom(x);
      dt__rlist_free(&req);
      dt__rlist_free(&lim);
    }
  }
  if (!rc) {
    for (size_t k = 0; k < sidecars.n && !rc; k++)
      if (dt__rlist_add(&sum, sidecars.v[k].name, sidecars.v[k].milli, DT_RL_SUM)) rc = mf_oom(x);
    for (size_t k = 0; k < init_max.n && !rc; k++)
      if (dt__rlist_add(&sum, init_max.v[k].name, init_max.v[k].milli, DT_RL_MAX)) rc = mf_oom(x);
    /* Pod-level resources (spec.resources, Kubernetes 1.32+): where set,
    ** they are the pod's requests for those resources, whatever its
    ** containers ask; limits stand in for missing requests, as for a
    ** container. */
    const cJSON *pres = mf_get(spec, "resources");
    if (!rc && pres && !cJSON_IsNull(pres)) {
      dt_rlist preq = {0}, plim = {0};
      where wr = {path, NULL, 0, ".resources.requests"}, wl = {path, NULL, 0, ".resources.limits"};
      rc = mf_rlist_at(x, mf_get(pres, "requests"), &wr, &preq, true);
      if (!rc) rc = mf_rlist_at(x, mf_get(pres, "limits"), &wl, &plim, true);
      for (size_t k = 0; k < plim.n && !rc; k++)
        if (!dt__rlist_get(&preq, plim.v[k].name) && dt__rlist_add(&preq, plim.v[k].name, plim.v[k].milli, DT_RL_SET))
          rc = mf_oom(x);
      for (size_t k = 0; k < preq.n && !rc; k++)
        if (dt__rlist_add(&sum, preq.v[k].name, preq.v[k].milli, DT_RL_SET)) rc = mf_oom(x);
      dt__rlist_free(&preq);
      dt__rlist_free(&plim);
    }
    dt_rlist ovh = {0};
    where wo = {path, NULL, 0, ".overhead"};
    if (!rc) rc = mf_rlist_at(x, mf_get(spec, "overhead"), &wo, &ovh, true);
    for (size_t k = 0; k < ovh.n && !rc; k++)
      if (dt__rlist_add(&sum, ovh.v[k].name, ovh.v[k].milli, DT_RL_SUM)) rc = mf_oom(x);
    dt__rlist_free(&ovh);
    if (!rc && dt__rlist_add(&sum, "pods", 1000, DT_RL_SET)) rc = mf_oom(x);
    for (size_t k = 0; k < sum.n && !rc; k++) {
      if (!mf_request_absurd(sum.v[k].name, sum.v[k].milli)) continue;
      dt__join(f, sizeof f, path, " (total requests).", sum.v[k].name);
      rc = mf_check_request(x, f, sum.v[k].name, sum.v[k].milli);
    }
  }
  dt__rlist_free(&init_max);
  dt__rlist_free(&sidecars);
  dt__free(ps.v);
  if (rc) {
    dt__rlist_free(&sum);
    return rc;
  }
  *out = sum;
  return 0;
}

static int parse_strs(mctx *x, const cJSON *arr, const char *field, char ***out, size_t *n) {
  size_t cnt;
  int lr = mf_list_room(x, arr, field, "a list of strings", sizeof **out, (void **)out, &cnt);
  if (lr) return lr > 0 ? 0 : lr;
  for (const cJSON *c = arr->child; c; c = c->next) {
    if (!cJSON_IsString(c)) return mf_bad(x, field, "expected a list of strings");
    if (!((*out)[(*n)++] = dt__strdup(c->valuestring))) return mf_oom(x);
  }
  return 0;
}

/* matchLabels become In requirements; matchExpressions keep their operator. */
int mf_parse_selector(mctx *x, const cJSON *o, const char *field, dt_selector *sel) {
  if (!o || cJSON_IsNull(o)) return 0;
  if (!cJSON_IsObject(o)) return mf_bad(x, field, "expected a label selector");
  sel->present = true;
  const cJSON *ml = mf_get(o, "matchLabels"), *me = mf_get(o, "matchExpressions");
  char f[300], tmp[64];
  size_t n = (ml ? (size_t)cJSON_GetArraySize(ml) : 0);
  if (me && !cJSON_IsNull(me)) {
    dt__join(f, sizeof f, field, ".matchExpressions");
    if (mf_parse_mreqs(x, me, f, &sel->expr, false)) return mf_failed(x);
    for (size_t i = 0; i < sel->expr.n; i++)
      if (sel->expr.v[i].op > DT_OP_DOESNOTEXIST) {
        snprintf(f, sizeof f, "%s.matchExpressions[%zu].operator", field, i);
        return mf_bad(x, f, "label selectors take In, NotIn, Exists or DoesNotExist");
      }
  }
  if (!n) return 0;
  if (!cJSON_IsObject(ml)) {
    dt__join(f, sizeof f, field, ".matchLabels");
    return mf_bad(x, f, "expected a map of strings");
  }
  dt_mreq *nv = dt__realloc(sel->expr.v, (sel->expr.n + n) * sizeof *nv);
  if (!nv) return mf_oom(x);
  sel->expr.v = nv;
  for (const cJSON *c = ml->child; c; c = c->next) {
    const char *v = dt__scalar(c, tmp, sizeof tmp);
    dt__join(f, sizeof f, field, ".matchLabels.", c->string);
    if (!v) return mf_bad(x, f, "expected a string");
    dt_mreq *q = &sel->expr.v[sel->expr.n++];
    memset(q, 0, sizeof *q);
    q->op = DT_OP_IN;
    q->key = dt__strdup(c->string);
    q->vals = dt__calloc(1, sizeof *q->vals);
    if (!q->key || !q->vals || !(q->vals[0] = dt__strdup(v))) return mf_oom(x);
    q->n = 1;
  }
  return 0;
}

/* The status (a string) of an object's status.conditions entry of `type`,
** the last that has one; NULL none. *reason gets its reason (NULL none). */
const cJSON *mf_condition(const cJSON *o, const char *type) {
  const cJSON *cs = mf_get(mf_get(o, "status"), "conditions"), *found = NULL;
  for (const cJSON *c = cJSON_IsArray(cs) ? cs->child : NULL; c; c = c->next) {
    const char *t = mf_get_str(c, "type");
    if (t && mf_get_str(c, "status") && !strcmp(t, type)) found = c;
  }
  return found;
}

bool mf_not_ready(const cJSON *o, char *why, size_t n) {
  const cJSON *c = mf_condition(o, "Ready");
  const char *s = mf_get_str(c, "status"), *r = mf_get_str(c, "reason");
  if (!s || !strcmp(s, "True")) return false;
  snprintf(why, n, "status Ready=%s%s%s", s, r && *r ? ": " : "", r && *r ? r : "");
  return true;
}

static const char *condition(const cJSON *o, const char *type, const char **reason) {
  const cJSON *c = mf_condition(o, type);
  if (reason) *reason = mf_get_str(c, "reason");
  return mf_get_str(c, "status");
}

/* A pod term's namespaceSelector, as Kubernetes reads it (its namespaces
** join the term's list): {} selects every namespace; one that selects by
** kubernetes.io/metadata.name (matchLabels, or In) names its namespaces.
** Any other selects by the labels of Namespace objects: kept, and matched
** against the input's when the plan is made. */
static int parse_ns_selector(mctx *x, const cJSON *sel, const char *field, dt_podterm *d) {
  static const char *const name_key = DT_L_NS_NAME;
  if (!sel || cJSON_IsNull(sel)) return 0;
  if (!cJSON_IsObject(sel)) return mf_bad(x, field, "expected a label selector");
  const cJSON *ml = mf_get(sel, "matchLabels"), *me = mf_get(sel, "matchExpressions");
  size_t nml = cJSON_IsObject(ml) ? (size_t)cJSON_GetArraySize(ml) : 0;
  size_t nme = cJSON_IsArray(me) ? (size_t)cJSON_GetArraySize(me) : 0;
  if (!nml && !nme) {
    d->all_ns = true;
    return 0;
  }
  const char *one = nml == 1 && !nme ? mf_get_str(ml, name_key) : NULL;
  const cJSON *in = NULL;
  if (!nml && nme == 1) {
    const char *k = mf_get_str(me->child, "key"), *op = mf_get_str(me->child, "operator");
    if (k && op && !strcmp(k, name_key) && !strcmp(op, "In") && cJSON_IsArray(mf_get(me->child, "values")))
      in = mf_get(me->child, "values");
  }
  if (!one && !in) return mf_parse_selector(x, sel, field, &d->ns_sel);
  size_t add = one ? 1 : (size_t)cJSON_GetArraySize(in);
  char **nv = dt__realloc(d->ns, (d->nns + add + 1) * sizeof *nv);
  if (!nv) return mf_oom(x);
  d->ns = nv;
  if (one) {
    if (!(d->ns[d->nns] = dt__strdup(one))) return mf_oom(x);
    d->nns++;
    return 0;
  }
  const cJSON *v;
  cJSON_ArrayForEach(v, in) {
    if (!cJSON_IsString(v)) return mf_bad(x, field, "expected namespace names as strings");
    if (!(d->ns[d->nns] = dt__strdup(v->valuestring))) return mf_oom(x);
    d->nns++;
  }
  return 0;
}

static int parse_podterms(mctx *x, const cJSON *arr, const char *field, bool weighted, dt_podterm **out, size_t *n) {
  size_t cnt, i = 0;
  int lr = mf_list_room(x, arr, field, "a list", sizeof **out, (void **)out, &cnt);
  if (lr) return lr > 0 ? 0 : lr;
  char f[400];
  for (const cJSON *t = arr->child; t; t = t->next, i++) {
    dt_podterm *d = &(*out)[(*n)++];
    const cJSON *term = t;
    if (weighted) {
      const cJSON *w = mf_get(t, "weight");
      snprintf(f, sizeof f, "%s[%zu].weight", field, i);
      if (!mf_is_int_in(w, 1, 100)) return mf_bad(x, f, "expected an integer from 1 to 100");
      d->weight = (int)w->valuedouble;
      term = mf_get(t, "podAffinityTerm");
      snprintf(f, sizeof f, "%s[%zu].podAffinityTerm", field, i);
      if (!cJSON_IsObject(term)) return mf_bad(x, f, "missing");
    } else {
      snprintf(f, sizeof f, "%s[%zu]", field, i);
    }
    char g[500];
    const char *key = mf_get_str(term, "topologyKey");
    dt__join(g, sizeof g, f, ".topologyKey");
    if (!key || !*key) return mf_bad(x, g, "missing");
    if (!(d->key = dt__strdup(key))) return mf_oom(x);
    dt__join(g, sizeof g, f, ".labelSelector");
    if (mf_parse_selector(x, mf_get(term, "labelSelector"), g, &d->sel)) return mf_failed(x);
    dt__join(g, sizeof g, f, ".namespaces");
    if (parse_strs(x, mf_get(term, "namespaces"), g, &d->ns, &d->nns)) return mf_failed(x);
    dt__join(g, sizeof g, f, ".namespaceSelector");
    if (parse_ns_selector(x, mf_get(term, "namespaceSelector"), g, d)) return mf_failed(x);
  }
  return 0;
}

int mf_parse_spreads(mctx *x, const cJSON *arr, const char *field, dt_podspec *p) {
  size_t cnt, i = 0;
  int lr = mf_list_room(x, arr, field, "a list", sizeof *p->spread, (void **)&p->spread, &cnt);
  if (lr) return lr > 0 ? 0 : lr;
  char f[400];
  for (const cJSON *t = arr->child; t; t = t->next, i++) {
    dt_spread *d = &p->spread[p->nspread++];
    const cJSON *ms = mf_get(t, "maxSkew"), *md = mf_get(t, "minDomains");
    const char *key = mf_get_str(t, "topologyKey"), *wu = mf_get_str(t, "whenUnsatisfiable");
    snprintf(f, sizeof f, "%s[%zu].maxSkew", field, i);
    /* int32 fields: the API server refuses more */
    if (!mf_is_int_in(ms, 1, INT32_MAX)) return mf_bad(x, f, "expected an integer from 1 to 2147483647");
    d->max_skew = ms->valuedouble > 1e6 ? 1000000 : (int)ms->valuedouble;
    if (md && !cJSON_IsNull(md)) {
      snprintf(f, sizeof f, "%s[%zu].minDomains", field, i);
      if (!mf_is_int_in(md, 1, INT32_MAX)) return mf_bad(x, f, "expected an integer from 1 to 2147483647");
      d->min_domains = md->valuedouble > 1e6 ? 1000000 : (int)md->valuedouble;
    }
    snprintf(f, sizeof f, "%s[%zu].topologyKey", field, i);
    if (!key || !*key) return mf_bad(x, f, "missing");
    snprintf(f, sizeof f, "%s[%zu].whenUnsatisfiable", field, i);
    if (wu && strcmp(wu, "DoNotSchedule") && strcmp(wu, "ScheduleAnyway"))
      return mf_bad(x, f, "expected DoNotSchedule or ScheduleAnyway");
    d->anyway = wu && !strcmp(wu, "ScheduleAnyway");
    const char *nap = mf_get_str(t, "nodeAffinityPolicy"), *ntp = mf_get_str(t, "nodeTaintsPolicy");
    snprintf(f, sizeof f, "%s[%zu].nodeAffinityPolicy", field, i);
    if (nap && strcmp(nap, "Honor") && strcmp(nap, "Ignore")) return mf_bad(x, f, "expected Honor or Ignore");
    snprintf(f, sizeof f, "%s[%zu].nodeTaintsPolicy", field, i);
    if (ntp && strcmp(ntp, "Honor") && strcmp(ntp, "Ignore")) return mf_bad(x, f, "expected Honor or Ignore");
    d->affinity_ignore = nap && !strcmp(nap, "Ignore");
    d->taints_honor = ntp && !strcmp(ntp, "Honor");
    if (!(d->key = dt__strdup(key))) return mf_oom(x);
    snprintf(f, sizeof f, "%s[%zu].labelSelector", field, i);
    if (mf_parse_selector(x, mf_get(t, "labelSelector"), f, &d->sel)) return mf_failed(x);
    snprintf(f, sizeof f, "%s[%zu].matchLabelKeys", field, i);
    if (parse_strs(x, mf_get(t, "matchLabelKeys"), f, &d->match_label_keys, &d->nmlk)) return mf_failed(x);
  }
  return 0;
}

static int parse_ports(mctx *x, const cJSON *spec, const char *path, dt_podspec *p) {
  static const char *lists[] = {"containers", "initContainers"};
  char f[400];
  for (int li = 0; li < 2; li++) {
    const cJSON *cs = mf_get(spec, lists[li]);
    size_t ci = 0;
    for (const cJSON *c = cJSON_IsArray(cs) ? cs->child : NULL; c; c = c->next, ci++) {
      /* An init container's ports are held only while it runs, before the
      ** pod's containers start; a sidecar's (restartPolicy: Always) stay. */
      const char *rp = li == 1 ? mf_get_str(c, "restartPolicy") : NULL;
      if (li == 1 && !(rp && !strcmp(rp, "Always"))) continue;
      const cJSON *ports = mf_get(c, "ports");
      size_t pi = 0;
      for (const cJSON *pt = cJSON_IsArray(ports) ? ports->child : NULL; pt; pt = pt->next, pi++) {
        const cJSON *hp = mf_get(pt, "hostPort");
        if (!hp || cJSON_IsNull(hp)) continue;
        snprintf(f, sizeof f, "%s.%s[%zu].ports[%zu].hostPort", path, lists[li], ci, pi);
        if (!cJSON_IsNumber(hp) || hp->valuedouble < 0 || hp->valuedouble > 65535)
          return mf_bad(x, f, "expected a port number");
        if (hp->valuedouble == 0) continue;
        dt_hostport *np = dt__realloc(p->ports, (p->nports + 1) * sizeof *np);
        if (!np) return mf_oom(x);
        p->ports = np;
        dt_hostport *d = &p->ports[p->nports++];
        memset(d, 0, sizeof *d);
        d->port = (int)hp->valuedouble;
        const char *proto = mf_get_str(pt, "protocol"), *ip = mf_get_str(pt, "hostIP");
        dt__join(d->proto, sizeof d->proto, proto ? proto : "TCP");
        /* "::" is unspecified too: every address, as 0.0.0.0 */
        if (!(d->ip = dt__strdup(ip && *ip && strcmp(ip, "::") ? ip : "0.0.0.0"))) return mf_oom(x);
      }
    }
  }
  return 0;
}

/* matchFields (every DaemonSet pod has one): metadata.name is the only field
** Kubernetes allows, and a node's name is its kubernetes.io/hostname label,
** so each becomes a hostname requirement of the same term. */
static int match_fields(mctx *x, const cJSON *arr, const char *field, dt_mreqs *term) {
  dt_mreqs mf = {0};
  if (mf_parse_mreqs(x, arr, field, &mf, false)) {
    mf_mreqs_free(&mf);
    return mf_failed(x);
  }
  dt_mreq *nv = mf.n ? dt__realloc(term->v, (term->n + mf.n) * sizeof *nv) : term->v;
  if (mf.n && !nv) {
    mf_mreqs_free(&mf);
    return mf_oom(x);
  }
  term->v = nv;
  for (size_t i = 0; i < mf.n; i++) {
    if (strcmp(mf.v[i].key, "metadata.name")) {
      char f[400], key[200];
      snprintf(f, sizeof f, "%s[%zu].key", field, i);
      dt__join(key, sizeof key, mf.v[i].key);
      for (size_t k = i; k < mf.n; k++) term->v[term->n++] = mf.v[k]; /* freed with the term */
      dt__free(mf.v);
      return mf_bad(x, f, "matchFields supports metadata.name only (as Kubernetes), got \"%s\"", key);
    }
    char *host = dt__strdup(DT_L_HOSTNAME);
    if (!host) {
      for (size_t k = i; k < mf.n; k++) term->v[term->n++] = mf.v[k];
      dt__free(mf.v);
      return mf_oom(x);
    }
    dt__free(mf.v[i].key);
    mf.v[i].key = host;
    term->v[term->n++] = mf.v[i];
  }
  dt__free(mf.v);
  return 0;
}

/* The elements of list field f (v, an array), zeroed, one of size each;
** NULL with the error recorded when v is not a list or out of memory. */
static void *list_alloc(mctx *x, const cJSON *v, const char *f, size_t size) {
  if (!cJSON_IsArray(v)) {
    mf_bad(x, f, "expected a list");
    return NULL;
  }
  size_t n = (size_t)cJSON_GetArraySize(v);
  void *e = dt__calloc(n ? n : 1, size);
  if (!e) mf_oom(x);
  return e;
}

/* A pod's scheduling terms within dovetail's limit: relaxation steps
** through at most DT_MAX_TERMS of each kind (a pod past it could never
** relax its last). */
static int terms_limit(mctx *x, const char *path, const dt_podspec *p) {
  const struct {
    size_t n;
    const char *f;
  } k[] = {{p->nterms, ".affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"},
           {p->npref, ".affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"},
           {p->npaff, ".affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution"},
           {p->npanti, ".affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution"},
           {p->nspread, ".topologySpreadConstraints"}};
  char f[400];
  for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
    dt__join(f, sizeof f, path, k[i].f);
    if (k[i].n > DT_MAX_TERMS) return mf_bad(x, f, "%zu terms; dovetail takes at most %d", k[i].n, DT_MAX_TERMS);
  }
  return 0;
}

int mf_podspec(mctx *x, const cJSON *tmpl, const char *path, dt_podspec *p) {
  const cJSON *spec = mf_get(tmpl, "spec");
  char f[300];
  if (!cJSON_IsObject(spec)) {
    dt__join(f, sizeof f, path);
    return mf_bad(x, f, "missing or not an object");
  }
  const cJSON *status = mf_get(tmpl, "status"); /* a Pod's; a template has none */
  if (pod_requests(x, spec, cJSON_IsObject(status) ? status : NULL, path, &p->requests)) return mf_failed(x);
  /* Dynamic Resource Allocation, as Karpenter's HasDRARequirements: claims
  ** of the pod, or of a container or init container */
  p->dra = cJSON_GetArraySize(mf_get(spec, "resourceClaims")) > 0;
  static const char *const lists[] = {"containers", "initContainers"};
  for (int l = 0; l < 2 && !p->dra; l++) {
    const cJSON *c;
    cJSON_ArrayForEach(c, mf_get(spec, lists[l])) p->dra |=
        cJSON_GetArraySize(mf_get(mf_get(c, "resources"), "claims")) > 0;
  }
  /* A Pod's generic ephemeral volume is the claim <pod>-<volume> the
  ** ephemeral controller makes for it (Karpenter's GetPersistentVolumeClaim);
  ** a workload's template has no pod yet, and so no claim. */
  const char *kind = mf_get_str(tmpl, "kind"), *pod = mf_get_str(mf_get(tmpl, "metadata"), "name");
  if (!kind || strcmp(kind, "Pod")) pod = NULL;
  const cJSON *vol;
  cJSON_ArrayForEach(vol, mf_get(spec, "volumes")) {
    const char *cn = mf_get_str(mf_get(vol, "persistentVolumeClaim"), "claimName"), *vn = mf_get_str(vol, "name");
    char eph[600];
    const cJSON *ephemeral = mf_get(vol, "ephemeral");
    if (!cn && pod && vn && cJSON_IsObject(ephemeral)) {
      dt__join(eph, sizeof eph, pod, "-", vn);
      cn = eph;
    } else if (!cn && !pod && vn && cJSON_IsObject(ephemeral)) {
      /* a workload's: its pods' claims are made from the volume's template, of its class */
      const cJSON *cls = mf_get(mf_get(mf_get(ephemeral, "volumeClaimTemplate"), "spec"), "storageClassName");
      dt_vct *nv = dt__realloc(p->vct, (p->nvct + 1) * sizeof *nv);
      if (!nv) return mf_oom(x);
      p->vct = nv;
      dt_vct *v = &p->vct[p->nvct++];
      memset(v, 0, sizeof *v);
      v->ephemeral = true;
      v->class_given = cJSON_IsString(cls);
      if (!(v->name = dt__strdup(vn)) || (v->class_given && !(v->cls = dt__strdup(cls->valuestring)))) return mf_oom(x);
    }
    if (!cn) continue;
    char **nv = dt__realloc(p->pvcs, (p->npvcs + 1) * sizeof *nv);
    if (!nv) return mf_oom(x);
    p->pvcs = nv;
    if (!(p->pvcs[p->npvcs] = dt__strdup(cn))) return mf_oom(x);
    p->npvcs++;
  }
  /* field names are written out only for fields that are there */
  if (mf_get(spec, "nodeSelector")) {
    dt__join(f, sizeof f, path, ".nodeSelector");
    if (mf_parse_kvs(x, mf_get(spec, "nodeSelector"), f, &p->node_selector)) return mf_failed(x);
  }
  if (mf_get(spec, "tolerations")) {
    dt__join(f, sizeof f, path, ".tolerations");
    if (mf_parse_tolerations(x, mf_get(spec, "tolerations"), f, p)) return mf_failed(x);
  }
  const cJSON *terms =
      mf_get(mf_get(mf_get(mf_get(spec, "affinity"), "nodeAffinity"), "requiredDuringSchedulingIgnoredDuringExecution"),
             "nodeSelectorTerms");
  if (terms && !cJSON_IsNull(terms)) {
    dt__join(f, sizeof f, path,
             ".affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms");
    size_t i = 0;
    if (!(p->terms = list_alloc(x, terms, f, sizeof *p->terms))) return mf_failed(x);
    for (const cJSON *t = terms->child; t; t = t->next, i++) {
      char g[400];
      snprintf(g, sizeof g, "%s[%zu].matchExpressions", f, i);
      p->nterms++;
      if (mf_parse_mreqs(x, mf_get(t, "matchExpressions"), g, &p->terms[i], false)) return mf_failed(x);
      snprintf(g, sizeof g, "%s[%zu].matchFields", f, i);
      if (match_fields(x, mf_get(t, "matchFields"), g, &p->terms[i])) return mf_failed(x);
    }
  }
  const cJSON *na = mf_get(mf_get(spec, "affinity"), "nodeAffinity");
  const cJSON *pref = mf_get(na, "preferredDuringSchedulingIgnoredDuringExecution");
  if (pref && !cJSON_IsNull(pref)) {
    dt__join(f, sizeof f, path, ".affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution");
    size_t i = 0;
    if (!(p->pref = list_alloc(x, pref, f, sizeof *p->pref))) return mf_failed(x);
    for (const cJSON *t = pref->child; t; t = t->next, i++) {
      char g[500];
      const cJSON *w = mf_get(t, "weight");
      snprintf(g, sizeof g, "%s[%zu].weight", f, i);
      if (!mf_is_int_in(w, 1, 100)) return mf_bad(x, g, "expected an integer from 1 to 100");
      p->pref[i].weight = (int)w->valuedouble;
      p->npref++;
      snprintf(g, sizeof g, "%s[%zu].preference.matchExpressions", f, i);
      if (mf_parse_mreqs(x, mf_get(mf_get(t, "preference"), "matchExpressions"), g, &p->pref[i].reqs, false))
        return mf_failed(x);
    }
  }
  const cJSON *aff = mf_get(mf_get(spec, "affinity"), "podAffinity");
  const cJSON *anti = mf_get(mf_get(spec, "affinity"), "podAntiAffinity");
  char g[400];
  if (aff || anti) {
    dt__join(g, sizeof g, path, ".affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution");
    if (parse_podterms(x, mf_get(aff, "requiredDuringSchedulingIgnoredDuringExecution"), g, false, &p->aff, &p->naff))
      return mf_failed(x);
    dt__join(g, sizeof g, path, ".affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution");
    if (parse_podterms(x, mf_get(aff, "preferredDuringSchedulingIgnoredDuringExecution"), g, true, &p->paff, &p->npaff))
      return mf_failed(x);
    dt__join(g, sizeof g, path, ".affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution");
    if (parse_podterms(x, mf_get(anti, "requiredDuringSchedulingIgnoredDuringExecution"), g, false, &p->anti,
                       &p->nanti))
      return mf_failed(x);
    dt__join(g, sizeof g, path, ".affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution");
    if (parse_podterms(x, mf_get(anti, "preferredDuringSchedulingIgnoredDuringExecution"), g, true, &p->panti,
                       &p->npanti))
      return mf_failed(x);
  }
  if (mf_get(spec, "topologySpreadConstraints")) {
    dt__join(g, sizeof g, path, ".topologySpreadConstraints");
    if (mf_parse_spreads(x, mf_get(spec, "topologySpreadConstraints"), g, p)) return mf_failed(x);
  }
  if (terms_limit(x, path, p)) return mf_failed(x);
  if (parse_ports(x, spec, path, p)) return mf_failed(x);
  const char *rc = mf_get_str(spec, "runtimeClassName");
  if (rc && *rc && !(p->runtime_class = dt__strdup(rc))) return mf_oom(x);
  const cJSON *ovh = mf_get(spec, "overhead");
  p->has_overhead = ovh && cJSON_IsObject(ovh) && ovh->child;
  const char *nn = mf_get_str(spec, "nodeName");
  if (nn && *nn && !(p->node_name = dt__strdup(nn))) return mf_oom(x);
  return 0;
}

/* What disruption needs of a bound pod: do-not-disrupt ("true" or a
** duration from the pod's start), deletion cost, priority, DaemonSet owner. */
static int pod_disruption(mctx *x, const cJSON *o, dt_podspec *p) {
  const cJSON *md = mf_get(o, "metadata"), *ann = mf_get(md, "annotations");
  const char *dnd = mf_get_str(ann, "karpenter.sh/do-not-disrupt");
  if (dnd && !strcmp(dnd, "true")) {
    p->dnd = true;
  } else if (dnd && *dnd) {
    int64_t d, start = p->created;
    const char *ts = mf_get_str(mf_get(o, "status"), "startTime");
    if (ts) dt_time_parse(ts, &start, NULL);
    if (dt__duration_parse(dnd, &d))
      dt__buf_printf(&x->m->notes,
                     "%s: %s: metadata.annotations.karpenter.sh/do-not-disrupt: \"%s\" is neither \"true\" "
                     "nor a duration; ignored (as Karpenter)\n",
                     x->file, x->obj, dnd);
    else
      p->dnd_until = start + d;
  }
  const char *dc = mf_get_str(ann, "controller.kubernetes.io/pod-deletion-cost");
  if (dc) {
    char *end;
    long long v = strtoll(dc, &end, 10);
    if (*end || end == dc)
      return mf_bad(x, "metadata.annotations.controller.kubernetes.io/pod-deletion-cost", "expected an integer");
    p->deletion_cost = v;
  }
  const cJSON *pr = mf_get(mf_get(o, "spec"), "priority");
  if (cJSON_IsNumber(pr)) p->priority = dt__to_i64(pr->valuedouble);
  const cJSON *owners = mf_get(md, "ownerReferences");
  for (const cJSON *c = cJSON_IsArray(owners) ? owners->child : NULL; c; c = c->next) {
    const char *k = mf_get_str(c, "kind"), *on = mf_get_str(c, "name");
    if (k && on && cJSON_IsTrue(mf_get(c, "controller")) && !p->controller) {
      char ctl[600];
      dt__join(ctl, sizeof ctl, k, "/", on);
      if (!(p->controller = dt__strdup(ctl))) return mf_oom(x);
    }
    if (k && !strcmp(k, "DaemonSet")) p->daemon = true;
    if (k && !strcmp(k, "StatefulSet")) p->sts = true;
    if (k && !strcmp(k, "ReplicaSet")) p->rs = true;
    if (k && !strcmp(k, "Node")) p->mirror = true;
  }
  const cJSON *mirror = mf_get(ann, "kubernetes.io/config.mirror");
  if (mirror) p->daemon = p->mirror = true; /* static pods stay with their node */
  const char *ready = condition(o, "Ready", NULL);
  p->unready = ready && !strcmp(ready, "False"); /* as Karpenter: Unknown is not unhealthy */
  return 0;
}

/* Pods of all inputs together stay within DT_MAX_PODS, so a few small
** workloads cannot ask for gigabytes. */
static int count_pods(mctx *x, int64_t n, const char *field) {
  if (x->m->npods + n > DT_MAX_PODS)
    return mf_bad(x, field, "%lld pods in all inputs together would exceed %d (the limit on pods)",
                  (long long)(x->m->npods + n), DT_MAX_PODS);
  x->m->npods += n;
  return 0;
}

int mf_pod(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (mf_meta(x, o, &ns, &name, true) || mf_check_duplicate(x, ns, name)) return mf_failed(x);
  const char *phase = mf_get_str(mf_get(o, "status"), "phase");
  if (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))) {
    if (!mf_get_str(mf_get(o, "spec"), "nodeName")) /* on a node it holds nothing: said only when it waited for one */
      dt__buf_printf(&x->m->notes, "%s: %s: finished (%s), not provisioned (as Karpenter)\n", x->file, x->obj, phase);
    return 0;
  }
  /* A pod without a node is planned only when Karpenter's provisioner would
  ** plan it: not gated, not nominated to a node by the kube-scheduler, not
  ** being deleted, not a DaemonSet's or a Node's (those come with their node). */
  const cJSON *spec = mf_get(o, "spec"), *md = mf_get(o, "metadata");
  if (!mf_get_str(spec, "nodeName")) {
    const cJSON *gates = mf_get(spec, "schedulingGates");
    const char *skip = cJSON_GetArraySize(gates) > 0                          ? "scheduling-gated"
                       : mf_get_str(mf_get(o, "status"), "nominatedNodeName") ? "nominated to a node"
                       : mf_get_str(md, "deletionTimestamp")                  ? "being deleted"
                                                                              : NULL;
    /* Another scheduler's pod (Fargate's, a batch scheduler's) is provisioned
    ** only once a scheduler has marked it Unschedulable, as Karpenter plans
    ** only pods whose PodScheduled condition says so. */
    const char *sn = mf_get_str(spec, "schedulerName");
    if (!skip && sn && *sn && strcmp(sn, "default-scheduler")) {
      const char *why, *scheduled = condition(o, "PodScheduled", &why);
      if (!scheduled || strcmp(scheduled, "False") || !why || strcmp(why, "Unschedulable")) {
        dt__buf_printf(&x->m->notes,
                       "%s: %s: spec.schedulerName %s, which has not marked it Unschedulable, not provisioned (as "
                       "Karpenter)\n",
                       x->file, x->obj, sn);
        return 0;
      }
    }
    const cJSON *ow;
    cJSON_ArrayForEach(ow, mf_get(md, "ownerReferences")) {
      const char *k = mf_get_str(ow, "kind");
      if (!skip && k && (!strcmp(k, "DaemonSet") || !strcmp(k, "Node"))) skip = "owned by a DaemonSet or a Node";
    }
    if (skip) {
      dt__buf_printf(&x->m->notes, "%s: %s: %s, not provisioned (as Karpenter)\n", x->file, x->obj, skip);
      return 0;
    }
  }
  dt_podspec p = {0};
  p.count = 1;
  p.file = (char *)x->file;
  p.seq = x->m->seq++;
  p.created = mf_created_at(o);
  /* a bound pod being deleted still holds its node's room; its ReplicaSet
  ** (controller.FilterActivePods) no longer counts it and makes a new one */
  p.terminating = mf_get_str(md, "deletionTimestamp") != NULL;
  if (!(p.ns = dt__strdup(ns)) || !(p.name = dt__strdup(name))) goto nomem;
  if (mf_parse_kvs(x, mf_get(mf_get(o, "metadata"), "labels"), "metadata.labels", &p.labels) ||
      mf_podspec(x, o, "spec", &p) || pod_disruption(x, o, &p) || count_pods(x, 1, "metadata.name"))
    goto fail;
  if (dt__vec_push(&x->m->pods, p)) goto nomem;
  return 0;
nomem:
  mf_oom(x);
fail:
  mf_pod_free(&p);
  return mf_failed(x);
}

/* A workload's spec field not among its kind's, but within two edits of one
** (spec.replica): refused with the field meant, as kubectl's strict field
** validation refuses it; a field far from all (one a newer Kubernetes adds)
** is left alone. */
static const char *const k_deploy_fields[] = {"replicas",
                                              "selector",
                                              "template",
                                              "strategy",
                                              "minReadySeconds",
                                              "revisionHistoryLimit",
                                              "paused",
                                              "progressDeadlineSeconds",
                                              NULL};
static const char *const k_rs_fields[] = {"replicas", "selector", "template", "minReadySeconds", NULL};
static const char *const k_sts_fields[] = {"replicas",        "selector",
                                           "template",        "volumeClaimTemplates",
                                           "serviceName",     "podManagementPolicy",
                                           "updateStrategy",  "revisionHistoryLimit",
                                           "minReadySeconds", "persistentVolumeClaimRetentionPolicy",
                                           "ordinals",        NULL};
static const char *const k_ds_fields[] = {
    "selector", "template", "updateStrategy", "minReadySeconds", "revisionHistoryLimit", NULL};

static int workload_typo(mctx *x, const cJSON *spec) {
  const char *const *fields = !strcmp(x->kind, "Deployment")    ? k_deploy_fields
                              : !strcmp(x->kind, "ReplicaSet")  ? k_rs_fields
                              : !strcmp(x->kind, "StatefulSet") ? k_sts_fields
                              : !strcmp(x->kind, "DaemonSet")   ? k_ds_fields
                                                                : NULL;
  const cJSON *c;
  if (!fields) return 0;
  cJSON_ArrayForEach(c, spec) {
    const char *near = mf_one_of(c->string, fields) ? NULL : mf_nearest(c->string, fields, 2);
    if (near) {
      char f[300];
      dt__join(f, sizeof f, "spec.", c->string);
      return mf_bad(x, f, "unknown field of a %s (did you mean %s?)", x->kind, near);
    }
  }
  return 0;
}

/* A StatefulSet's replicas: their first ordinal (spec.ordinals.start) and
** the claims each has of its own (spec.volumeClaimTemplates). A volume of
** the pod template named as a claim template is the template's claim, as
** the StatefulSet controller replaces it (updateStorage): the claim it named
** is none of the replicas'. */
static int sts_identity(mctx *x, const cJSON *spec, dt_podspec *p) {
  const cJSON *ords = mf_get(spec, "ordinals");
  if (ords && !cJSON_IsNull(ords) && !cJSON_IsObject(ords)) return mf_bad(x, "spec.ordinals", "expected an object");
  const cJSON *start = mf_get(ords, "start");
  if (start && !cJSON_IsNull(start)) {
    if (!mf_is_int_in(start, 0, INT32_MAX))
      return mf_bad(x, "spec.ordinals.start", "expected an integer from 0 to %d", INT32_MAX);
    p->ordinal_base = (int64_t)start->valuedouble;
  }
  const cJSON *vcts = mf_get(spec, "volumeClaimTemplates");
  if (vcts && !cJSON_IsNull(vcts) && !cJSON_IsArray(vcts))
    return mf_bad(x, "spec.volumeClaimTemplates", "expected a list of PersistentVolumeClaims");
  size_t i = 0, n = (size_t)cJSON_GetArraySize(vcts);
  if (n) { /* after the template's ephemeral volumes */
    dt_vct *nv = dt__realloc(p->vct, (p->nvct + n) * sizeof *nv);
    if (!nv) return mf_oom(x);
    p->vct = nv;
  }
  for (const cJSON *t = n ? vcts->child : NULL; t; t = t->next, i++) {
    char f[120];
    snprintf(f, sizeof f, "spec.volumeClaimTemplates[%zu]", i);
    if (!cJSON_IsObject(t)) return mf_bad(x, f, "expected an object");
    const cJSON *md = mf_get(t, "metadata"), *nm = mf_get(md, "name"), *ts = mf_get(t, "spec");
    snprintf(f, sizeof f, "spec.volumeClaimTemplates[%zu].metadata.name", i);
    if (!nm || cJSON_IsNull(nm)) return mf_bad(x, f, "missing");
    if (!cJSON_IsString(nm) || !*nm->valuestring) return mf_bad(x, f, "expected a non-empty string");
    const char *name = nm->valuestring;
    for (size_t k = 0, at = 0; k < p->nvct; k++, at += !p->vct[k - 1].ephemeral)
      if (!p->vct[k].ephemeral && !strcmp(p->vct[k].name, name))
        return mf_bad(x, f, "%s is the name of template %zu too", name, at);
    snprintf(f, sizeof f, "spec.volumeClaimTemplates[%zu].spec", i);
    if (ts && !cJSON_IsNull(ts) && !cJSON_IsObject(ts)) return mf_bad(x, f, "expected an object");
    const cJSON *cls = mf_get(ts, "storageClassName");
    if (cls && !cJSON_IsNull(cls) && !cJSON_IsString(cls)) {
      snprintf(f, sizeof f, "spec.volumeClaimTemplates[%zu].spec.storageClassName", i);
      return mf_bad(x, f, "expected a string");
    }
    dt_vct *v = &p->vct[p->nvct++];
    memset(v, 0, sizeof *v);
    v->class_given = cJSON_IsString(cls);
    if (!(v->name = dt__strdup(name)) || (v->class_given && !(v->cls = dt__strdup(cls->valuestring)))) return mf_oom(x);
  }
  const cJSON *vol;
  cJSON_ArrayForEach(vol, mf_get(mf_get(mf_get(spec, "template"), "spec"), "volumes")) {
    const char *vn = mf_get_str(vol, "name"), *cn = mf_get_str(mf_get(vol, "persistentVolumeClaim"), "claimName");
    bool templated = false;
    for (size_t k = 0; vn && cn && k < p->nvct && !templated; k++)
      templated = !p->vct[k].ephemeral && !strcmp(p->vct[k].name, vn);
    for (size_t k = 0; templated && k < p->npvcs; k++)
      if (!strcmp(p->pvcs[k], cn)) { /* that volume's claim, once */
        dt__free(p->pvcs[k]);
        memmove(p->pvcs + k, p->pvcs + k + 1, (p->npvcs - k - 1) * sizeof *p->pvcs);
        p->npvcs--;
        break;
      }
  }
  return 0;
}

int mf_workload(mctx *x, const cJSON *o, bool daemonset) {
  const char *ns, *name;
  if (mf_meta(x, o, &ns, &name, true) || mf_check_duplicate(x, ns, name)) return mf_failed(x);
  const cJSON *spec = mf_get(o, "spec");
  if (cJSON_IsObject(spec) && workload_typo(x, spec)) return mf_failed(x);
  const cJSON *r = daemonset ? NULL : mf_get(spec, "replicas");
  int64_t replicas = 1;
  if (r && !cJSON_IsNull(r)) {
    if (!mf_is_int_in(r, 0, MAX_REPLICAS))
      return mf_bad(x, "spec.replicas", "expected an integer from 0 to %d", MAX_REPLICAS);
    replicas = (int64_t)r->valuedouble;
  }
  const cJSON *tmpl = mf_get(spec, "template");
  if (!cJSON_IsObject(tmpl)) return mf_bad(x, "spec.template", "missing or not an object");
  dt_podspec p = {0};
  p.count = replicas;
  p.file = (char *)x->file;
  p.seq = x->m->seq++;
  p.created = mf_created_at(o);
  char owner[600];
  dt__join(owner, sizeof owner, x->kind, "/", name);
  if (!(p.ns = dt__strdup(ns)) || !(p.name = dt__strdup(name)) || !(p.owner = dt__strdup(owner))) goto nomem;
  if (mf_parse_kvs(x, mf_get(mf_get(tmpl, "metadata"), "labels"), "spec.template.metadata.labels", &p.labels) ||
      mf_podspec(x, tmpl, "spec.template.spec", &p) ||
      mf_parse_selector(x, mf_get(spec, "selector"), "spec.selector", &p.sel))
    goto fail;
  /* the API server refuses a workload whose pods its selector would not own,
  ** and an empty selector (which would own every pod of the namespace) */
  const cJSON *sj = mf_get(spec, "selector");
  if (cJSON_IsObject(sj) && !p.sel.expr.n) {
    mf_bad(x, "spec.selector", "empty: it would select every pod (the API server refuses such a %s)", x->kind);
    goto fail;
  }
  if (p.sel.present && !dt__selector_match(&p.sel, p.labels.v, p.labels.n)) {
    mf_bad(x, "spec.template.metadata.labels", "do not match spec.selector (the API server refuses such a %s)",
           x->kind);
    goto fail;
  }
  if (!strcmp(x->kind, "StatefulSet") && sts_identity(x, spec, &p)) goto fail;
  /* A ReplicaSet a Deployment owns: the Deployment counts its replicas. */
  const cJSON *ow;
  cJSON_ArrayForEach(ow, mf_get(mf_get(o, "metadata"), "ownerReferences")) {
    const char *k = mf_get_str(ow, "kind"), *on = mf_get_str(ow, "name");
    char parent[600];
    dt__join(parent, sizeof parent, k ? k : "", "/", on ? on : "");
    if (!daemonset && k && on && !strcmp(k, "Deployment") && !p.parent && !(p.parent = dt__strdup(parent))) goto nomem;
  }
  if (replicas == 0) {
    /* none to plan, kept whole apart: a ReplicaSet's or StatefulSet's
    ** selector still names its pods' controller for default spreads (a
    ** scaled-down or old ReplicaSet whose pods are still there), and a
    ** CapacityBuffer's scalableRef takes the template of a workload of any
    ** replicas */
    if (!daemonset && dt__vec_push(&x->m->idle, p)) goto nomem;
    if (daemonset) mf_pod_free(&p);
    return 0;
  }
  if (!daemonset && count_pods(x, replicas, "spec.replicas")) goto fail;
  if (daemonset ? dt__vec_push(&x->m->daemonsets, p) : dt__vec_push(&x->m->pods, p)) goto nomem;
  return 0;
nomem:
  mf_oom(x);
fail:
  mf_pod_free(&p);
  return mf_failed(x);
}

int mf_unavailable(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (mf_meta(x, o, &ns, &name, false) || mf_check_duplicate(x, NULL, name)) return mf_failed(x);
  const cJSON *spec = mf_get(o, "spec");
  const char *ct = mf_get_str(spec, "capacityType"), *it = mf_get_str(spec, "instanceType"),
             *zone = mf_get_str(spec, "zone");
  dt_mark mk = {0};
  mk.ct = ct ? dt__ct_parse(ct) : -1;
  if (mk.ct < 0) return mf_bad(x, "spec.capacityType", "expected on-demand, spot or reserved");
  if (!it || !*it) return mf_bad(x, "spec.instanceType", "missing");
  if (!zone || !*zone) return mf_bad(x, "spec.zone", "missing");
  const char *exp = mf_get_str(spec, "expiresAt"), *at = mf_get_str(spec, "markedAt"), *ttl = mf_get_str(spec, "ttl");
  if (exp) {
    if (dt_time_parse(exp, &mk.expires, NULL)) return mf_bad(x, "spec.expiresAt", "expected an RFC 3339 time");
  } else {
    int64_t t0, d = 180; /* Karpenter's AWS provider keeps ICE marks 3 minutes */
    if (!at || dt_time_parse(at, &t0, NULL))
      return mf_bad(x, "spec.markedAt", "expected an RFC 3339 time (or give spec.expiresAt)");
    if (ttl && dt__duration_parse(ttl, &d)) return mf_bad(x, "spec.ttl", "expected a duration such as 3m or 1h");
    mk.expires = t0 + d;
  }
  mk.file = (char *)x->file;
  mk.instance_type = dt__strdup(it);
  mk.zone = dt__strdup(zone);
  mk.name = dt__strdup(name);
  if (!mk.instance_type || !mk.zone || !mk.name || dt__vec_push(&x->m->marks, mk)) {
    dt__free(mk.instance_type);
    dt__free(mk.zone);
    dt__free(mk.name);
    return mf_oom(x);
  }
  return 0;
}

void mf_service_free(dt_service *v) {
  dt__free(v->ns);
  dt__free(v->rc);
  dt__kvs_free(&v->sel);
}

/* A Service, or a ReplicationController (rc): what its selector (a map)
** takes, for the selector kube-scheduler deduces for a pod's default
** topology spread constraints. Read for that alone: one whose selector is
** not a map of strings is noted and left out, never the input's error. */
static int selector_object(mctx *x, const cJSON *o, bool rc) {
  const char *ns, *name;
  if (mf_meta(x, o, &ns, &name, true) || mf_check_duplicate(x, ns, name)) return mf_failed(x);
  const cJSON *sel = mf_get(mf_get(o, "spec"), "selector"), *c;
  dt_service v = {0};
  v.has_sel = sel && !cJSON_IsNull(sel);
  bool ok = !v.has_sel || cJSON_IsObject(sel);
  for (c = ok && v.has_sel ? sel->child : NULL; c; c = c->next) ok &= cJSON_IsString(c);
  if (!ok) {
    dt__buf_printf(&x->m->notes, "%s: %s: spec.selector is not a map of strings; left out\n", x->file, x->obj);
    return 0;
  }
  char key[600];
  dt__join(key, sizeof key, rc ? "ReplicationController/" : "", rc ? name : "");
  if (!(v.ns = dt__strdup(ns)) || (rc && !(v.rc = dt__strdup(key)))) {
    mf_service_free(&v);
    return mf_oom(x);
  }
  if ((v.has_sel && mf_parse_kvs(x, sel, "spec.selector", &v.sel)) || dt__vec_push(&x->m->services, v)) {
    mf_service_free(&v);
    return mf_oom(x);
  }
  return 0;
}

int mf_service(mctx *x, const cJSON *o) { return selector_object(x, o, !strcmp(x->kind, "ReplicationController")); }

void mf_namespace_free(dt_namespace *n) {
  dt__free(n->name);
  dt__kvs_free(&n->labels);
}

/* A Namespace: its labels, with kubernetes.io/metadata.name (which the API
** server sets on every one) where a hand-written one leaves it out. */
int mf_namespace(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (mf_meta(x, o, &ns, &name, false) || mf_check_duplicate(x, NULL, name)) return mf_failed(x);
  dt_namespace n = {0};
  if (!(n.name = dt__strdup(name))) return mf_oom(x);
  if (mf_parse_kvs(x, mf_get(mf_get(o, "metadata"), "labels"), "metadata.labels", &n.labels)) {
    mf_namespace_free(&n);
    return mf_failed(x);
  }
  if (!dt__kv_get(n.labels.v, n.labels.n, DT_L_NS_NAME)) {
    dt_kv *nv = dt__realloc(n.labels.v, (n.labels.n + 1) * sizeof *nv);
    if (nv) n.labels.v = nv;
    char *k = nv ? dt__strdup(DT_L_NS_NAME) : NULL, *v = k ? dt__strdup(name) : NULL;
    if (!v) {
      dt__free(k);
      mf_namespace_free(&n);
      return mf_oom(x);
    }
    n.labels.v[n.labels.n++] = (dt_kv){k, v};
  }
  if (dt__vec_push(&x->m->namespaces, n)) {
    mf_namespace_free(&n);
    return mf_oom(x);
  }
  return 0;
}

int mf_runtime_class(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (mf_meta(x, o, &ns, &name, false) || mf_check_duplicate(x, NULL, name)) return mf_failed(x);
  dt_runtimeclass rc = {0};
  if (!(rc.name = dt__strdup(name))) return mf_oom(x);
  if (mf_parse_rlist(x, mf_get(mf_get(o, "overhead"), "podFixed"), "overhead.podFixed", &rc.overhead, true) ||
      dt__vec_push(&x->m->runtime_classes, rc)) {
    dt__free(rc.name);
    dt__rlist_free(&rc.overhead);
    return x->code ? x->code : mf_oom(x);
  }
  return 0;
}

int mf_node(mctx *x, const cJSON *o, bool is_claim) {
  const char *ns, *name;
  if (mf_meta(x, o, &ns, &name, false) || mf_check_duplicate(x, NULL, name)) return mf_failed(x);
  dt_node n = {0};
  n.file = (char *)x->file;
  n.kind = (char *)(is_claim ? "NodeClaim" : "Node");
  n.seq = x->m->seq++;
  const cJSON *md = mf_get(o, "metadata"), *spec = mf_get(o, "spec"), *st = mf_get(o, "status");
  if (!(n.name = dt__strdup(name))) goto nomem;
  if (mf_parse_kvs(x, mf_get(md, "labels"), "metadata.labels", &n.labels) ||
      mf_parse_rlist(x, mf_get(st, "allocatable"), "status.allocatable", &n.allocatable, false) ||
      mf_parse_taints(x, mf_get(spec, "taints"), "spec.taints", &n.taints, &n.ntaints))
    goto fail;
  for (size_t k = 0; k < n.allocatable.n; k++) /* a node of more than 2 PiB is a node of 2 PiB: sums stay in range */
    if (n.allocatable.v[k].milli > DT_QTY_CAP) n.allocatable.v[k].milli = DT_QTY_CAP;
  n.created = mf_created_at(o);
  n.ready = true;
  const char *del = mf_get_str(md, "deletionTimestamp");
  if (del && (dt_time_parse(del, &n.deleting, NULL) || !n.deleting)) n.deleting = 1;
  const cJSON *ann = mf_get(md, "annotations");
  const char *dnd = mf_get_str(ann, "karpenter.sh/do-not-disrupt");
  n.dnd = dnd && !strcmp(dnd, "true");
  const char *ph = mf_get_str(ann, "dovetail.dev/nodepool-hash");
  if (ph && !(n.pool_hash = dt__strdup(ph))) goto nomem;
  if (is_claim) { /* Karpenter's own drift marks, on the claims it made */
    const char *kh = mf_get_str(ann, "karpenter.sh/nodepool-hash"),
               *kv = mf_get_str(ann, "karpenter.sh/nodepool-hash-version");
    if (kh && *kh && !(n.k_hash = dt__strdup(kh))) goto nomem;
    if (kv && *kv && !(n.k_hash_version = dt__strdup(kv))) goto nomem;
    /* the AWS provider's: the EC2NodeClass it was made from, and its image */
    const char *ch = mf_get_str(ann, "karpenter.k8s.aws/ec2nodeclass-hash"),
               *cv = mf_get_str(ann, "karpenter.k8s.aws/ec2nodeclass-hash-version"),
               *dh = mf_get_str(ann, "dovetail.dev/ec2nodeclass-hash"), *img = mf_get_str(st, "imageID");
    if (ch && *ch && !(n.nc_k_hash = dt__strdup(ch))) goto nomem;
    if (cv && *cv && !(n.nc_k_hash_version = dt__strdup(cv))) goto nomem;
    if (dh && *dh && !(n.nc_hash = dt__strdup(dh))) goto nomem;
    if (img && *img && !(n.image_id = dt__strdup(img))) goto nomem;
  }
  const char *ready = condition(o, "Ready", NULL), *init = condition(o, "Initialized", NULL), *why;
  if (ready) n.ready = !strcmp(ready, "True");
  bool claim_init = init && !strcmp(init, "True");
  const char *drifted = is_claim ? condition(o, "Drifted", &why) : NULL;
  if (drifted && !strcmp(drifted, "True") && !(n.drifted = dt__strdup(why && *why ? why : "Drifted"))) goto nomem;
  const char *lpe = mf_get_str(st, "lastPodEventTime");
  if (lpe) dt_time_parse(lpe, &n.last_pod_event, NULL);
  for (const cJSON *c = claim_init ? mf_get(st, "conditions")->child : NULL; c; c = c->next) {
    const char *t = mf_get_str(c, "type"), *lt = mf_get_str(c, "lastTransitionTime");
    if (t && lt && !strcmp(t, "Initialized")) dt_time_parse(lt, &n.initialized_at, NULL);
  }
  if (is_claim) {
    if (!(n.claim_name = dt__strdup(name))) goto nomem;
    const char *pid = mf_get_str(st, "providerID");
    if (pid && *pid && !(n.provider_id = dt__strdup(pid))) goto nomem;
    const char *nn = mf_get_str(st, "nodeName");
    if (nn && *nn && !(n.node_name = dt__strdup(nn))) goto nomem;
    /* Requirements with a single In value become labels (our own claims
    ** carry both; a claim from a cluster may only have requirements). */
    dt_mreqs reqs = {0};
    if (mf_parse_mreqs(x, mf_get(spec, "requirements"), "spec.requirements", &reqs, true)) {
      mf_mreqs_free(&reqs);
      goto fail;
    }
    for (size_t i = 0; i < reqs.n; i++) {
      if (reqs.v[i].op != DT_OP_IN || reqs.v[i].n != 1) continue;
      bool has = false;
      for (size_t k = 0; k < n.labels.n; k++) has |= strcmp(n.labels.v[k].key, reqs.v[i].key) == 0;
      if (has) continue;
      dt_kv *nv = dt__realloc(n.labels.v, (n.labels.n + 1) * sizeof *nv);
      if (!nv) {
        mf_mreqs_free(&reqs);
        goto nomem;
      }
      n.labels.v = nv;
      nv[n.labels.n].key = dt__strdup(reqs.v[i].key);
      nv[n.labels.n].val = dt__strdup(reqs.v[i].vals[0]);
      n.labels.n++;
      if (!nv[n.labels.n - 1].key || !nv[n.labels.n - 1].val) {
        mf_mreqs_free(&reqs);
        goto nomem;
      }
    }
    mf_mreqs_free(&reqs);
    const char *pods = mf_get_str(mf_get(md, "annotations"), DT_A_PODS);
    /* room for every entry at once: one more than the commas */
    size_t room = 0;
    for (const char *s = pods; s && *s; s++) room += *s == ',';
    if (pods && *pods && !(n.pods = dt__malloc((room + 1) * sizeof *n.pods))) goto nomem;
    for (const char *s = pods; s && *s;) {
      const char *e = strchr(s, ',');
      size_t len = e ? (size_t)(e - s) : strlen(s);
      while (len && (*s == ' ')) s++, len--;
      while (len && s[len - 1] == ' ') len--;
      if (len) {
        char **np = n.pods;
        if (!(np[n.npods] = dt__strndup(s, len))) goto nomem;
        if (!strchr(np[n.npods], '/')) {
          n.npods++;
          mf_bad(x, "metadata.annotations." DT_A_PODS, "expected namespace/name entries, got \"%.*s\"", (int)len, s);
          goto fail;
        }
        n.npods++;
      }
      s = e ? e + 1 : NULL;
    }
    /* In flight until the node registers; a claim from the cluster with
    ** Initialized=True counts as initialized. */
    n.initialized = claim_init;
    const cJSON *tg = mf_get(spec, "terminationGracePeriod");
    n.has_tgp = tg && !cJSON_IsNull(tg);
    const cJSON *ea = mf_get(spec, "expireAfter");
    if (ea && !cJSON_IsNull(ea)) {
      if (mf_parse_duration_or_never(x, ea, "spec.expireAfter", &n.expire_after)) goto fail;
      n.has_expire = true;
    }
  } else {
    const cJSON *u = mf_get(spec, "unschedulable");
    n.unschedulable = cJSON_IsTrue(u);
    const char *pid = mf_get_str(spec, "providerID");
    if (pid && *pid && !(n.provider_id = dt__strdup(pid))) goto nomem;
    /* A Node without status.allocatable gets its instance type's from the
    ** catalog, when the scheduler compiles it. */
    n.initialized = true;
    const char *il = dt__kv_get(n.labels.v, n.labels.n, "karpenter.sh/initialized");
    n.init_label = il && !strcmp(il, "true");
  }
  if (dt__vec_push(&x->m->nodes, n)) goto nomem;
  return 0;
nomem:
  mf_oom(x);
fail:
  mf_node_free(&n);
  return mf_failed(x);
}

/* A cluster-scoped object (PersistentVolume, StorageClass, CSINode): its name read,
** checked for duplicates and taken as t's key; 0 or the error. */
static int topo_named(mctx *x, const cJSON *o, dt_topo_obj *t) {
  const char *ns, *name;
  if (mf_meta(x, o, &ns, &name, false) || mf_check_duplicate(x, NULL, name)) return mf_failed(x);
  return (t->key = dt__strdup(name)) ? 0 : mf_oom(x);
}

static int topo_push(mctx *x, dt_topo_obj *t) {
  if (dt__vec_push(&x->m->topo, *t)) {
    mf_topo_free(t);
    return mf_oom(x);
  }
  return 0;
}

int mf_volume(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (mf_meta(x, o, &ns, &name, true) || mf_check_duplicate(x, ns, name)) return mf_failed(x);
  char key[600];
  dt__join(key, sizeof key, ns, "/", name);
  char *s = dt__strdup(key);
  if (!s || dt__vec_push(&x->m->volumes, s)) {
    dt__free(s);
    return mf_oom(x);
  }
  if (strcmp(x->kind, "PersistentVolumeClaim")) return 0;
  const cJSON *spec = mf_get(o, "spec");
  const char *vn = mf_get_str(spec, "volumeName"), *sc = mf_get_str(spec, "storageClassName");
  const cJSON *md = mf_get(o, "metadata");
  const char *phase = mf_get_str(mf_get(o, "status"), "phase");
  dt_topo_obj t = {.kind = "PVC",
                   .key = dt__strdup(key),
                   .volume = vn && *vn ? dt__strdup(vn) : NULL,
                   .storage_class = sc && *sc ? dt__strdup(sc) : NULL,
                   .deleting = mf_get_str(md, "deletionTimestamp") != NULL,
                   .lost = phase && !strcmp(phase, "Lost"),
                   .bind_completed = mf_get(mf_get(md, "annotations"), "pv.kubernetes.io/bind-completed") != NULL,
                   .class_given = cJSON_IsString(mf_get(spec, "storageClassName"))};
  if (!t.key || (vn && *vn && !t.volume) || (sc && *sc && !t.storage_class)) {
    mf_topo_free(&t);
    return mf_oom(x);
  }
  return topo_push(x, &t);
}

/* The CSI driver that attaches a volume of an in-tree plugin (a PV's source
** or a StorageClass's provisioner), as the CSI migration names it; NULL
** for another. */
static const char *in_tree_driver(const char *plugin) {
  static const char *const map[][2] = {{"awsElasticBlockStore", "ebs.csi.aws.com"},
                                       {"kubernetes.io/aws-ebs", "ebs.csi.aws.com"},
                                       {"gcePersistentDisk", "pd.csi.storage.gke.io"},
                                       {"kubernetes.io/gce-pd", "pd.csi.storage.gke.io"},
                                       {"azureDisk", "disk.csi.azure.com"},
                                       {"kubernetes.io/azure-disk", "disk.csi.azure.com"},
                                       {"cinder", "cinder.csi.openstack.org"},
                                       {"kubernetes.io/cinder", "cinder.csi.openstack.org"}};
  for (size_t i = 0; i < sizeof map / sizeof *map; i++)
    if (!strcmp(plugin, map[i][0])) return map[i][1];
  return NULL;
}

static int vals_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static int mreq_key_cmp(const void *a, const void *b) {
  return strcmp(((const dt_mreq *)a)->key, ((const dt_mreq *)b)->key);
}

/* Values sorted, each once (a requirement's values are a set). */
static void vals_canon(dt_mreq *q) {
  if (q->n < 2) return;
  qsort(q->vals, q->n, sizeof *q->vals, vals_cmp);
  size_t u = 1;
  for (size_t i = 1; i < q->n; i++) {
    if (!strcmp(q->vals[i], q->vals[u - 1]))
      dt__free(q->vals[i]);
    else
      q->vals[u++] = q->vals[i];
  }
  q->n = u;
}

/* A term in one form: requirements by key, values sorted and once each;
** false when it names a key twice (whose values then intersect). */
static bool term_canon(dt_mreqs *t) {
  for (size_t i = 0; i < t->n; i++) vals_canon(&t->v[i]);
  if (t->n > 1) qsort(t->v, t->n, sizeof *t->v, mreq_key_cmp);
  for (size_t i = 1; i < t->n; i++)
    if (!strcmp(t->v[i].key, t->v[i - 1].key)) return false;
  return true;
}

static bool vals_same(const dt_mreq *a, const dt_mreq *b) {
  if (a->n != b->n) return false;
  for (size_t i = 0; i < a->n; i++)
    if (strcmp(a->vals[i], b->vals[i])) return false;
  return true;
}

/* Which requirement of canonical term t differs from canonical term first,
** when both have the same keys and operators and only that one's In values
** differ: its index, -1 when none differs, -2 when they differ otherwise. */
static long term_differs(const dt_mreqs *first, const dt_mreqs *t) {
  if (first->n != t->n) return -2;
  long d = -1;
  for (size_t i = 0; i < t->n; i++) {
    if (strcmp(first->v[i].key, t->v[i].key) || first->v[i].op != t->v[i].op) return -2;
    if (vals_same(&first->v[i], &t->v[i])) continue;
    if (d >= 0 || t->v[i].op != DT_OP_IN) return -2;
    d = (long)i;
  }
  return d;
}

/*
** Where a volume can be: a PersistentVolume's nodeSelectorTerms or a
** StorageClass's allowedTopologies (whose matchLabelExpressions are In
** requirements). Karpenter takes each term as an alternative, the first a
** node meets serving; terms without requirements are none. Terms that one
** term can say become that term, which a node meets when it meets any of
** them: the same keys and operators, the same values but for one key's,
** the same key in every term, which all take In (a zone per term, the
** common case); that key's values are then all of theirs. Terms that
** differ more are noted, and pods follow the first. Linear in the terms'
** size, less the sorting.
*/
static int topo_terms(mctx *x, const cJSON *terms, const char *path, const char *exprs_key, dt_mreqs *out) {
  if (!terms || cJSON_IsNull(terms)) return 0;
  if (!cJSON_IsArray(terms)) return mf_bad(x, path, "expected a list");
  size_t i = 0, nterms = 0;
  long dkey = -1;            /* the requirement of the first term whose values the others add to */
  bool foldable = true;      /* every term so far one with the first */
  DT_VEC(char *) more = {0}; /* values of dkey the other terms add, in term order */
  bool sc = !strcmp(exprs_key, "matchLabelExpressions");
  int rc = 0;
  for (const cJSON *term = terms->child; term && !rc; term = term->next, i++) {
    char f[300];
    snprintf(f, sizeof f, "%s[%zu]", path, i);
    if (!cJSON_IsObject(term)) {
      rc = mf_bad(x, f, "expected an object");
      break;
    }
    snprintf(f, sizeof f, "%s[%zu].%s", path, i, exprs_key);
    const cJSON *exprs = mf_get(term, exprs_key);
    cJSON *conv = NULL;
    if (sc && cJSON_IsArray(exprs)) { /* a topology selector's requirements are In */
      const cJSON *e;
      bool ok = (conv = cJSON_CreateArray()) != NULL;
      for (e = ok ? exprs->child : NULL; e; e = e->next) {
        cJSON *r = cJSON_CreateObject();
        const cJSON *v = mf_get(e, "values");
        ok = r && cJSON_AddItemToArray(conv, r) &&
             cJSON_AddStringToObject(r, "key", mf_get_str(e, "key") ? mf_get_str(e, "key") : "") &&
             cJSON_AddStringToObject(r, "operator", "In") &&
             (!v || cJSON_AddItemToObject(r, "values", cJSON_Duplicate(v, true)));
        if (!ok) break;
      }
      if (!ok) {
        cJSON_Delete(conv);
        rc = mf_oom(x);
        break;
      }
      exprs = conv;
    }
    dt_mreqs t = {0};
    rc = mf_parse_mreqs(x, exprs, f, &t, false);
    cJSON_Delete(conv);
    if (rc || !t.n) {
      mf_mreqs_free(&t);
      continue;
    }
    bool canon = term_canon(&t);
    if (!nterms++) {
      *out = t;
      foldable = canon;
      continue;
    }
    long d = foldable && canon ? term_differs(out, &t) : -2;
    if (d >= 0 && dkey >= 0 && d != dkey) d = -2;
    if (d == -2) foldable = false;
    if (d >= 0) {
      dkey = d;
      for (size_t k = 0; k < t.v[d].n && !rc; k++) { /* taken, not copied */
        if (dt__vec_push(&more, t.v[d].vals[k]))
          rc = mf_oom(x);
        else
          t.v[d].vals[k] = NULL;
      }
    }
    mf_mreqs_free(&t);
  }
  if (!rc && foldable && dkey >= 0 && more.n) {
    dt_mreq *q = &out->v[dkey];
    char **nv = dt__realloc(q->vals, (q->n + more.n) * sizeof *nv);
    if (!nv) {
      rc = mf_oom(x);
    } else {
      q->vals = nv;
      memcpy(q->vals + q->n, more.v, more.n * sizeof *more.v);
      q->n += more.n;
      more.n = 0;
      vals_canon(q);
    }
  }
  for (size_t k = 0; k < more.n; k++) dt__free(more.v[k]);
  dt__free(more.v);
  if (rc) return mf_failed(x);
  if (!foldable && nterms > 1)
    dt__buf_printf(&x->m->notes,
                   "%s: %s: %s has %zu terms that differ in more than one label's values; pods follow the first "
                   "(Karpenter tries each in turn)\n",
                   x->file, x->obj, path, nterms);
  return 0;
}

/* A PersistentVolume: where it can be attached (its required node affinity)
** and by which CSI driver. */
int mf_persistent_volume(mctx *x, const cJSON *o) {
  dt_topo_obj t = {.kind = "PV", .deleting = mf_get_str(mf_get(o, "metadata"), "deletionTimestamp") != NULL};
  int rc = topo_named(x, o, &t);
  if (rc) return rc;
  const cJSON *spec = mf_get(o, "spec"), *src, *dv = mf_get(mf_get(spec, "csi"), "driver");
  if (dv && !cJSON_IsString(dv)) {
    mf_topo_free(&t);
    return mf_bad(x, "spec.csi.driver", "expected a string");
  }
  const char *drv = mf_get_str(mf_get(spec, "csi"), "driver");
  cJSON_ArrayForEach(src, spec) if (!drv && cJSON_IsObject(src) && src->string) drv = in_tree_driver(src->string);
  if (drv && *drv && !(t.driver = dt__strdup(drv))) {
    mf_topo_free(&t);
    return mf_oom(x);
  }
  const cJSON *terms = mf_get(mf_get(mf_get(mf_get(o, "spec"), "nodeAffinity"), "required"), "nodeSelectorTerms");
  if (topo_terms(x, terms, "spec.nodeAffinity.required.nodeSelectorTerms", "matchExpressions", &t.term)) {
    mf_topo_free(&t);
    return mf_failed(x);
  }
  return topo_push(x, &t);
}

/* A StorageClass: whether it binds Immediate, whether it is the default,
** and its allowedTopologies (each label's values; one term, as Karpenter
** reads the first). */
int mf_storage_class(mctx *x, const cJSON *o) {
  const char *mode = mf_get_str(o, "volumeBindingMode"), *prov = mf_get_str(o, "provisioner");
  const cJSON *ann = mf_get(mf_get(o, "metadata"), "annotations");
  const char *def = mf_get_str(ann, "storageclass.kubernetes.io/is-default-class"),
             *bdef = mf_get_str(ann, "storageclass.beta.kubernetes.io/is-default-class");
  dt_topo_obj t = {.kind = "SC",
                   .immediate = mode && !strcmp(mode, "Immediate"),
                   .is_default = (def && !strcmp(def, "true")) || (bdef && !strcmp(bdef, "true"))};
  int rc = topo_named(x, o, &t);
  if (rc) return rc;
  const cJSON *pv = mf_get(o, "provisioner");
  if (pv && !cJSON_IsString(pv)) {
    mf_topo_free(&t);
    return mf_bad(x, "provisioner", "expected a string");
  }
  if (prov && *prov && !(t.driver = dt__strdup(in_tree_driver(prov) ? in_tree_driver(prov) : prov))) {
    mf_topo_free(&t);
    return mf_oom(x);
  }
  if (topo_terms(x, mf_get(o, "allowedTopologies"), "allowedTopologies", "matchLabelExpressions", &t.term)) {
    mf_topo_free(&t);
    return mf_failed(x);
  }
  return topo_push(x, &t);
}

/* A CSINode: how many volumes of each CSI driver its node can attach
** (spec.drivers[].allocatable.count; a driver without one has no limit). */
int mf_csinode(mctx *x, const cJSON *o) {
  dt_topo_obj t = {.kind = "CSI"};
  int rc = topo_named(x, o, &t);
  if (rc) return rc;
  const cJSON *drivers = mf_get(mf_get(o, "spec"), "drivers"), *d;
  if (drivers && !cJSON_IsNull(drivers) && !cJSON_IsArray(drivers)) {
    mf_topo_free(&t);
    return mf_bad(x, "spec.drivers", "expected a list");
  }
  size_t n = (size_t)cJSON_GetArraySize(drivers), i = 0;
  t.lim_driver = dt__calloc(n ? n : 1, sizeof *t.lim_driver);
  t.lim_count = dt__calloc(n ? n : 1, sizeof *t.lim_count);
  if (!t.lim_driver || !t.lim_count) {
    mf_topo_free(&t);
    return mf_oom(x);
  }
  cJSON_ArrayForEach(d, drivers) {
    const cJSON *count = mf_get(mf_get(d, "allocatable"), "count");
    const char *name = mf_get_str(d, "name");
    char f[120];
    if (!name || !*name) {
      snprintf(f, sizeof f, "spec.drivers[%zu].name", i);
      mf_topo_free(&t);
      return mf_bad(x, f, "missing");
    }
    if (count && !mf_is_int_in(count, 0, 2147483647)) {
      snprintf(f, sizeof f, "spec.drivers[%zu].allocatable.count", i);
      mf_topo_free(&t);
      return mf_bad(x, f, "expected an integer from 0 to 2147483647");
    }
    for (const cJSON *e = drivers->child; e != d; e = e->next) { /* the list's key is the name (API server) */
      const char *other = mf_get_str(e, "name");
      if (other && !strcmp(other, name)) {
        snprintf(f, sizeof f, "spec.drivers[%zu].name", i);
        mf_topo_free(&t);
        return mf_bad(x, f, "driver %s is listed twice", name);
      }
    }
    i++;
    if (!count) continue;
    if (!(t.lim_driver[t.nlim] = dt__strdup(name))) {
      mf_topo_free(&t);
      return mf_oom(x);
    }
    t.lim_count[t.nlim++] = (int64_t)count->valuedouble;
  }
  return topo_push(x, &t);
}

void mf_pdb_free(dt_pdb *p) {
  dt__free(p->ns);
  dt__free(p->name);
  mf_selector_free(&p->sel);
}

/* An IntOrString as Kubernetes takes it: an int32 of at least 0, or "N%". */
static int int_or_pct(mctx *x, const cJSON *v, const char *field, int64_t *out, bool *pct) {
  if (mf_is_int_in(v, 0, 2147483647)) {
    *out = (int64_t)v->valuedouble;
    return 0;
  }
  const char *s = cJSON_IsString(v) ? v->valuestring : "";
  size_t len = strlen(s);
  char *end;
  long long n = strtoll(s, &end, 10);
  if (len > 1 && s[len - 1] == '%' && end == s + len - 1 && n >= 0 && n <= 100) {
    *out = n;
    *pct = true;
    return 0;
  }
  return mf_bad(x, field, "expected a non-negative integer or a percentage");
}

int mf_pdb(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (mf_meta(x, o, &ns, &name, true) || mf_check_duplicate(x, ns, name)) return mf_failed(x);
  const cJSON *spec = mf_get(o, "spec");
  dt_pdb p = {0};
  p.file = (char *)x->file;
  p.allowed = -1;
  if (!(p.ns = dt__strdup(ns)) || !(p.name = dt__strdup(name))) goto nomem;
  if (mf_parse_selector(x, mf_get(spec, "selector"), "spec.selector", &p.sel)) goto fail;
  const cJSON *mn = mf_get(spec, "minAvailable"), *mx = mf_get(spec, "maxUnavailable");
  if (mn && !cJSON_IsNull(mn) && mx && !cJSON_IsNull(mx)) {
    mf_bad(x, "spec", "minAvailable and maxUnavailable are exclusive");
    goto fail;
  }
  if (mn && !cJSON_IsNull(mn)) {
    p.has_min = true;
    if (int_or_pct(x, mn, "spec.minAvailable", &p.min_avail, &p.min_pct)) goto fail;
  }
  if (mx && !cJSON_IsNull(mx)) {
    p.has_max = true;
    if (int_or_pct(x, mx, "spec.maxUnavailable", &p.max_unavail, &p.max_pct)) goto fail;
  }
  const cJSON *da = mf_get(mf_get(o, "status"), "disruptionsAllowed");
  if (cJSON_IsNumber(da)) p.allowed = dt__to_i64(da->valuedouble);
  const char *uep = mf_get_str(spec, "unhealthyPodEvictionPolicy");
  p.always_allow = uep && !strcmp(uep, "AlwaysAllow");
  if (dt__vec_push(&x->m->pdbs, p)) goto nomem;
  return 0;
nomem:
  mf_oom(x);
fail:
  mf_pdb_free(&p);
  return mf_failed(x);
}
