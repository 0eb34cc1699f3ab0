/* The fast cpu backend against the reference backend (DESIGN 10, oracle 2):
 * every op of the table on random shapes (broadcasting, size-1 and empty
 * dims, non-contiguous views) and every dtype the op accepts, then random
 * whole programs, fused, with in-place ops through views. The cpu backend
 * runs with guard bytes after every buffer it allocates. */
#define _POSIX_C_SOURCE 200809L /* sysconf */
#include "harness.h"

#include "api/nn.h"
#include "backend/cpu/cpu.h"
#include "core/isa.h"
#include "exec/exec.h"

#include <unistd.h>

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}
static int rint_(int n) { return (int)(rnd() % (uint64_t)n); }
static double runif(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

/* Dtypes drawn at random: every lt_dtype, bfloat16 and uint8 included. */
#define NDT 7
/* The bfloat16 pass (TEST(every_op_bf16)): every float tensor the cases
 * ask for is made bfloat16, and each compared op counts in covered_bf16. */
static int g_bf16;
static double g_bf16_tol = 1e-2; /* differential's tolerance for bfloat16 results (attention_case: its backward) */

/* A materialized tensor of random values; `pos` keeps floats positive. */
static lt_tensor *rand_tensor(lt_dtype dt, int nd, const int64_t *shape, int pos) {
    if (g_bf16 && (dt == LT_F32 || dt == LT_F64)) dt = LT_BF16;
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    unsigned char *buf = malloc((size_t)(n ? n : 1) * 8);
    for (int64_t i = 0; i < n; i++) {
        double v = pos ? 0.1 + 2 * runif() : 4 * runif() - 2;
        if (!pos && rint_(50) == 0) v = 0;
        switch (dt) {
        case LT_F32: ((float *)buf)[i] = (float)v; break;
        case LT_F64: ((double *)buf)[i] = v; break;
        case LT_I32: ((int32_t *)buf)[i] = (int32_t)(v * 3); break;
        case LT_I64: ((int64_t *)buf)[i] = (int64_t)(v * 3); break;
        case LT_BOOL: buf[i] = v > 0; break;
        case LT_BF16: ((uint16_t *)buf)[i] = bf16_from_f32((float)v); break;
        case LT_U8: buf[i] = (uint8_t)(int)(v * 70); break; /* both ends of 0..255 (negatives wrap) */
        }
    }
    lt_tensor *t = lt_from_data(buf, dt, nd, shape);
    free(buf);
    return t;
}

/* The same values, but as a non-contiguous view (a transposed copy, transposed back). */
static lt_tensor *noncontig(lt_tensor *t) {
    if (lt_ndim(t) < 2) return NULL;
    lt_tensor *t1 = lt_transpose(t, 0, 1), *tt = lt_contiguous(t1);
    lt_tensor *v = lt_transpose(tt, 0, 1); /* a view: it keeps tt's storage alive */
    lt_free(t1);
    lt_free(tt);
    return v;
}

static int64_t g_ops_run, g_ops_skipped;
static int covered[LT_OP_COUNT], covered_bf16[LT_OP_COUNT];

/* Runs make() on backend b and reads its result as doubles. */
typedef lt_tensor *(*maker)(void *ctx);
static double *run_on(int b, maker make, void *ctx, int64_t *n, lt_dtype *dt) {
    exec_set_backend(b);
    lt_tensor *t = make(ctx);
    if (!t) {
        exec_set_backend(-1);
        return NULL;
    }
    *n = lt_numel(t);
    *dt = lt_dtype_of(t);
    double *v = h_read(t);
    lt_free(t);
    exec_set_backend(-1);
    return v;
}

static int compare(const char *what, const double *r, const double *c, int64_t n, double tol) {
    for (int64_t i = 0; i < n; i++) {
        double a = r[i], b = c[i];
        if (isnan(a) || isnan(b)) {
            if (isnan(a) != isnan(b)) {
                h_fail(__FILE__, __LINE__, "%s: element %lld: ref %g, cpu %g (NaN mismatch)", what, (long long)i, a, b);
                return 0;
            }
            continue;
        }
        if (isinf(a) || isinf(b)) {
            if (a != b) {
                h_fail(__FILE__, __LINE__, "%s: element %lld: ref %g, cpu %g (inf mismatch)", what, (long long)i, a, b);
                return 0;
            }
            continue;
        }
        if (fabs(a - b) > tol * (1 + fabs(a))) {
            h_fail(__FILE__, __LINE__, "%s: element %lld: ref %.9g, cpu %.9g (tol %g)", what, (long long)i, a, b, tol);
            return 0;
        }
    }
    return 1;
}

/* Both backends; returns 1 if the op was accepted (no error) and compared. */
static int differential(const char *what, int op, maker make, void *ctx, double tol) {
    int64_t nr = 0, nc = 0;
    lt_dtype dr = LT_F32, dc = LT_F32;
    double *r = run_on(1, make, ctx, &nr, &dr);
    if (!r) {
        lt_clear_error();
        g_ops_skipped++;
        return 0;
    }
    double *c = run_on(0, make, ctx, &nc, &dc);
    CHECK_MSG(c != NULL, "%s: cpu failed: %s", what, lt_error_message());
    if (c) {
        CHECK_MSG(nr == nc && dr == dc, "%s: numel/dtype differ", what);
        if (nr == nc) {
            /* bfloat16: both sides round the same float math to 8 bits;
             * they may differ by a rounding (2^-8 relative) where the
             * math before it differed in float's last bits. In the
             * bfloat16 pass a float32 result may hold such values too (a
             * cat of bfloat16 dx with float32 parameter gradients). */
            double t = dr == LT_F32 ? (g_bf16 ? 1e-2 : tol) : dr == LT_F64 ? tol * 1e-6 : dr == LT_BF16 ? g_bf16_tol : 0;
            compare(what, r, c, nr, t);
        }
    }
    free(r);
    free(c);
    lt_clear_error();
    if (op >= 0) covered[op] = 1;
    if (op >= 0 && g_bf16) covered_bf16[op] = 1;
    g_ops_run++;
    return 1;
}

/* ---- per-op cases ------------------------------------------------------- */

typedef struct ectx {
    int op;
    lt_tensor *in[3];
    double sc[2];
    lt_dtype to;
} ectx;

static lt_tensor *make_elem(void *p) {
    ectx *e = p;
    lt_tensor **x = e->in;
    switch (e->op) {
    case LT_OP_ADD: return lt_add(x[0], x[1]);
    case LT_OP_SUB: return lt_sub(x[0], x[1]);
    case LT_OP_MUL: return lt_mul(x[0], x[1]);
    case LT_OP_DIV: return lt_div(x[0], x[1]);
    case LT_OP_MAXIMUM: return lt_maximum(x[0], x[1]);
    case LT_OP_MINIMUM: return lt_minimum(x[0], x[1]);
    case LT_OP_POW: return lt_pow(x[0], x[1]);
    case LT_OP_EQ: return lt_eq(x[0], x[1]);
    case LT_OP_NE: return lt_ne(x[0], x[1]);
    case LT_OP_LT: return lt_lt(x[0], x[1]);
    case LT_OP_LE: return lt_le(x[0], x[1]);
    case LT_OP_GT: return lt_gt(x[0], x[1]);
    case LT_OP_GE: return lt_ge(x[0], x[1]);
    case LT_OP_ADD_SCALAR: return lt_add_scalar(x[0], e->sc[0]);
    case LT_OP_MUL_SCALAR: return lt_mul_scalar(x[0], e->sc[0]);
    case LT_OP_POW_SCALAR: return lt_pow_scalar(x[0], e->sc[0]);
    case LT_OP_CLAMP: return lt_clamp(x[0], e->sc[0], e->sc[1]);
    case LT_OP_NEG: return lt_neg(x[0]);
    case LT_OP_EXP: return lt_exp(x[0]);
    case LT_OP_LOG: return lt_log(x[0]);
    case LT_OP_SQRT: return lt_sqrt(x[0]);
    case LT_OP_RSQRT: return lt_rsqrt(x[0]);
    case LT_OP_ABS: return lt_abs(x[0]);
    case LT_OP_RELU: return lt_relu(x[0]);
    case LT_OP_TANH: return lt_tanh(x[0]);
    case LT_OP_SIGMOID: return lt_sigmoid(x[0]);
    case LT_OP_CAST: return lt_to_dtype(x[0], e->to);
    case LT_OP_LERP: return lt_lerp(x[0], x[1], e->sc[0]);
    case LT_OP_WHERE: return lt_where(x[0], x[1], x[2]);
    case LT_OP_ADDCMUL: return lt_addcmul(x[0], x[1], x[2], e->sc[0]);
    case LT_OP_ADDCDIV: return lt_addcdiv(x[0], x[1], x[2], e->sc[0]);
    case LT_OP_FILL: return lt_full(e->sc[0], e->to, lt_ndim(x[0]), lt_shape(x[0]));
    case LT_OP_ERF: return lt_erf(x[0]);
    case LT_OP_GELU: return lt_gelu(x[0], e->sc[0] != 0);
    case LT_OP_GELU_BWD: return nn_gelu_backward(x[0], x[1], e->sc[0] != 0);
    case LT_OP_ADD_SCALED: return lt_add_scaled(x[0], x[1], e->sc[0]);
    case LT_OP_EQ_SCALAR: return lt_eq_scalar(x[0], e->sc[0]);
    case LT_OP_NE_SCALAR: return lt_ne_scalar(x[0], e->sc[0]);
    case LT_OP_LT_SCALAR: return lt_lt_scalar(x[0], e->sc[0]);
    case LT_OP_LE_SCALAR: return lt_le_scalar(x[0], e->sc[0]);
    case LT_OP_GT_SCALAR: return lt_gt_scalar(x[0], e->sc[0]);
    case LT_OP_GE_SCALAR: return lt_ge_scalar(x[0], e->sc[0]);
    case LT_OP_MASKED_FILL: {
        lt_tensor *m = lt_to_dtype(x[1], LT_BOOL), *r = lt_masked_fill(x[0], m, e->sc[0]);
        lt_free(m);
        return r;
    }
    case LT_OP_SIGN: return lt_sign(x[0]);
    case LT_OP_SILU: return lt_silu(x[0]);
    case LT_OP_SILU_BWD: return lt_silu_backward(x[0], x[1]);
    case LT_OP_HARDSWISH: return lt_hardswish(x[0]);
    case LT_OP_HARDSWISH_BWD: return lt_hardswish_backward(x[0], x[1]);
    case LT_OP_HARDSIGMOID: return lt_hardsigmoid(x[0]);
    case LT_OP_HARDSIGMOID_BWD: return lt_hardsigmoid_backward(x[0], x[1]);
    case LT_OP_THRESHOLD_BWD: return lt_threshold_backward(x[0], x[1], e->sc[0]);
    case LT_OP_HARDTANH_BWD: return lt_hardtanh_backward(x[0], x[1], e->sc[0], e->sc[1]);
    case LT_OP_SIGMOID_BWD: return lt_sigmoid_backward(x[0], x[1]);
    case LT_OP_TANH_BWD: return lt_tanh_backward(x[0], x[1]);
    case LT_OP_DIV_TRUNC: return lt_div_trunc(x[0], x[1]);
    case LT_OP_DIV_FLOOR: return lt_div_floor(x[0], x[1]);
    case LT_OP_LERP_TENSOR: return lt_lerp_tensor(x[0], x[1], x[2]);
    case LT_OP_BITWISE_AND: return lt_bitwise_and(x[0], x[1]);
    case LT_OP_BITWISE_OR: return lt_bitwise_or(x[0], x[1]);
    case LT_OP_BITWISE_XOR: return lt_bitwise_xor(x[0], x[1]);
    case LT_OP_BITWISE_NOT: return lt_bitwise_not(x[0]);
    default: return NULL;
    }
}

/* A random shape and a broadcast-compatible sibling. */
static int rand_shape(int64_t *s) {
    int nd = rint_(5);
    for (int i = 0; i < nd; i++) s[i] = rint_(8) == 0 ? 1 : 1 + rint_(6);
    if (nd && rint_(12) == 0) s[rint_(nd)] = 0;
    return nd;
}
static int sibling(int nd, const int64_t *s, int64_t *o) {
    int drop = nd ? rint_(nd + 1) : 0, on = nd - drop;
    for (int i = 0; i < on; i++) o[i] = rint_(3) == 0 ? 1 : s[drop + i];
    return on;
}

static void elementwise_op(int op) {
    int arity = g_ops[op].arity;
    char what[96];
    for (int trial = 0; trial < 40; trial++) {
        int64_t s[3][LT_MAX_DIMS];
        int nd[3];
        nd[0] = rand_shape(s[0]);
        for (int j = 1; j < 3; j++) nd[j] = sibling(nd[0], s[0], s[j]);
        if (rint_(2)) { /* the broadcast may be on either side */
            int j = arity > 1 ? 1 : 0;
            int64_t tmp[LT_MAX_DIMS];
            memcpy(tmp, s[0], sizeof tmp);
            memcpy(s[0], s[j], sizeof tmp);
            memcpy(s[j], tmp, sizeof tmp);
            int t = nd[0];
            nd[0] = nd[j];
            nd[j] = t;
        }
        ectx e = {op, {NULL, NULL, NULL}, {0, 0}, (lt_dtype)rint_(NDT)};
        lt_tensor *hold[6] = {0};
        int pos = op == LT_OP_LOG || op == LT_OP_SQRT || op == LT_OP_RSQRT || op == LT_OP_POW || op == LT_OP_POW_SCALAR;
        for (int j = 0; j < (arity > 0 ? arity : 1); j++) {
            lt_dtype dt = (lt_dtype)rint_(NDT);
            if (op == LT_OP_WHERE && j == 0) dt = LT_BOOL;
            if (trial % 3 == 0 && j > 0) dt = lt_dtype_of(e.in[0]); /* matching dtypes: the common case */
            hold[j] = rand_tensor(dt, nd[j], s[j], pos);
            e.in[j] = hold[j];
            if (rint_(3) == 0 && nd[j] >= 2) { /* read through a view */
                hold[3 + j] = noncontig(hold[j]);
                if (hold[3 + j]) e.in[j] = hold[3 + j];
            }
        }
        double scal[] = {0, 1, 0.5, -1.5, 2, 0.25, 3.75};
        e.sc[0] = scal[rint_(7)];
        e.sc[1] = e.sc[0] + scal[rint_(7)];
        if (op == LT_OP_CLAMP && rint_(4) == 0) e.sc[0] = -INFINITY;
        int tr = op == LT_OP_EXP || op == LT_OP_LOG || op == LT_OP_POW || op == LT_OP_POW_SCALAR ||
                 op == LT_OP_TANH || op == LT_OP_SIGMOID || op == LT_OP_ERF || op == LT_OP_GELU ||
                 op == LT_OP_GELU_BWD || op == LT_OP_SILU || op == LT_OP_SILU_BWD;
        snprintf(what, sizeof what, "%s trial %d", g_ops[op].name, trial);
        differential(what, op, make_elem, &e, tr ? 2e-5 : 2e-6);
        for (int j = 0; j < 6; j++) lt_free(hold[j]);
    }
}

typedef struct rctx {
    int op, naxes, axes[LT_MAX_DIMS], keep;
    lt_tensor *x, *y;
} rctx;
static double g_corr; /* VAR/STD's correction */

static lt_tensor *make_reduce(void *p) {
    rctx *r = p;
    switch (r->op) {
    case LT_OP_SUM: return lt_sum(r->x, r->naxes, r->axes, r->keep);
    case LT_OP_MEAN: return lt_mean(r->x, r->naxes, r->axes, r->keep);
    case LT_OP_MAX: return lt_max(r->x, r->naxes, r->axes, r->keep);
    case LT_OP_MIN: return lt_min(r->x, r->naxes, r->axes, r->keep);
    case LT_OP_CUMSUM: return lt_cumsum(r->x, r->axes[0], r->keep);
    case LT_OP_FLIP: return lt_flip(r->x, r->naxes, r->axes);
    case LT_OP_VAR: return lt_var(r->x, r->naxes, r->axes, g_corr, r->keep);
    case LT_OP_STD: return lt_std(r->x, r->naxes, r->axes, g_corr, r->keep);
    case LT_OP_ARGMAX: return lt_argmax(r->x, r->axes[0], r->keep);
    case LT_OP_ARGMIN: return lt_argmin(r->x, r->axes[0], r->keep);
    case LT_OP_SOFTMAX: return lt_softmax(r->x, r->axes[0]);
    case LT_OP_LOG_SOFTMAX: return lt_log_softmax(r->x, r->axes[0]);
    case LT_OP_MATMUL: return (r->keep ? nn_matmul_wide : lt_matmul)(r->x, r->y); /* keep: float32 sums of bfloat16 */
    default: return NULL;
    }
}

static void reduce_op(int op) {
    char what[96];
    for (int trial = 0; trial < 20; trial++) {
        int64_t s[LT_MAX_DIMS];
        int nd = rand_shape(s);
        if (nd == 0) nd = 1, s[0] = 3;
        rctx r = {op, rint_(nd + 1), {0}, rint_(2), NULL, NULL};
        for (int i = 0; i < r.naxes; i++) r.axes[i] = i;
        if (op >= LT_OP_ARGMAX) r.axes[0] = rint_(nd);
        r.x = rand_tensor((lt_dtype)rint_(NDT), nd, s, 0);
        snprintf(what, sizeof what, "%s trial %d", g_ops[op].name, trial);
        differential(what, op, make_reduce, &r, 1e-5);
        lt_free(r.x);
    }
}

static void matmul_cases(void) {
    int64_t shapes[][2][4] = {{{3, 4}, {4, 5}}, {{4}, {4, 2}}, {{2, 4}, {4}}, {{4}, {4}},
                              {{2, 3, 4}, {4, 5}}, {{2, 1, 3, 4}, {3, 4, 2}}, {{3, 0}, {0, 2}}, {{0, 3}, {3, 2}}};
    int nds[][2] = {{2, 2}, {1, 2}, {2, 1}, {1, 1}, {3, 2}, {4, 3}, {2, 2}, {2, 2}};
    for (int c = 0; c < 8; c++)
        for (int dt = 0; dt < 3; dt++) {
            lt_dtype d = dt == 0 ? LT_F32 : dt == 1 ? LT_F64 : LT_I64;
            rctx r = {LT_OP_MATMUL, 0, {0}, 0, rand_tensor(d, nds[c][0], shapes[c][0], 0),
                      rand_tensor(d, nds[c][1], shapes[c][1], 0)};
            lt_tensor *x = r.x, *v = c == 0 ? noncontig(x) : NULL;
            if (v) r.x = v;
            differential("matmul", LT_OP_MATMUL, make_reduce, &r, 1e-5);
            lt_free(v);
            lt_free(x);
            lt_free(r.y);
        }
    /* operands that are transposes of matrices (a linear layer's weight
     * gradient, g^T x): the cpu backend reads the matrix, the GEMM transposes */
    for (int c = 0; c < 4; c++) {
        int64_t n = 1 + rint_(70), k = 2 + rint_(70), m = 2 + rint_(70);
        lt_tensor *a = rand_tensor(LT_F32, 2, c & 1 ? (int64_t[]){k, n} : (int64_t[]){n, k}, 0);
        lt_tensor *b = rand_tensor(LT_F32, 2, c & 2 ? (int64_t[]){m, k} : (int64_t[]){k, m}, 0);
        rctx r = {LT_OP_MATMUL, 0, {0}, 0, c & 1 ? lt_t(a) : a, c & 2 ? lt_t(b) : b};
        differential("matmul of transposes", LT_OP_MATMUL, make_reduce, &r, 1e-5);
        if (r.x != a) lt_free(r.x);
        if (r.y != b) lt_free(r.y);
        lt_free(a), lt_free(b);
    }
    /* nn_matmul_wide: bfloat16 operands (transposed or not), float32 sums
     * unrounded (autocast's weight gradients); both sides sum exact products */
    for (int c = 0; c < 8; c++) {
        int64_t n = 1 + rint_(90), k = 1 + rint_(300), m = 1 + rint_(90);
        lt_tensor *a32 = rand_tensor(LT_F32, 2, c & 1 ? (int64_t[]){k, n} : (int64_t[]){n, k}, 0);
        lt_tensor *b32 = rand_tensor(LT_F32, 2, c & 2 ? (int64_t[]){m, k} : (int64_t[]){k, m}, 0);
        lt_tensor *a = lt_to_dtype(a32, LT_BF16), *b = lt_to_dtype(b32, LT_BF16);
        rctx r = {LT_OP_MATMUL, 0, {0}, 1, c & 1 ? lt_t(a) : a, c & 2 ? lt_t(b) : b};
        differential("float32 matmul of bfloat16 operands", LT_OP_MATMUL, make_reduce, &r, 1e-5);
        if (r.x != a) lt_free(r.x);
        if (r.y != b) lt_free(r.y);
        lt_free(a), lt_free(b), lt_free(a32), lt_free(b32);
    }
}

typedef struct vctx {
    int kind;
    lt_tensor *x, *y;
    int64_t a, b;
} vctx;

/* A contiguous copy of a view; the view handle is freed. */
static lt_tensor *copy_of_view(lt_tensor *view) {
    lt_tensor *c = lt_contiguous(view);
    lt_free(view);
    return c;
}

/* Views (AS_STRIDED), scatters (in-place through views) and cat. */
static lt_tensor *make_view(void *p) {
    vctx *v = p;
    switch (v->kind) {
    case 0: return copy_of_view(lt_slice(v->x, 0, v->a, v->a + 2, 2));
    case 1: return copy_of_view(lt_transpose(v->x, 0, 1));
    case 2: return copy_of_view(lt_diagonal(v->x, 0, 0, 1));
    case 3: { /* scatter: in-place through a slice of a fresh copy */
        lt_tensor *c = lt_clone(v->x);
        lt_tensor *sl = lt_slice(c, 1, 0, 2, 1);
        lt_mul_scalar_(sl, 3.5);
        lt_add_scalar_(sl, 1.25);
        lt_free(sl);
        return c;
    }
    case 4: { /* scatter whose base dies: the clone is only read back through the base */
        lt_tensor *c = lt_mul_scalar(v->x, 2);
        lt_tensor *row = lt_select(c, 0, v->a);
        lt_copy_(row, v->y);
        lt_free(row);
        lt_tensor *r = lt_add_scalar(c, 1);
        lt_free(c);
        return r;
    }
    case 5: {
        lt_tensor *in[3] = {v->x, v->x, v->x};
        return lt_cat(3, in, (int)v->a);
    }
    case 6: { /* a view of a pending value; the view keeps the storage alive */
        lt_tensor *m = lt_mul_scalar(v->x, 3), *r = lt_reshape(m, 1, (int64_t[]){-1});
        lt_free(m);
        return r;
    }
    default: return NULL;
    }
}

static void view_cases(void) {
    char what[64];
    for (int kind = 0; kind < 7; kind++)
        for (int dt = 0; dt < NDT; dt++) {
            int64_t s[3] = {4, 5, 3};
            vctx v = {kind, rand_tensor((lt_dtype)dt, 3, s, 0), NULL, rint_(2), 0};
            int64_t rs_[2] = {5, 3};
            v.y = rand_tensor((lt_dtype)dt, 2, rs_, 0);
            if (kind == 5) v.a = rint_(3);
            snprintf(what, sizeof what, "view kind %d dtype %d", kind, dt);
            int op = kind == 5 ? LT_OP_CAT : kind >= 3 && kind <= 4 ? LT_OP_AS_STRIDED_SCATTER : LT_OP_AS_STRIDED;
            differential(what, op, make_view, &v, 1e-6);
            lt_free(v.x);
            lt_free(v.y);
        }
}

TEST(every_elementwise_op) {
    for (int op = 0; op < LT_OP_COUNT; op++)
        if (g_ops[op].kind == ELEMWISE || g_ops[op].kind == CREATE) elementwise_op(op);
}

TEST(reductions_softmax_matmul) {
    int ops[] = {LT_OP_SUM, LT_OP_MEAN, LT_OP_MAX, LT_OP_MIN, LT_OP_ARGMAX, LT_OP_ARGMIN, LT_OP_SOFTMAX, LT_OP_LOG_SOFTMAX};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) reduce_op(ops[i]);
    matmul_cases();
}

