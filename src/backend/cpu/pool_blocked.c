/* Max pooling, forward and backward, on channel-blocked activations
 * (nChw16c, layout.c), so that a ResNet stem (conv, batch norm, ReLU, max
 * pool) stays blocked: 16 channels side by side are one vector, and each
 * window is a handful of vector compares. The backward recomputes each
 * window's argmax from x (the IR's MAX_POOL2D_BWD reads g and x, no index
 * tensor) and adds the gradient there under a lane mask. Same rule as
 * ref_nn_pool.c and PyTorch: first maximum, a NaN wins, padding is never a
 * candidate. Activations are float32 or bfloat16 (widened on load, exact
 * for a maximum; the backward sums gradients in float and rounds each
 * once). (The plain NCHW loops are in nn_fast.c.) */
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

/* The loops over one plane (pool_blocked_rows.h); activation pointers are
 * float * or bfloat16's uint16_t *, as the table; acc: the backward's float
 * sums (dx itself for float). */
typedef struct pool_rows {
    void (*fwd)(const void *xp, void *yp, const pool_geom *q);
    void (*bwd)(const void *gp, const void *xp, void *dp, float *acc, const pool_geom *q);
} pool_rows;

#define ISA_EACH "pool_blocked_body.h"
#include "isa_copies.h"

static const pool_rows *rows(int bf16) {
#ifdef HAVE_ISA
    switch (core_isa()) {
    case 2: return &pool_rows_avx512[bf16];
    case 1: return &pool_rows_avx2[bf16];
    default: break;
    }
#endif
    return &pool_rows_base[bf16];
}

/* xs (N, C, H, W), os (N, C, oH, oW); ia [kH, kW, sH, sW, pH, pW]. */
static pool_geom geom(const int64_t *xs, const int64_t *os, const int64_t *ia) {
    return (pool_geom){xs[2], xs[3], os[2], os[3], ia[0], ia[1], ia[2], ia[3], ia[4], ia[5]};
}

void pool_blk_max(const int64_t *xs, const int64_t *os, const int64_t *ia, int bf16, const void *x, void *y) {
    pool_geom q = geom(xs, os, ia);
    const pool_rows *r = rows(bf16);
    size_t es = bf16 ? 2 : 4, xn = (size_t)(q.H * q.W * 16) * es, yn = (size_t)(q.oH * q.oW * 16) * es;
    int64_t planes = xs[0] * (xs[1] / 16);
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; p++) r->fwd((const char *)x + p * xn, (char *)y + p * yn, &q);
}

int pool_blk_max_bwd(const int64_t *xs, const int64_t *os, const int64_t *ia, int bf16, const void *g, const void *x,
                     void *dx) {
    pool_geom q = geom(xs, os, ia);
    const pool_rows *r = rows(bf16);
    size_t es = bf16 ? 2 : 4, xn = (size_t)(q.H * q.W * 16) * es, gn = (size_t)(q.oH * q.oW * 16) * es;
    int64_t planes = xs[0] * (xs[1] / 16);
    /* bfloat16: one float plane of sums per thread */
    float *acc = bf16 ? core_malloc((size_t)NUM_THREADS() * (size_t)(q.H * q.W * 16) * sizeof *acc) : NULL;
    if (bf16 && !acc) return -1;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; p++) {
        char *dp = (char *)dx + p * xn;
        r->bwd((const char *)g + p * gn, (const char *)x + p * xn, dp,
               acc ? acc + (size_t)THREAD_NUM() * (size_t)(q.H * q.W * 16) : (float *)dp, &q);
    }
    core_free(acc);
    return 0;
}
