/* GPT against PyTorch 1.13 (tests/data/gpt_train.safetensors, from
 * scripts/make_gpt_fixture.py): a 4-layer nanoGPT's initial weights, 20
 * batches, and the losses of 20 AdamW steps (decay on 2-d weights only)
 * with clip_grad_norm_(1.0); from the same weights and batches lazytensor
 * gives the same losses to 1e-4 (relative), compiling once. Also: the
 * state names are nanoGPT's, the head is tied, GPT-2's initialization. */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include "harness.h"

#include <unistd.h>

#include "data/text.h"

static char g_dir[512];

static const lt_gpt_config k_cfg = {4, 4, 32, 16, 64, 0.0};

static lt_tensor *get(int n, char **names, lt_tensor **t, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], name)) return t[i];
    h_fail(__FILE__, __LINE__, "fixture has no tensor '%s'", name);
    return NULL;
}

/* AdamW as the fixture: group 0 the 2-d weights (decay 0.1), group 1 the rest. */
static lt_optim *make_opt(lt_model *m) {
    lt_tensor **ps, *decay[64], *rest[64];
    int n = lt_model_params(m, &ps, NULL), nd = 0, nr = 0;
    for (int i = 0; i < n && i < 64; i++) {
        if (lt_ndim(ps[i]) >= 2) decay[nd++] = ps[i];
        else rest[nr++] = ps[i];
    }
    lt_optim *o = lt_optim_adamw(nd, decay, 3e-3, 0.9, 0.95, 1e-8, 0.1, false);
    int g = lt_optim_add_group(o, nr, rest);
    CHECK(g == 1 && lt_optim_set(o, g, "weight_decay", 0) == 0);
    return o;
}

TEST(gpt_20_steps_match_pytorch) {
    char path[640], **names;
    lt_tensor **t;
    snprintf(path, sizeof path, "%s/gpt_train.safetensors", g_dir);
    int n = lt_load_safetensors(path, &names, &t);
    CHECK_MSG(n > 0, "cannot load %s: %s", path, lt_error_message());
    if (n <= 0) return;
    lt_model *m = lt_model_gpt(&k_cfg);
    lt_tensor **ps;
    int nstate = lt_model_state(m, &ps, NULL);
    CHECK(lt_model_load_state(m, n, (const char *const *)names, t, false) == nstate);
    lt_mark_step();
    /* each batch a fresh data tensor, as a loader gives them (a view into
     * the fixture's (20, B, T) would be a new window, a new graph, per step) */
    double *xv = h_read(get(n, names, t, "x")), *yv = h_read(get(n, names, t, "y"));
    const int64_t bt = 4 * 16;
    int64_t *xb = malloc(sizeof *xb * bt), *yb = malloc(sizeof *yb * bt);
    double *want = h_read(get(n, names, t, "losses")), worst = 0, u0 = 0;
    lt_optim *o = make_opt(m);
    int np = lt_model_params(m, &ps, NULL);
    for (int s = 0; s < 20; s++) {
        if (s == 2) u0 = lt_metric("UncachedCompile");
        for (int64_t i = 0; i < bt; i++) xb[i] = (int64_t)xv[s * bt + i], yb[i] = (int64_t)yv[s * bt + i];
        lt_tensor *xs = lt_from_data(xb, LT_I64, 2, (int64_t[]){4, 16}), *ys = lt_from_data(yb, LT_I64, 1, &bt);
        lt_tensor *logits = lt_model_forward(m, xs);
        lt_tensor *l2 = lt_reshape(logits, 2, (int64_t[]){-1, k_cfg.vocab_size}), *loss = lt_cross_entropy(l2, ys, 0);
        CHECK(lt_backward(loss) == 0);
        lt_tensor *norm = lt_clip_grad_norm_(np, ps, 1.0);
        CHECK(lt_optim_step(o) == 0);
        lt_mark_step();
        double l = lt_item(loss), d = fabs(l - want[s]) / fabs(want[s]);
        worst = d > worst || isnan(d) ? d : worst;
        if (getenv("LT_TEST_VERBOSE")) printf("    step %2d loss %.7f PyTorch %.7f rel %.2g\n", s, l, want[s], d);
        CHECK_MSG(d <= 1e-4, "step %d: loss %.7f, PyTorch %.7f (rel %.2g)", s, l, want[s], d);
        lt_optim_zero_grad(o);
        lt_free(xs), lt_free(ys), lt_free(logits), lt_free(l2), lt_free(loss), lt_free(norm);
        if (lt_error()) break;
    }
    printf("  gpt: 20 losses within %.3g (relative) of PyTorch's\n", worst);
    CHECK_MSG(lt_metric("UncachedCompile") - u0 == 0, "steps 3..20 recompiled %g times", lt_metric("UncachedCompile") - u0);
    free(want), free(xv), free(yv), free(xb), free(yb);
    lt_optim_free(o);
    lt_model_free(m);
    for (int i = 0; i < n; i++) free(names[i]), lt_free(t[i]);
    free(names), free(t);
    CHECK_NO_ERR();
}

