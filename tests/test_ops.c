/* Every op of the public API against values computed here with plain C
 * loops: broadcasting, size-1 and zero-size dims, every dtype an op accepts,
 * and PyTorch's type promotion. The expected dtype of each result comes from
 * this file's own promotion table, not from the library's. */
#include "harness.h"

#include <stdint.h>

#define NDT 7
static const lt_dtype ALL[NDT] = {LT_F32, LT_F64, LT_I32, LT_I64, LT_BOOL, LT_BF16, LT_U8};

static int is_fl(lt_dtype d) { return d == LT_F32 || d == LT_F64 || d == LT_BF16; }

/* bfloat16 written out here, independently of the library: the top 16
 * bits of the float, rounded to nearest even; NaN stays NaN. */
static uint16_t to_bf16(double x) {
    float f = (float)x;
    uint32_t u;
    memcpy(&u, &f, 4);
    if (f != f) return (uint16_t)(u >> 16 | 0x40);
    uint32_t low = u & 0xffff, up = u >> 16;
    if (low > 0x8000 || (low == 0x8000 && (up & 1))) up++;
    return (uint16_t)up;
}
static double from_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static int fl_width(lt_dtype d) { return d == LT_BF16 ? 2 : d == LT_F32 ? 4 : 8; }
static int int_width(lt_dtype d) { return d == LT_U8 ? 1 : d == LT_I32 ? 4 : 8; }
static int cat_of(lt_dtype d) { return d == LT_BOOL ? 0 : is_fl(d) ? 2 : 1; }

/* PyTorch's result_type for two tensors of the same dim-category. */
static lt_dtype promote(lt_dtype a, lt_dtype b) {
    if (a == b) return a;
    if (cat_of(a) != cat_of(b)) return cat_of(a) > cat_of(b) ? a : b;
    if (cat_of(a) == 2) return fl_width(a) > fl_width(b) ? a : b;
    return int_width(a) > int_width(b) ? a : b; /* uint8 < int32 < int64 */
}
/* With PyTorch's dimension categories: a 0-d operand against one with dims
 * may raise the category, never the width. */
static lt_dtype promote_nd(lt_dtype a, int na, lt_dtype b, int nb) {
    if ((na == 0) == (nb == 0)) return promote(a, b);
    lt_dtype d = na ? a : b, z = na ? b : a;
    return cat_of(z) > cat_of(d) ? promote(d, z) : d;
}
/* A C double is a Python float: ints and bools go to float32. */
static lt_dtype with_scalar(lt_dtype a) { return is_fl(a) ? a : LT_F32; }

/* What a value becomes when stored in dtype d (float -> int truncates). */
static double round_to(lt_dtype d, double x) {
    switch (d) {
    case LT_F32: return (double)(float)x;
    case LT_F64: return x;
    case LT_I32: return (double)(int32_t)(int64_t)x;
    case LT_I64: return (double)(int64_t)x;
    case LT_BOOL: return x != 0;
    case LT_BF16: return from_bf16(to_bf16(x));
    case LT_U8: return (double)(uint8_t)(int64_t)x; /* truncated, then modulo 256 (small x here) */
    }
    return x;
}

/* A tensor of any dtype from doubles (converted as round_to does). */
static lt_tensor *mk(lt_dtype d, int nd, const int64_t *shape, const double *v) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    unsigned char *raw = malloc((size_t)(n ? n : 1) * 8);
    for (int64_t i = 0; i < n; i++) {
        switch (d) {
        case LT_F32: ((float *)raw)[i] = (float)v[i]; break;
        case LT_F64: ((double *)raw)[i] = v[i]; break;
        case LT_I32: ((int32_t *)raw)[i] = (int32_t)v[i]; break;
        case LT_I64: ((int64_t *)raw)[i] = (int64_t)v[i]; break;
        case LT_BOOL: raw[i] = v[i] != 0; break;
        case LT_BF16: ((uint16_t *)raw)[i] = to_bf16(v[i]); break;
        case LT_U8: raw[i] = (uint8_t)(int64_t)v[i]; break;
        }
    }
    lt_tensor *t = lt_from_data(raw, d, nd, shape);
    free(raw);
    return t;
}

static int64_t numel_of(int nd, const int64_t *s) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= s[i];
    return n;
}

/* Linear index into a contiguous input of shape (ni, is) for output element
 * `i` of shape (no, os), with numpy broadcasting. */
static int64_t bcast_index(int no, const int64_t *os, int64_t i, int ni, const int64_t *is) {
    int64_t idx[LT_MAX_DIMS];
    for (int d = no - 1; d >= 0; d--) {
        idx[d] = os[d] ? i % os[d] : 0;
        i = os[d] ? i / os[d] : 0;
    }
    int64_t lin = 0;
    for (int d = 0; d < ni; d++) {
        int od = d + (no - ni);
        lin = lin * is[d] + (is[d] == 1 ? 0 : idx[od]);
    }
    return lin;
}

static int bshape(int na, const int64_t *a, int nb, const int64_t *b, int64_t *out) {
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int ia = i - (n - na), ib = i - (n - nb);
        int64_t x = ia >= 0 ? a[ia] : 1, y = ib >= 0 ? b[ib] : 1;
        out[i] = x == 1 ? y : x;
    }
    return n;
}

/* Checks dtype, shape and values; tol as in h_expect. */
static void expect_full(const char *what, lt_tensor *t, lt_dtype dt, int nd, const int64_t *shape, const double *e,
                        double tol) {
    if (!t) {
        h_fail(__FILE__, __LINE__, "%s: NULL result: %s", what, lt_error_message());
        lt_clear_error();
        return;
    }
    CHECK_MSG(lt_dtype_of(t) == dt, "%s: dtype %s, expected %s", what, lt_dtype_name(lt_dtype_of(t)),
              lt_dtype_name(dt));
    CHECK_MSG(lt_ndim(t) == nd && !memcmp(lt_shape(t), shape, (size_t)nd * 8), "%s: shape mismatch", what);
    int64_t n = numel_of(nd, shape);
    if (lt_numel(t) != n) return;
    double *v = h_read(t);
    if (!v) {
        h_fail(__FILE__, __LINE__, "%s: read failed: %s", what, lt_error_message());
        lt_clear_error();
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        double a = v[i], b = e[i];
        int ok = (isnan(a) && isnan(b)) || a == b || (tol > 0 && fabs(a - b) <= tol * (1 + fabs(b)));
        if (!ok) {
            h_fail(__FILE__, __LINE__, "%s: element %lld: got %.17g, expected %.17g", what, (long long)i, a, b);
            break;
        }
    }
    free(v);
}

/* ---- binary elementwise ------------------------------------------------- */

typedef lt_tensor *(*bin_fn)(lt_tensor *, lt_tensor *);
enum { B_ADD, B_SUB, B_MUL, B_DIV, B_MAX, B_MIN, B_POW, B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE, NBIN };
static const struct {
    const char *name;
    bin_fn f, f_;
} BIN[NBIN] = {
    {"add", lt_add, lt_add_},         {"sub", lt_sub, lt_sub_},         {"mul", lt_mul, lt_mul_},
    {"div", lt_div, lt_div_},         {"maximum", lt_maximum, lt_maximum_}, {"minimum", lt_minimum, lt_minimum_},
    {"pow", lt_pow, lt_pow_},         {"eq", lt_eq, NULL},              {"ne", lt_ne, NULL},
    {"lt", lt_lt, NULL},              {"le", lt_le, NULL},              {"gt", lt_gt, NULL},
    {"ge", lt_ge, NULL},
};
static int is_cmp(int op) { return op >= B_EQ; }

static lt_dtype bin_compute(int op, lt_dtype a, int na, lt_dtype b, int nb) {
    lt_dtype p = promote_nd(a, na, b, nb);
    if (op == B_DIV && !is_fl(p)) return LT_F32; /* true division */
    return p;
}

/* One element in the compute dtype, then stored in the result dtype. */
static double bin_ref(int op, lt_dtype cd, double x, double y) {
    if (is_fl(cd)) {
        x = round_to(cd, x), y = round_to(cd, y);
        switch (op) {
        case B_ADD: return x + y;
        case B_SUB: return x - y;
        case B_MUL: return x * y;
        case B_DIV: return x / y;
        case B_MAX: return isnan(x) || isnan(y) ? NAN : x > y ? x : y;
        case B_MIN: return isnan(x) || isnan(y) ? NAN : x < y ? x : y;
        case B_POW: return pow(x, y);
        }
    } else {
        int64_t a = (int64_t)x, b = (int64_t)y, r = 1;
        switch (op) {
        case B_ADD: return cd == LT_BOOL ? (a || b) : (double)(a + b);
        case B_SUB: return (double)(a - b);
        case B_MUL: return (double)(a * b);
        case B_MAX: return (double)(a > b ? a : b);
        case B_MIN: return (double)(a < b ? a : b);
        case B_POW:
            for (int64_t k = 0; k < b; k++) r *= a;
            return (double)r;
        }
    }
    switch (op) {
    case B_EQ: return x == y;
    case B_NE: return x != y;
    case B_LT: return x < y;
    case B_LE: return x <= y;
    case B_GT: return x > y;
    case B_GE: return x >= y;
    }
    return NAN;
}

