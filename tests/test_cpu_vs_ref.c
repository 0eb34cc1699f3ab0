/* The fast cpu backend against the reference backend (DESIGN 10, oracle 2):
 * every op of the table on random shapes (broadcasting, size-1 and empty
 * dims, non-contiguous views) and every dtype the op accepts, then random
 * whole programs, fused, with in-place ops through views. The cpu backend
 * runs with guard bytes after every buffer it allocates. */
#include "harness.h"

#include "backend/cpu/cpu.h"
#include "exec/exec.h"

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}
static int rint_(int n) { return (int)(rnd() % (uint64_t)n); }
static double runif(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

/* A materialized tensor of random values; `pos` keeps floats positive. */
static lt_tensor *rand_tensor(lt_dtype dt, int nd, const int64_t *shape, int pos) {
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
        }
    }
    lt_tensor *t = lt_from_data(buf, dt, nd, shape);
    free(buf);
    return t;
}

/* The same values, but as a non-contiguous view (a transposed copy, transposed back). */
static lt_tensor *noncontig(lt_tensor *t) {
    if (lt_ndim(t) < 2) return NULL;
    lt_tensor *tt = lt_contiguous(lt_transpose(t, 0, 1));
    return lt_transpose(tt, 0, 1); /* a view of tt; tt's handle is dropped by the caller's pool */
}

static int64_t g_ops_run, g_ops_skipped;
static int covered[LT_OP_COUNT];

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
            double t = (dr == LT_F32) ? tol : (dr == LT_F64 ? tol * 1e-6 : 0);
            compare(what, r, c, nr, t);
        }
    }
    free(r);
    free(c);
    lt_clear_error();
    if (op >= 0) covered[op] = 1;
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
        ectx e = {op, {NULL, NULL, NULL}, {0, 0}, (lt_dtype)rint_(5)};
        lt_tensor *hold[6] = {0};
        int pos = op == LT_OP_LOG || op == LT_OP_SQRT || op == LT_OP_RSQRT || op == LT_OP_POW || op == LT_OP_POW_SCALAR;
        for (int j = 0; j < (arity > 0 ? arity : 1); j++) {
            lt_dtype dt = (lt_dtype)rint_(5);
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
                 op == LT_OP_TANH || op == LT_OP_SIGMOID;
        snprintf(what, sizeof what, "%s trial %d", g_ops[op].name, trial);
        differential(what, op, make_elem, &e, tr ? 2e-5 : 2e-6);
        for (int j = 0; j < 6; j++) lt_free(hold[j]);
    }
}

typedef struct rctx {
    int op, naxes, axes[LT_MAX_DIMS], keep;
    lt_tensor *x, *y;
} rctx;

static lt_tensor *make_reduce(void *p) {
    rctx *r = p;
    switch (r->op) {
    case LT_OP_SUM: return lt_sum(r->x, r->naxes, r->axes, r->keep);
    case LT_OP_MEAN: return lt_mean(r->x, r->naxes, r->axes, r->keep);
    case LT_OP_MAX: return lt_max(r->x, r->naxes, r->axes, r->keep);
    case LT_OP_MIN: return lt_min(r->x, r->naxes, r->axes, r->keep);
    case LT_OP_ARGMAX: return lt_argmax(r->x, r->axes[0], r->keep);
    case LT_OP_ARGMIN: return lt_argmin(r->x, r->axes[0], r->keep);
    case LT_OP_SOFTMAX: return lt_softmax(r->x, r->axes[0]);
    case LT_OP_LOG_SOFTMAX: return lt_log_softmax(r->x, r->axes[0]);
    case LT_OP_MATMUL: return lt_matmul(r->x, r->y);
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
        r.x = rand_tensor((lt_dtype)rint_(5), nd, s, 0);
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
            lt_tensor *v = c == 0 ? noncontig(r.x) : NULL;
            if (v) r.x = v;
            differential("matmul", LT_OP_MATMUL, make_reduce, &r, 1e-5);
            if (v) lt_free(v);
            else lt_free(r.x);
            lt_free(r.y);
        }
}

