/*
 * test_cpu_algos_gemm.c - differential tests of the GEMM algorithms (cpu.gemm_1x1,
 * cpu.im2col_gemm, cpu.convtranspose_gemm, cpu.convtranspose_subpixel) against
 * cpu.reference, at every ISA level this machine has (cf_isa_force).
 *
 * Each algorithm runs a few hundred random small problems per level: 1-D to 3-D, odd
 * channel counts and groups, strides, dilations, asymmetric pads, ConvTranspose output
 * padding and output_shape (negative pads), NCHW and NHWC, bias, residual, every
 * activation, with and without packed weights (packed at the machine's level, so a
 * forced lower level also exercises the repack path), with and without a thread pool.
 *
 * Error bound per output (family "gemm": fp32 sums of L products in blocked order):
 *     |y - ref| <= 2 * (L + 2) * u * mag + 4 * u * max(1, |ref|)
 * with u = 2^-24, L = input channels per group x kernel taps, and mag the same
 * convolution of |x|, |w|, |b|, |z| without activation (computed by the reference in
 * double).  (L + 2) u mag bounds any summation order of L products plus bias and
 * residual; the factor 2 leaves room for ConvTranspose summing partial sums; the second
 * term covers the final rounding and the (1-Lipschitz) activation.  A dropped tap or
 * channel moves an output by about mag / L, far above the bound.
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

#define PROBLEMS_PER_LEVEL 200

static uint64_t rng_s = 0x2545f4914f6cdd1dull;

static uint32_t rnd(void)
{
    rng_s = rng_s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_s >> 33);
}

static int64_t rnd_in(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd() % (uint32_t)(hi - lo + 1));
}

static float *rand_floats(size_t count)
{
    float *v = malloc((count ? count : 1) * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < count; i++)
        v[i] = (float)(rnd() & 0xffff) / 32768.0f - 1.0f;
    return v;
}

static float *abs_of(const float *v, size_t count)
{
    float *a = malloc((count ? count : 1) * sizeof *a);
    assert_non_null(a);
    for (size_t i = 0; i < count; i++)
        a[i] = fabsf(v[i]);
    return a;
}

/* GEN_CONVT_D1: ConvTranspose with dilation 1 (cpu.convtranspose_subpixel's domain);
 * GEN_CONV_WIDE: Conv with 16 to 24 input channels per group (cpu.tap_gemm's domain). */
typedef enum gen_kind { GEN_1X1, GEN_CONV, GEN_CONVT, GEN_CONVT_D1, GEN_CONV_WIDE } gen_kind;

/* Fills a random description of the kind; returns NULL when problem validation rejects
 * it (the generators aim to stay valid; run_family checks that nearly all are). */
