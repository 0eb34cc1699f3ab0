/* The tile interpreter: a fused elementwise group is a short register
 * program run over tiles of TILE elements that stay in L1, tiles spread over
 * OpenMP threads. The typed loops live in tile_body.h, instantiated here for
 * float and double. */
#include "cpu.h"

#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#define THREAD_NUM() omp_get_thread_num()
#define OMP_SIMD _Pragma("omp simd")
#else
#define THREAD_NUM() 0
#define OMP_SIMD /* without OpenMP, gcc -O2 may still vectorize */
#endif

/* glibc's libmvec has vector variants of these; declaring them `simd` (as
 * glibc's own header does under -ffast-math) lets gcc call them from the
 * vectorized loops without giving up IEEE semantics elsewhere. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SIMD_DECL __attribute__((simd("notinbranch")))
double exp(double) SIMD_DECL;
double log(double) SIMD_DECL;
double pow(double, double) SIMD_DECL;
double tanh(double) SIMD_DECL;
#endif

#define T float
#define FN(x) x##_f32
#include "tile_body.h"
#undef T
#undef FN

#define T double
#define FN(x) x##_f64
#include "tile_body.h"

static int tile_op(int op) {
    switch (op) { /* the ops tile_body.h implements; anything else is not fused */
    case LT_OP_FILL: case LT_OP_ADD: case LT_OP_SUB: case LT_OP_MUL: case LT_OP_DIV: case LT_OP_MAXIMUM:
    case LT_OP_MINIMUM: case LT_OP_POW: case LT_OP_EQ: case LT_OP_NE: case LT_OP_LT: case LT_OP_LE: case LT_OP_GT:
    case LT_OP_GE: case LT_OP_ADD_SCALAR: case LT_OP_MUL_SCALAR: case LT_OP_POW_SCALAR: case LT_OP_CLAMP:
    case LT_OP_NEG: case LT_OP_EXP: case LT_OP_LOG: case LT_OP_SQRT: case LT_OP_RSQRT: case LT_OP_ABS:
    case LT_OP_RELU: case LT_OP_TANH: case LT_OP_SIGMOID: case LT_OP_CAST: case LT_OP_LERP: case LT_OP_WHERE:
    case LT_OP_ADDCMUL: case LT_OP_ADDCDIV:
        return 1;
    default:
        return 0;
    }
}

/* Floating compute only: integer math (wrapping, saturating casts) stays
 * with the reference kernels. The node's value must be representable in the
 * register type: its own dtype is that type, or BOOL (kept as 0/1). */
int tile_member_type(const exec_graph *g, const gnode *y) {
    if (!tile_op(y->op) || y->nin > 3) return -1;
    lt_dtype d = (lt_dtype)y->dtype;
    if (y->op == LT_OP_FILL) return dtype_is_float(d) ? (int)d : -1;
    lt_dtype dts[3];
    for (int i = 0; i < y->nin; i++) dts[i] = (lt_dtype)g->nodes[y->in[i]].dtype;
    if (y->op == LT_OP_CAST) {
        if (dtype_is_float(d)) return (int)d; /* loads convert any input */
        return d == LT_BOOL && dtype_is_float(dts[0]) ? (int)dts[0] : -1;
    }
    lt_dtype cd = ir_compute_dtype(y->op, y->nin, dts);
    if (!dtype_is_float(cd) || (d != cd && d != LT_BOOL)) return -1;
    return (int)cd;
}

size_t tile_scratch_bytes(const tprog *p) { return (size_t)p->nregs * TILE * (p->rtype == LT_F32 ? 4 : 8); }

void tile_run(const tprog *p, const void *const *in, void *const *out, const double *scal, char *scratch,
              size_t stride) {
    if (p->rtype == LT_F32) run_f32(p, in, out, scal, scratch, stride);
    else run_f64(p, in, out, scal, scratch, stride);
}
