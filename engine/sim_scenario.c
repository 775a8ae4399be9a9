/*
** sim_scenario.c: the simulator's workload. The trace (CSV, gzip or not: one
** pod per row with its shape and lifetime) and the scenario (timed events:
** apply, delete, scale, offerings unavailable, interruptions, price changes,
** pods, nodes that never start), read and checked, then played into the
** controller as the cluster would: a Deployment becomes its pods.
*/
#define _GNU_SOURCE
#include "sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static const cJSON *jget(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

static int64_t dur_ms(const cJSON *v, int64_t def) {
  char tmp[64];
  const char *s = dt__scalar(v, tmp, sizeof tmp);
  int64_t d;
  if (!s) return def;
  if (!dt__duration_parse(s, &d)) return d * 1000;
  char *end;
  double x = strtod(s, &end);
  return *end ? def : (int64_t)(x * 1000); /* a bare number: seconds */
}

static void deployment_scale(run *r, deployment *d, int64_t want) {
  for (int64_t i = d->replicas; i < want; i++) {
    char name[400];
    snprintf(name, sizeof name, "%s-%lld", d->name, (long long)i);
    int64_t cpu, mem;
    cJSON *o = pod_object(d->ns, name, 0, 0, d->tmpl);
    /* its ReplicaSet's, as the controller makes them (its selector is what
    ** default spreads deduce for the pod) */
    if (d->rs) {
      cJSON *ref = cJSON_CreateObject();
      cJSON_AddStringToObject(ref, "apiVersion", "apps/v1");
      cJSON_AddStringToObject(ref, "kind", "ReplicaSet");
      cJSON_AddStringToObject(ref, "name", d->rs);
      cJSON_AddStringToObject(ref, "uid", d->rs);
      cJSON_AddBoolToObject(ref, "controller", true);
      cJSON_AddItemToArray(cJSON_AddArrayToObject(cJSON_GetObjectItemCaseSensitive(o, "metadata"), "ownerReferences"),
                           ref);
    }
    pod_requests(o, &cpu, &mem);
    track(r, d->ns, name, cpu, mem, -1, d->name);
    dt_error err = {0};
    if (dt__ctl_apply(o, &err)) violate(r, "Deployment %s/%s: %s", d->ns, d->name, err.msg);
    cJSON_Delete(o);
  }
  for (int64_t i = d->replicas - 1; i >= want; i--) {
    char full[800];
    snprintf(full, sizeof full, "%s/%s-%lld", d->ns, d->name, (long long)i);
    int32_t pi = map_get(r, false, dt__sym_find(&r->names, full));
    if (pi >= 0) depart(r, (uint32_t)pi);
  }
  d->replicas = want;
}

static deployment *deployment_find(run *r, const char *ns, const char *name) {
  for (size_t i = 0; i < r->deps.n; i++)
    if (!strcmp(r->deps.v[i].ns, ns) && !strcmp(r->deps.v[i].name, name)) return &r->deps.v[i];
  return NULL;
}

/* A NodePool applied: its budgets, parsed as the controller parses them,
** replace what was known of it. One the controller refuses is not kept. */
static void record_pool(run *r, const char *name, const cJSON *o) {
  char *text = cJSON_PrintUnformatted(o);
  dt_manifests *m = text ? dt_manifests_new() : NULL;
  dt_error err = {0};
  bool ok = m && !dt_manifests_add_buffer(m, "NodePool", text, strlen(text), &err) && m->pools.n == 1;
  cJSON_free(text);
  if (!ok) {
    dt_manifests_free(m);
    return;
  }
  for (size_t i = 0; i < r->npools.n; i++)
    if (!strcmp(r->npools.v[i].name, name)) {
      dt_manifests_free(r->npools.v[i].m);
      r->npools.v[i].m = m;
      return;
    }
  spool p = {dt__strdup(name), m};
  if (!p.name || dt__vec_push(&r->npools, p)) {
    dt__free(p.name);
    dt_manifests_free(m);
    violate(r, "out of memory");
  }
}

