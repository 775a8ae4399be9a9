/*
** simulate.c: `dovetail simulate`, days of a cluster replayed on a virtual
** clock. It is a second driver of the controller (engine/serve.c, seams in
** ctl.h), never a second engine: the same rounds, nominations, disruption
** passes, remediation and interruption handling run, with the provider
** replaced by a simulated cloud and the clock by a virtual one.
**
** The simulator plays what surrounds the controller:
**   - the workload: pod arrivals with a shape and a lifetime from a CSV
**     trace, and timed events from a scenario file (apply, delete, scale,
**     offerings unavailable, interruptions, price changes);
**   - the cloud: launches answer after --launch-latency plus --startup,
**     refuse an offering that is unavailable or whose `available` count is
**     used up, and interrupt spot instances at a per-type hazard drawn from
**     the AWS Spot Instance Advisor buckets, each with the two-minute
**     warning event the daemon handles (through on_interruption);
**   - the kube-scheduler: pods nominated to an initialized claim run there.
**
** It records a time series per run and checks invariants at every step
** (--check). This file holds a run: the simulated cloud, the observer of
** the controller and the invariants; sim_scenario.c the workload,
** sim_report.c the outputs, sim_main.c the command line (sim.h). Runs (one per --policy, and the first-fit-decreasing baseline
** with --baseline) share the inputs and the seed; the same inputs and seed
** give byte-identical output.
*/
#define _GNU_SOURCE
#include "sim.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Interruption frequency per month for each Spot Instance Advisor bucket:
** the middle of "<5%", "5-10%", "10-15%", "15-20%" and 25% for ">20%". */
static const double k_bucket_month[5] = {0.025, 0.075, 0.125, 0.175, 0.25};

/* ------------------------------------------------------------ records */

void violate(run *r, const char *fmt, ...) {
  if (r->violation[0]) return;
  char ts[40];
  dt__fmt_time(r->now / 1000, ts, sizeof ts);
  int k = snprintf(r->violation, sizeof r->violation, "at %s (+%llds): ", ts, (long long)((r->now - r->t0) / 1000));
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->violation + k, sizeof r->violation - (size_t)k, fmt, ap);
  va_end(ap);
}

/* ------------------------------------------------------------ the event heap */

static bool ev_less(const sevent *a, const sevent *b) { return a->t < b->t || (a->t == b->t && a->seq < b->seq); }

static int ev_push(run *r, int64_t t, int kind, uint32_t idx) {
  sevent e = {t, ++r->seq, kind, idx};
  if (dt__vec_push(&r->heap, e)) return DT_ENOMEM;
  size_t i = r->heap.n - 1;
  while (i && ev_less(&r->heap.v[i], &r->heap.v[(i - 1) / 2])) {
    sevent x = r->heap.v[i];
    r->heap.v[i] = r->heap.v[(i - 1) / 2];
    r->heap.v[(i - 1) / 2] = x;
    i = (i - 1) / 2;
  }
  return 0;
}

static sevent ev_pop(run *r) {
  assert(r->heap.n > 0);
  sevent top = r->heap.v[0];
  r->heap.v[0] = r->heap.v[--r->heap.n];
  for (size_t i = 0;;) {
    size_t l = 2 * i + 1, m = i;
    if (l < r->heap.n && ev_less(&r->heap.v[l], &r->heap.v[m])) m = l;
    if (l + 1 < r->heap.n && ev_less(&r->heap.v[l + 1], &r->heap.v[m])) m = l + 1;
    if (m == i) break;
    sevent x = r->heap.v[i];
    r->heap.v[i] = r->heap.v[m];
    r->heap.v[m] = x;
    i = m;
  }
  return top;
}

/* ------------------------------------------------------------ randomness */

