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
** (--check). Runs (one per --policy, and the first-fit-decreasing baseline
** with --baseline) share the inputs and the seed; the same inputs and seed
** give byte-identical output.
*/
#define _GNU_SOURCE
#include "ctl.h"
#include "dovetail.h"
#include "internal.h"
#include "model.h"
#include "store.h"

#include "../lua/policy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#define HOUR_MS 3600000.0
#define WARNING_MS 120000 /* the spot interruption notice: two minutes */

/* Interruption frequency per month for each Spot Instance Advisor bucket:
** the middle of "<5%", "5-10%", "10-15%", "15-20%" and 25% for ">20%". */
static const double k_bucket_month[5] = {0.025, 0.075, 0.125, 0.175, 0.25};

/* ------------------------------------------------------------ records */

enum { POD_FUTURE, POD_PENDING, POD_RUNNING, POD_GONE };

typedef struct spod {
  dt_sym name;
  int64_t arrive, life; /* ms; life < 0: stays */
  int64_t cpu, mem;     /* requests, milli-units */
  int state;
  int32_t claim;        /* while running */
  int64_t since;        /* pending since, or running since */
  double run_ms;        /* time spent running */
  const char *owner;    /* a scenario's Deployment, or NULL */
} spod;

typedef struct sclaim {
  dt_sym name;
  char *id, *type, *zone, *ct, *pool;
  double price;
  int64_t added, removed; /* -1 while alive */
  int64_t alloc_cpu, alloc_mem, alloc_pods;
  int64_t used_cpu, used_mem, used_pods;
  DT_VEC(uint32_t) pods; /* may hold pods that moved on: check pod.claim */
  bool live;
  bool disrupting; /* taken for a budgeted disruption (Empty, Drifted, Underutilized) */
} sclaim;

/* A NodePool as applied, parsed for its disruption budgets. */
typedef struct spool {
  char *name;
  dt_manifests *m; /* holds the one NodePool */
} spool;

enum { EV_ARRIVE, EV_DEPART, EV_SCENARIO, EV_WARN };

typedef struct sevent {
  int64_t t;
  uint64_t seq;
  int kind;
  uint32_t idx;
} sevent;

/* An offering the scenario makes unavailable from .. to (ms). */
typedef struct outage {
  char *type, *zone, *ct;
  int64_t from, to;
} outage;

typedef struct deployment {
  char *ns, *name;
  cJSON *tmpl; /* the pod template */
  int64_t replicas;
} deployment;

typedef struct sample {
  int64_t t;
  int nodes[DT_CT_N];
  double hourly, cost;
  size_t pending, running;
  double wait_p50, wait_p99;
  double cpu_req, cpu_alloc, mem_req, mem_alloc; /* cores, GiB */
  size_t disruptions, interruptions, policy_errors, launches;
} sample;

typedef struct reason_count {
  char reason[48];
  size_t n;
} reason_count;

/* The inputs every run shares. */
typedef struct inputs {
  const char *catalog;
  cJSON *cluster;   /* documents */
  cJSON *scenario;  /* events, sorted by time */
  DT_VEC(int64_t) scen_at;
  /* the trace, as columns */
  DT_VEC(int64_t) t_arrive, t_life, t_cpu, t_mem;
  cJSON *advisor;
  int64_t duration_ms, step_ms, latency_ms, startup_ms;
  uint64_t seed;
  dt_ctl_config cfg;
  bool check;
} inputs;

/* One run: a policy (or the built-ins) over the inputs. */
typedef struct run {
  const inputs *in;
  const char *label;
  const char *policy_path;
  dt_packing packing;
  dt_catalog *cat;
  dt_policy *policy;
  dt_symtab names;          /* pod names and claim names */
  DT_VEC(int32_t) pod_of;   /* name symbol -> pod index + 1 */
  DT_VEC(int32_t) claim_of; /* name symbol -> claim index + 1 */
  DT_VEC(spod) pods;
  DT_VEC(sclaim) claims;
  DT_VEC(sevent) heap;
  uint64_t seq;
  DT_VEC(outage) outages;
  DT_VEC(deployment) deps;
  DT_VEC(spool) npools;
  bool check_budgets; /* false when a policy's budget hook decides them */
  DT_VEC(double) waits; /* seconds, every pending episode that ended */
  size_t waits_seen;    /* waits before this step */
  DT_VEC(sample) series;
  DT_VEC(reason_count) reasons;
  int64_t now, t0;
  double hourly, cost, lifetime_cost;
  int64_t last_cost_t;
  size_t arrivals, departed, launches, disruptions, interruptions, live_nodes[DT_CT_N];
  size_t policy_errors_before;
  char last_decision[1600];
  char violation[1200]; /* the first invariant broken, or "" */
  int64_t fail_startups; /* launches whose nodes will never initialize */
} run;

static void violate(run *r, const char *fmt, ...) DT_PRINTF(2, 3);
static void violate(run *r, const char *fmt, ...) {
  if (r->violation[0]) return;
  char ts[40];
  dt__fmt_time(r->now / 1000, ts, sizeof ts);
  int k = snprintf(r->violation, sizeof r->violation, "at %s (+%llds): ", ts, (long long)((r->now - r->t0) / 1000));
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->violation + k, sizeof r->violation - (size_t)k, fmt, ap);
  va_end(ap);
}

#ifdef DT_SIM_FAULTS
/* A test build breaks one invariant on purpose (DOVETAIL_SIM_FAULT), so the
** specs can show that --check catches it. */
static const char *fault(void) {
  const char *f = getenv("DOVETAIL_SIM_FAULT");
  return f ? f : "";
}
#define FAULT(name) (!strcmp(fault(), name))
#else
#define FAULT(name) 0
#endif

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

static int32_t map_get(const run *r, bool claim, dt_sym s) {
  const DT_VEC(int32_t) *m = claim ? (const void *)&r->claim_of : (const void *)&r->pod_of;
  return s && s < m->n ? m->v[s] - 1 : -1;
}

/* Cost accrues at the hourly rate of the live instances. */
static void accrue(run *r) {
  int64_t now = dt__ctl_now_ms();
  if (now > r->last_cost_t) r->cost += r->hourly * (double)(now - r->last_cost_t) / HOUR_MS;
  r->last_cost_t = now;
  r->now = now;
}

static double offering_price(const dt_catalog *c, const char *type, const char *zone, const char *ct) {
  int cti = dt__ct_parse(ct);
  for (size_t i = 0; i < c->ntypes; i++) {
    const dt_ctype *t = &c->types[i];
    if (strcmp(t->name, type)) continue;
    for (size_t k = 0; k < t->noff; k++)
      if (t->off[k].ct == cti && !strcmp(t->off[k].zone, zone)) return t->off[k].price;
    return t->od_price > 0 ? t->od_price : 0;
  }
  return 0;
}

