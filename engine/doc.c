/*
** doc.c: YAML and JSON documents to cJSON trees, and cJSON trees to YAML.
**
** libyaml does the parsing and emitting; this file only resolves plain
** scalars (YAML 1.2 core schema: null, booleans, numbers) and builds the tree.
** JSON input goes straight to cJSON, which is several times faster on the
** large `kubectl get -o json` lists people feed to `dovetail plan`.
*/
#include "internal.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

/* ------------------------------------------------------------ scalars */

static bool is_null(const char *s, size_t n) {
  return n == 0 || (n == 1 && s[0] == '~') ||
         (n == 4 && (!memcmp(s, "null", 4) || !memcmp(s, "Null", 4) || !memcmp(s, "NULL", 4)));
}

static int is_bool(const char *s, size_t n) {
  if ((n == 4 && (!memcmp(s, "true", 4) || !memcmp(s, "True", 4) || !memcmp(s, "TRUE", 4)))) return 1;
  if ((n == 5 && (!memcmp(s, "false", 5) || !memcmp(s, "False", 5) || !memcmp(s, "FALSE", 5)))) return 0;
  return -1;
}

static bool is_number(const char *s, size_t n) {
  size_t i = 0;
  if (i < n && (s[i] == '-' || s[i] == '+')) i++;
  size_t d0 = i;
  while (i < n && isdigit((unsigned char)s[i])) i++;
  size_t idig = i - d0, fdig = 0;
  if (i < n && s[i] == '.') {
    i++;
    size_t f0 = i;
    while (i < n && isdigit((unsigned char)s[i])) i++;
    fdig = i - f0;
  }
  if (idig + fdig == 0) return false;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '-' || s[i] == '+')) i++;
    size_t e0 = i;
    while (i < n && isdigit((unsigned char)s[i])) i++;
    if (i == e0) return false;
  }
  return i == n;
}

static cJSON *make_scalar(const char *s, size_t n, bool plain) {
  if (plain) {
    if (is_null(s, n)) return cJSON_CreateNull();
    int b = is_bool(s, n);
    if (b >= 0) return cJSON_CreateBool(b);
    bool num = is_number(s, n);
    double v = num ? strtod(s, NULL) : 0;
    if (num && isfinite(v)) { /* past a double's range (89445e894, an unquoted hash): its text */
      cJSON *num = cJSON_CreateNumber(v);
      if (num) {
        /* cJSON's own allocator, as cJSON_Delete frees it (an arena's, while parsing into one) */
        num->valuestring = cJSON_malloc(n + 1);
        if (num->valuestring) {
          memcpy(num->valuestring, s, n);
          num->valuestring[n] = 0;
        }
        if (!num->valuestring) {
          cJSON_Delete(num);
          return NULL;
        }
      }
      return num;
    }
  }
  char *tmp = dt__strndup(s, n);
  if (!tmp) return NULL;
  cJSON *str = cJSON_CreateString(tmp);
  dt__free(tmp);
  return str;
}

const char *dt__scalar(const cJSON *item, char *tmp, size_t n) {
  if (!item) return NULL;
  if (cJSON_IsString(item)) return item->valuestring;
  if (cJSON_IsNumber(item)) {
    if (item->valuestring) return item->valuestring;
    double d = item->valuedouble;
    if (d < 9e15 && d > -9e15 && d == (double)(long long)d) { /* in range before the conversion (UB past it) */
      snprintf(tmp, n, "%lld", (long long)d);
    } else { /* the shortest text that reads back as d, as cJSON prints it: 0.1 is "0.1", not
              * "0.10000000000000001" (101m of cpu where the same YAML read directly gave 100m) */
      snprintf(tmp, n, "%.15g", d);
      if (strtod(tmp, NULL) != d) snprintf(tmp, n, "%.17g", d);
    }
    return tmp;
  }
  if (cJSON_IsBool(item)) return cJSON_IsTrue(item) ? "true" : "false";
  return NULL;
}

/* --------------------------------------------------------------- JSON */

static void line_col(const char *buf, size_t off, int *line, int *col) {
  *line = 1;
  *col = 1;
  for (size_t i = 0; i < off; i++) {
    if (buf[i] == '\n') {
      (*line)++;
      *col = 1;
    } else {
      (*col)++;
    }
  }
}

/*
** One pass over JSON text before cJSON sees it: the text is UTF-8 (output
** formats and the YAML emitter need it to be), nesting stays within
** DT_MAX_DEPTH and objects within DT_MAX_KEYS members. Malformed JSON is
** left to cJSON, which says where. Returns the offset of the problem and a
** description, or 0 with why NULL.
*/
static size_t json_prescan(const char *buf, size_t len, const char **why) {
  uint32_t members[DT_MAX_DEPTH + 1];
  bool is_obj[DT_MAX_DEPTH + 1];
  int depth = 0;
  bool in_str = false;
  *why = NULL;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)buf[i];
    if (c >= 0x80) {
      size_t k = dt__utf8_seq(buf + i, len - i);
      if (!k) {
        *why = "invalid UTF-8";
        return i;
      }
      i += k - 1;
    } else if (in_str) {
      if (c == '\\' && i + 5 < len && !memcmp(buf + i + 1, "u0000", 5)) { /* C strings would end there */
        *why = "a string holds \\u0000 (NUL), which no field takes";
        return i;
      }
      if (c == '\\')
        i++;
      else if (c == '"')
        in_str = false;
    } else if (c == '"') {
      in_str = true;
    } else if (c == '{' || c == '[') {
      if (depth == DT_MAX_DEPTH) {
        *why = "nested deeper than " DT_STR(DT_MAX_DEPTH) " levels (the limit on nesting depth)";
        return i;
      }
      depth++;
      members[depth] = 1;
      is_obj[depth] = c == '{';
    } else if ((c == '}' || c == ']') && depth > 0) {
      depth--;
    } else if (c == ',' && depth > 0 && is_obj[depth] && ++members[depth] > DT_MAX_KEYS) {
      *why = "an object with more than " DT_STR(DT_MAX_KEYS) " members (the limit on keys per mapping)";
      return i;
    }
  }
  return 0;
}

