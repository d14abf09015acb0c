/*
 * fleet.c - the fleet tier's connection, schema, lookups, leases and pushes (see
 * fleet.h); fleet_admin.c has what the tools do with it.
 *
 * The server holds three tables (docs/db.md has them): convfind_fleet_meta (the schema
 * version), convfind_fleet_decisions (the user tier's columns, one row per key and
 * environment) and convfind_fleet_leases.  Every statement is one atomic statement, so
 * that a connection lost in the middle leaves nothing half done:
 *
 *   - a lease is taken by one INSERT ... ON CONFLICT DO UPDATE whose WHERE lets it
 *     replace only an expired lease or its own; a row back means it is ours.  Expiry is
 *     the server's clock (clock_timestamp()), so machines whose clocks disagree still
 *     agree on it, and a machine that died holding a lease blocks the key until then;
 *   - a push is one INSERT whose data-modifying WITH also deletes this handle's lease,
 *     so the decision appears and the lease ends together;
 *   - the schema is created or migrated in a transaction under an advisory lock, so
 *     that machines starting together create it once.
 *
 * What this host measured and the fleet lacks is found at each connection: the user
 * tier's records of this environment and host, their keys sent in batches, the missing
 * ones pushed (never replacing what the fleet has).  So a decision measured while the
 * server was away reaches it on reconnection, or with the next run, with no state kept
 * besides the user tier itself.
 */
#define _POSIX_C_SOURCE 200809L

#include "db/fleet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "db/fleet_pq.h"
#include "db/fleet_internal.h"

#define FLEET_WHERE_MAX 320

/* migrations[v]: the statements that turn schema version v into v + 1, run in one
 * transaction (migrate()).  A new version appends one entry and bumps
 * CF_FLEET_SCHEMA_VERSION; docs/db.md shows the tables. */
static const char *const to_version_1[] = {
    "CREATE TABLE convfind_fleet_meta(name text PRIMARY KEY, value text NOT NULL)",
    "CREATE TABLE convfind_fleet_decisions("
    " key text NOT NULL, library_version text NOT NULL, backend_versions text NOT NULL,"
    " device text NOT NULL, algo text NOT NULL, decision text NOT NULL,"
    " bad_candidates text NOT NULL, host text NOT NULL, created_at bigint NOT NULL,"
    " PRIMARY KEY (key, library_version, backend_versions, device))",
    "CREATE TABLE convfind_fleet_leases("
    " key text NOT NULL, env text NOT NULL, owner text NOT NULL, host text NOT NULL,"
    " expires_at timestamptz NOT NULL, PRIMARY KEY (key, env))",
    NULL};
/* The Find budget a decision was measured with (user tier schema 2): without it a
 * fleet hit would be an unknown budget, low confidence, and measured again. */
static const char *const to_version_2[] = {
    "ALTER TABLE convfind_fleet_decisions ADD COLUMN IF NOT EXISTS budget_ms double precision",
    NULL};
static const char *const *const migrations[CF_FLEET_SCHEMA_VERSION] = {to_version_1,
                                                                       to_version_2};

struct cf_fleet {
    char *conninfo;               /* secret: never printed */
    char where[FLEET_WHERE_MAX];  /* what messages call it */
    cf_pq_conn *conn;             /* NULL while not connected */
    int64_t retry_at;             /* monotonic ms: no connection is tried before */
    bool tables;                  /* the server has our schema (INSPECT creates none) */
    bool read_only;               /* its schema is newer than ours */
    char owner[160];              /* this handle in lease rows */
    char env[420];                /* cfg.env described: the leases' environment */
    char last_error[480];
    uint64_t hits, pushed, faults;
    bool warned, warned_newer;
};

const char *cf_fleet_where(const cf_db *db)
{
    return db->fleet->where;
}

static int64_t deadline(const cf_db *db)
{
    return cf_pq_now_ms() + db->cfg.fleet_timeout_ms;
}

/* The connection is given up: closed, counted, said once (the tools' --fleet turns it
 * into an error instead), and not tried again for fleet_retry_ms. */
static void fault(cf_db *db, const char *what, const char *err)
{
    cf_fleet *f = db->fleet;
    f->faults++;
    cf_pq_close(f->conn);
    f->conn = NULL;
    f->retry_at = cf_pq_now_ms() + db->cfg.fleet_retry_ms;
    snprintf(f->last_error, sizeof f->last_error, "%.60s: %.400s", what, err);
    if (f->warned || db->cfg.fleet_only)
        return;
    f->warned = true;
    cf_db_warn(db, "fleet tier %s: %s; using the local tiers alone (retrying after %d ms at "
               "the earliest, then pushing what was measured here meanwhile)", f->where,
               f->last_error, db->cfg.fleet_retry_ms);
}

