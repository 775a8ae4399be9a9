/*
** catalog.c: the static/file catalog provider. Reads the JSON catalog shape
** the README's "Catalog format" documents, derives offerings when none are
** given, computes node overhead (explicit, or Karpenter's AWS formulas) and
** the labels a node of each type carries.
**
** AWS overhead, as karpenter-provider-aws pkg/providers/instancetype/types.go
** (see providers/catalogs/README.md for sources):
**   memory capacity  = memoryMiB (-64 on arm64), minus ceil(7.5%) VM overhead
**   kube-reserved    = cpu bands 6% / 1% / 0.5% / 0.25%, memory 11 x pods + 255 MiB,
**                      ephemeral-storage 1Gi
**   eviction         = memory 100Mi, ephemeral-storage 10% of the 20Gi root volume
**
** Azure overhead, as karpenter-provider-azure pkg/providers/instancetype/instancetype.go:
**   memory capacity  = whole GiB of memoryMiB, minus ceil(7.5%) VM overhead
**   kube-reserved    = cpu brackets 6% / 4% / 2% / 1% (cores 1, 2, 3-4, above),
**                      memory brackets 25% / 20% / 10% / 6% / 2% (GiB up to 4, 8, 16, 128, above)
**   eviction         = memory 750Mi; ephemeral storage is the 128 GB OS disk
**
** The catalog may also be Karpenter's KWOK instance-type list (kwok.c).
*/
#include "../engine/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MIB (1024LL * 1024)
#define GIB (1024LL * MIB)

void dt_catalog_free(dt_catalog *c) {
  if (!c) return;
  for (size_t i = 0; i < c->ntypes; i++) {
    dt_ctype *t = &c->types[i];
    dt__free(t->name);
    dt__free(t->arch);
    dt__kvs_free(&t->labels);
    dt__rlist_free(&t->capacity);
    dt__rlist_free(&t->allocatable);
    for (size_t j = 0; j < t->noff; j++) dt__free(t->off[j].reservation);
    dt__free(t->off);
    dt__free(t->src.family);
    dt__free(t->src.gpu_name);
    dt__kvs_free(&t->src.labels);
  }
  dt__free(c->types);
  for (size_t i = 0; i < c->nzones; i++) dt__free(c->zones[i]);
  dt__free(c->zones);
  dt__free(c->name);
  dt__free(c->region);
  dt__free(c->provider);
  dt__free(c);
}

size_t dt_catalog_size(const dt_catalog *c) { return c ? c->ntypes : 0; }

static int kvs_set(dt_kvs *k, const char *key, const char *val) {
  for (size_t i = 0; i < k->n; i++)
    if (strcmp(k->v[i].key, key) == 0) {
      char *nv = dt__strdup(val);
      if (!nv) return DT_ENOMEM;
      dt__free(k->v[i].val);
      k->v[i].val = nv;
      return 0;
    }
  dt_kv *nv = dt__realloc(k->v, (k->n + 1) * sizeof *nv);
  if (!nv) return DT_ENOMEM;
  k->v = nv;
  k->v[k->n].key = dt__strdup(key);
  k->v[k->n].val = dt__strdup(val);
  if (!k->v[k->n].key || !k->v[k->n].val) {
    dt__free(k->v[k->n].key);
    dt__free(k->v[k->n].val);
    return DT_ENOMEM;
  }
  k->n++;
  return 0;
}

/* Karpenter's kube-reserved cpu: each band truncated, then summed. */
static int64_t aws_kube_reserved_cpu_m(int64_t cpu_m) {
  static const struct {
    int64_t start, end;
    double pct;
  } bands[] = {{0, 1000, 0.06}, {1000, 2000, 0.01}, {2000, 4000, 0.005}, {4000, INT64_MAX, 0.0025}};
  int64_t total = 0;
  for (size_t i = 0; i < 4; i++) {
    if (cpu_m <= bands[i].start) break;
    int64_t hi = cpu_m < bands[i].end ? cpu_m : bands[i].end;
    total += (int64_t)((double)(hi - bands[i].start) * bands[i].pct);
  }
  return total;
}

/* Karpenter's Azure tax brackets: each slice of amount up to a bound pays
** its rate (TaxBrackets.Calculate). */
static double azure_tax(double amount, const double *bound, const double *rate, size_t n) {
  double tax = 0, lower = 0;
  for (size_t i = 0; i < n; i++) {
    if (lower > amount) continue;
    double upper = bound[i] > amount ? amount : bound[i];
    tax += (upper - lower) * rate[i];
    lower = bound[i];
  }
  return tax;
}

static int64_t azure_kube_reserved_cpu_m(double vcpus) {
  static const double bound[] = {1, 2, 4, INFINITY}, rate[] = {0.06, 0.04, 0.02, 0.01};
  return (int64_t)(1000 * azure_tax(vcpus, bound, rate, 4));
}

static int64_t azure_kube_reserved_mem_mib(double gib) {
  static const double bound[] = {4, 8, 16, 128, INFINITY}, rate[] = {0.25, 0.20, 0.10, 0.06, 0.02};
  return (int64_t)(1024 * azure_tax(gib, bound, rate, 5));
}

static const dt_rq *rlist_find(const dt_rlist *l, const char *name) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->v[i].name, name)) return &l->v[i];
  return NULL;
}

