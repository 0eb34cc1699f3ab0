/* Optimizers against PyTorch 1.13 (tests/data/optim_steps.safetensors, from
 * scripts/make_fixtures.py): three steps of SGD (momentum, nesterov, weight
 * decay; dampening, maximize), Adam and AdamW (with and without amsgrad) on
 * fixed parameters and gradients must give PyTorch's parameters and state to
 * 1e-6; StepLR and CosineAnnealingLR must give its learning rates; steps after
 * the first must not recompile. */
#include "harness.h"

#include "optim/optim.h"

#include <stdarg.h>

#define STEPS 3
#define NP 2
#define TOL 1e-6

static int g_n;
static char **g_names;
static lt_tensor **g_fx;
static double g_worst; /* largest difference seen, reported at the end */

static lt_tensor *fx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static lt_tensor *fx(const char *fmt, ...) {
    char name[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    for (int i = 0; i < g_n; i++)
        if (!strcmp(g_names[i], name)) return g_fx[i];
    h_fail(__FILE__, __LINE__, "fixture has no tensor '%s'", name);
    return NULL;
}

/* |got - want| <= TOL * max(1, |want|) elementwise. */
static void close_to(lt_tensor *got, lt_tensor *want, const char *what) {
    if (!got || !want) {
        h_fail(__FILE__, __LINE__, "%s: missing tensor (%s)", what, lt_error_message());
        return;
    }
    int64_t n = lt_numel(want);
    if (lt_numel(got) != n) {
        h_fail(__FILE__, __LINE__, "%s: %lld elements, want %lld", what, (long long)lt_numel(got), (long long)n);
        return;
    }
    double *a = h_read(got), *b = h_read(want), worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]) / fmax(1, fabs(b[i]));
        worst = d > worst || isnan(d) ? d : worst;
    }
    if (!(worst <= TOL)) h_fail(__FILE__, __LINE__, "%s: differs from PyTorch by %g", what, worst);
    g_worst = fmax(g_worst, worst);
    free(a);
    free(b);
}

typedef struct cfg {
    const char *name;
    int kind; /* 0 sgd, 1 adam, 2 adamw */
    double lr, a, b, c, wd;
    bool flag, maximize;
} cfg;

/* The same settings as OPTIMS in scripts/make_fixtures.py. a, b, c: momentum,
 * dampening, - (SGD) or beta1, beta2, eps (Adam); flag: nesterov / amsgrad. */
static const cfg CFGS[] = {
    {"sgd", 0, 0.1, 0.9, 0, 0, 0.01, true, false},
    {"sgd_damp_max", 0, 0.05, 0.8, 0.1, 0, 0, false, true},
    {"adam", 1, 0.01, 0.9, 0.999, 1e-8, 0.01, false, false},
    {"adam_ams", 1, 0.01, 0.8, 0.99, 1e-6, 0, true, false},
    {"adamw", 2, 0.01, 0.9, 0.999, 1e-8, 0.1, false, false},
    {"adamw_ams", 2, 0.02, 0.9, 0.999, 1e-8, 0.05, true, false},
};

static lt_optim *make(const cfg *c, lt_tensor **ps) {
    lt_optim *o = c->kind == 0 ? lt_optim_sgd(NP, ps, c->lr, c->a, c->b, c->wd, c->flag)
                : c->kind == 1 ? lt_optim_adam(NP, ps, c->lr, c->a, c->b, c->c, c->wd, c->flag)
                               : lt_optim_adamw(NP, ps, c->lr, c->a, c->b, c->c, c->wd, c->flag);
    if (o && c->maximize) lt_optim_set(o, -1, "maximize", 1);
    return o;
}

static void compare(const cfg *c, lt_optim *o, lt_tensor **ps) {
    char what[128];
    for (int i = 0; i < NP; i++) {
        snprintf(what, sizeof what, "%s.p%d", c->name, i);
        close_to(ps[i], fx("%s", what), what);
    }
    const char *names[8];
    lt_tensor *ts[8];
    int ns = lt_optim_state(o, 8, names, ts);
    CHECK(ns == (c->kind == 0 ? NP : c->flag ? 3 * NP : 2 * NP));
    for (int k = 0; k < ns && k < 8; k++) {
        snprintf(what, sizeof what, "%s.%s", c->name, names[k]);
        close_to(ts[k], fx("%s", what), what);
    }
}