static const dt_ctype *ctype(const dt_catalog *c, const char *type) {
  for (size_t i = 0; i < c->ntypes; i++)
    if (!strcmp(c->types[i].name, type)) return &c->types[i];
  return NULL;
}

static void pod_pending(run *r, spod *p) {
  p->state = POD_PENDING;
  p->claim = -1;
  p->since = r->now;
}

static void pod_leave_claim(run *r, spod *p) {
  if (p->claim < 0) return;
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
    const dt_ctype *t = ctype(r->cat, type);
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
      const cJSON *e = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r->in->advisor, "instanceTypes"), type);
      int bucket = e ? (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "r")) : 0;
      if (bucket < 0 || bucket > 4) bucket = 0;
      const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "perHour"); /* a what-if rate, given directly */
      double per_hour = cJSON_IsNumber(ph) && ph->valuedouble > 0 ? ph->valuedouble : -log(1 - k_bucket_month[bucket]) / 730.0;
      double hours = -log(uniform(r->in->seed, id)) / per_hour;
      int64_t at_ms = r->now + (int64_t)(hours * HOUR_MS);
      if (at_ms - WARNING_MS < r->t0 + r->in->duration_ms) ev_push(r, at_ms - WARNING_MS, EV_WARN, (uint32_t)r->claims.n - 1);
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
  /* a node with pods goes only by a command that names it */
  if (busy && !strstr(r->last_decision, claim))
    violate(r, "NodeClaim %s was deleted with pods on it, and no decision names it (last: %s)", claim, r->last_decision);
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
  for (const char *s = pods; s && *s;) {
    const char *e = strchr(s, ',');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    int32_t pi = map_get(r, false, dt__symn(&r->names, s, len));
    s = e ? e + 1 : NULL;
    if (pi < 0) continue; /* a workload's or a VM's pod: not followed one by one */
    spod *p = &r->pods.v[pi];
    if (p->state == POD_GONE || p->state == POD_FUTURE || p->claim == ci) continue;
    if (p->state == POD_RUNNING) { /* moved by a replacement: it runs on the new node from now */
      pod_leave_claim(r, p);
    } else {
      if (dt__vec_push(&r->waits, (double)(r->now - p->since) / 1000.0)) violate(r, "out of memory");
    }
    p->state = POD_RUNNING;
    p->claim = ci;
    p->since = r->now;
    c->used_cpu += p->cpu + (FAULT("overcommit") ? c->alloc_cpu : 0); /* a node given more than it has */
    c->used_mem += p->mem;
    c->used_pods++;
    if (dt__vec_push(&c->pods, (uint32_t)pi)) violate(r, "out of memory");
  }
  if (r->in->check && (c->used_cpu > c->alloc_cpu || c->used_mem > c->alloc_mem || c->used_pods > c->alloc_pods) &&
      c->alloc_cpu)
    violate(r, "NodeClaim %s (%s) holds %lldm cpu, %lld MiB, %lld pods: more than its allocatable %lldm, %lld MiB, %lld",
            claim, c->type, (long long)c->used_cpu, (long long)(c->used_mem / 1000 / 1048576), (long long)c->used_pods,
            (long long)c->alloc_cpu, (long long)(c->alloc_mem / 1000 / 1048576), (long long)c->alloc_pods);
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
  int64_t nodes = 0, disrupting = 0;
  for (size_t i = 0; i < r->claims.n; i++) {
    const sclaim *c = &r->claims.v[i];
    if (strcmp(c->pool, pool) || !(c->live || c->removed == r->now)) continue;
    nodes++;
    disrupting += c->disrupting;
  }
  int64_t most = dt__budget_nodes(np, reason, r->now / 1000, nodes);
  if (disrupting > most)
    violate(r, "NodePool %s: %lld of its %lld nodes disrupting at once, more than its %s budget of %lld (last: %s)", pool,
            (long long)disrupting, (long long)nodes, word, (long long)most, r->last_decision);
}

static void on_decision(void *ud, const char *kind, const char *subject, const char *reason) {
  run *r = ud;
  snprintf(r->last_decision, sizeof r->last_decision, "%s %s: %s", kind, subject, reason);
  char word[48];
  reason_word(reason, word, sizeof word);
  const char *names = !strncmp(subject, "NodeClaim ", 10) ? subject + 10 : NULL;
  unsigned bit = !strcmp(word, "Empty") ? DT_REASON_EMPTY
                 : !strcmp(word, "Drifted") ? DT_REASON_DRIFTED
                 : !strcmp(word, "Underutilized") ? DT_REASON_UNDERUTILIZED : 0;
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
  const dt_ctype *t = ctype(r->cat, type);
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

static cJSON *pod_object(const char *ns, const char *name, int64_t cpu, int64_t mem, const cJSON *tmpl) {
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
static void pod_requests(const cJSON *o, int64_t *cpu, int64_t *mem) {
  *cpu = *mem = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "spec"), "containers")) {
    const cJSON *req =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, "resources"), "requests");
    char tmp[64];
    const char *v;
    int64_t q;
    if ((v = dt__scalar(cJSON_GetObjectItemCaseSensitive(req, "cpu"), tmp, sizeof tmp)) && !dt_quantity_parse(v, &q, NULL))
      *cpu += q;
    if ((v = dt__scalar(cJSON_GetObjectItemCaseSensitive(req, "memory"), tmp, sizeof tmp)) &&
        !dt_quantity_parse(v, &q, NULL))
      *mem += q;
  }
}

/* Follow a pod from now: it is pending until a node holds it. */
static int32_t track(run *r, const char *ns, const char *name, int64_t cpu, int64_t mem, int64_t life, const char *owner) {
  char full[600];
  snprintf(full, sizeof full, "%s/%s", ns, name);
  dt_sym s = dt__sym(&r->names, full);
  int32_t at = map_get(r, false, s);
  if (at >= 0 && r->pods.v[at].state != POD_GONE) return at;
  spod p = {s, r->now, life, cpu, mem, POD_PENDING, -1, r->now, 0, owner};
  if (dt__vec_push(&r->pods, p) || map_set(r, false, s, (int32_t)r->pods.n)) return -1;
  r->arrivals++;
  if (life >= 0) ev_push(r, r->now + life, EV_DEPART, (uint32_t)r->pods.n - 1);
  return (int32_t)r->pods.n - 1;
}

static void depart(run *r, uint32_t pi) {
  spod *p = &r->pods.v[pi];
  if (p->state == POD_GONE || p->state == POD_FUTURE) return;
  const char *name = dt__sym_str(&r->names, p->name);
  char key[800];
  int32_t on = p->state == POD_RUNNING ? p->claim : -1;
  const char *claim = on >= 0 ? dt__sym_str(&r->names, r->claims.v[on].name) : NULL;
  snprintf(key, sizeof key, "Pod/%s", name);
  pod_leave_claim(r, p);
  p->state = POD_GONE;
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
  if (FAULT("lose-pod") && row == 3) r->pods.v[pi].state = POD_GONE; /* forgotten by the books */
}

