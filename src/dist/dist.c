/* The process group over MPI; a world of one without it (dist.h). */
#include "dist_mpi.h"

#include "../prof/prof.h"

static int inited, finalized, world = 1, rank, local = 1;

/* MEAN divides after the sum, in the dtype (as PyTorch's all_reduce then div_). */
static void divide(void *buf, int64_t n, lt_dtype dt) {
    if (world == 1) return;
    if (dt == LT_F32)
        for (int64_t i = 0; i < n; i++) ((float *)buf)[i] /= (float)world;
    else if (dt == LT_F64)
        for (int64_t i = 0; i < n; i++) ((double *)buf)[i] /= (double)world;
    else if (dt == LT_BF16)
        for (int64_t i = 0; i < n; i++) {
            uint16_t *h = (uint16_t *)buf + i;
            *h = bf16_from_f32(bf16_to_f32(*h) / (float)world);
        }
}

/* A request: MPI's, plus what its completion needs (n: buf's elements,
 * the chunk for a reduce-scatter or an all-gather; done: nothing left to
 * wait for or divide). */
typedef struct req {
    int used, kind, op, done;
    int shm; /* through shared memory (shm.c): 1 in flight, 2 done by dist_progress; MEAN divided there */
    void *buf;
    int64_t n;
    lt_dtype dt;
    uint64_t t0;
#ifdef LT_HAVE_MPI
    MPI_Request r;
    compress c; /* DIST_MEAN_BF16: its two exchanges */
    shm_req s;
#endif
} req;
static req *reqs;
static int nreqs, npending;

#ifdef LT_HAVE_MPI
/* All-reduces through shared memory with q->shm == 1 (shm.c). */
static int shm_inflight;
static void shm_done(req *q) {
    q->shm = 2;
    shm_inflight--;
}
/* The table of shm.c holds a bounded number of all-reduces in flight: a
 * graph with more (thousands of unbucketed tensors) completes the oldest
 * before starting another. Every rank does so at the same point. */
static void shm_complete_oldest(void) {
    req *old = NULL;
    for (int i = 0; i < nreqs; i++)
        if (reqs[i].used && reqs[i].shm == 1 && (!old || reqs[i].s.seq < old->s.seq)) old = &reqs[i];
    shm_wait(&old->s, old->n * (int64_t)dtype_size(old->dt));
    shm_done(old);
}
#endif

static const char *const coll_names[] = {"all_reduce", "broadcast", "reduce_scatter", "all_gather"};

/* What one rank sends for a collective over n values of dt (the chunk for
 * a reduce-scatter or an all-gather), as the bandwidth-optimal algorithms
 * move them: a ring all-reduce 2 (N - 1) / N of the payload, a pipelined
 * broadcast (N - 1) / N, a ring reduce-scatter or all-gather (N - 1)
 * chunks, the compressed mean its all-to-all and all-gather (compress.c).
 * MPI may pick another algorithm for small messages; the cluster benchmark
 * (tests/cluster) checks the estimate against the links' byte counters. */
static double wire_bytes(enum dist_coll kind, int op, int64_t n, lt_dtype dt) {
#ifdef LT_HAVE_MPI
    if (kind == DIST_ALL_REDUCE && op == DIST_MEAN_BF16) return compress_wire_bytes(n);
#endif
    (void)op;
    double b = (double)n * (double)dtype_size(dt), w = (double)world;
    switch (kind) {
    case DIST_ALL_REDUCE: return 2.0 * (w - 1) / w * b;
    case DIST_BROADCAST: return (w - 1) / w * b;
    case DIST_REDUCE_SCATTER: case DIST_ALL_GATHER: return (w - 1) * b;
    }
    return 0;
}

static void account(int slot, const char *what, int64_t n, lt_dtype dt, uint64_t t0, uint64_t waited, double wire) {
    uint64_t t1 = prof_now_ns();
    prof_add(M_AllReduceCount, 1);
    prof_add(M_AllReduceBytes, (double)n * (double)dtype_size(dt));
    prof_add(M_CommWireBytes, wire);
    prof_timer_add(M_AllReduceTime, t1 - t0);
    prof_timer_add(M_CommExposedTime, waited);
    if (LT_UNLIKELY(g_prof_trace)) {
        char args[64];
        snprintf(args, sizeof args, "\"bytes\": %lld", (long long)n * (long long)dtype_size(dt));
        prof_span_emit((enum prof_track)(TRACK_COMM + slot % TRACK_COMM_N), what, t0, t1, args);
    }
}

