/* dist: the process group over MPI (DESIGN 12). dist.c is the only file of
 * the project that includes mpi.h. Built without MPI, or run without a
 * launcher (mpirun, srun), the world is one rank and every collective is
 * the identity (MEAN divides by 1), so nothing above this layer needs to
 * know whether MPI exists.
 *
 * Only the thread that calls the library calls MPI (MPI_THREAD_FUNNELED);
 * kernels' OpenMP threads never do. */
#ifndef LT_DIST_H
#define LT_DIST_H

#include "../core/core.h"

/* Reduction of ALL_REDUCE (ia[0]); the first DIST_NOPS are the values of
 * the public enum lt_reduce_op. DIST_MEAN_BF16, float32 only, is the mean
 * with bfloat16 on the wire and the sum taken in float32 (compress.c):
 * lt_dist_average_grads' reduction under lt_dist_set_grad_compress. */
enum dist_op { DIST_SUM, DIST_MEAN, DIST_MAX, DIST_MIN, DIST_MEAN_BF16 };
#define DIST_NOPS 4

/* Joins the job once (idempotent): MPI_Init when launched by a launcher,
 * else a world of one. 0, or -1 with an error set. The getters call it. */
int dist_init(void);
int dist_rank(void);
int dist_world(void);
int dist_local_size(void); /* ranks on this machine (MPI_COMM_TYPE_SHARED) */
void dist_finalize(void);  /* MPI_Finalize if we initialized MPI; also at exit */
void dist_abort(int code); /* ends every rank of the job (MPI_Abort); exit(code) in a world of one */

/* Blocking collectives on n elements of dt, in place. BOOL: SUM is a
 * logical or; MEAN needs a float dtype (checked by the api). 0 or -1.
 * Every wait of this layer is bounded by LT_DIST_TIMEOUT (watch.c): a rank
 * that cannot be reached ends the job with its name, not a hang. */
int dist_all_reduce(void *buf, int64_t n, lt_dtype dt, int op);
int dist_broadcast(void *buf, int64_t n, lt_dtype dt, int root);
/* ZeRO-1's pair, in place on buf of world * chunk elements (chunk <=
 * INT_MAX, checked by the api). Reduce-scatter: buf holds this rank's
 * whole operand; afterwards buf[0, chunk) holds the reduction (op) of
 * every rank's chunk number rank. All-gather: buf[rank * chunk, +chunk)
 * holds this rank's chunk; afterwards buf holds every rank's, in rank
 * order. */
int dist_reduce_scatter(void *buf, int64_t chunk, lt_dtype dt, int op);
int dist_all_gather(void *buf, int64_t chunk, lt_dtype dt);

/* The same, non-blocking: returns a request id >= 0 (or -1, error set) to
 * complete with dist_wait, which also divides for MEAN. n counts buf's
 * elements for ALL_REDUCE and BROADCAST, the chunk for REDUCE_SCATTER and
 * ALL_GATHER; arg is the reduction or the root. Requests complete in any
 * order; dist_progress lets MPI move the outstanding ones forward
 * (OpenMPI progresses only inside MPI calls). */
/* Buffers for the collectives' operands (the cpu backend's staging
 * buffers). When every rank is on one machine they are shared memory
 * (shm.c), and an all-reduce of one runs through it instead of MPI: before
 * writing into one again, wait with dist_buffer_ready until the other
 * ranks have read what its last collective left there. Otherwise plain
 * aligned memory, and dist_buffer_ready returns at once. */
void *dist_buffer_alloc(size_t bytes);
void dist_buffer_free(void *p);
void dist_buffer_ready(void *p);
int dist_buffer_shared(void); /* are they shared memory? (the same answer on every rank) */

enum dist_coll { DIST_ALL_REDUCE, DIST_BROADCAST, DIST_REDUCE_SCATTER, DIST_ALL_GATHER };
int dist_start(enum dist_coll kind, void *buf, int64_t n, lt_dtype dt, int arg);
int dist_wait(int req);
void dist_progress(void);
int dist_pending(void); /* outstanding requests */

/* lt_dist_set_shard_optimizer (ZeRO-1): dist_shard_optimizer is true when
 * it is on and the world has several ranks. The optimizers read it when
 * they are made; lt_dist_average_grads and lt_clip_grad_norm_ when called. */
void dist_set_shard_optimizer(int on);
int dist_shard_optimizer(void);

/* Before a graph with collectives runs: do all ranks run the same graph?
 * (one small allgather of the graph key). -1 with an error naming the
 * ranks whose keys differ: ranks that diverge get an error, not a
 * deadlock or a wrong sum. */
int dist_check_key(uint64_t key);

#endif
