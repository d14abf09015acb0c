/*
 * deferred.h - the background tuner of the DEFERRED ("heuristic now, tune later")
 * policy.
 *
 * A plan creation that misses publishes the heuristic decision at once (marked
 * provisional), or a stored decision of low confidence (decision/confidence.h), and
 * submits the key here with the budget to measure it with.  One worker thread owned by
 * the context runs Find for each submitted key, the current decision first, and
 * publishes the result as the entry's successor (cf_cache_replace); plans pick it up at
 * their next execution, new plans at creation.  No call ever waits for the worker.
 * Destroying stops a Find in progress at its next run and joins the thread.
 */
#ifndef CONVFIND_CORE_DEFERRED_H
#define CONVFIND_CORE_DEFERRED_H

#include "core/context.h"

/* Keys queued beyond this are left with their heuristic decision (bounded memory). */
#define CF_DEFERRED_QUEUE_MAX 4096

/* Starts the worker for `ctx`.  *out is NULL on failure. */
convfind_status cf_deferred_create(convfind_context *ctx, cf_deferred **out);

/* Queues `e` (which takes a reference of its own) for tuning `p` with a Find budget of
 * `budget_ms`.  Never blocks on a Find.  Thread-safe. */
void cf_deferred_submit(cf_deferred *d, cf_cache_entry *e, const cf_problem *p, double budget_ms);

/* Stops and joins the worker and drops the queue.  NULL allowed. */
void cf_deferred_destroy(cf_deferred *d);

#endif /* CONVFIND_CORE_DEFERRED_H */
