/* libFuzzer target: the image decoding wrapper and the transforms on
 * arbitrary bytes (JPEG and PNG through their real libraries). A hostile
 * file may only be refused with a message: no crash, no read outside a
 * buffer, no allocation beyond the pixel limit. */
#include "data/image.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static img_work w;
    static float out[3 * 24 * 24];
    char msg[IMG_MSG];
    img_tf tf = {.size = 24, .channels = 3, .resize = 27, .dct_scale = true, .mean = {0.5f, 0.5f, 0.5f},
                 .std = {0.25f, 0.25f, 0.25f}};
    if (img_transform(&tf, data, size, 0, (int64_t)size, &w, out, msg)) return 0;
    tf.train = true, tf.channels = 1; /* the random crop, luma */
    if (img_transform(&tf, data, size, 1, (int64_t)size, &w, out, msg) == 0 && w.im.w * w.im.h > 4096 * 4096)
        img_work_free(&w); /* keep the fuzzer's memory small */
    return 0;
}
