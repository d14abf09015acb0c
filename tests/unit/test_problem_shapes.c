/*
 * test_problem_shapes.c - valid problems: resolved output shapes, pads and counts.
 *
 * Every row was computed by hand from the ONNX formulas (docs/onnx-semantics.md) and
 * cross-checked while writing this test against onnx.reference 1.23 / onnxruntime 1.32
 * (output shape, and the same output when replayed with the resolved pads).  Rows where
 * an implementation refuses or differs say so; the expected values are the spec's.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "convfind.h"
#include "problem/problem.h"

#define INTS(...)                                                                          \
    {                                                                                      \
        .count = (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),                \
        .v = {__VA_ARGS__}                                                                 \
    }

typedef struct shape_case {
    const char *name;
    convfind_op op;
    int rank;
    int64_t x[CONVFIND_MAX_RANK], w[CONVFIND_MAX_RANK];
    int64_t group; /* 0: default */
    convfind_auto_pad auto_pad;
    convfind_ints kernel_shape, strides, dilations, pads, output_padding, output_shape;
    int64_t want_out[CONVFIND_MAX_RANK];
    int64_t want_pads[2 * CONVFIND_MAX_SPATIAL];
} shape_case;

#define CONV CONVFIND_OP_CONV
#define CT CONVFIND_OP_CONV_TRANSPOSE

