/* Batch norm on plain (N, C, *) activations of type A: channel c of sample
 * n is the run of `inner` values at (n * C + c) * inner. Included by
 * nn_fast.c once per activation type: A float (LD, ST the identity) and A
 * uint16_t (bfloat16: autocast's activations, LD widens, ST rounds), with
 * FN(name) naming the copy. Statistics and parameters are float32 and the
 * math is float32 with runs summed in double either way. */

/* Per channel c: s[0] = sum(a - m), s[1] = sum((a - m) * (b - m2)) with b
 * NULL meaning b = a (variance): the shapes of every BN reduction. */
static void FN(chan_sums)(bn_geom b, int64_t c, const A *a, const A *bb, float m, float m2, double *s) {
    double s0 = 0, s1 = 0;
    for (int64_t n = 0; n < b.N; n++) {
        const A *ap = a + (n * b.C + c) * b.inner, *bp = bb ? bb + (n * b.C + c) * b.inner : ap;
        float r0 = 0, r1 = 0;
        /* simd reduction: lets the compiler reorder the float sums (vectorize) without -ffast-math */
#pragma omp simd reduction(+ : r0, r1)
        for (int64_t k = 0; k < b.inner; k++) {
            r0 += LD(ap[k]) - m;
            r1 += (LD(ap[k]) - m) * (LD(bp[k]) - m2);
        }
        s0 += r0;
        s1 += r1;
    }
    s[0] = s0;
    s[1] = s1;
}

/* The forward's scale and shift of channel c: bn_apply's y = (x - m) sc +
 * sh, which the backward's ReLU mask from x (bn_grad's xm) repeats. */
static void FN(apply_coef)(bn_stats st, int64_t c, const float *w, const float *bias, double eps, float *sc,
                           float *sh) {
    double is = 1.0 / sqrt((double)st.v[c] + eps);
    *sc = (float)(is * (w ? w[c] : 1.0));
    *sh = bias ? bias[c] : 0.0f;
}

/* chan_sums(g, bb, 0, m2) for g of bn_grad gr (out or xm given), which
 * gr.gm receives: where(out <= 0, 0, a [+ b]), the add rounded to A as the
 * tile interpreter's ADD stores it; out NULL: relu((x - m2) fsc + fsh)
 * rounded to A, as bn_apply stores it (m2 is the forward's mean). */
static void FN(chan_gsums)(bn_geom b, int64_t c, bn_grad gr, const A *bb, float m2, float fsc, float fsh,
                           double *s) {
    double s0 = 0, s1 = 0;
    for (int64_t n = 0; n < b.N; n++) {
        int64_t o = (n * b.C + c) * b.inner;
        const A *ap = (const A *)gr.a + o, *bp = gr.b ? (const A *)gr.b + o : NULL;
        const A *op = gr.out ? (const A *)gr.out + o : NULL, *xp = bb + o;
        A *gp = gr.gm ? (A *)gr.gm + o : NULL;
        float r0 = 0, r1 = 0;
#pragma omp simd reduction(+ : r0, r1)
        for (int64_t k = 0; k < b.inner; k++) {
            float g = bp ? LD(ST(LD(ap[k]) + LD(bp[k]))) : LD(ap[k]);
            g = (op ? LD(op[k]) : LD(ST((LD(xp[k]) - m2) * fsc + fsh))) <= 0 ? 0.0f : g;
            if (gp) gp[k] = ST(g);
            r0 += g;
            r1 += g * (LD(xp[k]) - m2);
        }
        s0 += r0;
        s1 += r1;
    }
    s[0] = s0;
    s[1] = s1;
}

/* BN_STATS: (2, C) [mean; biased var], two passes: a float mean m, then
 * sums of (x - m) and (x - m)^2 that correct both for m's error (the first
 * pass sums runs in float: far from zero that is an ulp or two). (One pass
 * shifted by a sample lost up to (mean - K)^2 / var ulps where the sample
 * sat far from the mean: enough to move a 20-step ResNet-20 run off
 * PyTorch's losses by 5e-4.) No data: NaN, as 0/0. */
static void FN(bn_stats)(bn_geom b, const A *xs, float *out) {
    double cnt = (double)(b.N * b.inner);
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < b.C; c++) {
        double s[2];
        FN(chan_sums)(b, c, xs, NULL, 0, 0, s);
        float m = (float)(s[0] / cnt);
        FN(chan_sums)(b, c, xs, NULL, m, m, s);
        double d = s[0]; /* sum(x - m): what m missed */
        out[c] = (float)((double)m + d / cnt);
        out[b.C + c] = (float)((s[1] - d * d / cnt) / cnt);
    }
}

