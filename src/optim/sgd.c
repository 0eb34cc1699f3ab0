/* SGD, as torch.optim.sgd._single_tensor_sgd (PyTorch 1.13):
 *   d = grad (negated if maximize);  d += wd * param
 *   buf = d (first step) | buf = momentum * buf + (1 - dampening) * d
 *   d = d + momentum * buf (nesterov) | d = buf
 *   param -= lr * d
 * PyTorch's add(x, alpha=a) is one fused op; here a * x is its own node, so
 * results can differ from PyTorch by one rounding (measured in test_optim). */
#include "optim.h"

#include "../core/core.h"
#include "../func/func.h"

/* Temporaries owned by one update, freed together. */
typedef struct tmps {
    lt_tensor *t[8];
    int n;
} tmps;

static lt_tensor *keep(tmps *k, lt_tensor *t) {
    LT_ASSERT(k->n < 8);
    k->t[k->n++] = t;
    return t;
}

static void drop(tmps *k) {
    for (int i = 0; i < k->n; i++) lt_free(k->t[i]);
}

int opt_sgd_update(const opt_group *h, opt_param *st, lt_tensor *g) {
    tmps k = {{0}, 0};
    lt_tensor *p = st->p, *d = h->maximize ? keep(&k, lt_neg(g)) : g;
    if (h->weight_decay != 0) d = keep(&k, lt_add(d, keep(&k, lt_mul_scalar(p, h->weight_decay))));
    int ok = d != NULL;
    if (h->momentum != 0) {
        lt_tensor *buf = st->s[0];
        if (!buf) {
            buf = st->s[0] = func_unscope(lt_clone(d));
        } else if (st->step == 1 && h->dampening != 0) {
            ok &= lt_copy_(buf, d) != NULL; /* PyTorch's first step: buf = d, undamped */
        } else {
            /* Without dampening the zero buffer made with the optimizer gives
             * exactly buf = d on the first step, with the same graph as later
             * steps (one compile). */
            lt_tensor *step = h->dampening != 0 ? keep(&k, lt_mul_scalar(d, 1 - h->dampening)) : d;
            ok &= lt_add_(lt_mul_scalar_(buf, h->momentum), step) != NULL;
        }
        ok &= buf != NULL;
        d = h->nesterov ? keep(&k, lt_add(d, keep(&k, lt_mul_scalar(buf, h->momentum)))) : buf;
    }
    ok &= lt_add_(p, keep(&k, lt_mul_scalar(d, -h->lr))) != NULL;
    drop(&k);
    return ok ? 0 : -1;
}
