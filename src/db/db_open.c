/*
 * db_open.c - the cf_db handle: where the user database is (the location order of
 * DESIGN.md non-negotiable 7), opening and closing both tiers, warnings, the handle's
 * lease owner identity and the accessors (see db.h).  What happens to the files
 * themselves is db_file.c's.
 */
#include "db/db_internal.h"
#include "db/fleet.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void cf_db_one_line(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = ' ';
}

void cf_db_warn(cf_db *db, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(db->last_warning, sizeof db->last_warning, fmt, ap);
    va_end(ap);
    cf_db_one_line(db->last_warning);
    db->warnings++;
    if (!db->cfg.quiet)
        cf_log_msg(&db->cfg.log, CONVFIND_LOG_WARNING, "%s", db->last_warning);
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

/* The lease owners of this process's open handles.  A lease names its owner as well as
 * its process, so that two handles of one process (two contexts on one database) keep
 * each other from measuring the same key, as two processes do, and a lease left behind
 * by a closed handle blocks nobody. */
static pthread_mutex_t owners_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t *owners;
static size_t n_owners, cap_owners;
static int64_t next_owner;

int64_t cf_db_owner_open(void)
{
    pthread_mutex_lock(&owners_mu);
    if (next_owner == 0) {
        /* Not 1, 2, ... in every process: a process that reuses a dead one's pid must
         * not take that process's leases for its own handles'. */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        next_owner = (((int64_t)ts.tv_nsec ^ ((int64_t)getpid() << 20)) & 0x3fffffffffff) + 1;
    }
    int64_t id = next_owner++;
    if (n_owners == cap_owners) {
        size_t cap = cap_owners ? 2 * cap_owners : 8;
        int64_t *grown = realloc(owners, cap * sizeof *grown);
        if (grown) {
            owners = grown;
            cap_owners = cap;
        }
    }
    /* Unregistered for want of memory: its leases then protect only from other
     * processes, which costs at most a second Find, never a wrong result. */
    if (n_owners < cap_owners)
        owners[n_owners++] = id;
    pthread_mutex_unlock(&owners_mu);
    return id;
}

void cf_db_owner_close(int64_t owner)
{
    pthread_mutex_lock(&owners_mu);
    for (size_t i = 0; i < n_owners; i++)
        if (owners[i] == owner) {
            owners[i] = owners[--n_owners];
            break;
        }
    pthread_mutex_unlock(&owners_mu);
}

bool cf_db_owner_is_open(int64_t owner)
{
    pthread_mutex_lock(&owners_mu);
    bool open = false;
    for (size_t i = 0; i < n_owners && !open; i++)
        open = owners[i] == owner;
    pthread_mutex_unlock(&owners_mu);
    return open;
}

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s", a, b);
    return s;
}

static const char *nonempty(const char *v)
{
    return v && v[0] ? v : NULL;
}

/* The location order.  Sets db->file (NULL: memory), db->named and db->memory_wanted;
 * `why` gets the reason for a memory that was not asked for.  Fails only for an empty
 * path or out-of-memory. */
static convfind_status resolve_file(cf_db *db, const char **why)
{
    *why = NULL;
    const char *v = db->cfg.path;
    if (v && !v[0])
        return cf_fail(CONVFIND_ERR_IO, "the database path is empty (give a file, or \"%s\" "
                       "for none)", CF_DB_MEMORY);
    const cf_db_locations *env = &db->cfg.locations;
    if (!v)
        v = nonempty(env->db_path);
    if (v) {
        db->memory_wanted = strcmp(v, CF_DB_MEMORY) == 0;
        db->named = !db->memory_wanted;
        db->file = db->named ? strdup(v) : NULL;
    } else if ((v = nonempty(env->xdg_cache_home)) != NULL && v[0] == '/') {
        db->file = join(v, "/convfind/" CF_DB_FILE_NAME);
    } else if ((v = nonempty(env->home)) != NULL) {
        db->file = join(v, "/.cache/convfind/" CF_DB_FILE_NAME);
    } else {
        *why = "no database location: none of CONVFIND_DB_PATH, XDG_CACHE_HOME, HOME is set";
        return CONVFIND_OK;
    }
    if (v && !db->memory_wanted && !db->file)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot copy the database path");
    return CONVFIND_OK;
}

void cf_db_config_init(cf_db_config *config, const cf_fingerprint *host)
{
    memset(config, 0, sizeof *config);
    config->env_policy = CONVFIND_DB_ENV_RETUNE;
    config->mode = CF_DB_USE;
    cf_db_env_make(&config->env, host);
}

static void free_handle(cf_db *db)
{
    cf_fleet_close(db);
    cf_db_owner_close(db->owner);
    if (db->user)
        sqlite3_close_v2(db->user);
    if (db->sys)
        sqlite3_close_v2(db->sys);
    pthread_mutex_destroy(&db->mu);
    free(db->pending);
    free(db->file);
    free(db->path_copy);
    free(db->system_copy);
    free(db->system_open);
    free(db);
}

