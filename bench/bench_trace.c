/* Trace-overhead benchmark (issues 2 and 3): ns per traced op, no sync
 * inside the timed loop, for chains of 10, 1,000 and 100,000 ops (short
 * chains are repeated so that each cell times enough work):
 *   lt_lerp (new handle each op, freed), lt_lerp_ in place, lt_add, and
 *   lt_lerp_ through a slice (depth 1) and a select of a transposed slice,
 *   and through a new slice each op (made and freed: x[0:32].lerp_).
 * `bench_trace q` is a quick run (3 repetitions). */
#include "trace_loops.h"

#include <stdio.h>

int main(int argc, char **argv) {
    (void)argv;
    int reps = argc > 1 ? 3 : 11;
    printf("trace cost, ns per op (median of %d), chain length in columns\n", reps);
    printf("%-36s %10s %10s %10s\n", "op", "10", "1000", "100000");
    static const int chains[3] = {10, 1000, 100000};
    for (int k = 0; k < TRACE_NKIND; k++) {
        printf("%-36s", trace_kind_names[k]);
        for (int c = 0; c < 3; c++) {
            int inner = chains[c] < 1000 ? 200 : 1;
            double tot = 0;
            for (int j = 0; j < inner; j++)
                tot += trace_ns_per_op((enum trace_kind)k, chains[c], chains[c] == 100000 ? (reps > 3 ? 5 : 1) : reps);
            printf(" %10.1f", tot / inner);
        }
        printf("\n");
    }
    if (lt_error()) {
        fprintf(stderr, "bench_trace: %s\n", lt_error_message());
        return 1;
    }
    return 0;
}
