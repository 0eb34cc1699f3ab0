/* The allocation-failure sweep (DESIGN 9) shared by test_alloc_fail and
 * test_alloc_fail_io. */
#ifndef LT_ALLOC_SWEEP_H
#define LT_ALLOC_SWEEP_H

#include <stdint.h>

/* program(seed): 0 if it ran to the end with the right values, 1 if it
 * stopped at an OOM error, -1 on a wrong answer or another error kind.
 * Counts program(0)'s host allocations, then for every k up to that count
 * (plus 8) fails the k-th one while program runs `reps` times (seeds k *
 * reps + r), and checks that each run is right or out of memory, that the
 * library still syncs, and that a retry (seed + 1) without the failure
 * succeeds. Returns how many runs reported the injected failure; *allocs
 * gets program(0)'s allocation count. */
int h_alloc_sweep(int (*program)(int seed), int reps, int64_t *allocs);

#endif
