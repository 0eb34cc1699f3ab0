/* io: a small strict JSON parser (RFC 8259) for safetensors headers, and the
 * string escaping the writer needs. Strict because a header is untrusted
 * input: trailing commas, comments, leading zeros, control characters in
 * strings, invalid UTF-8, lone surrogates, duplicate keys, nesting deeper
 * than JSON_MAX_DEPTH and trailing garbage are all rejected. */
#ifndef LT_IO_JSON_H
#define LT_IO_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_DEPTH 64

typedef enum json_kind { JSON_NULL, JSON_BOOL, JSON_NUM, JSON_STR, JSON_ARR, JSON_OBJ } json_kind;

typedef struct json {
    json_kind kind;
    bool b;            /* JSON_BOOL */
    bool is_uint;      /* JSON_NUM written as a plain non-negative integer that fits */
    uint64_t u;        /* its value when is_uint */
    double num;        /* JSON_NUM */
    char *str;         /* JSON_STR: NUL-terminated UTF-8 (may contain \u0000 as NUL: see len) */
    size_t len;        /* JSON_STR: length in bytes */
    int n;             /* JSON_ARR / JSON_OBJ: number of items */
    struct json *items;
    char **keys;       /* JSON_OBJ: n keys, in file order */
} json;

/* Parses text[0..len) into *out. Returns 0, or -1 with a message (naming the
 * byte offset) in err; no lazytensor error is set except on OOM. On success
 * the caller owns *out and frees it with json_free. */
int json_parse(const char *text, size_t len, json *out, char *err, size_t errn);
void json_free(json *v);
/* The value of `key` in an object, or NULL. Borrowed. */
const json *json_get(const json *obj, const char *key);

/* 1 if s is NUL-terminated valid UTF-8 (what a JSON string must hold). */
bool json_utf8_valid(const char *s);

/* Appends s as a quoted JSON string to a growing buffer (core_realloc).
 * Returns 0, or -1 on OOM (error set). */
typedef struct json_buf {
    char *p;
    size_t len, cap;
} json_buf;
int json_buf_put(json_buf *b, const char *s, size_t n);
int json_buf_str(json_buf *b, const char *s);
int json_buf_printf(json_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
