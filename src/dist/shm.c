/* The all-reduce of ranks that share one machine, through shared memory
 * instead of MPI (dist_mpi.h). OpenMPI moves a non-blocking all-reduce
 * only inside MPI calls, on the rank's own core, through its own copies:
 * two ranks of ResNet-18 spent ~40 ms a step there. Here each rank's
 * staging buffers (the buckets of coll.c) live in a file in /dev/shm that
 * every other rank of the machine maps, and an all-reduce of n values is:
 *
 *   start   the rank publishes its buffer (slot seq % NSLOT of its table:
 *           the offset, then seq with release order);
 *   reduce  once every rank has published, each rank sums its 1/N slice of
 *           every rank's buffer, in rank order, into its own buffer's
 *           slice (MEAN divides there), and marks it reduced;
 *   gather  each rank copies every other rank's reduced slice into its own
 *           buffer, then tells that rank one reader fewer.
 *
 * Every rank ends with the same bits (each slice is summed once). The
 * three steps run in dist_progress between kernels, as soon as they can,
 * and in dist_wait; a rank writes into a buffer again (dist_buffer_ready)
 * only after every other rank has gathered its slice of the last use.
 * Collectives start in the same order on every rank (the graphs are the
 * same: dist_check_key), so seq names the same all-reduce everywhere.
 *
 * Whether the ranks use it is decided once, by all of them together, in
 * shm_init: all ranks on one machine, LT_DIST_SHM not 0, and every rank
 * could create and map the files. After that a buffer that cannot grow
 * the file ends the job with a message (the ranks must agree on which
 * all-reduces go through shared memory, so there is no quiet fallback). */
#include "dist_mpi.h"

#ifdef LT_HAVE_MPI
#include "../prof/prof.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define NSLOT 4096 /* slots of a rank's table: SHM_MAX_INFLIGHT (dist_mpi.h) are in flight at most */
_Static_assert(SHM_MAX_INFLIGHT < NSLOT, "a slot is written again only after its all-reduce completed here");
#define RESERVE ((size_t)1 << 36)   /* address space each file is mapped with (it grows inside) */
#define ALIGN 64

typedef struct table {
    _Atomic uint64_t seq[NSLOT]; /* the all-reduce published in each slot */
    int64_t off[NSLOT], n[NSLOT];
} table;

/* Before each buffer, in the shared file. */
typedef struct bufhead {
    _Atomic int64_t readers;  /* other ranks still to gather from it */
    _Atomic uint64_t reduced; /* seq of the all-reduce whose slice is summed in it */
    int64_t bytes;
    char pad[ALIGN - 24];
} bufhead;

#define HEAD_BYTES (((sizeof(table) + ALIGN - 1) / ALIGN) * ALIGN)

static int on, fd = -1, nr, me;
static const char *lo_mine, *hi_mine; /* this rank's buffers' range, kept after shm_finalize */
static char **base;          /* [nr]: every rank's file as this rank maps it */
static int64_t size;         /* this rank's file */
static uint64_t next_seq = 1;

/* This rank's free space: blocks of its file, sorted by offset. */
typedef struct block { int64_t off, len; } block;
static block *freel;
static int nfree, capfree;

static table *tab(int r) { return (table *)base[r]; }
static bufhead *head_of(const void *buf) { return (bufhead *)buf - 1; }

int shm_on(void) { return on; }

int shm_owns(const void *p) { return (const char *)p >= lo_mine && (const char *)p < hi_mine; }

static void fail(const char *what) {
    fprintf(stderr,
            "lazytensor: rank %d: the shared-memory all-reduce cannot %s (%s); /dev/shm is full or limited: "
            "give it room, or set LT_DIST_SHM=0 to all-reduce through MPI\n",
            me, what, strerror(errno));
    fflush(stderr);
    MPI_Abort(dist_comm, 1);
    exit(1);
}

/* Room the ranks' buffers could need: a model's gradients once. A
 * container's default /dev/shm (64 MB under Docker) has less than a
 * ResNet-50's, so such a machine all-reduces through MPI instead of ending
 * the job later, when a bucket does not fit. */
#define MIN_FREE ((uint64_t)1 << 30)

static int room(void) {
    struct statvfs v;
    return statvfs("/dev/shm", &v) == 0 && (uint64_t)v.f_bavail * v.f_frsize >= MIN_FREE;
}

/* Unmaps every file mapped so far and closes this rank's. */
static void unmap_all(void) {
    for (int r = 0; base && r < nr; r++)
        if (base[r]) munmap(base[r], RESERVE);
    core_free(base);
    base = NULL;
    if (fd >= 0) close(fd);
    fd = -1;
}

