/* Collectives (DESIGN 12): lt_all_reduce_ and lt_broadcast_ against the
 * values each rank can compute alone. CTest runs this binary alone (a world
 * of one: every collective is the identity) and under `mpirun -np 2` and
 * `-np 3`. Rank r's tensor holds value(r, i), small integers, so every sum
 * is exact in every dtype and the check is equality. Both backends; the cpu
 * one with buckets off, small and large. */
#include "harness.h"

#include <sys/statvfs.h>

#include "core/core.h"
#include "dist/dist.h"
#include "exec/exec.h"

static int R, W; /* this rank, the world size */

static double value(int r, int64_t i, lt_dtype dt) {
    if (dt == LT_BOOL) return (double)((i + r) % 3 == 0);
    return (double)((i * 7 + r * 5) % 11) - 4.0;
}

static lt_tensor *rank_tensor(lt_dtype dt, int nd, const int64_t *shape, int r) {
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= shape[d];
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = value(r, i, dt);
    lt_tensor *f = lt_from_data(v, LT_F64, nd, shape), *t = lt_to_dtype(f, dt);
    lt_free(f);
    free(v);
    return t;
}

/* The reduction of element i over all ranks, as the op defines it, in the
 * dtype (MEAN divides the sum in the dtype, as PyTorch's all_reduce + div_). */
static double expected(lt_reduce_op op, int64_t i, lt_dtype dt) {
    double acc = value(0, i, dt);
    for (int r = 1; r < W; r++) {
        double v = value(r, i, dt);
        if (op == LT_REDUCE_MAX) acc = v > acc ? v : acc;
        else if (op == LT_REDUCE_MIN) acc = v < acc ? v : acc;
        else if (dt == LT_BOOL) acc = acc != 0 || v != 0;
        else acc += v;
    }
    if (op == LT_REDUCE_MEAN)
        acc = dt == LT_F32 ? (double)((float)acc / (float)W) : dt == LT_BF16 ? bf16_round((float)acc / (float)W) : acc / W;
    return acc;
}

static void check_values(const char *what, lt_tensor *t, lt_reduce_op op, int root) {
    double *got = h_read(t);
    int64_t n = lt_numel(t);
    lt_dtype dt = lt_dtype_of(t);
    for (int64_t i = 0; i < n; i++) {
        double e = root >= 0 ? value(root, i, dt) : expected(op, i, dt);
        if (got[i] != e) {
            h_fail(__FILE__, __LINE__, "%s (%s, rank %d of %d): element %lld is %.17g, expected %.17g", what,
                   lt_dtype_name(dt), R, W, (long long)i, got[i], e);
            break;
        }
    }
    free(got);
}

static const lt_reduce_op OPS[4] = {LT_REDUCE_SUM, LT_REDUCE_MEAN, LT_REDUCE_MAX, LT_REDUCE_MIN};

/* Every dtype, every reduction, several shapes (empty and scalar too), both backends. */
TEST(all_reduce_every_dtype) {
    static const int64_t shapes[4][2] = {{3, 5}, {0, 4}, {1, 1}, {257, 3}};
    for (int be = 0; be < 2; be++) {
        exec_set_backend(be);
        for (int dt = LT_F32; dt <= LT_BF16; dt++)
            for (int o = 0; o < 4; o++)
                for (int s = 0; s < 4; s++) {
                    lt_tensor *t = rank_tensor((lt_dtype)dt, 2, shapes[s], R);
                    lt_tensor *r = lt_all_reduce_(t, OPS[o]);
                    if (OPS[o] == LT_REDUCE_MEAN && !dtype_is_float((lt_dtype)dt)) { /* MEAN needs floats */
                        CHECK(r == NULL);
                        CHECK_ERR(LT_ERR_DTYPE);
                    } else {
                        CHECK(r == t);
                        lt_mark_step();
                        check_values("all_reduce", t, OPS[o], -1);
                    }
                    lt_free(t);
                }
    }
    exec_set_backend(-1);
}

