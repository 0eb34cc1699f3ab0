/* ZeRO-1 (lt_dist_set_shard_optimizer) against unsharded data
 * parallelism: the same ranks, seed and batches, once with the gradients
 * all-reduced and every rank's optimizer updating every parameter, once
 * with the optimizer sharded (reduce-scatter, update of this rank's chunk,
 * all-gather). For an MLP with SGD + momentum, Adam and AdamW, and a small
 * GPT with AdamW and gradient clipping (lt_optim_set_max_grad_norm):
 *   - the parameters after one step equal the unsharded ones to 1e-6 of
 *     each parameter's largest magnitude,
 *   - the loss of 20 steps stays within 1e-5 relative (test_dist_train's
 *     bound for N ranks against one process: sums in another order),
 *   - each rank's optimizer state is at most 1/N + 5% of the unsharded,
 *   - lt_optim_state gives the whole state (the unsharded run's, to the
 *     same bound), and loading it into a sharded optimizer keeps each
 *     rank's chunk (the same whole state comes back).
 * CTest runs it alone (a world of one: sharding does nothing, both runs
 * trace the same graphs) and under `mpirun -np 2` and `-np 3`. */
#include "harness.h"

#include <stdint.h>

enum { STEPS = 20, ROWS = 4, MLP_IN = 12, T = 8, VOCAB = 16 };
static int R, W;

typedef struct run {
    double loss[STEPS];
    double *p1;         /* every parameter after the first step, one after the other */
    int64_t n1;
    size_t state_bytes; /* this rank's optimizer state */
    double *state;      /* the whole state after the last step (lt_optim_state) */
    int64_t nstate;
} run;

static lt_model *make(const char *model) {
    lt_manual_seed(3);
    if (!strcmp(model, "mlp")) return lt_model_mlp(3, (int64_t[]){MLP_IN, 24, 10});
    lt_gpt_config c = {.n_layer = 2, .n_head = 2, .n_embd = 16, .block_size = T, .vocab_size = VOCAB};
    return lt_model_gpt(&c);
}

/* This rank's rows of step s's global batch: the loss of the model on them. */
static lt_tensor *loss_of(const char *model, lt_model *m, int s) {
    int64_t first = (int64_t)R * ROWS;
    if (!strcmp(model, "mlp")) {
        float x[ROWS * MLP_IN];
        int64_t y[ROWS];
        for (int i = 0; i < ROWS; i++) {
            y[i] = (s * 3 + first + i) % 10;
            for (int j = 0; j < MLP_IN; j++)
                x[i * MLP_IN + j] = (float)sin(0.7 * (double)(s * 131 + (first + i) * 17 + j)) + 2.0f * (j == y[i]);
        }
        lt_tensor *xt = lt_from_data(x, LT_F32, 2, (int64_t[]){ROWS, MLP_IN});
        lt_tensor *yt = lt_from_data(y, LT_I64, 1, (int64_t[]){ROWS});
        lt_tensor *lg = lt_model_forward(m, xt), *l = lt_cross_entropy(lg, yt, 0.0);
        lt_free(xt), lt_free(yt), lt_free(lg);
        return l;
    }
    int64_t x[ROWS * T], y[ROWS * T];
    for (int i = 0; i < ROWS * T; i++) {
        int64_t k = s * 977 + first * T + i;
        x[i] = (k * 7 + k / 5) % VOCAB;
        y[i] = (x[i] * 3 + 1) % VOCAB; /* learnable: a function of the current token */
    }
    lt_tensor *xt = lt_from_data(x, LT_I64, 2, (int64_t[]){ROWS, T});
    lt_tensor *yt = lt_from_data(y, LT_I64, 1, (int64_t[]){ROWS * T});
    lt_tensor *lg = lt_model_forward(m, xt), *flat = lt_reshape(lg, 2, (int64_t[]){-1, VOCAB});
    lt_tensor *l = lt_cross_entropy(flat, yt, 0.0);
    lt_free(xt), lt_free(yt), lt_free(lg), lt_free(flat);
    return l;
}

static lt_optim *make_optim(const char *opt, int np, lt_tensor **p) {
    if (!strcmp(opt, "sgd")) return lt_optim_sgd(np, p, 0.05, 0.9, 0, 1e-4, false);
    if (!strcmp(opt, "adam")) return lt_optim_adam(np, p, 1e-2, 0.9, 0.999, 1e-8, 1e-4, false);
    return lt_optim_adamw(np, p, 1e-2, 0.9, 0.999, 1e-8, 0.01, false);
}

/* Copies n tensors' values one after the other into a new array. */
static double *read_all(int n, lt_tensor **t, int64_t *count) {
    *count = 0;
    for (int i = 0; i < n; i++) *count += lt_numel(t[i]);
    double *all = malloc(sizeof *all * (size_t)(*count + 1));
    for (int i = 0, k = 0; i < n; k += (int)lt_numel(t[i++])) {
        double *v = h_read(t[i]);
        memcpy(all + k, v, sizeof *v * (size_t)lt_numel(t[i]));
        free(v);
    }
    return all;
}

