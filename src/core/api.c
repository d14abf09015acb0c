/*
 * api.c - the public entry points on decisions and algorithms: convfind_find,
 * convfind_problem_key and the algorithm list.
 */
#include <stdio.h>
#include <string.h>

#include "algo/registry.h"
#include "core/context.h"
#include "core/policy.h"
#include "util/error.h"
#include "util/intern.h"

size_t convfind_problem_key(const convfind_context *ctx, const convfind_problem *problem,
                            convfind_weights weights, char *buf, size_t size)
{
    cf_clear_error();
    cf_key key;
    if (!ctx || !problem || (unsigned)weights > (unsigned)CONVFIND_WEIGHTS_CONSTANT ||
        cf_context_key(ctx, problem, (cf_weights)weights, &key) != CONVFIND_OK)
        return 0;
    if (buf && size)
        snprintf(buf, size, "%s", key.text);
    return key.len;
}

/* The entry's newest decision, measured now unless it already was. */
static const cf_cache_entry *measured(convfind_context *ctx, const cf_problem *p,
                                      cf_cache_entry *e, convfind_status *st)
{
    if (cf_cache_latest(e)->source != CF_SOURCE_MEASURED &&
        (*st = cf_decision_remeasure(ctx, p, e, 0, NULL)) != CONVFIND_OK)
        return NULL;
    return cf_cache_latest(e);
}

void cf_result_export(const cf_candidate_stats *c, const char *name, convfind_find_result *r)
{
    memset(r, 0, sizeof *r);
    r->algorithm = name;
    r->status = (convfind_candidate_status)c->status;
    r->median_ms = c->median_ms;
    r->min_ms = c->min_ms;
    r->spread = c->spread;
    r->repeats = c->repeats;
    r->workspace_bytes = c->workspace_bytes;
    r->validated = c->validated;
}

static void export_result(const convfind_context *ctx, const cf_candidate_stats *c,
                          convfind_find_result *r)
{
    const cf_algo *a = cf_context_algo(ctx, c->algo);
    /* A parameterised algorithm's result names its form; the public struct promises
     * static storage, hence the interned copy. */
    const char *name = a && a->prepare_named ? cf_intern(c->algo) : NULL;
    cf_result_export(c, name ? name : a ? a->name : "unknown", r);
}

convfind_status convfind_find(convfind_context *ctx, const convfind_problem *problem,
                              convfind_weights weights, convfind_find_result *results,
                              int capacity, int *count)
{
    cf_clear_error();
    if (!ctx || !problem || !count || (!results && capacity > 0))
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "%s is NULL",
                       !ctx ? "context" : !problem ? "problem" : !count ? "count" : "results");
    if (capacity < 0)
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE, "capacity = %d is negative", capacity);
    if ((unsigned)weights > (unsigned)CONVFIND_WEIGHTS_CONSTANT)
        return cf_fail(CONVFIND_ERR_INVALID_ENUM, "weights = %d is not a convfind_weights",
                       (int)weights);
    *count = 0;
    cf_key key;
    cf_cache_entry *e;
    convfind_status st = cf_context_key(ctx, problem, (cf_weights)weights, &key);
    if (st != CONVFIND_OK ||
        (st = cf_decision_get(ctx, problem, &key, CONVFIND_FIND_EXHAUSTIVE, false, &e)) !=
            CONVFIND_OK)
        return st;
    const cf_cache_entry *m = measured(ctx, problem, e, &st);
    if (m) {
        const cf_decision *d = &m->decision;
        for (int i = 0; i < d->n_candidates && i < capacity; i++)
            export_result(ctx, &d->candidates[i], &results[i]);
        *count = d->n_candidates;
    }
    cf_cache_release(e);
    return st;
}

/* Every backend's algorithms, the host's first: the CUDA module's too where it loads
 * (from CONVFIND_CUDA_MODULE, should this call be the first to look). */
static const cf_algo *algorithm_at(int index, int *count)
{
    const cf_backend *b[2];
    cf_env env; /* out of memory: nothing is listed */
    const int nb = cf_env_read(&env) == CONVFIND_OK ? cf_backends(env.cuda_module, b, 2) : 0;
    cf_env_free(&env);
    const cf_algo *found = NULL;
    int total = 0;
    for (int i = 0; i < nb; i++) {
        int n;
        const cf_algo *const *all = cf_backend_algos(b[i], &n);
        if (index >= total && index < total + n)
            found = all[index - total];
        total += n;
    }
    *count = total;
    return found;
}

int convfind_algorithm_count(void)
{
    int n;
    algorithm_at(-1, &n);
    return n;
}

const char *convfind_algorithm_name(int index)
{
    int n;
    const cf_algo *a = algorithm_at(index, &n);
    return a ? a->name : NULL;
}