/* A few NaNs and infinities written into x in place (strided slices of
 * its flat view, from random starts). */
static void add_specials(lt_tensor *x) {
    lt_tensor *flat = lt_reshape(x, 1, (int64_t[]){-1});
    int64_t n = lt_numel(flat);
    double sv[3] = {NAN, INFINITY, -INFINITY};
    for (int k = 0; k < 3; k++) {
        lt_tensor *e = lt_slice(flat, 0, (int64_t)rint_((int)n), -1, n / 2 + 1);
        lt_fill_(e, sv[k]);
        lt_free(e);
    }
    lt_free(flat);
}

/* Reductions big enough for the threaded and split paths of reduce.c, every
 * axis pattern it canonicalizes (and one it leaves to the reference), plus
 * NaN and infinities; random axis subsets on small shapes. */
static void fast_reduction_cases(void) {
    static const struct {
        int nd;
        int64_t s[4];
        int naxes, axes[4];
    } C[] = {
        {4, {8, 16, 20, 20}, 3, {0, 2, 3}}, /* bias/BN gradient: per channel */
        {4, {8, 16, 20, 20}, 2, {2, 3}},    /* global pooling */
        {1, {300001}, 0, {0}},               /* everything: split over threads */
        {2, {5000, 7}, 1, {0}},              /* leading axis, few columns: rows split */
        {2, {64, 3000}, 1, {0}},             /* leading axis, several column blocks */
        {2, {3, 50000}, 1, {1}},
        {4, {4, 5, 6, 7}, 2, {1, 3}},
        {4, {2, 3, 40, 50}, 2, {0, 2}},      /* R K R K: the reference kernel */
        {3, {30, 1, 4000}, 2, {0, 1}},
    };
    int ops[] = {LT_OP_SUM, LT_OP_MEAN, LT_OP_MAX, LT_OP_MIN};
    char what[96];
    for (size_t c = 0; c < sizeof C / sizeof C[0]; c++)
        for (int dt = 0; dt < 2; dt++)
            for (int special = 0; special < 2; special++) {
                lt_tensor *x = rand_tensor((lt_dtype)dt, C[c].nd, C[c].s, 0);
                if (special) add_specials(x);
                for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
                    rctx r = {ops[o], C[c].naxes, {0}, (int)(c & 1), x, NULL};
                    memcpy(r.axes, C[c].axes, sizeof C[c].axes);
                    snprintf(what, sizeof what, "%s case %zu dtype %d special %d", g_ops[ops[o]].name, c, dt, special);
                    differential(what, ops[o], make_reduce, &r, 1e-5);
                }
                lt_free(x);
            }
    for (int trial = 0; trial < 60; trial++) { /* random axis subsets */
        int64_t s[LT_MAX_DIMS];
        int nd = rand_shape(s);
        rctx r = {ops[trial % 4], 0, {0}, rint_(2), NULL, NULL};
        for (int d = 0; d < nd; d++)
            if (rint_(2)) r.axes[r.naxes++] = d;
        if (!r.naxes && nd) r.axes[r.naxes++] = nd - 1;
        r.x = rand_tensor((lt_dtype)rint_(2), nd, s, 0);
        snprintf(what, sizeof what, "%s axes trial %d", g_ops[r.op].name, trial);
        differential(what, r.op, make_reduce, &r, 1e-5);
        lt_free(r.x);
    }
    /* Arg-reductions and softmax on long rows and columns. */
    int64_t rows_[2] = {40, 1000}, cols_[2] = {1000, 40}, sm[3] = {3, 70, 333};
    int aops[] = {LT_OP_ARGMAX, LT_OP_ARGMIN, LT_OP_SOFTMAX, LT_OP_LOG_SOFTMAX};
    for (int dt = 0; dt < 2; dt++)
        for (int a = 0; a < 4; a++)
            for (int shape = 0; shape < 3; shape++) {
                int nd = shape == 2 ? 3 : 2;
                lt_tensor *x = rand_tensor((lt_dtype)dt, nd, shape == 0 ? rows_ : shape == 1 ? cols_ : sm, 0);
                for (int dim = -1; dim >= -nd; dim--) {
                    rctx r = {aops[a], 1, {dim}, rint_(2), x, NULL};
                    snprintf(what, sizeof what, "%s shape %d dim %d dtype %d", g_ops[aops[a]].name, shape, dim, dt);
                    differential(what, aops[a], make_reduce, &r, 1e-5);
                }
                lt_free(x);
            }
    /* The fast kernels did run: none of these falls back. */
    exec_set_backend(0);
    lt_tensor *x = rand_tensor(LT_F32, 4, C[0].s, 0);
    double f0 = lt_metric("FallbackOps");
    lt_tensor *y[5] = {lt_sum(x, 3, C[0].axes, false), lt_mean(x, 2, C[1].axes, true), lt_max(x, 0, NULL, false),
                       lt_argmax(x, 1, false), lt_log_softmax(x, -1)};
    lt_mark_step();
    CHECK(lt_metric("FallbackOps") == f0);
    for (int i = 0; i < 5; i++) lt_free(y[i]);
    lt_free(x);
    exec_set_backend(-1);
}

/* bfloat16 SUM/MEAN/MAX/MIN on the shapes of reduce.c's paths: leading-axis
 * sums of many rows (eight added in registers, then the rest; rows split
 * over the threads), column counts around the vector widths, several
 * column blocks, a trailing-axis and a full sum, with NaN and infinities.
 * The global random stream is put back after. */
