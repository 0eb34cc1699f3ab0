/* Observability (DESIGN 8): the metrics report after a known program, the
 * reason of an uncached compile, the recompile warning, the IR dump against
 * committed files, and the Chrome trace file of a child process that runs
 * with the switches on (they are read once per process, so the child is
 * this binary re-executed with the environment set), parsed as JSON. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[64];

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

/* tests/data/NAME, found next to this source file. */
static const char *data_path(const char *name) {
    static char buf[1024];
    const char *slash = strrchr(__FILE__, '/');
    int dirlen = slash ? (int)(slash - __FILE__) : 1;
    snprintf(buf, sizeof buf, "%.*s/data/%s", dirlen, slash ? __FILE__ : ".", name);
    return buf;
}

/* ---- a tiny JSON parser: enough to check validity and read the events ---- */
enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };
typedef struct jval {
    enum jtype type;
    double num;
    char *str;           /* J_STR */
    int n;               /* J_ARR / J_OBJ: element count */
    char **keys;         /* J_OBJ */
    struct jval **items; /* J_ARR / J_OBJ */
} jval;

static const char *jp;
static int jerr;

static void ws(void) {
    while (*jp == ' ' || *jp == '\n' || *jp == '\r' || *jp == '\t') jp++;
}

static char *jstring(void) {
    if (*jp != '"') return jerr = 1, NULL;
    jp++;
    size_t cap = 16, len = 0;
    char *s = malloc(cap);
    while (*jp != '"') {
        char c = *jp;
        if (!c || (unsigned char)c < 0x20) return free(s), jerr = 1, NULL;
        if (c == '\\') {
            jp++;
            switch (*jp) {
            case '"': case '\\': case '/': c = *jp; break;
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'u':
                for (int i = 1; i <= 4; i++)
                    if (!jp[i] || !strchr("0123456789abcdefABCDEF", jp[i])) return free(s), jerr = 1, NULL;
                c = '?'; /* the checker only needs ASCII names */
                jp += 4;
                break;
            default: return free(s), jerr = 1, NULL;
            }
        }
        if (len + 2 > cap) s = realloc(s, cap *= 2);
        s[len++] = c;
        jp++;
    }
    jp++;
    s[len] = 0;
    return s;
}

static jval *jvalue(int depth) {
    ws();
    if (depth > 64) return jerr = 1, NULL;
    jval *v = calloc(1, sizeof *v);
    if (*jp == '{' || *jp == '[') {
        int obj = *jp == '{';
        char close = obj ? '}' : ']';
        v->type = obj ? J_OBJ : J_ARR;
        jp++;
        ws();
        if (*jp == close) {
            jp++;
            return v;
        }
        for (;;) {
            ws();
            /* the slot is counted first, so jfree sees whatever was parsed */
            v->items = realloc(v->items, (size_t)(v->n + 1) * sizeof *v->items);
            v->items[v->n] = NULL;
            if (obj) {
                v->keys = realloc(v->keys, (size_t)(v->n + 1) * sizeof *v->keys);
                v->keys[v->n] = NULL;
            }
            int at = v->n++;
            if (obj) {
                v->keys[at] = jstring();
                if (jerr) return v;
                ws();
                if (*jp != ':') return jerr = 1, v; /* never step past the terminating NUL */
                jp++;
            }
            v->items[at] = jvalue(depth + 1);
            if (jerr) return v;
            ws();
            if (*jp == ',') {
                jp++;
                continue;
            }
            if (*jp != close) return jerr = 1, v;
            jp++;
            return v;
        }
    }
    if (*jp == '"') {
        v->type = J_STR;
        v->str = jstring();
        return v;
    }
    if (!strncmp(jp, "true", 4) || !strncmp(jp, "null", 4)) {
        v->type = *jp == 't' ? J_BOOL : J_NULL;
        v->num = *jp == 't';
        jp += 4;
        return v;
    }
    if (!strncmp(jp, "false", 5)) {
        v->type = J_BOOL;
        jp += 5;
        return v;
    }
    /* JSON numbers: -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)? */
    const char *s = jp;
    if (*jp == '-') jp++;
    if (*jp == '0') jp++;
    else if (*jp >= '1' && *jp <= '9') while (*jp >= '0' && *jp <= '9') jp++;
    else return jerr = 1, v;
    if (*jp == '.') {
        jp++;
        if (!(*jp >= '0' && *jp <= '9')) return jerr = 1, v;
        while (*jp >= '0' && *jp <= '9') jp++;
    }
    if (*jp == 'e' || *jp == 'E') {
        jp++;
        if (*jp == '+' || *jp == '-') jp++;
        if (!(*jp >= '0' && *jp <= '9')) return jerr = 1, v;
        while (*jp >= '0' && *jp <= '9') jp++;
    }
    v->type = J_NUM;
    v->num = strtod(s, NULL);
    return v;
}

