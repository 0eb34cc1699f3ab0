/* The thread count on a busy machine: each executable runs with all its
 * threads (hi) or one fewer (lo), whichever its own recent runs say is
 * faster.
 *
 * Why: every parallel region of a step waits for its slowest thread. When
 * another process keeps one core busy, the thread that shares that core
 * gets half of it in scheduler slices of milliseconds, and the regions
 * (thousands per step, most shorter than a slice) wait for it: ResNet-20
 * with 2 threads ran 3.7x slower beside one busy loop, where one thread
 * alone on the free core costs about the parallel speed-up (1.6-1.9x).
 * Passive waiting or a dynamic schedule does not help: the work of the
 * late thread is still waited for at every barrier, and oneDNN's kernels
 * split their work statically when the primitive is made.
 *
 * How: after two warm-up runs (compile, first touches) each run's time is
 * recorded for its count. At hi, when the median of the last three runs is
 * 25% above the best median seen, or when /proc/stat says more threads
 * want to run than there are cores (the contention hint), one run probes
 * lo; lo is kept if that run is 10% faster than the recent median at hi.
 * At lo, a run probes hi now and then, so the threads come back when the
 * machine is free. A probe that loses doubles the wait before the next
 * (4 runs, up to 64). On a quiet machine nothing triggers: no probe runs. */
#include "cpu.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define WARMUP 2
#define BACKOFF0 4
#define BACKOFF_MAX 64
#define SLOWER 1.25 /* at hi: recent median over the best that makes a probe */
#define GAIN 0.9    /* a probe wins when it takes less than this times the recent median */

void tpolicy_init(tpolicy *p, int max_threads) {
    memset(p, 0, sizeof *p);
    p->hi = max_threads > 1 ? max_threads : 1;
    p->lo = p->hi > 1 ? p->hi - 1 : 1;
    p->use = p->hi;
    p->backoff = BACKOFF0;
    p->best[0] = p->best[1] = -1;
}

int tpolicy_threads(const tpolicy *p) {
    if (!p->probing) return p->use;
    return p->use == p->hi ? p->lo : p->hi;
}

static double median3(const tpolicy *p, int c) {
    const double *r = p->recent[c];
    int n = p->nrecent[c] < 3 ? p->nrecent[c] : 3;
    if (n == 1) return r[0];
    if (n == 2) return (r[0] + r[1]) / 2;
    double a = r[0], b = r[1], d = r[2];
    return a > b ? (b > d ? b : a > d ? d : a) : (a > d ? a : b > d ? d : b);
}

static void push(tpolicy *p, int c, double s) {
    p->recent[c][p->nrecent[c] % 3] = s;
    p->nrecent[c]++;
    double m = median3(p, c);
    if (p->nrecent[c] >= 3 && (p->best[c] < 0 || m < p->best[c])) p->best[c] = m;
}

void tpolicy_record(tpolicy *p, double seconds, int (*contended)(int threads)) {
    int ran = tpolicy_threads(p), c = ran == p->hi ? 0 : 1;
    if (p->hi < 2 || ++p->runs <= WARMUP) return;
    if (p->probing) {
        p->probing = 0;
        p->since = 0;
        if (seconds < GAIN * median3(p, 1 - c)) { /* the other count wins: start its history afresh */
            p->use = ran;
            p->nrecent[c] = 0;
            p->backoff = BACKOFF0;
        } else if (p->backoff < BACKOFF_MAX) {
            p->backoff *= 2;
        }
        push(p, c, seconds);
        return;
    }
    push(p, c, seconds);
    if (++p->since < p->backoff || p->nrecent[c] < 3) return;
    if (c == 1 || median3(p, 0) > SLOWER * p->best[0] || (contended && contended(p->hi))) p->probing = 1;
}

/* More threads want to run than there are cores, ours included (the
 * calling thread is one of the runnable ones /proc/stat counts): a hint
 * only, the probe decides. 0 where /proc/stat cannot say. */
int cpu_contended(int threads) {
#if defined(__linux__) && defined(_OPENMP)
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return 0;
    char line[256];
    long running = -1;
    while (running < 0 && fgets(line, sizeof line, f))
        if (!strncmp(line, "procs_running ", 14)) running = strtol(line + 14, NULL, 10);
    fclose(f);
    return running > 0 && running - 1 + threads > omp_get_num_procs();
#else
    (void)threads;
    return 0;
#endif
}
