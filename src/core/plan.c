/*
 * plan.c - plans: binding a decision to a problem, executing it, falling back.
 *
 * A plan gets its decision from the context's cache (core/policy.h) and prepares the
 * decision's first usable algorithm.  Execution never fails because of that choice:
 * when the algorithm cannot run (its workspace cannot be allocated, or it reports an
 * error) the call walks down the decision's ranked list and finally to the reference,
 * which needs no workspace and runs every problem the library accepts.  A fallback is
 * counted but never written back: the cached decision stays what Find measured.
 */
#include "core/context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/registry.h"
#include "core/fault.h"
#include "core/policy.h"
#include "core/scratch.h"
#include "util/error.h"

static atomic_int fault_kind;

void cf_fault_set(cf_fault fault)
{
    atomic_store_explicit(&fault_kind, (int)fault, memory_order_relaxed);
}

cf_fault cf_fault_get(void)
{
    return (cf_fault)atomic_load_explicit(&fault_kind, memory_order_relaxed);
}

/* ------------------------------------------------------------------------- */
/* Prepared state                                                             */
/* ------------------------------------------------------------------------- */

static void prepared_free(cf_prepared *pr)
{
    if (!pr)
        return;
    if (pr->algo->release)
        pr->algo->release(pr->state);
    cf_cache_release(pr->entry);
    free(pr);
}

/* Candidates a plan or a fallback may use: measured or merely not finished. */
static bool runnable(const cf_candidate_stats *c)
{
    return c->status == CF_CAND_OK || c->status == CF_CAND_ABANDONED;
}

/* Prepares `algo` (full name `name`; NULL when the context's backend has no such
 * algorithm) for `p` if it is usable under `limit`.  A device algorithm declares no
 * workspace: its device memory is its backend's business, within the same limit
 * (docs/cuda.md), so none is allocated here. */
static bool try_prepare(const cf_algo *algo, const char *name, const cf_problem *p, size_t limit,
                        void **state, size_t *workspace)
{
    *state = NULL;
    *workspace = 0;
    if (!algo || !cf_algo_usable(algo, p, limit, workspace))
        return false;
    if (cf_algo_prepare(algo, p, name, state) == CONVFIND_OK)
        return true;
    cf_clear_error();
    return false;
}

static void set_name(cf_prepared *pr, const char *name)
{
    snprintf(pr->name, sizeof pr->name, "%s", name);
}

/* Binds the newest decision of `entry` (the reference taken over) or, with a NULL entry,
 * `forced`, to problem `p`. */
static convfind_status prepared_new(const convfind_context *ctx, const cf_problem *p,
                                    cf_cache_entry *entry, const cf_algo *forced,
                                    const char *forced_name, convfind_decision_source source,
                                    cf_prepared **out)
{
    cf_prepared *pr = calloc(1, sizeof *pr);
    if (!pr) {
        cf_cache_release(entry);
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate a plan's prepared state");
    }
    pr->entry = entry;
    pr->source = source;
    const size_t limit = ctx->options.workspace_limit;
    if (entry) {
        pr->view = cf_cache_latest(entry);
        const cf_decision *d = &pr->view->decision;
        for (int i = 0; i < d->n_candidates && !pr->algo; i++) {
            const char *name = d->candidates[i].algo;
            const cf_algo *a = cf_context_algo(ctx, name);
            if (runnable(&d->candidates[i]) &&
                try_prepare(a, name, p, limit, &pr->state, &pr->workspace)) {
                pr->algo = a;
                set_name(pr, name);
            }
        }
    } else if (try_prepare(forced, forced_name, p, limit, &pr->state, &pr->workspace)) {
        pr->algo = forced;
        set_name(pr, forced_name);
    }
    if (!pr->algo) {
        pr->algo = ctx->backend->reference;
        set_name(pr, pr->algo->name);
        pr->state = NULL;
        pr->workspace = 0;
        if (!pr->algo->applicable(p)) {
            cf_cache_release(entry);
            free(pr);
            return cf_fail(CONVFIND_ERR_UNSUPPORTED, "no algorithm can prepare this problem");
        }
    }
    *out = pr;
    return CONVFIND_OK;
}

/* The plan's prepared state, switched first to a newer decision for its key if the
 * background tuner published one.  Losers of the switch race discard their copy. */
