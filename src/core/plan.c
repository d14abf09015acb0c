/*
 * plan.c - plans: binding a decision to a problem and its weights, executing it,
 * falling back.
 *
 * A plan gets its decision from the context's cache (core/policy.h) under the key of
 * its usage (constant or per-call weights) and prepares the decision's first usable
 * algorithm; with constant weights it keeps a copy of them and packs them for that
 * algorithm once.  Execution never fails because of that choice: when the algorithm
 * cannot run (its workspace cannot be allocated or does not fit the caller's, or it
 * reports an error) the call walks down the decision's ranked list, with the raw
 * weights, and finally to the reference, which needs no workspace and runs every
 * problem the library accepts.  A fallback is counted but never written back: the
 * cached decision stays what Find measured.
 */
#include "core/context.h"
#include "core/compiled.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/registry.h"
#include "core/options.h"
#include "core/policy.h"
#include "core/scratch.h"
#include "core/test_control.h"
#include "util/error.h"

/* ------------------------------------------------------------------------- */
/* Prepared state                                                             */
/* ------------------------------------------------------------------------- */

static void prepared_free(cf_prepared *pr)
{
    if (!pr)
        return;
    if (pr->packed && pr->algo->free_packed)
        pr->algo->free_packed(pr->packed);
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
 * algorithm) for `p` if it is usable under `limit`, and packs `weights` for it when
 * they are given and it packs.  A device algorithm declares no workspace: its device
 * memory is its backend's business, within the same limit (docs/cuda.md), so none is
 * allocated here. */
static bool try_prepare(const cf_algo *algo, const char *name, const cf_problem *p, size_t limit,
                        const void *weights, void **state, void **packed, size_t *workspace)
{
    *state = *packed = NULL;
    *workspace = 0;
    if (!algo || !cf_algo_usable(algo, p, limit, workspace))
        return false;
    if (cf_algo_prepare(algo, p, name, state) != CONVFIND_OK) {
        cf_clear_error();
        return false;
    }
    if (!weights || !algo->pack_weights ||
        algo->pack_weights(p, *state, weights, packed) == CONVFIND_OK)
        return true;
    cf_clear_error();
    if (algo->release)
        algo->release(*state);
    *state = NULL;
    return false;
}

static void set_name(cf_prepared *pr, const char *name)
{
    snprintf(pr->name, sizeof pr->name, "%s", name);
}

/* Binds the newest decision of `entry` (the reference taken over) or, with a NULL entry,
 * `forced`, to `plan`'s problem and weights. */
