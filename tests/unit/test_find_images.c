/*
 * test_find_images.c - the CPU Find validates a batch on its first and last images
 * (src/cpu/find.c: the naive reference computes those two only, as on CUDA): a candidate
 * whose last image is wrong, the mark of a wrong batch stride, is FAILED and never chosen,
 * and so is one that leaves a middle image unwritten (every value of Y is checked for the
 * NaN it was filled with), while a correct one is OK and validated.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "algo/registry.h"
#include "core/test_control.h"
#include "find/find.h"
#include "test_cache_util.h"

/* The reference's output, with the last image's first value off by one. */
static convfind_status exec_last_image_wrong(const cf_problem *p, const void *state,
                                             const cf_exec_args *a)
{
    (void)state;
    convfind_status st = tu_run_counted(p, a);
    ((float *)a->y)[(size_t)(p->n - 1) * (p->y_elems / (size_t)p->n)] += 1.0f;
    return st;
}

/* The reference's output with the middle image of three left as the check filled it. */
static convfind_status exec_middle_image_unwritten(const cf_problem *p, const void *state,
                                                   const cf_exec_args *a)
{
    (void)state;
    const size_t image = p->y_elems / (size_t)p->n;
    float *keep = malloc(image * sizeof *keep);
    if (!keep)
        return CONVFIND_ERR_OUT_OF_MEMORY;
    float *middle = (float *)a->y + image;
    memcpy(keep, middle, image * sizeof *keep);
    convfind_status st = tu_run_counted(p, a);
    memcpy(middle, keep, image * sizeof *keep);
    free(keep);
    return st;
}

static bool any_f32(const cf_problem *p)
{
    return p->dtype == CONVFIND_DTYPE_F32;
}

static const cf_algo last_image_wrong = {.name = "test.last_image_wrong", .family = "direct",
                                         .applicable = any_f32,
                                         .execute = exec_last_image_wrong};

static const cf_algo middle_image_unwritten = {.name = "test.middle_image_unwritten",
                                               .family = "direct", .applicable = any_f32,
                                               .execute = exec_middle_image_unwritten};

static int teardown(void **state)
{
    (void)state;
    cf_test_control(CF_TEST_ALGORITHMS, NULL, 0);
    return 0;
}

/* The status of `name` after a Find over `list` at batch 3. */
static cf_candidate_stats find_batch3(const cf_algo *const *list, int n, const char *name)
{
    assert_int_equal(cf_test_control(CF_TEST_ALGORITHMS, list, n), CONVFIND_OK);
    convfind_problem *p = tu_conv2d(3, 4, 8, 8, 4, 3, 1);
    const cf_find_config cfg = {.budget_s = 0.05, .validate = true};
    cf_decision d;
    assert_int_equal(cf_find_measure(cf_backend_host(), NULL, p, &cfg, &d), CONVFIND_OK);
    convfind_problem_destroy(p);
    cf_candidate_stats c = {0};
    for (int i = 0; i < d.n_candidates; i++)
        if (strcmp(d.candidates[i].algo, name) == 0)
            c = d.candidates[i];
    assert_string_not_equal(d.algo, "test.last_image_wrong");
    assert_string_not_equal(d.algo, "test.middle_image_unwritten");
    cf_decision_clear(&d);
    return c;
}

static void wrong_last_image_fails(void **state)
{
    (void)state;
    static const cf_algo *const list[] = {&last_image_wrong, &cf_algo_cpu_reference};
    assert_int_equal(find_batch3(list, 2, "test.last_image_wrong").status, CF_CAND_FAILED);
}

static void unwritten_middle_image_fails(void **state)
{
    (void)state;
    static const cf_algo *const list[] = {&middle_image_unwritten, &cf_algo_cpu_reference};
    assert_int_equal(find_batch3(list, 2, "test.middle_image_unwritten").status,
                     CF_CAND_FAILED);
}

static void correct_batch_passes(void **state)
{
    (void)state;
    static const cf_algo *const list[] = {&tu_algo_plain, &cf_algo_cpu_reference};
    const cf_candidate_stats c = find_batch3(list, 2, tu_algo_plain.name);
    assert_int_equal(c.status, CF_CAND_OK);
    assert_true(c.validated);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(wrong_last_image_fails, teardown),
        cmocka_unit_test_teardown(unwritten_middle_image_fails, teardown),
        cmocka_unit_test_teardown(correct_batch_passes, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
