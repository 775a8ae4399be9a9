/*
** disrupt_methods.c: the disruption methods in the order disrupt.c runs
** them: static NodePools scaled down, emptiness, drift and expiry (replace
** each), multi-node and single-node consolidation.
*/
#include "disrupt_int.h"

static int cand_cmp(const void *a, const void *b) {
  const cand *x = a, *y = b;
  if (x->ratio != y->ratio) return x->ratio > y->ratio ? -1 : 1;
  return x->node < y->node ? -1 : x->node > y->node;
}

/* ------------------------------------------------------------ methods */

static bool is_static(const state *st, int pool) { return pool >= 0 && st->m->pools.v[pool].replicas >= 0; }

/* A static pool's claims as Karpenter's NodePoolState counts them: running
** (not being deleted and not disrupting), pending disruption (tainted, or
** removed by a command that replaces them), and all of them (those being
** deleted count against limits.nodes until they are gone). except is a node
** left out of running and pending (a command's candidate), or SIZE_MAX. */
static void static_counts(const state *st, int pool, size_t except, int64_t *running, int64_t *pending, int64_t *all) {
  *running = *pending = *all = 0;
  for (size_t i = 0; i < st->nodes.n; i++) {
    const dnode *d = &st->nodes.v[i];
    if (d->pool != pool) continue;
    ++*all;
    if (i == except || d->n->deleting || (d->removed && !d->pending)) continue;
    if (d->removed || d->tainted)
      ++*pending;
    else
      ++*running;
  }
}

/* limits.nodes of a pool, -1 when unset. */
static int64_t node_limit(const dt_nodepool *p) {
  for (size_t i = 0; i < p->limits.n; i++)
    if (!strcmp(p->limits.v[i].name, "nodes")) return p->limits.v[i].milli / 1000;
  return -1;
}

#define STATIC_WHY                                                                                                     \
  "static NodePool %s (spec.replicas %lld): Karpenter never consolidates a static pool (emptiness or "                 \
  "underutilization); drift and expiry still replace its nodes"

typedef struct scaledown {
  uint32_t node;
  int rank;    /* 0 unlaunched claim, 1 empty, 2 pods, 3 pods with do-not-disrupt */
  double cost; /* rescheduling cost x lifetime remaining */
} scaledown;

static int scaledown_cmp(const void *a, const void *b) {
  const scaledown *x = a, *y = b;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  if (x->rank >= 2 && x->cost != y->cost) return x->cost < y->cost ? -1 : 1;
  return 0;
}

