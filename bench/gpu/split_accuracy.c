/*
 * split_accuracy.c - how close each kind of cuDNN configuration comes to the exact
 * convolution on a network's layers (issue 6, docs/cuda.md): plain strict f32, split
 * (f32 on TF32 tensor cores, "+x3", graph.h, under CONVFIND_MATH_ALLOW_SPLIT_TF32) and
 * plain TF32, against the CPU reference
 * (which accumulates in double), at N=1 on uniform random data in (-1, 1).
 *
 *   split_accuracy <layers.csv> [NCHW|NHWC]
 *
 * Per layer: the normwise relative error ||y - ref|| / ||ref|| of the first plain f32
 * configuration in the heuristics' order that cuDNN accepts, of the least accurate plain
 * f32 one (Winograd and FFT engines are plain f32 too) and split one that a validating
 * Find could choose, and of the first TF32 one, each with its name.
 * A measurement, not a test (tests/gpu/test_cuda_conv checks split results against a
 * bound).  Exits 77 without a GPU.  It reads the CUDA backend's candidate lists through
 * the core's internals, so it links the core statically: run it with
 * CONVFIND_CUDA_MODULE=<build>/libconvfind_cuda.so unless the module is installed.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/registry.h"
#include "core/context.h"
#include "gpu_util.h"
#include "layers.h"

/* The strict tolerance of a validating Find (src/cuda/find.c): what "least accurate"
 * below considers, since a Find never chooses a configuration beyond it. */
#define STRICT_TOL 1e-4

/* Error of the first heuristic (or with `worst`, the least accurate within STRICT_TOL
 * of all a validating Find tries, the unlisted engines included) cuDNN configuration
 * of p whose name contains `want` and not `avoid` (either may be NULL); -1 when none
 * ran.  Its name goes to `name`. */
static double error_of(convfind_context *ctx, const convfind_problem *p, gu_data *d,
                       const char *want, const char *avoid, bool worst, char name[64])
{
    /* The candidates of the CUDA backend's Find (algo/backend.h), cuda.direct last. */
    enum { CAP = 256 };
    static const cf_algo *algos[CAP];
    static cf_candidate_stats listed[CAP];
    const int cap = cf_backend_max_candidates(ctx->backend);
    memset(listed, 0, sizeof listed);
    const unsigned lists = CF_FIND_LIST_INEXACT | (worst ? CF_FIND_LIST_UNVETTED : 0);
    const int count = ctx->backend->find->enumerate(ctx->device, p, 0, lists, algos, listed,
                                                    cap < CAP ? cap : CAP);
    double err = -1;
    strcpy(name, "-");
    convfind_tensors t = gu_tensors(d);
    for (int c = 0; c < count && (worst || err < 0); c++) {
        const char *n = listed[c].algo;
        if (!algos[c]->prepare_named || (want && !strstr(n, want)) || (avoid && strstr(n, avoid)))
            continue;
        void *state;
        if (cf_algo_prepare(algos[c], p, n, &state) != CONVFIND_OK)
            continue;
        cf_exec_args a = {.x = t.x, .w = t.w, .y = t.y, .device = ctx->device};
        gu_poison(d);
        if (algos[c]->execute(p, state, &a) == CONVFIND_OK) {
            double e = gu_error(d);
            if (e > err && e <= STRICT_TOL) {
                err = e;
                memcpy(name, n, 64); /* names are at most 63 characters */
            }
        }
        algos[c]->release(state);
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
        const double e[4] = {
            error_of(ctx, ps, &d, NULL, "+x3", false, n[0]),
            error_of(ctx, ps, &d, NULL, "+x3", true, n[1]),
            error_of(ctx, px, &d, "+x3", NULL, true, n[2]),
            error_of(ctx, pt, &d, NULL, NULL, false, n[3]),
        };
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