convfind_status cf_db_open(const cf_db_config *config, cf_db **out)
{
    if (!out)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "out (cf_db **) is NULL");
    *out = NULL;
    if (!config)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "config (cf_db_config *) is NULL");
    if ((unsigned)config->env_policy > (unsigned)CONVFIND_DB_ENV_IGNORE)
        return cf_fail(CONVFIND_ERR_INVALID_ENUM,
                       "db_env_policy = %d is not a convfind_db_env_policy",
                       (int)config->env_policy);
    if ((unsigned)config->mode > (unsigned)CF_DB_MAINTAIN)
        return cf_fail(CONVFIND_ERR_INVALID_ENUM, "mode = %d is not a cf_db_mode",
                       (int)config->mode);
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
    db->owner = cf_db_owner_open();
    db->cfg.fleet = NULL; /* cf_fleet_open keeps its own copy */
    if (gethostname(db->host, sizeof db->host - 1) != 0)
        snprintf(db->host, sizeof db->host, "unknown-host");

    const char *why;
    convfind_status st = resolve_file(db, &why);
    if (st == CONVFIND_OK && why && db->cfg.mode == CF_DB_MAINTAIN)
        st = cf_fail(CONVFIND_ERR_IO, "%s", why);
    if (st == CONVFIND_OK && why)
        cf_db_warn(db, "%s; decisions are kept in memory only", why);
    if (st == CONVFIND_OK)
        st = cf_db_open_user(db);
    if (st != CONVFIND_OK) {
        free_handle(db);
        return st;
    }
    cf_db_open_system(db);
    st = cf_fleet_open(db, config->fleet ? config->fleet : config->locations.fleet_db);
    if (st != CONVFIND_OK) {
        free_handle(db);
        return st;
    }
    memset(&db->cfg.locations, 0, sizeof db->cfg.locations); /* the caller's, for opening */
    *out = db;
    return CONVFIND_OK;
}

void cf_db_close(cf_db *db)
{
    if (!db)
        return;
    cf_db_flush(db);
    if (db->user && db->writable) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db->user, "DELETE FROM leases WHERE pid=?1 AND owner=?2 AND "
                               "host=?3", -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_int64(st, 1, (sqlite3_int64)getpid());
            sqlite3_bind_int64(st, 2, db->owner);
            sqlite3_bind_text(st, 3, db->host, -1, SQLITE_STATIC);
            sqlite3_step(st);
        }
        sqlite3_finalize(st);
    }
    free_handle(db);
}

/* The getters lock too: another thread's call may be replacing the connection. */
static pthread_mutex_t *mu_of(const cf_db *db) { return (pthread_mutex_t *)&db->mu; }

const char *cf_db_location(const cf_db *db)
{
    pthread_mutex_lock(mu_of(db));
    const char *where = db->cfg.fleet_only ? cf_fleet_where(db)
                        : db->file && (db->persistent || db->cfg.mode == CF_DB_INSPECT)
                            ? db->file
                            : CF_DB_MEMORY;
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

bool cf_db_exists(const cf_db *db)
{
    pthread_mutex_lock(mu_of(db));
    bool e = db->cfg.fleet_only                ? true /* opening it connected */
             : db->cfg.mode == CF_DB_INSPECT ? db->exists
                                             : db->persistent;
    pthread_mutex_unlock(mu_of(db));
    return e;
}

bool cf_db_is_writable(const cf_db *db)
{
    pthread_mutex_lock(mu_of(db));
    bool w = db->persistent && db->writable;
    pthread_mutex_unlock(mu_of(db));
    return w;
}

const char *cf_db_system_location(const cf_db *db)
{
    pthread_mutex_lock(mu_of(db));
    const char *where = db->sys ? db->system_open : NULL;
    pthread_mutex_unlock(mu_of(db));
    return where;
}

void cf_db_store_counts(const cf_db *db, uint64_t *stored, uint64_t *unstored)
{
    pthread_mutex_lock(mu_of(db));
    *stored = db->stored;
    *unstored = db->unstored;
    pthread_mutex_unlock(mu_of(db));
}

convfind_status cf_db_check_usable(const cf_db *db, const char *key, const cf_decision *d)
{
    char why[300] = "";
    if (!db->cfg.usable || db->cfg.usable(db->cfg.usable_arg, key, d, why, sizeof why))
        return CONVFIND_OK;
    cf_db_one_line(why);
    return cf_fail(CONVFIND_ERR_IO, "%s", why);
}

convfind_status cf_db_load_decision(const cf_db *db, const char *key, const char *json,
                                    size_t len, cf_decision *out)
{
    convfind_status st = cf_db_decision_from_json(json, len, out);
    if (st == CONVFIND_OK && (st = cf_db_check_usable(db, key, out)) != CONVFIND_OK)
        cf_decision_clear(out);
    return st;
}

void cf_db_get_fleet_stats(cf_db *db, cf_db_stats *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&db->mu);
    cf_fleet_counters(db, out);
    pthread_mutex_unlock(&db->mu);
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
