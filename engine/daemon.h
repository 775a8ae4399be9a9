/*
** daemon.h: what the controller (controller.c) and the daemon's front
** (serve.c: HTTP API, options, signals) share. Internal to the command.
**
** The controller's state is one struct, dt__daemon (D): the object store,
** the instances, the launches and replacements in flight, the clock and the
** metrics. The functions below are the controller's, under the short names
** both files use (each maps to a dt__ctl_ symbol).
*/
#ifndef DT_DAEMON_H
#define DT_DAEMON_H

#include "ctl.h"
#include "httpd.h"
#include "internal.h"
#include "model.h"

#include "hooks.h"

#include <uv.h>

#define MAX_DECISIONS   200
#define KEY_MAX         DT_KEY_MAX
#define obj_key         dt__obj_key
#define REQUEUE_BASE_MS 1000
#define REQUEUE_MAX_MS  300000

/* What a stored object is, by its key's kind (OBJ_NODE: a Node or a
** NodeClaim, as the round's pod cache keeps them) */
enum { OBJ_POD, OBJ_NODE, OBJ_MARK, OBJ_VMPOOL, OBJ_OTHER, OBJ_KINDS };

typedef struct obj {
  char *key;    /* Kind/namespace/name */
  char *json;   /* the object, compact JSON */
  uint64_t gen; /* changes with every put of the object (rounds keep parsed pods by it) */
  dt_sym sym;   /* its key in D.keys */
  /* A NodeClaim's nominated pods and last pod event, where its text holds
  ** them (ctl_claims.c, unnominate): valid while span_gen == gen */
  uint64_t span_gen;
  uint32_t pods_at, pods_end, event_at, event_end;
  uint32_t pc_hint, pc_epoch; /* a Pod's entry in the round's pod cache (dt__podcache_find_hinted) */
  uint8_t kind;               /* OBJ_* */
  char *pid; /* a Node's spec.providerID, read when it is put (node_gone looks for machines by it); else NULL */
} obj;

typedef struct nom_entry {
  char *pod, *claim; /* NULL: a free entry (next: the next free one, + 1) */
  int32_t next;
} nom_entry;

typedef struct instance {
  char *id, *claim, *type, *zone, *ct, *pool;
  double price;
  int64_t launched;
  int64_t down_since; /* the cloud reports it stopped or deallocated since; 0 when running */
  int64_t missing_since;  /* the first listing in a row that left it out; 0 when the last one had it */
  unsigned missing_polls; /* listings in a row that left it out */
  bool initialized;   /* its node registered and initialized */
  /* Its books vouch for it: read from the state, adopted for a claim held,
  ** or listed by a poll since its launch. A launch not yet listed does not
  ** count toward trusting a listing's orphans (ctl_launch.c). */
  bool vouched;
} instance;

typedef struct replacing {
  char *claim; /* the replacement */
  char *olds;  /* the claims it replaces, comma-separated */
  char *why;
  uint64_t group; /* the replacements of one command: the old claims go once all have launched */
  bool launched;
} replacing;

typedef struct pool_count {
  char *pool; /* "namespace/name" */
  uint64_t n[4];
} pool_count;

typedef struct doubt {
  char *claim;
  int64_t until; /* wall seconds: forgotten then */
} doubt;

typedef struct failing {
  char *key;      /* "type/zone/capacity-type" */
  unsigned count; /* rounds in a row whose launches there failed */
  uint64_t round; /* the last of them */
} failing;

/* A timer on the virtual clock: due at a virtual time, in arming order. */
typedef struct vtimer {
  uv_timer_t *t;
  uv_timer_cb cb;
  int64_t due;
  uint64_t seq, repeat;
} vtimer;

/* What a disruption pass saw, as counts that move when it changes (see
** print_now in controller.c). */
typedef struct consol_print {
  uint64_t store;   /* D.store_changes */
  size_t insts;     /* instances held */
  uint64_t reloads; /* policy reloads */
  uint64_t cat;     /* catalog changes */
} consol_print;

/* Karpenter revalidates a "consolidated" cluster after 5 minutes whatever
** happens (its ConsolidationState timestamp). */
#define CONSOLIDATED_FOR_S 300

/* A machine the daemon let go (node_gone). */
typedef struct gone_machine {
  char *claim, *id;
  int64_t at;
} gone_machine;

