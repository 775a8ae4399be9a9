/*
** model.c: small containers shared by the catalog and manifest readers:
** resource lists (name -> milli-value) and label maps.
*/
#include "model.h"

#include <string.h>

int dt__rlist_add(dt_rlist *r, const char *name, int64_t milli, dt_rlist_mode mode) {
  for (size_t i = 0; i < r->n; i++)
    if (strcmp(r->v[i].name, name) == 0) {
      if (mode == DT_RL_SET)
        r->v[i].milli = milli;
      else if (mode == DT_RL_SUM)
        r->v[i].milli += milli;
      else if (milli > r->v[i].milli)
        r->v[i].milli = milli;
      return 0;
    }
  dt_rq *nv = dt__realloc(r->v, (r->n + 1) * sizeof *nv);
  if (!nv) return DT_ENOMEM;
  r->v = nv;
  r->v[r->n].name = dt__strdup(name);
  if (!r->v[r->n].name) return DT_ENOMEM;
  r->v[r->n].milli = milli;
  r->n++;
  return 0;
}

int64_t dt__rlist_get(const dt_rlist *r, const char *name) {
  for (size_t i = 0; i < r->n; i++)
    if (strcmp(r->v[i].name, name) == 0) return r->v[i].milli;
  return 0;
}

void dt__rlist_free(dt_rlist *r) {
  for (size_t i = 0; i < r->n; i++) dt__free(r->v[i].name);
  dt__free(r->v);
  memset(r, 0, sizeof *r);
}

void dt__kvs_free(dt_kvs *k) {
  for (size_t i = 0; i < k->n; i++) {
    dt__free(k->v[i].key);
    dt__free(k->v[i].val);
  }
  dt__free(k->v);
  memset(k, 0, sizeof *k);
}
