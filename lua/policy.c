/*
** policy.c: the sandboxed Lua policy runtime.
**
** A policy is a Lua 5.4 file returning a table of hooks. Each loaded policy
** gets its own lua_State with:
**   - only base (no dofile, loadfile, print; load takes text only), string,
**     table, math and utf8; no io, os, package, debug or coroutine;
**   - reading an undefined global is an error (catches typos at the call);
**   - a counting allocator with a hard cap per state;
**   - per call an instruction and wall-clock budget enforced by a count hook
**     that, once tripped, fires on every instruction, so a pcall inside the
**     policy cannot swallow it;
**   - the count hook also sees every function call, so C functions that a
**     C loop calls back (metamethods such as __index = type) are charged;
**   - the library functions that loop in C without calling anything are
**     bounded up front: string.find/match/gmatch/gsub by an estimate of the
**     matcher's work (subject x pattern x backtracking), string.rep,
**     table.move/insert/remove/concat by the count they would walk;
**   - setmetatable refuses __gc: no finalizer ever runs, budgeted or not;
**   - math.random reseeded before every decision from the plan's seed, with
**     the library's own randomseed kept at load (a policy cannot replace it);
**   - every entry into the state from C is a protected call (argument
**     building, the seeding, the hook), results are read with raw access
**     only (no metamethod runs after the budget stops), and a panic handler
**     turns what would be an abort into a disabled policy.
** Hook references are resolved once at load. Every call goes through
** lua_pcall with a traceback handler; results are type- and range-checked.
** A failing hook falls back to the built-in default, the error is recorded
** with file:line, and after max_failures consecutive failures the hook is
** disabled until the policy is reloaded.
*/
#include "../engine/hooks.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <math.h>
#include <setjmp.h>
#include <string.h>

const char *const dt__hook_names[DT_HOOK_N] = {"price",  "rank",           "consolidation_order", "approve",
                                               "budget", "on_interruption", "scale_in",           "score"};

/* Names a policy table may export besides the hooks. */
static const char *const k_meta_names[] = {"selftest", "name", "description", "version", NULL};

typedef struct mem {
  size_t used, cap;
} mem;

typedef struct state {
  lua_State *L;
  mem *m;
  int ref[DT_HOOK_N];
  int selftest;
  int randomseed; /* the math library's own, kept at load */
  int name_key;   /* the string "name", for raw reads of results */
} state;

struct dt_policy {
  char *path, *chunk;
  char *text;
  size_t len;
  dt_policy_limits lim;
  state s;
  unsigned fails[DT_HOOK_N];
  bool disabled[DT_HOOK_N];
  DT_VEC(dt_policy_err) errs;
  char hooks[256];
  /* the current round */
  int64_t now;
  uint64_t seed, decision;
  int offers;
  size_t noffers;
  int rank_claim, rank_list; /* rank's argument tables, refilled for every call of a round */
  size_t rank_n;             /* entries rank_list holds */
  /* what the offers table was built from: a round with the same offerings
  ** reuses it (building thousands of tables is most of a round's cost) */
  dt_hook_offer *snap;
  char *snap_str;
  size_t nsnap;
  bool snap_valid;
  size_t gc_floor; /* bytes in use after the last full collection */
  /* the current call's budget */
  uint64_t instr;
  double t0;
  bool tripped;
  dt_buf log;
  jmp_buf *panic; /* where a panic returns to, while C is in the state */
};

/* ------------------------------------------------------------ sandbox */

static void *l_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  mem *m = ud;
  if (nsize == 0) {
    if (ptr) m->used -= osize;
    dt__free(ptr);
    return NULL;
  }
  size_t old = ptr ? osize : 0;
  if (nsize > old && m->used - old + nsize > m->cap) return NULL; /* Lua raises "not enough memory" */
  void *np = dt__realloc(ptr, nsize);
  if (np) m->used = m->used - old + nsize;
  return np;
}

static dt_policy *self(lua_State *L) { return *(dt_policy **)lua_getextraspace(L); }

#define HOOK_EVERY 1000
#define CALL_COST 20 /* instructions charged per function call */

static void count_hook(lua_State *L, lua_Debug *ar) {
  dt_policy *p = self(L);
  if (!p) return;
  if (!p->tripped) {
    if (ar->event == LUA_HOOKCALL || ar->event == LUA_HOOKTAILCALL) {
      /* C loops that call back (metamethods) run no VM instruction */
      p->instr += CALL_COST;
      if ((p->instr & 0x3FFF) >= CALL_COST && p->instr <= p->lim.instructions) return;
    } else {
      p->instr += HOOK_EVERY;
    }
    if (p->instr <= p->lim.instructions && dt__now_ms() - p->t0 <= p->lim.wall_ms) return;
    p->tripped = true;
    /* From now on, every instruction fails: a pcall in the policy that
    ** catches this error cannot run on. */
    lua_sethook(L, count_hook, LUA_MASKCOUNT | LUA_MASKCALL, 1);
  }
  /* lua_pushfstring knows no %llu or %.0f: format here */
  char msg[128];
  snprintf(msg, sizeof msg, "policy budget exceeded (%llu instructions or %.0f ms per call)",
           (unsigned long long)p->lim.instructions, p->lim.wall_ms);
  luaL_error(L, "%s", msg);
}

static void budget_start(dt_policy *p, lua_State *L) {
  p->instr = 0;
  p->tripped = false;
  p->t0 = dt__now_ms();
  lua_sethook(L, count_hook, LUA_MASKCOUNT | LUA_MASKCALL, HOOK_EVERY);
}

static void budget_stop(lua_State *L) { lua_sethook(L, NULL, 0, 0); }

/* Charge work a C function is about to do in a loop the hook cannot see;
** an error when it would not fit in what is left of the call's budget. */
static void charge(lua_State *L, double work, const char *what) {
  dt_policy *p = self(L);
  double left = p && p->lim.instructions > p->instr ? (double)(p->lim.instructions - p->instr) : 0;
  if (work > left) {
    char msg[160];
    snprintf(msg, sizeof msg, "%s would exceed the policy budget (about %.3g steps, %.3g left)", what, work, left);
    luaL_error(L, "%s", msg);
  }
  if (p) p->instr += (uint64_t)work;
}

