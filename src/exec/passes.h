/* Backend-independent graph passes (DESIGN 6): dead code elimination, common
 * subexpression elimination and view/scatter peepholes. The cpu backend runs
 * them before fusion; the reference backend does not, so that the oracle
 * executes the graph exactly as traced (DESIGN 2.10). */
#ifndef LT_PASSES_H
#define LT_PASSES_H

#include "exec.h"

/* A new, equivalent graph (same parameter and scalar slots, same roots in
 * the same order, possibly fewer nodes). NULL + error on OOM. Free with
 * exec_graph_free. */
exec_graph *exec_optimize(const exec_graph *g);

/* The live nodes in program order (schedule.c): topological, following
 * seq[] (creation order). in_pool parallels g->in_pool (operands as
 * rewritten by the passes). Fills order[]; returns how many, -1 on OOM. */
int exec_program_order(const exec_graph *g, const int32_t *in_pool, const uint8_t *live, const int32_t *seq,
                       int32_t *order);

#endif
