/* The metrics report (lt_metrics_report, LT_METRICS=1 at exit), and the
 * initialization and exit of the prof layer. */
#include "prof.h"

#include <stdarg.h>

static int inited;

void prof_init(void) {
    if (inited) return;
    inited = 1;
    prof_steps_init();
    if (g_config.trace_file) prof_trace_open(g_config.trace_file);
}

void prof_exit(void) {
    if (g_config.metrics_at_exit) {
        fputs(prof_report(), stderr);
        /* what a program forgot to free (or to create inside a scope) */
        fprintf(stderr, "lazytensor: %.0f tensor handles still alive at exit%s\n", g_counters[M_LiveTensors],
                g_counters[M_LiveTensors] ? " (lt_free them, or create them inside lt_scope_begin/lt_scope_end)" : "");
    }
    prof_trace_close();
}

static char *buf;
static size_t len, cap;

static void put(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void put(const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(buf ? buf + len : NULL, buf ? cap - len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) return;
        if (buf && len + (size_t)n < cap) {
            len += (size_t)n;
            return;
        }
        size_t c = cap ? cap : 4096;
        while (c <= len + (size_t)n) c *= 2;
        /* Plain realloc, not core_realloc: the report must work even while
         * a test injects allocation failures into the runtime. */
        char *q = realloc(buf, c);
        if (!q) return;
        buf = q;
        cap = c;
    }
}

/* Durations with a unit a person reads at a glance. */
static const char *dur(char *s, size_t n, double ns) {
    if (ns < 1e3) snprintf(s, n, "%.0f ns", ns);
    else if (ns < 1e6) snprintf(s, n, "%.3f us", ns / 1e3);
    else if (ns < 1e9) snprintf(s, n, "%.3f ms", ns / 1e6);
    else snprintf(s, n, "%.3f s", ns / 1e9);
    return s;
}
#define DUR(ns) dur((char[32]){0}, 32, (ns))

static void stats_row(enum prof_metric m) {
    const prof_timer *t = &g_timers[m];
    double p50 = prof_percentile(m, 50), p90 = prof_percentile(m, 90), p99 = prof_percentile(m, 99);
    if (prof_metric_kind(m) == TIMER)
        put("  %-24s %8llu %12s %12s %12s %12s %12s\n", prof_metric_name(m), (unsigned long long)t->count,
            DUR(t->total_ns), DUR(p50), DUR(p90), DUR(p99), DUR(t->max_ns));
    else
        put("  %-24s %8llu %12.0f %12.0f %12.0f %12.0f %12.0f\n", prof_metric_name(m),
            (unsigned long long)t->count, t->total_ns, p50, p90, p99, t->max_ns);
}

const char *prof_report(void) {
    len = 0;
    if (buf) buf[0] = 0;
    put("lazytensor metrics\n");
    put("counters:\n");
    for (int m = 0; m < M_COUNT; m++)
        if (prof_metric_kind((enum prof_metric)m) == COUNTER)
            put("  %-24s %14.0f\n", prof_metric_name((enum prof_metric)m), prof_value((enum prof_metric)m));
    put("levels (now):\n");
    for (int m = 0; m < M_COUNT; m++)
        if (prof_metric_kind((enum prof_metric)m) == LEVEL)
            put("  %-24s %14.0f\n", prof_metric_name((enum prof_metric)m), prof_value((enum prof_metric)m));
    put("gauges (high-water marks, bytes):\n");
    for (int m = 0; m < M_COUNT; m++)
        if (prof_metric_kind((enum prof_metric)m) == GAUGE)
            put("  %-24s %14.0f\n", prof_metric_name((enum prof_metric)m), prof_value((enum prof_metric)m));
    put("timers and distributions (percentiles over the last %d samples):\n", PROF_WINDOW);
    put("  %-24s %8s %12s %12s %12s %12s %12s\n", "", "count", "total", "p50", "p90", "p99", "max");
    for (int m = 0; m < M_COUNT; m++)
        if (prof_metric_kind((enum prof_metric)m) == TIMER) stats_row((enum prof_metric)m);
    for (int m = 0; m < M_COUNT; m++)
        if (prof_metric_kind((enum prof_metric)m) == DIST) stats_row((enum prof_metric)m);
    int n = prof_reason_count();
    put("uncached compile reasons (%.0f compiles; the last %d, oldest first):\n", g_counters[M_UncachedCompile], n);
    for (int i = n - 1; i >= 0; i--) {
        uint64_t step, seq;
        const char *r = prof_reason_get(i, &step, &seq);
        put("  #%llu step %llu: %s\n", (unsigned long long)seq, (unsigned long long)step, r);
    }
    return buf ? buf : "";
}