#ifdef LT_HAVE_MPI
MPI_Comm dist_comm = MPI_COMM_NULL, dist_comm2 = MPI_COMM_NULL;
#define comm dist_comm
static int we_init;

static int launched(void) {
    /* OpenMPI's mpirun, then PMI/PMIx launchers (Slurm's srun, hydra). */
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK") || getenv("PMI_SIZE");
}

static void at_exit(void) { dist_finalize(); }

/* bfloat16 has no MPI type: 16-bit words with our own operations, each
 * pair of values added in float and rounded, as a bf16 kernel does. */
static MPI_Op bf16_ops[3] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL}; /* SUM, MAX, MIN */
#define BF16_OP(name, expr)                                                          \
    static void name(void *in, void *inout, int *len, MPI_Datatype *type) {          \
        (void)type;                                                                  \
        const uint16_t *a = in;                                                      \
        uint16_t *b = inout;                                                         \
        for (int i = 0; i < *len; i++) {                                             \
            float x = bf16_to_f32(a[i]), y = bf16_to_f32(b[i]);                      \
            b[i] = bf16_from_f32(expr);                                              \
        }                                                                            \
    }
BF16_OP(bf16_sum, x + y)
BF16_OP(bf16_max, x > y || x != x ? x : y)
BF16_OP(bf16_min, x < y || x != x ? x : y)

static MPI_Datatype mpi_type(lt_dtype dt) {
    switch (dt) {
    case LT_F32: return MPI_FLOAT;
    case LT_F64: return MPI_DOUBLE;
    case LT_I32: return MPI_INT32_T;
    case LT_I64: return MPI_INT64_T;
    case LT_BOOL: return MPI_UINT8_T; /* 0 or 1: SUM is a bitwise (= logical) or */
    case LT_BF16: return MPI_UINT16_T;
    case LT_U8: return MPI_UINT8_T; /* SUM wraps modulo 256, as torch's uint8 */
    }
    return MPI_DATATYPE_NULL;
}

static MPI_Op mpi_op(int op, lt_dtype dt) {
    if (dt == LT_BF16) return bf16_ops[op == DIST_MAX ? 1 : op == DIST_MIN ? 2 : 0];
    switch ((enum dist_op)op) {
    case DIST_SUM: case DIST_MEAN: case DIST_MEAN_BF16: return dt == LT_BOOL ? MPI_BOR : MPI_SUM;
    case DIST_MAX: return MPI_MAX;
    case DIST_MIN: return MPI_MIN;
    }
    return MPI_OP_NULL;
}

/* MPI counts are int: larger buffers go in chunks. */
#define CHUNK ((int64_t)1 << 30)
#endif

int dist_init(void) {
    if (inited) return 0;
    inited = 1;
#ifdef LT_HAVE_MPI
    int flag = 0;
    MPI_Initialized(&flag);
    if (!flag && !launched()) return 0; /* run by hand: a world of one, no MPI at all */
    if (!flag) {
        int provided;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
            return err_set(LT_ERR_STATE, "lt_dist_init: MPI_Init_thread failed"), -1;
        we_init = 1;
        atexit(at_exit); /* a program that never calls lt_dist_finalize still leaves MPI cleanly */
    }
    /* Our own communicator: the library's collectives never match a user's. */
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &dist_comm2);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &world);
    MPI_Comm node;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
    MPI_Op_create(bf16_sum, 1, &bf16_ops[0]);
    MPI_Op_create(bf16_max, 1, &bf16_ops[1]);
    MPI_Op_create(bf16_min, 1, &bf16_ops[2]);
    watch_init();
    shm_init(world, rank, local);
#endif
    return 0;
}

int dist_rank(void) {
    dist_init();
    return rank;
}
int dist_world(void) {
    dist_init();
    return world;
}
int dist_local_size(void) {
    dist_init();
    return local;
}

void dist_finalize(void) {
    if (finalized) return;
    finalized = 1;
#ifdef LT_HAVE_MPI
    if (comm != MPI_COMM_NULL) {
        for (int i = 0; i < nreqs; i++)
            if (reqs[i].used) {
                if (reqs[i].shm == 1) shm_wait(&reqs[i].s, 0), shm_done(&reqs[i]);
                MPI_Wait(&reqs[i].r, MPI_STATUS_IGNORE);
                core_free(reqs[i].c.buf);
            }
        shm_finalize();
        MPI_Comm_free(&comm);
        MPI_Comm_free(&dist_comm2);
        for (int i = 0; i < 3; i++) MPI_Op_free(&bf16_ops[i]);
    }
    int fin = 1;
    MPI_Finalized(&fin);
    if (we_init && !fin) MPI_Finalize();
#endif
    core_free(reqs);
    reqs = NULL;
    nreqs = npending = 0;
    world = 1, rank = 0, local = 1;
}

