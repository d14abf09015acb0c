/*
 * fleet_sync.c - pushing what this host measured and the fleet lacks, at every
 * connection to the fleet tier (see fleet.c).
 *
 * The user tier knows what was measured here: its records of this environment whose
 * provenance is this host (a copy from the fleet keeps the measuring host's name, so it
 * is never sent back).  Their keys go to the server in batches and come back as those
 * it has no record of; only those are pushed, and never over a record the fleet got
 * meanwhile.  A fleet that has everything costs one round trip per batch of keys.
 */
#include "db/fleet_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEYS_PER_BATCH 256

typedef struct local_row {
    char *key, *algo, *json, *bad;
    int64_t time;
    double budget_ms;
} local_row;

typedef struct local_rows {
    local_row *v;
    size_t n;
    bool oom;
} local_rows;

static char *copy_column(sqlite3_stmt *st, int col)
{
    const char *t = (const char *)sqlite3_column_text(st, col);
    return strdup(t ? t : "");
}

/* This host's records of this environment, in key order. */
static int collect_op(cf_db *db, sqlite3 *conn, void *arg)
{
    local_rows *rows = arg;
    sqlite3_stmt *st = NULL;
    char sql[300];
    snprintf(sql, sizeof sql,
             "SELECT key, algo, decision, bad_candidates, created_at, %s FROM decisions "
             "WHERE library_version=?1 AND backend_versions=?2 AND device=?3 AND host=?4 "
             "ORDER BY key",
             cf_db_budget_column(conn));
    int rc = sqlite3_prepare_v2(conn, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_bind_text(st, 1, db->cfg.env.library, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, db->cfg.env.backends, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, db->cfg.env.device, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, db->host, -1, SQLITE_STATIC);
    size_t cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && !rows->oom) {
        if (rows->n == cap) {
            size_t ncap = cap ? 2 * cap : 64;
            local_row *v = realloc(rows->v, ncap * sizeof *v);
            if (!v) {
                rows->oom = true;
                break;
            }
            rows->v = v;
            cap = ncap;
        }
        local_row *r = &rows->v[rows->n++];
        r->key = copy_column(st, 0);
        r->algo = copy_column(st, 1);
        r->json = copy_column(st, 2);
        r->bad = copy_column(st, 3);
        r->time = sqlite3_column_int64(st, 4);
        r->budget_ms = cf_db_column_budget(st, 5);
        rows->oom = !r->key || !r->algo || !r->json || !r->bad;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || rows->oom ? SQLITE_OK : rc;
}

/* PostgreSQL's text[] literal of keys v[0..n): each quoted, '"' and '\' escaped.
 * malloc'd; NULL when out of memory. */
static char *array_literal(const local_row *v, size_t n)
{
    size_t size = 3;
    for (size_t i = 0; i < n; i++)
        size += 2 * strlen(v[i].key) + 3;
    char *s = malloc(size), *p = s;
    if (!s)
        return NULL;
    *p++ = '{';
    for (size_t i = 0; i < n; i++) {
        if (i)
            *p++ = ',';
        *p++ = '"';
        for (const char *k = v[i].key; *k; k++) {
            if (*k == '"' || *k == '\\')
                *p++ = '\\';
            *p++ = *k;
        }
        *p++ = '"';
    }
    *p++ = '}';
    *p = '\0';
    return s;
}

static int by_key(const void *key, const void *row)
{
    return strcmp(key, ((const local_row *)row)->key);
}

/* Pushes the rows of one batch the fleet lacks.  False after a fault. */
static bool push_missing(cf_db *db, const local_row *batch, size_t n)
{
    char *keys = array_literal(batch, n);
    if (!keys)
        return false;
    const char *p[] = {keys, db->cfg.env.library, db->cfg.env.backends, db->cfg.env.device};
    cf_pq_result *r = cf_fleet_run(db, "finding what the fleet lacks", FLEET_SQL_MISSING, 4, p);
    free(keys);
    if (!r)
        return false;
    bool ok = true;
    for (int i = 0; ok && i < cf_pq_rows(r); i++) {
        const local_row *l = bsearch(cf_pq_value(r, i, 0), batch, n, sizeof *batch, by_key);
        if (!l)
            continue;
        const cf_fleet_row row = {.key = l->key, .env = &db->cfg.env, .algo = l->algo,
                                  .json = l->json, .bad = l->bad, .host = db->host,
                                  .time = l->time, .budget_ms = l->budget_ms};
        ok = cf_fleet_push_one(db, FLEET_SQL_PUSH_KEEP, &row);
    }
    cf_pq_clear(r);
    return ok;
}

void cf_fleet_sync(cf_db *db)
{
    local_rows rows = {0};
    if (cf_db_run(db, collect_op, &rows) == SQLITE_OK && !rows.oom)
        for (size_t i = 0; i < rows.n; i += KEYS_PER_BATCH)
            if (!push_missing(db, rows.v + i, rows.n - i < KEYS_PER_BATCH ? rows.n - i
                                                                          : KEYS_PER_BATCH))
                break;
    for (size_t i = 0; i < rows.n; i++) {
        free(rows.v[i].key);
        free(rows.v[i].algo);
        free(rows.v[i].json);
        free(rows.v[i].bad);
    }
    free(rows.v);
}
