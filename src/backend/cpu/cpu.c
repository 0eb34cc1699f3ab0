/* The cpu backend: compile = passes, fusion, memory plan; run = allocate
 * every slot up front (so a failure never leaves a donated input half
 * written), then the kernels in order. Ops without a fast kernel run the
 * reference kernel for their node, counted in FallbackOps. */
#include "cpu.h"

#include "../../dist/dist.h"
#include "../../exec/passes.h"
#include "../../prof/prof.h"
#include "../ref/ref.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef __GLIBC__
#include <malloc.h>
#endif

typedef struct cpu_exe {
    exec_graph *g; /* the optimized graph (owned) */
    kernel *k;
    int nk;
    plan pl;
    char *arena;   /* temp slots: in the run memory (run_memory), set by each run */
    char *scratch; /* tile registers, per thread: in the run memory too */
    size_t scratch_stride, tile_bytes;
    int maxread, maxwrite, maxins;
    size_t scratch_bytes; /* tile registers and library scratch, for PeakBytes */
    cpu_dnnl **lib;  /* per kernel: its oneDNN primitive (dnnl.c), made once at compile time */
    cpu_dnnl **lib_lo; /* the same made for one thread fewer (oneDNN splits its work when it makes a primitive) */
    cpu_dnnl **run_lib; /* the set of the run in progress */
    uint8_t *blk;      /* per value: channel-blocked (layout.c), for lib_lo */
    tpolicy tp;        /* the thread count (threads.c) */
    int adapt;         /* tp is followed */
    char *lib_scratch; /* blocked-layout copies of the library ops, one op at a time: in the run memory */
    size_t lib_bytes;
    coll_plan cp;      /* collectives: where each is waited for (coll.c) */
    double flops;      /* of the convs, linears and matmuls, per run (ExecutedFlops) */
} cpu_exe;

static int debug_guards;
void cpu_set_debug_guards(int on) { debug_guards = on; }
static int force_fewer;
void cpu_force_fewer_threads(int on) { force_fewer = on; }
#define GUARD_BYTE 0xa5

