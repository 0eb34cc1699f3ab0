/* The command-line program: parses the command and options, sets the
 * environment the library reads at its first call, and dispatches.
 *   lazytensor train [options]   lazytensor eval --resume PATH
 *   lazytensor bench             lazytensor demo
 * A bare `lazytensor` prints the usage (exit 2). */
#include "cli.h"

#include "core/omp_policy.h" /* short OpenMP spins unless the user chose */

#include <string.h>

/* A tiny traced loop: what happens at trace, sync and cache time. */
static int demo(void) {
    int64_t shape[2] = {4, 8};
    lt_manual_seed(0);
    lt_tensor *w = lt_randn(LT_F32, 2, shape);
    lt_tensor *target = lt_full(0.5, LT_F32, 2, shape);
    for (int step = 0; step < 20; step++) {
        lt_tensor *d = lt_sub(w, target);
        lt_tensor *sq = lt_mul(d, d);
        lt_tensor *loss = lt_mean(sq, 0, NULL, false);
        lt_lerp_(w, target, 0.1); /* pull w toward the target */
        lt_mark_step();
        double l = lt_item(loss);
        if (step % 5 == 0 || step == 19) printf("step %2d  loss %.6f\n", step, l);
        lt_free(d), lt_free(sq), lt_free(loss);
    }
    printf("compiles: %.0f uncached, %.0f cached\n", lt_metric("UncachedCompile"), lt_metric("CachedCompile"));
    lt_free(w), lt_free(target);
    if (lt_error()) {
        fprintf(stderr, "error: %s\n", lt_error_message());
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    lt_omp_policy(argv); /* may re-execute the program once (core/omp_policy.h) */
    cli_opts o;
    opts_defaults(&o);
    /* Lines reach a pipe in the order they were printed, even when the
     * progress goes to stderr and the rest to stdout. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        opts_help(stderr, NULL);
        return CLI_USAGE;
    }
    const char *cmd = argv[1];
    int first = 2;
    if (!strncmp(cmd, "--", 2) && strcmp(cmd, "--help")) { /* `lazytensor --epochs 2` means train */
        cmd = "train";
        first = 1;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
        opts_help(stdout, NULL);
        return CLI_OK;
    }
    if (strcmp(cmd, "train") && strcmp(cmd, "eval") && strcmp(cmd, "bench") && strcmp(cmd, "demo") &&
        strcmp(cmd, "bench-data") && strcmp(cmd, "export-images") &&
        strcmp(cmd, "sample")) {
        fprintf(stderr, "lazytensor: unknown command '%s' (try --help)\n", cmd);
        return CLI_USAGE;
    }
    o.cmd = cmd;
    int rc = opts_parse(&o, argc - first, argv + first);
    if (rc) return rc > 0 ? CLI_OK : CLI_USAGE;
    if (outputs_check(&o)) return CLI_USAGE;
    if (opts_apply_env(&o)) return CLI_FAILED;
    if (!strcmp(cmd, "demo")) return demo();
    if (!strcmp(cmd, "bench")) return cmd_bench(&o);
    if (!strcmp(cmd, "bench-data")) return cmd_bench_data(&o);
    if (!strcmp(cmd, "export-images")) return cmd_export_images(&o);
    if (!strcmp(cmd, "sample")) return cmd_sample(&o);
    if (!strcmp(cmd, "eval")) return cmd_eval(&o);
    interrupt_install();
    rc = cmd_train(&o, NULL);
    /* Several processes: a rank that fails alone would leave the others
     * waiting in a collective; end the whole job with its status. */
    if (rc && lt_dist_world_size() > 1) lt_dist_abort(rc);
    return rc;
}
