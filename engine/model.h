/*
** model.h: the parsed, validated inputs. The catalog and the manifests are
** immutable once loaded; a scheduling run compiles them into its own arena
** (interned labels, resource vectors), so one catalog serves many runs.
*/
#ifndef DT_MODEL_H
#define DT_MODEL_H

#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Capacity types, in Karpenter's launch precedence order. */
enum { DT_CT_RESERVED = 0, DT_CT_SPOT = 1, DT_CT_ON_DEMAND = 2, DT_CT_N = 3 };
extern const char *const dt__ct_names[DT_CT_N];
int dt__ct_parse(const char *s); /* -1 if unknown */
/* The extended resource a GPU of this name is advertised as by its device
** plugin (nvidia.com/gpu when the name says nothing else). */
const char *dt__gpu_resource(const char *gpu_name);
/* Whether an extended resource is a device (GPUs, Neuron, Gaudi ...): a
** domain-qualified name, but for the network interfaces AWS's VPC
** controllers hand out (vpc.amazonaws.com/pod-eni, vpc.amazonaws.com/efa),
** which most types carry and no pod pays for by leaving them idle. */
bool dt__is_device(const char *resource);

/* Default spot discount when a spot offering has no published price: the IBM
** Cloud provider's default (spot = on-demand x 0.6). */
#define DT_SPOT_DEFAULT_FACTOR 0.6

/* Well-known label keys. */
#define DT_L_INSTANCE_TYPE "node.kubernetes.io/instance-type"
#define DT_L_ZONE          "topology.kubernetes.io/zone"
#define DT_L_ZONE_ID       "topology.k8s.aws/zone-id" /* the AWS provider's */
#define DT_L_REGION        "topology.kubernetes.io/region"
#define DT_L_CAPACITY_TYPE "karpenter.sh/capacity-type"
#define DT_L_ARCH          "kubernetes.io/arch"
#define DT_L_OS            "kubernetes.io/os"
#define DT_L_NODEPOOL      "karpenter.sh/nodepool"
#define DT_L_REGISTERED    "karpenter.sh/registered"
#define DT_L_INITIALIZED   "karpenter.sh/initialized"
#define DT_L_HOSTNAME      "kubernetes.io/hostname"
#define DT_L_RESERVATION   "karpenter.k8s.aws/capacity-reservation-id"
#define DT_L_INTERRUPTIBLE "cluster.x-k8s.io/interruptible"
#define DT_L_NS_NAME       "kubernetes.io/metadata.name"

typedef struct dt_kv {
  char *key, *val;
} dt_kv;

typedef struct dt_kvs {
  size_t n;
  dt_kv *v;
} dt_kvs;

void dt__kvs_free(dt_kvs *k);

/* A resource quantity by name, in milli-units. */
typedef struct dt_rq {
  char *name;
  int64_t milli;
} dt_rq;

typedef struct dt_rlist {
  size_t n;
  dt_rq *v;
} dt_rlist;

typedef enum dt_rlist_mode { DT_RL_SET, DT_RL_SUM, DT_RL_MAX } dt_rlist_mode;

/* Set, add to, or raise to milli the entry for name (model.c). */
int dt__rlist_add(dt_rlist *r, const char *name, int64_t milli, dt_rlist_mode mode);
int64_t dt__rlist_get(const dt_rlist *r, const char *name); /* 0 if absent */
void dt__rlist_free(dt_rlist *r);

/* ---------------------------------------------------------------- catalog */

typedef struct dt_coffer {
  const char *zone; /* points into the catalog's zone list */
  int ct;
  double price;
  int64_t available; /* -1: unbounded */
  char *reservation; /* reserved offerings only */
} dt_coffer;

typedef struct dt_ctype {
  char *name;
  char *arch;
  dt_kvs labels;     /* every label the type's nodes carry, except zone and capacity type */
  dt_rlist capacity; /* cpu, memory, pods, ephemeral-storage, GPUs */
  dt_rlist allocatable;
  double od_price; /* < 0: none */
  size_t noff;
  dt_coffer *off;
  /* The type as the catalog file gave it, so that it can be written back out
  ** in the same format (dt_catalog_json) and load to the same model. */
  struct {
    double cpu, memory_mib;
    int64_t gpu;
    char *family, *gpu_name;        /* NULL when not given */
    int64_t eph_bytes;              /* ephemeralStorage; -1 when not given */
    dt_kvs labels;                  /* labels given, not the derived ones */
    bool has_overhead;              /* overhead given; else the provider's formula */
    int64_t oh_cpu, oh_mem, oh_eph; /* milli, when has_overhead */
  } src;
} dt_ctype;

/* The GPUs a type has: its extended resources whose name says gpu
** (nvidia.com/gpu, amd.com/gpu, ...); Neuron and other devices are not. */
int64_t dt__ctype_gpus(const dt_ctype *t);

/* The instance type named name in c, or NULL. */
const dt_ctype *dt__catalog_named(const struct dt_catalog *c, const char *name);

struct dt_catalog {
  char *name; /* file name, for messages */
  char *region;
  char *provider; /* "aws", "azure", "kwok" or "generic" (any other name: as generic) */
  size_t nzones;
  char **zones;
  size_t ntypes;
  dt_ctype *types;
};

