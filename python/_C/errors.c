/* The library's thread-local error as a Python exception. The error is
 * cleared once raised, so the library stays usable after a bad call. */
#include "ltpy.h"

static PyObject *raise_code(int code, PyObject *arg_exc) {
    PyObject *exc;
    switch (code) {
    case LT_ERR_NULL:
    case LT_ERR_DTYPE: exc = PyExc_TypeError; break;
    case LT_ERR_ARG: exc = arg_exc; break;
    case LT_ERR_OVERFLOW:
    case LT_ERR_FORMAT: exc = PyExc_ValueError; break;
    case LT_ERR_OOM: exc = PyExc_MemoryError; break;
    case LT_ERR_IO: exc = PyExc_OSError; break;
    default: exc = PyExc_RuntimeError; break; /* LT_ERR_SHAPE (as torch), LT_ERR_STATE */
    }
    PyErr_SetString(exc, code ? lt_error_message() : "lazytensor: call failed without an error message");
    lt_clear_error();
    return NULL;
}

PyObject *ltpy_raise(void) { return raise_code(lt_error(), PyExc_ValueError); }
PyObject *ltpy_raise_index(void) { return raise_code(lt_error(), PyExc_IndexError); }
