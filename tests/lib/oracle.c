/* The strided eager oracle. Written from PyTorch's documented eager
 * semantics (and its computeStride rule), not from the library's code. */
#include "oracle.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char err_msg[256];

static void *fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void *fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg, sizeof err_msg, fmt, ap);
    va_end(ap);
    return NULL;
}

const char *or_error(void) { return err_msg; }

static double round_to(lt_dtype d, double v) { return d == LT_F32 ? (double)(float)v : v; }

static int64_t numel_of(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

int64_t or_numel(const or_tensor *t) { return numel_of(t->ndim, t->shape); }

/* PyTorch's maybe_wrap_dim: a 0-d tensor accepts dims -1 and 0. */
static int wrap(int dim, int ndim, int *out) {
    int n = ndim > 0 ? ndim : 1;
    if (dim < -n || dim >= n) return -1;
    *out = dim < 0 ? dim + n : dim;
    return 0;
}

or_tensor *or_new(lt_dtype dtype, int ndim, const int64_t *shape, const double *data) {
    int64_t n = numel_of(ndim, shape);
    or_storage *s = malloc(sizeof *s);
    s->refs = 1;
    s->size = n;
    s->writes = 0;
    s->data = calloc((size_t)(n ? n : 1), sizeof(double));
    for (int64_t i = 0; data && i < n; i++) s->data[i] = round_to(dtype, data[i]);
    or_tensor *t = calloc(1, sizeof *t);
    t->st = s;
    t->dtype = dtype;
    t->ndim = ndim;
    int64_t st = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        t->shape[i] = shape[i];
        t->strides[i] = st;
        st *= shape[i] > 1 ? shape[i] : 1;
    }
    return t;
}

void or_free(or_tensor *t) {
    if (!t) return;
    if (--t->st->refs == 0) {
        free(t->st->data);
        free(t->st);
    }
    free(t);
}

/* Storage index of every element, row-major. */
static void offsets(const or_tensor *t, int64_t *out) {
    int64_t n = or_numel(t), idx[LT_MAX_DIMS] = {0};
    for (int64_t i = 0; i < n; i++) {
        int64_t o = t->offset;
        for (int d = 0; d < t->ndim; d++) o += idx[d] * t->strides[d];
        out[i] = o;
        for (int d = t->ndim - 1; d >= 0; d--) {
            if (++idx[d] < t->shape[d]) break;
            idx[d] = 0;
        }
    }
}

void or_read(const or_tensor *t, double *out) {
    int64_t n = or_numel(t);
    int64_t *o = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    offsets(t, o);
    for (int64_t i = 0; i < n; i++) out[i] = t->st->data[o[i]];
    free(o);
}

or_tensor *or_clone(const or_tensor *t) {
    int64_t n = or_numel(t);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    or_read(t, v);
    or_tensor *c = or_new(t->dtype, t->ndim, t->shape, v);
    free(v);
    return c;
}

static or_tensor *alias(const or_tensor *t, int ndim, const int64_t *shape, const int64_t *strides, int64_t offset) {
    or_tensor *v = calloc(1, sizeof *v);
    v->st = t->st;
    t->st->refs++;
    v->dtype = t->dtype;
    v->ndim = ndim;
    v->alias = 1;
    for (int i = 0; i < ndim; i++) {
        v->shape[i] = shape[i];
        v->strides[i] = strides[i];
    }
    v->offset = offset;
    return v;
}

/* ---- view / reshape ------------------------------------------------------ */

/* Resolves -1 and checks the element count, as PyTorch's infer_size. */
static int infer_size(const or_tensor *t, int ndim, const int64_t *shape, int64_t *out) {
    if (ndim < 0 || ndim > LT_MAX_DIMS) return fail("bad ndim %d", ndim), -1;
    int64_t known = 1, n = or_numel(t);
    int infer = -1;
    for (int i = 0; i < ndim; i++) {
        out[i] = shape[i];
        if (shape[i] == -1) {
            if (infer >= 0) return fail("only one dimension can be inferred"), -1;
            infer = i;
        } else if (shape[i] < 0) {
            return fail("invalid shape dimension %lld", (long long)shape[i]), -1;
        } else {
            known *= shape[i];
        }
    }
    if (infer >= 0) {
        if (known == 0 || n % known) return fail("shape is invalid for input of size %lld", (long long)n), -1;
        out[infer] = n / known;
    } else if (known != n) {
        return fail("shape is invalid for input of size %lld", (long long)n), -1;
    }
    return 0;
}

