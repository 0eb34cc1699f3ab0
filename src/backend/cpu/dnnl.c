/* The one oneDNN adapter (DESIGN 6): everything that includes dnnl.h is
 * here, behind LT_HAVE_DNNL; without it every entry point declines and the
 * caller runs a fast C kernel (nn_fast.c) or the reference kernel.
 *
 * Library ops (conv2d and its two backward ops, avg pooling and its
 * backward; linear and matmul on bfloat16) become oneDNN primitives when
 * the executable is compiled. Each
 * primitive picks its own layouts (format `any`: blocked nChw16c, OIhw16i16o
 * and so on); every argument whose layout differs from our plain NCHW / OIHW
 * gets a reorder primitive, also made at compile time, and a block of the
 * executable's scratch. A run only sets data handles and executes. */
#include "cpu.h"

#include "../../prof/prof.h"

#ifdef LT_HAVE_DNNL
#include <dnnl.h>
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* One engine and one stream for the process, created at the first compile. */
static dnnl_engine_t eng;
static dnnl_stream_t strm;

static int dnnl_ready(void) {
    static int state; /* 0 not tried, 1 ready, -1 unavailable */
    if (!state)
        state = dnnl_engine_create(&eng, dnnl_cpu, 0) == dnnl_success &&
                        dnnl_stream_create(&strm, eng, dnnl_stream_default_flags) == dnnl_success
                    ? 1
                    : -1;
    return state == 1;
}

int cpu_dnnl_has_sgemm(void) { return 1; }

/* torch.matmul on float32 through dnnl_sgemm (row-major), one call per
 * batch matrix; batch dims broadcast as in ref_matmul. A batch of a
 * against one matrix b is one call over all of a's rows (a linear layer's
 * input gradient: one (B T, O) @ (O, K) instead of B small ones). */
int cpu_dnnl_matmul(const gnode *y, const gnode *a, const gnode *b, const void *A, const void *B, void *C, int trans) {
    matmul_geom g;
    exec_matmul_geom(a->ndim, a->shape, b->ndim, b->shape, &g);
    int64_t n = g.n, k = g.k, m = g.m, nbatch = g.nbatch;
    if (y->numel == 0) return 0;
    if (k == 0) {
        memset(C, 0, (size_t)y->numel * 4);
        return 0;
    }
    if (b->ndim <= 2 && a->ndim > 2) n *= nbatch, nbatch = 1; /* a's batches are contiguous rows */
    char ta = trans & 1 ? 'T' : 'N', tb = trans & 2 ? 'T' : 'N';
    int64_t lda = trans & 1 ? n : k, ldb = trans & 2 ? k : m;
    for (int64_t t = 0; t < nbatch; t++) {
        int64_t oa, ob;
        exec_matmul_batch(&g, t, &oa, &ob);
        if (dnnl_sgemm(ta, tb, n, m, k, 1.0f, (const float *)A + oa, lda, (const float *)B + ob, ldb, 0.0f,
                       (float *)C + t * n * m, m) != dnnl_success)
            return -1; /* nothing was written that the reference kernel will not overwrite */
    }
    return 0;
}

#define MAXARGS 4

typedef struct darg {
    int arg;                  /* DNNL_ARG_* */
    int io;                   /* the kernel operand it reads, or -1: the output */
    dnnl_memory_t user, mem;  /* our plain layout; the primitive's (== user when they agree) */
    dnnl_primitive_t reorder; /* user -> mem for an operand, mem -> user for the output */
    size_t off;               /* mem's block in the scratch */
} darg;

/* A float32 CONV2D or CONV2D_BWD_WEIGHT with padding: what pad_nan needs.
 * The output-side value (y, or g) is channel-blocked (nChw16c) where oblk;
 * every output position has a tap inside the image where all_in. */
typedef struct wpad {
    int on, fwd, oblk, all_in;
    int64_t N, O, oH, oW, Cg, kH, kW, H, W, ia[6]; /* ia: sH, sW, pH, pW, dH, dW */
} wpad;

typedef struct wsplit wsplit;

struct cpu_dnnl {
    wsplit *ws; /* a bfloat16 weight gradient split over the batch (wsplit_new), instead of prim */
    dnnl_primitive_t prim;
    int nargs;
    darg a[MAXARGS];
    size_t scratch;
    wpad wp;
    /* A float32 conv on oneDNN's Winograd kernel (wino_shape, wino_exact):
     * its output has out_elems floats; where any is not finite, exact (the
     * same conv, direct) computes it again. */
    int wino;
    int64_t out_elems;
    cpu_dnnl *exact;
};

static void wsplit_free(wsplit *w);

void cpu_dnnl_free(cpu_dnnl *d) {
    if (!d) return;
    cpu_dnnl_free(d->exact);
    wsplit_free(d->ws);
    for (int i = 0; i < d->nargs; i++) {
        darg *a = &d->a[i];
        if (a->reorder) dnnl_primitive_destroy(a->reorder);
        if (a->mem && a->mem != a->user) dnnl_memory_destroy(a->mem);
        if (a->user) dnnl_memory_destroy(a->user);
    }
    if (d->prim) dnnl_primitive_destroy(d->prim);
    core_free(d);
}

size_t cpu_dnnl_scratch(const cpu_dnnl *d) {
    if (!d) return 0;
    size_t e = cpu_dnnl_scratch(d->exact);
    return d->scratch > e ? d->scratch : e;
}

/* A block of `bytes` in the executable's scratch, 64-byte aligned: its offset. */
static size_t scratch_block(cpu_dnnl *d, size_t bytes) {
    size_t off = d->scratch;
    d->scratch += (bytes + 63) & ~(size_t)63;
    return off;
}

/* Binds primitive argument `arg` to operand io (-1: the output) in layout
 * `user`, adding a reorder when the primitive expects another layout. */
static int add_arg(cpu_dnnl *d, const_dnnl_primitive_desc_t pd, int arg, int io, const dnnl_memory_desc_t *user) {
    const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
    if (!want || want->ndims == 0 || d->nargs == MAXARGS) return -1;
    darg *a = &d->a[d->nargs++];
    a->arg = arg;
    a->io = io;
    if (dnnl_memory_create(&a->user, user, eng, DNNL_MEMORY_NONE) != dnnl_success) return -1;
    if (dnnl_memory_desc_equal(want, user)) {
        a->mem = a->user;
        return 0;
    }
    if (dnnl_memory_create(&a->mem, want, eng, DNNL_MEMORY_NONE) != dnnl_success) return -1;
    a->off = scratch_block(d, dnnl_memory_desc_get_size(want));
    dnnl_primitive_desc_t rpd;
    const dnnl_memory_desc_t *from = io >= 0 ? user : want, *to = io >= 0 ? want : user;
    if (dnnl_reorder_primitive_desc_create(&rpd, from, eng, to, eng, NULL) != dnnl_success) return -1;
    dnnl_status_t st = dnnl_primitive_create(&a->reorder, rpd);
    dnnl_primitive_desc_destroy(rpd);
    return st == dnnl_success ? 0 : -1;
}

