/*
 * context.c - contexts: creation, destruction, statistics, and the settings Find and
 * the key read from them (see context.h).
 */
#include "core/context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "algo/registry.h"
#include "core/deferred.h"
#include "util/error.h"

#ifdef CONVFIND_HAVE_CUDA
#include "cuda/algos.h"
#include "cuda/find.h"
#endif

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
 * ends in quarantine or memory with a warning (docs/db.md).  It copies the paths. */
static convfind_status open_db(convfind_context *ctx, const convfind_context_options *o)
{
    cf_db_config c;
    cf_db_config_init(&c);
    c.path = o->db_path;
    c.system_path = o->system_db_path;
    c.env_policy = o->db_env_policy;
    ctx->options.system_db_path = NULL; /* the database keeps its own copy */
    return cf_db_open(&c, &ctx->db);
}

/* The device of a CUDA context (src/cuda/); UNSUPPORTED with the reason without one. */
static convfind_status open_cuda(convfind_context *ctx, const convfind_context_options *o)
{
#ifdef CONVFIND_HAVE_CUDA
    return cf_cuda_device_open(o->device_index, &o->device_allocator, o->workspace_limit,
                               &ctx->cuda);
#else
    (void)ctx;
    (void)o;
    return cf_fail(CONVFIND_ERR_UNSUPPORTED,
                   "device = CONVFIND_DEVICE_CUDA: this build has no CUDA backend "
                   "(configured with CONVFIND_CUDA=OFF or without the CUDA toolkit and cuDNN)");
#endif
}

int convfind_cuda_available(int index, char *why, size_t size)
{
#ifdef CONVFIND_HAVE_CUDA
    return cf_cuda_usable(index, why, size);
#else
    (void)index;
    if (why && size)
        snprintf(why, size, "this build has no CUDA backend");
    return 0;
#endif
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
    int n_algos;
    cf_algos(&n_algos);
#ifdef CONVFIND_HAVE_CUDA
    if (options->device == CONVFIND_DEVICE_CUDA) /* a decision lists every configuration */
        n_algos = CF_CUDA_MAX_VARIANTS + 1;
#endif
    if (options->db_path && !(ctx->db_path = strdup(options->db_path)))
        st = cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot copy db_path");
    ctx->options.db_path = ctx->db_path;
    if (st == CONVFIND_OK && !(ctx->cache = cf_cache_create(ctx->options.cache_bytes, n_algos)))
        st = cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate the decision cache");
    if (st == CONVFIND_OK && options->device == CONVFIND_DEVICE_CUDA)
        st = open_cuda(ctx, options);
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
#ifdef CONVFIND_HAVE_CUDA
    cf_cuda_device_close(context->cuda);
#endif
    free(context->db_path);
    free(context);
}

convfind_status cf_context_key(const convfind_context *ctx, const cf_problem *p, cf_key *key)
{
    cf_fingerprint fp;
#ifdef CONVFIND_HAVE_CUDA
    if (ctx->cuda)
        cf_cuda_fingerprint(ctx->cuda, ctx->options.workspace_limit, &fp);
    else
#endif
        cf_fingerprint_detect(&fp, ctx->num_threads, ctx->options.workspace_limit);
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

cf_backend cf_context_backend(const convfind_context *ctx)
{
    return ctx->cuda ? CF_BACKEND_CUDA : CF_BACKEND_CPU;
}

extern const cf_algo cf_algo_cpu_reference;

const cf_algo *cf_context_reference(const convfind_context *ctx)
{
#ifdef CONVFIND_HAVE_CUDA
    if (ctx->cuda)
        return &cf_algo_cuda_direct;
#endif
    (void)ctx;
    return &cf_algo_cpu_reference;
}

convfind_status cf_context_heuristic(const convfind_context *ctx, const cf_problem *p,
                                     cf_decision *out)
{
#ifdef CONVFIND_HAVE_CUDA
    if (ctx->cuda)
        return cf_cuda_find_heuristic(ctx->cuda, p, out);
#endif
    return cf_find_heuristic(p, ctx->find_workspace_limit, out);
}

convfind_status cf_context_measure(convfind_context *ctx, const cf_problem *p,
                                   const cf_find_config *cfg, cf_decision *out)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
#ifdef CONVFIND_HAVE_CUDA
    convfind_status st = ctx->cuda ? cf_cuda_find_measure(ctx->cuda, p, cfg, out)
                                   : cf_find_measure(p, cfg, out);
#else
    convfind_status st = cf_find_measure(p, cfg, out);
#endif
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int64_t ns = (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
    atomic_fetch_add_explicit(&ctx->finds, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&ctx->find_ns, (uint_fast64_t)(ns > 0 ? ns : 0),
                              memory_order_relaxed);
    return st;
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
