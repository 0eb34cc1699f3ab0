/* Antialiased bilinear resampling, bit for bit PIL's ImagingResample with
 * the BILINEAR filter (what torchvision's Resize and RandomResizedCrop run
 * on PIL images): a triangle filter stretched by the downscale factor, so
 * every source pixel under an output pixel contributes; weights normalized
 * in double, then rounded to 22-bit fixed point; the horizontal pass
 * rounds to 8 bits before the vertical pass. Only the source rows the
 * output window needs are resampled horizontally. Both passes have AVX2
 * and AVX-512 copies (core_isa() picks one): integer sums do not depend on
 * the order of their terms, so every copy gives the scalar pass's bytes. */
#include "image.h"

#include "../core/isa.h"

#include <math.h>
#include <stdlib.h>
#ifdef HAVE_ISA
#include <immintrin.h>
#endif

#define PRECISION_BITS (32 - 8 - 2)

static double triangle(double x) {
    if (x < 0) x = -x;
    return x < 1 ? 1 - x : 0;
}

/* PIL's precompute_coeffs for the outputs [w0, w0 + wn) of `outsize` over
 * [in0, in1) of an input of `insize` pixels. bounds: (first tap, taps) per
 * output; kk: ksize weights per output. Returns ksize, or -1 (memory). */
static int coeffs(double in0, double in1, int insize, int outsize, int w0, int wn, int **bounds, int32_t **kk) {
    double scale = (in1 - in0) / outsize, fscale = scale < 1 ? 1 : scale, support = fscale;
    int ksize = (int)ceil(support) * 2 + 1;
    double *pre = malloc(sizeof *pre * (size_t)ksize);
    *bounds = malloc(sizeof **bounds * 2 * (size_t)wn);
    *kk = malloc(sizeof **kk * (size_t)ksize * (size_t)wn);
    if (!pre || !*bounds || !*kk) {
        free(pre), free(*bounds), free(*kk);
        *bounds = NULL, *kk = NULL;
        return -1;
    }
    for (int i = 0; i < wn; i++) {
        double center = in0 + (w0 + i + 0.5) * scale, ww = 0, ss = 1.0 / fscale;
        int xmin = (int)(center - support + 0.5), xmax;
        if (xmin < 0) xmin = 0;
        xmax = (int)(center + support + 0.5);
        if (xmax > insize) xmax = insize;
        xmax -= xmin;
        if (xmax < 0) xmax = 0;
        for (int x = 0; x < xmax; x++) ww += pre[x] = triangle((x + xmin - center + 0.5) * ss);
        for (int x = 0; x < ksize; x++) {
            double w = x < xmax && ww != 0 ? pre[x] / ww : 0;
            (*kk)[(size_t)i * (size_t)ksize + (size_t)x] =
                (int32_t)(w < 0 ? -0.5 + w * (1 << PRECISION_BITS) : 0.5 + w * (1 << PRECISION_BITS));
        }
        (*bounds)[2 * i] = xmin;
        (*bounds)[2 * i + 1] = xmax;
    }
    free(pre);
    return ksize;
}

static uint8_t clip8(int32_t v) { /* v >> PRECISION_BITS clamped to 0..255, without branches */
    v = v < 0 ? 0 : v >> PRECISION_BITS;
    return (uint8_t)(v > 255 ? 255 : v);
}

#ifdef _OPENMP
#define VECTOR_LOOP _Pragma("omp simd")
#else
#define VECTOR_LOOP /* gcc may still vectorize */
#endif

/* One row of the horizontal pass: outputs [x0, ww) of ch channels from src. */
static void horizontal(const uint8_t *src, int ch, const int *bounds, const int32_t *kk, int ksize, int x0, int ww,
                       uint8_t *d) {
    for (int x = x0; x < ww; x++) {
        const int32_t *k = kk + (size_t)x * (size_t)ksize;
        const uint8_t *p = src + (size_t)bounds[2 * x] * (size_t)ch;
        int taps = bounds[2 * x + 1];
        if (ch == 3) { /* the common case: the three channels in one pass over the taps */
            int32_t a0 = 1 << (PRECISION_BITS - 1), a1 = a0, a2 = a0;
            for (int t = 0; t < taps; t++, p += 3) a0 += p[0] * k[t], a1 += p[1] * k[t], a2 += p[2] * k[t];
            d[3 * x] = clip8(a0), d[3 * x + 1] = clip8(a1), d[3 * x + 2] = clip8(a2);
            continue;
        }
        for (int c = 0; c < ch; c++) {
            int32_t acc = 1 << (PRECISION_BITS - 1);
            for (int t = 0; t < taps; t++) acc += p[(size_t)t * (size_t)ch + (size_t)c] * k[t];
            d[(size_t)x * (size_t)ch + (size_t)c] = clip8(acc);
        }
    }
}

