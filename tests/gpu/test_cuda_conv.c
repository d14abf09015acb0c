/*
 * test_cuda_conv.c - the CUDA backend against the CPU reference on random problems:
 * groups, dilations, strides, asymmetric pads, 1-D/2-D/3-D, ConvTranspose with output
 * padding, NCHW and NHWC, f32 strict, TF32 and split, f16 and bf16, bias/residual/ReLU.
 *
 * Per problem: cuda.direct (the fallback and Find's reference), every cuDNN
 * configuration the heuristics offer (up to a cap; each one cuDNN accepts must be
 * right, a refusal is counted), and the plan Find chooses under EXHAUSTIVE.  After the
 * random problems come fixed ones whose pads cuDNN cannot take (negative ConvTranspose
 * pads from output_shape, output padding >= stride): their configurations are the
 * padded ones ("+pad", explicit window kernels around the engine), and at least one
 * must run and be right.  Split configurations ("+x3", f32 on TF32 tensor cores,
 * graph.h; a validating Find's list under CONVFIND_MATH_ALLOW_SPLIT_TF32 only, never
 * under strict math) must be as close to the reference as the validating Find
 * requires, CF_CUDNN_SPLIT_TOL, a tenth of the strict tolerance; the worst errors of
 * split and plain f32 configurations are printed side by side.  Last, two problems
 * of one fused-epilogue pattern must both get fused configurations
 * (check_fused_kept), and an engine that widened a strict f32 list must leave the
 * widened lists of its pattern, and only those, once Find found it beyond saving there
 * twice (check_hopeless_left_out).  A failure names what
 * ran last (gu_doing): a sticky CUDA error surfaces only at the next synchronization.
 * Exits 77 (skip) without a GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/registry.h"
#include "core/context.h"
#include "cuda/graph.h"
#include "gpu_util.h"

#define PROBLEMS 36
#define CONFIGS_PER_PROBLEM 24
#define SPLITS_PER_PROBLEM 6
#define SPLIT_TOL CF_CUDNN_SPLIT_TOL

static unsigned rng = 12345;

static int pick(int lo, int hi)
{
    rng = rng * 1103515245u + 12345u;
    return lo + (int)((rng >> 8) % (unsigned)(hi - lo + 1));
}

/* A random valid descriptor (retries until the output is non-empty). */
static void random_desc(convfind_conv_desc *d, int i)
{
    for (;;) {
        convfind_conv_desc_init(d);
        d->op = pick(0, 9) < 7 ? CONVFIND_OP_CONV : CONVFIND_OP_CONV_TRANSPOSE;
        static const convfind_dtype dts[] = {CONVFIND_DTYPE_F32, CONVFIND_DTYPE_F32,
                                             CONVFIND_DTYPE_F16, CONVFIND_DTYPE_BF16};
        d->dtype = dts[i % 4];
        /* f32: strict, TF32, and every second strict one split (3xTF32) instead. */
        d->math_mode = i % 4 == 1   ? CONVFIND_MATH_ALLOW_TF32
                       : i % 8 == 0 ? CONVFIND_MATH_ALLOW_SPLIT_TF32
                                    : CONVFIND_MATH_STRICT;
        d->layout = pick(0, 1) ? CONVFIND_LAYOUT_NHWC : CONVFIND_LAYOUT_NCHW;
        int nsp = pick(0, 5) == 0 ? 1 : pick(0, 5) == 0 ? 3 : 2;
        int64_t g = pick(1, 3), cpg = pick(1, 6), mpg = pick(1, 6);
        d->group = g;
        d->x_rank = d->w_rank = nsp + 2;
        d->x_dims[0] = pick(1, 3);
        d->x_dims[1] = g * cpg;
        d->w_dims[0] = d->op == CONVFIND_OP_CONV ? g * mpg : g * cpg;
        d->w_dims[1] = d->op == CONVFIND_OP_CONV ? cpg : mpg;
        d->strides.count = d->dilations.count = nsp;
        d->pads.count = 2 * nsp;
        if (d->op == CONVFIND_OP_CONV_TRANSPOSE)
            d->output_padding.count = nsp;
        bool ok = true;
        for (int s = 0; s < nsp; s++) {
            int64_t k = pick(1, 3), st = pick(1, 2), dil = pick(1, 2);
            int64_t in = nsp == 3 ? pick(3, 6) : pick(4, 12);
            d->x_dims[2 + s] = in;
            d->w_dims[2 + s] = k;
            d->strides.v[s] = st;
            d->dilations.v[s] = dil;
            d->pads.v[s] = pick(0, 2);
            d->pads.v[nsp + s] = pick(0, 2);
            if (d->op == CONVFIND_OP_CONV_TRANSPOSE) {
                d->output_padding.v[s] = pick(0, (int)st - 1);
                ok = ok && (in - 1) * st + dil * (k - 1) + 1 + d->output_padding.v[s] >
                               d->pads.v[s] + d->pads.v[nsp + s];
            } else {
                ok = ok && in + d->pads.v[s] + d->pads.v[nsp + s] >= dil * (k - 1) + 1;
            }
        }
        d->has_bias = pick(0, 1);
        d->has_residual = pick(0, 3) == 0;
        d->activation = pick(0, 1) ? CONVFIND_ACT_RELU : CONVFIND_ACT_NONE;
        if (ok)
            return;
    }
}

