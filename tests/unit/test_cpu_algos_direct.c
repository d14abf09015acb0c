/*
 * test_cpu_algos_direct.c - differential tests of the blocked direct, small-channel
 * direct, depthwise and Winograd CPU algorithms against cpu.reference, at every ISA
 * level this machine has.
 *
 * Each algorithm runs a few hundred random small problems per forced ISA level (odd
 * channel counts, both layouts, bias, residual, every activation, with and without
 * packed weights, with and without a thread pool).  Every output must satisfy
 *
 *     |y - ref| <= c_family * (L + 2) * u * mag + 4 * u * max(1, |ref|)
 *
 * where u = 2^-24, L is the reduction length (input channels per group x kernel taps),
 * and mag is the same convolution on |x|, |w|, |b|, |z| without activation (computed by
 * the reference, which accumulates in double).  (L + 2) u mag bounds the rounding of any
 * summation order of L products plus bias and residual; the second term covers the
 * final rounding and the activation (all are 1-Lipschitz; sigmoid and tanh add a few
 * ulps of an output of magnitude <= 1).  c_family is 1 for direct sums (direct,
 * depthwise).  Winograd sums transformed values: a tile's error depends on its whole
 * input patch and on the transform coefficients, not on the output's own window, so
 * there mag is the largest |conv| of the output's (image, channel) plane and c_family
 * is 1 for F(2x2,3x3) and 16 for F(4x4,3x3) (docs/winograd.md gives the measured
 * ratios).  A dropped tap or channel costs about mag / L, far above every bound, so a
 * wrong index cannot pass.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "algo/registry.h"
#include "cpu/isa.h"
#include "cpu/kernel_table.h"
#include "problem/problem.h"
#include "util/threadpool.h"

extern const cf_algo cf_algo_cpu_reference;

#define PROBLEMS_PER_LEVEL 300

typedef struct rng {
    uint64_t s;
} rng;

static uint32_t rnd(rng *r)
{
    r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(r->s >> 33);
}

/* Uniform in [lo, hi]. */
static int64_t rnd_in(rng *r, int64_t lo, int64_t hi) { return lo + (int64_t)(rnd(r) % (uint32_t)(hi - lo + 1)); }

static float *random_floats(rng *r, size_t count)
{
    float *v = malloc((count ? count : 1) * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < count; i++)
        v[i] = (float)(rnd(r) & 0xffff) / 32768.0f - 1.0f;
    return v;
}

static float *abs_copy(const float *v, size_t count)
{
    if (!v)
        return NULL;
    float *a = malloc((count ? count : 1) * sizeof *a);
    assert_non_null(a);
    for (size_t i = 0; i < count; i++)
        a[i] = fabsf(v[i]);
    return a;
}

/* A random Conv in test terms; generators fill it per family. */
typedef struct tconv {
    int nsp;
    int64_t n, c, m, g;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3];
    convfind_layout layout;
    bool bias, residual;
    convfind_activation act;
    bool relaxed; /* math mode CONVFIND_MATH_ALLOW_TF32 (reduced precision allowed) */
} tconv;

/* Makes the problem; returns NULL (and the test skips it) only when the random attributes
 * give an empty output, which the generators avoid. */
static convfind_problem *make_problem(const tconv *t)
{
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.layout = t->layout;
    d.math_mode = t->relaxed ? CONVFIND_MATH_ALLOW_TF32 : CONVFIND_MATH_STRICT;
    d.x_rank = d.w_rank = t->nsp + 2;
    d.x_dims[0] = t->n;
    d.x_dims[1] = t->c;
    d.w_dims[0] = t->m;
    d.w_dims[1] = t->c / t->g;
    d.group = t->g;
    d.has_bias = t->bias;
    d.has_residual = t->residual;
    d.activation = t->act;
    switch (t->act) {
    case CONVFIND_ACT_LEAKY_RELU:
        d.alpha = 0.1f;
        break;
    case CONVFIND_ACT_CLIP:
        d.alpha = -0.5f;
        d.beta = 0.75f;
        break;
    case CONVFIND_ACT_HARD_SIGMOID:
        d.alpha = 0.2f;
        d.beta = 0.5f;
        break;
    default:
        break;
    }
    d.strides.count = d.dilations.count = t->nsp;
    d.pads.count = 2 * t->nsp;
    for (int a = 0; a < t->nsp; a++) {
        d.x_dims[2 + a] = t->in[a];
        d.w_dims[2 + a] = t->k[a];
        d.strides.v[a] = t->s[a];
        d.dilations.v[a] = t->d[a];
        d.pads.v[a] = t->pb[a];
        d.pads.v[t->nsp + a] = t->pe[a];
    }
    convfind_problem *p = NULL;
    convfind_status st = convfind_problem_create(&d, &p);
    if (st != CONVFIND_OK)
        fail_msg("convfind_problem_create: %s: %s", convfind_status_name(st), convfind_last_error());
    return p;
}

/* Spatial axis a with kernel k, stride s, dilation d: an input size and pads that give
 * between 1 and about `max_out` outputs. */
static void random_axis(rng *r, tconv *t, int a, int64_t k, int64_t s, int64_t d, int64_t max_out)
{
    t->k[a] = k;
    t->s[a] = s;
    t->d[a] = d;
    t->pb[a] = rnd_in(r, 0, (k - 1) * d);
    t->pe[a] = rnd_in(r, 0, (k - 1) * d);
    int64_t ext = (k - 1) * d + 1;
    int64_t out = rnd_in(r, 1, max_out);
    int64_t in = (out - 1) * s + ext - t->pb[a] - t->pe[a] + rnd_in(r, 0, s - 1);
    if (in < 1) { /* pads alone cover the window: shrink them */
        t->pb[a] = t->pe[a] = 0;
        in = (out - 1) * s + ext;
    }
    t->in[a] = in;
}

static void random_epilogue(rng *r, tconv *t)
{
    t->layout = rnd(r) % 2 ? CONVFIND_LAYOUT_NHWC : CONVFIND_LAYOUT_NCHW;
    t->bias = rnd(r) % 2;
    t->residual = rnd(r) % 3 == 0;
    t->act = (convfind_activation)rnd_in(r, 0, 6);
}

/* Any Conv: 1-D to 3-D, any kernel, stride, dilation, asymmetric pads; mostly group 1
 * with odd channel counts, sometimes groups of 16 channels. */
static void gen_general(rng *r, tconv *t)
{
    memset(t, 0, sizeof *t);
    uint32_t shape = rnd(r) % 10;
    t->nsp = shape < 7 ? 2 : shape < 9 ? 1 : 3;
    t->n = rnd_in(r, 1, 2);
    if (rnd(r) % 6 == 0) {
        t->g = rnd_in(r, 2, 3);
        t->c = 16 * t->g;
        t->m = 16 * t->g * rnd_in(r, 1, 2);
    } else {
        t->g = 1;
        t->c = rnd_in(r, 1, 37);
        t->m = rnd_in(r, 1, 41);
    }
    for (int a = 0; a < 3; a++) {
        t->in[a] = t->k[a] = t->s[a] = t->d[a] = 1;
    }
    int64_t max_out = t->nsp == 1 ? 40 : t->nsp == 2 ? 17 : 5;
    for (int a = 0; a < t->nsp; a++)
        random_axis(r, t, a, rnd_in(r, 1, t->nsp == 3 ? 3 : 5), rnd_in(r, 1, 3), rnd_in(r, 1, 2),
                    max_out);
    random_epilogue(r, t);
}

/* Depthwise: group == C, channel multiplier 1 (mostly) to 3, odd channel counts, wider
 * rows than gen_general so that NHWC interior runs and NCHW channel blocks are exercised. */