typedef struct dtd {
  uv_loop_t *loop;
  dt_httpd http;
  uv_timer_t idle, max, debounce;
  uv_signal_t sighup, sigterm, sigint;
  uv_fs_event_t watch;
  bool watching, batch_open, stopping;
  /* configuration */
  const char *listen_host, *state_path, *policy_path, *token, *log_format;
  int port;
  uint64_t idle_ms, max_ms;
  int64_t ttl; /* unavailable marks, seconds */
  dt_httpd_limits http_lim; /* the HTTP API's limits */
  DT_VEC(char *) sim_ice; /* "type/zone/capacity-type" out of capacity in the sim cloud */
  const char *provider, *cloud_url, *cluster;
  uint64_t poll_ms, timeout_ms;
  size_t cloud_conns; /* requests to the cloud at once */
  size_t cloud_reply; /* the longest reply read from it */
  int retries;
  uv_timer_t poll, circuit_timer, delete_retry; /* delete_retry: the http provider's failed deletes */
  int64_t circuit_until;
  unsigned consecutive_failures;
  bool ready;
  bool state_valid;        /* a state file this daemon can trust was read or written */
  bool replaying, recover; /* reading the journal back; --recover: past a damaged record */
  dt_buf jbuf;             /* journal records not yet appended */
  size_t jsize, snapshot_size;
  char catalog_etag[256];
  uint64_t jitter;
  uint64_t provider_err;
  uint64_t start_seed;
  uv_timer_t state_timer, disrupt;
  uint64_t disrupt_ms;
  uv_timer_t again; /* a round after failed launches, so no pod is left waiting */
  dt_catalog *cat;
  dt_policy *policy;
  /* state */
  DT_VEC(obj) objs;
  dt_symtab keys;                 /* object keys, interned */
  DT_VEC(int32_t) slot;           /* key symbol -> index in objs, -1 when deleted */
  bool sorted;                    /* objs in key order */
  size_t clean_n;                 /* objs[0, clean_n) in key order as last sorted, but for those at dirty[] */
  DT_VEC(uint32_t) dirty;         /* slots below clean_n a delete moved another object into */
  size_t nkind[OBJ_KINDS];        /* objs of each kind */
  uint64_t obj_gen;               /* the last obj.gen given */
  uint64_t store_changes;         /* objects put or deleted so far */
  uint64_t cat_gen;               /* catalog changes so far */
  struct {
    bool valid; /* the last pass that ran consolidation found the cluster consolidated */
    consol_print print;
    int64_t at; /* the clock (wall()) of that pass */
  } consol;
  uint64_t passes[2];             /* disruption passes that ran consolidation, that skipped it */
  dt_podcache *podcache;          /* parsed pods, kept from round to round; only a round uses it */
  struct dt_compiled_catalog *cc; /* D.cat compiled for rounds (a round makes it, on first use) */
  bool cc_stale;                  /* D.cat changed: the next dispatch drops cc */
  DT_VEC(instance) insts;
  /* D.insts by id and by claim: their index, keyed by the instances' own
  ** strings (a swap-remove moves the pointers with them). A claim held by
  ** two instances maps to one of them; inst_claim_dups counts such adds. */
  dt_namemap inst_ids, inst_claims;
  /* This cluster's instances a poll left alone as unaccounted for
  ** (ctl_launch.c): left alone for the life of the process; the keys are
  ** alone_keys' */
  dt_namemap alone;
  DT_VEC(char *) alone_keys;
  size_t inst_claim_dups;
  /* The NodeClaims each pod is nominated to (their dovetail.dev/pods
  ** annotation): pod name (ns/name) -> its first entry in nom_e, keyed by
  ** that entry's own copy of the name; each entry names a claim and the
  ** next entry of the same pod (-1 none); free entries chain from nom_free
  ** (index + 1, 0 none). Kept at every put and delete of a claim; nom_oom:
  ** an update failed, and lookups read every claim instead. */
  dt_namemap nom;
  DT_VEC(nom_entry) nom_e;
  int32_t nom_free;
  bool nom_oom;
  DT_VEC(replacing) replacing; /* replacements launching before the claims they replace go */
  DT_VEC(failing) failing;     /* offerings whose launches keep failing */
  DT_VEC(doubt) doubts;        /* claims whose launch failed where the cloud may still have launched it */
  cJSON *decisions;            /* recent, newest last */
  char *last_plan, *last_pools;
  uint64_t last_plan_gen, last_pools_gen; /* bumped with each: the API's shared copies follow them */
  DT_VEC(pool_count) vm_actions; /* per VirtualMachinePool: create, delete, update, heal */
  size_t pools_waiting;
  bool planning, round_pending, reload_pending; /* a round on the thread pool; what waits for it */
  unsigned plan_frees;                          /* carried-out rounds' plans being freed on the thread pool */
  volatile int cancel;                          /* set on the loop: the round on the pool stops early */
  DT_VEC(cJSON *) queued;                       /* events that need the policy, queued during a round */
  char pool_errors[1200];                       /* the last round's NodePool policy errors */
  char refused[1200];                           /* the last round's objects the reader refused */
  char notes[1200];                             /* the last round's reader notes (fields left out, kinds skipped) */
  char round_error[600], pass_error[600];       /* the last round's and pass's failure, "" none */
  /* the last round's pending pods placed on Nodes (the kube-scheduler binds them): held there in
  ** disruption passes until bound, as Karpenter's consolidation schedules pending pods too */
  char **assumed_pods, **assumed_nodes;
  size_t nassumed;
  /* machines the daemon let go (deleted, or gone from the cloud), for an hour: a Node naming
  ** one (its claim's name, or a providerID ending in its id) is stored as being deleted */
  DT_VEC(gone_machine) gone;
  dt_catalog *next_cat;                         /* a refreshed catalog waiting for the round to end */
  uint64_t round, seq, groups;
  char reload_result[600];
  /* metrics */
  double plan_ms_sum, cost;
  uint64_t plan_buckets[8], plans, pending, launched[3], reloads_ok, reloads_failed, provider_ok, provider_ice;
  uint64_t events, deleted, remediations, remediation_paused;
  uint64_t orphans_deleted;              /* instances deleted that no claim held */
  size_t held_back;                      /* instances a listing gone wrong left out, not forgotten */
  int64_t preempt_ttl;                   /* unavailable marks for polled preemptions, seconds */
  int64_t unhealthy_s;                   /* a node NotReady (or its instance stopped) this long is replaced */
  int64_t startup_timeout_s;             /* a launched claim not initialized this long is deleted */
  const char *registration;              /* launch | node | auto: when a launched claim counts as initialized */
  bool seen_node;                        /* a Node object was ever stored (--registration auto) */
  uint64_t max_unhealthy;                /* remediation stops above this many unhealthy nodes of a pool */
  bool max_unhealthy_pct;                /* ... or this percentage */
  uv_timer_t requeue, lag;               /* pending pods planned again; the loop's lag measured */
  uv_timer_t launch_tick;                /* a round's launches, a slice per loop turn (the virtual clock) */
  uv_idle_t launch_idle;                 /* the same on the real loop */
  DT_VEC(struct launch_ctx *) to_launch; /* launches of claims written ahead, not started yet */
  uint64_t requeue_ms;                   /* the requeue backoff, doubling to 5 minutes */
  uint64_t lag_buckets[8], lag_count;
  double lag_sum, lag_expect;
  dt_policy_dir *pdir; /* NodePools' own policies */
  const char *policy_dir;
  /* --scheduler-config: the cluster's default spreads, read at the start
  ** and given to every round's and pass's pods (nspread 0: none) */
  const char *scheduler_config;
  dt_podspec spread_cfg;
  char config_result[600];
  /* the clock: libuv's, or a virtual one (dovetail simulate) */
  bool virt;
  int64_t vnow; /* virtual time, Unix milliseconds */
  DT_VEC(struct vtimer) vt;
  uint64_t vseq;
  dt_packing packing;
  const dt_ctl_cloud *cloud;      /* a simulated cloud in place of sim/http */
  const struct dt_provider *prov; /* where launches and deletes go (provider.h) */
  const dt_ctl_observer *obs;
  bool quiet;               /* no log lines (the simulator keeps its own record) */
  char last_decision[1600]; /* "kind subject: reason" of the newest decision */
} dtd;

