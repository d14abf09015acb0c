/*
 * db.h - the persistent find-db: decisions stored in SQLite, shared by processes.
 *
 * Two tiers: a read-only system database (shipped with a deployment) under the
 * writable user database; lookups try the user tier first.  Where the user database
 * lives: the explicit path, else $CONVFIND_DB_PATH, else $XDG_CACHE_HOME/convfind/,
 * else ~/.cache/convfind/, else memory (DESIGN.md non-negotiable 7; docs/db.md has the
 * schema and the rules).  The variables are read by the caller (core/env.c) and given
 * in cf_db_config.locations: nothing here reads the environment.
 *
 * A record is used only when it parses and, through cf_db_config.usable, when this build
 * can run it for its key (known algorithms, applicable to the key's problem, not every
 * candidate failed): one that cannot is skipped by lookups (a miss), refused by import
 * (naming the line), counted as unreadable by listings and verification, and deleted by
 * prune.
 *
 * A file the user named (the explicit path or $CONVFIND_DB_PATH) is never swapped for
 * memory: a named file that cannot be used is an error of cf_db_open.  At the default
 * location a file that cannot be used gives way to memory with one warning.  A damaged
 * or foreign file is renamed aside ("<file>.quarantine-<time>-<pid>") with one warning
 * and a fresh file takes its place, but only by a process that could write it; a file
 * this process cannot write, or one with a newer schema, is used read-only with one
 * warning and never moved.  After opening, a database problem never fails a lookup or a
 * store: a busy database is retried later, and a decision that still could not be
 * stored is counted (cf_db_flush, cf_db_stats.unstored).
 *
 * An optional fleet tier on a PostgreSQL server sits between the two (db/fleet.h):
 * lookups go user tier, fleet tier, system tier.
 *
 * Thread safety: a cf_db may be used by any number of threads at once; each call takes
 * the handle's mutex for the duration of its SQLite work.  Handles, of one process or
 * of several, coordinate through SQLite's locks (WAL mode, busy timeout) and the lease
 * table, whose leases name their handle.  A handle must not be used across fork(); open
 * one per process.
 */
#ifndef CONVFIND_DB_H
#define CONVFIND_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convfind.h"
#include "decision/decision.h"
#include "decision/record.h"
#include "problem/key.h"
#include "util/log.h"

#define CF_DB_SCHEMA_VERSION 3 /* PRAGMA user_version of the files this build writes */
#define CF_DB_FILE_NAME "finddb.sqlite"
#define CF_DB_MEMORY ":memory:" /* as a path: in-memory on purpose, without a warning */

typedef struct cf_db cf_db;

/* What the handle is for, which decides what it may do to the file. */
typedef enum cf_db_mode {
    CF_DB_USE = 0, /* a context's: lookups and stores; quarantine and memory as above */
    CF_DB_INSPECT, /* listing and verification: opens read-only and changes nothing (no
                      directory, file, sidecar or quarantine); a missing file reads as
                      empty; any problem with the file is an error */
    CF_DB_MAINTAIN /* import, prune, vacuum: the file must be written; every problem that
                      would mean read-only use or memory is an error instead */
} cf_db_mode;

/* What the environment says about the locations: $CONVFIND_DB_PATH, $CONVFIND_SYSTEM_DB,
 * $XDG_CACHE_HOME, $HOME and $CONVFIND_FLEET_DB as the caller read them (NULL or "":
 * unset).  Read during cf_db_open only. */
typedef struct cf_db_locations {
    const char *db_path, *system_db, *xdg_cache_home, *home, *fleet_db;
} cf_db_locations;

/* Whether decision `d`, stored for `key`, can be used by this build: false with the
 * reason, one line, in `why` when it cannot.  Called with the handle's lock held; must
 * not call back into the handle. */
typedef bool (*cf_db_usable_fn)(void *arg, const char *key, const cf_decision *d, char *why,
                                size_t size);

