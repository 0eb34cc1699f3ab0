/* Backward of the transformer ops (issue 16), by the contract of
 * src/api/nn.h: erf with public ops, the others with their backward op. */
#include "../api/nn.h"
#include "backward.h"

int ag_bw_transformer(ag_fn *f, lt_tensor *g, lt_tensor **gi) {
    const int64_t *ia = f->ia;
    switch (f->op) {
    case LT_OP_ERF: { /* g * 2/sqrt(pi) * exp(-a^2) */
        lt_tensor *a = SAVED(0);
        lt_tensor *e = K(lt_exp(K(lt_neg(K(lt_mul(a, a))))));
        gi[0] = lt_mul(g, K(lt_mul_scalar(e, 1.1283791670955126)));
        break;
    }
    case LT_OP_GELU: gi[0] = nn_gelu_backward(g, SAVED(0), f->sc[0] != 0); break;
    case LT_OP_LAYER_NORM: { /* (x[, w][, b]) ia [nnorm, has_w, has_b] sc [eps] */
        int nnorm = (int)ia[0], wi = 1, bi = 1 + (int)ia[1];
        lt_tensor *w = ia[1] ? SAVED(1) : NULL;
        if (NEED(0)) gi[0] = nn_layer_norm_backward_input(g, SAVED(0), w, nnorm, f->sc[0]);
        int nw = ia[1] && NEED(wi), nb = ia[2] && NEED(bi);
        if (nw || nb) {
            lt_tensor *r = K(nn_layer_norm_backward_params(g, SAVED(0), nnorm, f->sc[0]));
            if (nw) gi[wi] = lt_select(r, 0, 0);
            if (nb) gi[bi] = lt_select(r, 0, 1);
        }
        break;
    }
    case LT_OP_ATTENTION: { /* ia [causal, scale bits] sc [p, seed] */
        double scale;
        memcpy(&scale, &ia[1], sizeof scale);
        lt_tensor *r = K(nn_attention_backward(g, SAVED(0), SAVED(1), SAVED(2), OUT, ia[0] != 0, scale, f->sc[0],
                                               f->sc[1]));
        for (int i = 0; i < 3; i++)
            if (NEED(i)) gi[i] = lt_select(r, 0, i);
        break;
    }
    default: LT_ASSERT(0 && "not a transformer op");
    }
    return 0;
}
