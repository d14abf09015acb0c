/*
 * convtranspose_gemm.c - "cpu.convtranspose_gemm": the general ConvTranspose path, any
 * attributes (strides, dilations, groups, output_padding, negative pads from
 * output_shape).  One GEMM per image and group produces every (output channel, tap)
 * contribution of every input pixel; col2im then gathers them per output, so each
 * output is written once with its epilogue (gemm/gemm_conv.c).
 */
#include "algo/algo.h"
#include "cpu/gemm/gemm_conv.h"

const cf_algo cf_algo_cpu_convtranspose_gemm = {
    .name = "cpu.convtranspose_gemm",
    .family = "gemm",
    .applicable = cf_gemm_convt_applicable,
    .workspace = cf_gemm_convt_workspace,
    .pack_weights = cf_gemm_convt_pack_weights,
    .free_packed = cf_gemm_free_packed,
    .packed_extent = cf_gemm_packed_extent,
    .execute = cf_gemm_convt_execute,
};
