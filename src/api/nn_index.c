/* Indexing: gather / scatter_add, index_select / index_add, embedding.
 * Indices are int64 (int32 too for index_select and embedding, as
 * PyTorch); an index outside the indexed dim fails the sync that runs it
 * (src/exec/index_check.c).
 * ia: GATHER [dim, a's shape...], INDEX_SELECT [dim, a.size(dim)],
 * EMBEDDING [V], SCATTER_ADD / INDEX_ADD [dim]: the forward nodes carry
 * the input size their backward must produce. A 0-d tensor counts as one of
 * shape [1] (PyTorch: gather of a 0-d a by a [k] index is [k], index_select
 * of a 0-d a is 0-d). */
#include "nn_util.h"

/* The first dim d (except `skip`, -1 for none) where index.size(d) > t.size(d), or -1. */
static int index_exceeds(const lt_tensor *index, const lt_tensor *t, int skip) {
    for (int d = 0; d < index->ndim; d++)
        if (d != skip && index->shape[d] > (t->ndim ? t->shape[d] : 1)) return d;
    return -1;
}

static int ndim1(const lt_tensor *t) { return t->ndim ? t->ndim : 1; }

static int index_fits(const char *fn, const lt_tensor *index, const char *arg, const lt_tensor *t, int skip) {
    int d = index_exceeds(index, t, skip);
    if (d < 0) return 0;
    err_set(LT_ERR_SHAPE, "%s: argument 'index' %s is larger than '%s' %s in dim %d", fn,
            SHAPE_STR(index->ndim, index->shape), arg, SHAPE_STR(t->ndim, t->shape), d);
    return -1;
}

static int wrap(const char *fn, int dim, const lt_tensor *a) {
    int d = dim_wrap(dim, a->ndim);
    if (d < 0) err_set(LT_ERR_ARG, "%s: argument 'dim' = %d is out of range for a %d-d tensor", fn, dim, a->ndim);
    return d;
}

static int same_ndim(const char *fn, const lt_tensor *index, const char *arg, const lt_tensor *t) {
    if (ndim1(index) == ndim1(t)) return 0;
    err_set(LT_ERR_SHAPE, "%s: argument 'index' %s must have as many dims as '%s' %s", fn,
            SHAPE_STR(index->ndim, index->shape), arg, SHAPE_STR(t->ndim, t->shape));
    return -1;
}

/* An empty index: PyTorch checks only dim (not the index's dtype or dims)
 * and returns an empty tensor of the index's shape, whose gradient to a is
 * zero. One the GATHER node cannot take (another dtype or ndim, a size
 * beyond a's) becomes views of a (flattened, narrowed to nothing,
 * reshaped) and a clone. */
static lt_tensor *gather_empty(lt_tensor *a, const lt_tensor *index) {
    lt_tensor *f = lt_flatten(a, 0, -1), *e = f ? lt_narrow(f, 0, 0, 0) : NULL;
    lt_tensor *r = e ? lt_reshape(e, index->ndim, index->shape) : NULL, *t = r ? lt_clone(r) : NULL;
    lt_free(r);
    lt_free(e);
    lt_free(f);
    return t;
}

