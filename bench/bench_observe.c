/* What observability costs. The switches are read once per process, so each
 * configuration runs in a child process (this binary re-executed with the
 * environment set) and prints one row:
 *   trace ns/op   lt_lerp(a, b, 0.5) on a 2x3 tensor, chains of 1,000 ops
 *                 with no sync inside the timed loop (median of REPS)
 *   step us       one lt_mark_step of a 100-op lerp_ chain (a cached graph):
 *                 where the switches do their work (spans, samples)
 * Configurations: all off; LT_METRICS=1; LT_TRACE_FILE; LT_TRACE_FILE with
 * LT_TRACE_KERNELS=1 and LT_DUMP_IR. The claim to check: trace ns/op is the
 * same in every row (no switch costs anything per op). */
#define _POSIX_C_SOURCE 200809L
#include "lazytensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_time.h"

static int child(const char *label, int reps) {
    int64_t shape[2] = {2, 3};
    lt_tensor *a = lt_randn(LT_F32, 2, shape), *b = lt_randn(LT_F32, 2, shape);
    lt_mark_step();
    enum { CHAIN = 1000 };
    double *t = malloc(sizeof(double) * (size_t)reps), *st = malloc(sizeof(double) * (size_t)reps);
    for (int w = 0; w < 20; w++) { /* warm-up: arena chunks, caches, branch predictors */
        for (int i = 0; i < CHAIN; i++) lt_free(lt_lerp(a, b, 0.5));
        lt_mark_step();
    }
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now_ns();
        for (int i = 0; i < CHAIN; i++) lt_free(lt_lerp(a, b, 0.5));
        t[r] = (bench_now_ns() - t0) / CHAIN;
        lt_mark_step(); /* nothing live is pending: resets the arena */
    }
    for (int r = 0; r < reps; r++) {
        for (int i = 0; i < 100; i++) lt_lerp_(a, b, 0.01);
        double t0 = bench_now_ns();
        lt_mark_step();
        st[r] = (bench_now_ns() - t0) / 1e3;
    }
    if (lt_error()) {
        fprintf(stderr, "error: %s\n", lt_error_message());
        return 1;
    }
    printf("%-44s %12.1f %12.1f\n", label, bench_median(t, reps), bench_median(st, reps));
    fflush(stdout);
    free(t);
    free(st);
    lt_free(a);
    lt_free(b);
    fclose(stderr); /* the LT_METRICS report is not the benchmark's output */
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 2 && !strcmp(argv[1], "--child")) return child(argv[2], atoi(argv[3]));
    int reps = argc > 1 ? 21 : 201; /* any argument: quick */
    char dir[] = "/tmp/lt_bench_observe_XXXXXX";
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    char trace[96], irdir[96];
    snprintf(trace, sizeof trace, "%s/trace.json", dir);
    snprintf(irdir, sizeof irdir, "%s/ir", dir);
    struct {
        const char *label, *env[4][2];
    } cfg[] = {
        {"switches off", {{0}}},
        {"LT_METRICS=1", {{"LT_METRICS", "1"}}},
        {"LT_TRACE_FILE", {{"LT_TRACE_FILE", trace}}},
        {"LT_TRACE_FILE + LT_TRACE_KERNELS + LT_DUMP_IR",
         {{"LT_TRACE_FILE", trace}, {"LT_TRACE_KERNELS", "1"}, {"LT_DUMP_IR", irdir}}},
    };
    printf("%-44s %12s %12s\n", "configuration", "trace ns/op", "step us");
    char reps_s[16];
    snprintf(reps_s, sizeof reps_s, "%d", reps);
    for (size_t c = 0; c < sizeof cfg / sizeof *cfg; c++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            unsetenv("LT_METRICS");
            unsetenv("LT_TRACE_FILE");
            unsetenv("LT_TRACE_KERNELS");
            unsetenv("LT_DUMP_IR");
            for (int i = 0; i < 4 && cfg[c].env[i][0]; i++) setenv(cfg[c].env[i][0], cfg[c].env[i][1], 1);
            execl("/proc/self/exe", argv[0], "--child", cfg[c].label, reps_s, (char *)NULL);
            _exit(127);
        }
        int status;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
            fprintf(stderr, "configuration '%s' failed\n", cfg[c].label);
            return 1;
        }
    }
    /* Best-effort cleanup of what the traced children wrote. */
    remove(trace);
    char path[160];
    for (int k = 1; k < 100; k++)
        for (int d = 0; d < 2; d++) {
            snprintf(path, sizeof path, "%s/graph_%04d.%s", irdir, k, d ? "dot" : "txt");
            remove(path);
        }
    rmdir(irdir);
    rmdir(dir);
    return 0;
}
