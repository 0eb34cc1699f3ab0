/* The loops of the attention kernels (attention.c), compiled once per
 * instruction set (included through isa_copies.h, ISA_SUF the suffix). Not
 * a normal header (no include guard, on purpose).
 *
 * Every product of the kernels is one small matrix product, C (m x 16 nv)
 * += A (m x k) B (k x 16 nv), in a register-blocked loop (mk below): up to
 * MR rows of C by 4 vectors of 16 (fewer where the registers are fewer:
 * AT_MR, AT_NV), each element of A broadcast against a row of B. A is
 * read through two strides, so a tile and its transpose are both an A.
 * B's rows are 16-float multiples: the head dim is padded to Dp (the
 * problem's operands copied when D is not a multiple of 16), and the keys'
 * transposes (kt, vt) are padded to Tp columns.
 *
 * With AT_DP defined (the AVX512-BF16 copy, bfloat16 operands), A and B
 * hold 32-bit words of two bfloat16 values that are neighbours along k:
 * vdpbf16ps multiplies a broadcast word of A with 16 words of B and adds
 * both products to float32 sums, so a loop step takes two values of k. q
 * and dO are rows of such words as they stand (pairs along D); k and v are
 * transposed as words (pairs along D, for q k^T and dO v^T), or paired two
 * rows at a time (pairs along T, for P v, dS k, and, q and dO, for dS^T q
 * and P^T dO); the probabilities and dS are rounded to bfloat16 per tile,
 * as flash attention does, after softmax's statistics were taken in
 * float32. */
#define AT_FN(x) CAT3(x, ISA_SUF, )

#ifdef AT_DP
#define AT_EL uint32_t /* two bfloat16 */

/* C (mr x 16 nv) = (add ? C : 0) + A (mr x 2k) B (2k x 16 nv), A and B
 * words of bfloat16 pairs along k; as the float32 mk below. */
static inline __attribute__((always_inline)) void AT_FN(mk)(const int mr, const int nv, int add, int64_t k,
                                                            const AT_EL *A, int64_t ars, int64_t acs, const AT_EL *B,
                                                            int64_t ldb, float *C, int64_t ldc) {
    __m512 c[MR][4];
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++)
            if (r < mr && v < nv) c[r][v] = add ? _mm512_loadu_ps(C + r * ldc + 16 * v) : _mm512_setzero_ps();
    for (int64_t p = 0; p < k; p++) {
        __m512bh b[4];
        const AT_EL *bp = B + p * ldb;
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++)
            if (v < nv) b[v] = (__m512bh)_mm512_loadu_si512(bp + 16 * v);
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            if (r >= mr) continue;
            __m512bh a = (__m512bh)_mm512_set1_epi32((int)A[r * ars + p * acs]);
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++)
                if (v < nv) c[r][v] = _mm512_dpbf16_ps(c[r][v], a, b[v]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++)
            if (r < mr && v < nv) _mm512_storeu_ps(C + r * ldc + 16 * v, c[r][v]);
}
#else
#define AT_EL float

/* C (mr x 16 nv) = (add ? C : 0) + A (mr x k) B (k x 16 nv), mr and nv
 * constants at each call (the accumulators stay in registers). */
static inline __attribute__((always_inline)) void AT_FN(mk)(const int mr, const int nv, int add, int64_t k,
                                                            const float *A, int64_t ars, int64_t acs, const float *B,
                                                            int64_t ldb, float *C, int64_t ldc) {
    v16 c[MR][4];
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++)
            if (r < mr && v < nv) c[r][v] = add ? V16(C + r * ldc + 16 * v) : (v16){0};
    for (int64_t p = 0; p < k; p++) {
        v16 b[4];
        const float *bp = B + p * ldb;
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++)
            if (v < nv) b[v] = V16(bp + 16 * v);
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            if (r >= mr) continue;
            float a = A[r * ars + p * acs];
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++)
                if (v < nv) c[r][v] += a * b[v];
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++)
            if (r < mr && v < nv) V16(C + r * ldc + 16 * v) = c[r][v];
}
#endif

#define AT_MK(R, NV) AT_FN(mk)(R, NV, add, kn, a, ars, acs, b, ldb, c, ldc)
#define AT_MK_ROWS(NV)                                                                                                 \
    switch (mr) {                                                                                                      \
    case 6: AT_MK(6, NV); break;                                                                                       \
    case 5: AT_MK(5, NV); break;                                                                                       \
    case 4: AT_MK(4, NV); break;                                                                                       \
    case 3: AT_MK(3, NV); break;                                                                                       \
    case 2: AT_MK(2, NV); break;                                                                                       \
    default: AT_MK(1, NV); break;                                                                                      \
    }

/* The block mm gives mk: AT_MR rows by AT_NV vectors of 16, as many
 * accumulators as the registers hold with a row of B and a broadcast: 24
 * of AVX-512's 32 zmm; AVX2's 16 ymm hold 6 x 1 (12 ymm), where 6 x 4 had
 * spilled to the stack (a tenth of AVX-512's speed per flop, not half); 2
 * x 1 in SSE's 16 xmm. */