/* ------------------------------------------------------------ the scenario */

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

/* Apply one object as the cluster would: Deployments become their pods
** (the simulator plays the ReplicaSet controller), Pods are followed. */
static void apply_object(run *r, const cJSON *o) {
  const char *kind = dt__jstr(o, "kind");
  const cJSON *md = jget(o, "metadata");
  const char *ns = dt__jstr(md, "namespace") ? dt__jstr(md, "namespace") : "default";
  const char *name = dt__jstr(md, "name");
  if (kind && name && !strcmp(kind, "Deployment")) {
    deployment *d = deployment_find(r, ns, name);
    if (!d) {
      deployment z = {dt__strdup(ns), dt__strdup(name), NULL, 0};
      if (!z.ns || !z.name || dt__vec_push(&r->deps, z)) {
        dt__free(z.ns), dt__free(z.name);
        violate(r, "out of memory");
        return;
      }
      d = &r->deps.v[r->deps.n - 1];
    }
    cJSON_Delete(d->tmpl);
    d->tmpl = cJSON_Duplicate(jget(jget(o, "spec"), "template"), true);
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

static void interrupt_claim(run *r, uint32_t ci) {
  sclaim *c = &r->claims.v[ci];
  if (!c->live) return;
  cJSON *e = cJSON_CreateObject();
  bool spot = !strcmp(c->ct, "spot");
  cJSON_AddStringToObject(e, "detail-type", spot ? "EC2 Spot Instance Interruption Warning" : "EC2 Instance State-change Notification");
  cJSON *det = cJSON_AddObjectToObject(e, "detail");
  cJSON_AddStringToObject(det, "instance-id", c->id);
  if (!spot) cJSON_AddStringToObject(det, "state", "stopping");
  char action[32];
  r->interruptions++;
  dt__ctl_event(e, action, sizeof action);
  cJSON_Delete(e);
}

static void scenario_event(run *r, uint32_t idx) {
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
    const char *claim = dt__jstr(v, "nodeClaim"), *type = dt__jstr(v, "instanceType"), *ct = dt__jstr(v, "capacityType");
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
        if ((!zone || !strcmp(t->off[k].zone, zone)) && (cti < 0 || t->off[k].ct == cti)) t->off[k].price = pr->valuedouble;
    }
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

/* ------------------------------------------------------------ samples and checks */

static int dbl_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double quantile(double *v, size_t n, double q) {
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
    if (p->state == POD_RUNNING && (p->claim < 0 || !r->claims.v[p->claim].live))
      violate(r, "pod %s is running on a node that is gone", dt__sym_str(&r->names, p->name));
  }
  if (pending + running + gone != r->arrivals || gone != r->departed)
    violate(r, "pods: %zu arrived, but %zu pending + %zu running + %zu departed (%zu departures recorded)", r->arrivals,
            pending, running, gone, r->departed);
  size_t stored = dt__ctl_count("Pod/");
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

static size_t policy_errors(const run *r) {
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
  for (size_t i = 0; i < r->pods.n; i++) {
    s.pending += r->pods.v[i].state == POD_PENDING;
    s.running += r->pods.v[i].state == POD_RUNNING;
  }
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
  s.policy_errors = policy_errors(r) - r->policy_errors_before;
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
  fprintf(stderr, "\rsimulate: %s (%zu/%zu) %lldd%02lldh%02lldm %3.0f%%  %.0fx real time  ETA %.0fs   ", r->label, k + 1,
          nruns, (long long)(st / 86400), (long long)(st % 86400 / 3600), (long long)(st % 3600 / 60), done * 100, rate,
          eta);
  fflush(stderr);
}

static int run_one(run *r, size_t k, size_t nruns, bool tty, dt_error *err) {
  const inputs *in = r->in;
  int rc = dt_catalog_load_named(in->catalog, &r->cat, err);
  if (rc) return rc;
  if (r->policy_path && (rc = dt_policy_load_file(r->policy_path, NULL, &r->policy, err))) return rc;
  r->policy_errors_before = policy_errors(r);
  /* a budget hook decides budgets the NodePools do not show */
  r->check_budgets = !dt__policy_has(r->policy, DT_HOOK_BUDGET) && !in->cfg.policy_dir;
  dt_ctl_cloud cloud = {r, cloud_launch, NULL};
  dt_ctl_observer obs = {r, on_instance, on_running, on_decision};
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
#ifdef DT_SIM_FAULTS
    if (FAULT("silent-delete") && t - r->t0 >= 600000) /* a node with pods taken away without a word */
      for (size_t i = 0; i < r->claims.n; i++)
        if (r->claims.v[i].live && r->claims.v[i].used_pods) {
          char key[800];
          snprintf(key, sizeof key, "NodeClaim//%s", dt__sym_str(&r->names, r->claims.v[i].name));
          r->last_decision[0] = 0;
          dt__ctl_delete(key, NULL);
          break;
        }
#endif
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

static void run_free(run *r) {
  dt__ctl_stop();
  for (size_t i = 0; i < r->claims.n; i++) {
    sclaim *c = &r->claims.v[i];
    dt__free(c->id), dt__free(c->type), dt__free(c->zone), dt__free(c->ct), dt__free(c->pool), dt__free(c->pods.v);
  }
  for (size_t i = 0; i < r->outages.n; i++) dt__free(r->outages.v[i].type), dt__free(r->outages.v[i].zone), dt__free(r->outages.v[i].ct);
  for (size_t i = 0; i < r->deps.n; i++) dt__free(r->deps.v[i].ns), dt__free(r->deps.v[i].name), cJSON_Delete(r->deps.v[i].tmpl);
  for (size_t i = 0; i < r->npools.n; i++) dt__free(r->npools.v[i].name), dt_manifests_free(r->npools.v[i].m);
  dt__free(r->npools.v);
  dt__free(r->claims.v), dt__free(r->pods.v), dt__free(r->heap.v), dt__free(r->outages.v), dt__free(r->deps.v);
  dt__free(r->waits.v), dt__free(r->series.v), dt__free(r->reasons.v), dt__free(r->pod_of.v), dt__free(r->claim_of.v);
  dt__symtab_free(&r->names);
  dt_policy_free(r->policy);
  dt_catalog_free(r->cat);
}

/* ------------------------------------------------------------ summary and output */

typedef struct summary {
  double cost, pod_hours, cost_per_pod_hour, wait_p50, wait_p99;
  size_t pods, launches, disruptions, interruptions, pending_end, policy_errors;
} summary;

static summary summarize(run *r) {
  summary s = {0};
  s.cost = r->cost;
  for (size_t i = 0; i < r->pods.n; i++) s.pod_hours += r->pods.v[i].run_ms / HOUR_MS;
  s.cost_per_pod_hour = s.pod_hours > 0 ? s.cost / s.pod_hours : 0;
  s.pods = r->arrivals;
  double *w = dt__malloc((r->waits.n ? r->waits.n : 1) * sizeof *w);
  if (w) {
    memcpy(w, r->waits.v, r->waits.n * sizeof *w);
    s.wait_p50 = quantile(w, r->waits.n, 0.5);
    s.wait_p99 = quantile(w, r->waits.n, 0.99);
    dt__free(w);
  }
  s.launches = r->launches;
  s.disruptions = r->disruptions;
  s.interruptions = r->interruptions;
  for (size_t i = 0; i < r->pods.n; i++) s.pending_end += r->pods.v[i].state == POD_PENDING;
  s.policy_errors = policy_errors(r) - r->policy_errors_before;
  return s;
}

static cJSON *num(double v) {
  char b[64];
  snprintf(b, sizeof b, "%.6g", v);
  return cJSON_CreateNumber(strtod(b, NULL)); /* six significant digits: stable across machines */
}

static cJSON *run_json(run *r, const summary *s) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", r->label);
  cJSON_AddStringToObject(o, "packing", r->packing == DT_PACKING_FFD ? "ffd" : "cost");
  cJSON *sm = cJSON_AddObjectToObject(o, "summary");
  cJSON_AddItemToObject(sm, "cost", num(s->cost));
  cJSON_AddItemToObject(sm, "podHours", num(s->pod_hours));
  cJSON_AddItemToObject(sm, "costPerPodHour", num(s->cost_per_pod_hour));
  cJSON_AddItemToObject(sm, "pendingP50Seconds", num(s->wait_p50));
  cJSON_AddItemToObject(sm, "pendingP99Seconds", num(s->wait_p99));
  cJSON_AddNumberToObject(sm, "pods", (double)s->pods);
  cJSON_AddNumberToObject(sm, "nodesLaunched", (double)s->launches);
  cJSON_AddNumberToObject(sm, "disruptions", (double)s->disruptions);
  cJSON *byr = cJSON_AddObjectToObject(sm, "disruptionsByReason");
  for (size_t i = 0; i < r->reasons.n; i++) cJSON_AddNumberToObject(byr, r->reasons.v[i].reason, (double)r->reasons.v[i].n);
  cJSON_AddNumberToObject(sm, "interruptions", (double)s->interruptions);
  cJSON_AddNumberToObject(sm, "pendingAtEnd", (double)s->pending_end);
  cJSON_AddNumberToObject(sm, "policyErrors", (double)s->policy_errors);
  if (r->in->check) cJSON_AddStringToObject(sm, "invariants", r->violation[0] ? r->violation : "held");
  cJSON *series = cJSON_AddArrayToObject(o, "series");
  for (size_t i = 0; i < r->series.n; i++) {
    const sample *p = &r->series.v[i];
    cJSON *x = cJSON_CreateObject();
    cJSON_AddNumberToObject(x, "t", (double)p->t);
    cJSON *nodes = cJSON_AddObjectToObject(x, "nodes");
    for (int k = 0; k < DT_CT_N; k++) cJSON_AddNumberToObject(nodes, dt__ct_names[k], p->nodes[k]);
    cJSON_AddItemToObject(x, "hourlyCost", num(p->hourly));
    cJSON_AddItemToObject(x, "cost", num(p->cost));
    cJSON_AddNumberToObject(x, "pending", (double)p->pending);
    cJSON_AddNumberToObject(x, "running", (double)p->running);
    cJSON_AddItemToObject(x, "pendingP50Seconds", num(p->wait_p50));
    cJSON_AddItemToObject(x, "pendingP99Seconds", num(p->wait_p99));
    cJSON_AddItemToObject(x, "cpuRequested", num(p->cpu_req));
    cJSON_AddItemToObject(x, "cpuAllocatable", num(p->cpu_alloc));
    cJSON_AddItemToObject(x, "memoryRequestedGiB", num(p->mem_req));
    cJSON_AddItemToObject(x, "memoryAllocatableGiB", num(p->mem_alloc));
    cJSON_AddNumberToObject(x, "launches", (double)p->launches);
    cJSON_AddNumberToObject(x, "disruptions", (double)p->disruptions);
    cJSON_AddNumberToObject(x, "interruptions", (double)p->interruptions);
    cJSON_AddNumberToObject(x, "policyErrors", (double)p->policy_errors);
    cJSON_AddItemToArray(series, x);
  }
  return o;
}

static void print_table(FILE *f, run *runs, const summary *ss, size_t n) {
  fprintf(f, "%-22s %12s %10s %11s %11s %8s %11s %13s %8s\n", "RUN", "COST", "$/POD-H", "P50 PENDING", "P99 PENDING",
          "NODES", "DISRUPTIONS", "INTERRUPTIONS", "PENDING");
  for (size_t i = 0; i < n; i++) {
    char p50[32], p99[32];
    snprintf(p50, sizeof p50, "%.0fs", ss[i].wait_p50);
    snprintf(p99, sizeof p99, "%.0fs", ss[i].wait_p99);
    fprintf(f, "%-22.22s %12.2f %10.4f %11s %11s %8zu %11zu %13zu %8zu\n", runs[i].label, ss[i].cost,
            ss[i].cost_per_pod_hour, p50, p99, ss[i].launches, ss[i].disruptions, ss[i].interruptions,
            ss[i].pending_end);
  }
}

/* ------------------------------------------------------------ the HTML report */

static const char *const k_colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

static void html_escape(dt_buf *b, const char *s);

typedef double (*series_fn)(const sample *s);
static double f_hourly(const sample *s) { return s->hourly; }
static double f_cost(const sample *s) { return s->cost; }
static double f_nodes(const sample *s) { return s->nodes[0] + s->nodes[1] + s->nodes[2]; }
static double f_spot(const sample *s) { return s->nodes[DT_CT_SPOT]; }
static double f_pending(const sample *s) { return (double)s->pending; }
static double f_cpu_util(const sample *s) { return s->cpu_alloc > 0 ? 100 * s->cpu_req / s->cpu_alloc : 0; }
static double f_mem_util(const sample *s) { return s->mem_alloc > 0 ? 100 * s->mem_req / s->mem_alloc : 0; }
static double f_disrupt(const sample *s) { return (double)s->disruptions; }

static void html_chart(dt_buf *b, const char *title, const char *unit, series_fn f, const run *runs, size_t n) {
  const double W = 640, H = 220, L = 60, R = 10, T = 28, B = 30;
  double tmax = 1, ymax = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < runs[i].series.n; k++) {
      const sample *s = &runs[i].series.v[k];
      if ((double)s->t > tmax) tmax = (double)s->t;
      if (f(s) > ymax) ymax = f(s);
    }
  if (ymax <= 0) ymax = 1;
  double mag = pow(10, floor(log10(ymax))), fr = ymax / mag; /* a round top: 1, 2, 2.5 or 5 x 10^k */
  ymax = mag * (fr <= 1 ? 1 : fr <= 2 ? 2 : fr <= 2.5 ? 2.5 : fr <= 5 ? 5 : 10);
  dt__buf_printf(b, "<figure class=\"chart\"><svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" "
                    "role=\"img\" aria-label=\"%s\">\n", W, H, title);
  /* each chart carries its style, so one can be cut out as an SVG file */
  dt__buf_puts(b, "<style>text{font:10px system-ui,sans-serif;fill:#222}.title{font-weight:600;font-size:13px}"
                  ".grid{stroke:#ddd}.ylab{text-anchor:end}.xlab{text-anchor:middle}</style>\n"
                  "<rect width=\"100%\" height=\"100%\" fill=\"#fafafa\"/>\n");
  dt__buf_printf(b, "<text x=\"%.0f\" y=\"18\" class=\"title\">%s</text>\n", L, title);
  for (int g = 0; g <= 4; g++) {
    double y = T + (H - T - B) * (1 - g / 4.0);
    dt__buf_printf(b, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>", L, W - R, y, y);
    dt__buf_printf(b, "<text x=\"%.0f\" y=\"%.1f\" class=\"ylab\">%.3g%s</text>\n", L - 4, y + 4, ymax * g / 4.0, unit);
  }
  for (int g = 0; g <= 4; g++) {
    double x = L + (W - L - R) * g / 4.0, th = tmax * g / 4.0 / 3600;
    dt__buf_printf(b, "<text x=\"%.1f\" y=\"%.0f\" class=\"xlab\"%s>%.1fh</text>\n", x, H - 10,
                   g == 4 ? " style=\"text-anchor:end\"" : "", th);
  }
  for (size_t i = 0; i < n; i++) {
    dt__buf_printf(b, "<text x=\"%.0f\" y=\"18\" style=\"text-anchor:end;fill:%s\">", W - R - 150.0 * (double)(n - 1 - i),
                   k_colors[i % 6]);
    html_escape(b, runs[i].label);
    dt__buf_puts(b, "</text>\n");
  }
  for (size_t i = 0; i < n; i++) {
    dt__buf_printf(b, "<polyline class=\"series\" data-run=\"%zu\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", i,
                   k_colors[i % 6]);
    for (size_t k = 0; k < runs[i].series.n; k++) {
      const sample *s = &runs[i].series.v[k];
      double x = L + (W - L - R) * (double)s->t / tmax, y = T + (H - T - B) * (1 - f(s) / ymax);
      dt__buf_printf(b, "%.1f,%.1f ", x, y);
    }
    dt__buf_puts(b, "\"/>\n");
  }
  dt__buf_puts(b, "</svg></figure>\n");
}

static void html_escape(dt_buf *b, const char *s) {
  for (; *s; s++) {
    if (*s == '<') dt__buf_puts(b, "&lt;");
    else if (*s == '>') dt__buf_puts(b, "&gt;");
    else if (*s == '&') dt__buf_puts(b, "&amp;");
    else if (*s == '"') dt__buf_puts(b, "&quot;");
    else dt__buf_putc(b, *s);
  }
}

static int write_report(const char *path, run *runs, const summary *ss, size_t n, dt_error *err) {
  dt_buf b = {0};
  dt__buf_puts(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>dovetail simulate</title>\n"
                   "<style>body{font:14px system-ui,sans-serif;margin:24px;color:#222}"
                   "table{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}"
                   "th:first-child,td:first-child{text-align:left}.charts{margin-top:18px;display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:12px}"
                   "figure{margin:0}svg{width:100%;height:auto}"
                   ".swatch{display:inline-block;width:12px;height:12px;margin-right:6px;vertical-align:middle}</style>\n"
                   "</head><body>\n<h1>dovetail simulate</h1>\n");
  const sample *last = runs[0].series.n ? &runs[0].series.v[runs[0].series.n - 1] : NULL;
  dt__buf_printf(&b, "<p>%.1f simulated hours, seed %llu, %zu pods.</p>\n", last ? (double)last->t / 3600 : 0.0,
                 (unsigned long long)runs[0].in->seed, ss[0].pods);
  dt__buf_puts(&b, "<table id=\"summary\"><thead><tr><th>run</th><th>cost ($)</th><th>$ per pod-hour</th><th>p50 pending (s)</th>"
                   "<th>p99 pending (s)</th><th>nodes launched</th><th>disruptions</th><th>interruptions</th>"
                   "<th>pending at end</th><th>policy errors</th></tr></thead><tbody>\n");
  for (size_t i = 0; i < n; i++) {
    dt__buf_printf(&b, "<tr><td><span class=\"swatch\" style=\"background:%s\"></span>", k_colors[i % 6]);
    html_escape(&b, runs[i].label);
    dt__buf_printf(&b, "</td><td>%.2f</td><td>%.4f</td><td>%.0f</td><td>%.0f</td><td>%zu</td><td>%zu</td><td>%zu</td>"
                       "<td>%zu</td><td>%zu</td></tr>\n",
                   ss[i].cost, ss[i].cost_per_pod_hour, ss[i].wait_p50, ss[i].wait_p99, ss[i].launches, ss[i].disruptions,
                   ss[i].interruptions, ss[i].pending_end, ss[i].policy_errors);
  }
  dt__buf_puts(&b, "</tbody></table>\n<div class=\"charts\">\n");
  html_chart(&b, "Hourly cost ($/h)", "", f_hourly, runs, n);
  html_chart(&b, "Cumulative cost ($)", "", f_cost, runs, n);
  html_chart(&b, "Nodes", "", f_nodes, runs, n);
  html_chart(&b, "Spot nodes", "", f_spot, runs, n);
  html_chart(&b, "Pending pods", "", f_pending, runs, n);
  html_chart(&b, "CPU requested / allocatable", "%", f_cpu_util, runs, n);
  html_chart(&b, "Memory requested / allocatable", "%", f_mem_util, runs, n);
  html_chart(&b, "Disruptions (cumulative)", "", f_disrupt, runs, n);
  dt__buf_puts(&b, "</div>\n</body></html>\n");
  if (b.oom) {
    dt__free(b.p);
    return dt__err(err, DT_ENOMEM, "out of memory writing the report");
  }
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  bool ok = f && fwrite(b.p, 1, b.len, f) == b.len;
  if (f) ok &= fclose(f) == 0;
  ok = ok && rename(tmp, path) == 0;
  dt__free(b.p);
  if (!ok) {
    unlink(tmp);
    return dt__err(err, DT_EIO, "--report %s: cannot be written", path);
  }
  return 0;
}

/* ------------------------------------------------------------ inputs */

/* One CSV line of the trace: arrival_s,batch,cpu_millicores,memory_MiB,
** duration_s,duration_hi_s,censored. A pod lives for the middle of its
** duration bin; a censored one (still running when the trace ended) stays. */
static int trace_line(inputs *in, const char *file, size_t lineno, char *line, dt_error *err) {
  while (*line == ' ') line++;
  if (!*line || *line == '#' || *line == '\n' || *line == '\r' || !strncmp(line, "arrival_s", 9)) return 0;
  double f[7];
  int n = sscanf(line, "%lf,%lf,%lf,%lf,%lf,%lf,%lf", &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6]);
  if (n != 7)
    return dt__err(err, DT_EINVAL,
                   "%s:%zu: expected arrival_s,batch,cpu_millicores,memory_MiB,duration_s,duration_hi_s,censored", file,
                   lineno);
  for (int i = 0; i < 7; i++)
    if (!(f[i] >= 0 && f[i] < 1e12))
      return dt__err(err, DT_EINVAL, "%s:%zu: field %d: expected a number >= 0, got %g", file, lineno, i + 1, f[i]);
  if (f[2] <= 0 || f[3] <= 0) return dt__err(err, DT_EINVAL, "%s:%zu: cpu and memory must be > 0", file, lineno);
  if (in->t_arrive.n && (int64_t)(f[0] * 1000) < in->t_arrive.v[in->t_arrive.n - 1])
    return dt__err(err, DT_EINVAL, "%s:%zu: arrivals must be in time order", file, lineno);
  int64_t life = f[6] != 0 ? -1 : (int64_t)((f[4] + (f[5] > f[4] ? f[5] : f[4])) / 2 * 1000);
  if (dt__vec_push(&in->t_arrive, (int64_t)(f[0] * 1000)) || dt__vec_push(&in->t_life, life) ||
      dt__vec_push(&in->t_cpu, (int64_t)f[2]) || dt__vec_push(&in->t_mem, (int64_t)f[3] * 1048576 * 1000))
    return dt__err(err, DT_ENOMEM, "out of memory reading %s", file);
  return 0;
}

static int read_trace(inputs *in, const char *path, size_t limit, dt_error *err) {
  gzFile g = gzopen(path, "rb"); /* plain text or gzip */
  if (!g) return dt__err(err, DT_EIO, "--trace %s: cannot open", path);
  char line[512];
  size_t lineno = 0;
  int rc = 0;
  while (!rc && gzgets(g, line, sizeof line) && (!limit || in->t_arrive.n < limit)) rc = trace_line(in, path, ++lineno, line, err);
  gzclose(g);
  return rc;
}

static int read_scenario(inputs *in, const char *path, dt_error *err) {
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
  int64_t prev = 0;
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
        rc = dt__err(err, DT_EINVAL, "%s: events[%d].%s: unknown field (at, apply, delete, scale, unavailable, interrupt, "
                                     "price, pods, failStartup)", path, i, f->string);
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
    if (dt__vec_push(&in->scen_at, at)) {
      cJSON_Delete(events);
      return dt__err(err, DT_ENOMEM, "out of memory");
    }
    i++;
  }
  in->scenario = events;
  return 0;
}

