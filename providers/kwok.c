/*
** kwok.c: the instance-type list of Karpenter's KWOK provider read as a
** catalog (kubernetes-sigs/karpenter, kwok/cloudprovider/instance_types.json,
** and files given to it with --instance-types-file-path). The file is a JSON
** array of
**
**   { "name": "c-2x-amd64-linux", "architecture": "amd64", "operatingSystems": ["linux"],
**     "resources": { "cpu": "2", "memory": "4Gi", "pods": "32", "ephemeral-storage": "20Gi" },
**     "offerings": [ { "Price": 0.054, "Available": true, "Requirements": [
**         { "key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"] },
**         { "key": "topology.kubernetes.io/zone", "operator": "In", "values": ["test-zone-a"] } ] } ] }
**
** It is turned here into dovetail's own catalog document, which the ordinary
** reader then loads, so both formats end in the same model (and `dovetail
** catalog --convert` prints that document). Member names match without regard
** to case, as Go's encoding/json matches them, so the older offerings with
** "Zone" and "CapacityType" members read too. As the KWOK provider does: the
** node overhead is 100m cpu and 10Mi memory (its kube-reserved), pods default
** to 110, and nodes carry karpenter.kwok.sh/instance-{size,family,cpu,memory}.
** A type's on-demand price (for spot price caps and policies) is its cheapest
** on-demand offering's.
** One difference: an offering with "Available": false stays unavailable here
** (the provider marks every offering available when it starts), so a file can
** describe a shortage.
*/
#include "../engine/model.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

#define KWOK_GROUP "karpenter.kwok.sh/"
#define MIB        (1024.0 * 1024.0)

#define BAD(...) dt__err(err, DT_EINVAL, __VA_ARGS__)

/* Karpenter's NodeSelectorRequirement members and the offering's, any case. */
static const cJSON *member(const cJSON *o, const char *k) {
  return cJSON_IsObject(o) ? cJSON_GetObjectItem(o, k) : NULL;
}

bool dt__kwok_shape(const cJSON *root) {
  if (!cJSON_IsArray(root)) return false;
  const cJSON *t = root->child;
  return !t || (cJSON_IsObject(t) && (member(t, "offerings") || member(t, "resources") || member(t, "architecture")));
}

/* The size KWOK gives a type: an AWS-style name's size (m5.xlarge ->
** xlarge), else the vCPU count as written. */
static const char *kwok_size(const char *name, const char *cpu) {
  const char *dot = strchr(name, '.');
  if (!dot || dot == name || strchr(dot + 1, '.')) return cpu;
  for (const char *p = name; p < dot; p++)
    if (!isalnum((unsigned char)*p) && *p != '_') return cpu;
  const char *s = dot + 1;
  static const char *const fixed[] = {"nano", "micro", "small", "medium", "large", "metal"};
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    if (!strcmp(s, fixed[i])) return s;
  const char *p = s;
  while (isdigit((unsigned char)*p)) p++;
  return !strcmp(p, "xlarge") ? s : cpu;
}

/* The family KWOK gives a type: the name up to its first '.' or '-', else
** its first character. */
static void kwok_family(const char *name, char *out, size_t n) {
  size_t k = strcspn(name, ".-");
  if (!name[k]) k = 1;
  snprintf(out, n, "%.*s", (int)k, name);
}

typedef struct kx {
  const char *file;
  dt_error *err;
  size_t i;          /* the type's index in the file */
  const char *tname; /* its name */
} kx;

/* One requirement's values when it is "In" (or absent: NULL, 0). */
static int req_values(kx *x, const cJSON *reqs, size_t oi, const char *key, const cJSON **vals, size_t *n) {
  dt_error *err = x->err;
  *vals = NULL;
  *n = 0;
  size_t ri = 0;
  for (const cJSON *r = reqs ? reqs->child : NULL; r; r = r->next, ri++) {
    const char *k = cJSON_GetStringValue(member(r, "key"));
    if (!k || strcmp(k, key)) continue;
    const char *op = cJSON_GetStringValue(member(r, "operator"));
    const cJSON *v = member(r, "values");
    if (!op || strcmp(op, "In"))
      return BAD("%s: [%zu] (%s): offerings[%zu].Requirements[%zu].operator: expected In for %s, got %s", x->file, x->i,
                 x->tname, oi, ri, key, op ? op : "nothing");
    if (!cJSON_IsArray(v) || !v->child)
      return BAD("%s: [%zu] (%s): offerings[%zu].Requirements[%zu].values: expected a non-empty array of strings",
                 x->file, x->i, x->tname, oi, ri);
    for (const cJSON *s = v->child; s; s = s->next)
      if (!cJSON_IsString(s) || !*s->valuestring)
        return BAD("%s: [%zu] (%s): offerings[%zu].Requirements[%zu].values: expected a non-empty array of strings",
                   x->file, x->i, x->tname, oi, ri);
    *vals = v->child;
    *n = (size_t)cJSON_GetArraySize(v);
    return 0;
  }
  return 0;
}