#define SMALL_MAP 16 /* keys checked by a scan; more through a hash (YAML) or a sort (JSON) */

static int str_cmp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Whether object o has a key twice (1; *key gets it), 0, or DT_ENOMEM. */
static int has_dup(const cJSON *o, const char **key) {
  size_t k = 0;
  for (const cJSON *c = o->child; c; c = c->next, k++) {
    if (k == SMALL_MAP) goto many;
    for (const cJSON *d = o->child; d != c; d = d->next)
      if (c->string[0] == d->string[0] && !strcmp(c->string, d->string)) return *key = c->string, 1;
  }
  return 0;
many:
  k = 0;
  for (const cJSON *c = o->child; c; c = c->next) k++;
  const char **v = dt__malloc(k * sizeof *v);
  if (!v) return DT_ENOMEM;
  k = 0;
  for (const cJSON *c = o->child; c; c = c->next) v[k++] = c->string;
  qsort(v, k, sizeof *v, str_cmp);
  int rc = 0;
  for (size_t i = 1; i < k && !rc; i++)
    if (!strcmp(v[i - 1], v[i])) *key = v[i], rc = 1;
  dt__free(v);
  return rc;
}

/* Depth first, the first object with a key twice: 1, with the containers
** from the root down to it in chain[0..*len). */
#define JSON_KIND(n) ((n)->type & 0xFF) /* cJSON_IsObject and the like, without a call each */

static int dup_walk(const cJSON *n, const cJSON **chain, int depth, int *len, const char **key) {
  chain[depth] = n;
  int rc = JSON_KIND(n) == cJSON_Object ? has_dup(n, key) : 0;
  if (rc) {
    *len = depth + 1;
    return rc;
  }
  for (const cJSON *c = n->child; c && !rc; c = c->next)
    if (JSON_KIND(c) == cJSON_Object || JSON_KIND(c) == cJSON_Array) rc = dup_walk(c, chain, depth + 1, len, key);
  return rc;
}

int dt__json_dup(const cJSON *doc, char *where, size_t n) {
  const cJSON *chain[DT_MAX_DEPTH + 2];
  const char *key = NULL;
  int len = 0,
      rc = JSON_KIND(doc) == cJSON_Object || JSON_KIND(doc) == cJSON_Array ? dup_walk(doc, chain, 0, &len, &key) : 0;
  if (rc != 1 || !where) return rc;
  size_t at = 0;
  for (int i = 1; i < len && at < n; i++) {
    if (cJSON_IsObject(chain[i - 1])) {
      at += (size_t)snprintf(where + at, n - at, "%s%.100s", at ? "." : "", chain[i]->string);
    } else {
      size_t idx = 0;
      for (const cJSON *c = chain[i - 1]->child; c && c != chain[i]; c = c->next) idx++;
      at += (size_t)snprintf(where + at, n - at, "[%zu]", idx);
    }
  }
  /* the innermost object with a kind and a name: the one the key is in */
  const char *kind = NULL, *ns = NULL, *name = NULL;
  for (int i = 0; i < len; i++) {
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(chain[i], "metadata");
    const char *k = dt__jstr(chain[i], "kind"), *nm = dt__jstr(md, "name");
    if (cJSON_IsObject(chain[i]) && k && nm) kind = k, name = nm, ns = dt__jstr(md, "namespace");
  }
  if (kind && at < n)
    at += (size_t)snprintf(where + at, n - at, "%s%.60s %.100s%s%.100s%s", at ? " (" : "", kind, ns ? ns : "",
                           ns ? "/" : "", name, at ? ")" : "");
  if (at < n) snprintf(where + at, n - at, "%sduplicate key \"%.200s\"", at ? ": " : "", key);
  return 1;
}

static int parse_json(const char *name, const char *buf, size_t len, cJSON **out, dt_error *err) {
  const char *why;
  size_t bad = json_prescan(buf, len, &why);
  if (why) {
    int line, col;
    line_col(buf, bad, &line, &col);
    return dt__err(err, strcmp(why, "invalid UTF-8") ? DT_ELIMIT : DT_EINVAL, "%s:%d:%d: %s", name, line, col, why);
  }
  const char *end = NULL;
  dt__alloc_failed(1);
  cJSON *doc = cJSON_ParseWithLengthOpts(buf, len, &end, false);
  if (!doc && dt__alloc_failed(1)) return dt__err(err, DT_ENOMEM, "%s: out of memory parsing JSON", name);
  if (!doc) {
    size_t off = end && end >= buf && end <= buf + len ? (size_t)(end - buf) : 0;
    int line, col;
    line_col(buf, off, &line, &col);
    /* Quote at most 20 bytes of what follows, never past the buffer (it
    ** need not be NUL-terminated) and only printable ASCII. */
    char near[21];
    size_t k = 0;
    for (; k < 20 && off + k < len; k++) {
      unsigned char c = (unsigned char)buf[off + k];
      near[k] = c >= 0x20 && c < 0x7F && c != '"' && c != '\\' ? (char)c : '?';
    }
    near[k] = 0;
    return dt__err(err, DT_EINVAL, "%s:%d:%d: malformed JSON near \"%s\"", name, line, col, near);
  }
  /* Allow trailing whitespace only. */
  while (end && end < buf + len && isspace((unsigned char)*end)) end++;
  if (end && end < buf + len) {
    int line, col;
    line_col(buf, (size_t)(end - buf), &line, &col);
    cJSON_Delete(doc);
    return dt__err(err, DT_EINVAL, "%s:%d:%d: malformed JSON: unexpected text after the document", name, line, col);
  }
  /* A key twice: JSON readers differ on which one counts (Go's, and so the
  ** API server's, the last; cJSON the first), so it is refused, as in YAML. */
  char where[512];
  int dup = dt__json_dup(doc, where, sizeof where);
  if (dup) {
    cJSON_Delete(doc);
    return dup < 0 ? dt__err(err, DT_ENOMEM, "out of memory") : dt__err(err, DT_EINVAL, "%s: %s", name, where);
  }
  cJSON *docs = cJSON_CreateArray();
  if (!docs) {
    cJSON_Delete(doc);
    return dt__err(err, DT_ENOMEM, "out of memory");
  }
  cJSON_AddItemToArray(docs, doc);
  *out = docs;
  return 0;
}

