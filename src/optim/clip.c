/* lt_clip_grad_norm_, as torch.nn.utils.clip_grad_norm_ (PyTorch 1.13,
 * norm_type 2): the total norm of every gradient stays a lazy 0-d tensor
 * (one GRAD_NORM node), and each gradient is multiplied in place by
 * clamp(max_norm / (total + 1e-6), max=1): no host sync, so the clipped
 * step is still one graph. */
#include "optim.h"

#include "../api/nn.h"
#include "../core/core.h"
#include "../dist/dist.h"

#include <math.h>
#include <stdlib.h>

int opt_clip_by(int n, lt_tensor *const *g, lt_tensor *total, double max_norm) {
    lt_tensor *den = lt_add_scalar(total, 1e-6);
    lt_tensor *mx = den ? lt_full(max_norm, lt_dtype_of(den), 0, NULL) : NULL;
    lt_tensor *coef = mx ? lt_div(mx, den) : NULL;
    lt_tensor *clamped = coef ? lt_clamp(coef, -INFINITY, 1.0) : NULL;
    int ok = clamped != NULL;
    for (int i = 0; i < n && ok; i++) ok = lt_mul_(g[i], clamped) != NULL;
    lt_free(den), lt_free(mx), lt_free(coef), lt_free(clamped);
    return ok ? 0 : -1;
}

lt_tensor *lt_clip_grad_norm_(int n, lt_tensor *const *params, double max_norm) {
    if (dist_shard_optimizer())
        return err_set(LT_ERR_STATE, "lt_clip_grad_norm_: the optimizer is sharded (lt_dist_set_shard_optimizer): its "
                                     "step averages the gradients, so no rank holds them here; clip in the step with "
                                     "lt_optim_set_max_grad_norm");
    return opt_clip_grad_norm(n, params, max_norm);
}

lt_tensor *opt_clip_grad_norm(int n, lt_tensor *const *params, double max_norm) {
    if (n < 0 || (n && !params))
        return err_set(LT_ERR_ARG, "lt_clip_grad_norm_: argument 'params' is NULL or 'n' (%d) is negative", n);
    if (!(max_norm >= 0) || !isfinite(max_norm))
        return err_set(LT_ERR_ARG, "lt_clip_grad_norm_: argument 'max_norm' is %g; must be finite and >= 0",
                             max_norm);
    lt_tensor **g = malloc((size_t)(n ? n : 1) * sizeof *g);
    if (!g) return err_set(LT_ERR_OOM, "lt_clip_grad_norm_: out of memory");
    int ng = 0;
    for (int i = 0; i < n; i++) {
        if (!params[i]) {
            free(g);
            return err_set(LT_ERR_NULL, "lt_clip_grad_norm_: argument 'params[%d]' is NULL", i);
        }
        if ((g[ng] = lt_grad(params[i]))) ng++;
    }
    if (!ng) {
        free(g);
        return lt_zeros(LT_F32, 0, NULL);
    }
    lt_no_grad_begin();
    lt_tensor *total = nn_total_norm(ng, g);
    int ok = total && opt_clip_by(ng, g, total, max_norm) == 0;
    lt_no_grad_end();
    free(g);
    if (!ok) {
        lt_free(total);
        return NULL;
    }
    return total;
}
