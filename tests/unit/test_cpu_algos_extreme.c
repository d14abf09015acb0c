/*
 * test_cpu_algos_extreme.c - every CPU algorithm on problems that validation accepts but
 * whose attributes are near the int64 limits (issue 16, defect 1): strides of 2^62 and
 * 2^63 - 1 on a 5-pixel row, dilations and pads of 2^61, ConvTranspose strides cropped
 * by pads of the same size.  Such a problem has a handful of outputs, each reading the
 * first input pixels or only padding, and every index an algorithm computes must stay
 * exact for it.
 *
 * Each case runs, at every ISA level of this machine, in NCHW and NHWC, with and without
 * packed weights, every CPU algorithm that declares itself applicable, and compares it
 * with cpu.reference; the algorithms listed with a case must be among them (they compute
 * such problems exactly; the others may decline).  The reference itself is checked
 * against the same convolution written with small strides where one exists: an axis
 * with one output reads one window whatever its stride.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "algo/registry.h"
#include "cpu/isa.h"
#include "problem/problem.h"
#include "util/threadpool.h"

extern const cf_algo cf_algo_cpu_reference;

#define P62 ((int64_t)1 << 62)
#define P61 ((int64_t)1 << 61)
#define P60 ((int64_t)1 << 60)
#define MAX64 INT64_MAX

/* One problem: ONNX attributes as a caller passes them, 2-D unless x_rank says. */
typedef struct xcase {
    const char *what;
    convfind_op op;
    int x_rank;
    int64_t x[5], w[5];
    int64_t group;
    int64_t strides[3], dils[3], pads[6], out_pad[3];
    const char *must[4]; /* algorithms that must compute it */
} xcase;