/* Takes ownership of pd: makes the primitive and binds its arguments. */
static int finish(cpu_dnnl *d, dnnl_primitive_desc_t pd, int n, const int *args, const int *io,
                  const dnnl_memory_desc_t *const *user) {
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl)
        d->wino = strstr(impl, "wino") != NULL;
    int rc = dnnl_primitive_create(&d->prim, pd) == dnnl_success ? 0 : -1;
    for (int i = 0; i < n && rc == 0; i++) rc = add_arg(d, pd, args[i], io[i], user[i]);
    dnnl_primitive_desc_destroy(pd);
    return rc;
}

/* Our float dtypes as oneDNN's: bfloat16 convolutions and pooling run on
 * its avx512_core_bf16 kernels (accumulating in float32), or emulated. */
static dnnl_data_type_t dt_of(const gnode *v) { return v->dtype == LT_BF16 ? dnnl_bf16 : dnnl_f32; }

static void md4(dnnl_memory_desc_t *md, const int64_t *s, dnnl_data_type_t dt, dnnl_format_tag_t tag) {
    dnnl_dims_t dims = {s[0], s[1], s[2], s[3]};
    dnnl_memory_desc_init_by_tag(md, 4, dims, dt, tag);
}

/* Between serial_begin(1) and serial_end, oneDNN descriptors and
 * primitives are made for one thread, to run without a parallel region:
 * oneDNN sizes its thread split when a descriptor is made, from
 * omp_get_max_threads(), and its primitive cache keys on the thread count
 * when a primitive is made (so both must see one thread, or the cache may
 * hand back another count's primitive for the same descriptor).
 * serial_begin returns the count that serial_end puts back. */
static int serial_begin(int on) {
#ifdef _OPENMP
    int nth = omp_get_max_threads();
    if (on) omp_set_num_threads(1);
    return nth;
#else
    (void)on;
    return 1;
#endif
}
static void serial_end(int on, int nth) {
#ifdef _OPENMP
    if (on) omp_set_num_threads(nth);
#else
    (void)on, (void)nth;
#endif
}

/* Which weight gradients are made serial, where the batch split below is
 * not made (one image, or layouts the split does not take). oneDNN 2.6's
 * bfloat16 weight gradient (jit_bf16:avx512_core_bf16) of a strided convolution
 * synchronizes its two threads so often that on a busy machine it took
 * 230-2650 ms per call for ResNet-20's 3x3 stride-2 convs (fp32: 9-17 ms;
 * alone on one thread: 1.2-5 ms, in the same runs; DNNL_VERBOSE). So does
 * the one of a 3x3 conv on a 7x7 output (ResNet-50's last stage, 512
 * channels): 869 ms per call against 126 ms on one thread (its forward:
 * 40-78 ms), while its 3x3 weight gradients on 14x14 and larger outputs and
 * its 1x1 ones ran about as fast or up to 2.5x slower on one thread
 * (DNNL_VERBOSE, ResNet-50 batch 32, step 3, the shared machine). ws: the
 * weights' shape, os: the output's. */
static int serial_wgrad(const gnode *y, dnnl_data_type_t wt, const int64_t *ws, const int64_t *os) {
    if (y->op != LT_OP_CONV2D_BWD_WEIGHT || wt != dnnl_bf16 || ws[2] * ws[3] == 1) return 0;
    return y->ia[0] > 1 || y->ia[1] > 1 || os[2] * os[3] <= 7 * 7;
}

/* ---- a bfloat16 weight gradient split over the batch ----
 * oneDNN 2.6's two-thread bfloat16 weight-gradient kernels (jit_bf16,
 * jit_bf16_1x1) wait for each other so often that, in ResNet-50's step,
 * they were only 1.46x faster than float32 where the forward and data
 * gradient ran 2.5x (the shared machine, LT_TRACE_KERNELS=1). Instead, P
 * threads each run a primitive made for one thread on their share of the
 * images, [N p / P, N (p + 1) / P), into a float32 partial gradient in the
 * primitive's layout; the partials are summed and reordered, rounding once,
 * into the output. No thread waits for another before the sum, which reads
 * P weight-sized arrays (the convolution reads images). The images' shares
 * are slices of the operands as they are (the batch is the outermost dim of
 * NCHW and nChw16c): made only where the primitives take our layouts. */
#define MAXPARTS 8

struct wsplit {
    int parts;
    size_t nw; /* floats of one partial (the primitive's layout, padding included) */
    dnnl_primitive_t prim[MAXPARTS];
    dnnl_memory_t x[MAXPARTS], g[MAXPARTS], dw[MAXPARTS], sp[MAXPARTS]; /* sp NULL: needs no scratchpad */
    size_t xoff[MAXPARTS], goff[MAXPARTS];   /* bytes into the operands x and g */
    size_t dwoff[MAXPARTS], spoff[MAXPARTS]; /* into the executable's scratch */
    dnnl_memory_t sum, out;                  /* partial 0, and our output */
    dnnl_primitive_t red;                    /* sum -> out */
};

static dnnl_stream_t pstrm[MAXPARTS]; /* one per part: parts run at once */

static void wsplit_free(wsplit *w) {
    if (!w) return;
    for (int p = 0; p < w->parts; p++) {
        if (w->prim[p]) dnnl_primitive_destroy(w->prim[p]);
        dnnl_memory_t m[4] = {w->x[p], w->g[p], w->dw[p], w->sp[p]};
        for (int i = 0; i < 4; i++)
            if (m[i]) dnnl_memory_destroy(m[i]);
    }
    if (w->red) dnnl_primitive_destroy(w->red);
    if (w->sum) dnnl_memory_destroy(w->sum);
    if (w->out) dnnl_memory_destroy(w->out);
    core_free(w);
}

static int impl_is(const_dnnl_primitive_desc_t pd, const char *prefix) {
    const char *impl = NULL;
    return pd && dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
           !strncmp(impl, prefix, strlen(prefix));
}

/* The primitive descriptor for op descriptor od (attributes at, forward
 * hint fpd): oneDNN's first choice or, where that choice's implementation
 * name starts with `over` (the one measured slower; a CPU with other
 * kernels, AMX's, keeps its own first choice), the first implementation
 * whose name starts with `prefix` if there is one. over NULL: the first
 * choice. */
