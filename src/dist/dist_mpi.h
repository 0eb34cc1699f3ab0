/* What the files of src/dist share when built with MPI; dist.h is the
 * layer's interface. Only src/dist includes mpi.h (DESIGN 12). */
#ifndef LT_DIST_MPI_H
#define LT_DIST_MPI_H

#include "dist.h"

#ifdef LT_HAVE_MPI
#include <mpi.h>

extern MPI_Comm dist_comm; /* the library's own duplicate of MPI_COMM_WORLD */
extern MPI_Comm dist_comm2; /* another: the compressed means' second exchanges (compress.c) */

/* watch.c: a wait that notices a lost rank. watch_init reads
 * LT_DIST_TIMEOUT and learns every rank's host name (collective: every rank
 * calls it once, from dist_init). watch_wait is MPI_Wait, except that a
 * wait longer than the timeout asks every other rank whether it is alive
 * and, if one does not answer, prints which and ends the job (MPI_Abort). */
void watch_init(void);
void watch_wait(MPI_Request *r, const char *what, int64_t bytes);
/* The same bound on any wait: spins until ready(arg). */
void watch_until(int (*ready)(void *), void *arg, const char *what, int64_t bytes);

/* shm.c: the all-reduce of ranks on one machine through shared memory.
 * shm_init (collective, from dist_init) turns it on for all ranks or for
 * none; then shm_alloc'd buffers are dist_buffer_alloc's, and an
 * all-reduce of one of them runs as shm_start, shm_progress (non-blocking:
 * 1 when done) and shm_wait, with MEAN's division done. */
typedef struct shm_req {
    uint64_t seq; /* its rank among the all-reduces through shared memory, the same on every rank */
    void *buf;
    int64_t n;
    lt_dtype dt;
    int op, reduced, peer; /* reduced: this rank's slice summed; peer: the next rank to gather from */
    char **src;            /* every rank's buffer, from the sum to the last gather */
} shm_req;
/* At most this many in flight on a rank: dist_start completes the oldest first. */
#define SHM_MAX_INFLIGHT 2048
int shm_init(int world, int rank, int local); /* 1 if on */
void shm_finalize(void);
int shm_on(void);
int shm_owns(const void *p);
void *shm_alloc(size_t bytes);
void shm_free(void *p);
void shm_ready(void *p);
void shm_start(shm_req *q, void *buf, int64_t n, lt_dtype dt, int op);
int shm_progress(shm_req *q);
void shm_wait(shm_req *q, int64_t bytes);

/* compress.c: the mean of float32 values with bfloat16 on the wire
 * (DIST_MEAN_BF16), in two exchanges: an all-to-all hands each rank every
 * rank's bf16 copy of its 1/N slice, which it sums in float32 in rank
 * order, divides and rounds once; an all-gather hands every rank all the
 * slices. Every rank ends with the same bits.
 *
 * MPI matches non-blocking collectives on a communicator by the order in
 * which they start, and an all-to-all completes at a different moment on
 * each rank: so the all-gathers run on dist_comm2, and start in the order
 * of their all-to-alls (seq), whatever order those complete in. */
typedef struct compress {
    int phase;     /* 0 idle, 1 all-to-all in flight, 2 all-gather in flight */
    uint64_t seq;  /* its all-to-all's rank among all compressed means */
    int64_t n, chunk; /* values, and values per rank's slice (n rounded up to the ranks) */
    uint16_t *buf; /* [world * chunk] sent, [world * chunk] received, [chunk] this rank's slice */
} compress;
int compress_start(compress *c, const float *x, int64_t n, MPI_Request *r); /* 0, or -1 out of memory */
uint64_t compress_next(void);                       /* the seq whose all-gather starts next */
void compress_advance(compress *c, MPI_Request *r); /* phase 1 done, seq next: sum the slice, start phase 2 */
void compress_finish(compress *c, float *x);        /* phase 2 done: x := the mean; frees */
double compress_wire_bytes(int64_t n);              /* what one rank sends for n values */
#endif

#endif
