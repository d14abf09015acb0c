/*
 * test_api_plan.c - plans with constant weights, caller workspace and retune, through the
 * public API with fake algorithms in the host backend's list (core/test_control.h).
 *
 * The fake `test.packs` packs W (a copy) and counts, per run, whether it got packed
 * weights; `test.ws_seen` needs workspace and records the buffer it was given.  Both
 * compute with the reference, so every result is checked against it.  What must hold:
 *   - constant weights change the key (and only its weights field), Find times the
 *     candidates packed for them and unpacked for per-call plans, executions of a
 *     constant plan get its packing and take no w, and the plan keeps its own copy;
 *   - a caller workspace too small for the plan's algorithm makes the call fall back
 *     (counted) to a candidate that fits, and one large enough is the one used;
 *   - retune measures again what is cached, and replaces it.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/test_control.h"
#include "find/find.h"
#include "test_cache_util.h"

static void *_Atomic workspace_seen;

static bool any_f32(const cf_problem *p)
{
    return p->dtype == CONVFIND_DTYPE_F32;
}

static convfind_status ws_bytes(const cf_problem *p, size_t *bytes)
{
    (void)p;
    *bytes = 4096;
    return CONVFIND_OK;
}

static convfind_status exec_ws_seen(const cf_problem *p, const void *state, const cf_exec_args *a)
{
    (void)state;
    if (!a->workspace || a->workspace_size < 4096)
        return CONVFIND_ERR_BACKEND;
    memset(a->workspace, 0x5a, 4096);
    atomic_store(&workspace_seen, a->workspace);
    return cf_algo_cpu_reference.execute(p, NULL, a);
}

static const cf_algo algo_ws_seen = {.name = "test.ws_seen", .family = "direct",
                                     .applicable = any_f32, .workspace = ws_bytes,
                                     .execute = exec_ws_seen};

static int reset(void **state)
{
    (void)state;
    tu_counts_reset();
    atomic_store(&workspace_seen, NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cf_test_control(CF_TEST_ALGORITHMS, NULL, 0);
    cf_test_control(CF_TEST_FAULT, CF_FAULT_NONE);
    return 0;
}

/* A context over the algorithm list `list` (the reference last; NULL: the host's own),
 * the small problem, and its data. */
typedef struct fixture {
    convfind_context *ctx;
    convfind_problem *p;
    tu_data d;
} fixture;

static void fixture_open(fixture *f, const cf_algo *const *list, int n,
                         convfind_find_policy policy)
{
    assert_int_equal(cf_test_control(CF_TEST_ALGORITHMS, list, n), CONVFIND_OK);
    f->ctx = tu_context(policy, 1);
    f->p = tu_conv2d(1, 4, 8, 8, 4, 3, 1);
    tu_data_init(&f->d, f->p, 5);
}

static void fixture_close(fixture *f)
{
    tu_data_free(&f->d);
    convfind_problem_destroy(f->p);
    convfind_context_destroy(f->ctx);
}

static convfind_plan *plan_with(convfind_context *ctx, const convfind_problem *p,
                                const void *weights, int retune)
{
    convfind_plan_options o;
    convfind_plan_options_init(&o);
    o.weights = weights;
    o.retune = retune;
    convfind_plan *plan;
    assert_int_equal(convfind_plan_create_ex(ctx, p, &o, &plan), CONVFIND_OK);
    return plan;
}

static const char *key_of(const convfind_plan *plan)
{
    convfind_plan_info info;
    assert_int_equal(convfind_plan_get_info(plan, &info), CONVFIND_OK);
    return info.key;
}

static const cf_algo *const packs_list[] = {&tu_algo_packs, &cf_algo_cpu_reference};

/* ------------------------------------------------------------------------- */
/* Constant weights                                                           */
/* ------------------------------------------------------------------------- */

/* The two usages have keys that differ in the weights field alone, and each is what
 * convfind_problem_key gives for that usage. */
