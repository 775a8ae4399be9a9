/*
** hooks.c: the hook calls of the policy runtime (engine/hooks.h). Each call
** builds its arguments in the policy's state (the round's offering tables
** are built once and kept while the offerings are the same), runs the hook
** as a protected call under its instruction and wall-clock budget, and
** reads the results with raw access, checking their types and ranges; a
** failing hook leaves the built-in default and is recorded.
*/
#include "policy_int.h"

#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Seed math.random for one decision with the library's own randomseed. */
static int reseed(lua_State *L) {
  dt_policy *p = pl_self(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, p->s.randomseed);
  lua_pushinteger(L, (lua_Integer)(p->seed & 0x7fffffffffffffffull));
  lua_pushinteger(L, (lua_Integer)p->decision++);
  lua_call(L, 2, 0);
  return 0;
}

static void failed(dt_policy *p, const char *what, int hook, const char *msg) {
  bool disable = false;
  if (hook >= 0 && ++p->fails[hook] >= p->lim.max_failures) {
    p->disabled[hook] = true;
    disable = true;
  }
  pl_record(p, what, msg ? msg : "error", disable);
}

/* Call the function under nargs arguments (pushed after it) with the
** budget and a traceback; leaves nres results or records the error. The
** consecutive-failure count is reset by succeeded(), once the results have
** been checked too. */
int pl_call(dt_policy *p, const char *what, int hook, int nargs, int nres) {
  lua_State *L = p->s.L;
  int base = lua_gettop(L) - nargs; /* the function */
  lua_pushcfunction(L, pl_traceback);
  lua_insert(L, base);
  lua_pushcfunction(L, reseed);
  if (lua_pcall(L, 0, 0, 0) != LUA_OK) lua_pop(L, 1); /* out of memory: the previous seed stays */
  unsigned char rs[64]; /* the generator as seeded: a call that draws from it changes it */
  if (p->s.rand_state) memcpy(rs, p->s.rand_state, p->s.rand_len);
  jmp_buf jb;
  int status;
  pl_budget_start(p, L);
  if (setjmp(jb) == 0) {
    p->panic = &jb;
    status = lua_pcall(L, nargs, nres, base);
  } else {
    status = -1;
  }
  p->panic = NULL;
  pl_budget_stop(L);
  if (p->s.rand_state && memcmp(rs, p->s.rand_state, p->s.rand_len)) p->reads_other++;
  if (status == -1) {
    /* the state cannot be trusted after a panic: every hook is off until the
    ** policy is reloaded */
    for (int i = 0; i < DT_HOOK_N; i++) p->disabled[i] = true;
    lua_settop(L, 0);
    pl_record(p, what, "internal error in the policy runtime; the policy is disabled until reloaded", true);
    return -1;
  }
  lua_remove(L, base);
  if (status == LUA_OK) return 0;
  failed(p, what, hook, lua_tostring(L, -1));
  lua_pop(L, 1);
  return -1;
}

/* A hook's result passed its checks: its failures are no longer consecutive. */
static int succeeded(dt_policy *p, int hook, int rc) {
  if (rc == 0 && hook >= 0) p->fails[hook] = 0;
  return rc;
}

/* A result of the wrong shape: recorded as the hook's failure. */
static int bad_result(dt_policy *p, int hook, const char *fmt, ...) DT_PRINTF(3, 4);
static int bad_result(dt_policy *p, int hook, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  /* file:line of the hook's definition, as a runtime error would carry */
  int line = 0;
  lua_State *L = p->s.L;
  lua_Debug ar;
  lua_rawgeti(L, LUA_REGISTRYINDEX, p->s.ref[hook]);
  if (lua_getinfo(L, ">S", &ar)) line = ar.linedefined;
  int n = snprintf(msg, sizeof msg, "%s:%d: hook %s: ", p->path ? p->path : p->chunk, line, dt__hook_names[hook]);
  vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
  va_end(ap);
  failed(p, dt__hook_names[hook], hook, msg);
  return -1;
}

bool dt__policy_has(const dt_policy *p, int hook) {
  return p && p->s.L && p->s.ref[hook] != LUA_NOREF && !p->disabled[hook];
}

/* Run a builder of hook arguments in protected mode (the sandbox's memory
** cap may refuse what it allocates): f(a, b, n) leaves nres values on the
** stack, or the error is recorded under `what` and nothing is left. */
static int protected_build(dt_policy *p, const char *what, lua_CFunction f, const void *a, const void *b, lua_Integer n,
                           int nres) {
  lua_State *L = p->s.L;
  lua_pushcfunction(L, f);
  lua_pushlightuserdata(L, (void *)a);
  lua_pushlightuserdata(L, (void *)b);
  lua_pushinteger(L, n);
  if (lua_pcall(L, 3, nres, 0) == LUA_OK) return 0;
  pl_record(p, what, lua_tostring(L, -1), false);
  lua_pop(L, 1);
  return -1;
}