/* act (K_BN_ACT): out = relu(bn + res), res NULL or of x's shape; relu
 * keeps NaN, as the tile interpreter's RELU. bn is rounded to A before the
 * add, as the unfused BN_APPLY stores it: the same bits either way. */
static void FN(bn_apply)(bn_geom b, bn_stats st, const A *xs, const float *w, const float *bias, double eps,
                         const A *res, int act, A *out) {
#pragma omp parallel for schedule(static)
    for (int64_t nc = 0; nc < b.N * b.C; nc++) {
        int64_t c = nc % b.C;
        /* (x - m) * sc + bias, not x * sc + (bias - m * sc): far from zero
         * with a small variance the second cancels (x * sc ~ 1e3, 1e-4 off) */
        float sc, sh, m = st.m[c];
        FN(apply_coef)(st, c, w, bias, eps, &sc, &sh);
        const A *xp = xs + nc * b.inner, *rp = res ? res + nc * b.inner : NULL;
        A *yp = out + nc * b.inner;
        if (!act) {
            OMP_SIMD for (int64_t k = 0; k < b.inner; k++) yp[k] = ST((LD(xp[k]) - m) * sc + sh);
            continue;
        }
        for (int64_t k = 0; k < b.inner; k++) {
            float t = (LD(xp[k]) - m) * sc + sh;
            if (rp) t = LD(ST(t)) + LD(rp[k]);
            yp[k] = ST(t > 0 || t != t ? t : 0.0f);
        }
    }
}

/* dx and sums as bn_bwd_run (nn_fast.c) describes; either may be NULL. */
static void FN(bn_bwd)(bn_geom b, bn_stats st, int batch, bn_grad gr, const A *xs, const float *w, double eps, A *dx,
                       float *sums) {
    double cnt = (double)(b.N * b.inner);
    int masked = gr.out || gr.xm.on;
    const A *g = masked ? gr.gm : gr.a; /* g in memory, if it is: given, or written by the sums pass */
    const A *ga = gr.a, *gb = gr.b, *go = gr.out;
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < b.C; c++) {
        double is = 1.0 / sqrt((double)st.v[c] + eps), s[2] = {0, 0};
        float m = st.m[c], fsc = 0, fsh = 0; /* the forward's, for the mask from x */
        if (gr.xm.on) FN(apply_coef)(st, c, gr.xm.w, gr.xm.bias, gr.xm.eps, &fsc, &fsh);
        if (masked && (batch || sums || gr.gm)) FN(chan_gsums)(b, c, gr, xs, m, fsc, fsh, s);
        else if (batch || sums) FN(chan_sums)(b, c, g, xs, 0, m, s); /* s[1] = sum(g (x - m)) */
        if (sums) {
            sums[c] = (float)(s[1] * is);
            sums[b.C + c] = (float)s[0];
        }
        if (!dx) continue;
        float k = (float)((w ? w[c] : 1.0) * is);
        float mg = (float)(s[0] / cnt), cx = (float)(s[1] * is * is / cnt); /* mean(g), mean(g xhat) * is */
        for (int64_t n = 0; n < b.N; n++) {
            int64_t o = (n * b.C + c) * b.inner;
            const A *gp = g ? g + o : NULL, *xp = xs + o;
            A *dp = dx + o;
            if (!gp) { /* the gradient recomputed, as chan_gsums */
                const A *ap = ga + o, *bp = gb ? gb + o : NULL, *op = go ? go + o : NULL;
                OMP_SIMD for (int64_t i = 0; i < b.inner; i++) {
                    float gv = bp ? LD(ST(LD(ap[i]) + LD(bp[i]))) : LD(ap[i]);
                    gv = (op ? LD(op[i]) : LD(ST((LD(xp[i]) - m) * fsc + fsh))) <= 0 ? 0.0f : gv;
                    dp[i] = ST(batch ? k * (gv - mg - (LD(xp[i]) - m) * cx) : k * gv);
                }
            } else if (batch)
                OMP_SIMD for (int64_t i = 0; i < b.inner; i++) dp[i] = ST(k * (LD(gp[i]) - mg - (LD(xp[i]) - m) * cx));
            else
                OMP_SIMD for (int64_t i = 0; i < b.inner; i++) dp[i] = ST(k * LD(gp[i]));
        }
    }
}
