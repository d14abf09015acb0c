/*
 * test_cuda_graph.c - plans executed inside a CUDA graph capture (convfind.h,
 * convfind_execute_on_stream), and Find after one.
 *
 *   1. A plan whose configuration runs in the other layout (so it needs a workspace
 *      for the transposes) executes once on a stream, then is captured twice into one
 *      graph; the graph is replayed three times on a poisoned Y, each result checked
 *      against the CPU reference.
 *   2. During the capture another host thread, which never executed the plan, executes
 *      it on the capturing stream: it must fail with CONVFIND_ERR_UNSUPPORTED and a
 *      message about the capture, and leave the capture intact (cudaStreamEndCapture
 *      succeeds), rather than create its cuDNN handle inside the capture or fall back to
 *      capturing cuda.direct.
 *   3. After the capture, Find on another problem in the same context and thread must
 *      judge its candidates as a fresh context does: none that runs there may fail.
 *      Before the fix the per-thread workspace's event was last recorded inside the
 *      capture, every later wait on it from another stream (Find's own) failed with
 *      cudaErrorCapturedEvent, and so did every candidate that needed a workspace: Find
 *      chose among the rest, down to cuda.direct.
 *   4. Every configuration a Find measured for a conv1-like layer (f32 NCHW, 7x7 stride
 *      2 over 3 channels; on the H200 engine 28 with knob 3 = 1 broke captures there),
 *      forced, executed once outside a capture, then executed inside one: it must be
 *      captured or refused with CONVFIND_ERR_UNSUPPORTED, and the capture must end
 *      intact either way.
 * Exits 77 (skip) without a GPU.
 */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"

#define CAP 128

static int failures;

static void expect(int ok, const char *what)
{
    if (!ok) {
        printf("FAIL: %s\n", what);
        failures++;
    }
}

static void check_cuda(cudaError_t err, const char *what)
{
    if (err != cudaSuccess) {
        printf("FAIL: %s: %s\n", what, cudaGetErrorString(err));
        exit(1);
    }
}

/* A 3x3 f32 Conv on an NHWC caller, with bias and ReLU (and a residual when asked). */
static void desc_of(convfind_conv_desc *d, int c, int hw, int k, int residual)
{
    convfind_conv_desc_init(d);
    d->layout = CONVFIND_LAYOUT_NHWC;
    d->x_rank = d->w_rank = 4;
    const int64_t x[4] = {2, c, hw, hw}, w[4] = {k, c, 3, 3};
    memcpy(d->x_dims, x, sizeof x);
    memcpy(d->w_dims, w, sizeof w);
    d->pads.count = 4;
    d->pads.v[0] = d->pads.v[1] = d->pads.v[2] = d->pads.v[3] = 1;
    d->has_bias = 1;
    d->has_residual = residual;
    d->activation = CONVFIND_ACT_RELU;
}

typedef struct intruder {
    const convfind_plan *plan;
    convfind_tensors t;
    cudaStream_t stream;
    convfind_status status;
    char message[512];
} intruder;

static void *intrude(void *arg)
{
    intruder *in = arg;
    in->status = convfind_execute_on_stream(in->plan, &in->t, in->stream);
    snprintf(in->message, sizeof in->message, "%s", convfind_last_error());
    return NULL;
}

/* Part 4: every measured configuration of a conv1-like problem is captured or cleanly
 * refused.  Returns the number of failures. */