static void add_zone(cJSON *zones, const char *z) {
  for (const cJSON *c = zones->child; c; c = c->next)
    if (!strcmp(c->valuestring, z)) return;
  dt__json_put(zones, NULL, cJSON_CreateString(z));
}

static int offerings(kx *x, const cJSON *offs, cJSON *out, cJSON *zones, double *od) {
  dt_error *err = x->err;
  if (!cJSON_IsArray(offs)) return BAD("%s: [%zu] (%s): offerings: missing or not an array", x->file, x->i, x->tname);
  size_t oi = 0;
  for (const cJSON *o = offs->child; o; o = o->next, oi++) {
    if (!cJSON_IsObject(o))
      return BAD("%s: [%zu] (%s): offerings[%zu]: expected an object", x->file, x->i, x->tname, oi);
    const cJSON *price = member(o, "Price"), *avail = member(o, "Available"), *reqs = member(o, "Requirements");
    const cJSON *rcap = member(o, "ReservationCapacity");
    if (!cJSON_IsNumber(price) || !isfinite(price->valuedouble) || price->valuedouble < 0 ||
        price->valuedouble > DT_MAX_PRICE)
      return BAD("%s: [%zu] (%s): offerings[%zu].Price: expected a number from 0 to %g $/hour", x->file, x->i, x->tname,
                 oi, DT_MAX_PRICE);
    if (avail && !cJSON_IsBool(avail))
      return BAD("%s: [%zu] (%s): offerings[%zu].Available: expected true or false", x->file, x->i, x->tname, oi);
    if (reqs && !cJSON_IsNull(reqs) && !cJSON_IsArray(reqs))
      return BAD("%s: [%zu] (%s): offerings[%zu].Requirements: expected an array", x->file, x->i, x->tname, oi);
    /* Every requirement must be one dovetail can place on an offering. */
    size_t ri = 0;
    const char *res_key = NULL;
    for (const cJSON *r = cJSON_IsArray(reqs) ? reqs->child : NULL; r; r = r->next, ri++) {
      const char *k = cJSON_GetStringValue(member(r, "key"));
      if (!k)
        return BAD("%s: [%zu] (%s): offerings[%zu].Requirements[%zu].key: missing or not a string", x->file, x->i,
                   x->tname, oi, ri);
      size_t kl = strlen(k);
      bool rid = kl >= 15 && !strcmp(k + kl - 15, "/reservation-id");
      if (rid) res_key = k;
      if (strcmp(k, DT_L_ZONE) && strcmp(k, DT_L_CAPACITY_TYPE) && !rid)
        return BAD("%s: [%zu] (%s): offerings[%zu].Requirements[%zu].key: %s: an offering is placed by %s, %s and a "
                   "reservation ID only",
                   x->file, x->i, x->tname, oi, ri, k, DT_L_ZONE, DT_L_CAPACITY_TYPE);
    }
    const cJSON *zs, *cts, *rids;
    size_t nz, nct, nrid;
    if (req_values(x, reqs, oi, DT_L_ZONE, &zs, &nz) || req_values(x, reqs, oi, DT_L_CAPACITY_TYPE, &cts, &nct) ||
        (res_key && req_values(x, reqs, oi, res_key, &rids, &nrid)))
      return DT_EINVAL;
    if (!res_key) rids = NULL, nrid = 0;
    /* The members of older files. */
    const cJSON *zm = member(o, "Zone"), *cm = member(o, "CapacityType");
    if (!zs && cJSON_IsString(zm) && *zm->valuestring) zs = zm, nz = 1;
    if (!cts && cJSON_IsString(cm) && *cm->valuestring) cts = cm, nct = 1;
    if (!zs)
      return BAD("%s: [%zu] (%s): offerings[%zu].Requirements: no %s requirement (In, one zone or more)", x->file, x->i,
                 x->tname, oi, DT_L_ZONE);
    if (!cts)
      return BAD("%s: [%zu] (%s): offerings[%zu].Requirements: no %s requirement (In on-demand, spot or reserved)",
                 x->file, x->i, x->tname, oi, DT_L_CAPACITY_TYPE);
    if (nrid > 1)
      return BAD("%s: [%zu] (%s): offerings[%zu].Requirements: %s: expected one reservation ID", x->file, x->i,
                 x->tname, oi, res_key);
    if (rcap && !(cJSON_IsNumber(rcap) && rcap->valuedouble >= 0 && rcap->valuedouble == floor(rcap->valuedouble) &&
                  rcap->valuedouble < 1e12))
      return BAD("%s: [%zu] (%s): offerings[%zu].ReservationCapacity: expected a count >= 0", x->file, x->i, x->tname,
                 oi);
    /* One offering per zone and capacity type named (a legacy member is one value). */
    for (const cJSON *z = zs; nz && z; z = z == zm ? NULL : z->next) {
      for (const cJSON *ct = cts; nct && ct; ct = ct == cm ? NULL : ct->next) {
        int cti = dt__ct_parse(ct->valuestring);
        if (cti < 0)
          return BAD("%s: [%zu] (%s): offerings[%zu]: capacity type \"%s\": expected on-demand, spot or reserved",
                     x->file, x->i, x->tname, oi, ct->valuestring);
        if (cti == DT_CT_RESERVED && !rids)
          return BAD("%s: [%zu] (%s): offerings[%zu].Requirements: a reserved offering needs a .../reservation-id "
                     "requirement",
                     x->file, x->i, x->tname, oi);
        if (cti == DT_CT_ON_DEMAND && (*od < 0 || price->valuedouble < *od)) *od = price->valuedouble;
        cJSON *no = dt__json_put(out, NULL, cJSON_CreateObject());
        dt__json_put_str(no, "zone", z->valuestring);
        dt__json_put_str(no, "capacityType", ct->valuestring);
        dt__json_put_num(no, "price", price->valuedouble);
        if (cti == DT_CT_RESERVED) {
          dt__json_put_str(no, "reservationID", rids->valuestring);
          if (rcap) dt__json_put_num(no, "available", cJSON_IsFalse(avail) ? 0 : rcap->valuedouble);
        }
        if (cJSON_IsFalse(avail) && !(cti == DT_CT_RESERVED && rcap))
          dt__json_put(no, "available", cJSON_CreateFalse());
        add_zone(zones, z->valuestring);
      }
    }
  }
  return 0;
}

