/* The strided eager oracle (DESIGN 10, the strongest oracle): a tiny,
 * deliberately separate implementation of PyTorch's eager views. Tensors are
 * real aliases: a refcounted array of doubles shared by every view, plus
 * shape, strides and offset per tensor; an in-place op writes through to that
 * array, so every other alias sees it. It shares no code with the library
 * (not even its geometry helpers): a bug in one is not repeated in the other.
 *
 * Values are held as doubles; a float32 tensor rounds every value it stores
 * to float, as a float32 buffer would. Only F32 and F64 are supported.
 *
 * Errors: functions returning a tensor return NULL, int functions -1, and
 * or_error() says why. Error cases follow PyTorch (view not expressible,
 * out-of-range dim/index, bad permutation, in-place writes that PyTorch's
 * memory-overlap checks refuse, ...). */
#ifndef LT_ORACLE_H
#define LT_ORACLE_H

#include "lazytensor.h"

typedef struct or_storage {
    int refs;
    int64_t size;
    int64_t writes; /* in-place writes so far (lets a test tell a read saw a later mutation) */
    double *data;
} or_storage;

typedef struct or_tensor {
    or_storage *st;
    lt_dtype dtype;
    int ndim;
    int alias; /* 1 if made by a view op (shares its input's storage) */
    int64_t shape[LT_MAX_DIMS];
    int64_t strides[LT_MAX_DIMS];
    int64_t offset;
} or_tensor;

const char *or_error(void);

/* A new contiguous tensor; `data` (row-major, may be NULL for zeros) is rounded to dtype. */
or_tensor *or_new(lt_dtype dtype, int ndim, const int64_t *shape, const double *data);
void or_free(or_tensor *t); /* NULL is a no-op; the storage lives while any alias does */
int64_t or_numel(const or_tensor *t);
void or_read(const or_tensor *t, double *out); /* row-major copy of the elements */
or_tensor *or_clone(const or_tensor *t);       /* independent contiguous copy */

/* Views (PyTorch semantics; negative dims wrap). */
or_tensor *or_view(const or_tensor *t, int ndim, const int64_t *shape);
or_tensor *or_reshape(const or_tensor *t, int ndim, const int64_t *shape); /* copy if not viewable */
or_tensor *or_flatten(const or_tensor *t, int start_dim, int end_dim);
or_tensor *or_transpose(const or_tensor *t, int dim0, int dim1);
or_tensor *or_t(const or_tensor *t);
or_tensor *or_permute(const or_tensor *t, int ndim, const int *dims);
or_tensor *or_slice(const or_tensor *t, int dim, int64_t start, int64_t end, int64_t step);
or_tensor *or_narrow(const or_tensor *t, int dim, int64_t start, int64_t length);
or_tensor *or_select(const or_tensor *t, int dim, int64_t index);
or_tensor *or_expand(const or_tensor *t, int ndim, const int64_t *shape);
or_tensor *or_unsqueeze(const or_tensor *t, int dim);
or_tensor *or_squeeze(const or_tensor *t, int dim);
or_tensor *or_diagonal(const or_tensor *t, int64_t offset, int dim1, int dim2);
or_tensor *or_as_strided(const or_tensor *t, int ndim, const int64_t *shape, const int64_t *strides,
                         int64_t storage_offset);

/* Elementwise ops. Scalars: ADD_SCALAR/MUL_SCALAR s, CLAMP lo hi, LERP w,
 * ADDCMUL/ADDCDIV value, FILL value. COPY's result is its second input. */
enum or_op {
    OR_ADD, OR_SUB, OR_MUL, OR_DIV, OR_MAXIMUM, OR_MINIMUM,
    OR_ADD_SCALAR, OR_MUL_SCALAR, OR_CLAMP,
    OR_NEG, OR_ABS, OR_RELU, OR_TANH, OR_SIGMOID, OR_EXP, OR_SQRT,
    OR_LERP, OR_ADDCMUL, OR_ADDCDIV,
    OR_COPY, OR_FILL,
    OR_OP_COUNT
};
int or_op_arity(enum or_op op);   /* tensor inputs, the in-place target included */
int or_op_scalars(enum or_op op); /* scalar arguments */

/* Out-of-place: broadcasts the inputs; F64 if any input is F64. */
or_tensor *or_apply(enum or_op op, or_tensor *const *in, const double *sc);
/* In-place: in[0] is the target. All inputs are read before anything is
 * written (the result equals the out-of-place op's); the result must have
 * the target's shape. PyTorch's memory-overlap rules, checked first: the
 * target must not have two elements at one location, and no input other
 * than the target itself may partly overlap it (dense windows of one storage
 * whose ranges meet, unless the same range with the same strides); FILL
 * checks neither, COPY neither when its source is the target itself.
 * Returns 0 or -1. */
int or_apply_(enum or_op op, or_tensor *const *in, const double *sc);

#endif