static dnnl_status_t pd_preferring(dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t od,
                                   const_dnnl_primitive_attr_t at, const_dnnl_primitive_desc_t fpd,
                                   const char *over, const char *prefix) {
    if (!over) return dnnl_primitive_desc_create(pd, od, at, eng, fpd);
    dnnl_primitive_desc_iterator_t it;
    dnnl_status_t st = dnnl_primitive_desc_iterator_create(&it, od, at, eng, fpd);
    if (st != dnnl_success) return st;
    *pd = dnnl_primitive_desc_iterator_fetch(it); /* the first choice, unless a preferred one follows */
    while (impl_is(*pd, over) && dnnl_primitive_desc_iterator_next(it) == dnnl_success) {
        dnnl_primitive_desc_t c = dnnl_primitive_desc_iterator_fetch(it);
        if (impl_is(c, prefix)) {
            dnnl_primitive_desc_destroy(*pd);
            *pd = c;
            break;
        }
        if (c) dnnl_primitive_desc_destroy(c);
    }
    dnnl_primitive_desc_iterator_destroy(it);
    return *pd ? dnnl_success : dnnl_out_of_memory;
}

/* A bfloat16 convolution's primitive descriptor (op descriptor od,
 * attributes at, forward hint fpd): oneDNN's first choice or, where
 * general, its general direct kernel (jit_bf16) if it has one. For a 1x1
 * stride-1 conv oneDNN picks jit_bf16_1x1, which in ResNet-50's bf16 step
 * (batch 32; DNNL_VERBOSE, ms summed over the step's convs of a shape, two
 * alternating runs each) lost to jit_bf16 in the weight gradient (split in
 * two, thread ms) on 56x56 outputs (64 -> 256 channels 62.5 / 47.1, 256 ->
 * 64 36.7 / 26.0, 256 -> 128 27.6 / 22.4) and 28x28 ones (512 -> 128 38.1
 * / 31.5, 512 -> 256 21.2 / 19.3, 128 -> 512 42.2 / 40.9), and in the
 * forward and data gradient on 56x56 (64 -> 256 15.5 / 14.6 and 16.7 /
 * 15.2, 256 -> 64 8.4 / 7.6 and 7.9 / 7.5; 256 -> 128 7.1 / 7.4 and 7.2 /
 * 7.3), while it won the weight gradient on 14x14 (256 -> 1024 49.1 /
 * 60.9) and 7x7 (512 -> 2048 27.2 / 43.0). */
static int general_1x1(const int64_t *ws, const int64_t *str, const int64_t *os, int wgrad) {
    return ws[2] * ws[3] == 1 && str[0] * str[1] == 1 && os[2] * os[3] >= (wgrad ? 28 * 28 : 56 * 56);
}
static dnnl_status_t conv_pd(dnnl_primitive_desc_t *pd, const dnnl_convolution_desc_t *od,
                             const_dnnl_primitive_attr_t at, const_dnnl_primitive_desc_t fpd, int general) {
    return pd_preferring(pd, od, at, fpd, general ? "jit_bf16_1x1:" : NULL, "jit_bf16:");
}

/* Part p's primitive for the images [n0, n1): 0 if made and it reads our
 * layouts (xtag, otag) and writes dw0's layout (or sets *dw0, part 0). */
static int wsplit_part(cpu_dnnl *d, wsplit *w, int p, int64_t n0, int64_t n1, const int64_t *xs, const int64_t *os,
                       dnnl_format_tag_t xtag, dnnl_format_tag_t otag, const dnnl_memory_desc_t *wa,
                       const int64_t *str, const int64_t *dil, const int64_t *pl, const int64_t *pr,
                       dnnl_memory_desc_t *dw0) {
    int64_t xp[4] = {n1 - n0, xs[1], xs[2], xs[3]}, op[4] = {n1 - n0, os[1], os[2], os[3]};
    int64_t x1[4] = {1, xs[1], xs[2], xs[3]}, o1[4] = {1, os[1], os[2], os[3]};
    dnnl_memory_desc_t xu, ou, xa, oa, xi, oi, w32 = *wa;
    w32.data_type = dnnl_f32;
    int general = wa->ndims == 4 && general_1x1(wa->dims, str, os, 1);
    md4(&xu, xp, dnnl_bf16, xtag);
    md4(&ou, op, dnnl_bf16, otag);
    md4(&xa, xp, dnnl_bf16, dnnl_format_tag_any);
    md4(&oa, op, dnnl_bf16, dnnl_format_tag_any);
    md4(&xi, x1, dnnl_bf16, xtag); /* one image: the stride between shares */
    md4(&oi, o1, dnnl_bf16, otag);
    dnnl_convolution_desc_t fd, bd;
    dnnl_primitive_desc_t fpd = NULL, pd = NULL;
    dnnl_primitive_attr_t at = NULL;
    int ok = dnnl_dilated_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct, &xa, wa,
                                                        NULL, &oa, str, dil, pl, pr) == dnnl_success &&
             dnnl_primitive_desc_create(&fpd, &fd, NULL, eng, NULL) == dnnl_success &&
             dnnl_dilated_convolution_backward_weights_desc_init(&bd, dnnl_convolution_direct, &xa, &w32, NULL, &oa,
                                                                 str, dil, pl, pr) == dnnl_success &&
             dnnl_primitive_attr_create(&at) == dnnl_success &&
             dnnl_primitive_attr_set_scratchpad_mode(at, dnnl_scratchpad_mode_user) == dnnl_success &&
             conv_pd(&pd, &bd, at, fpd, general) == dnnl_success;
    if (ok) {
        const dnnl_memory_desc_t *mx = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0),
                                 *mg = dnnl_primitive_desc_query_md(pd, dnnl_query_diff_dst_md, 0),
                                 *mw = dnnl_primitive_desc_query_md(pd, dnnl_query_diff_weights_md, 0),
                                 *ms = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        if (p == 0) *dw0 = *mw;
        size_t sps = ms ? dnnl_memory_desc_get_size(ms) : 0;
        ok = dnnl_memory_desc_equal(mx, &xu) && dnnl_memory_desc_equal(mg, &ou) && dnnl_memory_desc_equal(mw, dw0) &&
             dnnl_primitive_create(&w->prim[p], pd) == dnnl_success &&
             dnnl_memory_create(&w->x[p], &xu, eng, DNNL_MEMORY_NONE) == dnnl_success &&
             dnnl_memory_create(&w->g[p], &ou, eng, DNNL_MEMORY_NONE) == dnnl_success &&
             dnnl_memory_create(&w->dw[p], mw, eng, DNNL_MEMORY_NONE) == dnnl_success &&
             (!sps || dnnl_memory_create(&w->sp[p], ms, eng, DNNL_MEMORY_NONE) == dnnl_success) &&
             (pstrm[p] || dnnl_stream_create(&pstrm[p], eng, dnnl_stream_default_flags) == dnnl_success);
        if (ok) {
            w->xoff[p] = (size_t)n0 * dnnl_memory_desc_get_size(&xi);
            w->goff[p] = (size_t)n0 * dnnl_memory_desc_get_size(&oi);
            w->dwoff[p] = scratch_block(d, dnnl_memory_desc_get_size(mw));
            if (sps) w->spoff[p] = scratch_block(d, sps);
            if (p == 0) w->nw = dnnl_memory_desc_get_size(mw) / sizeof(float);
        }
    }
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (fpd) dnnl_primitive_desc_destroy(fpd);
    if (at) dnnl_primitive_attr_destroy(at);
    return ok ? 0 : -1;
}

