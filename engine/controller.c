/*
** controller.c: the reconcile loop. It owns the cluster state (objects,
** claims, instances, unavailable marks), runs provisioning rounds and
** disruption passes, carries their commands out through the provider, and
** takes its time from the clock it is given: libuv's in `dovetail serve`
** (serve.c puts the HTTP API, options and signals in front of it), a virtual
** one in `dovetail simulate` (simulate.c). It is the only place that
** decides; every decision goes into the decision log with its reason.
**
** Objects applied through the API are kept as JSON text keyed by
** kind/namespace/name; a round parses them into a dt_manifests, plans, and
** launches the new NodeClaims. What does not change between rounds is not
** done again: a Pod, Node or NodeClaim object keeps its parsed form from
** round to round while its version (obj.gen) is the same (podcache.c), and
** the catalog stays compiled until it changes (D.cc: rounds plan on it,
** disruption passes start their cluster from it); a round's manifests and plan are what
** reading and compiling everything afresh would give. Launched claims go back into the store (with
** the pods nominated to them), so the next round sees them as in-flight
** capacity and a disruption pass counts the pods on them. State is a
** snapshot plus an append-only journal, one fsync per batch, read back at
** start (see "state file" below).
**
** A round: plan, nominate bindings to in-flight claims, launch new claims
** (written ahead), requeue what is left pending with backoff. Every
** --disrupt-interval: health remediation, then a disruption pass whose
** replacements launch before the nodes they replace are deleted.
**
** Providers: `sim`, an in-process cloud (launch latency zero, capacity
** unbounded unless --sim-ice marks offerings as out of capacity); `http`,
** the REST contract over libcurl; and the simulator's cloud (ctl.h).
**
** This file holds the clock, the decision log, rounds, reloads, events and
** the virtual clock's driver; the store and state file are in ctl_store.c,
** launches and providers in ctl_launch.c, nominations and replacements in
** ctl_claims.c, disruption and remediation in ctl_disrupt.c, VM pools in
** ctl_vmpools.c (controller.h is what they share).
*/
#define _GNU_SOURCE
#include "controller.h"
#include "httpc.h"
#include "model.h"
#include "schedule.h"
#include "store.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

dtd dt__daemon;

const double dt__plan_buckets[8] = {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5};
const double dt__lag_buckets[8] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5};

/* ------------------------------------------------------------ the clock */

/*
** The controller takes its time from a clock it is given: libuv's in
** `dovetail serve`, a virtual one in `dovetail simulate`, which drives the
** same code through dt__ctl_run_until. Every timer the controller arms goes
** through tm_*: on the virtual clock a timer is an entry due at a virtual
** time, and nothing waits in real time.
*/
int64_t wall(void) { return D.virt ? D.vnow / 1000 : (int64_t)time(NULL); }

void tm_init(uv_timer_t *t) {
  if (!D.virt) uv_timer_init(D.loop, t);
}

static int vt_find(const uv_timer_t *t) {
  for (size_t i = 0; i < D.vt.n; i++)
    if (D.vt.v[i].t == t) return (int)i;
  return -1;
}

void tm_stop(uv_timer_t *t) {
  if (!D.virt) {
    uv_timer_stop(t);
    return;
  }
  int at = vt_find(t);
  if (at >= 0) D.vt.v[at] = D.vt.v[--D.vt.n];
}

void tm_start(uv_timer_t *t, uv_timer_cb cb, uint64_t ms, uint64_t repeat) {
  if (!D.virt) {
    uv_timer_start(t, cb, ms, repeat);
    return;
  }
  tm_stop(t);
  vtimer v = {t, cb, D.vnow + (int64_t)ms, ++D.vseq, repeat};
  if (dt__vec_push(&D.vt, v)) logf_("error", "clock", "out of memory arming a timer");
}

bool tm_active(uv_timer_t *t) { return D.virt ? vt_find(t) >= 0 : uv_is_active((uv_handle_t *)t) != 0; }

void tm_close(uv_timer_t *t, uv_close_cb cb) {
  if (!D.virt) {
    uv_close((uv_handle_t *)t, cb);
    return;
  }
  tm_stop(t);
  cb((uv_handle_t *)t);
}

int64_t dt__ctl_next_due(void) {
  int64_t best = INT64_MAX;
  for (size_t i = 0; i < D.vt.n; i++)
    if (D.vt.v[i].due < best) best = D.vt.v[i].due;
  return best;
}

int64_t dt__ctl_now_ms(void) { return D.vnow; }

/* Fire every virtual timer due at or before t (earliest first, then in
** arming order), then stand at t. */
void dt__ctl_run_until(int64_t t) {
  for (;;) {
    int at = -1;
    for (size_t i = 0; i < D.vt.n; i++) {
      const vtimer *v = &D.vt.v[i];
      if (v->due <= t && (at < 0 || v->due < D.vt.v[at].due || (v->due == D.vt.v[at].due && v->seq < D.vt.v[at].seq)))
        at = (int)i;
    }
    if (at < 0) break;
    vtimer v = D.vt.v[at];
    if (v.due > D.vnow) D.vnow = v.due;
    if (v.repeat) {
      D.vt.v[at].due += (int64_t)v.repeat;
      D.vt.v[at].seq = ++D.vseq;
    } else {
      D.vt.v[at] = D.vt.v[--D.vt.n];
    }
    v.cb(v.t);
  }
  if (t > D.vnow) D.vnow = t;
}

/* ------------------------------------------------------------ logging */

void logf_(const char *level, const char *event, const char *fmt, ...) {
  if (D.quiet) return;
  char msg[2000], ts[40];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  dt__fmt_time(wall(), ts, sizeof ts);
  if (D.log_format && !strcmp(D.log_format, "logfmt")) {
    fprintf(stderr, "time=%s level=%s event=%s msg=\"%s\"\n", ts, level, event, msg);
  } else {
    dt_buf b = {0};
    dt__buf_printf(&b, "{\"time\":\"%s\",\"level\":\"%s\",\"event\":\"%s\",\"msg\":", ts, level, event);
    dt__buf_json_str(&b, msg);
    dt__buf_puts(&b, "}\n");
    if (b.p) fputs(b.p, stderr);
    dt__free(b.p);
  }
  fflush(stderr);
}

