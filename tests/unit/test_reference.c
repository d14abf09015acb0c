/*
 * test_reference.c - unit tests of the reference algorithm "cpu.reference" and of the
 * shared epilogue.
 *
 * Expected values come from hand computation or from the naive loops below, which are
 * written independently of ref_conv.c: Conv is checked against a loop over the padded
 * input, ConvTranspose against a scatter (every input adds its contribution to the
 * outputs it reaches), the opposite of the gather the reference performs.  The algorithm
 * is called directly, below the plan layer, so these tests pin down the kernel alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "algo/algo.h"
#include "cpu/epilogue.h"
#include "problem/problem.h"
#include "util/threadpool.h"

extern const cf_algo cf_algo_cpu_reference;

/* A problem in the test's own terms: three spatial axes, unused ones of size 1. */
typedef struct tshape {
    convfind_op op;
    int nsp;
    int64_t n, c, m, g;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], opad[3];
} tshape;

static int64_t prod3(const int64_t v[3]) { return v[0] * v[1] * v[2]; }

/* The output dims by the ONNX formulas, computed here independently of problem.c. */
static void expected_out(const tshape *t, int64_t out[3])
{
    for (int a = 0; a < 3; a++) {
        int64_t ext = (t->k[a] - 1) * t->d[a] + 1;
        if (t->op == CONVFIND_OP_CONV)
            out[a] = (t->in[a] + t->pb[a] + t->pe[a] - ext) / t->s[a] + 1;
        else
            out[a] = t->s[a] * (t->in[a] - 1) + t->opad[a] + ext - t->pb[a] - t->pe[a];
    }
}

static void fill_desc(const tshape *t, convfind_layout layout, convfind_conv_desc *d)
{
    convfind_conv_desc_init(d);
    d->op = t->op;
    d->layout = layout;
    d->x_rank = d->w_rank = t->nsp + 2;
    d->x_dims[0] = t->n;
    d->x_dims[1] = t->c;
    d->w_dims[0] = t->op == CONVFIND_OP_CONV ? t->m : t->c;
    d->w_dims[1] = t->op == CONVFIND_OP_CONV ? t->c / t->g : t->m / t->g;
    d->group = t->g;
    d->strides.count = d->dilations.count = t->nsp;
    d->pads.count = 2 * t->nsp;
    for (int a = 0; a < t->nsp; a++) {
        d->x_dims[2 + a] = t->in[a];
        d->w_dims[2 + a] = t->k[a];
        d->strides.v[a] = t->s[a];
        d->dilations.v[a] = t->d[a];
        d->pads.v[a] = t->pb[a];
        d->pads.v[t->nsp + a] = t->pe[a];
    }
    if (t->op == CONVFIND_OP_CONV_TRANSPOSE) {
        d->output_padding.count = t->nsp;
        for (int a = 0; a < t->nsp; a++)
            d->output_padding.v[a] = t->opad[a];
    }
}

static convfind_problem *make_problem(const convfind_conv_desc *d)
{
    convfind_problem *p = NULL;
    convfind_status st = convfind_problem_create(d, &p);
    if (st != CONVFIND_OK)
        print_error("convfind_problem_create: %s: %s\n", convfind_status_name(st),
                    convfind_last_error());
    assert_int_equal(st, CONVFIND_OK);
    assert_non_null(p);
    return p;
}

/* Runs the reference algorithm directly; y must hold p->y_elems floats. */
static void run_ref(const cf_problem *p, const float *x, const float *w, const float *b,
                    const float *z, float *y, cf_threadpool *pool)
{
    assert_true(cf_algo_cpu_reference.applicable(p));
    cf_exec_args a = {.x = x, .w = w, .b = b, .z = z, .y = y, .pool = pool};
    assert_int_equal(cf_algo_cpu_reference.execute(p, NULL, &a), CONVFIND_OK);
}