#if defined(__AVX512F__)
#define AT_MR MR
#define AT_NV 4
#elif defined(__AVX2__)
#define AT_MR MR
#define AT_NV 1
#else
#define AT_MR 2
#define AT_NV 1
#endif

/* C (m x n) = (add ? C : 0) + A (m x k) B (k x n), n a multiple of 16
 * (AT_DP: k words of A's rows and B's columns, 2k products), tri the part
 * a causal diagonal tile needs (attention.c). */
static void AT_FN(mm)(int add, int tri, int64_t m, int64_t n, int64_t k, const AT_EL *A, int64_t ars, int64_t acs,
                      const AT_EL *B, int64_t ldb, float *C, int64_t ldc) {
    for (int64_t j = 0; j < n; j += 16 * AT_NV) {
        int nvj = n - j >= 16 * AT_NV ? AT_NV : (int)(n - j) / 16;
        for (int64_t i = 0; i < m; i += AT_MR) {
            int mr = m - i >= AT_MR ? AT_MR : (int)(m - i), nv = nvj;
            int64_t k0 = tri == TRI_KLO ? i : 0, kn = (tri == TRI_KHI && i + mr < k ? i + mr : k) - k0;
            if (tri == TRI_COLS && i + mr - j < 16 * nv) {
                if (i + mr <= j) continue; /* the block's columns from j on all masked */
                nv = (int)(i + mr - j + 15) / 16;
            }
            const AT_EL *a = A + i * ars + k0 * acs, *b = B + j + k0 * ldb;
            float *c = C + i * ldc + j;
            switch (nv) {
            case 4: AT_MK_ROWS(4) break;
            case 3: AT_MK_ROWS(3) break;
            case 2: AT_MK_ROWS(2) break;
            default: AT_MK_ROWS(1) break;
            }
        }
    }
}
#undef AT_MK_ROWS
#undef AT_MK

/* kt (Dp rows of Tp) = x^T (x: T rows of ld >= Dp floats), zero past T:
 * 16 x 16 blocks transposed in registers, four rounds of two-source
 * shuffles (round b pairs rows i and i + b and swaps their off-diagonal
 * b x b blocks). __builtin_shufflevector: gcc 12 and clang. */
#define AT_ROUND(B, LO, HI)                                                                                            \
    _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) {                                                           \
        if (i & (B)) continue;                                                                                         \
        v16 u = r[i], w = r[i + (B)];                                                                                  \
        r[i] = __builtin_shufflevector(u, w, LO);                                                                      \
        r[i + (B)] = __builtin_shufflevector(u, w, HI);                                                                \
    }
static void AT_FN(transpose)(const float *x, int64_t T, int64_t Dp, int64_t ld, int64_t Tp, float *kt) {
    for (int64_t j0 = 0; j0 < Tp; j0 += 16)
        for (int64_t c0 = 0; c0 < Dp; c0 += 16) {
            v16 r[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) r[i] = j0 + i < T ? V16(x + (j0 + i) * ld + c0) : (v16){0};
            AT_ROUND(8, AT_IDX(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23),
                     AT_IDX(8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31))
            AT_ROUND(4, AT_IDX(0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27),
                     AT_IDX(4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31))
            AT_ROUND(2, AT_IDX(0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29),
                     AT_IDX(2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31))
            AT_ROUND(1, AT_IDX(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30),
                     AT_IDX(1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31))
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) V16(kt + (c0 + i) * Tp + j0) = r[i];
        }
}
#undef AT_ROUND

#ifndef AT_DP /* the widening copies' */
/* dst[0, Dp) = row x[0, D) as floats, zero past D. (Here, not in
 * attention.c: vectorized per instruction set.) */
static void AT_FN(widen_row)(float *dst, const void *x, int bf16, int64_t D, int64_t Dp) {
    if (bf16) {
        const uint16_t *h = x;
        OMP_SIMD for (int64_t c = 0; c < D; c++) dst[c] = bf16_to_f32(h[c]);
    } else {
        memcpy(dst, x, (size_t)D * sizeof *dst);
    }
    memset(dst + D, 0, (size_t)(Dp - D) * sizeof *dst);
}
#endif

/* Output row y[off, off + n) = mul * x, rounded to bfloat16 if bf16. */
static void AT_FN(put_row)(void *y, int bf16, int64_t off, const float *x, float mul, int64_t n) {
    if (bf16) {
        uint16_t *h = (uint16_t *)y + off;
        OMP_SIMD for (int64_t c = 0; c < n; c++) h[c] = bf16_from_f32(x[c] * mul);
    } else {
        float *f = (float *)y + off;
        OMP_SIMD for (int64_t c = 0; c < n; c++) f[c] = x[c] * mul;
    }
}

#ifdef AT_DP
/* Rows of T bfloat16 (x, ld elements apart) as T rows of Dw words: word
 * c holds x[2c] (low half) and x[2c + 1], zero past D. */
