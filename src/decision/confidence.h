/*
 * confidence.h - how far a measured decision can be trusted, and when it is worth
 * measuring again (docs/find.md, "Confidence").
 *
 * A decision remembers how it was measured: its Find budget (cf_decision.budget_ms)
 * and every candidate's statistics, from which the choice's spread and its margin to
 * the runner-up follow.  It is low-confidence when what it rests on is thin:
 *
 *   UNKNOWN_BUDGET  its budget is not known (a record stored before find-db schema 2);
 *   UNTIMED         a candidate that could run was never timed: the budget ran out
 *                   before it, or a re-time of a few top candidates left it out;
 *   NOISE           the runner-up is within the noise of the choice: their margin is
 *                   below the larger of their two spreads;
 *   ONCE            the choice or the runner-up rests on a single sample (a look past
 *                   the budget, or a run longer than its share), which has no spread.
 *
 * A low-confidence decision is measured again when time allows instead of being kept
 * forever (cf_retime_budget_ms): in the foreground only by a Find with a larger budget
 * than it had (a short budget was the problem; the same budget would likely give the
 * same answer), in the background (the DEFERRED tuner) also at twice its budget, up to
 * CF_RETIME_BUDGET_CAP times the context's, so that a true tie is measured a few times,
 * not on every start.  Everything here is pure and thread-safe.
 */
#ifndef CONVFIND_DECISION_CONFIDENCE_H
#define CONVFIND_DECISION_CONFIDENCE_H

#include <stdbool.h>
#include <stddef.h>

#include "decision/decision.h"

/* The background tuner re-times a tie with growing budgets up to this multiple of the
 * context's Find budget, then keeps it. */
#define CF_RETIME_BUDGET_CAP 4.0

typedef enum cf_confidence_flag {
    CF_CONF_UNKNOWN_BUDGET = 1,
    CF_CONF_UNTIMED = 2,
    CF_CONF_NOISE = 4,
    CF_CONF_ONCE = 8
} cf_confidence_flag;

typedef struct cf_confidence {
    double spread;  /* the choice's spread, (p90 - p10) / median; 0 when untimed */
    bool runner_up; /* another candidate was timed to the end */
    double margin;  /* runner-up median / choice median - 1 (only when runner_up); negative
                       when a faster candidate lost to the incumbent within the tie band */
    char runner_up_algo[CF_ALGO_NAME_MAX];
    int untimed;    /* candidates that could run and have no timed run (OK or ABANDONED,
                       repeats 0); the choice included */
    unsigned low;   /* cf_confidence_flag bits; 0: confident */
} cf_confidence;

/* What `d` rests on.  A decision without candidates is UNTIMED. */
void cf_decision_confidence(const cf_decision *d, cf_confidence *out);

/* The budget in milliseconds to measure `d` again with, where a Find of `budget_ms`
 * could run now; 0: keep `d`.  `background`: the DEFERRED tuner asks (see above). */
double cf_retime_budget_ms(const cf_decision *d, double budget_ms, bool background);

/* "confident", or the reasons, e.g. "low: 3 candidates untimed, runner-up within the
 * noise, timed once", for messages and `convfind db show`. */
void cf_confidence_describe(const cf_confidence *c, char *buf, size_t size);

#endif /* CONVFIND_DECISION_CONFIDENCE_H */
