/*
 * depthwise_avx2.c - cpu.depthwise's kernels for AVX2 + FMA (flags set per file in
 * CMakeLists.txt).
 * Empty on other architectures; cpu/kernel_table.c lists it only where the machine runs it.
 */
#if defined(__x86_64__)
#define CF_SIMD_AVX2
#include "cpu/depthwise_kernels.h"
#endif
