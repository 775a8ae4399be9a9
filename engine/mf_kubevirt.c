/*
** mf_kubevirt.c: KubeVirt read: VirtualMachinePools (strategies, selection
** policies, autohealing, name generation) and VirtualMachines (their
** virt-launcher pod, template hashes), and the KubeVirt object's defaults.
*/
#include "reader.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *const dt__sort_names[5] = {"Random", "Oldest", "Newest", "AscendingOrder", "DescendingOrder"};

#define DEFAULT_BURST          250
#define DEFAULT_HEAL_THRESHOLD 3
#define DEFAULT_MIN_FAILING    (5 * 60)
#define DEFAULT_HEAL_BASE      60
#define DEFAULT_HEAL_FACTOR    2.0
#define DEFAULT_HEAL_CAP       (30 * 60)

static void selpolicy_free(dt_selpolicy *s) {
  for (size_t i = 0; i < s->n; i++) {
    mf_selector_free(&s->v[i].labels);
    mf_mreqs_free(&s->v[i].node);
  }
  dt__free(s->v);
  memset(s, 0, sizeof *s);
}

void mf_vmpool_free(dt_vmpool *p) {
  dt__free(p->uid);
  dt__free(p->ns);
  dt__free(p->name);
  mf_selector_free(&p->selector);
  selpolicy_free(&p->scale_sel);
  selpolicy_free(&p->update_sel);
  cJSON_Delete(p->tmpl);
  mf_strs_free(p->dv, p->ndv);
  mf_pod_free(&p->launcher);
}

void mf_vm_free(dt_vm *v) {
  dt__free(v->ns);
  dt__free(v->name);
  dt__free(v->owner);
  dt__free(v->owner_uid);
  dt__kvs_free(&v->labels);
  dt__kvs_free(&v->node_selector);
  dt__free(v->status);
  dt__free(v->revision);
  dt__free(v->tmpl_hash);
  dt__free(v->fw_uuid);
  dt__free(v->fw_serial);
}

static uint64_t canon_hash(mctx *x, const cJSON *v, int *rc) {
  dt_buf b = {0};
  dt__json_canon(v, &b);
  uint64_t h = dt__hash64(b.p ? b.p : "", b.len);
  if (b.oom) *rc = mf_oom(x);
  dt__free(b.p);
  return h;
}

/* Drop o.key, then o itself from parent when that left it empty. */
static void drop(cJSON *parent, const char *pkey, cJSON *o, const char *key) {
  cJSON_DeleteItemFromObjectCaseSensitive(o, key);
  if (parent && cJSON_IsObject(o) && !o->child) cJSON_DeleteItemFromObjectCaseSensitive(parent, pkey);
}

/*
** What the cluster adds to a VM the pool controller made, left out of both
** sides before a VM's template is compared with its pool's (in place): the
** revision label KubeVirt injects into the template, the null
** creationTimestamp Go writes for an ObjectMeta, and what virt-api's
** mutating webhook fills in (architecture, machine type, firmware uuid and
** serial). Without this every VM read from a cluster differed from its pool
** and was restarted or re-created, disks and all. A pool template that sets
** one of these itself is compared without it too.
*/
/* A quantity string in its canonical form (1024Mi and 1Gi alike), in place. */
static void canon_quantity(cJSON *o, const char *key, const char *resource) {
  cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  int64_t milli;
  dt_error e = {0};
  if (!cJSON_IsString(v) || dt_quantity_parse(v->valuestring, &milli, &e)) return;
  char buf[64];
  dt__fmt_quantity(buf, sizeof buf, resource, milli);
  cJSON_SetValuestring(v, buf); /* out of memory: the text stays as written */
}

static void strip_server_fields(cJSON *vmi, cJSON *dvt) {
  cJSON *md = cJSON_GetObjectItemCaseSensitive(vmi, "metadata");
  cJSON *labels = cJSON_GetObjectItemCaseSensitive(md, "labels");
  if (cJSON_IsObject(labels)) drop(md, "labels", labels, "kubevirt.io/vm-pool-revision-name");
  /* virt-api's VM mutator stamps the PCI topology version on new VMs */
  cJSON *ann = cJSON_GetObjectItemCaseSensitive(md, "annotations");
  if (cJSON_IsObject(ann)) drop(md, "annotations", ann, "kubevirt.io/pci-topology-version");
  if (cJSON_IsObject(md)) drop(vmi, "metadata", md, "creationTimestamp");
  cJSON *spec = cJSON_GetObjectItemCaseSensitive(vmi, "spec");
  if (cJSON_IsObject(spec)) cJSON_DeleteItemFromObjectCaseSensitive(spec, "architecture");
  cJSON *dom = cJSON_GetObjectItemCaseSensitive(spec, "domain");
  if (cJSON_IsObject(dom)) {
    /* Go writes an empty resources struct out; sizes compare by value */
    cJSON *res = cJSON_GetObjectItemCaseSensitive(dom, "resources");
    if (cJSON_IsObject(res) && !res->child) cJSON_DeleteItemFromObjectCaseSensitive(dom, "resources");
    canon_quantity(cJSON_GetObjectItemCaseSensitive(dom, "memory"), "guest", "memory");
    static const char *const rl[] = {"requests", "limits"};
    for (int i = 0; i < 2; i++) {
      cJSON *q = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(dom, "resources"), rl[i]);
      canon_quantity(q, "memory", "memory");
      canon_quantity(q, "cpu", "cpu");
    }
    cJSON_DeleteItemFromObjectCaseSensitive(dom, "machine");
    cJSON *fw = cJSON_GetObjectItemCaseSensitive(dom, "firmware");
    if (cJSON_IsObject(fw)) {
      cJSON_DeleteItemFromObjectCaseSensitive(fw, "uuid");
      drop(dom, "firmware", fw, "serial");
    }
  }
  for (cJSON *d = cJSON_IsArray(dvt) ? dvt->child : NULL; d; d = d->next) {
    cJSON *dmd = cJSON_GetObjectItemCaseSensitive(d, "metadata");
    if (cJSON_IsObject(dmd)) cJSON_DeleteItemFromObjectCaseSensitive(dmd, "creationTimestamp");
  }
}

/* The hashes a VM template (a pool's, or one a ControllerRevision stored) is
** compared by, from one copy with what the cluster adds left out: the whole
** (KubeVirt's isOutdatedVM compares two as Go values, by equality.Semantic:
** quantities by value, an empty struct as none), its instance template and
** its data volume templates (isOutdatedVMI's, and a VM's against them). */
static int template_hashes(mctx *x, const cJSON *tmpl, uint64_t *whole, uint64_t *vmi, uint64_t *dvt) {
  cJSON *t = tmpl ? cJSON_Duplicate(tmpl, 1) : NULL;
  if (tmpl && !t) return mf_oom(x);
  cJSON *ts = cJSON_GetObjectItemCaseSensitive(t, "spec");
  cJSON *cv = cJSON_GetObjectItemCaseSensitive(ts, "template"),
        *cd = cJSON_GetObjectItemCaseSensitive(ts, "dataVolumeTemplates");
  if (cJSON_IsNull(cd)) cd = NULL;
  strip_server_fields(cv, cd);
  int rc = 0;
  *whole = canon_hash(x, t, &rc);
  *vmi = canon_hash(x, cv, &rc);
  *dvt = canon_hash(x, cd, &rc);
  cJSON_Delete(t);
  return rc;
}

/* One selection entry: {labelSelector, nodeSelectorRequirementMatcher}, or
** a bare label selector (matchLabels / matchExpressions). */
static int sel_entry(mctx *x, const cJSON *o, const char *field, dt_selentry *e) {
  char f[400];
  if (!cJSON_IsObject(o)) return mf_bad(x, field, "expected a selector");
  const cJSON *ls = mf_get(o, "labelSelector"), *nm = mf_get(o, "nodeSelectorRequirementMatcher");
  if (!ls && !nm) return mf_parse_selector(x, o, field, &e->labels);
  dt__join(f, sizeof f, field, ".labelSelector");
  if (mf_parse_selector(x, ls, f, &e->labels)) return mf_failed(x);
  if (ls && !e->labels.present) e->labels.present = true;
  dt__join(f, sizeof f, field, ".nodeSelectorRequirementMatcher");
  return mf_parse_mreqs(x, nm, f, &e->node, false);
}

