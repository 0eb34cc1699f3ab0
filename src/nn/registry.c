/* The list of a model's named tensors, in PyTorch's state_dict order. */
#include "nn.h"

#include "../core/core.h"

const char *nn_join(char *buf, size_t n, const char *prefix, const char *leaf) {
    if (prefix && prefix[0]) snprintf(buf, n, "%s.%s", prefix, leaf);
    else snprintf(buf, n, "%s", leaf);
    return buf;
}

int nn_register(nn_registry *r, const char *prefix, const char *leaf, lt_tensor *t, bool is_param) {
    if (!t) return -1; /* its creation failed and set the error */
    if (r->n == r->cap) {
        int nc = r->cap ? r->cap * 2 : 32;
        lt_tensor **nt = core_realloc(r->t, (size_t)nc * sizeof *nt);
        if (!nt) return -1;
        r->t = nt;
        char **nn = core_realloc(r->names, (size_t)nc * sizeof *nn);
        if (!nn) return -1;
        r->names = nn;
        bool *np = core_realloc(r->is_param, (size_t)nc * sizeof *np);
        if (!np) return -1;
        r->is_param = np;
        r->cap = nc;
    }
    char buf[256];
    nn_join(buf, sizeof buf, prefix, leaf);
    char *name = core_malloc(strlen(buf) + 1);
    if (!name) return -1;
    strcpy(name, buf);
    r->t[r->n] = t;
    r->names[r->n] = name;
    r->is_param[r->n] = is_param;
    r->n++;
    if (is_param) lt_set_requires_grad(t, true);
    return 0;
}

int nn_registry_finish(nn_registry *r) {
    int np = 0;
    for (int i = 0; i < r->n; i++) np += r->is_param[i];
    r->params = core_malloc((size_t)(np ? np : 1) * sizeof *r->params);
    r->pnames = core_malloc((size_t)(np ? np : 1) * sizeof *r->pnames);
    if (!r->params || !r->pnames) return -1;
    r->np = 0;
    for (int i = 0; i < r->n; i++)
        if (r->is_param[i]) {
            r->params[r->np] = r->t[i];
            r->pnames[r->np++] = r->names[i];
        }
    return 0;
}

void nn_registry_free(nn_registry *r) {
    for (int i = 0; i < r->n; i++) core_free(r->names[i]);
    core_free(r->t);
    core_free(r->names);
    core_free(r->is_param);
    core_free(r->params);
    core_free(r->pnames);
    memset(r, 0, sizeof *r);
}
