/* Checkpoints: one safetensors file (written to PATH.tmp and renamed by the
 * library) with the model's state under PyTorch's names, the optimizer's
 * moments under "optim.*", and the step in the metadata, so a resumed run
 * continues the same step count, learning-rate schedule and data order. */
#include "net.h"

#include <stdlib.h>
#include <string.h>

int net_save(cli_net *n, const char *model, const char *path, int64_t step) {
    const char **names;
    lt_tensor **ts;
    int k = net_state(n, &names, &ts);
    char sbuf[32];
    snprintf(sbuf, sizeof sbuf, "%lld", (long long)step);
    const char *keys[3] = {"format", "step", "model"}, *vals[3] = {"lazytensor-checkpoint-1", sbuf, model};
    if (k < 0 || lt_save_safetensors_meta(path, k, names, ts, 3, keys, vals)) {
        fprintf(stderr, "lazytensor: saving %s: %s\n", path, lt_error_message());
        return -1;
    }
    return 0;
}

int net_load(cli_net *n, const char *model, const char *path, int64_t *step) {
    char **names, **keys, **vals;
    lt_tensor **ts;
    int nmeta = 0;
    int nt = lt_load_safetensors_meta(path, &names, &ts, &nmeta, &keys, &vals);
    if (nt < 0) {
        fprintf(stderr, "lazytensor: loading %s: %s\n", path, lt_error_message());
        return -1;
    }
    int rc = 0;
    *step = 0;
    for (int i = 0; i < nmeta; i++) {
        if (!strcmp(keys[i], "step")) *step = strtoll(vals[i], NULL, 10);
        if (!strcmp(keys[i], "model") && strcmp(vals[i], model)) {
            fprintf(stderr, "lazytensor: %s is a %s checkpoint, not %s (use --model %s)\n", path, vals[i], model,
                    vals[i]);
            rc = -1;
        }
    }
    if (*step < 0) *step = 0;
    if (!rc && net_restore(n, nt, names, ts, *step)) {
        fprintf(stderr, "lazytensor: restoring %s: %s\n", path, lt_error_message());
        rc = -1;
    }
    lt_mark_step(); /* the copies become the state's values; the file's tensors can go */
    for (int i = 0; i < nt; i++) free(names[i]), lt_free(ts[i]);
    for (int i = 0; i < nmeta; i++) free(keys[i]), free(vals[i]);
    free(names), free(ts), free(keys), free(vals);
    return rc;
}