/* The nodes of an AWS catalog type launched under an EC2NodeClass, as
** Karpenter's AWS provider sizes them (instancetype/types.go: pods(),
** kubeReservedResources(), systemReservedResources(), evictionThreshold(),
** ephemeralStorage()): cap and alloc get cpu, memory, pods and
** ephemeral-storage (DT_NODE_*), in milli-units. False when the catalog gave
** the type its own overhead or is not AWS's: its nodes are as it says. */
bool dt__aws_node_resources(const dt_catalog *c, const dt_ctype *t, const dt_nodeclass *nc, int64_t cap[4],
                            int64_t alloc[4]) {
  if (!c || strcmp(c->provider, "aws") || t->src.has_overhead) return false;
  int64_t cpu_m = dt__rlist_get(&t->capacity, "cpu"), mem = dt__rlist_get(&t->capacity, "memory") / 1000;
  int64_t eni = dt__rlist_get(&t->capacity, "pods") / 1000,
          eph = dt__rlist_get(&t->capacity, "ephemeral-storage") / 1000;
  int64_t pods = nc->max_pods >= 0 ? nc->max_pods : nc->family == DT_AMI_WINDOWS ? 110 : eni;
  if (nc->pods_per_core > 0 && nc->family != DT_AMI_BOTTLEROCKET) {
    int64_t per = nc->pods_per_core * (cpu_m / 1000);
    if (per < pods) pods = per;
  }
  /* AL2, AL2023 and Custom reserve memory for the ENI-limited pods whatever maxPods says */
  bool eni_memory = nc->family == DT_AMI_AL2023 || nc->family == DT_AMI_AL2 || nc->family == DT_AMI_CUSTOM;
  const char *nvme = dt__kv_get(t->labels.v, t->labels.n, "karpenter.k8s.aws/instance-local-nvme");
  if (nc->raid0 && nvme && atoll(nvme) > 0)
    eph = atoll(nvme) * 1000000000LL;
  else if (nc->volume_bytes >= 0)
    eph = nc->volume_bytes;
  else if (nc->family == DT_AMI_WINDOWS)
    eph = 50 * GIB;
  int64_t kr[4] = {aws_kube_reserved_cpu_m(cpu_m), ((eni_memory ? eni : pods) * 11 + 255) * MIB, 0, GIB};
  static const char *const names[4] = {"cpu", "memory", "pods", "ephemeral-storage"};
  int64_t sr[4] = {0};
  int64_t capv[4] = {cpu_m, mem, pods, eph};
  for (int r = 0; r < 4; r++) {
    const dt_rq *k = rlist_find(&nc->kube_reserved, names[r]);
    if (k) kr[r] = r == 0 ? k->milli : k->milli / 1000;
    const dt_rq *s = rlist_find(&nc->system_reserved, names[r]);
    if (s) sr[r] = r == 0 ? s->milli : s->milli / 1000;
    /* more than the node has leaves it nothing: no sum to overflow */
    if (kr[r] > capv[r]) kr[r] = capv[r];
    if (sr[r] > capv[r]) sr[r] = capv[r];
  }
  /* eviction: a percent of the capacity (100% reserving nothing, as Karpenter reads it) */
  const dt_evict *ev[2] = {&nc->evict_mem, &nc->evict_fs};
  int64_t base[2] = {mem, eph}, dflt[2] = {100 * MIB, (int64_t)ceil((double)eph * 10 / 100)}, evict[2];
  for (int i = 0; i < 2; i++) {
    evict[i] = !ev[i]->set           ? dflt[i]
               : !ev[i]->pct         ? (int64_t)fmin(ev[i]->value, 9e18)
               : ev[i]->value >= 100 ? 0
                                     : (int64_t)ceil((double)base[i] * ev[i]->value / 100);
    if (evict[i] > base[i]) evict[i] = base[i];
  }
  cap[0] = cpu_m, cap[1] = mem * 1000, cap[2] = pods * 1000, cap[3] = eph * 1000;
  int64_t left[4] = {cpu_m - kr[0] - sr[0], mem - kr[1] - sr[1] - evict[0], pods, eph - kr[3] - sr[3] - evict[1]};
  for (int r = 0; r < 4; r++) {
    if (left[r] < 0) left[r] = 0;
    alloc[r] = r == 0 ? left[r] : left[r] * 1000;
  }
  return true;
}

const char *dt__gpu_resource(const char *gpu_name) {
  if (!gpu_name) return "nvidia.com/gpu";
  if (strstr(gpu_name, "radeon") || strstr(gpu_name, "instinct")) return "amd.com/gpu";
  if (strstr(gpu_name, "gaudi")) return "habana.ai/gaudi";
  return "nvidia.com/gpu";
}

bool dt__is_device(const char *resource) {
  return strchr(resource, '/') && strncmp(resource, "vpc.amazonaws.com/", 18) != 0;
}

static bool looks_aws(const char *region) {
  /* us-east-1, ap-southeast-2, us-gov-west-1 ... */
  if (!region) return false;
  size_t n = strlen(region);
  int dashes = 0;
  for (size_t i = 0; i < n; i++) dashes += region[i] == '-';
  return dashes >= 2 && n > 2 && region[n - 1] >= '0' && region[n - 1] <= '9';
}

