/*
 * db_open.c - finding, opening, checking and migrating the database files, and what
 * happens when a file lets us down (see db.h and docs/db.md).
 *
 * Two reactions, chosen by SQLite's result code:
 *   damaged (CORRUPT, NOTADB), foreign, newer schema, no permission
 *       -> the file is renamed to "<file>.quarantine-<time>-<pid>" (with its -wal and
 *          -shm, whose frames must never be replayed into a new file) and a fresh
 *          file is created in its place;
 *   unusable (read-only, full disk, I/O error, a lock that cannot be taken)
 *       -> the handle continues on an in-memory database.
 * Either way the caller gets one warning and correct results: a lost decision only
 * costs a new Find.
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
 * appends one entry; a file is migrated step by step inside one transaction. */
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
};

/* CHECK_BUSY: another process holds a lock (typically while it creates the file or
 * switches it to WAL, where SQLite may answer BUSY without calling the busy handler). */
typedef enum check_result { CHECK_OK, CHECK_QUARANTINE, CHECK_UNUSABLE, CHECK_BUSY } check_result;

void cf_db_warn(cf_db *db, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(db->last_warning, sizeof db->last_warning, fmt, ap);
    va_end(ap);
    db->warnings++;
    if (!db->cfg.quiet)
        fprintf(stderr, "convfind: warning: %s\n", db->last_warning);
}

int cf_db_exec(sqlite3 *conn, const char *sql)
{
    return sqlite3_exec(conn, sql, NULL, NULL, NULL);
}

int64_t cf_db_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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

/* Is `conn` one of our databases, at a version we can use?  For a writable file also
 * switches it to WAL and migrates it.  `why` names the problem. */
static check_result check_file(cf_db *db, sqlite3 *conn, bool writable, char *why,
                               size_t whysize)
{
    sqlite3_busy_timeout(conn, db->cfg.busy_timeout_ms);
    int rc = SQLITE_OK;
    if (writable) {
        /* WAL: readers never block the writer and a killed writer leaves only
         * uncommitted frames behind, which the next opener discards. */
        rc = cf_db_exec(conn, "PRAGMA journal_mode=WAL");
        if (rc == SQLITE_OK)
            rc = cf_db_exec(conn, "PRAGMA synchronous=NORMAL");
    }
    int64_t version = rc == SQLITE_OK ? query_int(conn, "PRAGMA user_version", &rc) : 0;
    int64_t app = rc == SQLITE_OK ? query_int(conn, "PRAGMA application_id", &rc) : 0;
    if (rc == SQLITE_OK && version > CF_DB_SCHEMA_VERSION) {
        snprintf(why, whysize, "has schema version %lld, newer than this build's %d",
                 (long long)version, CF_DB_SCHEMA_VERSION);
        return CHECK_QUARANTINE;
    }
    if (rc == SQLITE_OK && version > 0 && app != CF_DB_APPLICATION_ID) {
        snprintf(why, whysize, "has application id %lld, not convfind's", (long long)app);
        return CHECK_QUARANTINE;
    }
    if (rc == SQLITE_OK && !writable && version == 0) {
        snprintf(why, whysize, "is not a convfind database (schema version 0)");
        return CHECK_UNUSABLE;
    }
    if (rc == SQLITE_OK && writable) {
        sqlite3_stmt *st = NULL;
        rc = sqlite3_prepare_v2(conn, "PRAGMA quick_check", -1, &st, NULL);
        if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
            const char *res = (const char *)sqlite3_column_text(st, 0);
            rc = res && strcmp(res, "ok") == 0 ? SQLITE_OK : SQLITE_CORRUPT;
            if (rc != SQLITE_OK)
                snprintf(why, whysize, "fails its integrity check (%.80s)", res ? res : "?");
        }
        sqlite3_finalize(st);
        if (rc == SQLITE_OK && version < CF_DB_SCHEMA_VERSION)
            rc = migrate(conn, why, whysize);
    }
    if (rc == SQLITE_OK)
        return CHECK_OK;
    if (!why[0])
        snprintf(why, whysize, "%s", sqlite3_errstr(rc));
    if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
        return CHECK_BUSY;
    return rc_damaged(rc) ? CHECK_QUARANTINE : CHECK_UNUSABLE;
}