void dist_abort(int code) {
#ifdef LT_HAVE_MPI
    if (world > 1 && !finalized) MPI_Abort(comm, code);
#endif
    exit(code);
}

static int check_open(const char *fn) {
    if (!finalized) return 0;
    return err_set(LT_ERR_STATE, "%s: the process group was finalized (lt_dist_finalize)", fn), -1;
}

#ifdef LT_HAVE_MPI
/* Starts the all-gathers of the outstanding compressed means, in their
 * order (dist_mpi.h), up to and including seq: waiting for each all-to-all
 * (block), or only as far as they have completed. */
static void advance_through(uint64_t seq, int block) {
    while (compress_next() <= seq) {
        req *q = NULL;
        for (int i = 0; i < nreqs && !q; i++)
            if (reqs[i].used && reqs[i].c.phase == 1 && reqs[i].c.seq == compress_next()) q = &reqs[i];
        if (!q) return;
        if (block) watch_wait(&q->r, "all_reduce (bf16 all-to-all)", q->n * 2);
        else {
            int done = 0;
            MPI_Test(&q->r, &done, MPI_STATUS_IGNORE);
            if (!done) return;
        }
        compress_advance(&q->c, &q->r);
    }
}

/* The compressed mean of request q's values, to its end. */
static void compress_run(req *q) {
    if (q->c.phase == 1) {
        if (q->c.seq == compress_next()) {
            watch_wait(&q->r, "all_reduce (bf16 all-to-all)", q->n * 2);
            compress_advance(&q->c, &q->r);
        } else {
            advance_through(q->c.seq, 1);
        }
    }
    watch_wait(&q->r, "all_reduce (bf16 all-gather)", q->n * 2);
    compress_finish(&q->c, q->buf);
}
#endif

int dist_all_reduce(void *buf, int64_t n, lt_dtype dt, int op) {
    if (check_open("all_reduce")) return -1;
    if (world == 1 || n == 0) return 0;
#ifdef LT_HAVE_MPI
    LT_ASSERT(op != DIST_MEAN_BF16 || dt == LT_F32);
    uint64_t t0 = prof_now_ns();
    size_t es = dtype_size(dt);
    for (int64_t i = 0; i < n; i += CHUNK) {
        int c = (int)(n - i < CHUNK ? n - i : CHUNK);
        char *p = (char *)buf + (size_t)i * es;
        if (op == DIST_MEAN_BF16) {
            advance_through(UINT64_MAX - 1, 1); /* outstanding ones first: their all-gathers come before */
            req q = {.buf = p, .n = c};
            if (compress_start(&q.c, (float *)p, c, &q.r)) return -1;
            compress_run(&q);
            continue;
        }
        MPI_Request r;
        MPI_Iallreduce(MPI_IN_PLACE, p, c, mpi_type(dt), mpi_op(op, dt), comm, &r);
        watch_wait(&r, "all_reduce", (int64_t)c * (int64_t)es);
    }
    if (op == DIST_MEAN) divide(buf, n, dt);
    account(0, "all_reduce", n, dt, t0, prof_now_ns() - t0, wire_bytes(DIST_ALL_REDUCE, op, n, dt));
#else
    (void)buf, (void)dt, (void)op;
#endif
    return 0;
}

int dist_broadcast(void *buf, int64_t n, lt_dtype dt, int root) {
    if (check_open("broadcast")) return -1;
    if (world == 1 || n == 0) return 0;
#ifdef LT_HAVE_MPI
    uint64_t t0 = prof_now_ns();
    size_t es = dtype_size(dt);
    for (int64_t i = 0; i < n; i += CHUNK) {
        int c = (int)(n - i < CHUNK ? n - i : CHUNK);
        MPI_Request r;
        MPI_Ibcast((char *)buf + (size_t)i * es, c, mpi_type(dt), root, comm, &r);
        watch_wait(&r, "broadcast", (int64_t)c * (int64_t)es);
    }
    account(0, "broadcast", n, dt, t0, prof_now_ns() - t0, wire_bytes(DIST_BROADCAST, root, n, dt));
#else
    (void)buf, (void)dt, (void)root;
#endif
    return 0;
}

