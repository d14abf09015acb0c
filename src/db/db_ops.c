/*
 * db_ops.c - the find path's use of the database: lookup across tiers with the
 * environment check, batched stores, and leases between processes (see db.h).
 *
 * Stores go through a pending list: a decision is appended, then every pending one is
 * written in one transaction.  When another process holds the write lock past the busy
 * timeout they stay pending and the handle tries no write (store or lease) for another
 * busy timeout, so that a locked database costs one wait, not one per key; the next
 * store after that, or cf_db_flush at the latest, writes them.  Nothing is ever
 * dropped without being counted in `unstored`.
 *
 * A lease row (key, pid, owner, host, expires_ms) says "this handle of this process is
 * measuring this key".  It is taken and checked inside one write transaction, so two
 * handles can never both believe they hold it, whether they are in two processes or
 * in one (two contexts on one database).  It stops protecting its key when it expires
 * or, on the same host, when its process no longer exists (kill(pid, 0) == ESRCH) or,
 * in this process, when its handle was closed: a process killed in the middle of a
 * Find blocks nobody for long.
 */
#include "db/db_internal.h"
#include "db/fleet.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

bool cf_db_lease_live(const cf_db *db, int64_t pid, int64_t owner, const char *host,
                      int64_t expires_ms)
{
    if (expires_ms <= cf_db_now_ms())
        return false;
    if (strcmp(host, db->host) != 0)
        return true; /* another host: only the expiry time can tell */
    if (pid == (int64_t)getpid())
        return owner != db->owner && cf_db_owner_is_open(owner);
    return !(pid <= 0 || (kill((pid_t)pid, 0) != 0 && errno == ESRCH));
}

typedef struct lookup_arg {
    const char *key;
    const cf_db_env *env;
    cf_decision dec;
    bool found, exact;
} lookup_arg;

/* The best row of one tier for a key: this environment's if any, else the newest. */
static int tier_lookup(cf_db *db, sqlite3 *conn, void *varg)
{
    lookup_arg *a = varg;
    cf_decision_clear(&a->dec);
    a->found = a->exact = false;
    sqlite3_stmt *st = NULL;
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT decision, library_version=?2 AND backend_versions=?3 AND device=?4 AS "
             "exact, %s FROM decisions WHERE key=?1 ORDER BY exact DESC, created_at DESC",
             cf_db_budget_column(conn));
    int rc = sqlite3_prepare_v2(conn, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_bind_text(st, 1, a->key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, a->env->library, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, a->env->backends, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, a->env->device, -1, SQLITE_STATIC);
    /* A row that does not parse (written by a damaged or hostile tool), or that this
     * build cannot use (an unknown algorithm, one that cannot run the key's problem,
     * every candidate failed), is skipped, not trusted: without another row the key is a
     * miss, measured again under the policy.  The next row of the key may still serve. */
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(st, 0);
        size_t len = (size_t)sqlite3_column_bytes(st, 0);
        if (!text) {
            cf_fail(CONVFIND_ERR_IO, "the decision column is NULL");
        } else if (cf_db_load_decision(db, a->key, text, len, &a->dec) == CONVFIND_OK) {
            a->found = true;
            a->exact = sqlite3_column_int(st, 1) != 0;
            a->dec.budget_ms = cf_db_column_budget(st, 2);
            rc = SQLITE_DONE;
            break;
        }
        if (!db->warned_unreadable) {
            db->warned_unreadable = true;
            cf_db_warn(db, "ignoring a stored decision for key %s that this build cannot read "
                       "or use: %s", a->key, convfind_last_error());
        }
    }
    sqlite3_finalize(st);
    return rc;
}

static void warn_foreign(cf_db *db, const char *key)
{
    if (db->warned_foreign)
        return;
    db->warned_foreign = true;
    char env[420];
    cf_db_env_describe(&db->cfg.env, env, sizeof env);
    /* The whole key: a key cut in the middle of a field names another problem. */
    cf_db_warn(db, "stored decisions (first: key %s) were measured in another environment "
               "than %s; %s", key, env,
               db->cfg.env_policy == CONVFIND_DB_ENV_RETUNE
                   ? "re-timing their top candidates"
                   : "ignoring them (db_env_policy IGNORE)");
}