static int parse_sort(mctx *x, const cJSON *v, const char *field, int *out) {
  const char *s = cJSON_IsString(v) ? v->valuestring : NULL;
  for (int i = 0; s && i < 5; i++)
    if (!strcmp(s, dt__sort_names[i])) {
      *out = i;
      return 0;
    }
  return mf_bad(x, field, "expected Random, Oldest, Newest, AscendingOrder or DescendingOrder");
}

/* selectionPolicy: the design's orderedPolicies + basePolicy, and KubeVirt's
** single selectors + sortPolicy (its selectors become the first entry: a
** priority, with the base policy behind it, never a filter that runs dry). */
static int sel_policy(mctx *x, const cJSON *o, const char *field, dt_selpolicy *s) {
  if (!o || cJSON_IsNull(o)) return 0;
  char f[400];
  if (!cJSON_IsObject(o)) return mf_bad(x, field, "expected an object");
  const cJSON *ord = mf_get(o, "orderedPolicies"), *one = mf_get(o, "selectors");
  size_t n = (one && !cJSON_IsNull(one) ? 1 : 0) + (cJSON_IsArray(ord) ? (size_t)cJSON_GetArraySize(ord) : 0);
  if (ord && !cJSON_IsNull(ord) && !cJSON_IsArray(ord)) {
    dt__join(f, sizeof f, field, ".orderedPolicies");
    return mf_bad(x, f, "expected a list of label selectors");
  }
  if (!(s->v = dt__calloc(n ? n : 1, sizeof *s->v))) return mf_oom(x);
  if (one && !cJSON_IsNull(one)) {
    dt__join(f, sizeof f, field, ".selectors");
    s->n++;
    s->selectors_first = true;
    if (sel_entry(x, one, f, &s->v[0])) return mf_failed(x);
  }
  size_t i = 0;
  for (const cJSON *c = cJSON_IsArray(ord) ? ord->child : NULL; c; c = c->next, i++) {
    snprintf(f, sizeof f, "%s.orderedPolicies[%zu]", field, i);
    if (sel_entry(x, c, f, &s->v[s->n++])) return mf_failed(x);
  }
  const cJSON *bp = mf_get(o, "basePolicy"), *sp = mf_get(o, "sortPolicy");
  int b1 = -1, b2 = -1;
  dt__join(f, sizeof f, field, ".basePolicy");
  if (bp && !cJSON_IsNull(bp) && parse_sort(x, bp, f, &b1)) return mf_failed(x);
  dt__join(f, sizeof f, field, ".sortPolicy");
  if (sp && !cJSON_IsNull(sp) && parse_sort(x, sp, f, &b2)) return mf_failed(x);
  if (b1 >= 0 && b2 >= 0 && b1 != b2) return mf_bad(x, f, "disagrees with basePolicy; set one of them");
  s->base = b1 >= 0 ? b1 : b2 >= 0 ? b2 : DT_SORT_RANDOM;
  s->base_set = b1 >= 0 || b2 >= 0;
  return 0;
}

static int parse_preserve(mctx *x, const cJSON *o, const char *field, int *out) {
  const cJSON *v = mf_get(o, "statePreservation");
  if (!v || cJSON_IsNull(v)) return 0;
  const char *s = cJSON_IsString(v) ? v->valuestring : "";
  if (!strcmp(s, "Disabled"))
    *out = DT_PRESERVE_DISABLED;
  else if (!strcmp(s, "Offline"))
    *out = DT_PRESERVE_OFFLINE;
  else if (!strcmp(s, "Online"))
    *out = DT_PRESERVE_ONLINE;
  else
    return mf_bad(x, field, "expected Disabled, Offline or Online");
  return 0;
}

/* scaleInStrategy / updateStrategy: at most one of unmanaged, opportunistic
** and proactive (the admission webhook's rule). */
static int strategy(mctx *x, const cJSON *o, const char *field, int *strat, int *preserve, dt_selpolicy *sel) {
  *strat = DT_STRAT_PROACTIVE;
  if (!o || cJSON_IsNull(o)) return 0;
  if (!cJSON_IsObject(o)) return mf_bad(x, field, "expected an object");
  static const char *names[] = {"proactive", "opportunistic", "unmanaged"};
  int seen = 0;
  char f[400];
  for (int i = 0; i < 3; i++) {
    const cJSON *v = mf_get(o, names[i]);
    if (!v || cJSON_IsNull(v)) continue;
    if (seen++) return mf_bad(x, field, "only one strategy can be configured at a time");
    *strat = i;
    dt__join(f, sizeof f, field, ".", names[i]);
    if (!cJSON_IsObject(v)) return mf_bad(x, f, "expected an object");
    dt__join(f, sizeof f, field, ".", names[i], ".statePreservation");
    if (preserve && parse_preserve(x, v, f, preserve)) return mf_failed(x);
    dt__join(f, sizeof f, field, ".", names[i], ".selectionPolicy");
    if (i == DT_STRAT_PROACTIVE && sel_policy(x, mf_get(v, "selectionPolicy"), f, sel)) return mf_failed(x);
  }
  for (const cJSON *c = o->child; c; c = c->next)
    if (strcmp(c->string, "proactive") && strcmp(c->string, "opportunistic") && strcmp(c->string, "unmanaged")) {
      dt__join(f, sizeof f, field, ".", c->string);
      return mf_bad(x, f, "unknown strategy (expected proactive, opportunistic or unmanaged)");
    }
  return 0;
}

/* A VM spec's run strategy, hashed for comparison: runStrategy, else the
** deprecated running as Always or Halted; 0 when it says neither. */
static uint64_t run_strategy(const cJSON *vmspec) {
  const char *rs = mf_get_str(vmspec, "runStrategy");
  const cJSON *r = mf_get(vmspec, "running");
  if (!rs && cJSON_IsBool(r)) rs = cJSON_IsTrue(r) ? "Always" : "Halted";
  return rs ? dt__hash64(rs, strlen(rs)) | 1 : 0;
}

static bool vmi_runs(const cJSON *vmspec) {
  const char *rs = mf_get_str(vmspec, "runStrategy");
  if (rs) return strcmp(rs, "Halted") && strcmp(rs, "Manual");
  return cJSON_IsTrue(mf_get(vmspec, "running"));
}

/* The architectures KubeVirt's admission accepts for a VMI (its
** ValidateVirtualMachineInstancePerArch); returned as static strings. */
static const char *vm_arch(const char *s) {
  static const char *const archs[] = {"amd64", "arm64", "s390x"};
  for (int i = 0; s && i < 3; i++)
    if (!strcmp(s, archs[i])) return archs[i];
  return NULL;
}

