/*
 * test_db.c - the find-db in one process: store and lookup across reopen, batches,
 * tiers, environment mismatch policies, the location order and unusable locations, a
 * busy database, read-only inspection, leases (including a dead holder, and two handles
 * of one process), export/import
 * with bounded lines, prune and verify, unusable system tiers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>

#include "../db/db_fixture.h"
#include "db/db_internal.h"


static void path_in_dir(const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", fx_dir, name);
}

static cf_db *open_at(const char *path)
{
    cf_db_config c = fx_config(path);
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    return db;
}

static void store_one(cf_db *db, int i, int seed)
{
    char key[128];
    fx_key(i, key, sizeof key);
    const char *k = key;
    cf_decision d = fx_decision(seed, 3);
    assert_int_equal(cf_db_store(db, &k, &d, 1), CONVFIND_OK);
    cf_decision_clear(&d);
}

static cf_db_found lookup_seed(cf_db *db, int i, int *seed)
{
    char key[128];
    fx_key(i, key, sizeof key);
    cf_decision d;
    cf_db_found found;
    assert_int_equal(cf_db_lookup(db, key, &d, &found), CONVFIND_OK);
    *seed = -1;
    if (found != CF_DB_MISS)
        assert_int_equal(sscanf(d.algo, "algo%d_", seed), 1);
    cf_decision_clear(&d);
    return found;
}

static void stored_decisions_survive_reopen(void **state)
{
    (void)state;
    char path[300];
    path_in_dir("a.sqlite", path, sizeof path);
    cf_db *db = open_at(path);
    assert_true(cf_db_is_persistent(db));
    assert_string_equal(cf_db_location(db), path);
    enum { N = 20 };
    char keys[N][128];
    const char *kp[N];
    cf_decision ds[N];
    for (int i = 0; i < N; i++) {
        fx_key(i, keys[i], sizeof keys[i]);
        kp[i] = keys[i];
        ds[i] = fx_decision(100 + i, 1 + i % 5);
    }
    assert_int_equal(cf_db_store(db, kp, ds, N), CONVFIND_OK);
    cf_db_close(db);

    db = open_at(path);
    for (int i = 0; i < N; i++) {
        cf_decision back;
        cf_db_found found;
        assert_int_equal(cf_db_lookup(db, keys[i], &back, &found), CONVFIND_OK);
        assert_int_equal(found, CF_DB_HIT);
        assert_true(fx_decision_equal(&back, &ds[i]));
        cf_decision_clear(&back);
        cf_decision_clear(&ds[i]);
    }
    int seed;
    assert_int_equal(lookup_seed(db, 999, &seed), CF_DB_MISS);
    /* A newer store replaces the older one for the same key and environment. */
    store_one(db, 3, 555);
    assert_int_equal(lookup_seed(db, 3, &seed), CF_DB_HIT);
    assert_int_equal(seed, 555);
    cf_db_stats st;
    assert_int_equal(cf_db_get_stats(db, &st), CONVFIND_OK);
    assert_int_equal(st.records, N);
    assert_int_equal(st.current, N);
    assert_int_equal(cf_db_warning_count(db), 0);
    assert_int_equal(cf_db_verify(db, NULL), CONVFIND_OK);
    cf_db_close(db);
}

static void bad_store_arguments_are_rejected(void **state)
{
    (void)state;
    cf_db *db = open_at(CF_DB_MEMORY);
    cf_decision d = fx_decision(1, 2);
    const char *bad = "line\nbreak";
    assert_int_equal(cf_db_store(db, &bad, &d, 1), CONVFIND_ERR_INVALID_ATTRIBUTE);
    assert_non_null(strstr(convfind_last_error(), "keys[0]"));
    assert_int_equal(cf_db_store(db, NULL, &d, 1), CONVFIND_ERR_NULL_POINTER);
    assert_int_equal(cf_db_store(db, &bad, &d, -1), CONVFIND_ERR_INVALID_ATTRIBUTE);
    cf_db_found f;
    assert_int_equal(cf_db_lookup(db, NULL, &d, &f), CONVFIND_ERR_NULL_POINTER);
    cf_decision_clear(&d);
    cf_db_config c = fx_config(NULL);
    c.env_policy = (convfind_db_env_policy)7;
    cf_db *x = (cf_db *)&c;
    assert_int_equal(cf_db_open(&c, &x), CONVFIND_ERR_INVALID_ENUM);
    assert_null(x);
    cf_db_close(db);
}