/* Karpenter's KWOK instance-type list (providers/kwok.c): whether a parsed
** document has its shape (a JSON array of types), and the dovetail catalog
** document it stands for (*out owned by the caller). */
bool dt__kwok_shape(const cJSON *root);
int dt__kwok_convert(const char *file, const cJSON *root, cJSON **out, dt_error *err);

/* The catalog in its own file format, as dt_catalog_json, keeping only the
** offerings keep accepts (and the types and zones left with one). */
typedef bool (*dt__offer_keep)(const dt_catalog *c, const dt_ctype *t, const dt_coffer *o, void *ud);
char *dt__catalog_json(const dt_catalog *c, dt__offer_keep keep, void *ud, size_t *len);

/* -------------------------------------------------------------- manifests */

typedef struct dt_mreq {
  char *key;
  dt_op op;
  size_t n;
  char **vals;
  int min_values;
} dt_mreq;

typedef struct dt_mreqs {
  size_t n;
  dt_mreq *v;
} dt_mreqs;

typedef struct dt_taint {
  char *key, *value, *effect;
} dt_taint;

typedef struct dt_toleration {
  char *key, *op, *value, *effect; /* op "Equal" or "Exists"; NULL key with Exists = all */
} dt_toleration;

/* Disruption reasons (budgets name them; a bitmask). */
enum { DT_REASON_EMPTY = 1, DT_REASON_DRIFTED = 2, DT_REASON_UNDERUTILIZED = 4, DT_REASON_ALL = 7 };
enum { DT_CONSOL_EMPTY_OR_UNDER = 0, DT_CONSOL_WHEN_EMPTY = 1, DT_CONSOL_BALANCED = 2 };

typedef struct dt_budget {
  int64_t nodes;
  bool pct;
  bool scheduled;
  dt_cron cron;
  char *schedule;   /* as written, for messages */
  int64_t duration; /* seconds */
  unsigned reasons; /* DT_REASON_*; DT_REASON_ALL when none listed */
  bool fail_closed; /* a schedule Karpenter cannot parse (a time-zone prefix): no disruption for its reasons */
} dt_budget;

/* AMI families as Karpenter's AWS provider tells them apart for node
** resources (amiSelectorTerms' alias, else spec.amiFamily). */
enum { DT_AMI_AL2023 = 0, DT_AMI_AL2, DT_AMI_BOTTLEROCKET, DT_AMI_WINDOWS, DT_AMI_CUSTOM };

/* A kubelet eviction threshold: bytes, or a percent of the capacity. */
typedef struct dt_evict {
  bool set, pct;
  double value; /* bytes, or percent */
} dt_evict;

/* An EC2NodeClass (karpenter.k8s.aws) as far as it shapes the nodes of the
** NodePools naming it: the kubelet's pods and reservations, the volume that
** gives ephemeral storage, the zones of its subnets, its readiness. */
typedef struct dt_nodeclass {
  char *name, *file;
  int family;                   /* DT_AMI_* */
  const char *family_name;      /* AL2023, Bottlerocket, ... (static) */
  int64_t max_pods;             /* spec.kubelet.maxPods; -1 unset */
  int64_t pods_per_core;        /* spec.kubelet.podsPerCore; 0 unset */
  dt_rlist kube_reserved;       /* spec.kubelet.kubeReserved: cpu, memory, ephemeral-storage */
  dt_rlist system_reserved;     /* spec.kubelet.systemReserved */
  dt_evict evict_mem, evict_fs; /* evictionHard memory.available, nodefs.available */
  int64_t volume_bytes;         /* the ephemeral volume's size from blockDeviceMappings; -1 the family's default */
  bool raid0;                   /* instanceStorePolicy RAID0: ephemeral storage is the instance store */
  bool ubuntu;                  /* v1beta1 amiFamily Ubuntu, converted (AL2 on Ubuntu's root volume) */
  bool ubuntu_incompatible;     /* ... without amiSelectorTerms: the conversion's incompatible mark */
  char **zones;                 /* status.subnets[].zone, each once, in order */
  char **zone_ids;              /* and each one's zoneID (AWS's account-independent name), NULL unknown */
  size_t nzones;
  char *unready;                 /* status Ready=False and its reason; NULL: ready or no status */
  uint64_t hash;                 /* of spec, the selector terms aside (status tells what they found): drift */
  char *k_hash, *k_hash_version; /* Karpenter's karpenter.k8s.aws/ec2nodeclass-hash(-version), NULL none */
  size_t namis;
  struct dt_ami {
    char *id;
    dt_mreqs reqs; /* the instance types it is for */
  } * amis;        /* status.amis */
} dt_nodeclass;

/* Indices of what dt__aws_node_resources sizes. */
enum { DT_NODE_CPU = 0, DT_NODE_MEM = 1, DT_NODE_PODS = 2, DT_NODE_EPH = 3 };
struct dt_catalog;
bool dt__aws_node_resources(const struct dt_catalog *c, const dt_ctype *t, const dt_nodeclass *nc, int64_t cap[4],
                            int64_t alloc[4]);