/* Sets d->ws where the split can be made (more than one thread and image,
 * our layouts taken); otherwise leaves d as it was. wa: the weights as the
 * forward takes them (bfloat16, format any), wu: our output. */
static void wsplit_new(cpu_dnnl *d, const int64_t *xs, const int64_t *os, dnnl_format_tag_t xtag,
                       dnnl_format_tag_t otag, const dnnl_memory_desc_t *wa, const dnnl_memory_desc_t *wu,
                       const int64_t *str, const int64_t *dil, const int64_t *pl, const int64_t *pr) {
#ifdef _OPENMP
    int P = omp_get_max_threads();
#else
    int P = 1;
#endif
    if (P > MAXPARTS) P = MAXPARTS;
    if (P > xs[0]) P = (int)xs[0];
    if (P < 2 || !g_config.wgrad_split) return;
    int had_error = err_code();
    wsplit *w = core_calloc(1, sizeof *w);
    if (!w) {
        if (!had_error) lt_clear_error(); /* out of memory here is no failure: the unsplit primitive serves */
        return;
    }
    w->parts = P;
    size_t scratch0 = d->scratch;
    dnnl_memory_desc_t dw0;
    int rc = 0;
    int nth = serial_begin(1); /* each part runs on one thread */
    for (int p = 0; p < P && rc == 0; p++)
        rc = wsplit_part(d, w, p, xs[0] * p / P, xs[0] * (p + 1) / P, xs, os, xtag, otag, wa, str, dil, pl, pr, &dw0);
    serial_end(1, nth);
    dnnl_primitive_desc_t rpd = NULL;
    if (rc == 0)
        rc = dnnl_memory_create(&w->sum, &dw0, eng, DNNL_MEMORY_NONE) == dnnl_success &&
                     dnnl_memory_create(&w->out, wu, eng, DNNL_MEMORY_NONE) == dnnl_success &&
                     dnnl_reorder_primitive_desc_create(&rpd, &dw0, eng, wu, eng, NULL) == dnnl_success &&
                     dnnl_primitive_create(&w->red, rpd) == dnnl_success
                 ? 0
                 : -1;
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (rc) {
        wsplit_free(w);
        d->scratch = scratch0;
        return;
    }
    d->ws = w;
}

static int wsplit_run(const wsplit *w, void *const *in, void *out, char *scratch) {
    for (int p = 0; p < w->parts; p++)
        if (dnnl_memory_set_data_handle(w->g[p], (char *)in[0] + w->goff[p]) != dnnl_success ||
            dnnl_memory_set_data_handle(w->x[p], (char *)in[1] + w->xoff[p]) != dnnl_success ||
            dnnl_memory_set_data_handle(w->dw[p], scratch + w->dwoff[p]) != dnnl_success ||
            (w->sp[p] && dnnl_memory_set_data_handle(w->sp[p], scratch + w->spoff[p]) != dnnl_success))
            return -1;
    int bad = 0;
    /* Inside this region oneDNN runs each primitive on the calling thread
     * (it opens no nested parallel region). */
#pragma omp parallel for num_threads(w->parts) schedule(static, 1) reduction(| : bad)
    for (int p = 0; p < w->parts; p++) {
        dnnl_exec_arg_t a[4] = {{DNNL_ARG_DIFF_DST, w->g[p]},
                                {DNNL_ARG_SRC, w->x[p]},
                                {DNNL_ARG_DIFF_WEIGHTS, w->dw[p]},
                                {DNNL_ARG_SCRATCHPAD, w->sp[p]}};
        bad |= dnnl_primitive_execute(w->prim[p], pstrm[p], w->sp[p] ? 4 : 3, a) != dnnl_success ||
               dnnl_stream_wait(pstrm[p]) != dnnl_success;
    }
    if (bad) return -1;
    float *s0 = (float *)(scratch + w->dwoff[0]);
    for (int p = 1; p < w->parts; p++) {
        const float *sp = (const float *)(scratch + w->dwoff[p]);
        int64_t n = (int64_t)w->nw;
#pragma omp parallel for simd schedule(static)
        for (int64_t i = 0; i < n; i++) s0[i] += sp[i];
    }
    dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, w->sum}, {DNNL_ARG_TO, w->out}};
    prof_add(M_SplitWeightGrads, 1);
    return dnnl_memory_set_data_handle(w->sum, s0) == dnnl_success &&
                   dnnl_memory_set_data_handle(w->out, out) == dnnl_success &&
                   dnnl_primitive_execute(w->red, strm, 2, r) == dnnl_success && dnnl_stream_wait(strm) == dnnl_success
               ? 0
               : -1;
}

/* Along one spatial dim: does every output index have a tap inside the
 * input (size in, stride s, padding p, dilation dl)? */
static int taps_inside(int64_t out, int64_t k, int64_t s, int64_t p, int64_t dl, int64_t in) {
    for (int64_t o = 0; o < out; o++) {
        int64_t kk = 0;
        while (kk < k && (o * s - p + kk * dl < 0 || o * s - p + kk * dl >= in)) kk++;
        if (kk == k) return 0;
    }
    return 1;
}

/* CONV2D (x, w[, bias]), CONV2D_BWD_INPUT (g, w), CONV2D_BWD_WEIGHT (g, x);
 * ia [sH, sW, pH, pW, dH, dW, groups]. Weights of a grouped conv are
 * (G, O/G, C/G, kH, kW) to oneDNN: the same bytes as our (O, C/G, kH, kW).
 * The image-side value (x, or dx) and the output-side one (y, or g) are
 * plain NCHW or, where blk says so, nChw16c (layout.c). */