typedef struct cf_db_config {
    const char *path;        /* user database file; NULL: the location order above */
    const char *system_path; /* read-only tier; NULL: locations.system_db, else none */
    cf_db_locations locations;
    convfind_db_env_policy env_policy;
    cf_db_env env;           /* the environment decisions are made in now */
    int busy_timeout_ms;     /* how long a locked database is waited for; 0: 5000 */
    int lease_ms;            /* how long a lease lives without renewal; 0: 120000 */
    bool quiet;              /* count warnings without logging them (tests) */
    cf_log log;              /* where warnings go (all zero: stderr) */
    cf_db_mode mode;         /* CF_DB_USE unless set */
    cf_db_usable_fn usable;  /* NULL: every record that parses is used */
    void *usable_arg;
    /* The fleet tier (db/fleet.h, docs/db.md): a PostgreSQL connection string; NULL:
     * locations.fleet_db; "" (either): none. */
    const char *fleet;
    int fleet_timeout_ms;    /* bound on connecting and on each statement; 0: 2000 */
    int fleet_retry_ms;      /* after a fault, no new connection before this; 0: 10000 */
    int fleet_lease_ms;      /* how long a fleet lease lives; 0: lease_ms */
    bool fleet_only;         /* tools: foreach, stats, import and prune act on the fleet
                                tier (which must answer); path should be ":memory:" */
} cf_db_config;

/* A config for decisions made on the host `host` (the environment cf_db_env_make()
 * describes; algo/registry.h, cf_host_fingerprint, detects it), policy RETUNE, mode USE
 * and the default timeouts. */
void cf_db_config_init(cf_db_config *config, const cf_fingerprint *host);

/* Opens both tiers.  Fails (CONVFIND_ERR_IO, the message names the file and the reason)
 * when the user tier is a file the user named, or the mode is INSPECT or MAINTAIN, and
 * that file cannot be used as the mode needs: an empty path, not a regular file, a
 * directory that cannot be created, no permission, damaged (INSPECT, MAINTAIN), locked
 * past the busy timeout.  Otherwise every file problem ends in a working handle and at
 * most one warning each; a system tier that cannot be used is skipped with one
 * warning. */
convfind_status cf_db_open(const cf_db_config *config, cf_db **out);

/* Stores what is still pending (cf_db_flush), closes the handle and releases its
 * leases (one that cannot be deleted no longer counts as live).  NULL allowed. */
void cf_db_close(cf_db *db);

/* The user database file (also a missing one under INSPECT), or CF_DB_MEMORY.  Valid
 * until the handle is closed. */
const char *cf_db_location(const cf_db *db);
/* The user tier is a file (read-only or not). */
bool cf_db_is_persistent(const cf_db *db);
/* INSPECT: the file exists.  Other modes: the same as cf_db_is_persistent.  With
 * cfg.fleet_only: true (the fleet tier answered when the handle was opened). */
bool cf_db_exists(const cf_db *db);
/* Stores are written to the file (not read-only, not memory). */
bool cf_db_is_writable(const cf_db *db);
/* The system tier's file while it is open, else NULL.  Valid until the handle is closed. */
const char *cf_db_system_location(const cf_db *db);

/* Decisions this handle has written (to its file, or to the memory asked for) and those
 * it could not store since it was opened; cheap, unlike cf_db_get_stats. */
void cf_db_store_counts(const cf_db *db, uint64_t *stored, uint64_t *unstored);

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
 * with how each was measured (budget, spread, margin: confidence.h), and releases this
 * handle's leases on those keys in the same transaction.  A busy
 * database (another process holds the write lock past the busy timeout) keeps the
 * decisions pending: they are written with the next store or by cf_db_flush.  A
 * decision that cannot reach the file (read-only, full disk, memory although a file was
 * wanted) is counted as unstored, with one warning.  Fails only for bad arguments or
 * out-of-memory. */
convfind_status cf_db_store(cf_db *db, const char *const *keys, const cf_decision *decisions,
                            int n);