/* eastus, westeurope, eastus2 ... with zones as AKS labels them: eastus-1. */
static bool looks_azure(const char *region, const cJSON *zones) {
  if (!region || !*region || !cJSON_IsArray(zones) || !zones->child) return false;
  for (const char *p = region; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'))) return false;
  size_t n = strlen(region);
  for (const cJSON *z = zones->child; z; z = z->next) {
    const char *s = cJSON_GetStringValue(z);
    if (!s || strncmp(s, region, n) || s[n] != '-' || !s[n + 1]) return false;
    for (const char *p = s + n + 1; *p; p++)
      if (*p < '0' || *p > '9') return false;
  }
  return true;
}

typedef struct ctx {
  const char *file;
  dt_error *err;
  dt_symtab names; /* instance type names: type k is symbol k + 1 */
} ctx;

#define BAD(...) dt__err(x->err, DT_EINVAL, __VA_ARGS__)

static int num_field(ctx *x, const cJSON *obj, const char *field, const char *what, size_t idx, const char *tname,
                     double *out, bool required) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, field);
  if (!it || cJSON_IsNull(it)) {
    if (required) return BAD("%s: instanceTypes[%zu] (%s): %s: missing (%s)", x->file, idx, tname, field, what);
    return 1;
  }
  if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
    return BAD("%s: instanceTypes[%zu] (%s): %s: expected a number (%s)", x->file, idx, tname, field, what);
  *out = it->valuedouble;
  return 0;
}

static int quantity_field(ctx *x, const cJSON *it, size_t idx, const char *tname, const char *field, int64_t *out) {
  char tmp[64];
  const char *s = dt__scalar(it, tmp, sizeof tmp);
  dt_error qe;
  /* the parse's own message when it fails: *out is only set when it reads */
  if (!s || dt_quantity_parse(s, out, &qe))
    return BAD("%s: instanceTypes[%zu] (%s): %s: %s", x->file, idx, tname, field, !s ? "expected a quantity" : qe.msg);
  if (*out < 0) return BAD("%s: instanceTypes[%zu] (%s): %s: must not be negative", x->file, idx, tname, field);
  return 0;
}

static int find_zone(const dt_catalog *c, const char *z) {
  for (size_t i = 0; i < c->nzones; i++)
    if (strcmp(c->zones[i], z) == 0) return (int)i;
  return -1;
}

static int add_zone(dt_catalog *c, const char *z) {
  if (find_zone(c, z) >= 0) return 0;
  char **nz = dt__realloc(c->zones, (c->nzones + 1) * sizeof *nz);
  if (!nz) return DT_ENOMEM;
  c->zones = nz;
  c->zones[c->nzones] = dt__strdup(z);
  if (!c->zones[c->nzones]) return DT_ENOMEM;
  c->nzones++;
  return 0;
}

static int push_offer(dt_ctype *t, dt_coffer o) {
  dt_coffer *n = dt__realloc(t->off, (t->noff + 1) * sizeof *n);
  if (!n) {
    dt__free(o.reservation);
    return DT_ENOMEM;
  }
  t->off = n;
  t->off[t->noff++] = o;
  return 0;
}

static int parse_available(ctx *x, const cJSON *a, size_t idx, const char *tname, size_t oi, int64_t *out) {
  if (!a || cJSON_IsTrue(a)) {
    *out = -1;
    return 0;
  }
  if (cJSON_IsFalse(a)) {
    *out = 0;
    return 0;
  }
  if (cJSON_IsNumber(a) && a->valuedouble >= 0 && a->valuedouble == floor(a->valuedouble) && a->valuedouble < 1e12) {
    *out = (int64_t)a->valuedouble;
    return 0;
  }
  return BAD("%s: instanceTypes[%zu] (%s): offerings[%zu].available: expected true, false or a "
             "count >= 0",
             x->file, idx, tname, oi);
}

/* One catalog entry as read, shared by the steps of parse_type. */
typedef struct tin {
  const cJSON *j;
  size_t idx;
  const char *tn, *gn; /* its name, its GPU's name */
  const cJSON *fam;
  double cpu, mem, pods, gpu, od, spot;
  bool aws, azure;
  int64_t cpu_m, eph; /* millicores; ephemeral storage, bytes */
} tin;

/* The numbers: vCPUs, memory, pods, GPUs and prices, each in range. */
static int type_numbers(ctx *x, tin *in) {
  const cJSON *j = in->j;
  size_t idx = in->idx;
  const char *tn = in->tn;
  in->pods = 110, in->od = -1, in->spot = -1;
  int rc;
  if ((rc = num_field(x, j, "cpu", "vCPUs", idx, tn, &in->cpu, true)) < 0) return rc;
  if ((rc = num_field(x, j, "memoryMiB", "memory in MiB", idx, tn, &in->mem, true)) < 0) return rc;
  if ((rc = num_field(x, j, "maxPods", "pods per node", idx, tn, &in->pods, false)) < 0) return rc;
  if ((rc = num_field(x, j, "gpu", "GPU count", idx, tn, &in->gpu, false)) < 0) return rc;
  if ((rc = num_field(x, j, "onDemandPrice", "$/hour", idx, tn, &in->od, false)) < 0) return rc;
  if ((rc = num_field(x, j, "spotPrice", "$/hour", idx, tn, &in->spot, false)) < 0) return rc;
  double cpu = in->cpu, mem = in->mem, pods = in->pods, gpu = in->gpu, od = in->od, spot = in->spot;
  if (cpu <= 0 || cpu > 100000)
    return BAD("%s: instanceTypes[%zu] (%s): cpu: expected 0 < cpu <= 100000, got %g", x->file, idx, tn, cpu);
  if (mem <= 0 || mem > 1e9)
    return BAD("%s: instanceTypes[%zu] (%s): memoryMiB: expected a positive size, got %g", x->file, idx, tn, mem);
  if (pods < 1 || pods > 1e6 || pods != floor(pods))
    return BAD("%s: instanceTypes[%zu] (%s): maxPods: expected a positive integer, got %g", x->file, idx, tn, pods);
  if (gpu < 0 || gpu != floor(gpu) || gpu > 1e6)
    return BAD("%s: instanceTypes[%zu] (%s): gpu: expected a count from 0 to 1000000", x->file, idx, tn);
  if (od > DT_MAX_PRICE || spot > DT_MAX_PRICE)
    return BAD("%s: instanceTypes[%zu] (%s): %s: expected at most %g $/hour", x->file, idx, tn,
               od > DT_MAX_PRICE ? "onDemandPrice" : "spotPrice", DT_MAX_PRICE);
  if (cJSON_GetObjectItemCaseSensitive(j, "onDemandPrice") && od < 0)
    return BAD("%s: instanceTypes[%zu] (%s): onDemandPrice: must not be negative", x->file, idx, tn);
  if (cJSON_GetObjectItemCaseSensitive(j, "spotPrice") &&
      !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "spotPrice")) && spot < 0)
    return BAD("%s: instanceTypes[%zu] (%s): spotPrice: must not be negative", x->file, idx, tn);
  return 0;
}

