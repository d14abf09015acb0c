/*
 * scratch.h - per-thread workspace reused across executions.
 *
 * An execution used to allocate its algorithm's workspace and free it again; for the
 * megabytes an im2col needs that means fresh pages, and page faults, on every call,
 * which can cost as much as the convolution.  Each calling thread instead keeps one
 * buffer that only grows, bounded by the largest workspace it has run with (itself
 * bounded by the context's workspace limit).  No lock is involved: an execution uses
 * its own thread's buffer, and executions never nest on one thread.
 */
#ifndef CONVFIND_SCRATCH_H
#define CONVFIND_SCRATCH_H

#include <stddef.h>

/* A 64-byte aligned buffer of at least `bytes` owned by the calling thread, valid until
 * that thread's next call or exit; NULL when it cannot be allocated.  bytes > 0. */
void *cf_scratch_get(size_t bytes);

#endif /* CONVFIND_SCRATCH_H */