static convfind_problem *random_problem(gen_kind kind, convfind_conv_desc *d)
{
    convfind_conv_desc_init(d);
    bool dil1 = kind == GEN_CONVT_D1, wide = kind == GEN_CONV_WIDE;
    if (dil1)
        kind = GEN_CONVT;
    if (wide)
        kind = GEN_CONV;
    int nsp = (int)rnd_in(1, 10);
    nsp = nsp <= 6 ? 2 : nsp <= 9 ? 1 : 3;
    d->op = kind == GEN_CONVT ? CONVFIND_OP_CONV_TRANSPOSE : CONVFIND_OP_CONV;
    d->layout = rnd() % 2 ? CONVFIND_LAYOUT_NHWC : CONVFIND_LAYOUT_NCHW;
    d->x_rank = d->w_rank = nsp + 2;
    int64_t g = rnd() % 4 == 0 ? rnd_in(2, 3) : 1;
    int64_t cg = wide ? rnd_in(16, 24) : rnd_in(1, 13), mg = rnd() % 3 == 0 ? rnd_in(17, 45) : rnd_in(1, 12);
    d->group = g;
    d->x_dims[0] = rnd_in(1, 2);
    d->x_dims[1] = cg * g;
    d->w_dims[0] = kind == GEN_CONVT ? cg * g : mg * g;
    d->w_dims[1] = kind == GEN_CONVT ? mg : cg;
    d->strides.count = d->dilations.count = nsp;
    d->pads.count = 2 * nsp;
    int64_t max_in = nsp == 1 ? 70 : nsp == 2 ? 13 : 5;
    for (int a = 0; a < nsp; a++) {
        int64_t k = kind == GEN_1X1 ? 1 : rnd_in(1, nsp == 3 ? 3 : 4);
        int64_t s = rnd_in(1, 3), dil = kind == GEN_1X1 || dil1 ? 1 : rnd_in(1, 2);
        int64_t ext = (k - 1) * dil + 1;
        d->w_dims[2 + a] = k;
        d->strides.v[a] = s;
        d->dilations.v[a] = dil;
        if (kind == GEN_CONV) {
            d->pads.v[a] = rnd_in(0, ext - 1);
            d->pads.v[nsp + a] = rnd_in(0, ext - 1);
        } else if (kind == GEN_CONVT) {
            d->pads.v[a] = rnd_in(0, ext - 1) / 2;
            d->pads.v[nsp + a] = rnd_in(0, ext - 1) / 2;
        }
        int64_t lo = ext - d->pads.v[a] - d->pads.v[nsp + a];
        d->x_dims[2 + a] = rnd_in(lo > 1 ? lo : 1, (lo > 1 ? lo : 1) + max_in);
    }
    if (kind == GEN_CONVT) {
        int variant = (int)(rnd() % 3);
        if (variant == 1) { /* output_padding, which must stay below stride or dilation */
            d->output_padding.count = nsp;
            for (int a = 0; a < nsp; a++) {
                int64_t lim = d->strides.v[a] > d->dilations.v[a] ? d->strides.v[a]
                                                                  : d->dilations.v[a];
                d->output_padding.v[a] = rnd_in(0, lim - 1);
            }
        } else if (variant == 2) { /* output_shape beyond the natural size: negative pads */
            d->output_shape.count = nsp;
            d->pads.count = 0;
            for (int a = 0; a < nsp; a++) {
                int64_t ext = (d->w_dims[2 + a] - 1) * d->dilations.v[a] + 1;
                /* Up to stride - 1 beyond the natural size (ONNX's limit). */
                d->output_shape.v[a] = d->strides.v[a] * (d->x_dims[2 + a] - 1) + ext +
                                       rnd_in(0, d->strides.v[a] - 1);
            }
        }
    }
    d->has_bias = rnd() % 2;
    d->has_residual = rnd() % 3 == 0;
    d->activation = (convfind_activation)rnd_in(0, 6);
    d->alpha = d->activation == CONVFIND_ACT_CLIP ? -0.5f : 0.2f;
    d->beta = d->activation == CONVFIND_ACT_CLIP ? 0.75f : 0.5f;
    convfind_problem *p = NULL;
    if (convfind_problem_create(d, &p) != CONVFIND_OK)
        return NULL;
    return p;
}

static void *alloc_ws(const cf_algo *algo, const cf_problem *p, size_t *bytes)
{
    assert_int_equal(algo->workspace(p, bytes), CONVFIND_OK);
    if (*bytes == 0)
        return NULL;
    void *ws = aligned_alloc(64, (*bytes + 63) / 64 * 64);
    assert_non_null(ws);
    return ws;
}