static void gen_depthwise(rng *r, tconv *t)
{
    memset(t, 0, sizeof *t);
    uint32_t shape = rnd(r) % 10;
    t->nsp = shape < 7 ? 2 : shape < 9 ? 1 : 3;
    t->n = rnd_in(r, 1, 2);
    t->c = t->g = rnd_in(r, 1, 37);
    t->m = t->c * (rnd(r) % 4 == 0 ? rnd_in(r, 2, 3) : 1);
    for (int a = 0; a < 3; a++)
        t->in[a] = t->k[a] = t->s[a] = t->d[a] = 1;
    int64_t max_out = t->nsp == 1 ? 90 : t->nsp == 2 ? 40 : 6;
    for (int a = 0; a < t->nsp; a++)
        random_axis(r, t, a, rnd_in(r, 1, t->nsp == 3 ? 3 : 5), rnd_in(r, 1, 3), rnd_in(r, 1, 2),
                    a == t->nsp - 1 ? max_out : 6);
    random_epilogue(r, t);
}

/* The shapes cpu.direct_blocked has its own paths for: 1x1 kernels without padding (any
 * stride; their tiles run across output rows), 3x3 stride 2, on planes up to 12x12,
 * and atrous 3x3 (dilation 2 to 20, pads up to twice the dilation, rows up to 30
 * outputs: tiles and rows whose taps read only padding, which it leaves out), with
 * enough output channels for several groups of output blocks and a partial last one at
 * every vector length. */
static void gen_direct_paths(rng *r, tconv *t)
{
    memset(t, 0, sizeof *t);
    t->nsp = 2;
    t->n = rnd_in(r, 1, 2);
    t->g = 1;
    t->c = rnd_in(r, 1, 40);
    t->m = rnd_in(r, 1, 70);
    for (int a = 0; a < 3; a++)
        t->in[a] = t->k[a] = t->s[a] = t->d[a] = 1;
    int kind = (int)(rnd(r) % 3);
    bool one = kind == 0;
    int64_t dil = kind == 2 ? rnd_in(r, 2, 20) : 1;
    for (int a = 0; a < 2; a++) {
        random_axis(r, t, a, one ? 1 : 3, one ? rnd_in(r, 1, 3) : kind == 1 ? 2 : 1, dil,
                    kind == 2 ? 30 : 12);
        if (one && rnd(r) % 4 == 0) /* an end pad: the last outputs read only zeros */
            t->pe[a] = 1;
    }
    random_epilogue(r, t);
}

/* Depthwise as MobileNets and EfficientNets use it: 2-D, mostly 3x3, else 5x5 or any size,
 * with stride 1 or 2, planes from 1x1
 * to 30x30 (NCHW rows of 7 and 14 pixels run through the channel-block kernel, and
 * planes too tall for its ring of input rows wrap around it), channel counts on both
 * sides of whole 16-channel blocks, multipliers 1 to 3; one problem in ten is 1-D (3 or 5
 * taps) with rows too wide for that kernel's ring (the per-plane fallback). */
static void gen_depthwise_planes(rng *r, tconv *t)
{
    memset(t, 0, sizeof *t);
    t->n = rnd_in(r, 1, 2);
    t->c = t->g = rnd_in(r, 1, 70);
    t->m = t->c * (rnd(r) % 4 == 0 ? rnd_in(r, 2, 3) : 1);
    for (int a = 0; a < 3; a++)
        t->in[a] = t->k[a] = t->s[a] = t->d[a] = 1;
    if (rnd(r) % 10 == 0) {
        t->nsp = 1;
        random_axis(r, t, 0, rnd(r) % 2 ? 3 : 5, rnd_in(r, 1, 2), 1, 700);
    } else {
        t->nsp = 2;
        /* 3x3 and 5x5 (the kernels' compile-time forms) or any size and dilation. */
        int64_t k = rnd(r) % 4 != 0 ? 3 : rnd(r) % 2 ? 5 : 0;
        int64_t stride = rnd_in(r, 1, 2), side = rnd_in(r, 1, 30);
        for (int a = 0; a < 2; a++)
            random_axis(r, t, a, k ? k : rnd_in(r, 1, 5), stride, k ? 1 : rnd_in(r, 1, 2),
                        side);
    }
    random_epilogue(r, t);
}

/* NCHW depthwise with any kernel from 1x1 to 7x7 (rows and columns apart), strides 1 and
 * 2, dilations 1 and 2, asymmetric pads, on small planes (1 to 16 outputs a side) of 1 to
 * 90 channels, odd counts and multipliers 1 to 2 included: the channel-block kernel's
 * general tap loop (kernels other than 3x3 and 5x5), pixel runs that cross rows and end
 * in partial transposes, and bands of rows where the blocks are too few for 2 threads;
 * bias, residual and every activation from random_epilogue.  gen_depthwise_planes stops
 * at 5 taps a side, which left 6- and 7-tap rows untested. */
static void gen_depthwise_kxk(rng *r, tconv *t)
{
    memset(t, 0, sizeof *t);
    t->nsp = 2;
    t->n = rnd_in(r, 1, 2);
    t->c = t->g = rnd_in(r, 1, 90);
    t->m = t->c * (rnd(r) % 4 == 0 ? 2 : 1);
    for (int a = 0; a < 3; a++)
        t->in[a] = t->k[a] = t->s[a] = t->d[a] = 1;
    for (int a = 0; a < 2; a++)
        random_axis(r, t, a, rnd_in(r, 1, 7), rnd_in(r, 1, 2), rnd_in(r, 1, 2), 16);
    random_epilogue(r, t);
    t->layout = CONVFIND_LAYOUT_NCHW;
}

/* cpu.depthwise_3x3's domain: 2-D 3x3 depthwise (multiplier 1), NCHW, stride 1 with pads
 * of 1, or stride 2 with a start pad of 1 and an end pad of 0 or 1, per axis.  Planes
 * from 1 to 70 pixels a side, not square, so that rows are shorter and longer than a
 * vector at every level, stride-1 planes have none, some or many vectors away from their
 * first and last rows, and stride-2 rows have whole vectors before a partial one. */
static void gen_depthwise_3x3(rng *r, tconv *t)
{
    memset(t, 0, sizeof *t);
    t->nsp = 2;
    t->n = rnd_in(r, 1, 2);
    int64_t stride = rnd_in(r, 1, 2);
    for (int a = 0; a < 3; a++)
        t->in[a] = t->k[a] = t->s[a] = t->d[a] = 1;
    int64_t area = 1;
    for (int a = 0; a < 2; a++) {
        t->k[a] = 3;
        t->s[a] = stride;
        t->pb[a] = 1;
        t->pe[a] = stride == 1 ? 1 : rnd_in(r, 0, 1);
        /* Sides of up to 16 as often as longer ones: the kernel changes strategy there
         * (stride 1: several planes per vector up to a vector's width, 8 or 16; stride 2:
         * two planes per vector up to 7 outputs), and narrow planes need tall ones to
         * reach the rows between their first and last.  Stride 1 takes sides of 1 too
         * (8 planes a vector).  Rows reach 140 so that stride 2 at 16 lanes, too, runs
         * rows wider than one strip of 4 vectors. */
        int64_t pick = rnd(r) % 3;
        t->in[a] = pick == 0   ? rnd_in(r, stride == 1 ? 1 : 2, 8)
                   : pick == 1 ? rnd_in(r, 9, 16)
                               : rnd_in(r, 2, a == 1 ? 140 : 70);
        area *= t->in[a];
    }
    t->c = t->g = t->m = rnd_in(r, 1, area > 1000 ? 6 : 40);
    random_epilogue(r, t);
    t->layout = CONVFIND_LAYOUT_NCHW;
}

/* Winograd's domain: 3x3 of stride 1, group 1 on the last two axes; odd sizes so that
 * edge tiles are partial, and channel counts that cross the vector blocks.  A third of
 * the axes are dilated (2 to 5: phases of different sizes, some beyond the output and
 * reading padding alone).  A third of the problems are 3-D: 1 to 3 depth taps of
 * dilation 1 or 2 with any pads (planes of padding alone included), so that the input
 * planes a run of products reads are some planes further on than its output planes, and
 * images apart by more. */