/* Replaces the user connection with a fresh in-memory database. */
static void open_memory(cf_db *db)
{
    if (db->user)
        sqlite3_close_v2(db->user);
    db->user = NULL;
    db->persistent = false;
    char why[160] = "";
    if (sqlite3_open_v2(CF_DB_MEMORY, &db->user, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK ||
        check_file(db, db->user, true, why, sizeof why) != CHECK_OK) {
        /* Only out-of-memory gets here; the handle then answers every lookup with a
         * miss and drops every store, which is still correct. */
        cf_db_warn(db, "cannot create an in-memory database: %s", why);
    }
}

static void set_memory(cf_db *db, const char *fmt, ...) CF_PRINTF(2, 3);

/* Continues on memory after a file problem, with one warning naming it. */
static void set_memory(cf_db *db, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cf_db_warn(db, "%s; decisions are kept in memory only", msg);
    open_memory(db);
}

/* Renames `file` (and its -wal, -shm) aside, if it is still the file we examined. */
static bool quarantine(cf_db *db, const char *file, bool check_identity, const char *why)
{
    struct stat st;
    if (check_identity && (stat(file, &st) != 0 || st.st_dev != db->dev || st.st_ino != db->ino))
        return true; /* already moved by another process; the path is free again */
    char target[4200];
    snprintf(target, sizeof target, "%s.quarantine-%lld-%ld", file, (long long)time(NULL),
             (long)getpid());
    if (rename(file, target) != 0 && errno != ENOENT) {
        set_memory(db, "database %s %s and cannot be renamed aside (%s)", file, why,
                   strerror(errno));
        return false;
    }
    static const char *const sidecars[] = {"-wal", "-shm"};
    for (int i = 0; i < 2; i++) {
        char from[4200], to[4300];
        snprintf(from, sizeof from, "%s%s", file, sidecars[i]);
        snprintf(to, sizeof to, "%s%s", target, sidecars[i]);
        rename(from, to); /* absent sidecars are the normal case */
    }
    cf_db_warn(db, "database %s %s; moved it to %s and started a new one", file, why, target);
    return true;
}

/* Opens (or creates) the user file, quarantining what cannot be used, or falls back to
 * memory.  Two quarantines in a row mean something keeps breaking the file: memory. */
static void open_user_file(cf_db *db)
{
    int64_t deadline = cf_db_now_ms() + db->cfg.busy_timeout_ms;
    for (int attempt = 0; attempt < 3; attempt++) {
        struct stat st;
        bool exists = stat(db->file, &st) == 0;
        if (exists && !S_ISREG(st.st_mode)) {
            set_memory(db, "database path %s is not a regular file", db->file);
            return;
        }
        if (exists && access(db->file, R_OK | W_OK) != 0) {
            db->dev = st.st_dev;
            db->ino = st.st_ino;
            if (!quarantine(db, db->file, true, "cannot be read and written by this user"))
                return;
            continue;
        }
        sqlite3 *conn = NULL;
        int rc = sqlite3_open_v2(db->file, &conn,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                 NULL);
        if (rc != SQLITE_OK) {
            sqlite3_close_v2(conn);
            set_memory(db, "cannot open database %s (%s)", db->file, sqlite3_errstr(rc));
            return;
        }
        if (stat(db->file, &st) == 0) {
            db->dev = st.st_dev;
            db->ino = st.st_ino;
        }
        char why[200] = "";
        check_result res = check_file(db, conn, true, why, sizeof why);
        if (res == CHECK_OK) {
            if (db->user)
                sqlite3_close_v2(db->user);
            db->user = conn;
            db->persistent = true;
            return;
        }
        sqlite3_close_v2(conn);
        if (res == CHECK_BUSY && cf_db_now_ms() < deadline) {
            struct timespec pause = {0, 10 * 1000000L};
            nanosleep(&pause, NULL);
            attempt--; /* waiting for a lock is not a failed attempt */
            continue;
        }
        if (res != CHECK_QUARANTINE) {
            set_memory(db, "cannot use database %s (%s)", db->file, why);
            return;
        }
        if (!quarantine(db, db->file, true, why))
            return;
    }
    set_memory(db, "database %s was damaged again right after being replaced", db->file);
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

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s", a, b);
    return s;
}

static const char *nonempty_env(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] ? v : NULL;
}