void cf_db_read_failed(cf_db *db, const char *what, int rc)
{
    if (db->warned_read)
        return;
    db->warned_read = true;
    cf_db_warn(db, "reading %s failed (%s); treating it as a miss", what, sqlite3_errstr(rc));
}

/* cf_db_lookup without the lock and the argument checks. */
static cf_db_found lookup_locked(cf_db *db, const char *key, cf_decision *out)
{
    lookup_arg u = {.key = key, .env = &db->cfg.env};
    lookup_arg s = u, f = u;
    int rc = cf_db_run(db, tier_lookup, &u);
    if (rc != SQLITE_OK) {
        cf_db_read_failed(db, db->file ? db->file : "the database", rc);
        u.found = false;
    }
    if (!(u.found && u.exact) && db->fleet)
        f.found = cf_fleet_lookup(db, key, &f.dec, &f.exact);
    if (!(u.found && u.exact) && !(f.found && f.exact) && db->sys) {
        rc = tier_lookup(db, db->sys, &s);
        if (rc != SQLITE_DONE && rc != SQLITE_OK) {
            cf_db_warn(db, "system database became unreadable (%s); ignoring it",
                       sqlite3_errstr(rc));
            sqlite3_close_v2(db->sys);
            db->sys = NULL;
            s.found = false;
        }
    }
    lookup_arg *best = u.found && u.exact   ? &u
                       : f.found && f.exact ? &f
                       : s.found && s.exact ? &s
                       : u.found            ? &u
                       : f.found            ? &f
                       : s.found            ? &s
                                            : NULL;
    cf_db_found found = CF_DB_MISS;
    if (best && !best->exact) {
        warn_foreign(db, key);
        if (db->cfg.env_policy == CONVFIND_DB_ENV_IGNORE)
            best = NULL;
    }
    if (best) {
        found = best->exact ? CF_DB_HIT : CF_DB_FOREIGN;
        *out = best->dec;
        memset(&best->dec, 0, sizeof best->dec);
    }
    cf_decision_clear(&u.dec);
    cf_decision_clear(&f.dec);
    cf_decision_clear(&s.dec);
    return found;
}

convfind_status cf_db_lookup(cf_db *db, const char *key, cf_decision *out, cf_db_found *found)
{
    if (!db || !key || !out || !found)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "cf_db_lookup: db, key, out and found must not "
                       "be NULL");
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&db->mu);
    *found = lookup_locked(db, key, out);
    pthread_mutex_unlock(&db->mu);
    return CONVFIND_OK;
}

/* More pending decisions than this are not kept waiting: they count as unstored. */
#define PENDING_MAX 4096

static void drop_pending(cf_db *db)
{
    for (size_t i = 0; i < db->n_pending; i++)
        cf_db_row_free(&db->pending[i]);
    db->n_pending = 0;
}

/* One write transaction for every pending decision: either every record lands or none
 * does, and a process killed in the middle leaves only uncommitted WAL frames behind.
 * This handle's leases on those keys are released in the same transaction. */
