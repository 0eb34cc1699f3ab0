/* The threading contract of lazytensor.h: one thread at a time, any thread;
 * the error state is per thread. Checks that an error set in one thread is
 * invisible in another, and that the library, its tensors and its caches
 * carry over when use passes from thread to thread through a join or a
 * mutex (a happens-before edge). */
#include "harness.h"

#include <pthread.h>

static const int64_t s4[1] = {4};

static void *set_error(void *arg) {
    (void)arg;
    int seen_before = lt_error(); /* the main thread's error is not visible here */
    lt_tensor *r = lt_add(NULL, NULL);
    int here = lt_error();
    lt_clear_error();
    return (void *)(intptr_t)(!r && seen_before == 0 && here == LT_ERR_NULL ? 1 : 0);
}

TEST(errors_are_per_thread) {
    CHECK(isnan(lt_item(NULL))); /* an error in the main thread */
    int code = lt_error();
    char msg[512];
    snprintf(msg, sizeof msg, "%s", lt_error_message());
    pthread_t th;
    void *ok = NULL;
    CHECK(pthread_create(&th, NULL, set_error, NULL) == 0);
    CHECK(pthread_join(th, &ok) == 0);
    CHECK(ok == (void *)1);
    /* the other thread's error and its clear did not touch ours */
    CHECK(lt_error() == code && code == LT_ERR_NULL && !strcmp(lt_error_message(), msg));
    lt_clear_error();
    /* and the other way: a clean thread stays clean while another fails */
    CHECK(pthread_create(&th, NULL, set_error, NULL) == 0);
    CHECK(pthread_join(th, &ok) == 0);
    CHECK(ok == (void *)1 && lt_error() == 0);
}

/* Handoff: thread 1 traces and syncs, thread 2 continues on the same
 * tensors (cache hits included), the main thread checks and frees. */
static lt_tensor *acc, *one;
static void *work(void *arg) {
    int steps = (int)(intptr_t)arg;
    for (int i = 0; i < steps; i++) {
        lt_add_(acc, one);
        lt_mark_step();
    }
    return (void *)(intptr_t)(lt_error() == 0);
}

TEST(handoff_by_join) {
    acc = lt_zeros(LT_F32, 1, s4);
    one = lt_ones(LT_F32, 1, s4);
    double hits0 = lt_metric("CachedCompile");
    for (int t = 0; t < 4; t++) {
        pthread_t th;
        void *ok = NULL;
        CHECK(pthread_create(&th, NULL, work, (void *)(intptr_t)5) == 0);
        CHECK(pthread_join(th, &ok) == 0);
        CHECK(ok == (void *)1);
    }
    EXPECT_VALUES(acc, 0, 20, 20, 20, 20);
    CHECK(lt_metric("CachedCompile") > hits0); /* the compile cache carried over */
    lt_free(acc);
    lt_free(one);
}

/* Two threads alternate under a mutex: each turn is a traced op and a sync. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int turn, bad;
static void *alternate(void *arg) {
    int me = (int)(intptr_t)arg;
    for (int done = 0; done < 10;) {
        pthread_mutex_lock(&mu);
        if (turn % 2 == me) {
            lt_tensor *t = lt_mul_scalar(acc, 1.0); /* a new handle made in this thread ... */
            lt_add_(acc, one);
            float f[4];
            if (lt_to_host(t, f, sizeof f) || f[0] != (float)turn) bad++;
            lt_free(t); /* ... freed in the same thread; acc and one are shared */
            if (lt_error()) bad++;
            turn++;
            done++;
        }
        pthread_mutex_unlock(&mu);
    }
    return NULL;
}

TEST(handoff_by_mutex) {
    acc = lt_zeros(LT_F32, 1, s4);
    one = lt_ones(LT_F32, 1, s4);
    pthread_t a, b;
    CHECK(pthread_create(&a, NULL, alternate, (void *)0) == 0);
    CHECK(pthread_create(&b, NULL, alternate, (void *)1) == 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    CHECK(bad == 0 && turn == 20);
    EXPECT_VALUES(acc, 0, 20, 20, 20, 20);
    lt_free(acc);
    lt_free(one);
}

int main(void) {
    RUN(errors_are_per_thread);
    RUN(handoff_by_join);
    RUN(handoff_by_mutex);
    return h_report();
}
