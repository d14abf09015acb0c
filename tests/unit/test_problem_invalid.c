/*
 * test_problem_invalid.c - every class of invalid problem gets its specific status and a
 * message naming the offending value, and never a problem object.
 *
 * Table-driven: each row starts from one valid base problem, applies one mutation and
 * states the status and a substring the message must contain.  The base problem itself
 * is checked to be valid first, so a row can only pass because of its own mutation.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "convfind.h"

#define INTS(...)                                                                          \
    (convfind_ints)                                                                        \
    {                                                                                      \
        .count = (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),                \
        .v = {__VA_ARGS__}                                                                 \
    }

/* Conv 2-D: X 1x6x8x8, W 4x3x3x3, group 2, stride 1, pads 1. */
static void base_conv(convfind_conv_desc *d)
{
    convfind_conv_desc_init(d);
    d->x_rank = d->w_rank = 4;
    const int64_t x[] = {1, 6, 8, 8}, w[] = {4, 3, 3, 3};
    memcpy(d->x_dims, x, sizeof x);
    memcpy(d->w_dims, w, sizeof w);
    d->group = 2;
    d->pads = INTS(1, 1, 1, 1);
}

/* ConvTranspose 1-D: X 1x4x5, W 4x3x3 (M = 6), group 2, stride 2. */
static void base_ct(convfind_conv_desc *d)
{
    convfind_conv_desc_init(d);
    d->op = CONVFIND_OP_CONV_TRANSPOSE;
    d->x_rank = d->w_rank = 3;
    const int64_t x[] = {1, 4, 5}, w[] = {4, 3, 3};
    memcpy(d->x_dims, x, sizeof x);
    memcpy(d->w_dims, w, sizeof w);
    d->group = 2;
    d->strides = INTS(2);
}

typedef struct invalid_case {
    const char *name;
    void (*base)(convfind_conv_desc *d);
    void (*mutate)(convfind_conv_desc *d);
    convfind_status want;
    const char *message; /* must occur in convfind_last_error() */
} invalid_case;

#define MUT(fn, body)                                                                      \
    static void fn(convfind_conv_desc *d) { body; }

/* Unknown enum values, as a corrupt file or a cast would store them. */
MUT(bad_op, d->op = (convfind_op)7)
MUT(bad_op_negative, d->op = (convfind_op)-1)
MUT(bad_dtype, d->dtype = (convfind_dtype)3)
MUT(bad_layout, d->layout = (convfind_layout)2)
MUT(bad_auto_pad, d->auto_pad = (convfind_auto_pad)4; d->pads.count = 0)
MUT(bad_activation, d->activation = (convfind_activation)99)
MUT(bad_math_mode, d->math_mode = (convfind_math_mode)5)

/* Ranks and attribute lengths. */
MUT(x_rank_2, d->x_rank = 2; d->w_rank = 2)
MUT(x_rank_6, d->x_rank = 6; d->w_rank = 6)
MUT(w_rank_mismatch, d->w_rank = 3)
MUT(strides_count_wrong, d->strides = INTS(1, 1, 1))
MUT(strides_count_huge, d->strides.count = 7)
MUT(dilations_count_negative, d->dilations.count = -1)
MUT(pads_count_wrong, d->pads = INTS(1, 1))
MUT(kernel_shape_count_wrong, d->kernel_shape = INTS(3))
MUT(output_shape_count_wrong, d->output_shape = INTS(1, 6, 11))
MUT(output_padding_count_wrong, d->output_padding = INTS(1, 1))

/* Dimensions and channels. */
MUT(n_zero, d->x_dims[0] = 0)
MUT(spatial_negative, d->x_dims[3] = -5)
MUT(w_dim_zero, d->w_dims[2] = 0)
MUT(c_not_divisible, d->x_dims[1] = 6; d->group = 4; d->w_dims[1] = 1; d->w_dims[0] = 8)
MUT(m_not_divisible, d->w_dims[0] = 5)
MUT(w_channels_wrong, d->w_dims[1] = 2)
MUT(ct_w_channels_wrong, d->w_dims[0] = 5)
MUT(ct_c_not_divisible, d->x_dims[1] = 5; d->w_dims[0] = 5)
MUT(kernel_shape_mismatch, d->kernel_shape = INTS(3, 2))
MUT(output_empty, d->x_dims[2] = 2; d->x_dims[3] = 2; d->w_dims[2] = 3; d->w_dims[3] = 3;
    d->pads.count = 0)
