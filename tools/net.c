/* A --model and its --optimizer over the library's lt_model and lt_optim:
 * forward, lt_cross_entropy, lt_backward, optimizer step; gradients are
 * dropped before the sync so they stay inside the compiled graph. */
#include "net.h"

#include <stdlib.h>
#include <string.h>

struct cli_net {
    lt_model *m;
    lt_optim *opt;
    bool lm;  /* a language model (gpt): (B, T, V) logits, gradients clipped to norm 1 as nanoGPT */
    int nstate;
    const char **names;  /* checkpoint names: model's borrowed, optimizer's owned */
    lt_tensor **tensors;
    char **owned;
    int nowned;
    char desc[96];
    bool bf16; /* --precision bf16: forward and loss inside an autocast region */
};

cli_net *net_create(const cli_opts *o, int in_ch, int hw, int classes) {
    cli_net *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    if (!strcmp(o->model, "gpt")) {
        lt_gpt_config c = cli_gpt_config(o);
        n->m = lt_model_gpt(&c);
        n->lm = true;
    } else if (!strcmp(o->model, "mlp") && hw != 28) { /* lt_model_new's MLP assumes 28x28 */
        int64_t sizes[4] = {(int64_t)in_ch * hw * hw, 256, 128, classes};
        n->m = lt_model_mlp(4, sizes);
    } else {
        n->m = lt_model_new(o->model, in_ch, classes);
    }
    lt_tensor **p = NULL;
    int np = n->m ? lt_model_params(n->m, &p, NULL) : -1;
    if (np > 0) {
        if (!strcmp(o->optimizer, "sgd"))
            n->opt = lt_optim_sgd(np, p, o->lr, o->momentum, 0, o->weight_decay, false);
        else if (!strcmp(o->optimizer, "adam"))
            n->opt = lt_optim_adam(np, p, o->lr, 0.9, 0.999, 1e-8, o->weight_decay, false);
        else
            n->opt = lt_optim_adamw(np, p, o->lr, 0.9, 0.999, 1e-8, o->weight_decay, false);
    }
    if (n->opt && n->lm) lt_optim_set_max_grad_norm(n->opt, 1.0); /* nanoGPT's clipping, inside the step */
    if (!n->opt) {
        fprintf(stderr, "lazytensor: --model %s --optimizer %s: %s\n", o->model, o->optimizer,
                lt_error() ? lt_error_message() : "no parameters");
        net_free(n);
        return NULL;
    }
    n->bf16 = !strcmp(o->precision, "bf16");
    int64_t count = 0;
    for (int i = 0; i < np; i++) count += lt_numel(p[i]);
    snprintf(n->desc, sizeof n->desc, "%s, %lld parameters", o->model, (long long)count);
    return n;
}

static void drop_names(cli_net *n) {
    for (int i = 0; i < n->nowned; i++) free(n->owned[i]);
    free(n->owned);
    free(n->names);
    free(n->tensors);
    n->owned = NULL, n->names = NULL, n->tensors = NULL, n->nowned = 0;
}

void net_free(cli_net *n) {
    if (!n) return;
    drop_names(n);
    lt_optim_free(n->opt);
    lt_model_free(n->m);
    free(n);
}

const char *net_describe(const cli_net *n) { return n->desc; }
double net_optim_state_bytes(const cli_net *n) { return n ? (double)lt_optim_state_bytes(n->opt) : 0; }

/* The mean cross entropy of x's logits over targets y, a language model's
 * (B, T, V) over (B, T) as B * T classifications; under autocast in a bf16
 * run, as torch.autocast: forward and loss (the logits cast to float32 for
 * it), not backward. */
static lt_tensor *forward_loss(cli_net *n, lt_tensor *x, lt_tensor *y) {
    if (n->bf16) lt_autocast_begin(LT_BF16);
    lt_tensor *logits = lt_model_forward(n->m, x), *flat = NULL, *yf = NULL;
    if (n->lm && logits) {
        int64_t v = lt_shape(logits)[2], s[2] = {-1, v};
        flat = lt_reshape(logits, 2, s);
        yf = lt_reshape(y, 1, s);
    }
    lt_tensor *loss = lt_cross_entropy(flat ? flat : logits, yf ? yf : y, 0.0);
    if (n->bf16) lt_autocast_end();
    lt_free(logits), lt_free(flat), lt_free(yf);
    return loss;
}

