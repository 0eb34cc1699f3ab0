/* Backward of the NN ops, by the contract of src/api/nn.h: each formula
 * calls that op's backward IR op (or public ops) with the saved values. */
#include "../api/nn.h"
#include "backward.h"

/* BN_APPLY operands: batch (x, stats[, w][, b]); eval (x, rmean, rvar[, w][, b]). ia [batch, has_w, has_b]. */
static int bn_w(const int64_t *ia) { return ia[0] ? 2 : 3; }

unsigned ag_nn_saves(int op, unsigned need, const int64_t *ia) {
    switch (op) {
    case LT_OP_CONV2D: case LT_OP_LINEAR: return (need & 2 ? 1u : 0) | (need & 1 ? 2u : 0);
    case LT_OP_MAX_POOL2D: return 1u;
    case LT_OP_BN_APPLY: /* x, the statistics, the weight */
        if (ia[0]) return 3u | (ia[1] ? 4u : 0);
        return 7u | (ia[1] ? 16u : 0);
    case LT_OP_NLL_LOSS: case LT_OP_GATHER: case LT_OP_INDEX_SELECT: case LT_OP_EMBEDDING: return 2u;
    case LT_OP_CROSS_ENTROPY: case LT_OP_MSE_LOSS: return 3u;
    default: return 0; /* AVG_POOL2D, ADAPTIVE_AVG_POOL2D, DROPOUT: attributes only */
    }
}


static nn_pool_opt pool_opt(const int64_t *ia) { return (nn_pool_opt){(int)ia[8], (int)ia[9], ia[10]}; }

int ag_bw_nn(ag_fn *f, lt_tensor *g, lt_tensor **gi) {
    const int64_t *ia = f->ia;
    switch (f->op) {
    case LT_OP_CONV2D: /* ia [sH, sW, pH, pW, dH, dW, groups] */
        if (NEED(0)) gi[0] = nn_conv2d_backward_input(g, SAVED(1), f->next[0]->shape, ia, ia + 2, ia + 4, ia[6]);
        if (NEED(1)) gi[1] = nn_conv2d_backward_weight(g, SAVED(0), f->next[1]->shape, ia, ia + 2, ia + 4, ia[6]);
        if (f->nin > 2 && NEED(2)) gi[2] = lt_sum(g, 3, (int[]){0, 2, 3}, false);
        break;
    case LT_OP_MAX_POOL2D: /* ia [kH, kW, sH, sW, pH, pW, H, W, ceil, count_include_pad, divisor] */
        gi[0] = nn_max_pool2d_backward_opt(g, SAVED(0), ia, ia + 2, ia + 4, pool_opt(ia));
        break;
    case LT_OP_AVG_POOL2D:
        gi[0] = nn_avg_pool2d_backward_opt(g, f->next[0]->shape, ia, ia + 2, ia + 4, pool_opt(ia));
        break;
    case LT_OP_ADAPTIVE_AVG_POOL2D: gi[0] = nn_adaptive_avg_pool2d_backward(g, f->next[0]->shape); break;
    case LT_OP_BN_APPLY: { /* ia [batch, has_w, has_b] sc [eps] */
        int b = (int)ia[0], wi = bn_w(ia), bi = wi + (int)ia[1];
        lt_tensor *stats = b ? SAVED(1) : NULL, *rm = b ? NULL : SAVED(1), *rv = b ? NULL : SAVED(2);
        lt_tensor *w = ia[1] ? (b ? SAVED(2) : f->saved[4]) : NULL;
        int nw = ia[1] && NEED(wi), nb = ia[2] && NEED(bi);
        if (f->nia > 3 && ia[3]) { /* synchronized over the ranks (nn_sync_bn.c) */
            lt_tensor *r = NULL;
            nn_sync_bn_backward(g, SAVED(0), w, stats, f->sc[0], NEED(0) ? &gi[0] : NULL, &r);
            K(r);
            if (nw) gi[wi] = lt_select(r, 0, 0);
            if (nb) gi[bi] = lt_select(r, 0, 1);
            break;
        }
        if (NEED(0)) gi[0] = nn_batch_norm_backward_input(g, SAVED(0), w, stats, rm, rv, f->sc[0]);
        if (nw || nb) {
            lt_tensor *r = K(nn_batch_norm_backward_params(g, SAVED(0), stats, rm, rv, f->sc[0]));
            if (nw) gi[wi] = lt_select(r, 0, 0);
            if (nb) gi[bi] = lt_select(r, 0, 1);
        }
        break;
    }
    case LT_OP_LINEAR: { /* x (..., K), w (O, K) */
        if (NEED(0)) gi[0] = lt_matmul(g, SAVED(1));
        if (NEED(1)) {
            lt_tensor *x = SAVED(0);
            if (x->ndim == 1) {
                gi[1] = lt_matmul(K(lt_unsqueeze(g, 1)), K(lt_unsqueeze(x, 0)));
            } else {
                /* rows spelled out, not -1: a zero-size K or O leaves -1 undetermined */
                int64_t k = x->shape[x->ndim - 1], o = g->shape[g->ndim - 1], rows = 1;
                for (int d = 0; d + 1 < x->ndim; d++) rows *= x->shape[d];
                lt_tensor *g2 = K(lt_reshape(g, 2, (int64_t[]){rows, o})), *x2 = K(lt_reshape(x, 2, (int64_t[]){rows, k}));
                gi[1] = (ag_grad_dtype(f, 1) == LT_F32 && g2->dtype == LT_BF16 && x2->dtype == LT_BF16
                             ? nn_matmul_wide
                             : lt_matmul)(K(lt_t(g2)), x2);
            }
        }
        if (f->nin > 2 && NEED(2)) { /* sum over every dim but the last: the engine's fit does it */
            gi[2] = ag_same(g);
        }
        break;
    }
    case LT_OP_DROPOUT: gi[0] = nn_dropout_backward(g, f->sc[0], f->sc[1]); break; /* sc [p, seed] */
    case LT_OP_NLL_LOSS: /* ia [C, reduction, ignore_index] */
        gi[0] = nn_nll_loss_backward_ex(g, SAVED(1), ia[0], (int)ia[1], ia[2]);
        break;
    case LT_OP_CROSS_ENTROPY: gi[0] = nn_cross_entropy_backward(g, SAVED(0), SAVED(1), f->sc[0]); break;
    case LT_OP_MSE_LOSS: { /* ia [reduction] */
        lt_tensor *da = nn_mse_loss_backward_ex(g, SAVED(0), SAVED(1), (int)ia[0]);
        if (NEED(1)) gi[1] = lt_neg(da);
        if (NEED(0)) gi[0] = da;
        else K(da);
        break;
    }
    case LT_OP_GATHER: /* ia [dim, a's shape...] */
        gi[0] = nn_scatter_add(K(ag_zeros_like_fn(f->next[0])), (int)ia[0], SAVED(1), g);
        break;
    case LT_OP_INDEX_SELECT: /* ia [dim, a.size(dim)] */
        gi[0] = (f->nia > 2 && ia[2] ? nn_index_add_wrap : nn_index_add)(K(ag_zeros_like_fn(f->next[0])), (int)ia[0],
                                                                          SAVED(1), g); /* ia[2]: negatives wrap */
        break;
    case LT_OP_EMBEDDING: gi[0] = nn_embedding_backward(g, SAVED(1), ia[0]); break; /* ia [V] */
    default: LT_ASSERT(0 && "not an NN op");
    }
    return 0;
}