/* The memory KubeVirt adds to a virt-launcher pod's request beyond its
** guest's (the KVM backend's GetMemoryOverhead): page tables (a byte per
** 512 of the VMI's own memory request, which nothing defaults from the
** guest's), a downwardMetrics disk (1Mi), the launcher's processes (240Mi), 8Mi a vCPU and
** 8Mi for the IO thread, 32Mi of video unless no graphics device is
** attached, 128Mi for arm64's UEFI flash, 1Gi for VFIO (GPUs, host
** devices), 100Mi and 10Mi a probe for exec probes, 256Mi under SEV, 53Mi
** for a TPM, 100Mi for dedicated CPUs or Guaranteed QoS, and the
** reservedOverhead it names (added by the caller). In bytes. */
static int64_t launcher_overhead(const cJSON *spec, const cJSON *domain, int64_t mem, int64_t vcpus, bool arm64,
                                 bool dedicated, bool guaranteed) {
  const int64_t Mi = 1024 * 1024;
  int64_t o = ((mem + 999) / 1000) * 1000 / 512; /* of the VMI's own memory request, not the guest's */
  const cJSON *vol;
  cJSON_ArrayForEach(vol, mf_get(spec, "volumes")) if (cJSON_IsObject(mf_get(vol, "downwardMetrics"))) {
    o += Mi; /* a downwardMetrics disk: an emptyDir in memory */
    break;
  }
  o += (25 + 100 + 25 + 40 + 50) * Mi;
  o += 8 * Mi * (vcpus < 1 ? 1 : vcpus) + 8 * Mi;
  const cJSON *dev = mf_get(domain, "devices");
  if (!cJSON_IsFalse(mf_get(dev, "autoattachGraphicsDevice"))) o += 32 * Mi;
  if (arm64) o += 128 * Mi;
  if (cJSON_GetArraySize(mf_get(dev, "gpus")) > 0 || cJSON_GetArraySize(mf_get(dev, "hostDevices")) > 0) o += 1024 * Mi;
  bool live = cJSON_IsObject(mf_get(mf_get(spec, "livenessProbe"), "exec"));
  bool ready = cJSON_IsObject(mf_get(mf_get(spec, "readinessProbe"), "exec"));
  o += (live ? 10 * Mi : 0) + (ready ? 10 * Mi : 0) + (live || ready ? 100 * Mi : 0);
  const cJSON *ls = mf_get(domain, "launchSecurity");
  if (cJSON_IsObject(mf_get(ls, "sev")) || cJSON_IsObject(mf_get(ls, "snp"))) o += 256 * Mi;
  const cJSON *tpm = mf_get(dev, "tpm");
  if (cJSON_IsObject(tpm) && !cJSON_IsFalse(mf_get(tpm, "enabled"))) o += 53 * Mi;
  if (dedicated || guaranteed) o += 100 * Mi;
  return o;
}

/* A virt-launcher pod's requests, as KubeVirt renders them from the VMI
** (renderresources.go, after its defaulting webhook): the domain's
** requests, a limit standing in for a missing request (the API server's
** defaulting, and KubeVirt's for cpu), memory defaulting to the guest
** memory; cpu to 100m a vCPU (the default cpuAllocationRatio of 10), or
** with dedicated CPUs a whole core each (and one more for an isolated
** emulator thread); memory raised by the launcher's overhead unless
** overcommitGuestOverhead. vCPUs are cores × sockets × threads, else the
** cpu limit's or request's whole cores, else 1. */
static int launcher_requests(mctx *x, const cJSON *vmspec, const cJSON *spec, const cJSON *domain, const char *path,
                             const char *arch, dt_rlist *req, dt_rlist *lim, dt_podspec *p) {
  char f[400], tmp[64];
  const cJSON *it = mf_get(vmspec, "instancetype");
  if (it && !cJSON_IsNull(it)) { /* sized once the instancetypes are read (mf_itypes_resolve) */
    const char *in = mf_get_str(it, "name"), *kind = mf_get_str(it, "kind");
    if (!cJSON_IsObject(it) || !in || !*in) return mf_bad(x, "spec.instancetype.name", "missing");
    /* the kinds KubeVirt's instancetype finder takes: singular or plural, any case, or none */
    bool ns_kind =
        kind && (!strcasecmp(kind, "VirtualMachineInstancetype") || !strcasecmp(kind, "virtualmachineinstancetypes"));
    bool cl_kind = !kind || !*kind || !strcasecmp(kind, "VirtualMachineClusterInstancetype") ||
                   !strcasecmp(kind, "virtualmachineclusterinstancetypes");
    if (!ns_kind && !cl_kind)
      return mf_bad(x, "spec.instancetype.kind",
                    "expected VirtualMachineClusterInstancetype or VirtualMachineInstancetype");
    p->vm_itype_ns = ns_kind;
    if (!(p->vm_itype = dt__strdup(in))) return mf_oom(x);
  }
  const cJSON *res = mf_get(domain, "resources");
  dt__join(f, sizeof f, path, ".spec.domain.resources.requests");
  if (mf_parse_rlist(x, mf_get(res, "requests"), f, req, true)) return mf_failed(x);
  dt__join(f, sizeof f, path, ".spec.domain.resources.limits");
  if (mf_parse_rlist(x, mf_get(res, "limits"), f, lim, true)) return mf_failed(x);
  int64_t own_mem = dt__rlist_get(req, "memory") / 1000; /* the VMI's own request: its page tables' measure */
  for (size_t i = 0; i < lim->n; i++)
    if (!dt__rlist_get(req, lim->v[i].name) && dt__rlist_add(req, lim->v[i].name, lim->v[i].milli, DT_RL_SET))
      return mf_oom(x);
  if (!dt__rlist_get(req, "memory")) {
    const char *g = dt__scalar(mf_get(mf_get(domain, "memory"), "guest"), tmp, sizeof tmp);
    int64_t v;
    dt_error qe;
    dt__join(f, sizeof f, path, ".spec.domain.memory.guest");
    if (g && dt_quantity_parse(g, &v, &qe)) return mf_bad(x, f, "%s", qe.msg);
    if (g && dt__rlist_add(req, "memory", v, DT_RL_SET)) return mf_oom(x);
  }
  const cJSON *cpu = mf_get(domain, "cpu");
  int64_t vcpus = 1;
  bool topo = false;
  static const char *dims[] = {"cores", "sockets", "threads"};
  for (int i = 0; i < 3; i++) {
    const cJSON *d = mf_get(cpu, dims[i]);
    dt__join(f, sizeof f, path, ".spec.domain.cpu.", dims[i]);
    if (!d || cJSON_IsNull(d)) continue;
    if (!mf_is_int_in(d, 1, 4096)) return mf_bad(x, f, "expected an integer from 1 to 4096");
    vcpus *= (int64_t)d->valuedouble;
    topo = true;
  }
  if (!topo) { /* the webhook's topology from the cpu limit, else the request, in whole cores */
    int64_t c = dt__rlist_get(lim, "cpu") ? dt__rlist_get(lim, "cpu") : dt__rlist_get(req, "cpu");
    if (c > 0) vcpus = (c + 999) / 1000;
  }
  bool dedicated = cJSON_IsTrue(mf_get(cpu, "dedicatedCpuPlacement"));
  if (dedicated) {
    int64_t cores = vcpus + (cJSON_IsTrue(mf_get(cpu, "isolateEmulatorThread")) ? 1 : 0);
    if (dt__rlist_add(req, "cpu", cores * 1000, DT_RL_SET)) return mf_oom(x);
  } else if (!dt__rlist_get(req, "cpu") && dt__rlist_add(req, "cpu", vcpus * 100, DT_RL_SET)) {
    return mf_oom(x);
  }
  int64_t mem = dt__rlist_get(req, "memory") / 1000;
  bool guaranteed = dt__rlist_get(lim, "cpu") && dt__rlist_get(lim, "memory") &&
                    dt__rlist_get(lim, "cpu") == dt__rlist_get(req, "cpu") &&
                    dt__rlist_get(lim, "memory") == dt__rlist_get(req, "memory");
  const char *add =
      dt__scalar(mf_get(mf_get(mf_get(domain, "memory"), "reservedOverhead"), "addedOverhead"), tmp, sizeof tmp);
  int64_t av = 0;
  dt_error qe;
  dt__join(f, sizeof f, path, ".spec.domain.memory.reservedOverhead.addedOverhead");
  if (add && (dt_quantity_parse(add, &av, &qe) || av < 0)) return mf_bad(x, f, "expected a quantity such as 256Mi");
  bool arm64 = arch && !strcmp(arch, "arm64"), ovc = cJSON_IsTrue(mf_get(res, "overcommitGuestOverhead"));
  if (p->vm_itype) { /* what does not hang on the instancetype's memory and vCPUs */
    p->vm_ovh = launcher_overhead(spec, domain, 0, 1, arm64, false, false) - 8 * 1024 * 1024 + av / 1000;
    p->vm_ovc = ovc;
  }
  if (mem > 0 && !ovc) {
    int64_t o = launcher_overhead(spec, domain, own_mem, vcpus, arm64, dedicated, guaranteed) + av / 1000;
    if (dt__rlist_add(req, "memory", (mem + o) * 1000, DT_RL_SET)) return mf_oom(x);
  }
  return 0;
}