static int nthreads(void) {
#ifdef _OPENMP
    static int threads_set;
    if (!threads_set) {
        /* One thread runtime for our loops and oneDNN's: set once. */
        if (g_config.num_threads > 0) omp_set_num_threads(g_config.num_threads);
        /* Several ranks on this machine share its cores: a default launch never oversubscribes. */
        else if (dist_local_size() > 1) omp_set_num_threads(omp_get_num_procs() / dist_local_size() > 1
                                                                  ? omp_get_num_procs() / dist_local_size()
                                                                  : 1);
        threads_set = 1;
#ifdef __GLIBC__
        /* Step outputs are large and recur every step: keep them in the heap
         * instead of mmap/munmap per buffer, whose page faults cost more
         * than the kernels (measured: 10x on an 11M-element group). */
        mallopt(M_MMAP_THRESHOLD, 1 << 30);
        mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
    }
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static int cpu_supports(int op) {
    (void)op;
    return 1; /* every op runs: fast kernel or the reference fallback */
}

static void lib_free_set(cpu_dnnl **lib, int nk) {
    for (int j = 0; lib && j < nk; j++) cpu_dnnl_free(lib[j]);
    core_free(lib);
}

static void lib_free(cpu_exe *e) {
    lib_free_set(e->lib, e->nk);
    e->lib = NULL;
}

/* One block holds the temp slots, tile registers and library scratch of
 * whichever executable runs: runs never overlap (one thread at a time), so
 * the process holds the largest executable's need instead of the sum over
 * the compile cache (torch's SGD alone makes two step graphs, the first
 * without momentum buffers: a second ResNet-50 arena was 2.7 GB). It only
 * grows, so a steady loop allocates nothing, and goes with the last
 * executable. */
static struct {
    char *p;
    size_t n;
    int users; /* live executables */
} run_mem;

static void run_memory_drop(void) {
    if (--run_mem.users > 0) return;
    core_free(run_mem.p);
    run_mem.p = NULL;
    run_mem.n = 0;
}

#define ROUND64(n) (((n) + 63) & ~(size_t)63)

/* e's pointers into the run memory, grown to its need; -1: out of memory. */
static int run_memory(cpu_exe *e) {
    size_t need = ROUND64(e->pl.arena_bytes) + ROUND64(e->tile_bytes) + e->lib_bytes;
    if (need > run_mem.n) {
        core_free(run_mem.p); /* its bytes are dead between runs: no copy */
        run_mem.n = 0;
        if (!(run_mem.p = core_huge_alloc(need))) return -1;
        run_mem.n = need;
    }
    e->arena = run_mem.p;
    e->scratch = run_mem.p + ROUND64(e->pl.arena_bytes);
    e->lib_scratch = e->scratch + ROUND64(e->tile_bytes);
    return 0;
}

static void cpu_free(void *p) {
    cpu_exe *e = p;
    if (!e) return;
    lib_free(e);
    lib_free_set(e->lib_lo, e->nk);
    core_free(e->blk);
    cpu_coll_plan_free(&e->cp, e->nk);
    cpu_kernels_free(e->k, e->nk);
    cpu_plan_free(&e->pl);
    exec_graph_free(e->g);
    core_free(e);
    run_memory_drop();
}

/* Library primitives for the kernels that would otherwise run the
 * reference kernel; one scratch (the largest need) serves them all. blk:
 * the layouts (layout.c). 1: a conv with a blocked operand was declined
 * (the reference kernel reads plain NCHW only): lay out again, plain. */
static int lib_make(cpu_exe *e, const uint8_t *blk, cpu_dnnl ***out, size_t *sb) {
    cpu_dnnl **lib = *out = core_calloc((size_t)(e->nk ? e->nk : 1), sizeof *lib);
    if (!lib) return -1;
    *sb = 0;
    for (int j = 0; j < e->nk; j++) {
        if (e->k[j].kind != K_REF) continue;
        const gnode *y = &e->g->nodes[e->k[j].node];
        lib[j] = cpu_dnnl_new(e->g, y, blk, e->k[j].trans);
        if (!lib[j] && cpu_dnnl_covers(e->g, y)) {
            int any = blk[e->k[j].node];
            for (int i = 0; i < y->nin; i++) any |= blk[y->in[i]];
            if (any) return 1;
        }
        if (cpu_dnnl_scratch(lib[j]) > *sb) *sb = cpu_dnnl_scratch(lib[j]);
        if (cpu_nn_scratch(e->g, y) > *sb) *sb = cpu_nn_scratch(e->g, y);
    }
    return 0;
}

static int lib_compile(cpu_exe *e, const uint8_t *blk) {
    size_t sb;
    int rc = lib_make(e, blk, &e->lib, &sb);
    if (rc) return rc;
    e->scratch_bytes += sb;
    e->lib_bytes = sb;
    return 0;
}

/* The primitives for one thread fewer, made at the first run that wants
 * them; NULL (and that count is never tried again) if they cannot be. */
static cpu_dnnl **lib_lo(cpu_exe *e) {
#ifdef _OPENMP
    if (e->lib_lo) return e->lib_lo;
    size_t sb = 0;
    int prev = omp_get_max_threads(), had_error = err_code();
    omp_set_num_threads(e->tp.lo);
    int rc = lib_make(e, e->blk, &e->lib_lo, &sb);
    omp_set_num_threads(prev);
    if (rc == 0 && sb > e->lib_bytes) { /* a larger scratch (rare: the split sizes some scratchpads) */
        e->scratch_bytes += sb - e->lib_bytes;
        e->lib_bytes = sb;
    }
    if (rc == 0) return e->lib_lo;
    lib_free_set(e->lib_lo, e->nk);
    e->lib_lo = NULL;
    e->adapt = 0;
    if (!had_error) lt_clear_error(); /* out of memory here is not the run's failure: it runs on all threads */
#endif
    (void)e;
    return NULL;
}

/* Layouts, then the library primitives that depend on them. */
static int lay_out(cpu_exe *e) {
    uint8_t *blk = e->blk = core_calloc((size_t)(e->g->n ? e->g->n : 1), 1);
    int rc = blk && cpu_layouts(e->g, e->k, e->nk, blk) == 0 ? lib_compile(e, blk) : -1;
    if (rc == 1) { /* rare: oneDNN declined a geometry it was expected to take */
        lib_free(e);
        memset(blk, 0, (size_t)e->g->n);
        for (int j = 0; j < e->nk; j++) e->k[j].blocked = 0;
        rc = lib_compile(e, blk);
    }
    return rc;
}

/* Floating-point operations of y's multiply-adds (2 per multiply-add; bias
 * and elementwise work not counted), as FLOP counts of convolutional nets
 * are usually given: a conv and each of its two backward ops cost the
 * same, 2 * (output-side elements) * (weights per output channel). */
static double node_flops(const exec_graph *g, const gnode *y) {
    const gnode *a = y->nin > 0 ? &g->nodes[y->in[0]] : NULL, *b = y->nin > 1 ? &g->nodes[y->in[1]] : NULL;
    switch (y->op) {
    case LT_OP_CONV2D: return 2.0 * (double)y->numel * (double)b->numel / (double)b->shape[0]; /* x, w */
    case LT_OP_CONV2D_BWD_INPUT: return 2.0 * (double)a->numel * (double)b->numel / (double)b->shape[0]; /* g, w */
    case LT_OP_CONV2D_BWD_WEIGHT: return 2.0 * (double)a->numel * (double)y->numel / (double)y->shape[0]; /* g, x */
    case LT_OP_LINEAR: return 2.0 * (double)y->numel * (double)b->shape[1];                             /* x, w (O, K) */
    case LT_OP_MATMUL: return 2.0 * (double)y->numel * (double)a->shape[a->ndim - 1];
    default: return 0;
    }
}

/* A 2-D matmul, float32 or bfloat16, whose operands may be stored
 * transposed (trans: cpu_dnnl_matmul's), for when oneDNN declines one (out
 * of memory, a geometry): the reference's double sums, rounded once. */
static void matmul_2d_plain(const exec_graph *g, const gnode *y, void *const *in, int trans, void *c) {
    int64_t n = y->shape[0], m = y->shape[1], k = g->nodes[y->in[0]].shape[1];
    int bf16 = y->dtype == LT_BF16;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++)
                s += (double)ld_act(in[0], bf16, trans & 1 ? p * n + i : i * k + p) *
                     ld_act(in[1], bf16, trans & 2 ? j * k + p : p * m + j);
            st_act(c, bf16, i * m + j, (float)s);
        }
}

