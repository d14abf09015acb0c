/*
 * db_admin.c - everything `convfind db` does besides lookups: walking the records,
 * statistics, JSON Lines export and import (sharing a tuned database across a fleet),
 * pruning, verification and vacuum (see db.h).
 */
#include "db/db_internal.h"
#include "db/fleet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define IMPORT_LINE_MAX (1 << 20) /* a record line is a few KiB; anything huge is bad input */

/* Fills `r` from a row (key, library, backends, device, decision, host, created_at,
 * budget).  The row's decision is parsed and checked by the same loader lookups use. */
static convfind_status row_record(const cf_db *db, sqlite3_stmt *st, cf_db_record *r)
{
    memset(r, 0, sizeof *r);
    const char *text[6];
    for (int i = 0; i < 6; i++) {
        text[i] = (const char *)sqlite3_column_text(st, i);
        if (!text[i])
            return cf_fail(CONVFIND_ERR_IO, "stored record has a NULL column %d", i);
    }
    convfind_status s = cf_db_load_decision(db, text[0], text[4],
                                            (size_t)sqlite3_column_bytes(st, 4), &r->decision);
    if (s != CONVFIND_OK)
        return s;
    snprintf(r->env.library, sizeof r->env.library, "%s", text[1]);
    snprintf(r->env.backends, sizeof r->env.backends, "%s", text[2]);
    snprintf(r->env.device, sizeof r->env.device, "%s", text[3]);
    snprintf(r->host, sizeof r->host, "%s", text[5]);
    r->time = sqlite3_column_int64(st, 6);
    r->decision.budget_ms = cf_db_column_budget(st, 7);
    r->key = strdup(text[0]);
    if (!r->key) {
        cf_db_record_clear(r);
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot copy a key");
    }
    return CONVFIND_OK;
}

typedef struct walk_arg {
    const char *key;
    cf_db_record_fn fn;  /* readable rows */
    void *fn_arg;
    size_t unreadable;
    char first_bad[300]; /* why the first unreadable row is: its key and the reason */
    int (*bad)(sqlite3 *conn, sqlite3_stmt *row, void *arg); /* unreadable rows, optional */
} walk_arg;

