/* Index data checks (gather, index_select, embedding, their backward
 * scatters, nll_loss / cross_entropy targets). Index values are data, known
 * only when a graph runs, so an out-of-range one fails the sync with an
 * error naming the op, the value and the valid range, as PyTorch raises.
 *
 * Two places look: before a run, exec_check_indices scans the index operands
 * that are graph inputs (the usual case: labels, token ids) so the sync fails
 * before any kernel writes anything, donated buffers included; and the
 * kernels themselves report (exec_index_error) what they find in indices
 * computed inside the graph, for which the sync donates nothing (a run that
 * stops half-way must leave every input buffer intact). */
#include "exec.h"

/* PyTorch's ignore_index default for the losses: a target that adds nothing. */
#define IGNORE_INDEX (-100)

static const char *public_name(int op) {
    switch (op) {
    case LT_OP_GATHER: return "lt_gather";
    case LT_OP_SCATTER_ADD: return "lt_gather (backward)";
    case LT_OP_INDEX_SELECT: return "lt_index_select";
    case LT_OP_EMBEDDING: return "lt_embedding";
    case LT_OP_INDEX_ADD: return "lt_index_select / lt_embedding (backward)";
    case LT_OP_NLL_LOSS: case LT_OP_NLL_LOSS_BWD: return "lt_nll_loss";
    default: return "lt_cross_entropy";
    }
}

int exec_index_operand(const exec_graph *g, const gnode *y, int64_t *lim, int *ignore) {
    const gnode *a = y->nin ? &g->nodes[y->in[0]] : NULL;
    *ignore = 0;
    /* nll_loss's own ignore_index (ia [C, reduction, ignore_index]; its
     * backward ia [reduction, ignore_index]) stands in for -100 */
    if (y->op == LT_OP_NLL_LOSS || y->op == LT_OP_NLL_LOSS_BWD) {
        *lim = y->op == LT_OP_NLL_LOSS ? a->shape[1] : y->shape[1];
        *ignore = 2;
        return 1;
    }
    switch (y->op) {
    case LT_OP_GATHER: *lim = a->ndim ? a->shape[y->ia[0]] : 1; return 1;
    case LT_OP_INDEX_SELECT: /* ia[2]: negatives count from the end (lt_index) */
        *lim = a->ndim ? a->shape[y->ia[0]] : 1;
        *ignore = y->nia > 2 && y->ia[2] ? 3 : 0;
        return 1;
    case LT_OP_SCATTER_ADD: *lim = y->ndim ? y->shape[y->ia[0]] : 1; return 1;
    case LT_OP_INDEX_ADD: /* ia[1]: negatives count from the end (lt_index_put_add) */
        *lim = y->ndim ? y->shape[y->ia[0]] : 1;
        *ignore = y->nia > 1 && y->ia[1] ? 3 : 0;
        return 1;
    case LT_OP_EMBEDDING: *lim = a->shape[0]; return 1;
    case LT_OP_CROSS_ENTROPY: *lim = a->shape[1]; *ignore = 1; return 1;
    case LT_OP_CROSS_ENTROPY_BWD: *lim = y->shape[1]; *ignore = 1; return 2;
    default: return -1;
    }
}

int exec_index_ok(int64_t v, int64_t lim, int ignore) {
    return (v >= 0 && v < lim) || (ignore == 1 && v == IGNORE_INDEX) || (ignore == 3 && v < 0 && v >= -lim);
}

int64_t exec_ignore_index(const gnode *y) {
    if (y->op == LT_OP_NLL_LOSS) return y->nia > 2 ? y->ia[2] : IGNORE_INDEX;
    if (y->op == LT_OP_NLL_LOSS_BWD) return y->nia > 1 ? y->ia[1] : IGNORE_INDEX;
    return IGNORE_INDEX;
}

void exec_index_error(int op, int64_t v, int64_t lim) {
    int loss = op == LT_OP_NLL_LOSS || op == LT_OP_NLL_LOSS_BWD || op == LT_OP_CROSS_ENTROPY ||
               op == LT_OP_CROSS_ENTROPY_BWD;
    if (loss)
        err_kernel("%s: target %lld is out of bounds: valid targets are 0 to %lld (or the ignore_index %d); the "
                   "sync that ran it failed and rebound nothing",
                   public_name(op), (long long)v, (long long)lim - 1, IGNORE_INDEX);
    else
        err_kernel("%s: index %lld is out of range: valid indices are 0 to %lld (a dimension of size %lld); the "
                   "sync that ran it failed and rebound nothing",
                   public_name(op), (long long)v, (long long)lim - 1, (long long)lim);
}

int exec_index_scan(exec_graph *g) {
    int n = 0;
    g->index_computed = 0;
    for (int k = 0; k < g->n; k++) {
        int64_t lim;
        int ig, i = exec_index_operand(g, &g->nodes[k], &lim, &ig);
        if (i < 0) continue;
        if (g->nodes[g->nodes[k].in[i]].op == LT_OP_DATA) n++;
        else g->index_computed = 1;
    }
    g->nindexed = n;
    if (!n) return 0;
    if (!(g->indexed = core_malloc((size_t)n * sizeof *g->indexed))) return -1;
    n = 0;
    for (int k = 0; k < g->n; k++) {
        int64_t lim;
        int ig, i = exec_index_operand(g, &g->nodes[k], &lim, &ig);
        if (i >= 0 && g->nodes[g->nodes[k].in[i]].op == LT_OP_DATA) g->indexed[n++] = k;
    }
    return 0;
}

int exec_check_indices(const exec_graph *g, lt_buffer *const *params) {
    for (int j = 0; j < g->nindexed; j++) {
        const gnode *y = &g->nodes[g->indexed[j]];
        int64_t lim;
        int ig, i = exec_index_operand(g, y, &lim, &ig);
        const gnode *x = &g->nodes[y->in[i]];
        const void *p = params[x->param]->data;
        int has_skip = ig == 2; /* nll_loss: its own ignore_index */
        int64_t skip = has_skip ? exec_ignore_index(y) : 0;
        if (has_skip) ig = 0;
        if (x->dtype == LT_I64) {
            const int64_t *v = p;
            for (int64_t e = 0; e < x->numel; e++)
                if (LT_UNLIKELY(!(has_skip && v[e] == skip) && !exec_index_ok(v[e], lim, ig)))
                    return exec_index_error(y->op, v[e], lim), err_kernel_take();
        } else if (x->dtype == LT_I32) {
            const int32_t *v = p;
            for (int64_t e = 0; e < x->numel; e++)
                if (LT_UNLIKELY(!(has_skip && v[e] == skip) && !exec_index_ok(v[e], lim, ig)))
                    return exec_index_error(y->op, v[e], lim), err_kernel_take();
        }
    }
    return 0;
}
