/* Reference data movement and matmul: as_strided, its scatter, cat. */
#include "ref.h"

/* Visits every element of a strided window; calls f(linear i, offset). */
#define FOR_STRIDED(nd, shape, strides, offset, numel, BODY)                    \
    do {                                                                        \
        int64_t idx_[LT_MAX_DIMS] = {0}, off = (offset);                        \
        for (int64_t i = 0; i < (numel); i++) {                                 \
            BODY;                                                               \
            for (int d_ = (nd) - 1; d_ >= 0; d_--) {                            \
                idx_[d_]++;                                                     \
                off += (strides)[d_];                                           \
                if (idx_[d_] < (shape)[d_]) break;                              \
                off -= (strides)[d_] * idx_[d_];                                \
                idx_[d_] = 0;                                                   \
            }                                                                   \
        }                                                                       \
    } while (0)

/* ia: [strides..., offset] over the operand's flat contiguous layout. */
void ref_as_strided(const gnode *y, const ref_arg *in, void *out) {
    size_t es = dtype_size((lt_dtype)y->dtype);
    const char *src = in[0].data;
    FOR_STRIDED(y->ndim, y->shape, y->ia, y->ia[y->ndim], y->numel,
                memcpy((char *)out + (size_t)i * es, src + (size_t)off * es, es));
}

/* out = in[0] with the window (in[1].shape, ia strides, offset) := in[1]. */
void ref_as_strided_scatter(const gnode *y, const ref_arg *in, void *out) {
    size_t es = dtype_size((lt_dtype)y->dtype);
    memcpy(out, in[0].data, (size_t)y->numel * es);
    const char *src = in[1].data;
    FOR_STRIDED(in[1].ndim, in[1].shape, y->ia, y->ia[in[1].ndim], in[1].numel,
                memcpy((char *)out + (size_t)off * es, src + (size_t)i * es, es));
}

/* ia: [mask of the flipped dims]. Output element by element: its source
 * index has the flipped coordinates mirrored. */
void ref_flip(const gnode *y, const ref_arg *in, void *out) {
    int64_t idx[LT_MAX_DIMS] = {0};
    for (int64_t o = 0; o < y->numel; o++) {
        int64_t src = 0;
        for (int d = 0; d < y->ndim; d++)
            src = src * y->shape[d] + ((y->ia[0] >> d) & 1 ? y->shape[d] - 1 - idx[d] : idx[d]);
        cp_elem(out, (lt_dtype)y->dtype, o, in[0].data, in[0].dtype, src);
        for (int d = y->ndim - 1; d >= 0; d--) {
            if (++idx[d] < y->shape[d]) break;
            idx[d] = 0;
        }
    }
}

/* ia: [dim]. Inputs may differ in dtype; each element converts. */
void ref_cat(const gnode *y, const ref_arg *in, void *out) {
    int dim = (int)y->ia[0];
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < dim; d++) outer *= y->shape[d];
    for (int d = dim + 1; d < y->ndim; d++) inner *= y->shape[d];
    int64_t total = y->shape[dim], at = 0;
    for (int j = 0; j < y->nin; j++) {
        int64_t nj = in[j].shape[dim];
        for (int64_t o = 0; o < outer; o++)
            for (int64_t k = 0; k < nj * inner; k++)
                cp_elem(out, (lt_dtype)y->dtype, (o * total + at) * inner + k, in[j].data, in[j].dtype, o * nj * inner + k);
        at += nj;
    }
}

/* torch.matmul: 1-D operands gain a dim that the output drops; batch dims
 * broadcast. Accumulates in double (floats) or int64. */
void ref_matmul(const gnode *y, const ref_arg *in, void *out) {
    const ref_arg *a = &in[0], *b = &in[1];
    matmul_geom g;
    exec_matmul_geom(a->ndim, a->shape, b->ndim, b->shape, &g);
    int64_t n = g.n, k = g.k, m = g.m, nbatch = g.nbatch;
    int fl = dtype_is_float((lt_dtype)y->dtype);
    for (int64_t t = 0; t < nbatch; t++) {
        int64_t oa, ob;
        exec_matmul_batch(&g, t, &oa, &ob);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < m; j++) {
                double fs = 0;
                int64_t is = 0;
                for (int64_t p = 0; p < k; p++) {
                    if (fl) fs += ld_f(a->data, a->dtype, oa + i * k + p) * ld_f(b->data, b->dtype, ob + p * m + j);
                    else is = (int64_t)((uint64_t)is + (uint64_t)ld_i(a->data, a->dtype, oa + i * k + p) *
                                                          (uint64_t)ld_i(b->data, b->dtype, ob + p * m + j));
                }
                int64_t o = t * n * m + i * m + j;
                if (fl) st_f(out, (lt_dtype)y->dtype, o, fs);
                else st_i(out, (lt_dtype)y->dtype, o, is);
            }
    }
}
