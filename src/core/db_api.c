/*
 * db_api.c - the public find-database calls (convfind_db_*) over src/db (see db_api.h).
 *
 * A handle opened here reads the environment once (core/env.c) for the database's
 * locations and the CUDA module's, and checks every record it loads or imports against
 * this build's algorithms (core/record_check.h), as a context's does.
 */
#include "core/db_api.h"

#include <stdlib.h>
#include <string.h>

#include "algo/registry.h"
#include "core/context.h"
#include "core/env.h"
#include "core/options.h"
#include "core/record_check.h"
#include "decision/confidence.h"
#include "util/error.h"

void cf_db_handle_init(convfind_db *handle, cf_db *db, const cf_db_env *env)
{
    memset(handle, 0, sizeof *handle);
    handle->db = db;
    handle->env = *env;
    cf_db_env_describe(env, handle->environment, sizeof handle->environment);
}

convfind_status convfind_db_open(const convfind_db_options *options, convfind_db **out)
{
    cf_clear_error();
    if (!out)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "out (convfind_db **) is NULL");
    *out = NULL;
    convfind_db_options o;
    convfind_status st = cf_options_read(options, sizeof o, "convfind_db_options", &o);
    if (st != CONVFIND_OK)
        return st;
    if ((unsigned)o.mode > (unsigned)CONVFIND_DB_READ_ONLY)
        return cf_fail(CONVFIND_ERR_INVALID_ENUM, "mode = %d is not a convfind_db_mode",
                       (int)o.mode);
    if ((unsigned)o.log_level > (unsigned)CONVFIND_LOG_DEBUG)
        return cf_fail(CONVFIND_ERR_INVALID_ENUM, "log_level = %d is not a convfind_log_level",
                       (int)o.log_level);
    if (o.fleet_db && (o.path || o.system_path))
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE, "fleet_db opens the fleet tier alone: "
                       "path and system_path must be NULL");
    cf_fingerprint host;
    if ((st = cf_host_fingerprint(1, 0, &host)) != CONVFIND_OK)
        return st;
    cf_env env;
    if ((st = cf_env_read(&env)) != CONVFIND_OK)
        return st;
    cf_db_config c;
    cf_db_config_init(&c, &host);
    c.path = o.fleet_db ? CF_DB_MEMORY : o.path;
    c.system_path = o.fleet_db ? "" : o.system_path;
    c.locations = cf_env_db_locations(&env);
    c.fleet = o.fleet_db ? o.fleet_db : "";
    c.fleet_only = o.fleet_db != NULL;
    c.mode = o.mode == CONVFIND_DB_READ_ONLY ? CF_DB_INSPECT : CF_DB_MAINTAIN;
    c.log = (cf_log){.fn = o.log_fn, .user = o.log_user,
                     .level = o.log_level ? o.log_level : env.log_level};
    c.usable = cf_record_usable_anywhere; /* records of any backend this process can use */
    c.usable_arg = env.cuda_module;        /* the handle keeps it (below) */
    cf_env_report(&env, &c.log);
    convfind_db *handle = calloc(1, sizeof *handle);
    if (!handle)
        st = cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate a database handle");
    cf_db *db = NULL;
    if (st == CONVFIND_OK)
        st = cf_db_open(&c, &db);
    if (st != CONVFIND_OK) {
        cf_env_free(&env);
        free(handle);
        return st;
    }
    cf_db_handle_init(handle, db, &c.env);
    handle->cuda_module = env.cuda_module;
    env.cuda_module = NULL;
    cf_env_free(&env);
    handle->owned = true;
    handle->read_only = o.mode == CONVFIND_DB_READ_ONLY;
    handle->fleet = o.fleet_db != NULL;
    *out = handle;
    return CONVFIND_OK;
}

void convfind_db_close(convfind_db *db)
{
    if (!db || !db->owned)
        return;
    cf_db_close(db->db);
    free(db->cuda_module);
    free(db);
}

convfind_db *convfind_context_db(convfind_context *context)
{
    return context ? &context->db_handle : NULL;
}

/* NULL_POINTER for a NULL handle, UNSUPPORTED for a change to a READ_ONLY one. */
static convfind_status check_handle(const convfind_db *db, bool changes, const char *what)
{
    cf_clear_error();
    if (!db)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "db is NULL");
    if (changes && db->read_only)
        return cf_fail(CONVFIND_ERR_UNSUPPORTED, "%s changes the database, and %s was opened "
                       "READ_ONLY", what, cf_db_location(db->db));
    return CONVFIND_OK;
}

convfind_status convfind_db_get_info(convfind_db *db, convfind_db_info *info)
{
    convfind_status st = check_handle(db, false, "get_info");
    if (st != CONVFIND_OK)
        return st;
    if (!info)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "info is NULL");
    cf_db_stats s;
    if ((st = cf_db_get_stats(db->db, &s)) != CONVFIND_OK)
        return st;
    const bool persistent = cf_db_is_persistent(db->db);
    convfind_db_info i = {
        .path = cf_db_location(db->db),
        .exists = cf_db_exists(db->db),
        .persistent = persistent,
        .read_only = db->read_only || (persistent && !cf_db_is_writable(db->db)),
        .system_path = cf_db_system_location(db->db),
        .environment = db->environment,
        .records = s.records,
        .current = s.current,
        .foreign = s.foreign,
        .unreadable = s.unreadable,
        .leases = s.leases,
        .system_records = s.system_records,
        .file_bytes = s.file_bytes,
        .stored = s.stored,
        .store_failures = s.unstored,
        .pending = s.pending,
        .warnings = cf_db_warning_count(db->db),
        .artifacts = s.artifacts,
        .artifact_bytes = s.artifact_bytes,
    };
    return cf_options_write(&i, sizeof i, "convfind_db_info", info);
}