/* splitmix64: a stream per purpose, derived from the seed and a key, so a
** draw does not depend on the order other draws were made in. */
static uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static double uniform(uint64_t seed, const char *key) {
  uint64_t h = mix64(seed ^ dt__hash64(key, strlen(key)));
  return ((double)(h >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
}

/* ------------------------------------------------------------ bookkeeping */

static int map_set(run *r, bool claim, dt_sym s, int32_t v) {
  DT_VEC(int32_t) *m = claim ? (void *)&r->claim_of : (void *)&r->pod_of;
  while (m->n <= s)
    if (dt__vec_push(m, 0)) return DT_ENOMEM;
  m->v[s] = v;
  return 0;
}

int32_t map_get(const run *r, bool claim, dt_sym s) {
  const DT_VEC(int32_t) *m = claim ? (const void *)&r->claim_of : (const void *)&r->pod_of;
  return s && s < m->n ? m->v[s] - 1 : -1;
}

/* Cost accrues at the hourly rate of the live instances. */
static void accrue(run *r) {
  int64_t now = dt__ctl_now_ms();
  assert(now >= r->last_cost_t); /* the virtual clock never goes back */
  if (now > r->last_cost_t) r->cost += r->hourly * (double)(now - r->last_cost_t) / HOUR_MS;
  r->last_cost_t = now;
  r->now = now;
}

static double offering_price(const dt_catalog *c, const char *type, const char *zone, const char *ct) {
  int cti = dt__ct_parse(ct);
  const dt_ctype *t = dt__catalog_named(c, type);
  if (!t) return 0;
  for (size_t k = 0; k < t->noff; k++)
    if (t->off[k].ct == cti && !strcmp(t->off[k].zone, zone)) return t->off[k].price;
  return t->od_price > 0 ? t->od_price : 0;
}

/* Every change of a pod's state goes through here. */
static void pod_state(run *r, spod *p, int state) {
  r->in_state[p->state]--;
  r->in_state[state]++;
  p->state = state;
}

static void pod_pending(run *r, spod *p) {
  pod_state(r, p, POD_PENDING);
  p->claim = -1;
  p->since = r->now;
}

static void pod_leave_claim(run *r, spod *p) {
  if (p->claim == ON_NODE) p->run_ms += (double)(r->now - p->since);
  if (p->claim < 0) {
    p->claim = -1;
    return;
  }
  sclaim *c = &r->claims.v[p->claim];
  c->used_cpu -= p->cpu;
  c->used_mem -= p->mem;
  c->used_pods--;
  p->run_ms += (double)(r->now - p->since);
  p->claim = -1;
}

/* ------------------------------------------------------------ the observer */

static void on_instance(void *ud, bool added, const char *id, const char *claim, const char *type, const char *zone,
                        const char *ct, const char *pool) {
  run *r = ud;
  accrue(r);
  dt_sym s = dt__sym(&r->names, claim);
  int32_t at = map_get(r, true, s);
  int cti = dt__ct_parse(ct);
  if (added) {
    sclaim c = {0};
    c.name = s;
    c.id = dt__strdup(id), c.type = dt__strdup(type), c.zone = dt__strdup(zone), c.ct = dt__strdup(ct);
    c.pool = dt__strdup(pool);
    c.price = offering_price(r->cat, type, zone, ct);
    c.added = r->now;
    c.removed = -1;
    c.live = true;
    const dt_ctype *t = dt__catalog_named(r->cat, type);
    if (t) {
      c.alloc_cpu = dt__rlist_get(&t->allocatable, "cpu");
      c.alloc_mem = dt__rlist_get(&t->allocatable, "memory");
      c.alloc_pods = dt__rlist_get(&t->allocatable, "pods") / 1000;
    }
    if (dt__vec_push(&r->claims, c) || map_set(r, true, s, (int32_t)r->claims.n)) {
      violate(r, "out of memory recording instance %s", id);
      return;
    }
    r->hourly += c.price;
    r->launches++;
    if (cti >= 0) r->live_nodes[cti]++;
    if (cti == DT_CT_SPOT) { /* the cloud decides now when it takes this one back */
      const cJSON *e =
          cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r->in->advisor, "instanceTypes"), type);
      int bucket = e ? (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "r")) : 0;
      if (bucket < 0 || bucket > 4) bucket = 0;
      const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "perHour"); /* a what-if rate, given directly */
      double per_hour =
          cJSON_IsNumber(ph) && ph->valuedouble > 0 ? ph->valuedouble : -log(1 - k_bucket_month[bucket]) / 730.0;
      double hours = -log(uniform(r->in->seed, id)) / per_hour;
      int64_t at_ms = r->now + (int64_t)(hours * HOUR_MS);
      if (at_ms - WARNING_MS < r->t0 + r->in->duration_ms)
        ev_push(r, at_ms - WARNING_MS, EV_WARN, (uint32_t)r->claims.n - 1);
    }
    return;
  }
  if (at < 0) return;
  sclaim *c = &r->claims.v[at];
  bool busy = false;
  for (size_t i = 0; i < c->pods.n; i++) {
    spod *p = &r->pods.v[c->pods.v[i]];
    if (p->state != POD_RUNNING || p->claim != at) continue;
    busy = true;
    pod_leave_claim(r, p);
    pod_pending(r, p);
  }
  c->pods.n = 0;
  dt__free(c->told); /* a claim that is gone is told nothing more */
  c->told = NULL;
  c->told_syms.n = 0;
  /* a node with pods goes only by a command that names it */
  if (busy && !strstr(r->last_decision, claim))
    violate(r, "NodeClaim %s was deleted with pods on it, and no decision names it (last: %s)", claim,
            r->last_decision);
  c->live = false;
  c->removed = r->now;
  r->hourly -= c->price;
  if (r->hourly < 1e-9) r->hourly = 0;
  r->lifetime_cost += c->price * (double)(c->removed - c->added) / HOUR_MS;
  if (cti >= 0) r->live_nodes[cti]--;
}

