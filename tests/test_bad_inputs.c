/* Bad inputs for every public function of lazytensor.h, as a table
 * (tests/bad_inputs.def): one row per argument and kind of mistake. Each row
 * calls the function once and asserts that
 *   - the call reported failure the way its signature does (NULL, -1, NaN),
 *   - lt_error() is the row's code,
 *   - the message names the function ("lt_xxx:") and the argument as the
 *     header spells it, quoted ('name' or 'name[i]'),
 *   - the library is usable right afterwards (a valid op syncs correctly).
 * Fixtures live in globals made once; checkpoint files in a temp dir. */
#include "harness.h"

#include <stdint.h>
#include <unistd.h>

/* ---- fixtures ---- */
static lt_tensor *A;     /* f32 [2, 3] */
static lt_tensor *Bm;    /* f32 [3, 2] */
static lt_tensor *V3;    /* f32 [3] */
static lt_tensor *V4;    /* f32 [4] */
static lt_tensor *D3;    /* f64 [3] */
static lt_tensor *I3;    /* i32 [3] */
static lt_tensor *L3;    /* i64 [3] = 0, 1, 2 */
static lt_tensor *Bo3;   /* bool [3] */
static lt_tensor *S0;    /* f32 0-d */
static lt_tensor *C3;    /* f32 [2, 3, 4] */
static lt_tensor *EXP;   /* expanded view [3, 3] of a [1] */
static lt_tensor *EXPB;  /* its base */
static lt_tensor *AT;    /* lt_t(A): a non-contiguous view */
static lt_tensor *LEAF;  /* f32 [3] requiring grad */
static lt_tensor *X;     /* f32 [1, 2, 5, 5] */
static lt_tensor *W;     /* f32 [3, 2, 3, 3] */
static lt_tensor *LOGP;  /* f32 [2, 3] */
static lt_tensor *TGT;   /* i64 [2] */
static lt_tensor *IDX2;  /* i64 [2, 3] (zeros) */
static lt_tensor *E0, *W3333, *W3277, *XI, *XL, *BN13, *TF2, *LI23; /* odd shapes and dtypes */
static char **out_names;
static lt_tensor **out_ts;
static int out_n;
static lt_model *M;      /* mlp 4 -> 3 -> 2 */
static lt_model *M2;     /* mlp 5 -> 3 -> 2: "another model" */
static lt_optim *O;      /* SGD over M's parameters */
static lt_sched *SC;     /* StepLR on O */
static lt_dataset *DS;   /* fake, 16 samples */
static lt_loader *LD;    /* over DS, batch 4 */
static lt_tensor *BX, *BY; /* lt_loader_batch outputs (never set by the failing rows) */
static char dir[64];
static char p_good[128], p_missing[128], p_trunc[128], p_json[128], p_hugehdr[128], p_dtype[128], p_offs[128],
    p_nodir[128], p_other[128], p_empty[128], p_dump_bad[128];

static const int64_t s1[1] = {1}, s3[1] = {3}, s4[1] = {4}, s23[2] = {2, 3}, s32[2] = {3, 2}, s33[2] = {3, 3};
static const char *nm1[1] = {"x"}, *nm2dup[2] = {"x", "x"}, *nm_empty[1] = {""}, *nm_null[1] = {NULL};
static lt_tensor *t_null[1] = {NULL};

/* A handle that was just freed: the handle pool keeps it readable until the
 * next allocation, which is what makes a use after free detectable. */
static lt_tensor *freed(void) {
    lt_tensor *t = lt_ones(LT_F32, 1, s3);
    lt_free(t);
    return t;
}

/* ---- how each kind of function reports failure ---- */
static int T_(lt_tensor *r) { /* new handle: NULL */
    if (!r) return 1;
    lt_free(r);
    return 0;
}
static int IP_(lt_tensor *r) { return r == NULL; } /* in-place: NULL, never freed here */
static int I_(int64_t r) { return r < 0; }         /* int: -1 */
static int D_(double r) { return isnan(r); }       /* double: NaN */
static int P_(const void *r) { return r == NULL; } /* other pointers: NULL */
#define T(e) T_(e)
#define IP(e) IP_(e)
#define I(e) I_(e)
#define D(e) D_(e)
#define P(e) P_(e)
#define V(e) ((e), 1) /* void (or a value with no failure marker): only the error tells */