/* PyTorch's computeStride (aten/src/ATen/TensorUtils.cpp): strides for
 * viewing (oldshape, oldstride) as newshape, or 0 if impossible. Dims of the
 * old tensor are grouped into chunks that are contiguous among themselves;
 * each chunk must be exactly covered by consecutive new dims. */
static int compute_stride(int on, const int64_t *oshape, const int64_t *ostride, int nn, const int64_t *nshape,
                          int64_t *nstride) {
    if (on == 0) {
        for (int i = 0; i < nn; i++) nstride[i] = 1;
        return 1;
    }
    int64_t numel = numel_of(on, oshape);
    if (numel == 0) {
        int same = on == nn;
        for (int i = 0; same && i < on; i++) same = oshape[i] == nshape[i];
        if (same) {
            for (int i = 0; i < on; i++) nstride[i] = ostride[i];
            return 1;
        }
        for (int d = nn - 1; d >= 0; d--)
            nstride[d] = d == nn - 1 ? 1 : (nshape[d + 1] > 1 ? nshape[d + 1] : 1) * nstride[d + 1];
        return 1;
    }
    int view_d = nn - 1;
    int64_t chunk_base = ostride[on - 1], tensor_numel = 1, view_numel = 1;
    for (int td = on - 1; td >= 0; td--) {
        tensor_numel *= oshape[td];
        int chunk_ends = td == 0 || (oshape[td - 1] != 1 && ostride[td - 1] != tensor_numel * chunk_base);
        if (!chunk_ends) continue;
        while (view_d >= 0 && (view_numel < tensor_numel || nshape[view_d] == 1)) {
            nstride[view_d] = view_numel * chunk_base;
            view_numel *= nshape[view_d];
            view_d--;
        }
        if (view_numel != tensor_numel) return 0;
        if (td > 0) {
            chunk_base = ostride[td - 1];
            tensor_numel = 1;
            view_numel = 1;
        }
    }
    return view_d == -1;
}

or_tensor *or_view(const or_tensor *t, int ndim, const int64_t *shape) {
    int64_t ns[LT_MAX_DIMS], st[LT_MAX_DIMS];
    if (infer_size(t, ndim, shape, ns)) return NULL;
    if (!compute_stride(t->ndim, t->shape, t->strides, ndim, ns, st))
        return fail("view size is not compatible with input tensor's size and stride");
    return alias(t, ndim, ns, st, t->offset);
}

or_tensor *or_reshape(const or_tensor *t, int ndim, const int64_t *shape) {
    int64_t ns[LT_MAX_DIMS], st[LT_MAX_DIMS];
    if (infer_size(t, ndim, shape, ns)) return NULL;
    if (compute_stride(t->ndim, t->shape, t->strides, ndim, ns, st)) return alias(t, ndim, ns, st, t->offset);
    or_tensor *c = or_clone(t);
    or_tensor *r = or_new(t->dtype, ndim, ns, c->st->data);
    or_free(c);
    return r;
}

or_tensor *or_flatten(const or_tensor *t, int start_dim, int end_dim) {
    if (t->ndim == 0) {
        int64_t one = 1;
        return or_reshape(t, 1, &one);
    }
    int s, e;
    if (wrap(start_dim, t->ndim, &s) || wrap(end_dim, t->ndim, &e)) return fail("flatten: dim out of range");
    if (s > e) return fail("flatten: start_dim after end_dim");
    int64_t ns[LT_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < s; d++) ns[nd++] = t->shape[d];
    ns[nd++] = numel_of(e - s + 1, t->shape + s);
    for (int d = e + 1; d < t->ndim; d++) ns[nd++] = t->shape[d];
    return or_reshape(t, nd, ns);
}

/* ---- dimension shuffles --------------------------------------------------- */

or_tensor *or_transpose(const or_tensor *t, int dim0, int dim1) {
    int a, b;
    if (wrap(dim0, t->ndim, &a) || wrap(dim1, t->ndim, &b)) return fail("transpose: dim out of range");
    if (t->ndim == 0) return alias(t, 0, t->shape, t->strides, t->offset);
    int64_t ns[LT_MAX_DIMS], st[LT_MAX_DIMS];
    memcpy(ns, t->shape, sizeof ns);
    memcpy(st, t->strides, sizeof st);
    ns[a] = t->shape[b];
    ns[b] = t->shape[a];
    st[a] = t->strides[b];
    st[b] = t->strides[a];
    return alias(t, t->ndim, ns, st, t->offset);
}

