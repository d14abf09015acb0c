/*
 * test_find_final.c - who Find's final round (find.h, step 5) times again in turns.
 *
 * On a shared two-core machine a burst of another process's work during one
 * candidate's few milliseconds of samples moved its median far from its speed: DenseNet's
 * 1x1 layers on 7x7 maps (0.05 ms) had cpu.gemm_1x1 at a median of 0.12 ms, 0.045 ms
 * alone, left out of the final round, and Find chose an algorithm 1.35x slower.  Its
 * fastest sample still said what it could do, and now brings it into the final round.
 * A slow minute of the whole machine moves every sample of the candidate timed in it:
 * with many samples, a candidate up to CF_FIND_FINAL_REACH x the fastest median is
 * timed again in turns too.  A fake backend reports times without running, so the
 * sequence is deterministic.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fake_find.h"
#include "find/find.h"

#define N_ALGOS 4

static const cf_algo algos[N_ALGOS] = {FF_ALGO("test.steady"), FF_ALGO("test.bursty"),
                                       FF_ALGO("test.slow"), FF_ALGO("test.reference")};
static const cf_algo *const all[N_ALGOS] = {&algos[0], &algos[1], &algos[2], &algos[3]};

static const cf_algo *const *algorithms(int *count)
{
    *count = N_ALGOS;
    return all;
}

enum { STEADY, BURSTY, SLOW, REFERENCE };

/* What a run of each reports when undisturbed. */
/* (SLOW: outside the final window, 0.069, but not so slow that step 3 abandons it.) */
static const double speed_ms[N_ALGOS] = {0.060, 0.045, 0.080, 1.0};
#define BURST_MS 0.120
/* A slow minute: 1.4x STEADY, outside the window, not abandoned in step 3 (1.5x). */
#define SLOW_MINUTE_MS 0.084

/* BURSTY's runs are disturbed (BURST_MS) from its first until another candidate runs
 * (its turn in step 3), but for the first two of every ten, so that its first samples
 * (after a warm-up run) show it is not hopeless; in turns (the final round) none is.
 * With `slow_minute`, every run of its turn is slow (SLOW_MINUTE_MS) instead. */
static int bursty_runs;
static bool burst_over;
static bool slow_minute;
/* Every time above times this (a test of the final round's share). */
static double scale = 1.0;
static int last = -1; /* the candidate sampled last */
/* Per candidate, the samples that followed another's: 1 for its turn in step 3, more when
 * it was timed in the final round (not one per round: the rotating order sometimes
 * times it twice in a row). */
static int entries[N_ALGOS];

static bool check(cf_find_bench *b, cf_find_ready *r, int *runs, double *ms)
{
    (void)b, (void)r;
    *runs = 1;
    *ms = 0;
    return true;
}

static convfind_status sample(cf_find_bench *b, cf_find_ready *r, int batch, double *ms)
{
    (void)b;
    const int i = (int)(r->algo - algos);
    *ms = speed_ms[i];
    if (i == BURSTY && !burst_over && slow_minute)
        *ms = SLOW_MINUTE_MS;
    else if (i == BURSTY && !burst_over && bursty_runs++ % 10 >= 2)
        *ms = BURST_MS;
    bursty_runs += i == BURSTY && slow_minute;
    burst_over = burst_over || (i != BURSTY && bursty_runs > 0);
    *ms *= scale;
    entries[i] += last != i;
    last = i;
    (void)batch;
    return CONVFIND_OK;
}

static const cf_find_hooks hooks = {
    FF_HOOKS, .check = check, .sample = sample, .final_round = true,
};

static const cf_backend backend = {
    .abi = CF_BACKEND_ABI, .name = "test", .algorithms = algorithms,
    .reference = &algos[REFERENCE], .find = &hooks,
};

/* Three samples per candidate, as the CUDA backend takes. */
static const cf_find_hooks few_hooks = {
    FF_HOOKS, .check = check, .sample = sample, .final_round = true,
    .min_repeats = 3, .max_repeats = 3,
};

static const cf_backend few_backend = {
    .abi = CF_BACKEND_ABI, .name = "test", .algorithms = algorithms,
    .reference = &algos[REFERENCE], .find = &few_hooks,
};

