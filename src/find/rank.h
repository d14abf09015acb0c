/*
 * rank.h - the rules of Find that do not depend on where candidates run: timing
 * statistics, early abandon, which candidates RETUNE re-times, the choice (margin and
 * tie-breaks) and the ranked list.  Kept apart from the harness (find.c) so that tests
 * can check each rule on its own.
 *
 * Every function is pure (no global state) and thread-safe.  Candidate arrays are in
 * list order (registry order on the CPU, configuration order on CUDA): a candidate's
 * position is its final tie-break.
 */
#ifndef CONVFIND_FIND_RANK_H
#define CONVFIND_FIND_RANK_H

#include <stdbool.h>

#include "decision/decision.h"

/* Sets c->repeats, min_ms, median_ms and spread = (p90 - p10) / median from `n` run times
 * `t_ms` (milliseconds; sorted in place).  n == 0 sets only repeats. */
void cf_find_summarize(cf_candidate_stats *c, double *t_ms, int n);

/* Whether a candidate with `n` run times `t_ms` so far is to be ABANDONED: at least
 * CF_FIND_ABANDON_AFTER runs and its fastest run slower than CF_FIND_ABANDON_RATIO x
 * `best_ms`, the best median so far (0: none yet, never abandons). */
bool cf_find_abandon(const double *t_ms, int n, double best_ms);

/* Whether RETUNE re-times `name`: one of the first CF_FIND_RETUNE_TOP OK candidates of
 * the ranked decision `stored`. */
bool cf_find_retuned(const cf_decision *stored, const char *name);

/* The index of the choice among the `n` candidates `c` (list order):
 *   - the incumbent (index `incumbent`, or -1 for none) stays when OK and the fastest
 *     median does not beat it by more than CF_FIND_MARGIN;
 *   - otherwise, among the OK candidates within CF_FIND_MARGIN of the fastest median,
 *     the smallest workspace, then the earliest in list order;
 *   - when no candidate is OK: the ABANDONED one named `preferred` (may be NULL), else
 *     the first ABANDONED one;
 *   - -1 when every candidate FAILED or is NOT_APPLICABLE. */
int cf_find_choose(const cf_candidate_stats *c, int n, int incumbent, const char *preferred);

/* Reorders the `n` candidates `c` (list order on entry) into the ranked list: c[pick]
 * first, then by status class OK, ABANDONED, FAILED, NOT_APPLICABLE, within a class by
 * median, then workspace, then list order.  Leaves `c` unchanged unless 0 <= pick < n. */
void cf_find_rank(cf_candidate_stats *c, int n, int pick);

#endif /* CONVFIND_FIND_RANK_H */