lt_tensor *net_step(cli_net *n, lt_tensor *x, lt_tensor *y, double lr) {
    lt_optim_set_lr(n->opt, lr); /* a runtime scalar: a schedule never recompiles */
    lt_tensor *loss = forward_loss(n, x, y);
    lt_tensor **p;
    int np = lt_model_params(n->m, &p, NULL);
    /* Several ranks: the gradients are averaged inside the same graph (a
     * world of one traces nothing more; --shard-optimizer: the step
     * reduce-scatters them instead); a language model's are then clipped
     * to norm 1 by the step, as nanoGPT's. */
    if (!loss || lt_backward(loss) || lt_dist_average_grads(np, p) || lt_optim_step(n->opt)) {
        lt_free(loss);
        return NULL;
    }
    lt_optim_zero_grad(n->opt); /* nothing holds the gradients: never materialized */
    if (lt_dist_world_size() == 1) return loss;
    /* The loss reported is the global batch's: the mean over the ranks' equal shares. */
    lt_no_grad_begin();
    lt_tensor *global = lt_clone(loss);
    if (global && !lt_all_reduce_(global, LT_REDUCE_MEAN)) lt_free(global), global = NULL;
    lt_no_grad_end();
    lt_free(loss);
    return global;
}

int net_start(cli_net *n) {
    int rc = 0;
    if (lt_dist_world_size() > 1) {
        lt_tensor **st;
        int ns = lt_model_state(n->m, &st, NULL);
        rc = ns < 0 ? -1 : 0;
        lt_no_grad_begin();
        for (int i = 0; i < ns && !rc; i++)
            if (!lt_broadcast_(st[i], 0)) rc = -1;
        lt_no_grad_end();
    }
    /* On one process too: without this sync the weight initialization
     * would run inside step 1's graph and its time, and step 1's graph
     * would differ from every later one. */
    if (!rc) lt_mark_step();
    return rc || lt_error() ? -1 : 0;
}

lt_tensor *net_eval_loss(cli_net *n, lt_tensor *x, lt_tensor *y) {
    lt_model_train(n->m, false);
    lt_no_grad_begin();
    lt_tensor *loss = forward_loss(n, x, y);
    lt_no_grad_end();
    lt_model_train(n->m, true);
    return loss;
}

lt_tensor *net_logits(cli_net *n, lt_tensor *x) {
    lt_model_train(n->m, false);
    lt_no_grad_begin();
    if (n->bf16) lt_autocast_begin(LT_BF16);
    lt_tensor *out = lt_model_forward(n->m, x);
    if (n->bf16) lt_autocast_end();
    lt_no_grad_end();
    lt_model_train(n->m, true);
    return out;
}

int net_state(cli_net *n, const char ***names, lt_tensor ***tensors) {
    drop_names(n);
    lt_tensor **mt;
    const char **mn;
    int nm = lt_model_state(n->m, &mt, &mn), no = lt_optim_state(n->opt, 0, NULL, NULL);
    if (nm < 0 || no < 0) return -1;
    n->names = calloc((size_t)(nm + no) + 1, sizeof *n->names);
    n->tensors = calloc((size_t)(nm + no) + 1, sizeof *n->tensors);
    n->owned = calloc((size_t)no + 1, sizeof *n->owned);
    if (!n->names || !n->tensors || !n->owned) return -1;
    memcpy(n->names, mn, sizeof *mn * (size_t)nm);
    memcpy(n->tensors, mt, sizeof *mt * (size_t)nm);
    if (no && lt_optim_state(n->opt, no, n->names + nm, n->tensors + nm) != no) return -1;
    for (int i = 0; i < no; i++) {
        size_t len = strlen(n->names[nm + i]) + 7;
        if (!(n->owned[i] = malloc(len))) return -1;
        n->nowned = i + 1;
        snprintf(n->owned[i], len, "optim.%s", n->names[nm + i]);
        n->names[nm + i] = n->owned[i];
    }
    *names = n->names;
    *tensors = n->tensors;
    return nm + no;
}

int net_restore(cli_net *n, int nt, char **names, lt_tensor **tensors, int64_t step, bool with_optim) {
    /* split the file's tensors: "optim.*" to the optimizer, "run.*" (the
     * history, checkpoint.c) to no one, the rest to the model */
    const char **on = calloc((size_t)nt + 1, sizeof *on), **mn = calloc((size_t)nt + 1, sizeof *mn);
    lt_tensor **ot = calloc((size_t)nt + 1, sizeof *ot), **mt = calloc((size_t)nt + 1, sizeof *mt);
    int no = 0, nm = 0, rc = -1;
    if (on && mn && ot && mt) {
        for (int i = 0; i < nt; i++) {
            if (!strncmp(names[i], "run.", 4)) continue;
            if (!strncmp(names[i], "optim.", 6)) {
                if (with_optim) on[no] = names[i] + 6, ot[no++] = tensors[i];
            } else {
                mn[nm] = names[i], mt[nm++] = tensors[i];
            }
        }
        rc = lt_model_load_state(n->m, nm, mn, mt, true) < 0 || lt_optim_load_state(n->opt, no, on, ot) ||
                     lt_optim_set_step(n->opt, -1, step)
                 ? -1
                 : 0;
    }
    free(on), free(mn), free(ot), free(mt);
    return rc;
}