/* Capacity: cpu, memory as the provider's nodes report it, pods, the OS
** disk, GPUs and the extended resources device plugins advertise. */
static int type_capacity(ctx *x, tin *in, dt_ctype *t) {
  const cJSON *j = in->j;
  size_t idx = in->idx;
  const char *tn = in->tn;
  double mem = in->mem;
  in->cpu_m = (int64_t)llround(in->cpu * 1000);
  int64_t mem_b;
  if (in->aws) {
    int64_t m = (int64_t)mem;
    if (strcmp(t->arch, "arm64") == 0) m -= 64;
    m -= (int64_t)ceil((double)m * 0.075);
    mem_b = m * MIB;
  } else if (in->azure) {
    int64_t b = (int64_t)(mem / 1024) * GIB; /* whole GiB, as Karpenter's Azure provider */
    mem_b = b - (int64_t)ceil((double)b * 0.075);
  } else {
    mem_b = (int64_t)llround(mem * (double)MIB);
  }
  in->eph = in->azure ? 128000000000LL : 20 * GIB; /* the OS disk: Azure's 128 GB default, AWS's 20 GiB */
  const cJSON *eph_j = cJSON_GetObjectItemCaseSensitive(j, "ephemeralStorage");
  if (eph_j && !cJSON_IsNull(eph_j)) {
    int64_t v;
    if (quantity_field(x, eph_j, idx, tn, "ephemeralStorage", &v)) return DT_EINVAL;
    if (v > INT64_MAX / 2) return BAD("%s: instanceTypes[%zu] (%s): ephemeralStorage: too large", x->file, idx, tn);
    in->eph = t->src.eph_bytes = v / 1000 + (v % 1000 != 0);
  }
  if (dt__rlist_add(&t->capacity, "cpu", in->cpu_m, DT_RL_SET) ||
      dt__rlist_add(&t->capacity, "memory", mem_b * 1000, DT_RL_SET) ||
      dt__rlist_add(&t->capacity, "pods", (int64_t)in->pods * 1000, DT_RL_SET) ||
      dt__rlist_add(&t->capacity, "ephemeral-storage", in->eph * 1000, DT_RL_SET))
    return DT_ENOMEM;
  if (in->gpu > 0 && dt__rlist_add(&t->capacity, dt__gpu_resource(in->gn), (int64_t)in->gpu * 1000, DT_RL_SET))
    return DT_ENOMEM;
  /* Extended resources a device plugin advertises (aws.amazon.com/neuron,
  ** amd.com/gpu, ...): whole devices, allocatable as they are. */
  const cJSON *ext = cJSON_GetObjectItemCaseSensitive(j, "extendedResources");
  if (ext && !cJSON_IsNull(ext) && !cJSON_IsObject(ext))
    return BAD("%s: instanceTypes[%zu] (%s): extendedResources: expected an object of counts", x->file, idx, tn);
  for (const cJSON *e = ext ? ext->child : NULL; e; e = e->next) {
    if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble > 1e6 || e->valuedouble != floor(e->valuedouble) ||
        !strchr(e->string, '/'))
      return BAD("%s: instanceTypes[%zu] (%s): extendedResources.%s: expected a device count from 0 to 1000000 under a "
                 "domain-qualified name (such as aws.amazon.com/neuron)",
                 x->file, idx, tn, e->string);
    if (dt__rlist_add(&t->capacity, e->string, (int64_t)e->valuedouble * 1000, DT_RL_SET)) return DT_ENOMEM;
  }
  return 0;
}

