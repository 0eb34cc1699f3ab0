/* The `lazytensor` program end to end, on generated data: a few training
 * steps of every model with --report json (parsed here), a falling loss,
 * checkpoint + resume continuing the same loss curve, eval, the missing-data
 * message, and --help. Runs ./lazytensor from the build directory (CTest's
 * working directory) or the binary named by $LT_CLI. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "cli_run.h"
#include "harness.h"

/* the short names this file's tests were written with */
#define run cli_run
#define jnum cli_jnum
#define jlosses cli_jlosses
#define tmp cli_tmp

#include "data/image.h"

static bool json_object(const char *js) {
    const char *a = strchr(js, '{'), *b = strrchr(js, '}');
    return a && b && b > a && !strchr(b + 1, '{');
}

static void small_run(const char *model) {
    static char out[1 << 16];
    int rc = run(out, sizeof out, false,
                 "train --data fake --model %s --image-size 32 --batch-size 4 --steps 3 --test-size 8 --eval-batch 8 "
                 "--report json",
                 model);
    CHECK_MSG(rc == 0, "%s: exit %d", model, rc);
    CHECK_MSG(json_object(out), "%s: not one JSON object: %s", model, out);
    CHECK_MSG(jnum(out, "steps") == 3, "%s: steps %g", model, jnum(out, "steps"));
    CHECK_MSG(isfinite(jnum(out, "final_loss")), "%s: final_loss not finite", model);
    CHECK_MSG(jnum(out, "test_accuracy") >= 0 && jnum(out, "test_accuracy") <= 100, "%s: accuracy", model);
    const char *keys[] = {"images_per_sec", "trace_ms_per_step", "compile_ms_total", "execute_ms_per_step",
                          "uncached_compiles", "peak_bytes"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        CHECK_MSG(strstr(out, keys[i]) != NULL, "%s: no %s", model, keys[i]);
    /* Steady state: the training step compiles once (steps 2 and 3 hit the
     * cache), the evaluation graph once. */
    CHECK_MSG(jnum(out, "uncached_compiles") == 2 && jnum(out, "cached_compiles") >= 2,
              "%s: %g uncached, %g cached compiles", model, jnum(out, "uncached_compiles"),
              jnum(out, "cached_compiles"));
}

TEST(every_model_runs) {
    small_run("mlp");
    small_run("resnet20");
    small_run("resnet18");
#if !defined(__SANITIZE_ADDRESS__)
    /* the sanitizer build runs convs on the reference kernels: ResNet-50's
     * bottleneck blocks alone took minutes there; `make test` runs it */
    small_run("resnet50");
#endif
}

TEST(loss_falls) {
    static char out[1 << 16];
    CHECK(run(out, sizeof out, false,
              "train --data fake --model mlp --batch-size 32 --steps 40 --test-size 500 --report json") == 0);
    double l[64];
    int n = jlosses(out, l, 64);
    CHECK(n == 40);
    if (n == 40) {
        double a = 0, b = 0;
        for (int i = 0; i < 5; i++) a += l[i], b += l[35 + i];
        CHECK_MSG(b < 0.7 * a, "loss did not fall: first %g, last %g", a / 5, b / 5);
    }
    CHECK_MSG(jnum(out, "test_accuracy") > 30, "fake classes not learned: %g%%", jnum(out, "test_accuracy"));
    CHECK(jnum(out, "uncached_compiles") < 10); /* the step compiles once, not per step */
    /* ResNet-20 end to end on the (learnable, 10-class) fake data. ResNet-18/50
     * take 1000-class fake data that a few steps cannot learn; their loss
     * falling is checked through the API in test_train_fixture. */
    CHECK(run(out, sizeof out, false,
              "train --data fake --model resnet20 --batch-size 8 --steps 8 --test-size 0 --report json") == 0);
    n = jlosses(out, l, 64);
    CHECK(n == 8);
    if (n == 8) {
        double a = (l[0] + l[1] + l[2]) / 3, b = (l[5] + l[6] + l[7]) / 3;
        CHECK_MSG(b < 0.9 * a, "resnet20 loss did not fall: first %g, last %g", a, b);
    }
}

TEST(resume_continues_curve) {
    static char full[1 << 16], half[1 << 16], rest[1 << 16], ev[4096];
    const char *common = "--data fake --model mlp --batch-size 8 --test-size 0 --optimizer adamw --lr-schedule none";
    /* no schedule: a cosine over 4 steps is another curve than one over 8 */
    CHECK(run(full, sizeof full, false, "train %s --steps 8 --report json", common) == 0);
    CHECK(run(half, sizeof half, false, "train %s --steps 4 --save %s/ck.safetensors --report json", common, tmp) == 0);
    CHECK(run(rest, sizeof rest, false, "train %s --steps 8 --resume %s/ck.safetensors --report json", common, tmp) == 0);
    double lf[16], lh[16], lr[16];
    int nf = jlosses(full, lf, 16), nh = jlosses(half, lh, 16), nr = jlosses(rest, lr, 16);
    CHECK(nf == 8 && nh == 4 && nr == 4 && jnum(rest, "first_step") == 4);
    if (nf == 8 && nh == 4 && nr == 4)
        for (int i = 0; i < 4; i++) {
            CHECK_MSG(fabs(lh[i] - lf[i]) <= 1e-6 * fabs(lf[i]), "step %d: %.9g vs %.9g", i, lh[i], lf[i]);
            CHECK_MSG(fabs(lr[i] - lf[4 + i]) <= 1e-5 * fabs(lf[4 + i]), "resumed step %d: %.9g vs %.9g", 4 + i,
                      lr[i], lf[4 + i]);
        }
    CHECK(run(ev, sizeof ev, false, "eval --data fake --model mlp --test-size 100 --resume %s/ck.safetensors --report json",
              tmp) == 0);
    CHECK_MSG(jnum(ev, "step") == 4 && isfinite(jnum(ev, "test_accuracy")), "eval: %s", ev);
    CHECK(run(ev, sizeof ev, true, "eval --data fake --model resnet20 --resume %s/ck.safetensors", tmp) != 0);
    CHECK(run(ev, sizeof ev, true, "train --data fake --model mlp --resume %s/missing.safetensors", tmp) != 0);
}

TEST(missing_data_and_help) {
    static char out[1 << 16];
    CHECK(run(out, sizeof out, true, "train --data-dir /nonexistent/fmnist --steps 1") != 0);
    CHECK_MSG(strstr(out, "apt-get install dataset-fashion-mnist") != NULL, "no install hint: %s", out);
    CHECK(run(out, sizeof out, false, "--help") == 0);
    const char *opts[] = {"--model", "--data", "--image-size", "--batch-size", "--epochs", "--steps", "--optimizer",
                          "--lr", "--weight-decay", "--momentum", "--lr-schedule", "--seed", "--threads", "--eager",
                          "--backend", "--save", "--resume", "--trace-file", "--metrics", "--report", "--plot"};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        CHECK_MSG(strstr(out, opts[i]) != NULL, "--help does not document %s", opts[i]);
    CHECK(run(out, sizeof out, true, "train --optimizer rmsprop") == 2);
    CHECK(run(out, sizeof out, true, "train --batch-size -3") == 2);
    CHECK(run(out, sizeof out, true, "frobnicate") == 2);
}

TEST(plot_svg) {
    static char out[1 << 16];
    CHECK(run(out, sizeof out, false, "train --data fake --model mlp --batch-size 8 --steps 5 --test-size 16 --plot %s/p.svg",
              tmp) == 0);
    char path[256];
    snprintf(path, sizeof path, "%s/p.svg", tmp);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (!f) return;
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = 0;
    fclose(f);
    CHECK(strstr(out, "<svg") && strstr(out, "</svg>") && strstr(out, "<polyline") && strstr(out, "execute"));
}

/* Evaluation on fake data: a small test set (1000 images) by default, at the
 * training batch size (16 here: 63 batches), with progress lines. */
TEST(fake_eval_defaults) {
    static char out[1 << 16];
    CHECK(run(out, sizeof out, true, "train --data fake --model mlp --batch-size 16 --steps 2 --log-every 50") == 0);
    CHECK_MSG(strstr(out, "evaluating: batch 1/63 ") && strstr(out, "evaluating: batch 50/63 ") &&
                  strstr(out, "evaluating: batch 63/63 "),
              "no evaluation progress over 63 batches: %s", out);
}

/* Flat images, the two classes far apart. */
static unsigned char flat_pixel(int c, int i, size_t k) {
    return (unsigned char)(c ? 200 - k % 7 : 30 + k % 5 + (size_t)i);
}

/* An image folder written here (2 classes of flat PNGs, one broken file):
 * train with the threaded loader, the report's data fields, bench-data,
 * and the errors about the layout. */
TEST(imagefolder_end_to_end) {
    if (!img_have(IMG_PNG)) {
        printf("  skipped: PNG support not built\n");
        return;
    }
    static char out[1 << 16];
    char p[512];
    snprintf(p, sizeof p, "%s/img", tmp);
    CHECK(cli_png_folder(p, 6, 16, flat_pixel) == 0);
    snprintf(p, sizeof p, "%s/img/train/class1/broken.png", tmp);
    FILE *f = fopen(p, "wb");
    if (f) fputs("not a png", f), fclose(f);
    CHECK(run(out, sizeof out, false,
              "train --data imagefolder --data-dir %s/img --image-size 12 --batch-size 4 --steps 6 --workers 2 "
              "--augment --report json", tmp) == 0);
    CHECK_MSG(jnum(out, "steps") == 6 && isfinite(jnum(out, "final_loss")) && jnum(out, "images_skipped") == 1 &&
                  jnum(out, "data_wait_ms_per_step") >= 0 && jnum(out, "decode_images_per_sec") > 0,
              "imagefolder run: %s", out);
    CHECK_MSG(jnum(out, "test_accuracy") >= 0, "no evaluation on val/: %s", out);
    CHECK(run(out, sizeof out, false, "train --data imagefolder --data-dir %s/img --image-size 12 --batch-size 4 "
              "--steps 1 --test-size 0 --report json", tmp) == 0);
    CHECK(run(out, sizeof out, true, "train --data imagefolder --data-dir %s/img --image-size 12 --batch-size 4 --steps 2 "
              "--bad-images fail", tmp) == 1); /* 12: a 224 step on the sanitizers' reference kernels took minutes */
    CHECK_MSG(strstr(out, "broken.png"), "fail mode does not name the file: %s", out);
    CHECK(run(out, sizeof out, false, "bench-data --data-dir %s/img --image-size 12 --batch-size 4 --steps 4 --report json",
              tmp) == 0);
    CHECK_MSG(jnum(out, "images_per_sec") > 0 && jnum(out, "images") == 16, "bench-data: %s", out);
    CHECK(run(out, sizeof out, true, "train --data imagefolder") == 1 && strstr(out, "--data-dir"));
    CHECK(run(out, sizeof out, true, "train --data imagefolder --data-dir %s", tmp) == 1 &&
          strstr(out, "cannot read directory"));
    snprintf(p, sizeof p, "mkdir -p %s/noclass/train", tmp);
    CHECK(system(p) == 0);
    CHECK(run(out, sizeof out, true, "train --data imagefolder --data-dir %s/noclass", tmp) == 1 &&
          strstr(out, "no class folders"));
    CHECK(run(out, sizeof out, true, "train --data imagefolder --data-dir %s/img --mean 1,2", tmp) == 1);
}

int main(int argc, char **argv) {
    if (cli_setup(argc > 1 ? argv[1] : NULL, "lt_test_cli")) return 1;
    RUN(missing_data_and_help);
    RUN(every_model_runs);
    RUN(loss_falls);
    RUN(resume_continues_curve);
    RUN(plot_svg);
    RUN(fake_eval_defaults);
    RUN(imagefolder_end_to_end);
    cli_cleanup();
    return h_report();
}