static void AT_FN(words)(const uint16_t *x, int64_t ld, int64_t T, int64_t D, int64_t Dw, uint32_t *w) {
    for (int64_t i = 0; i < T; i++) {
        const uint16_t *xi = x + i * ld;
        uint32_t *wi = w + i * Dw;
        OMP_SIMD for (int64_t c = 0; c < D / 2; c++) wi[c] = (uint32_t)xi[2 * c] | (uint32_t)xi[2 * c + 1] << 16;
        if (D & 1) wi[D / 2] = xi[D - 1];
        for (int64_t c = (D + 1) / 2; c < Dw; c++) wi[c] = 0;
    }
}

/* Rows of T bfloat16 (x, ld elements apart) paired: word (r, c) of w
 * (Tp / 2 rows of Dp) holds x[2r][c] (low half) and x[2r + 1][c], zero
 * past T and past D. */
static void AT_FN(pairs)(const uint16_t *x, int64_t ld, int64_t T, int64_t D, int64_t Dp, int64_t Tp, uint32_t *w) {
    static const uint16_t zero[DMAX];
    for (int64_t r = 0; r < Tp / 2; r++) {
        const uint16_t *lo = 2 * r < T ? x + 2 * r * ld : zero, *hi = 2 * r + 1 < T ? x + (2 * r + 1) * ld : zero;
        uint32_t *wr = w + r * Dp;
        OMP_SIMD for (int64_t c = 0; c < D; c++) wr[c] = (uint32_t)lo[c] | (uint32_t)hi[c] << 16;
        for (int64_t c = D; c < Dp; c++) wr[c] = 0;
    }
}

/* Problem bh's bfloat16 operands (forward: in q, k, v; backward: g, q, k,
 * v, out) as the words of prob (AT_DP), in mem (prob_words(a) words). */
static void AT_FN(prob_load)(const att *a, void *const *in, int64_t bh, float *mem, prob *p) {
    int64_t T = a->g.T, D = a->g.D, ld[4] = {0}, Dp = up16(D), Tp = up16(T), Dw = up16((D + 1) / 2);
    int bwd = a->bwd;
    const uint16_t *q = operand(a, in, bwd, bh, &ld[0]), *k = operand(a, in, bwd + 1, bh, &ld[1]);
    const uint16_t *v = operand(a, in, bwd + 2, bh, &ld[2]), *g = bwd ? operand(a, in, 0, bh, &ld[3]) : NULL;
    float *next = mem;
    uint32_t *tmp = (uint32_t *)take(&next, T * Dw), *qw = (uint32_t *)take(&next, T * Dw);
    p->D = D, p->Dp = Dp, p->Tp = Tp, p->kw = (D + 1) / 2, p->Dw = Dw;
    AT_FN(words)(q, ld[0], T, D, Dw, qw);
    p->qw = qw;
    AT_FN(words)(k, ld[1], T, D, Dw, tmp);
    p->ktw = (uint32_t *)take(&next, Dw * Tp);
    AT_FN(transpose)((const float *)tmp, T, Dw, Dw, Tp, (float *)p->ktw); /* bits moved, not read as floats */
    if (!bwd) {
        AT_FN(pairs)(v, ld[2], T, D, Dp, Tp, p->vp = (uint32_t *)take(&next, Tp / 2 * Dp));
        return;
    }
    AT_FN(words)(v, ld[2], T, D, Dw, tmp);
    p->vtw = (uint32_t *)take(&next, Dw * Tp);
    AT_FN(transpose)((const float *)tmp, T, Dw, Dw, Tp, (float *)p->vtw);
    uint32_t *gw = (uint32_t *)take(&next, T * Dw);
    AT_FN(words)(g, ld[3], T, D, Dw, gw);
    p->gw = gw;
    AT_FN(pairs)(k, ld[1], T, D, Dp, Tp, p->kp = (uint32_t *)take(&next, Tp / 2 * Dp));
    AT_FN(pairs)(q, ld[0], T, D, Dp, Tp, p->qp = (uint32_t *)take(&next, Tp / 2 * Dp));
    AT_FN(pairs)(g, ld[3], T, D, Dp, Tp, p->gp = (uint32_t *)take(&next, Tp / 2 * Dp));
    p->lse = take(&next, T), p->di = take(&next, T), p->dq = take(&next, T * Dp);
    p->dk = take(&next, 2 * BK * Dp), p->dv = p->dk + BK * Dp;
    p->sk = att_kept(a) ? take(&next, att_kept(a)) : NULL;
}

/* Scores (unscaled) of query rows [i0, i0 + ni) against keys [j0, j0 +
 * nj) into s (ni rows of BK; columns up to nj rounded up to 16 are written). */
static void AT_FN(scores)(const prob *p, int64_t i0, int64_t ni, int64_t j0, int64_t nj, int diag, float *s) {
    int tri = diag ? TRI_COLS : TRI_NONE;
    AT_FN(mm)(0, tri, ni, up16(nj), p->kw, p->qw + i0 * p->Dw, p->Dw, 1, p->ktw + j0, p->Tp, s, BK);
}

