/*
 * fleet_faults.c - the fleet tier's tiers order and environments, and the faults of
 * issue 20 that fleet_outage.c and fleet_lease_kill.c do not cover:
 *
 *   order     a user-tier record wins over the fleet's, the fleet's over the system
 *             tier's; a fleet hit is copied into the user tier; a fleet record of
 *             another environment is FOREIGN (re-timed), never used as it is;
 *   hung      a server that stops answering (SIGSTOP) costs one timeout per call, never
 *             a hang, also when a machine starts; stores go on locally; said once;
 *   newer     a server whose schema is newer than this build's is read, never written;
 *   secrets   a password in the connection string appears in no message: warnings on
 *             stderr, convfind_last_error(), the described location, whatever went
 *             wrong (no server, a string that does not parse, a wrong password).
 */
#include <fcntl.h>

#include "fleet_fixture.h"

#define SECRET "Sup3rS3cretPw"

static int64_t now_ms(void)
{
    return cf_pq_now_ms();
}

static cf_db_found lookup(cf_db *db, int i, cf_decision *d)
{
    char key[128];
    fx_key(i, key, sizeof key);
    cf_db_found found;
    FL_CHECK(cf_db_lookup(db, key, d, &found) == CONVFIND_OK, "lookup");
    return found;
}

/* Stores key i with the decision of `seed` into the user database `path` alone. */
static void store_local(const char *path, int i, int seed)
{
    cf_db_config c = fx_config(path);
    c.fleet = "";
    cf_db *db = fl_open(&c);
    char key[128];
    fx_key(i, key, sizeof key);
    const char *k = key;
    cf_decision d = fx_decision(seed, 2);
    cf_db_store(db, &k, &d, 1);
    cf_decision_clear(&d);
    cf_db_close(db);
}

static void check_order(const char *dir, const char *conninfo)
{
    char path[512], other[512], sys[512];
    /* Machine 9 measures keys 1..3 into the fleet. */
    cf_db_config c9 = fl_config(dir, 9, conninfo, other, sizeof other);
    cf_db *db = fl_open(&c9);
    for (int i = 1; i <= 3; i++)
        fl_store(db, i);
    cf_db_close(db);
    /* Machine 1 has its own record of key 1, and a system tier with key 2. */
    cf_db_config c = fl_config(dir, 1, conninfo, path, sizeof path);
    store_local(path, 1, 500);
    snprintf(sys, sizeof sys, "%s/system.sqlite", dir);
    store_local(sys, 2, 600);
    c.system_path = sys;
    db = fl_open(&c);
    cf_decision d, want;
    FL_CHECK(lookup(db, 1, &d) == CF_DB_HIT && d.candidates[0].median_ms ==
             (want = fx_decision(500, 2)).candidates[0].median_ms,
             "key 1: the user tier's record must win over the fleet's");
    cf_decision_clear(&d);
    cf_decision_clear(&want);
    want = fx_decision(2, 1 + 2 % 5);
    FL_CHECK(lookup(db, 2, &d) == CF_DB_HIT && fx_decision_equal(&d, &want),
             "key 2: the fleet's record must win over the system tier's");
    cf_decision_clear(&d);
    cf_decision_clear(&want);
    FL_CHECK(lookup(db, 3, &d) == CF_DB_HIT, "key 3: a fleet hit");
    cf_decision_clear(&d);
    FL_CHECK(fl_stats(db).fleet_hits == 2, "fleet hits counted: %llu",
             (unsigned long long)fl_stats(db).fleet_hits);
    cf_db_close(db);
    /* The fleet's hits were copied: the machine's own disk answers them now. */
    c.fleet = "";
    c.system_path = NULL;
    db = fl_open(&c);
    for (int i = 1; i <= 3; i++) {
        FL_CHECK(lookup(db, i, &d) == CF_DB_HIT, "key %d is not in the user tier", i);
        cf_decision_clear(&d);
    }
    cf_db_close(db);

    /* Another environment's fleet record is re-timed, never used as it is, and not
     * copied. */
    cf_db_config c2 = fl_config(dir, 2, conninfo, path, sizeof path);
    snprintf(c2.env.device, sizeof c2.env.device, "another-device");
    db = fl_open(&c2);
    char key[128];
    fx_key(3, key, sizeof key);
    FL_CHECK(lookup(db, 3, &d) == CF_DB_FOREIGN, "another environment's record is FOREIGN");
    cf_decision_clear(&d);
    FL_CHECK(cf_db_begin(db, key, &(cf_db_request){.wait_ms = 0}, &d) == CF_DB_ACTION_RETUNE,
             "and is re-timed");
    cf_decision_clear(&d);
    d = fx_decision(3, 2);
    cf_db_finish(db, key, &d);
    cf_decision_clear(&d);
    cf_db_close(db);
    FL_CHECK(fl_sql_long(dir, "SELECT count(*) FROM convfind_fleet_decisions WHERE device = "
                              "'another-device'") == 1,
             "the re-timed record of the other environment was not pushed");
}

