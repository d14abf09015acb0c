/*
 * backend.h - the backend interface: what a place where convolutions run (the CPU, a
 * CUDA device) offers the layers above it.
 *
 * A backend is one constant `cf_backend` table.  Everything above this layer (find/,
 * core/) reaches a backend only through the table, never through its headers:
 *   - the CPU backend (src/cpu/backend.c) is linked into the library and registered by
 *     its symbol, cf_backend_cpu (algo/registry.c);
 *   - the CUDA backend (src/cuda/backend.c) is a module, libconvfind_cuda.so, loaded on
 *     first use (algo/module.h); its one exported symbol, CF_MODULE_ENTRY, returns its
 *     table.  Because the module may be loaded into a program whose core library is
 *     linked statically, what it needs of the core's state (the calling thread's error
 *     message) comes through the cf_host_services table it gets from the entry.
 *
 * A backend's part in a context is its state: open() makes it from the context's
 * options, close() frees it.  CPU: the thread count.  CUDA: the device, its allocator
 * and workspace limit, and every host thread's cuDNN handle and finalized plans.
 *
 * Find (find/find.h) is one harness for every backend; `find` holds the hooks through
 * which it prepares, runs and checks candidates on this backend (cf_find_hooks below).
 */
#ifndef CONVFIND_ALGO_BACKEND_H
#define CONVFIND_ALGO_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "algo/algo.h"
#include "convfind.h"
#include "decision/decision.h"
#include "problem/key.h"
#include "problem/problem.h"
#include "util/log.h"
#include "util/threadpool.h"

/* The version of this interface and of every internal struct it passes (cf_problem,
 * cf_algo, cf_exec_args, cf_candidate_stats, cf_fingerprint, cf_backend_config).  A
 * module is used only when it was built against the same interface and the same library
 * version. */
#define CF_BACKEND_ABI 7

/* A backend's own per-context state; each backend defines what it holds. */
typedef struct cf_backend_state cf_backend_state;

/* Where a device backend offers engines that compile their kernels at run time (cuDNN's
 * runtime-compiled engines, CONVFIND_CUDNN_RUNTIME_COMPILED). */
typedef enum cf_runtime_compiled {
    CF_RUNTIME_COMPILED_DEFAULT = 0, /* the backend's choice (CUDA: grouped convolutions) */
    CF_RUNTIME_COMPILED_NEVER = 1,
    CF_RUNTIME_COMPILED_ALWAYS = 2,
} cf_runtime_compiled;

/* What a context's environment (read once, by core/env.c) asks of its backend.  Only the
 * values reach the backend, never the environment: nothing below the core reads it. */
typedef struct cf_backend_env {
    const cf_log *log; /* the context's log, for what open() cannot honour */
    /* CPU: the highest ISA level (cf_isa, algo/isa.h) CONVFIND_ISA allows, -1 for none.
     * The level is the process's, fixed by its first CPU context (cpu/isa.h). */
    int isa;
    cf_runtime_compiled runtime_compiled; /* CUDA: CONVFIND_CUDNN_RUNTIME_COMPILED */
} cf_backend_env;

/* What open() gets from the context's options and environment. */
typedef struct cf_backend_config {
    int threads;                         /* threads one execution uses (CPU) */
    int device_index;                    /* device ordinal (device backends) */
    convfind_device_allocator allocator; /* device workspace; alloc NULL: the backend's */
    size_t workspace_limit;              /* bytes; 0: unlimited */
    /* The context's environment; NULL for a state that is no context's (the host's
     * fingerprint, algo/registry.h), which asks for the defaults and fixes nothing. */
    const cf_backend_env *env;
} cf_backend_config;

/* The candidate lists a Find may ask enumerate() for, beyond the vetted candidates that
 * the heuristic choice also draws from.  Both are for a Find that validates every
 * candidate against the reference, because neither kind is vouched for otherwise:
 *   UNVETTED  candidates the backend's own heuristics do not list (cuDNN engines
 *             outside its heuristics' lists);
 *   INEXACT   forms whose accuracy depends on the engine (CUDA's split 3xTF32
 *             configurations), accepted only within their own tolerance. */
