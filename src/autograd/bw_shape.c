/* Backward of reductions, softmax, matmul, cat and the strided read/write
 * that every view lowers to. */
#include "backward.h"

/* x (f's reduced shape) broadcast back to the input's shape: one view
 * (unsqueeze the reduced dims, expand), read as ONE AS_STRIDED node. */
static lt_tensor *unreduce(ag_fn *f, lt_tensor *x) {
    const ag_fn *in = f->next[0];
    uint64_t mask = (uint64_t)f->ia[0];
    int64_t ks[LT_MAX_DIMS];
    for (int d = 0; d < in->ndim; d++) ks[d] = (mask >> d) & 1 ? 1 : in->shape[d];
    lt_tensor *v = f->ia[1] ? x : K(lt_view(x, in->ndim, ks));
    return lt_expand(v, in->ndim, in->shape);
}

static int mask_axes(uint64_t mask, int ndim, int *axes) {
    int n = 0;
    for (int d = 0; d < ndim; d++)
        if ((mask >> d) & 1) axes[n++] = d;
    return n;
}

int ag_bw_reduce(ag_fn *f, lt_tensor *g, lt_tensor **gi) {
    const ag_fn *in = f->next[0];
    switch (f->op) {
    case LT_OP_SUM: gi[0] = unreduce(f, g); break;
    case LT_OP_MEAN: {
        int64_t n = shape_numel(in->ndim, in->shape), m = shape_numel(f->ndim, f->shape);
        gi[0] = unreduce(f, K(lt_mul_scalar(g, n ? (double)m / (double)n : 0.0)));
        break;
    }
    case LT_OP_MAX: case LT_OP_MIN: { /* split evenly among the elements equal to the extreme */
        int axes[LT_MAX_DIMS];
        int na = mask_axes((uint64_t)f->ia[0], in->ndim, axes);
        lt_tensor *hit = K(lt_to_dtype(K(lt_eq(SAVED(0), K(unreduce(f, OUT)))), (lt_dtype)f->dtype));
        lt_tensor *cnt = na ? K(lt_sum(hit, na, axes, true)) : hit;
        gi[0] = lt_mul(K(unreduce(f, g)), K(lt_div(hit, cnt)));
        break;
    }
    case LT_OP_VAR: case LT_OP_STD: { /* PyTorch's var_backward (2 / dof) g (x - mean); std's g is
                                        * g / (2 std), 0 where std is 0 */
        int axes[LT_MAX_DIMS];
        int na = mask_axes((uint64_t)f->ia[0], in->ndim, axes);
        int64_t n = shape_numel(in->ndim, in->shape), m = shape_numel(f->ndim, f->shape);
        double dof = (m ? (double)(n / m) : 0.0) - f->sc[0];
        lt_tensor *gv = g;
        if (f->op == LT_OP_STD)
            gv = K(lt_masked_fill(K(lt_div(g, K(lt_mul_scalar(OUT, 2.0)))), K(lt_eq_scalar(OUT, 0.0)), 0.0));
        lt_tensor *d = K(lt_sub(SAVED(0), K(na ? lt_mean(SAVED(0), na, axes, true) : lt_clone(SAVED(0)))));
        gi[0] = lt_mul(K(unreduce(f, K(lt_mul_scalar(gv, 2.0 / dof)))), d);
        break;
    }
    default: LT_ASSERT(0 && "not a reduction");
    }
    return 0;
}

/* flip's gradient: g flipped back. */
int ag_bw_flip(ag_fn *f, lt_tensor *g, lt_tensor **gi) {
    int dims[LT_MAX_DIMS];
    int n = mask_axes((uint64_t)f->ia[0], g->ndim, dims);
    gi[0] = lt_flip(g, n, dims);
    return 0;
}

/* cumsum's gradient: the cumulative sum of g from the other end. */
int ag_bw_cumsum(ag_fn *f, lt_tensor *g, lt_tensor **gi) {
    gi[0] = lt_cumsum(g, (int)f->ia[0], !f->ia[1]);
    return 0;
}

int ag_bw_softmax(ag_fn *f, lt_tensor *g, lt_tensor **gi) {
    int dim = (int)f->ia[0]; /* the formulas are the front ends' too (api/reduce.c) */
    gi[0] = f->op == LT_OP_SOFTMAX ? lt_softmax_backward(g, OUT, dim) : lt_log_softmax_backward(g, OUT, dim);
    return 0;
}

/* torch.matmul: a 1-D a is (1, k), a 1-D b is (k, 1), and the output lacks
 * those dims; batch dims broadcast (the engine sums them back). */
