/*
 * im2col_gemm.c - "cpu.im2col_gemm": any Conv (kernel size, stride, dilation, asymmetric
 * pads, 1-D/2-D/3-D, groups) as GEMM on image patches.  The patch matrix is generated
 * straight into the SGEMM's packed panels one tile of output pixels at a time
 * (gemm/gemm_conv.c), so the workspace is the packed weights plus one bounded tile.
 */
#include "algo/algo.h"
#include "cpu/gemm/gemm_conv.h"

const cf_algo cf_algo_cpu_im2col_gemm = {
    .name = "cpu.im2col_gemm",
    .family = "gemm",
    .applicable = cf_gemm_conv_applicable,
    .workspace = cf_gemm_conv_workspace,
    .pack_weights = cf_gemm_conv_pack_weights,
    .free_packed = cf_gemm_free_packed,
    .packed_extent = cf_gemm_packed_extent,
    .execute = cf_gemm_conv_execute,
};