static void bf16_reduction_cases(void) {
    static const struct {
        int nd;
        int64_t s[3];
        int naxes, axes[2];
    } C[] = {
        {2, {1003, 385}, 1, {0}}, {2, {97, 1537}, 1, {0}}, {2, {13, 3}, 1, {0}},     {2, {5000, 7}, 1, {0}},
        {3, {9, 17, 33}, 2, {0, 1}}, {2, {40, 1000}, 1, {1}}, {1, {300001}, 1, {0}},
    };
    uint64_t keep = rs;
    int ops[] = {LT_OP_SUM, LT_OP_MEAN, LT_OP_MAX, LT_OP_MIN};
    char what[96];
    for (size_t c = 0; c < sizeof C / sizeof C[0]; c++)
        for (int special = 0; special < 2; special++) {
            lt_tensor *x = rand_tensor(LT_BF16, C[c].nd, C[c].s, 0);
            if (special) add_specials(x);
            for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
                rctx r = {ops[o], C[c].naxes, {0}, (int)(c & 1), x, NULL};
                memcpy(r.axes, C[c].axes, sizeof C[c].axes);
                snprintf(what, sizeof what, "%s bf16 case %zu special %d", g_ops[ops[o]].name, c, special);
                differential(what, ops[o], make_reduce, &r, 1e-5);
            }
            lt_free(x);
        }
    rs = keep;
}

TEST(fast_reductions) {
    fast_reduction_cases();
    bf16_reduction_cases();
}

/* GELU and its gradient, both forms, at the inputs where the float
 * formulas of gelu_f32.h take their other branches: the tails (exp's
 * subnormal and zero results, 1 + tanh from exp(-2|z|) below x = -3), x^3
 * and x^2 overflowing (past 7e12 and 1.8e19), infinities and NaN; gradients
 * of tens multiply the derivative's error (not hundreds: the erf form's
 * 1 + erf(x / sqrt 2) keeps float's absolute error, ~1e-7, where it is
 * ~1e-5 below x = -4, as PyTorch's float kernel does). Lengths around the
 * vector widths, float32 and bfloat16. Its own random stream: the other cases'
 * draws stay as they were. */
static void gelu_extreme_cases(void) {
    uint64_t st = 12345;
    static const float special[] = {INFINITY, -INFINITY, NAN,   1e13f, -1e13f, 2e19f,  -2e19f, 3e38f,
                                    -3e38f,   -1e19f,    1e19f, 0.0f,  -0.0f,  1e-30f, -3.5f,  -5.0f};
    static const int64_t lens[] = {1, 15, 17, 33, 129, 1037};
    char what[96];
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
        for (int bf = 0; bf < 2; bf++) {
            int64_t n = lens[li];
            float *xv = malloc((size_t)n * sizeof *xv), *gv = malloc((size_t)n * sizeof *gv);
            for (int64_t i = 0; i < n; i++) {
                st = st * 6364136223846793005ull + 1442695040888963407ull;
                double u = (double)(st >> 11) * 0x1.0p-53, v = (double)((st >> 3) & 0xffff) / 65536.0;
                xv[i] = i % 3 == 0 ? special[(i / 3) % 16] : (float)(40 * u - 20);
                gv[i] = (float)(100 * v - 50);
            }
            lt_tensor *x32 = lt_from_data(xv, LT_F32, 1, &n), *g32 = lt_from_data(gv, LT_F32, 1, &n);
            lt_tensor *x = bf ? lt_to_dtype(x32, LT_BF16) : x32, *g = bf ? lt_to_dtype(g32, LT_BF16) : g32;
            for (int op = 0; op < 2; op++)
                for (int form = 0; form < 2; form++) {
                    ectx e = {op ? LT_OP_GELU_BWD : LT_OP_GELU, {op ? g : x, op ? x : NULL, NULL}, {form, 0}, LT_F32};
                    snprintf(what, sizeof what, "%s %s n %lld %s", g_ops[e.op].name, form ? "tanh" : "erf",
                             (long long)n, bf ? "bf16" : "f32");
                    differential(what, e.op, make_elem, &e, 2e-5);
                }
            if (bf) lt_free(x), lt_free(g);
            lt_free(x32), lt_free(g32);
            free(xv), free(gv);
        }
}

TEST(gelu_extremes) { gelu_extreme_cases(); }

/* The vectorized loops again with each narrower instruction set this
 * machine has (CI machines may have fewer than this one). */
static void attention_case(int trial); /* transformer ops, below */
static void layer_norm_rows_cases(void);

TEST(every_isa) {
    for (int level = core_isa() - 1; level >= 0; level--) {
        core_set_isa(level);
        for (int op = 0; op < LT_OP_COUNT; op++)
            if (g_ops[op].kind == ELEMWISE || g_ops[op].kind == CREATE) elementwise_op(op);
        fast_reduction_cases();
        bf16_reduction_cases();
        gelu_extreme_cases();
        layer_norm_rows_cases();
        for (int t = 0; t < 6; t++) attention_case(t);
    }
    core_set_isa(-1);
}

TEST(views_scatters_cat) { view_cases(); }

/* ---- NN ops: conv, pooling, batch norm, linear (oneDNN / fast C kernels on cpu) ---- */

typedef struct nctx {
    int op;
    lt_tensor *x, *w, *b, *g, *rm, *rv;
    int64_t st[2], pad[2], dil[2], k[2], groups, xs[4], ws[4];
    int training, temps; /* temps: batch norm reads computed x and g */
    double eps2;         /* BN_PAIR: the weight gradient's eps */
    int res;             /* BN_ACT: add g before the relu; BN_RELU_BWD: add g2 to g */
    lt_tensor *o, *g2;   /* BN_RELU_BWD: the relu's output, the residual branch's gradient */
    int keep_g;          /* BN_RELU_BWD: the masked gradient is an output too */
    int ceil;            /* pooling: ceil_mode (2: also count_include_pad = false) */
    int64_t divisor;     /* average pooling: divisor_override */
} nctx;

/* Not an op: dx and the weight/bias gradients of one batch norm in one
 * graph, which the cpu backend computes in one kernel (K_BN_BWD) when their
 * eps agree at run time. */
#define BN_PAIR (-2)
/* Not an op: relu(batch_norm(x)) or relu(batch_norm(x) + g), which the cpu
 * backend runs as one kernel (K_BN_ACT, fuse.c). */
#define BN_ACT (-3)
/* Not an op: batch norm's backward (dx and the parameters' gradients) of
 * ReLU's backward where(o <= 0, 0, g [+ g2]), which the cpu backend
 * computes in one kernel (K_BN_BWD with its ReLU prologue, fuse.c). */
#define BN_RELU_BWD (-4)
/* Not an op: o = relu(batch_norm(x)), a = conv(o) (depthwise 3x3, so that
 * ReLU's backward below is a kernel of its own), batch norm's backward of
 * where(o <= 0, 0, a): the cpu backend recomputes the mask from x in the
 * backward (K_BN_BWD's xmask, fuse.c) instead of reading o. */
#define BN_XMASK_BWD (-5)

static lt_tensor *make_nn(void *p) {
    nctx *c = p;
    switch (c->op) {
    case LT_OP_CONV2D: return lt_conv2d(c->x, c->w, c->b, c->st, c->pad, c->dil, c->groups);
    case LT_OP_CONV2D_BWD_INPUT: return nn_conv2d_backward_input(c->g, c->w, c->xs, c->st, c->pad, c->dil, c->groups);
    case LT_OP_CONV2D_BWD_WEIGHT: return nn_conv2d_backward_weight(c->g, c->x, c->ws, c->st, c->pad, c->dil, c->groups);
    case LT_OP_MAX_POOL2D: return lt_max_pool2d_ex(c->x, c->k, c->st, c->pad, c->ceil);
    case LT_OP_AVG_POOL2D: return lt_avg_pool2d_ex(c->x, c->k, c->st, c->pad, c->ceil, c->ceil != 2, c->divisor);
    case LT_OP_MAX_POOL2D_INDICES: return lt_max_pool2d_indices(c->x, c->k, c->st, c->pad, c->ceil);
    case LT_OP_ADAPTIVE_AVG_POOL2D: return lt_adaptive_avg_pool2d(c->x, c->k);
    case LT_OP_MAX_POOL2D_BWD: return lt_max_pool2d_backward(c->g, c->x, c->k, c->st, c->pad, c->ceil);
    case LT_OP_AVG_POOL2D_BWD:
        return lt_avg_pool2d_backward(c->g, c->xs, c->k, c->st, c->pad, c->ceil, c->ceil != 2, c->divisor);
    case LT_OP_ADAPTIVE_AVG_POOL2D_BWD: return nn_adaptive_avg_pool2d_backward(c->g, c->xs);
    case LT_OP_LINEAR: return lt_linear(c->x, c->w, c->b);
    case BN_PAIR: {
        lt_tensor *stats = NULL, *y = nn_batch_norm(c->x, c->w, c->b, NULL, NULL, true, 0.1, 1e-5, &stats);
        lt_tensor *dx = nn_batch_norm_backward_input(c->g, c->x, c->w, stats, NULL, NULL, 1e-5);
        lt_tensor *dwb = nn_batch_norm_backward_params(c->g, c->x, stats, NULL, NULL, c->eps2);
        lt_tensor *parts[2] = {lt_flatten(dx, 0, -1), lt_flatten(dwb, 0, -1)}, *r = lt_cat(2, parts, 0);
        lt_free(y), lt_free(stats), lt_free(dx), lt_free(dwb), lt_free(parts[0]), lt_free(parts[1]);
        return r;
    }
    case BN_RELU_BWD: {
        lt_tensor *stats = NULL, *y = nn_batch_norm(c->x, c->w, c->b, NULL, NULL, true, 0.1, 1e-5, &stats);
        lt_tensor *z = lt_full(0.0, lt_dtype_of(c->o), 0, NULL), *le = lt_le(c->o, z);
        lt_tensor *s = c->res ? lt_add(c->g, c->g2) : NULL, *gm = lt_where(le, z, s ? s : c->g);
        lt_tensor *dx = nn_batch_norm_backward_input(gm, c->x, c->w, stats, NULL, NULL, 1e-5);
        lt_tensor *dwb = nn_batch_norm_backward_params(gm, c->x, stats, NULL, NULL, 1e-5);
        lt_tensor *parts[3] = {lt_flatten(dx, 0, -1), lt_flatten(dwb, 0, -1), c->keep_g ? lt_flatten(gm, 0, -1) : NULL};
        lt_tensor *r = lt_cat(2 + c->keep_g, parts, 0);
        lt_free(y), lt_free(stats), lt_free(z), lt_free(le), lt_free(s), lt_free(gm), lt_free(dx), lt_free(dwb);
        for (int i = 0; i < 3; i++) lt_free(parts[i]);
        return r;
    }
    case BN_XMASK_BWD: {
        int64_t one[2] = {1, 1};
        lt_tensor *stats = NULL, *y = nn_batch_norm(c->x, c->w, c->b, NULL, NULL, true, 0.1, 1e-5, &stats);
        lt_tensor *o = lt_relu(y), *a = lt_conv2d(o, c->g2, NULL, one, one, one, lt_shape(c->x)[1]);
        lt_tensor *z = lt_full(0.0, lt_dtype_of(o), 0, NULL), *le = lt_le(o, z), *gm = lt_where(le, z, a);
        lt_tensor *dx = nn_batch_norm_backward_input(gm, c->x, c->w, stats, NULL, NULL, 1e-5);
        lt_tensor *dwb = nn_batch_norm_backward_params(gm, c->x, stats, NULL, NULL, 1e-5);
        lt_tensor *parts[2] = {lt_flatten(dx, 0, -1), lt_flatten(dwb, 0, -1)}, *r = lt_cat(2, parts, 0);
        lt_free(y), lt_free(stats), lt_free(o), lt_free(a), lt_free(z), lt_free(le), lt_free(gm), lt_free(dx);
        lt_free(dwb), lt_free(parts[0]), lt_free(parts[1]);
        return r;
    }
    case BN_ACT: {
        lt_tensor *rm = c->training ? NULL : c->rm, *rv = c->training ? NULL : c->rv;
        lt_tensor *y = nn_batch_norm(c->x, c->w, c->b, rm, rv, c->training, 0.1, 1e-5, NULL);
        lt_tensor *s = c->res ? lt_add(y, c->g) : NULL, *r = lt_relu(s ? s : y);
        lt_free(y), lt_free(s);
        return r;
    }
    case LT_OP_BN_STATS:
    case LT_OP_BN_APPLY:
    case LT_OP_BN_BWD_INPUT:
    case LT_OP_BN_BWD_PARAMS: {
        lt_tensor *stats = NULL, *r = NULL;
        lt_tensor *rm = c->training ? NULL : c->rm, *rv = c->training ? NULL : c->rv; /* training: no in-place update */
        /* x and g computed in the graph, so that they die at the op, which
         * may then write over them */
        lt_tensor *x = c->temps ? lt_add_scalar(c->x, 0.25) : c->x, *g = c->temps ? lt_add_scalar(c->g, 0.5) : c->g;
        lt_tensor *y = nn_batch_norm(x, c->w, c->b, rm, rv, c->training, 0.1, 1e-5, &stats);
        if (c->op == LT_OP_BN_STATS) r = stats, stats = NULL;
        else if (c->op == LT_OP_BN_APPLY) r = y, y = NULL;
        else if (c->op == LT_OP_BN_BWD_INPUT) r = nn_batch_norm_backward_input(g, x, c->w, stats, rm, rv, 1e-5);
        else r = nn_batch_norm_backward_params(g, x, stats, rm, rv, 1e-5);
        lt_free(y);
        lt_free(stats);
        if (c->temps) lt_free(x), lt_free(g);
        return r;
    }
    default: return NULL;
    }
}

/* conv: output size of one spatial dim; < 1 means the geometry is invalid. */
static int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

static void nn_free(nctx *c) {
    lt_free(c->x), lt_free(c->w), lt_free(c->b), lt_free(c->g), lt_free(c->rm), lt_free(c->rv);
    lt_free(c->o), lt_free(c->g2);
}

/* A copy of t (float32 or bfloat16) with some elements set: where `where`
 * is <= 0 (or everywhere if where is NULL), one in `every` becomes +-inf or
 * NaN: a gradient that ReLU's backward must turn into exactly 0, or a relu
 * output that lets the gradient pass. */
static lt_tensor *poisoned(lt_tensor *t, lt_tensor *where, int every) {
    int64_t n = lt_numel(t), shape[LT_MAX_DIMS];
    int nd = lt_ndim(t);
    for (int d = 0; d < nd; d++) shape[d] = lt_shape(t)[d];
    double *v = h_read(t), *m = where ? h_read(where) : NULL;
    lt_dtype dt = lt_dtype_of(t);
    uint16_t *hb = malloc((size_t)(n ? n : 1) * 2);
    float *hf = malloc((size_t)(n ? n : 1) * 4);
    for (int64_t i = 0; i < n; i++) {
        float f = (float)v[i];
        if ((!m || m[i] <= 0) && rint_(every) == 0) f = rint_(3) == 0 ? NAN : rint_(2) ? INFINITY : -INFINITY;
        hf[i] = f;
        hb[i] = bf16_from_f32(f);
    }
    lt_tensor *r = lt_from_data(dt == LT_BF16 ? (void *)hb : (void *)hf, dt, nd, shape);
    free(v), free(m), free(hb), free(hf);
    return r;
}

