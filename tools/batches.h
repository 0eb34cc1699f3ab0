/* The CLI's batches of one split of --data (train or test), from memory
 * (Fashion-MNIST, fake) or from an image folder (decoded by threads). */
#ifndef LT_CLI_BATCHES_H
#define LT_CLI_BATCHES_H

#include "cli.h"
#include "data/image.h"

typedef struct cli_batches {
    data_set ds; /* fashion-mnist, fake */
    data_loader ml;
    data_folder folder; /* imagefolder */
    data_floader *fl;
    int64_t n, batch; /* images in the split, rows of a full batch */
    int c, hw, classes;
} cli_batches;

/* The training split (shuffled, augmented under --augment, last partial
 * batch dropped) or the test split (in order, every image). 0, or -1 with
 * the reason printed on stderr. */
int batches_open(cli_batches *b, const cli_opts *o, bool train);
/* Several processes: this rank reads only its share of each epoch
 * (data_loader_shard). 0, or -1 with a message (image folders are not
 * sharded yet). A world of one changes nothing. */
int batches_shard(cli_batches *b, int64_t rank, int64_t world);
int64_t batches_per_epoch(const cli_batches *b);
/* Batch i of `epoch` as new tensors (free both); rows, 0 past the end, -1
 * with the library error set. */
int64_t batches_next(cli_batches *b, int64_t epoch, int64_t i, lt_tensor **x, lt_tensor **y);
/* Image folders: bad files skipped, images decoded (0 for memory data). */
void batches_stats(const cli_batches *b, int64_t *skipped, int64_t *decoded);
void batches_close(cli_batches *b);
int cli_default_workers(void);

#endif
