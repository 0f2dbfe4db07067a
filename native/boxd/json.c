/* boxd's JSON reader and writer: see json.h. */
#define _GNU_SOURCE
#include "json.h"

#include <math.h>
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
  char small[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return -1;
  if ((size_t)n < sizeof small) return buf_put(b, small, (size_t)n);
  char *big = malloc((size_t)n + 1);
  if (!big) return -1;
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  int r = buf_put(b, big, (size_t)n);
  free(big);
  return r;
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

static int put_cp(struct buf *b, uint32_t cp) {
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

/* Reads a string after its opening quote into b; 0 on success. */
static int read_string(struct reader *r, struct buf *b) {
  if (buf_put(b, "", 0)) return -1;
  for (;;) {
    if (r->p >= r->end) return -1;
    unsigned c = *r->p;
    if (c == '"') {
      r->p++;
      return 0;
    }
    if (c < 0x20) return -1;
    if (c == '\\') {
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
          uint32_t u;
          if (r->end - r->p < 4 || hex4(r->p, &u)) return -1;
          r->p += 4;
          if (u >= 0xD800 && u <= 0xDBFF && r->end - r->p >= 6 && r->p[0] == '\\' && r->p[1] == 'u') {
            uint32_t lo;
            if (hex4(r->p + 2, &lo) == 0 && lo >= 0xDC00 && lo <= 0xDFFF) {
              r->p += 6;
              u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            }
          }
          if (put_cp(b, u)) return -1; /* a lone surrogate stays WTF-8 */
          continue;
        }
        default:
          return -1;
      }
      if (buf_put(b, &ch, 1)) return -1;
      continue;
    }
    if (c < 0x80) {
      if (buf_put(b, &c, 1)) return -1;
      r->p++;
      continue;
    }
    /* UTF-8 with replacement, as the WHATWG decoder does (maximal subparts). */
    unsigned need, lo = 0x80, hi = 0xBF;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) need = 1, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) {
      need = 2, cp = c & 0x0F;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      need = 3, cp = c & 0x07;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      r->p++;
      if (put_cp(b, 0xFFFD)) return -1;
      continue;
    }
    r->p++;
    int ok = 1;
    for (unsigned k = 0; k < need; k++) {
      if (r->p >= r->end || *r->p < lo || *r->p > hi) {
        ok = 0;
        break;
      }
      cp = (cp << 6) | (*r->p & 0x3F);
      r->p++;
      lo = 0x80, hi = 0xBF;
    }
    if (put_cp(b, ok ? cp : 0xFFFD)) return -1;
  }
}

static int is_index_key(const char *k, size_t len, uint64_t *out) {
  if (len == 0 || len > 10) return 0;
  if (k[0] == '0' && len > 1) return 0;
  uint64_t v = 0;
  for (size_t i = 0; i < len; i++) {
    if (k[i] < '0' || k[i] > '9') return 0;
    v = v * 10 + (uint64_t)(k[i] - '0');
  }
  if (v >= 4294967295ULL) return 0;
  *out = v;
  return 1;
}

static struct jv *read_value(struct reader *r);

