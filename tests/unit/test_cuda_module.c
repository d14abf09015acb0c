/*
 * test_cuda_module.c - a CUDA backend module that cannot be loaded fails CUDA contexts
 * alone: with CONVFIND_CUDA_MODULE naming a file that does not exist (ctest sets it, and
 * the test reads it back), a CUDA context fails with CONVFIND_ERR_UNAVAILABLE and a
 * message naming that path, convfind_cuda_available() gives the same reason, the
 * algorithm list holds only the CPU's, and a CPU context in the same process, created
 * before and after, plans and computes a convolution correctly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "convfind.h"

/* A 1x1x3x3 input convolved with a 2x2 kernel of ones on `ctx`: each output is the sum
 * of a 2x2 window. */
static void cpu_convolution_works(convfind_context *ctx)
{
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.x_rank = d.w_rank = 4;
    const int64_t xd[4] = {1, 1, 3, 3}, wd[4] = {1, 1, 2, 2};
    memcpy(d.x_dims, xd, sizeof xd);
    memcpy(d.w_dims, wd, sizeof wd);
    convfind_problem *p;
    assert_int_equal(convfind_problem_create(&d, &p), CONVFIND_OK);
    convfind_plan *plan;
    assert_int_equal(convfind_plan_create(ctx, p, &plan), CONVFIND_OK);
    const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 1, 1, 1};
    float y[4] = {0};
    convfind_tensors t = {.x = x, .w = w, .y = y};
    assert_int_equal(convfind_execute(plan, &t), CONVFIND_OK);
    const float want[4] = {12, 16, 24, 28};
    for (int i = 0; i < 4; i++)
        assert_float_equal(y[i], want[i], 1e-6);
    convfind_plan_destroy(plan);
    convfind_problem_destroy(p);
}

static convfind_context *context(convfind_device device, convfind_status *st)
{
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.db_path = ":memory:";
    o.num_threads = 1;
    o.find_policy = CONVFIND_FIND_HEURISTIC;
    o.device = device;
    convfind_context *ctx = NULL;
    *st = convfind_context_create(&o, &ctx);
    return ctx;
}

static void test_missing_module(void **state)
{
    (void)state;
    const char *path = getenv("CONVFIND_CUDA_MODULE");
    assert_non_null(path); /* ctest names a file that does not exist */
    convfind_status st;
    convfind_context *cpu = context(CONVFIND_DEVICE_CPU, &st);
    assert_int_equal(st, CONVFIND_OK);
    cpu_convolution_works(cpu);

    convfind_context *cuda = context(CONVFIND_DEVICE_CUDA, &st);
    assert_int_equal(st, CONVFIND_ERR_UNAVAILABLE);
    assert_null(cuda);
    char message[512];
    strncpy(message, convfind_last_error(), sizeof message - 1);
    message[sizeof message - 1] = '\0';
    assert_non_null(strstr(message, path));
    assert_null(strchr(message, '\n')); /* one line */
    assert_string_equal(convfind_status_name(st), "CONVFIND_ERR_UNAVAILABLE");

    /* Asked again: the same answer, remembered rather than retried. */
    assert_null(context(CONVFIND_DEVICE_CUDA, &st));
    assert_int_equal(st, CONVFIND_ERR_UNAVAILABLE);
    assert_string_equal(convfind_last_error(), message);
    char why[512];
    assert_int_equal(convfind_cuda_available(0, why, sizeof why), 0);
    assert_string_equal(why, message);
    for (int i = 0; i < convfind_algorithm_count(); i++)
        assert_int_equal(strncmp(convfind_algorithm_name(i), "cpu.", 4), 0);

    /* The CPU context made before still works, and a new one does. */
    cpu_convolution_works(cpu);
    convfind_context_destroy(cpu);
    cpu = context(CONVFIND_DEVICE_CPU, &st);
    assert_int_equal(st, CONVFIND_OK);
    cpu_convolution_works(cpu);
    convfind_context_destroy(cpu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_module),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
