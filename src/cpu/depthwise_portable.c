/*
 * depthwise_portable.c - cpu.depthwise's kernels in portable C
 * (compiler vector extensions), for any architecture.
 */
#define CF_SIMD_PORTABLE
#include "cpu/depthwise_kernels.h"
