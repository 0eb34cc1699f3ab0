/* MLP: Linear layers fc1, fc2, ... with ReLU between them. */
#include "nn.h"

#include "../core/core.h"

int nn_mlp_init(nn_mlp *m, nn_registry *r, int nsizes, const int64_t *sizes) {
    memset(m, 0, sizeof *m);
    if (nsizes < 2) return err_set(LT_ERR_ARG, "lt_model_mlp: argument 'nsizes' is %d; needs at least 2", nsizes), -1;
    if (!sizes) return err_set(LT_ERR_NULL, "lt_model_mlp: argument 'sizes' is NULL"), -1;
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] <= 0)
            return err_set(LT_ERR_ARG, "lt_model_mlp: argument 'sizes[%d]' is %lld", i, (long long)sizes[i]), -1;
    m->fc = core_calloc((size_t)(nsizes - 1), sizeof *m->fc);
    if (!m->fc) return -1;
    for (int i = 0; i + 1 < nsizes; i++) {
        char name[16];
        snprintf(name, sizeof name, "fc%d", i + 1);
        m->nlayers = i + 1; /* counted first: a half-built layer is freed too */
        if (nn_linear_init(&m->fc[i], r, name, sizes[i], sizes[i + 1], true)) return -1;
    }
    return 0;
}

lt_tensor *nn_mlp_forward(nn_mlp *m, lt_tensor *x) {
    lt_tensor *h = lt_ndim(x) > 2 ? lt_flatten(x, 1, -1) : NULL;
    lt_tensor *cur = h ? h : x;
    for (int i = 0; i < m->nlayers; i++) {
        lt_tensor *y = nn_linear_forward(&m->fc[i], cur);
        if (i + 1 < m->nlayers) {
            lt_tensor *a = lt_relu(y);
            lt_free(y);
            y = a;
        }
        if (cur != x) lt_free(cur);
        cur = y;
    }
    return cur == x ? lt_clone(x) : cur;
}

void nn_mlp_free(nn_mlp *m) {
    for (int i = 0; i < m->nlayers; i++) nn_linear_free(&m->fc[i]);
    core_free(m->fc);
    memset(m, 0, sizeof *m);
}
