/* prof: counters, timers, the Chrome trace, compile reasons (DESIGN 8).
 * Counters are array slots indexed by an enum, so counting on a hot path is
 * one add. Everything else here runs per sync, per compile or per kernel,
 * never per traced op, and every switch is read once in prof_init. */
#ifndef LT_PROF_H
#define LT_PROF_H

#include "../core/core.h"

/* name (as lt_metric spells it), kind:
 *   COUNTER  a running sum
 *   TIMER    nanosecond samples: count, total, max, percentiles
 *   DIST     unitless samples (graph sizes): same statistics as TIMER
 *   GAUGE    a high-water mark
 *   LEVEL    how many exist now (LiveTensors: handles); lt_metrics_reset keeps it */
#define LT_METRICS(X)                   \
    X(MarkStep, COUNTER)                \
    X(CachedCompile, COUNTER)           \
    X(UncachedCompile, COUNTER)         \
    X(CompileTime, TIMER)               \
    X(ExecuteTime, TIMER)               \
    X(SyncTime, TIMER)                  \
    X(TraceTime, TIMER)                 \
    X(TensorsGraphSize, DIST)           \
    X(InputOutputAliasCount, COUNTER)   \
    X(TransferFromDeviceTime, TIMER)    \
    X(TransferToDeviceTime, TIMER)      \
    X(OpsTraced, COUNTER)               \
    X(IrNodes, COUNTER)                 \
    X(FusedKernels, COUNTER)            \
    X(FallbackOps, COUNTER)             \
    X(FewerThreadRuns, COUNTER)         \
    X(SplitWeightGrads, COUNTER)        \
    X(WinogradConvs, COUNTER)           \
    X(WinogradRedone, COUNTER)          \
    X(AutoSync, COUNTER)                \
    X(PeakBytes, GAUGE)                 \
    X(ArenaBytes, GAUGE)                \
    X(LiveTensors, LEVEL)               \
    X(CacheEvictions, COUNTER)          \
    X(RecompileWarnings, COUNTER)       \
    X(AllReduceCount, COUNTER)          \
    X(AllReduceBytes, COUNTER)          \
    X(AllReduceTime, TIMER)             \
    X(CommExposedTime, TIMER)           \
    X(CommWireBytes, COUNTER)           \
    X(ExecutedFlops, COUNTER)

enum prof_kind { COUNTER, TIMER, DIST, GAUGE, LEVEL };
enum prof_metric {
#define X(name, kind) M_##name,
    LT_METRICS(X)
#undef X
    M_COUNT
};

/* Percentiles are taken over the most recent PROF_WINDOW samples, as
 * PyTorch/XLA's metrics do: bounded memory, and they follow the steady state
 * rather than the warm-up. */
#define PROF_WINDOW 1024
typedef struct prof_timer {
    uint64_t count;
    double total_ns;
    double max_ns;
    double window[PROF_WINDOW]; /* ring: sample i lives at i % PROF_WINDOW */
} prof_timer;

extern double g_counters[M_COUNT];
extern prof_timer g_timers[M_COUNT];

static inline void prof_add(enum prof_metric m, double v) { g_counters[m] += v; }
static inline void prof_gauge_max(enum prof_metric m, double v) {
    if (v > g_counters[m]) g_counters[m] = v;
}
uint64_t prof_now_ns(void);
void prof_timer_add(enum prof_metric m, uint64_t ns);
void prof_sample(enum prof_metric m, double v); /* DIST (also used by prof_timer_add) */
const char *prof_metric_name(enum prof_metric m);
enum prof_kind prof_metric_kind(enum prof_metric m);
/* p in [0, 100] over the sample window; 0 if no samples. */
double prof_percentile(enum prof_metric m, double p);
/* Current value of any metric as lt_metric reports it (timers in seconds). */
double prof_value(enum prof_metric m);

/* Live device-buffer bytes, for PeakBytes. Called per buffer, not per op. */
extern double g_prof_live_bytes;
static inline void prof_bytes(double delta) {
    g_prof_live_bytes += delta;
    if (g_prof_live_bytes > g_counters[M_PeakBytes]) g_counters[M_PeakBytes] = g_prof_live_bytes;
}

