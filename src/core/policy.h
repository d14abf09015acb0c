/*
 * policy.h - how a context gets the decision for a key: cache, then its find policy.
 *
 * This is the one place where the find database joins the flow (DESIGN.md data flow:
 * problem -> key -> decision cache -> (miss: find -> db) -> decision).  In
 * cf_decision_obtain, per policy:
 *
 *   HEURISTIC   the heuristic choice.
 *   REPLAY      a stored decision, else the heuristic choice; never measures.
 *   HYBRID      a stored decision, else Find (then store it).
 *   EXHAUSTIVE  Find (then store it).
 *   DEFERRED    the heuristic choice, marked provisional; the background tuner measures.
 *
 * "Stored" is the find database (src/db/, docs/db.md): HYBRID takes the key's lease
 * before measuring, so concurrent processes measure a key once, and re-times only the
 * top candidates of a record from another environment (db_env_policy RETUNE).  Every
 * Find of a context, in the foreground, in the background tuner (deferred.h), for a
 * plan's retune or for convfind_find, runs through cf_decision_measure, the one place
 * that writes decisions to the database.  Every decision published in the context's
 * cache is logged at INFO.
 *
 * What a Find times follows from the key: its usage (cf_key.weights) says whether the
 * candidates run with weights packed once or packed by every run.
 */
#ifndef CONVFIND_CORE_POLICY_H
#define CONVFIND_CORE_POLICY_H

#include "core/context.h"

/* Runs Find on the context's backend for `p` (key `key`) under `cfg`, accounts for it
 * in the context's statistics and stores a result in the find database.  `leased`:
 * this process holds the key's lease (cf_db_begin), released also when Find fails.
 * Thread-safe. */
convfind_status cf_decision_measure(convfind_context *ctx, const cf_problem *p, const cf_key *key,
                                    const cf_find_config *cfg, bool leased, cf_decision *out);

/* Obtains a decision for `p` (key `key`) under `policy`; sets its source and whether it
 * is provisional.  On success `out` owns its candidates.  Thread-safe; runs no lock. */
convfind_status cf_decision_obtain(convfind_context *ctx, const cf_problem *p, const cf_key *key,
                                   convfind_find_policy policy, cf_decision *out,
                                   cf_source *source, bool *provisional);

/* The cache entry holding the decision for `p`: a hit, the result of a concurrent
 * caller's Find, or obtained now under `policy` and published (*obtained: true).
 * Returns a reference (cf_cache_release it).  Thread-safe. */
convfind_status cf_decision_get(convfind_context *ctx, const cf_problem *p, const cf_key *key,
                                convfind_find_policy policy, cf_cache_entry **out,
                                bool *obtained);

/* Measures the key of entry `e` for `p` now, whatever its decision is, with that
 * decision's algorithm as the incumbent, and publishes the result as the entry's
 * successor (and in the database).  `cancel` may be NULL.  Thread-safe. */
convfind_status cf_decision_remeasure(convfind_context *ctx, const cf_problem *p,
                                      cf_cache_entry *e, const atomic_bool *cancel);

#endif /* CONVFIND_CORE_POLICY_H */