int dt__json_parse_one(const char *name, const char *buf, size_t len, cJSON **out, dt_error *err) {
  cJSON *docs = NULL;
  *out = NULL;
  int rc = parse_json(name, buf, len, &docs, err);
  if (rc) return rc;
  *out = cJSON_DetachItemFromArray(docs, 0);
  cJSON_Delete(docs);
  return 0;
}

/* --------------------------------------------------------------- YAML */

/*
** Limits that keep the cost of a document linear in its size (see
** DT_MAX_DEPTH and friends in dovetail.h): nesting is bounded, an alias may
** only copy as many nodes as the alias budget has left, and duplicate keys
** are found with a hash once a mapping grows past a few keys, instead of a
** scan of the mapping per key.
*/

typedef struct anchor {
  char *name;
  cJSON *node;
  bool owned; /* an anchored mapping key: the anchor keeps its own copy */
} anchor;

typedef struct level {
  cJSON *node;
  char *key;      /* the pending key of a mapping, NULL when expecting one */
  uint32_t nkeys; /* keys seen so far in a mapping */
  uint32_t id;    /* distinguishes this mapping's keys in the hash */
  bool merging;   /* the pending key is the merge key (a plain <<) */
  cJSON *merge;   /* its value: merged into the mapping when it ends */
  yaml_mark_t merge_at;
} level;

typedef struct ystate {
  const char *name;
  DT_VEC(level) stack;
  DT_VEC(anchor) anchors;
  dt_symtab keys; /* "<mapping id><key>" of mappings past SMALL_MAP keys */
  uint32_t next_id;
  uint64_t alias_left; /* nodes aliases may still copy */
  DT_VEC(cJSON *) merged; /* merge keys' values, kept whole to the end: anchors may point into them */
  dt_error *err;
} ystate;