#define PAD_PROBLEMS 3

/* Problems only padded configurations can run (see the top of the file). */
static void padding_desc(convfind_conv_desc *d, int j)
{
    convfind_conv_desc_init(d);
    d->op = CONVFIND_OP_CONV_TRANSPOSE;
    d->layout = j == 1 ? CONVFIND_LAYOUT_NHWC : CONVFIND_LAYOUT_NCHW;
    d->dtype = j == 2 ? CONVFIND_DTYPE_F16 : CONVFIND_DTYPE_F32;
    d->x_rank = d->w_rank = 4;
    const int64_t x[4] = {2, 4, 5, 6}, w[4] = {4, 3, 3, 3};
    memcpy(d->x_dims, x, sizeof x);
    memcpy(d->w_dims, w, sizeof w);
    d->strides.count = d->dilations.count = 2;
    d->has_bias = j != 0;
    d->activation = j == 2 ? CONVFIND_ACT_RELU : CONVFIND_ACT_NONE;
    if (j == 0) { /* output padding 2 >= stride 2 (allowed: below the dilation, 3) */
        d->strides.v[0] = d->strides.v[1] = 2;
        d->dilations.v[0] = d->dilations.v[1] = 3;
        d->output_padding.count = 2;
        d->output_padding.v[0] = d->output_padding.v[1] = 2;
    } else { /* output_shape one past the full output (11x13): a pad of -1 per axis */
        d->strides.v[0] = d->strides.v[1] = 2;
        d->dilations.v[0] = d->dilations.v[1] = 1;
        d->output_shape.count = 2;
        d->output_shape.v[0] = 12;
        d->output_shape.v[1] = 14;
    }
}

static int failures;

static void expect_ok(double err, double tol, const char *what, const char *algo, int i)
{
    if (!(err <= tol)) {
        printf("FAIL problem %d %s %s: error %.3g > %.3g\n", i, what, algo, err, tol);
        failures++;
    }
}

/* What the configurations run so far did. */
typedef struct config_stats {
    int ok, refused, padded, split;
    double worst_split, worst_f32; /* errors of split and plain strict-f32 configurations */
} config_stats;

/* Runs cuDNN configuration `name` of problem i and checks its result against `tol`. */
static void check_config(convfind_context *ctx, const convfind_problem *p, gu_data *d,
                         const convfind_conv_desc *desc, const char *name, double tol, int i,
                         config_stats *cs)
{
    convfind_tensors t = gu_tensors(d);
    const cf_algo *cudnn = cf_context_algo(ctx, name);
    void *state = NULL;
    gu_doing("running configuration %s of problem %d", name, i);
    gu_check(cudnn ? cf_algo_prepare(cudnn, p, name, &state) : CONVFIND_ERR_NOT_FOUND, name);
    cf_exec_args a = {.x = t.x, .w = t.w, .b = t.b, .z = t.z, .y = t.y, .device = ctx->device};
    gu_poison(d);
    if (cudnn->execute(p, state, &a) == CONVFIND_OK) {
        const bool split = strstr(name, "+x3") != NULL;
        const double err = gu_error(d);
        cs->ok++;
        cs->padded += strstr(name, "+pad") != NULL;
        cs->split += split;
        expect_ok(err, tol, "config", name, i);
        if (split && err > cs->worst_split)
            cs->worst_split = err;
        if (!split && desc->dtype == CONVFIND_DTYPE_F32 &&
            desc->math_mode != CONVFIND_MATH_ALLOW_TF32 && err > cs->worst_f32)
            cs->worst_f32 = err;
    } else {
        cs->refused++;
    }
    cudnn->release(state);
}

