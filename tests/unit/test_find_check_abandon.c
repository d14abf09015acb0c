/*
 * test_find_check_abandon.c - Find abandons a candidate on the check's timed run when
 * that run is already far slower than the best so far, before any sample.
 *
 * On the GPU the check runs a candidate twice (its unpacked and packed paths); the
 * second run, timed by the device's events, says what a run costs, and the harness used
 * to spend a further run (the first sample) to learn that a generic engine 20-50x slower
 * than the best could not win: about a third of such a candidate's cost, and 1.3 s of a
 * strict-f32 ResNet-50 Find at N=32 went to engine 0 alone.  A fake backend whose check
 * reports a time makes the protocol visible without timing anything: the slow candidate
 * must be ABANDONED with no sample taken; the same candidate is sampled when the check
 * reports no time (the CPU's check, whose first runs are cold), and a candidate close to
 * the best is sampled and OK.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fake_find.h"
#include "find/find.h"

static const ff_timed fast = FF_TIMED("test.fast", 1.0);
static const ff_timed close_one = FF_TIMED("test.close", 1.2);
static const ff_timed slow = FF_TIMED("test.slow", 40.0);
static const ff_timed reference = FF_TIMED("test.reference", 100.0);

static const cf_algo *const all[] = {&fast.algo, &close_one.algo, &slow.algo, &reference.algo};

static const cf_algo *const *algorithms(int *count)
{
    *count = (int)(sizeof all / sizeof all[0]);
    return all;
}

/* What the hooks saw: samples per algorithm, and whether check() reports a time. */
static int samples[4];
static bool check_times;

static int index_of(const cf_algo *a)
{
    for (int i = 0; i < 4; i++)
        if (all[i] == a)
            return i;
    return -1;
}

static bool check(cf_find_bench *b, cf_find_ready *r, int *runs, double *ms)
{
    (void)b;
    *runs = 2;
    *ms = check_times ? ff_timed_of(r)->run_ms : 0;
    return true;
}

static convfind_status sample(cf_find_bench *b, cf_find_ready *r, int batch, double *ms)
{
    (void)b, (void)batch;
    samples[index_of(r->algo)]++;
    *ms = ff_timed_of(r)->run_ms;
    return CONVFIND_OK;
}

static const cf_find_hooks hooks = {
    FF_HOOKS, .check = check, .sample = sample, .sample_target_ms = 0.25,
    .min_repeats = 3, .max_repeats = 3,
};

static const cf_backend backend = {
    .abi = CF_BACKEND_ABI, .name = "test", .algorithms = algorithms,
    .reference = &reference.algo, .find = &hooks,
};

static cf_candidate_stats find(bool timed_check)
{
    memset(samples, 0, sizeof samples);
    check_times = timed_check;
    const cf_problem p = ff_problem();
    const cf_find_config cfg = {.budget_s = 10, .validate = true};
    cf_decision d;
    assert_int_equal(cf_find_measure(&backend, NULL, &p, &cfg, &d), CONVFIND_OK);
    assert_string_equal(d.algo, "test.fast");
    cf_candidate_stats slow_stats = {0};
    for (int i = 0; i < d.n_candidates; i++)
        if (strcmp(d.candidates[i].algo, "test.slow") == 0)
            slow_stats = d.candidates[i];
        else if (strcmp(d.candidates[i].algo, "test.close") == 0)
            assert_int_equal(d.candidates[i].status, CF_CAND_OK);
    cf_decision_clear(&d);
    return slow_stats;
}

static void slow_candidate_abandoned_on_the_checks_run(void **state)
{
    (void)state;
    const cf_candidate_stats s = find(true);
    assert_int_equal(s.status, CF_CAND_ABANDONED);
    assert_int_equal(samples[2], 0);           /* the slow one: no sample at all */
    assert_true(s.median_ms == slow.run_ms);   /* its one measured run is what it reports */
    assert_true(samples[1] >= 3);              /* the close one was timed in full */
}

static void without_a_timed_check_the_first_sample_decides(void **state)
{
    (void)state;
    const cf_candidate_stats s = find(false);
    assert_int_equal(s.status, CF_CAND_ABANDONED);
    assert_int_equal(samples[2], 1); /* the first sample (which sizes the batch) only */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(slow_candidate_abandoned_on_the_checks_run),
        cmocka_unit_test(without_a_timed_check_the_first_sample_decides),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
