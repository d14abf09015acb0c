/*
 * test_confidence.c - what a measured decision rests on and when it is measured again
 * (src/decision/confidence.c): the choice's spread, the margin to the runner-up, the
 * candidates never timed, an unknown budget, and the re-time budgets of the foreground
 * and of the background tuner, with their cap.  Timings are made-up inputs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "decision/confidence.h"

static cf_candidate_stats cand(const char *name, cf_candidate_status st, double median_ms,
                               double spread, int repeats)
{
    cf_candidate_stats c = {.status = st, .median_ms = median_ms, .min_ms = median_ms,
                            .spread = spread, .repeats = repeats};
    snprintf(c.algo, sizeof c.algo, "%s", name);
    return c;
}

/* A decision choosing the first of `n` candidates `c`, measured with `budget_ms`. */
static cf_decision decision(cf_candidate_stats *c, int n, double budget_ms)
{
    cf_decision d = {.n_candidates = n, .candidates = c, .budget_ms = budget_ms};
    snprintf(d.algo, sizeof d.algo, "%s", c[0].algo);
    return d;
}

static void test_confident(void **state)
{
    (void)state;
    cf_candidate_stats c[] = {cand("a", CF_CAND_OK, 1.0, 0.02, 10),
                              cand("b", CF_CAND_OK, 1.5, 0.05, 10),
                              cand("c", CF_CAND_ABANDONED, 0, 0, 3), /* clearly slower */
                              cand("d", CF_CAND_NOT_APPLICABLE, 0, 0, 0),
                              cand("e", CF_CAND_FAILED, 0, 0, 0),
                              cand("ref", CF_CAND_ABANDONED, 0, 0, 0)};
    c[5].not_needed = true; /* a reference never started: it could not have won */
    cf_decision d = decision(c, 6, 1000);
    cf_confidence k;
    cf_decision_confidence(&d, &k);
    assert_int_equal(k.low, 0);
    assert_true(k.runner_up);
    assert_string_equal(k.runner_up_algo, "b");
    assert_true(k.margin == 0.5);
    assert_true(k.spread == 0.02);
    assert_int_equal(k.untimed, 0);
    char text[160];
    cf_confidence_describe(&k, text, sizeof text);
    assert_string_equal(text, "confident");
    /* Confident: kept by every Find, whatever its budget. */
    assert_true(cf_retime_budget_ms(&d, 5000, false) == 0);
    assert_true(cf_retime_budget_ms(&d, 5000, true) == 0);
}

static void test_untimed_and_short_budget(void **state)
{
    (void)state;
    /* The conv1: the incumbent alone timed within 50 ms, the faster candidates
     * never started. */
    cf_candidate_stats c[] = {cand("cpu.direct_blocked", CF_CAND_OK, 12.0, 0.1, 5),
                              cand("cpu.reference", CF_CAND_ABANDONED, 0, 0, 0),
                              cand("cpu.direct_small_c", CF_CAND_ABANDONED, 0, 0, 0)};
    cf_decision d = decision(c, 3, 50);
    cf_confidence k;
    cf_decision_confidence(&d, &k);
    assert_int_equal(k.low, CF_CONF_UNTIMED);
    assert_int_equal(k.untimed, 2);
    assert_false(k.runner_up);
    char text[160];
    cf_confidence_describe(&k, text, sizeof text);
    assert_string_equal(text, "low: 2 candidates untimed");
    /* The foreground re-times it only with a larger budget than it had. */
    assert_true(cf_retime_budget_ms(&d, 1000, false) == 1000);
    assert_true(cf_retime_budget_ms(&d, 50, false) == 0);
    assert_true(cf_retime_budget_ms(&d, 20, false) == 0);
    assert_true(cf_retime_budget_ms(&d, 0, false) == 0);
}

static void test_noise(void **state)
{
    (void)state;
    cf_candidate_stats c[] = {cand("a", CF_CAND_OK, 1.00, 0.08, 10),
                              cand("b", CF_CAND_OK, 1.05, 0.02, 10)};
    cf_decision d = decision(c, 2, 1000);
    cf_confidence k;
    cf_decision_confidence(&d, &k);
    assert_int_equal(k.low, CF_CONF_NOISE); /* 5% apart, 8% spread */
    /* The runner-up's own spread counts as much as the choice's. */
    c[0].spread = 0.01;
    c[1].spread = 0.06;
    cf_decision_confidence(&d, &k);
    assert_int_equal(k.low, CF_CONF_NOISE);
    c[1].spread = 0.04;
    cf_decision_confidence(&d, &k);
    assert_int_equal(k.low, 0);
    /* An incumbent kept although a candidate measured faster (within the tie band). */
    c[0].spread = c[1].spread = 0;
    c[1].median_ms = 0.99;
    cf_decision_confidence(&d, &k);
    assert_true(k.margin < 0);
    assert_int_equal(k.low, CF_CONF_NOISE);
    char text[160];
    cf_confidence_describe(&k, text, sizeof text);
    assert_string_equal(text, "low: runner-up within the noise");
}