/* "+ep" configurations in the candidate list of a 1x1 f16 NHWC Conv with a bias (the
 * form of MobileNetV2's projections, where fused configurations won), c -> m channels. */
static int fused_listed(convfind_context *ctx, int64_t c, int64_t m, int64_t hw,
                        const cf_algo **algos, cf_candidate_stats *listed, int cap)
{
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.dtype = CONVFIND_DTYPE_F16;
    d.layout = CONVFIND_LAYOUT_NHWC;
    d.x_rank = d.w_rank = 4;
    const int64_t x[4] = {1, c, hw, hw}, w[4] = {m, c, 1, 1};
    memcpy(d.x_dims, x, sizeof x);
    memcpy(d.w_dims, w, sizeof w);
    d.has_bias = true;
    convfind_problem *p = gu_problem(&d);
    memset(listed, 0, (size_t)cap * sizeof *listed);
    const int n = ctx->backend->find->enumerate(ctx->device, p, 0, CF_FIND_LIST_INEXACT, algos,
                                                listed, cap);
    int fused = 0;
    for (int i = 0; i < n; i++)
        fused += strstr(listed[i].algo, "+ep") != NULL;
    convfind_problem_destroy(p);
    return fused;
}

/* The device remembers the fused patterns whose list came back empty and skips them
 * (src/cuda/algos.c); a pattern that had fused configurations must keep them for the
 * next problem of that pattern. */
static void check_fused_kept(const cf_algo **algos, cf_candidate_stats *listed, int cap)
{
    convfind_context *ctx = gu_context(CONVFIND_FIND_HEURISTIC, NULL);
    const int first = fused_listed(ctx, 32, 16, 28, algos, listed, cap);
    const int second = fused_listed(ctx, 64, 32, 14, algos, listed, cap);
    if (first == 0) {
        printf("SKIP fused check: cuDNN listed no fused configuration for a 1x1 f16 NHWC Conv "
               "with a bias on this device, so there was nothing to keep\n");
    } else if (second == 0) {
        printf("FAIL: a second problem of a fused pattern with %d fused configurations got "
               "none\n", first);
        failures++;
    } else {
        printf("fused configurations of one pattern: %d, then %d\n", first, second);
    }
    convfind_context_destroy(ctx);
}

/* A strict f32 NCHW 3x3 Conv, c -> m channels on hw x hw, with or without a bias:
 * ResNet's layers, whose validating lists widen beyond mode A's. */
static convfind_problem *strict_3x3(int64_t c, int64_t m, int64_t hw, bool bias)
{
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.x_rank = d.w_rank = 4;
    const int64_t x[4] = {1, c, hw, hw}, w[4] = {m, c, 3, 3};
    memcpy(d.x_dims, x, sizeof x);
    memcpy(d.w_dims, w, sizeof w);
    d.pads.count = 4;
    for (int i = 0; i < 4; i++)
        d.pads.v[i] = 1;
    d.has_bias = bias;
    return gu_problem(&d);
}

/* Whether `engine` (a name prefix such as "cuda.cudnn:nchw:e7") is among listed[0..n). */
static bool lists_engine(const cf_candidate_stats *listed, int n, const char *engine)
{
    const size_t len = strlen(engine);
    for (int i = 0; i < n; i++)
        if (strncmp(listed[i].algo, engine, len) == 0 &&
            (listed[i].algo[len] == 0 || listed[i].algo[len] == ':'))
            return true;
    return false;
}

/* Whether the validating list of `p` on `ctx`'s device has `engine` (listed: scratch). */
static bool validating_lists(convfind_context *ctx, convfind_problem *p, const char *engine,
                             const cf_algo **algos, cf_candidate_stats *listed, int cap)
{
    memset(listed, 0, (size_t)cap * sizeof *listed);
    const int n = ctx->backend->find->enumerate(ctx->device, p, 0, CF_FIND_LIST_VALIDATING,
                                                algos, listed, cap);
    return lists_engine(listed, n, engine);
}

/* An engine that only the widening brought into a strict f32 list (an unlisted one: in
 * the validating list, not in the heuristics-only one), reported beyond saving by two
 * Finds of that pattern (the learn hook, as find.c calls it), must be gone from the
 * pattern's validating lists, those of a problem that differs only in its epilogue
 * included (an unfused engine runs without it), and stay in those of a problem of
 * another pattern (60 channels: another alignment).  One report is not enough. */