static void on_running(void *ud, const char *claim, const char *pods) {
  run *r = ud;
  accrue(r);
  int32_t ci = map_get(r, true, dt__sym_find(&r->names, claim));
  if (ci < 0 || !r->claims.v[ci].live) return;
  sclaim *c = &r->claims.v[ci];
  /* The names told last time with their symbols (a name keeps its
  ** symbol): pods is told's names less those that departed, then new ones
  ** at the end, so each name is looked for from where the last was found. */
  size_t plen = strlen(pods), ti = 0;
  const char *t = c->told && c->told_syms.n ? c->told : NULL;
  c->syms.n = 0;
  bool lost = false; /* a symbol not kept: the next call looks every name up */
  for (const char *s = pods; s && *s;) {
    const char *e = strchr(s, ',');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    dt_sym sym = 0;
    while (t && !sym) {
      const char *te = strchr(t, ',');
      size_t tlen = te ? (size_t)(te - t) : strlen(t);
      if (tlen == len && !memcmp(t, s, len)) sym = c->told_syms.v[ti];
      t = te && ti + 1 < c->told_syms.n ? te + 1 : NULL;
      ti++;
    }
    if (!sym) sym = dt__symn(&r->names, s, len);
    if (!lost && dt__vec_push(&c->syms, sym)) lost = true;
    int32_t pi = map_get(r, false, sym);
    s = e ? e + 1 : NULL;
    if (pi < 0) continue; /* a workload's or a VM's pod: not followed one by one */
    spod *p = &r->pods.v[pi];
    if (p->state == POD_GONE || p->state == POD_FUTURE || p->claim == ci) continue;
    if (p->state == POD_RUNNING) { /* moved by a replacement: it runs on the new node from now */
      pod_leave_claim(r, p);
    } else {
      if (dt__vec_push(&r->waits, (double)(r->now - p->since) / 1000.0)) violate(r, "out of memory");
    }
    pod_state(r, p, POD_RUNNING);
    p->claim = ci;
    p->since = r->now;
    c->used_cpu += p->cpu + (FAULT("overcommit") ? c->alloc_cpu : 0); /* a node given more than it has */
    c->used_mem += p->mem;
    c->used_pods++;
    if (dt__vec_push(&c->pods, (uint32_t)pi)) violate(r, "out of memory");
  }
  dt__free(c->told);
  c->told = lost ? NULL : dt__strdup(pods);
  c->ntold = plen;
  dt_sym *was = c->told_syms.v; /* this call's symbols become the told ones */
  size_t was_cap = c->told_syms.cap;
  c->told_syms = c->syms;
  c->syms.v = was, c->syms.n = 0, c->syms.cap = was_cap;
  if (!c->told) c->told_syms.n = 0;
  if (r->in->check && (c->used_cpu > c->alloc_cpu || c->used_mem > c->alloc_mem || c->used_pods > c->alloc_pods) &&
      c->alloc_cpu)
    violate(r,
            "NodeClaim %s (%s) holds %lldm cpu, %lld MiB, %lld pods: more than its allocatable %lldm, %lld MiB, %lld",
            claim, c->type, (long long)c->used_cpu, (long long)(c->used_mem / 1000 / 1048576), (long long)c->used_pods,
            (long long)c->alloc_cpu, (long long)(c->alloc_mem / 1000 / 1048576), (long long)c->alloc_pods);
}

/* A round placed a pending pod on a Node the cluster started with (no claim
** of the controller's): the simulator plays the kube-scheduler and binds it
** there, so the controller holds it bound and it runs from now. */
static void on_bound(void *ud, const char *node, const char *pod) {
  run *r = ud;
  accrue(r);
  char key[800];
  snprintf(key, sizeof key, "Pod/%s", pod);
  cJSON *o = dt__ctl_get(key), *spec = cJSON_GetObjectItemCaseSensitive(o, "spec");
  if (!cJSON_IsObject(spec) || cJSON_GetObjectItemCaseSensitive(spec, "nodeName")) {
    cJSON_Delete(o);
    return;
  }
  dt_error err = {0};
  if (!cJSON_AddStringToObject(spec, "nodeName", node) || dt__ctl_apply(o, &err))
    violate(r, "pod %s on node %s: %s", pod, node, err.msg[0] ? err.msg : "out of memory");
  cJSON_Delete(o);
  int32_t pi = map_get(r, false, dt__sym_find(&r->names, pod));
  if (pi < 0) return; /* a workload's or a VM's pod: not followed one by one */
  spod *p = &r->pods.v[pi];
  if (p->state != POD_PENDING) return;
  if (dt__vec_push(&r->waits, (double)(r->now - p->since) / 1000.0)) violate(r, "out of memory");
  pod_state(r, p, POD_RUNNING);
  p->claim = ON_NODE;
  p->since = r->now;
}

