/* dropout: one DROPOUT node whose mask is a hash of (seed, element index)
 * (ref_nn.h). The seed is drawn from the host RNG at trace time and is a
 * runtime scalar like p, so a new mask every step still hits the compile
 * cache, and the backward reruns the same mask from the same seed. */
#include "nn_util.h"

static lt_tensor *dropout_node(lt_tensor *x, double p, double seed) {
    double sc[2] = {p, seed};
    return nn_node(LT_OP_DROPOUT, (lt_dtype)x->dtype, x->ndim, x->shape, 1, &x, 0, NULL, 2, sc);
}

static int check_p(const char *fn, double p) {
    if (p >= 0 && p <= 1) return 0;
    err_set(LT_ERR_ARG, "%s: argument 'p' is %g; a dropout probability must be in [0, 1]", fn, p);
    return -1;
}

lt_tensor *nn_dropout(lt_tensor *x, double p, bool training, double *seed_out) {
    static const char fn[] = "lt_dropout";
    if (seed_out) *seed_out = -1;
    if (api_check(fn, "x", x) || check_p(fn, p)) return NULL;
    if (!training || p == 0) return lt_clone(x); /* identity: no node, no seed drawn */
    API_ENTER();
    if (nn_float(fn, "x", x)) return NULL;
    double seed = (double)(rng_next() >> 11); /* < 2^53: exact as a double */
    lt_tensor *t = dropout_node(x, p, seed);
    if (t && seed_out) *seed_out = seed;
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *lt_dropout(lt_tensor *x, double p, bool training) { return nn_dropout(x, p, training, NULL); }

lt_tensor *nn_dropout_backward(lt_tensor *grad_out, double p, double seed) {
    static const char fn[] = "nn_dropout_backward";
    API_ENTER();
    if (api_check(fn, "grad_out", grad_out) || check_p(fn, p) || nn_float(fn, "grad_out", grad_out)) return NULL;
    if (!(seed >= 0 && seed < 0x1p53) || seed != floor(seed))
        return err_set(LT_ERR_ARG, "%s: argument 'seed' is %g; expected the integer seed of the forward", fn, seed);
    lt_tensor *t = dropout_node(grad_out, p, seed);
    API_LEAVE(fn, t);
    return t;
}
