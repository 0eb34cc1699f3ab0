/* Reference executor: node by node, a fresh buffer per value, released after
 * its last use. */
#include "ref.h"
#include "ref_nn.h"

#include "../../prof/prof.h"

typedef struct ref_exe {
    const exec_graph *g;
    int32_t *last_use; /* index of the last node reading each value; n for roots */
} ref_exe;

static int ref_supports(int op) {
    (void)op;
    return 1;
}

static void *ref_compile(const exec_graph *g) {
    ref_exe *e = core_malloc(sizeof *e);
    if (!e) return NULL;
    e->g = g;
    e->last_use = core_malloc((size_t)(g->n ? g->n : 1) * sizeof *e->last_use);
    if (!e->last_use) {
        core_free(e);
        return NULL;
    }
    for (int k = 0; k < g->n; k++) {
        e->last_use[k] = k;
        for (int i = 0; i < g->nodes[k].nin; i++) e->last_use[g->nodes[k].in[i]] = k;
    }
    for (int r = 0; r < g->nroots; r++) e->last_use[g->roots[r]] = g->n;
    return e;
}

static void ref_free(void *p) {
    ref_exe *e = p;
    if (!e) return;
    core_free(e->last_use);
    core_free(e);
}

static double *scratch;
static size_t scratch_cap; /* doubles; kept between runs (one executing thread) */

int ref_scratch_reserve(const exec_graph *g) {
    size_t need = 0;
    for (int k = 0; k < g->n; k++) {
        const gnode *y = &g->nodes[k];
        switch ((enum lt_op)y->op) {
        case LT_OP_CONV2D: case LT_OP_CONV2D_BWD_INPUT: case LT_OP_CONV2D_BWD_WEIGHT: case LT_OP_MAX_POOL2D_BWD:
        case LT_OP_AVG_POOL2D_BWD: case LT_OP_ADAPTIVE_AVG_POOL2D_BWD: case LT_OP_AS_STRIDED_BACKWARD:
        case LT_OP_CROSS_ENTROPY: case LT_OP_CROSS_ENTROPY_BWD:
            if ((size_t)y->numel > need) need = (size_t)y->numel;
            for (int i = 0; i < y->nin; i++) /* cross-entropy: one row of its logits */
                if ((size_t)g->nodes[y->in[i]].numel > need) need = (size_t)g->nodes[y->in[i]].numel;
            break;
        case LT_OP_LN_BWD_PARAMS: /* its two accumulators (2, normalized shape) */
            if ((size_t)y->numel > need) need = (size_t)y->numel;
            break;
        case LT_OP_ATTENTION: case LT_OP_ATTENTION_BWD: {
            size_t t = (size_t)ref_attention_scratch(y);
            if (t > need) need = t;
            break;
        }
        default: break;
        }
    }
    if (need < 1) need = 1;
    if (need <= scratch_cap) return 0;
    if (need > SIZE_MAX / sizeof *scratch)
        return err_set(LT_ERR_OOM, "out of memory: kernel scratch of %zu doubles", need), -1;
    double *p = core_malloc(need * sizeof *p);
    if (!p) return -1;
    core_free(scratch);
    scratch = p;
    scratch_cap = need;
    return 0;
}

double *ref_scratch(int64_t n) {
    LT_ASSERT(n >= 0 && (size_t)n <= scratch_cap && scratch); /* reserved by the executor */
    memset(scratch, 0, (size_t)n * sizeof *scratch);
    return scratch;
}

