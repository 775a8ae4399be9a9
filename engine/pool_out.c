/*
** pool_out.c: the VM pools' round read and written. The round (pool.c)
** leaves its decisions as plain structs in the result's arena (result.h):
** a record per pool and its actions, each VM to create, update or re-create
** with its VirtualMachine object. The accessors hand them out, the table is
** printed from them, the YAML is their objects, and the PoolActions
** document, built from them once the round is done, is what -o json writes
** (through dt__doc_write) and the Lua module's tables are made from.
*/
#include "result.h"

#include <string.h>

static void put_time(cJSON *o, const char *k, int64_t t) {
  char tmp[40];
  dt__fmt_time(t, tmp, sizeof tmp);
  dt__json_put_str(o, k, tmp);
}

/* An action as the document writes it: a count of VMs waiting is {for,
** count, reason}; a VM's action has its name and reason, then what it has
** of action, reusesVolumes, preserveState, object, for and the heal's
** figures (attempt, failures, nextAllowed), in that order. */
static cJSON *action_doc(const dt_pool_act *act) {
  const dt_pool_action_info *a = &act->info;
  cJSON *o = cJSON_CreateObject();
  if (!a->vm) {
    dt__json_put_str(o, "for", a->wait_for);
    dt__json_put_num(o, "count", (double)a->count);
    dt__json_put_str(o, "reason", a->reason);
    return o;
  }
  dt__json_put_str(o, "name", a->vm);
  dt__json_put_str(o, "reason", a->reason);
  if (a->action) dt__json_put_str(o, "action", a->action);
  if (a->reuses_volumes) {
    cJSON *rv = dt__json_put(o, "reusesVolumes", cJSON_CreateArray());
    for (size_t i = 0; i < a->nreuses; i++) dt__json_put_str(rv, NULL, a->reuses_volumes[i]);
  }
  if (a->preserve_state >= 0) dt__json_put(o, "preserveState", cJSON_CreateBool(a->preserve_state));
  /* the action's own object, not a copy (a reference to its members): the document lives no
  ** longer than the actions. (cJSON_AddItemReferenceToObject leaks its reference when the add
  ** runs out of memory; dt__json_put frees what it cannot add.) */
  if (act->object && !dt__json_put(o, "object", cJSON_CreateObjectReference(act->object->child))) {
    cJSON_Delete(o);
    return NULL;
  }
  if (a->wait_for) dt__json_put_str(o, "for", a->wait_for);
  if (a->attempt > 0) {
    dt__json_put_num(o, "attempt", (double)a->attempt);
    dt__json_put_num(o, "failures", (double)a->failures);
    put_time(o, "nextAllowed", a->next_allowed);
  }
  return o;
}

static const char *const k_lists[] = {"create", "delete", "update", "heal", "detached", "waiting"};

static cJSON *pool_doc(const dt_pools *r, const dt_pool_rec *p) {
  const dt_pool_info *in = &p->info;
  cJSON *po = cJSON_CreateObject();
  dt__json_put_str(po, "name", in->name);
  dt__json_put_str(po, "namespace", in->ns);
  dt__json_put_str(po, "templateHash", in->template_hash);
  cJSON *st = dt__json_put(po, "status", cJSON_CreateObject());
  dt__json_put_num(st, "replicas", (double)in->replicas);
  dt__json_put_num(st, "current", (double)in->current);
  dt__json_put_num(st, "ready", (double)in->ready);
  dt__json_put_num(st, "unavailable", (double)in->unavailable);
  if (p->has_max_unavailable) dt__json_put_num(st, "maxUnavailable", (double)in->max_unavailable);
  if (p->has_outdated) dt__json_put_num(st, "outdated", (double)in->outdated);
  for (int l = DT_POOL_CREATE; l <= DT_POOL_WAITING; l++) {
    cJSON *list = dt__json_put(po, k_lists[l], cJSON_CreateArray());
    for (size_t i = in->first_action; i < in->first_action + in->nactions; i++)
      if ((int)r->acts.v[i].info.list == l) dt__json_put(list, NULL, action_doc(&r->acts.v[i]));
  }
  cJSON *notes = dt__json_put(po, "notes", cJSON_CreateArray());
  for (size_t i = 0; i < p->notes.n; i++) dt__json_put_str(notes, NULL, p->notes.v[i]);
  return po;
}

