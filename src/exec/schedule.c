/* Program order for the kernels: a topological order of the live nodes that
 * follows creation order (gnode.seq), the order in which the program issued
 * its ops, as eager execution would run them. A post-order from the roots
 * runs the whole chain of input gradients before the weight gradients that
 * consume them and so holds every one alive at once (a ResNet-20 step: an
 * arena of 290 MiB instead of 160). Kahn's algorithm with a min-heap on
 * (seq, index) stays topological whatever the seqs say. */
#include "passes.h"

static int before(const int32_t *seq, int32_t a, int32_t b) { return seq[a] < seq[b] || (seq[a] == seq[b] && a < b); }

static void heap_push(int32_t *h, int *nh, int32_t v, const int32_t *seq) {
    int i = (*nh)++;
    while (i > 0 && before(seq, v, h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static int32_t heap_pop(int32_t *h, int *nh, const int32_t *seq) {
    int32_t top = h[0], v = h[--*nh];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *nh) break;
        if (c + 1 < *nh && before(seq, h[c + 1], h[c])) c++;
        if (!before(seq, h[c], v)) break;
        h[i] = h[c];
        i = c;
    }
    if (*nh) h[i] = v;
    return top;
}

int exec_program_order(const exec_graph *g, const int32_t *in_pool, const uint8_t *live, const int32_t *seq,
                       int32_t *order) {
    int n = g->n, no = 0, nh = 0;
    size_t m = (size_t)(n ? n : 1), nedge = 0;
    int32_t *indeg = core_calloc(m, 4), *ustart = core_calloc(m + 1, 4), *heap = core_malloc(m * 4);
    for (int k = 0; k < n; k++)
        if (live[k]) nedge += g->nodes[k].nin;
    int32_t *users = core_malloc((nedge ? nedge : 1) * 4);
    if (!indeg || !ustart || !heap || !users) {
        no = -1;
        goto done;
    }
    /* Users of every node, as one array sliced by ustart (counting sort). */
    for (int k = 0; k < n; k++) {
        if (!live[k]) continue;
        const int32_t *in = in_pool + (g->nodes[k].in - g->in_pool);
        indeg[k] = g->nodes[k].nin;
        for (int i = 0; i < g->nodes[k].nin; i++) ustart[in[i] + 1]++;
    }
    for (int k = 0; k < n; k++) ustart[k + 1] += ustart[k];
    for (int k = 0; k < n; k++) {
        if (!live[k]) continue;
        const int32_t *in = in_pool + (g->nodes[k].in - g->in_pool);
        for (int i = 0; i < g->nodes[k].nin; i++) users[ustart[in[i]]++] = k;
    }
    for (int k = n; k > 0; k--) ustart[k] = ustart[k - 1]; /* the fill moved every start to the next one's */
    ustart[0] = 0;
    for (int k = 0; k < n; k++)
        if (live[k] && indeg[k] == 0) heap_push(heap, &nh, k, seq);
    while (nh) {
        int32_t k = heap_pop(heap, &nh, seq);
        order[no++] = k;
        for (int32_t e = ustart[k]; e < ustart[k + 1]; e++)
            if (--indeg[users[e]] == 0) heap_push(heap, &nh, users[e], seq);
    }
done:
    core_free(indeg);
    core_free(ustart);
    core_free(heap);
    core_free(users);
    return no;
}