/* Inputs: fractional values for floats (truncated for ints), non-negative
 * exponents for pow (integer negative powers are an error in PyTorch). */
static const double AV[12] = {-2.5, -1, 0, 0.5, 2, 3.25, 1, -3, 4.75, 0, -0.5, 2};
static const double BV[12] = {2, -1.5, 0, 3, 1, -2, 0.25, 2, -4, 1.5, 2, 0};
static const double PV[12] = {2, 1, 0, 3, 1, 2, 0, 2, 1, 3, 2, 0};

static void run_binary_case(int op, lt_dtype da, lt_dtype db, int na, const int64_t *sa, int nb, const int64_t *sb) {
    char what[128];
    snprintf(what, sizeof what, "%s(%s%dd, %s%dd)", BIN[op].name, lt_dtype_name(da), na, lt_dtype_name(db), nb);
    lt_tensor *a = mk(da, na, sa, AV), *b = mk(db, nb, sb, op == B_POW ? PV : BV);
    lt_tensor *r = BIN[op].f(a, b);
    if (op == B_SUB && (da == LT_BOOL || db == LT_BOOL)) { /* PyTorch: subtracting a bool is an error */
        CHECK_MSG(!r && lt_error() == LT_ERR_DTYPE, "%s: expected a dtype error", what);
        lt_clear_error();
    } else {
        lt_dtype cd = bin_compute(op, da, na, db, nb), od = is_cmp(op) ? LT_BOOL : cd;
        int64_t os[LT_MAX_DIMS];
        int no = bshape(na, sa, nb, sb, os);
        int64_t n = numel_of(no, os);
        double *e = malloc(sizeof(double) * (size_t)(n + 1));
        for (int64_t i = 0; i < n; i++) {
            double x = round_to(da, AV[bcast_index(no, os, i, na, sa)]);
            double y = round_to(db, (op == B_POW ? PV : BV)[bcast_index(no, os, i, nb, sb)]);
            e[i] = round_to(od, bin_ref(op, cd, x, y));
        }
        /* pow may use powf on float32 (one ulp); everything else is exact. */
        expect_full(what, r, od, no, os, e, op == B_POW ? 1e-6 : 0);
        free(e);
    }
    lt_free(r);
    lt_free(a);
    lt_free(b);
}

TEST(binary_all_dtypes_and_broadcasts) {
    /* shape pairs: equal, row broadcast, outer product of size-1 dims,
     * 0-d with 2-d, zero-size dim */
    static const struct {
        int na, nb;
        int64_t sa[3], sb[3];
    } S[] = {
        {2, 2, {2, 3}, {2, 3}}, {2, 1, {2, 3}, {3}}, {2, 2, {3, 1}, {1, 4}},
        {0, 2, {0}, {2, 3}},    {2, 1, {0, 3}, {3}}, {3, 2, {2, 1, 3}, {2, 1}},
    };
    for (int op = 0; op < NBIN; op++)
        for (int i = 0; i < NDT; i++)
            for (int j = 0; j < NDT; j++) {
                if (op == B_POW && (ALL[i] == LT_BOOL || ALL[j] == LT_BOOL)) continue;
                for (size_t s = 0; s < sizeof S / sizeof S[0]; s++)
                    run_binary_case(op, ALL[i], ALL[j], S[s].na, S[s].sa, S[s].nb, S[s].sb);
            }
}

/* The promotion rules the brief names, spelled out. */
TEST(promotion_table) {
    int64_t s[1] = {2};
    double v[2] = {1, 2};
    struct {
        lt_dtype a, b;
        bin_fn f;
        lt_dtype want;
    } T[] = {
        {LT_I32, LT_I64, lt_add, LT_I64}, {LT_F32, LT_F64, lt_add, LT_F64},  {LT_I32, LT_I32, lt_div, LT_F32},
        {LT_I64, LT_I64, lt_div, LT_F32}, {LT_BOOL, LT_I32, lt_add, LT_I32}, {LT_BOOL, LT_F32, lt_mul, LT_F32},
        {LT_I64, LT_F32, lt_add, LT_F32}, {LT_I32, LT_F64, lt_sub, LT_F64},  {LT_F32, LT_I64, lt_lt, LT_BOOL},
        {LT_F64, LT_F64, lt_eq, LT_BOOL}, {LT_BOOL, LT_BOOL, lt_add, LT_BOOL},
        /* bfloat16: with a wider float gives the wider; with an integer or bool stays bfloat16 */
        {LT_BF16, LT_F32, lt_add, LT_F32}, {LT_F64, LT_BF16, lt_mul, LT_F64}, {LT_BF16, LT_I64, lt_add, LT_BF16},
        {LT_I32, LT_BF16, lt_div, LT_BF16}, {LT_BOOL, LT_BF16, lt_add, LT_BF16}, {LT_BF16, LT_BF16, lt_lt, LT_BOOL},
        /* uint8: below int32 and int64, above bool; with a float gives the float */
        {LT_U8, LT_I64, lt_add, LT_I64}, {LT_I32, LT_U8, lt_mul, LT_I32}, {LT_U8, LT_BOOL, lt_add, LT_U8},
        {LT_BOOL, LT_U8, lt_mul, LT_U8}, {LT_U8, LT_F32, lt_add, LT_F32}, {LT_BF16, LT_U8, lt_sub, LT_BF16},
        {LT_U8, LT_U8, lt_div, LT_F32}, {LT_U8, LT_I32, lt_lt, LT_BOOL}, {LT_U8, LT_U8, lt_add, LT_U8},
    };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        lt_tensor *a = mk(T[i].a, 1, s, v), *b = mk(T[i].b, 1, s, v);
        lt_tensor *r = T[i].f(a, b);
        CHECK_MSG(r && lt_dtype_of(r) == T[i].want, "case %zu: got %s, want %s", i, lt_dtype_name(lt_dtype_of(r)),
                  lt_dtype_name(T[i].want));
        lt_free(r);
        lt_free(a);
        lt_free(b);
    }
    /* int tensor with a double scalar -> float32; sum of ints -> int64 */
    lt_tensor *i = mk(LT_I32, 1, s, v);
    lt_tensor *r1 = lt_add_scalar(i, 3), *r2 = lt_sum(i, 0, NULL, false), *r3 = lt_mul_scalar(i, 0.5);
    CHECK(r1 && lt_dtype_of(r1) == LT_F32);
    CHECK(r2 && lt_dtype_of(r2) == LT_I64);
    EXPECT_VALUES(r1, 0, 4, 5);
    EXPECT_VALUES(r2, 0, 3);
    EXPECT_VALUES(r3, 0, 0.5, 1);
    lt_free(r1);
    lt_free(r2);
    lt_free(r3);
    lt_free(i);
}

/* Special float values through the binary ops: NaN propagation of maximum
 * and minimum, infinities, division by zero. */
TEST(binary_special_values) {
    int64_t s[1] = {5};
    double av[5] = {NAN, 1, INFINITY, -1, 0}, bv[5] = {1, NAN, 2, 0, 0};
    lt_tensor *a = mk(LT_F64, 1, s, av), *b = mk(LT_F64, 1, s, bv);
    lt_tensor *mx = lt_maximum(a, b), *mn = lt_minimum(a, b), *dv = lt_div(a, b), *eq = lt_eq(a, a);
    EXPECT_VALUES(mx, 0, NAN, NAN, INFINITY, 0, 0);
    EXPECT_VALUES(mn, 0, NAN, NAN, 2, -1, 0);
    EXPECT_VALUES(dv, 0, NAN, NAN, INFINITY, -INFINITY, NAN);
    EXPECT_VALUES(eq, 0, 0, 1, 1, 1, 1);
    lt_free(mx);
    lt_free(mn);
    lt_free(dv);
    lt_free(eq);
    lt_free(a);
    lt_free(b);
    /* int / int by zero is a float division */
    int64_t s2[1] = {3};
    double x[3] = {1, -1, 0}, z[3] = {0, 0, 0};
    lt_tensor *i = mk(LT_I32, 1, s2, x), *zero = mk(LT_I32, 1, s2, z);
    lt_tensor *q = lt_div(i, zero);
    EXPECT_VALUES(q, 0, INFINITY, -INFINITY, NAN);
    lt_free(q);
    lt_free(i);
    lt_free(zero);
}

/* ---- unary elementwise ---------------------------------------------------- */

typedef lt_tensor *(*un_fn)(lt_tensor *);
enum { U_NEG, U_EXP, U_LOG, U_SQRT, U_RSQRT, U_ABS, U_RELU, U_TANH, U_SIGMOID, NUN };
static const struct {
    const char *name;
    un_fn f, f_;
    int float_only; /* integer input computes in float32 */
} UN[NUN] = {
    {"neg", lt_neg, lt_neg_, 0},       {"exp", lt_exp, lt_exp_, 1},   {"log", lt_log, lt_log_, 1},
    {"sqrt", lt_sqrt, lt_sqrt_, 1},    {"rsqrt", lt_rsqrt, lt_rsqrt_, 1}, {"abs", lt_abs, lt_abs_, 0},
    {"relu", lt_relu, lt_relu_, 0},    {"tanh", lt_tanh, lt_tanh_, 1}, {"sigmoid", lt_sigmoid, lt_sigmoid_, 1},
};