/* nanoGPT's state_dict names and shapes (lm_head.weight is wte: not listed
 * twice), GPT-2's init statistics, and the tied head: the logits are the
 * final hidden states times wte^T. */
TEST(gpt_names_init_and_tied_head) {
    lt_gpt_config cfg = {2, 2, 64, 8, 300, 0.0};
    lt_manual_seed(5);
    lt_model *m = lt_model_gpt(&cfg);
    lt_tensor **ts;
    const char **names;
    int n = lt_model_state(m, &ts, &names);
    CHECK(n == 2 + 2 * 12 + 2);
    CHECK(!strcmp(names[0], "transformer.wte.weight") && !strcmp(names[1], "transformer.wpe.weight"));
    CHECK(!strcmp(names[2], "transformer.h.0.ln_1.weight") && !strcmp(names[5], "transformer.h.0.attn.c_attn.bias"));
    CHECK(!strcmp(names[n - 1], "transformer.ln_f.bias"));
    for (int i = 0; i < n; i++) {
        int proj = strstr(names[i], "c_proj.weight") != NULL, w2 = lt_ndim(ts[i]) == 2;
        if (!w2) continue;
        double *v = h_read(ts[i]), s = 0;
        for (int64_t k = 0; k < lt_numel(ts[i]); k++) s += v[k] * v[k];
        double sd = sqrt(s / (double)lt_numel(ts[i])), want = proj ? 0.02 / sqrt(4.0) : 0.02;
        CHECK_MSG(fabs(sd - want) < 0.1 * want, "%s: std %g, want %g", names[i], sd, want);
        free(v);
    }
    CHECK(!lt_model_forward(m, NULL));
    CHECK_ERR(LT_ERR_NULL);
    lt_tensor *bad = lt_zeros(LT_I64, 2, (int64_t[]){1, 9}); /* T > block_size */
    CHECK(!lt_model_forward(m, bad));
    CHECK_ERR(LT_ERR_SHAPE);
    lt_free(bad);
    lt_gpt_config badcfg = {2, 3, 64, 8, 300, 0.0}; /* 64 % 3 */
    CHECK(!lt_model_gpt(&badcfg));
    CHECK_ERR(LT_ERR_ARG);
    lt_model_free(m);
}

/* Byte-level text: the held-out tail, windows with y = x shifted by one
 * inside their part, the same batch for the same (seed, step), the
 * unigram baseline by hand. */
TEST(text_corpus_windows_and_unigram) {
    char path[] = "/tmp/lt_text_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    char buf[200];
    for (int i = 0; i < 200; i++) buf[i] = (char)('a' + i % 7);
    CHECK(write(fd, buf, sizeof buf) == (ssize_t)sizeof buf);
    close(fd);
    data_text t;
    CHECK(data_text_load(&t, path) == 0 && t.n == 200 && t.n_train == 180);
    int64_t x[3 * 8], y[3 * 8], x2[3 * 8], y2[3 * 8];
    CHECK(data_text_batch(&t, 0, 3, 8, 7, 5, x, y) == 0 && data_text_batch(&t, 0, 3, 8, 7, 5, x2, y2) == 0);
    CHECK(!memcmp(x, x2, sizeof x) && !memcmp(y, y2, sizeof y));
    for (int i = 0; i < 24; i++) CHECK(y[i] == 'a' + (x[i] - 'a' + 1) % 7);
    CHECK(data_text_batch(&t, 1, 3, 8, 7, 0, x, y) == 0); /* validation: inside the last 20 bytes */
    CHECK(data_text_batch(&t, 1, 1, 20, 7, 0, x, y) != 0);
    CHECK_ERR(LT_ERR_ARG);
    double cnt[7] = {0}, want = 0;
    for (int i = 0; i < 180; i++) cnt[i % 7] += 1;
    for (int i = 180; i < 200; i++) want -= log((cnt[i % 7] + 1) / (180.0 + 256));
    CHECK(fabs(data_text_unigram_loss(&t) - want / 20) < 1e-12);
    data_text_free(&t);
    unlink(path);
    CHECK(data_text_load(&t, "/nonexistent/corpus") != 0);
    CHECK_ERR(LT_ERR_IO);
}

int main(void) {
    const char *dir = getenv("LT_TEST_DATA"), *slash = strrchr(__FILE__, '/');
    if (dir) snprintf(g_dir, sizeof g_dir, "%s", dir);
    else if (slash) snprintf(g_dir, sizeof g_dir, "%.*s/data", (int)(slash - __FILE__), __FILE__);
    else snprintf(g_dir, sizeof g_dir, "data");
    RUN(gpt_20_steps_match_pytorch);
    RUN(gpt_names_init_and_tied_head);
    RUN(text_corpus_windows_and_unigram);
    return h_report();
}
