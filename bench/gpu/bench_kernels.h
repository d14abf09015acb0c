/*
 * bench_kernels.h - the GPU benchmarks' own device helpers (bench_kernels.cu): test data
 * for every contender, and the layers' epilogue for the peers that have none.  They live
 * here, not in the library, because the benchmarks use only include/convfind.h.
 */
#ifndef CONVFIND_BENCH_GPU_KERNELS_H
#define CONVFIND_BENCH_GPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "convfind.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Queues on `stream` (a cudaStream_t) `count` values of `dtype` (f32, f16 or bf16) in
 * (-1, 1), never 0, a fixed function of (seed, index), into device memory `dst`.
 * Returns the launch's cudaError_t. */
int bench_fill(void *dst, convfind_dtype dtype, size_t count, uint64_t seed, void *stream);

/* Y = act(Y + B + Z) in place on `stream`: y is [n][c][sp] (nhwc 0) or [n][sp][c]
 * (nhwc 1) of `dtype`; b has c values; z is NULL or like y; act 0 none, 1 ReLU, 2 ReLU6.
 * Returns the launch's cudaError_t. */
int bench_epilogue(void *y, const void *b, const void *z, convfind_dtype dtype, long long n,
                   int c, long long sp, int nhwc, int act, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* CONVFIND_BENCH_GPU_KERNELS_H */