static convfind_status prepared_new(const convfind_plan *plan, cf_cache_entry *entry,
                                    const cf_algo *forced, const char *forced_name,
                                    convfind_decision_source source, cf_prepared **out)
{
    const convfind_context *ctx = plan->context;
    const cf_problem *p = &plan->problem;
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
            if (runnable(&d->candidates[i]) && try_prepare(a, name, p, limit, plan->weights,
                                                           &pr->state, &pr->packed,
                                                           &pr->workspace)) {
                pr->algo = a;
                set_name(pr, name);
            }
        }
    } else if (try_prepare(forced, forced_name, p, limit, plan->weights, &pr->state,
                           &pr->packed, &pr->workspace)) {
        pr->algo = forced;
        set_name(pr, forced_name);
    }
    if (!pr->algo) {
        pr->algo = ctx->backend->reference;
        set_name(pr, pr->algo->name);
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
    if (prepared_new(plan, pr->entry, NULL, NULL, pr->source, &np) != CONVFIND_OK)
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

/* Frees what plan_new made; the prepared states are the caller's business. */
static void plan_free(convfind_plan *plan)
{
    const convfind_context *ctx = plan->context;
    if (plan->weights)
        ctx->backend->weights_free(ctx->device, plan->weights);
    pthread_mutex_destroy(&plan->retire_mu);
    free(plan);
}

/* A plan of `problem` with its key and, when `weights` is given, its copy of them. */
static convfind_status plan_new(convfind_context *ctx, const cf_problem *problem,
                                const void *weights, convfind_plan **out)
{
    convfind_plan *plan = calloc(1, sizeof *plan);
    if (!plan)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate a plan");
    plan->context = ctx;
    memcpy(&plan->problem, problem, sizeof plan->problem);
    pthread_mutex_init(&plan->retire_mu, NULL);
    convfind_status st = cf_context_key(
        ctx, problem, weights ? CF_WEIGHTS_CONSTANT : CF_WEIGHTS_PER_CALL, &plan->key);
    if (st == CONVFIND_OK && weights)
        st = ctx->backend->weights_copy(ctx->device, weights,
                                        problem->w_elems * cf_dtype_size(problem->dtype),
                                        &plan->weights);
    if (st != CONVFIND_OK) {
        plan_free(plan);
        return st;
    }
    *out = plan;
    return CONVFIND_OK;
}

static convfind_status plan_finish(convfind_plan *plan, convfind_status st, cf_prepared *pr,
                                   convfind_plan **out)
{
    if (st != CONVFIND_OK) {
        plan_free(plan);
        return st;
    }
    atomic_init(&plan->prepared, pr);
    *out = plan;
    /* Here, not in prepared_new(): that also runs inside executions, which may be inside
     * a CUDA graph capture, where nothing may be finalized. */
    cf_compiled_load(plan->context, &plan->problem, &plan->key, pr->algo, pr->state, pr->name);
    return CONVFIND_OK;
}

/* Why `name` is not an algorithm of the context's backend: another backend's (which
 * loads the CUDA module if it can) or no backend's. */
static convfind_status unknown_algorithm(const convfind_context *ctx, const char *name)
{
    const cf_backend *b[2];
    const int nb = cf_backends(ctx->env.cuda_module, b, 2);
    for (int i = 0; i < nb; i++)
        if (b[i] != ctx->backend && cf_backend_find(b[i], name))
            return cf_fail(CONVFIND_ERR_UNSUPPORTED, "algorithm \"%s\" runs on the %s backend; "
                           "this context runs on the %s backend", name, b[i]->name,
                           ctx->backend->name);
    return cf_fail(CONVFIND_ERR_NOT_FOUND, "no algorithm named \"%s\" on any backend this "
                   "process can use", name);
}

/* The algorithm `name` forced on `problem`, if the context's backend can run it. */
static convfind_status forced_algorithm(const convfind_context *ctx, const cf_problem *problem,
                                        const char *name, const cf_algo **out)
{
    const cf_algo *algo = cf_context_algo(ctx, name);
    if (!algo)
        return unknown_algorithm(ctx, name);
    size_t ws;
    if (!algo->applicable(problem))
        return cf_fail(CONVFIND_ERR_UNSUPPORTED, "algorithm \"%s\" cannot run this problem", name);
    if (cf_algo_workspace(algo, problem, &ws) != CONVFIND_OK)
        return cf_fail(CONVFIND_ERR_OVERFLOW, "workspace of \"%s\" for this problem overflows",
                       name);
    if (ctx->options.workspace_limit && ws > ctx->options.workspace_limit)
        return cf_fail(CONVFIND_ERR_UNSUPPORTED,
                       "algorithm \"%s\" needs %zu workspace bytes, over the limit of %zu", name,
                       ws, ctx->options.workspace_limit);
    *out = algo;
    return CONVFIND_OK;
}

/* The decision the policy (or, with `retune`, a measurement made now) gives the plan's
 * key, prepared.  A decision that cannot be obtained (out of memory in Find) leaves the
 * heuristic choice, uncached, so that nothing is pinned by a transient failure; a
 * retune whose Find fails leaves the decision as it was. */
static convfind_status decided(convfind_plan *plan, bool retune, cf_prepared **pr)
{
    convfind_context *ctx = plan->context;
    const cf_problem *p = &plan->problem;
    cf_cache_entry *entry;
    convfind_status st = cf_decision_get(ctx, p, &plan->key, ctx->find_policy, retune, &entry);
    if (st == CONVFIND_OK)
        return prepared_new(plan, entry, NULL, NULL, CONVFIND_SOURCE_HEURISTIC, pr);
    if (st == CONVFIND_ERR_UNSUPPORTED)
        return st;
    cf_decision d;
    cf_clear_error();
    st = cf_context_heuristic(ctx, p, &d);
    if (st == CONVFIND_OK)
        st = prepared_new(plan, NULL, cf_context_algo(ctx, d.algo), d.algo,
                          CONVFIND_SOURCE_HEURISTIC, pr);
    cf_decision_clear(&d);
    return st;
}

convfind_status convfind_plan_create_ex(convfind_context *ctx, const convfind_problem *problem,
                                        const convfind_plan_options *options,
                                        convfind_plan **out)
{
    cf_clear_error();
    if (!out)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "out (convfind_plan **) is NULL");
    *out = NULL;
    if (!ctx)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "context is NULL");
    if (!problem)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "problem is NULL");
    convfind_plan_options o;
    convfind_status st = cf_options_read(options, sizeof o, "convfind_plan_options", &o);
    if (st != CONVFIND_OK)
        return st;
    if (o.retune != 0 && o.retune != 1)
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE, "retune = %d is neither 0 nor 1", o.retune);
    if (o.retune && o.algorithm)
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE,
                       "retune = 1 with algorithm \"%s\": a forced algorithm is not measured",
                       o.algorithm);
    const cf_algo *forced = NULL;
    if (o.algorithm && (st = forced_algorithm(ctx, problem, o.algorithm, &forced)) != CONVFIND_OK)
        return st;
    convfind_plan *plan = NULL;
    if ((st = plan_new(ctx, problem, o.weights, &plan)) != CONVFIND_OK)
        return st;
    cf_prepared *pr = NULL;
    if (!forced) {
        st = decided(plan, o.retune == 1, &pr);
        return plan_finish(plan, st, pr, out);
    }
    st = prepared_new(plan, NULL, forced, o.algorithm, CONVFIND_SOURCE_FORCED, &pr);
    if (st == CONVFIND_OK && pr->algo != forced) {
        prepared_free(pr);
        st = cf_fail(CONVFIND_ERR_BACKEND, "algorithm \"%s\" failed to prepare this problem%s",
                     o.algorithm, plan->weights ? " or to rearrange its weights" : "");
    }
    return plan_finish(plan, st, pr, out);
}

