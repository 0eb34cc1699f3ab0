/* Smoke: the trace -> sync -> cache -> execute path end to end. */
#include "harness.h"

TEST(add_and_cache) {
    int64_t s[2] = {2, 3};
    float av[6] = {1, 2, 3, 4, 5, 6}, bv[6] = {10, 20, 30, 40, 50, 60};
    lt_tensor *a = h_f32(2, s, av), *b = h_f32(2, s, bv);
    double u0 = lt_metric("UncachedCompile");
    for (int i = 0; i < 3; i++) {
        lt_tensor *c = lt_add(a, b);
        EXPECT_VALUES(c, 0, 11, 22, 33, 44, 55, 66);
        lt_free(c);
    }
    CHECK(lt_metric("UncachedCompile") - u0 == 1);
    lt_tensor *aa = lt_add(a, a);
    EXPECT_VALUES(aa, 0, 2, 4, 6, 8, 10, 12);
    CHECK(lt_metric("UncachedCompile") - u0 == 2); /* a+a is another graph than a+b */
    lt_free(aa);
    lt_free(a);
    lt_free(b);
}

TEST(inplace_through_view) {
    int64_t s[2] = {2, 3};
    float av[6] = {1, 2, 3, 4, 5, 6};
    lt_tensor *a = h_f32(2, s, av);
    lt_tensor *row = lt_select(a, 0, 1);
    lt_mul_scalar_(row, 10);
    EXPECT_VALUES(a, 0, 1, 2, 3, 40, 50, 60);
    lt_tensor *col = lt_select(a, 1, 0);
    EXPECT_VALUES(col, 0, 1, 40);
    lt_free(col);
    lt_free(row);
    lt_free(a);
}

int main(void) {
    RUN(add_and_cache);
    RUN(inplace_through_view);
    return h_report();
}
