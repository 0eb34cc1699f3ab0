/* The loops of the attention kernels (attention.c), compiled once per
 * instruction set (included through isa_copies.h, ISA_SUF the suffix). A
 * tile of scores is a small matrix product: the key rows are transposed
 * into kt so each query element multiplies a row of BK keys, one v16 at a
 * time, with the BK accumulators of the row in registers (a dot product
 * per score would reduce across lanes). Loops over the head dim D are
 * `omp simd`: any D, with a scalar tail. Not a normal header (no include
 * guard, on purpose). */
#define AT_FN(x) CAT3(x, ISA_SUF, )

/* out[i * BK + j] = a_i . b_j for i < ni, j < BK (rows of D floats at a and
 * b; key rows at or past nj count as zeros). */
static void AT_FN(tile_dots)(const float *a, const float *b, int64_t D, int64_t ni, int64_t nj, float *out) {
    float kt[DMAX * BK];
    for (int64_t c = 0; c < D; c++)
        for (int64_t j = 0; j < BK; j++) kt[c * BK + j] = j < nj ? b[j * D + c] : 0.0f;
    for (int64_t i = 0; i < ni; i++) {
        v16 r0 = {0}, r1 = {0}, r2 = {0}, r3 = {0};
        const float *ai = a + i * D;
        for (int64_t c = 0; c < D; c++) {
            const float *kc = kt + c * BK;
            float x = ai[c];
            r0 += x * V16(kc), r1 += x * V16(kc + 16), r2 += x * V16(kc + 32), r3 += x * V16(kc + 48);
        }
        float *o = out + i * BK;
        V16(o) = r0, V16(o + 16) = r1, V16(o + 32) = r2, V16(o + 48) = r3;
    }
}

/* Scaled scores of query rows [i0, i0 + ni) against keys [j0, j0 + nj)
 * into s (ni x BK); masked entries are -inf. */
static void AT_FN(scores)(const att *a, const float *q, const float *k, int64_t i0, int64_t ni, int64_t j0,
                          int64_t nj, float *s) {
    AT_FN(tile_dots)(q + i0 * a->g.D, k + j0 * a->g.D, a->g.D, ni, nj, s);
    for (int64_t i = 0; i < ni; i++) {
        float *si = s + i * BK;
        OMP_SIMD for (int64_t j = 0; j < BK; j++) si[j] *= a->scale;
        if (a->g.causal)
            for (int64_t j = i0 + i + 1 - j0 < 0 ? 0 : i0 + i + 1 - j0; j < nj; j++) si[j] = -INFINITY;
    }
}

/* One query tile of problem bh: o rows, or, if lse is given, each row's
 * log-sum-exp (the backward's first sweep; then v is not read). */
static void AT_FN(tile_fwd)(const att *a, int64_t bh, const float *q, const float *k, const float *v, int64_t i0,
                            int64_t ni, float *o, float *lse) {
    int64_t D = a->g.D, kend = att_kend(a, i0, ni);
    float s[BQ * BK], m[BQ], l[BQ], acc[BQ * DMAX];
    for (int64_t i = 0; i < ni; i++) m[i] = -INFINITY, l[i] = 0;
    if (!lse) memset(acc, 0, (size_t)(ni * D) * sizeof *acc);
    for (int64_t j0 = 0; j0 < kend; j0 += BK) {
        int64_t nj = kend - j0 < BK ? kend - j0 : BK;
        AT_FN(scores)(a, q, k, i0, ni, j0, nj, s);
        for (int64_t i = 0; i < ni; i++) {
            float *si = s + i * BK, mx = m[i];
            for (int64_t j = 0; j < nj; j++) mx = si[j] > mx ? si[j] : mx;
            if (mx == -INFINITY) continue; /* every key of this tile is masked */
            float corr = expf(m[i] - mx), sum = 0;
            OMP_SIMD_SUM(sum) for (int64_t j = 0; j < nj; j++) sum += (si[j] = expf(si[j] - mx));
            l[i] = l[i] * corr + sum;
            m[i] = mx;
            if (lse) continue;
            float *ai = acc + i * D;
            OMP_SIMD for (int64_t c = 0; c < D; c++) ai[c] *= corr;
            for (int64_t j = 0; j < nj; j++) {
                float w = si[j] * att_drop(a, bh, i0 + i, j0 + j);
                if (w == 0) continue;
                const float *vj = v + (j0 + j) * D;
                OMP_SIMD for (int64_t c = 0; c < D; c++) ai[c] += w * vj[c];
            }
        }
    }
    for (int64_t i = 0; i < ni; i++) {
        if (lse) {
            lse[i] = m[i] + logf(l[i]);
            continue;
        }
        float inv = 1.0f / l[i];
        OMP_SIMD for (int64_t c = 0; c < D; c++) o[(i0 + i) * D + c] = acc[i * D + c] * inv;
    }
}

