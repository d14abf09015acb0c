/*
 * kernels.h - the CUDA backend's own small kernels, callable from C (kernels.cu).
 *
 * cuDNN does the convolutions; these do what surrounds them: moving tensors between
 * channels-first and channels-last (the "transpose, run, transpose back" candidates),
 * zero-padding or cropping the spatial axes (pads cuDNN cannot take), splitting f32
 * operands into TF32 parts (graph.h's split configurations), the
 * bias/residual/activation epilogue, non-zero test data and result checks for Find and
 * the tests, and a direct convolution that runs every problem the library accepts (any
 * group, dilation, pad including negative ConvTranspose pads, output padding, dtype,
 * layout, epilogue).
 * The direct kernel is the CUDA backend's always-valid fallback and Find's GPU
 * reference; the tests check it against the CPU reference.
 *
 * Every function queues work on `stream` (a cudaStream_t, NULL: the default stream) and
 * returns the cudaError_t of the launch as an int (0: queued).  Pointers are device
 * pointers.  Thread-safe.
 */
#ifndef CONVFIND_CUDA_KERNELS_H
#define CONVFIND_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "problem/problem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dst = src with the middle and last axes swapped, per batch entry: [n][a][b] ->
 * [n][b][a].  Channels-first [n][c][sp] to channels-last is (a = c, b = sp); back is
 * (a = sp, b = c).  elem_size 2 or 4. */
int cf_cuda_swap_axes(const void *src, void *dst, size_t elem_size, int64_t n, int64_t a,
                      int64_t b, void *stream);

/* The spatial window of an [n][c][spatial] tensor in `layout` (3 spatial axes, unused
 * ones of size 1): dst[n][c][o] = src[n][c][o + off] where o + off lies inside src_sp on
 * every axis, else 0.  A negative offset pads in front, a window larger than the source
 * pads behind, a smaller one crops: this is the explicit padding around cuDNN for pads
 * it cannot take natively (docs/cuda.md).  elem_size 2 or 4; src and dst must not
 * overlap. */
int cf_cuda_window(const void *src, void *dst, size_t elem_size, convfind_layout layout,
                   int64_t n, int64_t c, const int64_t *src_sp, const int64_t *dst_sp,
                   const int64_t *off, void *stream);

/* The split configurations' operands (graph.h): src as [outer][c][inner] f32 values
 * into dst as [outer][3][c][inner], part p holding each value's remainder after TF32
 * rounding where bit p of lo_parts is set and the rounded value elsewhere (X3 = [hi,
 * hi, lo]: lo_parts 4; W3 = [hi, lo, hi]: lo_parts 2).  src and dst must not overlap. */
int cf_cuda_split_tf32(const float *src, float *dst, int64_t outer, int64_t c, int64_t inner,
                       unsigned lo_parts, void *stream);

/* cf_cuda_split_tf32 of X (n images of g groups of cg channels over sp points) into the
 * engine's layout from the other one in a single pass: to_nhwc 1 reads NCHW and writes
 * the NHWC engine's [n][sp][g][3][cg], to_nhwc 0 reads NHWC and writes the NCHW
 * engine's [n][g][3][cg][sp].  src and dst must not overlap. */
int cf_cuda_split_tf32_swapped(const float *src, float *dst, int64_t n, int64_t g, int64_t cg,
                               int64_t sp, int to_nhwc, unsigned lo_parts, void *stream);

/* Y = act(Y + B + Z) in place, Y in the problem's dtype and layout; b, z may be NULL. */
int cf_cuda_epilogue(const cf_problem *p, const void *b, const void *z, void *y, void *stream);

/* Y of problem `p` (its layout, W in ONNX layout), epilogue included, fp32 accumulation. */
int cf_cuda_direct_conv(const cf_problem *p, const void *x, const void *w, const void *b,
                        const void *z, void *y, void *stream);

/* Holds `stream` until the host sets *flag to nonzero or timeout_ns have passed on the
 * device's clock, whichever comes first: what the host queues meanwhile then runs back
 * to back, as from a CUDA graph (Find's samples, cuda/find.c).  `flag` is host memory
 * mapped into the device (cudaHostAllocMapped).  The timeout keeps a host call that waits
 * for the device (a cudaFree, a module load) from waiting forever. */
int cf_cuda_hold(const volatile int *flag, uint64_t timeout_ns, void *stream);

/* `count` values of `dtype` in (-1, 1), never 0, a fixed function of (seed, index). */
int cf_cuda_fill(void *dst, convfind_dtype dtype, size_t count, uint64_t seed, void *stream);

/* dst[i] = (float)src[i] for `count` values of `dtype` (for checking results on the host). */
int cf_cuda_to_float(const void *src, convfind_dtype dtype, float *dst, size_t count,
                     void *stream);

/* Adds to acc[0..2] (device doubles) the squared distance between `got` (`count` values
 * of `dtype`) and `ref`, the squared norm of `ref`, and the number of NaNs in `got`: a
 * result's normwise error is checked on the device, so Find moves no tensor to the host.
 * With `ref` NULL, only the NaNs. */
int cf_cuda_error_norms(const void *got, convfind_dtype dtype, const float *ref, size_t count,
                        double *acc, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* CONVFIND_CUDA_KERNELS_H */
