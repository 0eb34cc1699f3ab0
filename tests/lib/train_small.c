#include "train_small.h"

#include "lazytensor.h"

#include <math.h>

int train_small_losses(uint64_t seed, int steps, float *loss) {
    lt_manual_seed(seed);
    lt_model *m = lt_model_new("resnet20", 1, 10);
    if (!m) return -1;
    lt_tensor **params;
    int np = lt_model_params(m, &params, NULL);
    lt_optim *opt = lt_optim_adamw(np, params, 1e-3, 0.9, 0.999, 1e-8, 1e-4, false);
    int64_t xs[4] = {4, 1, 12, 12}, n = 4, lab[4] = {1, 3, 5, 7};
    lt_tensor *x = lt_randn(LT_F32, 4, xs), *y = lt_from_data(lab, LT_I64, 1, &n);
    int rc = opt && x && y ? 0 : -1;
    for (int s = 0; s < steps && rc == 0; s++) {
        lt_tensor *out = lt_model_forward(m, x), *l = lt_cross_entropy(out, y, 0.0);
        if (!l || lt_backward(l) || lt_optim_step(opt)) rc = -1;
        lt_optim_zero_grad(opt);
        lt_mark_step();
        loss[s] = rc ? NAN : (float)lt_item(l);
        lt_free(out), lt_free(l);
    }
    if (lt_error()) rc = -1;
    lt_free(x), lt_free(y);
    lt_optim_free(opt);
    lt_model_free(m);
    return rc;
}
