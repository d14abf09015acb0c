/*
 * test_concurrent_db_churn.c - single flight and eviction under churn, within a context
 * and across the contexts of one process sharing one find database (issue 16).
 *
 * CONTEXTS contexts (HYBRID) on one database file, THREADS threads each, caches that
 * hold a handful of decisions while SHAPES shapes go through them.  Each round has two
 * races on shapes no thread has seen, then replans:
 *   A  the threads of one context (a different one each round) plan a new shape
 *      together: concurrent misses on one key inside one cache;
 *   B  one thread of every context plans another new shape together: concurrent misses
 *      on one key in different caches, on one database;
 *   then every thread plans REPLANS earlier shapes, most of them evicted by now: misses
 *   that the database must answer.
 * The racers of a phase spin (yielding) at a start line until the last of them arrives,
 * so that the running ones leave it at the same instant; the others sleep at a barrier
 * meanwhile, so that on a machine of two cores the racers are the ones running.  What
 * must hold, whatever the interleaving:
 *   - Find ran exactly once per shape over all contexts: a miss racing another thread's
 *     Find waits for it (the cache's single flight: the wait, and the re-check under the
 *     shard's write lock), a miss racing another context's Find waits for its lease (the
 *     database's single flight), an evicted decision comes back from the database;
 *   - per shape, exactly one context planned it from its own Find (source MEASURED);
 *     every plan of an in-context race did (a racer that got its decision from the
 *     database measured nothing, but it obtained the key a second time instead of
 *     waiting in the cache);
 *   - every plan of a shape, in every context, runs the one decision that Find made;
 *   - outputs are right, no call fails, no waiter gave up (no heuristic source);
 *   - the churn was real: evictions in every context, misses beyond the shapes, and
 *     concurrent misses that waited.
 * CI runs it again under ThreadSanitizer (ctest label "concurrency").
 *
 * Checked by mutation, 20 runs each, every run failing: a miss that finds a PENDING
 * entry measures on its own instead of waiting (cache.c), no re-check of the shard
 * under its write lock before linking a new entry (cache.c), no database lease
 * (db_ops.c acquire_locked always grants), no look-up again after the lease is taken
 * (db_ops.c cf_db_begin).
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../db/db_fixture.h"
#include "test_cache_util.h"

#define CONTEXTS 3
#define THREADS 3        /* per context */
#define ROUNDS 512
#define SHAPES (2 * ROUNDS)
#define REPLANS 4        /* earlier shapes per thread and round */
#define CACHE_BYTES (12 * 1024)
#define WORKERS (CONTEXTS * THREADS)

/* Where racers wait for each other: `arrived` counts arrivals over all races of the
 * kind, `go` is the number of races started. */
typedef struct start_line {
    atomic_int arrived, go;
} start_line;

typedef struct shared {
    convfind_context *ctx[CONTEXTS];
    convfind_problem *shapes[SHAPES];
    pthread_barrier_t phase;
    start_line in_context, across;
    /* What each thread's plan of each shape ran (written by that thread only). */
    char algo[SHAPES][WORKERS][CF_ALGO_NAME_MAX];
    /* For each shape, one bit per context that ever planned it from a decision of its
     * own Find (source MEASURED): exactly one bit per shape when the key was measured
     * once over all contexts. */
    atomic_int measured_by[SHAPES];
} shared;

typedef struct worker {
    shared *s;
    int ctx, index; /* its context, and its index among that context's threads */
    int slot;
    unsigned seed;
    long errors, wrong, heuristic, plans;
    long unshared; /* plans of an in-context race that did not get the racers' one Find */
} worker;

/* Waits until `parties` racers have arrived for race number `race`. */
static void race_start(start_line *l, int parties, int race)
{
    if (atomic_fetch_add(&l->arrived, 1) == (race + 1) * parties - 1)
        atomic_store(&l->go, race + 1);
    while (atomic_load(&l->go) <= race)
        sched_yield();
}

