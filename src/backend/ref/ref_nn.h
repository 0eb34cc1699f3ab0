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

#endif