MUT(output_empty_dilated, d->dilations = INTS(1, 5))
/* Unpadded output (5-1)*2+3 = 11: pads 6,5 leave nothing. */
MUT(ct_output_empty, d->pads = INTS(6, 5))

/* Attribute values. */
MUT(pads_negative, d->pads = INTS(1, 1, 1, -1))
MUT(ct_pads_negative, d->pads = INTS(-1, 0))
MUT(stride_zero, d->strides = INTS(1, 0))
MUT(stride_negative, d->strides = INTS(-2, 1))
MUT(dilation_zero, d->dilations = INTS(0, 1))
MUT(group_zero, d->group = 0)
MUT(group_negative, d->group = -3)
MUT(output_padding_on_conv, d->output_padding = INTS(0, 0))
MUT(output_shape_on_conv, d->output_shape = INTS(8, 8))
MUT(pads_with_auto_pad, d->auto_pad = CONVFIND_AUTO_PAD_SAME_UPPER)
MUT(ct_pads_with_valid, d->pads = INTS(0, 0); d->auto_pad = CONVFIND_AUTO_PAD_VALID)
MUT(output_padding_too_big, d->output_padding = INTS(2))
MUT(output_padding_too_big_dilated, d->dilations = INTS(3); d->output_padding = INTS(3))
MUT(output_padding_negative, d->output_padding = INTS(-1))
MUT(output_shape_zero, d->output_shape = INTS(0))
/* Unpadded output (5-1)*2+3 = 11; without auto_pad at most 11 + stride - 1 = 12. */
MUT(output_shape_unreachable, d->output_shape = INTS(13))
MUT(output_shape_unreachable_valid, d->output_shape = INTS(13);
    d->auto_pad = CONVFIND_AUTO_PAD_VALID)
MUT(leaky_alpha_nan, d->activation = CONVFIND_ACT_LEAKY_RELU; d->alpha = NAN)
MUT(hard_sigmoid_beta_nan, d->activation = CONVFIND_ACT_HARD_SIGMOID; d->alpha = 0.2f;
    d->beta = NAN)
MUT(clip_min_gt_max, d->activation = CONVFIND_ACT_CLIP; d->alpha = 6.0f; d->beta = 0.0f)
MUT(clip_nan, d->activation = CONVFIND_ACT_CLIP; d->alpha = NAN; d->beta = 1.0f)

/* Counts and formulas that would overflow. */
MUT(x_elems_overflow, d->x_dims[0] = INT64_MAX / 2; d->x_dims[1] = 6)
/* X stays small; the padded output of 2^40 x 8 per image times 2^30 images does not. */
MUT(y_elems_overflow, d->x_dims[0] = (int64_t)1 << 30;
    d->pads = INTS((int64_t)1 << 39, 1, (int64_t)1 << 39, 1))
MUT(huge_pads, d->pads = INTS(INT64_MAX, 1, INT64_MAX, 1))
MUT(huge_dilation, d->dilations = INTS(INT64_MAX, 1))
/* Extent 2 * (INT64_MAX / 2) + 1 fits; adding (out - 1) * stride does not. */
MUT(huge_dilation_same, d->pads.count = 0; d->auto_pad = CONVFIND_AUTO_PAD_SAME_LOWER;
    d->strides = INTS(2, 1); d->dilations = INTS(INT64_MAX / 2, 1))
MUT(ct_huge_stride, d->strides = INTS(INT64_MAX))
/* 4 * (INT64_MAX / 4) + 3 = INT64_MAX exactly; output_padding tips it over. */
MUT(ct_huge_output_padding, d->strides = INTS(INT64_MAX / 4);
    d->output_padding = INTS(INT64_MAX / 4 - 1))