int shm_init(int world, int rank, int local) {
    const char *e = getenv("LT_DIST_SHM");
    int want = world > 1 && local == world && !(e && !strcmp(e, "0")) && room();
    int all = 0;
    MPI_Allreduce(&want, &all, 1, MPI_INT, MPI_MIN, dist_comm);
    if (!all) return 0;
    nr = world, me = rank;
    /* A name of this job: rank 0's pid and clock. */
    long id[2] = {(long)getpid(), (long)(prof_now_ns() & 0x7fffffff)};
    MPI_Bcast(id, 2, MPI_LONG, 0, dist_comm);
    char name[96];
    int ok = (base = core_calloc((size_t)nr, sizeof *base)) != NULL;
    if (ok) {
        snprintf(name, sizeof name, "/lazytensor-%ld-%ld-%d", id[0], id[1], me);
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        size = (int64_t)HEAD_BYTES;
        ok = fd >= 0 && posix_fallocate(fd, 0, size) == 0;
        if (ok) ok = (base[me] = mmap(NULL, RESERVE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) != MAP_FAILED;
        if (!ok && base) base[me] = NULL;
    }
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, dist_comm);
    for (int r = 0; all_ok && r < nr; r++) { /* every file exists now: map the others' */
        if (r == me) continue;
        char peer[96];
        snprintf(peer, sizeof peer, "/lazytensor-%ld-%ld-%d", id[0], id[1], r);
        int pfd = shm_open(peer, O_RDWR, 0600);
        if (pfd < 0 || (base[r] = mmap(NULL, RESERVE, PROT_READ | PROT_WRITE, MAP_SHARED, pfd, 0)) == MAP_FAILED)
            ok = 0, base[r] = NULL;
        if (pfd >= 0) close(pfd);
    }
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, dist_comm);
    if (fd >= 0) shm_unlink(name); /* mapped everywhere: nothing is left in /dev/shm, even if a rank dies */
    if (all_ok) {
        on = 1;
        lo_mine = hi_mine = base[me] + HEAD_BYTES;
        return 1;
    }
    unmap_all();
    if (me == 0) fprintf(stderr, "lazytensor: the shared-memory all-reduce could not map its files; all-reducing through MPI\n");
    return 0;
}

void shm_finalize(void) {
    if (!on) return;
    unmap_all();
    core_free(freel);
    freel = NULL, nfree = capfree = 0;
    on = 0;
}

static int add_free(int at, block b) {
    if (nfree == capfree) {
        block *f = core_realloc(freel, sizeof *f * (size_t)(capfree ? 2 * capfree : 16));
        if (!f) return -1;
        freel = f, capfree = capfree ? 2 * capfree : 16;
    }
    memmove(&freel[at + 1], &freel[at], sizeof *freel * (size_t)(nfree - at));
    freel[at] = b;
    nfree++;
    return 0;
}

void *shm_alloc(size_t bytes) {
    int64_t need = (int64_t)sizeof(bufhead) + (int64_t)((bytes + ALIGN - 1) / ALIGN * ALIGN);
    int64_t off = -1;
    for (int i = 0; i < nfree && off < 0; i++)
        if (freel[i].len >= need) {
            off = freel[i].off;
            freel[i].off += need, freel[i].len -= need;
            if (!freel[i].len) memmove(&freel[i], &freel[i + 1], sizeof *freel * (size_t)(--nfree - i));
        }
    if (off < 0) { /* grow the file; its pages are taken now, so a full /dev/shm is an error here, not a SIGBUS later */
        if (size + need > (int64_t)RESERVE) {
            errno = ENOMEM;
            fail("map more than 64 GB");
        }
        int rc = posix_fallocate(fd, size, need);
        if (rc) errno = rc, fail("grow its file");
        off = size;
        size += need;
        hi_mine = base[me] + size;
    }
    bufhead *h = (bufhead *)(base[me] + off);
    atomic_store(&h->readers, 0);
    atomic_store(&h->reduced, 0);
    h->bytes = need;
    return h + 1;
}