static double un_ref(int op, double x) {
    switch (op) {
    case U_NEG: return -x;
    case U_EXP: return exp(x);
    case U_LOG: return log(x);
    case U_SQRT: return sqrt(x);
    case U_RSQRT: return 1 / sqrt(x);
    case U_ABS: return fabs(x);
    case U_RELU: return x > 0 ? x : 0;
    case U_TANH: return tanh(x);
    case U_SIGMOID: return 1 / (1 + exp(-x));
    }
    return NAN;
}

TEST(unary_all_dtypes) {
    static const double v[8] = {-2.5, -1, 0, 0.5, 1, 2, 3.75, 10};
    static const int64_t shapes[3][2] = {{2, 4}, {8, 1}, {0, 4}};
    for (int op = 0; op < NUN; op++)
        for (int i = 0; i < NDT; i++) {
            lt_dtype d = ALL[i];
            if (d == LT_BOOL && !UN[op].float_only) continue; /* neg(bool) is an error; abs/relu(bool) unspecified */
            for (int s = 0; s < 3; s++) {
                char what[96];
                snprintf(what, sizeof what, "%s(%s, shape %d)", UN[op].name, lt_dtype_name(d), s);
                lt_tensor *a = mk(d, 2, shapes[s], v);
                lt_tensor *r = UN[op].f(a);
                lt_dtype od = UN[op].float_only && !is_fl(d) ? LT_F32 : d;
                int64_t n = numel_of(2, shapes[s]);
                double e[8];
                for (int64_t k = 0; k < n; k++) e[k] = round_to(od, un_ref(op, round_to(d, v[k])));
                /* transcendental functions may differ by an ulp between libms */
                expect_full(what, r, od, 2, shapes[s], e, UN[op].float_only ? 1e-6 : 0);
                lt_free(r);
                lt_free(a);
            }
        }
    /* NaN passes through relu and abs */
    int64_t s1[1] = {2};
    double nv[2] = {NAN, -0.0};
    lt_tensor *a = mk(LT_F32, 1, s1, nv), *r = lt_relu(a), *b = lt_abs(a);
    EXPECT_VALUES(r, 0, NAN, 0);
    EXPECT_VALUES(b, 0, NAN, 0);
    lt_free(r);
    lt_free(b);
    lt_free(a);
}

/* ---- scalar ops and clamp ---------------------------------------------------- */

TEST(scalar_ops_all_dtypes) {
    static const double v[6] = {-2.5, -1, 0, 0.5, 2, 3.25};
    int64_t s[2] = {2, 3};
    const double scal[3] = {2.5, -3, 0.1};
    for (int i = 0; i < NDT; i++) {
        lt_dtype d = ALL[i], od = with_scalar(d);
        for (int k = 0; k < 3; k++) {
            double sc = scal[k], e1[6], e2[6], e3[6];
            for (int j = 0; j < 6; j++) {
                double x = round_to(d, v[j]);
                e1[j] = round_to(od, round_to(od, x) + sc);
                e2[j] = round_to(od, round_to(od, x) * sc);
                e3[j] = round_to(od, pow(round_to(od, x), 2.0));
            }
            lt_tensor *a = mk(d, 2, s, v);
            lt_tensor *r1 = lt_add_scalar(a, sc), *r2 = lt_mul_scalar(a, sc), *r3 = lt_pow_scalar(a, 2.0);
            expect_full("add_scalar", r1, od, 2, s, e1, 0);
            expect_full("mul_scalar", r2, od, 2, s, e2, 0);
            expect_full("pow_scalar", r3, od, 2, s, e3, 1e-6);
            lt_free(r1);
            lt_free(r2);
            lt_free(r3);
            lt_free(a);
        }
    }
    /* fractional exponent, special exponents 0 and 1 (baked, still right) */
    int64_t s3[1] = {3};
    double x[3] = {4, 0.25, 9};
    lt_tensor *a = mk(LT_F64, 1, s3, x);
    lt_tensor *p5 = lt_pow_scalar(a, 0.5), *p0 = lt_pow_scalar(a, 0), *p1 = lt_pow_scalar(a, 1), *m0 = lt_mul_scalar(a, 0),
              *a0 = lt_add_scalar(a, 0), *m1 = lt_mul_scalar(a, -1);
    EXPECT_VALUES(p5, 0, 2, 0.5, 3);
    EXPECT_VALUES(p0, 0, 1, 1, 1);
    EXPECT_VALUES(p1, 0, 4, 0.25, 9);
    EXPECT_VALUES(m0, 0, 0, 0, 0);
    EXPECT_VALUES(a0, 0, 4, 0.25, 9);
    EXPECT_VALUES(m1, 0, -4, -0.25, -9);
    lt_free(p5);
    lt_free(p0);
    lt_free(p1);
    lt_free(m0);
    lt_free(a0);
    lt_free(m1);
    lt_free(a);
}

TEST(clamp_all_dtypes) {
    static const double v[6] = {-2.5, -1, 0, 0.5, 2, 3.25};
    int64_t s[1] = {6};
    const double lo[3] = {-1, -INFINITY, 0.25}, hi[3] = {2, 1, INFINITY};
    for (int i = 0; i < NDT; i++) {
        lt_dtype d = ALL[i], od = with_scalar(d);
        for (int k = 0; k < 3; k++) {
            double e[6];
            for (int j = 0; j < 6; j++) {
                double x = round_to(od, round_to(d, v[j]));
                if (x < lo[k]) x = lo[k];
                if (x > hi[k]) x = hi[k];
                e[j] = round_to(od, x);
            }
            lt_tensor *a = mk(d, 1, s, v), *r = lt_clamp(a, lo[k], hi[k]);
            expect_full("clamp", r, od, 1, s, e, 0);
            lt_free(r);
            lt_free(a);
        }
    }
    double nv[2] = {NAN, 5};
    int64_t s2[1] = {2};
    lt_tensor *a = mk(LT_F32, 1, s2, nv), *r = lt_clamp(a, 0, 1);
    EXPECT_VALUES(r, 0, NAN, 1);
    lt_free(r);
    lt_free(a);
}

/* ---- cast -------------------------------------------------------------------- */

TEST(cast_all_pairs) {
    static const double v[8] = {-2.75, -1, 0, 0.5, 1, 2.5, 100, -0.25};
    int64_t s[2] = {2, 4};
    for (int i = 0; i < NDT; i++)
        for (int j = 0; j < NDT; j++) {
            lt_dtype from = ALL[i], to = ALL[j];
            double e[8];
            for (int k = 0; k < 8; k++) e[k] = round_to(to, round_to(from, v[k]));
            lt_tensor *a = mk(from, 2, s, v), *r = lt_to_dtype(a, to);
            char what[64];
            snprintf(what, sizeof what, "cast %s->%s", lt_dtype_name(from), lt_dtype_name(to));
            expect_full(what, r, to, 2, s, e, 0);
            /* always a new value: mutating the result leaves the source alone */
            if (r && to != LT_BOOL) {
                lt_zero_(r);
                double *back = h_read(a);
                CHECK_MSG(back && back[0] == round_to(from, v[0]), "%s: source changed", what);
                free(back);
            }
            lt_free(r);
            lt_free(a);
        }
    /* zero-size cast */
    int64_t z[2] = {0, 3};
    lt_tensor *a = lt_zeros(LT_F32, 2, z), *r = lt_to_dtype(a, LT_I64);
    expect_full("cast empty", r, LT_I64, 2, z, NULL, 0);
    lt_free(r);
    lt_free(a);
}

/* float32 -> bfloat16 bit by bit: ties to even (both directions), carries
 * into the exponent, overflow to inf, signed zero, NaN kept a NaN, and
 * float64 going through float32 (as PyTorch converts); then back. */
TEST(bf16_rounding) {
    static const uint32_t in[] = {0x3f808000, 0x3f818000, 0x3f808001, 0x3f80ffff, 0x3fffffff, 0x7f7fffff, 0x80000000,
                                  0x7fc00000, 0xff800001, 0x00010000, 0xbf7f8000};
    static const uint16_t want[] = {0x3f80, 0x3f82, 0x3f81, 0x3f81, 0x4000, 0x7f80, 0x8000,
                                    0x7fc0, 0xffc0, 0x0001, 0xbf80};
    enum { N = sizeof in / sizeof in[0] };
    int64_t s[1] = {N};
    lt_tensor *a = lt_from_data(in, LT_F32, 1, s), *h = lt_to_dtype(a, LT_BF16);
    uint16_t got[N] = {0};
    CHECK(h && lt_dtype_of(h) == LT_BF16 && lt_to_host(h, got, sizeof got) == 0);
    for (int i = 0; i < N; i++) CHECK_MSG(got[i] == want[i], "element %d: %#x -> %#x, want %#x", i, in[i], got[i], want[i]);
    lt_tensor *b = lt_to_dtype(h, LT_F32);
    uint32_t back[N] = {0};
    CHECK(b && lt_to_host(b, back, sizeof back) == 0);
    for (int i = 0; i < N; i++) CHECK_MSG(back[i] == (uint32_t)want[i] << 16 || (i == 8 && back[i] == 0xffc00000u),
                                          "element %d back: %#x", i, back[i]);
    /* 1 + 2^-8 + 2^-30 in double: float32 rounds it to the tie 1 + 2^-8, which goes to even (1) */
    double d = 1 + 0x1p-8 + 0x1p-30;
    int64_t one[1] = {1};
    lt_tensor *c = lt_from_data(&d, LT_F64, 1, one), *ch = lt_to_dtype(c, LT_BF16);
    CHECK(ch && lt_item(ch) == 1.0);
    lt_free(a), lt_free(h), lt_free(b), lt_free(c), lt_free(ch);
}

