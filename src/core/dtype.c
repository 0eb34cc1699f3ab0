/* dtypes and PyTorch's type promotion (bool < integers < floats; within
 * integers uint8 < int32 < int64). */
#include "core.h"

#include <float.h>
#include <math.h>

static int category(lt_dtype d) { return d == LT_BOOL ? 0 : dtype_is_float(d) ? 2 : 1; }

lt_dtype dtype_promote(lt_dtype a, lt_dtype b) {
    if (a == b) return a;
    int ca = category(a), cb = category(b);
    if (ca != cb) return ca > cb ? a : b;
    /* same category, different width: the wider (bf16 < f32 < f64,
     * u8 < i32 < i64: no signed type as narrow as uint8 exists here, so
     * the wider always holds both, as torch's table gives) */
    return dtype_size(a) > dtype_size(b) ? a : b;
}

/* PyTorch's result_type over tensor operands, with its dimension
 * categories: operands with dims promote among themselves, 0-d ones among
 * themselves, and a 0-d result joins only if its category (bool < integer
 * < float) is higher: a 0-d tensor may raise the category, never the width
 * (i32[n] + i64[] is i32, f32[n] * f64[] is f32, i32[n] + f64[] is f64).
 * zmask: bit i set where operand i is 0-d. */
lt_dtype dtype_result(int n, const lt_dtype *d, unsigned zmask) {
    int same = 1; /* the common case: one dtype throughout, which is the result */
    for (int i = 1; i < n; i++) same &= d[i] == d[0];
    if (n > 0 && same) return d[0];
    int have[2] = {0, 0};
    lt_dtype r[2] = {LT_BOOL, LT_BOOL}; /* [0]: with dims, [1]: 0-d */
    for (int i = 0; i < n; i++) {
        int z = (zmask >> i) & 1;
        r[z] = have[z] ? dtype_promote(r[z], d[i]) : d[i];
        have[z] = 1;
    }
    if (!have[0]) return r[1];
    if (!have[1] || category(r[1]) <= category(r[0])) return r[0];
    return dtype_promote(r[0], r[1]);
}

/* A double scalar behaves like a Python float: it lifts bool and integer
 * tensors to the default float dtype and leaves float tensors alone. */
lt_dtype dtype_with_scalar(lt_dtype a) { return dtype_is_float(a) ? a : LT_F32; }

/* PyTorch's check when a Python number becomes a tensor's element (full,
 * fill_): integers take finite values within their range; floats take
 * inf and NaN but not a finite value beyond their largest; bool takes all. */
int dtype_fits(double v, lt_dtype d) {
    switch (d) {
    case LT_I32: return v >= -2147483648.0 && v <= 2147483647.0;
    case LT_I64: return v >= -9223372036854775808.0 && v < 9223372036854775808.0;
    /* c10's overflows<uint8_t>: an integer may be negative down to -255
     * (it wraps: a - b as a + 255 b); a fraction must lie in [0, 255] */
    case LT_U8: return v == floor(v) ? v >= -255.0 && v <= 255.0 : v > 0.0 && v < 255.0;
    case LT_F32: return !isfinite(v) || fabs(v) <= FLT_MAX;
    case LT_BF16: return !isfinite(v) || fabs(v) <= 3.3895313892515355e38; /* bfloat16's largest */
    default: return 1;
    }
}

int dtype_can_cast(lt_dtype from, lt_dtype to) {
    if (dtype_is_float(from) && !dtype_is_float(to)) return 0;
    if (from != LT_BOOL && to == LT_BOOL) return 0;
    return 1;
}

const char *dtype_name(lt_dtype d) {
    static const char *n[] = {"float32", "float64", "int32", "int64", "bool", "bfloat16", "uint8"};
    return dtype_valid((int)d) ? n[d] : "invalid";
}
size_t lt_dtype_size(lt_dtype d) {
    if (dtype_valid((int)d)) return dtype_size(d);
    return err_set(LT_ERR_DTYPE, "lt_dtype_size: argument 'dtype' is invalid (%d)", (int)d), 0;
}
const char *lt_dtype_name(lt_dtype d) {
    if (!dtype_valid((int)d)) err_set(LT_ERR_DTYPE, "lt_dtype_name: argument 'dtype' is invalid (%d)", (int)d);
    return dtype_name(d);
}
