/* Optimizer state for checkpoints: named tensors "<slot>.<i>" (i = the
 * parameter's index over all groups in the order they were added), as in
 * PyTorch's optimizer state_dict; step counts go separately
 * (lt_optim_get_step), e.g. into safetensors metadata. A sharded optimizer
 * (shard.c) hands out and takes whole tensors too. */
#include "optim.h"

#include "../core/core.h"
#include "../func/func.h"

int lt_optim_state(lt_optim *o, int max, const char **names, lt_tensor **tensors) {
    if (!o) return err_set(LT_ERR_NULL, "lt_optim_state: argument 'o' is NULL"), -1;
    if (max < 0) return err_set(LT_ERR_ARG, "lt_optim_state: argument 'max' is %d (negative)", max), -1;
    int total = 0;
    for (int i = 0; i < o->n; i++)
        for (int s = 0; s < OPT_NSTATE; s++) total += o->params[i].s[s] != NULL;
    if (max <= 0) return total;
    if (!names || !tensors)
        return err_set(LT_ERR_NULL, "lt_optim_state: argument '%s' is NULL", names ? "tensors" : "names"), -1;
    if (o->shard && opt_shard_gather(o)) return -1; /* whole tensors, whatever the world size */
    char **nn = core_calloc((size_t)total + 1, sizeof *nn);
    if (!nn) return -1;
    int k = 0;
    const char *const *slot = opt_state_names[o->kind != OPT_SGD];
    for (int i = 0; i < o->n; i++)
        for (int s = 0; s < OPT_NSTATE; s++) {
            if (!o->params[i].s[s]) continue;
            char buf[64];
            snprintf(buf, sizeof buf, "%s.%d", slot[s], i);
            if (!(nn[k] = core_malloc(strlen(buf) + 1))) {
                for (int j = 0; j < k; j++) core_free(nn[j]);
                core_free(nn);
                return -1;
            }
            strcpy(nn[k], buf);
            if (k < max) {
                names[k] = nn[k];
                tensors[k] = o->shard ? o->whole[k] : o->params[i].s[s];
            }
            k++;
        }
    /* The names stay valid until the next call or lt_optim_free. */
    for (int j = 0; j < o->nnames; j++) core_free(o->names[j]);
    core_free(o->names);
    o->names = nn;
    o->nnames = total;
    return total;
}

/* Parses "<slot>.<i>" into slot and index; -1 if it is not a state name. */
static int parse_name(const lt_optim *o, const char *name, int *slot, int *idx) {
    const char *dot = strrchr(name, '.');
    if (!dot || !dot[1]) return -1;
    char *end;
    long i = strtol(dot + 1, &end, 10);
    if (*end || i < 0 || i >= o->n) return -1;
    const char *const *names = opt_state_names[o->kind != OPT_SGD];
    for (int s = 0; s < OPT_NSTATE; s++)
        if (names[s] && strlen(names[s]) == (size_t)(dot - name) && !strncmp(name, names[s], (size_t)(dot - name))) {
            *slot = s;
            *idx = (int)i;
            return 0;
        }
    return -1;
}

int lt_optim_load_state(lt_optim *o, int n, const char *const *names, lt_tensor *const *tensors) {
    const char *fn = "lt_optim_load_state";
    if (!o) return err_set(LT_ERR_NULL, "%s: argument 'o' is NULL", fn), -1;
    if (n < 0) return err_set(LT_ERR_ARG, "%s: argument 'n' is %d (negative)", fn, n), -1;
    if (n && (!names || !tensors))
        return err_set(LT_ERR_NULL, "%s: argument '%s' is NULL", fn, names ? "tensors" : "names"), -1;
    for (int k = 0; k < n; k++) { /* check everything before changing anything */
        int s, i;
        if (!names[k] || !tensors[k])
            return err_set(LT_ERR_NULL, "%s: argument '%s[%d]' is NULL", fn, names[k] ? "tensors" : "names", k), -1;
        if (tensors[k]->magic != LT_HANDLE_MAGIC)
            return err_set(LT_ERR_STATE, "%s: argument 'tensors[%d]' is a freed or invalid handle", fn, k), -1;
        if (parse_name(o, names[k], &s, &i))
            return err_set(LT_ERR_ARG, "%s: argument 'names[%d]' = '%s' is not a state name of this optimizer", fn, k,
                           names[k]), -1;
        lt_tensor *p = o->params[i].p, *t = tensors[k];
        if (lt_dtype_of(t) != lt_dtype_of(p) || lt_ndim(t) != lt_ndim(p) ||
            memcmp(lt_shape(t), lt_shape(p), sizeof(int64_t) * (size_t)lt_ndim(p)))
            return err_set(LT_ERR_SHAPE, "%s: argument 'tensors[%d]' ('%s') has %s %s but parameter %d has %s %s", fn,
                           k, names[k],
                           lt_dtype_name(lt_dtype_of(t)), SHAPE_STR(lt_ndim(t), lt_shape(t)), i,
                           lt_dtype_name(lt_dtype_of(p)), SHAPE_STR(lt_ndim(p), lt_shape(p))), -1;
    }
    for (int k = 0; k < n; k++) {
        int s, i;
        parse_name(o, names[k], &s, &i);
        /* The optimizer owns its state; the caller keeps its tensor. Sharded:
         * this rank's chunk of it, whatever world size wrote the file. */
        lt_tensor *c = o->shard ? lt_dist_shard(tensors[k]) : lt_clone(tensors[k]);
        if (!c) return -1;
        lt_free(o->params[i].s[s]);
        o->params[i].s[s] = c;
    }
    return 0;
}
