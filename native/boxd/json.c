/* boxd's JSON reader and writer: see json.h. */
#define _GNU_SOURCE
#include "json.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- buffers ---------------------------------------------------------------------- */

int buf_put(struct buf *b, const void *data, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->len, data, n);
  b->len += n;
  b->p[b->len] = '\0';
  return 0;
}

int buf_puts(struct buf *b, const char *s) { return buf_put(b, s, strlen(s)); }

int buf_printf(struct buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || buf_put(b, "", 0)) return -1;
  size_t need = b->len + (size_t)n + 1;
  if (need > b->cap) {
    char *p = realloc(b->p, need);
    if (!p) return -1;
    b->p = p;
    b->cap = need;
  }
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return 0;
}

void buf_free(struct buf *b) {
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}

/* ---- reader ----------------------------------------------------------------------- */

struct reader {
  const unsigned char *p, *end;
  int depth;
};

static void skip_ws(struct reader *r) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
}

static struct jv *new_value(enum jtype t) {
  struct jv *v = calloc(1, sizeof *v);
  if (v) v->t = t;
  return v;
}

void json_free(struct jv *v) {
  if (!v) return;
  free(v->s);
  for (size_t i = 0; i < v->count; i++) {
    json_free(v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->klens);
  free(v);
}

static int put_utf8(struct buf *b, uint32_t cp) {
  unsigned char o[4];
  size_t n;
  if (cp < 0x80) {
    o[0] = (unsigned char)cp;
    n = 1;
  } else if (cp < 0x800) {
    o[0] = (unsigned char)(0xC0 | (cp >> 6));
    o[1] = (unsigned char)(0x80 | (cp & 0x3F));
    n = 2;
  } else if (cp < 0x10000) {
    o[0] = (unsigned char)(0xE0 | (cp >> 12));
    o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp & 0x3F));
    n = 3;
  } else {
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    n = 4;
  }
  return buf_put(b, o, n);
}

static int hex4(const unsigned char *p, uint32_t *out) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    unsigned c = p[i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= c - '0';
    else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
    else return -1;
  }
  *out = v;
  return 0;
}

/* The length of the well-formed UTF-8 sequence at p (not ASCII), or 0. */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end) {
  unsigned c = p[0], lo = 0x80, hi = 0xBF;
  size_t n;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0; /* no overlong forms */
    if (c == 0xED) hi = 0x9F; /* no surrogates */
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F; /* nothing above U+10FFFF */
  } else
    return 0;
  if ((size_t)(end - p) < n) return 0;
  if (p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < n; i++)
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  return n;
}

/* Reads a string after its opening quote into b; 0 on success. */
static int read_string(struct reader *r, struct buf *b) {
  if (buf_put(b, "", 0)) return -1;
  for (;;) {
    const unsigned char *run = r->p;
    while (r->p < r->end && *r->p >= 0x20 && *r->p < 0x80 && *r->p != '"' && *r->p != '\\') r->p++;
    if (buf_put(b, run, (size_t)(r->p - run))) return -1;
    if (r->p >= r->end) return -1;
    unsigned c = *r->p;
    if (c == '"') {
      r->p++;
      return 0;
    }
    if (c < 0x20) return -1;
    if (c >= 0x80) {
      size_t n = utf8_seq(r->p, r->end);
      if (n == 0 || buf_put(b, r->p, n)) return -1;
      r->p += n;
      continue;
    }
    /* an escape */
    if (r->end - r->p < 2) return -1;
    unsigned e = r->p[1];
    r->p += 2;
    char ch;
    switch (e) {
      case '"': ch = '"'; break;
      case '\\': ch = '\\'; break;
      case '/': ch = '/'; break;
      case 'b': ch = '\b'; break;
      case 'f': ch = '\f'; break;
      case 'n': ch = '\n'; break;
      case 'r': ch = '\r'; break;
      case 't': ch = '\t'; break;
      case 'u': {
        uint32_t u, lo;
        if (r->end - r->p < 4 || hex4(r->p, &u)) return -1;
        r->p += 4;
        if (u >= 0xD800 && u <= 0xDBFF && r->end - r->p >= 6 && r->p[0] == '\\' && r->p[1] == 'u' &&
            hex4(r->p + 2, &lo) == 0 && lo >= 0xDC00 && lo <= 0xDFFF) {
          r->p += 6;
          u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
        } else if (u >= 0xD800 && u <= 0xDFFF)
          u = 0xFFFD; /* a lone surrogate is not Unicode */
        if (put_utf8(b, u)) return -1;
        continue;
      }
      default:
        return -1;
    }
    if (buf_put(b, &ch, 1)) return -1;
  }
}

