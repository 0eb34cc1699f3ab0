/* Reference gather/scatter_add and index_select/index_add (embedding is
 * index_select on dim 0). ia: [dim]. Indices are int64 or int32; one
 * outside [0, size) is reported (exec_index_error: the sync fails) and
 * reads 0 (gathers) or is skipped (scatters) meanwhile. */
#include "ref_nn.h"

static void strides_of(int nd, const int64_t *shape, int64_t *st) {
    int64_t s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        st[d] = s;
        s *= shape[d];
    }
}

/* out[i] += src[j], in the element type of out. */
static void add_elem(void *out, lt_dtype od, int64_t i, const ref_arg *src, int64_t j) {
    if (dtype_is_float(od)) st_f(out, od, i, ld_f(out, od, i) + ld_f(src->data, src->dtype, j));
    else st_i(out, od, i, (int64_t)((uint64_t)ld_i(out, od, i) + (uint64_t)ld_i(src->data, src->dtype, j)));
}

/* Walks the index tensor's elements; for each, yields the offset into the
 * indexed tensor `t` (k = -1 if the index is out of range) and the offset
 * into a tensor of shape `s` at the same coordinates (src of a scatter). */
#define INDEX_FOR(ix, dim, tnd, tshape, sshape, ...)                                          \
    do {                                                                                      \
        int nd_ = (ix)->ndim;                                                                 \
        int64_t tst_[LT_MAX_DIMS] = {0}, sst_[LT_MAX_DIMS] = {0}, c_[LT_MAX_DIMS] = {0};      \
        strides_of((tnd), (tshape), tst_);                                                    \
        strides_of(nd_, (sshape), sst_);                                                      \
        for (int64_t e = 0; e < (ix)->numel; e++) {                                           \
            int64_t j = ld_i((ix)->data, (ix)->dtype, e), k = 0, s = 0;                       \
            for (int d_ = 0; d_ < nd_; d_++) {                                                \
                k += (d_ == (dim) ? 0 : c_[d_]) * tst_[d_];                                   \
                s += c_[d_] * sst_[d_];                                                       \
            }                                                                                 \
            int64_t lim_ = (tnd) ? (tshape)[(dim)] : 1;                                       \
            k = j >= 0 && j < lim_ ? k + j * ((tnd) ? tst_[(dim)] : 1) : -1;                  \
            if (LT_UNLIKELY(k < 0)) exec_index_error(y->op, j, lim_);                          \
            __VA_ARGS__;                                                                      \
            for (int d_ = nd_ - 1; d_ >= 0; d_--) {                                           \
                if (++c_[d_] < (ix)->shape[d_]) break;                                        \
                c_[d_] = 0;                                                                   \
            }                                                                                 \
        }                                                                                     \
    } while (0)

/* in: a, index (same ndim, int64) -> index's shape:
 * out[i..] = a[i.. with i_dim := index[i..]]. */
void ref_gather(const gnode *y, const ref_arg *in, void *out) {
    const ref_arg *a = &in[0], *ix = &in[1];
    int dim = (int)y->ia[0];
    size_t es = dtype_size((lt_dtype)y->dtype);
    INDEX_FOR(ix, dim, a->ndim, a->shape, ix->shape, {
        (void)s;
        if (k >= 0) memcpy((char *)out + (size_t)e * es, (const char *)a->data + (size_t)k * es, es);
        else memset((char *)out + (size_t)e * es, 0, es);
    });
}

/* in: base, index, src (index.size(d) <= src.size(d)) -> base's shape:
 * out = base; out[i.. with i_dim := index[i..]] += src[i..]. */
void ref_scatter_add(const gnode *y, const ref_arg *in, void *out) {
    const ref_arg *ix = &in[1], *src = &in[2];
    memcpy(out, in[0].data, (size_t)y->numel * dtype_size((lt_dtype)y->dtype));
    INDEX_FOR(ix, (int)y->ia[0], y->ndim, y->shape, src->shape, {
        if (k >= 0) add_elem(out, (lt_dtype)y->dtype, k, src, s);
    });
}

/* Views a tensor of `t`'s shape around `dim` as (outer, size, inner). */
static void split3(int nd, const int64_t *shape, int dim, int64_t *outer, int64_t *size, int64_t *inner) {
    *outer = *inner = 1;
    *size = nd ? shape[dim] : 1;
    for (int d = 0; d < dim; d++) *outer *= shape[d];
    for (int d = dim + 1; d < nd; d++) *inner *= shape[d];
}

/* INDEX_SELECT in: a (outer, S, inner), index (M) -> (outer, M, inner);
 * a 0-d a gives a 0-d result from the first index (PyTorch; all of them are
 * checked; none: 0, where PyTorch returns uninitialized memory).
 * EMBEDDING in: weight (V, D), indices (...) -> (..., D): the same with
 * dim 0 and the indices flattened (its ia is empty). */
void ref_index_select(const gnode *y, const ref_arg *in, void *out) {
    const ref_arg *a = &in[0], *ix = &in[1];
    int dim = y->op == LT_OP_EMBEDDING ? 0 : (int)y->ia[0];
    int wrap_neg = y->op == LT_OP_INDEX_SELECT && y->nia > 2 && y->ia[2]; /* lt_index: negatives count from the end */
    int64_t outer, S, inner, M = ix->numel, Mo = a->ndim || M == 0 ? M : 1;
    split3(a->ndim, a->shape, dim, &outer, &S, &inner);
    size_t es = dtype_size((lt_dtype)y->dtype), row = (size_t)inner * es;
    if (!a->ndim && !M) memset(out, 0, es);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t m = 0; m < M; m++) {
            int64_t j0 = ld_i(ix->data, ix->dtype, m), j = wrap_neg && j0 < 0 ? j0 + S : j0;
            int ok = j >= 0 && j < S;
            if (LT_UNLIKELY(!ok)) exec_index_error(y->op, j0, S);
            if (m >= Mo) continue;
            char *dst = (char *)out + (size_t)((o * Mo + m) * inner) * es;
            if (LT_LIKELY(ok)) memcpy(dst, (const char *)a->data + (size_t)((o * S + j) * inner) * es, row);
            else memset(dst, 0, row);
        }
}

/* in: base (outer, S, inner), index (M, or any shape read flat), src
 * (outer, M, inner) -> base's shape: out = base; out[o, index[m], :] += src[o, m, :]. */
void ref_index_add(const gnode *y, const ref_arg *in, void *out) {
    const ref_arg *ix = &in[1], *src = &in[2];
    int64_t outer, S, inner, M = ix->numel;
    split3(y->ndim, y->shape, (int)y->ia[0], &outer, &S, &inner);
    int wrap_neg = y->nia > 1 && y->ia[1]; /* lt_index_put_add: negatives count from the end */
    memcpy(out, in[0].data, (size_t)y->numel * dtype_size((lt_dtype)y->dtype));
    for (int64_t o = 0; o < outer; o++)
        for (int64_t m = 0; m < M; m++) {
            int64_t j0 = ld_i(ix->data, ix->dtype, m), j = wrap_neg && j0 < 0 ? j0 + S : j0;
            if (LT_UNLIKELY(j < 0 || j >= S)) {
                exec_index_error(y->op, j0, S);
                continue;
            }
            for (int64_t k = 0; k < inner; k++)
                add_elem(out, (lt_dtype)y->dtype, (o * S + j) * inner + k, src, (o * M + m) * inner + k);
        }
}
