/* conv2d of integer tensors (int64, int32, uint8), as torch's CPU kernel
 * computes them: exact sums that wrap at the dtype's width. Against a
 * direct loop here (sums modulo 2^64, narrowed at the end), on both
 * backends (the cpu one hands integers to the reference kernel); bool is
 * refused. */
#include "harness.h"

#include "exec/exec.h"

#include <stdint.h>

static uint64_t lcg = 777;
static int64_t irand(int64_t lo, int64_t hi) { /* [lo, hi] */
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (int64_t)((lcg >> 33) % (uint64_t)(hi - lo + 1));
}

/* v stored in d and read back (int32 and uint8 keep the low bits). */
static int64_t narrow(lt_dtype d, uint64_t v) {
    return d == LT_I32 ? (int32_t)(uint32_t)v : d == LT_U8 ? (uint8_t)v : (int64_t)v;
}

static lt_tensor *mk(lt_dtype d, int nd, const int64_t *s, const int64_t *v, int64_t n) {
    unsigned char *raw = malloc((size_t)n * 8 + 1);
    for (int64_t i = 0; i < n; i++) {
        if (d == LT_I64) ((int64_t *)raw)[i] = v[i];
        else if (d == LT_I32) ((int32_t *)raw)[i] = (int32_t)v[i];
        else raw[i] = (uint8_t)v[i];
    }
    lt_tensor *t = lt_from_data(raw, d, nd, s);
    free(raw);
    return t;
}

typedef struct {
    int64_t xs[4], ws[4], stride[2], pad[2], dil[2], groups;
    int bias;
} ccase;

static void run_case(const ccase *k, lt_dtype d, int big, int bk) {
    int64_t nx = k->xs[0] * k->xs[1] * k->xs[2] * k->xs[3], nw = k->ws[0] * k->ws[1] * k->ws[2] * k->ws[3];
    int64_t *x = malloc(sizeof *x * (size_t)nx), *w = malloc(sizeof *w * (size_t)nw), b[16];
    /* big: values whose products and sums overflow the dtype (they wrap) */
    int64_t lim = d == LT_U8 ? 255 : big ? (d == LT_I32 ? INT32_MAX : INT64_MAX / 4) : 9;
    int64_t lo = d == LT_U8 ? 0 : -lim;
    for (int64_t i = 0; i < nx; i++) x[i] = narrow(d, (uint64_t)irand(lo, lim));
    for (int64_t i = 0; i < nw; i++) w[i] = narrow(d, (uint64_t)irand(lo, lim));
    for (int i = 0; i < 16; i++) b[i] = narrow(d, (uint64_t)irand(lo, lim));
    int64_t ys[4] = {k->xs[0], k->ws[0], 0, 0};
    for (int i = 0; i < 2; i++)
        ys[2 + i] = (k->xs[2 + i] + 2 * k->pad[i] - k->dil[i] * (k->ws[2 + i] - 1) - 1) / k->stride[i] + 1;
    int64_t ny = ys[0] * ys[1] * ys[2] * ys[3], Cg = k->ws[1], Og = k->ws[0] / k->groups;
    double *e = malloc(sizeof *e * (size_t)ny);
    for (int64_t n = 0; n < ys[0]; n++)
        for (int64_t o = 0; o < ys[1]; o++)
            for (int64_t i = 0; i < ys[2]; i++)
                for (int64_t j = 0; j < ys[3]; j++) {
                    uint64_t s = k->bias ? (uint64_t)b[o] : 0;
                    for (int64_t c = 0; c < Cg; c++)
                        for (int64_t p = 0; p < k->ws[2]; p++)
                            for (int64_t q = 0; q < k->ws[3]; q++) {
                                int64_t h = i * k->stride[0] - k->pad[0] + p * k->dil[0];
                                int64_t v = j * k->stride[1] - k->pad[1] + q * k->dil[1];
                                if (h < 0 || h >= k->xs[2] || v < 0 || v >= k->xs[3]) continue;
                                int64_t ci = (o / Og) * Cg + c;
                                s += (uint64_t)x[((n * k->xs[1] + ci) * k->xs[2] + h) * k->xs[3] + v] *
                                     (uint64_t)w[((o * Cg + c) * k->ws[2] + p) * k->ws[3] + q];
                            }
                    e[((n * ys[1] + o) * ys[2] + i) * ys[3] + j] = (double)narrow(d, s);
                }
    exec_set_backend(bk);
    int64_t bs[1] = {k->ws[0]};
    lt_tensor *X = mk(d, 4, k->xs, x, nx), *W = mk(d, 4, k->ws, w, nw), *B = k->bias ? mk(d, 1, bs, b, bs[0]) : NULL;
    lt_tensor *Y = lt_conv2d(X, W, B, k->stride, k->pad, k->dil, k->groups);
    CHECK_MSG(Y && lt_dtype_of(Y) == d, "conv2d %s: %s", lt_dtype_name(d), Y ? "wrong dtype" : lt_error_message());
    if (Y) {
        CHECK(lt_ndim(Y) == 4 && !memcmp(lt_shape(Y), ys, sizeof ys));
        /* int64 beyond 2^53 does not survive h_read's doubles: compare the raw values */
        if (d == LT_I64) {
            int64_t *got = malloc(sizeof *got * (size_t)ny);
            CHECK(lt_to_host(Y, got, sizeof *got * (size_t)ny) == 0);
            for (int64_t i = 0; i < ny; i++)
                if (got[i] != (int64_t)e[i] && (double)got[i] != e[i]) {
                    h_fail(__FILE__, __LINE__, "conv2d int64 element %lld: got %lld, expected %.17g", (long long)i,
                           (long long)got[i], e[i]);
                    break;
                }
            free(got);
        } else {
            h_expect(__FILE__, __LINE__, Y, e, ny, 0);
        }
    }
    exec_set_backend(-1);
    lt_free(Y), lt_free(X), lt_free(W), lt_free(B);
    free(x), free(w), free(e);
}

