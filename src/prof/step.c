/* Step bookkeeping at lt_mark_step: TraceTime without a clock read per op,
 * the step/trace/sync spans of the timeline, and the per-step count of
 * uncached compiles that feeds the recompile warning. */
#include "prof.h"

static uint64_t last_end;       /* end of the previous step (or prof_init) */
static uint64_t sync_since;     /* ns spent in syncs since last_end */
static uint64_t step_no;        /* steps since start or lt_metrics_reset */
static double uncached_before;  /* UncachedCompile at the end of the previous step */

void prof_steps_init(void) { last_end = prof_now_ns(); }

void prof_step_begin(void) {
    uint64_t now = prof_now_ns();
    if (!last_end) last_end = now;
    uint64_t wall = now - last_end;
    prof_timer_add(M_TraceTime, wall > sync_since ? wall - sync_since : 0);
    if (LT_UNLIKELY(g_prof_trace)) prof_span_emit(TRACK_RUNTIME, "trace", last_end, now, NULL);
}

void prof_step_end(void) {
    uint64_t now = prof_now_ns();
    if (LT_UNLIKELY(g_prof_trace)) {
        char args[48];
        snprintf(args, sizeof args, "\"step\":%llu", (unsigned long long)step_no);
        prof_span_emit(TRACK_RUNTIME, "step", last_end, now, args);
    }
    last_end = now;
    sync_since = 0;
    double u = g_counters[M_UncachedCompile];
    prof_reasons_step(step_no, u - uncached_before);
    uncached_before = u;
    step_no++;
}

void prof_sync_done(uint64_t t0, uint64_t t1) {
    sync_since += t1 - t0;
    if (LT_UNLIKELY(g_prof_trace)) prof_span_emit(TRACK_RUNTIME, "sync", t0, t1, NULL);
}

void prof_arena_drop(uint64_t nodes, size_t bytes) {
    g_counters[M_IrNodes] += (double)nodes;
    prof_gauge_max(M_ArenaBytes, (double)bytes);
}

void prof_steps_reset(void) {
    step_no = 0;
    uncached_before = 0;
}