/* Plans shape `i`; records its algorithm the first time, checks it against the record
 * afterwards, and counts what went wrong.  A plan of an in-context race (`racing`) must
 * come from the Find that one of the racers made in this context: a racer that took it
 * from the database instead obtained the key again rather than waiting in the cache.
 * Returns the plan, or NULL. */
static convfind_plan *plan_shape(worker *w, int i, bool racing)
{
    convfind_plan *plan = NULL;
    if (convfind_plan_create(w->s->ctx[w->ctx], w->s->shapes[i], &plan) != CONVFIND_OK) {
        w->errors++;
        return NULL;
    }
    w->plans++;
    convfind_plan_info info;
    if (convfind_plan_get_info(plan, &info) != CONVFIND_OK) {
        w->errors++;
        convfind_plan_destroy(plan);
        return NULL;
    }
    w->heuristic += info.source == CONVFIND_SOURCE_HEURISTIC;
    w->unshared += racing && info.source != CONVFIND_SOURCE_MEASURED;
    if (info.source == CONVFIND_SOURCE_MEASURED)
        atomic_fetch_or(&w->s->measured_by[i], 1 << w->ctx);
    char *mine = w->s->algo[i][w->slot];
    if (!mine[0])
        snprintf(mine, CF_ALGO_NAME_MAX, "%s", info.algorithm);
    else if (strcmp(mine, info.algorithm) != 0)
        w->wrong++;
    return plan;
}

/* Plans shape `i`, executes it and checks the output. */
static void plan_and_run(worker *w, int i, bool racing)
{
    tu_data data;
    tu_data_init(&data, w->s->shapes[i], w->seed + (unsigned)i);
    convfind_plan *plan = plan_shape(w, i, racing);
    if (plan) {
        for (size_t k = 0; k < data.ny; k++)
            data.y[k] = NAN;
        convfind_tensors t = tu_tensors(&data, w->s->shapes[i]);
        if (convfind_execute(plan, &t) != CONVFIND_OK)
            w->errors++;
        else if (!tu_matches(&data))
            w->wrong++;
        convfind_plan_destroy(plan);
    }
    tu_data_free(&data);
}

static void *run(void *arg)
{
    worker *w = arg;
    shared *s = w->s;
    for (int r = 0; r < ROUNDS; r++) {
        pthread_barrier_wait(&s->phase);
        if (w->ctx == r % CONTEXTS) {
            race_start(&s->in_context, THREADS, r);
            plan_and_run(w, 2 * r, true);
        }
        pthread_barrier_wait(&s->phase);
        if (w->index == r % THREADS) {
            race_start(&s->across, CONTEXTS, r);
            plan_and_run(w, 2 * r + 1, false);
        }
        for (int j = 0; j < REPLANS; j++) {
            w->seed = w->seed * 1103515245u + 12345u;
            convfind_plan_destroy(
                plan_shape(w, (int)((w->seed >> 8) % (unsigned)(2 * r + 2)), false));
        }
    }
    return NULL;
}

