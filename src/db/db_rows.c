/*
 * db_rows.c - the decisions table's row format, in one place: the columns a record is
 * written as (a store and an import write the same row) and read from, for every schema
 * version this build reads (see db_internal.h, docs/db.md "Schema").
 *
 * A file of schema 1 that this build does not migrate (a read-only file, the system
 * tier, one under inspection) has no measurement columns; its records read with an
 * unknown budget, which makes them low-confidence (decision/confidence.h).
 */
#include "db/db_internal.h"

#include <stdlib.h>
#include <string.h>

#include "decision/confidence.h"

int cf_db_schema_of(sqlite3 *conn)
{
    sqlite3_stmt *st = NULL;
    int v = 0;
    if (sqlite3_prepare_v2(conn, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

const char *cf_db_budget_column(sqlite3 *conn)
{
    return cf_db_schema_of(conn) >= 2 ? "budget_ms" : "NULL";
}

void cf_db_row_free(cf_db_row *r)
{
    free(r->key);
    free(r->algo);
    free(r->json);
    free(r->bad);
    memset(r, 0, sizeof *r);
}

convfind_status cf_db_row_make(const char *key, const cf_decision *d, cf_db_row *r)
{
    char bad[1024];
    cf_db_bad_candidates(d, bad, sizeof bad);
    memset(r, 0, sizeof *r);
    r->key = strdup(key);
    r->algo = strdup(d->algo);
    r->json = cf_db_decision_to_json(d);
    r->bad = strdup(bad);
    r->budget_ms = d->budget_ms;
    cf_confidence c;
    cf_decision_confidence(d, &c);
    r->spread = c.spread;
    r->runner_up = c.runner_up;
    r->margin = c.margin;
    if (r->key && r->algo && r->json && r->bad)
        return CONVFIND_OK;
    cf_db_row_free(r);
    return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot encode a decision");
}

int cf_db_insert_prepare(sqlite3 *conn, sqlite3_stmt **ins)
{
    return sqlite3_prepare_v2(conn,
                              "INSERT OR REPLACE INTO decisions(key, library_version, "
                              "backend_versions, device, algo, decision, bad_candidates, host, "
                              "created_at, budget_ms, spread, margin) "
                              "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                              -1, ins, NULL);
}

int cf_db_insert(sqlite3_stmt *ins, const cf_db_row *r, const cf_db_env *env, const char *host,
                 int64_t time)
{
    sqlite3_reset(ins);
    sqlite3_clear_bindings(ins);
    sqlite3_bind_text(ins, 1, r->key, -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 2, env->library, -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 3, env->backends, -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 4, env->device, -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 5, r->algo, -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 6, r->json, -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 7, r->bad, -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 8, host, -1, SQLITE_STATIC);
    sqlite3_bind_int64(ins, 9, time);
    /* NULL, not 0, for what is unknown: a reader of the file can tell them apart. */
    if (r->budget_ms > 0)
        sqlite3_bind_double(ins, 10, r->budget_ms);
    sqlite3_bind_double(ins, 11, r->spread);
    if (r->runner_up)
        sqlite3_bind_double(ins, 12, r->margin);
    int rc = sqlite3_step(ins);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* The budget column's value: a positive finite number of milliseconds, else unknown.
 * The rest of a row is checked by the decision loader. */
double cf_db_column_budget(sqlite3_stmt *st, int col)
{
    const int type = sqlite3_column_type(st, col);
    if (type != SQLITE_FLOAT && type != SQLITE_INTEGER)
        return 0;
    double v = sqlite3_column_double(st, col);
    return v > 0 && v <= CF_DB_BUDGET_MAX_MS ? v : 0;
}