TEST(broadcast_from_every_root) {
    int64_t shape[2] = {4, 6};
    for (int be = 0; be < 2; be++) {
        exec_set_backend(be);
        for (int root = 0; root < W; root++)
            for (int dt = LT_F32; dt <= LT_BF16; dt++) {
                lt_tensor *t = rank_tensor((lt_dtype)dt, 2, shape, R);
                CHECK(lt_broadcast_(t, root) == t);
                lt_mark_step();
                check_values("broadcast", t, LT_REDUCE_SUM, root);
                lt_free(t);
            }
    }
    exec_set_backend(-1);
    lt_tensor *t = rank_tensor(LT_F32, 2, shape, R);
    CHECK(lt_broadcast_(t, W) == NULL);
    CHECK_ERR(LT_ERR_ARG);
    CHECK(lt_all_reduce_(t, (lt_reduce_op)7) == NULL);
    CHECK_ERR(LT_ERR_ARG);
    lt_free(t);
}

/* Through views: a non-contiguous (transposed) view and a slice; the base
 * and the other aliases see the reduced values, the rest is untouched. */
TEST(through_views) {
    int64_t shape[2] = {6, 5};
    for (int be = 0; be < 2; be++) {
        exec_set_backend(be);
        lt_tensor *base = rank_tensor(LT_F32, 2, shape, R);
        lt_tensor *tr = lt_transpose(base, 0, 1);           /* (5, 6), non-contiguous */
        lt_tensor *sl = lt_slice(tr, 1, 1, 5, 2);           /* columns 1 and 3 of tr: rows 1, 3 of base */
        CHECK(lt_all_reduce_(sl, LT_REDUCE_SUM) == sl);
        lt_mark_step();
        double *b = h_read(base);
        for (int64_t i = 0; i < 30; i++) {
            int64_t row = i / 5;
            double e = row == 1 || row == 3 ? expected(LT_REDUCE_SUM, i, LT_F32) : value(R, i, LT_F32);
            CHECK_MSG(b[i] == e, "view: base element %lld is %g, expected %g (rank %d)", (long long)i, b[i], e, R);
        }
        free(b);
        lt_free(sl);
        lt_free(tr);
        lt_free(base);
    }
    exec_set_backend(-1);
    /* An expanded view cannot be written. */
    lt_tensor *one = rank_tensor(LT_F32, 1, (int64_t[]){1}, R), *ex = lt_expand(one, 1, (int64_t[]){4});
    CHECK(lt_all_reduce_(ex, LT_REDUCE_SUM) == NULL);
    CHECK_ERR(LT_ERR_ARG);
    lt_free(ex);
    lt_free(one);
}

/* In one graph with other ops, over several steps with changing values
 * (one compile, then cache hits), bucketed or not: y = all_reduce(2x + 1)
 * then y * 3, alongside broadcasts and max-reductions, many small tensors. */
static void mixed_graph(size_t bucket_bytes, int be) {
    g_config.dist_bucket_bytes = bucket_bytes; /* read at compile time, not part of the key: */
    cache_clear();                             /* compile again */
    exec_set_backend(be);
    enum { N = 12 };
    int64_t shape[2] = {7, 9};
    double u0 = lt_metric("UncachedCompile");
    for (int step = 0; step < 4; step++) {
        lt_tensor *x[N], *y[N];
        for (int k = 0; k < N; k++) {
            x[k] = rank_tensor(LT_F32, 2, shape, R + step + k);
            lt_tensor *a = lt_mul_scalar(x[k], 2.0);
            y[k] = lt_add_scalar(a, 1.0);
            lt_free(a);
            lt_all_reduce_(y[k], k % 3 == 2 ? LT_REDUCE_MAX : LT_REDUCE_SUM);
            if (k % 4 == 3) lt_broadcast_(x[k], W - 1);
            lt_mul_scalar_(y[k], 3.0);
        }
        CHECK_NO_ERR();
        lt_mark_step();
        for (int k = 0; k < N; k++) {
            double *got = h_read(y[k]), *gx = h_read(x[k]);
            for (int64_t i = 0; i < 63; i++) {
                double e = 2 * value(step + k, i, LT_F32) + 1; /* rank 0's term */
                for (int r = 1; r < W; r++) {
                    double v = 2 * value(r + step + k, i, LT_F32) + 1;
                    e = k % 3 == 2 ? (v > e ? v : e) : e + v;
                }
                e *= 3;
                double ex = k % 4 == 3 ? value(W - 1 + step + k, i, LT_F32) : value(R + step + k, i, LT_F32);
                if (got[i] != e || gx[i] != ex) {
                    h_fail(__FILE__, __LINE__, "mixed (bucket %zu, backend %d) step %d tensor %d element %lld: %g, %g; expected %g, %g",
                           bucket_bytes, be, step, k, (long long)i, got[i], gx[i], e, ex);
                    break;
                }
            }
            free(got);
            free(gx);
            lt_free(x[k]);
            lt_free(y[k]);
        }
    }
    CHECK(lt_metric("UncachedCompile") - u0 == 1); /* one graph, then hits */
    exec_set_backend(-1);
}