/* Conv by zero-padding the input into a bigger buffer, then a plain valid correlation. */
static void naive_conv(const tshape *t, const float *x, const float *w, const float *b,
                       float *y)
{
    int64_t out[3], pin[3];
    expected_out(t, out);
    for (int a = 0; a < 3; a++)
        pin[a] = t->in[a] + t->pb[a] + t->pe[a];
    int64_t cg = t->c / t->g, mg = t->m / t->g;
    float *xp = calloc((size_t)(t->n * t->c * prod3(pin)), sizeof *xp);
    assert_non_null(xp);
    for (int64_t nc = 0; nc < t->n * t->c; nc++)
        for (int64_t i0 = 0; i0 < t->in[0]; i0++)
            for (int64_t i1 = 0; i1 < t->in[1]; i1++)
                for (int64_t i2 = 0; i2 < t->in[2]; i2++)
                    xp[((nc * pin[0] + i0 + t->pb[0]) * pin[1] + i1 + t->pb[1]) * pin[2] + i2 +
                       t->pb[2]] = x[((nc * t->in[0] + i0) * t->in[1] + i1) * t->in[2] + i2];
    for (int64_t n = 0; n < t->n; n++)
    for (int64_t m = 0; m < t->m; m++)
    for (int64_t o0 = 0; o0 < out[0]; o0++)
    for (int64_t o1 = 0; o1 < out[1]; o1++)
    for (int64_t o2 = 0; o2 < out[2]; o2++) {
        double s = b ? b[m] : 0.0;
        for (int64_t ci = 0; ci < cg; ci++) {
            int64_t c = (m / mg) * cg + ci;
            for (int64_t k0 = 0; k0 < t->k[0]; k0++)
            for (int64_t k1 = 0; k1 < t->k[1]; k1++)
            for (int64_t k2 = 0; k2 < t->k[2]; k2++) {
                int64_t p0 = o0 * t->s[0] + k0 * t->d[0];
                int64_t p1 = o1 * t->s[1] + k1 * t->d[1];
                int64_t p2 = o2 * t->s[2] + k2 * t->d[2];
                s += xp[(((n * t->c + c) * pin[0] + p0) * pin[1] + p1) * pin[2] + p2] *
                     (double)w[(((m * cg + ci) * t->k[0] + k0) * t->k[1] + k1) * t->k[2] + k2];
            }
        }
        y[(((n * t->m + m) * out[0] + o0) * out[1] + o1) * out[2] + o2] = (float)s;
    }
    free(xp);
}

/* ConvTranspose as the scatter that defines it: input i with tap k lands on
 * o = i * stride + k * dilation - pad_begin. */
static void naive_conv_transpose(const tshape *t, const float *x, const float *w,
                                 const float *b, float *y)
{
    int64_t out[3];
    expected_out(t, out);
    int64_t cg = t->c / t->g, mg = t->m / t->g, osp = prod3(out);
    double *acc = calloc((size_t)(t->n * t->m * osp), sizeof *acc);
    assert_non_null(acc);
    for (int64_t n = 0; n < t->n; n++)
    for (int64_t c = 0; c < t->c; c++)
    for (int64_t i0 = 0; i0 < t->in[0]; i0++)
    for (int64_t i1 = 0; i1 < t->in[1]; i1++)
    for (int64_t i2 = 0; i2 < t->in[2]; i2++) {
        double xv = x[(((n * t->c + c) * t->in[0] + i0) * t->in[1] + i1) * t->in[2] + i2];
        for (int64_t mo = 0; mo < mg; mo++)
        for (int64_t k0 = 0; k0 < t->k[0]; k0++)
        for (int64_t k1 = 0; k1 < t->k[1]; k1++)
        for (int64_t k2 = 0; k2 < t->k[2]; k2++) {
            int64_t o0 = i0 * t->s[0] + k0 * t->d[0] - t->pb[0];
            int64_t o1 = i1 * t->s[1] + k1 * t->d[1] - t->pb[1];
            int64_t o2 = i2 * t->s[2] + k2 * t->d[2] - t->pb[2];
            if (o0 < 0 || o0 >= out[0] || o1 < 0 || o1 >= out[1] || o2 < 0 || o2 >= out[2])
                continue;
            int64_t m = (c / cg) * mg + mo;
            acc[(((n * t->m + m) * out[0] + o0) * out[1] + o1) * out[2] + o2] +=
                xv * w[(((c * mg + mo) * t->k[0] + k0) * t->k[1] + k1) * t->k[2] + k2];
        }
    }
    for (int64_t i = 0; i < t->n * t->m * osp; i++)
        y[i] = (float)(acc[i] + (b ? b[(i / osp) % t->m] : 0.0));
    free(acc);
}

