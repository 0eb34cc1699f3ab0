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
    int64_t rank, world; /* evaluation in memory, several processes: batch i is batch i * world + rank */
    int c, hw, classes;
} cli_batches;

/* The training split (shuffled, augmented under --augment, last partial
 * batch dropped) or the test split (in order, every image). 0, or -1 with
 * the reason printed on stderr. */
int batches_open(cli_batches *b, const cli_opts *o, bool train);
/* Several processes: this rank reads only its share, before the first
 * batch. Training: every world-th image of each epoch's permutation
 * (data_loader_shard, data_floader_shard: batch b of the W ranks holds the
 * images of one process's batch b at W times the batch size). Evaluation:
 * disjoint parts that together cover the split once. Batch numbers are
 * then this rank's (0 .. batches_per_epoch). 0, or -1 with a message. A
 * world of one changes nothing. */
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
