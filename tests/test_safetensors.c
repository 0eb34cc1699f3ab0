/* safetensors: round trip of every dtype with metadata, the strict JSON
 * parser, rejection of each malformed file, and the atomic write. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include "core/core.h"
#include "io/json.h"

#include <sys/stat.h>
#include <unistd.h>

static char g_path[256];

TEST(round_trip_all_dtypes) {
    float f32[6] = {1.5f, -2, 3, 4, 5, 6};
    double f64[1] = {3.141592653589793};
    int32_t i32[4] = {-1, 0, 7, 2147483647};
    int64_t i64[4] = {-5, 1LL << 40, 0, 9};
    uint8_t b[3] = {1, 0, 1};
    int64_t s23[2] = {2, 3}, s4[1] = {4}, s22[2] = {2, 2}, s3[1] = {3}, s05[2] = {0, 5};
    lt_tensor *ts[6] = {h_f32(2, s23, f32), lt_from_data(f64, LT_F64, 0, NULL), lt_from_data(i32, LT_I32, 1, s4),
                        lt_from_data(i64, LT_I64, 2, s22), lt_from_data(b, LT_BOOL, 1, s3),
                        lt_zeros(LT_F32, 2, s05)};
    const char *names[6] = {"w.f32", "scalar \"f64\"\n", "i32", "layer1.0.i64", "mask", "empty"};
    const char *mk[2] = {"step", "note"}, *mv[2] = {"42", "caf\xc3\xa9 \\ \"q\""};
    CHECK(lt_save_safetensors_meta(g_path, 6, names, ts, 2, mk, mv) == 0);
    CHECK_NO_ERR();
    char **ln, **lk, **lv;
    lt_tensor **lts;
    int nm = -1;
    int n = lt_load_safetensors_meta(g_path, &ln, &lts, &nm, &lk, &lv);
    CHECK(n == 6);
    CHECK(nm == 2);
    if (n != 6 || nm != 2) return;
    for (int i = 0; i < 6; i++) {
        CHECK_MSG(!strcmp(ln[i], names[i]), "name %d: %s", i, ln[i]);
        CHECK(lt_dtype_of(lts[i]) == lt_dtype_of(ts[i]));
        CHECK(lt_ndim(lts[i]) == lt_ndim(ts[i]));
        CHECK(!memcmp(lt_shape(lts[i]), lt_shape(ts[i]), sizeof(int64_t) * (size_t)lt_ndim(ts[i])));
    }
    EXPECT_VALUES(lts[0], 0, 1.5, -2, 3, 4, 5, 6);
    EXPECT_VALUES(lts[1], 0, 3.141592653589793);
    EXPECT_VALUES(lts[2], 0, -1, 0, 7, 2147483647);
    EXPECT_VALUES(lts[3], 0, -5, (double)(1LL << 40), 0, 9);
    EXPECT_VALUES(lts[4], 0, 1, 0, 1);
    CHECK(lt_numel(lts[5]) == 0);
    CHECK(!strcmp(lk[0], "step") && !strcmp(lv[0], "42"));
    CHECK(!strcmp(lk[1], "note") && !strcmp(lv[1], mv[1]));
    h_free_loaded(n, ln, lts, 2, lk, lv);
    /* The plain loader ignores metadata. */
    n = lt_load_safetensors(g_path, &ln, &lts);
    CHECK(n == 6);
    if (n > 0) h_free_loaded(n, ln, lts, 0, NULL, NULL);
    for (int i = 0; i < 6; i++) lt_free(ts[i]);
    CHECK_NO_ERR();
}