static void test_churn(void **state)
{
    (void)state;
    static shared s;
    memset(&s, 0, sizeof s);
    char path[300];
    snprintf(path, sizeof path, "%s/churn.sqlite", fx_dir);
    for (int c = 0; c < CONTEXTS; c++) {
        convfind_context_options o;
        convfind_context_options_init(&o);
        o.db_path = path;
        o.num_threads = 1;
        o.find_policy = CONVFIND_FIND_HYBRID;
        o.find_time_budget_s = 0.01;
        o.cache_bytes = CACHE_BYTES;
        assert_int_equal(convfind_context_create(&o, &s.ctx[c]), CONVFIND_OK);
    }
    /* 1024 distinct small problems: channels, height, width, output channels, kernel,
     * batch. */
    for (int i = 0; i < SHAPES; i++)
        s.shapes[i] = tu_conv2d(1 + (i / 512) % 2, 1 + i % 4, 3 + (i / 4) % 4, 5 + (i / 16) % 4,
                                2 + (i / 64) % 4, (i / 256) % 2 ? 3 : 1, 1);
    pthread_barrier_init(&s.phase, NULL, WORKERS);
    pthread_t th[WORKERS];
    worker wk[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        wk[i] = (worker){.s = &s, .ctx = i % CONTEXTS, .index = i / CONTEXTS, .slot = i,
                         .seed = 7u * (unsigned)i + 1};
        assert_int_equal(pthread_create(&th[i], NULL, run, &wk[i]), 0);
    }
    long errors = 0, wrong = 0, heuristic = 0, plans = 0, unshared = 0;
    for (int i = 0; i < WORKERS; i++) {
        pthread_join(th[i], NULL);
        errors += wk[i].errors;
        wrong += wk[i].wrong;
        heuristic += wk[i].heuristic;
        plans += wk[i].plans;
        unshared += wk[i].unshared;
    }
    uint64_t finds = 0, misses = 0, waits = 0;
    for (int c = 0; c < CONTEXTS; c++) {
        convfind_context_stats st = {.struct_size = sizeof st};
        assert_int_equal(convfind_context_stats_get(s.ctx[c], &st), CONVFIND_OK);
        printf("context %d: finds %llu misses %llu hits %llu waits %llu evictions %llu "
               "entries %zu of %zu bytes\n",
               c, (unsigned long long)st.finds, (unsigned long long)st.misses,
               (unsigned long long)st.hits, (unsigned long long)st.waits,
               (unsigned long long)st.evictions, st.cache_entries, st.cache_budget);
        finds += st.finds;
        misses += st.misses;
        waits += st.waits;
        assert_true(st.evictions > 0);
    }
    /* Every plan of a shape ran the same algorithm: the one decision Find made. */
    long differ = 0;
    for (int i = 0; i < SHAPES; i++) {
        const char *first = NULL;
        for (int t = 0; t < WORKERS; t++) {
            if (!s.algo[i][t][0])
                continue; /* this thread never planned the shape */
            first = first ? first : s.algo[i][t];
            differ += strcmp(s.algo[i][t], first) != 0;
        }
    }
    /* Shapes that no context, or more than one, planned from its own Find. */
    long not_once = 0;
    for (int i = 0; i < SHAPES; i++) {
        int m = atomic_load(&s.measured_by[i]);
        not_once += m == 0 || (m & (m - 1)) != 0;
    }
    printf("plans %ld errors %ld wrong %ld heuristic %ld differ %ld unshared %ld; finds %llu "
           "for %d shapes, %ld not measured by exactly one context\n", plans, errors, wrong,
           heuristic, differ, unshared, (unsigned long long)finds, SHAPES, not_once);
    assert_int_equal(errors, 0);
    assert_int_equal(heuristic, 0);
    assert_int_equal(finds, SHAPES);
    assert_int_equal(not_once, 0);
    assert_int_equal(unshared, 0);
    assert_int_equal(differ, 0);
    assert_int_equal(wrong, 0);
    assert_true(misses > (uint64_t)SHAPES);
    assert_true(waits > 0);
    pthread_barrier_destroy(&s.phase);
    for (int c = 0; c < CONTEXTS; c++)
        convfind_context_destroy(s.ctx[c]);
    for (int i = 0; i < SHAPES; i++)
        convfind_problem_destroy(s.shapes[i]);
    /* One record per shape, and no lease left behind. */
    cf_db_config c = fx_host_config(path);
    c.mode = CF_DB_INSPECT;
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    cf_db_stats ds;
    assert_int_equal(cf_db_get_stats(db, &ds), CONVFIND_OK);
    assert_int_equal(ds.records, SHAPES);
    assert_int_equal(ds.leases, 0);
    cf_db_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_churn)};
    return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
