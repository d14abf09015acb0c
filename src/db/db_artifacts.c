/*
 * db_artifacts.c - compiled forms of chosen algorithms (a serialized cuDNN execution plan,
 * say) kept beside the decisions, so that a later process does not compile again (see db.h,
 * docs/db.md "Schema").
 *
 * They are a per-machine cache of the user tier: written and read only there, per
 * environment like decisions, never exported, imported or given to the fleet tier, and
 * pruned with their decision.  Losing one costs a compile, never a wrong result, so every
 * database problem here ends in "none stored": a put is best effort (not kept pending like
 * a decision) and a get that cannot read answers none.
 */
#include "db/db_internal.h"

#include <stdlib.h>
#include <string.h>

/* The first schema version with the artifacts table. */
#define ARTIFACT_SCHEMA 3

typedef struct artifact_arg {
    const char *key, *algo;
    const void *blob; /* put: the bytes; get: the copy made, malloc'ed */
    size_t size;
} artifact_arg;

/* Prepares `sql` on `conn` with the row's identity bound: ?1 key, ?2-?4 this handle's
 * environment, ?5 algorithm.  SQLite code; *st is NULL unless SQLITE_OK. */
static int prepare(const cf_db *db, sqlite3 *conn, const artifact_arg *a, const char *sql,
                   sqlite3_stmt **st)
{
    int rc = sqlite3_prepare_v2(conn, sql, -1, st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_bind_text(*st, 1, a->key, -1, SQLITE_STATIC);
    sqlite3_bind_text(*st, 2, db->cfg.env.library, -1, SQLITE_STATIC);
    sqlite3_bind_text(*st, 3, db->cfg.env.backends, -1, SQLITE_STATIC);
    sqlite3_bind_text(*st, 4, db->cfg.env.device, -1, SQLITE_STATIC);
    sqlite3_bind_text(*st, 5, a->algo, -1, SQLITE_STATIC);
    return rc;
}

/* One statement, so no explicit transaction: it replaces the row or leaves it. */
static int put_op(cf_db *db, sqlite3 *conn, void *varg)
{
    const artifact_arg *a = varg;
    sqlite3_stmt *st = NULL;
    int rc = prepare(db, conn, a, "INSERT OR REPLACE INTO artifacts(key, library_version, "
                     "backend_versions, device, algo, blob, created_at) "
                     "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)", &st);
    if (rc == SQLITE_OK) {
        sqlite3_bind_blob64(st, 6, a->blob, a->size, SQLITE_STATIC);
        sqlite3_bind_int64(st, 7, cf_db_now_ms() / 1000);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    return rc;
}

static bool valid(const char *fn, const cf_db *db, const char *key, const char *algo,
                  const void *blob, convfind_status *st)
{
    *st = CONVFIND_OK;
    if (!db || !key || !algo || !blob)
        *st = cf_fail(CONVFIND_ERR_NULL_POINTER, "%s: db, key, algo and blob must not be NULL",
                      fn);
    else if (cf_db_check_key(key) != CONVFIND_OK)
        *st = cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE, "%s: %s", fn, convfind_last_error());
    return *st == CONVFIND_OK;
}

convfind_status cf_db_artifact_put(cf_db *db, const char *key, const char *algo,
                                   const void *blob, size_t size)
{
    convfind_status st;
    if (!valid("cf_db_artifact_put", db, key, algo, blob, &st))
        return st;
    if (size == 0)
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE, "cf_db_artifact_put: size is 0");
    if (size > CF_DB_ARTIFACT_MAX)
        return CONVFIND_OK;
    artifact_arg a = {.key = key, .algo = algo, .blob = blob, .size = size};
    pthread_mutex_lock(&db->mu);
    /* A writable handle's file has been migrated, so it has the table; a read-only one
     * (of any schema) is never written.  A database found busy is not waited for again
     * before its retry time, as for leases. */
    if (db->writable && cf_db_now_ms() >= db->retry_at_ms) {
        int rc = cf_db_run(db, put_op, &a);
        if (cf_db_rc_busy(rc)) {
            db->retry_at_ms = cf_db_now_ms() + db->cfg.busy_timeout_ms;
        } else if (rc != SQLITE_OK && !db->warned_artifact) {
            db->warned_artifact = true;
            cf_db_warn(db, "could not store a compiled form of %s in %s (%s); it is compiled "
                       "again by the next process", algo, db->file ? db->file : CF_DB_MEMORY,
                       sqlite3_errstr(rc));
        }
    }
    pthread_mutex_unlock(&db->mu);
    return CONVFIND_OK;
}