/* ---- helpers used by rows ---- */
static lt_tensor *freed_list[2];
static lt_tensor *const *with_freed(void) {
    freed_list[0] = V3;
    freed_list[1] = freed();
    return freed_list;
}
static int load(const char *path) {
    char **names = NULL;
    lt_tensor **ts = NULL;
    int n = lt_load_safetensors(path, &names, &ts);
    h_free_loaded(n, names, ts, 0, NULL, NULL); /* n = -1: both NULL */
    return n;
}
/* Loads a checkpoint and copies it into a model (strict). */
static int load_into(lt_model *m, const char *path, bool strict) {
    char **names = NULL;
    lt_tensor **ts = NULL;
    int n = lt_load_safetensors(path, &names, &ts);
    if (n < 0) return -2; /* the load itself must not fail in these rows */
    int rc = lt_model_load_state(m, n, (const char *const *)names, ts, strict);
    h_free_loaded(n, names, ts, 0, NULL, NULL);
    return rc;
}
static int load_meta_partial(void) {
    char **names, **mk;
    lt_tensor **ts;
    int nmeta;
    return lt_load_safetensors_meta(p_good, &names, &ts, &nmeta, &mk, NULL);
}
static int save_with_freed(void) {
    lt_tensor *ts[1] = {freed()};
    return lt_save_safetensors(p_empty, 1, nm1, ts);
}
static int backward_twice(void) {
    lt_tensor *y = lt_mul(LEAF, LEAF), *l = lt_sum(y, 0, NULL, false);
    int rc = lt_backward(l);
    if (rc == 0) rc = lt_backward(l);
    lt_free(y);
    lt_free(l);
    lt_zero_grad(LEAF);
    return rc;
}
static void trace_null(void) {
    lt_trace_begin(NULL);
    lt_trace_end(); /* the span opened anyway: keep begin and end matched */
}
static lt_tensor *inplace_on_leaf(void) { return lt_add_scalar_(LEAF, 1); }
static void set_requires_grad_nonleaf(void) {
    lt_tensor *y = lt_mul_scalar(LEAF, 2);
    lt_set_requires_grad(y, false);
    lt_free(y);
}
static int optim_state_null(void) {
    const char *names[1];
    return lt_optim_state(O, 1, names, NULL);
}
static int optim_load_state_shape(void) {
    const char *names[1] = {"momentum_buffer.0"};
    lt_tensor *ts[1] = {V3};
    return lt_optim_load_state(O, 1, names, ts);
}
static int optim_load_state_name(void) {
    const char *names[1] = {"exp_avg.0"};
    lt_tensor *ts[1] = {V3};
    return lt_optim_load_state(O, 1, names, ts);
}
static int optim_dup_param(void) {
    lt_tensor **ps;
    lt_model_params(M, &ps, NULL);
    return lt_optim_add_group(O, 1, ps);
}
static lt_optim *sgd_int_param(void) {
    lt_tensor *ps[1] = {I3};
    return lt_optim_sgd(1, ps, 0.1, 0, 0, 0, false);
}
static lt_dataset *imagefolder_two_channels(void) {
    lt_imagefolder_opts o = lt_imagefolder_defaults();
    o.channels = 2;
    return lt_dataset_imagefolder("/tmp", "train", &o);
}
static lt_tensor *model_forward_bad(void) {
    int64_t s[2] = {2, 5};
    lt_tensor *x = lt_ones(LT_F32, 2, s), *y = lt_model_forward(M, x);
    lt_free(x);
    return y;
}

/* ---- the table ---- */
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define ROW(code, fn, arg, call) static int CAT(row_, __LINE__)(void) { return call; }
#include "bad_inputs.def"
#undef ROW