int dt__pools_doc_build(dt_pools *r, int64_t now) {
  dt__init();
  dt__alloc_failed(1);
  cJSON *root = r->root = cJSON_CreateObject();
  dt__json_put_str(root, "apiVersion", "dovetail.dev/v1alpha1");
  dt__json_put_str(root, "kind", "PoolActions");
  put_time(root, "now", now);
  cJSON *jp = dt__json_put(root, "pools", cJSON_CreateArray());
  for (size_t i = 0; i < r->pools.n; i++) dt__json_put(jp, NULL, pool_doc(r, &r->pools.v[i]));
  if (r->notes.n) {
    cJSON *notes = dt__json_put(root, "notes", cJSON_CreateArray());
    for (size_t i = 0; i < r->notes.n; i++) dt__json_put_str(notes, NULL, r->notes.v[i]);
  }
  if (r->has_policy_errors) dt__json_put_policy_errors(root, r->policy_errors.v, r->policy_errors.n);
  const dt_pools_stats *st = &r->stats;
  cJSON *sum = dt__json_put(root, "summary", cJSON_CreateObject());
  dt__json_put_num(sum, "pools", (double)st->pools);
  dt__json_put_num(sum, "create", (double)st->create);
  dt__json_put_num(sum, "delete", (double)st->del);
  dt__json_put_num(sum, "update", (double)st->update);
  dt__json_put_num(sum, "heal", (double)st->heal);
  dt__json_put_num(sum, "detached", (double)st->detached);
  dt__json_put_num(sum, "waiting", (double)st->waiting);
  return dt__alloc_failed(1) ? DT_ENOMEM : 0;
}

/* ------------------------------------------------------------ render */

static void table_list(dt_buf *b, const dt_pools *r, const dt_pool_rec *p, dt_pool_list list, const char *verb) {
  for (size_t i = p->info.first_action; i < p->info.first_action + p->info.nactions; i++) {
    const dt_pool_action_info *a = &r->acts.v[i].info;
    if (a->list != list) continue;
    dt__buf_printf(b, "  %-13s %-28s %s", a->action ? a->action : verb, a->vm ? a->vm : "-",
                   a->reason ? a->reason : "");
    for (size_t v = 0; v < a->nreuses; v++) /* the volumes a gap's VM takes back, as -o json's reusesVolumes */
      dt__buf_printf(b, "%s%s", v ? ", " : "; reuses ", a->reuses_volumes[v]);
    dt__buf_putc(b, '\n');
  }
}

static void render_table(const dt_pools *r, dt_buf *b) {
  for (size_t k = 0; k < r->pools.n; k++) {
    const dt_pool_rec *p = &r->pools.v[k];
    dt__buf_printf(b, "pool %s/%s: %d of %d replicas, %d ready, maxUnavailable %d\n", p->info.ns, p->info.name,
                   (int)p->info.current, (int)p->info.replicas, (int)p->info.ready, (int)p->info.max_unavailable);
    table_list(b, r, p, DT_POOL_HEAL, "heal");
    table_list(b, r, p, DT_POOL_DETACHED, "detach");
    table_list(b, r, p, DT_POOL_CREATE, "create");
    table_list(b, r, p, DT_POOL_DELETE, "delete");
    table_list(b, r, p, DT_POOL_UPDATE, "update");
    table_list(b, r, p, DT_POOL_WAITING, "wait");
    for (size_t i = 0; i < p->notes.n; i++) dt__buf_printf(b, "  note: %s\n", p->notes.v[i]);
  }
  const dt_pools_stats *s = &r->stats;
  dt__buf_printf(b, "%zu pool%s: %zu create, %zu delete, %zu update, %zu heal, %zu detached, %zu waiting\n", s->pools,
                 s->pools == 1 ? "" : "s", s->create, s->del, s->update, s->heal, s->detached, s->waiting);
}

