/* Layer norm's row moments in float32, the fast copy of the reference's
 * ref_row_moments (src/backend/ref/ref_moments.c: PyTorch 1.13's
 * RowwiseMoments, operation for operation, so that a row overflowing in
 * float is NaN as there) and equal to it to the bit (test_layer_norm). The
 * loops are in ln_moments_body.h, compiled per instruction set. */
#include "cpu.h"

#include "simd.h"

#define CHUNK 16
#define MAX_DEPTH 64
#define LN_ROWS CPU_LN_ROWS

/* 8 floats as one value (a ymm, two xmm), any alignment. */
typedef float v8 __attribute__((vector_size(32), aligned(4), may_alias));
#define V8(p) (*(const v8 *)(p))

static const float ln_rc[CHUNK] = {1.0f / 1,  1.0f / 2,  1.0f / 3,  1.0f / 4,  1.0f / 5,  1.0f / 6,
                                   1.0f / 7,  1.0f / 8,  1.0f / 9,  1.0f / 10, 1.0f / 11, 1.0f / 12,
                                   1.0f / 13, 1.0f / 14, 1.0f / 15, 1.0f / 16};

static int64_t ln_depth(int64_t chunks) {
    int64_t d = 1;
    while (d < 63 && ((int64_t)1 << d) < chunks) d++;
    return d;
}

#define ISA_EACH "ln_moments_body.h"
#include "isa_copies.h"

void cpu_ln_moments(const float *x, int64_t rows, int64_t n, float *mean, float *var) {
    for (int64_t r = 0; r < rows; r += LN_ROWS) {
        const float *xs[LN_ROWS]; /* past the last row: the last row again, its results dropped */
        float m[LN_ROWS], v[LN_ROWS];
        for (int k = 0; k < LN_ROWS; k++) xs[k] = x + (r + k < rows ? r + k : rows - 1) * n;
#ifdef HAVE_ISA
        switch (core_isa()) {
        case 2: rows_avx512(xs, n, m, v); break;
        case 1: rows_avx2(xs, n, m, v); break;
        default: rows_base(xs, n, m, v); break;
        }
#else
        rows_base(xs, n, m, v);
#endif
        for (int k = 0; k < LN_ROWS && r + k < rows; k++) mean[r + k] = m[k], var[r + k] = v[k];
    }
}