/* A quantity member of resources, as milli-units. */
static int resource(kx *x, const cJSON *it, int64_t *milli) {
  dt_error *err = x->err, qe;
  char tmp[64];
  const char *s = dt__scalar(it, tmp, sizeof tmp);
  /* the parse's own message when it fails: *milli is only set when it reads */
  if (!s || dt_quantity_parse(s, milli, &qe))
    return BAD("%s: [%zu] (%s): resources.%s: %s", x->file, x->i, x->tname, it->string,
               !s ? "expected a quantity" : qe.msg);
  if (*milli < 0) return BAD("%s: [%zu] (%s): resources.%s: must not be negative", x->file, x->i, x->tname, it->string);
  return 0;
}

static int one_type(kx *x, const cJSON *t, cJSON *o, cJSON *zones) {
  dt_error *err = x->err;
  const cJSON *arch = member(t, "architecture"), *oss = member(t, "operatingSystems"), *res = member(t, "resources");
  if (arch && !cJSON_IsString(arch))
    return BAD("%s: [%zu] (%s): architecture: expected a string", x->file, x->i, x->tname);
  dt__json_put_str(o, "name", x->tname);
  dt__json_put_str(o, "arch", arch ? arch->valuestring : "amd64");
  if (!cJSON_IsObject(res)) return BAD("%s: [%zu] (%s): resources: missing or not an object", x->file, x->i, x->tname);
  int64_t cpu = -1, mem = -1, pods = -1;
  char cpu_s[64] = "", mem_s[64] = "";
  cJSON *ext = NULL;
  for (const cJSON *r = res->child; r; r = r->next) {
    int64_t v;
    if (resource(x, r, &v)) return DT_EINVAL;
    if (!strcmp(r->string, "cpu")) {
      cpu = v;
      dt__fmt_quantity(cpu_s, sizeof cpu_s, "cpu", v);
    } else if (!strcmp(r->string, "memory")) {
      mem = v;
      dt__fmt_quantity(mem_s, sizeof mem_s, "memory", v);
    } else if (!strcmp(r->string, "pods")) {
      if (v % 1000 || v < 1000)
        return BAD("%s: [%zu] (%s): resources.pods: expected a whole number of pods", x->file, x->i, x->tname);
      pods = v / 1000;
    } else if (!strcmp(r->string, "ephemeral-storage")) {
      char q[64];
      dt__fmt_quantity(q, sizeof q, "ephemeral-storage", v);
      dt__json_put_str(o, "ephemeralStorage", q);
    } else if (strchr(r->string, '/')) {
      if (v % 1000)
        return BAD("%s: [%zu] (%s): resources.%s: expected a whole number of devices", x->file, x->i, x->tname,
                   r->string);
      if (!ext) ext = dt__json_put(o, "extendedResources", cJSON_CreateObject()); /* owned by o */
      dt__json_put_num(ext, r->string, (double)(v / 1000));
    } else {
      return BAD("%s: [%zu] (%s): resources.%s: not read (cpu, memory, pods, ephemeral-storage and devices with a "
                 "domain, such as nvidia.com/gpu, are)",
                 x->file, x->i, x->tname, r->string);
    }
  }
  if (cpu <= 0 || mem <= 0)
    return BAD("%s: [%zu] (%s): resources.%s: missing or zero", x->file, x->i, x->tname, cpu <= 0 ? "cpu" : "memory");
  dt__json_put_num(o, "cpu", (double)cpu / 1000);
  dt__json_put_num(o, "memoryMiB", (double)mem / 1000 / MIB);
  dt__json_put_num(o, "maxPods", pods > 0 ? (double)pods : 110);
  cJSON *oh = dt__json_put(o, "overhead", cJSON_CreateObject());
  dt__json_put_str(oh, "cpu", "100m");
  dt__json_put_str(oh, "memory", "10Mi");
  cJSON *labels = dt__json_put(o, "labels", cJSON_CreateObject());
  char fam[128];
  kwok_family(x->tname, fam, sizeof fam);
  dt__json_put_str(labels, KWOK_GROUP "instance-size", kwok_size(x->tname, cpu_s));
  dt__json_put_str(labels, KWOK_GROUP "instance-family", fam);
  dt__json_put_str(labels, KWOK_GROUP "instance-cpu", cpu_s);
  dt__json_put_str(labels, KWOK_GROUP "instance-memory", mem_s);
  /* A node has one operating system: linux when the type offers it. */
  if (oss && !cJSON_IsNull(oss)) {
    if (!cJSON_IsArray(oss)) return BAD("%s: [%zu] (%s): operatingSystems: expected an array", x->file, x->i, x->tname);
    const char *os = NULL;
    for (const cJSON *s = oss->child; s; s = s->next) {
      if (!cJSON_IsString(s) || !*s->valuestring)
        return BAD("%s: [%zu] (%s): operatingSystems: expected an array of names", x->file, x->i, x->tname);
      if (!os || !strcmp(s->valuestring, "linux")) os = s->valuestring;
    }
    if (os && strcmp(os, "linux")) dt__json_put_str(labels, DT_L_OS, os);
  }
  double od = -1;
  if (offerings(x, member(t, "offerings"), dt__json_put(o, "offerings", cJSON_CreateArray()), zones, &od))
    return DT_EINVAL;
  if (od >= 0) dt__json_put_num(o, "onDemandPrice", od);
  return 0;
}