/* The reason a decision gives, its first word ("Underutilized", "Expired"). */
static void reason_word(const char *reason, char *word, size_t size) {
  size_t n = 0;
  while (reason[n] && n + 1 < size &&
         (reason[n] == '-' || (reason[n] >= 'A' && reason[n] <= 'Z') || (reason[n] >= 'a' && reason[n] <= 'z')))
    n++;
  snprintf(word, size, "%.*s", (int)n, reason);
  if (!n) snprintf(word, size, "other");
}

static const dt_nodepool *pool_named(const run *r, const char *name) {
  for (size_t i = 0; i < r->npools.n; i++)
    if (!strcmp(r->npools.v[i].name, name)) return r->npools.v[i].m->pools.v;
  return NULL;
}

/*
** Budgets: when claims are taken for a budgeted disruption (a replacement
** launched for them, or a delete), the claims of their NodePool disrupting
** at once (taken and not yet gone, or gone at this instant: a pass runs in
** one) may not be more than the pool's budget for that reason, of its
** nodes (live, or gone at this instant: at least as many as the pass
** counted, so the bound is never tighter than the controller's).
*/
/* The pool's Nodes the cluster started with that no claim of the run
** stands for: the daemon leaves them to their owners, but the pass counts
** them in its budget percentages, as Karpenter counts every node of a pool. */
static int64_t foreign_nodes(const run *r, const char *pool) {
  int64_t n = 0;
  const cJSON *o;
  cJSON_ArrayForEach(o, r->in->cluster) {
    const char *kind = dt__jstr(o, "kind"), *name = dt__jstr(cJSON_GetObjectItemCaseSensitive(o, "metadata"), "name");
    if (!kind || strcmp(kind, "Node") || !name) continue;
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "metadata"), "labels");
    const char *p = dt__jstr(labels, "karpenter.sh/nodepool");
    if (!p || strcmp(p, pool)) continue;
    dt_sym s = dt__sym_find(&r->names, name);
    n += !s || map_get((run *)r, true, s) < 0;
  }
  return n;
}

static void budget_check(run *r, const char *names, unsigned reason, const char *word) {
  char pool[256] = "";
  for (const char *s = names; s && *s;) {
    const char *e = strchr(s, ',');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    int32_t ci = map_get(r, true, dt__symn(&r->names, s, len));
    s = e ? e + 1 : NULL;
    if (ci < 0) continue;
    sclaim *c = &r->claims.v[ci];
    c->disrupting = true;
    snprintf(pool, sizeof pool, "%s", c->pool);
  }
  const dt_nodepool *np = pool[0] ? pool_named(r, pool) : NULL;
  if (!np || !r->in->check || !r->check_budgets) return;
  int64_t nodes = foreign_nodes(r, pool), disrupting = 0;
  for (size_t i = 0; i < r->claims.n; i++) {
    const sclaim *c = &r->claims.v[i];
    if (strcmp(c->pool, pool) || !(c->live || c->removed == r->now)) continue;
    nodes++;
    disrupting += c->disrupting;
  }
  int64_t most = dt__budget_nodes(np, reason, r->now / 1000, nodes);
  if (disrupting > most)
    violate(r, "NodePool %s: %lld of its %lld nodes disrupting at once, more than its %s budget of %lld (last: %s)",
            pool, (long long)disrupting, (long long)nodes, word, (long long)most, r->last_decision);
}

static void on_decision(void *ud, const char *kind, const char *subject, const char *reason) {
  run *r = ud;
  snprintf(r->last_decision, sizeof r->last_decision, "%s %s: %s", kind, subject, reason);
  char word[48];
  reason_word(reason, word, sizeof word);
  const char *names = !strncmp(subject, "NodeClaim ", 10) ? subject + 10 : NULL;
  unsigned bit = !strcmp(word, "Empty")           ? DT_REASON_EMPTY
                 : !strcmp(word, "Drifted")       ? DT_REASON_DRIFTED
                 : !strcmp(word, "Underutilized") ? DT_REASON_UNDERUTILIZED
                                                  : 0;
  if (names && !strcmp(kind, "disrupt-aborted")) { /* its replacement failed: the node stays, untainted */
    int32_t ci = map_get(r, true, dt__sym_find(&r->names, names));
    if (ci >= 0) r->claims.v[ci].disrupting = false;
  }
  if (names && bit && !strcmp(kind, "replace")) budget_check(r, names, bit, word);
  if (strcmp(kind, "disrupt")) return;
  if (names && bit) {
    int32_t ci = map_get(r, true, dt__sym_find(&r->names, names));
    if (ci >= 0 && !r->claims.v[ci].disrupting) budget_check(r, names, bit, word);
  }
  r->disruptions++;
  for (size_t i = 0; i < r->reasons.n; i++)
    if (!strcmp(r->reasons.v[i].reason, word)) {
      r->reasons.v[i].n++;
      return;
    }
  reason_count rc = {{0}, 1};
  snprintf(rc.reason, sizeof rc.reason, "%s", word);
  dt__vec_push(&r->reasons, rc);
}

