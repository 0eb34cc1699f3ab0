/* The command-line program. Until the training issue lands, `demo` traces a
 * small computation in a loop, syncs it, and prints what happened. */
#include "lazytensor.h"

#include <stdio.h>
#include <string.h>

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
        lt_free(d);
        lt_free(sq);
        lt_free(loss);
    }
    printf("compiles: %.0f uncached, %.0f cached\n", lt_metric("UncachedCompile"), lt_metric("CachedCompile"));
    lt_free(w);
    lt_free(target);
    if (lt_error()) {
        fprintf(stderr, "error: %s\n", lt_error_message());
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "demo")) return demo();
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        printf("usage: lazytensor demo\n");
        return 0;
    }
    fprintf(stderr, "lazytensor: unknown command '%s' (try --help)\n", argv[1]);
    return 2;
}
