/* RANDOM: seeded fills for a front end's torch.rand / normal_ / bernoulli_
 * (python/_torch/random.cpp). Element i draws from the counter-based hash
 * dropout uses (nn_dropout_uniform), so every backend and every run of one
 * graph with one seed gives the same values, and a new seed per call is a
 * runtime parameter (no recompile). */
#include "ref_nn.h"

/* ia [kind: 0 uniform [a, b), 1 normal (mean a, std b), 2 bernoulli (p b),
 * bits of the double a]; sc [b, seed]. */
void ref_random(const gnode *y, const double *sc, void *out) {
    double a, b = sc[0];
    memcpy(&a, &y->ia[1], sizeof a);
    uint64_t seed = (uint64_t)sc[1];
    for (int64_t i = 0; i < y->numel; i++) {
        double v;
        if (y->ia[0] == 0) {
            v = a + (b - a) * nn_dropout_uniform(seed, i);
            /* [a, b) also after rounding to the dtype: a float32 a + (b-a)u can round up to b */
            if (y->dtype == LT_F32 && (float)v >= (float)b && b > a) v = (double)nextafterf((float)b, (float)a);
        } else if (y->ia[0] == 1) { /* Box-Muller over two draws of the element */
            double u1 = nn_dropout_uniform(seed, 2 * i), u2 = nn_dropout_uniform(seed, 2 * i + 1);
            v = a + b * sqrt(-2.0 * log1p(-u1)) * cos(6.283185307179586 * u2);
        } else {
            v = nn_dropout_uniform(seed, i) < b ? 1.0 : 0.0;
        }
        st_f(out, (lt_dtype)y->dtype, i, v);
    }
}
