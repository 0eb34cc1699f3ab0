/* The one allocation hook for host memory. A test build can make the k-th
 * allocation fail, to prove every path returns a clean error. */
#define _DEFAULT_SOURCE /* madvise's MADV_HUGEPAGE (Linux) */
#include "core.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

static int64_t fail_at;   /* 0: never; else fail when count reaches it */
static int64_t count;

void core_alloc_fail_at(int64_t k) { fail_at = k > 0 ? count + k : 0; }
int64_t core_alloc_count(void) { return count; }

static int should_fail(size_t n) {
    count++;
    if (LT_UNLIKELY(fail_at && count == fail_at)) {
        err_set(LT_ERR_OOM, "out of memory: allocation of %zu bytes failed (injected)", n);
        return 1;
    }
    return 0;
}

void *core_malloc(size_t n) {
    if (should_fail(n)) return NULL;
    void *p = malloc(n ? n : 1);
    if (!p) err_set(LT_ERR_OOM, "out of memory: allocation of %zu bytes failed", n);
    return p;
}

void *core_calloc(size_t n, size_t size) {
    if (should_fail(n * size)) return NULL;
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) err_set(LT_ERR_OOM, "out of memory: allocation of %zu x %zu bytes failed", n, size);
    return p;
}

void *core_realloc(void *old, size_t n) {
    if (should_fail(n)) return NULL;
    void *p = realloc(old, n ? n : 1);
    if (!p) err_set(LT_ERR_OOM, "out of memory: reallocation to %zu bytes failed", n);
    return p;
}

/* n bytes (rounded up to a multiple of align, a power of two) at an
 * align-byte boundary. */
static void *aligned(size_t n, size_t align) {
    if (should_fail(n)) return NULL;
    size_t r = (n + align - 1) & ~(align - 1);
    void *p = aligned_alloc(align, r ? r : align);
    if (!p) err_set(LT_ERR_OOM, "out of memory: buffer of %zu bytes could not be allocated", n);
    return p;
}

void *core_aligned_alloc(size_t n) { return aligned(n, 64); }

/* Tensor buffers of CACHE_MIN bytes and more, kept after they are freed
 * for the next request of the same size: a training step asks for the same
 * output sizes every step. Why: glibc's aligned_alloc asks for n + 64 bytes
 * more than the block it returns, so a freed block never serves the next
 * request of its own size and the heap grows into fresh pages instead; on
 * this project's virtual machines a first touch costs 1-3 ms per MiB, and
 * ResNet-50's three 9.4 MB weight gradients took 6,900 fresh pages every
 * step. Bounded (CACHE_SLOTS blocks, CACHE_BYTES in all; the oldest goes
 * first); the library is single-threaded by contract. Off under the
 * sanitizers, whose use-after-free checks need every free to be real. */
#define CACHE_MIN ((size_t)256 << 10)
#define CACHE_SLOTS 128
#define CACHE_BYTES ((size_t)512 << 20)
#if defined(__SANITIZE_ADDRESS__)
#define NO_CACHE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NO_CACHE 1
#endif
#endif

#ifndef NO_CACHE
static struct {
    int n;
    size_t bytes;
    void *p[CACHE_SLOTS];
    size_t size[CACHE_SLOTS];
} cache;

static void cache_drop(int i) {
    cache.bytes -= cache.size[i];
    cache.n--;
    memmove(&cache.p[i], &cache.p[i + 1], (size_t)(cache.n - i) * sizeof cache.p[0]);
    memmove(&cache.size[i], &cache.size[i + 1], (size_t)(cache.n - i) * sizeof cache.size[0]);
}
#endif

void *core_buffer_alloc(size_t n) {
#ifndef NO_CACHE
    if (n >= CACHE_MIN)
        for (int i = cache.n - 1; i >= 0; i--)
            if (cache.size[i] == n) {
                if (should_fail(n)) return NULL;
                void *p = cache.p[i];
                cache_drop(i);
                return p;
            }
#endif
    return core_huge_alloc(n);
}

void core_buffer_free(void *p, size_t n) {
#ifndef NO_CACHE
    if (p && n >= CACHE_MIN && n <= CACHE_BYTES) {
        while (cache.n == CACHE_SLOTS || cache.bytes + n > CACHE_BYTES) {
            free(cache.p[0]);
            cache_drop(0);
        }
        cache.p[cache.n] = p;
        cache.size[cache.n++] = n;
        cache.bytes += n;
        return;
    }
#endif
    (void)n;
    free(p);
}

/* Blocks of 2 MiB and more (the executor's arena and scratch, and tensor
 * buffers through core_buffer_alloc): 2 MiB aligned, with transparent huge
 * pages asked for over their whole 2 MiB pages (as PyTorch's CPU allocator
 * does with THP on); a tail shorter than a huge page stays on 4 KiB pages,
 * so no block takes more memory than it holds. Why, on this project's
 * virtual machines: one fault per 2 MiB instead of 512 (a ResNet-50 step's
 * first run touches gigabytes of new memory; 203k 4 KiB faults took 29% of
 * it), and streaming kernels run several times faster over huge pages:
 * AdamW's update of ResNet-50's 25.5M parameters, which reads four and
 * writes three parameter-sized buffers, took 78-98 ms of a step with them
 * on 4 KiB pages and 19-20 ms on huge pages (README, fp32 section). Smaller
 * blocks, which come and go every step, stay on 4 KiB pages: a huge page
 * zeroed for each of them slowed tracing 2.5x. */
#define HUGE_PAGE ((size_t)2 << 20)

void *core_huge_alloc(size_t n) {
    if (n < HUGE_PAGE) return aligned(n, 64);
    void *p = aligned(n, HUGE_PAGE);
#ifdef MADV_HUGEPAGE
    if (p) madvise(p, n & ~(HUGE_PAGE - 1), MADV_HUGEPAGE); /* a hint: fails harmlessly without THP */
#endif
    return p;
}

void core_free(void *p) { free(p); }
