/* `lazytensor` when things go wrong: a run is never lost.
 *   - bad output paths are usage errors (exit 2) within a second, before
 *     anything is trained; at-end failures still write the other outputs
 *     and the summary, and the exit status says what failed;
 *   - SIGINT / SIGTERM at a random step: the step finishes, the checkpoint
 *     (which `eval --resume` loads, at the same step count) and a trace file
 *     that parses as JSON are written, exit 130; a second signal exits at once;
 *   - a bare `lazytensor`, options a command does not read, and the checks
 *     of a resume (step count, model, optimizer, not a safetensors file).
 * Tiny models, a few steps, generated data: seconds in all. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "cli_run.h"
#include "harness.h"
#include "io/json.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EVAL "--data fake --model mlp --test-size 16 --eval-batch 16"
#define TINY EVAL " --batch-size 8"

static char out[1 << 17];

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, ms % 1000 * 1000000L};
    nanosleep(&ts, NULL);
}

static bool exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

TEST(bad_output_paths_are_usage_errors) {
    /* Fashion-MNIST's default run: it would take a minute if anything trained. */
    const char *bad[] = {"--save /nonexistent/dir/ck.st", "--plot /nonexistent/x.svg",
                         "--trace-file /nonexistent/t.json", "--save /tmp", "--save a.st --plot a.st"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double t0 = now();
        int rc = cli_run(out, sizeof out, true, "train --steps 2 --report json %s", bad[i]);
        double dt = now() - t0;
        CHECK_MSG(rc == 2, "%s: exit %d, expected 2", bad[i], rc);
        CHECK_MSG(dt < 1.0, "%s: took %.2f s", bad[i], dt);
        CHECK_MSG(!strstr(out, "step ") && !strstr(out, "training"), "%s: trained: %s", bad[i], out);
        CHECK_MSG(!strncmp(out, "lazytensor: --", 14) && strstr(out, "nothing was run"), "%s: message: %s", bad[i],
                  out);
    }
}

/* An output that fails only at the end (here the library's PATH.tmp is a
 * directory, and the plot path a dangling link): the others are written,
 * the summary printed, and the exit status names the failure. */
TEST(at_end_failures_keep_the_rest) {
    char ck[256], dir[300], svg[256];
    snprintf(ck, sizeof ck, "%s/end.st", cli_tmp);
    snprintf(dir, sizeof dir, "%s.tmp", ck);
    snprintf(svg, sizeof svg, "%s/end.svg", cli_tmp);
    CHECK(mkdir(dir, 0755) == 0);
    CHECK(symlink("/nonexistent/end.svg", svg) == 0);
    int rc = cli_run(out, sizeof out, true, "train " TINY " --steps 2 --save %s --plot %s --report json", ck, svg);
    CHECK_MSG(rc == 3, "save failing at the end: exit %d, expected 3", rc);
    CHECK_MSG(strstr(out, "== summary") && strstr(out, "\"final_loss\""), "no summary or report: %s", out);
    CHECK_MSG(strstr(out, "lazytensor: saving") && strstr(out, "lazytensor: --plot"), "messages: %s", out);
    rmdir(dir);
    /* only the plot fails: the checkpoint is written, exit 4 */
    rc = cli_run(out, sizeof out, true, "train " TINY " --steps 2 --save %s --plot %s", ck, svg);
    CHECK_MSG(rc == 4, "plot failing at the end: exit %d, expected 4", rc);
    CHECK_MSG(strstr(out, "saved checkpoint") && exists(ck), "the checkpoint was not written: %s", out);
    unlink(svg);
}

/* Starts `lazytensor train <argv...>` with stdout and stderr to files. */
static pid_t spawn(const char *stdout_path, const char *stderr_path, const char *cwd, char *const argv[]) {
    pid_t pid = fork();
    if (pid) return pid;
    int o = open(stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 0644), e = open(stderr_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0 || (cwd && chdir(cwd))) _exit(99);
    execv(cli_path, argv);
    _exit(98);
}

/* Waits until the file holds `text`, up to `timeout` seconds or until the
 * process has exited. */
static bool running(pid_t pid) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == 0;
}

static bool wait_for(pid_t pid, const char *path, const char *text, double timeout) {
    for (double t0 = now(); now() - t0 < timeout && running(pid); sleep_ms(2)) {
        char *s = cli_slurp(path, NULL);
        bool found = s && strstr(s, text);
        free(s);
        if (found) return true;
    }
    return false;
}