/* ---- lerp, where, addcmul, addcdiv ----------------------------------------------- */

TEST(lerp_values) {
    int64_t sa[2] = {2, 3}, sb[1] = {3};
    double av[6] = {0, 1, 2, -3, 4, 10}, bv[3] = {10, -1, 2};
    const double w[4] = {0.3, 0.7, 0, 1};
    for (int di = 0; di < 2; di++) {
        lt_dtype d = ALL[di];
        for (int k = 0; k < 4; k++) {
            double e[6];
            for (int j = 0; j < 6; j++) {
                double x = round_to(d, av[j]), y = round_to(d, bv[j % 3]);
                e[j] = round_to(d, x + w[k] * (y - x));
            }
            lt_tensor *a = mk(d, 2, sa, av), *b = mk(d, 1, sb, bv), *r = lt_lerp(a, b, w[k]);
            expect_full("lerp", r, d, 2, sa, e, d == LT_F32 ? 1e-6 : 1e-14);
            lt_free(r);
            lt_free(a);
            lt_free(b);
        }
    }
}

TEST(where_values) {
    int64_t sc[2] = {2, 1}, sa[1] = {3}, sb[2] = {2, 3};
    double cv[2] = {1, 0}, av[3] = {1, 2, 3}, bv[6] = {-1.5, -2, -3, -4, -5, -6.5};
    for (int i = 0; i < NDT; i++)
        for (int j = 0; j < NDT; j++) {
            lt_dtype od = promote(ALL[i], ALL[j]);
            double e[6];
            for (int k = 0; k < 6; k++)
                e[k] = round_to(od, cv[k / 3] != 0 ? round_to(ALL[i], av[k % 3]) : round_to(ALL[j], bv[k]));
            lt_tensor *c = mk(LT_BOOL, 2, sc, cv), *a = mk(ALL[i], 1, sa, av), *b = mk(ALL[j], 2, sb, bv);
            lt_tensor *r = lt_where(c, a, b);
            expect_full("where", r, od, 2, sb, e, 0);
            lt_free(r);
            lt_free(a);
            lt_free(b);
            lt_free(c);
        }
}

TEST(addcmul_addcdiv_values) {
    int64_t sa[2] = {2, 3}, s1[1] = {3}, s2[2] = {2, 1};
    double av[6] = {1, 2, 3, 4, 5, 6}, t1[3] = {2, -4, 8}, t2[2] = {4, -0.5};
    const lt_dtype ds[3] = {LT_F32, LT_F64, LT_I32};
    for (int di = 0; di < 3; di++) {
        /* PyTorch: value is cast to the tensors' type; integers stay integers
         * (value truncated), only addcdiv's division needs floats. */
        lt_dtype d = ds[di], od = with_scalar(d);
        double em[6], ed[6], val = is_fl(d) ? 0.5 : 2.7;
        for (int k = 0; k < 6; k++) {
            double x = round_to(d, av[k]), y = round_to(d, t1[k % 3]), z = round_to(d, t2[k / 3]);
            em[k] = is_fl(d) ? round_to(od, x + val * y * z) : x + 2 * y * z;
            ed[k] = round_to(od, x + val * (y / z));
        }
        lt_tensor *a = mk(d, 2, sa, av), *b = mk(d, 1, s1, t1), *c = mk(d, 2, s2, t2);
        lt_tensor *rm = lt_addcmul(a, b, c, val);
        expect_full("addcmul", rm, d, 2, sa, em, 1e-6);
        lt_free(rm);
        if (is_fl(d)) { /* addcdiv of two integer tensors is an error (test_errors) */
            lt_tensor *rd = lt_addcdiv(a, b, c, val);
            expect_full("addcdiv", rd, od, 2, sa, ed, 1e-6);
            lt_free(rd);
        }
        lt_free(a);
        lt_free(b);
        lt_free(c);
    }
}

/* ---- in-place variants ----------------------------------------------------------- */

/* Every binary in-place op: target keeps its dtype and shape; the operand
 * broadcasts and may have another dtype if the result casts back. */
TEST(inplace_binary) {
    int64_t sa[2] = {2, 3}, sb[1] = {3};
    struct {
        lt_dtype t, o;
    } P[] = {{LT_F32, LT_F32}, {LT_F64, LT_F32}, {LT_F32, LT_F64}, {LT_I32, LT_I32},
             {LT_I32, LT_I64}, {LT_I64, LT_BOOL}, {LT_F32, LT_I32}};
    for (int op = 0; op < B_EQ; op++)
        for (size_t p = 0; p < sizeof P / sizeof P[0]; p++) {
            lt_dtype dt = P[p].t, dop = P[p].o;
            lt_dtype cd = bin_compute(op, dt, 2, dop, 1);
            const double *bvals = op == B_POW ? PV : BV;
            lt_tensor *a = mk(dt, 2, sa, AV), *b = mk(dop, 1, sb, bvals);
            lt_tensor *r = BIN[op].f_(a, b);
            char what[64];
            snprintf(what, sizeof what, "%s_(%s, %s)", BIN[op].name, lt_dtype_name(dt), lt_dtype_name(dop));
            if ((is_fl(cd) && !is_fl(dt)) || (op == B_SUB && dop == LT_BOOL)) {
                /* float result into an int tensor, or subtracting a bool: error, target unchanged */
                CHECK_MSG(!r && lt_error() == LT_ERR_DTYPE, "%s: expected dtype error", what);
                lt_clear_error();
                double e[6];
                for (int k = 0; k < 6; k++) e[k] = round_to(dt, AV[k]);
                expect_full(what, a, dt, 2, sa, e, 0);
            } else {
                CHECK_MSG(r == a, "%s: must return its first argument", what);
                double e[6];
                for (int k = 0; k < 6; k++)
                    e[k] = round_to(dt, bin_ref(op, cd, round_to(dt, AV[k]), round_to(dop, bvals[k % 3])));
                expect_full(what, a, dt, 2, sa, e, op == B_POW ? 1e-6 : 0);
            }
            lt_free(a);
            lt_free(b);
        }
}

TEST(inplace_unary_scalar_and_ternary) {
    int64_t s[2] = {2, 3};
    double v[6] = {-2, -0.5, 0.25, 1, 2, 3};
    for (int op = 0; op < NUN; op++) {
        lt_tensor *a = mk(LT_F64, 2, s, v);
        CHECK(UN[op].f_(a) == a);
        double e[6];
        for (int k = 0; k < 6; k++) e[k] = un_ref(op, v[k]);
        expect_full(UN[op].name, a, LT_F64, 2, s, e, 1e-14);
        lt_free(a);
        /* integer targets: float-only ops error, the others stay integer */
        lt_tensor *i = mk(LT_I32, 2, s, v);
        lt_tensor *r = UN[op].f_(i);
        if (UN[op].float_only) {
            CHECK_MSG(!r && lt_error() == LT_ERR_DTYPE, "%s_ on int32 should fail", UN[op].name);
            lt_clear_error();
        } else {
            for (int k = 0; k < 6; k++) e[k] = un_ref(op, round_to(LT_I32, v[k]));
            expect_full(UN[op].name, i, LT_I32, 2, s, e, 0);
        }
        lt_free(i);
    }
    lt_tensor *a = mk(LT_F32, 2, s, v), *b = mk(LT_F32, 2, s, v);
    CHECK(lt_add_scalar_(a, 1.5) == a);
    CHECK(lt_mul_scalar_(a, 2) == a);
    CHECK(lt_pow_scalar_(a, 2) == a);
    CHECK(lt_clamp_(a, 0, 20) == a);
    CHECK(lt_lerp_(a, b, 0.25) == a);
    CHECK(lt_addcmul_(a, b, b, 0.5) == a);
    CHECK(lt_addcdiv_(a, b, b, 2) == a);
    double e[6];
    for (int k = 0; k < 6; k++) {
        double x = (v[k] + 1.5) * 2;
        x = x * x;
        x = x < 0 ? 0 : x > 20 ? 20 : x;
        x = x + 0.25 * (v[k] - x);
        x = x + 0.5 * v[k] * v[k];
        x = x + 2 * (v[k] / v[k]);
        e[k] = x;
    }
    expect_full("chain of in-place", a, LT_F32, 2, s, e, 1e-6);
    /* scalar in-place on an int tensor: the float32 result cannot go back */
    lt_tensor *i = mk(LT_I64, 2, s, v);
    CHECK(!lt_add_scalar_(i, 1));
    CHECK_ERR(LT_ERR_DTYPE);
    CHECK(!lt_clamp_(i, 0, 1));
    CHECK_ERR(LT_ERR_DTYPE);
    lt_free(i);
    lt_free(a);
    lt_free(b);
}

