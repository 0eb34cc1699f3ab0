/* Backward dispatch, the temporaries of formulas, and the elementwise
 * formulas. Gradients come back in the op's broadcast shape; the engine
 * reduces them to each input's shape. */
#include "backward.h"

static lt_tensor **tmps;
static size_t ntmp, tmp_cap;

lt_tensor *ag_tmp(lt_tensor *t) {
    if (!t) return NULL;
    if (ntmp == tmp_cap) {
        size_t c = tmp_cap ? tmp_cap * 2 : 64;
        lt_tensor **q = core_realloc(tmps, c * sizeof *q);
        if (!q) { /* cannot track it: leak one handle rather than free it early */
            return t;
        }
        tmps = q;
        tmp_cap = c;
    }
    tmps[ntmp++] = t;
    return t;
}

void ag_tmp_free_all(void) {
    while (ntmp) func_free(tmps[--ntmp]);
}

lt_tensor *ag_zero0(lt_dtype dt) { return K(lt_full(0.0, dt, 0, NULL)); }
lt_tensor *ag_same(lt_tensor *g) { return lt_clone(g); }
lt_tensor *ag_zeros_like_fn(const ag_fn *in) { return lt_zeros((lt_dtype)in->dtype, in->ndim, in->shape); }

int ag_bw_elementwise(ag_fn *f, lt_tensor *g, lt_tensor **gi) {
    lt_dtype dt = (lt_dtype)f->dtype;
    double s = f->sc[0];
    switch (f->op) {
    case LT_OP_ADD: case LT_OP_ADD_SCALAR: case LT_OP_CAST: /* CAST: the engine casts back */
        for (int i = 0; i < f->nin; i++)
            if (NEED(i)) gi[i] = ag_same(g);
        break;
    case LT_OP_SUB:
        if (NEED(0)) gi[0] = ag_same(g);
        if (NEED(1)) gi[1] = lt_neg(g);
        break;
    case LT_OP_MUL:
        if (NEED(0)) gi[0] = lt_mul(g, SAVED(1));
        if (NEED(1)) gi[1] = lt_mul(g, SAVED(0));
        break;
    case LT_OP_DIV: /* PyTorch's div_tensor_self/other_backward: g / b and -g ((a / b) / b), in that order
                     * ((g / b) (a / b) overflows to inf * 0 = NaN where a / b is 0 and g / b is huge) */
        if (NEED(0)) gi[0] = lt_div(g, SAVED(1));
        if (NEED(1)) gi[1] = lt_neg(K(lt_mul(g, K(lt_div(OUT, SAVED(1))))));
        break;
    case LT_OP_MAXIMUM: case LT_OP_MINIMUM: {
        /* PyTorch's formula: ties split the gradient evenly; the loser gets
         * exactly 0 (selected, not multiplied: an inf or NaN upstream
         * gradient stays out of it); a NaN pair passes g to both. */
        lt_tensor *z = ag_zero0(dt);
        lt_tensor *h = K(lt_where(K(lt_eq(SAVED(0), SAVED(1))), K(lt_mul_scalar(g, 0.5)), g));
        lt_tensor *a_lt_b = K(lt_lt(SAVED(0), SAVED(1))), *a_gt_b = K(lt_gt(SAVED(0), SAVED(1)));
        int mx = f->op == LT_OP_MAXIMUM;
        if (NEED(0)) gi[0] = lt_where(mx ? a_lt_b : a_gt_b, z, h);
        if (NEED(1)) gi[1] = lt_where(mx ? a_gt_b : a_lt_b, z, h);
        break;
    }
    case LT_OP_POW: { /* PyTorch's pow_backward_self / _exponent, in their order */
        lt_tensor *z = ag_zero0(dt);
        if (NEED(0)) { /* g (b a^(b-1)), exactly 0 where b == 0 (selected: an inf g stays out); an integer
                        * b - 1 stays integer in PyTorch (b - 1.0 would be float32 and make a^(b-1) float32) */
            lt_tensor *b1 = dtype_is_float((lt_dtype)SAVED(1)->dtype) ? SAVED(1) : K(lt_to_dtype(SAVED(1), dt));
            lt_tensor *d = K(lt_mul(SAVED(1), K(lt_pow(SAVED(0), K(lt_add_scalar(b1, -1.0))))));
            gi[0] = lt_where(K(lt_eq(SAVED(1), z)), z, K(lt_mul(g, d)));
        }
        if (NEED(1)) { /* g (out log a), with out log a := 0 where a == 0 and b >= 0 (0 * -inf otherwise) */
            lt_tensor *at0 = K(lt_mul(K(lt_eq(SAVED(0), z)), K(lt_ge(SAVED(1), z))));
            gi[1] = lt_mul(g, K(lt_where(at0, z, K(lt_mul(OUT, K(lt_log(SAVED(0))))))));
        }
        break;
    }
    case LT_OP_MUL_SCALAR: gi[0] = lt_mul_scalar(g, s); break;
    case LT_OP_POW_SCALAR: /* g (s a^(s-1)), in PyTorch's order */
        if (s == 0) gi[0] = lt_zeros(dt, g->ndim, g->shape);
        else gi[0] = lt_mul(g, K(lt_mul_scalar(K(lt_pow_scalar(SAVED(0), s - 1.0)), s)));
        break;
    case LT_OP_CLAMP: { /* PyTorch's clamp_backward: g where lo <= a <= hi (a NaN a or bound fails), selected */
        lt_tensor *lo = K(lt_full(s, LT_F64, 0, NULL)), *hi = K(lt_full(f->sc[1], LT_F64, 0, NULL));
        gi[0] = lt_where(K(lt_mul(K(lt_ge(SAVED(0), lo)), K(lt_le(SAVED(0), hi)))), g, ag_zero0(dt));
        break;
    }
    case LT_OP_NEG: gi[0] = lt_neg(g); break;
    case LT_OP_EXP: gi[0] = lt_mul(g, OUT); break;
    case LT_OP_LOG: gi[0] = lt_div(g, SAVED(0)); break;
    case LT_OP_SQRT: gi[0] = lt_mul_scalar(K(lt_div(g, OUT)), 0.5); break;
    case LT_OP_RSQRT: gi[0] = lt_mul_scalar(K(lt_mul(g, K(lt_pow_scalar(OUT, 3.0)))), -0.5); break;
    case LT_OP_ABS: { /* g * sign(a), sign(0) = sign(NaN) = 0: -g where a < 0, g * (a > 0) elsewhere */
        lt_tensor *z = ag_zero0((lt_dtype)SAVED(0)->dtype);
        gi[0] = lt_where(K(lt_lt(SAVED(0), z)), K(lt_neg(g)), K(lt_mul(g, K(lt_gt(SAVED(0), z)))));
        break;
    }
    case LT_OP_RELU: { /* PyTorch's threshold_backward: exactly 0 where out <= 0, g elsewhere (NaN too) */
        lt_tensor *z = ag_zero0(dt);
        gi[0] = lt_where(K(lt_le(OUT, z)), z, g);
        break;
    }
    case LT_OP_TANH: /* PyTorch's g * (1 - out^2): an inf g stays inf (g - g out^2 would be inf - inf) */
        gi[0] = lt_mul(g, K(lt_add_scalar(K(lt_mul_scalar(K(lt_mul(OUT, OUT)), -1.0)), 1.0)));
        break;
    case LT_OP_SIGMOID: /* PyTorch's g * (1 - out) * out, in that order */
        gi[0] = lt_mul(K(lt_mul(g, K(lt_add_scalar(K(lt_mul_scalar(OUT, -1.0)), 1.0)))), OUT);
        break;
    case LT_OP_LERP:
        if (NEED(0)) gi[0] = lt_mul_scalar(g, 1.0 - s);
        if (NEED(1)) gi[1] = lt_mul_scalar(g, s);
        break;
    case LT_OP_LERP_TENSOR: /* PyTorch's: g (1 - w), g w, g (b - a) */
        if (NEED(0)) gi[0] = lt_mul(g, K(lt_add_scalar(K(lt_neg(SAVED(2))), 1.0)));
        if (NEED(1)) gi[1] = lt_mul(g, SAVED(2));
        if (NEED(2)) gi[2] = lt_mul(g, K(lt_sub(SAVED(1), SAVED(0))));
        break;
    case LT_OP_WHERE: {
        lt_tensor *z = ag_zero0(dt);
        if (NEED(1)) gi[1] = lt_where(SAVED(0), g, z);
        if (NEED(2)) gi[2] = lt_where(SAVED(0), z, g);
        break;
    }
    case LT_OP_ADDCMUL: /* a + v t1 t2; PyTorch's order, g (t2 v): an integer t2 times v rounds to float32 first */
        if (NEED(0)) gi[0] = ag_same(g);
        if (NEED(1)) gi[1] = lt_mul(g, K(lt_mul_scalar(SAVED(2), s)));
        if (NEED(2)) gi[2] = lt_mul(g, K(lt_mul_scalar(SAVED(1), s)));
        break;
    case LT_OP_ADDCDIV: /* a + v t1 / t2; PyTorch's order: g (v / t2) and -g ((v t1) / (t2 t2)), where v t1
                         * of an integer t1 rounds to float32 first, and v / t2 is v in t2's float dtype over t2 */
        if (NEED(0)) gi[0] = ag_same(g);
        if (NEED(1)) {
            lt_dtype vd = dtype_is_float((lt_dtype)SAVED(2)->dtype) ? (lt_dtype)SAVED(2)->dtype : LT_F32;
            gi[1] = lt_mul(g, K(lt_div(K(lt_full(s, vd, 0, NULL)), SAVED(2))));
        }
        if (NEED(2))
            gi[2] = lt_mul(K(lt_neg(g)), K(lt_div(K(lt_mul_scalar(SAVED(1), s)), K(lt_mul(SAVED(2), SAVED(2))))));
        break;
    /* The PyTorch device's family: each backward is its one *_BWD node. */
    case LT_OP_ADD_SCALED:
        if (NEED(0)) gi[0] = ag_same(g);
        if (NEED(1)) gi[1] = lt_mul_scalar(g, s);
        break;
    case LT_OP_MASKED_FILL: gi[0] = lt_masked_fill(g, SAVED(1), 0.0); break;
    case LT_OP_SILU: gi[0] = lt_silu_backward(g, SAVED(0)); break;
    case LT_OP_HARDSWISH: gi[0] = lt_hardswish_backward(g, SAVED(0)); break;
    case LT_OP_HARDSIGMOID: gi[0] = lt_hardsigmoid_backward(g, SAVED(0)); break;
    default: LT_ASSERT(0 && "not an elementwise GRAD op");
    }
    return 0;
}

