/*
 * test_policy.c - the find policies and the find database together, through real
 * contexts (src/core/policy.c, docs/find.md "Policies"):
 *   - EXHAUSTIVE uses a stored decision, as HYBRID does; only a retune re-measures it;
 *   - a retune (convfind_plan_options.retune) measures on a hit and on a stored decision,
 *     and replaces both;
 *   - a low-confidence decision is re-timed by a Find with a larger budget, a confident
 *     one is kept whatever its budget, and DEFERRED re-times a low-confidence one in the
 *     background while using it;
 *   - a record of another thread count seeds a re-time of its top candidates under
 *     HYBRID (counted), and EXHAUSTIVE runs a full Find instead;
 *   - two contexts of one process on one database measure a key once (issue 16,
 *     defect 9).
 * Timings are never asserted; what is asserted is which path ran (Find counts, sources,
 * which candidates were timed, the stored budget).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <time.h>

#include "../db/db_fixture.h"
#include "core/context.h"
#include "find/find.h"

static convfind_problem *small_problem(void)
{
    convfind_problem *p = fx_small_problem();
    assert_non_null(p);
    return p;
}

static void path_of(const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", fx_dir, name);
}

static convfind_context *context(const char *path, convfind_find_policy policy, int threads,
                                 double budget_s)
{
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.num_threads = threads;
    o.db_path = path;
    o.find_policy = policy;
    o.find_time_budget_s = budget_s;
    convfind_context *ctx = NULL;
    assert_int_equal(convfind_context_create(&o, &ctx), CONVFIND_OK);
    return ctx;
}

static convfind_context_stats stats_of(const convfind_context *ctx)
{
    convfind_context_stats st = {.struct_size = sizeof st};
    assert_int_equal(convfind_context_stats_get(ctx, &st), CONVFIND_OK);
    return st;
}

static uint64_t finds_of(const convfind_context *ctx)
{
    return stats_of(ctx).finds;
}

/* Plans `p` on `ctx` (per-call weights; with `retune`, convfind_plan_options.retune);
 * returns the plan's source and copies its algorithm to `algo`. */
static convfind_decision_source plan_with(convfind_context *ctx, const convfind_problem *p,
                                          bool retune, char *algo, size_t size)
{
    convfind_plan_options o;
    convfind_plan_options_init(&o);
    o.retune = retune;
    convfind_plan *pl = NULL;
    assert_int_equal(convfind_plan_create_ex(ctx, p, &o, &pl), CONVFIND_OK);
    convfind_plan_info info;
    assert_int_equal(convfind_plan_get_info(pl, &info), CONVFIND_OK);
    if (algo)
        snprintf(algo, size, "%s", info.algorithm);
    convfind_plan_destroy(pl);
    return info.source;
}

static convfind_decision_source plan(convfind_context *ctx, const convfind_problem *p,
                                     char *algo, size_t size)
{
    return plan_with(ctx, p, false, algo, size);
}

/* Plans the small problem on a fresh context, as a new process would, and checks the
 * plan's source and the number of Finds; the plan's algorithm goes to `algo` (may be
 * NULL).  Returns the context's seeded count. */
static uint64_t plan_fresh(const char *path, convfind_find_policy policy, int threads,
                           double budget_s, convfind_decision_source source, uint64_t finds,
                           char *algo, size_t size)
{
    convfind_problem *p = small_problem();
    convfind_context *ctx = context(path, policy, threads, budget_s);
    assert_int_equal(plan(ctx, p, algo, size), source);
    assert_int_equal(finds_of(ctx), finds);
    uint64_t seeded = stats_of(ctx).seeded;
    convfind_context_destroy(ctx);
    convfind_problem_destroy(p);
    return seeded;
}

/* A handle on `path` in this host's environment, as the contexts record it. */
static cf_db *host_db(const char *path)
{
    cf_db_config c = fx_host_config(path);
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    return db;
}

static void store_at(const char *path, const char *key, const cf_decision *d)
{
    cf_db *db = host_db(path);
    assert_int_equal(cf_db_store(db, &key, d, 1), CONVFIND_OK);
    cf_db_close(db);
}

