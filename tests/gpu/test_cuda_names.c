/*
 * test_cuda_names.c - the cuDNN configuration names that decisions store (graph.h):
 * parsing and printing them back, their engine problems, and that every form resolves
 * to cuda.cudnn in the loaded CUDA backend module and nowhere else.
 *
 * No GPU is needed, only the CUDA libraries: it compiles src/cuda/graph.c's pure name
 * functions in and loads the module from the build tree (CONVFIND_CUDA_MODULE, set by
 * ctest), so it carries the "gpu" label with the tests that need those libraries.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "algo/registry.h"
#include "convfind.h"
#include "cuda/graph.h"

static void test_config_names(void **state)
{
    (void)state;
    const cf_backend *cuda;
    assert_int_equal(cf_backend_for(CONVFIND_DEVICE_CUDA, getenv("CONVFIND_CUDA_MODULE"), &cuda),
                     CONVFIND_OK);
    const char *good[] = {"cuda.cudnn:nhwc:e12:k3=2,5=1", "cuda.cudnn:nchw:e0",
                          "cuda.cudnn:nchw:e7:k17=-1", "cuda.cudnn:nhwc+x3:e70:k2=4",
                          "cuda.cudnn:nchw+pad+x3:e1", "cuda.cudnn:nhwc+ep:e5:k2=1"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        cf_cudnn_config c;
        char back[64];
        assert_int_equal(cf_cudnn_config_parse(good[i], &c), CONVFIND_OK);
        assert_true(cf_cudnn_config_name(&c, back, sizeof back));
        assert_string_equal(back, good[i]);
        assert_ptr_equal(cf_backend_find(cuda, good[i]), cf_backend_find(cuda, "cuda.cudnn"));
        assert_null(cf_backend_find(cf_backend_host(), good[i]));
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
    assert_true(c.padded && c.split && !c.fused);
    assert_int_equal(cf_cudnn_config_parse("cuda.cudnn:nhwc+ep:e5:k2=1", &c), CONVFIND_OK);
    assert_true(c.fused && !c.split && !c.padded);
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
    assert_false(cf_cudnn_splittable(pr)); /* strict math computes in f32: never split */
    convfind_problem_destroy(pr);
    d.math_mode = CONVFIND_MATH_ALLOW_SPLIT_TF32;
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
    assert_false(cf_cudnn_fusable(pr)); /* no epilogue to fuse */
    convfind_problem_destroy(pr);
    /* Fused configurations: a Conv with an epilogue cuDNN's pointwise nodes express. */
    d.has_bias = 1;
    d.activation = CONVFIND_ACT_RELU;
    assert_int_equal(convfind_problem_create(&d, &pr), CONVFIND_OK);
    assert_true(cf_cudnn_fusable(pr));
    convfind_problem_destroy(pr);
    d.activation = CONVFIND_ACT_HARD_SIGMOID;
    assert_int_equal(convfind_problem_create(&d, &pr), CONVFIND_OK);
    assert_false(cf_cudnn_fusable(pr));
    convfind_problem_destroy(pr);
    d.activation = CONVFIND_ACT_NONE;
    const char *bad[] = {"cuda.cudnn", "cuda.cudnn:", "cuda.cudnn:nhwc:e", "cuda.cudnn:abcd:e1",
                         "cuda.cudnn:nchw:e01", "cuda.cudnn:nchw:e1:", "cuda.cudnn:nchw:e1:k",
                         "cuda.cudnn:nchw:e1:k3", "cuda.cudnn:nchw:e1:k3=1,", "cuda.cudnn:nchw:e-1",
                         "cuda.cudnn:nchw:e1x", "cuda.cudnn:nchw+x3+pad:e1",
                         "cuda.cudnn:nchw+x3+x3:e1", "cuda.cudnn:nchw+ep+x3:e1",
                         "cuda.cudnn:nchw+ep+ep:e1"};
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
    assert_null(cf_backend_find(cf_backend_host(), "cpu.reference:x"));
    assert_null(cf_backend_find(cuda, "cuda.direct:x"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
