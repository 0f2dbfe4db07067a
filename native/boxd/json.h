/*
 * A small, strict JSON reader and writer for boxd's control messages (RFC 8259).
 *
 * The reader takes one whole payload and refuses anything that is not JSON: text that is
 * not UTF-8, a duplicate key in an object, trailing bytes. A \u escape of a lone
 * surrogate (which JSON allows but Unicode does not) reads as U+FFFD, so every string it
 * returns is UTF-8. Sizes are bounded: the input by the frame (1 MiB), nesting by
 * JSON_MAX_DEPTH, members of one object (or items of one array) by JSON_MAX_MEMBERS.
 *
 * The writer is what boxd's answers need: strings, integers and decimal fractions; boxd
 * writes the punctuation of its messages itself.
 */
#ifndef BOXD_JSON_H
#define BOXD_JSON_H

#include <stddef.h>

#define JSON_MAX_DEPTH 512
#define JSON_MAX_MEMBERS 8192

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
  enum jtype t;
  int b;             /* J_BOOL */
  double n;          /* J_NUM */
  char *s;           /* J_STR: UTF-8, NUL-terminated, may contain NUL (len counts) */
  size_t len;
  struct jv **items; /* J_ARR, J_OBJ: the values, in order */
  char **keys;       /* J_OBJ: the keys (UTF-8, may contain NUL) */
  size_t *klens;     /* J_OBJ */
  size_t count;
};

/* Parses a whole payload; NULL on malformed input. Free with json_free. */
struct jv *json_parse(const char *p, size_t len);
void json_free(struct jv *v);
/* The value of key in an object (NULL when absent or not an object). */
const struct jv *json_get(const struct jv *obj, const char *key);
/* Whether v is a string equal to s (which has no NUL). */
int json_is_str(const struct jv *v, const char *s);

/* A growable byte buffer, always NUL-terminated once anything was put in it. */
struct buf {
  char *p;
  size_t len, cap;
};
int buf_put(struct buf *b, const void *data, size_t n);
int buf_puts(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_free(struct buf *b);

/* A JSON string (quotes included) of UTF-8 bytes. */
int json_put_string(struct buf *b, const char *s, size_t len);
/* The JSON number units / 10^decimals, without trailing zeros (e.g. 1500, 3 -> 1.5). */
int json_put_decimal(struct buf *b, unsigned long long units, int decimals);

#endif
