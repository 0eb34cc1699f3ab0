/* prof: counters and timers (DESIGN 8). Counters are array slots indexed by
 * an enum, so counting on a hot path is one add. */
#ifndef LT_PROF_H
#define LT_PROF_H

#include "../core/core.h"

/* name (as lt_metric spells it), kind: COUNTER or TIMER (nanoseconds) */
#define LT_METRICS(X)                   \
    X(MarkStep, COUNTER)                \
    X(CachedCompile, COUNTER)           \
    X(UncachedCompile, COUNTER)         \
    X(CompileTime, TIMER)               \
    X(ExecuteTime, TIMER)               \
    X(SyncTime, TIMER)                  \
    X(TraceTime, TIMER)                 \
    X(TensorsGraphSize, COUNTER)        \
    X(InputOutputAliasCount, COUNTER)   \
    X(TransferFromDeviceTime, TIMER)    \
    X(TransferToDeviceTime, TIMER)      \
    X(OpsTraced, COUNTER)               \
    X(IrNodes, COUNTER)                 \
    X(FusedKernels, COUNTER)            \
    X(FallbackOps, COUNTER)             \
    X(AutoSync, COUNTER)                \
    X(PeakBytes, GAUGE)                 \
    X(ArenaBytes, GAUGE)                \
    X(CacheEvictions, COUNTER)

enum prof_kind { COUNTER, TIMER, GAUGE };
enum prof_metric {
#define X(name, kind) M_##name,
    LT_METRICS(X)
#undef X
    M_COUNT
};

typedef struct prof_timer {
    uint64_t count;
    double total_ns;
    double max_ns;
} prof_timer;

extern double g_counters[M_COUNT];
extern prof_timer g_timers[M_COUNT];

static inline void prof_add(enum prof_metric m, double v) { g_counters[m] += v; }
static inline void prof_gauge_max(enum prof_metric m, double v) {
    if (v > g_counters[m]) g_counters[m] = v;
}
uint64_t prof_now_ns(void);
void prof_timer_add(enum prof_metric m, uint64_t ns);

#endif
