/* The antialiased resample of RandomResizedCrop(224) on a 500x375 image
 * (ImageNet's typical size) with the crops the training transform draws,
 * once per instruction set the CPU has (core_set_isa: the scalar
 * horizontal pass, then its AVX2 and AVX-512 copies), alternating, so the
 * ratio holds on a busy machine. Prints the median milliseconds per image
 * of each (wall and CPU time) and each copy's speedup over the scalar one.
 * Usage: bench_resize [rounds] [channels]  (defaults 9 3) */
#define _POSIX_C_SOURCE 200809L
#include "core/isa.h"
#include "data/data.h"
#include "data/image.h"

#include <stdio.h>
#include <stdlib.h>

#include "bench_time.h"

enum { W = 500, H = 375, S = 224, CROPS = 64 };

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 9, ch = argc > 2 ? atoi(argv[2]) : 3;
    if (rounds < 1 || rounds > 64 || (ch != 1 && ch != 3))
        return fprintf(stderr, "usage: bench_resize [rounds 1-64] [1|3]\n"), 2;
    uint8_t *src = malloc((size_t)W * H * (size_t)ch), *dst = malloc((size_t)S * S * (size_t)ch), *tmp = NULL;
    size_t tmp_cap = 0;
    if (!src || !dst) return 1;
    for (size_t k = 0; k < (size_t)W * H * (size_t)ch; k++) /* smooth, like a photo, plus noise */
        src[k] = (uint8_t)((k % (W * (size_t)ch)) / 4 + (k / ((size_t)W * (size_t)ch)) / 3 + (data_hash(1, 2, k) & 15));
    img_box box[CROPS];
    for (int i = 0; i < CROPS; i++) {
        uint64_t rng = data_hash(7, 0, (uint64_t)i);
        int x, y, w, h;
        img_rrc_params(W, H, &rng, &x, &y, &w, &h);
        box[i] = (img_box){x, y, x + w, y + h};
    }
    int best = core_isa();
    double wall[3][64], cpu[3][64];
    for (int r = 0; r < rounds; r++)
        for (int level = 0; level <= best; level++) {
            core_set_isa(level);
            double t0 = bench_now_s(), c0 = bench_cpu_s();
            for (int i = 0; i < CROPS; i++)
                if (img_resample(src, W, H, ch, box[i], S, S, 0, 0, S, S, dst, &tmp, &tmp_cap)) return 1;
            wall[level][r] = (bench_now_s() - t0) / CROPS * 1e3;
            cpu[level][r] = (bench_cpu_s() - c0) / CROPS * 1e3;
        }
    static const char *name[3] = {"scalar", "AVX2", "AVX-512"};
    double w0 = bench_median(wall[0], rounds), c0 = bench_median(cpu[0], rounds);
    printf("resample %dx%d x%d -> %d (RandomResizedCrop boxes), ms per image, median of %d rounds:\n", W, H, ch, S,
           rounds);
    for (int level = 0; level <= best; level++) {
        double w = bench_median(wall[level], rounds), c = bench_median(cpu[level], rounds);
        printf("  %-8s wall %.3f  cpu %.3f  speedup %.2fx (cpu %.2fx)\n", name[level], w, c, w0 / w, c0 / c);
    }
    core_set_isa(-1);
    free(src), free(dst), free(tmp);
    return 0;
}