cf_pq_result *cf_fleet_run(cf_db *db, const char *what, const char *sql, int n,
                           const char *const *params)
{
    cf_fleet *f = db->fleet;
    if (!f->conn)
        return NULL;
    char err[400], state[6];
    cf_pq_result *r = cf_pq_exec(f->conn, sql, n, params, deadline(db), err, sizeof err, state);
    if (!r)
        fault(db, what, err);
    return r;
}

/* One statement whose result is not needed. */
static bool run_command(cf_db *db, const char *what, const char *sql, int n,
                        const char *const *params)
{
    cf_pq_result *r = cf_fleet_run(db, what, sql, n, params);
    cf_pq_clear(r);
    return r != NULL;
}

/* The server's schema version (0: none yet), or -1 after a fault. */
static int read_version(cf_db *db)
{
    cf_pq_result *r = cf_fleet_run(db, "reading the schema", FLEET_SQL_HAS_SCHEMA, 0, NULL);
    if (!r)
        return -1;
    bool has = cf_pq_rows(r) == 1 && strcmp(cf_pq_value(r, 0, 0), "t") == 0;
    cf_pq_clear(r);
    if (!has)
        return 0;
    r = cf_fleet_run(db, "reading the schema", FLEET_SQL_VERSION, 0, NULL);
    if (!r)
        return -1;
    int v = cf_pq_rows(r) == 1 ? atoi(cf_pq_value(r, 0, 0)) : 0;
    cf_pq_clear(r);
    return v;
}

/* Creates or migrates the schema, once across machines starting together: the version
 * is read again under the advisory lock.  Returns the version now, -1 after a fault. */
static int migrate(cf_db *db)
{
    if (!run_command(db, "creating the schema", "BEGIN", 0, NULL) ||
        !run_command(db, "creating the schema", FLEET_SQL_LOCK, 0, NULL))
        return -1;
    int v = read_version(db);
    for (; v >= 0 && v < CF_FLEET_SCHEMA_VERSION; v++)
        for (const char *const *s = migrations[v]; *s; s++)
            if (!run_command(db, "creating the schema", *s, 0, NULL))
                return -1;
    char version[16];
    snprintf(version, sizeof version, "%d", CF_FLEET_SCHEMA_VERSION);
    const char *p[] = {version};
    if (v < 0 || !run_command(db, "creating the schema", FLEET_SQL_SET_VERSION, 1, p) ||
        !run_command(db, "creating the schema", "COMMIT", 0, NULL))
        return -1;
    return v;
}

/* The server's schema as this handle needs it.  False after a fault. */
static bool check_schema(cf_db *db)
{
    cf_fleet *f = db->fleet;
    int v = read_version(db);
    if (v >= 0 && v < CF_FLEET_SCHEMA_VERSION && db->cfg.mode != CF_DB_INSPECT)
        v = migrate(db);
    if (v < 0)
        return false;
    f->tables = v > 0;
    f->read_only = v > CF_FLEET_SCHEMA_VERSION;
    if (f->read_only && !f->warned_newer && !db->cfg.fleet_only) {
        f->warned_newer = true;
        cf_db_warn(db, "fleet tier %s has schema version %d, newer than this build's %d; "
                   "reading it, writing nothing to it (no fleet leases, no pushes)", f->where,
                   v, CF_FLEET_SCHEMA_VERSION);
    }
    return true;
}

/* Connects and readies the connection: the server-side statement timeout, the schema,
 * and the decisions this host measured that the fleet lacks. */
static bool connect_fleet(cf_db *db)
{
    cf_fleet *f = db->fleet;
    char err[400];
    f->conn = cf_pq_connect(f->conninfo, deadline(db), err, sizeof err);
    if (!f->conn) {
        f->conn = NULL;
        fault(db, "cannot connect", err);
        return false;
    }
    char set[64];
    snprintf(set, sizeof set, "SET statement_timeout = %d", db->cfg.fleet_timeout_ms);
    if (!run_command(db, "configuring the session", set, 0, NULL) || !check_schema(db))
        return false;
    if (db->cfg.mode == CF_DB_USE && !f->read_only)
        cf_fleet_sync(db);
    return f->conn != NULL;
}

