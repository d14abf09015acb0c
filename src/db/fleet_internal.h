/*
 * fleet_internal.h - what the fleet tier's files share: its SQL, the schema's
 * migrations, and the connection helpers of fleet.c used by fleet_sync.c (pushing what
 * the fleet lacks) and fleet_admin.c (the tools' --fleet).  Everything is called with
 * the handle's mutex held.
 */
#ifndef CONVFIND_DB_FLEET_INTERNAL_H
#define CONVFIND_DB_FLEET_INTERNAL_H

#include "db/fleet.h"
#include "db/fleet_pq.h"

/* The server's schema version this build reads and writes (convfind_fleet_meta). */
#define CF_FLEET_SCHEMA_VERSION 2

/* From the catalog tables, not to_regclass(): the session's catalog cache may not have
 * seen a table another machine created while we waited for the advisory lock. */
#define FLEET_SQL_HAS_SCHEMA                                                                   \
    "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "        \
    "ON n.oid = c.relnamespace WHERE c.relname = 'convfind_fleet_meta' "                        \
    "AND n.nspname = ANY (current_schemas(false)))"
#define FLEET_SQL_VERSION "SELECT value FROM convfind_fleet_meta WHERE name = 'schema_version'"
/* 0x43464442, "CFDB", as the SQLite files' application_id. */
#define FLEET_SQL_LOCK "SELECT pg_advisory_xact_lock(1128678466)"
#define FLEET_SQL_SET_VERSION                                                                  \
    "INSERT INTO convfind_fleet_meta(name, value) VALUES ('schema_version', $1) "               \
    "ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value"
/* $1 key, $2..$4 this environment: this environment's record first, then the newest. */
#define FLEET_SQL_LOOKUP                                                                       \
    "SELECT decision, library_version = $2 AND backend_versions = $3 AND device = $4 AS exact, " \
    "host, created_at, budget_ms FROM convfind_fleet_decisions WHERE key = $1 "               \
    "ORDER BY exact DESC, created_at DESC LIMIT 16"
/* $1 key, $2 environment, $3 owner, $4 host, $5 lifetime in ms: a row back means the
 * lease is ours (new, expired and taken over, or our own renewed). */
#define FLEET_SQL_LEASE                                                                        \
    "INSERT INTO convfind_fleet_leases AS l (key, env, owner, host, expires_at) "               \
    "VALUES ($1, $2, $3, $4, clock_timestamp() + $5::bigint * interval '1 millisecond') "       \
    "ON CONFLICT (key, env) DO UPDATE SET owner = EXCLUDED.owner, host = EXCLUDED.host, "       \
    "expires_at = EXCLUDED.expires_at "                                                         \
    "WHERE l.expires_at <= clock_timestamp() OR l.owner = EXCLUDED.owner RETURNING 1"
#define FLEET_SQL_RELEASE                                                                      \
    "DELETE FROM convfind_fleet_leases WHERE key = $1 AND env = $2 AND owner = $3"
#define FLEET_SQL_RELEASE_ALL "DELETE FROM convfind_fleet_leases WHERE owner = $1"
/* A decision ($1 key, $2..$4 its environment, $5 algo, $6 JSON, $7 bad candidates,
 * $8 host, $9 time, $12 budget in ms, 0: unknown) and the end of lease ($1, $10
 * environment, $11 owner) in one
 * statement.  PUSH replaces the fleet's record (a new measurement), PUSH_KEEP does not
 * (a late push must not undo a newer one). */
#define FLEET_SQL_PUSH_HEAD                                                                    \
    "WITH put AS (INSERT INTO convfind_fleet_decisions AS d (key, library_version, "            \
    "backend_versions, device, algo, decision, bad_candidates, host, created_at, budget_ms) "   \
    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::bigint, NULLIF($12::double precision, 0)) "    \
    "ON CONFLICT (key, library_version, backend_versions, device) "
#define FLEET_SQL_PUSH_TAIL                                                                    \
    " RETURNING 1) DELETE FROM convfind_fleet_leases WHERE key = $1 AND env = $10 AND owner = $11"
#define FLEET_SQL_PUSH                                                                         \
    FLEET_SQL_PUSH_HEAD "DO UPDATE SET algo = EXCLUDED.algo, decision = EXCLUDED.decision, "   \
                        "bad_candidates = EXCLUDED.bad_candidates, host = EXCLUDED.host, "     \
                        "created_at = EXCLUDED.created_at, budget_ms = EXCLUDED.budget_ms"     \
        FLEET_SQL_PUSH_TAIL
#define FLEET_SQL_PUSH_KEEP FLEET_SQL_PUSH_HEAD "DO NOTHING" FLEET_SQL_PUSH_TAIL
/* $1 a text[] of keys, $2..$4 an environment: the keys the fleet has no record of. */
#define FLEET_SQL_MISSING                                                                      \
    "SELECT k FROM unnest($1::text[]) AS k WHERE NOT EXISTS (SELECT 1 FROM "                    \
    "convfind_fleet_decisions d WHERE d.key = k AND d.library_version = $2 AND "                \
    "d.backend_versions = $3 AND d.device = $4)"

/* One decision as it is pushed. */
typedef struct cf_fleet_row {
    const char *key;
    const cf_db_env *env;
    const char *algo, *json, *bad, *host;
    int64_t time;     /* Unix seconds */
    double budget_ms; /* 0: unknown */
} cf_fleet_row;

/* Connected, or connects when the retry time has come.  False when the fleet cannot be
 * used now. */
bool cf_fleet_ready(cf_db *db);

/* What the latest fault was ("" before the first). */
const char *cf_fleet_last_error(const cf_db *db);

/* True when the server has the schema (an INSPECT handle creates none). */
bool cf_fleet_has_tables(const cf_db *db);

/* Runs one statement on the connection (NULL when there is none); a failure is a
 * fault (fleet.h) and returns NULL. */
cf_pq_result *cf_fleet_run(cf_db *db, const char *what, const char *sql, int n,
                           const char *const *params);

/* Pushes one decision with FLEET_SQL_PUSH or FLEET_SQL_PUSH_KEEP; false after a fault. */
bool cf_fleet_push_one(cf_db *db, const char *sql, const cf_fleet_row *row);

/* Pushes this host's decisions of this environment that the fleet lacks (fleet_sync.c);
 * a fault stops it. */
void cf_fleet_sync(cf_db *db);

#endif /* CONVFIND_DB_FLEET_INTERNAL_H */
