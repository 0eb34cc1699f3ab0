/* The per-plane loops of pool_blocked.c, compiled once per instruction set
 * (included through isa_copies.h, ISA_SUF the suffix). A plane is the
 * H x W x 16 floats of one sample's block of 16 channels; every lane runs
 * PyTorch's max-pooling rule on its own channel. Not a normal header (no
 * include guard, on purpose). */
#define PF(x) CAT3(x, ISA_SUF, )

/* The window's maximum and its position (h * W + w) per lane: the first
 * maximum in row-major order; a NaN wins (the last one), as in ref_nn_pool.c;
 * an all -inf window gives -inf at its first element. */
static inline void PF(win_max)(const float *xp, const pool_win *r, int64_t W, float *out, vi16 *at) {
    v16 mx = (v16){0} - INFINITY;
    vi16 best = (vi16){0} + (int32_t)(r->h0 * W + r->w0);
    for (int64_t h = r->h0; h < r->h1; h++)
        for (int64_t w = r->w0; w < r->w1; w++) {
            v16 v = V16(xp + (h * W + w) * 16);
            vi16 m = (v > mx) | (v != v);
            mx = VSEL(m, v, mx);
            best = (best & ~m) | (((vi16){0} + (int32_t)(h * W + w)) & m);
        }
    *at = best;
    if (out) V16(out) = mx;
}

/* y plane (oH, oW, 16) from x plane (H, W, 16). */
static void PF(plane_fwd)(const float *xp, float *yp, const pool_geom *q) {
    for (int64_t oh = 0; oh < q->oH; oh++)
        for (int64_t ow = 0; ow < q->oW; ow++) {
            pool_win r = pool_window(q, oh, ow);
            vi16 at;
            PF(win_max)(xp, &r, q->W, yp + (oh * q->oW + ow) * 16, &at);
        }
}

/* dx plane (H, W, 16) from g plane (oH, oW, 16) and x: each window's
 * gradient goes to its argmax, added with a lane mask per window position
 * (no scalar scatter). Rows are zeroed just before the first window that
 * reaches them, so the plane is written while it is in cache. */
static void PF(plane_bwd)(const float *gp, const float *xp, float *dp, const pool_geom *q) {
    int64_t W = q->W, zrow = 0;
    for (int64_t oh = 0; oh < q->oH; oh++) {
        pool_win r0 = pool_window(q, oh, 0);
        if (r0.h1 > zrow) {
            memset(dp + zrow * W * 16, 0, (size_t)((r0.h1 - zrow) * W * 16) * sizeof *dp);
            zrow = r0.h1;
        }
        for (int64_t ow = 0; ow < q->oW; ow++) {
            pool_win r = pool_window(q, oh, ow);
            vi16 at;
            PF(win_max)(xp, &r, W, NULL, &at);
            vi16 gv = (vi16)V16(gp + (oh * q->oW + ow) * 16);
            for (int64_t h = r.h0; h < r.h1; h++)
                for (int64_t w = r.w0; w < r.w1; w++) {
                    vi16 m = at == ((vi16){0} + (int32_t)(h * W + w));
                    V16(dp + (h * W + w) * 16) += (v16)(gv & m);
                }
        }
    }
    if (zrow < q->H) memset(dp + zrow * W * 16, 0, (size_t)((q->H - zrow) * W * 16) * sizeof *dp);
}

static const pool_rows PF(pool_rows) = {PF(plane_fwd), PF(plane_bwd)};

#undef PF
