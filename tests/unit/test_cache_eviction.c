/*
 * test_cache_eviction.c - dynamic shapes under a tiny cache budget: memory stays bounded
 * and results stay correct.
 *
 * A stream of distinct input shapes (what a dynamic-shape model produces) goes through
 * one context whose decision cache can hold only a few entries.  After every call the
 * cache's charged bytes, and their peak, must be within the budget; every output must
 * match the reference; a plan whose entry was evicted long ago must still execute
 * correctly (entries in use are never freed); a budget smaller than one entry caches
 * nothing and still answers correctly.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "test_cache_util.h"

static convfind_context *context_with(size_t budget, convfind_find_policy policy)
{
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.db_path = ":memory:"; /* hermetic: no decisions from earlier runs */
    o.num_threads = 1;
    o.find_policy = policy;
    o.cache_bytes = budget;
    o.find_time_budget_s = 0.005;
    convfind_context *ctx;
    assert_int_equal(convfind_context_create(&o, &ctx), CONVFIND_OK);
    return ctx;
}

/* Plans, executes and checks one problem; returns the stats afterwards. */
static convfind_context_stats run_one(convfind_context *ctx, convfind_problem *p, unsigned seed)
{
    tu_data d;
    tu_data_init(&d, p, seed);
    convfind_plan *plan;
    assert_int_equal(convfind_plan_create(ctx, p, &plan), CONVFIND_OK);
    convfind_tensors t = tu_tensors(&d, p);
    assert_int_equal(convfind_execute(plan, &t), CONVFIND_OK);
    assert_true(tu_matches(&d));
    convfind_plan_destroy(plan);
    tu_data_free(&d);
    convfind_context_stats st = {.struct_size = sizeof st};
    assert_int_equal(convfind_context_stats_get(ctx, &st), CONVFIND_OK);
    assert_true(st.cache_bytes <= st.cache_budget);
    assert_true(st.cache_peak_bytes <= st.cache_budget);
    return st;
}

static void test_bounded_stream(void **state)
{
    (void)state;
    /* Learn one entry's charge, then allow three. */
    convfind_context *probe = context_with(0, CONVFIND_FIND_HEURISTIC);
    convfind_problem *p0 = tu_conv2d(1, 2, 4, 4, 2, 3, 1);
    size_t per_entry = run_one(probe, p0, 1).cache_bytes;
    convfind_context_destroy(probe);
    assert_true(per_entry > 0);
    const size_t budget = 3 * per_entry + per_entry / 2;

    convfind_context *ctx = context_with(budget, CONVFIND_FIND_EXHAUSTIVE);
    /* A plan kept across the whole stream: its entry is evicted under it. */
    convfind_plan *held;
    assert_int_equal(convfind_plan_create(ctx, p0, &held), CONVFIND_OK);
    const int shapes = 120;
    convfind_context_stats st = {.struct_size = sizeof st};
    for (int i = 0; i < shapes; i++) {
        /* distinct spatial sizes, with every 7th shape repeating an earlier one */
        int64_t h = 3 + (i % 7 == 6 ? i / 2 % 10 : i % 10), w = 3 + i / 10;
        convfind_problem *p = tu_conv2d(1, 2, h, w, 3, 3, 1);
        st = run_one(ctx, p, (unsigned)i);
        assert_true(st.cache_entries <= 3);
        convfind_problem_destroy(p);
    }
    printf("budget %zu bytes (%zu per entry): entries %zu bytes %zu peak %zu evictions %llu "
           "finds %llu hits %llu\n", budget, per_entry, st.cache_entries, st.cache_bytes,
           st.cache_peak_bytes, (unsigned long long)st.evictions, (unsigned long long)st.finds,
           (unsigned long long)st.hits);
    assert_true(st.evictions >= (uint64_t)(st.misses - 3));
    assert_true(st.evictions > 0);
    assert_int_equal(st.cache_bytes, st.cache_entries * per_entry);

    tu_data d;
    tu_data_init(&d, p0, 99);
    convfind_tensors t = tu_tensors(&d, p0);
    assert_int_equal(convfind_execute(held, &t), CONVFIND_OK);
    assert_true(tu_matches(&d));
    tu_data_free(&d);
    convfind_plan_destroy(held);
    convfind_problem_destroy(p0);
    convfind_context_destroy(ctx);
}

static void test_budget_below_one_entry(void **state)
{
    (void)state;
    convfind_context *ctx = context_with(64, CONVFIND_FIND_EXHAUSTIVE);
    for (int i = 0; i < 10; i++) {
        convfind_problem *p = tu_conv2d(1, 3, 4 + i, 5, 2, 3, 1);
        convfind_context_stats st = run_one(ctx, p, (unsigned)i);
        assert_int_equal(st.cache_entries, 0);
        assert_int_equal(st.cache_bytes, 0);
        convfind_problem_destroy(p);
    }
    convfind_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bounded_stream),
        cmocka_unit_test(test_budget_below_one_entry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
