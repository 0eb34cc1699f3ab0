/* Bump arena for IR nodes. Chunks are kept across resets (reused), so a
 * steady training loop allocates no memory for tracing after warm-up. */
#include "core.h"

struct arena_chunk {
    arena_chunk *next;
    size_t size;
    char data[];
};

arena g_arena = {0};
static arena_chunk *spare; /* chunks freed by reset, reused first */

void *arena_alloc_slow(size_t n) {
    size_t want = n > (1u << 20) ? n : (1u << 20);
    arena_chunk *c = NULL;
    if (spare && spare->size >= want) {
        c = spare;
        spare = c->next;
    } else {
        /* Arena memory is not tracked by the fail hook: running out here is
         * fatal-free but rare; we still report it cleanly. */
        c = malloc(sizeof *c + want);
        if (!c) return err_set(LT_ERR_OOM, "out of memory: IR arena chunk of %zu bytes", want);
        c->size = want;
    }
    c->next = g_arena.head;
    g_arena.head = c;
    g_arena.cur = c->data + n;
    g_arena.end = c->data + c->size;
    g_arena.bytes += n;
    return c->data;
}

void arena_reset(void) {
    while (g_arena.head) {
        arena_chunk *c = g_arena.head;
        g_arena.head = c->next;
        c->next = spare;
        spare = c;
    }
    g_arena.cur = g_arena.end = NULL;
    g_arena.bytes = 0;
    g_arena.nodes = 0;
    g_arena.epoch++;
}

void arena_release(void) {
    arena_reset();
    while (spare) {
        arena_chunk *c = spare;
        spare = c->next;
        free(c);
    }
}

uint64_t hash_bytes(const void *p, size_t n, uint64_t h) {
    const unsigned char *s = p;
    uint64_t w;
    while (n >= 8) {
        memcpy(&w, s, 8);
        h = hash_mix(h, w);
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    w = 0;
    memcpy(&w, s, n);
    return hash_final(hash_mix(h, w ^ n));
}
