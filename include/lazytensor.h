/*
 * lazytensor — a lazy-tensor runtime in C.
 *
 * Tutorial. Every tensor function below looks eager but only records one IR
 * node. Values are computed at a sync point: lt_mark_step() (syncs every live
 * tensor) or lt_to_host() (syncs what one tensor needs). The pending graph is
 * hashed, found in a compile cache or compiled once, executed, and the
 * tensors are rebound to the results.
 *
 *     int64_t shape[2] = {2, 3};
 *     lt_tensor *p = lt_randn(LT_F32, 2, shape);
 *     lt_tensor *g = lt_full(0.5, LT_F32, 2, shape);
 *     for (int i = 0; i < 100; i++) {
 *         lt_lerp_(p, g, 0.1);        // in place, one IR node, no compute
 *         lt_mark_step();             // compiles once, then hits the cache
 *     }
 *     float out[6];
 *     if (lt_to_host(p, out, sizeof out) != 0) puts(lt_error_message());
 *     lt_free(p); lt_free(g);
 *
 * Ownership: functions returning lt_tensor * return a NEW handle that the
 * caller frees with lt_free(), except in-place functions (names ending in
 * '_'), which return their first argument. Arguments are borrowed.
 *
 * A training loop: autograd, an optimizer, and a handle scope per step, so
 * nested calls need no names and leak nothing (lt_scope_end frees every
 * handle made since lt_scope_begin, except those kept with lt_scope_keep).
 *
 *     int64_t xs[2] = {64, 784}, ys[1] = {64}, s1[2] = {128, 784}, sb[1] = {128}, s2[2] = {10, 128};
 *     lt_scope_begin();           // initial values: keep the parameters, free the rest
 *     lt_tensor *w1 = lt_scope_keep(lt_mul_scalar(lt_randn(LT_F32, 2, s1), 0.03));
 *     lt_tensor *w2 = lt_scope_keep(lt_mul_scalar(lt_randn(LT_F32, 2, s2), 0.09));
 *     lt_scope_end();
 *     lt_tensor *b1 = lt_zeros(LT_F32, 1, sb);
 *     lt_tensor *params[3] = {w1, b1, w2};
 *     for (int i = 0; i < 3; i++) lt_set_requires_grad(params[i], true);
 *     lt_optim *opt = lt_optim_adamw(3, params, 1e-3, 0.9, 0.999, 1e-8, 0.01, false);
 *     for (int step = 0; step < 1000; step++) {
 *         lt_scope_begin();
 *         lt_tensor *x = lt_from_data(images(step), LT_F32, 2, xs);  // your batch
 *         lt_tensor *y = lt_from_data(labels(step), LT_I64, 1, ys);
 *         lt_tensor *logits = lt_linear(lt_relu(lt_linear(x, w1, b1)), w2, NULL);
 *         lt_tensor *loss = lt_cross_entropy(logits, y, 0.0);
 *         lt_backward(loss);          // traces the backward pass, computes nothing
 *         lt_optim_step(opt);         // traces the update
 *         lt_optim_zero_grad(opt);
 *         lt_mark_step();             // forward + backward + update: ONE compiled graph
 *         printf("step %d loss %.4f\n", step, lt_item(loss));
 *         lt_scope_end();             // frees x, y, the hidden layer, the logits, the loss
 *     }
 *     lt_optim_free(opt);
 *     for (int i = 0; i < 3; i++) lt_free(params[i]);
 *     // lt_metric("LiveTensors") counts live handles; LT_METRICS=1 prints it at exit
 *
 * lt_model_new("resnet20", ...) and lt_model_forward give whole models with
 * PyTorch's parameter names; lazytensor's own `train` command
 * (tools/train.c, tools/net.c) is a complete example.
 *
 * Views (lt_slice, lt_transpose, ...) alias their base: an in-place op
 * through a view is seen through the base and every other alias, exactly as
 * in PyTorch eager.
 *
 * Errors: a function that returns a handle returns NULL on error and sets a
 * thread-local error (lt_error(), lt_error_message()) naming the function,
 * the argument and the values. A NULL operand makes an op return NULL without
 * overwriting the first error, so a chain of calls can be checked once.
 *
 * Scalars are C doubles and behave like Python floats in type promotion:
 * an integer or bool tensor combined with a scalar gives float32.
 *
 * Threads: the library is not thread-safe. It keeps one global state per
 * process (the pending graph, the compile cache, the tensor and buffer pools,
 * the RNG, metrics, the optimizer and model objects), like PyTorch/XLA's
 * per-device graph, and takes no locks. Any thread may call it, but never two
 * at once: when use moves from one thread to another, the program must order
 * the calls with a happens-before edge (a mutex, pthread_join, ...); then
 * handles, optimizers and models carry over unchanged. Calls from two threads
 * that overlap in time are undefined behaviour, even on different tensors.
 * The error state alone is per thread: lt_error() and lt_error_message() see
 * only errors raised by the calling thread, and lt_clear_error() clears only
 * its own. Kernels may run on an internal OpenMP pool; that is invisible to
 * the caller. (tests/test_threads.c holds this contract.)
 */
#ifndef LAZYTENSOR_H
#define LAZYTENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LT_MAX_DIMS 8

typedef struct lt_tensor lt_tensor;
/* LT_BF16: bfloat16 (the top 16 bits of a float32), stored as uint16_t;
 * conversions round to nearest even and keep NaN a NaN.
 * LT_U8: uint8 (images), as PyTorch's: its arithmetic wraps modulo 256, a
 * float converts by truncation toward zero then modulo 256, it promotes
 * below int32/int64 and above bool; appended last so the others keep
 * their numbers. */
typedef enum lt_dtype { LT_F32, LT_F64, LT_I32, LT_I64, LT_BOOL, LT_BF16, LT_U8 } lt_dtype;

/* Error codes returned by lt_error(). */
enum lt_status {
    LT_OK = 0,
    LT_ERR_NULL,      /* a NULL argument */
    LT_ERR_SHAPE,     /* shapes do not match or do not broadcast */
    LT_ERR_DTYPE,     /* dtype not accepted, or result cannot be cast */
    LT_ERR_ARG,       /* bad axis, index, size or value */
    LT_ERR_OVERFLOW,  /* element count or byte size overflows */
    LT_ERR_OOM,       /* an allocation failed */
    LT_ERR_STATE,     /* the call is not allowed now (e.g. in-place on a leaf requiring grad) */
    LT_ERR_IO,        /* a file could not be read or written */
    LT_ERR_FORMAT     /* a file is malformed */
};

