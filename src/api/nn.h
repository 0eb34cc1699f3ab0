/* nn: the neural-network ops of issue 4 — internal entry points and the
 * contract between each forward op and its backward (for src/autograd).
 *
 * Every forward below records ONE IR node per resulting value (DESIGN 2.1);
 * its operands, int attributes (ia) and runtime scalars (sc) are listed so
 * that a node-level recorder (ag_record) can read everything back from the
 * node. Operands are ordered so that what a backward reads is among
 * operands 0..2 (and the output), except eval-mode batch norm. Every backward
 * function returns a NEW handle (free with lt_free), borrows its arguments,
 * returns NULL with an error set on bad input, and propagates a NULL operand
 * like the public ops. Backward ops are not themselves differentiable.
 *
 * Unless said otherwise a gradient has its input's shape and dtype, and
 * grad_out has the forward output's shape and dtype.
 *
 * conv2d  lt_conv2d(x, w, bias, stride, padding, dilation, groups)
 *   node  CONV2D (x, w[, bias]) ia [sH, sW, pH, pW, dH, dW, groups]
 *   saves x, w (and the attributes)
 *   dx    nn_conv2d_backward_input(g, w, lt_shape(x), stride, padding, dilation, groups)
 *   dw    nn_conv2d_backward_weight(g, x, lt_shape(w), stride, padding, dilation, groups)
 *   dbias lt_sum(g, 3, (int[]){0, 2, 3}, false)
 *   NULL stride/dilation mean 1, NULL padding means 0 (in every nn op).
 *
 * max_pool2d  lt_max_pool2d(x, kernel, stride, padding)
 *   node  MAX_POOL2D (x) ia [kH, kW, sH, sW, pH, pW, H, W, ceil_mode,
 *         count_include_pad, divisor_override] (the last three: nn_pool_opt,
 *         lt_max_pool2d_ex / lt_avg_pool2d_ex); NULL stride = kernel
 *   saves x (the backward recomputes the argmax: first maximum, NaN wins)
 *   dx    nn_max_pool2d_backward_opt(g, x, kernel, stride, padding, ia[8..10])
 *
 * avg_pool2d  lt_avg_pool2d(x, kernel, stride, padding)   count_include_pad
 *   node  AVG_POOL2D (x) ia as MAX_POOL2D's
 *   saves nothing: x's shape is (N, C of the output, ia[6], ia[7])
 *   dx    nn_avg_pool2d_backward_opt(g, lt_shape(x), kernel, stride, padding, ia[8..10])
 *
 * adaptive_avg_pool2d  lt_adaptive_avg_pool2d(x, out_hw)
 *   node  ADAPTIVE_AVG_POOL2D (x) ia [oH, oW, H, W]
 *   saves nothing: x's shape is (N, C of the output, ia[2], ia[3])
 *   dx    nn_adaptive_avg_pool2d_backward(g, lt_shape(x))
 *
 * batch_norm  nn_batch_norm(x, weight, bias, rmean, rvar, training, momentum, eps, &stats)
 *   lt_batch_norm is this with stats = NULL. Batch statistics are used when
 *   training or when running stats are NULL; then
 *   node  BN_STATS (x) -> (2, C) [mean; biased var], returned in *stats
 *   node  BN_APPLY (x, stats[, w][, b]) ia [1, has_w, has_b] sc [eps]
 *   and, in training with running stats, rmean/rvar are updated in place
 *   (LERP nodes assigned with func_assign: outside autograd, not part of
 *   the gradient). Otherwise (eval)
 *   node  BN_APPLY (x, rmean, rvar[, w][, b]) ia [0, has_w, has_b] sc [eps]
 *   saves x, weight (may be NULL), eps, and either stats (batch statistics)
 *   or rmean and rvar (eval): exactly one of the two is non-NULL below.
 *   dx    nn_batch_norm_backward_input(g, x, weight, stats, rmean, rvar, eps)
 *         (with stats, this is the full gradient through the batch mean and
 *         variance: BN_STATS needs no backward of its own)
 *   dw,db nn_batch_norm_backward_params(g, x, stats, rmean, rvar, eps) ->
 *         (2, C) [grad_weight; grad_bias]: lt_select(r, 0, 0) / (r, 0, 1)
 *
 * synchronized batch norm (nn_sync_bn.c): with lt_dist_set_sync_bn(true)
 *   in a world of several ranks, training-mode batch statistics are the
 *   global batch's: nn_bn_global_stats(BN_STATS, dtype) feeds BN_APPLY,
 *   whose ia gains a 4th entry, 1 (sync); its backward is
 *   nn_sync_bn_backward(g, x, w, stats, eps, &dx, &r): dx through the global
 *   sums, r the local (2, C) [grad_weight; grad_bias].
 *
 * linear  lt_linear(x, w, bias)   x (..., K), w (O, K), bias (O) -> (..., O)
 *   node  LINEAR (x, w[, bias])
 *   saves x, w
 *   dx    lt_matmul(g, w)
 *   dw    lt_matmul(lt_t(g2), x2) with g2 = lt_reshape(g, (-1, O)), x2 = lt_reshape(x, (-1, K))
 *         (x 1-D: the outer product lt_matmul(lt_unsqueeze(g, 1), lt_unsqueeze(x, 0)));
 *         bfloat16 g and x with w a cast of a float32 weight (autocast):
 *         nn_matmul_wide, the float32 sums written unrounded, since the
 *         gradient is cast back to float32 anyway (PyTorch's autocast
 *         rounds it to bfloat16 first; docs/precision.md)
 *   dbias lt_sum(g, all dims but the last)
 *
 * dropout  nn_dropout(x, p, training, &seed)
 *   lt_dropout is this with the seed discarded. Not training or p == 0:
 *   no node (a copy through lt_clone, gradient = identity); otherwise
 *   node  DROPOUT (x) sc [p, seed] (seed: an integer < 2^53 drawn from the
 *         host RNG at trace time, a runtime parameter like p)
 *   saves p, seed
 *   dx    nn_dropout_backward(g, p, seed): the same mask and scale on g
 *
 * nll_loss  lt_nll_loss(logp (N, C), target (N) int64) -> () mean
 *   (lt_nll_loss_forward: reduction none (N), mean, sum, any ignore_index)
 *   node  NLL_LOSS (logp, target) ia [C, reduction, ignore_index]
 *         (reduction 3: the count of targets not ignored, never recorded)
 *   saves target, C, reduction, ignore_index
 *   dlogp nn_nll_loss_backward_ex(g, target, C, reduction, ignore_index)
 *         (NLL_LOSS_BWD ia [reduction, ignore_index]; g (N) for none)
 *
 * cross_entropy  lt_cross_entropy(logits (N, C), target (N), ls) -> () mean
 *   node  CROSS_ENTROPY (logits, target) sc [ls]
 *   saves logits, target, ls
 *   dlogits nn_cross_entropy_backward(g, logits, target, ls)
 *   Targets outside [0, C) (e.g. PyTorch's ignore_index -100) are ignored
 *   in both losses: no term, not counted in the mean (the smoothing term
 *   too, as PyTorch since 1.12, pytorch/pytorch#73205).
 *
 * mse_loss  lt_mse_loss(a, b) -> () mean; node MSE_LOSS (a, b) ia [reduction]
 *   (lt_mse_loss_ex: reduction none (a's shape), mean, sum)
 *   saves a, b
 *   da    nn_mse_loss_backward_ex(g, a, b, reduction)  (= 2 (a - b) g [/ numel
 *         for mean]; db = -da)
 *
 * gather  lt_gather(a, dim, index)   node GATHER (a, index) ia [dim, a's shape...]
 *   saves index (a's shape, dim in ia)
 *   da    nn_scatter_add(lt_zeros(a's dtype and shape), dim, index, g)
 *
 * index_select  lt_index_select(a, dim, index)   node INDEX_SELECT (a, index) ia [dim, a.size(dim)]
 *   saves index (a's shape = the output's with ia[1] at dim)
 *   da    nn_index_add(lt_zeros(a's dtype and shape), dim, index, g)
 *
 * embedding  lt_embedding(weight (V, D), indices (...))   node EMBEDDING (weight, indices) ia [V]
 *   saves indices
 *   dw    nn_embedding_backward(g, indices, V)
 *
 * erf  lt_erf(a): ELEMWISE ERF; saves a; da = g * 2/sqrt(pi) * exp(-a^2)
 *
 * gelu  lt_gelu(x, tanh_form): ELEMWISE GELU sc [tanh_form]
 *   saves x
 *   dx    nn_gelu_backward(g, x, tanh_form)  (GELU_BWD (g, x) sc [tanh_form])
 *
 * layer_norm  lt_layer_norm(x, nnorm, w, b, eps): normalizes over the last
 *   nnorm dims of x (PyTorch's normalized_shape); w, b of that shape or NULL,
 *   of x's dtype or float32 with a bfloat16 x (autocast's mixed layer norm)
 *   node  LAYER_NORM (x[, w][, b]) ia [nnorm, has_w, has_b] sc [eps]
 *   saves x, w
 *   dx    nn_layer_norm_backward_input(g, x, w, nnorm, eps)
 *   dw,db nn_layer_norm_backward_params(g, x, nnorm, eps) -> (2, normalized
 *         shape) [dw; db]: lt_select(r, 0, 0) / (r, 0, 1); float32 for a
 *         bfloat16 x (the engine casts it to the parameters' dtype)
 *   (both recompute each row's mean and variance from x)
 *
 * attention  lt_scaled_dot_product_attention(q, k, v, causal, p, scale)
 *   q, k, v one shape (..., T, D); scale 0 means 1/sqrt(D); dropout p on
 *   the probabilities with a seed drawn like dropout's (nn_attention
 *   returns it)
 *   node  ATTENTION (q, k, v) ia [causal, bits of the double scale] sc [p, seed]
 *   saves q, k, v and the output
 *   dq,dk,dv nn_attention_backward(g, q, k, v, out, causal, scale, p, seed)
 *         -> (3, ..., T, D): lt_select(r, 0, i)
 *
 * total norm  nn_total_norm(n, tensors) -> () the 2-norm of all elements
 *   node  GRAD_NORM (tensors...); not differentiable (lt_clip_grad_norm_)
 *
 * Out-of-range indices (gather, index_select, embedding, losses) cannot be
 * reported at run time: the forward reads 0 for them, the backward skips
 * them, and no kernel reads or writes outside its buffers.
 *
 * Where a recorder hooks in: every forward except batch norm creates its
 * node in nn_node() (src/api/nn_util.h); batch norm creates BN_APPLY in
 * nn_batch_norm (src/api/nn_norm.c). */