static void train(const char *model, const char *opt, bool shard, run *out) {
    lt_dist_set_shard_optimizer(shard);
    lt_model *m = make(model);
    lt_tensor **p;
    int np = lt_model_params(m, &p, NULL);
    lt_optim *o = make_optim(opt, np, p);
    bool gpt = strcmp(model, "mlp") != 0;
    if (gpt) lt_optim_set_max_grad_norm(o, 0.5); /* small enough to clip */
    for (int s = 0; s < STEPS; s++) {
        lt_tensor *l = loss_of(model, m, s);
        lt_backward(l);
        lt_dist_average_grads(np, p); /* sharded: nothing, the step averages */
        lt_optim_step(o);
        lt_optim_zero_grad(o);
        lt_no_grad_begin();
        lt_tensor *lg = lt_clone(l);
        lt_all_reduce_(lg, LT_REDUCE_MEAN);
        lt_no_grad_end();
        lt_mark_step();
        out->loss[s] = lt_item(lg);
        CHECK_NO_ERR();
        if (s == 0) out->p1 = read_all(np, p, &out->n1);
        lt_free(l), lt_free(lg);
    }
    out->state_bytes = lt_optim_state_bytes(o);
    int ns = lt_optim_state(o, 0, NULL, NULL);
    const char **names = malloc(sizeof *names * (size_t)(ns + 1));
    lt_tensor **st = malloc(sizeof *st * (size_t)(ns + 1));
    CHECK(lt_optim_state(o, ns, names, st) == ns); /* sharded: every rank calls it */
    out->state = read_all(ns, st, &out->nstate);
    if (shard) { /* into a fresh sharded optimizer, and back out: the same whole state */
        lt_optim *o2 = make_optim(opt, np, p);
        CHECK(lt_optim_load_state(o2, ns, names, st) == 0);
        lt_mark_step();
        CHECK(lt_optim_state(o2, ns, names, st) == ns);
        int64_t n2;
        double *again = read_all(ns, st, &n2);
        CHECK_MSG(n2 == out->nstate && !memcmp(again, out->state, sizeof *again * (size_t)n2),
                  "%s %s: the state loaded into a sharded optimizer differs (rank %d of %d)", model, opt, R, W);
        free(again);
        lt_optim_free(o2);
    }
    CHECK_NO_ERR();
    free(names), free(st);
    lt_optim_free(o);
    lt_model_free(m);
    lt_dist_set_shard_optimizer(false);
}

/* Largest over consecutive blocks of len[0..n) elements of max|b - a| / max|a|. */
static double block_diff(int n, const int64_t *len, const double *a, const double *b) {
    double worst = 0;
    for (int i = 0, k = 0; i < n; k += (int)len[i++]) {
        double big = 0, diff = 0;
        for (int64_t e = k; e < k + len[i]; e++) {
            big = fmax(big, fabs(a[e]));
            diff = b[e] == b[e] ? fmax(diff, fabs(b[e] - a[e])) : HUGE_VAL;
        }
        worst = fmax(worst, big > 0 ? diff / big : diff);
    }
    return worst;
}

static void compare(const char *model, const char *opt) {
    run a = {0}, b = {0};
    train(model, opt, false, &a);
    train(model, opt, true, &b);
    lt_model *m = make(model); /* the parameters' sizes */
    lt_tensor **p;
    int np = lt_model_params(m, &p, NULL), nslots = 0;
    int64_t *len = malloc(sizeof *len * (size_t)np * 3);
    for (int i = 0; i < np; i++) len[i] = lt_numel(p[i]);
    CHECK(a.n1 == b.n1 && a.nstate == b.nstate);
    double d1 = a.n1 == b.n1 ? block_diff(np, len, a.p1, b.p1) : HUGE_VAL, drift = 0, sd = HUGE_VAL;
    CHECK_MSG(d1 <= 1e-6, "%s %s: after one step the sharded parameters differ by %.3g of their largest magnitude "
                          "(rank %d of %d)", model, opt, d1, R, W);
    for (int s = 0; s < STEPS; s++) drift = fmax(drift, fabs(b.loss[s] - a.loss[s]) / fabs(a.loss[s]));
    CHECK_MSG(drift <= 1e-5, "%s %s: over %d steps the sharded loss drifts %.3g (rank %d of %d)", model, opt, STEPS,
              drift, R, W);
    CHECK(a.loss[STEPS - 1] < a.loss[0]); /* it learns */
    double ratio = (double)b.state_bytes / (double)a.state_bytes;
    CHECK_MSG(ratio <= 1.0 / W + 0.05, "%s %s: optimizer state %zu bytes per rank sharded, %zu unsharded (%.3f)", model,
              opt, b.state_bytes, a.state_bytes, ratio);
    /* The whole state, as the unsharded optimizer has it: per parameter, each slot's tensor (state.c's order). */
    nslots = a.n1 ? (int)(a.nstate / a.n1) : 0;
    for (int i = 0, k = 0; i < np; i++)
        for (int j = 0; j < nslots; j++) len[k++] = lt_numel(p[i]);
    if (a.nstate == b.nstate) sd = block_diff(np * nslots, len, a.state, b.state);
    CHECK_MSG(sd <= 1e-5, "%s %s: the gathered state differs from the unsharded by %.3g of a tensor's largest "
                          "magnitude (rank %d of %d)", model, opt, sd, R, W);
    free(len);
    if (R == 0)
        printf("  %s %s: %d ranks: parameters after 1 step within %.2g, loss %.5f -> %.5f drifts %.2g over %d steps, "
               "state %zu -> %zu bytes per rank (%.3f), gathered state within %.2g\n",
               model, opt, W, d1, a.loss[0], a.loss[STEPS - 1], drift, STEPS, a.state_bytes, b.state_bytes, ratio, sd);
    free(a.p1), free(b.p1), free(a.state), free(b.state);
    lt_model_free(m);
}

TEST(mlp_sgd) { compare("mlp", "sgd"); }
TEST(mlp_adam) { compare("mlp", "adam"); }
TEST(mlp_adamw) { compare("mlp", "adamw"); }
TEST(gpt_adamw_clipped) { compare("gpt", "adamw"); }

int main(void) {
    lt_dist_init();
    R = lt_dist_rank();
    W = lt_dist_world_size();
    RUN(mlp_sgd);
    RUN(mlp_adam);
    RUN(mlp_adamw);
    RUN(gpt_adamw_clipped);
    return h_report();
}
