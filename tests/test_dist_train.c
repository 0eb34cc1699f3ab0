/* Data-parallel training (DESIGN 12): W ranks x batch 128/W reproduce one
 * process x batch 128. Every rank first trains the reference alone (no
 * collective: a world-of-one graph), then the distributed run from the
 * same seed: each rank takes its rows of the same global batch, parameters
 * broadcast from rank 0, gradients averaged (lt_dist_average_grads), the
 * loss averaged over the ranks, batch norm synchronized for ResNet-20
 * (lt_dist_set_sync_bn). Checked at every step: the loss against the
 * reference's to 1e-5 relative, and the parameters bitwise identical on
 * all ranks (a hash of their bytes, all-reduced with MAX and MIN). CTest
 * runs it alone and under `mpirun -np 2`. */
#include "harness.h"

#include <stdint.h>

/* Under the sanitizers (make test-asan: no oneDNN, the reference convs) a
 * smaller problem runs the same code paths in seconds. */
#if defined(__SANITIZE_ADDRESS__)
enum { GLOBAL = 16, STEPS = 4, RESNET_HW = 4 };
#else
enum { GLOBAL = 128, STEPS = 20, RESNET_HW = 16 };
#endif
static int R, W;

/* The global batch of a step: images of one channel, labels 0..9. */
static void batch(int step, int hw, int64_t first, int64_t rows, float *x, int64_t *y) {
    for (int64_t i = 0; i < rows; i++) {
        uint64_t s = (uint64_t)(step * GLOBAL + first + i) * 0x9E3779B97F4A7C15ull + 1;
        y[i] = (int64_t)((step + first + i) % 10);
        for (int p = 0; p < hw * hw; p++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            x[i * hw * hw + p] = (float)((double)(s >> 11) / 9007199254740992.0 - 0.5) + 0.1f * (float)y[i];
        }
    }
}

static uint64_t params_hash(int n, lt_tensor **p) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) {
        size_t nb = (size_t)lt_numel(p[i]) * lt_dtype_size(lt_dtype_of(p[i]));
        unsigned char *b = malloc(nb ? nb : 1);
        if (lt_to_host(p[i], b, nb) == 0)
            for (size_t k = 0; k < nb; k++) h = (h ^ b[k]) * 1099511628211ull;
        free(b);
    }
    return h >> 1; /* as a non-negative int64 */
}

/* Do all ranks hold the same value v? */
static int same_on_all_ranks(int64_t v) {
    lt_tensor *mx = lt_from_data(&v, LT_I64, 0, NULL), *mn = lt_from_data(&v, LT_I64, 0, NULL);
    lt_all_reduce_(mx, LT_REDUCE_MAX);
    lt_all_reduce_(mn, LT_REDUCE_MIN);
    lt_mark_step();
    int same = lt_item(mx) == lt_item(mn);
    lt_free(mx);
    lt_free(mn);
    return same;
}

/* 20 steps of SGD with momentum (Adam's first steps, g / |g|, would turn
 * rounding noise in near-zero gradients into whole steps); dist: this rank's share of each global batch, with the
 * collectives. Fills loss[] (the global batch's mean loss). */