/* Overhead (explicit, or the provider's formula) and the allocatable left. */
static int type_allocatable(ctx *x, tin *in, dt_ctype *t) {
  const cJSON *j = in->j;
  size_t idx = in->idx;
  const char *tn = in->tn;
  /* Overhead: explicit, or the provider's formula. */
  int64_t oh_cpu = 0, oh_mem = 0, oh_eph = 0;
  const cJSON *oh = cJSON_GetObjectItemCaseSensitive(j, "overhead");
  if (oh && !cJSON_IsNull(oh)) {
    if (!cJSON_IsObject(oh))
      return BAD("%s: instanceTypes[%zu] (%s): overhead: expected an object of quantities", x->file, idx, tn);
    for (const cJSON *o = oh->child; o; o = o->next) {
      int64_t v;
      char field[128];
      snprintf(field, sizeof field, "overhead.%s", o->string);
      if (quantity_field(x, o, idx, tn, field, &v)) return DT_EINVAL;
      if (strcmp(o->string, "cpu") == 0)
        oh_cpu = v;
      else if (strcmp(o->string, "memory") == 0)
        oh_mem = v;
      else if (strcmp(o->string, "ephemeral-storage") == 0)
        oh_eph = v;
    }
    t->src.has_overhead = true;
    t->src.oh_cpu = oh_cpu;
    t->src.oh_mem = oh_mem;
    t->src.oh_eph = oh_eph;
  } else if (in->aws) {
    oh_cpu = aws_kube_reserved_cpu_m(in->cpu_m);
    oh_mem = ((11 * (int64_t)in->pods + 255) * MIB + 100 * MIB) * 1000;
    oh_eph = (GIB + (int64_t)ceil((double)in->eph * 10 / 100)) * 1000;
  } else if (in->azure) {
    oh_cpu = azure_kube_reserved_cpu_m(in->cpu);
    oh_mem = (azure_kube_reserved_mem_mib(in->mem / 1024) * MIB + 750 * MIB) * 1000;
  }
  for (size_t i = 0; i < t->capacity.n; i++) {
    const char *rn = t->capacity.v[i].name;
    int64_t v = t->capacity.v[i].milli;
    if (strcmp(rn, "cpu") == 0) v -= oh_cpu;
    if (strcmp(rn, "memory") == 0) v -= oh_mem;
    if (strcmp(rn, "ephemeral-storage") == 0) v -= oh_eph;
    if (v < 0) v = 0;
    if (dt__rlist_add(&t->allocatable, rn, v, DT_RL_SET)) return DT_ENOMEM;
  }
  return 0;
}

/* Labels: Karpenter's well-known ones, the provider's (karpenter.k8s.aws/
** on AWS, dovetail.dev/ elsewhere) and the entry's own. */
static int type_labels(ctx *x, const dt_catalog *c, tin *in, dt_ctype *t) {
  const cJSON *j = in->j, *fam = in->fam;
  size_t idx = in->idx;
  const char *tn = in->tn, *gn = in->gn;
  double cpu = in->cpu, mem = in->mem, gpu = in->gpu;
  char tmp[64];
  const char *pfx = in->aws ? "karpenter.k8s.aws/" : "dovetail.dev/";
  char key[128];
#define LABEL(k, v)                                                                                                    \
  do {                                                                                                                 \
    if (kvs_set(&t->labels, (k), (v))) return DT_ENOMEM;                                                               \
  } while (0)
#define PLABEL(k, v)                                                                                                   \
  do {                                                                                                                 \
    snprintf(key, sizeof key, "%s%s", pfx, (k));                                                                       \
    LABEL(key, (v));                                                                                                   \
  } while (0)
  LABEL(DT_L_INSTANCE_TYPE, tn);
  LABEL(DT_L_ARCH, t->arch);
  LABEL(DT_L_OS, "linux");
  if (c->region) LABEL(DT_L_REGION, c->region);
  if (cJSON_IsString(fam)) {
    const char *f = fam->valuestring;
    PLABEL("instance-family", f);
    size_t k = 0;
    while (f[k] >= 'a' && f[k] <= 'z') k++;
    if (k) {
      char cat[32];
      snprintf(cat, sizeof cat, "%.*s", (int)(k < 31 ? k : 31), f);
      PLABEL("instance-category", cat);
      size_t g = k;
      while (f[g] >= '0' && f[g] <= '9') g++;
      if (g > k) {
        snprintf(cat, sizeof cat, "%.*s", (int)(g - k < 31 ? g - k : 31), f + k);
        PLABEL("instance-generation", cat);
      }
    }
  }
  const char *dot = strchr(tn, '.');
  if (dot && dot[1]) PLABEL("instance-size", dot + 1);
  snprintf(tmp, sizeof tmp, "%lld", (long long)llround(cpu));
  PLABEL("instance-cpu", tmp);
  snprintf(tmp, sizeof tmp, "%lld", (long long)llround(mem));
  PLABEL("instance-memory", tmp);
  if (gpu > 0) {
    snprintf(tmp, sizeof tmp, "%d", (int)gpu);
    PLABEL("instance-gpu-count", tmp);
    if (gn) PLABEL("instance-gpu-name", gn);
  }
  const cJSON *labels = cJSON_GetObjectItemCaseSensitive(j, "labels");
  if (labels && !cJSON_IsObject(labels))
    return BAD("%s: instanceTypes[%zu] (%s): labels: expected an object", x->file, idx, tn);
  for (const cJSON *l = labels ? labels->child : NULL; l; l = l->next) {
    const char *v = dt__scalar(l, tmp, sizeof tmp);
    if (!v) return BAD("%s: instanceTypes[%zu] (%s): labels.%s: expected a string", x->file, idx, tn, l->string);
    LABEL(l->string, v);
    if (kvs_set(&t->src.labels, l->string, v)) return DT_ENOMEM;
  }
#undef LABEL
#undef PLABEL
  return 0;
}

