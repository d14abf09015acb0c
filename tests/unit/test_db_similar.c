/*
 * test_db_similar.c - decisions travel to similar machines (src/db/db_similar.c, and
 * cf_db_begin's actions): with nothing stored for a key, a record of the same problem
 * from the same backend and ISA level seeds a re-time, the same CPU model with the
 * nearest thread count first, then another model; another ISA level, another problem,
 * a record without a timed candidate, db_env_policy IGNORE and a request that does not
 * ask never seed.  Also a stored decision that the request finds not usable is
 * re-timed under the lease (RETIME), and past the wait it is used rather than dropped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../db/db_fixture.h"
#include "db/db_internal.h"

#define PROBLEM "v1;conv;f32;nchw;n=1;c=4;in=8x8;m=8;k=3x3;g=1;s=1x1;d=1x1;pb=1,1;pe=1,1;" \
                "opad=0,0;out=8x8;bias=0;z=0;act=none;math=strict;ws=inf;be=cpu:"

static void key_of(const char *problem, const char *cpu, const char *isa, int threads, char *buf,
                   size_t size)
{
    snprintf(buf, size, "%s%s:%s:t%d", problem, cpu, isa, threads);
}

static cf_db *open_at(const char *name, const char *system_name)
{
    char path[300], sys[300];
    snprintf(path, sizeof path, "%s/%s", fx_dir, name);
    snprintf(sys, sizeof sys, "%s/%s", fx_dir, system_name ? system_name : "");
    cf_db_config c = fx_config(path);
    c.system_path = system_name ? sys : NULL;
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    return db;
}

/* Stores fx_decision(seed, 3) for the key of (cpu, isa, threads). */
static void store(cf_db *db, const char *problem, const char *cpu, const char *isa, int threads,
                  int seed)
{
    char key[600];
    key_of(problem, cpu, isa, threads, key, sizeof key);
    const char *k = key;
    cf_decision d = fx_decision(seed, 3);
    assert_int_equal(cf_db_store(db, &k, &d, 1), CONVFIND_OK);
    cf_decision_clear(&d);
}

/* cf_db_begin's action for the key of (cpu, isa, threads) with `similar`; the seed of
 * the decision it gave in *seed (-1 for none).  A lease taken is released. */
static cf_db_action begin(cf_db *db, const char *cpu, const char *isa, int threads, bool similar,
                          int *seed)
{
    char key[600];
    key_of(PROBLEM, cpu, isa, threads, key, sizeof key);
    cf_decision d;
    cf_db_action a = cf_db_begin(db, key, &(cf_db_request){.similar = similar}, &d);
    *seed = -1;
    if (d.algo[0])
        assert_int_equal(sscanf(d.algo, "algo%d_", seed), 1);
    cf_decision_clear(&d);
    if (a != CF_DB_ACTION_USE)
        cf_db_finish(db, key, NULL);
    return a;
}

static void test_compatible_keys_seed(void **state)
{
    (void)state;
    cf_db *db = open_at("similar.sqlite", NULL);
    store(db, PROBLEM, "CPU A", "avx2", 2, 1);
    store(db, PROBLEM, "CPU A", "avx2", 8, 2);
    store(db, PROBLEM, "CPU B", "avx2", 4, 3);
    store(db, PROBLEM, "CPU A", "avx512", 3, 4);
    store(db, "v1;conv;f32;nchw;n=1;c=5;in=8x8;m=8;k=3x3;g=1;s=1x1;d=1x1;pb=1,1;pe=1,1;"
              "opad=0,0;out=8x8;bias=0;z=0;act=none;math=strict;ws=inf;be=cpu:",
          "CPU A", "avx2", 3, 5);
    int seed;
    /* The same model first, the nearest thread count (2 is nearer to 3 than 8 is). */
    assert_int_equal(begin(db, "CPU A", "avx2", 3, true, &seed), CF_DB_ACTION_SEED);
    assert_int_equal(seed, 1);
    assert_int_equal(begin(db, "CPU A", "avx2", 7, true, &seed), CF_DB_ACTION_SEED);
    assert_int_equal(seed, 2);
    /* Another model: the nearest thread count among the others. */
    assert_int_equal(begin(db, "CPU C", "avx2", 4, true, &seed), CF_DB_ACTION_SEED);
    assert_int_equal(seed, 3);
    /* Never another ISA level (portable has no record), nor without asking. */
    assert_int_equal(begin(db, "CPU A", "portable", 3, true, &seed), CF_DB_ACTION_BENCHMARK);
    assert_int_equal(seed, -1);
    assert_int_equal(begin(db, "CPU A", "avx2", 3, false, &seed), CF_DB_ACTION_BENCHMARK);
    /* The key itself stored: used as it is. */
    assert_int_equal(begin(db, "CPU A", "avx2", 2, true, &seed), CF_DB_ACTION_USE);
    assert_int_equal(seed, 1);
    cf_db_close(db);
}

