/* optim: SGD, Adam and AdamW with parameter groups, and learning-rate
 * schedules (DESIGN 7). Updates follow PyTorch 1.13's single-tensor
 * formulas, are written with the public in-place ops inside no-grad mode, and
 * so are traced into the same lazy graph as forward and backward. Every
 * hyperparameter reaches the graph as a C double: values other than 0 and 1
 * are runtime scalars, so a schedule or Adam's bias correction never
 * recompiles. */
#ifndef LT_OPTIM_H
#define LT_OPTIM_H

#include "lazytensor.h"

typedef enum opt_kind { OPT_SGD, OPT_ADAM, OPT_ADAMW } opt_kind;

typedef struct opt_group {
    double lr, momentum, dampening, weight_decay, beta1, beta2, eps;
    bool nesterov, maximize, amsgrad;
} opt_group;

/* Per-parameter state: SGD uses s[0] (momentum_buffer, if momentum != 0);
 * Adam/AdamW use s[0] (exp_avg), s[1] (exp_avg_sq), s[2] (max_exp_avg_sq,
 * amsgrad only). Made as zeros with the optimizer (see add_group), or on the
 * first step if an option set later needs it. */
#define OPT_NSTATE 3
typedef struct opt_param {
    lt_tensor *p;                 /* borrowed */
    lt_tensor *s[OPT_NSTATE];     /* owned */
    int64_t step;                 /* steps this parameter took (PyTorch's state['step']) */
    int group;
} opt_param;

struct lt_optim {
    opt_kind kind;
    int ngroups, n;
    opt_group *groups;
    opt_param *params;
    char **names;                 /* state names handed out by lt_optim_state */
    int nnames;
    double max_norm;              /* lt_optim_set_max_grad_norm; 0: off */
    bool shard;                   /* ZeRO-1 (shard.c): s[] hold this rank's chunk of each parameter */
    lt_tensor **whole;            /* sharded: the whole state lt_optim_state gathered last (owned) */
    int nwhole;
};

extern const char *const opt_state_names[2][OPT_NSTATE]; /* [sgd=0/adam=1][slot] */

/* One parameter's update (sgd.c, adam.c). g is the gradient (borrowed).
 * Returns 0, or -1 if an op failed (error set). */
int opt_sgd_update(const opt_group *h, opt_param *st, lt_tensor *g);
int opt_adam_update(const opt_group *h, opt_param *st, lt_tensor *g, bool decoupled);

/* A materialized zero tensor shaped like t: a data leaf, not a FILL node, so
 * the step that creates the state traces the same graph as later steps.
 * opt_state_zeros: one state tensor for parameter p (sharded: its chunk). */
lt_tensor *opt_zeros_like(lt_tensor *t);
lt_tensor *opt_state_zeros(const lt_optim *o, lt_tensor *p);

/* clip.c: g[i] *= clamp(max_norm / (total + 1e-6), max=1), as
 * lt_clip_grad_norm_ given the total norm. 0 or -1. */
int opt_clip_by(int n, lt_tensor *const *g, lt_tensor *total, double max_norm);
/* lt_clip_grad_norm_ without its check that the optimizers are not sharded. */
lt_tensor *opt_clip_grad_norm(int n, lt_tensor *const *params, double max_norm);

/* shard.c (ZeRO-1, lt_dist_set_shard_optimizer): the step of a sharded
 * optimizer, and its whole state gathered for lt_optim_state (collective;
 * fills o->whole in the order of o->params' non-NULL s[]). 0 or -1. */
int opt_shard_step(lt_optim *o);
int opt_shard_gather(lt_optim *o);

#endif