bool cf_fleet_ready(cf_db *db)
{
    cf_fleet *f = db->fleet;
    if (f->conn)
        return true;
    if (cf_pq_now_ms() < f->retry_at)
        return false;
    return connect_fleet(db);
}

/* "host:pid:nonce": unique to this handle, so two handles of one process (two
 * contexts) do not take each other's leases for their own. */
static void make_owner(cf_db *db)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t nonce = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
                     ((uint64_t)(uintptr_t)db << 16);
    snprintf(db->fleet->owner, sizeof db->fleet->owner, "%.100s:%ld:%016llx", db->host,
             (long)getpid(), (unsigned long long)nonce);
}

convfind_status cf_fleet_open(cf_db *db, const char *url)
{
    if (db->cfg.mode != CF_DB_USE && !db->cfg.fleet_only)
        return CONVFIND_OK; /* inspecting or maintaining the user file only */
    if (!url || !url[0])
        return db->cfg.fleet_only ? cf_fail(CONVFIND_ERR_IO, "no fleet tier was named")
                                  : CONVFIND_OK;
    if (!db->cfg.fleet_timeout_ms)
        db->cfg.fleet_timeout_ms = 2000;
    if (!db->cfg.fleet_retry_ms)
        db->cfg.fleet_retry_ms = 10000;
    if (!db->cfg.fleet_lease_ms)
        db->cfg.fleet_lease_ms = db->cfg.lease_ms;
    char why[300];
    if (!cf_pq_load(why, sizeof why)) {
        if (db->cfg.fleet_only)
            return cf_fail(CONVFIND_ERR_IO, "fleet tier: %s", why);
        cf_db_warn(db, "fleet tier not used: %s", why);
        return CONVFIND_OK;
    }
    cf_fleet *f = calloc(1, sizeof *f);
    if (!f || !(f->conninfo = strdup(url))) {
        free(f);
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate the fleet tier");
    }
    cf_pq_describe(url, f->where, sizeof f->where);
    cf_db_env_describe(&db->cfg.env, f->env, sizeof f->env);
    db->fleet = f;
    make_owner(db);
    bool up = cf_fleet_ready(db);
    if (db->cfg.fleet_only && !up)
        return cf_fail(CONVFIND_ERR_IO, "fleet tier %s: %s", f->where, f->last_error);
    if (db->cfg.fleet_only && f->read_only && db->cfg.mode == CF_DB_MAINTAIN)
        return cf_fail(CONVFIND_ERR_IO, "fleet tier %s has a schema newer than this build's "
                       "(%d); it is not changed", f->where, CF_FLEET_SCHEMA_VERSION);
    return CONVFIND_OK;
}

void cf_fleet_close(cf_db *db)
{
    cf_fleet *f = db->fleet;
    if (!f)
        return;
    if (f->conn && f->tables && !f->read_only && db->cfg.mode == CF_DB_USE) {
        const char *p[] = {f->owner};
        run_command(db, "giving back leases", FLEET_SQL_RELEASE_ALL, 1, p);
    }
    cf_pq_close(f->conn);
    free(f->conninfo);
    free(f);
    db->fleet = NULL;
}

/* The record of a fleet row is copied into the user tier with its provenance, so that
 * the next lookup is local.  Best effort: a busy or read-only user tier keeps nothing,
 * and the next lookup asks the fleet again. */
static int put_op(cf_db *db, sqlite3 *conn, void *arg)
{
    (void)db;
    return cf_db_put_records(conn, arg, 1);
}

static void copy_to_user_tier(cf_db *db, const char *key, const cf_decision *d,
                              const char *host, int64_t time)
{
    if (!db->writable || cf_db_now_ms() < db->retry_at_ms)
        return;
    cf_db_record r;
    memset(&r, 0, sizeof r);
    r.key = (char *)key;
    r.env = db->cfg.env;
    r.decision = *d;
    snprintf(r.host, sizeof r.host, "%s", host);
    r.time = time;
    /* A database another process keeps locked is left alone for a busy timeout, as the
     * stores do (db_ops.c), so that lookups do not each wait for it. */
    if (cf_db_rc_busy(cf_db_run(db, put_op, &r)))
        db->retry_at_ms = cf_db_now_ms() + db->cfg.busy_timeout_ms;
}