convfind_status convfind_plan_create(convfind_context *ctx, const convfind_problem *problem,
                                     convfind_plan **out)
{
    return convfind_plan_create_ex(ctx, problem, NULL, out);
}

convfind_status convfind_plan_create_with_algorithm(convfind_context *ctx,
                                                    const convfind_problem *problem,
                                                    const char *name, convfind_plan **out)
{
    if (!name) {
        cf_clear_error();
        if (out)
            *out = NULL;
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "algorithm name is NULL");
    }
    convfind_plan_options o;
    convfind_plan_options_init(&o);
    o.algorithm = name;
    return convfind_plan_create_ex(ctx, problem, &o, out);
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
    plan_free(plan);
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

convfind_status convfind_plan_workspace_size(const convfind_plan *plan, size_t *bytes)
{
    cf_clear_error();
    if (!plan || !bytes)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "%s is NULL", plan ? "bytes" : "plan");
    if (plan->context->backend->device_memory)
        return cf_fail(CONVFIND_ERR_UNSUPPORTED, "a %s context's algorithms take their workspace "
                       "from its device allocator", plan->context->backend->name);
    *bytes = current(plan)->workspace;
    return CONVFIND_OK;
}

/* ------------------------------------------------------------------------- */
/* Execution                                                                  */
/* ------------------------------------------------------------------------- */

/* One execution: the caller's tensors and options, and the weights every algorithm of
 * it reads raw (the plan's constant copy, or the caller's). */
typedef struct exec_call {
    const convfind_tensors *t;
    const void *w;
    convfind_execute_options o;
} exec_call;

static convfind_status check_tensors(const convfind_plan *plan, const convfind_tensors *t)
{
    if (!plan)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "plan is NULL");
    if (!t)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "tensors is NULL");
    if (plan->weights && t->w)
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE, "tensor w is given, but the plan has "
                       "constant weights: w must be NULL");
    if (!t->x || (!t->w && !plan->weights) || !t->y)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "tensor %s is NULL",
                       !t->x ? "x" : !t->y ? "y" : "w");
    if (plan->problem.has_bias != (t->b != NULL))
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "bias b is %s but the problem %s a bias",
                       t->b ? "given" : "NULL", plan->problem.has_bias ? "has" : "has no");
    if (plan->problem.has_residual != (t->z != NULL))
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "residual z is %s but the problem %s a residual",
                       t->z ? "given" : "NULL", plan->problem.has_residual ? "has" : "has no");
    if (t->z == t->y && plan->context->backend->device_memory)
        return cf_fail(CONVFIND_ERR_UNSUPPORTED, "z is y: a %s context does not add the "
                       "residual in place", plan->context->backend->name);
    return CONVFIND_OK;
}

static convfind_status check_options(const convfind_plan *plan, const convfind_execute_options *o)
{
    const cf_backend *b = plan->context->backend;
    if (o->stream && !b->device_memory)
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE,
                       "stream %p given to a %s context (streams are for device contexts)",
                       o->stream, b->name);
    if (!o->workspace && o->workspace_size)
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE,
                       "workspace_size = %zu without a workspace", o->workspace_size);
    if (o->workspace && b->device_memory)
        return cf_fail(CONVFIND_ERR_UNSUPPORTED, "a %s context's algorithms take their "
                       "workspace from its device allocator, not from the call", b->name);
    if (o->workspace && ((uintptr_t)o->workspace % 64 || !o->workspace_size))
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE,
                       "workspace %p of %zu bytes: it must be 64-byte aligned and not empty",
                       o->workspace, o->workspace_size);
    return CONVFIND_OK;
}

/* Runs `algo` once (with `packed`, its packing of the plan's constant weights, or NULL)
 * in the caller's workspace, or the calling thread's scratch buffer.  `first`: the
 * execution's first attempt, the one a test fault hits.  *started (when not NULL) says
 * whether the algorithm itself ran, and so may have written Y. */
