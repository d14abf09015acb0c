/*
 * test_find_budget.c - Find stays within its time budget when single runs are as long
 * as a candidate's share of it, and keeps its full protocol when they are short.
 *
 * On wav2vec2's feature encoder (runs of 20 ms to 2.7 s) one CPU Find took 17 s at a
 * budget of 1 s: every candidate got its warm-ups and least samples whatever they cost,
 * and the final round its least rounds.  A fake backend whose samples report times
 * without running makes the spending deterministic (the harness counts reported times
 * as spent); it counts the runs each candidate got.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fake_find.h"
#include "decision/confidence.h"
#include "find/find.h"

#define N_ALGOS 4

static const cf_algo algos[N_ALGOS] = {FF_ALGO("test.a"), FF_ALGO("test.b"),
                                       FF_ALGO("test.c"), FF_ALGO("test.reference")};
static const cf_algo *const all[N_ALGOS] = {&algos[0], &algos[1], &algos[2], &algos[3]};

static const cf_algo *const *algorithms(int *count)
{
    *count = N_ALGOS;
    return all;
}

/* Per algorithm: what one run reports (set by each test), and the runs it got. */
static double run_ms[N_ALGOS];
static int runs_of[N_ALGOS];
static double reported_ms; /* every run's reported time, in all */

/* Like the CPU's: one untimed run. */
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
    const ptrdiff_t i = r->algo - algos;
    runs_of[i] += batch;
    reported_ms += batch * run_ms[i];
    *ms = run_ms[i];
    return CONVFIND_OK;
}

static const cf_find_hooks hooks = {
    FF_HOOKS, .check = check, .sample = sample, .final_round = true,
};

static const cf_backend backend = {
    .abi = CF_BACKEND_ABI, .name = "test", .algorithms = algorithms,
    .reference = &algos[3], .find = &hooks,
};

#define BUDGET_S 1.0

/* A Find with these run times; the decision in *d. */
static void find(const double ms[N_ALGOS], cf_decision *d)
{
    memcpy(run_ms, ms, sizeof run_ms);
    memset(runs_of, 0, sizeof runs_of);
    reported_ms = 0;
    const cf_problem p = ff_problem();
    const cf_find_config cfg = {.budget_s = BUDGET_S, .validate = true};
    assert_int_equal(cf_find_measure(&backend, NULL, &p, &cfg, d), CONVFIND_OK);
}

/* Runs longer than a share (1 s / 4): a warm-up and one sample each, no more candidates
 * once the budget is spent, and no final round whose least rounds cannot fit. */
static void runs_longer_than_the_share(void **state)
{
    (void)state;
    static const double ms[N_ALGOS] = {400, 450, 420, 5000};
    cf_decision d;
    find(ms, &d);
    assert_string_equal(d.algo, "test.a");
    assert_int_equal(runs_of[0], 2); /* a warm-up and one sample */
    assert_int_equal(runs_of[1], 2);
    assert_int_equal(ff_stats_of(&d, "test.a")->repeats, 1); /* how little was measured */
    assert_int_equal(ff_stats_of(&d, "test.b")->status, CF_CAND_OK);
    /* Started after the budget was spent (0.8 + 0.9 s): never run. */
    assert_int_equal(runs_of[2], 0);
    assert_int_equal(runs_of[3], 0);
    assert_int_equal(ff_stats_of(&d, "test.c")->status, CF_CAND_ABANDONED);
    /* The budget, and what the last candidate started within it spent past it. */
    assert_true(reported_ms <= 1e3 * BUDGET_S + 2 * ms[1]);
    cf_decision_clear(&d);
}

/* Runs that fit their share but a final round whose least rounds (5 turns of two runs
 * per finalist) do not fit its quarter of the budget: the finalists keep step 3's
 * statistics and Find stays near its budget. */
