/* `lazytensor bench-data --data-dir DIR [--image-size N --workers N
 * --batch-size N --steps N --report json]`: the image-folder loader alone,
 * with the training transforms (RandomResizedCrop, flip, normalize) and no
 * model: how many images per second decoding can feed a step. The first
 * batch (thread start, cold file cache) is not timed. */
#include "batches.h"

#include <string.h>

int cmd_bench_data(const cli_opts *o) {
    cli_opts bo = *o;
    bo.data = "imagefolder";
    bo.augment = true;
    cli_batches b;
    if (batches_open(&b, &bo, true)) return 1;
    int64_t nb = batches_per_epoch(&b), steps = o->steps ? o->steps : nb, images = 0;
    double t0 = 0;
    int rc = 0;
    for (int64_t s = 0; s <= steps && !rc; s++) {
        lt_tensor *x, *y;
        int64_t rows = batches_next(&b, s / nb, s % nb, &x, &y);
        if (rows < 0) {
            fprintf(stderr, "lazytensor: bench-data: %s\n", lt_error_message());
            rc = 1;
        }
        lt_free(x), lt_free(y);
        if (s == 0) t0 = cli_now();
        else images += rows;
    }
    double el = cli_now() - t0, ips = el > 0 ? (double)images / el : 0;
    int64_t skipped, decoded;
    batches_stats(&b, &skipped, &decoded);
    int workers = o->workers >= 0 ? o->workers : cli_default_workers();
    if (!rc && o->report)
        printf("{\"images\": %lld, \"seconds\": %.3f, \"images_per_sec\": %.1f, \"workers\": %d, \"image_size\": %lld, "
               "\"images_skipped\": %lld}\n", (long long)images, el, ips, workers, (long long)b.hw, (long long)skipped);
    else if (!rc)
        printf("%lld images (%dx%d, RandomResizedCrop + flip + normalize) in %.2f s: %.0f img/s with %d workers, "
               "%lld bad files skipped\n", (long long)images, (int)b.hw, (int)b.hw, el, ips, workers, (long long)skipped);
    batches_close(&b);
    return rc;
}
