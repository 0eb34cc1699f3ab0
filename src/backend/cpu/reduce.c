/* Fast reductions (DESIGN 6): SUM/MEAN/MAX/MIN over float32/float64 (and
 * bfloat16) for any
 * axis set whose input, with size-1 dims dropped and neighbours merged, is
 * (K0, R1, K1, L) with R1 and L reduced (sum over all; over trailing dims;
 * over leading dims; NCHW per channel is (1, N, C, HW)), and ARGMAX/ARGMIN
 * over one dim. OpenMP over outputs, or over the reduced range when there
 * are few outputs; float32 sums accumulate in double. Other cases keep the
 * reference kernel. */
#include "cpu.h"

#include "simd.h"

#define BODY "reduce_body.h"
#include "isa_copies.h"

/* bfloat16 (SUM/MEAN/MAX/MIN only): reduce_bf16_body.h, per instruction set too. */
#undef ISA_EACH
#define ISA_EACH "reduce_bf16_body.h"
#include "isa_copies.h"

const rkern *cpu_rkern(int dtype) {
    int f = dtype == LT_F32, h = dtype == LT_BF16;
#ifdef HAVE_ISA
    switch (core_isa()) {
    case 2: return h ? &kern_bf16_avx512 : f ? &kern_f32_avx512 : &kern_f64_avx512;
    case 1: return h ? &kern_bf16_avx2 : f ? &kern_f32_avx2 : &kern_f64_avx2;
    default: break;
    }
#endif
    return h ? &kern_bf16_base : f ? &kern_f32_base : &kern_f64_base;
}

#define PAR_MIN 32768 /* elements below which one thread does it all */
#define CB 1024       /* columns per block of the leading-axis loops: the accumulators stay in L1 */

typedef struct form {
    int64_t k0, r1, k1, l; /* x viewed as (k0, r1, k1, l); r1 and l reduced */
} form;

/* 0 if the reduced dims of x (mask) fit the form. */
static int canon(const gnode *x, uint64_t mask, form *f) {
    int64_t b[4] = {1, 1, 1, 1}; /* blocks K R K R */
    int at = 0;                  /* block index; even = kept, odd = reduced */
    for (int d = 0; d < x->ndim; d++) {
        if (x->shape[d] == 1) continue;
        int red = (int)((mask >> d) & 1);
        if ((at & 1) != red) at++;
        if (at > 3) return -1;
        b[at] *= x->shape[d];
    }
    /* The last block is the contiguous run: (K R) is (K, 1, 1, R); no
     * reduced dim at all is (1, 1, K, 1), a copy. */
    if (at == 1) *f = (form){b[0], 1, 1, b[1]};
    else if (at == 0) *f = (form){1, 1, b[0], 1};
    else *f = (form){b[0], b[1], b[2], b[3]};
    return 0;
}

static int is_float(int dt) { return dt == LT_F32 || dt == LT_F64; }

static void put(void *out, int dt, int64_t i, double v) {
    if (dt == LT_F32) ((float *)out)[i] = (float)v;
    else if (dt == LT_BF16) ((uint16_t *)out)[i] = bf16_from_f32((float)v); /* the reference's st_f: via float */
    else ((double *)out)[i] = v;
}

int cpu_reduce_ok(const gnode *y, const gnode *x) {
    form f;
    switch (y->op) {
    case LT_OP_SUM: case LT_OP_MEAN: case LT_OP_MAX: case LT_OP_MIN:
        if (x->dtype == LT_BF16 && y->dtype == LT_BF16) return x->numel > 0 && !canon(x, (uint64_t)y->ia[0], &f);
        /* fall through */
    case LT_OP_VAR: case LT_OP_STD:
        return is_float(x->dtype) && y->dtype == x->dtype && x->numel > 0 && !canon(x, (uint64_t)y->ia[0], &f);
    case LT_OP_ARGMAX: case LT_OP_ARGMIN:
        return is_float(x->dtype) && y->dtype == LT_I64 && x->numel > 0;
    case LT_OP_SOFTMAX: case LT_OP_LOG_SOFTMAX:
        return cpu_softmax_ok(y, x);
    default:
        return 0;
    }
}

