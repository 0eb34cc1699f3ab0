/* Fake images, generated on the fly (nothing is stored, so an ImageNet-sized
 * fake set costs no memory). Each class draws a stripe pattern of its own
 * frequency and direction under uniform noise: learnable, so a falling loss
 * on fake data means the training loop works. */
#include "data.h"

#include "../core/core.h"

int data_fake_init(data_set *ds, int64_t n, int c, int hw, int classes, uint64_t seed) {
    memset(ds, 0, sizeof *ds);
    if (n < 1 || c < 1 || hw < 1 || classes < 2 || hw > 4096 || c > 64)
        return err_set(LT_ERR_ARG, "fake data: bad size n=%lld c=%d hw=%d classes=%d", (long long)n, c, hw,
                       classes), -1;
    ds->n = n;
    ds->c = c;
    ds->h = ds->w = hw;
    ds->classes = classes;
    ds->mean = 0.5f;
    ds->std = 0.25f;
    ds->fake_seed = seed;
    return 0;
}

static int fake_sample(const data_set *ds, int64_t i, uint8_t *px) {
    uint64_t h0 = data_hash(ds->fake_seed, (uint64_t)i, 0x1abe1);
    int label = (int)(h0 % (uint64_t)ds->classes);
    int fx = 1 + label % 4, fy = 1 + (label / 4) % 4; /* stripes per image */
    int ch = (label / 16) % ds->c;                    /* the channel that carries them */
    uint64_t r = data_hash(ds->fake_seed, (uint64_t)i, 0x5eed);
    uint8_t xodd[4096]; /* (x fx / w) & 1, the stripe's column parity (hw <= 4096: data_fake_init) */
    for (int x = 0; x < ds->w; x++) xodd[x] = (uint8_t)((x * fx / (ds->w > 1 ? ds->w : 1)) & 1);
    for (int c = 0; c < ds->c; c++)
        for (int y = 0; y < ds->h; y++) {
            int row = ((y * fy / (ds->h > 1 ? ds->h : 1)) & 1) ^ (c != ch);
            for (int x = 0; x < ds->w; x++) {
                /* xorshift within a sample: cheap, and the sample is still a pure function of i */
                r ^= r << 13;
                r ^= r >> 7;
                r ^= r << 17;
                int noise = (int)(r & 127);
                *px++ = (uint8_t)(noise + (xodd[x] ^ row ? 112 : 16));
            }
        }
    return label;
}

int data_sample(const data_set *ds, int64_t i, uint8_t *pixels) {
    if (!ds->images) return fake_sample(ds, i, pixels);
    size_t sz = (size_t)ds->c * (size_t)ds->h * (size_t)ds->w;
    memcpy(pixels, ds->images + (size_t)i * sz, sz);
    return ds->labels[i];
}