static const xcase cases[] = {
    {"issue 16: strides 1,2^62", CONVFIND_OP_CONV, 4, {1, 2, 5, 5}, {3, 2, 3, 3}, 1,
     {1, P62}, {1, 1}, {0}, {0},
     {"cpu.direct_blocked", "cpu.direct_small_c", "cpu.im2col_gemm"}},
    {"issue 16: strides 2^62,2^62 dilations 2,2", CONVFIND_OP_CONV, 4, {1, 2, 5, 5},
     {3, 2, 3, 3}, 1, {P62, P62}, {2, 2}, {0}, {0},
     {"cpu.direct_blocked", "cpu.direct_small_c", "cpu.im2col_gemm"}},
    {"issue 16: strides 1,2^60", CONVFIND_OP_CONV, 4, {1, 2, 5, 5}, {3, 2, 3, 3}, 1,
     {1, P60}, {1, 1}, {0}, {0},
     {"cpu.direct_blocked", "cpu.direct_small_c", "cpu.im2col_gemm"}},
    {"issue 16: strides 1,2^63-1 and pads", CONVFIND_OP_CONV, 4, {1, 2, 5, 5}, {3, 2, 3, 3}, 1,
     {1, MAX64}, {1, 1}, {1, 2, 1, 0}, {0},
     {"cpu.direct_blocked", "cpu.direct_small_c", "cpu.im2col_gemm"}},
    {"stride 2^63-1 with a pad past the window", CONVFIND_OP_CONV, 4, {1, 2, 5, 5},
     {3, 2, 3, 3}, 1, {MAX64, 1}, {1, 1}, {4, 0, 4, 0}, {0},
     {"cpu.direct_blocked", "cpu.direct_small_c", "cpu.im2col_gemm"}},
    {"pads 2^61 cropped by stride 2^60: 5 outputs, one inside X", CONVFIND_OP_CONV, 4,
     {1, 2, 5, 5}, {3, 2, 3, 3}, 1, {1, P60}, {1, 1}, {0, P61, 0, P61}, {0},
     {"cpu.im2col_gemm"}},
    {"dilation 2^61 between pads 2^61: only the middle tap reads X", CONVFIND_OP_CONV, 4,
     {1, 2, 5, 5}, {3, 2, 3, 3}, 1, {1, 1}, {1, P61}, {0, P61, 0, P61}, {0},
     {"cpu.im2col_gemm"}},
    {"dilation and stride 2^61 on a 1-D row", CONVFIND_OP_CONV, 3, {2, 3, 9}, {4, 3, 2}, 1,
     {P61}, {P61 - 3}, {P61 - 5}, {0}, {"cpu.im2col_gemm"}},
    {"1x1 with strides 2^62,3", CONVFIND_OP_CONV, 4, {1, 3, 5, 7}, {4, 3, 1, 1}, 1, {P62, 3},
     {1, 1}, {0}, {0},
     {"cpu.gemm_1x1", "cpu.direct_blocked", "cpu.direct_small_c", "cpu.im2col_gemm"}},
    {"1x1 with dilations 2^62 and a stride 2^63-1", CONVFIND_OP_CONV, 4, {1, 3, 5, 7},
     {4, 3, 1, 1}, 1, {MAX64, 2}, {P62, P62}, {0}, {0},
     {"cpu.gemm_1x1", "cpu.direct_blocked", "cpu.direct_small_c", "cpu.im2col_gemm"}},
    {"3-D strides 2^62,1,2^63-1", CONVFIND_OP_CONV, 5, {1, 2, 3, 4, 5}, {2, 2, 2, 2, 2}, 1,
     {P62, 1, MAX64}, {1, 1, 1}, {0}, {0},
     {"cpu.direct_blocked", "cpu.direct_small_c", "cpu.im2col_gemm"}},
    {"depthwise 3x3 strides 2^62,2", CONVFIND_OP_CONV, 4, {2, 5, 6, 40}, {10, 1, 3, 3}, 5,
     {P62, 2}, {1, 1}, {1, 1, 1, 1}, {0}, {"cpu.depthwise", "cpu.im2col_gemm"}},
    {"depthwise 1-D stride 2^62", CONVFIND_OP_CONV, 3, {1, 4, 7}, {4, 1, 3}, 4, {P62}, {1},
     {0}, {0}, {"cpu.depthwise", "cpu.im2col_gemm"}},
    {"depthwise dilated, stride 2^40 along a row", CONVFIND_OP_CONV, 4, {1, 3, 4, 9},
     {3, 1, 3, 2}, 3, {1, (int64_t)1 << 40}, {1, 5}, {1, 3, 1, 2}, {0},
     {"cpu.depthwise", "cpu.im2col_gemm"}},
    {"depthwise 3-D strides 2^62,1,2^40 (NCHW: the plane kernel)", CONVFIND_OP_CONV, 5,
     {1, 2, 3, 4, 5}, {2, 1, 2, 2, 2}, 2, {P62, 1, (int64_t)1 << 40}, {1, 1, 1}, {0}, {0},
     {"cpu.depthwise", "cpu.im2col_gemm"}},
    {"ConvTranspose of one row, stride 2^62", CONVFIND_OP_CONV_TRANSPOSE, 4, {1, 2, 1, 3},
     {2, 3, 3, 3}, 1, {P62, 2}, {1, 1}, {0}, {5, 1},
     {"cpu.convtranspose_gemm", "cpu.convtranspose_subpixel"}},
    {"ConvTranspose stride 2^61 cropped by pads", CONVFIND_OP_CONV_TRANSPOSE, 4, {1, 2, 2, 3},
     {2, 2, 2, 2}, 1, {P61, 1}, {1, 1}, {P61 - 1, 0, 1, 0}, {0},
     {"cpu.convtranspose_gemm", "cpu.convtranspose_subpixel"}},
    {"ConvTranspose stride 2^63-1 cropped to its second pixel", CONVFIND_OP_CONV_TRANSPOSE, 3,
     {1, 2, 2}, {2, 3, 3}, 1, {MAX64 - 3}, {1}, {MAX64 - 4, 2}, {0},
     {"cpu.convtranspose_gemm", "cpu.convtranspose_subpixel"}},
    {"ConvTranspose dilation 2^62 cropped to the last tap", CONVFIND_OP_CONV_TRANSPOSE, 4,
     {1, 2, 3, 1}, {2, 2, 2, 2}, 2, {2, 3}, {1, P62}, {0, P62 - 1, 1, 0}, {1, 0},
     {"cpu.convtranspose_gemm"}},
};

static uint64_t rng_s = 0x9e3779b97f4a7c15ull;

static float *rand_floats(size_t count)
{
    float *v = malloc((count ? count : 1) * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < count; i++) {
        rng_s = rng_s * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (float)((rng_s >> 33) & 0xffff) / 32768.0f - 1.0f;
    }
    return v;
}