static void gen_winograd(rng *r, tconv *t)
{
    memset(t, 0, sizeof *t);
    t->nsp = rnd(r) % 3 == 0 ? 3 : 2;
    t->n = rnd_in(r, 1, 2);
    t->g = 1;
    t->c = rnd_in(r, 1, 40);
    t->m = rnd_in(r, 1, 40);
    for (int a = 0; a < 3; a++)
        t->in[a] = t->k[a] = t->s[a] = t->d[a] = 1;
    if (t->nsp == 3)
        random_axis(r, t, 0, rnd_in(r, 1, 3), 1, rnd_in(r, 1, 2), 5);
    for (int a = t->nsp - 2; a < t->nsp; a++)
        random_axis(r, t, a, 3, 1, rnd(r) % 3 == 0 ? rnd_in(r, 2, 5) : 1,
                    t->nsp == 3 ? 13 : 23);
    random_epilogue(r, t);
}

/* F(6x6,3x3)'s: Winograd's, in problems that allow reduced precision. */
static void gen_winograd6(rng *r, tconv *t)
{
    gen_winograd(r, t);
    t->relaxed = true;
}

/* cpu.direct_small_c's domain: at most 8 input channels per group (mostly group 1,
 * sometimes 2 or 3 groups of 2..8), 1-D to 3-D, kernels up to 7, strides up to 4 (1
 * and 2 are staged a vector at a time, larger ones a float at a time), dilation up to
 * 2, asymmetric pads; rows up to 40 outputs wide, so that tiles span several vectors
 * with a partial last one, and up to 40 output channels, so that channels are split
 * into chunks and tiles of several sizes. */
static void gen_small_c(rng *r, tconv *t)
{
    memset(t, 0, sizeof *t);
    uint32_t shape = rnd(r) % 10;
    t->nsp = shape < 7 ? 2 : shape < 9 ? 1 : 3;
    t->n = rnd_in(r, 1, 2);
    t->g = rnd(r) % 5 == 0 ? rnd_in(r, 2, 3) : 1;
    t->c = t->g * rnd_in(r, t->g > 1 ? 2 : 1, 8);
    t->m = t->g * rnd_in(r, 1, t->g > 1 ? 12 : 40);
    for (int a = 0; a < 3; a++)
        t->in[a] = t->k[a] = t->s[a] = t->d[a] = 1;
    for (int a = 0; a < t->nsp; a++)
        random_axis(r, t, a, rnd_in(r, 1, t->nsp == 3 ? 3 : 7), rnd_in(r, 1, 4), rnd_in(r, 1, 2),
                    a == t->nsp - 1 ? 40 : t->nsp == 3 ? 4 : 9);
    random_epilogue(r, t);
}

/* Everything one family's check needs. */
typedef struct family {
    const char *algo;
    void (*gen)(rng *r, tconv *t);
    double c_family;
    bool plane_mag; /* scale by the largest |conv| of the output's (image, channel) plane */
} family;

/* Replaces every mag value by the maximum over its (image, output channel) plane. */
static void plane_max(const cf_problem *p, float *mag)
{
    size_t planes = (size_t)(p->n * p->m), sp = (size_t)p->out_sp;
    float *mx = calloc(planes, sizeof *mx);
    assert_non_null(mx);
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < p->y_elems; i++) {
            size_t n = i / (sp * (size_t)p->m);
            size_t m = p->layout == CONVFIND_LAYOUT_NHWC ? i % (size_t)p->m : i / sp % (size_t)p->m;
            float *slot = &mx[n * (size_t)p->m + m];
            if (pass == 0)
                *slot = fmaxf(*slot, mag[i]);
            else
                mag[i] = *slot;
        }
    free(mx);
}

/* Floats by which check_problem's y and z start past their allocations (malloc's
 * 16-byte alignment otherwise): set by tests of rows that start anywhere in a cache
 * line. */
static size_t out_offset;

/* Largest err / allowed over one problem; fails at the first element beyond the bound. */
static double check_problem(const family *f, const cf_algo *algo, const tconv *t, rng *r,
                            cf_threadpool *pool, bool use_packed)
{
    convfind_problem *p = make_problem(t);
    if (!algo->applicable(p))
        fail_msg("%s is not applicable to a problem its generator made", f->algo);
    float *x = random_floats(r, p->x_elems), *w = random_floats(r, p->w_elems);
    float *b = t->bias ? random_floats(r, (size_t)p->m) : NULL;
    float *z = t->residual ? random_floats(r, p->y_elems + out_offset) + out_offset : NULL;
    float *ref = random_floats(r, p->y_elems), *mag = random_floats(r, p->y_elems);
    /* garbage: every element must be written */
    float *y = random_floats(r, p->y_elems + out_offset) + out_offset;

    cf_exec_args ra = {.x = x, .w = w, .b = b, .z = z, .y = ref, .pool = pool};
    assert_int_equal(cf_algo_cpu_reference.execute(p, NULL, &ra), CONVFIND_OK);

    /* |conv|: the reference on absolute values, without the activation. */
    cf_problem pa = *p;
    pa.act = CONVFIND_ACT_NONE;
    float *xa = abs_copy(x, p->x_elems), *wa = abs_copy(w, p->w_elems);
    float *ba = abs_copy(b, (size_t)p->m), *za = abs_copy(z, p->y_elems);
    cf_exec_args ma = {.x = xa, .w = wa, .b = ba, .z = za, .y = mag, .pool = pool};
    assert_int_equal(cf_algo_cpu_reference.execute(&pa, NULL, &ma), CONVFIND_OK);

    size_t ws_bytes = 0;
    assert_int_equal(algo->workspace(p, &ws_bytes), CONVFIND_OK);
    void *ws = ws_bytes ? aligned_alloc(64, (ws_bytes + 63) & ~(size_t)63) : NULL;
    assert_true(ws_bytes == 0 || ws != NULL);
    if (ws) /* NaNs: an algorithm must not read workspace it has not written */
        memset(ws, 0xff, ws_bytes);
    void *state = NULL, *packed = NULL;
    if (algo->prepare)
        assert_int_equal(algo->prepare(p, &state), CONVFIND_OK);
    if (use_packed && algo->pack_weights)
        assert_int_equal(algo->pack_weights(p, state, w, &packed), CONVFIND_OK);
    cf_exec_args a = {.x = x, .w = w, .b = b, .z = z, .packed_w = packed, .y = y,
                      .workspace = ws, .workspace_size = ws_bytes, .pool = pool};
    convfind_status st = algo->execute(p, state, &a);
    if (st != CONVFIND_OK)
        fail_msg("%s: %s: %s", f->algo, convfind_status_name(st), convfind_last_error());

    if (f->plane_mag)
        plane_max(p, mag);
    const double u = 1.0 / (1 << 24);
    double reduction = (double)cf_cin_per_group(p) * (double)p->k_sp;
    double worst = 0.0;
    for (size_t i = 0; i < p->y_elems; i++) {
        double allowed = f->c_family * (reduction + 2) * u * mag[i] +
                         4 * u * fmax(1.0, fabs((double)ref[i]));
        double err = fabs((double)y[i] - (double)ref[i]);
        if (!(err <= allowed)) {
            char desc[256];
            convfind_problem_describe(p, desc, sizeof desc);
            fail_msg("%s at %s: element %zu of %zu: got %.9g, reference %.9g (|conv| %.6g, "
                     "allowed error %.3g) in %s", f->algo, cf_isa_name(cf_isa_active()), i,
                     p->y_elems, y[i], ref[i], mag[i], allowed, desc);
        }
        if (err / allowed > worst)
            worst = err / allowed;
    }
    if (packed)
        algo->free_packed(packed);
    if (algo->release)
        algo->release(state);
    free(ws);
    free(x), free(w), free(b), free(z ? z - out_offset : NULL), free(ref), free(mag);
    free(y - out_offset);
    free(xa), free(wa), free(ba), free(za);
    convfind_problem_destroy(p);
    return worst;
}