typedef struct dt_nodepool {
  char *name, *file;
  int consolidation;         /* DT_CONSOL_* */
  int64_t consolidate_after; /* seconds; -1 Never */
  int64_t expire_after;      /* seconds; -1 Never */
  size_t nbudgets;
  dt_budget *budgets;
  uint64_t hash; /* of the template, requirements and expireAfter aside (drift) */
  char *k_hash, *k_hash_version; /* Karpenter's karpenter.sh/nodepool-hash(-version) annotations, NULL none */
  int weight;
  int64_t replicas; /* spec.replicas: a static NodePool keeps this many NodeClaims; -1 when unset */
  dt_kvs labels;
  dt_mreqs reqs;
  size_t ntaints, nstartup;
  dt_taint *taints, *startup;
  dt_rlist limits;
  cJSON *node_class_ref;   /* owned; NULL if absent */
  char *uid;               /* metadata.uid, for the NodeClaims' ownerReferences; NULL if absent */
  char *termination_grace; /* spec.template.spec.terminationGracePeriod as written, NULL if absent */
  dt_kvs annotations;      /* spec.template.metadata.annotations, carried to the NodeClaims */
  double spot_max;         /* dovetail.dev/spot-max-price, < 0 when unset */
  char *policy;            /* dovetail.dev/policy: a policy name, NULL when unset */
  char *unusable;          /* why Karpenter launches nothing for it (being deleted, status Ready=False); NULL: usable */
  size_t seq;
} dt_nodepool;

/* The EC2NodeClass the input holds for NodePool np (its nodeClassRef names
** karpenter.k8s.aws EC2NodeClass NAME); NULL none, with *missing set to the
** name when the input holds other EC2NodeClasses but not that one. */
const dt_nodeclass *dt__nodeclass_of(const struct dt_manifests *m, const dt_nodepool *np, const char **missing);

/* The most of p's nodes its budgets let be disrupted at once for reason (a
** DT_REASON_* bit) at now (Unix seconds) when it has nodes: the least of
** the active budgets that name the reason, percentages rounded up;
** INT64_MAX when none applies. */
int64_t dt__budget_nodes(const dt_nodepool *p, unsigned reason, int64_t now, int64_t nodes);

/* A label selector: matchLabels (as In) and matchExpressions. A selector
** that is absent matches nothing; an empty one matches everything. */
typedef struct dt_selector {
  bool present;
  dt_mreqs expr;
} dt_selector;

/* A pod (anti-)affinity term. */
/* The value of key in kv (first match), or NULL. */
const char *dt__kv_get(const dt_kv *kv, size_t n, const char *key);
/* A requirement or a selector (every requirement) over labels; Gt/Lt compare integers. */
bool dt__mreq_match(const dt_mreq *q, const dt_kv *kv, size_t n);
bool dt__selector_match(const dt_selector *s, const dt_kv *kv, size_t n);

/* NodeClaims that a Node in the same input stands for (its status.nodeName
** is the Node's name, or their provider IDs agree): out[i] is that Node's
** index for such a claim i, -1 for everything else. Both are one machine:
** commands keep the Node and leave the claim out. out has m->nodes.n entries. */
int dt__claims_paired(const dt_manifests *m, int32_t *out);

typedef struct dt_podterm {
  int weight; /* preferred terms only */
  dt_selector sel;
  char *key; /* topologyKey */
  size_t nns;
  char **ns;   /* namespaces; empty = the pod's own (unless all_ns) */
  bool all_ns; /* namespaceSelector: {}: every namespace */
  /* a namespaceSelector on other labels: the Namespace objects it selects
  ** join ns (every namespace where the input holds none) */
  dt_selector ns_sel;
} dt_podterm;

typedef struct dt_spread {
  int max_skew, min_domains;
  char *key;
  bool anyway; /* whenUnsatisfiable: ScheduleAnyway */
  /* nodeAffinityPolicy: Ignore (default Honor: only pods on nodes matching
  ** the pod's nodeSelector and required node affinity count); nodeTaintsPolicy:
  ** Honor (default Ignore: pods on nodes whose taints it does not tolerate count too) */
  bool affinity_ignore, taints_honor;
  bool dflt; /* the cluster's default (--scheduler-config), not the pod's own */
  dt_selector sel;
  size_t nmlk;
  char **match_label_keys;
} dt_spread;

typedef struct dt_prefterm {
  int weight;
  dt_mreqs reqs;
} dt_prefterm;

typedef struct dt_hostport {
  int port;
  char proto[8];
  char *ip;
} dt_hostport;

/* A claim a replica gets made for it: a StatefulSet's volumeClaimTemplate,
** or a workload template's generic ephemeral volume (ephemeral: its claim is
** <pod>-<volume>, made with each new pod); its name (the template's, or the
** volume's), and the class its claims get (cls NULL: none given, the default
** class; "" given: no class). */
typedef struct dt_vct {
  char *name, *cls;
  bool class_given, ephemeral;
} dt_vct;