TEST(in_a_graph_several_steps) {
    size_t saved = g_config.dist_bucket_bytes;
    size_t buckets[3] = {0, 600, (size_t)4 << 20}; /* off; 2-3 tensors each; all in one */
    for (int b = 0; b < 3; b++) mixed_graph(buckets[b], 0);
    mixed_graph(saved, 1);
    g_config.dist_bucket_bytes = saved;
}

/* Buckets issue fewer collectives: 12 same-kind reductions of 252 bytes. */
TEST(buckets_coalesce) {
    if (W == 1) return; /* a world of one calls no MPI, counts nothing */
    size_t saved = g_config.dist_bucket_bytes;
    int64_t shape[1] = {63};
    double counts[2];
    for (int b = 0; b < 2; b++) {
        g_config.dist_bucket_bytes = b ? (size_t)4 << 20 : 0;
        cache_clear();
        lt_tensor *t[12];
        for (int k = 0; k < 12; k++) t[k] = rank_tensor(LT_F32, 1, shape, R + k + 100 * b);
        double c0 = lt_metric("AllReduceCount");
        for (int k = 0; k < 12; k++) lt_all_reduce_(t[k], LT_REDUCE_SUM);
        lt_mark_step();
        counts[b] = lt_metric("AllReduceCount") - c0;
        for (int k = 0; k < 12; k++) lt_free(t[k]);
    }
    CHECK_MSG(counts[0] == 12 && counts[1] == 1, "collectives issued: %g unbucketed, %g bucketed", counts[0], counts[1]);
    CHECK(lt_metric("AllReduceBytes") > 0);
    g_config.dist_bucket_bytes = saved;
}

/* Ranks that trace different graphs get an error at that sync, on every
 * rank, and the library stays usable. */
TEST(mismatched_graphs_error) {
    if (W == 1) return;
    int64_t shape[1] = {R == 0 ? 5 : 6};
    lt_tensor *t = rank_tensor(LT_F32, 1, shape, R);
    lt_all_reduce_(t, LT_REDUCE_SUM);
    lt_mark_step();
    CHECK_MSG(lt_error() == LT_ERR_STATE && strstr(lt_error_message(), "different graphs"),
              "expected a mismatch error, got %d: %s", lt_error(), lt_error_message());
    lt_clear_error();
    lt_free(t);
    lt_tensor *u = rank_tensor(LT_F64, 1, (int64_t[]){5}, R);
    lt_all_reduce_(u, LT_REDUCE_SUM);
    lt_mark_step();
    CHECK_NO_ERR();
    check_values("after a mismatch", u, LT_REDUCE_SUM, -1);
    lt_free(u);
}

/* Not differentiable: refused on a tensor that requires grad in grad mode. */
TEST(requires_grad) {
    lt_tensor *p = rank_tensor(LT_F32, 1, (int64_t[]){3}, R);
    lt_set_requires_grad(p, true);
    CHECK(lt_all_reduce_(p, LT_REDUCE_SUM) == NULL);
    CHECK_ERR(LT_ERR_STATE);
    lt_no_grad_begin();
    CHECK(lt_broadcast_(p, 0) == p);
    lt_no_grad_end();
    lt_mark_step();
    check_values("broadcast of a parameter", p, LT_REDUCE_SUM, 0);
    lt_free(p);
}