/* Every ISA level of this machine, PROBLEMS_PER_LEVEL random problems each. */
static void check_family(const family *f)
{
    const cf_algo *algo = cf_backend_find(cf_backend_host(), f->algo);
    assert_non_null(algo);
    cf_threadpool *pool = NULL;
    assert_int_equal(cf_threadpool_create(2, &pool), CONVFIND_OK);
    for (int level = CF_ISA_PORTABLE; level <= (int)cf_isa_machine(); level++) {
        assert_int_equal(cf_isa_force((cf_isa)level), CONVFIND_OK);
        rng r = {0x9e3779b97f4a7c15ull ^ (uint64_t)level};
        double worst = 0.0;
        for (int i = 0; i < PROBLEMS_PER_LEVEL; i++) {
            tconv t;
            f->gen(&r, &t);
            double e = check_problem(f, algo, &t, &r, i % 2 ? pool : NULL, i % 3 != 0);
            worst = e > worst ? e : worst;
        }
        print_message("%s at %s: worst error / bound = %.3f over %d problems\n", f->algo,
                      cf_isa_name((cf_isa)level), worst, PROBLEMS_PER_LEVEL);
    }
    cf_isa_unforce();
    cf_threadpool_destroy(pool);
}

/* Weights packed, or a plan's state made, at one level must still give the right result
 * at another: the algorithm repacks into its workspace (or redoes the state's work)
 * instead of reading a foreign layout. */
static void check_packed_across_levels(const char *name, void (*gen)(rng *, tconv *))
{
    const cf_algo *algo = cf_backend_find(cf_backend_host(), name);
    assert_non_null(algo);
    if (cf_isa_machine() == CF_ISA_PORTABLE || !(algo->pack_weights || algo->prepare))
        skip();
    rng r = {42};
    tconv t;
    gen(&r, &t);
    convfind_problem *p = make_problem(&t);
    float *x = random_floats(&r, p->x_elems), *w = random_floats(&r, p->w_elems);
    float *b = t.bias ? random_floats(&r, (size_t)p->m) : NULL;
    float *z = t.residual ? random_floats(&r, p->y_elems) : NULL;
    float *y0 = random_floats(&r, p->y_elems), *y1 = random_floats(&r, p->y_elems);
    size_t ws_bytes;
    assert_int_equal(algo->workspace(p, &ws_bytes), CONVFIND_OK);
    void *ws = aligned_alloc(64, (ws_bytes + 64) & ~(size_t)63);
    void *state = NULL, *packed = NULL;
    if (algo->prepare)
        assert_int_equal(algo->prepare(p, &state), CONVFIND_OK);
    assert_int_equal(cf_isa_force(cf_isa_machine()), CONVFIND_OK);
    if (algo->pack_weights)
        assert_int_equal(algo->pack_weights(p, state, w, &packed), CONVFIND_OK);
    cf_exec_args a = {.x = x, .w = w, .b = b, .z = z, .y = y0, .workspace = ws,
                      .workspace_size = ws_bytes};
    assert_int_equal(algo->execute(p, state, &a), CONVFIND_OK); /* unpacked, top level */
    assert_int_equal(cf_isa_force(CF_ISA_PORTABLE), CONVFIND_OK);
    a.packed_w = packed;
    a.y = y1;
    assert_int_equal(algo->execute(p, state, &a), CONVFIND_OK); /* foreign packing */
    cf_isa_unforce();
    for (size_t i = 0; i < p->y_elems; i++)
        assert_true(fabsf(y0[i] - y1[i]) <= 1e-4f * (1.0f + fabsf(y0[i])));
    if (algo->free_packed)
        algo->free_packed(packed);
    if (algo->release)
        algo->release(state);
    free(ws), free(x), free(w), free(b), free(z), free(y0), free(y1);
    convfind_problem_destroy(p);
}

/* A workspace smaller than execute() needs is an error, not an overrun.  workspace()
 * reports the most any ISA level needs, so one byte less than that is too little at the
 * level that needs the most, whichever that is; an empty workspace is too little at
 * every level. */
static void check_small_workspace(const char *name, void (*gen)(rng *, tconv *))
{
    const cf_algo *algo = cf_backend_find(cf_backend_host(), name);
    assert_non_null(algo);
    rng r = {7};
    tconv t;
    gen(&r, &t);
    convfind_problem *p = make_problem(&t);
    size_t ws_bytes;
    assert_int_equal(algo->workspace(p, &ws_bytes), CONVFIND_OK);
    if (ws_bytes == 0) {
        convfind_problem_destroy(p);
        skip();
    }
    float *x = random_floats(&r, p->x_elems), *w = random_floats(&r, p->w_elems);
    float *b = random_floats(&r, (size_t)p->m), *z = random_floats(&r, p->y_elems);
    float *y = random_floats(&r, p->y_elems);
    void *ws = aligned_alloc(64, (ws_bytes + 63) & ~(size_t)63);
    void *state = NULL;
    if (algo->prepare)
        assert_int_equal(algo->prepare(p, &state), CONVFIND_OK);
    cf_exec_args a = {.x = x, .w = w, .b = t.bias ? b : NULL, .z = t.residual ? z : NULL,
                      .y = y, .workspace = ws, .workspace_size = 0};
    assert_int_not_equal(algo->execute(p, state, &a), CONVFIND_OK);
    assert_true(strlen(convfind_last_error()) > 0);
    a.workspace_size = ws_bytes - 1;
    const cf_isa active = cf_isa_active();
    int too_little = 0;
    for (int level = CF_ISA_PORTABLE; level <= (int)cf_isa_machine(); level++) {
        assert_int_equal(cf_isa_force((cf_isa)level), CONVFIND_OK);
        too_little += algo->execute(p, state, &a) != CONVFIND_OK;
    }
    assert_int_equal(cf_isa_force(active), CONVFIND_OK);
    assert_true(too_little >= 1);
    if (algo->release)
        algo->release(state);
    free(ws), free(x), free(w), free(b), free(z), free(y);
    convfind_problem_destroy(p);
}

static const family direct_blocked = {"cpu.direct_blocked", gen_general, 1.0, false};
static const family direct_blocked_paths = {"cpu.direct_blocked", gen_direct_paths, 1.0, false};

static const family depthwise = {"cpu.depthwise", gen_depthwise, 1.0, false};

static void test_depthwise_random(void **state)
{
    (void)state;
    check_family(&depthwise);
}

static const family depthwise_planes = {"cpu.depthwise", gen_depthwise_planes, 1.0, false};

static void test_depthwise_planes(void **state)
{
    (void)state;
    check_family(&depthwise_planes);
}

static const family depthwise_kxk = {"cpu.depthwise", gen_depthwise_kxk, 1.0, false};

static void test_depthwise_kxk(void **state)
{
    (void)state;
    check_family(&depthwise_kxk);
}

static void test_depthwise_packed_across_levels(void **state)
{
    (void)state;
    check_packed_across_levels(depthwise.algo, gen_depthwise_planes);
}

static void test_depthwise_small_workspace(void **state)
{
    (void)state;
    check_small_workspace(depthwise.algo, gen_depthwise);
}

/* Depthwise only: group == C. */
static void test_depthwise_applicability(void **state)
{
    (void)state;
    const cf_algo *algo = cf_backend_find(cf_backend_host(), "cpu.depthwise");
    assert_non_null(algo);
    rng r = {5};
    tconv t;
    gen_depthwise(&r, &t);
    convfind_problem *p = make_problem(&t);
    cf_problem q = *p;
    assert_true(algo->applicable(&q));
    q.c = 2 * q.group;
    assert_false(algo->applicable(&q));
    q = *p;
    q.op = CONVFIND_OP_CONV_TRANSPOSE;
    assert_false(algo->applicable(&q));
    q = *p;
    q.dtype = CONVFIND_DTYPE_BF16;
    assert_false(algo->applicable(&q));
    convfind_problem_destroy(p);
}

static const family depthwise_3x3 = {"cpu.depthwise_3x3", gen_depthwise_3x3, 1.0, false};

static void test_depthwise_3x3_random(void **state)
{
    (void)state;
    check_family(&depthwise_3x3);
}

/* 2-D 3x3 depthwise NCHW with multiplier 1, strides 1 (pads 1) and 2 (start pads 1, end
 * pads at most 1) only. */
