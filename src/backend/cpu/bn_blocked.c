/* Batch norm on channel-blocked activations (nChw16c, layout.c): element
 * (n, c, k) of x (N, C, inner) is at ((n * C/16 + c/16) * inner + k) * 16 +
 * c % 16, so 16 channels sit side by side and every loop below runs over
 * them as one vector. Activations are float32 or bfloat16 (b.bf16: widened
 * on load, rounded on store; statistics and math float32). Same formulas
 * as the plain loops in nn_fast.c: sums of a run in float, accumulated per
 * channel in double; two-pass statistics. Parallel over samples (a stage
 * of 16 channels has a single channel block). */
#include "cpu.h"

#include "simd.h"

#include <math.h>

/* The loops over one run of 16 channels (bn_blocked_rows.h); activation
 * pointers are float * or bfloat16's uint16_t *, as the table. */
typedef struct bn_rows {
    void (*sums)(const void *ap, const void *bp, const float *m, const float *m2, int64_t inner, double *acc);
    void (*moments)(const void *ap, int64_t inner, double *mo);
    /* nt: y or dx written with streaming stores (streams()) */
    void (*apply)(const void *xp, void *yp, const float *sc, const float *sh, const void *rp, int act,
                  int64_t inner, int nt);
    void (*dx)(const void *gp, const void *xp, void *dp, const float *k, const float *mg, const float *cx,
               const float *mc, int64_t inner, int batch, int nt);
    /* sums and dx of the gradient bn_grad computes from a, b and out (op
     * NULL: out recomputed from x with the forward's sc, sh) */
    void (*gsums)(const void *ap, const void *bp, const void *op, const void *xp, void *gm, const float *m2,
                  const float *sc, const float *sh, int64_t inner, double *acc);
    void (*gdx)(const void *ap, const void *bp, const void *op, const void *xp, void *dp, const float *k,
                const float *mg, const float *cx, const float *mc, const float *sc, const float *sh, int64_t inner,
                int batch, int nt);
} bn_rows;

/* Merges a part of nb values per lane, with means mb and sums of squared
 * deviations m2b, into mo (bn_rows.moments) by Chan's pairwise formula. */
static void bn_merge(double *mo, double nb, const double *mb, const double *m2b) {
    double na = mo[0], nt = na + nb;
    if (nb == 0) return;
    for (int i = 0; i < 16; i++) {
        double d = mb[i] - mo[1 + i];
        mo[1 + i] += d * (nb / nt);
        mo[17 + i] += m2b[i] + d * d * (na * nb / nt);
    }
    mo[0] = nt;
}

/* Positions per cache-resident chunk of run_moments: 16 KiB of float. */
#define BN_CHUNK 256

#define ISA_EACH "bn_blocked_body.h"
#include "isa_copies.h"

static const bn_rows *rows(bn_geom b) {
#ifdef HAVE_ISA
    switch (core_isa()) {
    case 2: return &bn_rows_avx512[b.bf16];
    case 1: return &bn_rows_avx2[b.bf16];
    default: break;
    }
#endif
    return &bn_rows_base[b.bf16];
}

/* Run u (sample n, channel block cb: u = n * C/16 + cb) of activations p. */
static const void *run_at(bn_geom b, const void *p, int64_t u) {
    return (const char *)p + (size_t)(u * b.inner * 16) * (b.bf16 ? 2 : 4);
}
static void *run_at_w(bn_geom b, void *p, int64_t u) { return (void *)run_at(b, p, u); }

/* For channel i of block cb: s[i] = sum(a - m[i]), s[16 + i] = sum((a -
 * m[i]) * (b - m2[i])); b NULL: b = a. */
/* Per channel block, or per sample? With many channel blocks each thread
 * takes whole blocks (a kernel is then one parallel region, not one or two
 * per block, and the dx pass finds a block's g and x still in cache where
 * they fit: ResNet-50's 28x28, 14x14 and 7x7 stages); with few, the
 * threads share each block's samples (par: the loops below run in
 * parallel). */
static int by_block(bn_geom b) { return b.C / 16 >= 2 * NUM_THREADS(); }

