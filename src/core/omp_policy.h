/* The thread policy of the project's programs (the CLI, the step
 * benchmarks): OpenMP threads that wait at a barrier spin briefly, then
 * sleep (GOMP_SPINCOUNT=1000, about a microsecond), unless the user chose
 * (OMP_WAIT_POLICY or GOMP_SPINCOUNT set).
 *
 * Why: libgomp's default spins up to 300,000 times at every barrier before
 * sleeping. When another process holds a core, the thread that finished
 * its share spins on the CPU that the late thread needs, at each of the
 * thousands of parallel regions of a step. Measured on the 2-core machine
 * while others compiled (ResNet-20, batch 32, 2 threads, medians of 6
 * steps, alternating runs, the variable set in the shell): default
 * 828-1635 ms per step, passive 224-337 ms, GOMP_SPINCOUNT=10000 467 ms.
 * Sleeping at once (OMP_WAIT_POLICY=passive) costs a futex wake per
 * parallel region instead: on the quiet machine (alternating runs,
 * execute ms per step) ResNet-50 batch 8 64x64 took 218-223 passive
 * against 127-131 with 1,000 spins; ResNet-20 batch 32: 31.2-31.9 against
 * 25.6-27.1; with one core held by a busy loop the two were equal (86-90).
 *
 * How: libgomp reads its environment once, in its constructor, before main.
 * Setting the variable from an executable's .preinit_array does not work
 * (it runs first, but libc's own initializer then resets environ to the
 * original block), so main re-executes the program once with the variable
 * set: one exec, a few milliseconds, before anything else happens. A
 * program embedding the library sets the variable itself; the Python
 * package sets it before it loads the library. */
#ifndef LT_OMP_POLICY_H
#define LT_OMP_POLICY_H

#if defined(__linux__)
#define LT_OMP_SPINCOUNT "1000" /* the Python package says the same */
#include <stdlib.h>
#include <unistd.h>

/* POSIX; declared for -std=c11 builds without _POSIX_C_SOURCE. */
int setenv(const char *name, const char *value, int overwrite);
int execv(const char *path, char *const argv[]);

/* Call first thing in main. Returns (doing nothing) if the user chose a
 * policy, or if the re-exec fails: the program then runs with libgomp's
 * default. */
static inline void lt_omp_policy(char **argv) {
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    if (setenv("GOMP_SPINCOUNT", LT_OMP_SPINCOUNT, 0) == 0) execv("/proc/self/exe", argv);
}
#else
static inline void lt_omp_policy(char **argv) { (void)argv; }
#endif

#endif
