/* Metric storage and lt_metric(). */
#include "prof.h"

#include <math.h>
#include <time.h>

double g_counters[M_COUNT];
prof_timer g_timers[M_COUNT];

static const struct {
    const char *name;
    int kind;
} infos[M_COUNT] = {
#define X(name, kind) {#name, kind},
    LT_METRICS(X)
#undef X
};

uint64_t prof_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void prof_timer_add(enum prof_metric m, uint64_t ns) {
    prof_timer *t = &g_timers[m];
    t->count++;
    t->total_ns += (double)ns;
    if ((double)ns > t->max_ns) t->max_ns = (double)ns;
}

/* Timers read as total seconds. */
double lt_metric(const char *name) {
    if (!name) return NAN;
    for (int i = 0; i < M_COUNT; i++) {
        if (strcmp(infos[i].name, name)) continue;
        if (infos[i].kind == TIMER) return g_timers[i].total_ns * 1e-9;
        return g_counters[i];
    }
    return NAN;
}

void lt_metrics_reset(void) {
    memset(g_counters, 0, sizeof g_counters);
    memset(g_timers, 0, sizeof g_timers);
}