static void block_sums(bn_geom b, int64_t cb, const void *a, const void *bb, const float *m, const float *m2,
                       double s[32], int par) {
    int64_t CB = b.C / 16;
    const bn_rows *r = rows(b);
    double acc[32] = {0};
#pragma omp parallel for schedule(static) reduction(+ : acc[:32]) if (par)
    for (int64_t n = 0; n < b.N; n++) {
        const void *ap = run_at(b, a, n * CB + cb), *bp = bb ? run_at(b, bb, n * CB + cb) : ap;
        r->sums(ap, bp, m, m2, b.inner, acc);
    }
    memcpy(s, acc, sizeof acc);
}

/* One pass over x (run_moments), each thread merging its samples' runs
 * into its own moments, merged in thread order (the same result every
 * run). No data: NaN, as 0/0. */
enum { BN_MAX_PARTS = 64 };
static void block_stats(bn_geom b, int64_t cb, const void *x, float *out, int par) {
    int64_t CB = b.C / 16;
    const bn_rows *r = rows(b);
    int nt = !par ? 1 : NUM_THREADS() < BN_MAX_PARTS ? NUM_THREADS() : BN_MAX_PARTS;
    double part[BN_MAX_PARTS][33];
    memset(part, 0, (size_t)nt * sizeof part[0]);
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
    for (int64_t n = 0; n < b.N; n++) r->moments(run_at(b, x, n * CB + cb), b.inner, part[par ? THREAD_NUM() : 0]);
    for (int t = 1; t < nt; t++) bn_merge(part[0], part[t][0], &part[t][1], &part[t][17]);
    for (int i = 0; i < 16; i++) {
        out[cb * 16 + i] = (float)(part[0][0] ? part[0][1 + i] : NAN);
        out[b.C + cb * 16 + i] = (float)(part[0][17 + i] / part[0][0]);
    }
}

void bn_blk_stats(bn_geom b, const void *x, float *out) {
    int blockwise = by_block(b);
#pragma omp parallel for schedule(static) if (blockwise)
    for (int64_t cb = 0; cb < b.C / 16; cb++) block_stats(b, cb, x, out, !blockwise);
}

/* Are outputs of b's shape at out written with streaming stores? Float32
 * ones of at least LT_BN_STREAM_MB (default 4 MiB) on 64-byte boundaries: a
 * store that misses the caches first reads the line it fills (a third
 * pass over memory for y = f(x)), and what the next kernel would find of
 * a large output still in cache is little. ResNet-50 batch 32 on the
 * shared machine: the batch-norm family 0.87x-0.92x with 4 MiB against
 * none; 32 MiB (only what outgrows the last cache) gave no difference. */
static int streams(bn_geom b, const void *out) {
    size_t bytes = (size_t)(b.N * b.C * b.inner) * 4;
    return !b.bf16 && bytes >= g_config.bn_stream_bytes && ((uintptr_t)out & 63) == 0;
}

/* The forward's y = x sc + sh for channels c0 .. c0 + 15 (bn_blk_apply; the
 * backward's ReLU mask from x repeats it, bit for bit). */
static void apply_coefs(int64_t c0, const float *m, const float *v, const float *w, const float *bias, double eps,
                        float sc[16], float sh[16]) {
    for (int i = 0; i < 16; i++) {
        double is = 1.0 / sqrt((double)v[c0 + i] + eps), wc = w ? w[c0 + i] : 1.0;
        sc[i] = (float)(is * wc);
        sh[i] = (float)((bias ? bias[c0 + i] : 0.0) - m[c0 + i] * is * wc);
    }
}

void bn_blk_apply(bn_geom b, const void *x, const float *m, const float *v, const float *w, const float *bias,
                  double eps, const void *res, int act, void *out) {
    int64_t CB = b.C / 16;
    const bn_rows *r = rows(b);
    int nt = streams(b, out);
#pragma omp parallel for schedule(static)
    for (int64_t u = 0; u < b.N * CB; u++) {
        float sc[16], sh[16];
        apply_coefs((u % CB) * 16, m, v, w, bias, eps, sc, sh);
        r->apply(run_at(b, x, u), run_at_w(b, out, u), sc, sh, res ? run_at(b, res, u) : NULL, act, b.inner, nt);
    }
}