#ifdef HAVE_ISA
/* The vector copies run over blocks of 16 (AVX-512) or 8 (AVX2) outputs of
 * 1 or 3 channels, with the taps transposed: off[t * ww + x] is the byte
 * offset of output x's tap t in the row (its first tap's past its last
 * one, where the weight is 0) and kt[t * ww + x] its weight. One 32-bit
 * gather per tap brings the tap's channels for the whole block (the 4th
 * byte is read and ignored: the caller keeps the gathers inside the
 * buffer); products and sums are the scalar loop's 32-bit integers.
 * nt[x / 16]: the most taps an output of [x, x + 16) has. They
 * return how many outputs they wrote, a whole number of blocks <= n. */
TARGET_PUSH(ISA_AVX512)
static int horizontal_avx512(const uint8_t *src, int ch, const int32_t *off, const int32_t *kt, const int32_t *nt,
                             int ww, int n, uint8_t *d) {
    const __m512i half = _mm512_set1_epi32(1 << (PRECISION_BITS - 1)), lo = _mm512_set1_epi32(255),
                  zero = _mm512_setzero_si512();
    /* bytes 0-2 of each 32-bit lane, packed: 12 bytes per 128-bit lane, then the lanes' 3 dwords together */
    const __m512i pick = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1));
    const __m512i pack = _mm512_setr_epi32(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 3, 7, 11, 15);
    int x = 0;
    for (; x + 16 <= n; x += 16) {
        __m512i a0 = half, a1 = half, a2 = half;
        for (int t = 0; t < nt[x / 16]; t++) {
            __m512i k = _mm512_loadu_si512(kt + (size_t)t * (size_t)ww + (size_t)x);
            __m512i v = _mm512_i32gather_epi32(_mm512_loadu_si512(off + (size_t)t * (size_t)ww + (size_t)x), src, 1);
            a0 = _mm512_add_epi32(a0, _mm512_mullo_epi32(_mm512_and_si512(v, lo), k));
            if (ch == 3) {
                a1 = _mm512_add_epi32(a1, _mm512_mullo_epi32(_mm512_and_si512(_mm512_srli_epi32(v, 8), lo), k));
                a2 = _mm512_add_epi32(a2, _mm512_mullo_epi32(_mm512_and_si512(_mm512_srli_epi32(v, 16), lo), k));
            }
        }
        /* clip8: v < 0 -> 0, else min(v >> PRECISION_BITS, 255) */
        a0 = _mm512_min_epi32(_mm512_max_epi32(_mm512_srai_epi32(a0, PRECISION_BITS), zero), lo);
        if (ch == 1) {
            _mm_storeu_si128((__m128i *)(void *)(d + x), _mm512_cvtepi32_epi8(a0));
            continue;
        }
        a1 = _mm512_min_epi32(_mm512_max_epi32(_mm512_srai_epi32(a1, PRECISION_BITS), zero), lo);
        a2 = _mm512_min_epi32(_mm512_max_epi32(_mm512_srai_epi32(a2, PRECISION_BITS), zero), lo);
        __m512i rgb = _mm512_or_si512(a0, _mm512_or_si512(_mm512_slli_epi32(a1, 8), _mm512_slli_epi32(a2, 16)));
        rgb = _mm512_permutexvar_epi32(pack, _mm512_shuffle_epi8(rgb, pick));
        _mm512_mask_storeu_epi8(d + 3 * x, (__mmask64)0xFFFFFFFFFFFFull, rgb); /* 48 bytes */
    }
    return x;
}
TARGET_POP()

