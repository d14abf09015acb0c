/*
 * policy.c - cache lookup, the find policies, retunes, and publication (see policy.h).
 */
#include "core/policy.h"

#include <time.h>

#include "core/compiled.h"
#include "core/deferred.h"
#include "db/db.h"
#include "decision/confidence.h"
#include "util/error.h"

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

/* How long a plan creation waits for another handle that is measuring the same key
 * (the database lease) before it takes the heuristic choice: two Find budgets and a
 * second, so a waiter gives up only on a holder that is stuck or far slower than us. */
static int lease_wait_ms(const convfind_context *ctx)
{
    return (int)(2000.0 * ctx->options.find_time_budget_s) + 1000;
}

static double budget_ms(const convfind_context *ctx)
{
    return 1000.0 * ctx->options.find_time_budget_s;
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
        out->budget_ms = 1000.0 * cfg->budget_s;
        const char *text = key->text;
        /* Releases this process's lease too.  A decision the database cannot keep fails
         * no call: it is counted (convfind_context_stats.store_failures). */
        if (cf_db_store(ctx->db, &text, out, 1) != CONVFIND_OK)
            cf_clear_error();
        cf_compiled_store(ctx, p, key, out->algo);
    } else if (leased) {
        cf_db_lease_release(ctx->db, key->text);
    }
    return st;
}

/* What the find path asks of a stored decision of this environment (cf_db_request). */
typedef struct wanted {
    double budget_ms; /* the Find budget this context could spend now */
    bool retune;      /* measure whatever is stored */
} wanted;

static bool usable_now(const cf_decision *d, void *arg)
{
    const wanted *w = arg;
    return !w->retune && cf_retime_budget_ms(d, w->budget_ms, false) == 0;
}

/* The name of a decision's choice, or NULL for an empty decision. */
static const char *choice_of(const cf_decision *d)
{
    return d->algo[0] ? d->algo : NULL;
}

/* Find under the lease cf_db_begin gave for `action`, from what it returned in `stored`:
 * HYBRID re-times only the top candidates of a record from another environment or of a
 * compatible key (counted as seeded); otherwise a full Find, the stored choice first. */
static convfind_status measure(convfind_context *ctx, const cf_problem *p, const cf_key *key,
                               convfind_find_policy policy, cf_db_action action,
                               const cf_decision *stored, cf_decision *out)
{
    const bool partial = policy == CONVFIND_FIND_HYBRID &&
                         (action == CF_DB_ACTION_RETUNE || action == CF_DB_ACTION_SEED);
    cf_find_config cfg;
    cf_context_find_config(ctx, key->weights, choice_of(stored), NULL, &cfg);
    cfg.retune = partial ? stored : NULL;
    if (partial)
        atomic_fetch_add_explicit(&ctx->seeded, 1, memory_order_relaxed);
    return cf_decision_measure(ctx, p, key, &cfg, true, out);
}

/* A retune: measures the key now with `cached` (may be NULL), else the stored decision,
 * as the incumbent; under the key's lease unless another handle holds it past the wait
 * (the caller asked for a measurement, so it is made then too). */
