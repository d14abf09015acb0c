/*
 * context.c - contexts: creation, destruction, statistics, and the settings Find and
 * the key read from them (see context.h).
 *
 * A context reaches its backend only through the backend's table (algo/backend.h):
 * which backend runs it is chosen once, from options->device, by cf_backend_for().
 */
#include "core/context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/registry.h"
#include "core/deferred.h"
#include "core/options.h"
#include "core/record_check.h"
#include "util/error.h"

#define DEFAULT_CACHE_BYTES ((size_t)8 << 20)
#define DEFAULT_FIND_BUDGET_S 1.0

static int online_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 && n < 4096 ? (int)n : 1;
}

/* The find database, at the options' or the environment's location: a file the caller
 * named that cannot be used fails the context; at the default location a bad or
 * unusable file ends in quarantine or memory with a warning (docs/db.md), through the
 * context's log.  It copies the paths, and uses only records of the context's backend
 * that this build can run.  Its records name the host they were measured on, whatever
 * the context's device. */
static convfind_status open_db(convfind_context *ctx, const convfind_context_options *o)
{
    cf_fingerprint host;
    convfind_status st = cf_host_fingerprint(1, 0, &host);
    if (st != CONVFIND_OK)
        return st;
    cf_db_config c;
    cf_db_config_init(&c, &host);
    c.path = o->db_path;
    c.system_path = o->system_db_path;
    c.env_policy = o->db_env_policy;
    c.locations = cf_env_db_locations(&ctx->env);
    c.fleet = o->fleet_db;
    c.log = ctx->log;
    c.usable = cf_record_usable;
    c.usable_arg = (void *)ctx->backend;
    ctx->options.system_db_path = NULL; /* the database keeps its own copies */
    ctx->options.fleet_db = NULL;
    if ((st = cf_db_open(&c, &ctx->db)) == CONVFIND_OK)
        cf_db_handle_init(&ctx->db_handle, ctx->db, &c.env);
    return st;
}

/* The backend's state for this context: the device of a CUDA context.  What the
 * context's environment asks of it goes with the options. */
static convfind_status open_backend(convfind_context *ctx, const convfind_context_options *o)
{
    const cf_backend_env env = cf_env_backend(&ctx->env, &ctx->log);
    const cf_backend_config config = {
        .threads = ctx->num_threads,
        .device_index = o->device_index,
        .allocator = o->device_allocator,
        .workspace_limit = o->workspace_limit,
        .env = &env,
    };
    return ctx->backend->open(&config, &ctx->device);
}

/* The caller's thread pool when it gave one, else one of the context's own. */
static convfind_status open_pool(convfind_context *ctx, const convfind_context_options *o)
{
    if (o->parallel_for)
        return cf_threadpool_create_external(ctx->num_threads, o->parallel_for,
                                             o->parallel_for_user, &ctx->pool);
    return cf_threadpool_create(ctx->num_threads, &ctx->pool);
}

int convfind_cuda_available(int index, char *why, size_t size)
{
    cf_clear_error();
    const cf_backend *b;
    cf_env env; /* where the module is, should this call be the first to look */
    convfind_status st = cf_env_read(&env);
    if (st == CONVFIND_OK)
        st = cf_backend_for(CONVFIND_DEVICE_CUDA, env.cuda_module, &b);
    cf_env_free(&env);
    if (st != CONVFIND_OK) {
        if (why && size)
            snprintf(why, size, "%s", convfind_last_error());
        return 0;
    }
    return b->available(index, why, size);
}