MUT(ct_huge_group, d->group = INT64_MAX / 2; d->x_dims[1] = INT64_MAX / 2 * 2;
    d->w_dims[0] = INT64_MAX / 2 * 2)

static const invalid_case cases[] = {
    {"op", base_conv, bad_op, CONVFIND_ERR_INVALID_ENUM, "op = 7"},
    {"op<0", base_conv, bad_op_negative, CONVFIND_ERR_INVALID_ENUM, "op = -1"},
    {"dtype", base_conv, bad_dtype, CONVFIND_ERR_INVALID_ENUM, "dtype = 3"},
    {"layout", base_conv, bad_layout, CONVFIND_ERR_INVALID_ENUM, "layout = 2"},
    {"auto_pad", base_conv, bad_auto_pad, CONVFIND_ERR_INVALID_ENUM, "auto_pad = 4"},
    {"activation", base_conv, bad_activation, CONVFIND_ERR_INVALID_ENUM, "activation = 99"},
    {"math_mode", base_conv, bad_math_mode, CONVFIND_ERR_INVALID_ENUM, "math_mode = 5"},

    {"x_rank 2", base_conv, x_rank_2, CONVFIND_ERR_INVALID_RANK, "x_rank = 2"},
    {"x_rank 6", base_conv, x_rank_6, CONVFIND_ERR_INVALID_RANK, "x_rank = 6"},
    {"w_rank", base_conv, w_rank_mismatch, CONVFIND_ERR_INVALID_RANK, "w_rank = 3 must equal x_rank = 4"},
    {"strides count", base_conv, strides_count_wrong, CONVFIND_ERR_INVALID_RANK, "strides has 3 values, expected 2"},
    {"strides count > capacity", base_conv, strides_count_huge, CONVFIND_ERR_INVALID_RANK, "strides.count = 7"},
    {"dilations count < 0", base_conv, dilations_count_negative, CONVFIND_ERR_INVALID_RANK, "dilations.count = -1"},
    {"pads count", base_conv, pads_count_wrong, CONVFIND_ERR_INVALID_RANK, "pads has 2 values, expected 4"},
    {"kernel_shape count", base_conv, kernel_shape_count_wrong, CONVFIND_ERR_INVALID_RANK, "kernel_shape has 1 values"},
    {"output_shape count", base_ct, output_shape_count_wrong, CONVFIND_ERR_INVALID_RANK, "output_shape has 3 values, expected 1"},
    {"output_padding count", base_ct, output_padding_count_wrong, CONVFIND_ERR_INVALID_RANK, "output_padding has 2 values"},

    {"N = 0", base_conv, n_zero, CONVFIND_ERR_INVALID_SHAPE, "x_dims[0] = 0"},
    {"spatial < 0", base_conv, spatial_negative, CONVFIND_ERR_INVALID_SHAPE, "x_dims[3] = -5"},
    {"W dim 0", base_conv, w_dim_zero, CONVFIND_ERR_INVALID_SHAPE, "w_dims[2] = 0"},
    {"C % group", base_conv, c_not_divisible, CONVFIND_ERR_INVALID_SHAPE, "X channels 6 not divisible by group 4"},
    {"M % group", base_conv, m_not_divisible, CONVFIND_ERR_INVALID_SHAPE, "w_dims[0] = 5 not divisible by group 2"},
    {"W channels", base_conv, w_channels_wrong, CONVFIND_ERR_INVALID_SHAPE, "w_dims[1] = 2 but X channels 6 / group 2 = 3"},
    {"ct W channels", base_ct, ct_w_channels_wrong, CONVFIND_ERR_INVALID_SHAPE, "w_dims[0] = 5 must equal X channels 4"},
    {"ct C % group", base_ct, ct_c_not_divisible, CONVFIND_ERR_INVALID_SHAPE, "X channels 5 not divisible by group 2"},
    {"kernel_shape", base_conv, kernel_shape_mismatch, CONVFIND_ERR_INVALID_SHAPE, "kernel_shape[1] = 2 does not match"},
    {"output empty", base_conv, output_empty, CONVFIND_ERR_INVALID_SHAPE, "padded input 2"},
    {"output empty dilated", base_conv, output_empty_dilated, CONVFIND_ERR_INVALID_SHAPE, "kernel extent 11"},
    {"ct output empty", base_ct, ct_output_empty, CONVFIND_ERR_INVALID_SHAPE, "minus pads 6,5"},

    {"pads < 0", base_conv, pads_negative, CONVFIND_ERR_INVALID_ATTRIBUTE, "pads[3] = -1 is negative"},
    {"ct pads < 0", base_ct, ct_pads_negative, CONVFIND_ERR_INVALID_ATTRIBUTE, "pads[0] = -1 is negative"},
    {"stride 0", base_conv, stride_zero, CONVFIND_ERR_INVALID_ATTRIBUTE, "strides[1] = 0"},
    {"stride < 0", base_conv, stride_negative, CONVFIND_ERR_INVALID_ATTRIBUTE, "strides[0] = -2"},
    {"dilation 0", base_conv, dilation_zero, CONVFIND_ERR_INVALID_ATTRIBUTE, "dilations[0] = 0"},
    {"group 0", base_conv, group_zero, CONVFIND_ERR_INVALID_ATTRIBUTE, "group = 0"},
    {"group < 0", base_conv, group_negative, CONVFIND_ERR_INVALID_ATTRIBUTE, "group = -3"},
    {"conv output_padding", base_conv, output_padding_on_conv, CONVFIND_ERR_INVALID_ATTRIBUTE, "output_padding (2 values) is a ConvTranspose attribute"},
    {"conv output_shape", base_conv, output_shape_on_conv, CONVFIND_ERR_INVALID_ATTRIBUTE, "output_shape (2 values) is a ConvTranspose attribute"},
    {"pads + auto_pad", base_conv, pads_with_auto_pad, CONVFIND_ERR_INVALID_ATTRIBUTE, "auto_pad = SAME_UPPER"},
    {"ct pads + VALID", base_ct, ct_pads_with_valid, CONVFIND_ERR_INVALID_ATTRIBUTE, "auto_pad = VALID"},
    {"output_padding >= stride", base_ct, output_padding_too_big, CONVFIND_ERR_INVALID_ATTRIBUTE, "output_padding[0] = 2 must be smaller than stride 2 or dilation 1"},
    {"output_padding >= dilation", base_ct, output_padding_too_big_dilated, CONVFIND_ERR_INVALID_ATTRIBUTE, "output_padding[0] = 3 must be smaller than stride 2 or dilation 3"},
    {"output_padding < 0", base_ct, output_padding_negative, CONVFIND_ERR_INVALID_ATTRIBUTE, "output_padding[0] = -1 is negative"},
    {"output_shape 0", base_ct, output_shape_zero, CONVFIND_ERR_INVALID_ATTRIBUTE, "output_shape[0] = 0 must be positive"},
    {"output_shape unreachable", base_ct, output_shape_unreachable, CONVFIND_ERR_INVALID_ATTRIBUTE, "output_shape[0] = 13 cannot be produced by input size 5"},
    {"output_shape unreachable VALID", base_ct, output_shape_unreachable_valid, CONVFIND_ERR_INVALID_ATTRIBUTE, "= 11 by at most stride - 1 = 1"},
    {"leaky alpha NaN", base_conv, leaky_alpha_nan, CONVFIND_ERR_INVALID_ATTRIBUTE, "leaky_relu: alpha is NaN"},
    {"hard_sigmoid beta NaN", base_conv, hard_sigmoid_beta_nan, CONVFIND_ERR_INVALID_ATTRIBUTE, "hard_sigmoid: beta is NaN"},
    {"clip min > max", base_conv, clip_min_gt_max, CONVFIND_ERR_INVALID_ATTRIBUTE, "min (alpha) 6 > max (beta) 0"},
    {"clip NaN", base_conv, clip_nan, CONVFIND_ERR_INVALID_ATTRIBUTE, "clip: alpha is NaN"},

    {"X elems", base_conv, x_elems_overflow, CONVFIND_ERR_OVERFLOW, "X size"},
    {"Y elems", base_conv, y_elems_overflow, CONVFIND_ERR_OVERFLOW, "Y size"},
    {"huge pads", base_conv, huge_pads, CONVFIND_ERR_OVERFLOW, "padded input size"},
    {"huge dilation", base_conv, huge_dilation, CONVFIND_ERR_OVERFLOW, "dilated kernel extent"},
    {"huge dilation SAME", base_conv, huge_dilation_same, CONVFIND_ERR_OVERFLOW, "SAME padding"},
    {"ct huge stride", base_ct, ct_huge_stride, CONVFIND_ERR_OVERFLOW, "stride * (in - 1)"},
    {"ct huge output_padding", base_ct, ct_huge_output_padding, CONVFIND_ERR_OVERFLOW, "output_padding"},
    {"ct huge group", base_ct, ct_huge_group, CONVFIND_ERR_OVERFLOW, "* group"},
};