static void test_depthwise_3x3_applicability(void **state)
{
    (void)state;
    const cf_algo *algo = cf_backend_find(cf_backend_host(), depthwise_3x3.algo);
    assert_non_null(algo);
    rng r = {17};
    tconv t;
    do
        gen_depthwise_3x3(&r, &t);
    while (t.s[0] != 2 || t.c < 2);
    convfind_problem *p = make_problem(&t);
    cf_problem q = *p;
    assert_true(algo->applicable(&q));
    q.m = 2 * q.c; /* multiplier 2 */
    assert_false(algo->applicable(&q));
    q = *p;
    q.layout = CONVFIND_LAYOUT_NHWC;
    assert_false(algo->applicable(&q));
    q = *p;
    q.stride[1] = 1; /* mixed strides */
    assert_false(algo->applicable(&q));
    q = *p;
    q.pad_begin[0] = 0;
    assert_false(algo->applicable(&q));
    q = *p;
    q.pad_end[1] = 2;
    assert_false(algo->applicable(&q));
    q = *p;
    q.stride[0] = q.stride[1] = 1;
    q.pad_end[0] = q.pad_end[1] = 0; /* stride 1 needs pads of 1 on both ends */
    assert_false(algo->applicable(&q));
    q.pad_end[0] = q.pad_end[1] = 1;
    assert_true(algo->applicable(&q));
    q = *p;
    q.k[0] = 5;
    assert_false(algo->applicable(&q));
    q = *p;
    q.dil[1] = 2;
    assert_false(algo->applicable(&q));
    convfind_problem_destroy(p);
}

/* c_family for Winograd: the measured worst err / ((L + 2) u mag_plane) was about 0.2
 * (F2), 5 (F4) and 10 (F6) over these problems at every level (docs/winograd.md); the
 * constants leave a margin of 3x or more and stay far below the cost of a wrong tap. */
static const family winograd_f2 = {"cpu.winograd_f2x3", gen_winograd, 1.0, true};
static const family winograd_f4 = {"cpu.winograd_f4x3", gen_winograd, 16.0, true};
static const family winograd_f6 = {"cpu.winograd_f6x3", gen_winograd6, 64.0, true};

static void test_winograd_f2_random(void **state)
{
    (void)state;
    check_family(&winograd_f2);
}

static void test_winograd_f4_random(void **state)
{
    (void)state;
    check_family(&winograd_f4);
}

static void test_winograd_f6_random(void **state)
{
    (void)state;
    check_family(&winograd_f6);
}

static void test_winograd_packed_across_levels(void **state)
{
    (void)state;
    check_packed_across_levels(winograd_f2.algo, gen_winograd);
    check_packed_across_levels(winograd_f4.algo, gen_winograd);
    check_packed_across_levels(winograd_f6.algo, gen_winograd6);
}

static void test_winograd_small_workspace(void **state)
{
    (void)state;
    check_small_workspace(winograd_f2.algo, gen_winograd);
    check_small_workspace(winograd_f4.algo, gen_winograd);
    check_small_workspace(winograd_f6.algo, gen_winograd6);
}

/* Only 3x3 of stride 1 (any dilation) on the last two axes, group 1; in 3-D a depth of
 * stride 1 and up to 16 taps, any dilation; not 1-D; F(6x6,3x3) only where the math
 * mode allows reduced precision. */
static void test_winograd_applicability(void **state)
{
    (void)state;
    rng r = {11};
    const char *names[3] = {winograd_f2.algo, winograd_f4.algo, winograd_f6.algo};
    for (int nsp = 2; nsp <= 3; nsp++) {
        tconv t;
        do
            gen_winograd6(&r, &t);
        while (t.nsp != nsp);
        convfind_problem *p = make_problem(&t);
        const int ah = nsp - 2, aw = nsp - 1;
        for (int i = 0; i < 3; i++) {
            const cf_algo *algo = cf_backend_find(cf_backend_host(), names[i]);
            assert_non_null(algo);
            cf_problem q = *p;
            assert_true(algo->applicable(&q));
            q.stride[aw] = 2;
            assert_false(algo->applicable(&q));
            q = *p;
            q.dil[ah] = 3;
            assert_true(algo->applicable(&q));
            q.stride[ah] = 2;
            assert_false(algo->applicable(&q));
            q = *p;
            q.k[aw] = 5;
            assert_false(algo->applicable(&q));
            q = *p;
            q.group = 2;
            assert_false(algo->applicable(&q));
            q = *p;
            q.op = CONVFIND_OP_CONV_TRANSPOSE;
            assert_false(algo->applicable(&q));
            q = *p;
            q.math_mode = CONVFIND_MATH_STRICT;
            assert_true(algo->applicable(&q) == (i < 2));
            q = *p;
            q.nsp = 1;
            assert_false(algo->applicable(&q));
            if (nsp == 3) {
                q = *p;
                q.dil[0] = 2;
                assert_true(algo->applicable(&q));
                q.k[0] = 16;
                assert_true(algo->applicable(&q));
                q.k[0] = 17;
                assert_false(algo->applicable(&q));
                q = *p;
                q.stride[0] = 2;
                assert_false(algo->applicable(&q));
            }
        }
        convfind_problem_destroy(p);
    }
}

static void test_direct_blocked_random(void **state)
{
    (void)state;
    check_family(&direct_blocked);
}

static void test_direct_blocked_paths(void **state)
{
    (void)state;
    check_family(&direct_blocked_paths);
}

/* cpu.direct_blocked hands its tasks to the threads split by groups of output blocks, or,
 * where the input outweighs the weights, by bands of the output plane, and converts X in
 * an order to match; the conversion shares are dealt over at most 64 claim slots (which
 * 12 threads' 96 tasks run into), each task claiming from its own slot first.  Problems on both sides of that
 * choice: maps of up to 40x40 with few channels, and of up to 6x6 with many; 1 or 2
 * images, 1 or 2 groups of whole 16-channel blocks, strides 1 and 2, either layout, on
 * pools of 2, 3 and 12 threads. */
static void gen_direct_orders(rng *r, tconv *t)
{
    memset(t, 0, sizeof *t);
    t->nsp = 2;
    t->n = rnd_in(r, 1, 2);
    t->g = rnd_in(r, 1, 2);
    const bool wide = rnd(r) % 2;
    t->c = t->g * 16 * rnd_in(r, 1, wide ? 2 : 4);
    t->m = t->g * 16 * rnd_in(r, 3, wide ? 5 : 8);
    for (int a = 0; a < 3; a++)
        t->in[a] = t->k[a] = t->s[a] = t->d[a] = 1;
    for (int a = 0; a < 2; a++)
        random_axis(r, t, a, 3, rnd_in(r, 1, 2), 1, wide ? 40 : 6);
    random_epilogue(r, t);
}

/* Checks `per_pool` problems from gen with cpu.direct_blocked on a pool of each of the
 * thread counts in turn (0-terminated), half of them with packed weights. */
static void check_direct_blocked_on_pools(void (*gen)(rng *, tconv *), const int *threads,
                                          int per_pool, rng *r)
{
    const cf_algo *algo = cf_backend_find(cf_backend_host(), direct_blocked.algo);
    assert_non_null(algo);
    for (; *threads; threads++) {
        cf_threadpool *pool = NULL;
        assert_int_equal(cf_threadpool_create(*threads, &pool), CONVFIND_OK);
        for (int k = 0; k < per_pool; k++) {
            tconv t;
            gen(r, &t);
            check_problem(&direct_blocked, algo, &t, r, pool, k % 2 == 0);
        }
        cf_threadpool_destroy(pool);
    }
}

static void test_direct_blocked_task_orders(void **state)
{
    (void)state;
    static const int threads[] = {2, 3, 12, 0};
    rng r = {0x2545f4914f6cdd1dull};
    check_direct_blocked_on_pools(gen_direct_orders, threads, 40, &r);
}

/* cpu.direct_blocked splits the reduction into runs of input blocks where its bands would
 * hold one tile each (small planes with one or two output blocks, one-pixel outputs):
 * each part has tasks of its own, the part that finishes a band last adds up the others'
 * sums and stores them, and a part whose tasks alone read its input blocks converts them
 * itself.  Problems of that kind: maps of up to 9x9 (one band or two) with 16 or 32
 * output channels and 2 to 8 blocks of 16 input channels per group, or of one pixel with
 * 128 to 192 and 64 to 96 blocks (parts need 65536 multiply-adds); 1 or 2 images and
 * groups, either layout, on pools of 2, 3, 5 and 12 threads (2 to 4 parts), at every ISA
 * level (other block and tile sizes). */