/* The decision stored for `key` in this environment (caller clears). */
static cf_decision stored_at(const char *path, const char *key)
{
    cf_decision d;
    assert_int_equal(fx_lookup_at(path, key, &d), CF_DB_HIT);
    return d;
}

static int timed(const cf_decision *d)
{
    int n = 0;
    for (int i = 0; i < d->n_candidates; i++)
        n += d->candidates[i].repeats > 0;
    return n;
}

static cf_candidate_stats cand(const char *name, cf_candidate_status st, double median_ms,
                               double spread, int repeats)
{
    cf_candidate_stats c = {.status = st, .median_ms = median_ms, .min_ms = median_ms,
                            .spread = spread, .repeats = repeats, .validated = true};
    snprintf(c.algo, sizeof c.algo, "%s", name);
    return c;
}

/* Stores for `key` a decision choosing cpu.reference (1 ms, spread 0.01) over
 * `second`, as if measured with `budget_ms`. */
static void store_made_up(const char *path, const char *key, double budget_ms,
                          cf_candidate_stats second)
{
    cf_candidate_stats c[2] = {cand("cpu.reference", CF_CAND_OK, 1.0, 0.01, 10), second};
    cf_decision d = {.n_candidates = 2, .candidates = c, .budget_ms = budget_ms};
    snprintf(d.algo, sizeof d.algo, "cpu.reference");
    store_at(path, key, &d);
}

/* The key of the small problem on a context like `context(.., threads, ..)`. */
static void key_for(int threads, char *key, size_t size)
{
    convfind_context *ctx = context(CF_DB_MEMORY, CONVFIND_FIND_HEURISTIC, threads, 0.01);
    convfind_problem *p = small_problem();
    assert_true(convfind_problem_key(ctx, p, CONVFIND_WEIGHTS_PER_CALL, key, size) > 0);
    convfind_problem_destroy(p);
    convfind_context_destroy(ctx);
}

static void test_exhaustive_uses_stored(void **state)
{
    (void)state;
    char path[300];
    path_of("exhaustive.sqlite", path, sizeof path);
    plan_fresh(path, CONVFIND_FIND_EXHAUSTIVE, 1, 0.05, CONVFIND_SOURCE_MEASURED, 1, NULL, 0);
    /* Another process: the stored decision, no Find. */
    plan_fresh(path, CONVFIND_FIND_EXHAUSTIVE, 1, 0.05, CONVFIND_SOURCE_STORED, 0, NULL, 0);
}

static void test_retune_replaces(void **state)
{
    (void)state;
    char path[300], key[1024], algo[64];
    path_of("retune.sqlite", path, sizeof path);
    key_for(1, key, sizeof key);
    /* Confident: every policy would keep it. */
    store_made_up(path, key, 50, cand("cpu.im2col_gemm", CF_CAND_OK, 9.0, 0.01, 10));
    convfind_problem *p = small_problem();
    convfind_context *ctx = context(path, CONVFIND_FIND_HYBRID, 1, 0.05);
    assert_int_equal(plan(ctx, p, algo, sizeof algo), CONVFIND_SOURCE_STORED);
    assert_string_equal(algo, "cpu.reference");
    /* A retune on a cache hit: measured now, the cache and the database replaced. */
    assert_int_equal(plan_with(ctx, p, true, NULL, 0), CONVFIND_SOURCE_MEASURED);
    assert_int_equal(finds_of(ctx), 1);
    assert_int_equal(plan(ctx, p, NULL, 0), CONVFIND_SOURCE_MEASURED);
    assert_int_equal(finds_of(ctx), 1);
    cf_decision d = stored_at(path, key);
    assert_true(d.budget_ms == 50);
    assert_true(timed(&d) > 2); /* a full Find, not the two made-up candidates */
    cf_decision_clear(&d);
    /* Twice on one entry: each retune replaces the newest decision. */
    assert_int_equal(plan_with(ctx, p, true, NULL, 0), CONVFIND_SOURCE_MEASURED);
    assert_int_equal(finds_of(ctx), 2);
    convfind_context_destroy(ctx);
    /* A retune on a miss, whatever the policy: REPLAY never measures otherwise. */
    ctx = context(path, CONVFIND_FIND_REPLAY, 1, 0.02);
    assert_int_equal(plan_with(ctx, p, true, NULL, 0), CONVFIND_SOURCE_MEASURED);
    assert_int_equal(finds_of(ctx), 1);
    d = stored_at(path, key);
    assert_true(d.budget_ms == 20);
    cf_decision_clear(&d);
    convfind_context_destroy(ctx);
    convfind_problem_destroy(p);
}