static lt_tensor *copy_of(lt_tensor *t) {
    double *v = h_read(t);
    float f[64];
    for (int64_t i = 0; i < lt_numel(t); i++) f[i] = (float)v[i];
    free(v);
    return lt_from_data(f, LT_F32, lt_ndim(t), lt_shape(t));
}

/* The update rules with explicit gradients: needs only elementwise ops. */
TEST(update_rules_match_pytorch) {
    for (size_t ci = 0; ci < sizeof CFGS / sizeof CFGS[0]; ci++) {
        const cfg *c = &CFGS[ci];
        lt_tensor *ps[NP] = {copy_of(fx("p0")), copy_of(fx("p1"))};
        lt_optim *o = make(c, ps);
        CHECK(o != NULL);
        if (!o) continue;
        double u0 = 0;
        for (int k = 0; k < STEPS; k++) {
            if (k == 1) u0 = lt_metric("UncachedCompile");
            for (int i = 0; i < NP; i++) {
                lt_tensor *g = fx("g%d.%d", k, i);
                if (c->kind == 0) {
                    o->params[i].step++;
                    CHECK(opt_sgd_update(&o->groups[0], &o->params[i], g) == 0);
                } else {
                    CHECK(opt_adam_update(&o->groups[0], &o->params[i], g, c->kind == 2) == 0);
                }
            }
            lt_mark_step();
        }
        /* State is made with the optimizer and the changing bias corrections
         * are runtime scalars: the step compiles once. Only SGD with
         * dampening takes PyTorch's special first step (buf = d). */
        double allowed = (c->kind == 0 && c->b != 0) ? 1 : 0;
        CHECK_MSG(lt_metric("UncachedCompile") - u0 <= allowed, "%s recompiled: %g", c->name,
                  lt_metric("UncachedCompile") - u0);
        compare(c, o, ps);
        CHECK(lt_optim_get_step(o, -1) == STEPS);
        lt_optim_free(o);
        lt_free(ps[0]);
        lt_free(ps[1]);
        CHECK_NO_ERR();
    }
}

/* The whole path: gradients from lt_backward, lt_optim_step in no-grad mode. */
TEST(step_with_autograd_matches_pytorch) {
    for (size_t ci = 0; ci < sizeof CFGS / sizeof CFGS[0]; ci++) {
        const cfg *c = &CFGS[ci];
        lt_tensor *ps[NP] = {copy_of(fx("p0")), copy_of(fx("p1"))};
        for (int i = 0; i < NP; i++) lt_set_requires_grad(ps[i], true);
        lt_optim *o = make(c, ps);
        for (int k = 0; k < STEPS; k++) {
            /* loss = sum_i sum(p_i * g_i): d loss / d p_i = g_i */
            lt_tensor *m0 = lt_mul(ps[0], fx("g%d.0", k)), *m1 = lt_mul(ps[1], fx("g%d.1", k));
            lt_tensor *s0 = lt_sum(m0, 0, NULL, false), *s1 = lt_sum(m1, 0, NULL, false);
            lt_tensor *loss = lt_add(s0, s1);
            CHECK(lt_backward(loss) == 0);
            CHECK(lt_optim_step(o) == 0);
            lt_mark_step();
            lt_optim_zero_grad(o);
            lt_free(m0), lt_free(m1), lt_free(s0), lt_free(s1), lt_free(loss);
        }
        compare(c, o, ps);
        lt_optim_free(o);
        lt_free(ps[0]);
        lt_free(ps[1]);
        CHECK_NO_ERR();
    }
}

TEST(schedules_match_pytorch) {
    int64_t s[1] = {1};
    lt_tensor *p = lt_zeros(LT_F32, 1, s);
    for (int k = 0; k < 2; k++) {
        lt_optim *o = lt_optim_sgd(1, &p, 0.1, 0, 0, 0, false);
        lt_sched *sc = k == 0 ? lt_sched_step_lr(o, 3, 0.5) : lt_sched_cosine(o, 10, 0.001);
        double *want = h_read(fx(k == 0 ? "steplr.lrs" : "cosine.lrs"));
        for (int e = 0; e < 25; e++) {
            lt_sched_step(sc);
            double got = lt_optim_get(o, 0, "lr");
            CHECK_MSG(fabs(got - want[e]) <= 1e-15 * fabs(want[e]), "%s epoch %d: lr %.17g, PyTorch %.17g",
                      k ? "cosine" : "steplr", e + 1, got, want[e]);
        }
        CHECK(lt_sched_epoch(sc) == 25);
        free(want);
        lt_sched_free(sc);
        lt_optim_free(o);
    }
    lt_free(p);
    CHECK_NO_ERR();
}