/* ---- creation (new handles) -------------------------------------------- */
lt_tensor *lt_from_data(const void *data, lt_dtype dtype, int ndim, const int64_t *shape); /* copies */
lt_tensor *lt_zeros(lt_dtype dtype, int ndim, const int64_t *shape);
lt_tensor *lt_ones(lt_dtype dtype, int ndim, const int64_t *shape);
lt_tensor *lt_full(double value, lt_dtype dtype, int ndim, const int64_t *shape);
lt_tensor *lt_randn(lt_dtype dtype, int ndim, const int64_t *shape); /* N(0,1), seeded */
lt_tensor *lt_rand(lt_dtype dtype, int ndim, const int64_t *shape);  /* U[0,1), seeded */
lt_tensor *lt_arange(double start, double end, double step, lt_dtype dtype);
void       lt_manual_seed(uint64_t seed);

/* ---- handles ------------------------------------------------------------ */
void           lt_free(lt_tensor *t);                 /* NULL is a no-op */
int            lt_ndim(const lt_tensor *t);
const int64_t *lt_shape(const lt_tensor *t);          /* borrowed; valid while t lives */
lt_dtype       lt_dtype_of(const lt_tensor *t);
int64_t        lt_numel(const lt_tensor *t);
size_t         lt_dtype_size(lt_dtype dtype);
const char    *lt_dtype_name(lt_dtype dtype);
bool           lt_is_view(const lt_tensor *t);

/* ---- handle scopes -------------------------------------------------------- */
/* An autorelease pool for handles (as V8's HandleScope): every handle created
 * while a scope is open is freed by the matching lt_scope_end unless kept, so
 * nested calls such as lt_relu(lt_linear(x, w, b)) leak nothing. Scopes nest.
 * lt_scope_keep(t) keeps t past the innermost scope's end: t then belongs to
 * the enclosing scope (freed at its end unless kept again) or, outside every
 * scope, to the caller (lt_free). lt_free inside a scope is allowed. Handles
 * the library keeps for itself (model parameters, optimizer state, lt_grad)
 * are never in a scope. lt_metric("LiveTensors") counts the live handles. */
void       lt_scope_begin(void);
int        lt_scope_end(void);             /* handles freed; -1 (LT_ERR_STATE) when no scope is open */
lt_tensor *lt_scope_keep(lt_tensor *t);    /* returns t (not a new handle); NULL on error */

/* ---- sync --------------------------------------------------------------- */
int  lt_to_host(lt_tensor *t, void *dst, size_t nbytes);  /* 0 = ok; syncs what t needs */
double lt_item(lt_tensor *t);                            /* one-element tensor as double; NaN + error otherwise */
void lt_mark_step(void);                                 /* syncs every live tensor */

/* ---- errors and metrics -------------------------------------------------- */
int         lt_error(void);                        /* 0 = none; sticky until cleared */
const char *lt_error_message(void);
void        lt_clear_error(void);
double      lt_metric(const char *name);           /* counters/timers, e.g. "UncachedCompile"; NaN if unknown */
void        lt_metrics_reset(void);

