/* Node creation and hashing: the hot path of tracing. */
#include "ir.h"

#include "../prof/prof.h"

const op_info g_ops[LT_OP_COUNT] = {
#define OP(name, arity, kind, flags) {#name, arity, kind, flags},
#include "../ops.def"
#undef OP
};

_Static_assert(sizeof(ir_node) % 8 == 0, "node alignment");

uint32_t g_ir_seq;

ir_node *ir_new(int op, lt_dtype dtype, int ndim, const int64_t *shape, int nin, ir_node *const *in,
                int nia, const int64_t *ia, int nsc, const double *sc) {
    size_t sz = sizeof(ir_node) + (size_t)nin * sizeof(ir_node *) + (size_t)(ndim + nia) * 8;
    ir_node *n = arena_alloc(sz);
    if (LT_UNLIKELY(!n)) return NULL;
    g_arena.nodes++;
    n->op = (uint16_t)op;
    n->dtype = (uint8_t)dtype;
    n->ndim = (uint8_t)ndim;
    n->nin = (uint16_t)nin;
    n->nia = (uint8_t)nia;
    n->nsc = (uint8_t)nsc;
    n->rt = 0;
    n->mark = 0;
    n->seq = g_ir_seq++;
    n->buf = NULL;
    n->shape = (int64_t *)(n->in + nin);
    n->ia = n->shape + ndim;
    uint64_t h = hash_mix((uint64_t)op << 16 | (uint64_t)dtype << 8 | (uint64_t)ndim, (uint64_t)nin << 8 | (uint64_t)nia);
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        n->shape[i] = shape[i];
        numel *= shape[i];
        h = hash_mix(h, (uint64_t)shape[i]);
    }
    n->numel = numel;
    for (int i = 0; i < nin; i++) {
        n->in[i] = in[i];
        h = hash_mix(h, in[i]->hash);
    }
    for (int i = 0; i < nia; i++) {
        n->ia[i] = ia[i];
        h = hash_mix(h, (uint64_t)ia[i]);
    }
    for (int i = 0; i < nsc; i++) {
        n->sc[i] = sc[i];
        if (scalar_is_special(sc[i])) {
            uint64_t bits;
            memcpy(&bits, &sc[i], 8);
            h = hash_mix(h, bits);
        } else {
            n->rt |= (uint8_t)(1u << i);
            h = hash_mix(h, 0x5ca1a7ull);
        }
    }
    n->hash = hash_final(h);
    return n;
}

ir_node *ir_data(lt_buffer *buf, lt_dtype dtype, int ndim, const int64_t *shape) {
    ir_node *n = ir_new(LT_OP_DATA, dtype, ndim, shape, 0, NULL, 0, NULL, 0, NULL);
    if (n) n->buf = buf;
    return n;
}

lt_buffer *buffer_new(size_t nbytes) {
    void *data = core_buffer_alloc(nbytes);
    return data ? buffer_adopt(data, nbytes, NULL, NULL) : NULL;
}

static void free_data(lt_buffer *b) {
    if (b->give_back) b->give_back(b->ctx, b->data);
    else core_buffer_free(b->data, b->nbytes);
}

lt_buffer *buffer_adopt(void *data, size_t nbytes, void (*give_back)(void *ctx, void *data), void *ctx) {
    lt_buffer *b = core_malloc(sizeof *b);
    if (!b) {
        free_data(&(lt_buffer){.data = data, .give_back = give_back, .ctx = ctx});
        return NULL;
    }
    *b = (lt_buffer){.data = data, .nbytes = nbytes, .refs = 1, .slot = -1, .give_back = give_back, .ctx = ctx};
    prof_bytes((double)nbytes); /* PeakBytes: live buffer bytes */
    return b;
}

void buffer_release(lt_buffer *b) {
    if (b && --b->refs == 0) {
        prof_bytes(-(double)b->nbytes);
        free_data(b);
        core_free(b);
    }
}

lt_dtype ir_compute_dtype(int op, int nin, const lt_dtype *in, unsigned zmask) {
    lt_dtype p = in[0];
    switch (op) {
    case LT_OP_WHERE: return dtype_result(2, in + 1, zmask >> 1);
    case LT_OP_DIV: p = dtype_result(2, in, zmask); return dtype_is_float(p) ? p : LT_F32;
    case LT_OP_ADD_SCALAR: case LT_OP_MUL_SCALAR: case LT_OP_POW_SCALAR: case LT_OP_CLAMP:
        return dtype_with_scalar(in[0]);
    case LT_OP_LERP: return dtype_with_scalar(dtype_result(nin, in, zmask));
    case LT_OP_ADDCMUL: case LT_OP_ADDCDIV: /* value is cast to the tensors' type: integers stay integers */
        return dtype_result(nin, in, zmask);
    case LT_OP_EXP: case LT_OP_LOG: case LT_OP_SQRT: case LT_OP_RSQRT: case LT_OP_TANH: case LT_OP_SIGMOID:
    case LT_OP_ERF: case LT_OP_GELU:
        return dtype_is_float(p) ? p : LT_F32;
    case LT_OP_GELU_BWD: p = dtype_promote(in[0], in[1]); return dtype_is_float(p) ? p : LT_F32;
    /* The PyTorch device's elementwise family: activations as GELU; their
     * backward ops promote (g, x) as torch's TensorIterator does. */
    case LT_OP_SILU: case LT_OP_HARDSWISH: case LT_OP_HARDSIGMOID: return dtype_is_float(p) ? p : LT_F32;
    case LT_OP_SILU_BWD: case LT_OP_HARDSWISH_BWD: case LT_OP_HARDSIGMOID_BWD: case LT_OP_SIGMOID_BWD:
    case LT_OP_TANH_BWD:
        p = dtype_result(2, in, zmask);
        return dtype_is_float(p) ? p : LT_F32;
    case LT_OP_THRESHOLD_BWD: case LT_OP_HARDTANH_BWD: return dtype_result(2, in, zmask); /* selections: integers too */
    case LT_OP_ADD_SCALED: return dtype_result(2, in, zmask); /* alpha is cast to the result type, as torch's */
    case LT_OP_DIV_TRUNC: case LT_OP_DIV_FLOOR: return dtype_result(2, in, zmask);
    case LT_OP_LERP_TENSOR: return dtype_result(3, in, zmask); /* one dtype (the api checks) */
    case LT_OP_BITWISE_AND: case LT_OP_BITWISE_OR: case LT_OP_BITWISE_XOR: return dtype_result(2, in, zmask);
    /* The scalar is compared in the tensor's dtype; MASKED_FILL's value is cast to a's dtype. */
    case LT_OP_EQ_SCALAR: case LT_OP_NE_SCALAR: case LT_OP_LT_SCALAR: case LT_OP_LE_SCALAR: case LT_OP_GT_SCALAR:
    case LT_OP_GE_SCALAR: case LT_OP_MASKED_FILL: case LT_OP_SIGN:
        return p;
    case LT_OP_ADD: case LT_OP_SUB: case LT_OP_MUL: case LT_OP_MAXIMUM: case LT_OP_MINIMUM: case LT_OP_POW:
    case LT_OP_EQ: case LT_OP_NE: case LT_OP_LT: case LT_OP_LE: case LT_OP_GT: case LT_OP_GE:
        return dtype_result(2, in, zmask);
    default: /* NEG, ABS, RELU, CAST and every non-elementwise op: the first operand's dtype */
        return p;
    }
    return p;
}
