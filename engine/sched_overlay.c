/*
** sched_overlay.c: the input's NodeOverlays resolved, as Karpenter's
** nodeoverlay controller builds its instance-type store
** (pkg/controllers/nodeoverlay in kubernetes-sigs/karpenter).
**
** Overlays are taken by weight, highest first (equal weights: the name
** later in the alphabet first). Each is matched, NodePool by NodePool,
** against every instance type: the type's requirements (its labels, the
** zones and capacity types of its offerings) with the NodePool's name and
** template labels must be compatible with the overlay's requirements (a
** label the overlay names that is none of those is compatible only with
** NotIn and DoesNotExist), and of a compatible type the offerings whose
** zone and capacity type the requirements allow are its. The first overlay
** to price an offering sets its price; the first to give a type a resource
** gives it. An overlay that would price an offering, or give a resource,
** that an overlay of its own weight gave last conflicts, and applies
** nowhere (Karpenter sets its ValidationSucceeded condition False).
**
** Capacity is kept per NodePool (rt_pool.alloc takes it). A price is one
** per offering for every NodePool in dovetail: where the NodePools that can
** launch an offering would see it at different prices, it keeps the
** catalog's, and a note says so.
*/
#include "sched_int.h"

#include <stdlib.h>
#include <string.h>

/* Whether an existing requirement (vals[0..n) In, or DoesNotExist when n
** is 0) intersects q, as Karpenter's Requirements.Intersects: DoesNotExist
** meets only NotIn and DoesNotExist. */
static bool meets(const char *const *vals, size_t n, const dt_mreq *q) {
  if (!n) return q->op == DT_OP_NOTIN || q->op == DT_OP_DOESNOTEXIST;
  switch (q->op) {
  case DT_OP_EXISTS: return true;
  case DT_OP_DOESNOTEXIST: return false;
  case DT_OP_IN:
  case DT_OP_NOTIN:
    for (size_t i = 0; i < n; i++) {
      bool in = false;
      for (size_t k = 0; k < q->n && !in; k++) in = !strcmp(vals[i], q->vals[k]);
      if (in == (q->op == DT_OP_IN)) return true;
    }
    return false;
  default: {
    long long b = atoll(q->vals[0]);
    for (size_t i = 0; i < n; i++) {
      char *end;
      long long v = strtoll(vals[i], &end, 10);
      if (!*vals[i] || *end) continue;
      if ((q->op == DT_OP_GT && v > b) || (q->op == DT_OP_LT && v < b) || (q->op == DT_OP_GTE && v >= b) ||
          (q->op == DT_OP_LTE && v <= b))
        return true;
    }
    return false;
  }
  }
}

/* The zones (ct false) or capacity types of type t's offerings, once each. */
static size_t type_domain(const dt_plan *p, const rt_type *t, bool ct, const char **out) {
  size_t n = 0;
  for (uint32_t o = 0; o < t->noff; o++) {
    const char *v = ct ? dt__ct_names[t->off[o].ct] : dt__sym_str(&p->syms, p->zones[t->off[o].zone]);
    size_t k = 0;
    while (k < n && strcmp(out[k], v)) k++;
    if (k == n && n < 64 + 3) out[n++] = v;
  }
  return n;
}

/* The zones and capacity types of a type's offerings, once each. */
typedef struct tdom {
  const char *z[64 + 3], *c[3];
  size_t nz, nc;
} tdom;

static void tdom_of(const dt_plan *p, const rt_type *t, tdom *d) {
  d->nz = type_domain(p, t, false, d->z);
  d->nc = type_domain(p, t, true, d->c);
}

/* A requirement's key as scheduling reads it (beta.kubernetes.io/... as
** their stable keys), as Karpenter's NewRequirement normalizes it. */
static const char *qkey(const dt_mreq *q) { return normalized_key(q->key); }