static int yerr(ystate *st, const yaml_mark_t *mark, int code, const char *fmt, ...) DT_PRINTF(4, 5);
static int yerr(ystate *st, const yaml_mark_t *mark, int code, const char *fmt, ...) {
  char msg[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return dt__err(st->err, code, "%s:%zu:%zu: %s", st->name, (size_t)mark->line + 1, (size_t)mark->column + 1, msg);
}

/* Whether k is already a key of the mapping at level lv (then 1), after
** recording it; -1 out of memory. */
static int seen_key(ystate *st, level *lv, const char *k) {
  size_t kl = strlen(k);
  if (lv->nkeys < SMALL_MAP) {
    lv->nkeys++;
    return cJSON_GetObjectItemCaseSensitive(lv->node, k) != NULL;
  }
  char stackbuf[256];
  char *buf = kl + 4 <= sizeof stackbuf ? stackbuf : dt__malloc(kl + 4);
  if (!buf) return -1;
  int dup = 0;
  if (lv->nkeys == SMALL_MAP) /* crossing over: the keys so far go into the hash */
    for (const cJSON *c = lv->node->child; c; c = c->next) {
      size_t cl = strlen(c->string);
      char *cb = cl + 4 <= sizeof stackbuf ? stackbuf : dt__malloc(cl + 4);
      if (!cb) {
        dup = -1;
        break;
      }
      memcpy(cb, &lv->id, 4);
      memcpy(cb + 4, c->string, cl);
      dt__symn(&st->keys, cb, cl + 4);
      if (cb != stackbuf) dt__free(cb);
    }
  memcpy(buf, &lv->id, 4);
  memcpy(buf + 4, k, kl);
  uint32_t before = st->keys.n;
  if (dup == 0) {
    dt__symn(&st->keys, buf, kl + 4);
    if (st->keys.oom)
      dup = -1;
    else
      dup = st->keys.n == before ? 1 : 0;
  }
  if (buf != stackbuf) dt__free(buf);
  lv->nkeys++;
  return dup;
}

static int attach(ystate *st, cJSON *node, const yaml_mark_t *mark, const char *anchor_name) {
  if (!node) return dt__err(st->err, DT_ENOMEM, "out of memory");
  level *lv = &st->stack.v[st->stack.n - 1];
  bool is_key = !cJSON_IsArray(lv->node) && !lv->key && !lv->merging;
  if (anchor_name) {
    /* A key is consumed below; its anchor keeps a copy of its own. */
    anchor a = {dt__strdup(anchor_name), is_key ? cJSON_Duplicate(node, true) : node, is_key};
    if (!a.name || !a.node || dt__vec_push(&st->anchors, a)) {
      dt__free(a.name);
      if (is_key) cJSON_Delete(a.node);
      cJSON_Delete(node);
      return dt__err(st->err, DT_ENOMEM, "out of memory");
    }
  }
  if (cJSON_IsArray(lv->node)) {
    cJSON_AddItemToArray(lv->node, node);
    return 0;
  }
  if (is_key) {
    const char *k = dt__scalar(node, (char[64]){0}, 64);
    if (!k || cJSON_IsNull(node)) {
      cJSON_Delete(node);
      return yerr(st, mark, DT_EINVAL, "mapping keys must be scalars");
    }
    if (lv->nkeys >= DT_MAX_KEYS) {
      cJSON_Delete(node);
      return yerr(st, mark, DT_ELIMIT, "a mapping with more than %d keys (the limit on keys per mapping)", DT_MAX_KEYS);
    }
    int dup = seen_key(st, lv, k);
    if (dup) {
      int rc = dup < 0 ? dt__err(st->err, DT_ENOMEM, "out of memory")
                       : yerr(st, mark, DT_EINVAL, "duplicate key \"%.200s\"", k);
      cJSON_Delete(node);
      return rc;
    }
    lv->key = dt__strdup(k);
    cJSON_Delete(node);
    return lv->key ? 0 : dt__err(st->err, DT_ENOMEM, "out of memory");
  }
  if (lv->merging) {
    lv->merging = false;
    lv->merge = node;
    return 0;
  }
  bool ok = cJSON_AddItemToObject(lv->node, lv->key, node);
  dt__free(lv->key);
  lv->key = NULL;
  if (!ok) {
    cJSON_Delete(node);
    return dt__err(st->err, DT_ENOMEM, "out of memory");
  }
  return 0;
}

/* A mapping or sequence opens: attach it where it belongs, then descend. */
static int push(ystate *st, cJSON *docs, cJSON *node, const yaml_mark_t *mark, const char *anchor_name) {
  if (!node) return dt__err(st->err, DT_ENOMEM, "out of memory");
  if (st->stack.n >= DT_MAX_DEPTH) {
    cJSON_Delete(node);
    return yerr(st, mark, DT_ELIMIT, "nested deeper than %d levels (the limit on nesting depth)", DT_MAX_DEPTH);
  }
  int rc;
  if (st->stack.n == 0)
    cJSON_AddItemToArray(docs, node);
  else if ((rc = attach(st, node, mark, anchor_name)) != 0)
    return rc;
  level lv = {node, NULL, 0, ++st->next_id, false, NULL, {0}};
  if (dt__vec_push(&st->stack, lv)) return dt__err(st->err, DT_ENOMEM, "out of memory");
  return 0;
}

/* Nodes in n, counting no further than limit + 1. */
static uint64_t count_nodes(const cJSON *n, uint64_t limit) {
  uint64_t c = 1;
  for (const cJSON *k = n->child; k && c <= limit; k = k->next) c += count_nodes(k, limit - c);
  return c;
}

/* *out a copy of n, charged to the alias budget (aliases and merge keys
** copy what they name); an error when the budget or the memory runs out. */
static int charged_copy(ystate *st, const yaml_mark_t *mark, const cJSON *n, cJSON **out) {
  uint64_t k = count_nodes(n, st->alias_left);
  if (k > st->alias_left)
    return yerr(st, mark, DT_ELIMIT,
                "aliases expand to more than %d nodes (the limit on alias expansion); is this an alias bomb?",
                DT_MAX_ALIAS_NODES);
  st->alias_left -= k;
  *out = cJSON_Duplicate(n, true);
  return *out ? 0 : dt__err(st->err, DT_ENOMEM, "out of memory");
}

static int alias(ystate *st, const yaml_mark_t *mark, const char *an) {
  const anchor *a = NULL;
  for (size_t i = st->anchors.n; i-- > 0 && !a;)
    if (strcmp(st->anchors.v[i].name, an) == 0) a = &st->anchors.v[i];
  if (!a) return yerr(st, mark, DT_EINVAL, "unknown alias *%.200s", an);
  if (st->stack.n == 0) return 0;
  cJSON *c = NULL;
  int rc = charged_copy(st, mark, a->node, &c);
  return rc ? rc : attach(st, c, mark, NULL);
}

/* A mapping ends: the keys of its merge key's value (a mapping, or a list
** of mappings, the first to name a key winning) that it does not have
** itself are copied in, as YAML 1.1's merge key and the YAML readers of
** kubectl and the API server do. Copies count against the alias budget. */
static int merge_keys(ystate *st, level *lv) {
  const yaml_mark_t *mark = &lv->merge_at;
  cJSON *m = lv->merge;
  if (!m) return 0;
  lv->merge = NULL;
  if (dt__vec_push(&st->merged, m)) {
    cJSON_Delete(m);
    return dt__err(st->err, DT_ENOMEM, "out of memory");
  }
  bool list = cJSON_IsArray(m);
  for (const cJSON *src = list ? m->child : m; src; src = list ? src->next : NULL)
    if (!cJSON_IsObject(src))
      return yerr(st, mark, DT_EINVAL, "a merge key (<<) takes a mapping or a list of mappings");
  for (const cJSON *src = list ? m->child : m; src; src = list ? src->next : NULL)
    for (const cJSON *c = src->child; c; c = c->next) {
      int dup = seen_key(st, lv, c->string);
      if (dup < 0) return dt__err(st->err, DT_ENOMEM, "out of memory");
      if (dup) continue; /* the mapping's own key, or an earlier merged one's */
      if (lv->nkeys > DT_MAX_KEYS)
        return yerr(st, mark, DT_ELIMIT, "a mapping with more than %d keys (the limit on keys per mapping)",
                    DT_MAX_KEYS);
      cJSON *copy = NULL;
      int rc = charged_copy(st, mark, c, &copy);
      if (rc) return rc;
      if (!cJSON_AddItemToObject(lv->node, c->string, copy)) {
        cJSON_Delete(copy);
        return dt__err(st->err, DT_ENOMEM, "out of memory");
      }
    }
  return 0;
}

static int parse_yaml(const char *name, const char *buf, size_t len, cJSON **out, dt_error *err) {
  yaml_parser_t p;
  yaml_event_t ev;
  ystate st = {0};
  st.name = name;
  st.err = err;
  st.alias_left = DT_MAX_ALIAS_NODES;
  int rc = 0;
  cJSON *docs = cJSON_CreateArray();
  if (!docs || !yaml_parser_initialize(&p)) {
    cJSON_Delete(docs);
    return dt__err(err, DT_ENOMEM, "out of memory");
  }
  yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
  for (;;) {
    if (!yaml_parser_parse(&p, &ev)) {
      if (p.error == YAML_MEMORY_ERROR) {
        rc = dt__err(err, DT_ENOMEM, "%s: out of memory parsing YAML", name);
        break;
      }
      rc = dt__err(err, DT_EINVAL, "%s:%zu:%zu: malformed YAML: %s%s%s", name, (size_t)p.problem_mark.line + 1,
                   (size_t)p.problem_mark.column + 1, p.problem ? p.problem : "syntax error", p.context ? " " : "",
                   p.context ? p.context : "");
      break;
    }
    yaml_event_type_t type = ev.type;
    const yaml_mark_t *mark = &ev.start_mark;
    switch (type) {
    case YAML_DOCUMENT_START_EVENT: st.stack.n = 0; break;
    case YAML_MAPPING_START_EVENT:
      rc = push(&st, docs, cJSON_CreateObject(), mark, (const char *)ev.data.mapping_start.anchor);
      break;
    case YAML_SEQUENCE_START_EVENT:
      rc = push(&st, docs, cJSON_CreateArray(), mark, (const char *)ev.data.sequence_start.anchor);
      break;
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT:
      if (type == YAML_MAPPING_END_EVENT) rc = merge_keys(&st, &st.stack.v[st.stack.n - 1]);
      if (rc) break;
      st.stack.n--;
      dt__free(st.stack.v[st.stack.n].key);
      break;
    case YAML_SCALAR_EVENT: {
      bool plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
      if (memchr(ev.data.scalar.value, 0, ev.data.scalar.length)) { /* "\0" or "\x00": C strings would end there */
        rc = yerr(&st, mark, DT_EINVAL, "a string holds a NUL (\\0), which no field takes");
        break;
      }
      cJSON *node = make_scalar((const char *)ev.data.scalar.value, ev.data.scalar.length, plain);
      if (st.stack.n == 0) {
        /* A document that is a lone scalar (or empty): keep it, the
        ** manifest reader reports it or skips an empty one. */
        if (!node)
          rc = dt__err(err, DT_ENOMEM, "out of memory");
        else
          cJSON_AddItemToArray(docs, node);
      } else {
        level *lv = &st.stack.v[st.stack.n - 1];
        if (plain && node && cJSON_IsObject(lv->node) && !lv->key && !lv->merging && ev.data.scalar.length == 2 &&
            !memcmp(ev.data.scalar.value, "<<", 2)) { /* the merge key */
          cJSON_Delete(node);
          if (lv->merge)
            rc = yerr(&st, mark, DT_EINVAL, "duplicate key \"<<\"");
          else {
            lv->merging = true;
            lv->merge_at = *mark;
          }
        } else {
          rc = attach(&st, node, mark, (const char *)ev.data.scalar.anchor);
        }
      }
      break;
    }
    case YAML_ALIAS_EVENT: rc = alias(&st, mark, (const char *)ev.data.alias.anchor); break;
    default: break;
    }
    yaml_event_delete(&ev);
    if (rc || type == YAML_STREAM_END_EVENT) break;
  }
  for (size_t i = 0; i < st.stack.n; i++) {
    dt__free(st.stack.v[i].key);
    cJSON_Delete(st.stack.v[i].merge);
  }
  for (size_t i = 0; i < st.merged.n; i++) cJSON_Delete(st.merged.v[i]);
  dt__free(st.merged.v);
  for (size_t i = 0; i < st.anchors.n; i++) {
    dt__free(st.anchors.v[i].name);
    if (st.anchors.v[i].owned) cJSON_Delete(st.anchors.v[i].node);
  }
  dt__free(st.stack.v);
  dt__free(st.anchors.v);
  dt__symtab_free(&st.keys);
  yaml_parser_delete(&p);
  if (rc) {
    cJSON_Delete(docs);
    return rc;
  }
  *out = docs;
  return 0;
}

int dt__doc_parse(const char *name, const char *buf, size_t len, cJSON **out, dt_error *err) {
  dt__init();
  if (len > (size_t)DT_MAX_INPUT_BYTES)
    return dt__err(err, DT_ELIMIT, "%s: larger than %ld bytes (the limit on one input)", name,
                   (long)DT_MAX_INPUT_BYTES);
  size_t i = 0;
  if (len >= 3 && (unsigned char)buf[0] == 0xEF && (unsigned char)buf[1] == 0xBB && (unsigned char)buf[2] == 0xBF)
    i = 3; /* UTF-8 byte order mark */
  while (i < len && isspace((unsigned char)buf[i])) i++;
  if (i < len && (buf[i] == '{' || buf[i] == '[')) return parse_json(name, buf + i, len - i, out, err);
  return parse_yaml(name, buf, len, out, err);
}

/* ------------------------------------------------------ a List, item by item */

static size_t json_ws(const char *b, size_t i, size_t n) {
  while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')) i++;
  return i;
}

/* The end of the string opening at b[i] ('"'), or 0; *esc set when it holds an escape. */
static size_t json_str_end(const char *b, size_t i, size_t n, bool *esc) {
  for (i++; i < n; i++) {
    if (b[i] == '\\') {
      *esc = true;
      i++;
    } else if (b[i] == '"') {
      return i + 1;
    } else if ((unsigned char)b[i] < 0x20) {
      return 0;
    }
  }
  return 0;
}

/* The end of the value starting at b[i], or 0 when it is cut short or
** unbalanced (its grammar is cJSON's to check). */
static size_t json_value_end(const char *b, size_t i, size_t n) {
  if (i >= n) return 0;
  bool esc = false;
  if (b[i] == '"') return json_str_end(b, i, n, &esc);
  if (b[i] != '{' && b[i] != '[') {
    size_t j = i;
    while (j < n && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' &&
           b[j] != '\r')
      j++;
    return j > i ? j : 0;
  }
  int depth = 0;
  for (; i < n; i++) {
    char c = b[i];
    if (c == '"') {
      size_t e = json_str_end(b, i, n, &esc);
      if (!e) return 0;
      i = e - 1;
    } else if (c == '{' || c == '[') {
      depth++;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return 0;
}

/* Where the top-level object of a JSON document starts (past a byte order
** mark and white space), or SIZE_MAX when it is not an object, is too large
** or holds what json_prescan refuses. */
static size_t json_top(const char *buf, size_t len) {
  size_t i = 0;
  if (len > (size_t)DT_MAX_INPUT_BYTES) return SIZE_MAX;
  if (len >= 3 && (unsigned char)buf[0] == 0xEF && (unsigned char)buf[1] == 0xBB && (unsigned char)buf[2] == 0xBF)
    i = 3;
  i = json_ws(buf, i, len);
  if (i >= len || buf[i] != '{') return SIZE_MAX;
  const char *why;
  json_prescan(buf + i, len - i, &why);
  return why ? SIZE_MAX : i;
}

/* The members of the object at buf[i] ('{'): on_key gets each key (without
** escapes) and its value's span. 1 when the object is well formed and ends
** the document, 0 when not or when on_key refused a member. */
static int json_members(const char *buf, size_t len, size_t i,
                        bool (*on_key)(void *arg, const char *key, size_t klen, size_t v, size_t ve), void *arg) {
  i = json_ws(buf, i + 1, len);
  while (i < len && buf[i] != '}') {
    bool esc = false;
    size_t ke = json_str_end(buf, i, len, &esc);
    if (buf[i] != '"' || !ke || esc) return 0;
    const char *key = buf + i + 1;
    size_t klen = ke - i - 2;
    i = json_ws(buf, ke, len);
    if (i >= len || buf[i] != ':') return 0;
    i = json_ws(buf, i + 1, len);
    size_t ve = json_value_end(buf, i, len);
    if (!ve || !on_key(arg, key, klen, i, ve)) return 0;
    i = json_ws(buf, ve, len);
    if (i < len && buf[i] == ',') {
      i = json_ws(buf, i + 1, len);
      if (i < len && buf[i] == '}') return 0; /* a trailing comma: cJSON's to report */
    } else if (i >= len || buf[i] != '}') {
      return 0;
    }
  }
  return i < len && json_ws(buf, i + 1, len) == len;
}

/* The items of the array at buf[i] ('['), each handed to fn as its own
** text with the key number and its index: 1, 0 when broken, -1 when fn
** stopped. */
static int json_items(const char *buf, size_t len, size_t i, size_t key,
                      int (*fn)(void *arg, size_t key, size_t index, const char *item, size_t n), void *arg) {
  size_t index = 0;
  i = json_ws(buf, i + 1, len);
  while (i < len && buf[i] != ']') {
    size_t ve = json_value_end(buf, i, len);
    if (!ve) return 0;
    if (fn(arg, key, index++, buf + i, ve - i)) return -1;
    i = json_ws(buf, ve, len);
    if (i < len && buf[i] == ',') {
      i = json_ws(buf, i + 1, len);
      if (i < len && buf[i] == ']') return 0; /* a trailing comma: cJSON's to report */
    } else if (i >= len || buf[i] != ']') {
      return 0;
    }
  }
  return 1;
}

/* A List's top level: a "kind" ending in List, an "items" array, each key once. */
typedef struct list_top {
  const char *buf;
  size_t len, kind, kind_end, items;
  int (*fn)(void *arg, const char *item, size_t n);
  void *arg;
} list_top;

static bool list_key(void *arg, const char *key, size_t klen, size_t v, size_t ve) {
  list_top *t = arg;
  if (klen == 4 && !memcmp(key, "kind", 4)) {
    bool esc = false;
    if (t->kind || t->buf[v] != '"' || json_str_end(t->buf, v, t->len, &esc) != ve || esc) return false;
    t->kind = v + 1;
    t->kind_end = ve - 1;
  } else if (klen == 5 && !memcmp(key, "items", 5)) {
    if (t->items || t->buf[v] != '[') return false;
    t->items = v;
  }
  return true;
}

static int list_item(void *arg, size_t key, size_t index, const char *item, size_t n) {
  const list_top *t = arg;
  (void)key;
  (void)index;
  return t->fn(t->arg, item, n);
}

int dt__json_list_each(const char *buf, size_t len, int (*fn)(void *arg, const char *item, size_t n), void *arg) {
  size_t i = json_top(buf, len);
  list_top t = {buf, len, 0, 0, 0, fn, arg};
  if (i == SIZE_MAX || !json_members(buf, len, i, list_key, &t)) return 0;
  if (!t.kind || !t.items || t.kind_end - t.kind < 4 || memcmp(buf + t.kind_end - 4, "List", 4)) return 0;
  return json_items(buf, len, t.items, 0, list_item, &t);
}

/* Exactly the keys asked for, each once, each an array. */
typedef struct arrays_top {
  const char *buf;
  const char *const *keys;
  size_t nkeys, at[8];
} arrays_top;

static bool arrays_key(void *arg, const char *key, size_t klen, size_t v, size_t ve) {
  arrays_top *t = arg;
  (void)ve;
  size_t k = 0;
  while (k < t->nkeys && (strlen(t->keys[k]) != klen || memcmp(t->keys[k], key, klen))) k++;
  if (k == t->nkeys || t->at[k] || t->buf[v] != '[') return false;
  t->at[k] = v;
  return true;
}

int dt__json_arrays_each(const char *buf, size_t len, const char *const *keys, size_t nkeys,
                         int (*fn)(void *arg, size_t key, size_t index, const char *item, size_t n), void *arg) {
  arrays_top t = {buf, keys, nkeys, {0}};
  size_t i = json_top(buf, len);
  if (nkeys > sizeof t.at / sizeof t.at[0] || i == SIZE_MAX || !json_members(buf, len, i, arrays_key, &t)) return 0;
  for (size_t k = 0; k < nkeys; k++)
    if (!t.at[k]) return 0;
  for (size_t k = 0; k < nkeys; k++) {
    int how = json_items(buf, len, t.at[k], k, fn, arg);
    if (how != 1) return how;
  }
  return 1;
}

int dt__doc_parse_in(dt_arena *a, const char *name, const char *buf, size_t len, cJSON **out, dt_error *err) {
  dt_arena *old = dt__cj_arena(a);
  int rc = dt__doc_parse(name, buf, len, out, err);
  dt__cj_arena(old);
  if (!rc && a->oom) rc = dt__err(err, DT_ENOMEM, "%s: out of memory parsing", name);
  return rc;
}

/* ------------------------------------------------------------ emitting */

/* Every event set-up is checked: libyaml refuses a scalar that is not
** UTF-8, and emitting an event it did not set up would reuse a stale one. */
static int emit_ev(yaml_emitter_t *e, int initialized, yaml_event_t *ev) {
  return initialized && yaml_emitter_emit(e, ev) ? 0 : -1;
}

/* A scalar; bytes that are not UTF-8 become U+FFFD, so output is always
** well-formed whatever a policy or an input string carried. */
static int emit_scalar(yaml_emitter_t *e, const char *s, yaml_scalar_style_t style) {
  yaml_event_t ev;
  size_t n = strlen(s);
  if (dt__utf8_valid(s, n) == n)
    return emit_ev(e, yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)n, 1, 1, style), &ev);
  dt_buf b = {0};
  dt__buf_utf8(&b, s, n);
  int rc =
      b.oom
          ? -1
          : emit_ev(e, yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)b.p, (int)b.len, 1, 1, style), &ev);
  dt__free(b.p);
  return rc;
}

