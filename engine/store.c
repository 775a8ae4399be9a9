/*
** store.c: what the daemon reads into its store: object keys, request
** bodies, the state file's shape. Each check runs before anything is
** stored, so a bad object or file changes nothing.
*/
#include "store.h"

#include <string.h>

int dt__obj_key(const cJSON *o, char *out, size_t n, const char **why) {
  const cJSON *md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
  const char *kind = dt__jstr(o, "kind"), *ns = dt__jstr(md, "namespace"), *name = dt__jstr(md, "name");
  /* the kinds the manifests read as cluster-scoped: a namespace on one of
  ** them is ignored there, so it must not make a second key here */
  bool cluster =
      kind && (!strcmp(kind, "NodePool") || !strcmp(kind, "NodeClaim") || !strcmp(kind, "Node") ||
               !strcmp(kind, "RuntimeClass") || !strcmp(kind, "UnavailableOffering") ||
               !strcmp(kind, "PersistentVolume") || !strcmp(kind, "StorageClass") || !strcmp(kind, "EC2NodeClass") ||
               !strcmp(kind, "CSINode") || !strcmp(kind, "Namespace") || !strcmp(kind, "NodeOverlay"));
  *why = !kind || !*kind         ? "kind: missing"
         : strlen(kind) > 63     ? "kind: longer than 63 characters"
         : !name || !*name       ? "metadata.name: missing"
         : strlen(name) > 253    ? "metadata.name: longer than 253 characters"
         : ns && strlen(ns) > 63 ? "metadata.namespace: longer than 63 characters"
         : strchr(kind, '/')     ? "kind: holds a /"
         : strchr(name, '/')     ? "metadata.name: holds a / (Kubernetes names never do)"
         : ns && strchr(ns, '/') ? "metadata.namespace: holds a / (Kubernetes namespaces never do)"
         : strchr(name, ',')     ? "metadata.name: holds a , (Kubernetes names never do)"
         : ns && strchr(ns, ',') ? "metadata.namespace: holds a , (Kubernetes namespaces never do)"
                                 : NULL;
  if (*why) return -1;
  snprintf(out, n, "%s/%s/%s", kind, cluster ? "" : (ns && *ns ? ns : "default"), name);
  return 0;
}

bool dt__obj_left_out(const char *key) {
  static const char *const kinds[] = {"Pod/",
                                      "NodePool/",
                                      "EC2NodeClass/",
                                      "VirtualMachinePool/",
                                      "CapacityBuffer/",
                                      "PodTemplate/",
                                      "NodeOverlay/",
                                      "VirtualMachineClusterInstancetype/",
                                      "VirtualMachineInstancetype/"};
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
    if (!strncmp(key, kinds[i], strlen(kinds[i]))) return true;
  return false;
}

/* An object, or a List's items, as the manifests read them: a kind ending
** in "List" with items (Lists within Lists too) is its items; any other
** object is itself, whatever fields it has. */
static void each_one(const cJSON *o, void (*fn)(const cJSON *o, void *ud), void *ud, int depth) {
  if (!cJSON_IsObject(o)) return;
  const char *kind = dt__jstr(o, "kind");
  size_t kl = kind ? strlen(kind) : 0;
  const cJSON *items = cJSON_GetObjectItemCaseSensitive(o, "items");
  if (kl >= 4 && !strcmp(kind + kl - 4, "List") && items && depth < 256) {
    const cJSON *it;
    cJSON_ArrayForEach(it, items) each_one(it, fn, ud, depth + 1);
    return;
  }
  fn(o, ud);
}

void dt__each_object(const cJSON *docs, void (*fn)(const cJSON *o, void *ud), void *ud) {
  const cJSON *d;
  cJSON_ArrayForEach(d, docs) each_one(d, fn, ud, 0);
}

typedef struct keycheck {
  const char *why;
} keycheck;

static void check_key(const cJSON *o, void *ud) {
  keycheck *k = ud;
  char key[DT_KEY_MAX];
  const char *why;
  if (!k->why && dt__obj_key(o, key, sizeof key, &why)) k->why = why;
}

int dt__request_objects(const char *body, size_t len, cJSON **docs, dt_error *err) {
  if (!len) return dt__err(err, DT_EINVAL, "empty body: send YAML or JSON objects");
  int rc = dt__doc_parse("request", body, len, docs, err);
  if (rc) return rc;
  dt_manifests *check = dt_manifests_new();
  rc = check ? dt_manifests_add_buffer(check, "request", body, len, err) : dt__err(err, DT_ENOMEM, "out of memory");
  dt_manifests_free(check);
  keycheck k = {NULL};
  if (!rc) dt__each_object(*docs, check_key, &k);
  if (!rc && k.why) rc = dt__err(err, DT_EINVAL, "request: %s", k.why);
  if (rc) {
    cJSON_Delete(*docs);
    *docs = NULL;
  }
  return rc;
}

int dt__state_check(const char *path, const cJSON *root, dt_error *err) {
  if (!cJSON_IsObject(root))
    return dt__err(err, DT_EINVAL, "%s: not a dovetail state file (expected an object with objects[] and instances[])",
                   path);
  const cJSON *objs = cJSON_GetObjectItemCaseSensitive(root, "objects");
  const cJSON *insts = cJSON_GetObjectItemCaseSensitive(root, "instances"), *o;
  if (!cJSON_IsArray(objs) || !cJSON_IsArray(insts))
    return dt__err(err, DT_EINVAL, "%s: not a dovetail state file: %s: missing or not an array", path,
                   !cJSON_IsArray(objs) ? "objects" : "instances");
  size_t i = 0;
  cJSON_ArrayForEach(o, objs) {
    char key[DT_KEY_MAX];
    const char *why = dt__state_object_why(o, key, sizeof key);
    if (why) return dt__err(err, DT_EINVAL, "%s: objects[%zu]: %s", path, i, why);
    i++;
  }
  i = 0;
  cJSON_ArrayForEach(o, insts) {
    const char *field = dt__state_instance_missing(o);
    if (field) return dt__err(err, DT_EINVAL, "%s: instances[%zu].%s: missing or not a string", path, i, field);
    i++;
  }
  return 0;
}

const char *dt__state_object_why(const cJSON *o, char *key, size_t n) {
  const char *why = "expected an object";
  return !cJSON_IsObject(o) || dt__obj_key(o, key, n, &why) ? why : NULL;
}

const char *dt__state_instance_missing(const cJSON *o) {
  static const char *const need[] = {"id", "claim", "instanceType", "zone", "capacityType"};
  for (size_t k = 0; k < sizeof need / sizeof need[0]; k++)
    if (!dt__jstr(o, need[k]) || !*dt__jstr(o, need[k])) return need[k];
  return NULL;
}