/* Deterministic values in [-1, 1) that are not all equal. */
static float *pattern(size_t count, unsigned seed)
{
    float *v = malloc(count * sizeof *v);
    assert_non_null(v);
    uint32_t s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < count; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    return v;
}

static void assert_close(const float *got, const float *exp, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        float tol = 1e-5f + 1e-5f * fabsf(exp[i]);
        if (!(fabsf(got[i] - exp[i]) <= tol))
            fail_msg("element %zu: got %.9g, expected %.9g", i, got[i], exp[i]);
    }
}

/* Runs `t` (NCHW, with bias) through the reference and the matching naive loop. */
static void check_against_naive(const tshape *t, unsigned seed)
{
    convfind_conv_desc d;
    fill_desc(t, CONVFIND_LAYOUT_NCHW, &d);
    d.has_bias = 1;
    convfind_problem *p = make_problem(&d);
    int64_t out[3];
    expected_out(t, out);
    for (int a = 0; a < 3; a++)
        assert_int_equal(p->out[a], out[a]);
    float *x = pattern(p->x_elems, seed), *w = pattern(p->w_elems, seed + 1);
    float *b = pattern((size_t)t->m, seed + 2);
    float *y = malloc(p->y_elems * sizeof *y), *e = malloc(p->y_elems * sizeof *e);
    assert_true(y && e);
    run_ref(p, x, w, b, NULL, y, NULL);
    if (t->op == CONVFIND_OP_CONV)
        naive_conv(t, x, w, b, e);
    else
        naive_conv_transpose(t, x, w, b, e);
    assert_close(y, e, p->y_elems);
    free(x), free(w), free(b), free(y), free(e);
    convfind_problem_destroy(p);
}

static void test_conv_1d_by_hand(void **state)
{
    (void)state;
    tshape t = {CONVFIND_OP_CONV, 1, 1, 1, 1, 1, {5, 1, 1}, {3, 1, 1}, {1, 1, 1}, {1, 1, 1},
                {1, 0, 0}, {1, 0, 0}, {0, 0, 0}};
    convfind_conv_desc d;
    fill_desc(&t, CONVFIND_LAYOUT_NCHW, &d);
    convfind_problem *p = make_problem(&d);
    const float x[5] = {1, 2, 3, 4, 5}, w[3] = {1, 0, -1};
    const float e[5] = {-2, -2, -2, -2, 4}; /* x[o-1] - x[o+1], zero outside */
    float y[5];
    assert_int_equal(p->y_elems, 5);
    run_ref(p, x, w, NULL, NULL, y, NULL);
    assert_close(y, e, 5);
    convfind_problem_destroy(p);
}

static void test_conv_2d_strided_dilated_uneven_pads(void **state)
{
    (void)state;
    /* 2-D, strides (2, 1), dilations (2, 3), pads begin (2, 0) end (1, 3). */
    tshape t = {CONVFIND_OP_CONV, 2, 2, 3, 4, 1, {7, 6, 1}, {2, 3, 1}, {2, 1, 1}, {2, 3, 1},
                {2, 0, 0}, {1, 3, 0}, {0, 0, 0}};
    check_against_naive(&t, 11);
}