void log_decision(const char *kind, const char *subject, const char *reason) {
  cJSON *d = cJSON_CreateObject();
  char ts[40];
  dt__fmt_time(wall(), ts, sizeof ts);
  cJSON_AddStringToObject(d, "time", ts);
  cJSON_AddStringToObject(d, "kind", kind);
  cJSON_AddStringToObject(d, "subject", subject);
  cJSON_AddStringToObject(d, "reason", reason);
  cJSON_AddItemToArray(D.decisions, d);
  while (cJSON_GetArraySize(D.decisions) > MAX_DECISIONS) cJSON_DeleteItemFromArray(D.decisions, 0);
  snprintf(D.last_decision, sizeof D.last_decision, "%s %s: %s", kind, subject, reason);
  if (D.obs && D.obs->decision) D.obs->decision(D.obs->ud, kind, subject, reason);
  logf_("info", kind, "%s: %s", subject, reason);
}

static void on_requeue(uv_timer_t *t);

/*
** A round runs in two halves so the loop never waits on it: on the loop,
** marks expire, VM pools converge and the store is copied (sorted, so
** rounds are deterministic); on libuv's thread pool, the copy is read into
** manifests, NodePool policies are synced and the plan is made and
** rendered; back on the loop, claims are stored, written ahead and
** launched, bindings nominated, and the requeue timer set. While a round
** is on the pool, the policies belong to it: reloads, disruption passes,
** policy-routed events and polled preemptions wait for its end.
*/
typedef struct round_work {
  uv_work_t req;
  bool disrupt;            /* a disruption pass rather than a provisioning round */
  bool skip_consolidation; /* a pass over the cluster a last one found consolidated */
  consol_print print;      /* the cluster it saw */
  size_t n, npods;    /* objects, and the Pods among them */
  char **key, **json; /* the store, copied; json NULL for a pod the cache keeps */
  bool key_borrowed;  /* key[i] and json[i] are the store's own: the virtual clock runs the round inline */
  uint64_t *gen;
  uint32_t *kept; /* the cache's entry for a pod it keeps at this version, else 0 */
  /* a NodeClaim's pods and event spans in its text (obj.pods_at..event_end),
  ** 4 per object; has_spans[i] when known */
  uint32_t *spans;
  bool *has_spans;
  dt_plan_opts o;
  int rc;
  dt_error err;
  dt_manifests *m;
  dt_plan *p;
  char **claims;      /* the plan's NodeClaims as they launch (one per dt_plan_claim, in its order) ... */
  size_t nclaims;     /* ... as the store keeps them: compact JSON from cJSON, its allocator's */
  dt_disruption *dis; /* or the disruption pass's result */
  char *json_text;
  size_t json_len;
  double ms;
  char *pool_errors;
  dt_buf refused; /* objects the reader refused, left out of this round: "KEY: why" */
  char *notes;    /* what the reader noted, its first lines ("; "-joined), and how many there were */
  size_t nrefused;
  char **managed; /* a disruption pass: the claims this daemon launched and their Nodes, sorted */
  size_t nmanaged;
  DT_VEC(char *) held; /* a disruption pass: the nodes of refused pods (spec.nodeName), sorted */
} round_work;

static void round_free(round_work *w) {
  for (size_t i = 0; i < w->n; i++) {
    if (!w->key_borrowed) {
      dt__free(w->key[i]);
      dt__free(w->json[i]);
    }
  }
  dt__free(w->key);
  dt__free(w->json);
  dt__free(w->gen);
  dt__free(w->kept);
  dt__free(w->spans);
  dt__free(w->has_spans);
  dt_plan_free(w->p);
  dt_manifests_free(w->m);
  for (size_t i = 0; i < w->nclaims; i++) cJSON_free(w->claims[i]);
  dt__free(w->claims);
  dt_disrupt_free(w->dis);
  dt_free(w->json_text);
  dt__free(w->pool_errors);
  dt__free(w->refused.p);
  dt__free(w->notes);
  for (size_t i = 0; i < w->nmanaged; i++) dt__free(w->managed[i]);
  dt__free(w->managed);
  for (size_t i = 0; i < w->held.n; i++) dt__free(w->held.v[i]);
  dt__free(w->held.v);
  dt__free(w);
}

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* What a disruption pass may take away: the claims this daemon launched (a
** Node registered for one is that claim in the pass); other nodes stay with
** their owners, and are not candidates that use up the budgets. */
static bool managed_names(round_work *w) {
  w->managed = dt__calloc(D.insts.n + 1, sizeof *w->managed);
  if (!w->managed) return false;
  for (size_t i = 0; i < D.insts.n; i++)
    if (!(w->managed[w->nmanaged++] = dt__strdup(D.insts.v[i].claim))) return false;
  if (w->nmanaged) qsort(w->managed, w->nmanaged, sizeof *w->managed, name_cmp);
  return true;
}

/* The plan's NodeClaims as the daemon launches them, read through the
** public accessor (one per dt_plan_claim, in its order), each in the compact
** form the store keeps: made here on the thread pool, so that carrying out
** a round of thousands of claims on the loop only files them. False when
** out of memory; true and short when a new policy came meanwhile. */
static bool launched_claims(round_work *w) {
  size_t n = dt_plan_claim_count(w->p);
  if (!(w->claims = dt__calloc(n + 1, sizeof *w->claims))) return false;
  for (size_t i = 0; i < n && !((i & 63) == 63 && *w->o.cancel); i++) {
    size_t len = 0;
    char *text = dt_plan_claim_object(w->p, i, true, &len);
    cJSON *o = text ? cJSON_ParseWithLength(text, len) : NULL;
    dt_free(text);
    if (o) set_annotation(o, DT_A_LAUNCHED, "true"); /* ours: reconciled at a restart, unlike applied claims */
    w->claims[i] = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!w->claims[i]) return false;
    w->nclaims = i + 1;
  }
  return true;
}

/* How many objects ahead a walk over the store asks for the pod cache's
** entry: they are scattered over memory the size of the store's pods. */
#define PREFETCH_AHEAD 8

/* msg logged as an error of event when it is not what *last says, which it
** becomes: what every round or pass would repeat is said when it changes.
** "" says nothing, and the next message is said again. */
static void say_changed(char *last, size_t cap, const char *event, const char *msg) {
  if (*msg && strncmp(msg, last, cap - 1)) logf_("error", event, "%s", msg);
  snprintf(last, cap, "%s", msg);
}