convfind_status convfind_db_flush(convfind_db *db)
{
    convfind_status st = check_handle(db, false, "flush");
    if (st == CONVFIND_OK)
        cf_db_flush(db->db);
    return st;
}

/* A walk of convfind_db_foreach: the caller's function and what a record needs. */
typedef struct foreach_arg {
    const convfind_db *db;
    const char *tier;
    convfind_db_record_fn fn;
    void *user;
    convfind_find_result *results;
    int capacity;
    bool failed; /* out of memory for the candidates */
} foreach_arg;

/* The public confidence bits are the module's. */
_Static_assert((int)CONVFIND_CONFIDENCE_UNKNOWN_BUDGET == (int)CF_CONF_UNKNOWN_BUDGET &&
                   (int)CONVFIND_CONFIDENCE_UNTIMED == (int)CF_CONF_UNTIMED &&
                   (int)CONVFIND_CONFIDENCE_NOISE == (int)CF_CONF_NOISE &&
                   (int)CONVFIND_CONFIDENCE_ONCE == (int)CF_CONF_ONCE,
               "convfind_confidence_flag and cf_confidence_flag differ");

static int foreach_one(const cf_db_record *r, void *varg)
{
    foreach_arg *a = varg;
    const cf_decision *d = &r->decision;
    if (d->n_candidates > a->capacity) {
        convfind_find_result *grown = realloc(a->results,
                                              (size_t)d->n_candidates * sizeof *grown);
        if (!grown) {
            a->failed = true;
            return 1;
        }
        a->results = grown;
        a->capacity = d->n_candidates;
    }
    for (int i = 0; i < d->n_candidates; i++)
        cf_result_export(&d->candidates[i], d->candidates[i].algo, &a->results[i]);
    cf_confidence c;
    cf_decision_confidence(d, &c);
    const convfind_db_record rec = {
        .key = r->key,
        .algorithm = d->algo,
        .library = r->env.library,
        .backends = r->env.backends,
        .device = r->env.device,
        .current_environment = cf_db_env_equal(&r->env, &a->db->env),
        .host = r->host,
        .tier = a->tier,
        .time = r->time,
        .n_candidates = d->n_candidates,
        .candidates = a->results,
        .budget_s = d->budget_ms > 0 ? d->budget_ms / 1000.0 : 0,
        .margin = c.runner_up ? c.margin : 0,
        .runner_up = c.runner_up ? c.runner_up_algo : NULL,
        .untimed = c.untimed,
        .low_confidence = c.low,
    };
    return a->fn(a->user, &rec);
}

convfind_status convfind_db_foreach(convfind_db *db, const char *key, convfind_db_record_fn fn,
                                    void *user)
{
    convfind_status st = check_handle(db, false, "foreach");
    if (st != CONVFIND_OK)
        return st;
    if (!fn)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "fn is NULL");
    foreach_arg a = {.db = db, .tier = db->fleet ? "fleet" : "user", .fn = fn, .user = user};
    st = cf_db_foreach(db->db, key, foreach_one, &a);
    a.tier = "system";
    if (st == CONVFIND_OK && !a.failed)
        st = cf_db_foreach_system(db->db, key, foreach_one, &a);
    free(a.results);
    if (st == CONVFIND_OK && a.failed)
        st = cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate a record's candidates");
    return st;
}

convfind_status convfind_db_export(convfind_db *db, convfind_write_fn write, void *user,
                                   size_t *count)
{
    convfind_status st = check_handle(db, false, "export");
    return st == CONVFIND_OK ? cf_db_export(db->db, write, user, count) : st;
}

convfind_status convfind_db_import(convfind_db *db, convfind_read_fn read, void *user,
                                   const char *name, size_t *count)
{
    if (count)
        *count = 0;
    convfind_status st = check_handle(db, true, "import");
    return st == CONVFIND_OK ? cf_db_import(db->db, read, user, name, count) : st;
}

convfind_status convfind_db_prune(convfind_db *db, size_t *removed)
{
    if (removed)
        *removed = 0;
    convfind_status st = check_handle(db, true, "prune");
    return st == CONVFIND_OK ? cf_db_prune(db->db, removed) : st;
}

convfind_status convfind_db_verify(convfind_db *db, size_t *bad)
{
    convfind_status st = check_handle(db, false, "verify");
    return st == CONVFIND_OK ? cf_db_verify(db->db, bad) : st;
}

convfind_status convfind_db_vacuum(convfind_db *db)
{
    convfind_status st = check_handle(db, true, "vacuum");
    return st == CONVFIND_OK ? cf_db_vacuum(db->db) : st;
}