static void test_constant_weights_key(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, packs_list, 2, CONVFIND_FIND_HEURISTIC);
    convfind_plan *per_call = plan_with(f.ctx, f.p, NULL, 0);
    convfind_plan *constant = plan_with(f.ctx, f.p, f.d.w, 0);
    const char *a = key_of(per_call), *b = key_of(constant);
    const char *at = strstr(a, ";weights=per_call;");
    assert_non_null(at);
    char expect[1024];
    snprintf(expect, sizeof expect, "%.*s;weights=constant;%s", (int)(at - a), a,
             at + strlen(";weights=per_call;"));
    assert_string_equal(b, expect);
    char via[1024];
    assert_true(convfind_problem_key(f.ctx, f.p, CONVFIND_WEIGHTS_CONSTANT, via, sizeof via) > 0);
    assert_string_equal(via, b);
    assert_true(convfind_problem_key(f.ctx, f.p, CONVFIND_WEIGHTS_PER_CALL, via, sizeof via) > 0);
    assert_string_equal(via, a);
    assert_int_equal(convfind_problem_key(f.ctx, f.p, (convfind_weights)2, via, sizeof via), 0);
    assert_int_equal(tu_stats(f.ctx).misses, 2); /* two keys, two decisions */
    convfind_plan_destroy(per_call);
    convfind_plan_destroy(constant);
    fixture_close(&f);
}

/* Find times what the plan runs: packed runs for constant weights, unpacked ones for
 * per-call weights. */
static void test_find_times_the_usage(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, packs_list, 2, CONVFIND_FIND_EXHAUSTIVE);
    convfind_plan *per_call = plan_with(f.ctx, f.p, NULL, 0);
    assert_int_equal(tu_stats(f.ctx).finds, 1);
    assert_int_equal(atomic_load(&tu_packs), 0);
    assert_int_equal(atomic_load(&tu_runs_packed), 0);
    assert_true(atomic_load(&tu_runs_unpacked) >= CF_FIND_MIN_REPEATS);

    reset(NULL);
    convfind_plan *constant = plan_with(f.ctx, f.p, f.d.w, 0);
    assert_int_equal(tu_stats(f.ctx).finds, 2);
    assert_true(atomic_load(&tu_packs) >= 1);
    assert_true(atomic_load(&tu_runs_packed) >= CF_FIND_MIN_REPEATS);
    assert_true(atomic_load(&tu_runs_unpacked) >= 1); /* the fallback path was validated */
    convfind_plan_destroy(per_call);
    convfind_plan_destroy(constant);
    fixture_close(&f);
}

/* Executions of a constant plan take no w, run the plan's packing of its own copy of
 * the weights, and stay right after the caller's buffer changed; its fallbacks read the
 * copy raw. */
static void test_constant_weights_execute(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, packs_list, 2, CONVFIND_FIND_HEURISTIC);
    convfind_plan *plan = plan_with(f.ctx, f.p, f.d.w, 0);
    assert_string_equal(convfind_plan_algorithm(plan), "test.packs");
    assert_int_equal(atomic_load(&tu_packs), 1);
    size_t nw;
    convfind_problem_sizes(f.p, NULL, &nw, NULL, NULL);
    for (size_t i = 0; i < nw; i++)
        f.d.w[i] = NAN; /* the plan copied them: this must not reach the result */

    convfind_tensors t = tu_tensors(&f.d, f.p);
    assert_int_equal(convfind_execute(plan, &t), CONVFIND_ERR_INVALID_ATTRIBUTE);
    assert_non_null(strstr(convfind_last_error(), "constant weights"));
    t.w = NULL;
    reset(NULL);
    assert_int_equal(convfind_execute(plan, &t), CONVFIND_OK);
    assert_true(tu_matches(&f.d));
    assert_int_equal(atomic_load(&tu_runs_packed), 1);
    assert_int_equal(atomic_load(&tu_runs_unpacked), 0);

    assert_int_equal(cf_test_control(CF_TEST_FAULT, CF_FAULT_EXECUTE), CONVFIND_OK);
    convfind_status st = convfind_execute(plan, &t);
    cf_test_control(CF_TEST_FAULT, CF_FAULT_NONE);
    assert_int_equal(st, CONVFIND_OK);
    assert_true(tu_matches(&f.d));
    assert_int_equal(tu_stats(f.ctx).fallbacks, 1);

    convfind_plan *per_call = plan_with(f.ctx, f.p, NULL, 0); /* still needs w */
    assert_int_equal(convfind_execute(per_call, &t), CONVFIND_ERR_NULL_POINTER);
    convfind_plan_destroy(per_call);
    convfind_plan_destroy(plan);
    fixture_close(&f);
}

