/* Linear, Conv2d and BatchNorm2d: parameters, PyTorch's initializations,
 * and forward passes that are one public NN op each. */
#include "nn.h"

#include "../core/core.h"

#include <math.h>

int nn_linear_init(nn_linear *l, nn_registry *r, const char *name, int64_t in, int64_t out, bool bias) {
    memset(l, 0, sizeof *l);
    int64_t ws[2] = {out, in}, bs[1] = {out};
    double bound = in > 0 ? 1 / sqrt((double)in) : 0;
    l->weight = nn_uniform(2, ws, bound);
    if (nn_register(r, name, "weight", l->weight, true)) return -1;
    if (!bias) return 0;
    l->bias = nn_uniform(1, bs, bound);
    return nn_register(r, name, "bias", l->bias, true);
}

lt_tensor *nn_linear_forward(nn_linear *l, lt_tensor *x) { return lt_linear(x, l->weight, l->bias); }

void nn_linear_free(nn_linear *l) {
    lt_free(l->weight);
    lt_free(l->bias);
    memset(l, 0, sizeof *l);
}

int nn_conv2d_init(nn_conv2d *c, nn_registry *r, const char *name, int64_t in, int64_t out, int64_t k,
                   int64_t stride, int64_t padding, bool bias, nn_init init) {
    memset(c, 0, sizeof *c);
    c->stride[0] = c->stride[1] = stride;
    c->padding[0] = c->padding[1] = padding;
    c->dilation[0] = c->dilation[1] = 1;
    c->groups = 1;
    int64_t ws[4] = {out, in, k, k}, bs[1] = {out};
    double fan_in = (double)(in * k * k), fan_out = (double)(out * k * k);
    double bound = fan_in > 0 ? 1 / sqrt(fan_in) : 0;
    c->weight = init == NN_INIT_KAIMING_FAN_OUT ? nn_normal(4, ws, sqrt(2.0 / fan_out)) : nn_uniform(4, ws, bound);
    if (nn_register(r, name, "weight", c->weight, true)) return -1;
    if (!bias) return 0;
    c->bias = nn_uniform(1, bs, bound);
    return nn_register(r, name, "bias", c->bias, true);
}

lt_tensor *nn_conv2d_forward(nn_conv2d *c, lt_tensor *x) {
    return lt_conv2d(x, c->weight, c->bias, c->stride, c->padding, c->dilation, c->groups);
}

void nn_conv2d_free(nn_conv2d *c) {
    lt_free(c->weight);
    lt_free(c->bias);
    memset(c, 0, sizeof *c);
}

int nn_bn2d_init(nn_bn2d *b, nn_registry *r, const char *name, int64_t channels) {
    memset(b, 0, sizeof *b);
    b->momentum = 0.1;
    b->eps = 1e-5;
    int64_t cs[1] = {channels};
    b->one = nn_const(LT_I64, 0, NULL, 1);
    if (!b->one) return -1;
    /* state_dict order of torch.nn.BatchNorm2d */
    if (nn_register(r, name, "weight", b->weight = nn_const(LT_F32, 1, cs, 1), true) ||
        nn_register(r, name, "bias", b->bias = nn_const(LT_F32, 1, cs, 0), true) ||
        nn_register(r, name, "running_mean", b->running_mean = nn_const(LT_F32, 1, cs, 0), false) ||
        nn_register(r, name, "running_var", b->running_var = nn_const(LT_F32, 1, cs, 1), false) ||
        nn_register(r, name, "num_batches_tracked", b->num_batches_tracked = nn_const(LT_I64, 0, NULL, 0), false))
        return -1;
    return 0;
}

lt_tensor *nn_bn2d_forward(nn_bn2d *b, lt_tensor *x, bool training) {
    if (training) {
        /* Only counted: with a fixed momentum PyTorch does not use it either. */
        lt_no_grad_begin();
        lt_add_(b->num_batches_tracked, b->one);
        lt_no_grad_end();
    }
    /* Without running stats the layer normalizes with batch statistics in
     * eval mode too (PyTorch's bn_training). */
    return lt_batch_norm(x, b->weight, b->bias, b->running_mean, b->running_var, training || !b->running_mean,
                         b->momentum, b->eps);
}

void nn_bn2d_free(nn_bn2d *b) {
    lt_free(b->weight);
    lt_free(b->bias);
    lt_free(b->running_mean);
    lt_free(b->running_var);
    lt_free(b->num_batches_tracked);
    lt_free(b->one);
    memset(b, 0, sizeof *b);
}
