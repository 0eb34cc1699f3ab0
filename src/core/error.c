/* Thread-local error state behind lt_error(). */
#include "core.h"

static _Thread_local int t_code;
static _Thread_local char t_msg[512];

void *err_set(int code, const char *fmt, ...) {
    if (t_code != LT_OK) return NULL; /* the first error wins */
    t_code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t_msg, sizeof t_msg, fmt, ap);
    va_end(ap);
    return NULL;
}

int err_code(void) { return t_code; }

int lt_error(void) { return t_code; }
const char *lt_error_message(void) { return t_code ? t_msg : ""; }
void lt_clear_error(void) {
    t_code = LT_OK;
    t_msg[0] = 0;
}

_Noreturn void core_panic(const char *file, int line, const char *what) {
    fprintf(stderr, "lazytensor: internal error at %s:%d: %s\n", file, line, what);
    abort();
}
