/* The typed half of the tile interpreter, included through typed.h once per
 * register type (T float or double, FN(name), TM(sqrt), ...) and once
 * per instruction set. Each instruction is one simple loop over a tile so
 * that gcc vectorizes it (and calls libmvec for exp/log/pow/tanh). */

/* n elements of (src, dt) starting at element off, step `step`, into dst. */
static void FN(convert)(T *restrict dst, const void *src, lt_dtype dt, int64_t off, int64_t n, int64_t step) {
#define CONVERT_LOOP(CT)                                                  \
    do {                                                                  \
        const CT *s_ = (const CT *)src + off;                             \
        if (step == 1) {                                                  \
            OMP_SIMD for (int64_t i = 0; i < n; i++) dst[i] = (T)s_[i]; \
        } else {                                                          \
            for (int64_t i = 0; i < n; i++) dst[i] = (T)s_[i * step];     \
        }                                                                 \
    } while (0)
    switch (dt) {
    case LT_F32: CONVERT_LOOP(float); break;
    case LT_F64: CONVERT_LOOP(double); break;
    case LT_I32: CONVERT_LOOP(int32_t); break;
    case LT_I64: { /* through double, as the reference kernels round */
        const int64_t *s_ = (const int64_t *)src + off;
        for (int64_t i = 0; i < n; i++) dst[i] = (T)(double)s_[i * step];
        break;
    }
    case LT_BOOL: case LT_U8: CONVERT_LOOP(uint8_t); break;
    case LT_BF16: { /* exact: a bfloat16 is the top half of a float */
        const uint16_t *s_ = (const uint16_t *)src + off;
        if (step == 1) {
            OMP_SIMD for (int64_t i = 0; i < n; i++) dst[i] = (T)bf16_to_f32(s_[i]);
        } else {
            for (int64_t i = 0; i < n; i++) dst[i] = (T)bf16_to_f32(s_[i * step]);
        }
        break;
    }
    }
#undef CONVERT_LOOP
}

/* n values rounded to bfloat16 (a value already rounded is exact). */
static void FN(store_bf16)(uint16_t *restrict o, const T *restrict v, int64_t n) {
    OMP_SIMD for (int64_t i = 0; i < n; i++) o[i] = bf16_from_f32((float)v[i]);
}

static void FN(load_general)(const tprog *p, const tload *l, T *restrict dst, const void *src, int64_t i0, int64_t n) {
    int nd = p->ndim, last = nd - 1;
    int64_t idx[LT_MAX_DIMS], off = 0, rem = i0;
    for (int d = last; d >= 0; d--) {
        idx[d] = rem % p->shape[d];
        rem /= p->shape[d];
        off += idx[d] * l->str[d];
    }
    int64_t i = 0;
    while (i < n) {
        int64_t run = p->shape[last] - idx[last];
        if (run > n - i) run = n - i;
        int64_t s = l->str[last];
        if (s == 0) {
            T v;
            FN(convert)(&v, src, (lt_dtype)l->dtype, off, 1, 1);
            for (int64_t j = 0; j < run; j++) dst[i + j] = v;
        } else {
            FN(convert)(dst + i, src, (lt_dtype)l->dtype, off, run, s);
        }
        i += run;
        idx[last] += run;
        off += run * s;
        if (idx[last] < p->shape[last]) continue;
        off -= s * p->shape[last];
        idx[last] = 0;
        for (int d = last - 1; d >= 0; d--) {
            idx[d]++;
            off += l->str[d];
            if (idx[d] < p->shape[d]) break;
            off -= l->str[d] * p->shape[d];
            idx[d] = 0;
        }
    }
}

/* X, Y, Z: the operands of element i in the register type; DX, DY, DZ in
 * double. */
#define X (a[i])
#define Y (b[i])
#define Z (c[i])
#define DX ((double)a[i])
#define DY ((double)b[i])
#define DZ ((double)c[i])
#define LOOP(EXPR)                                                 \
    do {                                                           \
        OMP_SIMD for (int64_t i = 0; i < n; i++) d[i] = (T)(EXPR); \
    } while (0)

/* One tile: elements [i0, i0 + n) of the group. direct[j]: store j is
 * computed straight into its output, else copied there at the end. */