static int wait_exit(pid_t pid) {
    int st;
    if (waitpid(pid, &st, 0) != pid) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* SIGINT or SIGTERM at a random step of a real run. */
static void interrupt_at_random_step(int sig, bool with_save) {
    char ck[256], trace[256], so[256], se[256], at[32];
    snprintf(ck, sizeof ck, "%s/sig.st", cli_tmp);
    snprintf(trace, sizeof trace, "%s/sig.json", cli_tmp);
    snprintf(so, sizeof so, "%s/sig%d.out", cli_tmp, sig);
    snprintf(se, sizeof se, "%s/sig%d.err", cli_tmp, sig);
    int step = 2 + rand() % 20;
    snprintf(at, sizeof at, "step %d/", step);
    char *argv[] = {"lazytensor", "train", "--data", "fake", "--model", "mlp", "--batch-size", "8", "--steps",
                    "1000000", "--test-size", "0", "--log-every", "1", "--report", "json", "--trace-file", trace,
                    with_save ? "--save" : NULL, ck, NULL};
    pid_t pid = spawn(so, se, cli_tmp, argv);
    CHECK(pid > 0);
    if (pid <= 0) return;
    bool reached = wait_for(pid, se, at, 60);
    CHECK_MSG(reached, "signal %d: the run never reached '%s'", sig, at);
    kill(pid, reached ? sig : SIGKILL);
    int rc = wait_exit(pid);
    CHECK_MSG(rc == 130, "signal %d at step %d: exit %d, expected 130", sig, step, rc);
    char *js = cli_slurp(so, NULL), *err = cli_slurp(se, NULL);
    double steps = js ? cli_jnum(js, "steps") : NAN;
    CHECK_MSG(steps >= step && js && strstr(js, "\"interrupted\": true"), "signal %d: report %s", sig, js);
    CHECK_MSG(err && strstr(err, "== summary") && strstr(err, "(interrupted)"), "signal %d: no summary: %s", sig,
              err);
    /* the checkpoint: --save, or the file the message names */
    char path[512];
    if (with_save) snprintf(path, sizeof path, "%s", ck);
    else snprintf(path, sizeof path, "%s/lazytensor-mlp-step%.0f.safetensors", cli_tmp, steps);
    CHECK_MSG(err && strstr(err, "saved checkpoint") && strstr(err, strrchr(path, '/') + 1),
              "signal %d: the message does not name %s: %s", sig, path, err);
    int erc = cli_run(out, sizeof out, false, "eval --data fake --model mlp --test-size 16 --resume %s --report json",
                      path);
    CHECK_MSG(erc == 0 && cli_jnum(out, "step") == steps, "signal %d: eval of %s: exit %d, %s (ran %.0f steps)",
              sig, path, erc, out, steps);
    size_t n;
    char *tr = cli_slurp(trace, &n);
    json doc;
    char jerr[160] = "missing";
    int parsed = tr ? json_parse(tr, n, &doc, jerr, sizeof jerr) : -1;
    CHECK_MSG(parsed == 0, "signal %d: the trace file is not JSON: %s", sig, jerr);
    if (!parsed) json_free(&doc);
    free(tr), free(js), free(err);
    lt_clear_error();
}

TEST(signals_save_the_run) {
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    printf("  (random steps from seed %u)\n", seed);
    srand(seed);
    interrupt_at_random_step(SIGINT, true);
    interrupt_at_random_step(SIGTERM, false);
}

/* A second signal does not wait for the step: the first arrives while the
 * first step compiles (ResNet-20, long enough), the second right after the
 * notice; the process exits 130 without the summary or the report. */
TEST(second_signal_exits_at_once) {
    char so[256], se[256], ck[256];
    snprintf(so, sizeof so, "%s/two.out", cli_tmp);
    snprintf(se, sizeof se, "%s/two.err", cli_tmp);
    snprintf(ck, sizeof ck, "%s/two.st", cli_tmp);
    char *argv[] = {"lazytensor", "train", "--data", "fake", "--model", "resnet20", "--batch-size", "32", "--steps",
                    "100", "--test-size", "0", "--report", "json", "--save", ck, NULL};
    pid_t pid = spawn(so, se, NULL, argv);
    CHECK(pid > 0);
    if (pid <= 0) return;
    bool started = wait_for(pid, se, "training resnet20", 60);
    sleep_ms(100); /* inside the first step, which compiles for far longer */
    kill(pid, SIGINT);
    bool noticed = wait_for(pid, se, "interrupted", 10);
    kill(pid, SIGINT);
    int rc = wait_exit(pid);
    CHECK_MSG(started && noticed && rc == 130, "started %d noticed %d exit %d", started, noticed, rc);
    char *js = cli_slurp(so, NULL), *err = cli_slurp(se, NULL);
    CHECK_MSG(err && strstr(err, "second interrupt") && !strstr(err, "== summary"), "stderr: %s", err);
    CHECK_MSG(js && !strchr(js, '{'), "a report was written: %s", js);
    CHECK_MSG(!exists(ck), "a checkpoint was written");
    free(js), free(err);
}

TEST(usage_errors) {
    double t0 = now();
    CHECK(cli_run(out, sizeof out, true, "%s", "") == 2); /* bare: the usage, not a training run */
    CHECK_MSG(strstr(out, "usage: lazytensor") && now() - t0 < 1, "bare lazytensor: %s", out);
    /* options a command does not read */
    const char *ignored[] = {"demo --steps 3", "bench --model mlp", "bench --save x.st", "eval --resume x --steps 3",
                             "eval --resume x --plot p.svg"};
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) {
        CHECK_MSG(cli_run(out, sizeof out, true, "%s", ignored[i]) == 2, "%s accepted", ignored[i]);
        CHECK_MSG(strstr(out, "does not use"), "%s: %s", ignored[i], out);
    }
    CHECK(cli_run(out, sizeof out, true, "train --data fake --image-size 0") == 2);
    CHECK_MSG(cli_run(out, sizeof out, true, "train " TINY " --batch-size 100000") == 2 &&
                  strstr(out, "larger than the training set"),
              "batch larger than the data: %s", out);
    CHECK(cli_run(out, sizeof out, false, "eval --help") == 0);
    CHECK_MSG(strstr(out, "--resume PATH") && !strstr(out, "--plot PATH"), "eval --help lists what eval does not read");
}

