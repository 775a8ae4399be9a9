/*
** mf_nodepool.c: NodePools read (karpenter.sh/v1, and v1beta1 where it
** differs): the template, requirements, disruption and budgets, limits,
** static replicas; refused where Karpenter's CRD and webhooks refuse.
*/
#include "reader.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* spec.disruption (consolidationPolicy, consolidateAfter, budgets) and the
** template's expireAfter; the template hash for drift. */
static int nodepool_disruption(mctx *x, const cJSON *spec, dt_nodepool *p, bool v1beta1) {
  const cJSON *d = mf_get(spec, "disruption"), *tspec = mf_get(mf_get(spec, "template"), "spec");
  char f[300];
  p->expire_after = 720 * 3600;
  /* v1beta1 kept expireAfter under spec.disruption; Karpenter's conversion
  ** webhook moves it to the template, as here */
  const cJSON *exp = v1beta1 && mf_get(d, "expireAfter") ? mf_get(d, "expireAfter") : mf_get(tspec, "expireAfter");
  if (mf_parse_duration_or_never(x, exp,
                                 v1beta1 && mf_get(d, "expireAfter") ? "spec.disruption.expireAfter"
                                                                     : "spec.template.spec.expireAfter",
                                 &p->expire_after) ||
      mf_parse_duration_or_never(x, mf_get(d, "consolidateAfter"), "spec.disruption.consolidateAfter",
                                 &p->consolidate_after))
    return mf_failed(x);
  const char *cp = mf_get_str(d, "consolidationPolicy");
  if (mf_get(d, "consolidationPolicy") && !cJSON_IsNull(mf_get(d, "consolidationPolicy"))) {
    if (cp && !strcmp(cp, "WhenEmpty"))
      p->consolidation = DT_CONSOL_WHEN_EMPTY;
    else if (cp && v1beta1 && !strcmp(cp, "WhenUnderutilized"))
      p->consolidation = DT_CONSOL_EMPTY_OR_UNDER;
    else if (cp && !strcmp(cp, "WhenEmptyOrUnderutilized"))
      p->consolidation = DT_CONSOL_EMPTY_OR_UNDER;
    else if (cp && !strcmp(cp, "Balanced"))
      p->consolidation = DT_CONSOL_BALANCED;
    else
      return mf_bad(x, "spec.disruption.consolidationPolicy",
                    "expected WhenEmpty, WhenEmptyOrUnderutilized or Balanced");
  }
  const cJSON *bs = mf_get(d, "budgets");
  if (bs && !cJSON_IsNull(bs) && !cJSON_IsArray(bs)) return mf_bad(x, "spec.disruption.budgets", "expected a list");
  size_t nb = cJSON_IsArray(bs) ? (size_t)cJSON_GetArraySize(bs) : 0;
  if (nb > 50) return mf_bad(x, "spec.disruption.budgets", "at most 50 budgets (%zu given)", nb);
  if (!(p->budgets = dt__calloc(nb ? nb : 1, sizeof *p->budgets))) return mf_oom(x);
  if (!bs || cJSON_IsNull(bs)) { /* Karpenter's default when none is written: one budget of 10% ([] is none) */
    p->budgets[0] = (dt_budget){10, true, false, {0}, NULL, 0, DT_REASON_ALL, false};
    p->nbudgets = 1;
  }
  size_t i = 0;
  for (const cJSON *b = cJSON_IsArray(bs) ? bs->child : NULL; b; b = b->next, i++) {
    dt_budget *bu = &p->budgets[p->nbudgets++];
    bu->reasons = DT_REASON_ALL;
    char tmp[64];
    const char *nv = dt__scalar(mf_get(b, "nodes"), tmp, sizeof tmp);
    snprintf(f, sizeof f, "spec.disruption.budgets[%zu].nodes", i);
    /* Karpenter's pattern: ^((100|[0-9]{1,2})%%|[0-9]+)$ */
    size_t len = nv ? strlen(nv) : 0;
    bool pct = len > 1 && nv[len - 1] == '%';
    bool digits = len > (size_t)pct;
    for (size_t k = 0; k + pct < len && digits; k++) digits = nv[k] >= '0' && nv[k] <= '9';
    long long v = digits ? strtoll(nv, NULL, 10) : -1;
    if (!digits || (pct && (len > 4 || v > 100)) || v > 1000000000)
      return mf_bad(x, f, "expected a node count such as 5 or a percentage from 0%% to 100%%, got \"%s\"",
                    nv ? nv : "");
    bu->nodes = v;
    bu->pct = pct;
    const char *sch = mf_get_str(b, "schedule"), *dur = mf_get_str(b, "duration");
    if (!!sch != !!dur) {
      snprintf(f, sizeof f, "spec.disruption.budgets[%zu].%s", i, sch ? "duration" : "schedule");
      return mf_bad(x, f, "schedule and duration go together");
    }
    if (sch) {
      char why[300];
      snprintf(f, sizeof f, "spec.disruption.budgets[%zu].schedule", i);
      /* Karpenter parses "TZ=UTC " + schedule: a zone of its own makes that
      ** fail, and a budget it cannot read allows nothing (fail closed) */
      const char *at = sch + strspn(sch, " \t");
      bu->fail_closed = !strncmp(at, "CRON_TZ=", 8) || !strncmp(at, "TZ=", 3);
      if (bu->fail_closed)
        dt__buf_printf(&x->m->notes,
                       "%s: NodePool %s: %s: Karpenter's budgets take no time zone (\"%s\"): it cannot read this "
                       "schedule and allows no disruption for the budget's reasons at any time (fail closed), as "
                       "dovetail does\n",
                       x->file, p->name, f, sch);
      else if (dt__cron_parse(sch, &bu->cron, why, sizeof why))
        return mf_bad(x, f, "\"%s\": %s", sch, why);
      if (!(bu->schedule = dt__strdup(sch))) return mf_oom(x);
      snprintf(f, sizeof f, "spec.disruption.budgets[%zu].duration", i);
      /* whole minutes, as the disruption-controls design validates it
      ** (^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$): schedules fire on minutes */
      if (dt__duration_parse(dur, &bu->duration) || bu->duration <= 0 || bu->duration % 60)
        return mf_bad(x, f, "expected a positive duration in hours and minutes such as 8h, 30m or 1h30m, got \"%s\"",
                      dur);
      bu->scheduled = !bu->fail_closed;
    }
    const cJSON *rs = mf_get(b, "reasons");
    if (rs && !cJSON_IsNull(rs)) {
      snprintf(f, sizeof f, "spec.disruption.budgets[%zu].reasons", i);
      if (!cJSON_IsArray(rs)) return mf_bad(x, f, "expected a list of Empty, Drifted, Underutilized");
      bu->reasons = 0;
      for (const cJSON *r = rs->child; r; r = r->next) {
        const char *rv = cJSON_IsString(r) ? r->valuestring : "";
        if (!strcmp(rv, "Empty"))
          bu->reasons |= DT_REASON_EMPTY;
        else if (!strcmp(rv, "Drifted"))
          bu->reasons |= DT_REASON_DRIFTED;
        else if (!strcmp(rv, "Underutilized"))
          bu->reasons |= DT_REASON_UNDERUTILIZED;
        else
          return mf_bad(x, f, "unknown reason \"%s\" (Empty, Drifted, Underutilized)", rv);
      }
      /* reasons: [] is a budget for no reason (Karpenter: nil is every reason, empty none) */
    }
  }
  /* The drift hash: the template without what Karpenter leaves out of it
  ** (requirements are checked against node labels instead). */
  cJSON *t = cJSON_Duplicate(mf_get(spec, "template"), 1);
  cJSON *ts = cJSON_GetObjectItemCaseSensitive(t, "spec");
  cJSON_DeleteItemFromObjectCaseSensitive(ts, "requirements");
  cJSON_DeleteItemFromObjectCaseSensitive(ts, "expireAfter");
  cJSON_DeleteItemFromObjectCaseSensitive(ts, "terminationGracePeriod");
  dt_buf b = {0};
  dt__json_canon(t, &b);
  p->hash = dt__hash64(b.p ? b.p : "", b.len);
  int rc = b.oom || (mf_get(spec, "template") && !t) ? mf_oom(x) : 0;
  dt__free(b.p);
  cJSON_Delete(t);
  return rc;
}