/* A pod, or a template expanded into count pods (Deployment replicas). */
typedef struct dt_podspec {
  char *ns, *name, *file;
  char *owner;       /* "Deployment/web" for expanded pods, NULL for a Pod */
  int64_t count;     /* 1 for a Pod */
  int64_t created;   /* Unix seconds, 0 if unknown */
  int64_t ordinal_base; /* a StatefulSet's spec.ordinals.start: its pods are name-<base>..; others name-<i> from 0 */
  dt_rlist requests; /* effective requests: max(init) vs sum(containers)+sidecars, + overhead */
  dt_kvs labels;
  dt_kvs node_selector;
  size_t nterms; /* required node affinity: OR of terms */
  dt_mreqs *terms;
  size_t ntol;
  dt_toleration *tol;
  size_t npref; /* preferred node affinity */
  dt_prefterm *pref;
  size_t naff, nanti, npaff, npanti; /* pod affinity: required, preferred */
  dt_podterm *aff, *anti, *paff, *panti;
  size_t nspread;
  dt_spread *spread;
  size_t nports;
  dt_hostport *ports;
  char *runtime_class;
  bool has_overhead;
  char *node_name;   /* spec.nodeName: already bound */
  bool daemon;       /* owned by a DaemonSet: not rescheduled */
  bool sts;          /* owned by a StatefulSet: terminating, it is still rescheduled (Karpenter) */
  bool rs;           /* owned by a ReplicaSet: a Deployment's replica, with or without its pod-template-hash */
  bool unready;      /* status.conditions Ready is False */
  bool mirror;       /* a static pod's mirror (owned by its Node): never evicted */
  bool terminating;  /* metadata.deletionTimestamp: holds its node's room, but no workload counts it */
  bool evicted;      /* a disruption's view: moving off a candidate, pending again (not validated as new) */
  bool dra;          /* asks for Dynamic Resource Allocation: spec.resourceClaims, or a container's resources.claims */
  bool dnd;          /* karpenter.sh/do-not-disrupt: "true" */
  int64_t dnd_until; /* do-not-disrupt: a duration from the pod's start; 0 none */
  int64_t deletion_cost, priority;
  char *claim;     /* bound by a NodeClaim's dovetail.dev/pods annotation */
  char *controller; /* a Pod's controller (ownerReferences controller: true) as "Kind/name", or NULL */
  dt_selector sel; /* a workload's spec.selector: its pods already running count against replicas */
  char *parent;    /* "Deployment/name" for a ReplicaSet a Deployment owns */
  char **pvcs;     /* the PersistentVolumeClaims its volumes name */
  size_t npvcs;
  /* A StatefulSet's volumeClaimTemplates: replica <name>-<k> has claim
  ** <template>-<name>-<k>, made from the template when not there already;
  ** and a workload template's ephemeral volumes, whose claims come with each pod */
  size_t nvct;
  dt_vct *vct;
  /* One replica of a workload standing alone (a disruption's view of a
  ** replica a claim carries): the workload's name (borrowed) and its ordinal,
  ** whose claims are <template>-<replica_of>-<ordinal>; NULL for others. */
  const char *replica_of;
  int64_t replica_ordinal;
  /* A workload's replicas are named <rname>-<k>: its name, or, where
  ** another workload of its namespace has its name and is not a
  ** StatefulSet (whose replicas are named by their ordinals),
  ** <name>-<kind> (web-deployment-0), set by dt_manifests_finish; NULL:
  ** the name (dt__replica_base). */
  const char *rname;
  /* a virt-launcher pod: the VMI's spec.architecture ("amd64", "arm64",
  ** "s390x"), "" for the cluster's default, NULL for any other pod */
  const char *vm_arch;
  /* A virt-launcher pod of a VM sized by an instancetype: its name (a
  ** VirtualMachineInstancetype of the pod's namespace when vm_itype_ns, else
  ** a VirtualMachineClusterInstancetype), resolved by dt_manifests_finish;
  ** its launcher's memory overhead but page tables, vCPUs and dedicated
  ** CPUs (bytes), and whether overcommitGuestOverhead. NULL none. */
  char *vm_itype;
  bool vm_itype_ns, vm_ovc;
  int64_t vm_ovh;
  /* Why a pending pod is not planned, known when read (its VM's
  ** instancetype is not in the input); NULL: nothing. */
  const char *refused;
  size_t seq;
  bool borrowed; /* a kept pod's copy (podcache.c): its owner frees it, not the set */
  bool spread_own; /* a kept pod's copy given the cluster's default spreads: the set frees spread */
  /* A CapacityBuffer's chunks (mf_buffer.c): a workload of count virtual
  ** pods capacity-buffer-<name>-<k>, k from 1, that no pod counts against,
  ** queued after every real pod and never nominated to a claim */
  bool buffer;
  /* A kept pod whose requests name only cpu, memory, pods and
  ** ephemeral-storage: their indices among every plan's first four resources
  ** and amounts, in the order of requests (podcache.c), so a plan need not
  ** read the names; nbase 0: read requests. */
  uint8_t nbase;
  uint8_t base_k[4];
  int64_t base_milli[4];
  /* A kept pod with no affinity, spread, ports, volumes or preferences: its
  ** namespace, labels, node selector and tolerations as a number the cache
  ** gives every pod that has the same ones (podcache.c); 0 for any other
  ** pod. Two pods of one set with the same shape compile to the same
  ** symbols and, with the same requests, to the same class. */
  uint32_t shape;
  /* A kept Pod's "ns/name" (as a plan names it) as a number of the cache's
  ** name table, which also numbers its kept nodes' pods (dt_node.pod_ids):
  ** within one set, equal numbers are equal names. 0: none. */
  uint32_t name_id;
} dt_podspec;