/* Writes the pending decisions now, waiting up to the busy timeout, and counts those
 * that still could not be written as unstored.  Returns the number of decisions this
 * handle could not store since it was opened.  NULL: 0. */
size_t cf_db_flush(cf_db *db);

/* What the find path asks of cf_db_begin. */
typedef struct cf_db_request {
    int wait_ms; /* how long to wait for another handle measuring the key */
    /* Whether a stored decision of this environment may be used as it is (NULL: every
     * one may).  One that may not (low confidence, or a re-measure asked for) is measured
     * again under the key's lease: CF_DB_ACTION_RETIME. */
    bool (*usable)(const cf_decision *d, void *arg);
    void *usable_arg;
    /* When nothing is stored for the key, a record of a compatible key (the same problem
     * measured with the same backend and ISA level, on another CPU model or with another
     * thread count) may seed a re-time of its top candidates: CF_DB_ACTION_SEED.  Not
     * under db_env_policy IGNORE. */
    bool similar;
} cf_db_request;

/* What the find path does after a miss in its in-memory cache (cf_db_begin). */
typedef enum cf_db_action {
    CF_DB_ACTION_USE,       /* `out` is a stored decision: use it as it is */
    CF_DB_ACTION_RETIME,    /* `out` is a stored decision of this environment that is not
                               usable as it is; this handle holds the lease: measure again,
                               from it as the incumbent */
    CF_DB_ACTION_RETUNE,    /* `out` is this key's decision from another environment; this
                               handle holds the lease: re-time its top candidates */
    CF_DB_ACTION_SEED,      /* `out` is a compatible key's decision; this handle holds the
                               lease: re-time its top candidates */
    CF_DB_ACTION_BENCHMARK, /* nothing stored; this handle holds the lease: run Find */
    CF_DB_ACTION_HEURISTIC  /* another live handle (of this or another process) is still
                               measuring after wait_ms, and nothing usable is stored */
} cf_db_action;

/* The whole persistent step of a miss: look up; unless a usable decision is stored,
 * take the key's lease, or wait up to req->wait_ms for the live handle holding it and
 * use what it stores (past the wait: a stored decision although not usable, else the
 * heuristic).  After RETIME, RETUNE, SEED or BENCHMARK the caller must call
 * cf_db_finish (with the result, or NULL when Find failed) so the lease is released.
 * `out` as for cf_db_lookup. */
cf_db_action cf_db_begin(cf_db *db, const char *key, const cf_db_request *req, cf_decision *out);

/* Stores `decision` for `key` (NULL: stores nothing) and releases the lease. */
void cf_db_finish(cf_db *db, const char *key, const cf_decision *decision);

/* The lease primitives under cf_db_begin, for tests and tools.  acquire sets *acquired
 * to false when another live handle (of this process, or of a live process on this or
 * another host) holds an unexpired lease; this handle's own lease is renewed. */
convfind_status cf_db_lease_acquire(cf_db *db, const char *key, bool *acquired);
void cf_db_lease_release(cf_db *db, const char *key);

/* Largest compiled form the database keeps (bytes); larger ones are not stored. */
#define CF_DB_ARTIFACT_MAX (64u << 20)

/* Stores `size` bytes at `blob` as the compiled form of algorithm `algo` for `key`, made in
 * this handle's environment (cf_db_config.env: library version, backends, device), replacing
 * any earlier one for the same key, environment and algorithm.  User tier only (never the
 * system or fleet tier).  Best effort like cf_db_store: a busy or read-only database, or a
 * blob over CF_DB_ARTIFACT_MAX, stores nothing and returns CONVFIND_OK (a read-only or
 * memory-fallback handle included); only invalid arguments (NULL db/key/algo/blob, a key
 * cf_db_check_key refuses, size 0) are errors.  Thread-safe. */
convfind_status cf_db_artifact_put(cf_db *db, const char *key, const char *algo,
                                   const void *blob, size_t size);