static convfind_problem *make(const xcase *c, convfind_layout layout, const int64_t *strides)
{
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    int nsp = c->x_rank - 2;
    d.op = c->op;
    d.layout = layout;
    d.x_rank = d.w_rank = c->x_rank;
    memcpy(d.x_dims, c->x, sizeof c->x);
    memcpy(d.w_dims, c->w, sizeof c->w);
    d.group = c->group;
    d.has_bias = d.has_residual = true;
    d.activation = CONVFIND_ACT_LEAKY_RELU;
    d.alpha = 0.25f;
    d.strides.count = d.dilations.count = nsp;
    d.pads.count = 2 * nsp;
    d.output_padding.count = c->op == CONVFIND_OP_CONV_TRANSPOSE ? nsp : 0;
    for (int a = 0; a < nsp; a++) {
        d.strides.v[a] = strides[a];
        d.dilations.v[a] = c->dils[a];
        d.pads.v[a] = c->pads[a];
        d.pads.v[nsp + a] = c->pads[nsp + a];
        d.output_padding.v[a] = c->out_pad[a];
    }
    convfind_problem *p = NULL;
    convfind_status st = convfind_problem_create(&d, &p);
    if (st != CONVFIND_OK)
        fail_msg("%s: %s: %s", c->what, convfind_status_name(st), convfind_last_error());
    return p;
}

/* One problem's tensors, and the reference's output for them. */
typedef struct tensors {
    float *x, *w, *b, *z, *ref;
} tensors;

static tensors tensors_of(const cf_problem *p)
{
    tensors t = {rand_floats(p->x_elems), rand_floats(p->w_elems), rand_floats((size_t)p->m),
                 rand_floats(p->y_elems), rand_floats(p->y_elems)};
    cf_exec_args a = {.x = t.x, .w = t.w, .b = t.b, .z = t.z, .y = t.ref};
    assert_true(cf_algo_cpu_reference.applicable(p));
    assert_int_equal(cf_algo_cpu_reference.execute(p, NULL, &a), CONVFIND_OK);
    return t;
}

static void tensors_free(tensors *t)
{
    free(t->x), free(t->w), free(t->b), free(t->z), free(t->ref);
}

/* Runs `algo` on p (packed weights or not, on `pool` or not) and compares with the
 * reference: a few dozen products of values in [-1, 1] per output, so 1e-5 is far above
 * rounding and far below a lost or misplaced tap. */
static void check_algo(const xcase *c, const cf_algo *algo, const cf_problem *p,
                       const tensors *t, bool packed, cf_threadpool *pool)
{
    size_t ws_bytes = 0;
    convfind_status st = algo->workspace(p, &ws_bytes);
    if (st != CONVFIND_OK)
        fail_msg("%s: %s applicable but workspace failed: %s", c->what, algo->name,
                 convfind_last_error());
    void *ws = ws_bytes ? aligned_alloc(64, (ws_bytes + 63) & ~(size_t)63) : NULL;
    assert_true(ws_bytes == 0 || ws != NULL);
    void *state = NULL, *pw = NULL;
    if (algo->prepare)
        assert_int_equal(algo->prepare(p, &state), CONVFIND_OK);
    if (packed && algo->pack_weights)
        assert_int_equal(algo->pack_weights(p, state, t->w, &pw), CONVFIND_OK);
    float *y = rand_floats(p->y_elems);
    cf_exec_args a = {.x = t->x, .w = t->w, .b = t->b, .z = t->z, .packed_w = pw, .y = y,
                      .workspace = ws, .workspace_size = ws_bytes, .pool = pool};
    st = algo->execute(p, state, &a);
    if (st != CONVFIND_OK)
        fail_msg("%s: %s: %s", c->what, algo->name, convfind_last_error());
    for (size_t i = 0; i < p->y_elems; i++)
        if (!(fabsf(y[i] - t->ref[i]) <= 1e-5f * (1.0f + fabsf(t->ref[i]))))
            fail_msg("%s (%s, %s, %s weights): %s element %zu of %zu is %.9g, reference "
                     "%.9g", c->what, p->layout == CONVFIND_LAYOUT_NHWC ? "NHWC" : "NCHW",
                     cf_isa_name(cf_isa_active()), packed ? "packed" : "plain", algo->name, i,
                     p->y_elems, y[i], t->ref[i]);
    if (pw)
        algo->free_packed(pw);
    if (algo->release)
        algo->release(state);
    free(ws);
    free(y);
}

static bool listed(const xcase *c, const char *name)
{
    for (int i = 0; i < 4 && c->must[i]; i++)
        if (strcmp(c->must[i], name) == 0)
            return true;
    return false;
}

