/*
 * device.c - opening a device, its fingerprint, and the per-thread state (device.h).
 */
#include "cuda/device.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/lister.h"
#include "util/error.h"

struct cf_cuda_device {
    int index;
    char name[256];
    int cc_major, cc_minor;
    size_t cudnn_version;
    convfind_device_allocator alloc;
    size_t workspace_limit;
    cf_runtime_compiled runtime_compiled;
    pthread_key_t key;
    pthread_mutex_t mu;          /* guards the thread list, the lister's start, the
                                    empty fused patterns and the engines' outcomes, never
                                    the execution path */
    cf_cuda_thread *threads;
    cf_cuda_lister *lister;      /* started by the first Find (lister.h) */
    bool lister_tried;
    uint64_t fused_empty[64];    /* cf_cuda_fused_known_empty; beyond 64 none is added */
    int fused_empty_count;
    struct {                     /* cf_cuda_outcome_note */
        uint64_t pattern;
        int64_t engine;
        int beyond_saving;
        bool won;
    } outcomes[CF_CUDA_OUTCOMES];
    int outcome_count;
};

convfind_status cf_cuda_fail(int err, const char *what)
{
    return cf_fail(err == cudaErrorMemoryAllocation ? CONVFIND_ERR_OUT_OF_MEMORY
                                                    : CONVFIND_ERR_BACKEND,
                   "%s: CUDA error %d (%s)", what, err, cudaGetErrorString((cudaError_t)err));
}

int cf_cuda_usable(int index, char *why, size_t size)
{
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    const char *reason = NULL;
    char buf[200];
    if (err != cudaSuccess) {
        snprintf(buf, sizeof buf, "no usable CUDA device: cudaGetDeviceCount says %s",
                 cudaGetErrorString(err));
        reason = buf;
        cudaGetLastError(); /* the error is sticky only for this query */
    } else if (index < 0 || index >= count) {
        snprintf(buf, sizeof buf, "device_index = %d but %d CUDA device(s) are present", index,
                 count);
        reason = buf;
    } else if (cudnnGetVersion() < 90000) {
        snprintf(buf, sizeof buf, "cuDNN %zu is loaded; the backend needs cuDNN 9",
                 cudnnGetVersion());
        reason = buf;
    }
    if (why && size) {
        strncpy(why, reason ? reason : "", size - 1);
        why[size - 1] = '\0';
    }
    return reason == NULL;
}

static void thread_free(cf_cuda_thread *t)
{
    for (int i = 0; i < CF_CUDA_PLANS_PER_THREAD; i++)
        if (t->plans[i].plan)
            t->plans[i].destroy(t->plans[i].plan);
    if (t->workspace)
        cudaFree(t->workspace);
    if (t->workspace_done)
        cudaEventDestroy(t->workspace_done);
    if (t->trial_stream)
        cudaStreamDestroy(t->trial_stream);
    if (t->handle)
        cudnnDestroy(t->handle);
    free(t);
}

static void unlink_thread(cf_cuda_device *d, cf_cuda_thread *t)
{
    if (t->prev)
        t->prev->next = t->next;
    else
        d->threads = t->next;
    if (t->next)
        t->next->prev = t->prev;
}

/* Thread exit: the state of a thread that used the device. */
static void thread_exit(void *value)
{
    cf_cuda_thread *t = value;
    cf_cuda_device *d = (cf_cuda_device *)t->device;
    pthread_mutex_lock(&d->mu);
    unlink_thread(d, t);
    pthread_mutex_unlock(&d->mu);
    int prev = cf_cuda_enter(d);
    thread_free(t);
    cf_cuda_leave(prev);
}