/* Records of another environment: RETUNE hands them out marked FOREIGN (with their
 * candidates), IGNORE hides them; neither uses them silently (one warning). */
static void other_environment_is_never_used_silently(void **state)
{
    (void)state;
    char path[300];
    path_in_dir("env.sqlite", path, sizeof path);
    cf_db *old = open_at(path);
    store_one(old, 1, 11);
    cf_db_close(old);

    cf_db_config c = fx_config(path);
    snprintf(c.env.library, sizeof c.env.library, "99.0.0");
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    int seed;
    assert_int_equal(lookup_seed(db, 1, &seed), CF_DB_FOREIGN);
    assert_int_equal(seed, 11);
    assert_int_equal(lookup_seed(db, 1, &seed), CF_DB_FOREIGN);
    assert_int_equal(cf_db_warning_count(db), 1);
    char w[512];
    cf_db_last_warning(db, w, sizeof w);
    assert_non_null(strstr(w, "another environment"));
    /* Re-timed and stored: now a hit in this environment, the old record untouched. */
    store_one(db, 1, 12);
    assert_int_equal(lookup_seed(db, 1, &seed), CF_DB_HIT);
    assert_int_equal(seed, 12);
    cf_db_stats st;
    assert_int_equal(cf_db_get_stats(db, &st), CONVFIND_OK);
    assert_int_equal(st.records, 2);
    assert_int_equal(st.foreign, 1);
    cf_db_close(db);

    c.env_policy = CONVFIND_DB_ENV_IGNORE;
    snprintf(c.env.device, sizeof c.env.device, "other-device");
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    assert_int_equal(lookup_seed(db, 1, &seed), CF_DB_MISS);
    assert_int_equal(cf_db_warning_count(db), 1);
    /* prune keeps only this environment's records. */
    size_t removed = 0;
    assert_int_equal(cf_db_prune(db, &removed), CONVFIND_OK);
    assert_int_equal(removed, 2);
    assert_int_equal(cf_db_get_stats(db, &st), CONVFIND_OK);
    assert_int_equal(st.records, 0);
    cf_db_close(db);
}

/* The system tier answers what the user tier lacks; the user tier wins; nothing is
 * ever written to the system file. */
static void system_tier_sits_under_user_tier(void **state)
{
    (void)state;
    char sys[300], user[300];
    path_in_dir("system.sqlite", sys, sizeof sys);
    path_in_dir("user.sqlite", user, sizeof user);
    cf_db *s = open_at(sys);
    store_one(s, 1, 21);
    store_one(s, 2, 22);
    cf_db_close(s);
    struct stat before;
    assert_int_equal(stat(sys, &before), 0);
    assert_int_equal(chmod(sys, 0444), 0);

    cf_db_config c = fx_config(user);
    c.system_path = sys;
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    store_one(db, 2, 32);
    int seed;
    assert_int_equal(lookup_seed(db, 1, &seed), CF_DB_HIT);
    assert_int_equal(seed, 21);
    assert_int_equal(lookup_seed(db, 2, &seed), CF_DB_HIT);
    assert_int_equal(seed, 32);
    cf_db_stats st;
    assert_int_equal(cf_db_get_stats(db, &st), CONVFIND_OK);
    assert_int_equal(st.records, 1);
    assert_int_equal(st.system_records, 2);
    assert_int_equal(cf_db_warning_count(db), 0);
    cf_db_close(db);
    struct stat after;
    assert_int_equal(stat(sys, &after), 0);
    assert_true(after.st_mtime == before.st_mtime && after.st_size == before.st_size);

    /* $CONVFIND_SYSTEM_DB names it when the option does not; a missing one warns once. */
    c.locations.system_db = sys;
    c.system_path = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    assert_int_equal(lookup_seed(db, 1, &seed), CF_DB_HIT);
    assert_string_equal(cf_db_system_location(db), sys);
    cf_db_close(db);
    char missing[300];
    path_in_dir("nope.sqlite", missing, sizeof missing);
    c.locations.system_db = missing;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    assert_int_equal(cf_db_warning_count(db), 1);
    assert_int_equal(lookup_seed(db, 1, &seed), CF_DB_MISS);
    assert_null(cf_db_system_location(db));
    cf_db_close(db);
}