int dt__kwok_convert(const char *file, const cJSON *root, cJSON **out, dt_error *err) {
  dt__alloc_failed(1);
  cJSON *doc = cJSON_CreateObject();
  dt__json_put_str(doc, "provider", "kwok");
  cJSON *zones = dt__json_put(doc, "zones", cJSON_CreateArray());
  cJSON *types = dt__json_put(doc, "instanceTypes", cJSON_CreateArray());
  kx x = {file, err, 0, NULL};
  int rc = 0;
  for (const cJSON *t = root->child; t && !rc; t = t->next, x.i++) {
    if (dt__alloc_failed(0)) break;
    const cJSON *name = member(t, "name");
    if (!cJSON_IsObject(t)) {
      rc = BAD("%s: [%zu]: expected an instance type object", file, x.i);
    } else if (!cJSON_IsString(name) || !*name->valuestring) {
      rc = BAD("%s: [%zu]: name: missing or not a string", file, x.i);
    } else {
      x.tname = name->valuestring;
      cJSON *o = dt__json_put(types, NULL, cJSON_CreateObject());
      if (o && zones) rc = one_type(&x, t, o, zones);
    }
  }
  if (!rc && (dt__alloc_failed(1) || !zones || !types)) rc = dt__err(err, DT_ENOMEM, "out of memory reading %s", file);
  if (rc) {
    cJSON_Delete(doc);
    return rc;
  }
  *out = doc;
  return 0;
}