/* Runs `algo` on one problem and checks it against the reference. */
static void check_problem(const cf_algo *algo, const cf_problem *p, cf_threadpool *pool,
                          bool use_packed)
{
    const size_t xn = p->x_elems, wn = p->w_elems, yn = p->y_elems, bn = (size_t)p->m;
    float *x = rand_floats(xn), *w = rand_floats(wn), *b = p->has_bias ? rand_floats(bn) : NULL;
    float *z = p->has_residual ? rand_floats(yn) : NULL;
    float *y = rand_floats(yn), *ref = malloc(yn * sizeof *ref), *mag = malloc(yn * sizeof *mag);
    assert_non_null(ref);
    assert_non_null(mag);

    cf_exec_args ra = {.x = x, .w = w, .b = b, .z = z, .y = ref};
    assert_int_equal(cf_algo_cpu_reference.execute(p, NULL, &ra), CONVFIND_OK);
    float *ax = abs_of(x, xn), *aw = abs_of(w, wn), *ab = b ? abs_of(b, bn) : NULL;
    float *az = z ? abs_of(z, yn) : NULL;
    cf_problem pm = *p;
    pm.act = CONVFIND_ACT_NONE;
    cf_exec_args ma = {.x = ax, .w = aw, .b = ab, .z = az, .y = mag};
    assert_int_equal(cf_algo_cpu_reference.execute(&pm, NULL, &ma), CONVFIND_OK);

    size_t ws_bytes = 0;
    void *ws = alloc_ws(algo, p, &ws_bytes);
    /* Packed weights made for these w (the caller's contract) when asked for. */
    void *pk = NULL;
    if (use_packed)
        assert_int_equal(algo->pack_weights(p, NULL, w, &pk), CONVFIND_OK);
    cf_exec_args a = {.x = x, .w = w, .b = b, .z = z, .y = y, .packed_w = pk,
                      .workspace = ws, .workspace_size = ws_bytes, .pool = pool};
    assert_int_equal(algo->execute(p, NULL, &a), CONVFIND_OK);

    const double u = 1.0 / 16777216.0;
    const double L = (double)(cf_cin_per_group(p) * p->k_sp);
    for (size_t i = 0; i < yn; i++) {
        double bound = 2.0 * (L + 2.0) * u * mag[i] + 4.0 * u * fmax(1.0, fabs(ref[i]));
        if (!(fabs((double)y[i] - (double)ref[i]) <= bound)) {
            char desc[256];
            convfind_problem_describe(p, desc, sizeof desc);
            fail_msg("%s at %s (packed %d, pool %d): y[%zu] = %.9g, reference %.9g, bound %.3g\n"
                     "  problem: %s", algo->name, cf_isa_name(cf_isa_active()), pk != NULL,
                     pool != NULL, i, y[i], ref[i], bound, desc);
        }
    }
    if (pk != NULL)
        algo->free_packed(pk);
    free(ws);
    free(x); free(w); free(b); free(z); free(y); free(ref); free(mag);
    free(ax); free(aw); free(ab); free(az);
}

/* Runs every generated problem of `kind` through `name` at every level.  `gated`: the
 * algorithm takes only some of them (it must take at least a quarter); else all. */
static void run_family_of(const char *name, gen_kind kind, bool gated)
{
    const cf_algo *algo = cf_backend_find(cf_backend_host(), name);
    assert_non_null(algo);
    cf_threadpool *pool = NULL;
    assert_int_equal(cf_threadpool_create(2, &pool), CONVFIND_OK);
    int checked = 0, negative_pads = 0, generated = 0;
    for (int level = 0; level <= (int)cf_isa_machine(); level++) {
        for (int i = 0; i < PROBLEMS_PER_LEVEL; i++) {
            assert_int_equal(cf_isa_force(cf_isa_machine()), CONVFIND_OK);
            convfind_conv_desc d;
            convfind_problem *p = random_problem(kind, &d);
            if (p == NULL)
                continue;
            generated++;
            if (gated && !algo->applicable(p)) {
                convfind_problem_destroy(p);
                continue;
            }
            if (!algo->applicable(p)) {
                char desc[256];
                convfind_problem_describe(p, desc, sizeof desc);
                fail_msg("%s not applicable to generated problem %s", name, desc);
            }
            /* Packed at the machine's level, executed at `level`. */
            assert_int_equal(cf_isa_force((cf_isa)level), CONVFIND_OK);
            check_problem(algo, p, i % 3 == 0 ? NULL : pool, i % 2 == 0);
            for (int a = 0; a < p->nsp; a++)
                if (p->pad_begin[a] < 0 || p->pad_end[a] < 0) {
                    negative_pads++;
                    break;
                }
            convfind_problem_destroy(p);
            checked++;
        }
    }
    cf_isa_unforce();
    cf_threadpool_destroy(pool);
    /* The generators stay inside ONNX's rules: nearly every problem must be valid. */
    if (generated < PROBLEMS_PER_LEVEL * ((int)cf_isa_machine() + 1) * 3 / 4)
        fail_msg("%s: only %d problems were valid", name, generated);
    if (checked < generated / (gated ? 4 : 1))
        fail_msg("%s: took only %d of %d problems", name, checked, generated);
    /* ConvTranspose's output_shape variant must really have produced negative pads. */
    if (kind == GEN_CONVT || kind == GEN_CONVT_D1)
        assert_true(negative_pads > 0);
}

