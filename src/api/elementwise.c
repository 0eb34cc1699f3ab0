/* Elementwise ops, out-of-place and in-place: one node per call. */
#include "api.h"

static const char *arg_name(int op, int i) {
    static const char *ab[] = {"a", "b", "c"}, *w[] = {"cond", "a", "b"}, *t[] = {"a", "t1", "t2"},
                      *m[] = {"a", "mask"}, *gx[] = {"grad", "x"}, *gy[] = {"grad", "out"};
    if (op == LT_OP_WHERE) return w[i];
    if (op == LT_OP_MASKED_FILL) return m[i];
    if (op == LT_OP_SIGMOID_BWD || op == LT_OP_TANH_BWD) return gy[i];
    if (op >= LT_OP_SILU_BWD && op <= LT_OP_HARDTANH_BWD && op != LT_OP_HARDSWISH && op != LT_OP_HARDSIGMOID)
        return gx[i];
    if (op == LT_OP_ADDCMUL || op == LT_OP_ADDCDIV) return t[i];
    if (op == LT_OP_LERP_TENSOR) return (const char *[]){"a", "b", "weight"}[i];
    return ab[i];
}

/* Dtype rules that PyTorch enforces beyond promotion. Cold path. */
static int check_dtypes(const char *fn, int op, int nin, lt_tensor *const *in) {
    lt_dtype d0 = (lt_dtype)in[0]->dtype;
    switch (op) {
    case LT_OP_LERP:
        if (!dtype_is_float(d0) || in[1]->dtype != d0)
            return err_set(LT_ERR_DTYPE, "%s: arguments 'a' (%s) and 'b' (%s) must share one floating dtype", fn,
                           dtype_name(d0), dtype_name((lt_dtype)in[1]->dtype)),
                   -1;
        break;
    case LT_OP_LERP_TENSOR:
        if (!dtype_is_float(d0) || in[1]->dtype != d0 || in[2]->dtype != d0)
            return err_set(LT_ERR_DTYPE, "%s: arguments 'a' (%s), 'b' (%s) and 'weight' (%s) must share one floating dtype",
                           fn, dtype_name(d0), dtype_name((lt_dtype)in[1]->dtype), dtype_name((lt_dtype)in[2]->dtype)),
                   -1;
        break;
    case LT_OP_BITWISE_AND: case LT_OP_BITWISE_OR: case LT_OP_BITWISE_XOR: case LT_OP_BITWISE_NOT:
        for (int i = 0; i < nin; i++)
            if (dtype_is_float((lt_dtype)in[i]->dtype))
                return err_set(LT_ERR_DTYPE, "%s: argument '%s' is %s: bitwise ops take integer and bool tensors", fn,
                               i ? "b" : "a", dtype_name((lt_dtype)in[i]->dtype)),
                       -1;
        break;
    case LT_OP_MASKED_FILL:
        if (in[1]->dtype != LT_BOOL)
            return err_set(LT_ERR_DTYPE, "%s: argument 'mask' must be bool, got %s", fn,
                           dtype_name((lt_dtype)in[1]->dtype)), -1;
        break;
    case LT_OP_WHERE:
        if (d0 != LT_BOOL)
            return err_set(LT_ERR_DTYPE, "%s: argument 'cond' must be bool, got %s", fn, dtype_name(d0)), -1;
        break;
    case LT_OP_SUB:
        if (d0 == LT_BOOL || in[1]->dtype == LT_BOOL)
            return err_set(LT_ERR_DTYPE, "%s: argument '%s' is bool: subtraction with a bool tensor is not supported", fn,
                           d0 == LT_BOOL ? "a" : "b"), -1;
        break;
    case LT_OP_ADDCDIV:
        if (!dtype_is_float((lt_dtype)in[1]->dtype) && !dtype_is_float((lt_dtype)in[2]->dtype))
            return err_set(LT_ERR_DTYPE, "%s: integer division of 't1' (%s) by 't2' (%s) is not supported", fn,
                           dtype_name((lt_dtype)in[1]->dtype), dtype_name((lt_dtype)in[2]->dtype)),
                   -1;
        break;
    default: break;
    }
    return 0;
}

/* Ops PyTorch has no bool kernel for (NEG, ABS, RELU; POW, ADDCMUL of
 * bools): called when the computation would be in bool. Cold path. */