static int emit_node(yaml_emitter_t *e, const cJSON *n) {
  yaml_event_t ev;
  if (cJSON_IsObject(n)) {
    if (emit_ev(e, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE), &ev)) return -1;
    for (const cJSON *c = n->child; c; c = c->next)
      if (emit_scalar(e, c->string, YAML_ANY_SCALAR_STYLE) || emit_node(e, c)) return -1;
    return emit_ev(e, yaml_mapping_end_event_initialize(&ev), &ev);
  }
  if (cJSON_IsArray(n)) {
    if (emit_ev(e, yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE), &ev)) return -1;
    for (const cJSON *c = n->child; c; c = c->next)
      if (emit_node(e, c)) return -1;
    return emit_ev(e, yaml_sequence_end_event_initialize(&ev), &ev);
  }
  char tmp[64];
  const char *s;
  yaml_scalar_style_t style = YAML_PLAIN_SCALAR_STYLE;
  if (cJSON_IsNull(n)) {
    s = "null";
  } else if (cJSON_IsRaw(n)) {
    s = n->valuestring;
  } else if (cJSON_IsString(n)) {
    s = n->valuestring;
    size_t len = strlen(s);
    /* A string that would read back as another type must be quoted. */
    if (is_null(s, len) || is_bool(s, len) >= 0 || is_number(s, len))
      style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    else
      style = YAML_ANY_SCALAR_STYLE;
  } else {
    s = dt__scalar(n, tmp, sizeof tmp);
  }
  return emit_scalar(e, s, style);
}

