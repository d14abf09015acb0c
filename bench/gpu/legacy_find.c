/*
 * legacy_find.c - the peer ONNX Runtime's CUDA provider used: cuDNN's legacy
 * cudnnFindConvolutionForwardAlgorithmEx, per layer, in the caller's layout, then the
 * fastest successful algorithm timed exactly as bench_convfind.c times convfind (5
 * warm-up runs, 15 samples of 10 back-to-back runs, median, non-zero inputs).  Each run
 * is the convolution and the layer's epilogue (layers.h: bias, residual, ReLU or ReLU6)
 * in one elementwise pass after it (bench_kernels.cu), as convfind's fallback
 * epilogue does.
 *
 *   legacy_find <layers.csv> <fp32|tf32|fp16|bf16> <N> <nchw|nhwc>
 *
 * Math: fp32 -> CUDNN_FMA_MATH (no tensor cores), tf32 -> CUDNN_DEFAULT_MATH (TF32
 * allowed), fp16 and bf16 -> CUDNN_TENSOR_OP_MATH with fp32 accumulation.  Last line:
 *   RESULT legacy_find <precision> n=<N> layout=<l> total_ms=<x> find_s=<y>
 */
#include <cuda_runtime.h>
#include <cudnn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_kernels.h"
#include "layers.h"

#define SAMPLES 15
#define BATCH 10

