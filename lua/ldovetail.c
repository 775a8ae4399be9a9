/*
** ldovetail.c: the `dovetail` Lua module (luaopen_dovetail).
**
**   local dt = require "dovetail"
**   local plan = dt.plan{ manifests = text | {text...}, files = {path...},
**                         catalog = path | bundled name, catalog_text = json, now = "RFC3339" | seconds,
**                         seed = n, format = nil | "json" | "yaml" | "table" }
**
** docs/lua.md documents every function. They follow the Lua library shape:
** check arguments, compute, push, return. Failures in input return nil plus
** a message (file, object, field), as io.open does; so does an option table
** with a key the function does not take or a value of the wrong type (the
** message names the key). An argument of the wrong type itself (a plan
** without its table, dt.milli without a string) raises an error.
*/
#include <lauxlib.h>
#include <lua.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/result.h"

static void push_number(lua_State *L, double d) {
  if (d == floor(d) && fabs(d) < 9e15)
    lua_pushinteger(L, (lua_Integer)d);
  else
    lua_pushnumber(L, d);
}

static int push_fail(lua_State *L, const char *msg) {
  luaL_pushfail(L);
  lua_pushstring(L, msg);
  return 2;
}

/* Push document j as a table, leaving out the members named in skip (a
** NULL-terminated list, or NULL). */
static void push_json_except(lua_State *L, const cJSON *j, const char *const *skip);

static void push_json(lua_State *L, const cJSON *j) { push_json_except(L, j, NULL); }

static bool skipped(const char *key, const char *const *skip) {
  for (; skip && *skip; skip++)
    if (!strcmp(key, *skip)) return true;
  return false;
}

static void push_json_except(lua_State *L, const cJSON *j, const char *const *skip) {
  luaL_checkstack(L, 4, "plan too deeply nested");
  if (cJSON_IsObject(j)) {
    lua_createtable(L, 0, cJSON_GetArraySize(j));
    for (const cJSON *c = j->child; c; c = c->next) {
      if (skipped(c->string, skip)) continue;
      push_json(L, c);
      lua_setfield(L, -2, c->string);
    }
  } else if (cJSON_IsArray(j)) {
    lua_createtable(L, cJSON_GetArraySize(j), 0);
    lua_Integer i = 1;
    for (const cJSON *c = j->child; c; c = c->next) {
      push_json(L, c);
      lua_rawseti(L, -2, i++);
    }
  } else if (cJSON_IsString(j)) {
    lua_pushstring(L, j->valuestring);
  } else if (cJSON_IsNumber(j) || cJSON_IsRaw(j)) { /* raw: a number written as the JSON shows it (prices) */
    push_number(L, cJSON_IsRaw(j) ? strtod(j->valuestring, NULL) : j->valuedouble);
  } else if (cJSON_IsBool(j)) {
    lua_pushboolean(L, cJSON_IsTrue(j));
  } else {
    lua_pushnil(L);
  }
}

/* Add manifests from t.manifests (string or list of strings) and t.files;
** check_options has checked their types. */
static int add_manifests(lua_State *L, dt_manifests *m, dt_error *err) {
  lua_getfield(L, 1, "manifests");
  if (lua_type(L, -1) == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    if (dt_manifests_add_buffer(m, "manifests", s, len, err)) return -1;
  } else if (lua_istable(L, -1)) {
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, -1, i);
      size_t len;
      const char *s = lua_tolstring(L, -1, &len);
      char name[64];
      snprintf(name, sizeof name, "manifests[%d]", (int)i);
      if (dt_manifests_add_buffer(m, name, s, len, err)) return -1;
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  lua_getfield(L, 1, "files");
  if (lua_istable(L, -1)) {
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, -1, i);
      if (dt_manifests_add_file(m, lua_tostring(L, -1), err)) return -1;
      lua_pop(L, 1);
    }
  } else if (lua_type(L, -1) == LUA_TSTRING) {
    if (dt_manifests_add_file(m, lua_tostring(L, -1), err)) return -1;
  }
  lua_pop(L, 1);
  if (dt_manifests_finish(m, err)) return -1; /* what depends on the whole input: buffers' chunks */
  lua_getfield(L, 1, "scheduler_config"); /* Karpenter's --scheduler-config file, after every input */
  if (lua_type(L, -1) == LUA_TSTRING && dt_manifests_scheduler_config(m, lua_tostring(L, -1), err)) return -1;
  lua_pop(L, 1);
  return 0;
}

/* ---- policies: dt.policy(path) -> userdata with :reload(), :hooks() ---- */

#define POLICY_MT "dovetail.policy"

static dt_policy **check_policy(lua_State *L, int idx) {
  dt_policy **pp = luaL_checkudata(L, idx, POLICY_MT);
  if (!*pp) luaL_error(L, "policy is closed");
  return pp;
}

