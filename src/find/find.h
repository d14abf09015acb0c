/*
 * find.h - Find: measure the candidates of one problem and rank them (DESIGN.md "Find:
 * how to time"), and the heuristic choice that needs no measurement.
 *
 * Protocol of cf_find_measure, in order:
 *   1. Inputs X, W, B, Z filled with deterministic values in [-1, 1] (never all zeros);
 *      when validating, the reference computes the expected Y once.
 *   2. The heuristic choice (first usable candidate in list order) is measured first,
 *      whatever the budget; then every other usable candidate in list order.
 *   3. Per candidate: prepare, workspace and packed weights (pack_weights, made once as
 *      convfind_packed_weights_create does; a failed allocation of either abandons the
 *      candidate without a verdict), one run into a NaN-filled Y that is validated
 *      against the reference within the family's bound, and for a packing algorithm one
 *      more with the packed weights, validated too (a wrong or erroring candidate is
 *      FAILED, never chosen); warm-up runs up to CF_FIND_WARMUPS in all, then timed runs
 *      with the packed weights: at least CF_FIND_MIN_REPEATS, then until
 *      CF_FIND_MAX_REPEATS or the candidate's share of the budget is spent.
 *      Once CF_FIND_ABANDON_AFTER runs are in, a candidate whose fastest run is slower
 *      than CF_FIND_ABANDON_RATIO x the best median so far is ABANDONED.
 *   4. Final round: the OK candidates within CF_FIND_FINAL_WINDOW of the fastest
 *      median (at most CF_FIND_FINALISTS, the fastest) are timed again in turns, one run
 *      each per round after an untimed warm-up run, the order rotating, for CF_FIND_MIN_REPEATS to
 *      CF_FIND_MAX_REPEATS rounds within CF_FIND_FINAL_SHARE of the budget; their
 *      statistics are replaced by this round's, so close candidates are compared under
 *      the same machine conditions.  (Not under RETUNE, which re-times few.)
 *   5. Choice: the incumbent (given, else the heuristic choice) stays unless the fastest
 *      median beats it by more than CF_FIND_MARGIN; otherwise, among the candidates
 *      within CF_FIND_MARGIN of the fastest, the smallest workspace, then the earliest in
 *      list order, wins.  Ranked list: choice, other OK by median, ABANDONED, FAILED,
 *      NOT_APPLICABLE.
 */
#ifndef CONVFIND_FIND_H
#define CONVFIND_FIND_H

#include <stdatomic.h>
#include <stdbool.h>

#include "algo/algo.h"
#include "decision/decision.h"

#define CF_FIND_MIN_REPEATS 5
#define CF_FIND_MAX_REPEATS 50
#define CF_FIND_WARMUPS 2
#define CF_FIND_ABANDON_AFTER 3
#define CF_FIND_ABANDON_RATIO 1.5
#define CF_FIND_MARGIN 0.03
#define CF_FIND_RETUNE_TOP 3
#define CF_FIND_FINAL_WINDOW 0.15
#define CF_FIND_FINALISTS 4
#define CF_FIND_FINAL_SHARE 0.25

typedef struct cf_find_config {
    size_t workspace_limit;     /* largest admissible workspace; 0: unlimited */
    double budget_s;            /* total time for one problem (the heuristic is always timed) */
    bool validate;              /* compare every candidate with the reference */
    const char *incumbent;      /* name of the current decision, or NULL */
    cf_threadpool *pool;        /* how executions will run */
    const atomic_bool *cancel;  /* may be NULL; when it becomes true Find stops */
    /* NULL, or a stored decision from another environment (docs/db.md, RETUNE): only its
     * first CF_FIND_RETUNE_TOP OK candidates (and the incumbent) are timed, the others
     * are left ABANDONED without running. */
    const cf_decision *retune;
} cf_find_config;

/* The decision that needs no measurement: usable candidates in list order (all status
 * OK, no timings), then the rest as NOT_APPLICABLE.  CONVFIND_ERR_UNSUPPORTED when no
 * candidate can run `p` within `workspace_limit`.  Thread-safe. */
convfind_status cf_find_heuristic(const cf_problem *p, size_t workspace_limit, cf_decision *out);

/* Measures and ranks every candidate as described above.  On success `out` owns a
 * ranked candidate array.  CONVFIND_ERR_UNSUPPORTED when nothing can run `p`,
 * CONVFIND_ERR_OUT_OF_MEMORY when the test tensors cannot be allocated,
 * CONVFIND_ERR_BACKEND when cancelled.  Thread-safe (uses its own buffers). */
convfind_status cf_find_measure(const cf_problem *p, const cf_find_config *cfg, cf_decision *out);

/* The validation bound's factor for an algorithm family: a candidate passes when
 * max|y - ref| <= factor * FLT_EPSILON * (reduction length + 1) * (1 + max|ref|). */
double cf_find_error_factor(const char *family);

#endif /* CONVFIND_FIND_H */
