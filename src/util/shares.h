/*
 * shares.h - a range of indices dealt out in contiguous shares, one per thread, each
 * thread claiming from its own share first and from the others' once it is done.
 *
 * Why: a thread then gets the same share of every range of the same length, so work
 * run again (a layer executed again, the next layer over the same channels) finds its
 * data in that core's cache, while a thread that starts late or runs slowly still does
 * less, since the others take what it has not claimed.  The thread pool deals the
 * indices of every parallel loop this way; an algorithm whose tasks each own scratch
 * (one per thread) deals its own units over those tasks the same way.
 */
#ifndef CONVFIND_SHARES_H
#define CONVFIND_SHARES_H

#include <stdatomic.h>
#include <stddef.h>

#include "convfind.h"

/* One thread's share, [next, end); a cache line each, so claims do not contend. */
typedef struct cf_share {
    _Alignas(64) atomic_size_t next;
    size_t end;
} cf_share;

/* Cuts [0, count) into n contiguous shares (n >= 1) as evenly as integers allow.  Call
 * it before any thread claims from them: it is not atomic as a whole. */
void cf_shares_deal(cf_share *shares, size_t n, size_t count);

/* Claims indices one at a time, share `self` first and then the others' in turn, and
 * calls fn(arg, i) for each, until none is left.  Any number of threads may run it on
 * the same shares at once, each with its own `self` (< n); every index is claimed by
 * exactly one of them. */
void cf_shares_run(cf_share *shares, size_t n, size_t self, convfind_task_fn fn, void *arg);

#endif /* CONVFIND_SHARES_H */
