/*
 * backend.c - the CUDA backend's table (algo/backend.h) and the module's entry, the one
 * symbol libconvfind_cuda.so exports (CF_MODULE_ENTRY; everything else is hidden).
 *
 * The core loads this module on the first request for a CUDA device (algo/module.h).
 * Its per-context state is a cf_cuda_device (device.h): opening one is where a missing
 * driver, device or cuDNN 9 is found and reported as CONVFIND_ERR_UNAVAILABLE.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "algo/backend.h"
#include "cuda/algos.h"
#include "cuda/device.h"
#include "cuda/find.h"
#include "cuda/host.h"
#include "util/error.h"

static convfind_status cuda_open(const cf_backend_config *config, cf_backend_state **out)
{
    cf_cuda_device *d;
    convfind_status st = cf_cuda_device_open(
        config->device_index, &config->allocator, config->workspace_limit,
        config->env ? config->env->runtime_compiled : CF_RUNTIME_COMPILED_DEFAULT, &d);
    *out = (cf_backend_state *)d;
    return st;
}

static void cuda_close(cf_backend_state *s)
{
    cf_cuda_device_close((cf_cuda_device *)s);
}

static void cuda_fingerprint(const cf_backend_state *s, cf_fingerprint *fp)
{
    cf_cuda_fingerprint((const cf_cuda_device *)s, fp);
}

/* A plan's constant weights: a device copy on the context's device, finished before the
 * plan creation returns (the caller may change its buffer then). */
static convfind_status cuda_weights_copy(const cf_backend_state *s, const void *w, size_t bytes,
                                         void **copy)
{
    *copy = NULL;
    int prev = cf_cuda_enter((const cf_cuda_device *)s);
    int err = cudaMalloc(copy, bytes ? bytes : 1);
    if (!err)
        err = cudaMemcpy(*copy, w, bytes, cudaMemcpyDeviceToDevice);
    if (err && *copy) {
        cudaFree(*copy);
        *copy = NULL;
    }
    cf_cuda_leave(prev);
    return err ? cf_cuda_fail(err, "copying constant weights") : CONVFIND_OK;
}

static void cuda_weights_free(const cf_backend_state *s, void *copy)
{
    int prev = cf_cuda_enter((const cf_cuda_device *)s);
    cudaFree(copy);
    cf_cuda_leave(prev);
}

/* cuda.cudnn first: the heuristic's tie-break prefers the earlier algorithm. */
static const cf_algo *const algorithms[] = {&cf_algo_cuda_cudnn, &cf_algo_cuda_direct};

static const cf_algo *const *cuda_algorithms(int *count)
{
    *count = (int)(sizeof algorithms / sizeof algorithms[0]);
    return algorithms;
}

static const cf_backend cuda_backend = {
    .abi = CF_BACKEND_ABI,
    .name = "cuda",
    .device_memory = true,
    .max_candidates = CF_CUDA_MAX_VARIANTS + 1, /* every configuration and cuda.direct */
    .open = cuda_open,
    .close = cuda_close,
    .fingerprint = cuda_fingerprint,
    .weights_copy = cuda_weights_copy,
    .weights_free = cuda_weights_free,
    .available = cf_cuda_usable,
    .algorithms = cuda_algorithms,
    .reference = &cf_algo_cuda_direct,
    .find = &cf_cuda_find_hooks,
};

__attribute__((visibility("default"))) const cf_backend *
CF_MODULE_ENTRY(const cf_host_services *host, char *why, size_t size)
{
    if (!host || host->abi != CF_BACKEND_ABI || !host->version ||
        strcmp(host->version, CONVFIND_VERSION_STRING) != 0) {
        if (why && size)
            snprintf(why, size, "the module is convfind %s (backend interface %d); the library "
                     "is convfind %s (interface %u)", CONVFIND_VERSION_STRING, CF_BACKEND_ABI,
                     host && host->version ? host->version : "?", host ? host->abi : 0u);
        return NULL;
    }
    cf_cuda_host_set(host);
    return &cuda_backend;
}