/* Offerings: explicit, or on-demand (and spot, when priced) per zone. */
static int type_offerings(ctx *x, dt_catalog *c, const tin *in, dt_ctype *t) {
  const cJSON *j = in->j;
  size_t idx = in->idx;
  const char *tn = in->tn;
  double od = in->od, spot = in->spot;
  const cJSON *offs = cJSON_GetObjectItemCaseSensitive(j, "offerings");
  if (offs && !cJSON_IsNull(offs)) {
    if (!cJSON_IsArray(offs)) return BAD("%s: instanceTypes[%zu] (%s): offerings: expected an array", x->file, idx, tn);
    size_t oi = 0;
    for (const cJSON *o = offs->child; o; o = o->next, oi++) {
      const cJSON *z = cJSON_GetObjectItemCaseSensitive(o, "zone");
      const cJSON *ct = cJSON_GetObjectItemCaseSensitive(o, "capacityType");
      const cJSON *pr = cJSON_GetObjectItemCaseSensitive(o, "price");
      if (!cJSON_IsString(z))
        return BAD("%s: instanceTypes[%zu] (%s): offerings[%zu].zone: missing or not a string", x->file, idx, tn, oi);
      int cti = cJSON_IsString(ct) ? dt__ct_parse(ct->valuestring) : DT_CT_ON_DEMAND;
      if (cti < 0 || (ct && !cJSON_IsString(ct)))
        return BAD("%s: instanceTypes[%zu] (%s): offerings[%zu].capacityType: expected on-demand, "
                   "spot or reserved",
                   x->file, idx, tn, oi);
      double price;
      if (pr && !cJSON_IsNull(pr)) {
        if (!cJSON_IsNumber(pr) || !isfinite(pr->valuedouble) || pr->valuedouble < 0 || pr->valuedouble > DT_MAX_PRICE)
          return BAD("%s: instanceTypes[%zu] (%s): offerings[%zu].price: expected a number from 0 to %g $/hour",
                     x->file, idx, tn, oi, DT_MAX_PRICE);
        price = pr->valuedouble;
      } else if (cti == DT_CT_SPOT && spot >= 0) {
        price = spot;
      } else if (od >= 0) {
        price = cti == DT_CT_SPOT ? od * DT_SPOT_DEFAULT_FACTOR : od;
      } else {
        return BAD("%s: instanceTypes[%zu] (%s): offerings[%zu].price: missing, and the type has no "
                   "onDemandPrice to derive it from",
                   x->file, idx, tn, oi);
      }
      if (add_zone(c, z->valuestring)) return DT_ENOMEM;
      dt_coffer co = {c->zones[find_zone(c, z->valuestring)], cti, price, -1, NULL};
      if (parse_available(x, cJSON_GetObjectItemCaseSensitive(o, "available"), idx, tn, oi, &co.available))
        return DT_EINVAL;
      const cJSON *rid = cJSON_GetObjectItemCaseSensitive(o, "reservationID");
      if (cti == DT_CT_RESERVED) {
        if (!cJSON_IsString(rid))
          return BAD("%s: instanceTypes[%zu] (%s): offerings[%zu].reservationID: required for a "
                     "reserved offering",
                     x->file, idx, tn, oi);
        co.reservation = dt__strdup(rid->valuestring);
        if (!co.reservation) return DT_ENOMEM;
      }
      if (push_offer(t, co)) return DT_ENOMEM;
    }
  } else {
    const cJSON *zs = cJSON_GetObjectItemCaseSensitive(j, "zones");
    if (zs && !cJSON_IsArray(zs))
      return BAD("%s: instanceTypes[%zu] (%s): zones: expected an array of zone names", x->file, idx, tn);
    if (od < 0)
      return BAD("%s: instanceTypes[%zu] (%s): onDemandPrice: missing (needed to derive offerings; "
                 "or give offerings[] with prices)",
                 x->file, idx, tn);
    const cJSON *z = zs ? zs->child : NULL;
    size_t nz = zs ? (size_t)cJSON_GetArraySize(zs) : c->nzones;
    for (size_t zi = 0; zi < nz; zi++) {
      const char *zn;
      if (zs) {
        if (!cJSON_IsString(z))
          return BAD("%s: instanceTypes[%zu] (%s): zones[%zu]: expected a string", x->file, idx, tn, zi);
        zn = z->valuestring;
        z = z->next;
      } else {
        zn = c->zones[zi];
      }
      if (add_zone(c, zn)) return DT_ENOMEM;
      const char *zp = c->zones[find_zone(c, zn)];
      if (push_offer(t, (dt_coffer){zp, DT_CT_ON_DEMAND, od, -1, NULL})) return DT_ENOMEM;
      if (spot >= 0 && push_offer(t, (dt_coffer){zp, DT_CT_SPOT, spot, -1, NULL})) return DT_ENOMEM;
    }
  }
  if (t->noff == 0)
    return BAD("%s: instanceTypes[%zu] (%s): no offerings: give offerings[] or zones[] (or top-level "
               "zones[])",
               x->file, idx, tn);
  return 0;
}

