/* The loops of cpu_ln_moments (ln_moments.c), compiled once per
 * instruction set (included through isa_copies.h, ISA_SUF the suffix). The
 * algorithm, its order of operations and why: src/backend/ref/
 * ref_moments.c. Here a lane group is one v8 (a ymm; two xmm in the base
 * copy) and LN_ROWS rows run in lockstep: the control flow depends on n
 * only, and the rows' chains of dependent operations (Welford's update is
 * one long chain per chunk) overlap in the CPU. Not a normal header (no
 * include guard, on purpose). */
#define LM_FN(x) CAT3(x, ISA_SUF, )

/* PyTorch's AddMoments of (na, m1a, m2a) into (n0, m1, m2), LN_ROWS rows. */
static void LM_FN(merge)(int64_t na, const v8 *m1a, const v8 *m2a, int64_t *n0, v8 *m1, v8 *m2) {
    int64_t n = *n0 + na;
    float c = n == 0 ? 0.0f : (float)na / (float)n, k = (float)*n0;
    for (int r = 0; r < LN_ROWS; r++) {
        v8 delta = m1a[r] - m1[r];
        m1[r] += c * delta;
        m2[r] += m2a[r] + delta * delta * c * k;
    }
    *n0 = n;
}

static void LM_FN(rows)(const float *const *xs, int64_t n, float *mean, float *var) {
    v8 s1[MAX_DEPTH][LN_ROWS], s2[MAX_DEPTH][LN_ROWS];
    int64_t s0[MAX_DEPTH];
    int64_t nv = n / 8, chunks = (nv + CHUNK - 1) / CHUNK, depth = ln_depth(chunks);
    memset(s1, 0, (size_t)depth * sizeof s1[0]);
    memset(s2, 0, (size_t)depth * sizeof s2[0]);
    memset(s0, 0, (size_t)depth * sizeof s0[0]);
    for (int64_t i = 0; i < chunks; i++) {
        int64_t len = nv - i * CHUNK < CHUNK ? nv - i * CHUNK : CHUNK;
        v8 a1[LN_ROWS] = {{0}}, a2[LN_ROWS] = {{0}};
        for (int64_t j = 0; j < len; j++) {
            float rc = ln_rc[j];
#pragma GCC unroll 4
            for (int r = 0; r < LN_ROWS; r++) {
                v8 xv = V8(xs[r] + (i * CHUNK + j) * 8), d = xv - a1[r];
                a1[r] += d * rc;
                a2[r] += d * (xv - a1[r]);
            }
        }
        LM_FN(merge)(len, a1, a2, &s0[0], s1[0], s2[0]);
        for (int64_t k = 1, mask = i + 1; k < depth && (mask & 1) == 0; k++, mask >>= 1) {
            LM_FN(merge)(s0[k - 1], s1[k - 1], s2[k - 1], &s0[k], s1[k], s2[k]);
            s0[k - 1] = 0;
            memset(s1[k - 1], 0, sizeof s1[k - 1]);
            memset(s2[k - 1], 0, sizeof s2[k - 1]);
        }
    }
    for (int64_t k = 1; k < depth; k++) LM_FN(merge)(s0[k], s1[k], s2[k], &s0[0], s1[0], s2[0]);
    float m1[LN_ROWS] = {0}, m2[LN_ROWS] = {0}, l1[LN_ROWS][8], l2[LN_ROWS][8];
    memcpy(l1, s1[0], sizeof l1);
    memcpy(l2, s2[0], sizeof l2);
    int64_t n0 = 0;
    for (int64_t e = nv * 8; e < n; e++) {
        n0++;
        for (int r = 0; r < LN_ROWS; r++) {
            float xv = xs[r][e], d = xv - m1[r];
            m1[r] += d / (float)n0;
            m2[r] += d * (xv - m1[r]);
        }
    }
    for (int l = 0; l < 8; l++) {
        int64_t nt = n0 + nv;
        float c = nt == 0 ? 0.0f : (float)nv / (float)nt, k = (float)n0;
        for (int r = 0; r < LN_ROWS; r++) {
            float delta = l1[r][l] - m1[r];
            m1[r] += c * delta;
            m2[r] += l2[r][l] + delta * delta * c * k;
        }
        n0 = nt;
    }
    for (int r = 0; r < LN_ROWS; r++) mean[r] = m1[r], var[r] = m2[r] / (float)n;
}

#undef LM_FN
