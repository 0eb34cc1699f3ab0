/* Handle scopes (lt_scope_begin / lt_scope_end / lt_scope_keep) and the
 * LiveTensors count: nested calls leak nothing inside a scope, kept handles
 * move to the enclosing scope, the library's own handles (parameters,
 * optimizer state, gradients, autograd's saved values) never belong to a
 * scope, and a 100,000-step training loop under a scope keeps LiveTensors
 * and the resident memory flat. With LT_METRICS=1 the handles still alive
 * at exit are counted. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "harness.h"

#include <unistd.h>

static const char *g_self;

static double live(void) { return lt_metric("LiveTensors"); }

static double rss_mib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
        fclose(f);
    }
    return (double)res * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

static const int64_t s23[2] = {2, 3};

TEST(scope_frees_what_it_made) {
    double before = live();
    lt_tensor *a = lt_ones(LT_F32, 2, s23); /* outside: the caller's */
    lt_scope_begin();
    lt_tensor *x = lt_full(2, LT_F32, 2, s23);
    lt_tensor *y = lt_relu(lt_add(lt_mul(x, a), lt_exp(x))); /* three intermediates, no names */
    lt_tensor *v = lt_slice(y, 0, 0, 1, 1);                   /* a view */
    CHECK(live() == before + 7);
    lt_free(v); /* freeing inside a scope is allowed */
    CHECK(live() == before + 6);
    EXPECT_VALUES(y, 1e-5, 2 + exp(2), 2 + exp(2), 2 + exp(2), 2 + exp(2), 2 + exp(2), 2 + exp(2));
    CHECK(lt_scope_end() == 5);
    CHECK(live() == before + 1);
    EXPECT_VALUES(a, 0, 1, 1, 1, 1, 1, 1); /* untouched */
    lt_free(a);
    CHECK(live() == before);
    CHECK(lt_scope_end() == -1); /* no scope open */
    CHECK_ERR(LT_ERR_STATE);
}

TEST(keep_moves_to_the_enclosing_scope) {
    double before = live();
    lt_scope_begin();
    lt_tensor *outer_kept = NULL, *inner_kept = NULL;
    {
        lt_scope_begin();
        lt_tensor *t = lt_full(3, LT_F32, 2, s23);
        inner_kept = lt_scope_keep(lt_mul(t, t));
        CHECK(lt_scope_keep(t) == t && lt_scope_keep(inner_kept) == inner_kept); /* twice: no harm */
        lt_tensor *u = lt_add(t, t); /* dropped */
        (void)u;
        CHECK(lt_scope_end() == 1);
        outer_kept = t;
    }
    CHECK(live() == before + 2);
    EXPECT_VALUES(inner_kept, 0, 9, 9, 9, 9, 9, 9);
    lt_scope_keep(outer_kept); /* kept again: outlives every scope, the caller's now */
    CHECK(lt_scope_end() == 1); /* inner_kept went with the outer scope */
    CHECK(live() == before + 1);
    EXPECT_VALUES(outer_kept, 0, 3, 3, 3, 3, 3, 3);
    /* a handle made before the scope is not the scope's to keep or free */
    lt_scope_begin();
    lt_scope_keep(outer_kept);
    CHECK(lt_scope_end() == 0);
    CHECK(live() == before + 1);
    lt_free(outer_kept);
    CHECK(live() == before);
    CHECK_NO_ERR();
}

/* A model, its optimizer and a training step inside scopes: what the
 * library keeps (parameters, state, .grad, saved values) survives. */
TEST(library_handles_are_never_scoped) {
    double before = live();
    lt_manual_seed(0);
    lt_scope_begin();
    int64_t sizes[3] = {8, 16, 4};
    lt_model *m = lt_model_mlp(3, sizes);
    lt_tensor **p;
    int np = lt_model_params(m, &p, NULL);
    lt_optim *opt = lt_optim_adamw(np, p, 1e-2, 0.9, 0.999, 1e-8, 0.01, false);
    CHECK(lt_scope_end() == 0); /* nothing of the user's was made */
    int64_t xs[2] = {5, 8}, ys[1] = {5};
    int64_t labels[5] = {0, 1, 2, 3, 0};
    double first = NAN, last = NAN;
    for (int step = 0; step < 30; step++) {
        lt_scope_begin();
        lt_manual_seed(1);
        lt_tensor *x = lt_randn(LT_F32, 2, xs), *y = lt_from_data(labels, LT_I64, 1, ys);
        lt_tensor *loss = lt_cross_entropy(lt_model_forward(m, x), y, 0);
        CHECK(lt_backward(loss) == 0);
        CHECK(lt_grad(p[0]) != NULL);
        CHECK(lt_optim_step(opt) == 0);
        lt_mark_step();
        double l = lt_item(loss);
        if (step == 0) first = l;
        last = l;
        lt_scope_end();
        CHECK(lt_grad(p[0]) != NULL); /* .grad outlives the scope */
        lt_optim_zero_grad(opt);
    }
    CHECK_MSG(last < first * 0.5, "loss did not fall under scopes: %g -> %g", first, last);
    CHECK_NO_ERR();
    lt_optim_free(opt);
    lt_model_free(m);
    CHECK(live() == before);
}

