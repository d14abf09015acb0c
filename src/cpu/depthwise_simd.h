/*
 * depthwise_simd.h - what cpu.depthwise's and cpu.depthwise_3x3's kernels share
 * (depthwise_kernels.h, depthwise_3x3_kernels.h): cpu/simd.h for the ISA the including
 * file selects, the job they run, forced inlining and integer clamps.
 */
#ifndef CONVFIND_CPU_DEPTHWISE_SIMD_H
#define CONVFIND_CPU_DEPTHWISE_SIMD_H

#include "cpu/depthwise.h"
#include "cpu/simd.h"

#if defined(__GNUC__)
#define DW_INLINE static inline __attribute__((always_inline))
#else
#define DW_INLINE static inline
#endif

static inline int64_t dw_max(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t dw_min(int64_t a, int64_t b) { return a < b ? a : b; }

#endif /* CONVFIND_CPU_DEPTHWISE_SIMD_H */