/* big: channel counts that make oneDNN pick blocked layouts (and reorders). */
static void conv_case(int trial, int big) {
    nctx c = {0};
    int64_t G = 1 + rint_(3), Cg = big ? 8 : 1 + rint_(3), Og = big ? 16 : 1 + rint_(3);
    if (big) G = rint_(3) == 0 ? 2 : 1;
    c.groups = G;
    for (int i = 0; i < 2; i++) {
        c.k[i] = 1 + rint_(3);
        c.st[i] = 1 + rint_(2 + (rint_(3) == 0));
        c.dil[i] = rint_(4) == 0 ? 2 : 1;
        c.pad[i] = rint_((int)c.k[i]);
    }
    int64_t N = 1 + rint_(3), H = 1 + rint_(10) + 4 * big, W = 1 + rint_(10) + 4 * big;
    int64_t oH = conv_out(H, c.k[0], c.st[0], c.pad[0], c.dil[0]), oW = conv_out(W, c.k[1], c.st[1], c.pad[1], c.dil[1]);
    if (oH < 1 || oW < 1) return;
    int64_t xs[4] = {N, G * Cg, H, W}, ws[4] = {G * Og, Cg, c.k[0], c.k[1]}, gs[4] = {N, G * Og, oH, oW}, bs[1] = {G * Og};
    memcpy(c.xs, xs, sizeof xs);
    memcpy(c.ws, ws, sizeof ws);
    c.x = rand_tensor(LT_F32, 4, xs, 0);
    c.w = rand_tensor(LT_F32, 4, ws, 0);
    c.g = rand_tensor(LT_F32, 4, gs, 0);
    if (rint_(2)) c.b = rand_tensor(LT_F32, 1, bs, 0);
    int ops[] = {LT_OP_CONV2D, LT_OP_CONV2D_BWD_INPUT, LT_OP_CONV2D_BWD_WEIGHT};
    for (int i = 0; i < 3; i++) {
        char what[160];
        snprintf(what, sizeof what, "%s trial %d x(%lld,%lld,%lld,%lld) k%lldx%lld s%lld,%lld p%lld,%lld d%lld,%lld g%lld",
                 g_ops[ops[i]].name, trial, (long long)N, (long long)(G * Cg), (long long)H, (long long)W,
                 (long long)c.k[0], (long long)c.k[1], (long long)c.st[0], (long long)c.st[1], (long long)c.pad[0],
                 (long long)c.pad[1], (long long)c.dil[0], (long long)c.dil[1], (long long)G);
        c.op = ops[i];
        differential(what, c.op, make_nn, &c, 1e-4);
    }
    nn_free(&c);
}

static void pool_case(int trial) {
    nctx c = {0};
    for (int i = 0; i < 2; i++) {
        c.k[i] = 1 + rint_(3);
        c.st[i] = 1 + rint_(3);
        c.pad[i] = rint_((int)c.k[i] / 2 + 1);
    }
    int64_t N = 1 + rint_(3), C = 1 + rint_(20), H = 1 + rint_(9), W = 1 + rint_(9);
    int64_t oH = conv_out(H, c.k[0], c.st[0], c.pad[0], 1), oW = conv_out(W, c.k[1], c.st[1], c.pad[1], 1);
    if (oH < 1 || oW < 1) return;
    /* PyTorch's options: ceil_mode (a last, partial window), padding not
     * counted, a divisor_override */
    c.ceil = trial % 3;
    c.divisor = trial % 4 == 3 ? 5 : 0;
    if (c.ceil) {
        int64_t *o[2] = {&oH, &oW}, in[2] = {H, W};
        for (int i = 0; i < 2; i++) {
            *o[i] = (in[i] + 2 * c.pad[i] - c.k[i] + c.st[i] - 1) / c.st[i] + 1;
            if ((*o[i] - 1) * c.st[i] >= in[i] + c.pad[i]) (*o[i])--;
        }
    }
    int64_t xs[4] = {N, C, H, W}, gs[4] = {N, C, oH, oW};
    memcpy(c.xs, xs, sizeof xs);
    c.x = rand_tensor(LT_F32, 4, xs, 0);
    c.g = rand_tensor(LT_F32, 4, gs, 0);
    int ops[] = {LT_OP_MAX_POOL2D, LT_OP_AVG_POOL2D, LT_OP_MAX_POOL2D_BWD, LT_OP_AVG_POOL2D_BWD,
                 LT_OP_MAX_POOL2D_INDICES};
    char what[96];
    for (int i = 0; i < 5; i++) {
        snprintf(what, sizeof what, "%s trial %d", g_ops[ops[i]].name, trial);
        c.op = ops[i];
        differential(what, c.op, make_nn, &c, 1e-5);
    }
    /* adaptive: any output size up to the input's (uneven windows included) */
    lt_free(c.g);
    c.k[0] = 1 + rint_((int)H), c.k[1] = 1 + rint_((int)W);
    int64_t as[4] = {N, C, c.k[0], c.k[1]};
    c.g = rand_tensor(LT_F32, 4, as, 0);
    for (int i = 0; i < 2; i++) {
        c.op = i ? LT_OP_ADAPTIVE_AVG_POOL2D_BWD : LT_OP_ADAPTIVE_AVG_POOL2D;
        snprintf(what, sizeof what, "%s trial %d", g_ops[c.op].name, trial);
        differential(what, c.op, make_nn, &c, 1e-5);
    }
    nn_free(&c);
}

static void bn_case(int trial) {
    nctx c = {0};
    int nd = 2 + rint_(3);
    int64_t xs[4] = {1 + rint_(4), 1 + rint_(20), 1 + rint_(9), 1 + rint_(9)};
    if (trial % 5 == 0) xs[1] = 16, xs[2] = 12; /* a larger channel run */
    int64_t cs[1] = {xs[1]};
    c.training = trial % 3 != 2;
    c.temps = trial % 2;
    c.x = rand_tensor(LT_F32, nd, xs, 0);
    if (trial % 4 == 3) { /* far from zero: the statistics' cancellation */
        lt_tensor *s = lt_add_scalar(c.x, 100.0);
        lt_free(c.x);
        c.x = s;
    }
    c.g = rand_tensor(LT_F32, nd, xs, 0);
    int bf16 = g_bf16;
    if (bf16 && trial % 2) g_bf16 = 0; /* mixed: bfloat16 x and g, float32 per-channel values (autocast's) */
    if (rint_(4)) c.w = rand_tensor(LT_F32, 1, cs, 0);
    if (rint_(4)) c.b = rand_tensor(LT_F32, 1, cs, 0);
    c.rm = rand_tensor(LT_F32, 1, cs, 0);
    c.rv = rand_tensor(LT_F32, 1, cs, 1);
    g_bf16 = bf16;
    int ops[] = {LT_OP_BN_STATS, LT_OP_BN_APPLY, LT_OP_BN_BWD_INPUT, LT_OP_BN_BWD_PARAMS};
    for (int i = c.training ? 0 : 1; i < 4; i++) {
        char what[96];
        snprintf(what, sizeof what, "%s trial %d (%s)", g_ops[ops[i]].name, trial, c.training ? "train" : "eval");
        c.op = ops[i];
        differential(what, c.op, make_nn, &c, 1e-4);
    }
    /* the paired backward kernel, then the same graph with another eps for the weights */
    for (int i = 0; c.training && i < 2; i++) {
        char what[64];
        snprintf(what, sizeof what, "BN backward pair trial %d (eps %s)", trial, i ? "differ" : "agree");
        c.op = BN_PAIR;
        c.eps2 = i ? 1e-3 : 1e-5;
        differential(what, -1, make_nn, &c, 1e-4);
    }
    /* the backward with ReLU's mask (+ the gradient add) before it: inf and
     * NaN gradients where o <= 0 (exactly 0 after the mask), NaN in o (the
     * gradient passes); the masked gradient kept as an output, or not */
    for (int i = 0; c.training && i < 4; i++) {
        char what[96];
        lt_tensor *o = rand_tensor(LT_F32, nd, xs, 0), *g2 = rand_tensor(LT_F32, nd, xs, 0);
        c.o = poisoned(o, NULL, 30);
        c.g2 = poisoned(g2, c.o, 3);
        lt_tensor *g = c.g;
        c.g = poisoned(g, c.o, 3);
        c.res = i & 1, c.keep_g = i >> 1;
        snprintf(what, sizeof what, "BN backward of relu's mask%s%s trial %d", c.res ? " + add" : "",
                 c.keep_g ? ", mask kept" : "", trial);
        c.op = BN_RELU_BWD;
        differential(what, -1, make_nn, &c, 1e-4);
        lt_free(c.o), lt_free(c.g2), lt_free(c.g), lt_free(o), lt_free(g2);
        c.o = c.g2 = NULL, c.g = g;
    }
    if (c.training && nd == 4) { /* the backward's relu mask from x, a conv between */
        char what[64];
        int64_t ks[4] = {xs[1], 1, 3, 3};
        c.g2 = rand_tensor(LT_F32, 4, ks, 0);
        snprintf(what, sizeof what, "BN backward of relu(BN)'s mask trial %d", trial);
        c.op = BN_XMASK_BWD;
        differential(what, -1, make_nn, &c, 1e-4);
        lt_free(c.g2);
        c.g2 = NULL;
    }
    for (c.res = 0; c.res < 2; c.res++) { /* the forward with its relu (+ add) epilogue */
        char what[64];
        snprintf(what, sizeof what, "relu(BN%s) trial %d (%s)", c.res ? " + r" : "", trial,
                 c.training ? "train" : "eval");
        c.op = BN_ACT;
        differential(what, -1, make_nn, &c, 1e-4);
    }
    nn_free(&c);
}

static void linear_case(int trial) {
    nctx c = {0};
    c.op = LT_OP_LINEAR;
    int nd = 1 + rint_(3), tall = trial % 4 == 3; /* >= 1024 rows: a float32 weight reordered (dnnl.c) */
    int64_t xs[3] = {tall ? 32 + rint_(8) : 1 + rint_(5), tall ? 33 : 1 + rint_(5), 1 + rint_(40)};
    if (tall) nd = 3;
    int64_t *xp = xs + 3 - nd;
    int64_t ws[2] = {1 + rint_(40), xs[2]}, bs[1] = {ws[0]};
    c.x = rand_tensor(LT_F32, nd, xp, 0);
    c.w = rand_tensor(LT_F32, 2, ws, 0);
    if (rint_(2)) c.b = rand_tensor(LT_F32, 1, bs, 0);
    char what[64];
    snprintf(what, sizeof what, "LINEAR trial %d", trial);
    differential(what, c.op, make_nn, &c, 1e-4);
    nn_free(&c);
}

/* A bfloat16 weight gradient whose operands come channel-blocked from
 * other convs, as in a network: where the cpu backend runs more than one
 * thread, it splits these over the batch (dnnl.c, wsplit), odd batches
 * and more threads than images included. The values are small integers,
 * so that every sum, in any order, is exact in float32 and both backends
 * round the same numbers: the results must agree bit for bit. */
typedef struct wsctx {
    lt_tensor *x0, *w1, *g0, *w2, *w3; /* w3: 1x1 weights of shape ws (trial 6) */
    int64_t ws[4], st[2], pad[2];
} wsctx;

static lt_tensor *make_wsplit(void *p) {
    wsctx *c = p;
    int64_t one[2] = {1, 1};
    lt_tensor *x = lt_conv2d(c->x0, c->w1, NULL, one, one, one, 1), *g = lt_conv2d(c->g0, c->w2, NULL, one, one, one, 1);
    lt_tensor *dw = nn_conv2d_backward_weight(g, x, c->ws, c->st, c->pad, one, 1);
    lt_free(x), lt_free(g);
    return dw;
}

/* The forward and the data gradient of a 1x1 conv on 56x56 with operands
 * from other convs, as the split's trial 6 (oneDNN's general kernel,
 * dnnl.c's conv_pd). */
static lt_tensor *make_fwd1x1(void *p) {
    wsctx *c = p;
    int64_t one[2] = {1, 1}, zero[2] = {0, 0};
    lt_tensor *x = lt_conv2d(c->x0, c->w1, NULL, one, one, one, 1), *y = lt_conv2d(x, c->w3, NULL, one, zero, one, 1);
    lt_free(x);
    return y;
}
static lt_tensor *make_bwd1x1(void *p) {
    wsctx *c = p;
    const int64_t *s0 = lt_shape(c->x0);
    int64_t one[2] = {1, 1}, zero[2] = {0, 0}, xs[4] = {s0[0], c->ws[1], s0[2], s0[3]};
    lt_tensor *g = lt_conv2d(c->g0, c->w2, NULL, one, one, one, 1);
    lt_tensor *dx = nn_conv2d_backward_input(g, c->w3, xs, one, zero, one, 1);
    lt_free(g);
    return dx;
}

/* bfloat16 values in {-1, 0, 1}. */
static lt_tensor *unit_ints(const int64_t *shape) {
    int64_t n = shape[0] * shape[1] * shape[2] * shape[3];
    uint16_t *h = malloc((size_t)n * sizeof *h);
    for (int64_t i = 0; i < n; i++) h[i] = bf16_from_f32((float)(rint_(3) - 1));
    lt_tensor *t = lt_from_data(h, LT_BF16, 4, shape);
    free(h);
    return t;
}

