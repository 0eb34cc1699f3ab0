/* The bfloat16 loops of reduce.c (autocast's bias gradients are sums of
 * bfloat16 activation gradients): SUM/MEAN/MAX/MIN, each element widened
 * to float (exact), sums in double rounded once, as the reference does.
 * Compiled once per instruction set (included through isa_copies.h, ISA_SUF
 * the suffix): in the baseline copy alone, the leading-axis sum of a
 * (4096, 1536) bias gradient took three times float32's. Not a normal
 * header (no include guard, on purpose). */
#define RB_FN(x) CAT3(x, _bf16, ISA_SUF)

static double RB_FN(sum)(const void *x_, int64_t n) {
    const uint16_t *x = x_;
    double s = 0;
    OMP_SIMD_SUM(s)
    for (int64_t i = 0; i < n; i++) s += (double)bf16_to_f32(x[i]);
    return s;
}

static double RB_FN(max)(const void *x_, int64_t n, double sd) {
    const uint16_t *x = x_;
    float m = -INFINITY, s = (float)sd;
    int nan = 0;
    OMP_SIMD_MAX(m, nan)
    for (int64_t i = 0; i < n; i++) {
        float v = s * bf16_to_f32(x[i]);
        m = v > m ? v : m;
        nan |= v != v;
    }
    return nan ? (double)NAN : (double)m;
}

/* acc[i] += x[r * ld + i], as reduce_body.h's csum: eight rows added in
 * registers before acc is read and written. */
static void RB_FN(csum)(double *restrict acc, const void *x_, int64_t n, int64_t rows, int64_t ld) {
    const uint16_t *restrict x = x_;
    int64_t r = 0;
#define RB_AT(k) (double)bf16_to_f32(x0[(k) * ld + i])
    for (; r + 8 <= rows; r += 8) {
        const uint16_t *x0 = x + r * ld;
        OMP_SIMD for (int64_t i = 0; i < n; i++) {
            double p = (RB_AT(0) + RB_AT(1)) + (RB_AT(2) + RB_AT(3));
            double q = (RB_AT(4) + RB_AT(5)) + (RB_AT(6) + RB_AT(7));
            acc[i] += p + q;
        }
    }
#undef RB_AT
    for (; r < rows; r++) {
        const uint16_t *xr = x + r * ld;
        OMP_SIMD for (int64_t i = 0; i < n; i++) acc[i] += (double)bf16_to_f32(xr[i]);
    }
}

static void RB_FN(cmax)(double *restrict acc, const void *x_, int64_t n, double s) {
    const uint16_t *restrict x = x_;
    OMP_SIMD for (int64_t i = 0; i < n; i++) {
        double v = s * (double)bf16_to_f32(x[i]), a = acc[i];
        acc[i] = a == a && (v > a || v != v) ? v : a;
    }
}

static const rkern RB_FN(kern) = {RB_FN(sum), RB_FN(max), RB_FN(csum), RB_FN(cmax), NULL, NULL, NULL};

#undef RB_FN
