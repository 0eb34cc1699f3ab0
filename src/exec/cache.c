/* The compile cache: an LRU keyed by the graph key. A hit is confirmed by
 * comparing the canonical serialization word for word, so a hash collision
 * can never run the wrong executable (DESIGN 2.4). */
#include "exec.h"

#include "../prof/prof.h"

struct cache_entry {
    uint64_t key;
    uint64_t *serial;
    size_t nwords;
    exec_graph *graph;
    void *exe;
    const backend *be;
    uint64_t sig;                   /* structure signature (explain.c) */
    cache_entry *hnext;             /* hash chain */
    cache_entry *lru_prev, *lru_next;
};

#define NBUCKETS 4096
static cache_entry *buckets[NBUCKETS];
static cache_entry lru = {.lru_prev = &lru, .lru_next = &lru}; /* most recent first */
static int count;

static void lru_unlink(cache_entry *e) {
    e->lru_prev->lru_next = e->lru_next;
    e->lru_next->lru_prev = e->lru_prev;
}
static void lru_push_front(cache_entry *e) {
    e->lru_next = lru.lru_next;
    e->lru_prev = &lru;
    lru.lru_next->lru_prev = e;
    lru.lru_next = e;
}

cache_entry *cache_find(uint64_t key, const uint64_t *serial, size_t nwords) {
    for (cache_entry *e = buckets[key % NBUCKETS]; e; e = e->hnext) {
        if (e->key == key && e->nwords == nwords && !memcmp(e->serial, serial, nwords * 8)) {
            lru_unlink(e);
            lru_push_front(e);
            return e;
        }
    }
    return NULL;
}

static void entry_free(cache_entry *e) {
    cache_entry **pp = &buckets[e->key % NBUCKETS];
    while (*pp != e) pp = &(*pp)->hnext;
    *pp = e->hnext;
    lru_unlink(e);
    e->be->free_exec(e->exe);
    exec_graph_free(e->graph);
    core_free(e->serial);
    core_free(e);
    count--;
}

cache_entry *cache_insert(uint64_t key, const uint64_t *serial, size_t nwords, exec_graph *g, void *exe,
                          const backend *be) {
    cache_entry *e = core_malloc(sizeof *e);
    uint64_t *copy = core_malloc(nwords * 8);
    if (!e || !copy) {
        core_free(e);
        core_free(copy);
        return NULL;
    }
    memcpy(copy, serial, nwords * 8);
    *e = (cache_entry){.key = key, .serial = copy, .nwords = nwords, .graph = g, .exe = exe, .be = be};
    e->hnext = buckets[key % NBUCKETS];
    buckets[key % NBUCKETS] = e;
    lru_push_front(e);
    count++;
    while (count > g_config.cache_size) {
        entry_free(lru.lru_prev);
        prof_add(M_CacheEvictions, 1);
    }
    return e;
}

void *cache_exe(cache_entry *e) { return e->exe; }
const backend *cache_backend(cache_entry *e) { return e->be; }
const exec_graph *cache_graph(cache_entry *e) { return e->graph; }
int cache_count(void) { return count; }
cache_entry *cache_next(cache_entry *e) {
    cache_entry *x = e ? e->lru_next : lru.lru_next;
    return x == &lru ? NULL : x;
}
uint64_t cache_sig(cache_entry *e) { return e->sig; }
void cache_set_sig(cache_entry *e, uint64_t sig) { e->sig = sig; }

void cache_clear(void) {
    while (lru.lru_next != &lru) entry_free(lru.lru_next);
}