/* A kernel span's args: its node, and the bytes it reads and writes and its
 * multiply-adds x 2, so a timeline tells how far each kernel is from the
 * memory bandwidth or the FMA peak (bench/gpt_profile.py); "ref": 1 if it
 * fell back to the reference kernel (the slow spans to look at first). */
static void kernel_args(char *buf, size_t n, const exec_graph *g, const kernel *kn, const gnode *y, int ref) {
    exec_node_args(buf, n, g, y);
    double bytes = 0;
    for (int i = 0; i < kn->nread; i++) {
        const gnode *v = &g->nodes[kn->read[i]];
        bytes += (double)v->numel * (double)dtype_size((lt_dtype)v->dtype);
    }
    for (int i = 0; i < kn->nwrite; i++) {
        const gnode *v = &g->nodes[kn->write[i]];
        bytes += (double)v->numel * (double)dtype_size((lt_dtype)v->dtype);
    }
    size_t l = strlen(buf);
    if (l < n)
        snprintf(buf + l, n - l, ",\"bytes\":%.0f,\"flops\":%.0f%s", bytes, node_flops(g, y), ref ? ",\"ref\":1" : "");
}

static void *cpu_compile(const exec_graph *g0) {
    cpu_exe *e = core_calloc(1, sizeof *e);
    if (!e) return NULL;
    run_mem.users++; /* cpu_free drops it */
    if (!(e->g = exec_optimize(g0)) || cpu_fuse(e->g, &e->k, &e->nk) || cpu_plan(e->g, e->k, e->nk, &e->pl) ||
        cpu_coll_plan(e->g, e->k, e->nk, &e->cp)) {
        cpu_free(e);
        return NULL;
    }
    if (LT_UNLIKELY(g_config.dump_ir_dir != NULL)) exec_dump_compiled(e->g, "_optimized");
    size_t sb = 0;
    e->maxread = e->maxwrite = e->maxins = 1;
    for (int j = 0; j < e->nk; j++) {
        kernel *kn = &e->k[j];
        if (kn->nread > e->maxread) e->maxread = kn->nread;
        if (kn->nwrite > e->maxwrite) e->maxwrite = kn->nwrite;
        if (kn->kind == K_REF || kn->kind == K_MATMUL) e->flops += node_flops(e->g, &e->g->nodes[kn->node]);
        if (kn->prog) {
            if (kn->prog->nins > e->maxins) e->maxins = kn->prog->nins;
            size_t b = tile_scratch_bytes(kn->prog);
            if (b > sb) sb = b;
        }
    }
    e->scratch_stride = ROUND64(sb);
    e->scratch_bytes = e->tile_bytes = e->scratch_stride * (size_t)nthreads();
    if (lay_out(e)) {
        cpu_free(e);
        return NULL;
    }
    tpolicy_init(&e->tp, nthreads());
    /* A graph with collectives times its peers' waits too: it keeps all threads. */
    e->adapt = g_config.adapt_threads && e->tp.hi > 1 && e->cp.wait == NULL;
    e->run_lib = e->lib;
    return e;
}