/* Fields a NodePool may carry, per object path (Karpenter's CRD, v1 and
** v1beta1); anything else is a misspelling to point out, not to ignore. */
static const struct {
  const char *path, *const *keys;
} k_nodepool_fields[] = {
    {"", (const char *const[]){"apiVersion", "kind", "metadata", "spec", "status", NULL}},
    {"spec", (const char *const[]){"template", "disruption", "limits", "weight", "replicas", NULL}},
    {"spec.template", (const char *const[]){"metadata", "spec", NULL}},
    {"spec.template.metadata", (const char *const[]){"labels", "annotations", NULL}},
    {"spec.template.spec", (const char *const[]){"requirements", "taints", "startupTaints", "nodeClassRef",
                                                 "expireAfter", "terminationGracePeriod", "kubelet", NULL}},
    {"spec.disruption",
     (const char *const[]){"consolidateAfter", "consolidationPolicy", "budgets", "expireAfter", NULL}},
    {"spec.template.spec.nodeClassRef", (const char *const[]){"group", "kind", "name", "apiVersion", NULL}},
};

size_t mf_edit_distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b), d[33][33];
  if (n > 32 || m > 32) return 99;
  for (size_t i = 0; i <= n; i++) d[i][0] = i;
  for (size_t j = 0; j <= m; j++) d[0][j] = j;
  for (size_t i = 1; i <= n; i++)
    for (size_t j = 1; j <= m; j++) {
      size_t s = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]), u = d[i - 1][j] + 1, l = d[i][j - 1] + 1;
      d[i][j] = s < u ? (s < l ? s : l) : (u < l ? u : l);
    }
  return d[n][m];
}