/* The virt-launcher pod a VMI template needs: its requests as KubeVirt
** renders them (launcher_requests), with the template's placement fields, and
** its spec.architecture, which KubeVirt's virt-launcher pods select as
** kubernetes.io/arch (the cluster's default architecture when unset). */
static int vmi_podspec(mctx *x, const cJSON *vmspec, const cJSON *vmi, const char *path, dt_podspec *p) {
  char f[400];
  const cJSON *spec = mf_get(vmi, "spec");
  dt__join(f, sizeof f, path, ".spec");
  if (!cJSON_IsObject(spec)) return mf_bad(x, f, "missing or not an object");
  const cJSON *arch = mf_get(spec, "architecture");
  const char *va = "";
  if (arch && !cJSON_IsNull(arch) && !(cJSON_IsString(arch) && !*arch->valuestring)) {
    dt__join(f, sizeof f, path, ".spec.architecture");
    if (!(va = vm_arch(cJSON_GetStringValue(arch))))
      return mf_bad(x, f, "unsupported architecture %s%s%s (KubeVirt runs amd64, arm64 and s390x)",
                    cJSON_IsString(arch) ? "\"" : "", cJSON_IsString(arch) ? arch->valuestring : "(not a string)",
                    cJSON_IsString(arch) ? "\"" : "");
  }
  const cJSON *domain = mf_get(spec, "domain");
  dt_rlist req = {0}, lim = {0};
  int rc = launcher_requests(x, vmspec, spec, domain, path, va, &req, &lim, p);
  dt__rlist_free(&lim);
  if (rc) {
    dt__rlist_free(&req);
    return rc;
  }
  /* Placement fields have the same names and shapes in a VMI spec as in a pod spec. */
  cJSON *pod = cJSON_CreateObject(), *ps = pod ? cJSON_AddObjectToObject(pod, "spec") : NULL;
  static const char *keep[] = {"nodeSelector", "affinity", "tolerations", "topologySpreadConstraints"};
  bool ok = ps != NULL;
  for (int i = 0; i < 4 && ok; i++) {
    const cJSON *v = mf_get(spec, keep[i]);
    cJSON *d = v ? cJSON_Duplicate(v, 1) : NULL;
    if (v && (!d || !cJSON_AddItemToObject(ps, keep[i], d))) {
      cJSON_Delete(d);
      ok = false;
    }
  }
  if (!ok) {
    cJSON_Delete(pod);
    dt__rlist_free(&req);
    return mf_oom(x);
  }
  dt__join(f, sizeof f, path, ".spec");
  rc = mf_podspec(x, pod, f, p);
  cJSON_Delete(pod);
  if (rc) {
    dt__rlist_free(&req);
    return rc;
  }
  dt__rlist_free(&p->requests);
  if (dt__rlist_add(&req, "pods", 1000, DT_RL_SET)) {
    dt__rlist_free(&req);
    return mf_oom(x);
  }
  p->requests = req;
  p->vm_arch = va;
  return 0;
}

static int ann_duration(mctx *x, const cJSON *ann, const char *key, int64_t *out) {
  const char *s = mf_get_str(ann, key);
  if (!s) return 0;
  char f[300];
  dt__join(f, sizeof f, "metadata.annotations.", key);
  if (dt__duration_parse(s, out) || *out <= 0)
    return mf_bad(x, f, "expected a positive duration such as 90s, 5m or 1h");
  return 0;
}

/* replicas, paused, and a selector that selects what the template makes
** (KubeVirt's admission rule). */
static int vmpool_selection(mctx *x, const cJSON *spec, const cJSON *tmpl, dt_vmpool *p) {
  const cJSON *r = mf_get(spec, "replicas");
  if (r && !cJSON_IsNull(r)) {
    if (!mf_is_int_in(r, 0, MAX_REPLICAS))
      return mf_bad(x, "spec.replicas", "expected an integer from 0 to %d", MAX_REPLICAS);
    p->replicas = (int64_t)r->valuedouble;
  }
  const cJSON *paused = mf_get(spec, "paused");
  if (paused && !cJSON_IsNull(paused) && !cJSON_IsBool(paused))
    return mf_bad(x, "spec.paused", "expected true or false");
  p->paused = cJSON_IsTrue(paused);
  const cJSON *sel = mf_get(spec, "selector");
  if (!cJSON_IsObject(sel)) return mf_bad(x, "spec.selector", "missing; a VirtualMachinePool needs a label selector");
  if (mf_parse_selector(x, sel, "spec.selector", &p->selector)) return mf_failed(x);
  if (!cJSON_IsObject(tmpl)) return mf_bad(x, "spec.virtualMachineTemplate", "missing or not an object");
  dt_kvs tl = {0};
  int rc = 0;
  if (mf_parse_kvs(x, mf_get(mf_get(tmpl, "metadata"), "labels"), "spec.virtualMachineTemplate.metadata.labels", &tl))
    rc = mf_failed(x);
  for (size_t i = 0; i < p->selector.expr.n && !rc; i++) {
    const dt_mreq *q = &p->selector.expr.v[i];
    const char *v = NULL;
    for (size_t k = 0; k < tl.n; k++)
      if (!strcmp(tl.v[k].key, q->key)) v = tl.v[k].val;
    bool in = false;
    for (size_t k = 0; v && k < q->n; k++) in |= !strcmp(q->vals[k], v);
    bool ok = q->op == DT_OP_IN ? in : q->op == DT_OP_NOTIN ? !in : q->op == DT_OP_EXISTS ? v != NULL : v == NULL;
    if (!ok)
      rc = mf_bad(x, "spec.selector", "does not match spec.virtualMachineTemplate.metadata.labels (on %s)", q->key);
  }
  dt__kvs_free(&tl);
  return rc;
}

/* The VM template: its VMI (the virt-launcher pod's spec) and the names of
** its data volume templates. */
static int vmpool_template(mctx *x, const cJSON *tmpl, dt_vmpool *p, const cJSON **vmi_out, const cJSON **dvt_out) {
  const cJSON *vmspec = mf_get(tmpl, "spec");
  if (!cJSON_IsObject(vmspec)) return mf_bad(x, "spec.virtualMachineTemplate.spec", "missing or not an object");
  const cJSON *vmi = *vmi_out = mf_get(vmspec, "template");
  if (!cJSON_IsObject(vmi)) return mf_bad(x, "spec.virtualMachineTemplate.spec.template", "missing or not an object");
  p->runs = vmi_runs(vmspec);
  if (vmi_podspec(x, vmspec, vmi, "spec.virtualMachineTemplate.spec.template", &p->launcher) ||
      mf_parse_kvs(x, mf_get(mf_get(vmi, "metadata"), "labels"),
                   "spec.virtualMachineTemplate.spec.template.metadata.labels", &p->launcher.labels))
    return mf_failed(x);
  const cJSON *dvt = *dvt_out = mf_get(vmspec, "dataVolumeTemplates");
  if (!dvt || cJSON_IsNull(dvt)) return 0;
  if (!cJSON_IsArray(dvt)) return mf_bad(x, "spec.virtualMachineTemplate.spec.dataVolumeTemplates", "expected a list");
  size_t n = (size_t)cJSON_GetArraySize(dvt), i = 0;
  if (!(p->dv = dt__calloc(n ? n : 1, sizeof *p->dv))) return mf_oom(x);
  for (const cJSON *d = dvt->child; d; d = d->next, i++) {
    const char *dn = mf_get_str(mf_get(d, "metadata"), "name");
    if (!dn || !*dn) {
      char f[200];
      snprintf(f, sizeof f, "spec.virtualMachineTemplate.spec.dataVolumeTemplates[%zu].metadata.name", i);
      return mf_bad(x, f, "missing");
    }
    if (!(p->dv[p->ndv++] = dt__strdup(dn))) return mf_oom(x);
  }
  return 0;
}

