/*
 * test_cuda_api.c - the device part of the public API on any machine, through the public
 * API alone: the option defaults, invalid devices, CUDA contexts where there is no
 * backend module or no GPU (CONVFIND_ERR_UNAVAILABLE and the message
 * convfind_cuda_available() gives), and streams or device algorithms given to a CPU
 * context.  The cuDNN configuration names are tests/gpu/test_cuda_names.c's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "convfind.h"

static void test_defaults(void **state)
{
    (void)state;
    convfind_context_options o;
    memset(&o, 0x5a, sizeof o);
    convfind_context_options_init(&o);
    assert_int_equal(o.device, CONVFIND_DEVICE_CPU);
    assert_int_equal(o.device_index, 0);
    assert_null(o.device_allocator.alloc);
    assert_null(o.device_allocator.free);
}

static void test_bad_device(void **state)
{
    (void)state;
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.db_path = ":memory:";
    o.device = (convfind_device)7;
    convfind_context *ctx = (convfind_context *)&o;
    assert_int_equal(convfind_context_create(&o, &ctx), CONVFIND_ERR_INVALID_ENUM);
    assert_null(ctx);
    assert_non_null(strstr(convfind_last_error(), "device = 7"));
}

static void test_cuda_context_or_reason(void **state)
{
    (void)state;
    char why[256];
    int usable = convfind_cuda_available(0, why, sizeof why);
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.db_path = ":memory:";
    o.device = CONVFIND_DEVICE_CUDA;
    convfind_context *ctx = NULL;
    convfind_status st = convfind_context_create(&o, &ctx);
    if (usable) {
        assert_int_equal(st, CONVFIND_OK);
        convfind_context_destroy(ctx);
        o.device_index = 4096;
        assert_int_equal(convfind_context_create(&o, &ctx), CONVFIND_ERR_UNAVAILABLE);
        assert_non_null(strstr(convfind_last_error(), "device_index = 4096"));
    } else {
        assert_true(strlen(why) > 0);
        assert_int_equal(st, CONVFIND_ERR_UNAVAILABLE);
        assert_null(ctx);
        /* The same reason either way (the context's message may add a prefix). */
        assert_non_null(strstr(convfind_last_error(), why));
    }
}

static void test_stream_on_cpu(void **state)
{
    (void)state;
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.db_path = ":memory:";
    o.find_policy = CONVFIND_FIND_HEURISTIC;
    o.num_threads = 1;
    convfind_context *ctx;
    assert_int_equal(convfind_context_create(&o, &ctx), CONVFIND_OK);
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.x_rank = d.w_rank = 4;
    int64_t xd[4] = {1, 2, 4, 4}, wd[4] = {3, 2, 3, 3};
    memcpy(d.x_dims, xd, sizeof xd);
    memcpy(d.w_dims, wd, sizeof wd);
    convfind_problem *p;
    assert_int_equal(convfind_problem_create(&d, &p), CONVFIND_OK);
    convfind_plan *plan;
    assert_int_equal(convfind_plan_create(ctx, p, &plan), CONVFIND_OK);
    float x[32], w[54], y[12];
    for (int i = 0; i < 32; i++)
        x[i] = (float)i;
    for (int i = 0; i < 54; i++)
        w[i] = 1.0f;
    convfind_tensors t = {.x = x, .w = w, .y = y};
    int fake_stream;
    assert_int_equal(convfind_execute_on_stream(plan, &t, &fake_stream),
                     CONVFIND_ERR_INVALID_ATTRIBUTE);
    assert_int_equal(convfind_execute_on_stream(plan, &t, NULL), CONVFIND_OK);
    assert_float_equal(y[0], 2 * (0 + 1 + 2 + 4 + 5 + 6 + 8 + 9 + 10) + 16 * 9, 1e-3);
    /* A CPU context never offers a device algorithm. */
    assert_string_not_equal(convfind_plan_algorithm(plan), "cuda.direct");
    convfind_plan_destroy(plan);
    /* A device algorithm is UNSUPPORTED here where this process has the CUDA backend,
     * and NOT_FOUND where it has none. */
    bool listed = false;
    for (int i = 0; i < convfind_algorithm_count(); i++)
        listed = listed || strcmp(convfind_algorithm_name(i), "cuda.direct") == 0;
    convfind_plan *forced = NULL;
    assert_int_equal(convfind_plan_create_with_algorithm(ctx, p, "cuda.direct", &forced),
                     listed ? CONVFIND_ERR_UNSUPPORTED : CONVFIND_ERR_NOT_FOUND);
    assert_null(forced);
    convfind_problem_destroy(p);
    convfind_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_bad_device),
        cmocka_unit_test(test_cuda_context_or_reason),
        cmocka_unit_test(test_stream_on_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
