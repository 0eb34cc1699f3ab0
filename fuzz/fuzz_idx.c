/* libFuzzer target: the IDX dataset reader (raw or gzip) on arbitrary bytes. */
#include "data/data.h"

#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char path[64];
    if (!path[0]) snprintf(path, sizeof path, "/tmp/lt-fuzz-idx-%d.gz", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    data_idx idx;
    if (data_idx_read(path, &idx) == 0) {
        volatile uint8_t sum = 0;
        for (size_t i = 0; i < idx.size; i++) sum += idx.data[i]; /* touch every byte it claims */
        data_idx_free(&idx);
    }
    lt_clear_error();
    return 0;
}
