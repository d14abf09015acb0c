/*
 * algos.c - the candidate list: the registry, or a test's substitute (see algos.h).
 */
#include "algo/registry.h"

#include <stdatomic.h>
#include <string.h>

static _Atomic(const cf_algo *const *) override_list;
static atomic_int override_count;

const cf_algo *const *cf_algos(int *count)
{
    const cf_algo *const *l = atomic_load_explicit(&override_list, memory_order_acquire);
    if (l) {
        *count = atomic_load_explicit(&override_count, memory_order_relaxed);
        return l;
    }
    return cf_registry(count);
}

const cf_algo *cf_algos_find(const char *name)
{
    int n;
    const cf_algo *const *all = cf_algos(&n);
    for (int i = 0; name && i < n; i++)
        if (cf_algo_matches(all[i], name))
            return all[i];
    return NULL;
}

void cf_algos_override(const cf_algo *const *list, int count)
{
    atomic_store_explicit(&override_count, list ? count : 0, memory_order_relaxed);
    atomic_store_explicit(&override_list, list, memory_order_release);
}

convfind_status cf_algo_workspace(const cf_algo *algo, const cf_problem *p, size_t *bytes)
{
    *bytes = 0;
    return algo->workspace ? algo->workspace(p, bytes) : CONVFIND_OK;
}

bool cf_algo_usable(const cf_algo *algo, const cf_problem *p, size_t limit, size_t *workspace)
{
    *workspace = 0;
    /* Host contexts offer host algorithms only: a device algorithm must never receive
     * host pointers (core/algo.h, cf_backend). */
    if (algo->backend != CF_BACKEND_CPU || !algo->applicable(p) ||
        cf_algo_workspace(algo, p, workspace) != CONVFIND_OK)
        return false;
    return limit == 0 || *workspace <= limit;
}
