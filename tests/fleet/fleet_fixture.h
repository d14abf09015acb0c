/*
 * fleet_fixture.h - what the fleet tier's tests share: a PostgreSQL server of their own
 * (pg_server.h), configs of "machines" (each its own user database, one fleet tier),
 * and checks that end the test.
 *
 * A test that cannot get libpq or the server binaries exits 77 (ctest: skipped) after
 * saying why on stderr, loudly; any other failure to start the server fails the test.
 */
#ifndef CONVFIND_TEST_FLEET_FIXTURE_H
#define CONVFIND_TEST_FLEET_FIXTURE_H

#include <stdarg.h>

#include "../db/db_fixture.h"
#include "db/fleet_pq.h"
#include "pg_server.h"

/* Starts the test's server in `dir` and writes its connection string to `conninfo`.
 * Exits 77 when libpq or the server binaries are missing. */
static inline void fl_start(const char *dir, char *conninfo, size_t size)
{
    char why[300];
    if (!cf_pq_load(why, sizeof why)) {
        fprintf(stderr, "SKIPPED: %s: the fleet tier's server tests did not run\n", why);
        exit(FL_SKIP);
    }
    fl_server_start(dir, conninfo, size);
}

/* Machine `m`'s config: its own user database DIR/machine<m>.sqlite, the fleet tier
 * `conninfo`, short timeouts so that faults are seen quickly. */
static inline cf_db_config fl_config(const char *dir, int m, const char *conninfo, char *path,
                                     size_t size)
{
    snprintf(path, size, "%s/machine%d.sqlite", dir, m);
    cf_db_config c = fx_config(path);
    c.fleet = conninfo;
    c.fleet_timeout_ms = 1500;
    c.fleet_retry_ms = 200;
    return c;
}

static inline cf_db *fl_open(const cf_db_config *c)
{
    cf_db *db = NULL;
    FL_CHECK(cf_db_open(c, &db) == CONVFIND_OK, "cf_db_open: %s", convfind_last_error());
    return db;
}

static inline cf_db_stats fl_stats(cf_db *db)
{
    cf_db_stats s;
    FL_CHECK(cf_db_get_stats(db, &s) == CONVFIND_OK, "stats: %s", convfind_last_error());
    return s;
}

/* "measures" key i the way the tests do: the decision fx_decision makes for it. */
static inline void fl_store(cf_db *db, int i)
{
    char key[128];
    fx_key(i, key, sizeof key);
    cf_decision d = fx_decision(i, 1 + i % 5);
    const char *k = key;
    FL_CHECK(cf_db_store(db, &k, &d, 1) == CONVFIND_OK, "store: %s", convfind_last_error());
    cf_decision_clear(&d);
}

/* Whether the fleet holds key i with the decision fl_store makes for it. */
static inline bool fl_fleet_has(const char *dir, int i)
{
    char key[128], q[512], out[4096];
    fx_key(i, key, sizeof key);
    snprintf(q, sizeof q, "SELECT decision FROM convfind_fleet_decisions WHERE key = '%s'", key);
    fl_sql(dir, q, out, sizeof out);
    cf_decision want = fx_decision(i, 1 + i % 5), got;
    bool same = cf_db_decision_from_json(out, strlen(out), &got) == CONVFIND_OK &&
                fx_decision_equal(&want, &got);
    if (same)
        cf_decision_clear(&got);
    cf_decision_clear(&want);
    return same;
}

#endif /* CONVFIND_TEST_FLEET_FIXTURE_H */
