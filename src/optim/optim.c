/* The optimizer object: parameter groups, options, the step loop, state
 * access for checkpoints. The update rules are in sgd.c and adam.c. */
#include "optim.h"

#include "../core/core.h"
#include "../dist/dist.h"
#include "../func/func.h"

#include <math.h>

const char *const opt_state_names[2][OPT_NSTATE] = {{"momentum_buffer", NULL, NULL},
                                                    {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}};

static lt_tensor *zeros(lt_dtype d, int ndim, const int64_t *shape, int64_t numel) {
    size_t bytes = (size_t)numel * lt_dtype_size(d);
    void *z = core_calloc(1, bytes ? bytes : 1);
    if (!z) return NULL;
    lt_tensor *r = func_unscope(lt_from_data(z, d, ndim, shape)); /* state: the optimizer's */
    core_free(z);
    return r;
}

lt_tensor *opt_zeros_like(lt_tensor *t) { return zeros(lt_dtype_of(t), lt_ndim(t), lt_shape(t), lt_numel(t)); }

lt_tensor *opt_state_zeros(const lt_optim *o, lt_tensor *p) {
    if (!o->shard) return opt_zeros_like(p);
    int64_t w = dist_world(), c = (lt_numel(p) + w - 1) / w; /* lt_dist_shard's chunk */
    return zeros(lt_dtype_of(p), 1, &c, c);
}

/* Adds n parameters as a new group with hyperparameters h. */
static int add_group(lt_optim *o, const char *fn, int n, lt_tensor *const *params, const opt_group *hp) {
    opt_group h = *hp; /* hp may point into o->groups, which moves below */
    if (n < 0) return err_set(LT_ERR_ARG, "%s: argument 'n' is %d (negative)", fn, n), -1;
    if (n && !params) return err_set(LT_ERR_NULL, "%s: argument 'params' is NULL (n = %d)", fn, n), -1;
    for (int i = 0; i < n; i++) {
        if (!params[i]) return err_set(LT_ERR_NULL, "%s: argument 'params[%d]' is NULL", fn, i), -1;
        if (params[i]->magic != LT_HANDLE_MAGIC)
            return err_set(LT_ERR_STATE, "%s: argument 'params[%d]' is a freed or invalid handle", fn, i), -1;
        lt_dtype d = lt_dtype_of(params[i]);
        if (d != LT_F32 && d != LT_F64)
            return err_set(LT_ERR_DTYPE, "%s: argument 'params[%d]' has dtype %s; optimizers need F32 or F64", fn, i,
                           lt_dtype_name(d)), -1;
        for (int j = 0; j < o->n + i; j++)
            if ((j < o->n ? o->params[j].p : params[j - o->n]) == params[i])
                return err_set(LT_ERR_ARG, "%s: argument 'params[%d]' is already in the optimizer", fn, i), -1;
    }
    opt_group *g = core_realloc(o->groups, (size_t)(o->ngroups + 1) * sizeof *g);
    if (!g) return -1;
    o->groups = g;
    opt_param *ps = core_realloc(o->params, (size_t)(o->n + n + 1) * sizeof *ps);
    if (!ps) return -1;
    o->params = ps;
    g[o->ngroups] = h;
    for (int i = 0; i < n; i++) ps[o->n + i] = (opt_param){.p = params[i], .group = o->ngroups};
    o->n += n;
    /* The state is made now, as materialized zeros, not on the first step:
     * the sync orders a graph's outputs by tensor creation, so state born
     * inside step 1 would make step 1's graph differ from step 2's, and the
     * training step would compile twice. */
    int nstate = o->kind != OPT_SGD ? (h.amsgrad ? 3 : 2) : h.momentum != 0;
    for (int i = o->n - n; i < o->n; i++)
        for (int s = 0; s < nstate; s++)
            if (!(ps[i].s[s] = opt_state_zeros(o, ps[i].p))) return -1;
    return o->ngroups++;
}

static lt_optim *make(opt_kind kind, const char *fn, int n, lt_tensor *const *params, const opt_group *h) {
    const char *bad = !(h->lr >= 0) ? "lr" : !(h->eps >= 0) ? "eps" : !(h->weight_decay >= 0) ? "weight_decay"
                    : !(h->momentum >= 0) ? "momentum" : !(h->beta1 >= 0 && h->beta1 < 1) ? "beta1"
                    : !(h->beta2 >= 0 && h->beta2 < 1) ? "beta2" : NULL;
    if (bad)
        return err_set(LT_ERR_ARG, "%s: argument '%s' is invalid (lr=%g eps=%g weight_decay=%g momentum=%g "
                                   "betas=(%g, %g))", fn, bad, h->lr, h->eps, h->weight_decay, h->momentum, h->beta1,
                       h->beta2);
    if (h->nesterov && (h->momentum <= 0 || h->dampening != 0))
        return err_set(LT_ERR_ARG, "%s: argument 'nesterov' needs momentum > 0 and dampening 0", fn);
    lt_optim *o = core_calloc(1, sizeof *o);
    if (!o) return NULL;
    o->kind = kind;
    o->shard = dist_shard_optimizer();
    if (add_group(o, fn, n, params, h) < 0) {
        lt_optim_free(o);
        return NULL;
    }
    return o;
}

