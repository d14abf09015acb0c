/*
 * test_cpu_packed_extent.c - every CPU algorithm that packs weights says where its pack
 * lies (cf_algo.packed_extent), and what it says is the pack's own memory.
 *
 * CPU Find evicts that extent from the caches before each timed run (cpu/find.c): an
 * extent shorter than the pack leaves weights in cache that a network would read from
 * memory, one past its end evicts (and here, reads) memory that is not the pack's.  The
 * sanitizers see every byte of each extent read below.  Each packing algorithm must take
 * at least one of the problems, so a new one without a problem here fails the test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "algo/backend.h"
#include "algo/registry.h"
#include "cpu/registry.h"

typedef struct shape {
    convfind_op op;
    int64_t x[4], w[4], group, stride, pad;
    convfind_math_mode math;
} shape;

/* Ordinary layers of the kinds the CPU algorithms take: 3x3 (Winograd, direct, the
 * GEMMs; f6x3 only under relaxed math), 1x1, a wide first layer, depthwise, and a
 * strided ConvTranspose. */
static const shape shapes[] = {
    {CONVFIND_OP_CONV, {1, 16, 12, 12}, {16, 16, 3, 3}, 1, 1, 1, CONVFIND_MATH_STRICT},
    {CONVFIND_OP_CONV, {1, 16, 12, 12}, {16, 16, 3, 3}, 1, 1, 1, CONVFIND_MATH_ALLOW_TF32},
    {CONVFIND_OP_CONV, {2, 32, 8, 8}, {48, 32, 1, 1}, 1, 1, 0, CONVFIND_MATH_STRICT},
    {CONVFIND_OP_CONV, {1, 3, 32, 32}, {16, 3, 7, 7}, 1, 2, 3, CONVFIND_MATH_STRICT},
    {CONVFIND_OP_CONV, {1, 16, 10, 10}, {16, 1, 3, 3}, 16, 1, 1, CONVFIND_MATH_STRICT},
    {CONVFIND_OP_CONV_TRANSPOSE, {1, 16, 6, 6}, {16, 8, 3, 3}, 1, 2, 1, CONVFIND_MATH_STRICT},
};

static convfind_problem *make(const shape *s, convfind_layout layout)
{
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.op = s->op;
    d.layout = layout;
    d.math_mode = s->math;
    d.x_rank = d.w_rank = 4;
    memcpy(d.x_dims, s->x, sizeof s->x);
    memcpy(d.w_dims, s->w, sizeof s->w);
    d.group = s->group;
    d.strides.count = 2;
    d.strides.v[0] = d.strides.v[1] = s->stride;
    d.pads.count = 4;
    for (int i = 0; i < 4; i++)
        d.pads.v[i] = s->pad;
    convfind_problem *p = NULL;
    assert_int_equal(convfind_problem_create(&d, &p), CONVFIND_OK);
    return p;
}

static void every_pack_has_its_extent(void **state)
{
    (void)state;
    int n;
    const cf_algo *const *all = cf_backend_algos(cf_backend_host(), &n);
    int *packed = calloc((size_t)n, sizeof *packed);
    assert_non_null(packed);
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int nhwc = 0; nhwc < 2; nhwc++) {
            convfind_problem *p =
                make(&shapes[si], nhwc ? CONVFIND_LAYOUT_NHWC : CONVFIND_LAYOUT_NCHW);
            float *w = calloc(p->w_elems, sizeof *w);
            assert_non_null(w);
            for (int i = 0; i < n; i++) {
                const cf_algo *a = all[i];
                if (!a->pack_weights || !a->applicable(p))
                    continue;
                if (!a->packed_extent)
                    fail_msg("%s packs weights but gives no extent", a->name);
                void *st = NULL, *pw = NULL;
                if (a->prepare)
                    assert_int_equal(a->prepare(p, &st), CONVFIND_OK);
                assert_int_equal(a->pack_weights(p, st, w, &pw), CONVFIND_OK);
                const void *start = NULL;
                const size_t bytes = a->packed_extent(p, pw, &start);
                if (start == NULL || bytes < p->w_elems * sizeof(float))
                    fail_msg("shape %zu: %s's extent is %zu bytes for %zu weights", si, a->name,
                             bytes, p->w_elems);
                volatile unsigned char sum = 0;
                for (size_t b = 0; b < bytes; b++)
                    sum += ((const unsigned char *)start)[b];
                (void)sum;
                packed[i]++;
                a->free_packed(pw);
                if (a->release)
                    a->release(st);
            }
            free(w);
            convfind_problem_destroy(p);
        }
    for (int i = 0; i < n; i++)
        if (all[i]->pack_weights && !packed[i])
            fail_msg("%s packs weights but took none of the problems", all[i]->name);
    free(packed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_pack_has_its_extent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
