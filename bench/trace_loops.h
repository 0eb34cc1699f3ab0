/* The trace-overhead loops, shared by bench/bench_trace.c and the CLI's
 * `lazytensor bench`: ns per traced op, no sync inside the timed loop; each
 * repetition traces a chain of CHAIN ops, then syncs untimed (which also
 * resets the arena). Returns the median of `reps` (at most 64). Header-only
 * on purpose: both programs compile it in, neither links the other. */
#ifndef LT_TRACE_LOOPS_H
#define LT_TRACE_LOOPS_H

#include "lazytensor.h"

#include "bench_time.h"

enum trace_kind { TRACE_LERP, TRACE_LERP_, TRACE_ADD, TRACE_VIEW1, TRACE_VIEW3, TRACE_VIEW_NEW, TRACE_NKIND };

static const char *const trace_kind_names[TRACE_NKIND] = {
    "lt_lerp (out-of-place)", "lt_lerp_ (plain, in place)", "lt_add (out-of-place)",
    "lt_lerp_ through slice (depth 1)", "lt_lerp_ select(t(slice)) (depth 3)",
    "slice + lt_lerp_ + free (x[0:32].lerp_)"};

static double trace_ns_per_op(enum trace_kind k, int chain, int reps) {
    int64_t shape[2] = {2, 3}, big[2] = {64, 32}, g2[2] = {32, 32}, g1[1] = {32};
    double t[64];
    if (reps > 64) reps = 64;
    for (int r = 0; r < reps; r++) {
        lt_tensor *a = lt_randn(LT_F32, 2, shape), *b = lt_randn(LT_F32, 2, shape);
        lt_tensor *x = lt_randn(LT_F32, 2, big), *v = NULL, *g = NULL;
        if (k == TRACE_VIEW1) {
            v = lt_slice(x, 0, 0, 32, 1);
            g = lt_randn(LT_F32, 2, g2);
        } else if (k == TRACE_VIEW_NEW) {
            g = lt_randn(LT_F32, 2, g2);
        } else if (k == TRACE_VIEW3) {
            lt_tensor *s = lt_slice(x, 0, 0, 32, 1), *tt = lt_transpose(s, 0, 1);
            v = lt_select(tt, 0, 3);
            g = lt_randn(LT_F32, 1, g1);
            lt_free(s);
            lt_free(tt);
        }
        lt_mark_step();
        double t0 = bench_now_ns();
        for (int i = 0; i < chain; i++) {
            switch (k) {
            case TRACE_LERP: lt_free(lt_lerp(a, b, 0.5)); break;
            case TRACE_LERP_: lt_lerp_(a, b, 0.1); break;
            case TRACE_ADD: lt_free(lt_add(a, b)); break;
            case TRACE_VIEW1: case TRACE_VIEW3: lt_lerp_(v, g, 0.1); break;
            case TRACE_VIEW_NEW: { /* the seed's spelling: a new view each op */
                lt_tensor *s = lt_slice(x, 0, 0, 32, 1);
                lt_lerp_(s, g, 0.1);
                lt_free(s);
                break;
            }
            case TRACE_NKIND: break;
            }
        }
        t[r] = (bench_now_ns() - t0) / chain;
        lt_mark_step();
        lt_free(a);
        lt_free(b);
        lt_free(x);
        lt_free(v);
        lt_free(g);
    }
    return bench_median(t, reps);
}

#endif