/* The location order of DESIGN.md non-negotiable 7.  NULL file: memory (why says
 * whether that deserves a warning). */
static char *resolve_file(const cf_db *db, const char **why)
{
    *why = NULL;
    if (db->cfg.path)
        return strcmp(db->cfg.path, CF_DB_MEMORY) == 0 ? NULL : strdup(db->cfg.path);
    const char *v = nonempty_env("CONVFIND_DB_PATH");
    if (v)
        return strcmp(v, CF_DB_MEMORY) == 0 ? NULL : strdup(v);
    if ((v = nonempty_env("XDG_CACHE_HOME")) != NULL && v[0] == '/')
        return join(v, "/convfind/" CF_DB_FILE_NAME);
    if ((v = nonempty_env("HOME")) != NULL)
        return join(v, "/.cache/convfind/" CF_DB_FILE_NAME);
    *why = "no database location: none of CONVFIND_DB_PATH, XDG_CACHE_HOME, HOME is set";
    return NULL;
}

/* "file:<percent-encoded path>?immutable=1": the system tier is a shipped, read-only
 * file; immutable lets SQLite read it in a read-only directory without a -shm file. */
static char *system_uri(const char *path)
{
    size_t n = strlen(path);
    char *uri = malloc(3 * n + 32);
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
    strcpy(o, "?immutable=1");
    return uri;
}

static void open_system_tier(cf_db *db)
{
    const char *path = db->cfg.system_path ? db->cfg.system_path
                                           : nonempty_env("CONVFIND_SYSTEM_DB");
    if (!path || !path[0])
        return;
    char *uri = system_uri(path);
    sqlite3 *conn = NULL;
    char why[200] = "";
    int rc = uri ? sqlite3_open_v2(uri, &conn,
                                   SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                                   NULL)
                 : SQLITE_NOMEM;
    free(uri);
    if (rc != SQLITE_OK)
        snprintf(why, sizeof why, "%s", sqlite3_errstr(rc));
    else if (check_file(db, conn, false, why, sizeof why) == CHECK_OK) {
        db->sys = conn;
        return;
    }
    sqlite3_close_v2(conn);
    /* Not ours to rename: a deployment ships it.  Skip it and say so once. */
    cf_db_warn(db, "system database %s is not usable (%s); ignoring it", path, why);
}

void cf_db_config_init(cf_db_config *config, const cf_fingerprint *host)
{
    memset(config, 0, sizeof *config);
    config->env_policy = CONVFIND_DB_ENV_RETUNE;
    cf_db_env_make(&config->env, host);
}

convfind_status cf_db_open(const cf_db_config *config, cf_db **out)
{
    if (!out)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "out (cf_db **) is NULL");
    *out = NULL;
    if (!config)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "config (cf_db_config *) is NULL");
    if ((unsigned)config->env_policy > (unsigned)CONVFIND_DB_ENV_IGNORE)
        return cf_fail(CONVFIND_ERR_INVALID_ENUM, "db_env_policy = %d is not a convfind_db_env_policy",
                       (int)config->env_policy);
    if (config->busy_timeout_ms < 0 || config->lease_ms < 0)
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE, "busy_timeout_ms = %d / lease_ms = %d must "
                       "be >= 0", config->busy_timeout_ms, config->lease_ms);
    cf_db *db = calloc(1, sizeof *db);
    if (!db)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate a database handle");
    db->cfg = *config;
    if (!db->cfg.busy_timeout_ms)
        db->cfg.busy_timeout_ms = 5000;
    if (!db->cfg.lease_ms)
        db->cfg.lease_ms = 120000;
    db->path_copy = config->path ? strdup(config->path) : NULL;
    db->system_copy = config->system_path ? strdup(config->system_path) : NULL;
    if ((config->path && !db->path_copy) || (config->system_path && !db->system_copy) ||
        pthread_mutex_init(&db->mu, NULL) != 0) {
        free(db->path_copy);
        free(db->system_copy);
        free(db);
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate a database handle");
    }
    db->cfg.path = db->path_copy;
    db->cfg.system_path = db->system_copy;
    if (gethostname(db->host, sizeof db->host - 1) != 0)
        snprintf(db->host, sizeof db->host, "unknown-host");

    const char *why;
    db->file = resolve_file(db, &why);
    if (!db->file && why)
        set_memory(db, "%s", why);
    else if (!db->file)
        open_memory(db);
    else if (!make_parent_dirs(db->file))
        set_memory(db, "cannot create the directory of database %s (%s)", db->file,
                   strerror(errno));
    else
        open_user_file(db);
    open_system_tier(db);
    *out = db;
    return CONVFIND_OK;
}