static void train(const char *model, int hw, int dist, double *loss) {
    lt_manual_seed(7);
    lt_model *m = !strcmp(model, "mlp") ? lt_model_mlp(4, (int64_t[]){hw * hw, 64, 32, 10})
                                        : lt_model_new(model, 1, 10);
    lt_tensor **p, **st;
    int np = lt_model_params(m, &p, NULL), ns = lt_model_state(m, &st, NULL);
    lt_optim *o = lt_optim_sgd(np, p, 0.005, 0.9, 0, 1e-4, false);
    int64_t rows = dist ? GLOBAL / W : GLOBAL, first = dist ? R * rows : 0;
    lt_dist_set_sync_bn(dist);
    if (dist) { /* every rank starts from rank 0's parameters and buffers */
        lt_no_grad_begin();
        for (int i = 0; i < ns; i++) lt_broadcast_(st[i], 0);
        lt_no_grad_end();
        lt_mark_step();
    }
    float *xb = malloc(sizeof *xb * (size_t)(rows * hw * hw));
    int64_t *yb = malloc(sizeof *yb * (size_t)rows);
    for (int step = 0; step < STEPS; step++) {
        batch(step, hw, first, rows, xb, yb);
        lt_tensor *x = lt_from_data(xb, LT_F32, 4, (int64_t[]){rows, 1, hw, hw});
        lt_tensor *y = lt_from_data(yb, LT_I64, 1, (int64_t[]){rows});
        lt_tensor *logits = lt_model_forward(m, x), *l = lt_cross_entropy(logits, y, 0.0);
        lt_backward(l);
        if (dist) lt_dist_average_grads(np, p);
        lt_optim_step(o);
        lt_optim_zero_grad(o);
        lt_no_grad_begin();
        lt_tensor *lg = lt_clone(l);
        if (dist) lt_all_reduce_(lg, LT_REDUCE_MEAN);
        lt_no_grad_end();
        lt_mark_step();
        loss[step] = lt_item(lg);
        CHECK_NO_ERR();
        if (dist) CHECK_MSG(same_on_all_ranks((int64_t)params_hash(np, p)), "%s step %d: parameters differ across ranks", model, step);
        lt_free(x), lt_free(y), lt_free(logits), lt_free(l), lt_free(lg);
    }
    lt_dist_set_sync_bn(false);
    free(xb);
    free(yb);
    lt_optim_free(o);
    lt_model_free(m);
}

/* tol_late: the tolerance after the first two steps. ResNet-20 amplifies
 * rounding: its batch-norm sums (a bias gradient sums 2^15 terms that
 * nearly cancel) round differently over 2 x 64 rows than over 128, and the
 * synchronized statistics are formed in float64 from per-rank float32 ones.
 * Measured: within 1e-5 for the first steps, then a drift growing to ~5e-3
 * at step 20 (the same drift appears when both ranks hold the SAME 64 rows
 * against one process with those 64, where every sum is the same up to
 * rounding: sensitivity, not a wrong gradient). The MLP stays within 1e-7. */
static void compare(const char *model, int hw, double tol_late) {
    if (GLOBAL % W) return; /* needs equal shares */
    double ref[STEPS], got[STEPS], worst = 0;
    train(model, hw, 0, ref);
    double c0 = lt_metric("AllReduceCount");
    train(model, hw, 1, got);
    for (int s = 0; s < STEPS; s++) {
        double rel = fabs(got[s] - ref[s]) / fabs(ref[s]), tol = s < 2 ? 1e-5 : tol_late;
        if (rel > worst) worst = rel;
        CHECK_MSG(rel <= tol, "%s: step %d: %d ranks x %d: loss %.9g, 1 x %d: %.9g (rank %d)", model, s, W,
                  GLOBAL / W, got[s], GLOBAL, ref[s], R);
    }
    CHECK(STEPS < 20 || ref[STEPS - 1] < ref[0]); /* it learns (the sanitizers' short run aside) */
    if (W > 1) CHECK(lt_metric("AllReduceCount") > c0);
    if (R == 0)
        printf("  %s: %d x %d reproduces 1 x %d: loss %.6f -> %.6f, largest relative difference %.2g\n", model, W,
               GLOBAL / W, GLOBAL, got[0], got[STEPS - 1], worst);
}

TEST(mlp) { compare("mlp", 28, 1e-5); }
/* Only with several ranks: alone, both runs trace the same graphs. */
TEST(resnet20_sync_bn) {
    if (W > 1) compare("resnet20", RESNET_HW, 1e-2);
}

int main(void) {
    lt_dist_init();
    R = lt_dist_rank();
    W = lt_dist_world_size();
    RUN(mlp);
    RUN(resnet20_sync_bn);
    return h_report();
}
