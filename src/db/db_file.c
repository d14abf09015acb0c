/*
 * db_file.c - opening and checking the database files, and what happens when a file
 * lets us down (see db.h and docs/db.md).
 *
 * The reaction depends on the handle's mode and on whether the user named the file:
 *   damaged, or another application's SQLite file, and this process can write it
 *       -> renamed to "<file>.quarantine-<time>-<pid>" (with its -wal and -shm, whose
 *          frames must never be replayed into a new file), a fresh file in its place;
 *   a newer build's schema, or a file this process can read but not write
 *       -> used read-only with one warning, never moved: an older build must not
 *          destroy what a newer one wrote, nor one user another user's file;
 *   anything else (not a regular file, no permission, a lock never released)
 *       -> an error when the file was named or the mode needs the file, else memory
 *          with one warning.
 * A read-only SQLite connection to a WAL database creates its -wal and -shm files when
 * they are missing, owned by whoever ran it, and such files lock the owner out.  So a
 * file is only read through them when they exist already (another process has the
 * database open); otherwise no process has it open and it is read as an immutable
 * snapshot, which is reopened as soon as another process opens or changes the file.
 */
#include "db/db_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* 'CFDB': marks our files, so another application's SQLite file is never migrated. */
#define CF_DB_APPLICATION_ID 0x43464442

/* migrations[v] brings a file from schema version v to v + 1.  A new schema version
 * appends one entry; a file is migrated step by step inside one transaction.  A new
 * file goes through every step, so the steps are the only definition of the schema. */
static const char *const migrations[CF_DB_SCHEMA_VERSION] = {
    "CREATE TABLE decisions("
    " key TEXT NOT NULL,"
    " library_version TEXT NOT NULL,"
    " backend_versions TEXT NOT NULL,"
    " device TEXT NOT NULL,"
    " algo TEXT NOT NULL,"
    " decision TEXT NOT NULL,"
    " bad_candidates TEXT NOT NULL,"
    " host TEXT NOT NULL,"
    " created_at INTEGER NOT NULL,"
    " PRIMARY KEY (key, library_version, backend_versions, device));"
    "CREATE TABLE leases("
    " key TEXT PRIMARY KEY,"
    " pid INTEGER NOT NULL,"
    " host TEXT NOT NULL,"
    " expires_ms INTEGER NOT NULL);",
    /* 2: how each decision was measured (NULL: unknown, the records of version 1, which
     * are kept), and the handle that holds a lease, so that two contexts of one process
     * keep each other from measuring one key as two processes do. */
    "ALTER TABLE decisions ADD COLUMN budget_ms REAL;"
    "ALTER TABLE decisions ADD COLUMN spread REAL;"
    "ALTER TABLE decisions ADD COLUMN margin REAL;"
    "ALTER TABLE leases ADD COLUMN owner INTEGER NOT NULL DEFAULT 0;",
    /* 3: compiled forms of chosen algorithms (db_artifacts.c), so that a later process
     * does not compile again; a per-machine cache, kept per environment like decisions. */
    "CREATE TABLE artifacts("
    " key TEXT NOT NULL,"
    " library_version TEXT NOT NULL,"
    " backend_versions TEXT NOT NULL,"
    " device TEXT NOT NULL,"
    " algo TEXT NOT NULL,"
    " blob BLOB NOT NULL,"
    " created_at INTEGER NOT NULL,"
    " PRIMARY KEY (key, library_version, backend_versions, device, algo));",
};

typedef enum check_result {
    CHECK_OK,       /* usable as asked */
    CHECK_EMPTY,    /* no schema yet (a new, empty file): holds no records */
    CHECK_NEWER,    /* a newer build's schema */
    CHECK_DAMAGED,  /* damaged, or another application's file */
    CHECK_BUSY,     /* another process holds a lock (while creating or migrating it) */
    CHECK_UNUSABLE  /* anything else */
} check_result;