bool mf_one_of(const char *name, const char *const *keys) {
  for (const char *const *k = keys; *k; k++)
    if (!strcmp(name, *k)) return true;
  return false;
}

const char *mf_nearest(const char *name, const char *const *keys, size_t within) {
  const char *near = NULL;
  size_t best = within + 1;
  for (const char *const *k = keys; *k; k++) {
    size_t dist = mf_edit_distance(name, *k);
    if (dist < best) best = dist, near = *k;
  }
  return near;
}

/* Each field of o one of keys (a NULL-ended list), else an error naming it
** (path.field) with the known field it is nearest to, when one is. */
int mf_known_fields(mctx *x, const cJSON *o, const char *path, const char *const *keys) {
  const cJSON *c;
  cJSON_ArrayForEach(c, o) {
    if (mf_one_of(c->string, keys)) continue;
    const char *near = mf_nearest(c->string, keys, 2);
    char f[300];
    dt__join(f, sizeof f, path, *path ? "." : "", c->string);
    return near ? mf_bad(x, f, "unknown field (did you mean %s?)", near) : mf_bad(x, f, "unknown field");
  }
  return 0;
}

/* The labels of the karpenter.k8s.aws domain the AWS provider's NodePool
** schema lets labels and requirements use (its CRD's CEL rule, as of
** aws/karpenter-provider-aws 1d92708); any other key of the domain is
** refused there. */
static const char *const k_aws_labels[] = {"instance-tenancy",
                                           "capacity-reservation-type",
                                           "capacity-reservation-id",
                                           "capacity-reservation-interruptible",
                                           "ec2nodeclass",
                                           "instance-encryption-in-transit-supported",
                                           "nitro-sandbox",
                                           "instance-category",
                                           "instance-hypervisor",
                                           "instance-family",
                                           "instance-generation",
                                           "instance-local-nvme",
                                           "instance-size",
                                           "instance-cpu",
                                           "instance-cpu-manufacturer",
                                           "instance-cpu-sustained-clock-speed-mhz",
                                           "instance-memory",
                                           "instance-ebs-bandwidth",
                                           "instance-network-bandwidth",
                                           "instance-gpu-name",
                                           "instance-gpu-manufacturer",
                                           "instance-gpu-count",
                                           "instance-gpu-memory",
                                           "instance-accelerator-name",
                                           "instance-accelerator-manufacturer",
                                           "instance-accelerator-count",
                                           "instance-capability-flex",
                                           "placement-group-id",
                                           "placement-group-partition",
                                           NULL};

/* Whether key's prefix is the domain dom or one of its subdomains; 2 for
** dom itself, 1 for a subdomain, 0 neither. */
static int in_domain(const char *key, const char *dom) {
  const char *slash = strchr(key, '/');
  size_t dl = slash ? (size_t)(slash - key) : 0, rl = strlen(dom);
  if (!slash || dl < rl || memcmp(slash - rl, dom, rl)) return 0;
  return dl == rl ? 2 : slash[-(ptrdiff_t)rl - 1] == '.';
}

bool dt__aws_label_refused(const char *key, char *why, size_t n) {
  int in = in_domain(key, "karpenter.k8s.aws");
  if (!in) return false;
  const char *name = strchr(key, '/') + 1;
  if (in == 2 && mf_one_of(name, k_aws_labels)) return false;
  const char *near = mf_nearest(name, k_aws_labels, 3);
  if (near)
    snprintf(why, n,
             "is in the restricted domain karpenter.k8s.aws and is not one of the AWS provider's labels (did you mean "
             "karpenter.k8s.aws/%s?)",
             near);
  else
    snprintf(why, n, "is in the restricted domain karpenter.k8s.aws and is not one of the AWS provider's labels");
  return true;
}

/* Karpenter's restricted labels (core pkg/apis/v1/labels.go and its NodePool
** CRD): its own domain karpenter.sh, but for the capacity type, and the
** hostname; the NodePool label is its own to set. Kubernetes' domains were
** restricted too until Karpenter v1.10 (core #2586); they are not now
** (kops.k8s.io/instancegroup, beta.kubernetes.io/arch are taken). */
static const char *restricted_label(const char *key) {
  if (!strcmp(key, DT_L_CAPACITY_TYPE)) return NULL;
  if (!strcmp(key, DT_L_HOSTNAME)) return "is restricted: a node's hostname is its own";
  if (!strcmp(key, DT_L_NODEPOOL)) return "is restricted: Karpenter sets it to the NodePool's name";
  return in_domain(key, "karpenter.sh") ? "is in the restricted domain karpenter.sh (Karpenter's own labels)" : NULL;
}

