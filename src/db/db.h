/*
 * db.h - the persistent find-db: decisions stored in SQLite, shared by processes.
 *
 * Two tiers: a read-only system database (shipped with a deployment) under the
 * writable user database; lookups try the user tier first.  Where the user database
 * lives: the explicit path, else $CONVFIND_DB_PATH, else $XDG_CACHE_HOME/convfind/,
 * else ~/.cache/convfind/, else memory (DESIGN.md non-negotiable 7; docs/db.md has the
 * schema and the rules).
 *
 * The database never makes a call fail.  A location that cannot be written, a full
 * disk or a lock that cannot be taken turns the handle into an in-memory database with
 * one warning; a damaged, foreign or newer-schema file is renamed aside
 * ("<file>.quarantine-<time>-<pid>") with one warning and a fresh file takes its place.
 * Functions therefore return an error status only for bad arguments, out-of-memory, or
 * (import/export) a bad file the caller named.
 *
 * Thread safety: a cf_db may be used by any number of threads at once; each call takes
 * the handle's mutex for the duration of its SQLite work.  Processes coordinate through
 * SQLite's locks (WAL mode, busy timeout) and the lease table.  A handle must not be
 * used across fork(); open one per process.
 */
#ifndef CONVFIND_DB_H
#define CONVFIND_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "convfind.h"
#include "decision/decision.h"
#include "decision/record.h"
#include "problem/key.h"

#define CF_DB_SCHEMA_VERSION 1 /* PRAGMA user_version of the files this build writes */
#define CF_DB_FILE_NAME "finddb.sqlite"
#define CF_DB_MEMORY ":memory:" /* as a path: in-memory on purpose, without a warning */

typedef struct cf_db cf_db;

typedef struct cf_db_config {
    const char *path;        /* user database file; NULL: the location order above */
    const char *system_path; /* read-only tier; NULL: $CONVFIND_SYSTEM_DB, else none */
    convfind_db_env_policy env_policy;
    cf_db_env env;           /* the environment decisions are made in now */
    int busy_timeout_ms;     /* how long a locked database is waited for; 0: 5000 */
    int lease_ms;            /* how long a lease lives without renewal; 0: 120000 */
    bool quiet;              /* count warnings without printing them (tests, CLI --quiet) */
} cf_db_config;

/* A config for decisions made on the host `host` (the environment cf_db_env_make()
 * describes; algo/registry.h, cf_host_fingerprint, detects it), policy RETUNE and the
 * default timeouts. */
void cf_db_config_init(cf_db_config *config, const cf_fingerprint *host);

/* Opens both tiers.  Fails only for NULL arguments or out-of-memory; every file
 * problem ends in a working (maybe in-memory) handle and at most one warning each. */
convfind_status cf_db_open(const cf_db_config *config, cf_db **out);

/* Closes the handle; releases this process's leases.  NULL allowed. */
void cf_db_close(cf_db *db);

/* The user database file in use, or CF_DB_MEMORY.  Valid until the next call. */
const char *cf_db_location(const cf_db *db);
bool cf_db_is_persistent(const cf_db *db);

/* Warnings issued by this handle so far, and the text of the latest ("" if none). */
int cf_db_warning_count(const cf_db *db);
void cf_db_last_warning(const cf_db *db, char *buf, size_t size);

typedef enum cf_db_found {
    CF_DB_MISS = 0,   /* no usable record */
    CF_DB_HIT = 1,    /* a record from this environment */
    CF_DB_FOREIGN = 2 /* only a record from another environment (policy RETUNE): its
                         candidates are the ones to re-time */
} cf_db_found;

/* Looks `key` up, user tier first.  On HIT or FOREIGN `out` holds a decision the caller
 * owns (cf_decision_clear); on MISS it is empty. */
convfind_status cf_db_lookup(cf_db *db, const char *key, cf_decision *out, cf_db_found *found);

/* Stores `n` decisions in one transaction, stamped with the environment, host and time,
 * and releases this process's leases on those keys in the same transaction. */
convfind_status cf_db_store(cf_db *db, const char *const *keys, const cf_decision *decisions,
                            int n);

/* What the find path does after a miss in its in-memory cache (cf_db_begin). */
typedef enum cf_db_action {
    CF_DB_ACTION_USE,       /* `out` is a stored decision: use it as it is */
    CF_DB_ACTION_RETUNE,    /* `out` is a foreign decision: re-time its top candidates */
    CF_DB_ACTION_BENCHMARK, /* nothing stored; this process holds the lease: run Find */
    CF_DB_ACTION_HEURISTIC  /* another live process is still benchmarking after wait_ms */
} cf_db_action;

/* The whole persistent step of a miss: look up; if nothing is stored, take the key's
 * lease, or wait up to `wait_ms` for the live process holding it and use what it
 * stores.  After RETUNE or BENCHMARK the caller must call cf_db_finish (with the result,
 * or NULL when Find failed) so the lease is released.  `out` as for cf_db_lookup. */
cf_db_action cf_db_begin(cf_db *db, const char *key, int wait_ms, cf_decision *out);

/* Stores `decision` for `key` (NULL: stores nothing) and releases the lease. */
void cf_db_finish(cf_db *db, const char *key, const cf_decision *decision);

/* The lease primitives under cf_db_begin, for tests and tools.  acquire sets *acquired
 * to false when a live process on this or another host holds an unexpired lease. */
convfind_status cf_db_lease_acquire(cf_db *db, const char *key, bool *acquired);
void cf_db_lease_release(cf_db *db, const char *key);

/* Calls `fn` for every readable record of the user tier (with `key` != NULL: of that
 * key only), in key order.  A nonzero return from `fn` stops the walk. */
typedef int (*cf_db_record_fn)(const cf_db_record *record, void *arg);
convfind_status cf_db_foreach(cf_db *db, const char *key, cf_db_record_fn fn, void *arg);

typedef struct cf_db_stats {
    size_t records;        /* user tier, all environments */
    size_t current;        /* user tier, this environment */
    size_t foreign;        /* user tier, other environments */
    size_t unreadable;     /* rows whose decision does not parse */
    size_t leases;         /* leases held now (live or not) */
    size_t system_records; /* system tier, all environments */
    int64_t file_bytes;    /* size of the user file (-1 in memory) */
} cf_db_stats;

convfind_status cf_db_get_stats(cf_db *db, cf_db_stats *out);

/* Writes every user-tier record as JSON Lines to `f`; *count gets the number. */
convfind_status cf_db_export(cf_db *db, FILE *f, size_t *count);

/* Reads JSON Lines from `f` (`name` is for messages) and stores every record in one
 * transaction, keeping the records' own environment and provenance.  All or nothing:
 * a bad line returns CONVFIND_ERR_IO naming the line and field, and nothing is stored. */
convfind_status cf_db_import(cf_db *db, FILE *f, const char *name, size_t *count);

/* Deletes records of other environments, unreadable rows and dead or expired leases. */
convfind_status cf_db_prune(cf_db *db, size_t *removed);

/* SQLite's integrity check plus a parse of every record.  CONVFIND_ERR_IO naming the
 * first problem when there is one; *bad gets the number of unreadable records. */
convfind_status cf_db_verify(cf_db *db, size_t *bad);

/* Rebuilds the file to its minimal size (VACUUM). */
convfind_status cf_db_vacuum(cf_db *db);

#endif /* CONVFIND_DB_H */