/* Copies between a contiguous buffer and a strided window of another, in
 * elements of es bytes: gather (to_window 0) or scatter (to_window 1). */
static void strided_copy(char *contig, char *win, size_t es, int nd, const int64_t *shape, const int64_t *str,
                         int64_t offset, int64_t numel, int to_window) {
    if (numel == 0) return;
    if (nd == 0) {
        if (to_window) memcpy(win + offset * (int64_t)es, contig, es);
        else memcpy(contig, win + offset * (int64_t)es, es);
        return;
    }
    int last = nd - 1;
    int64_t idx[LT_MAX_DIMS] = {0}, off = offset, inner = shape[last], s = str[last];
    for (int64_t i = 0; i < numel; i += inner) {
        char *c = contig + i * (int64_t)es, *w = win + off * (int64_t)es;
        if (s == 1) {
            if (to_window) memcpy(w, c, (size_t)inner * es);
            else memcpy(c, w, (size_t)inner * es);
        } else if (es == 4) {
            uint32_t *cc = (uint32_t *)(void *)c, *ww = (uint32_t *)(void *)w;
            for (int64_t j = 0; j < inner; j++)
                if (to_window) ww[j * s] = cc[j];
                else cc[j] = ww[j * s];
        } else if (es == 8) {
            uint64_t *cc = (uint64_t *)(void *)c, *ww = (uint64_t *)(void *)w;
            for (int64_t j = 0; j < inner; j++)
                if (to_window) ww[j * s] = cc[j];
                else cc[j] = ww[j * s];
        } else if (es == 2) {
            uint16_t *cc = (uint16_t *)(void *)c, *ww = (uint16_t *)(void *)w;
            for (int64_t j = 0; j < inner; j++)
                if (to_window) ww[j * s] = cc[j];
                else cc[j] = ww[j * s];
        } else {
            for (int64_t j = 0; j < inner; j++)
                if (to_window) w[j * s] = c[j];
                else c[j] = w[j * s];
        }
        for (int d = last - 1; d >= 0; d--) {
            idx[d]++;
            off += str[d];
            if (idx[d] < shape[d]) break;
            off -= str[d] * idx[d];
            idx[d] = 0;
        }
    }
}

static void resolve_scalars(const gnode *y, const double *scalars, double *sc) {
    for (int i = 0; i < IR_MAX_SCALARS; i++) sc[i] = y->sc_slot[i] >= 0 ? scalars[y->sc_slot[i]] : y->sc[i];
}

