/*
** mf_nodeclass.c: EC2NodeClasses read (karpenter.k8s.aws/v1, v1beta1): what
** Karpenter's AWS provider takes from one for the nodes it launches. The
** kubelet's maxPods, podsPerCore, kubeReserved, systemReserved and
** evictionHard, and the volume that gives ephemeral storage (a
** blockDeviceMapping, or the instance store under instanceStorePolicy RAID0),
** set each instance type's allocatable as its instancetype/types.go does; the
** zones of status.subnets are where its offerings are; status Ready=False
** keeps its NodePools from launching. Fields that shape nothing dovetail
** decides (role, tags, userData, metadataOptions, ...) are left as they are.
*/
#include "reader.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB (1024.0 * 1024 * 1024)

void mf_nodeclass_free(dt_nodeclass *c) {
  dt__free(c->name);
  dt__rlist_free(&c->kube_reserved);
  dt__rlist_free(&c->system_reserved);
  mf_strs_free(c->zones, c->nzones);
  for (size_t i = 0; c->zone_ids && i < c->nzones; i++) dt__free(c->zone_ids[i]);
  dt__free(c->zone_ids);
  dt__free(c->unready);
  dt__free(c->k_hash);
  dt__free(c->k_hash_version);
  for (size_t i = 0; i < c->namis; i++) {
    dt__free(c->amis[i].id);
    mf_mreqs_free(&c->amis[i].reqs);
  }
  dt__free(c->amis);
}

const dt_nodeclass *dt__nodeclass_of(const dt_manifests *m, const dt_nodepool *np, const char **missing) {
  const cJSON *ref = np->node_class_ref;
  const char *g = mf_get_str(ref, "group"), *k = mf_get_str(ref, "kind"), *n = mf_get_str(ref, "name");
  if (missing) *missing = NULL;
  if (!g || !k || !n || strcmp(g, "karpenter.k8s.aws") || strcmp(k, "EC2NodeClass") || !m->nodeclasses.n) return NULL;
  for (size_t i = 0; i < m->nodeclasses.n; i++)
    if (!strcmp(m->nodeclasses.v[i].name, n)) return &m->nodeclasses.v[i];
  if (missing) *missing = n;
  return NULL;
}

/* Drift marks: the hash of spec without the selector terms (what they
** select is in status, and is checked there: AMIs), and Karpenter's own
** hash annotations, which its NodeClaims carry too. */
/* As Karpenter's hashstructure options read a value (IgnoreZeroValue,
** ZeroNil, SlicesAsSets): fields that are null, false, 0 or "" left out,
** and every list's items in one order (by their canonical text). */
static void hash_form(cJSON *v) {
  if (cJSON_IsObject(v)) {
    for (cJSON *c = v->child, *next; c; c = next) {
      next = c->next;
      hash_form(c);
      bool zero = cJSON_IsNull(c) || cJSON_IsFalse(c) || (cJSON_IsNumber(c) && c->valuedouble == 0) ||
                  (cJSON_IsString(c) && !*c->valuestring);
      if (zero) cJSON_Delete(cJSON_DetachItemViaPointer(v, c));
    }
  } else if (cJSON_IsArray(v)) {
    size_t n = 0;
    for (cJSON *c = v->child; c; c = c->next) hash_form(c), n++;
    if (n < 2) return;
    cJSON **items = dt__malloc(n * sizeof *items);
    char **keys = dt__calloc(n, sizeof *keys);
    bool ok = items && keys;
    n = 0;
    for (cJSON *c = v->child; ok && c; c = c->next, n++) {
      dt_buf b = {0};
      dt__json_canon(c, &b);
      items[n] = c;
      keys[n] = b.p;
      ok = !b.oom && b.p;
    }
    for (size_t i = 1; ok && i < n; i++) /* insertion sort: lists here are short */
      for (size_t k = i; k > 0 && strcmp(keys[k - 1], keys[k]) > 0; k--) {
        char *tk = keys[k];
        cJSON *ti = items[k];
        keys[k] = keys[k - 1], items[k] = items[k - 1];
        keys[k - 1] = tk, items[k - 1] = ti;
      }
    if (ok) {
      for (size_t i = 0; i < n; i++) cJSON_DetachItemViaPointer(v, items[i]);
      for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(v, items[i]);
    }
    for (size_t i = 0; keys && i < n; i++) dt__free(keys[i]);
    dt__free(keys);
    dt__free(items);
  }
}