TEST(bf16_weight_grad_split) {
    double s0 = lt_metric("SplitWeightGrads");
    for (int t = 0; t < 8; t++) {
        wsctx c = {0};
        int64_t N = t < 2 ? 1 + 2 * t : 2 + rint_(5), C = 16 << rint_(2), O = 16 * (1 + rint_(3)), H = 5 + rint_(6);
        int64_t k = t % 2 ? 3 : 1, s = 1 + rint_(2);
        if (t == 6) N = 2, C = O = 16, H = 56, s = 1; /* 1x1 on 56x56: oneDNN's general kernel (dnnl.c, conv_pd) */
        int64_t p = k / 2, oH = conv_out(H, k, s, p, 1);
        c.st[0] = c.st[1] = s, c.pad[0] = c.pad[1] = p;
        int64_t xs[4] = {N, 8, H, H}, w1s[4] = {C, 8, 3, 3}, gs[4] = {N, 8, oH, oH}, w2s[4] = {O, 8, 3, 3};
        int64_t ws[4] = {O, C, k, k};
        memcpy(c.ws, ws, sizeof ws);
        c.x0 = unit_ints(xs), c.w1 = unit_ints(w1s), c.g0 = unit_ints(gs), c.w2 = unit_ints(w2s);
        char what[128];
        snprintf(what, sizeof what, "bf16 weight gradient N %lld C %lld O %lld %lldx%lld k%lld s%lld", (long long)N,
                 (long long)C, (long long)O, (long long)H, (long long)H, (long long)k, (long long)s);
        int64_t nr = 0, nc = 0;
        lt_dtype dr, dc;
        double *r = run_on(1, make_wsplit, &c, &nr, &dr), *v = run_on(0, make_wsplit, &c, &nc, &dc);
        CHECK_MSG(r && v && nr == nc && dr == LT_BF16 && dc == LT_BF16, "%s: %s", what, lt_error_message());
        if (r && v && nr == nc) compare(what, r, v, nr, 0);
        free(r), free(v);
        if (t == 6) {
            c.w3 = unit_ints(ws);
            maker mk[2] = {make_fwd1x1, make_bwd1x1};
            for (int d = 0; d < 2; d++) {
                r = run_on(1, mk[d], &c, &nr, &dr), v = run_on(0, mk[d], &c, &nc, &dc);
                CHECK_MSG(r && v && nr == nc && dc == LT_BF16, "1x1 conv %d on 56x56: %s", d, lt_error_message());
                const char *name = d ? "bf16 1x1 data gradient 56x56" : "bf16 1x1 conv 56x56";
                if (r && v && nr == nc) compare(name, r, v, nr, 0);
                free(r), free(v);
            }
            lt_free(c.w3);
        }
        lt_free(c.x0), lt_free(c.w1), lt_free(c.g0), lt_free(c.w2);
    }
    double runs = lt_metric("SplitWeightGrads") - s0;
#ifdef LT_HAVE_DNNL
    if (sysconf(_SC_NPROCESSORS_ONLN) > 1 && !getenv("LT_NUM_THREADS") && !getenv("OMP_NUM_THREADS"))
        CHECK_MSG(runs > 0, "no bfloat16 weight gradient was split over the batch");
    else
        printf("  (one thread: the split was not made)\n");
#endif
    printf("  %.0f bfloat16 weight gradients ran split over the batch\n", runs);
}

TEST(nn_ops) {
    for (int t = 0; t < 40; t++) conv_case(t, t % 4 == 3);
    for (int t = 0; t < 30; t++) pool_case(t);
    for (int t = 0; t < 30; t++) bn_case(t);
    for (int t = 0; t < 20; t++) linear_case(t);
}

/* ---- dropout, losses, gather/scatter, index ops, embedding, AS_STRIDED_BACKWARD ----
 * The cpu backend has no kernels of its own for these: they run the
 * reference kernel (run_ref in cpu.c). What differs is everything around
 * it: the memory plan, views materialized by strided copies, inputs that
 * fused kernels compute, the runtime scalars (p, seed, label smoothing)
 * of a cached executable, guard bytes after every buffer. Indices are in
 * range (any other fails the sync: test_torch_diff) or, for the loss
 * targets, PyTorch's ignore_index -100. */

typedef struct xctx {
    int op, kind, dim, temps;
    lt_tensor *a, *b, *ix, *g;
    int64_t n;  /* NLL_LOSS_BWD: C; the embedding backward: V */
    double p, seed, ls;
    /* AS_STRIDED_BACKWARD: the view's arguments (see strided_grad) */
    int64_t vshape[LT_MAX_DIMS + 1], vstr[LT_MAX_DIMS], voff;
    int vnd, acc;
    int traced; /* how many runs found op in the graph they returned */
} xctx;

/* Is op among the nodes n is computed from? (the graphs here are small) */
static int graph_has(const ir_node *n, int op, int depth) {
    if (!n || depth > 64) return 0;
    if (n->op == op) return 1;
    for (int i = 0; i < n->nin; i++)
        if (graph_has(n->in[i], op, depth + 1)) return 1;
    return 0;
}

/* Is an AS_STRIDED_BACKWARD onto a given base (2 operands) among them? */
static int graph_has_scatter_into(const ir_node *n, int depth) {
    if (!n || depth > 64) return 0;
    if (n->op == LT_OP_AS_STRIDED_BACKWARD && n->nin == 2) return 1;
    for (int i = 0; i < n->nin; i++)
        if (graph_has_scatter_into(n->in[i], depth + 1)) return 1;
    return 0;
}

/* int64 indices in [0, lim); lim may be 0 only for an empty tensor. */
static lt_tensor *rand_index(int nd, const int64_t *shape, int64_t lim) {
    int64_t n = 1, one[1] = {1};
    for (int i = 0; i < nd; i++) n *= shape[i];
    int64_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = rint_((int)lim);
    lt_tensor *t = lt_from_data(v, LT_I64, nd, nd ? shape : one);
    free(v);
    return t;
}

/* The same values through a non-contiguous view: transposed back (2+
 * dims) or every other element of an (n, 2) tensor (1-D); NULL for 0-d. */
static lt_tensor *view_of(lt_tensor *t) {
    if (lt_ndim(t) != 1) return noncontig(t);
    lt_tensor *u = lt_unsqueeze(t, 1), *pair[2] = {u, u}, *w = lt_cat(2, pair, 1), *v = lt_select(w, 1, 1);
    lt_free(u);
    lt_free(w);
    return v;
}

/* Keeps t for the case's end; one time in `odds` returns a view of it. */
typedef struct holder {
    lt_tensor *t[16];
    int n;
} holder;
static lt_tensor *keep(holder *h, lt_tensor *t, int odds) {
    h->t[h->n++] = t;
    if (odds && rint_(odds) == 0) {
        lt_tensor *v = view_of(t);
        if (v) return h->t[h->n++] = v;
    }
    return t;
}
static void release(holder *h) {
    while (h->n) lt_free(h->t[--h->n]);
}

/* Not an op: the embedding backward, an INDEX_ADD whose index is read flat. */
#define EMB_BWD (-3)

/* AS_STRIDED_BACKWARD: the gradient of a fresh leaf (a copy of a) read
 * through a view (kind: 0 slice, 1 transpose, 2 expand, 3 as_strided with
 * overlapping windows, 4 diagonal, 5 select), never the whole base in order
 * (that gradient is a reshape, not this op). temps: the gradient reaching
 * the view is computed (the loss sum(view * b)), else given (g, through
 * lt_backward_with on exp(view)). */
static lt_tensor *strided_view(const xctx *c, lt_tensor *leaf) {
    const int64_t *s = c->vshape;
    switch (c->kind) {
    case 0: return lt_slice(leaf, c->dim, s[0], s[1], s[2]);
    case 1: return lt_transpose(leaf, c->dim, (int)s[0]);
    case 2: return lt_expand(leaf, c->vnd, s);
    case 3: return lt_as_strided(leaf, c->vnd, s, c->vstr, c->voff);
    case 4: return lt_diagonal(leaf, s[0], 0, 1);
    default: return lt_select(leaf, c->dim, s[0]);
    }
}

/* c->acc: the view is of m = leaf * 1 (not a leaf), and m's gradient
 * also gets (1) a whole term sum(m * a) or (2) a second view's: the
 * engine adds a window's gradient into the other term (add_into_window),
 * in its place. (3): the op itself onto a, an input, whose place the
 * output never takes: the kernel copies it first. */
static lt_tensor *strided_grad(xctx *c) {
    if (c->acc == 3) {
        lt_tensor *v = strided_view(c, c->a);
        ir_node *in[2] = {func_value(c->b), func_value(c->a)}, *n = NULL;
        if (v && in[0] && in[1]) {
            int64_t ia[LT_MAX_DIMS + 1];
            memcpy(ia, v->strides, sizeof v->strides);
            ia[v->ndim] = v->offset;
            n = ir_new(LT_OP_AS_STRIDED_BACKWARD, lt_dtype_of(c->a), lt_ndim(c->a), lt_shape(c->a), 2, in, v->ndim + 1,
                       ia, 0, NULL);
        }
        lt_free(v);
        return n ? func_new(n) : NULL;
    }
    lt_tensor *leaf = lt_clone(c->a), *y = NULL, *l = NULL, *r = NULL;
    lt_set_requires_grad(leaf, true);
    lt_tensor *m = c->acc ? lt_mul_scalar(leaf, 1.0) : leaf, *v = strided_view(c, m);
    if (c->temps) {
        y = lt_mul(v, c->b);
        l = lt_sum(y, 0, NULL, false);
        if (c->acc) {
            lt_tensor *v2 = c->acc == 2 ? strided_view(c, m) : NULL, *y2 = lt_mul(v2 ? v2 : m, v2 ? c->b : c->a);
            lt_tensor *l2 = lt_sum(y2, 0, NULL, false), *t = lt_add(l, l2);
            lt_free(l), lt_free(l2), lt_free(y2), lt_free(v2);
            l = t;
        }
        CHECK_MSG(lt_backward(l) == 0, "AS_STRIDED_BACKWARD kind %d: backward failed: %s", c->kind, lt_error_message());
    } else {
        y = lt_exp(v);
        CHECK_MSG(lt_backward_with(y, c->g) == 0, "AS_STRIDED_BACKWARD kind %d: backward failed: %s", c->kind,
                  lt_error_message());
    }
    lt_tensor *g = lt_grad(leaf);
    CHECK_MSG(g != NULL, "AS_STRIDED_BACKWARD kind %d: no gradient", c->kind);
    if (g) r = lt_clone(g);
    lt_free(l), lt_free(y), lt_free(v), lt_free(leaf);
    if (m != leaf) lt_free(m);
    return r;
}

/* The op the case's graph must hold: a transpose's gradient is g read back
 * transposed (autograd/bw_shape.c), no scatter. */
static int traced_op(const xctx *c) {
    return c->op == LT_OP_AS_STRIDED_BACKWARD && c->kind == 1 ? LT_OP_AS_STRIDED : c->op;
}

static lt_tensor *make_x(void *p) {
    xctx *c = p;
    /* temps: the main operand is computed in the graph (it dies at the op) */
    lt_tensor *a = c->a, *r = NULL;
    if (c->temps && c->op != LT_OP_AS_STRIDED_BACKWARD)
        a = c->op == LT_OP_NLL_LOSS ? lt_log_softmax(c->a, 1) : lt_mul_scalar(c->a, 1.5);
    switch (c->op) {
    case LT_OP_DROPOUT:
        if (c->kind == 0) { /* the seed is drawn at trace time from the host generator */
            lt_manual_seed((uint64_t)c->seed);
            r = lt_dropout(a, c->p, true);
        } else {
            r = nn_dropout_backward(a, c->p, c->seed);
        }
        break;
    case LT_OP_RANDOM: { /* a's dtype and shape; kind: uniform, normal, bernoulli */
        lt_dtype dt = c->kind == 2 && c->p == 0.25 ? LT_I64 : lt_dtype_of(a);
        lt_manual_seed((uint64_t)c->seed);
        r = c->kind == 0   ? lt_rand_uniform(dt, lt_ndim(a), lt_shape(a), -1.0, 2.0)
            : c->kind == 1 ? lt_rand_normal(dt, lt_ndim(a), lt_shape(a), 0.5, 2.0)
                           : lt_rand_bernoulli(dt, lt_ndim(a), lt_shape(a), c->p);
        break;
    }
    case LT_OP_NLL_LOSS: r = lt_nll_loss(a, c->ix); break;
    case LT_OP_NLL_LOSS_BWD: r = nn_nll_loss_backward(c->g, c->ix, c->n); break;
    case LT_OP_CROSS_ENTROPY: r = lt_cross_entropy(a, c->ix, c->ls); break;
    case LT_OP_CROSS_ENTROPY_BWD: r = nn_cross_entropy_backward(c->g, a, c->ix, c->ls); break;
    case LT_OP_MSE_LOSS: r = lt_mse_loss(a, c->b); break;
    case LT_OP_GATHER: r = lt_gather(a, c->dim, c->ix); break;
    case LT_OP_SCATTER_ADD: r = nn_scatter_add(a, c->dim, c->ix, c->b); break;
    case LT_OP_INDEX_SELECT: r = lt_index_select(a, c->dim, c->ix); break;
    case LT_OP_INDEX_ADD:
        r = c->kind == EMB_BWD ? nn_embedding_backward(c->g, c->ix, c->n) : nn_index_add(a, c->dim, c->ix, c->b);
        break;
    case LT_OP_EMBEDDING: r = lt_embedding(a, c->ix); break;
    case LT_OP_AS_STRIDED_BACKWARD: r = strided_grad(c); break;
    }
    if (a != c->a) lt_free(a);
    if (r && graph_has(func_value(r), traced_op(c), 0)) c->traced++;
    /* one-to-one windows: the second term's gradient is scattered into the first */
    if (r && c->acc && c->kind != 1 && c->kind != 2 && c->kind != 3)
        CHECK_MSG(graph_has_scatter_into(func_value(r), 0), "AS_STRIDED_BACKWARD kind %d acc %d: no gradient added in place",
                  c->kind, c->acc);
    return r;
}

/* Both backends; the api must accept the case and both graphs must hold
 * the op (dropout with p = 0 makes no node: compared, not counted). */
static void xdiff(xctx *c, const char *fmt, int trial) {
    char what[128];
    snprintf(what, sizeof what, fmt, g_ops[c->op].name, trial);
    int node = !(c->op == LT_OP_DROPOUT && c->kind == 0 && c->p == 0);
    c->traced = 0;
    int ran = differential(what, node ? traced_op(c) : -1, make_x, c, 1e-4);
    CHECK_MSG(ran, "%s: rejected by the api", what);
    CHECK_MSG(!ran || !node || c->traced == 2, "%s: op not in the traced graph (%d of 2 runs)", what, c->traced);
}

/* A random shape of 1..4 dims, size-1 dims and, 1 time in `empty`, an empty one. */
static int shape_1_4(int64_t *s, int empty) {
    int nd = 1 + rint_(4);
    for (int d = 0; d < nd; d++) s[d] = rint_(6) == 0 ? 1 : 1 + rint_(5);
    if (empty && rint_(empty) == 0) s[rint_(nd)] = 0;
    return nd;
}

/* gather and scatter_add with one index: index.size(d) <= a.size(d) off
 * dim, any size on dim; src at least the index's size everywhere. */
static void gather_case(int trial) {
    xctx c = {0};
    holder h = {{0}, 0};
    int64_t as[LT_MAX_DIMS], is[LT_MAX_DIMS], ss[LT_MAX_DIMS];
    int nd = shape_1_4(as, 6), dim = rint_(nd);
    for (int d = 0; d < nd; d++) {
        is[d] = d == dim ? (as[d] ? rint_(7) : 0) : rint_((int)as[d] + 1);
        ss[d] = is[d] + rint_(2);
    }
    lt_dtype dt = trial % 2 ? LT_F32 : (lt_dtype)rint_(NDT);
    c.dim = rint_(2) ? dim : dim - nd;
    c.temps = dtype_is_float(dt) && rint_(3) == 0;
    c.a = keep(&h, rand_tensor(dt, nd, as, 0), 3);
    c.ix = keep(&h, rand_index(nd, is, as[dim]), 3);
    c.b = keep(&h, rand_tensor(dt, nd, ss, 0), 3);
    c.op = LT_OP_GATHER;
    xdiff(&c, "%s trial %d", trial);
    c.op = LT_OP_SCATTER_ADD;
    xdiff(&c, "%s trial %d", trial);
    release(&h);
}

