/* bfloat16 against float32 matmuls at the GPT step's shapes (6x6x384,
 * batch 16, block 256: 4,096 tokens), by operand layout: what oneDNN's
 * matmul gives each, which bounds what --precision bf16 can gain on the
 * step. ta / tb: the operand is read transposed (a view), as a linear's
 * weight in the forward (tb) and the activations in its weight gradient
 * x^T g (ta). Each line: the best of REPS syncs of one matmul, alternating
 * dtypes so that both see the same machine.
 *     OMP_NUM_THREADS=2 build/bench_matmul_bf16 [reps]
 * (build/bench_peak_bf16 gives the two peaks to read them against.) */
#include "bench_time.h"

#include <lazytensor.h>
#include <stdio.h>

/* GFLOP/s of C = op(A) op(B), op(A) M x K and op(B) K x N, best of reps. */
static double gflops(lt_dtype dt, int64_t M, int64_t K, int64_t N, int ta, int tb, int reps) {
    int64_t sa[2] = {ta ? K : M, ta ? M : K}, sb[2] = {tb ? N : K, tb ? K : N};
    lt_tensor *a0 = lt_randn(LT_F32, 2, sa), *b0 = lt_randn(LT_F32, 2, sb);
    lt_tensor *a = lt_to_dtype(a0, dt), *b = lt_to_dtype(b0, dt);
    lt_mark_step();
    double best = 1e30;
    for (int r = 0; r < reps + 2; r++) { /* the first two compile and touch the memory */
        lt_tensor *at = ta ? lt_transpose(a, 0, 1) : a, *bt = tb ? lt_transpose(b, 0, 1) : b;
        lt_tensor *c = lt_matmul(at, bt);
        double t0 = bench_now_s();
        lt_mark_step();
        double t = bench_now_s() - t0;
        if (r >= 2 && t < best) best = t;
        lt_free(c);
        if (ta) lt_free(at);
        if (tb) lt_free(bt);
    }
    lt_free(a0), lt_free(b0), lt_free(a), lt_free(b);
    return 2.0 * (double)M * (double)N * (double)K / best * 1e-9;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 10;
    static const struct { int64_t m, k, n; int ta, tb; const char *what; } s[] = {
        {4096, 384, 1536, 0, 1, "linear forward, x W^T (fc1)"},
        {4096, 1536, 384, 0, 1, "linear forward, x W^T (fc2)"},
        {4096, 1536, 384, 0, 0, "input gradient, g W (fc1)"},
        {384, 4096, 1536, 1, 0, "weight gradient, x^T g (fc1)"},
        {1536, 4096, 384, 1, 0, "weight gradient, x^T g (fc2)"},
        {384, 4096, 1536, 0, 0, "the same, x^T stored (K contiguous in A)"},
        {384, 4096, 1536, 0, 1, "the same, x^T and g^T stored (K contiguous in both)"},
    };
    printf("| M x K x N | op | float32 GFLOP/s | bfloat16 GFLOP/s | bf16 / fp32 |\n|---|---|---|---|---|\n");
    for (size_t i = 0; i < sizeof s / sizeof *s; i++) {
        double f = gflops(LT_F32, s[i].m, s[i].k, s[i].n, s[i].ta, s[i].tb, reps);
        double b = gflops(LT_BF16, s[i].m, s[i].k, s[i].n, s[i].ta, s[i].tb, reps);
        printf("| %lld x %lld x %lld%s%s | %s | %.0f | %.0f | %.2f |\n", (long long)s[i].m, (long long)s[i].k,
               (long long)s[i].n, s[i].ta ? ", A^T" : "", s[i].tb ? ", B^T" : "", s[i].what, f, b, b / f);
    }
    return 0;
}