#ifndef LT_API_NN_H
#define LT_API_NN_H

#include "lazytensor.h"

#include <stdbool.h>
#include <stdint.h>

/* conv2d: in_shape / w_shape are the forward's x and w shapes (N, C, H, W)
 * and (O, C/groups, kH, kW). */
lt_tensor *nn_conv2d_backward_input(lt_tensor *grad_out, lt_tensor *w, const int64_t in_shape[4],
                                    const int64_t stride[2], const int64_t padding[2], const int64_t dilation[2],
                                    int64_t groups);
lt_tensor *nn_conv2d_backward_weight(lt_tensor *grad_out, lt_tensor *x, const int64_t w_shape[4],
                                     const int64_t stride[2], const int64_t padding[2], const int64_t dilation[2],
                                     int64_t groups);

/* pooling. The options of PyTorch's pooling beyond lt_max_pool2d's and
 * lt_avg_pool2d's (floor mode, padding counted): ia[8..10] of the pooling
 * nodes, which their backward reads back. */
typedef struct nn_pool_opt {
    int ceil;            /* ceil_mode */
    int include_pad;     /* count_include_pad (average only) */
    int64_t divisor;     /* divisor_override, 0: none (average only) */
} nn_pool_opt;
#define NN_POOL_NIA 11
lt_tensor *nn_max_pool2d_backward_opt(lt_tensor *grad_out, lt_tensor *x, const int64_t kernel[2],
                                      const int64_t stride[2], const int64_t padding[2], nn_pool_opt opt);