bool cf_fleet_lookup(cf_db *db, const char *key, cf_decision *out, bool *exact)
{
    cf_fleet *f = db->fleet;
    memset(out, 0, sizeof *out);
    *exact = false;
    if (!f || !cf_fleet_ready(db) || !f->tables)
        return false;
    const char *p[] = {key, db->cfg.env.library, db->cfg.env.backends, db->cfg.env.device};
    cf_pq_result *r = cf_fleet_run(db, "looking up a decision", FLEET_SQL_LOOKUP, 4, p);
    if (!r)
        return false;
    bool found = false;
    int row = 0;
    for (; row < cf_pq_rows(r) && !found; row++) {
        found = cf_db_load_decision(db, key, cf_pq_value(r, row, 0),
                                    (size_t)cf_pq_length(r, row, 0), out) == CONVFIND_OK;
        if (!found && !db->warned_unreadable) {
            db->warned_unreadable = true;
            cf_db_warn(db, "ignoring an unreadable decision of fleet tier %s for key %.200s: %s",
                       f->where, key, convfind_last_error());
        }
    }
    if (found) {
        row--;
        out->budget_ms = strtod(cf_pq_value(r, row, 4), NULL); /* "" (NULL): 0, unknown */
        *exact = strcmp(cf_pq_value(r, row, 1), "t") == 0;
        if (*exact) {
            f->hits++;
            copy_to_user_tier(db, key, out, cf_pq_value(r, row, 2),
                              strtoll(cf_pq_value(r, row, 3), NULL, 10));
        }
    }
    cf_pq_clear(r);
    return found;
}

bool cf_fleet_lease(cf_db *db, const char *key)
{
    cf_fleet *f = db->fleet;
    if (!f || !cf_fleet_ready(db) || !f->tables || f->read_only)
        return true;
    char ms[24];
    snprintf(ms, sizeof ms, "%d", db->cfg.fleet_lease_ms);
    const char *p[] = {key, f->env, f->owner, db->host, ms};
    cf_pq_result *r = cf_fleet_run(db, "taking a lease", FLEET_SQL_LEASE, 5, p);
    if (!r)
        return true;
    bool acquired = cf_pq_rows(r) == 1;
    cf_pq_clear(r);
    return acquired;
}

void cf_fleet_release(cf_db *db, const char *key)
{
    cf_fleet *f = db->fleet;
    if (!f || !f->conn || !f->tables || f->read_only)
        return;
    const char *p[] = {key, f->env, f->owner};
    run_command(db, "giving back a lease", FLEET_SQL_RELEASE, 3, p);
}

bool cf_fleet_push_one(cf_db *db, const char *sql, const cf_fleet_row *row)
{
    cf_fleet *f = db->fleet;
    char time[24], budget[32];
    snprintf(time, sizeof time, "%lld", (long long)row->time);
    snprintf(budget, sizeof budget, "%.17g", row->budget_ms > 0 ? row->budget_ms : 0.0);
    const char *p[] = {row->key, row->env->library, row->env->backends, row->env->device,
                       row->algo, row->json, row->bad, row->host, time, f->env, f->owner,
                       budget};
    if (!run_command(db, "pushing a decision", sql, 12, p))
        return false;
    f->pushed++;
    return true;
}

void cf_fleet_push(cf_db *db, const cf_db_row *rows, size_t n)
{
    cf_fleet *f = db->fleet;
    /* Not connected: the rows reach the user tier, and the next connection pushes them
     * from there. */
    if (!f || !cf_fleet_ready(db) || !f->tables || f->read_only)
        return;
    int64_t now = cf_db_now_ms() / 1000;
    for (size_t i = 0; i < n; i++) {
        const cf_fleet_row row = {.key = rows[i].key, .env = &db->cfg.env, .algo = rows[i].algo,
                                  .json = rows[i].json, .bad = rows[i].bad, .host = db->host,
                                  .time = now, .budget_ms = rows[i].budget_ms};
        if (!cf_fleet_push_one(db, FLEET_SQL_PUSH, &row))
            return;
    }
}

void cf_fleet_counters(const cf_db *db, cf_db_stats *out)
{
    const cf_fleet *f = db->fleet;
    if (!f)
        return;
    out->fleet = true;
    out->fleet_connected = f->conn != NULL;
    out->fleet_read_only = f->read_only;
    out->fleet_hits = f->hits;
    out->fleet_pushed = f->pushed;
    out->fleet_faults = f->faults;
}

const char *cf_fleet_last_error(const cf_db *db)
{
    return db->fleet->last_error;
}

bool cf_fleet_has_tables(const cf_db *db)
{
    return db->fleet->tables;
}