/* w (ni rows of BK / 2 words) = the first n columns (a multiple of 16) of
 * tile s (ni rows of BK) rounded to bfloat16: pairs along the row. */
static void AT_FN(pack_rows)(const float *s, int64_t ni, int64_t n, uint32_t *w) {
    for (int64_t i = 0; i < ni; i++)
        for (int64_t j = 0; j < n; j += 16)
            _mm256_storeu_si256((__m256i *)((uint16_t *)(w + i * (BK / 2)) + j),
                                (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(s + i * BK + j)));
}

/* w ((ni + 1) / 2 rows of BK words) = the first n columns of tile s (ni
 * rows of BK) rounded to bfloat16, rows paired: word (r, j) holds s[2r][j]
 * (low half) and s[2r + 1][j] (0 past ni). */
static void AT_FN(pack_cols)(const float *s, int64_t ni, int64_t n, uint32_t *w) {
    for (int64_t r = 0; 2 * r < ni; r++)
        for (int64_t j = 0; j < n; j += 16) {
            __m512i lo = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(s + 2 * r * BK + j)));
            __m512i hi = _mm512_setzero_si512();
            if (2 * r + 1 < ni)
                hi = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(s + (2 * r + 1) * BK + j)));
            _mm512_storeu_si512(w + r * BK + j, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
        }
}

/* acc (ni rows of Dp) += P v for keys [j0, j0 + nj), P the tile s (ni rows
 * of BK, 0 past nj) rounded to bfloat16. k counts key pairs here: on the
 * diagonal, TRI_KHI's k up to row i keeps the (i + 2) / 2 pairs row i
 * needs, and more. */
static void AT_FN(pv)(const prob *p, int64_t ni, int64_t j0, int64_t nj, int diag, const float *s, float *acc) {
    uint32_t w[BQ * BK / 2];
    AT_FN(pack_rows)(s, ni, up16(nj), w);
    int tri = diag ? TRI_KHI : TRI_NONE;
    AT_FN(mm)(1, tri, ni, p->Dp, (nj + 1) / 2, w, BK / 2, 1, p->vp + j0 / 2 * p->Dp, p->Dp, acc, p->Dp);
}

/* dp (ni rows of BK) = dO v^T for query rows [i0, i0 + ni), keys [j0, j0 + nj). */
static void AT_FN(dp_tile)(const prob *p, int64_t i0, int64_t ni, int64_t j0, int64_t nj, int diag, float *dp) {
    int tri = diag ? TRI_COLS : TRI_NONE;
    AT_FN(mm)(0, tri, ni, up16(nj), p->kw, p->gw + i0 * p->Dw, p->Dw, 1, p->vtw + j0, p->Tp, dp, BK);
}

/* The tile pair's share of the gradients: dv += P^T dO, dk += dS^T q, dq
 * += dS k (s: P, ds: dS, ni rows of BK, zero from nj to nj rounded up to
 * 16), P and dS rounded to bfloat16, as PyTorch's CPU flash attention
 * does (its attn_reduced and grad_attn_reduced). dv and dk's k counts
 * query pairs: TRI_KLO, k from row j on, would skip those of queries j / 2
 * to j; they run whole. */
static void AT_FN(grads)(const prob *p, int64_t i0, int64_t ni, int64_t j0, int64_t nj, int diag, const float *s,
                         const float *ds) {
    int64_t Dp = p->Dp, njp = up16(nj), h = (ni + 1) / 2;
    uint32_t w[BQ * BK / 2];
    AT_FN(pack_cols)(s, ni, njp, w);
    AT_FN(mm)(1, TRI_NONE, nj, Dp, h, w, 1, BK, p->gp + i0 / 2 * Dp, Dp, p->dv, Dp);
    AT_FN(pack_cols)(ds, ni, njp, w);
    AT_FN(mm)(1, TRI_NONE, nj, Dp, h, w, 1, BK, p->qp + i0 / 2 * Dp, Dp, p->dk, Dp);
    AT_FN(pack_rows)(ds, ni, njp, w);
    int tri = diag ? TRI_KHI : TRI_NONE;
    AT_FN(mm)(1, tri, ni, Dp, (nj + 1) / 2, w, BK / 2, 1, p->kp + j0 / 2 * Dp, Dp, p->dq + i0 * Dp, Dp);
}

/* Row i of dO (as its bfloat16 words hold it) dotted with o (D values,
 * bfloat16: bf16 is always 1 here). */
