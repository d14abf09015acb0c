/*
 * test_find_packed.c - Find times a candidate the way the key's plans run it: with
 * constant weights packed once (and validates both of its paths), with per-call weights
 * packing on every run.
 *
 * Find once ran every candidate without packed weights, so algorithms that pack (direct
 * blocked, Winograd) paid their packing on every timed run (2.5x to 50x their packed
 * time) and lost to im2col on ResNet-50's res5 3x3 although 1.5x to 2x faster; later it
 * timed every candidate packed, also for callers who never packed, whose plans then ran
 * a Winograd decision about 7x slower than im2col.  A fake algorithm that counts how it
 * is called makes the protocol visible without relying on timings: for constant weights
 * its timed runs must receive the packed weights it made, each pack must be freed, and a
 * candidate whose packed path is wrong must be FAILED even though its unpacked path is
 * right; for per-call weights nothing is packed and every run gets the raw weights.
 * Find asks each pack for its extent, which it evicts from the caches before every
 * timed run (cpu/find.c; what eviction does to a timing is not a test's business).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "algo/registry.h"
#include "find/find.h"
#include "core/test_control.h"
#include "test_cache_util.h"

/* A packing algorithm whose packed path is wrong: 1 is added to every output. */
static convfind_status exec_packed_wrong(const cf_problem *p, const void *state,
                                         const cf_exec_args *a)
{
    (void)state;
    convfind_status st = tu_run_counted(p, a);
    if (a->packed_w)
        for (size_t i = 0; i < p->y_elems; i++)
            ((float *)a->y)[i] += 1.0f;
    return st;
}

static bool any_f32(const cf_problem *p)
{
    return p->dtype == CONVFIND_DTYPE_F32;
}

static const cf_algo algo_packed_wrong = {.name = "test.packed_wrong", .family = "direct",
                                          .applicable = any_f32, .execute = exec_packed_wrong,
                                          .pack_weights = tu_pack_copy,
                                          .free_packed = tu_free_copy};

static int reset(void **state)
{
    (void)state;
    tu_counts_reset();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cf_test_control(CF_TEST_ALGORITHMS, NULL, 0);
    return 0;
}

static const cf_candidate_stats *candidate(const cf_decision *d, const char *name)
{
    for (int i = 0; i < d->n_candidates; i++)
        if (strcmp(d->candidates[i].algo, name) == 0)
            return &d->candidates[i];
    fail_msg("candidate %s missing from the decision", name);
    return NULL;
}

/* Find over `list` (the fake first, then the reference) on a small problem, for plans
 * with constant weights or, with `per_call`, weights given to every execution. */
static void find_usage(const cf_algo *const *list, int n, bool per_call, cf_decision *out)
{
    assert_int_equal(cf_test_control(CF_TEST_ALGORITHMS, list, n), CONVFIND_OK);
    convfind_problem *p = tu_conv2d(1, 4, 8, 8, 4, 3, 1);
    cf_find_config cfg = {.budget_s = 0.05, .validate = true, .constant_weights = !per_call};
    assert_int_equal(cf_find_measure(cf_backend_host(), NULL, p, &cfg, out), CONVFIND_OK);
    convfind_problem_destroy(p);
}

static void find_over(const cf_algo *const *list, int n, cf_decision *out)
{
    find_usage(list, n, false, out);
}

static void timed_runs_use_packed_weights(void **state)
{
    (void)state;
    static const cf_algo *const list[] = {&tu_algo_packs, &cf_algo_cpu_reference};
    cf_decision d;
    find_over(list, 2, &d);
    const cf_candidate_stats *c = candidate(&d, "test.packs");
    assert_int_equal(c->status, CF_CAND_OK);
    assert_true(c->validated);
    assert_true(c->repeats >= CF_FIND_MIN_REPEATS);
    /* Every timed run (and the warm-up) got the pack; only the validation of the
     * unpacked path ran without it.  Packed once for the measurement, and once more
     * when it is timed again in the final round (it ties with the reference); every
     * pack freed. */
    assert_int_equal(atomic_load(&tu_runs_unpacked), 1);
    assert_true(atomic_load(&tu_runs_packed) >= c->repeats + 1);
    assert_in_range(atomic_load(&tu_packs), 1, 2);
    assert_int_equal(atomic_load(&tu_frees), atomic_load(&tu_packs));
    assert_int_equal(atomic_load(&tu_extents), atomic_load(&tu_packs));
    cf_decision_clear(&d);
}

static void wrong_packed_path_fails(void **state)
{
    (void)state;
    static const cf_algo *const list[] = {&algo_packed_wrong, &cf_algo_cpu_reference};
    cf_decision d;
    find_over(list, 2, &d);
    assert_int_equal(candidate(&d, "test.packed_wrong")->status, CF_CAND_FAILED);
    assert_string_equal(d.algo, "cpu.reference");
    assert_int_equal(atomic_load(&tu_packs), atomic_load(&tu_frees));
    cf_decision_clear(&d);
}

/* Correct algorithms, packing or not, are never marked failed by the extra validation
 * (whether the others are timed to the end or abandoned depends on timing). */
static void correct_packer_not_failed(void **state)
{
    (void)state;
    static const cf_algo *const list[] = {&tu_algo_packs, &tu_algo_plain, &cf_algo_cpu_reference};
    cf_decision d;
    find_over(list, 3, &d);
    for (int i = 0; i < d.n_candidates; i++)
        assert_int_not_equal(d.candidates[i].status, CF_CAND_FAILED);
    assert_in_range(atomic_load(&tu_packs), 1, 2); /* 2: it was a finalist */
    assert_int_equal(atomic_load(&tu_frees), atomic_load(&tu_packs));
    cf_decision_clear(&d);
}

/* Per-call weights: nothing is packed, every run (validation, warm-up, timing) packs for
 * itself from the raw weights, and a packed path that would be wrong is never taken. */
static void per_call_runs_never_packed(void **state)
{
    (void)state;
    static const cf_algo *const list[] = {&algo_packed_wrong, &cf_algo_cpu_reference};
    cf_decision d;
    find_usage(list, 2, true, &d);
    const cf_candidate_stats *c = candidate(&d, "test.packed_wrong");
    assert_int_equal(c->status, CF_CAND_OK);
    assert_true(c->repeats >= CF_FIND_MIN_REPEATS);
    assert_int_equal(atomic_load(&tu_packs), 0);
    assert_int_equal(atomic_load(&tu_extents), 0);
    assert_int_equal(atomic_load(&tu_runs_packed), 0);
    assert_true(atomic_load(&tu_runs_unpacked) >= c->repeats + 1);
    cf_decision_clear(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(timed_runs_use_packed_weights, reset, teardown),
        cmocka_unit_test_setup_teardown(wrong_packed_path_fails, reset, teardown),
        cmocka_unit_test_setup_teardown(correct_packer_not_failed, reset, teardown),
        cmocka_unit_test_setup_teardown(per_call_runs_never_packed, reset, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