#ifdef LT_HAVE_MPI
/* Starts ZeRO-1's pair on r (dist.h: in place on world * chunk elements). */
static void start_shard(enum dist_coll kind, void *buf, int64_t chunk, lt_dtype dt, int op, MPI_Request *r) {
    LT_ASSERT(chunk <= INT32_MAX && op != DIST_MEAN_BF16);
    if (kind == DIST_REDUCE_SCATTER)
        MPI_Ireduce_scatter_block(MPI_IN_PLACE, buf, (int)chunk, mpi_type(dt), mpi_op(op, dt), comm, r);
    else
        MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, (int)chunk, mpi_type(dt), comm, r);
}
#endif

static int shard_blocking(enum dist_coll kind, void *buf, int64_t chunk, lt_dtype dt, int op) {
    if (check_open(coll_names[kind])) return -1;
    if (world == 1 || chunk == 0) return 0;
#ifdef LT_HAVE_MPI
    uint64_t t0 = prof_now_ns();
    MPI_Request r;
    start_shard(kind, buf, chunk, dt, op, &r);
    watch_wait(&r, coll_names[kind], chunk * world * (int64_t)dtype_size(dt));
    if (kind == DIST_REDUCE_SCATTER && op == DIST_MEAN) divide(buf, chunk, dt);
    account(0, coll_names[kind], chunk * world, dt, t0, prof_now_ns() - t0, wire_bytes(kind, op, chunk, dt));
#else
    (void)buf, (void)dt, (void)op;
#endif
    return 0;
}

int dist_reduce_scatter(void *buf, int64_t chunk, lt_dtype dt, int op) {
    return shard_blocking(DIST_REDUCE_SCATTER, buf, chunk, dt, op);
}
int dist_all_gather(void *buf, int64_t chunk, lt_dtype dt) { return shard_blocking(DIST_ALL_GATHER, buf, chunk, dt, 0); }

int dist_start(enum dist_coll kind, void *buf, int64_t n, lt_dtype dt, int arg) {
    if (check_open(coll_names[kind])) return -1;
    int bcast = kind == DIST_BROADCAST, op_or_root = arg;
    int slot = 0;
    while (slot < nreqs && reqs[slot].used) slot++;
    if (slot == nreqs) {
        req *r = core_realloc(reqs, (size_t)(nreqs + 8) * sizeof *r);
        if (!r) return -1;
        memset(r + nreqs, 0, 8 * sizeof *r);
        reqs = r;
        nreqs += 8;
    }
    req *q = &reqs[slot];
    *q = (req){.used = 1, .kind = kind, .op = arg, .buf = buf, .n = n, .dt = dt, .t0 = prof_now_ns()};
    npending++;
#ifdef LT_HAVE_MPI
    q->r = MPI_REQUEST_NULL;
    if (world > 1 && n > 0) {
        if (kind == DIST_REDUCE_SCATTER || kind == DIST_ALL_GATHER) {
            start_shard(kind, buf, n, dt, arg, &q->r);
            return slot;
        }
        if (n > CHUNK) { /* rare: a collective over 2^30 elements runs blocking */
            int rc = bcast ? dist_broadcast(buf, n, dt, op_or_root) : dist_all_reduce(buf, n, dt, op_or_root);
            q->done = 1; /* MEAN included */
            return rc ? -1 : slot;
        }
        if (kind == DIST_ALL_REDUCE && op_or_root != DIST_MEAN_BF16 && shm_owns(buf)) {
            if (shm_inflight == SHM_MAX_INFLIGHT) shm_complete_oldest();
            shm_start(&q->s, buf, n, dt, op_or_root);
            q->shm = 1;
            shm_inflight++;
        } else if (bcast) MPI_Ibcast(buf, (int)n, mpi_type(dt), op_or_root, comm, &q->r);
        else if (op_or_root == DIST_MEAN_BF16) {
            LT_ASSERT(dt == LT_F32);
            if (compress_start(&q->c, buf, n, &q->r)) { /* out of memory for the bf16 copies: uncompressed */
                q->op = DIST_MEAN;
                MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, comm, &q->r);
            }
        } else MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, mpi_type(dt), mpi_op(op_or_root, dt), comm, &q->r);
    }
#endif
    return slot;
}

