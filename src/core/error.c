/* Thread-local error state behind lt_error(). */
#include "core.h"

#include <stdatomic.h>

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

static atomic_int k_state; /* 0 free, 1 being written, 2 reported */
static char k_msg[512];

void err_kernel(const char *fmt, ...) {
    int expect = 0;
    if (!atomic_compare_exchange_strong(&k_state, &expect, 1)) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k_msg, sizeof k_msg, fmt, ap);
    va_end(ap);
    atomic_store(&k_state, 2);
}

int err_kernel_pending(void) { return atomic_load_explicit(&k_state, memory_order_relaxed) != 0; }

int err_kernel_take(void) {
    if (atomic_load(&k_state) != 2) return 0; /* a writer is done before its parallel region ends */
    err_set(LT_ERR_ARG, "%s", k_msg);
    atomic_store(&k_state, 0);
    return -1;
}

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
