/*
 * policy.h - how a context gets the decision for a key: cache, then its find policy.
 *
 * This is the one place where the find database joins the flow (DESIGN.md data flow:
 * problem -> key -> decision cache -> (miss: db -> find -> db) -> decision).  In
 * cf_decision_obtain, per policy:
 *
 *   HEURISTIC   the heuristic choice.
 *   REPLAY      a stored decision, else the heuristic choice; never measures.
 *   HYBRID      a stored decision; else this key's record from another environment or
 *               a compatible key's record (another CPU model or thread count) seeds a
 *               re-time of its top candidates; else Find.  Then stores it.
 *   EXHAUSTIVE  a stored decision; else a full Find (a record from elsewhere is only the
 *               incumbent).  Then stores it.
 *   DEFERRED    a stored decision, else the heuristic choice marked provisional; the
 *               background tuner measures (deferred.h).
 *
 * "Stored" is the find database (src/db/, docs/db.md) and means a decision of this
 * environment that is good enough: one of low confidence (decision/confidence.h)
 * measured with a smaller Find budget than the context's is measured again by HYBRID
 * and EXHAUSTIVE, and DEFERRED hands a low-confidence one to its tuner.  HYBRID and
 * EXHAUSTIVE take the key's lease before measuring, so concurrent processes, and
 * concurrent contexts of one process, measure a key once.
 *
 * A retune (cf_decision_get's `retune`, convfind_plan_options.retune) measures now
 * whatever is cached or stored, with the current decision as the incumbent, and replaces
 * it in the cache and the database.
 *
 * Every Find of a context, in the foreground, in the background tuner (deferred.h), for
 * a retune or for convfind_find, runs through cf_decision_measure, the one place that
 * writes decisions to the database.  Every decision published in the context's cache is
 * logged at INFO.
 *
 * What a Find times follows from the key: its usage (cf_key.weights) says whether the
 * candidates run with weights packed once or packed by every run.
 */
#ifndef CONVFIND_CORE_POLICY_H
#define CONVFIND_CORE_POLICY_H

#include "core/context.h"

/* Runs Find on the context's backend for `p` (key `key`) under `cfg`, accounts for it
 * in the context's statistics, records the budget in the decision and stores it in the
 * find database.  `leased`: this handle holds the key's lease (cf_db_begin), released
 * also when Find fails.  Thread-safe. */
convfind_status cf_decision_measure(convfind_context *ctx, const cf_problem *p, const cf_key *key,
                                    const cf_find_config *cfg, bool leased, cf_decision *out);

/* Obtains a decision for `p` (key `key`) under `policy`; sets its source and whether it
 * is provisional.  On success `out` owns its candidates.  Thread-safe; runs no lock. */
convfind_status cf_decision_obtain(convfind_context *ctx, const cf_problem *p, const cf_key *key,
                                   convfind_find_policy policy, cf_decision *out,
                                   cf_source *source, bool *provisional);

/* The cache entry holding the decision for `p`: a hit, the result of a concurrent
 * caller's Find, or obtained now under `policy` and published.  With `retune` the key
 * is measured now even on a hit or a stored decision (under its lease when another
 * handle is not measuring it past the wait), and the result replaces the cached and
 * the stored decision; a retune whose Find fails on a hit leaves the decision as it
 * was.  Follow cf_cache_latest() of the entry for the newest decision.  Returns a
 * reference (cf_cache_release it).  Thread-safe. */
convfind_status cf_decision_get(convfind_context *ctx, const cf_problem *p, const cf_key *key,
                                convfind_find_policy policy, bool retune, cf_cache_entry **out);

/* Measures the key of entry `e` for `p` now, whatever its decision is, with that
 * decision's algorithm as the incumbent and a Find budget of `budget_ms` (0: the
 * context's), and publishes the result as the entry's successor (and in the database).
 * Takes no lease: for the background tuner and convfind_find.  `cancel` may be NULL.
 * Thread-safe. */
convfind_status cf_decision_remeasure(convfind_context *ctx, const cf_problem *p,
                                      cf_cache_entry *e, double budget_ms,
                                      const atomic_bool *cancel);

#endif /* CONVFIND_CORE_POLICY_H */
