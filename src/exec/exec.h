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
} exec_graph;

void exec_graph_free(exec_graph *g);

/* The backend vtable: `ref` runs node by node, `cpu` runs a fused plan. */
typedef struct backend {
    const char *name;
    int (*supports)(int op);
    /* Returns an executable or NULL (error set). Borrows g for its lifetime:
     * the cache keeps g alive as long as the executable. */
    void *(*compile)(const exec_graph *g);
    /* inputs[nparams], scalars[nscalars] -> outputs[nroots] (new references).
     * Returns 0, or -1 with an error set and no output produced. */
    int (*run)(void *exe, lt_buffer *const *inputs, const double *scalars, lt_buffer **outputs);
    void (*free_exec)(void *exe);
} backend;

extern const backend g_backend_ref;
const backend *exec_backend(void);

/* Sync the given root nodes: compile or find the graph, run it, and return
 * one new buffer reference per root in outs. 0 or -1 (error set). */
int exec_sync_nodes(ir_node *const *roots, int nroots, lt_buffer **outs);

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

#endif