static struct jv *read_value(struct reader *r);

static int push_item(struct jv *v, struct jv *item, char *key, size_t klen, size_t *cap) {
  if (v->count == JSON_MAX_MEMBERS) return -1;
  if (v->count == *cap) {
    size_t n = *cap ? *cap * 2 : 8;
    struct jv **items = realloc(v->items, n * sizeof *items);
    if (!items) return -1;
    v->items = items;
    if (v->t == J_OBJ) {
      char **keys = realloc(v->keys, n * sizeof *keys);
      if (!keys) return -1;
      v->keys = keys;
      size_t *klens = realloc(v->klens, n * sizeof *klens);
      if (!klens) return -1;
      v->klens = klens;
    }
    *cap = n;
  }
  v->items[v->count] = item;
  if (v->t == J_OBJ) {
    v->keys[v->count] = key;
    v->klens[v->count] = klen;
  }
  v->count++;
  return 0;
}

struct keyref {
  const char *k;
  size_t len;
};

static int keyref_cmp(const void *a, const void *b) {
  const struct keyref *x = a, *y = b;
  if (x->len != y->len) return x->len < y->len ? -1 : 1;
  return memcmp(x->k, y->k, x->len);
}

/* Whether two members of an object have the same key (sorted: n log n). */
static int has_duplicate_key(const struct jv *v) {
  if (v->count < 2) return 0;
  struct keyref *refs = malloc(v->count * sizeof *refs);
  if (!refs) return 1;
  for (size_t i = 0; i < v->count; i++) refs[i] = (struct keyref){v->keys[i], v->klens[i]};
  qsort(refs, v->count, sizeof *refs, keyref_cmp);
  int dup = 0;
  for (size_t i = 1; i < v->count && !dup; i++) dup = keyref_cmp(&refs[i - 1], &refs[i]) == 0;
  free(refs);
  return dup;
}

static struct jv *read_object(struct reader *r) {
  struct jv *v = new_value(J_OBJ);
  size_t cap = 0;
  if (!v) return NULL;
  skip_ws(r);
  if (r->p < r->end && *r->p == '}') {
    r->p++;
    return v;
  }
  for (;;) {
    skip_ws(r);
    if (r->p >= r->end || *r->p != '"') goto bad;
    r->p++;
    struct buf key = {0};
    if (read_string(r, &key)) {
      buf_free(&key);
      goto bad;
    }
    skip_ws(r);
    struct jv *item = NULL;
    if (r->p < r->end && *r->p == ':') {
      r->p++;
      item = read_value(r);
    }
    if (!item || push_item(v, item, key.p, key.len, &cap)) {
      json_free(item);
      buf_free(&key);
      goto bad;
    }
    skip_ws(r);
    if (r->p >= r->end) goto bad;
    if (*r->p == ',') {
      r->p++;
      continue;
    }
    if (*r->p == '}' && !has_duplicate_key(v)) {
      r->p++;
      return v;
    }
    goto bad;
  }
bad:
  json_free(v);
  return NULL;
}

static struct jv *read_array(struct reader *r) {
  struct jv *v = new_value(J_ARR);
  size_t cap = 0;
  if (!v) return NULL;
  skip_ws(r);
  if (r->p < r->end && *r->p == ']') {
    r->p++;
    return v;
  }
  for (;;) {
    struct jv *item = read_value(r);
    if (!item || push_item(v, item, NULL, 0, &cap)) {
      json_free(item);
      goto bad;
    }
    skip_ws(r);
    if (r->p >= r->end) goto bad;
    if (*r->p == ',') {
      r->p++;
      continue;
    }
    if (*r->p == ']') {
      r->p++;
      return v;
    }
    goto bad;
  }
bad:
  json_free(v);
  return NULL;
}

static int digit(const unsigned char *p, const unsigned char *end) { return p < end && *p >= '0' && *p <= '9'; }

