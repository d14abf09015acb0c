/*
 * algo.c - name matching, preparation and workspace of one algorithm (see algo.h).
 */
#include "algo/algo.h"

#include <string.h>

bool cf_algo_matches(const cf_algo *algo, const char *name)
{
    size_t len = strlen(algo->name);
    return strncmp(algo->name, name, len) == 0 &&
           (name[len] == '\0' || (name[len] == ':' && algo->prepare_named));
}

convfind_status cf_algo_prepare(const cf_algo *algo, const cf_problem *p, const char *name,
                                void **state)
{
    *state = NULL;
    if (algo->prepare_named)
        return algo->prepare_named(p, name, state);
    return algo->prepare ? algo->prepare(p, state) : CONVFIND_OK;
}

convfind_status cf_algo_workspace(const cf_algo *algo, const cf_problem *p, size_t *bytes)
{
    *bytes = 0;
    return algo->workspace ? algo->workspace(p, bytes) : CONVFIND_OK;
}

bool cf_algo_usable(const cf_algo *algo, const cf_problem *p, size_t limit, size_t *workspace)
{
    *workspace = 0;
    if (!algo->applicable(p) || cf_algo_workspace(algo, p, workspace) != CONVFIND_OK)
        return false;
    return limit == 0 || *workspace <= limit;
}