static convfind_status check_options(const convfind_context_options *o)
{
    if (o->num_threads < 0 || o->num_threads > 4096)
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE, "num_threads = %d is outside 0..4096",
                       o->num_threads);
    if (o->parallel_for && o->num_threads == 0)
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE, "num_threads = 0 with parallel_for set: "
                       "say how many threads the caller's pool runs");
    if ((unsigned)o->find_policy > (unsigned)CONVFIND_FIND_DEFERRED)
        return cf_fail(CONVFIND_ERR_INVALID_ENUM, "find_policy = %d is not a convfind_find_policy",
                       (int)o->find_policy);
    if (!(o->find_time_budget_s >= 0) || o->find_time_budget_s > 86400)
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE,
                       "find_time_budget_s = %g is outside 0..86400 seconds",
                       o->find_time_budget_s);
    if ((unsigned)o->device > (unsigned)CONVFIND_DEVICE_CUDA)
        return cf_fail(CONVFIND_ERR_INVALID_ENUM, "device = %d is not a convfind_device",
                       (int)o->device);
    if (o->find_skip_validation != 0 && o->find_skip_validation != 1)
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE,
                       "find_skip_validation = %d is neither 0 nor 1", o->find_skip_validation);
    if ((unsigned)o->log_level > (unsigned)CONVFIND_LOG_DEBUG)
        return cf_fail(CONVFIND_ERR_INVALID_ENUM, "log_level = %d is not a convfind_log_level",
                       (int)o->log_level);
    return CONVFIND_OK;
}

/* The settings that come from the options, else the environment, else the defaults. */
static void resolve(convfind_context *ctx, const convfind_context_options *o)
{
    ctx->log.fn = o->log_fn;
    ctx->log.user = o->log_user;
    ctx->log.level = o->log_level ? o->log_level
                     : ctx->env.log_level ? ctx->env.log_level
                                          : CONVFIND_LOG_WARNING;
    ctx->find_policy = o->find_policy ? o->find_policy
                       : ctx->env.find_policy ? ctx->env.find_policy
                                              : CONVFIND_FIND_HYBRID;
    ctx->options.find_policy = ctx->find_policy;
    ctx->options.log_level = ctx->log.level;
    if (!ctx->options.cache_bytes)
        ctx->options.cache_bytes = DEFAULT_CACHE_BYTES;
    if (ctx->options.find_time_budget_s == 0)
        ctx->options.find_time_budget_s = DEFAULT_FIND_BUDGET_S;
    ctx->find_workspace_limit =
        cf_workspace_class_bytes(cf_workspace_class(o->workspace_limit));
    ctx->num_threads = o->num_threads ? o->num_threads : online_cores();
    ctx->options.num_threads = ctx->num_threads;
}

convfind_status convfind_context_create(const convfind_context_options *options,
                                        convfind_context **out)
{
    cf_clear_error();
    if (!out)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "out (convfind_context **) is NULL");
    *out = NULL;
    convfind_context_options o;
    convfind_status st = cf_options_read(options, sizeof o, "convfind_context_options", &o);
    if (st != CONVFIND_OK || (st = check_options(&o)) != CONVFIND_OK)
        return st;

    convfind_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate a context");
    ctx->options = o;
    ctx->options.db_path = NULL;
    if ((st = cf_env_read(&ctx->env)) != CONVFIND_OK) {
        free(ctx);
        return st;
    }
    resolve(ctx, &o);
    cf_env_report(&ctx->env, &ctx->log);
    st = cf_backend_for(o.device, ctx->env.cuda_module, &ctx->backend);
    if (st == CONVFIND_OK && o.db_path && !(ctx->db_path = strdup(o.db_path)))
        st = cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot copy db_path");
    ctx->options.db_path = ctx->db_path;
    /* An entry has room for every candidate a decision of this backend lists. */
    if (st == CONVFIND_OK &&
        !(ctx->cache = cf_cache_create(ctx->options.cache_bytes,
                                       cf_backend_max_candidates(ctx->backend))))
        st = cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate the decision cache");
    if (st == CONVFIND_OK)
        st = open_backend(ctx, &o);
    if (st == CONVFIND_OK)
        st = open_db(ctx, &o);
    if (st == CONVFIND_OK)
        st = open_pool(ctx, &o);
    if (st == CONVFIND_OK && ctx->find_policy == CONVFIND_FIND_DEFERRED)
        st = cf_deferred_create(ctx, &ctx->deferred);
    if (st != CONVFIND_OK) {
        convfind_context_destroy(ctx);
        return st;
    }
    *out = ctx;
    return CONVFIND_OK;
}