/* SUM/MEAN: 0; MAX: +1; MIN: -1 (max of -x). */
static double sign_of(int op) {
    return op == LT_OP_MAX || op == LT_OP_ARGMAX ? 1 : op == LT_OP_SUM || op == LT_OP_MEAN ? 0 : -1;
}

/* The stored value of an accumulator: max of -x is -min; MEAN divides. */
static double fin(double acc, double s, double div) { return (s < 0 ? -acc : acc) / div; }

/* Combines a part into an accumulator: sum, or max keeping the first NaN. */
static double comb(double a, double v, double s) {
    if (s == 0) return a + v;
    return a == a && (v > a || v != v) ? v : a;
}

/* Elements [lo, hi) of output o's reduced range (r1 rows of l), in row segments. */
static double part(const rkern *k, const char *x, size_t es, const form *f, int64_t o, int64_t lo, int64_t hi,
                   double s) {
    int64_t a = o / f->k1, c = o % f->k1;
    double acc = s == 0 ? 0 : -INFINITY;
    while (lo < hi) {
        int64_t r = lo / f->l, j = lo % f->l, n = f->l - j < hi - lo ? f->l - j : hi - lo;
        const char *row = x + (size_t)((((a * f->r1 + r) * f->k1 + c) * f->l) + j) * es;
        acc = comb(acc, s == 0 ? k->sum(row, n) : k->max(row, n, s), s);
        lo += n;
    }
    return acc;
}

/* Trailing reduced run (l > 1, or a single column): one value per output. */
static int rows(const rkern *k, const gnode *y, const char *x, size_t es, const form *f, void *out, double s) {
    int64_t no = f->k0 * f->k1, cnt = f->r1 * f->l;
    double div = y->op == LT_OP_MEAN ? (double)cnt : 1;
    int nt = no * cnt >= PAR_MIN ? NUM_THREADS() : 1;
    if (no >= nt) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (nt > 1)
#endif
        for (int64_t o = 0; o < no; o++) put(out, y->dtype, o, fin(part(k, x, es, f, o, 0, cnt, s), s, div));
        return 0;
    }
    /* Few outputs, much to reduce (a sum over everything): every thread
     * takes a slice of each, combined in a fixed order. */
    double *pt = core_malloc((size_t)(no * nt) * sizeof *pt);
    if (!pt) return -1;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nt)
#endif
    for (int64_t q = 0; q < no * nt; q++) {
        int64_t o = q / nt, t = q % nt;
        pt[q] = part(k, x, es, f, o, cnt * t / nt, cnt * (t + 1) / nt, s);
    }
    for (int64_t o = 0; o < no; o++) {
        double acc = pt[o * nt];
        for (int t = 1; t < nt; t++) acc = comb(acc, pt[o * nt + t], s);
        put(out, y->dtype, o, fin(acc, s, div));
    }
    core_free(pt);
    return 0;
}

/* Rows [r0, r1) of column block (a, c0, n) into acc. */
static void cols_part(const rkern *k, const char *x, size_t es, const form *f, int64_t a, int64_t c0, int64_t n,
                      int64_t r0, int64_t r1, double *acc, double s) {
    for (int64_t i = 0; i < n; i++) acc[i] = s == 0 ? 0 : -INFINITY;
    if (s == 0) {
        if (r1 > r0) k->csum(acc, x + (size_t)((a * f->r1 + r0) * f->k1 + c0) * es, n, r1 - r0, f->k1);
        return;
    }
    for (int64_t r = r0; r < r1; r++) k->cmax(acc, x + (size_t)((a * f->r1 + r) * f->k1 + c0) * es, n, s);
}