static int walk_op(cf_db *db, sqlite3 *conn, void *varg)
{
    walk_arg *a = varg;
    a->unreadable = 0;
    sqlite3_stmt *st = NULL;
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT key, library_version, backend_versions, device, decision, host, created_at, "
             "%s FROM decisions %s",
             cf_db_budget_column(conn),
             a->key ? "WHERE key=?1 ORDER BY created_at" : "ORDER BY key, created_at");
    int rc = sqlite3_prepare_v2(conn, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    if (a->key)
        sqlite3_bind_text(st, 1, a->key, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        cf_db_record r;
        if (row_record(db, st, &r) != CONVFIND_OK) {
            if (a->unreadable++ == 0) {
                const char *key = (const char *)sqlite3_column_text(st, 0);
                snprintf(a->first_bad, sizeof a->first_bad, "key %.120s: %s", key ? key : "?",
                         convfind_last_error());
            }
            if (a->bad && (rc = a->bad(conn, st, a->fn_arg)) != SQLITE_OK)
                break;
            continue;
        }
        int stop = a->fn ? a->fn(&r, a->fn_arg) : 0;
        cf_db_record_clear(&r);
        if (stop) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

convfind_status cf_db_foreach(cf_db *db, const char *key, cf_db_record_fn fn, void *arg)
{
    if (!db || !fn)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "cf_db_foreach: db and fn must not be NULL");
    walk_arg a = {.key = key, .fn = fn, .fn_arg = arg};
    pthread_mutex_lock(&db->mu);
    if (db->cfg.fleet_only) {
        convfind_status st = cf_fleet_foreach(db, key, fn, arg);
        pthread_mutex_unlock(&db->mu);
        return st;
    }
    int rc = cf_db_run(db, walk_op, &a);
    pthread_mutex_unlock(&db->mu);
    if (rc != SQLITE_OK)
        return cf_fail(CONVFIND_ERR_IO, "reading database %s failed: %s", cf_db_location(db),
                       sqlite3_errstr(rc));
    return CONVFIND_OK;
}

convfind_status cf_db_foreach_system(cf_db *db, const char *key, cf_db_record_fn fn, void *arg)
{
    if (!db || !fn)
        return cf_fail(CONVFIND_ERR_NULL_POINTER,
                       "cf_db_foreach_system: db and fn must not be NULL");
    walk_arg a = {.key = key, .fn = fn, .fn_arg = arg};
    pthread_mutex_lock(&db->mu);
    /* Straight on the connection: the system tier is read-only, nothing to recover. */
    int rc = db->sys ? walk_op(db, db->sys, &a) : SQLITE_OK;
    pthread_mutex_unlock(&db->mu);
    if (rc != SQLITE_OK && rc != SQLITE_DONE)
        return cf_fail(CONVFIND_ERR_IO, "reading the system database failed: %s",
                       sqlite3_errstr(rc));
    return CONVFIND_OK;
}

int cf_db_count_record(const cf_db_record *r, void *arg)
{
    cf_db_stats *s = ((void **)arg)[0];
    const cf_db *db = ((void **)arg)[1];
    s->records++;
    if (cf_db_env_equal(&r->env, &db->cfg.env))
        s->current++;
    else
        s->foreign++;
    return 0;
}

static int64_t count_rows(sqlite3 *conn, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t n = 0;
    if (conn && sqlite3_prepare_v2(conn, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

convfind_status cf_db_get_stats(cf_db *db, cf_db_stats *out)
{
    if (!db || !out)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "cf_db_get_stats: db and out must not be NULL");
    memset(out, 0, sizeof *out);
    void *pair[2] = {out, db};
    walk_arg a = {.fn = cf_db_count_record, .fn_arg = pair};
    pthread_mutex_lock(&db->mu);
    cf_fleet_counters(db, out);
    if (db->cfg.fleet_only) {
        convfind_status st = cf_fleet_get_stats(db, out);
        out->file_bytes = -1;
        pthread_mutex_unlock(&db->mu);
        return st;
    }
    int rc = cf_db_run(db, walk_op, &a);
    out->unreadable = a.unreadable;
    out->records += a.unreadable;
    out->leases = (size_t)count_rows(db->user, "SELECT count(*) FROM leases");
    out->system_records = (size_t)count_rows(db->sys, "SELECT count(*) FROM decisions");
    cf_db_artifact_totals(db->user, &out->artifacts, &out->artifact_bytes);
    struct stat st;
    out->file_bytes = db->file && (db->persistent || db->exists) && stat(db->file, &st) == 0
                          ? (int64_t)st.st_size
                          : -1;
    out->pending = db->n_pending;
    out->unstored = db->unstored;
    out->stored = db->stored;
    pthread_mutex_unlock(&db->mu);
    if (rc != SQLITE_OK)
        return cf_fail(CONVFIND_ERR_IO, "reading database %s failed: %s", cf_db_location(db),
                       sqlite3_errstr(rc));
    return CONVFIND_OK;
}

typedef struct export_arg {
    convfind_write_fn write;
    void *user;
    size_t count;
    bool failed;
} export_arg;

static int export_record(const cf_db_record *r, void *arg)
{
    export_arg *e = arg;
    char *line = cf_db_record_to_jsonl(r);
    size_t n = line ? strlen(line) : 0;
    if (line)
        line[n++] = '\n'; /* over the terminator: the line is written with its length */
    if (!line || e->write(e->user, line, n) != 0)
        e->failed = true;
    free(line);
    e->count += !e->failed;
    return e->failed;
}

convfind_status cf_db_export(cf_db *db, convfind_write_fn write, void *user, size_t *count)
{
    if (!db || !write)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "cf_db_export: db and write must not be NULL");
    export_arg e = {.write = write, .user = user};
    convfind_status st = cf_db_foreach(db, NULL, export_record, &e);
    if (count)
        *count = e.count;
    if (st == CONVFIND_OK && e.failed)
        st = cf_fail(CONVFIND_ERR_IO, "writing the export failed after %zu records", e.count);
    return st;
}

typedef struct import_arg {
    cf_db_record *records;
    size_t n;
} import_arg;

/* Every record keeps the environment and provenance it came with: an imported decision
 * from another machine is foreign here until re-timed, exactly as if measured there. */
int cf_db_put_records(sqlite3 *conn, const cf_db_record *records, size_t n)
{
    int rc = cf_db_exec(conn, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_stmt *ins = NULL;
    rc = cf_db_insert_prepare(conn, &ins);
    for (size_t i = 0; rc == SQLITE_OK && i < n; i++) {
        const cf_db_record *r = &records[i];
        cf_db_row row;
        if (cf_db_row_make(r->key, &r->decision, &row) != CONVFIND_OK) {
            rc = SQLITE_NOMEM;
            break;
        }
        rc = cf_db_insert(ins, &row, &r->env, r->host, r->time);
        cf_db_row_free(&row);
    }
    sqlite3_finalize(ins);
    if (rc == SQLITE_OK)
        rc = cf_db_exec(conn, "COMMIT");
    if (rc != SQLITE_OK)
        cf_db_exec(conn, "ROLLBACK");
    return rc;
}

static int import_op(cf_db *db, sqlite3 *conn, void *varg)
{
    (void)db;
    const import_arg *a = varg;
    return cf_db_put_records(conn, a->records, a->n);
}

/* The caller's input, read in blocks through its function. */
typedef struct reader {
    convfind_read_fn read;
    void *user;
    size_t pos, len;
    bool end, error;
    char block[65536];
} reader;

/* The next byte, or -1 at the end of the input or after a read error. */
static int next_byte(reader *r)
{
    if (r->pos == r->len) {
        if (r->end || r->error)
            return -1;
        long n = r->read(r->user, r->block, sizeof r->block);
        if (n < 0 || (size_t)n > sizeof r->block)
            r->error = true;
        else if (n == 0)
            r->end = true;
        if (n <= 0 || r->error)
            return -1;
        r->pos = 0;
        r->len = (size_t)n;
    }
    return (unsigned char)r->block[r->pos++];
}

/* Reads one line into `buf` (IMPORT_LINE_MAX + 1 bytes), without its newline.
 * Returns 1 with *len set, 0 at the end of the input, -1 for a line longer than
 * IMPORT_LINE_MAX (the rest of it is not read: a huge "line" must not be taken into
 * memory first) and -2 for a read error. */
static int read_line(reader *r, char *buf, size_t *len)
{
    size_t n = 0;
    int c;
    while ((c = next_byte(r)) != -1 && c != '\n') {
        if (n == IMPORT_LINE_MAX)
            return -1;
        buf[n++] = (char)c;
    }
    if (r->error)
        return -2;
    if (c == -1 && n == 0)
        return 0;
    while (n > 0 && buf[n - 1] == '\r')
        n--;
    buf[n] = '\0';
    *len = n;
    return 1;
}

/* Parses and checks every line of `r` into a->records; nothing is stored here. */
static convfind_status read_records(const cf_db *db, reader *r, const char *name,
                                    import_arg *a)
{
    char *line = malloc(IMPORT_LINE_MAX + 1);
    if (!line)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "%s: cannot allocate a line buffer", name);
    size_t cap = 0, lineno = 0, len = 0;
    convfind_status st = CONVFIND_OK;
    int got;
    while (st == CONVFIND_OK && (got = read_line(r, line, &len)) != 0) {
        lineno++;
        if (got == -1) {
            st = cf_fail(CONVFIND_ERR_IO, "%s:%zu: line longer than %d bytes", name, lineno,
                         IMPORT_LINE_MAX);
            break;
        }
        if (got == -2) {
            st = cf_fail(CONVFIND_ERR_IO, "%s:%zu: read error", name, lineno);
            break;
        }
        if (len == 0)
            continue;
        if (a->n == cap) {
            size_t ncap = cap ? 2 * cap : 64;
            cf_db_record *r = realloc(a->records, ncap * sizeof *r);
            if (!r) {
                st = cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "%s:%zu: cannot hold %zu records", name,
                             lineno, ncap);
                break;
            }
            a->records = r;
            cap = ncap;
        }
        cf_db_record *rec = &a->records[a->n];
        if ((st = cf_db_record_from_jsonl(line, len, rec)) == CONVFIND_OK) {
            a->n++;
            st = cf_db_check_usable(db, rec->key, &rec->decision);
        }
        if (st != CONVFIND_OK) {
            char msg[400];
            snprintf(msg, sizeof msg, "%s", convfind_last_error());
            st = cf_fail(st == CONVFIND_ERR_OUT_OF_MEMORY ? st : CONVFIND_ERR_IO, "%s:%zu: %s",
                         name, lineno, msg);
            break;
        }
    }
    free(line);
    return st;
}

convfind_status cf_db_import(cf_db *db, convfind_read_fn read, void *user, const char *name,
                             size_t *count)
{
    if (!db || !read)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "cf_db_import: db and read must not be NULL");
    if (!name)
        name = "import";
    if (count)
        *count = 0;
    import_arg a = {0};
    reader *r = malloc(sizeof *r);
    if (!r)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "%s: cannot allocate a read buffer", name);
    *r = (reader){.read = read, .user = user};
    convfind_status st = read_records(db, r, name, &a);
    free(r);
    if (st == CONVFIND_OK && a.n > 0 && db->cfg.fleet_only) {
        pthread_mutex_lock(&db->mu);
        st = cf_fleet_put_records(db, a.records, a.n);
        pthread_mutex_unlock(&db->mu);
    } else if (st == CONVFIND_OK && a.n > 0) {
        pthread_mutex_lock(&db->mu);
        int rc = db->writable ? cf_db_run(db, import_op, &a) : SQLITE_READONLY;
        pthread_mutex_unlock(&db->mu);
        if (rc != SQLITE_OK)
            st = cf_fail(CONVFIND_ERR_IO, "storing %zu imported records in %s failed: %s", a.n,
                         cf_db_location(db), sqlite3_errstr(rc));
    }
    if (st == CONVFIND_OK && count)
        *count = a.n;
    for (size_t i = 0; i < a.n; i++)
        cf_db_record_clear(&a.records[i]);
    free(a.records);
    return st;
}