/* On the thread pool: nothing here touches the daemon's state but the
** policies, which the loop leaves alone while D.planning. */
static void round_run(uv_work_t *req) {
  round_work *w = req->data;
  if (!(w->m = dt_manifests_new())) {
    w->rc = dt__err(&w->err, DT_ENOMEM, "out of memory");
    return;
  }
  /* the pods' vector at its final size at once, not grown by copies */
  size_t npods = w->npods;
  if (npods && dt__vec_grow((void **)&w->m->pods.v, &w->m->pods.cap, npods, sizeof *w->m->pods.v)) {
    w->rc = dt__err(&w->err, DT_ENOMEM, "out of memory");
    return;
  }
  DT_VEC(char *) refused_pods = {0}; /* a disruption pass: "ns/name" of the Pods the reader refused */
  for (size_t i = 0; i < w->n && !w->rc; i++) {
    if (i + PREFETCH_AHEAD < w->n) dt__podcache_prefetch(D.podcache, w->kept[i + PREFETCH_AHEAD], true);
    w->rc = *w->o.cancel ? DT_ECANCELED
                         : dt__manifests_add_cached(w->m, D.podcache, w->key[i], w->gen[i], w->kept[i], w->json[i],
                                                    w->json[i] ? strlen(w->json[i]) : 0,
                                                    w->has_spans[i] ? &w->spans[4 * i] : NULL, &w->err);
    /* A Pod, NodePool, EC2NodeClass or VirtualMachinePool the reader refuses (one an earlier version stored, which this one reads
    ** more strictly) is left out of a provisioning round and said, not made to fail every round
    ** and plan nothing: Karpenter leaves a NodePool that fails validation out of scheduling.
    ** The set rolls back what it read of it. In a disruption pass the node such a pod is bound
    ** to would look emptier than it is: the pass holds it (never taken away, no destination for
    ** other pods), and the nodes of a refused NodePool have no pool to take them; a refused
    ** EC2NodeClass leaves its NodePools the catalog's sizes (noted), a refused VirtualMachinePool
    ** its VMs as they are. Anything else
    ** refused (a NodeClaim left out would be launched again) still stops it. */
    if (w->rc == DT_EINVAL && dt__obj_left_out(w->key[i])) {
      if (w->disrupt && !strncmp(w->key[i], "Pod/", 4)) {
        /* and the claims that nominate it (below), which would look empty */
        char *pn = dt__strdup(w->key[i] + 4);
        if (!pn || dt__vec_push(&refused_pods, pn)) {
          dt__free(pn);
          w->rc = dt__err(&w->err, DT_ENOMEM, "out of memory");
          break;
        }
        cJSON *o = w->json[i] ? cJSON_Parse(w->json[i]) : NULL;
        const char *node = dt__jstr(jget(o, "spec"), "nodeName");
        char *c = node && *node ? dt__strdup(node) : NULL;
        if (c && dt__vec_push(&w->held, c)) dt__free(c), c = NULL;
        bool lost = node && *node && !c;   /* out of memory: the pod cannot be held, so the pass stops */
        if (!o && w->json[i]) lost = true; /* not even JSON: where it runs is unknown */
        cJSON_Delete(o);
        if (lost) continue;
      }
      if (w->nrefused++ < 4) dt__buf_printf(&w->refused, "%s%s", w->refused.len ? "; " : "", w->err.msg);
      w->rc = 0;
      w->err.msg[0] = 0;
    }
  }
  /* what depends on the whole store: its CapacityBuffers' chunks */
  if (!w->rc) w->rc = dt_manifests_finish(w->m, &w->err);
  /* what the reader noted (a Service's selector left out, a kind skipped):
  ** its first lines, said by the loop when they change */
  if (!w->disrupt && w->m->notes.len) {
    dt_buf nb = {0};
    size_t lines = 0;
    for (const char *l = w->m->notes.p; *l; lines++) {
      const char *e = strchr(l, '\n');
      size_t n = e ? (size_t)(e - l) : strlen(l);
      if (nb.len < 800) dt__buf_printf(&nb, "%s%.*s", nb.len ? "; " : "", (int)n, l);
      l += n + (e != NULL);
    }
    if (lines > 1) dt__buf_printf(&nb, " (%zu notes)", lines);
    w->notes = nb.oom ? NULL : nb.p;
    if (nb.oom) dt__free(nb.p);
  }
  /* a claim nominating a pod left out holds it as a Node running one does */
  if (refused_pods.n > 1) qsort(refused_pods.v, refused_pods.n, sizeof *refused_pods.v, name_cmp);
  for (size_t i = 0; i < w->m->nodes.n && refused_pods.n && !w->rc; i++) {
    const dt_node *n = &w->m->nodes.v[i];
    bool holds = false;
    for (size_t k = 0; k < n->npods && !holds; k++)
      holds = bsearch(&n->pods[k], refused_pods.v, refused_pods.n, sizeof *refused_pods.v, name_cmp) != NULL;
    char *c = holds ? dt__strdup(n->name) : NULL;
    if (holds && (!c || dt__vec_push(&w->held, c))) {
      dt__free(c);
      w->rc = dt__err(&w->err, DT_ENOMEM, "out of memory");
    }
  }
  for (size_t i = 0; i < refused_pods.n; i++) dt__free(refused_pods.v[i]);
  dt__free(refused_pods.v);
  if (w->rc) return;
  if (w->held.n) qsort(w->held.v, w->held.n, sizeof *w->held.v, name_cmp);
  dt__podcache_sweep(D.podcache); /* the last round's manifests are freed: only this one's pods stay */
  /* the cluster's default spreads, on this set's copies of the pods (a Service
  ** or controller that changed changes them, the kept pods stay as read) */
  if ((w->rc = dt__spread_defaults_apply(w->m, &D.spread_cfg, &w->err))) return;
  if (D.pdir) {
    dt_policy_dir_sync(D.pdir, w->m);
    w->pool_errors = dt__strdup(dt_policy_dir_errors(D.pdir));
    dt_policy_dir_apply(D.pdir, &w->o.pool_policies, &w->o.pool_policy_names, &w->o.npool_policies);
  }
  double t0 = dt__now_ms();
  /* the catalog compiled once for the rounds and passes on it: the same
  ** decisions, without compiling every instance type again (dispatch drops
  ** it when D.cat changes) */
  if (!D.cc && dt__catalog_compile(D.cat, &D.cc, NULL)) D.cc = NULL;
  if (w->disrupt) {
    dt_disrupt_opts o = {.now = w->o.now,
                         .seed = w->o.seed,
                         .policy = w->o.policy,
                         .pool_policies = w->o.pool_policies,
                         .pool_policy_names = w->o.pool_policy_names,
                         .npool_policies = w->o.npool_policies,
                         .cancel = w->o.cancel,
                         .managed = (const char *const *)w->managed,
                         .nmanaged = w->nmanaged,
                         .skip_consolidation = w->skip_consolidation,
                         /* the last round's placements on Nodes: no round runs beside a pass */
                         .assumed_pods = (const char *const *)D.assumed_pods,
                         .assumed_nodes = (const char *const *)D.assumed_nodes,
                         .nassumed = D.nassumed,
                         /* the nodes of pods the reader refused */
                         .held_nodes = (const char *const *)w->held.v,
                         .nheld = w->held.n};
    if ((w->rc = D.cc ? dt__disrupt_run_compiled(D.cat, D.cc, w->m, &o, &w->dis, &w->err)
                      : dt_disrupt_run(D.cat, w->m, &o, &w->dis, &w->err)))
      return;
    w->ms = dt__now_ms() - t0;
    return;
  }
  w->rc = D.cc ? dt__plan_run_compiled(D.cat, D.cc, w->m, &w->o, true, &w->p, &w->err)
               : dt_plan_run(D.cat, w->m, &w->o, &w->p, &w->err);
  if (w->rc) return;
  if (*w->o.cancel) { /* a new policy came while it planned: its result is not carried out */
    w->rc = DT_ECANCELED;
    return;
  }
  w->ms = dt__now_ms() - t0;
  bool claims_ok = launched_claims(w); /* each claim as it launches: one instance type */
  if (claims_ok && *w->o.cancel) {     /* as above, before the plan's rendering (25 ms for 1,000 claims) */
    w->rc = DT_ECANCELED;
    return;
  }
  /* The rendering is not interrupted: a policy that comes during it is seen
  ** by round_done. dovetail-faults can stretch it to a second, so that the
  ** specs show that. */
  if (dt__sim_fault("slow-render")) uv_sleep(1000);
  w->json_text = dt_plan_render(w->p, DT_FORMAT_JSON, &w->json_len);
  if (!claims_ok || !w->json_text) w->rc = dt__err(&w->err, DT_ENOMEM, "out of memory rendering the plan");
}

