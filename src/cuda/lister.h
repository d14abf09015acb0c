/*
 * lister.h - a device's listing threads: the lists of one Find's candidate
 * configurations (algos.c) made at the same time instead of one after the other.
 *
 * Listing is host work: each list builds a cuDNN operation graph and asks mode A of
 * cuDNN's heuristics about it (graph.c), 4-5 ms per list on the H200's host with up to
 * five lists per Find, about 40% of a ResNet-50 Find's time at N=32 once the rest was
 * pruned (bench/results/gpu_20261202, run6).  The lists are independent, so a Find runs
 * its first list itself and gives the others to the device's listing threads.  Each
 * listing thread has its own cuDNN handle (device.h: a handle is never shared), made on
 * its first list; what comes back is configurations, plain data that any thread may
 * finalize on its own handle.  The threads start with the device's first Find, sleep
 * between Finds, and end when the device is closed; Finds of several host threads share
 * them, and a job that no listing thread has taken when its Find is done with its own
 * runs on the Find's thread, so a Find never waits on a busy or missing listing thread.
 * (Not util/threadpool.h: the module links none of the core's code, and these threads
 * must each keep their own cuDNN handle.)
 */
#ifndef CONVFIND_CUDA_LISTER_H
#define CONVFIND_CUDA_LISTER_H

#include <stdbool.h>

#include "cuda/device.h"
#include "cuda/graph.h"

/* One list: cf_cudnn_enumerate(p, layout, kind, &limits) into out[0..cap); its result in
 * count (0 when the list could not be made). */
typedef struct cf_cuda_list_job {
    const cf_problem *p;
    convfind_layout layout;
    cf_cudnn_kind kind;
    cf_cudnn_limits limits;
    cf_cudnn_config *out;
    int cap;
    int count;
    /* The lister's business. */
    bool finished;
    struct cf_cuda_list_job *next;
} cf_cuda_list_job;

typedef struct cf_cuda_lister cf_cuda_lister;

/* Starts the listing threads of `d`; NULL when none could be started (lists then run on
 * the caller's thread). */
cf_cuda_lister *cf_cuda_lister_create(const cf_cuda_device *d);

/* Ends and joins the threads.  No list may be under way.  NULL is a no-op. */
void cf_cuda_lister_destroy(cf_cuda_lister *l);

/* Makes jobs[0..n): jobs[0] on the calling thread, the others on the listing threads
 * (or here, when none has taken them by then); returns when all are made.  `l` may be
 * NULL.  The caller must be inside cf_cuda_enter() for `d`.  Thread-safe. */
void cf_cuda_list(cf_cuda_lister *l, const cf_cuda_device *d, cf_cuda_list_job *jobs, int n);

#endif /* CONVFIND_CUDA_LISTER_H */