static void gen_direct_split(rng *r, tconv *t)
{
    memset(t, 0, sizeof *t);
    t->nsp = 2;
    t->n = rnd_in(r, 1, 2);
    t->g = rnd_in(r, 1, 2);
    const bool pixel = rnd(r) % 4 == 0; /* as many multiply-adds as a split needs */
    t->c = t->g * 16 * (pixel ? rnd_in(r, 64, 96) : rnd_in(r, 2, 8));
    t->m = t->g * 16 * (pixel ? rnd_in(r, 8, 12) : rnd_in(r, 1, 2));
    for (int a = 0; a < 3; a++)
        t->in[a] = t->k[a] = t->s[a] = t->d[a] = 1;
    for (int a = 0; a < 2; a++)
        random_axis(r, t, a, pixel ? 1 : 3, 1, 1, pixel ? 1 : 9);
    random_epilogue(r, t);
}

/* check_direct_blocked_on_pools at every ISA level the machine runs, the active one
 * restored after. */
static void check_direct_blocked_every_level(void (*gen)(rng *, tconv *), const int *threads,
                                             int per_pool, rng *r)
{
    const cf_isa active = cf_isa_active();
    for (int level = CF_ISA_PORTABLE; level <= (int)cf_isa_machine(); level++) {
        assert_int_equal(cf_isa_force((cf_isa)level), CONVFIND_OK);
        check_direct_blocked_on_pools(gen, threads, per_pool, r);
    }
    assert_int_equal(cf_isa_force(active), CONVFIND_OK);
}

static void test_direct_blocked_split_reduction(void **state)
{
    (void)state;
    static const int threads[] = {2, 3, 5, 12, 0};
    rng r = {0x5851f42d4c957f2dull};
    check_direct_blocked_every_level(gen_direct_split, threads, 12, &r);
}

/* Where one (image, group)'s blocked input is 4 or more times L2, cpu.direct_blocked
 * converts it a slab of rows at a time (up to half of L2), each task keeping the rows
 * that one slab shares with the next.  Problems whose blocked input (at the level's block
 * size) is 9 to 12 times L2, so that most tasks compute two slabs or more: two images of
 * few channels (one block), one of 17 to 20 channels (two to five blocks), or two groups
 * of 16 channels (one or more blocks each); narrow planes of many rows, kernels of 1 to 3
 * rows and columns, strides and dilations 1 or 2 along H, padding or none, bias, residual
 * and activations, either layout, on pools of 2 and 3 threads, at every ISA level.  The rows per slab, the runs of rows per task and the tiles per row then all
 * end off their multiples. */
static void test_direct_blocked_slabs(void **state)
{
    (void)state;
    const cf_algo *algo = cf_backend_find(cf_backend_host(), direct_blocked.algo);
    assert_non_null(algo);
    static const int threads[] = {2, 3};
    const size_t l2 = cf_cpu_caches()->l2;
    int runs = 0;
    for (int level = CF_ISA_PORTABLE; level <= (int)cf_isa_machine(); level++) {
        assert_int_equal(cf_isa_force((cf_isa)level), CONVFIND_OK);
        const int64_t vl = cf_kernel_table_active()->direct_blocked->vl;
        rng r = {0x51ab5ull ^ (uint64_t)level};
        for (int ti = 0; ti < 2; ti++) {
            cf_threadpool *pool = NULL;
            assert_int_equal(cf_threadpool_create(threads[ti], &pool), CONVFIND_OK);
            for (int k = 0; k < 3; k++) {
                tconv t;
                memset(&t, 0, sizeof t);
                t.nsp = 2;
                t.n = k == 0 ? 2 : 1;
                t.g = k == 2 ? 2 : 1;
                t.c = k == 0 ? rnd_in(&r, 2, 4) : k == 1 ? rnd_in(&r, 17, 20) : 32;
                t.m = k == 2 ? 32 : rnd_in(&r, 3, 8);
                t.k[0] = rnd_in(&r, 1, 3);
                t.k[1] = rnd_in(&r, t.k[0] == 1 ? 2 : 1, 3); /* not 1x1 */
                t.s[0] = rnd_in(&r, 1, 2);
                t.d[0] = rnd_in(&r, 1, 2);
                t.s[1] = t.d[1] = 1;
                for (int a = 0; a < 2; a++)
                    t.pb[a] = t.pe[a] = rnd_in(&r, 0, 1) * (t.k[a] / 2);
                t.in[1] = rnd_in(&r, 20, 40);
                const int64_t cg = t.c / t.g; /* X per (image, group) is what counts */
                size_t row = (size_t)((cg + vl - 1) / vl * vl * (t.in[1] + 2)) * sizeof(float);
                t.in[0] = (int64_t)(l2 * (size_t)rnd_in(&r, 90, 120) / 10 / row);
                t.in[2] = t.k[2] = t.s[2] = t.d[2] = 1;
                random_epilogue(&r, &t);
                check_problem(&direct_blocked, algo, &t, &r, pool, k % 2 == 0);
                runs++;
            }
            cf_threadpool_destroy(pool);
        }
    }
    print_message("cpu.direct_blocked slabs: %d problems of 9-12x L2 (%zu bytes) of blocked "
                  "input\n", runs, l2);
    cf_isa_unforce();
}

/* cpu.direct_blocked's tiles of 12 pixels and more keep a share of the reduction within
 * a quarter of L2, narrower ones within half of L1 (direct_blocked.c, DBK_SHARE_L2_NP),
 * and 16-lane tiles from 7 pixels on where 512-bit FMAs run at half rate
 * (DBK_SHARE_L2_NP_HALF); a tile carries its partial sums from one share to the next.
 * Problems whose weights for one output block (16 channels) are 1.5 to 3 times a quarter
 * of L2, so that even the long shares are two or more: 16 or 32 output channels (tiles of
 * one or two blocks), output rows whose AVX-512 tiles have `lo` to `hi` pixels (one tile
 * or two) and 1 to 6 rows, 3x3, 1x7 or 7x1 kernels with padding, strides 1 and 2, bias,
 * residual and activations, either layout, on pools of 1 and 2 threads, at every ISA
 * level (where AVX2's and the portable tiles of few pixels have shorter shares still). */
static void gen_long_shares_rows(rng *r, tconv *t, int64_t lo, int64_t hi)
{
    memset(t, 0, sizeof *t);
    t->nsp = 2;
    t->n = t->g = 1;
    t->m = 16 * rnd_in(r, 1, 2);
    const int shape = rnd_in(r, 0, 2); /* 3x3, 1x7, 7x1 */
    t->k[0] = shape == 1 ? 1 : shape == 2 ? 7 : 3;
    t->k[1] = shape == 1 ? 7 : shape == 2 ? 1 : 3;
    /* One output block's weights: 16 x 16 floats per tap and input block. */
    const size_t block_bytes = (size_t)(t->k[0] * t->k[1] * 16 * 16) * sizeof(float);
    const size_t want = cf_cpu_caches()->l2 / 4 * (size_t)rnd_in(r, 15, 30) / 10;
    t->c = 16 * (int64_t)((want + block_bytes - 1) / block_bytes);
    random_axis(r, t, 0, t->k[0], rnd_in(r, 1, 2), 1, 6);
    /* Rows that AVX-512's tiles cover in one or two runs of lo to hi pixels. */
    int64_t out_w;
    do {
        random_axis(r, t, 1, t->k[1], rnd_in(r, 1, 2), 1, 2 * hi);
        out_w = (t->in[1] + t->pb[1] + t->pe[1] - t->k[1]) / t->s[1] + 1;
    } while (!(out_w >= lo && out_w <= hi) && !(out_w >= 2 * lo && out_w <= 2 * hi));
    t->in[2] = t->k[2] = t->s[2] = t->d[2] = 1;
    random_epilogue(r, t);
}

static void gen_direct_long_shares(rng *r, tconv *t)
{
    gen_long_shares_rows(r, t, 12, 14);
}

static void gen_direct_long_shares_narrow(rng *r, tconv *t)
{
    gen_long_shares_rows(r, t, 7, 11);
}

