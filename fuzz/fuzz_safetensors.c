/* libFuzzer target: the safetensors reader on arbitrary bytes (through a
 * file, as users call it). Every input must load or fail cleanly. */
#include "lazytensor.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char path[64];
    if (!path[0]) snprintf(path, sizeof path, "/tmp/lt-fuzz-st-%d.safetensors", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    char **names = NULL;
    lt_tensor **ts = NULL;
    int n = lt_load_safetensors(path, &names, &ts);
    for (int i = 0; i < n; i++) {
        size_t bytes = (size_t)lt_numel(ts[i]) * lt_dtype_size(lt_dtype_of(ts[i]));
        void *buf = malloc(bytes ? bytes : 1);
        lt_to_host(ts[i], buf, bytes);
        free(buf);
        lt_free(ts[i]);
        free(names[i]);
    }
    free(names);
    free(ts);
    lt_clear_error();
    return 0;
}