static void test_low_confidence_is_retimed(void **state)
{
    (void)state;
    char path[300], key[1024], algo[64];
    path_of("confidence.sqlite", path, sizeof path);
    key_for(1, key, sizeof key);
    /* The conv1: the heuristic choice timed, the other never started. */
    store_made_up(path, key, 50, cand("cpu.im2col_gemm", CF_CAND_ABANDONED, 0, 0, 0));
    /* The same budget: re-timing would most likely repeat the story; it is used. */
    plan_fresh(path, CONVFIND_FIND_HYBRID, 1, 0.05, CONVFIND_SOURCE_STORED, 0, algo,
               sizeof algo);
    assert_string_equal(algo, "cpu.reference");
    /* A larger budget: measured again, stored with it. */
    convfind_problem *p = small_problem();
    convfind_context *ctx = context(path, CONVFIND_FIND_EXHAUSTIVE, 1, 0.2);
    assert_int_equal(plan(ctx, p, NULL, 0), CONVFIND_SOURCE_MEASURED);
    assert_int_equal(stats_of(ctx).finds, 1);
    assert_int_equal(stats_of(ctx).retimed_low_confidence, 1);
    convfind_context_destroy(ctx);
    convfind_problem_destroy(p);
    cf_decision d = stored_at(path, key);
    assert_true(d.budget_ms == 200);
    assert_true(timed(&d) > 2);
    cf_decision_clear(&d);
    /* Measured with that budget now: kept by the next process with it. */
    plan_fresh(path, CONVFIND_FIND_HYBRID, 1, 0.2, CONVFIND_SOURCE_STORED, 0, NULL, 0);
    /* A confident decision is kept whatever budget it had. */
    store_made_up(path, key, 10, cand("cpu.im2col_gemm", CF_CAND_OK, 3.0, 0.01, 10));
    plan_fresh(path, CONVFIND_FIND_HYBRID, 1, 1.0, CONVFIND_SOURCE_STORED, 0, algo,
               sizeof algo);
    assert_string_equal(algo, "cpu.reference");
}

static void test_deferred_retimes_in_background(void **state)
{
    (void)state;
    char path[300], key[1024], algo[64];
    path_of("deferred.sqlite", path, sizeof path);
    key_for(1, key, sizeof key);
    /* Within the noise, measured with the context's own budget. */
    store_made_up(path, key, 100, cand("cpu.im2col_gemm", CF_CAND_OK, 1.05, 0.2, 10));
    convfind_problem *p = small_problem();
    convfind_context *ctx = context(path, CONVFIND_FIND_DEFERRED, 1, 0.1);
    convfind_plan *pl = NULL;
    assert_int_equal(convfind_plan_create(ctx, p, &pl), CONVFIND_OK);
    convfind_plan_info info;
    assert_int_equal(convfind_plan_get_info(pl, &info), CONVFIND_OK);
    assert_int_equal(info.source, CONVFIND_SOURCE_STORED); /* used at once */
    assert_false(info.provisional);
    snprintf(algo, sizeof algo, "%s", info.algorithm);
    assert_string_equal(algo, "cpu.reference");
    convfind_context_stats st = {.struct_size = sizeof st};
    for (int i = 0; i < 3000; i++) { /* at most 30 s on a loaded machine */
        assert_int_equal(convfind_context_stats_get(ctx, &st), CONVFIND_OK);
        if (st.deferred_updates)
            break;
        nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
    }
    assert_int_equal(st.deferred_updates, 1);
    assert_int_equal(st.retimed_low_confidence, 1);
    assert_int_equal(convfind_plan_get_info(pl, &info), CONVFIND_OK);
    assert_int_equal(info.source, CONVFIND_SOURCE_MEASURED); /* the plan switched */
    convfind_plan_destroy(pl);
    convfind_context_destroy(ctx);
    cf_decision d = stored_at(path, key);
    assert_true(d.budget_ms == 200); /* twice the budget it had */
    cf_decision_clear(&d);
    convfind_problem_destroy(p);
}

