/* Transformer pieces (issue 16) beyond the per-op oracles of
 * test_cpu_vs_ref and test_autograd: the float32 kernels really are the
 * fast ones, attention's memory grows linearly in T, clip_grad_norm_ stays
 * lazy and matches its definition, a tied weight sums both gradients. */
#include "harness.h"

#include "backend/cpu/cpu.h"
#include "backend/cpu/gelu_f32.h"
#include "backend/ref/ref.h"
#include "backend/ref/ref_nn.h"
#include "core/isa.h"

#include <float.h>

static uint64_t lcg = 99;
static double urand(void) { /* [-1, 1) */
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(lcg >> 11) * 0x1.0p-53 * 2 - 1;
}
static lt_tensor *rand_f(lt_dtype dt, int nd, const int64_t *s) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= s[i];
    double *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = urand();
    lt_tensor *t = lt_from_data(v, LT_F64, nd, s), *c = lt_to_dtype(t, dt);
    free(v);
    lt_free(t);
    return c;
}

/* Forward and backward of layer norm + attention in float32 run no
 * reference kernel: every op has its cpu kernel. */
TEST(float32_kernels_are_the_fast_ones) {
    int64_t s[4] = {2, 3, 70, 24};
    lt_tensor *x = rand_f(LT_F32, 4, s), *w = rand_f(LT_F32, 1, s + 3);
    lt_set_requires_grad(x, true);
    lt_set_requires_grad(w, true);
    double f0 = lt_metric("FallbackOps");
    lt_tensor *h = lt_layer_norm(x, 1, w, NULL, 1e-5);
    lt_tensor *a = lt_scaled_dot_product_attention(h, h, h, true, 0.1, 0);
    lt_tensor *l = lt_sum(a, 0, NULL, false);
    CHECK(lt_backward(l) == 0);
    lt_tensor *gx = lt_grad(x), *gw = lt_grad(w);
    lt_tensor *nrm = lt_clip_grad_norm_(2, (lt_tensor *[]){x, w}, 0.5);
    lt_mark_step();
    CHECK_MSG(lt_metric("FallbackOps") == f0, "%g ops ran the reference kernel", lt_metric("FallbackOps") - f0);
    CHECK(gx && gw && nrm && lt_item(nrm) > 0);
    lt_free(nrm), lt_free(l), lt_free(a), lt_free(h), lt_free(w), lt_free(x);
    CHECK_NO_ERR();
}

/* Layer norm's moments (PyTorch's order of float operations, so that
 * overflow gives NaN where PyTorch does): the cpu backend's vector copy
 * equals the reference to the bit, for lengths around the 8-lane vectors,
 * the 16-vector chunks and the cascade's levels, row counts that are not a
 * multiple of the rows done together, and rows holding huge values, on
 * every instruction-set copy. */
TEST(layer_norm_moments_match_the_reference_bitwise) {
    static const int64_t lens[] = {1,   2,   3,   7,   8,   9,   15,  16,  17,  100,
                                   127, 128, 129, 255, 256, 384, 385, 768, 2049, 4100};
    int bad = 0, nan_rows = 0;
    for (size_t li = 0; li < 3 * sizeof lens / sizeof *lens; li++) {
        core_set_isa((int)(li % 3));
        int64_t n = lens[li / 3], rows = 1 + (int64_t)li % 6, s[1] = {rows * n};
        float *x = malloc((size_t)(rows * n) * sizeof *x), m[8], v[8];
        for (int64_t i = 0; i < rows * n; i++) {
            double u = urand();
            x[i] = (float)(fabs(u) > 0.995 ? u * 1e30 : fabs(u) > 0.99 ? u * 4e19 : u * 3 + 0.5);
        }
        cpu_ln_moments(x, rows, n, m, v);
        ref_arg ra = {x, LT_F32, 1, s, rows * n};
        for (int64_t r = 0; r < rows; r++) {
            double rm, rv;
            ref_row_moments(&ra, r, n, &rm, &rv);
            float fm = (float)rm, fv = (float)rv;
            bool same = (memcmp(&fm, &m[r], 4) == 0 || (isnan(fm) && isnan(m[r]))) &&
                        (memcmp(&fv, &v[r], 4) == 0 || (isnan(fv) && isnan(v[r])));
            nan_rows += isnan(fv);
            if (!same && bad++ < 5)
                CHECK_MSG(0, "isa %d n %lld row %lld: cpu mean %.9g var %.9g, ref %.9g %.9g", (int)(li % 3),
                          (long long)n, (long long)r, m[r], v[r], fm, fv);
        }
        free(x);
    }
    core_set_isa(-1);
    CHECK_MSG(bad == 0, "%d rows differ", bad);
    CHECK_MSG(nan_rows > 0, "no row overflowed: the huge values no longer reach the merges");
}

