/*
 * bench_tensor.c - aligned, randomly filled benchmark tensors (bench_tensor.h).
 */
#include "bench_tensor.h"

#include <stdlib.h>

float *bench_tensor_alloc(size_t n)
{
    size_t bytes = ((n ? n : 1) * sizeof(float) + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes);
}

void bench_tensor_fill(float *v, size_t n, unsigned *seed)
{
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        v[i] = (float)(*seed >> 8) / 8388608.0f - 1.0f;
    }
}
