/* A lost rank ends the job with its name instead of a hang. A rank whose
 * host loses its link sends no reset: TCP on the other side retransmits
 * for many minutes, and MPI's wait spins as long. So every wait of the
 * library's collectives is bounded: after LT_DIST_TIMEOUT seconds
 * (default 600; 0 waits forever) the rank sends a probe to every other rank
 * and waits up to half as long again for the answers. Ranks that are
 * waiting too (in any collective of the library) answer at once, so only
 * ranks that cannot be reached, or that have spent the whole timeout away
 * from the library (set it above the longest such stretch: a checkpoint
 * written, an evaluation), stay silent: they are named on stderr and the
 * job ends with MPI_Abort, exit status 1. If every rank answers, the wait
 * goes on. */
#include "dist_mpi.h"

#ifdef LT_HAVE_MPI
#include "../prof/prof.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

/* Tags of the library's point-to-point messages on dist_comm (collectives
 * never match them). */
enum { TAG_PROBE = 0x4c54, TAG_ALIVE = 0x4c55 };
#define NAME_LEN 64

static double timeout_s = 600;
static int me, nranks;
static char *names; /* [nranks][NAME_LEN]: each rank's host */

void watch_init(void) {
    MPI_Comm_rank(dist_comm, &me);
    MPI_Comm_size(dist_comm, &nranks);
    const char *s = getenv("LT_DIST_TIMEOUT");
    if (s && *s) {
        char *end;
        double v = strtod(s, &end);
        if (*end || !(v >= 0))
            fprintf(stderr, "lazytensor: LT_DIST_TIMEOUT='%s' is not a number of seconds >= 0; using %g\n", s,
                    timeout_s);
        else timeout_s = v;
    }
    char mine[NAME_LEN] = {0};
    int len = 0;
    char full[MPI_MAX_PROCESSOR_NAME];
    if (MPI_Get_processor_name(full, &len) == MPI_SUCCESS) snprintf(mine, sizeof mine, "%.*s", len, full);
    names = core_calloc((size_t)nranks, NAME_LEN);
    if (names) MPI_Allgather(mine, NAME_LEN, MPI_CHAR, names, NAME_LEN, MPI_CHAR, dist_comm);
}

static const char *host(int r) { return names && names[(size_t)r * NAME_LEN] ? names + (size_t)r * NAME_LEN : "?"; }

/* Answers every probe that has arrived: this rank is alive. */
static void answer_probes(void) {
    static int token; /* the answer's bytes must outlive the send */
    for (;;) {
        int flag = 0, x;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_PROBE, dist_comm, &flag, &st);
        if (!flag) return;
        MPI_Recv(&x, 1, MPI_INT, st.MPI_SOURCE, TAG_PROBE, dist_comm, MPI_STATUS_IGNORE);
        MPI_Request r;
        MPI_Isend(&token, 1, MPI_INT, st.MPI_SOURCE, TAG_ALIVE, dist_comm, &r);
        MPI_Request_free(&r);
    }
}

/* The wait for ready(arg) has lasted `waited` ns: asks the others whether
 * they are alive. Returns when they all answered or it is ready; ends the
 * job when some did not answer within the window. */
static void probe_peers(int (*ready)(void *), void *arg, const char *what, int64_t bytes, uint64_t waited) {
    static int token;
    MPI_Request *q = core_malloc(sizeof *q * (size_t)nranks * 2);
    int *in = core_calloc((size_t)nranks, sizeof *in);
    if (!q || !in) { /* cannot even ask: keep waiting as MPI would */
        core_free(q), core_free(in);
        return;
    }
    for (int p = 0; p < nranks; p++) {
        q[p] = q[nranks + p] = MPI_REQUEST_NULL;
        if (p == me) continue;
        MPI_Isend(&token, 1, MPI_INT, p, TAG_PROBE, dist_comm, &q[p]);
        MPI_Irecv(&in[p], 1, MPI_INT, p, TAG_ALIVE, dist_comm, &q[nranks + p]);
    }
    double window = timeout_s / 2 < 1 ? 1 : timeout_s / 2 > 60 ? 60 : timeout_s / 2;
    uint64_t t0 = prof_now_ns(), end = t0 + (uint64_t)(window * 1e9);
    int silent = nranks - 1, done = 0;
    while (silent > 0 && !done && prof_now_ns() < end) {
        answer_probes();
        done = ready(arg);
        silent = 0;
        for (int p = 0; p < nranks; p++) {
            int got = 1;
            if (q[nranks + p] != MPI_REQUEST_NULL) MPI_Test(&q[nranks + p], &got, MPI_STATUS_IGNORE);
            silent += !got;
        }
    }
    if (silent > 0 && !done) {
        char list[512];
        int k = 0;
        for (int p = 0; p < nranks && k < (int)sizeof list - 80; p++)
            if (q[nranks + p] != MPI_REQUEST_NULL)
                k += snprintf(list + k, sizeof list - (size_t)k, "%s%d (%s)", k ? ", rank " : "rank ", p, host(p));
        fprintf(stderr,
                "lazytensor: rank %d (%s): %s of %lld bytes waited %.0f s, and %s did not answer a probe within %.0f "
                "s more: lost (its process or its network link is down); ending the job (LT_DIST_TIMEOUT=%g)\n",
                me, host(me), what, (long long)bytes, (double)waited * 1e-9, list, window, timeout_s);
        fflush(stderr);
        MPI_Abort(dist_comm, 1);
        exit(1);
    }
    /* Everyone answered, or the collective completed: the probes still out
     * are dropped (an answer that comes later matches nothing). */
    for (int p = 0; p < nranks; p++) {
        if (q[nranks + p] != MPI_REQUEST_NULL) {
            MPI_Cancel(&q[nranks + p]);
            MPI_Request_free(&q[nranks + p]);
        }
        if (q[p] != MPI_REQUEST_NULL) MPI_Request_free(&q[p]);
    }
    if (!done)
        fprintf(stderr, "lazytensor: rank %d (%s): %s has waited %.0f s; every rank answers, still waiting\n", me,
                host(me), what, (double)(prof_now_ns() - t0 + waited) * 1e-9);
    core_free(q), core_free(in);
}

void watch_until(int (*ready)(void *), void *arg, const char *what, int64_t bytes) {
    uint64_t t0 = prof_now_ns(), next = t0 + (uint64_t)(timeout_s * 1e9);
    for (unsigned spin = 1;; spin++) {
        if (ready(arg)) return;
        if (spin % 64) continue;
        answer_probes();
        if (nranks > 1 && !(spin % 4096)) sched_yield(); /* a spin that lasts gives a shared core away */
        uint64_t now = prof_now_ns();
        if (timeout_s <= 0 || nranks <= 1 || now < next) continue;
        probe_peers(ready, arg, what, bytes, now - t0);
        next = prof_now_ns() + (uint64_t)(timeout_s * 1e9);
    }
}

static int test(void *r) {
    int done = 0;
    MPI_Test(r, &done, MPI_STATUS_IGNORE); /* spins as MPI_Wait does, which also only polls */
    return done;
}

void watch_wait(MPI_Request *r, const char *what, int64_t bytes) {
    if (timeout_s <= 0 || nranks <= 1) {
        MPI_Wait(r, MPI_STATUS_IGNORE);
        return;
    }
    watch_until(test, r, what, bytes);
}
#endif