extern const char dt__bundled_advisor[];
extern const char dt__bundled_advisor_end[];

static const char *k_sim_usage =
    "usage: dovetail simulate -f CLUSTER.yaml [--trace FILE.csv[.gz]] [--scenario FILE.yaml] [options]\n"
    "Replay a cluster on a virtual clock through the daemon's own controller, with a simulated cloud.\n"
    "  -f, --filename FILE   the cluster to start from (NodePools, Nodes, pods, VM pools); repeatable\n"
    "  --trace FILE          pod arrivals: arrival_s,batch,cpu_millicores,memory_MiB,duration_s,duration_hi_s,censored\n"
    "                        (the Azure 2017 trace's format; .gz read as is)\n"
    "  --trace-limit N       only the first N arrivals\n"
    "  --scenario FILE       timed events: apply, delete, scale, unavailable, interrupt, price, pods, failStartup\n"
    "  --duration DUR        how long to simulate (default: the trace's last arrival, else the last event, + 1h)\n"
    "  --catalog NAME|FILE   aws-us-east-1 (default), azure-eastus, or a catalog file\n"
    "  --policy FILE         a run with this Lua policy; repeatable (each run: same inputs, same seed)\n"
    "  --baseline            add a run with first-fit-decreasing and no policy (Karpenter's behaviour)\n"
    "  --packing cost|ffd    packing of the runs without --baseline (default cost)\n"
    "  --policy-dir DIR      NodePools' own policies (dovetail.dev/policy: NAME)\n"
    "  --seed N              randomness: names, interruptions (default 1)\n"
    "  --start RFC3339       the virtual clock's start (default 2026-01-01T00:00:00Z)\n"
    "  --step DUR            time-series step (default 1m)\n"
    "  --disrupt-interval DUR  a disruption pass every DUR (default 5m; 0 turns it off)\n"
    "  --batch-idle DUR, --batch-max DUR  provisioning batch windows (default 1s, 10s)\n"
    "  --launch-latency DUR  the cloud's answer to a launch (default 5s)\n"
    "  --startup DUR         from the launch's answer to an initialized node (default 60s)\n"
    "  --startup-timeout DUR a claim whose node has not initialized after DUR is deleted (default 15m)\n"
    "  --unavailable-ttl DUR how long an offering stays unavailable after a refusal (default 3m)\n"
    "  --spot-advisor FILE   interruption buckets per type (default: bundled AWS Spot Instance Advisor us-east-1)\n"
    "  --out FILE            the time series and summaries as JSON\n"
    "  --report FILE.html    a self-contained HTML report with SVG charts\n"
    "  --check               check the invariants at every step; a violation is an error (exit 1)\n"
    "  --timings             per run on standard error: wall time, simulated seconds per wall second, peak RSS\n"
    "  -o table|json         the summary on standard output (default table)\n"
    "exit status: 0 done, 1 bad input or an invariant broken, 2 bad usage\n";

