/*
 * bench_convfind.c - convfind's CUDA backend on a network's layers (docs/cuda.md).
 *
 *   bench_convfind <layers.csv> <fp32|split|tf32|fp16|bf16> <N> [find budget s]
 *
 * Each layer computes what the network does after its convolution (layers.h,
 * bl_epilogue_of: bias, residual, ReLU or ReLU6).  For each caller layout (NCHW, NHWC):
 * one CUDA context (EXHAUSTIVE Find, validation on; the find-db is $BENCH_DB, else in
 * memory); per layer a plan with constant weights, packed once (Find runs here, timing
 * the candidates so, its time reported apart), then two timings on non-zero inputs, each 5
 * warm-up runs and 15 samples of 10 runs between CUDA events, the median / 10:
 *   call   10 executions from C, back to back;
 *   graph  one replay of a CUDA graph that captured the 10 executions (where the chosen
 *          configuration refuses to be captured, the fastest candidate of its Find that
 *          can be, named as graph_algo=).
 * Per layer:  layer <name> x<count> <precision> <layout> call_ms=<x> graph_ms=<y>
 *             find_s=<z> <configuration>
 * Last, per layout and for the faster layout per layer ("best"; totals are count x
 * layer time):
 *   RESULT convfind <precision> n=<N> layout=<nchw|nhwc|best> call_ms=<x> graph_ms=<y>
 *          find_s=<z>
 * find_s is what the layer's first call costs: creating the plan (Find) and its first
 * execution, synchronized (the kernels' first loading included), as PyTorch's first call
 * with cudnn.benchmark on is.  BENCH_POLICY=heuristic creates plans with the HEURISTIC
 * policy instead (mode A's first configuration, no Find) and BENCH_FIRST_ONLY=1 skips the
 * timings: run.sh runs that in a process of its own, so that Find's cost is the first
 * calls' time with Find minus without, measured as PyTorch's benchmark cost is.
 * BENCH_CANDIDATES=K also prints, per layer, how many candidates Find measured, failed
 * or abandoned and its K best (configuration, median ms), to see which engines win.
 */
#include <cuda_runtime.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_kernels.h"
#include "convfind.h"
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
    check(convfind_find(ctx, p, CONVFIND_WEIGHTS_CONSTANT, r, CAP, &count), "find");
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

/* One execution, or with `graph` one replay of the BATCH executions it holds. */
typedef struct runner {
    const convfind_plan *plan;
    const void *w; /* the plans' constant weights (t.w is NULL) */
    convfind_tensors t;
    cudaStream_t stream;
    cudaGraphExec_t graph;
} runner;

static void run_batch(const runner *r)
{
    if (r->graph) {
        check_cuda(cudaGraphLaunch(r->graph, r->stream), "graph launch");
        return;
    }
    for (int i = 0; i < BATCH; i++)
        check(convfind_execute_on_stream(r->plan, &r->t, r->stream), "execute");
}

/* Median time of one execution: SAMPLES batches between events after warm-ups. */
static double time_layer(const runner *r, cudaEvent_t e0, cudaEvent_t e1)
{
    for (int i = 0; i < 5; i++)
        run_batch(r);
    float ms[SAMPLES];
    for (int s = 0; s < SAMPLES; s++) {
        check_cuda(cudaEventRecord(e0, r->stream), "record");
        run_batch(r);
        check_cuda(cudaEventRecord(e1, r->stream), "record");
        check_cuda(cudaEventSynchronize(e1), "sync");
        check_cuda(cudaEventElapsedTime(&ms[s], e0, e1), "elapsed");
        ms[s] /= BATCH;
    }
    qsort(ms, SAMPLES, sizeof ms[0], cmp);
    return ms[SAMPLES / 2];
}

/* The BATCH executions captured into a graph on r->stream; NULL, with the capture ended
 * and the error cleared, when an execution refuses to be captured. */
static cudaGraphExec_t capture(const runner *r)
{
    cudaGraph_t g = NULL;
    cudaGraphExec_t exec = NULL;
    check_cuda(cudaStreamBeginCapture(r->stream, cudaStreamCaptureModeGlobal), "begin capture");
    convfind_status st = CONVFIND_OK;
    for (int i = 0; i < BATCH && st == CONVFIND_OK; i++)
        st = convfind_execute_on_stream(r->plan, &r->t, r->stream);
    if (st != CONVFIND_OK)
        printf("  capture of %s refused: %s\n", convfind_plan_algorithm(r->plan),
               convfind_last_error());
    const cudaError_t ended = cudaStreamEndCapture(r->stream, &g);
    if (st == CONVFIND_OK && ended == cudaSuccess)
        check_cuda(cudaGraphInstantiate(&exec, g, 0), "instantiate");
    if (g)
        cudaGraphDestroy(g);
    cudaGetLastError();
    return exec;
}

