/* The per-plane loops of pool_blocked.c for one activation type A (float,
 * or uint16_t holding bfloat16), instantiated per instruction set by
 * pool_blocked_body.h through blk_typed.h (which defines A, LDV, STV and
 * BT). A plane is the H x W x 16 activations of one sample's block of 16
 * channels; every lane runs PyTorch's max-pooling rule on its own channel,
 * in float32 (widening a bfloat16 is exact, so the maximum is too). Not a
 * normal header (no include guard, on purpose). */

/* The window's maximum and its position (h * W + w) per lane: the first
 * maximum in row-major order; a NaN wins (the last one), as in ref_nn_pool.c;
 * an all -inf window gives -inf at its first element. */
static inline void BT(win_max)(const A *xp, const pool_win *r, int64_t W, v16 *out, vi16 *at) {
    v16 mx = (v16){0} - INFINITY;
    vi16 best = (vi16){0} + (int32_t)(r->h0 * W + r->w0);
    for (int64_t h = r->h0; h < r->h1; h++)
        for (int64_t w = r->w0; w < r->w1; w++) {
            v16 v = LDV(xp + (h * W + w) * 16);
            vi16 m = (v > mx) | (v != v);
            mx = VSEL(m, v, mx);
            best = (best & ~m) | (((vi16){0} + (int32_t)(h * W + w)) & m);
        }
    *at = best;
    *out = mx;
}

/* y plane (oH, oW, 16) from x plane (H, W, 16). */
static void BT(plane_fwd)(const void *x, void *y, const pool_geom *q) {
    const A *xp = x;
    A *yp = y;
    for (int64_t oh = 0; oh < q->oH; oh++)
        for (int64_t ow = 0; ow < q->oW; ow++) {
            pool_win r = pool_window(q, oh, ow);
            v16 mx;
            vi16 at;
            BT(win_max)(xp, &r, q->W, &mx, &at);
            STV(yp + (oh * q->oW + ow) * 16, mx);
        }
}

/* Rows [h0, h1) of acc (float), rounded to A into dx, unless acc is dx. */
static void BT(put_rows)(const float *acc, A *dp, int64_t h0, int64_t h1, int64_t W) {
    if ((const void *)acc == (const void *)dp) return;
    for (int64_t i = h0 * W; i < h1 * W; i++) STV(dp + i * 16, V16(acc + i * 16));
}

/* dx plane (H, W, 16) from g plane (oH, oW, 16) and x: each window's
 * gradient goes to its argmax, added with a lane mask per window position
 * (no scalar scatter) into acc, a float plane: dx itself when A is float,
 * else scratch whose rows are rounded into dx once no later window reaches
 * them (a sum of gradients rounded once, as the reference does). Rows are
 * zeroed just before the first window that reaches them and rounded out
 * right after the last, so acc is written while it is in cache. */
static void BT(plane_bwd)(const void *g, const void *x, void *d, float *acc, const pool_geom *q) {
    const A *gp = g, *xp = x;
    A *dp = d;
    int64_t W = q->W, zrow = 0, done = 0;
    for (int64_t oh = 0; oh < q->oH; oh++) {
        pool_win r0 = pool_window(q, oh, 0);
        if (r0.h1 > zrow) {
            memset(acc + zrow * W * 16, 0, (size_t)((r0.h1 - zrow) * W * 16) * sizeof *acc);
            zrow = r0.h1;
        }
        for (int64_t ow = 0; ow < q->oW; ow++) {
            pool_win r = pool_window(q, oh, ow);
            v16 mx;
            vi16 at;
            BT(win_max)(xp, &r, W, &mx, &at);
            vi16 gv = (vi16)LDV(gp + (oh * q->oW + ow) * 16);
            for (int64_t h = r.h0; h < r.h1; h++)
                for (int64_t w = r.w0; w < r.w1; w++) {
                    vi16 m = at == ((vi16){0} + (int32_t)(h * W + w));
                    V16(acc + (h * W + w) * 16) += (v16)(gv & m);
                }
        }
        /* windows start at non-decreasing rows: the rows above the next start are final */
        int64_t fin = oh + 1 < q->oH ? pool_window(q, oh + 1, 0).h0 : zrow;
        if (fin > zrow) fin = zrow;
        if (fin > done) BT(put_rows)(acc, dp, done, fin, W), done = fin;
    }
    if (zrow < q->H) memset(acc + zrow * W * 16, 0, (size_t)((q->H - zrow) * W * 16) * sizeof *acc);
    BT(put_rows)(acc, dp, done, q->H, W);
}