or_tensor *or_t(const or_tensor *t) {
    if (t->ndim > 2) return fail("t: expects a tensor with <= 2 dimensions");
    if (t->ndim < 2) return alias(t, t->ndim, t->shape, t->strides, t->offset);
    return or_transpose(t, 0, 1);
}

or_tensor *or_permute(const or_tensor *t, int ndim, const int *dims) {
    if (ndim != t->ndim) return fail("permute: number of dims don't match");
    int64_t ns[LT_MAX_DIMS], st[LT_MAX_DIMS];
    int used[LT_MAX_DIMS] = {0};
    for (int i = 0; i < ndim; i++) {
        int d;
        if (wrap(dims[i], ndim, &d)) return fail("permute: dim out of range");
        if (used[d]) return fail("permute: repeated dim");
        used[d] = 1;
        ns[i] = t->shape[d];
        st[i] = t->strides[d];
    }
    return alias(t, ndim, ns, st, t->offset);
}

or_tensor *or_unsqueeze(const or_tensor *t, int dim) {
    if (t->ndim >= LT_MAX_DIMS) return fail("unsqueeze: too many dims");
    int d;
    if (wrap(dim, t->ndim + 1, &d)) return fail("unsqueeze: dim out of range");
    int64_t ns[LT_MAX_DIMS], st[LT_MAX_DIMS];
    for (int i = 0, j = 0; i <= t->ndim; i++) {
        if (i == d) {
            ns[j] = 1;
            st[j++] = d < t->ndim ? t->shape[d] * t->strides[d] : 1;
        }
        if (i < t->ndim) {
            ns[j] = t->shape[i];
            st[j++] = t->strides[i];
        }
    }
    return alias(t, t->ndim + 1, ns, st, t->offset);
}

or_tensor *or_squeeze(const or_tensor *t, int dim) {
    int d;
    if (wrap(dim, t->ndim, &d)) return fail("squeeze: dim out of range");
    if (t->ndim == 0 || t->shape[d] != 1) return alias(t, t->ndim, t->shape, t->strides, t->offset);
    int64_t ns[LT_MAX_DIMS], st[LT_MAX_DIMS];
    for (int i = 0, j = 0; i < t->ndim; i++)
        if (i != d) {
            ns[j] = t->shape[i];
            st[j++] = t->strides[i];
        }
    return alias(t, t->ndim - 1, ns, st, t->offset);
}

/* ---- windows -------------------------------------------------------------- */

or_tensor *or_slice(const or_tensor *t, int dim, int64_t start, int64_t end, int64_t step) {
    if (t->ndim == 0) return fail("slice: 0-d tensor");
    int d;
    if (wrap(dim, t->ndim, &d)) return fail("slice: dim out of range");
    if (step <= 0) return fail("slice: step must be positive");
    int64_t n = t->shape[d];
    if (start < 0) start += n;
    if (end < 0) end += n;
    if (start < 0) start = 0;
    else if (start > n) start = n;
    if (end < start) end = start;
    else if (end > n) end = n;
    int64_t ns[LT_MAX_DIMS], st[LT_MAX_DIMS];
    memcpy(ns, t->shape, sizeof ns);
    memcpy(st, t->strides, sizeof st);
    ns[d] = (end - start + step - 1) / step;
    st[d] = t->strides[d] * step;
    return alias(t, t->ndim, ns, st, t->offset + start * t->strides[d]);
}

or_tensor *or_narrow(const or_tensor *t, int dim, int64_t start, int64_t length) {
    if (t->ndim == 0) return fail("narrow: 0-d tensor");
    int d;
    if (wrap(dim, t->ndim, &d)) return fail("narrow: dim out of range");
    int64_t n = t->shape[d], m = n > 0 ? n : 1; /* start wraps like a dim index (PyTorch), or is n */
    if (start != n && (start < -m || start >= m)) return fail("narrow: start out of range");
    if (start < 0) start += m;
    if (length < 0 || start + length > n) return fail("narrow: start + length exceeds dimension size");
    return or_slice(t, d, start, start + length, 1);
}