/* index_select and index_add: a 1-D index (or 0-d: one row), repeats included. */
static void index_case(int trial) {
    xctx c = {0};
    holder h = {{0}, 0};
    int64_t as[LT_MAX_DIMS], ss[LT_MAX_DIMS], one[1] = {1};
    int nd = shape_1_4(as, 6), dim = rint_(nd), zero_d = as[dim] && rint_(6) == 0;
    int64_t M = zero_d ? 1 : as[dim] ? rint_(8) : 0;
    memcpy(ss, as, sizeof ss);
    ss[dim] = M;
    lt_dtype dt = trial % 2 ? LT_F32 : (lt_dtype)rint_(NDT);
    c.dim = rint_(2) ? dim : dim - nd;
    c.temps = dtype_is_float(dt) && rint_(3) == 0;
    c.a = keep(&h, rand_tensor(dt, nd, as, 0), 3);
    c.ix = keep(&h, zero_d ? rand_index(0, one, as[dim]) : rand_index(1, &M, as[dim]), 3);
    c.b = keep(&h, rand_tensor(dt, nd, ss, 0), 3);
    c.op = LT_OP_INDEX_SELECT;
    xdiff(&c, "%s trial %d", trial);
    c.op = LT_OP_INDEX_ADD;
    xdiff(&c, "%s trial %d", trial);
    release(&h);
}

/* embedding and its backward (an INDEX_ADD of (..., D) rows at flat indices). */
static void embedding_case(int trial) {
    xctx c = {0};
    holder h = {{0}, 0};
    int64_t V = 1 + rint_(9), D = rint_(10) == 0 ? 0 : 1 + rint_(6), is[LT_MAX_DIMS], gs[LT_MAX_DIMS];
    int nd = rint_(4);
    for (int d = 0; d < nd; d++) is[d] = rint_(6) == 0 ? 1 : 1 + rint_(4);
    if (nd && rint_(6) == 0) is[rint_(nd)] = 0;
    memcpy(gs, is, sizeof gs);
    gs[nd] = D;
    lt_dtype dt = trial % 3 ? LT_F32 : (lt_dtype)rint_(NDT);
    int64_t ws[2] = {V, D};
    c.temps = dtype_is_float(dt) && rint_(3) == 0;
    c.a = keep(&h, rand_tensor(dt, 2, ws, 0), 3);
    c.ix = keep(&h, rand_index(nd, nd ? is : ws, V), 3);
    c.g = keep(&h, rand_tensor(dt, nd + 1, gs, 0), 3);
    c.n = V;
    c.op = LT_OP_EMBEDDING;
    xdiff(&c, "%s trial %d", trial);
    c.op = LT_OP_INDEX_ADD;
    c.kind = EMB_BWD;
    xdiff(&c, "%s (embedding backward) trial %d", trial);
    release(&h);
}

/* index_add large enough for the cpu kernel's threads (index_add.c splits
 * the inner dim, in blocks of 64): an embedding's backward over 2000 rows
 * of 385, and a middle dim indexed by 300 (repeats: 40 rows). */
static void index_add_large_case(int trial) {
    xctx c = {0};
    holder h = {{0}, 0};
    int64_t M = trial % 2 ? 300 : 2000;
    if (trial % 2) {
        int64_t as[3] = {3, 40, 130}, ss[3] = {3, M, 130};
        c.dim = 1;
        c.a = keep(&h, rand_tensor(LT_F32, 3, as, 0), 3);
        c.ix = keep(&h, rand_index(1, &M, as[1]), 3);
        c.b = keep(&h, rand_tensor(LT_F32, 3, ss, 0), 3);
    } else {
        int64_t ws[2] = {50, 385}, gs[2] = {M, 385};
        c.a = keep(&h, rand_tensor(LT_F32, 2, ws, 0), 3);
        c.ix = keep(&h, rand_index(1, &M, ws[0]), 3);
        c.g = keep(&h, rand_tensor(LT_F32, 2, gs, 0), 3);
        c.n = ws[0];
        c.kind = EMB_BWD;
    }
    c.op = LT_OP_INDEX_ADD;
    xdiff(&c, "%s (large) trial %d", trial);
    release(&h);
}

/* nll_loss, cross_entropy and their backward ops: empty batches, ignored
 * targets (-100), every row ignored (0/0: NaN), label smoothing
 * (0 and 1 are baked into the graph, others are runtime scalars: the same
 * graph again with another value hits the compile cache). */
static void loss_case(int trial) {
    xctx c = {0};
    holder h = {{0}, 0};
    int64_t N = rint_(8), C = 1 + rint_(trial % 5 == 4 ? 200 : 9), ls_[2] = {N, C}, one[1] = {1};
    int64_t *t = malloc((size_t)(N ? N : 1) * sizeof *t);
    for (int64_t n = 0; n < N; n++) {
        int r = rint_(10);
        t[n] = trial % 7 == 3 || r >= 8 ? -100 : rint_((int)C);
    }
    lt_dtype dt = rint_(4) ? LT_F32 : LT_F64;
    c.temps = rint_(2);
    c.a = keep(&h, rand_tensor(dt, 2, ls_, 0), 3);
    if (trial % 6 == 5) { /* large logits: the log-softmax's max subtraction */
        lt_tensor *big = lt_mul_scalar(c.a, 40);
        c.a = keep(&h, big, 0);
    }
    c.ix = keep(&h, lt_from_data(t, LT_I64, 1, &N), 3);
    c.g = keep(&h, rand_tensor(dt, rint_(2), one, 0), 0);
    c.n = C;
    free(t);
    static const double lsv[] = {0, 0.1, 0.5, 1, 0.25};
    int ops[] = {LT_OP_NLL_LOSS, LT_OP_NLL_LOSS_BWD, LT_OP_CROSS_ENTROPY, LT_OP_CROSS_ENTROPY_BWD};
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < (i >= 2 ? 2 : 1); k++) {
            c.op = ops[i];
            c.ls = lsv[rint_(5)];
            char fmt[64];
            int at = snprintf(fmt, sizeof fmt, "%%s trial %%d (N %lld C %lld", (long long)N, (long long)C);
            snprintf(fmt + at, sizeof fmt - (size_t)at, i >= 2 ? " ls %g)" : ")", c.ls);
            xdiff(&c, fmt, trial);
        }
    release(&h);
}

static void mse_case(int trial) {
    xctx c = {0};
    holder h = {{0}, 0};
    int64_t s[LT_MAX_DIMS];
    int nd = rand_shape(s);
    lt_dtype dt = rint_(4) ? LT_F32 : LT_F64;
    c.temps = rint_(2);
    c.a = keep(&h, rand_tensor(dt, nd, s, 0), 3);
    c.b = keep(&h, rand_tensor(dt, nd, s, 0), 3);
    c.op = LT_OP_MSE_LOSS;
    xdiff(&c, "%s trial %d", trial);
    release(&h);
}

/* Both backends must drop the same elements for the same seed (ref_nn.h:
 * a hash of seed and element index): the forward seeded by lt_manual_seed
 * (twice, other seeds: a cached graph with new runtime scalars), the
 * backward with an explicit seed. p = 0 makes no node; p = 1 drops all. */
static void dropout_case(int trial) {
    xctx c = {0};
    holder h = {{0}, 0};
    int64_t s[LT_MAX_DIMS];
    int nd = rand_shape(s);
    if (trial % 5 == 0) nd = 2, s[0] = 64, s[1] = 1 + rint_(300); /* many elements: the mask's statistics */
    lt_dtype dt = rint_(4) ? LT_F32 : LT_F64;
    static const double pv[] = {0.5, 0.1, 0.9, 1, 0.25, 0};
    c.temps = rint_(2);
    c.a = keep(&h, rand_tensor(dt, nd, s, 0), 3);
    c.op = LT_OP_DROPOUT;
    c.p = pv[trial % 6];
    for (int k = 0; k < 3; k++) {
        c.kind = k == 2;
        c.seed = (double)(rnd() >> 11);
        xdiff(&c, c.kind ? "%s backward trial %d" : "%s trial %d", trial);
    }
    c.op = LT_OP_RANDOM; /* the seeded fills: the same hash, a node without operands */
    for (int k = 0; k < 3; k++) {
        c.kind = k;
        c.seed = (double)(rnd() >> 11);
        xdiff(&c, "%s trial %d", trial);
    }
    release(&h);
}

static void strided_grad_case(int trial) {
    xctx c = {0};
    holder h = {{0}, 0};
    int64_t s[LT_MAX_DIMS], *v = c.vshape;
    int nd = 1 + rint_(3);
    c.kind = trial % 6;
    if ((c.kind == 1 || c.kind == 4) && nd < 2) nd = 2; /* transpose, diagonal */
    for (int d = 0; d < nd; d++) s[d] = 2 + rint_(4);   /* size-1 dims: the expand below */
    switch (c.kind) {
    case 0: /* a slice, never the whole base: maybe empty, maybe stepped */
        c.dim = rint_(nd);
        v[0] = rint_((int)s[c.dim]);
        v[1] = v[0] + rint_((int)(s[c.dim] - v[0]));
        v[2] = 1 + rint_(2);
        break;
    case 1: c.dim = 0, v[0] = 1 + rint_(nd - 1); break;
    case 2: /* a size-1 dim (and a new leading one) expanded: elements read several times */
        c.dim = rint_(nd);
        s[c.dim] = 1;
        c.vnd = nd + 1;
        v[0] = 2;
        for (int d = 0; d < nd; d++) v[1 + d] = d == c.dim ? 3 : s[d];
        break;
    case 3: { /* overlapping windows of the flat base */
        int64_t n = 1;
        for (int d = 0; d < nd; d++) n *= s[d];
        c.vnd = 2;
        c.voff = rint_(2);
        v[1] = 1 + rint_(n - c.voff < 3 ? (int)(n - c.voff) : 3);
        if (c.voff == 0 && v[1] == n) v[1] = n - 1; /* one window (1, n) from 0 would be the base */
        if (v[1] == 1) c.voff = 1; /* else (n, 1) from 0 would be the base */
        c.vstr[1] = 1;
        c.vstr[0] = v[1] == 1 ? 1 : 1 + rint_((int)v[1] - 1); /* windows overlap */
        v[0] = (n - 1 - c.voff - (v[1] - 1)) / c.vstr[0] + 1; /* the last window ends inside the base */
        break;
    }
    case 4: v[0] = rint_(3) - 1; break; /* offset diagonal */
    case 5: c.dim = rint_(nd), v[0] = rint_((int)s[c.dim]); break;
    }
    lt_dtype dt = rint_(4) ? LT_F32 : LT_F64;
    if (trial % 8 == 5) dt = LT_BF16; /* autocast's q, k, v gradients */
    c.temps = trial / 6 % 2;
    c.acc = c.temps ? trial / 12 % 4 : 0;
    if (c.acc == 3 && c.kind == 1) c.acc = 1; /* a transpose's gradient is no scatter */
    c.op = LT_OP_AS_STRIDED_BACKWARD;
    c.a = keep(&h, rand_tensor(dt, nd, s, 0), 3);
    /* the view's shape, for w or g: built once on the data */
    lt_tensor *leaf = lt_clone(c.a), *view = strided_view(&c, leaf);
    CHECK_MSG(view != NULL, "AS_STRIDED_BACKWARD kind %d: view: %s", c.kind, lt_error_message());
    if (view) {
        lt_tensor *w = keep(&h, rand_tensor(dt, lt_ndim(view), lt_shape(view), 0), 3);
        if (c.temps) c.b = w;
        else c.g = w;
        xdiff(&c, "%s trial %d", trial);
    }
    lt_free(view);
    lt_free(leaf);
    release(&h);
}

TEST(nn_losses_indexing_dropout) {
    for (int t = 0; t < 30; t++) gather_case(t);
    for (int t = 0; t < 30; t++) index_case(t);
    for (int t = 0; t < 20; t++) embedding_case(t);
    for (int t = 0; t < 4; t++) index_add_large_case(t);
    for (int t = 0; t < 30; t++) loss_case(t);
    for (int t = 0; t < 20; t++) mse_case(t);
    for (int t = 0; t < 24; t++) dropout_case(t);
    for (int t = 0; t < 96; t++) strided_grad_case(t);
}

/* ---- transformer ops (issue 16) ----------------------------------------------
 * Layer norm over 1 or 2 trailing dims, with and without weight and bias;
 * attention over (..., T, D) with T across the cpu kernel's tile sizes
 * (64 query rows, 64 keys), head dims that are not a multiple of the
 * vector width, causal or not, with dropout; the backward ops; the total
 * norm of several tensors. Operands are sometimes computed in the graph
 * (temps) or read through views (a GPT's heads of one qkv projection: the
 * cpu kernel reads those in place). */

typedef struct tctx {
    int op, nnorm, causal, temps, casts; /* casts: autocast's around a float32 layer norm (bfloat16 g, output) */
    int pair; /* LN_BWD_INPUT with its LN_BWD_PARAMS twin in the graph: dx and the sums, flat, as one result */
    lt_tensor *x, *w, *b, *g, *q, *k, *v, *o, *list[3];
    double p, seed;
} tctx;

static lt_tensor *make_tf(void *p) {
    tctx *c = p;
    lt_tensor *x = c->temps ? lt_mul_scalar(c->x, 1.5) : c->x, *r = NULL;
    lt_tensor *g = c->casts ? lt_to_dtype(c->g, LT_F32) : c->g;
    switch (c->op) {
    case LT_OP_LAYER_NORM: r = lt_layer_norm(x, c->nnorm, c->w, c->b, 1e-5); break;
    case LT_OP_LN_BWD_INPUT:
        r = nn_layer_norm_backward_input(g, x, c->w, c->nnorm, 1e-5);
        if (c->pair) {
            int64_t flat = -1;
            lt_tensor *pw = nn_layer_norm_backward_params(g, x, c->nnorm, 1e-5);
            lt_tensor *dx = c->casts ? lt_to_dtype(r, LT_BF16) : r;
            lt_tensor *pc = lt_to_dtype(pw, lt_dtype_of(dx));
            lt_tensor *parts[2] = {lt_reshape(dx, 1, &flat), lt_reshape(pc, 1, &flat)};
            lt_free(r);
            if (dx != r) lt_free(dx);
            r = lt_cat(2, parts, 0);
            lt_free(pw), lt_free(pc), lt_free(parts[0]), lt_free(parts[1]);
        }
        break;
    case LT_OP_LN_BWD_PARAMS: r = nn_layer_norm_backward_params(g, x, c->nnorm, 1e-5); break;
    case LT_OP_LN_STATS: r = lt_layer_norm_stats(x, c->nnorm, 1e-5); break;
    case LT_OP_ATTENTION:
        lt_manual_seed((uint64_t)c->seed);
        r = lt_scaled_dot_product_attention(x, c->k, c->v, c->causal, c->p, 0);
        break;
    case LT_OP_ATTENTION_BWD: r = nn_attention_backward(c->g, x, c->k, c->v, c->o, c->causal, 0, c->p, c->seed); break;
    case LT_OP_GRAD_NORM: {
        lt_tensor *l[3] = {x, c->list[1], c->list[2]};
        r = nn_total_norm(3, l);
        break;
    }
    }
    if (x != c->x) lt_free(x);
    if (g != c->g) lt_free(g);
    if (c->casts && c->op != LT_OP_LN_BWD_PARAMS && !c->pair) { /* the next linear's bfloat16 operand */
        lt_tensor *h = lt_to_dtype(r, LT_BF16);
        lt_free(r);
        r = h;
    }
    return r;
}

