/*
 * compiled.h - code that algorithms compile at run time, kept in the find-db next to the
 * decision that chose them (cf_algo.export_compiled, docs/db.md), so that a later process
 * loads it instead of compiling it again: on the H200 a runtime-compiled cuDNN engine took
 * tens to hundreds of milliseconds to finalize per problem, which every process paid for
 * every such layer even when the decision itself came from the database.
 */
#ifndef CONVFIND_CORE_COMPILED_H
#define CONVFIND_CORE_COMPILED_H

#include <stdbool.h>

#include "algo/algo.h"
#include "core/context.h"
#include "problem/key.h"
#include "problem/problem.h"

/* After Find chose `algo_name` for `key` on the calling thread: stores what the choice
 * compiled there, if it compiled anything (counted in convfind_context_stats
 * .compiled_stored).  Never fails: this only saves later processes time. */
void cf_compiled_store(convfind_context *ctx, const cf_problem *p, const cf_key *key,
                       const char *algo_name);

/* Before a plan of `key` first runs `algo` (prepared as `state`, form `name`) on the
 * calling thread: loads the code stored for it instead of compiling it, when there is
 * some and the thread has not compiled it yet (counted in .compiled_loaded). */
void cf_compiled_load(convfind_context *ctx, const cf_problem *p, const cf_key *key,
                      const cf_algo *algo, const void *state, const char *name);

#endif /* CONVFIND_CORE_COMPILED_H */