/*
** Karpenter's static deprovisioning controller: a static pool with more
** running claims than replicas deletes the difference, first claims that
** never launched (no provider ID), then empty nodes (DaemonSet pods only and
** none with an active do-not-disrupt), then nodes without do-not-disrupt pods
** before those with, each group by rescheduling cost (the sum of its pods'
** eviction costs) times the share of its lifetime left; ties by name. The
** user asked for less capacity, so no disruption budget holds it back; its
** pods go where the simulation puts them, and pods that fit nowhere do not
** stop it.
*/
int dt__dr_static_scale_down(state *st) {
  int rc = 0;
  for (size_t pi = 0; pi < st->m->pools.n && !rc; pi++) {
    const dt_nodepool *np = &st->m->pools.v[pi];
    if (np->replicas < 0) continue;
    int64_t running, pending, all;
    static_counts(st, (int)pi, SIZE_MAX, &running, &pending, &all);
    if (running <= np->replicas) continue;
    int64_t excess = running - np->replicas;
    scaledown *c = dt__malloc((st->nodes.n ? st->nodes.n : 1) * sizeof *c);
    uint32_t *take = dt__malloc((st->nodes.n ? st->nodes.n : 1) * sizeof *take);
    if (!c || !take) {
      dt__free(c);
      dt__free(take);
      return DT_ENOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < st->nodes.n; i++) {
      const dnode *d = &st->nodes.v[i];
      if (d->pool != (int)pi || d->removed || d->n->deleting || d->tainted || !dt__dr_managed(st, i)) continue;
      scaledown e = {(uint32_t)i, 2, 0};
      bool dnd = false, only_daemons = true;
      double cost = 0;
      for (size_t k = 0; k < d->pods.n; k++) {
        const dt_podspec *p = &st->pods[d->pods.v[k]];
        dnd |= p->dnd || p->dnd_until > st->o.now;
        only_daemons &= p->daemon;
        cost += dt__dr_eviction_cost(p);
      }
      double life = 1.0;
      if (np->expire_after > 0 && d->n->created) {
        life = (double)(np->expire_after - dt__dr_age(st, d->n)) / (double)np->expire_after;
        life = life < 0 ? 0 : life > 1 ? 1 : life;
      }
      if (d->n->claim_name && !d->n->provider_id && !d->n->node_name)
        e.rank = 0;
      else if (only_daemons && !dnd)
        e.rank = 1;
      else
        e.rank = dnd ? 3 : 2;
      e.cost = cost * life;
      c[n++] = e;
    }
    /* ties by name: the candidates are in node order, which a stable pass keeps */
    for (size_t i = 1; i < n; i++)
      for (size_t j = i; j > 0; j--) {
        int o = scaledown_cmp(&c[j - 1], &c[j]);
        if (o < 0 || (o == 0 && strcmp(st->nodes.v[c[j - 1].node].n->name, st->nodes.v[c[j].node].n->name) <= 0)) break;
        scaledown t = c[j - 1];
        c[j - 1] = c[j];
        c[j] = t;
      }
    size_t nt = 0;
    static const char *const how[] = {"a NodeClaim that never launched", "empty", "the cheapest to reschedule",
                                      "the cheapest to reschedule (do-not-disrupt pods are evicted last)"};
    for (size_t k = 0; k < n && (int64_t)nt < excess; k++) {
      take[nt++] = c[k].node;
      dt__dr_step(st, c[k].node,
                  "static scale-down: NodePool %s runs %lld NodeClaims for spec.replicas %lld; taken as %s", np->name,
                  (long long)running, (long long)np->replicas, how[c[k].rank]);
    }
    sim s;
    rc = dt__dr_simulate(st, take, nt, false, -1, 0, &s);
    if (!rc) {
      char detail[700];
      snprintf(detail, sizeof detail,
               "static NodePool %s runs %lld NodeClaims for spec.replicas %lld: Karpenter's static deprovisioning "
               "deletes %zu (claims that never launched, then empty nodes, then the cheapest to reschedule), "
               "budgets aside%s%s",
               np->name, (long long)running, (long long)np->replicas, nt, s.fail[0] ? "; " : "", s.fail);
      rc = dt__dr_apply(st, take, nt, &s, "Overprovisioned", detail, NULL);
    }
    dt__dr_sim_free(&s);
    dt__free(c);
    dt__free(take);
  }
  return rc;
}

int dt__dr_emptiness(state *st) {
  candvec cs = {0};
  for (size_t i = 0; i < st->nodes.n; i++) {
    dnode *d = &st->nodes.v[i];
    if (!d->extra && !d->removed && is_static(st, d->pool)) {
      if (!d->why[0])
        dt__dr_why(st, i, STATIC_WHY, st->m->pools.v[d->pool].name, (long long)st->m->pools.v[d->pool].replicas);
      continue;
    }
    if (d->extra || !d->empty || !dt__dr_eligible(st, i, true) || !dt__dr_settled(st, i)) continue;
    cand c = {(uint32_t)i, d->price > 0 ? d->price : 0};
    if (dt__vec_push(&cs, c)) return DT_ENOMEM;
  }
  if (cs.n) qsort(cs.v, cs.n, sizeof *cs.v, cand_cmp);
  uint32_t *take = dt__malloc((cs.n ? cs.n : 1) * sizeof *take);
  if (!take) {
    dt__free(cs.v);
    return DT_ENOMEM;
  }
  size_t nt = 0;
  for (size_t k = 0; k < cs.n; k++) {
    int pool = st->nodes.v[cs.v[k].node].pool;
    int64_t a = dt__dr_allowed(st, pool, 0);
    dt__dr_step(st, cs.v[k].node, "emptiness: empty; budget for Empty in NodePool %s: %s", st->m->pools.v[pool].name,
                a == INT64_MAX ? "unlimited"
                : a > 0        ? "available"
                               : "0");
    if (a <= 0) {
      dt__dr_why(st, cs.v[k].node, "budget: NodePool %s allows no more Empty disruptions now",
                 st->m->pools.v[pool].name);
      continue;
    }
    take[nt++] = cs.v[k].node;
    st->pb[pool].disrupting++; /* reserve while choosing; dt__dr_apply() counts it again */
  }
  for (size_t k = 0; k < nt; k++) st->pb[st->nodes.v[take[k]].pool].disrupting--;
  int rc = nt ? dt__dr_apply(st, take, nt, NULL, "Empty", NULL, NULL) : 0;
  dt__free(take);
  dt__free(cs.v);
  return rc;
}