/* Whether o (an object, a list of them, or a List's items) holds
** ReplicaSet ns/name. */
static bool holds_rs(const cJSON *o, const char *ns, const char *name, int depth) {
  if (cJSON_IsArray(o) || (cJSON_IsObject(o) && cJSON_IsArray(jget(o, "items")))) {
    for (const cJSON *c = (cJSON_IsArray(o) ? o : jget(o, "items"))->child; c && depth < 8; c = c->next)
      if (holds_rs(c, ns, name, depth + 1)) return true;
    return false;
  }
  const char *k = dt__jstr(o, "kind"), *n = dt__jstr(jget(o, "metadata"), "name"),
             *s = dt__jstr(jget(o, "metadata"), "namespace");
  return k && n && !strcmp(k, "ReplicaSet") && !strcmp(n, name) && !strcmp(s ? s : "default", ns);
}

/* Whether the run's input (its cluster, its scenario's applies) holds
** ReplicaSet ns/name, whenever it comes. */
static bool input_holds_rs(const run *r, const char *ns, const char *name) {
  if (holds_rs(r->in->cluster, ns, name, 0)) return true;
  const cJSON *ev;
  cJSON_ArrayForEach(ev, r->in->scenario) if (holds_rs(jget(ev, "apply"), ns, name, 0)) return true;
  return false;
}

/* Apply one object as the cluster would: Deployments become their pods
** (the simulator plays the ReplicaSet controller), Pods are followed. */
void apply_object(run *r, const cJSON *o) {
  const char *kind = dt__jstr(o, "kind");
  const cJSON *md = jget(o, "metadata");
  const char *ns = dt__jstr(md, "namespace") ? dt__jstr(md, "namespace") : "default";
  const char *name = dt__jstr(md, "name");
  if (kind && name && !strcmp(kind, "Deployment")) {
    deployment *d = deployment_find(r, ns, name);
    if (!d) {
      deployment z = {dt__strdup(ns), dt__strdup(name), NULL, 0, NULL};
      if (!z.ns || !z.name || dt__vec_push(&r->deps, z)) {
        dt__free(z.ns), dt__free(z.name);
        violate(r, "out of memory");
        return;
      }
      d = &r->deps.v[r->deps.n - 1];
    }
    cJSON_Delete(d->tmpl);
    d->tmpl = cJSON_Duplicate(jget(jget(o, "spec"), "template"), true);
    /* the Deployment's ReplicaSet, holding no replicas of its own (the
    ** simulator makes and removes the pods): its selector. Named apart from
    ** the Deployment, marked as the simulator's, and never in place of an
    ** object of the input: then the pods have no controller. */
    const cJSON *sel = jget(jget(o, "spec"), "selector");
    char rsname[300], key[700];
    bool ours = false; /* the first of <name>-simulated, -simulated-2 ... no object of the input takes */
    for (int k = 1; k <= 9 && !ours && sel && d->tmpl; k++) {
      snprintf(rsname, sizeof rsname, k == 1 ? "%s-simulated" : "%s-simulated-%d", name, k);
      snprintf(key, sizeof key, "ReplicaSet/%s/%s", ns, rsname);
      cJSON *had = strlen(rsname) <= 253 ? dt__ctl_get(key) : NULL;
      const char *by = dt__jstr(jget(jget(had, "metadata"), "annotations"), "dovetail.dev/simulated-for");
      ours = strlen(rsname) <= 253 && (!had || (by && !strcmp(by, name))) && !input_holds_rs(r, ns, rsname);
      cJSON_Delete(had);
    }
    dt__free(d->rs);
    d->rs = NULL;
    if (ours && (d->rs = dt__strdup(rsname))) {
      cJSON *rs = cJSON_CreateObject(), *spec;
      cJSON_AddStringToObject(rs, "apiVersion", "apps/v1");
      cJSON_AddStringToObject(rs, "kind", "ReplicaSet");
      cJSON *rmd = cJSON_AddObjectToObject(rs, "metadata");
      cJSON_AddStringToObject(rmd, "name", rsname);
      cJSON_AddStringToObject(rmd, "namespace", ns);
      cJSON_AddStringToObject(cJSON_AddObjectToObject(rmd, "annotations"), "dovetail.dev/simulated-for", name);
      spec = cJSON_AddObjectToObject(rs, "spec");
      cJSON_AddNumberToObject(spec, "replicas", 0);
      cJSON_AddItemToObject(spec, "selector", cJSON_Duplicate(sel, true));
      cJSON_AddItemToObject(spec, "template", cJSON_Duplicate(d->tmpl, true));
      dt_error err = {0};
      if (dt__ctl_apply(rs, &err)) violate(r, "Deployment %s/%s: %s", ns, name, err.msg);
      cJSON_Delete(rs);
    }
    const cJSON *rep = jget(jget(o, "spec"), "replicas");
    deployment_scale(r, d, cJSON_IsNumber(rep) ? dt__to_i64(rep->valuedouble) : 1);
    return;
  }
  if (kind && name && !strcmp(kind, "Pod") && !dt__jstr(jget(o, "spec"), "nodeName")) {
    int64_t cpu, mem;
    pod_requests(o, &cpu, &mem);
    track(r, ns, name, cpu, mem, -1, NULL);
  }
  cJSON *unbudgeted = NULL;
  if (kind && name && !strcmp(kind, "NodePool")) {
    record_pool(r, name, o);
    if (FAULT("budget")) { /* the controller is told of no budget; the checker keeps the pool's */
      unbudgeted = cJSON_Duplicate(o, true);
      cJSON *spec = cJSON_GetObjectItemCaseSensitive(unbudgeted, "spec");
      cJSON *d = cJSON_GetObjectItemCaseSensitive(spec, "disruption");
      if (!d && spec) d = cJSON_AddObjectToObject(spec, "disruption");
      cJSON_DeleteItemFromObjectCaseSensitive(d, "budgets");
      cJSON *all = cJSON_CreateObject();
      cJSON_AddStringToObject(all, "nodes", "100%");
      cJSON_AddItemToArray(cJSON_AddArrayToObject(d, "budgets"), all);
      if (unbudgeted) o = unbudgeted;
    }
  }
  dt_error err = {0};
  if (dt__ctl_apply(o, &err)) violate(r, "%s %s: %s", kind ? kind : "object", name ? name : "?", err.msg);
  cJSON_Delete(unbudgeted);
}

