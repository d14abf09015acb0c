/*
 * fleet_admin.c - what `convfind db --fleet URL` does to the fleet tier itself: walk
 * its records (list, show, export), count them (stats), import records and prune (see
 * fleet.h).
 *
 * The walk reads the records in pages, in primary-key order, each page starting after
 * the last row of the one before, so a fleet of any size is never held in memory at
 * once.  Pruning removes expired leases and records that do not parse; records of other
 * environments stay, since in a fleet they are other machines' decisions.
 */
#include "db/fleet_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE_ROWS "500"
#define WALK_COLUMNS                                                                           \
    "SELECT key, library_version, backend_versions, device, decision, host, created_at, "       \
    "budget_ms "                                                                                \
    "FROM convfind_fleet_decisions "
#define WALK_ORDER " ORDER BY key, library_version, backend_versions, device LIMIT " PAGE_ROWS

typedef struct fleet_walk {
    const char *key;   /* one key only, or NULL */
    cf_db_record_fn fn;
    void *arg;
    size_t unreadable;
    bool delete_unreadable;
    size_t deleted;
} fleet_walk;

/* The record of row `i` (WALK_COLUMNS); CONVFIND_ERR_IO when its decision does not
 * parse or this build cannot use it. */
static convfind_status row_record(const cf_db *db, const cf_pq_result *r, int i,
                                  cf_db_record *rec)
{
    memset(rec, 0, sizeof *rec);
    convfind_status st = cf_db_load_decision(db, cf_pq_value(r, i, 0), cf_pq_value(r, i, 4),
                                             (size_t)cf_pq_length(r, i, 4), &rec->decision);
    if (st != CONVFIND_OK)
        return st;
    snprintf(rec->env.library, sizeof rec->env.library, "%s", cf_pq_value(r, i, 1));
    snprintf(rec->env.backends, sizeof rec->env.backends, "%s", cf_pq_value(r, i, 2));
    snprintf(rec->env.device, sizeof rec->env.device, "%s", cf_pq_value(r, i, 3));
    snprintf(rec->host, sizeof rec->host, "%s", cf_pq_value(r, i, 5));
    rec->time = strtoll(cf_pq_value(r, i, 6), NULL, 10);
    rec->decision.budget_ms = strtod(cf_pq_value(r, i, 7), NULL);
    rec->key = strdup(cf_pq_value(r, i, 0));
    if (!rec->key) {
        cf_db_record_clear(rec);
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot copy a key");
    }
    return CONVFIND_OK;
}

static convfind_status lost(cf_db *db)
{
    return cf_fail(CONVFIND_ERR_IO, "fleet tier %s: %s", cf_fleet_where(db),
                   cf_fleet_last_error(db));
}

/* Deletes row `i` of a page by its primary key.  False after a fault. */
static bool delete_row(cf_db *db, const cf_pq_result *r, int i)
{
    const char *p[] = {cf_pq_value(r, i, 0), cf_pq_value(r, i, 1), cf_pq_value(r, i, 2),
                       cf_pq_value(r, i, 3)};
    cf_pq_result *d = cf_fleet_run(db, "deleting a record",
                                   "DELETE FROM convfind_fleet_decisions WHERE key = $1 AND "
                                   "library_version = $2 AND backend_versions = $3 AND device = $4",
                                   4, p);
    cf_pq_clear(d);
    return d != NULL;
}

/* One page: calls fn for each readable row.  Returns the rows read (-1 after a fault)
 * and copies the last row's primary key into `last` for the next page. */
static int walk_page(cf_db *db, fleet_walk *w, char *last[4], bool *stop)
{
    cf_pq_result *r;
    if (w->key) {
        const char *p[] = {w->key};
        r = cf_fleet_run(db, "reading records", WALK_COLUMNS "WHERE key = $1" WALK_ORDER, 1, p);
    } else if (last[0]) {
        const char *p[] = {last[0], last[1], last[2], last[3]};
        r = cf_fleet_run(db, "reading records",
                         WALK_COLUMNS "WHERE (key, library_version, backend_versions, device) > "
                                      "($1, $2, $3, $4)" WALK_ORDER,
                         4, p);
    } else {
        r = cf_fleet_run(db, "reading records", WALK_COLUMNS WALK_ORDER, 0, NULL);
    }
    if (!r)
        return -1;
    int n = cf_pq_rows(r);
    for (int i = 0; i < n && !*stop; i++) {
        cf_db_record rec;
        if (row_record(db, r, i, &rec) != CONVFIND_OK) {
            w->unreadable++;
            if (w->delete_unreadable) {
                if (!delete_row(db, r, i)) {
                    cf_pq_clear(r);
                    return -1;
                }
                w->deleted++;
            }
            continue;
        }
        *stop = w->fn && w->fn(&rec, w->arg) != 0;
        cf_db_record_clear(&rec);
    }
    for (int c = 0; c < 4 && n > 0; c++) {
        free(last[c]);
        last[c] = strdup(cf_pq_value(r, n - 1, c));
    }
    cf_pq_clear(r);
    return n;
}