typedef struct row {
    int code;
    const char *fn, *arg, *call;
    int line;
    int (*run)(void);
} row;
#define ROW(code, fn, arg, call) {code, #fn, arg, #call, __LINE__, CAT(row_, __LINE__)},
static const row table[] = {
#include "bad_inputs.def"
};
#undef ROW

/* 'arg' or 'arg[' in the message. */
static int names_arg(const char *m, const char *arg) {
    char q[80];
    snprintf(q, sizeof q, "'%s'", arg);
    if (strstr(m, q)) return 1;
    snprintf(q, sizeof q, "'%s[", arg);
    return strstr(m, q) != NULL;
}
/* "fn:" in the message (so lt_add does not match lt_add_scalar). */
static int names_fn(const char *m, const char *fn) {
    char q[80];
    snprintf(q, sizeof q, "%s:", fn);
    return strstr(m, q) != NULL;
}

static int usable(void) {
    lt_tensor *a = lt_full(1.5, LT_F32, 1, s3), *b = lt_add(a, a);
    float f[3] = {0};
    int ok = b && lt_to_host(b, f, sizeof f) == 0 && f[0] == 3 && f[2] == 3 && !lt_error();
    lt_free(b);
    lt_free(a);
    return ok;
}

TEST(table_rows) {
    int n = (int)(sizeof table / sizeof table[0]);
    for (int i = 0; i < n; i++) {
        const row *r = &table[i];
        lt_clear_error();
        int failed = r->run();
        int e = lt_error();
        char m[512];
        snprintf(m, sizeof m, "%s", lt_error_message());
        if (!failed) h_fail("bad_inputs.def", r->line, "%s did not report failure", r->call);
        if (e != r->code) h_fail("bad_inputs.def", r->line, "%s: expected error %d, got %d (%s)", r->call, r->code, e, m);
        else if (!names_fn(m, r->fn)) h_fail("bad_inputs.def", r->line, "%s: message '%s' does not name %s", r->call, m, r->fn);
        else if (!names_arg(m, r->arg))
            h_fail("bad_inputs.def", r->line, "%s: message '%s' does not name argument '%s'", r->call, m, r->arg);
        lt_clear_error();
        if (!usable()) h_fail("bad_inputs.def", r->line, "library not usable after %s: %s", r->call, lt_error_message());
        lt_clear_error();
    }
    printf("bad_inputs: %d rows\n", n);
}

/* ---- fixture setup ---- */
static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(fwrite(p, 1, n, f) == n);
    fclose(f);
}
static void write_header(const char *path, const char *json, size_t data_bytes) {
    unsigned char buf[512] = {0};
    uint64_t n = strlen(json);
    for (int k = 0; k < 8; k++) buf[k] = (unsigned char)(n >> (8 * k));
    memcpy(buf + 8, json, n);
    write_bytes(path, buf, 8 + n + data_bytes);
}

