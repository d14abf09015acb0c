/*
 * threadpool.h - the context's worker threads, shared without oversubscription.
 *
 * A context owns one pool of (num_threads - 1) workers.  cf_parallel_for() splits a
 * range over the pool plus the calling thread.  When another caller already drives the
 * pool, the call does not queue behind it: it runs the whole range on the calling
 * thread.  So N concurrent callers use at most num_threads - 1 + N threads, never
 * serialize on each other, and there is no hidden global pool.
 *
 * A pool may instead stand for a caller's own threads (convfind_parallel_for_fn): it
 * then has no workers of its own, and every parallel loop is handed to the caller's
 * function, which may run it on any number of threads at once.
 */
#ifndef CONVFIND_THREADPOOL_H
#define CONVFIND_THREADPOOL_H

#include <stddef.h>

#include "convfind.h"

typedef struct cf_threadpool cf_threadpool;

/* fn(arg, i) is called once for every i in [0, count), in any order, on any thread. */
typedef convfind_task_fn cf_task_fn;

/* Creates a pool in which `num_threads` threads (the caller included) work; 1 makes a
 * pool with no workers.  *out is NULL on failure. */
convfind_status cf_threadpool_create(int num_threads, cf_threadpool **out);

/* A pool that starts no thread: every cf_parallel_for of more than one index calls
 * `parallel_for(user, fn, arg, count)`, which runs it on `num_threads` threads of the
 * caller's (>= 1). */
convfind_status cf_threadpool_create_external(int num_threads,
                                              convfind_parallel_for_fn parallel_for,
                                              void *user, cf_threadpool **out);
void cf_threadpool_destroy(cf_threadpool *pool);

/* Threads that a parallel_for on this pool may use, the caller included (>= 1).
 * NULL pool: 1. */
int cf_threadpool_size(const cf_threadpool *pool);

/* Runs fn over [0, count) and returns when every index is done.  NULL pool, count <= 1
 * or a pool of its own busy with another caller: runs inline on the calling thread.  A
 * caller's pool gets every loop of more than one index. */
void cf_parallel_for(cf_threadpool *pool, size_t count, cf_task_fn fn, void *arg);

#endif /* CONVFIND_THREADPOOL_H */