/* Karpenter's AWS provider's drift (cloudprovider/drift.go): the claim's
** EC2NodeClass hash, compared only at the same hash version (dovetail's own
** on the claims it wrote), then its image, which must be one of the node
** class's AMIs for the node's instance type (status.amis and their
** requirements against the node's labels). */
static bool nodeclass_drift(const state *st, const dnode *d, const dt_node *c, const dt_nodepool *p, char *why,
                            size_t n) {
  const dt_nodeclass *nc = dt__nodeclass_of(st->m, p, NULL);
  if (!nc || !c) return false;
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)nc->hash);
  /* dovetail's hash (of what Karpenter's covers) on the claims it wrote: a
  ** node class edited where no Karpenter updates its annotation still
  ** drifts them; then Karpenter's own, compared only at one version */
  if (c->nc_hash && strcmp(c->nc_hash, hex)) {
    snprintf(why, n, "NodeClassDrift: EC2NodeClass %s changed (hash %s, now %s)", nc->name, c->nc_hash, hex);
    return true;
  }
  if (c->nc_k_hash && nc->k_hash && c->nc_k_hash_version && nc->k_hash_version &&
      !strcmp(c->nc_k_hash_version, nc->k_hash_version) && strcmp(c->nc_k_hash, nc->k_hash)) {
    snprintf(why, n, "NodeClassDrift: EC2NodeClass %s changed (karpenter.k8s.aws/ec2nodeclass-hash %s, now %s)",
             nc->name, c->nc_k_hash, nc->k_hash);
    return true;
  }
  if (!c->image_id || !nc->namis) return false;
  const dt_kvs *l = &d->n->labels;
  for (size_t i = 0; i < nc->namis; i++) {
    if (strcmp(nc->amis[i].id, c->image_id)) continue;
    bool fits = true;
    for (size_t k = 0; k < nc->amis[i].reqs.n && fits; k++) fits = dt__mreq_match(&nc->amis[i].reqs.v[k], l->v, l->n);
    if (fits) return false;
  }
  snprintf(why, n, "AMIDrift: image %s is not among EC2NodeClass %s's AMIs for its instance type", c->image_id,
           nc->name);
  return true;
}

