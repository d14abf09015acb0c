/*
 * db_internal.h - the cf_db handle and the helpers its three source files share:
 * db_open.c (locations, schema, quarantine, in-memory fallback), db_ops.c (lookup,
 * store, leases) and db_admin.c (listing, import/export, maintenance).
 */
#ifndef CONVFIND_DB_INTERNAL_H
#define CONVFIND_DB_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <sys/types.h>

#include "db/db.h"
#include "util/error.h"

struct cf_db {
    pthread_mutex_t mu;   /* guards everything below; SQLite is opened NOMUTEX */
    cf_db_config cfg;     /* cfg.path / cfg.system_path point at the copies below */
    char *path_copy, *system_copy;
    char *file;           /* the resolved user file, or NULL when memory was asked for */
    sqlite3 *user;        /* never NULL after cf_db_open */
    sqlite3 *sys;         /* NULL when there is no usable system tier */
    bool persistent;      /* user is `file`, not memory */
    dev_t dev;            /* identity of the file user has open, so a quarantine never */
    ino_t ino;            /* renames a fresh file another process put in its place */
    char host[256];
    int warnings;
    char last_warning[512];
    bool warned_foreign, warned_unreadable;
};

/* Prints "convfind: warning: ..." (unless quiet) and counts it.  Caller holds mu. */
void cf_db_warn(cf_db *db, const char *fmt, ...) CF_PRINTF(2, 3);

/* One unit of SQLite work on a connection; returns an SQLite result code. */
typedef int (*cf_db_op)(cf_db *db, sqlite3 *conn, void *arg);

/* Runs `op` on the user tier and recovers from what the file did to it: a damaged file
 * is quarantined and replaced, an unusable one (read-only, full, unlockable) gives way
 * to memory, each with one warning, and `op` runs again.  Returns the final SQLite
 * code.  Caller holds mu. */
int cf_db_run(cf_db *db, cf_db_op op, void *arg);

/* Execs SQL without results; returns the SQLite code. */
int cf_db_exec(sqlite3 *conn, const char *sql);

/* Wall-clock time in milliseconds since the Unix epoch. */
int64_t cf_db_now_ms(void);

/* True when a lease row (pid, host, expires_ms) still protects its key: unexpired, and
 * on this host its process still exists.  Our own process's leases count as not held
 * (a process may renew its own lease). */
bool cf_db_lease_live(const cf_db *db, int64_t pid, const char *host, int64_t expires_ms);

#endif /* CONVFIND_DB_INTERNAL_H */
