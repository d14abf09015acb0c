/*
 * test_find_packed.c - Find times a candidate the way a plan runs it with packed
 * weights, and validates both of its paths.
 *
 * Find once ran every candidate without packed weights, so algorithms that pack (direct
 * blocked, Winograd) paid their packing on every timed run (2.5x to 50x their packed
 * time) and lost to im2col on ResNet-50's res5 3x3 although 1.5x to 2x faster.  A fake
 * algorithm that counts how it is called makes the protocol visible without relying on
 * timings: its timed runs must receive the packed weights it made, each pack must be
 * freed, and a candidate whose packed path is wrong must be FAILED even though its
 * unpacked path is right.
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
#include "test_cache_util.h"

static atomic_int packs, frees, runs_packed, runs_unpacked;

static bool any_f32(const cf_problem *p)
{
    return p->dtype == CONVFIND_DTYPE_F32;
}

/* The "packed" form is a copy of W, so an execution can check it got its own pack. */
static convfind_status pack_copy(const cf_problem *p, const void *state, const void *w,
                                 void **packed)
{
    (void)state;
    float *copy = malloc(p->w_elems * sizeof *copy);
    if (!copy)
        return CONVFIND_ERR_OUT_OF_MEMORY;
    memcpy(copy, w, p->w_elems * sizeof *copy);
    *packed = copy;
    atomic_fetch_add(&packs, 1);
    return CONVFIND_OK;
}

static void free_copy(void *packed)
{
    free(packed);
    atomic_fetch_add(&frees, 1);
}

/* The reference's result, counted by path; `wrong_when_packed` adds 1 to every output
 * of the packed path. */
static convfind_status run_counted(const cf_problem *p, const cf_exec_args *a,
                                   bool wrong_when_packed)
{
    if (a->packed_w && memcmp(a->packed_w, a->w, p->w_elems * sizeof(float)) != 0)
        return CONVFIND_ERR_BACKEND;
    atomic_fetch_add(a->packed_w ? &runs_packed : &runs_unpacked, 1);
    cf_exec_args r = *a;
    r.packed_w = NULL;
    convfind_status st = cf_algo_cpu_reference.execute(p, NULL, &r);
    if (a->packed_w && wrong_when_packed)
        for (size_t i = 0; i < p->y_elems; i++)
            ((float *)a->y)[i] += 1.0f;
    return st;
}

static convfind_status exec_packs(const cf_problem *p, const void *state, const cf_exec_args *a)
{
    (void)state;
    return run_counted(p, a, false);
}

static convfind_status exec_packed_wrong(const cf_problem *p, const void *state,
                                         const cf_exec_args *a)
{
    (void)state;
    return run_counted(p, a, true);
}

static const cf_algo algo_packs = {.name = "test.packs", .family = "direct",
                                   .applicable = any_f32, .execute = exec_packs,
                                   .pack_weights = pack_copy, .free_packed = free_copy};
static const cf_algo algo_packed_wrong = {.name = "test.packed_wrong", .family = "direct",
                                          .applicable = any_f32, .execute = exec_packed_wrong,
                                          .pack_weights = pack_copy, .free_packed = free_copy};

static int reset(void **state)
{
    (void)state;
    atomic_store(&packs, 0);
    atomic_store(&frees, 0);
    atomic_store(&runs_packed, 0);
    atomic_store(&runs_unpacked, 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cf_algos_override(NULL, 0);
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

/* Find over `list` (the fake first, then the reference) on a small problem. */
static void find_over(const cf_algo *const *list, int n, cf_decision *out)
{
    cf_algos_override(list, n);
    convfind_problem *p = tu_conv2d(1, 4, 8, 8, 4, 3, 1);
    cf_find_config cfg = {.budget_s = 0.05, .validate = true};
    assert_int_equal(cf_find_measure(cf_backend_host(), NULL, p, &cfg, out), CONVFIND_OK);
    convfind_problem_destroy(p);
}

static void timed_runs_use_packed_weights(void **state)
{
    (void)state;
    static const cf_algo *const list[] = {&algo_packs, &cf_algo_cpu_reference};
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
    assert_int_equal(atomic_load(&runs_unpacked), 1);
    assert_true(atomic_load(&runs_packed) >= c->repeats + 1);
    assert_in_range(atomic_load(&packs), 1, 2);
    assert_int_equal(atomic_load(&frees), atomic_load(&packs));
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
    assert_int_equal(atomic_load(&packs), atomic_load(&frees));
    cf_decision_clear(&d);
}

/* Correct algorithms, packing or not, are never marked failed by the extra validation
 * (whether the others are timed to the end or abandoned depends on timing). */
static void correct_packer_not_failed(void **state)
{
    (void)state;
    static const cf_algo *const list[] = {&algo_packs, &tu_algo_plain, &cf_algo_cpu_reference};
    cf_decision d;
    find_over(list, 3, &d);
    for (int i = 0; i < d.n_candidates; i++)
        assert_int_not_equal(d.candidates[i].status, CF_CAND_FAILED);
    assert_in_range(atomic_load(&packs), 1, 2); /* 2: it was a finalist */
    assert_int_equal(atomic_load(&frees), atomic_load(&packs));
    cf_decision_clear(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(timed_runs_use_packed_weights, reset, teardown),
        cmocka_unit_test_setup_teardown(wrong_packed_path_fails, reset, teardown),
        cmocka_unit_test_setup_teardown(correct_packer_not_failed, reset, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
