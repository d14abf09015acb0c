/*
 * direct_small_c_avx512.c - cpu.direct_small_c's tile kernel for AVX-512F (with -mavx512f
 * -mavx2 -mfma).
 * Empty on other architectures; cpu/kernel_table.c lists it only where the machine runs it.
 */
#if defined(__x86_64__)
#define CF_SIMD_AVX512
#include "cpu/direct_small_c_kernels.h"
#endif
