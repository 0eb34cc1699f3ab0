/* Reference kernels of the NN ops (issue 4): conv, pooling, batch norm,
 * linear, dropout, losses, gather/scatter. Each op's attributes (ia, sc) are
 * listed next to its kernel; the shape rules are in src/api/nn_*.c.
 * Indices that are out of range cannot be reported at run time: gathers
 * read 0 for them and scatters skip them, never touching memory outside. */
#ifndef LT_REF_NN_H
#define LT_REF_NN_H

#include "ref.h"

void ref_conv2d(const gnode *y, const ref_arg *in, void *out);
void ref_conv2d_bwd_input(const gnode *y, const ref_arg *in, void *out);
void ref_conv2d_bwd_weight(const gnode *y, const ref_arg *in, void *out);
void ref_pool2d(const gnode *y, const ref_arg *in, void *out);     /* MAX_POOL2D, AVG_POOL2D */
void ref_pool2d_bwd(const gnode *y, const ref_arg *in, void *out); /* MAX_POOL2D_BWD, AVG_POOL2D_BWD */
void ref_adaptive_avg_pool2d(const gnode *y, const ref_arg *in, void *out);
void ref_adaptive_avg_pool2d_bwd(const gnode *y, const ref_arg *in, void *out);
void ref_bn_stats(const gnode *y, const ref_arg *in, void *out);
void ref_bn_apply(const gnode *y, const ref_arg *in, const double *sc, void *out);
void ref_bn_bwd_input(const gnode *y, const ref_arg *in, const double *sc, void *out);
void ref_bn_bwd_params(const gnode *y, const ref_arg *in, const double *sc, void *out);
void ref_linear(const gnode *y, const ref_arg *in, void *out);
void ref_dropout(const gnode *y, const ref_arg *in, const double *sc, void *out);
void ref_nll_loss(const gnode *y, const ref_arg *in, void *out);
void ref_nll_loss_bwd(const gnode *y, const ref_arg *in, void *out);
void ref_cross_entropy(const gnode *y, const ref_arg *in, const double *sc, void *out);
void ref_cross_entropy_bwd(const gnode *y, const ref_arg *in, const double *sc, void *out);
void ref_mse_loss(const gnode *y, const ref_arg *in, void *out);
void ref_gather(const gnode *y, const ref_arg *in, void *out);
void ref_scatter_add(const gnode *y, const ref_arg *in, void *out);
void ref_index_select(const gnode *y, const ref_arg *in, void *out); /* also EMBEDDING */
void ref_index_add(const gnode *y, const ref_arg *in, void *out);
/* Transformers (ref_nn_transformer.c); the attrs are next to each kernel. */
void ref_layer_norm(const gnode *y, const ref_arg *in, const double *sc, void *out);
void ref_ln_bwd_input(const gnode *y, const ref_arg *in, const double *sc, void *out);
void ref_ln_bwd_params(const gnode *y, const ref_arg *in, const double *sc, void *out);
void ref_attention(const gnode *y, const ref_arg *in, const double *sc, void *out);
void ref_attention_bwd(const gnode *y, const ref_arg *in, const double *sc, void *out);
int64_t ref_attention_scratch(const gnode *y); /* doubles of ref_scratch either attention kernel needs */
void ref_grad_norm(const gnode *y, const ref_arg *in, void *out);
/* The PyTorch device's nn family: max pooling's indices (ref_nn_pool.c), layer
 * norm's row statistics (ref_nn_transformer.c), seeded fills (ref_random.c). */
void ref_max_pool2d_indices(const gnode *y, const ref_arg *in, void *out);
void ref_ln_stats(const gnode *y, const ref_arg *in, const double *sc, void *out);
void ref_random(const gnode *y, const double *sc, void *out);

/* The mean and biased variance of row `row` of n elements of x (a float
 * dtype), accumulated in float for float32 and bfloat16, in PyTorch's order
 * (ref_moments.c; the cpu backend's vector version agrees to the bit). */
void ref_row_moments(const ref_arg *x, int64_t row, int64_t n, double *mean, double *var);

/* The dropout mask, shared by every backend so that all of them (and the
 * backward, which reruns DROPOUT with the same seed) drop the same
 * elements: element i is kept iff u(seed, i) >= p, where u is a
 * splitmix64-style hash of (seed, i) mapped to [0, 1) with 53 bits. The
 * seed is an integer below 2^53 so that it survives being a double. */
static inline double nn_dropout_uniform(uint64_t seed, int64_t i) {
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + (uint64_t)i * 0xD1B54A32D192ED03ull + 0x94D049BB133111EBull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

/* Attention's geometry and dropout, read the same way by every backend:
 * q (..., T, D) is BH problems of (T, D); ia [causal, bits of the double
 * scale]; sc [dropout p, seed]. A kept probability is scaled by keep. */
typedef struct nn_att {
    int64_t BH, T, D;
    int causal;
    double scale, p, keep;
    uint64_t seed;
} nn_att;

static inline nn_att nn_att_of(const gnode *y, int qndim, const int64_t *qshape, int64_t qnumel, const double *sc) {
    nn_att a;
    a.T = qshape[qndim - 2];
    a.D = qshape[qndim - 1];
    a.BH = a.T > 0 && a.D > 0 ? qnumel / (a.T * a.D) : 0;
    a.causal = (int)y->ia[0];
    memcpy(&a.scale, &y->ia[1], sizeof a.scale);
    a.p = sc[0];
    a.keep = sc[0] < 1 ? 1.0 / (1.0 - sc[0]) : 0.0;
    a.seed = (uint64_t)sc[1];
    return a;
}

/* The dropout factor of probability (bh, i, j): the mask above over the
 * (..., T, T) probabilities. */
static inline double nn_att_drop(const nn_att *a, int64_t bh, int64_t i, int64_t j) {
    if (a->p == 0) return 1.0;
    return nn_dropout_uniform(a->seed, (bh * a->T + i) * a->T + j) >= a->p ? a->keep : 0.0;
}

#endif
