/*
 * legacy_find.c - the peer ONNX Runtime's CUDA provider used: cuDNN's legacy
 * cudnnFindConvolutionForwardAlgorithmEx on NCHW tensors, per layer, then the fastest
 * successful algorithm timed exactly as bench_convfind.c times convfind (5 warm-up runs,
 * 15 samples of 10 back-to-back runs, median, non-zero inputs).
 *
 *   legacy_find <layers.csv> <fp32|tf32|fp16> <N>
 *
 * Math: fp32 -> CUDNN_FMA_MATH (no tensor cores), tf32 -> CUDNN_DEFAULT_MATH (TF32
 * allowed), fp16 -> CUDNN_TENSOR_OP_MATH with fp32 accumulation.  Last line:
 *   RESULT legacy_find <precision> n=<N> total_ms=<x>
 */
#include <cuda_runtime.h>
#include <cudnn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/kernels.h"
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

int main(int argc, char **argv)
{
    static bl_layer layers[BL_MAX_LAYERS];
    const int nl = bl_args(argc, argv, 4, "layers.csv fp32|tf32|fp16 N", layers);
    if (nl < 0)
        return 2;
    const char *prec = argv[2];
    const int n = atoi(argv[3]);
    const bool half = strcmp(prec, "fp16") == 0;
    const cudnnDataType_t dt = half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    const cudnnMathType_t math = half                         ? CUDNN_TENSOR_OP_MATH
                                 : strcmp(prec, "tf32") == 0 ? CUDNN_DEFAULT_MATH
                                                             : CUDNN_FMA_MATH;
    const size_t esz = half ? 2 : 4;
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
    double total = 0;
    for (int i = 0; i < nl; i++) {
        const bl_layer *l = &layers[i];
        cudnnTensorDescriptor_t xd, yd;
        cudnnFilterDescriptor_t wd;
        cudnnConvolutionDescriptor_t cd;
        CK(cudnnCreateTensorDescriptor(&xd));
        CK(cudnnCreateTensorDescriptor(&yd));
        CK(cudnnCreateFilterDescriptor(&wd));
        CK(cudnnCreateConvolutionDescriptor(&cd));
        CK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, dt, n, l->c, l->h, l->w));
        CK(cudnnSetFilter4dDescriptor(wd, dt, CUDNN_TENSOR_NCHW, l->k, l->c / l->group, l->r,
                                      l->s));
        CK(cudnnSetConvolution2dDescriptor(cd, l->pad_h, l->pad_w, l->stride_h, l->stride_w,
                                           l->dil_h, l->dil_w, CUDNN_CROSS_CORRELATION,
                                           CUDNN_DATA_FLOAT));
        CK(cudnnSetConvolutionGroupCount(cd, l->group));
        CK(cudnnSetConvolutionMathType(cd, math));
        int on, oc, oh, ow;
        CK(cudnnGetConvolution2dForwardOutputDim(cd, xd, wd, &on, &oc, &oh, &ow));
        CK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, dt, on, oc, oh, ow));
        const size_t nx = (size_t)n * l->c * l->h * l->w,
                     nw = (size_t)l->k * (l->c / l->group) * l->r * l->s,
                     ny = (size_t)on * oc * oh * ow;
        void *x, *w, *y, *ws = NULL;
        CC(cudaMalloc(&x, nx * esz));
        CC(cudaMalloc(&w, nw * esz));
        CC(cudaMalloc(&y, ny * esz));
        CC(cf_cuda_fill(x, half ? 1 : 0, nx, 11, stream));
        CC(cf_cuda_fill(w, half ? 1 : 0, nw, 12, stream));
        /* The same workspace Find may use as ONNX Runtime's default: as much as fits. */
        size_t ws_size = (size_t)1 << 30;
        CC(cudaMalloc(&ws, ws_size));
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int got = 0;
        CK(cudnnFindConvolutionForwardAlgorithmEx(h, xd, x, wd, w, cd, yd, y,
                                                  CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf,
                                                  ws, ws_size));
        int pick = -1;
        for (int j = 0; j < got && pick < 0; j++)
            if (perf[j].status == CUDNN_STATUS_SUCCESS)
                pick = j;
        if (pick < 0) {
            fprintf(stderr, "%s: no algorithm\n", l->name);
            return 1;
        }
        CK(cudnnSetConvolutionMathType(cd, perf[pick].mathType));
        const float one = 1.0f, zero = 0.0f;
        for (int r = 0; r < 5; r++)
            CK(cudnnConvolutionForward(h, &one, xd, x, wd, w, cd, perf[pick].algo, ws, ws_size,
                                       &zero, yd, y));
        float ms[SAMPLES];
        for (int s = 0; s < SAMPLES; s++) {
            CC(cudaEventRecord(e0, stream));
            for (int r = 0; r < BATCH; r++)
                CK(cudnnConvolutionForward(h, &one, xd, x, wd, w, cd, perf[pick].algo, ws,
                                           ws_size, &zero, yd, y));
            CC(cudaEventRecord(e1, stream));
            CC(cudaEventSynchronize(e1));
            CC(cudaEventElapsedTime(&ms[s], e0, e1));
            ms[s] /= BATCH;
        }
        qsort(ms, SAMPLES, sizeof ms[0], cmp);
        total += l->count * (double)ms[SAMPLES / 2];
        printf("layer %-22s x%d %s legacy algo=%d math=%d median_ms=%.4f\n", l->name, l->count,
               prec, (int)perf[pick].algo, (int)perf[pick].mathType, ms[SAMPLES / 2]);
        cudaFree(x);
        cudaFree(w);
        cudaFree(y);
        cudaFree(ws);
        cudnnDestroyTensorDescriptor(xd);
        cudnnDestroyTensorDescriptor(yd);
        cudnnDestroyFilterDescriptor(wd);
        cudnnDestroyConvolutionDescriptor(cd);
    }
    printf("RESULT legacy_find %s n=%d total_ms=%.4f\n", prec, n, total);
    cudnnDestroy(h);
    return 0;
}