static cf_prepared *current(const convfind_plan *cplan)
{
    convfind_plan *plan = (convfind_plan *)cplan; /* only the atomic pointer changes */
    cf_prepared *pr = atomic_load_explicit(&plan->prepared, memory_order_acquire);
    if (!pr->entry || cf_cache_latest(pr->entry) == pr->view)
        return pr;
    cf_cache_retain(pr->entry);
    cf_prepared *np;
    if (prepared_new(plan->context, &plan->problem, pr->entry, NULL, NULL, pr->source, &np) !=
        CONVFIND_OK)
        return pr;
    if (!atomic_compare_exchange_strong_explicit(&plan->prepared, &pr, np, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        prepared_free(np);
        return pr;
    }
    pthread_mutex_lock(&plan->retire_mu);
    pr->retired_next = plan->retired;
    plan->retired = pr;
    pthread_mutex_unlock(&plan->retire_mu);
    return np;
}

/* ------------------------------------------------------------------------- */
/* Creation                                                                   */
/* ------------------------------------------------------------------------- */

static convfind_status plan_new(convfind_context *ctx, const cf_problem *problem,
                                convfind_plan **out)
{
    convfind_plan *plan = calloc(1, sizeof *plan);
    if (!plan)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate a plan");
    plan->context = ctx;
    memcpy(&plan->problem, problem, sizeof plan->problem);
    convfind_status st = cf_context_key(ctx, problem, &plan->key);
    if (st != CONVFIND_OK) {
        free(plan);
        return st;
    }
    pthread_mutex_init(&plan->retire_mu, NULL);
    *out = plan;
    return CONVFIND_OK;
}

static convfind_status plan_finish(convfind_plan *plan, convfind_status st, cf_prepared *pr,
                                   convfind_plan **out)
{
    if (st != CONVFIND_OK) {
        pthread_mutex_destroy(&plan->retire_mu);
        free(plan);
        return st;
    }
    atomic_init(&plan->prepared, pr);
    *out = plan;
    return CONVFIND_OK;
}

static convfind_status check_plan_args(convfind_context *ctx, const convfind_problem *problem,
                                       convfind_plan **out)
{
    if (!out)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "out (convfind_plan **) is NULL");
    *out = NULL;
    if (!ctx)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "context is NULL");
    if (!problem)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "problem is NULL");
    return CONVFIND_OK;
}

convfind_status convfind_plan_create(convfind_context *ctx, const convfind_problem *problem,
                                     convfind_plan **out)
{
    cf_clear_error();
    convfind_status st = check_plan_args(ctx, problem, out);
    convfind_plan *plan = NULL;
    if (st != CONVFIND_OK || (st = plan_new(ctx, problem, &plan)) != CONVFIND_OK)
        return st;
    cf_cache_entry *entry;
    cf_prepared *pr = NULL;
    st = cf_decision_get(ctx, problem, &plan->key, ctx->options.find_policy, &entry);
    if (st == CONVFIND_OK) {
        st = prepared_new(ctx, problem, entry, NULL, NULL, CONVFIND_SOURCE_HEURISTIC, &pr);
    } else if (st != CONVFIND_ERR_UNSUPPORTED) {
        /* The decision could not be obtained (out of memory in Find): run the heuristic
         * choice uncached, so that nothing is pinned by a transient failure. */
        cf_decision d;
        cf_clear_error();
        st = cf_context_heuristic(ctx, problem, &d);
        if (st == CONVFIND_OK)
            st = prepared_new(ctx, problem, NULL, cf_context_algo(ctx, d.algo), d.algo,
                              CONVFIND_SOURCE_HEURISTIC, &pr);
        cf_decision_clear(&d);
    }
    return plan_finish(plan, st, pr, out);
}

/* Why `name` is not an algorithm of the context's backend: another backend's (which
 * loads the CUDA module if it can) or no backend's. */
static convfind_status unknown_algorithm(const convfind_context *ctx, const char *name)
{
    const cf_backend *b[2];
    const int nb = cf_backends(b, 2);
    for (int i = 0; i < nb; i++)
        if (b[i] != ctx->backend && cf_backend_find(b[i], name))
            return cf_fail(CONVFIND_ERR_UNSUPPORTED, "algorithm \"%s\" runs on the %s backend; "
                           "this context runs on the %s backend", name, b[i]->name,
                           ctx->backend->name);
    return cf_fail(CONVFIND_ERR_NOT_FOUND, "no algorithm named \"%s\" on any backend this "
                   "process can use", name);
}

