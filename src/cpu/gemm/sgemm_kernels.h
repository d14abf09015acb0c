/*
 * sgemm_kernels.h - the per-ISA microkernels compiled into this build.
 *
 * Each lives in its own file compiled with that ISA's flags; the x86 ones exist only
 * when building for x86-64 (CMakeLists.txt and CF_SGEMM_HAVE_X86 agree on that), so
 * the build works on any architecture.  Only cpu/kernel_table.c picks among them.
 */
#ifndef CONVFIND_CPU_SGEMM_KERNELS_H
#define CONVFIND_CPU_SGEMM_KERNELS_H

#include "cpu/gemm/sgemm.h"

#if defined(__x86_64__) || defined(_M_X64)
#define CF_SGEMM_HAVE_X86 1
extern const cf_sgemm_kernel cf_sgemm_kernel_avx512; /* 8 x 32, 16 zmm accumulators; mr7, mr14 */
extern const cf_sgemm_kernel cf_sgemm_kernel_avx2;   /* 6 x 16, 12 ymm accumulators */
#else
#define CF_SGEMM_HAVE_X86 0
#endif
extern const cf_sgemm_kernel cf_sgemm_kernel_portable; /* 4 x 16, plain C */

#endif /* CONVFIND_CPU_SGEMM_KERNELS_H */