static void jfree(jval *v);

static jval *json_parse(const char *text) {
    jp = text;
    jerr = 0;
    jval *v = jvalue(0);
    if (!jerr) {
        ws();
        if (*jp) jerr = 1; /* trailing garbage */
    }
    if (!jerr) return v;
    jfree(v); /* the partial tree */
    return NULL;
}

static jval *jget(const jval *o, const char *key) {
    if (!o || o->type != J_OBJ) return NULL;
    for (int i = 0; i < o->n; i++)
        if (o->keys[i] && !strcmp(o->keys[i], key)) return o->items[i];
    return NULL;
}

static void jfree(jval *v) {
    if (!v) return;
    for (int i = 0; i < v->n; i++) {
        if (v->keys) free(v->keys[i]);
        jfree(v->items[i]);
    }
    free(v->keys);
    free(v->items);
    free(v->str);
    free(v);
}

TEST(json_checker_rejects_bad_json) {
    /* The checker below must be able to fail, or the trace test proves nothing. */
    const char *bad[] = {"{\"a\":1", "[1,]", "{\"a\" 1}", "[1] x", "{\"a\":01}", "[\"\\q\"]", "{\"a\":[1,2}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) CHECK_MSG(!json_parse(bad[i]), "accepted %s", bad[i]);
    jval *v = json_parse("{\"a\": [1, -2.5e3, \"x\\\"y\", true, null, {}]}");
    CHECK(v && jget(v, "a") && jget(v, "a")->n == 6 && jget(v, "a")->items[1]->num == -2500);
    jfree(v);
}

/* ---- the in-process tests ---- */

static const char *metric_names[] = {
    "MarkStep", "CachedCompile", "UncachedCompile", "CompileTime", "ExecuteTime", "SyncTime", "TraceTime",
    "TensorsGraphSize", "InputOutputAliasCount", "TransferFromDeviceTime", "TransferToDeviceTime", "OpsTraced",
    "IrNodes", "FusedKernels", "FallbackOps", "AutoSync", "PeakBytes", "ArenaBytes", "CacheEvictions",
    "RecompileWarnings", "ExecutedFlops"};

TEST(report_after_ten_identical_steps) {
    lt_metrics_reset();
    int64_t s[2] = {2, 3};
    float xv[6] = {0, 1, 2, 3, 4, 5}, gv[6] = {10, 10, 10, 10, 10, 10};
    lt_tensor *x = h_f32(2, s, xv), *g = h_f32(2, s, gv);
    for (int i = 0; i < 10; i++) {
        lt_lerp_(x, g, 0.5);
        lt_mark_step();
    }
    float out[6];
    CHECK(lt_to_host(x, out, sizeof out) == 0);
    CHECK(fabsf(out[0] - 10.0f * (1 - 1.0f / 1024)) < 1e-4f);
    CHECK(lt_metric("MarkStep") == 10);
    CHECK(lt_metric("UncachedCompile") == 1);
    CHECK(lt_metric("CachedCompile") == 9);
    CHECK(lt_metric("OpsTraced") == 10);
    CHECK(lt_metric("CompileTime.count") == 1);
    CHECK(lt_metric("CompileTime") > 0);
    CHECK(lt_metric("ExecuteTime.count") == 10);
    CHECK(lt_metric("ExecuteTime.p50") > 0 && lt_metric("ExecuteTime.p50") <= lt_metric("ExecuteTime.max"));
    CHECK(lt_metric("ExecuteTime.p99") <= lt_metric("ExecuteTime.max"));
    CHECK(lt_metric("ExecuteTime.max") <= lt_metric("ExecuteTime"));
    CHECK(lt_metric("TraceTime.count") == 10);
    CHECK(lt_metric("TraceTime") > 0);
    /* Every step is the same graph (two inputs and the lerp). */
    double gs = lt_metric("TensorsGraphSize");
    CHECK(lt_metric("TensorsGraphSize.count") == 10);
    CHECK(gs == 10 * lt_metric("TensorsGraphSize.p50") && lt_metric("TensorsGraphSize.p50") == 3);
    CHECK(lt_metric("IrNodes") >= 30);
    CHECK(lt_metric("TransferToDeviceTime.count") == 2);
    CHECK(lt_metric("TransferFromDeviceTime.count") == 1);
    CHECK(lt_metric("PeakBytes") >= 2 * sizeof xv);
    CHECK(lt_metric("ArenaBytes") > 0);
    CHECK(lt_metric("RecompileWarnings") == 0);
    CHECK(isnan(lt_metric("NoSuchMetric")) && isnan(lt_metric("MarkStep.p50")) && isnan(lt_metric("CompileTime.q")));

    const char *r = lt_metrics_report();
    for (size_t i = 0; i < sizeof metric_names / sizeof *metric_names; i++) {
        CHECK_MSG(strstr(r, metric_names[i]), "report lacks %s", metric_names[i]);
        CHECK_MSG(!isnan(lt_metric(metric_names[i])), "lt_metric(%s) is NaN", metric_names[i]);
    }
    CHECK_MSG(strstr(r, "(1 compiles;"), "report:\n%s", r);
    CHECK_MSG(strstr(r, "#1 step 0: first sight of a graph"), "report:\n%s", r);
    CHECK(!strstr(r, "#2 step"));
    /* The counters' lines carry their values. */
    CHECK(strstr(r, "CachedCompile                         9\n"));
    CHECK(strstr(r, "UncachedCompile                       1\n"));

    lt_metrics_reset();
    CHECK(lt_metric("MarkStep") == 0 && lt_metric("CompileTime.count") == 0 && lt_metric("IrNodes") == 0);
    CHECK(!strstr(lt_metrics_report(), "#1 step"));
    lt_free(x);
    lt_free(g);
}

TEST(reason_names_changed_input_and_shapes) {
    int64_t s23[2] = {2, 3}, s43[2] = {4, 3}, s3[1] = {3};
    lt_tensor *x = lt_zeros(LT_F32, 2, s23), *y = lt_zeros(LT_F32, 2, s43), *g = lt_ones(LT_F32, 1, s3);
    lt_mark_step();
    lt_lerp_(x, g, 0.5);
    lt_mark_step();
    lt_metrics_reset(); /* the reasons from here on are this test's */
    lt_lerp_(y, g, 0.5); /* only input %0 changes: g broadcasts to both */
    lt_mark_step();
    CHECK(lt_metric("UncachedCompile") >= 1);
    const char *r = lt_metrics_report();
    CHECK_MSG(strstr(r, "input %0 (parameter 0) changed float32[2, 3] -> float32[4, 3]\n"), "report:\n%s", r);
    CHECK_MSG(!strstr(r, "input %1"), "g did not change:\n%s", r);

    lt_add_(x, g); /* same wiring as lerp_, another op: a structural difference */
    lt_mark_step();
    r = lt_metrics_report();
    CHECK_MSG(strstr(r, "first sight of this structure") &&
                  strstr(r, "differs at %2: ADD float32[2, 3](%0, %1) vs LERP"),
              "report:\n%s", r);

    lt_mul_scalar_(x, 1.0); /* 1 is baked into the graph ... */
    lt_mark_step();
    lt_mul_scalar_(x, 3.0); /* ... 3 is a runtime parameter: a different graph */
    lt_mark_step();
    r = lt_metrics_report();
    CHECK_MSG(strstr(r, "scalar 0 of %1 MUL_SCALAR changed 1 -> runtime (3)"), "report:\n%s", r);
    lt_free(x);
    lt_free(y);
    lt_free(g);
}

TEST(recompile_warning_after_warmup) {
    lt_metrics_reset();
    int64_t s[1] = {4};
    lt_tensor *g = lt_ones(LT_F32, 1, s), *x = lt_zeros(LT_F32, 1, s);
    for (int i = 0; i < 30; i++) {
        lt_add_(x, g);
        lt_mark_step();
    }
    CHECK(lt_metric("RecompileWarnings") == 0); /* stable after warm-up */
    for (int i = 1; i <= 8; i++) {
        int64_t si[1] = {i + 10};
        lt_tensor *z = lt_zeros(LT_F32, 1, si);
        lt_add_scalar_(z, 2.0);
        lt_mark_step();
        lt_free(z);
    }
    /* 8 new shapes in 8 steps: one warning, then quiet for a window. */
    CHECK(lt_metric("RecompileWarnings") == 1);
    lt_free(g);
    lt_free(x);
}

TEST(ir_dump_matches_expected) {
    int64_t s[2] = {2, 3}, s3[1] = {3};
    float av[6] = {1, -2, 3, -4, 5, -6}, bv[3] = {1, 1, 1};
    lt_tensor *a = h_f32(2, s, av), *b = h_f32(1, s3, bv);
    lt_tensor *c = lt_lerp(a, b, 0.25);
    lt_tensor *d = lt_relu(c);
    int axes[1] = {1};
    lt_tensor *sum = lt_sum(d, 1, axes, false);
    lt_tensor *row = lt_select(d, 0, 1); /* a view: its strided read */
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s/dump", tmpdir);
    lt_tensor *roots[3] = {d, sum, row};
    CHECK(lt_graph_dump(prefix, 3, roots) == 0);
    const char *ext[2] = {"txt", "dot"};
    for (int i = 0; i < 2; i++) {
        char path[160], name[64];
        snprintf(path, sizeof path, "%s.%s", prefix, ext[i]);
        snprintf(name, sizeof name, "observe_dump.%s", ext[i]);
        char *got = read_file(path), *want = read_file(data_path(name));
        CHECK_MSG(got && want, "missing %s or %s", path, data_path(name));
        if (got && want) CHECK_MSG(!strcmp(got, want), "%s differs from %s:\n%s", path, data_path(name), got);
        free(got);
        free(want);
        remove(path);
    }
    /* Dumping runs nothing and changes nothing. */
    /* lerp = 0.75 a + 0.25: [1, -1.25, 2.5, -2.75, 4, -4.25]; relu; row sums */
    EXPECT_VALUES(sum, 1e-6, 3.5, 4);
    EXPECT_VALUES(row, 1e-6, 0, 4, 0);
    CHECK(lt_graph_dump(NULL, 1, roots) == -1);
    CHECK_ERR(LT_ERR_NULL);
    CHECK(lt_graph_dump(prefix, 0, roots) == -1);
    CHECK_ERR(LT_ERR_ARG);
    CHECK(lt_graph_dump("/nonexistent-dir/x", 1, roots) == -1);
    CHECK_ERR(LT_ERR_IO);
    lt_free(a);
    lt_free(b);
    lt_free(c);
    lt_free(d);
    lt_free(sum);
    lt_free(row);
}

/* ---- the child: runs with LT_TRACE_FILE, LT_TRACE_KERNELS, LT_DUMP_IR, LT_METRICS ---- */

static int child_main(void) {
    lt_trace_begin("training");
    int64_t s[2] = {2, 3};
    lt_tensor *x = lt_zeros(LT_F32, 2, s), *g = lt_ones(LT_F32, 2, s);
    lt_mark_step();
    for (int i = 0; i < 3; i++) {
        lt_trace_begin("forward \"quoted\"");
        lt_lerp_(x, g, 0.5);
        lt_trace_end();
        lt_mark_step();
    }
    lt_trace_end();
    lt_trace_begin("left open"); /* closed by the exit handler */
    lt_free(x);
    lt_free(g);
    return lt_error() ? 1 : 0;
}

typedef struct span {
    const char *name;
    double ts, dur;
    int tid;
    double step; /* args.step, or -1 */
} span;

static int spawn_child(const char *trace, const char *irdir, const char *errfile) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("LT_TRACE_FILE", trace, 1);
        setenv("LT_TRACE_KERNELS", "1", 1);
        setenv("LT_DUMP_IR", irdir, 1);
        setenv("LT_METRICS", "1", 1);
        if (!freopen(errfile, "w", stderr)) _exit(126);
        execl("/proc/self/exe", "test_observability", "--child", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The first span after `after` (by start time) named `name` on tid 1
 * inside [lo, hi]; NULL if none. */
static const span *find(const span *sp, int n, const char *name, double after, double lo, double hi) {
    const span *best = NULL;
    for (int i = 0; i < n; i++) {
        const span *x = &sp[i];
        if (strcmp(x->name, name) || x->ts < after || x->ts < lo || x->ts + x->dur > hi + 2e-3) continue;
        if (!best || x->ts < best->ts) best = x;
    }
    return best;
}

TEST(trace_file_is_json_with_spans_in_order) {
    char trace[128], irdir[128], errfile[128];
    snprintf(trace, sizeof trace, "%s/trace.json", tmpdir);
    snprintf(irdir, sizeof irdir, "%s/ir", tmpdir);
    snprintf(errfile, sizeof errfile, "%s/stderr.txt", tmpdir);
    CHECK(spawn_child(trace, irdir, errfile) == 0);

    char *text = read_file(trace);
    CHECK_MSG(text, "no trace file %s", trace);
    if (!text) return;
    jval *root = json_parse(text);
    CHECK_MSG(root, "trace file is not valid JSON near offset %ld", (long)(jp - text));
    jval *ev = jget(root, "traceEvents");
    CHECK(ev && ev->type == J_ARR);
    span sp[512];
    int n = 0;
    for (int i = 0; ev && i < ev->n && n < 512; i++) {
        jval *e = ev->items[i], *ph = jget(e, "ph"), *name = jget(e, "name");
        CHECK(ph && ph->type == J_STR && name && name->type == J_STR && jget(e, "pid") && jget(e, "tid"));
        if (!ph || strcmp(ph->str, "X")) continue;
        jval *ts = jget(e, "ts"), *dur = jget(e, "dur"), *step = jget(jget(e, "args"), "step");
        CHECK(ts && ts->type == J_NUM && dur && dur->type == J_NUM && dur->num >= 0);
        if (!ts || !dur) continue;
        if (!strcmp(name->str, "LERP")) { /* a kernel: its node in the optimized graph, dtype and shape */
            jval *node = jget(jget(e, "args"), "node"), *type = jget(jget(e, "args"), "type");
            CHECK(node && node->type == J_NUM && type && type->type == J_STR && !strcmp(type->str, "float32[2, 3]"));
        }
        sp[n++] = (span){name->str, ts->num, dur->num, (int)jget(e, "tid")->num, step ? step->num : -1};
    }
    /* Step 1 (the first lerp_) compiles; step 2 hits the cache. */
    for (int k = 1; k <= 2; k++) {
        const span *st = NULL;
        for (int i = 0; i < n; i++)
            if (!strcmp(sp[i].name, "step") && sp[i].step == k) st = &sp[i];
        CHECK_MSG(st, "no span for step %d", k);
        if (!st) continue;
        double lo = st->ts, hi = st->ts + st->dur, t = lo;
        const char *order[] = {"trace", "sync", "graph key", "cache lookup", "compile", "execute", "LERP"};
        for (int j = 0; j < 7; j++) {
            if (k == 2 && !strcmp(order[j], "compile")) {
                CHECK_MSG(!find(sp, n, "compile", lo, lo, hi), "step 2 should hit the cache");
                continue;
            }
            const span *x = find(sp, n, order[j], t, lo, hi);
            CHECK_MSG(x, "step %d: no '%s' span after t=%.3f inside the step", k, order[j], t);
            if (x) t = x->ts;
        }
        if (k == 1) {
            const span *c = find(sp, n, "compile", lo, lo, hi);
            CHECK(c && find(sp, n, "build graph", c->ts, c->ts, c->ts + c->dur) &&
                  find(sp, n, "backend compile", c->ts, c->ts, c->ts + c->dur));
        }
    }
    /* User spans: on their own track, nested, names escaped, the open one closed at exit. */
    const span *tr = NULL, *fw = NULL, *lo = NULL;
    for (int i = 0; i < n; i++) {
        if (sp[i].tid != 2) continue;
        if (!strcmp(sp[i].name, "training")) tr = &sp[i];
        if (!strcmp(sp[i].name, "forward \"quoted\"") && !fw) fw = &sp[i];
        if (!strcmp(sp[i].name, "left open")) lo = &sp[i];
    }
    CHECK(tr && fw && lo);
    if (tr && fw) CHECK(fw->ts >= tr->ts && fw->ts + fw->dur <= tr->ts + tr->dur + 2e-3);
    jfree(root);
    free(text);
    remove(trace);

    /* LT_DUMP_IR: two graphs compiled (the zeros/ones fills, then the lerp_),
     * each also as the cpu backend's optimized copy. */
    char path[192];
    for (int k = 1; k <= 3; k++) {
        for (int dot = 0; dot < 4; dot++) {
            snprintf(path, sizeof path, "%s/graph_%04d%s.%s", irdir, k, dot > 1 ? "_optimized" : "",
                     dot % 2 ? "dot" : "txt");
            char *f = read_file(path);
            CHECK_MSG((f != NULL) == (k <= 2), "%s: %s", path, f ? "unexpected" : "missing");
            if (f && k == 2 && !dot) CHECK_MSG(strstr(f, "LERP float32[2, 3](%0, %1) sc=[$0=0.5]"), "%s:\n%s", path, f);
            free(f);
            remove(path);
        }
    }
    rmdir(irdir);

    /* LT_METRICS=1: the report went to the child's stderr at exit. */
    char *err = read_file(errfile);
    CHECK_MSG(err && strstr(err, "lazytensor metrics") && strstr(err, "UncachedCompile                       2\n"),
              "child stderr:\n%s", err ? err : "(none)");
    free(err);
    remove(errfile);
}

/* ExecutedFlops: 2 per multiply-add of each conv, conv backward, linear
 * and matmul the cpu backend ran, every run. */
TEST(executed_flops_count_multiply_adds) {
    lt_metrics_reset();
    int64_t xs[4] = {1, 2, 5, 5}, ws[4] = {3, 2, 3, 3}, as[2] = {4, 6}, bs[2] = {6, 7};
    int64_t st[2] = {1, 1}, pad[2] = {1, 1}, dil[2] = {1, 1};
    lt_tensor *x = lt_randn(LT_F32, 4, xs), *w = lt_randn(LT_F32, 4, ws);
    lt_tensor *a = lt_randn(LT_F32, 2, as), *b = lt_randn(LT_F32, 2, bs);
    lt_mark_step();
    for (int i = 0; i < 2; i++) {
        lt_tensor *y = lt_conv2d(x, w, NULL, st, pad, dil, 1), *m = lt_matmul(a, b);
        lt_mark_step();
        lt_free(y), lt_free(m);
    }
    /* conv: y (1, 3, 5, 5), 2 * 2 * 3 * 3 per output; matmul: 4 * 7 outputs of 6 */
    double per_run = 2.0 * 75 * 18 + 2.0 * 28 * 6;
    CHECK_MSG(lt_metric("ExecutedFlops") == 2 * per_run, "ExecutedFlops %.0f, expected %.0f",
              lt_metric("ExecutedFlops"), 2 * per_run);
    lt_free(x), lt_free(w), lt_free(a), lt_free(b);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--child")) return child_main();
    snprintf(tmpdir, sizeof tmpdir, "/tmp/lt_observe_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(json_checker_rejects_bad_json);
    RUN(report_after_ten_identical_steps);
    RUN(reason_names_changed_input_and_shapes);
    RUN(recompile_warning_after_warmup);
    RUN(ir_dump_matches_expected);
    RUN(trace_file_is_json_with_spans_in_order);
    RUN(executed_flops_count_multiply_adds);
    rmdir(tmpdir);
    return h_report();
}