/* Whether the key of q is one of type t's requirements: its zone or
** capacity type, or a label some type of the catalog carries (a type
** without it has it as DoesNotExist). */
static bool type_key(const dt_plan *p, const char *key) {
  if (!strcmp(key, DT_L_ZONE) || !strcmp(key, DT_L_CAPACITY_TYPE)) return true;
  dt_sym s = dt__sym_find(&p->syms, key);
  return s && s < p->nkeyslot && p->keyslot[s] >= 0;
}

/* Whether q, on a key of the type's (type_key), holds of type t (its
** offerings' zones and capacity types in d), as Karpenter's compatibility
** of the type's requirements with q. */
static bool type_meets(const rt_type *t, const tdom *d, const dt_mreq *q) {
  const char *key = qkey(q);
  if (!strcmp(key, DT_L_ZONE)) return meets(d->z, d->nz, q);
  if (!strcmp(key, DT_L_CAPACITY_TYPE)) return meets(d->c, d->nc, q);
  const char *v = dt__kv_get(t->src->labels.v, t->src->labels.n, key);
  return v ? meets(&v, 1, q) : meets(NULL, 0, q);
}

/* Whether q, on a key no type has, holds on NodePool np: its name, or one
** of its template labels; a label nothing defines meets only NotIn and
** DoesNotExist. */
static bool pool_meets(const dt_nodepool *np, const dt_mreq *q) {
  const char *key = qkey(q);
  if (!strcmp(key, DT_L_NODEPOOL)) return meets((const char *const *)&np->name, 1, q);
  const char *v = dt__kv_get(np->labels.v, np->labels.n, key);
  return v ? meets(&v, 1, q) : meets(NULL, 0, q);
}

/* Whether offering o of type t passes q's zone and capacity-type terms. */
static bool off_meets(const dt_plan *p, const rt_type *t, uint32_t o, const dt_mreq *q) {
  const char *v, *key = qkey(q);
  if (!strcmp(key, DT_L_ZONE))
    v = dt__sym_str(&p->syms, p->zones[t->off[o].zone]);
  else if (!strcmp(key, DT_L_CAPACITY_TYPE))
    v = dt__ct_names[t->off[o].ct];
  else
    return true;
  return meets(&v, 1, q);
}

/* Karpenter's AdjustedPrice: the price set, or the catalog's moved by an
** amount or a percentage, never below 0. */
static double adjusted(double base, const dt_nodeoverlay *v) {
  double x = v->price_kind == DT_OVL_PRICE ? v->price
             : v->price_kind == DT_OVL_ADD ? base + v->price
                                           : base * (1 + v->price / 100);
  return x >= 0 ? x : 0;
}

typedef struct cap_cell {
  bool has;
  int32_t low;     /* the weight of the last overlay that gave it resources */
  int32_t low_ovl; /* that overlay */
  DT_VEC(rt_ovl_res) res;
} cap_cell;

typedef struct state {
  dt_plan *p;
  const dt_manifests *m;
  uint32_t nrows;
  size_t *off_at; /* per type: its first offering's index in a row */
  size_t noff;    /* offerings in a row */
  uint8_t *off_has;
  int32_t *off_low, *off_src; /* [row * noff + k] */
  cap_cell *cap;              /* [row * ntypes + t] */
} state;

static _Thread_local const dt_manifests *t_sort_m; /* qsort's: the manifests whose overlays it orders */

static int cmp_order(const void *a, const void *b) {
  const dt_nodeoverlay *x = &t_sort_m->nodeoverlays.v[*(const uint32_t *)a];
  const dt_nodeoverlay *y = &t_sort_m->nodeoverlays.v[*(const uint32_t *)b];
  if (x->weight != y->weight) return x->weight > y->weight ? -1 : 1;
  return -strcmp(x->name, y->name);
}

