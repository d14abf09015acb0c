/*
 * bench_tensor.h - tensor buffers as every contender gets them: on a cache line (as
 * oneDNN's and ONNX Runtime's allocators give theirs) and filled with values in [-1, 1),
 * never zeros, so no contender is timed on data that makes its work easier.
 */
#ifndef CONVFIND_BENCH_TENSOR_H
#define CONVFIND_BENCH_TENSOR_H

#include <stddef.h>

/* n floats on a 64-byte boundary (free() releases them); NULL when out of memory. */
float *bench_tensor_alloc(size_t n);

/* Fills v[0..n) with values in [-1, 1) from the generator state *seed. */
void bench_tensor_fill(float *v, size_t n, unsigned *seed);

#endif /* CONVFIND_BENCH_TENSOR_H */
