/*
 * direct_blocked_avx512.c - cpu.direct_blocked's tile kernel for AVX-512F (with -mavx512f
 * -mavx512vl -mfma).
 * Empty on other architectures; cpu/kernel_table.c lists it only where the machine runs it.
 */
#if defined(__x86_64__)
#define CF_SIMD_AVX512
#include "cpu/direct_blocked_kernels.h"
#endif