TEST(copy_fill_zero) {
    int64_t sd[2] = {2, 3}, ss[1] = {3};
    double sv[3] = {1.75, -2.5, 0};
    for (int i = 0; i < NDT; i++)
        for (int j = 0; j < NDT; j++) {
            lt_dtype dd = ALL[i], sdt = ALL[j];
            lt_tensor *dst = lt_full(7, dd, 2, sd), *src = mk(sdt, 1, ss, sv);
            lt_tensor *r = lt_copy_(dst, src);
            CHECK(r == dst);
            double e[6];
            for (int k = 0; k < 6; k++) e[k] = round_to(dd, round_to(sdt, sv[k % 3]));
            char what[64];
            snprintf(what, sizeof what, "copy_ %s<-%s", lt_dtype_name(dd), lt_dtype_name(sdt));
            expect_full(what, dst, dd, 2, sd, e, 0);
            /* the copy is independent of src */
            lt_fill_(src, 5);
            expect_full(what, dst, dd, 2, sd, e, 0);
            lt_free(dst);
            lt_free(src);
        }
    for (int i = 0; i < NDT; i++) {
        lt_tensor *t = lt_ones(ALL[i], 2, sd);
        CHECK(lt_fill_(t, 2.75) == t);
        double e[6];
        for (int k = 0; k < 6; k++) e[k] = round_to(ALL[i], 2.75);
        expect_full("fill_", t, ALL[i], 2, sd, e, 0);
        CHECK(lt_zero_(t) == t);
        for (int k = 0; k < 6; k++) e[k] = 0;
        expect_full("zero_", t, ALL[i], 2, sd, e, 0);
        lt_free(t);
    }
}

/* In-place through views writes the base (and aliases), for several view kinds. */
TEST(inplace_through_views) {
    int64_t s[2] = {3, 4};
    double v[12];
    for (int k = 0; k < 12; k++) v[k] = k;
    lt_tensor *a = mk(LT_F32, 2, s, v);
    lt_tensor *col = lt_select(a, 1, -1);        /* a[:, 3] */
    lt_tensor *sl = lt_slice(a, 1, 0, 4, 2);     /* a[:, ::2] */
    lt_tensor *tr = lt_transpose(a, 0, 1);       /* (4, 3) */
    lt_add_scalar_(col, 100);
    lt_mul_scalar_(sl, -1);
    lt_tensor *row = lt_select(tr, 1, 0); /* a[0, :] through the transpose */
    lt_fill_(row, 9);
    for (int k = 0; k < 12; k++) {
        if (k % 4 == 3) v[k] += 100;
        if (k % 4 == 0 || k % 4 == 2) v[k] = -v[k];
        if (k < 4) v[k] = 9;
    }
    h_expect(__FILE__, __LINE__, a, v, 12, 0);
    double ecol[3] = {v[3], v[7], v[11]};
    h_expect(__FILE__, __LINE__, col, ecol, 3, 0);
    double etr[12];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) etr[i * 3 + j] = v[j * 4 + i];
    h_expect(__FILE__, __LINE__, tr, etr, 12, 0);
    /* copy_ into a view of another dtype */
    int64_t s1[1] = {4};
    double iv[4] = {1, 2, 3, 4};
    lt_tensor *src = mk(LT_I32, 1, s1, iv);
    lt_tensor *r1 = lt_select(a, 0, 1);
    lt_copy_(r1, src);
    for (int k = 0; k < 4; k++) v[4 + k] = iv[k];
    h_expect(__FILE__, __LINE__, a, v, 12, 0);
    lt_free(src);
    lt_free(r1);
    lt_free(row);
    lt_free(col);
    lt_free(sl);
    lt_free(tr);
    lt_free(a);
}

/* ---- reductions ---------------------------------------------------------------------- */

/* Reference reduction over a mask of dims; op 0 sum, 1 mean, 2 max, 3 min. */
static int ref_reduce(int op, int nd, const int64_t *s, const double *x, unsigned mask, bool keep, int64_t *os,
                      double *out) {
    int no = 0;
    int64_t ostr[LT_MAX_DIMS], st = 1;
    for (int d = nd - 1; d >= 0; d--) {
        ostr[d] = (mask >> d) & 1 ? 0 : st;
        if (!((mask >> d) & 1)) st *= s[d];
    }
    for (int d = 0; d < nd; d++)
        if (!((mask >> d) & 1)) os[no++] = s[d];
        else if (keep) os[no++] = 1;
    int64_t nout = st, n = numel_of(nd, s);
    int64_t *cnt = calloc((size_t)nout + 1, sizeof *cnt);
    for (int64_t o = 0; o < nout; o++) out[o] = op == 2 ? -INFINITY : op == 3 ? INFINITY : 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t rem = i, o = 0;
        for (int d = nd - 1; d >= 0; d--) {
            o += (rem % s[d]) * ostr[d];
            rem /= s[d];
        }
        cnt[o]++;
        if (op <= 1) out[o] += x[i];
        else if (op == 2) out[o] = isnan(out[o]) || isnan(x[i]) ? NAN : x[i] > out[o] ? x[i] : out[o];
        else out[o] = isnan(out[o]) || isnan(x[i]) ? NAN : x[i] < out[o] ? x[i] : out[o];
    }
    if (op == 1)
        for (int64_t o = 0; o < nout; o++) out[o] /= (double)cnt[o];
    free(cnt);
    return no;
}

typedef lt_tensor *(*red_fn)(lt_tensor *, int, const int *, bool);

TEST(reductions_axes_keepdim_dtypes) {
    static const red_fn F[4] = {lt_sum, lt_mean, lt_max, lt_min};
    static const char *N[4] = {"sum", "mean", "max", "min"};
    int64_t s[3] = {2, 3, 4};
    double x[24];
    for (int k = 0; k < 24; k++) x[k] = ((k * 7) % 11) - 5 + (k % 3) * 0.25;
    /* axis lists, including negative and the empty list (= all) */
    static const struct {
        int n, ax[3];
    } A[] = {{0, {0}}, {1, {0}}, {1, {1}}, {1, {-1}}, {2, {0, 2}}, {2, {-1, -3}}, {3, {2, 0, 1}}};
    for (int op = 0; op < 4; op++)
        for (int di = 0; di < NDT; di++) {
            lt_dtype d = ALL[di];
            if (op == 1 && !is_fl(d)) continue; /* mean of int: error (test_errors) */
            double xin[24];
            for (int k = 0; k < 24; k++) xin[k] = round_to(d, x[k]);
            lt_dtype od = op == 0 && !is_fl(d) ? LT_I64 : d;
            for (size_t ai = 0; ai < sizeof A / sizeof A[0]; ai++)
                for (int keep = 0; keep < 2; keep++) {
                    unsigned mask = 0;
                    for (int i = 0; i < A[ai].n; i++) mask |= 1u << ((A[ai].ax[i] + 3) % 3);
                    if (A[ai].n == 0) mask = 7;
                    int64_t os[3];
                    double e[24];
                    int no = ref_reduce(op, 3, s, xin, mask, keep, os, e);
                    for (int k = 0; k < (int)numel_of(no, os); k++) e[k] = round_to(od, e[k]);
                    lt_tensor *a = mk(d, 3, s, x);
                    lt_tensor *r = F[op](a, A[ai].n, A[ai].ax, keep);
                    char what[80];
                    snprintf(what, sizeof what, "%s(%s, axes#%zu, keep %d)", N[op], lt_dtype_name(d), ai, keep);
                    expect_full(what, r, od, no, os, e, op == 1 ? 1e-6 : 0);
                    lt_free(r);
                    lt_free(a);
                }
        }
}