static float AT_FN(g_dot)(const prob *p, int64_t i, const void *ov, int bf16) {
    const uint32_t *gi = p->gw + i * p->Dw;
    const uint16_t *o = ov;
    float d = 0;
    (void)bf16;
    OMP_SIMD_SUM(d) for (int64_t c = 0; c < p->D; c++) {
        uint16_t h = (uint16_t)(gi[c / 2] >> (c & 1 ? 16 : 0));
        d += bf16_to_f32(h) * bf16_to_f32(o[c]);
    }
    return d;
}
#else
/* Problem bh's operands (forward: in q, k, v; backward: g, q, k, v, out)
 * into p, copies and buffers in mem (prob_floats(a) floats): float32
 * operands whose D is a multiple of 16 are read in place, the others
 * copied as float32 rows padded to Dp. */
static void AT_FN(prob_load)(const att *a, void *const *in, int64_t bh, float *mem, prob *p) {
    int64_t T = a->g.T, D = a->g.D, ld[4] = {0};
    int bwd = a->bwd;
    const void *src[4] = {operand(a, in, bwd, bh, &ld[0]), operand(a, in, bwd + 1, bh, &ld[1]),
                          operand(a, in, bwd + 2, bh, &ld[2]), bwd ? operand(a, in, 0, bh, &ld[3]) : NULL};
    float *next = mem;
    p->D = D, p->Dp = up16(D), p->Tp = up16(T);
    if (D != p->Dp || a->bf16) {
        size_t es = a->bf16 ? 2 : 4;
        for (int o = 0; o < 3 + bwd; o++) {
            float *c = take(&next, T * p->Dp);
            for (int64_t i = 0; i < T; i++)
                AT_FN(widen_row)(c + i * p->Dp, (const char *)src[o] + (size_t)(i * ld[o]) * es, a->bf16, D, p->Dp);
            src[o] = c, ld[o] = p->Dp;
        }
    }
    p->q = src[0], p->k = src[1], p->v = src[2], p->g = src[3];
    p->ldq = ld[0], p->ldk = ld[1], p->ldv = ld[2], p->ldg = ld[3];
    AT_FN(transpose)(p->k, T, p->Dp, p->ldk, p->Tp, p->kt = take(&next, p->Dp * p->Tp));
    if (!bwd) return;
    AT_FN(transpose)(p->v, T, p->Dp, p->ldv, p->Tp, p->vt = take(&next, p->Dp * p->Tp));
    p->lse = take(&next, T), p->di = take(&next, T), p->dq = take(&next, T * p->Dp);
    p->dk = take(&next, 2 * BK * p->Dp), p->dv = p->dk + BK * p->Dp;
    p->sk = att_kept(a) ? take(&next, att_kept(a)) : NULL;
}

/* Scores (unscaled) of query rows [i0, i0 + ni) against keys [j0, j0 +
 * nj) into s (ni rows of BK; columns up to nj rounded up to 16 are written). */
static void AT_FN(scores)(const prob *p, int64_t i0, int64_t ni, int64_t j0, int64_t nj, int diag, float *s) {
    int tri = diag ? TRI_COLS : TRI_NONE;
    AT_FN(mm)(0, tri, ni, up16(nj), p->D, p->q + i0 * p->ldq, p->ldq, 1, p->kt + j0, p->Tp, s, BK);
}

/* acc (ni rows of Dp) += P v for keys [j0, j0 + nj), P the tile s (ni rows of BK). */
static void AT_FN(pv)(const prob *p, int64_t ni, int64_t j0, int64_t nj, int diag, const float *s, float *acc) {
    AT_FN(mm)(1, diag ? TRI_KHI : TRI_NONE, ni, p->Dp, nj, s, BK, 1, p->v + j0 * p->ldv, p->ldv, acc, p->Dp);
}

/* dp (ni rows of BK) = dO v^T for query rows [i0, i0 + ni), keys [j0, j0 + nj). */
static void AT_FN(dp_tile)(const prob *p, int64_t i0, int64_t ni, int64_t j0, int64_t nj, int diag, float *dp) {
    int tri = diag ? TRI_COLS : TRI_NONE;
    AT_FN(mm)(0, tri, ni, up16(nj), p->D, p->g + i0 * p->ldg, p->ldg, 1, p->vt + j0, p->Tp, dp, BK);
}

/* The tile pair's share of the gradients: dv += P^T dO, dk += dS^T q, dq
 * += dS k (s: P, ds: dS, ni rows of BK, zero from nj to nj rounded up to 16). */
static void AT_FN(grads)(const prob *p, int64_t i0, int64_t ni, int64_t j0, int64_t nj, int diag, const float *s,
                         const float *ds) {
    int64_t Dp = p->Dp;
    int lo = diag ? TRI_KLO : TRI_NONE;
    AT_FN(mm)(1, lo, nj, Dp, ni, s, 1, BK, p->g + i0 * p->ldg, p->ldg, p->dv, Dp);
    AT_FN(mm)(1, lo, nj, Dp, ni, ds, 1, BK, p->q + i0 * p->ldq, p->ldq, p->dk, Dp);
    AT_FN(mm)(1, diag ? TRI_KHI : TRI_NONE, ni, Dp, nj, ds, BK, 1, p->k + j0 * p->ldk, p->ldk, p->dq + i0 * Dp, Dp);
}