/* spec.nameGeneration: which references get the VM's index appended. */
static int name_generation(mctx *x, const cJSON *spec, dt_vmpool *p) {
  const cJSON *ng = mf_get(spec, "nameGeneration");
  if (!ng || cJSON_IsNull(ng)) return 0;
  if (!cJSON_IsObject(ng)) return mf_bad(x, "spec.nameGeneration", "expected an object");
  static const struct {
    const char *key;
    unsigned bit;
  } ngf[] = {{"appendIndexToConfigMapRefs", DT_NAMEGEN_CONFIGMAPS}, {"appendIndexToSecretRefs", DT_NAMEGEN_SECRETS}};
  for (const cJSON *c = ng->child; c; c = c->next) {
    char f[300];
    dt__join(f, sizeof f, "spec.nameGeneration.", c->string);
    int k = !strcmp(c->string, ngf[0].key) ? 0 : !strcmp(c->string, ngf[1].key) ? 1 : -1;
    if (k < 0) return mf_bad(x, f, "unknown field (expected appendIndexToConfigMapRefs or appendIndexToSecretRefs)");
    if (!cJSON_IsNull(c) && !cJSON_IsBool(c)) return mf_bad(x, f, "expected true or false");
    if (cJSON_IsTrue(c)) p->name_gen |= ngf[k].bit;
  }
  return 0;
}

/* spec.maxUnavailable: a count, or a percentage of replicas. */
static int max_unavailable(mctx *x, const cJSON *spec, dt_vmpool *p) {
  const cJSON *mu = mf_get(spec, "maxUnavailable");
  if (!mu || cJSON_IsNull(mu)) return 0;
  if (cJSON_IsNumber(mu)) {
    if (!mf_is_int_in(mu, 1, MAX_REPLICAS))
      return mf_bad(x, "spec.maxUnavailable", "an integer must be greater than 0");
    p->max_unavail = (int64_t)mu->valuedouble;
    p->max_unavail_pct = false;
    return 0;
  }
  const char *s = cJSON_IsString(mu) ? mu->valuestring : "";
  size_t len = strlen(s);
  char *end = NULL;
  long v = len > 1 && s[len - 1] == '%' ? strtol(s, &end, 10) : -1;
  if (!end || end != s + len - 1 || v < 1 || v > 100)
    return mf_bad(x, "spec.maxUnavailable", "expected an integer > 0 or a percentage from 1%% to 100%%, got \"%s\"", s);
  p->max_unavail = v;
  return 0;
}

/* spec.autohealing: on when present; its threshold and failing duration. */
static int autohealing(mctx *x, const cJSON *spec, dt_vmpool *p) {
  const cJSON *ah = mf_get(spec, "autohealing");
  if (!ah || cJSON_IsNull(ah)) return 0;
  if (!cJSON_IsObject(ah)) return mf_bad(x, "spec.autohealing", "expected an object");
  p->autoheal = true;
  const cJSON *t = mf_get(ah, "startUpFailureThreshold");
  if (t && !cJSON_IsNull(t)) {
    if (!mf_is_int_in(t, 1, 1e6))
      return mf_bad(x, "spec.autohealing.startUpFailureThreshold", "expected an integer of at least 1");
    p->heal_threshold = (int64_t)t->valuedouble;
  }
  const cJSON *d = mf_get(ah, "minFailingToStartDuration");
  char tmp[64];
  if (d && !cJSON_IsNull(d) &&
      (!cJSON_IsString(d) || dt__duration_parse(dt__scalar(d, tmp, sizeof tmp), &p->heal_min_failing)))
    return mf_bad(x, "spec.autohealing.minFailingToStartDuration", "expected a duration such as 5m or 300s");
  return 0;
}

/* dovetail's annotations: the burst limit and the heal backoff. */
static int vmpool_annotations(mctx *x, const cJSON *ann, dt_vmpool *p) {
  const char *burst = mf_get_str(ann, "dovetail.dev/burst-replicas");
  if (burst) {
    char *end;
    long v = strtol(burst, &end, 10);
    /* bounded: each creation is a whole VM object in memory and in the output (about 7 KB and 2.5 KB);
    ** a round of a million took 7 GB */
    if (*end || end == burst || v < 1 || v > 10000)
      return mf_bad(x, "metadata.annotations.dovetail.dev/burst-replicas", "expected an integer from 1 to 10000");
    p->burst = v;
  }
  if (ann_duration(x, ann, "dovetail.dev/heal-backoff-base", &p->heal_base) ||
      ann_duration(x, ann, "dovetail.dev/heal-backoff-cap", &p->heal_cap))
    return mf_failed(x);
  const char *fac = mf_get_str(ann, "dovetail.dev/heal-backoff-factor");
  if (fac) {
    char *end;
    double v = strtod(fac, &end);
    if (*end || end == fac || !(v >= 1 && v <= 100))
      return mf_bad(x, "metadata.annotations.dovetail.dev/heal-backoff-factor", "expected a number from 1 to 100");
    p->heal_factor = v;
  }
  return 0;
}

int mf_vmpool(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (mf_meta(x, o, &ns, &name, true) || mf_check_duplicate(x, ns, name)) return mf_failed(x);
  const cJSON *spec = mf_get(o, "spec"), *md = mf_get(o, "metadata"), *ann = mf_get(md, "annotations");
  if (!cJSON_IsObject(spec)) return mf_bad(x, "spec", "missing or not an object");
  /* the fields of pool.kubevirt.io v1beta1 (v1alpha1 has fewer): a misspelt
  ** one is named, as the API server refuses it, not read as its default */
  static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};
  static const char *const fields[] = {
      "replicas",       "selector",    "virtualMachineTemplate", "paused", "maxUnavailable", "scaleInStrategy",
      "updateStrategy", "autohealing", "nameGeneration",         NULL};
  if (mf_known_fields(x, o, "", top) || mf_known_fields(x, spec, "spec", fields)) return mf_failed(x);
  dt_vmpool p = {0};
  p.file = (char *)x->file;
  p.seq = x->m->seq++;
  p.replicas = 1; /* KubeVirt's value for an unset replicas */
  p.max_unavail = 100;
  p.max_unavail_pct = true;
  p.burst = DEFAULT_BURST;
  p.heal_threshold = DEFAULT_HEAL_THRESHOLD;
  const char *uid = mf_get_str(md, "uid");
  if (uid && *uid && !(p.uid = dt__strdup(uid))) return mf_oom(x);
  p.heal_min_failing = DEFAULT_MIN_FAILING;
  p.heal_base = DEFAULT_HEAL_BASE;
  p.heal_factor = DEFAULT_HEAL_FACTOR;
  p.heal_cap = DEFAULT_HEAL_CAP;
  p.update_sel.base = DT_SORT_ASCENDING;
  p.deleting = mf_get(md, "deletionTimestamp") && !cJSON_IsNull(mf_get(md, "deletionTimestamp"));
  const cJSON *gen = mf_get(md, "generation");
  if (cJSON_IsNumber(gen)) p.generation = dt__to_i64(gen->valuedouble);
  const cJSON *tmpl = mf_get(spec, "virtualMachineTemplate"), *vmi = NULL, *dvt = NULL;
  int rc = !(p.ns = dt__strdup(ns)) || !(p.name = dt__strdup(name)) ? mf_oom(x) : 0;
  if (!rc) rc = vmpool_selection(x, spec, tmpl, &p);
  if (!rc) rc = vmpool_template(x, tmpl, &p, &vmi, &dvt);
  if (!rc) rc = name_generation(x, spec, &p);
  if (!rc) {
    /* the VM template alone, as KubeVirt's isOutdatedVM compares it:
    ** spec.nameGeneration shapes only the VMs made after it changes */
    p.hash = canon_hash(x, tmpl, &rc);
    p.run_strategy = run_strategy(mf_get(tmpl, "spec"));
    if (!rc) rc = template_hashes(x, tmpl, &p.rev_hash, &p.vmi_hash, &p.dvt_hash);
    if (rc || !(p.tmpl = cJSON_Duplicate(tmpl, 1))) rc = mf_oom(x);
  }
  if (!rc) rc = max_unavailable(x, spec, &p);
  if (!rc &&
      (strategy(x, mf_get(spec, "scaleInStrategy"), "spec.scaleInStrategy", &p.scale_in, &p.preserve, &p.scale_sel) ||
       strategy(x, mf_get(spec, "updateStrategy"), "spec.updateStrategy", &p.update, NULL, &p.update_sel)))
    rc = mf_failed(x);
  if (!rc) rc = autohealing(x, spec, &p);
  if (!rc) rc = vmpool_annotations(x, ann, &p);
  if (!rc && (!(p.launcher.ns = dt__strdup(ns)) || !(p.launcher.name = dt__strdup(name)))) rc = mf_oom(x);
  p.launcher.file = (char *)x->file;
  if (!rc && dt__vec_push(&x->m->vmpools, p)) rc = mf_oom(x);
  if (!rc) return 0;
  mf_vmpool_free(&p);
  return mf_failed(x);
}

