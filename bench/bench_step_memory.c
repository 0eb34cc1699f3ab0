/* Peak memory of a ResNet-20 training step (batch 128, 1x28x28, AdamW,
 * forward + cross-entropy + backward + step + one lt_mark_step), measured as
 * bench/pytorch_step_memory.py measures PyTorch eager's: the growth of the
 * process's peak RSS over 5 steps, from a point where the model and the batch
 * exist. Also prints PeakBytes (the memory plan's footprint of the step).
 *   LT_NUM_THREADS=2 build/bench_step_memory
 *   NT=2 /usr/bin/python3 bench/pytorch_step_memory.py */
#include "lazytensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "bench_step.h"

static double max_rss_mib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0; /* KiB on Linux */
}

int main(void) {
    lt_manual_seed(0);
    lt_model *m = lt_model_new("resnet20", 1, 10);
    if (!m) {
        fprintf(stderr, "bench_step_memory: %s\n", lt_error_message());
        return 1;
    }
    lt_tensor **params;
    int np = lt_model_params(m, &params, NULL);
    lt_optim *opt = lt_optim_adamw(np, params, 1e-3, 0.9, 0.999, 1e-8, 1e-4, false);
    int64_t bs = 128, xs[4] = {bs, 1, 28, 28};
    lt_tensor *x = lt_randn(LT_F32, 4, xs);
    int64_t tv[128];
    for (int64_t i = 0; i < bs; i++) tv[i] = (i * 7) % 10;
    lt_tensor *y = lt_from_data(tv, LT_I64, 1, &bs);
    lt_mark_step();
    lt_metrics_reset();
    double rss0 = max_rss_mib();
    for (int s = 0; s < 5; s++) {
        lt_tensor *loss = bench_train_step(m, opt, x, y);
        if (!loss) {
            fprintf(stderr, "bench_step_memory: %s\n", lt_error_message());
            return 1;
        }
        lt_free(loss);
    }
    printf("lazytensor resnet20 bs128: peak RSS growth over 5 steps %.1f MiB, PeakBytes %.1f MiB\n",
           max_rss_mib() - rss0, lt_metric("PeakBytes") / 1048576.0);
    lt_free(x);
    lt_free(y);
    lt_optim_free(opt);
    lt_model_free(m);
    return 0;
}
