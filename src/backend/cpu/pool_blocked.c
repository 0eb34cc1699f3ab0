/* Max pooling, forward and backward, on channel-blocked activations
 * (nChw16c, layout.c), so that a ResNet stem (conv, batch norm, ReLU, max
 * pool) stays blocked: 16 channels side by side are one vector, and each
 * window is a handful of vector compares. The backward recomputes each
 * window's argmax from x (the IR's MAX_POOL2D_BWD reads g and x, no index
 * tensor) and adds the gradient there under a lane mask. Same rule as
 * ref_nn_pool.c and PyTorch: first maximum, a NaN wins, padding is never a
 * candidate. (The plain NCHW loops are in nn_fast.c.) */
#include "cpu.h"

#include "simd.h"

#include <math.h>

typedef struct pool_geom {
    int64_t H, W, oH, oW, kH, kW, sH, sW, pH, pW;
} pool_geom;

typedef struct pool_win {
    int64_t h0, h1, w0, w1; /* clamped to the image */
} pool_win;

static inline pool_win pool_window(const pool_geom *q, int64_t oh, int64_t ow) {
    pool_win r = {oh * q->sH - q->pH, 0, ow * q->sW - q->pW, 0};
    r.h1 = r.h0 + q->kH, r.w1 = r.w0 + q->kW;
    if (r.h0 < 0) r.h0 = 0;
    if (r.w0 < 0) r.w0 = 0;
    if (r.h1 > q->H) r.h1 = q->H;
    if (r.w1 > q->W) r.w1 = q->W;
    return r;
}

typedef struct pool_rows {
    void (*fwd)(const float *xp, float *yp, const pool_geom *q);
    void (*bwd)(const float *gp, const float *xp, float *dp, const pool_geom *q);
} pool_rows;

#define ISA_EACH "pool_blocked_body.h"
#include "isa_copies.h"

static const pool_rows *rows(void) {
#ifdef HAVE_ISA
    switch (core_isa()) {
    case 2: return &pool_rows_avx512;
    case 1: return &pool_rows_avx2;
    default: break;
    }
#endif
    return &pool_rows_base;
}

/* xs (N, C, H, W), os (N, C, oH, oW); ia [kH, kW, sH, sW, pH, pW]. */
static pool_geom geom(const int64_t *xs, const int64_t *os, const int64_t *ia) {
    return (pool_geom){xs[2], xs[3], os[2], os[3], ia[0], ia[1], ia[2], ia[3], ia[4], ia[5]};
}

void pool_blk_max(const int64_t *xs, const int64_t *os, const int64_t *ia, const float *x, float *y) {
    pool_geom q = geom(xs, os, ia);
    const pool_rows *r = rows();
    int64_t planes = xs[0] * (xs[1] / 16), xn = q.H * q.W * 16, yn = q.oH * q.oW * 16;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; p++) r->fwd(x + p * xn, y + p * yn, &q);
}

void pool_blk_max_bwd(const int64_t *xs, const int64_t *os, const int64_t *ia, const float *g, const float *x,
                      float *dx) {
    pool_geom q = geom(xs, os, ia);
    const pool_rows *r = rows();
    int64_t planes = xs[0] * (xs[1] / 16), xn = q.H * q.W * 16, gn = q.oH * q.oW * 16;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; p++) r->bwd(g + p * gn, x + p * xn, dx + p * xn, &q);
}