/* How much check_file does: READ looks at the header only (inspection reads the rest
 * itself), SYSTEM adds the quick integrity check, WRITE also switches the file to WAL
 * and migrates it. */
typedef enum check_kind { CHECK_READ, CHECK_SYSTEM, CHECK_WRITE } check_kind;

bool cf_db_rc_busy(int rc)
{
    return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
}

static bool rc_damaged(int rc)
{
    return (rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB;
}

/* One integer from a PRAGMA or query; SQLite code in *rc. */
static int64_t query_int(sqlite3 *conn, const char *sql, int *rc)
{
    sqlite3_stmt *st = NULL;
    int64_t v = 0;
    *rc = sqlite3_prepare_v2(conn, sql, -1, &st, NULL);
    if (*rc == SQLITE_OK) {
        *rc = sqlite3_step(st);
        if (*rc == SQLITE_ROW) {
            v = sqlite3_column_int64(st, 0);
            *rc = SQLITE_OK;
        } else if (*rc == SQLITE_DONE) {
            *rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return v;
}

/* The schema version, application id and number of schema objects, read by one
 * statement and so from one snapshot: read one by one, another process's migration could
 * commit in between, and a version of 0 beside a schema already created would look like
 * another application's file (and be quarantined under the process that created it). */
static void read_header(sqlite3 *conn, int64_t *version, int64_t *app, int64_t *objects,
                        int *rc)
{
    sqlite3_stmt *st = NULL;
    *rc = sqlite3_prepare_v2(conn,
                             "SELECT (SELECT user_version FROM pragma_user_version),"
                             " (SELECT application_id FROM pragma_application_id),"
                             " (SELECT count(*) FROM sqlite_master)",
                             -1, &st, NULL);
    if (*rc == SQLITE_OK && (*rc = sqlite3_step(st)) == SQLITE_ROW) {
        *version = sqlite3_column_int64(st, 0);
        *app = sqlite3_column_int64(st, 1);
        *objects = sqlite3_column_int64(st, 2);
        *rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
}

/* Brings the file up to CF_DB_SCHEMA_VERSION.  The version is read again inside the
 * write transaction because another process may have migrated it meanwhile. */
static int migrate(sqlite3 *conn, char *why, size_t whysize)
{
    int rc = cf_db_exec(conn, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK)
        return rc;
    int64_t v = query_int(conn, "PRAGMA user_version", &rc);
    int64_t objects = rc == SQLITE_OK ? query_int(conn, "SELECT count(*) FROM sqlite_master", &rc)
                                      : 0;
    if (rc == SQLITE_OK && v == 0 && objects > 0) {
        snprintf(why, whysize, "is a SQLite file of another application");
        cf_db_exec(conn, "ROLLBACK");
        return SQLITE_NOTADB;
    }
    for (; rc == SQLITE_OK && v < CF_DB_SCHEMA_VERSION; v++)
        rc = cf_db_exec(conn, migrations[v]);
    if (rc == SQLITE_OK) {
        char sql[96];
        snprintf(sql, sizeof sql, "PRAGMA user_version=%d; PRAGMA application_id=%d",
                 CF_DB_SCHEMA_VERSION, CF_DB_APPLICATION_ID);
        rc = cf_db_exec(conn, sql);
    }
    if (rc == SQLITE_OK)
        rc = cf_db_exec(conn, "COMMIT");
    if (rc != SQLITE_OK)
        cf_db_exec(conn, "ROLLBACK");
    return rc;
}

static int quick_check(sqlite3 *conn, char *why, size_t whysize)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(conn, "PRAGMA quick_check", -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *res = (const char *)sqlite3_column_text(st, 0);
        rc = res && strcmp(res, "ok") == 0 ? SQLITE_OK : SQLITE_CORRUPT;
        if (rc != SQLITE_OK) {
            snprintf(why, whysize, "fails its integrity check (%.160s)", res ? res : "?");
            cf_db_one_line(why);
        }
    } else if (rc == SQLITE_DONE) {
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc;
}

/* Is `conn` one of our databases, at a version this build can use?  Everything that
 * could change the file comes after the checks that may leave it alone. */
static check_result check_file(cf_db *db, sqlite3 *conn, check_kind kind, char *why,
                               size_t whysize)
{
    sqlite3_busy_timeout(conn, db->cfg.busy_timeout_ms);
    int rc;
    int64_t version = 0, app = 0, objects = 0;
    read_header(conn, &version, &app, &objects, &rc);
    if (rc == SQLITE_OK && version > CF_DB_SCHEMA_VERSION) {
        snprintf(why, whysize, "has schema version %lld, newer than this build's %d",
                 (long long)version, CF_DB_SCHEMA_VERSION);
        return CHECK_NEWER;
    }
    if (rc == SQLITE_OK && version > 0 && app != CF_DB_APPLICATION_ID) {
        snprintf(why, whysize, "has application id %lld, not convfind's", (long long)app);
        return CHECK_DAMAGED;
    }
    if (rc == SQLITE_OK && version == 0 && objects > 0) {
        snprintf(why, whysize, "is a SQLite file of another application");
        return CHECK_DAMAGED;
    }
    if (rc == SQLITE_OK && version == 0 && kind != CHECK_WRITE) {
        snprintf(why, whysize, "has no convfind schema (an empty file)");
        return CHECK_EMPTY;
    }
    if (rc == SQLITE_OK && kind != CHECK_READ)
        rc = quick_check(conn, why, whysize);
    if (rc == SQLITE_OK && kind == CHECK_WRITE) {
        /* WAL: readers never block the writer and a killed writer leaves only
         * uncommitted frames behind, which the next opener discards. */
        rc = cf_db_exec(conn, "PRAGMA journal_mode=WAL");
        if (rc == SQLITE_OK)
            rc = cf_db_exec(conn, "PRAGMA synchronous=NORMAL");
        if (rc == SQLITE_OK && version < CF_DB_SCHEMA_VERSION)
            rc = migrate(conn, why, whysize);
    }
    if (rc == SQLITE_OK)
        return CHECK_OK;
    if (!why[0])
        snprintf(why, whysize, "%s", sqlite3_errstr(rc));
    if (cf_db_rc_busy(rc))
        return CHECK_BUSY;
    return rc_damaged(rc) ? CHECK_DAMAGED : CHECK_UNUSABLE;
}

/* "file:<percent-encoded path>?<query>" */
static char *file_uri(const char *path, const char *query)
{
    size_t n = strlen(path);
    char *uri = malloc(3 * n + strlen(query) + 8);
    if (!uri)
        return NULL;
    char *o = uri + sprintf(uri, "file:");
    for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
        if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
            *c == '/' || *c == '.' || *c == '_' || *c == '-')
            *o++ = (char)*c;
        else
            o += sprintf(o, "%%%02X", *c);
    }
    sprintf(o, "?%s", query);
    return uri;
}

static bool sidecar_exists(const char *file, const char *suffix)
{
    char p[4200];
    snprintf(p, sizeof p, "%s%s", file, suffix);
    return access(p, F_OK) == 0;
}

static int open_uri(const char *path, const char *query, sqlite3 **conn)
{
    char *uri = file_uri(path, query);
    *conn = NULL;
    int rc = uri ? sqlite3_open_v2(uri, conn,
                                   SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                                   NULL)
                 : SQLITE_NOMEM;
    free(uri);
    if (rc != SQLITE_OK) {
        sqlite3_close_v2(*conn);
        *conn = NULL;
    }
    return rc;
}

/* Opens the user file for reading without creating anything beside it (see the top of
 * the file) and records what the snapshot check compares later. */
static int open_read_only(cf_db *db, sqlite3 **conn)
{
    bool shared = sidecar_exists(db->file, "-wal") && sidecar_exists(db->file, "-shm");
    struct stat st;
    int rc = open_uri(db->file, shared ? "mode=ro" : "immutable=1", conn);
    if (rc == SQLITE_OK && stat(db->file, &st) == 0) {
        db->snapshot = !shared;
        db->dev = st.st_dev;
        db->ino = st.st_ino;
        db->snap_mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        db->snap_size = (int64_t)st.st_size;
    }
    return rc;
}

/* A snapshot stays valid while no other process opens or changes the file. */
static void refresh_snapshot(cf_db *db)
{
    struct stat st;
    bool same = stat(db->file, &st) == 0 && st.st_dev == db->dev && st.st_ino == db->ino &&
                (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec ==
                    db->snap_mtime_ns &&
                (int64_t)st.st_size == db->snap_size && !sidecar_exists(db->file, "-wal");
    if (same)
        return;
    sqlite3 *conn = NULL;
    char why[200] = "";
    if (open_read_only(db, &conn) == SQLITE_OK &&
        check_file(db, conn, CHECK_READ, why, sizeof why) == CHECK_OK) {
        sqlite3_close_v2(db->user);
        db->user = conn;
    } else {
        sqlite3_close_v2(conn);
    }
}

void cf_db_open_memory(cf_db *db)
{
    if (db->user)
        sqlite3_close_v2(db->user);
    db->user = NULL;
    db->persistent = db->snapshot = false;
    db->writable = true;
    char why[200] = "";
    if (sqlite3_open_v2(CF_DB_MEMORY, &db->user, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK ||
        check_file(db, db->user, CHECK_WRITE, why, sizeof why) != CHECK_OK) {
        /* Only out-of-memory gets here; the handle then answers every lookup with a
         * miss and counts every store as unstored, which is still correct. */
        db->writable = false;
        cf_db_warn(db, "cannot create an in-memory database: %s", why);
    }
}

static convfind_status give_up(cf_db *db, const char *fmt, ...) CF_PRINTF(2, 3);

/* A file problem whose fallback is memory: an error when the file was named or the
 * mode needs the file, else memory with one warning. */
static convfind_status give_up(cf_db *db, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cf_db_one_line(msg);
    if (db->named || db->cfg.mode != CF_DB_USE)
        return cf_fail(CONVFIND_ERR_IO, "%s", msg);
    cf_db_warn(db, "%s; decisions are kept in memory only", msg);
    cf_db_open_memory(db);
    return CONVFIND_OK;
}

/* Keeps the file but never writes it: a newer build's, or one this user cannot write. */
static convfind_status use_read_only(cf_db *db, const char *why)
{
    if (db->cfg.mode == CF_DB_MAINTAIN)
        return cf_fail(CONVFIND_ERR_IO, "database %s %s; it cannot be changed", db->file, why);
    sqlite3 *conn = NULL;
    char problem[200] = "";
    int rc = open_read_only(db, &conn);
    check_result res = rc == SQLITE_OK ? check_file(db, conn, CHECK_READ, problem, sizeof problem)
                                       : CHECK_UNUSABLE;
    if (rc != SQLITE_OK)
        snprintf(problem, sizeof problem, "%s", sqlite3_errstr(rc));
    if (res != CHECK_OK && res != CHECK_NEWER) {
        sqlite3_close_v2(conn);
        return give_up(db, "database %s %s and cannot be read (%s)", db->file, why, problem);
    }
    if (db->user)
        sqlite3_close_v2(db->user);
    db->user = conn;
    db->persistent = true;
    db->writable = false;
    cf_db_warn(db, "database %s %s; using it read-only, decisions measured now are not stored",
               db->file, why);
    return CONVFIND_OK;
}

/* Renames `file` (and its -wal, -shm) aside, if it is still the file we examined.
 * False with errno set when the rename failed. */
static bool quarantine(cf_db *db, const char *why)
{
    struct stat st;
    if (stat(db->file, &st) != 0 || st.st_dev != db->dev || st.st_ino != db->ino)
        return true; /* already moved by another process; the path is free again */
    char target[4200];
    snprintf(target, sizeof target, "%s.quarantine-%lld-%ld", db->file, (long long)time(NULL),
             (long)getpid());
    if (rename(db->file, target) != 0 && errno != ENOENT)
        return false;
    static const char *const sidecars[] = {"-wal", "-shm"};
    for (int i = 0; i < 2; i++) {
        char from[4200], to[4300];
        snprintf(from, sizeof from, "%s%s", db->file, sidecars[i]);
        snprintf(to, sizeof to, "%s%s", target, sidecars[i]);
        rename(from, to); /* absent sidecars are the normal case */
    }
    cf_db_warn(db, "database %s %s; moved it to %s and started a new one", db->file, why, target);
    return true;
}

/* mkdir -p of the directory part of `file`. */
static bool make_parent_dirs(const char *file)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", file);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return true;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            return false;
        *p = '/';
    }
    return mkdir(dir, 0755) == 0 || errno == EEXIST;
}

static void pause_10ms(void)
{
    struct timespec pause = {0, 10 * 1000000L};
    nanosleep(&pause, NULL);
}

/* USE and MAINTAIN: opens (or creates) the file for writing, quarantining what cannot
 * be used; two quarantines in a row mean something keeps breaking the file. */
static convfind_status open_writable(cf_db *db)
{
    int64_t deadline = cf_db_now_ms() + db->cfg.busy_timeout_ms;
    for (int attempt = 0; attempt < 3; attempt++) {
        struct stat st;
        if (stat(db->file, &st) == 0) {
            if (!S_ISREG(st.st_mode))
                return give_up(db, "database path %s is not a regular file", db->file);
            if (access(db->file, R_OK) != 0)
                return give_up(db, "database %s cannot be read by this user", db->file);
            if (access(db->file, W_OK) != 0)
                return use_read_only(db, "cannot be written by this user");
        } else if (errno != ENOENT) {
            return give_up(db, "cannot examine database %s (%s)", db->file, strerror(errno));
        } else if (!make_parent_dirs(db->file)) {
            return give_up(db, "cannot create the directory of database %s (%s)", db->file,
                           strerror(errno));
        }
        sqlite3 *conn = NULL;
        int rc = sqlite3_open_v2(db->file, &conn,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                 NULL);
        if (rc != SQLITE_OK) {
            sqlite3_close_v2(conn);
            return give_up(db, "cannot open database %s (%s)", db->file, sqlite3_errstr(rc));
        }
        if (stat(db->file, &st) == 0) {
            db->dev = st.st_dev;
            db->ino = st.st_ino;
        }
        char why[200] = "";
        check_result res = check_file(db, conn, CHECK_WRITE, why, sizeof why);
        if (res == CHECK_OK) {
            if (db->user)
                sqlite3_close_v2(db->user);
            db->user = conn;
            db->persistent = db->writable = true;
            return CONVFIND_OK;
        }
        sqlite3_close_v2(conn);
        if (res == CHECK_NEWER)
            return use_read_only(db, why);
        if (res == CHECK_BUSY && cf_db_now_ms() < deadline) {
            pause_10ms();
            attempt--; /* waiting for a lock is not a failed attempt */
            continue;
        }
        if (res == CHECK_BUSY)
            return give_up(db, "database %s stayed locked by another process for %d ms",
                           db->file, db->cfg.busy_timeout_ms);
        if (res != CHECK_DAMAGED)
            return give_up(db, "cannot use database %s (%s)", db->file, why);
        if (!quarantine(db, why))
            return give_up(db, "database %s %s and cannot be renamed aside (%s)", db->file, why,
                           strerror(errno));
    }
    return give_up(db, "database %s was damaged again right after being replaced", db->file);
}

/* INSPECT: reads the file as it is; a missing one reads as an empty database. */
static convfind_status open_inspect(cf_db *db)
{
    struct stat st;
    if (stat(db->file, &st) != 0) {
        if (errno != ENOENT && errno != ENOTDIR)
            return cf_fail(CONVFIND_ERR_IO, "cannot examine database %s (%s)", db->file,
                           strerror(errno));
        cf_db_open_memory(db);
        return CONVFIND_OK;
    }
    if (!S_ISREG(st.st_mode))
        return cf_fail(CONVFIND_ERR_IO, "database path %s is not a regular file", db->file);
    if (access(db->file, R_OK) != 0)
        return cf_fail(CONVFIND_ERR_IO, "database %s cannot be read by this user", db->file);
    sqlite3 *conn = NULL;
    char why[200] = "";
    int rc = open_read_only(db, &conn);
    if (rc != SQLITE_OK)
        return cf_fail(CONVFIND_ERR_IO, "cannot open database %s (%s)", db->file,
                       sqlite3_errstr(rc));
    check_result res = check_file(db, conn, CHECK_READ, why, sizeof why);
    db->exists = true;
    if (res == CHECK_EMPTY) {
        sqlite3_close_v2(conn);
        cf_db_open_memory(db);
        return CONVFIND_OK;
    }
    if (res != CHECK_OK && res != CHECK_NEWER) {
        sqlite3_close_v2(conn);
        return cf_fail(CONVFIND_ERR_IO, "database %s %s", db->file, why);
    }
    if (res == CHECK_NEWER)
        cf_db_warn(db, "database %s %s; reading it as this build's schema", db->file, why);
    db->user = conn;
    db->persistent = true;
    db->writable = false;
    return CONVFIND_OK;
}

convfind_status cf_db_open_user(cf_db *db)
{
    if (!db->file) {
        cf_db_open_memory(db);
        return CONVFIND_OK;
    }
    return db->cfg.mode == CF_DB_INSPECT ? open_inspect(db) : open_writable(db);
}

void cf_db_open_system(cf_db *db)
{
    const char *path = db->cfg.system_path ? db->cfg.system_path : db->cfg.locations.system_db;
    if (!path || !path[0])
        return;
    struct stat st;
    char why[200] = "";
    sqlite3 *conn = NULL;
    /* A FIFO or device would block the open or feed it garbage: only regular files. */
    if (stat(path, &st) != 0)
        snprintf(why, sizeof why, "cannot be examined (%s)", strerror(errno));
    else if (!S_ISREG(st.st_mode))
        snprintf(why, sizeof why, "is not a regular file");
    else if (open_uri(path, "immutable=1", &conn) != SQLITE_OK)
        snprintf(why, sizeof why, "cannot be opened");
    else if (check_file(db, conn, CHECK_SYSTEM, why, sizeof why) == CHECK_OK &&
             (db->system_open = strdup(path)) != NULL) {
        db->sys = conn;
        return;
    }
    sqlite3_close_v2(conn);
    /* Not ours to rename: a deployment ships it.  Skip it and say so once. */
    cf_db_warn(db, "system database %s %s; ignoring it", path, why);
}

int cf_db_run(cf_db *db, cf_db_op op, void *arg)
{
    if (!db->user)
        return SQLITE_CANTOPEN;
    if (db->snapshot)
        refresh_snapshot(db);
    int rc = op(db, db->user, arg);
    for (int attempt = 0; rc_damaged(rc) && db->persistent && db->writable && attempt < 2;
         attempt++) {
        char why[120];
        snprintf(why, sizeof why, "is damaged (%s)", sqlite3_errstr(rc));
        sqlite3_close_v2(db->user);
        db->user = NULL;
        if (!quarantine(db, why) || open_writable(db) != CONVFIND_OK) {
            if (!db->user) {
                cf_db_warn(db, "database %s %s and cannot be replaced; decisions are kept in "
                           "memory only", db->file, why);
                cf_db_open_memory(db);
            }
            return rc;
        }
        rc = op(db, db->user, arg);
    }
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}