/* The ordinal q writes as a workload's replica names it (<name>-<ordinal>:
** decimal, no sign, no leading zero, at most 18 digits); -1 for none. */
static inline int64_t dt__ordinal_text(const char *q) {
  size_t n = strspn(q, "0123456789");
  if (!n || n > 18 || q[n] || (q[0] == '0' && n > 1)) return -1;
  return strtoll(q, NULL, 10);
}

/* Karpenter's known ephemeral taints (the node lifecycle controller's and the
** cloud controller's while a node starts; Karpenter's own before it registers). */
static inline bool dt__ephemeral_taint(const char *key) {
  return !strcmp(key, "node.kubernetes.io/not-ready") || !strcmp(key, "node.kubernetes.io/unreachable") ||
         !strcmp(key, "node.cloudprovider.kubernetes.io/uninitialized") || !strcmp(key, "karpenter.sh/unregistered");
}

/* Whether Karpenter reschedules pod p off a machine being deleted
** (IsReschedulable): not a DaemonSet's, not a mirror pod, not terminating
** unless a StatefulSet's; and not do-not-disrupt, which no eviction moves. */
static inline bool dt__pod_reschedulable(const dt_podspec *p) {
  return !p->daemon && !p->mirror && !p->dnd && (!p->terminating || p->sts);
}

/* An existing Node, or an in-flight NodeClaim. */
typedef struct dt_node {
  char *name, *file, *kind;
  char *claim_name;  /* for NodeClaims */
  char *node_name;   /* NodeClaim status.nodeName */
  char *provider_id; /* Node spec.providerID, NodeClaim status.providerID */
  dt_kvs labels;
  dt_rlist allocatable; /* empty: derive from the catalog's instance type */
  size_t ntaints;
  dt_taint *taints;
  bool unschedulable, initialized;
  bool sim_closed;                           /* a disruption simulation's view: takes no pod, whatever it tolerates */
  bool init_label;                           /* a Node's karpenter.sh/initialized: "true" */
  bool has_expire;                           /* a NodeClaim's spec.expireAfter given: expire_after */
  bool has_tgp;                              /* a NodeClaim's spec.terminationGracePeriod given */
  int64_t expire_after;                      /* seconds; -1 Never */
  bool ready;                                /* Ready condition (true without conditions) */
  bool dnd;                                  /* karpenter.sh/do-not-disrupt: "true" */
  int64_t created, deleting, last_pod_event; /* Unix seconds; 0 unknown / not deleting */
  int64_t initialized_at;                    /* a NodeClaim's Initialized=True lastTransitionTime; 0 unknown */
  char *pool_hash;                           /* dovetail.dev/nodepool-hash */
  char *k_hash, *k_hash_version;             /* a NodeClaim's karpenter.sh/nodepool-hash(-version) */
  char *drifted;                             /* a NodeClaim's Drifted=True condition: its reason; NULL none */
  char *image_id;                            /* a NodeClaim's status.imageID */
  char *nc_hash;                             /* dovetail.dev/ec2nodeclass-hash */
  char *nc_k_hash, *nc_k_hash_version;       /* a NodeClaim's karpenter.k8s.aws/ec2nodeclass-hash(-version) */
  size_t npods;
  char **pods;       /* "ns/name" from the dovetail.dev/pods annotation */
  uint32_t *pod_ids; /* a kept node's pods as numbers of the cache's name table (podcache.c); NULL none */
  size_t seq;
  bool borrowed; /* a kept node's copy (podcache.c): its owner frees it, not the set */
} dt_node;

/* Whether a command took the node or claim: the karpenter.sh/disrupted
** taint (NULL: no). */
bool dt__node_disrupted(const dt_node *n);

/* A Namespace: its labels (kubernetes.io/metadata.name among them), for
** pod terms' namespaceSelectors. */
typedef struct dt_namespace {
  char *name;
  dt_kvs labels;
} dt_namespace;

typedef struct dt_runtimeclass {
  char *name;
  dt_rlist overhead;
} dt_runtimeclass;

/* An unavailable offering (insufficient capacity, interruption): not
** launched until it expires. */
typedef struct dt_mark {
  int ct;
  char *instance_type, *zone, *name, *file;
  int64_t expires; /* Unix seconds */
} dt_mark;

/* ------------------------------------------------------------- VM pools */

enum { DT_STRAT_PROACTIVE = 0, DT_STRAT_OPPORTUNISTIC = 1, DT_STRAT_UNMANAGED = 2 };
enum { DT_PRESERVE_DISABLED = 0, DT_PRESERVE_OFFLINE = 1, DT_PRESERVE_ONLINE = 2 };
/* spec.nameGeneration: which references of a VM's volumes get "-<index>" */
enum { DT_NAMEGEN_CONFIGMAPS = 1, DT_NAMEGEN_SECRETS = 2 };
enum { DT_SORT_RANDOM = 0, DT_SORT_OLDEST, DT_SORT_NEWEST, DT_SORT_ASCENDING, DT_SORT_DESCENDING };
extern const char *const dt__sort_names[5];

/* One entry of an ordered selection policy: VMs matching it go first. */
typedef struct dt_selentry {
  dt_selector labels; /* against the VM's labels and its template's labels */
  dt_mreqs node;      /* nodeSelectorRequirementMatcher: against the template's nodeSelector */
} dt_selentry;