static void test_direct_blocked_long_shares(void **state)
{
    (void)state;
    static const int threads[] = {1, 2, 0};
    rng r = {0x10a65ull};
    check_direct_blocked_every_level(gen_direct_long_shares, threads, 3, &r);
}

/* Tiles of 7 to 11 pixels with long shares, as a CPU with half-rate 512-bit FMAs runs
 * them, and with short ones, as the others do, whatever this machine is. */
static void test_direct_blocked_long_shares_narrow_tiles(void **state)
{
    (void)state;
    static const int threads[] = {1, 2, 0};
    for (int full = 0; full <= 1; full++) {
        cf_cpu_fma512_force(full);
        rng r = {0x7e11ull + (uint64_t)full};
        check_direct_blocked_every_level(gen_direct_long_shares_narrow, threads, 2, &r);
    }
    cf_cpu_fma512_force(-1);
}

/* Inside the tile kernel, a tile's first and last pixel leave out their products with the
 * taps that read W's padding there (direct_blocked.c, dbk_padding_taps; bits of the
 * kernel's W index below 64).  Rows of 1 to 30 output pixels (one tile, where first and
 * last pixel may be one, or several), kernels 1 to 7 wide and 65 or 70 wide (past the
 * masks), dilations and strides 1 or 2, padding up to the kernel's reach on either side,
 * 1 to 3 rows of 1- or 3-row kernels, either layout, at every ISA level. */
static void gen_w_padding_edges(rng *r, tconv *t)
{
    static const int64_t widths[] = {1, 2, 3, 5, 7, 65, 70};
    memset(t, 0, sizeof *t);
    t->nsp = 2;
    t->n = t->g = 1;
    t->c = rnd_in(r, 1, 2) * 16 + rnd_in(r, 0, 1);
    t->m = 16 * rnd_in(r, 1, 2) + rnd_in(r, 0, 3);
    const int64_t kw = widths[rnd_in(r, 0, 6)];
    random_axis(r, t, 0, rnd_in(r, 0, 1) ? 3 : 1, 1, 1, 3);
    random_axis(r, t, 1, kw, rnd_in(r, 1, 2), kw > 7 ? 1 : rnd_in(r, 1, 2), 30);
    t->in[2] = t->k[2] = t->s[2] = t->d[2] = 1;
    random_epilogue(r, t);
}

static void test_direct_blocked_w_padding_edges(void **state)
{
    (void)state;
    static const int threads[] = {1, 2, 0};
    rng r = {0xed9e5ull};
    check_direct_blocked_every_level(gen_w_padding_edges, threads, 12, &r);
}

static void test_direct_blocked_packed_across_levels(void **state)
{
    (void)state;
    check_packed_across_levels(direct_blocked.algo, gen_general);
}

static void test_direct_blocked_small_workspace(void **state)
{
    (void)state;
    check_small_workspace(direct_blocked.algo, gen_general);
}

/* Not applicable where it cannot compute: ConvTranspose, non-f32, groups of odd size. */
static void test_direct_blocked_applicability(void **state)
{
    (void)state;
    const cf_algo *algo = cf_backend_find(cf_backend_host(), "cpu.direct_blocked");
    assert_non_null(algo);
    rng r = {3};
    tconv t;
    gen_general(&r, &t);
    convfind_problem *p = make_problem(&t);
    cf_problem q = *p;
    assert_true(algo->applicable(&q));
    q.dtype = CONVFIND_DTYPE_F16;
    assert_false(algo->applicable(&q));
    q = *p;
    q.op = CONVFIND_OP_CONV_TRANSPOSE;
    assert_false(algo->applicable(&q));
    q = *p;
    q.c = q.m = 24;
    q.group = 2; /* 12 channels per group: not whole blocks */
    assert_false(algo->applicable(&q));
    convfind_problem_destroy(p);
}

static const family direct_small_c = {"cpu.direct_small_c", gen_small_c, 1.0, false};

static void test_direct_small_c_random(void **state)
{
    (void)state;
    check_family(&direct_small_c);
}

static void test_direct_small_c_packed_across_levels(void **state)
{
    (void)state;
    check_packed_across_levels(direct_small_c.algo, gen_small_c);
}

static void test_direct_small_c_small_workspace(void **state)
{
    (void)state;
    check_small_workspace(direct_small_c.algo, gen_small_c);
}

/* cpu.direct_small_c's staging at the ends of a row: input widths around its blocks
 * of 16 and 32 floats (stride 1 and 2 rows are copied in whole vectors, a partial last
 * one through a zero-padded copy, and the zeros around them are written only once per
 * execution), strides 1 to 3, begin pads 0, 1, 2 and 20 (a left margin of 32 zeros),
 * end pads that differ from them, dilation 1 and 2, NCHW and NHWC with 1 to 3 channels
 * (NHWC rows of one or two channels also go in whole vectors), at every ISA level;
 * Y and the residual start 0 to 15 floats past a 16-byte boundary, so that rows start
 * anywhere in a cache line, as a caller's buffers may. */
static void test_direct_small_c_row_edges(void **state)
{
    (void)state;
    const cf_algo *algo = cf_backend_find(cf_backend_host(), direct_small_c.algo);
    assert_non_null(algo);
    cf_threadpool *pool = NULL;
    assert_int_equal(cf_threadpool_create(2, &pool), CONVFIND_OK);
    static const int64_t widths[] = {1, 2, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 224};
    static const int64_t pads[] = {0, 1, 2, 20};
    int runs = 0;
    for (int level = CF_ISA_PORTABLE; level <= (int)cf_isa_machine(); level++) {
        assert_int_equal(cf_isa_force((cf_isa)level), CONVFIND_OK);
        rng r = {0x5eedull ^ (uint64_t)level};
        for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++)
            for (int64_t st = 1; st <= 3; st++)
                for (size_t pi = 0; pi < sizeof pads / sizeof pads[0]; pi++)
                    for (int nhwc = 0; nhwc < 2; nhwc++) {
                        tconv t;
                        memset(&t, 0, sizeof t);
                        t.nsp = 2;
                        t.n = t.g = 1;
                        t.c = 1 + (int64_t)(wi + pi + (size_t)st) % 3;
                        t.m = 1 + (int64_t)(wi * 5 + pi) % 31;
                        t.in[0] = 5, t.k[0] = 3, t.s[0] = 2, t.d[0] = 1, t.pb[0] = t.pe[0] = 1;
                        t.in[1] = widths[wi];
                        t.k[1] = pads[pi] == 20 ? 11 : 3;
                        t.s[1] = st;
                        t.d[1] = pads[pi] == 20 || st == 3 ? 2 : 1;
                        t.pb[1] = pads[pi];
                        t.pe[1] = pads[pi] / 2;
                        if (t.in[1] + t.pb[1] + t.pe[1] < (t.k[1] - 1) * t.d[1] + 1)
                            continue; /* no output */
                        t.in[2] = t.k[2] = t.s[2] = t.d[2] = 1;
                        t.layout = nhwc ? CONVFIND_LAYOUT_NHWC : CONVFIND_LAYOUT_NCHW;
                        t.bias = true;
                        t.residual = runs % 2;
                        t.act = CONVFIND_ACT_RELU;
                        out_offset = (size_t)runs % 16;
                        check_problem(&direct_small_c, algo, &t, &r, runs % 2 ? pool : NULL,
                                      runs % 3 != 0);
                        runs++;
                    }
    }
    out_offset = 0;
    print_message("cpu.direct_small_c row edges: %d problems\n", runs);
    cf_isa_unforce();
    cf_threadpool_destroy(pool);
}

/* cpu.direct_small_c's flat staging (direct_small_c.h), which it takes for long
 * reductions over rows that are not whole vectors: widths on both sides of 1, 2 and 3
 * vectors at every ISA level (4, 8 and 16 lanes), strides 1 and 2 on both axes, bands of
 * several rows (64 output rows, or 3-D with 4 planes), NCHW and NHWC, activations stored
 * from the registers (vectors split where they cross a row end) and through the buffer
 * (sigmoid), with a residual. */