lt_tensor *lt_gather(lt_tensor *a, int dim, lt_tensor *index) {
    static const char fn[] = "lt_gather";
    API_ENTER();
    if (api_check(fn, "a", a) || api_check(fn, "index", index)) return NULL;
    int d = wrap(fn, dim, a);
    if (d >= 0 && index->numel == 0 &&
        (index->dtype != LT_I64 || ndim1(index) != ndim1(a) || index_exceeds(index, a, d) >= 0))
        return gather_empty(a, index);
    if (d < 0 || nn_int64(fn, "index", index) || same_ndim(fn, index, "a", a) || index_fits(fn, index, "a", a, d))
        return NULL;
    int64_t ia[1 + LT_MAX_DIMS] = {d};
    memcpy(ia + 1, a->shape, (size_t)a->ndim * 8);
    lt_tensor *in[2] = {a, index};
    lt_tensor *t = nn_node(LT_OP_GATHER, (lt_dtype)a->dtype, index->ndim, index->shape, 2, in, 1 + a->ndim, ia, 0, NULL);
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *nn_scatter_add(lt_tensor *base, int dim, lt_tensor *index, lt_tensor *src) {
    static const char fn[] = "nn_scatter_add";
    API_ENTER();
    if (api_check(fn, "base", base) || api_check(fn, "index", index) || api_check(fn, "src", src) ||
        nn_int64(fn, "index", index) || nn_same_dtype(fn, "src", src, "base", base))
        return NULL;
    int d = wrap(fn, dim, base);
    if (d < 0 || same_ndim(fn, index, "base", base) || same_ndim(fn, index, "src", src) ||
        index_fits(fn, index, "base", base, d) || index_fits(fn, index, "src", src, -1))
        return NULL;
    int64_t ia[1] = {d};
    lt_tensor *in[3] = {base, index, src};
    lt_tensor *t = nn_node(LT_OP_SCATTER_ADD, (lt_dtype)base->dtype, base->ndim, base->shape, 3, in, 1, ia, 0, NULL);
    API_LEAVE(fn, t);
    return t;
}

/* a's shape with dim replaced by the index's element count; a 0-d a gives
 * a 0-d result (PyTorch), which takes one index (index_add, the backward,
 * has one element to add: PyTorch's backward fails for more). */
static int selected_shape(const char *fn, const lt_tensor *a, int d, const lt_tensor *index, int64_t *shape) {
    if (index->ndim > 1) {
        err_set(LT_ERR_SHAPE, "%s: argument 'index' must be 0-d or 1-d, got %s", fn,
                SHAPE_STR(index->ndim, index->shape));
        return -1;
    }
    if (a->ndim == 0) return 0;
    memcpy(shape, a->shape, (size_t)a->ndim * 8);
    shape[d] = index->numel;
    return 0;
}

/* wrap: negative indices count from the end (torch's a[index]; ia[2]). */
static lt_tensor *index_select(const char *fn, lt_tensor *a, int dim, lt_tensor *index, int wrap_neg) {
    API_ENTER();
    if (api_check(fn, "a", a) || api_check(fn, "index", index) || nn_index_dtype(fn, "index", index)) return NULL;
    int64_t shape[LT_MAX_DIMS];
    int d = wrap(fn, dim, a);
    if (d < 0 || selected_shape(fn, a, d, index, shape)) return NULL;
    int64_t ia[3] = {d, a->ndim ? a->shape[d] : 1, wrap_neg};
    lt_tensor *in[2] = {a, index};
    lt_tensor *t = nn_node(LT_OP_INDEX_SELECT, (lt_dtype)a->dtype, a->ndim, shape, 2, in, wrap_neg ? 3 : 2, ia, 0, NULL);
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *lt_index_select(lt_tensor *a, int dim, lt_tensor *index) {
    return index_select("lt_index_select", a, dim, index, 0);
}

static lt_tensor *index_add(const char *fn, lt_tensor *base, int dim, lt_tensor *index, lt_tensor *src, int wrap_neg) {
    API_ENTER();
    if (api_check(fn, "base", base) || api_check(fn, "index", index) || api_check(fn, "src", src) ||
        nn_index_dtype(fn, "index", index) || nn_same_dtype(fn, "src", src, "base", base))
        return NULL;
    int64_t shape[LT_MAX_DIMS];
    int d = wrap(fn, dim, base);
    if (d < 0 || selected_shape(fn, base, d, index, shape)) return NULL;
    if (base->ndim == 0 && index->numel > 1)
        return err_set(LT_ERR_SHAPE, "%s: a 0-d 'base' takes one index, got %s", fn,
                       SHAPE_STR(index->ndim, index->shape));
    if (src->ndim != base->ndim || memcmp(src->shape, shape, (size_t)base->ndim * 8))
        return err_set(LT_ERR_SHAPE, "%s: argument 'src' has shape %s; expected %s", fn, SHAPE_STR(src->ndim, src->shape),
                       SHAPE_STR(base->ndim, shape));
    int64_t ia[2] = {d, wrap_neg};
    lt_tensor *in[3] = {base, index, src};
    lt_tensor *t =
        nn_node(LT_OP_INDEX_ADD, (lt_dtype)base->dtype, base->ndim, base->shape, 3, in, wrap_neg ? 2 : 1, ia, 0, NULL);
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *nn_index_add(lt_tensor *base, int dim, lt_tensor *index, lt_tensor *src) {
    return index_add("nn_index_add", base, dim, index, src, 0);
}
lt_tensor *nn_index_add_wrap(lt_tensor *base, int dim, lt_tensor *index, lt_tensor *src) {
    return index_add("lt_index_put_add", base, dim, index, src, 1);
}

lt_tensor *lt_embedding(lt_tensor *weight, lt_tensor *indices) {
    static const char fn[] = "lt_embedding";
    API_ENTER();
    if (api_check(fn, "weight", weight) || api_check(fn, "indices", indices) || nn_index_dtype(fn, "indices", indices) ||
        nn_ndim(fn, "weight", weight, 2, "(V, D)"))
        return NULL;
    if (indices->ndim >= LT_MAX_DIMS)
        return err_set(LT_ERR_SHAPE, "%s: argument 'indices' %s leaves no room for the embedding dim", fn,
                       SHAPE_STR(indices->ndim, indices->shape));
    int64_t shape[LT_MAX_DIMS];
    memcpy(shape, indices->shape, (size_t)indices->ndim * 8);
    shape[indices->ndim] = weight->shape[1];
    int64_t ia[1] = {weight->shape[0]};
    lt_tensor *in[2] = {weight, indices};
    lt_tensor *t = nn_node(LT_OP_EMBEDDING, (lt_dtype)weight->dtype, indices->ndim + 1, shape, 2, in, 1, ia, 0, NULL);
    API_LEAVE(fn, t);
    return t;
}

/* zeros (V, D) + grad rows added at indices: one INDEX_ADD whose index is
 * read flat and whose src (..., D) is laid out as (M, D) (ref_index_add). */
lt_tensor *nn_embedding_backward(lt_tensor *grad_out, lt_tensor *indices, int64_t num_weights) {
    static const char fn[] = "nn_embedding_backward";
    API_ENTER();
    if (api_check(fn, "grad_out", grad_out) || api_check(fn, "indices", indices) || nn_index_dtype(fn, "indices", indices))
        return NULL;
    if (grad_out->ndim != indices->ndim + 1 || memcmp(grad_out->shape, indices->shape, (size_t)indices->ndim * 8))
        return err_set(LT_ERR_SHAPE, "%s: argument 'grad_out' %s must be indices' shape %s plus the embedding dim", fn,
                       SHAPE_STR(grad_out->ndim, grad_out->shape), SHAPE_STR(indices->ndim, indices->shape));
    int64_t shape[2] = {num_weights, grad_out->shape[grad_out->ndim - 1]}, ia[1] = {0};
    if (shape_numel_checked(fn, 2, shape) < 0) return NULL;
    double zero = 0;
    ir_node *in[3] = {ir_new(LT_OP_FILL, (lt_dtype)grad_out->dtype, 2, shape, 0, NULL, 0, NULL, 1, &zero),
                      func_value(indices), func_value(grad_out)};
    if (!in[0] || !in[1] || !in[2]) return NULL;
    ir_node *n = ir_new(LT_OP_INDEX_ADD, (lt_dtype)grad_out->dtype, 2, shape, 3, in, 1, ia, 0, NULL);
    lt_tensor *t = n ? func_new(n) : NULL;
    API_LEAVE(fn, t);
    return t;
}

/* The front ends' names for the backward ops above (include/lazytensor.h). */
lt_tensor *lt_scatter_add(lt_tensor *base, int dim, lt_tensor *index, lt_tensor *src) {
    return nn_scatter_add(base, dim, index, src);
}
lt_tensor *lt_index_add(lt_tensor *base, int dim, lt_tensor *index, lt_tensor *src) {
    return nn_index_add(base, dim, index, src);
}
lt_tensor *lt_embedding_backward(lt_tensor *grad_out, lt_tensor *indices, int64_t num_weights) {
    return nn_embedding_backward(grad_out, indices, num_weights);
}

/* torch's a[index] with one integer tensor at dim: index_select over the
 * flattened index (negatives count from the end), the result viewed as
 * a's shape with dim replaced by index's shape. */
static int index_shape(const char *fn, const lt_tensor *a, int d, const lt_tensor *index, int64_t *shape) {
    int nd = a->ndim - 1 + index->ndim;
    if (nd > LT_MAX_DIMS) {
        err_set(LT_ERR_SHAPE, "%s: indexing %s at dim %d with %s gives more than %d dims", fn,
                SHAPE_STR(a->ndim, a->shape), d, SHAPE_STR(index->ndim, index->shape), LT_MAX_DIMS);
        return -1;
    }
    memcpy(shape, a->shape, (size_t)d * 8);
    memcpy(shape + d, index->shape, (size_t)index->ndim * 8);
    memcpy(shape + d + index->ndim, a->shape + d + 1, (size_t)(a->ndim - d - 1) * 8);
    return nd;
}

lt_tensor *lt_index(lt_tensor *a, int dim, lt_tensor *index) {
    static const char fn[] = "lt_index";
    if (api_check(fn, "a", a) || api_check(fn, "index", index)) return NULL;
    if (a->ndim == 0) return err_set(LT_ERR_SHAPE, "%s: a 0-d 'a' cannot be indexed by a tensor", fn);
    int d = wrap(fn, dim, a);
    int64_t shape[LT_MAX_DIMS], n = index->numel;
    int nd = d < 0 ? -1 : index_shape(fn, a, d, index, shape);
    if (nd < 0) return NULL;
    lt_tensor *flat = lt_reshape(index, 1, &n);
    lt_tensor *sel = flat ? index_select(fn, a, d, flat, 1) : NULL;
    lt_tensor *t = sel ? lt_reshape(sel, nd, shape) : NULL;
    lt_free(flat);
    lt_free(sel);
    return t;
}

lt_tensor *lt_index_put_add(lt_tensor *base, int dim, lt_tensor *index, lt_tensor *values) {
    static const char fn[] = "lt_index_put_add";
    if (api_check(fn, "base", base) || api_check(fn, "index", index) || api_check(fn, "values", values)) return NULL;
    if (base->ndim == 0) return err_set(LT_ERR_SHAPE, "%s: a 0-d 'base' cannot be indexed by a tensor", fn);
    int d = wrap(fn, dim, base);
    int64_t shape[LT_MAX_DIMS], n = index->numel;
    int nd = d < 0 ? -1 : index_shape(fn, base, d, index, shape);
    if (nd < 0) return NULL;
    if (!shape_eq(nd, shape, values->ndim, values->shape))
        return err_set(LT_ERR_SHAPE, "%s: argument 'values' has shape %s; expected %s", fn,
                       SHAPE_STR(values->ndim, values->shape), SHAPE_STR(nd, shape));
    int64_t vs[LT_MAX_DIMS];
    memcpy(vs, base->shape, (size_t)base->ndim * 8);
    vs[d] = n;
    lt_tensor *flat = lt_reshape(index, 1, &n), *v = lt_reshape(values, base->ndim, vs);
    lt_tensor *t = flat && v ? nn_index_add_wrap(base, d, flat, v) : NULL;
    lt_free(flat);
    lt_free(v);
    return t;
}