lt_tensor *nn_avg_pool2d_backward_opt(lt_tensor *grad_out, const int64_t in_shape[4], const int64_t kernel[2],
                                      const int64_t stride[2], const int64_t padding[2], nn_pool_opt opt);
lt_tensor *nn_max_pool2d_backward(lt_tensor *grad_out, lt_tensor *x, const int64_t kernel[2], const int64_t stride[2],
                                  const int64_t padding[2]);
lt_tensor *nn_avg_pool2d_backward(lt_tensor *grad_out, const int64_t in_shape[4], const int64_t kernel[2],
                                  const int64_t stride[2], const int64_t padding[2]);
lt_tensor *nn_adaptive_avg_pool2d_backward(lt_tensor *grad_out, const int64_t in_shape[4]);

/* batch norm. stats_out (may be NULL): receives a new handle to the (2, C)
 * batch statistics when they were used, else NULL. */
lt_tensor *nn_batch_norm(lt_tensor *x, lt_tensor *weight, lt_tensor *bias, lt_tensor *running_mean,
                         lt_tensor *running_var, bool training, double momentum, double eps, lt_tensor **stats_out);
lt_tensor *nn_batch_norm_backward_input(lt_tensor *grad_out, lt_tensor *x, lt_tensor *weight, lt_tensor *stats,
                                        lt_tensor *running_mean, lt_tensor *running_var, double eps);
