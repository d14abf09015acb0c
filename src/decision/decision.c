/*
 * decision.c - helpers on the plain-data decision of decision.h.
 */
#include "decision/decision.h"

#include <stdlib.h>
#include <string.h>

void cf_decision_clear(cf_decision *d)
{
    if (!d)
        return;
    free(d->candidates);
    memset(d, 0, sizeof *d);
}

const cf_candidate_stats *cf_decision_candidate(const cf_decision *d, const char *algo)
{
    for (int i = 0; i < d->n_candidates; i++)
        if (strcmp(d->candidates[i].algo, algo) == 0)
            return &d->candidates[i];
    return NULL;
}