lt_optim *lt_optim_sgd(int n, lt_tensor *const *params, double lr, double momentum, double dampening,
                       double weight_decay, bool nesterov) {
    opt_group h = {.lr = lr, .momentum = momentum, .dampening = dampening, .weight_decay = weight_decay,
                   .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .nesterov = nesterov};
    return make(OPT_SGD, "lt_optim_sgd", n, params, &h);
}

lt_optim *lt_optim_adam(int n, lt_tensor *const *params, double lr, double beta1, double beta2, double eps,
                        double weight_decay, bool amsgrad) {
    opt_group h = {.lr = lr, .beta1 = beta1, .beta2 = beta2, .eps = eps, .weight_decay = weight_decay,
                   .amsgrad = amsgrad};
    return make(OPT_ADAM, "lt_optim_adam", n, params, &h);
}

lt_optim *lt_optim_adamw(int n, lt_tensor *const *params, double lr, double beta1, double beta2, double eps,
                         double weight_decay, bool amsgrad) {
    opt_group h = {.lr = lr, .beta1 = beta1, .beta2 = beta2, .eps = eps, .weight_decay = weight_decay,
                   .amsgrad = amsgrad};
    return make(OPT_ADAMW, "lt_optim_adamw", n, params, &h);
}

int lt_optim_add_group(lt_optim *o, int n, lt_tensor *const *params) {
    if (!o) return err_set(LT_ERR_NULL, "lt_optim_add_group: argument 'o' is NULL"), -1;
    return add_group(o, "lt_optim_add_group", n, params, &o->groups[0]);
}

/* The option named `name` in group h, or NULL. Booleans are stored apart. */
static double *option(opt_group *h, const char *name) {
    if (!strcmp(name, "lr")) return &h->lr;
    if (!strcmp(name, "momentum")) return &h->momentum;
    if (!strcmp(name, "dampening")) return &h->dampening;
    if (!strcmp(name, "weight_decay")) return &h->weight_decay;
    if (!strcmp(name, "beta1")) return &h->beta1;
    if (!strcmp(name, "beta2")) return &h->beta2;
    if (!strcmp(name, "eps")) return &h->eps;
    return NULL;
}

static bool *flag(opt_group *h, const char *name) {
    if (!strcmp(name, "nesterov")) return &h->nesterov;
    if (!strcmp(name, "maximize")) return &h->maximize;
    if (!strcmp(name, "amsgrad")) return &h->amsgrad;
    return NULL;
}

int lt_optim_set(lt_optim *o, int group, const char *name, double value) {
    if (!o || !name) return err_set(LT_ERR_NULL, "lt_optim_set: argument '%s' is NULL", o ? "name" : "o"), -1;
    if (group < -1 || group >= o->ngroups)
        return err_set(LT_ERR_ARG, "lt_optim_set: argument 'group' %d out of range [-1, %d)", group, o->ngroups), -1;
    if (!option(&o->groups[0], name) && !flag(&o->groups[0], name))
        return err_set(LT_ERR_ARG, "lt_optim_set: argument 'name': unknown option '%s'", name), -1;
    if (isnan(value) || (strcmp(name, "dampening") && value < 0))
        return err_set(LT_ERR_ARG, "lt_optim_set: argument 'value': option '%s' = %g is invalid", name, value), -1;
    for (int k = group < 0 ? 0 : group; k < (group < 0 ? o->ngroups : group + 1); k++) {
        double *d = option(&o->groups[k], name);
        if (d) *d = value;
        else *flag(&o->groups[k], name) = value != 0;
    }
    return 0;
}

double lt_optim_get(const lt_optim *o, int group, const char *name) {
    if (!o || !name) return err_set(LT_ERR_NULL, "lt_optim_get: argument '%s' is NULL", o ? "name" : "o"), NAN;
    if (group < 0 || group >= o->ngroups)
        return err_set(LT_ERR_ARG, "lt_optim_get: argument 'group' %d out of range [0, %d)", group, o->ngroups), NAN;
    opt_group *h = &o->groups[group];
    double *d = option(h, name);
    bool *b = d ? NULL : flag(h, name);
    if (!d && !b) return err_set(LT_ERR_ARG, "lt_optim_get: argument 'name': unknown option '%s'", name), NAN;
    return d ? *d : (double)*b;
}

void lt_optim_set_lr(lt_optim *o, double lr) {
    if (!o) err_set(LT_ERR_NULL, "lt_optim_set_lr: argument 'o' is NULL");
    else if (!(lr >= 0)) err_set(LT_ERR_ARG, "lt_optim_set_lr: argument 'lr' = %g is invalid", lr);
    else lt_optim_set(o, -1, "lr", lr);
}
int lt_optim_num_groups(const lt_optim *o) {
    return o ? o->ngroups : (err_set(LT_ERR_NULL, "lt_optim_num_groups: argument 'o' is NULL"), -1);
}