static void test_conv_3d(void **state)
{
    (void)state;
    tshape t = {CONVFIND_OP_CONV, 3, 1, 2, 3, 1, {4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {1, 1, 2},
                {0, 1, 1}, {1, 0, 2}, {0, 0, 0}};
    check_against_naive(&t, 21);
}

static void test_conv_grouped_with_multiplier(void **state)
{
    (void)state;
    /* group 2, 4 input channels, 6 outputs: 2 inputs and 3 outputs per group. */
    tshape t = {CONVFIND_OP_CONV, 2, 2, 4, 6, 2, {5, 5, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 1},
                {1, 1, 0}, {1, 1, 0}, {0, 0, 0}};
    check_against_naive(&t, 31);
    /* depthwise with channel multiplier 2 */
    tshape dw = {CONVFIND_OP_CONV, 2, 1, 3, 6, 3, {4, 6, 1}, {3, 2, 1}, {2, 1, 1}, {1, 2, 1},
                 {0, 1, 0}, {2, 0, 0}, {0, 0, 0}};
    check_against_naive(&dw, 32);
}

static void test_conv_transpose_1d_by_hand(void **state)
{
    (void)state;
    /* stride 2, kernel 2, output_padding 1: length 2*(3-1) + 2 + 1 = 7. */
    tshape t = {CONVFIND_OP_CONV_TRANSPOSE, 1, 1, 1, 1, 1, {3, 1, 1}, {2, 1, 1}, {2, 1, 1},
                {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, {1, 0, 0}};
    convfind_conv_desc d;
    fill_desc(&t, CONVFIND_LAYOUT_NCHW, &d);
    d.has_bias = 1;
    convfind_problem *p = make_problem(&d);
    const float x[3] = {1, 2, 3}, w[2] = {1, 10}, b[1] = {0.5f};
    const float e[7] = {1.5f, 10.5f, 2.5f, 20.5f, 3.5f, 30.5f, 0.5f};
    float y[7];
    assert_int_equal(p->y_elems, 7);
    run_ref(p, x, w, b, NULL, y, NULL);
    assert_close(y, e, 7);
    convfind_problem_destroy(p);
}

static void test_conv_transpose_2d_output_padding_dilation(void **state)
{
    (void)state;
    tshape t = {CONVFIND_OP_CONV_TRANSPOSE, 2, 2, 3, 2, 1, {3, 4, 1}, {3, 2, 1}, {2, 3, 1},
                {2, 2, 1}, {1, 0, 0}, {2, 1, 0}, {1, 2, 0}};
    check_against_naive(&t, 41);
}

static void test_conv_transpose_grouped_3d(void **state)
{
    (void)state;
    tshape t = {CONVFIND_OP_CONV_TRANSPOSE, 3, 1, 4, 6, 2, {2, 3, 2}, {2, 2, 3}, {2, 1, 2},
                {1, 2, 1}, {0, 1, 0}, {1, 0, 2}, {1, 0, 1}};
    check_against_naive(&t, 51);
}

/* output_shape 14 from an input of 3 with kernel 3, stride 4 (natural length 11) implies
 * total padding -3; SAME_LOWER gives the begin the larger part:
 * begin = -3 - floor(-3 / 2) = -1, end = floor(-3 / 2) = -2 (C's truncating division
 * would give -2 and -1).  The scatter with those pads puts input i, tap k at
 * o = 4i + k + 1, leaving positions 0, 4, 8, 12 and 13 empty. */
static void test_conv_transpose_negative_pads_from_output_shape(void **state)
{
    (void)state;
    tshape t = {CONVFIND_OP_CONV_TRANSPOSE, 1, 1, 1, 1, 1, {3, 1, 1}, {3, 1, 1}, {4, 1, 1},
                {1, 1, 1}, {-1, 0, 0}, {-2, 0, 0}, {0, 0, 0}};
    convfind_conv_desc d;
    fill_desc(&t, CONVFIND_LAYOUT_NCHW, &d);
    d.pads.count = 0;
    d.auto_pad = CONVFIND_AUTO_PAD_SAME_LOWER;
    d.output_shape.count = 1;
    d.output_shape.v[0] = 14;
    convfind_problem *p = make_problem(&d);
    assert_int_equal(p->out[0], 14);
    assert_int_equal(p->pad_begin[0], -1);
    assert_int_equal(p->pad_end[0], -2);
    const float x[3] = {1, 2, 4}, w[3] = {1, 10, 100};
    const float e[14] = {0, 1, 10, 100, 0, 2, 20, 200, 0, 4, 40, 400, 0, 0};
    float y[14], n[14];
    run_ref(p, x, w, NULL, NULL, y, NULL);
    assert_close(y, e, 14);
    naive_conv_transpose(&t, x, w, NULL, n);
    assert_close(n, e, 14);
    convfind_problem_destroy(p);
}

/* Storage index of logical (n, c, s) in a tensor of `ch` channels and `sp` positions. */
static size_t at(convfind_layout l, int64_t ch, int64_t sp, int64_t n, int64_t c, int64_t s)
{
    return (size_t)(l == CONVFIND_LAYOUT_NCHW ? (n * ch + c) * sp + s : (n * sp + s) * ch + c);
}

static void to_layout(convfind_layout l, int64_t n, int64_t ch, int64_t sp, const float *nchw,
                      float *dst)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < ch; c++)
            for (int64_t s = 0; s < sp; s++)
                dst[at(l, ch, sp, i, c, s)] = nchw[at(CONVFIND_LAYOUT_NCHW, ch, sp, i, c, s)];
}