/* Strip "-<idx>" from names VMs got by indexing (their own data volumes), so
** a VM's template compares with the pool's unindexed one. */
static void deindex(cJSON *o, const char *key, const char *suffix, char **dv, size_t ndv) {
  cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsString(v)) return;
  size_t len = strlen(v->valuestring), sl = strlen(suffix);
  if (len <= sl || strcmp(v->valuestring + len - sl, suffix)) return;
  for (size_t i = 0; i < ndv; i++)
    if (!strcmp(dv[i], v->valuestring)) {
      v->valuestring[len - sl] = 0;
      return;
    }
}

/* The references spec.nameGeneration indexes, as KubeVirt's pool controller
** (indexVMSpec): a ConfigMap volume's name; a Secret volume's secretName
** and cloud-init's userData/networkData secret references. For each in the
** kinds of bits: the name is de-indexed when it ends in suffix, else marked
** so that it matches no pool template. Returns whether the volume has any. */
static bool ref_fix(cJSON *o, const char *key, const char *suffix, bool apply) {
  cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsString(v)) return false;
  if (!apply) return true;
  size_t len = strlen(v->valuestring), sl = strlen(suffix);
  if (len > sl && !strcmp(v->valuestring + len - sl, suffix)) {
    v->valuestring[len - sl] = 0;
  } else {
    char tmp[600];
    dt__join(tmp, sizeof tmp, v->valuestring, "\x01");
    cJSON_SetValuestring(v, tmp);
  }
  return true;
}

static bool indexed_refs(cJSON *vol, unsigned bits, const char *suffix, bool apply) {
  bool any = false;
  cJSON *cm = cJSON_GetObjectItemCaseSensitive(vol, "configMap");
  if (cm) any |= ref_fix(cm, "name", suffix, apply && (bits & DT_NAMEGEN_CONFIGMAPS));
  cJSON *sec = cJSON_GetObjectItemCaseSensitive(vol, "secret");
  if (sec) any |= ref_fix(sec, "secretName", suffix, apply && (bits & DT_NAMEGEN_SECRETS));
  static const char *const ci[] = {"cloudInitNoCloud", "cloudInitConfigDrive"};
  static const char *const refs[] = {"secretRef", "networkDataSecretRef"};
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 2; k++)
      any |= ref_fix(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(vol, ci[i]), refs[k]), "name",
                     suffix, apply && (bits & DT_NAMEGEN_SECRETS));
  return any;
}

static int vm_hashes(mctx *x, const cJSON *vmspec, dt_vm *v) {
  int rc = 0;
  cJSON *vmi = cJSON_Duplicate(mf_get(vmspec, "template"), 1);
  cJSON *dvt = cJSON_Duplicate(mf_get(vmspec, "dataVolumeTemplates"), 1);
  strip_server_fields(vmi, dvt);
  char suffix[32];
  snprintf(suffix, sizeof suffix, "-%lld", (long long)v->index);
  char *names[64];
  size_t nn = 0;
  for (cJSON *d = cJSON_IsArray(dvt) ? dvt->child : NULL; d && nn < 64; d = d->next) {
    cJSON *mdn = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d, "metadata"), "name");
    if (cJSON_IsString(mdn)) names[nn++] = mdn->valuestring;
  }
  cJSON *vols = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(vmi, "spec"), "volumes");
  if (v->index >= 0) {
    for (cJSON *vol = cJSON_IsArray(vols) ? vols->child : NULL; vol; vol = vol->next) {
      deindex(cJSON_GetObjectItemCaseSensitive(vol, "dataVolume"), "name", suffix, names, nn);
      deindex(cJSON_GetObjectItemCaseSensitive(vol, "persistentVolumeClaim"), "claimName", suffix, names, nn);
    }
    for (size_t i = 0; i < nn; i++) {
      size_t len = strlen(names[i]), sl = strlen(suffix);
      if (len > sl && !strcmp(names[i] + len - sl, suffix)) names[i][len - sl] = 0;
    }
  }
  v->vmi_hash = canon_hash(x, vmi, &rc);
  v->dvt_hash = canon_hash(x, dvt, &rc);
  /* As the template would be under each spec.nameGeneration setting. */
  bool refs = false;
  for (cJSON *vol = cJSON_IsArray(vols) && v->index >= 0 ? vols->child : NULL; vol && !refs; vol = vol->next)
    refs = indexed_refs(vol, 0, suffix, false);
  for (unsigned bits = 0; bits < 4; bits++) {
    v->vmi_hash_ng[bits] = v->vmi_hash;
    if (!bits || !refs) continue;
    cJSON *c = cJSON_Duplicate(vmi, 1);
    if (!c) {
      rc = mf_oom(x);
      break;
    }
    cJSON *cv = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, "spec"), "volumes");
    for (cJSON *vol = cv->child; vol; vol = vol->next) indexed_refs(vol, bits, suffix, true);
    v->vmi_hash_ng[bits] = canon_hash(x, c, &rc);
    cJSON_Delete(c);
  }
  cJSON_Delete(vmi);
  cJSON_Delete(dvt);
  return rc;
}

static bool one_of(const char *s, const char *const *set) {
  for (; s && *set; set++)
    if (!strcmp(s, *set)) return true;
  return false;
}

/* dovetail's heal annotations on a VM: its last attempt and when. */
static int vm_heal_annotations(mctx *x, const cJSON *ann, dt_vm *v) {
  const char *ha = mf_get_str(ann, "dovetail.dev/heal-attempt"), *hat = mf_get_str(ann, "dovetail.dev/healed-at");
  if (ha) {
    char *end;
    long long a = strtoll(ha, &end, 10);
    if (*end || end == ha || a < 0 || a > 1000000)
      return mf_bad(x, "metadata.annotations.dovetail.dev/heal-attempt", "expected a non-negative integer");
    v->heal_attempt = a;
  }
  if (hat && dt_time_parse(hat, &v->healed_at, NULL))
    return mf_bad(x, "metadata.annotations.dovetail.dev/healed-at", "expected an RFC 3339 time");
  return 0;
}

/* What the VM's status says: printable status, halted, ready (and since when
** not), start failures in a row. */
static int vm_status(mctx *x, const cJSON *spec, const cJSON *st, dt_vm *v) {
  v->has_status = cJSON_IsObject(st);
  const char *ps = mf_get_str(st, "printableStatus");
  if (ps && !(v->status = dt__strdup(ps))) return mf_oom(x);
  /* runStrategy Manual: the user starts and stops it, so its status says
  ** whether it runs (a Manual VM running and ready is available, as
  ** KubeVirt's readiness reads it) */
  const char *rs = mf_get_str(spec, "runStrategy");
  bool manual = rs && !strcmp(rs, "Manual");
  bool stopped = ps && (!strcmp(ps, "Stopped") || !strcmp(ps, "Halted"));
  v->ready = cJSON_IsTrue(mf_get(st, "ready"));
  v->halted =
      manual ? (!v->has_status || !ps || stopped) && !v->ready : !vmi_runs(spec) || (ps && !strcmp(ps, "Stopped"));
  const cJSON *fc = mf_get(mf_get(st, "startFailure"), "consecutiveFailCount");
  if (fc && !cJSON_IsNull(fc)) {
    if (!cJSON_IsNumber(fc) || fc->valuedouble < 0)
      return mf_bad(x, "status.startFailure.consecutiveFailCount", "expected a non-negative integer");
    v->fail_count = dt__to_i64(fc->valuedouble);
  }
  const cJSON *conds = mf_get(st, "conditions");
  for (const cJSON *c = cJSON_IsArray(conds) ? conds->child : NULL; c; c = c->next) {
    const char *t = mf_get_str(c, "type"), *s = mf_get_str(c, "status");
    if (!t || strcmp(t, "Ready") || !s) continue;
    if (!strcmp(s, "True")) v->ready = true;
    const char *ts = mf_get_str(c, "lastProbeTime");
    if (!ts || !*ts) ts = mf_get_str(c, "lastTransitionTime");
    if (strcmp(s, "True") && ts) dt_time_parse(ts, &v->not_ready_since, NULL);
  }
  return 0;
}