static int parse_type(ctx *x, dt_catalog *c, const cJSON *j, size_t idx, dt_ctype *t) {
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
  if (!cJSON_IsObject(j)) return BAD("%s: instanceTypes[%zu]: expected an object", x->file, idx);
  if (!cJSON_IsString(name) || !*name->valuestring)
    return BAD("%s: instanceTypes[%zu]: name: missing or not a string", x->file, idx);
  tin in = {.j = j, .idx = idx, .tn = name->valuestring};
  if (!(t->name = dt__strdup(in.tn))) return DT_ENOMEM;
  int rc = type_numbers(x, &in);
  if (rc) return rc;
  t->od_price = in.od;
  const cJSON *arch = cJSON_GetObjectItemCaseSensitive(j, "arch");
  t->arch = dt__strdup(cJSON_IsString(arch) ? arch->valuestring : "amd64");
  if (!t->arch) return DT_ENOMEM;
  in.fam = cJSON_GetObjectItemCaseSensitive(j, "family");
  const cJSON *gname = cJSON_GetObjectItemCaseSensitive(j, "gpuName");
  in.gn = cJSON_IsString(gname) ? gname->valuestring : NULL;
  in.aws = strcmp(c->provider, "aws") == 0, in.azure = strcmp(c->provider, "azure") == 0;
  t->src.cpu = in.cpu;
  t->src.memory_mib = in.mem;
  t->src.gpu = (int64_t)in.gpu;
  t->src.eph_bytes = -1;
  if ((cJSON_IsString(in.fam) && !(t->src.family = dt__strdup(in.fam->valuestring))) ||
      (in.gn && !(t->src.gpu_name = dt__strdup(in.gn))))
    return DT_ENOMEM;
  if ((rc = type_capacity(x, &in, t)) || (rc = type_allocatable(x, &in, t)) || (rc = type_labels(x, c, &in, t)) ||
      (rc = type_offerings(x, c, &in, t)))
    return rc;
  return 0;
}

static int parse_reservations(ctx *x, dt_catalog *c, const cJSON *rs) {
  if (!rs || cJSON_IsNull(rs)) return 0;
  if (!cJSON_IsArray(rs)) return BAD("%s: reservations: expected an array", x->file);
  size_t i = 0;
  for (const cJSON *r = rs->child; r; r = r->next, i++) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(r, "id");
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(r, "instanceType");
    const cJSON *z = cJSON_GetObjectItemCaseSensitive(r, "zone");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(r, "count");
    if (!cJSON_IsString(id) || !*id->valuestring)
      return BAD("%s: reservations[%zu].id: missing or not a string", x->file, i);
    if (!cJSON_IsString(it))
      return BAD("%s: reservations[%zu] (%s).instanceType: missing or not a string", x->file, i, id->valuestring);
    if (!cJSON_IsString(z))
      return BAD("%s: reservations[%zu] (%s).zone: missing or not a string", x->file, i, id->valuestring);
    if (!cJSON_IsNumber(n) || n->valuedouble != floor(n->valuedouble) || n->valuedouble < 0 || n->valuedouble > 1e9)
      return BAD("%s: reservations[%zu] (%s).count: expected an integer >= 0", x->file, i, id->valuestring);
    dt_sym ts = dt__sym_find(&x->names, it->valuestring);
    dt_ctype *t = ts ? &c->types[ts - 1] : NULL;
    if (!t)
      return BAD("%s: reservations[%zu] (%s).instanceType: unknown instance type \"%s\"", x->file, i, id->valuestring,
                 it->valuestring);
    int zi = find_zone(c, z->valuestring);
    if (zi < 0)
      return BAD("%s: reservations[%zu] (%s).zone: unknown zone \"%s\"", x->file, i, id->valuestring, z->valuestring);
    /* Ordered as on-demand (so consolidation can move between reservation
    ** sizes); the scheduler treats it as already paid when selecting. */
    dt_coffer co = {c->zones[zi], DT_CT_RESERVED, t->od_price >= 0 ? t->od_price : 0, (int64_t)n->valuedouble,
                    dt__strdup(id->valuestring)};
    if (!co.reservation || push_offer(t, co)) return DT_ENOMEM;
  }
  return 0;
}