/* The VirtualMachines to apply, as plan -o yaml prints NodeClaims: each
** creation, update and re-creating heal's object (the actions and their
** reasons stay in -o json and the table). */
static void render_yaml(const dt_pools *r, dt_buf *b) {
  cJSON *docs = cJSON_CreateArray();
  dt_buf unowned = {0};
  static const dt_pool_list kinds[] = {DT_POOL_CREATE, DT_POOL_UPDATE, DT_POOL_HEAL};
  for (size_t k = 0; k < r->pools.n && docs; k++) {
    const dt_pool_rec *p = &r->pools.v[k];
    bool told = false;
    for (size_t l = 0; l < 3; l++)
      for (size_t i = p->info.first_action; i < p->info.first_action + p->info.nactions; i++) {
        const cJSON *obj = r->acts.v[i].object;
        if (r->acts.v[i].info.list != kinds[l] || !obj) continue;
        const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
        const cJSON *own = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(md, "ownerReferences"), 0);
        if (!own || cJSON_GetObjectItemCaseSensitive(own, "uid")) {
          if (!cJSON_AddItemReferenceToArray(docs, (cJSON *)obj)) b->oom = 1;
          continue;
        }
        /* The API server refuses an ownerReference without the owner's
        ** uid: a pool that has none (not read from a cluster) owns
        ** nothing it can apply, and a comment says so. */
        cJSON *copy = cJSON_Duplicate(obj, 1);
        if (!copy || !cJSON_AddItemToArray(docs, copy)) {
          cJSON_Delete(copy);
          b->oom = 1;
          continue;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(copy, "metadata"), "ownerReferences");
        if (!told)
          dt__buf_printf(&unowned,
                         "# VirtualMachinePool %s/%s has no metadata.uid, so its VMs above carry no ownerReferences "
                         "(the API server takes an owner only with its uid); read the pool from the cluster "
                         "(kubectl get -o yaml) to have them owned\n",
                         p->info.ns, p->info.name);
        told = true;
      }
  }
  if (!docs || (docs->child && dt__yaml_emit(docs, b))) b->oom = 1;
  if (unowned.oom) b->oom = 1;
  if (unowned.p) dt__buf_puts(b, unowned.p);
  dt__free(unowned.p);
  cJSON_Delete(docs);
}

char *dt_pools_render(const dt_pools *r, dt_format format, size_t *len) {
  dt_buf b = {0};
  dt__init();
  if (format == DT_FORMAT_TABLE)
    render_table(r, &b);
  else if (format == DT_FORMAT_YAML)
    render_yaml(r, &b);
  else
    dt__doc_write(r->root, format, &b);
  return dt__buf_take(&b, len);
}

/* ------------------------------------------------------------ accessors */

size_t dt_pools_action_count(const dt_pools *r) { return r->acts.n; }

int dt_pools_action(const dt_pools *r, size_t i, dt_pool_action_info *out) {
  if (i >= r->acts.n) return DT_ERANGE;
  *out = r->acts.v[i].info;
  return 0;
}

size_t dt_pools_pool_count(const dt_pools *r) { return r->pools.n; }

int dt_pools_pool(const dt_pools *r, size_t i, dt_pool_info *out) {
  if (i >= r->pools.n) return DT_ERANGE;
  *out = r->pools.v[i].info;
  return 0;
}

static const cJSON *action_object(const dt_pools *r, size_t i) { return i < r->acts.n ? r->acts.v[i].object : NULL; }

char *dt_pools_action_object(const dt_pools *r, size_t i, size_t *len) {
  const cJSON *o = r ? action_object(r, i) : NULL;
  if (!o) return NULL;
  dt__init();
  char *text = cJSON_PrintUnformatted(o);
  if (text && len) *len = strlen(text);
  return text;
}

const dt_pool_create *dt__pools_creates(const dt_pools *r, size_t *n) {
  *n = r->creates.n;
  return r->creates.v;
}

void dt_pools_stats_get(const dt_pools *r, dt_pools_stats *out) { *out = r->stats; }

const cJSON *dt__pools_doc(const dt_pools *r) { return r->root; }

void dt_pools_free(dt_pools *r) {
  if (!r) return;
  cJSON_Delete(r->root);
  for (size_t i = 0; i < r->acts.n; i++) cJSON_Delete(r->acts.v[i].object);
  for (size_t i = 0; i < r->pools.n; i++) dt__free(r->pools.v[i].notes.v);
  dt__free(r->pools.v);
  dt__free(r->acts.v);
  dt__free(r->notes.v);
  dt__free(r->policy_errors.v);
  dt__free(r->creates.v);
  dt__arena_free(&r->arena);
  dt__free(r);
}
