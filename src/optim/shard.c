/* ZeRO-1 (lt_dist_set_shard_optimizer): each rank keeps the optimizer
 * state of its 1/N chunk of every parameter (flattened, zero-padded to N
 * chunks: lt_dist_shard). Its step, traced into the same graph as forward
 * and backward, is per parameter
 *   g_chunk = reduce_scatter(grad, MEAN)   in the order of the parameters
 *   (clipping: the total norm from every rank's chunks, one all-reduce)
 *   p_chunk = shard(p); the usual update of p_chunk with the chunk's state
 *   p := all_gather(p_chunk)
 * Each reduce-scatter starts as soon as backward has made its gradient and
 * each all-gather as soon as its chunk is updated (src/backend/cpu/coll.c),
 * as the all-reduces of unsharded data parallelism do. The update is the
 * unsharded one element by element, so the parameters are the same; the
 * padding's state and parameters stay zero. */
#include "optim.h"

#include "../api/nn.h"
#include "../core/core.h"
#include "../dist/dist.h"
#include "../func/func.h"

/* g[0..n) *= the clip coefficient of the gradients' total norm over every rank. */
static int clip(const lt_optim *o, int n, lt_tensor *const *g) {
    lt_tensor *local = nn_total_norm(n, g);
    lt_tensor *sq = local ? lt_mul(local, local) : NULL;
    lt_tensor *total = sq && lt_all_reduce_(sq, LT_REDUCE_SUM) ? lt_sqrt(sq) : NULL;
    int rc = total ? opt_clip_by(n, g, total, o->max_norm) : -1;
    lt_free(local), lt_free(sq), lt_free(total);
    return rc;
}

int opt_shard_step(lt_optim *o) {
    lt_tensor **g = core_calloc((size_t)o->n + 1, sizeof *g), **have = core_calloc((size_t)o->n + 1, sizeof *have);
    if (!g || !have) {
        core_free(g), core_free(have);
        return err_set(LT_ERR_OOM, "lt_optim_step: out of memory"), -1;
    }
    lt_no_grad_begin();
    int ok = 1, ng = 0;
    for (int i = 0; i < o->n && ok; i++) {
        lt_tensor *full = lt_grad(o->params[i].p);
        if (!full) continue; /* as PyTorch: a parameter without a gradient is skipped, its step not counted */
        ok = (g[i] = have[ng++] = lt_reduce_scatter(full, LT_REDUCE_MEAN)) != NULL;
    }
    if (ok && ng && o->max_norm > 0) ok = clip(o, ng, have) == 0;
    for (int i = 0; i < o->n && ok; i++) {
        if (!g[i]) continue;
        opt_param *st = &o->params[i], chunk = *st;
        const opt_group *h = &o->groups[st->group];
        ok = (chunk.p = lt_dist_shard(st->p)) != NULL;
        if (ok && o->kind == OPT_SGD) {
            chunk.step++;
            ok = opt_sgd_update(h, &chunk, g[i]) == 0;
        } else if (ok) {
            ok = opt_adam_update(h, &chunk, g[i], o->kind == OPT_ADAMW) == 0;
        }
        memcpy(st->s, chunk.s, sizeof st->s); /* state made on the way is the chunk's */
        st->step = chunk.step;
        ok = ok && lt_all_gather_(st->p, chunk.p) != NULL;
        lt_free(chunk.p);
    }
    lt_no_grad_end();
    for (int i = 0; i < o->n; i++) lt_free(g[i]);
    core_free(g), core_free(have);
    return ok ? 0 : -1;
}

int opt_shard_gather(lt_optim *o) {
    for (int i = 0; i < o->nwhole; i++) lt_free(o->whole[i]);
    core_free(o->whole);
    o->nwhole = 0;
    int total = 0;
    for (int i = 0; i < o->n; i++)
        for (int s = 0; s < OPT_NSTATE; s++) total += o->params[i].s[s] != NULL;
    if (!(o->whole = core_calloc((size_t)total + 1, sizeof *o->whole))) return -1;
    lt_no_grad_begin();
    int ok = 1;
    for (int i = 0; i < o->n && ok; i++)
        for (int s = 0; s < OPT_NSTATE && ok; s++) {
            lt_tensor *p = o->params[i].p, *chunk = o->params[i].s[s];
            if (!chunk) continue;
            lt_tensor *t = func_unscope(lt_zeros(lt_dtype_of(p), lt_ndim(p), lt_shape(p)));
            o->whole[o->nwhole++] = t;
            ok = t && lt_all_gather_(t, chunk) != NULL;
        }
    lt_no_grad_end();
    if (ok) lt_mark_step(); /* every rank runs the gathers now; rank 0 alone may write them */
    return ok && !lt_error() ? 0 : -1;
}