/* The graph time of the layer: its plan's, or when the plan's configuration cannot be
 * captured, that of the fastest candidate of its Find that can (as a runtime that
 * replays graphs would choose); *used names it. */
static double graph_time(convfind_context *ctx, const convfind_problem *p, runner r,
                         cudaEvent_t e0, cudaEvent_t e1, const char **used)
{
    *used = convfind_plan_algorithm(r.plan);
    if ((r.graph = capture(&r))) {
        const double ms = time_layer(&r, e0, e1);
        cudaGraphExecDestroy(r.graph);
        return ms;
    }
    enum { CAP = 128 };
    static convfind_find_result res[CAP];
    int count = 0;
    check(convfind_find(ctx, p, CONVFIND_WEIGHTS_CONSTANT, res, CAP, &count), "find");
    for (int i = 0; i < count && i < CAP; i++) {
        if (res[i].status != CONVFIND_CANDIDATE_OK || strcmp(res[i].algorithm, *used) == 0)
            continue;
        convfind_plan_options po;
        convfind_plan_options_init(&po);
        po.algorithm = res[i].algorithm;
        po.weights = r.w;
        convfind_plan *alt;
        if (convfind_plan_create_ex(ctx, p, &po, &alt) != CONVFIND_OK)
            continue;
        runner a = r;
        a.plan = alt;
        a.graph = NULL;
        run_batch(&a); /* outside the capture first: the thread's plan and its trial */
        double ms = -1;
        if ((a.graph = capture(&a))) {
            ms = time_layer(&a, e0, e1);
            cudaGraphExecDestroy(a.graph);
            *used = res[i].algorithm;
        }
        convfind_plan_destroy(alt);
        if (ms >= 0)
            return ms;
    }
    fprintf(stderr, "no candidate of this layer can be captured\n");
    exit(1);
}

typedef struct totals {
    double call, graph, find;
} totals;