/* The one controller of the process. */
extern dtd dt__daemon;
#define D dt__daemon

extern const double dt__plan_buckets[8], dt__lag_buckets[8];
#define k_buckets     dt__plan_buckets
#define k_lag_buckets dt__lag_buckets

static inline cJSON *jget(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }
/* Whether object o's status condition of this type says True (its last entry, as the manifest reader). */
static inline bool cond_true(const cJSON *o, const char *type) {
  bool yes = false;
  const cJSON *c;
  cJSON_ArrayForEach(c, jget(jget(o, "status"), "conditions")) {
    const char *t = dt__jstr(c, "type"), *s = dt__jstr(c, "status");
    if (t && s && !strcmp(t, type)) yes = !strcmp(s, "True");
  }
  return yes;
}

#define arm_batch        dt__ctl_arm_batch
#define handle_event     dt__ctl_handle_event
#define load_state       dt__ctl_load_state
#define logf_            dt__ctl_logf_
#define wall             dt__ctl_wall
#define obj_put          dt__ctl_obj_put
#define obj_put_text     dt__ctl_obj_put_text
#define obj_put_node     dt__ctl_obj_put_node
#define on_disrupt       dt__ctl_on_disrupt
#define on_poll_timer    dt__ctl_on_poll_timer
#define save_state       dt__ctl_save_state
#define state_dirty      dt__ctl_state_dirty
#define tm_start         dt__ctl_tm_start
#define tm_stop          dt__ctl_tm_stop
#define forget           dt__ctl_forget
#define reload           dt__ctl_reload
#define ctl_free         dt__ctl_serve_free
#define node_applied     dt__ctl_node_applied
#define node_up          dt__ctl_node_up
#define awaits_node      dt__ctl_awaits_node
#define node_up_for      dt__ctl_node_up_for
#define node_gone        dt__ctl_node_gone
#define gone_free        dt__ctl_gone_free
#define gone_at          dt__ctl_gone_at
#define nom_holders      dt__ctl_nom_holders
#define nom_free_all     dt__ctl_nom_free_all