TEST(resume_checks) {
    char ck[256], txt[256];
    snprintf(ck, sizeof ck, "%s/r.st", cli_tmp);
    snprintf(txt, sizeof txt, "%s/r.txt", cli_tmp);
    CHECK(cli_run(out, sizeof out, true, "train " TINY " --steps 6 --save %s", ck) == 0);
    CHECK_MSG(strstr(out, "saved checkpoint"), "a successful --save says nothing: %s", out);
    CHECK_MSG(cli_run(out, sizeof out, true, "train " TINY " --steps 4 --resume %s", ck) == 2 &&
                  strstr(out, "already at step 6"),
              "--steps below the checkpoint: %s", out);
    CHECK_MSG(cli_run(out, sizeof out, true, "train " TINY " --steps 8 --optimizer sgd --resume %s", ck) == 2 &&
                  strstr(out, "--optimizer adamw, not sgd"),
              "optimizer mismatch: %s", out);
    CHECK_MSG(cli_run(out, sizeof out, true, "train " TINY " --steps 8 --optimizer adam --resume %s", ck) == 2,
              "adam accepted an adamw checkpoint: %s", out);
    CHECK_MSG(cli_run(out, sizeof out, true, "train --data fake --model resnet20 --steps 8 --resume %s", ck) == 2 &&
                  strstr(out, "use --model mlp"),
              "model mismatch: %s", out);
    FILE *f = fopen(txt, "w");
    if (f) fputs("these are notes, not tensors\n", f), fclose(f);
    CHECK_MSG(cli_run(out, sizeof out, true, "eval " EVAL " --resume %s", txt) == 1 &&
                  strstr(out, "not a safetensors file"),
              "text file: %s", out);
    /* the eval of an SGD checkpoint reads the model alone */
    CHECK(cli_run(out, sizeof out, true, "train " TINY " --steps 2 --optimizer sgd --save %s", ck) == 0);
    CHECK_MSG(cli_run(out, sizeof out, true, "eval " EVAL " --resume %s", ck) == 0, "eval of sgd: %s", out);
}

