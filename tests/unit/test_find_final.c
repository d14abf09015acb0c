/*
 * test_find_final.c - who Find's final round (find.h, step 5) times again in turns.
 *
 * On a shared two-core machine a burst of another process's work during one
 * candidate's few milliseconds of samples moved its median far from its speed: DenseNet's
 * 1x1 layers on 7x7 maps (0.05 ms) had cpu.gemm_1x1 at a median of 0.12 ms, 0.045 ms
 * alone, left out of the final round, and Find chose an algorithm 1.35x slower.  Its
 * fastest sample still said what it could do, and now brings it into the final round.
 * A fake backend reports times without running, so the sequence is deterministic.
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

/* BURSTY's runs are disturbed (BURST_MS) from its first until another candidate runs
 * (its turn in step 3), but for the first two of every ten, so that its first samples
 * (after a warm-up run) show it is not hopeless; in turns (the final round) none is. */
static int bursty_runs;
static bool burst_over;
static int last = -1; /* the candidate sampled last */
/* Per candidate, the samples that followed another's: 1 for its turn in step 3, one more
 * for each round it had in the final round. */
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
    if (i == BURSTY && !burst_over && bursty_runs++ % 10 >= 2)
        *ms = BURST_MS;
    burst_over = burst_over || (i != BURSTY && bursty_runs > 0);
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

static void find(const cf_backend *b, cf_decision *d)
{
    last = -1;
    bursty_runs = 0;
    burst_over = false;
    memset(entries, 0, sizeof entries);
    const cf_problem p = ff_problem();
    const cf_find_config cfg = {.budget_s = 1.0, .validate = true};
    assert_int_equal(cf_find_measure(b, NULL, &p, &cfg, d), CONVFIND_OK);
}

/* The bursty candidate's median (0.12) is 2x the steady one's (0.06), its fastest
 * sample (0.045) within the window: it is timed again in turns, undisturbed, and wins. */
static void test_fastest_sample_brings_a_candidate_in(void **state)
{
    (void)state;
    cf_decision d;
    find(&backend, &d);
    assert_string_equal(d.algo, "test.bursty");
    assert_true(entries[BURSTY] > CF_FIND_MIN_REPEATS);
    assert_true(ff_stats_of(&d, "test.bursty")->median_ms < speed_ms[STEADY]);
    /* Neither its median nor its fastest sample near: not timed again. */
    assert_int_equal(entries[SLOW], 1);
    cf_decision_clear(&d);
}

/* Among three samples (one fast, two disturbed) the fastest says too little: the
 * bursty candidate is left out and the steady one chosen. */
static void test_fastest_of_few_samples_does_not(void **state)
{
    (void)state;
    cf_decision d;
    find(&few_backend, &d);
    assert_string_equal(d.algo, "test.steady");
    assert_int_equal(ff_stats_of(&d, "test.bursty")->repeats, 3);
    assert_int_equal(entries[BURSTY], 1);
    cf_decision_clear(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fastest_sample_brings_a_candidate_in),
        cmocka_unit_test(test_fastest_of_few_samples_does_not),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