/* Gradient compression (lt_dist_set_grad_compress): rank r's gradient is
 * coef(r, i), not a bfloat16 value, so each is rounded on the way: the
 * mean must be bf16(sum over r of bf16(coef(r, i)), in float32 in rank
 * order, / W), the same bits on every rank, on both backends, with half
 * the bytes on the wire; float64 gradients are averaged uncompressed, and
 * a world of one traces nothing. */
static float coef(int r, int64_t i) { return (float)(sin((double)i * 0.37 + r) * 3.3); }

TEST(grad_compress_bf16) {
    static const int64_t shapes[3][2] = {{1000, 1}, {7, 1}, {3, 5}};
    double wire[2] = {0, 0};
    for (int be = 0; be < 2; be++)
        for (int comp = 0; comp < 2; comp++) {
            exec_set_backend(be);
            CHECK(!lt_dist_set_grad_compress(comp ? LT_GRAD_COMPRESS_BF16 : LT_GRAD_COMPRESS_NONE));
            lt_tensor *p[4], *c[4];
            for (int k = 0; k < 4; k++) {
                lt_dtype dt = k == 3 ? LT_F64 : LT_F32;
                int64_t n = k == 3 ? 4 : shapes[k][0] * shapes[k][1];
                double *v = malloc(sizeof *v * (size_t)n);
                for (int64_t i = 0; i < n; i++) v[i] = coef(R, i + 1000 * k);
                lt_tensor *f = lt_from_data(v, LT_F64, k == 3 ? 1 : 2, k == 3 ? &n : shapes[k]);
                c[k] = lt_to_dtype(f, dt);
                p[k] = lt_zeros(dt, lt_ndim(c[k]), lt_shape(c[k]));
                lt_set_requires_grad(p[k], true);
                lt_free(f), free(v);
            }
            for (int k = 0; k < 4; k++) { /* d/dp sum(p * c) = c */
                lt_tensor *m = lt_mul(p[k], c[k]), *l = lt_sum(m, 0, NULL, false);
                lt_backward(l);
                lt_free(m), lt_free(l);
            }
            double w0 = lt_metric("CommWireBytes");
            CHECK(!lt_dist_average_grads(4, p));
            lt_mark_step();
            if (be == 1) wire[comp] = lt_metric("CommWireBytes") - w0;
            for (int k = 0; k < 4; k++) {
                double *g = h_read(lt_grad(p[k]));
                for (int64_t i = 0; i < lt_numel(p[k]); i++) {
                    double e;
                    if (k == 3 || !comp || W == 1) { /* the plain mean, in the dtype */
                        double s = 0;
                        for (int r = 0; r < W; r++) s += k == 3 ? (double)coef(r, i + 1000 * k) : (float)coef(r, i + 1000 * k);
                        e = k == 3 ? s / W : (double)(float)((float)s / (float)W);
                        if (k != 3 && W > 2) e = g[i]; /* float32 sums of 3 ranks: MPI's order, not checked here */
                    } else {
                        float s = 0;
                        for (int r = 0; r < W; r++) s += bf16_round(coef(r, i + 1000 * k));
                        e = bf16_round(s / (float)W);
                    }
                    if (g[i] != e) {
                        h_fail(__FILE__, __LINE__, "grad_compress %s, backend %d, parameter %d element %lld: %.9g, expected %.9g (rank %d of %d)",
                               comp ? "bf16" : "none", be, k, (long long)i, g[i], e, R, W);
                        break;
                    }
                }
                free(g);
                lt_free(p[k]), lt_free(c[k]);
            }
        }
    if (W > 1) /* mostly the 1022 float32 values: 2 bytes each on the wire instead of 4 */
        CHECK_MSG(wire[1] > 0 && wire[1] < 0.55 * wire[0], "bytes on the wire: %g compressed, %g not", wire[1], wire[0]);
    CHECK(lt_dist_set_grad_compress((lt_grad_compress)5) == -1);
    CHECK_ERR(LT_ERR_ARG);
    lt_dist_set_grad_compress(LT_GRAD_COMPRESS_NONE);
    exec_set_backend(-1);
}

