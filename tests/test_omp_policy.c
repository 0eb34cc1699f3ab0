/* The programs' thread policy (core/omp_policy.h) re-executes the program
 * once; with OMP_PROC_BIND set, libgomp has bound the main thread to one
 * core before that, and the exec must not hand the new process that one
 * core: the library's threads must still spread over the cores the program
 * was started with. This binary runs itself under OMP_PROC_BIND=true
 * OMP_PLACES=cores, lets the policy re-execute it, runs a parallel kernel
 * on 2 threads, and reads which CPUs its threads may use. */
#define _GNU_SOURCE
#include "harness.h"

#include "core/omp_policy.h"

#include <dirent.h>
#include <sched.h>

/* The CPUs any thread of this process may run on. */
static int cpus_of_threads(cpu_set_t *all) {
    CPU_ZERO(all);
    DIR *d = opendir("/proc/self/task");
    if (!d) return 0;
    int threads = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        cpu_set_t s;
        if (sched_getaffinity(atoi(e->d_name), sizeof s, &s) == 0) CPU_OR(all, all, &s), threads++;
    }
    closedir(d);
    return threads;
}

static int started_on; /* CPUs the test was started with */

TEST(bound_threads_keep_every_core) {
    int64_t shape[2] = {512, 512};
    lt_tensor *a = lt_randn(LT_F32, 2, shape), *b = lt_randn(LT_F32, 2, shape);
    lt_tensor *c = lt_matmul(a, b), *t = lt_tanh(c); /* parallel kernels: libgomp starts its thread */
    lt_mark_step();
    CHECK_NO_ERR();
    cpu_set_t all;
    int threads = cpus_of_threads(&all);
    CHECK_MSG(threads >= 2, "%d threads", threads);
    CHECK_MSG(CPU_COUNT(&all) >= 2, "the process's %d threads may use %d CPU(s) of the %d it started with", threads,
              CPU_COUNT(&all), started_on);
    lt_free(a), lt_free(b), lt_free(c), lt_free(t);
}

int main(int argc, char **argv) {
    (void)argc;
    cpu_set_t s;
    if (!getenv("LT_TEST_OMP_POLICY")) { /* first run: set libgomp's binding, which it reads before main */
        if (sched_getaffinity(0, sizeof s, &s) || CPU_COUNT(&s) < 2) {
            printf("  skipped: one CPU, nothing to spread over\n");
            return 0;
        }
        char n[16];
        snprintf(n, sizeof n, "%d", CPU_COUNT(&s));
        setenv("LT_TEST_OMP_POLICY", n, 1);
        setenv("OMP_PROC_BIND", "true", 1), setenv("OMP_PLACES", "cores", 1), setenv("LT_NUM_THREADS", "2", 1);
        unsetenv("GOMP_SPINCOUNT"), unsetenv("OMP_WAIT_POLICY"); /* so that the policy re-executes */
        execv("/proc/self/exe", argv);
        printf("  cannot re-execute /proc/self/exe\n");
        return 1;
    }
    lt_omp_policy(argv); /* re-executes once with GOMP_SPINCOUNT set */
    CHECK_MSG(getenv("GOMP_SPINCOUNT") != NULL, "the policy did not re-execute");
    started_on = atoi(getenv("LT_TEST_OMP_POLICY"));
    RUN(bound_threads_keep_every_core);
    return h_report();
}