static void after_round(void);
void reload(const char *why);

/* A carried-out round's plan, freed on the thread pool: a plan of thousands
** of claims takes milliseconds to free, and after dt_plan_run it holds only
** its own results (nothing of the catalog, the cluster or the store). */
typedef struct plan_free_work {
  uv_work_t req;
  dt_plan *p;
} plan_free_work;

static void plan_free_run(uv_work_t *req) { dt_plan_free(((plan_free_work *)req->data)->p); }

static void plan_free_done(uv_work_t *req, int status) {
  (void)status;
  D.plan_frees--;
  dt__free(req->data);
}

/* Free w's plan, off the loop when there is one to leave it to. */
static void plan_free_later(round_work *w) {
  plan_free_work *f = D.virt ? NULL : dt__malloc(sizeof *f);
  if (f) {
    f->p = w->p;
    f->req.data = f;
    if (!uv_queue_work(D.loop, &f->req, plan_free_run, plan_free_done)) {
      D.plan_frees++;
      w->p = NULL;
      return;
    }
    dt__free(f);
  }
  dt_plan_free(w->p); /* inline on the virtual clock, or when it cannot be queued */
  w->p = NULL;
}

/* Back on the loop: carry the plan out. */
static void launch_slices(void);

static void round_done(uv_work_t *req, int status) {
  round_work *w = req->data;
  assert(D.planning); /* one round at a time, and this is it */
  D.planning = false;
  if (D.reload_pending) { /* the policy is free again: the new one decides from the next round */
    D.reload_pending = false;
    reload("file changed during a round");
  }
  /* Stopped for a new policy, or finished after one came (while its plan
  ** rendered): nothing of it is carried out, the new policy plans again. */
  if (!status && (w->rc == DT_ECANCELED || (!w->rc && D.cancel))) {
    logf_("info", "plan", "%s stopped: the policy changed while it ran; planning again",
          w->disrupt ? "disruption pass" : "round");
    if (!w->disrupt) D.round_pending = true;
    round_free(w);
    after_round();
    return;
  }
  char *failed = w->disrupt ? D.pass_error : D.round_error; /* an object the reader refuses fails every pass */
  if (status || w->rc) {
    char msg[sizeof D.round_error];
    snprintf(msg, sizeof msg, "%s%s", w->disrupt ? "disruption pass: " : "",
             status ? "the round was cancelled" : w->err.msg);
    say_changed(failed, sizeof D.round_error, "plan", msg);
    round_free(w);
    after_round();
    return;
  }
  /* NodePool policy errors: a broken file is tried again every round and pass, and says the same until it is fixed */
  say_changed(D.pool_errors, sizeof D.pool_errors, "policy", w->pool_errors ? w->pool_errors : "");
  if (D.policy && *dt_policy_log(D.policy)) { /* its dovetail.log lines, one log line each */
    const char *l = dt_policy_log(D.policy);
    while (*l) {
      const char *e = strchr(l, '\n');
      int n = e ? (int)(e - l) : (int)strlen(l);
      logf_("info", "policy", "%.*s", n, l);
      l += n + (e != NULL);
    }
    dt_policy_log_clear(D.policy);
  }
  say_changed(failed, sizeof D.round_error, "plan", ""); /* it worked: a failure after this is said again */
  if (!w->disrupt) {
    char line[sizeof D.refused] = "";
    if (w->nrefused)
      snprintf(line, sizeof line,
               "%zu objects left out of the round, refused by the reader (replace or delete them): %s%s", w->nrefused,
               w->refused.p ? w->refused.p : "", w->nrefused > 4 ? "; ..." : "");
    say_changed(D.refused, sizeof D.refused, "store", line);
    /* the reader's notes, at a lower level, once each time they change */
    const char *notes = w->notes ? w->notes : "";
    if (*notes && strncmp(notes, D.notes, sizeof D.notes - 1)) logf_("warn", "store", "the reader noted: %s", notes);
    snprintf(D.notes, sizeof D.notes, "%s", notes);
  }
  if (w->disrupt) {
    bool changed = false;
    dt_command_info c;
    dt_disrupt_stats ds;
    dt_disrupt_stats_get(w->dis, &ds);
    D.passes[w->skip_consolidation]++;
    if (!w->skip_consolidation) { /* a pass that found nothing time can change marks the cluster it saw */
      D.consol.valid = ds.consolidated && !ds.commands;
      D.consol.print = w->print;
      D.consol.at = w->o.now;
    }
    for (size_t i = 0; !dt_disrupt_command(w->dis, i, &c); i++) changed |= carry_out(&c);
    if (changed) {
      journal_flush();
      arm_batch();
    }
    round_free(w);
    after_round();
    return;
  }
  double ms = w->ms;
  D.plans++;
  D.plan_ms_sum += ms / 1000;
  for (int b = 0; b < 8; b++)
    if (ms / 1000 <= k_buckets[b]) D.plan_buckets[b]++;
  dt_plan_stats st;
  dt_plan_stats_get(w->p, &st);
  dt_free(D.last_plan);
  D.last_plan = w->json_text;
  D.last_plan_gen++;
  w->json_text = NULL;
  D.pending = st.unschedulable;
  /* Launch every new claim as the plan decided it; the stored NodeClaim
  ** (its applyable YAML) carries the pods it takes. */
  typedef struct claim {
    const char *name, *type, *zone, *ct, *pool;
  } claim;
  DT_VEC(claim) cs = {0};
  dt_claim_info ci;
  for (size_t i = 0; i < w->nclaims && !dt_plan_claim(w->p, i, &ci); i++) {
    claim k = {ci.name, ci.instance_type, ci.zone, ci.capacity_type, ci.nodepool};
    char key[KEY_MAX + 16];
    snprintf(key, sizeof key, "NodeClaim//%s", k.name);
    obj_put_text(key, w->claims[i]); /* in flight from now: the next round does not launch its pods again */
    w->claims[i] = NULL;             /* the store's now */
    if (dt__vec_push(&cs, k)) logf_("error", "plan", "out of memory: NodeClaim %s is not launched", k.name);
  }
  /* Write ahead: the claims are in the state file before any request leaves,
  ** so a crash mid-launch finds them at restart and adopts what the cloud
  ** made for them (launches are idempotent per claim). */
  if (cs.n) journal_flush();
  for (size_t i = 0; i < cs.n; i++) {
    launch_ctx *lc = launch_new(cs.v[i].name, cs.v[i].type, cs.v[i].zone, cs.v[i].ct, cs.v[i].pool);
    if (!lc || dt__vec_push(&D.to_launch, lc)) {
      if (lc) lc_done(lc);
      logf_("error", "plan", "out of memory: NodeClaim %s is not launched", cs.v[i].name);
    }
  }
  dt__free(cs.v);
  launch_slices();
  nominate(w->p);
  plan_free_later(w); /* nothing below reads it */
  D.cost = st.hourly_cost;
  logf_("info", "plan", "round %llu: %zu pending pods, %zu scheduled, %zu new claims, %zu unschedulable, %.1f ms",
        (unsigned long long)D.round, st.pods, st.scheduled, st.nodes, st.unschedulable, ms);
  /* Pods left pending (unschedulable, or deferred for a reservation other
  ** claims hold) are planned again on a timer with backoff, so a fallback
  ** happens by itself when the cluster changes under them. */
  if (st.unschedulable || D.pools_waiting) {
    tm_start(&D.requeue, on_requeue, D.requeue_ms, 0);
    D.requeue_ms = D.requeue_ms * 2 > REQUEUE_MAX_MS ? REQUEUE_MAX_MS : D.requeue_ms * 2;
  } else {
    tm_stop(&D.requeue);
    D.requeue_ms = REQUEUE_BASE_MS;
  }
  round_free(w);
  state_dirty(); /* marks that expired; launches wrote their own */
  after_round();
}