static void find_scaled(const cf_backend *b, bool slow, double times, cf_decision *d)
{
    last = -1;
    scale = times;
    bursty_runs = 0;
    burst_over = false;
    slow_minute = slow;
    memset(entries, 0, sizeof entries);
    const cf_problem p = ff_problem();
    const cf_find_config cfg = {.budget_s = 1.0, .validate = true};
    assert_int_equal(cf_find_measure(b, NULL, &p, &cfg, d), CONVFIND_OK);
}

static void find(const cf_backend *b, bool slow, cf_decision *d)
{
    find_scaled(b, slow, 1.0, d);
}

/* The bursty candidate's median (0.12) is 2x the steady one's (0.06), its fastest
 * sample (0.045) within the window: it is timed again in turns, undisturbed, and wins. */
static void test_fastest_sample_brings_a_candidate_in(void **state)
{
    (void)state;
    cf_decision d;
    find(&backend, false, &d);
    assert_string_equal(d.algo, "test.bursty");
    assert_true(entries[BURSTY] > 1);
    assert_true(ff_stats_of(&d, "test.bursty")->median_ms < speed_ms[STEADY]);
    /* Within reach (1.33x): timed again, and still slower. */
    assert_true(entries[SLOW] > 1);
    assert_true(ff_stats_of(&d, "test.slow")->median_ms > speed_ms[STEADY]);
    /* Every sample of the least rounds says the other two are slower than the bursty
     * one: they stop racing then, and the round ends with it alone. */
    assert_int_equal(ff_stats_of(&d, "test.steady")->repeats, CF_FIND_MIN_REPEATS);
    assert_int_equal(ff_stats_of(&d, "test.slow")->repeats, CF_FIND_MIN_REPEATS);
    assert_int_equal(ff_stats_of(&d, "test.bursty")->repeats, CF_FIND_MIN_REPEATS);
    /* Abandoned in step 3 (1.0 ms): never timed again. */
    assert_int_equal(entries[REFERENCE], 1);
    cf_decision_clear(&d);
}

/* Every sample of the bursty candidate's turn came in a slow minute (0.084, 1.4x the
 * steady one's median, its fastest too): within reach, it is timed again in turns and
 * wins at its own speed. */
static void test_slow_minute_is_timed_again(void **state)
{
    (void)state;
    cf_decision d;
    find(&backend, true, &d);
    assert_string_equal(d.algo, "test.bursty");
    assert_true(entries[BURSTY] > 1);
    assert_true(ff_stats_of(&d, "test.bursty")->median_ms < speed_ms[STEADY]);
    cf_decision_clear(&d);
}

/* The same at 133x the times (the steady candidate 8 ms a run): the least rounds of
 * three finalists (11 runs each: 329 ms) do not fit the final round's quarter of the
 * 1 s budget, those of the two fastest medians (205 ms) do; the slowest is dropped and
 * the two are timed again. */
static void test_finalists_dropped_to_fit_the_share(void **state)
{
    (void)state;
    cf_decision d;
    find_scaled(&backend, true, 8.0 / speed_ms[STEADY], &d);
    assert_string_equal(d.algo, "test.steady");
    assert_true(entries[SLOW] > 1);
    assert_int_equal(ff_stats_of(&d, "test.slow")->repeats, CF_FIND_MIN_REPEATS);
    assert_int_equal(entries[BURSTY], 1);
    cf_decision_clear(&d);
}

/* Among three samples (one fast, two disturbed) the fastest says too little: the
 * bursty candidate is left out and the steady one chosen. */
static void test_fastest_of_few_samples_does_not(void **state)
{
    (void)state;
    cf_decision d;
    find(&few_backend, false, &d);
    assert_string_equal(d.algo, "test.steady");
    assert_int_equal(ff_stats_of(&d, "test.bursty")->repeats, 3);
    assert_int_equal(entries[BURSTY], 1);
    cf_decision_clear(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fastest_sample_brings_a_candidate_in),
        cmocka_unit_test(test_slow_minute_is_timed_again),
        cmocka_unit_test(test_finalists_dropped_to_fit_the_share),
        cmocka_unit_test(test_fastest_of_few_samples_does_not),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