/* The compiled form stored for `key` and `algo` in this handle's environment: *blob
 * (malloc'ed, the caller frees) and *size, or *blob = NULL and *size = 0 when there is none
 * (or the database cannot be read now).  User tier only.  Errors: NULL arguments, and
 * out-of-memory for the copy.  Thread-safe. */
convfind_status cf_db_artifact_get(cf_db *db, const char *key, const char *algo,
                                   void **blob, size_t *size);

/* Calls `fn` for every readable (and usable) record of the user tier (with `key` !=
 * NULL: of that key only), in key order.  A nonzero return from `fn` stops the walk. */
typedef int (*cf_db_record_fn)(const cf_db_record *record, void *arg);
convfind_status cf_db_foreach(cf_db *db, const char *key, cf_db_record_fn fn, void *arg);

/* The same for the system tier; nothing when there is none. */
convfind_status cf_db_foreach_system(cf_db *db, const char *key, cf_db_record_fn fn, void *arg);

typedef struct cf_db_stats {
    size_t records;        /* user tier, all environments */
    size_t current;        /* user tier, this environment */
    size_t foreign;        /* user tier, other environments */
    size_t unreadable;     /* rows whose decision does not parse, or this build cannot use */
    size_t leases;         /* leases held now (live or not) */
    size_t system_records; /* system tier, all environments */
    int64_t file_bytes;    /* size of the user file (-1 in memory or when missing) */
    size_t pending;        /* decisions waiting for a busy database */
    size_t unstored;       /* decisions that could not be stored (see cf_db_store) */
    size_t stored;         /* decisions this handle has written (cf_db_store_counts) */
    size_t artifacts;      /* compiled forms in the user tier, all environments */
    int64_t artifact_bytes; /* their bytes */
    /* The fleet tier (all 0 without one) */
    bool fleet;            /* configured */
    bool fleet_connected;  /* connected now */
    bool fleet_read_only;  /* its schema is newer than this build's */
    uint64_t fleet_hits;   /* lookups answered by it (this environment) */
    uint64_t fleet_pushed; /* decisions pushed to it */
    uint64_t fleet_faults; /* faults: no connection, lost, timed out, refused */
} cf_db_stats;

convfind_status cf_db_get_stats(cf_db *db, cf_db_stats *out);

/* Only the fleet_* members of cf_db_stats (the others zero): cheap, no records read. */
void cf_db_get_fleet_stats(cf_db *db, cf_db_stats *out);

/* Writes every user-tier record as JSON Lines through `write` (one call per line, its
 * newline included); *count gets the number.  A nonzero return of `write` stops the
 * export with CONVFIND_ERR_IO. */
convfind_status cf_db_export(cf_db *db, convfind_write_fn write, void *user, size_t *count);

/* Reads JSON Lines through `read` (`name` is for messages) and stores every record in
 * one transaction, keeping the records' own environment and provenance.  All or nothing:
 * a bad line (one longer than 1 MiB is refused as soon as it is, without reading the
 * rest; a record this build cannot use), a read error or an allocation failure returns
 * an error naming the line, and nothing is stored. */
convfind_status cf_db_import(cf_db *db, convfind_read_fn read, void *user, const char *name,
                             size_t *count);

/* Deletes records of other environments, unreadable rows, dead or expired leases, and
 * compiled forms (cf_db_artifact_put) of other environments or whose key has no record of
 * this environment left; *removed counts the records and compiled forms. */
convfind_status cf_db_prune(cf_db *db, size_t *removed);

/* SQLite's integrity check plus a parse (and usability check) of every record.
 * CONVFIND_ERR_IO naming the first problem (on one line) when there is one, also when
 * the file does not exist; *bad gets the number of unreadable records.  Changes
 * nothing. */
convfind_status cf_db_verify(cf_db *db, size_t *bad);

/* Rebuilds the file to its minimal size (VACUUM). */
convfind_status cf_db_vacuum(cf_db *db);

#endif /* CONVFIND_DB_H */