TARGET_PUSH(ISA_AVX2)
static int horizontal_avx2(const uint8_t *src, int ch, const int32_t *off, const int32_t *kt, const int32_t *nt,
                           int ww, int n, uint8_t *d) {
    const __m256i half = _mm256_set1_epi32(1 << (PRECISION_BITS - 1)), lo = _mm256_set1_epi32(255),
                  zero = _mm256_setzero_si256();
    const __m256i pick3 = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1, 0, 1, 2, 4, 5, 6,
                                           8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
    const __m256i pick1 = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12,
                                           -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i pack = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7), low2 = _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1),
                  six = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0);
    int x = 0;
    for (; x + 8 <= n; x += 8) {
        __m256i a0 = half, a1 = half, a2 = half;
        for (int t = 0; t < nt[x / 16]; t++) {
            __m256i k = _mm256_loadu_si256((const __m256i *)(const void *)(kt + (size_t)t * (size_t)ww + (size_t)x));
            __m256i o = _mm256_loadu_si256((const __m256i *)(const void *)(off + (size_t)t * (size_t)ww + (size_t)x));
            __m256i v = _mm256_i32gather_epi32((const int *)(const void *)src, o, 1);
            a0 = _mm256_add_epi32(a0, _mm256_mullo_epi32(_mm256_and_si256(v, lo), k));
            if (ch == 3) {
                a1 = _mm256_add_epi32(a1, _mm256_mullo_epi32(_mm256_and_si256(_mm256_srli_epi32(v, 8), lo), k));
                a2 = _mm256_add_epi32(a2, _mm256_mullo_epi32(_mm256_and_si256(_mm256_srli_epi32(v, 16), lo), k));
            }
        }
        a0 = _mm256_min_epi32(_mm256_max_epi32(_mm256_srai_epi32(a0, PRECISION_BITS), zero), lo);
        if (ch == 1) {
            __m256i b = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(a0, pick1), low2); /* 8 bytes */
            _mm_storel_epi64((__m128i *)(void *)(d + x), _mm256_castsi256_si128(b));
            continue;
        }
        a1 = _mm256_min_epi32(_mm256_max_epi32(_mm256_srai_epi32(a1, PRECISION_BITS), zero), lo);
        a2 = _mm256_min_epi32(_mm256_max_epi32(_mm256_srai_epi32(a2, PRECISION_BITS), zero), lo);
        __m256i rgb = _mm256_or_si256(a0, _mm256_or_si256(_mm256_slli_epi32(a1, 8), _mm256_slli_epi32(a2, 16)));
        rgb = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(rgb, pick3), pack);
        _mm256_maskstore_epi32((int *)(void *)(d + 3 * x), six, rgb); /* 24 bytes */
    }
    return x;
}
TARGET_POP()
#endif

/* One output row of the vertical pass: `taps` rows of s (stride bytes
 * apart) weighted by k, over stride bytes, two taps per sweep over acc
 * (integer sums: the order of the taps does not change them). Compiled once
 * per instruction set, gcc vectorizing each copy (the baseline, SSE2, has
 * no 32-bit multiply). */
#define VERTICAL(SUF)                                                                                              \
    static void vertical##SUF(const uint8_t *s, size_t stride, const int32_t *k, int taps, int32_t *acc,           \
                              uint8_t *d) {                                                                        \
        for (size_t x = 0; x < stride; x++) acc[x] = 1 << (PRECISION_BITS - 1);                                    \
        int t = 0;                                                                                                 \
        for (; t + 1 < taps; t += 2) {                                                                             \
            const uint8_t *r0 = s + (size_t)t * stride, *r1 = r0 + stride;                                         \
            int32_t k0 = k[t], k1 = k[t + 1];                                                                      \
            VECTOR_LOOP                                                                                            \
            for (size_t x = 0; x < stride; x++) acc[x] += r0[x] * k0 + r1[x] * k1;                                 \
        }                                                                                                          \
        if (t < taps) {                                                                                            \
            const uint8_t *r0 = s + (size_t)t * stride;                                                            \
            int32_t k0 = k[t];                                                                                     \
            VECTOR_LOOP                                                                                            \
            for (size_t x = 0; x < stride; x++) acc[x] += r0[x] * k0;                                              \
        }                                                                                                          \
        VECTOR_LOOP                                                                                                \
        for (size_t x = 0; x < stride; x++) d[x] = clip8(acc[x]);                                                  \
    }
typedef void (*vertical_fn)(const uint8_t *, size_t, const int32_t *, int, int32_t *, uint8_t *);
VERTICAL(_base)
#ifdef HAVE_ISA
TARGET_PUSH(ISA_AVX2)
VERTICAL(_avx2)
TARGET_POP()
TARGET_PUSH(ISA_AVX512)
VERTICAL(_avx512)
TARGET_POP()
#endif

/* The horizontal pass of `rows` rows starting at src (row stride sstride
 * bytes, avail bytes readable from src), ww outputs each, into d (row
 * stride ww * ch). -1: out of memory. */