static int write_handler(void *data, unsigned char *buffer, size_t size) {
  dt_buf *b = data;
  dt__buf_putn(b, (const char *)buffer, size);
  return !b->oom;
}

int dt__yaml_emit_each(size_t n, dt_yaml_doc_fn *doc, void *ud, dt_buf *b) {
  yaml_emitter_t e;
  yaml_event_t ev;
  if (!yaml_emitter_initialize(&e)) return DT_ENOMEM;
  yaml_emitter_set_output(&e, write_handler, b);
  yaml_emitter_set_unicode(&e, 1);
  yaml_emitter_set_width(&e, -1);
  int rc = emit_ev(&e, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING), &ev);
  for (size_t i = 0; i < n && !rc; i++) {
    bool owned;
    const cJSON *d = doc(ud, i, &owned);
    if (!d) {
      rc = -1;
      b->oom = 1;
      break;
    }
    rc = emit_ev(&e, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 0), &ev) || emit_node(&e, d) ||
         emit_ev(&e, yaml_document_end_event_initialize(&ev, 1), &ev);
    if (owned) cJSON_Delete((cJSON *)d);
    dt__buf_spill(b, false);
  }
  if (!rc) rc = emit_ev(&e, yaml_stream_end_event_initialize(&ev), &ev);
  yaml_emitter_delete(&e);
  return rc ? (b->oom ? DT_ENOMEM : DT_EINVAL) : 0;
}