or_tensor *or_select(const or_tensor *t, int dim, int64_t index) {
    if (t->ndim == 0) return fail("select: 0-d tensor");
    int d;
    if (wrap(dim, t->ndim, &d)) return fail("select: dim out of range");
    int64_t n = t->shape[d];
    if (index < -n || index >= n) return fail("select: index out of range");
    if (index < 0) index += n;
    int64_t ns[LT_MAX_DIMS], st[LT_MAX_DIMS];
    for (int i = 0, j = 0; i < t->ndim; i++)
        if (i != d) {
            ns[j] = t->shape[i];
            st[j++] = t->strides[i];
        }
    return alias(t, t->ndim - 1, ns, st, t->offset + index * t->strides[d]);
}

/* PyTorch's inferExpandGeometry, walked from the last dim: a new leading
 * dim of size 1 gets the stride it would have in a contiguous tensor around
 * the dims after it; a repeated dim gets 0; a 0-d tensor expands with all
 * strides 0. */
or_tensor *or_expand(const or_tensor *t, int ndim, const int64_t *shape) {
    if (ndim < t->ndim || ndim > LT_MAX_DIMS) return fail("expand: fewer target dims than the tensor has");
    int64_t ns[LT_MAX_DIMS], st[LT_MAX_DIMS];
    int lead = ndim - t->ndim;
    for (int i = ndim - 1; i >= 0; i--) {
        int j = i - lead;
        if (j < 0) {
            if (shape[i] < 0) return fail("expand: -1 not allowed in a new leading dim");
            ns[i] = shape[i];
            st[i] = shape[i] != 1 || t->ndim == 0 ? 0 : ns[i + 1] * st[i + 1];
        } else if (shape[i] == -1 || shape[i] == t->shape[j]) {
            ns[i] = t->shape[j];
            st[i] = t->strides[j];
        } else if (t->shape[j] == 1 && shape[i] >= 0) {
            ns[i] = shape[i];
            st[i] = 0;
        } else {
            return fail("expand: size must match the existing size at a non-singleton dim");
        }
    }
    return alias(t, ndim, ns, st, t->offset);
}

or_tensor *or_diagonal(const or_tensor *t, int64_t offset, int dim1, int dim2) {
    int a, b;
    if (wrap(dim1, t->ndim, &a) || wrap(dim2, t->ndim, &b)) return fail("diagonal: dim out of range");
    if (t->ndim < 2 || a == b) return fail("diagonal: dims cannot be identical");
    int64_t n;
    if (offset >= 0) n = t->shape[b] - offset < t->shape[a] ? t->shape[b] - offset : t->shape[a];
    else n = t->shape[a] + offset < t->shape[b] ? t->shape[a] + offset : t->shape[b];
    if (n < 0) n = 0;
    int64_t off = t->offset;
    if (n > 0) off += offset >= 0 ? offset * t->strides[b] : -offset * t->strides[a];
    int64_t ns[LT_MAX_DIMS], st[LT_MAX_DIMS];
    int j = 0;
    for (int i = 0; i < t->ndim; i++)
        if (i != a && i != b) {
            ns[j] = t->shape[i];
            st[j++] = t->strides[i];
        }
    ns[j] = n;
    st[j++] = t->strides[a] + t->strides[b];
    return alias(t, j, ns, st, off);
}

or_tensor *or_as_strided(const or_tensor *t, int ndim, const int64_t *shape, const int64_t *strides,
                         int64_t storage_offset) {
    if (ndim < 0 || ndim > LT_MAX_DIMS) return fail("as_strided: bad ndim");
    if (storage_offset < 0) return fail("as_strided: negative storage offset");
    int64_t last = storage_offset;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return fail("as_strided: negative size");
        if (strides[i] < 0) return fail("as_strided: negative strides are not supported");
        last += shape[i] > 0 ? (shape[i] - 1) * strides[i] : 0;
    }
    if (numel_of(ndim, shape) > 0 && last >= t->st->size) return fail("as_strided: out of bounds for storage");
    return alias(t, ndim, shape, strides, storage_offset);
}

/* ---- elementwise ----------------------------------------------------------- */

