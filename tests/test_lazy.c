/* Lazy vs eager: fixed-seed random programs against plain-C expected values,
 * and the same program with syncs at random points (lt_mark_step, partial
 * syncs through lt_to_host) against one sync at the end, bit for bit. Also
 * the compile cache's promises and bounded tracing memory.
 * CTest runs this binary a second time with LT_EAGER=1; cache-count
 * assertions are skipped there (every op syncs, so the counts differ). */
#include "harness.h"

#include "core/core.h" /* g_arena: the tracing arena, to prove it stays bounded */

#include <stdint.h>

static int eager(void) {
    const char *e = getenv("LT_EAGER");
    return e && !strcmp(e, "1");
}

/* The test's own generator (splitmix64), independent of the library's. */
static uint64_t rs;
static uint64_t rnext(void) {
    uint64_t z = (rs += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static int rint_(int n) { return (int)(rnext() % (uint64_t)n); }
static double runif(void) { return (double)(rnext() >> 11) * 0x1.0p-53; }

/* ---- random programs --------------------------------------------------------- */

#define NT 4
#define R 4
#define C 6
#define N (R * C)

enum { P_BIN, P_BIN_, P_SCAL, P_UN_, P_LERP_, P_VIEW_SCAL, P_VIEW_BIN, P_COL_FILL, P_ROW_BCAST, P_WHERE, P_MEAN, P_COPY,
       P_KINDS };

typedef struct {
    int kind, sub, d, a, b;
    double s;
    int dim, lo, hi, step; /* slice window */
} pop;

/* Plain-C model: float storage, each op computed in double and rounded to
 * float, as PyTorch computes float32 elementwise ops up to the last ulp. */
static float model[NT][N];

static double bin_c(int sub, double x, double y) {
    switch (sub) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    case 3: return x > y ? x : y;
    default: return x < y ? x : y;
    }
}
static double un_c(int sub, double x) {
    switch (sub) {
    case 0: return tanh(x);
    case 1: return 1 / (1 + exp(-x));
    case 2: return -x;
    case 3: return fabs(x);
    default: return x > 0 ? x : 0;
    }
}
static float clampf_(double x) { return (float)(x < -4 ? -4 : x > 4 ? 4 : x); }

static pop gen_op(void) {
    pop o = {0};
    o.kind = rint_(P_KINDS);
    o.sub = rint_(5);
    o.d = rint_(NT);
    o.a = rint_(NT);
    o.b = rint_(NT);
    o.s = runif() * 2 - 1;
    o.dim = rint_(2);
    int n = o.dim ? C : R;
    o.lo = rint_(n);
    o.hi = o.lo + 1 + rint_(n - o.lo);
    o.step = 1 + rint_(2);
    return o;
}

static void model_op(const pop *o) {
    float *d = model[o->d], *a = model[o->a], *b = model[o->b];
    float t[N], arow[C];
    switch (o->kind) {
    case P_BIN:
    case P_BIN_: /* out-of-place and in-place give the same values; then clamp to [-4, 4] */
        for (int i = 0; i < N; i++) t[i] = (float)bin_c(o->sub, d[i], a[i]);
        for (int i = 0; i < N; i++) d[i] = clampf_(t[i]);
        break;
    case P_SCAL:
        for (int i = 0; i < N; i++) d[i] = (float)(o->sub & 1 ? (double)a[i] * o->s : (double)a[i] + o->s);
        break;
    case P_UN_:
        for (int i = 0; i < N; i++) d[i] = (float)un_c(o->sub, d[i]);
        break;
    case P_LERP_:
        for (int i = 0; i < N; i++) d[i] = (float)((double)d[i] + fabs(o->s) * ((double)a[i] - d[i]));
        break;
    case P_VIEW_SCAL:
    case P_VIEW_BIN:
        memcpy(t, a, sizeof t); /* a may alias d: the operand is read before the write */
        for (int r = 0; r < R; r++)
            for (int c = 0; c < C; c++) {
                int k = o->dim ? c : r;
                if (k < o->lo || k >= o->hi || (k - o->lo) % o->step) continue;
                int i = r * C + c;
                if (o->kind == P_VIEW_SCAL) d[i] = (float)((double)d[i] * o->s);
                else d[i] = (float)((double)d[i] + t[i]);
            }
        break;
    case P_COL_FILL: /* column lo of d, through a transpose: fill with s */
        for (int r = 0; r < R; r++) d[r * C + o->lo % C] = (float)o->s;
        break;
    case P_ROW_BCAST: /* d += a[lo % R, :] broadcast over rows */
        memcpy(arow, a + (o->lo % R) * C, sizeof arow);
        for (int i = 0; i < N; i++) d[i] = clampf_((double)d[i] + arow[i % C]);
        break;
    case P_WHERE:
        for (int i = 0; i < N; i++) t[i] = a[i] > b[i] ? a[i] : b[i];
        memcpy(d, t, sizeof t);
        break;
    case P_MEAN: { /* d = d - mean(a, dim 0, keepdim) */
        double m[C] = {0};
        for (int i = 0; i < N; i++) m[i % C] += a[i];
        for (int c = 0; c < C; c++) m[c] = (float)(m[c] / R);
        for (int i = 0; i < N; i++) d[i] = (float)((double)d[i] - m[i % C]);
        break;
    }
    case P_COPY:
        memcpy(t, a, sizeof t);
        memcpy(d, t, sizeof t);
        break;
    }
}

static lt_tensor *bin_lt(int sub, lt_tensor *x, lt_tensor *y, int inplace) {
    switch (sub) {
    case 0: return inplace ? lt_add_(x, y) : lt_add(x, y);
    case 1: return inplace ? lt_sub_(x, y) : lt_sub(x, y);
    case 2: return inplace ? lt_mul_(x, y) : lt_mul(x, y);
    case 3: return inplace ? lt_maximum_(x, y) : lt_maximum(x, y);
    default: return inplace ? lt_minimum_(x, y) : lt_minimum(x, y);
    }
}

/* Runs one op on the library's tensors; out-of-place results replace slot d. */
static void lib_op(lt_tensor **T, const pop *o) {
    lt_tensor *d = T[o->d], *a = T[o->a], *b = T[o->b], *r = NULL;
    switch (o->kind) {
    case P_BIN:
        r = bin_lt(o->sub, d, a, 0);
        lt_clamp_(r, -4, 4);
        break;
    case P_BIN_:
        bin_lt(o->sub, d, a, 1);
        lt_clamp_(d, -4, 4);
        break;
    case P_SCAL:
        r = o->sub & 1 ? lt_mul_scalar(a, o->s) : lt_add_scalar(a, o->s);
        break;
    case P_UN_: {
        static lt_tensor *(*const U[5])(lt_tensor *) = {lt_tanh_, lt_sigmoid_, lt_neg_, lt_abs_, lt_relu_};
        U[o->sub](d);
        break;
    }
    case P_LERP_: lt_lerp_(d, a, fabs(o->s)); break;
    case P_VIEW_SCAL:
    case P_VIEW_BIN: {
        lt_tensor *vd = lt_slice(d, o->dim, o->lo, o->hi, o->step);
        if (o->kind == P_VIEW_SCAL) {
            lt_mul_scalar_(vd, o->s);
        } else {
            lt_tensor *va = lt_slice(a, o->dim, o->lo, o->hi, o->step);
            lt_add_(vd, va);
            lt_free(va);
        }
        lt_free(vd);
        break;
    }
    case P_COL_FILL: {
        lt_tensor *tr = lt_transpose(d, 0, 1), *col = lt_select(tr, 0, o->lo % C);
        lt_fill_(col, (float)o->s);
        lt_free(col);
        lt_free(tr);
        break;
    }
    case P_ROW_BCAST: {
        lt_tensor *row = lt_select(a, 0, o->lo % R);
        if (a == d) { /* d.add_(d[i]) partly overlaps: refused, as in PyTorch; clone the row, as it asks */
            lt_tensor *c = lt_clone(row);
            lt_free(row);
            row = c;
        }
        lt_add_(d, row);
        lt_clamp_(d, -4, 4);
        lt_free(row);
        break;
    }
    case P_WHERE: {
        lt_tensor *g = lt_gt(a, b);
        r = lt_where(g, a, b);
        lt_free(g);
        break;
    }
    case P_MEAN: {
        int ax[1] = {0};
        lt_tensor *m = lt_mean(a, 1, ax, true);
        lt_sub_(d, m);
        lt_free(m);
        break;
    }
    case P_COPY: lt_copy_(d, a); break;
    }
    if (r) {
        lt_free(T[o->d]);
        T[o->d] = r;
    }
}

/* sched 0: one sync at the end; 1: lt_mark_step at random points; 2: partial
 * syncs (lt_to_host of a random slot) at random points; 3: both, plus
 * reading a view of a random slot. */
static void run_program(const pop *ops, int nops, int sched, uint64_t sync_seed, float init[NT][N],
                        float out[NT][N]) {
    lt_tensor *T[NT];
    int64_t s[2] = {R, C};
    for (int k = 0; k < NT; k++) T[k] = lt_from_data(init[k], LT_F32, 2, s);
    rs = sync_seed;
    for (int i = 0; i < nops; i++) {
        lib_op(T, &ops[i]);
        if (sched == 0) continue;
        int p = rint_(5);
        if ((sched == 1 || sched == 3) && p == 0) lt_mark_step();
        if ((sched == 2 || sched == 3) && p == 1) {
            float tmp[N];
            CHECK(lt_to_host(T[rint_(NT)], tmp, sizeof tmp) == 0);
        }
        if (sched == 3 && p == 2) {
            lt_tensor *v = lt_select(T[rint_(NT)], 1, rint_(C));
            float tmp[R];
            CHECK(lt_to_host(v, tmp, sizeof tmp) == 0);
            lt_free(v);
        }
    }
    for (int k = 0; k < NT; k++) {
        CHECK(lt_to_host(T[k], out[k], sizeof out[k]) == 0);
        lt_free(T[k]);
    }
}

TEST(random_programs) {
    enum { NPROG = 24, NOPS = 120 };
    static pop ops[NOPS];
    static float init[NT][N], res[4][NT][N];
    for (int prog = 0; prog < NPROG; prog++) {
        rs = 1000 + (uint64_t)prog;
        for (int k = 0; k < NT; k++)
            for (int i = 0; i < N; i++) init[k][i] = (float)(runif() * 4 - 2);
        for (int i = 0; i < NOPS; i++) ops[i] = gen_op();
        memcpy(model, init, sizeof model);
        for (int i = 0; i < NOPS; i++) model_op(&ops[i]);
        for (int sched = 0; sched < 4; sched++) run_program(ops, NOPS, sched, 77 + (uint64_t)prog, init, res[sched]);
        for (int sched = 1; sched < 4; sched++)
            CHECK_MSG(!memcmp(res[0], res[sched], sizeof res[0]),
                      "program %d: schedule %d differs bitwise from one sync at the end", prog, sched);
        for (int k = 0; k < NT; k++)
            for (int i = 0; i < N; i++) {
                double got = res[0][k][i], want = model[k][i];
                if (!(fabs(got - want) <= 1e-5 * (1 + fabs(want)))) {
                    h_fail(__FILE__, __LINE__, "program %d slot %d elem %d: got %.9g, plain C %.9g", prog, k, i, got,
                           want);
                    k = NT;
                    break;
                }
            }
    }
}

/* A pending value keeps reading the OLD value of a tensor that was mutated
 * and synced on its own afterwards (a partial sync must not free a buffer
 * that another pending graph still reads). */
TEST(partial_sync_keeps_inputs_alive) {
    int64_t s[1] = {256};
    float v[256], junk[256], out[256];
    for (int i = 0; i < 256; i++) v[i] = (float)i, junk[i] = -1;
    lt_tensor *b = lt_from_data(v, LT_F32, 1, s);
    lt_tensor *a = lt_mul_scalar(b, 2); /* pending, reads b's buffer */
    lt_add_scalar_(b, 1);
    CHECK(lt_to_host(b, out, sizeof out) == 0 && out[3] == 4); /* syncs b alone */
    /* reuse freed memory of the same size, so a dangling read shows */
    lt_tensor *j[4];
    for (int k = 0; k < 4; k++) j[k] = lt_from_data(junk, LT_F32, 1, s);
    CHECK(lt_to_host(a, out, sizeof out) == 0);
    int ok = 1;
    for (int i = 0; i < 256; i++) ok &= out[i] == 2.0f * (float)i;
    CHECK_MSG(ok, "a = 2*b_old read a freed buffer: a[3] = %g, expected 6", out[3]);
    for (int k = 0; k < 4; k++) lt_free(j[k]);
    lt_free(a);
    lt_free(b);
}

/* A storage given a whole new value (fill_, zero_, a full-cover view's
 * assign) drops its old buffer at once, unless IR of this trace reads it:
 * a step that zeroes a gradient in place does not hold the old and the
 * new gradient at once (PyTorch's zero_grad on the device). */
TEST(overwritten_storage_frees_its_buffer_at_once) {
    int64_t s[1] = {1 << 20}; /* 4 MiB */
    lt_tensor *g = lt_randn(LT_F32, 1, s), *h = lt_randn(LT_F32, 1, s);
    lt_mark_step();
    lt_metrics_reset(); /* PeakBytes restarts at the bytes live now */
    double live = lt_metric("PeakBytes");
    CHECK(lt_zero_(g) == g);
    lt_metrics_reset();
    if (!eager()) /* eager, zero_ runs at once: its result replaces the old buffer */
        CHECK_MSG(lt_metric("PeakBytes") <= live - 4.0 * (1 << 20), "live bytes %g -> %g: g's old buffer was kept",
                  live, lt_metric("PeakBytes"));
    CHECK(lt_add_(g, h) == g);
    lt_mark_step();
    /* the step: g's new buffer in place of the old one (a few small buffers besides) */
    CHECK_MSG(lt_metric("PeakBytes") <= live + (1 << 16), "step peak %g, live before %g", lt_metric("PeakBytes"), live);
    /* a pending read of the old value keeps it: a = g * 2 traced before g.zero_() */
    lt_tensor *a = lt_mul_scalar(g, 2);
    CHECK(lt_zero_(g) == g);
    double *ra = h_read(a), *rh = h_read(h), *rg = h_read(g);
    int ok = 1;
    for (int i = 0; i < 1 << 20; i++) ok &= ra[i] == 2.0 * rh[i] && rg[i] == 0.0; /* old g was 0 + h */
    CHECK_MSG(ok, "the value read before the overwrite changed");
    free(ra), free(rh), free(rg);
    lt_free(a), lt_free(g), lt_free(h);
}

/* ---- compile cache ------------------------------------------------------------------ */

static double U0, C0;
static void mark_counts(void) {
    U0 = lt_metric("UncachedCompile");
    C0 = lt_metric("CachedCompile");
}
#define EXPECT_COMPILES(du, dc)                                                                             \
    do {                                                                                                    \
        if (!eager()) {                                                                                     \
            double u_ = lt_metric("UncachedCompile") - U0, c_ = lt_metric("CachedCompile") - C0;           \
            CHECK_MSG(u_ == (du) && c_ == (dc), "compiles: uncached +%g cached +%g, expected +%d +%d", u_, c_, \
                      (du), (dc));                                                                          \
        }                                                                                                   \
        mark_counts();                                                                                      \
    } while (0)

TEST(second_identical_step_compiles_nothing) {
    int64_t s[2] = {2, 3};
    float pv[6] = {0, 1, 2, 3, 4, 5}, gv[6] = {10, 10, 10, 10, 10, 10};
    lt_tensor *p = lt_from_data(pv, LT_F32, 2, s), *g = lt_from_data(gv, LT_F32, 2, s);
    lt_mark_step();
    lt_lerp_(p, g, 0.1);
    lt_mark_step(); /* the first step may compile */
    mark_counts();
    for (int step = 0; step < 5; step++) {
        lt_lerp_(p, g, 0.1);
        lt_mark_step();
        EXPECT_COMPILES(0, 1);
    }
    double e[6];
    for (int i = 0; i < 6; i++) {
        float x = pv[i];
        for (int k = 0; k < 6; k++) x = (float)((double)x + 0.1 * (10.0 - x));
        e[i] = x;
    }
    h_expect(__FILE__, __LINE__, p, e, 6, 1e-6);
    lt_free(p);
    lt_free(g);
}

TEST(aliasing_is_part_of_the_key) {
    int64_t s[1] = {3};
    float av[3] = {1, 2, 3}, bv[3] = {10, 20, 30};
    lt_tensor *a = lt_from_data(av, LT_F32, 1, s), *b = lt_from_data(bv, LT_F32, 1, s);
    lt_tensor *ab = lt_add(a, b);
    EXPECT_VALUES(ab, 0, 11, 22, 33);
    mark_counts();
    lt_tensor *aa = lt_add(a, a);
    EXPECT_VALUES(aa, 0, 2, 4, 6);
    EXPECT_COMPILES(1, 0); /* a+a is not a+b with the same slot twice */
    lt_tensor *bb = lt_add(b, b), *ba = lt_add(b, a);
    EXPECT_VALUES(bb, 0, 20, 40, 60);
    EXPECT_VALUES(ba, 0, 11, 22, 33);
    EXPECT_COMPILES(0, 2); /* same structures, other buffers */
    lt_free(ab);
    lt_free(aa);
    lt_free(bb);
    lt_free(ba);
    lt_free(a);
    lt_free(b);
}

typedef lt_tensor *(*scal_fn)(lt_tensor *, double);
static lt_tensor *lerp_to_ten(lt_tensor *a, double w) {
    int64_t s[1] = {3};
    lt_tensor *g = lt_full(10, LT_F32, 1, s), *r = lt_lerp(a, g, w);
    lt_free(g);
    return r;
}
static lt_tensor *clamp_lo(lt_tensor *a, double lo) { return lt_clamp(a, lo, INFINITY); }
static lt_tensor *full_like(lt_tensor *a, double v) { return lt_full(v, lt_dtype_of(a), lt_ndim(a), lt_shape(a)); }
static double ref_scal(int f, double x, double s) {
    switch (f) {
    case 0: return x + s;
    case 1: return x * s;
    case 2: return pow(x, s);
    case 3: return x + s * (10 - x);
    case 4: return x < s ? s : x;
    default: return s;
    }
}

/* A non-special scalar is a runtime parameter: changing it reuses the
 * executable, and the new value is the one used. 0 and 1 are baked. */
TEST(runtime_scalars_and_baked_specials) {
    static const scal_fn F[6] = {lt_add_scalar, lt_mul_scalar, lt_pow_scalar, lerp_to_ten, clamp_lo, full_like};
    int64_t s[1] = {3};
    float av[3] = {0.5f, 2, 3};
    lt_tensor *a = lt_from_data(av, LT_F32, 1, s);
    for (int f = 0; f < 6; f++) {
        static const double seq[] = {3, 4, 0.1, 0.2, 0.5, 1.0, 0.0, 1.0, -2.5};
        /* expected compiles for each value: new, reuse, reuse, reuse, reuse,
         * new (1 is baked), new (0 is baked), reuse (1 again), reuse (runtime again) */
        static const int news[] = {1, 0, 0, 0, 0, 1, 1, 0, 0};
        mark_counts();
        for (size_t k = 0; k < sizeof seq / sizeof seq[0]; k++) {
            lt_tensor *r = F[f](a, seq[k]);
            double e[3];
            for (int i = 0; i < 3; i++) e[i] = (float)ref_scal(f, av[i], seq[k]);
            h_expect(__FILE__, __LINE__, r, e, 3, 1e-6);
            /* the first value of each function may reuse an executable from another test */
            if (k == 0) mark_counts();
            else EXPECT_COMPILES(news[k], 1 - news[k]);
            lt_free(r);
        }
    }
    lt_free(a);
}

TEST(shape_and_dtype_changes_recompile) {
    int64_t s3[1] = {3}, s4[1] = {4};
    lt_tensor *a = lt_ones(LT_F32, 1, s3), *b = lt_ones(LT_F32, 1, s4), *c = lt_ones(LT_F64, 1, s3),
              *d = lt_ones(LT_I32, 1, s3);
    lt_mark_step();
    lt_tensor *r = lt_mul_scalar(a, 2.5);
    EXPECT_VALUES(r, 0, 2.5, 2.5, 2.5);
    lt_free(r);
    mark_counts();
    r = lt_mul_scalar(a, 3.5);
    EXPECT_VALUES(r, 0, 3.5, 3.5, 3.5);
    lt_free(r);
    EXPECT_COMPILES(0, 1);
    r = lt_mul_scalar(b, 2.5);
    EXPECT_VALUES(r, 0, 2.5, 2.5, 2.5, 2.5);
    lt_free(r);
    EXPECT_COMPILES(1, 0); /* shape */
    r = lt_mul_scalar(c, 2.5);
    EXPECT_VALUES(r, 0, 2.5, 2.5, 2.5);
    CHECK(lt_dtype_of(r) == LT_F64);
    lt_free(r);
    EXPECT_COMPILES(1, 0); /* dtype */
    r = lt_mul_scalar(d, 2.5);
    EXPECT_VALUES(r, 0, 2.5, 2.5, 2.5);
    CHECK(lt_dtype_of(r) == LT_F32);
    lt_free(r);
    EXPECT_COMPILES(1, 0); /* input dtype, same output dtype */
    lt_free(a);
    lt_free(b);
    lt_free(c);
    lt_free(d);
}

/* ---- bounded memory ---------------------------------------------------------------------- */

/* 200k lerps, a partial sync every 1000 and never lt_mark_step: the arena
 * holds at most the nodes since the last sync. */
TEST(bounded_memory_without_mark_step) {
    int64_t s[2] = {2, 3};
    float xv[6] = {0, 1, 2, 3, 4, 5}, gv[6] = {-1, 7, 0.5f, 2, 9, -3}, out[6], m[6];
    memcpy(m, xv, sizeof m);
    lt_tensor *x = lt_from_data(xv, LT_F32, 2, s), *g = lt_from_data(gv, LT_F32, 2, s);
    size_t peak = 0, first_peak = 0;
    double mark0 = lt_metric("MarkStep");
    for (int i = 1; i <= 200000; i++) {
        /* varying runtime weights; slow enough that the first blocks are far from g */
        double w = (i % 7) * 0.0005;
        lt_tensor *nx = lt_lerp(x, g, w);
        lt_free(x);
        x = nx;
        for (int k = 0; k < 6; k++) m[k] = (float)((double)m[k] + w * ((double)gv[k] - m[k]));
        if (i % 1000 == 0) {
            if (g_arena.bytes > peak) peak = g_arena.bytes;
            if (i == 1000) first_peak = g_arena.bytes;
            CHECK(lt_to_host(x, out, sizeof out) == 0);
            if (lt_error()) break;
            for (int k = 0; k < 6; k++)
                if (!(fabs(out[k] - m[k]) <= 1e-5 * (1 + fabs(m[k])))) {
                    h_fail(__FILE__, __LINE__, "iteration %d elem %d: got %.9g, plain C %.9g", i, k, out[k], m[k]);
                    i = 200000;
                    break;
                }
        }
    }
    CHECK_MSG(peak <= first_peak + 4096 && peak < (1u << 20), "arena grew: first %zu bytes, peak %zu", first_peak,
              peak);
    CHECK_MSG(g_arena.bytes < 4096, "arena not reset after the last sync: %zu bytes", g_arena.bytes);
    if (!eager()) CHECK(lt_metric("MarkStep") == mark0); /* lt_to_host only */
    double e[6];
    for (int k = 0; k < 6; k++) e[k] = m[k];
    h_expect(__FILE__, __LINE__, x, e, 6, 1e-5);
    double ab = lt_metric("ArenaBytes");
    CHECK(!isnan(ab) && ab < (1u << 20));
    lt_free(x);
    lt_free(g);
}

int main(void) {
    RUN(random_programs);
    RUN(partial_sync_keeps_inputs_alive);
    RUN(overwritten_storage_frees_its_buffer_at_once);
    RUN(second_identical_step_compiles_nothing);
    RUN(aliasing_is_part_of_the_key);
    RUN(runtime_scalars_and_baked_specials);
    RUN(shape_and_dtype_changes_recompile);
    RUN(bounded_memory_without_mark_step);
    return h_report();
}