/* the clock: now (Unix seconds), and timers on it */
int64_t wall(void);
void tm_start(uv_timer_t *t, uv_timer_cb cb, uint64_t ms, uint64_t repeat);
void tm_stop(uv_timer_t *t);
void logf_(const char *level, const char *event, const char *fmt, ...) DT_PRINTF(3, 4);

/* the store: objects in (a round follows the batch window), out */
int obj_put(const char *key, const cJSON *o);
int obj_put_text(const char *key, char *json);   /* json: cJSON's text, owned by the store from here */
int obj_put_node(const char *key, char *json, const cJSON *n); /* ... a Node's, n its parsed form (or NULL) */
bool forget(const char *key, const char *claim); /* delete; a Pod leaves its claim */
/* The claims whose dovetail.dev/pods lists pod (ns/name), copied (the
** caller frees each and the array); false when that is not known (out of
** memory), and the caller reads the claims themselves. */
bool nom_holders(const char *pod, char ***out, size_t *n);
void nom_free_all(void);
void node_applied(const cJSON *node);            /* a Node stored: its claim's status.nodeName, or deleting */
void node_up(const char *claim);                 /* a launched claim's node initialized (ctl_launch.c) */
bool awaits_node(void);                          /* --registration: a launched claim waits for its Node */
bool node_up_for(const char *claim, const char *id); /* a stored Node of that machine has initialized */
void node_gone(const char *claim, const char *id); /* the machine let go: its Node deleting */
void gone_free(void);                              /* the machines let go, forgotten (at a stop) */
int64_t gone_at(const char *id);                   /* when the instance id was let go (the latest), or -1 */
void arm_batch(void);

/* the state file: read at start, written whole, changes journaled */
int load_state(dt_error *err);
int save_state(void);
void state_dirty(void);

/* the controller's own timers and events */
void on_disrupt(uv_timer_t *t);    /* remediation, then a disruption pass */
void on_poll_timer(uv_timer_t *t); /* the http provider's instances and catalog */
void handle_event(cJSON *e, char *action, size_t n);
void reload(const char *why);     /* the policy file again; the old one stays on error */
void ctl_free(void);              /* everything the controller holds */
void launch_waiting(size_t most); /* up to most of the round's waiting launches (SIZE_MAX: all) */

/* the HTTP API (api.c): every request of the daemon's listener */
int dt__serve_on_req(h2o_handler_t *self, h2o_req_t *req);
void dt__serve_api_close(void); /* drops the API's shared replies */

#endif