int ag_bw_matmul(ag_fn *f, lt_tensor *g, lt_tensor **gi) {
    lt_dtype dt = (lt_dtype)(NEED(0) ? f->next[0] : f->next[1])->dtype;
    if (g->dtype != dt) g = K(lt_to_dtype(g, dt)); /* nn_matmul_wide's float32 result, bfloat16 operands */
    int na = NEED(0) ? f->next[0]->ndim : SAVED(0)->ndim;
    int nb = NEED(1) ? f->next[1]->ndim : SAVED(1)->ndim;
    int nbatch = g->ndim - (na >= 2) - (nb >= 2);
    int64_t gs[LT_MAX_DIMS + 2];
    memcpy(gs, g->shape, (size_t)nbatch * 8);
    gs[nbatch] = na >= 2 ? g->shape[nbatch] : 1;
    gs[nbatch + 1] = nb >= 2 ? g->shape[g->ndim - 1] : 1;
    lt_tensor *G = na >= 2 && nb >= 2 ? g : K(lt_reshape(g, nbatch + 2, gs));
    if (NEED(0)) {
        lt_tensor *B = nb == 1 ? K(lt_unsqueeze(SAVED(1), 1)) : SAVED(1);
        lt_tensor *r = lt_matmul(G, K(lt_transpose(B, -1, -2))); /* (..., n, k) */
        if (r && na == 1) { /* drop the 1 so that k aligns with a's only dim */
            int64_t rs[LT_MAX_DIMS];
            memcpy(rs, r->shape, (size_t)(r->ndim - 2) * 8);
            rs[r->ndim - 2] = r->shape[r->ndim - 1];
            r = lt_reshape(K(r), r->ndim - 1, rs);
        }
        gi[0] = r;
    }
    if (NEED(1)) {
        lt_tensor *A = na == 1 ? K(lt_unsqueeze(SAVED(0), 0)) : SAVED(0);
        lt_tensor *r = lt_matmul(K(lt_transpose(A, -1, -2)), G); /* (..., k, m) */
        if (r && nb == 1) r = lt_reshape(K(r), r->ndim - 1, r->shape);
        gi[1] = r;
    }
    return 0;
}

int ag_bw_cat(ag_fn *f, lt_tensor *g, lt_tensor **gi) {
    int dim = (int)f->ia[0];
    int64_t at = 0;
    for (int i = 0; i < f->nin; i++) {
        if (NEED(i)) gi[i] = lt_narrow(g, dim, at, f->ext[i]);
        at += f->ext[i];
    }
    return 0;
}

/* A new handle on an internal node made from g's value. */
static lt_tensor *node_of(int op, ag_fn *f, lt_tensor *g, int ndim, const int64_t *shape, ir_node *extra, int nia,
                          const int64_t *ia) {
    (void)f;
    ir_node *in[2] = {func_value(g), extra};
    if (!in[0]) return NULL;
    ir_node *n = ir_new(op, (lt_dtype)g->dtype, ndim, shape, extra ? 2 : 1, in, nia, ia, 0, NULL);
    return n ? ag_value_handle(n) : NULL;
}

/* If f's window permutes the base's dims (a transpose or permute: dim k
 * of f is base dim p[k], with that dim's contiguous stride), the strides
 * that read g back in the base's order: base dim p[k] steps by g's
 * contiguous stride of dim k. Returns 0 when the window is anything else. */
static int permutation_inverse(const ag_fn *f, const ag_fn *b, int64_t *ia) {
    int64_t bs[LT_MAX_DIMS], gs[LT_MAX_DIMS];
    if (f->ndim != b->ndim || f->ia[f->ndim] != 0) return 0;
    shape_contig_strides(b->ndim, b->shape, bs);
    shape_contig_strides(f->ndim, f->shape, gs);
    uint32_t used = 0;
    for (int k = 0; k < f->ndim; k++) {
        int j = 0; /* the base dim with this size and stride (size-1 dims: any unused one of size 1) */
        while (j < b->ndim && ((used >> j & 1) || b->shape[j] != f->shape[k] ||
                               (f->shape[k] != 1 && bs[j] != f->ia[k])))
            j++;
        if (j == b->ndim) return 0;
        used |= 1u << j;
        ia[j] = gs[k];
    }
    ia[b->ndim] = 0;
    return 1;
}

/* AS_STRIDED (ia: strides..., offset over the base's contiguous layout).
 * A read of the whole base in order is a reshape, a permutation of its dims
 * reads g back through the inverse permutation (a view, no copy: the
 * attention backward reads its dO so); any other window scatter-ADDS into
 * zeros of the base's shape, since expanded views read an element more
 * than once. */
int ag_bw_strided(ag_fn *f, lt_tensor *g, lt_tensor **gi) {
    const ag_fn *b = f->next[0];
    int64_t nf = shape_numel(f->ndim, f->shape), nbase = shape_numel(b->ndim, b->shape), ia[LT_MAX_DIMS + 1];
    if (f->ia[f->ndim] == 0 && nf == nbase && geom_is_contiguous(f->ndim, f->shape, f->ia)) {
        shape_contig_strides(b->ndim, b->shape, ia);
        ia[b->ndim] = 0;
        gi[0] = node_of(LT_OP_AS_STRIDED, f, g, b->ndim, b->shape, NULL, b->ndim + 1, ia);
    } else if (nf == nbase && permutation_inverse(f, b, ia)) {
        gi[0] = node_of(LT_OP_AS_STRIDED, f, g, b->ndim, b->shape, NULL, b->ndim + 1, ia);
    } else {
        gi[0] = node_of(LT_OP_AS_STRIDED_BACKWARD, f, g, b->ndim, b->shape, NULL, f->nia, f->ia);
    }
    return 0;
}

/* AS_STRIDED_SCATTER (ia: window strides, offset, window shape): the base
 * gets g with the window zeroed (it was overwritten); the source gets the
 * window of g. */
int ag_bw_scatter(ag_fn *f, lt_tensor *g, lt_tensor **gi) {
    int k = (f->nia - 1) / 2;
    const int64_t *ws = f->ia + k + 1;
    if (NEED(0)) {
        double zero = 0;
        ir_node *z = ir_new(LT_OP_FILL, (lt_dtype)g->dtype, k, ws, 0, NULL, 0, NULL, 1, &zero);
        gi[0] = z ? node_of(LT_OP_AS_STRIDED_SCATTER, f, g, f->ndim, f->shape, z, k + 1, f->ia) : NULL;
    }
    if (NEED(1)) gi[1] = node_of(LT_OP_AS_STRIDED, f, g, k, ws, NULL, k + 1, f->ia);
    return 0;
}
