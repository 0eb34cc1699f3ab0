/* Channel-blocked activations (src/backend/cpu/layout.c, bn_blocked.c):
 * graphs where convs, batch norm and elementwise groups keep values in
 * oneDNN's nChw16c layout run on the cpu backend and agree with the
 * reference backend (plain NCHW throughout): a ResNet-20 training step's
 * loss and every gradient, its eval forward, and values that leave the
 * blocked island through plain consumers (a reduction, a broadcast, a view,
 * a root). */
#include "harness.h"

#include "backend/cpu/cpu.h"
#include "exec/exec.h"

#include <math.h>

/* max |a - b| / max(1, max |a|) over n values. */
static double norm_err(const double *a, const double *b, int64_t n) {
    double e = 0, m = 1;
    for (int64_t i = 0; i < n; i++) {
        if (fabs(a[i]) > m) m = fabs(a[i]);
        double d = fabs(a[i] - b[i]);
        if (!(d <= e)) e = d; /* NaN counts */
    }
    return e / m;
}

enum { MAXOUT = 200 }; /* ResNet-50 has 161 parameters */

/* Runs a ResNet's forward, loss and (bwd) backward, with batch statistics
 * (train) or running ones, on backend `ref` (1) or cpu (0); outputs every
 * value to compare. ResNet-20 on 4x1x16x16; ResNet-18/50 (max pooling, 1x1
 * bottlenecks) on 2x3x32x32, in eval mode: batch statistics over the 2
 * values a channel has at 1x1 make the training step ill-conditioned (cpu
 * and reference differed by half the loss before blocked layouts too). */
static int resnet_run(const char *name, int ref, int train, int bwd, double **out, int64_t *len) {
    exec_set_backend(ref);
    lt_manual_seed(11);
    int small = strcmp(name, "resnet20") == 0;
    lt_model *m = lt_model_new(name, small ? 1 : 3, 10);
    lt_tensor **ps;
    int np = lt_model_params(m, &ps, NULL), no = 0;
    lt_model_train(m, train);
    int64_t xs[4] = {small ? 4 : 2, small ? 1 : 3, small ? 16 : 32, small ? 16 : 32}, ys[1] = {xs[0]};
    int64_t yv[4] = {1, 7, 3, 3};
    lt_tensor *x = lt_randn(LT_F32, 4, xs), *y = lt_from_data(yv, LT_I64, 1, ys);
    lt_tensor *logits = lt_model_forward(m, x), *loss = lt_cross_entropy(logits, y, 0.0);
    if (bwd) CHECK(lt_backward(loss) == 0);
    lt_mark_step();
    CHECK_NO_ERR();
    lt_tensor *keep[MAXOUT];
    keep[no++] = logits;
    for (int i = 0; bwd && i < np && no < MAXOUT; i++)
        if (lt_grad(ps[i])) keep[no++] = lt_grad(ps[i]);
    for (int i = 0; i < no; i++) {
        out[i] = h_read(keep[i]);
        len[i] = lt_numel(keep[i]);
    }
    lt_free(logits), lt_free(loss), lt_free(x), lt_free(y);
    lt_model_free(m);
    exec_set_backend(-1);
    return no;
}

static void resnet_case(const char *name, int train, int bwd) {
    double *r[MAXOUT], *c[MAXOUT];
    int64_t nr[MAXOUT], nc[MAXOUT];
    int n = resnet_run(name, 1, train, bwd, r, nr), n2 = resnet_run(name, 0, train, bwd, c, nc);
    CHECK(n == n2 && n >= (bwd ? 60 : 1));
    double worst = 0;
    for (int i = 0; i < n && i < n2; i++) {
        CHECK(nr[i] == nc[i]);
        double e = norm_err(r[i], c[i], nr[i]);
        CHECK_MSG(e < 2e-4, "%s %s output %d: cpu vs ref error %.3g", name, train ? "train" : "eval", i, e);
        if (e > worst) worst = e;
        free(r[i]), free(c[i]);
    }
    printf("  %s %s%s: %d outputs, worst normalized error %.3g\n", name, train ? "train" : "eval",
           bwd ? " + backward" : "", n, worst);
}