/* Overlay v against every type (tok[t]: compatible and with an offering
** of its, mask[off_at[t] + k] for offering k) and every NodePool (rok[r]). */
static void match(const state *st, const dt_nodeoverlay *v, uint8_t *tok, uint8_t *mask, uint8_t *rok) {
  const dt_plan *p = st->p;
  for (uint32_t r = 0; r < st->nrows; r++) {
    rok[r] = 1;
    for (size_t i = 0; i < v->reqs.n && rok[r]; i++)
      if (!type_key(p, qkey(&v->reqs.v[i]))) rok[r] = pool_meets(&st->m->pools.v[r], &v->reqs.v[i]);
  }
  for (uint32_t t = 0; t < p->ntypes; t++) {
    const rt_type *ty = &p->types[t];
    tok[t] = 1;
    tdom d;
    tdom_of(p, ty, &d);
    for (size_t i = 0; i < v->reqs.n && tok[t]; i++)
      if (type_key(p, qkey(&v->reqs.v[i]))) tok[t] = type_meets(ty, &d, &v->reqs.v[i]);
    if (!tok[t]) continue;
    bool any = false; /* no offering of its: the overlay does not select it at all */
    uint8_t *mk = mask + st->off_at[t];
    for (uint32_t o = 0; o < ty->noff; o++) {
      mk[o] = 1;
      for (size_t i = 0; i < v->reqs.n && mk[o]; i++) mk[o] = off_meets(p, ty, o, &v->reqs.v[i]);
      any |= mk[o];
    }
    tok[t] = any;
  }
}

static bool cap_conflicts(const cap_cell *c, const dt_nodeoverlay *v, const dt_manifests *m) {
  if (!c->has || c->low != v->weight) return false;
  const dt_rlist *last = &m->nodeoverlays.v[c->low_ovl].capacity;
  for (size_t i = 0; i < v->capacity.n; i++)
    for (size_t k = 0; k < last->n; k++)
      if (!strcmp(v->capacity.v[i].name, last->v[k].name)) return true;
  return false;
}

/* Overlay oi: whether it conflicts anywhere (where, into why), else its
** updates stored; tok, mask and rok as match() fills them. */
static int apply_one(state *st, uint32_t oi, uint8_t *tok, uint8_t *mask, uint8_t *rok, char *why, size_t nwhy,
                     bool *conflict) {
  dt_plan *p = st->p;
  const dt_nodeoverlay *v = &st->m->nodeoverlays.v[oi];
  *conflict = false;
  match(st, v, tok, mask, rok);
  for (int pass = 0; pass < 2; pass++) /* validate every pool, then store: never part of one */
    for (uint32_t r = 0; r < st->nrows; r++)
      for (uint32_t t = 0; rok[r] && t < p->ntypes; t++) {
        if (!tok[t]) continue;
        const uint8_t *mk = mask + st->off_at[t];
        size_t base = (size_t)r * st->noff + st->off_at[t];
        cap_cell *c = &st->cap[(size_t)r * p->ntypes + t];
        if (pass == 0) {
          bool clash = false;
          for (uint32_t o = 0; v->price_kind && o < p->types[t].noff && !clash; o++)
            clash = mk[o] && st->off_has[base + o] && st->off_low[base + o] == v->weight;
          bool cap_clash = !clash && v->capacity.n && cap_conflicts(c, v, st->m);
          if (clash || cap_clash) {
            snprintf(why, nwhy, "the %s of %s for NodePool %s", clash ? "price" : "capacity", p->types[t].src->name,
                     st->m->pools.v[r].name);
            *conflict = true;
            return 0;
          }
          continue;
        }
        for (uint32_t o = 0; v->price_kind && o < p->types[t].noff; o++) {
          if (!mk[o]) continue;
          if (!st->off_has[base + o]) {
            st->off_has[base + o] = 1;
            st->off_src[base + o] = (int32_t)oi;
          }
          st->off_low[base + o] = v->weight;
        }
        if (!v->has_capacity) continue; /* an empty map ({}) still marks the type, as Karpenter's store */
        for (size_t i = 0; i < v->capacity.n; i++) {
          bool there = false;
          for (size_t k = 0; k < c->res.n && !there; k++) there = !strcmp(c->res.v[k].name, v->capacity.v[i].name);
          if (!there && dt__vec_push(&c->res, ((rt_ovl_res){v->capacity.v[i].name, v->capacity.v[i].milli})))
            return DT_ENOMEM;
        }
        c->has = true;
        c->low = v->weight;
        c->low_ovl = (int32_t)oi;
      }
  return 0;
}

