/*
 * decision.h - the portable result of Find for one key: which algorithm, and why.
 *
 * A decision names algorithms by their stable names and carries every candidate's
 * timing statistics, so it can be cached in memory, stored in the database, exported
 * and re-validated elsewhere.  It never holds anything bound to a device, thread or
 * stream (that is the prepared layer's business, see DESIGN.md non-negotiable 4).
 */
#ifndef CONVFIND_DECISION_H
#define CONVFIND_DECISION_H

#include <stdbool.h>
#include <stddef.h>

#define CF_ALGO_NAME_MAX 64

typedef enum cf_candidate_status {
    CF_CAND_OK = 0,             /* timed (and validated, if asked) */
    CF_CAND_FAILED = 1,         /* ran but errored or failed validation: bad for this env */
    CF_CAND_NOT_APPLICABLE = 2, /* cannot run this problem (or exceeds the workspace budget) */
    CF_CAND_ABANDONED = 3       /* stopped early (clearly slower than the best so far) or
                                   never started (the budget, a re-time, not_needed) */
} cf_candidate_status;

typedef struct cf_candidate_stats {
    char algo[CF_ALGO_NAME_MAX];
    cf_candidate_status status;
    double median_ms, min_ms, spread; /* spread: (p90 - p10) / median, or 0 */
    int repeats;
    size_t workspace_bytes;
    bool validated;                   /* output matched the reference within bound */
    bool not_needed;                  /* ABANDONED unstarted because it cannot win: the
                                         backend's reference once another candidate
                                         measured OK (find.h, step 2); never "untimed" */
} cf_candidate_stats;

typedef struct cf_decision {
    char algo[CF_ALGO_NAME_MAX];      /* the chosen algorithm */
    int n_candidates;                 /* ranked: best first, then the rest */
    cf_candidate_stats *candidates;   /* owned by the decision */
    /* The Find budget it was measured with, in milliseconds; 0: unknown (a heuristic
     * choice, or a record stored before find-db schema 2).  With the candidates'
     * statistics it says how far the decision can be trusted (confidence.h). */
    double budget_ms;
} cf_decision;

/* Frees the candidates of `d` and empties it; NULL allowed (decision.c). */
void cf_decision_clear(cf_decision *d);

/* The candidate named `algo`, or NULL. */
const cf_candidate_stats *cf_decision_candidate(const cf_decision *d, const char *algo);

#endif /* CONVFIND_DECISION_H */
