/*
** mf_overlay.c: NodeOverlays (karpenter.sh/v1alpha1), as Karpenter's
** NodeOverlay support (its feature gate of that name; pkg/apis/v1alpha1 and
** the nodeoverlay controller in kubernetes-sigs/karpenter).
**
** An overlay changes what the scheduling simulation believes of the
** instance types its requirements select, NodePool by NodePool: their
** offerings' prices (spec.price, or spec.priceAdjustment as an amount or a
** percentage) and their capacity in extended resources (spec.capacity). How
** overlays combine, by weight, and when two of one weight conflict is
** sched_overlay.c's; here each is read and checked as the API server checks
** it against the CRD, so one the API server would refuse is refused,
** naming the field.
*/
#include "reader.h"

#include <stdlib.h>
#include <string.h>

void mf_overlay_free(dt_nodeoverlay *v) {
  dt__free(v->name);
  dt__free(v->price_text);
  mf_mreqs_free(&v->reqs);
  dt__rlist_free(&v->capacity);
}

static const char *const k_spec_fields[] = {"requirements", "price", "priceAdjustment", "capacity", "weight", NULL};

/* The CRD's rules on a requirement's key: the karpenter.sh domain but its
** capacity-type and nodepool labels, and kubernetes.io/hostname, are
** restricted. */
static const char *key_restricted(const char *key) {
  if (!strcmp(key, DT_L_CAPACITY_TYPE) || !strcmp(key, DT_L_NODEPOOL)) return NULL;
  if (!strcmp(key, DT_L_HOSTNAME)) return "label \"kubernetes.io/hostname\" is restricted";
  const char *slash = strchr(key, '/');
  size_t dl = slash ? (size_t)(slash - key) : strlen(key);
  if (dl >= 12 && !strncmp(key + dl - 12, "karpenter.sh", 12)) return "label domain \"karpenter.sh\" is restricted";
  return NULL;
}

/* A decimal as the CRD's patterns read it: digits with at most one point
** (digits after it); *end past it. */
static bool decimal(const char *s, bool lead_digits, const char **end) {
  const char *q = s;
  size_t a = strspn(q, "0123456789");
  q += a;
  if (*q == '.') {
    size_t b = strspn(q + 1, "0123456789");
    if (!b) return false;
    q += 1 + b;
  } else if (!a) {
    return false;
  }
  if (lead_digits && !a) return false;
  *end = q;
  return true;
}

/* spec.price: ^\d+(\.\d+)?$ */
static bool price_ok(const char *s) {
  const char *e;
  return decimal(s, true, &e) && !*e;
}

/* spec.priceAdjustment: a signed amount (+1.5, -0.25, -.5), a raise in
** percent (+10%), or a cut in percent of at most two integer digits (-15%,
** -99.5%) or -100%, as the CRD's pattern. */
static bool adjustment_ok(const char *s, bool *percent) {
  const char *e;
  *percent = false;
  if (*s != '+' && *s != '-') return false;
  if (!decimal(s + 1, false, &e)) return false;
  if (!*e) return true;
  if (strcmp(e, "%")) return false;
  *percent = true;
  if (*s == '+' || !strcmp(s, "-100%")) return true;
  size_t a = strspn(s + 1, "0123456789");
  return a >= 1 && a <= 2;
}

