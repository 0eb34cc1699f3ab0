/* The image-folder loader: decoder threads fill a ring of `prefetch` host
 * batches (the bounded queue: a thread with no free slot waits, so decoding
 * never runs more than `prefetch` batches ahead), the training thread takes
 * the batches in order and copies each into tensors. Workers get one sample
 * at a time, oldest batch first, and never touch the tensor API or the
 * library's error state. A sample's transform depends on (seed, epoch,
 * sample index) only, and a bad file's stand-in on its index only, so a
 * batch is the same for any number of workers. While the training thread
 * waits for a batch it decodes that batch's samples itself. A ready
 * batch's floats become the tensor as they are (no copy), and the slot
 * takes memory that an earlier batch's tensor gave back. */
#include "image.h"

#include "../api/api.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define MAX_STANDINS 64 /* stand-ins tried for a bad file before giving up */
#define POOL_KEEP 4     /* batch buffers kept for reuse */

/* Batch memory that the batches' tensors give back when they are freed, so
 * that the next batch is decoded into pages already mapped (a fresh
 * allocation per batch spent a fifth of the decoding time in page faults).
 * Shared by the loader and its live batch tensors; the last of them frees
 * it. Only the training thread touches it (the library's calls and the
 * loader's next/free). */
typedef struct pool {
    int refs, n;
    bool closed; /* the loader is gone: memory given back is freed */
    size_t bytes;
    float *keep[POOL_KEEP];
} pool;

static void pool_unref(pool *p) {
    if (--p->refs) return;
    for (int i = 0; i < p->n; i++) core_free(p->keep[i]);
    free(p);
}

static float *pool_get(pool *p) { return p->n ? p->keep[--p->n] : core_aligned_alloc(p->bytes); }

/* A batch tensor's give_back. */
static void pool_put(void *ctx, void *data) {
    pool *p = ctx;
    if (!p->closed && p->n < POOL_KEEP) p->keep[p->n++] = data;
    else core_free(data);
    pool_unref(p);
}

typedef struct slot {
    int64_t epoch, b, rows; /* rows 0: free */
    int64_t next_row, done;
    int64_t *idx;           /* (batch) sample indices */
    float *x;               /* (batch, C, S, S), from core_aligned_alloc */
    int64_t *y;
    char err[IMG_MSG + 512]; /* under fail_bad: the first bad file */
} slot;