/* A qualified name as Karpenter's CRDs write its pattern for label keys and
** taints: an optional DNS-subdomain prefix and '/', then a name that starts
** and ends with a letter or digit and holds only those, '-', '_' and '.';
** as Kubernetes' IsQualifiedName (Karpenter's runtime validation), the
** prefix at most 253 characters and the name at most 63. */
static bool qualified_name(const char *s) {
  const char *slash = strchr(s, '/'), *name = s;
  if (slash) {
    if (slash == s || slash - s > 253 || strchr(slash + 1, '/')) return false;
    for (const char *lab = s; lab < slash;) { /* dot-separated lowercase labels */
      const char *e = lab;
      while (e < slash && *e != '.') e++;
      if (e == lab) return false;
      for (const char *c = lab; c < e; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || (*c == '-' && c != lab && c + 1 != e)))
          return false;
      lab = e < slash ? e + 1 : e;
      if (e < slash && lab == slash) return false; /* a trailing dot */
    }
    name = slash + 1;
  }
  size_t n = strlen(name);
  if (!n || n > 63) return false;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && ((i == 0 || i == n - 1) || (c != '-' && c != '_' && c != '.'))) return false;
  }
  return true;
}

/* A label value: empty, or at most 63 characters that start and end with a
** letter or digit and hold only those, '-', '_' and '.'. */
static bool label_value(const char *s) {
  size_t n = strlen(s);
  return n == 0 || (n <= 63 && !strchr(s, '/') && qualified_name(s));
}

/* Karpenter's duration pattern without Never: ^([0-9]+(s|m|h))+$. */
static bool whole_duration(const char *s) {
  if (!*s) return false;
  while (*s) {
    if (*s < '0' || *s > '9') return false;
    while (*s >= '0' && *s <= '9') s++;
    if (*s != 's' && *s != 'm' && *s != 'h') return false;
    s++;
  }
  return true;
}

/* Kubelet settings on a NodePool: a v1beta1 field that Karpenter v1 moved
** to the EC2NodeClass. v1.0's conversion kept them in an annotation its
** AWS provider read before the EC2NodeClass's; since v1.1 neither is read,
** so neither is here: a v1 NodePool with the field is refused (its CRD has
** none), and the field or the annotation is noted, not silently dropped. */
static int nodepool_kubelet(mctx *x, const cJSON *o, const char *name) {
  bool v1beta1 = !strcmp(mf_get_str(o, "apiVersion"), "karpenter.sh/v1beta1");
  const cJSON *k = mf_get(mf_get(mf_get(mf_get(o, "spec"), "template"), "spec"), "kubelet");
  const char *ann = "compatibility.karpenter.sh/v1beta1-kubelet-conversion";
  if (k && !cJSON_IsNull(k) && !v1beta1)
    return mf_bad(x, "spec.template.spec.kubelet",
                  "unknown field (a karpenter.sh/v1 NodePool has none: kubelet settings are its EC2NodeClass's "
                  "spec.kubelet)");
  if (k && !cJSON_IsNull(k))
    dt__buf_printf(&x->m->notes,
                   "%s: NodePool %s: spec.template.spec.kubelet is not read: Karpenter v1 takes kubelet settings "
                   "from the EC2NodeClass's spec.kubelet (and no longer reads what its v1.0 conversion kept of "
                   "them); set them there\n",
                   x->file, name);
  else if (mf_get(mf_get(mf_get(o, "metadata"), "annotations"), ann))
    dt__buf_printf(&x->m->notes,
                   "%s: NodePool %s: metadata.annotations.%s is not read, as Karpenter since v1.1: kubelet settings "
                   "are the EC2NodeClass's spec.kubelet\n",
                   x->file, name, ann);
  return x->m->notes.oom ? mf_oom(x) : 0;
}