lt_tensor *nn_batch_norm_backward_params(lt_tensor *grad_out, lt_tensor *x, lt_tensor *stats,
                                         lt_tensor *running_mean, lt_tensor *running_var, double eps);

/* dropout. seed_out (may be NULL): the seed used, or -1 when no node was made. */
lt_tensor *nn_dropout(lt_tensor *x, double p, bool training, double *seed_out);
lt_tensor *nn_dropout_backward(lt_tensor *grad_out, double p, double seed);

/* losses: grad_out is the 0-d gradient of the loss. */
lt_tensor *nn_nll_loss_backward(lt_tensor *grad_out, lt_tensor *target, int64_t num_classes);
/* reduction 0 none (grad_out (N)), 1 mean, 2 sum; targets == ignore_index skipped */
lt_tensor *nn_nll_loss_backward_ex(lt_tensor *grad_out, lt_tensor *target, int64_t num_classes, int reduction,
                                   int64_t ignore_index);
lt_tensor *nn_cross_entropy_backward(lt_tensor *grad_out, lt_tensor *logits, lt_tensor *target,
                                     double label_smoothing);
lt_tensor *nn_mse_loss_backward(lt_tensor *grad_out, lt_tensor *a, lt_tensor *b);
lt_tensor *nn_mse_loss_backward_ex(lt_tensor *grad_out, lt_tensor *a, lt_tensor *b, int reduction);

/* indexing. scatter_add: base + src scattered along dim at index (PyTorch's
 * scatter_add: index.ndim == base.ndim, index.size(d) <= src.size(d) and,
 * for d != dim, <= base.size(d)). index_add: base + src added at rows
 * index (1-D) of dim; src has base's shape with dim of size index.numel. */
/* MATMUL of bfloat16 a and b, float32 result: the kernels' float32 sums
 * unrounded (lt_matmul rounds them to bfloat16). */
lt_tensor *nn_matmul_wide(lt_tensor *a, lt_tensor *b);
lt_tensor *nn_scatter_add(lt_tensor *base, int dim, lt_tensor *index, lt_tensor *src);
lt_tensor *nn_index_add(lt_tensor *base, int dim, lt_tensor *index, lt_tensor *src);
/* the same with negative indices counting from the end (INDEX_ADD ia [dim, 1];
 * INDEX_SELECT's ia [dim, size, 1]): lt_index's backward */
lt_tensor *nn_index_add_wrap(lt_tensor *base, int dim, lt_tensor *index, lt_tensor *src);
lt_tensor *nn_embedding_backward(lt_tensor *grad_out, lt_tensor *indices, int64_t num_weights);

/* transformers (nn_transformer.c) */
lt_tensor *nn_gelu_backward(lt_tensor *grad_out, lt_tensor *x, bool tanh_form);
lt_tensor *nn_layer_norm_backward_input(lt_tensor *grad_out, lt_tensor *x, lt_tensor *weight, int nnorm, double eps);
lt_tensor *nn_layer_norm_backward_params(lt_tensor *grad_out, lt_tensor *x, int nnorm, double eps);
/* seed_out (may be NULL): the dropout seed drawn (0 without dropout). */
lt_tensor *nn_attention(lt_tensor *q, lt_tensor *k, lt_tensor *v, bool causal, double dropout_p, double scale,
                        double *seed_out);
lt_tensor *nn_attention_backward(lt_tensor *grad_out, lt_tensor *q, lt_tensor *k, lt_tensor *v, lt_tensor *out,
                                 bool causal, double scale, double dropout_p, double seed);
lt_tensor *nn_total_norm(int n, lt_tensor *const *tensors);

/* Synchronized batch norm (nn_sync_bn.c); g_sync_bn: lt_dist_set_sync_bn. */
extern int g_sync_bn;
lt_tensor *nn_bn_global_stats(lt_tensor *stats, lt_dtype dt);
int nn_sync_bn_backward(lt_tensor *g, lt_tensor *x, lt_tensor *w, lt_tensor *stats, double eps, lt_tensor **dx,
                        lt_tensor **params);

#endif