void interrupt_claim(run *r, uint32_t ci) {
  sclaim *c = &r->claims.v[ci];
  if (!c->live) return;
  cJSON *e = cJSON_CreateObject();
  bool spot = !strcmp(c->ct, "spot");
  cJSON_AddStringToObject(e, "detail-type",
                          spot ? "EC2 Spot Instance Interruption Warning" : "EC2 Instance State-change Notification");
  cJSON *det = cJSON_AddObjectToObject(e, "detail");
  cJSON_AddStringToObject(det, "instance-id", c->id);
  if (!spot) cJSON_AddStringToObject(det, "state", "stopping");
  char action[32];
  r->interruptions++;
  dt__ctl_event(e, action, sizeof action);
  cJSON_Delete(e);
}

void scenario_event(run *r, uint32_t idx) {
  const cJSON *ev = cJSON_GetArrayItem(r->in->scenario, (int)idx);
  const cJSON *v;
  if ((v = jget(ev, "apply"))) {
    if (cJSON_IsArray(v)) {
      const cJSON *o;
      cJSON_ArrayForEach(o, v) apply_object(r, o);
    } else {
      apply_object(r, v);
    }
  }
  if ((v = jget(ev, "delete")) && cJSON_IsString(v)) {
    const char *key = v->valuestring;
    char kind[64], ns[300], name[300];
    if (sscanf(key, "%63[^/]/%299[^/]/%299s", kind, ns, name) == 3) {
      char full[700];
      snprintf(full, sizeof full, "%s/%s", ns, name);
      deployment *d = !strcmp(kind, "Deployment") ? deployment_find(r, ns, name) : NULL;
      int32_t pi = !strcmp(kind, "Pod") ? map_get(r, false, dt__sym_find(&r->names, full)) : -1;
      if (d) {
        deployment_scale(r, d, 0);
      } else if (pi >= 0) {
        depart(r, (uint32_t)pi);
      } else {
        snprintf(r->last_decision, sizeof r->last_decision, "scenario delete %s", key);
        dt__ctl_delete(key, NULL);
      }
    }
  }
  if ((v = jget(ev, "scale"))) {
    const char *kind = dt__jstr(v, "kind"), *name = dt__jstr(v, "name");
    const char *ns = dt__jstr(v, "namespace") ? dt__jstr(v, "namespace") : "default";
    const cJSON *rep = jget(v, "replicas");
    int64_t want = cJSON_IsNumber(rep) ? dt__to_i64(rep->valuedouble) : 0;
    deployment *d = kind && name && !strcmp(kind, "Deployment") ? deployment_find(r, ns, name) : NULL;
    if (d) {
      deployment_scale(r, d, want);
    } else if (kind && name) {
      char key[800];
      snprintf(key, sizeof key, "%s/%s/%s", kind, ns, name);
      cJSON *o = dt__ctl_get(key);
      cJSON *spec = cJSON_GetObjectItemCaseSensitive(o, "spec");
      if (spec) {
        cJSON_DeleteItemFromObjectCaseSensitive(spec, "replicas");
        cJSON_AddNumberToObject(spec, "replicas", (double)want);
        apply_object(r, o);
      } else {
        violate(r, "scenario: scale %s: no such object", key);
      }
      cJSON_Delete(o);
    }
  }
  if ((v = jget(ev, "unavailable"))) {
    outage o = {dt__jstr(v, "instanceType") ? dt__strdup(dt__jstr(v, "instanceType")) : NULL,
                dt__jstr(v, "zone") ? dt__strdup(dt__jstr(v, "zone")) : NULL,
                dt__jstr(v, "capacityType") ? dt__strdup(dt__jstr(v, "capacityType")) : NULL, r->now,
                r->now + dur_ms(jget(v, "for"), r->in->duration_ms)};
    if (dt__vec_push(&r->outages, o)) violate(r, "out of memory");
  }
  if ((v = jget(ev, "interrupt"))) {
    const char *claim = dt__jstr(v, "nodeClaim"), *type = dt__jstr(v, "instanceType"),
               *ct = dt__jstr(v, "capacityType");
    const cJSON *cnt = jget(v, "count");
    int64_t want = cJSON_IsNumber(cnt) ? dt__to_i64(cnt->valuedouble) : 1;
    for (size_t i = 0; i < r->claims.n && want > 0; i++) {
      const sclaim *c = &r->claims.v[i];
      if (!c->live || (claim && strcmp(dt__sym_str(&r->names, c->name), claim)) || (type && strcmp(c->type, type)) ||
          (ct && strcmp(c->ct, ct)))
        continue;
      interrupt_claim(r, (uint32_t)i);
      want--;
    }
  }
  if ((v = jget(ev, "price"))) {
    const char *type = dt__jstr(v, "instanceType"), *zone = dt__jstr(v, "zone"), *ct = dt__jstr(v, "capacityType");
    const cJSON *pr = jget(v, "price");
    int cti = ct ? dt__ct_parse(ct) : -1;
    for (size_t i = 0; type && cJSON_IsNumber(pr) && i < r->cat->ntypes; i++) {
      dt_ctype *t = &r->cat->types[i];
      if (strcmp(t->name, type)) continue;
      for (size_t k = 0; k < t->noff; k++)
        if ((!zone || !strcmp(t->off[k].zone, zone)) && (cti < 0 || t->off[k].ct == cti))
          t->off[k].price = pr->valuedouble;
    }
    dt__ctl_catalog_changed();
  }
  if ((v = jget(ev, "failStartup"))) { /* the next launches' nodes never initialize */
    const cJSON *cnt = jget(v, "count");
    r->fail_startups += cJSON_IsNumber(cnt) ? dt__to_i64(cnt->valuedouble) : 1;
  }
  if ((v = jget(ev, "pods"))) { /* a burst of bare pods */
    const char *ns = dt__jstr(v, "namespace") ? dt__jstr(v, "namespace") : "default";
    const char *base = dt__jstr(v, "name") ? dt__jstr(v, "name") : "burst";
    const cJSON *cnt = jget(v, "count");
    int64_t n = cJSON_IsNumber(cnt) ? dt__to_i64(cnt->valuedouble) : 1, cpu = 0, mem = 0;
    char tmp[64];
    const char *q;
    if ((q = dt__scalar(jget(v, "cpu"), tmp, sizeof tmp))) dt_quantity_parse(q, &cpu, NULL);
    if ((q = dt__scalar(jget(v, "memory"), tmp, sizeof tmp))) dt_quantity_parse(q, &mem, NULL);
    int64_t life = dur_ms(jget(v, "lifetime"), -1);
    for (int64_t i = 0; i < n; i++) {
      char name[400];
      snprintf(name, sizeof name, "%s-%lld", base, (long long)i);
      track(r, ns, name, cpu, mem, life, NULL);
      cJSON *o = pod_object(ns, name, cpu, mem, NULL);
      dt_error err = {0};
      if (dt__ctl_apply(o, &err)) violate(r, "pod %s/%s: %s", ns, name, err.msg);
      cJSON_Delete(o);
    }
  }
}