/* gelu_f32.h's float formulas against double math: exp within 1.5 ulp
 * over float's range (subnormal results included, every 97th float of
 * [-110, 90]), GELU and its gradient, both forms, within 4 ulp or 4e-7
 * absolute (the erf approximation's ~2e-7 and float's rounding of 1 + erf;
 * GELU's scaled by x) over [-30, 30], and the reference's inf / NaN at the
 * extremes. */
static double ulp_of(double v) {
    float f = fabsf((float)v);
    return f < FLT_MIN ? 0x1p-149 : (double)(nextafterf(f, INFINITY) - f);
}

TEST(gelu_float_formulas) {
    double worst = 0;
    for (int neg = 0; neg < 2; neg++) { /* the bits of [0, 90] and of [-110, -0] */
        uint32_t top = neg ? 0xc2dc0000u : 0x42b40000u;
        for (uint32_t u = neg ? 0x80000000u : 0; u <= top; u += 97) {
            float x;
            memcpy(&x, &u, 4);
            float e = gf_exp(x);
            double r = exp((double)x), err = r > FLT_MAX ? (isinf(e) ? 0 : 1e9) : fabs(e - r) / ulp_of(r);
            worst = fmax(worst, err);
        }
    }
    CHECK_MSG(worst <= 1.5, "gf_exp: %g ulp", worst);
    CHECK(isnan(gf_exp(NAN)) && gf_exp(-INFINITY) == 0 && isinf(gf_exp(INFINITY)) && gf_exp(0) == 1);
    for (int form = 0; form < 2; form++) {
        double wf = 0, wg = 0;
        for (int i = -300000; i <= 300000; i += 7) {
            float x = (float)(i * 1e-4);
            double f = form ? gf_gelu_tanh(x) : gf_gelu_erf(x), rf = ref_gelu(x, form);
            double g = form ? gf_gelu_grad_tanh(x) : gf_gelu_grad_erf(x), rg = ref_gelu_grad(x, form, 1);
            wf = fmax(wf, fabs(f - rf) / fmax(4 * ulp_of(rf), 4e-7 * (1 + fabs(x)))); /* x (1 + erf) */
            wg = fmax(wg, fabs(g - rg) / fmax(4 * ulp_of(rg), 4e-7));
        }
        CHECK_MSG(wf <= 1 && wg <= 1, "form %d: GELU off by %g, gradient by %g of the bound", form, wf, wg);
        static const float sp[] = {INFINITY, -INFINITY, NAN, 1e13f, -1e13f, 2e19f, -2e19f, 3e38f, -3e38f};
        for (int i = 0; i < 9; i++) {
            float x = sp[i], f = form ? gf_gelu_tanh(x) : gf_gelu_erf(x);
            float g = form ? gf_gelu_grad_tanh(x) : gf_gelu_grad_erf(x);
            double rf = ref_gelu(x, form), rg = ref_gelu_grad(x, form, 1);
            CHECK_MSG((isnan(f) ? isnan(rf) : f == (float)rf) && (isnan(g) ? isnan(rg) : g == (float)rg),
                      "form %d x %g: %g %g, reference %g %g", form, x, f, g, rf, rg);
        }
    }
}

/* The forward's peak memory at T = 256, 512, 1024: inputs and output are
 * O(T D); a materialized (T, T) score matrix would quadruple with each
 * doubling (at T = 1024 it alone would be 4x the inputs and output). */