/*
** A round's launches go out a slice per loop turn, so a large round does not
** hold the loop (a policy write, a probe, an event are served between
** slices). They were written ahead; they go in the order the plan made them.
*/
#define LAUNCH_SLICE 64

void launch_waiting(size_t most) {
  size_t n = D.to_launch.n < most ? D.to_launch.n : most;
  if (!n) return; /* nothing waits (the vector may never have been allocated: no memmove from NULL) */
  for (size_t i = 0; i < n; i++) launch_start(D.to_launch.v[i]);
  memmove(D.to_launch.v, D.to_launch.v + n, (D.to_launch.n - n) * sizeof *D.to_launch.v);
  D.to_launch.n -= n;
}

/* A slice of the round's launches a loop turn. On the real loop an idle
** handle: libuv runs a timer re-armed for 0 ms in the same pass over the
** timers, so slices on a timer all ran before the loop looked at its
** sockets again; an active idle handle runs once a turn and keeps the poll
** from blocking. The virtual clock has no sockets: a timer there. */
static void on_launch_tick(uv_timer_t *t) {
  launch_waiting(LAUNCH_SLICE);
  if (D.to_launch.n) tm_start(t, on_launch_tick, 0, 0);
}

static void on_launch_idle(uv_idle_t *h) {
  launch_waiting(LAUNCH_SLICE);
  if (!D.to_launch.n) uv_idle_stop(h);
}

static void launch_slices(void) {
  if (!D.to_launch.n) return;
  if (D.virt)
    tm_start(&D.launch_tick, on_launch_tick, 0, 0);
  else
    uv_idle_start(&D.launch_idle, on_launch_idle);
}

/* What a disruption pass reads, as counts that move when any of it
** changes: the store, the instances, the policy, the catalog. */
static consol_print print_now(void) {
  consol_print f = {D.store_changes, D.insts.n, D.reloads_ok, D.cat_gen};
  return f;
}

static bool print_same(const consol_print *a, const consol_print *b) {
  return a->store == b->store && a->insts == b->insts && a->reloads == b->reloads && a->cat == b->cat;
}

