/*
 * split_accuracy.c - how close each kind of cuDNN configuration comes to the exact
 * convolution on a network's layers (issue 6, docs/cuda.md): plain strict f32, split
 * (f32 on TF32 tensor cores, "+x3", under CONVFIND_MATH_ALLOW_SPLIT_TF32) and plain
 * TF32, against the CPU reference (which accumulates in double), at N=1 on uniform
 * random data in (-1, 1).
 *
 *   split_accuracy <layers.csv> [NCHW|NHWC]
 *
 * Per layer: the normwise relative error ||y - ref|| / ||ref|| of the heuristics' choice
 * for plain f32 (what a HEURISTIC context runs), of the least accurate plain f32 one
 * (Winograd and FFT engines are plain f32 too) and split one that a validating Find
 * could choose, and of the heuristics' choice for TF32, each with its name.
 * A measurement, not a test (tests/gpu/test_cuda_conv checks split results against a
 * bound).  Exits 77 without a GPU.  Public API only: the candidates are those
 * convfind_find measures, each run alone by a plan forced to it.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"
#include "layers.h"

/* The strict tolerance of a validating Find (docs/cuda.md): what "least accurate" below
 * considers, since a Find never chooses a configuration beyond it. */
#define STRICT_TOL 1e-4

/* Error of configuration `name` forced on p, run once into a poisoned Y; -1 when it is
 * no cuDNN configuration, cannot be forced on p, or did not run itself (the execution
 * fell back to another algorithm, which the context counts). */
static double error_of(convfind_context *ctx, const convfind_problem *p, gu_data *d,
                       const char *name)
{
    convfind_plan *plan;
    if (strncmp(name, "cuda.cudnn", 10) != 0 ||
        convfind_plan_create_with_algorithm(ctx, p, name, &plan) != CONVFIND_OK)
        return -1;
    convfind_context_stats before = {.struct_size = sizeof before};
    convfind_context_stats after = {.struct_size = sizeof after};
    gu_check(convfind_context_stats_get(ctx, &before), "stats");
    const convfind_tensors t = gu_tensors(d);
    gu_poison(d);
    double err = -1;
    if (convfind_execute(plan, &t) == CONVFIND_OK) {
        err = gu_error(d);
        gu_check(convfind_context_stats_get(ctx, &after), "stats");
        if (after.fallbacks != before.fallbacks)
            err = -1;
    }
    convfind_plan_destroy(plan);
    return err;
}

/* Error of the heuristics' choice for p (the context's policy is HEURISTIC), -1 when it
 * does not run; its name goes to `name`.  Before any Find of p's key, which would
 * replace that choice. */
static double first_error(convfind_context *ctx, const convfind_problem *p, gu_data *d,
                          char name[64])
{
    convfind_plan *plan;
    gu_check(convfind_plan_create(ctx, p, &plan), "heuristic plan");
    snprintf(name, 64, "%s", convfind_plan_algorithm(plan));
    convfind_plan_destroy(plan);
    return error_of(ctx, p, d, name);
}

/* Error of the least accurate within STRICT_TOL of the cuDNN configurations a
 * validating Find of p tries (the unlisted engines included) whose name contains `want`
 * and not `avoid` (either may be NULL); -1 when none ran.  Its name goes to `name`. */
static double worst_error(convfind_context *ctx, const convfind_problem *p, gu_data *d,
                          const char *want, const char *avoid, char name[64])
{
    enum { CAP = 512 };
    static convfind_find_result r[CAP];
    int count = 0;
    gu_check(convfind_find(ctx, p, CONVFIND_WEIGHTS_PER_CALL, r, CAP, &count), "find");
    double err = -1;
    strcpy(name, "-");
    for (int c = 0; c < count && c < CAP; c++) {
        const char *n = r[c].algorithm;
        if ((want && !strstr(n, want)) || (avoid && strstr(n, avoid)))
            continue;
        const double e = error_of(ctx, p, d, n);
        if (e > err && e <= STRICT_TOL) {
            err = e;
            snprintf(name, 64, "%s", n);
        }
    }
    return err;
}

int main(int argc, char **argv)
{
    static bl_layer layers[BL_MAX_LAYERS];
    const int nl = bl_args(argc, argv, 2, "layers.csv [NCHW|NHWC]", layers);
    if (nl < 0)
        return 2;
    gu_require_gpu();
    const convfind_layout layout = argc > 2 && strcmp(argv[2], "NHWC") == 0
                                       ? CONVFIND_LAYOUT_NHWC
                                       : CONVFIND_LAYOUT_NCHW;
    convfind_context *ctx = gu_context(CONVFIND_FIND_HEURISTIC, NULL);
    printf("layer relative errors against the double-accumulating CPU reference, N=1, %s\n",
           layout == CONVFIND_LAYOUT_NHWC ? "NHWC" : "NCHW");
    for (int i = 0; i < nl; i++) {
        convfind_conv_desc strict, split, tf32;
        bl_desc(&layers[i], 1, CONVFIND_DTYPE_F32, CONVFIND_MATH_STRICT, layout, &strict);
        bl_desc(&layers[i], 1, CONVFIND_DTYPE_F32, CONVFIND_MATH_ALLOW_SPLIT_TF32, layout, &split);
        bl_desc(&layers[i], 1, CONVFIND_DTYPE_F32, CONVFIND_MATH_ALLOW_TF32, layout, &tf32);
        convfind_problem *ps = gu_problem(&strict), *px = gu_problem(&split),
                         *pt = gu_problem(&tf32);
        gu_data d;
        gu_data_init(&d, &strict, ps, (unsigned)i + 1);
        char n[4][64];
        double e[4];
        /* In this order: the Find of ps's key replaces its heuristic choice. */
        e[0] = first_error(ctx, ps, &d, n[0]);
        e[1] = worst_error(ctx, ps, &d, NULL, "+x3", n[1]);
        e[2] = worst_error(ctx, px, &d, "+x3", NULL, n[2]);
        e[3] = first_error(ctx, pt, &d, n[3]);
        printf("%s\n  f32 first %.3g (%s)\n  f32 worst %.3g (%s)\n  split worst %.3g (%s)\n"
               "  tf32 first %.3g (%s)\n", layers[i].name, e[0], n[0], e[1], n[1], e[2], n[2],
               e[3], n[3]);
        gu_data_free(&d);
        convfind_problem_destroy(pt);
        convfind_problem_destroy(px);
        convfind_problem_destroy(ps);
    }
    convfind_context_destroy(ctx);
    return 0;
}
