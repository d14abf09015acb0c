/*
 * kernel_table.c - the per-ISA kernel tables (kernel_table.h): what each level's files
 * define, and which of them this build and machine may use.
 */
#include "cpu/kernel_table.h"

#include <pthread.h>

#include "cpu/gemm/sgemm_kernels.h"

/* Every level this build compiled, by cf_isa. */
static const cf_kernel_table compiled[] = {
    [CF_ISA_PORTABLE] = {CF_ISA_PORTABLE, &cf_sgemm_kernel_portable, &cf_dbk_portable,
                         &cf_dsc_portable, &cf_dw_portable, &cf_dw3x3_portable,
                         {&cf_wg2_portable, &cf_wg4_portable, &cf_wg6_portable}},
#if CF_SGEMM_HAVE_X86
    [CF_ISA_AVX2_FMA] = {CF_ISA_AVX2_FMA, &cf_sgemm_kernel_avx2, &cf_dbk_avx2, &cf_dsc_avx2,
                         &cf_dw_avx2, &cf_dw3x3_avx2,
                         {&cf_wg2_avx2, &cf_wg4_avx2, &cf_wg6_avx2}},
    [CF_ISA_AVX512F] = {CF_ISA_AVX512F, &cf_sgemm_kernel_avx512, &cf_dbk_avx512,
                        &cf_dsc_avx512, &cf_dw_avx512, &cf_dw3x3_avx512,
                        {&cf_wg2_avx512, &cf_wg4_avx512, &cf_wg6_avx512}},
#endif
};

#define COMPILED_TOP ((int)(sizeof compiled / sizeof compiled[0]) - 1)

static pthread_once_t built_once = PTHREAD_ONCE_INIT;
static const cf_kernel_table *tables[CF_ISA_COUNT];

static void build(void)
{
    int top = (int)cf_isa_machine() < COMPILED_TOP ? (int)cf_isa_machine() : COMPILED_TOP;
    for (int level = 0; level < CF_ISA_COUNT; level++)
        tables[level] = &compiled[level < top ? level : top];
}

const cf_kernel_table *cf_kernel_table_for(cf_isa level)
{
    pthread_once(&built_once, build);
    int i = (int)level;
    return tables[i < 0 ? 0 : i >= CF_ISA_COUNT ? CF_ISA_COUNT - 1 : i];
}

const cf_kernel_table *cf_kernel_table_active(void)
{
    return cf_kernel_table_for(cf_isa_active());
}