static int conv_new(cpu_dnnl *d, const exec_graph *g, const gnode *y, const uint8_t *blk, dnnl_alg_kind_t alg) {
    const gnode *a0 = &g->nodes[y->in[0]], *a1 = &g->nodes[y->in[1]];
    const int64_t *xs = a0->shape, *ws = a1->shape, *os = y->shape, *ia = y->ia;
    int32_t self = (int32_t)(y - g->nodes), xv = y->in[0], ov = self;
    if (y->op == LT_OP_CONV2D_BWD_INPUT) xs = y->shape, os = a0->shape, xv = self, ov = y->in[0];
    if (y->op == LT_OP_CONV2D_BWD_WEIGHT) xs = a1->shape, ws = y->shape, os = a0->shape, xv = y->in[1], ov = y->in[0];
    int64_t G = ia[6];
    int32_t wv = y->op == LT_OP_CONV2D_BWD_WEIGHT ? self : y->in[1];
    if (y->op != LT_OP_CONV2D_BWD_INPUT && y->dtype == LT_F32 && a0->dtype == LT_F32 && (ia[2] || ia[3]))
        d->wp = (wpad){1, y->op == LT_OP_CONV2D, blk[ov], 0, os[0], os[1], os[2], os[3], ws[1], ws[2], ws[3], xs[2],
                       xs[3], {ia[0], ia[1], ia[2], ia[3], ia[4], ia[5]}};
    if (d->wp.on) d->wp.all_in = taps_inside(os[2], ws[2], ia[0], ia[2], ia[4], xs[2]) &&
                                 taps_inside(os[3], ws[3], ia[1], ia[3], ia[5], xs[3]);
    dnnl_data_type_t xt = dt_of(&g->nodes[xv]), wt = dt_of(&g->nodes[wv]), ot = dt_of(&g->nodes[ov]);
    dnnl_memory_desc_t xu, wu, ou, bu, xa, wa, oa;
    md4(&xu, xs, xt, blk[xv] ? dnnl_aBcd16b : dnnl_nchw);
    md4(&ou, os, ot, blk[ov] ? dnnl_aBcd16b : dnnl_nchw);
    md4(&xa, xs, xt, dnnl_format_tag_any);
    md4(&oa, os, ot, dnnl_format_tag_any);
    if (G > 1) {
        dnnl_dims_t wd = {G, ws[0] / G, ws[1], ws[2], ws[3]};
        dnnl_memory_desc_init_by_tag(&wu, 5, wd, wt, dnnl_goihw);
        dnnl_memory_desc_init_by_tag(&wa, 5, wd, wt, dnnl_format_tag_any);
    } else {
        md4(&wu, ws, wt, dnnl_oihw);
        md4(&wa, ws, wt, dnnl_format_tag_any);
    }
    dnnl_dims_t bd = {ws[0]};
    int bias = y->op == LT_OP_CONV2D && y->nin == 3;
    dnnl_memory_desc_init_by_tag(&bu, 1, bd, bias ? dt_of(&g->nodes[y->in[2]]) : dnnl_f32, dnnl_x);
    /* The right padding that makes oneDNN's size rule give our output size
     * (negative when the last window stops short of the image's end). */
    dnnl_dims_t str = {ia[0], ia[1]}, dil = {ia[4] - 1, ia[5] - 1}, pl = {ia[2], ia[3]};
    dnnl_dims_t pr = {(os[2] - 1) * ia[0] + (ws[2] - 1) * ia[4] + 1 - xs[2] - ia[2],
                      (os[3] - 1) * ia[1] + (ws[3] - 1) * ia[5] + 1 - xs[3] - ia[3]};
    if (y->op == LT_OP_CONV2D_BWD_WEIGHT && xt == dnnl_bf16 && ot == dnnl_bf16) {
        wsplit_new(d, xs, os, blk[xv] ? dnnl_aBcd16b : dnnl_nchw, blk[ov] ? dnnl_aBcd16b : dnnl_nchw, &wa, &wu, str, dil,
                   pl, pr);
        if (d->ws) return 0;
    }
    dnnl_convolution_desc_t fd, bdsc;
    if (dnnl_dilated_convolution_forward_desc_init(&fd, dnnl_forward_training, alg, &xa, &wa, bias ? &bu : NULL, &oa,
                                                   str, dil, pl, pr) != dnnl_success)
        return -1;
    dnnl_primitive_desc_t fpd, pd;
    int general = xt == dnnl_bf16 && general_1x1(ws, str, os, 0);
    if (conv_pd(&fpd, &fd, NULL, NULL, general && y->op == LT_OP_CONV2D) != dnnl_success) return -1;
    if (y->op == LT_OP_CONV2D) {
        const dnnl_memory_desc_t *u[] = {&xu, &wu, &bu, &ou};
        if (bias) return finish(d, fpd, 4, (int[]){DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST},
                                (int[]){0, 1, 2, -1}, u);
        const dnnl_memory_desc_t *u3[] = {&xu, &wu, &ou};
        return finish(d, fpd, 3, (int[]){DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST}, (int[]){0, 1, -1}, u3);
    }
    dnnl_status_t st = y->op == LT_OP_CONV2D_BWD_INPUT
                           ? dnnl_dilated_convolution_backward_data_desc_init(&bdsc, alg, &xa, &wa, &oa, str, dil, pl, pr)
                           : dnnl_dilated_convolution_backward_weights_desc_init(&bdsc, alg, &xa, &wa, NULL, &oa, str,
                                                                                dil, pl, pr);
    int serial = serial_wgrad(y, wt, ws, os), nth = serial_begin(serial), rc = -1;
    if (st == dnnl_success) st = conv_pd(&pd, &bdsc, NULL, fpd, general && y->op == LT_OP_CONV2D_BWD_INPUT);
    dnnl_primitive_desc_destroy(fpd);
    if (st == dnnl_success && y->op == LT_OP_CONV2D_BWD_INPUT) {
        const dnnl_memory_desc_t *u[] = {&ou, &wu, &xu};
        rc = finish(d, pd, 3, (int[]){DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC}, (int[]){0, 1, -1}, u);
    } else if (st == dnnl_success) {
        const dnnl_memory_desc_t *u[] = {&ou, &xu, &wu};
        rc = finish(d, pd, 3, (int[]){DNNL_ARG_DIFF_DST, DNNL_ARG_SRC, DNNL_ARG_DIFF_WEIGHTS}, (int[]){0, 1, -1}, u);
    }
    serial_end(serial, nth);
    return rc;
}

/* AVG_POOL2D (x), AVG_POOL2D_BWD (g); ia [kH, kW, sH, sW, pH, pW, H, W, ...].
 * Plain NCHW throughout: pooling is memory-bound, a reorder would double
 * its traffic. Max pooling is not here: oneDNN's max drops a NaN where
 * PyTorch's propagates it (nn_fast.c, pool_blocked.c run it). */