static int delete_row(sqlite3 *conn, sqlite3_stmt *row, void *arg)
{
    (void)arg;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(conn, "DELETE FROM decisions WHERE key=?1 AND library_version=?2 "
                                "AND backend_versions=?3 AND device=?4", -1, &st, NULL);
    for (int i = 0; rc == SQLITE_OK && i < 4; i++)
        rc = sqlite3_bind_value(st, i + 1, sqlite3_column_value(row, i));
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_DONE)
        rc = SQLITE_OK;
    sqlite3_finalize(st);
    return rc;
}

typedef struct prune_arg {
    size_t removed;
} prune_arg;

static int prune_op(cf_db *db, sqlite3 *conn, void *varg)
{
    prune_arg *p = varg;
    int rc = cf_db_exec(conn, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_stmt *st = NULL;
    rc = sqlite3_prepare_v2(conn, "DELETE FROM decisions WHERE NOT (library_version=?1 AND "
                            "backend_versions=?2 AND device=?3)", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, db->cfg.env.library, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, db->cfg.env.backends, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, db->cfg.env.device, -1, SQLITE_STATIC);
        if ((rc = sqlite3_step(st)) == SQLITE_DONE)
            rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    p->removed = (size_t)sqlite3_changes(conn);
    walk_arg w = {.bad = delete_row};
    if (rc == SQLITE_OK && (rc = walk_op(db, conn, &w)) == SQLITE_DONE)
        rc = SQLITE_OK;
    p->removed += w.unreadable;
    /* Compiled forms go with their decision: after the deletions above, so that those of
     * unreadable and foreign records go too. */
    size_t artifacts = 0;
    if (rc == SQLITE_OK)
        rc = cf_db_prune_artifacts(db, conn, &artifacts);
    p->removed += artifacts;
    /* Leases: collect the dead ones first, then delete them by key. */
    st = NULL;
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(conn, "SELECT key, pid, owner, host, expires_ms FROM leases", -1,
                                &st, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *host = (const char *)sqlite3_column_text(st, 3);
        rc = SQLITE_OK;
        if (cf_db_lease_live(db, sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
                             host ? host : "", sqlite3_column_int64(st, 4)) ||
            (sqlite3_column_int64(st, 2) == db->owner &&
             sqlite3_column_int64(st, 1) == (int64_t)getpid() && host &&
             strcmp(host, db->host) == 0))
            continue;
        sqlite3_stmt *del = NULL;
        rc = sqlite3_prepare_v2(conn, "DELETE FROM leases WHERE key=?1", -1, &del, NULL);
        if (rc == SQLITE_OK) {
            sqlite3_bind_value(del, 1, sqlite3_column_value(st, 0));
            if ((rc = sqlite3_step(del)) == SQLITE_DONE)
                rc = SQLITE_OK;
        }
        sqlite3_finalize(del);
    }
    if (rc == SQLITE_DONE)
        rc = SQLITE_OK;
    sqlite3_finalize(st);
    if (rc == SQLITE_OK)
        rc = cf_db_exec(conn, "COMMIT");
    if (rc != SQLITE_OK)
        cf_db_exec(conn, "ROLLBACK");
    return rc;
}

convfind_status cf_db_prune(cf_db *db, size_t *removed)
{
    if (!db)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "cf_db_prune: db is NULL");
    prune_arg p = {0};
    pthread_mutex_lock(&db->mu);
    if (db->cfg.fleet_only) {
        convfind_status st = cf_fleet_prune(db, &p.removed);
        pthread_mutex_unlock(&db->mu);
        if (removed)
            *removed = p.removed;
        return st;
    }
    int rc = cf_db_run(db, prune_op, &p);
    pthread_mutex_unlock(&db->mu);
    if (removed)
        *removed = rc == SQLITE_OK ? p.removed : 0;
    if (rc != SQLITE_OK)
        return cf_fail(CONVFIND_ERR_IO, "pruning database %s failed: %s", cf_db_location(db),
                       sqlite3_errstr(rc));
    return CONVFIND_OK;
}

