/*
 * fake_find.c - the shared parts of the harness tests' fake Find backend (fake_find.h).
 */
#include "fake_find.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

struct cf_find_bench {
    int unused;
};

bool ff_any(const cf_problem *p)
{
    (void)p;
    return true;
}

convfind_status ff_never_run(const cf_problem *p, const void *state, const cf_exec_args *a)
{
    (void)p, (void)state, (void)a;
    return CONVFIND_OK;
}

convfind_status ff_bench_create(const cf_backend_state *s, const cf_problem *p,
                                const cf_bench_config *config, cf_find_bench **out)
{
    (void)s, (void)p, (void)config;
    *out = calloc(1, sizeof **out);
    return *out ? CONVFIND_OK : CONVFIND_ERR_OUT_OF_MEMORY;
}

void ff_bench_destroy(cf_find_bench *b)
{
    free(b);
}

cf_candidate_status ff_prepare(cf_find_bench *b, const cf_algo *a, cf_candidate_stats *c,
                               cf_find_ready **out)
{
    (void)b, (void)c;
    *out = malloc(sizeof **out);
    if (!*out)
        return CF_CAND_ABANDONED;
    (*out)->algo = a;
    return CF_CAND_OK;
}

void ff_release(cf_find_bench *b, cf_find_ready *r)
{
    (void)b;
    free(r);
}

cf_problem ff_problem(void)
{
    return (cf_problem){.op = CONVFIND_OP_CONV, .dtype = CONVFIND_DTYPE_F32, .n = 1, .c = 1,
                        .m = 1, .group = 1, .nsp = 1};
}

const cf_candidate_stats *ff_stats_of(const cf_decision *d, const char *name)
{
    for (int i = 0; i < d->n_candidates; i++)
        if (strcmp(d->candidates[i].algo, name) == 0)
            return &d->candidates[i];
    fail_msg("no candidate %s", name);
    return NULL;
}