typedef struct dt_selpolicy {
  size_t n;
  dt_selentry *v; /* priority order */
  int base;       /* DT_SORT_* for the VMs every entry leaves */
  bool base_set;
  bool selectors_first; /* v[0] came from KubeVirt's single `selectors` */
} dt_selpolicy;

typedef struct dt_vmpool {
  char *ns, *name, *file;
  char *uid; /* metadata.uid: the VMs' ownerReferences carry it (the API server requires it); NULL if absent */
  int64_t replicas, generation;
  bool paused;
  bool deleting; /* metadata.deletionTimestamp: KubeVirt only releases its VMs' finalizers */
  dt_selector selector;
  uint64_t run_strategy; /* the template's, as dt_vm.run_strategy */
  uint64_t rev_hash;     /* the template as a ControllerRevision's is compared (dt_pool_rev.tmpl_hash) */
  int64_t max_unavail; /* absolute, or percent when max_unavail_pct */
  bool max_unavail_pct;
  int scale_in, update, preserve;
  dt_selpolicy scale_sel, update_sel;
  bool autoheal;
  int64_t heal_threshold, heal_min_failing; /* failures; seconds */
  int64_t heal_base, heal_cap;              /* backoff between attempts, seconds */
  double heal_factor;
  int64_t burst;
  uint64_t hash;     /* the whole virtualMachineTemplate */
  uint64_t vmi_hash; /* spec.template of the VM template */
  uint64_t dvt_hash; /* spec.dataVolumeTemplates */
  cJSON *tmpl;       /* owned copy of virtualMachineTemplate, for the VMs to create */
  size_t ndv;
  char **dv;           /* dataVolumeTemplates names, unindexed */
  unsigned name_gen;   /* spec.nameGeneration: DT_NAMEGEN_* bits */
  bool runs;           /* the template's VMs run (runStrategy / running) */
  dt_podspec launcher; /* the virt-launcher pod a VM of the template needs */
  size_t seq;
} dt_vmpool;

typedef struct dt_vm {
  char *ns, *name, *file;
  char *owner;               /* controller ownerReference to a VirtualMachinePool, or NULL */
  char *owner_uid;           /* ... and the uid it names, NULL if absent */
  dt_kvs labels;             /* metadata.labels, then spec.template.metadata.labels */
  size_t nmeta_labels;       /* how many of labels are metadata.labels */
  dt_kvs node_selector;      /* spec.template.spec.nodeSelector */
  int64_t created, deleting; /* Unix seconds; deleting 0 when not being deleted */
  int64_t index;             /* suffix after the last '-', -1 if none */
  bool halted, ready, has_status;
  char *status; /* status.printableStatus */
  int64_t fail_count;
  int64_t not_ready_since;     /* Ready=False lastTransitionTime, 0 if unknown */
  char *revision;              /* kubevirt.io/vm-pool-revision-name */
  char *tmpl_hash;             /* dovetail.dev/template-hash */
  uint64_t run_strategy;       /* its run strategy (runStrategy, or running as Always/Halted) hashed; 0 unset */
  bool restart_required;       /* status condition RestartRequired=True: its VMI runs an older spec */
  char *fw_uuid, *fw_serial;   /* spec.template.spec.domain.firmware: its identity, kept when rewritten */
  uint64_t vmi_hash, dvt_hash; /* de-indexed template and dataVolumeTemplates */
  uint64_t vmi_hash_ng[4];     /* vmi_hash with ConfigMap ([1]), Secret ([2]) or both ([3]) references
                           ** de-indexed too, for pools with spec.nameGeneration; [0] is vmi_hash */
  int64_t heal_attempt, healed_at;
  size_t seq;
} dt_vm;

/* A running VirtualMachineInstance: the pool revision it was started from
** (kubevirt.io/vm-pool-revision-name), NULL none. */
typedef struct dt_vmi {
  char *ns, *name, *revision;
  bool deleting; /* metadata.deletionTimestamp: already going */
} dt_vmi;

/* A VirtualMachinePool's ControllerRevision: its name and what KubeVirt's
** isOutdatedVMI compares, the instance template and data volume templates
** of the pool spec it holds. */
typedef struct dt_pool_rev {
  char *ns, *name;
  uint64_t tmpl_hash;          /* its virtualMachineTemplate, as dt_vmpool.hash: what isOutdatedVM compares */
  uint64_t vmi_hash, dvt_hash; /* its instance and data volume templates, as dt_vmpool's: isOutdatedVMI's */
} dt_pool_rev;

/* A VM a pool run decided to create: pool index and name index. */
typedef struct dt_pool_create {
  size_t pool;
  int64_t index;
} dt_pool_create;
const dt_pool_create *dt__pools_creates(const dt_pools *r, size_t *n);
/* dt_pools_run's decisions alone: no VM objects and no document, for a
** plan that needs only the VMs to create (about 10 KB a VM less). */
int dt__pools_run_lean(const dt_manifests *m, const dt_pool_opts *opts, dt_pools **out, dt_error *err);

typedef struct dt_pdb {
  char *ns, *name, *file;
  dt_selector sel;
  bool has_min, has_max, min_pct, max_pct;
  int64_t min_avail, max_unavail;
  int64_t allowed; /* status.disruptionsAllowed; -1 when absent */
  bool always_allow; /* unhealthyPodEvictionPolicy: AlwaysAllow (a pod not Ready is evicted regardless) */
} dt_pdb;

