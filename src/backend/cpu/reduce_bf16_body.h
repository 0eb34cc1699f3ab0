/* The bfloat16 loops of reduce.c (autocast's bias gradients are sums of
 * bfloat16 activation gradients): SUM/MEAN/MAX/MIN, reduce_body.h's loops
 * with each element widened to float (exact), sums in double rounded once,
 * as the reference does. Compiled once per instruction set (included
 * through isa_copies.h, ISA_SUF the suffix): in the baseline copy alone,
 * the leading-axis sum of a (4096, 1536) bias gradient took three times
 * float32's. Not a normal header (no include guard, on purpose). */
#define FN(x) CAT3(x, _bf16, ISA_SUF)
#define T float
#define E uint16_t
#define LD(v) bf16_to_f32(v)
#define RB_ONLY
#include "reduce_body.h"
#undef RB_ONLY
#undef LD
#undef E
#undef T
#undef FN