/* ------------------------------------------------------------ the cloud */

static size_t live_in(const run *r, const char *type, const char *zone, const char *ct) {
  size_t n = 0;
  for (size_t i = 0; i < r->claims.n; i++) {
    const sclaim *c = &r->claims.v[i];
    n += c->live && !strcmp(c->type, type) && !strcmp(c->zone, zone) && !strcmp(c->ct, ct);
  }
  return n;
}

static int64_t available(const run *r, const char *type, const char *zone, const char *ct) {
  const dt_ctype *t = dt__catalog_named(r->cat, type);
  int cti = dt__ct_parse(ct);
  for (size_t k = 0; t && k < t->noff; k++)
    if (t->off[k].ct == cti && !strcmp(t->off[k].zone, zone)) return t->off[k].available;
  return -1;
}

static dt_launch_outcome cloud_launch(void *ud, const char *claim, const char *type, const char *zone, const char *ct,
                                      char *id, size_t idn, int64_t *delay, int64_t *startup) {
  run *r = ud;
  r->now = dt__ctl_now_ms();
  *delay = r->in->latency_ms;
  *startup = r->in->startup_ms > 0 ? r->in->startup_ms : 1;
  if (r->fail_startups > 0) { /* the scenario's nodes that never come up */
    r->fail_startups--;
    *startup = -1;
  }
  for (size_t i = 0; i < r->outages.n; i++) {
    const outage *o = &r->outages.v[i];
    if (r->now >= o->from && r->now < o->to && (!o->type || !strcmp(o->type, type)) &&
        (!o->zone || !strcmp(o->zone, zone)) && (!o->ct || !strcmp(o->ct, ct))) {
      *delay = r->in->latency_ms;
      return DT_LAUNCH_NO_CAPACITY;
    }
  }
  int64_t avail = available(r, type, zone, ct);
  if (avail >= 0 && (int64_t)live_in(r, type, zone, ct) >= avail) {
    *delay = r->in->latency_ms;
    return DT_LAUNCH_NO_CAPACITY;
  }
  snprintf(id, idn, "i-%016llx", (unsigned long long)mix64(r->in->seed ^ dt__hash64(claim, strlen(claim)) ^ ++r->seq));
  return DT_LAUNCH_OK;
}

/* ------------------------------------------------------------ the workload */

cJSON *pod_object(const char *ns, const char *name, int64_t cpu, int64_t mem, const cJSON *tmpl) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "apiVersion", "v1");
  cJSON_AddStringToObject(o, "kind", "Pod");
  cJSON *md = cJSON_AddObjectToObject(o, "metadata");
  cJSON_AddStringToObject(md, "name", name);
  cJSON_AddStringToObject(md, "namespace", ns);
  if (tmpl) {
    const cJSON *tmd = cJSON_GetObjectItemCaseSensitive(tmpl, "metadata");
    const cJSON *lab = cJSON_GetObjectItemCaseSensitive(tmd, "labels");
    if (lab) cJSON_AddItemToObject(md, "labels", cJSON_Duplicate(lab, true));
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(tmpl, "spec");
    cJSON_AddItemToObject(o, "spec", spec ? cJSON_Duplicate(spec, true) : cJSON_CreateObject());
  } else {
    cJSON *lab = cJSON_AddObjectToObject(md, "labels");
    cJSON_AddStringToObject(lab, "app", "trace");
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "name", "main");
    cJSON *req = cJSON_AddObjectToObject(cJSON_AddObjectToObject(c, "resources"), "requests");
    char q[64];
    dt__fmt_quantity(q, sizeof q, "cpu", cpu);
    cJSON_AddStringToObject(req, "cpu", q);
    dt__fmt_quantity(q, sizeof q, "memory", mem);
    cJSON_AddStringToObject(req, "memory", q);
    cJSON *cs = cJSON_AddArrayToObject(cJSON_AddObjectToObject(o, "spec"), "containers");
    cJSON_AddItemToArray(cs, c);
  }
  cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "status"), "phase", "Pending");
  return o;
}