static const cJSON *nth_child(void *ud, size_t i, bool *owned) {
  const cJSON **at = ud; /* the children are visited in order */
  const cJSON *d = *at;
  (void)i;
  *at = d->next;
  *owned = false;
  return d;
}

int dt__yaml_emit(const cJSON *docs, dt_buf *b) {
  size_t n = 0;
  for (const cJSON *d = docs->child; d; d = d->next) n++;
  const cJSON *at = docs->child;
  return dt__yaml_emit_each(n, nth_child, &at, b);
}

/* ------------------------------------------------------------- JSON out */

static void json_scalar(const cJSON *n, dt_buf *b) {
  char tmp[64];
  if (cJSON_IsString(n))
    dt__buf_json_str(b, n->valuestring);
  else if (cJSON_IsNumber(n))
    dt__buf_puts(b, dt__scalar(n, tmp, sizeof tmp));
  else if (cJSON_IsRaw(n)) /* a number already formatted (prices) */
    dt__buf_puts(b, n->valuestring);
  else if (cJSON_IsTrue(n))
    dt__buf_puts(b, "true");
  else if (cJSON_IsFalse(n))
    dt__buf_puts(b, "false");
  else
    dt__buf_puts(b, "null");
}

static int key_cmp(const void *a, const void *b) {
  return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

void dt__json_canon(const cJSON *n, dt_buf *b) {
  if (cJSON_IsArray(n)) {
    dt__buf_putc(b, '[');
    for (const cJSON *c = n->child; c; c = c->next) {
      dt__buf_putc(b, c == n->child ? ' ' : ',');
      dt__json_canon(c, b);
    }
    dt__buf_putc(b, ']');
    return;
  }
  if (!cJSON_IsObject(n)) {
    json_scalar(n, b);
    return;
  }
  size_t cnt = 0;
  for (const cJSON *c = n->child; c; c = c->next) cnt++;
  const cJSON *small[32];
  const cJSON **v = cnt <= 32 ? small : dt__malloc(cnt * sizeof *v);
  if (!v) {
    b->oom = 1;
    return;
  }
  size_t i = 0;
  for (const cJSON *c = n->child; c; c = c->next) v[i++] = c;
  qsort(v, cnt, sizeof *v, key_cmp);
  dt__buf_putc(b, '{');
  for (i = 0; i < cnt; i++) {
    if (i) dt__buf_putc(b, ',');
    dt__buf_json_str(b, v[i]->string);
    dt__buf_putc(b, ':');
    dt__json_canon(v[i], b);
  }
  dt__buf_putc(b, '}');
  if (v != small) dt__free(v);
}

uint64_t dt__hash64(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ull;
  }
  return h;
}

