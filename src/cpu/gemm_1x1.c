/*
 * gemm_1x1.c - "cpu.gemm_1x1": a 1x1 convolution is exactly one GEMM per image and group,
 *   NCHW: Y[m, pixel] = W[m, c] * X[c, pixel]      NHWC: Y[pixel, m] = X[pixel, c] * W^T[c, m]
 * on the packed SGEMM (gemm/gemm_conv.c); an NCHW map of 7x7 or 14x14 pixels takes the
 * second form too, with Y stored column-major (pixels fill the 7-row kernel exactly).
 * Stride 1: the GEMM reads X in place, as its B operand in NCHW and as its A operand in
 * NHWC (and in NCHW with pixels as rows), so nothing is packed per execution but the
 * (reusable) weights; this matters most when the output has few channels and each X
 * element is used by few rows.  The exception: as B, NCHW rows whose length is not a
 * multiple of 16 floats (33x33, 35x35, 17x17 maps) split the microkernel's vector loads
 * across cache lines, so with 128 output channels or more X is copied into panels.  A
 * strided 1x1 gathers its pixels into packed panels, never forming a subsampled copy of X.
 * A batch of one-pixel images (squeeze-and-excite layers at N > 1) is a single GEMM whose
 * rows are the images (gemm_conv.c, batch_as_rows).
 */
#include "algo/algo.h"
#include "cpu/gemm/gemm_conv.h"

static bool gemm_1x1_applicable(const cf_problem *p)
{
    if (!cf_gemm_conv_applicable(p))
        return false;
    for (int a = 0; a < p->nsp; a++)
        if (p->k[a] != 1 || p->pad_begin[a] != 0 || p->pad_end[a] != 0)
            return false;
    return true;
}

const cf_algo cf_algo_cpu_gemm_1x1 = {
    .name = "cpu.gemm_1x1",
    .family = "gemm",
    .applicable = gemm_1x1_applicable,
    .workspace = cf_gemm_1x1_workspace,
    .pack_weights = cf_gemm_conv_pack_weights,
    .free_packed = cf_gemm_free_packed,
    .packed_extent = cf_gemm_packed_extent,
    .execute = cf_gemm_1x1_execute,
};