/* The requests of a pod object: the sum over its containers (cpu, memory). */
void pod_requests(const cJSON *o, int64_t *cpu, int64_t *mem) {
  *cpu = *mem = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "spec"), "containers")) {
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, "resources"), "requests");
    char tmp[64];
    const char *v;
    int64_t q;
    if ((v = dt__scalar(cJSON_GetObjectItemCaseSensitive(req, "cpu"), tmp, sizeof tmp)) &&
        !dt_quantity_parse(v, &q, NULL))
      *cpu += q;
    if ((v = dt__scalar(cJSON_GetObjectItemCaseSensitive(req, "memory"), tmp, sizeof tmp)) &&
        !dt_quantity_parse(v, &q, NULL))
      *mem += q;
  }
}

/* Follow a pod from now: it is pending until a node holds it. */
int32_t track(run *r, const char *ns, const char *name, int64_t cpu, int64_t mem, int64_t life, const char *owner) {
  char full[600];
  snprintf(full, sizeof full, "%s/%s", ns, name);
  dt_sym s = dt__sym(&r->names, full);
  int32_t at = map_get(r, false, s);
  if (at >= 0 && r->pods.v[at].state != POD_GONE) return at;
  spod p = {s, r->now, life, cpu, mem, POD_PENDING, -1, r->now, 0, owner};
  if (dt__vec_push(&r->pods, p) || map_set(r, false, s, (int32_t)r->pods.n)) return -1;
  r->in_state[POD_PENDING]++;
  r->arrivals++;
  if (life >= 0) ev_push(r, r->now + life, EV_DEPART, (uint32_t)r->pods.n - 1);
  return (int32_t)r->pods.n - 1;
}

void depart(run *r, uint32_t pi) {
  spod *p = &r->pods.v[pi];
  if (p->state == POD_GONE || p->state == POD_FUTURE) return;
  const char *name = dt__sym_str(&r->names, p->name);
  char key[800];
  int32_t on = p->state == POD_RUNNING ? p->claim : -1;
  const char *claim = on >= 0 ? dt__sym_str(&r->names, r->claims.v[on].name) : NULL;
  snprintf(key, sizeof key, "Pod/%s", name);
  pod_leave_claim(r, p);
  pod_state(r, p, POD_GONE);
  r->departed++;
  if (!dt__ctl_delete(key, claim) && r->in->check)
    violate(r, "pod %s departed but the controller did not hold it", name);
}

static void arrive(run *r, uint32_t row) {
  char name[64];
  snprintf(name, sizeof name, "vm-%u", row);
  const inputs *in = r->in;
  int32_t pi = track(r, "trace", name, in->t_cpu.v[row], in->t_mem.v[row], in->t_life.v[row], NULL);
  if (pi < 0) {
    violate(r, "out of memory");
    return;
  }
  cJSON *o = pod_object("trace", name, in->t_cpu.v[row], in->t_mem.v[row], NULL);
  dt_error err = {0};
  if (!o || dt__ctl_apply(o, &err)) violate(r, "pod trace/%s: %s", name, o ? err.msg : "out of memory");
  cJSON_Delete(o);
  if (FAULT("lose-pod") && row == 3) pod_state(r, &r->pods.v[pi], POD_GONE); /* forgotten by the books */
}

/* ------------------------------------------------------------ samples and checks */

static int dbl_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double quantile(double *v, size_t n, double q) {
  if (!n) return 0;
  qsort(v, n, sizeof *v, dbl_cmp);
  size_t i = (size_t)ceil(q * (double)n);
  return v[i ? i - 1 : 0];
}

static void check_step(run *r) {
  size_t pending = 0, running = 0, gone = 0;
  for (size_t i = 0; i < r->pods.n; i++) {
    const spod *p = &r->pods.v[i];
    pending += p->state == POD_PENDING;
    running += p->state == POD_RUNNING;
    gone += p->state == POD_GONE;
    if (p->state == POD_RUNNING && p->claim != ON_NODE && (p->claim < 0 || !r->claims.v[p->claim].live))
      violate(r, "pod %s is running on a node that is gone", dt__sym_str(&r->names, p->name));
  }
  if (pending + running + gone != r->arrivals || gone != r->departed)
    violate(r, "pods: %zu arrived, but %zu pending + %zu running + %zu departed (%zu departures recorded)", r->arrivals,
            pending, running, gone, r->departed);
  size_t stored = dt__ctl_pods();
  size_t followed = pending + running;
  if (stored < followed)
    violate(r, "the controller holds %zu pods, fewer than the %zu pending or running", stored, followed);
  for (size_t i = 0; i < r->claims.n; i++) {
    const sclaim *c = &r->claims.v[i];
    if (!c->live) continue;
    int64_t avail = available(r, c->type, c->zone, c->ct);
    if (!strcmp(c->ct, "reserved") && avail >= 0 && (int64_t)live_in(r, c->type, c->zone, c->ct) > avail)
      violate(r, "%s %s in %s: more reserved instances than the reservation's %lld", c->ct, c->type, c->zone,
              (long long)avail);
  }
  double life = r->lifetime_cost;
  for (size_t i = 0; i < r->claims.n; i++)
    if (r->claims.v[i].live) life += r->claims.v[i].price * (double)(r->now - r->claims.v[i].added) / HOUR_MS;
  double cost = r->cost + (FAULT("cost") ? 1.0 : 0);
  if (fabs(life - cost) > 1e-6 * (1 + fabs(life)))
    violate(r, "the cost integral $%.6f is not the sum of node lifetimes x price $%.6f", cost, life);
}

