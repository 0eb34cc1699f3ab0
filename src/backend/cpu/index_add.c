/* Fast float32 INDEX_ADD (base (outer, S, inner), index (M), src (outer,
 * M, inner)): out = base; out[o, index[m], :] += src[o, m, :], as the
 * reference (src/backend/ref/ref_nn_index.c). It is an embedding's
 * backward: a GPT's token and position tables take B T rows of its
 * activation gradient each, which the reference's element loop added at
 * 0.4 G elements/s (4-6 ms of a GPT step).
 * The indices are checked in one serial pass first (a bad one is reported
 * and its row skipped, as the reference does). Then the threads split the
 * inner dim, not the rows: every element still receives its additions in
 * the order of m, so the sums are the reference's, bit for bit, whatever
 * repeats the index holds (a float sum in double, rounded once, is the
 * float sum). */
#include "cpu.h"

#include "../../exec/exec.h"
#include "simd.h"

#include <string.h>

int cpu_index_add_run(const exec_graph *g, const gnode *y, void *const *in, void *out) {
    const gnode *base = &g->nodes[y->in[0]], *ix = &g->nodes[y->in[1]], *src = &g->nodes[y->in[2]];
    lt_dtype it = (lt_dtype)ix->dtype;
    if (y->dtype != LT_F32 || base->dtype != LT_F32 || src->dtype != LT_F32 || (it != LT_I64 && it != LT_I32))
        return -1;
    int dim = (int)y->ia[0], wrap = y->nia > 1 && y->ia[1];
    int64_t outer = 1, inner = 1, S = y->ndim ? y->shape[dim] : 1, M = ix->numel;
    for (int d = 0; d < dim; d++) outer *= y->shape[d];
    for (int d = dim + 1; d < y->ndim; d++) inner *= y->shape[d];
    int64_t *rows = core_malloc((size_t)(M ? M : 1) * sizeof *rows);
    if (!rows) return -1;
    for (int64_t m = 0; m < M; m++) { /* wrap: negatives count from the end */
        int64_t j0 = it == LT_I32 ? ((const int32_t *)in[1])[m] : ((const int64_t *)in[1])[m];
        int64_t j = wrap && j0 < 0 ? j0 + S : j0;
        if (LT_UNLIKELY(j < 0 || j >= S)) {
            exec_index_error(y->op, j0, S);
            j = -1;
        }
        rows[m] = j;
    }
    if (out != in[0]) memcpy(out, in[0], (size_t)y->numel * sizeof(float));
    const float *s = in[2];
    float *o = out;
    /* Column blocks of 64 floats (whole cache lines), one per task. */
    int64_t blocks = (inner + 63) / 64;
#pragma omp parallel for schedule(static) if (outer * M * inner > 32768)
    for (int64_t t = 0; t < outer * blocks; t++) {
        int64_t oi = t / blocks, c0 = t % blocks * 64, c1 = c0 + 64 < inner ? c0 + 64 : inner;
        float *ob = o + oi * S * inner;
        const float *sb = s + oi * M * inner;
        for (int64_t m = 0; m < M; m++) {
            if (rows[m] < 0) continue;
            float *dst = ob + rows[m] * inner;
            const float *add = sb + m * inner;
            OMP_SIMD for (int64_t c = c0; c < c1; c++) dst[c] += add[c];
        }
    }
    core_free(rows);
    return 0;
}