TEST(groups_options_and_state) {
    int64_t s[1] = {2};
    lt_tensor *a = lt_zeros(LT_F32, 1, s), *b = lt_zeros(LT_F32, 1, s), *i = lt_zeros(LT_I64, 1, s);
    lt_optim *o = lt_optim_adamw(1, &a, 1e-3, 0.9, 0.999, 1e-8, 0.01, false);
    CHECK(lt_optim_add_group(o, 1, &b) == 1);
    CHECK(lt_optim_set(o, 1, "lr", 0.5) == 0);
    CHECK(lt_optim_get(o, 0, "lr") == 1e-3 && lt_optim_get(o, 1, "lr") == 0.5);
    CHECK(lt_optim_get(o, 1, "weight_decay") == 0.01); /* copied from group 0 */
    lt_optim_set_lr(o, 0.25);
    CHECK(lt_optim_get(o, 0, "lr") == 0.25 && lt_optim_get(o, 1, "lr") == 0.25);
    CHECK(isnan(lt_optim_get(o, 0, "nope")));
    CHECK(lt_optim_set(o, 0, "nope", 1) == -1);
    CHECK_ERR(LT_ERR_ARG);
    CHECK(lt_optim_add_group(o, 1, &a) == -1); /* already there */
    CHECK_ERR(LT_ERR_ARG);
    CHECK(lt_optim_add_group(o, 1, &i) == -1);
    CHECK_ERR(LT_ERR_DTYPE);
    CHECK(lt_optim_num_params(o) == 2 && lt_optim_num_groups(o) == 2);
    CHECK(lt_optim_state(o, 0, NULL, NULL) == 4); /* zeros, made with the optimizer */
    /* Loading state creates it; names are checked first. */
    float mv[2] = {1, 2};
    lt_tensor *m = h_f32(1, s, mv);
    const char *good[2] = {"exp_avg.1", "exp_avg_sq.0"}, *bad[1] = {"momentum_buffer.0"};
    lt_tensor *two[2] = {m, m};
    CHECK(lt_optim_load_state(o, 1, bad, two) == -1);
    CHECK_ERR(LT_ERR_ARG);
    CHECK(lt_optim_load_state(o, 2, good, two) == 0);
    const char *names[4];
    lt_tensor *ts[4];
    CHECK(lt_optim_state(o, 4, names, ts) == 4);
    CHECK(!strcmp(names[1], "exp_avg_sq.0") && !strcmp(names[2], "exp_avg.1"));
    EXPECT_VALUES(ts[1], 0, 1, 2);
    EXPECT_VALUES(ts[2], 0, 1, 2);
    EXPECT_VALUES(ts[3], 0, 0, 0);
    CHECK(lt_optim_set_step(o, -1, 7) == 0 && lt_optim_get_step(o, 1) == 7);
    CHECK(lt_optim_sgd(1, &a, -1, 0, 0, 0, false) == NULL);
    CHECK_ERR(LT_ERR_ARG);
    CHECK(lt_optim_sgd(1, &a, 0.1, 0, 0, 0, true) == NULL); /* nesterov without momentum */
    CHECK_ERR(LT_ERR_ARG);
    lt_optim_free(o);
    lt_free(a), lt_free(b), lt_free(i), lt_free(m);
    CHECK_NO_ERR();
}

int main(void) {
    char path[512];
    const char *dir = getenv("LT_TEST_DATA");
    const char *slash = strrchr(__FILE__, '/'); /* tests/data next to this file, unless LT_TEST_DATA says */
    if (dir) snprintf(path, sizeof path, "%s/optim_steps.safetensors", dir);
    else if (slash) snprintf(path, sizeof path, "%.*s/data/optim_steps.safetensors", (int)(slash - __FILE__), __FILE__);
    else snprintf(path, sizeof path, "data/optim_steps.safetensors");
    g_n = lt_load_safetensors(path, &g_names, &g_fx);
    if (g_n < 0) {
        printf("cannot load the fixture: %s\n", lt_error_message());
        return 1;
    }
    RUN(update_rules_match_pytorch);
    RUN(schedules_match_pytorch);
    RUN(groups_options_and_state);
    RUN(step_with_autograd_matches_pytorch);
    printf("largest relative difference from PyTorch: %.3g\n", g_worst);
    for (int i = 0; i < g_n; i++) {
        free(g_names[i]);
        lt_free(g_fx[i]);
    }
    free(g_names);
    free(g_fx);
    return h_report();
}