typedef struct verify_arg {
    char problem[700];
    size_t unreadable;
} verify_arg;

static int verify_op(cf_db *db, sqlite3 *conn, void *varg)
{
    verify_arg *v = varg;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(conn, "PRAGMA integrity_check", -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *res = (const char *)sqlite3_column_text(st, 0);
        if (!res || strcmp(res, "ok") != 0) {
            snprintf(v->problem, sizeof v->problem, "integrity check: %.250s", res ? res : "?");
            cf_db_one_line(v->problem);
        }
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    walk_arg w = {0};
    if (rc == SQLITE_OK && (rc = walk_op(db, conn, &w)) == SQLITE_DONE)
        rc = SQLITE_OK;
    v->unreadable = w.unreadable;
    if (!v->problem[0] && w.unreadable)
        snprintf(v->problem, sizeof v->problem,
                 "%zu stored decision(s) this build cannot read or use; first: %s",
                 w.unreadable, w.first_bad);
    return rc;
}

convfind_status cf_db_verify(cf_db *db, size_t *bad)
{
    if (!db)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "cf_db_verify: db is NULL");
    if (db->cfg.fleet_only)
        return cf_fail(CONVFIND_ERR_UNSUPPORTED, "verify is for SQLite files, not the fleet tier");
    verify_arg v = {{0}, 0};
    pthread_mutex_lock(&db->mu);
    /* Straight on the connection, not through cf_db_run: verification reports damage,
     * it must never be what quarantines the file. */
    bool missing = db->cfg.mode == CF_DB_INSPECT && db->file && !db->exists;
    int rc = missing ? SQLITE_OK : db->user ? verify_op(db, db->user, &v) : SQLITE_CANTOPEN;
    pthread_mutex_unlock(&db->mu);
    if (missing)
        return cf_fail(CONVFIND_ERR_IO, "database %s does not exist", cf_db_location(db));
    if (bad)
        *bad = v.unreadable;
    if (rc != SQLITE_OK)
        return cf_fail(CONVFIND_ERR_IO, "verifying database %s failed: %s", cf_db_location(db),
                       sqlite3_errstr(rc));
    if (v.problem[0])
        return cf_fail(CONVFIND_ERR_IO, "database %s: %s", cf_db_location(db), v.problem);
    return CONVFIND_OK;
}

static int vacuum_op(cf_db *db, sqlite3 *conn, void *arg)
{
    (void)db;
    (void)arg;
    return cf_db_exec(conn, "VACUUM");
}

convfind_status cf_db_vacuum(cf_db *db)
{
    if (!db)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "cf_db_vacuum: db is NULL");
    if (db->cfg.fleet_only)
        return cf_fail(CONVFIND_ERR_UNSUPPORTED, "vacuum is for SQLite files, not the fleet tier");
    pthread_mutex_lock(&db->mu);
    int rc = cf_db_run(db, vacuum_op, NULL);
    pthread_mutex_unlock(&db->mu);
    if (rc != SQLITE_OK)
        return cf_fail(CONVFIND_ERR_IO, "vacuuming database %s failed: %s", cf_db_location(db),
                       sqlite3_errstr(rc));
    return CONVFIND_OK;
}
