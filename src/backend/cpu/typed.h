/* Instantiates the typed loops of BODY (a header name) for float and
 * double: included once per instruction set, under that ISA's target
 * pragma, with ISA_SUF (the name suffix) defined. In BODY, T is the type,
 * FN(x) a name for this copy and TM(f) libm's f for T (expf or exp). */
#define FN(x) CAT3(x, _f32, ISA_SUF)
#define T float
#define TM(fn) fn##f
#include BODY
#undef FN
#undef T
#undef TM

#define FN(x) CAT3(x, _f64, ISA_SUF)
#define T double
#define TM(fn) fn
#include BODY
#undef FN
#undef T
#undef TM