static convfind_status walk(cf_db *db, fleet_walk *w)
{
    if (!cf_fleet_has_tables(db))
        return CONVFIND_OK; /* a server nobody has used yet: no records */
    char *last[4] = {NULL, NULL, NULL, NULL};
    bool stop = false;
    int n;
    while ((n = walk_page(db, w, last, &stop)) > 0 && !stop && !w->key &&
           n == atoi(PAGE_ROWS) && last[0] && last[1] && last[2] && last[3])
        continue;
    for (int c = 0; c < 4; c++)
        free(last[c]);
    return n < 0 ? lost(db) : CONVFIND_OK;
}

convfind_status cf_fleet_foreach(cf_db *db, const char *key, cf_db_record_fn fn, void *arg)
{
    fleet_walk w = {.key = key, .fn = fn, .arg = arg};
    return walk(db, &w);
}

convfind_status cf_fleet_get_stats(cf_db *db, cf_db_stats *out)
{
    void *pair[2] = {out, db};
    fleet_walk w = {.fn = cf_db_count_record, .arg = pair};
    convfind_status st = walk(db, &w);
    out->unreadable = w.unreadable;
    out->records += w.unreadable;
    if (st != CONVFIND_OK || !cf_fleet_has_tables(db))
        return st;
    cf_pq_result *r = cf_fleet_run(db, "counting leases",
                                   "SELECT count(*) FROM convfind_fleet_leases", 0, NULL);
    if (!r)
        return lost(db);
    out->leases = (size_t)strtoull(cf_pq_value(r, 0, 0), NULL, 10);
    cf_pq_clear(r);
    return CONVFIND_OK;
}

/* BEGIN, `body`, COMMIT: a fault anywhere ends the connection, and the server rolls the
 * transaction back with it. */
static bool in_transaction(cf_db *db, bool (*body)(cf_db *db, void *arg), void *arg)
{
    cf_pq_result *r = cf_fleet_run(db, "starting a transaction", "BEGIN", 0, NULL);
    cf_pq_clear(r);
    if (!r || !body(db, arg))
        return false;
    r = cf_fleet_run(db, "committing", "COMMIT", 0, NULL);
    cf_pq_clear(r);
    return r != NULL;
}

typedef struct put_arg {
    const cf_db_record *records;
    size_t n;
    bool oom;
} put_arg;

static bool put_body(cf_db *db, void *varg)
{
    put_arg *a = varg;
    for (size_t i = 0; i < a->n; i++) {
        const cf_db_record *rec = &a->records[i];
        char *json = cf_db_decision_to_json(&rec->decision);
        char bad[1024];
        cf_db_bad_candidates(&rec->decision, bad, sizeof bad);
        const cf_fleet_row row = {.key = rec->key, .env = &rec->env, .algo = rec->decision.algo,
                                  .json = json, .bad = bad, .host = rec->host,
                                  .time = rec->time, .budget_ms = rec->decision.budget_ms};
        bool ok = json && cf_fleet_push_one(db, FLEET_SQL_PUSH, &row);
        a->oom = !json;
        free(json);
        if (!ok)
            return false;
    }
    return true;
}

convfind_status cf_fleet_put_records(cf_db *db, const cf_db_record *records, size_t n)
{
    put_arg a = {.records = records, .n = n};
    if (in_transaction(db, put_body, &a))
        return CONVFIND_OK;
    if (a.oom)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot encode a decision");
    return cf_fail(CONVFIND_ERR_IO, "storing %zu records in fleet tier %s failed: %s", n,
                   cf_fleet_where(db), cf_fleet_last_error(db));
}

typedef struct prune_arg {
    size_t removed;
} prune_arg;

static bool prune_body(cf_db *db, void *varg)
{
    prune_arg *p = varg;
    cf_pq_result *r = cf_fleet_run(db, "deleting expired leases",
                                   "WITH gone AS (DELETE FROM convfind_fleet_leases WHERE "
                                   "expires_at <= clock_timestamp() RETURNING 1) "
                                   "SELECT count(*) FROM gone",
                                   0, NULL);
    if (!r)
        return false;
    p->removed = (size_t)strtoull(cf_pq_value(r, 0, 0), NULL, 10);
    cf_pq_clear(r);
    fleet_walk w = {.delete_unreadable = true};
    bool ok = walk(db, &w) == CONVFIND_OK;
    p->removed += w.deleted;
    return ok;
}

convfind_status cf_fleet_prune(cf_db *db, size_t *removed)
{
    prune_arg p = {0};
    if (!cf_fleet_has_tables(db)) {
        *removed = 0;
        return CONVFIND_OK;
    }
    bool ok = in_transaction(db, prune_body, &p);
    *removed = ok ? p.removed : 0;
    return ok ? CONVFIND_OK
              : cf_fail(CONVFIND_ERR_IO, "pruning fleet tier %s failed: %s", cf_fleet_where(db),
                        cf_fleet_last_error(db));
}