static int sim_usage(FILE *f, int rc) {
  fputs(k_sim_usage, f);
  return rc;
}

static int dur_opt(const char *flag, const char *v, int64_t *out_ms) {
  if (!dt__duration_ms_parse(v, out_ms)) return 0;
  fprintf(stderr, "dovetail simulate: %s: expected a duration (90s, 10m, 2h), got \"%s\"\n", flag, v);
  return -1;
}

/* The command line, once read. */
typedef struct simargs {
  DT_VEC(const char *) files, policies;
  const char *trace, *scenario, *out, *report, *advisor, *format;
  bool baseline, timings;
  dt_packing packing;
  int64_t duration;
  size_t limit;
} simargs;

/* One option that takes a value; 0, or 2 after saying what is wrong. */
static int sim_option(const char *a, const char *val, inputs *in, simargs *o) {
  int64_t v;
  char *end;
  if (!strcmp(a, "-f") || !strcmp(a, "--filename")) return dt__vec_push(&o->files, val) ? 2 : 0;
  if (!strcmp(a, "--policy")) return dt__vec_push(&o->policies, val) ? 2 : 0;
  if (!strcmp(a, "--trace")) o->trace = val;
  else if (!strcmp(a, "--scenario")) o->scenario = val;
  else if (!strcmp(a, "--catalog")) in->catalog = val;
  else if (!strcmp(a, "--policy-dir")) in->cfg.policy_dir = val;
  else if (!strcmp(a, "--out")) o->out = val;
  else if (!strcmp(a, "--report")) o->report = val;
  else if (!strcmp(a, "--spot-advisor")) o->advisor = val;
  else if (!strcmp(a, "-o") || !strcmp(a, "--output")) o->format = val;
  else if (!strcmp(a, "--packing")) {
    if (strcmp(val, "cost") && strcmp(val, "ffd")) {
      fprintf(stderr, "dovetail simulate: --packing: expected cost or ffd, got \"%s\"\n", val);
      return 2;
    }
    o->packing = !strcmp(val, "ffd") ? DT_PACKING_FFD : DT_PACKING_COST;
  } else if (!strcmp(a, "--seed") || !strcmp(a, "--trace-limit")) {
    unsigned long long n = strtoull(val, &end, 10);
    if (*end || !*val) {
      fprintf(stderr, "dovetail simulate: %s: expected a number, got \"%s\"\n", a, val);
      return 2;
    }
    if (!strcmp(a, "--seed"))
      in->seed = n;
    else
      o->limit = (size_t)n;
  } else if (!strcmp(a, "--start")) {
    int64_t t;
    dt_error e = {0};
    if (dt_time_parse(val, &t, &e)) {
      fprintf(stderr, "dovetail simulate: --start: %s\n", e.msg);
      return 2;
    }
    in->cfg.start_ms = t * 1000;
  } else if (!strcmp(a, "--duration")) {
    if (dur_opt(a, val, &o->duration)) return 2;
  } else if (!strcmp(a, "--step")) {
    if (dur_opt(a, val, &in->step_ms) || in->step_ms < 1000) {
      fprintf(stderr, "dovetail simulate: --step: at least 1s\n");
      return 2;
    }
  } else if (!strcmp(a, "--disrupt-interval")) {
    if (dur_opt(a, val, &v)) return 2;
    in->cfg.disrupt_ms = (uint64_t)v;
  } else if (!strcmp(a, "--batch-idle") || !strcmp(a, "--batch-max")) {
    if (dur_opt(a, val, &v) || v <= 0) return 2;
    *(!strcmp(a, "--batch-idle") ? &in->cfg.idle_ms : &in->cfg.max_ms) = (uint64_t)v;
  } else if (!strcmp(a, "--launch-latency")) {
    if (dur_opt(a, val, &in->latency_ms)) return 2;
  } else if (!strcmp(a, "--startup")) {
    if (dur_opt(a, val, &in->startup_ms)) return 2;
  } else if (!strcmp(a, "--startup-timeout") || !strcmp(a, "--unavailable-ttl")) {
    if (dur_opt(a, val, &v) || v < 1000) return 2;
    *(!strcmp(a, "--startup-timeout") ? &in->cfg.startup_timeout_s : &in->cfg.ttl_s) = v / 1000;
  } else {
    fprintf(stderr, "dovetail simulate: unknown option %s\n", a);
    return sim_usage(stderr, 2);
  }
  return 0;
}