/* A field of a trace line as scanf's %lf reads it: a plain run of digits
** (what the trace holds) at once, anything else through strtod. NULL when
** no number is there. */
static const char *trace_num(const char *p, double *out) {
  const char *q = p;
  uint64_t v = 0;
  while (*q >= '0' && *q <= '9' && q - p < 15) v = v * 10 + (uint64_t)(*q++ - '0');
  if (q > p && !strchr("0123456789.eExXpPiInN", *q)) {
    *out = (double)v;
    return q;
  }
  char *end;
  *out = strtod(p, &end);
  return end == p ? NULL : end;
}

/* How many of the 7 comma-separated fields line begins with (sscanf's
** "%lf,%lf,...": a number may follow blanks, a comma may not). */
static int trace_fields(const char *line, double *f) {
  const char *p = line;
  int n = 0;
  for (; n < 7; n++) {
    if (n && *p++ != ',') break;
    if (!(p = trace_num(p, &f[n]))) break;
  }
  return n;
}

/* One CSV line of the trace: arrival_s,batch,cpu_millicores,memory_MiB,
** duration_s,duration_hi_s,censored. A pod lives for the middle of its
** duration bin; a censored one (still running when the trace ended) stays. */
static int trace_line(inputs *in, const char *file, size_t lineno, char *line, dt_error *err) {
  while (*line == ' ') line++;
  if (!*line || *line == '#' || *line == '\n' || *line == '\r' || !strncmp(line, "arrival_s", 9)) return 0;
  double f[7];
  int n = trace_fields(line, f);
  if (n != 7)
    return dt__err(err, DT_EINVAL,
                   "%s:%zu: expected arrival_s,batch,cpu_millicores,memory_MiB,duration_s,duration_hi_s,censored", file,
                   lineno);
  for (int i = 0; i < 7; i++)
    if (!(f[i] >= 0 && f[i] < 1e12))
      return dt__err(err, DT_EINVAL, "%s:%zu: field %d: expected a number >= 0, got %g", file, lineno, i + 1, f[i]);
  if (f[2] <= 0 || f[3] <= 0) return dt__err(err, DT_EINVAL, "%s:%zu: cpu and memory must be > 0", file, lineno);
  if (f[2] > 1e9 || f[3] > 1073741824.0) /* as a pod's requests: 1,000,000 cores, 1 PiB */
    return dt__err(err, DT_EINVAL, "%s:%zu: %s is absurd (at most %s)", file, lineno,
                   f[2] > 1e9 ? "cpu_millicores" : "memory_MiB", f[2] > 1e9 ? "1000000000" : "1073741824");
  if (in->t_arrive.n >= DT_MAX_PODS)
    return dt__err(err, DT_ELIMIT, "%s:%zu: more than %d pods (the limit on pods; --trace-limit takes the first N)",
                   file, lineno, DT_MAX_PODS);
  if (in->t_arrive.n && (int64_t)(f[0] * 1000) < in->t_arrive.v[in->t_arrive.n - 1])
    return dt__err(err, DT_EINVAL, "%s:%zu: arrivals must be in time order", file, lineno);
  int64_t life = f[6] != 0 ? -1 : (int64_t)((f[4] + (f[5] > f[4] ? f[5] : f[4])) / 2 * 1000);
  if (dt__vec_push(&in->t_arrive, (int64_t)(f[0] * 1000)) || dt__vec_push(&in->t_life, life) ||
      dt__vec_push(&in->t_cpu, (int64_t)f[2]) || dt__vec_push(&in->t_mem, (int64_t)f[3] * 1048576 * 1000))
    return dt__err(err, DT_ENOMEM, "out of memory reading %s", file);
  return 0;
}
int read_trace(inputs *in, const char *path, size_t limit, dt_error *err) {
  gzFile g = gzopen(path, "rb"); /* plain text or gzip */
  if (!g) return dt__err(err, DT_EIO, "--trace %s: cannot open", path);
  char line[512];
  size_t lineno = 0;
  int rc = 0;
  while (!rc && gzgets(g, line, sizeof line) && (!limit || in->t_arrive.n < limit))
    rc = trace_line(in, path, ++lineno, line, err);
  int zerr = Z_OK;
  const char *zmsg = gzerror(g, &zerr);
  if (!rc && zerr != Z_OK && zerr != Z_STREAM_END) /* a gzip file cut short or damaged: its rows would be lost */
    rc = dt__err(err, DT_EINVAL, "--trace %s: after line %zu: %s", path, lineno,
                 zerr == Z_BUF_ERROR ? "the gzip stream ends early (a truncated file?)" : zmsg);
  gzclose(g);
  return rc;
}
/* ---------------------------------------------------- checking a scenario */