static const shape_case cases[] = {
    /* Conv, auto_pad: total 1 -> UPPER puts it at the end, LOWER at the beginning. */
    {.name = "same_upper_odd", .op = CONV, .rank = 4, .x = {1, 1, 5, 5}, .w = {1, 1, 2, 2},
     .auto_pad = CONVFIND_AUTO_PAD_SAME_UPPER, .want_out = {1, 1, 5, 5}, .want_pads = {0, 0, 1, 1}},
    {.name = "same_lower_odd", .op = CONV, .rank = 4, .x = {1, 1, 5, 5}, .w = {1, 1, 2, 2},
     .auto_pad = CONVFIND_AUTO_PAD_SAME_LOWER, .want_out = {1, 1, 5, 5}, .want_pads = {1, 1, 0, 0}},
    /* out = ceil(in / s): H total (3-1)*2+4-6 = 2, W total (4-1)*2+3-8 = 1. */
    {.name = "same_upper_stride2", .op = CONV, .rank = 4, .x = {1, 1, 6, 8}, .w = {1, 1, 4, 3},
     .auto_pad = CONVFIND_AUTO_PAD_SAME_UPPER, .strides = INTS(2, 2), .want_out = {1, 1, 3, 4},
     .want_pads = {1, 0, 1, 1}},
    {.name = "valid", .op = CONV, .rank = 4, .x = {2, 3, 7, 9}, .w = {4, 3, 3, 2},
     .auto_pad = CONVFIND_AUTO_PAD_VALID, .strides = INTS(2, 3), .want_out = {2, 4, 3, 3}},
    {.name = "pads_begin_ne_end", .op = CONV, .rank = 4, .x = {1, 2, 5, 6}, .w = {2, 2, 3, 3},
     .pads = INTS(2, 0, 1, 3), .want_out = {1, 2, 6, 7}, .want_pads = {2, 0, 1, 3}},
    {.name = "dilated", .op = CONV, .rank = 4, .x = {1, 1, 10, 10}, .w = {1, 1, 3, 3},
     .dilations = INTS(2, 3), .pads = INTS(1, 1, 1, 1), .want_out = {1, 1, 8, 6},
     .want_pads = {1, 1, 1, 1}},
    /* Extent (2-1)*3+1 = 4, total 3, LOWER -> 2,1 (onnxruntime refuses dilations here). */
    {.name = "same_lower_dilated", .op = CONV, .rank = 3, .x = {1, 1, 5}, .w = {1, 1, 2},
     .auto_pad = CONVFIND_AUTO_PAD_SAME_LOWER, .dilations = INTS(3), .want_out = {1, 1, 5},
     .want_pads = {2, 1}},
    {.name = "conv1d_group", .op = CONV, .rank = 3, .x = {3, 4, 11}, .w = {6, 2, 3}, .group = 2,
     .strides = INTS(2), .pads = INTS(1, 0), .want_out = {3, 6, 5}, .want_pads = {1, 0}},
    {.name = "conv3d", .op = CONV, .rank = 5, .x = {1, 2, 4, 5, 6}, .w = {3, 2, 2, 3, 3},
     .strides = INTS(1, 2, 2), .pads = INTS(0, 1, 1, 1, 0, 1), .want_out = {1, 3, 4, 2, 3},
     .want_pads = {0, 1, 1, 1, 0, 1}},
    {.name = "depthwise", .op = CONV, .rank = 4, .x = {1, 8, 9, 9}, .w = {8, 1, 3, 3}, .group = 8,
     .pads = INTS(1, 1, 1, 1), .want_out = {1, 8, 9, 9}, .want_pads = {1, 1, 1, 1}},
    {.name = "channel_multiplier", .op = CONV, .rank = 4, .x = {1, 4, 6, 6}, .w = {12, 1, 3, 3},
     .group = 4, .kernel_shape = INTS(3, 3), .want_out = {1, 12, 4, 4}},

    /* ConvTranspose: out = s*(in-1) + output_padding + (k-1)*d + 1 - pads. */
    {.name = "ct_output_padding", .op = CT, .rank = 4, .x = {1, 2, 3, 3}, .w = {2, 3, 3, 3},
     .strides = INTS(2, 2), .pads = INTS(1, 1, 1, 1), .output_padding = INTS(1, 1),
     .want_out = {1, 3, 6, 6}, .want_pads = {1, 1, 1, 1}},
    {.name = "ct_dilated_output_padding", .op = CT, .rank = 4, .x = {1, 2, 4, 4},
     .w = {2, 1, 3, 3}, .group = 2, .strides = INTS(2, 2), .dilations = INTS(2, 2),
     .output_padding = INTS(1, 1), .want_out = {1, 2, 12, 12}},
    {.name = "ct3d_group", .op = CT, .rank = 5, .x = {2, 4, 2, 3, 4}, .w = {4, 1, 2, 2, 3},
     .group = 2, .strides = INTS(2, 1, 2), .pads = INTS(0, 1, 1, 1, 0, 1),
     .output_padding = INTS(1, 0, 1), .want_out = {2, 2, 4, 3, 8},
     .want_pads = {0, 1, 1, 1, 0, 1}},
    /* output_shape without auto_pad, total 3 >= 0: spec's "else" split, extra at the
     * beginning (onnxruntime agrees; onnx.reference rejects, it ignores the pads). */
    {.name = "ct_output_shape_positive_total", .op = CT, .rank = 3, .x = {1, 1, 3},
     .w = {1, 1, 3}, .strides = INTS(2), .output_shape = INTS(4), .want_out = {1, 1, 4},
     .want_pads = {2, 1}},
    /* Unpadded output 11, output_shape 13 = 11 + 2 < 11 + stride 3: begin 0, end -2. */
    {.name = "ct_output_shape_negative_total", .op = CT, .rank = 3, .x = {1, 1, 4},
     .w = {1, 1, 2}, .strides = INTS(3), .output_shape = INTS(13), .want_out = {1, 1, 13},
     .want_pads = {0, -2}},
    /* Unpadded output (3-1)*3+2 = 8; output_shape 10 exceeds it by 2 < stride 3, so
     * begin 0 and end 8 + output_padding 1 - 10 = -1. */
    {.name = "ct_output_shape_with_output_padding", .op = CT, .rank = 3, .x = {1, 1, 3},
     .w = {1, 1, 2}, .strides = INTS(3), .output_padding = INTS(1), .output_shape = INTS(10),
     .want_out = {1, 1, 10}, .want_pads = {0, -1}},
    {.name = "ct_output_shape_valid", .op = CT, .rank = 3, .x = {1, 1, 3}, .w = {1, 1, 3},
     .auto_pad = CONVFIND_AUTO_PAD_VALID, .strides = INTS(2), .output_shape = INTS(8),
     .want_out = {1, 1, 8}, .want_pads = {0, -1}},
    /* output_shape overrides explicit pads (spec; onnxruntime agrees). */
    {.name = "ct_output_shape_ignores_pads", .op = CT, .rank = 3, .x = {1, 1, 3},
     .w = {1, 1, 3}, .strides = INTS(2), .pads = INTS(1, 0), .output_shape = INTS(7),
     .want_out = {1, 1, 7}, .want_pads = {0, 0}},
    /* total 7 - 10 = -3: floor(-3/2) = -2.  Truncation would give -1 (wrong side). */
    {.name = "ct_output_shape_same_upper_negative", .op = CT, .rank = 3, .x = {1, 1, 3},
     .w = {1, 1, 3}, .auto_pad = CONVFIND_AUTO_PAD_SAME_UPPER, .strides = INTS(2),
     .output_shape = INTS(10), .want_out = {1, 1, 10}, .want_pads = {-2, -1}},
    {.name = "ct_output_shape_same_lower_negative", .op = CT, .rank = 3, .x = {1, 1, 3},
     .w = {1, 1, 3}, .auto_pad = CONVFIND_AUTO_PAD_SAME_LOWER, .strides = INTS(2),
     .output_shape = INTS(10), .want_out = {1, 1, 10}, .want_pads = {-1, -2}},
    /* SAME_* with kernel extent 1 < stride 2: out = in * s = 6, total -1 (onnxruntime
     * gives 5). */
    {.name = "ct_same_upper_short_kernel", .op = CT, .rank = 3, .x = {1, 1, 3}, .w = {1, 1, 1},
     .auto_pad = CONVFIND_AUTO_PAD_SAME_UPPER, .strides = INTS(2), .want_out = {1, 1, 6},
     .want_pads = {-1, 0}},
    {.name = "ct_same_lower_short_kernel", .op = CT, .rank = 3, .x = {1, 1, 3}, .w = {1, 1, 1},
     .auto_pad = CONVFIND_AUTO_PAD_SAME_LOWER, .strides = INTS(2), .want_out = {1, 1, 6},
     .want_pads = {0, -1}},
    /* H: total (4-1)*2+3-8 = 1 -> 0,1; W: total (5-1)*3+2-15 = -1 -> -1,0. */
    {.name = "ct_same_upper_2d", .op = CT, .rank = 4, .x = {1, 3, 4, 5}, .w = {3, 2, 3, 2},
     .auto_pad = CONVFIND_AUTO_PAD_SAME_UPPER, .strides = INTS(2, 3), .want_out = {1, 2, 8, 15},
     .want_pads = {0, -1, 1, 0}},
    /* output_padding 1 >= stride 1 but < dilation 2: allowed by the ONNX rule. */
    {.name = "ct_output_padding_below_dilation", .op = CT, .rank = 3, .x = {1, 1, 3},
     .w = {1, 1, 3}, .dilations = INTS(2), .output_padding = INTS(1), .want_out = {1, 1, 8}},
};

