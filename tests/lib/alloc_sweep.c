#include "alloc_sweep.h"

#include "core/core.h"
#include "harness.h"

int h_alloc_sweep(int (*program)(int seed), int reps, int64_t *allocs) {
    int64_t before = core_alloc_count();
    CHECK(program(0) == 0);
    CHECK_NO_ERR();
    int64_t total = core_alloc_count() - before + 8;
    int seen = 0;
    for (int64_t k = 1; k <= total; k++)
        for (int r = 0; r < reps; r++) {
            int seed = (int)(k * reps + r);
            core_alloc_fail_at(k);
            int rc = program(seed);
            core_alloc_fail_at(0);
            CHECK_MSG(rc >= 0, "k=%lld: wrong answer or wrong error kind: %s", (long long)k, lt_error_message());
            if (rc == 1) seen++;
            lt_clear_error();
            lt_mark_step(); /* whatever was pending must still sync */
            CHECK_MSG(!lt_error(), "k=%lld: the library is not usable after the failure: %s", (long long)k,
                      lt_error_message());
            lt_clear_error();
            CHECK_MSG(program(seed + 1) == 0, "k=%lld: retry after failure failed: %s", (long long)k,
                      lt_error_message());
            lt_clear_error();
        }
    if (allocs) *allocs = total - 8;
    return seen;
}