static int push_item(struct jv *v, struct jv *item, char *key, size_t klen, size_t *cap) {
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

/* Array-index keys first, ascending; the others keep their order. */
static int order_keys(struct jv *v) {
  size_t n = v->count, nidx = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t k;
    nidx += is_index_key(v->keys[i], v->klens[i], &k);
  }
  if (nidx == 0) return 0;
  struct jv **items = malloc(n * sizeof *items);
  char **keys = malloc(n * sizeof *keys);
  size_t *klens = malloc(n * sizeof *klens);
  uint64_t *idx = malloc(n * sizeof *idx);
  if (!items || !keys || !klens || !idx) {
    free(items), free(keys), free(klens), free(idx);
    return -1;
  }
  size_t a = 0, z = nidx;
  for (size_t i = 0; i < n; i++) {
    uint64_t k = 0;
    size_t at = is_index_key(v->keys[i], v->klens[i], &k) ? a++ : z++;
    if (at < nidx) {
      /* insertion sort by index among the index keys */
      size_t j = at;
      while (j > 0 && idx[j - 1] > k) {
        items[j] = items[j - 1], keys[j] = keys[j - 1], klens[j] = klens[j - 1], idx[j] = idx[j - 1];
        j--;
      }
      idx[j] = k;
      at = j;
    }
    items[at] = v->items[i], keys[at] = v->keys[i], klens[at] = v->klens[i];
  }
  free(idx);
  free(v->items), free(v->keys), free(v->klens);
  v->items = items, v->keys = keys, v->klens = klens;
  return 0;
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
    if (r->p >= r->end || *r->p != ':') {
      buf_free(&key);
      goto bad;
    }
    r->p++;
    struct jv *item = read_value(r);
    if (!item) {
      buf_free(&key);
      goto bad;
    }
    size_t i;
    for (i = 0; i < v->count; i++)
      if (v->klens[i] == key.len && memcmp(v->keys[i], key.p, key.len) == 0) break;
    if (i < v->count) {
      json_free(v->items[i]);
      v->items[i] = item;
      buf_free(&key);
    } else if (v->count >= JSON_MAX_MEMBERS || push_item(v, item, key.p, key.len, &cap)) {
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
    if (*r->p == '}') {
      r->p++;
      if (order_keys(v)) goto bad;
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
  size_t n = (size_t)(p - s);
  char small[64], *text = n < sizeof small ? small : malloc(n + 1);
  if (!text) return NULL;
  memcpy(text, s, n);
  text[n] = '\0';
  struct jv *v = new_value(J_NUM);
  if (v) v->n = strtod(text, NULL);
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
      if (++r->depth > JSON_MAX_DEPTH) return NULL;
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

struct jv *json_get(const struct jv *obj, const char *key) {
  if (!obj || obj->t != J_OBJ) return NULL;
  size_t n = strlen(key);
  for (size_t i = 0; i < obj->count; i++)
    if (obj->klens[i] == n && memcmp(obj->keys[i], key, n) == 0) return obj->items[i];
  return NULL;
}

/* ---- writer ----------------------------------------------------------------------- */

int json_put_string(struct buf *b, const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  if (buf_put(b, "\"", 1)) return -1;
  size_t start = 0;
  for (size_t i = 0; i < len;) {
    unsigned c = p[i];
    const char *esc = NULL;
    char tmp[8];
    size_t skip = 1;
    if (c == '"') esc = "\\\"";
    else if (c == '\\') esc = "\\\\";
    else if (c == '\b') esc = "\\b";
    else if (c == '\f') esc = "\\f";
    else if (c == '\n') esc = "\\n";
    else if (c == '\r') esc = "\\r";
    else if (c == '\t') esc = "\\t";
    else if (c < 0x20) {
      snprintf(tmp, sizeof tmp, "\\u%04x", c);
      esc = tmp;
    } else if (c == 0xED && i + 2 < len && p[i + 1] >= 0xA0 && p[i + 1] <= 0xBF) {
      unsigned u = 0xD000 | ((p[i + 1] & 0x3Fu) << 6) | (p[i + 2] & 0x3Fu);
      snprintf(tmp, sizeof tmp, "\\u%04x", u);
      esc = tmp;
      skip = 3;
    }
    if (esc) {
      if (buf_put(b, s + start, i - start) || buf_puts(b, esc)) return -1;
      i += skip;
      start = i;
    } else
      i++;
  }
  if (buf_put(b, s + start, len - start)) return -1;
  return buf_put(b, "\"", 1);
}

void js_number(double x, char out[40]) {
  if (isnan(x)) {
    strcpy(out, "NaN");
    return;
  }
  if (x == 0) {
    strcpy(out, "0");
    return;
  }
  char *o = out;
  if (x < 0) {
    *o++ = '-';
    x = -x;
  }
  if (isinf(x)) {
    strcpy(o, "Infinity");
    return;
  }
  char e[40];
  int p;
  for (p = 1; p <= 17; p++) {
    snprintf(e, sizeof e, "%.*e", p - 1, x);
    if (strtod(e, NULL) == x) break;
  }
  char digits[24];
  int k = 0;
  char *q = e;
  for (; *q && *q != 'e'; q++)
    if (*q >= '0' && *q <= '9') digits[k++] = *q;
  while (k > 1 && digits[k - 1] == '0') k--;
  digits[k] = '\0';
  int n = atoi(q + 1) + 1;
  if (k <= n && n <= 21) {
    memcpy(o, digits, (size_t)k);
    o += k;
    for (int i = 0; i < n - k; i++) *o++ = '0';
    *o = '\0';
  } else if (0 < n && n <= 21) {
    memcpy(o, digits, (size_t)n);
    o += n;
    *o++ = '.';
    memcpy(o, digits + n, (size_t)(k - n));
    o += k - n;
    *o = '\0';
  } else if (-6 < n && n <= 0) {
    *o++ = '0';
    *o++ = '.';
    for (int i = 0; i < -n; i++) *o++ = '0';
    memcpy(o, digits, (size_t)k);
    o[k] = '\0';
  } else {
    *o++ = digits[0];
    if (k > 1) {
      *o++ = '.';
      memcpy(o, digits + 1, (size_t)(k - 1));
      o += k - 1;
    }
    sprintf(o, "e%c%d", n - 1 >= 0 ? '+' : '-', abs(n - 1));
  }
}

int json_put_value(struct buf *b, const struct jv *v) {
  char num[40];
  if (!v) return buf_puts(b, "undefined");
  switch (v->t) {
    case J_NULL:
      return buf_puts(b, "null");
    case J_BOOL:
      return buf_puts(b, v->b ? "true" : "false");
    case J_NUM:
      if (!isfinite(v->n)) return buf_puts(b, "null");
      js_number(v->n, num);
      return buf_puts(b, num);
    case J_STR:
      return json_put_string(b, v->s, v->len);
    case J_ARR:
      if (buf_puts(b, "[")) return -1;
      for (size_t i = 0; i < v->count; i++)
        if ((i && buf_puts(b, ",")) || json_put_value(b, v->items[i])) return -1;
      return buf_puts(b, "]");
    case J_OBJ:
      if (buf_puts(b, "{")) return -1;
      for (size_t i = 0; i < v->count; i++)
        if ((i && buf_puts(b, ",")) || json_put_string(b, v->keys[i], v->klens[i]) || buf_puts(b, ":") ||
            json_put_value(b, v->items[i]))
          return -1;
      return buf_puts(b, "}");
  }
  return -1;
}

int js_string_of(struct buf *b, const struct jv *v) {
  char num[40];
  if (!v) return buf_puts(b, "undefined");
  switch (v->t) {
    case J_NULL:
      return buf_puts(b, "null");
    case J_BOOL:
      return buf_puts(b, v->b ? "true" : "false");
    case J_NUM:
      js_number(v->n, num);
      return buf_puts(b, num);
    case J_STR:
      return buf_put(b, v->s, v->len);
    case J_ARR:
      /* Array#join(","): null and undefined give "" */
      for (size_t i = 0; i < v->count; i++) {
        if (i && buf_puts(b, ",")) return -1;
        if (v->items[i]->t != J_NULL && js_string_of(b, v->items[i])) return -1;
      }
      return 0;
    case J_OBJ:
      /* An own, non-callable toString hides Object.prototype's; valueOf gives no primitive. */
      if (json_get(v, "toString")) return -1;
      return buf_puts(b, "[object Object]");
  }
  return -1;
}

int wtf8_to_utf8(struct buf *b, const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  size_t start = 0;
  for (size_t i = 0; i < len;) {
    if (p[i] == 0xED && i + 2 < len && p[i + 1] >= 0xA0 && p[i + 1] <= 0xBF) {
      if (buf_put(b, s + start, i - start) || buf_put(b, "\xEF\xBF\xBD", 3)) return -1;
      i += 3;
      start = i;
    } else
      i++;
  }
  return buf_put(b, s + start, len - start);
}
