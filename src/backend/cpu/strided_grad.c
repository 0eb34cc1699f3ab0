/* AS_STRIDED_BACKWARD on float32 or bfloat16 when the window is
 * one-to-one (slices, transposes, selects, narrows: every view autograd meets in a transformer,
 * such as q, k and v cut out of one qkv projection): zeros (or the base
 * operand, unless the output is in its place), then each element added at
 * its offset. No offset is hit twice, so the float sum of two terms is the
 * reference's double sum rounded (bfloat16 terms: exact in float, one
 * rounding), and rows run in parallel. Overlapping or expanded windows
 * keep the reference kernel (a sum per offset, in double). */
#include "cpu.h"
#include "simd.h"

#include <string.h>

/* Does no offset belong to two indices? The dims of size > 1, by stride,
 * each step at least the span of the smaller ones. */
static int one_to_one(int nd, const int64_t *shape, const int64_t *str) {
    int order[LT_MAX_DIMS], n = 0;
    for (int d = 0; d < nd; d++) {
        if (shape[d] == 1) continue;
        if (str[d] <= 0) return 0;
        int i = n++;
        for (; i > 0 && str[order[i - 1]] > str[d]; i--) order[i] = order[i - 1];
        order[i] = d;
    }
    int64_t span = 1; /* 1 + the largest offset the smaller dims reach */
    for (int i = 0; i < n; i++) {
        int d = order[i];
        if (str[d] < span) return 0;
        span += str[d] * (shape[d] - 1);
    }
    return 1;
}

int cpu_as_strided_backward(const gnode *y, const gnode *gn, const void *g, const void *base, void *out) {
    int nd = gn->ndim, bf16 = y->dtype == LT_BF16;
    const int64_t *str = y->ia, *shape = gn->shape;
    size_t es = bf16 ? 2 : 4;
    if (!one_to_one(nd, shape, str)) return -1;
    if (base != out)
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < y->numel; i += 4096) { /* zero bits: +0 in both dtypes */
            int64_t n = y->numel - i < 4096 ? y->numel - i : 4096;
            if (base) memcpy((char *)out + (size_t)i * es, (const char *)base + (size_t)i * es, (size_t)n * es);
            else memset((char *)out + (size_t)i * es, 0, (size_t)n * es);
        }
    if (gn->numel == 0) return 0;
    int64_t inner = nd ? shape[nd - 1] : 1, s = nd ? str[nd - 1] : 1, rows = gn->numel / inner;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        int64_t off = y->ia[nd], q = r; /* row r's offset: its index over the outer dims, mixed radix */
        for (int d = nd - 2; d >= 0; d--) {
            off += q % shape[d] * str[d];
            q /= shape[d];
        }
        if (bf16) { /* the sum in float, rounded: the reference's (0 + -0 is +0) */
            const uint16_t *c = (const uint16_t *)g + r * inner;
            uint16_t *w = (uint16_t *)out + off;
            if (s == 1) {
                OMP_SIMD for (int64_t j = 0; j < inner; j++) w[j] = bf16_from_f32(bf16_to_f32(w[j]) + bf16_to_f32(c[j]));
            } else {
                for (int64_t j = 0; j < inner; j++) w[j * s] = bf16_from_f32(bf16_to_f32(w[j * s]) + bf16_to_f32(c[j]));
            }
            continue;
        }
        const float *c = (const float *)g + r * inner;
        float *w = (float *)out + off;
        if (s == 1) {
            for (int64_t j = 0; j < inner; j++) w[j] += c[j];
        } else {
            for (int64_t j = 0; j < inner; j++) w[j * s] += c[j];
        }
    }
    return 0;
}
