/*
 * algo.h - what an algorithm is: the one interface every backend's kernels implement.
 *
 * An algorithm is one file that defines a `const cf_algo` and one line in its backend's
 * registry (src/cpu/registry.c, src/cuda/backend.c).  Adding one touches neither the
 * cache, the database nor the public API.  Lifecycle, after XNNPACK and oneDNN:
 *
 *   applicable(problem)          can this algorithm compute this problem at all?
 *   workspace(problem, &bytes)   scratch memory one execution needs
 *   prepare(problem, &state)     per-plan state (blocking choices, ...); optional
 *   pack_weights(problem, state, w, &packed)  weights in the kernel's layout; optional
 *   execute(problem, state, args)
 *   release(state)
 *
 * `state` is owned by one plan and only read by execute, so a plan may execute from many
 * threads at once.  Everything an execution writes lives in args->workspace or args->y.
 * An algorithm belongs to exactly one backend (algo/backend.h): it is found only through
 * that backend's list, so a host algorithm never sees device pointers and a device
 * algorithm never sees host ones.
 *
 * The helpers below are pure (no state of their own); the CUDA module compiles this
 * file's .c into itself.
 */
#ifndef CONVFIND_ALGO_H
#define CONVFIND_ALGO_H

#include <stdbool.h>
#include <stddef.h>

#include "problem/problem.h"
#include "util/threadpool.h"

typedef struct cf_exec_args {
    const void *x, *w, *b, *z; /* b, z NULL when the problem has none */
    const void *packed_w;      /* this algorithm's pack_weights() output, or NULL */
    void *y;
    void *workspace;           /* at least workspace() bytes, 64-byte aligned; NULL if 0 */
    size_t workspace_size;
    cf_threadpool *pool;       /* may be NULL: run on the calling thread */
    /* Device backends (docs/cuda.md): tensors are device pointers, work is queued. */
    void *stream;              /* CUDA: the cudaStream_t to queue on; NULL: default stream */
    const void *device;        /* the context's backend state (cf_backend.open); CPU
                                  algorithms ignore it */
} cf_exec_args;

typedef struct cf_algo {
    const char *name;   /* stable: stored in decisions and databases, never reused */
    const char *family; /* e.g. "reference", "direct", "gemm", "winograd"; sets error bounds */
    bool (*applicable)(const cf_problem *p);
    /* Bytes of workspace; CONVFIND_ERR_OVERFLOW when they do not fit in size_t.  NULL:
     * none (a device backend's algorithm manages its device workspace itself). */
    convfind_status (*workspace)(const cf_problem *p, size_t *bytes);
    /* Optional (NULL: state is NULL). */
    convfind_status (*prepare)(const cf_problem *p, void **state);
    void (*release)(void *state);
    /* Optional: rearranges W once into the form execute() reads, so plans executed many
     * times with the same weights skip that work.  When execute() gets packed_w == NULL
     * it must pack into its workspace (workspace() counts that) or read W directly. */
    convfind_status (*pack_weights)(const cf_problem *p, const void *state, const void *w,
                                    void **packed);
    void (*free_packed)(void *packed);
    /* With pack_weights: where the bulk of `packed` lies, as its start (*start) and
     * length in bytes (the return value).  CPU Find evicts it from the caches before each
     * timed run of a plan with constant weights (cpu/find.c says why). */
    size_t (*packed_extent)(const cf_problem *p, const void *packed, const void **start);
    convfind_status (*execute)(const cf_problem *p, const void *state, const cf_exec_args *a);

    /* Optional, for an algorithm whose concrete forms depend on the problem and the
     * device (cuDNN engine configurations): prepare() for the form `name`, used instead
     * of prepare().  Each form's name is "<name>:<parameters>" (shorter than
     * CF_ALGO_NAME_MAX bytes), is what decisions store, and resolves back to this
     * algorithm (cf_algo_matches); its backend's Find lists the forms. */
    convfind_status (*prepare_named)(const cf_problem *p, const char *name, void **state);

    /* Optional, for an algorithm whose forms compile code when first run (cuDNN's
     * runtime-compiled engines), so that a later process loads that code instead of
     * compiling it again (the find-db keeps it next to the decision, docs/db.md):
     * export_compiled() serializes what the calling thread compiled for the form of
     * `state` and `p` on `device` (the context's backend state) into a malloc'ed *blob
     * of *size bytes; *blob is NULL when there is nothing worth keeping (a form that
     * loads precompiled code, or one this thread has not run).  import_compiled() gives
     * the calling thread such a blob, from `fetch`, which it calls only when the thread
     * has not compiled the form yet; it returns whether the blob was used (one made by
     * another library build or device is not, and the form compiles on its first run as
     * it would have).  Neither fails a call: they only save time.  Never inside a CUDA
     * graph capture. */
    convfind_status (*export_compiled)(const cf_problem *p, const void *state,
                                       const void *device, void **blob, size_t *size);
    bool (*import_compiled)(const cf_problem *p, const void *state, const void *device,
                            bool (*fetch)(void *arg, void **blob, size_t *size), void *arg);
} cf_algo;

/* Whether `name` names `algo`: its own name or, for one with named forms,
 * "<its name>:...". */
bool cf_algo_matches(const cf_algo *algo, const char *name);

/* Prepares `algo` for `p` under the full `name` (a form's parameters included). */
convfind_status cf_algo_prepare(const cf_algo *algo, const cf_problem *p, const char *name,
                                void **state);

/* Workspace of `algo` for `p` (0 when it declares none), or CONVFIND_ERR_OVERFLOW. */
convfind_status cf_algo_workspace(const cf_algo *algo, const cf_problem *p, size_t *bytes);

/* True when `algo` runs `p` with a workspace within `limit` (0: unlimited); *workspace
 * receives the bytes. */
bool cf_algo_usable(const cf_algo *algo, const cf_problem *p, size_t limit, size_t *workspace);

#endif /* CONVFIND_ALGO_H */
