/*
** controller.h: what the controller's files share (controller.c: the clock,
** rounds, reloads, events and the virtual clock's driver; ctl_store.c: the
** object store, instances and the state file; ctl_launch.c: launches,
** deletes and the providers; ctl_claims.c: nominations and replacements;
** ctl_disrupt.c: disruption, remediation and startup timeouts;
** ctl_vmpools.c: VirtualMachinePools). Internal to the command: the names
** below map to dt__ctl_ symbols.
*/
#ifndef DT_CONTROLLER_H
#define DT_CONTROLLER_H

#include "daemon.h"
#include "model.h"
#include "provider.h"

/* A launch under way: the claim, its offering, its attempts. */
typedef struct launch_ctx {
  char *claim, *type, *zone, *ct, *pool;
  int attempt;
  uv_timer_t retry;
  dt_launch_outcome outcome; /* a simulated cloud's answer, due when the retry timer fires */
  char id[128];
  int64_t startup_ms; /* then its node initializes after this long; < 0 never */
  uint64_t round;     /* the round that launched it */
  bool not_sent;      /* failed before anything reached the cloud (its circuit open) */
} launch_ctx;

#define dispatch            dt__ctl_dispatch
#define interruption_action dt__ctl_interruption_action
#define log_decision        dt__ctl_log_decision
#define tm_active           dt__ctl_tm_active
#define tm_close            dt__ctl_tm_close
#define tm_init             dt__ctl_tm_init
#define being_replaced      dt__ctl_being_replaced
#define claim_get           dt__ctl_claim_get
#define claim_pods          dt__ctl_claim_pods
#define claim_put           dt__ctl_claim_put
#define claim_running       dt__ctl_claim_running
#define launch_group        dt__ctl_launch_group
#define nominate            dt__ctl_nominate
#define pod_event           dt__ctl_pod_event
#define put_in              dt__ctl_put_in
#define replace_with        dt__ctl_replace_with
#define replacement_done    dt__ctl_replacement_done
#define set_annotation      dt__ctl_set_annotation
#define unnominate          dt__ctl_unnominate
#define carry_out           dt__ctl_carry_out
#define delete_instance     dt__ctl_delete_instance
#define expire_marks        dt__ctl_expire_marks
#define launch_claim        dt__ctl_launch_claim
#define launch_new          dt__ctl_launch_new
#define launch_start        dt__ctl_launch_start
#define lc_done             dt__ctl_lc_done
#define lc_free             dt__ctl_lc_free
#define mark_unavailable    dt__ctl_mark_unavailable
#define on_cloud_answer     dt__ctl_on_cloud_answer
#define on_node_up          dt__ctl_on_node_up
#define add_instance        dt__ctl_add_instance
#define inst_free           dt__ctl_inst_free
#define inst_of             dt__ctl_inst_of
#define inst_with_id        dt__ctl_inst_with_id
#define inst_remove         dt__ctl_inst_remove
#define journal_flush       dt__ctl_journal_flush
#define manifests           dt__ctl_manifests
#define node_instance       dt__ctl_node_instance
#define obj_del             dt__ctl_obj_del
#define obj_find            dt__ctl_obj_find
#define store_sort          dt__ctl_store_sort
#define converge_pools      dt__ctl_converge_pools

/* controller.c */
void dispatch(bool disrupt);
const char *interruption_action(const char *kind, const instance *in, const char *state, const char *def);
void log_decision(const char *kind, const char *subject, const char *reason);
bool tm_active(uv_timer_t *t);
void tm_close(uv_timer_t *t, uv_close_cb cb);
void tm_init(uv_timer_t *t);

/* ctl_claims.c */
bool being_replaced(const char *claim);
cJSON *claim_get(const char *claim);
/* Whether the store holds the NodeClaim named claim. */
bool claim_stored(const char *claim);
char *claim_pods(const char *claim);
void claim_put(const char *claim, cJSON *o);
void claim_running(const char *claim);
void launch_group(uint64_t group);
void nominate(const dt_plan *p);
void assumed_free(void);
void pod_event(cJSON *o);
void put_in(cJSON *o, const char *field, const char *key, const char *v);
void replace_with(const char *name, const char *pool, const char *type, const char *zone, const char *ct,
                  const dt_label_info *labels, size_t nlabels, const char *pods, const char *olds, const char *why,
                  uint64_t group, double price, const dt_resource_info *req, size_t nreq);
size_t claim_pinned_labels(const cJSON *claim, dt_label_info *out, size_t max);
void replacement_done(const char *claim, bool ok);
void set_annotation(cJSON *o, const char *k, const char *v);
bool unnominate(const char *claim, const char *name);

/* ctl_disrupt.c */
bool carry_out(const dt_command_info *c);

/* ctl_launch.c */
void delete_instance(const char *claim, const char *why);
void expire_marks(void);
void launch_claim(const char *claim, const char *type, const char *zone, const char *ct, const char *pool);
launch_ctx *launch_new(const char *claim, const char *type, const char *zone, const char *ct, const char *pool);
void launch_start(launch_ctx *lc);
void lc_done(launch_ctx *lc);
void lc_free(uv_handle_t *h);
void mark_unavailable(const char *ct, const char *type, const char *zone, const char *why, int64_t ttl);
void on_cloud_answer(uv_timer_t *t);
void on_node_up(uv_timer_t *t);

/* ctl_store.c */
int add_instance(const char *id, const char *claim, const char *type, const char *zone, const char *ct,
                 const char *pool, double price, int64_t launched);
void inst_free(instance *in);
/* The instance of a claim, or of an id; NULL when none is held. */
instance *inst_of(const char *claim);
instance *inst_with_id(const char *id);
void inst_remove(size_t i);
int journal_flush(void);
dt_manifests *manifests(dt_error *err);
const instance *node_instance(const cJSON *node);
bool obj_del(const char *key);
int obj_find(const char *key);
void store_sort(void);

/* ctl_vmpools.c */
void converge_pools(void);

/* sim_fault.c: off in dovetail; in dovetail-faults, DOVETAIL_SIM_FAULT
** names the one fault on (the daemon's: slow-render). */
bool dt__sim_fault(const char *name);

#endif
