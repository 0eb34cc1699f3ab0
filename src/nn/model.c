/* lt_model: one handle over the models of this folder, with their named
 * parameters and buffers (torchvision's names, state_dict order). */
#include "nn.h"

#include "../core/core.h"
#include "../func/func.h"

typedef enum model_kind { MODEL_MLP, MODEL_RESNET, MODEL_GPT } model_kind;

struct lt_model {
    model_kind kind;
    bool training;
    nn_registry reg;
    nn_mlp mlp;
    nn_resnet resnet;
    nn_gpt gpt;
};

static lt_model *finish(lt_model *m, int rc) {
    if (rc || nn_registry_finish(&m->reg)) {
        lt_model_free(m);
        return NULL;
    }
    return m;
}

lt_model *lt_model_mlp(int nsizes, const int64_t *sizes) {
    lt_model *m = core_calloc(1, sizeof *m);
    if (!m) return NULL;
    m->kind = MODEL_MLP;
    m->training = true;
    return finish(m, nn_mlp_init(&m->mlp, &m->reg, nsizes, sizes));
}

lt_model *lt_model_gpt(const lt_gpt_config *cfg) {
    static const char fn[] = "lt_model_gpt";
    if (!cfg) return err_set(LT_ERR_NULL, "%s: argument 'cfg' is NULL", fn);
    if (cfg->n_layer < 1 || cfg->n_head < 1 || cfg->n_embd < 1 || cfg->block_size < 1 || cfg->vocab_size < 1)
        return err_set(LT_ERR_ARG, "%s: every size must be >= 1 (n_layer %lld, n_head %lld, n_embd %lld, "
                       "block_size %lld, vocab_size %lld)", fn, (long long)cfg->n_layer, (long long)cfg->n_head,
                       (long long)cfg->n_embd, (long long)cfg->block_size, (long long)cfg->vocab_size);
    if (cfg->n_embd % cfg->n_head)
        return err_set(LT_ERR_ARG, "%s: n_embd %lld is not a multiple of n_head %lld", fn, (long long)cfg->n_embd,
                       (long long)cfg->n_head);
    if (!(cfg->dropout >= 0 && cfg->dropout < 1))
        return err_set(LT_ERR_ARG, "%s: dropout is %g; must be in [0, 1)", fn, cfg->dropout);
    lt_model *m = core_calloc(1, sizeof *m);
    if (!m) return NULL;
    m->kind = MODEL_GPT;
    m->training = true;
    return finish(m, nn_gpt_init(&m->gpt, &m->reg, cfg));
}

lt_model *lt_model_new(const char *name, int in_channels, int num_classes) {
    if (!name) return err_set(LT_ERR_NULL, "lt_model_new: argument 'name' is NULL");
    if (in_channels <= 0 || num_classes <= 0)
        return err_set(LT_ERR_ARG, "lt_model_new: argument '%s' must be positive (in_channels %d, num_classes %d)",
                       in_channels <= 0 ? "in_channels" : "num_classes", in_channels, num_classes);
    if (!strcmp(name, "mlp")) {
        /* 28x28 images (Fashion-MNIST) -> 256 -> 128 -> classes. */
        int64_t sizes[4] = {(int64_t)in_channels * 28 * 28, 256, 128, num_classes};
        return lt_model_mlp(4, sizes);
    }
    if (!strcmp(name, "gpt")) { /* num_classes: the vocabulary */
        lt_gpt_config cfg = {6, 6, 384, 256, num_classes, 0.0};
        return lt_model_gpt(&cfg);
    }
    int depth = !strcmp(name, "resnet20") ? 20 : !strcmp(name, "resnet18") ? 18 : !strcmp(name, "resnet50") ? 50 : 0;
    if (!depth)
        return err_set(LT_ERR_ARG, "lt_model_new: argument 'name': unknown model '%s' (mlp, resnet20, resnet18, resnet50, gpt)", name);
    lt_model *m = core_calloc(1, sizeof *m);
    if (!m) return NULL;
    m->kind = MODEL_RESNET;
    m->training = true;
    return finish(m, nn_resnet_init(&m->resnet, &m->reg, depth, in_channels, num_classes));
}

