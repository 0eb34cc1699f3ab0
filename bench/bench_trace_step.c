/* Time to TRACE one training step (forward, cross-entropy, backward, AdamW
 * step), no execution inside the timed region: the issue-4 budget is 1 ms
 * for ResNet-50 and 0.5 ms for ResNet-18 (PyTorch's lazy tensor core: 30.6
 * and 15.6 ms, bench/pytorch/train_bench.py). Each repetition is then
 * synced (untimed) so the next one starts from materialized parameters.
 * Sizes follow the anchor: 1000 classes, 64x64 images, batch 2 (ResNet-50)
 * or 8 (ResNet-18); tracing cost does not depend on them.
 *   bench_trace_step [model] [reps]      defaults: resnet50 and resnet18, 7 */
#include "lazytensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_time.h"

static int run(const char *name, int reps) {
    lt_manual_seed(0);
    lt_model *m = lt_model_new(name, 3, 1000);
    lt_tensor **params;
    const char **names;
    int np = lt_model_params(m, &params, &names);
    lt_optim *opt = lt_optim_adamw(np, params, 1e-3, 0.9, 0.999, 1e-8, 1e-2, false);
    int64_t bs = strcmp(name, "resnet50") ? 8 : 2;
    int64_t xs[4] = {bs, 3, 64, 64}, ys[1] = {bs};
    int64_t labels[8] = {1, 7, 42, 999, 0, 3, 500, 12};
    double *t = malloc(sizeof(double) * (size_t)reps);
    int ops = 0;
    for (int r = 0; r < reps; r++) {
        lt_tensor *x = lt_randn(LT_F32, 4, xs), *y = lt_from_data(labels, LT_I64, 1, ys);
        lt_mark_step();
        double ops0 = lt_metric("OpsTraced");
        double t0 = bench_now_ns();
        lt_tensor *logits = lt_model_forward(m, x);
        lt_tensor *loss = lt_cross_entropy(logits, y, 0.0);
        lt_backward(loss);
        lt_optim_step(opt);
        lt_optim_zero_grad(opt);
        t[r] = (bench_now_ns() - t0) * 1e-6; /* ms */
        ops = (int)(lt_metric("OpsTraced") - ops0);
        lt_free(logits);
        lt_free(loss);
        lt_free(x);
        lt_free(y);
        lt_mark_step();
    }
    if (lt_error()) {
        fprintf(stderr, "bench_trace_step: %s\n", lt_error_message());
        return 1;
    }
    double med = bench_median(t, reps);
    printf("%-9s %4d params  %5d ops traced  trace %.3f ms (median of %d, min %.3f)\n", name, np, ops, med,
           reps, t[0]);
    free(t);
    lt_optim_free(opt);
    lt_model_free(m);
    return 0;
}

int main(int argc, char **argv) {
    int reps = argc > 2 ? atoi(argv[2]) : 7;
    if (reps < 1) reps = 1;
    if (argc > 1) return run(argv[1], reps);
    return run("resnet50", reps) | run("resnet18", reps);
}
