/*
 * test_db_quarantine.c - bad database files: random bytes, text, a truncated file,
 * another application's SQLite file.  Each is renamed aside with its bytes intact and
 * one warning, a fresh database takes its place, and lookups and stores keep working,
 * also when the damage is only found by a later query.  A newer schema is never moved:
 * it is used read-only.  A file locked by someone else past the busy timeout is an
 * error when it was named, memory at the default location.
 * (Missing permissions need a non-root user: tests/db/db_hostile_fs.c.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "../db/db_fixture.h"


static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* Size of the single "<base>.quarantine-*" file in fx_dir (-1: none, -2: several). */
static long quarantined_size(const char *base)
{
    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s.quarantine-", base);
    DIR *d = opendir(fx_dir);
    assert_non_null(d);
    long size = -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || strstr(e->d_name, "-wal") ||
            strstr(e->d_name, "-shm"))
            continue;
        char p[600];
        snprintf(p, sizeof p, "%s/%s", fx_dir, e->d_name);
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        size = size == -1 ? (long)st.st_size : -2;
    }
    closedir(d);
    return size;
}

/* Opens `base`, expects one quarantine warning and a working fresh database. */
static void expect_quarantine(const char *base, long original_size)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%s", fx_dir, base);
    cf_db_config c = fx_config(path);
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    assert_true(cf_db_is_persistent(db));
    assert_int_equal(cf_db_warning_count(db), 1);
    char w[512];
    cf_db_last_warning(db, w, sizeof w);
    assert_non_null(strstr(w, "moved it to"));
    assert_int_equal(quarantined_size(base), original_size);

    char key[128];
    fx_key(1, key, sizeof key);
    const char *k = key;
    cf_decision d = fx_decision(5, 2), back;
    cf_db_found found;
    assert_int_equal(cf_db_lookup(db, key, &back, &found), CONVFIND_OK);
    assert_int_equal(found, CF_DB_MISS);
    assert_int_equal(cf_db_store(db, &k, &d, 1), CONVFIND_OK);
    cf_db_close(db);
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    assert_int_equal(cf_db_lookup(db, key, &back, &found), CONVFIND_OK);
    assert_int_equal(found, CF_DB_HIT);
    assert_true(fx_decision_equal(&d, &back));
    assert_int_equal(cf_db_warning_count(db), 0);
    cf_decision_clear(&d);
    cf_decision_clear(&back);
    cf_db_close(db);
}

static void random_bytes(void **state)
{
    (void)state;
    unsigned char junk[8192];
    srand(42);
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (unsigned char)rand();
    char path[300];
    snprintf(path, sizeof path, "%s/random.sqlite", fx_dir);
    write_bytes(path, junk, sizeof junk);
    expect_quarantine("random.sqlite", (long)sizeof junk);
}

static void text_file(void **state)
{
    (void)state;
    const char text[] = "this is a configuration file, not a database\n";
    char path[300];
    snprintf(path, sizeof path, "%s/text.sqlite", fx_dir);
    write_bytes(path, text, sizeof text - 1);
    expect_quarantine("text.sqlite", (long)sizeof text - 1);
}

/* Builds a real database of `n` records at `path` and returns its size. */
static long make_db(const char *path, int n)
{
    cf_db_config c = fx_config(path);
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    for (int i = 0; i < n; i++) {
        char key[128];
        fx_key(i, key, sizeof key);
        const char *k = key;
        cf_decision d = fx_decision(i, 8);
        assert_int_equal(cf_db_store(db, &k, &d, 1), CONVFIND_OK);
        cf_decision_clear(&d);
    }
    cf_db_close(db);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (long)st.st_size;
}

static void truncated_file(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/trunc.sqlite", fx_dir);
    long size = make_db(path, 200);
    assert_true(size > 8 * 4096);
    assert_int_equal(truncate(path, size / 2), 0);
    expect_quarantine("trunc.sqlite", size / 2);
}