convfind_status cf_cuda_device_open(int index, const convfind_device_allocator *alloc,
                                    size_t workspace_limit, cf_runtime_compiled runtime_compiled,
                                    cf_cuda_device **out)
{
    *out = NULL;
    char why[256];
    if (!cf_cuda_usable(index, why, sizeof why))
        return cf_fail(CONVFIND_ERR_UNAVAILABLE, "CUDA context: %s", why);
    if (alloc && (alloc->alloc == NULL) != (alloc->free == NULL))
        return cf_fail(CONVFIND_ERR_NULL_POINTER,
                       "device_allocator: alloc and free must both be set or both be NULL");
    struct cudaDeviceProp prop;
    cudaError_t err = cudaGetDeviceProperties(&prop, index);
    if (err != cudaSuccess)
        return cf_cuda_fail(err, "cudaGetDeviceProperties");
    cf_cuda_device *d = calloc(1, sizeof *d);
    if (!d)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate a CUDA device");
    d->index = index;
    snprintf(d->name, sizeof d->name, "%s", prop.name);
    d->cc_major = prop.major;
    d->cc_minor = prop.minor;
    d->cudnn_version = cudnnGetVersion();
    if (alloc)
        d->alloc = *alloc;
    d->workspace_limit = workspace_limit;
    d->runtime_compiled = runtime_compiled;
    if (pthread_key_create(&d->key, thread_exit) != 0) {
        free(d);
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot create a thread-local key");
    }
    pthread_mutex_init(&d->mu, NULL);
    *out = d;
    return CONVFIND_OK;
}