/* Drift and expiry: each candidate alone, any number of replacements. */
int dt__dr_replace_each(state *st, bool expiry) {
  candvec cs = {0};
  for (size_t i = 0; i < st->nodes.n; i++) {
    dnode *d = &st->nodes.v[i];
    if (d->extra || d->removed) continue;
    char *reason = d->drift;
    if (expiry) {
      /* forceful (as Karpenter's expiration controller): no budget, no pod blocks */
      if (d->pool < 0 || !d->n->initialized || d->n->deleting || !dt__dr_managed(st, i)) continue;
      int64_t ea = dt__dr_expire_after(d, &st->m->pools.v[d->pool]), born = dt__dr_born(d);
      if (ea < 0 || !born || st->o.now - born < ea) continue;
    } else {
      if (!dt__dr_eligible(st, i, d->pool < 0 || !dt__dr_tgp(d, &st->m->pools.v[d->pool]))) continue;
      const dt_nodepool *p = &st->m->pools.v[d->pool];
      char hex[17];
      snprintf(hex, sizeof hex, "%016llx", (unsigned long long)p->hash);
      /* the claim's marks: Karpenter's hash of the NodePool it was made from
      ** (compared only at the same hash version, as Karpenter), its Drifted condition */
      const dt_node *c = dt__dr_claim_of(d);
      /* dovetail's hash is the claim's: a Node registered for it (as a
      ** cluster feed sends it) carries none, and drift was lost with it */
      const char *ph = c && c->pool_hash ? c->pool_hash : d->n->pool_hash;
      if (ph && strcmp(ph, hex))
        snprintf(reason, sizeof d->drift, "NodePool template changed (hash %s, now %s)", ph, hex);
      else if (c && c->k_hash && p->k_hash && c->k_hash_version && p->k_hash_version &&
               !strcmp(c->k_hash_version, p->k_hash_version) && strcmp(c->k_hash, p->k_hash))
        snprintf(reason, sizeof d->drift, "NodePool changed (karpenter.sh/nodepool-hash %s, now %s)", c->k_hash,
                 p->k_hash);
      else if (c && c->drifted)
        snprintf(reason, sizeof d->drift, "NodeClaim %s is Drifted (%s)", c->name, c->drifted);
      else if (!dt__dr_node_matches_pool(d->n, p, reason, sizeof d->drift)) {
      } else if (nodeclass_drift(st, d, c, p, reason, sizeof d->drift)) {
      } else
        continue;
      dt__dr_step(st, i, "drift: %s", reason);
    }
    /* empty first, then oldest */
    cand c = {(uint32_t)i, (d->empty ? 1e18 : 0) + (double)dt__dr_age(st, d->n)};
    if (dt__vec_push(&cs, c)) return DT_ENOMEM;
  }
  if (cs.n) qsort(cs.v, cs.n, sizeof *cs.v, cand_cmp);
  /* Karpenter's static drift waits while a static pool is above its
  ** replicas (running and pending disruption): judged once, before this
  ** method's own commands, as one pass of its loop does. */
  bool *over = dt__calloc(st->m->pools.n + 1, sizeof *over);
  if (!over) {
    dt__free(cs.v);
    return DT_ENOMEM;
  }
  for (size_t pi = 0; pi < st->m->pools.n; pi++) {
    int64_t r, q, a;
    if (st->m->pools.v[pi].replicas < 0) continue;
    static_counts(st, (int)pi, SIZE_MAX, &r, &q, &a);
    over[pi] = r + q > st->m->pools.v[pi].replicas;
  }
  int rc = 0;
  for (size_t k = 0; k < cs.n && !rc; k++) {
    uint32_t i = cs.v[k].node;
    int pool = st->nodes.v[i].pool;
    const dt_nodepool *np = &st->m->pools.v[pool];
    bool stat = is_static(st, pool);
    if (!expiry && dt__dr_allowed(st, pool, 1) <= 0) {
      dt__dr_why(st, i, "drifted, but budget: NodePool %s allows no more Drifted disruptions now",
                 st->m->pools.v[pool].name);
      continue;
    }
    /* A static node is replaced from its pool's template (one for one):
    ** drift within limits.nodes, counting every claim of the pool; expiry
    ** as the static provisioner refills a pool below its replicas. */
    int spool = -1;
    int64_t swant = 0;
    if (stat) {
      int64_t r, q, a, limit = node_limit(np);
      if (!expiry && over[pool]) {
        dt__dr_why(st, i, "drifted, but static NodePool %s is above spec.replicas %lld: it is scaled down first",
                   np->name, (long long)np->replicas);
        continue;
      }
      static_counts(st, pool, expiry ? i : SIZE_MAX, &r, &q, &a);
      int64_t room = limit < 0 ? 1 : limit - a;
      if (!expiry && room <= 0) {
        dt__dr_why(st, i, "drifted, but static NodePool %s is at limits.nodes %lld: its replacement would pass it",
                   np->name, (long long)limit);
        continue;
      }
      spool = pool;
      swant = !expiry ? 1 : (r + q < np->replicas && room > 0 && np->replicas - r > 0);
    }
    sim s;
    if ((rc = dt__dr_simulate(st, &i, 1, false, spool, swant, &s))) {
      dt__dr_sim_free(&s);
      break;
    }
    if (stat && !expiry) {
      /* Karpenter's static drift does not simulate the node's pods: they
      ** are evicted and provisioned for like any pending pod. */
      char detail[700];
      snprintf(detail, sizeof detail, "%s; static NodePool %s: replaced from its template%s%s", st->nodes.v[i].drift,
               np->name, s.fail[0] ? "; " : "", s.fail);
      rc = dt__dr_apply(st, &i, 1, &s, "Drifted", detail, NULL);
      st->nodes.v[i].pending = true;
    } else if (s.fail[0] && !expiry) {
      dt__dr_why(st, i, "drifted, but %s", s.fail);
    } else {
      char detail[500];
      if (expiry)
        snprintf(detail, sizeof detail, "expireAfter %llds reached (age %llds)%s%s",
                 (long long)dt__dr_expire_after(&st->nodes.v[i], &st->m->pools.v[pool]),
                 (long long)(st->o.now - dt__dr_born(&st->nodes.v[i])), s.fail[0] ? "; " : "", s.fail);
      else
        snprintf(detail, sizeof detail, "%s", st->nodes.v[i].drift);
      rc = dt__dr_apply(st, &i, 1, &s, expiry ? "Expired" : "Drifted", detail, NULL);
      st->nodes.v[i].pending = !expiry;
    }
    dt__dr_sim_free(&s);
  }
  dt__free(over);
  dt__free(cs.v);
  return rc;
}