struct data_floader {
    const data_folder *f;
    data_floader_cfg cfg;
    int64_t nb, sample_floats;
    int64_t *perm, perm_epoch;
    slot *slots;
    int nslots, head, count; /* ring of submitted batches, oldest at head */
    int64_t sub_epoch, sub_b; /* the next batch to submit */
    pthread_mutex_t mu;
    pthread_cond_t work, ready;
    pthread_t threads[DATA_MAX_WORKERS];
    int nthreads;
    bool stop;
    atomic_uchar *bad; /* per sample: 1 once found bad (warned once) */
    pool *pool;
    int64_t skipped, decoded;
    double wait_s;
    img_work main_work;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Decodes sample idx, or a stand-in when it is bad. Returns its label, or
 * -1 with err filled (fail_bad, or no readable stand-in). Called without
 * the lock. */
static int64_t load_sample(data_floader *l, img_work *w, int64_t epoch, int64_t idx, float *dst, char *err,
                           size_t errn) {
    const data_folder *f = l->f;
    char msg[IMG_MSG];
    int64_t cur = idx;
    for (int attempt = 0; attempt <= MAX_STANDINS; attempt++) {
        if (!atomic_load(&l->bad[cur])) {
            size_t n = 0;
            if (!img_read_file(f->paths[cur], &w->file, &w->file_cap, &n, msg) &&
                !img_transform(&l->cfg.tf, w->file, n, epoch, cur, w, dst, msg))
                return f->labels[cur];
            pthread_mutex_lock(&l->mu);
            if (!atomic_exchange(&l->bad[cur], 1)) {
                l->skipped++;
                if (l->cfg.warn && !l->cfg.fail_bad) /* failing: the error names the file */
                    fprintf(l->cfg.warn, "lazytensor: skipping %s: %s\n", f->paths[cur], msg);
            }
            pthread_mutex_unlock(&l->mu);
            if (l->cfg.fail_bad) {
                snprintf(err, errn, "%s: %s", f->paths[cur], msg);
                return -1;
            }
        }
        /* the stand-in depends on the bad sample's index alone */
        cur = (int64_t)(data_hash(l->cfg.tf.seed ^ 0xbad, (uint64_t)idx, (uint64_t)attempt) % (uint64_t)f->n);
    }
    snprintf(err, errn, "%s and %d stand-ins for it are unreadable", f->paths[idx], MAX_STANDINS);
    return -1;
}

/* The oldest submitted batch with a row not yet handed out (only the
 * batch `only` when >= 0); -1 if none. Under the lock. */
static int find_job(data_floader *l, int only) {
    for (int k = 0; k < l->count; k++) {
        int s = (l->head + k) % l->nslots;
        if ((only < 0 || s == only) && l->slots[s].next_row < l->slots[s].rows) return s;
    }
    return -1;
}

/* Runs one row of slot s (taken under the lock, which is released while
 * decoding and held again on return). */
static void run_row(data_floader *l, int s, img_work *w) {
    slot *sl = &l->slots[s];
    int64_t r = sl->next_row++, epoch = sl->epoch, idx = sl->idx[r];
    float *dst = sl->x + r * l->sample_floats;
    char err[sizeof sl->err];
    pthread_mutex_unlock(&l->mu);
    int64_t label = load_sample(l, w, epoch, idx, dst, err, sizeof err);
    pthread_mutex_lock(&l->mu);
    if (label < 0 && !sl->err[0]) memcpy(sl->err, err, sizeof err);
    sl->y[r] = label < 0 ? 0 : label;
    l->decoded++;
    if (++sl->done == sl->rows) pthread_cond_broadcast(&l->ready);
}

static void *worker(void *arg) {
    data_floader *l = arg;
    img_work w = {0};
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        int s = find_job(l, -1);
        if (s < 0) pthread_cond_wait(&l->work, &l->mu);
        else run_row(l, s, &w);
    }
    pthread_mutex_unlock(&l->mu);
    img_work_free(&w);
    return NULL;
}

/* Samples of each epoch this rank reads: every world-th of the order, from
 * rank; with drop_last only the first floor(n / world) * world, so every
 * rank has as many (torch's DistributedSampler). */
static int64_t share_of(const data_floader *l) {
    int64_t n = l->f->n, w = l->cfg.world;
    return l->cfg.drop_last ? n / w : (n - l->cfg.rank + w - 1) / w;
}

/* l->nb: this rank's batches per epoch. */
static void set_batches(data_floader *l) {
    int64_t share = share_of(l), bs = l->cfg.batch;
    l->nb = l->cfg.drop_last ? share / bs : (share + bs - 1) / bs;
}

static int64_t rows_of(const data_floader *l, int64_t b) {
    int64_t start = b * l->cfg.batch, share = share_of(l);
    if (b < 0 || b >= l->nb || start >= share) return 0;
    return share - start < l->cfg.batch ? share - start : l->cfg.batch;
}

static void build_perm(data_floader *l, int64_t epoch) {
    int64_t n = l->f->n;
    for (int64_t i = 0; i < n; i++) l->perm[i] = i;
    if (l->cfg.shuffle)
        for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates from (seed, epoch, i) */
            int64_t j = (int64_t)(data_hash(l->cfg.tf.seed, (uint64_t)epoch, (uint64_t)i) % (uint64_t)(i + 1));
            int64_t t = l->perm[i];
            l->perm[i] = l->perm[j];
            l->perm[j] = t;
        }
    l->perm_epoch = epoch;
}

/* Submits batches from (sub_epoch, sub_b) while a slot is free. Under the
 * lock. Training (shuffle) runs on into the next epoch; evaluation stops
 * at the end of its one pass. */