/* ---- initialization and exit (report.c) ---- */
/* Reads the switches from g_config (core_init must have run). Idempotent. */
void prof_init(void);
/* At process exit: prints the report if LT_METRICS=1, closes the trace file. */
void prof_exit(void);
/* The whole report as text; borrowed, valid until the next call. */
const char *prof_report(void);

/* ---- Chrome trace (trace.c) ---- */
/* g_prof_trace: LT_TRACE_FILE is open. g_prof_kernels: and LT_TRACE_KERNELS.
 * Callers test the flag before reading a clock, so a switch that is off
 * costs one predictable branch and no clock read. */
extern int g_prof_trace, g_prof_kernels;
/* Collectives (src/dist) get tracks TRACK_COMM .. TRACK_COMM + TRACK_COMM_N - 1,
 * one per outstanding request, so spans that overlap in time never share one. */
enum prof_track { TRACK_RUNTIME = 1, TRACK_USER = 2, TRACK_COMM = 16 };
#define TRACK_COMM_N 8
int prof_trace_open(const char *path);
void prof_trace_close(void);
/* One complete span [t0, t1] (prof_now_ns clock) on a track. `name` is
 * JSON-escaped; `args` is NULL or a ready JSON object body ("\"n\": 3"). */
void prof_span_emit(enum prof_track track, const char *name, uint64_t t0, uint64_t t1, const char *args);
static inline uint64_t prof_trace_now(void) { return LT_UNLIKELY(g_prof_trace) ? prof_now_ns() : 0; }
static inline void prof_span(const char *name, uint64_t t0) {
    if (LT_UNLIKELY(g_prof_trace)) prof_span_emit(TRACK_RUNTIME, name, t0, prof_now_ns(), NULL);
}
/* For backends, around each kernel. */
static inline uint64_t prof_kernel_begin(void) { return LT_UNLIKELY(g_prof_kernels) ? prof_now_ns() : 0; }
/* args: NULL or a JSON object body naming the kernel's node and size, so a
 * slow span can be traced back to its graph node (LT_DUMP_IR numbers). */
static inline void prof_kernel_end(const char *op_name, uint64_t t0, const char *args) {
    if (LT_UNLIKELY(g_prof_kernels)) prof_span_emit(TRACK_RUNTIME, op_name, t0, prof_now_ns(), args);
}
/* User spans (lt_trace_begin/lt_trace_end): a stack, emitted on TRACK_USER
 * so they may straddle steps without breaking the runtime track's nesting. */
void prof_user_begin(const char *name);
void prof_user_end(void);

/* ---- steps (step.c) ---- */
/* lt_mark_step calls prof_step_begin before its sync and prof_step_end
 * after. TraceTime is measured here, not per op: the wall time from the end
 * of the previous step to the start of this one, minus the time spent in
 * syncs in between (lt_to_host). It includes whatever the program did
 * between ops, which is the documented price of not reading a clock per op. */
void prof_steps_init(void); /* from prof_init: the first step starts now */
void prof_step_begin(void);
void prof_step_end(void);
/* Every sync (api_sync_storages) reports its span; and every arena reset
 * the nodes and bytes it drops (IrNodes, ArenaBytes). */
void prof_sync_done(uint64_t t0, uint64_t t1);
void prof_arena_drop(uint64_t nodes, size_t bytes);
void prof_steps_reset(void);

/* ---- why it recompiled (reasons.c) ---- */
/* Records one uncached compile's reason (a line without newline). */
void prof_compile_reason(const char *reason);
/* Recompile warning: more than PROF_RECOMPILE_MAX uncached compiles in the
 * last PROF_RECOMPILE_WINDOW steps, once the first window of steps (warm-up)
 * has passed. Printed at most once per window. */
#define PROF_RECOMPILE_WINDOW 20
#define PROF_RECOMPILE_MAX 3
void prof_reasons_step(uint64_t step, double uncached_this_step);
int prof_reason_count(void);
/* i-th most recent kept reason (0 = newest), NULL if not kept. */
const char *prof_reason_get(int i, uint64_t *step, uint64_t *seq);
void prof_reasons_reset(void);

#endif
