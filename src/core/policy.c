/*
 * policy.c - cache lookup, the find policies, and publication (see policy.h).
 */
#include "core/policy.h"

#include "db/db.h"
#include "core/deferred.h"

/* How long a plan creation waits for another process that is measuring the same key
 * (the database lease) before it takes the heuristic choice: two Find budgets and a
 * second, so a waiter gives up only on a holder that is stuck or far slower than us. */
static int lease_wait_ms(const convfind_context *ctx)
{
    return (int)(2000.0 * ctx->options.find_time_budget_s) + 1000;
}

/* Find, then the database: the result is stored (which releases this process's lease on
 * the key) or, when Find fails, the lease is released.  `stored` is a decision from
 * another environment whose top candidates are re-timed instead of all (RETUNE). */
static convfind_status measure_and_store(convfind_context *ctx, const cf_problem *p,
                                         const cf_key *key, const cf_decision *stored,
                                         cf_decision *out, cf_source *source)
{
    cf_find_config cfg;
    cf_context_find_config(ctx, stored ? stored->algo : NULL, NULL, &cfg);
    cfg.retune = stored;
    *source = CF_SOURCE_MEASURED;
    convfind_status st = cf_context_measure(ctx, p, &cfg, out);
    cf_db_finish(ctx->db, key->text, st == CONVFIND_OK ? out : NULL);
    return st;
}

convfind_status cf_decision_obtain(convfind_context *ctx, const cf_problem *p, const cf_key *key,
                                   convfind_find_policy policy, cf_decision *out,
                                   cf_source *source, bool *provisional)
{
    *provisional = false;
    cf_decision stored;
    cf_db_found found = CF_DB_MISS;
    switch (policy) {
    case CONVFIND_FIND_EXHAUSTIVE:
        return measure_and_store(ctx, p, key, NULL, out, source);
    case CONVFIND_FIND_HYBRID: {
        convfind_status st = CONVFIND_OK;
        switch (cf_db_begin(ctx->db, key->text, lease_wait_ms(ctx), &stored)) {
        case CF_DB_ACTION_USE:
            *out = stored;
            *source = CF_SOURCE_STORED;
            return CONVFIND_OK;
        case CF_DB_ACTION_RETUNE:
            st = measure_and_store(ctx, p, key, &stored, out, source);
            cf_decision_clear(&stored);
            return st;
        case CF_DB_ACTION_BENCHMARK:
            return measure_and_store(ctx, p, key, NULL, out, source);
        case CF_DB_ACTION_HEURISTIC:
            break; /* another process is still measuring it */
        }
        break;
    }
    case CONVFIND_FIND_REPLAY:
    case CONVFIND_FIND_DEFERRED:
        /* A foreign record is not used here: neither policy re-times in the foreground. */
        cf_db_lookup(ctx->db, key->text, &stored, &found);
        if (found == CF_DB_HIT) {
            *out = stored;
            *source = CF_SOURCE_STORED;
            return CONVFIND_OK;
        }
        cf_decision_clear(&stored);
        *provisional = policy == CONVFIND_FIND_DEFERRED && ctx->deferred != NULL;
        break;
    case CONVFIND_FIND_HEURISTIC:
    default:
        break;
    }
    *source = CF_SOURCE_HEURISTIC;
    return cf_context_heuristic(ctx, p, out);
}

convfind_status cf_decision_get(convfind_context *ctx, const cf_problem *p, const cf_key *key,
                                convfind_find_policy policy, cf_cache_entry **out)
{
    bool owner;
    convfind_status st = cf_cache_acquire(ctx->cache, key, out, &owner);
    if (st != CONVFIND_OK || !owner)
        return st;
    cf_decision d;
    cf_source source;
    bool provisional;
    st = cf_decision_obtain(ctx, p, key, policy, &d, &source, &provisional);
    if (st != CONVFIND_OK) {
        cf_cache_abandon(ctx->cache, *out);
        *out = NULL;
        return st;
    }
    cf_cache_publish(ctx->cache, *out, &d, source, provisional);
    if (provisional)
        cf_deferred_submit(ctx->deferred, *out, p);
    return CONVFIND_OK;
}
