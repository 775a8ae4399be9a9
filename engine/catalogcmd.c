/*
** catalogcmd.c: `dovetail catalog`, a catalog's instance types and offerings
** as a table or a JSON document, filtered by name, zone, capacity type, size
** and price; or, with --convert, the catalog written out in dovetail's own
** format (whatever format it was read from: a KWOK list becomes a dovetail
** catalog).
**
** The JSON document (-o json):
**   { "apiVersion": "dovetail.dev/v1alpha1", "kind": "InstanceTypeList",
**     "catalog": "bundled:aws-us-east-1.json", "provider": "aws", "region": "us-east-1",
**     "instanceTypes": [ { "name": "m5.large", "arch": "amd64",
**         "capacity": { "cpu": "2", "memory": "7578Mi", "pods": "29", "ephemeral-storage": "20Gi" },
**         "allocatable": { "cpu": "1930m", "memory": "6903Mi", ... }, "gpus": 0,
**         "labels": { "node.kubernetes.io/instance-type": "m5.large", ... },
**         "offerings": [ { "zone": "us-east-1a", "capacityType": "spot", "price": 0.0353,
**                          "available": true } ] } ],
**     "summary": { "instanceTypes": 1, "offerings": 12 } }
** available is true, false or a count; reserved offerings add reservationID.
*/
#include "model.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *k_usage =
    "usage: dovetail catalog [options]\n"
    "List a catalog's instance types and offerings, or write the catalog out in dovetail's format.\n"
    "  --catalog NAME|FILE  a bundled catalog (aws-us-east-1, the default; azure-eastus) or a file: dovetail's\n"
    "                       catalog format or Karpenter's KWOK instance-type list\n"
    "  -o, --output FMT     table | json (default: table on a terminal, else json)\n"
    "  --type GLOB          types whose name matches the shell pattern ('m5.*', 'Standard_D*_v5'); repeatable\n"
    "  --zone ZONE          offerings in ZONE; repeatable\n"
    "  --capacity-type CT   offerings of on-demand, spot or reserved capacity; repeatable\n"
    "  --min-cpu N          types with at least N vCPUs\n"
    "  --max-price P        offerings at P $/hour or less\n"
    "  --convert            print the catalog (what the filters leave of it) in dovetail's catalog format,\n"
    "                       which loads back to the same instance types and offerings\n"
    "exit status: 0 listed, 1 bad catalog, 2 bad usage\n";

typedef struct filter {
  const char **types, **zones;
  size_t ntypes, nzones;
  bool ct[DT_CT_N], any_ct;
  double min_cpu, max_price; /* < 0: none */
} filter;

static bool keep(const dt_catalog *c, const dt_ctype *t, const dt_coffer *o, void *ud) {
  (void)c;
  const filter *f = ud;
  bool ok = f->ntypes == 0;
  for (size_t i = 0; !ok && i < f->ntypes; i++) ok = fnmatch(f->types[i], t->name, 0) == 0;
  if (!ok) return false;
  if (f->min_cpu >= 0 && (double)dt__rlist_get(&t->capacity, "cpu") < f->min_cpu * 1000) return false;
  if (f->nzones) {
    ok = false;
    for (size_t i = 0; !ok && i < f->nzones; i++) ok = !strcmp(f->zones[i], o->zone);
    if (!ok) return false;
  }
  if (f->any_ct && !f->ct[o->ct]) return false;
  return f->max_price < 0 || o->price <= f->max_price;
}

static cJSON *quantities(const dt_rlist *r) {
  cJSON *o = cJSON_CreateObject();
  char q[64];
  for (size_t i = 0; i < r->n; i++) {
    dt__fmt_quantity(q, sizeof q, r->v[i].name, r->v[i].milli);
    dt__json_put_str(o, r->v[i].name, q);
  }
  return o;
}

static int64_t gpus(const dt_ctype *t) { return dt__ctype_gpus(t); }

