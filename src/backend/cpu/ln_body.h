/* The row loops of layer norm and its backward ops (transformer.c),
 * compiled once per instruction set (included through isa_copies.h, ISA_SUF
 * the suffix): transformer.c itself is compiled for the baseline, where the
 * backward's double loops ran two lanes at a time. The arithmetic is
 * transformer.c's (which says why each is so), operation for operation;
 * only the lanes of the double sums differ. Not a normal header (no include
 * guard, on purpose). */
#define LN_FN(x) CAT3(x, ISA_SUF, )

/* n bfloat16 values at h as floats (exact). */
static void LN_FN(widen)(float *restrict dst, const uint16_t *restrict h, int64_t n) {
    OMP_SIMD for (int64_t i = 0; i < n; i++) dst[i] = bf16_to_f32(h[i]);
}

/* n floats rounded to bfloat16 (bf16_from_f32: nearest even, NaN kept). */
static void LN_FN(narrow)(uint16_t *restrict h, const float *restrict v, int64_t n) {
    OMP_SIMD for (int64_t i = 0; i < n; i++) h[i] = bf16_from_f32(v[i]);
}

/* One output row: (x a + bias) w + b, w or b absent as 1 or 0. */
static void LN_FN(fwd_row)(float *restrict o, const float *restrict x, float a, float bias, const float *restrict w,
                           const float *restrict b, int64_t n) {
    if (w && b) { /* the common case, a loop without branches */
        OMP_SIMD for (int64_t k = 0; k < n; k++) o[k] = (x[k] * a + bias) * w[k] + b[k];
    } else if (w) {
        OMP_SIMD for (int64_t k = 0; k < n; k++) o[k] = (x[k] * a + bias) * w[k] + 0.0f;
    } else if (b) {
        OMP_SIMD for (int64_t k = 0; k < n; k++) o[k] = (x[k] * a + bias) * 1.0f + b[k];
    } else {
        OMP_SIMD for (int64_t k = 0; k < n; k++) o[k] = (x[k] * a + bias) * 1.0f + 0.0f;
    }
}

/* One row of LN_BWD_INPUT: o = a w g + b (x - mu) + c, the sums in double. */
static void LN_FN(bwd_input_row)(float *restrict o, const float *restrict g, const float *restrict x,
                                 const float *restrict w, double a, int64_t n) {
    double mu = 0, db = 0, ds = 0;
    if (w) { /* o holds w * g first: the loops stay free of branches */
        OMP_SIMD for (int64_t k = 0; k < n; k++) o[k] = g[k] * w[k];
    } else {
        memcpy(o, g, (size_t)n * sizeof *o);
    }
#pragma omp simd reduction(+ : mu, db)
    for (int64_t k = 0; k < n; k++) {
        mu += x[k];
        db += o[k];
    }
    mu /= (double)n;
#pragma omp simd reduction(+ : ds)
    for (int64_t k = 0; k < n; k++) ds += o[k] * (x[k] - mu);
    double b = -ds * a * a * a / (double)n, c = -db * a / (double)n;
    if (!isfinite(ds) || !isfinite(db)) b = c = NAN; /* an inf g makes its row NaN, as in PyTorch */
    OMP_SIMD for (int64_t k = 0; k < n; k++) o[k] = (float)(a * o[k] + b * (x[k] - mu) + c);
}

/* nr rows (<= CPU_LN_ROWS) of LN_BWD_PARAMS' sums into pw, pb: x a + bias
 * with one rounding (as the reference's ln_xhat), g x^ and g added in row
 * order, each accumulator loaded and stored once per block of rows. */
static void LN_FN(bwd_params_rows)(double *restrict pw, double *restrict pb, const float *restrict g,
                                   const float *restrict x, const float *a, const float *bias, int nr, int64_t n) {
    if (nr < CPU_LN_ROWS) {
        for (int q = 0; q < nr; q++) {
            const float *gr = g + q * n, *xr = x + q * n;
            float aq = a[q], bq = bias[q];
            OMP_SIMD for (int64_t k = 0; k < n; k++) {
                pw[k] += (double)(gr[k] * (float)((double)xr[k] * aq + bq));
                pb[k] += gr[k];
            }
        }
        return;
    }
    OMP_SIMD for (int64_t k = 0; k < n; k++) {
        double sw = pw[k], sb = pb[k];
#pragma GCC unroll 4
        for (int q = 0; q < CPU_LN_ROWS; q++) {
            float gq = g[q * n + k];
            sw += (double)(gq * (float)((double)x[q * n + k] * a[q] + bias[q]));
            sb += gq;
        }
        pw[k] = sw;
        pb[k] = sb;
    }
}

static const lnkern LN_FN(ln_kern) = {LN_FN(widen), LN_FN(narrow), LN_FN(fwd_row), LN_FN(bwd_input_row),
                                      LN_FN(bwd_params_rows)};

#undef LN_FN