convfind_status convfind_plan_create_with_algorithm(convfind_context *ctx,
                                                    const convfind_problem *problem,
                                                    const char *name, convfind_plan **out)
{
    cf_clear_error();
    convfind_status st = check_plan_args(ctx, problem, out);
    if (st != CONVFIND_OK)
        return st;
    if (!name)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "algorithm name is NULL");
    const cf_algo *algo = cf_context_algo(ctx, name);
    if (!algo)
        return unknown_algorithm(ctx, name);
    size_t ws;
    if (!algo->applicable(problem))
        return cf_fail(CONVFIND_ERR_UNSUPPORTED, "algorithm \"%s\" cannot run this problem", name);
    if (cf_algo_workspace(algo, problem, &ws) != CONVFIND_OK)
        return cf_fail(CONVFIND_ERR_OVERFLOW, "workspace of \"%s\" for this problem overflows", name);
    if (ctx->options.workspace_limit && ws > ctx->options.workspace_limit)
        return cf_fail(CONVFIND_ERR_UNSUPPORTED,
                       "algorithm \"%s\" needs %zu workspace bytes, over the limit of %zu", name,
                       ws, ctx->options.workspace_limit);
    convfind_plan *plan;
    if ((st = plan_new(ctx, problem, &plan)) != CONVFIND_OK)
        return st;
    cf_prepared *pr = NULL;
    st = prepared_new(ctx, problem, NULL, algo, name, CONVFIND_SOURCE_FORCED, &pr);
    if (st == CONVFIND_OK && pr->algo != algo) {
        prepared_free(pr);
        st = cf_fail(CONVFIND_ERR_BACKEND, "algorithm \"%s\" failed to prepare this problem", name);
    }
    return plan_finish(plan, st, pr, out);
}

void convfind_plan_destroy(convfind_plan *plan)
{
    if (!plan)
        return;
    prepared_free(atomic_load_explicit(&plan->prepared, memory_order_acquire));
    while (plan->retired) {
        cf_prepared *next = plan->retired->retired_next;
        prepared_free(plan->retired);
        plan->retired = next;
    }
    pthread_mutex_destroy(&plan->retire_mu);
    free(plan);
}

/* The prepared algorithm's name: the registry's static string when it is a plain
 * algorithm (so callers may keep it past the plan), the plan's copy for a variant. */
static const char *prepared_name(const cf_prepared *pr)
{
    return strcmp(pr->name, pr->algo->name) == 0 ? pr->algo->name : pr->name;
}

const char *convfind_plan_algorithm(const convfind_plan *plan)
{
    return plan ? prepared_name(current(plan)) : NULL;
}

convfind_status convfind_plan_get_info(const convfind_plan *plan, convfind_plan_info *info)
{
    cf_clear_error();
    if (!plan || !info)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "%s is NULL", plan ? "info" : "plan");
    const cf_prepared *pr = current(plan);
    memset(info, 0, sizeof *info);
    info->algorithm = prepared_name(pr);
    info->key = plan->key.text;
    info->key_hash = plan->key.hash;
    info->source = pr->source;
    if (pr->view) {
        info->source = (convfind_decision_source)pr->view->source;
        info->provisional = pr->view->provisional;
    }
    return CONVFIND_OK;
}

/* ------------------------------------------------------------------------- */
/* Execution                                                                  */
/* ------------------------------------------------------------------------- */

static convfind_status check_tensors(const convfind_plan *plan, const convfind_tensors *t)
{
    if (!plan)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "plan is NULL");
    if (!t)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "tensors is NULL");
    if (!t->x || !t->w || !t->y)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "tensor %s is NULL",
                       !t->x ? "x" : !t->w ? "w" : "y");
    if (plan->problem.has_bias != (t->b != NULL))
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "bias b is %s but the problem %s a bias",
                       t->b ? "given" : "NULL", plan->problem.has_bias ? "has" : "has no");
    if (plan->problem.has_residual != (t->z != NULL))
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "residual z is %s but the problem %s a residual",
                       t->z ? "given" : "NULL", plan->problem.has_residual ? "has" : "has no");
    return CONVFIND_OK;
}

/* Runs `algo` once with the calling thread's scratch buffer as workspace.  Packed weights are used only when they
 * were made by this very algorithm.  `first`: the execution's first attempt, the one a
 * test fault hits. */
