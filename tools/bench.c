/* `lazytensor bench`: the trace-overhead table of bench/bench_trace.c (same
 * loops: ns per traced op, no sync inside the timed loop, median of REPS),
 * then a short training run per model on fake data. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

enum kind { LERP, LERP_, ADD, VIEW1, VIEW3, NKIND };

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double trace_ns(enum kind k, int chain, int reps) {
    int64_t shape[2] = {2, 3}, big[2] = {64, 32}, g2[2] = {32, 32}, g1[1] = {32};
    double t[16];
    for (int r = 0; r < reps; r++) {
        lt_tensor *a = lt_randn(LT_F32, 2, shape), *b = lt_randn(LT_F32, 2, shape);
        lt_tensor *x = lt_randn(LT_F32, 2, big), *v = NULL, *g = NULL;
        if (k == VIEW1) {
            v = lt_slice(x, 0, 0, 32, 1);
            g = lt_randn(LT_F32, 2, g2);
        } else if (k == VIEW3) {
            lt_tensor *s = lt_slice(x, 0, 0, 32, 1), *tt = lt_transpose(s, 0, 1);
            v = lt_select(tt, 0, 3);
            g = lt_randn(LT_F32, 1, g1);
            lt_free(s), lt_free(tt);
        }
        lt_mark_step();
        double t0 = cli_now();
        for (int i = 0; i < chain; i++) {
            switch (k) {
            case LERP: lt_free(lt_lerp(a, b, 0.5)); break;
            case LERP_: lt_lerp_(a, b, 0.1); break;
            case ADD: lt_free(lt_add(a, b)); break;
            case VIEW1: case VIEW3: lt_lerp_(v, g, 0.1); break;
            case NKIND: break;
            }
        }
        t[r] = (cli_now() - t0) * 1e9 / chain;
        lt_mark_step(); /* untimed: runs the chain and resets the arena */
        lt_free(a), lt_free(b), lt_free(x), lt_free(v), lt_free(g);
    }
    qsort(t, (size_t)reps, sizeof *t, cmp);
    return t[reps / 2];
}

int cmd_bench(const cli_opts *o) {
    static const char *names[NKIND] = {"lt_lerp (out-of-place)", "lt_lerp_ (plain, in place)",
                                       "lt_add (out-of-place)", "lt_lerp_ through a slice", "lt_lerp_ view depth 3"};
    static const int chains[3] = {10, 1000, 100000};
    int reps = 5;
    printf("trace cost, ns per op (median of %d), chain length in columns\n%-30s %10s %10s %10s\n", reps, "op", "10",
           "1000", "100000");
    for (int k = 0; k < NKIND; k++) {
        printf("%-30s", names[k]);
        for (int c = 0; c < 3; c++) printf(" %10.1f", trace_ns((enum kind)k, chains[c], reps));
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