void ref_run_node(const gnode *y, const ref_arg *in, const double *sc, void *out) {
    /* An empty output has nothing to compute; kernels that loop over outer
     * dims would otherwise spin through them (a [2, 2^35, 0] cat). */
    if (y->numel == 0) return;
    switch ((enum lt_op)y->op) {
    case LT_OP_DATA: case LT_OP_COUNT: LT_ASSERT(0 && "not a kernel"); break;
    case LT_OP_FILL: ref_fill(y, sc, out); break;
    case LT_OP_ADD: case LT_OP_SUB: case LT_OP_MUL: case LT_OP_DIV: case LT_OP_MAXIMUM: case LT_OP_MINIMUM:
    case LT_OP_POW: case LT_OP_EQ: case LT_OP_NE: case LT_OP_LT: case LT_OP_LE: case LT_OP_GT: case LT_OP_GE:
    case LT_OP_ADD_SCALAR: case LT_OP_MUL_SCALAR: case LT_OP_POW_SCALAR: case LT_OP_CLAMP: case LT_OP_NEG:
    case LT_OP_EXP: case LT_OP_LOG: case LT_OP_SQRT: case LT_OP_RSQRT: case LT_OP_ABS: case LT_OP_RELU:
    case LT_OP_TANH: case LT_OP_SIGMOID: case LT_OP_CAST: case LT_OP_LERP: case LT_OP_WHERE:
    case LT_OP_ADDCMUL: case LT_OP_ADDCDIV: case LT_OP_ERF: case LT_OP_GELU: case LT_OP_GELU_BWD:
    case LT_OP_ADD_SCALED: case LT_OP_EQ_SCALAR: case LT_OP_NE_SCALAR: case LT_OP_LT_SCALAR: case LT_OP_LE_SCALAR:
    case LT_OP_GT_SCALAR: case LT_OP_GE_SCALAR: case LT_OP_MASKED_FILL: case LT_OP_SIGN: case LT_OP_SILU:
    case LT_OP_SILU_BWD: case LT_OP_HARDSWISH: case LT_OP_HARDSWISH_BWD: case LT_OP_HARDSIGMOID:
    case LT_OP_HARDSIGMOID_BWD: case LT_OP_THRESHOLD_BWD: case LT_OP_HARDTANH_BWD: case LT_OP_SIGMOID_BWD:
    case LT_OP_TANH_BWD: case LT_OP_DIV_TRUNC: case LT_OP_DIV_FLOOR: case LT_OP_LERP_TENSOR: case LT_OP_BITWISE_AND:
    case LT_OP_BITWISE_OR: case LT_OP_BITWISE_XOR: case LT_OP_BITWISE_NOT:
        ref_elementwise(y, in, sc, out);
        break;
    case LT_OP_SUM: case LT_OP_MEAN: case LT_OP_MAX: case LT_OP_MIN: case LT_OP_ARGMAX: case LT_OP_ARGMIN:
    case LT_OP_VAR: case LT_OP_STD:
        ref_reduce(y, in, sc, out);
        break;
    case LT_OP_SOFTMAX: case LT_OP_LOG_SOFTMAX: ref_softmax(y, in, out); break;
    case LT_OP_CUMSUM: ref_cumsum(y, in, out); break;
    case LT_OP_MATMUL: ref_matmul(y, in, out); break;
    case LT_OP_CAT: ref_cat(y, in, out); break;
    case LT_OP_FLIP: ref_flip(y, in, out); break;
    case LT_OP_AS_STRIDED: ref_as_strided(y, in, out); break;
    case LT_OP_AS_STRIDED_SCATTER: ref_as_strided_scatter(y, in, out); break;
    case LT_OP_AS_STRIDED_BACKWARD: ref_as_strided_backward(y, in, out); break;
    /* NN ops (ref_nn_*.c) */
    case LT_OP_CONV2D: ref_conv2d(y, in, out); break;
    case LT_OP_CONV2D_BWD_INPUT: ref_conv2d_bwd_input(y, in, out); break;
    case LT_OP_CONV2D_BWD_WEIGHT: ref_conv2d_bwd_weight(y, in, out); break;
    case LT_OP_MAX_POOL2D: case LT_OP_AVG_POOL2D: ref_pool2d(y, in, out); break;
    case LT_OP_MAX_POOL2D_BWD: case LT_OP_AVG_POOL2D_BWD: ref_pool2d_bwd(y, in, out); break;
    case LT_OP_ADAPTIVE_AVG_POOL2D: ref_adaptive_avg_pool2d(y, in, out); break;
    case LT_OP_ADAPTIVE_AVG_POOL2D_BWD: ref_adaptive_avg_pool2d_bwd(y, in, out); break;
    case LT_OP_BN_STATS: ref_bn_stats(y, in, out); break;
    case LT_OP_BN_APPLY: ref_bn_apply(y, in, sc, out); break;
    case LT_OP_BN_BWD_INPUT: ref_bn_bwd_input(y, in, sc, out); break;
    case LT_OP_BN_BWD_PARAMS: ref_bn_bwd_params(y, in, sc, out); break;
    case LT_OP_LINEAR: ref_linear(y, in, out); break;
    case LT_OP_DROPOUT: ref_dropout(y, in, sc, out); break;
    case LT_OP_NLL_LOSS: ref_nll_loss(y, in, out); break;
    case LT_OP_NLL_LOSS_BWD: ref_nll_loss_bwd(y, in, out); break;
    case LT_OP_CROSS_ENTROPY: ref_cross_entropy(y, in, sc, out); break;
    case LT_OP_CROSS_ENTROPY_BWD: ref_cross_entropy_bwd(y, in, sc, out); break;
    case LT_OP_MSE_LOSS: ref_mse_loss(y, in, out); break;
    case LT_OP_GATHER: ref_gather(y, in, out); break;
    case LT_OP_SCATTER_ADD: ref_scatter_add(y, in, out); break;
    case LT_OP_INDEX_SELECT: case LT_OP_EMBEDDING: ref_index_select(y, in, out); break;
    case LT_OP_INDEX_ADD: ref_index_add(y, in, out); break;
    /* transformers (ref_nn_transformer.c) */
    case LT_OP_LAYER_NORM: ref_layer_norm(y, in, sc, out); break;
    case LT_OP_LN_BWD_INPUT: ref_ln_bwd_input(y, in, sc, out); break;
    case LT_OP_LN_BWD_PARAMS: ref_ln_bwd_params(y, in, sc, out); break;
    case LT_OP_ATTENTION: ref_attention(y, in, sc, out); break;
    case LT_OP_ATTENTION_BWD: ref_attention_bwd(y, in, sc, out); break;
    case LT_OP_GRAD_NORM: ref_grad_norm(y, in, out); break;
    case LT_OP_ALL_REDUCE: case LT_OP_BROADCAST: ref_collective(y, in, out); break;
    case LT_OP_REDUCE_SCATTER: case LT_OP_ALL_GATHER: ref_shard_collective(y, in, out); break;
    case LT_OP_SHARD: ref_shard(y, in, out); break;
    /* the PyTorch device's nn family */
    case LT_OP_MAX_POOL2D_INDICES: ref_max_pool2d_indices(y, in, out); break;
    case LT_OP_LN_STATS: ref_ln_stats(y, in, sc, out); break;
    case LT_OP_RANDOM: ref_random(y, sc, out); break;
    }
}

