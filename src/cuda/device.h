/*
 * device.h - a CUDA context's device and the state each host thread keeps on it.
 *
 * The prepared layer of the CUDA backend (DESIGN.md non-negotiable 4): a cuDNN handle
 * and every execution plan finalized with it belong to exactly one host thread on one
 * device, so a plan made on one handle can never run on another (the "No invoker was
 * registered" class of failure cannot happen by construction).  Each thread's state
 * holds
 *   - its cudnnHandle_t, created on the thread's first use of the device;
 *   - a bounded LRU cache of finalized plans keyed by (problem, algorithm name);
 *   - a grow-only device workspace (unless the caller supplies an allocator), made safe
 *     across streams by an event: work on a new stream first waits for the old one.
 *     Work captured into a CUDA graph never uses it (cf_cuda_workspace_acquire).
 * The state is freed when the thread exits or the device is closed.  Only the owning
 * thread touches its state, so nothing here takes a lock on the execution path.
 */
#ifndef CONVFIND_CUDA_DEVICE_H
#define CONVFIND_CUDA_DEVICE_H

#include <cudnn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "algo/backend.h"
#include "convfind.h"
#include "problem/key.h"
#include "problem/problem.h"

#define CF_CUDA_PLANS_PER_THREAD 64
#define CF_CUDA_NAME_MAX 64

typedef struct cf_cuda_device cf_cuda_device;

typedef struct cf_cuda_plan_slot {
    cf_problem problem;          /* with name: what the plan computes */
    char name[CF_CUDA_NAME_MAX];
    void *plan;                  /* NULL: empty slot */
    void (*destroy)(void *plan);
    uint64_t used;               /* LRU clock value of the last use */
} cf_cuda_plan_slot;

typedef struct cf_cuda_thread {
    const cf_cuda_device *device;
    cudnnHandle_t handle;
    void *workspace;             /* device memory, grow-only; NULL until needed */
    size_t workspace_size;
    cudaEvent_t workspace_done;  /* recorded after the last use of the workspace */
    void *workspace_stream;      /* the stream that last used it */
    int workspace_used;
    cudaStream_t trial_stream;   /* for trial captures (algos.c); NULL until needed */
    uint64_t clock;
    cf_cuda_plan_slot plans[CF_CUDA_PLANS_PER_THREAD];
    struct cf_cuda_thread *next, *prev; /* the device's list, under its mutex */
} cf_cuda_thread;

/* Opens device `index` for a context: checks that it exists and can run (the reason is
 * the error message otherwise, status CONVFIND_ERR_UNAVAILABLE) and records its name,
 * compute capability and the cuDNN version loaded.  `alloc` (copied; may be NULL or
 * have alloc NULL) supplies workspaces instead of the per-thread buffer.
 * `runtime_compiled`: where Find offers cuDNN's runtime-compiled engines (the context's
 * CONVFIND_CUDNN_RUNTIME_COMPILED). */
convfind_status cf_cuda_device_open(int index, const convfind_device_allocator *alloc,
                                    size_t workspace_limit, cf_runtime_compiled runtime_compiled,
                                    cf_cuda_device **out);

/* Fused-epilogue patterns (algos.c, problem_pattern) whose list came back empty on this
 * device: a later Find of a problem with the same pattern does not ask again.  cuDNN's
 * heuristics answered some epilogues (a residual add and a ReLU) in 20-80 ms per Find on
 * the H200 and offered no configuration for any of them.  Thread-safe; the patterns
 * live as long as the device (at most 64). */
bool cf_cuda_fused_known_empty(const cf_cuda_device *d, uint64_t pattern);
void cf_cuda_fused_note_empty(const cf_cuda_device *d, uint64_t pattern);

/* How cuDNN engines fared in this device's Finds, per list pattern (algos.c,
 * list_pattern): an engine that was beyond saving against the choice in
 * CF_CUDA_HOPELESS_AFTER Finds of a pattern and never chosen in one is hopeless there,
 * and lists that widen beyond cuDNN's ranking leave it out (graph.h, cf_cudnn_limits).
 * note: records one Find's outcome for (pattern, engine), `won` or beyond saving.
 * hopeless: sets bit e of mask[e / 64] for each hopeless engine e < 256 of `pattern`
 * (other bits untouched).  Thread-safe; at most CF_CUDA_OUTCOMES (pattern, engine)
 * pairs are kept for the device's life, later ones are not recorded. */
