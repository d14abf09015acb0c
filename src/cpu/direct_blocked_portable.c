/*
 * direct_blocked_portable.c - cpu.direct_blocked's tile kernel in portable C (compiler
 * vector extensions), the same blocking as the x86 kernels, for any architecture.
 */
#define CF_SIMD_PORTABLE
#include "cpu/direct_blocked_kernels.h"