static void check_hung(const char *dir, const char *conninfo)
{
    char path[512];
    cf_db_config c = fl_config(dir, 3, conninfo, path, sizeof path);
    cf_db *db = fl_open(&c);
    FL_CHECK(fl_stats(db).fleet_connected, "not connected");
    FL_CHECK(fl_fixture("signal", dir, "STOP", NULL, 0) == 0, "SIGSTOP");
    /* Each call: at most one timeout (a statement, or a new connection), plus slack for
     * a loaded machine; never a hang. */
    const int64_t bound = c.fleet_timeout_ms + 3000;
    for (int i = 40; i < 44; i++) {
        int64_t t0 = now_ms();
        char key[128];
        fx_key(i, key, sizeof key);
        cf_decision d;
        cf_db_action a = cf_db_begin(db, key, &(cf_db_request){.wait_ms = 0}, &d);
        cf_decision_clear(&d);
        FL_CHECK(a == CF_DB_ACTION_BENCHMARK, "key %d with a hung server: action %d", i, (int)a);
        d = fx_decision(i, 1 + i % 5);
        cf_db_finish(db, key, &d);
        cf_decision_clear(&d);
        int64_t took = now_ms() - t0;
        FL_CHECK(took < 2 * bound, "a call took %lld ms with the server hung", (long long)took);
        struct timespec ts = {0, (long)(c.fleet_retry_ms + 20) * 1000000L};
        nanosleep(&ts, NULL); /* so that the next call tries the server again */
    }
    FL_CHECK(cf_db_warning_count(db) == 1, "%d warnings for one hung server",
             cf_db_warning_count(db));
    /* A machine starting now starts, within the bound. */
    char path2[512];
    cf_db_config c2 = fl_config(dir, 4, conninfo, path2, sizeof path2);
    int64_t t0 = now_ms();
    cf_db *db2 = fl_open(&c2);
    FL_CHECK(now_ms() - t0 < bound, "opening took %lld ms with the server hung",
             (long long)(now_ms() - t0));
    FL_CHECK(cf_db_warning_count(db2) == 1, "%d warnings", cf_db_warning_count(db2));
    cf_db_close(db2);
    FL_CHECK(fl_fixture("signal", dir, "CONT", NULL, 0) == 0, "SIGCONT");
    /* Once it answers again, what was measured meanwhile is pushed. */
    struct timespec ts = {0, (long)(c.fleet_retry_ms + 20) * 1000000L};
    nanosleep(&ts, NULL);
    cf_decision d;
    FL_CHECK(lookup(db, 99, &d) == CF_DB_MISS, "key 99 is nowhere");
    FL_CHECK(fl_stats(db).fleet_connected, "not connected again after SIGCONT");
    cf_db_close(db);
    for (int i = 40; i < 44; i++)
        FL_CHECK(fl_fleet_has(dir, i), "key %d measured while the server hung was not pushed", i);
}