/* Copy the store and queue the work (a round, or a disruption pass). */
void dispatch(bool disrupt) {
  store_sort();
  if (D.cc_stale) {
    dt__catalog_compiled_free(D.cc);
    D.cc = NULL;
    D.cc_stale = false;
  }
  if (!D.podcache) D.podcache = dt__podcache_new();
  round_work *w = D.podcache ? dt__calloc(1, sizeof *w) : NULL;
  if (w) {
    w->key = dt__calloc(D.objs.n + 1, sizeof *w->key);
    w->json = dt__calloc(D.objs.n + 1, sizeof *w->json);
    w->gen = dt__calloc(D.objs.n + 1, sizeof *w->gen);
    w->kept = dt__calloc(D.objs.n + 1, sizeof *w->kept);
    w->spans = dt__calloc(4 * (D.objs.n + 1), sizeof *w->spans);
    w->has_spans = dt__calloc(D.objs.n + 1, sizeof *w->has_spans);
  }
  bool ok = w && w->key && w->json && w->gen && w->kept && w->spans && w->has_spans;
  if (ok) w->key_borrowed = D.virt;
  /* No round runs now (D.planning is false), so the cache can be asked:
  ** a pod it keeps at this version is not copied. */
  for (size_t i = 0; ok && i < D.objs.n; i++) {
    obj *ob = &D.objs.v[i];
    if (i + PREFETCH_AHEAD < D.objs.n) /* a stale hint is only a wasted hint */
      dt__podcache_prefetch(D.podcache, D.objs.v[i + PREFETCH_AHEAD].pc_hint, false);
    uint32_t kept = ob->kind != OBJ_POD && ob->kind != OBJ_NODE
                        ? 0
                        : dt__podcache_find_hinted(D.podcache, ob->key, ob->gen, &ob->pc_hint, &ob->pc_epoch);
    w->key[i] = D.virt ? ob->key : dt__strdup(ob->key); /* inline, the store does not change under it */
    w->json[i] = kept ? NULL : D.virt ? ob->json : dt__strdup(ob->json);
    w->gen[i] = ob->gen;
    w->kept[i] = kept;
    if (!kept && ob->span_gen == ob->gen) { /* its text differs from the kept one's in these places, maybe only */
      w->has_spans[i] = true;
      memcpy(&w->spans[4 * i], (const uint32_t[4]){ob->pods_at, ob->pods_end, ob->event_at, ob->event_end},
             4 * sizeof *w->spans);
    }
    w->n = i + 1;
    ok = w->key[i] && (kept || w->json[i]);
  }
  if (!ok) {
    logf_("error", "plan", "out of memory copying the store; the round is skipped");
    if (w) round_free(w);
    return;
  }
  w->disrupt = disrupt;
  if (disrupt && !managed_names(w)) {
    logf_("error", "plan", "out of memory listing the claims launched; the pass is skipped");
    round_free(w);
    return;
  }
  w->npods = D.nkind[OBJ_POD];
  w->o.now = wall();
  if (disrupt) { /* as Karpenter: consolidation waits while nothing changed, for 5 minutes at most */
    w->print = print_now();
    w->skip_consolidation =
        D.consol.valid && print_same(&D.consol.print, &w->print) && w->o.now - D.consol.at < CONSOLIDATED_FOR_S;
  }
  w->o.seed = disrupt ? D.start_seed ^ ++D.round : ++D.round ^ D.start_seed; /* names differ across restarts */
  w->o.policy = D.policy;
  w->o.packing = D.packing;
  D.cancel = 0;
  w->o.cancel = &D.cancel;
  w->req.data = w;
  D.planning = true;
  if (D.virt) { /* the virtual clock stands still while the round runs */
    round_run(&w->req);
    round_done(&w->req, 0);
    return;
  }
  if (uv_queue_work(D.loop, &w->req, round_run, round_done)) {
    D.planning = false;
    logf_("error", "plan", "cannot queue the round");
    round_free(w);
  }
}

static void plan_round(void) {
  if (D.planning) { /* one round at a time: this one follows it */
    D.round_pending = true;
    return;
  }
  expire_marks();
  converge_pools();
  dispatch(false);
}

void handle_event(cJSON *e, char *action, size_t n);

/* What waited for a round on the thread pool. */
static void after_round(void) {
  if (D.next_cat) {
    dt_catalog_free(D.cat);
    D.cat = D.next_cat;
    D.next_cat = NULL;
    dt__ctl_catalog_changed();
  }
  if (D.reload_pending) {
    D.reload_pending = false;
    reload("file changed during a round");
  }
  for (size_t i = 0; i < D.queued.n; i++) {
    char act[32];
    handle_event(D.queued.v[i], act, sizeof act);
    cJSON_Delete(D.queued.v[i]);
  }
  D.queued.n = 0;
  if (D.round_pending) {
    D.round_pending = false;
    arm_batch();
  }
}

static void on_requeue(uv_timer_t *t) {
  (void)t;
  if (!D.batch_open && D.circuit_until <= wall()) plan_round();
}

static void on_batch(uv_timer_t *t) {
  (void)t;
  tm_stop(&D.idle);
  tm_stop(&D.max);
  D.batch_open = false;
  plan_round();
}

/* A change arrived: (re)start the idle window; the max window bounds it. */
void arm_batch(void) {
  tm_start(&D.idle, on_batch, D.idle_ms, 0);
  if (!D.batch_open) {
    D.batch_open = true;
    tm_start(&D.max, on_batch, D.max_ms, 0);
  }
}

/* ------------------------------------------------------------ reload */

void reload(const char *why) {
  if (!D.policy) return;
  if (D.planning) { /* the round on the thread pool holds the policy: it stops early, and the new
                    ** policy decides the round that follows */
    D.reload_pending = true;
    if (dt__policy_file_changed(D.policy)) D.cancel = 1;
    return;
  }
  dt_error err = {0};
  int changed = 0;
  char ts[40];
  dt__fmt_time(wall(), ts, sizeof ts);
  if (dt_policy_reload(D.policy, &changed, &err)) {
    D.reloads_failed++;
    snprintf(D.reload_result, sizeof D.reload_result, "%s: kept the previous policy: %s", ts, err.msg);
    logf_("error", "reload", "%s (%s): %s; the previous policy stays in force", D.policy_path, why, err.msg);
  } else if (changed) {
    D.reloads_ok++;
    snprintf(D.reload_result, sizeof D.reload_result, "%s: reloaded (hooks: %s)", ts, dt_policy_hooks(D.policy));
    logf_("info", "reload", "%s (%s): reloaded; hooks: %s", D.policy_path, why, dt_policy_hooks(D.policy));
  } else if (!strcmp(why, "SIGHUP")) { /* asked for: said, though a file as it was is nothing to load */
    snprintf(D.reload_result, sizeof D.reload_result, "%s: unchanged on SIGHUP; the policy in force stays (hooks: %s)",
             ts, dt_policy_hooks(D.policy));
    logf_("info", "reload", "%s (SIGHUP): unchanged; the policy in force stays", D.policy_path);
  }
}

/* Delete a stored object as the API does: a NodeClaim's instance leaves the
** books, a Pod leaves the claim it was nominated to (claim, when the caller
** knows it, else every claim is looked at), and a NodePool takes the claims
** this daemon launched for it (below). */
static void pool_deleted(const char *pool);