static int nodepool_validate(mctx *x, const cJSON *o) {
  for (size_t i = 0; i < sizeof k_nodepool_fields / sizeof k_nodepool_fields[0]; i++) {
    const cJSON *at = o;
    char path[64];
    dt__join(path, sizeof path, k_nodepool_fields[i].path);
    for (char *save = NULL, *t = strtok_r(path, ".", &save); t && at; t = strtok_r(NULL, ".", &save))
      at = mf_get(at, t);
    if (cJSON_IsObject(at) && mf_known_fields(x, at, k_nodepool_fields[i].path, k_nodepool_fields[i].keys))
      return mf_failed(x);
  }
  const cJSON *tm = mf_get(mf_get(mf_get(o, "spec"), "template"), "metadata"), *c;
  const cJSON *labels = mf_get(tm, "labels"); /* its shape is checked where it is read; only mappings here */
  if (!cJSON_IsObject(labels)) labels = NULL;
  cJSON_ArrayForEach(c, labels) {
    const char *why = restricted_label(c->string);
    char f[400];
    dt__join(f, sizeof f, "spec.template.metadata.labels.", c->string);
    if (why) return mf_bad(x, f, "label %s %s", c->string, why);
    if (strlen(c->string) > 316 || !qualified_name(c->string))
      return mf_bad(
          x, f,
          "not a valid label key (an optional DNS prefix and '/', then at most 63 letters, digits, '-', '_' and '.')");
    if (cJSON_IsString(c) && !label_value(c->valuestring))
      return mf_bad(x, f,
                    "\"%.100s\" is not a valid label value (at most 63 letters, digits, '-', '_' and '.', "
                    "starting and ending with a letter or digit)",
                    c->valuestring);
  }
  size_t i = 0;
  cJSON_ArrayForEach(c, mf_get(mf_get(mf_get(mf_get(o, "spec"), "template"), "spec"), "requirements")) {
    const char *key = mf_get_str(c, "key"), *why = key ? restricted_label(key) : NULL;
    char f[300];
    snprintf(f, sizeof f, "spec.template.spec.requirements[%zu].key", i++);
    if (why) return mf_bad(x, f, "label %s %s", key, why);
    if (key && (strlen(key) > 316 || !qualified_name(key)))
      return mf_bad(
          x, f,
          "\"%.100s\" is not a valid label key (an optional DNS prefix and '/', then at most 63 letters, digits, "
          "'-', '_' and '.')",
          key);
    const cJSON *v, *vals = mf_get(c, "values");
    size_t j = 0;
    if (cJSON_IsArray(vals))
      cJSON_ArrayForEach(v, vals) { /* the CRD's items: maxLength 63 and the label value pattern */
        snprintf(f, sizeof f, "spec.template.spec.requirements[%zu].values[%zu]", i - 1, j++);
        if (cJSON_IsString(v) && !label_value(v->valuestring))
          return mf_bad(x, f,
                        "\"%.100s\" is not a valid label value (at most 63 letters, digits, '-', '_' and '.', "
                        "starting and ending with a letter or digit)",
                        v->valuestring);
      }
    const cJSON *r, *fields = cJSON_IsObject(c) ? c : NULL; /* a requirement that is not a mapping is refused later */
    cJSON_ArrayForEach(r, fields) {
      static const char *const rk[] = {"key", "operator", "values", "minValues", NULL};
      bool ok = false;
      for (const char *const *k = rk; *k && !ok; k++) ok = !strcmp(r->string, *k);
      snprintf(f, sizeof f, "spec.template.spec.requirements[%zu].%s", i - 1, r->string);
      if (!ok) return mf_bad(x, f, "unknown field (a requirement has key, operator, values and minValues)");
    }
  }
  return 0;
}

/* spec.template.spec.nodeClassRef: v1 names group, kind and name (each a
** non-empty string, the group without '/'); a v1beta1 reference (apiVersion,
** kind, name) is converted as Karpenter's conversion webhook did, the group
** from apiVersion and, where left out, the AWS provider's default node class
** (karpenter.k8s.aws, EC2NodeClass). */
static int nodeclass_ref(mctx *x, const cJSON *ref, bool v1beta1, dt_nodepool *p) {
  if (!ref || cJSON_IsNull(ref)) return 0;
  const char *field = "spec.template.spec.nodeClassRef";
  if (!cJSON_IsObject(ref)) return mf_bad(x, field, "expected a mapping with group, kind and name");
  char f[300];
  const char *group = mf_get_str(ref, "group"), *kind = mf_get_str(ref, "kind"), *name = mf_get_str(ref, "name");
  const char *api = mf_get_str(ref, "apiVersion");
  char gbuf[256];
  if (v1beta1) {
    if (mf_get(ref, "group"))
      return mf_bad(x, "spec.template.spec.nodeClassRef.group", "v1beta1 names apiVersion, not group");
    if (api) snprintf(gbuf, sizeof gbuf, "%.*s", (int)strcspn(api, "/"), api);
    group = api ? gbuf : "karpenter.k8s.aws";
    if (!mf_get(ref, "kind")) kind = "EC2NodeClass";
  } else if (mf_get(ref, "apiVersion")) {
    return mf_bad(x, "spec.template.spec.nodeClassRef.apiVersion",
                  "unknown field in karpenter.sh/v1 (did you mean group?)");
  }
  static const char *const keys[] = {"group", "kind", "name"};
  const char *vals[] = {group, kind, name};
  for (int i = 0; i < 3; i++) {
    dt__join(f, sizeof f, field, ".", keys[i]);
    const cJSON *v = mf_get(ref, keys[i]);
    if (!vals[i] || !*vals[i] || (v && !cJSON_IsString(v)))
      return mf_bad(x, f, "%s a non-empty string (Karpenter's NodeClaims require group, kind and name)",
                    v ? "expected" : "missing: expected");
  }
  if (strchr(group, '/')) {
    dt__join(f, sizeof f, field, ".group");
    return mf_bad(x, f, "\"%s\" is an API group without a version: no '/'", group);
  }
  cJSON *c = cJSON_CreateObject();
  if (!c || !dt__json_put(c, "group", cJSON_CreateString(group)) ||
      !dt__json_put(c, "kind", cJSON_CreateString(kind)) || !dt__json_put(c, "name", cJSON_CreateString(name))) {
    cJSON_Delete(c);
    return mf_oom(x);
  }
  p->node_class_ref = c;
  return 0;
}