/* An event's field is refused with the file, the event and the field. */
#define EVBAD(...) dt__err(err, DT_EINVAL, __VA_ARGS__)

/* A whole number in [lo, hi] at v (absent: ok, *out untouched). */
static int ev_count(const char *path, int i, const char *field, const cJSON *v, int64_t lo, int64_t hi, int64_t *out,
                    dt_error *err) {
  if (!v) return 0;
  if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < (double)lo ||
      v->valuedouble > (double)hi)
    return EVBAD("%s: events[%d].%s: expected a whole number from %lld to %lld", path, i, field, (long long)lo,
                 (long long)hi);
  if (out) *out = (int64_t)v->valuedouble;
  return 0;
}

/* A string at v, or absent. */
static int ev_str(const char *path, int i, const char *field, const cJSON *v, dt_error *err) {
  if (v && (!cJSON_IsString(v) || !*v->valuestring))
    return EVBAD("%s: events[%d].%s: expected a non-empty string", path, i, field);
  return 0;
}

static int ev_ct(const char *path, int i, const char *field, const cJSON *v, dt_error *err) {
  int rc = ev_str(path, i, field, v, err);
  if (!rc && v && dt__ct_parse(v->valuestring) < 0)
    return EVBAD("%s: events[%d].%s: expected on-demand, spot or reserved, got \"%.100s\"", path, i, field,
                 v->valuestring);
  return rc;
}

