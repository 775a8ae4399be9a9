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
#include "policy_int.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <math.h>
#include <setjmp.h>
#include <string.h>

const char *const dt__hook_names[DT_HOOK_N] = {
    "price", "rank", "consolidation_order", "approve", "budget", "on_interruption", "scale_in", "score"};

/* Names a policy table may export besides the hooks. */
static const char *const k_meta_names[] = {"selftest", "name", "description", "version", NULL};

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

dt_policy *pl_self(lua_State *L) { return *(dt_policy **)lua_getextraspace(L); }

#define HOOK_EVERY 1000
#define CALL_COST  20 /* instructions charged per function call */

/*
** One VM instruction (a concatenation, a comparison of long strings) or one
** library call (utf8.len, string.upper) can walk a string as long as the
** state's memory, in C where no hook runs: 1000 of them between two looks
** at the clock is seconds at 25 MB. So while the state holds more than
** LARGE bytes the clock is read at every call and the count hook comes
** every HOOK_EVERY x LARGE / used instructions: what runs between two looks
** stays about HOOK_EVERY x LARGE bytes of work, whatever the strings.
*/
#define LARGE (256u << 10)

static int hook_every(const dt_policy *p) {
  size_t used = p->s.m ? p->s.m->used : 0;
  if (used <= LARGE) return HOOK_EVERY;
  size_t e = (size_t)HOOK_EVERY * LARGE / used;
  return e ? (int)e : 1;
}

