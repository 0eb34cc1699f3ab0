/* Why a graph missed the compile cache (DESIGN 6, 8). Runs only on a miss,
 * before the new graph is inserted. Every cache entry keeps a structure
 * signature: the hash of its ops and operand wiring with dtypes, shapes,
 * attributes, scalars and parameter slots masked out. A cached graph with
 * the same signature differs only in those masked parts, so a node-by-node
 * diff names them (an input's shape or dtype, the parameter sequence, an
 * attribute). Without one, the cached graph that shares the longest prefix
 * of wiring is the most similar, and the first node where they part is the
 * structural difference. */
#include "exec.h"

#include "../prof/prof.h"

/* Longest-prefix search looks at this many most recently used entries: the
 * search is O(entries x nodes), and a miss should not cost more than the
 * compile it precedes. */
#define SCAN_MAX 256

uint64_t exec_graph_sig(const exec_graph *g) {
    uint64_t h = hash_mix(0x5167, (uint64_t)g->n);
    for (int k = 0; k < g->n; k++) {
        const gnode *y = &g->nodes[k];
        h = hash_mix(h, (uint64_t)y->op | (uint64_t)y->nin << 16 | (uint64_t)y->nia << 32 | (uint64_t)y->nsc << 40);
        for (int i = 0; i < y->nin; i++) h = hash_mix(h, (uint64_t)y->in[i]);
    }
    h = hash_mix(h, (uint64_t)g->nroots);
    for (int r = 0; r < g->nroots; r++) h = hash_mix(h, (uint64_t)g->roots[r]);
    return h;
}

static int same_wiring(const gnode *a, const gnode *b) {
    if (a->op != b->op || a->nin != b->nin || a->nia != b->nia || a->nsc != b->nsc) return 0;
    for (int i = 0; i < a->nin; i++)
        if (a->in[i] != b->in[i]) return 0;
    return 1;
}

/* "LERP f32[2, 3](%1, %2)" */
static const char *node_str(char *s, size_t n, const gnode *y) {
    int w = snprintf(s, n, "%s %s%s(", g_ops[y->op].name, dtype_name((lt_dtype)y->dtype),
                     SHAPE_STR(y->ndim, y->shape));
    for (int i = 0; i < y->nin && w > 0 && (size_t)w < n; i++)
        w += snprintf(s + w, n - (size_t)w, i ? ", %%%d" : "%%%d", y->in[i]);
    if (w > 0 && (size_t)w < n) snprintf(s + w, n - (size_t)w, ")");
    return s;
}
#define NODE_STR(y) node_str((char[128]){0}, 128, (y))
#define TYPE_STR(y) type_str((char[112]){0}, 112, (y))

static const char *type_str(char *s, size_t n, const gnode *y) {
    snprintf(s, n, "%s%s", dtype_name((lt_dtype)y->dtype), SHAPE_STR(y->ndim, y->shape));
    return s;
}

static int same_type(const gnode *a, const gnode *b) {
    return a->dtype == b->dtype && a->ndim == b->ndim && !memcmp(a->shape, b->shape, (size_t)a->ndim * 8);
}