TEST(reductions_edge_cases) {
    /* zero-size: sum gives zeros, mean gives NaN, reducing a non-empty dim of an empty tensor is fine */
    int64_t z[2] = {0, 3};
    lt_tensor *a = lt_zeros(LT_F32, 2, z);
    int ax0[1] = {0}, ax1[1] = {1};
    lt_tensor *s0 = lt_sum(a, 1, ax0, false), *m0 = lt_mean(a, 1, ax0, false), *s1 = lt_sum(a, 1, ax1, true);
    lt_tensor *mx1 = lt_max(a, 1, ax1, false);
    EXPECT_VALUES(s0, 0, 0, 0, 0);
    EXPECT_VALUES(m0, 0, NAN, NAN, NAN);
    EXPECT_SHAPE(s1, 0, 1);
    EXPECT_SHAPE(mx1, 0);
    lt_free(s0);
    lt_free(m0);
    lt_free(s1);
    lt_free(mx1);
    lt_free(a);
    /* 0-d tensor: every reduction is the value; axis 0 and -1 name it */
    double v = 2.5;
    lt_tensor *sc = lt_from_data(&v, LT_F64, 0, NULL);
    int axm1[1] = {-1};
    lt_tensor *r1 = lt_sum(sc, 0, NULL, false), *r2 = lt_max(sc, 1, axm1, true), *r3 = lt_mean(sc, 1, ax0, false);
    EXPECT_VALUES(r1, 0, 2.5);
    EXPECT_VALUES(r2, 0, 2.5);
    EXPECT_VALUES(r3, 0, 2.5);
    CHECK(lt_ndim(r1) == 0 && lt_ndim(r2) == 0);
    lt_free(r1);
    lt_free(r2);
    lt_free(r3);
    lt_free(sc);
    /* NaN wins max/min; int64 sum of int32 does not overflow int32 */
    int64_t s2[1] = {3};
    double nv[3] = {1, NAN, 3}, big[3] = {2147483647.0, 2147483647.0, 2};
    lt_tensor *n = mk(LT_F32, 1, s2, nv), *b = mk(LT_I32, 1, s2, big);
    lt_tensor *mx = lt_max(n, 0, NULL, false), *mn = lt_min(n, 0, NULL, false), *sb = lt_sum(b, 0, NULL, false);
    EXPECT_VALUES(mx, 0, NAN);
    EXPECT_VALUES(mn, 0, NAN);
    EXPECT_VALUES(sb, 0, 4294967296.0);
    lt_free(mx);
    lt_free(mn);
    lt_free(sb);
    lt_free(n);
    lt_free(b);
    /* bool: sum counts, max is any */
    double bv[4] = {1, 0, 1, 1};
    int64_t s4[1] = {4};
    lt_tensor *bb = mk(LT_BOOL, 1, s4, bv), *bs = lt_sum(bb, 0, NULL, false), *bm = lt_max(bb, 0, NULL, false);
    CHECK(lt_dtype_of(bs) == LT_I64 && lt_dtype_of(bm) == LT_BOOL);
    EXPECT_VALUES(bs, 0, 3);
    EXPECT_VALUES(bm, 0, 1);
    lt_free(bs);
    lt_free(bm);
    lt_free(bb);
}

TEST(argmax_argmin) {
    int64_t s[2] = {3, 4};
    /* ties: the first index wins */
    double x[12] = {1, 5, 5, 0, -2, -2, 7, 7, 3, 3, 3, 3};
    const lt_dtype ds[4] = {LT_F32, LT_F64, LT_I32, LT_I64};
    for (int di = 0; di < 4; di++)
        for (int dim = -2; dim < 2; dim++)
            for (int keep = 0; keep < 2; keep++)
                for (int mx = 0; mx < 2; mx++) {
                    int d = (dim + 2) % 2;
                    int64_t os[2];
                    int no = 0;
                    for (int k = 0; k < 2; k++)
                        if (k != d) os[no++] = s[k];
                        else if (keep) os[no++] = 1;
                    double e[4];
                    int64_t nout = d == 0 ? 4 : 3, len = s[d];
                    for (int64_t o = 0; o < nout; o++) {
                        int64_t best = 0;
                        for (int64_t k = 1; k < len; k++) {
                            double cur = d == 0 ? x[k * 4 + o] : x[o * 4 + k];
                            double bv = d == 0 ? x[best * 4 + o] : x[o * 4 + best];
                            if (mx ? cur > bv : cur < bv) best = k;
                        }
                        e[o] = (double)best;
                    }
                    lt_tensor *a = mk(ds[di], 2, s, x);
                    lt_tensor *r = mx ? lt_argmax(a, dim, keep) : lt_argmin(a, dim, keep);
                    expect_full(mx ? "argmax" : "argmin", r, LT_I64, no, os, e, 0);
                    lt_free(r);
                    lt_free(a);
                }
}

TEST(softmax_log_softmax) {
    int64_t s[3] = {2, 3, 4};
    double x[24];
    for (int k = 0; k < 24; k++) x[k] = sin(k * 1.3) * 3;
    x[5] = 60; /* large values must not overflow */
    for (int di = 0; di < 2; di++)
        for (int dim = -1; dim < 3; dim++) {
            int d = (dim + 3) % 3;
            lt_dtype dt = ALL[di];
            double xin[24], es[24], el[24];
            for (int k = 0; k < 24; k++) xin[k] = round_to(dt, x[k]);
            int64_t inner = 1, n = s[d];
            for (int k = d + 1; k < 3; k++) inner *= s[k];
            for (int64_t i = 0; i < 24; i++) {
                int64_t base = i - ((i / inner) % n) * inner;
                double mx = -INFINITY, sum = 0;
                for (int64_t k = 0; k < n; k++) mx = fmax(mx, xin[base + k * inner]);
                for (int64_t k = 0; k < n; k++) sum += exp(xin[base + k * inner] - mx);
                es[i] = round_to(dt, exp(xin[i] - mx) / sum);
                el[i] = round_to(dt, xin[i] - mx - log(sum));
            }
            lt_tensor *a = mk(dt, 3, s, x), *r1 = lt_softmax(a, dim), *r2 = lt_log_softmax(a, dim);
            double tol = dt == LT_F32 ? 1e-6 : 1e-13;
            expect_full("softmax", r1, dt, 3, s, es, tol);
            expect_full("log_softmax", r2, dt, 3, s, el, tol);
            lt_free(r1);
            lt_free(r2);
            lt_free(a);
        }
}

/* ---- matmul ------------------------------------------------------------------------------ */

/* torch.matmul by the book: promote 1-D operands, broadcast batches, drop
 * the added dims. */
static void ref_matmul(int na, const int64_t *sa, const double *a, int nb, const int64_t *sb, const double *b,
                       int *no, int64_t *os, double *out) {
    int64_t A[LT_MAX_DIMS], B[LT_MAX_DIMS];
    int ma = na, mb = nb;
    if (na == 1) A[0] = 1, A[1] = sa[0], ma = 2;
    else memcpy(A, sa, (size_t)na * 8);
    if (nb == 1) B[0] = sb[0], B[1] = 1, mb = 2;
    else memcpy(B, sb, (size_t)nb * 8);
    int64_t bat[LT_MAX_DIMS];
    int nbat = bshape(ma - 2, A, mb - 2, B, bat);
    int64_t n = A[ma - 2], k = A[ma - 1], m = B[mb - 1], nbatch = numel_of(nbat, bat);
    for (int64_t t = 0; t < nbatch; t++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < m; j++) {
                int64_t ia = bcast_index(nbat, bat, t, ma - 2, A), ib = bcast_index(nbat, bat, t, mb - 2, B);
                double acc = 0;
                for (int64_t p = 0; p < k; p++) acc += a[(ia * n + i) * k + p] * b[(ib * k + p) * m + j];
                out[(t * n + i) * m + j] = acc;
            }
    int d = 0;
    for (int i = 0; i < nbat; i++) os[d++] = bat[i];
    if (na >= 2) os[d++] = n;
    if (nb >= 2) os[d++] = m;
    *no = d;
}

TEST(matmul_shapes_and_dtypes) {
    static const struct {
        int na, nb;
        int64_t sa[4], sb[4];
    } C[] = {
        {1, 1, {4}, {4}},          {2, 1, {3, 4}, {4}},          {1, 2, {4}, {4, 2}},
        {2, 2, {3, 4}, {4, 2}},    {3, 2, {2, 3, 4}, {4, 2}},    {2, 3, {3, 4}, {2, 4, 5}},
        {4, 3, {2, 1, 3, 4}, {5, 4, 2}}, {1, 3, {4}, {2, 4, 3}}, {3, 1, {2, 3, 4}, {4}},
        {2, 2, {0, 4}, {4, 2}},    {2, 2, {3, 0}, {0, 2}},       {2, 2, {1, 1}, {1, 1}},
    };
    const lt_dtype ds[4] = {LT_F32, LT_F64, LT_I32, LT_I64};
    double av[64], bv[64];
    for (int k = 0; k < 64; k++) {
        av[k] = (k % 7) - 3;
        bv[k] = ((k * 5) % 9) - 4;
    }
    for (size_t c = 0; c < sizeof C / sizeof C[0]; c++)
        for (int di = 0; di < 4; di++) {
            int no;
            int64_t os[LT_MAX_DIMS];
            double e[256];
            ref_matmul(C[c].na, C[c].sa, av, C[c].nb, C[c].sb, bv, &no, os, e);
            lt_tensor *a = mk(ds[di], C[c].na, C[c].sa, av), *b = mk(ds[di], C[c].nb, C[c].sb, bv);
            lt_tensor *r = lt_matmul(a, b);
            char what[64];
            snprintf(what, sizeof what, "matmul case %zu %s", c, lt_dtype_name(ds[di]));
            expect_full(what, r, ds[di], no, os, e, 0); /* small integers: exact in every dtype */
            lt_free(r);
            lt_free(a);
            lt_free(b);
        }
    /* fractional values, through a transposed (non-contiguous) view */
    int64_t s[2] = {3, 2};
    double x[6] = {0.5, -1.25, 2, 0.125, 3, -0.75};
    lt_tensor *a = mk(LT_F64, 2, s, x), *at = lt_t(a), *r = lt_matmul(at, a);
    double e[4] = {0, 0, 0, 0};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            for (int p = 0; p < 3; p++) e[i * 2 + j] += x[p * 2 + i] * x[p * 2 + j];
    int64_t os[2] = {2, 2};
    expect_full("matmul t(a) a", r, LT_F64, 2, os, e, 1e-15);
    lt_free(r);
    lt_free(at);
    lt_free(a);
}

