/*
 * A small, strict JSON reader and writer for boxd's control messages.
 *
 * The reader follows JSON.parse as src/boxd/protocol.ts sees it: the payload is
 * decoded as UTF-8 with replacement (invalid bytes inside strings become U+FFFD), \u
 * escapes are decoded (a lone surrogate is kept as its 3-byte WTF-8 form, so that
 * messages can quote it back as \udXXX), duplicate keys keep their first position and
 * their last value, and array-index keys ("0", "17") come first in ascending order, as
 * in a JavaScript object. Sizes are bounded: the input by the frame (1 MiB), nesting
 * by JSON_MAX_DEPTH, members of one object by JSON_MAX_MEMBERS.
 */
#ifndef BOXD_JSON_H
#define BOXD_JSON_H

#include <stddef.h>

#define JSON_MAX_DEPTH 512
#define JSON_MAX_MEMBERS 8192

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
  enum jtype t;
  int b;
  double n;
  char *s; /* J_STR: WTF-8 bytes, NUL-terminated, may contain NUL (len counts) */
  size_t len;
  struct jv **items; /* J_ARR, J_OBJ */
  char **keys;       /* J_OBJ */
  size_t *klens;     /* J_OBJ */
  size_t count;
};

/* Parses a whole payload; NULL on malformed input. Free with json_free. */
struct jv *json_parse(const char *p, size_t len);
void json_free(struct jv *v);
/* The value of key in an object (NULL when absent or not an object). */
struct jv *json_get(const struct jv *obj, const char *key);

/* A growable byte buffer. */
struct buf {
  char *p;
  size_t len, cap;
};
int buf_put(struct buf *b, const void *data, size_t n);
int buf_puts(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_free(struct buf *b);

/* JSON.stringify of a string (WTF-8 in, quotes included). */
int json_put_string(struct buf *b, const char *s, size_t len);
/* JavaScript's Number#toString. */
void js_number(double x, char out[40]);
/* JSON.stringify of a parsed value (undefined: v == NULL gives "undefined"). */
int json_put_value(struct buf *b, const struct jv *v);
/* String(value) as JavaScript computes it; -1 on a TypeError (value has no primitive). */
int js_string_of(struct buf *b, const struct jv *v);
/* WTF-8 to UTF-8: lone surrogates become U+FFFD, as Buffer.from(string) does. */
int wtf8_to_utf8(struct buf *b, const char *s, size_t len);

#endif