static void final_round_within_its_share(void **state)
{
    (void)state;
    static const double ms[N_ALGOS] = {20, 21, 300, 300};
    cf_decision d;
    find(ms, &d);
    assert_string_equal(d.algo, "test.a");
    /* Each of a and b: a warm-up, then samples until their 250 ms share is spent. */
    assert_int_equal(runs_of[0], 1 + 13);
    assert_int_equal(runs_of[1], 1 + 12);
    assert_true(ff_stats_of(&d, "test.a")->repeats >= CF_FIND_MIN_REPEATS);
    assert_int_equal(runs_of[2], 2); /* longer than its share: a warm-up and a sample */
    assert_int_equal(runs_of[3], 0); /* started after the budget was spent */
    assert_true(reported_ms <= 1e3 * BUDGET_S + 2 * ms[2]);
    cf_decision_clear(&d);
}

/* Short runs: every candidate gets at least the least samples, and the close ones the
 * final round (whose rounds replace their statistics). */
static void short_runs_keep_the_protocol(void **state)
{
    (void)state;
    static const double ms[N_ALGOS] = {1.0, 1.05, 1.1, 30};
    cf_decision d;
    find(ms, &d);
    assert_string_equal(d.algo, "test.a");
    for (int i = 0; i < 3; i++)
        assert_true(runs_of[i] >= 1 + CF_FIND_MIN_REPEATS + 1 + 2 * CF_FIND_MIN_REPEATS);
    assert_true(ff_stats_of(&d, "test.reference")->repeats >= 1);
    cf_decision_clear(&d);
}

/* The CPU's hooks: a candidate reached after the budget still gets a look. */
static const cf_find_hooks look_hooks = {
    FF_HOOKS, .check = check, .sample = sample, .final_round = true, .reference_last = true,
    .look_past_budget = true,
};

static const cf_backend look_backend = {
    .abi = CF_BACKEND_ABI, .name = "test", .algorithms = algorithms,
    .reference = &algos[3], .find = &look_hooks,
};

/* A first candidate whose warm-up and sample alone outlast the budget (DeepLabV3's
 * dilated 3x3 at N=8 on the CPU): the others still get their check and one sample, and
 * the faster one is chosen; the reference, not needed once another measured, is not run.
 * Without the look (the first test) they are never started. */
static void looks_past_the_budget(void **state)
{
    (void)state;
    static const double ms[N_ALGOS] = {700, 360, 900, 5000};
    memcpy(run_ms, ms, sizeof run_ms);
    memset(runs_of, 0, sizeof runs_of);
    reported_ms = 0;
    const cf_problem p = ff_problem();
    const cf_find_config cfg = {.budget_s = BUDGET_S, .validate = true};
    cf_decision d;
    assert_int_equal(cf_find_measure(&look_backend, NULL, &p, &cfg, &d), CONVFIND_OK);
    assert_string_equal(d.algo, "test.b");
    assert_int_equal(runs_of[0], 2); /* a warm-up and one sample, within the budget */
    assert_int_equal(runs_of[1], 1); /* past it: one sample after the check */
    assert_int_equal(runs_of[2], 1);
    assert_int_equal(ff_stats_of(&d, "test.b")->repeats, 1);
    assert_int_equal(ff_stats_of(&d, "test.c")->status, CF_CAND_OK);
    assert_int_equal(runs_of[3], 0);
    assert_int_equal(ff_stats_of(&d, "test.reference")->status, CF_CAND_ABANDONED);
    assert_true(ff_stats_of(&d, "test.reference")->not_needed);
    assert_false(ff_stats_of(&d, "test.c")->not_needed);
    cf_confidence k; /* every contender timed, but once: thin, not untimed */
    cf_decision_confidence(&d, &k);
    assert_int_equal(k.untimed, 0);
    assert_int_equal(k.low & (CF_CONF_UNTIMED | CF_CONF_ONCE), CF_CONF_ONCE);
    cf_decision_clear(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(runs_longer_than_the_share),
        cmocka_unit_test(final_round_within_its_share),
        cmocka_unit_test(short_runs_keep_the_protocol),
        cmocka_unit_test(looks_past_the_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