static int get_op(cf_db *db, sqlite3 *conn, void *varg)
{
    artifact_arg *a = varg;
    /* A file of schema 2 that is only read (read-only, inspected) has no table: none. */
    if (cf_db_schema_of(conn) < ARTIFACT_SCHEMA)
        return SQLITE_OK;
    sqlite3_stmt *st = NULL;
    int rc = prepare(db, conn, a, "SELECT blob FROM artifacts WHERE key=?1 AND "
                     "library_version=?2 AND backend_versions=?3 AND device=?4 AND algo=?5", &st);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const void *bytes = sqlite3_column_blob(st, 0);
        size_t n = (size_t)sqlite3_column_bytes(st, 0);
        /* An empty or oversized row was not written by cf_db_artifact_put: none. */
        bool kept = bytes && n > 0 && n <= CF_DB_ARTIFACT_MAX;
        void *copy = kept ? malloc(n) : NULL;
        rc = kept && !copy ? SQLITE_NOMEM : SQLITE_OK;
        if (copy) {
            memcpy(copy, bytes, n);
            a->blob = copy;
            a->size = n;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

convfind_status cf_db_artifact_get(cf_db *db, const char *key, const char *algo,
                                   void **blob, size_t *size)
{
    if (blob)
        *blob = NULL;
    if (size)
        *size = 0;
    convfind_status st;
    if (!valid("cf_db_artifact_get", db, key, algo, blob, &st))
        return st;
    if (!size)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "cf_db_artifact_get: size must not be NULL");
    artifact_arg a = {.key = key, .algo = algo};
    pthread_mutex_lock(&db->mu);
    int rc = cf_db_run(db, get_op, &a);
    if (rc != SQLITE_OK && rc != SQLITE_NOMEM)
        cf_db_read_failed(db, db->file ? db->file : "the database", rc);
    pthread_mutex_unlock(&db->mu);
    if (rc == SQLITE_NOMEM)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cf_db_artifact_get: cannot copy a stored "
                       "compiled form of %s", algo);
    *blob = (void *)a.blob;
    *size = a.size;
    return CONVFIND_OK;
}

void cf_db_artifact_totals(sqlite3 *conn, size_t *count, int64_t *bytes)
{
    *count = 0;
    *bytes = 0;
    sqlite3_stmt *st = NULL;
    if (cf_db_schema_of(conn) >= ARTIFACT_SCHEMA &&
        sqlite3_prepare_v2(conn, "SELECT count(*), total(length(blob)) FROM artifacts", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        *count = (size_t)sqlite3_column_int64(st, 0);
        *bytes = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
}

int cf_db_prune_artifacts(cf_db *db, sqlite3 *conn, size_t *removed)
{
    *removed = 0;
    if (cf_db_schema_of(conn) < ARTIFACT_SCHEMA)
        return SQLITE_OK;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(conn, "DELETE FROM artifacts WHERE NOT (library_version=?1 AND "
                                "backend_versions=?2 AND device=?3) OR NOT EXISTS (SELECT 1 FROM "
                                "decisions d WHERE d.key=artifacts.key AND "
                                "d.library_version=artifacts.library_version AND "
                                "d.backend_versions=artifacts.backend_versions AND "
                                "d.device=artifacts.device)", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, db->cfg.env.library, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, db->cfg.env.backends, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, db->cfg.env.device, -1, SQLITE_STATIC);
        if ((rc = sqlite3_step(st)) == SQLITE_DONE) {
            rc = SQLITE_OK;
            *removed = (size_t)sqlite3_changes(conn);
        }
    }
    sqlite3_finalize(st);
    return rc;
}