/* spec.weight, and spec.replicas, which makes the pool static (Karpenter's
** static capacity): it keeps that many NodeClaims whatever the pods, takes
** no weight, and of the limits only nodes (its CRD's rules). */
static int pool_size(mctx *x, const cJSON *spec, dt_nodepool *p) {
  const cJSON *w = mf_get(spec, "weight");
  if (w && !cJSON_IsNull(w)) {
    if (!mf_is_int_in(w, 0, 100)) return mf_bad(x, "spec.weight", "expected an integer from 0 to 100");
    p->weight = (int)w->valuedouble;
  }
  p->replicas = -1;
  const cJSON *rep = mf_get(spec, "replicas");
  if (rep && !cJSON_IsNull(rep)) {
    if (!mf_is_int_in(rep, 0, MAX_REPLICAS))
      return mf_bad(x, "spec.replicas", "expected a whole number of nodes from 0 to %lld", (long long)MAX_REPLICAS);
    p->replicas = (int64_t)rep->valuedouble;
    if (w && !cJSON_IsNull(w))
      return mf_bad(x, "spec.weight",
                    "a static NodePool (spec.replicas set) takes no weight: pods never choose it by priority");
  }
  return 0;
}

/* A static pool's limits (nodes only), and taint keys and values that are
** qualified names. */
static int pool_limits_taints(mctx *x, const dt_nodepool *p) {
  char f[300];
  for (size_t i = 0; p->replicas >= 0 && i < p->limits.n; i++)
    if (strcmp(p->limits.v[i].name, "nodes")) {
      dt__join(f, sizeof f, "spec.limits.", p->limits.v[i].name);
      return mf_bad(x, f, "a static NodePool (spec.replicas set) takes only limits.nodes");
    }
  for (size_t i = 0; i < p->ntaints + p->nstartup; i++) {
    const dt_taint *t = i < p->ntaints ? &p->taints[i] : &p->startup[i - p->ntaints];
    const char *list = i < p->ntaints ? "taints" : "startupTaints";
    size_t k = i < p->ntaints ? i : i - p->ntaints;
    snprintf(f, sizeof f, "spec.template.spec.%s[%zu].%s", list, k, qualified_name(t->key) ? "value" : "key");
    if (!qualified_name(t->key) || (t->value[0] && !qualified_name(t->value)))
      return mf_bad(
          x, f,
          "\"%.100s\" is not a valid taint %s (an optional DNS prefix and '/', then at most 63 letters, digits, '-', "
          "'_' and '.', starting and ending with a letter or digit)",
          qualified_name(t->key) ? t->value : t->key, qualified_name(t->key) ? "value" : "key");
  }
  return 0;
}

/* dovetail's annotations: dovetail.dev/spot-max-price and dovetail.dev/policy. */
static int pool_annotations(mctx *x, const cJSON *o, dt_nodepool *p) {
  p->spot_max = -1;
  const cJSON *ann = mf_get(mf_get(o, "metadata"), "annotations");
  const cJSON *mp = mf_get(ann, "dovetail.dev/spot-max-price");
  if (mp && !cJSON_IsNull(mp)) {
    char tmp[64], *end;
    const char *v = dt__scalar(mp, tmp, sizeof tmp);
    double d = v ? strtod(v, &end) : -1;
    if (!v || *end || !(d >= 0) || !isfinite(d))
      return mf_bad(x, "metadata.annotations.dovetail.dev/spot-max-price",
                    "expected a price in $/hour, such as \"0.05\"");
    p->spot_max = d;
  }
  const char *pn = mf_get_str(ann, "dovetail.dev/policy");
  if (pn && *pn && !(p->policy = dt__strdup(pn))) return mf_oom(x);
  const char *kh = mf_get_str(ann, "karpenter.sh/nodepool-hash"),
             *kv = mf_get_str(ann, "karpenter.sh/nodepool-hash-version");
  if (kh && *kh && !(p->k_hash = dt__strdup(kh))) return mf_oom(x);
  if (kv && *kv && !(p->k_hash_version = dt__strdup(kv))) return mf_oom(x);
  return 0;
}