static convfind_conv_desc desc_of(const shape_case *c)
{
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.op = c->op;
    d.x_rank = d.w_rank = c->rank;
    memcpy(d.x_dims, c->x, sizeof d.x_dims);
    memcpy(d.w_dims, c->w, sizeof d.w_dims);
    if (c->group)
        d.group = c->group;
    d.auto_pad = c->auto_pad;
    d.kernel_shape = c->kernel_shape;
    d.strides = c->strides;
    d.dilations = c->dilations;
    d.pads = c->pads;
    d.output_padding = c->output_padding;
    d.output_shape = c->output_shape;
    return d;
}

static int64_t prod(const int64_t *v, int n)
{
    int64_t r = 1;
    for (int i = 0; i < n; i++)
        r *= v[i];
    return r;
}

static void test_shape_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const shape_case *c = &cases[i];
        convfind_conv_desc d = desc_of(c);
        convfind_problem *p = NULL;
        convfind_status st = convfind_problem_create(&d, &p);
        if (st != CONVFIND_OK)
            fail_msg("%s: %s: %s", c->name, convfind_status_name(st), convfind_last_error());

        int rank = 0;
        int64_t dims[CONVFIND_MAX_RANK] = {0};
        assert_int_equal(convfind_problem_output_dims(p, &rank, dims), CONVFIND_OK);
        assert_int_equal(rank, c->rank);
        for (int k = 0; k < rank; k++)
            if (dims[k] != c->want_out[k])
                fail_msg("%s: out dim %d = %lld, want %lld", c->name, k, (long long)dims[k],
                         (long long)c->want_out[k]);

        int64_t pads[2 * CONVFIND_MAX_SPATIAL] = {0};
        assert_int_equal(convfind_problem_resolved_pads(p, pads), CONVFIND_OK);
        for (int k = 0; k < 2 * (rank - 2); k++)
            if (pads[k] != c->want_pads[k])
                fail_msg("%s: pads[%d] = %lld, want %lld", c->name, k, (long long)pads[k],
                         (long long)c->want_pads[k]);

        size_t xe = 0, we = 0, ye = 0, be = 7;
        assert_int_equal(convfind_problem_sizes(p, &xe, &we, &ye, &be), CONVFIND_OK);
        assert_int_equal(xe, (size_t)prod(c->x, rank));
        assert_int_equal(we, (size_t)prod(c->w, rank));
        assert_int_equal(ye, (size_t)prod(c->want_out, rank));
        assert_int_equal(be, 0);

        /* Axes beyond the spatial rank are neutral, so kernels can loop over three. */
        for (int k = rank - 2; k < CF_SP; k++) {
            assert_int_equal(p->in[k], 1);
            assert_int_equal(p->out[k], 1);
            assert_int_equal(p->k[k], 1);
            assert_int_equal(p->stride[k], 1);
            assert_int_equal(p->dil[k], 1);
            assert_int_equal(p->pad_begin[k], 0);
            assert_int_equal(p->pad_end[k], 0);
        }
        assert_int_equal(p->in_sp, prod(c->x + 2, rank - 2));
        assert_int_equal(p->out_sp, prod(c->want_out + 2, rank - 2));
        assert_int_equal(p->k_sp, prod(c->w + 2, rank - 2));
        convfind_problem_destroy(p);
    }
}