static void expect_location(const cf_db_locations *env, const char *want, int warnings)
{
    cf_db_config c = fx_config(NULL);
    c.locations = *env;
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    assert_string_equal(cf_db_location(db), want);
    assert_int_equal(cf_db_warning_count(db), warnings);
    cf_db_close(db);
}

/* Explicit path, then $CONVFIND_DB_PATH, then $XDG_CACHE_HOME/convfind, then
 * ~/.cache/convfind, then memory with one warning (the variables as the caller read
 * them, cf_db_config.locations). */
static void location_order(void **state)
{
    (void)state;
    char env_path[300], xdg[300], home[300], want[400];
    path_in_dir("from-env.sqlite", env_path, sizeof env_path);
    path_in_dir("xdg", xdg, sizeof xdg);
    path_in_dir("home", home, sizeof home);
    cf_db_locations env = {.db_path = env_path, .xdg_cache_home = xdg, .home = home};

    char explicit_path[300];
    path_in_dir("explicit/deeper/x.sqlite", explicit_path, sizeof explicit_path);
    cf_db_config c = fx_config(explicit_path);
    c.locations = env;
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    assert_string_equal(cf_db_location(db), explicit_path);
    cf_db_close(db);

    expect_location(&env, env_path, 0);
    env.db_path = NULL;
    snprintf(want, sizeof want, "%s/convfind/" CF_DB_FILE_NAME, xdg);
    expect_location(&env, want, 0);
    env.xdg_cache_home = "relative/is/ignored";
    snprintf(want, sizeof want, "%s/.cache/convfind/" CF_DB_FILE_NAME, home);
    expect_location(&env, want, 0);
    env.xdg_cache_home = "";
    expect_location(&env, want, 0);
    env.home = NULL;
    expect_location(&env, CF_DB_MEMORY, 1);
    env.db_path = CF_DB_MEMORY;
    expect_location(&env, CF_DB_MEMORY, 0);
}

/* A location that cannot hold a database (a directory, a path below a regular file, a
 * FIFO, an empty path).  Named by the caller it is an error naming it; reached through
 * the default order it is memory with one warning, where stores and lookups still work
 * and every store is counted as unstored. */