static int drift_marks(mctx *x, const cJSON *o, const cJSON *spec, dt_nodeclass *c) {
  cJSON *t = spec ? cJSON_Duplicate(spec, 1) : cJSON_CreateObject();
  if (!t) return mf_oom(x);
  /* Karpenter's hash:"ignore" fields: what the selectors select is in status
  ** and checked there; the AMI family is hashed as resolved */
  static const char *const ignored[] = {"amiSelectorTerms",
                                        "subnetSelectorTerms",
                                        "securityGroupSelectorTerms",
                                        "capacityReservationSelectorTerms",
                                        "ipPrefixCount",
                                        "amiFamily"};
  for (size_t i = 0; i < sizeof ignored / sizeof *ignored; i++) cJSON_DeleteItemFromObjectCaseSensitive(t, ignored[i]);
  hash_form(t);
  if (!cJSON_AddStringToObject(t, "\x01amiFamily", c->family_name)) {
    cJSON_Delete(t);
    return mf_oom(x);
  }
  dt_buf b = {0};
  dt__json_canon(t, &b);
  c->hash = dt__hash64(b.p ? b.p : "", b.len);
  int oom = b.oom;
  dt__free(b.p);
  cJSON_Delete(t);
  if (oom) return mf_oom(x);
  const cJSON *ann = mf_get(mf_get(o, "metadata"), "annotations");
  const char *kh = mf_get_str(ann, "karpenter.k8s.aws/ec2nodeclass-hash"),
             *kv = mf_get_str(ann, "karpenter.k8s.aws/ec2nodeclass-hash-version");
  if (kh && *kh && !(c->k_hash = dt__strdup(kh))) return mf_oom(x);
  if (kv && *kv && !(c->k_hash_version = dt__strdup(kv))) return mf_oom(x);
  return 0;
}

/* status.amis: each image and the instance types it is for. */
static int amis(mctx *x, const cJSON *o, dt_nodeclass *c) {
  const cJSON *a = mf_get(mf_get(o, "status"), "amis");
  size_t n;
  int lr = mf_list_room(x, a, "status.amis", "a list of images", sizeof *c->amis, (void **)&c->amis, &n);
  if (lr) return lr > 0 ? 0 : lr;
  size_t i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, a) {
    char f[300];
    struct dt_ami *am = &c->amis[c->namis++];
    snprintf(f, sizeof f, "status.amis[%zu].id", i);
    const char *id = mf_get_str(e, "id");
    if (!id || !*id) return mf_bad(x, f, "missing: each image has an id");
    if (!(am->id = dt__strdup(id))) return mf_oom(x);
    snprintf(f, sizeof f, "status.amis[%zu].requirements", i++);
    if (mf_parse_mreqs(x, mf_get(e, "requirements"), f, &am->reqs, false)) return mf_failed(x);
  }
  return 0;
}