/* What an event names of the cloud (each optional, ev_map has refused the
** keys it does not take): strings, and a capacity type that is one. */
static int ev_offering(const char *path, int i, const char *what, const cJSON *v, dt_error *err) {
  static const char *const strs[] = {"nodeClaim", "instanceType", "zone"};
  char f[64];
  int rc;
  for (size_t k = 0; k < sizeof strs / sizeof *strs; k++) {
    snprintf(f, sizeof f, "%s.%s", what, strs[k]);
    if ((rc = ev_str(path, i, f, jget(v, strs[k]), err))) return rc;
  }
  snprintf(f, sizeof f, "%s.capacityType", what);
  return ev_ct(path, i, f, jget(v, "capacityType"), err);
}

/* A duration (30s, 10m, 2h, or a bare number of seconds) >= 0, or absent. */
static int ev_dur(const char *path, int i, const char *field, const cJSON *v, dt_error *err) {
  if (!v) return 0;
  if (dur_ms(v, -1) < 0) return EVBAD("%s: events[%d].%s: expected a duration such as 30s, 10m or 2h", path, i, field);
  return 0;
}

/* A map at v with only the keys listed (NULL-terminated); absent: ok. */
static int ev_map(const char *path, int i, const char *field, const cJSON *v, const char *const *keys, dt_error *err) {
  if (!cJSON_IsObject(v)) return EVBAD("%s: events[%d].%s: expected a map", path, i, field);
  const cJSON *f;
  cJSON_ArrayForEach(f, v) {
    bool ok = false;
    for (const char *const *k = keys; *k && !ok; k++) ok = !strcmp(f->string, *k);
    if (!ok) return EVBAD("%s: events[%d].%s.%s: unknown field", path, i, field, f->string);
  }
  return 0;
}

