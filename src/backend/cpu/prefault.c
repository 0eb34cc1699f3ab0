/* The first run's page faults, taken on a side thread ahead of the kernels.
 *
 * Why: an executable's first run writes its whole arena (a ResNet-50 step
 * at batch 32, 224x224: about 3 GB of activations) for the first time, and
 * on the virtual machines this project runs on a first touch costs 1-3 ms
 * per MiB (a 2 MiB huge page included) in the host, not in our threads:
 * touching 768 MiB alone took 2.5 s, and while it ran, two threads of
 * arithmetic beside it lost almost nothing (bench notes in the README).
 * Faulting more pages at once on more threads did not go faster (512 MiB:
 * 1.0-1.4 s on 1, 2, 4 or 8 threads). So one thread asks the kernel to
 * map the arena (MADV_POPULATE_WRITE: nothing is written, so it cannot
 * race the kernels that write the same pages) while the kernels compute,
 * in the order the kernels first need the memory, skipping what the run
 * has already reached. The run stops it at its end.
 *
 * Off unless LT_PREFAULT=1: on the shared 2-core machine, with both cores
 * contended, ResNet-50's first step was slower with it in both batch-32
 * pairs measured (README); a quiet machine may say otherwise.
 *
 * Chunks of 2 MiB (a huge page; the arena is 2 MiB aligned). */
#include "cpu.h"

#include <pthread.h>
#include <stdatomic.h>

#define CHUNK ((size_t)2 << 20)

typedef struct chunk {
    char *p;
    size_t n;
    int32_t first; /* the first kernel that writes it */
} chunk;

struct prefault {
    pthread_t th;
    atomic_int stop;
    atomic_int at; /* the kernel the run has reached */
    int n;
    chunk *c;
};

static int by_first(const void *a, const void *b) {
    const chunk *x = a, *y = b;
    if (x->first != y->first) return (x->first > y->first) - (x->first < y->first);
    return (x->p > y->p) - (x->p < y->p);
}

static void *work(void *arg) {
    prefault *pf = arg;
    for (int i = 0; i < pf->n && !atomic_load_explicit(&pf->stop, memory_order_relaxed); i++) {
        if (pf->c[i].first < atomic_load_explicit(&pf->at, memory_order_relaxed)) continue; /* the run got there first */
        if (core_populate(pf->c[i].p, pf->c[i].n)) break; /* not supported here: the kernels fault as before */
    }
    return NULL;
}

/* Chunks of [base, base + bytes) first written by kernel `first`, or by
 * the TEMP slots of pl placed there (base: the arena). */
static int add_region(chunk *c, int n, char *base, size_t bytes, const plan *pl, int32_t first) {
    int n0 = n;
    for (size_t off = 0; off < bytes; off += CHUNK)
        c[n++] = (chunk){base + off, bytes - off < CHUNK ? bytes - off : CHUNK, pl ? INT32_MAX : first};
    for (int s = 0; pl && s < pl->nslots; s++) {
        const slot *sl = &pl->slots[s];
        if (sl->kind != SLOT_TEMP || sl->cap == 0) continue;
        for (size_t k = sl->offset / CHUNK; k <= (sl->offset + sl->cap - 1) / CHUNK && k < (size_t)(n - n0); k++)
            if (sl->def < c[n0 + k].first) c[n0 + k].first = sl->def;
    }
    return n;
}

prefault *cpu_prefault_start(const plan *pl, char *temps, char *lib, size_t lib_bytes, int32_t lib_first) {
    if (!g_config.prefault || (!temps && !lib)) return NULL;
    size_t na = temps ? (pl->arena_bytes + CHUNK - 1) / CHUNK : 0, nl = lib ? (lib_bytes + CHUNK - 1) / CHUNK : 0;
    prefault *pf = calloc(1, sizeof *pf); /* not core_: an optimization that may fail silently */
    chunk *c = calloc(na + nl + 1, sizeof *c);
    if (!pf || !c) goto fail;
    int n = temps ? add_region(c, 0, temps, pl->arena_bytes, pl, 0) : 0;
    if (lib) n = add_region(c, n, lib, lib_bytes, NULL, lib_first);
    qsort(c, (size_t)n, sizeof *c, by_first);
    while (n > 0 && c[n - 1].first == INT32_MAX) n--; /* arena blocks no slot uses */
    pf->c = c;
    pf->n = n;
    atomic_init(&pf->stop, 0);
    atomic_init(&pf->at, 0);
    if (n > 0 && pthread_create(&pf->th, NULL, work, pf) == 0) return pf;
fail:
    free(c);
    free(pf);
    return NULL;
}

void cpu_prefault_at(prefault *pf, int32_t j) { atomic_store_explicit(&pf->at, j, memory_order_relaxed); }

void cpu_prefault_stop(prefault *pf) {
    if (!pf) return;
    atomic_store_explicit(&pf->stop, 1, memory_order_relaxed);
    pthread_join(pf->th, NULL);
    free(pf->c);
    free(pf);
}