#define CF_CUDA_HOPELESS_AFTER 2
#define CF_CUDA_OUTCOMES 512
void cf_cuda_outcome_note(const cf_cuda_device *d, uint64_t pattern, int64_t engine, bool won);
void cf_cuda_hopeless(const cf_cuda_device *d, uint64_t pattern, uint64_t mask[4]);

/* The context's workspace limit in bytes (0: unlimited); executions over it fail with
 * CONVFIND_ERR_UNSUPPORTED, and Find marks such configurations not applicable. */
size_t cf_cuda_workspace_limit(const cf_cuda_device *d);

/* Where the context's Find offers runtime-compiled cuDNN engines (graph.h). */
cf_runtime_compiled cf_cuda_runtime_compiled(const cf_cuda_device *d);

/* The device's listing threads (lister.h), started on the first call; NULL when none
 * could be.  Thread-safe. */
struct cf_cuda_lister *cf_cuda_device_lister(const cf_cuda_device *d);

/* Frees the device, its listing threads and every thread's state on it.  No call may use
 * it concurrently. */
void cf_cuda_device_close(cf_cuda_device *d);

/* Whether device `index` can be used, with the reason when not (see convfind.h). */
int cf_cuda_usable(int index, char *why, size_t size);

/* The device part of the fingerprint of decisions measured on `d` (the caller sets
 * ws_class): cpu = "sm_<major><minor> cudnn <version> <device name>", isa = "cuda",
 * threads = 1 (an execution's speed does not depend on host threads).  Thread-safe. */
void cf_cuda_fingerprint(const cf_cuda_device *d, cf_fingerprint *fp);

/* Makes `d` the calling thread's current device, returning the previous one to give
 * back to cf_cuda_leave(). */
int cf_cuda_enter(const cf_cuda_device *d);
void cf_cuda_leave(int previous);

/* The calling thread's state on `d`, created (with its cuDNN handle) on first use.
 * The caller must be inside cf_cuda_enter(). */
convfind_status cf_cuda_thread_get(const cf_cuda_device *d, cf_cuda_thread **out);

/* The plan cached for (p, name) on this thread, or NULL. */
void *cf_cuda_plan_lookup(cf_cuda_thread *t, const cf_problem *p, const char *name);

/* Caches `plan` for (p, name), taking ownership; the least recently used plan is
 * destroyed when the cache is full. */
void cf_cuda_plan_insert(cf_cuda_thread *t, const cf_problem *p, const char *name, void *plan,
                         void (*destroy)(void *plan));

/* Whether work queued on `stream` now would be captured into a CUDA graph (also true
 * for the legacy stream while a blocking stream captures).  Clears the error it reads. */
bool cf_cuda_capturing(void *stream);

/* The calling thread's state on `d`, or NULL when it has none yet (nothing is created:
 * safe inside a CUDA graph capture). */
cf_cuda_thread *cf_cuda_thread_find(const cf_cuda_device *d);

/* A device workspace of `bytes` for work queued on `stream`; give it back with
 * cf_cuda_workspace_release() after queueing that work, with the same `captured`.
 * bytes == 0 gives NULL.  The caller's allocator when the context has one; else, with
 * `captured` (cf_cuda_capturing(stream)), a stream-ordered allocation that the graph
 * being captured owns; else the thread's grow-only buffer, which a different stream
 * first waits for. */
convfind_status cf_cuda_workspace_acquire(cf_cuda_thread *t, size_t bytes, void *stream,
                                          bool captured, void **ws);
void cf_cuda_workspace_release(cf_cuda_thread *t, void *ws, void *stream, bool captured);

/* The fail() message for a CUDA runtime error `err` of `what`. */
convfind_status cf_cuda_fail(int err, const char *what);

#endif /* CONVFIND_CUDA_DEVICE_H */
