/* The per-run loops of bn_blocked.c, compiled once per instruction set
 * (included through isa_copies.h, ISA_SUF the suffix): a
 * v16 is one zmm under AVX-512, two ymm under AVX2; on the baseline its four
 * xmm do not all fit in registers with the accumulators. Not a normal
 * header (no include guard, on purpose). */
#define BN_FN(x) CAT3(x, ISA_SUF, )

/* One run of 16 channels: acc[i] += sum(a - m), acc[16 + i] += sum((a - m) * (b - m2)). */
static void BN_FN(run_sums)(const float *ap, const float *bp, const float *m, const float *m2, int64_t inner,
                            double *acc) {
    v16 r0 = {0}, r1 = {0}, mv = V16(m), m2v = V16(m2);
    for (int64_t k = 0; k < inner; k++) {
        v16 d = V16(ap + k * 16) - mv;
        r0 += d;
        r1 += d * (V16(bp + k * 16) - m2v);
    }
    float s0[16], s1[16];
    memcpy(s0, &r0, sizeof s0);
    memcpy(s1, &r1, sizeof s1);
    for (int i = 0; i < 16; i++) {
        acc[i] += s0[i];
        acc[16 + i] += s1[i];
    }
}

/* y = x sc + sh; act: y = relu(y + r) (rp may be NULL), relu keeping NaN
 * as the tile interpreter's RELU does, so the result is bit for bit that
 * of the unfused kernels. */
static void BN_FN(run_apply)(const float *xp, float *yp, const float *sc, const float *sh, const float *rp, int act,
                             int64_t inner) {
    v16 scv = V16(sc), shv = V16(sh);
    if (!act) {
        for (int64_t k = 0; k < inner; k++) V16(yp + k * 16) = V16(xp + k * 16) * scv + shv;
        return;
    }
    for (int64_t k = 0; k < inner; k++) {
        v16 t = V16(xp + k * 16) * scv + shv;
        if (rp) t += V16(rp + k * 16);
        V16(yp + k * 16) = VSEL((t > 0) | (t != t), t, (v16){0});
    }
}

/* dx = k (g - mg - (x - mc) cx) with batch statistics, else k g. */
static void BN_FN(run_dx)(const float *gp, const float *xp, float *dp, const float *k, const float *mg, const float *cx,
                          const float *mc, int64_t inner, int batch) {
    v16 kv = V16(k), mgv = V16(mg), cxv = V16(cx), mcv = V16(mc);
    for (int64_t j = 0; j < inner; j++) {
        v16 gv = V16(gp + j * 16);
        V16(dp + j * 16) = batch ? kv * (gv - mgv - (V16(xp + j * 16) - mcv) * cxv) : kv * gv;
    }
}

static const bn_rows BN_FN(bn_rows) = {BN_FN(run_sums), BN_FN(run_apply), BN_FN(run_dx)};

#undef BN_FN
