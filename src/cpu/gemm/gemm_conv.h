/*
 * gemm_conv.h - convolution as packed SGEMM: the engine behind cpu.gemm_1x1,
 * cpu.im2col_gemm and cpu.convtranspose_gemm.
 *
 * Conv, per image and group, is one GEMM whose K axis runs over (input channel, kernel
 * tap) in that order, which is W's own row order, so the weights pack straight from the
 * ONNX layout:
 *   NCHW:  Y[m, pixel] = W[m, K] * patches[K, pixel]   (weights = packed A, rows = m)
 *   NHWC:  Y[pixel, m] = patches[pixel, K] * W^T[K, m] (weights = packed B, cols = m)
 * and NCHW in the second form too, C stored column-major, when its pixels fill the
 * kernel's rows much better than its vectors (7x7 and 14x14 maps; gemm_conv.c).  A 1x1
 * on one-pixel images at N > 1 is one GEMM for the batch, the images as its rows.
 * The patch operand (im2col) is never materialised as a plain matrix: it is generated
 * directly in the packed panel form the microkernel reads, one tile of output pixels at
 * a time, so the workspace is bounded by the tile and a 1x1 stride-1 problem degenerates
 * to a plain copy.  Bias, residual and activation are applied as each C tile is stored.
 *
 * ConvTranspose, per image and group:  cols[(m, tap), i] = W^T[(m, tap), c] * X[c, i],
 * then every output gathers the cols entries that land on it (col2im in gather form, so
 * each output is written once, with its epilogue, and threads never collide).
 *
 * Packed weights (pack_weights) record the ISA level they were packed for.  An execution
 * without matching packed weights (none given, or made at another level by CONVFIND_ISA
 * or cf_isa_force) reads W in place where the weights are the GEMM's A operand (NCHW
 * Conv, ConvTranspose: the microkernel takes A with any strides), and packs them into its
 * workspace only where they are B (NHWC Conv, NCHW with pixels as rows), so only those
 * cases reserve room for them.
 */
#ifndef CONVFIND_CPU_GEMM_CONV_H
#define CONVFIND_CPU_GEMM_CONV_H

#include "algo/algo.h"

/* Conv (any kernel, stride, dilation, pads, groups, 1-3 spatial dims), f32. */
bool cf_gemm_conv_applicable(const cf_problem *p);
convfind_status cf_gemm_conv_workspace(const cf_problem *p, size_t *bytes);
convfind_status cf_gemm_conv_pack_weights(const cf_problem *p, const void *state,
                                          const void *w, void **packed);
convfind_status cf_gemm_conv_execute(const cf_problem *p, const void *state,
                                     const cf_exec_args *a);

/* cpu.gemm_1x1: the same engine, but a 1x1 stride-1 unpadded Conv reads X in place as
 * the GEMM's B (NCHW) or A (NHWC): no patch panels, no patch workspace. */
convfind_status cf_gemm_1x1_workspace(const cf_problem *p, size_t *bytes);
convfind_status cf_gemm_1x1_execute(const cf_problem *p, const void *state,
                                    const cf_exec_args *a);

/* cpu.tap_gemm: the same Conv as one GEMM per kernel tap, each over the outputs that tap
 * reads inside X (the taps that fall in the padding are skipped), the weights packed per
 * tap (blocks of channels x output channels). */
convfind_status cf_gemm_taps_workspace(const cf_problem *p, size_t *bytes);
convfind_status cf_gemm_taps_pack_weights(const cf_problem *p, const void *state,
                                          const void *w, void **packed);
convfind_status cf_gemm_taps_execute(const cf_problem *p, const void *state,
                                     const cf_exec_args *a);

/* ConvTranspose (any attributes, negative pads and output_padding included), f32. */
bool cf_gemm_convt_applicable(const cf_problem *p);
convfind_status cf_gemm_convt_workspace(const cf_problem *p, size_t *bytes);
convfind_status cf_gemm_convt_pack_weights(const cf_problem *p, const void *state,
                                           const void *w, void **packed);
convfind_status cf_gemm_convt_execute(const cf_problem *p, const void *state,
                                      const cf_exec_args *a);

/* Frees what either pack_weights returned (NULL allowed); its extent (algo.h) is the
 * whole allocation. */
void cf_gemm_free_packed(void *packed);
size_t cf_gemm_packed_extent(const cf_problem *p, const void *packed, const void **start);

#endif /* CONVFIND_CPU_GEMM_CONV_H */
