/*
** store.h: the daemon's objects and state file, the parts that read input:
** object keys, request bodies and the state file's shape. Pure functions,
** so the fuzzers reach them without a running daemon.
*/
#ifndef DT_STORE_H
#define DT_STORE_H

#include "internal.h"

/* Kubernetes' own bounds: names are DNS subdomains (253), namespaces DNS
** labels (63), kinds short (63). Within them every key fits DT_KEY_MAX, so
** two objects never share a key by truncation. */
#define DT_KEY_MAX 400

/* The store key of an object, "Kind/namespace/name" (namespace empty for
** cluster-scoped kinds, "default" when unset); 0, or -1 with *why. */
/* Whether a stored object of that key ("Kind/ns/name") that this version's
** reader refuses is left out of the daemon's rounds (and said) rather than
** failing them: Pods, NodePools, EC2NodeClasses and VirtualMachinePools. */
bool dt__obj_left_out(const char *key);
int dt__obj_key(const cJSON *o, char *out, size_t n, const char **why);

/* A PUT /v1/objects body: parsed, every object read by the manifest reader
** and given a key, or an error naming what is wrong. On success *docs owns
** the documents (cJSON_Delete). Nothing is stored unless everything reads. */
int dt__request_objects(const char *body, size_t len, cJSON **docs, dt_error *err);

/* Calls fn on each object of docs (a document, or the items of a List). */
void dt__each_object(const cJSON *docs, void (*fn)(const cJSON *o, void *ud), void *ud);

/* Whether root has the state file's shape: {"objects": [objects with keys],
** "instances": [{id, claim, instanceType, zone, capacityType, ...}]}. A
** file of another shape must stop the start, never read as empty. */
int dt__state_check(const char *path, const cJSON *root, dt_error *err);
/* What dt__state_check asks of each item: an object that can be stored (its
** key into key[n]; NULL, or why not), and an instance's fields (the first
** one missing or not a non-empty string, or NULL). */
const char *dt__state_object_why(const cJSON *o, char *key, size_t n);
const char *dt__state_instance_missing(const cJSON *o);

#endif
