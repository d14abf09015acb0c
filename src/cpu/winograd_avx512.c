/*
 * winograd_avx512.c - the Winograd transforms for AVX-512F (flags set per file in CMakeLists.txt).
 * Empty on other architectures; the driver only calls it when cf_isa_active() allows.
 */
#if defined(__x86_64__)
#define CF_SIMD_AVX512
#include "cpu/winograd_kernels.h"
#endif