enum { CF_FIND_LIST_UNVETTED = 1, CF_FIND_LIST_INEXACT = 2 };
#define CF_FIND_LIST_VALIDATING (CF_FIND_LIST_UNVETTED | CF_FIND_LIST_INEXACT)

/* How a Find session runs its candidates: what bench_create() gets. */
typedef struct cf_bench_config {
    bool validate;          /* compare every candidate with the reference */
    bool constant_weights;  /* time candidates with weights rearranged once (pack_weights
                               at prepare), as a plan with constant weights runs; else
                               every run rearranges them itself, as per-call weights do */
    size_t workspace_limit; /* largest admissible workspace; 0: unlimited */
    cf_threadpool *pool;    /* how executions will run */
} cf_bench_config;

/* A backend's Find session (test tensors, reference output, timers) and one prepared
 * candidate in it; each backend defines them. */
typedef struct cf_find_bench cf_find_bench;
typedef struct cf_find_ready cf_find_ready;

/* How the Find harness (find/find.c) measures on this backend.  All hooks run on the
 * thread running Find; a bench is used by that thread only. */
typedef struct cf_find_hooks {
    /* Optional: writes up to `cap` candidates of `p` in list order (the first usable one
     * is the heuristic choice): algos[i] runs the form named stats[i].algo; stats[i]
     * has its status (CF_CAND_OK, or CF_CAND_NOT_APPLICABLE) and, where known before
     * preparing, its workspace_bytes; everything else zero.  `lists` adds the
     * CF_FIND_LIST_* kinds.  Returns how many.  NULL: the backend's algorithm list
     * (cf_backend_algos), each usable within `workspace_limit` or NOT_APPLICABLE. */
    int (*enumerate)(const cf_backend_state *s, const cf_problem *p, size_t workspace_limit,
                     unsigned lists, const cf_algo **algos, cf_candidate_stats *stats, int cap);
    /* Test tensors of `p`, filled with non-zero values, and with config->validate the
     * reference output.  On failure nothing is left to destroy. */
    convfind_status (*bench_create)(const cf_backend_state *s, const cf_problem *p,
                                    const cf_bench_config *config, cf_find_bench **out);
    void (*bench_destroy)(cf_find_bench *b);
    /* Prepares candidate `algo` (form c->algo) for runs: its state, workspace and, with
     * constant weights, its packed weights.  Returns CF_CAND_OK with *out set, or the
     * candidate's status when it cannot run (FAILED: it refused; ABANDONED: memory, no
     * verdict; NOT_APPLICABLE: over the workspace limit) with nothing held.  May set
     * c->workspace_bytes. */
    cf_candidate_status (*prepare)(cf_find_bench *b, const cf_algo *algo,
                                   cf_candidate_stats *c, cf_find_ready **out);
    void (*release)(cf_find_bench *b, cf_find_ready *r);
    /* Runs the candidate into a poisoned Y (so an unwritten output fails) and, when the
     * bench validates, compares Y with the reference by the backend's bound, on every
     * path a plan of the bench's usage may take (with constant weights: packed, and
     * unpacked as a fallback runs).  *runs: how many runs that took (they count as
     * warm-up runs); *ms: what a run of the path timed costs, measured on a run that
     * was not the candidate's first, else 0 (the harness abandons a candidate far
     * slower than the best so far on it, as on a first sample).  False: FAILED. */
    bool (*check)(cf_find_bench *b, cf_find_ready *r, int *runs, double *ms);
    /* One sample: `batch` runs back to back, the time per run in milliseconds. */
    convfind_status (*sample)(cf_find_bench *b, cf_find_ready *r, int batch, double *ms);
    /* Optional: waits for every queued run and clears what a refused one left behind;
     * called after each candidate, before release.  Not CONVFIND_OK: the device can run
     * nothing more (a sticky error), and Find ends with that status and message. */
    convfind_status (*synchronize)(cf_find_bench *b);
    /* Optional (knob refinement): writes up to `cap` names of forms neighbouring form
     * `name` (unvetted: a validating Find only) and returns how many. */
    int (*neighbors)(cf_find_bench *b, const char *name, char (*names)[CF_ALGO_NAME_MAX],
                     int cap);
    /* Optional: the outcome of a completed Find of `p` on state `s`, its `n` candidates
     * in rank order (ranked[0] is the choice, timed to the end); far[i] is true for those
     * whose time was beyond saving against the choice (find.h, the first-run abandon
     * rule).  Lets a backend leave hopeless candidates out of later lists; it may change
     * only what later Finds try, never what is correct.  Called on the Find's thread,
     * possibly on several threads at once. */
    void (*learn)(const cf_backend_state *s, const cf_problem *p,
                  const cf_candidate_stats *ranked, const bool *far, int n);
    /* A sample should last about this long (ms): the batch is sized from a first,
     * single-run sample.  0: every sample is one run, and there is no first sample. */
    double sample_target_ms;
    /* Whether the close candidates are timed again in turns (find.h, final round). */
    bool final_round;
    /* Whether the backend's reference is measured only when no other candidate has
     * measured OK before it: a reference that is only the always-valid fallback, never
     * the fastest (CUDA's direct kernel), is then not timed at all. */
    bool reference_last;
    /* Whether a candidate reached after the budget is spent still gets a look (find.h,
     * step 2): its check and one sample.  For a backend with few candidates, whose first
     * one can outlast the budget on its own (the CPU's on large layers); not for one
     * with hundreds of candidates. */
    bool look_past_budget;
    /* Samples per candidate (find.h, step 3): at least min_repeats, at most max_repeats;
     * 0: CF_FIND_MIN_REPEATS and CF_FIND_MAX_REPEATS.  At most final_rounds rounds of
     * the final round (0: CF_FIND_MAX_REPEATS), and at most refine_max neighbours per
     * round of knob refinement (0: as many as the list has room for). */
    int min_repeats, max_repeats, final_rounds, refine_max;
} cf_find_hooks;

