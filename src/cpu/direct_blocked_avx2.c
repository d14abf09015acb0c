/*
 * direct_blocked_avx2.c - cpu.direct_blocked's tile kernel for AVX2 + FMA (with -mavx2 -mfma).
 * Empty on other architectures; cpu/kernel_table.c lists it only where the machine runs it.
 */
#if defined(__x86_64__)
#define CF_SIMD_AVX2
#include "cpu/direct_blocked_kernels.h"
#endif
