/*
 * test_concurrent_shape_churn.c - the failure ONNX Runtime's ROCm provider had, provoked.
 *
 * 8 threads share one EXHAUSTIVE context.  Each loops over its own pair of problems that
 * share the input shape and alternate weight shapes call to call (the pattern that made
 * a cache keyed on the input shape alone hand one layer's algorithm to another).  Pairs
 * are shared by two threads each, so concurrent misses on one key happen.  Every
 * iteration creates a plan (a cache lookup), executes it and compares with the
 * reference.  Checks: >= 100000 executions, every output correct, zero errors, each key
 * keeps one algorithm for the whole run, and Find ran exactly once per unique key.
 * CI also runs this under ThreadSanitizer (ctest label "concurrency").
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "test_cache_util.h"

#define THREADS 8
#define PAIRS 4
#define TOTAL_EXECUTIONS 100000
#define PER_THREAD (TOTAL_EXECUTIONS / THREADS)

typedef struct shared {
    convfind_context *ctx;
    convfind_problem *problems[PAIRS][2];
    pthread_barrier_t start;
} shared;

typedef struct worker {
    shared *s;
    int pair;
    unsigned seed;
    long executions, errors, wrong, algo_changes;
} worker;

static void *run(void *arg)
{
    worker *wk = arg;
    tu_data data[2];
    char algo[2][64] = {"", ""};
    for (int j = 0; j < 2; j++)
        tu_data_init(&data[j], wk->s->problems[wk->pair][j], wk->seed + (unsigned)j);
    pthread_barrier_wait(&wk->s->start);
    for (int i = 0; i < PER_THREAD; i++) {
        int j = i & 1; /* the weight shape alternates every call */
        const convfind_problem *p = wk->s->problems[wk->pair][j];
        convfind_plan *plan;
        if (convfind_plan_create(wk->s->ctx, p, &plan) != CONVFIND_OK) {
            wk->errors++;
            continue;
        }
        for (size_t k = 0; k < data[j].ny; k++)
            data[j].y[k] = NAN;
        convfind_tensors t = tu_tensors(&data[j], p);
        if (convfind_execute(plan, &t) != CONVFIND_OK)
            wk->errors++;
        else if (!tu_matches(&data[j]))
            wk->wrong++;
        const char *name = convfind_plan_algorithm(plan);
        if (algo[j][0] && strcmp(name, algo[j]) != 0)
            wk->algo_changes++;
        snprintf(algo[j], sizeof algo[j], "%s", name);
        wk->executions++;
        convfind_plan_destroy(plan);
    }
    for (int j = 0; j < 2; j++)
        tu_data_free(&data[j]);
    return NULL;
}

static void test_churn(void **state)
{
    (void)state;
    shared s;
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.db_path = ":memory:"; /* hermetic: no decisions from earlier runs */
    o.num_threads = 2;
    o.find_policy = CONVFIND_FIND_EXHAUSTIVE;
    o.find_time_budget_s = 0.02;
    assert_int_equal(convfind_context_create(&o, &s.ctx), CONVFIND_OK);
    for (int p = 0; p < PAIRS; p++) {
        /* same X, weights alternate between M = 4 with 3x3 and M = 6 with 1x1 */
        s.problems[p][0] = tu_conv2d(1, 4, 5 + p, 6, 4, 3, 1);
        s.problems[p][1] = tu_conv2d(1, 4, 5 + p, 6, 6, 1, 1);
    }
    pthread_barrier_init(&s.start, NULL, THREADS);
    pthread_t th[THREADS];
    worker wk[THREADS];
    for (int i = 0; i < THREADS; i++) {
        wk[i] = (worker){.s = &s, .pair = i % PAIRS, .seed = 100u * (unsigned)i};
        assert_int_equal(pthread_create(&th[i], NULL, run, &wk[i]), 0);
    }
    long executions = 0, errors = 0, wrong = 0, changes = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        executions += wk[i].executions;
        errors += wk[i].errors;
        wrong += wk[i].wrong;
        changes += wk[i].algo_changes;
    }
    convfind_context_stats st = {.struct_size = sizeof st};
    assert_int_equal(convfind_context_stats_get(s.ctx, &st), CONVFIND_OK);
    printf("executions %ld errors %ld wrong %ld algo changes %ld; finds %llu misses %llu "
           "hits %llu waits %llu fallbacks %llu find %.3f s\n",
           executions, errors, wrong, changes, (unsigned long long)st.finds,
           (unsigned long long)st.misses, (unsigned long long)st.hits,
           (unsigned long long)st.waits, (unsigned long long)st.fallbacks, st.find_seconds);
    assert_true(executions >= TOTAL_EXECUTIONS);
    assert_int_equal(errors, 0);
    assert_int_equal(wrong, 0);
    assert_int_equal(changes, 0);
    assert_int_equal(st.finds, 2 * PAIRS);
    assert_int_equal(st.misses, 2 * PAIRS);
    assert_int_equal(st.hits + st.waits + st.misses, (uint64_t)executions);
    assert_int_equal(st.fallbacks, 0);
    pthread_barrier_destroy(&s.start);
    for (int p = 0; p < PAIRS; p++) {
        convfind_problem_destroy(s.problems[p][0]);
        convfind_problem_destroy(s.problems[p][1]);
    }
    convfind_context_destroy(s.ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_churn)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
