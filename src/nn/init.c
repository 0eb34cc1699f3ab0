/* Parameter initialization on the host. The values are drawn from the
 * generator behind lt_manual_seed and copied in with lt_from_data, so a new
 * model's tensors are materialized data, and the first training step traces
 * the same graph as every later one (one compile). */
#include "nn.h"

#include "../core/core.h"
#include "../func/func.h"

#include <math.h>

static lt_tensor *host_fill(int ndim, const int64_t *shape, int kind, double a) {
    int64_t n = shape_numel_checked("nn_init", ndim, shape);
    if (n < 0) return NULL;
    float *v = core_malloc((size_t)n * sizeof *v);
    if (!v) return NULL;
    for (int64_t i = 0; i < n; i++)
        v[i] = (float)(kind == 0 ? (2 * rng_uniform() - 1) * a : kind == 1 ? rng_normal() * a : a);
    lt_tensor *t = func_unscope(lt_from_data(v, LT_F32, ndim, shape)); /* the model's, not a scope's */
    core_free(v);
    return t;
}

lt_tensor *nn_uniform(int ndim, const int64_t *shape, double bound) { return host_fill(ndim, shape, 0, bound); }
lt_tensor *nn_normal(int ndim, const int64_t *shape, double std) { return host_fill(ndim, shape, 1, std); }

lt_tensor *nn_const(lt_dtype dtype, int ndim, const int64_t *shape, double value) {
    if (dtype == LT_F32) return host_fill(ndim, shape, 2, value);
    LT_ASSERT(dtype == LT_I64 && ndim == 0); /* the only other use: num_batches_tracked */
    int64_t v = (int64_t)value;
    return func_unscope(lt_from_data(&v, LT_I64, 0, shape));
}
