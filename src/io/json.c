/* Strict JSON: recursive descent over a byte range, bounded depth. */
#include "json.h"

#include "../core/core.h"

#include <stdarg.h>

typedef struct parser {
    const char *s;
    size_t i, n;
    char *err;
    size_t errn;
    int failed;
} parser;

static int fail(parser *p, const char *what) {
    if (!p->failed) snprintf(p->err, p->errn, "%s at byte %zu", what, p->i);
    p->failed = 1;
    return -1;
}

static void skip_ws(parser *p) {
    while (p->i < p->n) {
        char c = p->s[p->i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->i++;
    }
}

static int hex4(parser *p, uint32_t *out) {
    if (p->n - p->i < 4) return fail(p, "truncated \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; k++) {
        char c = p->s[p->i++];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
        else return fail(p, "bad hex digit in \\u escape");
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *d, uint32_t cp) {
    if (cp < 0x80) { d[0] = (char)cp; return 1; }
    if (cp < 0x800) { d[0] = (char)(0xC0 | (cp >> 6)); d[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        d[0] = (char)(0xE0 | (cp >> 12)); d[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        d[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    d[0] = (char)(0xF0 | (cp >> 18)); d[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    d[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); d[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Length of a valid UTF-8 sequence starting at s[0] (n bytes available), or 0
 * (overlongs, surrogates and code points past U+10FFFF are invalid). */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len;
    uint32_t cp, min;
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; min = 0x80; }
    else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; min = 0x800; }
    else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; min = 0x10000; }
    else return 0;
    if (n < len) return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

bool json_utf8_valid(const char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t l = utf8_len((const unsigned char *)s + i, n - i);
        if (!l) return false;
        i += l;
    }
    return true;
}

/* Parses a string at p->i (the opening quote) into a new NUL-terminated
 * buffer. The decoded form is never longer than the source. */
static int parse_string(parser *p, char **out, size_t *outlen) {
    p->i++; /* opening quote */
    size_t start = p->i, end = start;
    while (end < p->n && p->s[end] != '"') end += (p->s[end] == '\\') ? 2 : 1;
    if (end >= p->n) return fail(p, "unterminated string");
    char *d = core_malloc(end - start + 1);
    if (!d) return fail(p, "out of memory");
    size_t k = 0;
    while (p->i < end) {
        unsigned char c = (unsigned char)p->s[p->i];
        if (c < 0x20) { core_free(d); return fail(p, "control character in string"); }
        if (c != '\\') {
            size_t l = utf8_len((const unsigned char *)p->s + p->i, end - p->i);
            if (!l) { core_free(d); return fail(p, "invalid UTF-8 in string"); }
            memcpy(d + k, p->s + p->i, l);
            k += l;
            p->i += l;
            continue;
        }
        p->i++;
        char e = p->s[p->i++];
        switch (e) {
        case '"': d[k++] = '"'; break;
        case '\\': d[k++] = '\\'; break;
        case '/': d[k++] = '/'; break;
        case 'b': d[k++] = '\b'; break;
        case 'f': d[k++] = '\f'; break;
        case 'n': d[k++] = '\n'; break;
        case 'r': d[k++] = '\r'; break;
        case 't': d[k++] = '\t'; break;
        case 'u': {
            uint32_t cp, lo;
            if (hex4(p, &cp)) { core_free(d); return -1; }
            if (cp >= 0xDC00 && cp <= 0xDFFF) { core_free(d); return fail(p, "lone low surrogate"); }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (p->i + 2 > end || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u') {
                    core_free(d);
                    return fail(p, "lone high surrogate");
                }
                p->i += 2;
                if (hex4(p, &lo)) { core_free(d); return -1; }
                if (lo < 0xDC00 || lo > 0xDFFF) { core_free(d); return fail(p, "bad surrogate pair"); }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            k += put_utf8(d + k, cp); /* \uXXXX is 6 source bytes, at most 3 out; pairs 12 -> 4 */
            break;
        }
        default: core_free(d); p->i--; return fail(p, "bad escape in string");
        }
    }
    d[k] = 0;
    p->i = end + 1;
    *out = d;
    *outlen = k;
    return 0;
}

static int parse_number(parser *p, json *v) {
    size_t st = p->i;
    int is_uint = 1;
    if (p->i < p->n && p->s[p->i] == '-') { p->i++; is_uint = 0; }
    if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9') return fail(p, "bad number");
    if (p->s[p->i] == '0' && p->i + 1 < p->n && p->s[p->i + 1] >= '0' && p->s[p->i + 1] <= '9')
        return fail(p, "leading zero in number");
    uint64_t u = 0;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
        unsigned dg = (unsigned)(p->s[p->i] - '0');
        if (u > (UINT64_MAX - dg) / 10) is_uint = 0;
        else u = u * 10 + dg;
        p->i++;
    }
    if (p->i < p->n && p->s[p->i] == '.') {
        p->i++;
        is_uint = 0;
        if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9') return fail(p, "bad fraction in number");
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
    }
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        p->i++;
        is_uint = 0;
        if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
        if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9') return fail(p, "bad exponent in number");
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
    }
    char buf[64];
    size_t l = p->i - st;
    if (l >= sizeof buf) l = sizeof buf - 1; /* only the double loses digits; u is exact */
    memcpy(buf, p->s + st, l);
    buf[l] = 0;
    v->kind = JSON_NUM;
    v->num = strtod(buf, NULL);
    v->is_uint = is_uint;
    v->u = is_uint ? u : 0;
    return 0;
}

static int parse_value(parser *p, json *v, int depth);

static int grow(parser *p, json *v, int *cap, int obj) {
    if (v->n < *cap) return 0;
    int nc = *cap ? *cap * 2 : 4;
    json *ni = core_realloc(v->items, (size_t)nc * sizeof *ni);
    if (!ni) return fail(p, "out of memory");
    v->items = ni;
    if (obj) {
        char **nk = core_realloc(v->keys, (size_t)nc * sizeof *nk);
        if (!nk) return fail(p, "out of memory");
        v->keys = nk;
    }
    *cap = nc;
    return 0;
}

static int parse_container(parser *p, json *v, int depth, int obj) {
    if (depth >= JSON_MAX_DEPTH) return fail(p, "nesting too deep");
    v->kind = obj ? JSON_OBJ : JSON_ARR;
    char close = obj ? '}' : ']';
    int cap = 0;
    p->i++;
    skip_ws(p);
    if (p->i < p->n && p->s[p->i] == close) { p->i++; return 0; }
    for (;;) {
        if (grow(p, v, &cap, obj)) return -1;
        char *key = NULL;
        if (obj) {
            skip_ws(p);
            if (p->i >= p->n || p->s[p->i] != '"') return fail(p, "expected a string key");
            size_t kl;
            if (parse_string(p, &key, &kl)) return -1;
            if (strlen(key) != kl) { core_free(key); return fail(p, "NUL in key"); }
            for (int k = 0; k < v->n; k++)
                if (!strcmp(v->keys[k], key)) { core_free(key); return fail(p, "duplicate key"); }
            skip_ws(p);
            if (p->i >= p->n || p->s[p->i] != ':') { core_free(key); return fail(p, "expected ':'"); }
            p->i++;
        }
        json *item = &v->items[v->n];
        memset(item, 0, sizeof *item);
        if (obj) v->keys[v->n] = key;
        v->n++; /* counted before parsing so json_free frees a partial item */
        if (parse_value(p, item, depth + 1)) return -1;
        skip_ws(p);
        if (p->i >= p->n) return fail(p, obj ? "unterminated object" : "unterminated array");
        char c = p->s[p->i++];
        if (c == close) return 0;
        if (c != ',') { p->i--; return fail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'"); }
    }
}

static int literal(parser *p, const char *word) {
    size_t l = strlen(word);
    if (p->n - p->i < l || memcmp(p->s + p->i, word, l)) return fail(p, "unexpected character");
    p->i += l;
    return 0;
}

static int parse_value(parser *p, json *v, int depth) {
    skip_ws(p);
    if (p->i >= p->n) return fail(p, "unexpected end of input");
    char c = p->s[p->i];
    switch (c) {
    case '{': return parse_container(p, v, depth, 1);
    case '[': return parse_container(p, v, depth, 0);
    case '"': v->kind = JSON_STR; return parse_string(p, &v->str, &v->len);
    case 't': v->kind = JSON_BOOL; v->b = true; return literal(p, "true");
    case 'f': v->kind = JSON_BOOL; v->b = false; return literal(p, "false");
    case 'n': v->kind = JSON_NULL; return literal(p, "null");
    default:
        if (c == '-' || (c >= '0' && c <= '9')) return parse_number(p, v);
        return fail(p, "unexpected character");
    }
}

int json_parse(const char *text, size_t len, json *out, char *err, size_t errn) {
    parser p = {text, 0, len, err, errn, 0};
    memset(out, 0, sizeof *out);
    if (errn) err[0] = 0;
    if (parse_value(&p, out, 0) == 0) {
        skip_ws(&p);
        if (p.i == p.n) return 0;
        fail(&p, "trailing characters after the value");
    }
    json_free(out);
    return -1;
}

void json_free(json *v) {
    if (!v) return;
    for (int k = 0; k < v->n; k++) {
        json_free(&v->items[k]);
        if (v->keys) core_free(v->keys[k]);
    }
    core_free(v->items);
    core_free(v->keys);
    core_free(v->str);
    memset(v, 0, sizeof *v);
}

const json *json_get(const json *obj, const char *key) {
    if (!obj || obj->kind != JSON_OBJ) return NULL;
    for (int k = 0; k < obj->n; k++)
        if (!strcmp(obj->keys[k], key)) return &obj->items[k];
    return NULL;
}

int json_buf_put(json_buf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->len + n + 1) nc *= 2;
        char *np = core_realloc(b->p, nc);
        if (!np) return -1;
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
    return 0;
}

int json_buf_str(json_buf *b, const char *s) {
    if (json_buf_put(b, "\"", 1)) return -1;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        char esc[8];
        if (*c == '"' || *c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*c;
            if (json_buf_put(b, esc, 2)) return -1;
        } else if (*c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *c);
            if (json_buf_put(b, esc, 6)) return -1;
        } else if (json_buf_put(b, (const char *)c, 1)) {
            return -1;
        }
    }
    return json_buf_put(b, "\"", 1);
}

int json_buf_printf(json_buf *b, const char *fmt, ...) {
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    LT_ASSERT(n >= 0 && (size_t)n < sizeof tmp); /* only short numeric fragments go through here */
    return json_buf_put(b, tmp, (size_t)n);
}