static int capture_each(convfind_context *ctx, cudaStream_t s)
{
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.x_rank = d.w_rank = 4;
    const int64_t x[4] = {2, 3, 64, 64}, w[4] = {16, 3, 7, 7};
    memcpy(d.x_dims, x, sizeof x);
    memcpy(d.w_dims, w, sizeof w);
    d.strides.count = 2;
    d.strides.v[0] = d.strides.v[1] = 2;
    d.pads.count = 4;
    d.pads.v[0] = d.pads.v[1] = d.pads.v[2] = d.pads.v[3] = 3;
    d.has_bias = 1;
    d.activation = CONVFIND_ACT_RELU;
    convfind_problem *p = gu_problem(&d);
    static convfind_find_result r[CAP];
    int n = 0, bad = 0, captured = 0, refused = 0;
    gu_doing("Find on the conv1-like problem");
    gu_check(convfind_find(ctx, p, CONVFIND_WEIGHTS_PER_CALL, r, CAP, &n), "Find (conv1-like)");
    gu_data data;
    gu_data_init(&data, &d, p, 11);
    convfind_tensors t = gu_tensors(&data);
    for (int i = 0; i < n && i < CAP; i++) {
        convfind_plan *plan;
        if (r[i].status != CONVFIND_CANDIDATE_OK ||
            strncmp(r[i].algorithm, "cuda.cudnn:", 11) != 0 ||
            convfind_plan_create_with_algorithm(ctx, p, r[i].algorithm, &plan) != CONVFIND_OK)
            continue;
        gu_doing("capturing %s", r[i].algorithm);
        gu_check(convfind_execute_on_stream(plan, &t, s), "execute before the capture");
        check_cuda(cudaStreamSynchronize(s), "synchronize");
        check_cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "begin capture");
        const convfind_status st = convfind_execute_on_stream(plan, &t, s);
        char message[512];
        snprintf(message, sizeof message, "%s", convfind_last_error());
        cudaGraph_t g = NULL;
        const cudaError_t ended = cudaStreamEndCapture(s, &g);
        if (g)
            cudaGraphDestroy(g);
        cudaGetLastError();
        if (ended != cudaSuccess || (st != CONVFIND_OK && st != CONVFIND_ERR_UNSUPPORTED)) {
            printf("FAIL: %s: %s (%s), capture %s\n", r[i].algorithm, convfind_status_name(st),
                   message, cudaGetErrorString(ended));
            bad++;
        } else if (st == CONVFIND_OK) {
            captured++;
        } else {
            printf("refused inside a capture: %s\n", message);
            refused++;
        }
        convfind_plan_destroy(plan);
    }
    printf("conv1-like configurations: %d captured, %d refused, %d broke the capture\n",
           captured, refused, bad);
    gu_data_free(&data);
    convfind_problem_destroy(p);
    return bad;
}

/* Status of `name` in results r[0..n), or -1 when absent. */
static int status_of(const convfind_find_result *r, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(r[i].algorithm, name) == 0)
            return (int)r[i].status;
    return -1;
}

