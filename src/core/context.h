/*
 * context.h - the internals of convfind_context, convfind_plan and packed weights.
 *
 * A context holds what every call on it shares: options, its backend and that backend's
 * state, the thread pool, the decision cache, the find database, the statistics and
 * (DEFERRED policy) the background tuner.
 *
 * A plan is a private copy of the problem, its key, and a pointer to its prepared state:
 * the decision's cache entry (portable, shared) bound to the algorithm's prepare()
 * output (private to this plan).  Executions only read the prepared state, so any
 * number of threads may execute one plan at once.  The pointer changes at most once
 * per background decision (DEFERRED): the replaced state is retired, not freed, until
 * the plan is destroyed, so a concurrent execution never sees it vanish.
 */
#ifndef CONVFIND_CORE_CONTEXT_H
#define CONVFIND_CORE_CONTEXT_H

#include <pthread.h>
#include <stdatomic.h>

#include "algo/backend.h"
#include "cache/cache.h"
#include "convfind.h"
#include "db/db.h"
#include "find/find.h"
#include "problem/key.h"
#include "problem/problem.h"
#include "util/threadpool.h"

typedef struct cf_deferred cf_deferred;

struct convfind_context {
    convfind_context_options options; /* options.db_path points at db_path below */
    char *db_path;
    int num_threads;
    cf_threadpool *pool;
    cf_cache *cache;
    cf_db *db;                        /* the find database (src/db/); never NULL once created */
    cf_deferred *deferred;            /* DEFERRED policy only */
    size_t find_workspace_limit;      /* the workspace class's bound (key.h) */
    const cf_backend *backend;        /* where its executions run (algo/backend.h) */
    cf_backend_state *device;         /* backend->open() output */
    atomic_uint_fast64_t finds, find_ns, fallbacks, deferred_updates;
};

/* A decision bound to one plan. */
typedef struct cf_prepared {
    cf_cache_entry *entry;      /* referenced; NULL for a forced algorithm */
    const cf_cache_entry *view; /* the entry whose decision this uses (entry or a successor) */
    const cf_algo *algo;        /* first choice */
    char name[CF_ALGO_NAME_MAX]; /* its full name (a variant's parameters included) */
    void *state;                /* algo->prepare() output */
    size_t workspace;
    convfind_decision_source source; /* when entry is NULL: HEURISTIC or FORCED */
    struct cf_prepared *retired_next;
} cf_prepared;

struct convfind_plan {
    convfind_context *context;
    cf_problem problem;
    cf_key key;
    _Atomic(cf_prepared *) prepared;
    pthread_mutex_t retire_mu; /* guards `retired` (upgrades only, never executions) */
    cf_prepared *retired;
};

struct convfind_packed_weights {
    const cf_algo *algo; /* the algorithm whose layout `data` is in */
    cf_problem problem;
    void *data;          /* algo->pack_weights() output */
};

/* The key of `p` on `ctx` (its backend's fingerprint, taken now).  Thread-safe. */
convfind_status cf_context_key(const convfind_context *ctx, const cf_problem *p, cf_key *key);

/* Find's configuration on `ctx`; `incumbent` and `cancel` may be NULL. */
void cf_context_find_config(const convfind_context *ctx, const char *incumbent,
                            const atomic_bool *cancel, cf_find_config *cfg);

/* The algorithm of the context's backend named `name` (a form's full name resolves to
 * its algorithm), or NULL. */
const cf_algo *cf_context_algo(const convfind_context *ctx, const char *name);

/* The heuristic decision on `ctx`'s backend (see cf_find_heuristic). */
convfind_status cf_context_heuristic(const convfind_context *ctx, const cf_problem *p,
                                     cf_decision *out);

#endif /* CONVFIND_CORE_CONTEXT_H */