static convfind_problem *resnet_layer(convfind_activation act, float alpha, float beta)
{
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.x_rank = d.w_rank = 4;
    const int64_t x[] = {1, 64, 56, 56}, w[] = {64, 64, 3, 3};
    memcpy(d.x_dims, x, sizeof x);
    memcpy(d.w_dims, w, sizeof w);
    d.pads = (convfind_ints)INTS(1, 1, 1, 1);
    d.has_bias = 1;
    d.activation = act;
    d.alpha = alpha;
    d.beta = beta;
    convfind_problem *p = NULL;
    assert_int_equal(convfind_problem_create(&d, &p), CONVFIND_OK);
    return p;
}

static void test_describe(void **state)
{
    (void)state;
    convfind_problem *p = resnet_layer(CONVFIND_ACT_RELU, 0.5f, 0.5f);
    char buf[256];
    const char *want = "conv f32 nchw N=1 C=64 in=56x56 M=64 k=3x3 s=1x1 d=1x1 pads=1,1,1,1 g=1 "
                       "out=56x56 bias act=relu";
    size_t n = convfind_problem_describe(p, buf, sizeof buf);
    assert_string_equal(buf, want);
    assert_int_equal(n, strlen(want));

    /* Truncation keeps the NUL and still reports the full length. */
    char small[10];
    assert_int_equal(convfind_problem_describe(p, small, sizeof small), strlen(want));
    assert_string_equal(small, "conv f32 ");
    assert_int_equal(convfind_problem_describe(p, NULL, 0), strlen(want));

    /* Unused activation parameters are canonicalised to 0. */
    assert_true(p->alpha == 0.0f && p->beta == 0.0f);
    size_t be = 0;
    assert_int_equal(convfind_problem_sizes(p, NULL, NULL, NULL, &be), CONVFIND_OK);
    assert_int_equal(be, 64);
    /* 2 * N * M * out_sp * C/group * k_sp */
    assert_true(convfind_problem_flops(p) == 2.0 * 64 * 56 * 56 * 64 * 9);
    convfind_problem_destroy(p);

    /* Clip(-0, 6) is Clip(0, 6): one canonical form. */
    p = resnet_layer(CONVFIND_ACT_CLIP, -0.0f, 6.0f);
    convfind_problem_describe(p, buf, sizeof buf);
    assert_non_null(strstr(buf, " act=clip:0,6"));
    assert_false(signbit(p->alpha));
    convfind_problem_destroy(p);
}

