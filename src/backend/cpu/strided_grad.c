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

/* The window as add_rows reads it: g's shape, the strides and offset in
 * out, the rows' length and stride. */
typedef struct sgeom {
    int nd;
    const int64_t *shape, *str;
    int64_t off, inner, s;
} sgeom;

#define ISA_EACH "strided_grad_body.h"
#include "isa_copies.h"

typedef void (*add_rows_fn)(const sgeom *, int, const void *, void *, int64_t, int64_t);

static add_rows_fn add_rows(void) {
#ifdef HAVE_ISA
    switch (core_isa()) {
    case 2: return add_rows_avx512;
    case 1: return add_rows_avx2;
    default: break;
    }
#endif
    return add_rows_base;
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
    sgeom q = {nd, shape, str, y->ia[nd], nd ? shape[nd - 1] : 1, nd ? str[nd - 1] : 1};
    int64_t rows = gn->numel / q.inner;
    add_rows_fn f = add_rows();
#pragma omp parallel for schedule(static)
    for (int64_t r0 = 0; r0 < rows; r0 += 256) /* blocks of rows: one mixed-radix division per block */
        f(&q, bf16, g, out, r0, r0 + 256 < rows ? r0 + 256 : rows);
    return 0;
}