/* Every case, layout, ISA level and CPU algorithm. */
static void test_every_algorithm_matches_the_reference(void **state)
{
    (void)state;
    cf_threadpool *pool = NULL;
    assert_int_equal(cf_threadpool_create(2, &pool), CONVFIND_OK);
    int n;
    const cf_algo *const *all = cf_backend_algos(cf_backend_host(), &n);
    int compared = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const xcase *c = &cases[ci];
        for (int nhwc = 0; nhwc < 2; nhwc++) {
            convfind_problem *p =
                make(c, nhwc ? CONVFIND_LAYOUT_NHWC : CONVFIND_LAYOUT_NCHW, c->strides);
            tensors t = tensors_of(p);
            for (int i = 0; i < n; i++) {
                const cf_algo *algo = all[i];
                if (algo == &cf_algo_cpu_reference)
                    continue;
                if (!algo->applicable(p)) {
                    /* NHWC has no cpu.depthwise_3x3 and so on: only the listed layout-free
                     * algorithms must take both layouts. */
                    if (listed(c, algo->name))
                        fail_msg("%s: %s is not applicable", c->what, algo->name);
                    continue;
                }
                for (int level = 0; level <= (int)cf_isa_machine(); level++) {
                    assert_int_equal(cf_isa_force((cf_isa)level), CONVFIND_OK);
                    check_algo(c, algo, p, &t, level % 2 == 0, level == 0 ? pool : NULL);
                    check_algo(c, algo, p, &t, level % 2 != 0, level == 0 ? NULL : pool);
                    compared++;
                }
                cf_isa_unforce();
            }
            tensors_free(&t);
            convfind_problem_destroy(p);
        }
    }
    print_message("%d (case, layout, algorithm, ISA level) runs matched cpu.reference\n",
                  compared);
    cf_threadpool_destroy(pool);
}

/* Output i (NCHW) of p at the same (image, channel, position) of q, whose output is at
 * least as large along every axis. */
static size_t twin_index(const cf_problem *p, const cf_problem *q, size_t i)
{
    size_t o[CF_SP], rest = i;
    for (int a = CF_SP - 1; a >= 0; a--) {
        o[a] = rest % (size_t)p->out[a];
        rest /= (size_t)p->out[a];
    }
    size_t j = rest; /* image * M + channel */
    for (int a = 0; a < CF_SP; a++)
        j = j * (size_t)q->out[a] + o[a];
    return j;
}

/* The reference against a small-attribute twin: along an axis with a single output
 * (Conv) or a single input (ConvTranspose) the stride multiplies only 0, so any stride
 * there (above the output padding) computes the same outputs; the twin's stride 1 gives
 * a Conv more outputs after them, which are not compared. */
static void test_reference_matches_small_stride_twin(void **state)
{
    (void)state;
    int twins = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const xcase *c = &cases[ci];
        convfind_problem *p = make(c, CONVFIND_LAYOUT_NCHW, c->strides);
        int64_t small[3];
        bool changed = false;
        for (int a = 0; a < c->x_rank - 2; a++) {
            bool one = c->op == CONVFIND_OP_CONV ? p->out[a] == 1 : p->in[a] == 1;
            small[a] = one ? c->out_pad[a] + 1 : c->strides[a];
            changed = changed || small[a] != c->strides[a];
        }
        if (!changed) {
            convfind_problem_destroy(p);
            continue;
        }
        convfind_problem *q = make(c, CONVFIND_LAYOUT_NCHW, small);
        tensors t = tensors_of(p);
        float *y = rand_floats(q->y_elems), *z = rand_floats(q->y_elems);
        for (size_t i = 0; i < p->y_elems; i++)
            z[twin_index(p, q, i)] = t.z[i];
        cf_exec_args a = {.x = t.x, .w = t.w, .b = t.b, .z = z, .y = y};
        assert_int_equal(cf_algo_cpu_reference.execute(q, NULL, &a), CONVFIND_OK);
        for (size_t i = 0; i < p->y_elems; i++)
            if (y[twin_index(p, q, i)] != t.ref[i])
                fail_msg("%s: reference element %zu is %.9g, with small strides %.9g", c->what,
                         i, t.ref[i], y[twin_index(p, q, i)]);
        twins++;
        free(y), free(z);
        tensors_free(&t);
        convfind_problem_destroy(q);
        convfind_problem_destroy(p);
    }
    assert_true(twins >= 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_algorithm_matches_the_reference),
        cmocka_unit_test(test_reference_matches_small_stride_twin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