static int store_op(cf_db *db, sqlite3 *conn, void *varg)
{
    (void)varg;
    int rc = cf_db_exec(conn, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_stmt *ins = NULL, *del = NULL;
    rc = cf_db_insert_prepare(conn, &ins);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(conn, "DELETE FROM leases WHERE key=?1 AND pid=?2 AND owner=?3 "
                                "AND host=?4", -1, &del, NULL);
    int64_t now = cf_db_now_ms() / 1000;
    for (size_t i = 0; rc == SQLITE_OK && i < db->n_pending; i++) {
        const cf_db_row *r = &db->pending[i];
        rc = cf_db_insert(ins, r, &db->cfg.env, db->host, now);
        if (rc == SQLITE_OK) {
            sqlite3_reset(del);
            sqlite3_bind_text(del, 1, r->key, -1, SQLITE_STATIC);
            sqlite3_bind_int64(del, 2, (sqlite3_int64)getpid());
            sqlite3_bind_int64(del, 3, db->owner);
            sqlite3_bind_text(del, 4, db->host, -1, SQLITE_STATIC);
            rc = sqlite3_step(del);
            if (rc == SQLITE_DONE)
                rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(ins);
    sqlite3_finalize(del);
    if (rc == SQLITE_OK)
        rc = cf_db_exec(conn, "COMMIT");
    if (rc != SQLITE_OK)
        cf_db_exec(conn, "ROLLBACK");
    return rc;
}

/* Decisions that never reached the file.  A write that failed says so once; a handle
 * that was read-only or in memory from the start said so when it was opened. */
static void count_unstored(cf_db *db, size_t n, const char *failure)
{
    db->unstored += n;
    if (!failure || db->warned_unstored)
        return;
    db->warned_unstored = true;
    cf_db_warn(db, "could not store %zu decision(s) in %s (%s); they are kept in this process "
               "only", n, db->file ? db->file : CF_DB_MEMORY, failure);
}

/* Writes the pending decisions.  A busy database keeps them pending for the next try,
 * unless `final`; everything else that stops them counts them as unstored. */
static void write_pending(cf_db *db, bool final)
{
    if (db->n_pending == 0 || (!final && cf_db_now_ms() < db->retry_at_ms))
        return;
    if (db->persistent && !db->writable) {
        count_unstored(db, db->n_pending, NULL);
        drop_pending(db);
        return;
    }
    int rc = cf_db_run(db, store_op, NULL);
    if (rc == SQLITE_OK) {
        /* In memory although a file was wanted: the decisions end with the process. */
        if (!db->persistent && !db->memory_wanted)
            count_unstored(db, db->n_pending, NULL);
        else
            db->stored += db->n_pending;
        drop_pending(db);
        return;
    }
    if (cf_db_rc_busy(rc) && !final && db->n_pending < PENDING_MAX) {
        db->retry_at_ms = cf_db_now_ms() + db->cfg.busy_timeout_ms;
        if (!db->warned_busy) {
            db->warned_busy = true;
            cf_db_warn(db, "database %s is locked by another process; decisions are stored "
                       "when it is free", db->file ? db->file : CF_DB_MEMORY);
        }
        return;
    }
    count_unstored(db, db->n_pending, sqlite3_errstr(rc));
    drop_pending(db);
}

convfind_status cf_db_store(cf_db *db, const char *const *keys, const cf_decision *decisions,
                            int n)
{
    if (!db || (n > 0 && (!keys || !decisions)))
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "cf_db_store: db, keys and decisions must not "
                       "be NULL");
    if (n < 0)
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE, "cf_db_store: n = %d is negative", n);
    for (int i = 0; i < n; i++) {
        if (!keys[i])
            return cf_fail(CONVFIND_ERR_NULL_POINTER, "cf_db_store: keys[%d] is NULL", i);
        if (cf_db_check_key(keys[i]) != CONVFIND_OK)
            return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE, "cf_db_store: keys[%d]: %s", i,
                           convfind_last_error());
    }
    cf_db_row *rows = calloc((size_t)n + 1, sizeof *rows);
    convfind_status st = rows ? CONVFIND_OK
                              : cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot hold %d records", n);
    int made = 0;
    while (st == CONVFIND_OK && made < n &&
           (st = cf_db_row_make(keys[made], &decisions[made], &rows[made])) == CONVFIND_OK)
        made++;
    pthread_mutex_lock(&db->mu);
    cf_db_row *grown = st == CONVFIND_OK
                           ? realloc(db->pending, (db->n_pending + (size_t)n + 1) * sizeof *grown)
                           : NULL;
    if (st == CONVFIND_OK && !grown)
        st = cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot hold %d records", n);
    if (st == CONVFIND_OK) {
        if (db->fleet)
            cf_fleet_push(db, rows, (size_t)n);
        db->pending = grown;
        memcpy(db->pending + db->n_pending, rows, (size_t)n * sizeof *rows);
        db->n_pending += (size_t)n;
        write_pending(db, false);
    }
    pthread_mutex_unlock(&db->mu);
    if (st != CONVFIND_OK)
        for (int i = 0; i < made; i++)
            cf_db_row_free(&rows[i]);
    free(rows);
    return st;
}