void cf_cuda_device_close(cf_cuda_device *d)
{
    if (!d)
        return;
    /* First: the listing threads' states leave the list as they end. */
    cf_cuda_lister_destroy(d->lister);
    pthread_setspecific(d->key, NULL); /* a later key with this number starts empty */
    pthread_key_delete(d->key);        /* no thread_exit() will run for this device any more */
    int prev = cf_cuda_enter(d);
    while (d->threads) {
        cf_cuda_thread *t = d->threads;
        unlink_thread(d, t);
        thread_free(t);
    }
    cf_cuda_leave(prev);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

cf_cuda_lister *cf_cuda_device_lister(const cf_cuda_device *cd)
{
    cf_cuda_device *d = (cf_cuda_device *)cd; /* only the lister's start changes */
    pthread_mutex_lock(&d->mu);
    if (!d->lister_tried) {
        d->lister_tried = true;
        d->lister = cf_cuda_lister_create(d);
    }
    cf_cuda_lister *l = d->lister;
    pthread_mutex_unlock(&d->mu);
    return l;
}

/* Whether `pattern` is among d's empty fused patterns; d->mu held. */
static bool fused_empty_has(const cf_cuda_device *d, uint64_t pattern)
{
    for (int i = 0; i < d->fused_empty_count; i++)
        if (d->fused_empty[i] == pattern)
            return true;
    return false;
}

bool cf_cuda_fused_known_empty(const cf_cuda_device *cd, uint64_t pattern)
{
    cf_cuda_device *d = (cf_cuda_device *)cd; /* the lock only */
    pthread_mutex_lock(&d->mu);
    const bool known = fused_empty_has(d, pattern);
    pthread_mutex_unlock(&d->mu);
    return known;
}

void cf_cuda_fused_note_empty(const cf_cuda_device *cd, uint64_t pattern)
{
    cf_cuda_device *d = (cf_cuda_device *)cd; /* only the patterns change */
    const int cap = (int)(sizeof d->fused_empty / sizeof d->fused_empty[0]);
    pthread_mutex_lock(&d->mu);
    if (!fused_empty_has(d, pattern) && d->fused_empty_count < cap)
        d->fused_empty[d->fused_empty_count++] = pattern;
    pthread_mutex_unlock(&d->mu);
}

void cf_cuda_outcome_note(const cf_cuda_device *cd, uint64_t pattern, int64_t engine, bool won)
{
    cf_cuda_device *d = (cf_cuda_device *)cd; /* only the outcomes change */
    pthread_mutex_lock(&d->mu);
    int i = 0;
    while (i < d->outcome_count &&
           (d->outcomes[i].pattern != pattern || d->outcomes[i].engine != engine))
        i++;
    if (i == d->outcome_count && i < CF_CUDA_OUTCOMES) {
        d->outcomes[i].pattern = pattern;
        d->outcomes[i].engine = engine;
        d->outcomes[i].beyond_saving = 0;
        d->outcomes[i].won = false;
        d->outcome_count++;
    }
    if (i < d->outcome_count) {
        d->outcomes[i].won |= won;
        d->outcomes[i].beyond_saving += !won;
    }
    pthread_mutex_unlock(&d->mu);
}

void cf_cuda_hopeless(const cf_cuda_device *cd, uint64_t pattern, uint64_t mask[4])
{
    cf_cuda_device *d = (cf_cuda_device *)cd; /* the lock only */
    pthread_mutex_lock(&d->mu);
    for (int i = 0; i < d->outcome_count; i++)
        if (d->outcomes[i].pattern == pattern && !d->outcomes[i].won &&
            d->outcomes[i].beyond_saving >= CF_CUDA_HOPELESS_AFTER &&
            d->outcomes[i].engine < 256)
            mask[d->outcomes[i].engine / 64] |= 1ull << (d->outcomes[i].engine % 64);
    pthread_mutex_unlock(&d->mu);
}

size_t cf_cuda_workspace_limit(const cf_cuda_device *d)
{
    return d->workspace_limit;
}

cf_runtime_compiled cf_cuda_runtime_compiled(const cf_cuda_device *d)
{
    return d->runtime_compiled;
}

void cf_cuda_fingerprint(const cf_cuda_device *d, cf_fingerprint *fp)
{
    /* Versions first: a long device name may be cut, the versions never. */
    char text[512];
    memset(fp, 0, sizeof *fp);
    snprintf(text, sizeof text, "sm_%d%d cudnn %zu.%zu.%zu %s", d->cc_major, d->cc_minor,
             d->cudnn_version / 10000, d->cudnn_version / 100 % 100, d->cudnn_version % 100,
             d->name);
    cf_fingerprint_text(fp->cpu, sizeof fp->cpu, text);
    snprintf(fp->isa, sizeof fp->isa, "cuda");
    fp->threads = 1;
}

int cf_cuda_enter(const cf_cuda_device *d)
{
    int prev = -1;
    if (cudaGetDevice(&prev) != cudaSuccess || prev != d->index)
        cudaSetDevice(d->index);
    return prev == d->index ? -1 : prev;
}

void cf_cuda_leave(int previous)
{
    if (previous >= 0)
        cudaSetDevice(previous);
}

convfind_status cf_cuda_thread_get(const cf_cuda_device *cd, cf_cuda_thread **out)
{
    cf_cuda_device *d = (cf_cuda_device *)cd; /* only the list and the key change */
    cf_cuda_thread *t = pthread_getspecific(d->key);
    if (t) {
        *out = t;
        return CONVFIND_OK;
    }
    t = calloc(1, sizeof *t);
    if (!t)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate a CUDA thread state");
    t->device = d;
    cudnnStatus_t cs = cudnnCreate(&t->handle);
    if (cs != CUDNN_STATUS_SUCCESS) {
        free(t);
        return cf_fail(CONVFIND_ERR_BACKEND, "cudnnCreate: %s", cudnnGetErrorString(cs));
    }
    cudaError_t err = cudaEventCreateWithFlags(&t->workspace_done, cudaEventDisableTiming);
    if (err != cudaSuccess || pthread_setspecific(d->key, t) != 0) {
        thread_free(t);
        return err != cudaSuccess ? cf_cuda_fail(err, "cudaEventCreate")
                                  : cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "pthread_setspecific");
    }
    pthread_mutex_lock(&d->mu);
    t->next = d->threads;
    if (d->threads)
        d->threads->prev = t;
    d->threads = t;
    pthread_mutex_unlock(&d->mu);
    *out = t;
    return CONVFIND_OK;
}

void *cf_cuda_plan_lookup(cf_cuda_thread *t, const cf_problem *p, const char *name)
{
    for (int i = 0; i < CF_CUDA_PLANS_PER_THREAD; i++) {
        cf_cuda_plan_slot *s = &t->plans[i];
        if (s->plan && strcmp(s->name, name) == 0 &&
            memcmp(&s->problem, p, sizeof *p) == 0) {
            s->used = ++t->clock;
            return s->plan;
        }
    }
    return NULL;
}

