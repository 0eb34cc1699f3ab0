/* Allocation-failure sweep (DESIGN 9) over checkpoints and training: fail
 * the k-th host allocation of a program that runs forward, autograd
 * backward (cross-entropy, conv, pooling: the reference kernels with
 * scratch), an optimizer step, a sync, a checkpoint save with metadata and
 * a load; every call must fail with LT_ERR_OOM or work, the library must
 * stay usable, a retry must succeed, and under the sanitizer build nothing
 * leaks. */
#include "alloc_sweep.h"
#include "harness.h"

#include <unistd.h>

static char path[128];

/* 0: ran to the end with the right values; 1: stopped at an OOM error;
 * -1: a wrong answer or an error of another kind. */
static int program(int step) {
    int rc = 0;
    int64_t xs[4] = {2, 2, 4, 4}, ws[4] = {3, 2, 3, 3}, k2[2] = {2, 2}, ts[1] = {2};
    float xv[64], wv[54];
    for (int i = 0; i < 64; i++) xv[i] = (float)((i * 7 + step) % 11) / 11.0f - 0.5f;
    for (int i = 0; i < 54; i++) wv[i] = (float)((i * 5) % 13) / 13.0f - 0.5f;
    int64_t tv[2] = {1, 2};
    lt_tensor *x = lt_from_data(xv, LT_F32, 4, xs), *w = lt_from_data(wv, LT_F32, 4, ws);
    lt_tensor *tgt = lt_from_data(tv, LT_I64, 1, ts);
    lt_set_requires_grad(w, true);
    lt_tensor *y = lt_conv2d(x, w, NULL, NULL, (int64_t[]){1, 1}, NULL, 1); /* (2, 3, 4, 4) */
    lt_tensor *p = lt_avg_pool2d(y, k2, NULL, NULL);                        /* (2, 3, 2, 2) */
    lt_tensor *s = lt_sum(p, 2, (int[]){2, 3}, false);                      /* (2, 3) */
    lt_tensor *loss = lt_cross_entropy(s, tgt, 0.1);
    lt_optim *o = lt_optim_sgd(1, &w, 0.1, 0.9, 0, 0, false);
    if (loss && o && lt_backward(loss) == 0 && lt_optim_step(o) == 0) {
        lt_mark_step();
        float before[54], after[54];
        const char *names[2];
        lt_tensor *state[2];
        int ns = lt_optim_state(o, 1, names, state);
        const char *mk[1] = {"step"}, *mv[1] = {"1"};
        if (ns == 1 && lt_to_host(w, before, sizeof before) == 0) {
            const char *cn[2] = {"w", names[0]};
            lt_tensor *ct[2] = {w, state[0]};
            if (lt_save_safetensors_meta(path, 2, cn, ct, 1, mk, mv) == 0) {
                char **ln = NULL, **lk = NULL, **lv = NULL;
                lt_tensor **lt = NULL;
                int nmeta = 0;
                int n = lt_load_safetensors_meta(path, &ln, &lt, &nmeta, &lk, &lv);
                if (n >= 0) {
                    if (n != 2 || nmeta != 1 || strcmp(ln[0], "w") || strcmp(lk[0], "step") || strcmp(lv[0], "1"))
                        rc = -1;
                    else if (lt_to_host(lt[0], after, sizeof after) == 0)
                        rc = memcmp(before, after, sizeof before) ? -1 : 0;
                    else
                        rc = 1;
                    h_free_loaded(n, ln, lt, nmeta, lk, lv);
                } else {
                    rc = 1;
                }
            } else {
                rc = 1;
            }
        } else {
            rc = 1;
        }
    } else {
        rc = 1;
    }
    if (lt_error() && lt_error() != LT_ERR_OOM) rc = -1;
    if (rc == 0 && lt_error()) rc = 1;
    if (rc == 1 && !lt_error()) rc = -1; /* a failure must say why */
    lt_optim_free(o);
    lt_free(loss);
    lt_free(s);
    lt_free(p);
    lt_free(y);
    lt_free(tgt);
    lt_free(w);
    lt_free(x);
    return rc;
}

TEST(sweep) {
    int64_t allocs;
    int failures_seen = h_alloc_sweep(program, 1, &allocs);
    printf("alloc_fail_io: %lld allocations per program, %d injected failures reported\n", (long long)allocs,
           failures_seen);
    CHECK(failures_seen > 0);
}

int main(void) {
    snprintf(path, sizeof path, "/tmp/lt_alloc_fail_io_%d.safetensors", (int)getpid());
    RUN(sweep);
    remove(path);
    return h_report();
}