TEST(attention_memory_is_linear_in_t) {
    double peak[3];
    for (int k = 0; k < 3; k++) {
        int64_t T = 256 << k, s[4] = {1, 2, T, 32};
        lt_tensor *q = rand_f(LT_F32, 4, s), *kk = rand_f(LT_F32, 4, s), *v = rand_f(LT_F32, 4, s);
        lt_mark_step();
        lt_metrics_reset();
        lt_tensor *o = lt_scaled_dot_product_attention(q, kk, v, true, 0, 0);
        lt_mark_step();
        peak[k] = lt_metric("PeakBytes");
        lt_free(o), lt_free(q), lt_free(kk), lt_free(v);
    }
    printf("  attention forward PeakBytes at T 256/512/1024: %.0f %.0f %.0f\n", peak[0], peak[1], peak[2]);
    CHECK_MSG(peak[1] <= 2.2 * peak[0] && peak[2] <= 2.2 * peak[1], "peak bytes grow faster than T: %g %g %g",
              peak[0], peak[1], peak[2]);
}

/* clip_grad_norm_: the norm of every gradient together, each gradient
 * scaled by min(1, max / (norm + 1e-6)); nothing executes until a sync. */
TEST(clip_grad_norm) {
    int64_t s1[2] = {3, 4}, s2[1] = {5};
    lt_tensor *p1 = rand_f(LT_F64, 2, s1), *p2 = rand_f(LT_F64, 1, s2), *p3 = rand_f(LT_F64, 1, s2);
    lt_set_requires_grad(p1, true), lt_set_requires_grad(p2, true), lt_set_requires_grad(p3, true);
    lt_tensor *a = lt_mul_scalar(p1, 3.0), *b = lt_mul(p2, p2);
    lt_tensor *la = lt_sum(a, 0, NULL, false), *lb = lt_sum(b, 0, NULL, false), *l = lt_add(la, lb);
    CHECK(lt_backward(l) == 0);
    double *g2 = h_read(lt_grad(p2)), want = 12 * 9.0; /* p3 has no gradient: skipped */
    for (int i = 0; i < 5; i++) want += g2[i] * g2[i];
    want = sqrt(want);
    for (int k = 0; k < 2; k++) {
        double mx = k ? 1.0 : 1e3, coef = fmin(1.0, mx / (want + 1e-6));
        double before = lt_metric("ExecuteTime.count");
        lt_tensor *n = lt_clip_grad_norm_(3, (lt_tensor *[]){p1, p2, p3}, mx);
        CHECK_MSG(lt_metric("ExecuteTime.count") == before, "clip_grad_norm_ synced");
        CHECK(n && fabs(lt_item(n) - want) < 1e-12 * want);
        double *g1 = h_read(lt_grad(p1)), *g2b = h_read(lt_grad(p2));
        CHECK(fabs(g1[0] - 3 * coef) < 1e-12 && fabs(g2b[4] - g2[4] * coef) < 1e-12);
        want *= coef;
        for (int i = 0; i < 5; i++) g2[i] *= coef;
        free(g1), free(g2b), lt_free(n);
    }
    CHECK(!lt_clip_grad_norm_(1, (lt_tensor *[]){p1}, -1));
    CHECK_ERR(LT_ERR_ARG);
    free(g2);
    lt_free(l), lt_free(la), lt_free(lb), lt_free(a), lt_free(b), lt_free(p1), lt_free(p2), lt_free(p3);
}

/* A weight used by the embedding and by the output projection (GPT's tied
 * head) gets the sum of both gradients: the same as two separate copies. */
TEST(weight_tying_sums_both_gradients) {
    int64_t ws[2] = {7, 4}, is[2] = {2, 3};
    lt_tensor *w = rand_f(LT_F64, 2, ws), *w1 = lt_clone(w), *w2 = lt_clone(w);
    lt_tensor *ix = lt_from_data((int64_t[]){1, 4, 4, 0, 6, 1}, LT_I64, 2, is);
    lt_set_requires_grad(w, true), lt_set_requires_grad(w1, true), lt_set_requires_grad(w2, true);
    lt_tensor *out[2];
    for (int k = 0; k < 2; k++) {
        lt_tensor *e = lt_embedding(k ? w1 : w, ix), *t = lt_tanh(e), *lo = lt_linear(t, k ? w2 : w, NULL);
        lt_tensor *sq = lt_mul(lo, lo);
        out[k] = lt_sum(sq, 0, NULL, false);
        CHECK(lt_backward(out[k]) == 0);
        lt_free(e), lt_free(t), lt_free(lo), lt_free(sq);
    }
    lt_tensor *sum = lt_add(lt_grad(w1), lt_grad(w2));
    double *a = h_read(lt_grad(w)), *b = h_read(sum);
    for (int i = 0; i < 28; i++) CHECK_MSG(fabs(a[i] - b[i]) < 1e-12, "element %d: %g vs %g", i, a[i], b[i]);
    free(a), free(b);
    lt_free(sum), lt_free(out[0]), lt_free(out[1]), lt_free(ix), lt_free(w), lt_free(w1), lt_free(w2);
}