int dist_wait(int slot) {
    LT_ASSERT(slot >= 0 && slot < nreqs && reqs[slot].used);
    req *q = &reqs[slot];
    if (world > 1 && q->n > 0 && !q->done) {
        uint64_t w0 = prof_now_ns();
        enum dist_coll kind = (enum dist_coll)q->kind;
        int shard = kind == DIST_REDUCE_SCATTER || kind == DIST_ALL_GATHER;
        int64_t n = shard ? q->n * world : q->n; /* elements of buf */
#ifdef LT_HAVE_MPI
        if (q->shm) {
            if (q->shm == 1) {
                shm_wait(&q->s, n * (int64_t)dtype_size(q->dt));
                shm_done(q);
            }
        } else if (q->c.phase) {
            compress_run(q);
        } else {
            watch_wait(&q->r, coll_names[kind], n * (int64_t)dtype_size(q->dt));
        }
#endif
        if (q->op == DIST_MEAN && kind != DIST_BROADCAST && kind != DIST_ALL_GATHER && !q->shm)
            divide(q->buf, q->n, q->dt); /* a reduce-scatter's result: its chunk at the start */
        account(slot, coll_names[kind], n, q->dt, q->t0, prof_now_ns() - w0, wire_bytes(kind, q->op, q->n, q->dt));
    }
    q->used = 0;
    npending--;
    return 0;
}

void dist_progress(void) {
#ifdef LT_HAVE_MPI
    /* One test drives OpenMPI's progress engine for every outstanding
     * request; compressed means whose all-to-all is done go on to their
     * all-gather here (in order), so that it too travels while kernels run. */
    advance_through(UINT64_MAX - 1, 0);
    for (int i = 0; i < nreqs; i++) /* the shared-memory ones, as far as the other ranks let them go */
        if (reqs[i].used && reqs[i].shm == 1 && shm_progress(&reqs[i].s)) shm_done(&reqs[i]);
    for (int i = 0; i < nreqs; i++)
        if (reqs[i].used && reqs[i].r != MPI_REQUEST_NULL && reqs[i].c.phase != 1) {
            int done;
            MPI_Test(&reqs[i].r, &done, MPI_STATUS_IGNORE);
            return;
        }
#endif
}

int dist_pending(void) { return npending; }

void *dist_buffer_alloc(size_t bytes) {
#ifdef LT_HAVE_MPI
    if (dist_buffer_shared()) return shm_alloc(bytes);
#endif
    return core_aligned_alloc(bytes ? bytes : 1);
}

void dist_buffer_free(void *p) {
#ifdef LT_HAVE_MPI
    if (p && shm_owns(p)) {
        shm_free(p);
        return;
    }
#endif
    core_free(p);
}

int dist_buffer_shared(void) {
#ifdef LT_HAVE_MPI
    return dist_init() == 0 && shm_on();
#else
    return 0;
#endif
}

void dist_buffer_ready(void *p) {
#ifdef LT_HAVE_MPI
    if (shm_owns(p)) shm_ready(p);
#else
    (void)p;
#endif
}

static int shard_on;
void dist_set_shard_optimizer(int on) { shard_on = on; }
int dist_shard_optimizer(void) { return shard_on && dist_world() > 1; }

int dist_check_key(uint64_t key) {
    if (check_open("lt_mark_step")) return -1;
    if (world == 1) return 0;
#ifdef LT_HAVE_MPI
    static uint64_t syncs;
    syncs++;
    uint64_t *keys = core_malloc((size_t)world * sizeof *keys);
    if (!keys) return -1;
    MPI_Request rq;
    MPI_Iallgather(&key, 1, MPI_UINT64_T, keys, 1, MPI_UINT64_T, comm, &rq);
    watch_wait(&rq, "the graph key check", 8);
    int bad = -1;
    for (int r = 1; r < world && bad < 0; r++)
        if (keys[r] != keys[0]) bad = r;
    if (bad >= 0)
        err_set(LT_ERR_STATE,
                "lt_mark_step: the ranks traced different graphs with collectives (sync %llu): rank 0 has graph "
                "key %016llx, rank %d has %016llx (a different model, batch size or all_reduce shape on some "
                "rank?); this is rank %d",
                (unsigned long long)syncs, (unsigned long long)keys[0], bad, (unsigned long long)keys[bad], rank);
    core_free(keys);
    return bad >= 0 ? -1 : 0;
#else
    (void)key;
    return 0;
#endif
}