/* Row i of dO dotted with o (D values, bfloat16 if bf16). */
static float AT_FN(g_dot)(const prob *p, int64_t i, const void *o, int bf16) {
    const float *gi = p->g + i * p->ldg;
    float d = 0;
    if (bf16) {
        const uint16_t *h = o;
        OMP_SIMD_SUM(d) for (int64_t c = 0; c < p->D; c++) d += gi[c] * bf16_to_f32(h[c]);
    } else {
        const float *f = o;
        OMP_SIMD_SUM(d) for (int64_t c = 0; c < p->D; c++) d += gi[c] * f[c];
    }
    return d;
}
#endif

/* *xv = e^x in 16 lanes, x a score less its max or log-sum-exp (<= 0, or
 * -inf: a masked key): 2^n e^r with n = round(x log2 e), r = x - n ln 2
 * (two steps) in [-ln 2 / 2, ln 2 / 2] and e^r by its Taylor polynomial
 * of degree 7; relative error 7.9e-8 on [-87.3, 0] (1.0e-7 without FMA),
 * libm's expf's 6.0e-8. NaN gives NaN. In place of libmvec's expf (a call
 * per 16 values) and libm's (per row): a sixth of the float32 kernels'
 * time, and a quarter of the AVX512-BF16 copy's. */
static inline void AT_FN(vexp)(v16 *xv) {
#ifdef __AVX512F__
    /* 2^n by vscalefps, which gives denormals and 0 below (-inf: x is
     * raised to -150 first; max returns its second operand, a NaN x) */
    __m512 x = _mm512_max_ps(_mm512_set1_ps(-150.0f), (__m512)*xv);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v16 nv = (v16)n, r = (v16)x - nv * 0.693145751953125f; /* ln 2's leading bits: n ln2hi exact */
#else
    /* n by adding 1.5 2^23, whose low bits are then n, shifted into the
     * exponent: x below -87.3 gives 0 (where expf gives a denormal down to
     * -103.9, below float's eps of the row's largest term, 1), x above 88
     * (never) is taken as 88 */
    const v16 lo = (v16){0} - 87.33f, big = (v16){0} + 12582912.0f; /* 1.5 2^23 */
    v16 x = *xv;
    vi16 under = x < lo;
    x = VSEL(under, lo, x);
    x = VSEL(x > 88.0f, (v16){0} + 88.0f, x);
    v16 t = x * 1.44269504088896341f + big, nv = t - big;
    v16 r = x - nv * 0.693145751953125f;
#endif
    r = r - nv * 1.42860682030941723e-6f;
    v16 p = r * (1.0f / 5040) + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
#ifdef __AVX512F__
    *xv = (v16)_mm512_scalef_ps((__m512)p, n);
#else
    v16 two_n = (v16)(((vi16)t << 23) + (127 << 23)); /* n + 127 in the exponent */
    *xv = (v16)((vi16)(p * two_n) & ~under);
#endif
}

/* The largest and the sum of 16 lanes: a shuffle tree (a loop over the
 * lanes went through memory, a scalar step each). */