/* One step of a tiny two-layer net written in the natural nested style. */
static void nested_step(lt_tensor *x, lt_tensor *w1, lt_tensor *b1, lt_tensor *w2, lt_optim *opt) {
    lt_tensor *loss = lt_mean(lt_relu(lt_linear(lt_relu(lt_linear(x, w1, b1)), w2, NULL)), 0, NULL, false);
    lt_backward(loss);
    lt_optim_step(opt);
    lt_optim_zero_grad(opt);
    lt_mark_step();
}

TEST(long_loop_stays_flat) {
#if defined(__SANITIZE_ADDRESS__)
    /* the same loop, shorter; ASan holds freed memory in its quarantine
     * (256 MiB), so the RSS is not flat there and only LiveTensors is checked */
    const int steps = 10000;
    const bool check_rss = false;
#else
    const int steps = 100000;
    const bool check_rss = true;
#endif
    int64_t xs[2] = {4, 8}, w1s[2] = {16, 8}, b1s[1] = {16}, w2s[2] = {4, 16};
    lt_manual_seed(2);
    lt_tensor *x = lt_randn(LT_F32, 2, xs), *w1 = lt_randn(LT_F32, 2, w1s), *b1 = lt_zeros(LT_F32, 1, b1s),
              *w2 = lt_randn(LT_F32, 2, w2s);
    lt_tensor *params[3] = {w1, b1, w2};
    for (int i = 0; i < 3; i++) lt_set_requires_grad(params[i], true);
    lt_optim *opt = lt_optim_sgd(3, params, 1e-3, 0.9, 0, 0, false);
    /* without a scope the intermediates pile up, and LiveTensors shows it
     * (an outer scope collects them here, so the test itself leaks nothing) */
    lt_scope_begin();
    double l0 = live();
    for (int i = 0; i < 100; i++) nested_step(x, w1, b1, w2, opt);
    CHECK_MSG(live() >= l0 + 100 * 5, "LiveTensors did not count the leak: %g -> %g", l0, live());
    lt_scope_end();
    double live0 = 0, rss0 = 0;
    for (int i = 0; i < steps; i++) {
        lt_scope_begin();
        nested_step(x, w1, b1, w2, opt);
        lt_scope_end();
        if (i == steps / 10) live0 = live(), rss0 = rss_mib();
    }
    double live1 = live(), rss1 = rss_mib();
    printf("  %d steps under a scope: LiveTensors %g -> %g, RSS %.1f -> %.1f MiB\n", steps, live0, live1, rss0, rss1);
    CHECK_MSG(live1 == live0, "LiveTensors grew: %g -> %g", live0, live1);
    CHECK_MSG(!check_rss || rss1 - rss0 < 4, "RSS grew: %.1f -> %.1f MiB", rss0, rss1);
    CHECK_NO_ERR();
    /* one scope around many steps, freeing by hand inside: the scope's
     * record of freed handles is compacted, not grown */
    lt_scope_begin();
    for (int i = 0; i < steps / 4; i++) {
        lt_tensor *a = lt_add(x, x), *b = lt_mul(a, x);
        lt_free(a);
        lt_free(b);
    }
    CHECK(lt_scope_end() == 0);
    CHECK(live() == live1);
    lt_optim_free(opt);
    for (int i = 0; i < 3; i++) lt_free(params[i]);
    lt_free(x);
}

/* LT_METRICS=1: the handles still alive at exit are counted (a child
 * process of this binary leaks three on purpose). */
TEST(count_at_exit) {
    char cmd[512], out[1 << 14];
    snprintf(cmd, sizeof cmd, "LT_METRICS=1 ASAN_OPTIONS=detect_leaks=0 %s --leak-three 2>&1", g_self);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    if (!p) return;
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    CHECK(pclose(p) == 0);
    CHECK_MSG(strstr(out, "LiveTensors") && strstr(out, "3 tensor handles still alive at exit"), "%s", out);
}

int main(int argc, char **argv) {
    g_self = argv[0];
    if (argc > 1 && !strcmp(argv[1], "--leak-three")) {
        for (int i = 0; i < 3; i++) lt_ones(LT_F32, 2, s23);
        return 0;
    }
    RUN(scope_frees_what_it_made);
    RUN(keep_moves_to_the_enclosing_scope);
    RUN(library_handles_are_never_scoped);
    RUN(long_loop_stays_flat);
    RUN(count_at_exit);
    return h_report();
}
