/*
 * test_fallback_injection.c - never fail because of the decision (DESIGN.md
 * non-negotiable 5), with both failure kinds injected (core/fault.h).
 *
 * The candidate list is replaced by fake algorithms so the decision is known: test.ws
 * (needs workspace) first, then test.plain, then the reference.  With the fault set,
 * the plan's algorithm fails (its workspace allocation, or its execution); the call must
 * still return the reference's result, count one fallback, and leave the decision -
 * the plan's and the cache's - exactly as it was.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "algo/registry.h"
#include "core/test_control.h"
#include "test_cache_util.h"

static const cf_algo *const fake_list[] = {&tu_algo_ws, &tu_algo_plain, &cf_algo_cpu_reference};

static int setup(void **state)
{
    (void)state;
    cf_test_control(CF_TEST_ALGORITHMS, fake_list, 3);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cf_test_control(CF_TEST_FAULT, CF_FAULT_NONE);
    cf_test_control(CF_TEST_ALGORITHMS, NULL, 0);
    return 0;
}

static uint64_t fallbacks(const convfind_context *ctx)
{
    return tu_stats(ctx).fallbacks;
}

/* Executes `plan` under `fault` and checks result, fallback count and decision. */
static void execute_under(convfind_context *ctx, convfind_plan *plan, const convfind_problem *p,
                          cf_fault fault, const char *want_algo, uint64_t want_fallbacks)
{
    tu_data d;
    tu_data_init(&d, p, 7);
    for (size_t i = 0; i < d.ny; i++)
        d.y[i] = NAN;
    convfind_tensors t = tu_tensors(&d, p);
    cf_test_control(CF_TEST_FAULT, fault);
    convfind_status st = convfind_execute(plan, &t);
    cf_test_control(CF_TEST_FAULT, CF_FAULT_NONE);
    assert_int_equal(st, CONVFIND_OK);
    assert_true(tu_matches(&d));
    assert_int_equal(fallbacks(ctx), want_fallbacks);
    assert_string_equal(convfind_plan_algorithm(plan), want_algo);
    /* the cached decision is unchanged: a new plan still starts with the same algorithm */
    convfind_plan *again;
    assert_int_equal(convfind_plan_create(ctx, p, &again), CONVFIND_OK);
    assert_string_equal(convfind_plan_algorithm(again), want_algo);
    convfind_plan_destroy(again);
    tu_data_free(&d);
}

static void test_both_faults_heuristic(void **state)
{
    (void)state;
    convfind_context *ctx = tu_context(CONVFIND_FIND_HEURISTIC, 1);
    convfind_problem *p = tu_conv2d(2, 3, 6, 5, 4, 3, 1);
    convfind_plan *plan;
    assert_int_equal(convfind_plan_create(ctx, p, &plan), CONVFIND_OK);
    assert_string_equal(convfind_plan_algorithm(plan), "test.ws");
    execute_under(ctx, plan, p, CF_FAULT_NONE, "test.ws", 0);
    execute_under(ctx, plan, p, CF_FAULT_WORKSPACE, "test.ws", 1);
    execute_under(ctx, plan, p, CF_FAULT_EXECUTE, "test.ws", 2);
    execute_under(ctx, plan, p, CF_FAULT_NONE, "test.ws", 2);
    convfind_plan_destroy(plan);
    convfind_problem_destroy(p);
    convfind_context_destroy(ctx);
}

/* A measured decision: whatever Find chose stays chosen through both faults; a fallback
 * is counted exactly when the choice is not the reference (which is exempt). */
static void test_both_faults_measured(void **state)
{
    (void)state;
    convfind_context *ctx = tu_context(CONVFIND_FIND_EXHAUSTIVE, 1);
    convfind_problem *p = tu_conv2d(1, 4, 7, 7, 4, 3, 2);
    convfind_plan *plan;
    assert_int_equal(convfind_plan_create(ctx, p, &plan), CONVFIND_OK);
    char algo[64];
    strcpy(algo, convfind_plan_algorithm(plan));
    convfind_plan_info info;
    assert_int_equal(convfind_plan_get_info(plan, &info), CONVFIND_OK);
    assert_int_equal(info.source, CONVFIND_SOURCE_MEASURED);
    uint64_t per = strcmp(algo, "cpu.reference") != 0;
    /* the workspace fault only bites algorithms that have a workspace */
    uint64_t ws_per = strcmp(algo, "test.ws") == 0;
    execute_under(ctx, plan, p, CF_FAULT_WORKSPACE, algo, ws_per);
    execute_under(ctx, plan, p, CF_FAULT_EXECUTE, algo, ws_per + per);
    assert_int_equal(tu_stats(ctx).finds, 1);
    convfind_plan_destroy(plan);
    convfind_problem_destroy(p);
    convfind_context_destroy(ctx);
}

/* A forced algorithm falls back to the reference. */
static void test_forced_algorithm_falls_back(void **state)
{
    (void)state;
    convfind_context *ctx = tu_context(CONVFIND_FIND_HEURISTIC, 1);
    convfind_problem *p = tu_conv2d(1, 2, 5, 5, 3, 3, 1);
    convfind_plan *plan;
    assert_int_equal(convfind_plan_create_with_algorithm(ctx, p, "test.plain", &plan), CONVFIND_OK);
    convfind_plan_info info;
    assert_int_equal(convfind_plan_get_info(plan, &info), CONVFIND_OK);
    assert_int_equal(info.source, CONVFIND_SOURCE_FORCED);
    tu_data d;
    tu_data_init(&d, p, 3);
    convfind_tensors t = tu_tensors(&d, p);
    cf_test_control(CF_TEST_FAULT, CF_FAULT_EXECUTE);
    assert_int_equal(convfind_execute(plan, &t), CONVFIND_OK);
    cf_test_control(CF_TEST_FAULT, CF_FAULT_NONE);
    assert_true(tu_matches(&d));
    assert_int_equal(fallbacks(ctx), 1);
    assert_string_equal(convfind_plan_algorithm(plan), "test.plain");
    tu_data_free(&d);
    convfind_plan_destroy(plan);
    convfind_problem_destroy(p);
    convfind_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_both_faults_heuristic),
        cmocka_unit_test(test_both_faults_measured),
        cmocka_unit_test(test_forced_algorithm_falls_back),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
