/* A small model defined on the C API alone: a two-layer MLP learns XOR-like
 * labels of 2-D points with SGD. Build it against an installed lazytensor:
 *
 *     cc tiny_mlp.c $(pkg-config --cflags --libs lazytensor) -o tiny_mlp
 *
 * Prints the loss every 50 steps and "ok" when the model fits the data. */
#include <lazytensor.h>

#include <stdio.h>

#define N 64
#define H 16

int main(void) {
    lt_manual_seed(1);
    float x[N * 2];
    int64_t y[N];
    for (int i = 0; i < N; i++) { /* the four quadrants, labelled by sign(x0 * x1) */
        x[2 * i] = (float)((i & 1) ? 1 : -1) * (0.2f + 0.01f * (float)(i % 7));
        x[2 * i + 1] = (float)((i & 2) ? 1 : -1) * (0.3f + 0.01f * (float)(i % 5));
        y[i] = (x[2 * i] * x[2 * i + 1]) > 0;
    }
    int64_t xs[2] = {N, 2}, ys[1] = {N}, w1s[2] = {H, 2}, b1s[1] = {H}, w2s[2] = {2, H}, b2s[1] = {2};
    lt_tensor *X = lt_from_data(x, LT_F32, 2, xs), *Y = lt_from_data(y, LT_I64, 1, ys);
    lt_tensor *w1 = lt_randn(LT_F32, 2, w1s), *b1 = lt_zeros(LT_F32, 1, b1s);
    lt_tensor *w2 = lt_randn(LT_F32, 2, w2s), *b2 = lt_zeros(LT_F32, 1, b2s);
    lt_tensor *params[4] = {w1, b1, w2, b2};
    for (int i = 0; i < 4; i++) lt_set_requires_grad(params[i], true);
    lt_optim *opt = lt_optim_sgd(4, params, 0.5, 0.9, 0, 0, false);
    double loss_v = 0;
    for (int step = 0; step < 300; step++) {
        lt_tensor *h = lt_linear(X, w1, b1), *a = lt_relu(h), *logits = lt_linear(a, w2, b2);
        lt_tensor *loss = lt_cross_entropy(logits, Y, 0.0);
        lt_backward(loss);
        lt_optim_step(opt);
        lt_optim_zero_grad(opt);
        lt_mark_step(); /* forward, backward and update run as one compiled graph */
        loss_v = lt_item(loss);
        if (step % 50 == 0) printf("step %3d  loss %.4f\n", step, loss_v);
        lt_free(h), lt_free(a), lt_free(logits), lt_free(loss);
    }
    if (lt_error()) {
        fprintf(stderr, "error: %s\n", lt_error_message());
        return 1;
    }
    printf("final loss %.4f, %g compiles\n", loss_v, lt_metric("UncachedCompile"));
    lt_optim_free(opt);
    for (int i = 0; i < 4; i++) lt_free(params[i]);
    lt_free(X), lt_free(Y);
    puts(loss_v < 0.1 ? "ok" : "did not fit");
    return loss_v < 0.1 ? 0 : 1;
}
