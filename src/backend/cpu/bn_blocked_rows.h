/* The per-run loops of bn_blocked.c for one activation type A (float, or
 * uint16_t holding bfloat16), instantiated per instruction set by
 * bn_blocked_body.h through blk_typed.h (which defines A, LDV, STV, RNDV
 * and BT). Not a normal header (no include guard, on purpose). */

/* One run of 16 channels: acc[i] += sum(a - m), acc[16 + i] += sum((a - m) * (b - m2)). */
static void BT(run_sums)(const void *a, const void *b, const float *m, const float *m2, int64_t inner, double *acc) {
    const A *ap = a, *bp = b;
    v16 r0 = {0}, r1 = {0}, mv = V16(m), m2v = V16(m2);
    for (int64_t k = 0; k < inner; k++) {
        v16 d = LDV(ap + k * 16) - mv;
        r0 += d;
        r1 += d * (LDV(bp + k * 16) - m2v);
    }
    BN_FN(add_lanes)(acc, &r0, &r1);
}

/* The moments of one run: mo[0] += its count, mo[1 + i] its mean and
 * mo[17 + i] its sum of squared deviations merged into lane i's (Chan's
 * formula, in double). The run is read from memory once, in chunks of
 * BN_CHUNK positions (16 KiB of float) that stay in L1 while two passes
 * go over them: a float mean cm, then sums of (x - cm) and (x - cm)^2,
 * which correct it (the two passes BN_STATS needs, without a second trip
 * to memory). */
static void BT(run_moments)(const void *a, int64_t inner, double *mo) {
    const A *ap = a;
    for (int64_t k0 = 0; k0 < inner; k0 += BN_CHUNK) {
        int64_t len = inner - k0 < BN_CHUNK ? inner - k0 : BN_CHUNK;
        const A *cp = ap + k0 * 16;
        v16 s = {0}, r0 = {0}, r1 = {0};
        for (int64_t k = 0; k < len; k++) s += LDV(cp + k * 16);
        v16 cm = s / (float)len;
        for (int64_t k = 0; k < len; k++) {
            v16 d = LDV(cp + k * 16) - cm;
            r0 += d;
            r1 += d * d;
        }
        float fm[16], f0[16], f1[16];
        memcpy(fm, &cm, sizeof fm);
        memcpy(f0, &r0, sizeof f0);
        memcpy(f1, &r1, sizeof f1);
        double cnt = (double)len, mean[16], m2[16];
        for (int i = 0; i < 16; i++) {
            mean[i] = fm[i] + f0[i] / cnt;
            m2[i] = f1[i] - (double)f0[i] * f0[i] / cnt;
        }
        bn_merge(mo, cnt, mean, m2);
    }
}

/* y = x sc + sh; act: y = relu(y + r) (r may be NULL), relu keeping NaN
 * as the tile interpreter's RELU does, and the normalized value rounded to
 * A before the add as the unfused BN_APPLY stores it, so the result is bit
 * for bit that of the unfused kernels. */
static void BT(run_apply)(const void *x, void *y, const float *sc, const float *sh, const void *r, int act,
                          int64_t inner, int nt) {
    const A *xp = x, *rp = r;
    A *yp = y;
    v16 scv = V16(sc), shv = V16(sh);
    for (int64_t k = 0; k < inner; k++) {
        v16 t = LDV(xp + k * 16) * scv + shv;
        if (act) {
            if (rp) {
                RNDV(t);
                t += LDV(rp + k * 16);
            }
            t = VSEL((t > 0) | (t != t), t, (v16){0});
        }
        if (nt) STNT(yp + k * 16, t);
        else STV(yp + k * 16, t);
    }
    if (nt) NT_FENCE();
}

/* dx = k (g - mg - (x - mc) cx) with batch statistics, else k g. */
static void BT(run_dx)(const void *g, const void *x, void *d, const float *k, const float *mg, const float *cx,
                       const float *mc, int64_t inner, int batch, int nt) {
    const A *gp = g, *xp = x;
    A *dp = d;
    v16 kv = V16(k), mgv = V16(mg), cxv = V16(cx), mcv = V16(mc);
    for (int64_t j = 0; j < inner; j++) {
        v16 gv = LDV(gp + j * 16), dv = batch ? kv * (gv - mgv - (LDV(xp + j * 16) - mcv) * cxv) : kv * gv;
        if (nt) STNT(dp + j * 16, dv);
        else STV(dp + j * 16, dv);
    }
    if (nt) NT_FENCE();
}

/* Batch norm's upstream gradient at run position j (bn_grad, cpu.h) into *out:
 * where(out <= 0, 0, a [+ b]), the add rounded to A as the tile
 * interpreter's ADD stores it, so the values are those of the unfused
 * kernels; a NaN out passes the gradient (NaN <= 0 is false), as there.
 * op NULL: out's mask recomputed from x as run_apply computes out (t = x sc
 * + sh; relu(t) stored in A is <= 0 exactly where t rounded to A is, which
 * LE0R tells without rounding; NaN included). */
static inline void BT(grad_at)(const A *ap, const A *bp, const A *op, const A *xp, const v16 *sc, const v16 *sh,
                               int64_t j, v16 *out) {
    v16 g = LDV(ap + j * 16);
    if (bp) {
        g += LDV(bp + j * 16);
        RNDV(g);
    }
    vi16 off = op ? LDV(op + j * 16) <= 0 : LE0R(LDV(xp + j * 16) * *sc + *sh);
    *out = VSEL(off, (v16){0}, g);
}

/* run_sums(g, x, 0, m2) with g = grad_at(a, b, out or x sc + sh), stored
 * to gm if not NULL (the same float operations: the same sums). */
static void BT(run_gsums)(const void *a, const void *b, const void *o, const void *x, void *gm, const float *m2,
                          const float *sc, const float *sh, int64_t inner, double *acc) {
    const A *ap = a, *bp = b, *op = o, *xp = x;
    A *gp = gm;
    v16 r0 = {0}, r1 = {0}, m2v = V16(m2), scv = V16(sc), shv = V16(sh);
    for (int64_t k = 0; k < inner; k++) {
        v16 g;
        BT(grad_at)(ap, bp, op, xp, &scv, &shv, k, &g);
        if (gp) STV(gp + k * 16, g);
        r0 += g;
        r1 += g * (LDV(xp + k * 16) - m2v);
    }
    BN_FN(add_lanes)(acc, &r0, &r1);
}

/* run_dx with g = grad_at(a, b, out or x sc + sh). */
static void BT(run_gdx)(const void *a, const void *b, const void *o, const void *x, void *d, const float *k,
                        const float *mg, const float *cx, const float *mc, const float *sc, const float *sh,
                        int64_t inner, int batch, int nt) {
    const A *ap = a, *bp = b, *op = o, *xp = x;
    A *dp = d;
    v16 kv = V16(k), mgv = V16(mg), cxv = V16(cx), mcv = V16(mc), scv = V16(sc), shv = V16(sh);
    for (int64_t j = 0; j < inner; j++) {
        v16 gv;
        BT(grad_at)(ap, bp, op, xp, &scv, &shv, j, &gv);
        v16 dv = batch ? kv * (gv - mgv - (LDV(xp + j * 16) - mcv) * cxv) : kv * gv;
        if (nt) STNT(dp + j * 16, dv);
        else STV(dp + j * 16, dv);
    }
    if (nt) NT_FENCE();
}