static void check_newer(const char *dir, const char *conninfo)
{
    char path[512], warning[1024], key[128];
    fl_sql(dir, "UPDATE convfind_fleet_meta SET value = '99' WHERE name = 'schema_version'",
           NULL, 0);
    cf_db_config c = fl_config(dir, 5, conninfo, path, sizeof path);
    cf_db *db = fl_open(&c);
    cf_db_last_warning(db, warning, sizeof warning);
    FL_CHECK(cf_db_warning_count(db) == 1 && strstr(warning, "newer"),
             "a newer schema is said once: %s", warning);
    cf_decision d;
    FL_CHECK(lookup(db, 40, &d) == CF_DB_HIT, "a newer fleet is still read");
    cf_decision_clear(&d);
    fx_key(50, key, sizeof key);
    FL_CHECK(cf_db_begin(db, key, &(cf_db_request){.wait_ms = 0}, &d) == CF_DB_ACTION_BENCHMARK,
             "measured here");
    FL_CHECK(fl_sql_long(dir, "SELECT count(*) FROM convfind_fleet_leases") == 0,
             "a lease was written into a newer schema");
    d = fx_decision(50, 1);
    cf_db_finish(db, key, &d);
    cf_decision_clear(&d);
    FL_CHECK(!fl_fleet_has(dir, 50), "a decision was pushed into a newer schema");
    FL_CHECK(cf_db_warning_count(db) == 1, "%d warnings", cf_db_warning_count(db));
    cf_db_close(db);
    /* The tools may read it, not change it. */
    cf_db_config t = fx_config(CF_DB_MEMORY);
    t.fleet = conninfo;
    t.fleet_only = true;
    t.mode = CF_DB_MAINTAIN;
    FL_CHECK(cf_db_open(&t, &db) == CONVFIND_ERR_IO && strstr(convfind_last_error(), "newer"),
             "maintaining a newer fleet: %s", convfind_last_error());
    fl_sql(dir, "UPDATE convfind_fleet_meta SET value = '2' WHERE name = 'schema_version'", NULL,
           0);
}

/* Every way a connection string with a password can go wrong, with stderr captured:
 * the password is never in what is printed or returned. */
static void check_secrets(const char *dir)
{
    char conninfo[4][512], log[512], path[512];
    snprintf(conninfo[0], sizeof conninfo[0],
             "host=%s/no-server port=5432 user=convfind password=" SECRET " dbname=postgres", dir);
    snprintf(conninfo[1], sizeof conninfo[1], "password=" SECRET " bogus");
    snprintf(conninfo[2], sizeof conninfo[2],
             "postgresql://convfind:" SECRET "@/postgres?host=%s/no-server", dir);
    snprintf(conninfo[3], sizeof conninfo[3],
             "host=%s/pg user=secretuser password=" SECRET " dbname=postgres", dir);
    snprintf(log, sizeof log, "%s/stderr.log", dir);
    fflush(stderr);
    int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    FL_CHECK(saved >= 0 && fd >= 0 && dup2(fd, 2) == 2, "redirecting stderr");
    char seen[8192] = "";
    for (int k = 0; k < 4; k++) {
        cf_db_config c = fl_config(dir, 6, conninfo[k], path, sizeof path);
        c.quiet = false; /* warnings go to stderr, which is captured */
        cf_db *db = fl_open(&c);
        fl_store(db, 60 + k);
        cf_db_stats s = fl_stats(db);
        char w[1024];
        cf_db_last_warning(db, w, sizeof w);
        FL_CHECK(cf_db_warning_count(db) == 1 && !s.fleet_connected, "case %d: %s", k, w);
        strncat(seen, w, sizeof seen - strlen(seen) - 1);
        cf_db_close(db);
        cf_db_config t = fx_config(CF_DB_MEMORY);
        t.fleet = conninfo[k];
        t.fleet_only = true;
        t.mode = CF_DB_INSPECT;
        FL_CHECK(cf_db_open(&t, &db) != CONVFIND_OK, "case %d: the tools reached no server", k);
        strncat(seen, convfind_last_error(), sizeof seen - strlen(seen) - 1);
        fprintf(stderr, "%s\n", convfind_last_error());
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    FILE *f = fopen(log, "r");
    FL_CHECK(f, "reading the captured stderr");
    char text[16384];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    FL_CHECK(strstr(text, "fleet tier") && strstr(text, "password authentication failed") &&
                 strstr(text, "does not parse") && strstr(text, "user=convfind"),
             "the messages do not say what went wrong:\n%s", text);
    FL_CHECK(!strstr(text, SECRET) && !strstr(seen, SECRET),
             "the password was printed:\n%s\n%s", text, seen);
}

int main(void)
{
    char dir[256], conninfo[512];
    fx_tmpdir(dir, sizeof dir);
    fl_start(dir, conninfo, sizeof conninfo);
    check_order(dir, conninfo);
    check_hung(dir, conninfo);
    check_newer(dir, conninfo);
    check_secrets(dir);
    fl_finish(dir);
    printf("fleet_faults: tier order, environments, a hung server, a newer schema and "
           "secrets in connection strings behaved\n");
    return 0;
}
