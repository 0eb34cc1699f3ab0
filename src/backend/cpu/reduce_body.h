/* The typed inner loops of reductions and softmax, included by reduce.c
 * once per type (T, FN, TM: see typed.h) and instruction set. Each
 * works on one contiguous run; reduce.c and softmax.c split the work. Sums
 * of float32 accumulate in double (then round once, like the reference);
 * max/min work on s * x with s = +1 or -1, so one loop serves both.
 * reduce_bf16_body.h includes the four reductions alone (RB_ONLY) with
 * elements E read as T by LD: bfloat16 widened to float (exact). */
#ifndef LD
#define E T
#define LD(v) (v)
#define RB_DEFAULT_LD
#endif

/* Sum of x[0, n) in double. */
static double FN(sum)(const void *x_, int64_t n) {
    const E *x = x_;
    double s = 0;
    OMP_SIMD_SUM(s)
    for (int64_t i = 0; i < n; i++) s += (double)LD(x[i]);
    return s;
}

/* Max of s * x[0, n); NaN if any element is NaN. n > 0. */
static double FN(max)(const void *x_, int64_t n, double sd) {
    const E *x = x_;
    const T s = (T)sd;
    T m = -(T)INFINITY;
    int nan = 0;
    OMP_SIMD_MAX(m, nan)
    for (int64_t i = 0; i < n; i++) {
        T v = s * LD(x[i]);
        m = v > m ? v : m;
        nan |= v != v;
    }
    return nan ? (double)NAN : (double)m;
}

/* acc[i] += x[r * ld + i] for r < rows, i < n: a leading-axis sum,
 * vectorized along the rows. Eight rows at a time are added in registers
 * before acc (in L1) is read and written: a bias gradient's column sums
 * were bound by acc's loads and stores. In double throughout, so the sum
 * is the reference's up to the order of double additions. */
static void FN(csum)(double *restrict acc, const void *x_, int64_t n, int64_t rows, int64_t ld) {
    const E *restrict x = x_;
    int64_t r = 0;
#define RB_AT(k) (double)LD(x0[(k) * ld + i])
    for (; r + 8 <= rows; r += 8) {
        const E *x0 = x + r * ld;
        OMP_SIMD for (int64_t i = 0; i < n; i++) {
            double p = (RB_AT(0) + RB_AT(1)) + (RB_AT(2) + RB_AT(3));
            double q = (RB_AT(4) + RB_AT(5)) + (RB_AT(6) + RB_AT(7));
            acc[i] += p + q;
        }
    }
#undef RB_AT
    for (; r < rows; r++) {
        const E *xr = x + r * ld;
        OMP_SIMD for (int64_t i = 0; i < n; i++) acc[i] += (double)LD(xr[i]);
    }
}

/* acc[i] = best of (acc[i], s * x[i]): the first NaN wins and stays, as in
 * the reference. */
static void FN(cmax)(double *restrict acc, const void *x_, int64_t n, double s) {
    const E *restrict x = x_;
    OMP_SIMD for (int64_t i = 0; i < n; i++) {
        double v = s * (double)LD(x[i]), a = acc[i];
        acc[i] = a == a && (v > a || v != v) ? v : a;
    }
}

#ifndef RB_ONLY
/* First index of the max of s * x[0, n) (of the first NaN if any). n > 0. */
static int64_t FN(argrow)(const void *x_, int64_t n, double s) {
    const T *x = x_;
    double m = FN(max)(x_, n, s);
    int64_t i = 0;
    if (m != m) {
        while (x[i] == x[i]) i++;
    } else {
        while ((double)x[i] * s != m) i++; /* s * x is exact: the same value max saw */
    }
    return i;
}

/* One step k of an argmax down a column block: best/idx per column. */
static void FN(argcol)(double *restrict best, int64_t *restrict idx, const void *x_, int64_t n, double s,
                       int64_t k) {
    const T *restrict x = x_;
    OMP_SIMD for (int64_t i = 0; i < n; i++) {
        double v = s * (double)x[i], a = best[i];
        int take = a == a && (v > a || v != v);
        best[i] = take ? v : a;
        idx[i] = take ? k : idx[i];
    }
}

/* Softmax (or log-softmax) of one contiguous row, as the reference: max
 * subtracted, exp in the row's type (as PyTorch), the sum in double. */
static void FN(softmax)(void *out_, const void *x_, int64_t n, int logsm) {
    T *restrict out = out_;
    const T *restrict x = x_;
    double md = FN(max)(x_, n, 1);
    if (md != md) { /* a NaN anywhere: the whole row is NaN, as the reference's max is */
        for (int64_t i = 0; i < n; i++) out[i] = (T)NAN;
        return;
    }
    const T m = md == -INFINITY ? (T)0 : (T)md; /* all -inf: exp(-inf - 0) = 0 */
    double s = 0;
    if (!logsm) {
        OMP_SIMD_SUM(s)
        for (int64_t i = 0; i < n; i++) {
            T e = TM(exp)(x[i] - m);
            out[i] = e;
            s += (double)e;
        }
        const T sum = (T)s;
        OMP_SIMD for (int64_t i = 0; i < n; i++) out[i] = out[i] / sum;
    } else {
        OMP_SIMD_SUM(s)
        for (int64_t i = 0; i < n; i++) s += (double)TM(exp)(x[i] - m);
        const T ls = (T)log(s);
        OMP_SIMD for (int64_t i = 0; i < n; i++) out[i] = (x[i] - m) - ls;
    }
}

static const rkern FN(kern) = {FN(sum), FN(max), FN(csum), FN(cmax), FN(argrow), FN(argcol), FN(softmax)};
#else
static const rkern FN(kern) = {FN(sum), FN(max), FN(csum), FN(cmax), NULL, NULL, NULL};
#endif

#ifdef RB_DEFAULT_LD
#undef E
#undef LD
#undef RB_DEFAULT_LD
#endif