static void push_offer(lua_State *L, const dt_hook_offer *o) {
  lua_createtable(L, 0, 12);
  lua_pushstring(L, o->instance_type);
  lua_setfield(L, -2, "instanceType");
  lua_pushstring(L, o->zone);
  lua_setfield(L, -2, "zone");
  lua_pushstring(L, o->capacity_type);
  lua_setfield(L, -2, "capacityType");
  if (o->reservation) {
    lua_pushstring(L, o->reservation);
    lua_setfield(L, -2, "reservationID");
  }
  if (isfinite(o->price)) {
    lua_pushnumber(L, o->price);
    lua_setfield(L, -2, "price");
  }
  if (o->on_demand_price >= 0) {
    lua_pushnumber(L, o->on_demand_price);
    lua_setfield(L, -2, "onDemandPrice");
  }
  if (o->available >= 0) {
    lua_pushinteger(L, (lua_Integer)o->available);
    lua_setfield(L, -2, "available");
  }
  lua_pushinteger(L, (lua_Integer)o->cpu_milli);
  lua_setfield(L, -2, "cpuMilli");
  lua_pushinteger(L, (lua_Integer)o->memory_bytes);
  lua_setfield(L, -2, "memoryBytes");
  lua_pushinteger(L, (lua_Integer)o->gpus);
  lua_setfield(L, -2, "gpus");
  if (o->family) {
    lua_pushstring(L, o->family);
    lua_setfield(L, -2, "family");
  }
  if (o->arch) {
    lua_pushstring(L, o->arch);
    lua_setfield(L, -2, "arch");
  }
}