static struct jv *read_number(struct reader *r) {
  const unsigned char *s = r->p, *p = r->p;
  if (p < r->end && *p == '-') p++;
  if (!digit(p, r->end)) return NULL;
  if (*p == '0') p++;
  else
    while (digit(p, r->end)) p++;
  if (p < r->end && *p == '.') {
    p++;
    if (!digit(p, r->end)) return NULL;
    while (digit(p, r->end)) p++;
  }
  if (p < r->end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < r->end && (*p == '+' || *p == '-')) p++;
    if (!digit(p, r->end)) return NULL;
    while (digit(p, r->end)) p++;
  }
  /* the payload is not NUL-terminated: strtod reads a copy */
  size_t n = (size_t)(p - s);
  char small[64], *text = n < sizeof small ? small : malloc(n + 1);
  if (!text) return NULL;
  memcpy(text, s, n);
  text[n] = '\0';
  struct jv *v = new_value(J_NUM);
  if (v) v->n = strtod(text, NULL); /* boxd never sets a locale: '.' is the point */
  if (text != small) free(text);
  r->p = p;
  return v;
}

static int literal(struct reader *r, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0) return 0;
  r->p += n;
  return 1;
}

static struct jv *read_value(struct reader *r) {
  skip_ws(r);
  if (r->p >= r->end) return NULL;
  struct jv *v = NULL;
  switch (*r->p) {
    case '{':
    case '[':
      if (r->depth == JSON_MAX_DEPTH) return NULL;
      r->depth++;
      r->p++;
      v = r->p[-1] == '{' ? read_object(r) : read_array(r);
      r->depth--;
      return v;
    case '"': {
      r->p++;
      struct buf b = {0};
      if (read_string(r, &b) || !(v = new_value(J_STR))) {
        buf_free(&b);
        return NULL;
      }
      v->s = b.p;
      v->len = b.len;
      return v;
    }
    case 't':
      if (!literal(r, "true") || !(v = new_value(J_BOOL))) return NULL;
      v->b = 1;
      return v;
    case 'f':
      if (!literal(r, "false")) return NULL;
      return new_value(J_BOOL);
    case 'n':
      if (!literal(r, "null")) return NULL;
      return new_value(J_NULL);
    default:
      return read_number(r);
  }
}

struct jv *json_parse(const char *p, size_t len) {
  struct reader r = {(const unsigned char *)p, (const unsigned char *)p + len, 0};
  struct jv *v = read_value(&r);
  if (!v) return NULL;
  skip_ws(&r);
  if (r.p != r.end) {
    json_free(v);
    return NULL;
  }
  return v;
}

const struct jv *json_get(const struct jv *obj, const char *key) {
  if (!obj || obj->t != J_OBJ) return NULL;
  size_t n = strlen(key);
  for (size_t i = 0; i < obj->count; i++)
    if (obj->klens[i] == n && memcmp(obj->keys[i], key, n) == 0) return obj->items[i];
  return NULL;
}

int json_is_str(const struct jv *v, const char *s) {
  size_t n = strlen(s);
  return v && v->t == J_STR && v->len == n && memcmp(v->s, s, n) == 0;
}

/* ---- writer ----------------------------------------------------------------------- */

int json_put_string(struct buf *b, const char *s, size_t len) {
  if (buf_put(b, "\"", 1)) return -1;
  size_t start = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    char esc[8];
    if (c == '"' || c == '\\') snprintf(esc, sizeof esc, "\\%c", c);
    else if (c == '\n') strcpy(esc, "\\n");
    else if (c == '\r') strcpy(esc, "\\r");
    else if (c == '\t') strcpy(esc, "\\t");
    else if (c < 0x20) snprintf(esc, sizeof esc, "\\u%04x", c);
    else continue;
    if (buf_put(b, s + start, i - start) || buf_puts(b, esc)) return -1;
    start = i + 1;
  }
  if (buf_put(b, s + start, len - start)) return -1;
  return buf_put(b, "\"", 1);
}

int json_put_decimal(struct buf *b, unsigned long long units, int decimals) {
  unsigned long long scale = 1;
  for (int i = 0; i < decimals; i++) scale *= 10;
  unsigned long long whole = units / scale, frac = units % scale;
  if (frac == 0) return buf_printf(b, "%llu", whole);
  while (frac % 10 == 0) frac /= 10, decimals--;
  return buf_printf(b, "%llu.%0*llu", whole, decimals, frac);
}