static void test_describe_conv_transpose(void **state)
{
    (void)state;
    const shape_case *c = &cases[0];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (strcmp(cases[i].name, "ct3d_group") == 0)
            c = &cases[i];
    convfind_conv_desc d = desc_of(c);
    d.layout = CONVFIND_LAYOUT_NHWC;
    d.math_mode = CONVFIND_MATH_ALLOW_TF32;
    d.has_residual = 1;
    d.activation = CONVFIND_ACT_LEAKY_RELU;
    d.alpha = 0.125f;
    d.beta = 3.0f;
    convfind_problem *p = NULL;
    assert_int_equal(convfind_problem_create(&d, &p), CONVFIND_OK);
    char buf[256];
    convfind_problem_describe(p, buf, sizeof buf);
    assert_string_equal(buf, "conv_transpose f32 nhwc N=2 C=4 in=2x3x4 M=2 k=2x2x3 s=2x1x2 d=1x1x1 "
                             "pads=0,1,1,1,0,1 outpad=1x0x1 g=2 out=4x3x8 residual "
                             "act=leaky_relu:0.125 tf32");
    /* ConvTranspose: 2 * N * C * in_sp * M/group * k_sp */
    assert_true(convfind_problem_flops(p) == 2.0 * 2 * 4 * 24 * 1 * 12);
    assert_true(p->beta == 0.0f);
    convfind_problem_destroy(p);
}

static void test_desc_init_defaults(void **state)
{
    (void)state;
    convfind_conv_desc d;
    memset(&d, 0x5a, sizeof d);
    convfind_conv_desc_init(&d);
    assert_int_equal(d.op, CONVFIND_OP_CONV);
    assert_int_equal(d.dtype, CONVFIND_DTYPE_F32);
    assert_int_equal(d.layout, CONVFIND_LAYOUT_NCHW);
    assert_int_equal(d.group, 1);
    assert_int_equal(d.auto_pad, CONVFIND_AUTO_PAD_NOTSET);
    assert_int_equal(d.pads.count, 0);
    assert_int_equal(d.output_shape.count, 0);
    assert_int_equal(d.x_rank, 0);
    assert_int_equal(d.has_bias, 0);
    convfind_conv_desc_init(NULL);
    assert_int_equal(cf_dtype_size(CONVFIND_DTYPE_F32), 4);
    assert_int_equal(cf_dtype_size(CONVFIND_DTYPE_F16), 2);
    assert_int_equal(cf_dtype_size(CONVFIND_DTYPE_BF16), 2);
}

static void test_accessors_reject_null(void **state)
{
    (void)state;
    int rank;
    int64_t v[6];
    assert_int_equal(convfind_problem_output_dims(NULL, &rank, v), CONVFIND_ERR_NULL_POINTER);
    assert_non_null(strstr(convfind_last_error(), "problem"));
    assert_int_equal(convfind_problem_resolved_pads(NULL, v), CONVFIND_ERR_NULL_POINTER);
    assert_int_equal(convfind_problem_sizes(NULL, NULL, NULL, NULL, NULL),
                     CONVFIND_ERR_NULL_POINTER);
    assert_true(convfind_problem_flops(NULL) == 0.0);
    char buf[8] = "xxxxxxx";
    assert_int_equal(convfind_problem_describe(NULL, buf, sizeof buf), 0);
    assert_string_equal(buf, "");
    convfind_problem_destroy(NULL);
    assert_string_equal(convfind_last_error(), "");

    convfind_problem *p = resnet_layer(CONVFIND_ACT_NONE, 0, 0);
    assert_int_equal(convfind_problem_output_dims(p, NULL, v), CONVFIND_ERR_NULL_POINTER);
    assert_non_null(strstr(convfind_last_error(), "rank"));
    assert_int_equal(convfind_problem_resolved_pads(p, NULL), CONVFIND_ERR_NULL_POINTER);
    assert_non_null(strstr(convfind_last_error(), "pads"));
    convfind_problem_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shape_table),
        cmocka_unit_test(test_describe),
        cmocka_unit_test(test_describe_conv_transpose),
        cmocka_unit_test(test_desc_init_defaults),
        cmocka_unit_test(test_accessors_reject_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
