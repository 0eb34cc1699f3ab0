/* The tile interpreter: a fused elementwise group is a short register
 * program run over tiles of TILE elements that stay in L1, tiles spread over
 * OpenMP threads. The typed loops live in tile_body.h, instantiated here for
 * float and double. */
#include "cpu.h"

#include "simd.h"
#include "../ref/ref.h" /* ref_gelu: one formula for both backends */
#include "gelu_f32.h"

/* The loops once per instruction set, chosen at run time (the build has no
 * -march: CI machines differ). gcc vectorizes each copy for its ISA. */
#define BODY "tile_body.h"
#include "isa_copies.h"

typedef void (*tile_fn)(const tprog *, const void *const *, void *const *, const double *, const uint8_t *, void *,
                        int64_t, int64_t);

static int tile_op(int op) {
    switch (op) { /* the ops tile_body.h implements; anything else is not fused */
    case LT_OP_FILL: case LT_OP_ADD: case LT_OP_SUB: case LT_OP_MUL: case LT_OP_DIV: case LT_OP_MAXIMUM:
    case LT_OP_MINIMUM: case LT_OP_POW: case LT_OP_EQ: case LT_OP_NE: case LT_OP_LT: case LT_OP_LE: case LT_OP_GT:
    case LT_OP_GE: case LT_OP_ADD_SCALAR: case LT_OP_MUL_SCALAR: case LT_OP_POW_SCALAR: case LT_OP_CLAMP:
    case LT_OP_NEG: case LT_OP_EXP: case LT_OP_LOG: case LT_OP_SQRT: case LT_OP_RSQRT: case LT_OP_ABS:
    case LT_OP_RELU: case LT_OP_TANH: case LT_OP_SIGMOID: case LT_OP_CAST: case LT_OP_LERP: case LT_OP_WHERE:
    case LT_OP_ADDCMUL: case LT_OP_ADDCDIV: case LT_OP_ERF: case LT_OP_GELU: case LT_OP_GELU_BWD:
    case LT_OP_ADD_SCALED: case LT_OP_EQ_SCALAR: case LT_OP_NE_SCALAR: case LT_OP_LT_SCALAR: case LT_OP_LE_SCALAR:
    case LT_OP_GT_SCALAR: case LT_OP_GE_SCALAR: case LT_OP_MASKED_FILL: case LT_OP_SIGN: case LT_OP_SILU:
    case LT_OP_SILU_BWD: case LT_OP_HARDSWISH: case LT_OP_HARDSWISH_BWD: case LT_OP_HARDSIGMOID:
    case LT_OP_HARDSIGMOID_BWD: case LT_OP_THRESHOLD_BWD: case LT_OP_HARDTANH_BWD: case LT_OP_SIGMOID_BWD:
    case LT_OP_TANH_BWD: case LT_OP_DIV_TRUNC: case LT_OP_DIV_FLOOR: case LT_OP_LERP_TENSOR:
        return 1;
    default:
        return 0;
    }
}

/* The register type of a floating dtype: bfloat16 computes in float32
 * registers (loads widen, results round to bfloat16 in the register, stores
 * narrow), so bf16 and f32 members share one group and a cast between them
 * is a rounding in registers, never a pass over memory. */
static int reg_type(lt_dtype d) { return d == LT_BF16 ? LT_F32 : (int)d; }

/* Floating compute only: integer math (wrapping, saturating casts) stays
 * with the reference kernels. The node's value must be representable in the
 * register type: its own dtype is that type (or bfloat16 in float), or BOOL
 * (kept as 0/1). */
int tile_member_type(const exec_graph *g, const gnode *y) {
    if (!tile_op(y->op) || y->nin > 3) return -1;
    lt_dtype d = (lt_dtype)y->dtype;
    if (y->op == LT_OP_FILL) return dtype_is_float(d) ? reg_type(d) : -1;
    lt_dtype dts[3];
    unsigned zmask = 0;
    for (int i = 0; i < y->nin; i++) {
        dts[i] = (lt_dtype)g->nodes[y->in[i]].dtype;
        zmask |= (unsigned)(g->nodes[y->in[i]].ndim == 0) << i;
    }
    if (y->op == LT_OP_CAST) {
        if (dtype_is_float(d)) return reg_type(d); /* loads convert any input */
        return d == LT_BOOL && dtype_is_float(dts[0]) ? reg_type(dts[0]) : -1;
    }
    lt_dtype cd = ir_compute_dtype(y->op, y->nin, dts, zmask);
    if (!dtype_is_float(cd) || (d != cd && d != LT_BOOL)) return -1;
    /* A bfloat16 comparison rounds a wider operand (or its scalar) to
     * bfloat16 first; float registers would compare it unrounded. */
    if (LT_UNLIKELY(cd == LT_BF16) && d == LT_BOOL &&
        (y->op >= LT_OP_EQ_SCALAR || dts[0] != LT_BF16 || (y->nin > 1 && dts[1] != LT_BF16)))
        return -1;
    return reg_type(cd);
}

size_t tile_scratch_bytes(const tprog *p) { return (size_t)p->nregs * TILE * (p->rtype == LT_F32 ? 4 : 8); }

static tile_fn pick(int rtype) {
    int f = rtype == LT_F32;
#ifdef HAVE_ISA
    switch (core_isa()) {
    case 2: return f ? tile_f32_avx512 : tile_f64_avx512;
    case 1: return f ? tile_f32_avx2 : tile_f64_avx2;
    default: break;
    }
#endif
    return f ? tile_f32_base : tile_f64_base;
}

void tile_run(const tprog *p, const void *const *in, void *const *out, const double *scal, char *scratch,
              size_t stride) {
    tile_fn fn = pick(p->rtype);
    /* A store is computed straight into its output unless that output is
     * also an input (in place: the stores run last) or of another type.
     * Streaming (non-temporal) stores measured no faster here: the memcpy
     * floor pays the read-for-ownership too. */
    uint8_t direct[TILE_MAX_REGS];
    for (int j = 0; j < p->nstore; j++) {
        direct[j] = p->stores[j].dtype == p->rtype;
        for (int k = 0; k < p->nload; k++) direct[j] &= out[j] != in[k];
    }
    int64_t ntiles = (p->numel + TILE - 1) / TILE;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (ntiles >= 32)
#endif
    for (int64_t t = 0; t < ntiles; t++) {
        int64_t i0 = t * TILE, n = p->numel - i0 < TILE ? p->numel - i0 : TILE;
        fn(p, in, out, scal, direct, scratch + (size_t)THREAD_NUM() * stride, i0, n);
    }
}
