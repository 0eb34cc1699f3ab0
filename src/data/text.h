/* data: byte-level text for language models (issue 16). A corpus is one
 * file, or every regular file of a directory (sorted by name, *.dat index
 * files and symbolic links skipped: the layout of the Debian fortunes
 * package). Its last tenth is held out for validation. */
#ifndef LT_DATA_TEXT_H
#define LT_DATA_TEXT_H

#include <stddef.h>
#include <stdint.h>

#define DATA_TEXT_DEFAULT "/usr/share/games/fortunes"

typedef struct data_text {
    uint8_t *bytes; /* owned */
    int64_t n, n_train; /* [0, n_train) trains, [n_train, n) validates */
} data_text;

/* 0, or -1 with LT_ERR_IO / LT_ERR_FORMAT (naming the path) set. */
int data_text_load(data_text *t, const char *path);
void data_text_free(data_text *t);
/* Batch `step` of `b` random windows of `block` + 1 bytes from the training
 * (val 0) or validation (val 1) part: x (b, block) and y, x shifted by one.
 * The windows depend only on (seed, val, step). 0, or -1 (part too short). */
int data_text_batch(const data_text *t, int val, int64_t b, int64_t block, uint64_t seed, int64_t step, int64_t *x,
                    int64_t *y);
/* Cross-entropy (nats per byte) of the validation part under the training
 * part's byte frequencies (add-one smoothed): the unigram baseline a
 * language model must beat. */
double data_text_unigram_loss(const data_text *t);

#endif
