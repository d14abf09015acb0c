/*
 * policy.c - cache lookup, the find policies, and publication (see policy.h).
 */
#include "core/policy.h"

#include <time.h>

#include "core/deferred.h"
#include "db/db.h"

static const char *source_name(cf_source s)
{
    return s == CF_SOURCE_MEASURED ? "measured" : s == CF_SOURCE_STORED ? "stored" : "heuristic";
}

/* The newest decision of `e`, at INFO. */
static void log_decision(const convfind_context *ctx, const cf_cache_entry *e)
{
    if (!cf_log_enabled(&ctx->log, CONVFIND_LOG_INFO))
        return;
    const cf_cache_entry *d = cf_cache_latest(e);
    cf_log_msg(&ctx->log, CONVFIND_LOG_INFO, "decision %s -> %s (%s%s, %d candidates)",
               e->key.text, d->decision.algo, source_name(d->source),
               d->provisional ? ", provisional" : "", d->decision.n_candidates);
}

/* How long a plan creation waits for another process that is measuring the same key
 * (the database lease) before it takes the heuristic choice: two Find budgets and a
 * second, so a waiter gives up only on a holder that is stuck or far slower than us. */
static int lease_wait_ms(const convfind_context *ctx)
{
    return (int)(2000.0 * ctx->options.find_time_budget_s) + 1000;
}

convfind_status cf_decision_measure(convfind_context *ctx, const cf_problem *p, const cf_key *key,
                                    const cf_find_config *cfg, bool leased, cf_decision *out)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    convfind_status st = cf_find_measure(ctx->backend, ctx->device, p, cfg, out);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int64_t ns = (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
    atomic_fetch_add_explicit(&ctx->finds, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&ctx->find_ns, (uint_fast64_t)(ns > 0 ? ns : 0),
                              memory_order_relaxed);
    if (st == CONVFIND_OK) {
        const char *text = key->text;
        /* Releases this process's lease too.  A decision the database cannot keep fails
         * no call: it is counted (convfind_context_stats.store_failures). */
        if (cf_db_store(ctx->db, &text, out, 1) != CONVFIND_OK)
            cf_clear_error();
    } else if (leased) {
        cf_db_lease_release(ctx->db, key->text);
    }
    return st;
}

/* Find for the policy, from the incumbent `stored` when there is one: a decision from
 * another environment whose top candidates are re-timed instead of all (RETUNE).
 * `leased`: under the lease cf_db_begin gave, which storing the result releases. */
static convfind_status measure(convfind_context *ctx, const cf_problem *p, const cf_key *key,
                               const cf_decision *stored, bool leased, cf_decision *out,
                               cf_source *source)
{
    cf_find_config cfg;
    cf_context_find_config(ctx, key->weights, stored ? stored->algo : NULL, NULL, &cfg);
    cfg.retune = stored;
    *source = CF_SOURCE_MEASURED;
    return cf_decision_measure(ctx, p, key, &cfg, leased, out);
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
        return measure(ctx, p, key, NULL, false, out, source);
    case CONVFIND_FIND_HYBRID: {
        convfind_status st = CONVFIND_OK;
        switch (cf_db_begin(ctx->db, key->text, lease_wait_ms(ctx), &stored)) {
        case CF_DB_ACTION_USE:
            *out = stored;
            *source = CF_SOURCE_STORED;
            return CONVFIND_OK;
        case CF_DB_ACTION_RETUNE:
            atomic_fetch_add_explicit(&ctx->seeded, 1, memory_order_relaxed);
            st = measure(ctx, p, key, &stored, true, out, source);
            cf_decision_clear(&stored);
            return st;
        case CF_DB_ACTION_BENCHMARK:
            return measure(ctx, p, key, NULL, true, out, source);
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
                                convfind_find_policy policy, cf_cache_entry **out,
                                bool *obtained)
{
    bool owner;
    *obtained = false;
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
    log_decision(ctx, *out);
    *obtained = true;
    if (provisional)
        cf_deferred_submit(ctx->deferred, *out, p);
    return CONVFIND_OK;
}

convfind_status cf_decision_remeasure(convfind_context *ctx, const cf_problem *p,
                                      cf_cache_entry *e, const atomic_bool *cancel)
{
    cf_find_config cfg;
    cf_context_find_config(ctx, e->key.weights, cf_cache_latest(e)->decision.algo, cancel, &cfg);
    cf_decision d;
    convfind_status st = cf_decision_measure(ctx, p, &e->key, &cfg, false, &d);
    if (st != CONVFIND_OK)
        return st;
    cf_cache_replace(ctx->cache, e, &d, CF_SOURCE_MEASURED);
    log_decision(ctx, e);
    return CONVFIND_OK;
}