/* A forced algorithm packs the constant weights too. */
static void test_forced_algorithm_with_constant_weights(void **state)
{
    (void)state;
    static const cf_algo *const list[] = {&tu_algo_plain, &tu_algo_packs,
                                          &cf_algo_cpu_reference};
    fixture f;
    fixture_open(&f, list, 3, CONVFIND_FIND_HEURISTIC);
    convfind_plan_options o;
    convfind_plan_options_init(&o);
    o.weights = f.d.w;
    o.algorithm = "test.packs";
    convfind_plan *plan;
    assert_int_equal(convfind_plan_create_ex(f.ctx, f.p, &o, &plan), CONVFIND_OK);
    convfind_plan_info info;
    assert_int_equal(convfind_plan_get_info(plan, &info), CONVFIND_OK);
    assert_int_equal(info.source, CONVFIND_SOURCE_FORCED);
    assert_string_equal(info.algorithm, "test.packs");
    convfind_tensors t = tu_tensors(&f.d, f.p);
    t.w = NULL;
    assert_int_equal(convfind_execute(plan, &t), CONVFIND_OK);
    assert_true(tu_matches(&f.d));
    assert_int_equal(atomic_load(&tu_runs_packed), 1);
    convfind_plan_destroy(plan);
    fixture_close(&f);
}

/* ------------------------------------------------------------------------- */
/* The caller's workspace                                                     */
/* ------------------------------------------------------------------------- */

static void test_caller_workspace(void **state)
{
    (void)state;
    static const cf_algo *const list[] = {&algo_ws_seen, &tu_algo_plain,
                                          &cf_algo_cpu_reference};
    fixture f;
    fixture_open(&f, list, 3, CONVFIND_FIND_HEURISTIC);
    convfind_plan *plan = plan_with(f.ctx, f.p, NULL, 0);
    assert_string_equal(convfind_plan_algorithm(plan), "test.ws_seen");
    size_t bytes = 0;
    assert_int_equal(convfind_plan_workspace_size(plan, &bytes), CONVFIND_OK);
    assert_int_equal(bytes, 4096);

    convfind_tensors t = tu_tensors(&f.d, f.p);
    unsigned char *ws = aligned_alloc(64, 8192);
    assert_non_null(ws);
    convfind_execute_options o;
    convfind_execute_options_init(&o);
    o.workspace = ws;
    o.workspace_size = 4096;
    assert_int_equal(convfind_execute_ex(plan, &t, &o), CONVFIND_OK);
    assert_true(tu_matches(&f.d));
    assert_ptr_equal(atomic_load(&workspace_seen), ws); /* the caller's, not the scratch */
    assert_int_equal(tu_stats(f.ctx).fallbacks, 0);

    /* Too small: skipped like a failure; test.plain (no workspace) runs. */
    atomic_store(&workspace_seen, NULL);
    o.workspace_size = 4095;
    for (size_t i = 0; i < f.d.ny; i++)
        f.d.y[i] = NAN;
    assert_int_equal(convfind_execute_ex(plan, &t, &o), CONVFIND_OK);
    assert_true(tu_matches(&f.d));
    assert_null(atomic_load(&workspace_seen));
    assert_int_equal(tu_stats(f.ctx).fallbacks, 1);

    /* Without a workspace of the caller's: the library's scratch. */
    assert_int_equal(convfind_execute_ex(plan, &t, NULL), CONVFIND_OK);
    assert_non_null(atomic_load(&workspace_seen));
    assert_ptr_not_equal(atomic_load(&workspace_seen), ws);

    o.workspace = ws + 8; /* misaligned */
    assert_int_equal(convfind_execute_ex(plan, &t, &o), CONVFIND_ERR_INVALID_ATTRIBUTE);
    o.workspace = NULL; /* a size without a buffer */
    assert_int_equal(convfind_execute_ex(plan, &t, &o), CONVFIND_ERR_INVALID_ATTRIBUTE);
    o.workspace_size = 0;
    o.stream = ws; /* streams are for device contexts */
    assert_int_equal(convfind_execute_ex(plan, &t, &o), CONVFIND_ERR_INVALID_ATTRIBUTE);
    assert_int_equal(convfind_plan_workspace_size(plan, NULL), CONVFIND_ERR_NULL_POINTER);
    free(ws);
    convfind_plan_destroy(plan);
    fixture_close(&f);
}