static void FN(tile)(const tprog *p, const void *const *in, void *const *out, const double *scal,
                     const uint8_t *direct, void *scratch_, int64_t i0, int64_t n) {
    T *scratch = scratch_, *reg[TILE_MAX_REGS];
    for (int r = 0; r < p->nregs; r++) reg[r] = scratch + (size_t)r * TILE;
    for (int j = 0; j < p->nload; j++) {
        const tload *l = &p->loads[j];
        if (l->mode == LOAD_SAME && l->dtype == p->rtype) {
            reg[j] = (T *)in[j] + i0; /* read in place: no copy */
        } else if (l->mode == LOAD_SAME) {
            FN(convert)(reg[j], in[j], (lt_dtype)l->dtype, i0, n, 1);
        } else if (l->mode == LOAD_SCALAR) {
            T v, *d = reg[j];
            FN(convert)(&v, in[j], (lt_dtype)l->dtype, 0, 1, 1);
            OMP_SIMD for (int64_t i = 0; i < n; i++) d[i] = v;
        } else {
            FN(load_general)(p, l, reg[j], in[j], i0, n);
        }
    }
    /* A stored member keeps its register to the end, so its register may be
     * the output itself: no copy. */
    for (int j = 0; j < p->nstore; j++)
        if (direct[j]) reg[p->stores[j].reg] = (T *)out[j] + i0;
    /* float32 ops compute in float where that gives exactly the reference's
     * double-then-round result: + - * / sqrt (IEEE, correctly rounded),
     * comparisons, min/max/clamp (rounding is monotonic), scalars that are
     * floats. The rest (exp, log, tanh, pow, sigmoid, rsqrt, lerp, addcmul,
     * addcdiv, other scalars) computes in double and rounds once: float
     * math would be a few ulps off, and a later exp amplifies that past
     * every tolerance (test_func_fuzz). Both vectorize. */
    for (int k = 0; k < p->nins; k++) {
        const tins *t = &p->ins[k];
        T *restrict d = reg[t->dst];
        const T *restrict a = t->src[0] >= 0 ? reg[t->src[0]] : NULL;
        const T *restrict b = t->src[1] >= 0 ? reg[t->src[1]] : NULL;
        const T *restrict c = t->src[2] >= 0 ? reg[t->src[2]] : NULL;
        const double ds0 = scal[2 * k];
        const T s0 = (T)ds0, s1 = (T)scal[2 * k + 1];
        const int exact = (double)s0 == ds0; /* the scalar is a T */
        switch (t->op) { /* tile_member_type admits exactly these */
        case LT_OP_FILL: LOOP(s0); break;
        case LT_OP_ADD: LOOP(X + Y); break;
        case LT_OP_SUB: LOOP(X - Y); break;
        case LT_OP_MUL: LOOP(X * Y); break;
        case LT_OP_DIV: LOOP(X / Y); break;
        case LT_OP_MAXIMUM: LOOP((X != X || Y != Y) ? X + Y : (X > Y ? X : Y)); break;
        case LT_OP_MINIMUM: LOOP((X != X || Y != Y) ? X + Y : (X < Y ? X : Y)); break;
        case LT_OP_POW: LOOP(pow(DX, DY)); break;
        case LT_OP_EQ: LOOP(X == Y); break;
        case LT_OP_NE: LOOP(X != Y); break;
        case LT_OP_LT: LOOP(X < Y); break;
        case LT_OP_LE: LOOP(X <= Y); break;
        case LT_OP_GT: LOOP(X > Y); break;
        case LT_OP_GE: LOOP(X >= Y); break;
        case LT_OP_ADD_SCALAR:
            if (exact) LOOP(X + s0);
            else LOOP(DX + ds0);
            break;
        case LT_OP_MUL_SCALAR:
            if (exact) LOOP(X * s0);
            else LOOP(DX * ds0);
            break;
        case LT_OP_POW_SCALAR:
            if (ds0 == 2) LOOP(X * X); /* = pow(x, 2) rounded */
            else if (ds0 == 0.5) LOOP(sqrt(DX)); /* PyTorch's special cases: pow(-inf, 0.5) is NaN */
            else if (ds0 == -0.5) LOOP(1.0 / sqrt(DX)); /* pow(-0.0, -0.5) is -inf */
            else LOOP(pow(DX, ds0));
            break;
        case LT_OP_CLAMP: /* lower bound first, then upper: lo > hi gives hi, as torch.clamp */
            if (s0 != s0 || s1 != s1) LOOP(X - X + (T)NAN); /* a NaN bound: NaN everywhere */
            else LOOP(X != X ? X : ((X < s0 ? s0 : X) > s1 ? s1 : (X < s0 ? s0 : X)));
            break;
        case LT_OP_NEG: LOOP(-X); break;
        case LT_OP_EXP: LOOP(exp(DX)); break;
        case LT_OP_LOG: LOOP(log(DX)); break;
        case LT_OP_SQRT: LOOP(TM(sqrt)(X)); break;
        case LT_OP_RSQRT: LOOP(1.0 / sqrt(DX)); break;
        case LT_OP_ABS: LOOP(TM(fabs)(X)); break;
        case LT_OP_RELU: LOOP(X > 0 || X != X ? X : (T)0); break;
        case LT_OP_TANH: LOOP(tanh(DX)); break;
        case LT_OP_SIGMOID: LOOP(1.0 / (1.0 + exp(-DX))); break;
        case LT_OP_ERF: LOOP(erf(DX)); break;
        case LT_OP_GELU: /* float registers: gelu_f32.h, vectorized; double: the reference's formula */
            if (sizeof(T) != 4) LOOP(ref_gelu(DX, ds0 != 0));
            else if (ds0 != 0) LOOP(gf_gelu_tanh((float)X));
            else LOOP(gf_gelu_erf((float)X));
            break;
        case LT_OP_GELU_BWD: /* (g, x) */
            if (sizeof(T) != 4) LOOP(DX * ref_gelu_grad(DY, ds0 != 0, 0));
            else if (ds0 != 0) LOOP(X * gf_gelu_grad_tanh((float)Y));
            else LOOP(X * gf_gelu_grad_erf((float)Y));
            break;
        /* The PyTorch device's family: the reference's formulas; the
         * selections and comparisons are exact in T, the rest in double. */
        case LT_OP_ADD_SCALED: LOOP(DX + ds0 * DY); break;
        case LT_OP_EQ_SCALAR: LOOP(X == s0); break;
        case LT_OP_NE_SCALAR: LOOP(X != s0); break;
        case LT_OP_LT_SCALAR: LOOP(X < s0); break;
        case LT_OP_LE_SCALAR: LOOP(X <= s0); break;
        case LT_OP_GT_SCALAR: LOOP(X > s0); break;
        case LT_OP_GE_SCALAR: LOOP(X >= s0); break;
        case LT_OP_MASKED_FILL: LOOP(Y != (T)0 ? s0 : X); break;
        case LT_OP_SIGN: LOOP((T)((X > 0) - (X < 0))); break;
        case LT_OP_SILU: LOOP(DX / (1.0 + exp(-DX))); break;
        case LT_OP_SILU_BWD: LOOP(DX * (1.0 / (1.0 + exp(-DY))) * (1.0 + DY * (1.0 - 1.0 / (1.0 + exp(-DY))))); break;
        case LT_OP_HARDSWISH: LOOP(DX * fmin(fmax(DX + 3.0, 0.0), 6.0) / 6.0); break;
        case LT_OP_HARDSWISH_BWD: LOOP(DY < -3.0 ? 0.0 : DY <= 3.0 ? DX * (DY / 3.0 + 0.5) : DX); break;
        case LT_OP_HARDSIGMOID: LOOP(fmin(fmax(DX + 3.0, 0.0), 6.0) / 6.0); break;
        case LT_OP_HARDSIGMOID_BWD: LOOP(DY > -3.0 && DY < 3.0 ? DX * (double)(1.0f / 6.0f) : 0.0); break;
        case LT_OP_THRESHOLD_BWD: LOOP(Y <= s0 ? (T)0 : X); break; /* the bounds in T, as torch's */
        case LT_OP_HARDTANH_BWD: LOOP(Y <= s0 || Y >= s1 ? (T)0 : X); break;
        case LT_OP_SIGMOID_BWD: LOOP(DX * (1.0 - DY) * DY); break;
        case LT_OP_TANH_BWD: LOOP(DX * (1.0 - DY * DY)); break;
        case LT_OP_DIV_TRUNC: LOOP(TM(trunc)(X / Y)); break;
        case LT_OP_DIV_FLOOR:
            if (sizeof(T) == 4) LOOP(ref_div_floor_float((float)X, (float)Y));
            else LOOP(ref_div_floor_double(DX, DY));
            break;
        case LT_OP_CAST:
            if (t->dtype == LT_BOOL) LOOP(X != (T)0);
            else LOOP(X);
            break;
        case LT_OP_LERP: /* PyTorch's two-sided formula; the side is chosen by the weight (signed) */
            if (ds0 < 0.5) LOOP(DX + ds0 * (DY - DX));
            else LOOP(DY - (DY - DX) * (1.0 - ds0));
            break;
        case LT_OP_WHERE: LOOP(X != (T)0 ? Y : Z); break;
        case LT_OP_LERP_TENSOR: LOOP(ref_lerp(DX, DY, DZ)); break;
        case LT_OP_ADDCMUL: LOOP(DX + ds0 * DY * DZ); break;
        case LT_OP_ADDCDIV: LOOP(DX + ds0 * (DY / DZ)); break;
        default: LT_ASSERT(0 && "not a tile op"); break;
        }
        /* A bfloat16 node's value is rounded as the reference stores it:
         * here if a later instruction reads its register (float: see
         * reg_type), else by its store (one pass fewer). */
        if (t->round) OMP_SIMD for (int64_t i = 0; i < n; i++) d[i] = (T)bf16_round((float)d[i]);
    }
    for (int j = 0; j < p->nstore; j++) {
        const tstore *s = &p->stores[j];
        const T *restrict v = reg[s->reg];
        if (s->dtype == LT_BOOL) {
            uint8_t *restrict o = (uint8_t *)out[j] + i0;
            OMP_SIMD for (int64_t i = 0; i < n; i++) o[i] = v[i] != (T)0;
        } else if (s->dtype == LT_BF16) {
            FN(store_bf16)((uint16_t *)out[j] + i0, v, n);
        } else if (!direct[j]) {
            memcpy((T *)out[j] + i0, v, (size_t)n * sizeof(T));
        }
    }
}

#undef LOOP
#undef X
#undef Y
#undef Z
#undef DX
#undef DY
#undef DZ