size_t policy_error_count(const run *r) {
  if (!r->policy) return 0;
  const dt_policy_err *e;
  size_t n = dt__policy_errors(r->policy, &e), total = 0;
  for (size_t i = 0; i < n; i++) total += e[i].count;
  return total;
}

static void take_sample(run *r) {
  accrue(r);
  sample s = {0};
  s.t = (r->now - r->t0) / 1000;
  for (int k = 0; k < DT_CT_N; k++) s.nodes[k] = (int)r->live_nodes[k];
  s.hourly = r->hourly;
  s.cost = r->cost;
  s.pending = r->in_state[POD_PENDING];
  s.running = r->in_state[POD_RUNNING];
  size_t n = r->waits.n - r->waits_seen;
  if (n) {
    double *w = dt__malloc(n * sizeof *w);
    if (w) {
      memcpy(w, r->waits.v + r->waits_seen, n * sizeof *w);
      s.wait_p50 = quantile(w, n, 0.5);
      s.wait_p99 = quantile(w, n, 0.99);
      dt__free(w);
    }
  }
  r->waits_seen = r->waits.n;
  for (size_t i = 0; i < r->claims.n; i++) {
    const sclaim *c = &r->claims.v[i];
    if (!c->live) continue;
    s.cpu_req += (double)c->used_cpu / 1000;
    s.cpu_alloc += (double)c->alloc_cpu / 1000;
    s.mem_req += (double)c->used_mem / 1000 / 1073741824.0;
    s.mem_alloc += (double)c->alloc_mem / 1000 / 1073741824.0;
  }
  s.disruptions = r->disruptions;
  s.interruptions = r->interruptions;
  s.launches = r->launches;
  s.policy_errors = policy_error_count(r) - r->policy_errors_before;
  if (dt__vec_push(&r->series, s)) violate(r, "out of memory");
  if (r->in->check) check_step(r);
}

/* ------------------------------------------------------------ one run */

static void progress(const run *r, size_t k, size_t nruns, double wall0) {
  static double last;
  double now = dt__now_ms();
  if (now - last < 200) return;
  last = now;
  double done = (double)(r->now - r->t0) / (double)r->in->duration_ms;
  double el = (now - wall0) / 1000;
  double rate = el > 0 ? (double)(r->now - r->t0) / 1000 / el : 0;
  double eta = done > 0 ? el / done - el : 0;
  int64_t st = (r->now - r->t0) / 1000;
  fprintf(stderr, "\rsimulate: %s (%zu/%zu) %lldd%02lldh%02lldm %3.0f%%  %.0fx real time  ETA %.0fs   ", r->label,
          k + 1, nruns, (long long)(st / 86400), (long long)(st % 86400 / 3600), (long long)(st % 3600 / 60),
          done * 100, rate, eta);
  fflush(stderr);
}

