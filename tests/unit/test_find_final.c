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

/* The last two candidates sampled: BURSTY's samples are disturbed (BURST_MS) while it
 * runs alone, three samples in a row or more (step 3), but for every tenth from the
 * first (so that it is not abandoned as hopeless after its first samples); in turns
 * (the final round: an untimed run, then a sample, per candidate) none is. */
static int last[2] = {-1, -1};
static int bursty_runs;
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
    if (i == BURSTY && last[0] == BURSTY && last[1] == BURSTY && bursty_runs++ % 10 != 0)
        *ms = BURST_MS;
    entries[i] += last[1] != i;
    last[0] = last[1];
    last[1] = i;
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

/* The bursty candidate's median (0.12) is 2x the steady one's (0.06), its fastest
 * sample (0.045) within the window: it is timed again in turns, undisturbed, and wins. */
static void test_fastest_sample_brings_a_candidate_in(void **state)
{
    (void)state;
    const cf_problem p = ff_problem();
    const cf_find_config cfg = {.budget_s = 1.0, .validate = true};
    cf_decision d;
    assert_int_equal(cf_find_measure(&backend, NULL, &p, &cfg, &d), CONVFIND_OK);
    assert_string_equal(d.algo, "test.bursty");
    assert_true(entries[BURSTY] > CF_FIND_MIN_REPEATS);
    assert_true(ff_stats_of(&d, "test.bursty")->median_ms < speed_ms[STEADY]);
    /* Neither its median nor its fastest sample near: not timed again. */
    assert_int_equal(entries[SLOW], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fastest_sample_brings_a_candidate_in),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