size_t cf_db_flush(cf_db *db)
{
    if (!db)
        return 0;
    pthread_mutex_lock(&db->mu);
    write_pending(db, true);
    size_t n = db->unstored;
    pthread_mutex_unlock(&db->mu);
    return n;
}

typedef struct lease_arg {
    const char *key;
    bool acquired;
} lease_arg;

static int lease_op(cf_db *db, sqlite3 *conn, void *varg)
{
    lease_arg *a = varg;
    a->acquired = false;
    int rc = cf_db_exec(conn, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_stmt *sel = NULL, *put = NULL;
    rc = sqlite3_prepare_v2(conn, "SELECT pid, owner, host, expires_ms FROM leases WHERE key=?1",
                            -1, &sel, NULL);
    bool held = false;
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(sel, 1, a->key, -1, SQLITE_STATIC);
        rc = sqlite3_step(sel);
        if (rc == SQLITE_ROW) {
            const char *host = (const char *)sqlite3_column_text(sel, 2);
            held = cf_db_lease_live(db, sqlite3_column_int64(sel, 0),
                                    sqlite3_column_int64(sel, 1), host ? host : "",
                                    sqlite3_column_int64(sel, 3));
            rc = SQLITE_DONE;
        }
        if (rc == SQLITE_DONE)
            rc = SQLITE_OK;
    }
    if (rc == SQLITE_OK && !held) {
        rc = sqlite3_prepare_v2(conn, "INSERT OR REPLACE INTO leases(key, pid, owner, host, "
                                "expires_ms) VALUES(?1, ?2, ?3, ?4, ?5)", -1, &put, NULL);
        if (rc == SQLITE_OK) {
            sqlite3_bind_text(put, 1, a->key, -1, SQLITE_STATIC);
            sqlite3_bind_int64(put, 2, (sqlite3_int64)getpid());
            sqlite3_bind_int64(put, 3, db->owner);
            sqlite3_bind_text(put, 4, db->host, -1, SQLITE_STATIC);
            sqlite3_bind_int64(put, 5, cf_db_now_ms() + db->cfg.lease_ms);
            rc = sqlite3_step(put);
            if (rc == SQLITE_DONE)
                rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(sel);
    sqlite3_finalize(put);
    if (rc == SQLITE_OK)
        rc = cf_db_exec(conn, "COMMIT");
    if (rc != SQLITE_OK)
        cf_db_exec(conn, "ROLLBACK");
    else
        a->acquired = !held;
    return rc;
}

/* This machine's lease of `key`.  Where the lease table cannot be written the process
 * benchmarks anyway: a lease only saves work, it never guards correctness.  A database
 * that was just found busy is not waited for again for every key. */
static bool acquire_local(cf_db *db, const char *key)
{
    if (!db->writable || cf_db_now_ms() < db->retry_at_ms)
        return true;
    lease_arg a = {.key = key};
    int rc = cf_db_run(db, lease_op, &a);
    if (cf_db_rc_busy(rc))
        db->retry_at_ms = cf_db_now_ms() + db->cfg.busy_timeout_ms;
    return rc != SQLITE_OK || a.acquired;
}

static void release_local(cf_db *db, const char *key);

/* cf_db_lease_acquire without the lock: this machine's lease, then the fleet's. */
static bool acquire_locked(cf_db *db, const char *key)
{
    if (!acquire_local(db, key))
        return false;
    if (db->fleet && !cf_fleet_lease(db, key)) {
        release_local(db, key); /* another machine measures it: wait with the others */
        return false;
    }
    return true;
}

convfind_status cf_db_lease_acquire(cf_db *db, const char *key, bool *acquired)
{
    if (!db || !key || !acquired)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "cf_db_lease_acquire: db, key and acquired "
                       "must not be NULL");
    pthread_mutex_lock(&db->mu);
    *acquired = acquire_locked(db, key);
    pthread_mutex_unlock(&db->mu);
    return CONVFIND_OK;
}

static int release_op(cf_db *db, sqlite3 *conn, void *varg)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(conn, "DELETE FROM leases WHERE key=?1 AND pid=?2 AND owner=?3 "
                                "AND host=?4", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, (const char *)varg, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)getpid());
        sqlite3_bind_int64(st, 3, db->owner);
        sqlite3_bind_text(st, 4, db->host, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    return rc;
}

