/* Autograd trace overhead: ns per traced forward op with grad off (no input
 * requires grad), with grad on (each op records a fn and its saved values),
 * and ns per forward op for lt_backward to trace the backward. No sync in
 * the timed regions; the median of REPS repetitions is printed.
 *   chain: y = tanh(y * w + b) repeated, on (16, 16) float32 tensors. */
#include "lazytensor.h"

#include "bench_time.h"

#include <stdio.h>
#include <stdlib.h>

#define LAYERS 300 /* 3 ops each */
#define REPS 21

/* Returns the median forward ns/op; *bw gets the median backward ns per forward op. */
static double run(int grad, double *bw) {
    int64_t s[2] = {16, 16};
    double tf[REPS], tb[REPS];
    static lt_tensor *keep[3 * LAYERS];
    for (int r = 0; r < REPS; r++) {
        lt_tensor *x = lt_randn(LT_F32, 2, s), *w = lt_randn(LT_F32, 2, s), *b = lt_randn(LT_F32, 2, s);
        lt_set_requires_grad(w, grad);
        lt_set_requires_grad(b, grad);
        double t0 = bench_now_ns();
        lt_tensor *y = x;
        for (int i = 0; i < LAYERS; i++) {
            keep[3 * i] = lt_mul(y, w);
            keep[3 * i + 1] = lt_add(keep[3 * i], b);
            keep[3 * i + 2] = y = lt_tanh(keep[3 * i + 1]);
        }
        lt_tensor *loss = lt_sum(y, 0, NULL, false);
        double t1 = bench_now_ns();
        if (grad && lt_backward(loss)) {
            fprintf(stderr, "backward: %s\n", lt_error_message());
            exit(1);
        }
        double t2 = bench_now_ns();
        tf[r] = (t1 - t0) / (3 * LAYERS + 1);
        tb[r] = (t2 - t1) / (3 * LAYERS + 1);
        for (int i = 0; i < 3 * LAYERS; i++) lt_free(keep[i]);
        lt_free(loss);
        lt_free(x);
        lt_free(w);
        lt_free(b);
        lt_mark_step(); /* only the leaves' grads died with them: resets the arena */
    }
    *bw = bench_median(tb, REPS);
    return bench_median(tf, REPS);
}

int main(void) {
    double bw0, bw1;
    double off = run(0, &bw0);
    double on = run(1, &bw1);
    printf("forward ns/op, grad off: %.1f\n", off);
    printf("forward ns/op, grad on:  %.1f  (autograd overhead %.1f ns/op)\n", on, on - off);
    printf("backward trace ns per forward op: %.1f\n", bw1);
    return 0;
}
