/* exec: sync, graph key, compile cache, and the backend vtable (DESIGN 6). */
#ifndef LT_EXEC_H
#define LT_EXEC_H

#include "../func/func.h"

/* A compiled-form graph: the pending IR copied out of the arena in
 * post-order, operands as indices. Backends compile this. */
typedef struct gnode {
    uint16_t op;
    uint8_t dtype;
    uint8_t ndim;
    uint16_t nin;
    uint8_t nia;
    uint8_t nsc;
    int32_t param;               /* DATA: parameter slot; else -1 */
    int32_t seq;                 /* creation order relative to the roots' first node; DATA: INT32_MIN */
    int32_t sc_slot[IR_MAX_SCALARS]; /* runtime scalar slot, -1 if baked */
    double sc[IR_MAX_SCALARS];   /* baked value (or trace-time value of a runtime one) */
    int64_t numel;
    int64_t shape[LT_MAX_DIMS];
    int32_t *in;                 /* operand indices (< this node's index) */
    int64_t *ia;
} gnode;

typedef struct exec_graph {
    int n;
    gnode *nodes;
    int nroots;
    int32_t *roots;   /* node index of each output */
    int nparams;      /* distinct input buffers */
    int nscalars;     /* runtime scalars */
    int32_t *in_pool; /* storage of every gnode.in */
    int64_t *ia_pool; /* storage of every gnode.ia */
    int nindexed;       /* nodes whose index operand is a graph input (index_check.c) */
    int32_t *indexed;
    int index_computed; /* 1 if some index operand is computed inside the graph */
} exec_graph;

void exec_graph_free(exec_graph *g);

/* Index data checks (index_check.c). exec_index_operand: which operand of
 * y holds indices (-1: none), their valid range [0, *lim) and whether
 * PyTorch's ignore_index -100 is allowed (1), or the node's own ignore_index
 * (2: nll_loss, exec_ignore_index gives it), or negatives down to -lim
 * (3: lt_index, lt_index_put_add). exec_index_error reports a bad one
 * from a kernel (err_kernel: any thread). exec_index_scan fills g's
 * indexed / index_computed; exec_check_indices checks the indexed inputs
 * before a run: 0, or -1 with the error set. */
int exec_index_operand(const exec_graph *g, const gnode *y, int64_t *lim, int *ignore);
int exec_index_ok(int64_t v, int64_t lim, int ignore);
int64_t exec_ignore_index(const gnode *y);
void exec_index_error(int op, int64_t v, int64_t lim);
int exec_index_scan(exec_graph *g);
int exec_check_indices(const exec_graph *g, lt_buffer *const *params);

/* torch.matmul's shape arithmetic, shared by every backend's kernel: 1-D
 * operands gain a dim the output drops; batch dims broadcast (0 against 1
 * gives 0). a is (..., n, k), b is (..., k, m); the batch index t walks
 * bshape, and its matrices start at element offsets given by astr/bstr. */
typedef struct matmul_geom {
    int64_t n, k, m, nbatch;
    int nb; /* batch dims of the output */
    int64_t bshape[LT_MAX_DIMS], astr[LT_MAX_DIMS], bstr[LT_MAX_DIMS];
} matmul_geom;
void exec_matmul_geom(int na, const int64_t *ashape, int nb, const int64_t *bshape, matmul_geom *g);
/* Element offsets of batch t's matrices in a and b. */
void exec_matmul_batch(const matmul_geom *g, int64_t t, int64_t *oa, int64_t *ob);

/* The backend vtable: `ref` runs node by node, `cpu` runs a fused plan. */
typedef struct backend {
    const char *name;
    int (*supports)(int op);
    /* Returns an executable or NULL (error set). Borrows g for its lifetime:
     * the cache keeps g alive as long as the executable. */
    void *(*compile)(const exec_graph *g);
    /* inputs[nparams], scalars[nscalars] -> outputs[nroots] (new references).
     * donatable[nparams] (NULL: none): 1 where the input buffer dies with
     * this sync (its only holder is a root storage that is being rebound),
     * so the backend may write an output into it in place (DESIGN 6).
     * Returns 0, or -1 with an error set and no output produced. */
    int (*run)(void *exe, lt_buffer *const *inputs, const uint8_t *donatable, const double *scalars,
               lt_buffer **outputs);
    void (*free_exec)(void *exe);
} backend;

extern const backend g_backend_ref;
extern const backend g_backend_cpu;
const backend *exec_backend(void);
/* Tests: force a backend (0 = cpu, 1 = ref, -1 = back to LT_BACKEND). The
 * backend is part of the graph key, so both can be cached side by side. */
void exec_set_backend(int which);

/* Sync the given root nodes: compile or find the graph, run it, and return
 * one new buffer reference per root in outs. 0 or -1 (error set). */
int exec_sync_nodes(ir_node *const *roots, int nroots, lt_buffer **outs);
/* Same, where released[i] (NULL entries allowed) is the buffer the caller
 * drops after rebinding root i: the candidates for donation. */
int exec_sync_nodes_ex(ir_node *const *roots, int nroots, lt_buffer **outs, lt_buffer *const *released);

/* Compile cache (cache.c). */
typedef struct cache_entry cache_entry;
cache_entry *cache_find(uint64_t key, const uint64_t *serial, size_t nwords);
cache_entry *cache_insert(uint64_t key, const uint64_t *serial, size_t nwords, exec_graph *g, void *exe,
                          const backend *be);
void *cache_exe(cache_entry *e);
const backend *cache_backend(cache_entry *e);
const exec_graph *cache_graph(cache_entry *e);
void cache_clear(void);
int cache_count(void);
/* Observability: entries in LRU order (NULL starts, most recent first; NULL
 * at the end) and each entry's structure signature (explain.c). */
cache_entry *cache_next(cache_entry *e);
uint64_t cache_sig(cache_entry *e);
void cache_set_sig(cache_entry *e, uint64_t sig);

/* Observability (explain.c, dump.c). */
uint64_t exec_graph_sig(const exec_graph *g); /* wiring only: types, attrs, slots masked */
/* On a miss, before inserting g: records why it missed (prof_compile_reason). */
void exec_explain_miss(const exec_graph *g, uint64_t sig, const backend *be);
void exec_graph_write_text(FILE *f, const exec_graph *g);
void exec_graph_write_dot(FILE *f, const exec_graph *g);
int exec_graph_dump(const char *prefix, const exec_graph *g); /* PREFIX.txt, PREFIX.dot; 0 or -1 */
void exec_dump_compiled(const exec_graph *g, const char *suffix); /* LT_DUMP_IR; suffix: see dump.c */
void exec_node_args(char *buf, size_t n, const exec_graph *g, const gnode *y); /* a kernel span's JSON args */
/* The graph a sync of roots would compile, without running it (free with
 * exec_graph_free). NULL + error on failure. */
exec_graph *exec_graph_of(ir_node *const *roots, int nroots);

#endif
