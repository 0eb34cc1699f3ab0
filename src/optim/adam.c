/* Adam and AdamW, as torch.optim.adam/_adamw._single_tensor_adam(w)
 * (PyTorch 1.13, capturable=False):
 *   step += 1
 *   AdamW: param *= 1 - lr * wd           Adam: grad += wd * param
 *   exp_avg    = lerp(exp_avg, grad, 1 - beta1)
 *   exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad * grad
 *   max_sq     = maximum(max_sq, exp_avg_sq)                  (amsgrad)
 *   denom      = sqrt(exp_avg_sq or max_sq) / sqrt(1 - beta2^step) + eps
 *   param     += -(lr / (1 - beta1^step)) * exp_avg / denom
 * The first moment uses lerp_ (one node; PyTorch 1.13 writes mul_ + add_,
 * the same value up to one rounding, as later PyTorch releases do with
 * lerp_). Division by the bias-correction root is a multiplication by its
 * reciprocal (a runtime scalar). The bias-correction terms change every step
 * but are runtime scalars: the step graph compiles once. */
#include "optim.h"

#include "../core/core.h"

#include <math.h>

int opt_adam_update(const opt_group *h, opt_param *st, lt_tensor *g, bool decoupled) {
    lt_tensor *p = st->p, *t[4] = {0};
    int nt = 0, ok = 1;
    for (int s = 0; s < (h->amsgrad ? 3 : 2); s++)
        if (!st->s[s] && !(st->s[s] = opt_zeros_like(p))) return -1;
    st->step++;
    if (h->maximize) g = t[nt++] = lt_neg(g);
    if (h->weight_decay != 0) {
        if (decoupled) {
            ok &= lt_mul_scalar_(p, 1 - h->lr * h->weight_decay) != NULL;
        } else {
            lt_tensor *wd = lt_mul_scalar(p, h->weight_decay);
            g = t[nt++] = lt_add(g, wd);
            lt_free(wd);
        }
    }
    lt_tensor *m = st->s[0], *v = st->s[1];
    ok &= lt_lerp_(m, g, 1 - h->beta1) != NULL;
    ok &= lt_addcmul_(lt_mul_scalar_(v, h->beta2), g, g, 1 - h->beta2) != NULL;
    double stepd = (double)st->step;
    double bc1 = 1 - pow(h->beta1, stepd), bc2 = 1 - pow(h->beta2, stepd);
    double step_size = h->lr / bc1, bc2_sqrt = sqrt(bc2);
    lt_tensor *src = v;
    if (h->amsgrad) ok &= (src = lt_maximum_(st->s[2], v)) != NULL;
    lt_tensor *denom = t[nt++] = lt_sqrt(src);
    ok &= lt_add_scalar_(lt_mul_scalar_(denom, 1 / bc2_sqrt), h->eps) != NULL;
    ok &= lt_addcdiv_(p, m, denom, -step_size) != NULL;
    for (int i = 0; i < nt; i++) lt_free(t[i]);
    return ok ? 0 : -1;
}
