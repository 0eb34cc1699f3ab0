/* bfloat16 gradient compression (lt_dist_set_grad_compress): the mean of
 * float32 gradients with half their bytes on the wire, as PyTorch DDP's
 * bf16_compress_hook, except for where the sum is taken. MPI reduces a
 * user type pairwise in that type, so an all-reduce of bf16 would round
 * after every addition; instead each rank receives every rank's bf16 copy
 * of its own 1/N slice (all-to-all), adds them in float32 in rank order,
 * divides by N and rounds once, and an all-gather gives every rank every
 * slice. Per rank, each exchange sends (N - 1) slices of n / N values of 2
 * bytes: 2 (N - 1) / N x 2n bytes in all, half of a ring all-reduce's
 * 2 (N - 1) / N x 4n. */
#include "dist_mpi.h"

#ifdef LT_HAVE_MPI
static int ranks(void) { return dist_world(); }
static uint64_t started, advanced; /* all-to-alls started, all-gathers started */

uint64_t compress_next(void) { return advanced; }

double compress_wire_bytes(int64_t n) {
    int w = ranks();
    int64_t chunk = (n + w - 1) / w;
    return 2.0 * (double)(w - 1) * (double)chunk * 2.0;
}

int compress_start(compress *c, const float *x, int64_t n, MPI_Request *r) {
    int w = ranks();
    c->n = n;
    c->chunk = (n + w - 1) / w;
    c->buf = core_malloc(sizeof *c->buf * (size_t)(c->chunk * (2 * w + 1)));
    if (!c->buf) return -1;
    uint16_t *send = c->buf;
    for (int64_t i = 0; i < n; i++) send[i] = bf16_from_f32(x[i]);
    for (int64_t i = n; i < c->chunk * w; i++) send[i] = 0; /* the last slice's padding */
    MPI_Ialltoall(send, (int)c->chunk, MPI_UINT16_T, send + c->chunk * w, (int)c->chunk, MPI_UINT16_T, dist_comm, r);
    c->phase = 1;
    c->seq = started++;
    return 0;
}

void compress_advance(compress *c, MPI_Request *r) {
    LT_ASSERT(c->phase == 1 && c->seq == advanced);
    advanced++;
    int w = ranks();
    const uint16_t *recv = c->buf + c->chunk * w; /* [rank][chunk]: every rank's copy of this rank's slice */
    uint16_t *slice = c->buf + 2 * c->chunk * w;
    for (int64_t i = 0; i < c->chunk; i++) {
        float s = 0;
        for (int k = 0; k < w; k++) s += bf16_to_f32(recv[(int64_t)k * c->chunk + i]);
        slice[i] = bf16_from_f32(s / (float)w);
    }
    MPI_Iallgather(slice, (int)c->chunk, MPI_UINT16_T, c->buf, (int)c->chunk, MPI_UINT16_T, dist_comm2, r);
    c->phase = 2;
}

void compress_finish(compress *c, float *x) {
    for (int64_t i = 0; i < c->n; i++) x[i] = bf16_to_f32(c->buf[i]);
    core_free(c->buf);
    c->buf = NULL;
    c->phase = 0;
}
#endif