/* Appends to a bounded line; silently truncates. */
typedef struct line {
    char *s;
    size_t n, len;
} line;
static void add(line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(line *l, const char *fmt, ...) {
    if (l->len + 1 >= l->n) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(l->s + l->len, l->n - l->len, fmt, ap);
    va_end(ap);
    if (w > 0) l->len = l->len + (size_t)w < l->n ? l->len + (size_t)w : l->n - 1;
}

/* Same wiring: name what the masked parts say. Inputs first (a changed
 * input shape changes every node below it, which is not news); then, if no
 * input changed, the first node whose own type, attributes or scalars did. */
static void diff_same_structure(line *l, const exec_graph *now, const exec_graph *old) {
    int found = 0;
    for (int k = 0; k < now->n && found < 3; k++) {
        const gnode *a = &old->nodes[k], *b = &now->nodes[k];
        if (b->op != LT_OP_DATA) continue;
        if (!same_type(a, b)) {
            add(l, "%sinput %%%d (parameter %d) changed %s -> %s", found ? "; " : "", k, b->param, TYPE_STR(a),
                TYPE_STR(b));
            found++;
        }
    }
    if (found) return;
    for (int k = 0; k < now->n; k++) {
        const gnode *a = &old->nodes[k], *b = &now->nodes[k];
        if (b->op == LT_OP_DATA && a->param != b->param) {
            add(l, "parameter sequence differs: input %%%d reads parameter %d, was %d (an input is now %s another)",
                k, b->param, a->param, b->param < a->param ? "the same buffer as" : "a different buffer from");
            return;
        }
    }
    for (int k = 0; k < now->n; k++) {
        const gnode *a = &old->nodes[k], *b = &now->nodes[k];
        if (!same_type(a, b)) {
            add(l, "%%%d %s changed %s -> %s", k, g_ops[b->op].name, TYPE_STR(a), TYPE_STR(b));
            return;
        }
        if (memcmp(a->ia, b->ia, (size_t)b->nia * 8)) {
            add(l, "attributes of %%%d %s changed [", k, g_ops[b->op].name);
            for (int i = 0; i < a->nia; i++) add(l, i ? ", %lld" : "%lld", (long long)a->ia[i]);
            add(l, "] -> [");
            for (int i = 0; i < b->nia; i++) add(l, i ? ", %lld" : "%lld", (long long)b->ia[i]);
            add(l, "]");
            return;
        }
        for (int i = 0; i < b->nsc; i++) {
            int ra = a->sc_slot[i] >= 0, rb = b->sc_slot[i] >= 0;
            if (ra != rb || (!rb && memcmp(&a->sc[i], &b->sc[i], 8))) {
                /* 0 and 1 are baked into the graph (DESIGN 2.2); any other
                 * value is a runtime parameter, so moving between them
                 * recompiles. */
                add(l, "scalar %d of %%%d %s changed ", i, k, g_ops[b->op].name);
                add(l, ra ? "runtime" : "%g", a->sc[i]);
                add(l, " -> ");
                add(l, rb ? "runtime (%g)" : "%g (baked)", b->sc[i]);
                return;
            }
        }
    }
    add(l, "no difference in nodes, types or attributes (hash or serialization detail)");
}

void exec_explain_miss(const exec_graph *g, uint64_t sig, const backend *be) {
    char buf[320];
    line l = {buf, sizeof buf, 0};
    buf[0] = 0;
    int ncached = cache_count();
    if (!ncached) {
        add(&l, "first sight of a graph (cache empty): %d nodes, %d inputs, %d outputs", g->n, g->nparams, g->nroots);
        prof_compile_reason(buf);
        return;
    }
    const exec_graph *twin = NULL, *other_be = NULL, *best = NULL;
    int best_prefix = -1, scanned = 0;
    for (cache_entry *e = cache_next(NULL); e; e = cache_next(e)) {
        if (cache_sig(e) == sig) {
            if (cache_backend(e) != be) {
                if (!other_be) other_be = cache_graph(e);
                continue;
            }
            const exec_graph *h = cache_graph(e);
            int same = h->n == g->n && h->nroots == g->nroots;
            for (int k = 0; same && k < g->n; k++) same = same_wiring(&h->nodes[k], &g->nodes[k]);
            if (same) {
                twin = h;
                break;
            }
        }
        if (scanned++ >= SCAN_MAX || cache_backend(e) != be) continue;
        const exec_graph *h = cache_graph(e);
        int p = 0;
        while (p < g->n && p < h->n && same_wiring(&g->nodes[p], &h->nodes[p])) p++;
        if (p > best_prefix) {
            best_prefix = p;
            best = h;
        }
    }
    if (twin) {
        diff_same_structure(&l, g, twin);
    } else if (other_be) {
        add(&l, "same graph was compiled for another backend; now for %s", be->name);
    } else if (!best) {
        add(&l, "first sight of a graph for backend %s: %d nodes", be->name, g->n);
    } else {
        int p = best_prefix;
        add(&l, "first sight of this structure (%d nodes; most similar of %d cached has %d): ", g->n, ncached, best->n);
        if (p < g->n && p < best->n)
            add(&l, "differs at %%%d: %s vs %s", p, NODE_STR(&g->nodes[p]), NODE_STR(&best->nodes[p]));
        else if (p < g->n)
            add(&l, "extends it at %%%d %s", p, NODE_STR(&g->nodes[p]));
        else if (p < best->n)
            add(&l, "ends at %%%d where it continues with %s", p, NODE_STR(&best->nodes[p]));
        else
            add(&l, "same nodes, different outputs (%d vs %d)", g->nroots, best->nroots);
    }
    prof_compile_reason(buf);
}
