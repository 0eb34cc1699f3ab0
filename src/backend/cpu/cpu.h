/* The fast CPU backend (DESIGN 6): graph passes, fusion of elementwise
 * groups into tile programs, a memory plan with buffer reuse and donation,
 * oneDNN for library ops, and the reference kernels for everything else. */
#ifndef LT_CPU_H
#define LT_CPU_H

#include "../../exec/exec.h"

/* Elements per tile: every register of a program (an AdamW group has about
 * 20) stays in L1. Measured with bench_cpu (2 threads, ms, median of 3-4
 * runs) at 512 / 128 / 64: AdamW 14.4 / 9.4 / 12.0, a float group 4.9 / 4.7
 * / 5.7, a group with sigmoid (double math) 14.8 / 12.0 / 12.8; sizing each
 * program's tiles to its register count did no better than 128. */
#define TILE 128
#define TILE_MAX_REGS 64

/* Element i of a float32 or (bf16) bfloat16 array; and v stored there
 * (rounded to nearest even): the kernels that take either dtype. */
static inline float ld_act(const void *p, int bf16, int64_t i) {
    return bf16 ? bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}
static inline void st_act(void *p, int bf16, int64_t i, float v) {
    if (bf16) ((uint16_t *)p)[i] = bf16_from_f32(v);
    else ((float *)p)[i] = v;
}

/* ---- tile programs (tile.c) ---- */
enum load_mode { LOAD_SAME, LOAD_SCALAR, LOAD_GENERAL };

typedef struct tload {
    int32_t value;  /* node index of the group input */
    uint8_t dtype;  /* its dtype; converted to the program's type on load */
    uint8_t mode;
    int64_t str[LT_MAX_DIMS]; /* GENERAL: element strides aligned to the group shape, 0 = broadcast */
} tload;

typedef struct tins {
    uint16_t op;    /* an elementwise lt_op or FILL */
    uint8_t dtype;  /* the node's dtype (BOOL results are kept as 0/1) */
    int8_t dst, src[3];
    uint8_t round;  /* bfloat16 read by a later instruction: rounded in its register (a store rounds anyway) */
    int32_t node;   /* for its scalars */
} tins;

typedef struct tstore {
    int32_t value;
    int8_t reg;
    uint8_t dtype;
} tstore;

typedef struct tprog {
    uint8_t rtype; /* LT_F32 or LT_F64: the type every register holds */
    int ndim;
    int64_t shape[LT_MAX_DIMS];
    int64_t numel;
    int nload, nins, nstore, nregs; /* registers 0..nload-1 are the loads */
    tload *loads;
    tins *ins;
    tstore *stores;
} tprog;

/* Can a node be a member of a tile program, and in which type? 0 if not. */
int tile_member_type(const exec_graph *g, const gnode *y);
/* Runs p: in[nload] input pointers, out[nstore] output pointers, scal[2 *
 * nins] resolved scalars; scratch holds nthreads * tile_scratch_bytes(p). */
void tile_run(const tprog *p, const void *const *in, void *const *out, const double *scal, char *scratch,
              size_t scratch_stride);
size_t tile_scratch_bytes(const tprog *p);

/* ---- reductions and softmax (reduce.c, softmax.c) ---- */
/* Does y (a reduction, arg-reduction or softmax of x) have a fast kernel? */
int cpu_reduce_ok(const gnode *y, const gnode *x);
int cpu_softmax_ok(const gnode *y, const gnode *x);
/* Runs it: 0 if done, -1 if the caller must fall back (no memory). */
int cpu_reduce_run(const gnode *y, const gnode *x, const void *in, void *out, const double *sc);
int cpu_softmax_run(const gnode *y, const gnode *x, const void *in, void *out);
/* CUMSUM of float32 (cpu_nn_run's ops): 0, done. */
int cpu_cumsum_run(const gnode *y, const gnode *x, const float *in, float *out);
/* FLIP of float32: 0, done. */
int cpu_flip_run(const gnode *y, const float *in, float *out);