static void run_family(const char *name, gen_kind kind)
{
    run_family_of(name, kind, false);
}

static void test_gemm_1x1(void **state)
{
    (void)state;
    run_family("cpu.gemm_1x1", GEN_1X1);
}

/* Checks `algo` on the NCHW or NHWC 1x1 problem of X dims x, W dims w, `group` and
 * `stride`, built at the machine's level and run at `level`; `v` picks the epilogue
 * (bias, residual, activation), and the pool and packed weights are the caller's. */
static void check_1x1(const cf_algo *algo, convfind_layout layout, const int64_t x[4],
                      const int64_t w[4], int64_t group, int64_t stride, size_t v, int level,
                      cf_threadpool *pool, bool use_packed)
{
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.layout = layout;
    d.x_rank = d.w_rank = 4;
    memcpy(d.x_dims, x, 4 * sizeof *x);
    memcpy(d.w_dims, w, 4 * sizeof *w);
    d.group = group;
    d.strides.count = 2;
    d.strides.v[0] = d.strides.v[1] = stride;
    d.has_bias = v % 3 != 2;
    d.has_residual = v % 2 == 0;
    d.activation = v % 3 == 0   ? CONVFIND_ACT_RELU
                   : v % 3 == 1 ? CONVFIND_ACT_SIGMOID
                                : CONVFIND_ACT_CLIP;
    d.alpha = -0.5f;
    d.beta = 0.75f;
    convfind_problem *p = NULL;
    assert_int_equal(cf_isa_force(cf_isa_machine()), CONVFIND_OK);
    assert_int_equal(convfind_problem_create(&d, &p), CONVFIND_OK);
    assert_true(algo->applicable(p));
    assert_int_equal(cf_isa_force((cf_isa)level), CONVFIND_OK);
    check_problem(algo, p, pool, use_packed);
    convfind_problem_destroy(p);
}

/* NCHW 1x1 problems whose GEMM takes the output pixels as rows (few pixels, many
 * channels: 7x7 maps compute 49 pixel rows with the 7-row kernel instead of 64 pixel
 * columns), so C is stored column-major: stride 1 (X read in place) and 2 (gathered
 * panels, one parallel pass or packed first), 7x7 maps (7 rows), 14x14 (14 rows) and 9x9
 * (8 rows, a partial panel), channel counts off the vector width, groups, two images,
 * every epilogue part (with and without the parts that read Y or Z), every level (the
 * kernels without transposed stores keep channels as rows there); 5x5 with 48 channels
 * per group stays channel rows, and so do 33x33 and 17x17 maps with 128 channels per
 * group, whose rows (not a multiple of 16 floats) are copied into panels (pack_x), as
 * are those of a 101x101 map with 48 channels, whose X (6.5 MB) is beyond twice the L2 of
 * the machines this runs on.  Then the same shapes in NHWC (pixel rows, C row-major). */
