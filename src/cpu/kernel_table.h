/*
 * kernel_table.h - every CPU kernel family's entry points, one table per ISA level.
 *
 * The CPU algorithms are drivers (layouts, packing, threads) around per-ISA kernels
 * compiled from one source per family with each level's flags (cpu/simd.h).  Which
 * kernels an execution runs is decided here and only here, after XNNPACK's configs: the
 * tables are built once (pthread_once) from the levels this build compiled (the x86 files
 * only on x86-64) and the level this machine runs; a level the build or the machine
 * lacks gets the best lower level's table, so no table ever holds an instruction the
 * machine cannot execute.  An algorithm reads its kernels from the table of the active
 * level (cf_kernel_table_active: the machine's level lowered by CONVFIND_ISA or
 * cf_isa_force, cpu/isa.h) once per execution, and sizes its workspace over every table
 * (the level may be forced lower between planning and executing).
 */
#ifndef CONVFIND_CPU_KERNEL_TABLE_H
#define CONVFIND_CPU_KERNEL_TABLE_H

#include "cpu/depthwise.h"
#include "cpu/direct_blocked.h"
#include "cpu/direct_small_c.h"
#include "cpu/gemm/sgemm.h"
#include "cpu/isa.h"
#include "cpu/winograd.h"

/* Winograd F(m x m, 3 x 3) for m = 2, 4, 6: cf_kernel_table.winograd[m / 2 - 1]. */
#define CF_WG_TILES 3

typedef struct cf_kernel_table {
    cf_isa isa;                           /* the level these kernels are compiled for */
    const cf_sgemm_kernel *sgemm;         /* cpu.gemm_1x1, im2col_gemm, convtranspose_* */
    const cf_dbk_kernels *direct_blocked; /* cpu.direct_blocked, Winograd's products */
    const cf_dsc_kernels *direct_small_c;
    const cf_dw_kernels *depthwise;
    const cf_dw3x3_kernels *depthwise_3x3;
    const cf_wg_kernels *winograd[CF_WG_TILES]; /* transforms per tile size */
} cf_kernel_table;

/* The table of `level` (any cf_isa; one above what this build or machine has gives the
 * highest it has).  Static storage, thread-safe. */
const cf_kernel_table *cf_kernel_table_for(cf_isa level);

/* The table of cf_isa_active(). */
const cf_kernel_table *cf_kernel_table_active(void);

#endif /* CONVFIND_CPU_KERNEL_TABLE_H */
