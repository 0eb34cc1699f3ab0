/* A ResNet training step (forward, cross-entropy, backward, AdamW, one
 * lt_mark_step) on fake data: the library ops (conv, pooling, batch norm)
 * on the cpu backend (oneDNN + fast C kernels) vs the reference backend.
 * Compare with PyTorch eager on the same machine and thread count:
 *   NT=2 /usr/bin/python3 bench/pytorch/train_bench.py resnet18 8 64 eager
 * Usage: bench_conv [model] [batch] [res] [steps] [cpu|ref] [classes]
 *   defaults: resnet20 8 32 6 cpu 10 (LT_NUM_THREADS sets the threads).
 * Prints the median step time after two warm-up steps, and the first step
 * (which includes compiling the graph and creating the oneDNN primitives);
 * on cpu, the step's FLOPs (ExecutedFlops: the convs', linears' and
 * matmuls' multiply-adds) per second of wall time and per second of CPU
 * time of one thread (comparable on a busy machine; bench_peak measures
 * the machine's peak both ways); and the page faults of each step
 * (getrusage: a count, which a busy machine does not blur). */
#define _POSIX_C_SOURCE 200809L
#include "lazytensor.h"

#include "exec/exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench_step.h"
#include "core/omp_policy.h"
#include "bench_time.h"



int main(int argc, char **argv) {
    lt_omp_policy(argv); /* the CLI's thread policy (core/omp_policy.h) */
    const char *model = argc > 1 ? argv[1] : "resnet20";
    int64_t bs = argc > 2 ? atoll(argv[2]) : 8, res = argc > 3 ? atoll(argv[3]) : 32;
    int steps = argc > 4 ? atoi(argv[4]) : 6;
    const char *be = argc > 5 ? argv[5] : "cpu";
    int classes = argc > 6 ? atoi(argv[6]) : strcmp(model, "resnet20") ? 1000 : 10;
    if (steps < 3) steps = 3;
    exec_set_backend(strcmp(be, "ref") == 0);
    lt_manual_seed(0);
    lt_model *m = lt_model_new(model, 3, classes);
    if (!m) {
        fprintf(stderr, "bench_conv: %s\n", lt_error_message());
        return 1;
    }
    lt_tensor **params;
    int np = lt_model_params(m, &params, NULL);
    lt_optim *opt = lt_optim_adamw(np, params, 1e-3, 0.9, 0.999, 1e-8, 1e-4, false);
    int64_t xs[4] = {bs, 3, res, res};
    lt_tensor *x = lt_randn(LT_F32, 4, xs);
    int64_t *tv = malloc((size_t)bs * sizeof *tv);
    for (int64_t i = 0; i < bs; i++) tv[i] = (i * 7) % classes;
    lt_tensor *y = lt_from_data(tv, LT_I64, 1, &bs);
    free(tv);
    lt_mark_step();
    double *t = malloc((size_t)steps * sizeof *t), *ct = malloc((size_t)steps * sizeof *ct), flops = 0;
    long *faults = malloc((size_t)steps * sizeof *faults);
    struct rusage ru;
    float loss_v = 0;
    for (int s = 0; s < steps; s++) {
        getrusage(RUSAGE_SELF, &ru);
        long pf0 = ru.ru_minflt + ru.ru_majflt;
        double t0 = bench_now_s(), c0 = bench_cpu_s(), f0 = lt_metric("ExecutedFlops");
        lt_tensor *loss = bench_train_step(m, opt, x, y);
        flops = lt_metric("ExecutedFlops") - f0;
        if (!loss) {
            fprintf(stderr, "bench_conv: %s\n", lt_error_message());
            return 1;
        }
        t[s] = bench_now_s() - t0, ct[s] = bench_cpu_s() - c0;
        getrusage(RUSAGE_SELF, &ru);
        faults[s] = ru.ru_minflt + ru.ru_majflt - pf0;
        lt_to_host(loss, &loss_v, sizeof loss_v);
        lt_free(loss);
    }
    double first = t[0];
    double med = bench_median(t + 2, steps - 2), cmed = bench_median(ct + 2, steps - 2);
    printf("%s %s bs=%lld res=%lld: step %.1f ms (median of %d), first step %.0f ms, loss %.4f\n", be, model,
           (long long)bs, (long long)res, 1e3 * med, steps - 2, 1e3 * first, loss_v);
    if (flops > 0)
        printf("  %.1f GFLOP per step: %.1f GFLOP/s wall, %.1f GFLOP/s per CPU-second (%.0f ms CPU per step)\n",
               flops / 1e9, flops / med / 1e9, flops / cmed / 1e9, 1e3 * cmed);
    printf("  page faults per step:");
    for (int s = 0; s < steps; s++) printf(" %ld", faults[s]);
    printf("\n");
    free(t), free(ct), free(faults);
    lt_free(x);
    lt_free(y);
    lt_optim_free(opt);
    lt_model_free(m);
    return 0;
}