static int l_policy(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  dt_policy **pp = lua_newuserdatauv(L, sizeof *pp, 0);
  *pp = NULL;
  luaL_setmetatable(L, POLICY_MT);
  dt_error err = {0};
  if (dt_policy_load_file(path, NULL, pp, &err)) return push_fail(L, err.msg);
  return 1;
}

static int l_policy_reload(lua_State *L) {
  dt_policy **pp = check_policy(L, 1);
  int changed;
  dt_error err = {0};
  if (dt_policy_reload(*pp, &changed, &err)) return push_fail(L, err.msg);
  lua_pushboolean(L, changed);
  return 1;
}

static int l_policy_hooks(lua_State *L) {
  lua_pushstring(L, dt_policy_hooks(*check_policy(L, 1)));
  return 1;
}

static int l_policy_gc(lua_State *L) {
  dt_policy **pp = luaL_checkudata(L, 1, POLICY_MT);
  dt_policy_free(*pp);
  *pp = NULL;
  return 0;
}

/* dt.check(path) -> hooks string, or nil, message */
static int l_check(lua_State *L) {
  dt_policy *p = NULL;
  dt_error err = {0};
  if (dt_policy_load_file(luaL_checkstring(L, 1), NULL, &p, &err)) return push_fail(L, err.msg);
  lua_pushstring(L, dt_policy_hooks(p));
  dt_policy_free(p);
  return 1;
}

/* dt.plan(t) -> plan table | string, or nil, message */
enum { RUN_PLAN, RUN_POOL, RUN_DISRUPT };

/* dt.plan{...}, dt.pool{...} and dt.disrupt{...}: pool skips the catalog and packing. */
/* An option key the function does not know is an error naming it (a
** misspelt `file` must not plan nothing without a word). */
static const char *unknown_option(lua_State *L, int mode) {
  static const char *const common[] = {"manifests", "files", "now", "seed", "format", "policy", NULL};
  static const char *const plan[] = {"catalog",    "catalog_text", "packing",          "timings",
                                     "policy_dir", "explain",      "scheduler_config", NULL};
  static const char *const disrupt[] = {"catalog", "catalog_text",     "policy_dir", "spot_to_spot",
                                        "explain", "scheduler_config", NULL};
  const char *const *extra = mode == RUN_POOL ? NULL : mode == RUN_DISRUPT ? disrupt : plan;
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) {
      lua_pop(L, 1);
      return "(a key that is not a string)";
    }
    const char *k = lua_tostring(L, -1);
    bool ok = false;
    for (const char *const *c = common; *c && !ok; c++) ok = !strcmp(k, *c);
    for (const char *const *c = extra; c && *c && !ok; c++) ok = !strcmp(k, *c);
    if (!ok) {
      lua_pop(L, 1);
      return k; /* still referenced by the table */
    }
  }
  return NULL;
}

/* A list option (manifests, files): a table whose keys are exactly 1..n
** and whose values are strings. NULL when it is one, else the message,
** pushed. */
static const char *check_list(lua_State *L, int idx, const char *key, const char *want) {
  idx = lua_absindex(L, idx);
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx), count = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    count++;
  }
  if (count != n)
    return lua_pushfstring(L, "%s: expected %s, got a table with keys other than 1..%d", key, want, (int)n);
  for (lua_Integer i = 1; i <= n; i++) {
    int t = lua_rawgeti(L, idx, i);
    lua_pop(L, 1);
    if (t != LUA_TSTRING)
      return lua_pushfstring(L, "%s[%d]: expected a string, got %s", key, (int)i, lua_typename(L, t));
  }
  return NULL;
}

