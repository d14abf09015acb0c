/*
 * context.h - the internals of convfind_context and convfind_plan.
 *
 * A context holds what every call on it shares: options, the environment it was created
 * in, its log, its backend and that backend's state, the thread pool (its own or the
 * caller's), the decision cache, the find database, the statistics and (DEFERRED
 * policy) the background tuner.
 *
 * A plan is a private copy of the problem, its key, its constant weights if it has them
 * (in the backend's memory), and a pointer to its prepared state: the decision's cache
 * entry (portable, shared) bound to the algorithm's prepare() output and the weights
 * packed for that algorithm (private to this plan).  Executions only read the prepared
 * state, so any
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
#include "core/db_api.h"
#include "core/env.h"
#include "db/db.h"
#include "find/find.h"
#include "problem/key.h"
#include "problem/problem.h"
#include "util/log.h"
#include "util/threadpool.h"

typedef struct cf_deferred cf_deferred;

struct convfind_context {
    /* The caller's options with every default resolved; options.db_path points at
     * db_path below, options.system_db_path is NULL (the database keeps its copy). */
    convfind_context_options options;
    char *db_path;
    cf_env env;                       /* the environment read at creation (env.h) */
    cf_log log;                       /* where its messages go (util/log.h) */
    convfind_find_policy find_policy; /* options, else the environment, else HYBRID */
    int num_threads;
    cf_threadpool *pool;
    cf_cache *cache;
    cf_db *db;                        /* the find database (src/db/); never NULL once created */
    convfind_db db_handle;            /* its public face (convfind_context_db) */
    cf_deferred *deferred;            /* DEFERRED policy only */
    size_t find_workspace_limit;      /* the workspace class's bound (key.h) */
    const cf_backend *backend;        /* where its executions run (algo/backend.h) */
    cf_backend_state *device;         /* backend->open() output */
    atomic_uint_fast64_t finds, find_ns, fallbacks, deferred_updates;
    /* Finds that re-timed only the top candidates of a record measured elsewhere (this
     * key's from another environment, or a compatible key's) instead of all. */
    atomic_uint_fast64_t seeded;
    /* Stored decisions of low confidence measured again, in the foreground or handed to
     * the DEFERRED tuner (decision/confidence.h). */
    atomic_uint_fast64_t retimed;
    /* Code compiled at run time stored in the find-db after a Find, and loaded from it
     * instead of compiling (core/compiled.h). */
    atomic_uint_fast64_t compiled_stored, compiled_loaded;
};

/* A decision bound to one plan. */
typedef struct cf_prepared {
    cf_cache_entry *entry;      /* referenced; NULL for a forced algorithm */
    const cf_cache_entry *view; /* the entry whose decision this uses (entry or a successor) */
    const cf_algo *algo;        /* first choice */
    char name[CF_ALGO_NAME_MAX]; /* its full name (a variant's parameters included) */
    void *state;                /* algo->prepare() output */
    void *packed;               /* algo->pack_weights() of the plan's constant weights */
    size_t workspace;
    convfind_decision_source source; /* when entry is NULL: HEURISTIC or FORCED */
    struct cf_prepared *retired_next;
} cf_prepared;

struct convfind_plan {
    convfind_context *context;
    cf_problem problem;
    cf_key key;
    void *weights;             /* constant weights: the plan's copy (backend->weights_copy),
                                  which fallbacks read raw; NULL: given per call */
    _Atomic(cf_prepared *) prepared;
    pthread_mutex_t retire_mu; /* guards `retired` (upgrades only, never executions) */
    cf_prepared *retired;
};

/* The key of `p` on `ctx` (its backend's fingerprint, taken now) for plans that take
 * their weights as `weights` says.  Thread-safe. */
convfind_status cf_context_key(const convfind_context *ctx, const cf_problem *p,
                               cf_weights weights, cf_key *key);

/* Find's configuration on `ctx` for the usage `weights`; `incumbent` and `cancel` may be
 * NULL. */
void cf_context_find_config(const convfind_context *ctx, cf_weights weights,
                            const char *incumbent, const atomic_bool *cancel,
                            cf_find_config *cfg);

/* The algorithm of the context's backend named `name` (a form's full name resolves to
 * its algorithm), or NULL. */
const cf_algo *cf_context_algo(const convfind_context *ctx, const char *name);

/* A candidate's statistics as the public API shows them, named `name` (a pointer the
 * result keeps).  api.c. */
void cf_result_export(const cf_candidate_stats *c, const char *name, convfind_find_result *r);

/* The heuristic decision on `ctx`'s backend (see cf_find_heuristic). */
convfind_status cf_context_heuristic(const convfind_context *ctx, const cf_problem *p,
                                     cf_decision *out);

#endif /* CONVFIND_CORE_CONTEXT_H */