static convfind_status remeasure(convfind_context *ctx, const cf_problem *p, const cf_key *key,
                                 const char *cached, cf_decision *out)
{
    wanted w = {.budget_ms = budget_ms(ctx), .retune = true};
    const cf_db_request req = {.wait_ms = lease_wait_ms(ctx), .usable = usable_now,
                               .usable_arg = &w};
    cf_decision stored;
    cf_db_action action = cf_db_begin(ctx->db, key->text, &req, &stored);
    const bool leased = action != CF_DB_ACTION_USE && action != CF_DB_ACTION_HEURISTIC;
    cf_find_config cfg;
    cf_context_find_config(ctx, key->weights, cached ? cached : choice_of(&stored), NULL, &cfg);
    convfind_status st = cf_decision_measure(ctx, p, key, &cfg, leased, out);
    cf_decision_clear(&stored);
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
    case CONVFIND_FIND_HYBRID: {
        wanted w = {.budget_ms = budget_ms(ctx)};
        const cf_db_request req = {.wait_ms = lease_wait_ms(ctx), .usable = usable_now,
                                   .usable_arg = &w, .similar = policy == CONVFIND_FIND_HYBRID};
        cf_db_action action = cf_db_begin(ctx->db, key->text, &req, &stored);
        if (action == CF_DB_ACTION_USE) {
            *out = stored;
            *source = CF_SOURCE_STORED;
            return CONVFIND_OK;
        }
        if (action != CF_DB_ACTION_HEURISTIC) {
            if (action == CF_DB_ACTION_RETIME)
                atomic_fetch_add_explicit(&ctx->retimed, 1, memory_order_relaxed);
            convfind_status st = measure(ctx, p, key, policy, action, &stored, out);
            *source = CF_SOURCE_MEASURED;
            if (st != CONVFIND_OK && action == CF_DB_ACTION_RETIME) {
                /* The stored decision was only to be improved: it still serves. */
                cf_clear_error();
                *out = stored;
                *source = CF_SOURCE_STORED;
                return CONVFIND_OK;
            }
            cf_decision_clear(&stored);
            return st;
        }
        break; /* another handle is still measuring it */
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

/* A retune of the READY entry `e`: the measurement becomes the newest decision. */
static void retune_entry(convfind_context *ctx, const cf_problem *p, cf_cache_entry *e)
{
    cf_cache_entry *latest = (cf_cache_entry *)cf_cache_latest(e); /* held through e */
    cf_decision d;
    if (remeasure(ctx, p, &e->key, latest->decision.algo, &d) == CONVFIND_OK) {
        cf_cache_replace(ctx->cache, latest, &d, CF_SOURCE_MEASURED);
        log_decision(ctx, e);
    } else {
        cf_clear_error(); /* the decision stays as it was */
    }
}

convfind_status cf_decision_get(convfind_context *ctx, const cf_problem *p, const cf_key *key,
                                convfind_find_policy policy, bool retune, cf_cache_entry **out)
{
    bool owner;
    convfind_status st = cf_cache_acquire(ctx->cache, key, out, &owner);
    if (st != CONVFIND_OK)
        return st;
    if (!owner) {
        if (retune)
            retune_entry(ctx, p, *out);
        return CONVFIND_OK;
    }
    cf_decision d;
    cf_source source = CF_SOURCE_MEASURED;
    bool provisional = false;
    st = retune ? remeasure(ctx, p, key, NULL, &d)
                : cf_decision_obtain(ctx, p, key, policy, &d, &source, &provisional);
    if (st != CONVFIND_OK) {
        cf_cache_abandon(ctx->cache, *out);
        *out = NULL;
        return st;
    }
    cf_cache_publish(ctx->cache, *out, &d, source, provisional);
    log_decision(ctx, *out);
    if (provisional) {
        cf_deferred_submit(ctx->deferred, *out, p, budget_ms(ctx));
    } else if (policy == CONVFIND_FIND_DEFERRED && source == CF_SOURCE_STORED && ctx->deferred) {
        /* Stored, but of low confidence: used now, measured again when time allows. */
        double again = cf_retime_budget_ms(&(*out)->decision, budget_ms(ctx), true);
        if (again > 0) {
            atomic_fetch_add_explicit(&ctx->retimed, 1, memory_order_relaxed);
            cf_deferred_submit(ctx->deferred, *out, p, again);
        }
    }
    return CONVFIND_OK;
}

convfind_status cf_decision_remeasure(convfind_context *ctx, const cf_problem *p,
                                      cf_cache_entry *e, double budget_ms,
                                      const atomic_bool *cancel)
{
    cf_find_config cfg;
    cf_context_find_config(ctx, e->key.weights, cf_cache_latest(e)->decision.algo, cancel, &cfg);
    if (budget_ms > 0)
        cfg.budget_s = budget_ms / 1000.0;
    cf_decision d;
    convfind_status st = cf_decision_measure(ctx, p, &e->key, &cfg, false, &d);
    if (st != CONVFIND_OK)
        return st;
    cf_cache_replace(ctx->cache, e, &d, CF_SOURCE_MEASURED);
    log_decision(ctx, e);
    return CONVFIND_OK;
}
