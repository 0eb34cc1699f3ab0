/* Host random generator (xoshiro256**), seeded by lt_manual_seed. */
#include "core.h"

#include <math.h>

static uint64_t s[4] = {0x9E3779B97F4A7C15ull, 0xBF58476D1CE4E5B9ull, 0x94D049BB133111EBull, 1};
static int have_spare;
static double spare;

static uint64_t splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void lt_manual_seed(uint64_t seed) {
    for (int i = 0; i < 4; i++) s[i] = splitmix(&seed);
    have_spare = 0;
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_next(void) {
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

double rng_uniform(void) { return (double)(rng_next() >> 11) * 0x1.0p-53; }

double rng_normal(void) { /* Box-Muller, both values used */
    if (have_spare) {
        have_spare = 0;
        return spare;
    }
    double u1, u2 = rng_uniform();
    do u1 = rng_uniform();
    while (u1 <= 0.0);
    double r = sqrt(-2.0 * log(u1));
    spare = r * sin(6.283185307179586476925 * u2);
    have_spare = 1;
    return r * cos(6.283185307179586476925 * u2);
}