/* ---- elementwise, out-of-place (new handle) ------------------------------ */
/* Broadcasting and type promotion as in PyTorch. */
lt_tensor *lt_add(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_sub(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_mul(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_div(lt_tensor *a, lt_tensor *b);     /* true division: integers give float32 */
lt_tensor *lt_maximum(lt_tensor *a, lt_tensor *b); /* NaN propagates */
lt_tensor *lt_minimum(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_pow(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_eq(lt_tensor *a, lt_tensor *b);      /* comparisons give LT_BOOL */
lt_tensor *lt_ne(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_lt(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_le(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_gt(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_ge(lt_tensor *a, lt_tensor *b);

lt_tensor *lt_add_scalar(lt_tensor *a, double s);
lt_tensor *lt_mul_scalar(lt_tensor *a, double s);
lt_tensor *lt_pow_scalar(lt_tensor *a, double exponent);
lt_tensor *lt_clamp(lt_tensor *a, double lo, double hi); /* -INFINITY / INFINITY: no bound */

lt_tensor *lt_neg(lt_tensor *a);
lt_tensor *lt_exp(lt_tensor *a);
lt_tensor *lt_log(lt_tensor *a);
lt_tensor *lt_sqrt(lt_tensor *a);
lt_tensor *lt_rsqrt(lt_tensor *a);
lt_tensor *lt_abs(lt_tensor *a);
lt_tensor *lt_relu(lt_tensor *a);
lt_tensor *lt_tanh(lt_tensor *a);
lt_tensor *lt_sigmoid(lt_tensor *a);
lt_tensor *lt_to_dtype(lt_tensor *a, lt_dtype dtype);   /* cast; always a new value */

lt_tensor *lt_lerp(lt_tensor *a, lt_tensor *b, double weight);    /* a + weight * (b - a) */
lt_tensor *lt_where(lt_tensor *cond, lt_tensor *a, lt_tensor *b); /* cond is LT_BOOL */
lt_tensor *lt_addcmul(lt_tensor *a, lt_tensor *t1, lt_tensor *t2, double value);
lt_tensor *lt_addcdiv(lt_tensor *a, lt_tensor *t1, lt_tensor *t2, double value);

/* ---- in-place: return their first argument (not a new handle), NULL on error */
/* The result is computed as the out-of-place op, must have a's shape, and must
 * be castable to a's dtype (float into an integer tensor is an error). */
lt_tensor *lt_add_(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_sub_(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_mul_(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_div_(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_maximum_(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_minimum_(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_pow_(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_add_scalar_(lt_tensor *a, double s);
lt_tensor *lt_mul_scalar_(lt_tensor *a, double s);
lt_tensor *lt_pow_scalar_(lt_tensor *a, double exponent);
lt_tensor *lt_clamp_(lt_tensor *a, double lo, double hi);
lt_tensor *lt_neg_(lt_tensor *a);
lt_tensor *lt_exp_(lt_tensor *a);
lt_tensor *lt_log_(lt_tensor *a);
lt_tensor *lt_sqrt_(lt_tensor *a);
lt_tensor *lt_rsqrt_(lt_tensor *a);
lt_tensor *lt_abs_(lt_tensor *a);
lt_tensor *lt_relu_(lt_tensor *a);
lt_tensor *lt_tanh_(lt_tensor *a);
lt_tensor *lt_sigmoid_(lt_tensor *a);
lt_tensor *lt_lerp_(lt_tensor *a, lt_tensor *b, double weight);
lt_tensor *lt_addcmul_(lt_tensor *a, lt_tensor *t1, lt_tensor *t2, double value);
lt_tensor *lt_addcdiv_(lt_tensor *a, lt_tensor *t1, lt_tensor *t2, double value);
lt_tensor *lt_copy_(lt_tensor *dst, lt_tensor *src);  /* src broadcasts to dst; cast to dst's dtype */
lt_tensor *lt_fill_(lt_tensor *a, double value);
lt_tensor *lt_zero_(lt_tensor *a);

/* ---- reductions (new handle) ---------------------------------------------- */
/* naxes 0 = all axes. sum of integers/bool gives LT_I64; mean needs floats. */
lt_tensor *lt_sum(lt_tensor *a, int naxes, const int *axes, bool keepdim);
lt_tensor *lt_mean(lt_tensor *a, int naxes, const int *axes, bool keepdim);
lt_tensor *lt_max(lt_tensor *a, int naxes, const int *axes, bool keepdim);
lt_tensor *lt_min(lt_tensor *a, int naxes, const int *axes, bool keepdim);
lt_tensor *lt_argmax(lt_tensor *a, int dim, bool keepdim);  /* LT_I64, first maximum */
lt_tensor *lt_argmin(lt_tensor *a, int dim, bool keepdim);
lt_tensor *lt_softmax(lt_tensor *a, int dim);
lt_tensor *lt_log_softmax(lt_tensor *a, int dim);

/* ---- structure (new handle) ------------------------------------------------ */
lt_tensor *lt_matmul(lt_tensor *a, lt_tensor *b);   /* torch.matmul rules, batched broadcasting */
lt_tensor *lt_cat(int n, lt_tensor *const *tensors, int dim);
lt_tensor *lt_clone(lt_tensor *a);                  /* independent copy */
lt_tensor *lt_contiguous(lt_tensor *a);             /* independent copy */

/* ---- views: new handles that ALIAS a's storage ------------------------------ */
/* Negative dims count from the end, as in PyTorch. */
lt_tensor *lt_view(lt_tensor *a, int ndim, const int64_t *shape);     /* -1 allowed; error if not expressible */
lt_tensor *lt_reshape(lt_tensor *a, int ndim, const int64_t *shape);  /* view when possible, else a copy */
lt_tensor *lt_flatten(lt_tensor *a, int start_dim, int end_dim);      /* reshape semantics */
lt_tensor *lt_transpose(lt_tensor *a, int dim0, int dim1);
lt_tensor *lt_t(lt_tensor *a);                                        /* 0-, 1- or 2-D */
lt_tensor *lt_permute(lt_tensor *a, int ndim, const int *dims);
lt_tensor *lt_slice(lt_tensor *a, int dim, int64_t start, int64_t end, int64_t step); /* bounds clamped */
lt_tensor *lt_narrow(lt_tensor *a, int dim, int64_t start, int64_t length);
lt_tensor *lt_select(lt_tensor *a, int dim, int64_t index);
lt_tensor *lt_expand(lt_tensor *a, int ndim, const int64_t *shape);   /* -1 keeps a size; read-only */
lt_tensor *lt_unsqueeze(lt_tensor *a, int dim);
lt_tensor *lt_squeeze(lt_tensor *a, int dim);                         /* no-op if size != 1 */
lt_tensor *lt_diagonal(lt_tensor *a, int64_t offset, int dim1, int dim2);
lt_tensor *lt_as_strided(lt_tensor *a, int ndim, const int64_t *shape,
                         const int64_t *strides, int64_t storage_offset); /* relative to a's storage */


/* ---- autograd (DESIGN 7) ----------------------------------------------------- */
/* Autograd sits below functionalization and records pure ops; backward is
 * traced lazily like everything else, so one lt_mark_step after the optimizer
 * step runs forward, backward and update as one graph. */
void       lt_set_requires_grad(lt_tensor *t, bool requires_grad); /* leaves only */
bool       lt_requires_grad(const lt_tensor *t);
int        lt_backward(lt_tensor *loss);                       /* scalar loss; 0 = ok */
int        lt_backward_with(lt_tensor *t, lt_tensor *grad);    /* grad has t's shape */
lt_tensor *lt_grad(lt_tensor *t);          /* borrowed: the accumulated gradient, NULL if none */
void       lt_zero_grad(lt_tensor *t);     /* drops the accumulated gradient */
lt_tensor *lt_detach(lt_tensor *t);        /* new handle aliasing t, outside the graph */
void       lt_no_grad_begin(void);         /* nests */
void       lt_no_grad_end(void);
bool       lt_grad_enabled(void);

/* ---- autocast (mixed precision) ------------------------------------------------ */
/* Inside a bfloat16 region (PyTorch's torch.autocast("cpu", torch.bfloat16)),
 * lt_conv2d, lt_linear and lt_matmul cast their float32 operands to
 * bfloat16 (one CAST node each, differentiable) and return bfloat16,
 * accumulating in float32; the losses cast bfloat16 operands to float32;
 * other ops run in their operands' dtype. A linear's float32 weight gets
 * its gradient's float32 sums unrounded (PyTorch rounds them to bfloat16
 * first). Regions nest; begin(LT_F32)
 * opens a region with autocast off. Backward is traced with autocast off.
 * 0 = ok; -1 and an error for another dtype or an unbalanced end. */
int      lt_autocast_begin(lt_dtype dtype);
int      lt_autocast_end(void);
lt_dtype lt_autocast_dtype(void);  /* LT_BF16 inside a bfloat16 region, else LT_F32 */

/* ---- neural-network ops (new handles) ------------------------------------------ */
/* x (N, C, H, W), w (O, C/groups, kH, kW), bias (O) or NULL. */
lt_tensor *lt_conv2d(lt_tensor *x, lt_tensor *w, lt_tensor *bias, const int64_t stride[2],
                     const int64_t padding[2], const int64_t dilation[2], int64_t groups);
lt_tensor *lt_max_pool2d(lt_tensor *x, const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2]);
lt_tensor *lt_avg_pool2d(lt_tensor *x, const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2]);
lt_tensor *lt_adaptive_avg_pool2d(lt_tensor *x, const int64_t out_hw[2]);
/* training: batch statistics, running stats updated in place (momentum as
 * PyTorch, unbiased variance for the running estimate); eval: running stats.
 * weight/bias/running_* may be NULL (affine=False / no tracking). */
lt_tensor *lt_batch_norm(lt_tensor *x, lt_tensor *weight, lt_tensor *bias, lt_tensor *running_mean,
                         lt_tensor *running_var, bool training, double momentum, double eps);
lt_tensor *lt_linear(lt_tensor *x, lt_tensor *w, lt_tensor *bias);   /* x @ w^T + bias; bias may be NULL */
lt_tensor *lt_dropout(lt_tensor *x, double p, bool training);        /* seeded by lt_manual_seed */
lt_tensor *lt_nll_loss(lt_tensor *logp, lt_tensor *target);         /* (N, C) log-probs, (N) int64; mean */
lt_tensor *lt_cross_entropy(lt_tensor *logits, lt_tensor *target, double label_smoothing); /* mean */
lt_tensor *lt_mse_loss(lt_tensor *a, lt_tensor *b);                  /* mean */
lt_tensor *lt_gather(lt_tensor *a, int dim, lt_tensor *index);       /* index int64 */
lt_tensor *lt_index_select(lt_tensor *a, int dim, lt_tensor *index); /* index 1-D int64 */
lt_tensor *lt_embedding(lt_tensor *weight, lt_tensor *indices);      /* (V, D), int64 (...) -> (..., D) */
/* Transformers (issue 16). */
lt_tensor *lt_erf(lt_tensor *a);
lt_tensor *lt_erf_(lt_tensor *a);                                    /* returns a */
lt_tensor *lt_gelu(lt_tensor *x, bool tanh_form);                    /* tanh_form: approximate='tanh' */
/* Normalizes over the last nnorm dims of x (PyTorch's normalized_shape =
 * those dims); weight and bias have that shape, or are NULL, and x's dtype
 * (or float32 with a bfloat16 x: autocast's activations, float32
 * parameters; the result has x's dtype). */
lt_tensor *lt_layer_norm(lt_tensor *x, int nnorm, lt_tensor *weight, lt_tensor *bias, double eps);
/* softmax(scale q k^T [+ causal mask]) v with dropout p on the probabilities
 * (seeded by lt_manual_seed); q, k, v one shape (..., T, D); scale 0 means
 * 1/sqrt(D). The cpu backend never materializes the (T, T) matrix. */
lt_tensor *lt_scaled_dot_product_attention(lt_tensor *q, lt_tensor *k, lt_tensor *v, bool causal, double dropout_p,
                                           double scale);

/* ---- for front ends: the ops behind another framework's kernels ------------------ */
/* The PyTorch device (python/_torch/) maps each aten kernel torch calls, the
 * backward ones included, to one call here. New handles; arguments borrowed. */
/* elementwise and activations */
lt_tensor *lt_add_scaled(lt_tensor *a, lt_tensor *b, double alpha);  /* a + alpha b: add/sub with alpha */
lt_tensor *lt_add_scaled_(lt_tensor *a, lt_tensor *b, double alpha); /* returns a */
/* Integral scalars, as a Python int: an integer tensor keeps its dtype,
 * bool gives int64; a floating tensor as lt_add_scalar ... lt_clamp.
 * lt_clamp_int's bounds are integers or -INFINITY / INFINITY. */
lt_tensor *lt_add_scalar_int(lt_tensor *a, int64_t s);
lt_tensor *lt_mul_scalar_int(lt_tensor *a, int64_t s);
lt_tensor *lt_pow_scalar_int(lt_tensor *a, int64_t exponent);  /* exponent >= 0 for an integer tensor */
lt_tensor *lt_clamp_int(lt_tensor *a, double lo, double hi);
/* a against a scalar, in a's dtype (the scalar cast to it as torch does;
 * integer tensors compare exactly): LT_BOOL. */
lt_tensor *lt_eq_scalar(lt_tensor *a, double s);
lt_tensor *lt_ne_scalar(lt_tensor *a, double s);
lt_tensor *lt_lt_scalar(lt_tensor *a, double s);
lt_tensor *lt_le_scalar(lt_tensor *a, double s);
lt_tensor *lt_gt_scalar(lt_tensor *a, double s);
lt_tensor *lt_ge_scalar(lt_tensor *a, double s);
lt_tensor *lt_masked_fill(lt_tensor *a, lt_tensor *mask, double value); /* mask LT_BOOL, broadcasts */
lt_tensor *lt_sign(lt_tensor *a);                                       /* -1, 0, 1; 0 for NaN */
lt_tensor *lt_silu(lt_tensor *a);                                       /* x sigmoid(x) */
lt_tensor *lt_hardswish(lt_tensor *a);                                  /* x relu6(x + 3) / 6 */
lt_tensor *lt_hardsigmoid(lt_tensor *a);                                /* relu6(x + 3) / 6 */
/* The backward ops torch's autograd calls: g times the derivative at x
 * (or, for sigmoid and tanh, at the forward's output). */
lt_tensor *lt_silu_backward(lt_tensor *g, lt_tensor *x);
lt_tensor *lt_hardswish_backward(lt_tensor *g, lt_tensor *x);
lt_tensor *lt_hardsigmoid_backward(lt_tensor *g, lt_tensor *x);
lt_tensor *lt_sigmoid_backward(lt_tensor *g, lt_tensor *out);
lt_tensor *lt_tanh_backward(lt_tensor *g, lt_tensor *out);
lt_tensor *lt_threshold_backward(lt_tensor *g, lt_tensor *x, double threshold); /* relu's: 0 where x <= threshold */
lt_tensor *lt_hardtanh_backward(lt_tensor *g, lt_tensor *x, double lo, double hi); /* 0 where x <= lo or x >= hi */
lt_tensor *lt_gelu_backward(lt_tensor *g, lt_tensor *x, bool tanh_form);
/* Division rounded toward zero / down (torch's rounding_mode 'trunc' /
 * 'floor'); integers stay integers, and divide by zero to 0 (torch raises). */
lt_tensor *lt_div_trunc(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_div_floor(lt_tensor *a, lt_tensor *b);
/* lerp with a tensor weight (broadcasting; a, b and weight share one
 * floating dtype, as torch requires); the _ form returns a. */
lt_tensor *lt_lerp_tensor(lt_tensor *a, lt_tensor *b, lt_tensor *weight);
lt_tensor *lt_lerp_tensor_(lt_tensor *a, lt_tensor *b, lt_tensor *weight);
/* Bitwise and, or, xor, not of integer and bool tensors (promoted as
 * torch's; floats are an error); the _ forms return a. */
lt_tensor *lt_bitwise_and(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_bitwise_or(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_bitwise_xor(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_bitwise_not(lt_tensor *a);
lt_tensor *lt_bitwise_and_(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_bitwise_or_(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_bitwise_xor_(lt_tensor *a, lt_tensor *b);
lt_tensor *lt_bitwise_not_(lt_tensor *a);

/* reductions, structure, matmul, indexing, softmax, losses */
/* Variance / standard deviation, floats only: sum((x - mean)^2) over the
 * axes divided by max(0, N - correction) (1: Bessel's, torch's default). */
lt_tensor *lt_var(lt_tensor *a, int naxes, const int *axes, double correction, bool keepdim);
lt_tensor *lt_std(lt_tensor *a, int naxes, const int *axes, double correction, bool keepdim);
/* Cumulative sum along dim (reverse: from the last element back, the
 * backward's form); integers and bool give LT_I64, as torch's. */
lt_tensor *lt_cumsum(lt_tensor *a, int dim, bool reverse);
/* Reversed along dims (a copy, as torch.flip; cumsum's backward in torch). */
lt_tensor *lt_flip(lt_tensor *a, int ndims, const int *dims);
/* softmax / log_softmax backward from the forward's output (PyTorch's
 * _softmax_backward_data, _log_softmax_backward_data); one floating dtype. */
lt_tensor *lt_softmax_backward(lt_tensor *grad_out, lt_tensor *out, int dim);
lt_tensor *lt_log_softmax_backward(lt_tensor *grad_out, lt_tensor *out, int dim);
/* aten's nll_loss_forward without class weights: logp (N, C) with target (N)
 * int64, or (C) with a 0-d target; reduction as PyTorch's enum: 0 none
 * (result (N), or 0-d), 1 mean, 2 sum; a target equal to ignore_index adds
 * nothing and is not counted (all ignored, mean: NaN). total_weight (may be
 * NULL) receives a new 0-d handle in logp's dtype: the number of targets
 * counted (0 for reduction none on a batch, as PyTorch). */
lt_tensor *lt_nll_loss_forward(lt_tensor *logp, lt_tensor *target, int reduction, int64_t ignore_index,
                               lt_tensor **total_weight);
/* Its gradient for logp (logp lends its shape): grad_out is 0-d (mean, sum)
 * or target's shape (none); mean divides it by total_weight, as PyTorch's
 * -(grad / total_weight) at each counted target, 0 elsewhere. */
lt_tensor *lt_nll_loss_backward(lt_tensor *grad_out, lt_tensor *logp, lt_tensor *target, lt_tensor *total_weight,
                                int reduction, int64_t ignore_index);
/* mse_loss with a reduction (0 none: a's broadcast shape, 1 mean, 2 sum)
 * and its gradient for a: ((a - b) norm) grad_out, norm 2 / numel (mean)
 * or 2; a and b of one shape and dtype. */
lt_tensor *lt_mse_loss_ex(lt_tensor *a, lt_tensor *b, int reduction);
lt_tensor *lt_mse_loss_backward(lt_tensor *grad_out, lt_tensor *a, lt_tensor *b, int reduction);
/* base + src added at index along dim (torch.scatter_add: index int64 of
 * base's ndim, no larger than src, nor than base off dim); base + src rows
 * added at the 1-D index's rows of dim (torch.index_add); the embedding's
 * weight gradient (num_weights, D) from grad_out (indices' shape..., D). */
lt_tensor *lt_scatter_add(lt_tensor *base, int dim, lt_tensor *index, lt_tensor *src);
lt_tensor *lt_index_add(lt_tensor *base, int dim, lt_tensor *index, lt_tensor *src);
lt_tensor *lt_embedding_backward(lt_tensor *grad_out, lt_tensor *indices, int64_t num_weights);
/* torch's a[index] with one integer tensor (int64 or int32) at dim: a's
 * shape with dim replaced by index's shape, negative indices counting from
 * the end; and its accumulating put (index_put_ with accumulate=True):
 * base with values (lt_index's result shape) added at index along dim. */
lt_tensor *lt_index(lt_tensor *a, int dim, lt_tensor *index);
lt_tensor *lt_index_put_add(lt_tensor *base, int dim, lt_tensor *index, lt_tensor *values);

/* nn: convolution, normalization, pooling, dropout, random */
/* conv2d's gradients (aten's convolution_backward): in_shape / w_shape are
 * the forward's x (N, C, H, W) and w (O, C/groups, kH, kW) shapes; the bias
 * gradient is lt_sum of grad_out over (0, 2, 3). */
lt_tensor *lt_conv2d_backward_input(lt_tensor *grad_out, lt_tensor *w, const int64_t in_shape[4],
                                    const int64_t stride[2], const int64_t padding[2], const int64_t dilation[2],
                                    int64_t groups);
lt_tensor *lt_conv2d_backward_weight(lt_tensor *grad_out, lt_tensor *x, const int64_t w_shape[4],
                                     const int64_t stride[2], const int64_t padding[2], const int64_t dilation[2],
                                     int64_t groups);
/* lt_batch_norm that also returns (new handle in *stats) the (2, C) batch
 * statistics [mean; biased variance] when it used them (training, or no
 * running stats), else *stats = NULL. The backward ops take either stats or
 * the running pair (eval), exactly one of the two: dx, and the (2, C)
 * [grad_weight; grad_bias]. */
lt_tensor *lt_batch_norm_ex(lt_tensor *x, lt_tensor *weight, lt_tensor *bias, lt_tensor *running_mean,
                            lt_tensor *running_var, bool training, double momentum, double eps, lt_tensor **stats);
lt_tensor *lt_batch_norm_backward_input(lt_tensor *grad_out, lt_tensor *x, lt_tensor *weight, lt_tensor *stats,
                                        lt_tensor *running_mean, lt_tensor *running_var, double eps);
lt_tensor *lt_batch_norm_backward_params(lt_tensor *grad_out, lt_tensor *x, lt_tensor *stats,
                                         lt_tensor *running_mean, lt_tensor *running_var, double eps);
/* Layer norm over the last nnorm dims: its row statistics (2, x's leading
 * dims, 1 per normalized dim) [mean; 1/sqrt(biased var + eps)], dx, and
 * the (2, normalized shape) [grad_weight; grad_bias] (both recompute the
 * statistics from x; float32 for a bfloat16 x). */
lt_tensor *lt_layer_norm_stats(lt_tensor *x, int nnorm, double eps);
lt_tensor *lt_layer_norm_backward_input(lt_tensor *grad_out, lt_tensor *x, lt_tensor *weight, int nnorm,
                                        double eps);
lt_tensor *lt_layer_norm_backward_params(lt_tensor *grad_out, lt_tensor *x, int nnorm, double eps);
/* Pooling with PyTorch's options: ceil_mode, count_include_pad and
 * divisor_override (0: none) of the average; x (N, C, H, W) or (C, H, W).
 * lt_max_pool2d_indices: int64, each window's maximum as its offset h*W+w
 * in the plane (aten's max_pool2d_with_indices). The backward ops take the
 * forward's arguments (max pooling recomputes the argmax from x). An
 * integer average is PyTorch's: the sum divided with truncation. */
lt_tensor *lt_max_pool2d_ex(lt_tensor *x, const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2],
                            bool ceil_mode);
lt_tensor *lt_max_pool2d_indices(lt_tensor *x, const int64_t kernel[2], const int64_t stride[2],
                                 const int64_t padding[2], bool ceil_mode);
lt_tensor *lt_max_pool2d_backward(lt_tensor *grad_out, lt_tensor *x, const int64_t kernel[2], const int64_t stride[2],
                                  const int64_t padding[2], bool ceil_mode);
lt_tensor *lt_avg_pool2d_ex(lt_tensor *x, const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2],
                            bool ceil_mode, bool count_include_pad, int64_t divisor_override);
lt_tensor *lt_avg_pool2d_backward(lt_tensor *grad_out, const int64_t in_shape[4], const int64_t kernel[2],
                                  const int64_t stride[2], const int64_t padding[2], bool ceil_mode,
                                  bool count_include_pad, int64_t divisor_override);
lt_tensor *lt_adaptive_avg_pool2d_backward(lt_tensor *grad_out, const int64_t in_shape[4]);
/* Seeded fills computed in the graph (one node; the seed comes from
 * lt_manual_seed's generator and is a runtime parameter, so a new draw
 * every step never recompiles): uniform in [from, to), normal (mean, std),
 * bernoulli (1 with probability p; any dtype). */
lt_tensor *lt_rand_uniform(lt_dtype dtype, int ndim, const int64_t *shape, double from, double to);
lt_tensor *lt_rand_normal(lt_dtype dtype, int ndim, const int64_t *shape, double mean, double std);
lt_tensor *lt_rand_bernoulli(lt_dtype dtype, int ndim, const int64_t *shape, double p);

/* ---- tensor files ----------------------------------------------------------------- */
/* safetensors format; the write goes to PATH.tmp, is flushed and renamed. */
int lt_save_safetensors(const char *path, int n, const char *const *names, lt_tensor *const *tensors);
/* Loads every tensor of the file: *names and *tensors are malloc'd arrays of
 * n entries (free each name with free(), each tensor with lt_free, then the
 * arrays with free()). Returns n >= 0, or -1 with an error set. */
int lt_load_safetensors(const char *path, char ***names, lt_tensor ***tensors);
/* The same with string metadata (the header's "__metadata__"), e.g. a
 * checkpoint's step count. Saving borrows everything. Loading: the metadata
 * outputs are all NULL (ignored) or all set; *meta_keys / *meta_values are
 * malloc'd arrays of *nmeta malloc'd strings, freed like the names. */
int lt_save_safetensors_meta(const char *path, int n, const char *const *names, lt_tensor *const *tensors,
                             int nmeta, const char *const *meta_keys, const char *const *meta_values);
int lt_load_safetensors_meta(const char *path, char ***names, lt_tensor ***tensors, int *nmeta,
                             char ***meta_keys, char ***meta_values);

/* ---- observability (DESIGN 8) ----------------------------------------------------- */
/* Switches, read once at the first call:
 *   LT_METRICS=1        print lt_metrics_report() to stderr at exit
 *   LT_TRACE_FILE=f     write a Chrome trace (Perfetto, chrome://tracing): per step the
 *                       spans trace, sync, graph key, cache lookup, compile (build graph,
 *                       backend compile, explain miss), execute; valid JSON once the
 *                       process exits
 *   LT_TRACE_KERNELS=1  with LT_TRACE_FILE: one span per kernel
 *   LT_DUMP_IR=dir      write every newly compiled graph as dir/graph_NNNN.txt and .dot
 * Metric names follow PyTorch/XLA's (MarkStep, CachedCompile, UncachedCompile,
 * CompileTime, ExecuteTime, TraceTime, TensorsGraphSize, ...). lt_metric("CompileTime")
 * is the total in seconds; timers also answer "CompileTime.count", ".max", ".p50"
 * (any percentile). TraceTime is measured per lt_mark_step, not per op: the wall time
 * since the previous step minus the syncs in between, so it includes the program's
 * own work between ops. The report lists a one-line reason for each uncached compile;
 * more than 3 uncached compiles in the last 20 steps (after the first 20) print a
 * warning on stderr. */
const char *lt_metrics_report(void);           /* borrowed text, valid until the next call */
void        lt_trace_begin(const char *name);  /* a user span on the timeline; nests; copies name */
void        lt_trace_end(void);                /* ends the innermost open user span */
/* Writes the graph that computes the tensors' current values (what a sync
 * would compile; nothing runs) as PATH_PREFIX.txt (one node per line: id, op,
 * dtype, shape, operands, attributes) and PATH_PREFIX.dot. Borrows the
 * tensors. 0, or -1 with an error set. */
int         lt_graph_dump(const char *path_prefix, int n, lt_tensor *const *tensors);

/* ---- optimizers (DESIGN 7) --------------------------------------------------------- */
/* PyTorch 1.13's single-tensor formulas. lt_optim_step updates each parameter
 * that has a gradient, in place and in no-grad mode, so the update joins the
 * lazy graph of forward and backward; hyperparameters are runtime scalars (a
 * schedule or Adam's bias correction never recompiles). The optimizer
 * BORROWS its parameters (they must outlive it) and owns its state. */
typedef struct lt_optim lt_optim;
lt_optim *lt_optim_sgd(int n, lt_tensor *const *params, double lr, double momentum, double dampening,
                       double weight_decay, bool nesterov);                 /* new; free with lt_optim_free */
lt_optim *lt_optim_adam(int n, lt_tensor *const *params, double lr, double beta1, double beta2, double eps,
                        double weight_decay, bool amsgrad);                 /* L2 penalty added to the gradient */
lt_optim *lt_optim_adamw(int n, lt_tensor *const *params, double lr, double beta1, double beta2, double eps,
                         double weight_decay, bool amsgrad);                /* decoupled weight decay */
void      lt_optim_free(lt_optim *o);                                       /* NULL is a no-op */
/* Parameter groups: group 0 is the constructor's; a new group copies group 0's
 * options (change them with lt_optim_set). Returns the group index or -1. */
int    lt_optim_add_group(lt_optim *o, int n, lt_tensor *const *params);
int    lt_optim_num_groups(const lt_optim *o);
/* Options by PyTorch's names: "lr", "momentum", "dampening", "weight_decay",
 * "nesterov", "maximize", "beta1", "beta2", "eps", "amsgrad" (flags: 0 / 1).
 * group -1 = every group. get returns NaN for an unknown name or group. */
int    lt_optim_set(lt_optim *o, int group, const char *name, double value);
double lt_optim_get(const lt_optim *o, int group, const char *name);
void   lt_optim_set_lr(lt_optim *o, double lr);                             /* every group */
int    lt_optim_step(lt_optim *o);                                          /* 0 = ok; traces, does not sync */
/* lt_optim_step first clips the gradients it uses to a total 2-norm of
 * max_norm, as lt_clip_grad_norm_ over every parameter (0: off, the
 * default); the only way to clip with a sharded optimizer
 * (lt_dist_set_shard_optimizer). 0, or -1 for a negative or infinite value. */
int    lt_optim_set_max_grad_norm(lt_optim *o, double max_norm);
/* Bytes of this rank's optimizer state (sharded: its chunks only). */
size_t lt_optim_state_bytes(const lt_optim *o);
void   lt_optim_zero_grad(lt_optim *o);                                     /* lt_zero_grad on each parameter */
/* torch.nn.utils.clip_grad_norm_: scales the gradients of params (those
 * that have one) in place by min(1, max_norm / (total_norm + 1e-6)).
 * Returns a new 0-d handle holding the total 2-norm, still lazy (no sync),
 * or NULL with an error set (no parameter has a gradient: a 0 norm). */
lt_tensor *lt_clip_grad_norm_(int n, lt_tensor *const *params, double max_norm);
/* Checkpoints. State tensors are named "<slot>.<i>", i = the parameter's index
 * over all groups in order: SGD "momentum_buffer.<i>"; Adam/AdamW "exp_avg.<i>",
 * "exp_avg_sq.<i>", "max_exp_avg_sq.<i>" (amsgrad). lt_optim_state fills up to
 * max BORROWED names and tensors (valid until the next lt_optim_state, step or
 * free) and returns the total count (max 0: count only). lt_optim_load_state
 * copies the given tensors (borrowed) into the state. Steps are per parameter,
 * as in PyTorch; i = -1: the largest (get) or every parameter (set). */
int     lt_optim_num_params(const lt_optim *o);
int     lt_optim_state(lt_optim *o, int max, const char **names, lt_tensor **tensors);
int     lt_optim_load_state(lt_optim *o, int n, const char *const *names, lt_tensor *const *tensors);
int64_t lt_optim_get_step(const lt_optim *o, int i);
int     lt_optim_set_step(lt_optim *o, int i, int64_t step);

/* Learning-rate schedules over every group of an optimizer (BORROWED; it must
 * outlive the schedule), in PyTorch's recursive form: call lt_sched_step once
 * per epoch after the optimizer steps, as scheduler.step(). */
typedef struct lt_sched lt_sched;
lt_sched *lt_sched_step_lr(lt_optim *o, int64_t step_size, double gamma);  /* new; lt_sched_free */
lt_sched *lt_sched_cosine(lt_optim *o, int64_t t_max, double eta_min);     /* CosineAnnealingLR */
void      lt_sched_step(lt_sched *s);
int64_t   lt_sched_epoch(const lt_sched *s);
void      lt_sched_free(lt_sched *s);

/* ---- models (DESIGN 7) -------------------------------------------------------------- */
/* "mlp" (28x28 inputs: in_channels*784 -> 256 -> 128 -> classes, ReLU),
 * "resnet20" (CIFAR layout: 3x3 stem, 16/32/64 channels, 3x3 BasicBlocks, 1x1
 * conv + BN shortcut where the shape changes), "resnet18", "resnet50"
 * (torchvision's ImageNet layout and parameter names: conv1.weight, bn1.*,
 * layer1.0.conv1.weight, ..., fc.weight). Initialized as PyTorch/torchvision
 * do, from the lt_manual_seed generator; the new tensors are materialized
 * data. A model starts in training mode and owns its tensors. */
typedef struct lt_model lt_model;
lt_model  *lt_model_new(const char *name, int in_channels, int num_classes); /* new; lt_model_free */
lt_model  *lt_model_mlp(int nsizes, const int64_t *sizes);  /* Linear fc1..fc(nsizes-1), ReLU between */
/* GPT-2 (nanoGPT's layout and names, issue 16): pre-norm blocks, learned
 * position embeddings, the output projection tied to the token embedding,
 * GPT-2's initialization. lt_model_forward takes (B, T) int64 tokens, T <=
 * block_size, and returns (B, T, vocab_size) logits. lt_model_new("gpt",
 * 1, vocab) is n_layer 6, n_head 6, n_embd 384, block_size 256. */
typedef struct lt_gpt_config {
    int64_t n_layer, n_head, n_embd, block_size, vocab_size;
    double dropout; /* embeddings, residuals and attention probabilities, when training */
} lt_gpt_config;
lt_model  *lt_model_gpt(const lt_gpt_config *cfg);           /* new; lt_model_free */
void       lt_model_free(lt_model *m);                       /* NULL is a no-op */
lt_tensor *lt_model_forward(lt_model *m, lt_tensor *x);      /* new handle: logits (N, classes) */
void       lt_model_train(lt_model *m, bool training);       /* BN: batch statistics vs running ones */
bool       lt_model_is_training(const lt_model *m);
/* Trainable parameters (for an optimizer) / the whole state (parameters and
 * buffers: running_mean, running_var, num_batches_tracked) in PyTorch's
 * state_dict order. The arrays, tensors and names are BORROWED: valid while
 * the model lives. Returns the count, -1 on error. */
int        lt_model_params(lt_model *m, lt_tensor ***params, const char ***names);
int        lt_model_state(lt_model *m, lt_tensor ***tensors, const char ***names);
/* Copies tensors (borrowed) into the model's state by name, e.g. from
 * lt_load_safetensors. strict: the names must be exactly the model's. Returns
 * the number copied, -1 on error (nothing copied). */
int        lt_model_load_state(lt_model *m, int n, const char *const *names, lt_tensor *const *tensors,
                               bool strict);

/* ---- datasets (src/data) ---------------------------------------------------------- */
/* The datasets and batch loader of `lazytensor train`, for programs outside the
 * tree: the same dataset, batch size and seed give the same batches. Pixels
 * are normalized floats (N, C, H, W), labels int64 (N). Not thread-safe, like
 * the rest of the library. */
typedef struct lt_dataset lt_dataset;
typedef struct lt_loader lt_loader;
/* Fashion-MNIST's train (60,000) or test (10,000) split from dir (NULL: the
 * Debian package's /usr/share/datasets/fashion-mnist); LT_ERR_IO if absent. */
lt_dataset *lt_dataset_fashion_mnist(const char *dir, bool train);          /* new; lt_dataset_free */
/* Generated images, deterministic per (seed, index); each class has its own
 * pattern under the noise. */
lt_dataset *lt_dataset_fake(int64_t n, int channels, int image_size, int classes, uint64_t seed);
void        lt_dataset_free(lt_dataset *ds);                                 /* NULL is a no-op */
int64_t     lt_dataset_size(const lt_dataset *ds);                           /* samples; -1 on error */
int         lt_dataset_info(const lt_dataset *ds, int *channels, int *height, int *width, int *classes);
/* A loader BORROWS its dataset (it must outlive the loader). shuffle: a new
 * order each epoch from (seed, epoch); augment: random crop (pad 2) and flip. */
lt_loader  *lt_loader_new(const lt_dataset *ds, int64_t batch, uint64_t seed, bool shuffle, bool augment);
void        lt_loader_free(lt_loader *loader);                                    /* NULL is a no-op */
int64_t     lt_loader_num_batches(const lt_loader *loader);                       /* full batches per epoch */
int64_t     lt_loader_batch_size(const lt_loader *loader);
/* Batch b of epoch `epoch`: *x and *y become NEW handles. Returns the rows
 * (fewer than the batch size only for the last partial batch), 0 past the end
 * (*x, *y NULL), or -1 with an error set. */
int64_t     lt_loader_batch(lt_loader *loader, int64_t epoch, int64_t b, lt_tensor **x, lt_tensor **y);

/* An image folder in torchvision's ImageFolder layout, DIR/<split>/<class>/<image>
 * (.jpg, .jpeg, .png; class index = the class folder's place in sorted order),
 * decoded and transformed as torchvision does: a loader with augment runs
 * RandomResizedCrop(image_size) + RandomHorizontalFlip, without it
 * Resize(resize) + CenterCrop(image_size); then ToTensor and Normalize(mean, std).
 * Its loaders decode in `workers` threads (which never call the library) up to
 * `prefetch` batches ahead: ask for batches in order. A batch depends only on
 * (seed, epoch, b), not on the number of workers. A broken file is skipped
 * with one warning on stderr naming it (a stand-in chosen from its index takes
 * its place) and counted, unless fail_bad. With shuffle, a loader drops the
 * last partial batch as training does (lt_loader_batch returns 0 for it). */
typedef struct lt_imagefolder_opts {
    int image_size;        /* side of the square output */
    int channels;          /* 3: RGB; 1: luma, as PIL's convert("L") */
    int resize;            /* without augment: the short side before the center crop; 0: crop only */
    float mean[3], std[3]; /* per channel (the first `channels`) */
    int workers;           /* decoder threads; 0: decode on the calling thread */
    int prefetch;          /* batches decoded ahead, >= 1 */
    bool fail_bad;         /* a broken file fails lt_loader_batch instead of being skipped */
} lt_imagefolder_opts;
/* 224, 3 channels, resize 256, ImageNet's mean and std (RGB's: set mean[0]
 * and std[0] for one channel), one worker per core, prefetch 2, skip broken
 * files. */
lt_imagefolder_opts lt_imagefolder_defaults(void);
/* Lists DIR/split now (NULL opts: the defaults): no class folder, an empty
 * class folder or an unreadable directory is an error here; pixels are read
 * by the loaders. */
lt_dataset *lt_dataset_imagefolder(const char *dir, const char *split,
                                   const lt_imagefolder_opts *opts);  /* new; lt_dataset_free */
/* An image folder's class name (its folder's), BORROWED while ds lives; NULL
 * with an error for an index out of range or a dataset without names. */
const char *lt_dataset_class_name(const lt_dataset *ds, int index);
/* Broken image files this loader skipped so far (0 for in-memory datasets). */
int64_t     lt_loader_skipped(const lt_loader *loader);

/* ---- several processes (DESIGN 12) ------------------------------------------------- */
/* Data-parallel training over MPI: launch the same program N times with
 * `mpirun -np N prog` (or srun); each process is one rank. Launched that
 * way, the library joins the job at its first call (lt_dist_init makes it
 * explicit) and leaves it at exit; run by hand, or built without MPI, the
 * world is one rank and every collective is the identity. Each rank's
 * default thread count is its machine's cores divided by the ranks there.
 *
 * Collectives are traced ops like any other: ONE node each, in place
 * (through views too), run inside the step's compiled graph, every rank
 * running the same graphs in the same order. Before a graph with
 * collectives runs, the ranks compare its key: ranks that traced different
 * graphs get an error (LT_ERR_STATE) at that sync, never a deadlock or a
 * wrong sum. Collectives are not differentiable: on a tensor that requires
 * grad, call them between lt_no_grad_begin() and lt_no_grad_end(). */
typedef enum lt_reduce_op { LT_REDUCE_SUM, LT_REDUCE_MEAN, LT_REDUCE_MAX, LT_REDUCE_MIN } lt_reduce_op;
int  lt_dist_init(void);        /* idempotent; 0, or -1 with an error set */
int  lt_dist_rank(void);        /* 0 .. world size - 1 */
int  lt_dist_world_size(void);
void lt_dist_finalize(void);    /* optional (done at exit); collectives fail afterwards */
void lt_dist_abort(int code);   /* ends every rank of the job with code (exit(code) in a world of one) */
/* t := the reduction over the ranks of each rank's t, on every rank. MEAN
 * needs a float dtype; a bool SUM is a logical or. Returns t, NULL on error. */
lt_tensor *lt_all_reduce_(lt_tensor *t, lt_reduce_op op);
/* t := rank root's t, on every rank. Returns t, NULL on error. */
lt_tensor *lt_broadcast_(lt_tensor *t, int root);
/* Each parameter's accumulated gradient := its mean over the ranks, traced
 * (call it between lt_backward and lt_optim_step). Parameters without a
 * gradient are skipped; a world of one traces nothing. Borrows. 0 or -1. */
int  lt_dist_average_grads(int n, lt_tensor *const *params);
/* Gradient compression of lt_dist_average_grads (every rank must set the
 * same): LT_GRAD_COMPRESS_BF16 sends float32 gradients as bfloat16, half
 * the bytes on the wire, as PyTorch DDP's bf16_compress_hook; each rank
 * sums its 1/N slice of the ranks' bf16 values in float32, in rank order,
 * and rounds the mean once, so all ranks get the same bits (not those of
 * an uncompressed mean: each gradient is rounded to bf16 twice). Other
 * dtypes are averaged as before. Off (NONE) by default. 0, or -1 with an
 * error for an unknown mode. */
typedef enum lt_grad_compress { LT_GRAD_COMPRESS_NONE, LT_GRAD_COMPRESS_BF16 } lt_grad_compress;
int  lt_dist_set_grad_compress(lt_grad_compress mode);
/* Batch norm in training mode (lt_batch_norm and the models' layers) with
 * the statistics of the GLOBAL batch, all-reduced inside the graph, forward
 * and backward (PyTorch's SyncBatchNorm): N ranks x batch B/N then match one
 * rank x B. Off by default (per-rank statistics, as PyTorch DDP); a world
 * of one is unaffected. Every rank must set the same value. */
void lt_dist_set_sync_bn(bool on);
/* ZeRO-1: optimizer state sharded over the ranks. While on, in a world of
 * N > 1 ranks, optimizers made afterwards keep their state (SGD's momentum,
 * Adam's moments) only for this rank's 1/N chunk of each parameter,
 * flattened: N times less state per rank. Their lt_optim_step takes each
 * rank's own gradients, reduce-scatters their mean, clips them if
 * lt_optim_set_max_grad_norm asks, updates this rank's chunk of each
 * parameter and all-gathers the parameters, all traced into the step's
 * graph. Meanwhile lt_dist_average_grads does nothing (the step averages)
 * and lt_clip_grad_norm_ fails (no rank holds the averaged gradients:
 * clip with lt_optim_set_max_grad_norm). A sharded optimizer's
 * lt_optim_state and lt_optim_load_state deal in whole tensors, so a
 * checkpoint does not depend on the world size: lt_optim_state is then
 * collective (every rank calls it; it all-gathers the state and syncs),
 * and loading keeps this rank's chunk of each tensor. Every rank must set
 * the same value; off by default; a world of one is unaffected. */
void lt_dist_set_shard_optimizer(bool on);
/* ZeRO-1's collectives, for tensors cut into N chunks of c = ceil(n / N) of
 * their n elements, flattened and zero-padded. lt_reduce_scatter: a new (c)
 * tensor, this rank's chunk of the reduction over the ranks of each rank's
 * t. lt_dist_shard: a new (c) tensor, this rank's chunk of t (no
 * communication). lt_all_gather_: t := every rank's shard (c) in rank
 * order, its first n elements in t's shape; returns t. Borrow their
 * arguments; NULL on error. */
lt_tensor *lt_reduce_scatter(lt_tensor *t, lt_reduce_op op);
lt_tensor *lt_dist_shard(lt_tensor *t);
lt_tensor *lt_all_gather_(lt_tensor *t, lt_tensor *shard);

#ifdef __cplusplus
}
#endif
#endif