/* The same problem in NHWC gives NCHW's numbers, transposed, for both ops. */
static void test_nhwc_matches_nchw(void **state)
{
    (void)state;
    const tshape cases[2] = {
        {CONVFIND_OP_CONV, 2, 2, 4, 6, 2, {5, 4, 1}, {3, 2, 1}, {2, 1, 1}, {1, 2, 1},
         {1, 0, 0}, {0, 2, 0}, {0, 0, 0}},
        {CONVFIND_OP_CONV_TRANSPOSE, 3, 2, 3, 2, 1, {2, 3, 2}, {2, 2, 2}, {2, 1, 2},
         {1, 1, 2}, {0, 1, 1}, {1, 0, 0}, {1, 0, 1}},
    };
    for (int ci = 0; ci < 2; ci++) {
        const tshape *t = &cases[ci];
        convfind_conv_desc d;
        convfind_problem *p[2];
        for (int l = 0; l < 2; l++) {
            fill_desc(t, (convfind_layout)l, &d);
            d.has_bias = d.has_residual = 1;
            d.activation = CONVFIND_ACT_LEAKY_RELU;
            d.alpha = 0.25f;
            p[l] = make_problem(&d);
        }
        size_t ny = p[0]->y_elems;
        int64_t isp = p[0]->in_sp, osp = p[0]->out_sp;
        float *x = pattern(p[0]->x_elems, 60 + ci), *w = pattern(p[0]->w_elems, 61 + ci);
        float *b = pattern((size_t)t->m, 62 + ci), *z = pattern(ny, 63 + ci);
        float *xh = malloc(p[0]->x_elems * sizeof *xh), *zh = malloc(ny * sizeof *zh);
        float *y = malloc(ny * sizeof *y), *yh = malloc(ny * sizeof *yh);
        float *back = malloc(ny * sizeof *back);
        assert_true(xh && zh && y && yh && back);
        to_layout(CONVFIND_LAYOUT_NHWC, t->n, t->c, isp, x, xh);
        to_layout(CONVFIND_LAYOUT_NHWC, t->n, t->m, osp, z, zh);
        run_ref(p[0], x, w, b, z, y, NULL);
        run_ref(p[1], xh, w, b, zh, yh, NULL);
        for (int64_t n = 0; n < t->n; n++)
            for (int64_t m = 0; m < t->m; m++)
                for (int64_t s = 0; s < osp; s++)
                    back[at(CONVFIND_LAYOUT_NCHW, t->m, osp, n, m, s)] =
                        yh[at(CONVFIND_LAYOUT_NHWC, t->m, osp, n, m, s)];
        assert_close(back, y, ny);
        free(x), free(w), free(b), free(z), free(xh), free(zh), free(y), free(yh), free(back);
        convfind_problem_destroy(p[0]);
        convfind_problem_destroy(p[1]);
    }
}

/* Each activation, written out here from its definition. */
static float expected_act(convfind_activation act, float v, float alpha, float beta)
{
    switch (act) {
    case CONVFIND_ACT_NONE: return v;
    case CONVFIND_ACT_RELU: return fmaxf(v, 0.0f);
    case CONVFIND_ACT_LEAKY_RELU: return v < 0.0f ? alpha * v : v;
    case CONVFIND_ACT_CLIP: return fminf(fmaxf(v, alpha), beta);
    case CONVFIND_ACT_SIGMOID: return (float)(1.0 / (1.0 + exp(-(double)v)));
    case CONVFIND_ACT_TANH: return (float)tanh((double)v);
    case CONVFIND_ACT_HARD_SIGMOID: return fminf(fmaxf(alpha * v + beta, 0.0f), 1.0f);
    }
    return NAN;
}

/* A 1x1 conv with one input channel computes y = w[m] * x + b[m] + z, so the epilogue's
 * input is known exactly; x spans negative and positive values to reach every branch. */
