/*
** reader.h: what the manifest readers share (internal). manifest.c holds the
** field parsers and the table of readers; mf_nodepool.c, mf_pod.c and
** mf_kubevirt.c read their kinds. The names below map to dt__mf_ symbols.
*/
#ifndef DT_READER_H
#define DT_READER_H

#include "model.h"

#include <stdarg.h>
#include <stdbool.h>

/* Requests above these are typing mistakes, not workloads. */
#define MAX_CPU_MILLI   (1000000LL * 1000)          /* 1,000,000 cores */
#define MAX_BYTES_MILLI (((int64_t)1 << 50) * 1000) /* 1 PiB */
#define MAX_REPLICAS    DT_MAX_REPLICAS

typedef struct mctx {
  dt_manifests *m;
  const char *file; /* owned by m->files */
  const char *kind;
  char obj[512]; /* "Pod default/web" */
  dt_error *err;
  int code; /* the error being reported: DT_ENOMEM stays once it happened */
} mctx;

/* Where a field is, as "PATH.LIST[I]TAIL" (or "PATHTAIL" without a list):
** written out only when an error names it. */
typedef struct where {
  const char *path, *list;
  size_t i;
  const char *tail;
} where;

#define mf_bad                     dt__mf_bad
#define mf_check_duplicate         dt__mf_check_duplicate
#define mf_check_request           dt__mf_check_request
#define mf_created_at              dt__mf_created_at
#define mf_condition               dt__mf_condition
#define mf_ctrl_revision           dt__mf_ctrl_revision
#define mf_failed                  dt__mf_failed
#define mf_get                     dt__mf_get
#define mf_get_str                 dt__mf_get_str
#define mf_is_int_in               dt__mf_is_int_in
#define mf_known_fields            dt__mf_known_fields
#define mf_edit_distance           dt__mf_edit_distance
#define mf_one_of                  dt__mf_one_of
#define mf_nearest                 dt__mf_nearest
#define mf_kubevirt                dt__mf_kubevirt
#define mf_itype                   dt__mf_itype
#define mf_itype_free              dt__mf_itype_free
#define mf_itypes_resolve          dt__mf_itypes_resolve
#define mf_list_room               dt__mf_list_room
#define mf_meta                    dt__mf_meta
#define mf_mreqs_free              dt__mf_mreqs_free
#define mf_node                    dt__mf_node
#define mf_node_free               dt__mf_node_free
#define mf_nodeclass               dt__mf_nodeclass
#define mf_not_ready               dt__mf_not_ready
#define mf_nodeclass_free          dt__mf_nodeclass_free
#define mf_nodepool                dt__mf_nodepool
#define mf_nodeoverlay             dt__mf_nodeoverlay
#define mf_overlay_free            dt__mf_overlay_free
#define mf_oom                     dt__mf_oom
#define mf_parse_duration_or_never dt__mf_parse_duration_or_never
#define mf_parse_kvs               dt__mf_parse_kvs
#define mf_parse_mreqs             dt__mf_parse_mreqs
#define mf_parse_rlist             dt__mf_parse_rlist
#define mf_parse_selector          dt__mf_parse_selector
#define mf_parse_taints            dt__mf_parse_taints
#define mf_parse_tolerations       dt__mf_parse_tolerations
#define mf_pdb                     dt__mf_pdb
#define mf_pdb_free                dt__mf_pdb_free
#define mf_persistent_volume       dt__mf_persistent_volume
#define mf_pod                     dt__mf_pod
#define mf_pod_free                dt__mf_pod_free
#define mf_buffer_free             dt__mf_buffer_free
#define mf_capacity_buffer         dt__mf_capacity_buffer
#define mf_pod_template            dt__mf_pod_template
#define mf_spreads_free            dt__mf_spreads_free
#define mf_podspec                 dt__mf_podspec
#define mf_pool_free               dt__mf_pool_free
#define mf_pool_rev_free           dt__mf_pool_rev_free
#define mf_request_absurd          dt__mf_request_absurd
#define mf_rlist_at                dt__mf_rlist_at
#define mf_runtime_class           dt__mf_runtime_class
#define mf_namespace               dt__mf_namespace
#define mf_namespace_free          dt__mf_namespace_free
#define mf_service                 dt__mf_service
#define mf_service_free            dt__mf_service_free
#define mf_selector_free           dt__mf_selector_free
#define mf_parse_spreads           dt__mf_parse_spreads
#define mf_storage_class           dt__mf_storage_class
#define mf_csinode                 dt__mf_csinode
#define mf_strs_free               dt__mf_strs_free
#define mf_topo_free               dt__mf_topo_free
#define mf_unavailable             dt__mf_unavailable
#define mf_vm                      dt__mf_vm
#define mf_vm_free                 dt__mf_vm_free
#define mf_vmi                     dt__mf_vmi
#define mf_vmi_free                dt__mf_vmi_free
#define mf_vmpool                  dt__mf_vmpool
#define mf_vmpool_free             dt__mf_vmpool_free
#define mf_volume                  dt__mf_volume
#define mf_workload                dt__mf_workload

