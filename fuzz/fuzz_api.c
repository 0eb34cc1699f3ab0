/* libFuzzer target: a byte-coded random program of API calls, valid and
 * invalid, over a small pool of tensors. Finds crashes, sanitizer reports
 * and leaks; every call must either work or return a clean error. */
#include "lazytensor.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define POOL 8

typedef struct {
    const uint8_t *p;
    size_t n;
} input;

static int take(input *in) {
    if (!in->n) return 0;
    in->n--;
    return *in->p++;
}
static int64_t small(input *in) { return (int64_t)(take(in) % 9) - 2; } /* -2..6: includes invalid */

/* Results over 2^16 elements are dropped: a chain of self-concatenations
 * doubles a tensor per 4 input bytes, and the time would go to copying
 * gigabytes (a timeout), not to finding bugs. */
static void put(lt_tensor **pool, int i, lt_tensor *t) {
    if (!t) return;
    if (lt_numel(t) > (1 << 16)) {
        lt_free(t);
        return;
    }
    lt_free(pool[i]);
    pool[i] = t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    input in = {data, size};
    lt_tensor *pool[POOL] = {0};
    int steps = 0;
    while (in.n && steps++ < 64) {
        int op = take(&in) % 24;
        int i = take(&in) % POOL, j = take(&in) % POOL, k = take(&in) % POOL;
        lt_tensor *a = pool[j], *b = pool[k];
        switch (op) {
        case 0: {
            int nd = take(&in) % 4;
            int64_t s[4];
            for (int d = 0; d < nd; d++) s[d] = small(&in);
            put(pool, i, lt_randn(take(&in) % 2 ? LT_F64 : LT_F32, nd, s));
            break;
        }
        case 1: {
            int nd = take(&in) % 4;
            int64_t s[4];
            for (int d = 0; d < nd; d++) s[d] = small(&in);
            put(pool, i, lt_full((double)small(&in), (lt_dtype)(take(&in) % 6), nd, s));
            break;
        }
        case 2: put(pool, i, lt_add(a, b)); break;
        case 3: put(pool, i, lt_mul(a, b)); break;
        case 4: put(pool, i, lt_lerp(a, b, 0.25)); break;
        case 5: lt_lerp_(a, b, 0.5); break;
        case 6: lt_add_(a, b); break;
        case 7: put(pool, i, lt_slice(a, (int)small(&in), small(&in), small(&in), small(&in))); break;
        case 8: put(pool, i, lt_select(a, (int)small(&in), small(&in))); break;
        case 9: put(pool, i, lt_transpose(a, (int)small(&in), (int)small(&in))); break;
        case 10: {
            int64_t s[3] = {small(&in), small(&in), small(&in)};
            put(pool, i, lt_view(a, take(&in) % 4, s));
            break;
        }
        case 11: {
            int64_t s[3] = {small(&in), small(&in), small(&in)};
            put(pool, i, lt_reshape(a, take(&in) % 4, s));
            break;
        }
        case 12: {
            int64_t s[3] = {small(&in), small(&in), small(&in)};
            put(pool, i, lt_expand(a, take(&in) % 4, s));
            break;
        }
        case 13: {
            int ax[2] = {(int)small(&in), (int)small(&in)};
            put(pool, i, lt_sum(a, take(&in) % 3, ax, take(&in) & 1));
            break;
        }
        case 14: put(pool, i, lt_matmul(a, b)); break;
        case 15: {
            lt_tensor *ts[2] = {a, b};
            put(pool, i, lt_cat(2, ts, (int)small(&in)));
            break;
        }
        case 16: put(pool, i, lt_softmax(a, (int)small(&in))); break;
        case 17: lt_copy_(a, b); break;
        case 18: lt_mul_scalar_(a, (double)small(&in)); break;
        case 19: put(pool, i, lt_diagonal(a, small(&in), (int)small(&in), (int)small(&in))); break;
        case 20: lt_mark_step(); break;
        case 21: {
            if (!a) break;
            int64_t n = lt_numel(a);
            size_t bytes = (size_t)n * lt_dtype_size(lt_dtype_of(a));
            void *buf = malloc(bytes + 1);
            lt_to_host(a, buf, bytes + (take(&in) % 4 == 0)); /* sometimes a wrong size */
            free(buf);
            break;
        }
        case 22: {
            lt_tensor *c = lt_gt(a, b);
            put(pool, i, lt_where(c, a, b));
            lt_free(c);
            break;
        }
        case 23: lt_free(pool[i]), pool[i] = NULL; break;
        }
        lt_clear_error();
    }
    lt_mark_step();
    for (int i = 0; i < POOL; i++) lt_free(pool[i]);
    lt_clear_error();
    return 0;
}
