/* Metric storage, lt_metric() and lt_metrics_reset(). */
#include "prof.h"

#include <math.h>
#include <time.h>

double g_counters[M_COUNT];
prof_timer g_timers[M_COUNT];
double g_prof_live_bytes;

static const struct {
    const char *name;
    enum prof_kind kind;
} infos[M_COUNT] = {
#define X(name, kind) {#name, kind},
    LT_METRICS(X)
#undef X
};

const char *prof_metric_name(enum prof_metric m) { return infos[m].name; }
enum prof_kind prof_metric_kind(enum prof_metric m) { return infos[m].kind; }

uint64_t prof_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void prof_sample(enum prof_metric m, double v) {
    prof_timer *t = &g_timers[m];
    t->window[t->count % PROF_WINDOW] = v;
    t->count++;
    t->total_ns += v;
    if (v > t->max_ns) t->max_ns = v;
}

void prof_timer_add(enum prof_metric m, uint64_t ns) { prof_sample(m, (double)ns); }

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest rank over the window. Sorting a copy costs O(W log W) per call,
 * which is fine: percentiles are read by reports, not by hot paths. */
double prof_percentile(enum prof_metric m, double p) {
    const prof_timer *t = &g_timers[m];
    size_t n = t->count < PROF_WINDOW ? (size_t)t->count : PROF_WINDOW;
    if (!n) return 0;
    static double tmp[PROF_WINDOW];
    memcpy(tmp, t->window, n * sizeof *tmp);
    qsort(tmp, n, sizeof *tmp, cmp_double);
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);
    if (rank < 1) rank = 1;
    if (rank > n) rank = n;
    return tmp[rank - 1];
}

double prof_value(enum prof_metric m) {
    switch (infos[m].kind) {
    case TIMER: return g_timers[m].total_ns * 1e-9;
    case DIST: return g_timers[m].total_ns;
    case COUNTER:
        /* Nodes still pending in the arena count too (they are counted at
         * the arena reset that drops them, see prof_arena_drop). */
        if (m == M_IrNodes) return g_counters[m] + (double)g_arena.nodes;
        return g_counters[m];
    case LEVEL: return g_counters[m];
    case GAUGE:
        if (m == M_ArenaBytes && (double)g_arena.bytes > g_counters[m]) return (double)g_arena.bytes;
        return g_counters[m];
    }
    return NAN;
}

/* "Name" gives the value (timers: total seconds); timers and distributions
 * also answer "Name.count", "Name.max" and "Name.p50" (any percentile),
 * timers in seconds. */
double lt_metric(const char *name) {
    if (!name) return err_set(LT_ERR_NULL, "lt_metric: argument 'name' is NULL"), NAN;
    const char *dot = strchr(name, '.');
    size_t len = dot ? (size_t)(dot - name) : strlen(name);
    for (int i = 0; i < M_COUNT; i++) {
        if (strlen(infos[i].name) != len || strncmp(infos[i].name, name, len)) continue;
        if (!dot) return prof_value((enum prof_metric)i);
        if (infos[i].kind != TIMER && infos[i].kind != DIST) return NAN;
        double unit = infos[i].kind == TIMER ? 1e-9 : 1;
        const char *q = dot + 1;
        if (!strcmp(q, "count")) return (double)g_timers[i].count;
        if (!strcmp(q, "max")) return g_timers[i].max_ns * unit;
        if (q[0] == 'p' && q[1]) {
            char *end;
            double p = strtod(q + 1, &end);
            if (!*end && p >= 0 && p <= 100) return prof_percentile((enum prof_metric)i, p) * unit;
        }
        return NAN;
    }
    return NAN;
}

void lt_metrics_reset(void) {
    double levels[M_COUNT];
    memcpy(levels, g_counters, sizeof levels);
    memset(g_counters, 0, sizeof g_counters);
    for (int i = 0; i < M_COUNT; i++)
        if (infos[i].kind == LEVEL) g_counters[i] = levels[i]; /* what exists now still exists */
    for (int i = 0; i < M_COUNT; i++) {
        g_timers[i].count = 0;
        g_timers[i].total_ns = 0;
        g_timers[i].max_ns = 0;
    }
    /* Pending nodes were created before the reset: start IrNodes below zero
     * by that many, so counting them at their arena reset nets out. */
    g_counters[M_IrNodes] = -(double)g_arena.nodes;
    g_counters[M_PeakBytes] = g_prof_live_bytes;
    prof_steps_reset();
    prof_reasons_reset();
}
