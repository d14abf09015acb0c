/*
 * bench_kernels.cu - the GPU benchmarks' device helpers (bench_kernels.h).
 *
 * bench_fill gives every contender the same non-zero inputs, seeded per tensor; its
 * values are those the benchmarks have always measured on, so results stay comparable
 * with the recorded runs.  bench_epilogue is the layers' epilogue for the peers that
 * have none of their own (legacy_find): Y = act(Y + B + Z) in one pass, as convfind's
 * own fallback epilogue does, so that every contender computes the same thing
 * (layers.h).
 */
#include "bench_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <type_traits>

namespace {

__device__ float to_f(float v) { return v; }
__device__ float to_f(__half v) { return __half2float(v); }
__device__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ void from_f(float *p, float v) { *p = v; }
__device__ void from_f(__half *p, float v) { *p = __float2half_rn(v); }
__device__ void from_f(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }

/* A value in (-1, 1), never 0: 24 bits of a SplitMix64-style mix of (seed, i). */
__device__ float value_at(uint64_t seed, long long i)
{
    uint64_t s = (seed + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)i * 0xbf58476d1ce4e5b9ull);
    s = (s ^ (s >> 31)) * 0x94d049bb133111ebull;
    s ^= s >> 29;
    return ((float)(int32_t)((s >> 40) & 0xffffff) - 8388607.5f) / 8388608.0f;
}

template <typename T> __global__ void fill(T *dst, long long total, uint64_t seed)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x)
        from_f(&dst[i], value_at(seed, i));
}

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

/* Launches `launch` with the element type of `dtype` (as a null pointer of it) on a
 * grid of 256-thread blocks covering `total`, at most 65536 blocks (the loops stride). */
template <typename F> int by_dtype(convfind_dtype dtype, long long total, F launch)
{
    const long long blocks = (total + 255) / 256;
    const unsigned grid = (unsigned)(blocks > 65536 ? 65536 : blocks < 1 ? 1 : blocks);
    if (dtype == CONVFIND_DTYPE_F16)
        launch((__half *)nullptr, grid);
    else if (dtype == CONVFIND_DTYPE_BF16)
        launch((__nv_bfloat16 *)nullptr, grid);
    else
        launch((float *)nullptr, grid);
    return (int)cudaGetLastError();
}

} // namespace

extern "C" int bench_fill(void *dst, convfind_dtype dtype, size_t count, uint64_t seed,
                          void *stream)
{
    const long long total = (long long)count;
    return by_dtype(dtype, total, [&](auto *t, unsigned grid) {
        using T = std::remove_pointer_t<decltype(t)>;
        fill<<<grid, 256, 0, (cudaStream_t)stream>>>((T *)dst, total, seed);
    });
}

extern "C" int bench_epilogue(void *y, const void *b, const void *z, convfind_dtype dtype,
                              long long n, int c, long long sp, int nhwc, int act, void *stream)
{
    const long long total = n * c * sp;
    return by_dtype(dtype, total, [&](auto *t, unsigned grid) {
        using T = std::remove_pointer_t<decltype(t)>;
        epilogue<<<grid, 256, 0, (cudaStream_t)stream>>>((T *)y, (const T *)b, (const T *)z,
                                                         total, c, sp, nhwc, act);
    });
}
