/*
 * direct_small_c_avx2.c - cpu.direct_small_c's tile kernel for AVX2 + FMA (with -mavx2 -mfma).
 * Empty on other architectures; cpu/kernel_table.c lists it only where the machine runs it.
 */
#if defined(__x86_64__)
#define CF_SIMD_AVX2
#include "cpu/direct_small_c_kernels.h"
#endif