static void test_gemm_1x1_pixel_rows(void **state)
{
    (void)state;
    const cf_algo *algo = cf_backend_find(cf_backend_host(), "cpu.gemm_1x1");
    assert_non_null(algo);
    cf_threadpool *pool = NULL;
    assert_int_equal(cf_threadpool_create(2, &pool), CONVFIND_OK);
    static const int64_t shapes[][5] = {
        /* c, m, in (square), stride, group */
        {40, 64, 7, 1, 1}, {33, 80, 7, 1, 1}, {24, 48, 13, 2, 1}, {32, 96, 5, 1, 2},
        {16, 144, 9, 1, 1}, {64, 40, 7, 1, 1}, {24, 64, 14, 1, 1}, {20, 72, 28, 2, 1},
        {48, 48, 14, 1, 1}, {16, 64, 14, 1, 2}, {36, 96, 14, 1, 1}, {8, 32, 28, 2, 1},
        {24, 128, 33, 1, 1}, {48, 256, 17, 1, 2}, {160, 48, 101, 1, 1}};
    for (int level = 0; level <= (int)cf_isa_machine(); level++) {
        const size_t nshapes = sizeof shapes / sizeof shapes[0];
        for (size_t t = 0; t < 2 * nshapes; t++) {
            const size_t i = t % nshapes;
            /* The second round in NHWC, whose GEMM always has pixels as rows (C row-major). */
            const int64_t x[4] = {1 + (int64_t)(i % 2), shapes[i][0], shapes[i][2], shapes[i][2]};
            const int64_t w[4] = {shapes[i][1], shapes[i][0] / shapes[i][4], 1, 1};
            check_1x1(algo, t < nshapes ? CONVFIND_LAYOUT_NCHW : CONVFIND_LAYOUT_NHWC, x, w,
                      shapes[i][4], shapes[i][3], i, level, i % 2 ? pool : NULL, i % 4 != 3);
        }
    }
    cf_isa_unforce();
    cf_threadpool_destroy(pool);
}

/* Batches of one-pixel images (1x1 on 1x1 maps: squeeze-and-excite and classifier
 * layers), which run as one GEMM whose rows are the images: image counts below, at and
 * past a row panel (8 at AVX-512 and AVX2), channel counts off the vector widths, one
 * channel, groups, NCHW and NHWC, every epilogue part, every level, with and without a
 * pool, packed and unpacked weights. */
static void test_gemm_1x1_batch_rows(void **state)
{
    (void)state;
    const cf_algo *algo = cf_backend_find(cf_backend_host(), "cpu.gemm_1x1");
    assert_non_null(algo);
    cf_threadpool *pool = NULL;
    assert_int_equal(cf_threadpool_create(2, &pool), CONVFIND_OK);
    static const int64_t shapes[][4] = {
        /* n, c, m, group */
        {2, 40, 64, 1}, {3, 7, 33, 1}, {8, 96, 130, 1}, {9, 1, 5, 1}, {17, 24, 48, 2},
        {5, 64, 1, 1}, {16, 130, 40, 2}, {2, 32, 96, 4}};
    const size_t nshapes = sizeof shapes / sizeof shapes[0];
    for (int level = 0; level <= (int)cf_isa_machine(); level++) {
        for (size_t t = 0; t < 2 * nshapes; t++) {
            const size_t i = t % nshapes;
            const int64_t x[4] = {shapes[i][0], shapes[i][1], 1, 1};
            const int64_t w[4] = {shapes[i][2], shapes[i][1] / shapes[i][3], 1, 1};
            check_1x1(algo, t < nshapes ? CONVFIND_LAYOUT_NCHW : CONVFIND_LAYOUT_NHWC, x, w,
                      shapes[i][3], 1, t, level, t % 2 ? pool : NULL, t % 4 != 3);
        }
    }
    cf_isa_unforce();
    cf_threadpool_destroy(pool);
}

static void test_im2col_gemm(void **state)
{
    (void)state;
    run_family("cpu.im2col_gemm", GEN_CONV);
}

/* cpu.tap_gemm on the generated problems it takes (those with much padding), of 16 to 24
 * input channels per group. */