/* Every option's type and, where it has few, its values. NULL when they
** are right, else the message naming the option, pushed. */
static const char *check_options(lua_State *L, int mode) {
  const struct {
    const char *key, *want;
    int t1, t2;
  } k_opts[] = {
      {"manifests", "a string or a list of strings", LUA_TSTRING, LUA_TTABLE},
      {"files", "a path or a list of paths", LUA_TSTRING, LUA_TTABLE},
      {"now", "an RFC 3339 time or Unix seconds", LUA_TSTRING, LUA_TNUMBER},
      {"seed", "an integer", LUA_TNUMBER, LUA_TNUMBER},
      {"format", "\"json\", \"yaml\" or \"table\"", LUA_TSTRING, LUA_TSTRING},
      {"policy", "a path or a dovetail.policy", LUA_TSTRING, LUA_TUSERDATA},
      {"catalog", "a path or a bundled catalog's name", LUA_TSTRING, LUA_TSTRING},
      {"catalog_text", "a catalog as JSON text", LUA_TSTRING, LUA_TSTRING},
      {"packing", "\"cost\" or \"ffd\"", LUA_TSTRING, LUA_TSTRING},
      {"timings", "a boolean", LUA_TBOOLEAN, LUA_TBOOLEAN},
      {"policy_dir", "a directory", LUA_TSTRING, LUA_TSTRING},
      {"explain", mode == RUN_DISRUPT ? "a node's name" : "a pod, as namespace/name or a unique name", LUA_TSTRING,
       LUA_TSTRING},
      {"spot_to_spot", "a boolean", LUA_TBOOLEAN, LUA_TBOOLEAN},
      {"scheduler_config", "a path (Karpenter's --scheduler-config document)", LUA_TSTRING, LUA_TSTRING},
  };
  for (size_t i = 0; i < sizeof k_opts / sizeof k_opts[0]; i++) {
    int t = lua_getfield(L, 1, k_opts[i].key);
    const char *msg = NULL;
    if (t == LUA_TNIL) {
    } else if (t != k_opts[i].t1 && t != k_opts[i].t2) {
      msg = lua_pushfstring(L, "%s: expected %s, got %s", k_opts[i].key, k_opts[i].want, lua_typename(L, t));
    } else if (t == LUA_TTABLE) {
      msg = check_list(L, -1, k_opts[i].key, k_opts[i].want);
    } else if (t == LUA_TNUMBER && !lua_isinteger(L, -1)) {
      int whole;
      lua_tointegerx(L, -1, &whole); /* a float with an exact integer value, such as 2^31 * 1.0, is fine */
      if (!whole)
        msg =
            lua_pushfstring(L, "%s: expected %s, got %f", k_opts[i].key,
                            !strcmp(k_opts[i].key, "now") ? "whole Unix seconds" : k_opts[i].want, lua_tonumber(L, -1));
    } else if (t == LUA_TUSERDATA) {
      dt_policy **pp = luaL_testudata(L, -1, POLICY_MT);
      if (!pp)
        msg = lua_pushfstring(L, "policy: expected %s, got userdata", k_opts[i].want);
      else if (!*pp)
        msg = lua_pushliteral(L, "policy: the dovetail.policy is closed");
    } else if (!strcmp(k_opts[i].key, "format")) {
      const char *v = lua_tostring(L, -1);
      if (strcmp(v, "json") && strcmp(v, "yaml") && strcmp(v, "table"))
        msg = lua_pushfstring(L, "format: expected %s, got \"%s\"", k_opts[i].want, v);
    } else if (!strcmp(k_opts[i].key, "packing")) {
      const char *v = lua_tostring(L, -1);
      if (strcmp(v, "cost") && strcmp(v, "ffd"))
        msg = lua_pushfstring(L, "packing: expected %s, got \"%s\"", k_opts[i].want, v);
    }
    if (msg) return msg;
    lua_pop(L, 1);
  }
  lua_getfield(L, 1, "catalog");
  lua_getfield(L, 1, "catalog_text");
  if (!lua_isnil(L, -1) && !lua_isnil(L, -2))
    return lua_pushliteral(L, "catalog_text: give catalog or catalog_text, not both");
  lua_pop(L, 2);
  return NULL;
}

/* Push a result: the text rendered in the format asked for, or, without
** one, a table built from the document its JSON is written from. */
static void push_result(lua_State *L, const char *text, size_t len, const cJSON *doc) {
  if (text)
    lua_pushlstring(L, text, len);
  else
    push_json(L, doc);
}

/* ------------------------------------------------------------ decisions */