typedef struct cf_backend {
    unsigned abi;                /* CF_BACKEND_ABI */
    const char *name;            /* "cpu", "cuda": messages and the algorithm names' prefix */
    bool device_memory;          /* tensors are device pointers and work goes on streams */
    /* Most candidates one decision of this backend lists (the cache sizes entries by it);
     * 0: the length of its algorithm list. */
    int max_candidates;
    /* Its per-context state, or a status naming why it cannot run (a device backend:
     * CONVFIND_ERR_UNAVAILABLE without a driver, a device or its libraries). */
    convfind_status (*open)(const cf_backend_config *config, cf_backend_state **out);
    void (*close)(cf_backend_state *s); /* NULL allowed */
    /* Fills the device part of decision keys measured with `s`: cpu (the device's name
     * and versions), isa and threads; the caller sets ws_class.  Thread-safe. */
    void (*fingerprint)(const cf_backend_state *s, cf_fingerprint *fp);
    /* Optional (device backends): 1 when device `index` can be used now, else 0 with the
     * reason in `why`.  Thread-safe. */
    int (*available)(int index, char *why, size_t size);
    /* A plan's private copy of its constant weights (`bytes` of them at `w`, memory of
     * the backend's tensors: host, or the device of `s`), in memory of that kind; and its
     * release.  Thread-safe. */
    convfind_status (*weights_copy)(const cf_backend_state *s, const void *w, size_t bytes,
                                    void **copy);
    void (*weights_free)(const cf_backend_state *s, void *copy);
    /* Every algorithm of the backend, the reference last.  Static storage. */
    const cf_algo *const *(*algorithms)(int *count);
    const cf_algo *reference; /* runs every problem the library accepts: the last resort */
    const cf_find_hooks *find;
} cf_backend;

/* What the core lends a module: the calling thread's error message.  A module's
 * cf_fail()/cf_clear_error() (util/error.h) go through these. */
typedef struct cf_host_services {
    unsigned abi;        /* CF_BACKEND_ABI */
    const char *version; /* CONVFIND_VERSION_STRING of the core */
    void (*set_error)(const char *message);
    void (*clear_error)(void);
} cf_host_services;

/* The module's entry: its backend table, or NULL with the reason in `why` (an ABI or
 * version mismatch).  `host` outlives the module. */
typedef const cf_backend *(*cf_module_entry_fn)(const cf_host_services *host, char *why,
                                                size_t size);
#define CF_MODULE_ENTRY cf_module_entry_v1
#define CF_MODULE_ENTRY_NAME "cf_module_entry_v1"

#endif /* CONVFIND_ALGO_BACKEND_H */
