/*
 * test_db_artifacts.c - compiled forms in the find-db (cf_db_artifact_put/get): bytes come
 * back identical, per key, environment and algorithm, replaced by a later put, shared by
 * the handles of one file, kept in memory databases, refused over CF_DB_ARTIFACT_MAX,
 * counted by the statistics and pruned with their decision.  Schema migration and
 * read-only files: test_db_migrate.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../db/db_fixture.h"
#include "db/db.h"

/* `n` bytes with zeros inside (every seventh), distinct per seed. */
static unsigned char *pattern(size_t n, int seed)
{
    unsigned char *b = malloc(n);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++)
        b[i] = i % 7 == 3 ? 0 : (unsigned char)(i * 31 + (size_t)seed);
    return b;
}

static void put(cf_db *db, int k, const char *algo, size_t n, int seed)
{
    char key[128];
    fx_key(k, key, sizeof key);
    unsigned char *b = pattern(n, seed);
    assert_int_equal(cf_db_artifact_put(db, key, algo, b, n), CONVFIND_OK);
    free(b);
}

/* Asserts what get answers: pattern(n, seed), or none when n == 0. */
static void expect(cf_db *db, int k, const char *algo, size_t n, int seed)
{
    char key[128];
    fx_key(k, key, sizeof key);
    void *blob = (void *)key; /* must be overwritten either way */
    size_t size = 12345;
    assert_int_equal(cf_db_artifact_get(db, key, algo, &blob, &size), CONVFIND_OK);
    assert_int_equal(size, n);
    if (n == 0) {
        assert_null(blob);
        return;
    }
    assert_non_null(blob);
    unsigned char *want = pattern(n, seed);
    assert_memory_equal(blob, want, n);
    free(want);
    free(blob);
}

static cf_db *open_at(const char *path, const char *device)
{
    cf_db_config c = fx_config(path);
    if (device)
        snprintf(c.env.device, sizeof c.env.device, "%s", device);
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    return db;
}

static void path_of(const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", fx_dir, name);
}

static void test_round_trip_and_replace(void **state)
{
    (void)state;
    char path[300];
    path_of("rt.sqlite", path, sizeof path);
    cf_db *db = open_at(path, NULL);
    expect(db, 1, "cudnn.engine3", 0, 0);
    put(db, 1, "cudnn.engine3", 70000, 1);
    expect(db, 1, "cudnn.engine3", 70000, 1);
    /* Another handle of the file, open meanwhile, sees it at once. */
    cf_db *other = open_at(path, NULL);
    expect(other, 1, "cudnn.engine3", 70000, 1);
    /* A later put replaces it, also a shorter one. */
    put(other, 1, "cudnn.engine3", 5, 2);
    expect(db, 1, "cudnn.engine3", 5, 2);
    cf_db_close(other);
    cf_db_close(db);
    db = open_at(path, NULL);
    expect(db, 1, "cudnn.engine3", 5, 2);
    cf_db_close(db);
}

static void test_per_key_algo_and_environment(void **state)
{
    (void)state;
    char path[300];
    path_of("iso.sqlite", path, sizeof path);
    cf_db *db = open_at(path, NULL), *there = open_at(path, "another-device");
    put(db, 1, "cudnn.engine3", 100, 1);
    expect(db, 1, "cudnn.engine4", 0, 0);
    expect(db, 2, "cudnn.engine3", 0, 0);
    expect(there, 1, "cudnn.engine3", 0, 0);
    /* The other environment's own compiled form replaces nothing here. */
    put(there, 1, "cudnn.engine3", 200, 2);
    expect(there, 1, "cudnn.engine3", 200, 2);
    expect(db, 1, "cudnn.engine3", 100, 1);
    put(db, 1, "cudnn.engine4", 300, 3);
    expect(db, 1, "cudnn.engine3", 100, 1);
    expect(db, 1, "cudnn.engine4", 300, 3);
    cf_db_close(there);
    cf_db_close(db);
}

static void test_memory_and_limits(void **state)
{
    (void)state;
    cf_db *db = open_at(CF_DB_MEMORY, NULL);
    put(db, 1, "a", 1, 1);
    expect(db, 1, "a", 1, 1);
    put(db, 2, "a", CF_DB_ARTIFACT_MAX, 2);
    expect(db, 2, "a", CF_DB_ARTIFACT_MAX, 2);
    /* One byte more is not stored, and not an error; nor does it replace. */
    put(db, 2, "a", (size_t)CF_DB_ARTIFACT_MAX + 1, 3);
    expect(db, 2, "a", CF_DB_ARTIFACT_MAX, 2);
    put(db, 3, "a", (size_t)CF_DB_ARTIFACT_MAX + 1, 3);
    expect(db, 3, "a", 0, 0);
    cf_db_close(db);
}

