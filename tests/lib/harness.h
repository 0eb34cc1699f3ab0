/* The test harness: plain C, prints "N passed, N failed". */
#ifndef LT_HARNESS_H
#define LT_HARNESS_H

#include "lazytensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern int h_failed_checks;
void h_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void h_run(const char *name, void (*fn)(void));
int h_report(void);

#define TEST(name) static void name(void)
#define RUN(name) h_run(#name, name)
#define CHECK(c)                                                                       \
    do {                                                                               \
        if (!(c)) h_fail(__FILE__, __LINE__, "CHECK(%s) failed%s%s", #c,              \
                         lt_error() ? ": " : "", lt_error() ? lt_error_message() : ""); \
    } while (0)
#define CHECK_MSG(c, ...)                                  \
    do {                                                   \
        if (!(c)) h_fail(__FILE__, __LINE__, __VA_ARGS__); \
    } while (0)
/* Expects the last call to have failed with `code`; clears it. */
#define CHECK_ERR(code)                                                                                    \
    do {                                                                                                   \
        int e_ = lt_error();                                                                               \
        if (e_ != (code)) h_fail(__FILE__, __LINE__, "expected error %d, got %d (%s)", (code), e_,        \
                                 lt_error_message());                                                      \
        lt_clear_error();                                                                                  \
    } while (0)
#define CHECK_NO_ERR()                                                                       \
    do {                                                                                     \
        if (lt_error()) h_fail(__FILE__, __LINE__, "unexpected error: %s", lt_error_message()); \
        lt_clear_error();                                                                    \
    } while (0)

/* Reads a tensor as doubles (any dtype). Returns a malloc'd array. */
double *h_read(lt_tensor *t);
/* Compares t against expected values; tol 0 means exact (NaN equals NaN). */
void h_expect(const char *file, int line, lt_tensor *t, const double *expect, int64_t n, double tol);
#define EXPECT_VALUES(t, tol, ...)                                                   \
    do {                                                                             \
        const double e_[] = {__VA_ARGS__};                                           \
        h_expect(__FILE__, __LINE__, (t), e_, (int64_t)(sizeof e_ / sizeof e_[0]), (tol)); \
    } while (0)
#define EXPECT_SHAPE(t, ...)                                                                  \
    do {                                                                                      \
        const int64_t s_[] = {__VA_ARGS__};                                                   \
        int n_ = (int)(sizeof s_ / sizeof s_[0]);                                             \
        CHECK_MSG(lt_ndim(t) == n_ && !memcmp(lt_shape(t), s_, sizeof s_), "shape mismatch"); \
    } while (0)

lt_tensor *h_f32(int ndim, const int64_t *shape, const float *data);
/* Frees what lt_load_safetensors(_meta) returned: n names and tensors, and
 * nmeta metadata keys and values (keys NULL: none asked for). */
void h_free_loaded(int n, char **names, lt_tensor **ts, int nmeta, char **keys, char **values);
lt_tensor *h_f64(int ndim, const int64_t *shape, const double *data);

#endif