TEST(reports_and_messages) {
    CHECK(cli_run(out, sizeof out, false, "train " TINY " --steps 2 --report json") == 0);
    const char *p = strstr(out, "\"peak_bytes\": ");
    CHECK_MSG(p && strspn(p + 14, "0123456789") > 3 && p[14 + strspn(p + 14, "0123456789")] == ',',
              "peak_bytes is not an integer: %.40s", p ? p : out);
    CHECK(cli_run(out, sizeof out, true, "train " TINY " --steps 2 --metrics") == 0);
    CHECK_MSG(strstr(out, "LiveTensors") && strstr(out, "0 tensor handles still alive at exit"),
              "the program leaks handles: %s", out);
    /* eager mode compiles every op: no "keeps changing" warning */
    CHECK(cli_run(out, sizeof out, true, "train --eager --data fake --model mlp --batch-size 4 --steps 24 "
                                         "--test-size 0") == 0);
    CHECK_MSG(!strstr(out, "warning"), "eager warns: %s", out);
    /* stdout and stderr into one pipe: the banner comes first */
    CHECK(cli_run(out, sizeof out, true, "train " TINY " --steps 2 --log-every 1") == 0);
    const char *banner = strstr(out, "training mlp"), *step = strstr(out, "step 1/");
    CHECK_MSG(banner && step && banner < step, "banner after the steps: %s", out);
}

static int count(const char *s, const char *what) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what)) n++;
    return n;
}

/* The points of the n-th polyline of a class. */
static int points(const char *svg, const char *cls, int nth) {
    const char *p = svg;
    for (int i = 0; i <= nth && p; i++)
        if ((p = strstr(p, cls))) p += strlen(cls);
    const char *q = p ? strstr(p, "points='") : NULL;
    if (!q) return -1;
    int n = 0;
    for (q += 8; *q && *q != '\''; q++) n += *q == ',';
    return n;
}

/* The plot of a resumed run: ticks and gridlines on both axes, epoch
 * lines, the checkpoint's part of the curve, accuracy values, the time split
 * in ms; rendered once to PNG to be sure it parses. */
TEST(plot_continues_and_renders) {
    char ck[256], svg[256], png[256];
    snprintf(ck, sizeof ck, "%s/p.st", cli_tmp);
    snprintf(svg, sizeof svg, "%s/p.svg", cli_tmp);
    snprintf(png, sizeof png, "%s/p.png", cli_tmp);
    /* 8x8 images, 10 steps per epoch of batch 6000: epoch lines within 12 steps */
    const char *args = "--data fake --model mlp --image-size 8 --batch-size 6000 --test-size 100 --lr-schedule none";
    CHECK(cli_run(out, sizeof out, true, "train %s --steps 6 --save %s", args, ck) == 0);
    CHECK(cli_run(out, sizeof out, true, "train %s --steps 12 --resume %s --plot %s", args, ck, svg) == 0);
    char *s = cli_slurp(svg, NULL);
    CHECK(s != NULL);
    if (!s) return;
    CHECK_MSG(count(s, "class='ytick'") >= 8 && count(s, "class='xtick'") >= 8 && count(s, "class='grid'") >= 16,
              "ticks: %d y, %d x, %d gridlines", count(s, "class='ytick'"), count(s, "class='xtick'"),
              count(s, "class='grid'"));
    CHECK_MSG(strstr(s, ">epoch 1<") && strstr(s, "resumed at step 6"), "no epoch or resume marks");
    CHECK_MSG(points(s, "class='loss'", 0) == 6 && points(s, "class='loss'", 1) == 6,
              "the curve does not continue the checkpoint's: %d + %d points", points(s, "class='loss'", 0),
              points(s, "class='loss'", 1));
    CHECK_MSG(count(s, "class='accval'") == 3 && strstr(s, "latest "), "accuracy values (steps 6, 10, 12): %d",
              count(s, "class='accval'"));
    CHECK_MSG(strstr(s, " ms ("), "the time split does not use ms for parts under a second");
    free(s);
    if (system("command -v rsvg-convert > /dev/null 2>&1")) {
        printf("  (skipped the PNG rendering: rsvg-convert is not installed; scripts/install-deps.sh installs "
               "librsvg2-bin)\n");
        return;
    }
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rsvg-convert %s -o %s", svg, png);
    CHECK_MSG(system(cmd) == 0, "rsvg-convert could not render the SVG");
    char *p = cli_slurp(png, NULL);
    CHECK_MSG(p && !memcmp(p, "\x89PNG", 4), "no PNG written");
    free(p);
}

int main(int argc, char **argv) {
    if (cli_setup(argc > 1 ? argv[1] : NULL, "lt_test_cli_robust")) return 1;
    RUN(usage_errors);
    RUN(bad_output_paths_are_usage_errors);
    RUN(at_end_failures_keep_the_rest);
    RUN(resume_checks);
    RUN(reports_and_messages);
    RUN(plot_continues_and_renders);
    RUN(signals_save_the_run);
    RUN(second_signal_exits_at_once);
    cli_cleanup();
    return h_report();
}
