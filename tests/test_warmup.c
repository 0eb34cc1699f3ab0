/* The warm-up machinery: tensor buffers reused by size (core_buffer_alloc),
 * pages faulted in without being written (core_populate), and the first
 * run's side thread that faults the arena in while kernels write it
 * (prefault.c): what it must never do is change a byte. Not timed: the
 * times are in bench/ and the README. */
#include "harness.h"
#include "train_small.h"
#include "backend/cpu/cpu.h"
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

TEST(populate_writes_nothing) {
    size_t n = (size_t)4 << 20;
    unsigned char *p = core_huge_alloc(n);
    CHECK(p != NULL);
    for (size_t i = 0; i < n; i += 4096) p[i] = (unsigned char)(i >> 12);
    int rc = core_populate(p, n);
    CHECK(rc == 0 || rc == -1);
    int same = 1;
    for (size_t i = 0; i < n; i += 4096) same &= p[i] == (unsigned char)(i >> 12);
    CHECK(same);
    core_free(p);
}

/* Kernels write their slots while the side thread faults the same arena in:
 * every byte written stays. Slots laid out against first use: the thread
 * works in kernel order, so it meets slots the "run" is writing. */
TEST(prefault_races_writers_harmlessly) {
    enum { NS = 6, NK = 12 };
    size_t chunk = (size_t)2 << 20;
    plan pl = {0};
    slot sl[NS];
    for (int s = 0; s < NS; s++)
        sl[s] = (slot){.kind = SLOT_TEMP, .param = -1, .nbytes = chunk + 100, .offset = (size_t)(NS - 1 - s) * 2 * chunk,
                       .cap = chunk + 128, .def = 2 * s, .last = 2 * s + 1};
    pl.nslots = NS;
    pl.slots = sl;
    pl.arena_bytes = (size_t)NS * 2 * chunk;
    g_config.prefault = 1;
    for (int round = 0; round < 3; round++) {
        unsigned char *temps = core_huge_alloc(pl.arena_bytes), *lib = core_huge_alloc(chunk);
        CHECK(temps && lib);
        prefault *pf = cpu_prefault_start(&pl, (char *)temps, (char *)lib, chunk, 3);
        for (int j = 0; j < NK; j++) {
            if (pf) cpu_prefault_at(pf, j);
            for (int s = 0; s < NS; s++)
                if (sl[s].def == j) memset(temps + sl[s].offset, 0x40 + s, sl[s].nbytes);
            if (j == 3) memset(lib, 0x33, chunk);
        }
        cpu_prefault_stop(pf);
        int ok = 1;
        for (int s = 0; s < NS; s++)
            for (size_t i = 0; i < sl[s].nbytes; i += 997) ok &= temps[sl[s].offset + i] == 0x40 + s;
        for (size_t i = 0; i < chunk; i += 997) ok &= lib[i] == 0x33;
        CHECK(ok);
        core_free(temps);
        core_free(lib);
    }
    cpu_prefault_stop(NULL); /* nothing started: nothing to stop */
    g_config.prefault = 0;
}

/* A model trained with and without the side thread computes the same. */
TEST(prefault_changes_no_result) {
    float loss[2][3];
    for (int pass = 0; pass < 2; pass++) {
        g_config.prefault = pass;
        CHECK(train_small_losses(3, 3, loss[pass]) == 0);
    }
    g_config.prefault = 0;
    CHECK(!memcmp(loss[0], loss[1], sizeof loss[0]));
}

int main(void) {
    RUN(buffers_reused_by_size);
    RUN(buffer_alloc_failure_is_clean);
    RUN(populate_writes_nothing);
    RUN(prefault_races_writers_harmlessly);
    RUN(prefault_changes_no_result);
    return h_report();
}
