/*
** ldovetail.c: the `dovetail` Lua module (luaopen_dovetail).
**
**   local dt = require "dovetail"
**   local plan = dt.plan{ manifests = text | {text...}, files = {path...},
**                         catalog = path | bundled name, catalog_text = json, now = "RFC3339" | seconds,
**                         seed = n, format = nil | "json" | "yaml" | "table" }
**
** Functions follow the Lua library shape: check arguments, compute, push,
** return. Failures in input return nil plus a message (file, object, field),
** as io.open does; misuse of the API (wrong argument types) raises an error.
*/
#include <lauxlib.h>
#include <lua.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/internal.h"

static int push_fail(lua_State *L, const char *msg) {
  luaL_pushfail(L);
  lua_pushstring(L, msg);
  return 2;
}

static void push_json(lua_State *L, const cJSON *j) {
  luaL_checkstack(L, 4, "plan too deeply nested");
  if (cJSON_IsObject(j)) {
    lua_createtable(L, 0, cJSON_GetArraySize(j));
    for (const cJSON *c = j->child; c; c = c->next) {
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
  } else if (cJSON_IsNumber(j)) {
    double d = j->valuedouble;
    if (d == floor(d) && fabs(d) < 9e15)
      lua_pushinteger(L, (lua_Integer)d);
    else
      lua_pushnumber(L, d);
  } else if (cJSON_IsBool(j)) {
    lua_pushboolean(L, cJSON_IsTrue(j));
  } else {
    lua_pushnil(L);
  }
}

/* Add manifests from t.manifests (string or list of strings) and t.files. */
static int add_manifests(lua_State *L, dt_manifests *m, dt_error *err) {
  lua_getfield(L, 1, "manifests");
  if (lua_isstring(L, -1)) {
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    if (dt_manifests_add_buffer(m, "manifests", s, len, err)) return -1;
  } else if (lua_istable(L, -1)) {
    lua_Integer n = luaL_len(L, -1);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, -1, i);
      size_t len;
      const char *s = lua_tolstring(L, -1, &len);
      if (!s) luaL_error(L, "manifests[%d]: expected a string", (int)i);
      char name[64];
      snprintf(name, sizeof name, "manifests[%d]", (int)i);
      if (dt_manifests_add_buffer(m, name, s, len, err)) return -1;
      lua_pop(L, 1);
    }
  } else if (!lua_isnil(L, -1)) {
    luaL_error(L, "manifests: expected a string or a list of strings");
  }
  lua_pop(L, 1);
  lua_getfield(L, 1, "files");
  if (lua_istable(L, -1)) {
    lua_Integer n = luaL_len(L, -1);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, -1, i);
      const char *s = lua_tostring(L, -1);
      if (!s) luaL_error(L, "files[%d]: expected a path", (int)i);
      if (dt_manifests_add_file(m, s, err)) return -1;
      lua_pop(L, 1);
    }
  } else if (lua_isstring(L, -1)) {
    if (dt_manifests_add_file(m, lua_tostring(L, -1), err)) return -1;
  } else if (!lua_isnil(L, -1)) {
    luaL_error(L, "files: expected a path or a list of paths");
  }
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
  static const char *const plan[] = {"catalog", "catalog_text", "packing", "timings", "policy_dir", "explain", NULL};
  static const char *const disrupt[] = {"catalog", "catalog_text", "policy_dir", "spot_to_spot", "explain", NULL};
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

/* Push a rendered result: the text itself when a format was asked for,
** else the JSON as a table. Non-zero on allocation failure. */
static int push_result(lua_State *L, const char *fmt, const char *text, size_t len) {
  if (fmt) {
    lua_pushlstring(L, text, len);
    return 0;
  }
  cJSON *j = cJSON_ParseWithLength(text, len);
  if (!j) return 1;
  push_json(L, j);
  cJSON_Delete(j);
  return 0;
}

