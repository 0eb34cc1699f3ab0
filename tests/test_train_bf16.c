/* bfloat16 mixed precision in training (issue 15): a ResNet-20 trained 20
 * steps under autocast gives the losses PyTorch 1.13 gives under
 * torch.autocast("cpu", torch.bfloat16) from the same weights and batch
 * (tests/data/resnet20_bf16_train, scripts/make_bf16_fixture.py), within
 * 2e-2 relative; the master weights and optimizer state stay float32; a
 * checkpoint of a bfloat16 run resumes in bfloat16 (the same losses as the
 * run that went on) and in float32. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <unistd.h>

static char g_dir[512];

typedef struct fixture {
    int n;
    char **names;
    lt_tensor **t;
} fixture;

static lt_tensor *get(const fixture *f, const char *name) {
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->names[i], name)) return f->t[i];
    h_fail(__FILE__, __LINE__, "fixture has no tensor '%s'", name);
    return NULL;
}

/* The sanitizer build (no oneDNN: every bf16 conv is the reference kernel)
 * checks the first 5 of the fixture's 20 steps; `make test` checks all 20. */
#if defined(__SANITIZE_ADDRESS__)
enum { FIXTURE_STEPS = 5 };
#else
enum { FIXTURE_STEPS = 20 };
#endif

static lt_optim *adamw(lt_model *m) {
    lt_tensor **ps;
    int n = lt_model_params(m, &ps, NULL);
    return lt_optim_adamw(n, ps, 1e-3, 0.9, 0.999, 1e-8, 0.01, false);
}

/* steps optimizer steps on (x, y); forward and loss in an autocast region if bf16. */
static void train(lt_model *m, lt_optim *o, lt_tensor *x, lt_tensor *y, int steps, int bf16, double *losses) {
    for (int s = 0; s < steps; s++) {
        if (bf16) lt_autocast_begin(LT_BF16);
        lt_tensor *logits = lt_model_forward(m, x), *loss = lt_cross_entropy(logits, y, 0);
        if (bf16) lt_autocast_end();
        CHECK(loss && lt_dtype_of(loss) == LT_F32);
        CHECK(lt_backward(loss) == 0);
        CHECK(lt_optim_step(o) == 0);
        lt_optim_zero_grad(o);
        lt_mark_step();
        losses[s] = lt_item(loss);
        lt_free(logits);
        lt_free(loss);
    }
}

/* Every tensor of the model's state and the optimizer's state is float32. */
static int all_f32(lt_model *m, lt_optim *o) {
    lt_tensor **ts;
    int n = lt_model_state(m, &ts, NULL), ok = n > 0;
    for (int i = 0; i < n; i++) ok &= lt_dtype_of(ts[i]) == LT_F32 || lt_dtype_of(ts[i]) == LT_I64;
    const char *on[256];
    lt_tensor *ot[256];
    int k = lt_optim_state(o, 256, on, ot);
    for (int i = 0; i < k && i < 256; i++) ok &= lt_dtype_of(ot[i]) == LT_F32;
    return ok && k > 0;
}

TEST(resnet20_bf16_matches_pytorch_autocast) {
    char path[600];
    snprintf(path, sizeof path, "%s/resnet20_bf16_train.safetensors", g_dir);
    fixture f;
    f.n = lt_load_safetensors(path, &f.names, &f.t);
    CHECK_MSG(f.n > 0, "%s: %s", path, lt_error_message());
    if (f.n <= 0) return;
    lt_model *m = lt_model_new("resnet20", 1, 10);
    CHECK(lt_model_load_state(m, f.n, (const char *const *)f.names, f.t, false) > 0);
    lt_optim *o = adamw(m);
    double l[20], *want = h_read(get(&f, "losses")), *l32 = h_read(get(&f, "losses_f32")), worst = 0, gap = 0;
    train(m, o, get(&f, "x"), get(&f, "y"), FIXTURE_STEPS, 1, l);
    for (int s = 0; s < FIXTURE_STEPS; s++) {
        double d = fabs(l[s] - want[s]) / fabs(want[s]);
        worst = d > worst || isnan(d) ? d : worst;
        if (getenv("LT_TEST_VERBOSE")) printf("    step %2d loss %.6f PyTorch %.6f float32 %.6f\n", s, l[s], want[s], l32[s]);
        gap = fmax(gap, fabs(l32[s] - want[s]) / fabs(want[s]));
        CHECK_MSG(d <= 2e-2, "step %d: loss %.6f, PyTorch autocast %.6f (rel %.2g)", s, l[s], want[s], d);
    }
    printf("  %d bf16 losses within %.3g (relative) of PyTorch autocast's (PyTorch's own float32 run: %.3g)\n",
           FIXTURE_STEPS, worst, gap);
    CHECK_MSG(all_f32(m, o), "master weights or optimizer state not float32");
    free(want), free(l32);
    lt_optim_free(o);
    lt_model_free(m);
    h_free_loaded(f.n, f.names, f.t, 0, NULL, NULL);
    CHECK_NO_ERR();
}

