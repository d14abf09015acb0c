/*
 * test_cache_find.c - Find and the find policies through the public API.
 *
 * Fake candidate lists (algo/registry.h) make outcomes that do not depend on timing: a
 * wrong algorithm listed first (so it is the heuristic choice, which Find always
 * measures) must fail validation, be ranked FAILED and never be chosen; HEURISTIC and
 * REPLAY never measure; convfind_find measures once and its first result is what plans
 * use; DEFERRED answers at once with a provisional heuristic decision and plans switch
 * to the measured one after the background tuner publishes it; concurrent misses on one
 * key run Find once.
 */
#include <pthread.h>
#include <stdio.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "algo/registry.h"
#include "core/test_control.h"
#include "test_cache_util.h"

static const cf_algo *const with_wrong[] = {&tu_algo_wrong, &tu_algo_plain, &cf_algo_cpu_reference};

static int teardown(void **state)
{
    (void)state;
    cf_test_control(CF_TEST_ALGORITHMS, NULL, 0);
    return 0;
}

static void test_wrong_candidate_never_chosen(void **state)
{
    (void)state;
    cf_test_control(CF_TEST_ALGORITHMS, with_wrong, 3);
    convfind_context *ctx = tu_context(CONVFIND_FIND_HEURISTIC, 1);
    convfind_problem *p = tu_conv2d(1, 3, 6, 6, 4, 3, 1);
    convfind_find_result r[4];
    int count = -1;
    assert_int_equal(convfind_find(ctx, p, CONVFIND_WEIGHTS_PER_CALL, r, 4, &count), CONVFIND_OK);
    assert_int_equal(count, 3);
    assert_string_not_equal(r[0].algorithm, "test.wrong");
    assert_int_equal(r[0].status, CONVFIND_CANDIDATE_OK);
    assert_true(r[0].validated);
    assert_true(r[0].repeats >= 5 && r[0].median_ms > 0 && r[0].min_ms <= r[0].median_ms);
    assert_string_equal(r[2].algorithm, "test.wrong");
    assert_int_equal(r[2].status, CONVFIND_CANDIDATE_FAILED);
    assert_false(r[2].validated);
    /* plans now use the measured decision, and it computes the right thing */
    convfind_plan *plan;
    assert_int_equal(convfind_plan_create(ctx, p, &plan), CONVFIND_OK);
    assert_string_equal(convfind_plan_algorithm(plan), r[0].algorithm);
    tu_data d;
    tu_data_init(&d, p, 5);
    convfind_tensors t = tu_tensors(&d, p);
    assert_int_equal(convfind_execute(plan, &t), CONVFIND_OK);
    assert_true(tu_matches(&d));
    tu_data_free(&d);
    convfind_plan_destroy(plan);
    /* a second explicit find returns the stored measurement without measuring again */
    int count2;
    assert_int_equal(convfind_find(ctx, p, CONVFIND_WEIGHTS_PER_CALL, NULL, 0, &count2), CONVFIND_OK);
    assert_int_equal(count2, 3);
    assert_int_equal(tu_stats(ctx).finds, 1);
    assert_int_equal(convfind_find(ctx, p, CONVFIND_WEIGHTS_PER_CALL, NULL, -1, &count2), CONVFIND_ERR_INVALID_ATTRIBUTE);
    assert_int_equal(convfind_find(ctx, NULL, CONVFIND_WEIGHTS_PER_CALL, r, 4, &count2), CONVFIND_ERR_NULL_POINTER);
    convfind_problem_destroy(p);
    convfind_context_destroy(ctx);
}