/* A quantity request (cpu, memory) as a Pod's container would take it, or
** absent. */
static int ev_qty(const char *path, int i, const char *field, const cJSON *v, dt_error *err) {
  if (!v) return 0;
  char tmp[64];
  const char *q = cJSON_IsBool(v) ? NULL : dt__scalar(v, tmp, sizeof tmp);
  int64_t x;
  dt_error qe = {0};
  if (!q || dt_quantity_parse(q, &x, &qe) || x < 0 || x > (((int64_t)1 << 50) * 1000))
    return EVBAD("%s: events[%d].%s: expected a quantity such as 500m or 1Gi%s%s", path, i, field,
                 qe.msg[0] ? ": " : "", qe.msg);
  return 0;
}

/* An object to apply, read as `dovetail plan -f` reads it: the error names
** the object and its field. */
static int ev_object(const char *path, int i, const cJSON *o, dt_error *err) {
  if (!cJSON_IsObject(o)) return EVBAD("%s: events[%d].apply: expected an object or a list of objects", path, i);
  char where[600];
  snprintf(where, sizeof where, "%s: events[%d].apply", path, i);
  char *text = cJSON_PrintUnformatted(o);
  dt_manifests *m = text ? dt_manifests_new() : NULL;
  int rc = m ? dt_manifests_add_buffer(m, where, text, strlen(text), err) : dt__err(err, DT_ENOMEM, "out of memory");
  cJSON_free(text);
  dt_manifests_free(m);
  return rc;
}

/* One event's fields, each checked as far as the simulator reads it; *pods
** counts the pods its bursts add. */
static int check_event(const char *path, int i, const cJSON *e, int64_t *pods, dt_error *err) {
  const cJSON *v;
  int rc = 0;
  if ((v = jget(e, "apply"))) {
    if (cJSON_IsArray(v)) {
      const cJSON *o;
      cJSON_ArrayForEach(o, v) if ((rc = ev_object(path, i, o, err))) return rc;
    } else if ((rc = ev_object(path, i, v, err))) {
      return rc;
    }
  }
  if ((v = jget(e, "delete"))) {
    char kind[64], ns[300], name[300], tail;
    if (!cJSON_IsString(v) || sscanf(v->valuestring, "%63[^/]/%299[^/]/%299[^/]%c", kind, ns, name, &tail) != 3)
      return EVBAD("%s: events[%d].delete: expected Kind/namespace/name (\"-\" for no namespace)", path, i);
  }
  if ((v = jget(e, "scale"))) {
    static const char *const keys[] = {"kind", "namespace", "name", "replicas", NULL};
    if ((rc = ev_map(path, i, "scale", v, keys, err)) || (rc = ev_str(path, i, "scale.kind", jget(v, "kind"), err)) ||
        (rc = ev_str(path, i, "scale.namespace", jget(v, "namespace"), err)) ||
        (rc = ev_str(path, i, "scale.name", jget(v, "name"), err)) ||
        (rc = ev_count(path, i, "scale.replicas", jget(v, "replicas"), 0, DT_MAX_REPLICAS, NULL, err)))
      return rc;
    if (!jget(v, "kind") || !jget(v, "name") || !jget(v, "replicas"))
      return EVBAD("%s: events[%d].scale: expected kind, name and replicas", path, i);
  }
  if ((v = jget(e, "unavailable"))) {
    static const char *const keys[] = {"instanceType", "zone", "capacityType", "for", NULL};
    if ((rc = ev_map(path, i, "unavailable", v, keys, err)) || (rc = ev_offering(path, i, "unavailable", v, err)) ||
        (rc = ev_dur(path, i, "unavailable.for", jget(v, "for"), err)))
      return rc;
  }
  if ((v = jget(e, "interrupt"))) {
    static const char *const keys[] = {"nodeClaim", "instanceType", "capacityType", "count", NULL};
    if ((rc = ev_map(path, i, "interrupt", v, keys, err)) || (rc = ev_offering(path, i, "interrupt", v, err)) ||
        (rc = ev_count(path, i, "interrupt.count", jget(v, "count"), 1, DT_MAX_PODS, NULL, err)))
      return rc;
  }
  if ((v = jget(e, "price"))) {
    static const char *const keys[] = {"instanceType", "zone", "capacityType", "price", NULL};
    if ((rc = ev_map(path, i, "price", v, keys, err)) || (rc = ev_offering(path, i, "price", v, err))) return rc;
    const cJSON *pr = jget(v, "price");
    if (!jget(v, "instanceType") || !cJSON_IsNumber(pr) || !(pr->valuedouble >= 0) || pr->valuedouble > DT_MAX_PRICE)
      return EVBAD("%s: events[%d].price: expected instanceType and a price from 0 to %g $/hour", path, i,
                   DT_MAX_PRICE);
  }
  if ((v = jget(e, "pods"))) {
    static const char *const keys[] = {"name", "namespace", "count", "cpu", "memory", "lifetime", NULL};
    int64_t n = 1;
    if ((rc = ev_map(path, i, "pods", v, keys, err)) || (rc = ev_str(path, i, "pods.name", jget(v, "name"), err)) ||
        (rc = ev_str(path, i, "pods.namespace", jget(v, "namespace"), err)) ||
        (rc = ev_count(path, i, "pods.count", jget(v, "count"), 1, DT_MAX_PODS, &n, err)) ||
        (rc = ev_qty(path, i, "pods.cpu", jget(v, "cpu"), err)) ||
        (rc = ev_qty(path, i, "pods.memory", jget(v, "memory"), err)) ||
        (rc = ev_dur(path, i, "pods.lifetime", jget(v, "lifetime"), err)))
      return rc;
    if ((*pods += n) > DT_MAX_PODS)
      return EVBAD("%s: events[%d].pods: more than %d pods in the scenario's bursts (the limit on pods)", path, i,
                   DT_MAX_PODS);
  }
  if ((v = jget(e, "failStartup"))) {
    static const char *const keys[] = {"count", NULL};
    if ((rc = ev_map(path, i, "failStartup", v, keys, err)) ||
        (rc = ev_count(path, i, "failStartup.count", jget(v, "count"), 1, DT_MAX_PODS, NULL, err)))
      return rc;
  }
  return 0;
}