static void test_bases_are_valid(void **state)
{
    (void)state;
    void (*bases[])(convfind_conv_desc *) = {base_conv, base_ct};
    for (size_t i = 0; i < 2; i++) {
        convfind_conv_desc d;
        bases[i](&d);
        convfind_problem *p = NULL;
        assert_int_equal(convfind_problem_create(&d, &p), CONVFIND_OK);
        assert_string_equal(convfind_last_error(), "");
        convfind_problem_destroy(p);
    }
}

static void test_invalid_table(void **state)
{
    (void)state;
    assert_true(sizeof cases / sizeof cases[0] >= 40);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const invalid_case *c = &cases[i];
        convfind_conv_desc d;
        c->base(&d);
        c->mutate(&d);
        convfind_problem *p = (convfind_problem *)&d; /* must be overwritten with NULL */
        convfind_status st = convfind_problem_create(&d, &p);
        const char *msg = convfind_last_error();
        if (st != c->want)
            fail_msg("row '%s': status %s, want %s (message: %s)", c->name,
                     convfind_status_name(st), convfind_status_name(c->want), msg);
        if (strstr(msg, c->message) == NULL)
            fail_msg("row '%s': message '%s' lacks '%s'", c->name, msg, c->message);
        if (p != NULL)
            fail_msg("row '%s': *out not NULL after failure", c->name);
    }
}

