/* A checkpoint save killed at a random point (SIGKILL: no cleanup, no
 * flush) leaves either the old or the new complete file: a forked child
 * saves two versions in turn in a loop, the parent kills it after a random
 * delay, then loads the file, which must succeed and hold exactly one
 * version, every tensor and the metadata agreeing (DESIGN 9). */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NT 4
#define NEL (1 << 18) /* 1 MiB per tensor, 4 MiB per file */

static char path[128];

/* Version v: every element of tensor i is v * 10 + i. Tensors come from
 * host data, so saving them runs no kernel (the child of a fork must not
 * touch a thread pool the parent may have started). */
static int save_version(int v, float *buf) {
    lt_tensor *ts[NT];
    const char *names[NT] = {"a", "b", "c", "d"};
    int64_t s[1] = {NEL};
    for (int i = 0; i < NT; i++) {
        for (int k = 0; k < NEL; k++) buf[k] = (float)(v * 10 + i);
        ts[i] = lt_from_data(buf, LT_F32, 1, s);
    }
    char vs[16];
    snprintf(vs, sizeof vs, "%d", v);
    const char *mk[1] = {"version"}, *mv[1] = {vs};
    int rc = lt_save_safetensors_meta(path, NT, names, ts, 1, mk, mv);
    for (int i = 0; i < NT; i++) lt_free(ts[i]);
    return rc;
}

/* The version the file holds, or -1 if it is missing, corrupt or mixed. */
static int check_file(float *buf) {
    char **names = NULL, **mk = NULL, **mv = NULL;
    lt_tensor **ts = NULL;
    int nmeta = 0;
    int n = lt_load_safetensors_meta(path, &names, &ts, &nmeta, &mk, &mv);
    if (n < 0) {
        fprintf(stderr, "load failed: %s\n", lt_error_message());
        lt_clear_error();
        return -1;
    }
    int v = nmeta == 1 && !strcmp(mk[0], "version") ? atoi(mv[0]) : -1;
    if (n != NT) v = -1;
    for (int i = 0; i < n && v >= 0; i++) {
        if (names[i][0] != 'a' + i || lt_numel(ts[i]) != NEL || lt_to_host(ts[i], buf, NEL * sizeof(float))) {
            v = -1;
            break;
        }
        for (int k = 0; k < NEL; k++)
            if (buf[k] != (float)(v * 10 + i)) {
                v = -1;
                break;
            }
    }
    h_free_loaded(n, names, ts, nmeta, mk, mv);
    return v;
}

TEST(kill_during_save) {
    float *buf = malloc(NEL * sizeof(float));
    CHECK(buf != NULL);
    if (!buf) return;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(save_version(1, buf) == 0); /* the old checkpoint; timed to spread the kills */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long save_us = (t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_nsec - t0.tv_nsec) / 1000L;
    long span_us = 3 * (save_us > 1000 ? save_us : 1000) + 1000; /* a few saves' worth */
    if (span_us > 400000) span_us = 400000;
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    int seen[3] = {0, 0, 0};
    for (int iter = 0; iter < 20; iter++) {
        fflush(NULL);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid < 0) break;
        if (pid == 0) {
            for (int v = 2;; v = 3 - v) /* 2, 1, 2, 1, ...: each save replaces the other version */
                if (save_version(v, buf)) _exit(3);
        }
        /* 0..3 saves: kills land before, during and between saves */
        long us = (long)(((double)rand() / RAND_MAX) * (double)span_us);
        struct timespec d = {us / 1000000L, (us % 1000000L) * 1000L};
        nanosleep(&d, NULL);
        kill(pid, SIGKILL);
        int st = 0;
        waitpid(pid, &st, 0);
        CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "iteration %d: the child ended by itself (status %d)",
                  iter, st);
        int v = check_file(buf);
        CHECK_MSG(v == 1 || v == 2, "iteration %d: the checkpoint is corrupt or mixed after a kill", iter);
        if (v == 1 || v == 2) seen[v]++;
    }
    printf("checkpoint_kill: one save %ld us; after 20 kills the file held the old version %d times, the new %d times\n",
           save_us, seen[1], seen[2]);
    remove(path);
    char tmp[140];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    remove(tmp); /* a kill mid-write may leave it; it never replaces PATH */
    free(buf);
}

int main(void) {
    snprintf(path, sizeof path, "/tmp/lt_ckpt_kill_%d.safetensors", (int)getpid());
    RUN(kill_during_save);
    return h_report();
}