/* Control planes on spot lose etcd quorum when several are interrupted at
** once: a NodePool is one by its template label or by a requirement that
** its nodes carry the role (In or Exists), and then it must not allow spot. */
static int control_plane_spot(mctx *x, const dt_nodepool *p) {
  const char *role = NULL;
  for (size_t i = 0; i < p->labels.n && !role; i++)
    if (!strcmp(p->labels.v[i].key, "node-role.kubernetes.io/control-plane") ||
        !strcmp(p->labels.v[i].key, "node-role.kubernetes.io/master"))
      role = p->labels.v[i].key;
  for (size_t i = 0; i < p->reqs.n && !role; i++)
    if ((!strcmp(p->reqs.v[i].key, "node-role.kubernetes.io/control-plane") ||
         !strcmp(p->reqs.v[i].key, "node-role.kubernetes.io/master")) &&
        (p->reqs.v[i].op == DT_OP_IN || p->reqs.v[i].op == DT_OP_EXISTS))
      role = p->reqs.v[i].key;
  if (!role) return 0;
  bool spot_ok = true;
  for (size_t k = 0; k < p->reqs.n; k++) {
    const dt_mreq *q = &p->reqs.v[k];
    if (strcmp(q->key, DT_L_CAPACITY_TYPE)) continue;
    bool listed = false;
    for (size_t j = 0; j < q->n; j++) listed |= !strcmp(q->vals[j], "spot");
    if ((q->op == DT_OP_IN && !listed) || (q->op == DT_OP_NOTIN && listed) || q->op == DT_OP_DOESNOTEXIST)
      spot_ok = false;
  }
  if (!spot_ok) return 0;
  return mf_bad(x, "spec.template.spec.requirements",
                "a control-plane NodePool (%s) must not allow spot capacity: interruptions of several "
                "control-plane nodes lose etcd quorum; add karpenter.sh/capacity-type In [on-demand]",
                role);
}

/* What the NodeClaims it makes carry: its uid (ownerReferences), the
** template's annotations and terminationGracePeriod. */
static int claim_template(mctx *x, const cJSON *o, const cJSON *tmpl, dt_nodepool *p) {
  const cJSON *tspec = mf_get(tmpl, "spec");
  const cJSON *tg = mf_get(tspec, "terminationGracePeriod");
  const char *uid = mf_get_str(mf_get(o, "metadata"), "uid"), *tgp = mf_get_str(tspec, "terminationGracePeriod");
  if (tg && !cJSON_IsNull(tg) && (!tgp || !whole_duration(tgp)))
    return mf_bad(x, "spec.template.spec.terminationGracePeriod",
                  "expected a duration in hours, minutes and seconds such as 24h, "
                  "1h30m or 90s (Karpenter's pattern: no Never, no units below a second)");
  if ((uid && !(p->uid = dt__strdup(uid))) || (tgp && !(p->termination_grace = dt__strdup(tgp)))) return mf_oom(x);
  return mf_parse_kvs(x, mf_get(mf_get(tmpl, "metadata"), "annotations"), "spec.template.metadata.annotations",
                      &p->annotations);
}

/* Contradictions: requirements on one key (and template labels) that no
** value can satisfy make a NodePool that can never launch anything. */
static int contradictions(mctx *x, const dt_nodepool *p) {
  dt_symtab st = {0};
  dt_arena ar = {0};
  char f[300];
  int rc = 0;
  for (size_t i = 0; i < p->reqs.n && !rc; i++) {
    const dt_mreq *a = &p->reqs.v[i];
    dt_req acc;
    dt_sym vals[64];
    size_t nv = a->n < 64 ? a->n : 64;
    for (size_t k = 0; k < nv; k++) vals[k] = dt__sym(&st, a->vals[k]);
    dt__req_make(&ar, &acc, dt__sym(&st, a->key), a->op, vals, (uint32_t)nv, &st);
    dt_buf why = {0};
    dt__buf_printf(&why, "%s %s", a->key, dt__op_name(a->op));
    for (size_t j = 0; j < p->reqs.n + p->labels.n && !rc; j++) {
      dt_req b;
      if (j < p->reqs.n) {
        if (j == i || strcmp(p->reqs.v[j].key, a->key)) continue;
        const dt_mreq *q = &p->reqs.v[j];
        size_t n2 = q->n < 64 ? q->n : 64;
        for (size_t k = 0; k < n2; k++) vals[k] = dt__sym(&st, q->vals[k]);
        dt__req_make(&ar, &b, acc.key, q->op, vals, (uint32_t)n2, &st);
        dt__buf_printf(&why, " and %s", dt__op_name(q->op));
      } else {
        const dt_kv *l = &p->labels.v[j - p->reqs.n];
        if (strcmp(l->key, a->key)) continue;
        vals[0] = dt__sym(&st, l->val);
        dt__req_make(&ar, &b, acc.key, DT_OP_IN, vals, 1, &st);
        dt__buf_printf(&why, " and template label %s=%s", l->key, l->val);
      }
      bool ok = dt__req_intersects(&st, &acc, &b);
      dt__req_intersect(&ar, &st, &acc, &b, &acc);
      if (!ok) {
        snprintf(f, sizeof f, "spec.template.spec.requirements[%zu]", i);
        rc = mf_bad(x, f, "contradictory requirements: %s leave no value for %s", why.p ? why.p : a->key, a->key);
      }
    }
    dt__free(why.p);
  }
  int soom = st.oom || ar.oom;
  dt__symtab_free(&st);
  dt__arena_free(&ar);
  return !rc && soom ? mf_oom(x) : rc;
}

