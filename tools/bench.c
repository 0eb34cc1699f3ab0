/* `lazytensor bench`: the trace-overhead table of bench/bench_trace.c (the
 * same loops, bench/trace_loops.h), then a short training run per model on
 * fake data. */
#include "cli.h"
#include "trace_loops.h"

#include <stdlib.h>
#include <string.h>

int cmd_bench(const cli_opts *o) {
    static const int chains[3] = {10, 1000, 100000};
    int reps = 5;
    printf("trace cost, ns per op (median of %d), chain length in columns\n%-36s %10s %10s %10s\n", reps, "op", "10",
           "1000", "100000");
    for (int k = 0; k < TRACE_NKIND; k++) {
        printf("%-36s", trace_kind_names[k]);
        for (int c = 0; c < 3; c++) printf(" %10.1f", trace_ns_per_op((enum trace_kind)k, chains[c], reps));
        printf("\n");
    }
    if (lt_error()) {
        fprintf(stderr, "lazytensor: bench: %s\n", lt_error_message());
        return 1;
    }
    /* short training runs: the per-step trace cost next to the execute cost */
    static const char *models[] = {"mlp", "resnet20", "resnet18", "resnet50"};
    printf("\ntraining on fake data (%s, batch %lld, %lld steps)\n%-10s %8s %12s %12s %12s %10s\n", o->optimizer,
           (long long)o->batch_size, (long long)(o->steps ? o->steps : 10), "model", "image", "trace ms", "execute ms",
           "compile ms", "img/s");
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        cli_opts b = *o;
        b.model = models[i];
        b.data = "fake";
        b.steps = o->steps ? o->steps : 10;
        b.test_size = 0;
        b.quiet = true;
        b.report = b.plot = b.save = b.resume = NULL;
        bool big = !strcmp(b.model, "resnet18") || !strcmp(b.model, "resnet50");
        if (!b.image_size) b.image_size = big ? 64 : 28; /* short: a benchmark, not a training */
        run_stats st;
        if (cmd_train(&b, &st)) {
            printf("%-10s (not available)\n", b.model);
            lt_clear_error();
            continue;
        }
        printf("%-10s %8d %12.3f %12.1f %12.1f %10.0f\n", b.model, b.image_size, st.trace_s * 1e3 / (double)st.steps,
               st.exec_s * 1e3 / (double)st.steps, st.compile_s * 1e3,
               (double)(st.steps * st.batch) / st.wall_s);
        stats_free(&st);
    }
    return 0;
}
