/*
 * winograd.h - the contract between cpu.winograd_f2x3 / cpu.winograd_f4x3 (winograd.c)
 * and their per-ISA transform kernels (winograd_kernels.h, one winograd_<isa>.c each).
 *
 * F(m x m, 3 x 3) with alpha = m + 2: every output tile of m x m pixels is
 *   Y = A^T [ U (.) V ] A,  U = G g G^T (weights, once),  V = B^T d B (alpha x alpha input)
 * and the elementwise products summed over input channels become alpha^2 independent
 * GEMMs  M_pos (K x tiles) = U_pos (K x C) * V_pos (C x tiles), run on cpu/gemm/sgemm.h.
 * The kernels work on VL tiles at once (one vector lane per tile):
 *   input   gathers the tiles' alpha x alpha patches of one channel from the padded input
 *           and writes V for all positions straight into sgemm's packed-B panels;
 *   output  reads M for one output channel, applies A^T . A, the fused epilogue, and
 *           scatters the m x m pixels of each tile into Y (either layout), masking the
 *           parts of edge tiles that fall outside Y.
 * Lanes address memory through 32-bit offsets: applicable() keeps the tensors below 2^31.
 */
#ifndef CONVFIND_CPU_WINOGRAD_H
#define CONVFIND_CPU_WINOGRAD_H

#include <stddef.h>
#include <stdint.h>

#include "problem/problem.h"

typedef struct cf_wg_job {
    const cf_problem *p;
    int mt, alpha;            /* output tile size (2 or 4) and alpha = mt + 2 */
    int64_t tiles_h, tiles_w; /* tiles per image */
    int64_t ntiles;           /* N * tiles_h * tiles_w; tile t = (n * tiles_h + ty) * tiles_w + tx */
    int64_t hp, wp;           /* padded input plane: tiles_h * mt + 2 by tiles_w * mt + 2 */
    const float *xpad;        /* [N][C][hp][wp], zero outside X */
    float *v;                 /* alpha^2 positions, each C x ntiles in packed-B form */
    size_t v_pos;             /* floats per position of v */
    int nr;                   /* sgemm's NR: tiles per packed-B panel (a multiple of VL) */
    float *mo;                /* alpha^2 positions, each K x ldm (row = output channel) */
    int64_t ldm;              /* >= ntiles rounded up to 16 */
    size_t mo_pos;            /* floats per position of mo */
    const float *b, *z;       /* bias, residual, or NULL */
    float *y;
} cf_wg_job;

typedef struct cf_wg_kernels {
    int vl;
    void (*input)(const cf_wg_job *j, size_t task);  /* task = c * groups + tile group */
    void (*output)(const cf_wg_job *j, size_t task); /* task = k * groups + tile group */
} cf_wg_kernels;

extern const cf_wg_kernels cf_wg2_avx512, cf_wg2_avx2, cf_wg2_portable;
extern const cf_wg_kernels cf_wg4_avx512, cf_wg4_avx2, cf_wg4_portable;

#endif /* CONVFIND_CPU_WINOGRAD_H */