int run_one(run *r, size_t k, size_t nruns, bool tty, dt_error *err) {
  const inputs *in = r->in;
  int rc = dt_catalog_load_named(in->catalog, &r->cat, err);
  if (rc) return rc;
  if (r->policy_path && (rc = dt_policy_load_file(r->policy_path, NULL, &r->policy, err))) return rc;
  r->policy_errors_before = policy_error_count(r);
  /* a budget hook decides budgets the NodePools do not show */
  r->check_budgets = !dt__policy_has(r->policy, DT_HOOK_BUDGET) && !in->cfg.policy_dir;
  dt_ctl_cloud cloud = {r, cloud_launch, NULL};
  dt_ctl_observer obs = {r, on_instance, on_running, on_decision, on_bound};
  dt_ctl_config cfg = in->cfg;
  cfg.cat = r->cat;
  cfg.policy = r->policy;
  cfg.packing = r->packing;
  cfg.cloud = &cloud;
  cfg.obs = &obs;
  if ((rc = dt__ctl_start_virtual(&cfg, err))) return rc;
  r->t0 = r->now = r->last_cost_t = cfg.start_ms;
  const cJSON *o;
  cJSON_ArrayForEach(o, in->cluster) apply_object(r, o);
  for (size_t i = 0; i < in->t_arrive.n; i++)
    if (in->t_arrive.v[i] < in->duration_ms && ev_push(r, r->t0 + in->t_arrive.v[i], EV_ARRIVE, (uint32_t)i))
      return dt__err(err, DT_ENOMEM, "out of memory");
  for (size_t i = 0; i < in->scen_at.n; i++)
    if (in->scen_at.v[i] <= in->duration_ms && ev_push(r, r->t0 + in->scen_at.v[i], EV_SCENARIO, (uint32_t)i))
      return dt__err(err, DT_ENOMEM, "out of memory");
  int64_t end = r->t0 + in->duration_ms, next_sample = r->t0;
  double wall0 = dt__now_ms();
  for (;;) {
    int64_t t = end;
    if (r->heap.n && r->heap.v[0].t < t) t = r->heap.v[0].t;
    int64_t due = dt__ctl_next_due();
    if (due < t) t = due;
    if (next_sample < t) t = next_sample;
    if (t < dt__ctl_now_ms()) t = dt__ctl_now_ms();
    dt__ctl_run_until(t);
    r->now = t;
    if (dt__ctl_next_due() <= t) continue; /* timers the last ones armed for now */
    while (r->heap.n && r->heap.v[0].t <= t) {
      sevent e = ev_pop(r);
      accrue(r);
      switch (e.kind) {
      case EV_ARRIVE: arrive(r, e.idx); break;
      case EV_DEPART: depart(r, e.idx); break;
      case EV_SCENARIO: scenario_event(r, e.idx); break;
      case EV_WARN: interrupt_claim(r, e.idx); break;
      default: break;
      }
    }
    if (FAULT("silent-delete") && t - r->t0 >= 600000) /* a node with pods taken away without a word */
      for (size_t i = 0; i < r->claims.n; i++)
        if (r->claims.v[i].live && r->claims.v[i].used_pods) {
          char key[800];
          snprintf(key, sizeof key, "NodeClaim//%s", dt__sym_str(&r->names, r->claims.v[i].name));
          r->last_decision[0] = 0;
          dt__ctl_delete(key, NULL);
          break;
        }
    if (t == next_sample) {
      take_sample(r);
      next_sample += in->step_ms;
      if (tty) progress(r, k, nruns, wall0);
    }
    if (r->violation[0] && in->check) break;
    if (t >= end && dt__ctl_next_due() > end && !(r->heap.n && r->heap.v[0].t <= end)) break;
  }
  if (r->series.n == 0 || r->series.v[r->series.n - 1].t != (end - r->t0) / 1000) take_sample(r);
  for (size_t i = 0; i < r->pods.n; i++) { /* time run up to the end counts; pending ones wait so far */
    spod *p = &r->pods.v[i];
    if (p->state == POD_RUNNING) p->run_ms += (double)(r->now - p->since);
    if (p->state == POD_PENDING && dt__vec_push(&r->waits, (double)(r->now - p->since) / 1000.0))
      return dt__err(err, DT_ENOMEM, "out of memory");
  }
  return 0;
}

void run_free(run *r) {
  dt__ctl_stop();
  for (size_t i = 0; i < r->claims.n; i++) {
    sclaim *c = &r->claims.v[i];
    dt__free(c->id), dt__free(c->type), dt__free(c->zone), dt__free(c->ct), dt__free(c->pool), dt__free(c->pods.v);
    dt__free(c->told), dt__free(c->told_syms.v), dt__free(c->syms.v);
  }
  for (size_t i = 0; i < r->outages.n; i++)
    dt__free(r->outages.v[i].type), dt__free(r->outages.v[i].zone), dt__free(r->outages.v[i].ct);
  for (size_t i = 0; i < r->deps.n; i++)
    dt__free(r->deps.v[i].ns), dt__free(r->deps.v[i].name), cJSON_Delete(r->deps.v[i].tmpl), dt__free(r->deps.v[i].rs);
  for (size_t i = 0; i < r->npools.n; i++) dt__free(r->npools.v[i].name), dt_manifests_free(r->npools.v[i].m);
  dt__free(r->npools.v);
  dt__free(r->claims.v), dt__free(r->pods.v), dt__free(r->heap.v), dt__free(r->outages.v), dt__free(r->deps.v);
  dt__free(r->waits.v), dt__free(r->series.v), dt__free(r->reasons.v), dt__free(r->pod_of.v), dt__free(r->claim_of.v);
  dt__symtab_free(&r->names);
  dt_policy_free(r->policy);
  dt_catalog_free(r->cat);
}
