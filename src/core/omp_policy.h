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
 * package sets it before it loads the library.
 *
 * The exec keeps the CPU affinity of the main thread, and with
 * OMP_PROC_BIND set libgomp's constructor has already bound it to the first
 * place: the new process's libgomp then saw one core, and put every thread
 * there (a ResNet-18 step on 2 threads took 390 ms instead of 240). So the
 * affinity the program started with is read in .preinit_array, which runs
 * before the libraries' constructors, and given back before the exec (a
 * `taskset` the user ran with is kept). */
#ifndef LT_OMP_POLICY_H
#define LT_OMP_POLICY_H

#if defined(__linux__)
#define LT_OMP_SPINCOUNT "1000" /* the Python package says the same */
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* POSIX and glibc; declared for -std=c11 builds without feature macros. */
int setenv(const char *name, const char *value, int overwrite);
int execv(const char *path, char *const argv[]);
long syscall(long number, ...);

static unsigned long lt_start_cpus[1024 / (8 * sizeof(unsigned long))]; /* up to 1024 CPUs */
static long lt_start_cpus_bytes;                                          /* 0: not read */

static void lt_read_start_cpus(int argc, char **argv, char **envp) {
    (void)argc, (void)argv, (void)envp;
    lt_start_cpus_bytes = syscall(SYS_sched_getaffinity, 0, sizeof lt_start_cpus, lt_start_cpus);
}
__attribute__((section(".preinit_array"), used)) static void (*lt_read_start_cpus_at)(int, char **, char **) =
    lt_read_start_cpus;

/* Call first thing in main. Returns (doing nothing) if the user chose a
 * policy, or if the re-exec fails: the program then runs with libgomp's
 * default. */
static inline void lt_omp_policy(char **argv) {
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    if (setenv("GOMP_SPINCOUNT", LT_OMP_SPINCOUNT, 0) != 0) return;
    if (lt_start_cpus_bytes > 0) syscall(SYS_sched_setaffinity, 0, lt_start_cpus_bytes, lt_start_cpus);
    execv("/proc/self/exe", argv);
}
#else
static inline void lt_omp_policy(char **argv) { (void)argv; }
#endif

#endif
