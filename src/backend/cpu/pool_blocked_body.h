/* The per-plane loops of pool_blocked.c, compiled once per instruction set
 * (included through isa_copies.h, ISA_SUF the suffix) and, inside, once per
 * activation type (pool_blocked_rows.h, through blk_typed.h). Not a normal
 * header (no include guard, on purpose). */
#define ROWS "pool_blocked_rows.h"
#include "blk_typed.h"
#undef ROWS

/* [0] float32 activations, [1] bfloat16. */
static const pool_rows CAT3(pool_rows, ISA_SUF, )[2] = {
    {CAT3(plane_fwd, ISA_SUF, _f32), CAT3(plane_bwd, ISA_SUF, _f32)},
    {CAT3(plane_fwd, ISA_SUF, _bf16), CAT3(plane_bwd, ISA_SUF, _bf16)},
};