static void check_hopeless_left_out(const cf_algo **algos, cf_candidate_stats *listed, int cap)
{
    convfind_context *ctx = gu_context(CONVFIND_FIND_HEURISTIC, NULL);
    const cf_find_hooks *hooks = ctx->backend->find;
    convfind_problem *a = strict_3x3(64, 64, 28, true), *b = strict_3x3(128, 128, 14, true);
    convfind_problem *bare = strict_3x3(64, 64, 28, false), *other = strict_3x3(60, 60, 28, true);
    cf_candidate_stats *plain = calloc((size_t)cap, sizeof *plain);
    if (!plain)
        gu_check(CONVFIND_ERR_OUT_OF_MEMORY, "candidate lists");
    const int np = hooks->enumerate(ctx->device, a, 0, CF_FIND_LIST_INEXACT, algos, plain, cap);
    memset(listed, 0, (size_t)cap * sizeof *listed);
    const int n = hooks->enumerate(ctx->device, a, 0, CF_FIND_LIST_VALIDATING, algos, listed,
                                   cap);
    char engine[CF_ALGO_NAME_MAX] = "";
    for (int i = 0; i < n && !engine[0]; i++) {
        const char *name = listed[i].algo;
        const char *colon = strncmp(name, "cuda.cudnn:nchw:e", 17) == 0 ? strchr(name + 17, ':')
                                                                        : NULL;
        const size_t len = colon ? (size_t)(colon - name) : strlen(name);
        snprintf(engine, sizeof engine, "%.*s", (int)len, name);
        if (strncmp(name, "cuda.cudnn:nchw:e", 17) != 0 || lists_engine(plain, np, engine))
            engine[0] = 0;
    }
    if (!engine[0] || !validating_lists(ctx, b, engine, algos, listed, cap) ||
        !validating_lists(ctx, bare, engine, algos, listed, cap) ||
        !validating_lists(ctx, other, engine, algos, listed, cap)) {
        printf("SKIP hopeless check: no unlisted NCHW engine widened all four strict f32 3x3 "
               "lists on this device (%d and %d configurations listed)\n", np, n);
    } else {
        cf_candidate_stats ranked[2] = {{.status = CF_CAND_OK}, {.status = CF_CAND_ABANDONED}};
        snprintf(ranked[0].algo, sizeof ranked[0].algo, "%s", plain[0].algo);
        snprintf(ranked[1].algo, sizeof ranked[1].algo, "%s", engine);
        const bool far[2] = {false, true};
        hooks->learn(ctx->device, a, ranked, far, 2);
        const bool after_one = validating_lists(ctx, b, engine, algos, listed, cap);
        hooks->learn(ctx->device, b, ranked, far, 2);
        const bool after_two = validating_lists(ctx, a, engine, algos, listed, cap);
        const bool bare_after = validating_lists(ctx, bare, engine, algos, listed, cap);
        const bool other_after = validating_lists(ctx, other, engine, algos, listed, cap);
        if (!after_one || after_two || bare_after || !other_after) {
            printf("FAIL: %s widened the list: after one report %s, after two %s, without "
                   "the bias %s, for another pattern %s\n", engine,
                   after_one ? "listed" : "gone", after_two ? "listed" : "gone",
                   bare_after ? "listed" : "gone", other_after ? "listed" : "gone");
            failures++;
        } else {
            printf("hopeless engine %s: listed after one report, gone after two (also without "
                   "the bias), kept for another pattern\n", engine);
        }
    }
    free(plain);
    convfind_problem_destroy(a);
    convfind_problem_destroy(b);
    convfind_problem_destroy(bare);
    convfind_problem_destroy(other);
    convfind_context_destroy(ctx);
}