/* The virt-launcher pod of a VM waiting for a node, among the pending pods. */
static int vm_launcher(mctx *x, const char *ns, const char *name, const cJSON *vmspec, const cJSON *vmi,
                       const dt_vm *v) {
  dt_podspec p = {0};
  char pn[600];
  dt__join(pn, sizeof pn, "virt-launcher-", name);
  p.count = 1;
  p.file = (char *)x->file;
  p.seq = v->seq;
  p.created = v->created;
  int rc = 0;
  if (!(p.ns = dt__strdup(ns)) || !(p.name = dt__strdup(pn)))
    rc = mf_oom(x);
  else if (vmi_podspec(x, vmspec, vmi, "spec.template", &p) ||
           mf_parse_kvs(x, mf_get(mf_get(vmi, "metadata"), "labels"), "spec.template.metadata.labels", &p.labels))
    rc = mf_failed(x);
  else if (dt__vec_push(&x->m->pods, p))
    rc = mf_oom(x);
  if (rc) mf_pod_free(&p);
  return rc;
}

int mf_vm(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (mf_meta(x, o, &ns, &name, true) || mf_check_duplicate(x, ns, name)) return mf_failed(x);
  const cJSON *md = mf_get(o, "metadata"), *spec = mf_get(o, "spec"), *st = mf_get(o, "status");
  const cJSON *ann = mf_get(md, "annotations");
  dt_vm v = {0};
  v.file = (char *)x->file;
  v.seq = x->m->seq++;
  v.created = mf_created_at(o);
  v.index = -1;
  if (!(v.ns = dt__strdup(ns)) || !(v.name = dt__strdup(name))) goto nomem;
  const char *dash = strrchr(name, '-');
  if (dash && dash[1]) {
    char *end;
    long long i = strtoll(dash + 1, &end, 10);
    /* "<pool>-<i>" as KubeVirt writes it: no leading zero (web-01 is not web-1's name) */
    if (!*end && dash[1] >= '0' && dash[1] <= '9' && i >= 0 && (dash[1] != '0' || !dash[2])) v.index = i;
  }
  const char *del = mf_get_str(md, "deletionTimestamp");
  if (del && dt_time_parse(del, &v.deleting, NULL)) {
    mf_bad(x, "metadata.deletionTimestamp", "expected an RFC 3339 time");
    goto fail;
  }
  if (del && !v.deleting) v.deleting = 1;
  const cJSON *owners = mf_get(md, "ownerReferences");
  for (const cJSON *c = cJSON_IsArray(owners) ? owners->child : NULL; c; c = c->next) {
    const char *k = mf_get_str(c, "kind"), *n = mf_get_str(c, "name");
    /* the controller reference only, as KubeVirt's isOwned (metav1.GetControllerOf) */
    const char *uid = mf_get_str(c, "uid");
    if (k && n && !strcmp(k, "VirtualMachinePool") && cJSON_IsTrue(mf_get(c, "controller")) && !v.owner)
      if (!(v.owner = dt__strdup(n)) || (uid && !(v.owner_uid = dt__strdup(uid)))) goto nomem;
  }
  if (mf_parse_kvs(x, mf_get(md, "labels"), "metadata.labels", &v.labels)) goto fail;
  v.nmeta_labels = v.labels.n;
  dt_kvs tl = {0};
  const cJSON *vmi = mf_get(spec, "template");
  if (mf_parse_kvs(x, mf_get(mf_get(vmi, "metadata"), "labels"), "spec.template.metadata.labels", &tl)) {
    dt__kvs_free(&tl);
    goto fail;
  }
  if (tl.n) {
    dt_kv *nv = dt__realloc(v.labels.v, (v.labels.n + tl.n) * sizeof *nv);
    if (!nv) {
      dt__kvs_free(&tl);
      goto nomem;
    }
    v.labels.v = nv;
    memcpy(v.labels.v + v.labels.n, tl.v, tl.n * sizeof *tl.v);
    v.labels.n += tl.n;
    dt__free(tl.v);
  }
  if (mf_parse_kvs(x, mf_get(mf_get(vmi, "spec"), "nodeSelector"), "spec.template.spec.nodeSelector", &v.node_selector))
    goto fail;
  const char *rev = NULL;
  for (size_t i = 0; i < v.nmeta_labels; i++)
    if (!strcmp(v.labels.v[i].key, "kubevirt.io/vm-pool-revision-name")) rev = v.labels.v[i].val;
  const char *th = mf_get_str(ann, "dovetail.dev/template-hash");
  if ((rev && !(v.revision = dt__strdup(rev))) || (th && !(v.tmpl_hash = dt__strdup(th)))) goto nomem;
  v.run_strategy = run_strategy(spec);
  const cJSON *fw = mf_get(mf_get(mf_get(vmi, "spec"), "domain"), "firmware");
  const char *uuid = mf_get_str(fw, "uuid"), *serial = mf_get_str(fw, "serial");
  if ((uuid && !(v.fw_uuid = dt__strdup(uuid))) || (serial && !(v.fw_serial = dt__strdup(serial)))) goto nomem;
  const char *rr = mf_get_str(mf_condition(o, "RestartRequired"), "status");
  v.restart_required = rr && !strcmp(rr, "True");
  if (vm_heal_annotations(x, ann, &v) || vm_status(x, spec, st, &v)) goto fail;
  if (vm_hashes(x, spec, &v)) goto fail;
  /* A VM that should run but has no node yet needs capacity: its virt-launcher
  ** pod joins the pending pods. */
  static const char *const waiting[] = {
      "Provisioning", "Pending", "Unschedulable", "ErrorUnschedulable", "WaitingForVolumeBinding", NULL};
  if (vmi_runs(spec) && !v.deleting && one_of(v.status, waiting) && cJSON_IsObject(vmi) &&
      vm_launcher(x, ns, name, spec, vmi, &v))
    goto fail;
  if (dt__vec_push(&x->m->vms, v)) goto nomem;
  return 0;
nomem:
  mf_oom(x);
fail:
  mf_vm_free(&v);
  return mf_failed(x);
}

/* KubeVirt's own configuration: the architecture VMs without
** spec.architecture get (status.defaultArchitecture, the one in force, else
** spec.configuration.architectureConfiguration.defaultArchitecture; KubeVirt
** falls back to its operator's architecture, taken here as amd64). */
int mf_kubevirt(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (mf_meta(x, o, &ns, &name, true) || mf_check_duplicate(x, ns, name)) return DT_EINVAL;
  const char *field = "status.defaultArchitecture";
  const cJSON *v = mf_get(mf_get(o, "status"), "defaultArchitecture");
  if (!cJSON_IsString(v) || !*v->valuestring) {
    field = "spec.configuration.architectureConfiguration.defaultArchitecture";
    v = mf_get(mf_get(mf_get(mf_get(o, "spec"), "configuration"), "architectureConfiguration"), "defaultArchitecture");
  }
  if (!v || cJSON_IsNull(v) || (cJSON_IsString(v) && !*v->valuestring)) return 0;
  const char *a = vm_arch(cJSON_GetStringValue(v));
  if (!a)
    return mf_bad(x, field, "unsupported architecture %s (KubeVirt runs amd64, arm64 and s390x)",
                  cJSON_IsString(v) ? v->valuestring : "(not a string)");
  if (x->m->vm_default_arch && strcmp(x->m->vm_default_arch, a)) {
    dt__buf_printf(&x->m->notes, "%s: KubeVirt %s/%s: %s %s differs from the %s that %s gives; the first stays\n",
                   x->file, ns, name, field, a, x->m->vm_default_arch, x->m->vm_default_arch_file);
    return 0;
  }
  if (!x->m->vm_default_arch) {
    x->m->vm_default_arch = a;
    x->m->vm_default_arch_file = x->file;
  }
  return 0;
}

void mf_vmi_free(dt_vmi *v) {
  dt__free(v->ns);
  dt__free(v->name);
  dt__free(v->revision);
}

