/* IR dumps of an exec_graph: text (one node per line: id, op, dtype, shape,
 * operands, attributes) and Graphviz DOT. LT_DUMP_IR=dir writes every newly
 * compiled graph; lt_graph_dump writes one on demand. The text form is
 * stable and diffable: tests compare it to committed files. */
#include "exec.h"

#include "../prof/prof.h"

#include <errno.h>
#include <sys/stat.h>

static void put_scalar(FILE *f, const gnode *y, int i) {
    /* A runtime scalar prints its slot and the value it had when traced. */
    if (y->sc_slot[i] >= 0) fprintf(f, "$%d=%.17g", y->sc_slot[i], y->sc[i]);
    else fprintf(f, "%.17g", y->sc[i]);
}

void exec_graph_write_text(FILE *f, const exec_graph *g) {
    fprintf(f, "# lazytensor graph: %d nodes, %d inputs, %d runtime scalars, %d outputs\n", g->n, g->nparams,
            g->nscalars, g->nroots);
    for (int k = 0; k < g->n; k++) {
        const gnode *y = &g->nodes[k];
        fprintf(f, "%%%d = %s %s%s(", k, g_ops[y->op].name, dtype_name((lt_dtype)y->dtype),
                SHAPE_STR(y->ndim, y->shape));
        for (int i = 0; i < y->nin; i++) fprintf(f, i ? ", %%%d" : "%%%d", y->in[i]);
        fprintf(f, ")");
        if (y->op == LT_OP_DATA) fprintf(f, " param=%d", y->param);
        if (y->nia) {
            fprintf(f, " ia=[");
            for (int i = 0; i < y->nia; i++) fprintf(f, i ? ", %lld" : "%lld", (long long)y->ia[i]);
            fprintf(f, "]");
        }
        if (y->nsc) {
            fprintf(f, " sc=[");
            for (int i = 0; i < y->nsc; i++) {
                if (i) fprintf(f, ", ");
                put_scalar(f, y, i);
            }
            fprintf(f, "]");
        }
        fprintf(f, "\n");
    }
    fprintf(f, "return");
    for (int r = 0; r < g->nroots; r++) fprintf(f, r ? ", %%%d" : " %%%d", g->roots[r]);
    fprintf(f, "\n");
}

/* A kernel span's args in the LT_TRACE_KERNELS timeline: its node's number
 * (in the graph the backend runs: LT_DUMP_IR's graph_N_optimized on cpu),
 * dtype and shape, so a slow span can be found in the graph. */
void exec_node_args(char *buf, size_t n, const exec_graph *g, const gnode *y) {
    snprintf(buf, n, "\"node\":%d,\"type\":\"%s%s\"", (int)(y - g->nodes), dtype_name((lt_dtype)y->dtype),
             SHAPE_STR(y->ndim, y->shape));
}

void exec_graph_write_dot(FILE *f, const exec_graph *g) {
    fprintf(f, "digraph lazytensor {\n  node [shape=box, fontname=\"monospace\"];\n");
    for (int k = 0; k < g->n; k++) {
        const gnode *y = &g->nodes[k];
        fprintf(f, "  n%d [label=\"%%%d %s\\n%s%s", k, k, g_ops[y->op].name, dtype_name((lt_dtype)y->dtype),
                SHAPE_STR(y->ndim, y->shape));
        if (y->nia) {
            fprintf(f, "\\nia=[");
            for (int i = 0; i < y->nia; i++) fprintf(f, i ? ", %lld" : "%lld", (long long)y->ia[i]);
            fprintf(f, "]");
        }
        if (y->op == LT_OP_DATA) fprintf(f, "\\nparam %d\", style=filled, fillcolor=lightblue];\n", y->param);
        else fprintf(f, "\"];\n");
        for (int i = 0; i < y->nin; i++) fprintf(f, "  n%d -> n%d;\n", y->in[i], k);
    }
    for (int r = 0; r < g->nroots; r++)
        fprintf(f, "  out%d [shape=oval, label=\"out %d\"];\n  n%d -> out%d;\n", r, r, g->roots[r], r);
    fprintf(f, "}\n");
}

int exec_graph_dump(const char *prefix, const exec_graph *g) {
    size_t n = strlen(prefix) + 8;
    char *path = core_malloc(n);
    if (!path) return -1;
    int rc = 0;
    for (int dot = 0; dot < 2 && !rc; dot++) {
        snprintf(path, n, "%s.%s", prefix, dot ? "dot" : "txt");
        FILE *f = fopen(path, "w");
        if (!f) {
            err_set(LT_ERR_IO, "lt_graph_dump: argument 'path_prefix': cannot write '%s': %s", path, strerror(errno));
            rc = -1;
            break;
        }
        if (dot) exec_graph_write_dot(f, g);
        else exec_graph_write_text(f, g);
        if (fclose(f)) {
            err_set(LT_ERR_IO, "lt_graph_dump: error writing '%s'", path);
            rc = -1;
        }
    }
    core_free(path);
    return rc;
}

/* LT_DUMP_IR: dir/graph_0001.txt, .dot, ... numbered in compile order;
 * a backend that compiles an optimized copy (cpu: exec_optimize) writes it
 * first as graph_0001_optimized (suffix non-NULL: the number the graph
 * itself is about to get), the graph whose node numbers LT_TRACE_KERNELS's
 * spans carry. A failure is reported once on stderr and never fails the
 * sync: a debugging aid must not change what the program computes. */
void exec_dump_compiled(const exec_graph *g, const char *suffix) {
    static uint64_t seq;
    static int made, failed;
    const char *dir = g_config.dump_ir_dir;
    if (failed) return;
    if (!made) {
        made = 1;
        if (mkdir(dir, 0777) && errno != EEXIST) {
            fprintf(stderr, "lazytensor: cannot create LT_DUMP_IR=%s: %s\n", dir, strerror(errno));
            failed = 1;
            return;
        }
    }
    uint64_t t0 = prof_trace_now();
    char prefix[4096];
    snprintf(prefix, sizeof prefix, "%s/graph_%04llu%s", dir, (unsigned long long)(suffix ? seq + 1 : ++seq),
             suffix ? suffix : "");
    int code = lt_error();
    if (exec_graph_dump(prefix, g)) {
        fprintf(stderr, "lazytensor: LT_DUMP_IR: %s\n", lt_error_message());
        failed = 1;
        /* Keep the caller's error state as it was. */
        if (!code) lt_clear_error();
    }
    prof_span("dump IR", t0);
}