int main(void)
{
    gu_require_gpu();
    convfind_context *ctx = gu_context(CONVFIND_FIND_EXHAUSTIVE, NULL);
    convfind_context *fresh = gu_context(CONVFIND_FIND_EXHAUSTIVE, NULL);
    convfind_conv_desc da, db;
    desc_of(&da, 32, 12, 32, 1);
    desc_of(&db, 48, 10, 40, 0);
    convfind_problem *pa = gu_problem(&da), *pb = gu_problem(&db);
    static convfind_find_result before[CAP], after[CAP], listed[CAP];
    int n_before = 0, n_after = 0, n_listed = 0;
    gu_doing("Find on the second problem in a fresh context");
    gu_check(convfind_find(fresh, pb, CONVFIND_WEIGHTS_PER_CALL,
                           before, CAP, &n_before), "Find (fresh context)");

    /* 1: a configuration in the other layout, whose transposes need a workspace. */
    gu_doing("Find on the captured problem");
    gu_check(convfind_find(ctx, pa, CONVFIND_WEIGHTS_PER_CALL,
                           listed, CAP, &n_listed), "Find (captured problem)");
    const char *name = NULL;
    for (int i = 0; i < n_listed && !name; i++)
        if (listed[i].status == CONVFIND_CANDIDATE_OK &&
            strncmp(listed[i].algorithm, "cuda.cudnn:nchw", 15) == 0)
            name = listed[i].algorithm;
    for (int i = 0; i < n_listed && !name; i++)
        if (listed[i].status == CONVFIND_CANDIDATE_OK &&
            strncmp(listed[i].algorithm, "cuda.cudnn:", 11) == 0)
            name = listed[i].algorithm;
    expect(name != NULL, "a cuDNN configuration ran the captured problem");
    if (!name)
        return 1;
    printf("captured configuration: %s\n", name);
    convfind_plan *plan;
    gu_check(convfind_plan_create_with_algorithm(ctx, pa, name, &plan), "plan");
    gu_data d;
    gu_data_init(&d, &da, pa, 7);
    const double tol = gu_tolerance(&da);
    convfind_tensors t = gu_tensors(&d);
    cudaStream_t s;
    check_cuda(cudaStreamCreate(&s), "stream");
    gu_doing("executing %s outside the capture", name);
    gu_poison(&d);
    gu_check(convfind_execute_on_stream(plan, &t, s), "execute before the capture");
    check_cuda(cudaStreamSynchronize(s), "synchronize");
    expect(gu_error(&d) <= tol, "result before the capture");

    gu_doing("capturing %s", name);
    check_cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "begin capture");
    convfind_status first = convfind_execute_on_stream(plan, &t, s);
    /* 2: a thread with no state of its own on the device. */
    intruder in = {.plan = plan, .t = t, .stream = s};
    pthread_t th;
    if (pthread_create(&th, NULL, intrude, &in) != 0) {
        printf("FAIL: pthread_create\n");
        return 1;
    }
    pthread_join(th, NULL);
    convfind_status second = convfind_execute_on_stream(plan, &t, s);
    cudaGraph_t graph = NULL;
    const cudaError_t ended = cudaStreamEndCapture(s, &graph);
    if (first != CONVFIND_OK || second != CONVFIND_OK)
        printf("FAIL: execution inside the capture: %s %s: %s\n", convfind_status_name(first),
               convfind_status_name(second), convfind_last_error());
    failures += first != CONVFIND_OK || second != CONVFIND_OK;
    printf("intruding thread: %s: %s\n", convfind_status_name(in.status), in.message);
    expect(in.status == CONVFIND_ERR_UNSUPPORTED && strstr(in.message, "capture"),
           "an execution that would break the capture fails with a clear status");
    expect(ended == cudaSuccess && graph, "the capture is intact");
    if (ended != cudaSuccess || !graph) {
        printf("  cudaStreamEndCapture: %s\n", cudaGetErrorString(ended));
        return 1;
    }
    cudaGraphExec_t exec;
    check_cuda(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
    for (int r = 0; r < 3; r++) {
        gu_doing("replaying the graph of %s, time %d", name, r + 1);
        gu_poison(&d);
        check_cuda(cudaGraphLaunch(exec, s), "replay");
        check_cuda(cudaStreamSynchronize(s), "synchronize after the replay");
        const double err = gu_error(&d);
        printf("replay %d: relative error %.3g\n", r + 1, err);
        expect(err <= tol, "a replayed result");
    }

    /* 3: Find after the capture, on this thread and context. */
    gu_doing("Find after the capture");
    gu_check(convfind_find(ctx, pb, CONVFIND_WEIGHTS_PER_CALL,
                           after, CAP, &n_after), "Find after the capture");
    int lost = 0;
    for (int i = 0; i < n_after; i++) {
        const int was = status_of(before, n_before, after[i].algorithm);
        if (after[i].status == CONVFIND_CANDIDATE_FAILED && was >= 0 &&
            was != CONVFIND_CANDIDATE_FAILED) {
            printf("FAIL: %s failed after the capture but not in a fresh context\n",
                   after[i].algorithm);
            lost++;
        }
    }
    failures += lost;
    printf("Find after the capture: %s (fresh context: %s), %d candidates lost\n",
           after[0].algorithm, before[0].algorithm, lost);
    expect(strcmp(after[0].algorithm, "cuda.direct") != 0 ||
               strcmp(before[0].algorithm, "cuda.direct") == 0,
           "Find after the capture chose a cuDNN configuration as a fresh context does");

    failures += capture_each(ctx, s);

    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(s);
    gu_data_free(&d);
    convfind_plan_destroy(plan);
    convfind_problem_destroy(pa);
    convfind_problem_destroy(pb);
    convfind_context_destroy(fresh);
    convfind_context_destroy(ctx);
    printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