static int l_undefined(lua_State *L) {
  const char *k = lua_tostring(L, 2);
  return luaL_error(L, "undefined global '%s'", k ? k : "?");
}

/* load(text [, name]): text chunks only, in the policy's globals. */
static int l_load(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  const char *name = luaL_optstring(L, 2, "=(load)");
  if (luaL_loadbufferx(L, s, len, name, "t") != LUA_OK) {
    luaL_pushfail(L);
    lua_insert(L, -2);
    return 2;
  }
  return 1;
}

/*
** Lua's matcher backtracks: with k unanchored repetitions (* + - ? and %b,
** which scans to its closing character) a subject of n bytes and a pattern
** of m items can cost about n * m * n^k steps, in C where the count hook
** cannot reach; a plain find costs up to n * m. That estimate is charged to
** the call's budget before the match starts.
*/
static int pattern_guard(lua_State *L) {
  size_t n, plen;
  luaL_checklstring(L, 1, &n);
  const char *pat = luaL_checklstring(L, 2, &plen);
  const char *fname = lua_tostring(L, lua_upvalueindex(2));
  bool plain = !strcmp(fname, "find") && lua_toboolean(L, 4);
  int k = 0;
  for (size_t i = 0; i < plen && !plain; i++) {
    if (pat[i] == '%') {
      k += i + 1 < plen && pat[i + 1] == 'b';
      i++;
      continue;
    }
    if (pat[i] == '*' || pat[i] == '+' || pat[i] == '-' || pat[i] == '?') k++;
  }
  double cost = ((double)n + 1) * ((double)plen + 1);
  for (int i = 0; i < k && cost < 1e18; i++) cost *= (double)n + 1;
  char what[128];
  snprintf(what, sizeof what, "pattern too expensive: string.%s on a %zu-byte subject (%d repetitions)", fname, n, k);
  charge(L, cost / 64, what); /* the matcher's steps are cheaper than VM instructions */
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

/* string.rep(s, n [, sep]) loops n times even when s and sep are empty,
** building nothing the memory cap would stop: that case is answered here. */
static int rep_guard(lua_State *L) {
  size_t l, lsep;
  luaL_checklstring(L, 1, &l);
  luaL_checkinteger(L, 2);
  luaL_optlstring(L, 3, "", &lsep);
  if (l + lsep == 0) {
    lua_pushliteral(L, "");
    return 1;
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

/* table.move(a1, f, e, t [, a2]) walks e - f + 1 elements. */
static int move_guard(lua_State *L) {
  lua_Integer f = luaL_checkinteger(L, 2), e = luaL_checkinteger(L, 3);
  if (e >= f) charge(L, (double)e - (double)f + 1, "table.move");
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

/* table.insert/remove shift up to #t elements; table.concat walks i..j. */
static int len_guard(lua_State *L) {
  const char *fname = lua_tostring(L, lua_upvalueindex(2));
  double work;
  if (!strcmp(fname, "concat")) {
    lua_Integer i = luaL_optinteger(L, 3, 1);
    lua_Integer j = lua_isnoneornil(L, 4) ? luaL_len(L, 1) : luaL_checkinteger(L, 4);
    work = j >= i ? (double)j - (double)i + 1 : 0;
  } else {
    work = (double)luaL_len(L, 1); /* __len is Lua and budgeted; its answer is charged */
  }
  if (work > 0) {
    char what[32];
    snprintf(what, sizeof what, "table.%s", fname);
    charge(L, work, what);
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

/* setmetatable without __gc: finalizers would run outside any budget. */
static int l_setmetatable(lua_State *L) {
  if (lua_type(L, 2) == LUA_TTABLE) {
    lua_pushliteral(L, "__gc");
    if (lua_rawget(L, 2) != LUA_TNIL) return luaL_error(L, "__gc metamethods (finalizers) are not allowed in policies");
    lua_pop(L, 1);
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

/* Replace lib.fname by guard(original, fname). The table is on the top. */
static void wrap(lua_State *L, const char *fname, lua_CFunction guard) {
  lua_getfield(L, -1, fname);
  lua_pushstring(L, fname);
  lua_pushcclosure(L, guard, 2);
  lua_setfield(L, -2, fname);
}

static int l_now(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)self(L)->now);
  return 1;
}

static int l_log(lua_State *L) {
  const char *level = luaL_checkstring(L, 1);
  const char *msg = luaL_checkstring(L, 2);
  dt_policy *p = self(L);
  if (p->log.len < 65536) {
    lua_Debug ar;
    int line = lua_getstack(L, 1, &ar) && lua_getinfo(L, "l", &ar) ? ar.currentline : 0;
    dt__buf_printf(&p->log, "%s:%d: %s: %s\n", p->path ? p->path : p->chunk, line, level, msg);
  }
  return 0;
}

static int l_milli(lua_State *L) {
  int64_t v;
  dt_error err;
  if (dt_quantity_parse(luaL_checkstring(L, 1), &v, &err)) return luaL_error(L, "%s", err.msg);
  lua_pushinteger(L, (lua_Integer)v);
  return 1;
}

static int traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (!msg) msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* An error outside any protected call. Everything is meant to run inside
** one; if something does not, the policy is switched off rather than the
** process aborted: back to the C entry that was in the state. */
static int panic(lua_State *L) {
  dt_policy *p = self(L);
  if (p && p->panic) longjmp(*p->panic, 1);
  return 0; /* no entry to return to: Lua aborts */
}

static const luaL_Reg k_dovetail[] = {{"now", l_now}, {"log", l_log}, {"milli", l_milli}, {NULL, NULL}};

static int open_sandbox(lua_State *L) {
  static const luaL_Reg libs[] = {{LUA_GNAME, luaopen_base},   {LUA_STRLIBNAME, luaopen_string},
                                  {LUA_TABLIBNAME, luaopen_table}, {LUA_MATHLIBNAME, luaopen_math},
                                  {LUA_UTF8LIBNAME, luaopen_utf8}, {NULL, NULL}};
  for (const luaL_Reg *l = libs; l->name; l++) {
    luaL_requiref(L, l->name, l->func, 1);
    lua_pop(L, 1);
  }
  static const char *removed[] = {"dofile", "loadfile", "print", "collectgarbage", NULL};
  for (const char **r = removed; *r; r++) {
    lua_pushnil(L);
    lua_setglobal(L, *r);
  }
  lua_pushcfunction(L, l_load);
  lua_setglobal(L, "load");
  lua_getglobal(L, "setmetatable");
  lua_pushcclosure(L, l_setmetatable, 1);
  lua_setglobal(L, "setmetatable");
  lua_getglobal(L, "string");
  static const char *guarded[] = {"find", "match", "gmatch", "gsub", NULL};
  for (const char **g = guarded; *g; g++) wrap(L, *g, pattern_guard);
  wrap(L, "rep", rep_guard);
  lua_pop(L, 1);
  lua_getglobal(L, "table");
  wrap(L, "move", move_guard);
  wrap(L, "insert", len_guard);
  wrap(L, "remove", len_guard);
  wrap(L, "concat", len_guard);
  lua_pop(L, 1);
  /* the seeding uses the library's own function, whatever the policy does
  ** to math later; and "name" for reading results without metamethods */
  state *s = lua_touserdata(L, 1);
  lua_getglobal(L, "math");
  lua_getfield(L, -1, "randomseed");
  s->randomseed = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pop(L, 1);
  lua_pushliteral(L, "name");
  s->name_key = luaL_ref(L, LUA_REGISTRYINDEX);
  luaL_newlib(L, k_dovetail);
  lua_setglobal(L, "dovetail");
  /* Reading an undefined global is an error. */
  lua_pushglobaltable(L);
  lua_newtable(L);
  lua_pushcfunction(L, l_undefined);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, -2);
  lua_pop(L, 1);
  return 0;
}

/* ------------------------------------------------------------- errors */

static void record(dt_policy *p, const char *hook, const char *msg, bool disabled) {
  for (size_t i = 0; i < p->errs.n; i++)
    if (!strcmp(p->errs.v[i].hook, hook) && !strcmp(p->errs.v[i].message, msg)) {
      p->errs.v[i].count++;
      p->errs.v[i].disabled |= disabled;
      return;
    }
  dt_policy_err e = {hook, dt__strdup(msg), 1, disabled};
  if (!e.message || dt__vec_push(&p->errs, e)) dt__free((void *)e.message);
}

void dt__policy_clear_errors(dt_policy *p) {
  for (size_t i = 0; i < p->errs.n; i++) dt__free((void *)p->errs.v[i].message);
  p->errs.n = 0;
}

size_t dt__policy_errors(const dt_policy *p, const dt_policy_err **out) {
  *out = p->errs.v;
  return p->errs.n;
}

const char *dt__policy_name(const dt_policy *p) { return p->path ? p->path : p->chunk; }

const char *dt__policy_log(const dt_policy *p) { return p->log.p ? p->log.p : ""; }

/* -------------------------------------------------------------- state */

static void state_close(state *s) {
  if (s->L) lua_close(s->L);
  dt__free(s->m);
  memset(s, 0, sizeof *s);
}

static const char *suggest(const char *k) {
  /* the known name at edit distance <= 2, for typos */
  static char out[64];
  const char *best = NULL;
  size_t bestd = 3;
  for (int i = 0; i < DT_HOOK_N + 1; i++) {
    const char *c = i < DT_HOOK_N ? dt__hook_names[i] : "selftest";
    size_t n = strlen(k), m = strlen(c);
    if (n > 40 || m > 40) continue;
    size_t d[41][41];
    for (size_t a = 0; a <= n; a++) d[a][0] = a;
    for (size_t b = 0; b <= m; b++) d[0][b] = b;
    for (size_t a = 1; a <= n; a++)
      for (size_t b = 1; b <= m; b++) {
        size_t x = d[a - 1][b] + 1, y = d[a][b - 1] + 1, z = d[a - 1][b - 1] + (k[a - 1] != c[b - 1]);
        d[a][b] = x < y ? (x < z ? x : z) : (y < z ? y : z);
      }
    if (d[n][m] < bestd) {
      bestd = d[n][m];
      best = c;
    }
  }
  if (!best) return "";
  snprintf(out, sizeof out, " (did you mean %s?)", best);
  return out;
}

/* Load the chunk into a fresh sandbox and resolve its hooks. */
static int state_open(dt_policy *p, const char *text, size_t len, state *s, dt_error *err) {
  memset(s, 0, sizeof *s);
  for (int i = 0; i < DT_HOOK_N; i++) s->ref[i] = LUA_NOREF;
  s->selftest = s->randomseed = s->name_key = LUA_NOREF;
  s->m = dt__calloc(1, sizeof *s->m);
  if (!s->m) return dt__err(err, DT_ENOMEM, "out of memory");
  s->m->cap = p->lim.memory_bytes;
  s->L = lua_newstate(l_alloc, s->m);
  if (!s->L) {
    state_close(s);
    return dt__err(err, DT_ENOMEM, "%s: cannot create a Lua state", p->chunk);
  }
  lua_State *L = s->L;
  *(dt_policy **)lua_getextraspace(L) = p;
  lua_atpanic(L, panic);
  lua_pushcfunction(L, open_sandbox);
  lua_pushlightuserdata(L, s);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
    state_close(s);
    return dt__err(err, DT_ENOMEM, "%s: cannot set up the sandbox", p->chunk);
  }
  int rc = 0;
  lua_pushcfunction(L, traceback);
  int status = luaL_loadbufferx(L, text, len, p->chunk, "t");
  if (status != LUA_OK) {
    rc = dt__err(err, DT_EINVAL, "%s", lua_tostring(L, -1));
    goto fail;
  }
  budget_start(p, L);
  status = lua_pcall(L, 0, 1, -2);
  budget_stop(L);
  if (status != LUA_OK) {
    rc = dt__err(err, DT_EINVAL, "%s", lua_tostring(L, -1));
    goto fail;
  }
  if (!lua_istable(L, -1)) {
    rc = dt__err(err, DT_EINVAL, "%s: a policy must return a table of hooks, not %s", p->path ? p->path : p->chunk,
                 luaL_typename(L, -1));
    goto fail;
  }
  /* luaL_ref below may need memory the policy has used up */
  jmp_buf jb;
  if (setjmp(jb)) {
    p->panic = NULL;
    rc = dt__err(err, DT_EINVAL, "%s: the policy left no memory to register its hooks (limit %zu bytes)",
                 p->path ? p->path : p->chunk, p->lim.memory_bytes);
    goto fail;
  }
  p->panic = &jb;
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    if (lua_type(L, -2) != LUA_TSTRING) {
      lua_pop(L, 2);
      rc = dt__err(err, DT_EINVAL, "%s: the policy table has a %s key; hooks are named by strings",
                   p->path ? p->path : p->chunk, luaL_typename(L, -2));
      goto fail;
    }
    const char *k = lua_tostring(L, -2);
    int h = -1;
    for (int i = 0; i < DT_HOOK_N; i++)
      if (!strcmp(k, dt__hook_names[i])) h = i;
    bool meta = false;
    for (const char *const *m = k_meta_names; *m; m++) meta |= !strcmp(k, *m);
    if (h < 0 && !meta) {
      rc = dt__err(err, DT_EINVAL, "%s: unknown hook '%s'%s; known hooks: price, score, rank, consolidation_order, "
                   "approve, budget, on_interruption, scale_in, selftest",
                   p->path ? p->path : p->chunk, k, suggest(k));
      lua_pop(L, 2);
      goto fail;
    }
    if ((h >= 0 || !strcmp(k, "selftest")) && !lua_isfunction(L, -1)) {
      rc = dt__err(err, DT_EINVAL, "%s: hook '%s' must be a function, not %s", p->path ? p->path : p->chunk, k,
                   luaL_typename(L, -1));
      lua_pop(L, 2);
      goto fail;
    }
    if (h >= 0) {
      lua_pushvalue(L, -1);
      s->ref[h] = luaL_ref(L, LUA_REGISTRYINDEX);
    } else if (!strcmp(k, "selftest")) {
      lua_pushvalue(L, -1);
      s->selftest = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 2); /* table, traceback */
  p->panic = NULL;
  return 0;
fail:
  p->panic = NULL;
  state_close(s);
  return rc;
}

/* ------------------------------------------------------------- calling */

/* Seed math.random for one decision with the library's own randomseed. */
static int reseed(lua_State *L) {
  dt_policy *p = self(L);
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
  record(p, what, msg ? msg : "error", disable);
}

/* Call the function under nargs arguments (pushed after it) with the
** budget and a traceback; leaves nres results or records the error. The
** consecutive-failure count is reset by succeeded(), once the results have
** been checked too. */
static int call(dt_policy *p, const char *what, int hook, int nargs, int nres) {
  lua_State *L = p->s.L;
  int base = lua_gettop(L) - nargs; /* the function */
  lua_pushcfunction(L, traceback);
  lua_insert(L, base);
  lua_pushcfunction(L, reseed);
  if (lua_pcall(L, 0, 0, 0) != LUA_OK) lua_pop(L, 1); /* out of memory: the previous seed stays */
  jmp_buf jb;
  int status;
  budget_start(p, L);
  if (setjmp(jb) == 0) {
    p->panic = &jb;
    status = lua_pcall(L, nargs, nres, base);
  } else {
    status = -1;
  }
  p->panic = NULL;
  budget_stop(L);
  if (status == -1) {
    /* the state cannot be trusted after a panic: every hook is off until the
    ** policy is reloaded */
    for (int i = 0; i < DT_HOOK_N; i++) p->disabled[i] = true;
    lua_settop(L, 0);
    record(p, what, "internal error in the policy runtime; the policy is disabled until reloaded", true);
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
static int protected_build(dt_policy *p, const char *what, lua_CFunction f, const void *a, const void *b,
                           lua_Integer n, int nres) {
  lua_State *L = p->s.L;
  lua_pushcfunction(L, f);
  lua_pushlightuserdata(L, (void *)a);
  lua_pushlightuserdata(L, (void *)b);
  lua_pushinteger(L, n);
  if (lua_pcall(L, 3, nres, 0) == LUA_OK) return 0;
  record(p, what, lua_tostring(L, -1), false);
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

static bool str_same(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

/* Whether offers[0..n) are the offerings the offers table was built from. */
static bool snapshot_same(const dt_policy *p, const dt_hook_offer *o, size_t n) {
  if (!p->snap_valid || p->offers == LUA_NOREF || n != p->nsnap) return false;
  for (size_t i = 0; i < n; i++) {
    const dt_hook_offer *a = &o[i], *b = &p->snap[i];
    if (memcmp(&a->price, &b->price, sizeof a->price) || memcmp(&a->on_demand_price, &b->on_demand_price, sizeof a->price) ||
        a->available != b->available || a->cpu_milli != b->cpu_milli || a->memory_bytes != b->memory_bytes ||
        a->gpus != b->gpus || !str_same(a->instance_type, b->instance_type) || !str_same(a->zone, b->zone) ||
        !str_same(a->capacity_type, b->capacity_type) || !str_same(a->reservation, b->reservation) ||
        !str_same(a->family, b->family) || !str_same(a->arch, b->arch))
      return false;
  }
  return true;
}

/* Keep a copy of offers[0..n), strings included; false when out of memory. */
static bool snapshot_keep(dt_policy *p, const dt_hook_offer *o, size_t n) {
  size_t bytes = 0;
  for (size_t i = 0; i < n; i++) {
    const char *s[6] = {o[i].instance_type, o[i].zone, o[i].capacity_type, o[i].reservation, o[i].family, o[i].arch};
    for (int k = 0; k < 6; k++) bytes += s[k] ? strlen(s[k]) + 1 : 0;
  }
  dt_hook_offer *snap = dt__malloc((n ? n : 1) * sizeof *snap);
  char *str = dt__malloc(bytes ? bytes : 1), *at = str;
  if (!snap || !str) {
    dt__free(snap);
    dt__free(str);
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    snap[i] = o[i];
    const char **s[6] = {&snap[i].instance_type, &snap[i].zone, &snap[i].capacity_type, &snap[i].reservation,
                         &snap[i].family, &snap[i].arch};
    for (int k = 0; k < 6; k++) {
      if (!*s[k]) continue;
      size_t len = strlen(*s[k]) + 1;
      memcpy(at, *s[k], len);
      *s[k] = at;
      at += len;
    }
  }
  dt__free(p->snap);
  dt__free(p->snap_str);
  p->snap = snap;
  p->snap_str = str;
  p->nsnap = n;
  p->snap_valid = true;
  return true;
}

/* Let go of the round's tables (the offerings and rank's arguments). */
static void snapshot_release(dt_policy *p) {
  if (p->s.L && p->offers != LUA_NOREF) luaL_unref(p->s.L, LUA_REGISTRYINDEX, p->offers);
  if (p->s.L && p->rank_claim != LUA_NOREF) luaL_unref(p->s.L, LUA_REGISTRYINDEX, p->rank_claim);
  if (p->s.L && p->rank_list != LUA_NOREF) luaL_unref(p->s.L, LUA_REGISTRYINDEX, p->rank_list);
  p->offers = p->rank_claim = p->rank_list = LUA_NOREF;
  p->rank_n = 0;
  p->snap_valid = false;
}

/*
** A round's offerings are the same tables as the last round's while the
** offerings are the same (a disruption pass's simulations, a daemon's rounds
** between catalog refreshes): hooks treat them as read-only, and a policy
** that writes into them sees its writes again.
*/
int dt__policy_round(dt_policy *p, int64_t now, uint64_t seed, const dt_hook_offer *offers, size_t n) {
  p->now = now;
  p->seed = seed;
  p->decision = 0;
  if (snapshot_same(p, offers, n)) return 0;
  snapshot_release(p);
  lua_State *L = p->s.L;
  /* built in protected mode: the sandbox's memory cap may refuse it */
  lua_pushcfunction(L, build_offers);
  lua_pushlightuserdata(L, (void *)offers);
  lua_pushinteger(L, (lua_Integer)n);
  if (lua_pcall(L, 2, 1, 0) != LUA_OK) {
    record(p, "round", lua_tostring(L, -1), false);
    lua_pop(L, 1);
    return -1;
  }
  p->offers = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  p->noffers = n;
  snapshot_keep(p, offers, n); /* without a copy the next round builds again */
  return 0;
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

int dt__policy_price(dt_policy *p, double *out) {
  if (!dt__policy_has(p, DT_HOOK_PRICE) || p->offers == LUA_NOREF) return -1;
  lua_State *L = p->s.L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, p->s.ref[DT_HOOK_PRICE]);
  lua_rawgeti(L, LUA_REGISTRYINDEX, p->offers);
  if (call(p, "price", DT_HOOK_PRICE, 1, 1)) return -1;
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
        if (!isfinite(v) || v < 0)
          rc = bad_result(p, DT_HOOK_PRICE, "price %zu is %g; prices must be finite and >= 0", i + 1, v);
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
  dt_policy *p = self(L);
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
  if (call(p, "rank", DT_HOOK_RANK, 2, 1)) return -1;
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



/* score over a batch, run as the hook under call(): upvalue-free, its
** arguments are the out array, the indices and their count. Returns the
** 1-based position of the first result of the wrong type (0: none) and
** that result's description. */
static int score_batch(lua_State *L) {
  double *out = lua_touserdata(L, 1);
  const uint32_t *idx = lua_touserdata(L, 2);
  size_t n = (size_t)lua_tointeger(L, 3);
  dt_policy *p = self(L);
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

int dt__policy_score(dt_policy *p, const uint32_t *idx, size_t n, double *score) {
  if (!dt__policy_has(p, DT_HOOK_SCORE) || p->offers == LUA_NOREF) return -1;
  lua_State *L = p->s.L;
  if (!lua_checkstack(L, 8)) return -1;
  lua_pushcfunction(L, score_batch);
  lua_pushlightuserdata(L, score);
  lua_pushlightuserdata(L, (void *)idx);
  lua_pushinteger(L, (lua_Integer)n);
  if (call(p, "score", DT_HOOK_SCORE, 3, 2)) return -1;
  int rc = 0;
  lua_Integer bad = lua_tointeger(L, -2);
  if (bad > 0) rc = bad_result(p, DT_HOOK_SCORE, "%s; expected a finite number or nil", lua_tostring(L, -1));
  lua_pop(L, 2);
  return succeeded(p, DT_HOOK_SCORE, rc);
}

/* The result of an ordering hook (on top of the stack): a list of entries
** (tables with a "name") or names. names[k] names entry k, read before the
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
  if (!lua_istable(L, -1)) {
    rc = bad_result(p, hook, "expected a list of entries or their names, got %s", luaL_typename(L, -1));
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
  if (call(p, "consolidation_order", DT_HOOK_CONSOLIDATION_ORDER, 1, 1)) {
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
  if (call(p, "approve", DT_HOOK_APPROVE, 1, 1)) return -1;
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
  if (call(p, "budget", DT_HOOK_BUDGET, 3, 1)) return -1;
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
  if (call(p, "on_interruption", DT_HOOK_ON_INTERRUPTION, 1, 1)) return -1;
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
  if (call(p, "scale_in", DT_HOOK_SCALE_IN, 2, 1)) {
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

/* ------------------------------------------------------------ validate */

/* The policy's own selftest(), then each hook on a small golden input. */
static int validate(dt_policy *p, dt_error *err) {
  lua_State *L = p->s.L;
  const char *who = p->path ? p->path : p->chunk;
  if (p->s.selftest != LUA_NOREF) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->s.selftest);
    if (call(p, "selftest", -1, 0, 1))
      return dt__err(err, DT_EINVAL, "%s: selftest failed: %s", who, p->errs.n ? p->errs.v[p->errs.n - 1].message : "");
    bool ok = lua_isnil(L, -1) || lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (!ok) return dt__err(err, DT_EINVAL, "%s: selftest returned false", who);
  }
  static const dt_hook_offer golden[] = {
      {"m5.large", "zone-a", "on-demand", NULL, 0.096, 0.096, -1, 2000, 8589934592, 0, "m5", "amd64"},
      {"m5.large", "zone-a", "spot", NULL, 0.035, 0.096, -1, 2000, 8589934592, 0, "m5", "amd64"},
      {"m5.large", "zone-b", "reserved", "cr-1", 0.096, 0.096, 2, 2000, 8589934592, 0, "m5", "amd64"},
      {"c6g.xlarge", "zone-b", "on-demand", NULL, 0.136, 0.136, -1, 4000, 8589934592, 0, "c6g", "arm64"},
  };
  size_t ng = sizeof golden / sizeof golden[0];
  if (dt__policy_round(p, 0, 0, golden, ng)) return dt__err(err, DT_EINVAL, "%s: cannot build the golden input", who);
  int rc = 0;
  double out[4];
  size_t before = p->errs.n;
  if (dt__policy_has(p, DT_HOOK_PRICE) && dt__policy_price(p, out))
    rc = dt__err(err, DT_EINVAL, "%s: price hook failed on the golden input: %s", who,
                 p->errs.n > before ? p->errs.v[p->errs.n - 1].message : "");
  uint32_t idx[4] = {0, 1, 2, 3};
  dt_hook_claim claim = {"golden", 3, 1500, 3221225472, 0, 0};
  if (!rc && dt__policy_has(p, DT_HOOK_RANK) && dt__policy_rank(p, &claim, idx, ng, out))
    rc = dt__err(err, DT_EINVAL, "%s: rank hook failed on the golden input: %s", who,
                 p->errs.n > before ? p->errs.v[p->errs.n - 1].message : "");
  if (!rc && dt__policy_has(p, DT_HOOK_SCORE) && dt__policy_score(p, idx, ng, out))
    rc = dt__err(err, DT_EINVAL, "%s: score hook failed on the golden input: %s", who,
                 p->errs.n > before ? p->errs.v[p->errs.n - 1].message : "");
  if (!rc && dt__policy_has(p, DT_HOOK_SCALE_IN)) {
    static const char *const la[] = {"app", "web", "tier", "spot"}, *const lb[] = {"app", "web"};
    const dt_hook_vm vms[] = {{"web-0", "Running", 0, 100, true, false, la, 2},
                              {"web-1", "Stopped", 1, 200, false, true, lb, 1},
                              {"web-2", "Running", 2, 300, true, false, lb, 1}};
    const dt_hook_pool pool = {"default", "web", 2, 3, 1};
    size_t order[3];
    if (dt__policy_scale_in(p, &pool, vms, 3, order))
      rc = dt__err(err, DT_EINVAL, "%s: scale_in hook failed on the golden input: %s", who,
                   p->errs.n > before ? p->errs.v[p->errs.n - 1].message : "");
  }
  static const dt_hook_field gn1[] = {{"name", DT_HF_STRING, "node-a", 0},       {"nodePool", DT_HF_STRING, "default", 0},
                                      {"instanceType", DT_HF_STRING, "m5.large", 0}, {"capacityType", DT_HF_STRING, "on-demand", 0},
                                      {"price", DT_HF_NUMBER, NULL, 0.096},          {"pods", DT_HF_NUMBER, NULL, 3},
                                      {"disruptionCost", DT_HF_NUMBER, NULL, 4},     {"age", DT_HF_NUMBER, NULL, 86400}};
  static const dt_hook_field gn2[] = {{"name", DT_HF_STRING, "node-b", 0},        {"nodePool", DT_HF_STRING, "default", 0},
                                      {"instanceType", DT_HF_STRING, "c6g.xlarge", 0}, {"capacityType", DT_HF_STRING, "spot", 0},
                                      {"price", DT_HF_NUMBER, NULL, 0.05},            {"pods", DT_HF_NUMBER, NULL, 1},
                                      {"disruptionCost", DT_HF_NUMBER, NULL, 2},      {"age", DT_HF_NUMBER, NULL, 3600}};
  const dt_hook_rec gnodes[] = {{gn1, 8}, {gn2, 8}};
  if (!rc && dt__policy_has(p, DT_HOOK_CONSOLIDATION_ORDER)) {
    size_t order[2];
    if (dt__policy_consolidation_order(p, gnodes, 2, order))
      rc = dt__err(err, DT_EINVAL, "%s: consolidation_order hook failed on the golden input: %s", who,
                   p->errs.n > before ? p->errs.v[p->errs.n - 1].message : "");
  }
  if (!rc && dt__policy_has(p, DT_HOOK_APPROVE)) {
    static const dt_hook_field gc[] = {{"reason", DT_HF_STRING, "Underutilized", 0}, {"action", DT_HF_STRING, "delete", 0},
                                       {"savings", DT_HF_NUMBER, NULL, 0.146},       {"price", DT_HF_NUMBER, NULL, 0.146},
                                       {"newPrice", DT_HF_NUMBER, NULL, 0},          {"disruption", DT_HF_NUMBER, NULL, 6},
                                       {"poolCost", DT_HF_NUMBER, NULL, 1.5},        {"poolDisruption", DT_HF_NUMBER, NULL, 40},
                                       {"now", DT_HF_NUMBER, NULL, 0}};
    const dt_hook_rec cmd = {gc, 9};
    bool ok;
    if (dt__policy_approve(p, &cmd, gnodes, 2, &ok))
      rc = dt__err(err, DT_EINVAL, "%s: approve hook failed on the golden input: %s", who,
                   p->errs.n > before ? p->errs.v[p->errs.n - 1].message : "");
  }
  if (!rc && dt__policy_has(p, DT_HOOK_BUDGET)) {
    static const dt_hook_field gb[] = {{"now", DT_HF_NUMBER, NULL, 0}, {"nodes", DT_HF_NUMBER, NULL, 10}, {"disrupting", DT_HF_NUMBER, NULL, 0},
                                       {"allowed", DT_HF_NUMBER, NULL, 1}};
    const dt_hook_rec ctx = {gb, 4};
    int64_t a = 1;
    if (dt__policy_budget(p, "default", "Underutilized", &ctx, &a))
      rc = dt__err(err, DT_EINVAL, "%s: budget hook failed on the golden input: %s", who,
                   p->errs.n > before ? p->errs.v[p->errs.n - 1].message : "");
  }
  if (!rc && dt__policy_has(p, DT_HOOK_ON_INTERRUPTION)) {
    static const dt_hook_field ge[] = {{"kind", DT_HF_STRING, "spot-interruption", 0}, {"instanceId", DT_HF_STRING, "i-0123456789abcdef0", 0},
                                       {"nodeClaim", DT_HF_STRING, "default-abcde", 0}, {"instanceType", DT_HF_STRING, "m5.large", 0},
                                       {"zone", DT_HF_STRING, "zone-a", 0},             {"capacityType", DT_HF_STRING, "spot", 0},
                                       {"state", DT_HF_STRING, "", 0}};
    const dt_hook_rec ev = {ge, 7};
    char act[32];
    if (dt__policy_on_interruption(p, &ev, act, sizeof act))
      rc = dt__err(err, DT_EINVAL, "%s: on_interruption hook failed on the golden input: %s", who,
                   p->errs.n > before ? p->errs.v[p->errs.n - 1].message : "");
  }
  snapshot_release(p); /* the golden offerings are no plan's */
  lua_gc(L, LUA_GCCOLLECT);
  p->gc_floor = p->s.m->used;
  /* validation failures are load errors, not plan errors */
  while (p->errs.n > before) dt__free((void *)p->errs.v[--p->errs.n].message);
  memset(p->fails, 0, sizeof p->fails);
  memset(p->disabled, 0, sizeof p->disabled);
  return rc;
}

static void describe_hooks(dt_policy *p) {
  p->hooks[0] = 0;
  size_t n = 0;
  for (int i = 0; i < DT_HOOK_N; i++)
    if (p->s.ref[i] != LUA_NOREF)
      n += (size_t)snprintf(p->hooks + n, sizeof p->hooks - n, "%s%s", n ? " " : "", dt__hook_names[i]);
  if (p->s.selftest != LUA_NOREF) snprintf(p->hooks + n, sizeof p->hooks - n, "%sselftest", n ? " " : "");
}

/* --------------------------------------------------------------- public */

static dt_policy *policy_new(const char *path, const char *name, const dt_policy_limits *lim) {
  dt_policy *p = dt__calloc(1, sizeof *p);
  if (!p) return NULL;
  p->offers = p->rank_claim = p->rank_list = LUA_NOREF;
  if (lim) p->lim = *lim;
  if (!p->lim.memory_bytes) p->lim.memory_bytes = 64u << 20;
  if (!p->lim.instructions) p->lim.instructions = 50000000;
  if (!(p->lim.wall_ms > 0)) p->lim.wall_ms = 250;
  if (!p->lim.max_failures) p->lim.max_failures = 5;
  char chunk[1100];
  snprintf(chunk, sizeof chunk, "@%s", name);
  p->chunk = dt__strdup(chunk);
  p->path = path ? dt__strdup(path) : NULL;
  if (!p->chunk || (path && !p->path)) {
    dt__free(p->chunk);
    dt__free(p->path);
    dt__free(p);
    return NULL;
  }
  return p;
}

/* A load that failed because the process ran out of memory (not the
** policy's own budget, which is the policy's fault) says so. */
static int load_failed(const dt_policy *p, int rc, bool oom, dt_error *err) {
  if (rc != DT_ENOMEM && oom)
    return dt__err(err, DT_ENOMEM, "%s: out of memory loading the policy", p->path ? p->path : p->chunk);
  return rc;
}

static int load_text(dt_policy *p, const char *text, size_t len, dt_error *err) {
  state s;
  state old = p->s;
  dt__alloc_failed(1);
  int rc = state_open(p, text, len, &s, err);
  if (rc) return load_failed(p, rc, dt__alloc_failed(0), err);
  p->s = s;
  unsigned fails[DT_HOOK_N];
  bool disabled[DT_HOOK_N];
  memcpy(fails, p->fails, sizeof fails);
  memcpy(disabled, p->disabled, sizeof disabled);
  memset(p->fails, 0, sizeof p->fails);
  memset(p->disabled, 0, sizeof p->disabled);
  int offers = p->offers, rank_claim = p->rank_claim, rank_list = p->rank_list; /* the old state's round */
  size_t rank_n = p->rank_n, gc_floor = p->gc_floor;
  p->offers = p->rank_claim = p->rank_list = LUA_NOREF;
  p->rank_n = 0;
  p->snap_valid = false; /* the kept copy describes the old state's table; validation replaces it */
  rc = validate(p, err);
  bool oom = dt__alloc_failed(0);
  if (rc) {
    /* keep the old state in force */
    state_close(&p->s);
    p->s = old;
    memcpy(p->fails, fails, sizeof fails);
    memcpy(p->disabled, disabled, sizeof disabled);
    p->offers = offers, p->rank_claim = rank_claim, p->rank_list = rank_list, p->rank_n = rank_n;
    p->gc_floor = gc_floor; /* the old tables are released when the next round builds its own */
    return load_failed(p, rc, oom, err);
  }
  char *copy = dt__strndup(text, len);
  if (!copy) {
    state_close(&p->s);
    p->s = old;
    p->offers = offers, p->rank_claim = rank_claim, p->rank_list = rank_list, p->rank_n = rank_n;
    p->gc_floor = gc_floor;
    return dt__err(err, DT_ENOMEM, "out of memory");
  }
  if (old.L) {
    if (offers != LUA_NOREF) luaL_unref(old.L, LUA_REGISTRYINDEX, offers);
    state_close(&old);
  }
  dt__free(p->text);
  p->text = copy;
  p->len = len;
  describe_hooks(p);
  return 0;
}

int dt_policy_load_buffer(const char *name, const char *buf, size_t len, const dt_policy_limits *limits,
                          dt_policy **out, dt_error *err) {
  dt_policy *p = policy_new(NULL, name, limits);
  if (!p) return dt__err(err, DT_ENOMEM, "out of memory");
  int rc = load_text(p, buf, len, err);
  if (rc) {
    dt_policy_free(p);
    return rc;
  }
  *out = p;
  return 0;
}

int dt_policy_load_file(const char *path, const dt_policy_limits *limits, dt_policy **out, dt_error *err) {
  char *buf;
  size_t len;
  int rc = dt__read_file(path, &buf, &len, err);
  if (rc) return rc;
  dt_policy *p = policy_new(path, path, limits);
  if (!p) {
    dt__free(buf);
    return dt__err(err, DT_ENOMEM, "out of memory");
  }
  if (len >= 4 && !memcmp(buf, LUA_SIGNATURE, 4)) {
    dt__free(buf);
    dt_policy_free(p);
    return dt__err(err, DT_EINVAL, "%s: a precompiled (bytecode) chunk; policies must be Lua source", path);
  }
  rc = load_text(p, buf, len, err);
  dt__free(buf);
  if (rc) {
    dt_policy_free(p);
    return rc;
  }
  *out = p;
  return 0;
}

bool dt__policy_file_changed(const dt_policy *p) {
  char *buf;
  size_t len;
  if (!p || !p->path || dt__read_file(p->path, &buf, &len, NULL)) return false;
  bool changed = len != p->len || memcmp(buf, p->text, len) != 0;
  dt__free(buf);
  return changed;
}

int dt_policy_reload(dt_policy *p, int *changed, dt_error *err) {
  if (changed) *changed = 0;
  if (!p->path) return 0;
  char *buf;
  size_t len;
  int rc = dt__read_file(p->path, &buf, &len, err);
  if (rc) return rc; /* the file vanished: keep what we have */
  if (len == p->len && !memcmp(buf, p->text, len)) {
    dt__free(buf);
    return 0;
  }
  if (len >= 4 && !memcmp(buf, LUA_SIGNATURE, 4)) {
    dt__free(buf);
    return dt__err(err, DT_EINVAL, "%s: a precompiled (bytecode) chunk; policies must be Lua source", p->path);
  }
  rc = load_text(p, buf, len, err);
  dt__free(buf);
  if (!rc) {
    dt__policy_clear_errors(p);
    if (changed) *changed = 1;
  }
  return rc;
}

const char *dt_policy_hooks(const dt_policy *p) { return p->hooks; }

void dt_policy_free(dt_policy *p) {
  if (!p) return;
  snapshot_release(p);
  dt__free(p->snap);
  dt__free(p->snap_str);
  state_close(&p->s);
  dt__policy_clear_errors(p);
  dt__free(p->errs.v);
  dt__free(p->text);
  dt__free(p->path);
  dt__free(p->chunk);
  dt__free(p->log.p);
  dt__free(p);
}

/* ------------------------------------------------------- policy directory */

struct dt_policy_dir {
  char *dir;
  DT_VEC(dt_policy *) pols;
  DT_VEC(char *) names; /* names[i] is the policy pols[i] */
  dt_buf errors;
};

int dt_policy_dir_open(const char *dir, dt_policy_dir **out, dt_error *err) {
  dt_policy_dir *d = dt__calloc(1, sizeof *d);
  if (!d || !(d->dir = dt__strdup(dir))) {
    dt__free(d);
    return dt__err(err, DT_ENOMEM, "out of memory");
  }
  *out = d;
  return 0;
}

static void dir_load(dt_policy_dir *d, const char *name) {
  for (size_t k = 0; k < d->names.n; k++)
    if (!strcmp(d->names.v[k], name)) {
      dt_error err = {0};
      if (dt_policy_reload(d->pols.v[k], NULL, &err)) /* the previous version stays in force */
        dt__buf_printf(&d->errors, "policy %s: %s; the previous version stays\n", name, err.msg);
      return;
    }
  dt_error err = {0};
  dt_policy *p = NULL;
  char path[4200];
  snprintf(path, sizeof path, "%s/%s.lua", d->dir, name);
  if (strchr(name, '/') || !strcmp(name, "..") || !*name)
    snprintf(err.msg, sizeof err.msg, "\"%s\" is not a plain name", name);
  else if (dt_policy_load_file(path, NULL, &p, &err) == 0) {
    char *nm = dt__strdup(name);
    if (nm && !dt__vec_push(&d->pols, p)) {
      if (!dt__vec_push(&d->names, nm)) return;
      d->pols.n--;
    }
    dt__free(nm);
    dt_policy_free(p);
    snprintf(err.msg, sizeof err.msg, "out of memory");
  }
  dt__buf_printf(&d->errors, "NodePool policy %s: %s; its NodePools use the built-in defaults\n", name, err.msg);
}

void dt_policy_dir_sync(dt_policy_dir *d, const dt_manifests *m) {
  d->errors.len = 0;
  if (d->errors.p) d->errors.p[0] = 0;
  size_t n = dt_manifests_nodepools(m);
  for (size_t i = 0; i < n; i++) {
    const char *name = dt_manifests_nodepool_policy(m, i);
    bool seen = false;
    for (size_t k = 0; name && k < i && !seen; k++) {
      const char *o = dt_manifests_nodepool_policy(m, k);
      seen = o && !strcmp(o, name);
    }
    if (name && !seen) dir_load(d, name);
  }
}

const char *dt_policy_dir_errors(const dt_policy_dir *d) { return d->errors.p && !d->errors.oom ? d->errors.p : ""; }

void dt_policy_dir_apply(const dt_policy_dir *d, dt_policy *const **policies, const char *const **names, size_t *n) {
  *policies = d->pols.v;
  *names = (const char *const *)d->names.v;
  *n = d->pols.n;
}

void dt_policy_dir_free(dt_policy_dir *d) {
  if (!d) return;
  for (size_t i = 0; i < d->pols.n; i++) {
    dt_policy_free(d->pols.v[i]);
    dt__free(d->names.v[i]);
  }
  dt__free(d->pols.v);
  dt__free(d->names.v);
  dt__free(d->errors.p);
  dt__free(d->dir);
  dt__free(d);
}