/* ---- kernels and fusion (fuse.c) ---- */
/* K_BN_BWD: a batch-statistics BN_BWD_INPUT (node) and the BN_BWD_PARAMS
 * of the same g, x and statistics in one kernel: both need the same
 * per-channel sums, read off g and x once (write[0] dx, write[1] sums).
 * With a ReLU prologue (nread > the node's nin: fuse.c) g is the group
 * where(out <= 0, 0, a [+ b]) that ReLU's backward (and the gradient add
 * before it) made: read[0] is out instead of g, a and b follow the node's
 * operands, and write[2], if any, receives g for its other readers. */
/* K_COLL: a collective, or a bucket of them (nmembers > 1: read[i] ->
 * write[i] for each member), run in two halves (coll.c).
 * K_BN_ACT: a BN_APPLY (node) with its consumer relu(bn) or
 * relu(bn + r) in one pass (reads: the BN_APPLY's operands, then r if
 * any; write[0] the ReLU's output). */
enum kernel_kind { K_FUSED, K_REF, K_MATMUL, K_VIEW, K_STRIDED, K_SCATTER, K_REDUCE, K_BN_BWD, K_COLL, K_BN_ACT, K_LN_BWD };

typedef struct kernel {
    uint8_t kind;
    int32_t node;  /* the node (not K_FUSED) */
    tprog *prog;   /* K_FUSED */
    int nmembers;  /* K_FUSED: nodes in the group */
    int nread;
    int32_t *read; /* values read (K_FUSED: the loads, in order) */
    int nwrite;
    int32_t *write; /* values written (K_FUSED: the stores, in order) */
    uint8_t *inplace_ok; /* per read: may an output share its memory? */
    uint8_t blocked; /* batch norm, max pooling: its activations are channel-blocked (layout.c) */
    int32_t xmask;   /* K_BN_BWD: 1 + the BN_APPLY whose ReLU mask it recomputes from x (fuse.c), else 0 */
    uint8_t trans;   /* K_MATMUL, a bfloat16 MATMUL: bit i, read[i] is the matrix operand i transposes (fuse.c) */
    uint8_t views;   /* K_REF attention: bit i set, read[i] is the base that operand i (an AS_STRIDED) views */
    uint8_t casts;   /* K_REF layer norm, K_LN_BWD: bit 0, read[0] is the bfloat16 value whose float32 CAST operand 0 is;
                        bit 7, write[0] is the bfloat16 CAST of the node's output (fuse.c, fuse_ln_casts) */
} kernel;

/* Groups the optimized graph's nodes into kernels in execution order. */
int cpu_fuse(const exec_graph *g, kernel **out, int *nk);
void cpu_kernels_free(kernel *k, int nk);

/* ---- collectives (coll.c) ---- */
/* Merges consecutive compatible collective kernels into buckets of at most
 * cap bytes (0: none), each placed where its last member was. */
int cpu_bucket_collectives(const exec_graph *g, kernel *ks, int *nk, size_t cap);
/* Per executable: where each collective is waited for, its staging buffer
 * (buckets), its outstanding request during a run. All NULL: none. */
typedef struct coll_plan {
    int32_t *wait_start; /* waits before kernel j: wait[wait_start[j] .. wait_start[j + 1]); j = nk: at the end */
    int32_t *wait;       /* kernel indices of K_COLL kernels */
    char **stage;        /* per kernel: a bucket's buffer, NULL otherwise */
    int *req;            /* per kernel: dist request in flight, -1 */
} coll_plan;
int cpu_coll_plan(const exec_graph *g, const kernel *k, int nk, coll_plan *cp);
void cpu_coll_plan_free(coll_plan *cp, int nk);
/* rp: the kernel's operands; wp: its results (in place, no bucket). */
void cpu_coll_start(const exec_graph *g, const kernel *kn, coll_plan *cp, int j, void *const *rp, void *const *wp);
/* Completes kernel j's collective and writes its results (sp[slot_of[v]]). */
void cpu_coll_wait(const exec_graph *g, const kernel *kn, coll_plan *cp, int j, char *const *sp,
                   const int32_t *slot_of);

/* ---- layouts (layout.c) ---- */
/* blk[v] = 1 where value v is kept channel-blocked (nChw16c) rather than
 * plain NCHW; sets kernel.blocked. -1 on OOM. */