TEST(header_layout) {
    /* The header is padded to 8 bytes and the data follows it, as the
     * reference implementation writes and expects. */
    float v[2] = {1, 2};
    int64_t s[1] = {2};
    lt_tensor *t = h_f32(1, s, v);
    const char *nm[1] = {"x"};
    CHECK(lt_save_safetensors(g_path, 1, nm, &t) == 0);
    FILE *f = fopen(g_path, "rb");
    unsigned char buf[256];
    size_t got = fread(buf, 1, sizeof buf, f);
    fclose(f);
    uint64_t hl = 0;
    for (int k = 7; k >= 0; k--) hl = (hl << 8) | buf[k];
    CHECK(hl % 8 == 0);
    CHECK(got == 8 + hl + 8);
    CHECK(!memcmp(buf + 8, "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 52));
    float back[2];
    memcpy(back, buf + 8 + hl, 8);
    CHECK(back[0] == 1 && back[1] == 2);
    lt_free(t);
}

/* bfloat16 is "BF16": two bytes an element, the bits kept exactly. */
TEST(bf16_round_trip) {
    uint16_t v[3] = {0x3fc0 /* 1.5 */, 0xff80 /* -inf */, 0x7fc1 /* a NaN */};
    int64_t s[1] = {3};
    lt_tensor *t = lt_from_data(v, LT_BF16, 1, s);
    const char *nm[1] = {"h"};
    CHECK(lt_save_safetensors(g_path, 1, nm, &t) == 0);
    FILE *f = fopen(g_path, "rb");
    unsigned char buf[256];
    size_t got = fread(buf, 1, sizeof buf, f);
    fclose(f);
    uint64_t hl = 0;
    for (int k = 7; k >= 0; k--) hl = (hl << 8) | buf[k];
    CHECK(got == 8 + hl + 6);
    CHECK(!memcmp(buf + 8, "{\"h\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[0,6]}}", 53));
    char **ln;
    lt_tensor **lts;
    int n = lt_load_safetensors(g_path, &ln, &lts);
    CHECK(n == 1);
    if (n == 1) {
        uint16_t back[3] = {0};
        CHECK(lt_dtype_of(lts[0]) == LT_BF16);
        CHECK(lt_to_host(lts[0], back, sizeof back) == 0);
        CHECK(!memcmp(back, v, sizeof v));
        h_free_loaded(n, ln, lts, 0, NULL, NULL);
    }
    lt_free(t);
}

/* uint8 (images) is safetensors' "U8": every byte value comes back as is. */
TEST(u8_round_trip) {
    uint8_t v[4] = {0, 1, 128, 255};
    int64_t s[2] = {2, 2};
    lt_tensor *t = lt_from_data(v, LT_U8, 2, s);
    const char *nm[1] = {"img"};
    CHECK(lt_save_safetensors(g_path, 1, nm, &t) == 0);
    FILE *f = fopen(g_path, "rb");
    unsigned char buf[256];
    size_t got = fread(buf, 1, sizeof buf, f);
    fclose(f);
    uint64_t hl = 0;
    for (int k = 7; k >= 0; k--) hl = (hl << 8) | buf[k];
    CHECK(got == 8 + hl + 4);
    CHECK(!memcmp(buf + 8, "{\"img\":{\"dtype\":\"U8\",\"shape\":[2,2],\"data_offsets\":[0,4]}}", 57));
    char **ln;
    lt_tensor **lts;
    int n = lt_load_safetensors(g_path, &ln, &lts);
    CHECK(n == 1);
    if (n == 1) {
        uint8_t back[4] = {0};
        CHECK(lt_dtype_of(lts[0]) == LT_U8);
        CHECK(lt_to_host(lts[0], back, sizeof back) == 0);
        CHECK(!memcmp(back, v, sizeof v));
        h_free_loaded(n, ln, lts, 0, NULL, NULL);
    }
    lt_free(t);
}

static int parses(const char *s) {
    json v;
    char err[128];
    int rc = json_parse(s, strlen(s), &v, err, sizeof err);
    if (!rc) json_free(&v);
    return rc == 0;
}

TEST(json_strict) {
    json v;
    char err[128];
    const char *ok = " {\"a\\u00e9\\ud83d\\ude00\\n\": [1, -2.5e3, true, false, null, {}, []], \"b\": 18446744073709551615} ";
    CHECK(json_parse(ok, strlen(ok), &v, err, sizeof err) == 0);
    CHECK(v.kind == JSON_OBJ && v.n == 2);
    CHECK(!strcmp(v.keys[0], "a\xc3\xa9\xf0\x9f\x98\x80\n"));
    const json *a = json_get(&v, "a\xc3\xa9\xf0\x9f\x98\x80\n");
    CHECK(a && a->kind == JSON_ARR && a->n == 7);
    CHECK(a->items[0].is_uint && a->items[0].u == 1);
    CHECK(!a->items[1].is_uint && a->items[1].num == -2500);
    const json *b = json_get(&v, "b");
    CHECK(b && b->is_uint && b->u == UINT64_MAX);
    json_free(&v);
    const char *bad[] = {"{\"a\":1,}", "[1,]", "{\"a\":01}", "{'a':1}", "{\"a\":1} x", "{\"a\":1,\"a\":2}",
                         "{\"a\":\"\x01\"}", "{\"a\":\"\\ud800\"}", "{\"a\":\"\\x\"}", "{\"a\":\"\xc3\x28\"}",
                         "{\"a\":1.}", "{\"a\":-}", "{\"a\":tru}", "/*c*/{}", "", "{\"a\"", "{\"a\":\"abc",
                         "{\"a\":\"\xed\xa0\x80\"}", "{\"a\":\"\xc0\xaf\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK_MSG(!parses(bad[i]), "accepted bad JSON %zu", i);
    char deep[200];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    json dv;
    CHECK(json_parse(deep, 200, &dv, err, sizeof err) != 0); /* deeper than JSON_MAX_DEPTH */
    CHECK(json_parse(deep + 40, 120, &dv, err, sizeof err) == 0); /* 60 deep is fine */
    json_free(&dv);
    CHECK_NO_ERR();
}

/* Writes a file from a header string and n data bytes (value 0x01). */
static void write_raw(const char *hdr, uint64_t hlen_claim, size_t ndata) {
    FILE *f = fopen(g_path, "wb");
    unsigned char len8[8];
    for (int k = 0; k < 8; k++) len8[k] = (unsigned char)(hlen_claim >> (8 * k));
    fwrite(len8, 1, 8, f);
    fwrite(hdr, 1, strlen(hdr), f);
    for (size_t i = 0; i < ndata; i++) fputc(1, f);
    fclose(f);
}

static void expect_reject(const char *hdr, size_t ndata, const char *why, int line) {
    write_raw(hdr, strlen(hdr), ndata);
    char **names;
    lt_tensor **ts;
    int n = lt_load_safetensors(g_path, &names, &ts);
    if (n >= 0) {
        h_fail(__FILE__, line, "accepted a malformed file (%s)", why);
        h_free_loaded(n, names, ts, 0, NULL, NULL);
        return;
    }
    if (lt_error() != LT_ERR_FORMAT) h_fail(__FILE__, line, "(%s) error %d: %s", why, lt_error(), lt_error_message());
    else if (!strstr(lt_error_message(), g_path)) h_fail(__FILE__, line, "message lacks the path: %s", lt_error_message());
    else if (!strstr(lt_error_message(), why)) h_fail(__FILE__, line, "message '%s' lacks '%s'", lt_error_message(), why);
    if (names || ts) h_fail(__FILE__, line, "outputs not NULL on failure");
    lt_clear_error();
}
#define REJECT(hdr, ndata, why) expect_reject((hdr), (ndata), (why), __LINE__)

TEST(rejects_malformed) {
    const char *x8 = "\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}";
    char h[512];
    REJECT("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", 8, "not valid JSON");
    REJECT("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},}", 8, "not valid JSON");
    REJECT("[1,2,3]  ", 0, "start with '{'");
    REJECT("{\"x\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "unknown or unsupported dtype");
    REJECT("{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "need 12");
    REJECT("{\"x\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "shape entry 0");
    REJECT("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8.0]}}", 8, "not [begin, end]");
    REJECT("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "before begin");
    REJECT("{\"x\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "exactly the keys");
    REJECT("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"y\":1}}", 8, "exactly the keys");
    REJECT("{\"x\":[1]}", 0, "not an object");
    snprintf(h, sizeof h, "{%s,\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", x8);
    REJECT(h, 12, "overlaps");
    snprintf(h, sizeof h, "{%s,\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}", x8);
    REJECT(h, 20, "gap");
    snprintf(h, sizeof h, "{%s}", x8);
    REJECT(h, 6, "past the data section");       /* truncated data */
    REJECT(h, 12, "cover 8 bytes");               /* bytes no tensor owns */
    REJECT("{\"x\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[0,2]}}", 0, "past the data section");
    snprintf(h, sizeof h, "{\"__metadata__\":{\"step\":3},%s}", x8);
    REJECT(h, 8, "not a string");
    snprintf(h, sizeof h, "{\"__metadata__\":[],%s}", x8);
    REJECT(h, 8, "__metadata__ is not an object");
    snprintf(h, sizeof h, "{%s,%s}", x8, x8);
    REJECT(h, 8, "duplicate key");

    /* Length prefix problems. */
    char **names;
    lt_tensor **ts;
    write_raw("", 0, 0);
    FILE *f = fopen(g_path, "wb");
    fwrite("abc", 1, 3, f);
    fclose(f);
    CHECK(lt_load_safetensors(g_path, &names, &ts) == -1);
    CHECK(strstr(lt_error_message(), "truncated") != NULL);
    CHECK_ERR(LT_ERR_FORMAT);
    f = fopen(g_path, "wb"); /* a text file: said so, not read as a huge header length */
    fputs("hello world, this is not a tensor file\n", f);
    fclose(f);
    CHECK(lt_load_safetensors(g_path, &names, &ts) == -1);
    CHECK_MSG(strstr(lt_error_message(), "not a safetensors file") != NULL, "%s", lt_error_message());
    CHECK_ERR(LT_ERR_FORMAT);
    write_raw("{}", 200000000ull, 0);
    CHECK(lt_load_safetensors(g_path, &names, &ts) == -1);
    CHECK(strstr(lt_error_message(), "exceeds the limit") != NULL);
    CHECK_ERR(LT_ERR_FORMAT);
    write_raw("{\"x\":{", 4096, 0);
    CHECK(lt_load_safetensors(g_path, &names, &ts) == -1);
    CHECK(strstr(lt_error_message(), "truncated") != NULL);
    CHECK_ERR(LT_ERR_FORMAT);
    CHECK(lt_load_safetensors("/nonexistent/dir/x.safetensors", &names, &ts) == -1);
    CHECK(strstr(lt_error_message(), "/nonexistent/dir/x.safetensors") != NULL);
    CHECK_ERR(LT_ERR_IO);
}

TEST(bool_bytes_checked) {
    /* A BOOL byte other than 0/1 would be undefined behaviour as a C bool. */
    const char *hdr = "{\"m\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[0,2]}}";
    write_raw(hdr, strlen(hdr), 0);
    FILE *f = fopen(g_path, "ab");
    fputc(0, f);
    fputc(2, f);
    fclose(f);
    char **names;
    lt_tensor **ts;
    CHECK(lt_load_safetensors(g_path, &names, &ts) == -1);
    CHECK(strstr(lt_error_message(), "must be 0 or 1") != NULL);
    CHECK_ERR(LT_ERR_FORMAT);
}

static int file_holds(const char *path, double first) {
    char **names;
    lt_tensor **ts;
    int n = lt_load_safetensors(path, &names, &ts);
    if (n != 1) return 0;
    lt_tensor *e = lt_select(ts[0], 0, 0);
    double v = lt_item(e);
    lt_free(e);
    h_free_loaded(n, names, ts, 0, NULL, NULL);
    return v == first;
}

TEST(atomic_write) {
    int64_t s[1] = {3};
    float a[3] = {1, 2, 3}, b[3] = {9, 8, 7};
    lt_tensor *ta = h_f32(1, s, a), *tb = h_f32(1, s, b);
    const char *nm[1] = {"t"};
    CHECK(lt_save_safetensors(g_path, 1, nm, &ta) == 0);
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp", g_path);
    /* Fail every allocation of a second save in turn: each failure leaves the
     * previous file intact and no temporary behind. */
    int failures = 0;
    for (int k = 1; k < 40; k++) {
        core_alloc_fail_at(k);
        int rc = lt_save_safetensors(g_path, 1, nm, &tb);
        core_alloc_fail_at(0);
        if (rc == 0) {
            CHECK(file_holds(g_path, 9));
            CHECK(lt_save_safetensors(g_path, 1, nm, &ta) == 0);
            break;
        }
        failures++;
        CHECK_ERR(LT_ERR_OOM);
        CHECK(access(tmp, F_OK) != 0);
        CHECK(file_holds(g_path, 1));
    }
    CHECK(failures > 0);
    /* A temporary that cannot be created: IO error, old file intact. */
    CHECK(mkdir(tmp, 0700) == 0);
    CHECK(lt_save_safetensors(g_path, 1, nm, &tb) == -1);
    CHECK(strstr(lt_error_message(), ".tmp") != NULL);
    CHECK_ERR(LT_ERR_IO);
    CHECK(file_holds(g_path, 1));
    rmdir(tmp);
    /* Bad arguments are named. */
    const char *dup[2] = {"t", "t"};
    lt_tensor *two[2] = {ta, tb};
    CHECK(lt_save_safetensors(g_path, 2, dup, two) == -1);
    CHECK_ERR(LT_ERR_ARG);
    CHECK(lt_save_safetensors(g_path, 1, nm, (lt_tensor *[1]){NULL}) == -1);
    CHECK_ERR(LT_ERR_NULL);
    lt_free(ta);
    lt_free(tb);
}

int main(void) {
    snprintf(g_path, sizeof g_path, "st_test_%d.safetensors", (int)getpid());
    RUN(round_trip_all_dtypes);
    RUN(header_layout);
    RUN(bf16_round_trip);
    RUN(u8_round_trip);
    RUN(json_strict);
    RUN(rejects_malformed);
    RUN(bool_bytes_checked);
    RUN(atomic_write);
    remove(g_path);
    return h_report();
}
