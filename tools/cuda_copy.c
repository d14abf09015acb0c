/*
 * cuda_copy.c - device buffers through the CUDA driver API, loaded at run time (see
 * cuda_copy.h).  Only the handful of entry points a copy needs are declared here, with
 * the driver's own types spelled as plain C types.
 */
#include "cuda_copy.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int cu_result;                 /* CUresult; 0 is CUDA_SUCCESS */
typedef unsigned long long cu_ptr;     /* CUdeviceptr */

#define CU_FUNCTIONS(X)                                                                        \
    X(cuInit, (unsigned flags))                                                                \
    X(cuDeviceGet, (int *device, int ordinal))                                                 \
    X(cuDevicePrimaryCtxRetain, (void **ctx, int device))                                      \
    X(cuDevicePrimaryCtxRelease_v2, (int device))                                              \
    X(cuCtxPushCurrent_v2, (void *ctx))                                                        \
    X(cuCtxPopCurrent_v2, (void **ctx))                                                        \
    X(cuCtxSynchronize, (void))                                                                \
    X(cuMemAlloc_v2, (cu_ptr *ptr, size_t bytes))                                              \
    X(cuMemFree_v2, (cu_ptr ptr))                                                              \
    X(cuMemcpyHtoD_v2, (cu_ptr dst, const void *src, size_t bytes))                            \
    X(cuMemcpyDtoH_v2, (void *dst, cu_ptr src, size_t bytes))                                  \
    X(cuGetErrorString, (cu_result error, const char **text))

#define CU_POINTER(name, args) cu_result (*name) args;
#define CU_MAX_BUFFERS 8

struct cli_cuda {
    void *lib;
    int device;
    void *ctx;
    cu_ptr buffers[CU_MAX_BUFFERS];
    int nbuffers;
    struct {
        CU_FUNCTIONS(CU_POINTER)
    } f;
};

static int cu_fail(cli_cuda *c, cu_result r, const char *what, char *err, size_t errsize)
{
    const char *text = NULL;
    if (c->f.cuGetErrorString)
        c->f.cuGetErrorString(r, &text);
    snprintf(err, errsize, "CUDA driver: %s failed: %s (%d)", what, text ? text : "error", r);
    return -1;
}

int cli_cuda_open(int index, cli_cuda **out, char *err, size_t errsize)
{
    *out = NULL;
    cli_cuda *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errsize, "out of memory");
        return -1;
    }
    c->device = -1; /* nothing retained yet */
    c->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!c->lib) {
        snprintf(err, errsize, "cannot load the CUDA driver (libcuda.so.1): %s", dlerror());
        free(c);
        return -1;
    }
#define CU_LOAD(name, args)                                                                    \
    *(void **)&c->f.name = dlsym(c->lib, #name);                                               \
    if (!c->f.name) {                                                                          \
        snprintf(err, errsize, "the CUDA driver lacks %s", #name);                             \
        cli_cuda_close(c);                                                                     \
        return -1;                                                                             \
    }
    CU_FUNCTIONS(CU_LOAD)
#undef CU_LOAD
    int dev = 0;
    cu_result r;
    if ((r = c->f.cuInit(0)) != 0 || (r = c->f.cuDeviceGet(&dev, index)) != 0) {
        cu_fail(c, r, "initialisation", err, errsize);
        cli_cuda_close(c);
        return -1;
    }
    if ((r = c->f.cuDevicePrimaryCtxRetain(&c->ctx, dev)) != 0) {
        cu_fail(c, r, "cuDevicePrimaryCtxRetain", err, errsize);
        cli_cuda_close(c);
        return -1;
    }
    c->device = dev;
    *out = c;
    return 0;
}

/* Runs with the primary context current, as it was before afterwards. */
static cu_result push(cli_cuda *c)
{
    return c->f.cuCtxPushCurrent_v2(c->ctx);
}

static void pop(cli_cuda *c)
{
    void *ignored;
    c->f.cuCtxPopCurrent_v2(&ignored);
}

int cli_cuda_upload(cli_cuda *c, const void *host, size_t bytes, void **dev, char *err,
                    size_t errsize)
{
    if (c->nbuffers == CU_MAX_BUFFERS) {
        snprintf(err, errsize, "more than %d device buffers", CU_MAX_BUFFERS);
        return -1;
    }
    cu_result r = push(c);
    if (r != 0)
        return cu_fail(c, r, "cuCtxPushCurrent", err, errsize);
    cu_ptr p = 0;
    r = c->f.cuMemAlloc_v2(&p, bytes ? bytes : 1);
    if (r == 0)
        c->buffers[c->nbuffers++] = p;
    if (r == 0 && host && bytes)
        r = c->f.cuMemcpyHtoD_v2(p, host, bytes);
    pop(c);
    if (r != 0)
        return cu_fail(c, r, "copying to the device", err, errsize);
    *dev = (void *)(uintptr_t)p;
    return 0;
}

int cli_cuda_download(cli_cuda *c, void *host, const void *dev, size_t bytes, char *err,
                      size_t errsize)
{
    cu_result r = push(c);
    if (r != 0)
        return cu_fail(c, r, "cuCtxPushCurrent", err, errsize);
    r = c->f.cuCtxSynchronize();
    if (r == 0 && bytes)
        r = c->f.cuMemcpyDtoH_v2(host, (cu_ptr)(uintptr_t)dev, bytes);
    pop(c);
    return r == 0 ? 0 : cu_fail(c, r, "copying from the device", err, errsize);
}

void cli_cuda_close(cli_cuda *c)
{
    if (!c)
        return;
    if (c->ctx && push(c) == 0) {
        for (int i = 0; i < c->nbuffers; i++)
            c->f.cuMemFree_v2(c->buffers[i]);
        pop(c);
    }
    if (c->device >= 0 && c->f.cuDevicePrimaryCtxRelease_v2)
        c->f.cuDevicePrimaryCtxRelease_v2(c->device);
    if (c->lib)
        dlclose(c->lib);
    free(c);
}
