/* ResNets with torchvision's structure and names.
 *
 * ResNet-18/50: torchvision.models.resnet18/50 (v1.5: a Bottleneck's stride
 * is on its 3x3 conv): 7x7/2 stem, 3x3/2 max pool, stages of BasicBlocks
 * [2,2,2,2] or Bottlenecks [3,4,6,3] with widths 64..512 (x4), a 1x1 conv + BN
 * "downsample" when the shape changes, global average pool, fc.
 *
 * ResNet-20: He et al. 2015's CIFAR network (3x3/1 stem with 16 channels, no
 * pool, 3 stages x 3 BasicBlocks of 16, 32, 64 channels, stride 2 at the
 * start of stages 2 and 3), with the paper's option B shortcut where the
 * shape changes: a 1x1 strided conv + BN named downsample.0/.1 as in
 * torchvision (option A's zero padding has no parameters to move between
 * frameworks, and B is what torchvision's blocks do).
 *
 * Initialization: ResNet-18/50 as torchvision (convs kaiming_normal_(fan_out,
 * relu)); ResNet-20 convs with nn.Conv2d's default, as the anchor's PyTorch
 * model; BN weight 1 bias 0 and fc PyTorch's Linear default for all three. */
#include "nn.h"

#include "../core/core.h"

static int block_init(nn_block *b, nn_registry *r, const char *name, bool bottleneck, int64_t in, int64_t planes,
                      int64_t stride, nn_init k) {
    char n1[96];
    int64_t expansion = bottleneck ? 4 : 1, out = planes * expansion;
    b->bottleneck = bottleneck;
    int rc = 0;
    if (bottleneck) {
        rc |= nn_conv2d_init(&b->conv1, r, nn_join(n1, sizeof n1, name, "conv1"), in, planes, 1, 1, 0, false, k);
        rc |= rc ? -1 : nn_bn2d_init(&b->bn1, r, nn_join(n1, sizeof n1, name, "bn1"), planes);
        rc |= rc ? -1 : nn_conv2d_init(&b->conv2, r, nn_join(n1, sizeof n1, name, "conv2"), planes, planes, 3,
                                       stride, 1, false, k);
        rc |= rc ? -1 : nn_bn2d_init(&b->bn2, r, nn_join(n1, sizeof n1, name, "bn2"), planes);
        rc |= rc ? -1 : nn_conv2d_init(&b->conv3, r, nn_join(n1, sizeof n1, name, "conv3"), planes, out, 1, 1, 0,
                                       false, k);
        rc |= rc ? -1 : nn_bn2d_init(&b->bn3, r, nn_join(n1, sizeof n1, name, "bn3"), out);
    } else {
        rc |= nn_conv2d_init(&b->conv1, r, nn_join(n1, sizeof n1, name, "conv1"), in, planes, 3, stride, 1, false,
                             k);
        rc |= rc ? -1 : nn_bn2d_init(&b->bn1, r, nn_join(n1, sizeof n1, name, "bn1"), planes);
        rc |= rc ? -1 : nn_conv2d_init(&b->conv2, r, nn_join(n1, sizeof n1, name, "conv2"), planes, planes, 3, 1,
                                       1, false, k);
        rc |= rc ? -1 : nn_bn2d_init(&b->bn2, r, nn_join(n1, sizeof n1, name, "bn2"), planes);
    }
    if (!rc && (stride != 1 || in != out)) {
        b->has_down = true;
        rc |= nn_conv2d_init(&b->down_conv, r, nn_join(n1, sizeof n1, name, "downsample.0"), in, out, 1, stride, 0,
                             false, k);
        rc |= rc ? -1 : nn_bn2d_init(&b->down_bn, r, nn_join(n1, sizeof n1, name, "downsample.1"), out);
    }
    return rc ? -1 : 0;
}

/* conv -> bn (-> relu); frees its input when `own_in`. */
static lt_tensor *cbr(nn_conv2d *c, nn_bn2d *b, lt_tensor *x, bool training, bool relu, bool own_in) {
    lt_tensor *y = nn_conv2d_forward(c, x);
    if (own_in) lt_free(x);
    lt_tensor *z = nn_bn2d_forward(b, y, training);
    lt_free(y);
    if (!relu) return z;
    lt_tensor *a = lt_relu(z);
    lt_free(z);
    return a;
}

