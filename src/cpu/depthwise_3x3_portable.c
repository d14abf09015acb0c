/*
 * depthwise_3x3_portable.c - cpu.depthwise_3x3's kernel in portable C (compiler vector
 * extensions), for any architecture.
 */
#define CF_SIMD_PORTABLE
#include "cpu/depthwise_3x3_kernels.h"
