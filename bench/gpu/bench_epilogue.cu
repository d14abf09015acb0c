/*
 * bench_epilogue.cu - the layers' epilogue for the benchmark peers that have none of
 * their own (legacy_find): Y = act(Y + B + Z) in one pass, as convfind's own fallback
 * epilogue does, so that every contender computes the same thing (layers.h).
 */
#include "bench_epilogue.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

__device__ float to_f(float v) { return v; }
__device__ float to_f(__half v) { return __half2float(v); }
__device__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ void from_f(float *p, float v) { *p = v; }
__device__ void from_f(__half *p, float v) { *p = __float2half_rn(v); }
__device__ void from_f(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }

template <typename T>
__global__ void epilogue(T *y, const T *b, const T *z, long long total, int c, long long sp,
                         int nhwc, int act)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const int ch = nhwc ? (int)(i % c) : (int)((i / sp) % c);
        float v = to_f(y[i]) + to_f(b[ch]);
        if (z)
            v += to_f(z[i]);
        if (act == 1)
            v = v > 0.0f ? v : 0.0f;
        else if (act == 2)
            v = v < 0.0f ? 0.0f : (v > 6.0f ? 6.0f : v);
        from_f(&y[i], v);
    }
}

} // namespace

extern "C" int bench_epilogue(void *y, const void *b, const void *z, int dtype, long long n,
                              int c, long long sp, int nhwc, int act, void *stream)
{
    const long long total = n * c * sp;
    long long blocks = (total + 255) / 256;
    const unsigned grid = (unsigned)(blocks > 65536 ? 65536 : blocks < 1 ? 1 : blocks);
    cudaStream_t s = (cudaStream_t)stream;
    if (dtype == 0)
        epilogue<<<grid, 256, 0, s>>>((float *)y, (const float *)b, (const float *)z, total, c,
                                      sp, nhwc, act);
    else if (dtype == 1)
        epilogue<<<grid, 256, 0, s>>>((__half *)y, (const __half *)b, (const __half *)z, total,
                                      c, sp, nhwc, act);
    else
        epilogue<<<grid, 256, 0, s>>>((__nv_bfloat16 *)y, (const __nv_bfloat16 *)b,
                                      (const __nv_bfloat16 *)z, total, c, sp, nhwc, act);
    return (int)cudaGetLastError();
}
