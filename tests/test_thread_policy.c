/* The thread-count policy of a busy machine (backend/cpu/threads.c), fed
 * made-up run times: nothing here is timed. Then the cpu backend run with
 * one thread fewer (its own oneDNN primitives) against all threads. */
#include "harness.h"
#include "train_small.h"
#include "backend/cpu/cpu.h"
#include "core/core.h"

static int never(int threads) {
    (void)threads;
    return 0;
}
static int always(int threads) {
    (void)threads;
    return 1;
}

/* Runs n runs: a run at hi threads takes t_hi, at fewer t_lo. Returns the
 * runs made at hi. */
static int drive(tpolicy *p, int n, double t_hi, double t_lo, int (*hint)(int)) {
    int at_hi = 0;
    for (int i = 0; i < n; i++) {
        int t = tpolicy_threads(p);
        at_hi += t == p->hi;
        tpolicy_record(p, t == p->hi ? t_hi : t_lo, hint);
    }
    return at_hi;
}

TEST(quiet_machine_never_probes) {
    tpolicy p;
    tpolicy_init(&p, 2);
    CHECK(p.hi == 2 && p.lo == 1);
    CHECK(drive(&p, 500, 0.100, 0.190, never) == 500);
    /* noise under the trigger (25% over the best) does not probe either */
    for (int i = 0; i < 300; i++) {
        CHECK(tpolicy_threads(&p) == 2);
        tpolicy_record(&p, i % 2 ? 0.118 : 0.102, never);
    }
}

TEST(one_thread_has_nothing_to_choose) {
    tpolicy p;
    tpolicy_init(&p, 1);
    CHECK(drive(&p, 100, 0.1, 0.1, always) == 100 && tpolicy_threads(&p) == 1);
    tpolicy_init(&p, 0);
    CHECK(tpolicy_threads(&p) == 1);
}

TEST(slowdown_moves_to_fewer_threads_and_back) {
    tpolicy p;
    tpolicy_init(&p, 2);
    CHECK(drive(&p, 20, 0.100, 0.190, never) == 20);
    /* a core gets busy: all threads 3.7x slower, one fewer 1.9x */
    int at_hi = drive(&p, 12, 0.370, 0.190, never);
    CHECK(tpolicy_threads(&p) == 1 && at_hi <= 8);
    /* while it stays busy, all threads are tried rarely: a losing probe doubles the wait */
    at_hi = drive(&p, 400, 0.370, 0.190, never);
    CHECK_MSG(at_hi >= 3 && at_hi <= 12, "probes at hi in 400 busy runs: %d", at_hi);
    CHECK(tpolicy_threads(&p) == 1 || p.probing);
    /* the core is free again: back to all threads within the longest wait */
    drive(&p, 70, 0.100, 0.190, never);
    CHECK(tpolicy_threads(&p) == 2);
    CHECK(drive(&p, 200, 0.100, 0.190, never) == 200);
}

TEST(busy_from_the_start_needs_the_hint) {
    tpolicy p;
    /* the first runs already slow: no better time to compare with; only the
     * contention hint makes a probe */
    tpolicy_init(&p, 2);
    CHECK(drive(&p, 100, 0.370, 0.190, NULL) == 100);
    tpolicy_init(&p, 2);
    drive(&p, 10, 0.370, 0.190, always);
    CHECK(tpolicy_threads(&p) == 1);
    /* a hint that is wrong (all threads still faster) costs a few probes, fewer and fewer */
    tpolicy_init(&p, 2);
    int at_hi = drive(&p, 400, 0.100, 0.190, always);
    CHECK_MSG(at_hi >= 400 - 12 && tpolicy_threads(&p) == 2, "runs at hi %d of 400", at_hi);
}

TEST(probe_needs_a_clear_gain) {
    tpolicy p;
    tpolicy_init(&p, 4);
    CHECK(p.lo == 3);
    /* one fewer only 5% faster: not worth a switch */
    CHECK(drive(&p, 200, 0.100, 0.095, always) >= 190);
    CHECK(tpolicy_threads(&p) == 4 || p.probing);
}

/* A small convolutional net trained with one thread fewer computes what
 * all threads compute (oneDNN's split may reorder sums: close, not equal). */
TEST(fewer_threads_same_training) {
    float loss[2][4];
    for (int pass = 0; pass < 2; pass++) {
        cpu_force_fewer_threads(pass);
        CHECK(train_small_losses(5, 4, loss[pass]) == 0);
    }
    cpu_force_fewer_threads(0);
    for (int s = 0; s < 4; s++)
        CHECK_MSG(fabsf(loss[0][s] - loss[1][s]) <= 1e-4f * (1 + fabsf(loss[0][s])), "step %d: %.7f vs %.7f", s,
                  loss[0][s], loss[1][s]);
}

int main(void) {
    RUN(quiet_machine_never_probes);
    RUN(one_thread_has_nothing_to_choose);
    RUN(slowdown_moves_to_fewer_threads_and_back);
    RUN(busy_from_the_start_needs_the_hint);
    RUN(probe_needs_a_clear_gain);
    RUN(fewer_threads_same_training);
    return h_report();
}
