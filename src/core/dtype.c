/* dtypes and PyTorch's type promotion (bool < integers < floats). */
#include "core.h"

static int category(lt_dtype d) { return d == LT_BOOL ? 0 : dtype_is_float(d) ? 2 : 1; }

lt_dtype dtype_promote(lt_dtype a, lt_dtype b) {
    if (a == b) return a;
    int ca = category(a), cb = category(b);
    if (ca != cb) return ca > cb ? a : b;
    /* same category, different width: the wider (bf16 < f32 < f64) */
    if (ca == 2) return dtype_size(a) > dtype_size(b) ? a : b;
    return LT_I64;
}

/* A double scalar behaves like a Python float: it lifts bool and integer
 * tensors to the default float dtype and leaves float tensors alone. */
lt_dtype dtype_with_scalar(lt_dtype a) { return dtype_is_float(a) ? a : LT_F32; }

int dtype_can_cast(lt_dtype from, lt_dtype to) {
    if (dtype_is_float(from) && !dtype_is_float(to)) return 0;
    if (from != LT_BOOL && to == LT_BOOL) return 0;
    return 1;
}

const char *dtype_name(lt_dtype d) {
    static const char *n[] = {"float32", "float64", "int32", "int64", "bool", "bfloat16"};
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