static void unusable_location(void **state)
{
    (void)state;
    char file[300], below[400], fifo[300];
    path_in_dir("plain-file", file, sizeof file);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("not a directory\n", f);
    fclose(f);
    snprintf(below, sizeof below, "%s/sub/db.sqlite", file);
    path_in_dir("fifo", fifo, sizeof fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const char *paths[] = {fx_dir, below, fifo, ""};
    for (int i = 0; i < 4; i++) {
        cf_db_config c = fx_config(paths[i]);
        cf_db *db = NULL;
        assert_int_equal(cf_db_open(&c, &db), CONVFIND_ERR_IO);
        assert_null(db);
        assert_non_null(strstr(convfind_last_error(), i < 3 ? paths[i] : "empty"));
    }

    cf_db_config c = fx_config(NULL);
    c.locations.home = file;
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    assert_false(cf_db_is_persistent(db));
    assert_int_equal(cf_db_warning_count(db), 1);
    store_one(db, 5, 50);
    int seed;
    assert_int_equal(lookup_seed(db, 5, &seed), CF_DB_HIT);
    assert_int_equal(seed, 50);
    assert_int_equal(cf_db_flush(db), 1);
    assert_int_equal(cf_db_warning_count(db), 1); /* opening said it already */
    cf_db_close(db);
}

/* Rows of the decisions table, read by a connection of its own. */
static int count_records(const char *path)
{
    sqlite3 *c = NULL;
    sqlite3_stmt *st = NULL;
    int n = -1;
    if (sqlite3_open_v2(path, &c, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(c, "SELECT count(*) FROM decisions", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(c);
    return n;
}

/* Another process holds the write lock past the busy timeout: decisions wait, are
 * written with the next store once the lock is free, and only a flush while it is
 * still held counts them as unstored.  The handle never turns to memory. */
static void busy_database_keeps_decisions_pending(void **state)
{
    (void)state;
    char path[300];
    path_in_dir("busy.sqlite", path, sizeof path);
    cf_db_config c = fx_config(path);
    c.busy_timeout_ms = 50;
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    store_one(db, 1, 11);
    sqlite3 *holder = NULL;
    assert_int_equal(sqlite3_open(path, &holder), SQLITE_OK);
    assert_int_equal(sqlite3_exec(holder, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    store_one(db, 2, 12);
    bool mine = false;
    char key[128];
    fx_key(9, key, sizeof key);
    assert_int_equal(cf_db_lease_acquire(db, key, &mine), CONVFIND_OK);
    assert_true(mine); /* no lease table to write: measure rather than wait */
    cf_db_stats s;
    assert_int_equal(cf_db_get_stats(db, &s), CONVFIND_OK);
    assert_int_equal(s.pending, 1);
    assert_int_equal(s.unstored, 0);
    assert_int_equal(sqlite3_exec(holder, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    struct timespec pause = {0, 80 * 1000000L};
    nanosleep(&pause, NULL);
    store_one(db, 3, 13);
    assert_int_equal(count_records(path), 3);
    assert_true(cf_db_is_persistent(db));

    assert_int_equal(sqlite3_exec(holder, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    store_one(db, 4, 14);
    assert_int_equal(cf_db_flush(db), 1);
    assert_int_equal(sqlite3_exec(holder, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(holder);
    assert_int_equal(cf_db_get_stats(db, &s), CONVFIND_OK);
    assert_int_equal(s.pending, 0);
    assert_int_equal(s.unstored, 1);
    assert_int_equal(count_records(path), 3);
    cf_db_close(db);
}

/* Files in fx_dir whose names start with `prefix`. */
static int files_named(const char *prefix)
{
    DIR *d = opendir(fx_dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

static cf_db *open_inspect(const char *path)
{
    cf_db_config c = fx_config(path);
    c.mode = CF_DB_INSPECT;
    cf_db *db = NULL;
    assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
    return db;
}

/* Inspection changes nothing: no directory or file for a missing database, no -wal or
 * -shm beside an idle one, and it still sees what a writer stores while it is open. */
static void inspection_changes_nothing(void **state)
{
    (void)state;
    char missing[300], dir[300];
    path_in_dir("not-there/x.sqlite", missing, sizeof missing);
    path_in_dir("not-there", dir, sizeof dir);
    cf_db *db = open_inspect(missing);
    assert_string_equal(cf_db_location(db), missing);
    assert_false(cf_db_exists(db));
    cf_db_stats s;
    assert_int_equal(cf_db_get_stats(db, &s), CONVFIND_OK);
    assert_int_equal(s.records, 0);
    assert_int_equal(cf_db_verify(db, NULL), CONVFIND_ERR_IO);
    assert_non_null(strstr(convfind_last_error(), "does not exist"));
    cf_db_close(db);
    struct stat st;
    assert_int_not_equal(stat(dir, &st), 0);

    char path[300];
    path_in_dir("idle.sqlite", path, sizeof path);
    cf_db *writer = open_at(path);
    store_one(writer, 1, 21);
    cf_db_close(writer);
    assert_int_equal(files_named("idle.sqlite"), 1);
    db = open_inspect(path);
    int seed;
    assert_int_equal(lookup_seed(db, 1, &seed), CF_DB_HIT);
    assert_int_equal(cf_db_verify(db, NULL), CONVFIND_OK);
    assert_int_equal(files_named("idle.sqlite"), 1);
    /* A writer opens the file and stores: the inspector's snapshot gives way. */
    writer = open_at(path);
    store_one(writer, 2, 22);
    assert_int_equal(lookup_seed(db, 2, &seed), CF_DB_HIT);
    assert_int_equal(seed, 22);
    cf_db_close(db);
    cf_db_close(writer); /* the last connection: the writer removes its -wal and -shm */
    assert_int_equal(cf_db_warning_count(db = open_inspect(path)), 0);
    cf_db_close(db);
    assert_int_equal(files_named("idle.sqlite"), 1);
}

/* An import reads at most 1 MiB of a line: a huge or endless one fails at once, and
 * nothing is stored. */
static void import_reads_bounded_lines(void **state)
{
    (void)state;
    char path[300];
    path_in_dir("bounded.sqlite", path, sizeof path);
    cf_db *db = open_at(path);
    FILE *f = fopen("/dev/zero", "r");
    assert_non_null(f);
    size_t n = 7;
    assert_int_equal(cf_db_import(db, fx_file_read, f, "zeros", &n), CONVFIND_ERR_IO);
    assert_non_null(strstr(convfind_last_error(), "zeros:1: line longer than"));
    fclose(f);
    assert_int_equal(n, 0);
    cf_db_stats s;
    assert_int_equal(cf_db_get_stats(db, &s), CONVFIND_OK);
    assert_int_equal(s.records, 0);
    cf_db_close(db);
}

/* A system tier that is a FIFO is skipped at once (opening it would block); a damaged
 * one is skipped with one warning on one line. */
static void unusable_system_tier(void **state)
{
    (void)state;
    char fifo[300], sys[300];
    path_in_dir("sys.fifo", fifo, sizeof fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    path_in_dir("sys-damaged.sqlite", sys, sizeof sys);
    cf_db *w = open_at(sys);
    for (int i = 0; i < 200; i++)
        store_one(w, i, i);
    cf_db_close(w);
    struct stat st;
    assert_int_equal(stat(sys, &st), 0);
    FILE *f = fopen(sys, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, st.st_size - 6 * 4096 + 100, SEEK_SET), 0);
    for (int i = 0; i < 3000; i++)
        fputc(i * 7919 % 251, f);
    fclose(f);
    const char *paths[] = {fifo, sys};
    for (int i = 0; i < 2; i++) {
        cf_db_config c = fx_config(CF_DB_MEMORY);
        c.system_path = paths[i];
        cf_db *db = NULL;
        assert_int_equal(cf_db_open(&c, &db), CONVFIND_OK);
        assert_int_equal(cf_db_warning_count(db), 1);
        char warning[CF_DB_WARNING_MAX];
        cf_db_last_warning(db, warning, sizeof warning);
        assert_non_null(strstr(warning, paths[i]));
        assert_null(strchr(warning, '\n'));
        cf_db_close(db);
    }
}

static void leases_exclude_and_expire(void **state)
{
    (void)state;
    char path[300], key[128];
    path_in_dir("lease.sqlite", path, sizeof path);
    fx_key(1, key, sizeof key);
    cf_db *db = open_at(path);
    bool got = false;
    assert_int_equal(cf_db_lease_acquire(db, key, &got), CONVFIND_OK);
    assert_true(got);
    /* A process may renew its own lease. */
    assert_int_equal(cf_db_lease_acquire(db, key, &got), CONVFIND_OK);
    assert_true(got);

    /* A live child sees the parent's lease as held and gets the heuristic verdict after
     * its bounded wait; a child that dies holding a lease blocks nobody. */
    pid_t pid = fork();
    if (pid == 0) {
        cf_db *c = open_at(path);
        cf_decision d;
        cf_db_action a = cf_db_begin(c, key, &(cf_db_request){.wait_ms = 50}, &d);
        bool ok = a == CF_DB_ACTION_HEURISTIC && d.candidates == NULL;
        char other[128];
        fx_key(2, other, sizeof other);
        bool mine = false;
        cf_db_lease_acquire(c, other, &mine);
        /* Exit without closing: the lease on `other` stays behind, owned by a dead pid. */
        _exit(ok && mine ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char other[128];
    fx_key(2, other, sizeof other);
    assert_int_equal(cf_db_lease_acquire(db, other, &got), CONVFIND_OK);
    assert_true(got);

    /* Expiry: a lease of another host counts until its time runs out. */
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db->user, "INSERT OR REPLACE INTO leases(key, pid, host, "
                                        "expires_ms) VALUES(?1, 1, 'elsewhere', ?2)", -1, &st,
                                        NULL), SQLITE_OK);
    fx_key(3, key, sizeof key);
    sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, cf_db_now_ms() + 60000);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_reset(st);
    fx_key(4, key, sizeof key);
    sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, cf_db_now_ms() - 1);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    fx_key(3, key, sizeof key);
    assert_int_equal(cf_db_lease_acquire(db, key, &got), CONVFIND_OK);
    assert_false(got);
    fx_key(4, key, sizeof key);
    assert_int_equal(cf_db_lease_acquire(db, key, &got), CONVFIND_OK);
    assert_true(got);

    /* Storing a decision releases the lease in the same transaction; begin then sees
     * the stored decision. */
    fx_key(1, key, sizeof key);
    cf_decision d = fx_decision(61, 2);
    cf_db_finish(db, key, &d);
    cf_decision_clear(&d);
    cf_db_stats s;
    assert_int_equal(cf_db_get_stats(db, &s), CONVFIND_OK);
    assert_int_equal(s.leases, 3); /* keys 2, 3 (other host) and 4 */
    assert_int_equal(cf_db_begin(db, key, &(cf_db_request){.wait_ms = 0}, &d),
                     CF_DB_ACTION_USE);
    assert_string_equal(d.algo, "algo61_0");
    cf_decision_clear(&d);
    cf_db_close(db); /* releases this process's leases */
    db = open_at(path);
    assert_int_equal(cf_db_get_stats(db, &s), CONVFIND_OK);
    assert_int_equal(s.leases, 1); /* only the other host's */
    cf_db_close(db);
}

/* Issue 16, defect 9: two handles of one process on one database (two contexts) keep
 * each other from measuring one key, as two processes do; the lease of a handle that
 * was closed, or of an owner this process does not have open, blocks nobody. */
static void leases_name_their_handle(void **state)
{
    (void)state;
    char path[300], key[128];
    path_in_dir("owners.sqlite", path, sizeof path);
    fx_key(1, key, sizeof key);
    cf_db *a = open_at(path), *b = open_at(path);
    bool got = false;
    assert_int_equal(cf_db_lease_acquire(a, key, &got), CONVFIND_OK);
    assert_true(got);
    assert_int_equal(cf_db_lease_acquire(b, key, &got), CONVFIND_OK);
    assert_false(got); /* the same process, another handle: held */
    assert_int_equal(cf_db_lease_acquire(a, key, &got), CONVFIND_OK);
    assert_true(got); /* a handle renews its own */
    cf_decision d;
    assert_int_equal(cf_db_begin(b, key, &(cf_db_request){.wait_ms = 30}, &d),
                     CF_DB_ACTION_HEURISTIC);
    /* What the holder stores ends the wait of the other handle. */
    cf_decision stored = fx_decision(5, 2);
    cf_db_finish(a, key, &stored);
    cf_decision_clear(&stored);
    assert_int_equal(cf_db_begin(b, key, &(cf_db_request){.wait_ms = 0}, &d), CF_DB_ACTION_USE);
    assert_string_equal(d.algo, "algo5_0");
    cf_decision_clear(&d);

    /* A handle closed while its lease could not be deleted: not live for this process. */
    fx_key(2, key, sizeof key);
    assert_int_equal(cf_db_lease_acquire(a, key, &got), CONVFIND_OK);
    assert_true(got);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(b->user, "UPDATE leases SET owner=owner+1000000 WHERE "
                                        "key=?1", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    assert_int_equal(cf_db_lease_acquire(b, key, &got), CONVFIND_OK);
    assert_true(got); /* this pid, but no open handle of this process owns it */
    fx_key(3, key, sizeof key);
    assert_int_equal(cf_db_lease_acquire(a, key, &got), CONVFIND_OK);
    assert_true(got);
    cf_db_close(a);
    assert_int_equal(cf_db_lease_acquire(b, key, &got), CONVFIND_OK);
    assert_true(got); /* closing released it */
    cf_db_close(b);
}

static void export_import_round_trip(void **state)
{
    (void)state;
    char a[300], b[300], jsonl[300];
    path_in_dir("exp-a.sqlite", a, sizeof a);
    path_in_dir("exp-b.sqlite", b, sizeof b);
    path_in_dir("exp.jsonl", jsonl, sizeof jsonl);
    cf_db *src = open_at(a);
    for (int i = 0; i < 5; i++)
        store_one(src, i, 70 + i);
    FILE *f = fopen(jsonl, "w");
    size_t n = 0;
    assert_int_equal(cf_db_export(src, fx_file_write, f, &n), CONVFIND_OK);
    fclose(f);
    assert_int_equal(n, 5);
    cf_db_close(src);

    cf_db *dst = open_at(b);
    f = fopen(jsonl, "r");
    assert_int_equal(cf_db_import(dst, fx_file_read, f, jsonl, &n), CONVFIND_OK);
    fclose(f);
    assert_int_equal(n, 5);
    for (int i = 0; i < 5; i++) {
        int seed;
        assert_int_equal(lookup_seed(dst, i, &seed), CF_DB_HIT);
        assert_int_equal(seed, 70 + i);
    }
    /* A bad line anywhere: nothing is imported and the message names the line. */
    f = fopen(jsonl, "a");
    fputs("\n{\"format\":\"convfind-db-record/1\",\"key\":\"k\"}\n", f);
    fclose(f);
    cf_db *empty = open_at(CF_DB_MEMORY);
    f = fopen(jsonl, "r");
    assert_int_equal(cf_db_import(empty, fx_file_read, f, "exp.jsonl", &n), CONVFIND_ERR_IO);
    fclose(f);
    assert_non_null(strstr(convfind_last_error(), "exp.jsonl:7:"));
    cf_db_stats s;
    assert_int_equal(cf_db_get_stats(empty, &s), CONVFIND_OK);
    assert_int_equal(s.records, 0);
    cf_db_close(empty);
    cf_db_close(dst);
}

/* A row whose decision text was damaged is skipped by lookups, reported by verify and
 * removed by prune. */
static void unreadable_rows_are_skipped_and_reported(void **state)
{
    (void)state;
    char path[300];
    path_in_dir("rows.sqlite", path, sizeof path);
    cf_db *db = open_at(path);
    store_one(db, 1, 81);
    store_one(db, 2, 82);
    assert_int_equal(cf_db_exec(db->user, "UPDATE decisions SET decision='{\"algo\":' "
                                "WHERE key LIKE '%c=1;%'"), SQLITE_OK);
    int seed;
    assert_int_equal(lookup_seed(db, 1, &seed), CF_DB_MISS);
    assert_int_equal(lookup_seed(db, 2, &seed), CF_DB_HIT);
    assert_int_equal(cf_db_warning_count(db), 1);
    size_t bad = 0;
    assert_int_equal(cf_db_verify(db, &bad), CONVFIND_ERR_IO);
    assert_int_equal(bad, 1);
    size_t removed = 0;
    assert_int_equal(cf_db_prune(db, &removed), CONVFIND_OK);
    assert_int_equal(removed, 1);
    assert_int_equal(cf_db_verify(db, &bad), CONVFIND_OK);
    assert_int_equal(cf_db_vacuum(db), CONVFIND_OK);
    assert_int_equal(lookup_seed(db, 2, &seed), CF_DB_HIT);
    cf_db_close(db);
}

typedef struct thread_arg {
    cf_db *db;
    int first;
    int errors;
} thread_arg;

static void *hammer(void *varg)
{
    thread_arg *a = varg;
    for (int i = a->first; i < a->first + 25; i++) {
        char key[128];
        fx_key(i, key, sizeof key);
        const char *k = key;
        cf_decision d = fx_decision(i, 3), back;
        cf_db_found found;
        bool mine;
        a->errors += cf_db_lease_acquire(a->db, key, &mine) != CONVFIND_OK || !mine;
        a->errors += cf_db_store(a->db, &k, &d, 1) != CONVFIND_OK;
        a->errors += cf_db_lookup(a->db, key, &back, &found) != CONVFIND_OK ||
                     found != CF_DB_HIT || !fx_decision_equal(&d, &back);
        cf_decision_clear(&d);
        cf_decision_clear(&back);
    }
    return NULL;
}

/* One handle, several threads storing and reading at once (the context shares one). */
static void threads_share_one_handle(void **state)
{
    (void)state;
    char path[300];
    path_in_dir("threads.sqlite", path, sizeof path);
    cf_db *db = open_at(path);
    pthread_t t[4];
    thread_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (thread_arg){db, 1000 + 100 * i, 0};
        assert_int_equal(pthread_create(&t[i], NULL, hammer, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(args[i].errors, 0);
    }
    cf_db_stats st;
    assert_int_equal(cf_db_get_stats(db, &st), CONVFIND_OK);
    assert_int_equal(st.records, 100);
    assert_int_equal(st.leases, 0);
    assert_int_equal(cf_db_warning_count(db), 0);
    cf_db_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stored_decisions_survive_reopen),
        cmocka_unit_test(bad_store_arguments_are_rejected),
        cmocka_unit_test(other_environment_is_never_used_silently),
        cmocka_unit_test(system_tier_sits_under_user_tier),
        cmocka_unit_test(location_order),
        cmocka_unit_test(unusable_location),
        cmocka_unit_test(busy_database_keeps_decisions_pending),
        cmocka_unit_test(inspection_changes_nothing),
        cmocka_unit_test(import_reads_bounded_lines),
        cmocka_unit_test(unusable_system_tier),
        cmocka_unit_test(leases_exclude_and_expire),
        cmocka_unit_test(leases_name_their_handle),
        cmocka_unit_test(export_import_round_trip),
        cmocka_unit_test(unreadable_rows_are_skipped_and_reported),
        cmocka_unit_test(threads_share_one_handle),
    };
    return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