void shm_free(void *p) {
    if (!on) return; /* after shm_finalize: unmapped with the rest */
    bufhead *h = head_of(p);
    shm_ready(p); /* the others may still be reading it */
    block b = {(char *)h - base[me], h->bytes};
    int at = 0;
    while (at < nfree && freel[at].off < b.off) at++;
    if (at > 0 && freel[at - 1].off + freel[at - 1].len == b.off) { /* merge with the blocks beside it */
        freel[--at].len += b.len;
    } else if (add_free(at, b)) {
        return; /* no memory for the list: the block stays unused */
    }
    if (at + 1 < nfree && freel[at].off + freel[at].len == freel[at + 1].off) {
        freel[at].len += freel[at + 1].len;
        memmove(&freel[at + 1], &freel[at + 2], sizeof *freel * (size_t)(nfree - at - 2));
        nfree--;
    }
}

#if defined(__x86_64__) || defined(__i386__)
#define CPU_RELAX() __builtin_ia32_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

/* Waits until ready(arg): a short spin, then watch_until (LT_DIST_TIMEOUT). */
static void spin(int (*ready)(void *), void *arg, const char *what, int64_t bytes) {
    for (int i = 0; i < 1024; i++) {
        if (ready(arg)) return;
        CPU_RELAX();
    }
    watch_until(ready, arg, what, bytes);
}

static int no_readers(void *p) { return atomic_load_explicit(&head_of(p)->readers, memory_order_acquire) == 0; }

void shm_ready(void *p) {
    if (on) spin(no_readers, p, "all_reduce (shared memory: reuse of a buffer)", head_of(p)->bytes);
}

/* Slice r of n values: [lo, hi), each slice a multiple of 64 bytes but the last. */
static void slice(const shm_req *q, int r, int64_t *lo, int64_t *hi) {
    int64_t per = ALIGN / (int64_t)dtype_size(q->dt), c = (q->n + nr - 1) / nr;
    c = (c + per - 1) / per * per;
    *lo = r * c < q->n ? r * c : q->n;
    *hi = (r + 1) * c < q->n ? (r + 1) * c : q->n;
}

void shm_start(shm_req *q, void *buf, int64_t n, lt_dtype dt, int op) {
    *q = (shm_req){.seq = next_seq++, .buf = buf, .n = n, .dt = dt, .op = op, .peer = me == 0 ? 1 : 0};
    int s = (int)(q->seq % NSLOT);
    atomic_store_explicit(&head_of(buf)->readers, nr - 1, memory_order_relaxed);
    table *t = tab(me);
    t->off[s] = (char *)buf - base[me];
    t->n[s] = n;
    atomic_store_explicit(&t->seq[s], q->seq, memory_order_release);
}

static int published(const shm_req *q, int r) {
    return atomic_load_explicit(&tab(r)->seq[q->seq % NSLOT], memory_order_acquire) == q->seq;
}

static char *buffer_of(const shm_req *q, int r) {
    int s = (int)(q->seq % NSLOT);
    LT_ASSERT(tab(r)->n[s] == q->n); /* the same graph on every rank: dist_check_key */
    return base[r] + tab(r)->off[s];
}

/* The sum (or max, min) over the ranks of values [lo, hi) of src[0..nr),
 * in rank order, into dst; E is the element, T the type summed in, LOAD
 * and STORE convert. In blocks that stay in L1, the operation hoisted out
 * of the loops, so that they vectorize. */
#ifdef _OPENMP
#define SIMD _Pragma("omp simd")
#else
#define SIMD
#endif
#define BLOCK 1024
#define MAXNAN(a, b) ((a) > (b) || (a) != (a) ? (a) : (b)) /* NaN wins, as MPI's and torch's max */
#define MINNAN(a, b) ((a) < (b) || (a) != (a) ? (a) : (b))
#define REDUCER(name, E, T, LOAD, STORE)                                                        \
    static void name(E *dst, char *const *src, int64_t lo, int64_t hi, int op) {          \
        T acc[BLOCK];                                                                           \
        for (int64_t b = lo; b < hi; b += BLOCK) {                                              \
            int m = (int)(hi - b < BLOCK ? hi - b : BLOCK);                                     \
            const E *s = (const E *)src[0] + b;                                                 \
            SIMD for (int i = 0; i < m; i++) acc[i] = LOAD(s[i]);                               \
            for (int r = 1; r < nr; r++) {                                                      \
                s = (const E *)src[r] + b;                                                      \
                if (op == DIST_MAX) SIMD for (int i = 0; i < m; i++) acc[i] = MAXNAN(acc[i], (T)LOAD(s[i])); \
                else if (op == DIST_MIN) SIMD for (int i = 0; i < m; i++) acc[i] = MINNAN(acc[i], (T)LOAD(s[i])); \
                else SIMD for (int i = 0; i < m; i++) acc[i] += LOAD(s[i]);                     \
            }                                                                                   \
            if (op == DIST_MEAN) SIMD for (int i = 0; i < m; i++) acc[i] /= (T)nr;              \
            SIMD for (int i = 0; i < m; i++) dst[b + i] = STORE(acc[i]);                        \
        }                                                                                       \
    }