static void test_other_thread_count_seeds(void **state)
{
    (void)state;
    char path[300], key1[1024], key3[1024];
    path_of("seeded.sqlite", path, sizeof path);
    key_for(1, key1, sizeof key1);
    key_for(3, key3, sizeof key3);
    assert_int_equal(plan_fresh(path, CONVFIND_FIND_HYBRID, 2, 0.05, CONVFIND_SOURCE_MEASURED,
                                1, NULL, 0), 0);
    /* One thread: the two-thread record seeds a re-time of its top candidates. */
    assert_int_equal(plan_fresh(path, CONVFIND_FIND_HYBRID, 1, 0.05, CONVFIND_SOURCE_MEASURED,
                                1, NULL, 0), 1);
    cf_decision d = stored_at(path, key1);
    assert_true(timed(&d) >= 1 && timed(&d) <= CF_FIND_RETUNE_TOP);
    cf_decision_clear(&d);
    /* EXHAUSTIVE makes every decision from a full Find. */
    assert_int_equal(plan_fresh(path, CONVFIND_FIND_EXHAUSTIVE, 3, 0.05,
                                CONVFIND_SOURCE_MEASURED, 1, NULL, 0), 0);
    d = stored_at(path, key3);
    assert_true(timed(&d) > CF_FIND_RETUNE_TOP);
    cf_decision_clear(&d);
}

typedef struct planner {
    convfind_context *ctx;
    const convfind_problem *p;
    pthread_barrier_t *go;
    convfind_decision_source source;
} planner;

static void *plan_thread(void *arg)
{
    planner *pl = arg;
    pthread_barrier_wait(pl->go);
    pl->source = plan(pl->ctx, pl->p, NULL, 0);
    return NULL;
}

static void test_two_contexts_measure_once(void **state)
{
    (void)state;
    char path[300], key[1024];
    path_of("two.sqlite", path, sizeof path);
    key_for(1, key, sizeof key);
    convfind_problem *p = small_problem();
    convfind_context *a = context(path, CONVFIND_FIND_HYBRID, 1, 0.05);
    convfind_context *b = context(path, CONVFIND_FIND_HYBRID, 1, 0.05);
    /* While context a's handle holds the key's lease, b does not measure the key: it
     * waits for a's decision, then takes the heuristic choice. */
    bool got = false;
    assert_int_equal(cf_db_lease_acquire(a->db, key, &got), CONVFIND_OK);
    assert_true(got);
    assert_int_equal(plan(b, p, NULL, 0), CONVFIND_SOURCE_HEURISTIC);
    assert_int_equal(finds_of(b), 0);
    cf_db_lease_release(a->db, key);
    convfind_context_destroy(b);
    /* Racing from two threads, whoever comes second uses the first's decision. */
    b = context(path, CONVFIND_FIND_HYBRID, 1, 0.05);
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 2);
    planner pa = {.ctx = a, .p = p, .go = &go}, pb = {.ctx = b, .p = p, .go = &go};
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, plan_thread, &pa), 0);
    assert_int_equal(pthread_create(&tb, NULL, plan_thread, &pb), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    pthread_barrier_destroy(&go);
    assert_int_equal(finds_of(a) + finds_of(b), 1);
    assert_true((pa.source == CONVFIND_SOURCE_MEASURED) != (pb.source == CONVFIND_SOURCE_MEASURED));
    convfind_context_destroy(a);
    convfind_context_destroy(b);
    convfind_problem_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exhaustive_uses_stored),
        cmocka_unit_test(test_retune_replaces),
        cmocka_unit_test(test_low_confidence_is_retimed),
        cmocka_unit_test(test_deferred_retimes_in_background),
        cmocka_unit_test(test_other_thread_count_seeds),
        cmocka_unit_test(test_two_contexts_measure_once),
    };
    return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