static void test_direct_small_c_flat_rows(void **state)
{
    (void)state;
    const cf_algo *algo = cf_backend_find(cf_backend_host(), direct_small_c.algo);
    assert_non_null(algo);
    cf_threadpool *pool = NULL;
    assert_int_equal(cf_threadpool_create(2, &pool), CONVFIND_OK);
    static const int64_t widths[] = {5, 7, 9, 13, 17, 20, 23, 37, 50};
    static const convfind_activation acts[] = {CONVFIND_ACT_RELU, CONVFIND_ACT_SIGMOID,
                                               CONVFIND_ACT_NONE};
    int runs = 0;
    for (int level = CF_ISA_PORTABLE; level <= (int)cf_isa_machine(); level++) {
        assert_int_equal(cf_isa_force((cf_isa)level), CONVFIND_OK);
        rng r = {0xf1a7ull ^ (uint64_t)level};
        for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++)
            for (int64_t st = 1; st <= 2; st++)
                for (int v = 0; v < 3; v++) {
                    tconv t;
                    memset(&t, 0, sizeof t);
                    t.n = t.g = 1;
                    bool three = v == 2;
                    t.nsp = three ? 3 : 2;
                    t.c = three ? 3 : 8;
                    t.m = 1 + (int64_t)(wi * 7 + (size_t)st) % 23;
                    int a = 0;
                    if (three) {
                        t.in[0] = 4, t.k[0] = 3, t.s[0] = 1, t.d[0] = 1, t.pb[0] = t.pe[0] = 1;
                        a = 1;
                    }
                    t.in[a] = three ? 16 * st : 64 * st, t.k[a] = 7, t.s[a] = st, t.d[a] = 1;
                    t.pb[a] = t.pe[a] = 3;
                    t.in[a + 1] = widths[wi] * st, t.k[a + 1] = 5, t.s[a + 1] = st;
                    t.d[a + 1] = 1, t.pb[a + 1] = 2, t.pe[a + 1] = 1 + (int64_t)wi % 2;
                    for (int b = a + 2; b < 3; b++)
                        t.in[b] = t.k[b] = t.s[b] = t.d[b] = 1;
                    t.layout = v == 1 ? CONVFIND_LAYOUT_NHWC : CONVFIND_LAYOUT_NCHW;
                    t.bias = true;
                    t.residual = runs % 2;
                    t.act = acts[(size_t)runs % 3];
                    check_problem(&direct_small_c, algo, &t, &r, runs % 2 ? pool : NULL,
                                  runs % 3 != 0);
                    runs++;
                }
    }
    print_message("cpu.direct_small_c flat rows: %d problems\n", runs);
    cf_isa_unforce();
    cf_threadpool_destroy(pool);
}

/* cpu.direct_small_c with Y larger than DSC_STREAM_L2S (4) times the L2 of its two
 * threads, which it stores around the caches (direct_small_c.c, dsc_stream): rows of
 * whole vectors at aligned and shifted addresses of Y (only aligned vectors stream),
 * rows with a tail, a residual, an activation, at every ISA level. */
static void test_direct_small_c_streamed(void **state)
{
    (void)state;
    const cf_algo *algo = cf_backend_find(cf_backend_host(), direct_small_c.algo);
    assert_non_null(algo);
    cf_threadpool *pool = NULL;
    assert_int_equal(cf_threadpool_create(2, &pool), CONVFIND_OK);
    const size_t stream_floats = 4 * cf_cpu_caches()->l2 * 2 / sizeof(float);
    static const int64_t widths[] = {64, 37};
    int runs = 0;
    for (int level = CF_ISA_PORTABLE; level <= (int)cf_isa_machine(); level++) {
        assert_int_equal(cf_isa_force((cf_isa)level), CONVFIND_OK);
        rng r = {0x57eaull ^ (uint64_t)level};
        for (size_t wi = 0; wi < 2 * sizeof widths / sizeof widths[0]; wi++) {
            tconv t;
            memset(&t, 0, sizeof t);
            t.n = t.g = 1;
            t.nsp = 2;
            t.c = 2;
            t.m = 16;
            t.in[1] = widths[wi / 2];
            t.in[0] = (int64_t)(stream_floats / (size_t)(t.m * t.in[1])) * 11 / 10 + 1;
            for (int a = 0; a < 2; a++)
                t.k[a] = 3, t.s[a] = t.d[a] = 1, t.pb[a] = t.pe[a] = 1;
            t.in[2] = t.k[2] = t.s[2] = t.d[2] = 1;
            t.layout = CONVFIND_LAYOUT_NCHW;
            t.bias = true;
            t.residual = wi / 2 == 1;
            t.act = wi / 2 == 0 ? CONVFIND_ACT_RELU : CONVFIND_ACT_CLIP;
            out_offset = wi % 2; /* Y shifted by a float: no vector aligned */
            check_problem(&direct_small_c, algo, &t, &r, pool, true);
            runs++;
        }
    }
    out_offset = 0;
    print_message("cpu.direct_small_c streamed: %d problems of %zu+ floats of Y\n", runs,
                  stream_floats);
    cf_isa_unforce();
    cf_threadpool_destroy(pool);
}

/* Up to 8 input channels per group, not depthwise; Conv, f32 only. */
static void test_direct_small_c_applicability(void **state)
{
    (void)state;
    const cf_algo *algo = cf_backend_find(cf_backend_host(), direct_small_c.algo);
    assert_non_null(algo);
    rng r = {13};
    tconv t;
    gen_small_c(&r, &t);
    convfind_problem *p = make_problem(&t);
    cf_problem q = *p;
    assert_true(algo->applicable(&q));
    q.c = 9;
    q.group = 1;
    assert_false(algo->applicable(&q));
    q.c = q.group = 4; /* depthwise: cpu.depthwise's */
    assert_false(algo->applicable(&q));
    q.c = 8;
    q.group = 4; /* two channels per group */
    assert_true(algo->applicable(&q));
    q = *p;
    q.op = CONVFIND_OP_CONV_TRANSPOSE;
    assert_false(algo->applicable(&q));
    q = *p;
    q.dtype = CONVFIND_DTYPE_F16;
    assert_false(algo->applicable(&q));
    convfind_problem_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direct_blocked_random),
        cmocka_unit_test(test_direct_blocked_paths),
        cmocka_unit_test(test_direct_blocked_task_orders),
        cmocka_unit_test(test_direct_blocked_split_reduction),
        cmocka_unit_test(test_direct_blocked_slabs),
        cmocka_unit_test(test_direct_blocked_long_shares),
        cmocka_unit_test(test_direct_blocked_long_shares_narrow_tiles),
        cmocka_unit_test(test_direct_blocked_w_padding_edges),
        cmocka_unit_test(test_direct_blocked_packed_across_levels),
        cmocka_unit_test(test_direct_blocked_small_workspace),
        cmocka_unit_test(test_direct_blocked_applicability),
        cmocka_unit_test(test_depthwise_random),
        cmocka_unit_test(test_depthwise_planes),
        cmocka_unit_test(test_depthwise_kxk),
        cmocka_unit_test(test_depthwise_packed_across_levels),
        cmocka_unit_test(test_depthwise_small_workspace),
        cmocka_unit_test(test_depthwise_applicability),
        cmocka_unit_test(test_depthwise_3x3_random),
        cmocka_unit_test(test_depthwise_3x3_applicability),
        cmocka_unit_test(test_winograd_f2_random),
        cmocka_unit_test(test_winograd_f4_random),
        cmocka_unit_test(test_winograd_f6_random),
        cmocka_unit_test(test_winograd_packed_across_levels),
        cmocka_unit_test(test_winograd_small_workspace),
        cmocka_unit_test(test_winograd_applicability),
        cmocka_unit_test(test_direct_small_c_random),
        cmocka_unit_test(test_direct_small_c_packed_across_levels),
        cmocka_unit_test(test_direct_small_c_small_workspace),
        cmocka_unit_test(test_direct_small_c_row_edges),
        cmocka_unit_test(test_direct_small_c_flat_rows),
        cmocka_unit_test(test_direct_small_c_streamed),
        cmocka_unit_test(test_direct_small_c_applicability),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