static int ref_ran; /* run_kernel's span says whether its kernel fell back (one executing thread) */

static void run_ref(const exec_graph *g, const gnode *y, void *const *ptr, const double *scalars, void *out,
                    ref_arg *args) {
    ref_ran = 1;
    for (int i = 0; i < y->nin; i++) {
        const gnode *x = &g->nodes[y->in[i]];
        args[i] = (ref_arg){ptr[i], (lt_dtype)x->dtype, x->ndim, x->shape, x->numel};
    }
    double sc[IR_MAX_SCALARS];
    resolve_scalars(y, scalars, sc);
    ref_run_node(y, args, sc, out);
    prof_add(M_FallbackOps, 1);
}

static void run_kernel(cpu_exe *e, const kernel *kn, char *const *sp, const double *scalars, void **rp, void **wp,
                       double *scal, ref_arg *args) {
    const exec_graph *g = e->g;
    const int32_t *so = e->pl.slot_of;
    const int64_t *bo = e->pl.byte_off;
    for (int i = 0; i < kn->nread; i++) rp[i] = sp[so[kn->read[i]]] + bo[kn->read[i]];
    for (int i = 0; i < kn->nwrite; i++) wp[i] = sp[so[kn->write[i]]];
    const gnode *y = &g->nodes[kn->node];
    if (kn->kind == K_COLL) { /* its first half; a bucket's members may be empty or not */
        cpu_coll_start(g, kn, &e->cp, (int)(kn - e->k), rp, wp);
        return;
    }
    if (y->numel == 0) return; /* every output of a kernel has its node's shape: nothing to write */
    size_t es = dtype_size((lt_dtype)y->dtype);
    uint64_t kt0 = prof_kernel_begin(); /* LT_TRACE_KERNELS: one span per kernel, named by its last op */
    ref_ran = 0;
    switch ((enum kernel_kind)kn->kind) {
    case K_FUSED: {
        const tprog *p = kn->prog;
        for (int j = 0; j < p->nins; j++) resolve_scalars(&g->nodes[p->ins[j].node], scalars, &scal[2 * j]);
        tile_run(p, (const void *const *)rp, wp, scal, e->scratch, e->scratch_stride);
        if (kn->nmembers > 1) prof_add(M_FusedKernels, 1);
        break;
    }
    case K_MATMUL:
        if (cpu_dnnl_matmul(y, &g->nodes[y->in[0]], &g->nodes[y->in[1]], rp[0], rp[1], wp[0], kn->trans) == 0) break;
        if (kn->trans) matmul_2d_plain(g, y, rp, kn->trans, wp[0]); /* the reference reads no transposed operand */
        else run_ref(g, y, rp, scalars, wp[0], args);
        break;
    case K_VIEW: break; /* shares its operand's bytes */
    case K_COLL: break; /* started above */
    case K_STRIDED:
        strided_copy(wp[0], rp[0], es, y->ndim, y->shape, y->ia, y->ia[y->ndim], y->numel, 0);
        break;
    case K_SCATTER: {
        const gnode *src = &g->nodes[y->in[1]];
        if (wp[0] != rp[0]) memcpy(wp[0], rp[0], (size_t)y->numel * es); /* the base survives: copy it */
        strided_copy(rp[1], wp[0], es, src->ndim, src->shape, y->ia, y->ia[src->ndim], src->numel, 1);
        break;
    }
    case K_REDUCE: { /* reduce.c, softmax.c; the reference only if out of memory */
        double sc[IR_MAX_SCALARS];
        resolve_scalars(y, scalars, sc);
        if (cpu_reduce_run(y, &g->nodes[y->in[0]], rp[0], wp[0], sc) == 0) break;
        run_ref(g, y, rp, scalars, wp[0], args);
        break;
    }
    case K_BN_BWD: { /* one pass if both nodes got the same eps, as autograd gives them */
        double sc[IR_MAX_SCALARS], scp[IR_MAX_SCALARS];
        const gnode *p = &g->nodes[kn->write[1]];
        resolve_scalars(y, scalars, sc);
        resolve_scalars(p, scalars, scp);
        bn_grad gr = {.a = rp[0]};
        if (kn->xmask) { /* the ReLU prologue, its mask from x (fuse.c): read[0] is x, then a [, the bias] */
            const gnode *f = &g->nodes[kn->xmask - 1]; /* BN_APPLY (x, stats, [w], [bias]) */
            double scf[IR_MAX_SCALARS];
            resolve_scalars(f, scalars, scf);
            gr = (bn_grad){.a = rp[y->nin], .gm = kn->nwrite > 2 ? wp[2] : NULL,
                           .xm = {1, f->ia[1] ? rp[3] : NULL, f->ia[2] ? rp[y->nin + 1] : NULL, scf[0]}};
        } else if (kn->nread > y->nin) /* the ReLU prologue (fuse.c): read[0] is out, then a [, b] */
            gr = (bn_grad){rp[y->nin], kn->nread > y->nin + 1 ? rp[y->nin + 1] : NULL, rp[0],
                           kn->nwrite > 2 ? wp[2] : NULL, {0}};
        if (sc[0] == scp[0]) {
            cpu_bn_bwd_pair(g, y, rp, gr, sc[0], wp[0], wp[1], kn->blocked);
        } else {
            cpu_bn_bwd_pair(g, y, rp, gr, sc[0], wp[0], NULL, kn->blocked);
            if (gr.gm) gr = (bn_grad){.a = gr.gm}; /* written by the first */
            cpu_bn_bwd_pair(g, p, rp, gr, scp[0], NULL, wp[1], kn->blocked);
        }
        break;
    }
    case K_LN_BWD: { /* layer norm's two backward ops in one pass if they got the same eps (fuse.c) */
        double sc[IR_MAX_SCALARS], scp[IR_MAX_SCALARS];
        const gnode *p = &g->nodes[kn->write[1]];
        resolve_scalars(y, scalars, sc);
        resolve_scalars(p, scalars, scp);
        if (sc[0] == scp[0] ? cpu_ln_bwd_pair(g, y, rp, sc[0], wp[0], wp[1], kn->casts) == 0
                            : cpu_transformer_run(g, y, rp, sc, wp[0], kn->casts) == 0 &&
                                  cpu_transformer_run(g, p, rp, scp, wp[1], kn->casts & 1) == 0)
            break;
        if (kn->casts) { /* out of memory; the reference cannot read a folded cast's value */
            err_kernel("%s: out of memory for the kernel's buffers", g_ops[y->op].name);
            break;
        }
        run_ref(g, y, rp, scalars, wp[0], args);
        run_ref(g, p, rp, scalars, wp[1], args); /* its operands g, x are y's first two */
        break;
    }
    case K_BN_ACT: { /* batch norm, then relu(bn [+ r]) (fuse.c) */
        double sc[IR_MAX_SCALARS];
        resolve_scalars(y, scalars, sc);
        cpu_bn_act(g, y, rp, sc[0], kn->nread > y->nin ? rp[kn->nread - 1] : NULL, wp[0], kn->blocked);
        break;
    }
    case K_REF: {
        const cpu_dnnl *lib = e->run_lib[kn - e->k];
        if (lib && cpu_dnnl_run(lib, rp, wp[0], e->lib_scratch) == 0) break;
        if (kn->trans) { /* a bfloat16 matmul reading a transposed operand (fuse.c) */
            matmul_2d_plain(g, y, rp, kn->trans, wp[0]);
            break;
        }
        double sc[IR_MAX_SCALARS];
        resolve_scalars(y, scalars, sc);
        if (cpu_nn_run(g, y, rp, sc, wp[0], kn->blocked, kn->views, kn->casts,
                       (cpu_scratch){e->lib_scratch, e->lib_bytes}) == 0)
            break;
        if (kn->views || kn->casts) { /* the reference reads neither a view's base nor a folded cast's value:
                                         only out of memory gets here */
            err_kernel("%s: out of memory for the kernel's buffers", g_ops[y->op].name);
            break;
        }
        run_ref(g, y, rp, scalars, wp[0], args);
        break;
    }
    }
    char span_args[192];
    if (LT_UNLIKELY(g_prof_kernels)) kernel_args(span_args, sizeof span_args, g, kn, y, ref_ran);
    prof_kernel_end(kn->kind == K_BN_ACT                          ? "BN_APPLY_RELU"
                    : kn->kind == K_BN_BWD && kn->nread > y->nin ? "BN_BWD_RELU"
                                                                 : g_ops[y->op].name,
                    kt0, span_args);
}