static convfind_status run_algo(const convfind_plan *plan, const cf_algo *algo, const void *state,
                                const void *packed, size_t workspace, const exec_call *call,
                                bool first, bool *started)
{
    const cf_fault fault = first && algo != plan->context->backend->reference ? cf_test_fault()
                                                                               : CF_FAULT_NONE;
    const convfind_tensors *t = call->t;
    cf_exec_args args = {
        .x = t->x, .w = call->w, .b = t->b, .z = t->z, .y = t->y, .packed_w = packed,
        .pool = plan->context->pool, .stream = call->o.stream, .device = plan->context->device,
    };
    if (workspace && call->o.workspace && workspace > call->o.workspace_size)
        return cf_fail(CONVFIND_ERR_UNSUPPORTED, "%s needs %zu workspace bytes; the call gave %zu",
                       algo->name, workspace, call->o.workspace_size);
    if (workspace) {
        void *ws = fault == CF_FAULT_WORKSPACE ? NULL
                   : call->o.workspace         ? call->o.workspace
                                               : cf_scratch_get(workspace);
        if (!ws)
            return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %zu workspace bytes for %s",
                           workspace, algo->name);
        args.workspace = ws;
        args.workspace_size = workspace;
    }
    if (fault == CF_FAULT_EXECUTE)
        return cf_fail(CONVFIND_ERR_BACKEND, "%s: injected failure", algo->name);
    if (started)
        *started = true;
    return algo->execute(&plan->problem, state, &args);
}

/* The workspace an algorithm of this call may use: the context's limit, within the
 * caller's workspace when it gave one (0: unlimited). */
static size_t call_limit(const convfind_plan *plan, const exec_call *call)
{
    const size_t limit = plan->context->options.workspace_limit;
    if (!call->o.workspace)
        return limit;
    return limit && limit < call->o.workspace_size ? limit : call->o.workspace_size;
}

/* Down the ranked list after the plan's own algorithm failed: every other runnable
 * candidate that fits, with the raw weights, then the reference; in place, only up to
 * the first that fails once started. */
static convfind_status fall_back(const convfind_plan *plan, const cf_prepared *pr,
                                 const exec_call *call)
{
    const cf_decision *d = pr->view ? &pr->view->decision : NULL;
    const cf_algo *ref = plan->context->backend->reference;
    const size_t limit = call_limit(plan, call);
    for (int i = 0; d && i < d->n_candidates; i++) {
        const char *name = d->candidates[i].algo;
        const cf_algo *a = cf_context_algo(plan->context, name);
        void *state, *unused;
        size_t ws;
        if (!a || strcmp(name, pr->name) == 0 || a == ref || !runnable(&d->candidates[i]) ||
            !try_prepare(a, name, &plan->problem, limit, NULL, &state, &unused, &ws))
            continue;
        bool started = false;
        convfind_status st = run_algo(plan, a, state, NULL, ws, call, false, &started);
        if (a->release)
            a->release(state);
        if (st == CONVFIND_OK || (started && call->t->z == call->t->y))
            return st;
    }
    return run_algo(plan, ref, NULL, NULL, 0, call, false, NULL);
}

convfind_status convfind_execute_ex(const convfind_plan *plan, const convfind_tensors *t,
                                    const convfind_execute_options *options)
{
    cf_clear_error();
    exec_call call = {.t = t};
    convfind_status st = check_tensors(plan, t);
    if (st != CONVFIND_OK ||
        (st = cf_options_read(options, sizeof call.o, "convfind_execute_options", &call.o)) !=
            CONVFIND_OK ||
        (st = check_options(plan, &call.o)) != CONVFIND_OK)
        return st;
    call.w = plan->weights ? plan->weights : t->w;
    const cf_prepared *pr = current(plan);
    bool started = false;
    st = run_algo(plan, pr->algo, pr->state, pr->packed, pr->workspace, &call, true, &started);
    /* In place (z is y), an algorithm that failed once started may have overwritten Z:
     * no other candidate can then compute from it. */
    if (st == CONVFIND_OK || pr->algo == plan->context->backend->reference ||
        (started && t->z == t->y))
        return st;
    atomic_fetch_add_explicit(&plan->context->fallbacks, 1, memory_order_relaxed);
    cf_clear_error();
    return fall_back(plan, pr, &call);
}

convfind_status convfind_execute(const convfind_plan *plan, const convfind_tensors *t)
{
    return convfind_execute_ex(plan, t, NULL);
}

convfind_status convfind_execute_on_stream(const convfind_plan *plan, const convfind_tensors *t,
                                           void *stream)
{
    convfind_execute_options o;
    convfind_execute_options_init(&o);
    o.stream = stream;
    return convfind_execute_ex(plan, t, &o);
}