/* Consolidation candidates in Karpenter's order: price / disruption cost. */
static int consolidation_candidates(state *st, candvec *cs) {
  for (size_t i = 0; i < st->nodes.n; i++) {
    dnode *d = &st->nodes.v[i];
    if (d->extra || d->removed) continue;
    if (is_static(st, d->pool)) { /* a reason drift or expiry gave stays: it says more */
      if (!d->why[0])
        dt__dr_why(st, i, STATIC_WHY, st->m->pools.v[d->pool].name, (long long)st->m->pools.v[d->pool].replicas);
      continue;
    }
    if (!dt__dr_eligible(st, i, true)) continue;
    const dt_nodepool *p = &st->m->pools.v[d->pool];
    if (d->empty) continue; /* emptiness's, under the Empty budget */
    if (p->consolidation == DT_CONSOL_WHEN_EMPTY) {
      dt__dr_why(st, i, "consolidationPolicy WhenEmpty: the node has pods");
      continue;
    }
    if (!dt__dr_settled(st, i)) continue;
    if (d->price <= 0) {
      dt__dr_why(st, i, "price unknown: instance type %s in zone %s (%s) is not in the catalog",
                 d->type ? d->type : "?", d->zone ? d->zone : "?", d->ct >= 0 ? dt__ct_names[d->ct] : "?");
      continue;
    }
    cand c = {(uint32_t)i, d->price / d->cost};
    if (dt__vec_push(cs, c)) return DT_ENOMEM;
  }
  if (cs->n) qsort(cs->v, cs->n, sizeof *cs->v, cand_cmp);
  return dt__dr_order_hook(st, cs->v, cs->n);
}

static bool approve(state *st, const uint32_t *c, size_t n, const verdict *v, double savings, char *out, size_t len) {
  double price = 0;
  for (size_t i = 0; i < n; i++) price += st->nodes.v[c[i]].price;
  return dt__dr_balanced_ok(st, c, n, savings, out, len) &&
         dt__dr_approve_hook(st, c, n, v->replace ? "replace" : "delete", savings, price, out, len);
}

/* Whether removing cands[0..n) is a valid consolidation; fills v and s. */
static int try_consolidate(state *st, const uint32_t *cands, size_t n, bool single, sim *s, verdict *v) {
  memset(v, 0, offsetof(verdict, opt));
  int rc = dt__dr_simulate(st, cands, n, true, -1, 0, s);
  if (rc) return rc;
  if (s->fail[0]) {
    snprintf(v->reason, sizeof v->reason, "%s", s->fail);
    return 0;
  }
  if (s->nclaims > 1) {
    snprintf(v->reason, sizeof v->reason, "would need %zu new nodes; consolidation replaces with at most one",
             s->nclaims);
    return 0;
  }
  double price = 0;
  for (size_t i = 0; i < n; i++) price += st->nodes.v[cands[i]].price;
  if (s->nclaims == 0) {
    v->ok = true;
    v->savings = price;
  } else {
    dt__dr_price_rule(st, s, cands, n, single, v);
  }
  if (v->ok && !approve(st, cands, n, v, v->savings, v->reason, sizeof v->reason)) v->ok = false;
  return 0;
}

/* One multi-node command, if any; *made tells. */
static int multi_node_once(state *st, bool *made) {
  candvec cs = {0};
  int rc = consolidation_candidates(st, &cs);
  uint32_t *pre = dt__malloc((cs.n ? cs.n : 1) * sizeof *pre);
  if (rc || !pre) {
    dt__free(cs.v);
    dt__free(pre);
    return rc ? rc : DT_ENOMEM;
  }
  /* filtered in order by budget, each taking one */
  size_t n = 0;
  int64_t *used = dt__calloc(st->m->pools.n ? st->m->pools.n : 1, sizeof *used);
  for (size_t k = 0; used && k < cs.n && n < MULTI_MAX; k++) {
    int pool = st->nodes.v[cs.v[k].node].pool;
    if (dt__dr_allowed(st, pool, 2) - used[pool] <= 0) {
      st->budget_held++;
      continue;
    }
    used[pool]++;
    pre[n++] = cs.v[k].node;
  }
  dt__free(used);
  size_t lo = 2, hi = n, best = 0;
  sim bs = {0};
  verdict *bv = dt__calloc(1, sizeof *bv), *v = dt__calloc(1, sizeof *v);
  if (!bv || !v) rc = DT_ENOMEM;
  while (!rc && lo <= hi) {
    size_t mid = (lo + hi) / 2;
    sim s;
    rc = try_consolidate(st, pre, mid, false, &s, v);
    if (!rc && v->ok) {
      dt__dr_sim_free(&bs);
      dt__dr_sim_move(&bs, &s);
      *bv = *v;
      best = mid;
      lo = mid + 1;
    } else {
      dt__dr_sim_free(&s);
      hi = mid - 1;
    }
  }
  for (size_t k = 0; k < best; k++)
    dt__dr_step(st, pre[k], "multi-node consolidation: removed with %zu others", best - 1);
  if (!rc && best) rc = dt__dr_apply(st, pre, best, &bs, "Underutilized", "multi-node consolidation", bv);
  *made = best > 0;
  dt__dr_sim_free(&bs);
  dt__free(bv);
  dt__free(v);
  dt__free(pre);
  dt__free(cs.v);
  return rc;
}

