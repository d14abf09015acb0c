/*
 * test_threadpool.c - cf_parallel_for runs every index exactly once, from one caller or
 * many at once, and never touches a job after returning.
 *
 * The back-to-back test is the one that matters for the pool's join protocol: workers
 * often wake after the caller has done all the work and closed the job, and must then
 * neither run indices of the old job nor miss the next one.  Each job has its own
 * counters on the caller's stack, so a late worker touching a finished job would show
 * up as a wrong count (and as a stack-use-after-return under ASan).
 *
 * The pool deals indices through util/shares.h, which algorithms with per-task scratch
 * use directly: its tests check the order a thread claims in (its own share first, then
 * the next ones') and that threads running on the same shares claim every index once.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "util/shares.h"
#include "util/threadpool.h"

#define MAX_COUNT 4096

typedef struct job {
    atomic_int hits[MAX_COUNT];
} job;

static void count_hit(void *arg, size_t i) { atomic_fetch_add(&((job *)arg)->hits[i], 1); }

static void run_and_check(cf_threadpool *pool, size_t count)
{
    job *j = calloc(1, sizeof *j);
    assert_non_null(j);
    cf_parallel_for(pool, count, count_hit, j);
    for (size_t i = 0; i < MAX_COUNT; i++)
        assert_int_equal(atomic_load(&j->hits[i]), i < count ? 1 : 0);
    free(j);
}

static void test_sizes(void **unused)
{
    (void)unused;
    for (int threads = 1; threads <= 4; threads++) {
        cf_threadpool *pool;
        assert_int_equal(cf_threadpool_create(threads, &pool), CONVFIND_OK);
        assert_int_equal(cf_threadpool_size(pool), threads);
        size_t counts[] = {0, 1, 2, 3, 7, 64, 1000, MAX_COUNT};
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
            run_and_check(pool, counts[c]);
        cf_threadpool_destroy(pool);
    }
    run_and_check(NULL, 100);
    assert_int_equal(cf_threadpool_size(NULL), 1);
}

static void test_back_to_back(void **unused)
{
    (void)unused;
    cf_threadpool *pool;
    assert_int_equal(cf_threadpool_create(3, &pool), CONVFIND_OK);
    for (int rep = 0; rep < 2000; rep++)
        run_and_check(pool, (size_t)(rep % 9));
    cf_threadpool_destroy(pool);
}

static void *caller_main(void *pool)
{
    for (int rep = 0; rep < 300; rep++)
        run_and_check(pool, 257);
    return NULL;
}

/* Callers that find the pool driven by another run inline; all must see full results. */
static void test_concurrent_callers(void **unused)
{
    (void)unused;
    cf_threadpool *pool;
    assert_int_equal(cf_threadpool_create(2, &pool), CONVFIND_OK);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, caller_main, pool), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    cf_threadpool_destroy(pool);
}

/* Records the order indices were claimed in. */
typedef struct order {
    size_t seen[64], n;
} order;

static void record(void *arg, size_t i)
{
    order *o = arg;
    o->seen[o->n++] = i;
}

static void test_shares_order(void **unused)
{
    (void)unused;
    cf_share shares[3];
    /* 10 indices over 3 shares: [0, 3), [3, 6), [6, 10); thread 1 alone takes its own,
     * then share 2's, then share 0's. */
    cf_shares_deal(shares, 3, 10);
    order o = {.n = 0};
    cf_shares_run(shares, 3, 1, record, &o);
    const size_t want[10] = {3, 4, 5, 6, 7, 8, 9, 0, 1, 2};
    assert_int_equal(o.n, 10);
    for (size_t i = 0; i < 10; i++)
        assert_int_equal(o.seen[i], want[i]);
    /* Nothing is left for anyone else, and fewer indices than shares leave some empty. */
    o.n = 0;
    cf_shares_run(shares, 3, 0, record, &o);
    assert_int_equal(o.n, 0);
    cf_shares_deal(shares, 3, 2);
    cf_shares_run(shares, 3, 2, record, &o);
    assert_int_equal(o.n, 2);
    assert_int_equal(o.seen[0], 1);
    assert_int_equal(o.seen[1], 0);
}

typedef struct shares_run {
    cf_share *shares;
    size_t n, self;
    job *j;
} shares_run;

static void *shares_main(void *arg)
{
    shares_run *r = arg;
    cf_shares_run(r->shares, r->n, r->self, count_hit, r->j);
    return NULL;
}

static void test_shares_concurrent(void **unused)
{
    (void)unused;
    enum { THREADS = 4 };
    cf_share shares[THREADS];
    for (int rep = 0; rep < 50; rep++) {
        job *j = calloc(1, sizeof *j);
        assert_non_null(j);
        const size_t count = MAX_COUNT - (size_t)rep;
        cf_shares_deal(shares, THREADS, count);
        pthread_t t[THREADS];
        shares_run r[THREADS];
        for (size_t i = 0; i < THREADS; i++) {
            r[i] = (shares_run){.shares = shares, .n = THREADS, .self = i, .j = j};
            assert_int_equal(pthread_create(&t[i], NULL, shares_main, &r[i]), 0);
        }
        for (size_t i = 0; i < THREADS; i++)
            pthread_join(t[i], NULL);
        for (size_t i = 0; i < MAX_COUNT; i++)
            assert_int_equal(atomic_load(&j->hits[i]), i < count ? 1 : 0);
        free(j);
    }
}

static void test_invalid(void **unused)
{
    (void)unused;
    cf_threadpool *pool = (cf_threadpool *)(uintptr_t)1;
    assert_int_equal(cf_threadpool_create(0, &pool), CONVFIND_ERR_INVALID_ATTRIBUTE);
    assert_null(pool);
    cf_threadpool_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_back_to_back),
        cmocka_unit_test(test_concurrent_callers),
        cmocka_unit_test(test_shares_order),
        cmocka_unit_test(test_shares_concurrent),
        cmocka_unit_test(test_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