static void submit(data_floader *l) {
    while (l->count < l->nslots) {
        if (l->sub_b >= l->nb) {
            if (!l->cfg.shuffle) return;
            l->sub_epoch++, l->sub_b = 0;
        }
        int64_t rows = rows_of(l, l->sub_b);
        if (!rows) return;
        if (l->perm_epoch != l->sub_epoch) build_perm(l, l->sub_epoch);
        slot *sl = &l->slots[(l->head + l->count) % l->nslots];
        int64_t start = l->sub_b * l->cfg.batch; /* in this rank's share: every world-th sample */
        for (int64_t r = 0; r < rows; r++) sl->idx[r] = l->perm[(start + r) * l->cfg.world + l->cfg.rank];
        sl->epoch = l->sub_epoch, sl->b = l->sub_b, sl->rows = rows;
        sl->next_row = sl->done = 0;
        sl->err[0] = 0;
        l->count++;
        l->sub_b++;
    }
    pthread_cond_broadcast(&l->work);
}

/* Drops every submitted batch (after the rows in flight finish) and
 * restarts submission at (epoch, b). Under the lock. */
static void restart(data_floader *l, int64_t epoch, int64_t b) {
    for (int k = 0; k < l->count; k++) {
        slot *sl = &l->slots[(l->head + k) % l->nslots];
        sl->rows = sl->next_row; /* hand out nothing more */
        while (sl->done < sl->next_row) pthread_cond_wait(&l->ready, &l->mu);
        sl->rows = 0;
    }
    l->count = 0;
    l->sub_epoch = epoch, l->sub_b = b;
    submit(l);
}

void data_floader_free(data_floader *l) {
    if (!l) return;
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    pthread_cond_broadcast(&l->work);
    pthread_mutex_unlock(&l->mu);
    for (int i = 0; i < l->nthreads; i++) pthread_join(l->threads[i], NULL);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->work);
    pthread_cond_destroy(&l->ready);
    for (int i = 0; i < l->nslots && l->slots; i++) {
        free(l->slots[i].idx);
        core_free(l->slots[i].x);
        free(l->slots[i].y);
    }
    free(l->slots);
    free(l->perm);
    free(l->bad);
    if (l->pool) {
        l->pool->closed = true;
        pool_unref(l->pool);
    }
    img_work_free(&l->main_work);
    free(l);
}

data_floader *data_floader_new(const data_folder *f, const data_floader_cfg *cfg) {
    const img_tf *tf = &cfg->tf;
    if (!f || f->n < 1 || cfg->batch < 1 || cfg->workers < 0 || cfg->workers > DATA_MAX_WORKERS || cfg->prefetch < 1 ||
        cfg->world < 1 || cfg->rank < 0 || cfg->rank >= cfg->world || tf->size < 1 || tf->size > 4096 ||
        (tf->channels != 1 && tf->channels != 3) || tf->resize < 0)
        return err_set(LT_ERR_ARG, "imagefolder loader: bad configuration (batch %lld, workers %d, prefetch %d, "
                       "rank %d of %d, size %d, channels %d)", (long long)cfg->batch, cfg->workers, cfg->prefetch,
                       cfg->rank, cfg->world, tf->size, tf->channels);
    for (int c = 0; c < tf->channels; c++)
        if (!(tf->std[c] > 0) || !isfinite(tf->mean[c]))
            return err_set(LT_ERR_ARG, "imagefolder loader: channel %d: mean %g, std %g (std must be > 0)", c,
                           tf->mean[c], tf->std[c]);
    data_floader *l = calloc(1, sizeof *l);
    if (!l) return err_set(LT_ERR_OOM, "imagefolder loader: out of memory");
    l->f = f;
    l->cfg = *cfg;
    if (l->cfg.batch > f->n) l->cfg.batch = f->n;
    set_batches(l);
    l->sample_floats = (int64_t)tf->channels * tf->size * tf->size;
    l->perm_epoch = -1;
    l->nslots = cfg->prefetch;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->work, NULL);
    pthread_cond_init(&l->ready, NULL);
    l->perm = malloc(sizeof *l->perm * (size_t)f->n);
    l->bad = calloc((size_t)f->n, sizeof *l->bad);
    l->slots = calloc((size_t)l->nslots, sizeof *l->slots);
    if ((l->pool = calloc(1, sizeof *l->pool))) {
        l->pool->refs = 1;
        l->pool->bytes = sizeof(float) * (size_t)l->sample_floats * (size_t)l->cfg.batch;
    }
    bool ok = l->perm && l->bad && l->slots && l->pool;
    for (int i = 0; ok && i < l->nslots; i++) {
        slot *sl = &l->slots[i];
        sl->idx = malloc(sizeof *sl->idx * (size_t)l->cfg.batch);
        sl->y = malloc(sizeof *sl->y * (size_t)l->cfg.batch);
        sl->x = core_aligned_alloc(l->pool->bytes);
        ok = sl->idx && sl->y && sl->x;
    }
    if (!ok) {
        data_floader_free(l);
        return err_set(LT_ERR_OOM, "imagefolder loader: out of memory for %d batches of %lld", cfg->prefetch,
                       (long long)cfg->batch);
    }
    for (int i = 0; i < cfg->workers; i++) {
        if (pthread_create(&l->threads[i], NULL, worker, l)) {
            data_floader_free(l);
            return err_set(LT_ERR_OOM, "imagefolder loader: cannot start decoder thread %d", i);
        }
        l->nthreads = i + 1;
    }
    return l;
}