int mf_nodeoverlay(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (mf_meta(x, o, &ns, &name, false) || mf_check_duplicate(x, NULL, name)) return mf_failed(x);
  const cJSON *spec = mf_get(o, "spec");
  if (!cJSON_IsObject(spec)) return mf_bad(x, "spec", "missing or not a map");
  if (mf_known_fields(x, spec, "spec", k_spec_fields)) return mf_failed(x);
  dt_nodeoverlay v = {0};
  v.file = x->file;
  int rc = (v.name = dt__strdup(name)) ? 0 : mf_oom(x);
  const cJSON *reqs = mf_get(spec, "requirements");
  if (!rc && (!reqs || cJSON_IsNull(reqs)))
    rc = mf_bad(x, "spec.requirements", "missing (the CRD requires it; [] selects every instance type)");
  if (!rc && cJSON_IsArray(reqs) && cJSON_GetArraySize(reqs) > 100)
    rc = mf_bad(x, "spec.requirements", "%d requirements; the CRD allows at most 100", cJSON_GetArraySize(reqs));
  /* values on Exists and DoesNotExist are ignored, as the CRD has no rule
  ** against them and Karpenter reads none (NodePools refuse them) */
  cJSON *rq = cJSON_IsArray(reqs) ? cJSON_Duplicate(reqs, true) : NULL;
  if (!rc && cJSON_IsArray(reqs) && !rq) rc = mf_oom(x);
  cJSON *it;
  cJSON_ArrayForEach(it, rq) {
    const char *op = mf_get_str(it, "operator");
    if (op && (!strcmp(op, "Exists") || !strcmp(op, "DoesNotExist")))
      cJSON_DeleteItemFromObjectCaseSensitive(it, "values");
  }
  if (!rc && mf_parse_mreqs(x, rq ? rq : reqs, "spec.requirements", &v.reqs, false)) rc = mf_failed(x);
  cJSON_Delete(rq);
  for (size_t i = 0; !rc && i < v.reqs.n; i++) {
    const dt_mreq *q = &v.reqs.v[i];
    char f[100];
    snprintf(f, sizeof f, "spec.requirements[%zu].key", i);
    const char *why = key_restricted(q->key);
    if (why) rc = mf_bad(x, f, "%s (the CRD's rule)", why);
    if (!rc && q->op >= DT_OP_GT && (q->n != 1 || atoll(q->vals[0]) < 0)) { /* CEL's int("-0") is 0: taken */
      snprintf(f, sizeof f, "spec.requirements[%zu].values", i);
      rc = mf_bad(x, f,
                  "requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive integer value "
                  "(the CRD's rule)");
    }
  }
  const cJSON *pr = mf_get(spec, "price"), *pa = mf_get(spec, "priceAdjustment");
  bool has_pr = pr && !cJSON_IsNull(pr), has_pa = pa && !cJSON_IsNull(pa);
  if (!rc && has_pr && has_pa) rc = mf_bad(x, "spec", "cannot set both 'price' and 'priceAdjustment' (the CRD's rule)");
  if (!rc && has_pr) {
    if (!cJSON_IsString(pr) || !price_ok(pr->valuestring))
      rc = mf_bad(x, "spec.price", "expected a price as a string of digits with an optional fraction (\"5.00\")");
    else
      v.price_kind = DT_OVL_PRICE;
  }
  if (!rc && has_pa) {
    bool pct;
    if (!cJSON_IsString(pa) || !adjustment_ok(pa->valuestring, &pct))
      rc = mf_bad(x, "spec.priceAdjustment",
                  "expected a signed amount (\"+0.5\", \"-1.25\") or percentage (\"+10%%\", \"-15%%\", at most "
                  "\"-100%%\") as a string");
    else
      v.price_kind = pct ? DT_OVL_PERCENT : DT_OVL_ADD;
  }
  if (!rc && v.price_kind) {
    const char *t = (has_pr ? pr : pa)->valuestring;
    v.price = strtod(t, NULL); /* "+10%" reads as 10 */
    if (!(v.price_text = dt__strdup(t))) rc = mf_oom(x);
  }
  const cJSON *cap = mf_get(spec, "capacity");
  if (!rc && cap && !cJSON_IsNull(cap)) {
    v.has_capacity = true;
    if (mf_parse_rlist(x, cap, "spec.capacity", &v.capacity, false)) rc = mf_failed(x);
    static const char *const well_known[] = {"cpu", "memory", "ephemeral-storage", "pods", NULL};
    for (size_t i = 0; !rc && i < v.capacity.n; i++)
      if (mf_one_of(v.capacity.v[i].name, well_known)) {
        char f[300];
        dt__join(f, sizeof f, "spec.capacity.", v.capacity.v[i].name);
        rc = mf_bad(x, f, "invalid resource restricted: capacity adds extended resources only (the CRD's rule)");
      }
  }
  const cJSON *w = mf_get(spec, "weight");
  if (!rc && w && !cJSON_IsNull(w)) {
    if (!mf_is_int_in(w, 1, 10000))
      rc = mf_bad(x, "spec.weight", "expected an integer from 1 to 10000");
    else
      v.weight = (int32_t)w->valuedouble;
  }
  if (!rc && dt__vec_push(&x->m->nodeoverlays, v)) rc = mf_oom(x);
  if (rc) {
    mf_overlay_free(&v);
    return mf_failed(x);
  }
  return 0;
}