/* Karpenter starts a new loop after each command, and multi-node runs again
** before single-node gets a turn: repeat it while it finds commands. */
int dt__dr_multi_node(state *st) {
  bool made = true;
  int rc = 0;
  while (!rc && made) rc = multi_node_once(st, &made);
  return rc;
}

int dt__dr_single_node(state *st) {
  candvec cs = {0};
  int rc = consolidation_candidates(st, &cs);
  if (rc) {
    dt__free(cs.v);
    return rc;
  }
  /* round-robin across NodePools, each in its own order: the candidates
  ** grouped by pool (order kept), then dealt one of each pool a round */
  size_t npools = st->m->pools.n;
  cand *rr = dt__malloc((cs.n ? cs.n : 1) * sizeof *rr), *by = dt__malloc((cs.n ? cs.n : 1) * sizeof *by);
  size_t *at = dt__calloc(npools + 1, sizeof *at), *end = dt__calloc(npools + 1, sizeof *end);
  verdict *v = dt__calloc(1, sizeof *v);
  if (!rr || !by || !at || !end || !v) rc = DT_ENOMEM;
  for (size_t k = 0; !rc && k < cs.n; k++) end[st->nodes.v[cs.v[k].node].pool + 1]++;
  for (size_t pi = 0; !rc && pi < npools; pi++) end[pi + 1] += end[pi]; /* end[pi]: where pool pi starts */
  for (size_t pi = 0; !rc && pi <= npools; pi++) at[pi] = end[pi];
  for (size_t k = 0; !rc && k < cs.n; k++) by[at[st->nodes.v[cs.v[k].node].pool]++] = cs.v[k];
  for (size_t placed = 0, round = 0; !rc && placed < cs.n; round++)
    for (size_t pi = 0; pi < npools; pi++)
      if (end[pi] + round < at[pi]) rr[placed++] = by[end[pi] + round];
  for (size_t k = 0; !rc && k < cs.n; k++) {
    uint32_t i = rr[k].node;
    int pool = st->nodes.v[i].pool;
    if (st->nodes.v[i].removed) continue;
    if (dt__dr_allowed(st, pool, 2) <= 0) {
      st->budget_held++;
      dt__dr_why(st, i, "budget: NodePool %s allows no more Underutilized disruptions now", st->m->pools.v[pool].name);
      continue;
    }
    int screened = dt__dr_screen(st, i, v->reason, sizeof v->reason);
    if (screened) {
      if (screened < 0) {
        rc = screened;
        break;
      }
      st->sims++; /* the seed it would have taken: the simulations after it plan as they would */
      st->screened++;
      dt__dr_why(st, i, "consolidation: %s", v->reason);
      continue;
    }
    sim s;
    rc = try_consolidate(st, &i, 1, true, &s, v);
    if (!rc && v->ok) {
      dt__dr_step(st, i, "single-node consolidation: %s, saves $%.4f/h", s.nclaims ? "replace" : "delete", v->savings);
      rc = dt__dr_apply(st, &i, 1, &s, "Underutilized", "single-node consolidation", v);
    } else if (!rc) {
      dt__dr_why(st, i, "consolidation: %s", v->reason);
    }
    dt__dr_sim_free(&s);
  }
  dt__free(rr);
  dt__free(by);
  dt__free(at);
  dt__free(end);
  dt__free(v);
  dt__free(cs.v);
  dt__dr_screen_free(st);
  return rc;
}