/* The AMI family as Karpenter's AMIFamily() resolves it: spec.amiFamily
** when set, else the family of an amiSelectorTerms alias (family@version);
** its name into c->family_name, for the drift hash. */
static int ami_family(mctx *x, const cJSON *spec, bool v1beta1, dt_nodeclass *c) {
  static const struct {
    const char *alias, *name;
    int family;
  } fams[] = {{"al2023", "AL2023", DT_AMI_AL2023},
              {"al2", "AL2", DT_AMI_AL2},
              {"bottlerocket", "Bottlerocket", DT_AMI_BOTTLEROCKET},
              {"windows2019", "Windows2019", DT_AMI_WINDOWS},
              {"windows2022", "Windows2022", DT_AMI_WINDOWS},
              {"windows2025", "Windows2025", DT_AMI_WINDOWS},
              {NULL, "Custom", DT_AMI_CUSTOM}};
  const size_t nf = sizeof fams / sizeof *fams;
  char f[300];
  const cJSON *terms = mf_get(spec, "amiSelectorTerms");
  if (terms && !cJSON_IsNull(terms) && !cJSON_IsArray(terms))
    return mf_bad(x, "spec.amiSelectorTerms", "expected a list of terms");
  int alias = -1;
  size_t i = 0;
  const cJSON *t;
  cJSON_ArrayForEach(t, (cJSON_IsArray(terms) ? terms : NULL)) {
    const cJSON *a = mf_get(t, "alias");
    snprintf(f, sizeof f, "spec.amiSelectorTerms[%zu].alias", i++);
    if (!a || cJSON_IsNull(a)) continue;
    const char *s = cJSON_IsString(a) ? a->valuestring : "";
    size_t fl = strcspn(s, "@");
    for (size_t k = 0; k < nf && fams[k].alias && alias < 0; k++)
      if (strlen(fams[k].alias) == fl && !strncmp(s, fams[k].alias, fl) && s[fl] == '@' && s[fl + 1]) alias = (int)k;
    if (alias < 0)
      return mf_bad(x, f,
                    "expected family@version with family one of al2, al2023, bottlerocket, windows2019, windows2022, "
                    "windows2025 (such as al2023@latest)");
    break;
  }
  const cJSON *fam = mf_get(spec, "amiFamily");
  if (!fam || cJSON_IsNull(fam)) {
    if (alias < 0)
      return mf_bad(x, "spec.amiFamily",
                    "missing: Karpenter requires it when no term of spec.amiSelectorTerms is an alias (such as "
                    "al2023@latest)");
    c->family = fams[alias].family;
    c->family_name = fams[alias].name;
    return 0;
  }
  const char *s = cJSON_IsString(fam) ? fam->valuestring : "";
  /* v1beta1's Ubuntu, as the AWS provider's v1 conversion took it: the AL2
  ** family (the same user data) on Ubuntu's root volume, /dev/sda1 of 20Gi,
  ** unless mappings are given (volumes() reads those); without
  ** amiSelectorTerms the class is incompatible and provisions nothing. */
  if (v1beta1 && !strcmp(s, "Ubuntu")) {
    c->family = DT_AMI_AL2;
    c->family_name = "AL2";
    c->ubuntu = true;
    if (!cJSON_IsArray(terms) || !cJSON_GetArraySize(terms)) c->ubuntu_incompatible = true;
    return 0;
  }
  for (size_t k = 0; k < nf; k++)
    if (!strcmp(s, fams[k].name)) {
      c->family = fams[k].family;
      c->family_name = fams[k].name;
      return 0;
    }
  return mf_bad(x, "spec.amiFamily",
                "expected AL2, AL2023, Bottlerocket, Windows2019, Windows2022, Windows2025 or Custom");
}

/* A resource map of the kubelet (kubeReserved, systemReserved): cpu,
** memory, ephemeral-storage and pid, each a quantity; pid reserves nothing
** dovetail packs and is left out. */
static int reserved(mctx *x, const cJSON *kubelet, const char *key, dt_rlist *out, dt_buf *cel) {
  char f[300];
  dt__join(f, sizeof f, "spec.kubelet.", key);
  const cJSON *o = mf_get(kubelet, key);
  if (!o || cJSON_IsNull(o)) return 0;
  if (!cJSON_IsObject(o)) return mf_bad(x, f, "expected a map of resources to quantities");
  const cJSON *r;
  cJSON_ArrayForEach(r, o) {
    if (!strcmp(r->string, "pid")) continue;
    if (strcmp(r->string, "cpu") && strcmp(r->string, "memory") && strcmp(r->string, "ephemeral-storage")) {
      dt__join(f, sizeof f, "spec.kubelet.", key, ".", r->string);
      return mf_bad(x, f, "unknown resource (Karpenter takes cpu, memory, ephemeral-storage and pid)");
    }
  }
  cJSON *copy = cJSON_Duplicate(o, true);
  if (!copy) return mf_oom(x);
  cJSON_DeleteItemFromObjectCaseSensitive(copy, "pid");
  /* a string that is no quantity is a CEL expression (the AWS provider's
  ** NodeClassCEL): named in cel, and left out; one too large to hold is a
  ** quantity all the same, refused below naming its field */
  for (cJSON *r2 = copy->child, *nx; r2; r2 = nx) {
    nx = r2->next;
    int64_t milli;
    dt_error e = {0};
    if (!cJSON_IsString(r2)) continue;
    int qrc = dt_quantity_parse(r2->valuestring, &milli, &e);
    if (!qrc || qrc == DT_ERANGE) continue;
    dt__buf_printf(cel, "%s%s.%s", cel->len ? ", " : "", key, r2->string);
    cJSON_Delete(cJSON_DetachItemViaPointer(copy, r2));
  }
  int rc = mf_parse_rlist(x, copy, f, out, false);
  cJSON_Delete(copy);
  return rc ? mf_failed(x) : 0;
}