static char *render_json(const dt_catalog *c, filter *f, size_t *len) {
  dt__alloc_failed(1);
  cJSON *root = cJSON_CreateObject();
  dt__json_put_str(root, "apiVersion", "dovetail.dev/v1alpha1");
  dt__json_put_str(root, "kind", "InstanceTypeList");
  dt__json_put_str(root, "catalog", c->name);
  dt__json_put_str(root, "provider", c->provider);
  if (c->region) dt__json_put_str(root, "region", c->region);
  cJSON *types = dt__json_put(root, "instanceTypes", cJSON_CreateArray());
  size_t nt = 0, no = 0;
  for (size_t i = 0; i < c->ntypes; i++) {
    const dt_ctype *t = &c->types[i];
    cJSON *offs = NULL, *to = NULL;
    for (size_t k = 0; k < t->noff; k++) {
      const dt_coffer *o = &t->off[k];
      if (!keep(c, t, o, f)) continue;
      if (!to) {
        to = dt__json_put(types, NULL, cJSON_CreateObject());
        dt__json_put_str(to, "name", t->name);
        dt__json_put_str(to, "arch", t->arch);
        dt__json_put(to, "capacity", quantities(&t->capacity));
        dt__json_put(to, "allocatable", quantities(&t->allocatable));
        dt__json_put_num(to, "gpus", (double)gpus(t));
        cJSON *labels = dt__json_put(to, "labels", cJSON_CreateObject());
        for (size_t l = 0; l < t->labels.n; l++) dt__json_put_str(labels, t->labels.v[l].key, t->labels.v[l].val);
        offs = dt__json_put(to, "offerings", cJSON_CreateArray());
        nt++;
      }
      cJSON *jo = dt__json_put(offs, NULL, cJSON_CreateObject());
      char price[64];
      dt__fmt_price(price, sizeof price, o->price);
      dt__json_put_str(jo, "zone", o->zone);
      dt__json_put_str(jo, "capacityType", dt__ct_names[o->ct]);
      dt__json_put(jo, "price", cJSON_CreateRaw(price));
      dt__json_put(jo, "available",
                   o->available < 0    ? cJSON_CreateTrue()
                   : o->available == 0 ? cJSON_CreateFalse()
                                       : cJSON_CreateNumber((double)o->available));
      if (o->reservation) dt__json_put_str(jo, "reservationID", o->reservation);
      no++;
    }
  }
  cJSON *sum = dt__json_put(root, "summary", cJSON_CreateObject());
  dt__json_put_num(sum, "instanceTypes", (double)nt);
  dt__json_put_num(sum, "offerings", (double)no);
  dt_buf b = {0};
  if (dt__alloc_failed(1) || !types || !sum)
    b.oom = 1;
  else
    dt__doc_write(root, DT_FORMAT_JSON, &b);
  cJSON_Delete(root);
  return dt__buf_take(&b, len);
}

static void pad(dt_buf *b, const char *s, size_t w) {
  dt__buf_puts(b, s);
  for (size_t n = strlen(s); n < w; n++) dt__buf_putc(b, ' ');
}

enum { NC = 11 };

static void row(const dt_ctype *t, const dt_coffer *o, char cell[NC][128]) {
  snprintf(cell[0], 128, "%s", t->name);
  snprintf(cell[1], 128, "%s", t->arch);
  dt__fmt_quantity(cell[2], 128, "cpu", dt__rlist_get(&t->capacity, "cpu"));
  dt__fmt_quantity(cell[3], 128, "cpu", dt__rlist_get(&t->allocatable, "cpu"));
  snprintf(cell[4], 128, "%.1fGi", (double)dt__rlist_get(&t->allocatable, "memory") / 1000.0 / 1073741824.0);
  snprintf(cell[5], 128, "%lld", (long long)(dt__rlist_get(&t->allocatable, "pods") / 1000));
  snprintf(cell[6], 128, "%lld", (long long)gpus(t));
  snprintf(cell[7], 128, "%s", o->zone);
  snprintf(cell[8], 128, "%s", dt__ct_names[o->ct]);
  dt__fmt_price(cell[9], 128, o->price);
  if (o->available < 0)
    snprintf(cell[10], 128, "yes");
  else if (o->available == 0)
    snprintf(cell[10], 128, "no");
  else
    snprintf(cell[10], 128, "%lld", (long long)o->available);
}

static char *render_table(const dt_catalog *c, filter *f, size_t *len) {
  static const char *head[NC] = {"INSTANCE TYPE", "ARCH", "VCPU",     "CPU",    "MEMORY",   "PODS",
                                 "GPUS",          "ZONE", "CAPACITY", "$/HOUR", "AVAILABLE"};
  size_t w[NC];
  for (int i = 0; i < NC; i++) w[i] = strlen(head[i]);
  char cell[NC][128];
  size_t nt = 0, no = 0;
  for (size_t i = 0; i < c->ntypes; i++) {
    bool any = false;
    for (size_t k = 0; k < c->types[i].noff; k++) {
      if (!keep(c, &c->types[i], &c->types[i].off[k], f)) continue;
      row(&c->types[i], &c->types[i].off[k], cell);
      for (int j = 0; j < NC; j++)
        if (strlen(cell[j]) > w[j]) w[j] = strlen(cell[j]);
      any = true;
      no++;
    }
    nt += any;
  }
  dt_buf b = {0};
  if (no) {
    for (int j = 0; j < NC; j++) pad(&b, head[j], j + 1 < NC ? w[j] + 2 : 0);
    dt__buf_putc(&b, '\n');
    for (size_t i = 0; i < c->ntypes; i++)
      for (size_t k = 0; k < c->types[i].noff; k++) {
        if (!keep(c, &c->types[i], &c->types[i].off[k], f)) continue;
        row(&c->types[i], &c->types[i].off[k], cell);
        for (int j = 0; j < NC; j++) pad(&b, cell[j], j + 1 < NC ? w[j] + 2 : 0);
        dt__buf_putc(&b, '\n');
      }
    dt__buf_putc(&b, '\n');
  }
  dt__buf_printf(&b, "%zu instance type%s, %zu offering%s (%s; CPU and MEMORY are allocatable)\n", nt,
                 nt == 1 ? "" : "s", no, no == 1 ? "" : "s", c->name);
  return dt__buf_take(&b, len);
}

