/* Checkpoints: one safetensors file (written to PATH.tmp and renamed by the
 * library) holding
 *   - the model's state under PyTorch's names,
 *   - the optimizer's state under "optim.*",
 *   - the run's history under "run.*": the loss of every step (run.loss, F64,
 *     steps loss_from+1..step) and each evaluation (run.accuracy F64,
 *     run.accuracy_step I64),
 *   - and in the metadata: step, model, optimizer, loss_from,
 * so a resumed run continues the same step count, learning-rate schedule,
 * data order and loss curve, and refuses another model or optimizer. */
#include "net.h"

#include <stdlib.h>
#include <string.h>

/* A 1-D tensor of n values, or NULL when n is 0 (nothing to record). */
static lt_tensor *vec(const void *p, lt_dtype dt, int64_t n) { return n ? lt_from_data(p, dt, 1, &n) : NULL; }

int net_save(cli_net *n, const cli_opts *o, const char *path, const run_stats *st) {
    const char **names;
    lt_tensor **ts;
    int k = net_state(n, &names, &ts), rc = -1; /* collective when the optimizer is sharded */
    if (lt_dist_rank() != 0) return k < 0 ? -1 : 0;  /* rank 0 writes the file */
    int64_t nloss = st->nhist + st->steps, step = st->first_step + st->steps;
    double *loss = malloc(sizeof *loss * (size_t)(nloss + 1));
    const char **an = malloc(sizeof *an * (size_t)(k + 3 + 1));
    lt_tensor **at = malloc(sizeof *at * (size_t)(k + 3 + 1));
    if (k >= 0 && loss && an && at) {
        if (st->nhist) memcpy(loss, st->hist, sizeof *loss * (size_t)st->nhist);
        if (st->steps) memcpy(loss + st->nhist, st->loss, sizeof *loss * (size_t)st->steps);
        memcpy(an, names, sizeof *an * (size_t)k);
        memcpy(at, ts, sizeof *at * (size_t)k);
        lt_tensor *run[3] = {vec(loss, LT_F64, nloss), vec(st->acc, LT_F64, st->nacc),
                             vec(st->acc_step, LT_I64, st->nacc)};
        static const char *const run_names[3] = {"run.loss", "run.accuracy", "run.accuracy_step"};
        int na = k;
        for (int i = 0; i < 3; i++)
            if (run[i]) an[na] = run_names[i], at[na++] = run[i];
        char sbuf[32], fbuf[32];
        snprintf(sbuf, sizeof sbuf, "%lld", (long long)step);
        snprintf(fbuf, sizeof fbuf, "%lld", (long long)st->hist_from);
        const char *keys[5] = {"format", "step", "model", "optimizer", "loss_from"};
        const char *vals[5] = {"lazytensor-checkpoint-2", sbuf, o->model, o->optimizer, fbuf};
        if (!lt_error()) rc = lt_save_safetensors_meta(path, na, an, at, 5, keys, vals);
        for (int i = 0; i < 3; i++) lt_free(run[i]);
    }
    if (rc) fprintf(stderr, "lazytensor: saving %s: %s\n", path, lt_error() ? lt_error_message() : "out of memory");
    free(loss), free(an), free(at);
    return rc;
}

/* Copies a 1-D "run.*" tensor's values into a new array of *n elements. */
static void *take(lt_tensor *t, size_t esize, int64_t *n) {
    *n = lt_ndim(t) == 1 ? lt_numel(t) : 0;
    void *p = malloc(esize * (size_t)(*n + 1));
    if (p && *n && lt_to_host(t, p, esize * (size_t)*n)) *n = 0;
    return p;
}

/* The run's history from the "run.*" tensors; anything inconsistent (an
 * older file, a foreign writer) is dropped, never an error. */
static void load_history(run_stats *st, int nt, char **names, lt_tensor **ts, int64_t loss_from) {
    lt_tensor *loss = NULL, *acc = NULL, *acc_step = NULL;
    for (int i = 0; i < nt; i++) {
        if (!strcmp(names[i], "run.loss") && lt_dtype_of(ts[i]) == LT_F64) loss = ts[i];
        if (!strcmp(names[i], "run.accuracy") && lt_dtype_of(ts[i]) == LT_F64) acc = ts[i];
        if (!strcmp(names[i], "run.accuracy_step") && lt_dtype_of(ts[i]) == LT_I64) acc_step = ts[i];
    }
    st->hist_from = st->first_step;
    if (loss) {
        int64_t nl;
        double *h = take(loss, sizeof *h, &nl);
        if (h && loss_from >= 0 && loss_from + nl == st->first_step) st->hist = h, st->nhist = nl, st->hist_from = loss_from;
        else free(h);
    }
    if (acc && acc_step && lt_numel(acc) == lt_numel(acc_step)) {
        int64_t na, ns;
        st->acc = take(acc, sizeof *st->acc, &na);
        st->acc_step = take(acc_step, sizeof *st->acc_step, &ns);
        st->nacc = st->acc && st->acc_step && na == ns ? (int)na : 0;
    }
    lt_clear_error(); /* a history that could not be read is only not shown */
}

int net_load(cli_net *n, const cli_opts *o, const char *path, run_stats *st) {
    char **names, **keys, **vals;
    lt_tensor **ts;
    int nmeta = 0;
    int nt = lt_load_safetensors_meta(path, &names, &ts, &nmeta, &keys, &vals);
    if (nt < 0) {
        fprintf(stderr, "lazytensor: --resume %s: %s\n", path, lt_error_message());
        return -1;
    }
    int rc = 0;
    bool train = !strcmp(o->cmd, "train"); /* eval reads the model alone */
    int64_t loss_from = -1;
    st->first_step = 0;
    for (int i = 0; i < nmeta; i++) {
        if (!strcmp(keys[i], "step")) st->first_step = strtoll(vals[i], NULL, 10);
        if (!strcmp(keys[i], "loss_from")) loss_from = strtoll(vals[i], NULL, 10);
        if (!strcmp(keys[i], "model") && strcmp(vals[i], o->model)) {
            fprintf(stderr, "lazytensor: --resume %s is a %s checkpoint, not %s (use --model %s)\n", path, vals[i],
                    o->model, vals[i]);
            rc = -2;
        }
        if (train && !strcmp(keys[i], "optimizer") && strcmp(vals[i], o->optimizer)) {
            fprintf(stderr, "lazytensor: --resume %s holds the state of --optimizer %s, not %s (resume with "
                            "--optimizer %s, or start a new run without --resume)\n",
                    path, vals[i], o->optimizer, vals[i]);
            rc = -2;
        }
    }
    if (st->first_step < 0) st->first_step = 0;
    if (!rc && net_restore(n, nt, names, ts, st->first_step, train)) {
        fprintf(stderr, "lazytensor: --resume %s: %s\n", path, lt_error_message());
        rc = -1;
    }
    if (!rc && train) load_history(st, nt, names, ts, loss_from);
    lt_mark_step(); /* the copies become the state's values; the file's tensors can go */
    for (int i = 0; i < nt; i++) free(names[i]), lt_free(ts[i]);
    for (int i = 0; i < nmeta; i++) free(keys[i]), free(vals[i]);
    free(names), free(ts), free(keys), free(vals);
    return rc;
}