/* The model's and the optimizer's state in one file, as `lazytensor train --save`. */
static int save_ckpt(const char *path, lt_model *m, lt_optim *o) {
    lt_tensor **mt, *t[512];
    const char **mn, *n[512];
    int nm = lt_model_state(m, &mt, &mn);
    memcpy(t, mt, sizeof *t * (size_t)nm);
    memcpy(n, mn, sizeof *n * (size_t)nm);
    int no = lt_optim_state(o, 512 - nm, n + nm, t + nm);
    return lt_save_safetensors(path, nm + no, n, t);
}

/* A fresh model and optimizer from the file: model names, then the optimizer's. */
static void load_ckpt(const char *path, lt_model *m, lt_optim *o, int64_t step) {
    char **names;
    lt_tensor **ts;
    int n = lt_load_safetensors(path, &names, &ts);
    CHECK(n > 0);
    if (n <= 0) return;
    for (int i = 0; i < n; i++) CHECK_MSG(lt_dtype_of(ts[i]) != LT_BF16, "checkpoint tensor %s is bfloat16", names[i]);
    int nm = lt_model_load_state(m, n, (const char *const *)names, ts, false);
    CHECK(nm > 0 && nm < n);
    CHECK(lt_optim_load_state(o, n - nm, (const char *const *)names + nm, ts + nm) == 0);
    CHECK(lt_optim_set_step(o, -1, step) == 0);
    h_free_loaded(n, names, ts, 0, NULL, NULL);
}

TEST(checkpoint_resume_bf16_and_fp32) {
    char path[600], ck[64];
    snprintf(path, sizeof path, "%s/resnet20_bf16_train.safetensors", g_dir);
    snprintf(ck, sizeof ck, "/tmp/lt_bf16_ckpt_%d.safetensors", (int)getpid());
    fixture f;
    f.n = lt_load_safetensors(path, &f.names, &f.t);
    if (f.n <= 0) return;
    lt_tensor *x = get(&f, "x"), *y = get(&f, "y");
    lt_model *m = lt_model_new("resnet20", 1, 10);
    lt_model_load_state(m, f.n, (const char *const *)f.names, f.t, false);
    lt_optim *o = adamw(m);
    double a[4], b[4], r[4], r32[4];
    train(m, o, x, y, 4, 1, a);
    CHECK(all_f32(m, o));
    CHECK(save_ckpt(ck, m, o) == 0);
    train(m, o, x, y, 4, 1, b); /* the run that went on */
    for (int prec = 1; prec >= 0; prec--) {
        lt_model *m2 = lt_model_new("resnet20", 1, 10);
        lt_optim *o2 = adamw(m2);
        load_ckpt(ck, m2, o2, 4);
        train(m2, o2, x, y, 4, prec, prec ? r : r32);
        lt_optim_free(o2);
        lt_model_free(m2);
    }
    for (int s = 0; s < 4; s++) {
        CHECK_MSG(fabs(r[s] - b[s]) <= 1e-6 * fabs(b[s]), "bf16 resume step %d: %.7f, uninterrupted %.7f", s, r[s], b[s]);
        CHECK_MSG(fabs(r32[s] - b[s]) <= 2e-2 * fabs(b[s]), "fp32 resume step %d: %.7f, bf16 run %.7f", s, r32[s], b[s]);
    }
    remove(ck);
    lt_optim_free(o);
    lt_model_free(m);
    h_free_loaded(f.n, f.names, f.t, 0, NULL, NULL);
    CHECK_NO_ERR();
}

int main(void) {
    const char *dir = getenv("LT_TEST_DATA"), *slash = strrchr(__FILE__, '/');
    if (dir) snprintf(g_dir, sizeof g_dir, "%s", dir);
    else if (slash) snprintf(g_dir, sizeof g_dir, "%.*s/data", (int)(slash - __FILE__), __FILE__);
    else snprintf(g_dir, sizeof g_dir, "data");
    RUN(resnet20_bf16_matches_pytorch_autocast);
    RUN(checkpoint_resume_bf16_and_fp32);
    return h_report();
}
