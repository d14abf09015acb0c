/*
 * db_internal.h - the cf_db handle and the helpers its source files share:
 * db_open.c (the handle, locations, warnings, lease owners), db_file.c (opening and
 * checking files, read-only snapshots, quarantine, recovery during a query), db_rows.c
 * (the decisions table's row format), db_ops.c (lookup, store, pending writes, leases),
 * db_similar.c (records of compatible keys), db_artifacts.c (compiled forms) and
 * db_admin.c (listing, import/export, maintenance).
 */
#ifndef CONVFIND_DB_INTERNAL_H
#define CONVFIND_DB_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <sys/types.h>

#include "db/db.h"
#include "util/error.h"

/* Long enough for a whole key (CF_DB_KEY_MAX) and an environment in one warning. */
#define CF_DB_WARNING_MAX 5120

typedef struct cf_fleet cf_fleet;

/* One decision as it is written: what a store needs and what a retry keeps. */
typedef struct cf_db_row {
    char *key, *algo, *json, *bad;
    double budget_ms;      /* 0: unknown, written as NULL */
    double spread, margin; /* confidence.h; margin only with a runner-up (else NULL) */
    bool runner_up;
} cf_db_row;

struct cf_db {
    pthread_mutex_t mu;   /* guards everything below; SQLite is opened NOMUTEX */
    cf_db_config cfg;     /* cfg.path / cfg.system_path point at the copies below */
    char *path_copy, *system_copy;
    char *system_open;    /* the system tier's file while `sys` is open */
    char *file;           /* the resolved user file; NULL when memory was asked for or
                             there is no location at all */
    bool named;           /* `file` came from cfg.path or $CONVFIND_DB_PATH */
    bool memory_wanted;   /* memory was asked for (":memory:"): no loss to report */
    sqlite3 *user;        /* never NULL after cf_db_open */
    sqlite3 *sys;         /* NULL when there is no usable system tier */
    bool persistent;      /* user is `file` */
    bool writable;        /* user may be written (the file read-write, or memory) */
    bool exists;          /* INSPECT: `file` exists; user is an empty database if not */
    bool snapshot;        /* user was opened immutable (no other process had it open):
                             reopened when that changes (db_file.c) */
    dev_t dev;            /* identity of the file user has open, so a quarantine never */
    ino_t ino;            /* renames a fresh file another process put in its place */
    int64_t snap_mtime_ns, snap_size;
    cf_db_row *pending;   /* decisions waiting for a busy database */
    size_t n_pending;
    int64_t retry_at_ms;  /* no write is tried before this after the database was busy */
    size_t unstored;      /* decisions that never reached the file */
    size_t stored;        /* decisions written */
    char host[256];
    int64_t owner;        /* this handle's identity in the lease table
                             (cf_db_owner_open): unique among this process's handles */
    cf_fleet *fleet;      /* the fleet tier (fleet.h); NULL without one */
    int warnings;
    char last_warning[CF_DB_WARNING_MAX];
    bool warned_foreign, warned_unreadable, warned_read, warned_busy, warned_unstored;
    bool warned_artifact; /* a compiled form could not be stored (db_artifacts.c) */
};

/* Logs the warning (unless quiet; cfg.log) on one line, control characters replaced by
 * spaces, and counts it.  Caller holds mu. */
void cf_db_warn(cf_db *db, const char *fmt, ...) CF_PRINTF(2, 3);

/* Replaces every control character of `s` (newlines of SQLite's integrity reports)
 * by a space, so that a message stays on one line. */
void cf_db_one_line(char *s);

/* One unit of SQLite work on a connection; returns an SQLite result code. */
typedef int (*cf_db_op)(cf_db *db, sqlite3 *conn, void *arg);

/* Runs `op` on the user tier.  A snapshot is reopened first if another process has
 * opened the file since; a damaged file found by `op` is quarantined and replaced (only
 * on a handle that writes the file) and `op` runs again.  Returns the final SQLite code,
 * SQLITE_OK for OK, DONE and ROW.  Nothing else is done about a failure: the caller
 * decides.  Caller holds mu. */
int cf_db_run(cf_db *db, cf_db_op op, void *arg);

/* Opens the user tier for cfg.mode (db_file.c): CONVFIND_OK, or an error naming the
 * file when the mode or a named file forbids the fallback. */
convfind_status cf_db_open_user(cf_db *db);

/* Opens the system tier, or skips it with one warning. */
void cf_db_open_system(cf_db *db);

/* Replaces the user connection by an empty in-memory database. */
void cf_db_open_memory(cf_db *db);

