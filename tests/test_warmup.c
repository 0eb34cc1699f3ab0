/* The warm-up machinery: tensor buffers reused by size (core_buffer_alloc),
 * so that steps after the first take no new pages. Not timed: the times are
 * in bench/ and the README. */
#include "harness.h"
#include "core/core.h"

#include <stdint.h>

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif

TEST(buffers_reused_by_size) {
    size_t big = (size_t)1 << 20, other = big + 4096;
    char *a = core_buffer_alloc(big);
    CHECK(a && ((uintptr_t)a & 63) == 0);
    memset(a, 7, big);
    core_buffer_free(a, big);
    char *b = core_buffer_alloc(other); /* another size: not a's block */
    char *c = core_buffer_alloc(big);
    CHECK(b && c && ((uintptr_t)c & 63) == 0);
#ifndef SANITIZED
    CHECK(c == a && b != a); /* the same size gets the same block back */
#endif
    core_buffer_free(b, other);
    core_buffer_free(c, big);
    /* small buffers are not kept (glibc serves them well) */
    char *s = core_buffer_alloc(64);
    CHECK(s != NULL);
    core_buffer_free(s, 64);
    /* the cache is bounded: more large frees than it keeps stay correct */
    enum { N = 200 };
    char *p[N];
    for (int i = 0; i < N; i++) CHECK((p[i] = core_buffer_alloc(big)) != NULL);
    for (int i = 0; i < N; i++) core_buffer_free(p[i], big);
    for (int i = 0; i < N; i++) CHECK((p[i] = core_buffer_alloc(big)) != NULL);
    for (int i = 0; i < N; i++) core_buffer_free(p[i], big);
}

TEST(buffer_alloc_failure_is_clean) {
    size_t big = (size_t)1 << 20;
    core_buffer_free(core_buffer_alloc(big), big); /* one block in the cache */
    core_alloc_fail_at(1);
    CHECK(core_buffer_alloc(big) == NULL); /* injected even when the cache could serve */
    CHECK_ERR(LT_ERR_OOM);
    core_alloc_fail_at(0);
    char *a = core_buffer_alloc(big);
    CHECK(a != NULL);
    core_buffer_free(a, big);
}

int main(void) {
    RUN(buffers_reused_by_size);
    RUN(buffer_alloc_failure_is_clean);
    return h_report();
}