static void test_tap_gemm(void **state)
{
    (void)state;
    run_family_of("cpu.tap_gemm", GEN_CONV_WIDE, true);
}

/* cpu.tap_gemm where its tile logic has cases the small generated problems do not reach:
 * several tiles of output pixels (tiles hold at least 96 pixels, so only a problem with
 * more channels than two L2s hold in 96-pixel panels has several: 12000 here), with a
 * tap reaching part of a tile and the two whole ones first and last; and a kernel none of
 * whose taps covers the output whole (2 taps 5 apart on 6 pixels: outputs 3-5 and 0-3),
 * where the tile is zeroed and the epilogue is a pass of its own.  NCHW and NHWC, with
 * and without a pool and packed weights, every epilogue part, at every level. */
static void test_tap_gemm_tiles(void **state)
{
    (void)state;
    const cf_algo *algo = cf_backend_find(cf_backend_host(), "cpu.tap_gemm");
    assert_non_null(algo);
    cf_threadpool *pool = NULL;
    assert_int_equal(cf_threadpool_create(2, &pool), CONVFIND_OK);
    /* rank, c, m, input (each axis), kernel, dilation, pad (both sides, each axis) */
    static const int64_t shapes[][7] = {
        {3, 12000, 20, 300, 3, 40, 40},
        {4, 16, 5, 6, 2, 5, 3},
        {4, 64, 24, 7, 3, 1, 1},
    };
    for (int level = 0; level <= (int)cf_isa_machine(); level++) {
        for (size_t i = 0; i < 2 * sizeof shapes / sizeof shapes[0]; i++) {
            const int64_t *s = shapes[i / 2];
            convfind_conv_desc d;
            convfind_conv_desc_init(&d);
            d.layout = i % 2 ? CONVFIND_LAYOUT_NHWC : CONVFIND_LAYOUT_NCHW;
            d.x_rank = d.w_rank = (int)s[0];
            int nsp = (int)s[0] - 2;
            d.x_dims[0] = 1;
            d.x_dims[1] = s[1];
            d.w_dims[0] = s[2];
            d.w_dims[1] = s[1];
            d.dilations.count = nsp;
            d.pads.count = 2 * nsp;
            for (int a = 0; a < nsp; a++) {
                d.x_dims[2 + a] = s[3];
                d.w_dims[2 + a] = s[4];
                d.dilations.v[a] = s[5];
                d.pads.v[a] = d.pads.v[nsp + a] = s[6];
            }
            d.has_bias = true;
            d.has_residual = i % 4 < 2;
            d.activation = i % 3 == 0 ? CONVFIND_ACT_RELU : CONVFIND_ACT_SIGMOID;
            convfind_problem *p = NULL;
            assert_int_equal(cf_isa_force(cf_isa_machine()), CONVFIND_OK);
            assert_int_equal(convfind_problem_create(&d, &p), CONVFIND_OK);
            assert_true(algo->applicable(p));
            assert_int_equal(cf_isa_force((cf_isa)level), CONVFIND_OK);
            check_problem(algo, p, i % 3 ? pool : NULL, (i + level) % 2 == 0);
            convfind_problem_destroy(p);
        }
    }
    cf_isa_unforce();
    cf_threadpool_destroy(pool);
}

static void test_convtranspose_gemm(void **state)
{
    (void)state;
    run_family("cpu.convtranspose_gemm", GEN_CONVT);
}

static void test_convtranspose_subpixel(void **state)
{
    (void)state;
    run_family("cpu.convtranspose_subpixel", GEN_CONVT_D1);
}

