/*
 * bench_convfind.c - convfind's CUDA backend on a network's convolutions (issue 6).
 *
 *   bench_convfind <layers.csv> <fp32|tf32|fp16> <N> [find budget s]
 *
 * For each caller layout (NCHW, NHWC): one CUDA context (EXHAUSTIVE Find, validation
 * on, in-memory database); per layer a plan (Find runs here, its time reported apart),
 * weights packed once (convfind_packed_weights_create), then the execution timed with
 * CUDA events: 5 warm-up runs, then 15 samples of 10
 * back-to-back runs each on non-zero inputs; the layer's time is the median sample /
 * 10.  total_ms = sum of count x layer time; the faster caller layout is reported last:
 *   RESULT convfind <precision> n=<N> total_ms=<x> layout=<l>
 * BENCH_CANDIDATES=K also prints, per layer, how many candidates Find measured, failed
 * or abandoned and its K best (configuration, median ms), to see which engines win.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convfind.h"
#include "cuda/kernels.h"
#include "layers.h"

#define SAMPLES 15
#define BATCH 10

static void check(convfind_status st, const char *what)
{
    if (st != CONVFIND_OK) {
        fprintf(stderr, "%s: %s: %s\n", what, convfind_status_name(st), convfind_last_error());
        exit(1);
    }
}

static void check_cuda(int err, const char *what)
{
    if (err) {
        fprintf(stderr, "%s: %s\n", what, cudaGetErrorString((cudaError_t)err));
        exit(1);
    }
}

static int cmp(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Find's ranked candidates for one layer: counts by status and the `top` best. */
static void show_candidates(convfind_context *ctx, const convfind_problem *p, int top)
{
    enum { CAP = 512 };
    static convfind_find_result r[CAP];
    int count = 0, by_status[4] = {0, 0, 0, 0};
    check(convfind_find(ctx, p, r, CAP, &count), "find");
    const int shown = count < CAP ? count : CAP;
    for (int i = 0; i < shown; i++)
        by_status[r[i].status]++;
    printf("  candidates %d: ok %d failed %d not_applicable %d abandoned %d\n", count,
           by_status[CONVFIND_CANDIDATE_OK], by_status[CONVFIND_CANDIDATE_FAILED],
           by_status[CONVFIND_CANDIDATE_NOT_APPLICABLE], by_status[CONVFIND_CANDIDATE_ABANDONED]);
    for (int i = 0; i < shown && i < top; i++)
        printf("  #%d %s %s median_ms=%.4f\n", i + 1, r[i].algorithm,
               r[i].status == CONVFIND_CANDIDATE_OK ? "ok" : "not-timed", r[i].median_ms);
}

int main(int argc, char **argv)
{
    static bl_layer layers[BL_MAX_LAYERS];
    const int nl = bl_args(argc, argv, 4, "layers.csv fp32|tf32|fp16 N [find budget s]", layers);
    if (nl < 0)
        return 2;
    const char *prec = argv[2];
    const int n = atoi(argv[3]);
    const convfind_dtype dt = strcmp(prec, "fp16") == 0 ? CONVFIND_DTYPE_F16 : CONVFIND_DTYPE_F32;
    const convfind_math_mode mm =
        strcmp(prec, "tf32") == 0 ? CONVFIND_MATH_ALLOW_TF32 : CONVFIND_MATH_STRICT;
    const size_t esz = dt == CONVFIND_DTYPE_F32 ? 4 : 2;
    const int top = getenv("BENCH_CANDIDATES") ? atoi(getenv("BENCH_CANDIDATES")) : 0;
    char why[256];
    if (!convfind_cuda_available(0, why, sizeof why)) {
        printf("SKIP: %s\n", why);
        return 77;
    }
    double best_total = -1;
    const char *best_layout = "";
    for (int li = 0; li < 2; li++) {
        const convfind_layout layout = li ? CONVFIND_LAYOUT_NHWC : CONVFIND_LAYOUT_NCHW;
        convfind_context_options o;
        convfind_context_options_init(&o);
        o.device = CONVFIND_DEVICE_CUDA;
        o.find_policy = CONVFIND_FIND_EXHAUSTIVE;
        o.db_path = ":memory:";
        o.find_time_budget_s = argc > 4 ? atof(argv[4]) : 0.3;
        convfind_context *ctx;
        check(convfind_context_create(&o, &ctx), "context");
        cudaStream_t stream;
        cudaEvent_t e0, e1;
        check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
        check_cuda(cudaEventCreate(&e0), "event");
        check_cuda(cudaEventCreate(&e1), "event");
        double total = 0, find_s = 0;
        for (int i = 0; i < nl; i++) {
            convfind_conv_desc d;
            bl_desc(&layers[i], n, dt, mm, layout, &d);
            convfind_problem *p;
            check(convfind_problem_create(&d, &p), layers[i].name);
            size_t nx, nw, ny;
            check(convfind_problem_sizes(p, &nx, &nw, &ny, NULL), "sizes");
            void *x, *w, *y;
            check_cuda(cudaMalloc(&x, nx * esz), "x");
            check_cuda(cudaMalloc(&w, nw * esz), "w");
            check_cuda(cudaMalloc(&y, ny * esz), "y");
            check_cuda(cf_cuda_fill(x, dt, nx, 11, stream), "fill x");
            check_cuda(cf_cuda_fill(w, dt, nw, 12, stream), "fill w");
            double t0 = now_s();
            if (top > 0)
                show_candidates(ctx, p, top);
            convfind_plan *plan;
            check(convfind_plan_create(ctx, p, &plan), "plan");
            find_s += now_s() - t0;
            /* As an inference runtime would: weights packed once into the chosen
             * configuration's layout (PyTorch's channels_last weights are, too). */
            convfind_packed_weights *pw;
            check(convfind_packed_weights_create(plan, w, &pw), "packed weights");
            convfind_tensors t = {.x = x, .w = w, .y = y, .packed_w = pw};
            for (int r = 0; r < 5; r++)
                check(convfind_execute_on_stream(plan, &t, stream), "warm-up");
            float ms[SAMPLES];
            for (int s = 0; s < SAMPLES; s++) {
                cudaEventRecord(e0, stream);
                for (int r = 0; r < BATCH; r++)
                    check(convfind_execute_on_stream(plan, &t, stream), "execute");
                cudaEventRecord(e1, stream);
                check_cuda(cudaEventSynchronize(e1), "sync");
                check_cuda(cudaEventElapsedTime(&ms[s], e0, e1), "elapsed");
                ms[s] /= BATCH;
            }
            qsort(ms, SAMPLES, sizeof ms[0], cmp);
            total += layers[i].count * (double)ms[SAMPLES / 2];
            printf("layer %-22s x%d %s %s median_ms=%.4f %s\n", layers[i].name, layers[i].count,
                   prec, li ? "nhwc" : "nchw", ms[SAMPLES / 2], convfind_plan_algorithm(plan));
            convfind_packed_weights_destroy(pw);
            convfind_plan_destroy(plan);
            convfind_problem_destroy(p);
            cudaFree(x);
            cudaFree(w);
            cudaFree(y);
        }
        printf("convfind %s n=%d layout=%s total_ms=%.4f find_s=%.1f\n", prec, n,
               li ? "nhwc" : "nchw", total, find_s);
        if (best_total < 0 || total < best_total) {
            best_total = total;
            best_layout = li ? "nhwc" : "nchw";
        }
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
        cudaStreamDestroy(stream);
        convfind_context_destroy(ctx);
    }
    printf("RESULT convfind %s n=%d total_ms=%.4f layout=%s\n", prec, n, best_total, best_layout);
    return 0;
}