#define AS_IS(x) (x)
REDUCER(reduce_f32, float, float, AS_IS, AS_IS)
REDUCER(reduce_f64, double, double, AS_IS, AS_IS)
REDUCER(reduce_bf16, uint16_t, float, bf16_to_f32, bf16_from_f32) /* in float32, rounded once */
REDUCER(reduce_i32, int32_t, int32_t, AS_IS, AS_IS)
REDUCER(reduce_i64, int64_t, int64_t, AS_IS, AS_IS)
REDUCER(reduce_u8, uint8_t, uint8_t, AS_IS, AS_IS) /* wraps modulo 256, as torch's uint8 */
/* bool: 0 or 1, so SUM (a logical or) is MAX, and MIN an and */
static void reduce_bool(uint8_t *dst, char *const *src, int64_t lo, int64_t hi, int op) {
    reduce_u8(dst, src, lo, hi, op == DIST_MIN ? DIST_MIN : DIST_MAX);
}

/* Every rank has published q: this rank's slice, summed. The ranks'
 * buffers are kept in q->src from here on, so that a rank may reuse a
 * slot of its table as soon as its own all-reduce completed. */
static void reduce_slice(shm_req *q) {
    char **src = q->src = core_malloc(sizeof *src * (size_t)nr);
    if (!src) fail("hold a list of the ranks' buffers");
    for (int r = 0; r < nr; r++) src[r] = r == me ? q->buf : buffer_of(q, r);
    int64_t lo, hi;
    slice(q, me, &lo, &hi);
    void *dst = q->buf;
    switch (q->dt) {
    case LT_F32: reduce_f32(dst, src, lo, hi, q->op); break;
    case LT_F64: reduce_f64(dst, src, lo, hi, q->op); break;
    case LT_BF16: reduce_bf16(dst, src, lo, hi, q->op); break;
    case LT_I32: reduce_i32(dst, src, lo, hi, q->op); break;
    case LT_I64: reduce_i64(dst, src, lo, hi, q->op); break;
    case LT_U8: reduce_u8(dst, src, lo, hi, q->op); break;
    case LT_BOOL: reduce_bool(dst, src, lo, hi, q->op); break;
    }
    atomic_store_explicit(&head_of(q->buf)->reduced, q->seq, memory_order_release);
}

static int all_published(void *arg) {
    shm_req *q = arg;
    for (int r = 0; r < nr; r++)
        if (!published(q, r)) return 0;
    return 1;
}

static int peer_reduced(void *arg) {
    shm_req *q = arg;
    return atomic_load_explicit(&head_of(q->src[q->peer])->reduced, memory_order_acquire) == q->seq;
}

/* Copies the next peer's reduced slice into this rank's buffer. */
static void gather_one(shm_req *q) {
    int64_t lo, hi;
    slice(q, q->peer, &lo, &hi);
    size_t es = dtype_size(q->dt);
    const char *from = q->src[q->peer];
    if (hi > lo) memcpy((char *)q->buf + lo * (int64_t)es, from + lo * (int64_t)es, (size_t)(hi - lo) * es);
    atomic_fetch_sub_explicit(&head_of(from)->readers, 1, memory_order_release);
    q->peer++;
    if (q->peer == me) q->peer++;
    if (q->peer >= nr) {
        core_free(q->src);
        q->src = NULL;
    }
}

/* Takes q as far as the other ranks let it, or (wait) to its end,
 * waiting for them; 1 when it is done. */
static int advance(shm_req *q, int wait, int64_t bytes) {
    if (!q->reduced) {
        if (wait) spin(all_published, q, "all_reduce (shared memory: the other ranks' buffers)", bytes);
        else if (!all_published(q)) return 0;
        reduce_slice(q);
        q->reduced = 1;
    }
    while (q->peer < nr) {
        if (wait) spin(peer_reduced, q, "all_reduce (shared memory: the other ranks' sums)", bytes);
        else if (!peer_reduced(q)) return 0;
        gather_one(q);
    }
    return 1;
}

int shm_progress(shm_req *q) { return advance(q, 0, 0); }
void shm_wait(shm_req *q, int64_t bytes) { advance(q, 1, bytes); }
#endif