static void count_hook(lua_State *L, lua_Debug *ar) {
  dt_policy *p = pl_self(L);
  if (!p) return;
  if (!p->tripped) {
    bool large = p->s.m && p->s.m->used > LARGE;
    if (ar->event == LUA_HOOKCALL || ar->event == LUA_HOOKTAILCALL) {
      /* C loops that call back (metamethods) run no VM instruction */
      p->instr += CALL_COST;
      if (!large && (p->instr & 0x3FFF) >= CALL_COST && p->instr <= p->lim.instructions) return;
    } else {
      p->instr += (uint64_t)p->every;
      int e = hook_every(p);
      if (e != p->every) {
        p->every = e;
        lua_sethook(L, count_hook, LUA_MASKCOUNT | LUA_MASKCALL, e);
      }
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

void pl_budget_start(dt_policy *p, lua_State *L) {
  p->instr = 0;
  p->tripped = false;
  p->t0 = dt__now_ms();
  p->every = hook_every(p);
  lua_sethook(L, count_hook, LUA_MASKCOUNT | LUA_MASKCALL, p->every);
}

void pl_budget_stop(lua_State *L) { lua_sethook(L, NULL, 0, 0); }

/* Charge work a C function is about to do in a loop the hook cannot see;
** an error when it would not fit in what is left of the call's budget. */
static void charge(lua_State *L, double work, const char *what) {
  dt_policy *p = pl_self(L);
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

/* table.insert/remove shift up to #t elements; table.concat walks i..j;
** table.sort makes about n log n comparisons. */
static int len_guard(lua_State *L) {
  const char *fname = lua_tostring(L, lua_upvalueindex(2));
  double work;
  if (!strcmp(fname, "concat")) {
    lua_Integer i = luaL_optinteger(L, 3, 1);
    lua_Integer j = lua_isnoneornil(L, 4) ? luaL_len(L, 1) : luaL_checkinteger(L, 4);
    work = j >= i ? (double)j - (double)i + 1 : 0;
  } else {
    work = (double)luaL_len(L, 1); /* __len is Lua and budgeted; its answer is charged */
    if (!strcmp(fname, "sort") && work > 1) work *= log2(work); /* compares in C without a comparator */
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
  dt_policy *p = pl_self(L);
  p->reads_clock++;
  lua_pushinteger(L, (lua_Integer)p->now);
  return 1;
}

static int l_log(lua_State *L) {
  const char *level = luaL_checkstring(L, 1);
  const char *msg = luaL_checkstring(L, 2);
  dt_policy *p = pl_self(L);
  p->reads_other++;
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

int pl_traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (!msg) msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* An error outside any protected call. Everything is meant to run inside
** one; if something does not, the policy is switched off rather than the
** process aborted: back to the C entry that was in the state. */
static int panic(lua_State *L) {
  dt_policy *p = pl_self(L);
  if (p && p->panic) longjmp(*p->panic, 1);
  return 0; /* no entry to return to: Lua aborts */
}

/* xpcall(f, msgh, ...): f called as pcall calls it; on an error, msgh
** called on the error object as an ordinary call, its result returned
** after false. Lua's own xpcall runs msgh where the error is raised, and
** the budget's error is raised in the count hook, where no hook runs: a
** handler that looped there was never stopped, and took the process with
** it. An error in msgh is returned in place of its result. */
static int l_xpcall(lua_State *L) {
  int n = lua_gettop(L);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  luaL_checkany(L, 1);
  lua_pushvalue(L, 1);
  for (int i = 3; i <= n; i++) lua_pushvalue(L, i);
  if (lua_pcall(L, n > 2 ? n - 2 : 0, LUA_MULTRET, 0) == LUA_OK) {
    lua_pushboolean(L, 1);
    lua_insert(L, n + 1);
    return lua_gettop(L) - n;
  }
  lua_pushvalue(L, 2);
  lua_insert(L, -2);
  lua_pcall(L, 1, 1, 0); /* the handler's result, or its own error */
  lua_pushboolean(L, 0);
  lua_insert(L, -2);
  return 2;
}

static const luaL_Reg k_dovetail[] = {{"now", l_now}, {"log", l_log}, {"milli", l_milli}, {NULL, NULL}};

static int open_sandbox(lua_State *L) {
  static const luaL_Reg libs[] = {{LUA_GNAME, luaopen_base},       {LUA_STRLIBNAME, luaopen_string},
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
  lua_pushcfunction(L, l_xpcall);
  lua_setglobal(L, "xpcall");
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
  wrap(L, "sort", len_guard);
  lua_pop(L, 1);
  /* the seeding uses the library's own function, whatever the policy does
  ** to math later; and "name" for reading results without metamethods */
  state *s = lua_touserdata(L, 1);
  lua_getglobal(L, "math");
  lua_getfield(L, -1, "randomseed");
  if (lua_getupvalue(L, -1, 1)) {
    if (lua_type(L, -1) == LUA_TUSERDATA && lua_rawlen(L, -1) <= 64) {
      s->rand_state = lua_touserdata(L, -1); /* kept alive by randomseed, which the registry keeps */
      s->rand_len = lua_rawlen(L, -1);
    }
    lua_pop(L, 1);
  }
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

void pl_record(dt_policy *p, const char *hook, const char *msg, bool disabled) {
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

const char *dt_policy_log(const dt_policy *p) { return p && p->log.p ? p->log.p : ""; }

void dt_policy_log_clear(dt_policy *p) {
  if (!p) return;
  p->log.len = 0;
  if (p->log.p) p->log.p[0] = 0;
}

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
  lua_pushcfunction(L, pl_traceback);
  int status = luaL_loadbufferx(L, text, len, p->chunk, "t");
  if (status == LUA_OK) {
    pl_budget_start(p, L);
    status = lua_pcall(L, 0, 1, -2);
    pl_budget_stop(L);
  }
  if (status != LUA_OK) { /* a syntax or runtime error names its place; "not enough memory" and the like do not */
    const char *msg = lua_tostring(L, -1), *name = dt__policy_name(p);
    if (!msg) msg = "error";
    bool placed = !strncmp(msg, p->chunk + 1, strlen(p->chunk + 1)); /* "@name": Lua says "name:line:" */
    rc = placed                 ? dt__err(err, DT_EINVAL, "%s", msg)
         : status == LUA_ERRMEM ? dt__err(err, DT_EINVAL, "%s: loading the policy: %s (its limit is %zu bytes)", name,
                                          msg, p->lim.memory_bytes)
                                : dt__err(err, DT_EINVAL, "%s: loading the policy: %s", name, msg);
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
      rc = dt__err(err, DT_EINVAL,
                   "%s: unknown hook '%s'%s; known hooks: price, score, rank, consolidation_order, "
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

/* ------------------------------------------------------------ validate */

/* The policy's own selftest(), then each hook on a small golden input. */
static int validate(dt_policy *p, dt_error *err) {
  lua_State *L = p->s.L;
  const char *who = p->path ? p->path : p->chunk;
  if (p->s.selftest != LUA_NOREF) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->s.selftest);
    if (pl_call(p, "selftest", -1, 0, 1))
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
  if (dt__policy_round(p, 0, 0, golden, ng, 0))
    return dt__err(err, DT_EINVAL, "%s: cannot build the golden input", who);
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
  static const dt_hook_field gn1[] = {
      {"name", DT_HF_STRING, "node-a", 0},           {"nodePool", DT_HF_STRING, "default", 0},
      {"instanceType", DT_HF_STRING, "m5.large", 0}, {"capacityType", DT_HF_STRING, "on-demand", 0},
      {"price", DT_HF_NUMBER, NULL, 0.096},          {"pods", DT_HF_NUMBER, NULL, 3},
      {"disruptionCost", DT_HF_NUMBER, NULL, 4},     {"age", DT_HF_NUMBER, NULL, 86400}};
  static const dt_hook_field gn2[] = {{"name", DT_HF_STRING, "node-b", 0},
                                      {"nodePool", DT_HF_STRING, "default", 0},
                                      {"instanceType", DT_HF_STRING, "c6g.xlarge", 0},
                                      {"capacityType", DT_HF_STRING, "spot", 0},
                                      {"price", DT_HF_NUMBER, NULL, 0.05},
                                      {"pods", DT_HF_NUMBER, NULL, 1},
                                      {"disruptionCost", DT_HF_NUMBER, NULL, 2},
                                      {"age", DT_HF_NUMBER, NULL, 3600}};
  const dt_hook_rec gnodes[] = {{gn1, 8}, {gn2, 8}};
  if (!rc && dt__policy_has(p, DT_HOOK_CONSOLIDATION_ORDER)) {
    size_t order[2];
    if (dt__policy_consolidation_order(p, gnodes, 2, order))
      rc = dt__err(err, DT_EINVAL, "%s: consolidation_order hook failed on the golden input: %s", who,
                   p->errs.n > before ? p->errs.v[p->errs.n - 1].message : "");
  }
  if (!rc && dt__policy_has(p, DT_HOOK_APPROVE)) {
    static const dt_hook_field gc[] = {{"reason", DT_HF_STRING, "Underutilized", 0},
                                       {"action", DT_HF_STRING, "delete", 0},
                                       {"savings", DT_HF_NUMBER, NULL, 0.146},
                                       {"price", DT_HF_NUMBER, NULL, 0.146},
                                       {"newPrice", DT_HF_NUMBER, NULL, 0},
                                       {"disruption", DT_HF_NUMBER, NULL, 6},
                                       {"poolCost", DT_HF_NUMBER, NULL, 1.5},
                                       {"poolDisruption", DT_HF_NUMBER, NULL, 40},
                                       {"now", DT_HF_NUMBER, NULL, 0}};
    const dt_hook_rec cmd = {gc, 9};
    bool ok;
    if (dt__policy_approve(p, &cmd, gnodes, 2, &ok))
      rc = dt__err(err, DT_EINVAL, "%s: approve hook failed on the golden input: %s", who,
                   p->errs.n > before ? p->errs.v[p->errs.n - 1].message : "");
  }
  if (!rc && dt__policy_has(p, DT_HOOK_BUDGET)) {
    static const dt_hook_field gb[] = {{"now", DT_HF_NUMBER, NULL, 0},
                                       {"nodes", DT_HF_NUMBER, NULL, 10},
                                       {"disrupting", DT_HF_NUMBER, NULL, 0},
                                       {"allowed", DT_HF_NUMBER, NULL, 1}};
    const dt_hook_rec ctx = {gb, 4};
    int64_t a = 1;
    if (dt__policy_budget(p, "default", "Underutilized", &ctx, &a))
      rc = dt__err(err, DT_EINVAL, "%s: budget hook failed on the golden input: %s", who,
                   p->errs.n > before ? p->errs.v[p->errs.n - 1].message : "");
  }
  if (!rc && dt__policy_has(p, DT_HOOK_ON_INTERRUPTION)) {
    static const dt_hook_field ge[] = {{"kind", DT_HF_STRING, "spot-interruption", 0},
                                       {"instanceId", DT_HF_STRING, "i-0123456789abcdef0", 0},
                                       {"nodeClaim", DT_HF_STRING, "default-abcde", 0},
                                       {"instanceType", DT_HF_STRING, "m5.large", 0},
                                       {"zone", DT_HF_STRING, "zone-a", 0},
                                       {"capacityType", DT_HF_STRING, "spot", 0},
                                       {"state", DT_HF_STRING, "", 0}};
    const dt_hook_rec ev = {ge, 7};
    char act[32];
    if (dt__policy_on_interruption(p, &ev, act, sizeof act))
      rc = dt__err(err, DT_EINVAL, "%s: on_interruption hook failed on the golden input: %s", who,
                   p->errs.n > before ? p->errs.v[p->errs.n - 1].message : "");
  }
  pl_snapshot_release(p); /* the golden offerings are no plan's */
  lua_gc(L, LUA_GCCOLLECT);
  p->gc_floor = p->s.m->used;
  /* validation failures are load errors, not plan errors */
  while (p->errs.n > before) dt__free((void *)p->errs.v[--p->errs.n].message);
  memset(p->fails, 0, sizeof p->fails);
  memset(p->disabled, 0, sizeof p->disabled);
  dt_policy_log_clear(p); /* what it logged on the golden input is no plan's either */
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
  p->gen++;
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
  dt__policy_pass_end(p);
  pl_snapshot_release(p);
  dt__free(p->smemo.v);
  dt__free(p->smemo.known);
  dt__free(p->pmemo.v);
  dt__free(p->snap);
  dt__free(p->snap_sym);
  dt__free(p->snap_match);
  dt__symtab_free(&p->snap_strs);
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
