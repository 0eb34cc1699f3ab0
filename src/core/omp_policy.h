/* The thread policy of the project's executables (the CLI, the benchmarks):
 * OpenMP threads that wait at a barrier sleep (OMP_WAIT_POLICY=passive)
 * unless the user chose (OMP_WAIT_POLICY or GOMP_SPINCOUNT set).
 *
 * Why: libgomp's default spins up to 300,000 times at every barrier before
 * sleeping. When another process holds a core, the thread that finished
 * its share spins on the CPU that the late thread needs, at each of the
 * thousands of parallel regions of a step. Measured on the 2-core machine
 * while others compiled (ResNet-20, batch 32, 2 threads, medians of 6
 * steps, alternating runs): default 828-1635 ms per step, passive 224-337
 * ms, GOMP_SPINCOUNT=10000 467 ms.
 *
 * How: libgomp reads its environment once, in its own constructor, before
 * main and before any library constructor of ours. Only an executable's
 * .preinit_array runs earlier (the dynamic loader calls it before every
 * shared object's initializers), so the setting lives here, in a header
 * that executables include, not in the library (a shared object has no
 * preinit_array; a program embedding the library sets the variable itself).
 * Included twice in one program it runs twice: harmless, it never
 * overwrites. */
#ifndef LT_OMP_POLICY_H
#define LT_OMP_POLICY_H

#if defined(__linux__) && defined(__GNUC__)
#include <stdlib.h>

int setenv(const char *name, const char *value, int overwrite); /* POSIX; declared for -std=c11 builds */

static void lt_omp_policy(int argc, char **argv, char **envp) {
    (void)argc, (void)argv, (void)envp;
    if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT")) setenv("OMP_WAIT_POLICY", "passive", 0);
}
__attribute__((section(".preinit_array"), used)) static void (*const lt_omp_policy_entry)(int, char **,
                                                                                          char **) = lt_omp_policy;
#endif

#endif