/* Completes the collectives whose results kernel j (e->nk: the end) reads first. */
static void wait_before(cpu_exe *e, int j, char *const *sp) {
    for (int32_t w = e->cp.wait_start[j]; w < e->cp.wait_start[j + 1]; w++) {
        int32_t c = e->cp.wait[w];
        cpu_coll_wait(e->g, &e->k[c], &e->cp, c, sp, e->pl.slot_of);
    }
}

static int guard_ok(const char *p) {
    for (int i = 0; i < GUARD; i++)
        if ((unsigned char)p[i] != GUARD_BYTE) return 0;
    return 1;
}

/* Arena slots share bytes over time (plan.c packs them by lifetime), so a
 * temp slot's guard is written just before the kernel that defines it and
 * checked after every kernel of its life, while no other slot may use it. */
static void arena_guards(const plan *pl, int j, char *const *sp, const uint8_t *donated, int set) {
    for (int s = 0; s < pl->nslots; s++) {
        const slot *sl = &pl->slots[s];
        if (sl->kind != SLOT_TEMP || donated[s] || sl->def > j || sl->last < j) continue;
        if (set && sl->def == j) memset(sp[s] + sl->cap, GUARD_BYTE, GUARD);
        if (!set && !guard_ok(sp[s] + sl->cap)) core_panic(__FILE__, __LINE__, "cpu backend wrote past the end of a buffer");
    }
}