static int pool_new(cpu_dnnl *d, const exec_graph *g, const gnode *y) {
    const gnode *x = &g->nodes[y->in[0]];
    const int64_t *ia = y->ia, *xs = y->op == LT_OP_AVG_POOL2D_BWD ? y->shape : x->shape;
    const int64_t *os = y->op == LT_OP_AVG_POOL2D_BWD ? x->shape : y->shape;
    dnnl_memory_desc_t xu, ou;
    md4(&xu, xs, dt_of(x), dnnl_nchw); /* pooling keeps one dtype (all_float) */
    md4(&ou, os, dt_of(x), dnnl_nchw);
    dnnl_dims_t k = {ia[0], ia[1]}, str = {ia[2], ia[3]}, pl = {ia[4], ia[5]};
    dnnl_dims_t pr = {(os[2] - 1) * ia[2] + ia[0] - xs[2] - ia[4], (os[3] - 1) * ia[3] + ia[1] - xs[3] - ia[5]};
    /* PyTorch's divisor counts padding only up to the padded image: a
     * ceil_mode window past it, a divisor_override and integers run the
     * reference kernel (ia[8..10]: ceil_mode, count_include_pad, divisor) */
    if (!dtype_is_float((lt_dtype)x->dtype) || ia[10] || (ia[9] && (pr[0] > pl[0] || pr[1] > pl[1]))) return -1;
    dnnl_alg_kind_t alg = ia[9] ? dnnl_pooling_avg_include_padding : dnnl_pooling_avg_exclude_padding;
    dnnl_prop_kind_t prop = y->op == LT_OP_AVG_POOL2D_BWD ? dnnl_forward_training : dnnl_forward_inference;
    dnnl_pooling_desc_t fd, bd;
    dnnl_primitive_desc_t fpd, pd;
    if (dnnl_pooling_forward_desc_init(&fd, prop, alg, &xu, &ou, str, k, pl, pr) != dnnl_success ||
        dnnl_primitive_desc_create(&fpd, &fd, NULL, eng, NULL) != dnnl_success)
        return -1;
    if (y->op != LT_OP_AVG_POOL2D_BWD) {
        const dnnl_memory_desc_t *u[] = {&xu, &ou};
        return finish(d, fpd, 2, (int[]){DNNL_ARG_SRC, DNNL_ARG_DST}, (int[]){0, -1}, u);
    }
    dnnl_status_t st = dnnl_pooling_backward_desc_init(&bd, alg, &xu, &ou, str, k, pl, pr);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(&pd, &bd, NULL, eng, fpd);
    dnnl_primitive_desc_destroy(fpd);
    if (st != dnnl_success) return -1;
    const dnnl_memory_desc_t *u[] = {&ou, &xu};
    return finish(d, pd, 2, (int[]){DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC}, (int[]){0, -1}, u);
}

/* LINEAR (x (..., K), w (O, K)[, bias (O)]; float32 or bfloat16) and
 * MATMUL (a (..., K), b (K, N); bfloat16) as one (M, K) @ (K, N) matmul
 * primitive (bfloat16 accumulating in float32): the leading dims of x or a
 * are rows of one matrix; w is read transposed in place ('ba'), the bias
 * added in the kernel. On float32 the primitive (brgemm) ran a GPT's
 * linears 5-25% faster than dnnl_sgemm('N', 'T') over a bias copied into
 * y first (fc2, (4096, 1536) x (384, 1536)^T: 16 -> 12.5 ms). trans
 * (2-D MATMUL, fuse.c): bit i, operand i is read as the transpose of the
 * matrix the kernel reads (a weight gradient g^T x without the copy of g^T).
 * A float32 linear of at least 1024 rows has its weight reordered, each
 * run, into the blocked layout the primitive asks for (add_arg): its
 * brgemm reads W^T ('ba', K contiguous) 10-15% slower than its own
 * layout (GPT step, traced, two alternating rounds: the forward linears
 * 265 -> 233 ms; (4096, 384) x (384, 1536) alone, reorder included: 344
 * -> 385 GFLOP/s). The reorder is a pass over the weight, K N floats
 * against the product's 2 M K N flops: about 50 / M of the product's time
 * here (30 GB/s, 400 GFLOP/s), so fewer rows (a classifier's batch of 32
 * against a 2048 x 1000 weight) read W^T in place.
 * bfloat16 takes oneDNN's gemm-based matmul over its first choice on
 * AVX512-BF16 (brgemm; AMX's first choice stays): on the GPT step's eleven
 * shapes (bench_matmul_bf16's, both threads, best of 15 warm) it ran 5-25%
 * faster on every one, the weight gradients' transposed operands most
 * (1536 x 4096 x 384: 605 -> 740 GFLOP/s); in the traced bf16 step the
 * weight gradients went from 546-633 to 650-707 GFLOP/s, the step 572 ->
 * 542 ms. */
static int matmul_new(cpu_dnnl *d, const exec_graph *g, const gnode *y, int trans) {
    const gnode *a = &g->nodes[y->in[0]], *b = &g->nodes[y->in[1]];
    int lin = y->op == LT_OP_LINEAR, bias = lin && y->nin == 3;
    int64_t K = a->shape[a->ndim - 1], N = lin ? b->shape[0] : b->shape[1], M = a->numel / K;
    dnnl_memory_desc_t am, bm, cm, biasm;
    dnnl_dims_t ad = {M, K}, bd = {K, N}, cd = {M, N}, bsd = {1, N};
    dnnl_data_type_t dt = dt_of(a); /* y's too, but nn_matmul_wide's float32 */
    dnnl_memory_desc_init_by_tag(&am, 2, ad, dt, trans & 1 ? dnnl_ba : dnnl_ab);
    dnnl_memory_desc_t bu; /* b as stored; bm as the primitive reads it (a tall float32 linear: its own layout) */
    dnnl_memory_desc_init_by_tag(&bu, 2, bd, dt, lin || trans & 2 ? dnnl_ba : dnnl_ab);
    if (lin && dt == dnnl_f32 && M >= 1024) dnnl_memory_desc_init_by_tag(&bm, 2, bd, dt, dnnl_format_tag_any);
    else bm = bu;
    dnnl_memory_desc_init_by_tag(&cm, 2, cd, dt_of(y), dnnl_ab);
    dnnl_memory_desc_init_by_tag(&biasm, 2, bsd, dt, dnnl_ab);
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd;
    if (dnnl_matmul_desc_init(&md, &am, &bm, bias ? &biasm : NULL, &cm) != dnnl_success ||
        pd_preferring(&pd, &md, NULL, NULL, dt == dnnl_bf16 ? "brg:avx512_core_bf16" : NULL, "gemm:") != dnnl_success)
        return -1;
    const dnnl_memory_desc_t *u[] = {&am, &bu, &biasm, &cm};
    if (bias) return finish(d, pd, 4, (int[]){DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST},
                            (int[]){0, 1, 2, -1}, u);
    const dnnl_memory_desc_t *u3[] = {&am, &bu, &cm};
    return finish(d, pd, 3, (int[]){DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST}, (int[]){0, 1, -1}, u3);
}

