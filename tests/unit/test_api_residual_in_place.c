/*
 * test_api_residual_in_place.c - every CPU algorithm adds the residual in place: an
 * execution whose y is its z (the same buffer) writes exactly what one with separate
 * buffers writes (include/convfind.h, convfind_tensors).
 *
 * Why exact equality: an algorithm computes Y the same way whether or not y is z, so any
 * difference means it wrote part of Y before reading the Z under it (a GEMM that stores
 * a first K slice and adds Z with the last one, a ConvTranspose that scatters partial
 * sums into Y, a pass that uses Y as scratch).  The problems are chosen so that the
 * algorithms take those paths: reductions longer than one K slice (and than the
 * pixel-rows path's 1280), direct_blocked's reduction shares, Winograd tiles, 3-D
 * kernels, groups and depthwise, strided and padded ConvTranspose, NCHW and NHWC, in
 * strict and TF32 math (where cpu.winograd_f6x3 runs), each at every ISA level this
 * machine has, on two threads.  Each forced algorithm must take
 * at least one problem, so none goes unchecked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "convfind.h"
#include "cpu/isa.h"
#include "test_cache_util.h"

typedef struct shape {
    convfind_op op;
    convfind_layout layout;
    int nsp;          /* spatial rank */
    int64_t c, m, group;
    int64_t in, k;    /* every spatial axis */
    int64_t stride, pad;
} shape;

static const shape SHAPES[] = {
    /* 1x1: short and long reductions (K slices; the pixel-rows path past 1280) */
    {CONVFIND_OP_CONV, CONVFIND_LAYOUT_NCHW, 2, 24, 40, 1, 20, 1, 1, 0},
    {CONVFIND_OP_CONV, CONVFIND_LAYOUT_NCHW, 2, 700, 48, 1, 14, 1, 1, 0},
    {CONVFIND_OP_CONV, CONVFIND_LAYOUT_NCHW, 2, 1500, 40, 1, 7, 1, 1, 0},
    {CONVFIND_OP_CONV, CONVFIND_LAYOUT_NHWC, 2, 600, 36, 1, 12, 1, 1, 0},
    {CONVFIND_OP_CONV, CONVFIND_LAYOUT_NCHW, 2, 64, 32, 1, 15, 1, 2, 0},
    /* 3x3: Winograd, im2col with long reductions, direct_blocked's shares */
    {CONVFIND_OP_CONV, CONVFIND_LAYOUT_NCHW, 2, 64, 48, 1, 15, 3, 1, 1},
    {CONVFIND_OP_CONV, CONVFIND_LAYOUT_NCHW, 2, 300, 32, 1, 11, 3, 1, 1},
    {CONVFIND_OP_CONV, CONVFIND_LAYOUT_NHWC, 2, 96, 40, 1, 13, 3, 2, 1},
    {CONVFIND_OP_CONV, CONVFIND_LAYOUT_NCHW, 2, 40, 24, 2, 12, 3, 1, 1},
    {CONVFIND_OP_CONV, CONVFIND_LAYOUT_NCHW, 2, 48, 48, 48, 14, 3, 1, 1},
    {CONVFIND_OP_CONV, CONVFIND_LAYOUT_NHWC, 2, 48, 48, 48, 14, 3, 2, 1},
    /* wide kernels over few input channels (stems), 1-D and 3-D */
    {CONVFIND_OP_CONV, CONVFIND_LAYOUT_NCHW, 2, 3, 32, 1, 30, 7, 2, 3},
    {CONVFIND_OP_CONV, CONVFIND_LAYOUT_NCHW, 1, 64, 48, 1, 50, 5, 2, 2},
    {CONVFIND_OP_CONV, CONVFIND_LAYOUT_NCHW, 3, 24, 32, 1, 8, 3, 1, 1},
    /* ConvTranspose: 2x2 stride 2 (U-Net), 3x3 stride 2 with padding */
    {CONVFIND_OP_CONV_TRANSPOSE, CONVFIND_LAYOUT_NCHW, 2, 64, 32, 1, 9, 2, 2, 0},
    {CONVFIND_OP_CONV_TRANSPOSE, CONVFIND_LAYOUT_NCHW, 2, 48, 24, 1, 8, 3, 2, 1},
    {CONVFIND_OP_CONV_TRANSPOSE, CONVFIND_LAYOUT_NHWC, 2, 40, 32, 1, 7, 4, 2, 1},
};

#define N_SHAPES (sizeof SHAPES / sizeof SHAPES[0])