static int build_offers(lua_State *L) {
  const dt_hook_offer *o = lua_touserdata(L, 1);
  size_t n = (size_t)lua_tointeger(L, 2);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    push_offer(L, &o[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_pushinteger(L, luaL_ref(L, LUA_REGISTRYINDEX));
  return 1;
}

/* The six strings of an offering, in one order. */
#define OFFER_STRS(o)                                                                                                  \
  { (o)->instance_type, (o)->zone, (o)->capacity_type, (o)->reservation, (o)->family, (o)->arch }

/* Whether a is the snapshot's string y (0: NULL). A round's offerings
** repeat few strings (an instance type's offerings name it, zones and
** capacity types recur): each pointer is compared in full once a call. */
static bool str_match(const dt_policy *p, const char *a, dt_sym y) {
  if (!y || !a) return !y && !a;
  if (p->snap_match[y] == a) return true;
  if (strcmp(a, p->snap_strs.str[y])) return false;
  p->snap_match[y] = a;
  return true;
}

/* Whether offers[0..n) are the offerings the offers table was built from. */
static bool snapshot_same(const dt_policy *p, const dt_hook_offer *o, size_t n) {
  if (!p->snap_valid || p->offers == LUA_NOREF || n != p->nsnap) return false;
  memset(p->snap_match, 0, p->snap_strs.n * sizeof *p->snap_match); /* a pointer of another round may be reused */
  for (size_t i = 0; i < n; i++) {
    const dt_hook_offer *a = &o[i], *b = &p->snap[i];
    if (memcmp(&a->price, &b->price, sizeof a->price) ||
        memcmp(&a->on_demand_price, &b->on_demand_price, sizeof a->price) || a->available != b->available ||
        a->cpu_milli != b->cpu_milli || a->memory_bytes != b->memory_bytes || a->gpus != b->gpus)
      return false;
    const char *s[6] = OFFER_STRS(a);
    for (int k = 0; k < 6; k++)
      if (!str_match(p, s[k], p->snap_sym[6 * i + k])) return false;
  }
  return true;
}

/* Keep a copy of offers[0..n), strings included; false when out of memory. */
static bool snapshot_keep(dt_policy *p, const dt_hook_offer *o, size_t n) {
  dt_symtab strs = {0};
  dt_hook_offer *snap = dt__malloc((n ? n : 1) * sizeof *snap);
  dt_sym *sym = dt__malloc((n ? 6 * n : 1) * sizeof *sym);
  bool ok = snap && sym;
  for (size_t i = 0; ok && i < n; i++) {
    snap[i] = o[i];
    const char *s[6] = OFFER_STRS(&o[i]);
    const char **to[6] = {&snap[i].instance_type, &snap[i].zone,   &snap[i].capacity_type,
                          &snap[i].reservation,   &snap[i].family, &snap[i].arch};
    for (int k = 0; ok && k < 6; k++) {
      sym[6 * i + k] = s[k] ? dt__sym(&strs, s[k]) : 0;
      ok = !s[k] || sym[6 * i + k]; /* 0: out of memory (the empty string has a symbol of its own) */
      if (ok && s[k]) *to[k] = strs.str[sym[6 * i + k]];
    }
  }
  const char **match = ok ? dt__calloc(strs.n ? strs.n : 1, sizeof *match) : NULL;
  if (!match) {
    dt__free(snap);
    dt__free(sym);
    dt__symtab_free(&strs);
    return false;
  }
  dt__free(p->snap);
  dt__free(p->snap_sym);
  dt__free(p->snap_match);
  dt__symtab_free(&p->snap_strs);
  p->snap = snap;
  p->snap_sym = sym;
  p->snap_match = match;
  p->snap_strs = strs;
  p->nsnap = n;
  p->snap_valid = true;
  return true;
}

/* Let go of the round's tables (the offerings and rank's arguments). */
void pl_snapshot_release(dt_policy *p) {
  if (p->s.L && p->offers != LUA_NOREF) luaL_unref(p->s.L, LUA_REGISTRYINDEX, p->offers);
  if (p->s.L && p->rank_claim != LUA_NOREF) luaL_unref(p->s.L, LUA_REGISTRYINDEX, p->rank_claim);
  if (p->s.L && p->rank_list != LUA_NOREF) luaL_unref(p->s.L, LUA_REGISTRYINDEX, p->rank_list);
  p->offers = p->rank_claim = p->rank_list = LUA_NOREF;
  p->rank_n = 0;
  p->snap_valid = false;
}

/* In a fixed pass every plan gives the offerings its first plan gave. */
static bool pass_same(const dt_policy *p, size_t n) {
  return p->pass.on && p->pass.fixed && p->pass.seen && p->snap_valid && p->offers != LUA_NOREF && n == p->nsnap;
}

/*
** A round's offerings are the same tables as the last round's while the
** offerings are the same (a disruption pass's simulations, a daemon's rounds
** between catalog refreshes): hooks treat them as read-only, and a policy
** that writes into them sees its writes again.
*/
int dt__policy_round(dt_policy *p, int64_t now, uint64_t seed, const dt_hook_offer *offers, size_t n, uint64_t token) {
  p->now = now;
  p->seed = seed;
  p->decision = 0;
  if (pass_same(p, n)) return 0;
  p->pass.seen = true;
  if (token && token == p->snap_token && p->snap_valid && p->offers != LUA_NOREF && n == p->nsnap) return 0;
  if (snapshot_same(p, offers, n)) {
    p->snap_token = token;
    return 0;
  }
  pl_snapshot_release(p);
  p->gen++;
  lua_State *L = p->s.L;
  /* built in protected mode: the sandbox's memory cap may refuse it */
  lua_pushcfunction(L, build_offers);
  lua_pushlightuserdata(L, (void *)offers);
  lua_pushinteger(L, (lua_Integer)n);
  if (lua_pcall(L, 2, 1, 0) != LUA_OK) {
    pl_record(p, "round", lua_tostring(L, -1), false);
    lua_pop(L, 1);
    return -1;
  }
  p->offers = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  p->noffers = n;
  snapshot_keep(p, offers, n); /* without a copy the next round builds again */
  p->snap_token = token;
  return 0;
}

unsigned long dt__policy_reads(const dt_policy *p) { return p ? p->reads_clock + p->reads_other : 0; }

void dt__policy_pass_begin(dt_policy *p, bool fixed) {
  if (!p) return;
  dt__policy_pass_end(p);
  p->pass.on = true;
  p->pass.fixed = fixed;
}

void dt__policy_pass_end(dt_policy *p) {
  if (!p) return;
  dt__free(p->pass.price);
  dt__free(p->pass.err);
  memset(&p->pass, 0, sizeof p->pass);
}

/* The end of a plan's round: garbage is collected once it has grown past
** what was live after the last collection (at least 4 MiB more), not after
** every round: a full collection walks the kept offerings each time. */
void dt__policy_round_end(dt_policy *p) {
  if (!p->s.L) return;
  size_t slack = p->gc_floor > (4u << 20) ? p->gc_floor : (4u << 20);
  if (p->s.m->used <= p->gc_floor + slack) return;
  lua_gc(p->s.L, LUA_GCCOLLECT);
  p->gc_floor = p->s.m->used;
}

/* The pass's prices, when its first plan computed them on this table. */
static bool pass_priced(const dt_policy *p) {
  return p->pass.on && p->pass.priced && p->pass.gen == p->gen && p->pass.nprice == p->noffers;
}

/* Keep a price call's outcome for the pass's other plans (out of memory:
** they call the hook again). */
static void pass_keep_price(dt_policy *p, const double *out, int rc, size_t nerrs) {
  if (!p->pass.on) return;
  size_t n = p->noffers;
  double *v = dt__realloc(p->pass.price, (n ? n : 1) * sizeof *v);
  if (!v) return;
  memcpy(v, out, n * sizeof *v);
  p->pass.price = v;
  dt__free(p->pass.err);
  p->pass.err = NULL;
  if (rc && p->errs.n > nerrs) {
    const dt_policy_err *e = &p->errs.v[p->errs.n - 1];
    if (!(p->pass.err = dt__strdup(e->message))) return;
    p->pass.err_disabled = e->disabled;
  }
  p->pass.nprice = n;
  p->pass.rc = rc;
  p->pass.gen = p->gen;
  p->pass.priced = true;
}

static int call_price(dt_policy *p, double *out) {
  lua_State *L = p->s.L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, p->s.ref[DT_HOOK_PRICE]);
  lua_rawgeti(L, LUA_REGISTRYINDEX, p->offers);
  if (pl_call(p, "price", DT_HOOK_PRICE, 1, 1)) return -1;
  int rc = 0;
  if (!lua_istable(L, -1)) {
    rc = bad_result(p, DT_HOOK_PRICE, "expected a table of prices, got %s", luaL_typename(L, -1));
  } else {
    for (size_t i = 0; i < p->noffers && !rc; i++) {
      int t = lua_rawgeti(L, -1, (lua_Integer)i + 1);
      if (t == LUA_TNIL) {
        out[i] = NAN;
      } else if (t == LUA_TNUMBER) {
        double v = lua_tonumber(L, -1);
        if (!isfinite(v) || v < 0 || v > DT_MAX_PRICE) /* as a catalog's: above it, costs print as inf */
          rc = bad_result(p, DT_HOOK_PRICE, "price %zu is %g; prices must be from 0 to %g $/hour", i + 1, v,
                          DT_MAX_PRICE);
        out[i] = v;
      } else {
        rc = bad_result(p, DT_HOOK_PRICE, "price %zu is a %s; expected a number or nil", i + 1, lua_typename(L, t));
      }
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  return succeeded(p, DT_HOOK_PRICE, rc);
}

/*
** A hook is a function of its arguments and the clock (docs/policies.md).
** What price and score gave is kept for the later plans on the same offers
** table (the daemon's rounds, a disruption pass's simulations), unless the
** call read the clock (then it holds while the clock reads the same) or did
** something a repeated call would do again: log, or draw from math.random.
** A call answered from here counts as the call it stands for: it takes a
** decision number (math.random's seed for the next hook) and ends the
** hook's run of failures, as a successful call does.
*/
static void stood_for(dt_policy *p, int hook) {
  p->decision++;
  p->fails[hook] = 0;
}

static bool pmemo_hit(const dt_policy *p) {
  return p->pmemo.ok && p->pmemo.gen == p->gen && p->pmemo.n == p->noffers &&
         (!p->pmemo.clock || p->pmemo.now == p->now);
}

static void pmemo_keep(dt_policy *p, const double *out, int rc, size_t nerrs, unsigned long clock0,
                       unsigned long other0) {
  p->pmemo.ok = false;
  if (rc || p->errs.n != nerrs || p->reads_other != other0) return;
  double *v = dt__realloc(p->pmemo.v, (p->noffers ? p->noffers : 1) * sizeof *v);
  if (!v) return;
  memcpy(v, out, p->noffers * sizeof *v);
  p->pmemo.v = v;
  p->pmemo.n = p->noffers;
  p->pmemo.gen = p->gen;
  p->pmemo.now = p->now;
  p->pmemo.clock = p->reads_clock != clock0;
  p->pmemo.ok = true;
}

bool dt__policy_pass_priced(const dt_policy *p) { return p && pass_priced(p); }

int dt__policy_price_repeat(dt_policy *p) {
  if (!dt__policy_has(p, DT_HOOK_PRICE) || p->offers == LUA_NOREF || !pass_priced(p)) return -1;
  if (p->pass.err) pl_record(p, "price", p->pass.err, p->pass.err_disabled);
  return p->pass.rc;
}

/* Within a disruption pass the hook runs once: the pass's other plans get
** its prices (or its failure, recorded again in each plan's errors). */
int dt__policy_price(dt_policy *p, double *out) {
  if (!dt__policy_has(p, DT_HOOK_PRICE) || p->offers == LUA_NOREF) return -1;
  if (pass_priced(p)) {
    if (p->noffers) memcpy(out, p->pass.price, p->noffers * sizeof *out);
    if (p->pass.err) pl_record(p, "price", p->pass.err, p->pass.err_disabled);
    return p->pass.rc;
  }
  size_t nerrs = p->errs.n;
  int rc;
  if (pmemo_hit(p)) {
    if (p->noffers) memcpy(out, p->pmemo.v, p->noffers * sizeof *out);
    stood_for(p, DT_HOOK_PRICE);
    rc = 0;
  } else {
    unsigned long clock0 = p->reads_clock, other0 = p->reads_other;
    rc = call_price(p, out);
    pmemo_keep(p, out, rc, nerrs, clock0, other0);
  }
  pass_keep_price(p, out, rc, nerrs);
  return rc;
}

/* A table kept in the registry for the round (*ref), created on first use. */
static void round_table(lua_State *L, int *ref, int narr, int nrec) {
  if (*ref != LUA_NOREF) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, *ref);
    return;
  }
  lua_createtable(L, narr, nrec);
  lua_pushvalue(L, -1);
  *ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

/* rank's arguments, in protected mode: the claim and its offerings. The two
** tables are the round's, refilled for each call (the offerings' own tables
** are the round's snapshot): a policy copies what it keeps. */
static int build_rank(lua_State *L) {
  const dt_hook_claim *claim = lua_touserdata(L, 1);
  const uint32_t *idx = lua_touserdata(L, 2);
  size_t n = (size_t)lua_tointeger(L, 3);
  dt_policy *p = pl_self(L);
  round_table(L, &p->rank_claim, 0, 7);
  lua_pushstring(L, claim->node_pool);
  lua_setfield(L, -2, "nodePool");
  lua_pushinteger(L, (lua_Integer)claim->pods);
  lua_setfield(L, -2, "pods");
  lua_pushinteger(L, (lua_Integer)claim->cpu_milli);
  lua_setfield(L, -2, "cpuMilli");
  lua_pushinteger(L, (lua_Integer)claim->memory_bytes);
  lua_setfield(L, -2, "memoryBytes");
  lua_pushinteger(L, (lua_Integer)claim->spot_in_pool);
  lua_setfield(L, -2, "spotNodesInPool");
  lua_pushinteger(L, (lua_Integer)claim->nodes_in_pool);
  lua_setfield(L, -2, "nodesInPool");
  lua_rawgeti(L, LUA_REGISTRYINDEX, p->offers);
  round_table(L, &p->rank_list, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, -2, (lua_Integer)idx[i] + 1);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  for (size_t i = n; i < p->rank_n; i++) { /* what a longer list left */
    lua_pushnil(L);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  p->rank_n = n;
  lua_remove(L, -2);
  return 2;
}

int dt__policy_rank(dt_policy *p, const dt_hook_claim *claim, const uint32_t *idx, size_t n, double *score) {
  if (!dt__policy_has(p, DT_HOOK_RANK) || p->offers == LUA_NOREF) return -1;
  lua_State *L = p->s.L;
  if (!lua_checkstack(L, 8)) return -1;
  lua_rawgeti(L, LUA_REGISTRYINDEX, p->s.ref[DT_HOOK_RANK]);
  if (protected_build(p, "rank", build_rank, claim, idx, (lua_Integer)n, 2)) {
    lua_pop(L, 1);
    return -1;
  }
  if (pl_call(p, "rank", DT_HOOK_RANK, 2, 1)) return -1;
  int rc = 0;
  if (!lua_istable(L, -1)) {
    rc = bad_result(p, DT_HOOK_RANK, "expected a table of scores, got %s", luaL_typename(L, -1));
  } else {
    for (size_t i = 0; i < n && !rc; i++) {
      int t = lua_rawgeti(L, -1, (lua_Integer)i + 1);
      if (t == LUA_TNIL)
        score[i] = NAN;
      else if (t == LUA_TNUMBER && isfinite(lua_tonumber(L, -1)))
        score[i] = lua_tonumber(L, -1);
      else
        rc = bad_result(p, DT_HOOK_RANK, "score %zu is %s; expected a finite number or nil", i + 1,
                        t == LUA_TNUMBER ? "not finite" : lua_typename(L, t));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  return succeeded(p, DT_HOOK_RANK, rc);
}

/* score over a batch, run as the hook under pl_call(): upvalue-free, its
** arguments are the out array, the indices and their count. Returns the
** 1-based position of the first result of the wrong type (0: none) and
** that result's description. */
static int score_batch(lua_State *L) {
  double *out = lua_touserdata(L, 1);
  const uint32_t *idx = lua_touserdata(L, 2);
  size_t n = (size_t)lua_tointeger(L, 3);
  dt_policy *p = pl_self(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, p->s.ref[DT_HOOK_SCORE]); /* 4 */
  lua_rawgeti(L, LUA_REGISTRYINDEX, p->offers);               /* 5 */
  for (size_t i = 0; i < n; i++) {
    lua_pushvalue(L, 4);
    lua_rawgeti(L, 5, (lua_Integer)idx[i] + 1);
    lua_call(L, 1, 1);
    int t = lua_type(L, -1);
    if (t == LUA_TNIL) {
      out[i] = NAN;
    } else if (t == LUA_TNUMBER && isfinite(lua_tonumber(L, -1))) {
      out[i] = lua_tonumber(L, -1);
    } else {
      const char *what = t == LUA_TNUMBER ? "not finite" : lua_typename(L, t);
      lua_rawgeti(L, 5, (lua_Integer)idx[i] + 1);
      lua_getfield(L, -1, "instanceType");
      lua_getfield(L, -2, "zone");
      lua_getfield(L, -3, "capacityType");
      lua_pushinteger(L, (lua_Integer)i + 1);
      lua_pushfstring(L, "the score of %s %s %s is %s", lua_tostring(L, -4), lua_tostring(L, -3), lua_tostring(L, -2),
                      what);
      return 2;
    }
    lua_pop(L, 1);
  }
  lua_pushinteger(L, 0);
  lua_pushnil(L);
  return 2;
}

static int score_call(dt_policy *p, const uint32_t *idx, size_t n, double *score) {
  lua_State *L = p->s.L;
  if (!lua_checkstack(L, 8)) return -1;
  lua_pushcfunction(L, score_batch);
  lua_pushlightuserdata(L, score);
  lua_pushlightuserdata(L, (void *)idx);
  lua_pushinteger(L, (lua_Integer)n);
  if (pl_call(p, "score", DT_HOOK_SCORE, 3, 2)) return -1;
  int rc = 0;
  lua_Integer bad = lua_tointeger(L, -2);
  if (bad > 0) rc = bad_result(p, DT_HOOK_SCORE, "%s; expected a finite number or nil", lua_tostring(L, -1));
  lua_pop(L, 2);
  return succeeded(p, DT_HOOK_SCORE, rc);
}

/* The kept scores, made ready for the current offers table and clock;
** false when none are kept (out of memory, or a call read what a repeated
** call reads again). */
static bool smemo_ready(dt_policy *p) {
  if (p->smemo.gen != p->gen || p->smemo.n != p->noffers || !p->smemo.v || (p->smemo.clock && p->smemo.now != p->now)) {
    size_t n = p->noffers ? p->noffers : 1;
    double *v = dt__realloc(p->smemo.v, n * sizeof *v);
    if (v) p->smemo.v = v;
    uint8_t *k = v ? dt__realloc(p->smemo.known, n) : NULL;
    if (k) p->smemo.known = k;
    if (!v || !k) {
      p->smemo.n = 0;
      return false;
    }
    memset(k, 0, n);
    p->smemo.gen = p->gen;
    p->smemo.n = p->noffers;
    p->smemo.clock = p->smemo.off = false;
  }
  return !p->smemo.off;
}

int dt__policy_score(dt_policy *p, const uint32_t *idx, size_t n, double *score) {
  if (!dt__policy_has(p, DT_HOOK_SCORE) || p->offers == LUA_NOREF) return -1;
  if (!smemo_ready(p)) return score_call(p, idx, n, score);
  size_t nmiss = 0;
  for (size_t i = 0; i < n; i++) nmiss += !p->smemo.known[idx[i]];
  if (!nmiss) {
    for (size_t i = 0; i < n; i++) score[i] = p->smemo.v[idx[i]];
    stood_for(p, DT_HOOK_SCORE);
    return 0;
  }
  uint32_t *miss = dt__malloc(nmiss * sizeof *miss);
  double *val = dt__malloc(nmiss * sizeof *val);
  if (!miss || !val) {
    dt__free(miss);
    dt__free(val);
    return score_call(p, idx, n, score);
  }
  for (size_t i = 0, k = 0; i < n; i++)
    if (!p->smemo.known[idx[i]]) miss[k++] = idx[i];
  unsigned long clock0 = p->reads_clock, other0 = p->reads_other;
  int rc = score_call(p, miss, nmiss, val);
  bool keep = !rc && p->reads_other == other0;
  if (p->reads_other != other0) p->smemo.off = true;
  if (keep && p->reads_clock != clock0) {
    p->smemo.clock = true;
    p->smemo.now = p->now;
  }
  for (size_t i = 0, k = 0; !rc && i < n; i++) score[i] = p->smemo.known[idx[i]] ? p->smemo.v[idx[i]] : val[k++];
  for (size_t k = 0; keep && k < nmiss; k++) {
    p->smemo.v[miss[k]] = val[k];
    p->smemo.known[miss[k]] = 1;
  }
  dt__free(miss);
  dt__free(val);
  return rc;
}

/* The result of an ordering hook (on top of the stack): a list of entries
** (tables with a "name") or names, or nil for the given order. names[k] names entry k, read before the
** call since the hook may reorder its argument in place. order[] gets the
** hook's order, then the entries it left out. Pops the result. */
static int read_order(dt_policy *p, int hook, const char *const *names_in, size_t n, size_t *order) {
  lua_State *L = p->s.L;
  int rc = 0;
  size_t got = 0;
  bool *taken = dt__calloc(n ? n : 1, sizeof *taken);
  dt_symtab names = {0}; /* names are unique: symbol k+1 is entry k */
  for (size_t k = 0; k < n && taken; k++)
    if (dt__sym(&names, names_in[k]) != k + 1) names.oom = 1;
  if (!taken || names.oom) {
    for (size_t i = 0; i < n; i++) order[i] = i;
    dt__free(taken);
    dt__symtab_free(&names);
    lua_pop(L, 1);
    return -1;
  }
  if (lua_isnil(L, -1)) {
    /* nil keeps dovetail's order, as nil means "the default" in every hook */
  } else if (!lua_istable(L, -1)) {
    rc = bad_result(p, hook, "expected a list of entries or their names, or nil, got %s", luaL_typename(L, -1));
  } else {
    for (lua_Integer i = 1; !rc; i++) {
      int t = lua_rawgeti(L, -1, i);
      if (t == LUA_TNIL) {
        lua_pop(L, 1);
        break;
      }
      if (t == LUA_TTABLE) { /* raw: no metamethod runs once the budget has stopped */
        lua_rawgeti(L, LUA_REGISTRYINDEX, p->s.name_key);
        t = lua_rawget(L, -2);
        lua_remove(L, -2);
      }
      if (t != LUA_TSTRING) {
        rc = bad_result(p, hook, "entry %lld is %s; expected an entry or its name", (long long)i, lua_typename(L, t));
        lua_pop(L, 1);
        break;
      }
      const char *nm = lua_tostring(L, -1);
      dt_sym sy = dt__sym_find(&names, nm);
      size_t at = sy ? (size_t)sy - 1 : n;
      if (at == n)
        rc = bad_result(p, hook, "entry %lld names %s, which is not a candidate", (long long)i, nm);
      else if (taken[at])
        rc = bad_result(p, hook, "entry %lld names %s twice", (long long)i, nm);
      else {
        taken[at] = true;
        order[got++] = at;
      }
      lua_pop(L, 1);
    }
  }
  if (!rc) {
    for (size_t k = 0; k < n; k++)
      if (!taken[k]) order[got++] = k;
  } else {
    for (size_t i = 0; i < n; i++) order[i] = i;
  }
  dt__free(taken);
  dt__symtab_free(&names);
  lua_pop(L, 1);
  return rc;
}

static void push_rec(lua_State *L, const dt_hook_rec *r) {
  lua_createtable(L, 0, (int)r->nf);
  for (size_t i = 0; i < r->nf; i++) {
    const dt_hook_field *f = &r->f[i];
    if (f->kind == DT_HF_STRING && f->s)
      lua_pushstring(L, f->s);
    else if (f->kind == DT_HF_BOOL)
      lua_pushboolean(L, f->num != 0);
    else if (f->kind == DT_HF_NUMBER && f->num == floor(f->num) && fabs(f->num) < 9e15)
      lua_pushinteger(L, (lua_Integer)f->num);
    else if (f->kind == DT_HF_NUMBER)
      lua_pushnumber(L, f->num);
    else
      continue;
    lua_setfield(L, -2, f->key);
  }
}

/* Builds a list of records (and optionally one record before it) in
** protected mode. */
static int build_recs(lua_State *L) {
  const dt_hook_rec *one = lua_touserdata(L, 1);
  const dt_hook_rec *recs = lua_touserdata(L, 2);
  size_t n = (size_t)lua_tointeger(L, 3);
  if (one) push_rec(L, one);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    push_rec(L, &recs[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  if (one) lua_setfield(L, -2, "nodes");
  return 1;
}

static int push_recs(dt_policy *p, const char *what, const dt_hook_rec *one, const dt_hook_rec *recs, size_t n) {
  return protected_build(p, what, build_recs, one, recs, (lua_Integer)n, 1);
}

int dt__policy_consolidation_order(dt_policy *p, const dt_hook_rec *recs, size_t n, size_t *order) {
  for (size_t i = 0; i < n; i++) order[i] = i;
  if (!dt__policy_has(p, DT_HOOK_CONSOLIDATION_ORDER)) return -1;
  lua_State *L = p->s.L;
  if (!lua_checkstack(L, 8)) return -1;
  if (push_recs(p, "consolidation_order", NULL, recs, n)) return -1;
  lua_rawgeti(L, LUA_REGISTRYINDEX, p->s.ref[DT_HOOK_CONSOLIDATION_ORDER]);
  lua_pushvalue(L, -2); /* keep the list below for read_order */
  if (pl_call(p, "consolidation_order", DT_HOOK_CONSOLIDATION_ORDER, 1, 1)) {
    lua_pop(L, 1);
    return -1;
  }
  const char **names = dt__malloc((n ? n : 1) * sizeof *names);
  for (size_t k = 0; names && k < n; k++) {
    names[k] = "";
    for (size_t f = 0; f < recs[k].nf; f++)
      if (!strcmp(recs[k].f[f].key, "name")) names[k] = recs[k].f[f].s;
  }
  int rc = names ? read_order(p, DT_HOOK_CONSOLIDATION_ORDER, names, n, order) : -1;
  if (!names) lua_pop(L, 1);
  dt__free(names);
  lua_pop(L, 1);
  return succeeded(p, DT_HOOK_CONSOLIDATION_ORDER, rc);
}

int dt__policy_approve(dt_policy *p, const dt_hook_rec *cmd, const dt_hook_rec *nodes, size_t n, bool *ok) {
  *ok = true;
  if (!dt__policy_has(p, DT_HOOK_APPROVE)) return -1;
  lua_State *L = p->s.L;
  if (!lua_checkstack(L, 8)) return -1;
  lua_rawgeti(L, LUA_REGISTRYINDEX, p->s.ref[DT_HOOK_APPROVE]);
  if (push_recs(p, "approve", cmd, nodes, n)) {
    lua_pop(L, 1);
    return -1;
  }
  if (pl_call(p, "approve", DT_HOOK_APPROVE, 1, 1)) return -1;
  int rc = 0;
  if (lua_isnil(L, -1) || lua_isboolean(L, -1))
    *ok = lua_isnil(L, -1) || lua_toboolean(L, -1);
  else
    rc = bad_result(p, DT_HOOK_APPROVE, "expected true, false or nil, got %s", luaL_typename(L, -1));
  lua_pop(L, 1);
  return succeeded(p, DT_HOOK_APPROVE, rc);
}

/* Two strings, in protected mode. */
static int build_strings(lua_State *L) {
  lua_pushstring(L, lua_touserdata(L, 1));
  lua_pushstring(L, lua_touserdata(L, 2));
  return 2;
}

int dt__policy_budget(dt_policy *p, const char *pool, const char *reason, const dt_hook_rec *ctx, int64_t *allowed) {
  if (!dt__policy_has(p, DT_HOOK_BUDGET)) return -1;
  lua_State *L = p->s.L;
  if (!lua_checkstack(L, 8)) return -1;
  lua_rawgeti(L, LUA_REGISTRYINDEX, p->s.ref[DT_HOOK_BUDGET]);
  if (protected_build(p, "budget", build_strings, pool, reason, 0, 2)) {
    lua_pop(L, 1);
    return -1;
  }
  if (push_recs(p, "budget", NULL, ctx, 1)) {
    lua_pop(L, 3);
    return -1;
  }
  lua_rawgeti(L, -1, 1); /* the ctx record itself */
  lua_remove(L, -2);
  if (pl_call(p, "budget", DT_HOOK_BUDGET, 3, 1)) return -1;
  int rc = 0;
  if (lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 0)
    *allowed = (int64_t)lua_tointeger(L, -1);
  else if (lua_type(L, -1) == LUA_TNUMBER && lua_tonumber(L, -1) == HUGE_VAL)
    *allowed = -1;
  else if (!lua_isnil(L, -1))
    rc = bad_result(p, DT_HOOK_BUDGET, "expected a non-negative integer, math.huge or nil, got %s",
                    lua_type(L, -1) == LUA_TNUMBER ? "a negative or fractional number" : luaL_typename(L, -1));
  lua_pop(L, 1);
  return succeeded(p, DT_HOOK_BUDGET, rc);
}

int dt__policy_on_interruption(dt_policy *p, const dt_hook_rec *event, char *action, size_t n) {
  if (!dt__policy_has(p, DT_HOOK_ON_INTERRUPTION)) return -1;
  lua_State *L = p->s.L;
  if (!lua_checkstack(L, 8)) return -1;
  lua_rawgeti(L, LUA_REGISTRYINDEX, p->s.ref[DT_HOOK_ON_INTERRUPTION]);
  if (push_recs(p, "on_interruption", NULL, event, 1)) {
    lua_pop(L, 1);
    return -1;
  }
  lua_rawgeti(L, -1, 1);
  lua_remove(L, -2);
  if (pl_call(p, "on_interruption", DT_HOOK_ON_INTERRUPTION, 1, 1)) return -1;
  int rc = 0;
  const char *a = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  if (a && (!strcmp(a, "drain") || !strcmp(a, "keep-offering") || !strcmp(a, "ignore")))
    snprintf(action, n, "%s", a);
  else if (!lua_isnil(L, -1))
    rc = bad_result(p, DT_HOOK_ON_INTERRUPTION, "expected \"drain\", \"keep-offering\", \"ignore\" or nil, got %s",
                    a ? a : luaL_typename(L, -1));
  lua_pop(L, 1);
  return succeeded(p, DT_HOOK_ON_INTERRUPTION, rc);
}

/* Builds scale_in's arguments in protected mode (the memory cap may refuse). */
static int build_vms(lua_State *L) {
  const dt_hook_pool *pool = lua_touserdata(L, 1);
  const dt_hook_vm *vms = lua_touserdata(L, 2);
  size_t n = (size_t)lua_tointeger(L, 3);
  lua_createtable(L, 0, 5);
  lua_pushstring(L, pool->ns);
  lua_setfield(L, -2, "namespace");
  lua_pushstring(L, pool->name);
  lua_setfield(L, -2, "name");
  lua_pushinteger(L, (lua_Integer)pool->replicas);
  lua_setfield(L, -2, "replicas");
  lua_pushinteger(L, (lua_Integer)pool->current);
  lua_setfield(L, -2, "current");
  lua_pushinteger(L, (lua_Integer)pool->remove);
  lua_setfield(L, -2, "remove");
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    const dt_hook_vm *v = &vms[i];
    lua_createtable(L, 0, 7);
    lua_pushstring(L, v->name);
    lua_setfield(L, -2, "name");
    lua_pushinteger(L, (lua_Integer)v->index);
    lua_setfield(L, -2, "index");
    lua_pushinteger(L, (lua_Integer)v->created);
    lua_setfield(L, -2, "created");
    lua_pushboolean(L, v->ready);
    lua_setfield(L, -2, "ready");
    lua_pushboolean(L, v->halted);
    lua_setfield(L, -2, "halted");
    lua_pushstring(L, v->status ? v->status : "");
    lua_setfield(L, -2, "status");
    lua_createtable(L, 0, (int)v->nlabels);
    for (size_t k = 0; k < v->nlabels; k++) {
      lua_pushstring(L, v->labels[2 * k + 1]);
      lua_setfield(L, -2, v->labels[2 * k]);
    }
    lua_setfield(L, -2, "labels");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 2;
}

int dt__policy_scale_in(dt_policy *p, const dt_hook_pool *pool, const dt_hook_vm *vms, size_t n, size_t *order) {
  for (size_t i = 0; i < n; i++) order[i] = i;
  if (!dt__policy_has(p, DT_HOOK_SCALE_IN)) return -1;
  lua_State *L = p->s.L;
  if (!lua_checkstack(L, 8)) return -1;
  lua_rawgeti(L, LUA_REGISTRYINDEX, p->s.ref[DT_HOOK_SCALE_IN]);
  if (protected_build(p, "scale_in", build_vms, pool, vms, (lua_Integer)n, 2)) {
    lua_pop(L, 1);
    return -1;
  }
  lua_pushvalue(L, -1); /* keep the vms table to map results back */
  lua_insert(L, -4);
  if (pl_call(p, "scale_in", DT_HOOK_SCALE_IN, 2, 1)) {
    lua_pop(L, 1);
    return -1;
  }
  const char **names = dt__malloc((n ? n : 1) * sizeof *names);
  for (size_t k = 0; names && k < n; k++) names[k] = vms[k].name;
  int rc = names ? read_order(p, DT_HOOK_SCALE_IN, names, n, order) : -1;
  if (!names) lua_pop(L, 1);
  dt__free(names);
  lua_pop(L, 1); /* the vms table */
  return succeeded(p, DT_HOOK_SCALE_IN, rc);
}