/* Winograd: oneDNN's F(4x4, 3x3) kernels (jit_wino_4x3) do 2.25x fewer
 * multiplications than a direct 3x3 conv; on ResNet-50 (batch 32, 224) its
 * 3x3 convs, forward and both backward, ran about 2x faster, the whole step
 * 10% (README, fp32 section). Float32 3x3 stride-1 convs with 64 channels
 * and more on each side ask for it with convolution_auto, and oneDNN takes
 * it where its heuristics say it pays. Narrower ones stay direct: ResNet-20's
 * 16- and 32-channel convs (batch 128, 28x28 and 14x14) ran 1.3-1.9x slower
 * on it, its 64-channel ones 1.4x faster. It computes whole 4x4 output
 * tiles, so a small image wastes most of them: on ResNet-18 at 64x64, the
 * 512-channel convs (2x2 outputs: 4 of each tile's 16) ran 3x slower on it
 * than direct (batch 32, one thread: 9.4 vs 3.0 ms), the 256-channel ones
 * (4x4: whole tiles) 1.4x faster; so at least 3/4 of the tiles' outputs
 * must be in the image (7x7 and 14x14 are, 2x2, 3x3, 5x5, 6x6 not).
 * Its rounding differs from a direct conv's (within a few float32 ulps of
 * the sums' magnitude: test_cpu_layouts), and its transforms mix a tile's
 * inputs, so a non-finite input would spread over the tile (and a huge
 * finite one could overflow): wherever its output is not all finite, the
 * direct conv (exact) computes it again, with the direct conv's rules for
 * inf and NaN. LT_CONV_WINOGRAD=0 keeps every conv direct. */
static int wino_shape(const exec_graph *g, const gnode *y) {
    const int64_t *ws = y->op == LT_OP_CONV2D_BWD_WEIGHT ? y->shape : g->nodes[y->in[1]].shape, *ia = y->ia;
    const int64_t *os = y->op == LT_OP_CONV2D ? y->shape : g->nodes[y->in[0]].shape; /* the conv's output */
    int64_t tiled = (os[2] + 3) / 4 * 4 * ((os[3] + 3) / 4 * 4);
    return g_config.conv_winograd && y->dtype == LT_F32 && ia[6] == 1 && ws[0] >= 64 && ws[1] >= 64 && ws[2] == 3 &&
           ws[3] == 3 && ia[0] == 1 && ia[1] == 1 && ia[4] == 1 && ia[5] == 1 && 4 * os[2] * os[3] >= 3 * tiled;
}

static int wino_exact(cpu_dnnl *d, const exec_graph *g, const gnode *y, const uint8_t *blk) {
    for (int i = 0; i < d->nargs; i++)
        if (d->a[i].io < 0) {
            const dnnl_memory_desc_t *md;
            if (dnnl_memory_get_memory_desc(d->a[i].user, &md) != dnnl_success) return -1;
            d->out_elems = (int64_t)(dnnl_memory_desc_get_size(md) / sizeof(float));
        }
    d->wp.on = 0; /* finite inputs: no padding tap to mend */
    d->exact = core_calloc(1, sizeof *d->exact);
    if (!d->exact) return -1;
    return conv_new(d->exact, g, y, blk, dnnl_convolution_direct);
}

/* Every operand and the output of dtype dt (float32 or bfloat16), none empty. */
static int all_of(const exec_graph *g, const gnode *y, int dt) {
    if (y->dtype != dt || y->numel == 0) return 0;
    for (int i = 0; i < y->nin; i++) {
        const gnode *x = &g->nodes[y->in[i]];
        if (x->dtype != dt || x->numel == 0) return 0;
    }
    return 1;
}
static int all_float(const exec_graph *g, const gnode *y) { return all_of(g, y, LT_F32) || all_of(g, y, LT_BF16); }

int cpu_dnnl_covers(const exec_graph *g, const gnode *y) {
    int conv = y->op == LT_OP_CONV2D || y->op == LT_OP_CONV2D_BWD_INPUT || y->op == LT_OP_CONV2D_BWD_WEIGHT;
    return conv && all_float(g, y) && dnnl_ready();
}

/* nn_matmul_wide's MATMUL: bfloat16 operands, float32 result (all_float
 * takes the all-bfloat16 one). */
static int wide_matmul(const exec_graph *g, const gnode *y) {
    return y->op == LT_OP_MATMUL && y->dtype == LT_F32 && y->numel && g->nodes[y->in[0]].dtype == LT_BF16 &&
           g->nodes[y->in[0]].numel && g->nodes[y->in[1]].dtype == LT_BF16 && g->nodes[y->in[1]].numel;
}

cpu_dnnl *cpu_dnnl_new(const exec_graph *g, const gnode *y, const uint8_t *blk, int trans) {
    if (!all_float(g, y) && !wide_matmul(g, y)) return NULL;
    switch (y->op) {
    case LT_OP_CONV2D:
    case LT_OP_CONV2D_BWD_INPUT:
    case LT_OP_CONV2D_BWD_WEIGHT:
    case LT_OP_AVG_POOL2D:
    case LT_OP_AVG_POOL2D_BWD:
    case LT_OP_LINEAR: break;
    case LT_OP_MATMUL: /* float32 matmuls are K_MATMUL kernels (cpu_dnnl_matmul) */
        if (g->nodes[y->in[0]].dtype != LT_BF16 || g->nodes[y->in[0]].ndim < 2 || g->nodes[y->in[1]].ndim != 2)
            return NULL;
        break;
    default: return NULL;
    }
    if (!dnnl_ready()) return NULL;
    cpu_dnnl *d = core_calloc(1, sizeof *d);
    if (!d) return NULL;
    int rc = 0;
    if (y->op == LT_OP_CONV2D || y->op == LT_OP_CONV2D_BWD_INPUT || y->op == LT_OP_CONV2D_BWD_WEIGHT) {
        rc = conv_new(d, g, y, blk, wino_shape(g, y) ? dnnl_convolution_auto : dnnl_convolution_direct);
        if (rc == 0 && d->wino) rc = wino_exact(d, g, y, blk);
    } else if (y->op == LT_OP_LINEAR || y->op == LT_OP_MATMUL) {
        rc = matmul_new(d, g, y, trans);
    } else {
        rc = pool_new(d, g, y);
    }
    if (rc) {
        cpu_dnnl_free(d); /* oneDNN declined this geometry: the caller falls back */
        return NULL;
    }
    return d;
}

/* Padding taps count as products with zero (the reference kernels' rule,
 * ref_nn_conv.c: PyTorch's native convolution, im2col then a GEMM). Some of
 * oneDNN's kernels (the direct JIT ones) leave those taps out, others
 * (gemm:jit) multiply, by shape and ISA; so after the primitive, wherever a
 * non-finite factor meets a padding tap, the product inf * 0 = NaN is put
 * back. The common case costs one streaming read of the factor. */
