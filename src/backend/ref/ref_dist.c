/* ALL_REDUCE and BROADCAST, blocking: copy the operand, then the collective
 * in place on the copy. Every rank runs the same graph in the same order
 * (the graph keys were compared before the run), so the calls match. */
#include "ref.h"

#include "../../dist/dist.h"

void ref_collective(const gnode *y, const ref_arg *in, void *out) {
    memcpy(out, in[0].data, (size_t)y->numel * dtype_size((lt_dtype)y->dtype));
    /* Only a finalized process group fails, and the sync checked that first. */
    int rc = y->op == LT_OP_ALL_REDUCE ? dist_all_reduce(out, y->numel, (lt_dtype)y->dtype, (int)y->ia[0])
                                       : dist_broadcast(out, y->numel, (lt_dtype)y->dtype, (int)y->ia[0]);
    LT_ASSERT(rc == 0);
}