TEST(bad_arguments) {
    int64_t s[3] = {2, 3, 4}, s2[3] = {2, 3, 5};
    lt_tensor *x = rand_f(LT_F32, 3, s), *y = rand_f(LT_F32, 3, s2), *i = lt_zeros(LT_I64, 3, s);
    CHECK(!lt_layer_norm(x, 4, NULL, NULL, 1e-5));
    CHECK_ERR(LT_ERR_ARG);
    CHECK(!lt_layer_norm(x, 1, y, NULL, 1e-5));
    CHECK_ERR(LT_ERR_SHAPE);
    CHECK(!lt_layer_norm(x, 1, NULL, NULL, INFINITY)); /* any finite eps is valid, as in torch */
    CHECK_ERR(LT_ERR_ARG);
    CHECK(!lt_scaled_dot_product_attention(x, y, x, false, 0, 0));
    CHECK_ERR(LT_ERR_SHAPE);
    CHECK(!lt_scaled_dot_product_attention(x, x, x, false, 1.5, 0));
    CHECK_ERR(LT_ERR_ARG);
    CHECK(!lt_scaled_dot_product_attention(i, i, i, false, 0, 0));
    CHECK_ERR(LT_ERR_DTYPE);
    CHECK(!lt_gelu(i, false));
    CHECK_ERR(LT_ERR_DTYPE);
    CHECK(!lt_scaled_dot_product_attention(NULL, x, x, false, 0, 0));
    CHECK_ERR(LT_ERR_NULL);
    /* mixed layer norm: float32 parameters with a bfloat16 x only, weight and bias alike */
    int64_t ns[1] = {4};
    lt_tensor *xb = rand_f(LT_BF16, 3, s), *w32 = rand_f(LT_F32, 1, ns), *w64 = rand_f(LT_F64, 1, ns);
    lt_tensor *wb = rand_f(LT_BF16, 1, ns);
    CHECK(!lt_layer_norm(xb, 1, w64, NULL, 1e-5));
    CHECK(strstr(lt_error_message(), "lt_layer_norm") && strstr(lt_error_message(), "'weight'"));
    CHECK_ERR(LT_ERR_DTYPE);
    CHECK(!lt_layer_norm(xb, 1, w32, wb, 1e-5));
    CHECK(strstr(lt_error_message(), "lt_layer_norm") && strstr(lt_error_message(), "'bias'"));
    CHECK_ERR(LT_ERR_DTYPE);
    CHECK(!lt_layer_norm(x, 1, wb, NULL, 1e-5)); /* a float32 x takes float32 parameters */
    CHECK_ERR(LT_ERR_DTYPE);
    CHECK(!lt_layer_norm_backward_input(xb, xb, w64, 1, 1e-5));
    CHECK(strstr(lt_error_message(), "'weight'") != NULL);
    CHECK_ERR(LT_ERR_DTYPE);
    /* autocast (attention on the fp32 list) still names a missing argument */
    lt_autocast_begin(LT_BF16);
    CHECK(!lt_scaled_dot_product_attention(xb, NULL, xb, false, 0, 0));
    CHECK(strstr(lt_error_message(), "'k'") != NULL);
    CHECK_ERR(LT_ERR_NULL);
    lt_autocast_end();
    lt_free(x), lt_free(y), lt_free(i), lt_free(xb), lt_free(w32), lt_free(w64), lt_free(wb);
}

int main(void) {
    RUN(float32_kernels_are_the_fast_ones);
    RUN(layer_norm_moments_match_the_reference_bitwise);
    RUN(gelu_float_formulas);
    RUN(attention_memory_is_linear_in_t);
    RUN(clip_grad_norm);
    RUN(weight_tying_sums_both_gradients);
    RUN(bad_arguments);
    return h_report();
}