static inline float AT_FN(hmax)(const v16 *xv) {
    v16 x = *xv, y = __builtin_shufflevector(x, x, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
    x = VSEL(y > x, y, x);
    y = __builtin_shufflevector(x, x, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
    x = VSEL(y > x, y, x);
    y = __builtin_shufflevector(x, x, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    x = VSEL(y > x, y, x);
    y = __builtin_shufflevector(x, x, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    x = VSEL(y > x, y, x);
    return x[0];
}
static inline float AT_FN(hsum)(const v16 *xv) {
    v16 x = *xv;
    x += __builtin_shufflevector(x, x, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
    x += __builtin_shufflevector(x, x, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
    x += __builtin_shufflevector(x, x, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    x += __builtin_shufflevector(x, x, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    return x[0];
}

/* Row si of a score tile (BK floats), in registers: scaled, the keys from
 * lim on masked, e^(x - mx) with mx the row's running maximum (*m before,
 * updated), in place if put (else the row is left as it was: the
 * backward's first sweep keeps it); the row's sum returned. Masked 16-key
 * strips are zeroed without their exponentials (half the diagonal tile's). */
static float AT_FN(row_softmax)(float *si, int64_t lim, float scale, float *m, int put) {
    const vi16 lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    const v16 ninf = (v16){0} - INFINITY;
    int nv = (int)(lim + 15) / 16;
    v16 x[BK / 16], mv = ninf, sv = {0};
#pragma GCC unroll 4
    for (int v = 0; v < BK / 16; v++) {
        x[v] = ninf;
        if (v >= nv) continue;
        x[v] = V16(si + 16 * v) * scale;
        if (16 * v + 16 > lim) x[v] = VSEL(lane + 16 * v < (int)lim, x[v], ninf);
        mv = VSEL(x[v] > mv, x[v], mv);
    }
    float mx = AT_FN(hmax)(&mv);
    mx = mx > *m ? mx : *m;
    *m = mx;
#pragma GCC unroll 4
    for (int v = 0; v < BK / 16; v++) {
        v16 e = {0};
        if (v < nv) e = x[v] - mx, AT_FN(vexp)(&e);
        if (put) V16(si + 16 * v) = e;
        sv += e;
    }
    return AT_FN(hsum)(&sv);
}

/* P and dS of a backward tile's row, keys j < lim: si[j] = P = e^(scale
 * si[j] - lse), dpi[j] = dS = scale P (dpi[j] - di) (past lim: anything,
 * the caller zeroes them). */
static void AT_FN(p_ds)(float *si, float *dpi, int64_t lim, float scale, float lse, float di) {
    for (int64_t j = 0; j < lim; j += 16) {
        v16 p = V16(si + j) * scale - lse;
        AT_FN(vexp)(&p);
        V16(si + j) = p;
        V16(dpi + j) = scale * p * (V16(dpi + j) - di);
    }
}

/* The backward's kept score tile of queries from i0, keys from j0. */
static float *AT_FN(kept)(const att *a, const prob *p, int64_t i0, int64_t j0) {
    return p->sk + (i0 / BQ * ((a->g.T + BQ - 1) / BQ) + j0 / BK) * (BQ * BK);
}

/* One query tile [i0, i0 + ni) of a problem: o rows (the output's, from
 * element o_off on), or, if lse is given, each row's log-sum-exp (the
 * backward's first sweep; v is not read; its score tiles are left in
 * p->sk if kept). */
static void AT_FN(tile_fwd)(const att *a, const prob *p, int64_t bh, int64_t i0, int64_t ni, void *o, int64_t o_off,
                            float *lse) {
    int64_t D = p->D, Dp = p->Dp, kend = att_kend(a, i0, ni);
    /* per row: the running max, before this key tile (m0), the sum, this tile's sum */
    float s[BQ * BK], m[BQ], m0[BQ], l[BQ], ls[BQ], acc[BQ * DMAX];
    for (int64_t i = 0; i < BQ; i++) m[i] = -INFINITY, l[i] = ls[i] = 0;
    if (!lse) memset(acc, 0, (size_t)(ni * Dp) * sizeof *acc);
    for (int64_t j0 = 0; j0 < kend; j0 += BK) {
        int64_t nj = kend - j0 < BK ? kend - j0 : BK;
        int diag = a->g.causal && j0 == i0;
        float *st = lse && p->sk ? AT_FN(kept)(a, p, i0, j0) : s;
        AT_FN(scores)(p, i0, ni, j0, nj, diag, st);
        memcpy(m0, m, sizeof m);
        for (int64_t i = 0; i < ni; i++) {
            float *si = st + i * BK;
            int64_t lim = att_lim(a, i0 + i, j0, nj);
            if (lim <= 0) { /* every key of this tile is masked for this row */
                memset(si, 0, BK * sizeof *si);
                ls[i] = 0;
                continue;
            }
            ls[i] = AT_FN(row_softmax)(si, lim, a->scale, &m[i], !lse);
            if (!lse && a->g.p > 0)
                for (int64_t j = 0; j < lim; j++) si[j] *= att_drop(a, bh, i0 + i, j0 + j);
        }
        /* the old sums and outputs rescaled: 0 at a row's first tile (m0 -inf) */
        for (int64_t i = 0; i < ni; i += 16) {
            vi16 same = V16(m0 + i) == V16(m + i); /* 1, also where both are -inf (no key seen yet) */
            v16 corr = V16(m0 + i) - V16(m + i);
            AT_FN(vexp)(&corr);
            corr = VSEL(same, (v16){0} + 1.0f, corr);
            V16(l + i) = V16(l + i) * corr + V16(ls + i);
            if (lse) continue;
            for (int64_t r = i; r < i + 16 && r < ni; r++)
                if (corr[r - i] != 1.0f) {
                    float *ar = acc + r * Dp, cr = corr[r - i];
                    OMP_SIMD for (int64_t c = 0; c < Dp; c++) ar[c] *= cr;
                }
        }
        if (!lse) AT_FN(pv)(p, ni, j0, nj, diag, s, acc);
    }
    for (int64_t i = 0; i < ni; i++) {
        if (lse) {
            lse[i] = m[i] + logf(l[i]);
            continue;
        }
        AT_FN(put_row)(o, a->bf16, o_off + (i0 + i) * D, acc + i * Dp, 1.0f / l[i], D);
    }
}

/* buf: prob_floats(a) floats for each of nthr threads. */
static void AT_FN(forward)(const att *a, void *const *in, void *out, float *buf, int nthr) {
    int64_t nt = (a->g.T + BQ - 1) / BQ, TD = a->g.T * a->g.D;
    size_t per = prob_floats(a);
    /* A problem's tiles to one thread when there are problems enough: its
     * operands are prepared once. */
    int64_t chunk = a->g.BH >= 2 * nthr ? nt : 1;
#pragma omp parallel num_threads(nthr)
    {
        float *mine = buf + (size_t)THREAD_NUM() * per;
        int64_t have = -1; /* the problem whose operands mine holds */
        prob p;
#pragma omp for schedule(dynamic, chunk)
        for (int64_t t = 0; t < a->g.BH * nt; t++) {
            int64_t bh = t / nt, i0 = t % nt * BQ, ni = a->g.T - i0 < BQ ? a->g.T - i0 : BQ;
            if (bh != have) AT_FN(prob_load)(a, in, bh, mine, &p), have = bh;
            AT_FN(tile_fwd)(a, &p, bh, i0, ni, out, bh * TD, NULL);
        }
    }
}

/* ATTENTION_BWD (g, q, k, v, out) -> [dq; dk; dv], in the manner of
 * FlashAttention-2: problems in parallel; within one, a sweep for each
 * row's log-sum-exp (which keeps its score tiles, att_kept), then key
 * tiles outer (their dk, dv tiles complete in
 * place) and query tiles inner (dq accumulates over the key tiles). Per
 * tile pair: P = exp(S - lse) and dP = dO V^T, dS = scale P (dP M -
 * rowsum(dO O)); dv += (P M)^T dO, dk += dS^T Q, dq += dS K. buf:
 * prob_floats(a) floats for each of nthr threads. */
static void AT_FN(backward)(const att *a, void *const *in, void *out, float *buf, int nthr) {
    int64_t TD = a->g.T * a->g.D, total = a->g.BH * TD, T = a->g.T, D = a->g.D;
    size_t per = prob_floats(a);
#pragma omp parallel num_threads(nthr)
    {
        float *mine = buf + (size_t)THREAD_NUM() * per;
        prob p;
#pragma omp for schedule(dynamic)
        for (int64_t bh = 0; bh < a->g.BH; bh++) {
            AT_FN(prob_load)(a, in, bh, mine, &p);
            int64_t Dp = p.Dp;
            for (int64_t i0 = 0; i0 < T; i0 += BQ)
                AT_FN(tile_fwd)(a, &p, bh, i0, T - i0 < BQ ? T - i0 : BQ, NULL, 0, p.lse + i0);
            for (int64_t i = 0; i < T; i++) /* the output O is contiguous */
                p.di[i] = AT_FN(g_dot)(&p, i, (const char *)in[4] + (size_t)(bh * TD + i * D) * (a->bf16 ? 2 : 4),
                                       a->bf16);
            memset(p.dq, 0, (size_t)(T * Dp) * sizeof *p.dq);
            float s[BQ * BK], dp[BQ * BK];
            for (int64_t j0 = 0; j0 < T; j0 += BK) {
                int64_t nj = T - j0 < BK ? T - j0 : BK, njp = up16(nj);
                memset(p.dk, 0, (size_t)(2 * BK * Dp) * sizeof *p.dk); /* dk and dv tiles */
                for (int64_t i0 = a->g.causal ? j0 / BQ * BQ : 0; i0 < T; i0 += BQ) {
                    int64_t ni = T - i0 < BQ ? T - i0 : BQ;
                    int diag = a->g.causal && i0 == j0;
                    float *st = p.sk ? AT_FN(kept)(a, &p, i0, j0) : s;
                    if (!p.sk) AT_FN(scores)(&p, i0, ni, j0, nj, diag, s);
                    AT_FN(dp_tile)(&p, i0, ni, j0, nj, diag, dp);
                    for (int64_t i = 0; i < ni; i++) {
                        float *si = st + i * BK, *dpi = dp + i * BK, lse = p.lse[i0 + i], di = p.di[i0 + i];
                        float scale = a->scale;
                        int64_t lim = att_lim(a, i0 + i, j0, nj);
                        if (lim < 0) lim = 0;
                        if (a->g.p > 0) {
                            for (int64_t j = 0; j < lim; j++) {
                                float pij = expf(si[j] * scale - lse), mij = att_drop(a, bh, i0 + i, j0 + j);
                                si[j] = pij * mij;
                                dpi[j] = scale * pij * (dpi[j] * mij - di);
                            }
                        } else {
                            AT_FN(p_ds)(si, dpi, lim, scale, lse, di);
                        }
                        for (int64_t j = lim; j < njp; j++) si[j] = dpi[j] = 0;
                    }
                    AT_FN(grads)(&p, i0, ni, j0, nj, diag, st, dp);
                }
                for (int64_t j = 0; j < nj; j++) {
                    AT_FN(put_row)(out, a->bf16, total + bh * TD + (j0 + j) * D, p.dk + j * Dp, 1.0f, D);
                    AT_FN(put_row)(out, a->bf16, 2 * total + bh * TD + (j0 + j) * D, p.dv + j * Dp, 1.0f, D);
                }
            }
            for (int64_t i = 0; i < T; i++) AT_FN(put_row)(out, a->bf16, bh * TD + i * D, p.dq + i * Dp, 1.0f, D);
        }
    }
}

#undef AT_FN
#undef AT_EL
#undef AT_MR
#undef AT_NV
