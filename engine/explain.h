/*
** explain.h: what the two halves of `plan --explain` share (internal):
** explain.c follows the pod's tries and renders, explain_offers.c says,
** once the plan is launched, why each cheaper offering was not the one.
*/
#ifndef DT_EXPLAIN_H
#define DT_EXPLAIN_H

#include "schedule.h"

enum { EX_PENDING = 0, EX_BOUND = 1, EX_INFLIGHT = 2 };

#define EX_LIST_MAX   40 /* nodes or claims listed one by one in a try */
#define EX_OFFERS_MAX 8  /* cheaper offerings listed per reason */

typedef struct dt_explain {
  int kind;
  char pod[600];
  const char *node; /* EX_BOUND, EX_INFLIGHT: the node or claim that has it */
  uint32_t spec;
  bool spec_known; /* EX_INFLIGHT: spec is the pending pod (or workload) the claim carries */
  uint32_t tries, pass, pos, qlen;
  cJSON *attempt;           /* the last try */
  DT_VEC(rt_claim *) tried; /* attempt's claims, in its order */
  int32_t node_at;          /* where the last try put it: a node, */
  rt_claim *claim_at;       /* or a claim, */
  bool new_claim;           /* opened for it */
  uint32_t cls;             /* the class of the last try */
  cJSON *doc;
} dt_explain;

#define ex_price_text    dt__ex_price_text
#define ex_put_buf       dt__ex_put_buf
#define ex_describe_reqs dt__ex_describe_reqs
#define ex_str           dt__ex_str

const char *ex_price_text(const cJSON *v, char *out, size_t n);
void ex_put_buf(cJSON *o, const char *key, dt_buf *b);
void ex_describe_reqs(const dt_plan *p, const dt_req *r, dt_buf *b);
const char *ex_str(const cJSON *o, const char *k);

#endif