static void tf_diff(tctx *c, int trial, const char *extra) {
    char what[128];
    snprintf(what, sizeof what, "%s trial %d %s", g_ops[c->op].name, trial, extra);
    CHECK_MSG(differential(what, c->op, make_tf, c, 2e-4), "%s: rejected by the api", what);
}

static void tf_free(tctx *c) {
    lt_tensor *all[] = {c->x, c->w, c->b, c->g, c->k, c->v, c->o, c->list[1], c->list[2]};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) lt_free(all[i]);
}

static void layer_norm_case(int trial) {
    tctx c = {0};
    int64_t s[4];
    int nd = 1 + rint_(3);
    for (int d = 0; d < nd; d++) s[d] = 1 + rint_(d == nd - 1 ? 70 : 5);
    lt_dtype dt = trial % 4 == 3 ? LT_F64 : LT_F32;
    c.nnorm = nd > 1 && rint_(3) == 0 ? 2 : 1;
    c.temps = rint_(3) == 0;
    c.x = rand_tensor(dt, nd, s, 0);
    int bf16 = g_bf16;
    lt_dtype pdt = bf16 && trial % 2 ? LT_F32 : dt;
    if (bf16 && trial % 2) g_bf16 = 0; /* mixed: bfloat16 x and g, float32 weight and bias (autocast's) */
    if (rint_(3)) c.w = rand_tensor(pdt, c.nnorm, s + nd - c.nnorm, 0);
    if (rint_(3)) c.b = rand_tensor(pdt, c.nnorm, s + nd - c.nnorm, 0);
    g_bf16 = bf16;
    c.g = rand_tensor(dt, nd, s, 0);
    int ops[4] = {LT_OP_LAYER_NORM, LT_OP_LN_BWD_INPUT, LT_OP_LN_BWD_PARAMS, LT_OP_LN_STATS};
    for (int i = 0; i < 4; i++) {
        c.op = ops[i];
        tf_diff(&c, trial, "");
    }
    tf_free(&c);
}

/* Layer norm over many rows (the small random shapes above have at most
 * 25): LN_BWD_PARAMS' chunks then hold whole blocks of CPU_LN_ROWS rows
 * (ln_body.h's 4-row loop) besides a partial one, row lengths around the
 * vector widths; float32, bfloat16 activations with float32 parameters,
 * and autocast's float32 layer norm between bfloat16 casts (the cpu
 * backend folds the casts into its kernels: fuse.c's fuse_ln_casts).
 * The global random stream is put back after: the cases that follow draw
 * as before. */
static void layer_norm_rows_cases(void) {
    static const int64_t shapes[][2] = {{131, 37}, {97, 385}, {260, 64}};
    uint64_t keep = rs;
    int bf16 = g_bf16;
    for (int k = 0; k < 9; k++) {
        tctx c = {0};
        g_bf16 = k % 3 == 1;
        c.casts = k % 3 == 2;
        c.nnorm = 1;
        c.x = rand_tensor(LT_F32, 2, shapes[k / 3], 0);
        c.g = rand_tensor(c.casts ? LT_BF16 : LT_F32, 2, shapes[k / 3], 0);
        g_bf16 = 0; /* float32 weight and bias (autocast's mixed layer norm) */
        if (k != 3) c.w = rand_tensor(LT_F32, 1, shapes[k / 3] + 1, 0);
        if (k != 5) c.b = rand_tensor(LT_F32, 1, shapes[k / 3] + 1, 0);
        g_bf16 = k % 3 == 1;
        int ops[4] = {LT_OP_LAYER_NORM, LT_OP_LN_BWD_INPUT, LT_OP_LN_BWD_PARAMS, LT_OP_LN_STATS};
        for (int i = 0; i < 4; i++) {
            c.op = ops[i];
            tf_diff(&c, k, "(rows)");
        }
        c.op = LT_OP_LN_BWD_INPUT;
        c.pair = 1;
        tf_diff(&c, k, "(rows, with LN_BWD_PARAMS)");
        tf_free(&c);
    }
    g_bf16 = bf16;
    rs = keep;
}

/* attention_case: T past SMAX (512), above which the cpu kernel's backward
 * recomputes its score tiles in place of keeping them */
static int g_att_long;

static void attention_case(int trial) {
    tctx c = {0};
    /* from trial 30 on, also every multiple of 16 up to DMAX = 128, the
     * vector widths the kernel's loops over D run whole; T odd or not,
     * across the tile sizes (32 queries, 64 keys) */
    static const int64_t Ds[] = {1, 3, 5, 8, 17, 33, 64, 16, 32, 48, 80, 96, 112, 128};
    int64_t b = 1 + rint_(2), h = 1 + rint_(3); /* drawn in this order */
    int64_t T = g_att_long ? 513 + rint_(80) : 1 + rint_(trial % 3 == 2 ? 140 : 40);
    int64_t s[4] = {b, h, T, Ds[rint_(trial < 30 ? 7 : 14)]};
    int nd = 2 + rint_(3);
    int64_t *sp = s + 4 - nd;
    lt_dtype dt = trial % 5 == 4 ? LT_F64 : LT_F32;
    c.causal = trial % 2;
    c.p = trial % 3 == 1 ? 0.3 : 0;
    c.seed = (double)(rnd() >> 11);
    c.temps = rint_(3) == 0;
    if (nd == 4 && rint_(2)) { /* a GPT's heads: q, k, v windows of one (B, T, 3, H, D) projection */
        int64_t ps[5] = {sp[0], sp[2], 3, sp[1], sp[3]};
        lt_tensor *qkv = rand_tensor(dt, 5, ps, 0), **dst[3] = {&c.x, &c.k, &c.v};
        for (int i = 0; i < 3; i++) {
            lt_tensor *sel = lt_select(qkv, 2, i);
            *dst[i] = lt_transpose(sel, 1, 2);
            lt_free(sel);
        }
        lt_free(qkv); /* the views keep its storage */
    } else {
        c.x = rand_tensor(dt, nd, sp, 0);
        c.k = rand_tensor(dt, nd, sp, 0);
        c.v = rand_tensor(dt, nd, sp, 0);
    }
    if (rint_(3) == 0) { /* a value read through a view */
        lt_tensor *nv = noncontig(c.v);
        lt_free(c.v);
        c.v = nv;
    }
    c.g = rand_tensor(dt, nd, sp, 0);
    if (nd == 4 && rint_(2)) { /* the output gradient as the heads of a (B, T, H, D) tensor */
        int64_t gs[4] = {sp[0], sp[2], sp[1], sp[3]};
        lt_tensor *gt = rand_tensor(dt, 4, gs, 0);
        lt_free(c.g);
        c.g = lt_transpose(gt, 1, 2);
        lt_free(gt);
    }
    c.o = lt_scaled_dot_product_attention(c.x, c.k, c.v, c.causal, 0, 0);
    /* bfloat16: both backends' backward read one O (the cpu's forward may
     * round an element the other way, and the rows one key dominates
     * cancel in dP - rowsum(dO O): the backward is checked, not that) */
    if (g_bf16) lt_mark_step();
    char extra[96];
    int64_t bh = 1;
    for (int d = 0; d < nd - 2; d++) bh *= sp[d];
    snprintf(extra, sizeof extra, "(%lld problems, T %lld D %lld causal %d p %g isa %d)", (long long)bh,
             (long long)sp[nd - 2], (long long)sp[nd - 1], c.causal, c.p, core_isa());
    c.op = LT_OP_ATTENTION;
    tf_diff(&c, trial, extra);
    c.op = LT_OP_ATTENTION_BWD;
    g_bf16_tol = 2e-2; /* attention_bf16 says why */
    tf_diff(&c, trial, extra);
    g_bf16_tol = 1e-2;
    tf_free(&c);
}

/* bfloat16 attention (issue 30) with each instruction set this machine
 * has: AVX-512 with AVX512-BF16 takes bfloat16 dot products (P rounded to
 * bfloat16 before P v, P^T dO, and dS before dS k and dS^T q, as PyTorch's
 * CPU flash attention does), the others widen the operands to float32; the
 * fast kernel ran every time (no reference fallback). Trials from 30 on:
 * every head dim of attention_case up to 128, T odd or not, across the
 * tiles. Tolerances, against float64 on the same bfloat16 inputs, times
 * (1 + |ref|): the forward 1e-2: both sides round O (2^-9 relative), and
 * rounding P errs by at most 2^-9 max |v| (its row sums to 1). The
 * backward 2e-2: rounding P and dS errs by 2^-9 of each term of dv, dk and
 * dq's sums, and those sums cancel (dv of an early key under a causal
 * mask adds up to ln T probability-weighted rows of dO, dropout scales
 * them by 1 / (1 - p)): 400 trials at AVX512-BF16 erred by at most
 * 5.2e-3 (forward) and 1.2e-2 (backward), the widening copy by 2.5e-3
 * and 3.9e-3 (a rounding of the output). */
TEST(attention_bf16) {
    g_bf16 = 1;
    for (int level = core_isa(); level >= 0; level--) {
        core_set_isa(level);
        for (int t = 0; t < (level == core_isa() ? 42 : 12); t++) {
            double f0 = lt_metric("FallbackOps");
            attention_case(30 + t);
            CHECK_MSG(lt_metric("FallbackOps") == f0, "isa %d trial %d: %g ops ran the reference kernel", level, 30 + t,
                      lt_metric("FallbackOps") - f0);
        }
    }
    core_set_isa(-1);
    g_bf16 = 0;
}

static void grad_norm_case(int trial) {
    tctx c = {0};
    int64_t s[3][LT_MAX_DIMS];
    int nd[3];
    lt_dtype dt = trial % 3 == 2 ? LT_F64 : LT_F32;
    for (int i = 0; i < 3; i++) nd[i] = rand_shape(s[i]);
    if (trial % 4 == 0) nd[0] = 1, s[0][0] = 100000; /* the parallel sum */
    c.x = rand_tensor(dt, nd[0], s[0], 0);
    c.list[1] = rand_tensor(dt, nd[1], s[1], 0);
    c.list[2] = rand_tensor(dt, nd[2], s[2], 0);
    c.temps = rint_(2);
    c.op = LT_OP_GRAD_NORM;
    tf_diff(&c, trial, "");
    tf_free(&c);
}

TEST(transformer_ops) {
    for (int t = 0; t < 24; t++) layer_norm_case(t);
    layer_norm_rows_cases();
    for (int t = 0; t < 60; t++) attention_case(t);
    g_att_long = 1; /* plain, causal with dropout, causal */
    for (int t = 0; t < 4; t += 1 + (t == 1)) attention_case(t);
    g_att_long = 0;
    for (int t = 0; t < 8; t++) grad_norm_case(t);
}

/* ---- random whole programs ------------------------------------------------ */

#define POOL 6
/* Temporaries of one step (operands built inline), freed at its end. */
static lt_tensor *tmps[8];
static int ntmp;
static lt_tensor *tmp(lt_tensor *t) {
    if (ntmp < 8) tmps[ntmp++] = t;
    return t;
}
static void free_tmps(void) {
    while (ntmp) lt_free(tmps[--ntmp]);
}

static double *program(int be, uint64_t seed, int steps, int64_t *total) {
    exec_set_backend(be);
    rs = seed;
    int64_t big[2] = {6, 40}, row[1] = {40}, col[2] = {6, 1};
    lt_tensor *t[POOL];
    for (int i = 0; i < POOL; i++) {
        int which = i % 3;
        t[i] = rand_tensor(LT_F32, which == 0 ? 2 : 1 + (which == 2), which == 0 ? big : which == 1 ? row : col, 0);
    }
    for (int s = 0; s < steps; s++) {
        int a = rint_(POOL), b = rint_(POOL), c = rint_(POOL);
        lt_tensor *x = t[a], *y = t[b], *z = NULL;
        double w = 0.05 + 0.9 * runif();
        switch (rint_(14)) {
        case 0: z = lt_add(x, y); break;
        case 1: z = lt_mul(x, tmp(lt_tanh(y))); break;
        case 2: z = lt_lerp(x, tmp(lt_add(x, y)), w); break;
        case 3: z = lt_addcmul(x, y, t[c], w); break;
        case 4: z = lt_where(tmp(lt_gt(x, y)), x, tmp(lt_sigmoid(y))); break;
        case 5: z = lt_maximum(tmp(lt_relu(x)), tmp(lt_mul_scalar(y, -w))); break;
        case 6: z = lt_clamp(tmp(lt_sub(x, y)), -1, 1); break;
        case 7: z = lt_addcdiv(x, y, tmp(lt_add_scalar(tmp(lt_abs(t[c])), 1)), w); break;
        case 8: /* in place on a full tensor */
            lt_mul_scalar_(x, w);
            lt_add_(x, tmp(lt_clamp(y, -1, 1))) ? (void)0 : lt_clear_error();
            break;
        case 9: /* in place through a view */
            if (lt_ndim(x) == 2 && lt_shape(x)[1] > 3) {
                lt_tensor *v = lt_slice(x, 1, 1, 3, 1);
                lt_lerp_(v, tmp(lt_tanh(v)), w);
                lt_free(v);
            }
            break;
        case 10: z = lt_mean(x, 0, NULL, false); break;
        case 11: z = lt_exp(tmp(lt_tanh(tmp(lt_sum(x, 1, (int[]){-1}, true))))); break;
        case 12:
            if (s % 5 == 0) lt_mark_step();
            break;
        case 13:
            if (lt_ndim(x) == 2 && lt_shape(x)[1] == 40) {
                lt_tensor *m = lt_matmul(x, tmp(lt_transpose(x, 0, 1)));
                z = lt_tanh(tmp(lt_mul_scalar(m, 0.05)));
                lt_free(m);
            }
            break;
        }
        free_tmps();
        lt_clear_error();
        if (z) { /* replace a pool entry of a broadcast-compatible shape */
            int r = rint_(POOL);
            int64_t tmp[LT_MAX_DIMS];
            if (shape_broadcast(lt_ndim(z), lt_shape(z), lt_ndim(t[r]), lt_shape(t[r]), tmp) == lt_ndim(t[r]) &&
                lt_numel(z) <= lt_numel(t[r]) && lt_ndim(z) <= lt_ndim(t[r])) {
                lt_tensor *n = lt_add(t[r], z);
                lt_free(t[r]);
                t[r] = lt_tanh(n);
                lt_free(n);
            }
            lt_free(z);
        }
    }
    lt_mark_step();
    int64_t n = 0;
    for (int i = 0; i < POOL; i++) n += lt_numel(t[i]);
    double *all = malloc((size_t)n * sizeof *all);
    int64_t at = 0;
    for (int i = 0; i < POOL; i++) {
        double *v = h_read(t[i]);
        memcpy(all + at, v, (size_t)lt_numel(t[i]) * sizeof *v);
        at += lt_numel(t[i]);
        free(v);
        lt_free(t[i]);
    }
    exec_set_backend(-1);
    *total = n;
    return all;
}