static int horizontal_rows(const uint8_t *src, size_t sstride, size_t avail, int rows, int ch, const int *bounds,
                           const int32_t *kk, int ksize, int ww, uint8_t *d) {
    int32_t *off = NULL;
#ifdef HAVE_ISA
    int32_t *kt = NULL, *nt = NULL;
    int isa = ch == 1 || ch == 3 ? core_isa() : 0, nv = isa ? ww : 0;
    /* the vector copy takes the outputs whose gathers (4 bytes at each tap)
     * stay inside the buffer on the last row; taps only move right with x */
    size_t last = avail - (size_t)(rows - 1) * sstride;
    while (nv > 0 && (size_t)(bounds[2 * nv - 2] + (bounds[2 * nv - 1] > 1 ? bounds[2 * nv - 1] - 1 : 0)) *
                             (size_t)ch + 4 > last)
        nv--;
    if (nv >= 8) {
        size_t n = (size_t)ksize * (size_t)ww;
        if (!(off = malloc(sizeof *off * (2 * n + (size_t)ww / 16 + 1)))) return -1;
        kt = off + n, nt = kt + n;
        for (int t = 0; t < ksize; t++)
            for (int x = 0; x < ww; x++) {
                int first = bounds[2 * x], taps = bounds[2 * x + 1];
                off[(size_t)t * (size_t)ww + (size_t)x] = (t < taps ? first + t : first) * ch;
                kt[(size_t)t * (size_t)ww + (size_t)x] = t < taps ? kk[(size_t)x * (size_t)ksize + (size_t)t] : 0;
            }
        for (int x = 0; x < ww; x++) /* the most taps in each block of 16 */
            if (x % 16 == 0 || bounds[2 * x + 1] > nt[x / 16]) nt[x / 16] = bounds[2 * x + 1];
    }
#else
    (void)avail;
#endif
    for (int r = 0; r < rows; r++) {
        const uint8_t *s = src + (size_t)r * sstride;
        uint8_t *o = d + (size_t)r * (size_t)ww * (size_t)ch;
        int done = 0;
#ifdef HAVE_ISA
        if (off) done = isa == 2 ? horizontal_avx512(s, ch, off, kt, nt, ww, nv, o)
                                 : horizontal_avx2(s, ch, off, kt, nt, ww, nv, o);
#endif
        horizontal(s, ch, bounds, kk, ksize, done, ww, o);
    }
    free(off);
    return 0;
}

int img_resample(const uint8_t *src, int sw, int sh, int ch, img_box box, int ow, int oh, int wx, int wy, int ww,
                 int wh, uint8_t *dst, uint8_t **tmp, size_t *tmp_cap) {
    /* taps never leave the pixels the box touches: the box acts as a crop */
    int lx = (int)floor(box.x0), hx = (int)ceil(box.x1), ly = (int)floor(box.y0), hy = (int)ceil(box.y1);
    if (lx < 0) lx = 0;
    if (ly < 0) ly = 0;
    if (hx > sw) hx = sw;
    if (hy > sh) hy = sh;
    int *bh = NULL, *bv = NULL, rc = -1;
    int32_t *kh = NULL, *kv = NULL, *acc = NULL;
    int ksh = coeffs(box.x0 - lx, box.x1 - lx, hx - lx, ow, wx, ww, &bh, &kh);
    int ksv = ksh < 0 ? -1 : coeffs(box.y0 - ly, box.y1 - ly, hy - ly, oh, wy, wh, &bv, &kv);
    if (ksv < 0) goto out;
    int yfirst = bv[0], ylast = bv[2 * (wh - 1)] + bv[2 * (wh - 1) + 1], rows = ylast - yfirst;
    size_t stride = (size_t)ww * (size_t)ch, need = (size_t)(rows > 0 ? rows : 1) * stride;
    if (need > *tmp_cap) {
        uint8_t *p = realloc(*tmp, need);
        if (!p) goto out;
        *tmp = p;
        *tmp_cap = need;
    }
    if (!(acc = malloc(sizeof *acc * stride))) goto out;
    /* horizontal: source rows [ly + yfirst, ly + ylast) -> (rows, ww) */
    size_t first = ((size_t)(ly + yfirst) * (size_t)sw + (size_t)lx) * (size_t)ch;
    if (rows > 0 && horizontal_rows(src + first, (size_t)sw * (size_t)ch, (size_t)sw * (size_t)sh * (size_t)ch - first,
                                    rows, ch, bh, kh, ksh, ww, *tmp))
        goto out;
    /* vertical: (rows, ww) -> (wh, ww), a whole row at a time */
    vertical_fn vertical = vertical_base;
#ifdef HAVE_ISA
    vertical = core_isa() == 2 ? vertical_avx512 : core_isa() == 1 ? vertical_avx2 : vertical_base;
#endif
    for (int y = 0; y < wh; y++)
        vertical(*tmp + (size_t)(bv[2 * y] - yfirst) * stride, stride, kv + (size_t)y * (size_t)ksv, bv[2 * y + 1],
                 acc, dst + (size_t)y * stride);
    rc = 0;
out:
    free(bh), free(bv), free(kh), free(kv), free(acc);
    return rc;
}