void mf_pool_rev_free(dt_pool_rev *r) {
  dt__free(r->ns);
  dt__free(r->name);
}

/* A VirtualMachineInstance: which pool revision it runs. */
int mf_vmi(mctx *x, const cJSON *o) {
  const char *ns, *name;
  if (mf_meta(x, o, &ns, &name, true) || mf_check_duplicate(x, ns, name)) return mf_failed(x);
  const cJSON *md = mf_get(o, "metadata");
  const char *rev = mf_get_str(mf_get(md, "labels"), "kubevirt.io/vm-pool-revision-name");
  dt_vmi v = {0};
  v.deleting = mf_get(md, "deletionTimestamp") && !cJSON_IsNull(mf_get(md, "deletionTimestamp"));
  if (!(v.ns = dt__strdup(ns)) || !(v.name = dt__strdup(name)) || (rev && !(v.revision = dt__strdup(rev))) ||
      dt__vec_push(&x->m->vmis, v)) {
    mf_vmi_free(&v);
    return mf_oom(x);
  }
  return 0;
}

/* An apps/v1 ControllerRevision a VirtualMachinePool owns (its controller
** reference): the pool spec it holds, hashed as the pool's own. The
** revisions of DaemonSets and StatefulSets a dump holds are passed over. */
int mf_ctrl_revision(mctx *x, const cJSON *o) {
  const cJSON *md = mf_get(o, "metadata");
  bool pool = false;
  const cJSON *c;
  cJSON_ArrayForEach(c, mf_get(md, "ownerReferences")) {
    const char *k = mf_get_str(c, "kind");
    pool |= k && !strcmp(k, "VirtualMachinePool") && cJSON_IsTrue(mf_get(c, "controller"));
  }
  if (!pool) return 0;
  const char *ns, *name;
  if (mf_meta(x, o, &ns, &name, true) || mf_check_duplicate(x, ns, name)) return mf_failed(x);
  dt_pool_rev r = {0};
  int rc =
      template_hashes(x, mf_get(mf_get(o, "data"), "virtualMachineTemplate"), &r.tmpl_hash, &r.vmi_hash, &r.dvt_hash);
  if (!rc && (!(r.ns = dt__strdup(ns)) || !(r.name = dt__strdup(name)) || dt__vec_push(&x->m->pool_revs, r)))
    rc = mf_oom(x);
  if (rc) mf_pool_rev_free(&r);
  return rc ? mf_failed(x) : 0;
}

void mf_itype_free(dt_itype *t) {
  dt__free(t->ns);
  dt__free(t->name);
}

/* A VirtualMachineInstancetype or VirtualMachineClusterInstancetype: the
** guest's vCPUs and memory (both required by its CRD), dedicated CPUs, an
** isolated emulator thread, the memory overcommitted, and whether it
** passes devices through (VFIO). */
int mf_itype(mctx *x, const cJSON *o) {
  bool cluster = !strcmp(x->kind, "VirtualMachineClusterInstancetype");
  const char *ns, *name;
  if (mf_meta(x, o, &ns, &name, !cluster) || mf_check_duplicate(x, ns, name)) return mf_failed(x);
  const cJSON *spec = mf_get(o, "spec"), *cpu = mf_get(spec, "cpu"), *mem = mf_get(spec, "memory");
  dt_itype t = {0};
  t.file = x->file;
  const cJSON *g = mf_get(cpu, "guest");
  if (!mf_is_int_in(g, 1, 4096)) return mf_bad(x, "spec.cpu.guest", "expected an integer from 1 to 4096 (required)");
  t.vcpus = (int64_t)g->valuedouble;
  char tmp[64];
  const char *mg = dt__scalar(mf_get(mem, "guest"), tmp, sizeof tmp);
  dt_error qe;
  if (!mg || dt_quantity_parse(mg, &t.mem, &qe) || t.mem <= 0)
    return mf_bad(x, "spec.memory.guest", "expected a quantity such as 4Gi (required)");
  const cJSON *oc = mf_get(mem, "overcommitPercent");
  if (oc && !cJSON_IsNull(oc)) {
    if (!mf_is_int_in(oc, 0, 100))
      return mf_bad(x, "spec.memory.overcommitPercent", "expected an integer from 0 to 100");
    t.overcommit = (int64_t)oc->valuedouble;
  }
  t.dedicated = cJSON_IsTrue(mf_get(cpu, "dedicatedCPUPlacement"));
  t.isolate = cJSON_IsTrue(mf_get(cpu, "isolateEmulatorThread"));
  t.vfio = cJSON_GetArraySize(mf_get(spec, "gpus")) > 0 || cJSON_GetArraySize(mf_get(spec, "hostDevices")) > 0;
  if ((!cluster && !(t.ns = dt__strdup(ns))) || !(t.name = dt__strdup(name)) || dt__vec_push(&x->m->itypes, t)) {
    mf_itype_free(&t);
    return mf_oom(x);
  }
  return 0;
}

/* Launcher pod d of a VM naming an instancetype, sized as KubeVirt applies
** it (pkg/instancetype/apply) and renders the pod: the guest's memory
** requested (less overcommitPercent), 100m a vCPU or a core each when
** dedicated (one more for an isolated emulator thread), the launcher's
** overhead on top; refused, saying why, when the input lacks it. */
static int itype_apply(dt_manifests *m, dt_podspec *d) {
  const dt_itype *t = NULL;
  for (size_t i = 0; i < m->itypes.n && !t; i++) {
    const dt_itype *c = &m->itypes.v[i];
    if (!strcmp(c->name, d->vm_itype) && (d->vm_itype_ns ? c->ns && !strcmp(c->ns, d->ns) : !c->ns)) t = c;
  }
  d->refused = NULL;
  if (!t) {
    char why[800];
    snprintf(why, sizeof why,
             "its VM names %s %s%s%s, which is not in the input: KubeVirt starts no VMI without it, and its size is "
             "unknown (add the instancetypes: kubectl get virtualmachineclusterinstancetypes,"
             "virtualmachineinstancetypes -A -o yaml)",
             d->vm_itype_ns ? "VirtualMachineInstancetype" : "VirtualMachineClusterInstancetype",
             d->vm_itype_ns ? d->ns : "", d->vm_itype_ns ? "/" : "", d->vm_itype);
    char *r = dt__strdup(why);
    if (!r || dt__vec_push(&m->files, r)) {
      dt__free(r);
      return DT_ENOMEM;
    }
    d->refused = r;
    return 0;
  }
  const int64_t Mi = 1024 * 1024;
  /* overcommitted, the VMI's request is set (in float32, as KubeVirt's
  ** applyMemory computes it), and its page tables count; else the guest's
  ** memory is the pod's request, and no request of the VMI's has them */
  int64_t guest = t->mem / 1000, mem = guest, own = 0;
  if (t->overcommit > 0) mem = own = (int64_t)((float)guest * (1 - (float)t->overcommit / 100));
  int64_t cpu = t->dedicated ? (t->vcpus + (t->isolate ? 1 : 0)) * 1000 : t->vcpus * 100;
  int64_t o = ((own + 999) / 1000) * 1000 / 512 + d->vm_ovh + 8 * Mi * t->vcpus + (t->dedicated ? 100 * Mi : 0) +
              (t->vfio ? 1024 * Mi : 0);
  if (dt__rlist_add(&d->requests, "cpu", cpu, DT_RL_SET) ||
      dt__rlist_add(&d->requests, "memory", (mem + (d->vm_ovc ? 0 : o)) * 1000, DT_RL_SET))
    return DT_ENOMEM;
  return 0;
}

int mf_itypes_resolve(dt_manifests *m, dt_error *err) {
  for (size_t i = 0; i < m->pods.n; i++)
    if (m->pods.v[i].vm_itype && itype_apply(m, &m->pods.v[i])) return dt__err(err, DT_ENOMEM, "out of memory");
  for (size_t i = 0; i < m->vmpools.n; i++)
    if (m->vmpools.v[i].launcher.vm_itype && itype_apply(m, &m->vmpools.v[i].launcher))
      return dt__err(err, DT_ENOMEM, "out of memory");
  return 0;
}
