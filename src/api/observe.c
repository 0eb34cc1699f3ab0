/* The observability entry points (DESIGN 8): the report, user spans on the
 * timeline, and IR dumps on demand. They live in api so that each one
 * initializes the runtime first: a program whose first call is
 * lt_trace_begin must still get its trace file opened and closed. */
#include "api.h"

const char *lt_metrics_report(void) {
    if (LT_UNLIKELY(!g_initialized)) api_init_slow();
    return prof_report();
}

void lt_trace_begin(const char *name) {
    if (LT_UNLIKELY(!g_initialized)) api_init_slow();
    /* reported, but the span still opens as "(null)": the caller's lt_trace_end stays matched */
    if (!name) err_set(LT_ERR_NULL, "lt_trace_begin: argument 'name' is NULL");
    prof_user_begin(name);
}

void lt_trace_end(void) { prof_user_end(); }

int lt_graph_dump(const char *path_prefix, int n, lt_tensor *const *tensors) {
    if (LT_UNLIKELY(!g_initialized)) api_init_slow();
    if (!path_prefix) return err_set(LT_ERR_NULL, "lt_graph_dump: argument 'path_prefix' is NULL"), -1;
    if (n < 1) return err_set(LT_ERR_ARG, "lt_graph_dump: argument 'n' is %d, expected >= 1", n), -1;
    if (!tensors) return err_set(LT_ERR_NULL, "lt_graph_dump: argument 'tensors' is NULL"), -1;
    ir_node **roots = core_malloc((size_t)n * sizeof *roots);
    if (!roots) return -1;
    int rc = -1;
    for (int i = 0; i < n; i++) {
        char arg[32];
        snprintf(arg, sizeof arg, "tensors[%d]", i);
        if (api_check("lt_graph_dump", arg, tensors[i])) goto done;
        /* Reading a value is what a sync would do: materialized tensors
         * show as DATA leaves, views as their strided read. */
        if (!(roots[i] = func_value(tensors[i]))) goto done;
    }
    exec_graph *g = exec_graph_of(roots, n);
    if (!g) goto done;
    rc = exec_graph_dump(path_prefix, g);
    exec_graph_free(g);
done:
    core_free(roots);
    return rc;
}
