/*
** catalog_out.c: a catalog written back out in dovetail's own format (what
** `dovetail catalog -o json` prints and converts other formats to), and the
** accessor that tells one instance type's figures. Numbers are written as the
** shortest decimal that reads back as the same double, so a catalog
** converted and read again is the same catalog.
*/
#include "../engine/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024LL * 1024)

/* The shortest decimal that reads back as the same double. */
static void put_num(dt_buf *b, double v) {
  char tmp[40];
  for (int p = 1; p <= 17; p++) {
    snprintf(tmp, sizeof tmp, "%.*g", p, v);
    if (strtod(tmp, NULL) == v) break;
  }
  dt__buf_puts(b, tmp);
}

static void put_key(dt_buf *b, const char *k) {
  dt__buf_json_str(b, k);
  dt__buf_puts(b, ": ");
}

static void put_qty(dt_buf *b, const char *key, const char *resource, int64_t milli) {
  char q[64];
  dt__fmt_quantity(q, sizeof q, resource, milli);
  put_key(b, key);
  dt__buf_json_str(b, q);
}

static void put_type(dt_buf *b, const dt_catalog *c, const dt_ctype *t, dt__offer_keep keep, void *ud) {
  dt__buf_puts(b, "{");
  put_key(b, "name");
  dt__buf_json_str(b, t->name);
  if (t->src.family) {
    dt__buf_puts(b, ", ");
    put_key(b, "family");
    dt__buf_json_str(b, t->src.family);
  }
  dt__buf_puts(b, ", ");
  put_key(b, "arch");
  dt__buf_json_str(b, t->arch);
  dt__buf_puts(b, ", ");
  put_key(b, "cpu");
  put_num(b, t->src.cpu);
  dt__buf_puts(b, ", ");
  put_key(b, "memoryMiB");
  put_num(b, t->src.memory_mib);
  if (t->src.gpu > 0) dt__buf_printf(b, ", \"gpu\": %lld", (long long)t->src.gpu);
  if (t->src.gpu_name) {
    dt__buf_puts(b, ", ");
    put_key(b, "gpuName");
    dt__buf_json_str(b, t->src.gpu_name);
  }
  dt__buf_printf(b, ", \"maxPods\": %lld", (long long)(dt__rlist_get(&t->capacity, "pods") / 1000));
  if (t->src.eph_bytes >= 0) {
    dt__buf_puts(b, ", ");
    put_qty(b, "ephemeralStorage", "ephemeral-storage", t->src.eph_bytes * 1000);
  }
  if (t->od_price >= 0) {
    dt__buf_puts(b, ", ");
    put_key(b, "onDemandPrice");
    put_num(b, t->od_price);
  }
  if (t->src.labels.n) {
    dt__buf_puts(b, ", \"labels\": {");
    for (size_t i = 0; i < t->src.labels.n; i++) {
      if (i) dt__buf_puts(b, ", ");
      put_key(b, t->src.labels.v[i].key);
      dt__buf_json_str(b, t->src.labels.v[i].val);
    }
    dt__buf_puts(b, "}");
  }
  if (t->src.has_overhead) {
    const char *sep = "";
    dt__buf_puts(b, ", \"overhead\": {");
    if (t->src.oh_cpu) {
      put_qty(b, "cpu", "cpu", t->src.oh_cpu);
      sep = ", ";
    }
    if (t->src.oh_mem) {
      dt__buf_puts(b, sep);
      put_qty(b, "memory", "memory", t->src.oh_mem);
      sep = ", ";
    }
    if (t->src.oh_eph) {
      dt__buf_puts(b, sep);
      put_qty(b, "ephemeral-storage", "ephemeral-storage", t->src.oh_eph);
    }
    dt__buf_puts(b, "}");
  }
  /* Devices other than the one gpu counts. */
  const char *gres = t->src.gpu > 0 ? dt__gpu_resource(t->src.gpu_name) : NULL;
  bool any = false;
  for (size_t i = 0; i < t->capacity.n; i++) {
    const dt_rq *r = &t->capacity.v[i];
    if (!strchr(r->name, '/') || (gres && !strcmp(r->name, gres) && r->milli == t->src.gpu * 1000)) continue;
    dt__buf_puts(b, any ? ", " : ", \"extendedResources\": {");
    any = true;
    put_key(b, r->name);
    dt__buf_printf(b, "%lld", (long long)(r->milli / 1000));
  }
  if (any) dt__buf_puts(b, "}");
  dt__buf_puts(b, ", \"offerings\": [");
  bool first = true;
  for (size_t i = 0; i < t->noff; i++) {
    const dt_coffer *o = &t->off[i];
    if (keep && !keep(c, t, o, ud)) continue;
    dt__buf_puts(b, first ? "{" : ", {");
    first = false;
    put_key(b, "zone");
    dt__buf_json_str(b, o->zone);
    dt__buf_puts(b, ", ");
    put_key(b, "capacityType");
    dt__buf_json_str(b, dt__ct_names[o->ct]);
    dt__buf_puts(b, ", ");
    put_key(b, "price");
    put_num(b, o->price);
    if (o->available == 0) dt__buf_puts(b, ", \"available\": false");
    if (o->available > 0) dt__buf_printf(b, ", \"available\": %lld", (long long)o->available);
    if (o->reservation) {
      dt__buf_puts(b, ", ");
      put_key(b, "reservationID");
      dt__buf_json_str(b, o->reservation);
    }
    dt__buf_puts(b, "}");
  }
  dt__buf_puts(b, "]}");
}