int cpu_layouts(const exec_graph *g, kernel *k, int nk, uint8_t *blk);

/* ---- memory plan (plan.c) ---- */
enum slot_kind { SLOT_TEMP, SLOT_OUT, SLOT_PARAM };

#define GUARD 64 /* bytes after each temp slot for the debug guard (cpu.c); the plan leaves room */
typedef struct slot {
    uint8_t kind;
    int32_t param;  /* SLOT_PARAM: its input; else -1 */
    int8_t ndonors; /* params whose buffer this slot may take, the first donatable one at run time */
    int32_t donors[4];
    size_t nbytes;
    size_t offset;  /* SLOT_TEMP: in the arena */
    size_t cap;     /* SLOT_TEMP: bytes of its arena block (shared over time); the guard follows */
    int32_t def, last; /* kernel range during which it is live */
} slot;

typedef struct plan {
    int nslots;
    slot *slots;
    int32_t *slot_of; /* per node; -1: never materialized (inside a group) */
    int64_t *byte_off; /* per node: where in its slot it starts (a K_VIEW at an offset; else 0) */
    size_t arena_bytes;
} plan;

int cpu_plan(const exec_graph *g, const kernel *k, int nk, plan *p);
void cpu_plan_free(plan *p);

/* ---- thread count on a busy machine (threads.c) ---- */
/* Per executable: all threads (hi) or one fewer (lo), chosen by the times
 * of its own runs (threads.c says how). tpolicy_threads: the count for the
 * next run; tpolicy_record: that run took `seconds`; contended (may be
 * NULL) is asked, only when a probe is due, whether other processes want
 * the cores (cpu_contended reads /proc/stat). */
typedef struct tpolicy {
    int hi, lo, use;
    int probing;         /* the next run tries the other count */
    int runs, since;     /* runs recorded; runs since the last probe */
    int backoff;         /* runs before the next probe */
    double recent[2][3]; /* the last three times at hi [0] and lo [1] (a ring) */
    int nrecent[2];
    double best[2]; /* the lowest median of three seen; -1: none yet */
} tpolicy;
void tpolicy_init(tpolicy *p, int max_threads);
int tpolicy_threads(const tpolicy *p);
void tpolicy_record(tpolicy *p, double seconds, int (*contended)(int threads));
int cpu_contended(int threads);

/* ---- library kernels (dnnl.c): 0 if done, -1 if the caller must fall back ---- */
/* trans: bit 0, A holds a's matrix transposed ((k, n) row-major); bit 1, B
 * holds b's ((m, k)); only for 2-D operands. */
int cpu_dnnl_matmul(const gnode *y, const gnode *a, const gnode *b, const void *A, const void *B, void *C, int trans);
/* Does cpu_dnnl_matmul run (oneDNN was built in)? */
int cpu_dnnl_has_sgemm(void);
/* A library op (conv2d and its backward ops, avg pooling and its
 * backward, linear; bfloat16 matmul) prepared at compile time: its oneDNN primitive and the
 * reorders to and from our plain layouts. NULL: not covered (dtype, op,
 * geometry, or no oneDNN). Run reads in[] (the node's operands; a bfloat16
 * matmul's, the matrices they transpose where trans, the kernel's bits, says
 * so), writes out, and uses cpu_dnnl_scratch(d) bytes of scratch for blocked
 * copies. */
typedef struct cpu_dnnl cpu_dnnl;
cpu_dnnl *cpu_dnnl_new(const exec_graph *g, const gnode *y, const uint8_t *blk, int trans);
/* Will cpu_dnnl_new make a conv primitive for y (oneDNN present, float32)?
 * blk[v]: value v is channel-blocked (layout.c); the conv then reads or
 * writes it as nChw16c. */
int cpu_dnnl_covers(const exec_graph *g, const gnode *y);
size_t cpu_dnnl_scratch(const cpu_dnnl *d);
int cpu_dnnl_run(const cpu_dnnl *d, void *const *in, void *out, char *scratch);
void cpu_dnnl_free(cpu_dnnl *d);

/* ---- fast C kernels for NN ops oneDNN does not cover as our nodes split
 * them (nn_fast.c): max-pool backward, adaptive average pooling, the batch
 * norm ops. sc: the node's resolved scalars. 0 if done, -1: fall back. */