typedef struct vctx {
    int kind;
    lt_tensor *x, *y;
    int64_t a, b;
} vctx;

/* Views (AS_STRIDED), scatters (in-place through views) and cat. */
static lt_tensor *make_view(void *p) {
    vctx *v = p;
    switch (v->kind) {
    case 0: return lt_contiguous(lt_slice(v->x, 0, v->a, v->a + 2, 2));
    case 1: return lt_contiguous(lt_transpose(v->x, 0, 1));
    case 2: return lt_contiguous(lt_diagonal(v->x, 0, 0, 1));
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
    case 6: return lt_reshape(lt_mul_scalar(v->x, 3), 1, (int64_t[]){-1}); /* a view of a pending value */
    default: return NULL;
    }
}

static void view_cases(void) {
    char what[64];
    for (int kind = 0; kind < 7; kind++)
        for (int dt = 0; dt < 5; dt++) {
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

TEST(views_scatters_cat) { view_cases(); }

/* ---- random whole programs ------------------------------------------------ */

#define POOL 6
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
        case 1: z = lt_mul(x, lt_tanh(y)); break; /* the tanh handle leaks into the pool below */
        case 2: z = lt_lerp(x, lt_add(x, y), w); break;
        case 3: z = lt_addcmul(x, y, t[c], w); break;
        case 4: z = lt_where(lt_gt(x, y), x, lt_sigmoid(y)); break;
        case 5: z = lt_maximum(lt_relu(x), lt_mul_scalar(y, -w)); break;
        case 6: z = lt_clamp(lt_sub(x, y), -1, 1); break;
        case 7: z = lt_addcdiv(x, y, lt_add_scalar(lt_abs(t[c]), 1), w); break;
        case 8: /* in place on a full tensor */
            lt_mul_scalar_(x, w);
            lt_add_(x, lt_clamp(y, -1, 1)) ? (void)0 : lt_clear_error();
            break;
        case 9: /* in place through a view */
            if (lt_ndim(x) == 2 && lt_shape(x)[1] > 3) {
                lt_tensor *v = lt_slice(x, 1, 1, 3, 1);
                lt_lerp_(v, lt_tanh(v), w);
                lt_free(v);
            }
            break;
        case 10: z = lt_mean(x, 0, NULL, false); break;
        case 11: z = lt_exp(lt_tanh(lt_sum(x, 1, (int[]){-1}, true))); break;
        case 12:
            if (s % 5 == 0) lt_mark_step();
            break;
        case 13:
            if (lt_ndim(x) == 2 && lt_shape(x)[1] == 40) {
                lt_tensor *m = lt_matmul(x, lt_transpose(x, 0, 1));
                z = lt_tanh(lt_mul_scalar(m, 0.05));
                lt_free(m);
            }
            break;
        }
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

/* The ops of the table the tests above reached; NN ops run through their
 * own suite (they fall back to the reference kernels on cpu). */
TEST(coverage) {
    int missing = 0;
    for (int op = 1; op < LT_OP_COUNT; op++)
        if (!covered[op] && op <= LT_OP_AS_STRIDED_SCATTER) {
            h_fail(__FILE__, __LINE__, "op %s never compared", g_ops[op].name);
            missing++;
        }
    for (int op = LT_OP_AS_STRIDED_SCATTER + 1; op < LT_OP_COUNT; op++)
        if (!covered[op]) fprintf(stderr, "  note: op %s is not compared here\n", g_ops[op].name);
    printf("  %lld cases compared, %lld rejected by the api (dtype rules)\n", (long long)g_ops_run,
           (long long)g_ops_skipped);
    (void)missing;
}

int main(void) {
    cpu_set_debug_guards(1);
    RUN(every_elementwise_op);
    RUN(reductions_softmax_matmul);
    RUN(views_scatters_cat);
    RUN(random_programs);
    RUN(donation_in_place_update);
    RUN(coverage);
    return h_report();
}
