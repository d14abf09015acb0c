/*
 * confidence.c - the confidence of a measured decision and when to re-time it (see
 * confidence.h).
 */
#include "decision/confidence.h"

#include <stdio.h>
#include <string.h>

static bool runnable(const cf_candidate_stats *c)
{
    return c->status == CF_CAND_OK || c->status == CF_CAND_ABANDONED;
}

static bool timed(const cf_candidate_stats *c)
{
    return c->status == CF_CAND_OK && c->repeats > 0 && c->median_ms > 0;
}

void cf_decision_confidence(const cf_decision *d, cf_confidence *out)
{
    memset(out, 0, sizeof *out);
    const cf_candidate_stats *chosen = cf_decision_candidate(d, d->algo);
    const cf_candidate_stats *runner = NULL;
    for (int i = 0; i < d->n_candidates; i++) {
        const cf_candidate_stats *c = &d->candidates[i];
        if (runnable(c) && c->repeats == 0 && !c->not_needed)
            out->untimed++;
        if (c != chosen && timed(c) && (!runner || c->median_ms < runner->median_ms))
            runner = c;
    }
    if (chosen && timed(chosen)) {
        out->spread = chosen->spread;
        if (runner) {
            out->runner_up = true;
            out->margin = runner->median_ms / chosen->median_ms - 1.0;
            memcpy(out->runner_up_algo, runner->algo, sizeof out->runner_up_algo);
            double noise = chosen->spread > runner->spread ? chosen->spread : runner->spread;
            if (out->margin < noise)
                out->low |= CF_CONF_NOISE;
        }
        /* One sample has no spread to judge a margin by: a Find that could afford no
         * more for the choice or its rival (a look past the budget, a run longer than
         * its share) is thin evidence, whatever the margin says. */
        if (chosen->repeats == 1 || (runner && runner->repeats == 1))
            out->low |= CF_CONF_ONCE;
    } else if (!chosen || !runnable(chosen) || chosen->repeats > 0) {
        out->untimed++; /* the choice has no timing to trust and was not counted above */
    }
    if (out->untimed > 0)
        out->low |= CF_CONF_UNTIMED;
    if (!(d->budget_ms > 0))
        out->low |= CF_CONF_UNKNOWN_BUDGET;
}

/* Budgets that differ by less than this are the same budget: one given as 0.05 s and
 * stored as 50 ms must not look larger through rounding. */
static bool larger(double a, double b)
{
    return a > b * (1.0 + 1e-9);
}

double cf_retime_budget_ms(const cf_decision *d, double budget_ms, bool background)
{
    cf_confidence c;
    cf_decision_confidence(d, &c);
    if (!c.low || !(budget_ms > 0))
        return 0;
    if (larger(budget_ms, d->budget_ms))
        return budget_ms;
    const double cap = CF_RETIME_BUDGET_CAP * budget_ms;
    if (!background || !larger(cap, d->budget_ms))
        return 0;
    return 2 * d->budget_ms < cap ? 2 * d->budget_ms : cap;
}

void cf_confidence_describe(const cf_confidence *c, char *buf, size_t size)
{
    if (!c->low) {
        snprintf(buf, size, "confident");
        return;
    }
    size_t n = (size_t)snprintf(buf, size, "low:");
    const char *sep = " ";
    if ((c->low & CF_CONF_UNKNOWN_BUDGET) && n < size) {
        n += (size_t)snprintf(buf + n, size - n, "%sbudget unknown", sep);
        sep = ", ";
    }
    if ((c->low & CF_CONF_UNTIMED) && n < size) {
        n += (size_t)snprintf(buf + n, size - n, "%s%d candidate%s untimed", sep, c->untimed,
                              c->untimed == 1 ? "" : "s");
        sep = ", ";
    }
    if ((c->low & CF_CONF_NOISE) && n < size) {
        n += (size_t)snprintf(buf + n, size - n, "%srunner-up within the noise", sep);
        sep = ", ";
    }
    if ((c->low & CF_CONF_ONCE) && n < size)
        snprintf(buf + n, size - n, "%stimed once", sep);
}