static convfind_problem *make_problem(const shape *s, convfind_math_mode math)
{
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.math_mode = math;
    d.op = s->op;
    d.layout = s->layout;
    d.x_rank = d.w_rank = 2 + s->nsp;
    d.x_dims[0] = 1;
    d.x_dims[1] = s->c;
    d.w_dims[0] = s->op == CONVFIND_OP_CONV ? s->m : s->c;
    d.w_dims[1] = s->op == CONVFIND_OP_CONV ? s->c / s->group : s->m / s->group;
    d.group = s->group;
    d.strides.count = s->nsp;
    d.pads.count = 2 * s->nsp;
    for (int a = 0; a < s->nsp; a++) {
        d.x_dims[2 + a] = s->in;
        d.w_dims[2 + a] = s->k;
        d.strides.v[a] = s->stride;
        d.pads.v[a] = d.pads.v[s->nsp + a] = s->pad;
    }
    d.has_bias = d.has_residual = 1;
    d.activation = CONVFIND_ACT_RELU;
    convfind_problem *p = NULL;
    assert_int_equal(convfind_problem_create(&d, &p), CONVFIND_OK);
    return p;
}

/* 1 when `algo` took the problem, after checking its in-place result on `d`. */
static int check_algo(convfind_context *ctx, const convfind_problem *p, const tu_data *d,
                      const char *algo)
{
    convfind_plan *plan = NULL;
    convfind_status st = convfind_plan_create_with_algorithm(ctx, p, algo, &plan);
    if (st == CONVFIND_ERR_UNSUPPORTED)
        return 0;
    assert_int_equal(st, CONVFIND_OK);
    float *yz = malloc(d->ny * sizeof *yz);
    assert_non_null(yz);
    memcpy(yz, d->z, d->ny * sizeof *yz);
    convfind_tensors apart = tu_tensors(d, p), in_place = apart;
    in_place.z = in_place.y = yz;
    assert_int_equal(convfind_execute(plan, &apart), CONVFIND_OK);
    assert_int_equal(convfind_execute(plan, &in_place), CONVFIND_OK);
    for (size_t i = 0; i < d->ny; i++)
        if (memcmp(&d->y[i], &yz[i], sizeof yz[i]) != 0) {
            char desc[256];
            convfind_problem_describe(p, desc, sizeof desc);
            fail_msg("%s at %s: y[%zu] = %.9g in place, %.9g apart\n  problem: %s", algo,
                     cf_isa_name(cf_isa_active()), i, yz[i], d->y[i], desc);
        }
    free(yz);
    convfind_plan_destroy(plan);
    return 1;
}

static void test_every_algorithm_in_place(void **state)
{
    (void)state;
    const int n_algos = convfind_algorithm_count();
    int *took = calloc((size_t)n_algos, sizeof *took);
    assert_non_null(took);
    for (int level = 0; level <= (int)cf_isa_machine(); level++) {
        assert_int_equal(cf_isa_force((cf_isa)level), CONVFIND_OK);
        convfind_context_options o;
        convfind_context_options_init(&o);
        o.num_threads = 2;
        o.find_policy = CONVFIND_FIND_HEURISTIC;
        o.db_path = ":memory:";
        convfind_context *ctx = NULL;
        assert_int_equal(convfind_context_create(&o, &ctx), CONVFIND_OK);
        for (size_t s = 0; s < 2 * N_SHAPES; s++) {
            convfind_problem *p = make_problem(&SHAPES[s % N_SHAPES],
                                               s < N_SHAPES ? CONVFIND_MATH_STRICT
                                                            : CONVFIND_MATH_ALLOW_TF32);
            tu_data d;
            tu_data_init(&d, p, (unsigned)s + 1);
            for (int a = 0; a < n_algos; a++) {
                const char *algo = convfind_algorithm_name(a);
                if (strncmp(algo, "cpu.", 4) == 0)
                    took[a] += check_algo(ctx, p, &d, algo);
            }
            tu_data_free(&d);
            convfind_problem_destroy(p);
        }
        convfind_context_destroy(ctx);
        for (int a = 0; a < n_algos; a++)
            if (strncmp(convfind_algorithm_name(a), "cpu.", 4) == 0 && took[a] == 0)
                fail_msg("%s took none of the problems at %s: its in-place residual is "
                         "unchecked", convfind_algorithm_name(a), cf_isa_name(cf_isa_active()));
        memset(took, 0, (size_t)n_algos * sizeof *took);
    }
    cf_isa_unforce();
    free(took);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_algorithm_in_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