/* Leading reduced dims (l == 1): rows added into a block of accumulators. */
static int cols(const rkern *k, const gnode *y, const char *x, size_t es, const form *f, void *out, double s) {
    int64_t nb = (f->k1 + CB - 1) / CB, items = f->k0 * nb;
    double div = y->op == LT_OP_MEAN ? (double)f->r1 : 1;
    int nt = f->k0 * f->r1 * f->k1 >= PAR_MIN ? NUM_THREADS() : 1;
    if (items >= 4 * nt || f->r1 < 4 * nt) { /* fewer blocks split unevenly: (4096, 1536) is 1024 + 512 columns */
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (nt > 1)
#endif
        for (int64_t it = 0; it < items; it++) {
            int64_t a = it / nb, c0 = it % nb * CB, n = f->k1 - c0 < CB ? f->k1 - c0 : CB;
            double acc[CB];
            cols_part(k, x, es, f, a, c0, n, 0, f->r1, acc, s);
            for (int64_t i = 0; i < n; i++) put(out, y->dtype, a * f->k1 + c0 + i, fin(acc[i], s, div));
        }
        return 0;
    }
    /* Few column blocks, many rows (a bias gradient): the rows are split
     * over the threads too, the parts combined in a fixed order. */
    double *acc = core_malloc((size_t)(items * nt * CB) * sizeof *acc);
    if (!acc) return -1;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t q = 0; q < items * nt; q++) {
        int64_t it = q / nt, t = q % nt, a = it / nb, c0 = it % nb * CB;
        int64_t n = f->k1 - c0 < CB ? f->k1 - c0 : CB;
        cols_part(k, x, es, f, a, c0, n, f->r1 * t / nt, f->r1 * (t + 1) / nt, acc + q * CB, s);
    }
    for (int64_t it = 0; it < items; it++) {
        int64_t a = it / nb, c0 = it % nb * CB, n = f->k1 - c0 < CB ? f->k1 - c0 : CB;
        double *ac = acc + it * nt * CB;
        for (int t = 1; t < nt; t++)
            for (int64_t i = 0; i < n; i++) ac[i] = comb(ac[i], ac[t * CB + i], s);
        for (int64_t i = 0; i < n; i++) put(out, y->dtype, a * f->k1 + c0 + i, fin(ac[i], s, div));
    }
    core_free(acc);
    return 0;
}

/* ARGMAX/ARGMIN over dim: x viewed as (outer, n, inner). */
static void argreduce(const rkern *k, const gnode *y, const gnode *x, const char *xp, size_t es, int64_t *out) {
    int d = x->ndim ? (int)y->ia[0] : 0;
    int64_t outer = 1, n = x->ndim ? x->shape[d] : 1, inner = 1;
    for (int i = 0; i < d; i++) outer *= x->shape[i];
    for (int i = d + 1; i < x->ndim; i++) inner *= x->shape[i];
    double s = sign_of(y->op);
    int par = x->numel >= PAR_MIN;
    if (inner == 1) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (par)
#endif
        for (int64_t o = 0; o < outer; o++) out[o] = k->argrow(xp + (size_t)(o * n) * es, n, s);
        return;
    }
    int64_t nb = (inner + CB - 1) / CB;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (par)
#endif
    for (int64_t q = 0; q < outer * nb; q++) {
        int64_t o = q / nb, c0 = q % nb * CB, m = inner - c0 < CB ? inner - c0 : CB;
        double best[CB];
        int64_t *idx = out + o * inner + c0;
        for (int64_t i = 0; i < m; i++) best[i] = -INFINITY, idx[i] = 0;
        for (int64_t j = 0; j < n; j++) k->argcol(best, idx, xp + (size_t)((o * n + j) * inner + c0) * es, m, s, j);
    }
}

/* VAR/STD: two passes per output in double (the mean, then the squared
 * deviations), outputs over the threads; the reference's formula. */
static double at_(const char *x, int dt, int64_t i) {
    return dt == LT_F32 ? (double)((const float *)(const void *)x)[i] : ((const double *)(const void *)x)[i];
}
static void var(const gnode *y, const gnode *x, const char *xp, const form *f, void *out, double corr) {
    int64_t no = f->k0 * f->k1, cnt = f->r1 * f->l;
    double div = fmax(0.0, (double)cnt - corr);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (no * cnt >= PAR_MIN)
#endif
    for (int64_t o = 0; o < no; o++) {
        int64_t a = o / f->k1, c = o % f->k1;
        double m = 0, s = 0;
        for (int64_t r = 0; r < f->r1; r++) {
            int64_t row = ((a * f->r1 + r) * f->k1 + c) * f->l;
            for (int64_t j = 0; j < f->l; j++) m += at_(xp, x->dtype, row + j);
        }
        m /= (double)cnt;
        for (int64_t r = 0; r < f->r1; r++) {
            int64_t row = ((a * f->r1 + r) * f->k1 + c) * f->l;
            for (int64_t j = 0; j < f->l; j++) {
                double d = at_(xp, x->dtype, row + j) - m;
                s += d * d;
            }
        }
        put(out, y->dtype, o, y->op == LT_OP_STD ? sqrt(s / div) : s / div);
    }
}