/* manifest.c */
int mf_bad(mctx *x, const char *field, const char *fmt, ...) DT_PRINTF(3, 4);
int mf_check_duplicate(mctx *x, const char *ns, const char *name);
/* An object's status.conditions entry of `type` (the last that has a
** status string); NULL none. */
const cJSON *mf_condition(const cJSON *o, const char *type);
/* Whether its Ready condition is there and not True (False, or Unknown: not
** yet): "status Ready=<status>[: <reason>]" into why. */
bool mf_not_ready(const cJSON *o, char *why, size_t n);
int mf_check_request(mctx *x, const char *field, const char *res, int64_t v);
int64_t mf_created_at(const cJSON *o);
int mf_failed(const mctx *x);
const cJSON *mf_get(const cJSON *o, const char *k);
const char *mf_get_str(const cJSON *o, const char *k);
bool mf_is_int_in(const cJSON *v, double lo, double hi);
int mf_list_room(mctx *x, const cJSON *arr, const char *field, const char *what, size_t size, void **v, size_t *n);
int mf_meta(mctx *x, const cJSON *o, const char **ns, const char **name, bool namespaced);
void mf_mreqs_free(dt_mreqs *r);
void mf_node_free(dt_node *n);
int mf_oom(mctx *x);
int mf_parse_duration_or_never(mctx *x, const cJSON *v, const char *field, int64_t *out);
int mf_parse_kvs(mctx *x, const cJSON *o, const char *field, dt_kvs *out);
int mf_parse_mreqs(mctx *x, const cJSON *arr, const char *field, dt_mreqs *out, bool allow_min_values);
int mf_parse_rlist(mctx *x, const cJSON *o, const char *field, dt_rlist *out, bool is_request);
int mf_parse_taints(mctx *x, const cJSON *arr, const char *field, dt_taint **out, size_t *nout);
int mf_parse_tolerations(mctx *x, const cJSON *arr, const char *field, dt_podspec *p);
void mf_pod_free(dt_podspec *p);
/* mf_buffer.c: CapacityBuffers and PodTemplates */
void mf_buffer_free(dt_buffer *b);
int mf_capacity_buffer(mctx *x, const cJSON *o);
int mf_pod_template(mctx *x, const cJSON *o);
void mf_spreads_free(dt_spread *s, size_t n); /* n spreads and the array */
void mf_pool_free(dt_nodepool *p);
bool mf_request_absurd(const char *res, int64_t v);
int mf_rlist_at(mctx *x, const cJSON *o, const where *w, dt_rlist *out, bool is_request);
void mf_selector_free(dt_selector *s);
/* A pod's topologySpreadConstraints (arr, at field) into p->spread. */
int mf_parse_spreads(mctx *x, const cJSON *arr, const char *field, dt_podspec *p);
void mf_strs_free(char **v, size_t n);
void mf_topo_free(dt_topo_obj *t);

/* mf_overlay.c: NodeOverlays */
int mf_nodeoverlay(mctx *x, const cJSON *o);
void mf_overlay_free(dt_nodeoverlay *v);

/* mf_nodepool.c */
int mf_nodepool(mctx *x, const cJSON *o);
int mf_known_fields(mctx *x, const cJSON *o, const char *path, const char *const *keys);
/* Levenshtein distance of two names of at most 32 bytes; 99 for longer ones. */
size_t mf_edit_distance(const char *a, const char *b);
/* Whether name is one of keys (a NULL-ended list). */
bool mf_one_of(const char *name, const char *const *keys);
/* The first of keys nearest to name, within `within` edits; NULL when none is. */
const char *mf_nearest(const char *name, const char *const *keys, size_t within);
int mf_nodeclass(mctx *x, const cJSON *o);
void mf_nodeclass_free(dt_nodeclass *c);

/* mf_pod.c */
int mf_node(mctx *x, const cJSON *o, bool is_claim);
int mf_parse_selector(mctx *x, const cJSON *o, const char *field, dt_selector *sel);
int mf_pdb(mctx *x, const cJSON *o);
void mf_pdb_free(dt_pdb *p);
int mf_persistent_volume(mctx *x, const cJSON *o);
int mf_pod(mctx *x, const cJSON *o);
int mf_podspec(mctx *x, const cJSON *tmpl, const char *path, dt_podspec *p);
int mf_runtime_class(mctx *x, const cJSON *o);
int mf_namespace(mctx *x, const cJSON *o);
void mf_namespace_free(dt_namespace *n);
int mf_service(mctx *x, const cJSON *o);
void mf_service_free(dt_service *v);
int mf_storage_class(mctx *x, const cJSON *o);
int mf_csinode(mctx *x, const cJSON *o);
int mf_unavailable(mctx *x, const cJSON *o);
int mf_volume(mctx *x, const cJSON *o);
int mf_workload(mctx *x, const cJSON *o, bool daemonset);

/* mf_kubevirt.c */
int mf_kubevirt(mctx *x, const cJSON *o);
int mf_itype(mctx *x, const cJSON *o);
void mf_itype_free(dt_itype *t);
/* The virt-launcher pods of VMs sized by an instancetype, sized (or, when
** the input lacks it, refused with why); dt_manifests_finish calls it. */
int mf_itypes_resolve(dt_manifests *m, dt_error *err);
int mf_vm(mctx *x, const cJSON *o);
int mf_vmi(mctx *x, const cJSON *o);
void mf_vmi_free(dt_vmi *v);
int mf_ctrl_revision(mctx *x, const cJSON *o);
void mf_pool_rev_free(dt_pool_rev *r);
void mf_vm_free(dt_vm *v);
int mf_vmpool(mctx *x, const cJSON *o);
void mf_vmpool_free(dt_vmpool *p);

#endif