/* An eviction signal's threshold: a quantity, or a percent from 0 to 100. */
static int threshold(mctx *x, const cJSON *v, const char *field, dt_evict *out) {
  const char *s = cJSON_IsString(v) ? v->valuestring : NULL;
  if (!s) return mf_bad(x, field, "expected a quantity (such as 500Mi) or a percent (such as 10%%)");
  size_t n = strlen(s);
  if (n && s[n - 1] == '%') {
    char *end;
    double p = strtod(s, &end);
    if (end != s + n - 1 || !(p >= 0 && p <= 100))
      return mf_bad(x, field, "\"%s\": expected a percent from 0 to 100", s);
    *out = (dt_evict){true, true, p};
    return 0;
  }
  int64_t milli;
  dt_error e = {0};
  if (dt_quantity_parse(s, &milli, &e) || milli < 0)
    return mf_bad(x, field, "\"%s\" is not a quantity (such as 500Mi) or a percent (such as 10%%)", s);
  *out = (dt_evict){true, false, (double)milli / 1000};
  return 0;
}

static int kubelet(mctx *x, const cJSON *spec, dt_nodeclass *c, dt_buf *cel) {
  const cJSON *k = mf_get(spec, "kubelet");
  c->max_pods = -1;
  if (!k || cJSON_IsNull(k)) return 0;
  if (!cJSON_IsObject(k)) return mf_bad(x, "spec.kubelet", "expected a map");
  const cJSON *mp = mf_get(k, "maxPods"), *ppc = mf_get(k, "podsPerCore");
  if (cJSON_IsString(mp)) { /* IntOrString: a string is a CEL expression */
    dt__buf_printf(cel, "%smaxPods", cel->len ? ", " : "");
  } else if (mp && !cJSON_IsNull(mp)) {
    if (!mf_is_int_in(mp, 0, 2147483647)) return mf_bad(x, "spec.kubelet.maxPods", "expected a whole number from 0");
    c->max_pods = (int64_t)mp->valuedouble;
  }
  if (ppc && !cJSON_IsNull(ppc)) {
    if (!mf_is_int_in(ppc, 0, 2147483647))
      return mf_bad(x, "spec.kubelet.podsPerCore", "expected a whole number from 0");
    c->pods_per_core = (int64_t)ppc->valuedouble;
  }
  if (reserved(x, k, "kubeReserved", &c->kube_reserved, cel) ||
      reserved(x, k, "systemReserved", &c->system_reserved, cel))
    return mf_failed(x);
  const cJSON *eh = mf_get(k, "evictionHard");
  if (eh && !cJSON_IsNull(eh) && !cJSON_IsObject(eh))
    return mf_bad(x, "spec.kubelet.evictionHard", "expected a map of signals to thresholds");
  const cJSON *sig;
  cJSON_ArrayForEach(sig, (cJSON_IsObject(eh) ? eh : NULL)) {
    static const char *const known[] = {"memory.available",
                                        "nodefs.available",
                                        "nodefs.inodesFree",
                                        "imagefs.available",
                                        "imagefs.inodesFree",
                                        "pid.available",
                                        NULL};
    bool ok = false;
    for (const char *const *s = known; *s && !ok; s++) ok = !strcmp(*s, sig->string);
    char f[300];
    dt__join(f, sizeof f, "spec.kubelet.evictionHard.", sig->string);
    if (!ok)
      return mf_bad(x, f,
                    "unknown signal (Karpenter takes memory.available, nodefs.available, nodefs.inodesFree, "
                    "imagefs.available, imagefs.inodesFree and pid.available)");
    if (!strcmp(sig->string, "memory.available") && threshold(x, sig, f, &c->evict_mem)) return mf_failed(x);
    if (!strcmp(sig->string, "nodefs.available") && threshold(x, sig, f, &c->evict_fs)) return mf_failed(x);
  }
  return 0;
}