/* Whether NodePool np's requirements admit type t by its labels (labels
** of its own, which no type carries, admit every type), and offering o
** by its zone and capacity type. */
static bool pool_admits_type(const dt_plan *p, const dt_nodepool *np, const rt_type *t, const tdom *d) {
  for (size_t i = 0; i < np->reqs.n; i++)
    if (type_key(p, qkey(&np->reqs.v[i])) && !type_meets(t, d, &np->reqs.v[i])) return false;
  return true;
}

/* The zones (a bit per plan zone) and capacity types NodePool np's
** requirements admit, for pool_admits_off: read once, not per offering. */
static void pool_off_masks(const dt_plan *p, const dt_nodepool *np, uint64_t *zm, uint8_t *cm) {
  *zm = 0, *cm = 0;
  for (uint32_t z = 0; z < p->nzones; z++) {
    const char *v = dt__sym_str(&p->syms, p->zones[z]);
    bool ok = true;
    for (size_t i = 0; i < np->reqs.n && ok; i++)
      if (!strcmp(qkey(&np->reqs.v[i]), DT_L_ZONE)) ok = meets(&v, 1, &np->reqs.v[i]);
    if (ok) *zm |= 1ull << z;
  }
  for (int c = 0; c < 3; c++) {
    const char *v = dt__ct_names[c];
    bool ok = true;
    for (size_t i = 0; i < np->reqs.n && ok; i++)
      if (!strcmp(qkey(&np->reqs.v[i]), DT_L_CAPACITY_TYPE)) ok = meets(&v, 1, &np->reqs.v[i]);
    if (ok) *cm |= (uint8_t)(1u << c);
  }
}