int lt_optim_step(lt_optim *o) {
    if (!o) return err_set(LT_ERR_NULL, "lt_optim_step: argument 'o' is NULL"), -1;
    if (o->shard) return opt_shard_step(o);
    int rc = 0;
    lt_no_grad_begin();
    if (o->max_norm > 0) {
        lt_tensor **p = core_malloc((size_t)(o->n ? o->n : 1) * sizeof *p);
        for (int i = 0; p && i < o->n; i++) p[i] = o->params[i].p;
        lt_tensor *total = p ? opt_clip_grad_norm(o->n, p, o->max_norm) : NULL;
        lt_free(total);
        core_free(p);
        if (!total) {
            lt_no_grad_end();
            return -1;
        }
    }
    for (int i = 0; i < o->n; i++) {
        opt_param *st = &o->params[i];
        lt_tensor *g = lt_grad(st->p);
        if (!g) continue; /* as PyTorch: a parameter without a gradient is skipped, its step not counted */
        const opt_group *h = &o->groups[st->group];
        if (o->kind == OPT_SGD) {
            st->step++;
            rc |= opt_sgd_update(h, st, g);
        } else {
            rc |= opt_adam_update(h, st, g, o->kind == OPT_ADAMW);
        }
    }
    lt_no_grad_end();
    return rc ? -1 : 0;
}

int lt_optim_set_max_grad_norm(lt_optim *o, double max_norm) {
    if (!o) return err_set(LT_ERR_NULL, "lt_optim_set_max_grad_norm: argument 'o' is NULL"), -1;
    if (!(max_norm >= 0) || !isfinite(max_norm))
        return err_set(LT_ERR_ARG, "lt_optim_set_max_grad_norm: argument 'max_norm' is %g; must be finite and >= 0",
                       max_norm), -1;
    o->max_norm = max_norm;
    return 0;
}

size_t lt_optim_state_bytes(const lt_optim *o) {
    if (!o) return err_set(LT_ERR_NULL, "lt_optim_state_bytes: argument 'o' is NULL"), 0;
    size_t b = 0;
    for (int i = 0; i < o->n; i++)
        for (int s = 0; s < OPT_NSTATE; s++)
            if (o->params[i].s[s]) b += (size_t)lt_numel(o->params[i].s[s]) * lt_dtype_size(lt_dtype_of(o->params[i].s[s]));
    return b;
}

void lt_optim_zero_grad(lt_optim *o) {
    if (!o) err_set(LT_ERR_NULL, "lt_optim_zero_grad: argument 'o' is NULL");
    for (int i = 0; o && i < o->n; i++) lt_zero_grad(o->params[i].p);
}

static void free_names(lt_optim *o) {
    for (int i = 0; i < o->nnames; i++) core_free(o->names[i]);
    core_free(o->names);
    o->names = NULL;
    o->nnames = 0;
}

void lt_optim_free(lt_optim *o) {
    if (!o) return;
    for (int i = 0; i < o->n; i++)
        for (int s = 0; s < OPT_NSTATE; s++) lt_free(o->params[i].s[s]);
    for (int i = 0; i < o->nwhole; i++) lt_free(o->whole[i]);
    core_free(o->whole);
    free_names(o);
    core_free(o->params);
    core_free(o->groups);
    core_free(o);
}

int lt_optim_num_params(const lt_optim *o) {
    return o ? o->n : (err_set(LT_ERR_NULL, "lt_optim_num_params: argument 'o' is NULL"), -1);
}

int64_t lt_optim_get_step(const lt_optim *o, int i) {
    if (!o) return err_set(LT_ERR_NULL, "lt_optim_get_step: argument 'o' is NULL"), -1;
    if (i < -1 || i >= o->n)
        return err_set(LT_ERR_ARG, "lt_optim_get_step: argument 'i' = %d out of range [-1, %d)", i, o->n), -1;
    if (i >= 0) return o->params[i].step;
    int64_t m = 0;
    for (int k = 0; k < o->n; k++) m = o->params[k].step > m ? o->params[k].step : m;
    return m;
}

int lt_optim_set_step(lt_optim *o, int i, int64_t step) {
    if (!o) return err_set(LT_ERR_NULL, "lt_optim_set_step: argument 'o' is NULL"), -1;
    if (i < -1 || i >= o->n)
        return err_set(LT_ERR_ARG, "lt_optim_set_step: argument 'i' = %d out of range [-1, %d)", i, o->n), -1;
    if (step < 0) return err_set(LT_ERR_ARG, "lt_optim_set_step: argument 'step' = %lld is negative", (long long)step), -1;
    for (int k = i < 0 ? 0 : i; k < (i < 0 ? o->n : i + 1); k++) o->params[k].step = step;
    return 0;
}
