/* Learning-rate schedules: StepLR and CosineAnnealingLR in PyTorch 1.13's
 * recursive ("chainable") form, which is what scheduler.step() computes, so
 * the learning rates match PyTorch's bit for bit, and another scheduler or
 * the user may also change the lr in between. The lr reaches the graph as a
 * runtime scalar: a schedule never recompiles. */
#include "optim.h"

#include "../core/core.h"

#include <math.h>

static const double LT_PI = 3.14159265358979323846; /* == Python math.pi */

typedef enum sched_kind { SCHED_STEP, SCHED_COSINE } sched_kind;

struct lt_sched {
    sched_kind kind;
    lt_optim *o;        /* borrowed */
    int64_t epoch;      /* PyTorch's last_epoch */
    int64_t period;     /* step_size or T_max */
    double gamma, eta_min;
    int ngroups;
    double *base_lr;    /* each group's lr when the schedule was made (initial_lr) */
};

static lt_sched *make(sched_kind kind, const char *fn, lt_optim *o, int64_t period, double gamma, double eta_min) {
    if (!o) return err_set(LT_ERR_NULL, "%s: argument 'o' is NULL", fn);
    if (period <= 0)
        return err_set(LT_ERR_ARG, "%s: argument '%s' = %lld must be positive", fn,
                       kind == SCHED_STEP ? "step_size" : "t_max", (long long)period);
    if (!isfinite(gamma) || !isfinite(eta_min))
        return err_set(LT_ERR_ARG, "%s: argument '%s' = %g must be finite", fn, isfinite(gamma) ? "eta_min" : "gamma",
                       isfinite(gamma) ? eta_min : gamma);
    lt_sched *s = core_calloc(1, sizeof *s);
    if (!s) return NULL;
    s->base_lr = core_malloc((size_t)o->ngroups * sizeof *s->base_lr);
    if (!s->base_lr) {
        core_free(s);
        return NULL;
    }
    *s = (lt_sched){kind, o, 0, period, gamma, eta_min, o->ngroups, s->base_lr};
    for (int g = 0; g < o->ngroups; g++) s->base_lr[g] = o->groups[g].lr;
    return s;
}

lt_sched *lt_sched_step_lr(lt_optim *o, int64_t step_size, double gamma) {
    return make(SCHED_STEP, "lt_sched_step_lr", o, step_size, gamma, 0);
}

lt_sched *lt_sched_cosine(lt_optim *o, int64_t t_max, double eta_min) {
    return make(SCHED_COSINE, "lt_sched_cosine", o, t_max, 1, eta_min);
}

void lt_sched_step(lt_sched *s) {
    if (!s) {
        err_set(LT_ERR_NULL, "lt_sched_step: argument 's' is NULL");
        return;
    }
    s->epoch++;
    int64_t e = s->epoch, T = s->period;
    for (int g = 0; g < s->ngroups && g < s->o->ngroups; g++) {
        double *lr = &s->o->groups[g].lr;
        if (s->kind == SCHED_STEP) {
            if (e % T == 0) *lr = *lr * s->gamma;
        } else if ((((e - 1 - T) % (2 * T)) + 2 * T) % (2 * T) == 0) {
            *lr = *lr + (s->base_lr[g] - s->eta_min) * (1 - cos(LT_PI / (double)T)) / 2;
        } else {
            *lr = (1 + cos(LT_PI * (double)e / (double)T)) / (1 + cos(LT_PI * (double)(e - 1) / (double)T)) *
                      (*lr - s->eta_min) +
                  s->eta_min;
        }
    }
}

int64_t lt_sched_epoch(const lt_sched *s) {
    return s ? s->epoch : (err_set(LT_ERR_NULL, "lt_sched_epoch: argument 's' is NULL"), -1);
}

void lt_sched_free(lt_sched *s) {
    if (!s) return;
    core_free(s->base_lr);
    core_free(s);
}
