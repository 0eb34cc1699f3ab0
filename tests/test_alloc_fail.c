/* Allocation-failure sweep (DESIGN 9): fail the k-th host allocation, for
 * every k that a representative program reaches, and check that the call
 * reports LT_ERR_OOM cleanly, that nothing is lost (the same program run
 * again without the failure gives the right answer), and - under the
 * sanitizer build - that nothing leaks. */
#include "alloc_sweep.h"
#include "harness.h"

/* A program that traces, syncs (compile + execute), reads back, and goes
 * through views and in-place ops. Returns 0 if it ran to the end with the
 * right values, 1 if it stopped at an OOM error, -1 on a wrong answer or an
 * unexpected error kind. */
static int program(int step) {
    int64_t s[2] = {3, 4};
    float av[12], bv[12];
    for (int i = 0; i < 12; i++) {
        av[i] = (float)i;
        bv[i] = (float)(2 * i + step);
    }
    int rc = 0;
    lt_tensor *a = lt_from_data(av, LT_F32, 2, s), *b = lt_from_data(bv, LT_F32, 2, s);
    lt_tensor *c = lt_add(a, b);
    lt_tensor *row = lt_select(c, 0, 1);
    lt_mul_scalar_(row, 2.5);
    lt_tensor *m = lt_sum(c, 0, NULL, false);
    lt_tensor *cat_in[2] = {a, c};
    lt_tensor *cat = lt_cat(2, cat_in, 0);
    lt_tensor *sm = lt_softmax(cat, 1);
    lt_mark_step();
    double expect = 0;
    for (int i = 0; i < 12; i++) expect += (av[i] + bv[i]) * (i / 4 == 1 ? 2.5 : 1.0);
    float got = 0, smv[24];
    if (lt_to_host(m, &got, sizeof got) == 0 && lt_to_host(sm, smv, sizeof smv) == 0) {
        if (fabs(got - expect) > 1e-3 * fabs(expect)) rc = -1;
    } else {
        rc = 1;
    }
    /* After an OOM the program skipped work (errors are sticky and every
     * later call may have returned NULL), so its values prove nothing; the
     * retry below checks them. Any other error kind is a failure. */
    if (lt_error()) rc = lt_error() == LT_ERR_OOM ? 1 : -1;
    lt_free(a);
    lt_free(b);
    lt_free(c);
    lt_free(row);
    lt_free(m);
    lt_free(cat);
    lt_free(sm);
    return rc;
}

/* Twice per k, with other input values each time. */
TEST(sweep) { CHECK(h_alloc_sweep(program, 2, NULL) > 0); }

int main(void) {
    RUN(sweep);
    return h_report();
}
