/* ir: one node per traced op, bump-allocated, hashed once at creation. */
#ifndef LT_IR_H
#define LT_IR_H

#include "../core/core.h"

enum lt_op {
#define OP(name, arity, kind, flags) LT_OP_##name,
#include "../ops.def"
#undef OP
    LT_OP_COUNT
};

enum op_kind { LEAF, CREATE, ELEMWISE, REDUCE, VIEW, SCATTER, LIBRARY, SHAPE };
/* COLLECTIVE: communicates with the other ranks (src/dist); every rank must run it. */
enum op_flag { GRAD = 1, INPLACE_OK = 2, SCALAR_ATTR = 4, COLLECTIVE = 8 };

typedef struct op_info {
    const char *name;
    int arity;
    enum op_kind kind;
    int flags;
} op_info;
extern const op_info g_ops[LT_OP_COUNT];

/* A buffer of device (host) memory, shared by refcount between storages,
 * graph leaves and executables. */
typedef struct lt_buffer {
    void *data;
    size_t nbytes;
    int32_t refs;
    uint32_t mark; /* sync epoch of the last parameter-slot assignment */
    int32_t slot;  /* parameter slot in that sync */
    void (*give_back)(void *ctx, void *data); /* frees data; NULL: core_free */
    void *ctx;
} lt_buffer;
lt_buffer *buffer_new(size_t nbytes); /* refs = 1; NULL + error on failure */
/* A buffer over `data` (64-byte aligned, at least nbytes), which it takes in
 * every case: data goes to give_back(ctx, data) when the last reference is
 * released, or at once if NULL is returned (give_back NULL: core_free, for
 * core_aligned_alloc's memory). */
lt_buffer *buffer_adopt(void *data, size_t nbytes, void (*give_back)(void *ctx, void *data), void *ctx);
static inline void buffer_retain(lt_buffer *b) { b->refs++; }
void buffer_release(lt_buffer *b);

#define IR_MAX_SCALARS 2

/* A node. Operands, shape and integer attributes trail the struct in the
 * arena. Scalars are doubles; bit i of `rt` marks scalar i as a runtime
 * parameter (not hashed); 0 and 1 are baked and hashed by value. */
typedef struct ir_node {
    uint64_t hash;
    uint16_t op;
    uint8_t dtype;
    uint8_t ndim;
    uint16_t nin;
    uint8_t nia;
    uint8_t nsc;
    uint8_t rt;
    uint32_t mark; /* sync epoch of the last visit */
    int32_t idx;   /* post-order index in that sync */
    uint32_t seq;  /* creation order (wraps): the cpu backend runs kernels in program order */
    int64_t numel;
    double sc[IR_MAX_SCALARS];
    lt_buffer *buf; /* DATA only: borrowed from the storage that owns the leaf */
    int64_t *shape;
    int64_t *ia;
    struct ir_node *in[];
} ir_node;

/* The seq the next node gets. */
extern uint32_t g_ir_seq;

/* Creates a node; returns NULL (error set) only if the arena cannot grow. */
ir_node *ir_new(int op, lt_dtype dtype, int ndim, const int64_t *shape, int nin, ir_node *const *in,
                int nia, const int64_t *ia, int nsc, const double *sc);
ir_node *ir_data(lt_buffer *buf, lt_dtype dtype, int ndim, const int64_t *shape);

static inline int scalar_is_special(double v) {
    /* 0 and 1 are baked so the compiler can fold them; -0.0 is not 0 here. */
    uint64_t bits;
    memcpy(&bits, &v, 8);
    return bits == 0 || v == 1.0;
}

/* Printing (print.c): text, one node per line, and Graphviz DOT. */
void ir_print_node(FILE *f, const ir_node *n);

#endif

/* The dtype an elementwise op computes in, from its operands' dtypes (the
 * node's own dtype may differ: comparisons give bool, CAST its target, and
 * in-place ops store into the destination's dtype). Shared by the api's
 * type promotion and every backend's kernels. zmask: bit i set where
 * operand i is 0-d (PyTorch's dimension categories, dtype_result). */
lt_dtype ir_compute_dtype(int op, int nin, const lt_dtype *in, unsigned zmask);
/* An ADD_SCALAR, MUL_SCALAR, POW_SCALAR or CLAMP node of an integer dtype
 * had integral scalars (lt_add_scalar_int ...): it computes in that dtype,
 * as torch keeps an integer tensor's dtype for an integer Python scalar. */
static inline int ir_integral_scalar(int op, lt_dtype node_dtype) {
    return (op == LT_OP_ADD_SCALAR || op == LT_OP_MUL_SCALAR || op == LT_OP_POW_SCALAR || op == LT_OP_CLAMP) &&
           !dtype_is_float(node_dtype);
}