int dt_catalog_load_buffer(const char *name, const char *buf, size_t len, dt_catalog **out, dt_error *err) {
  ctx cx = {name, err, {0}}, *x = &cx;
  cJSON *docs = NULL;
  int rc = dt__doc_parse(name, buf, len, &docs, err);
  if (rc) return rc;
  const cJSON *j = docs->child;
  if (dt__kwok_shape(j)) { /* Karpenter's KWOK instance-type list: read as its dovetail equivalent */
    cJSON *conv = NULL;
    rc = dt__kwok_convert(name, j, &conv, err);
    cJSON_Delete(docs);
    if (rc) return rc;
    docs = cJSON_CreateArray();
    if (!docs || !cJSON_AddItemToArray(docs, conv)) {
      cJSON_Delete(docs);
      cJSON_Delete(conv);
      return dt__err(err, DT_ENOMEM, "out of memory loading %s", name);
    }
    j = conv;
  }
  dt_catalog *c = dt__calloc(1, sizeof *c);
  if (!c) {
    cJSON_Delete(docs);
    return dt__err(err, DT_ENOMEM, "out of memory");
  }
  c->name = dt__strdup(name);
  rc = DT_ENOMEM;
  if (!c->name) goto fail;
  rc = DT_EINVAL;
  if (!cJSON_IsObject(j)) {
    BAD("%s: expected a catalog object with instanceTypes[] (or Karpenter's KWOK list of instance types)", name);
    goto fail;
  }
  const cJSON *region = cJSON_GetObjectItemCaseSensitive(j, "region");
  const cJSON *prov = cJSON_GetObjectItemCaseSensitive(j, "provider");
  if (region && !cJSON_IsString(region)) {
    BAD("%s: region: expected a string", name);
    goto fail;
  }
  c->region = region ? dt__strdup(region->valuestring) : NULL;
  if (prov && !cJSON_IsString(prov)) {
    BAD("%s: provider: expected a string (aws, azure, kwok or generic)", name);
    goto fail;
  }
  c->provider = dt__strdup(cJSON_IsString(prov)                                                   ? prov->valuestring
                           : looks_aws(c->region)                                                 ? "aws"
                           : looks_azure(c->region, cJSON_GetObjectItemCaseSensitive(j, "zones")) ? "azure"
                                                                                                  : "generic");
  rc = DT_ENOMEM;
  if ((region && !c->region) || !c->provider) goto fail;
  const cJSON *zs = cJSON_GetObjectItemCaseSensitive(j, "zones");
  for (const cJSON *z = cJSON_IsArray(zs) ? zs->child : NULL; z; z = z->next) {
    if (!cJSON_IsString(z)) {
      rc = BAD("%s: zones: expected an array of strings", name);
      goto fail;
    }
    if (add_zone(c, z->valuestring)) goto fail;
  }
  const cJSON *types = cJSON_GetObjectItemCaseSensitive(j, "instanceTypes");
  if (!cJSON_IsArray(types)) {
    rc = BAD("%s: instanceTypes: missing or not an array", name);
    goto fail;
  }
  size_t nt = (size_t)cJSON_GetArraySize(types);
  if (nt > DT_MAX_TYPES) {
    rc = dt__err(err, DT_ELIMIT, "%s: instanceTypes: %zu types, more than %d (the limit on types per catalog)", name,
                 nt, DT_MAX_TYPES);
    goto fail;
  }
  c->types = dt__calloc(nt ? nt : 1, sizeof *c->types);
  if (!c->types) goto fail;
  size_t i = 0;
  for (const cJSON *t = types->child; t; t = t->next, i++) {
    c->ntypes = i + 1;
    if ((rc = parse_type(x, c, t, i, &c->types[i])) != 0) {
      if (rc == DT_ENOMEM) dt__err(err, DT_ENOMEM, "out of memory");
      goto fail;
    }
    dt_sym s = dt__sym(&x->names, c->types[i].name); /* type k is symbol k + 1 */
    if (x->names.oom) goto fail;
    if (s != i + 1) {
      rc = BAD("%s: instanceTypes[%zu]: duplicate instance type \"%s\" (also instanceTypes[%u])", name, i,
               c->types[i].name, s - 1);
      goto fail;
    }
  }
  if ((rc = parse_reservations(x, c, cJSON_GetObjectItemCaseSensitive(j, "reservations"))) != 0) {
    if (rc == DT_ENOMEM) dt__err(err, DT_ENOMEM, "out of memory");
    goto fail;
  }
  cJSON_Delete(docs);
  dt__symtab_free(&x->names);
  *out = c;
  return 0;
fail:
  if (rc == DT_ENOMEM) dt__err(err, DT_ENOMEM, "out of memory loading %s", name);
  dt__symtab_free(&x->names);
  cJSON_Delete(docs);
  dt_catalog_free(c);
  return rc;
}

int dt_catalog_load_file(const char *path, dt_catalog **out, dt_error *err) {
  char *buf;
  size_t len;
  int rc = dt__read_file(path, &buf, &len, err);
  if (rc) return rc;
  rc = dt_catalog_load_buffer(path, buf, len, out, err);
  dt__free(buf);
  return rc;
}

/* The bundled catalogs, compiled in by providers/bundled.S; the first is the
** default. */
extern const char dt__bundled_catalog[], dt__bundled_catalog_end[];
extern const char dt__bundled_azure[], dt__bundled_azure_end[];

static const struct {
  const char *name, *file;
  const char *start, *end;
} k_bundled[] = {
    {"aws-us-east-1", "bundled:aws-us-east-1.json", dt__bundled_catalog, dt__bundled_catalog_end},
    {"azure-eastus", "bundled:azure-eastus.json", dt__bundled_azure, dt__bundled_azure_end},
};
#define NBUNDLED (sizeof k_bundled / sizeof k_bundled[0])

const char *dt_catalog_bundled(size_t i) { return i < NBUNDLED ? k_bundled[i].name : NULL; }

int dt__catalog_bundled(const char *name, const char **buf, size_t *len) {
  for (size_t i = 0; i < NBUNDLED; i++)
    if (!strcmp(name, k_bundled[i].name)) {
      *buf = k_bundled[i].start;
      *len = (size_t)(k_bundled[i].end - k_bundled[i].start);
      return 0;
    }
  return -1;
}

int dt_catalog_load_default(dt_catalog **out, dt_error *err) {
  return dt_catalog_load_buffer(k_bundled[0].file, k_bundled[0].start, (size_t)(k_bundled[0].end - k_bundled[0].start),
                                out, err);
}

int dt_catalog_load_named(const char *name_or_path, dt_catalog **out, dt_error *err) {
  const char *s = name_or_path;
  if (!s) return dt_catalog_load_default(out, err);
  struct stat st;
  if (!strcmp(s, "-") || stat(s, &st) == 0) return dt_catalog_load_file(s, out, err);
  for (size_t i = 0; i < NBUNDLED; i++)
    if (!strcmp(s, k_bundled[i].name))
      return dt_catalog_load_buffer(k_bundled[i].file, k_bundled[i].start,
                                    (size_t)(k_bundled[i].end - k_bundled[i].start), out, err);
  size_t n = strlen(s);
  if (strchr(s, '/') || (n > 5 && (!strcmp(s + n - 5, ".json") || !strcmp(s + n - 5, ".yaml"))) ||
      (n > 4 && !strcmp(s + n - 4, ".yml")))
    return dt_catalog_load_file(s, out, err); /* meant as a file: say why it cannot be read */
  char names[256] = "";
  for (size_t i = 0; i < NBUNDLED; i++)
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", k_bundled[i].name);
  return dt__err(err, DT_EINVAL, "catalog \"%s\": no such file, and not a bundled catalog (bundled: %s)", s, names);
}