/* Whether a PodDisruptionBudget of m blocks every eviction of pod p
** (maxUnavailable 0 or "0%", or minAvailable "100%"): Karpenter provisions
** nothing for such a pod of a node being deleted, which it will not evict
** (pdb.go isFullyBlocked, "Don't provision capacity for pods which will
** not get evicted"). */
bool dt__pdb_fully_blocks(const struct dt_manifests *m, const dt_podspec *p);

/* A key of the karpenter.k8s.aws domain the AWS provider's NodePool schema
** does not list (its CRD's CEL rule): the error into why, with the listed
** key it is nearest to, and true; false for any other key. Checked where
** the catalog is AWS's: only that provider's CRD carries the rule. */
bool dt__aws_label_refused(const char *key, char *why, size_t n);

/* What volume topology needs of PersistentVolumeClaims ("PVC", key
** "ns/name", the PV it is bound to and its StorageClass), PersistentVolumes
** ("PV", its required node affinity) and StorageClasses ("SC", its binding
** mode and its allowed topologies), their terms as one (topo_terms); and
** what volume limits need: a PV's CSI driver and a StorageClass's
** provisioner (driver, in-tree plugins by their CSI driver's name), and
** CSINodes ("CSI", key the node's name: each driver's allocatable count).
** What Karpenter validates of a pending pod's claims (volumetopology.go
** ValidatePersistentVolumeClaims): whether a PVC or PV is being deleted, a
** PVC is Lost or carries pv.kubernetes.io/bind-completed, a StorageClass
** binds Immediate. */
typedef struct dt_topo_obj {
  char kind[4];
  char *key, *volume, *storage_class;
  bool immediate, deleting, lost, bind_completed;
  bool is_default;  /* a StorageClass annotated storageclass.kubernetes.io/is-default-class: "true" */
  bool class_given; /* a PVC's spec.storageClassName is there, if only "" (no dynamic provisioning) */
  dt_mreqs term;
  char *driver;
  size_t nlim;
  char **lim_driver;
  int64_t *lim_count;
} dt_topo_obj;

/* A Service or a ReplicationController: its selector (a map: present with no
** labels selects every pod of its namespace; absent selects none), for
** default topology spreads. */
typedef struct dt_service {
  char *ns;
  char *rc; /* a ReplicationController's "ReplicationController/name"; NULL for a Service */
  bool has_sel;
  dt_kvs sel;
} dt_service;

/* The cluster's default topology spreads (mf_spread.c): a
** --scheduler-config document read into cfg's spreads (nothing when it
** names none; free with dt__mf_pod_free), and given to the pods of m that
** declare none, each with the selector deduced for it. A kept pod's copy
** gets spreads of the set's own. */
int dt__spread_defaults_read(const char *path, dt_podspec *cfg, dt_error *err);
int dt__spread_defaults_apply(dt_manifests *m, const dt_podspec *cfg, dt_error *err);

/* A CapacityBuffer (autoscaling.x-k8s.io), as read (mf_buffer.c). */
typedef struct dt_buffer {
  char *ns, *name;
  char *tmpl;          /* spec.podTemplateRef.name, or NULL */
  char *kind, *target; /* spec.scalableRef's kind and name, or NULL */
  bool group_ok;       /* its apiGroup is apps (or none) */
  bool has_replicas, has_pct, has_limits;
  int64_t replicas, pct;
  dt_rlist limits;
  const char *file;
} dt_buffer;

/* The name a workload's made replicas are named after (<base>-<k>). */
static inline const char *dt__replica_base(const dt_podspec *d) { return d->rname ? d->rname : d->name; }

/* A KubeVirt instancetype (instancetype.kubevirt.io): the vCPUs and memory
** a VM naming it gets, read by mf_kubevirt.c. */
typedef struct dt_itype {
  char *ns, *name; /* ns NULL: a VirtualMachineClusterInstancetype */
  const char *file;
  int64_t vcpus, mem; /* spec.cpu.guest; spec.memory.guest in milli-bytes */
  int64_t overcommit; /* spec.memory.overcommitPercent */
  bool dedicated, isolate, vfio;
} dt_itype;

/* A NodeOverlay (karpenter.sh/v1alpha1), as read (mf_overlay.c): what it
** changes of the instance types its requirements select, per NodePool. */
enum { DT_OVL_NONE = 0, DT_OVL_PRICE = 1, DT_OVL_ADD = 2, DT_OVL_PERCENT = 3 };
typedef struct dt_nodeoverlay {
  char *name;
  const char *file;
  dt_mreqs reqs;
  int32_t weight;    /* spec.weight, 0 when unset */
  int price_kind;    /* DT_OVL_*: spec.price, or spec.priceAdjustment as an amount or a percentage */
  double price;      /* the price, the amount added, or the percentage added */
  char *price_text;  /* as written */
  dt_rlist capacity; /* spec.capacity: extended resources only */
  bool has_capacity; /* spec.capacity given, if empty ({}): it still counts in conflicts */
} dt_nodeoverlay;

