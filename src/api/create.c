/* Creation: from host data (materialized at once), fills (lazy FILL nodes),
 * and seeded random tensors (generated on the host). */
#include "api.h"

static lt_tensor *from_fn(const char *fn, lt_dtype dtype, int ndim, const int64_t *shape, lt_buffer **buf) {
    if (!dtype_valid((int)dtype)) return err_set(LT_ERR_DTYPE, "%s: argument 'dtype' is invalid (%d)", fn, (int)dtype);
    int64_t n = shape_numel_checked(fn, ndim, shape);
    if (n < 0) return NULL;
    *buf = buffer_new((size_t)n * dtype_size(dtype));
    return *buf ? (lt_tensor *)1 : NULL;
}

lt_tensor *lt_from_data(const void *data, lt_dtype dtype, int ndim, const int64_t *shape) {
    API_ENTER();
    lt_buffer *buf;
    if (!from_fn("lt_from_data", dtype, ndim, shape, &buf)) return NULL;
    if (!data && buf->nbytes) {
        buffer_release(buf);
        return err_set(LT_ERR_NULL, "lt_from_data: argument 'data' is NULL");
    }
    uint64_t t0 = prof_now_ns();
    if (buf->nbytes) memcpy(buf->data, data, buf->nbytes);
    prof_timer_add(M_TransferToDeviceTime, prof_now_ns() - t0);
    return func_new_data(buf, dtype, ndim, shape);
}

lt_tensor *api_adopt_data(void *data, lt_dtype dtype, int ndim, const int64_t *shape,
                          void (*give_back)(void *ctx, void *data), void *ctx) {
    API_ENTER();
    lt_buffer *buf = buffer_adopt(data, (size_t)shape_numel(ndim, shape) * dtype_size(dtype), give_back, ctx);
    return buf ? func_new_data(buf, dtype, ndim, shape) : NULL;
}

/* fn: the public name the caller used, so errors from lt_zeros say lt_zeros. */
static lt_tensor *full(const char *fn, double value, lt_dtype dtype, int ndim, const int64_t *shape) {
    API_ENTER();
    if (!dtype_valid((int)dtype)) return err_set(LT_ERR_DTYPE, "%s: argument 'dtype' is invalid (%d)", fn, (int)dtype);
    if (shape_numel_checked(fn, ndim, shape) < 0) return NULL;
    if (!dtype_fits(value, dtype))
        return err_set(LT_ERR_ARG, "%s: argument 'value' %g cannot be converted to %s without overflow", fn, value,
                       dtype_name(dtype));
    ir_node *n = ir_new(LT_OP_FILL, dtype, ndim, shape, 0, NULL, 0, NULL, 1, &value);
    lt_tensor *t = n ? func_new(n) : NULL;
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *lt_full(double value, lt_dtype dtype, int ndim, const int64_t *shape) {
    return full("lt_full", value, dtype, ndim, shape);
}
lt_tensor *lt_zeros(lt_dtype dtype, int ndim, const int64_t *shape) { return full("lt_zeros", 0.0, dtype, ndim, shape); }
lt_tensor *lt_ones(lt_dtype dtype, int ndim, const int64_t *shape) { return full("lt_ones", 1.0, dtype, ndim, shape); }

static lt_tensor *random_fill(const char *fn, lt_dtype dtype, int ndim, const int64_t *shape, int normal) {
    API_ENTER();
    if (dtype_valid((int)dtype) && !dtype_is_float(dtype))
        return err_set(LT_ERR_DTYPE, "%s: argument 'dtype' must be a floating dtype, got %s", fn, dtype_name(dtype));
    lt_buffer *buf;
    if (!from_fn(fn, dtype, ndim, shape, &buf)) return NULL;
    int64_t n = shape_numel(ndim, shape);
    for (int64_t i = 0; i < n; i++) {
        double v = normal ? rng_normal() : rng_uniform();
        if (dtype == LT_F32) ((float *)buf->data)[i] = (float)v;
        else if (dtype == LT_BF16) ((uint16_t *)buf->data)[i] = bf16_from_f32((float)v);
        else ((double *)buf->data)[i] = v;
    }
    return func_new_data(buf, dtype, ndim, shape);
}

lt_tensor *lt_randn(lt_dtype dtype, int ndim, const int64_t *shape) {
    return random_fill("lt_randn", dtype, ndim, shape, 1);
}
lt_tensor *lt_rand(lt_dtype dtype, int ndim, const int64_t *shape) { return random_fill("lt_rand", dtype, ndim, shape, 0); }

lt_tensor *lt_arange(double start, double end, double step, lt_dtype dtype) {
    API_ENTER();
    if (!(step != 0) || !isfinite(start) || !isfinite(end) || !isfinite(step))
        return err_set(LT_ERR_ARG, "lt_arange: arguments 'start' = %g, 'end' = %g, 'step' = %g must be finite with 'step' != 0",
                       start, end, step);
    /* PyTorch: integer dtypes truncate the arguments first (a step that
     * truncates to 0 is refused); the length comes from the truncated
     * values for int64 and from the double ones for the other dtypes. */
    int integer = dtype_valid((int)dtype) && !dtype_is_float(dtype) && dtype != LT_BOOL;
    double ts = integer ? trunc(start) : start, te = integer ? trunc(end) : end, tp = integer ? trunc(step) : step;
    if (tp == 0)
        return err_set(LT_ERR_ARG, "lt_arange: argument 'step' = %g truncates to 0 for %s: step must be nonzero", step,
                       dtype_name(dtype));
    if (!((tp > 0 && te >= ts) || (tp < 0 && te <= ts)))
        return err_set(LT_ERR_ARG, "lt_arange: argument 'step' %g does not lead from 'start' %g to 'end' %g", step, start, end);
    double cnt = dtype == LT_I64 ? ceil((te - ts) / tp) : ceil((end - start) / step);
    if (!(cnt > 0)) cnt = 0;
    if (cnt > 1e15) return err_set(LT_ERR_OVERFLOW, "lt_arange: %g elements are too many (argument 'step' is too small)", cnt);
    int64_t shape[1] = {(int64_t)cnt};
    lt_buffer *buf;
    if (!from_fn("lt_arange", dtype, 1, shape, &buf)) return NULL;
    for (int64_t i = 0; i < shape[0]; i++) {
        double v = ts + (double)i * tp;
        switch (dtype) {
        case LT_F32: ((float *)buf->data)[i] = (float)v; break;
        case LT_F64: ((double *)buf->data)[i] = v; break;
        case LT_I32: ((int32_t *)buf->data)[i] = (int32_t)v; break;
        case LT_I64: ((int64_t *)buf->data)[i] = (int64_t)v; break;
        case LT_BOOL: ((uint8_t *)buf->data)[i] = v != 0; break;
        case LT_BF16: ((uint16_t *)buf->data)[i] = bf16_from_f32((float)v); break;
        case LT_U8: ((uint8_t *)buf->data)[i] = (uint8_t)(int64_t)v; break;
        }
    }
    return func_new_data(buf, dtype, 1, shape);
}
