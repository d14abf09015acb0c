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
#include "util/error.h"

#define DEFAULT_CACHE_BYTES ((size_t)8 << 20)
#define DEFAULT_FIND_BUDGET_S 1.0

void convfind_context_options_init(convfind_context_options *options)
{
    if (!options)
        return;
    memset(options, 0, sizeof *options);
    options->num_threads = 0;
    options->find_policy = CONVFIND_FIND_HYBRID;
    options->workspace_limit = 0;
    options->db_path = NULL;
    options->cache_bytes = 0;
    options->find_time_budget_s = 0;
    options->find_validate = 1;
}

static int online_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 && n < 4096 ? (int)n : 1;
}

/* The find database.  It never fails the context over a file: a bad or unusable file
 * ends in quarantine or memory with a warning (docs/db.md).  It copies the paths.  Its
 * records name the host they were measured on, whatever the context's device. */
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
    ctx->options.system_db_path = NULL; /* the database keeps its own copy */
    return cf_db_open(&c, &ctx->db);
}

/* The backend's state for this context: the device of a CUDA context. */
static convfind_status open_backend(convfind_context *ctx, const convfind_context_options *o)
{
    const cf_backend_config config = {
        .threads = ctx->num_threads,
        .device_index = o->device_index,
        .allocator = o->device_allocator,
        .workspace_limit = o->workspace_limit,
    };
    return ctx->backend->open(&config, &ctx->device);
}

int convfind_cuda_available(int index, char *why, size_t size)
{
    cf_clear_error();
    const cf_backend *b;
    if (cf_backend_for(CONVFIND_DEVICE_CUDA, &b) != CONVFIND_OK) {
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
    if (o->find_validate != 0 && o->find_validate != 1)
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE, "find_validate = %d is neither 0 nor 1",
                       o->find_validate);
    return CONVFIND_OK;
}

convfind_status convfind_context_create(const convfind_context_options *options,
                                        convfind_context **out)
{
    cf_clear_error();
    if (!out)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "out (convfind_context **) is NULL");
    *out = NULL;
    convfind_context_options defaults;
    convfind_context_options_init(&defaults);
    if (!options)
        options = &defaults;
    convfind_status st = check_options(options);
    if (st != CONVFIND_OK)
        return st;

    convfind_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate a context");
    ctx->options = *options;
    if (!ctx->options.cache_bytes)
        ctx->options.cache_bytes = DEFAULT_CACHE_BYTES;
    if (ctx->options.find_time_budget_s == 0)
        ctx->options.find_time_budget_s = DEFAULT_FIND_BUDGET_S;
    ctx->options.db_path = NULL;
    ctx->find_workspace_limit =
        cf_workspace_class_bytes(cf_workspace_class(options->workspace_limit));
    ctx->num_threads = options->num_threads ? options->num_threads : online_cores();
    st = cf_backend_for(options->device, &ctx->backend);
    if (st == CONVFIND_OK && options->db_path && !(ctx->db_path = strdup(options->db_path)))
        st = cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot copy db_path");
    ctx->options.db_path = ctx->db_path;
    /* An entry has room for every candidate a decision of this backend lists. */
    if (st == CONVFIND_OK &&
        !(ctx->cache = cf_cache_create(ctx->options.cache_bytes,
                                       cf_backend_max_candidates(ctx->backend))))
        st = cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate the decision cache");
    if (st == CONVFIND_OK)
        st = open_backend(ctx, options);
    if (st == CONVFIND_OK)
        st = open_db(ctx, options);
    if (st == CONVFIND_OK)
        st = cf_threadpool_create(ctx->num_threads, &ctx->pool);
    if (st == CONVFIND_OK && options->find_policy == CONVFIND_FIND_DEFERRED)
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
    free(context->db_path);
    free(context);
}

convfind_status cf_context_key(const convfind_context *ctx, const cf_problem *p, cf_key *key)
{
    cf_fingerprint fp;
    ctx->backend->fingerprint(ctx->device, &fp);
    fp.ws_class = cf_workspace_class(ctx->options.workspace_limit);
    return cf_key_make(p, &fp, key);
}

void cf_context_find_config(const convfind_context *ctx, const char *incumbent,
                            const atomic_bool *cancel, cf_find_config *cfg)
{
    cfg->workspace_limit = ctx->find_workspace_limit;
    cfg->budget_s = ctx->options.find_time_budget_s;
    cfg->validate = ctx->options.find_validate != 0;
    cfg->incumbent = incumbent;
    cfg->pool = ctx->pool;
    cfg->cancel = cancel;
    cfg->retune = NULL;
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

convfind_status convfind_context_stats_get(const convfind_context *ctx,
                                           convfind_context_stats *stats)
{
    cf_clear_error();
    if (!ctx || !stats)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "%s is NULL", ctx ? "stats" : "context");
    cf_cache_stats cs;
    cf_cache_stats_get(ctx->cache, &cs);
    convfind_context *c = (convfind_context *)ctx; /* atomics are read, never written */
    memset(stats, 0, sizeof *stats);
    stats->hits = cs.hits;
    stats->misses = cs.misses;
    stats->waits = cs.waits;
    stats->evictions = cs.evictions;
    stats->finds = atomic_load_explicit(&c->finds, memory_order_relaxed);
    stats->find_seconds = 1e-9 * (double)atomic_load_explicit(&c->find_ns, memory_order_relaxed);
    stats->fallbacks = atomic_load_explicit(&c->fallbacks, memory_order_relaxed);
    stats->deferred_updates = atomic_load_explicit(&c->deferred_updates, memory_order_relaxed);
    stats->cache_entries = cs.entries;
    stats->cache_bytes = cs.bytes;
    stats->cache_peak_bytes = cs.peak_bytes;
    stats->cache_budget = cs.budget;
    return CONVFIND_OK;
}