/* ZeRO-1's ops: a tensor of n elements in W chunks of c = ceil(n / W),
 * zero-padded. Rank R's reduce-scatter holds the reduction of chunk R,
 * its shard its own chunk R, and the all-gather of the shards puts element
 * i of rank i / c in place i. Several shapes (n below, at and above a
 * multiple of W, empty) in one graph, on the reference backend and on the
 * cpu one with buckets off and on (one reduce-scatter and one all-gather
 * for all shapes: every rank's part of the stage holds every member's
 * chunk). */
TEST(reduce_scatter_all_gather) {
    enum { NS = 5 };
    static const int64_t shapes[NS][2] = {{7, 3}, {2, 2}, {1, 1}, {0, 4}, {6, 1}};
    static const lt_dtype dts[4] = {LT_F32, LT_F64, LT_I64, LT_BF16};
    size_t saved = g_config.dist_bucket_bytes;
    for (int be = 0; be < 3; be++)
        for (int d = 0; d < 4; d++) {
            exec_set_backend(be == 2);
            g_config.dist_bucket_bytes = be == 1 ? (size_t)4 << 20 : 0;
            cache_clear();
            lt_dtype dt = dts[d];
            lt_reduce_op op = dt == LT_I64 ? LT_REDUCE_SUM : OPS[d % 4];
            lt_tensor *t[NS], *rs[NS], *sh[NS], *u[NS];
            double c0 = lt_metric("AllReduceCount");
            for (int k = 0; k < NS; k++) rs[k] = lt_reduce_scatter(t[k] = rank_tensor(dt, 2, shapes[k], R), op);
            for (int k = 0; k < NS; k++) { /* as the optimizer: the reduce-scatters, then the all-gathers */
                sh[k] = lt_dist_shard(t[k]);
                u[k] = lt_zeros(dt, 2, shapes[k]);
                CHECK(lt_all_gather_(u[k], sh[k]) == u[k]);
            }
            lt_mark_step();
            CHECK_NO_ERR();
            if (W > 1 && be == 1) /* one bucket of reduce-scatters, one of all-gathers (the empty tensor's count too) */
                CHECK_MSG(lt_metric("AllReduceCount") - c0 == 2, "%s: %g collectives bucketed", lt_dtype_name(dt),
                          lt_metric("AllReduceCount") - c0);
            for (int k = 0; k < NS; k++) {
                int64_t n = lt_numel(t[k]), c = (n + W - 1) / W;
                CHECK(lt_ndim(rs[k]) == 1 && lt_numel(rs[k]) == c && lt_numel(sh[k]) == c);
                double *a = h_read(rs[k]), *b = h_read(sh[k]), *g = h_read(u[k]);
                for (int64_t i = 0; i < c; i++) {
                    int64_t at = R * c + i;
                    double ea = at < n ? expected(op, at, dt) : 0, eb = at < n ? value(R, at, dt) : 0;
                    CHECK_MSG(a[i] == ea && b[i] == eb, "%s shape %d op %d backend %d: chunk element %lld: reduce-scatter "
                              "%g (expected %g), shard %g (expected %g), rank %d of %d", lt_dtype_name(dt), k, (int)op,
                              be, (long long)i, a[i], ea, b[i], eb, R, W);
                }
                for (int64_t i = 0; i < n; i++)
                    CHECK_MSG(g[i] == value((int)(i / c), i, dt), "%s shape %d backend %d: gathered element %lld is %g, "
                              "expected rank %d's %g", lt_dtype_name(dt), k, be, (long long)i, g[i], (int)(i / c),
                              value((int)(i / c), i, dt));
                free(a), free(b), free(g);
                lt_free(t[k]), lt_free(rs[k]), lt_free(sh[k]), lt_free(u[k]);
            }
        }
    g_config.dist_bucket_bytes = saved;
    exec_set_backend(-1);
    lt_tensor *t = lt_zeros(LT_F32, 1, (int64_t[]){4}), *s = lt_zeros(LT_F32, 1, (int64_t[]){5});
    CHECK(lt_all_gather_(t, s) == NULL); /* a shard of the wrong size */
    CHECK_ERR(LT_ERR_SHAPE);
    lt_free(t), lt_free(s);
}

