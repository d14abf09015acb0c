/*
 * threadpool.c - a fork-join pool driven by one caller at a time (see threadpool.h).
 *
 * Work distribution: the range is cut into one contiguous share per thread, each with
 * its own atomic counter; a thread claims indices from its share, then from the
 * others' until the range is exhausted, which balances uneven tasks without a queue and
 * gives a thread the same share of every job of the same size (so a layer run again
 * finds its part of X and Y in that core's cache: 1.5-2% of MobileNetV2's and
 * ResNet-50's totals on 2 threads, more on the 7x7 depthwise layers).
 * A generation number wakes the workers for each job.  A worker joins a job only while
 * it is open, and the caller, once every index has been claimed, closes the job and
 * waits just for the workers that joined: a worker still asleep when the work ran out
 * costs nothing (waiting for it to wake would make two threads slower than one), and
 * `fn` and `arg` are never touched after the call returns.  A worker that has just
 * finished a job, or woke for one that had already closed, polls for the next one for a
 * short while before it sleeps: one
 * convolution issues several jobs back to back, and a futex wake-up costs more than
 * many of those jobs take.
 * A caller that finds the pool busy (trylock fails) runs its range alone rather than
 * queueing: that keeps concurrent callers from oversubscribing the cores or waiting on
 * each other.
 */
#include "util/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "util/error.h"
#include "util/shares.h"

struct cf_threadpool {
    int num_workers;
    pthread_t *workers;
    /* A caller's pool (cf_threadpool_create_external): no workers, none of the rest. */
    convfind_parallel_for_fn external;
    void *external_user;
    int external_threads;

    pthread_mutex_t drive;      /* held by the one caller driving the pool */
    pthread_mutex_t lock;       /* guards the fields below */
    pthread_cond_t wake;        /* workers wait here for a new generation */
    pthread_cond_t done;        /* the caller waits here for active == 0 */
    atomic_ulong generation;    /* written under `lock`; also polled without it */
    bool shutdown;
    bool open;                  /* the current job still admits workers */
    atomic_int active;          /* workers that joined the current job and are in it;
                                 * written under `lock`, also polled without it */

    cf_task_fn fn;
    void *arg;
    cf_share *slots;            /* one per thread: the caller's is 0, worker k's k + 1 */
    atomic_int started;         /* workers that have taken their slot number */
};

/* Runs the job's indices for thread `self`: its own share first, then what the others
 * have not claimed yet (util/shares.h). */
static void run_indices(cf_threadpool *pool, int self)
{
    cf_shares_run(pool->slots, (size_t)pool->num_workers + 1, (size_t)self, pool->fn,
                  pool->arg);
}

/* How long an idle worker polls for the next job before sleeping. */
#define CF_POOL_SPIN_NS 100000L

static long elapsed_ns(const struct timespec *since)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - since->tv_sec) * 1000000000L + (now.tv_nsec - since->tv_nsec);
}

/* Polls while waiting(pool, arg) holds, for at most the spin time: a thread about to
 * sleep on a condition first looks for what it waits for a little, because a futex
 * wake-up costs tens of microseconds on a loaded machine, more than many jobs take. */
static void spin_while(cf_threadpool *pool,
                       bool (*waiting)(cf_threadpool *pool, unsigned long arg),
                       unsigned long arg)
{
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (unsigned i = 1; waiting(pool, arg); i++)
        if (i % 256 == 0 && elapsed_ns(&start) > CF_POOL_SPIN_NS)
            return;
}

/* An idle worker: no job past generation `seen` yet. */
static bool no_new_job(cf_threadpool *pool, unsigned long seen)
{
    return atomic_load_explicit(&pool->generation, memory_order_relaxed) == seen;
}

/* The caller, done with its share: workers are still in the job.  The threads of a job
 * finish a few microseconds apart; sleeping on `done` at once cost up to 10% of the
 * median time of MobileNetV2's 1x1 layers at 2 threads (20 to 90 us) and 1 to 4% of
 * ResNet-50's (0.2 to 0.5 ms). */
static bool workers_in_job(cf_threadpool *pool, unsigned long unused)
{
    (void)unused;
    return atomic_load_explicit(&pool->active, memory_order_relaxed) > 0;
}