static void test_heuristic_and_replay_never_measure(void **state)
{
    (void)state;
    cf_test_control(CF_TEST_ALGORITHMS, with_wrong + 1, 2);
    convfind_find_policy policies[] = {CONVFIND_FIND_HEURISTIC, CONVFIND_FIND_REPLAY};
    for (int i = 0; i < 2; i++) {
        convfind_context *ctx = tu_context(policies[i], 1);
        convfind_problem *p = tu_conv2d(1, 2, 5, 5, 2, 3, 1);
        for (int k = 0; k < 3; k++) {
            convfind_plan *plan;
            assert_int_equal(convfind_plan_create(ctx, p, &plan), CONVFIND_OK);
            assert_string_equal(convfind_plan_algorithm(plan), "test.plain");
            convfind_plan_info info;
            assert_int_equal(convfind_plan_get_info(plan, &info), CONVFIND_OK);
            assert_int_equal(info.source, CONVFIND_SOURCE_HEURISTIC);
            assert_int_equal(info.provisional, 0);
            convfind_plan_destroy(plan);
        }
        convfind_context_stats st = tu_stats(ctx);
        assert_int_equal(st.finds, 0);
        assert_int_equal(st.misses, 1);
        assert_int_equal(st.hits, 2);
        convfind_problem_destroy(p);
        convfind_context_destroy(ctx);
    }
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void test_deferred_tunes_in_background(void **state)
{
    (void)state;
    cf_test_control(CF_TEST_ALGORITHMS, with_wrong, 3);
    convfind_context *ctx = tu_context(CONVFIND_FIND_DEFERRED, 1);
    convfind_problem *p = tu_conv2d(1, 3, 6, 6, 4, 3, 1);
    convfind_plan *plan;
    assert_int_equal(convfind_plan_create(ctx, p, &plan), CONVFIND_OK);
    convfind_plan_info info;
    assert_int_equal(convfind_plan_get_info(plan, &info), CONVFIND_OK);
    /* answered at once from the heuristic, marked provisional (unless the tuner was
     * already done, which is allowed) */
    if (info.provisional)
        assert_int_equal(info.source, CONVFIND_SOURCE_HEURISTIC);
    for (int i = 0; i < 2000 && tu_stats(ctx).deferred_updates == 0; i++)
        sleep_ms(5);
    assert_int_equal(tu_stats(ctx).deferred_updates, 1);
    tu_data d;
    tu_data_init(&d, p, 11);
    convfind_tensors t = tu_tensors(&d, p);
    assert_int_equal(convfind_execute(plan, &t), CONVFIND_OK);
    assert_true(tu_matches(&d));
    assert_int_equal(convfind_plan_get_info(plan, &info), CONVFIND_OK);
    assert_int_equal(info.source, CONVFIND_SOURCE_MEASURED);
    assert_int_equal(info.provisional, 0);
    assert_string_not_equal(info.algorithm, "test.wrong");
    convfind_plan *later;
    assert_int_equal(convfind_plan_create(ctx, p, &later), CONVFIND_OK);
    assert_string_equal(convfind_plan_algorithm(later), info.algorithm);
    convfind_plan_destroy(later);
    convfind_plan_destroy(plan);
    tu_data_free(&d);
    assert_int_equal(tu_stats(ctx).finds, 1);
    /* destroying with work queued stops the tuner without waiting for all of it */
    for (int i = 0; i < 20; i++) {
        convfind_problem *q = tu_conv2d(1, 2, 4 + i, 4, 2, 3, 1);
        assert_int_equal(convfind_plan_create(ctx, q, &plan), CONVFIND_OK);
        convfind_plan_destroy(plan);
        convfind_problem_destroy(q);
    }
    convfind_problem_destroy(p);
    convfind_context_destroy(ctx);
}

#define RACERS 8

typedef struct racer {
    convfind_context *ctx;
    const convfind_problem *p;
    pthread_barrier_t *start;
    char algo[64];
    convfind_status st;
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    convfind_plan *plan;
    pthread_barrier_wait(r->start);
    r->st = convfind_plan_create(r->ctx, r->p, &plan);
    if (r->st == CONVFIND_OK) {
        snprintf(r->algo, sizeof r->algo, "%s", convfind_plan_algorithm(plan));
        convfind_plan_destroy(plan);
    }
    return NULL;
}

static void test_single_flight(void **state)
{
    (void)state;
    convfind_context *ctx = tu_context(CONVFIND_FIND_EXHAUSTIVE, 1);
    convfind_problem *p = tu_conv2d(1, 8, 9, 9, 8, 3, 1);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, RACERS);
    pthread_t th[RACERS];
    racer r[RACERS];
    for (int i = 0; i < RACERS; i++) {
        r[i] = (racer){.ctx = ctx, .p = p, .start = &start};
        assert_int_equal(pthread_create(&th[i], NULL, race, &r[i]), 0);
    }
    for (int i = 0; i < RACERS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < RACERS; i++) {
        assert_int_equal(r[i].st, CONVFIND_OK);
        assert_string_equal(r[i].algo, r[0].algo);
    }
    convfind_context_stats st = tu_stats(ctx);
    assert_int_equal(st.finds, 1);
    assert_int_equal(st.misses, 1);
    assert_int_equal(st.hits + st.waits, RACERS - 1);
    pthread_barrier_destroy(&start);
    convfind_problem_destroy(p);
    convfind_context_destroy(ctx);
}

static void test_bad_options(void **state)
{
    (void)state;
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.db_path = ":memory:"; /* hermetic: no decisions from earlier runs */
    assert_int_equal(o.find_skip_validation, 0);
    convfind_context *ctx;
    o.find_time_budget_s = -1;
    assert_int_equal(convfind_context_create(&o, &ctx), CONVFIND_ERR_INVALID_ATTRIBUTE);
    assert_non_null(strstr(convfind_last_error(), "find_time_budget_s"));
    assert_null(ctx);
    convfind_context_options_init(&o);
    o.db_path = ":memory:"; /* hermetic: no decisions from earlier runs */
    o.find_skip_validation = 2;
    assert_int_equal(convfind_context_create(&o, &ctx), CONVFIND_ERR_INVALID_ATTRIBUTE);
    assert_int_equal(convfind_context_stats_get(NULL, NULL), CONVFIND_ERR_NULL_POINTER);
    convfind_plan_info info;
    assert_int_equal(convfind_plan_get_info(NULL, &info), CONVFIND_ERR_NULL_POINTER);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_wrong_candidate_never_chosen, teardown),
        cmocka_unit_test_teardown(test_heuristic_and_replay_never_measure, teardown),
        cmocka_unit_test_teardown(test_deferred_tunes_in_background, teardown),
        cmocka_unit_test(test_single_flight),
        cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