int dt__catalog_main(int argc, char **argv) {
  const char *catalog = NULL, *out = NULL;
  bool convert = false;
  filter f = {0};
  f.min_cpu = f.max_price = -1;
  f.types = dt__calloc((size_t)argc + 1, sizeof *f.types);
  f.zones = dt__calloc((size_t)argc + 1, sizeof *f.zones);
  int rc = 2;
  if (!f.types || !f.zones) goto done;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strncmp(a, "--output=", 9) || !strncmp(a, "-o=", 3) || (!strncmp(a, "-o", 2) && a[2] && a[2] != '=')) {
      out = strchr(a, '=') ? strchr(a, '=') + 1 : a + 2;
      continue;
    }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(k_usage, stdout);
      rc = 0;
      goto done;
    }
    if (!strcmp(a, "--convert")) {
      convert = true;
      continue;
    }
    if (!v || a[0] != '-') {
      fprintf(stderr, "dovetail catalog: %s %s (dovetail catalog --help lists the options)\n",
              a[0] == '-' ? "incomplete or unknown option" : "unexpected argument", a);
      goto done;
    }
    i++;
    char *end;
    if (!strcmp(a, "--catalog")) {
      catalog = v;
    } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
      out = v;
    } else if (!strcmp(a, "--type")) {
      f.types[f.ntypes++] = v;
    } else if (!strcmp(a, "--zone")) {
      f.zones[f.nzones++] = v;
    } else if (!strcmp(a, "--capacity-type")) {
      int ct = dt__ct_parse(v);
      if (ct < 0) {
        fprintf(stderr, "dovetail catalog: --capacity-type: expected on-demand, spot or reserved, got \"%s\"\n", v);
        goto done;
      }
      f.ct[ct] = f.any_ct = true;
    } else if (!strcmp(a, "--min-cpu") || !strcmp(a, "--max-price")) {
      double d = strtod(v, &end);
      if (!*v || *end || !(d >= 0) || d > 1e9) {
        fprintf(stderr, "dovetail catalog: %s: expected a number >= 0, got \"%s\"\n", a, v);
        goto done;
      }
      *(!strcmp(a, "--min-cpu") ? &f.min_cpu : &f.max_price) = d;
    } else {
      fprintf(stderr, "dovetail catalog: unknown option %s (dovetail catalog --help lists them)\n", a);
      goto done;
    }
  }
  bool json = !isatty(1);
  if (out && !strcmp(out, "json"))
    json = true;
  else if (out && !strcmp(out, "table"))
    json = false;
  else if (out) {
    fprintf(stderr, "dovetail catalog: -o: expected table or json, got \"%s\"\n", out);
    goto done;
  }
  if (convert && out) {
    fputs("dovetail catalog: --convert prints the catalog format; leave out -o\n", stderr);
    goto done;
  }
  dt_error err = {0};
  dt_catalog *c = NULL;
  rc = 1;
  if (dt_catalog_load_named(catalog, &c, &err)) {
    fprintf(stderr, "dovetail catalog: %s\n", err.msg);
    goto done;
  }
  size_t len = 0;
  bool filtered = f.ntypes || f.nzones || f.any_ct || f.min_cpu >= 0 || f.max_price >= 0;
  char *text = convert ? dt__catalog_json(c, filtered ? keep : NULL, &f, &len)
               : json  ? render_json(c, &f, &len)
                       : render_table(c, &f, &len);
  if (!text)
    fputs("dovetail catalog: out of memory\n", stderr);
  else if (fwrite(text, 1, len, stdout) != len || fflush(stdout))
    fputs("dovetail catalog: cannot write to standard output\n", stderr);
  else
    rc = 0;
  dt__free(text);
  dt_catalog_free(c);
done:
  dt__free(f.types);
  dt__free(f.zones);
  return rc;
}