/* SQLITE_BUSY or SQLITE_LOCKED, with any extended code. */
bool cf_db_rc_busy(int rc);

/* Parses a stored decision of `key` (`len` bytes of JSON) into `out` and checks that
 * this build can use it (cfg.usable).  CONVFIND_ERR_IO naming the problem otherwise,
 * with `out` empty. */
convfind_status cf_db_load_decision(const cf_db *db, const char *key, const char *json,
                                    size_t len, cf_decision *out);

/* The usability check alone (cfg.usable; none: usable): CONVFIND_ERR_IO naming why not. */
convfind_status cf_db_check_usable(const cf_db *db, const char *key, const cf_decision *d);

/* A read of the user tier (`what`: its file) that failed with `rc` is a miss; it is said
 * once, and never changes the handle.  Caller holds mu. */
void cf_db_read_failed(cf_db *db, const char *what, int rc);

/* Execs SQL without results; returns the SQLite code. */
int cf_db_exec(sqlite3 *conn, const char *sql);

/* Wall-clock time in milliseconds since the Unix epoch. */
int64_t cf_db_now_ms(void);

/* True when a lease row (pid, owner, host, expires_ms) still protects its key from
 * this handle: unexpired, not this handle's own (a handle may renew its lease), and on
 * this host held by a process that still exists and, in this process, by a handle that
 * is still open.  So single flight holds between the contexts of one process as between
 * processes; a killed process's or a closed handle's lease blocks nobody. */
bool cf_db_lease_live(const cf_db *db, int64_t pid, int64_t owner, const char *host,
                      int64_t expires_ms);

/* A new lease owner identity for a handle of this process, registered as open until
 * cf_db_owner_close; and whether an owner of this process is open.  Thread-safe. */
int64_t cf_db_owner_open(void);
void cf_db_owner_close(int64_t owner);
bool cf_db_owner_is_open(int64_t owner);

/* The schema version of a connection's file (PRAGMA user_version; 0 if unreadable). */
int cf_db_schema_of(sqlite3 *conn);

/* What to select for a record's budget on `conn`: the column, or NULL in a file of
 * schema 1 (not migrated because it is only read). */
const char *cf_db_budget_column(sqlite3 *conn);

/* A row selected as cf_db_budget_column: the budget in milliseconds, 0 when unknown or
 * out of range. */
double cf_db_column_budget(sqlite3_stmt *st, int col);

/* Encodes decision `d` of `key` as the row a store writes; frees a row. */
convfind_status cf_db_row_make(const char *key, const cf_decision *d, cf_db_row *r);
void cf_db_row_free(cf_db_row *r);

/* The one INSERT OR REPLACE of a decision row (store and import), and one execution of
 * it for row `r` stamped with environment, host and time.  SQLite codes, SQLITE_OK for
 * a row written. */
int cf_db_insert_prepare(sqlite3 *conn, sqlite3_stmt **ins);
int cf_db_insert(sqlite3_stmt *ins, const cf_db_row *r, const cf_db_env *env, const char *host,
                 int64_t time);

/* The best record of a key compatible with `key` on `conn` (db_similar.c): same problem,
 * same backend and ISA level, another CPU model or thread count.  Returns an SQLite
 * code; *found says whether `out` (owned by the caller then) holds one. */
int cf_db_similar_lookup(sqlite3 *conn, const char *key, cf_decision *out, bool *found);

/* A cf_db_record_fn counting `r` into the records, current and foreign members of the
 * cf_db_stats in ((void **)arg)[0], "current" meaning the environment of the cf_db in
 * ((void **)arg)[1]: the statistics of the user tier and of the fleet tier. */
int cf_db_count_record(const cf_db_record *r, void *arg);

/* Writes `n` whole records (their own environment and provenance) in one transaction,
 * replacing records of the same key and environment: import, and the fleet tier's
 * copies.  Returns an SQLite code. */
int cf_db_put_records(sqlite3 *conn, const cf_db_record *records, size_t n);

/* Deletes the compiled forms (db_artifacts.c) of other environments than the handle's and
 * those whose key and environment have no decision left: part of prune's transaction.
 * Nothing on a file without the table.  *removed gets the number; SQLite code. */
int cf_db_prune_artifacts(cf_db *db, sqlite3 *conn, size_t *removed);

/* The number of compiled forms on `conn` and their bytes (0 without the table). */
void cf_db_artifact_totals(sqlite3 *conn, size_t *count, int64_t *bytes);

#endif /* CONVFIND_DB_INTERNAL_H */