/* A look past the budget: each candidate once, no spread to judge the margin by. */
static void test_timed_once(void **state)
{
    (void)state;
    cf_candidate_stats c[] = {cand("cpu.direct_small_c", CF_CAND_OK, 1.29, 0, 1),
                              cand("cpu.im2col_gemm", CF_CAND_OK, 1.69, 0, 1),
                              cand("cpu.direct_blocked", CF_CAND_OK, 5.8, 0, 1)};
    cf_decision d = decision(c, 3, 1);
    cf_confidence k;
    cf_decision_confidence(&d, &k);
    assert_int_equal(k.low, CF_CONF_ONCE);
    assert_int_equal(k.untimed, 0);
    char text[160];
    cf_confidence_describe(&k, text, sizeof text);
    assert_string_equal(text, "low: timed once");
    assert_true(cf_retime_budget_ms(&d, 1000, false) == 1000);
    /* The choice timed fully, its runner-up once: still thin. */
    c[0].repeats = 20;
    c[0].spread = 0.02;
    cf_decision_confidence(&d, &k);
    assert_int_equal(k.low, CF_CONF_ONCE);
    /* Both timed fully; a third candidate timed once is no one's rival. */
    c[1].repeats = 20;
    cf_decision_confidence(&d, &k);
    assert_int_equal(k.low, 0);
    /* With the noise: both reasons, in order. */
    c[1].median_ms = 1.30;
    c[0].repeats = 1;
    cf_decision_confidence(&d, &k);
    assert_int_equal(k.low, CF_CONF_NOISE | CF_CONF_ONCE);
    cf_confidence_describe(&k, text, sizeof text);
    assert_string_equal(text, "low: runner-up within the noise, timed once");
}

static void test_background_doubles_up_to_the_cap(void **state)
{
    (void)state;
    cf_candidate_stats c[] = {cand("a", CF_CAND_OK, 1.00, 0.2, 10),
                              cand("b", CF_CAND_OK, 1.01, 0.2, 10)};
    cf_decision d = decision(c, 2, 1000);
    /* A tie measured with the context's own budget: never again in the foreground. */
    assert_true(cf_retime_budget_ms(&d, 1000, false) == 0);
    /* The background tuner doubles the budget until CF_RETIME_BUDGET_CAP times the
     * context's, then keeps the decision: a true tie is not measured forever. */
    double budget = cf_retime_budget_ms(&d, 1000, true);
    assert_true(budget == 2000);
    d.budget_ms = budget;
    assert_true((budget = cf_retime_budget_ms(&d, 1000, true)) == 4000);
    d.budget_ms = budget;
    assert_true(cf_retime_budget_ms(&d, 1000, true) == 0);
    d.budget_ms = 3000;
    assert_true(cf_retime_budget_ms(&d, 1000, true) == 1000 * CF_RETIME_BUDGET_CAP);
    /* A shorter budget than the context's: the context's, background or not. */
    d.budget_ms = 100;
    assert_true(cf_retime_budget_ms(&d, 1000, true) == 1000);
}

static void test_unknown_budget_and_no_timing(void **state)
{
    (void)state;
    cf_candidate_stats c[] = {cand("a", CF_CAND_OK, 1.0, 0.01, 10),
                              cand("b", CF_CAND_OK, 3.0, 0.01, 10)};
    cf_decision d = decision(c, 2, 0); /* stored before find-db schema 2 */
    cf_confidence k;
    cf_decision_confidence(&d, &k);
    assert_int_equal(k.low, CF_CONF_UNKNOWN_BUDGET);
    assert_true(cf_retime_budget_ms(&d, 10, false) == 10); /* measured again, once */
    char text[160];
    cf_confidence_describe(&k, text, sizeof text);
    assert_string_equal(text, "low: budget unknown");
    /* The heuristic choice: nothing timed at all. */
    cf_candidate_stats h[] = {cand("a", CF_CAND_OK, 0, 0, 0), cand("b", CF_CAND_OK, 0, 0, 0)};
    cf_decision hd = decision(h, 2, 0);
    cf_decision_confidence(&hd, &k);
    assert_int_equal(k.low, CF_CONF_UNKNOWN_BUDGET | CF_CONF_UNTIMED);
    assert_int_equal(k.untimed, 2);
    /* No candidates, or a choice that is not among them. */
    cf_decision empty = {.budget_ms = 5};
    cf_decision_confidence(&empty, &k);
    assert_int_equal(k.low, CF_CONF_UNTIMED);
    snprintf(d.algo, sizeof d.algo, "z");
    d.budget_ms = 5;
    cf_decision_confidence(&d, &k);
    assert_int_equal(k.low, CF_CONF_UNTIMED);
    assert_false(k.runner_up);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_confident),
        cmocka_unit_test(test_untimed_and_short_budget),
        cmocka_unit_test(test_noise),
        cmocka_unit_test(test_timed_once),
        cmocka_unit_test(test_background_doubles_up_to_the_cap),
        cmocka_unit_test(test_unknown_budget_and_no_timing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