static lt_tensor *block_forward(nn_block *b, lt_tensor *x, bool training) {
    lt_tensor *h = cbr(&b->conv1, &b->bn1, x, training, true, false);
    h = cbr(&b->conv2, &b->bn2, h, training, b->bottleneck, true);
    if (b->bottleneck) h = cbr(&b->conv3, &b->bn3, h, training, false, true);
    lt_tensor *id = b->has_down ? cbr(&b->down_conv, &b->down_bn, x, training, false, false) : x;
    lt_tensor *s = lt_add(h, id);
    lt_free(h);
    if (id != x) lt_free(id);
    lt_tensor *out = lt_relu(s);
    lt_free(s);
    return out;
}

static void block_free(nn_block *b) {
    nn_conv2d_free(&b->conv1);
    nn_conv2d_free(&b->conv2);
    nn_conv2d_free(&b->conv3);
    nn_conv2d_free(&b->down_conv);
    nn_bn2d_free(&b->bn1);
    nn_bn2d_free(&b->bn2);
    nn_bn2d_free(&b->bn3);
    nn_bn2d_free(&b->down_bn);
}

int nn_resnet_init(nn_resnet *m, nn_registry *r, int depth, int64_t in_channels, int64_t num_classes) {
    static const int blocks18[4] = {2, 2, 2, 2}, blocks50[4] = {3, 4, 6, 3}, blocks20[3] = {3, 3, 3};
    memset(m, 0, sizeof *m);
    if (in_channels <= 0 || num_classes <= 0)
        return err_set(LT_ERR_ARG, "lt_model_new: in_channels %lld and num_classes %lld must be positive",
                       (long long)in_channels, (long long)num_classes), -1;
    const int *counts = depth == 20 ? blocks20 : depth == 18 ? blocks18 : blocks50;
    int nstages = depth == 20 ? 3 : 4;
    bool bottleneck = depth == 50;
    int64_t width = depth == 20 ? 16 : 64;
    m->imagenet_stem = depth != 20;
    for (int s = 0; s < nstages; s++) m->nblocks += counts[s];
    m->blocks = core_calloc((size_t)m->nblocks, sizeof *m->blocks);
    if (!m->blocks) return -1;
    /* torchvision's ResNets re-initialize convs (kaiming_normal_, fan_out);
     * the CIFAR-style ResNet-20 is a plain PyTorch model with nn.Conv2d's
     * default init, as in bench/pytorch/fmnist_resnet20.py. */
    nn_init k = m->imagenet_stem ? NN_INIT_KAIMING_FAN_OUT : NN_INIT_DEFAULT;
    if (m->imagenet_stem ? nn_conv2d_init(&m->conv1, r, "conv1", in_channels, width, 7, 2, 3, false, k)
                         : nn_conv2d_init(&m->conv1, r, "conv1", in_channels, width, 3, 1, 1, false, k))
        return -1;
    if (nn_bn2d_init(&m->bn1, r, "bn1", width)) return -1;
    int64_t in = width;
    int bi = 0;
    for (int s = 0; s < nstages; s++) {
        int64_t planes = width << s;
        for (int j = 0; j < counts[s]; j++, bi++) {
            char name[32];
            snprintf(name, sizeof name, "layer%d.%d", s + 1, j);
            int64_t stride = (s > 0 && j == 0) ? 2 : 1;
            if (block_init(&m->blocks[bi], r, name, bottleneck, in, planes, stride, k)) return -1;
            in = planes * (bottleneck ? 4 : 1);
        }
    }
    return nn_linear_init(&m->fc, r, "fc", in, num_classes, true);
}

lt_tensor *nn_resnet_forward(nn_resnet *m, lt_tensor *x, bool training) {
    lt_tensor *h = cbr(&m->conv1, &m->bn1, x, training, true, false);
    if (m->imagenet_stem) {
        const int64_t k[2] = {3, 3}, st[2] = {2, 2}, pad[2] = {1, 1};
        lt_tensor *p = lt_max_pool2d(h, k, st, pad);
        lt_free(h);
        h = p;
    }
    for (int i = 0; i < m->nblocks; i++) {
        lt_tensor *y = block_forward(&m->blocks[i], h, training);
        lt_free(h);
        h = y;
    }
    const int64_t one[2] = {1, 1};
    lt_tensor *p = lt_adaptive_avg_pool2d(h, one);
    lt_free(h);
    lt_tensor *f = lt_flatten(p, 1, -1);
    lt_free(p);
    lt_tensor *out = nn_linear_forward(&m->fc, f);
    lt_free(f);
    return out;
}

void nn_resnet_free(nn_resnet *m) {
    nn_conv2d_free(&m->conv1);
    nn_bn2d_free(&m->bn1);
    for (int i = 0; i < m->nblocks && m->blocks; i++) block_free(&m->blocks[i]);
    core_free(m->blocks);
    nn_linear_free(&m->fc);
    memset(m, 0, sizeof *m);
}