static int add_note(dt_plan *p, rt_ovl *ov, size_t *cap, const char *fmt, ...) DT_PRINTF(4, 5);
static int add_note(dt_plan *p, rt_ovl *ov, size_t *cap, const char *fmt, ...) {
  char buf[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (ov->nnotes == *cap) {
    size_t nc = *cap ? *cap * 2 : 8;
    const char **v = A(p, nc * sizeof *v);
    if (!v) return DT_ENOMEM;
    if (ov->nnotes) memcpy(v, ov->notes, ov->nnotes * sizeof *v);
    ov->notes = v;
    *cap = nc;
  }
  if (!(ov->notes[ov->nnotes] = dt__arena_strdup(&p->arena, buf))) return DT_ENOMEM;
  ov->nnotes++;
  return 0;
}

/* The prices every NodePool that can launch an offering agrees on, set;
** flags per row and type. */
static int set_prices(state *st, rt_ovl *ov, size_t *ncap_notes) {
  dt_plan *p = st->p;
  const dt_manifests *m = st->m;
  size_t split = 0;
  char first[1200] = "";
  bool changed = false;
  uint8_t *tadm = dt__malloc(st->nrows ? st->nrows : 1);               /* per pool: it admits the type by label */
  uint64_t *pz = dt__malloc((st->nrows ? st->nrows : 1) * sizeof *pz); /* per pool: the zones it admits */
  uint8_t *pc = dt__malloc(st->nrows ? st->nrows : 1);                 /* and capacity types */
  if (!tadm || !pz || !pc) {
    dt__free(tadm), dt__free(pz), dt__free(pc);
    return DT_ENOMEM;
  }
  for (uint32_t r = 0; r < st->nrows; r++) pool_off_masks(p, &m->pools.v[r], &pz[r], &pc[r]);
  for (uint32_t t = 0; t < p->ntypes; t++) {
    const rt_type *ty = &p->types[t];
    bool touched = false, judged = false;
    for (uint32_t o = 0; o < ty->noff; o++) {
      int32_t any_has = 0;
      for (uint32_t r = 0; r < st->nrows && !any_has; r++)
        any_has = st->off_has[(size_t)r * st->noff + st->off_at[t] + o];
      if (!any_has) continue; /* no overlay priced it: no pool to ask */
      if (!judged) {
        tdom d;
        tdom_of(p, ty, &d);
        for (uint32_t r = 0; r < st->nrows; r++) tadm[r] = pool_admits_type(p, &m->pools.v[r], ty, &d);
        judged = true;
      }
      double base = ty->off[o].price, got = base;
      int32_t seen = 0, agree = 1, admitted = 1, r0 = -1, r1 = -1;
      double x1 = base;
      for (int all = 0; all < 2 && !seen; all++) /* the NodePools that admit it, else every one */
        for (uint32_t r = 0; r < st->nrows; r++) {
          if (!all && !(tadm[r] && (pz[r] >> ty->off[o].zone & 1) && (pc[r] >> ty->off[o].ct & 1))) continue;
          admitted = !all;
          size_t at = (size_t)r * st->noff + st->off_at[t] + o;
          double x = st->off_has[at] ? adjusted(base, &m->nodeoverlays.v[st->off_src[at]]) : base;
          if (!seen++) {
            got = x, r0 = (int32_t)r;
          } else if (agree && memcmp(&x, &got, sizeof x)) {
            agree = 0, r1 = (int32_t)r, x1 = x;
          }
        }
      if (!agree) { /* said where a NodePool could launch it; else no plan reads it */
        if (admitted && !split++)
          snprintf(first, sizeof first, "%s %s %s: $%.6g/h on NodePool %s, $%.6g/h on %s", ty->src->name,
                   dt__sym_str(&p->syms, p->zones[ty->off[o].zone]), dt__ct_names[ty->off[o].ct], got,
                   m->pools.v[r0].name, x1, m->pools.v[r1].name);
        continue;
      }
      for (uint32_t r = 0; r < st->nrows; r++)
        if (st->off_has[(size_t)r * st->noff + st->off_at[t] + o]) ov->flags[(size_t)r * p->ntypes + t] |= OVL_F_PRICE;
      if (memcmp(&got, &base, sizeof got)) {
        dt__offs_mut(p, t)[o].price = got;
        touched = true;
      }
    }
    if (touched) {
      rt_type *w = &p->types[t];
      w->min_price = INFINITY;
      for (uint32_t o = 0; o < w->noff; o++)
        if (w->off[o].avail != 0 && w->off[o].price < w->min_price) w->min_price = w->off[o].price;
      changed = true;
    }
  }
  if (split &&
      add_note(p, ov, ncap_notes,
               "NodeOverlays price %zu offering%s differently for NodePools that can launch %s (%s): dovetail prices "
               "an offering alike for every NodePool, so %s the catalog's price",
               split, split == 1 ? "" : "s", split == 1 ? "it" : "them", first, split == 1 ? "it keeps" : "they keep"))
    return DT_ENOMEM;
  dt__free(tadm), dt__free(pz), dt__free(pc);
  if (changed) { /* no longer the compiled catalog's offerings: nothing keyed by it is shared */
    p->src_id = 0;
    p->snap_home = NULL;
  }
  return 0;
}

int32_t dt__ovl_row(const rt_ovl *o, const char *pool) {
  for (uint32_t r = 0; o && r < o->nrows; r++)
    if (!strcmp(o->row_pool[r], pool)) return (int32_t)r;
  return -1;
}

int dt__sched_overlays(dt_plan *p) {
  const dt_manifests *m = p->manifests;
  if (p->cl) p->ovl = p->cl->base->ovl; /* its types are the base's, prices overlaid */
  if (!p->cl && m && m->nodeoverlays.n) {
    state st = {p, m, (uint32_t)m->pools.n, NULL, 0, NULL, NULL, NULL, NULL};
    rt_ovl *ov = A(p, sizeof *ov);
    uint32_t *order = dt__malloc(m->nodeoverlays.n * sizeof *order);
    size_t cells = (size_t)st.nrows * p->ntypes, ncap_notes = 0;
    st.off_at = dt__malloc((p->ntypes + 1) * sizeof *st.off_at);
    for (uint32_t t = 0; st.off_at && t < p->ntypes; t++) {
      st.off_at[t] = st.noff;
      st.noff += p->types[t].noff;
    }
    size_t noffs = st.nrows * st.noff;
    st.off_has = dt__calloc(noffs ? noffs : 1, 1);
    st.off_low = dt__malloc((noffs ? noffs : 1) * sizeof *st.off_low);
    st.off_src = dt__malloc((noffs ? noffs : 1) * sizeof *st.off_src);
    st.cap = dt__calloc(cells ? cells : 1, sizeof *st.cap);
    uint8_t *mask = dt__malloc(st.noff ? st.noff : 1), *tok = dt__malloc(p->ntypes ? p->ntypes : 1);
    uint8_t *rok = dt__malloc(st.nrows ? st.nrows : 1);
    int rc = ov && order && st.off_at && st.off_has && st.off_low && st.off_src && st.cap && mask && tok && rok
                 ? 0
                 : DT_ENOMEM;
    if (!rc) {
      ov->nrows = st.nrows;
      ov->ntypes = p->ntypes;
      ov->row_pool = A(p, (st.nrows ? st.nrows : 1) * sizeof *ov->row_pool);
      ov->flags = A(p, cells ? cells : 1);
      ov->cap = A(p, (cells ? cells : 1) * sizeof *ov->cap);
      ov->ncap = A(p, (cells ? cells : 1) * sizeof *ov->ncap);
      if (!ov->row_pool || !ov->flags || !ov->cap || !ov->ncap) rc = DT_ENOMEM;
      for (uint32_t r = 0; !rc && r < st.nrows; r++) /* copies: a cluster's plans read them with other views */
        if (!(ov->row_pool[r] = dt__arena_strdup(&p->arena, m->pools.v[r].name))) rc = DT_ENOMEM;
    }
    for (uint32_t i = 0; !rc && i < m->nodeoverlays.n; i++) order[i] = i;
    if (!rc) {
      t_sort_m = m;
      qsort(order, m->nodeoverlays.n, sizeof *order, cmp_order);
      t_sort_m = NULL;
    }
    for (uint32_t i = 0; !rc && i < m->nodeoverlays.n; i++) {
      const dt_nodeoverlay *v = &m->nodeoverlays.v[order[i]];
      char why[800];
      bool conflict;
      if ((rc = apply_one(&st, order[i], tok, mask, rok, why, sizeof why, &conflict))) break;
      if (conflict)
        rc = add_note(p, ov, &ncap_notes,
                      "%s: NodeOverlay %s: conflicts with another overlay of weight %d on %s (spec.weight); not "
                      "applied, as Karpenter's ValidationSucceeded=False (Conflict)",
                      v->file, v->name, (int)v->weight, why);
    }
    for (size_t c = 0; !rc && c < cells; c++) {
      if (!st.cap[c].res.n) continue;
      rt_ovl_res *res = A(p, st.cap[c].res.n * sizeof *res);
      if (!res) {
        rc = DT_ENOMEM;
        break;
      }
      memcpy(res, st.cap[c].res.v, st.cap[c].res.n * sizeof *res);
      for (size_t k = 0; k < st.cap[c].res.n && !rc; k++)
        if (!(res[k].name = dt__arena_strdup(&p->arena, res[k].name))) rc = DT_ENOMEM;
      ov->cap[c] = res;
      ov->ncap[c] = (uint16_t)(st.cap[c].res.n < UINT16_MAX ? st.cap[c].res.n : UINT16_MAX);
      ov->flags[c] |= OVL_F_CAP;
    }
    if (!rc) rc = set_prices(&st, ov, &ncap_notes);
    for (size_t c = 0; st.cap && c < cells; c++) dt__free(st.cap[c].res.v);
    dt__free(st.cap), dt__free(st.off_has), dt__free(st.off_low), dt__free(st.off_src), dt__free(st.off_at);
    dt__free(order), dt__free(mask), dt__free(tok), dt__free(rok);
    if (rc) return rc;
    p->ovl = ov;
  }
  for (size_t i = 0; p->ovl && i < p->ovl->nnotes; i++) note_in(p, "%s", p->ovl->notes[i]);
  return 0;
}
