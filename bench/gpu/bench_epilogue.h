/*
 * bench_epilogue.h - Y = act(Y + B + Z) for the benchmark peers (bench_epilogue.cu).
 */
#ifndef CONVFIND_BENCH_GPU_EPILOGUE_H
#define CONVFIND_BENCH_GPU_EPILOGUE_H

#ifdef __cplusplus
extern "C" {
#endif

/* In place on `stream`: y is [n][c][sp] (nhwc 0) or [n][sp][c] (nhwc 1) of dtype 0 (f32),
 * 1 (f16) or 2 (bf16); b has c values; z is NULL or like y; act 0 none, 1 ReLU, 2 ReLU6.
 * Returns the launch's cudaError_t. */
int bench_epilogue(void *y, const void *b, const void *z, int dtype, long long n, int c,
                   long long sp, int nhwc, int act, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* CONVFIND_BENCH_GPU_EPILOGUE_H */