void convfind_context_destroy(convfind_context *context)
{
    if (!context)
        return;
    /* The tuner first: it uses the pool and the cache. */
    cf_deferred_destroy(context->deferred);
    cf_db_close(context->db); /* after the tuner, which stores what it measures */
    cf_threadpool_destroy(context->pool);
    cf_cache_destroy(context->cache);
    if (context->backend && context->backend->close)
        context->backend->close(context->device);
    cf_env_free(&context->env);
    free(context->db_path);
    free(context);
}

convfind_status cf_context_key(const convfind_context *ctx, const cf_problem *p,
                               cf_weights weights, cf_key *key)
{
    cf_fingerprint fp;
    ctx->backend->fingerprint(ctx->device, &fp);
    fp.ws_class = cf_workspace_class(ctx->options.workspace_limit);
    fp.weights = weights;
    return cf_key_make(p, &fp, key);
}

void cf_context_find_config(const convfind_context *ctx, cf_weights weights,
                            const char *incumbent, const atomic_bool *cancel,
                            cf_find_config *cfg)
{
    cfg->workspace_limit = ctx->find_workspace_limit;
    cfg->budget_s = ctx->options.find_time_budget_s;
    cfg->validate = !ctx->options.find_skip_validation;
    cfg->constant_weights = weights == CF_WEIGHTS_CONSTANT;
    cfg->incumbent = incumbent;
    cfg->pool = ctx->pool;
    cfg->cancel = cancel;
    cfg->retune = NULL;
    cfg->trace = ctx->env.find_trace;
}

const cf_algo *cf_context_algo(const convfind_context *ctx, const char *name)
{
    return cf_backend_find(ctx->backend, name);
}

convfind_status cf_context_heuristic(const convfind_context *ctx, const cf_problem *p,
                                     cf_decision *out)
{
    return cf_find_heuristic(ctx->backend, ctx->device, p, ctx->find_workspace_limit, out);
}

static uint64_t counter(const atomic_uint_fast64_t *c)
{
    return atomic_load_explicit((atomic_uint_fast64_t *)c, memory_order_relaxed);
}

convfind_status convfind_context_stats_get(const convfind_context *ctx,
                                           convfind_context_stats *stats)
{
    cf_clear_error();
    if (!ctx || !stats)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "%s is NULL", ctx ? "stats" : "context");
    cf_cache_stats cs;
    cf_cache_stats_get(ctx->cache, &cs);
    uint64_t stored, unstored;
    cf_db_store_counts(ctx->db, &stored, &unstored);
    cf_db_stats fleet;
    cf_db_get_fleet_stats(ctx->db, &fleet);
    convfind_context_stats s = {
        .hits = cs.hits,
        .misses = cs.misses,
        .waits = cs.waits,
        .finds = counter(&ctx->finds),
        .find_seconds = 1e-9 * (double)counter(&ctx->find_ns),
        .evictions = cs.evictions,
        .fallbacks = counter(&ctx->fallbacks),
        .deferred_updates = counter(&ctx->deferred_updates),
        .cache_entries = cs.entries,
        .cache_bytes = cs.bytes,
        .cache_peak_bytes = cs.peak_bytes,
        .cache_budget = cs.budget,
        .stored = stored,
        .store_failures = unstored,
        .seeded = counter(&ctx->seeded),
        .retimed_low_confidence = counter(&ctx->retimed),
        .fleet_hits = fleet.fleet_hits,
        .fleet_pushed = fleet.fleet_pushed,
        .fleet_faults = fleet.fleet_faults,
        .fleet_connected = fleet.fleet_connected,
        .compiled_stored = counter(&ctx->compiled_stored),
        .compiled_loaded = counter(&ctx->compiled_loaded),
    };
    return cf_options_write(&s, sizeof s, "convfind_context_stats", stats);
}