static void AT_FN(forward)(const att *a, void *const *in, float *out) {
    int64_t nt = (a->g.T + BQ - 1) / BQ, TD = a->g.T * a->g.D;
#pragma omp parallel for schedule(dynamic)
    for (int64_t t = 0; t < a->g.BH * nt; t++) {
        int64_t bh = t / nt, i0 = t % nt * BQ, ni = a->g.T - i0 < BQ ? a->g.T - i0 : BQ;
        const float *q = (const float *)in[0] + bh * TD, *k = (const float *)in[1] + bh * TD;
        AT_FN(tile_fwd)(a, bh, q, k, (const float *)in[2] + bh * TD, i0, ni, out + bh * TD, NULL);
    }
}

/* ATTENTION_BWD (g, q, k, v, out) -> [dq; dk; dv]. Problems in parallel; the
 * query tiles of one problem in order, since they all add into its dk, dv.
 * Per tile pair: P = exp(S - lse), dPd = dO V^T (both as tile_dots),
 * dS = scale P (dPd M - rowsum(dO O)); dv += (P M)^T dO, dq += dS K,
 * dk += dS^T Q. */
static void AT_FN(backward)(const att *a, void *const *in, float *out) {
    int64_t TD = a->g.T * a->g.D, D = a->g.D, total = a->g.BH * TD;
#pragma omp parallel for schedule(dynamic)
    for (int64_t bh = 0; bh < a->g.BH; bh++) {
        const float *g = (const float *)in[0] + bh * TD, *q = (const float *)in[1] + bh * TD;
        const float *k = (const float *)in[2] + bh * TD, *v = (const float *)in[3] + bh * TD;
        const float *o = (const float *)in[4] + bh * TD;
        float *dq = out + bh * TD, *dk = out + total + bh * TD, *dv = out + 2 * total + bh * TD;
        memset(dk, 0, (size_t)TD * sizeof *dk);
        memset(dv, 0, (size_t)TD * sizeof *dv);
        float s[BQ * BK], dp[BQ * BK], lse[BQ], di[BQ], dqa[BQ * DMAX];
        for (int64_t i0 = 0; i0 < a->g.T; i0 += BQ) {
            int64_t ni = a->g.T - i0 < BQ ? a->g.T - i0 : BQ, kend = att_kend(a, i0, ni);
            AT_FN(tile_fwd)(a, bh, q, k, NULL, i0, ni, NULL, lse);
            for (int64_t i = 0; i < ni; i++) {
                float d = 0;
                const float *gi = g + (i0 + i) * D, *oi = o + (i0 + i) * D;
                OMP_SIMD_SUM(d) for (int64_t c = 0; c < D; c++) d += gi[c] * oi[c];
                di[i] = d;
            }
            memset(dqa, 0, (size_t)(ni * D) * sizeof *dqa);
            for (int64_t j0 = 0; j0 < kend; j0 += BK) {
                int64_t nj = kend - j0 < BK ? kend - j0 : BK;
                AT_FN(scores)(a, q, k, i0, ni, j0, nj, s);
                AT_FN(tile_dots)(g + i0 * D, v + j0 * D, D, ni, nj, dp);
                for (int64_t i = 0; i < ni; i++) {
                    const float *gi = g + (i0 + i) * D, *qi = q + (i0 + i) * D;
                    float *dqi = dqa + i * D;
                    for (int64_t j = 0; j < nj; j++) {
                        float pij = expf(s[i * BK + j] - lse[i]);
                        if (pij == 0) continue; /* masked (exp(-inf)) or underflow: contributes nothing */
                        float mij = att_drop(a, bh, i0 + i, j0 + j), pm = pij * mij;
                        float ds = a->scale * pij * (dp[i * BK + j] * mij - di[i]);
                        const float *kj = k + (j0 + j) * D;
                        float *dvj = dv + (j0 + j) * D, *dkj = dk + (j0 + j) * D;
                        OMP_SIMD for (int64_t c = 0; c < D; c++) {
                            dvj[c] += pm * gi[c];
                            dqi[c] += ds * kj[c];
                            dkj[c] += ds * qi[c];
                        }
                    }
                }
            }
            memcpy(dq + i0 * D, dqa, (size_t)(ni * D) * sizeof *dqa);
        }
    }
}

#undef AT_FN
