/*
 * test_find_rank.c - the backend-independent rules of Find (src/find/rank.c): timing
 * statistics, early abandon, RETUNE's selection, the choice with its margin and
 * tie-breaks, and the ranked list.  Timings here are made-up inputs, never measurements.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "find/find.h"
#include "find/rank.h"

static cf_candidate_stats cand(const char *name, cf_candidate_status st, double median_ms,
                               size_t ws)
{
    cf_candidate_stats c = {.status = st, .median_ms = median_ms, .workspace_bytes = ws};
    snprintf(c.algo, sizeof c.algo, "%s", name);
    return c;
}

static void test_summarize(void **state)
{
    (void)state;
    double t[] = {5, 1, 4, 2, 3, 10, 6, 7, 8, 9, 11}; /* 11 runs: p10 = 2, p90 = 10 */
    cf_candidate_stats c = {0};
    cf_find_summarize(&c, t, 11);
    assert_int_equal(c.repeats, 11);
    assert_true(c.min_ms == 1.0);
    assert_true(c.median_ms == 6.0);
    assert_true(c.spread == (10.0 - 2.0) / 6.0);
    double even[] = {4, 1, 3, 2};
    cf_find_summarize(&c, even, 4);
    assert_true(c.median_ms == 2.5);
    assert_true(c.spread == 3.0 / 2.5);
    cf_candidate_stats none = {.median_ms = 7};
    cf_find_summarize(&none, t, 0);
    assert_int_equal(none.repeats, 0);
    assert_true(none.median_ms == 7.0);
}

static void test_abandon(void **state)
{
    (void)state;
    double t[] = {3.1, 3.2, 3.3};
    assert_false(cf_find_abandon(t, 2, 1.0));   /* too few runs */
    assert_true(cf_find_abandon(t, 3, 2.0));    /* fastest 3.1 > 1.5 x 2 */
    assert_false(cf_find_abandon(t, 3, 2.1));   /* 3.1 <= 3.15 */
    assert_false(cf_find_abandon(t, 3, 0.0));   /* no best yet */
    double at[] = {3.0, 3.5, 4.0};
    assert_false(cf_find_abandon(at, 3, 2.0));  /* exactly 1.5 x: not slower */
}

static void test_retuned(void **state)
{
    (void)state;
    cf_candidate_stats c[] = {
        cand("a", CF_CAND_OK, 1, 0),     cand("bad", CF_CAND_FAILED, 0, 0),
        cand("b", CF_CAND_OK, 2, 0),     cand("c", CF_CAND_OK, 3, 0),
        cand("d", CF_CAND_OK, 4, 0),
    };
    cf_decision d = {.n_candidates = 5, .candidates = c};
    assert_true(cf_find_retuned(&d, "a"));
    assert_true(cf_find_retuned(&d, "c"));
    assert_false(cf_find_retuned(&d, "bad"));
    assert_false(cf_find_retuned(&d, "d")); /* fourth OK: past CF_FIND_RETUNE_TOP */
}

static void test_choose_margin(void **state)
{
    (void)state;
    cf_candidate_stats c[] = {
        cand("inc", CF_CAND_OK, 10.0, 64),
        cand("fast", CF_CAND_OK, 10.0 * (1.0 - CF_FIND_MARGIN) + 0.01, 0),
    };
    /* not beaten by the margin: stays although "fast" would win the workspace tie-break */
    assert_int_equal(cf_find_choose(c, 2, 0, NULL), 0);
    c[1].median_ms = 10.0 * (1.0 - CF_FIND_MARGIN) - 0.01;
    assert_int_equal(cf_find_choose(c, 2, 0, NULL), 1);
    c[0].status = CF_CAND_FAILED; /* a failed incumbent never stays */
    c[1].median_ms = 9.99;
    assert_int_equal(cf_find_choose(c, 2, 0, NULL), 1);
}

static void test_choose_ties(void **state)
{
    (void)state;
    cf_candidate_stats c[] = {
        cand("big", CF_CAND_OK, 1.00, 4096),  cand("small_early", CF_CAND_OK, 1.02, 64),
        cand("far", CF_CAND_OK, 2.00, 0),     cand("small_late", CF_CAND_OK, 1.01, 64),
    };
    /* within the margin of 1.00: the smallest workspace, then the earliest in list order;
     * "far" has no workspace but is outside the margin */
    assert_int_equal(cf_find_choose(c, 4, -1, NULL), 1);
}

static void test_choose_nothing_timed(void **state)
{
    (void)state;
    cf_candidate_stats c[] = {
        cand("x", CF_CAND_FAILED, 0, 0),    cand("y", CF_CAND_ABANDONED, 0, 0),
        cand("ref", CF_CAND_ABANDONED, 0, 0), cand("z", CF_CAND_NOT_APPLICABLE, 0, 0),
    };
    assert_int_equal(cf_find_choose(c, 4, 0, NULL), 1);
    assert_int_equal(cf_find_choose(c, 4, 0, "ref"), 2);
    c[1].status = c[2].status = CF_CAND_FAILED;
    assert_int_equal(cf_find_choose(c, 4, 0, "ref"), -1);
}

static void test_rank(void **state)
{
    (void)state;
    cf_candidate_stats c[] = {
        cand("na", CF_CAND_NOT_APPLICABLE, 0, 0), cand("slow", CF_CAND_OK, 3, 0),
        cand("failed", CF_CAND_FAILED, 0, 0),     cand("ab", CF_CAND_ABANDONED, 9, 0),
        cand("tie_ws1", CF_CAND_OK, 2, 128),      cand("pick", CF_CAND_OK, 2.01, 0),
        cand("tie_ws0", CF_CAND_OK, 2, 0),        cand("tie_ws0_late", CF_CAND_OK, 2, 0),
    };
    cf_find_rank(c, 8, 5);
    const char *want[] = {"pick", "tie_ws0", "tie_ws0_late", "tie_ws1",
                          "slow", "ab",      "failed",       "na"};
    for (int i = 0; i < 8; i++)
        assert_string_equal(c[i].algo, want[i]);
    cf_find_rank(c, 8, 8); /* out of range: unchanged */
    assert_string_equal(c[0].algo, "pick");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_summarize),       cmocka_unit_test(test_abandon),
        cmocka_unit_test(test_retuned),         cmocka_unit_test(test_choose_margin),
        cmocka_unit_test(test_choose_ties),     cmocka_unit_test(test_choose_nothing_timed),
        cmocka_unit_test(test_rank),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
