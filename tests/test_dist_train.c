/* Data-parallel training (DESIGN 12): W ranks x batch 128/W reproduce one
 * process x batch 128. Every rank first trains the reference alone (no
 * collective: a world-of-one graph), then the distributed run from the
 * same seed: each rank takes its rows of the same global batch, parameters
 * broadcast from rank 0, gradients averaged (lt_dist_average_grads), the
 * loss averaged over the ranks, batch norm synchronized
 * (lt_dist_set_sync_bn). Checked at every step: the loss against the
 * reference's (1e-5 relative for the MLP and, in float64, a conv + batch
 * norm net; ResNet-20 in float32: see resnet20_sync_bn), and the
 * parameters and buffers bitwise identical on all ranks (a hash of their
 * bytes, all-reduced with MAX and MIN). CTest runs it alone and under
 * `mpirun -np 2`; tests/cluster/ runs it again across two network
 * namespaces (TCP between "hosts"). */
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

/* The global batch of a step: images of one channel, labels 0..9; rows
 * first.. of it, or (reversed) the same rows in reverse order. */
static void batch(int step, int hw, int64_t first, int64_t rows, bool reversed, float *x, int64_t *y) {
    for (int64_t i = 0; i < rows; i++) {
        int64_t r = first + (reversed ? rows - 1 - i : i);
        uint64_t s = (uint64_t)(step * GLOBAL + r) * 0x9E3779B97F4A7C15ull + 1;
        y[i] = (int64_t)((step + r) % 10);
        for (int p = 0; p < hw * hw; p++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            x[i * hw * hw + p] = (float)((double)(s >> 11) / 9007199254740992.0 - 0.5) + 0.1f * (float)y[i];
        }
    }
}