static const int arity[OR_OP_COUNT] = {
    [OR_ADD] = 2, [OR_SUB] = 2, [OR_MUL] = 2, [OR_DIV] = 2, [OR_MAXIMUM] = 2, [OR_MINIMUM] = 2,
    [OR_ADD_SCALAR] = 1, [OR_MUL_SCALAR] = 1, [OR_CLAMP] = 1,
    [OR_NEG] = 1, [OR_ABS] = 1, [OR_RELU] = 1, [OR_TANH] = 1, [OR_SIGMOID] = 1, [OR_EXP] = 1, [OR_SQRT] = 1,
    [OR_LERP] = 2, [OR_ADDCMUL] = 3, [OR_ADDCDIV] = 3, [OR_COPY] = 2, [OR_FILL] = 1,
};
static const int nscalars[OR_OP_COUNT] = {
    [OR_ADD_SCALAR] = 1, [OR_MUL_SCALAR] = 1, [OR_CLAMP] = 2, [OR_LERP] = 1,
    [OR_ADDCMUL] = 1, [OR_ADDCDIV] = 1, [OR_FILL] = 1,
};
int or_op_arity(enum or_op op) { return arity[op]; }
int or_op_scalars(enum or_op op) { return nscalars[op]; }

/* PyTorch's CPU formulas (ATen/native/cpu), evaluated in double. */
static double apply1(enum or_op op, const double *x, const double *s) {
    double a = x[0], b = x[1];
    switch (op) {
    case OR_ADD: return a + b;
    case OR_SUB: return a - b;
    case OR_MUL: return a * b;
    case OR_DIV: return a / b;
    case OR_MAXIMUM: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
    case OR_MINIMUM: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
    case OR_ADD_SCALAR: return a + s[0];
    case OR_MUL_SCALAR: return a * s[0];
    case OR_CLAMP: /* min(max(a, lo), hi): lo > hi gives hi */
        if (isnan(a)) return a;
        a = a < s[0] ? s[0] : a;
        return a > s[1] ? s[1] : a;
    case OR_NEG: return -a;
    case OR_ABS: return fabs(a);
    case OR_RELU: return isnan(a) || a > 0 ? a : 0.0;
    case OR_TANH: return tanh(a);
    case OR_SIGMOID: return 1.0 / (1.0 + exp(-a));
    case OR_EXP: return exp(a);
    case OR_SQRT: return sqrt(a);
    case OR_LERP: /* torch.lerp: exact at both ends */
        return fabs(s[0]) < 0.5 ? a + s[0] * (b - a) : b - (b - a) * (1.0 - s[0]);
    case OR_ADDCMUL: return a + s[0] * b * x[2];
    case OR_ADDCDIV: return a + s[0] * b / x[2];
    case OR_COPY: return b;
    case OR_FILL: return s[0];
    case OR_OP_COUNT: break;
    }
    return NAN;
}

/* Broadcast shape of the inputs; -1 if they do not broadcast. */
static int broadcast(int nin, or_tensor *const *in, int64_t *shape) {
    int nd = 0;
    for (int j = 0; j < nin; j++)
        if (in[j]->ndim > nd) nd = in[j]->ndim;
    for (int d = 0; d < nd; d++) shape[d] = 1;
    for (int j = 0; j < nin; j++)
        for (int k = 0; k < in[j]->ndim; k++) {
            int d = nd - in[j]->ndim + k;
            int64_t s = in[j]->shape[k];
            if (s == shape[d] || s == 1) continue;
            if (shape[d] != 1) return -1;
            shape[d] = s;
        }
    return nd;
}

/* Computes the op over the broadcast inputs into a fresh row-major array. */
static double *compute(enum or_op op, or_tensor *const *in, const double *sc, int *pnd, int64_t *shape) {
    int nin = arity[op];
    int nd = broadcast(nin, in, shape);
    if (nd < 0) return fail("shapes do not broadcast");
    int64_t n = numel_of(nd, shape);
    double *out = malloc(sizeof(double) * (size_t)(n ? n : 1));
    int64_t idx[LT_MAX_DIMS] = {0};
    for (int64_t i = 0; i < n; i++) {
        double x[3] = {0, 0, 0};
        for (int j = 0; j < nin; j++) {
            const or_tensor *t = in[j];
            int64_t o = t->offset;
            for (int k = 0; k < t->ndim; k++) {
                int d = nd - t->ndim + k;
                if (t->shape[k] != 1) o += idx[d] * t->strides[k];
            }
            x[j] = t->st->data[o];
        }
        out[i] = apply1(op, x, sc);
        for (int d = nd - 1; d >= 0; d--) {
            if (++idx[d] < shape[d]) break;
            idx[d] = 0;
        }
    }
    *pnd = nd;
    return out;
}