/* Without default: a new op row makes the compiler name its missing case. */
int ag_backward_fn(ag_fn *f, lt_tensor *g, lt_tensor **gi) {
    if (f->op == AG_LEAF) return 0;
    switch ((enum lt_op)f->op) {
    case LT_OP_ADD: case LT_OP_SUB: case LT_OP_MUL: case LT_OP_DIV: case LT_OP_MAXIMUM: case LT_OP_MINIMUM:
    case LT_OP_POW: case LT_OP_ADD_SCALAR: case LT_OP_MUL_SCALAR: case LT_OP_POW_SCALAR: case LT_OP_CLAMP:
    case LT_OP_NEG: case LT_OP_EXP: case LT_OP_LOG: case LT_OP_SQRT: case LT_OP_RSQRT: case LT_OP_ABS:
    case LT_OP_RELU: case LT_OP_TANH: case LT_OP_SIGMOID: case LT_OP_CAST: case LT_OP_LERP: case LT_OP_WHERE:
    case LT_OP_ADDCMUL: case LT_OP_ADDCDIV: case LT_OP_ADD_SCALED: case LT_OP_MASKED_FILL: case LT_OP_SILU:
    case LT_OP_HARDSWISH: case LT_OP_HARDSIGMOID: case LT_OP_LERP_TENSOR:
        return ag_bw_elementwise(f, g, gi);
    case LT_OP_SUM: case LT_OP_MEAN: case LT_OP_MAX: case LT_OP_MIN: case LT_OP_VAR: case LT_OP_STD:
        return ag_bw_reduce(f, g, gi);
    case LT_OP_SOFTMAX: case LT_OP_LOG_SOFTMAX: return ag_bw_softmax(f, g, gi);
    case LT_OP_CUMSUM: return ag_bw_cumsum(f, g, gi);
    case LT_OP_FLIP: return ag_bw_flip(f, g, gi);
    case LT_OP_MATMUL: return ag_bw_matmul(f, g, gi);
    case LT_OP_CAT: return ag_bw_cat(f, g, gi);
    case LT_OP_AS_STRIDED: return ag_bw_strided(f, g, gi);
    case LT_OP_AS_STRIDED_SCATTER: return ag_bw_scatter(f, g, gi);
    case LT_OP_CONV2D: case LT_OP_MAX_POOL2D: case LT_OP_AVG_POOL2D: case LT_OP_ADAPTIVE_AVG_POOL2D:
    case LT_OP_BN_APPLY: case LT_OP_LINEAR: case LT_OP_DROPOUT: case LT_OP_NLL_LOSS: case LT_OP_CROSS_ENTROPY:
    case LT_OP_MSE_LOSS: case LT_OP_GATHER: case LT_OP_INDEX_SELECT: case LT_OP_EMBEDDING:
        return ag_bw_nn(f, g, gi);
    case LT_OP_ERF: case LT_OP_GELU: case LT_OP_LAYER_NORM: case LT_OP_ATTENTION: return ag_bw_transformer(f, g, gi);
    case LT_OP_FILL: /* a value overwritten by copy_ / fill_ of one that needs no grad (record.c) */
        if (NEED(0)) gi[0] = ag_zeros_like_fn(f->next[0]);
        return 0;
    /* not differentiable: never recorded (no GRAD flag, or an integer result) */
    case LT_OP_DATA: case LT_OP_EQ: case LT_OP_NE: case LT_OP_LT: case LT_OP_LE: case LT_OP_GT:
    case LT_OP_GE: case LT_OP_ARGMAX: case LT_OP_ARGMIN: case LT_OP_COUNT:
    case LT_OP_CONV2D_BWD_INPUT: case LT_OP_CONV2D_BWD_WEIGHT: case LT_OP_MAX_POOL2D_BWD: case LT_OP_AVG_POOL2D_BWD:
    case LT_OP_ADAPTIVE_AVG_POOL2D_BWD: case LT_OP_BN_STATS: case LT_OP_BN_BWD_INPUT: case LT_OP_BN_BWD_PARAMS:
    case LT_OP_NLL_LOSS_BWD: case LT_OP_CROSS_ENTROPY_BWD: case LT_OP_SCATTER_ADD: case LT_OP_INDEX_ADD:
    case LT_OP_AS_STRIDED_BACKWARD: case LT_OP_GELU_BWD: case LT_OP_LN_BWD_INPUT: case LT_OP_LN_BWD_PARAMS:
    case LT_OP_ATTENTION_BWD: case LT_OP_GRAD_NORM:
    case LT_OP_EQ_SCALAR: case LT_OP_NE_SCALAR: case LT_OP_LT_SCALAR: case LT_OP_LE_SCALAR: case LT_OP_GT_SCALAR:
    case LT_OP_GE_SCALAR: case LT_OP_SIGN: case LT_OP_SILU_BWD: case LT_OP_HARDSWISH_BWD:
    case LT_OP_HARDSIGMOID_BWD: case LT_OP_THRESHOLD_BWD: case LT_OP_HARDTANH_BWD: case LT_OP_SIGMOID_BWD:
    case LT_OP_TANH_BWD: case LT_OP_DIV_TRUNC: case LT_OP_DIV_FLOOR: case LT_OP_BITWISE_AND: case LT_OP_BITWISE_OR:
    case LT_OP_BITWISE_XOR: case LT_OP_BITWISE_NOT:
    case LT_OP_MAX_POOL2D_INDICES: case LT_OP_LN_STATS: case LT_OP_RANDOM:
    case LT_OP_ALL_REDUCE: case LT_OP_BROADCAST: case LT_OP_REDUCE_SCATTER: case LT_OP_ALL_GATHER: case LT_OP_SHARD:
        break;
    }
    LT_ASSERT(0 && "backward of an op that is not differentiable");
    return -1;
}