TEST(integer_conv2d_exact) {
    static const ccase K[] = {
        {{2, 4, 5, 6}, {6, 2, 3, 2}, {2, 1}, {1, 2}, {2, 1}, 2, 1},
        {{1, 3, 7, 7}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, 0},
        {{2, 2, 4, 5}, {2, 1, 1, 1}, {1, 2}, {0, 0}, {1, 1}, 2, 1},
    };
    static const lt_dtype D[] = {LT_I64, LT_I32, LT_U8};
    for (int bk = 0; bk < 2; bk++)
        for (size_t k = 0; k < sizeof K / sizeof *K; k++)
            for (int d = 0; d < 3; d++)
                for (int big = 0; big < 2; big++) run_case(&K[k], D[d], big, bk);
}

/* The int64 case exact beyond double's 53 bits: 2^40 * 2^30 summed nine
 * times wraps modulo 2^64 to 0 (what torch's CPU kernel gives). */
TEST(integer_conv2d_wraps) {
    int64_t s[4] = {1, 1, 3, 3}, xv[9], wv[9];
    for (int i = 0; i < 9; i++) xv[i] = (int64_t)1 << 40, wv[i] = ((int64_t)1 << 30) + (i == 0);
    lt_tensor *X = mk(LT_I64, 4, s, xv, 9), *W = mk(LT_I64, 4, s, wv, 9);
    lt_tensor *Y = lt_conv2d(X, W, NULL, NULL, NULL, NULL, 1);
    int64_t got = -1;
    CHECK(Y && lt_to_host(Y, &got, sizeof got) == 0);
    CHECK_MSG(got == (int64_t)1 << 40, "got %lld", (long long)got);
    lt_free(Y), lt_free(X), lt_free(W);
}

TEST(bool_refused) {
    int64_t s[4] = {1, 1, 3, 3};
    lt_tensor *X = lt_ones(LT_BOOL, 4, s), *Y = lt_conv2d(X, X, NULL, NULL, NULL, NULL, 1);
    CHECK(!Y && lt_error() == LT_ERR_DTYPE && strstr(lt_error_message(), "'x'"));
    lt_clear_error();
    lt_free(X);
}

int main(void) {
    RUN(integer_conv2d_exact);
    RUN(integer_conv2d_wraps);
    RUN(bool_refused);
    return h_report();
}