static int check_bool(const char *fn, int op) {
    switch (op) {
    case LT_OP_NEG: case LT_OP_ABS: case LT_OP_RELU: case LT_OP_POW: case LT_OP_ADDCMUL:
        return err_set(LT_ERR_DTYPE, "%s: argument 'a'%s is bool: the op is not supported for bool tensors", fn,
                       op == LT_OP_POW || op == LT_OP_ADDCMUL ? " (and every other operand)" : ""), -1;
    default: return 0;
    }
}

static int is_comparison(int op) {
    return (op >= LT_OP_EQ && op <= LT_OP_GE) || (op >= LT_OP_EQ_SCALAR && op <= LT_OP_GE_SCALAR);
}

/* PyTorch's assert_no_partial_overlap (func_partial_overlap). Cold path. */
static void *partial_overlap(const char *fn, const char *arg, const lt_tensor *src, const char *dst_arg,
                             const lt_tensor *dst) {
    return err_set(LT_ERR_ARG,
                   "%s: unsupported operation: some elements of the input tensor '%s' (offset %lld, shape %s, strides %s) "
                   "and the written-to tensor '%s' (offset %lld, shape %s, strides %s) refer to a single memory "
                   "location; clone the input first",
                   fn, arg, (long long)src->offset, SHAPE_STR(src->ndim, src->shape), SHAPE_STR(src->ndim, src->strides),
                   dst_arg, (long long)dst->offset, SHAPE_STR(dst->ndim, dst->shape), SHAPE_STR(dst->ndim, dst->strides));
}

lt_tensor *api_elementwise_as(const char *fn, int op, int nin, lt_tensor *const *in, int nsc, const double *sc,
                              lt_tensor *inplace, int integral) {
    API_ENTER();
    for (int i = 0; i < nin; i++)
        if (LT_UNLIKELY(api_check(fn, arg_name(op, i), in[i]))) return NULL;
    /* Ops with dtype rules beyond promotion; lerp's common case is checked inline. */
    if (LT_UNLIKELY(op == LT_OP_WHERE || op == LT_OP_SUB || op == LT_OP_ADDCDIV || op == LT_OP_MASKED_FILL ||
                    op == LT_OP_LERP_TENSOR || (op >= LT_OP_BITWISE_AND && op <= LT_OP_BITWISE_NOT) ||
                    (op == LT_OP_LERP && (in[0]->dtype != in[1]->dtype || !dtype_is_float((lt_dtype)in[0]->dtype)))) &&
        check_dtypes(fn, op, nin, in))
        return NULL;
    /* PyTorch checks memory overlap before shapes (TensorIterator's order).
     * It refuses a written-to tensor with a zero stride (has_internal_overlap
     * YES) and runs one whose elements meet otherwise (TOO_HARD, only
     * lt_as_strided makes one): so do we, reading every input before the
     * write (README: PyTorch's values there follow its loop order). */
    if (inplace) {
        if (LT_UNLIKELY(inplace->overlaps) && geom_zero_stride(inplace->ndim, inplace->shape, inplace->strides))
            return err_set(LT_ERR_ARG,
                           "%s: argument '%s' (the written-to tensor) is an expanded view: more than one of its "
                           "elements refers to a single memory location; clone it first",
                           fn, arg_name(op, 0));
        for (int i = 1; i < nin; i++)
            if (func_partial_overlap(inplace, in[i])) return partial_overlap(fn, arg_name(op, i), in[i], "a", inplace);
    }
    int64_t shape[LT_MAX_DIMS];
    int nd = in[0]->ndim;
    memcpy(shape, in[0]->shape, sizeof shape); /* fixed size: a few moves, not a rep movs */
    lt_dtype dts[3];
    dts[0] = (lt_dtype)in[0]->dtype;
    unsigned zmask = nd == 0;
    for (int i = 1; i < nin; i++) {
        dts[i] = (lt_dtype)in[i]->dtype;
        zmask |= (unsigned)(in[i]->ndim == 0) << i;
        if (shape_eq(nd, shape, in[i]->ndim, in[i]->shape)) continue; /* the common case */
        int r = shape_broadcast(nd, shape, in[i]->ndim, in[i]->shape, shape);
        if (LT_UNLIKELY(r < 0))
            return err_set(LT_ERR_SHAPE, "%s: shapes %s ('%s') and %s ('%s') do not broadcast", fn,
                           SHAPE_STR(in[0]->ndim, in[0]->shape), arg_name(op, 0), SHAPE_STR(in[i]->ndim, in[i]->shape),
                           arg_name(op, i));
        nd = r;
    }
    lt_dtype cd = ir_compute_dtype(op, nin, dts, zmask);
    if (LT_UNLIKELY(cd == LT_BOOL) && check_bool(fn, op)) return NULL;
    /* An integral scalar keeps an integer tensor's dtype (bool: int64), as torch's int Python scalars. */
    if (LT_UNLIKELY(integral) && !dtype_is_float(dts[0])) cd = dts[0] == LT_BOOL ? LT_I64 : dts[0];
    lt_dtype od = is_comparison(op) ? LT_BOOL : cd;
    if (inplace) {
        if (LT_UNLIKELY(!shape_eq(nd, shape, inplace->ndim, inplace->shape)))
            return err_set(LT_ERR_SHAPE, "%s: result shape %s does not match the shape %s of the in-place target 'a'", fn,
                           SHAPE_STR(nd, shape), SHAPE_STR(inplace->ndim, inplace->shape));
        if (LT_UNLIKELY(od != inplace->dtype && !dtype_can_cast(od, (lt_dtype)inplace->dtype)))
            return err_set(LT_ERR_DTYPE, "%s: result type %s can't be cast to the dtype %s of the in-place target 'a'", fn,
                           dtype_name(od), dtype_name((lt_dtype)inplace->dtype));
        od = (lt_dtype)inplace->dtype;
    }
    ir_node *v[3];
    for (int i = 0; i < nin; i++)
        if (LT_UNLIKELY(!(v[i] = func_value(in[i])))) return NULL;
    ir_node *n = ir_new(op, od, nd, shape, nin, v, 0, NULL, nsc, sc);
    if (LT_UNLIKELY(!n)) return NULL;
    lt_tensor *t;
    if (inplace) {
        if (LT_UNLIKELY(g_ag_on) && ag_check_inplace(fn, inplace, nin, in)) return NULL;
        if (LT_UNLIKELY(func_assign(inplace, n))) return NULL;
        t = inplace;
    } else {
        t = func_new(n);
    }
    if (LT_UNLIKELY(g_ag_on) && t && ag_record(n, nin, in, t)) {
        if (!inplace) lt_free(t);
        return NULL;
    }
    API_LEAVE(fn, t);
    return t;
}