static int run(lua_State *L, int mode) {
  bool pool = mode == RUN_POOL;
  luaL_checktype(L, 1, LUA_TTABLE);
  const char *bad = unknown_option(L, mode);
  if (bad) {
    char msg[300];
    snprintf(msg, sizeof msg, "unknown option %s (dovetail.%s takes %s)", bad,
             mode == RUN_POOL ? "pool" : mode == RUN_DISRUPT ? "disrupt" : "plan",
             mode == RUN_POOL ? "manifests, files, now, seed, format, policy"
             : mode == RUN_DISRUPT ? "manifests, files, catalog, catalog_text, now, seed, format, policy, policy_dir, "
                                     "spot_to_spot, explain"
                                   : "manifests, files, catalog, catalog_text, now, seed, format, packing, policy, "
                                     "policy_dir, timings, explain");
    return push_fail(L, msg);
  }
  dt_plan_opts opts = {0};
  dt_error err = {0};
  lua_getfield(L, 1, "now");
  if (lua_type(L, -1) == LUA_TNUMBER) {
    opts.now = (int64_t)lua_tointeger(L, -1);
  } else if (lua_type(L, -1) == LUA_TSTRING) {
    if (dt_time_parse(lua_tostring(L, -1), &opts.now, &err)) return push_fail(L, err.msg);
  }
  lua_pop(L, 1);
  lua_getfield(L, 1, "seed");
  opts.seed = (uint64_t)luaL_optinteger(L, -1, 0);
  lua_pop(L, 1);
  lua_getfield(L, 1, "packing");
  const char *packing = luaL_optstring(L, -1, "cost");
  if (!strcmp(packing, "ffd"))
    opts.packing = DT_PACKING_FFD;
  else if (strcmp(packing, "cost"))
    return luaL_error(L, "packing: expected \"cost\" or \"ffd\"");
  lua_pop(L, 1);
  lua_getfield(L, 1, "timings");
  opts.timings = lua_toboolean(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, 1, "format");
  const char *fmt = luaL_optstring(L, -1, NULL);
  lua_pop(L, 1);
  dt_format f = DT_FORMAT_JSON;
  if (fmt && !strcmp(fmt, "yaml"))
    f = DT_FORMAT_YAML;
  else if (fmt && !strcmp(fmt, "table"))
    f = DT_FORMAT_TABLE;
  else if (fmt && strcmp(fmt, "json"))
    return luaL_error(L, "format: expected json, yaml or table");

  dt_catalog *cat = NULL;
  dt_manifests *m = NULL;
  dt_plan *plan = NULL;
  dt_pools *pools = NULL;
  dt_disruption *dis = NULL;
  char *text = NULL;
  int nret = 0;
  dt_policy *owned = NULL; /* loaded here from a path */
  dt_policy_dir *pdir = NULL;
  lua_getfield(L, 1, "policy");
  if (lua_isstring(L, -1)) {
    if (dt_policy_load_file(lua_tostring(L, -1), NULL, &owned, &err)) {
      lua_pop(L, 1);
      return push_fail(L, err.msg);
    }
    opts.policy = owned;
  } else if (!lua_isnil(L, -1)) {
    opts.policy = *check_policy(L, -1);
  }
  lua_pop(L, 1);
  lua_getfield(L, 1, "catalog");
  lua_getfield(L, 1, "catalog_text");
  int rc;
  if (pool) {
    rc = 0;
  } else if (lua_isstring(L, -1)) {
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    rc = dt_catalog_load_buffer("catalog_text", s, len, &cat, &err);
  } else {
    rc = dt_catalog_load_named(lua_isstring(L, -2) ? lua_tostring(L, -2) : NULL, &cat, &err);
  }
  lua_pop(L, 2);
  if (rc) goto fail;
  if (!(m = dt_manifests_new())) {
    snprintf(err.msg, sizeof err.msg, "out of memory");
    goto fail;
  }
  if (add_manifests(L, m, &err)) goto fail;
  lua_getfield(L, 1, "policy_dir");
  if (!pool && lua_isstring(L, -1)) { /* NodePools' own policies; errors go with the result's notes */
    if (dt_policy_dir_open(lua_tostring(L, -1), &pdir, &err)) {
      lua_pop(L, 1);
      goto fail;
    }
    dt_policy_dir_sync(pdir, m);
    dt_policy_dir_apply(pdir, &opts.pool_policies, &opts.pool_policy_names, &opts.npool_policies);
  }
  lua_pop(L, 1);
  size_t len, len2;
  if (mode == RUN_DISRUPT) {
    dt_disrupt_opts d = {opts.now, opts.seed, opts.policy, 0, NULL,
                         opts.pool_policies, opts.pool_policy_names, opts.npool_policies, NULL};
    lua_getfield(L, 1, "spot_to_spot");
    d.spot_to_spot = lua_toboolean(L, -1);
    lua_getfield(L, 1, "explain");
    d.explain = lua_tostring(L, -1); /* stays on the stack until we return */
    if (dt_disrupt_run(cat, m, &d, &dis, &err)) goto fail;
    text = dt_disrupt_render(dis, f, &len);
  } else if (pool) {
    dt_pool_opts po = {opts.now, opts.seed, opts.policy};
    if (dt_pools_run(m, &po, &pools, &err)) goto fail;
    text = dt_pools_render(pools, f, &len);
  } else {
    lua_getfield(L, 1, "explain");
    opts.explain = lua_tostring(L, -1); /* stays on the stack until we return */
    if (dt_plan_run(cat, m, &opts, &plan, &err)) goto fail;
    text = dt_plan_render(plan, f, &len);
    if (opts.explain && text) { /* the explanation first, the plan second */
      char *ex = dt_plan_explain_render(plan, f == DT_FORMAT_TABLE ? DT_FORMAT_TABLE : f, &len2);
      if (!ex) {
        snprintf(err.msg, sizeof err.msg, "out of memory");
        goto fail;
      }
      if (push_result(L, fmt, ex, len2)) {
        dt_free(ex);
        snprintf(err.msg, sizeof err.msg, "out of memory");
        goto fail;
      }
      dt_free(ex);
      nret = 1;
    }
  }
  if (!text) {
    snprintf(err.msg, sizeof err.msg, "out of memory");
    goto fail;
  }
  if (push_result(L, fmt, text, len)) {
    snprintf(err.msg, sizeof err.msg, "out of memory");
    goto fail;
  }
  if (!fmt) {
    const char *notes = dt_manifests_notes(m);
    if (*notes) {
      lua_pushstring(L, notes);
      lua_setfield(L, -2, "inputNotes");
    }
  }
  nret++;
  dt_free(text);
  dt_plan_free(plan);
  dt_pools_free(pools);
  dt_disrupt_free(dis);
  dt_manifests_free(m);
  dt_catalog_free(cat);
  dt_policy_free(owned);
  dt_policy_dir_free(pdir);
  return nret;
fail:
  dt_free(text);
  dt_plan_free(plan);
  dt_pools_free(pools);
  dt_disrupt_free(dis);
  dt_manifests_free(m);
  dt_catalog_free(cat);
  dt_policy_free(owned);
  dt_policy_dir_free(pdir);
  return push_fail(L, err.msg);
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

/* Read {key=, operator=, values={...}} into a requirement. */
static void check_req(lua_State *L, int idx, dt_symtab *t, dt_arena *a, dt_req *out) {
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_getfield(L, idx, "operator");
  const char *op = luaL_checkstring(L, -1);
  dt_op o;
  if (dt__op_parse(op, &o)) luaL_error(L, "unknown operator %s", op);
  lua_pop(L, 1);
  dt_sym vals[64];
  uint32_t n = 0;
  lua_getfield(L, idx, "values");
  if (lua_istable(L, -1)) {
    lua_Integer len = luaL_len(L, -1);
    for (lua_Integer i = 1; i <= len && n < 64; i++) {
      lua_rawgeti(L, -1, i);
      vals[n++] = dt__sym(t, luaL_checkstring(L, -1));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  dt__req_make(a, out, dt__sym(t, "key"), o, vals, n, t);
}

static int cmp_cstr(const void *x, const void *y) {
  return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* dt.intersect(a, b) -> {operator=, values=sorted, gte=, lte=}, compatible */
static int l_intersect(lua_State *L) {
  dt_symtab t = {0};
  dt_arena a = {0};
  dt_req x, y, r;
  check_req(L, 1, &t, &a, &x);
  check_req(L, 2, &t, &a, &y);
  dt__req_intersect(&a, &t, &x, &y, &r);
  bool compat = dt__req_intersects(&t, &x, &y);
  lua_createtable(L, 0, 4);
  lua_pushstring(L, dt__op_name(dt__req_operator(&r)));
  lua_setfield(L, -2, "operator");
  const char *names[128];
  for (uint32_t i = 0; i < r.n && i < 128; i++) names[i] = dt__sym_str(&t, r.v[i]);
  qsort(names, r.n < 128 ? r.n : 128, sizeof *names, cmp_cstr);
  lua_createtable(L, (int)r.n, 0);
  for (uint32_t i = 0; i < r.n && i < 128; i++) {
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
  dt__symtab_free(&t);
  dt__arena_free(&a);
  return 2;
}

static const luaL_Reg k_funcs[] = {
    {"plan", l_plan},
    {"pool", l_pool},
    {"disrupt", l_disrupt},
    {"milli", l_milli},
    {"quantity", l_quantity},
    {"format_quantity", l_format_quantity},
    {"intersect", l_intersect},
    {"policy", l_policy},
    {"check", l_check},
    {NULL, NULL},
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
