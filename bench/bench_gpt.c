/* GPT benchmarks (issue 16), the lazytensor half of the comparison with
 * bench/pytorch_gpt.py (PyTorch 1.13 eager, the same nanoGPT model):
 *   bench_gpt step [reps] [batch] [block]   GPT 6 layers, 6 heads, width
 *                           384, block 256, vocab 256, batch 16, AdamW,
 *                           clip_grad_norm_: median step time, trace time,
 *                           and the peak RSS growth over the steps (from
 *                           after the model's creation, as PyTorch's side)
 *   bench_gpt attn          attention forward (batch 4, 6 heads, head dim
 *                           64) at T = 256, 512, 1024: PeakBytes
 * Threads: LT_NUM_THREADS / OMP_NUM_THREADS (use 2 for the comparison). */
#include "lazytensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench_time.h"

static lt_tensor *tokens(int64_t b, int64_t t, uint64_t *s) {
    int64_t *v = malloc(sizeof *v * (size_t)(b * t)), shape[2] = {b, t};
    for (int64_t i = 0; i < b * t; i++) *s = *s * 6364136223846793005ull + 1442695040888963407ull, v[i] = (int64_t)(*s >> 56);
    lt_tensor *x = lt_from_data(v, LT_I64, 2, shape);
    free(v);
    return x;
}

static double max_rss_mib(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_maxrss / 1024.0; /* Linux: KiB */
}

static int step_bench(int reps, int64_t B, int64_t block) {
    const lt_gpt_config cfg = {6, 6, 384, block, 256, 0.0};
    const int64_t T = cfg.block_size, flat[2] = {B * T, cfg.vocab_size};
    lt_manual_seed(0);
    lt_model *m = lt_model_gpt(&cfg);
    lt_tensor **ps;
    int np = lt_model_params(m, &ps, NULL);
    lt_optim *o = lt_optim_adamw(np, ps, 3e-4, 0.9, 0.95, 1e-8, 0.1, false);
    double *st = malloc(sizeof *st * (size_t)reps), *tr = malloc(sizeof *tr * (size_t)reps), loss = 0;
    uint64_t seed = 1;
    lt_mark_step(); /* the initialization, outside the measured growth */
    double rss0 = max_rss_mib();
    for (int r = -2; r < reps; r++) { /* two warm-up steps: the compile */
        lt_tensor *x = tokens(B, T, &seed), *y = tokens(B, T, &seed), *y1 = lt_reshape(y, 1, &flat[0]);
        double t0 = bench_now_ns();
        lt_tensor *lg = lt_model_forward(m, x), *l2 = lt_reshape(lg, 2, flat), *l = lt_cross_entropy(l2, y1, 0);
        lt_backward(l);
        lt_tensor *n = lt_clip_grad_norm_(np, ps, 1.0);
        lt_optim_step(o);
        lt_optim_zero_grad(o);
        double t1 = bench_now_ns();
        lt_mark_step();
        loss = lt_item(l);
        double t2 = bench_now_ns();
        if (r >= 0) st[r] = (t2 - t0) * 1e-6, tr[r] = (t1 - t0) * 1e-6;
        lt_free(x), lt_free(y), lt_free(y1), lt_free(lg), lt_free(l2), lt_free(l), lt_free(n);
    }
    if (lt_error()) return fprintf(stderr, "bench_gpt: %s\n", lt_error_message()), 1;
    printf("lazytensor gpt 6/6/384/%lld batch %lld adamw: step %.1f ms, trace %.3f ms (median of %d), loss %.4f, "
           "%g compiles, peak RSS growth %.1f MiB\n", (long long)T, (long long)B, bench_median(st, reps),
           bench_median(tr, reps), reps, loss, lt_metric("UncachedCompile"), max_rss_mib() - rss0);
    free(st), free(tr);
    lt_optim_free(o);
    lt_model_free(m);
    return 0;
}

static int attn_bench(void) {
    for (int64_t T = 256; T <= 1024; T *= 2) {
        int64_t s[4] = {4, 6, T, 64};
        lt_manual_seed(0);
        lt_tensor *q = lt_randn(LT_F32, 4, s), *k = lt_randn(LT_F32, 4, s), *v = lt_randn(LT_F32, 4, s);
        lt_mark_step();
        lt_metrics_reset();
        double t0 = bench_now_ns();
        lt_tensor *o = lt_scaled_dot_product_attention(q, k, v, true, 0, 0);
        lt_mark_step();
        double ms = (bench_now_ns() - t0) * 1e-6;
        printf("lazytensor attention fwd B4 H6 T%-4lld D64 causal: peak %.1f MiB (inputs+output %.1f MiB), %.1f ms "
               "incl. compile\n", (long long)T, lt_metric("PeakBytes") / 1048576.0,
               4.0 * 4 * 6 * (double)T * 64 * 4 / 1048576.0, ms);
        lt_free(q), lt_free(k), lt_free(v), lt_free(o);
    }
    return lt_error() ? 1 : 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "step";
    if (!strcmp(mode, "attn")) return attn_bench();
    return step_bench(argc > 2 ? atoi(argv[2]) : 5, argc > 3 ? atoi(argv[3]) : 16, argc > 4 ? atoi(argv[4]) : 256);
}