TEST(random_programs) {
    for (int p = 0; p < 40; p++) {
        uint64_t seed = 0x1234567ull + (uint64_t)p * 7919;
        int64_t nr, nc;
        double *r = program(1, seed, 30, &nr), *c = program(0, seed, 30, &nc);
        char what[64];
        snprintf(what, sizeof what, "program %d", p);
        CHECK(nr == nc);
        if (nr == nc) compare(what, r, c, nr, 1e-4);
        free(r);
        free(c);
    }
    CHECK(lt_metric("FusedKernels") > 0);
}

/* bfloat16 members of one fused tile group round as the reference rounds
 * each node: in the register where a later member reads the value, in the
 * store where only the output does (tile_body.h). Exact ops only (+ - *
 * of bfloat16 values in float registers, then one rounding), so both
 * backends agree to the bit: a rounding skipped changes elements by a
 * bfloat16 ulp, which the tolerance 0 catches. t is read later and stored
 * (the cat reads it), w only stored. */
static lt_tensor *make_bf16_chain(void *p) {
    lt_tensor **x = p;
    lt_tensor *t = lt_add(x[0], x[1]), *u = lt_mul(t, x[2]), *v = lt_sub(u, x[0]), *w = lt_mul(v, v);
    lt_tensor *both[2] = {t, w}, *r = lt_cat(2, both, 0);
    lt_free(t), lt_free(u), lt_free(v), lt_free(w);
    return r;
}

TEST(bf16_tile_rounding) {
    double fused0 = lt_metric("FusedKernels");
    for (int c = 0; c < 6; c++) {
        int64_t shape[1] = {1 + rint_(5000)};
        lt_tensor *x[3];
        for (int i = 0; i < 3; i++) {
            lt_tensor *f = rand_tensor(LT_F32, 1, shape, 0);
            x[i] = lt_to_dtype(f, LT_BF16);
            lt_free(f);
        }
        lt_mark_step();
        CHECK(differential("bfloat16 chain in one tile group", LT_OP_ADD, make_bf16_chain, x, 0));
        for (int i = 0; i < 3; i++) lt_free(x[i]);
    }
    CHECK(lt_metric("FusedKernels") > fused0);
}

/* Donation: a parameter updated in place reuses its buffer. */
TEST(donation_in_place_update) {
    int64_t s[1] = {1000};
    lt_tensor *p = rand_tensor(LT_F32, 1, s, 0), *g = rand_tensor(LT_F32, 1, s, 0);
    lt_tensor *m = rand_tensor(LT_F32, 1, s, 0);
    exec_set_backend(0);
    double a0 = lt_metric("InputOutputAliasCount");
    for (int i = 0; i < 3; i++) {
        lt_lerp_(m, g, 0.1);
        lt_addcmul_(p, m, g, -0.01);
        lt_mark_step();
    }
    CHECK(lt_metric("InputOutputAliasCount") - a0 >= 6);
    /* The same through the reference backend: values agree. */
    double *pc = h_read(p);
    exec_set_backend(-1);
    free(pc);
    lt_free(p);
    lt_free(g);
    lt_free(m);
}

/* Collectives (test_dist checks them across ranks; here, as a single
 * process runs this file, a world of one): inside a graph with other ops,
 * through a non-contiguous view, every dtype. */
typedef struct cctx {
    int op;
    lt_tensor *x;
} cctx;
static lt_tensor *make_collective(void *p) {
    cctx *c = p;
    lt_tensor *y = lt_clone(c->x), *v = lt_ndim(y) >= 2 ? lt_transpose(y, 0, 1) : lt_clone(y);
    lt_tensor *r = c->op == LT_OP_BROADCAST ? lt_broadcast_(v, 0) : lt_all_reduce_(v, LT_REDUCE_SUM);
    lt_tensor *out = r ? lt_add(y, v) : NULL;
    lt_free(y);
    lt_free(v);
    return out;
}

/* ZeRO-1's ops (a world of one: a chunk is the whole tensor, flattened):
 * through a view, the chunk gathered back into a tensor of y's shape. */
static lt_tensor *make_shard_op(void *p) {
    cctx *c = p;
    lt_tensor *y = lt_clone(c->x), *v = lt_ndim(y) >= 2 ? lt_transpose(y, 0, 1) : lt_clone(y);
    lt_tensor *k = c->op == LT_OP_REDUCE_SCATTER ? lt_reduce_scatter(v, LT_REDUCE_SUM) : lt_dist_shard(v);
    lt_tensor *out = k ? lt_all_gather_(y, k) : NULL;
    lt_free(v);
    lt_free(k);
    if (!out) lt_free(y);
    return out;
}

static void collective_cases(void) {
    char what[64];
    for (int op = LT_OP_ALL_REDUCE; op <= LT_OP_BROADCAST; op++)
        for (int dt = 0; dt < NDT; dt++)
            for (int trial = 0; trial < 3; trial++) {
                int64_t s[LT_MAX_DIMS];
                int nd = rand_shape(s);
                cctx c = {op, rand_tensor((lt_dtype)dt, nd, s, 0)};
                snprintf(what, sizeof what, "%s dtype %d trial %d", g_ops[op].name, dt, trial);
                differential(what, op, make_collective, &c, 1e-6);
                lt_free(c.x);
            }
    int shard_ops[2] = {LT_OP_REDUCE_SCATTER, LT_OP_SHARD};
    for (int k = 0; k < 2; k++)
        for (int dt = 0; dt < NDT; dt++) {
            int64_t s[LT_MAX_DIMS];
            int nd = rand_shape(s);
            cctx c = {shard_ops[k], rand_tensor((lt_dtype)dt, nd, s, 0)};
            snprintf(what, sizeof what, "%s dtype %d", g_ops[shard_ops[k]].name, dt);
            if (differential(what, shard_ops[k], make_shard_op, &c, 1e-6)) /* and ALL_GATHER, around both */
                covered[LT_OP_ALL_GATHER] = 1, covered_bf16[LT_OP_ALL_GATHER] |= g_bf16;
            lt_free(c.x);
        }
}

TEST(collectives) { collective_cases(); }

/* Every op of the table (but DATA) was compared by the tests above: the
 * NN ops without fast cpu kernels (losses, dropout, indexing,
 * AS_STRIDED_BACKWARD) run the reference kernel on both sides, around
 * which the cpu backend's plan, views and runtime scalars still differ. */
/* Every case again with bfloat16 in place of every float tensor: each op
 * must be compared in bfloat16 too (fewer trials: the same code paths). */
TEST(every_op_bf16) {
    g_bf16 = 1;
    for (int op = 0; op < LT_OP_COUNT; op++)
        if (g_ops[op].kind == ELEMWISE || g_ops[op].kind == CREATE) elementwise_op(op);
    int ops[] = {LT_OP_SUM, LT_OP_MEAN, LT_OP_MAX, LT_OP_MIN, LT_OP_ARGMAX, LT_OP_ARGMIN, LT_OP_SOFTMAX, LT_OP_LOG_SOFTMAX};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) reduce_op(ops[i]);
    matmul_cases();
    view_cases();
    for (int t = 0; t < 12; t++) conv_case(t, t % 4 == 3);
    for (int t = 0; t < 10; t++) pool_case(t);
    for (int t = 0; t < 12; t++) bn_case(t);
    for (int t = 0; t < 8; t++) linear_case(t);
    for (int t = 0; t < 10; t++) gather_case(t);
    for (int t = 0; t < 10; t++) index_case(t);
    for (int t = 0; t < 10; t++) embedding_case(t);
    for (int t = 0; t < 10; t++) loss_case(t);
    for (int t = 0; t < 8; t++) mse_case(t);
    for (int t = 0; t < 8; t++) dropout_case(t);
    for (int t = 0; t < 12; t++) strided_grad_case(t);
    for (int t = 0; t < 16; t++) layer_norm_case(t);
    for (int t = 0; t < 8; t++) attention_case(t);
    for (int t = 0; t < 3; t++) grad_norm_case(t);
    collective_cases();
    g_bf16 = 0;
}

/* VAR/STD (after the other cases, which keep their random draws): random
 * shapes, axes and corrections, every form reduce.c canonicalizes, one
 * left to the reference, and the bfloat16 pass. */
TEST(var_std) {
    static const struct {
        int nd;
        int64_t s[4];
        int naxes, axes[4];
    } C[] = {{4, {8, 16, 20, 20}, 3, {0, 2, 3}}, {4, {8, 16, 20, 20}, 2, {2, 3}}, {1, {300001}, 0, {0}},
             {2, {5000, 7}, 1, {0}}, {2, {3, 50000}, 1, {1}}, {4, {2, 3, 40, 50}, 2, {0, 2}}, {2, {1, 1}, 0, {0}}};
    const double corr[] = {0, 1, 2, 0.5};
    char what[96];
    for (int bf = 0; bf < 2; bf++) {
        g_bf16 = bf;
        for (int op = LT_OP_VAR; op <= LT_OP_STD; op++) {
            for (size_t c = 0; c < sizeof C / sizeof C[0]; c++)
                for (int dt = 0; dt < 2; dt++) {
                    rctx r = {op, C[c].naxes, {0}, (int)(c & 1), rand_tensor((lt_dtype)dt, C[c].nd, C[c].s, 0), NULL};
                    g_corr = corr[c % 4];
                    memcpy(r.axes, C[c].axes, sizeof C[c].axes);
                    snprintf(what, sizeof what, "%s case %zu dtype %d%s", g_ops[op].name, c, dt, bf ? " bf16" : "");
                    differential(what, op, make_reduce, &r, 1e-5);
                    lt_free(r.x);
                }
            for (int trial = 0; trial < 30; trial++) {
                int64_t s[LT_MAX_DIMS];
                int nd = rand_shape(s);
                rctx r = {op, 0, {0}, rint_(2), NULL, NULL};
                g_corr = corr[rint_(4)];
                for (int d = 0; d < nd; d++)
                    if (rint_(2)) r.axes[r.naxes++] = d;
                r.x = rand_tensor((lt_dtype)rint_(NDT), nd, s, 0);
                snprintf(what, sizeof what, "%s trial %d%s", g_ops[op].name, trial, bf ? " bf16" : "");
                differential(what, op, make_reduce, &r, 1e-5);
                lt_free(r.x);
            }
        }
    }
    g_bf16 = 0;
}

/* CUMSUM along each dim, both directions, long runs and wide blocks, every
 * dtype, and the bfloat16 pass. */
TEST(cumsum) {
    for (int bf = 0; bf < 2; bf++) {
        g_bf16 = bf;
        char what[96];
        int64_t big[2][3] = {{3, 2000, 5}, {2, 7, 3000}};
        for (int c = 0; c < 2; c++)
            for (int dim = 0; dim < 3; dim++) {
                rctx r = {LT_OP_CUMSUM, 1, {dim}, c, rand_tensor(LT_F32, 3, big[c], 0), NULL};
                snprintf(what, sizeof what, "CUMSUM big %d dim %d%s", c, dim, bf ? " bf16" : "");
                differential(what, LT_OP_CUMSUM, make_reduce, &r, 1e-5);
                lt_free(r.x);
            }
        for (int trial = 0; trial < 30; trial++) {
            int64_t s[LT_MAX_DIMS];
            int nd = rand_shape(s);
            rctx r = {LT_OP_CUMSUM, 1, {nd ? rint_(nd) : 0}, rint_(2), rand_tensor((lt_dtype)rint_(NDT), nd, s, 0), NULL};
            if (rint_(3) == 0 && nd >= 2) {
                lt_tensor *v = noncontig(r.x);
                lt_free(r.x);
                r.x = v;
            }
            snprintf(what, sizeof what, "CUMSUM trial %d%s", trial, bf ? " bf16" : "");
            differential(what, LT_OP_CUMSUM, make_reduce, &r, 1e-5);
            lt_free(r.x);
        }
    }
    g_bf16 = 0;
}

/* FLIP over random dim subsets, every dtype, views, the bfloat16 pass. */
TEST(flip) {
    char what[96];
    for (int trial = 0; trial < 60; trial++) {
        g_bf16 = trial >= 30;
        int64_t s[LT_MAX_DIMS];
        int nd = rand_shape(s);
        rctx r = {LT_OP_FLIP, 0, {0}, 0, rand_tensor((lt_dtype)rint_(NDT), nd, s, 0), NULL};
        for (int d = 0; d < nd; d++)
            if (rint_(2)) r.axes[r.naxes++] = d;
        if (rint_(3) == 0 && nd >= 2) {
            lt_tensor *v = noncontig(r.x);
            lt_free(r.x);
            r.x = v;
        }
        snprintf(what, sizeof what, "FLIP trial %d", trial);
        differential(what, LT_OP_FLIP, make_reduce, &r, 0);
        lt_free(r.x);
    }
    int64_t big[3] = {40, 30, 70};
    rctx r = {LT_OP_FLIP, 2, {0, 2}, 0, rand_tensor(LT_F32, 3, big, 0), NULL};
    differential("FLIP big", LT_OP_FLIP, make_reduce, &r, 0);
    lt_free(r.x);
    g_bf16 = 0;
}

TEST(coverage) {
    for (int op = 1; op < LT_OP_COUNT; op++) {
        if (!covered[op]) h_fail(__FILE__, __LINE__, "op %s never compared", g_ops[op].name);
        if (!covered_bf16[op]) h_fail(__FILE__, __LINE__, "op %s never compared in bfloat16", g_ops[op].name);
    }
    printf("  %lld cases compared, %lld rejected by the api (dtype rules)\n", (long long)g_ops_run,
           (long long)g_ops_skipped);
}

int main(void) {
    cpu_set_debug_guards(1);
    RUN(every_elementwise_op);
    RUN(reductions_softmax_matmul);
    RUN(fast_reductions);
    RUN(gelu_extremes);
    RUN(every_isa);
    RUN(views_scatters_cat);
    RUN(nn_ops);
    RUN(collectives);
    RUN(nn_losses_indexing_dropout);
    RUN(transformer_ops);
    RUN(random_programs);
    RUN(bf16_tile_rounding);
    RUN(donation_in_place_update);
    RUN(every_op_bf16);
    RUN(attention_bf16);
    RUN(bf16_weight_grad_split);
    RUN(var_std);
    RUN(cumsum);
    RUN(flip);
    RUN(coverage);
    return h_report();
}