int cpu_reduce_run(const gnode *y, const gnode *x, const void *in, void *out, const double *sc) {
    if (y->op == LT_OP_SOFTMAX || y->op == LT_OP_LOG_SOFTMAX) return cpu_softmax_run(y, x, in, out);
    const rkern *k = cpu_rkern(x->dtype);
    size_t es = dtype_size((lt_dtype)x->dtype);
    if (y->op == LT_OP_ARGMAX || y->op == LT_OP_ARGMIN) {
        argreduce(k, y, x, in, es, out);
        return 0;
    }
    form f;
    if (canon(x, (uint64_t)y->ia[0], &f)) return -1;
    if (y->op == LT_OP_VAR || y->op == LT_OP_STD) {
        var(y, x, in, &f, out, sc[0]);
        return 0;
    }
    double s = sign_of(y->op);
    if (f.l == 1 && f.k1 > 1) return cols(k, y, in, es, &f, out, s);
    return rows(k, y, in, es, &f, out, s);
}

/* CUMSUM (x viewed as (outer, n, inner)): a block of up to CB columns runs
 * down the n rows with double accumulators (the reference's sums), blocks
 * over the threads. */
int cpu_cumsum_run(const gnode *y, const gnode *x, const float *in, float *out) {
    int d = x->ndim ? (int)y->ia[0] : 0;
    int64_t outer = 1, n = x->ndim ? x->shape[d] : 1, inner = 1, nb;
    for (int i = 0; i < d; i++) outer *= x->shape[i];
    for (int i = d + 1; i < x->ndim; i++) inner *= x->shape[i];
    nb = (inner + CB - 1) / CB;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (x->numel >= PAR_MIN)
#endif
    for (int64_t q = 0; q < outer * nb; q++) {
        int64_t o = q / nb, c0 = q % nb * CB, m = inner - c0 < CB ? inner - c0 : CB;
        double acc[CB];
        for (int64_t i = 0; i < m; i++) acc[i] = 0;
        for (int64_t k = 0; k < n; k++) {
            size_t at = (size_t)((o * n + (y->ia[1] ? n - 1 - k : k)) * inner + c0);
            for (int64_t i = 0; i < m; i++) out[at + (size_t)i] = (float)(acc[i] += in[at + (size_t)i]);
        }
    }
    return 0;
}

/* FLIP: one output row (the last dim) at a time, copied from its mirrored
 * source row, reversed when the last dim flips; rows over the threads. */
int cpu_flip_run(const gnode *y, const float *in, float *out) {
    if (y->ndim == 0 || y->numel == 0) {
        if (y->numel) out[0] = in[0];
        return 0;
    }
    int last = y->ndim - 1, rev = (int)((y->ia[0] >> last) & 1);
    int64_t n = y->shape[last], rows = y->numel / n;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (y->numel >= PAR_MIN)
#endif
    for (int64_t r = 0; r < rows; r++) {
        int64_t src = 0, rem = r, mul = 1;
        for (int d = last - 1; d >= 0; d--) { /* r's coordinates, mirrored where flipped */
            int64_t c = rem % y->shape[d];
            rem /= y->shape[d];
            src += ((y->ia[0] >> d) & 1 ? y->shape[d] - 1 - c : c) * mul;
            mul *= y->shape[d];
        }
        const float *s = in + src * n;
        float *o = out + r * n;
        if (rev)
            for (int64_t k = 0; k < n; k++) o[k] = s[n - 1 - k];
        else
            memcpy(o, s, (size_t)n * sizeof *o);
    }
    return 0;
}
