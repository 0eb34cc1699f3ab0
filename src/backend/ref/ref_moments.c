/* The mean and biased variance of one row, computed the way PyTorch 1.13's
 * CPU layer norm computes them (its RowwiseMoments), operation for
 * operation, so that layer norm agrees with PyTorch to the bit in float32,
 * overflow included. Both backends call these (layer norm and its two
 * backward ops recompute the moments of each row).
 *
 * Why not a plain two-pass mean and variance: PyTorch accumulates in the
 * input's type, so a float32 row holding 1e30 overflows there (the squared
 * deviations exceed FLT_MAX) and its whole row of output is NaN, where a
 * careful computation gives finite numbers. Matching PyTorch means
 * reproducing its order of operations:
 *
 *  - The row is read as nv = n / V vectors of V lanes (V = 32 bytes / the
 *    element size: PyTorch 1.13's AVX2 and default builds both use 256-bit
 *    vectors), lane l seeing elements l, l + V, l + 2V, ...
 *  - The vectors are taken in chunks of 16. Within a chunk each lane runs
 *    Welford's update with the reciprocals 1/(j+1) precomputed:
 *    d = x - m1; m1 += d * (1/(j+1)); m2 += d * (x - m1).
 *  - Chunk results are merged into a binary cascade (pairwise summation):
 *    level 0 takes each chunk, and after chunk i, while bit k of i + 1 is
 *    clear, level k - 1 is merged into level k and cleared. The cascade has
 *    depth max(1, ceil(log2(chunks))); at the end levels 1.. are merged into
 *    level 0, in order.
 *  - The n - nv V trailing elements run scalar Welford (dividing by the
 *    count), and then the V lanes are merged into that, lane by lane.
 *  - A merge of (na, m1a, m2a) into (n0, m1, m2) is c = na / (n0 + na)
 *    (0 if both are 0), delta = m1a - m1, m1 += c delta,
 *    m2 += m2a + delta delta c n0 (evaluated left to right: delta delta may
 *    overflow to inf, and inf times a zero c is the NaN PyTorch returns).
 *  - No operation is fused (PyTorch's vector code has no FMA; our build is
 *    ISO C, which does not contract either).
 * The variance is m2 / n.
 *
 * The reference computes in double and rounds every result to float when
 * the row is float32 or bfloat16 (f32 below): for +, -, * and / that gives
 * exactly float arithmetic's result, overflow to inf included (double has
 * more than twice float's precision, so the double rounding is exact).
 * bfloat16 rows run the float32 algorithm on the widened values, 8 lanes
 * (PyTorch's bfloat16 kernel groups lanes its own way; that path is not
 * claimed to match to the bit). */
#include "ref_nn.h"

#define CHUNK 16
#define MAX_DEPTH 64 /* ceil(log2(chunks)) for any int64_t row length */
#define LANES 8      /* the most lanes (float32) */

static int64_t ceil_log2(int64_t m) {
    int64_t d = 1;
    while (d < 63 && ((int64_t)1 << d) < m) d++;
    return d;
}

/* v rounded to the accumulator type. */
static double rnd(bool f32, double v) { return f32 ? (double)(float)v : v; }

/* Merges (na, m1a, m2a) into (n0, m1, m2), lane by lane (nl lanes, one
 * count for all): PyTorch's AddMoments. */
static void merge(bool f32, int nl, int64_t na, const double *m1a, const double *m2a, int64_t *n0, double *m1,
                  double *m2) {
    int64_t n = *n0 + na;
    double c = n == 0 ? 0 : rnd(f32, rnd(f32, (double)na) / rnd(f32, (double)n)), k = rnd(f32, (double)*n0);
    for (int l = 0; l < nl; l++) {
        double delta = rnd(f32, m1a[l] - m1[l]);
        m1[l] = rnd(f32, m1[l] + rnd(f32, c * delta));
        m2[l] = rnd(f32, m2[l] + rnd(f32, m2a[l] + rnd(f32, rnd(f32, rnd(f32, delta * delta) * c) * k)));
    }
    *n0 = n;
}

void ref_row_moments(const ref_arg *x, int64_t row, int64_t n, double *mean, double *var) {
    bool f32 = x->dtype != LT_F64;
    int V = f32 ? 8 : 4;
    double m1s[MAX_DEPTH][LANES] = {{0}}, m2s[MAX_DEPTH][LANES] = {{0}};
    int64_t n0s[MAX_DEPTH] = {0}, at = row * n;
    int64_t nv = n / V, chunks = (nv + CHUNK - 1) / CHUNK, depth = ceil_log2(chunks);
    for (int64_t i = 0; i < chunks; i++) {
        int64_t len = nv - i * CHUNK < CHUNK ? nv - i * CHUNK : CHUNK;
        double m1[LANES] = {0}, m2[LANES] = {0};
        for (int64_t j = 0; j < len; j++) { /* Welford, with 1/(j+1) as a multiplier */
            double rc = rnd(f32, 1.0 / (double)(j + 1));
            for (int l = 0; l < V; l++) {
                double xv = ld_f(x->data, x->dtype, at + (i * CHUNK + j) * V + l), d = rnd(f32, xv - m1[l]);
                m1[l] = rnd(f32, m1[l] + rnd(f32, d * rc));
                m2[l] = rnd(f32, m2[l] + rnd(f32, d * rnd(f32, xv - m1[l])));
            }
        }
        merge(f32, V, len, m1, m2, &n0s[0], m1s[0], m2s[0]); /* into level 0; carry while bit k of i + 1 is clear */
        for (int64_t k = 1, mask = i + 1; k < depth && (mask & 1) == 0; k++, mask >>= 1) {
            merge(f32, V, n0s[k - 1], m1s[k - 1], m2s[k - 1], &n0s[k], m1s[k], m2s[k]);
            n0s[k - 1] = 0;
            memset(m1s[k - 1], 0, sizeof m1s[k - 1]);
            memset(m2s[k - 1], 0, sizeof m2s[k - 1]);
        }
    }
    for (int64_t k = 1; k < depth; k++) merge(f32, V, n0s[k], m1s[k], m2s[k], &n0s[0], m1s[0], m2s[0]);
    int64_t n0 = 0; /* the tail by scalar Welford, then the lanes merged into it one by one */
    double m1 = 0, m2 = 0;
    for (int64_t i = nv * V; i < n; i++) {
        double xv = ld_f(x->data, x->dtype, at + i), d = rnd(f32, xv - m1);
        m1 = rnd(f32, m1 + rnd(f32, d / (double)++n0));
        m2 = rnd(f32, m2 + rnd(f32, d * rnd(f32, xv - m1)));
    }
    for (int l = 0; l < V; l++) merge(f32, 1, nv, &m1s[0][l], &m2s[0][l], &n0, &m1, &m2);
    *mean = m1;
    *var = rnd(f32, m2 / (double)n);
}