int main(void)
{
    gu_require_gpu();
    convfind_context *forced = gu_context(CONVFIND_FIND_HEURISTIC, NULL);
    convfind_context *tuned = gu_context(CONVFIND_FIND_EXHAUSTIVE, NULL);
    /* The CUDA backend's candidate lists, as its Find sees them (algo/backend.h). */
    const cf_find_hooks *hooks = forced->backend->find;
    const int cap = cf_backend_max_candidates(forced->backend);
    const cf_algo **algos = calloc((size_t)cap, sizeof *algos);
    cf_candidate_stats *listed = calloc((size_t)cap, sizeof *listed);
    if (!algos || !listed)
        gu_check(CONVFIND_ERR_OUT_OF_MEMORY, "candidate lists");
    config_stats cs = {0};
    int cudnn_chosen = 0;
    for (int i = 0; i < PROBLEMS + PAD_PROBLEMS; i++) {
        convfind_conv_desc desc;
        if (i < PROBLEMS)
            random_desc(&desc, i);
        else
            padding_desc(&desc, i - PROBLEMS);
        convfind_problem *p = gu_problem(&desc);
        char text[256];
        convfind_problem_describe(p, text, sizeof text);
        gu_data d;
        gu_data_init(&d, &desc, p, (unsigned)i + 1);
        const double tol = gu_tolerance(&desc);
        convfind_tensors t = gu_tensors(&d);

        convfind_plan *plan;
        gu_doing("running cuda.direct on problem %d (%s)", i, text);
        gu_check(convfind_plan_create_with_algorithm(forced, p, "cuda.direct", &plan), "direct");
        gu_poison(&d);
        gu_check(convfind_execute(plan, &t), "direct execute");
        expect_ok(gu_error(&d), tol, "forced", "cuda.direct", i);
        if (desc.has_residual) { /* the residual in place is a CPU context's only */
            convfind_tensors in_place = t;
            in_place.z = in_place.y;
            if (convfind_execute(plan, &in_place) != CONVFIND_ERR_UNSUPPORTED) {
                printf("FAIL problem %d: z = y not refused on a CUDA context\n", i);
                failures++;
            }
        }
        convfind_plan_destroy(plan);

        cf_decision dec;
        gu_check(cf_context_heuristic(forced, p, &dec), "candidates");
        int tested = 0;
        for (int c = 0; c < dec.n_candidates && tested < CONFIGS_PER_PROBLEM; c++) {
            const char *name = dec.candidates[c].algo;
            if (strncmp(name, "cuda.cudnn:", 11) != 0)
                continue;
            tested++;
            check_config(forced, p, &d, &desc, name, tol, i, &cs);
        }
        cf_decision_clear(&dec);
        /* Split configurations come only with the validating Find's list (the
         * heuristics' engines here: unlisted ones need not be right), and only under
         * ALLOW_SPLIT_TF32: strict math never splits. */
        memset(listed, 0, (size_t)cap * sizeof *listed);
        int n = hooks->enumerate(forced->device, p, 0, CF_FIND_LIST_INEXACT, algos, listed, cap);
        for (int c = 0, split = 0; c < n && split < SPLITS_PER_PROBLEM; c++)
            if (strstr(listed[c].algo, "+x3")) {
                if (desc.math_mode != CONVFIND_MATH_ALLOW_SPLIT_TF32) {
                    printf("FAIL problem %d: split configuration %s listed without "
                           "CONVFIND_MATH_ALLOW_SPLIT_TF32\n", i, listed[c].algo);
                    failures++;
                    continue;
                }
                split++;
                tested++;
                check_config(forced, p, &d, &desc, listed[c].algo, SPLIT_TOL, i, &cs);
            }

        gu_doing("Find on problem %d (%s; CONVFIND_FIND_TRACE=1 names each candidate)", i,
                 text);
        gu_check(convfind_plan_create(tuned, p, &plan), "plan (Find)");
        gu_poison(&d);
        gu_check(convfind_execute(plan, &t), "execute (Find)");
        const char *chosen = convfind_plan_algorithm(plan);
        cudnn_chosen += strncmp(chosen, "cuda.cudnn:", 11) == 0;
        expect_ok(gu_error(&d), tol, "found", chosen, i);
        printf("problem %2d: %s -> %s (%d configs tried)\n", i, text, chosen, tested);
        convfind_plan_destroy(plan);
        gu_data_free(&d);
        convfind_problem_destroy(p);
    }
    check_fused_kept(algos, listed, cap);
    check_hopeless_left_out(algos, listed, cap);
    convfind_context_stats s = {.struct_size = sizeof s};
    gu_check(convfind_context_stats_get(tuned, &s), "stats");
    printf("cuDNN configurations: %d correct (%d padded, %d split), %d refused by cuDNN; Find "
           "chose cuDNN for %d of %d problems; %llu finds, %d failures\n",
           cs.ok, cs.padded, cs.split, cs.refused, cudnn_chosen, PROBLEMS + PAD_PROBLEMS,
           (unsigned long long)s.finds, failures);
    printf("worst relative error: split (3xTF32) %.3g, plain strict f32 %.3g\n",
           cs.worst_split, cs.worst_f32);
    if (cs.ok == 0 || cs.padded == 0 || cs.split == 0) {
        printf("FAIL: no %scuDNN configuration ran\n",
               cs.ok == 0 ? "" : cs.padded == 0 ? "padded " : "split ");
        failures++;
    }
    free(algos);
    free(listed);
    convfind_context_destroy(tuned);
    convfind_context_destroy(forced);
    return failures ? 1 : 0;
}
