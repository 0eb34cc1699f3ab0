/* The training step the execution benchmarks time: forward, cross-entropy,
 * backward, optimizer step and zero_grad traced, then one lt_mark_step. */
#ifndef LT_BENCH_STEP_H
#define LT_BENCH_STEP_H

#include "lazytensor.h"

/* Returns the loss (a new handle, already computed), or NULL with the
 * error set. */
static inline lt_tensor *bench_train_step(lt_model *m, lt_optim *opt, lt_tensor *x, lt_tensor *y) {
    lt_tensor *logits = lt_model_forward(m, x);
    lt_tensor *loss = lt_cross_entropy(logits, y, 0.0);
    lt_free(logits);
    if (!loss || lt_backward(loss) || lt_optim_step(opt)) {
        lt_free(loss);
        return NULL;
    }
    lt_optim_zero_grad(opt);
    lt_mark_step();
    return loss;
}

#endif