/* The volume Karpenter counts as the node's ephemeral storage: the mapping
** marked rootVolume; for a Custom AMI the last mapping; otherwise the one
** on the family's ephemeral device (/dev/xvda, Bottlerocket's data volume
** /dev/xvdb, Windows' /dev/sda1). None: the family's default size. */
static int volumes(mctx *x, const cJSON *spec, dt_nodeclass *c) {
  c->volume_bytes = -1;
  const cJSON *isp = mf_get(spec, "instanceStorePolicy");
  if (isp && !cJSON_IsNull(isp)) {
    if (!cJSON_IsString(isp) || strcmp(isp->valuestring, "RAID0"))
      return mf_bad(x, "spec.instanceStorePolicy", "expected RAID0");
    c->raid0 = true;
  }
  const cJSON *bdm = mf_get(spec, "blockDeviceMappings");
  if ((!bdm || cJSON_IsNull(bdm)) && c->ubuntu) c->volume_bytes = 20 * (int64_t)GIB;
  if (!bdm || cJSON_IsNull(bdm)) return 0;
  if (!cJSON_IsArray(bdm)) return mf_bad(x, "spec.blockDeviceMappings", "expected a list of mappings");
  const char *dev = c->family == DT_AMI_BOTTLEROCKET ? "/dev/xvdb"
                    : c->family == DT_AMI_WINDOWS    ? "/dev/sda1"
                    : c->family == DT_AMI_CUSTOM     ? NULL
                                                     : "/dev/xvda";
  int64_t root = -1, on_dev = -1, last = -1;
  size_t i = 0;
  const cJSON *m;
  cJSON_ArrayForEach(m, bdm) {
    char f[300];
    snprintf(f, sizeof f, "spec.blockDeviceMappings[%zu]", i++);
    if (!cJSON_IsObject(m)) return mf_bad(x, f, "expected a mapping with deviceName and ebs");
    const cJSON *sz = mf_get(mf_get(m, "ebs"), "volumeSize");
    int64_t bytes = -1;
    if (sz && !cJSON_IsNull(sz)) {
      char tmp[64];
      const char *s = dt__scalar(sz, tmp, sizeof tmp);
      int64_t milli;
      dt_error e = {0};
      if (!s || dt_quantity_parse(s, &milli, &e) || milli <= 0 || milli / 1000 > 64 * (int64_t)GIB * 1024) {
        char fs[320];
        dt__join(fs, sizeof fs, f, ".ebs.volumeSize");
        return mf_bad(x, fs, "expected a size such as 100Gi, at most 64Ti");
      }
      bytes = milli / 1000;
    }
    const char *dn = mf_get_str(m, "deviceName");
    const cJSON *rv = mf_get(m, "rootVolume");
    if (cJSON_IsTrue(rv) && root < 0) root = bytes;
    if (dev && dn && !strcmp(dn, dev) && on_dev < 0) on_dev = bytes;
    last = bytes;
  }
  c->volume_bytes = root >= 0 ? root : c->family == DT_AMI_CUSTOM ? last : on_dev;
  return 0;
}