int read_scenario(inputs *in, const char *path, dt_error *err) {
  char *buf;
  size_t len;
  cJSON *docs = NULL;
  int rc = dt__read_file(path, &buf, &len, err);
  if (rc) return rc;
  rc = dt__doc_parse(path, buf, len, &docs, err);
  dt__free(buf);
  if (rc) return rc;
  const cJSON *d = cJSON_GetArrayItem(docs, 0);
  cJSON *events = cJSON_DetachItemFromObjectCaseSensitive((cJSON *)d, "events");
  cJSON_Delete(docs);
  if (!cJSON_IsArray(events)) {
    cJSON_Delete(events);
    return dt__err(err, DT_EINVAL, "%s: expected a map with events: [...]", path);
  }
  static const char *const known[] = {"at",        "apply", "delete", "scale",      "unavailable",
                                      "interrupt", "price", "pods",   "failStartup"};
  int i = 0;
  const cJSON *e;
  int64_t prev = 0, burst_pods = 0;
  cJSON_ArrayForEach(e, events) {
    if (!cJSON_IsObject(e)) {
      cJSON_Delete(events);
      return dt__err(err, DT_EINVAL, "%s: events[%d]: expected a map", path, i);
    }
    const cJSON *f;
    cJSON_ArrayForEach(f, e) {
      bool ok = false;
      for (size_t k = 0; k < sizeof known / sizeof *known; k++) ok |= !strcmp(f->string, known[k]);
      if (!ok) {
        rc = dt__err(err, DT_EINVAL,
                     "%s: events[%d].%s: unknown field (at, apply, delete, scale, unavailable, interrupt, "
                     "price, pods, failStartup)",
                     path, i, f->string);
        cJSON_Delete(events);
        return rc;
      }
    }
    int64_t at = dur_ms(jget(e, "at"), -1);
    if (at < 0) {
      cJSON_Delete(events);
      return dt__err(err, DT_EINVAL, "%s: events[%d].at: expected a duration from the start (30s, 10m, 2h)", path, i);
    }
    if (at < prev) {
      cJSON_Delete(events);
      return dt__err(err, DT_EINVAL, "%s: events[%d].at: events must be in time order", path, i);
    }
    prev = at;
    if ((rc = check_event(path, i, e, &burst_pods, err))) {
      cJSON_Delete(events);
      return rc;
    }
    if (dt__vec_push(&in->scen_at, at)) {
      cJSON_Delete(events);
      return dt__err(err, DT_ENOMEM, "out of memory");
    }
    i++;
  }
  in->scenario = events;
  return 0;
}