static bool type_kept(const dt_catalog *c, const dt_ctype *t, dt__offer_keep keep, void *ud) {
  if (!keep) return true;
  for (size_t i = 0; i < t->noff; i++)
    if (keep(c, t, &t->off[i], ud)) return true;
  return false;
}

char *dt__catalog_json(const dt_catalog *c, dt__offer_keep keep, void *ud, size_t *len) {
  dt_buf b = {0};
  dt__buf_puts(&b, "{\n  \"provider\": ");
  dt__buf_json_str(&b, c->provider);
  if (c->region) {
    dt__buf_puts(&b, ",\n  \"region\": ");
    dt__buf_json_str(&b, c->region);
  }
  dt__buf_puts(&b, ",\n  \"zones\": [");
  bool first = true;
  for (size_t z = 0; z < c->nzones; z++) {
    bool used = !keep;
    for (size_t i = 0; !used && i < c->ntypes; i++)
      for (size_t k = 0; !used && k < c->types[i].noff; k++)
        used = c->types[i].off[k].zone == c->zones[z] && keep(c, &c->types[i], &c->types[i].off[k], ud);
    if (!used) continue;
    if (!first) dt__buf_puts(&b, ", ");
    first = false;
    dt__buf_json_str(&b, c->zones[z]);
  }
  dt__buf_puts(&b, "],\n  \"instanceTypes\": [");
  first = true;
  for (size_t i = 0; i < c->ntypes; i++) {
    if (!type_kept(c, &c->types[i], keep, ud)) continue;
    dt__buf_puts(&b, first ? "\n    " : ",\n    ");
    first = false;
    put_type(&b, c, &c->types[i], keep, ud);
  }
  dt__buf_puts(&b, first ? "]\n}\n" : "\n  ]\n}\n");
  return dt__buf_take(&b, len);
}

char *dt_catalog_json(const dt_catalog *c, size_t *len) { return c ? dt__catalog_json(c, NULL, NULL, len) : NULL; }

const dt_ctype *dt__catalog_named(const dt_catalog *c, const char *name) {
  for (size_t i = 0; c && name && i < c->ntypes; i++)
    if (!strcmp(c->types[i].name, name)) return &c->types[i];
  return NULL;
}

int64_t dt__ctype_gpus(const dt_ctype *t) {
  int64_t n = 0;
  for (size_t i = 0; i < t->capacity.n; i++) {
    const char *slash = strchr(t->capacity.v[i].name, '/');
    if (slash && strstr(t->capacity.v[i].name, "gpu")) n += t->capacity.v[i].milli / 1000;
  }
  return n;
}

int dt_catalog_type(const dt_catalog *c, size_t index, dt_type_info *out) {
  if (!c || index >= c->ntypes) return DT_EINVAL;
  const dt_ctype *t = &c->types[index];
  memset(out, 0, sizeof *out);
  out->name = t->name;
  out->arch = t->arch;
  out->cpu_milli = dt__rlist_get(&t->allocatable, "cpu");
  out->memory_bytes = dt__rlist_get(&t->allocatable, "memory") / 1000;
  out->pods = dt__rlist_get(&t->allocatable, "pods") / 1000;
  out->gpus = dt__ctype_gpus(t);
  out->on_demand_price = t->od_price;
  out->cheapest_price = -1;
  for (size_t i = 0; i < t->noff; i++)
    if (t->off[i].available != 0 && (out->cheapest_price < 0 || t->off[i].price < out->cheapest_price))
      out->cheapest_price = t->off[i].price;
  out->offerings = t->noff;
  return 0;
}