/* Public wrappers: one line each, generated per arity. */
#define BINARY(name, OPN)                                                                     \
    lt_tensor *lt_##name(lt_tensor *a, lt_tensor *b) {                                        \
        lt_tensor *in[2] = {a, b};                                                            \
        return api_elementwise("lt_" #name, LT_OP_##OPN, 2, in, 0, NULL, NULL);               \
    }
#define BINARY_(name, OPN)                                                                    \
    lt_tensor *lt_##name##_(lt_tensor *a, lt_tensor *b) {                                     \
        lt_tensor *in[2] = {a, b};                                                            \
        return api_elementwise("lt_" #name "_", LT_OP_##OPN, 2, in, 0, NULL, a);              \
    }
#define UNARY(name, OPN)                                                                      \
    lt_tensor *lt_##name(lt_tensor *a) { return api_elementwise("lt_" #name, LT_OP_##OPN, 1, &a, 0, NULL, NULL); } \
    lt_tensor *lt_##name##_(lt_tensor *a) { return api_elementwise("lt_" #name "_", LT_OP_##OPN, 1, &a, 0, NULL, a); }
#define SCALAR(name, OPN)                                                                     \
    lt_tensor *lt_##name(lt_tensor *a, double s) {                                            \
        return api_elementwise("lt_" #name, LT_OP_##OPN, 1, &a, 1, &s, NULL);                 \
    }                                                                                         \
    lt_tensor *lt_##name##_(lt_tensor *a, double s) {                                         \
        return api_elementwise("lt_" #name "_", LT_OP_##OPN, 1, &a, 1, &s, a);                \
    }

