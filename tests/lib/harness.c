#include "harness.h"

#include <stdarg.h>

int h_failed_checks;
static int passed, failed;

void h_fail(const char *file, int line, const char *fmt, ...) {
    h_failed_checks++;
    fprintf(stderr, "  FAIL %s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
}

void h_run(const char *name, void (*fn)(void)) {
    int before = h_failed_checks;
    lt_clear_error();
    fn();
    lt_mark_step();
    lt_clear_error();
    if (h_failed_checks == before) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "FAILED %s\n", name);
    }
}

int h_report(void) {
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

double *h_read(lt_tensor *t) {
    int64_t n = lt_numel(t);
    if (n < 0) return NULL;
    lt_dtype d = lt_dtype_of(t);
    size_t es = lt_dtype_size(d);
    unsigned char *raw = malloc((size_t)n * es + 1);
    double *out = malloc(sizeof(double) * (size_t)(n + 1));
    if (lt_to_host(t, raw, (size_t)n * es)) {
        free(raw);
        free(out);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        switch (d) {
        case LT_F32: out[i] = ((float *)raw)[i]; break;
        case LT_F64: out[i] = ((double *)raw)[i]; break;
        case LT_I32: out[i] = ((int32_t *)raw)[i]; break;
        case LT_I64: out[i] = (double)((int64_t *)raw)[i]; break;
        case LT_BOOL: case LT_U8: out[i] = raw[i]; break;
        case LT_BF16: { /* the top half of a float */
            uint32_t u = (uint32_t)((uint16_t *)raw)[i] << 16;
            float f;
            memcpy(&f, &u, 4);
            out[i] = f;
            break;
        }
        }
    }
    free(raw);
    return out;
}

void h_expect(const char *file, int line, lt_tensor *t, const double *expect, int64_t n, double tol) {
    if (!t) {
        h_fail(file, line, "tensor is NULL: %s", lt_error_message());
        return;
    }
    if (lt_numel(t) != n) {
        h_fail(file, line, "numel %lld, expected %lld", (long long)lt_numel(t), (long long)n);
        return;
    }
    double *v = h_read(t);
    if (!v) {
        h_fail(file, line, "read failed: %s", lt_error_message());
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        double a = v[i], b = expect[i];
        int ok = (isnan(a) && isnan(b)) || a == b || (tol > 0 && fabs(a - b) <= tol * (1 + fabs(b)));
        if (!ok) {
            h_fail(file, line, "element %lld: got %.17g, expected %.17g", (long long)i, a, b);
            break;
        }
    }
    free(v);
}

lt_tensor *h_f32(int ndim, const int64_t *shape, const float *data) { return lt_from_data(data, LT_F32, ndim, shape); }
lt_tensor *h_f64(int ndim, const int64_t *shape, const double *data) { return lt_from_data(data, LT_F64, ndim, shape); }

void h_free_loaded(int n, char **names, lt_tensor **ts, int nmeta, char **keys, char **values) {
    for (int i = 0; i < n; i++) {
        free(names[i]);
        lt_free(ts[i]);
    }
    for (int i = 0; keys && i < nmeta; i++) {
        free(keys[i]);
        free(values[i]);
    }
    free(names);
    free(ts);
    free(keys);
    free(values);
}