static int ref_run(void *p, lt_buffer *const *inputs, const uint8_t *donatable, const double *scalars,
                   lt_buffer **outputs) {
    (void)donatable; /* the reference backend never writes in place */
    ref_exe *e = p;
    const exec_graph *g = e->g;
    lt_buffer **val = core_calloc((size_t)(g->n ? g->n : 1), sizeof *val);
    ref_arg *args = NULL;
    int maxin = 1;
    for (int k = 0; k < g->n; k++)
        if (g->nodes[k].nin > maxin) maxin = g->nodes[k].nin;
    if (val) args = core_malloc((size_t)maxin * sizeof *args);
    int rc = -1;
    if (!val || !args || ref_scratch_reserve(g)) goto done;
    for (int k = 0; k < g->n; k++) {
        const gnode *y = &g->nodes[k];
        if (y->op == LT_OP_DATA) {
            val[k] = inputs[y->param];
            buffer_retain(val[k]);
            continue;
        }
        val[k] = buffer_new((size_t)y->numel * dtype_size((lt_dtype)y->dtype));
        if (!val[k]) goto done;
        for (int i = 0; i < y->nin; i++) {
            const gnode *x = &g->nodes[y->in[i]];
            args[i] = (ref_arg){val[y->in[i]]->data, (lt_dtype)x->dtype, x->ndim, x->shape, x->numel};
        }
        double sc[IR_MAX_SCALARS];
        for (int i = 0; i < IR_MAX_SCALARS; i++) sc[i] = y->sc_slot[i] >= 0 ? scalars[y->sc_slot[i]] : y->sc[i];
        uint64_t kt0 = prof_kernel_begin(); /* LT_TRACE_KERNELS */
        ref_run_node(y, args, sc, val[k]->data);
        char pa[128];
        if (LT_UNLIKELY(g_prof_kernels)) exec_node_args(pa, sizeof pa, g, y);
        prof_kernel_end(g_ops[y->op].name, kt0, pa);
        if (LT_UNLIKELY(err_kernel_pending())) { /* bad index data: the sync fails */
            err_kernel_take();
            goto done;
        }
        for (int i = 0; i < y->nin; i++)
            if (e->last_use[y->in[i]] == k) {
                buffer_release(val[y->in[i]]);
                val[y->in[i]] = NULL;
            }
    }
    for (int r = 0; r < g->nroots; r++) {
        outputs[r] = val[g->roots[r]];
        buffer_retain(outputs[r]);
    }
    rc = 0;
done:
    if (val)
        for (int k = 0; k < g->n; k++) buffer_release(val[k]);
    core_free(val);
    core_free(args);
    return rc;
}

const backend g_backend_ref = {"ref", ref_supports, ref_compile, ref_run, ref_free};