/* cpu.convtranspose_subpixel splits each phase's output grid into runs of pixels whose
 * patch panels fit about two L2s; the random problems are far smaller than one run.
 * Here the input is sized from this machine's L2 so every phase takes three runs or
 * more: 2x2 stride 2 (U-Net's, every phase alike) and 3x3 stride 2 with pads and
 * output_padding (phases of 1, 2 and 4 taps and unequal grids), in both layouts, with
 * bias, residual and an activation, through a pool and without one.  With 5 output
 * channels each phase has a GEMM and a write-out of its own; with 48 (a multiple of every
 * kernel's rows) the 2x2 layer's phases go in pairs along the innermost axis, and the
 * 3x3 one's pairs stay apart (unequal taps).  Those runs go in chunks of panels, each
 * chunk through every phase on one thread, the phases' panels and results of unequal
 * sizes side by side; the last two problems (256 -> 64 channels, 3x3: weights beyond a
 * quarter of L2) take each step over the whole pool instead. */
static void test_convtranspose_subpixel_runs(void **state)
{
    (void)state;
    const cf_algo *algo = cf_backend_find(cf_backend_host(), "cpu.convtranspose_subpixel");
    assert_non_null(algo);
    cf_threadpool *pool = NULL;
    assert_int_equal(cf_threadpool_create(2, &pool), CONVFIND_OK);
    for (int v = 0; v < 10; v++) {
        const bool wide = v >= 8; /* 3x3, weights of 256 x 9 x 64 floats */
        int64_t c = wide ? 256 : 64;
        int64_t k = v % 4 < 2 && !wide ? 2 : 3, m = wide ? 64 : v < 4 ? 5 : 48;
        /* K of the largest phase: c x its taps (1 for 2x2, 4 for 3x3 at stride 2). */
        size_t kmax = (size_t)c * (k == 2 ? 1 : 4);
        size_t run = 2 * cf_cpu_caches()->l2 / (kmax * sizeof(float));
        int64_t side = (int64_t)ceil(sqrt(3.5 * (double)run)) + 1;
        convfind_conv_desc d;
        convfind_conv_desc_init(&d);
        d.op = CONVFIND_OP_CONV_TRANSPOSE;
        d.layout = v % 2 ? CONVFIND_LAYOUT_NHWC : CONVFIND_LAYOUT_NCHW;
        d.x_rank = d.w_rank = 4;
        d.x_dims[0] = 1;
        d.x_dims[1] = c;
        d.x_dims[2] = side;
        d.x_dims[3] = side + 3;
        d.w_dims[0] = c;
        d.w_dims[1] = m;
        d.w_dims[2] = d.w_dims[3] = k;
        d.strides.count = 2;
        d.strides.v[0] = d.strides.v[1] = 2;
        if (k == 3) {
            d.pads.count = 4;
            d.pads.v[0] = d.pads.v[1] = d.pads.v[2] = d.pads.v[3] = 1;
            d.output_padding.count = 2;
            d.output_padding.v[0] = d.output_padding.v[1] = 1;
        }
        d.has_bias = 1;
        d.has_residual = 1;
        d.activation = CONVFIND_ACT_LEAKY_RELU;
        d.alpha = 0.1f;
        convfind_problem *p = NULL;
        assert_int_equal(convfind_problem_create(&d, &p), CONVFIND_OK);
        assert_true(algo->applicable(p));
        check_problem(algo, p, v % 4 < 2 ? pool : NULL, v % 2 == 0);
        convfind_problem_destroy(p);
    }
    cf_threadpool_destroy(pool);
}