void dt__json_indent(dt_buf *b, int depth) {
  dt__buf_putc(b, '\n');
  for (int i = 0; i < depth; i++) dt__buf_puts(b, "  ");
}

/* A container on one line: {"k": v, "k2": v2} or [a, b]. */
static void json_line(const cJSON *n, dt_buf *b) {
  bool obj = cJSON_IsObject(n);
  if (!obj && !cJSON_IsArray(n)) {
    json_scalar(n, b);
    return;
  }
  dt__buf_putc(b, obj ? '{' : '[');
  for (const cJSON *c = n->child; c; c = c->next) {
    if (c != n->child) dt__buf_puts(b, ", ");
    if (obj) {
      dt__buf_json_str(b, c->string);
      dt__buf_puts(b, ": ");
    }
    json_line(c, b);
  }
  dt__buf_putc(b, obj ? '}' : ']');
}

void dt__json_styled(const cJSON *n, const cJSON *parent, dt_buf *b, int depth, dt_json_inline on_one_line) {
  bool obj = cJSON_IsObject(n);
  if (!obj && !cJSON_IsArray(n)) {
    json_scalar(n, b);
    return;
  }
  if (!n->child) {
    dt__buf_puts(b, obj ? "{}" : "[]");
    return;
  }
  if (on_one_line && on_one_line(n, parent)) {
    json_line(n, b);
    return;
  }
  dt__buf_putc(b, obj ? '{' : '[');
  for (const cJSON *c = n->child; c; c = c->next) {
    dt__json_indent(b, depth + 1);
    if (obj) {
      dt__buf_json_str(b, c->string);
      dt__buf_puts(b, ": ");
    }
    dt__json_styled(c, n, b, depth + 1, on_one_line);
    if (c->next) dt__buf_putc(b, ',');
  }
  dt__json_indent(b, depth);
  dt__buf_putc(b, obj ? '}' : ']');
}

static void json_pretty(const cJSON *n, dt_buf *b, int depth) { dt__json_styled(n, NULL, b, depth, NULL); }

/* ------------------------------------------------------ result documents */

cJSON *dt__json_put(cJSON *parent, const char *key, cJSON *v) {
  if (!parent || !v) {
    cJSON_Delete(v);
    return NULL;
  }
  if (cJSON_IsArray(parent) ? !cJSON_AddItemToArray(parent, v) : !cJSON_AddItemToObject(parent, key, v)) {
    cJSON_Delete(v);
    return NULL;
  }
  return v;
}

void dt__json_put_str(cJSON *o, const char *key, const char *v) { dt__json_put(o, key, cJSON_CreateString(v)); }

void dt__json_put_fields(cJSON *o, const dt_field *f, size_t n) {
  for (size_t i = 0; i < n; i++) dt__json_put_str(o, f[i].key, f[i].val);
}

void dt__json_put_price(cJSON *o, const char *key, double price) {
  char tmp[64];
  dt__fmt_price(tmp, sizeof tmp, price);
  dt__json_put(o, key, cJSON_CreateRaw(tmp));
}

void dt__json_put_strs(cJSON *o, const char *key, const char *const *v, size_t n) {
  cJSON *arr = dt__json_put(o, key, cJSON_CreateArray());
  for (size_t i = 0; i < n; i++) dt__json_put_str(arr, NULL, v[i]);
}

void dt__json_put_num(cJSON *o, const char *key, double v) { dt__json_put(o, key, cJSON_CreateNumber(v)); }

void dt__doc_write(const cJSON *root, dt_format format, dt_buf *b) {
  if (format == DT_FORMAT_YAML) {
    cJSON *docs = cJSON_CreateArray(); /* one document: the result */
    if (!docs || !cJSON_AddItemReferenceToArray(docs, (cJSON *)root) || dt__yaml_emit(docs, b)) b->oom = 1;
    cJSON_Delete(docs);
    return;
  }
  json_pretty(root, b, 0);
  dt__buf_putc(b, '\n');
}