/* ------------------------------------------------------------------------- */
/* Retune                                                                     */
/* ------------------------------------------------------------------------- */

static void test_retune_measures_again(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, NULL, 0, CONVFIND_FIND_HYBRID);
    convfind_plan *first = plan_with(f.ctx, f.p, NULL, 0);
    assert_int_equal(tu_stats(f.ctx).finds, 1);
    assert_int_equal(tu_stats(f.ctx).stored, 1);
    convfind_plan *hit = plan_with(f.ctx, f.p, NULL, 0);
    assert_int_equal(tu_stats(f.ctx).finds, 1); /* cached: no Find */
    convfind_plan *again = plan_with(f.ctx, f.p, NULL, 1);
    convfind_context_stats st = tu_stats(f.ctx);
    assert_int_equal(st.finds, 2); /* measured again, and stored again */
    assert_int_equal(st.stored, 2);
    convfind_plan_info info;
    assert_int_equal(convfind_plan_get_info(again, &info), CONVFIND_OK);
    assert_int_equal(info.source, CONVFIND_SOURCE_MEASURED);

    /* A retune of a key nothing holds measures once, not twice. */
    convfind_problem *q = tu_conv2d(1, 4, 6, 6, 4, 3, 1);
    convfind_plan *fresh = plan_with(f.ctx, q, NULL, 1);
    assert_int_equal(tu_stats(f.ctx).finds, 3);

    convfind_plan_options o;
    convfind_plan_options_init(&o);
    o.retune = 2;
    convfind_plan *bad;
    assert_int_equal(convfind_plan_create_ex(f.ctx, f.p, &o, &bad),
                     CONVFIND_ERR_INVALID_ATTRIBUTE);
    o.retune = 1;
    o.algorithm = "cpu.reference";
    assert_int_equal(convfind_plan_create_ex(f.ctx, f.p, &o, &bad),
                     CONVFIND_ERR_INVALID_ATTRIBUTE);
    assert_int_equal(convfind_plan_create_with_algorithm(f.ctx, f.p, NULL, &bad),
                     CONVFIND_ERR_NULL_POINTER);
    convfind_plan_destroy(first);
    convfind_plan_destroy(hit);
    convfind_plan_destroy(again);
    convfind_plan_destroy(fresh);
    convfind_problem_destroy(q);
    fixture_close(&f);
}

/* A retune under a policy that never measures still measures, and the cache holds the
 * measured decision afterwards. */
static void test_retune_under_heuristic(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, NULL, 0, CONVFIND_FIND_HEURISTIC);
    convfind_plan *first = plan_with(f.ctx, f.p, NULL, 0);
    assert_int_equal(tu_stats(f.ctx).finds, 0);
    convfind_plan *again = plan_with(f.ctx, f.p, NULL, 1);
    assert_int_equal(tu_stats(f.ctx).finds, 1);
    convfind_plan *later = plan_with(f.ctx, f.p, NULL, 0);
    convfind_plan_info info;
    assert_int_equal(convfind_plan_get_info(later, &info), CONVFIND_OK);
    assert_int_equal(info.source, CONVFIND_SOURCE_MEASURED);
    convfind_plan_destroy(first);
    convfind_plan_destroy(again);
    convfind_plan_destroy(later);
    fixture_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_constant_weights_key, reset, teardown),
        cmocka_unit_test_setup_teardown(test_find_times_the_usage, reset, teardown),
        cmocka_unit_test_setup_teardown(test_constant_weights_execute, reset, teardown),
        cmocka_unit_test_setup_teardown(test_forced_algorithm_with_constant_weights, reset,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_caller_workspace, reset, teardown),
        cmocka_unit_test_setup_teardown(test_retune_measures_again, reset, teardown),
        cmocka_unit_test_setup_teardown(test_retune_under_heuristic, reset, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