lt_tensor *lt_model_forward(lt_model *m, lt_tensor *x) {
    if (!m) return err_set(LT_ERR_NULL, "lt_model_forward: argument 'm' is NULL");
    if (!x) return err_set(LT_ERR_NULL, "lt_model_forward: argument 'x' is NULL");
    if (x->magic != LT_HANDLE_MAGIC) return err_set(LT_ERR_STATE, "lt_model_forward: argument 'x' is a freed or invalid handle");
    if (m->kind == MODEL_MLP) {
        int64_t k = lt_shape(m->mlp.fc[0].weight)[1], feat = 1;
        for (int i = 1; i < lt_ndim(x); i++) feat *= lt_shape(x)[i];
        if (lt_ndim(x) < 2 || feat != k)
            return err_set(LT_ERR_SHAPE, "lt_model_forward: argument 'x' %s must be (N, ...) with %lld features",
                           SHAPE_STR(lt_ndim(x), lt_shape(x)), (long long)k);
        return nn_mlp_forward(&m->mlp, x);
    }
    if (m->kind == MODEL_GPT) {
        if (lt_ndim(x) != 2 || lt_dtype_of(x) != LT_I64 || lt_shape(x)[1] < 1 ||
            lt_shape(x)[1] > m->gpt.cfg.block_size)
            return err_set(LT_ERR_SHAPE, "lt_model_forward: a GPT takes (B, T) int64 tokens with 1 <= T <= %lld, got %s %s",
                           (long long)m->gpt.cfg.block_size, dtype_name(lt_dtype_of(x)), SHAPE_STR(lt_ndim(x), lt_shape(x)));
        return nn_gpt_forward(&m->gpt, x, m->training);
    }
    if (lt_ndim(x) != 4)
        return err_set(LT_ERR_SHAPE, "lt_model_forward: a ResNet takes (N, C, H, W), got %s",
                       SHAPE_STR(lt_ndim(x), lt_shape(x)));
    return nn_resnet_forward(&m->resnet, x, m->training);
}

void lt_model_train(lt_model *m, bool training) {
    if (m) m->training = training;
    else err_set(LT_ERR_NULL, "lt_model_train: argument 'm' is NULL");
}

bool lt_model_is_training(const lt_model *m) {
    return m ? m->training : (err_set(LT_ERR_NULL, "lt_model_is_training: argument 'm' is NULL"), false);
}

int lt_model_params(lt_model *m, lt_tensor ***params, const char ***names) {
    if (!m) return err_set(LT_ERR_NULL, "lt_model_params: argument 'm' is NULL"), -1;
    if (params) *params = m->reg.params;
    if (names) *names = m->reg.pnames;
    return m->reg.np;
}

int lt_model_state(lt_model *m, lt_tensor ***tensors, const char ***names) {
    if (!m) return err_set(LT_ERR_NULL, "lt_model_state: argument 'm' is NULL"), -1;
    if (tensors) *tensors = m->reg.t;
    if (names) *names = (const char **)m->reg.names;
    return m->reg.n;
}

int lt_model_load_state(lt_model *m, int n, const char *const *names, lt_tensor *const *tensors, bool strict) {
    const char *fn = "lt_model_load_state";
    if (!m) return err_set(LT_ERR_NULL, "%s: argument 'm' is NULL", fn), -1;
    if (n < 0) return err_set(LT_ERR_ARG, "%s: argument 'n' is %d (negative)", fn, n), -1;
    if (n && (!names || !tensors))
        return err_set(LT_ERR_NULL, "%s: argument '%s' is NULL", fn, names ? "tensors" : "names"), -1;
    int *src = core_malloc((size_t)(m->reg.n ? m->reg.n : 1) * sizeof *src);
    if (!src) return -1;
    int rc = 0, found = 0;
    for (int i = 0; i < m->reg.n && !rc; i++) { /* check everything before writing anything */
        src[i] = -1;
        for (int k = 0; k < n && src[i] < 0; k++)
            if (names[k] && !strcmp(names[k], m->reg.names[i])) src[i] = k;
        if (src[i] < 0) {
            if (strict) rc = (err_set(LT_ERR_ARG, "%s: argument 'names': '%s' is missing", fn, m->reg.names[i]), -1);
            continue;
        }
        found++;
        lt_tensor *d = m->reg.t[i], *s = tensors[src[i]];
        if (!s) rc = (err_set(LT_ERR_NULL, "%s: argument 'tensors[%d]' ('%s') is NULL", fn, src[i], names[src[i]]), -1);
        else if (lt_ndim(s) != lt_ndim(d) || memcmp(lt_shape(s), lt_shape(d), sizeof(int64_t) * (size_t)lt_ndim(d)))
            rc = (err_set(LT_ERR_SHAPE, "%s: argument 'tensors[%d]' ('%s') has shape %s, the model's has %s", fn,
                          src[i], m->reg.names[i],
                          SHAPE_STR(lt_ndim(s), lt_shape(s)), SHAPE_STR(lt_ndim(d), lt_shape(d))), -1);
    }
    if (!rc && strict && found != n)
        rc = (err_set(LT_ERR_ARG, "%s: argument 'names': %d of the %d given tensors are not in the model", fn, n - found, n), -1);
    if (!rc) {
        lt_no_grad_begin(); /* parameters are leaves that require grad */
        for (int i = 0; i < m->reg.n; i++)
            if (src[i] >= 0 && !lt_copy_(m->reg.t[i], tensors[src[i]])) rc = -1;
        lt_no_grad_end();
    }
    core_free(src);
    return rc ? rc : found;
}

void lt_model_free(lt_model *m) {
    if (!m) return;
    if (m->kind == MODEL_MLP) nn_mlp_free(&m->mlp);
    else if (m->kind == MODEL_GPT) nn_gpt_free(&m->gpt);
    else nn_resnet_free(&m->resnet);
    nn_registry_free(&m->reg);
    core_free(m);
}