static void test_invalid_arguments(void **state)
{
    (void)state;
    cf_db *db = open_at(CF_DB_MEMORY, NULL);
    char key[128];
    fx_key(1, key, sizeof key);
    const char b[1] = {0};
    void *blob = NULL;
    size_t size = 0;
    assert_int_equal(cf_db_artifact_put(NULL, key, "a", b, 1), CONVFIND_ERR_NULL_POINTER);
    assert_int_equal(cf_db_artifact_put(db, NULL, "a", b, 1), CONVFIND_ERR_NULL_POINTER);
    assert_int_equal(cf_db_artifact_put(db, key, NULL, b, 1), CONVFIND_ERR_NULL_POINTER);
    assert_int_equal(cf_db_artifact_put(db, key, "a", NULL, 1), CONVFIND_ERR_NULL_POINTER);
    assert_int_equal(cf_db_artifact_put(db, key, "a", b, 0), CONVFIND_ERR_INVALID_ATTRIBUTE);
    assert_int_equal(cf_db_artifact_put(db, "", "a", b, 1), CONVFIND_ERR_INVALID_ATTRIBUTE);
    assert_int_equal(cf_db_artifact_get(NULL, key, "a", &blob, &size),
                     CONVFIND_ERR_NULL_POINTER);
    assert_int_equal(cf_db_artifact_get(db, key, NULL, &blob, &size), CONVFIND_ERR_NULL_POINTER);
    assert_int_equal(cf_db_artifact_get(db, key, "a", NULL, &size), CONVFIND_ERR_NULL_POINTER);
    assert_int_equal(cf_db_artifact_get(db, key, "a", &blob, NULL), CONVFIND_ERR_NULL_POINTER);
    cf_db_close(db);
}

static void store(cf_db *db, int k, int seed)
{
    char key[128];
    fx_key(k, key, sizeof key);
    const char *keys[1] = {key};
    cf_decision d = fx_decision(seed, 2);
    assert_int_equal(cf_db_store(db, keys, &d, 1), CONVFIND_OK);
    cf_decision_clear(&d);
}

/* Prune keeps the compiled forms of this environment's decisions and removes the others:
 * another environment's, and those whose key has no decision of this environment. */
static void test_prune_removes_orphans(void **state)
{
    (void)state;
    char path[300];
    path_of("prune.sqlite", path, sizeof path);
    cf_db *there = open_at(path, "another-device");
    store(there, 1, 1);
    put(there, 1, "a", 10, 1);
    cf_db_close(there);
    cf_db *db = open_at(path, NULL);
    store(db, 1, 2);
    store(db, 2, 3);
    put(db, 1, "a", 20, 2);
    put(db, 1, "b", 30, 3);
    put(db, 2, "a", 40, 4);
    put(db, 3, "a", 50, 5); /* no decision */
    cf_db_stats s;
    assert_int_equal(cf_db_get_stats(db, &s), CONVFIND_OK);
    assert_int_equal(s.artifacts, 5);
    assert_int_equal(s.artifact_bytes, 10 + 20 + 30 + 40 + 50);
    size_t removed = 0;
    assert_int_equal(cf_db_prune(db, &removed), CONVFIND_OK);
    /* another-device's decision and compiled form, and key 3's compiled form */
    assert_int_equal(removed, 3);
    expect(db, 1, "a", 20, 2);
    expect(db, 1, "b", 30, 3);
    expect(db, 2, "a", 40, 4);
    expect(db, 3, "a", 0, 0);
    assert_int_equal(cf_db_get_stats(db, &s), CONVFIND_OK);
    assert_int_equal(s.artifacts, 3);
    assert_int_equal(s.artifact_bytes, 20 + 30 + 40);
    cf_db_close(db);
    there = open_at(path, "another-device");
    expect(there, 1, "a", 0, 0);
    cf_db_close(there);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_and_replace),
        cmocka_unit_test(test_per_key_algo_and_environment),
        cmocka_unit_test(test_memory_and_limits),
        cmocka_unit_test(test_invalid_arguments),
        cmocka_unit_test(test_prune_removes_orphans),
    };
    return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