struct dt_manifests {
  DT_VEC(dt_pdb) pdbs;
  DT_VEC(dt_service) services;
  DT_VEC(dt_vmpool) vmpools;
  DT_VEC(dt_vm) vms;
  DT_VEC(dt_vmi) vmis;
  DT_VEC(dt_pool_rev) pool_revs;
  DT_VEC(char *) volumes;   /* "ns/name" of PersistentVolumeClaims and DataVolumes */
  DT_VEC(dt_topo_obj) topo; /* PVCs, PVs and StorageClasses: where a pod's volumes can be */
  DT_VEC(dt_mark) marks;
  /* KubeVirt's default architecture (a KubeVirt object's status or
  ** configuration), the file that gave it; NULL: amd64 */
  const char *vm_default_arch, *vm_default_arch_file;
  DT_VEC(dt_nodepool) pools;
  DT_VEC(dt_nodeclass) nodeclasses; /* EC2NodeClasses */
  DT_VEC(dt_podspec) pods;
  DT_VEC(dt_podspec) daemonsets;
  /* ReplicaSets and StatefulSets of spec.replicas 0: their namespace, name,
  ** owner ("Kind/name") and selector alone, for default spreads */
  DT_VEC(dt_podspec) idle;
  DT_VEC(dt_buffer) buffers;    /* CapacityBuffers */
  DT_VEC(dt_nodeoverlay) nodeoverlays;
  DT_VEC(dt_itype) itypes;      /* KubeVirt instancetypes */
  bool finished;                /* dt_manifests_finish has run */
  DT_VEC(dt_podspec) templates; /* PodTemplates: namespace, name and the pod they make */
  DT_VEC(dt_runtimeclass) runtime_classes;
  DT_VEC(dt_namespace) namespaces;
  DT_VEC(dt_node) nodes;
  DT_VEC(char *) files; /* owned file names, referenced by objects */
  dt_buf notes;
  /* duplicate detection: symbol of "Kind/ns/name" -> defining file (NULL
  ** once rolled back) */
  dt_symtab seen;
  DT_VEC(const char *) seen_file;
  size_t seq;
  int64_t npods; /* pods with replicas expanded, against DT_MAX_PODS */
};

/*
** Parsed pods kept from one manifest set to the next (podcache.c): an
** object is added as dt_manifests_add_buffer adds it, but a Pod whose name
** and version (gen, which the caller changes with every change of the text)
** were read before is added from its parsed form. The sets borrow the kept
** pods: the cache outlives them. dt__podcache_sweep drops what no add used
** since the last sweep; call it only when the sets made before are freed.
*/
typedef struct dt_podcache dt_podcache;
/* A pod's shape signature (its namespace, labels, node selector and
** tolerations) into b, when it has one: false for a pod with affinity,
** spread, ports, volumes, preferences or a VM's architecture, which compile
** by more than that. */
bool dt__pod_shape_sig(const dt_podspec *p, dt_buf *b);
/* What a shape's signature says of any pod: namespace, labels, node
** selector and tolerations. */
void dt__pod_base_sig(const dt_podspec *p, dt_buf *b);
void dt__sig_kvs(dt_buf *b, const dt_kvs *kv);     /* a map's count, then each key and value */
void dt__sig_tols(dt_buf *b, const dt_podspec *p); /* a pod's tolerations */
void dt__sig_mreqs(dt_buf *b, const dt_mreqs *r);  /* requirements: each key, operator, minValues, values */
/* Whether p's signature is e's (e has one), without writing either. */
bool dt__pod_same_shape(const dt_podspec *p, const dt_podspec *e);
dt_podcache *dt__podcache_new(void);
void dt__podcache_free(dt_podcache *c);
/* Whether the cache may keep a node of that store name ("Kind/ns/name"):
** Nodes and NodeClaims (their parsed dt_node, borrowed as pods are); it
** keeps Pods ("Pod/...") too. */
bool dt__podcache_keeps_node(const char *name);
/* The entry that keeps name at version gen, 0 when none: an add given it
** may pass no text. It stays valid until the next sweep. */
uint32_t dt__podcache_find(const dt_podcache *c, const char *name, uint64_t gen);
/* The same, given what an earlier call kept for this very name in *hint and
** *epoch (zeros at first): while the cache has not renamed its entries
** since, the name is not looked up again. Both are updated. */
uint32_t dt__podcache_find_hinted(const dt_podcache *c, const char *name, uint64_t gen, uint32_t *hint,
                                  uint32_t *epoch);
/* A hint that entry kept (an answer of the two above, or a hint they
** keep) is read soon: its first line, or (whole) all of it that an add
** copies. It changes nothing; a stale or 0 entry is ignored. */
void dt__podcache_prefetch(const dt_podcache *c, uint32_t kept, bool whole);
/* Add object name at version gen to m, as dt_manifests_add_buffer adds buf;
** kept: dt__podcache_find's answer for it, or 0. spans: for a NodeClaim,
** where buf holds the values of its pods annotation and of its
** status.lastPodEventTime (pods start, end, event start, end; plain text
** inside JSON strings), or NULL when not known. */
int dt__manifests_add_cached(dt_manifests *m, dt_podcache *c, const char *name, uint64_t gen, uint32_t kept,
                             const char *buf, size_t len, const uint32_t *spans, dt_error *err);
void dt__podcache_sweep(dt_podcache *c);
/* The pod reader's free (mf_pod.c), and the node reader's (manifest.c). */
void dt__mf_pod_free(dt_podspec *p);
void dt__mf_node_free(dt_node *n);

#endif
