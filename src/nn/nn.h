/* nn: layers as plain C structs with init / forward / free, and the models
 * behind lt_model (MLP, ResNet-20/18/50). Parameter and buffer names are
 * torchvision's (conv1.weight, layer1.0.bn1.running_mean, fc.bias, ...), so
 * a state dict moves between PyTorch and lazytensor as a safetensors file.
 *
 * Ownership: a layer owns its tensors and frees them in nn_*_free. A
 * registry only BORROWS the tensors and owns the names; it lists the
 * model's state in PyTorch's state_dict order. */
#ifndef LT_NN_H
#define LT_NN_H

#include "lazytensor.h"

/* ---- registry (registry.c) ---- */
typedef struct nn_registry {
    int n, cap;
    lt_tensor **t;        /* borrowed */
    char **names;         /* owned */
    bool *is_param;       /* trainable parameter (else a buffer) */
    int np;               /* parameters only, in registration order */
    lt_tensor **params;   /* borrowed, built by nn_registry_finish */
    const char **pnames;  /* borrowed from names */
} nn_registry;

/* Registers `t` as prefix + "." + leaf (or leaf when prefix is empty). A
 * parameter is made a leaf that requires grad. Returns 0 or -1 (error set);
 * a NULL t (a failed creation) returns -1 without a new error. */
int nn_register(nn_registry *r, const char *prefix, const char *leaf, lt_tensor *t, bool is_param);
int nn_registry_finish(nn_registry *r);
void nn_registry_free(nn_registry *r);
/* prefix + "." + leaf into buf (for nested module names). */
const char *nn_join(char *buf, size_t n, const char *prefix, const char *leaf);

/* ---- initialization (init.c): values drawn on the host from the seeded
 * generator (lt_manual_seed), so parameters are data leaves, not pending IR. */
lt_tensor *nn_uniform(int ndim, const int64_t *shape, double bound);  /* U(-bound, bound) */
lt_tensor *nn_normal(int ndim, const int64_t *shape, double std);     /* N(0, std^2) */
lt_tensor *nn_const(lt_dtype dtype, int ndim, const int64_t *shape, double value);

/* ---- layers (layers.c) ---- */
typedef enum nn_init { NN_INIT_DEFAULT, NN_INIT_KAIMING_FAN_OUT } nn_init;

typedef struct nn_linear {
    lt_tensor *weight, *bias; /* (out, in), (out) or NULL */
} nn_linear;
/* PyTorch's default: kaiming_uniform_(a=sqrt(5)) = U(+-1/sqrt(in)), bias U(+-1/sqrt(in)). */
int nn_linear_init(nn_linear *l, nn_registry *r, const char *name, int64_t in, int64_t out, bool bias);
lt_tensor *nn_linear_forward(nn_linear *l, lt_tensor *x); /* new handle */
void nn_linear_free(nn_linear *l);

typedef struct nn_conv2d {
    lt_tensor *weight, *bias; /* (out, in, k, k), (out) or NULL */
    int64_t stride[2], padding[2], dilation[2], groups;
} nn_conv2d;
/* NN_INIT_DEFAULT: PyTorch's Conv2d default (as Linear, fan_in = in*k*k);
 * NN_INIT_KAIMING_FAN_OUT: torchvision ResNet's kaiming_normal_(mode='fan_out',
 * nonlinearity='relu') = N(0, 2 / (out*k*k)). */
int nn_conv2d_init(nn_conv2d *c, nn_registry *r, const char *name, int64_t in, int64_t out, int64_t k,
                   int64_t stride, int64_t padding, bool bias, nn_init init);
lt_tensor *nn_conv2d_forward(nn_conv2d *c, lt_tensor *x);
void nn_conv2d_free(nn_conv2d *c);

typedef struct nn_bn2d {
    lt_tensor *weight, *bias, *running_mean, *running_var, *num_batches_tracked;
    lt_tensor *one; /* I64 1, to count batches without a float round trip */
    double momentum, eps;
} nn_bn2d;
/* weight 1, bias 0, running_mean 0, running_var 1, momentum 0.1, eps 1e-5. */
int nn_bn2d_init(nn_bn2d *b, nn_registry *r, const char *name, int64_t channels);
lt_tensor *nn_bn2d_forward(nn_bn2d *b, lt_tensor *x, bool training);
void nn_bn2d_free(nn_bn2d *b);

/* ---- models ---- */
typedef struct nn_mlp {
    int nlayers;
    nn_linear *fc; /* fc1, fc2, ... */
} nn_mlp;
int nn_mlp_init(nn_mlp *m, nn_registry *r, int nsizes, const int64_t *sizes);
lt_tensor *nn_mlp_forward(nn_mlp *m, lt_tensor *x); /* flattens from dim 1; ReLU between layers */
void nn_mlp_free(nn_mlp *m);

typedef struct nn_block {
    bool bottleneck, has_down;
    nn_conv2d conv1, conv2, conv3, down_conv;
    nn_bn2d bn1, bn2, bn3, down_bn;
} nn_block;

typedef struct nn_resnet {
    bool imagenet_stem; /* 7x7/2 conv + 3x3/2 max pool; else a 3x3/1 conv */
    nn_conv2d conv1;
    nn_bn2d bn1;
    int nblocks;
    nn_block *blocks;
    nn_linear fc;
} nn_resnet;
/* depth 20 (CIFAR layout), 18 or 50 (torchvision layout). */
int nn_resnet_init(nn_resnet *m, nn_registry *r, int depth, int64_t in_channels, int64_t num_classes);
lt_tensor *nn_resnet_forward(nn_resnet *m, lt_tensor *x, bool training);
void nn_resnet_free(nn_resnet *m);

/* ---- GPT (gpt.c) ---- */
typedef struct nn_layer_norm {
    lt_tensor *weight, *bias; /* (E): 1 and 0 */
    double eps;
} nn_layer_norm;

typedef struct nn_gpt_block {
    nn_layer_norm ln_1, ln_2;
    nn_linear c_attn, attn_proj, c_fc, mlp_proj; /* attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj */
} nn_gpt_block;

typedef struct nn_gpt {
    lt_gpt_config cfg;
    lt_tensor *wte, *wpe; /* (V, E) also the output projection (tied), (block_size, E) */
    lt_tensor *pos;       /* int64 0 .. block_size - 1 */
    nn_gpt_block *blocks;
    nn_layer_norm ln_f;
} nn_gpt;
int nn_gpt_init(nn_gpt *m, nn_registry *r, const lt_gpt_config *cfg);
/* idx (B, T) int64, T <= block_size -> logits (B, T, V); dropout when training. */
lt_tensor *nn_gpt_forward(nn_gpt *m, lt_tensor *idx, bool training);
void nn_gpt_free(nn_gpt *m);

#endif
