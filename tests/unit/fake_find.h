/*
 * fake_find.h - the parts of a fake Find backend that the harness tests share
 * (test_find_budget.c, test_find_check_abandon.c): algorithms that apply to anything and
 * never run, and the bench and preparation hooks, which allocate nothing but the
 * candidate's handle.  Each test adds its own check() and sample(), which report times
 * without running, so that the harness's protocol is deterministic.
 */
#ifndef CONVFIND_TEST_FAKE_FIND_H
#define CONVFIND_TEST_FAKE_FIND_H

#include "algo/backend.h"
#include "decision/decision.h"
#include "problem/problem.h"

/* A prepared candidate: the algorithm it was prepared for. */
struct cf_find_ready {
    const cf_algo *algo;
};

bool ff_any(const cf_problem *p);
convfind_status ff_never_run(const cf_problem *p, const void *state, const cf_exec_args *a);

/* A fake algorithm named name_ (a cf_algo initializer). */
#define FF_ALGO(name_)                                                                      \
    {.name = name_, .family = "test", .applicable = ff_any, .execute = ff_never_run}

convfind_status ff_bench_create(const cf_backend_state *s, const cf_problem *p,
                                const cf_bench_config *config, cf_find_bench **out);
void ff_bench_destroy(cf_find_bench *b);
cf_candidate_status ff_prepare(cf_find_bench *b, const cf_algo *a, cf_candidate_stats *c,
                               cf_find_ready **out);
void ff_release(cf_find_bench *b, cf_find_ready *r);

/* A fake algorithm whose every run costs run_ms (what the tests' check() and sample()
 * report); cf_algo first, so a prepared candidate's algo is its ff_timed. */
typedef struct ff_timed {
    cf_algo algo;
    double run_ms;
} ff_timed;

#define FF_TIMED(name_, ms_) {.algo = FF_ALGO(name_), .run_ms = ms_}

/* The ff_timed a candidate was prepared for. */
static inline const ff_timed *ff_timed_of(const cf_find_ready *r)
{
    return (const ff_timed *)r->algo;
}

/* The cf_find_hooks fields above. */
#define FF_HOOKS                                                                            \
    .bench_create = ff_bench_create, .bench_destroy = ff_bench_destroy,                     \
    .prepare = ff_prepare, .release = ff_release

/* The problem the tests find for: the smallest convolution (nothing runs it). */
cf_problem ff_problem(void);

/* Decision d's statistics of the candidate named name (fails the test when it has none). */
const cf_candidate_stats *ff_stats_of(const cf_decision *d, const char *name);

#endif /* CONVFIND_TEST_FAKE_FIND_H */