or_tensor *or_apply(enum or_op op, or_tensor *const *in, const double *sc) {
    int nd;
    int64_t shape[LT_MAX_DIMS];
    double *v = compute(op, in, sc, &nd, shape);
    if (!v) return NULL;
    lt_dtype dt = LT_F32;
    for (int j = 0; j < arity[op]; j++)
        if (in[j]->dtype == LT_F64) dt = LT_F64;
    or_tensor *t = or_new(dt, nd, shape, v);
    free(v);
    return t;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The storage offsets of t's elements, sorted (malloc'd, at least one slot). */
static int64_t *sorted_offsets(const or_tensor *t) {
    int64_t n = or_numel(t), *o = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    offsets(t, o);
    qsort(o, (size_t)n, sizeof *o, cmp_i64);
    return o;
}

/* PyTorch's is_non_overlapping_and_dense, decided from the elements
 * themselves: they fill numel consecutive locations, each once. For strides
 * >= 0 this is the same as "some order of the dims has contiguous strides". */
static int dense(const or_tensor *t) {
    int64_t n = or_numel(t), *o = sorted_offsets(t);
    int ok = 1;
    for (int64_t i = 1; i < n && ok; i++) ok = o[i] == o[0] + i;
    free(o);
    return ok;
}

/* PyTorch's get_overlap_status(dst, src) == PARTIAL, src not dst itself:
 * both dense, on one storage, their ranges of locations intersect, and they
 * are not the same range read with the same strides (FULL). Anything not
 * dense is TOO_HARD, which PyTorch runs (and so does this oracle: inputs
 * are read before anything is written). */
static int partial_overlap(const or_tensor *dst, const or_tensor *src) {
    if (dst->st != src->st || !or_numel(dst) || !or_numel(src) || !dense(dst) || !dense(src)) return 0;
    int64_t *a = sorted_offsets(dst), *b = sorted_offsets(src);
    int64_t a0 = a[0], a1 = a0 + or_numel(dst), b0 = b[0], b1 = b0 + or_numel(src);
    free(a);
    free(b);
    if (a0 == b0 && a1 == b1) {
        int same = dst->ndim == src->ndim;
        for (int d = 0; same && d < dst->ndim; d++) same = dst->strides[d] == src->strides[d];
        return !same;
    }
    return a0 < b1 && b0 < a1;
}

/* Does PyTorch refuse to write this tensor? A dim of size > 1 with stride 0
 * (its has_internal_overlap YES; PyTorch 1.13 writes a zero-size tensor
 * whatever its strides). Elements that meet otherwise (TOO_HARD) it writes
 * in its own iteration order; this oracle, like the library, reads every
 * input first and writes in row-major order, the last write winning. */
static int internal_overlap(const or_tensor *t) {
    int64_t n = or_numel(t);
    for (int d = 0; d < t->ndim && n; d++)
        if (t->shape[d] > 1 && t->strides[d] == 0) return 1;
    return 0;
}

int or_apply_(enum or_op op, or_tensor *const *in, const double *sc) {
    or_tensor *dst = in[0];
    /* Memory overlap first, as PyTorch's TensorIterator; fill_ checks none,
     * and copy_ of a tensor onto itself returns before any check. */
    if (op != OR_FILL && !(op == OR_COPY && in[1] == dst)) {
        if (internal_overlap(dst))
            return fail("more than one element of the written-to tensor refers to a single memory location"), -1;
        for (int j = 1; j < arity[op]; j++)
            if (in[j] != dst && partial_overlap(dst, in[j]))
                return fail("some elements of the input tensor and the written-to tensor refer to a single memory location"), -1;
    }
    int nd;
    int64_t shape[LT_MAX_DIMS];
    double *v = compute(op, in, sc, &nd, shape);
    if (!v) return -1;
    int same = nd == dst->ndim;
    for (int d = 0; same && d < nd; d++) same = shape[d] == dst->shape[d];
    if (!same) {
        free(v);
        fail("result shape does not match the in-place target");
        return -1;
    }
    int64_t n = or_numel(dst), *o = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    offsets(dst, o);
    for (int64_t i = 0; i < n; i++) dst->st->data[o[i]] = round_to(dst->dtype, v[i]);
    dst->st->writes++;
    free(v);
    free(o);
    return 0;
}