/* Ranks on one machine all-reduce through shared memory (src/dist/shm.c)
 * unless LT_DIST_SHM=0 (CTest's _mpi runs): each rank sums a 1/W slice
 * (slices of 16 values, the last short) and gathers the others'. A
 * float32 sum and max of 100,003 values with NaN and infinities in them,
 * over 4 steps whose values change, with the staging buffer reused each
 * step: the same bits on every rank, the float32 sum in rank order, a NaN
 * anywhere makes the max NaN (as torch.max). */
TEST(shared_memory_path) {
    const char *e = getenv("LT_DIST_SHM");
    struct statvfs fs; /* shm.c also wants 1 GiB free in /dev/shm */
    int room = statvfs("/dev/shm", &fs) == 0 && (double)fs.f_bavail * (double)fs.f_frsize >= 1073741824.0;
    CHECK_MSG(dist_buffer_shared() == (W > 1 && room && !(e && !strcmp(e, "0"))),
              "shared memory %d, world %d, LT_DIST_SHM %s, /dev/shm with room %d", dist_buffer_shared(), W,
              e ? e : "unset", room);
    int64_t n = 100003;
    float *v = malloc(sizeof *v * (size_t)n), *got = malloc(sizeof *got * (size_t)n);
    for (int step = 0; step < 4; step++)
        for (int op = 0; op < 2; op++) {
            lt_reduce_op rop = op ? LT_REDUCE_MAX : LT_REDUCE_SUM;
            for (int64_t i = 0; i < n; i++) v[i] = (float)sin((double)(i + 31 * R + 7 * step)) * 1e3f;
            if (R == W - 1) v[n - 1] = NAN, v[5] = INFINITY;
            if (R == 0) v[n / 2] = -INFINITY, v[16 * W] = NAN;
            lt_tensor *t = lt_from_data(v, LT_F32, 1, &n);
            CHECK(lt_all_reduce_(t, rop) == t);
            lt_mark_step();
            CHECK(lt_to_host(t, got, sizeof *got * (size_t)n) == 0);
            int64_t bad = -1;
            for (int64_t i = 0; i < n && bad < 0; i++) {
                float a = 0;
                for (int r = 0; r < W; r++) {
                    float x = (float)sin((double)(i + 31 * r + 7 * step)) * 1e3f;
                    if (r == W - 1 && (i == n - 1 || i == 5)) x = i == 5 ? INFINITY : NAN;
                    if (r == 0 && (i == n / 2 || i == 16 * W)) x = i == n / 2 ? -INFINITY : NAN;
                    a = r == 0 ? x : op ? (a > x || a != a ? a : x) : a + x;
                }
                int same = isnan(a) ? isnan(got[i]) : a == got[i];
                /* Through MPI: a 3-rank sum in MPI's order, and MPI_MAX's own NaN rule. */
                int mpi_sum = !dist_buffer_shared() && !op && W > 2, mpi_nan = !dist_buffer_shared() && op && isnan(a);
                if (!same && !mpi_nan && !(mpi_sum && fabsf(a - got[i]) <= 1e-6f * fabsf(a))) bad = i;
            }
            CHECK_MSG(bad < 0, "step %d %s: element %lld", step, op ? "max" : "sum", (long long)bad);
            lt_free(t);
        }
    free(v), free(got);
}

int main(void) {
    CHECK(lt_dist_init() == 0);
    R = lt_dist_rank();
    W = lt_dist_world_size();
    if (R == 0) printf("world of %d rank%s\n", W, W > 1 ? "s" : "");
    RUN(all_reduce_every_dtype);
    RUN(broadcast_from_every_root);
    RUN(through_views);
    RUN(in_a_graph_several_steps);
    RUN(buckets_coalesce);
    RUN(mismatched_graphs_error);
    RUN(requires_grad);
    RUN(grad_compress_bf16);
    RUN(reduce_scatter_all_gather);
    RUN(shared_memory_path);
    return h_report();
}
