/*
 * depthwise_3x3_avx2.c - cpu.depthwise_3x3's kernel for AVX2 + FMA (flags set per file in
 * CMakeLists.txt).
 * Empty on other architectures; cpu/kernel_table.c lists it only where the machine runs it.
 */
#if defined(__x86_64__)
#define CF_SIMD_AVX2
#include "cpu/depthwise_3x3_kernels.h"
#endif
