/*
 * test_cuda_api.c - the device part of the public API on any machine: the option
 * defaults, invalid devices, CUDA contexts where there is no backend or no GPU (a
 * specific status and a message saying why), streams given to a CPU context, and,
 * where the backend is built, the cuDNN configuration names that decisions store.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "convfind.h"
#include "algo/algo.h"

#ifdef CONVFIND_HAVE_CUDA
#include "cuda/graph.h"
#endif

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
        assert_int_equal(convfind_context_create(&o, &ctx), CONVFIND_ERR_UNSUPPORTED);
        assert_non_null(strstr(convfind_last_error(), "device_index = 4096"));
    } else {
        assert_true(strlen(why) > 0);
        assert_int_equal(st, CONVFIND_ERR_UNSUPPORTED);
        assert_null(ctx);
        assert_true(strlen(convfind_last_error()) > 0);
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
    convfind_plan *forced = NULL;
    if (cf_registry_find("cuda.direct"))
        assert_int_equal(convfind_plan_create_with_algorithm(ctx, p, "cuda.direct", &forced),
                         CONVFIND_ERR_UNSUPPORTED);
    convfind_problem_destroy(p);
    convfind_context_destroy(ctx);
}

#ifdef CONVFIND_HAVE_CUDA
static void test_config_names(void **state)
{
    (void)state;
    const char *good[] = {"cuda.cudnn:nhwc:e12:k3=2,5=1", "cuda.cudnn:nchw:e0",
                          "cuda.cudnn:nchw:e7:k17=-1", "cuda.cudnn:nhwc+x3:e70:k2=4",
                          "cuda.cudnn:nchw+pad+x3:e1"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        cf_cudnn_config c;
        char back[64];
        assert_int_equal(cf_cudnn_config_parse(good[i], &c), CONVFIND_OK);
        assert_true(cf_cudnn_config_name(&c, back, sizeof back));
        assert_string_equal(back, good[i]);
        assert_ptr_equal(cf_registry_find(good[i]), cf_registry_find("cuda.cudnn"));
    }
    cf_cudnn_config c;
    assert_int_equal(cf_cudnn_config_parse("cuda.cudnn:nhwc:e12:k3=2,5=1", &c), CONVFIND_OK);
    assert_int_equal(c.layout, CONVFIND_LAYOUT_NHWC);
    assert_int_equal(c.engine, 12);
    assert_int_equal(c.n_knobs, 2);
    assert_int_equal(c.knob_type[1], 5);
    assert_int_equal(c.knob_value[0], 2);
    assert_false(c.split);
    assert_int_equal(cf_cudnn_config_parse("cuda.cudnn:nchw+pad+x3:e1", &c), CONVFIND_OK);
    assert_true(c.padded && c.split);
    /* The split form's engine problem: three times the channels, TF32 allowed. */
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.x_rank = d.w_rank = 4;
    const int64_t xd[4] = {2, 6, 5, 5}, wd[4] = {4, 3, 3, 3}; /* 2 groups */
    memcpy(d.x_dims, xd, sizeof xd);
    memcpy(d.w_dims, wd, sizeof wd);
    d.group = 2;
    convfind_problem *pr;
    assert_int_equal(convfind_problem_create(&d, &pr), CONVFIND_OK);
    assert_true(cf_cudnn_splittable(pr));
    cf_problem q;
    assert_int_equal(cf_cudnn_config_parse("cuda.cudnn:nhwc+x3:e70:k2=4", &c), CONVFIND_OK);
    cf_cudnn_engine_problem(pr, &c, &q);
    assert_int_equal(q.c, 18);
    assert_int_equal(q.group, 2);
    assert_int_equal(q.math_mode, CONVFIND_MATH_ALLOW_TF32);
    assert_int_equal(q.x_elems, 3 * pr->x_elems);
    assert_int_equal(q.w_elems, 3 * pr->w_elems);
    convfind_problem_destroy(pr);
    d.math_mode = CONVFIND_MATH_ALLOW_TF32; /* TF32 already: nothing to split */
    assert_int_equal(convfind_problem_create(&d, &pr), CONVFIND_OK);
    assert_false(cf_cudnn_splittable(pr));
    convfind_problem_destroy(pr);
    const char *bad[] = {"cuda.cudnn", "cuda.cudnn:", "cuda.cudnn:nhwc:e", "cuda.cudnn:abcd:e1",
                         "cuda.cudnn:nchw:e01", "cuda.cudnn:nchw:e1:", "cuda.cudnn:nchw:e1:k",
                         "cuda.cudnn:nchw:e1:k3", "cuda.cudnn:nchw:e1:k3=1,", "cuda.cudnn:nchw:e-1",
                         "cuda.cudnn:nchw:e1x", "cuda.cudnn:nchw+x3+pad:e1",
                         "cuda.cudnn:nchw+x3+x3:e1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(cf_cudnn_config_parse(bad[i], &c), CONVFIND_ERR_NOT_FOUND);
    /* Names are bounded: a configuration whose name would not fit is not offered. */
    memset(&c, 0, sizeof c);
    c.n_knobs = 16;
    for (int i = 0; i < 16; i++) {
        c.knob_type[i] = 40 + i;
        c.knob_value[i] = 1000 + i;
    }
    char small[64];
    assert_false(cf_cudnn_config_name(&c, small, sizeof small));
    /* Only algorithms with variants take parameters. */
    assert_null(cf_registry_find("cpu.reference:x"));
    assert_null(cf_registry_find("cuda.direct:x"));
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_bad_device),
        cmocka_unit_test(test_cuda_context_or_reason),
        cmocka_unit_test(test_stream_on_cpu),
#ifdef CONVFIND_HAVE_CUDA
        cmocka_unit_test(test_config_names),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