/* The command line into in and o; -1 to go on, else the exit status. */
static int sim_args(int argc, char **argv, inputs *in, simargs *o) {
  in->step_ms = 60000;
  in->latency_ms = 5000;
  in->startup_ms = 60000;
  in->seed = 1;
  in->cfg.disrupt_ms = 300000;
  in->cfg.idle_ms = 1000;
  in->cfg.max_ms = 10000;
  in->cfg.start_ms = dt__days_from_civil(2026, 1, 1) * 86400000;
  o->format = "table";
  o->packing = DT_PACKING_COST;
  o->duration = -1;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) return sim_usage(stdout, 0);
    if (!strcmp(a, "--baseline") || !strcmp(a, "--check") || !strcmp(a, "--timings")) {
      *(!strcmp(a, "--baseline") ? &o->baseline : !strcmp(a, "--check") ? &in->check : &o->timings) = true;
      continue;
    }
    if (!strncmp(a, "-o", 2) && a[2]) { /* -oyaml, -o=json */
      o->format = a + 2 + (a[2] == '=');
      continue;
    }
    if (!strncmp(a, "--output=", 9)) {
      o->format = a + 9;
      continue;
    }
    if (!val) {
      fprintf(stderr, "dovetail simulate: %s option %s\n", a[0] == '-' ? "incomplete or unknown" : "unexpected argument", a);
      return sim_usage(stderr, 2);
    }
    i++;
    int rc = sim_option(a, val, in, o);
    if (rc) return rc;
  }
  if (strcmp(o->format, "table") && strcmp(o->format, "json")) {
    fprintf(stderr, "dovetail simulate: -o: expected table or json, got \"%s\"\n", o->format);
    return 2;
  }
  if (!o->files.n) {
    fprintf(stderr, "dovetail simulate: the cluster to start from is missing (-f CLUSTER.yaml: at least a NodePool)\n");
    return sim_usage(stderr, 2);
  }
  return -1;
}

