/* The attention kernels alone (issue 30): ATTENTION and ATTENTION_BWD,
 * causal, head dim 64, at the GPT's shapes (batch x 6 heads), float32 and
 * bfloat16 (autocast's; AVX512-BF16 dot products where the CPU has them):
 * median ms of each over REPS runs and GFLOP/s counting the causal half
 * (forward 2 T^2 D flops per problem: q k^T and p v; backward 5 T^2 D: s,
 * dp, dv, dk, dq; the backward's log-sum-exp sweep, T^2 D more, is not
 * counted); also GFLOP per CPU-second (every thread's CPU time; run with
 * OMP_WAIT_POLICY=passive so that waiting threads do not spin).
 * Usage: bench_attention [reps [batch T]]   (default: the three shapes)
 * Threads: LT_NUM_THREADS / OMP_NUM_THREADS. */
#include "lazytensor.h"

#include <stdio.h>
#include <stdlib.h>

#include "api/nn.h"
#include "bench_time.h"

/* Median wall ms of reps runs; *cpu_ms: their median CPU ms (every
 * thread), which a busy machine moves much less. */
static double run(lt_tensor *(*make)(lt_tensor **), lt_tensor **in, int reps, double *cpu_ms) {
    double *t = malloc(sizeof *t * (size_t)reps * 2), m;
    for (int r = -1; r < reps; r++) { /* one warm-up run: the compile */
        double t0 = bench_now_ns(), c0 = bench_cpu_s();
        lt_tensor *o = make(in);
        lt_mark_step();
        if (r >= 0) t[r] = (bench_now_ns() - t0) * 1e-6, t[reps + r] = (bench_cpu_s() - c0) * 1e3;
        lt_free(o);
    }
    m = bench_median(t, reps);
    *cpu_ms = bench_median(t + reps, reps);
    free(t);
    return m;
}

static lt_tensor *fwd(lt_tensor **in) { return lt_scaled_dot_product_attention(in[0], in[1], in[2], true, 0, 0); }
static lt_tensor *bwd(lt_tensor **in) { return nn_attention_backward(in[3], in[0], in[1], in[2], in[4], true, 0, 0, 0); }

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 10;
    int64_t shapes[][2] = {{16, 256}, {4, 1024}, {2, 2048}}; /* batch, T */
    size_t ns = sizeof shapes / sizeof *shapes;
    if (argc > 3) shapes[0][0] = atoll(argv[2]), shapes[0][1] = atoll(argv[3]), ns = 1;
    printf("%-24s %-5s %10s %10s %10s %10s %10s %10s\n", "B x H x T x D (causal)", "dtype", "fwd ms", "fwd GF/s",
           "bwd ms", "bwd GF/s", "fwd GF/cs", "bwd GF/cs");
    for (size_t i = 0; i < ns; i++)
        for (int bf = 0; bf < 2; bf++) {
            int64_t B = shapes[i][0], T = shapes[i][1], s[4] = {B, 6, T, 64};
            lt_manual_seed(0);
            lt_tensor *in[5] = {NULL};
            for (int k = 0; k < 4; k++) {
                lt_tensor *x = lt_randn(LT_F32, 4, s);
                in[k] = bf ? lt_to_dtype(x, LT_BF16) : x;
                if (bf) lt_free(x);
            }
            in[4] = fwd(in);
            lt_mark_step();
            double flop = (double)B * 6 * (double)T * (double)T * 64, fc, bc;
            double f = run(fwd, in, reps, &fc), b = run(bwd, in, reps, &bc);
            printf("%3lld x 6 x %4lld x 64        %-5s %10.2f %10.1f %10.2f %10.1f %10.1f %10.1f\n", (long long)B,
                   (long long)T, bf ? "bf16" : "fp32", f, 2 * flop / f * 1e-6, b, 5 * flop / b * 1e-6,
                   2 * flop / fc * 1e-6, 5 * flop / bc * 1e-6);
            for (int k = 0; k < 5; k++) lt_free(in[k]);
        }
    if (lt_error()) return fprintf(stderr, "bench_attention: %s\n", lt_error_message()), 1;
    return 0;
}