static int tap_in_pad(const wpad *w, int64_t e, int64_t kh, int64_t kw) {
    const int64_t *ia = w->ia, oh = e / w->oW, ow = e % w->oW;
    int64_t ih = oh * ia[0] - ia[2] + kh * ia[4], iw = ow * ia[1] - ia[3] + kw * ia[5];
    return ih < 0 || ih >= w->H || iw < 0 || iw >= w->W;
}

/* The output-side value (N, O, oH oW) plain or as nChw16c (channels padded
 * to a multiple of 16): its element count, and element i's (n, o, e), e the
 * position; 0 for a padding channel. */
static int64_t out_len(const wpad *w) { return w->N * (w->oblk ? (w->O + 15) / 16 * 16 : w->O) * w->oH * w->oW; }
static int out_pos(const wpad *w, int64_t i, int64_t *n, int64_t *o, int64_t *e) {
    int64_t plane = w->oH * w->oW, ob = (w->O + 15) / 16;
    if (!w->oblk) return *e = i % plane, *o = i / plane % w->O, *n = i / plane / w->O, 1;
    *o = i / plane / 16 % ob * 16 + i % 16, *e = i / 16 % plane, *n = i / 16 / plane / ob;
    return *o < w->O;
}
/* An exponent field of all ones is an inf or a NaN. Tested on the bits so
 * that the loop vectorizes: isfinite compiled to a scalar loop, 4.8% of
 * the samples (perf) of a two-rank ResNet-18 run, 2.1% now. Every padded
 * conv reads its weights or weight gradient here, every Winograd one its
 * output. */
static int all_finite(const float *p, int64_t len) {
    uint32_t bad = 0;
#pragma omp parallel for simd reduction(| : bad) if (len > 65536)
    for (int64_t i = 0; i < len; i++) {
        uint32_t b;
        memcpy(&b, &p[i], sizeof b);
        bad |= (b & 0x7f800000u) == 0x7f800000u;
    }
    return !bad;
}

/* CONV2D_BWD_WEIGHT: a non-finite g at a position whose tap (kh, kw) reads
 * padding makes dw[o, :, kh, kw] NaN. Where every position also has a tap
 * inside the image, a non-finite g[n, o, e] makes that tap's dw[o, :, ...]
 * non-finite in any kernel (inf * x is never finite, nor a sum holding it):
 * so a finite dw, the size of the weights, clears g without reading it. */
static void wgrad_pad_nan(const wpad *w, const float *g, float *dw) {
    int64_t len = out_len(w), n, o, e;
    if (w->all_in && all_finite(dw, w->O * w->Cg * w->kH * w->kW)) return;
    if (all_finite(g, len)) return;
    for (int64_t i = 0; i < len; i++) {
        if (isfinite(g[i]) || !out_pos(w, i, &n, &o, &e)) continue;
        for (int64_t kh = 0; kh < w->kH; kh++)
            for (int64_t kw = 0; kw < w->kW; kw++)
                if (tap_in_pad(w, e, kh, kw))
                    for (int64_t c = 0; c < w->Cg; c++) dw[((o * w->Cg + c) * w->kH + kh) * w->kW + kw] = NAN;
    }
}

/* CONV2D: a non-finite weight w[o, c, kh, kw] makes y[:, o] NaN at every
 * position whose tap (kh, kw) reads padding. */
static void fwd_pad_nan(const wpad *w, const float *wt, float *y) {
    int64_t per = w->Cg * w->kH * w->kW, n, o, e;
    if (all_finite(wt, w->O * per)) return;
    for (int64_t i = 0; i < out_len(w); i++) {
        if (!out_pos(w, i, &n, &o, &e)) continue;
        for (int64_t j = 0; j < per; j++)
            if (!isfinite(wt[o * per + j]) && tap_in_pad(w, e, j / w->kW % w->kH, j % w->kW)) y[i] = NAN;
    }
}

int cpu_dnnl_run(const cpu_dnnl *d, void *const *in, void *out, char *scratch) {
    if (d->ws) return wsplit_run(d->ws, in, out, scratch);
    dnnl_exec_arg_t args[MAXARGS];
    for (int i = 0; i < d->nargs; i++) {
        const darg *a = &d->a[i];
        if (dnnl_memory_set_data_handle(a->user, a->io >= 0 ? in[a->io] : out) != dnnl_success) return -1;
        if (a->mem != a->user && dnnl_memory_set_data_handle(a->mem, scratch + a->off) != dnnl_success) return -1;
        args[i] = (dnnl_exec_arg_t){a->arg, a->mem};
    }
    for (int i = 0; i < d->nargs; i++) {
        const darg *a = &d->a[i];
        dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, a->user}, {DNNL_ARG_TO, a->mem}};
        if (a->io >= 0 && a->reorder && dnnl_primitive_execute(a->reorder, strm, 2, r) != dnnl_success) return -1;
    }
    if (dnnl_primitive_execute(d->prim, strm, d->nargs, args) != dnnl_success) return -1;
    for (int i = 0; i < d->nargs; i++) {
        const darg *a = &d->a[i];
        dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, a->mem}, {DNNL_ARG_TO, a->user}};
        if (a->io < 0 && a->reorder && dnnl_primitive_execute(a->reorder, strm, 2, r) != dnnl_success) return -1;
    }
    if (dnnl_stream_wait(strm) != dnnl_success) return -1;
    if (d->wino) {
        prof_add(M_WinogradConvs, 1);
        if (all_finite(out, d->out_elems)) return 0;
        prof_add(M_WinogradRedone, 1);
        return cpu_dnnl_run(d->exact, in, out, scratch);
    }
    if (d->wp.on && d->wp.fwd) fwd_pad_nan(&d->wp, in[1], out);
    if (d->wp.on && !d->wp.fwd) wgrad_pad_nan(&d->wp, in[0], out);
    return 0;
}

#else

int cpu_dnnl_has_sgemm(void) { return 0; }
int cpu_dnnl_matmul(const gnode *y, const gnode *a, const gnode *b, const void *A, const void *B, void *C, int trans) {
    (void)y, (void)a, (void)b, (void)A, (void)B, (void)C, (void)trans;
    return -1;
}
cpu_dnnl *cpu_dnnl_new(const exec_graph *g, const gnode *y, const uint8_t *blk, int trans) {
    (void)g, (void)y, (void)blk, (void)trans;
    return NULL;
}
int cpu_dnnl_covers(const exec_graph *g, const gnode *y) {
    (void)g, (void)y;
    return 0;
}
size_t cpu_dnnl_scratch(const cpu_dnnl *d) {
    (void)d;
    return 0;
}
int cpu_dnnl_run(const cpu_dnnl *d, void *const *in, void *out, char *scratch) {
    (void)d, (void)in, (void)out, (void)scratch;
    return -1;
}
void cpu_dnnl_free(cpu_dnnl *d) { (void)d; }

#endif