/* The cluster: every document of every file (a List's items each), checked
** as plan would read them. */
static int read_cluster(inputs *in, const simargs *o, dt_error *err) {
  int rc = 0;
  in->cluster = cJSON_CreateArray();
  dt_manifests *m = dt_manifests_new();
  if (!in->cluster || !m) rc = dt__err(err, DT_ENOMEM, "out of memory");
  for (size_t i = 0; !rc && i < o->files.n; i++) {
    char *buf;
    size_t len;
    cJSON *docs = NULL;
    if ((rc = dt__read_file(o->files.v[i], &buf, &len, err))) break;
    rc = dt_manifests_add_buffer(m, o->files.v[i], buf, len, err);
    if (!rc) rc = dt__doc_parse(o->files.v[i], buf, len, &docs, err);
    dt__free(buf);
    cJSON *d;
    while (!rc && docs && (d = cJSON_DetachItemFromArray(docs, 0))) {
      const cJSON *items = cJSON_GetObjectItemCaseSensitive(d, "items");
      if (cJSON_IsArray(items) && dt__jstr(d, "kind") && !strcmp(dt__jstr(d, "kind"), "List")) {
        cJSON *it;
        while ((it = cJSON_DetachItemFromArray((cJSON *)items, 0))) cJSON_AddItemToArray(in->cluster, it);
        cJSON_Delete(d);
      } else {
        cJSON_AddItemToArray(in->cluster, d);
      }
    }
    cJSON_Delete(docs);
  }
  dt_manifests_free(m);
  return rc;
}