/* Every instruction-set copy of the blocked batch-norm loops. */
TEST(resnet20_step_matches_reference) {
    for (int level = 0; level <= 2; level++) {
        cpu_set_isa(level);
        resnet_case("resnet20", 1, 1);
    }
    cpu_set_isa(-1);
}
TEST(resnet20_eval_matches_reference) { resnet_case("resnet20", 0, 0); }
TEST(resnet18_eval_backward_matches_reference) { resnet_case("resnet18", 0, 1); }
TEST(resnet50_eval_backward_matches_reference) { resnet_case("resnet50", 0, 1); }

/* Branches of conv -> batch norm -> relu whose relu output r feeds a conv
 * (which wants it blocked) and, in all but the first branch, one other
 * consumer: a per-channel broadcast feeding a conv, a reduction, a
 * transposed view, an elementwise group feeding a conv (blocked through
 * the group), a root. */
enum { NBR = 6 };
static int island_run(int ref, double **out, int64_t *len) {
    exec_set_backend(ref);
    lt_manual_seed(5);
    int64_t xs[4] = {3, 16, 6, 5}, ws[4] = {32, 16, 3, 3}, w2s[4] = {16, 32, 1, 1};
    int64_t st[2] = {1, 1}, pad[2] = {1, 1}, nopad[2] = {0, 0}, dil[2] = {1, 1};
    int64_t cxs[4] = {1, 16, 1, 1}, cws[4] = {32, 16, 1, 1};
    lt_tensor *x = lt_randn(LT_F32, 4, xs), *w2 = lt_randn(LT_F32, 4, w2s);
    lt_tensor *cx = lt_randn(LT_F32, 4, cxs), *cw = lt_randn(LT_F32, 4, cws);
    lt_tensor *o[2 * NBR] = {0};
    for (int k = 0; k < NBR; k++) {
        lt_tensor *w = lt_randn(LT_F32, 4, ws), *a = lt_conv2d(x, w, NULL, st, pad, dil, 1);
        lt_tensor *b = lt_batch_norm(a, NULL, NULL, NULL, NULL, true, 0.1, 1e-5), *r = lt_relu(b), *t = NULL;
        o[2 * k] = lt_conv2d(r, w2, NULL, st, nopad, dil, 1);
        switch (k) {
        case 1: { /* a conv's (1, 32, 1, 1) output: only the broadcast can keep it plain */
            lt_tensor *cb2 = lt_conv2d(cx, cw, NULL, st, nopad, dil, 1);
            t = lt_mul(r, cb2), o[2 * k + 1] = lt_conv2d(t, w2, NULL, st, nopad, dil, 1);
            lt_free(cb2);
            break;
        }
        case 2: o[2 * k + 1] = lt_sum(r, 3, (int[]){0, 2, 3}, false); break;
        case 3: t = lt_transpose(r, 1, 3), o[2 * k + 1] = lt_mul_scalar(t, 2.0); break;
        case 4: t = lt_add(r, r), o[2 * k + 1] = lt_conv2d(t, w2, NULL, st, nopad, dil, 1); break;
        case 5: o[2 * k + 1] = lt_clone(r); break;
        default: break;
        }
        lt_free(w), lt_free(a), lt_free(b), lt_free(r), lt_free(t);
    }
    lt_mark_step();
    CHECK_NO_ERR();
    int n = 0;
    for (int i = 0; i < 2 * NBR; i++) {
        if (!o[i]) continue;
        out[n] = h_read(o[i]);
        len[n++] = lt_numel(o[i]);
        lt_free(o[i]);
    }
    lt_free(x), lt_free(w2), lt_free(cx), lt_free(cw);
    exec_set_backend(-1);
    return n;
}

TEST(blocked_values_meet_plain_consumers) {
    double *r[2 * NBR], *c[2 * NBR];
    int64_t nr[2 * NBR], nc[2 * NBR];
    int n = island_run(1, r, nr), n2 = island_run(0, c, nc);
    CHECK(n == n2 && n == 2 * NBR - 1);
    for (int i = 0; i < n && i < n2; i++) {
        CHECK(nr[i] == nc[i]);
        double e = norm_err(r[i], c[i], nr[i]);
        CHECK_MSG(e < 1e-4, "output %d: cpu vs ref error %.3g", i, e);
        free(r[i]), free(c[i]);
    }
}

int main(void) {
    RUN(resnet20_step_matches_reference);
    RUN(resnet20_eval_matches_reference);
    RUN(resnet18_eval_backward_matches_reference);
    RUN(resnet50_eval_backward_matches_reference);
    RUN(blocked_values_meet_plain_consumers);
    return h_report();
}
