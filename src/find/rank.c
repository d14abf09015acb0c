/*
 * rank.c - statistics, abandon, retune, choice and ranking rules of Find (see rank.h).
 */
#include "find/rank.h"

#include <stdlib.h>
#include <string.h>

#include "find/find.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void cf_find_summarize(cf_candidate_stats *c, double *t_ms, int n)
{
    c->repeats = n;
    if (n == 0)
        return;
    qsort(t_ms, (size_t)n, sizeof *t_ms, cmp_double);
    c->min_ms = t_ms[0];
    c->median_ms = n % 2 ? t_ms[n / 2] : 0.5 * (t_ms[n / 2 - 1] + t_ms[n / 2]);
    double p10 = t_ms[(n - 1) / 10], p90 = t_ms[(n - 1) - (n - 1) / 10];
    c->spread = c->median_ms > 0 ? (p90 - p10) / c->median_ms : 0;
}

bool cf_find_abandon(const double *t_ms, int n, double best_ms)
{
    if (n < CF_FIND_ABANDON_AFTER || best_ms <= 0)
        return false;
    double fastest = t_ms[0];
    for (int i = 1; i < n; i++)
        fastest = t_ms[i] < fastest ? t_ms[i] : fastest;
    return fastest > CF_FIND_ABANDON_RATIO * best_ms;
}

bool cf_find_retuned(const cf_decision *stored, const char *name)
{
    for (int i = 0, ok = 0; i < stored->n_candidates && ok < CF_FIND_RETUNE_TOP; i++) {
        if (stored->candidates[i].status != CF_CAND_OK)
            continue;
        if (strcmp(stored->candidates[i].algo, name) == 0)
            return true;
        ok++;
    }
    return false;
}

int cf_find_choose(const cf_candidate_stats *c, int n, int incumbent, const char *preferred)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (c[i].status == CF_CAND_OK && (best < 0 || c[i].median_ms < c[best].median_ms))
            best = i;
    if (best < 0) { /* nothing timed to the end: an ABANDONED one still ran correctly */
        int first = -1;
        for (int i = 0; i < n; i++) {
            if (c[i].status != CF_CAND_ABANDONED)
                continue;
            if (preferred && strcmp(c[i].algo, preferred) == 0)
                return i;
            first = first < 0 ? i : first;
        }
        return first;
    }
    if (incumbent >= 0 && c[incumbent].status == CF_CAND_OK &&
        !(c[best].median_ms < c[incumbent].median_ms * (1.0 - CF_FIND_MARGIN)))
        return incumbent;
    int pick = best;
    for (int i = 0; i < n; i++) {
        if (c[i].status != CF_CAND_OK ||
            c[i].median_ms > c[best].median_ms * (1.0 + CF_FIND_MARGIN))
            continue;
        /* i > pick cannot win a workspace tie: the earlier in list order stays */
        if (c[i].workspace_bytes < c[pick].workspace_bytes ||
            (c[i].workspace_bytes == c[pick].workspace_bytes && i < pick))
            pick = i;
    }
    return pick;
}

static const int status_class[] = {
    [CF_CAND_OK] = 0, [CF_CAND_ABANDONED] = 1, [CF_CAND_FAILED] = 2, [CF_CAND_NOT_APPLICABLE] = 3,
};

static bool ranks_before(const cf_candidate_stats *a, const cf_candidate_stats *b)
{
    int ca = status_class[a->status], cb = status_class[b->status];
    if (ca != cb)
        return ca < cb;
    if (a->median_ms != b->median_ms)
        return a->median_ms < b->median_ms;
    return a->workspace_bytes < b->workspace_bytes;
}

void cf_find_rank(cf_candidate_stats *c, int n, int pick)
{
    if (n < 1 || pick < 0 || pick >= n)
        return;
    cf_candidate_stats v = c[pick];
    memmove(c + 1, c, (size_t)pick * sizeof *c);
    c[0] = v;
    /* Insertion sort of the rest: stable, so equal keys keep list order (the last
     * tie-break); the lists are at most a few hundred candidates. */
    for (int i = 2; i < n; i++) {
        v = c[i];
        int j = i;
        for (; j > 1 && ranks_before(&v, &c[j - 1]); j--)
            c[j] = c[j - 1];
        c[j] = v;
    }
}