/* Applicability: each algorithm takes exactly its kind of problem. */
static void test_applicability(void **state)
{
    (void)state;
    const cf_algo *g11 = cf_backend_find(cf_backend_host(), "cpu.gemm_1x1");
    const cf_algo *i2c = cf_backend_find(cf_backend_host(), "cpu.im2col_gemm");
    const cf_algo *ct = cf_backend_find(cf_backend_host(), "cpu.convtranspose_gemm");
    const cf_algo *sp = cf_backend_find(cf_backend_host(), "cpu.convtranspose_subpixel");
    assert_non_null(sp);
    assert_non_null(g11);
    assert_non_null(i2c);
    assert_non_null(ct);
    convfind_conv_desc d;
    for (int i = 0; i < 50; i++) {
        convfind_problem *p = random_problem(GEN_CONV, &d);
        assert_non_null(p);
        bool is_1x1 = p->k_sp == 1;
        for (int a = 0; a < p->nsp; a++)
            is_1x1 = is_1x1 && p->pad_begin[a] == 0 && p->pad_end[a] == 0;
        assert_int_equal(g11->applicable(p), is_1x1);
        assert_true(i2c->applicable(p));
        assert_false(ct->applicable(p));
        assert_false(sp->applicable(p));
        convfind_problem_destroy(p);
        p = random_problem(GEN_CONVT, &d);
        if (p != NULL) {
            assert_false(g11->applicable(p));
            assert_false(i2c->applicable(p));
            assert_true(ct->applicable(p));
            bool dil1 = true;
            for (int a = 0; a < p->nsp; a++)
                dil1 = dil1 && p->dil[a] == 1;
            assert_int_equal(sp->applicable(p), dil1);
            convfind_problem_destroy(p);
        }
    }
    convfind_problem *p = random_problem(GEN_CONV, &d);
    convfind_problem_destroy(p);
    p = NULL;
    d.dtype = CONVFIND_DTYPE_F16;
    if (convfind_problem_create(&d, &p) == CONVFIND_OK) {
        assert_false(i2c->applicable(p));
        convfind_problem_destroy(p);
    }
}

/* A workspace that is too small is an error before anything is written; a size that
 * does not fit in size_t is reported as overflow. */
static void test_errors(void **state)
{
    (void)state;
    const char *names[] = {"cpu.im2col_gemm", "cpu.convtranspose_gemm",
                           "cpu.convtranspose_subpixel"};
    gen_kind kinds[] = {GEN_CONV, GEN_CONVT, GEN_CONVT_D1};
    for (int f = 0; f < 3; f++) {
        const cf_algo *algo = cf_backend_find(cf_backend_host(), names[f]);
        convfind_conv_desc d;
        convfind_problem *p = NULL;
        while (p == NULL)
            p = random_problem(kinds[f], &d);
        size_t bytes = 0;
        void *ws = alloc_ws(algo, p, &bytes);
        assert_true(bytes > 64);
        float *x = rand_floats(p->x_elems), *w = rand_floats(p->w_elems);
        float *b = rand_floats((size_t)p->m), *z = rand_floats(p->y_elems);
        float *y = calloc(p->y_elems, sizeof *y);
        assert_non_null(y);
        cf_exec_args a = {.x = x, .w = w, .b = b, .z = z, .y = y, .workspace = ws,
                          .workspace_size = bytes - 64};
        assert_int_equal(algo->execute(p, NULL, &a), CONVFIND_ERR_INVALID_SHAPE);
        a.workspace_size = bytes;
        a.x = NULL;
        assert_int_equal(algo->execute(p, NULL, &a), CONVFIND_ERR_NULL_POINTER);
        for (size_t i = 0; i < p->y_elems; i++)
            assert_true(y[i] == 0.0f);
        free(ws); free(x); free(w); free(b); free(z); free(y);

        cf_problem huge = *p;
        huge.group = 1;
        huge.c = huge.m = (int64_t)1 << 40;
        huge.k_sp = (int64_t)1 << 20;
        huge.in_sp = huge.out_sp = (int64_t)1 << 30;
        assert_int_equal(algo->workspace(&huge, &bytes), CONVFIND_ERR_OVERFLOW);
        convfind_problem_destroy(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_applicability),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_gemm_1x1),
        cmocka_unit_test(test_gemm_1x1_pixel_rows),
        cmocka_unit_test(test_gemm_1x1_batch_rows),
        cmocka_unit_test(test_im2col_gemm),
        cmocka_unit_test(test_tap_gemm),
        cmocka_unit_test(test_tap_gemm_tiles),
        cmocka_unit_test(test_convtranspose_gemm),
        cmocka_unit_test(test_convtranspose_subpixel),
        cmocka_unit_test(test_convtranspose_subpixel_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