static void test_what_never_seeds(void **state)
{
    (void)state;
    cf_db *db = open_at("never.sqlite", NULL);
    /* A record whose candidates were never timed (a heuristic placeholder) seeds
     * nothing: there is nothing to re-time. */
    char key[600];
    key_of(PROBLEM, "CPU A", "avx2", 2, key, sizeof key);
    const char *k = key;
    cf_decision d = fx_decision(9, 2);
    for (int i = 0; i < 2; i++)
        d.candidates[i].repeats = 0;
    assert_int_equal(cf_db_store(db, &k, &d, 1), CONVFIND_OK);
    cf_decision_clear(&d);
    int seed;
    assert_int_equal(begin(db, "CPU A", "avx2", 4, true, &seed), CF_DB_ACTION_BENCHMARK);
    store(db, PROBLEM, "CPU A", "avx2", 8, 7);
    assert_int_equal(begin(db, "CPU A", "avx2", 4, true, &seed), CF_DB_ACTION_SEED);
    assert_int_equal(seed, 7);
    cf_db_close(db);
    /* Under IGNORE nothing measured elsewhere is used, a similar machine's neither. */
    char path[300];
    snprintf(path, sizeof path, "%s/never.sqlite", fx_dir);
    cf_db_config c = fx_config(path);
    c.env_policy = CONVFIND_DB_ENV_IGNORE;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    assert_int_equal(begin(db, "CPU A", "avx2", 4, true, &seed), CF_DB_ACTION_BENCHMARK);
    cf_db_close(db);
}

static void test_system_tier_seeds(void **state)
{
    (void)state;
    cf_db *sys = open_at("system.sqlite", NULL);
    store(sys, PROBLEM, "CPU A", "avx2", 16, 11);
    cf_db_close(sys);
    cf_db *db = open_at("user.sqlite", "system.sqlite");
    int seed;
    assert_int_equal(begin(db, "CPU A", "avx2", 4, true, &seed), CF_DB_ACTION_SEED);
    assert_int_equal(seed, 11);
    /* The user tier's compatible record comes first. */
    store(db, PROBLEM, "CPU B", "avx2", 1, 12);
    assert_int_equal(begin(db, "CPU A", "avx2", 4, true, &seed), CF_DB_ACTION_SEED);
    assert_int_equal(seed, 12);
    cf_db_close(db);
}

static bool never_usable(const cf_decision *d, void *arg)
{
    (void)d;
    (void)arg;
    return false;
}

static void test_unusable_decision_is_retimed(void **state)
{
    (void)state;
    cf_db *a = open_at("retime.sqlite", NULL), *b = open_at("retime.sqlite", NULL);
    char key[600];
    key_of(PROBLEM, "CPU A", "avx2", 2, key, sizeof key);
    store(a, PROBLEM, "CPU A", "avx2", 2, 21);
    const cf_db_request req = {.usable = never_usable, .wait_ms = 30};
    cf_decision d;
    assert_int_equal(cf_db_begin(a, key, &req, &d), CF_DB_ACTION_RETIME);
    assert_string_equal(d.algo, "algo21_0"); /* the incumbent of the re-time */
    cf_decision_clear(&d);
    /* While `a` re-times, `b` waits; past the wait it uses what is stored. */
    assert_int_equal(cf_db_begin(b, key, &req, &d), CF_DB_ACTION_USE);
    assert_string_equal(d.algo, "algo21_0");
    cf_decision_clear(&d);
    cf_decision fresh = fx_decision(22, 2);
    cf_db_finish(a, key, &fresh);
    cf_decision_clear(&fresh);
    /* Usable now, for a request that takes any decision. */
    assert_int_equal(cf_db_begin(b, key, &(cf_db_request){0}, &d), CF_DB_ACTION_USE);
    assert_string_equal(d.algo, "algo22_0");
    cf_decision_clear(&d);
    cf_db_close(a);
    cf_db_close(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compatible_keys_seed),
        cmocka_unit_test(test_what_never_seeds),
        cmocka_unit_test(test_system_tier_seeds),
        cmocka_unit_test(test_unusable_decision_is_retimed),
    };
    return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