/* As Karpenter's NewScheduler leaves NodePools out of provisioning: one
** being deleted, or whose status says Ready=False (its NodeClass not ready,
** most often). A NodePool written by hand has no status: usable. */
static int pool_usable(mctx *x, const cJSON *o, dt_nodepool *p) {
  const cJSON *del = mf_get(mf_get(o, "metadata"), "deletionTimestamp");
  char why[400] = "";
  if (del && !cJSON_IsNull(del))
    snprintf(why, sizeof why, "being deleted");
  else
    mf_not_ready(o, why, sizeof why);
  /* Karpenter's validateWellKnownValues: a capacity-type requirement In
  ** none of on-demand, spot and reserved (or fewer of them than its
  ** minValues) keeps the NodePool from going Ready */
  const cJSON *r;
  cJSON_ArrayForEach(r, mf_get(mf_get(mf_get(mf_get(o, "spec"), "template"), "spec"), "requirements")) {
    const char *key = mf_get_str(r, "key"), *op = mf_get_str(r, "operator");
    if (*why || !key || !op || strcmp(key, DT_L_CAPACITY_TYPE) || strcmp(op, "In")) continue;
    const cJSON *v, *mv = mf_get(r, "minValues");
    int known = 0;
    cJSON_ArrayForEach(v, mf_get(r, "values")) known += cJSON_IsString(v) && dt__ct_parse(v->valuestring) >= 0;
    if (!known)
      snprintf(why, sizeof why,
               "requirement %s In has none of on-demand, spot and reserved among its values (the NodePool is not "
               "Ready)",
               DT_L_CAPACITY_TYPE);
    else if (cJSON_IsNumber(mv) && known < mv->valuedouble)
      snprintf(why, sizeof why,
               "requirement %s In has %d of on-demand, spot and reserved among its values, fewer than its minValues "
               "(the NodePool is not Ready)",
               DT_L_CAPACITY_TYPE, known);
  }
  if (*why && !(p->unusable = dt__strdup(why))) return mf_oom(x);
  return 0;
}

int mf_nodepool(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (mf_meta(x, o, &ns, &name, false) || mf_check_duplicate(x, NULL, name) || nodepool_validate(x, o) ||
      nodepool_kubelet(x, o, name))
    return mf_failed(x);
  bool v1beta1 = !strcmp(mf_get_str(o, "apiVersion"), "karpenter.sh/v1beta1");
  dt_nodepool p = {0};
  p.file = (char *)x->file;
  p.seq = x->m->seq++;
  const cJSON *spec = mf_get(o, "spec");
  const cJSON *tmpl = mf_get(spec, "template");
  const cJSON *tspec = mf_get(tmpl, "spec");
  int rc = !(p.name = dt__strdup(name)) ? mf_oom(x) : pool_size(x, spec, &p);
  if (!rc && (mf_parse_kvs(x, mf_get(mf_get(tmpl, "metadata"), "labels"), "spec.template.metadata.labels", &p.labels) ||
              mf_parse_mreqs(x, mf_get(tspec, "requirements"), "spec.template.spec.requirements", &p.reqs, true) ||
              mf_parse_taints(x, mf_get(tspec, "taints"), "spec.template.spec.taints", &p.taints, &p.ntaints) ||
              mf_parse_taints(x, mf_get(tspec, "startupTaints"), "spec.template.spec.startupTaints", &p.startup,
                              &p.nstartup) ||
              mf_parse_rlist(x, mf_get(spec, "limits"), "spec.limits", &p.limits, false)))
    rc = mf_failed(x);
  if (!rc) rc = pool_limits_taints(x, &p);
  if (!rc) rc = pool_annotations(x, o, &p);
  if (!rc) rc = control_plane_spot(x, &p);
  if (!rc &&
      (nodepool_disruption(x, spec, &p, v1beta1) || nodeclass_ref(x, mf_get(tspec, "nodeClassRef"), v1beta1, &p)))
    rc = mf_failed(x);
  if (!rc) rc = claim_template(x, o, tmpl, &p);
  if (!rc) rc = contradictions(x, &p);
  if (!rc) rc = pool_usable(x, o, &p);
  if (!rc && dt__vec_push(&x->m->pools, p)) rc = mf_oom(x);
  if (!rc) return 0;
  mf_pool_free(&p);
  return rc;
}
