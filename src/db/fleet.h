/*
 * fleet.h - the fleet tier: decisions shared by many machines through a PostgreSQL
 * server, between the user tier and the system tier (docs/db.md, "The fleet tier").
 *
 * The find path asks it, in this order: a lookup when the user tier has no record of
 * this environment (a hit of this environment is copied into the user tier, so the
 * next lookup is a local one and the machine keeps working from its own disk without
 * the server); a lease before measuring, so that of many machines missing one key at
 * once one measures; a push of what was measured, which also ends the lease.  What this
 * host measured and the fleet lacks (measured while the server was away, by this run
 * or an earlier one) is pushed whenever a connection is made.
 *
 * The server is never needed: a fault (unreachable, lost, no answer within the
 * timeout, restarted, refusing a statement) closes the connection, is reported once
 * per handle (one warning) and counted, and no connection is tried again for
 * fleet_retry_ms; meanwhile the fleet tier is a miss, leases are this machine's alone
 * and decisions are stored locally only.  A server whose schema is newer than this
 * build's is read, never written.  The connection string is never printed: messages
 * name its host, port, database and user only, and libpq's messages lose its secrets.
 *
 * Every function here is called with the handle's mutex held (db_internal.h); each
 * server round trip is bounded by fleet_timeout_ms.
 */
#ifndef CONVFIND_DB_FLEET_H
#define CONVFIND_DB_FLEET_H

#include "db/db_internal.h"

/* Opens the fleet tier named by `url` (cfg.fleet, else cfg.locations.fleet_db; NULL or
 * empty for none) into db->fleet and connects; only USE handles and cfg.fleet_only ones have
 * one.  Fails only with cfg.fleet_only (the tools' `--fleet`), when
 * the server cannot be used as the mode needs, or for out-of-memory; otherwise a server
 * that cannot be reached is a warning and the handle works without it. */
convfind_status cf_fleet_open(cf_db *db, const char *url);

/* Gives back this handle's leases and closes the connection.  NULL fleet allowed. */
void cf_fleet_close(cf_db *db);

/* The fleet tier as messages name it (no secrets). */
const char *cf_fleet_where(const cf_db *db);

/* The fleet's best record of `key`: this environment's, else the newest of another.
 * True when there is one; `out` (owned by the caller) and *exact are set.  A record of
 * this environment is copied into the user tier. */
bool cf_fleet_lookup(cf_db *db, const char *key, cf_decision *out, bool *exact);

/* Takes the fleet-wide lease of `key` in this environment.  False only when another
 * machine (or handle) holds an unexpired one; true also when the fleet cannot be used
 * (the lease only saves work, never guards correctness). */
bool cf_fleet_lease(cf_db *db, const char *key);

/* Gives back this handle's lease of `key`. */
void cf_fleet_release(cf_db *db, const char *key);

/* Pushes `n` decisions just measured here (rows as the user tier stores them), each
 * replacing the fleet's record of this environment and ending this handle's lease. */
void cf_fleet_push(cf_db *db, const cf_db_row *rows, size_t n);

/* The fleet counters of cf_db_stats. */
void cf_fleet_counters(const cf_db *db, cf_db_stats *out);

/* With cfg.fleet_only: the records, statistics, import and pruning of the fleet tier
 * itself (cf_db_foreach, cf_db_get_stats, cf_db_import, cf_db_prune). */
convfind_status cf_fleet_foreach(cf_db *db, const char *key, cf_db_record_fn fn, void *arg);
convfind_status cf_fleet_get_stats(cf_db *db, cf_db_stats *out);
convfind_status cf_fleet_put_records(cf_db *db, const cf_db_record *records, size_t n);
convfind_status cf_fleet_prune(cf_db *db, size_t *removed);

#endif /* CONVFIND_DB_FLEET_H */
