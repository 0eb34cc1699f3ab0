/* The _C extension: shared declarations. The extension is thin by design
 * (DESIGN 13): each function parses its Python arguments, calls one lt_
 * function, wraps the handle and turns the library's thread-local error into
 * a Python exception. No numerics live here. */
#ifndef LTPY_H
#define LTPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "lazytensor.h"

/* A Python tensor owns exactly one handle and frees it in its destructor. */
typedef struct {
    PyObject_HEAD
    lt_tensor *h;
} ltpy_tensor;

extern PyTypeObject ltpy_tensor_base;  /* _C.TensorBase */
extern PyTypeObject ltpy_dtype_type;   /* _C.dtype */
extern PyTypeObject *ltpy_tensor_cls;  /* lazytensor.Tensor once registered, else TensorBase */
#define LTPY_NDTYPES (LT_U8 + 1)
extern PyObject *ltpy_dtypes[LTPY_NDTYPES]; /* one object per lt_dtype */

static inline int ltpy_is_float(lt_dtype d) { return d == LT_F32 || d == LT_F64 || d == LT_BF16; }

/* errors.c: raises the library's pending error (TypeError, ValueError,
 * IndexError, RuntimeError, ... by its code) and clears it; returns NULL.
 * `index_error` maps an LT_ERR_ARG to IndexError (indexing calls). */
PyObject *ltpy_raise(void);
PyObject *ltpy_raise_index(void);
/* An error left by a call that returns no handle (void or int): raise it. */
static inline int ltpy_check(void) { return lt_error() ? (ltpy_raise(), -1) : 0; }

/* tensor.c: wraps a NEW handle into a tensor of ltpy_tensor_cls (steals h);
 * NULL h raises the pending error. ltpy_live counts the tensors alive. */
extern Py_ssize_t ltpy_live;
PyObject *ltpy_wrap(lt_tensor *h);
/* The dealloc of lazytensor.Tensor and its subclasses (module.c installs
 * it): TensorBase's plus the drop of the instance's class reference. */
void ltpy_tensor_class_dealloc(PyObject *self);
PyObject *ltpy_wrap_as(PyTypeObject *cls, lt_tensor *h);

/* args.c: argument conversion. Each returns 0, or -1 with TypeError /
 * ValueError set naming `fn` and the argument. */
/* The exact class first: the C ops create lazytensor.Tensor, a subclass. */
static inline int ltpy_is_tensor(PyObject *o) {
    return Py_IS_TYPE(o, ltpy_tensor_cls) || PyObject_TypeCheck(o, &ltpy_tensor_base);
}
static inline lt_tensor *ltpy_h(PyObject *o) { return ((ltpy_tensor *)o)->h; }
int ltpy_tensor_arg(PyObject *o, const char *fn, const char *arg, lt_tensor **out);
int ltpy_opt_tensor_arg(PyObject *o, const char *fn, const char *arg, lt_tensor **out); /* None -> NULL */
/* The handles (borrowed) of a sequence of tensors, *n of them; PyMem_Free
 * the array. NULL with TypeError naming fn and arg. */
lt_tensor **ltpy_handles(PyObject *seq, const char *fn, const char *arg, int *n);
int ltpy_double_arg(PyObject *o, const char *fn, const char *arg, double *out);
int ltpy_int64_arg(PyObject *o, const char *fn, const char *arg, int64_t *out);
int ltpy_int_arg(PyObject *o, const char *fn, const char *arg, int *out);
int ltpy_dtype_arg(PyObject *o, const char *fn, lt_dtype *out);
/* A shape given as one sequence or as separate ints (view(2, 3) / view((2, 3))). */
int ltpy_shape_args(PyObject *const *args, Py_ssize_t n, const char *fn, int64_t *shape, int *ndim);
/* A list of ints (or one int) into dims[LT_MAX_DIMS]. */
int ltpy_dims_arg(PyObject *o, const char *fn, const char *arg, int *dims, int *n);
/* Exactly 2 ints, or one int used twice (conv/pool sizes). */
int ltpy_pair_arg(PyObject *o, const char *fn, const char *arg, int64_t out[2]);
int ltpy_nargs(const char *fn, Py_ssize_t n, Py_ssize_t lo, Py_ssize_t hi);

/* ops.c: a Python number combined with a tensor, with PyTorch's promotion:
 * a float tensor keeps its dtype, an integer tensor with an int stays
 * integer, with a float it becomes float32; bool with an int is int64. */
int ltpy_is_number(PyObject *o);
lt_tensor *ltpy_scalar_tensor(lt_tensor *like, PyObject *num); /* new 0-d handle, NULL + exception */
/* a <op> b for tensors or Python numbers on either side (op: '+', '-', '*', '/', '^', or a compare code). */
PyObject *ltpy_binary(PyObject *a, PyObject *b, int op);
PyObject *ltpy_inplace(PyObject *a, PyObject *b, int op); /* returns a, new reference */

/* methods.c: the named (values, indices) result types of max(dim) and
 * min(dim), [0] min and [1] max; created at module init (module.c). */
extern PyTypeObject *ltpy_minmax_types[2];

PyObject *ltpy_shape_tuple(lt_tensor *h);
PyObject *ltpy_item(PyObject *self, PyObject *unused);
int ltpy_tensor_ready(void); /* PyType_Ready with the methods of methods.c */

extern PyMethodDef ltpy_tensor_methods[];
extern PyMethodDef ltpy_module_methods[];
extern PyMethodDef ltpy_nn_methods[];
extern PyMethodDef ltpy_io_methods[];
extern PyMethodDef ltpy_dist_methods[];
PyObject *ltpy_getitem(PyObject *self, PyObject *idx);
int ltpy_setitem(PyObject *self, PyObject *idx, PyObject *value);
PyObject *ltpy_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t n, PyObject *kw);
PyObject *ltpy_dlpack_device(PyObject *self, PyObject *unused);
PyObject *ltpy_from_dlpack(PyObject *mod, PyObject *obj);
/* Adds each function of defs to module m. */
int ltpy_add_functions(PyObject *m, PyMethodDef *defs);
int ltpy_optim_init(PyObject *m);
int ltpy_data_init(PyObject *m);

#endif
