/*
 * test_db_retune.c - the find path and the database together: a stored decision from
 * another environment is re-timed on its top candidates only under RETUNE (and the
 * result stored for this environment), and ignored under IGNORE (a full Find).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../db/db_fixture.h"
#include "convfind.h"


static convfind_problem *small_problem(void)
{
    convfind_problem *p = fx_small_problem();
    assert_non_null(p);
    return p;
}

static convfind_context *context(const char *path, convfind_db_env_policy policy)
{
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.num_threads = 1;
    o.db_path = path;
    o.db_env_policy = policy;
    o.find_time_budget_s = 1.0;
    convfind_context *ctx = NULL;
    assert_int_equal(convfind_context_create(&o, &ctx), CONVFIND_OK);
    return ctx;
}

/* Stores, under a made-up older library version, a decision for `key` whose only OK
 * candidates are the reference and im2col. */
static void store_foreign(const char *path, const char *key)
{
    cf_db_config c = fx_host_config(path);
    snprintf(c.env.library, sizeof c.env.library, "0.0.1-old");
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    cf_decision d = fx_decision(1, 2);
    snprintf(d.candidates[0].algo, sizeof d.candidates[0].algo, "cpu.im2col_gemm");
    snprintf(d.candidates[1].algo, sizeof d.candidates[1].algo, "cpu.reference");
    snprintf(d.algo, sizeof d.algo, "cpu.im2col_gemm");
    assert_int_equal(cf_db_store(db, &key, &d, 1), CONVFIND_OK);
    cf_decision_clear(&d);
    cf_db_close(db);
}

/* Plans the problem on a fresh context; returns the decision stored for this
 * environment afterwards (caller clears) and the context's statistics. */
static cf_decision plan_and_read_back(const char *path, convfind_db_env_policy policy,
                                      const char *key, convfind_context_stats *st)
{
    convfind_context *ctx = context(path, policy);
    convfind_problem *p = small_problem();
    convfind_plan *plan = NULL;
    assert_int_equal(convfind_plan_create(ctx, p, &plan), CONVFIND_OK);
    convfind_plan_info info;
    assert_int_equal(convfind_plan_get_info(plan, &info), CONVFIND_OK);
    assert_int_equal(info.source, CONVFIND_SOURCE_MEASURED);
    st->struct_size = sizeof *st;
    assert_int_equal(convfind_context_stats_get(ctx, st), CONVFIND_OK);
    convfind_plan_destroy(plan);
    convfind_problem_destroy(p);
    convfind_context_destroy(ctx);

    cf_decision d;
    assert_int_equal(fx_lookup_at(path, key, &d), CF_DB_HIT);
    return d;
}

/* How many candidates other than the stored two were actually run. */
static int others_run(const cf_decision *d)
{
    int n = 0;
    for (int i = 0; i < d->n_candidates; i++)
        if (strcmp(d->candidates[i].algo, "cpu.im2col_gemm") != 0 &&
            strcmp(d->candidates[i].algo, "cpu.reference") != 0 && d->candidates[i].repeats > 0)
            n++;
    return n;
}

/* Stores a record from another environment for the small problem in <fx_dir>/<file>,
 * plans it under `policy` and returns what is stored afterwards (caller clears). */
static cf_decision replan_foreign(const char *file, convfind_db_env_policy policy,
                                  convfind_context_stats *st)
{
    char path[300], key[1024];
    snprintf(path, sizeof path, "%s/%s", fx_dir, file);
    convfind_context *ctx = context(CF_DB_MEMORY, policy);
    convfind_problem *p = small_problem();
    assert_true(convfind_problem_key(ctx, p, CONVFIND_WEIGHTS_PER_CALL, key, sizeof key) > 0);
    convfind_problem_destroy(p);
    convfind_context_destroy(ctx);
    store_foreign(path, key);
    return plan_and_read_back(path, policy, key, st);
}

static void retune_times_only_the_stored_candidates(void **state)
{
    (void)state;
    convfind_context_stats st;
    cf_decision d = replan_foreign("retune.sqlite", CONVFIND_DB_ENV_RETUNE, &st);
    assert_int_equal(st.finds, 1);
    assert_int_equal(st.seeded, 1); /* a re-time seeded by the foreign record */
    assert_int_equal(st.stored, 1);
    assert_int_equal(others_run(&d), 0);
    const cf_candidate_stats *a = cf_decision_candidate(&d, "cpu.im2col_gemm");
    const cf_candidate_stats *b = cf_decision_candidate(&d, "cpu.reference");
    assert_non_null(a);
    assert_non_null(b);
    assert_true(a->repeats > 0 && b->repeats > 0);
    cf_decision_clear(&d);
}

static void ignore_runs_a_full_find(void **state)
{
    (void)state;
    convfind_context_stats st;
    cf_decision d = replan_foreign("ignore.sqlite", CONVFIND_DB_ENV_IGNORE, &st);
    assert_int_equal(st.finds, 1);
    assert_int_equal(st.seeded, 0);
    assert_true(others_run(&d) > 0);
    cf_decision_clear(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(retune_times_only_the_stored_candidates),
        cmocka_unit_test(ignore_runs_a_full_find),
    };
    return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
