/*
 * test_db_migrate.c - find-db schema 2: decisions remember how they were measured.  A
 * file of schema 1 is migrated on open and keeps its records (their budget unknown);
 * read-only users of a schema-1 file (inspection, a system tier) read it without
 * migrating; stores write the budget, spread and margin columns and lookups read the
 * budget back; export writes "measured", import reads it (and lines without it).
 * Schema 3: a file of schema 2 gains the artifacts table (compiled forms) when opened for
 * writing; read-only users of one read it without, finding no compiled form.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sqlite3.h>
#include <sys/stat.h>

#include "../db/db_fixture.h"
#include "db/db_internal.h"

/* Writes a schema-1 file, as the builds before schema 2 did, holding fx_decision(seed, 3)
 * for fx_key(1) in the environment fx_config gives. */
static void write_v1(const char *path, int seed)
{
    sqlite3 *conn = NULL;
    assert_int_equal(sqlite3_open(path, &conn), SQLITE_OK);
    assert_int_equal(sqlite3_exec(conn,
                                  "CREATE TABLE decisions(key TEXT NOT NULL, library_version TEXT "
                                  "NOT NULL, backend_versions TEXT NOT NULL, device TEXT NOT NULL, "
                                  "algo TEXT NOT NULL, decision TEXT NOT NULL, bad_candidates TEXT "
                                  "NOT NULL, host TEXT NOT NULL, created_at INTEGER NOT NULL, "
                                  "PRIMARY KEY (key, library_version, backend_versions, device));"
                                  "CREATE TABLE leases(key TEXT PRIMARY KEY, pid INTEGER NOT NULL, "
                                  "host TEXT NOT NULL, expires_ms INTEGER NOT NULL);"
                                  "PRAGMA user_version=1; PRAGMA application_id=1128678466;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    cf_db_config c = fx_config(path);
    cf_decision d = fx_decision(seed, 3);
    char *json = cf_db_decision_to_json(&d);
    char key[128];
    fx_key(1, key, sizeof key);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(conn, "INSERT INTO decisions VALUES(?1, ?2, ?3, ?4, ?5, "
                                        "?6, '', 'old-host', 1700000000)", -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, c.env.library, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, c.env.backends, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, c.env.device, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, d.algo, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 6, json, -1, SQLITE_TRANSIENT);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    free(json);
    cf_decision_clear(&d);
    sqlite3_close(conn);
}

/* write_v1, then migrated to schema 2 by hand as the builds of schema 2 did. */
static void write_v2(const char *path, int seed)
{
    write_v1(path, seed);
    sqlite3 *conn = NULL;
    assert_int_equal(sqlite3_open(path, &conn), SQLITE_OK);
    assert_int_equal(sqlite3_exec(conn,
                                  "ALTER TABLE decisions ADD COLUMN budget_ms REAL;"
                                  "ALTER TABLE decisions ADD COLUMN spread REAL;"
                                  "ALTER TABLE decisions ADD COLUMN margin REAL;"
                                  "ALTER TABLE leases ADD COLUMN owner INTEGER NOT NULL DEFAULT 0;"
                                  "PRAGMA user_version=2;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(conn);
}

static int64_t query_int(const char *path, const char *sql)
{
    sqlite3 *conn = NULL;
    assert_int_equal(sqlite3_open_v2(path, &conn, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(conn, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(conn);
    return v;
}

static cf_decision lookup(cf_db *db, int i, cf_db_found want)
{
    char key[128];
    fx_key(i, key, sizeof key);
    cf_decision d;
    cf_db_found found;
    assert_int_equal(cf_db_lookup(db, key, &d, &found), CONVFIND_OK);
    assert_int_equal(found, want);
    return d;
}

/* fx_decision(seed, 3) measured with `budget_ms`. */
static void store_measured(cf_db *db, int i, int seed, double budget_ms)
{
    char key[128];
    fx_key(i, key, sizeof key);
    const char *k = key;
    cf_decision d = fx_decision(seed, 3);
    d.budget_ms = budget_ms;
    assert_int_equal(cf_db_store(db, &k, &d, 1), CONVFIND_OK);
    cf_decision_clear(&d);
}

/* Writes fx_dir/`name` (its path into `path`) with `write` and `seed`, and opens it for
 * use, as a context does: it is migrated without a warning. */
static cf_db *open_migrated(void (*write)(const char *, int), const char *name, int seed,
                            char path[300])
{
    snprintf(path, 300, "%s/%s", fx_dir, name);
    write(path, seed);
    cf_db_config c = fx_config(path);
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    assert_int_equal(cf_db_warning_count(db), 0);
    assert_true(cf_db_is_writable(db));
    return db;
}

static void test_schema1_is_migrated_keeping_records(void **state)
{
    (void)state;
    char path[300];
    cf_db *db = open_migrated(write_v1, "v1.sqlite", 31, path);
    cf_decision d = lookup(db, 1, CF_DB_HIT);
    assert_string_equal(d.algo, "algo31_0");
    assert_true(d.budget_ms == 0); /* unknown: stored before schema 2 */
    cf_decision_clear(&d);
    store_measured(db, 2, 32, 250);
    d = lookup(db, 2, CF_DB_HIT);
    assert_true(d.budget_ms == 250);
    cf_decision_clear(&d);
    cf_db_close(db);
    assert_int_equal(query_int(path, "PRAGMA user_version"), CF_DB_SCHEMA_VERSION);
    assert_int_equal(query_int(path, "SELECT count(*) FROM decisions"), 2);
    assert_int_equal(query_int(path, "SELECT count(*) FROM decisions WHERE budget_ms IS NULL "
                                     "AND spread IS NULL AND margin IS NULL"), 1);
    /* What the columns hold for a reader of the file: budget, the choice's spread, and
     * the runner-up's margin (fx_decision(32, 3): 1.032 and 1.532 ms, spread 0.01). */
    assert_int_equal(query_int(path, "SELECT count(*) FROM decisions WHERE budget_ms = 250 AND "
                                     "abs(spread - 0.01) < 1e-12 AND "
                                     "abs(margin - (1.532 / 1.032 - 1)) < 1e-12"), 1);
    assert_int_equal(query_int(path, "SELECT count(*) FROM pragma_table_info('leases') WHERE "
                                     "name = 'owner'"), 1);
}

static void test_schema1_read_only(void **state)
{
    (void)state;
    char path[300], user[300];
    snprintf(path, sizeof path, "%s/v1-ro.sqlite", fx_dir);
    snprintf(user, sizeof user, "%s/user.sqlite", fx_dir);
    write_v1(path, 41);
    /* Inspection reads it as it is and changes nothing. */
    cf_db_config c = fx_config(path);
    c.mode = CF_DB_INSPECT;
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    cf_decision d = lookup(db, 1, CF_DB_HIT);
    assert_string_equal(d.algo, "algo41_0");
    assert_true(d.budget_ms == 0);
    cf_decision_clear(&d);
    cf_db_close(db);
    assert_int_equal(query_int(path, "PRAGMA user_version"), 1);
    /* As a system tier, under a user tier of schema 2. */
    c = fx_config(user);
    c.system_path = path;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    assert_int_equal(cf_db_warning_count(db), 0);
    d = lookup(db, 1, CF_DB_HIT);
    assert_string_equal(d.algo, "algo41_0");
    cf_decision_clear(&d);
    cf_db_close(db);
    assert_int_equal(query_int(path, "PRAGMA user_version"), 1);
}

/* Puts a compiled form of "algo" for fx_key(1) and answers how many bytes get returns. */
static size_t artifact_round_trip(cf_db *db)
{
    char key[128];
    fx_key(1, key, sizeof key);
    const unsigned char plan[4] = {1, 0, 2, 0};
    assert_int_equal(cf_db_artifact_put(db, key, "algo", plan, sizeof plan), CONVFIND_OK);
    void *blob = NULL;
    size_t size = 0;
    assert_int_equal(cf_db_artifact_get(db, key, "algo", &blob, &size), CONVFIND_OK);
    if (size)
        assert_memory_equal(blob, plan, sizeof plan);
    free(blob);
    return size;
}

static void test_schema2_gains_artifacts(void **state)
{
    (void)state;
    char path[300];
    cf_db *db = open_migrated(write_v2, "v2.sqlite", 61, path);
    cf_decision d = lookup(db, 1, CF_DB_HIT);
    assert_string_equal(d.algo, "algo61_0");
    cf_decision_clear(&d);
    assert_int_equal(artifact_round_trip(db), 4);
    cf_db_close(db);
    assert_int_equal(query_int(path, "PRAGMA user_version"), CF_DB_SCHEMA_VERSION);
    assert_int_equal(query_int(path, "SELECT count(*) FROM artifacts"), 1);
}

/* A schema-2 file that is only read keeps working: no compiled form, none stored, no
 * warning about the missing table, the file unchanged. */
static void test_schema2_read_only_has_no_artifacts(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/v2-ro.sqlite", fx_dir);
    write_v2(path, 71);
    cf_db_config c = fx_config(path);
    c.mode = CF_DB_INSPECT;
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    cf_decision d = lookup(db, 1, CF_DB_HIT);
    assert_string_equal(d.algo, "algo71_0");
    cf_decision_clear(&d);
    assert_int_equal(artifact_round_trip(db), 0);
    assert_int_equal(cf_db_warning_count(db), 0);
    cf_db_close(db);
    /* A file this user cannot write (root can write any file: not tested as root). */
    if (geteuid() != 0) {
        assert_int_equal(chmod(path, 0444), 0);
        c = fx_config(path);
        assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
        assert_false(cf_db_is_writable(db));
        assert_int_equal(artifact_round_trip(db), 0);
        assert_int_equal(cf_db_warning_count(db), 1); /* read-only, said when opened */
        cf_db_close(db);
    }
    assert_int_equal(query_int(path, "PRAGMA user_version"), 2);
    assert_int_equal(query_int(path, "SELECT count(*) FROM sqlite_master WHERE name = "
                                     "'artifacts'"), 0);
}

/* A newer build's file is read as this build's schema; one without the table (say a later
 * schema dropped it) answers none, with one warning, and is never written. */
static void test_newer_schema_without_artifacts(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/v99.sqlite", fx_dir);
    write_v2(path, 81);
    sqlite3 *conn = NULL;
    assert_int_equal(sqlite3_open(path, &conn), SQLITE_OK);
    assert_int_equal(sqlite3_exec(conn, "PRAGMA user_version=99", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(conn);
    cf_db_config c = fx_config(path);
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    assert_false(cf_db_is_writable(db));
    assert_int_equal(cf_db_warning_count(db), 1); /* newer: read-only */
    assert_int_equal(artifact_round_trip(db), 0);
    assert_int_equal(cf_db_warning_count(db), 2); /* the read that failed, once */
    assert_int_equal(artifact_round_trip(db), 0);
    assert_int_equal(cf_db_warning_count(db), 2);
    cf_db_close(db);
    assert_int_equal(query_int(path, "PRAGMA user_version"), 99);
}

static void test_export_import_measured(void **state)
{
    (void)state;
    char a[300], b[300], jsonl[300];
    snprintf(a, sizeof a, "%s/exp-a.sqlite", fx_dir);
    snprintf(b, sizeof b, "%s/exp-b.sqlite", fx_dir);
    snprintf(jsonl, sizeof jsonl, "%s/exp.jsonl", fx_dir);
    write_v1(a, 51); /* key 1: budget unknown */
    cf_db_config c = fx_config(a);
    cf_db *src = NULL;
    assert_int_equal(cf_db_open(&c, &src), CONVFIND_OK);
    store_measured(src, 2, 52, 125.5);
    FILE *f = fopen(jsonl, "w");
    size_t n = 0;
    assert_int_equal(cf_db_export(src, fx_file_write, f, &n), CONVFIND_OK);
    fclose(f);
    cf_db_close(src);
    assert_int_equal(n, 2);
    char text[8192];
    f = fopen(jsonl, "r");
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = '\0';
    assert_non_null(strstr(text, "\"measured\":{\"budget_ms\":null,\"spread\":0.01"));
    assert_non_null(strstr(text, "\"measured\":{\"budget_ms\":125.5,\"spread\":0.01"));
    /* A line written before "measured" existed still imports, its budget unknown. */
    char *nl = strchr(text, '\n');
    assert_non_null(nl);
    char *m = strstr(text, ",\"measured\":");
    assert_true(m && m < nl);
    char *end = strstr(m, "},\"provenance\"");
    memmove(m, end + 1, strlen(end + 1) + 1);
    f = fopen(jsonl, "w");
    fputs(text, f);
    fclose(f);
    c = fx_config(b);
    cf_db *dst = NULL;
    assert_int_equal(cf_db_open(&c, &dst), CONVFIND_OK);
    f = fopen(jsonl, "r");
    assert_int_equal(cf_db_import(dst, fx_file_read, f, "exp.jsonl", &n), CONVFIND_OK);
    fclose(f);
    assert_int_equal(n, 2);
    cf_decision d = lookup(dst, 1, CF_DB_HIT);
    assert_true(d.budget_ms == 0);
    cf_decision_clear(&d);
    d = lookup(dst, 2, CF_DB_HIT);
    assert_true(d.budget_ms == 125.5);
    cf_decision_clear(&d);
    /* A "measured" that is not what it says is refused, naming the field. */
    static const char *const bad[] = {"\"measured\":7", "\"measured\":{\"budget_ms\":-1}",
                                      "\"measured\":{\"budget_ms\":\"fast\"}",
                                      "\"measured\":{\"margin\":-2}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char line[4096];
        nl = strchr(text, '\n');
        snprintf(line, sizeof line, "%.*s,%s}\n", (int)(nl - text - 1), text, bad[i]);
        FILE *g = fmemopen(line, strlen(line), "r");
        assert_int_equal(cf_db_import(dst, fx_file_read, g, "bad.jsonl", &n), CONVFIND_ERR_IO);
        fclose(g);
        assert_non_null(strstr(convfind_last_error(), "measured"));
    }
    cf_db_close(dst);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schema1_is_migrated_keeping_records),
        cmocka_unit_test(test_schema1_read_only),
        cmocka_unit_test(test_export_import_measured),
        cmocka_unit_test(test_schema2_gains_artifacts),
        cmocka_unit_test(test_schema2_read_only_has_no_artifacts),
        cmocka_unit_test(test_newer_schema_without_artifacts),
    };
    return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