/* A lease that cannot be deleted now expires, or dies with this process. */
static void release_local(cf_db *db, const char *key)
{
    if (db->writable && cf_db_now_ms() >= db->retry_at_ms)
        cf_db_run(db, release_op, (void *)key);
}

static void release_locked(cf_db *db, const char *key)
{
    release_local(db, key);
    if (db->fleet)
        cf_fleet_release(db, key);
}

void cf_db_lease_release(cf_db *db, const char *key)
{
    if (!db || !key)
        return;
    pthread_mutex_lock(&db->mu);
    release_locked(db, key);
    pthread_mutex_unlock(&db->mu);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        continue;
}

/* A record of a compatible key (db_similar.c), user tier first; not under IGNORE, which
 * uses no record measured elsewhere. */
static bool similar_locked(cf_db *db, const char *key, cf_decision *out)
{
    if (db->cfg.env_policy == CONVFIND_DB_ENV_IGNORE)
        return false;
    bool found = false;
    int rc = cf_db_similar_lookup(db->user, key, out, &found);
    if (rc != SQLITE_OK && rc != SQLITE_DONE)
        cf_db_read_failed(db, db->file ? db->file : "the database", rc);
    if (!found && db->sys)
        cf_db_similar_lookup(db->sys, key, out, &found);
    return found;
}

static bool usable(const cf_db_request *req, const cf_decision *d)
{
    return !req->usable || req->usable(d, req->usable_arg);
}

cf_db_action cf_db_begin(cf_db *db, const char *key, const cf_db_request *req, cf_decision *out)
{
    memset(out, 0, sizeof *out);
    if (!db || !key || !req)
        return CF_DB_ACTION_BENCHMARK;
    int64_t deadline = cf_db_now_ms() + (req->wait_ms > 0 ? req->wait_ms : 0);
    int step = 5;
    /* The lock is dropped while sleeping so this process's other threads (other keys)
     * are not held up by one key's wait. */
    for (;;) {
        pthread_mutex_lock(&db->mu);
        cf_db_found found = lookup_locked(db, key, out);
        if (found == CF_DB_HIT && usable(req, out)) {
            pthread_mutex_unlock(&db->mu);
            return CF_DB_ACTION_USE;
        }
        bool similar = found == CF_DB_MISS && req->similar && similar_locked(db, key, out);
        bool mine = acquire_locked(db, key);
        if (mine) {
            /* The holder may have stored and released between our lookup and our
             * acquire; look again so that the key is not measured twice. */
            cf_decision again;
            memset(&again, 0, sizeof again);
            if (lookup_locked(db, key, &again) == CF_DB_HIT) {
                cf_decision_clear(out);
                *out = again;
                found = CF_DB_HIT;
                similar = false;
                if (usable(req, out)) {
                    release_locked(db, key);
                    pthread_mutex_unlock(&db->mu);
                    return CF_DB_ACTION_USE;
                }
            } else {
                cf_decision_clear(&again);
            }
        }
        pthread_mutex_unlock(&db->mu);
        if (mine)
            return found == CF_DB_HIT       ? CF_DB_ACTION_RETIME
                   : found == CF_DB_FOREIGN ? CF_DB_ACTION_RETUNE
                   : similar                ? CF_DB_ACTION_SEED
                                            : CF_DB_ACTION_BENCHMARK;
        int64_t left = deadline - cf_db_now_ms();
        /* Past the wait, a stored decision that is merely not good enough beats the
         * heuristic choice. */
        if (left <= 0 && found == CF_DB_HIT)
            return CF_DB_ACTION_USE;
        cf_decision_clear(out);
        if (left <= 0)
            return CF_DB_ACTION_HEURISTIC;
        sleep_ms(step < left ? step : (int)left);
        step = step < 100 ? 2 * step : 100;
    }
}

void cf_db_finish(cf_db *db, const char *key, const cf_decision *decision)
{
    if (!db || !key)
        return;
    if (decision)
        cf_db_store(db, &key, decision, 1);
    else
        cf_db_lease_release(db, key);
}
