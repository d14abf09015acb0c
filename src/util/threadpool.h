/*
 * threadpool.h - the context's worker threads, shared without oversubscription.
 *
 * A context owns one pool of (num_threads - 1) workers.  cf_parallel_for() splits a
 * range over the pool plus the calling thread.  When another caller already drives the
 * pool, the call does not queue behind it: it runs the whole range on the calling
 * thread.  So N concurrent callers use at most num_threads - 1 + N threads, never
 * serialize on each other, and there is no hidden global pool.
 */
#ifndef CONVFIND_THREADPOOL_H
#define CONVFIND_THREADPOOL_H

#include <stddef.h>

#include "convfind.h"

typedef struct cf_threadpool cf_threadpool;

/* fn(arg, i) is called once for every i in [0, count), in any order, on any thread. */
typedef void (*cf_task_fn)(void *arg, size_t index);

/* Creates a pool in which `num_threads` threads (the caller included) work; 1 makes a
 * pool with no workers.  *out is NULL on failure. */
convfind_status cf_threadpool_create(int num_threads, cf_threadpool **out);
void cf_threadpool_destroy(cf_threadpool *pool);

/* Threads that a parallel_for on this pool may use, the caller included (>= 1).
 * NULL pool: 1. */
int cf_threadpool_size(const cf_threadpool *pool);

/* Runs fn over [0, count) and returns when every index is done.  NULL pool, count <= 1
 * or a pool busy with another caller: runs inline on the calling thread. */
void cf_parallel_for(cf_threadpool *pool, size_t count, cf_task_fn fn, void *arg);

#endif /* CONVFIND_THREADPOOL_H */