/* ---- cat and clone --------------------------------------------------------------------------- */

TEST(cat_dims_and_promotion) {
    int64_t s1[2] = {2, 3}, s2[2] = {1, 3}, s3[2] = {0, 3}, s4[2] = {2, 2};
    double v[8] = {1, 2, 3, 4, 5, 6, 7, 8}, w[8] = {-1.5, -2.5, -3.5, -4.5, 0, 0, 0, 0};
    lt_tensor *a = mk(LT_F32, 2, s1, v), *b = mk(LT_I32, 2, s2, w), *z = mk(LT_F64, 2, s3, v), *c = mk(LT_I64, 2, s4, w);
    lt_tensor *l0[3] = {a, b, z};
    lt_tensor *r0 = lt_cat(3, l0, 0);
    int64_t e0s[2] = {3, 3};
    double e0[9] = {1, 2, 3, 4, 5, 6, -1, -2, -3};
    expect_full("cat dim 0", r0, LT_F64, 2, e0s, e0, 0); /* F32 + I32 + F64 -> F64 */
    lt_tensor *l1[2] = {a, c};
    lt_tensor *r1 = lt_cat(2, l1, -1);
    int64_t e1s[2] = {2, 5};
    double e1[10] = {1, 2, 3, -1, -2, 4, 5, 6, -3, -4};
    expect_full("cat dim -1", r1, LT_F32, 2, e1s, e1, 0);
    lt_tensor *r2 = lt_cat(1, &b, 1);
    double e2[3] = {-1, -2, -3};
    expect_full("cat of one", r2, LT_I32, 2, s2, e2, 0);
    /* a view as an input */
    lt_tensor *col = lt_slice(a, 1, 1, 3, 1), *l3[2] = {col, col};
    lt_tensor *r3 = lt_cat(2, l3, 1);
    int64_t e3s[2] = {2, 4};
    double e3[8] = {2, 3, 2, 3, 5, 6, 5, 6};
    expect_full("cat views", r3, LT_F32, 2, e3s, e3, 0);
    lt_free(r0);
    lt_free(r1);
    lt_free(r2);
    lt_free(r3);
    lt_free(col);
    lt_free(a);
    lt_free(b);
    lt_free(z);
    lt_free(c);
}

TEST(clone_is_independent) {
    int64_t s[2] = {2, 2};
    double v[4] = {1, 2, 3, 4};
    lt_tensor *a = mk(LT_F32, 2, s, v);
    lt_tensor *c = lt_clone(a), *k = lt_contiguous(a);
    lt_add_scalar_(a, 10);
    EXPECT_VALUES(c, 0, 1, 2, 3, 4);
    lt_mul_scalar_(c, 2);
    EXPECT_VALUES(a, 0, 11, 12, 13, 14);
    EXPECT_VALUES(c, 0, 2, 4, 6, 8);
    EXPECT_VALUES(k, 0, 1, 2, 3, 4);
    /* clone of a pending value and of a view */
    lt_tensor *p = lt_neg(a), *pc = lt_clone(p), *tv = lt_t(a), *tc = lt_contiguous(tv);
    lt_fill_(p, 0);
    CHECK(!lt_is_view(tc));
    EXPECT_VALUES(pc, 0, -11, -12, -13, -14);
    lt_zero_(a);
    EXPECT_VALUES(tc, 0, 11, 13, 12, 14);
    lt_free(p);
    lt_free(pc);
    lt_free(tv);
    lt_free(tc);
    lt_free(c);
    lt_free(k);
    lt_free(a);
}

/* ---- views: values ------------------------------------------------------------------------------ */

/* Reads element (i0..) of a contiguous (2,3,4) array holding 0..23. */
#define X3(i, j, k) ((double)((i) * 12 + (j) * 4 + (k)))

TEST(view_values) {
    int64_t s[3] = {2, 3, 4};
    double v[24];
    for (int k = 0; k < 24; k++) v[k] = k;
    const lt_dtype ds[3] = {LT_F32, LT_I64, LT_BOOL};
    for (int di = 0; di < 3; di++) {
        lt_dtype dt = ds[di];
        lt_tensor *a = mk(dt, 3, s, v);
        double e[48];
        int n;
        /* reshape (a view) and reshape of a permuted tensor (a copy) */
        int64_t rs[2] = {4, -1};
        lt_tensor *r = lt_reshape(a, 2, rs);
        EXPECT_SHAPE(r, 4, 6);
        for (int k = 0; k < 24; k++) e[k] = round_to(dt, k);
        h_expect(__FILE__, __LINE__, r, e, 24, 0);
        int perm[3] = {2, 0, 1};
        lt_tensor *p = lt_permute(a, 3, perm); /* (4, 2, 3) */
        EXPECT_SHAPE(p, 4, 2, 3);
        n = 0;
        for (int k = 0; k < 4; k++)
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 3; j++) e[n++] = round_to(dt, X3(i, j, k));
        h_expect(__FILE__, __LINE__, p, e, 24, 0);
        int64_t fs[1] = {24};
        lt_tensor *pr = lt_reshape(p, 1, fs);
        h_expect(__FILE__, __LINE__, pr, e, 24, 0);
        lt_tensor *pf = lt_flatten(p, 1, 2); /* (4, 6) */
        EXPECT_SHAPE(pf, 4, 6);
        h_expect(__FILE__, __LINE__, pf, e, 24, 0);
        /* transpose with negative dims */
        lt_tensor *t = lt_transpose(a, -1, 0); /* (4, 3, 2) */
        n = 0;
        for (int k = 0; k < 4; k++)
            for (int j = 0; j < 3; j++)
                for (int i = 0; i < 2; i++) e[n++] = round_to(dt, X3(i, j, k));
        EXPECT_SHAPE(t, 4, 3, 2);
        h_expect(__FILE__, __LINE__, t, e, 24, 0);
        /* slice: step, negative start, clamped end, empty */
        lt_tensor *sl = lt_slice(a, 2, -3, 100, 2); /* k = 1, 3 */
        n = 0;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                for (int k = 1; k < 4; k += 2) e[n++] = round_to(dt, X3(i, j, k));
        EXPECT_SHAPE(sl, 2, 3, 2);
        h_expect(__FILE__, __LINE__, sl, e, 12, 0);
        lt_tensor *se = lt_slice(a, 1, 2, 1, 1);
        EXPECT_SHAPE(se, 2, 0, 4);
        lt_tensor *nw = lt_narrow(a, 1, 1, 2);
        n = 0;
        for (int i = 0; i < 2; i++)
            for (int j = 1; j < 3; j++)
                for (int k = 0; k < 4; k++) e[n++] = round_to(dt, X3(i, j, k));
        h_expect(__FILE__, __LINE__, nw, e, 16, 0);
        /* select with a negative index, then a slice of the select */
        lt_tensor *sel = lt_select(a, 1, -1), *ss = lt_slice(sel, 1, 1, 3, 1);
        n = 0;
        for (int i = 0; i < 2; i++)
            for (int k = 1; k < 3; k++) e[n++] = round_to(dt, X3(i, 2, k));
        EXPECT_SHAPE(ss, 2, 2);
        h_expect(__FILE__, __LINE__, ss, e, 4, 0);
        /* expand a size-1 dim and a new leading dim */
        lt_tensor *one = lt_slice(a, 1, 0, 1, 1); /* (2, 1, 4) */
        int64_t es[4] = {2, 2, 3, -1};
        lt_tensor *ex = lt_expand(one, 4, es);
        EXPECT_SHAPE(ex, 2, 2, 3, 4);
        n = 0;
        for (int l = 0; l < 2; l++)
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 3; j++)
                    for (int k = 0; k < 4; k++) e[n++] = round_to(dt, X3(i, 0, k));
        h_expect(__FILE__, __LINE__, ex, e, 48, 0);
        /* squeeze / unsqueeze */
        lt_tensor *sq = lt_squeeze(one, 1), *sq0 = lt_squeeze(one, 0), *us = lt_unsqueeze(a, -1), *us0 = lt_unsqueeze(a, 1);
        EXPECT_SHAPE(sq, 2, 4);
        EXPECT_SHAPE(sq0, 2, 1, 4); /* size 2: no-op */
        EXPECT_SHAPE(us, 2, 3, 4, 1);
        EXPECT_SHAPE(us0, 2, 1, 3, 4);
        n = 0;
        for (int i = 0; i < 2; i++)
            for (int k = 0; k < 4; k++) e[n++] = round_to(dt, X3(i, 0, k));
        h_expect(__FILE__, __LINE__, sq, e, 8, 0);
        for (int k = 0; k < 24; k++) e[k] = round_to(dt, k);
        h_expect(__FILE__, __LINE__, us, e, 24, 0);
        h_expect(__FILE__, __LINE__, us0, e, 24, 0);
        /* diagonal and as_strided */
        lt_tensor *dg = lt_diagonal(a, 1, 1, 2); /* (2, 3): a[i, j, j+1] */
        n = 0;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) e[n++] = round_to(dt, X3(i, j, j + 1));
        EXPECT_SHAPE(dg, 2, 3);
        h_expect(__FILE__, __LINE__, dg, e, 6, 0);
        int64_t ass[2] = {3, 2}, ast[2] = {5, 2};
        lt_tensor *as = lt_as_strided(a, 2, ass, ast, 1);
        n = 0;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 2; j++) e[n++] = round_to(dt, 1 + 5 * i + 2 * j);
        h_expect(__FILE__, __LINE__, as, e, 6, 0);
        /* view of a view, read after the base changed */
        int64_t vs[2] = {6, 4};
        lt_tensor *vw = lt_view(a, 2, vs), *vt = lt_t(vw);
        if (dt != LT_BOOL) {
            lt_add_scalar_(a, dt == LT_F32 ? 1 : 0); /* int targets: scalar ops are float (error) */
            lt_clear_error();
        }
        double off = dt == LT_F32 ? 1 : 0;
        n = 0;
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < 6; i++) e[n++] = round_to(dt, i * 4 + j + off);
        EXPECT_SHAPE(vt, 4, 6);
        h_expect(__FILE__, __LINE__, vt, e, 24, 0);
        lt_tensor *all[] = {r, p, pr, pf, t, sl, se, nw, sel, ss, one, ex, sq, sq0, us, us0, dg, as, vw, vt, a};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) lt_free(all[i]);
    }
}

