/*
 * registry.c - the process's backends and their algorithm lists (see registry.h).
 */
#include "algo/registry.h"

#include <stdatomic.h>
#include <string.h>

#include "algo/module.h"
#include "util/error.h"

/* The host backend, registered by its symbol (src/cpu/backend.c) rather than its header:
 * nothing above the backends includes them. */
extern const cf_backend cf_backend_cpu;

static _Atomic(const cf_algo *const *) override_list;
static atomic_int override_count;

const cf_backend *cf_backend_host(void)
{
    return &cf_backend_cpu;
}

convfind_status cf_backend_for(convfind_device device, const char *cuda_module,
                               const cf_backend **out)
{
    *out = NULL;
    switch (device) {
    case CONVFIND_DEVICE_CPU:
        *out = &cf_backend_cpu;
        return CONVFIND_OK;
    case CONVFIND_DEVICE_CUDA:
        return cf_module_cuda(cuda_module, out);
    }
    return cf_fail(CONVFIND_ERR_INVALID_ENUM, "device = %d is not a convfind_device", (int)device);
}

int cf_backends(const char *cuda_module, const cf_backend **out, int cap)
{
    int n = 0;
    if (n < cap)
        out[n++] = &cf_backend_cpu;
    const cf_backend *cuda;
    if (n < cap && cf_module_cuda(cuda_module, &cuda) == CONVFIND_OK)
        out[n++] = cuda;
    cf_clear_error(); /* an absent module is not this call's failure */
    return n;
}

const cf_algo *const *cf_backend_algos(const cf_backend *b, int *count)
{
    const cf_algo *const *l = atomic_load_explicit(&override_list, memory_order_acquire);
    if (l && b == &cf_backend_cpu) {
        *count = atomic_load_explicit(&override_count, memory_order_relaxed);
        return l;
    }
    return b->algorithms(count);
}

const cf_algo *cf_backend_find(const cf_backend *b, const char *name)
{
    int n;
    const cf_algo *const *all = cf_backend_algos(b, &n);
    for (int i = 0; name && i < n; i++)
        if (cf_algo_matches(all[i], name))
            return all[i];
    return NULL;
}

int cf_backend_max_candidates(const cf_backend *b)
{
    int n = b->max_candidates;
    if (n <= 0)
        cf_backend_algos(b, &n);
    return n;
}

convfind_status cf_host_fingerprint(int threads, size_t limit, cf_fingerprint *fp)
{
    memset(fp, 0, sizeof *fp);
    const cf_backend_config config = {.threads = threads, .workspace_limit = limit};
    cf_backend_state *s;
    convfind_status st = cf_backend_cpu.open(&config, &s);
    if (st != CONVFIND_OK)
        return st;
    cf_backend_cpu.fingerprint(s, fp);
    cf_backend_cpu.close(s);
    fp->ws_class = cf_workspace_class(limit);
    return CONVFIND_OK;
}

void cf_algos_override(const cf_algo *const *list, int count)
{
    atomic_store_explicit(&override_count, list ? count : 0, memory_order_relaxed);
    atomic_store_explicit(&override_list, list, memory_order_release);
}
