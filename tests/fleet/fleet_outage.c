/*
 * fleet_outage.c - the server goes away and comes back (issue 20, faults): a tune run
 * whose server stops in the middle finishes from local measurements, said once; after a
 * restart the decisions measured meanwhile are pushed by the same run, and those of a
 * run that started while the server was down are pushed by the next run.  Nothing
 * measured is lost: every key is in its machine's user tier and in the fleet, with the
 * decision that was measured.
 */
#include "fleet_fixture.h"

/* Tunes keys [from, to) on `db` the way the find path does; each must be measured
 * here (nothing else has them). */
static void tune(cf_db *db, int from, int to)
{
    for (int i = from; i < to; i++) {
        char key[128];
        fx_key(i, key, sizeof key);
        cf_decision d;
        cf_db_action a = cf_db_begin(db, key, &(cf_db_request){.wait_ms = 5000}, &d);
        FL_CHECK(a == CF_DB_ACTION_BENCHMARK, "key %d: action %d instead of measuring", i,
                 (int)a);
        cf_decision_clear(&d);
        d = fx_decision(i, 1 + i % 5);
        cf_db_finish(db, key, &d);
        cf_decision_clear(&d);
    }
}

/* Every key of [from, to) is in the user database `path` with its decision. */
static void check_local(const char *path, int from, int to)
{
    cf_db_config c = fx_config(path);
    c.fleet = "";
    cf_db *db = fl_open(&c);
    for (int i = from; i < to; i++) {
        char key[128];
        fx_key(i, key, sizeof key);
        cf_decision got, want = fx_decision(i, 1 + i % 5);
        cf_db_found found;
        cf_db_lookup(db, key, &got, &found);
        FL_CHECK(found == CF_DB_HIT && fx_decision_equal(&got, &want),
                 "key %d was lost from %s", i, path);
        cf_decision_clear(&got);
        cf_decision_clear(&want);
    }
    cf_db_close(db);
}

static void wait_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(void)
{
    char dir[256], conninfo[512], path0[512], path1[512], warning[1024];
    fx_tmpdir(dir, sizeof dir);
    fl_start(dir, conninfo, sizeof conninfo);

    /* A run whose server stops in the middle and comes back before it ends. */
    cf_db_config c0 = fl_config(dir, 0, conninfo, path0, sizeof path0);
    cf_db *db = fl_open(&c0);
    tune(db, 0, 5);
    for (int i = 0; i < 5; i++)
        FL_CHECK(fl_fleet_has(dir, i), "key %d was not pushed while the server was up", i);
    FL_CHECK(fl_fixture("stop", dir, NULL, NULL, 0) == 0, "stopping the server");
    tune(db, 5, 15);
    cf_db_stats s = fl_stats(db);
    FL_CHECK(cf_db_warning_count(db) == 1 && !s.fleet_connected && s.fleet_faults >= 1,
             "after the server stopped: %d warnings, connected %d, %llu faults",
             cf_db_warning_count(db), s.fleet_connected, (unsigned long long)s.fleet_faults);
    cf_db_last_warning(db, warning, sizeof warning);
    FL_CHECK(strstr(warning, "fleet tier") && strstr(warning, "local tiers alone"),
             "the outage was reported as: %s", warning);
    uint64_t pushed_before = s.fleet_pushed;
    FL_CHECK(fl_fixture("restart", dir, NULL, NULL, 0) == 0, "restarting the server");
    wait_ms(c0.fleet_retry_ms + 50);
    tune(db, 15, 20);
    s = fl_stats(db);
    FL_CHECK(s.fleet_connected, "the run did not reconnect");
    FL_CHECK(s.fleet_pushed - pushed_before == 15,
             "%llu pushes after the restart instead of 10 late ones and 5 new ones",
             (unsigned long long)(s.fleet_pushed - pushed_before));
    FL_CHECK(cf_db_warning_count(db) == 1, "%d warnings: an outage is reported once",
             cf_db_warning_count(db));
    cf_db_close(db);
    for (int i = 0; i < 20; i++)
        FL_CHECK(fl_fleet_has(dir, i), "key %d measured around the outage is not in the fleet",
                 i);
    check_local(path0, 0, 20);

    /* A run that starts while the server is down; the next run pushes its work. */
    FL_CHECK(fl_fixture("stop", dir, NULL, NULL, 0) == 0, "stopping the server");
    cf_db_config c1 = fl_config(dir, 1, conninfo, path1, sizeof path1);
    db = fl_open(&c1);
    FL_CHECK(cf_db_warning_count(db) == 1, "an unreachable server at start: %d warnings",
             cf_db_warning_count(db));
    tune(db, 20, 30);
    FL_CHECK(cf_db_warning_count(db) == 1, "%d warnings", cf_db_warning_count(db));
    cf_db_close(db);
    FL_CHECK(fl_fixture("restart", dir, NULL, NULL, 0) == 0, "restarting the server");
    db = fl_open(&c1); /* the next run */
    s = fl_stats(db);
    FL_CHECK(s.fleet_connected && s.fleet_pushed == 10 && cf_db_warning_count(db) == 0,
             "the next run: connected %d, pushed %llu, %d warnings", s.fleet_connected,
             (unsigned long long)s.fleet_pushed, cf_db_warning_count(db));
    cf_db_close(db);
    for (int i = 20; i < 30; i++)
        FL_CHECK(fl_fleet_has(dir, i), "key %d of the run without a server was not pushed", i);
    check_local(path1, 20, 30);
    /* Nothing more is pushed once the fleet has it all. */
    db = fl_open(&c1);
    FL_CHECK(fl_stats(db).fleet_pushed == 0, "pushed again what the fleet has");
    cf_db_close(db);
    FL_CHECK(fl_sql_long(dir, "SELECT count(*) FROM convfind_fleet_decisions") == 30,
             "the fleet holds other records than the 30 measured");

    fl_finish(dir);
    printf("fleet_outage: a run across a server stop and restart, and a run without a server, "
           "lost nothing and reported each outage once\n");
    return 0;
}