/*
** The decisions of a result (a plan's claims, bindings and unschedulable
** pods; a pass's commands and blocked nodes) come from the public
** accessors, not from the document: the tables they make are the ones
** docs/lua.md shows, field for field, numbers as the JSON writes them.
*/
static void set_str(lua_State *L, const char *k, const char *v) {
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

/* A price as the JSON prints it (six significant digits), read back. */
static void set_price(lua_State *L, const char *k, double v) {
  char tmp[64];
  dt__fmt_price(tmp, sizeof tmp, v);
  push_number(L, strtod(tmp, NULL));
  lua_setfield(L, -2, k);
}

static void set_strs(lua_State *L, const char *k, const char *const *v, size_t n) {
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushstring(L, v[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, k);
}

/* A new claim of a plan, or (replacement) a command's replacement: the
** object the JSON renderings write for it, as a table. */
static void push_claim(lua_State *L, const dt_claim_info *c, bool replacement) {
  cJSON *d = dt__claim_doc(c, replacement);
  if (!d) luaL_error(L, "out of memory");
  push_json(L, d);
  cJSON_Delete(d);
}

/* A table of {a = .., b = ..} pairs, one per entry: the plan's bindings and
** unschedulable pods, the pass's blocked nodes. */
static void push_pair(lua_State *L, const char *ka, const char *a, const char *kb, const char *b) {
  lua_createtable(L, 0, 2);
  set_str(L, ka, a);
  set_str(L, kb, b);
}

static void set_plan_decisions(lua_State *L, const dt_plan *p) {
  size_t n = dt_plan_claim_count(p);
  lua_createtable(L, (int)n, 0);
  dt_claim_info c;
  for (size_t i = 0; !dt_plan_claim(p, i, &c); i++) {
    push_claim(L, &c, false);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "nodeClaims");
  lua_createtable(L, (int)dt_plan_binding_count(p), 0);
  char pod[1024];
  const char *node;
  for (size_t i = 0; !dt_plan_binding(p, i, pod, sizeof pod, &node); i++) {
    push_pair(L, "pod", pod, "node", node);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "bindings");
  lua_createtable(L, (int)dt_plan_unschedulable_count(p), 0);
  dt_unschedulable_info u;
  for (size_t i = 0; !dt_plan_unschedulable(p, i, &u); i++) {
    push_pair(L, "pod", u.pod, "reason", u.reason);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "unschedulable");
}

static void push_command(lua_State *L, const dt_command_info *c) {
  luaL_checkstack(L, 4, "out of stack");
  lua_createtable(L, 0, 6);
  set_str(L, "reason", c->reason);
  set_str(L, "action", c->action);
  if (c->detail) set_str(L, "detail", c->detail);
  lua_createtable(L, (int)c->nnodes, 0);
  for (size_t k = 0; k < c->nnodes; k++) {
    const dt_disrupt_node_info *d = &c->nodes[k];
    lua_createtable(L, 0, 7);
    set_str(L, "name", d->name);
    set_str(L, "nodePool", d->nodepool);
    if (d->instance_type) set_str(L, "instanceType", d->instance_type);
    if (d->zone) set_str(L, "zone", d->zone);
    if (d->capacity_type) set_str(L, "capacityType", d->capacity_type);
    set_price(L, "price", d->price);
    push_number(L, (double)d->pods);
    lua_setfield(L, -2, "pods");
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
  lua_setfield(L, -2, "nodes");
  lua_createtable(L, (int)c->nreplacements, 0);
  for (size_t k = 0; k < c->nreplacements; k++) {
    push_claim(L, &c->replacements[k], true);
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
  lua_setfield(L, -2, "replacements");
  set_price(L, "savings", c->savings);
}

static void set_disrupt_decisions(lua_State *L, const dt_disruption *d) {
  lua_createtable(L, (int)dt_disrupt_command_count(d), 0);
  dt_command_info c;
  for (size_t i = 0; !dt_disrupt_command(d, i, &c); i++) {
    push_command(L, &c);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "commands");
  lua_createtable(L, (int)dt_disrupt_blocked_count(d), 0);
  dt_blocked_info b;
  for (size_t i = 0; !dt_disrupt_blocked(d, i, &b); i++) {
    push_pair(L, "node", b.node, "reason", b.reason);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "blocked");
}

/* One call of plan, disrupt or pool: its options, inputs and results. */
typedef struct job {
  int mode;
  dt_plan_opts opts;
  dt_error err;
  const char *fmt; /* the format asked for (kept on the Lua stack), or NULL: a table */
  dt_format f;
  dt_catalog *cat;
  dt_manifests *m;
  dt_plan *plan;
  dt_pools *pools;
  dt_disruption *dis;
  dt_policy *owned; /* loaded here from a path */
  dt_policy_dir *pdir;
  char *text;       /* the result as text, when a format was asked for */
  const cJSON *doc; /* else the result as a document */
  cJSON *plan_doc;
  size_t len;
} job;

static void job_free(job *j) {
  dt_free(j->text);
  cJSON_Delete(j->plan_doc);
  dt_plan_free(j->plan);
  dt_pools_free(j->pools);
  dt_disrupt_free(j->dis);
  dt_manifests_free(j->m);
  dt_catalog_free(j->cat);
  dt_policy_free(j->owned);
  dt_policy_dir_free(j->pdir);
}

static int job_fail(job *j, const char *msg) {
  snprintf(j->err.msg, sizeof j->err.msg, "%s", msg);
  return DT_EINVAL;
}

/* now, seed, packing, timings and format (left on the stack). */
static int job_options(lua_State *L, job *j) {
  lua_getfield(L, 1, "now");
  if (lua_type(L, -1) == LUA_TNUMBER) {
    j->opts.now = (int64_t)lua_tointeger(L, -1);
  } else if (lua_type(L, -1) == LUA_TSTRING && dt_time_parse(lua_tostring(L, -1), &j->opts.now, &j->err)) {
    char msg[sizeof j->err.msg];
    snprintf(msg, sizeof msg, "now: %s", j->err.msg);
    return job_fail(j, msg);
  }
  lua_getfield(L, 1, "seed");
  j->opts.seed = (uint64_t)lua_tointeger(L, -1);
  lua_getfield(L, 1, "packing");
  if (lua_isstring(L, -1) && !strcmp(lua_tostring(L, -1), "ffd")) j->opts.packing = DT_PACKING_FFD;
  lua_getfield(L, 1, "timings");
  j->opts.timings = lua_toboolean(L, -1);
  lua_pop(L, 4);
  lua_getfield(L, 1, "format");
  j->fmt = lua_tostring(L, -1); /* stays on the stack until we return */
  j->f = j->fmt && !strcmp(j->fmt, "yaml")    ? DT_FORMAT_YAML
         : j->fmt && !strcmp(j->fmt, "table") ? DT_FORMAT_TABLE
                                              : DT_FORMAT_JSON;
  return 0;
}

/* The policy, the catalog, the manifests and the NodePools' policies. */
static int job_inputs(lua_State *L, job *j) {
  bool pool = j->mode == RUN_POOL;
  lua_getfield(L, 1, "policy");
  if (lua_isstring(L, -1)) {
    if (dt_policy_load_file(lua_tostring(L, -1), NULL, &j->owned, &j->err)) return lua_pop(L, 1), DT_EINVAL;
    j->opts.policy = j->owned;
  } else if (!lua_isnil(L, -1)) {
    j->opts.policy = *(dt_policy **)lua_touserdata(L, -1);
  }
  lua_getfield(L, 1, "catalog");
  lua_getfield(L, 1, "catalog_text");
  int rc = 0;
  if (pool) {
    rc = 0;
  } else if (lua_isstring(L, -1)) {
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    rc = dt_catalog_load_buffer("catalog_text", s, len, &j->cat, &j->err);
  } else {
    rc = dt_catalog_load_named(lua_isstring(L, -2) ? lua_tostring(L, -2) : NULL, &j->cat, &j->err);
  }
  lua_pop(L, 3);
  if (rc) return rc;
  if (!(j->m = dt_manifests_new())) return job_fail(j, "out of memory");
  if ((rc = add_manifests(L, j->m, &j->err))) return rc;
  lua_getfield(L, 1, "policy_dir");
  if (!pool && lua_isstring(L, -1)) { /* NodePools' own policies; errors go with the result's notes */
    if ((rc = dt_policy_dir_open(lua_tostring(L, -1), &j->pdir, &j->err))) return lua_pop(L, 1), rc;
    dt_policy_dir_sync(j->pdir, j->m);
    dt_policy_dir_apply(j->pdir, &j->opts.pool_policies, &j->opts.pool_policy_names, &j->opts.npool_policies);
  }
  lua_pop(L, 1);
  return 0;
}

/* Run it; the result as text or a document in j, an explanation (plan with
** explain) pushed already (*nret 1). */
static int job_run(lua_State *L, job *j, int *nret) {
  dt_plan_opts *o = &j->opts;
  if (j->mode == RUN_DISRUPT) {
    dt_disrupt_opts d = {.now = o->now,
                         .seed = o->seed,
                         .policy = o->policy,
                         .pool_policies = o->pool_policies,
                         .pool_policy_names = o->pool_policy_names,
                         .npool_policies = o->npool_policies};
    lua_getfield(L, 1, "spot_to_spot");
    d.spot_to_spot = lua_toboolean(L, -1);
    lua_getfield(L, 1, "explain");
    d.explain = lua_tostring(L, -1); /* stays on the stack until we return */
    if (dt_disrupt_run(j->cat, j->m, &d, &j->dis, &j->err)) return DT_EINVAL;
    if (j->fmt)
      j->text = dt_disrupt_render(j->dis, j->f, &j->len);
    else
      j->doc = dt__disrupt_doc(j->dis);
  } else if (j->mode == RUN_POOL) {
    dt_pool_opts po = {o->now, o->seed, o->policy};
    if (dt_pools_run(j->m, &po, &j->pools, &j->err)) return DT_EINVAL;
    if (j->fmt)
      j->text = dt_pools_render(j->pools, j->f, &j->len);
    else
      j->doc = dt__pools_doc(j->pools);
  } else {
    lua_getfield(L, 1, "explain");
    o->explain = lua_tostring(L, -1); /* stays on the stack until we return */
    if (dt_plan_run(j->cat, j->m, o, &j->plan, &j->err)) return DT_EINVAL;
    if (o->explain) { /* the explanation first, the plan second */
      size_t len = 0;
      char *ex = j->fmt ? dt_plan_explain_render(j->plan, j->f, &len) : NULL;
      const cJSON *exdoc = j->fmt ? NULL : dt__plan_explain_doc(j->plan);
      if (!ex && !exdoc) return job_fail(j, "out of memory");
      push_result(L, ex, len, exdoc);
      dt_free(ex);
      *nret = 1;
    }
    if (j->fmt)
      j->text = dt_plan_render(j->plan, j->f, &j->len);
    else
      j->doc = j->plan_doc = dt__plan_doc(j->plan);
  }
  return !j->text && !j->doc ? job_fail(j, "out of memory") : 0;
}

static const char *const k_pool_lists[] = {"create", "delete", "update", "heal", "detached", "waiting", NULL};

static void push_pool_action(lua_State *L, const dt_pools *r, size_t i, const dt_pool_action_info *a) {
  luaL_checkstack(L, 4, "out of stack");
  lua_createtable(L, 0, 6);
  if (!a->vm) { /* a count of VMs waiting */
    set_str(L, "for", a->wait_for);
    push_number(L, (double)a->count);
    lua_setfield(L, -2, "count");
    set_str(L, "reason", a->reason);
    return;
  }
  set_str(L, "name", a->vm);
  set_str(L, "reason", a->reason);
  if (a->action) set_str(L, "action", a->action);
  if (a->reuses_volumes) set_strs(L, "reusesVolumes", a->reuses_volumes, a->nreuses);
  if (a->preserve_state >= 0) {
    lua_pushboolean(L, a->preserve_state);
    lua_setfield(L, -2, "preserveState");
  }
  size_t len = 0;
  char *text = dt_pools_action_object(r, i, &len);
  cJSON *obj = text ? cJSON_ParseWithLength(text, len) : NULL;
  dt_free(text);
  if (obj) {
    push_json(L, obj);
    cJSON_Delete(obj);
    lua_setfield(L, -2, "object");
  }
  if (a->wait_for) set_str(L, "for", a->wait_for);
  if (a->attempt > 0) {
    char ts[40];
    push_number(L, (double)a->attempt);
    lua_setfield(L, -2, "attempt");
    push_number(L, (double)a->failures);
    lua_setfield(L, -2, "failures");
    dt__fmt_time(a->next_allowed, ts, sizeof ts);
    set_str(L, "nextAllowed", ts);
  }
}

/* The pools: each pool's figures and notes from the document, its lists of
** actions from the accessors. */
static void set_pool_decisions(lua_State *L, const dt_pools *r, const cJSON *doc) {
  const cJSON *pj = cJSON_GetObjectItemCaseSensitive(doc, "pools");
  lua_createtable(L, (int)dt_pools_pool_count(r), 0);
  pj = pj ? pj->child : NULL;
  dt_pool_info pi;
  for (size_t k = 0; pj && !dt_pools_pool(r, k, &pi); k++, pj = pj->next) {
    push_json_except(L, pj, k_pool_lists);
    for (int l = DT_POOL_CREATE; l <= DT_POOL_WAITING; l++) {
      lua_newtable(L);
      lua_Integer n = 0;
      dt_pool_action_info a;
      for (size_t i = pi.first_action; i < pi.first_action + pi.nactions; i++)
        if (!dt_pools_action(r, i, &a) && (int)a.list == l) {
          push_pool_action(L, r, i, &a);
          lua_rawseti(L, -2, ++n);
        }
      lua_setfield(L, -2, k_pool_lists[l]);
    }
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
  lua_setfield(L, -2, "pools");
}

/* The job's result: text, or the document's table with the decisions from
** the accessors. */
static void push_job_result(lua_State *L, const job *j) {
  static const char *const plan_decisions[] = {"nodeClaims", "bindings", "unschedulable", NULL};
  static const char *const disrupt_decisions[] = {"commands", "blocked", NULL};
  if (j->text) {
    lua_pushlstring(L, j->text, j->len);
  } else if (j->plan) {
    push_json_except(L, j->doc, plan_decisions);
    set_plan_decisions(L, j->plan);
  } else if (j->dis) {
    push_json_except(L, j->doc, disrupt_decisions);
    set_disrupt_decisions(L, j->dis);
  } else if (j->pools) {
    static const char *const pools[] = {"pools", NULL};
    push_json_except(L, j->doc, pools);
    set_pool_decisions(L, j->pools, j->doc);
  } else {
    push_json(L, j->doc);
  }
}

/* What the CLI prints on standard error (skipped objects, policy_dir's
** load errors) as the result table's inputNotes. */
static void push_notes(lua_State *L, const job *j) {
  const char *notes[2] = {dt_manifests_notes(j->m), j->pdir ? dt_policy_dir_errors(j->pdir) : ""};
  if (!*notes[0] && !*notes[1]) return;
  lua_newtable(L);
  lua_Integer n = 0;
  for (int i = 0; i < 2; i++)
    for (const char *at = notes[i], *nl; *at; at = *nl ? nl + 1 : nl) {
      nl = strchr(at, '\n');
      if (!nl) nl = at + strlen(at);
      lua_pushlstring(L, at, (size_t)(nl - at));
      lua_rawseti(L, -2, ++n);
    }
  lua_setfield(L, -2, "inputNotes");
}

static int run(lua_State *L, int mode) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const char *bad = unknown_option(L, mode);
  if (bad) {
    char msg[300];
    snprintf(msg, sizeof msg, "unknown option %s (dovetail.%s takes %s)", bad,
             mode == RUN_POOL      ? "pool"
             : mode == RUN_DISRUPT ? "disrupt"
                                   : "plan",
             mode == RUN_POOL      ? "manifests, files, now, seed, format, policy"
             : mode == RUN_DISRUPT ? "manifests, files, catalog, catalog_text, now, seed, format, policy, policy_dir, "
                                     "spot_to_spot, explain, scheduler_config"
                                   : "manifests, files, catalog, catalog_text, now, seed, format, packing, policy, "
                                     "policy_dir, timings, explain, scheduler_config");
    return push_fail(L, msg);
  }
  if ((bad = check_options(L, mode))) return push_fail(L, bad);
  /* From here on every option has its type. */
  double t0 = dt__now_ms();
  job j = {.mode = mode};
  int nret = 0;
  if (job_options(L, &j) || job_inputs(L, &j)) goto fail;
  j.opts.parse_ms = dt__now_ms() - t0; /* catalog, manifests and policies, as the CLI counts it */
  if (job_run(L, &j, &nret)) goto fail;
  push_job_result(L, &j);
  if (!j.fmt) push_notes(L, &j);
  job_free(&j);
  return nret + 1;
fail:
  job_free(&j);
  return push_fail(L, j.err.msg);
}

static int l_plan(lua_State *L) { return run(L, RUN_PLAN); }
static int l_pool(lua_State *L) { return run(L, RUN_POOL); }
static int l_disrupt(lua_State *L) { return run(L, RUN_DISRUPT); }

/* dt.milli("250m") -> 250 (integer), or nil, message */
static int l_milli(lua_State *L) {
  const char *s = luaL_checkstring(L, 1);
  int64_t v;
  dt_error err;
  if (dt_quantity_parse(s, &v, &err)) return push_fail(L, err.msg);
  lua_pushinteger(L, (lua_Integer)v);
  return 1;
}

/* dt.quantity("1.5Gi") -> 1610612736 (number; integer when whole), or nil, message */
static int l_quantity(lua_State *L) {
  const char *s = luaL_checkstring(L, 1);
  int64_t v;
  dt_error err;
  if (dt_quantity_parse(s, &v, &err)) return push_fail(L, err.msg);
  if (v % 1000 == 0)
    lua_pushinteger(L, (lua_Integer)(v / 1000));
  else
    lua_pushnumber(L, (double)v / 1000.0);
  return 1;
}

/* dt.format_quantity(milli, resource) -> "1500m", "512Mi" */
static int l_format_quantity(lua_State *L) {
  lua_Integer v = luaL_checkinteger(L, 1);
  const char *res = luaL_optstring(L, 2, "cpu");
  char out[64];
  dt__fmt_quantity(out, sizeof out, res, (int64_t)v);
  lua_pushstring(L, out);
  return 1;
}

/* Read requirement argument idx, {key=, operator=, values={...}}, into
** out, checked as a NodePool's requirement is. NULL when it is right, else
** the message naming the field, pushed. */
static const char *read_req(lua_State *L, int idx, dt_symtab *t, dt_arena *a, dt_req *out, const char **key) {
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    if (!k || (strcmp(k, "key") && strcmp(k, "operator") && strcmp(k, "values")))
      return lua_pushfstring(L, "requirement %d: unknown key %s (a requirement takes key, operator and values)", idx,
                             k ? k : "(a key that is not a string)");
  }
  int ty = lua_getfield(L, idx, "key");
  if (ty != LUA_TNIL && ty != LUA_TSTRING)
    return lua_pushfstring(L, "requirement %d: key: expected a string, got %s", idx, lua_typename(L, ty));
  *key = lua_tostring(L, -1); /* stays on the stack until intersect returns */
  static const char *const ops = "In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte or Lte";
  dt_op o;
  ty = lua_getfield(L, idx, "operator");
  if (ty != LUA_TSTRING)
    return lua_pushfstring(L, "requirement %d: operator: expected %s, got %s", idx, ops, lua_typename(L, ty));
  if (dt__op_parse(lua_tostring(L, -1), &o))
    return lua_pushfstring(L, "requirement %d: operator: expected %s, got \"%s\"", idx, ops, lua_tostring(L, -1));
  lua_pop(L, 1);
  ty = lua_getfield(L, idx, "values");
  if (ty != LUA_TNIL && ty != LUA_TTABLE)
    return lua_pushfstring(L, "requirement %d: values: expected a list of strings, got %s", idx, lua_typename(L, ty));
  size_t n = ty == LUA_TTABLE ? lua_rawlen(L, -1) : 0, count = 0;
  if (ty == LUA_TTABLE)
    for (lua_pushnil(L); lua_next(L, -2); count++) lua_pop(L, 1);
  if (count != n)
    return lua_pushfstring(
        L, "requirement %d: values: expected a list of strings, got a table with keys other than 1..%d", idx, (int)n);
  if ((o == DT_OP_IN || o == DT_OP_NOTIN) && n == 0)
    return lua_pushfstring(L, "requirement %d: values: %s needs at least one value", idx, dt__op_name(o));
  if ((o == DT_OP_EXISTS || o == DT_OP_DOESNOTEXIST) && n != 0)
    return lua_pushfstring(L, "requirement %d: values: %s takes no values", idx, dt__op_name(o));
  if (o >= DT_OP_GT && n != 1)
    return lua_pushfstring(L, "requirement %d: values: %s takes exactly one integer value", idx, dt__op_name(o));
  dt_sym *vals = dt__malloc((n ? n : 1) * sizeof *vals);
  if (!vals) return lua_pushliteral(L, "out of memory");
  for (size_t i = 0; i < n; i++) {
    ty = lua_rawgeti(L, -1, (lua_Integer)i + 1);
    const char *v = ty == LUA_TSTRING || ty == LUA_TNUMBER ? lua_tostring(L, -1) : NULL;
    vals[i] = v ? dt__sym(t, v) : 0;
    lua_pop(L, 1);
    if (!v || (o >= DT_OP_GT && (!vals[i] || !t->isnum[vals[i]]))) {
      dt__free(vals);
      return v ? lua_pushfstring(L, "requirement %d: values[1]: %s needs an integer, got \"%s\"", idx, dt__op_name(o),
                                 v)
               : lua_pushfstring(L, "requirement %d: values[%d]: expected a string, got %s", idx, (int)i + 1,
                                 lua_typename(L, ty));
    }
  }
  lua_pop(L, 1);
  dt__req_make(a, out, dt__sym(t, "key"), o, vals, (uint32_t)n, t);
  dt__free(vals);
  return NULL;
}

static int cmp_cstr(const void *x, const void *y) { return strcmp(*(const char *const *)x, *(const char *const *)y); }

/* dt.intersect(a, b) -> {key=, operator=, values=sorted, gte=, lte=}, compatible; or nil, message */
static int l_intersect(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  dt_symtab t = {0};
  dt_arena a = {0};
  dt_req x, y, r;
  const char *kx, *ky, *msg = read_req(L, 1, &t, &a, &x, &kx);
  if (!msg) msg = read_req(L, 2, &t, &a, &y, &ky);
  if (!msg && kx && ky && strcmp(kx, ky))
    msg = lua_pushfstring(L, "key: the requirements are on different keys (%s, %s)", kx, ky);
  const char **names = NULL;
  if (!msg) {
    dt__req_intersect(&a, &t, &x, &y, &r);
    names = dt__malloc((r.n ? r.n : 1) * sizeof *names);
    if (!names || t.oom || a.oom) msg = lua_pushliteral(L, "out of memory");
  }
  if (msg) {
    dt__free(names);
    dt__symtab_free(&t);
    dt__arena_free(&a);
    return push_fail(L, msg);
  }
  bool compat = dt__req_intersects(&t, &x, &y);
  lua_createtable(L, 0, 5);
  if (kx || ky) {
    lua_pushstring(L, kx ? kx : ky);
    lua_setfield(L, -2, "key");
  }
  lua_pushstring(L, dt__op_name(dt__req_operator(&r)));
  lua_setfield(L, -2, "operator");
  for (uint32_t i = 0; i < r.n; i++) names[i] = dt__sym_str(&t, r.v[i]);
  qsort(names, r.n, sizeof *names, cmp_cstr);
  lua_createtable(L, (int)r.n, 0);
  for (uint32_t i = 0; i < r.n; i++) {
    lua_pushstring(L, names[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "values");
  if (r.has_gte) {
    lua_pushinteger(L, (lua_Integer)r.gte);
    lua_setfield(L, -2, "gte");
  }
  if (r.has_lte) {
    lua_pushinteger(L, (lua_Integer)r.lte);
    lua_setfield(L, -2, "lte");
  }
  lua_pushboolean(L, compat);
  dt__free(names);
  dt__symtab_free(&t);
  dt__arena_free(&a);
  return 2;
}

static const luaL_Reg k_funcs[] = {
    {"plan", l_plan},           {"pool", l_pool},
    {"disrupt", l_disrupt},     {"milli", l_milli},
    {"quantity", l_quantity},   {"format_quantity", l_format_quantity},
    {"intersect", l_intersect}, {"policy", l_policy},
    {"check", l_check},         {NULL, NULL},
};

static const luaL_Reg k_policy_methods[] = {
    {"reload", l_policy_reload}, {"hooks", l_policy_hooks}, {"close", l_policy_gc}, {NULL, NULL}};

DT_EXPORT int luaopen_dovetail(lua_State *L) {
  luaL_newmetatable(L, POLICY_MT);
  luaL_newlib(L, k_policy_methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, l_policy_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  luaL_newlib(L, k_funcs);
  lua_pushstring(L, DT_VERSION);
  lua_setfield(L, -2, "version");
  return 1;
}
