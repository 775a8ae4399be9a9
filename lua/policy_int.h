/*
** policy_int.h: what the policy runtime's two halves share (internal):
** policy.c loads a policy into its sandbox, validates it and keeps its
** errors; hooks.c builds each hook's arguments, calls it under its budget
** and checks its results.
*/
#ifndef DT_POLICY_INT_H
#define DT_POLICY_INT_H

#include "../engine/hooks.h"

#include <lua.h>
#include <setjmp.h>

typedef struct mem {
  size_t used, cap;
} mem;

typedef struct state {
  lua_State *L;
  mem *m;
  int ref[DT_HOOK_N];
  int selftest;
  int randomseed;         /* the math library's own, kept at load */
  const void *rand_state; /* its generator's state (an upvalue it shares with math.random) */
  size_t rand_len;
  int name_key; /* the string "name", for raw reads of results */
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
  dt_symtab snap_strs;     /* its strings, each once (snap points at them) */
  dt_sym *snap_sym;        /* per offering, its six strings' symbols there (0: NULL) */
  const char **snap_match; /* per symbol: a string found equal to it by the comparison running */
  size_t nsnap;
  bool snap_valid;
  uint64_t snap_token; /* what the caller said the snapshot is (dt__policy_round), 0 nothing */
  size_t gc_floor;     /* bytes in use after the last full collection */
  unsigned gen;        /* bumped when the offers table is rebuilt or the policy reloaded */
  /* a disruption pass (dt__policy_pass_begin): price is called by its first
  ** plan and its result kept for the others */
  struct {
    bool on, fixed, seen, priced; /* seen: a plan of the pass has given its offerings */
    unsigned gen;                 /* p->gen the prices were computed under */
    int rc;
    double *price;
    size_t nprice;
    char *err; /* the price hook's error, recorded again by each plan that reuses it */
    bool err_disabled;
  } pass;
  /* what hook calls read besides their arguments, counted by dovetail.now
  ** (clock), dovetail.log and math.random (other): a call that read
  ** neither gave a function of its arguments (the offerings) */
  unsigned long reads_clock, reads_other;
  /* score's and price's results kept for the later plans on the same offers
  ** table (hooks.c); clock: some kept result read the clock, so they hold
  ** for plans at `now` only */
  struct {
    unsigned gen;
    int64_t now;
    bool clock, off; /* off: a call read something else: nothing more is kept */
    double *v;
    uint8_t *known;
    size_t n;
  } smemo;
  struct {
    unsigned gen;
    int64_t now;
    bool clock, ok;
    double *v;
    size_t n;
  } pmemo;
  /* the current call's budget */
  uint64_t instr;
  double t0;
  bool tripped;
  int every; /* instructions between count hooks now (fewer while the state holds large strings) */
  dt_buf log;
  jmp_buf *panic; /* where a panic returns to, while C is in the state */
};

#define pl_budget_start     dt__pl_budget_start
#define pl_budget_stop      dt__pl_budget_stop
#define pl_call             dt__pl_call
#define pl_record           dt__pl_record
#define pl_self             dt__pl_self
#define pl_snapshot_release dt__pl_snapshot_release
#define pl_traceback        dt__pl_traceback

void pl_budget_start(dt_policy *p, lua_State *L);
void pl_budget_stop(lua_State *L);
int pl_call(dt_policy *p, const char *what, int hook, int nargs, int nres);
void pl_record(dt_policy *p, const char *hook, const char *msg, bool disabled);
dt_policy *pl_self(lua_State *L);
void pl_snapshot_release(dt_policy *p);
int pl_traceback(lua_State *L); /* the message handler of every protected call */

#endif