bool forget(const char *key, const char *claim) {
  if (!obj_del(key)) return false;
  if (!strncmp(key, "NodePool//", 10)) {
    pool_deleted(key + 10);
  } else if (!strncmp(key, "NodeClaim//", 11)) {
    const instance *in = inst_of(key + 11);
    if (in) inst_remove((size_t)(in - D.insts.v));
  } else if (!strncmp(key, "Pod/", 4)) {
    const char *name = key + 4;
    if (claim && unnominate(claim, name)) return true;
    char **held;
    size_t nheld;
    if (nom_holders(name, &held, &nheld)) {
      for (size_t i = 0; i < nheld; i++) {
        unnominate(held[i], name);
        dt__free(held[i]);
      }
      dt__free(held);
      return true;
    }
    size_t n = strlen(name); /* the index is not known (out of memory): every claim read */
    DT_VEC(char *) holders = {0};
    for (size_t i = 0; i < D.objs.n; i++) {
      const obj *ob = &D.objs.v[i];
      if (ob->kind != OBJ_NODE || strncmp(ob->key, "NodeClaim//", 11)) continue;
      for (const char *q = strstr(ob->json, name); q; q = strstr(q + 1, name))
        if ((q[-1] == '"' || q[-1] == ',') && (q[n] == '"' || q[n] == ',')) {
          char *c = dt__strdup(ob->key + 11);
          if (c && dt__vec_push(&holders, c)) dt__free(c);
          break;
        }
    }
    for (size_t i = 0; i < holders.n; i++) {
      unnominate(holders.v[i], name);
      dt__free(holders.v[i]);
    }
    dt__free(holders.v);
  }
  return true;
}

/* Karpenter's NodeClaims are owned by their NodePool: deleting the pool
** deletes them, and their instances go. The claims this daemon launched for
** it are deleted so, each a decision; their pods are planned again (on the
** pools left, or pending). */
static void pool_deleted(const char *pool) {
  DT_VEC(char *) gone = {0};
  for (size_t i = 0; i < D.insts.n; i++) {
    const instance *in = &D.insts.v[i];
    if (!in->pool || strcmp(in->pool, pool)) continue;
    char *c = dt__strdup(in->claim);
    if (c && dt__vec_push(&gone, c)) dt__free(c);
  }
  for (size_t i = 0; i < gone.n; i++) {
    const instance *in = inst_of(gone.v[i]);
    char why[600];
    snprintf(why, sizeof why, "NodePool %s deleted: delete (instance %s)", pool, in ? in->id : "?");
    if (in) delete_instance(gone.v[i], why);
    dt__free(gone.v[i]);
  }
  dt__free(gone.v);
}

/* The policy's say on an interruption: "drain", "keep-offering" or "ignore"
** replace the built-in action (def). */
const char *interruption_action(const char *kind, const instance *in, const char *state, const char *def) {
  static char act[32];
  snprintf(act, sizeof act, "%s", def);
  const dt_hook_field f[] = {{"kind", DT_HF_STRING, kind, 0},
                             {"instanceId", DT_HF_STRING, in->id, 0},
                             {"nodeClaim", DT_HF_STRING, in->claim, 0},
                             {"instanceType", DT_HF_STRING, in->type, 0},
                             {"zone", DT_HF_STRING, in->zone, 0},
                             {"capacityType", DT_HF_STRING, in->ct, 0},
                             {"state", DT_HF_STRING, state ? state : "", 0}};
  const dt_hook_rec ev = {f, 7};
  dt__policy_on_interruption(D.policy, &ev, act, sizeof act);
  return act;
}

/* One interruption event (already checked to carry detail-type and an
** instance id): ignored, noted, or the claim drained and replaced. */
void handle_event(cJSON *e, char *action, size_t n) {
  const char *dtype = dt__jstr(e, "detail-type");
  const cJSON *det = jget(e, "detail");
  const char *id = dt__jstr(det, "instance-id");
  const char *state = dt__jstr(det, "state");
  instance *in = inst_with_id(id);
  D.events++;
  char subj[300], reason[600];
  snprintf(subj, sizeof subj, "instance %s", id);
  if (!in) {
    snprintf(reason, sizeof reason, "%s for an instance this daemon did not launch; ignored", dtype);
    log_decision("event", subj, reason);
    snprintf(action, n, "ignored");
    return;
  }
  bool spot = !strcmp(dtype, "EC2 Spot Instance Interruption Warning");
  bool drain = spot || !strcmp(dtype, "AWS Health Event") ||
               (!strcmp(dtype, "EC2 Instance State-change Notification") && state &&
                (!strcmp(state, "stopping") || !strcmp(state, "stopped") || !strcmp(state, "shutting-down") ||
                 !strcmp(state, "terminated")));
  snprintf(action, n, "noted");
  const char *kind = spot                                                      ? "spot-interruption"
                     : !strcmp(dtype, "EC2 Instance Rebalance Recommendation") ? "rebalance"
                     : !strcmp(dtype, "AWS Health Event")                      ? "scheduled-change"
                                                                               : "state-change";
  const char *act = interruption_action(kind, in, state, drain ? (spot ? "drain" : "keep-offering") : "ignore");
  drain = strcmp(act, "ignore") != 0;
  if (!drain) {
    snprintf(reason, sizeof reason, "%s: no action%s", dtype,
             !strcmp(kind, "rebalance") ? " (as Karpenter)"
             : D.policy                 ? " (policy on_interruption)"
                                        : "");
    log_decision("event", subj, reason);
    return;
  }
  if (!strcmp(act, "drain") && (spot || strcmp(in->ct, "spot") == 0))
    mark_unavailable(in->ct, in->type, in->zone, spot ? "spot interruption warning" : dtype, D.ttl);
  char key[KEY_MAX + 16];
  snprintf(key, sizeof key, "NodeClaim//%s", in->claim);
  snprintf(reason, sizeof reason, "%s: drain NodeClaim %s and replace its pods", dtype, in->claim);
  log_decision("interruption", subj, reason);
  /* Its instance goes too, as when Karpenter deletes an interrupted
  ** NodeClaim: left running, an instance the books no longer hold is billed
  ** until a poll deletes it as an orphan, and for ever where none may (no
  ** state file). One already going away is left to finish. */
  if (!state || (strcmp(state, "shutting-down") && strcmp(state, "terminated"))) D.prov->terminate(in->id);
  obj_del(key);
  node_gone(in->claim, in->id);
  inst_remove((size_t)(in - D.insts.v));
  snprintf(action, n, "replaced");
  journal_flush();
  arm_batch();
}