void cf_db_close(cf_db *db)
{
    if (!db)
        return;
    if (db->user) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db->user, "DELETE FROM leases WHERE pid=?1 AND host=?2", -1, &st,
                               NULL) == SQLITE_OK) {
            sqlite3_bind_int64(st, 1, (sqlite3_int64)getpid());
            sqlite3_bind_text(st, 2, db->host, -1, SQLITE_STATIC);
            sqlite3_step(st);
        }
        sqlite3_finalize(st);
        sqlite3_close_v2(db->user);
    }
    if (db->sys)
        sqlite3_close_v2(db->sys);
    pthread_mutex_destroy(&db->mu);
    free(db->file);
    free(db->path_copy);
    free(db->system_copy);
    free(db);
}

int cf_db_run(cf_db *db, cf_db_op op, void *arg)
{
    int rc = SQLITE_MISUSE;
    for (int attempt = 0; attempt < 3 && db->user; attempt++) {
        rc = op(db, db->user, arg);
        if (rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW)
            return SQLITE_OK;
        if (!db->persistent)
            return rc;
        int code = rc & 0xff;
        if (rc_damaged(rc)) {
            sqlite3_close_v2(db->user);
            db->user = NULL;
            char why[120];
            snprintf(why, sizeof why, "is damaged (%s)", sqlite3_errstr(rc));
            if (quarantine(db, db->file, true, why))
                open_user_file(db);
        } else if (code == SQLITE_FULL || code == SQLITE_IOERR || code == SQLITE_READONLY ||
                   code == SQLITE_CANTOPEN || code == SQLITE_PROTOCOL || code == SQLITE_BUSY ||
                   code == SQLITE_LOCKED || code == SQLITE_PERM || code == SQLITE_NOLFS) {
            set_memory(db, "database %s cannot be used any more (%s)", db->file,
                       sqlite3_errstr(rc));
        } else {
            return rc;
        }
    }
    return rc;
}

/* The getters lock too: another thread's call may be switching the handle to memory. */
static pthread_mutex_t *mu_of(const cf_db *db) { return (pthread_mutex_t *)&db->mu; }

const char *cf_db_location(const cf_db *db)
{
    pthread_mutex_lock(mu_of(db));
    const char *where = db->persistent ? db->file : CF_DB_MEMORY;
    pthread_mutex_unlock(mu_of(db));
    return where;
}

bool cf_db_is_persistent(const cf_db *db)
{
    pthread_mutex_lock(mu_of(db));
    bool p = db->persistent;
    pthread_mutex_unlock(mu_of(db));
    return p;
}

int cf_db_warning_count(const cf_db *db)
{
    pthread_mutex_lock(mu_of(db));
    int n = db->warnings;
    pthread_mutex_unlock(mu_of(db));
    return n;
}

void cf_db_last_warning(const cf_db *db, char *buf, size_t size)
{
    pthread_mutex_lock(mu_of(db));
    snprintf(buf, size, "%s", db->last_warning);
    pthread_mutex_unlock(mu_of(db));
}