/* status: the zones of its subnets, and Ready=False. */
static int status(mctx *x, const cJSON *o, dt_nodeclass *c) {
  const cJSON *st = mf_get(o, "status"), *sn = mf_get(st, "subnets");
  if (sn && !cJSON_IsNull(sn) && !cJSON_IsArray(sn)) return mf_bad(x, "status.subnets", "expected a list");
  size_t n = cJSON_IsArray(sn) ? (size_t)cJSON_GetArraySize(sn) : 0;
  if (n && (!(c->zones = dt__calloc(n, sizeof *c->zones)) || !(c->zone_ids = dt__calloc(n, sizeof *c->zone_ids))))
    return mf_oom(x);
  size_t i = 0;
  const cJSON *s;
  cJSON_ArrayForEach(s, (cJSON_IsArray(sn) ? sn : NULL)) {
    const char *z = mf_get_str(s, "zone");
    char f[300];
    snprintf(f, sizeof f, "status.subnets[%zu].zone", i++);
    if (!z || !*z) return mf_bad(x, f, "missing: each subnet names its zone");
    const char *zid = mf_get_str(s, "zoneID");
    bool seen = false;
    for (size_t k = 0; k < c->nzones && !seen; k++) seen = !strcmp(c->zones[k], z);
    if (seen) continue;
    if (!(c->zones[c->nzones] = dt__strdup(z))) return mf_oom(x);
    if (zid && *zid && !(c->zone_ids[c->nzones] = dt__strdup(zid))) {
      c->nzones++;
      return mf_oom(x);
    }
    c->nzones++;
  }
  /* Karpenter's Create launches only for a node class whose Ready is True
  ** at its generation (Ready=Unknown, none at all, or an older
  ** observedGeneration: not yet); one written by hand has no status at all */
  const cJSON *ready = mf_condition(o, "Ready");
  const cJSON *og = mf_get(ready, "observedGeneration"), *gen = mf_get(mf_get(o, "metadata"), "generation");
  char why[400] = "";
  if (cJSON_IsObject(st) && !ready)
    snprintf(why, sizeof why, "a status without a Ready condition (not reconciled yet)");
  else if (!mf_not_ready(o, why, sizeof why) && ready && cJSON_IsNumber(og) && cJSON_IsNumber(gen) &&
           og->valuedouble < gen->valuedouble)
    snprintf(why, sizeof why, "status Ready for generation %.0f, not its generation %.0f (not reconciled yet)",
             og->valuedouble, gen->valuedouble);
  if (*why && !(c->unready = dt__strdup(why))) return mf_oom(x);
  return 0;
}

int mf_nodeclass(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (mf_meta(x, o, &ns, &name, false) || mf_check_duplicate(x, NULL, name)) return mf_failed(x);
  dt_nodeclass c = {0};
  c.file = (char *)x->file;
  const cJSON *spec = mf_get(o, "spec");
  int rc = !(c.name = dt__strdup(name)) ? mf_oom(x) : 0;
  if (!rc && spec && !cJSON_IsObject(spec)) rc = mf_bad(x, "spec", "expected a map");
  if (!rc) rc = ami_family(x, spec, !strcmp(mf_get_str(o, "apiVersion"), "karpenter.k8s.aws/v1beta1"), &c);
  dt_buf cel = {0};
  if (!rc) rc = kubelet(x, spec, &c, &cel);
  if (!rc) rc = volumes(x, spec, &c);
  if (!rc) rc = status(x, o, &c);
  if (!rc && c.ubuntu_incompatible && !c.unready &&
      !(c.unready = dt__strdup("amiFamily Ubuntu without amiSelectorTerms, which Karpenter v1's conversion marks "
                               "incompatible: it provisions nothing for it")))
    rc = mf_oom(x);
  /* CEL expressions in the kubelet (AWS provider, NodeClassCEL gate, off by
  ** default) are not evaluated. Where the node class says it is Ready (its
  ** Karpenter had the gate on) its nodes are sized with the AMI family's
  ** defaults for those fields, noted; otherwise it is not Ready, as
  ** Karpenter's validation leaves it with the gate off. */
  if (!rc && cel.len && !c.unready) { /* not Ready for another reason: that one stands */
    const char *rs = mf_get_str(mf_condition(o, "Ready"), "status");
    char why[600];
    if (rs && !strcmp(rs, "True")) {
      dt__buf_printf(&x->m->notes,
                     "%s: %s: spec.kubelet %s: CEL expressions dovetail does not evaluate; its nodes are sized with "
                     "the AMI family's defaults for them\n",
                     x->file, x->obj, cel.p);
    } else {
      snprintf(why, sizeof why,
               "CEL expressions in spec.kubelet (%s), which Karpenter's AWS provider takes only with its NodeClassCEL "
               "feature gate (off by default) and dovetail does not evaluate",
               cel.p);
      if (!(c.unready = dt__strdup(why))) rc = mf_oom(x);
    }
  }
  if (cel.oom && !rc) rc = mf_oom(x);
  dt__free(cel.p);
  if (!rc) rc = amis(x, o, &c);
  if (!rc) rc = drift_marks(x, o, spec, &c);
  if (!rc && dt__vec_push(&x->m->nodeclasses, c)) rc = mf_oom(x);
  if (!rc) return 0;
  mf_nodeclass_free(&c);
  return mf_failed(x);
}