int data_floader_shard(data_floader *l, int rank, int world) {
    pthread_mutex_lock(&l->mu);
    int started = l->perm_epoch >= 0 || l->count;
    pthread_mutex_unlock(&l->mu);
    if (started || world < 1 || rank < 0 || rank >= world)
        return err_set(LT_ERR_ARG, "data_floader_shard: rank %d of %d%s", rank, world,
                       started ? " after the first batch (shard before reading)" : ": need 0 <= rank < world"),
               -1;
    l->cfg.rank = rank, l->cfg.world = world;
    set_batches(l);
    return 0;
}

int64_t data_floader_batches(const data_floader *l) { return l->nb; }

int64_t data_floader_next(data_floader *l, int64_t epoch, int64_t b, lt_tensor **x, lt_tensor **y) {
    *x = *y = NULL;
    int64_t rows = rows_of(l, b);
    if (!rows || epoch < 0) return 0;
    double t0 = now_s();
    pthread_mutex_lock(&l->mu);
    slot *sl = l->count ? &l->slots[l->head] : NULL;
    if (!sl || sl->epoch != epoch || sl->b != b) { /* not what was decoded ahead: a resume, a seek */
        restart(l, epoch, b);
        sl = &l->slots[l->head];
    }
    int s = l->head;
    while (sl->done < sl->rows) { /* help with our own batch rather than sleep */
        if (find_job(l, s) == s) run_row(l, s, &l->main_work);
        else pthread_cond_wait(&l->ready, &l->mu);
    }
    l->wait_s += now_s() - t0;
    pthread_mutex_unlock(&l->mu); /* the slot stays ours until it is freed below */
    int64_t rc = rows;
    if (sl->err[0]) {
        err_set(LT_ERR_FORMAT, "imagefolder: %s", sl->err);
        rc = -1;
    } else {
        int64_t xs[4] = {rows, l->cfg.tf.channels, l->cfg.tf.size, l->cfg.tf.size}, ys[1] = {rows};
        float *next = pool_get(l->pool); /* the slot's next batch */
        if (next) { /* the decoded floats become the tensor's, given back to the pool */
            l->pool->refs++;
            *x = api_adopt_data(sl->x, LT_F32, 4, xs, pool_put, l->pool);
            sl->x = next;
        }
        *y = *x ? lt_from_data(sl->y, LT_I64, 1, ys) : NULL;
        if (!*x || !*y) {
            lt_free(*x), lt_free(*y);
            *x = *y = NULL;
            rc = -1;
        }
    }
    pthread_mutex_lock(&l->mu);
    sl->rows = 0;
    l->head = (l->head + 1) % l->nslots;
    l->count--;
    submit(l);
    pthread_mutex_unlock(&l->mu);
    return rc;
}

data_floader_stats data_floader_stats_get(const data_floader *l) {
    data_floader *m = (data_floader *)l; /* the lock is not part of the value */
    pthread_mutex_lock(&m->mu);
    data_floader_stats st = {l->skipped, l->decoded, l->wait_s};
    pthread_mutex_unlock(&m->mu);
    return st;
}
