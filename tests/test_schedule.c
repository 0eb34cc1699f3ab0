/* Kernels run in program order (src/exec/schedule.c): the order is a
 * topological order of the live nodes whatever the creation order says,
 * follows creation order where it can, and a training step's memory plan
 * then holds the saved activations and about one gradient at a time rather
 * than the whole chain of input gradients a post-order from the roots
 * computes before the first weight gradient. */
#include "harness.h"

#include "exec/passes.h"

/* A random DAG over n nodes (operands precede users), everything live. */
static exec_graph *random_dag(int n, unsigned *rs) {
    exec_graph *g = calloc(1, sizeof *g);
    g->n = n;
    g->nodes = calloc((size_t)n, sizeof *g->nodes);
    g->in_pool = calloc((size_t)n * 3 + 1, sizeof *g->in_pool);
    int32_t *pin = g->in_pool;
    for (int k = 0; k < n; k++) {
        gnode *y = &g->nodes[k];
        y->in = pin;
        y->nin = k == 0 ? 0 : (uint16_t)(rand_r(rs) % 4);
        for (int i = 0; i < y->nin; i++) *pin++ = rand_r(rs) % k; /* duplicates allowed: a + a */
    }
    return g;
}

static void free_dag(exec_graph *g) {
    free(g->nodes);
    free(g->in_pool);
    free(g);
}

TEST(program_order_is_topological_and_follows_seq) {
    unsigned rs = 7;
    for (int trial = 0; trial < 300; trial++) {
        int n = 1 + (int)((unsigned)rand_r(&rs) % 200u);
        exec_graph *g = random_dag(n, &rs);
        uint8_t *live = malloc((size_t)n);
        int32_t *seq = malloc((size_t)n * 4), *order = malloc((size_t)n * 4), *pos = malloc((size_t)n * 4);
        int consistent = trial % 2; /* seqs that agree with the edges, or arbitrary ones (ties included) */
        int nlive = 0;
        memset(live, 0, (size_t)n);
        live[n - 1] = 1; /* the root; its operands are live too */
        for (int k = n - 1; k >= 0; k--)
            if (live[k]) {
                nlive++;
                for (int i = 0; i < g->nodes[k].nin; i++) live[g->nodes[k].in[i]] = 1;
            }
        for (int k = 0; k < n; k++) seq[k] = consistent ? 4 * k + (int32_t)(rand_r(&rs) % 3) : rand_r(&rs) % 20;
        CHECK(exec_program_order(g, g->in_pool, live, seq, order) == nlive);
        for (int k = 0; k < n; k++) pos[k] = -1;
        for (int j = 0; j < nlive; j++) {
            CHECK(live[order[j]] && pos[order[j]] < 0);
            pos[order[j]] = j;
        }
        for (int k = 0; k < n; k++)
            for (int i = 0; live[k] && i < g->nodes[k].nin; i++) CHECK(pos[g->nodes[k].in[i]] < pos[k]);
        for (int j = 1; consistent && j < nlive; j++) CHECK(seq[order[j - 1]] < seq[order[j]]);
        free(live);
        free(seq);
        free(order);
        free(pos);
        free_dag(g);
    }
}

/* One SGD step of a deep ReLU MLP (batch 512, width 128: an activation is 32
 * times a weight). Program order keeps the forward's saved values plus a few
 * gradients: measured 1.67 activations a layer; the post-order from the
 * roots needed 2.60. */
TEST(training_step_peak_follows_program_order) {
    enum { L = 24, B = 512, W = 128 };
    int64_t xs[2] = {B, W}, ws[2] = {W, W};
    lt_manual_seed(3);
    lt_tensor *w[L];
    for (int i = 0; i < L; i++) {
        lt_tensor *r = lt_randn(LT_F32, 2, ws);
        w[i] = lt_mul_scalar(r, 0.08);
        lt_free(r);
        lt_set_requires_grad(w[i], true);
    }
    lt_tensor *x = lt_randn(LT_F32, 2, xs);
    lt_optim *opt = lt_optim_sgd(L, w, 0.01, 0.0, 0.0, 0.0, false);
    lt_mark_step();
    double act = (double)B * W * 4;
    for (int step = 0; step < 2; step++) {
        lt_metrics_reset();
        lt_tensor *h = lt_relu(x);
        for (int i = 0; i < L; i++) {
            lt_tensor *z = lt_matmul(h, w[i]);
            lt_free(h);
            h = lt_relu(z);
            lt_free(z);
        }
        lt_tensor *loss = lt_mean(h, 0, NULL, false);
        lt_free(h);
        CHECK(lt_backward(loss) == 0);
        CHECK(lt_optim_step(opt) == 0);
        lt_optim_zero_grad(opt);
        lt_mark_step();
        lt_free(loss);
        CHECK_NO_ERR();
        double per_layer = lt_metric("PeakBytes") / act / L;
        CHECK_MSG(per_layer < 2.1, "step %d: peak %.2f activations a layer", step, per_layer);
        if (getenv("LT_TEST_VERBOSE")) printf("peak %.2f activations a layer\n", per_layer);
    }
    for (int i = 0; i < L; i++) lt_free(w[i]);
    lt_free(x);
    lt_optim_free(opt);
}

int main(void) {
    RUN(program_order_is_topological_and_follows_seq);
    RUN(training_step_peak_follows_program_order);
    return h_report();
}