BINARY(add, ADD) BINARY_(add, ADD)
BINARY(sub, SUB) BINARY_(sub, SUB)
BINARY(mul, MUL) BINARY_(mul, MUL)
BINARY(div, DIV) BINARY_(div, DIV)
BINARY(maximum, MAXIMUM) BINARY_(maximum, MAXIMUM)
BINARY(minimum, MINIMUM) BINARY_(minimum, MINIMUM)
BINARY(pow, POW) BINARY_(pow, POW)
BINARY(eq, EQ) BINARY(ne, NE) BINARY(lt, LT) BINARY(le, LE) BINARY(gt, GT) BINARY(ge, GE)
UNARY(neg, NEG) UNARY(exp, EXP) UNARY(log, LOG) UNARY(sqrt, SQRT) UNARY(rsqrt, RSQRT)
UNARY(abs, ABS) UNARY(relu, RELU) UNARY(tanh, TANH) UNARY(sigmoid, SIGMOID) UNARY(erf, ERF)

/* PyTorch's gelu takes floating tensors only. */
lt_tensor *lt_gelu(lt_tensor *x, bool tanh_form) {
    double s = tanh_form;
    if (x && x->magic == LT_HANDLE_MAGIC && !dtype_is_float((lt_dtype)x->dtype))
        return err_set(LT_ERR_DTYPE, "lt_gelu: argument 'a' must be a floating dtype, got %s",
                       dtype_name((lt_dtype)x->dtype));
    return api_elementwise("lt_gelu", LT_OP_GELU, 1, &x, 1, &s, NULL);
}
SCALAR(add_scalar, ADD_SCALAR) SCALAR(mul_scalar, MUL_SCALAR) SCALAR(pow_scalar, POW_SCALAR)

lt_tensor *lt_clamp(lt_tensor *a, double lo, double hi) {
    double s[2] = {lo, hi};
    return api_elementwise("lt_clamp", LT_OP_CLAMP, 1, &a, 2, s, NULL);
}
lt_tensor *lt_clamp_(lt_tensor *a, double lo, double hi) {
    double s[2] = {lo, hi};
    return api_elementwise("lt_clamp_", LT_OP_CLAMP, 1, &a, 2, s, a);
}

lt_tensor *lt_lerp(lt_tensor *a, lt_tensor *b, double weight) {
    lt_tensor *in[2] = {a, b};
    return api_elementwise("lt_lerp", LT_OP_LERP, 2, in, 1, &weight, NULL);
}
lt_tensor *lt_lerp_(lt_tensor *a, lt_tensor *b, double weight) {
    lt_tensor *in[2] = {a, b};
    return api_elementwise("lt_lerp_", LT_OP_LERP, 2, in, 1, &weight, a);
}

lt_tensor *lt_lerp_tensor(lt_tensor *a, lt_tensor *b, lt_tensor *weight) {
    lt_tensor *in[3] = {a, b, weight};
    return api_elementwise("lt_lerp_tensor", LT_OP_LERP_TENSOR, 3, in, 0, NULL, NULL);
}
lt_tensor *lt_lerp_tensor_(lt_tensor *a, lt_tensor *b, lt_tensor *weight) {
    lt_tensor *in[3] = {a, b, weight};
    return api_elementwise("lt_lerp_tensor_", LT_OP_LERP_TENSOR, 3, in, 0, NULL, a);
}

BINARY(bitwise_and, BITWISE_AND) BINARY_(bitwise_and, BITWISE_AND)
BINARY(bitwise_or, BITWISE_OR) BINARY_(bitwise_or, BITWISE_OR)
BINARY(bitwise_xor, BITWISE_XOR) BINARY_(bitwise_xor, BITWISE_XOR)
UNARY(bitwise_not, BITWISE_NOT)

lt_tensor *lt_where(lt_tensor *cond, lt_tensor *a, lt_tensor *b) {
    lt_tensor *in[3] = {cond, a, b};
    return api_elementwise("lt_where", LT_OP_WHERE, 3, in, 0, NULL, NULL);
}

#define TERNARY(name, OPN)                                                                    \
    lt_tensor *lt_##name(lt_tensor *a, lt_tensor *t1, lt_tensor *t2, double value) {          \
        lt_tensor *in[3] = {a, t1, t2};                                                       \
        return api_elementwise("lt_" #name, LT_OP_##OPN, 3, in, 1, &value, NULL);             \
    }                                                                                         \
    lt_tensor *lt_##name##_(lt_tensor *a, lt_tensor *t1, lt_tensor *t2, double value) {       \
        lt_tensor *in[3] = {a, t1, t2};                                                       \
        return api_elementwise("lt_" #name "_", LT_OP_##OPN, 3, in, 1, &value, a);            \
    }
