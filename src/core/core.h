/* core: errors, the allocation hook, the arena, hashing, dtypes, shapes and
 * the environment configuration. Everything above depends on this; it
 * depends on nothing but the public header's types. */
#ifndef LT_CORE_H
#define LT_CORE_H

#include "lazytensor.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LT_LIKELY(x) __builtin_expect(!!(x), 1)
#define LT_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Internal invariant: aborts with file and line. User input never reaches it. */
#define LT_ASSERT(c)                                                            \
    do {                                                                        \
        if (LT_UNLIKELY(!(c))) core_panic(__FILE__, __LINE__, #c);              \
    } while (0)
_Noreturn void core_panic(const char *file, int line, const char *what);

/* ---- errors (error.c) ---- */
/* Sets the thread-local error unless one is already set (the first error
 * wins, so a chain of calls reports its first failure). Returns NULL so
 * callers can `return err_set(...)`. */
void *err_set(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int err_code(void);
/* Data errors that only a running kernel can see (an index out of range),
 * possibly on an OpenMP worker: one process-wide slot, the first report
 * wins. The backend polls err_kernel_pending() between kernels (one relaxed
 * load), stops, and err_kernel_take() turns the report into the calling
 * thread's error (LT_ERR_ARG) and returns -1; 0 if nothing was reported. */
void err_kernel(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int err_kernel_pending(void);
int err_kernel_take(void);

/* ---- allocation hook (alloc.c) ---- */
/* All host memory goes through these. The test build can make the k-th
 * allocation fail (core_alloc_fail_at). They set LT_ERR_OOM on failure. */
void *core_malloc(size_t n);
void *core_calloc(size_t n, size_t size);
void *core_realloc(void *p, size_t n);
void *core_aligned_alloc(size_t n); /* 64-byte aligned; free with core_free */
void *core_huge_alloc(size_t n);    /* the same, huge pages asked for from 2 MiB; core_free */
/* A tensor buffer of n bytes, 64-byte aligned, maybe one freed before
 * (kept by size for reuse); give it back with core_buffer_free(p, n). */
void *core_buffer_alloc(size_t n);
void core_buffer_free(void *p, size_t n); /* p: from core_buffer_alloc(n) or core_aligned_alloc(>= n) */
void core_free(void *p);
void core_alloc_fail_at(int64_t k); /* 0 disables; k-th call from now fails */
int64_t core_alloc_count(void);     /* allocations since start (for sweeps) */

/* ---- arena (arena.c) ---- */
/* Bump allocator for IR nodes. Reset as a whole when no pending value refers
 * to it; `epoch` changes at each reset so caches of node pointers can tell
 * they are stale. */
typedef struct arena_chunk arena_chunk;
typedef struct arena {
    arena_chunk *head;
    char *cur, *end;
    size_t bytes;     /* bytes handed out since the last reset */
    uint64_t nodes;   /* nodes allocated since the last reset */
    uint32_t epoch;
} arena;
extern arena g_arena;
void *arena_alloc_slow(size_t n);
static inline void *arena_alloc(size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (LT_LIKELY((size_t)(g_arena.end - g_arena.cur) >= n)) {
        void *p = g_arena.cur;
        g_arena.cur += n;
        g_arena.bytes += n;
        return p;
    }
    return arena_alloc_slow(n);
}
void arena_reset(void);
void arena_release(void); /* frees all chunks (at exit) */

/* ---- hashing ---- */
/* One multiply per word on the tracing hot path (node hashes chain through
 * every operand, so latency matters); hash_final avalanches once per node.
 * Quality is enough for bucketing: every cache hit is confirmed structurally. */
static inline uint64_t hash_mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x9E3779B97F4A7C15ull; }
static inline uint64_t hash_final(uint64_t h) {
    h ^= h >> 32;
    h *= 0xD6E8FEB86659FD93ull;
    return h ^ (h >> 32);
}
uint64_t hash_bytes(const void *p, size_t n, uint64_t seed);

/* ---- dtypes (dtype.c) ---- */
static inline size_t dtype_size(lt_dtype d) {
    static const size_t sz[] = {4, 8, 4, 8, 1, 2, 1};
    return sz[d];
}
static inline int dtype_is_float(lt_dtype d) { return d == LT_F32 || d == LT_F64 || d == LT_BF16; }
static inline int dtype_valid(int d) { return d >= LT_F32 && d <= LT_U8; }
/* bfloat16 <-> float32 as PyTorch's c10::BFloat16 does: round to nearest
 * even; a NaN stays a NaN (quiet, sign kept) instead of rounding to inf. */
static inline uint16_t bf16_from_f32(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}
static inline float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
/* f rounded to the nearest bfloat16, kept as a float. */
static inline float bf16_round(float f) { return bf16_to_f32(bf16_from_f32(f)); }
lt_dtype dtype_promote(lt_dtype a, lt_dtype b);    /* PyTorch's result_type for tensors */
lt_dtype dtype_result(int n, const lt_dtype *d, unsigned zmask); /* ... with 0-d operands (bits of zmask) */
lt_dtype dtype_with_scalar(lt_dtype a);
int dtype_fits(double v, lt_dtype d); /* a number fits d's range (PyTorch's overflow check) */            /* tensor op Python float */
int dtype_can_cast(lt_dtype from, lt_dtype to);    /* PyTorch's canCast */
const char *dtype_name(lt_dtype d);

/* ---- shapes (shape.c) ---- */
/* Formats a shape as "[2, 3]" into buf (for messages). */
const char *shape_str(char *buf, size_t n, int ndim, const int64_t *shape);
#define SHAPE_STR(ndim, shape) shape_str((char[96]){0}, 96, (ndim), (shape))
/* numel with overflow and negative checks; -1 and an error on failure. */
int64_t shape_numel_checked(const char *fn, int ndim, const int64_t *shape);
static inline int64_t shape_numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}
/* Inline loop: a libc memcmp call costs more than these few dims. */
static inline int shape_eq(int na, const int64_t *a, int nb, const int64_t *b) {
    if (na != nb) return 0;
    for (int i = 0; i < na; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}
/* Broadcast two shapes; returns ndim of the result or -1 (no error set). */
int shape_broadcast(int na, const int64_t *a, int nb, const int64_t *b, int64_t *out);
void shape_contig_strides(int ndim, const int64_t *shape, int64_t *strides);
/* 0 only when no two elements of the strided view (shape, strides) share a
 * location (exact; zero-size views never overlap). */
int shape_overlaps(int ndim, const int64_t *shape, const int64_t *strides);
/* The dims of size > 1, in increasing stride order (into idx); their count. */
int shape_dims_by_stride(int ndim, const int64_t *shape, const int64_t *strides, int *idx);
/* Wraps a possibly negative dim; -1 if out of range (no error set). */
static inline int dim_wrap(int dim, int ndim) {
    int n = ndim > 0 ? ndim : 1;
    if (dim < -n || dim >= n) return -1;
    return dim < 0 ? dim + n : dim;
}

/* ---- configuration (config.c): environment read once at init ---- */
typedef struct core_config {
    int eager;                /* LT_EAGER */
    int64_t max_pending;      /* LT_MAX_PENDING_NODES */
    int cache_size;           /* LT_CACHE_SIZE */
    int dispatch_trace;       /* LT_DISPATCH_TRACE */
    int metrics_at_exit;      /* LT_METRICS */
    int backend;              /* LT_BACKEND: 0 = cpu, 1 = ref */
    int num_threads;          /* LT_NUM_THREADS (0 = all) */
    size_t dist_bucket_bytes; /* LT_DIST_BUCKET_MB: collectives coalesced up to this size (0 = off) */
    const char *dump_ir_dir;  /* LT_DUMP_IR */
    const char *trace_file;   /* LT_TRACE_FILE */
    int trace_kernels;        /* LT_TRACE_KERNELS */
    size_t bn_stream_bytes;   /* LT_BN_STREAM_MB: batch norm's float32 outputs this large are written with streaming stores (negative: never) */
    int bn_fuse;              /* LT_BN_FUSE: 0 runs batch norm's ReLU/add epilogue and prologue as separate kernels, 1 fuses them, 2 (default) also recomputes the backward's ReLU mask from x (A/B) */
    int wgrad_split;          /* LT_WGRAD_SPLIT: bfloat16 weight gradients split over the batch (dnnl.c) */
    int conv_winograd;        /* LT_CONV_WINOGRAD: float32 3x3 convs may run oneDNN's Winograd kernels (dnnl.c) */
    int adapt_threads;        /* LT_ADAPT_THREADS (default 1): one thread fewer when that runs faster */
} core_config;
extern core_config g_config;
extern int g_initialized;
void core_init_slow(void);
static inline void core_init(void) {
    if (LT_UNLIKELY(!g_initialized)) core_init_slow();
}

/* ---- RNG (rng.c): host generator behind lt_manual_seed ---- */
uint64_t rng_next(void);
double rng_uniform(void); /* [0, 1) */
double rng_normal(void);

#endif