/* The spot advisor's buckets: the file given, or the bundled us-east-1 data. */
static int read_advisor(inputs *in, const char *advisor, dt_error *err) {
  char *buf = NULL;
  size_t len = 0;
  int rc = advisor ? dt__read_file(advisor, &buf, &len, err) : 0;
  if (!rc) {
    in->advisor = advisor ? cJSON_ParseWithLength(buf, len)
                          : cJSON_ParseWithLength(dt__bundled_advisor, (size_t)(dt__bundled_advisor_end - dt__bundled_advisor));
    if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(in->advisor, "instanceTypes")))
      rc = dt__err(err, DT_EINVAL, "%s: expected {\"instanceTypes\": {TYPE: {\"r\": BUCKET}}}",
                   advisor ? advisor : "the bundled spot advisor data");
  }
  dt__free(buf);
  return rc;
}

/* The runs: the baseline first, then one per policy (or the built-ins). */
static run *make_runs(const inputs *in, const simargs *o, size_t *nruns) {
  size_t n = (o->baseline ? 1 : 0) + (o->policies.n ? o->policies.n : o->baseline ? 0 : 1), k = 0;
  run *runs = dt__calloc(n, sizeof *runs);
  if (!runs) return NULL;
  if (o->baseline) runs[k++] = (run){.in = in, .label = "baseline (ffd)", .packing = DT_PACKING_FFD};
  for (size_t i = 0; i < o->policies.n; i++) {
    const char *base = strrchr(o->policies.v[i], '/');
    runs[k++] = (run){.in = in, .label = base ? base + 1 : o->policies.v[i], .policy_path = o->policies.v[i],
                      .packing = o->packing};
  }
  if (!o->policies.n && !o->baseline)
    runs[k++] = (run){.in = in, .label = o->packing == DT_PACKING_FFD ? "built-in (ffd)" : "built-in (cost)",
                      .packing = o->packing};
  *nruns = n;
  return runs;
}

/* The summary table or JSON on standard output, --out and --report. */
static int write_outputs(const simargs *o, const cJSON *doc, run *runs, const summary *ss, size_t nruns,
                         dt_error *err) {
  if (!strcmp(o->format, "json")) {
    dt_buf b = {0};
    dt__doc_write(doc, DT_FORMAT_JSON, &b);
    if (b.p) fputs(b.p, stdout);
    dt__free(b.p);
  } else {
    print_table(stdout, runs, ss, nruns);
  }
  if (o->out) {
    dt_buf b = {0};
    dt__doc_write(doc, DT_FORMAT_JSON, &b);
    FILE *f = b.p ? fopen(o->out, "wb") : NULL;
    bool ok = f && fwrite(b.p, 1, b.len, f) == b.len;
    if (f) ok &= fclose(f) == 0;
    dt__free(b.p);
    if (!ok) return dt__err(err, DT_EIO, "--out %s: cannot be written", o->out);
  }
  return o->report ? write_report(o->report, runs, ss, nruns, err) : 0;
}

int dt__simulate_main(int argc, char **argv) {
  inputs in = {0};
  simargs o = {0};
  int rc = sim_args(argc, argv, &in, &o);
  if (rc >= 0) {
    dt__free(o.files.v), dt__free(o.policies.v);
    return rc;
  }
  rc = 0;
  dt_error err = {0};
  run *runs = NULL;
  summary *ss = NULL;
  size_t nruns = 0;
  cJSON *doc = NULL;
  rc = read_cluster(&in, &o, &err);
  if (!rc && o.trace) rc = read_trace(&in, o.trace, o.limit, &err);
  if (!rc && o.scenario) rc = read_scenario(&in, o.scenario, &err);
  if (!rc) rc = read_advisor(&in, o.advisor, &err);
  if (rc) goto done;
  if (o.duration < 0) { /* an hour past the last arrival or event */
    int64_t last = 0;
    if (in.t_arrive.n) last = in.t_arrive.v[in.t_arrive.n - 1];
    if (in.scen_at.n && in.scen_at.v[in.scen_at.n - 1] > last) last = in.scen_at.v[in.scen_at.n - 1];
    o.duration = last + 3600000;
  }
  in.duration_ms = o.duration;
  runs = make_runs(&in, &o, &nruns);
  ss = dt__calloc(nruns ? nruns : 1, sizeof *ss);
  if (!runs || !ss) {
    rc = dt__err(&err, DT_ENOMEM, "out of memory");
    goto done;
  }
  bool tty = isatty(2);
  doc = cJSON_CreateObject();
  cJSON_AddNumberToObject(doc, "seed", (double)in.seed);
  cJSON_AddNumberToObject(doc, "durationSeconds", (double)(in.duration_ms / 1000));
  cJSON_AddNumberToObject(doc, "stepSeconds", (double)(in.step_ms / 1000));
  cJSON *jr = cJSON_AddArrayToObject(doc, "runs");
  for (size_t i = 0; i < nruns && !rc; i++) {
    double w0 = dt__now_ms();
    rc = run_one(&runs[i], i, nruns, tty, &err);
    if (!rc && o.timings) {
      struct rusage ru;
      getrusage(RUSAGE_SELF, &ru);
      double wall_s = (dt__now_ms() - w0) / 1000;
      fprintf(stderr, "%s: %.0f simulated s in %.1f s wall (%.0fx real time), %zu pods, peak RSS %ld MiB\n",
              runs[i].label, (double)in.duration_ms / 1000, wall_s, wall_s > 0 ? (double)in.duration_ms / 1000 / wall_s : 0,
              runs[i].arrivals, ru.ru_maxrss / 1024);
    }
    if (!rc) {
      ss[i] = summarize(&runs[i]);
      cJSON_AddItemToArray(jr, run_json(&runs[i], &ss[i]));
    }
    dt__ctl_stop(); /* the controller's state goes; the run's records stay for the report */
    if (!rc && in.check && runs[i].violation[0])
      rc = dt__err(&err, DT_EINVAL, "%s: invariant broken %s", runs[i].label, runs[i].violation);
  }
  if (tty) fputs("\r\033[K", stderr);
  if (!rc) rc = write_outputs(&o, doc, runs, ss, nruns, &err);
done:
  if (rc) fprintf(stderr, "dovetail simulate: %s\n", err.msg);
  cJSON_Delete(doc);
  for (size_t i = 0; runs && i < nruns; i++) run_free(&runs[i]);
  dt__free(runs), dt__free(ss);
  dt__free(o.files.v), dt__free(o.policies.v);
  cJSON_Delete(in.cluster), cJSON_Delete(in.scenario), cJSON_Delete(in.advisor);
  dt__free(in.t_arrive.v), dt__free(in.t_life.v), dt__free(in.t_cpu.v), dt__free(in.t_mem.v), dt__free(in.scen_at.v);
  return rc ? 1 : 0;
}