static int cpu_run(void *pe, lt_buffer *const *inputs, const uint8_t *donatable, const double *scalars,
                   lt_buffer **outputs) {
    cpu_exe *e = pe;
    const exec_graph *g = e->g;
    plan *pl = &e->pl;
    if (ref_scratch_reserve(g)) return -1; /* for the kernels that fall back to the reference backend */
    size_t ns = (size_t)(pl->nslots ? pl->nslots : 1);
    char **sp = core_malloc(ns * sizeof *sp);
    lt_buffer **sb = core_calloc(ns, sizeof *sb);
    void **rp = core_malloc((size_t)(e->maxread + e->maxwrite) * sizeof *rp);
    double *scal = core_malloc((size_t)e->maxins * 2 * sizeof *scal);
    ref_arg *args = core_malloc((size_t)e->maxread * sizeof *args);
    uint8_t *used = core_malloc((size_t)g->nparams + 1), *donated = core_malloc(ns);
    int rc = -1;
    if (!sp || !sb || !rp || !scal || !args || !used || !donated) goto done;
    int nt = force_fewer && e->tp.hi > 1 ? e->tp.lo : e->adapt ? tpolicy_threads(&e->tp) : 0, prev = 0;
    e->run_lib = nt && nt != e->tp.hi ? lib_lo(e) : e->lib;
    if (!e->run_lib) { /* no primitives for fewer threads: all of them, from now on */
        e->run_lib = e->lib;
        nt = 0;
    }
    if (run_memory(e)) goto done; /* after lib_lo: its scratch may be larger */
    int aliases = 0;
    if (donatable) memcpy(used, donatable, (size_t)g->nparams);
    for (int s = 0; s < pl->nslots; s++) {
        const slot *sl = &pl->slots[s];
        int donor = -1;
        for (int d = 0; donatable && d < sl->ndonors && donor < 0; d++)
            if (used[sl->donors[d]]) donor = sl->donors[d];
        if (donor >= 0) used[donor] = 0; /* one slot per donated buffer */
        donated[s] = donor >= 0;
        int donate = donor >= 0;
        if (sl->kind == SLOT_PARAM) {
            sp[s] = inputs[sl->param]->data;
        } else if (sl->kind == SLOT_TEMP) {
            sp[s] = donate ? inputs[donor]->data : e->arena + sl->offset; /* guarded in arena_guards */
        } else if (donate) {
            sb[s] = inputs[donor];
            buffer_retain(sb[s]);
            sp[s] = sb[s]->data;
            aliases++;
        } else {
            if (!(sb[s] = buffer_new(sl->nbytes + (debug_guards ? GUARD : 0)))) goto done;
            sp[s] = sb[s]->data;
            if (debug_guards) {
                sb[s]->nbytes = sl->nbytes;
                memset(sp[s] + sl->nbytes, GUARD_BYTE, GUARD);
            }
        }
    }
    /* The step's footprint: its inputs, its new outputs, the arena and the
     * scratch (buffers outside the graph count through their own gauge). */
    size_t step_bytes = pl->arena_bytes + e->scratch_bytes;
    for (int i = 0; i < g->nparams; i++) step_bytes += inputs[i]->nbytes;
    for (int s = 0; s < pl->nslots; s++)
        if (sb[s] && !donated[s]) step_bytes += pl->slots[s].nbytes;
    prof_gauge_max(M_PeakBytes, (double)step_bytes);
#ifdef _OPENMP
    if (nt) {
        prev = omp_get_max_threads();
        omp_set_num_threads(nt);
        if (nt != e->tp.hi) prof_add(M_FewerThreadRuns, 1);
    }
#endif
    uint64_t t_run = prof_now_ns();
    for (int j = 0; j < e->nk; j++) {
        if (LT_UNLIKELY(e->cp.wait != NULL)) wait_before(e, j, sp);
        if (LT_UNLIKELY(debug_guards)) arena_guards(pl, j, sp, donated, 1);
        run_kernel(e, &e->k[j], sp, scalars, rp, rp + e->maxread, scal, args);
        if (LT_UNLIKELY(debug_guards)) arena_guards(pl, j, sp, donated, 0);
        if (LT_UNLIKELY(e->cp.wait != NULL) && dist_pending()) dist_progress(); /* MPI moves only inside MPI calls */
        /* Bad index data: stop (nothing was donated: sync.c), unless the
         * graph has collectives: the other ranks expect them, so they run. */
        if (LT_UNLIKELY(err_kernel_pending()) && e->cp.wait == NULL) break;
    }
    if (LT_UNLIKELY(e->cp.wait != NULL)) wait_before(e, e->nk, sp);
#ifdef _OPENMP
    if (nt) {
        omp_set_num_threads(prev);
        if (!force_fewer) tpolicy_record(&e->tp, (double)(prof_now_ns() - t_run) * 1e-9, cpu_contended);
    }
#endif
    (void)prev, (void)t_run;
    if (LT_UNLIKELY(err_kernel_pending())) {
        err_kernel_take();
        goto done;
    }
    if (debug_guards)
        for (int s = 0; s < pl->nslots; s++) {
            const slot *sl = &pl->slots[s];
            if (sl->kind == SLOT_OUT && !donated[s] && !guard_ok(sp[s] + sl->nbytes))
                core_panic(__FILE__, __LINE__, "cpu backend wrote past the end of a buffer");
        }
    for (int r = 0; r < g->nroots; r++) {
        int32_t s = pl->slot_of[g->roots[r]];
        outputs[r] = pl->slots[s].kind == SLOT_PARAM ? inputs[pl->slots[s].param] : sb[s];
        buffer_retain(outputs[r]);
    }
    prof_add(M_InputOutputAliasCount, aliases);
    prof_add(M_ExecutedFlops, e->flops);
    rc = 0;
done:
    if (sb)
        for (int s = 0; s < pl->nslots; s++) buffer_release(sb[s]);
    core_free(sp);
    core_free(sb);
    core_free(rp);
    core_free(scal);
    core_free(args);
    core_free(used);
    core_free(donated);
    return rc;
}

const backend g_backend_cpu = {"cpu", cpu_supports, cpu_compile, cpu_run, cpu_free};