TERNARY(addcmul, ADDCMUL)
TERNARY(addcdiv, ADDCDIV)

lt_tensor *lt_to_dtype(lt_tensor *a, lt_dtype dtype) {
    if (!dtype_valid((int)dtype)) return err_set(LT_ERR_DTYPE, "lt_to_dtype: argument 'dtype' is invalid (%d)", (int)dtype);
    API_ENTER();
    if (api_check("lt_to_dtype", "a", a)) return NULL;
    ir_node *v = func_value(a);
    if (!v) return NULL;
    ir_node *n = ir_new(LT_OP_CAST, dtype, a->ndim, a->shape, 1, &v, 0, NULL, 0, NULL);
    lt_tensor *t = api_new_of(n, a);
    API_LEAVE("lt_to_dtype", t);
    return t;
}

/* copy_: src broadcasts to dst's shape and casts to its dtype. Equal shape
 * and dtype rebind dst to src's value: no node at all. */
lt_tensor *lt_copy_(lt_tensor *dst, lt_tensor *src) {
    API_ENTER();
    if (api_check("lt_copy_", "dst", dst) || api_check("lt_copy_", "src", src)) return NULL;
    /* PyTorch's copy_ returns at once when src is dst, even an expanded one;
     * otherwise it checks memory overlap before shapes. */
    if (dst->overlaps && src != dst && geom_zero_stride(dst->ndim, dst->shape, dst->strides))
        return err_set(LT_ERR_ARG, "lt_copy_: argument 'dst' is an expanded view: more than one element refers to a single memory location");
    if (func_partial_overlap(dst, src)) return partial_overlap("lt_copy_", "src", src, "dst", dst);
    int64_t shape[LT_MAX_DIMS];
    int nd = shape_broadcast(dst->ndim, dst->shape, src->ndim, src->shape, shape);
    if (nd != dst->ndim || memcmp(shape, dst->shape, (size_t)nd * 8))
        return err_set(LT_ERR_SHAPE, "lt_copy_: argument 'src' of shape %s does not broadcast to 'dst' shape %s",
                       SHAPE_STR(src->ndim, src->shape), SHAPE_STR(dst->ndim, dst->shape));
    ir_node *v = func_value(src);
    if (!v) return NULL;
    int cast = 0;
    if (v->dtype != dst->dtype || v->ndim != dst->ndim || memcmp(v->shape, dst->shape, (size_t)nd * 8)) {
        v = ir_new(LT_OP_CAST, (lt_dtype)dst->dtype, dst->ndim, dst->shape, 1, &v, 0, NULL, 0, NULL);
        if (!v) return NULL;
        cast = 1;
    }
    if (LT_UNLIKELY(g_ag_on) && ag_check_inplace("lt_copy_", dst, 1, &src)) return NULL;
    if (func_assign(dst, v)) return NULL;
    if (LT_UNLIKELY(g_ag_on) && ag_copy(dst, src, cast)) return NULL;
    API_LEAVE("lt_copy_", dst);
    return dst;
}

static lt_tensor *fill(const char *fn, lt_tensor *a, double value) {
    API_ENTER();
    if (api_check(fn, "a", a)) return NULL;
    /* No overlap check: PyTorch's fill_ writes an expanded view too (every
     * element gets the same value, so the result is well defined). */
    if (!dtype_fits(value, (lt_dtype)a->dtype))
        return err_set(LT_ERR_ARG, "%s: argument 'value' %g cannot be converted to %s without overflow", fn, value,
                       dtype_name((lt_dtype)a->dtype));
    ir_node *n = ir_new(LT_OP_FILL, (lt_dtype)a->dtype, a->ndim, a->shape, 0, NULL, 0, NULL, 1, &value);
    if (!n || (LT_UNLIKELY(g_ag_on) && ag_check_inplace(fn, a, 0, NULL)) || func_assign(a, n)) return NULL;
    if (LT_UNLIKELY(g_ag_on) && ag_fill(a)) return NULL;
    API_LEAVE(fn, a);
    return a;
}

lt_tensor *lt_fill_(lt_tensor *a, double value) { return fill("lt_fill_", a, value); }
lt_tensor *lt_zero_(lt_tensor *a) { return fill("lt_zero_", a, 0.0); }
