/*
 * depthwise_avx512.c - cpu.depthwise's kernels for AVX-512F (flags set per file in
 * CMakeLists.txt).
 * Empty on other architectures; cpu/kernel_table.c lists it only where the machine runs it.
 */
#if defined(__x86_64__)
#define CF_SIMD_AVX512
#include "cpu/depthwise_kernels.h"
#endif