typedef struct cpu_scratch {
    char *p; /* 64-byte aligned */
    size_t n;
} cpu_scratch;
int cpu_nn_run(const exec_graph *g, const gnode *y, void *const *in, const double *sc, void *out, int blocked,
               uint8_t views, uint8_t casts, cpu_scratch scratch);
/* The scratch bytes cpu_nn_run wants for y with this many threads (the
 * executable's library scratch holds the largest). */
size_t cpu_nn_scratch(const exec_graph *g, const gnode *y);
/* The transformer ops (transformer.c): layer norm and its backward ops
 * (cpu_ln_ok's dtypes), GRAD_NORM (float32). */
int cpu_transformer_run(const exec_graph *g, const gnode *y, void *const *in, const double *sc, void *out,
                        uint8_t casts);
/* LN_BWD_INPUT y and its LN_BWD_PARAMS twin (the same g, x, nnorm and
 * eps; fuse.c pairs them into a K_LN_BWD) in one pass over g and x: dx
 * into dx, (2, inner) into dwb; the same values as the two kernels. -1:
 * out of memory (nothing written). */
int cpu_ln_bwd_pair(const exec_graph *g, const gnode *y, void *const *in, double eps, void *dx, float *dwb,
                    uint8_t casts);
/* Does layer-norm node y (LAYER_NORM, LN_BWD_INPUT, LN_BWD_PARAMS) run on
 * the kernels of transformer.c? Its activations (x, and g for the backward
 * ops; the output of x's shape) all float32 or all bfloat16, the
 * parameters and LN_BWD_PARAMS's sums float32. */
int cpu_ln_ok(const exec_graph *g, const gnode *y);
/* ATTENTION and ATTENTION_BWD (attention.c), float32 or bfloat16: tiled,
 * no T x T buffer; -1 for nodes it does not take (the reference runs). */
int cpu_attention_run(const exec_graph *g, const gnode *y, void *const *in, const double *sc, void *out,
                      uint8_t views, cpu_scratch scratch);
/* Does attention.c take node y: an ATTENTION or ATTENTION_BWD whose
 * operands and output are all float32 or all bfloat16 (the api makes them
 * one dtype), head dim at most 128? */
int cpu_attention_ok(const exec_graph *g, const gnode *y);
/* Can attention node y read operand i in place through its view (an
 * AS_STRIDED whose last dim is contiguous, of a node the kernel takes)?
 * fuse.c then points the kernel at the view's base (kernel.views). */
int cpu_attention_view_ok(const exec_graph *g, const gnode *y, int i);
size_t cpu_attention_scratch(const exec_graph *g, const gnode *y);
/* CROSS_ENTROPY and CROSS_ENTROPY_BWD (loss.c): float32 logits, int64
 * targets; -1 for other dtypes (the reference runs). */
int cpu_cross_entropy_run(const exec_graph *g, const gnode *y, void *const *in, const double *sc, void *out);
/* INDEX_ADD (index_add.c): float32 base and src, int64 or int32 indices;
 * -1 for other dtypes or out of memory (the reference runs). */
int cpu_index_add_run(const exec_graph *g, const gnode *y, void *const *in, void *out);
/* AS_STRIDED_BACKWARD (strided_grad.c), float32 or bfloat16 g (gn) into
 * out (y's shape and dtype) over zeros or base (NULL: zeros; out itself:
 * in place): 0 if done, -1 if the window overlaps itself (the reference
 * runs). */
int cpu_as_strided_backward(const gnode *y, const gnode *gn, const void *g, const void *base, void *out);
/* Layer norm's moments of `rows` rows of n floats at x (ln_moments.c): the
 * mean and biased variance of each, bit for bit the reference's
 * (ref_row_moments, PyTorch's order). Runs CPU_LN_ROWS rows at a time. */
#define CPU_LN_ROWS 4
void cpu_ln_moments(const float *x, int64_t rows, int64_t n, float *mean, float *var);
/* Does batch-norm node y run on the kernels here (plain or blocked, alone
 * or fused)? Its activations (the first one or two operands and an output
 * of their shape) all float32 or all bfloat16 (autocast's mixed batch
 * norm), everything else float32. */
