/* Autocast (DESIGN 15): a policy of the api layer, as PyTorch's CPU
 * autocast. Inside a region, the ops on the lower-precision list (conv2d,
 * linear, matmul, scaled dot-product attention) record one CAST node per
 * float32 operand and run in the region's dtype (bfloat16: the kernels
 * accumulate in float32); the losses (fp32 list) cast lower-precision
 * operands up to float32; every other op runs in its operands' dtype, as
 * in PyTorch (batch norm takes bfloat16 activations with float32
 * parameters, softmax stays bfloat16). The casts
 * are ordinary IR nodes: hashed like any other, fused by the compiler, and
 * differentiable (the gradient of a float32 parameter is float32). */
#include "api.h"

#define MAX_DEPTH 64
uint8_t g_autocast; /* the current region's dtype is bfloat16 */
static uint8_t stack[MAX_DEPTH];
static int depth;

int lt_autocast_begin(lt_dtype dtype) {
    if (dtype != LT_BF16 && dtype != LT_F32)
        return err_set(LT_ERR_DTYPE, "lt_autocast_begin: argument 'dtype' is %s; must be bfloat16 (or float32: autocast off)",
                       dtype_valid((int)dtype) ? dtype_name(dtype) : "invalid"),
               -1;
    if (depth == MAX_DEPTH)
        return err_set(LT_ERR_STATE, "lt_autocast_begin: regions nest at most %d deep", MAX_DEPTH), -1;
    stack[depth++] = g_autocast;
    g_autocast = dtype == LT_BF16;
    return 0;
}

int lt_autocast_end(void) {
    if (depth == 0) return err_set(LT_ERR_STATE, "lt_autocast_end: no autocast region is open"), -1;
    g_autocast = stack[--depth];
    return 0;
}

lt_dtype lt_autocast_dtype(void) { return g_autocast ? LT_BF16 : LT_F32; }

int api_autocast_args(int n, lt_tensor **in, lt_tensor **tmp, lt_dtype from, lt_dtype to) {
    for (int i = 0; i < n; i++) {
        tmp[i] = NULL;
        if (!in[i] || in[i]->magic != LT_HANDLE_MAGIC || in[i]->dtype != from) continue;
        if (!(tmp[i] = lt_to_dtype(in[i], to))) {
            api_autocast_free(i, tmp);
            return -1;
        }
        in[i] = tmp[i];
    }
    return 0;
}

void api_autocast_free(int n, lt_tensor **tmp) {
    for (int i = 0; i < n; i++) lt_free(tmp[i]);
}