/* Everything the daemon holds, released (at a stop, or a start that fails). */
void ctl_free(void) {
  assumed_free();
  gone_free();
  for (size_t i = 0; i < D.to_launch.n; i++) lc_done(D.to_launch.v[i]);
  dt__free(D.to_launch.v);
  for (size_t i = 0; i < D.objs.n; i++) {
    dt__free(D.objs.v[i].key);
    cJSON_free(D.objs.v[i].json);
    dt__free(D.objs.v[i].pid);
  }
  dt__free(D.objs.v);
  dt__free(D.dirty.v);
  dt__symtab_free(&D.keys);
  dt__free(D.slot.v);
  for (size_t i = 0; i < D.insts.n; i++) inst_free(&D.insts.v[i]);
  dt__free(D.insts.v);
  dt__namemap_free(&D.inst_ids);
  dt__namemap_free(&D.inst_claims);
  dt__namemap_free(&D.alone);
  for (size_t i = 0; i < D.alone_keys.n; i++) dt__free(D.alone_keys.v[i]);
  dt__free(D.alone_keys.v);
  nom_free_all();
  for (size_t i = 0; i < D.replacing.n; i++) {
    dt__free(D.replacing.v[i].claim);
    dt__free(D.replacing.v[i].olds);
    dt__free(D.replacing.v[i].why);
  }
  dt__free(D.replacing.v);
  for (size_t i = 0; i < D.vm_actions.n; i++) dt__free(D.vm_actions.v[i].pool);
  dt__free(D.vm_actions.v);
  for (size_t i = 0; i < D.failing.n; i++) dt__free(D.failing.v[i].key);
  dt__free(D.failing.v);
  for (size_t i = 0; i < D.doubts.n; i++) dt__free(D.doubts.v[i].claim);
  dt__free(D.doubts.v);
  for (size_t i = 0; i < D.sim_ice.n; i++) dt__free(D.sim_ice.v[i]);
  dt__free(D.sim_ice.v);
  cJSON_Delete(D.decisions);
  for (size_t i = 0; i < D.queued.n; i++) cJSON_Delete(D.queued.v[i]);
  dt__free(D.queued.v);
  dt_free(D.last_plan);
  dt_free(D.last_pools);
  dt__free((char *)D.token);
  dt__free(D.jbuf.p);
  dt_policy_dir_free(D.pdir);
  dt__mf_pod_free(&D.spread_cfg);
  dt_policy_free(D.policy);
  dt__catalog_compiled_free(D.cc); /* before the catalog it was compiled from */
  dt_catalog_free(D.cat);
  dt_catalog_free(D.next_cat);
  dt__free(D.vt.v);
  dt__podcache_free(D.podcache);
  memset(&D, 0, sizeof D);
}

/* ------------------------------------------------------------ the virtual clock's driver */

int dt__ctl_start_virtual(const dt_ctl_config *c, dt_error *err) {
  ctl_free();
  D.virt = true;
  D.quiet = true;
  D.vnow = c->start_ms;
  D.idle_ms = c->idle_ms ? c->idle_ms : 1000;
  D.max_ms = c->max_ms ? c->max_ms : 10000;
  D.disrupt_ms = c->disrupt_ms;
  D.ttl = c->ttl_s ? c->ttl_s : 180;
  D.preempt_ttl = c->preempt_ttl_s ? c->preempt_ttl_s : 3600;
  D.unhealthy_s = c->unhealthy_s ? c->unhealthy_s : 300;
  D.startup_timeout_s = c->startup_timeout_s ? c->startup_timeout_s : 900;
  D.max_unhealthy = 100;
  D.max_unhealthy_pct = true;
  D.provider = "simulated";
  D.requeue_ms = REQUEUE_BASE_MS;
  D.packing = c->packing;
  D.cat = c->cat;
  D.policy = c->policy;
  D.cloud = c->cloud;
  D.prov = D.cloud ? &dt__provider_virtual : &dt__provider_sim;
  D.obs = c->obs;
  D.start_seed = c->seed;
  D.jitter = c->seed;
  D.ready = true;
  D.decisions = cJSON_CreateArray();
  if (!D.decisions) return dt__err(err, DT_ENOMEM, "out of memory");
  if (c->policy_dir && dt_policy_dir_open(c->policy_dir, &D.pdir, err)) return err ? err->code : DT_EINVAL;
  if (c->scheduler_config && dt__spread_defaults_read(c->scheduler_config, &D.spread_cfg, err))
    return err ? err->code : DT_EINVAL;
  if (D.disrupt_ms) tm_start(&D.disrupt, on_disrupt, D.disrupt_ms, D.disrupt_ms);
  return 0;
}

void dt__ctl_stop(void) {
  /* launches still waiting for the cloud's answer hold memory of their own */
  while (D.vt.n) {
    vtimer v = D.vt.v[--D.vt.n];
    if (v.cb == on_cloud_answer || v.cb == on_node_up) lc_free((uv_handle_t *)v.t);
  }
  D.cat = NULL;    /* borrowed */
  D.policy = NULL; /* borrowed */
  ctl_free();
}

int dt__ctl_apply(const cJSON *o, dt_error *err) {
  char key[KEY_MAX];
  const char *why;
  if (obj_key(o, key, sizeof key, &why)) return dt__err(err, DT_EINVAL, "%s", why);
  if (obj_put(key, o)) return dt__err(err, DT_ENOMEM, "out of memory storing %s", key);
  if (!strncmp(key, "Node//", 6)) node_applied(o); /* as a Node PUT through the API */
  D.requeue_ms = REQUEUE_BASE_MS;
  arm_batch();
  return 0;
}

bool dt__ctl_delete(const char *key, const char *claim) {
  if (!forget(key, claim)) return false;
  if (strncmp(key, "Pod/", 4)) arm_batch(); /* a pod that goes leaves nothing to provision */
  return true;
}

void dt__ctl_event(cJSON *e, char *action, size_t n) { handle_event(e, action, n); }

void dt__ctl_catalog_changed(void) {
  D.cc_stale = true;
  D.cat_gen++;
}

size_t dt__ctl_pods(void) { return D.nkind[OBJ_POD]; }

cJSON *dt__ctl_get(const char *key) {
  int at = obj_find(key);
  return at < 0 ? NULL : cJSON_Parse(D.objs.v[at].json);
}