#define CK(call)                                                                               \
    do {                                                                                       \
        cudnnStatus_t s_ = (call);                                                             \
        if (s_ != CUDNN_STATUS_SUCCESS) {                                                      \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,                       \
                    cudnnGetErrorString(s_));                                                  \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

#define CC(call)                                                                               \
    do {                                                                                       \
        int e_ = (int)(call);                                                                  \
        if (e_) {                                                                              \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,                       \
                    cudaGetErrorString((cudaError_t)e_));                                      \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

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

/* One layer's tensors and descriptors. */
typedef struct layer_run {
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    void *x, *w, *y, *b, *z, *ws;
    size_t ws_size;
    int on, oc, oh, ow;
} layer_run;

static void conv_and_epilogue(cudnnHandle_t h, const layer_run *r, cudnnConvolutionFwdAlgo_t algo,
                              convfind_dtype dtype, int nhwc, const bl_epilogue *e,
                              cudaStream_t stream)
{
    const float one = 1.0f, zero = 0.0f;
    CK(cudnnConvolutionForward(h, &one, r->xd, r->x, r->wd, r->w, r->cd, algo, r->ws, r->ws_size,
                               &zero, r->yd, r->y));
    const int act = e->act == CONVFIND_ACT_RELU ? 1 : e->act == CONVFIND_ACT_CLIP ? 2 : 0;
    CC(bench_epilogue(r->y, r->b, e->residual ? r->z : NULL, dtype, r->on, r->oc,
                      (long long)r->oh * r->ow, nhwc, act, stream));
}

int main(int argc, char **argv)
{
    static bl_layer layers[BL_MAX_LAYERS];
    const int nl = bl_args(argc, argv, 5, "layers.csv fp32|tf32|fp16|bf16 N nchw|nhwc", layers);
    if (nl < 0)
        return 2;
    const char *prec = argv[2];
    const int n = atoi(argv[3]);
    const int nhwc = strcmp(argv[4], "nhwc") == 0;
    convfind_dtype dtype;
    convfind_math_mode mm;
    if (bl_precision(prec, &dtype, &mm) != 0 || mm == CONVFIND_MATH_ALLOW_SPLIT_TF32) {
        fprintf(stderr, "precision %s: not one of fp32, tf32, fp16, bf16\n", prec);
        return 2;
    }
    const bool f32 = dtype == CONVFIND_DTYPE_F32;
    const cudnnDataType_t dt = dtype == CONVFIND_DTYPE_F16    ? CUDNN_DATA_HALF
                               : dtype == CONVFIND_DTYPE_BF16 ? CUDNN_DATA_BFLOAT16
                                                              : CUDNN_DATA_FLOAT;
    const cudnnMathType_t math = !f32                        ? CUDNN_TENSOR_OP_MATH
                                 : strcmp(prec, "tf32") == 0 ? CUDNN_DEFAULT_MATH
                                                             : CUDNN_FMA_MATH;
    const cudnnTensorFormat_t fmt = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    const size_t esz = f32 ? 4 : 2;
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    cudnnHandle_t h;
    CK(cudnnCreate(&h));
    cudaStream_t stream;
    CC(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CK(cudnnSetStream(h, stream));
    cudaEvent_t e0, e1;
    CC(cudaEventCreate(&e0));
    CC(cudaEventCreate(&e1));
    double total = 0, find_total = 0;
    for (int i = 0; i < nl; i++) {
        const bl_layer *l = &layers[i];
        const bl_epilogue ep = bl_epilogue_of(l);
        layer_run r = {0};
        CK(cudnnCreateTensorDescriptor(&r.xd));
        CK(cudnnCreateTensorDescriptor(&r.yd));
        CK(cudnnCreateFilterDescriptor(&r.wd));
        CK(cudnnCreateConvolutionDescriptor(&r.cd));
        CK(cudnnSetTensor4dDescriptor(r.xd, fmt, dt, n, l->c, l->h, l->w));
        CK(cudnnSetFilter4dDescriptor(r.wd, dt, fmt, l->k, l->c / l->group, l->r, l->s));
        CK(cudnnSetConvolution2dDescriptor(r.cd, l->pad_h, l->pad_w, l->stride_h, l->stride_w,
                                           l->dil_h, l->dil_w, CUDNN_CROSS_CORRELATION,
                                           CUDNN_DATA_FLOAT));
        CK(cudnnSetConvolutionGroupCount(r.cd, l->group));
        CK(cudnnSetConvolutionMathType(r.cd, math));
        CK(cudnnGetConvolution2dForwardOutputDim(r.cd, r.xd, r.wd, &r.on, &r.oc, &r.oh, &r.ow));
        CK(cudnnSetTensor4dDescriptor(r.yd, fmt, dt, r.on, r.oc, r.oh, r.ow));
        const size_t nx = (size_t)n * l->c * l->h * l->w,
                     nw = (size_t)l->k * (l->c / l->group) * l->r * l->s,
                     ny = (size_t)r.on * r.oc * r.oh * r.ow;
        CC(cudaMalloc(&r.x, nx * esz));
        CC(cudaMalloc(&r.w, nw * esz));
        CC(cudaMalloc(&r.y, ny * esz));
        CC(cudaMalloc(&r.b, (size_t)r.oc * esz));
        CC(cudaMalloc(&r.z, ny * esz));
        CC(bench_fill(r.x, dtype, nx, 11, stream));
        CC(bench_fill(r.w, dtype, nw, 12, stream));
        CC(bench_fill(r.b, dtype, (size_t)r.oc, 13, stream));
        CC(bench_fill(r.z, dtype, ny, 14, stream));
        /* The same workspace Find may use as ONNX Runtime's default: as much as fits. */
        r.ws_size = (size_t)1 << 30;
        CC(cudaMalloc(&r.ws, r.ws_size));
        CC(cudaStreamSynchronize(stream));
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int got = 0;
        const double t0 = now_s();
        CK(cudnnFindConvolutionForwardAlgorithmEx(h, r.xd, r.x, r.wd, r.w, r.cd, r.yd, r.y,
                                                  CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf,
                                                  r.ws, r.ws_size));
        const double find_s = now_s() - t0;
        find_total += find_s;
        int pick = -1;
        for (int j = 0; j < got && pick < 0; j++)
            if (perf[j].status == CUDNN_STATUS_SUCCESS)
                pick = j;
        if (pick < 0) {
            fprintf(stderr, "%s: no algorithm\n", l->name);
            return 1;
        }
        CK(cudnnSetConvolutionMathType(r.cd, perf[pick].mathType));
        for (int k = 0; k < 5; k++)
            conv_and_epilogue(h, &r, perf[pick].algo, dtype, nhwc, &ep, stream);
        float ms[SAMPLES];
        for (int s = 0; s < SAMPLES; s++) {
            CC(cudaEventRecord(e0, stream));
            for (int k = 0; k < BATCH; k++)
                conv_and_epilogue(h, &r, perf[pick].algo, dtype, nhwc, &ep, stream);
            CC(cudaEventRecord(e1, stream));
            CC(cudaEventSynchronize(e1));
            CC(cudaEventElapsedTime(&ms[s], e0, e1));
            ms[s] /= BATCH;
        }
        qsort(ms, SAMPLES, sizeof ms[0], cmp);
        total += l->count * (double)ms[SAMPLES / 2];
        printf("layer %-22s x%d %s %s call_ms=%.4f find_s=%.3f algo=%d math=%d\n", l->name,
               l->count, prec, nhwc ? "nhwc" : "nchw", ms[SAMPLES / 2], find_s,
               (int)perf[pick].algo, (int)perf[pick].mathType);
        fflush(stdout);
        void *bufs[] = {r.x, r.w, r.y, r.b, r.z, r.ws};
        for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++)
            cudaFree(bufs[k]);
        cudnnDestroyTensorDescriptor(r.xd);
        cudnnDestroyTensorDescriptor(r.yd);
        cudnnDestroyFilterDescriptor(r.wd);
        cudnnDestroyConvolutionDescriptor(r.cd);
    }
    printf("RESULT legacy_find %s n=%d layout=%s total_ms=%.4f find_s=%.2f\n", prec, n,
           nhwc ? "nhwc" : "nchw", total, find_total);
    cudnnDestroy(h);
    return 0;
}
