/* LT_DISPATCH_TRACE=1 (DESIGN 8): each call prints the layers it passed and
 * the IR nodes it created. Checks the hop count of an in-place op on a plain
 * tensor (one node) and through a slice (read, op, scatter: three nodes; two
 * when a write went through the same window just before). */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <unistd.h>

static FILE *capture;
static int saved_fd = -1;

/* Redirects stderr into a temporary file until end_capture(). */
static void begin_capture(void) {
    fflush(stderr);
    capture = tmpfile();
    saved_fd = dup(2);
    dup2(fileno(capture), 2);
}

/* Restores stderr; returns what was written (malloc'd). */
static char *end_capture(void) {
    fflush(stderr);
    dup2(saved_fd, 2);
    close(saved_fd);
    long n = ftell(capture);
    char *s = malloc((size_t)(n > 0 ? n : 0) + 1);
    rewind(capture);
    size_t got = fread(s, 1, (size_t)(n > 0 ? n : 0), capture);
    s[got] = 0;
    fclose(capture);
    return s;
}

/* The k-th (0-based) trace line of function `fn`, copied into buf, or NULL. */
static const char *line_of(const char *out, const char *fn, int k, char *buf, size_t n) {
    char key[64];
    snprintf(key, sizeof key, "[dispatch] %s: ", fn);
    const char *p = strstr(out, key);
    for (; p && k > 0; k--) p = strstr(p + 1, key);
    if (!p) return NULL;
    size_t len = strcspn(p, "\n");
    if (len >= n) len = n - 1;
    memcpy(buf, p, len);
    buf[len] = 0;
    return buf;
}

TEST(inplace_plain_and_through_slice) {
    int64_t s[2] = {4, 3};
    lt_tensor *a = lt_zeros(LT_F32, 2, s), *g = lt_ones(LT_F32, 2, s);
    lt_add_(a, g); /* a is now pending: the next op on it needs no DATA leaf */
    lt_tensor *sl = lt_slice(a, 0, 1, 3, 1);
    lt_tensor *h = lt_ones(LT_F32, 2, (int64_t[2]){2, 3});
    lt_add_(h, h); /* h pending too */
    begin_capture();
    lt_lerp_(a, g, 0.1);
    lt_tensor *v = lt_select(a, 1, 0);
    lt_lerp_(sl, h, 0.5);
    char *out = end_capture();
    char b1[512], b2[512], b3[512];
    const char *plain = line_of(out, "lt_lerp_", 0, b1, sizeof b1);
    CHECK_MSG(plain && strstr(plain, "api > func[plain] > autograd[off] > ir +1: LERP#"),
              "plain in-place should be one LERP node: %s", plain ? plain : out);
    const char *view = line_of(out, "lt_lerp_", 1, b2, sizeof b2);
    CHECK_MSG(view && strstr(view, "func[view: read AS_STRIDED, write AS_STRIDED_SCATTER]") &&
                  strstr(view, "ir +3: AS_STRIDED#") && strstr(view, " LERP#") && strstr(view, " AS_STRIDED_SCATTER#"),
              "through a slice: read, op, scatter: %s", view ? view : out);
    const char *sel = line_of(out, "lt_select", 0, b3, sizeof b3);
    CHECK_MSG(sel && strstr(sel, "func[view: alias, no node]") && strstr(sel, "ir +0"), "a view op makes no node: %s",
              sel ? sel : out);
    free(out);
    lt_free(v);
    lt_free(h);
    lt_free(sl);
    lt_free(g);
    lt_free(a);
}

/* A new alias of the window the last write went through reads that write's
 * value: no AS_STRIDED node (x[0:32].lerp_ with a new view each call makes
 * the nodes a kept view makes). Another window still reads. Values checked. */
TEST(fresh_view_of_written_window) {
    lt_tensor *a = lt_arange(0, 12, 1, LT_F32), *g = lt_full(1, LT_F32, 1, (int64_t[1]){4});
    lt_tensor *w1 = lt_slice(a, 0, 2, 6, 1);
    lt_lerp_(w1, g, 0.5); /* a[2:6] = (a[2:6] + 1) / 2 */
    lt_free(w1);
    begin_capture();
    lt_tensor *w2 = lt_slice(a, 0, 2, 6, 1);
    lt_lerp_(w2, g, 0.5); /* same window, a new handle */
    lt_tensor *w3 = lt_slice(a, 0, 3, 7, 1);
    lt_lerp_(w3, g, 0.5); /* another window */
    char *out = end_capture();
    char b1[512], b2[512];
    const char *same = line_of(out, "lt_lerp_", 0, b1, sizeof b1);
    CHECK_MSG(same && strstr(same, "func[view: write AS_STRIDED_SCATTER]") && strstr(same, "ir +2: LERP#") &&
                  strstr(same, " AS_STRIDED_SCATTER#"),
              "the written window again: op and scatter only: %s", same ? same : out);
    const char *other = line_of(out, "lt_lerp_", 1, b2, sizeof b2);
    CHECK_MSG(other && strstr(other, "ir +3: AS_STRIDED#"), "another window reads: %s", other ? other : out);
    double want[12];
    for (int i = 0; i < 12; i++) want[i] = i;
    for (int k = 0; k < 2; k++)
        for (int i = 2; i < 6; i++) want[i] += 0.5 * (1 - want[i]);
    for (int i = 3; i < 7; i++) want[i] += 0.5 * (1 - want[i]);
    h_expect(__FILE__, __LINE__, a, want, 12, 1e-6);
    free(out);
    lt_free(w3);
    lt_free(w2);
    lt_free(g);
    lt_free(a);
}

int main(void) {
    /* Read once at initialization: set before the first call. */
    setenv("LT_DISPATCH_TRACE", "1", 1);
    unsetenv("LT_EAGER");
    RUN(inplace_plain_and_through_slice);
    RUN(fresh_view_of_written_window);
    return h_report();
}
