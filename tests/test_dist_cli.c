/* `mpirun -np 2 lazytensor train` end to end (DESIGN 12), run by CTest as a
 * single process that launches the jobs itself ($LT_MPIEXEC; skipped
 * without MPI): 2 processes x batch 48 reproduce 1 process x batch 96 on the
 * same global batches (fake data, and an image folder), the
 * report names the world size and global batch, a checkpoint saved by 2
 * ranks resumes in 1 and in 3 and continues the curve; and
 * the faults: ranks that trace different graphs (another --model on one)
 * fail with a clear error, a rank killed with SIGKILL mid-training ends the
 * job non-zero within 60 s naming the lost rank, the last checkpoint intact. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "cli_run.h"
#include "data/image.h"
#include "harness.h"

#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *mpiexec;
#define MR "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 %s --oversubscribe "
#define COMMON "--data fake --model mlp --test-size 64 --log-every 1000 --lr-schedule none"

/* Runs a shell command, capturing stdout (and stderr: both) into out. */
static int sh(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int sh(char *out, size_t cap, const char *fmt, ...) {
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void same_losses(const char *what, const char *a, const char *b, int from) {
    double la[64], lb[64];
    int na = cli_jlosses(a, la, 64), nb = cli_jlosses(b, lb, 64);
    CHECK_MSG(na > 0 && na + from == nb, "%s: %d and %d losses", what, na, nb);
    for (int i = 0; i < na && i + from < nb; i++)
        CHECK_MSG(fabs(la[i] - lb[i + from]) <= 1e-5 * fabs(lb[i + from]), "%s: step %d: %.9g vs %.9g", what,
                  i + from + 1, la[i], lb[i + from]);
}

TEST(two_ranks_match_one) {
    static char two[1 << 16], one[1 << 16], rest[1 << 16], full[1 << 16];
    int rc = sh(two, sizeof two, MR "-np 2 %s train " COMMON " --batch-size 48 --steps 6 --save %s/ck.safetensors --report json 2>%s/err2",
                mpiexec, cli_path, cli_tmp, cli_tmp);
    CHECK_MSG(rc == 0, "mpirun -np 2: exit %d: %s", rc, two);
    CHECK_MSG(cli_jnum(two, "world_size") == 2 && cli_jnum(two, "global_batch") == 96 && cli_jnum(two, "batch_size") == 48,
              "report: world %g, global batch %g", cli_jnum(two, "world_size"), cli_jnum(two, "global_batch"));
    CHECK(isfinite(cli_jnum(two, "comm_exposed_ms_per_step")));
    CHECK(strchr(two, '{') == strrchr(two, '{')); /* one report: rank 0's */
    CHECK(cli_run(one, sizeof one, false, "train " COMMON " --batch-size 96 --steps 6 --report json") == 0);
    same_losses("2 x 48 vs 1 x 96", two, one, 0);
    CHECK_MSG(fabs(cli_jnum(two, "test_accuracy") - cli_jnum(one, "test_accuracy")) < 1e-9,
              "sharded evaluation: %g%% vs %g%%", cli_jnum(two, "test_accuracy"), cli_jnum(one, "test_accuracy"));
    /* Saved by two ranks, resumed by one and by three (the same global
     * batch): the curve continues. */
    CHECK(cli_run(full, sizeof full, false, "train " COMMON " --batch-size 96 --steps 10 --report json") == 0);
    CHECK(cli_run(rest, sizeof rest, false, "train " COMMON " --batch-size 96 --steps 10 --resume %s/ck.safetensors --report json",
                  cli_tmp) == 0);
    same_losses("resumed in one process", rest, full, 6);
    rc = sh(rest, sizeof rest,
            MR "-np 3 %s train " COMMON " --batch-size 32 --steps 10 --resume %s/ck.safetensors --report json 2>%s/err3",
            mpiexec, cli_path, cli_tmp, cli_tmp);
    CHECK_MSG(rc == 0, "mpirun -np 3 --resume: exit %d: %s", rc, rest);
    same_losses("resumed in three processes", rest, full, 6);
    /* `eval` under mpirun: sharded, the accuracy summed over ranks, one report */
    static char ev2[1 << 12], ev1[1 << 12];
#define EVAL "eval --data fake --model mlp --test-size 64 --resume %s/ck.safetensors --report json"
    rc = sh(ev2, sizeof ev2, MR "-np 2 %s " EVAL " 2>%s/err4", mpiexec, cli_path, cli_tmp, cli_tmp);
    CHECK(rc == 0 && cli_run(ev1, sizeof ev1, false, EVAL, cli_tmp) == 0);
#undef EVAL
    CHECK_MSG(strchr(ev2, '{') && strchr(ev2, '{') == strrchr(ev2, '{') &&
                  fabs(cli_jnum(ev2, "test_accuracy") - cli_jnum(ev1, "test_accuracy")) < 1e-9,
              "eval: 2 processes %s, 1 process %s", ev2, ev1);
}

/* --shard-optimizer (ZeRO-1): 2 sharded processes x batch 48 reproduce 1
 * process x batch 96 with each process holding half the optimizer state
 * (the report's optimizer_state_bytes_per_rank); their checkpoint (the
 * whole state, gathered) resumes in 1 unsharded process and in 3 sharded
 * ones, and the curve continues. */
TEST(shard_optimizer) {
    static char two[1 << 16], one[1 << 16], rest[1 << 16];
    int rc = sh(two, sizeof two, MR "-np 2 %s train " COMMON " --batch-size 48 --steps 6 --shard-optimizer --save "
                "%s/cks.safetensors --report json 2>%s/errs", mpiexec, cli_path, cli_tmp, cli_tmp);
    CHECK_MSG(rc == 0, "mpirun -np 2 --shard-optimizer: exit %d: %s", rc, two);
    CHECK(cli_run(one, sizeof one, false, "train " COMMON " --batch-size 96 --steps 6 --report json") == 0);
    same_losses("sharded 2 x 48 vs 1 x 96", two, one, 0);
    double sharded = cli_jnum(two, "optimizer_state_bytes_per_rank"), whole = cli_jnum(one, "optimizer_state_bytes_per_rank");
    CHECK_MSG(sharded > 0 && sharded <= 0.55 * whole, "optimizer state per rank: %g sharded, %g in one process",
              sharded, whole);
    CHECK(cli_run(one, sizeof one, false, "train " COMMON " --batch-size 96 --steps 10 --report json") == 0);
    CHECK(cli_run(rest, sizeof rest, false, "train " COMMON " --batch-size 96 --steps 10 --resume %s/cks.safetensors "
                  "--report json", cli_tmp) == 0);
    same_losses("sharded checkpoint resumed in one process", rest, one, 6);
    rc = sh(rest, sizeof rest, MR "-np 3 %s train " COMMON " --batch-size 32 --steps 10 --shard-optimizer --resume "
            "%s/cks.safetensors --report json 2>%s/errs3", mpiexec, cli_path, cli_tmp, cli_tmp);
    CHECK_MSG(rc == 0, "mpirun -np 3 --shard-optimizer --resume: exit %d: %s", rc, rest);
    same_losses("sharded checkpoint resumed in three sharded processes", rest, one, 6);
    CHECK(cli_run(rest, sizeof rest, false, "train " COMMON " --shard-optimizer --grad-compress bf16 --steps 1") == 2);
}

/* Two classes apart, each image its own. */
static unsigned char dist_pixel(int c, int i, size_t k) {
    return (unsigned char)(c ? 150 + (k * 7 + (size_t)i * 13) % 90 : (k * 5 + (size_t)i * 11) % 120);
}

/* An image folder (2 classes of 12 PNGs, written here): 2 processes x
 * batch 4 read their parts of each global batch and reproduce 1 process x
 * batch 8, over an epoch boundary; the evaluation on val/ is sharded too. */
TEST(imagefolder_two_ranks_match_one) {
    if (!img_have(IMG_PNG)) {
        printf("  skipped: PNG support not built\n");
        return;
    }
    static char two[1 << 16], one[1 << 16];
    char dir[256];
    snprintf(dir, sizeof dir, "%s/img", cli_tmp);
    CHECK(cli_png_folder(dir, 12, 8, dist_pixel) == 0);
#define FOLDER "--data imagefolder --data-dir %s/img --image-size 8 --model mlp --workers 1 --steps 5 " \
               "--log-every 1000 --lr-schedule none --report json"
    int rc = sh(two, sizeof two, MR "-np 2 %s train " FOLDER " --batch-size 4 2>%s/errf", mpiexec, cli_path, cli_tmp,
                cli_tmp);
    CHECK_MSG(rc == 0, "mpirun -np 2 --data imagefolder: exit %d: %s", rc, two);
    CHECK(cli_run(one, sizeof one, false, "train " FOLDER " --batch-size 8", cli_tmp) == 0);
#undef FOLDER
    CHECK(cli_jnum(two, "global_batch") == 8);
    same_losses("imagefolder 2 x 4 vs 1 x 8", two, one, 0);
    CHECK_MSG(fabs(cli_jnum(two, "test_accuracy") - cli_jnum(one, "test_accuracy")) < 1e-9,
              "sharded evaluation: %g%% vs %g%%", cli_jnum(two, "test_accuracy"), cli_jnum(one, "test_accuracy"));
}

TEST(different_graphs_fail_clearly) {
    static char out[1 << 16];
    time_t t0 = time(NULL);
    int rc = sh(out, sizeof out, MR "-np 1 %s train " COMMON " --steps 2 : -np 1 %s train --data fake --model resnet20 "
                "--test-size 64 --steps 2 2>&1", mpiexec, cli_path, cli_path);
    CHECK_MSG(rc != 0 && rc != -1, "a different --model on one rank: exit %d", rc);
    CHECK_MSG(strstr(out, "different graphs") != NULL, "no clear error: %s", out);
    CHECK(time(NULL) - t0 < 60);
}

/* The pid of the rank `rank` started by mpirun `parent`, or -1. */
static pid_t rank_pid(pid_t parent, int rank) {
    DIR *d = opendir("/proc");
    struct dirent *e;
    pid_t found = -1;
    while (d && found < 0 && (e = readdir(d))) {
        char path[300], want[64];
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid <= 0) continue;
        snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
        size_t n;
        char *env = cli_slurp(path, &n);
        snprintf(want, sizeof want, "OMPI_COMM_WORLD_RANK=%d", rank);
        for (size_t i = 0; env && i < n; i += strlen(env + i) + 1)
            if (!strcmp(env + i, want)) {
                snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
                char *st = cli_slurp(path, &n), *rp = st ? strrchr(st, ')') : NULL;
                int ppid = 0;
                if (rp && sscanf(rp + 2, "%*c %d", &ppid) == 1 && ppid == (int)parent) found = pid;
                free(st);
                break;
            }
        free(env);
    }
    if (d) closedir(d);
    return found;
}

TEST(killed_rank_ends_the_job) {
    static char out[1 << 16];
    char ck[256], log[256], cmd[4096];
    snprintf(ck, sizeof ck, "%s/last.safetensors", cli_tmp);
    snprintf(log, sizeof log, "%s/kill.log", cli_tmp);
    /* A checkpoint from an earlier run, which the killed one would overwrite at its end. */
    CHECK(cli_run(out, sizeof out, false, "train " COMMON " --batch-size 32 --steps 2 --save %s", ck) == 0);
    snprintf(cmd, sizeof cmd, "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 exec %s --oversubscribe -np 2 %s train "
             COMMON " --batch-size 32 --steps 100000 --save %s >%s 2>&1", mpiexec, cli_path, ck, log);
    pid_t job = fork();
    if (job == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    pid_t victim = -1;
    for (int i = 0; i < 200 && victim < 0; i++) { /* up to 20 s for the ranks to start */
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
        victim = rank_pid(job, 1);
    }
    CHECK_MSG(victim > 0, "rank 1 of the job not found");
    sleep(3); /* mid-training */
    if (victim > 0) kill(victim, SIGKILL);
    time_t t0 = time(NULL);
    int st = 0, done = 0;
    while (!done && time(NULL) - t0 < 60) {
        done = waitpid(job, &st, WNOHANG) == job;
        if (!done) sleep(1);
    }
    if (!done) kill(job, SIGKILL), waitpid(job, &st, 0);
    CHECK_MSG(done, "the job did not end within 60 s of the kill");
    CHECK_MSG(!WIFEXITED(st) || WEXITSTATUS(st) != 0, "the job exited 0");
    size_t n;
    char *text = cli_slurp(log, &n);
    CHECK_MSG(text && strstr(text, "rank 1"), "the message does not name rank 1: %s", text ? text : "(none)");
    free(text);
    /* The earlier checkpoint is intact: it loads and evaluates. */
    CHECK(cli_run(out, sizeof out, false, "eval --data fake --model mlp --test-size 64 --resume %s", ck) == 0);
}

int main(void) {
    mpiexec = getenv("LT_MPIEXEC");
    if (!mpiexec || !*mpiexec) {
        printf("skipped: built without MPI (no LT_MPIEXEC)\n");
        return 0;
    }
    if (cli_setup(NULL, "test_dist_cli")) return 1;
    RUN(two_ranks_match_one);
    RUN(imagefolder_two_ranks_match_one);
    RUN(shard_optimizer);
    RUN(different_graphs_fail_clearly);
    RUN(killed_rank_ends_the_job);
    cli_cleanup();
    return h_report();
}