static void test_null_pointers(void **state)
{
    (void)state;
    convfind_conv_desc d;
    base_conv(&d);
    convfind_problem *p = (convfind_problem *)&d;
    assert_int_equal(convfind_problem_create(NULL, &p), CONVFIND_ERR_NULL_POINTER);
    assert_null(p);
    assert_non_null(strstr(convfind_last_error(), "desc is NULL"));
    assert_int_equal(convfind_problem_create(&d, NULL), CONVFIND_ERR_NULL_POINTER);
    assert_non_null(strstr(convfind_last_error(), "out is NULL"));
}

/* A failure's message is replaced by the next successful call's empty one. */
static void test_error_cleared_on_success(void **state)
{
    (void)state;
    convfind_conv_desc d;
    base_conv(&d);
    d.group = 0;
    convfind_problem *p = NULL;
    assert_int_equal(convfind_problem_create(&d, &p), CONVFIND_ERR_INVALID_ATTRIBUTE);
    assert_string_not_equal(convfind_last_error(), "");
    d.group = 2;
    assert_int_equal(convfind_problem_create(&d, &p), CONVFIND_OK);
    assert_string_equal(convfind_last_error(), "");
    convfind_problem_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bases_are_valid),
        cmocka_unit_test(test_invalid_table),
        cmocka_unit_test(test_null_pointers),
        cmocka_unit_test(test_error_cleared_on_success),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
