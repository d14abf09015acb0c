/*
 * winograd_avx512.c - the Winograd transforms for AVX-512F (flags set per file in CMakeLists.txt).
 * Empty on other architectures; cpu/kernel_table.c lists it only where the machine runs it.
 */
#if defined(__x86_64__)
#define CF_SIMD_AVX512
#include "cpu/winograd_kernels.h"
#endif