/* Zero-size and size-1 dims through views and elementwise ops. */
TEST(zero_and_one_sized) {
    int64_t s[3] = {2, 0, 3};
    lt_tensor *a = lt_ones(LT_F32, 3, s);
    lt_tensor *t = lt_transpose(a, 0, 2), *e = lt_add(t, t);
    EXPECT_SHAPE(e, 3, 0, 2);
    CHECK(lt_numel(e) == 0);
    float dummy;
    CHECK(lt_to_host(e, &dummy, 0) == 0);
    int64_t r[2] = {-1, 3};
    lt_tensor *rs = lt_reshape(a, 2, r);
    EXPECT_SHAPE(rs, 0, 3);
    lt_free(rs);
    lt_free(e);
    lt_free(t);
    lt_free(a);
    int64_t s1[3] = {1, 1, 1};
    lt_tensor *o = lt_full(3, LT_I32, 3, s1), *oo = lt_mul(o, o);
    EXPECT_SHAPE(oo, 1, 1, 1);
    EXPECT_VALUES(oo, 0, 9);
    CHECK(lt_item(oo) == 9);
    lt_free(oo);
    lt_free(o);
}

/* ---- creation ------------------------------------------------------------------------------------- */

TEST(creation) {
    int64_t s[2] = {2, 3};
    for (int i = 0; i < NDT; i++) {
        /* uint8 takes no negative fraction (torch's overflow check); -3 wraps to 253 */
        double fv = ALL[i] == LT_U8 ? -3 : -2.5;
        lt_tensor *z = lt_zeros(ALL[i], 2, s), *o = lt_ones(ALL[i], 2, s), *f = lt_full(fv, ALL[i], 2, s);
        double ez[6], eo[6], ef[6];
        for (int k = 0; k < 6; k++) ez[k] = 0, eo[k] = 1, ef[k] = round_to(ALL[i], fv);
        expect_full("zeros", z, ALL[i], 2, s, ez, 0);
        expect_full("ones", o, ALL[i], 2, s, eo, 0);
        expect_full("full", f, ALL[i], 2, s, ef, 0);
        lt_free(z);
        lt_free(o);
        lt_free(f);
    }
    lt_tensor *sc = lt_full(4, LT_F64, 0, NULL);
    CHECK(lt_ndim(sc) == 0 && lt_numel(sc) == 1 && lt_item(sc) == 4);
    lt_free(sc);
    /* uint8's range check is c10's: integers down to -255 (they wrap), fractions in [0, 255] */
    static const double u8_ok[] = {255, -255, 0.5, 254.5}, u8_bad[] = {256, -256, -0.5, 255.5, NAN, INFINITY};
    for (size_t i = 0; i < sizeof u8_ok / sizeof *u8_ok; i++) {
        lt_tensor *u = lt_full(u8_ok[i], LT_U8, 0, NULL);
        CHECK_MSG(u && lt_item(u) == round_to(LT_U8, u8_ok[i]), "full(%g, uint8): %s", u8_ok[i], lt_error_message());
        lt_free(u);
    }
    for (size_t i = 0; i < sizeof u8_bad / sizeof *u8_bad; i++) {
        lt_tensor *u = lt_full(u8_bad[i], LT_U8, 0, NULL);
        CHECK_MSG(!u && lt_error() == LT_ERR_ARG, "full(%g, uint8) must be refused", u8_bad[i]);
        lt_clear_error();
    }
    /* arange: count = ceil((end - start) / step), like PyTorch */
    static const struct {
        double a, b, st;
        lt_dtype d;
    } A[] = {{0, 5, 1, LT_I64}, {1, 2, 0.25, LT_F32}, {5, 0, -1.5, LT_F64}, {0, 1, 0.1, LT_F64},
             {-3, 3, 2, LT_I32}, {2, 2, 1, LT_F32}};
    for (size_t i = 0; i < sizeof A / sizeof A[0]; i++) {
        int64_t n = (int64_t)ceil((A[i].b - A[i].a) / A[i].st);
        double e[16];
        for (int64_t k = 0; k < n; k++) e[k] = round_to(A[i].d, A[i].a + (double)k * A[i].st);
        lt_tensor *r = lt_arange(A[i].a, A[i].b, A[i].st, A[i].d);
        int64_t sh[1] = {n};
        expect_full("arange", r, A[i].d, 1, sh, e, 0);
        lt_free(r);
    }
}

TEST(random_seeding) {
    int64_t s[1] = {4000};
    for (int di = 0; di < 2; di++) {
        lt_dtype d = ALL[di];
        lt_manual_seed(42);
        lt_tensor *a = lt_randn(d, 1, s), *u = lt_rand(d, 1, s);
        lt_manual_seed(42);
        lt_tensor *b = lt_randn(d, 1, s), *v = lt_rand(d, 1, s);
        lt_manual_seed(43);
        lt_tensor *c = lt_randn(d, 1, s);
        double *x = h_read(a), *y = h_read(b), *z = h_read(c), *ux = h_read(u), *vx = h_read(v);
        if (!x || !y || !z || !ux || !vx) {
            CHECK(0);
        } else {
            CHECK(!memcmp(x, y, 4000 * sizeof *x)); /* same seed, same stream */
            CHECK(!memcmp(ux, vx, 4000 * sizeof *x));
            CHECK(memcmp(x, z, 4000 * sizeof *x)); /* another seed, another stream */
            double m = 0, m2 = 0, um = 0, umin = 1, umax = 0;
            int distinct = 0;
            for (int k = 0; k < 4000; k++) {
                m += x[k];
                m2 += x[k] * x[k];
                um += ux[k];
                umin = fmin(umin, ux[k]);
                umax = fmax(umax, ux[k]);
                distinct += k && x[k] != x[k - 1];
            }
            m /= 4000, m2 /= 4000, um /= 4000;
            /* 4000 samples: these bounds fail with probability far below 1e-6 */
            CHECK_MSG(fabs(m) < 0.1 && fabs(m2 - 1) < 0.15, "randn mean %g, E[x^2] %g", m, m2);
            CHECK_MSG(fabs(um - 0.5) < 0.03 && umin >= 0 && umax < 1, "rand mean %g range [%g, %g)", um, umin, umax);
            CHECK(distinct > 3990);
        }
        free(x), free(y), free(z), free(ux), free(vx);
        lt_free(a), lt_free(b), lt_free(c), lt_free(u), lt_free(v);
    }
    /* the stream continues across calls: two draws differ */
    int64_t s2[1] = {8};
    lt_manual_seed(7);
    lt_tensor *p = lt_rand(LT_F64, 1, s2), *q = lt_rand(LT_F64, 1, s2);
    double *px = h_read(p), *qx = h_read(q);
    CHECK(px && qx && memcmp(px, qx, 8 * sizeof *px));
    free(px), free(qx);
    lt_free(p), lt_free(q);
}

int main(void) {
    RUN(binary_all_dtypes_and_broadcasts);
    RUN(promotion_table);
    RUN(binary_special_values);
    RUN(unary_all_dtypes);
    RUN(scalar_ops_all_dtypes);
    RUN(clamp_all_dtypes);
    RUN(cast_all_pairs);
    RUN(bf16_rounding);
    RUN(lerp_values);
    RUN(where_values);
    RUN(addcmul_addcdiv_values);
    RUN(inplace_binary);
    RUN(inplace_unary_scalar_and_ternary);
    RUN(copy_fill_zero);
    RUN(inplace_through_views);
    RUN(reductions_axes_keepdim_dtypes);
    RUN(reductions_edge_cases);
    RUN(argmax_argmin);
    RUN(softmax_log_softmax);
    RUN(matmul_shapes_and_dtypes);
    RUN(cat_dims_and_promotion);
    RUN(clone_is_independent);
    RUN(view_values);
    RUN(zero_and_one_sized);
    RUN(creation);
    RUN(random_seeding);
    return h_report();
}