int main(int argc, char **argv)
{
    static bl_layer layers[BL_MAX_LAYERS];
    const int nl =
        bl_args(argc, argv, 4, "layers.csv fp32|split|tf32|fp16|bf16 N [find budget s]", layers);
    if (nl < 0)
        return 2;
    const char *prec = argv[2];
    const int n = atoi(argv[3]);
    convfind_dtype dt;
    convfind_math_mode mm;
    if (bl_precision(prec, &dt, &mm) != 0) {
        fprintf(stderr, "unknown precision %s\n", prec);
        return 2;
    }
    const size_t esz = dt == CONVFIND_DTYPE_F32 ? 4 : 2;
    const int top = getenv("BENCH_CANDIDATES") ? atoi(getenv("BENCH_CANDIDATES")) : 0;
    const char *db = getenv("BENCH_DB");
    const char *policy = getenv("BENCH_POLICY");
    const bool heuristic = policy && strcmp(policy, "heuristic") == 0;
    const bool first_only = getenv("BENCH_FIRST_ONLY") && atoi(getenv("BENCH_FIRST_ONLY"));
    char why[256];
    if (!convfind_cuda_available(0, why, sizeof why)) {
        printf("SKIP: %s\n", why);
        return 77;
    }
    static double call_ms[2][BL_MAX_LAYERS], graph_ms[2][BL_MAX_LAYERS];
    totals tot[3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
    for (int li = 0; li < 2; li++) {
        const convfind_layout layout = li ? CONVFIND_LAYOUT_NHWC : CONVFIND_LAYOUT_NCHW;
        convfind_context_options o;
        convfind_context_options_init(&o);
        o.device = CONVFIND_DEVICE_CUDA;
        o.find_policy = heuristic ? CONVFIND_FIND_HEURISTIC
                        : db      ? CONVFIND_FIND_HYBRID
                                  : CONVFIND_FIND_EXHAUSTIVE;
        o.db_path = db ? db : ":memory:";
        o.find_time_budget_s = argc > 4 ? atof(argv[4]) : 0.3;
        convfind_context *ctx;
        check(convfind_context_create(&o, &ctx), "context");
        cudaStream_t stream;
        cudaEvent_t e0, e1;
        check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
        check_cuda(cudaEventCreate(&e0), "event");
        check_cuda(cudaEventCreate(&e1), "event");
        for (int i = 0; i < nl; i++) {
            convfind_conv_desc d;
            bl_desc_fused(&layers[i], n, dt, mm, layout, &d);
            convfind_problem *p;
            check(convfind_problem_create(&d, &p), layers[i].name);
            size_t nx, nw, ny, nb;
            check(convfind_problem_sizes(p, &nx, &nw, &ny, &nb), "sizes");
            void *x, *w, *y, *b, *z = NULL;
            check_cuda(cudaMalloc(&x, nx * esz), "x");
            check_cuda(cudaMalloc(&w, nw * esz), "w");
            check_cuda(cudaMalloc(&y, ny * esz), "y");
            check_cuda(cudaMalloc(&b, nb * esz), "b");
            check_cuda(bench_fill(x, dt, nx, 11, stream), "fill x");
            check_cuda(bench_fill(w, dt, nw, 12, stream), "fill w");
            check_cuda(bench_fill(b, dt, nb, 13, stream), "fill b");
            if (d.has_residual) {
                check_cuda(cudaMalloc(&z, ny * esz), "z");
                check_cuda(bench_fill(z, dt, ny, 14, stream), "fill z");
            }
            check_cuda(cudaStreamSynchronize(stream), "fill");
            if (top > 0)
                show_candidates(ctx, p, top);
            /* As an inference runtime would: constant weights, packed once into the chosen
             * configuration's layout (PyTorch's channels_last weights are, too), as Find
             * timed the candidates. */
            double t0 = now_s();
            convfind_plan *plan;
            convfind_plan_options po;
            convfind_plan_options_init(&po);
            po.weights = w;
            check(convfind_plan_create_ex(ctx, p, &po, &plan), "plan");
            runner r = {.plan = plan, .w = w, .t = {.x = x, .b = b, .z = z, .y = y},
                        .stream = stream};
            check(convfind_execute_on_stream(plan, &r.t, stream), "first execution");
            check_cuda(cudaStreamSynchronize(stream), "first execution");
            const double find_s = now_s() - t0;
            const char *used = convfind_plan_algorithm(plan);
            if (!first_only) {
                call_ms[li][i] = time_layer(&r, e0, e1);
                graph_ms[li][i] = graph_time(ctx, p, r, e0, e1, &used);
            }
            tot[li].call += layers[i].count * call_ms[li][i];
            tot[li].graph += layers[i].count * graph_ms[li][i];
            tot[li].find += find_s;
            printf("layer %-22s x%d %s %s call_ms=%.4f graph_ms=%.4f find_s=%.3f %s%s%s\n",
                   layers[i].name, layers[i].count, prec, li ? "nhwc" : "nchw", call_ms[li][i],
                   graph_ms[li][i], find_s, convfind_plan_algorithm(plan),
                   strcmp(used, convfind_plan_algorithm(plan)) ? " graph_algo=" : "",
                   strcmp(used, convfind_plan_algorithm(plan)) ? used : "");
            fflush(stdout);
            convfind_plan_destroy(plan);
            convfind_problem_destroy(p);
            cudaFree(x);
            cudaFree(w);
            cudaFree(y);
            cudaFree(b);
            if (z)
                cudaFree(z);
        }
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
        cudaStreamDestroy(stream);
        convfind_context_destroy(ctx);
    }
    for (int i = 0; i < nl; i++) {
        const double c = call_ms[0][i] < call_ms[1][i] ? call_ms[0][i] : call_ms[1][i];
        const double g = graph_ms[0][i] < graph_ms[1][i] ? graph_ms[0][i] : graph_ms[1][i];
        tot[2].call += layers[i].count * c;
        tot[2].graph += layers[i].count * g;
    }
    tot[2].find = tot[0].find + tot[1].find;
    const char *names[3] = {"nchw", "nhwc", "best"};
    for (int k = 0; k < 3; k++)
        printf("RESULT convfind %s n=%d layout=%s call_ms=%.4f graph_ms=%.4f find_s=%.2f\n", prec,
               n, names[k], tot[k].call, tot[k].graph, tot[k].find);
    return 0;
}