void cf_cuda_plan_insert(cf_cuda_thread *t, const cf_problem *p, const char *name, void *plan,
                         void (*destroy)(void *plan))
{
    cf_cuda_plan_slot *victim = &t->plans[0];
    for (int i = 0; i < CF_CUDA_PLANS_PER_THREAD && victim->plan; i++)
        if (!t->plans[i].plan || t->plans[i].used < victim->used)
            victim = &t->plans[i];
    if (victim->plan)
        victim->destroy(victim->plan);
    memcpy(&victim->problem, p, sizeof *p);
    snprintf(victim->name, sizeof victim->name, "%s", name);
    victim->plan = plan;
    victim->destroy = destroy;
    victim->used = ++t->clock;
}

bool cf_cuda_capturing(void *stream)
{
    enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cudaError_t err = cudaStreamIsCapturing((cudaStream_t)stream, &status);
    if (err != cudaSuccess) {
        cudaGetLastError();
        /* The legacy stream, while a blocking stream captures: using it would join. */
        return err == cudaErrorStreamCaptureImplicit;
    }
    return status != cudaStreamCaptureStatusNone;
}

cf_cuda_thread *cf_cuda_thread_find(const cf_cuda_device *d)
{
    return pthread_getspecific(d->key);
}

/* The caller's allocator, or cudaMallocAsync on `stream`: inside a capture either
 * becomes part of the graph (a stream-ordered allocation is a graph memory node, which
 * the graph owns and frees), so a replay never reads the thread's buffer, which later
 * calls may grow, free or use on another stream. */
static convfind_status ordered_alloc(const convfind_device_allocator *a, size_t bytes,
                                     void *stream, void **ws)
{
    if (a->alloc) {
        if (!(*ws = a->alloc(a->user, bytes, stream)))
            return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY,
                           "the caller's device allocator returned NULL for %zu bytes", bytes);
        return CONVFIND_OK;
    }
    cudaError_t err = cudaMallocAsync(ws, bytes, (cudaStream_t)stream);
    if (err != cudaSuccess) {
        cudaGetLastError();
        *ws = NULL;
        return cf_cuda_fail(err, "cudaMallocAsync of a workspace inside a CUDA graph capture");
    }
    return CONVFIND_OK;
}

convfind_status cf_cuda_workspace_acquire(cf_cuda_thread *t, size_t bytes, void *stream,
                                          bool captured, void **ws)
{
    *ws = NULL;
    if (bytes == 0)
        return CONVFIND_OK;
    const convfind_device_allocator *a = &t->device->alloc;
    if (a->alloc || captured)
        return ordered_alloc(a, bytes, stream, ws);
    if (bytes > t->workspace_size) {
        /* cudaFree waits for the device, so no queued work still uses the old buffer. */
        if (t->workspace)
            cudaFree(t->workspace);
        t->workspace = NULL;
        t->workspace_size = 0;
        cudaError_t err = cudaMalloc(&t->workspace, bytes);
        if (err != cudaSuccess) {
            cudaGetLastError();
            t->workspace = NULL;
            return cf_cuda_fail(err, "cudaMalloc of the workspace");
        }
        t->workspace_size = bytes;
        t->workspace_used = 0;
    }
    if (t->workspace_used && t->workspace_stream != stream) {
        cudaError_t err = cudaStreamWaitEvent((cudaStream_t)stream, t->workspace_done, 0);
        if (err != cudaSuccess)
            return cf_cuda_fail(err, "cudaStreamWaitEvent on the workspace");
    }
    *ws = t->workspace;
    return CONVFIND_OK;
}

void cf_cuda_workspace_release(cf_cuda_thread *t, void *ws, void *stream, bool captured)
{
    if (!ws)
        return;
    const convfind_device_allocator *a = &t->device->alloc;
    if (a->alloc) {
        a->free(a->user, ws, stream);
        return;
    }
    if (captured) {
        cudaFreeAsync(ws, (cudaStream_t)stream);
        return;
    }
    /* Never inside a capture: an event last recorded in a capturing stream cannot be
     * waited on afterwards (cudaErrorCapturedEvent), which failed every later use of
     * the buffer from another stream, Find's among them. */
    cudaEventRecord(t->workspace_done, (cudaStream_t)stream);
    t->workspace_stream = stream;
    t->workspace_used = 1;
}
