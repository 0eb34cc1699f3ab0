/* Instantiates the typed loops of BODY (a header name) for float and
 * double: included once per instruction set, under that ISA's target
 * pragma, with ISA_SUF (the name suffix) defined. */
#define FN(x) CAT3(x, _f32, ISA_SUF)
#define T float
#define M_EXP expf
#define M_LOG logf
#define M_POW powf
#define M_TANH tanhf
#define M_SQRT sqrtf
#define M_FABS fabsf
#include BODY
#undef FN
#undef T
#undef M_EXP
#undef M_LOG
#undef M_POW
#undef M_TANH
#undef M_SQRT
#undef M_FABS

#define FN(x) CAT3(x, _f64, ISA_SUF)
#define T double
#define M_EXP exp
#define M_LOG log
#define M_POW pow
#define M_TANH tanh
#define M_SQRT sqrt
#define M_FABS fabs
#include BODY
#undef FN
#undef T
#undef M_EXP
#undef M_LOG
#undef M_POW
#undef M_TANH
#undef M_SQRT
#undef M_FABS
