/* Trace-overhead benchmark: ns per traced op, no sync inside the timed loop.
 * Each loop runs CHAIN ops, then one lt_mark_step (untimed) resets the
 * arena; the median of REPS repetitions is printed.
 *   lerp      out = lt_lerp(a, b, 0.5)      (new handle each op, freed)
 *   lerp_     lt_lerp_(x, g, 0.1)           (in place on a plain tensor)
 *   add       out = lt_add(a, b)
 *   view lerp_ at depth 1 (a slice) and depth 3 (select of transpose of slice),
 *   for chains of 10, 1,000 and 100,000 ops. */
#include "lazytensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum kind { LERP, LERP_, ADD, VIEW1, VIEW3 };

static double run(enum kind k, int chain, int reps) {
    int64_t shape[2] = {2, 3}, big[2] = {64, 32};
    double *t = malloc(sizeof(double) * (size_t)reps);
    for (int r = 0; r < reps; r++) {
        lt_tensor *a = lt_randn(LT_F32, 2, shape), *b = lt_randn(LT_F32, 2, shape);
        lt_tensor *x = lt_randn(LT_F32, 2, big), *v = NULL, *g = NULL;
        if (k == VIEW1) {
            v = lt_slice(x, 0, 0, 32, 1);
            int64_t gs[2] = {32, 32};
            g = lt_randn(LT_F32, 2, gs);
        } else if (k == VIEW3) {
            lt_tensor *s = lt_slice(x, 0, 0, 32, 1), *tt = lt_transpose(s, 0, 1);
            v = lt_select(tt, 0, 3);
            int64_t gs[1] = {32};
            g = lt_randn(LT_F32, 1, gs);
            lt_free(s);
            lt_free(tt);
        }
        lt_mark_step();
        double t0 = now_ns();
        for (int i = 0; i < chain; i++) {
            switch (k) {
            case LERP: lt_free(lt_lerp(a, b, 0.5)); break;
            case LERP_: lt_lerp_(a, b, 0.1); break;
            case ADD: lt_free(lt_add(a, b)); break;
            case VIEW1: case VIEW3: lt_lerp_(v, g, 0.1); break;
            }
        }
        t[r] = (now_ns() - t0) / chain;
        lt_mark_step();
        lt_free(a);
        lt_free(b);
        lt_free(x);
        lt_free(v);
        lt_free(g);
    }
    qsort(t, (size_t)reps, sizeof *t, cmp);
    double med = t[reps / 2];
    free(t);
    if (lt_error()) {
        fprintf(stderr, "error: %s\n", lt_error_message());
        exit(1);
    }
    return med;
}

int main(int argc, char **argv) {
    int quick = argc > 1;
    (void)argv;
    int reps = quick ? 3 : 11;
    printf("trace cost, ns per op (median of %d), chain length in columns\n", reps);
    printf("%-34s %10s %10s %10s\n", "op", "10", "1000", "100000");
    const char *names[] = {"lt_lerp (out-of-place)", "lt_lerp_ (plain, in place)", "lt_add (out-of-place)",
                           "lt_lerp_ through slice (depth 1)", "lt_lerp_ select(t(slice)) (depth 3)"};
    for (int k = 0; k < 5; k++) {
        printf("%-34s", names[k]);
        int chains[3] = {10, 1000, 100000};
        for (int c = 0; c < 3; c++) {
            int inner = chains[c] < 1000 ? 200 : 1;
            double tot = 0;
            for (int j = 0; j < inner; j++) tot += run((enum kind)k, chains[c], chains[c] == 100000 ? (quick ? 1 : 5) : reps);
            printf(" %10.1f", tot / inner);
        }
        printf("\n");
    }
    return 0;
}