/* block_sums(g, x, 0, m2) for g of bn_grad gr (out or xm given), which
 * gr.gm receives; sc, sh: the forward's coefficients (xm). */
static void block_gsums(bn_geom b, int64_t cb, bn_grad gr, const void *x, const float *m2, const float *sc,
                        const float *sh, double s[32], int par) {
    int64_t CB = b.C / 16;
    const bn_rows *r = rows(b);
    double acc[32] = {0};
#pragma omp parallel for schedule(static) reduction(+ : acc[:32]) if (par)
    for (int64_t n = 0; n < b.N; n++) {
        int64_t u = n * CB + cb;
        r->gsums(run_at(b, gr.a, u), gr.b ? run_at(b, gr.b, u) : NULL, gr.out ? run_at(b, gr.out, u) : NULL,
                 run_at(b, x, u),
                 gr.gm ? run_at_w(b, gr.gm, u) : NULL, m2, sc, sh, b.inner, acc);
    }
    memcpy(s, acc, sizeof acc);
}

void bn_blk_bwd(bn_geom b, bn_grad gr, const void *x, const float *m, const float *v, const float *w, int batch,
                double eps, void *dx, float *sums) {
    int64_t CB = b.C / 16;
    const bn_rows *r = rows(b);
    double cnt = (double)(b.N * b.inner);
    /* g as it is in memory, if it is: given, or written by the sums pass */
    int masked = gr.out || gr.xm.on;
    const void *g = masked ? gr.gm : gr.a;
    int blockwise = by_block(b), par = !blockwise, nt = dx && streams(b, dx);
#pragma omp parallel for schedule(static) if (blockwise)
    for (int64_t cb = 0; cb < CB; cb++) {
        int64_t c0 = cb * 16;
        double s[32] = {0}, is[16];
        static const float zero[16];
        float fsc[16] = {0}, fsh[16] = {0}; /* the forward's, for the mask from x */
        for (int i = 0; i < 16; i++) is[i] = 1.0 / sqrt((double)v[c0 + i] + eps);
        if (gr.xm.on) apply_coefs(c0, m, v, gr.xm.w, gr.xm.bias, gr.xm.eps, fsc, fsh);
        if (masked && (batch || sums || gr.gm)) block_gsums(b, cb, gr, x, m + c0, fsc, fsh, s, par);
        else if (batch || sums) block_sums(b, cb, g, x, zero, m + c0, s, par); /* s[16 + i] = sum(g (x - m)) */
        if (sums)
            for (int i = 0; i < 16; i++) {
                sums[c0 + i] = (float)(s[16 + i] * is[i]);
                sums[b.C + c0 + i] = (float)s[i];
            }
        if (!dx) continue;
        float k[16], mg[16], cx[16], mc[16]; /* w is, mean(g), mean(g xhat) is, the mean */
        for (int i = 0; i < 16; i++) {
            k[i] = (float)((w ? w[c0 + i] : 1.0) * is[i]);
            mg[i] = batch ? (float)(s[i] / cnt) : 0;
            cx[i] = batch ? (float)(s[16 + i] * is[i] * is[i] / cnt) : 0;
            mc[i] = m[c0 + i];
        }
#pragma omp parallel for schedule(static) if (par)
        for (int64_t n = 0; n < b.N; n++) {
            int64_t u = n * CB + cb;
            if (g) r->dx(run_at(b, g, u), run_at(b, x, u), run_at_w(b, dx, u), k, mg, cx, mc, b.inner, batch, nt);
            else
                r->gdx(run_at(b, gr.a, u), gr.b ? run_at(b, gr.b, u) : NULL, gr.out ? run_at(b, gr.out, u) : NULL,
                       run_at(b, x, u), run_at_w(b, dx, u), k, mg, cx, mc, fsc, fsh, b.inner, batch, nt);
        }
    }
}