static void test_bias_residual_every_activation(void **state)
{
    (void)state;
    static const struct { convfind_activation act; float alpha, beta; } acts[] = {
        {CONVFIND_ACT_NONE, 0, 0},         {CONVFIND_ACT_RELU, 0, 0},
        {CONVFIND_ACT_LEAKY_RELU, 0.1f, 0}, {CONVFIND_ACT_CLIP, -0.5f, 1.5f},
        {CONVFIND_ACT_SIGMOID, 0, 0},      {CONVFIND_ACT_TANH, 0, 0},
        {CONVFIND_ACT_HARD_SIGMOID, 0.2f, 0.5f},
    };
    tshape t = {CONVFIND_OP_CONV, 2, 1, 1, 2, 1, {2, 4, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1},
                {0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
    const float x[8] = {-4, -2, -1, -0.25f, 0, 0.5f, 2, 5};
    const float w[2] = {1, -0.5f}, b[2] = {0.25f, -0.125f};
    const float z[16] = {0, 1, -1, 0.5f, 0, -0.5f, 2, -3, 1, 0, 0, -1, 0.25f, 0.5f, 0.75f, -2};
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
        convfind_conv_desc d;
        fill_desc(&t, CONVFIND_LAYOUT_NCHW, &d);
        d.has_bias = d.has_residual = 1;
        d.activation = acts[i].act;
        d.alpha = acts[i].alpha;
        d.beta = acts[i].beta;
        convfind_problem *p = make_problem(&d);
        float y[16], e[16];
        for (int m = 0; m < 2; m++)
            for (int s = 0; s < 8; s++)
                e[m * 8 + s] = expected_act(acts[i].act, w[m] * x[s] + b[m] + z[m * 8 + s],
                                            acts[i].alpha, acts[i].beta);
        run_ref(p, x, w, b, z, y, NULL);
        assert_close(y, e, 16);
        convfind_problem_destroy(p);
    }
}

/* The row helpers agree with the per-value rule for both row shapes. */
static void test_epilogue_rows(void **state)
{
    (void)state;
    cf_problem p;
    memset(&p, 0, sizeof p);
    p.act = CONVFIND_ACT_CLIP;
    p.alpha = -1.0f;
    p.beta = 2.0f;
    float y[4] = {-3, 0.5f, 1, 4}, yp[4] = {-3, 0.5f, 1, 4};
    const float z[4] = {0, 1, 1, -1}, b[4] = {0.5f, 0, -0.5f, 1};
    cf_epilogue_channel_run(&p, y, 4, 0.5f, z);
    const float ec[4] = {-1, 2, 2, 2};
    assert_close(y, ec, 4);
    cf_epilogue_pixel_run(&p, yp, 4, b, NULL);
    const float ep[4] = {-1, 0.5f, 0.5f, 2};
    assert_close(yp, ep, 4);
    cf_epilogue_pixel_run(&p, yp, 4, NULL, z);
    const float ez[4] = {-1, 1.5f, 1.5f, 1};
    assert_close(yp, ez, 4);
}

/* Splitting the work over threads changes nothing, bit for bit. */
static void test_threads_do_not_change_result(void **state)
{
    (void)state;
    tshape t = {CONVFIND_OP_CONV_TRANSPOSE, 2, 3, 4, 4, 2, {4, 5, 1}, {3, 3, 1}, {2, 2, 1},
                {1, 1, 1}, {1, 1, 0}, {1, 0, 0}, {1, 0, 0}};
    convfind_conv_desc d;
    fill_desc(&t, CONVFIND_LAYOUT_NHWC, &d);
    convfind_problem *p = make_problem(&d);
    cf_threadpool *pool = NULL;
    assert_int_equal(cf_threadpool_create(3, &pool), CONVFIND_OK);
    float *x = pattern(p->x_elems, 71), *w = pattern(p->w_elems, 72);
    float *y1 = malloc(p->y_elems * sizeof *y1), *y3 = malloc(p->y_elems * sizeof *y3);
    assert_true(y1 && y3);
    run_ref(p, x, w, NULL, NULL, y1, NULL);
    run_ref(p, x, w, NULL, NULL, y3, pool);
    assert_memory_equal(y1, y3, p->y_elems * sizeof *y1);
    free(x), free(w), free(y1), free(y3);
    cf_threadpool_destroy(pool);
    convfind_problem_destroy(p);
}

/* Random problems of both ops against the naive loops: 1-D to 3-D, groups with
 * multipliers, strides, dilations, uneven pads and output padding, and 1-D rows of up to
 * 1300 outputs, so that the reference's chunks of the innermost axis (512 outputs) end
 * inside rows and taps start their runs in later chunks, and up to 19 output channels per
 * group, so that its blocks of 8 output channels come whole and partial.  Shapes the problem validation
 * refuses are drawn again. */
static void test_random_against_naive(void **state)
{
    (void)state;
    uint32_t r = 2026;
#define RND(lo, hi) ((r = r * 1664525u + 1013904223u), (int64_t)(lo) + (int64_t)((r >> 8) % (uint32_t)((hi) - (lo) + 1)))
    int tested = 0;
    for (int it = 0; tested < 300 && it < 3000; it++) {
        tshape t;
        memset(&t, 0, sizeof t);
        t.op = RND(0, 1) ? CONVFIND_OP_CONV : CONVFIND_OP_CONV_TRANSPOSE;
        t.nsp = (int)RND(1, 3);
        t.n = RND(1, 2);
        t.g = RND(1, 3);
        t.c = t.g * RND(1, 3);
        t.m = t.g * RND(1, 19);
        for (int a = 0; a < 3; a++) {
            bool real = a < t.nsp;
            t.in[a] = real ? RND(1, t.nsp == 1 ? 1300 : 9) : 1;
            t.k[a] = real ? RND(1, 4) : 1;
            t.s[a] = real ? RND(1, 3) : 1;
            t.d[a] = real ? RND(1, 2) : 1;
            t.pb[a] = real ? RND(0, 3) : 0;
            t.pe[a] = real ? RND(0, 3) : 0;
            t.opad[a] = real && t.op == CONVFIND_OP_CONV_TRANSPOSE ? RND(0, t.s[a] - 1) : 0;
        }
        int64_t out[3];
        expected_out(&t, out);
        if (out[0] < 1 || out[1] < 1 || out[2] < 1)
            continue;
        convfind_conv_desc d;
        fill_desc(&t, CONVFIND_LAYOUT_NCHW, &d);
        convfind_problem *p = NULL;
        if (convfind_problem_create(&d, &p) != CONVFIND_OK)
            continue;
        convfind_problem_destroy(p);
        check_against_naive(&t, (unsigned)it);
        tested++;
    }
#undef RND
    assert_int_equal(tested, 300);
}

static void test_applicability_and_workspace(void **state)
{
    (void)state;
    tshape t = {CONVFIND_OP_CONV, 1, 1, 1, 1, 1, {4, 1, 1}, {2, 1, 1}, {1, 1, 1}, {1, 1, 1},
                {0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
    convfind_conv_desc d;
    fill_desc(&t, CONVFIND_LAYOUT_NCHW, &d);
    convfind_problem *p = make_problem(&d);
    size_t bytes = 123;
    assert_int_equal(cf_algo_cpu_reference.workspace(p, &bytes), CONVFIND_OK);
    assert_int_equal(bytes, 0);
    assert_string_equal(cf_algo_cpu_reference.name, "cpu.reference");
    convfind_problem_destroy(p);
    d.dtype = CONVFIND_DTYPE_F16;
    p = make_problem(&d);
    assert_false(cf_algo_cpu_reference.applicable(p));
    convfind_problem_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_1d_by_hand),
        cmocka_unit_test(test_conv_2d_strided_dilated_uneven_pads),
        cmocka_unit_test(test_conv_3d),
        cmocka_unit_test(test_conv_grouped_with_multiplier),
        cmocka_unit_test(test_conv_transpose_1d_by_hand),
        cmocka_unit_test(test_conv_transpose_2d_output_padding_dilation),
        cmocka_unit_test(test_conv_transpose_grouped_3d),
        cmocka_unit_test(test_conv_transpose_negative_pads_from_output_shape),
        cmocka_unit_test(test_nhwc_matches_nchw),
        cmocka_unit_test(test_bias_residual_every_activation),
        cmocka_unit_test(test_epilogue_rows),
        cmocka_unit_test(test_threads_do_not_change_result),
        cmocka_unit_test(test_random_against_naive),
        cmocka_unit_test(test_applicability_and_workspace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