static uint64_t state_hash(int n, lt_tensor **p) {
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

/* What trains: an lt_model (the float32 MLP and ResNet-20), or (m NULL)
 * "convbn64", a float64 net of the batch-norm path: conv 3x3 (1 -> 8), BN,
 * ReLU, conv 3x3 stride 2 (8 -> 16), BN, ReLU, mean over space, linear
 * (16 -> 10). In float64 rounding cannot grow to 1e-5 in 20 steps, so it
 * checks that the synchronized statistics, backward and running-stat
 * update are the single process's math. */
typedef struct net {
    lt_model *m;
    lt_tensor *t[12]; /* convbn64: 8 parameters, then the running mean and variance of both BNs */
    lt_tensor **p, **st;
    int np, ns;
} net;

static void net_init(net *n, const char *model, int hw) {
    memset(n, 0, sizeof *n);
    lt_manual_seed(7);
    if (strcmp(model, "convbn64")) {
        n->m = !strcmp(model, "mlp") ? lt_model_mlp(4, (int64_t[]){hw * hw, 64, 32, 10}) : lt_model_new(model, 1, 10);
        n->np = lt_model_params(n->m, &n->p, NULL), n->ns = lt_model_state(n->m, &n->st, NULL);
        return;
    }
    static const int64_t shape[12][4] = {{8, 1, 3, 3}, {8}, {8}, {16, 8, 3, 3}, {16}, {16}, {10, 16}, {10},
                                         {8}, {8}, {16}, {16}};
    static const int nd[12] = {4, 1, 1, 4, 1, 1, 2, 1, 1, 1, 1, 1};
    /* value = shift + scale * N(0, 1): BN weights near 1, running variances 1 */
    static const double scale[12] = {0.3, 0.1, 0.1, 0.1, 0.1, 0.1, 0.25, 0.1};
    static const double shift[12] = {0, 1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1};
    for (int i = 0; i < 12; i++) {
        lt_tensor *r = lt_randn(LT_F64, nd[i], shape[i]), *v = lt_mul_scalar(r, scale[i]);
        n->t[i] = lt_add_scalar(v, shift[i]);
        lt_free(r), lt_free(v);
        if (i < 8) lt_set_requires_grad(n->t[i], true);
    }
    n->p = n->st = n->t, n->np = 8, n->ns = 12;
}

static lt_tensor *net_forward(net *n, lt_tensor *x) {
    if (n->m) return lt_model_forward(n->m, x);
    lt_tensor **t = n->t;
    int64_t one[2] = {1, 1}, two[2] = {2, 2};
    lt_scope_begin();
    lt_tensor *h = lt_conv2d(lt_to_dtype(x, LT_F64), t[0], NULL, one, one, one, 1);
    h = lt_relu(lt_batch_norm(h, t[1], t[2], t[8], t[9], true, 0.1, 1e-5));
    h = lt_relu(lt_batch_norm(lt_conv2d(h, t[3], NULL, two, one, one, 1), t[4], t[5], t[10], t[11], true, 0.1, 1e-5));
    h = lt_reshape(lt_adaptive_avg_pool2d(h, one), 2, (int64_t[]){lt_shape(x)[0], 16});
    lt_tensor *out = lt_scope_keep(lt_linear(h, t[6], t[7]));
    lt_scope_end();
    return out;
}

static void net_free(net *n) {
    if (n->m) lt_model_free(n->m);
    else
        for (int i = 0; i < 12; i++) lt_free(n->t[i]);
}

/* How a run reads each global batch: all of it in one process (ONE, or
 * REVERSED: its rows in reverse order, the same math summed in another
 * order), or this rank's share with the collectives (DIST). */
enum run_kind { ONE, REVERSED, DIST };

/* 20 steps of SGD with momentum (Adam's first steps, g / |g|, would turn
 * rounding noise in near-zero gradients into whole steps). Fills loss[]
 * (the global batch's mean loss), for the float64 net run[] with its 48
 * running statistics at the end, and (g0 not NULL) g0 with the first
 * step's gradients (averaged over the ranks), parameter after parameter,
 * as doubles; *ng0 their count. */
static void train(const char *model, int hw, enum run_kind kind, double *loss, double *run, double **g0, int64_t *ng0) {
    int dist = kind == DIST;
    net n;
    net_init(&n, model, hw);
    lt_optim *o = lt_optim_sgd(n.np, n.p, 0.005, 0.9, 0, 1e-4, false);
    int64_t rows = dist ? GLOBAL / W : GLOBAL, first = dist ? R * rows : 0;
    lt_dist_set_sync_bn(dist);
    if (dist) { /* every rank starts from rank 0's parameters and buffers */
        lt_no_grad_begin();
        for (int i = 0; i < n.ns; i++) lt_broadcast_(n.st[i], 0);
        lt_no_grad_end();
        lt_mark_step();
    }
    float *xb = malloc(sizeof *xb * (size_t)(rows * hw * hw));
    int64_t *yb = malloc(sizeof *yb * (size_t)rows);
    for (int step = 0; step < STEPS; step++) {
        batch(step, hw, first, rows, kind == REVERSED, xb, yb);
        lt_tensor *x = lt_from_data(xb, LT_F32, 4, (int64_t[]){rows, 1, hw, hw});
        lt_tensor *y = lt_from_data(yb, LT_I64, 1, (int64_t[]){rows});
        lt_tensor *logits = net_forward(&n, x), *l = lt_cross_entropy(logits, y, 0.0);
        lt_backward(l);
        if (dist) lt_dist_average_grads(n.np, n.p);
        if (g0 && step == 0) { /* a sync of its own: the same math, split in two graphs */
            *ng0 = 0;
            for (int i = 0; i < n.np; i++) *ng0 += lt_numel(n.p[i]);
            *g0 = malloc(sizeof **g0 * (size_t)*ng0);
            for (int i = 0, k = 0; i < n.np; k += (int)lt_numel(n.p[i++])) {
                double *g = h_read(lt_grad(n.p[i]));
                memcpy(*g0 + k, g, sizeof *g * (size_t)lt_numel(n.p[i]));
                free(g);
            }
        }
        lt_optim_step(o);
        lt_optim_zero_grad(o);
        lt_no_grad_begin();
        lt_tensor *lg = lt_clone(l);
        if (dist) lt_all_reduce_(lg, LT_REDUCE_MEAN);
        lt_no_grad_end();
        lt_mark_step();
        loss[step] = lt_item(lg);
        CHECK_NO_ERR();
        if (dist) /* parameters and buffers (batch norm's running statistics) */
            CHECK_MSG(same_on_all_ranks((int64_t)state_hash(n.ns, n.st)),
                      "%s step %d: parameters or buffers differ across ranks", model, step);
        lt_free(x), lt_free(y), lt_free(logits), lt_free(l), lt_free(lg);
    }
    for (int i = 8, k = 0; !n.m && i < 12; k += (int)lt_numel(n.t[i++]))
        CHECK(!lt_to_host(n.t[i], run + k, sizeof *run * (size_t)lt_numel(n.t[i])));
    lt_dist_set_sync_bn(false);
    free(xb);
    free(yb);
    lt_optim_free(o);
    net_free(&n);
}

/* Loss of N ranks against one process (ref[], filled), step by step,
 * relative: tol for the first `exact` steps, tol_late after them (NaN
 * fails either). g (not NULL): g[0], g[1] get the first step's gradients
 * of the one process and of the ranks (train's g0), *ng their count.
 * Returns the largest relative difference. */
static double compare(const char *model, int hw, int exact, double tol, double tol_late, double *ref, double **g,
                      int64_t *ng) {
    if (GLOBAL % W) return 0; /* needs equal shares */
    double got[STEPS], rref[48], rgot[48], worst = 0;
    train(model, hw, ONE, ref, rref, g ? &g[0] : NULL, ng);
    double c0 = lt_metric("AllReduceCount");
    train(model, hw, DIST, got, rgot, g ? &g[1] : NULL, ng);
    for (int s = 0; s < STEPS; s++) {
        double rel = fabs(got[s] - ref[s]) / fabs(ref[s]);
        if (rel > worst) worst = rel;
        CHECK_MSG(rel <= (s < exact ? tol : tol_late), "%s: step %d: %d ranks x %d: loss %.9g, 1 x %d: %.9g (rank %d)",
                  model, s, W, GLOBAL / W, got[s], GLOBAL, ref[s], R);
    }
    if (!strcmp(model, "convbn64"))
        for (int i = 0; i < 48; i++)
            CHECK_MSG(fabs(rgot[i] - rref[i]) <= tol * fabs(rref[i]), "%s: running statistic %d: %.17g vs %.17g",
                      model, i, rgot[i], rref[i]);
    CHECK(STEPS < 20 || ref[STEPS - 1] < ref[0]); /* it learns (the sanitizers' short run aside) */
    if (W > 1) CHECK(lt_metric("AllReduceCount") > c0);
    if (R == 0)
        printf("  %s: %d x %d reproduces 1 x %d: loss %.6f -> %.6f, largest relative difference %.2g\n", model, W,
               GLOBAL / W, GLOBAL, got[0], got[STEPS - 1], worst);
    return worst;
}

TEST(mlp) {
    double ref[STEPS];
    compare("mlp", 28, STEPS, 1e-5, 0, ref, NULL, NULL);
}

/* Synchronized batch norm (only with several ranks: alone, both runs trace
 * the same graphs). The float64 net checks the math over every step: the
 * global batch's statistics, the backward through them and the running
 * statistics are the single process's (measured: 1e-15 relative). */
TEST(convbn64_sync_bn) {
    double ref[STEPS];
    if (W > 1) compare("convbn64", 8, STEPS, 1e-10, 0, ref, NULL, NULL);
}

/* ResNet-20 in float32: checked where float32 rounding bounds the
 * difference, not where luck does. This recipe amplifies rounding
 * differences ~1.7x per step, so after a few steps any other summation
 * tree (N ranks' partial sums added together, or one process fed the same
 * rows in reverse order) drifts by an amount that depends on which
 * roundings happen to cancel: in the Release build the reversed process
 * drifted ~1e-3 by step 20 and 2 ranks ~9e-3; built RelWithDebInfo with
 * the sanitizers and oneDNN the reversed process reproduced the in-order
 * run almost bit for bit while 2 ranks drifted 2e-3, so "no more drift
 * than a reordering" failed by chance. Checked instead: the first step's
 * loss to 1e-5 relative, and its gradients (averaged over the ranks),
 * each parameter's to GRAD_TOL of its largest magnitude. Measured on the
 * first step (Release, oneDNN, 2 ranks): a reordering alone 6e-6; the
 * synchronized backward, which recomputes xhat and 1/sqrt(var + eps)
 * elementwise in float32 where the single process's fused kernel does not,
 * 1.1e-3; batch norm with each rank's own statistics (the bug this guards
 * against) 0.77, and its first loss 6.5e-4 off. The 20 steps' drift is
 * printed, not bounded; the float64 net above checks the same math over
 * all 20 steps to 1e-10. */
#define GRAD_TOL 1e-2
/* Largest over the parameters of max|b - a| / max|a| (NaN in b: infinity). */
static double grad_diff(int np, lt_tensor **p, const double *a, const double *b, int *which) {
    double worst = 0;
    for (int i = 0, k = 0; i < np; k += (int)lt_numel(p[i++])) {
        double big = 0, diff = 0;
        for (int64_t e = k; e < k + lt_numel(p[i]); e++) {
            big = fmax(big, fabs(a[e]));
            diff = b[e] == b[e] ? fmax(diff, fabs(b[e] - a[e])) : HUGE_VAL;
        }
        double rel = big > 0 ? diff / big : diff;
        if (rel > worst) worst = rel, *which = i;
    }
    return worst;
}

TEST(resnet20_sync_bn) {
    if (W == 1) return;
    double ref[STEPS], *g[3] = {NULL, NULL, NULL};
    int64_t ng = 0;
    double worst = compare("resnet20", RESNET_HW, 1, 1e-5, HUGE_VAL, ref, g, &ng);
    if (!g[0] || !g[1]) return; /* GLOBAL % W: not run */
    lt_model *m = lt_model_new("resnet20", 1, 10); /* the parameters' sizes */
    lt_tensor **p;
    int np = lt_model_params(m, &p, NULL), at = -1;
    double gworst = grad_diff(np, p, g[0], g[1], &at);
    CHECK_MSG(gworst <= GRAD_TOL, "resnet20 step 0: parameter %d's gradient: %d ranks differ from 1 process by %.3g of "
                                  "its largest magnitude (bound %.0e; rank %d)", at, W, gworst, GRAD_TOL, R);
    if (R == 0) {
        double rev[STEPS], reorder = 0, greorder;
        train("resnet20", RESNET_HW, REVERSED, rev, NULL, &g[2], &ng);
        greorder = grad_diff(np, p, g[0], g[2], &at);
        for (int s = 0; s < STEPS; s++) reorder = fmax(reorder, fabs(rev[s] - ref[s]) / fabs(ref[s]));
        printf("  resnet20: first step's gradients: %d ranks within %.2g of their largest magnitude (bound %.0e), one "
               "process with rows reversed %.2g; over %d steps the loss drifts %.2g and %.2g (not bounded)\n",
               W, gworst, GRAD_TOL, greorder, STEPS, worst, reorder);
    }
    lt_model_free(m);
    free(g[0]), free(g[1]), free(g[2]);
}

int main(void) {
    lt_dist_init();
    R = lt_dist_rank();
    W = lt_dist_world_size();
    RUN(mlp);
    RUN(convbn64_sync_bn);
    RUN(resnet20_sync_bn);
    return h_report();
}
