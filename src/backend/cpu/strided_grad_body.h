/* The row loop of AS_STRIDED_BACKWARD (strided_grad.c): rows of g added at
 * their offsets in out, float32 or bfloat16 (widened, summed in float,
 * rounded once: the reference's double sum of two terms, rounded).
 * Compiled once per instruction set (included through isa_copies.h,
 * ISA_SUF the suffix): strided_grad.c is built for the baseline, where a
 * GPT layer's bfloat16 q, k, v gradients took 2 ms each, float32's 0.8.
 * Not a normal header (no include guard, on purpose). */
#define SG_FN(x) CAT3(x, ISA_SUF, )

/* Rows [r0, r1) of g (rows of `inner`, the window's last dim, stride s in
 * out); the outer index advances as an odometer, not by divisions per row. */
static void SG_FN(add_rows)(const sgeom *q, int bf16, const void *g, void *out, int64_t r0, int64_t r1) {
    int nd = q->nd;
    int64_t idx[LT_MAX_DIMS], off = q->off, t = r0, inner = q->inner, s = q->s;
    for (int d = nd - 2; d >= 0; d--) { /* row r0's index over the outer dims, mixed radix */
        idx[d] = t % q->shape[d];
        t /= q->shape[d];
        off += idx[d] * q->str[d];
    }
    for (int64_t r = r0; r < r1; r++) {
        if (bf16) {
            const uint16_t *c = (const uint16_t *)g + r * inner;
            uint16_t *w = (uint16_t *)out + off;
            if (s == 1) {
                OMP_SIMD for (int64_t j = 0; j < inner; j++) w[j] = bf16_from_f32(bf16_to_f32(w[j]) + bf16_to_f32(c[j]));
            } else {
                for (int64_t j = 0; j < inner; j++) w[j * s] = bf16_from_f32(bf16_to_f32(w[j * s]) + bf16_to_f32(c[j]));
            }
        } else {
            const float *c = (const float *)g + r * inner;
            float *w = (float *)out + off;
            if (s == 1) {
                OMP_SIMD for (int64_t j = 0; j < inner; j++) w[j] += c[j];
            } else {
                for (int64_t j = 0; j < inner; j++) w[j * s] += c[j];
            }
        }
        for (int d = nd - 2; d >= 0; d--) { /* the next row */
            off += q->str[d];
            if (++idx[d] < q->shape[d]) break;
            off -= q->str[d] * idx[d];
            idx[d] = 0;
        }
    }
}

#undef SG_FN