static void setup(void) {
    A = lt_ones(LT_F32, 2, s23);
    Bm = lt_ones(LT_F32, 2, s32);
    V3 = lt_ones(LT_F32, 1, s3);
    V4 = lt_ones(LT_F32, 1, s4);
    D3 = lt_ones(LT_F64, 1, s3);
    I3 = lt_ones(LT_I32, 1, s3);
    L3 = lt_arange(0, 3, 1, LT_I64);
    Bo3 = lt_ones(LT_BOOL, 1, s3);
    S0 = lt_ones(LT_F32, 0, s3);
    C3 = lt_ones(LT_F32, 3, (int64_t[]){2, 3, 4});
    EXPB = lt_ones(LT_F32, 1, s1);
    EXP = lt_expand(EXPB, 2, s33);
    AT = lt_t(A);
    LEAF = lt_ones(LT_F32, 1, s3);
    lt_set_requires_grad(LEAF, true);
    X = lt_ones(LT_F32, 4, (int64_t[]){1, 2, 5, 5});
    W = lt_ones(LT_F32, 4, (int64_t[]){3, 2, 3, 3});
    LOGP = lt_ones(LT_F32, 2, s23);
    TGT = lt_zeros(LT_I64, 1, (int64_t[]){2});
    IDX2 = lt_zeros(LT_I64, 2, s23);
    E0 = lt_zeros(LT_F32, 1, (int64_t[]){0});
    W3333 = lt_ones(LT_F32, 4, (int64_t[]){3, 3, 3, 3});
    W3277 = lt_ones(LT_F32, 4, (int64_t[]){3, 2, 7, 7});
    XI = lt_ones(LT_I32, 4, (int64_t[]){1, 2, 5, 5});
    XL = lt_ones(LT_I64, 4, (int64_t[]){1, 1, 4, 4});
    BN13 = lt_ones(LT_F32, 2, (int64_t[]){1, 3});
    TF2 = lt_zeros(LT_F32, 1, (int64_t[]){2});
    LI23 = lt_ones(LT_I64, 2, s23);
    M = lt_model_mlp(3, (int64_t[]){4, 3, 2});
    M2 = lt_model_mlp(3, (int64_t[]){5, 3, 2});
    lt_tensor **ps;
    int np = lt_model_params(M, &ps, NULL);
    O = lt_optim_sgd(np, ps, 0.1, 0.9, 0, 0, false);
    SC = lt_sched_step_lr(O, 2, 0.5);
    DS = lt_dataset_fake(16, 1, 4, 2, 0);
    LD = lt_loader_new(DS, 4, 0, true, false);
    CHECK_NO_ERR();

    snprintf(dir, sizeof dir, "/tmp/lt_bad_inputs_XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
#define PATH_(v, name) snprintf(v, sizeof v, "%s/" name, dir)
    PATH_(p_good, "good.safetensors");
    PATH_(p_missing, "missing.safetensors");
    PATH_(p_trunc, "trunc.safetensors");
    PATH_(p_json, "json.safetensors");
    PATH_(p_hugehdr, "hugehdr.safetensors");
    PATH_(p_dtype, "dtype.safetensors");
    PATH_(p_offs, "offs.safetensors");
    PATH_(p_nodir, "no/such/dir/x.safetensors");
    PATH_(p_other, "other.safetensors");
    PATH_(p_empty, "empty.safetensors");
    PATH_(p_dump_bad, "no/such/dir/graph");
#undef PATH_
    /* a good checkpoint of M, and one of another model (M2) */
    lt_tensor **ts;
    const char **names;
    int n = lt_model_state(M, &ts, &names);
    CHECK(lt_save_safetensors(p_good, n, names, ts) == 0);
    n = lt_model_state(M2, &ts, &names);
    CHECK(lt_save_safetensors(p_other, n, names, ts) == 0);
    /* truncated: the good file cut in half */
    FILE *f = fopen(p_good, "rb");
    CHECK(f != NULL);
    if (f) {
        unsigned char buf[4096];
        size_t got = fread(buf, 1, sizeof buf, f);
        fclose(f);
        write_bytes(p_trunc, buf, got / 2);
    }
    write_header(p_json, "{\"x\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]", 4);
    write_bytes(p_hugehdr, "\xff\xff\xff\xff\xff\xff\xff\x7f{}", 10); /* header length 2^63 - 1 */
    write_header(p_dtype, "{\"x\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4);
    write_header(p_offs, "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4);
    CHECK_NO_ERR();
}

static void teardown(void) {
    lt_sched_free(SC);
    lt_loader_free(LD);
    lt_dataset_free(DS);
    lt_optim_free(O);
    lt_model_free(M);
    lt_model_free(M2);
    lt_tensor *all[] = {A, Bm, V3, V4, D3, I3, L3, Bo3, S0, C3, EXP, EXPB, AT, LEAF, X, W, LOGP, TGT, IDX2, E0, W3333, W3277, XI, XL, BN13, TF2, LI23};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) lt_free(all[i]);
    const char *files[] = {p_good, p_trunc, p_json, p_hugehdr, p_dtype, p_offs, p_other, p_empty};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) remove(files[i]);
    rmdir(dir);
}

int main(void) {
    setup();
    RUN(table_rows);
    teardown();
    return h_report();
}
