/* Why it recompiled: a bounded log of one-line reasons, one per uncached
 * compile (exec/explain.c writes them), and the warning printed when
 * compiles keep happening after warm-up. */
#include "prof.h"

#define KEEP 64 /* the report lists the most recent KEEP reasons */
static struct {
    char text[320];
    uint64_t step, seq;
} ring[KEEP];
static uint64_t nreasons;   /* recorded since start or reset */
static uint64_t cur_step;   /* the step being traced now */

static double window[PROF_RECOMPILE_WINDOW]; /* uncached compiles per recent step */
static uint64_t last_warn;                    /* step of the last warning + 1; 0 = none */

void prof_compile_reason(const char *reason) {
    int i = (int)(nreasons % KEEP);
    snprintf(ring[i].text, sizeof ring[i].text, "%s", reason);
    ring[i].step = cur_step;
    ring[i].seq = ++nreasons;
}

int prof_reason_count(void) { return nreasons < KEEP ? (int)nreasons : KEEP; }

const char *prof_reason_get(int i, uint64_t *step, uint64_t *seq) {
    if (i < 0 || i >= prof_reason_count()) return NULL;
    int k = (int)((nreasons - 1 - (uint64_t)i) % KEEP);
    if (step) *step = ring[k].step;
    if (seq) *seq = ring[k].seq;
    return ring[k].text;
}

void prof_reasons_step(uint64_t step, double uncached_this_step) {
    window[step % PROF_RECOMPILE_WINDOW] = uncached_this_step;
    cur_step = step + 1;
    /* The first window is warm-up: compiling the training step, then the
     * evaluation graph, is expected there. */
    if (step < PROF_RECOMPILE_WINDOW) return;
    /* Eager mode syncs after every op, so each distinct op is its own graph:
     * many compiles are what it is for, not a sign of a changing shape. */
    if (g_config.eager) return;
    if (last_warn && step + 1 - last_warn < PROF_RECOMPILE_WINDOW) return;
    double sum = 0;
    for (int i = 0; i < PROF_RECOMPILE_WINDOW; i++) sum += window[i];
    if (sum <= PROF_RECOMPILE_MAX) return;
    last_warn = step + 1;
    prof_add(M_RecompileWarnings, 1);
    /* Printed the 1st, 2nd, 4th, 8th... time: a program that recompiles on
     * purpose (a fuzzer, a test) gets a few lines, not one per window. */
    uint64_t nwarn = (uint64_t)g_counters[M_RecompileWarnings];
    if (nwarn & (nwarn - 1)) return;
    const char *latest = prof_reason_get(0, NULL, NULL);
    fprintf(stderr,
            "lazytensor: warning: %.0f uncached compiles in the last %d steps (at step %llu); latest: %s\n"
            "lazytensor: (a shape, dtype or structure keeps changing; LT_METRICS=1 lists every reason)\n",
            sum, PROF_RECOMPILE_WINDOW, (unsigned long long)step, latest ? latest : "(none recorded)");
}

void prof_reasons_reset(void) {
    nreasons = 0;
    cur_step = 0;
    last_warn = 0;
    memset(window, 0, sizeof window);
}