static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *c = NULL;
    assert_int_equal(sqlite3_open(path, &c), SQLITE_OK);
    assert_int_equal(sqlite3_exec(c, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(c);
}

/* A newer build's file: read-only, one warning, its decisions found, a new decision
 * counted as unstored, and the file left exactly as it was. */
static void newer_schema(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/newer.sqlite", fx_dir);
    make_db(path, 3);
    raw_exec(path, "PRAGMA journal_mode=DELETE; PRAGMA user_version=99");
    struct stat before, after;
    assert_int_equal(stat(path, &before), 0);
    cf_db_config c = fx_config(path);
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    assert_true(cf_db_is_persistent(db));
    assert_false(cf_db_is_writable(db));
    assert_int_equal(cf_db_warning_count(db), 1);
    char w[512];
    cf_db_last_warning(db, w, sizeof w);
    assert_non_null(strstr(w, "read-only"));
    char key[128];
    fx_key(1, key, sizeof key);
    const char *k = key;
    cf_decision d = fx_decision(5, 2), back;
    cf_db_found found;
    assert_int_equal(cf_db_lookup(db, key, &back, &found), CONVFIND_OK);
    assert_int_equal(found, CF_DB_HIT);
    cf_decision_clear(&back);
    assert_int_equal(cf_db_store(db, &k, &d, 1), CONVFIND_OK);
    assert_int_equal(cf_db_flush(db), 1);
    cf_decision_clear(&d);
    cf_db_close(db);
    assert_int_equal(quarantined_size("newer.sqlite"), -1);
    assert_int_equal(stat(path, &after), 0);
    assert_true(after.st_ino == before.st_ino && after.st_size == before.st_size &&
                after.st_mtime == before.st_mtime);
}

static void other_application(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/app.sqlite", fx_dir);
    raw_exec(path, "CREATE TABLE bookmarks(url TEXT); INSERT INTO bookmarks VALUES('x')");
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    expect_quarantine("app.sqlite", (long)st.st_size);
}

/* Someone holds the file exclusively past the busy timeout: a named file is an error
 * that says so; at the default location, memory with one warning and correct results.
 * The file is not touched either way. */
static void locked_file(void **state)
{
    (void)state;
    char dir[300], path[400];
    snprintf(dir, sizeof dir, "%s/locked-home", fx_dir);
    snprintf(path, sizeof path, "%s/convfind/" CF_DB_FILE_NAME, dir);
    make_db(path, 2);
    sqlite3 *holder = NULL;
    assert_int_equal(sqlite3_open(path, &holder), SQLITE_OK);
    assert_int_equal(sqlite3_exec(holder, "PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE; "
                                  "DELETE FROM leases", NULL, NULL, NULL), SQLITE_OK);
    cf_db_config c = fx_config(path);
    c.busy_timeout_ms = 50;
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_ERR_IO);
    assert_non_null(strstr(convfind_last_error(), "locked"));

    c.locations.xdg_cache_home = dir;
    c.path = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    assert_false(cf_db_is_persistent(db));
    assert_int_equal(cf_db_warning_count(db), 1);
    assert_int_equal(quarantined_size("locked.sqlite"), -1);
    char key[128];
    fx_key(1, key, sizeof key);
    const char *k = key;
    cf_decision d = fx_decision(9, 2), back;
    cf_db_found found;
    assert_int_equal(cf_db_store(db, &k, &d, 1), CONVFIND_OK);
    assert_int_equal(cf_db_lookup(db, key, &back, &found), CONVFIND_OK);
    assert_int_equal(found, CF_DB_HIT);
    cf_decision_clear(&d);
    cf_decision_clear(&back);
    cf_db_close(db);
    sqlite3_exec(holder, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(holder);
}

/* Damage that appears while the handle is open (another writer makes SQLite re-read
 * the file): the failing call quarantines the file, starts a fresh one and answers
 * correctly (a miss); later calls work. */
static void damage_found_during_a_query(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/late.sqlite", fx_dir);
    long size = make_db(path, 200);
    cf_db_config c = fx_config(path);
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    assert_int_equal(cf_db_warning_count(db), 0);

    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, size / 2, SEEK_SET), 0);
    for (long i = size / 2; i < size; i++)
        fputc((int)(i * 7919 % 251), f);
    fclose(f);
    raw_exec(path, "INSERT INTO leases(key, pid, host, expires_ms) VALUES('other', 1, "
                   "'elsewhere', 0)");

    int misses = 0;
    for (int i = 0; i < 200; i++) {
        char key[128];
        fx_key(i, key, sizeof key);
        cf_decision back;
        cf_db_found found;
        assert_int_equal(cf_db_lookup(db, key, &back, &found), CONVFIND_OK);
        if (found == CF_DB_HIT) {
            cf_decision want = fx_decision(i, 8);
            assert_true(fx_decision_equal(&want, &back));
            cf_decision_clear(&want);
        }
        misses += found == CF_DB_MISS;
        cf_decision_clear(&back);
    }
    assert_true(misses > 0);
    assert_int_equal(cf_db_warning_count(db), 1);
    char w[512];
    cf_db_last_warning(db, w, sizeof w);
    assert_non_null(strstr(w, "moved it to"));
    assert_true(cf_db_is_persistent(db));
    char key[128];
    fx_key(5, key, sizeof key);
    const char *k = key;
    cf_decision d = fx_decision(77, 2), back;
    cf_db_found found;
    assert_int_equal(cf_db_store(db, &k, &d, 1), CONVFIND_OK);
    assert_int_equal(cf_db_lookup(db, key, &back, &found), CONVFIND_OK);
    assert_int_equal(found, CF_DB_HIT);
    assert_true(fx_decision_equal(&d, &back));
    cf_decision_clear(&d);
    cf_decision_clear(&back);
    cf_db_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_bytes),
        cmocka_unit_test(text_file),
        cmocka_unit_test(truncated_file),
        cmocka_unit_test(newer_schema),
        cmocka_unit_test(other_application),
        cmocka_unit_test(locked_file),
        cmocka_unit_test(damage_found_during_a_query),
    };
    return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