static convfind_status run_algo(const convfind_plan *plan, const cf_algo *algo, const void *state,
                                size_t workspace, const convfind_tensors *t, void *stream,
                                bool first)
{
    cf_fault fault = first && algo != plan->context->backend->reference ? cf_fault_get()
                                                                         : CF_FAULT_NONE;
    cf_exec_args args = {
        .x = t->x, .w = t->w, .b = t->b, .z = t->z, .y = t->y,
        .pool = plan->context->pool, .stream = stream, .device = plan->context->device,
    };
    if (t->packed_w && t->packed_w->algo == algo)
        args.packed_w = t->packed_w->data;
    if (workspace) {
        void *ws = fault == CF_FAULT_WORKSPACE ? NULL : cf_scratch_get(workspace);
        if (!ws)
            return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %zu workspace bytes for %s",
                           workspace, algo->name);
        args.workspace = ws;
        args.workspace_size = workspace;
    }
    return fault == CF_FAULT_EXECUTE
               ? cf_fail(CONVFIND_ERR_BACKEND, "%s: injected failure", algo->name)
               : algo->execute(&plan->problem, state, &args);
}

/* Down the ranked list after the plan's own algorithm failed: every other runnable
 * candidate, then the reference. */
static convfind_status fall_back(const convfind_plan *plan, const cf_prepared *pr,
                                 const convfind_tensors *t, void *stream)
{
    const cf_decision *d = pr->view ? &pr->view->decision : NULL;
    const cf_algo *ref = plan->context->backend->reference;
    for (int i = 0; d && i < d->n_candidates; i++) {
        const char *name = d->candidates[i].algo;
        const cf_algo *a = cf_context_algo(plan->context, name);
        void *state;
        size_t ws;
        if (!a || strcmp(name, pr->name) == 0 || a == ref || !runnable(&d->candidates[i]) ||
            !try_prepare(a, name, &plan->problem, plan->context->options.workspace_limit, &state,
                         &ws))
            continue;
        convfind_status st = run_algo(plan, a, state, ws, t, stream, false);
        if (a->release)
            a->release(state);
        if (st == CONVFIND_OK)
            return st;
    }
    return run_algo(plan, ref, NULL, 0, t, stream, false);
}

convfind_status convfind_execute(const convfind_plan *plan, const convfind_tensors *t)
{
    return convfind_execute_on_stream(plan, t, NULL);
}

convfind_status convfind_execute_on_stream(const convfind_plan *plan, const convfind_tensors *t,
                                           void *stream)
{
    cf_clear_error();
    convfind_status st = check_tensors(plan, t);
    if (st != CONVFIND_OK)
        return st;
    if (stream && !plan->context->backend->device_memory)
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE,
                       "stream %p given to a %s context (streams are for device contexts)",
                       stream, plan->context->backend->name);
    if (t->packed_w && memcmp(&t->packed_w->problem, &plan->problem, sizeof plan->problem) != 0)
        return cf_fail(CONVFIND_ERR_INVALID_SHAPE, "packed weights were made for another problem");
    const cf_prepared *pr = current(plan);
    st = run_algo(plan, pr->algo, pr->state, pr->workspace, t, stream, true);
    if (st == CONVFIND_OK || pr->algo == plan->context->backend->reference)
        return st;
    atomic_fetch_add_explicit(&plan->context->fallbacks, 1, memory_order_relaxed);
    cf_clear_error();
    return fall_back(plan, pr, t, stream);
}

convfind_status convfind_packed_weights_create(const convfind_plan *plan, const void *w,
                                               convfind_packed_weights **out)
{
    cf_clear_error();
    if (!out)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "out (convfind_packed_weights **) is NULL");
    *out = NULL;
    if (!plan || !w)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "%s is NULL", plan ? "w" : "plan");
    const cf_prepared *pr = current(plan);
    convfind_packed_weights *pw = calloc(1, sizeof *pw);
    if (!pw)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate packed weights");
    pw->algo = pr->algo;
    memcpy(&pw->problem, &plan->problem, sizeof pw->problem);
    if (pr->algo->pack_weights) {
        convfind_status st = pr->algo->pack_weights(&plan->problem, pr->state, w, &pw->data);
        if (st != CONVFIND_OK) {
            free(pw);
            return st;
        }
    }
    *out = pw;
    return CONVFIND_OK;
}

void convfind_packed_weights_destroy(convfind_packed_weights *pw)
{
    if (!pw)
        return;
    if (pw->data && pw->algo->free_packed)
        pw->algo->free_packed(pw->data);
    free(pw);
}
