/*
 * direct_small_c_portable.c - cpu.direct_small_c's tile kernel in portable C (compiler
 * vector extensions), the same blocking as the x86 kernels, for any architecture.
 */
#define CF_SIMD_PORTABLE
#include "cpu/direct_small_c_kernels.h"
