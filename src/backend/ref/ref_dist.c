/* The collectives, blocking, and SHARD. Every rank runs the same graph in
 * the same order (the graph keys were compared before the run), so the
 * calls match. */
#include "ref.h"

#include "../../dist/dist.h"

void ref_collective(const gnode *y, const ref_arg *in, void *out) {
    memcpy(out, in[0].data, (size_t)y->numel * dtype_size((lt_dtype)y->dtype));
    /* Only a finalized process group fails, and the sync checked that first. */
    int rc = y->op == LT_OP_ALL_REDUCE ? dist_all_reduce(out, y->numel, (lt_dtype)y->dtype, (int)y->ia[0])
                                       : dist_broadcast(out, y->numel, (lt_dtype)y->dtype, (int)y->ia[0]);
    LT_ASSERT(rc == 0);
}

/* REDUCE_SCATTER and ALL_GATHER (ops.def) through a buffer of every
 * rank's chunks: the operand flattened and zero-padded, or this rank's
 * chunk in its place. */
void ref_shard_collective(const gnode *y, const ref_arg *in, void *out) {
    size_t es = dtype_size((lt_dtype)y->dtype);
    int64_t w = y->op == LT_OP_REDUCE_SCATTER ? y->ia[1] : y->ia[0];
    int64_t c = y->op == LT_OP_REDUCE_SCATTER ? y->numel : in[0].numel, n = w * c;
    char *buf = core_calloc((size_t)(n ? n : 1), es);
    LT_ASSERT(buf); /* the reference backend is the debugging path: it has no plan to fail back to */
    int rc;
    if (y->op == LT_OP_REDUCE_SCATTER) {
        memcpy(buf, in[0].data, (size_t)in[0].numel * es);
        rc = dist_reduce_scatter(buf, c, (lt_dtype)y->dtype, (int)y->ia[0]);
        memcpy(out, buf, (size_t)c * es);
    } else {
        memcpy(buf + (size_t)(dist_rank() * c) * es, in[0].data, (size_t)c * es);
        rc = dist_all_gather(buf, c, (lt_dtype)y->dtype);
        memcpy(out, buf, (size_t)y->numel * es);
    }
    core_free(buf);
    LT_ASSERT(rc == 0);
}

void ref_shard(const gnode *y, const ref_arg *in, void *out) {
    size_t es = dtype_size((lt_dtype)y->dtype);
    int64_t first = dist_rank() * y->numel, have = in[0].numel - first;
    have = have < 0 ? 0 : have > y->numel ? y->numel : have;
    if (have) memcpy(out, (const char *)in[0].data + (size_t)first * es, (size_t)have * es);
    memset((char *)out + (size_t)have * es, 0, (size_t)(y->numel - have) * es);
}