static void *worker_main(void *opaque)
{
    cf_threadpool *pool = opaque;
    const int self = atomic_fetch_add(&pool->started, 1) + 1;
    unsigned long seen = 0;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->shutdown && atomic_load(&pool->generation) == seen)
            pthread_cond_wait(&pool->wake, &pool->lock);
        if (pool->shutdown)
            break;
        seen = atomic_load(&pool->generation);
        if (!pool->open) {
            /* Woken too late: the caller did that job alone.  Poll for the next one as
             * after a job of its own; sleeping again would make it late for that one too
             * (on 20-40 us MobileNet layers 2 threads ran at 1 thread's speed). */
            pthread_mutex_unlock(&pool->lock);
            spin_while(pool, no_new_job, seen);
            pthread_mutex_lock(&pool->lock);
            continue;
        }
        pool->active++;
        pthread_mutex_unlock(&pool->lock);
        run_indices(pool, self);
        pthread_mutex_lock(&pool->lock);
        if (--pool->active == 0 && !pool->open)
            pthread_cond_signal(&pool->done);
        pthread_mutex_unlock(&pool->lock);
        spin_while(pool, no_new_job, seen);
        pthread_mutex_lock(&pool->lock);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

convfind_status cf_threadpool_create(int num_threads, cf_threadpool **out)
{
    *out = NULL;
    if (num_threads < 1)
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE, "thread count %d is < 1", num_threads);
    cf_threadpool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate a thread pool");
    pthread_mutex_init(&pool->drive, NULL);
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    atomic_init(&pool->generation, 0);
    atomic_init(&pool->active, 0);
    atomic_init(&pool->started, 0);
    pool->slots = aligned_alloc(64, (size_t)num_threads * sizeof *pool->slots);
    if (!pool->slots) {
        cf_threadpool_destroy(pool);
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate a thread pool");
    }
    cf_shares_deal(pool->slots, (size_t)num_threads, 0);
    if (num_threads > 1) {
        pool->workers = calloc((size_t)num_threads - 1, sizeof *pool->workers);
        if (!pool->workers) {
            cf_threadpool_destroy(pool);
            return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %d workers",
                           num_threads - 1);
        }
        for (int i = 0; i < num_threads - 1; i++) {
            if (pthread_create(&pool->workers[i], NULL, worker_main, pool) != 0) {
                cf_threadpool_destroy(pool);
                return cf_fail(CONVFIND_ERR_BACKEND, "cannot start worker thread %d of %d", i + 1,
                               num_threads - 1);
            }
            pool->num_workers = i + 1;
        }
    }
    *out = pool;
    return CONVFIND_OK;
}

convfind_status cf_threadpool_create_external(int num_threads,
                                              convfind_parallel_for_fn parallel_for,
                                              void *user, cf_threadpool **out)
{
    *out = NULL;
    if (num_threads < 1)
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE, "thread count %d is < 1", num_threads);
    cf_threadpool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate a thread pool");
    pool->external = parallel_for;
    pool->external_user = user;
    pool->external_threads = num_threads;
    *out = pool;
    return CONVFIND_OK;
}

void cf_threadpool_destroy(cf_threadpool *pool)
{
    if (!pool)
        return;
    if (pool->external) {
        free(pool);
        return;
    }
    pthread_mutex_lock(&pool->lock);
    pool->shutdown = true;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < pool->num_workers; i++)
        pthread_join(pool->workers[i], NULL);
    free(pool->workers);
    free(pool->slots);
    pthread_cond_destroy(&pool->done);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
    pthread_mutex_destroy(&pool->drive);
    free(pool);
}

int cf_threadpool_size(const cf_threadpool *pool)
{
    return !pool ? 1 : pool->external ? pool->external_threads : pool->num_workers + 1;
}

void cf_parallel_for(cf_threadpool *pool, size_t count, cf_task_fn fn, void *arg)
{
    if (pool && pool->external && count > 1) {
        pool->external(pool->external_user, fn, arg, count);
        return;
    }
    if (!pool || pool->num_workers == 0 || count <= 1 || pthread_mutex_trylock(&pool->drive) != 0) {
        for (size_t i = 0; i < count; i++)
            fn(arg, i);
        return;
    }
    pthread_mutex_lock(&pool->lock);
    pool->fn = fn;
    pool->arg = arg;
    cf_shares_deal(pool->slots, (size_t)pool->num_workers + 1, count);
    pool->open = true;
    atomic_fetch_add(&pool->generation, 1);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);

    run_indices(pool, 0);

    spin_while(pool, workers_in_job, 0);
    pthread_mutex_lock(&pool->lock);
    pool->open = false;
    while (pool->active > 0)
        pthread_cond_wait(&pool->done, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
    pthread_mutex_unlock(&pool->drive);
}
