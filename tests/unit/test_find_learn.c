/*
 * test_find_learn.c - a completed Find tells its backend how it ended (find.h, step 7):
 * once, with the candidates in rank order, the choice first, and which of them were
 * beyond saving against it.
 *
 * The CUDA backend leaves an engine out of its widened lists once it was beyond saving
 * in a few Finds of a pattern (device.h): what it learns must be the harness's own
 * verdict, not a guess from a tie or an unmeasured candidate.  A fake backend whose runs
 * report fixed times makes the verdict deterministic: a candidate 1.2x the choice is
 * not beyond saving, one 40x it is, and one never measured (over the budget) is not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fake_find.h"
#include "find/find.h"

static const ff_timed fast = FF_TIMED("test.fast", 1.0);
static const ff_timed close_one = FF_TIMED("test.close", 1.2);
static const ff_timed slow = FF_TIMED("test.slow", 40.0);
static const ff_timed reference = FF_TIMED("test.reference", 100.0);

static const cf_algo *const all[] = {&close_one.algo, &slow.algo, &fast.algo, &reference.algo};

static const cf_algo *const *algorithms(int *count)
{
    *count = (int)(sizeof all / sizeof all[0]);
    return all;
}

static bool check(cf_find_bench *b, cf_find_ready *r, int *runs, double *ms)
{
    (void)b, (void)r;
    *runs = 1;
    *ms = 0;
    return true;
}

static convfind_status sample(cf_find_bench *b, cf_find_ready *r, int batch, double *ms)
{
    (void)b, (void)batch;
    *ms = ff_timed_of(r)->run_ms;
    return CONVFIND_OK;
}

/* What learn() heard. */
static int calls;
static char first[CF_ALGO_NAME_MAX];
static int far_close, far_slow, far_reference; /* -1: not among the candidates */

static void learn(const cf_backend_state *s, const cf_problem *p,
                  const cf_candidate_stats *ranked, const bool *far, int n)
{
    (void)s, (void)p;
    calls++;
    snprintf(first, sizeof first, "%s", ranked[0].algo);
    assert_false(far[0]);
    for (int i = 0; i < n; i++) {
        if (strcmp(ranked[i].algo, close_one.algo.name) == 0)
            far_close = far[i];
        else if (strcmp(ranked[i].algo, slow.algo.name) == 0)
            far_slow = far[i];
        else if (strcmp(ranked[i].algo, reference.algo.name) == 0)
            far_reference = far[i];
    }
}

static cf_find_hooks hooks = {
    FF_HOOKS, .check = check, .sample = sample, .min_repeats = 3, .max_repeats = 3,
    .learn = learn,
};

static const cf_backend backend = {
    .abi = CF_BACKEND_ABI, .name = "test", .algorithms = algorithms,
    .reference = &reference.algo, .find = &hooks,
};

static void find(bool reference_last)
{
    calls = 0;
    first[0] = 0;
    far_close = far_slow = far_reference = -1;
    hooks.reference_last = reference_last;
    const cf_problem p = ff_problem();
    const cf_find_config cfg = {.budget_s = 10, .validate = true};
    cf_decision d;
    assert_int_equal(cf_find_measure(&backend, NULL, &p, &cfg, &d), CONVFIND_OK);
    assert_string_equal(d.algo, fast.algo.name);
    cf_decision_clear(&d);
}

static void the_verdicts_are_the_harness_own(void **state)
{
    (void)state;
    find(false);
    assert_int_equal(calls, 1);
    assert_string_equal(first, fast.algo.name);
    assert_int_equal(far_close, 0);     /* 1.2x the choice: could have won */
    assert_int_equal(far_slow, 1);      /* 40x */
    assert_int_equal(far_reference, 1); /* 100x, measured */
}

static void an_unmeasured_candidate_is_not_beyond_saving(void **state)
{
    (void)state;
    find(true); /* the reference is left unmeasured once another candidate is OK */
    assert_int_equal(calls, 1);
    assert_int_equal(far_slow, 1);
    assert_int_equal(far_reference, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_verdicts_are_the_harness_own),
        cmocka_unit_test(an_unmeasured_candidate_is_not_beyond_saving),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