int cpu_bn_ok(const exec_graph *g, const gnode *y);
/* Does y run on the pooling kernels here (max pooling: plain in
 * nn_fast.c, blocked in pool_blocked.c; adaptive average pooling: plain,
 * and blocked when global, in nn_fast.c)? A MAX_POOL2D,
 * ADAPTIVE_AVG_POOL2D or backward with every operand and the output
 * float32, or all bfloat16. */
int cpu_pool_ok(const exec_graph *g, const gnode *y);
/* The two fused batch-norm kernels, on float32 or bfloat16 activations.
 * K_BN_ACT: y the BN_APPLY node, res the residual (of x's dtype) or NULL;
 * out = relu(bn + res). */
void cpu_bn_act(const exec_graph *g, const gnode *y, void *const *in, double eps, const void *res, void *out,
                int blocked);
/* Batch norm's upstream gradient g, of x's shape, layout and dtype:
 * out NULL: g = a; else g = where(out <= 0, 0, a [+ b]) (b may be NULL),
 * computed where it is read, as ReLU's backward (PyTorch's
 * threshold_backward: exactly 0 where out <= 0, even for an inf or NaN a)
 * after the gradient add (rounded to the activation type); gm, if not
 * NULL, receives g (the statistics pass writes it, the dx pass reads it).
 * xm.on (out and b NULL): out is relu(x normalized) of this batch norm's
 * forward (its statistics, xm.w, xm.bias and xm.eps), recomputed from x,
 * which the backward reads anyway, by the forward's own float operations
 * (the same bits, so the same mask) instead of read from memory. */
typedef struct bn_xmask {
    int on;
    const float *w, *bias; /* either may be NULL */
    double eps;
} bn_xmask;
typedef struct bn_grad {
    const void *a, *b, *out;
    void *gm;
    bn_xmask xm;
} bn_grad;
/* K_BN_BWD: y the BN_BWD_INPUT node (in[0], its g, unread: gr has it);
 * dx and the (2, C) sums. */
void cpu_bn_bwd_pair(const exec_graph *g, const gnode *y, void *const *in, bn_grad gr, double eps, void *dx,
                     void *sums, int blocked);

/* Batch norm on channel-blocked x (bn_blocked.c): x is (N, C, inner), C a
 * multiple of 16, its activations (x, g, res, out, dx) float32 or, if
 * bf16, bfloat16. m, v: the statistics (mean, variance); w, bias may be
 * NULL; dx or sums may be NULL (not wanted). */
typedef struct bn_geom {
    int64_t N, C, inner;
    int bf16;
} bn_geom;
void bn_blk_stats(bn_geom b, const void *x, float *out);
/* act: out = relu(x normalized + res) (res may be NULL); else the normalized x. */
void bn_blk_apply(bn_geom b, const void *x, const float *m, const float *v, const float *w, const float *bias,
                  double eps, const void *res, int act, void *out);
void bn_blk_bwd(bn_geom b, bn_grad gr, const void *x, const float *m, const float *v, const float *w, int batch,
                double eps, void *dx, float *sums);

/* Max pooling on channel-blocked (N, C, H, W) values, C a multiple of 16
 * (pool_blocked.c), float32 or (bf16) bfloat16 activations: y (N, C, oH,
 * oW) from x, or dx from g (the shape of y) and x. ia [kH, kW, sH, sW, pH,
 * pW]. The backward returns -1 when out of memory (bfloat16 sums in float
 * scratch), else 0. */
void pool_blk_max(const int64_t *xs, const int64_t *os, const int64_t *ia, int bf16, const void *x, void *y);
int pool_blk_max_bwd(const int64_t *xs, const int64_t *os, const int64_t *ia, int bf16, const void *g, const void *x,
                     void *dx);

/* Debugging aid for the tests: 64 guard bytes after every buffer the cpu
 * backend allocates, checked after each run. */
void cpu_set_debug_guards(int on);
/* Tests: every run with one thread fewer (threads.c's lo), 0 lifts it. */
void cpu_force_fewer_threads(int on);

#endif
