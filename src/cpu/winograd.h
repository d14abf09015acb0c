/*
 * winograd.h - the contract between cpu.winograd_f2x3 / _f4x3 / _f6x3 (winograd.c)
 * and their per-ISA transform kernels (winograd_kernels.h, one winograd_<isa>.c each).
 *
 * F(m x m, 3 x 3) with alpha = m + 2: every output tile of m x m pixels is
 *   Y = A^T [ U (.) V ] A,  U = G g G^T (weights, once),  V = B^T d B (alpha x alpha input)
 * and the elementwise products summed over input channels become alpha^2 independent
 * products  M_pos (tiles x K) = V_pos (tiles x C) * U_pos (C x K).  Those run on the
 * register-blocked tile kernel of cpu.direct_blocked (direct_blocked.h) as a 1x1
 * convolution: "pixels" are tiles, V_pos is its channel-blocked input and U_pos its
 * packed weights, so they run as fast as the direct convolution's inner loop.
 * A 3-D convolution whose last two axes are 3x3 of stride 1 (depth: up to 16 taps, any
 * dilation and pads, stride 1) is a sum of 2-D ones, one per depth tap, each on the input plane
 * the tap reads: V is computed once per padded input plane, and an output plane's
 * products reduce over (depth tap, C), each depth tap a tap of the tile kernel that
 * selects its input plane and its own U.  No transform is repeated per tap.  A dilation
 * d of the 3x3 axes splits each plane into d x d phases (every d-th pixel from each
 * offset), each an undilated 3x3 convolution of its own: more, smaller planes.
 * Layouts per position, VL = the ISA's vector length:
 *   V  [C / VL][groups * VL input tiles][VL channels]  (zero past C and the last tile)
 *   U  [K / VL][C / VL][depth tap][VL c][VL k]          (zero past C and K)
 *   M  [output tile][kb * VL channels]
 * The kernels work on VL tiles or VL channels at once:
 *   input   gathers the alpha x alpha patches of VL tiles (one per lane) for each of VL
 *           channels from the padded input, transforms them, and transposes each
 *           position's VL x VL block into V's channels-innermost order;
 *   output  reads M of a row of tiles for VL output channels, applies A^T . A, the
 *           fused epilogue, and stores the tiles' pixels into Y (either layout).
 * Lanes address memory through 32-bit offsets: applicable() keeps the tensors below 2^31.
 */
#ifndef CONVFIND_CPU_WINOGRAD_H
#define CONVFIND_CPU_WINOGRAD_H

#include <stddef.h>
#include <stdint.h>

#include "problem/problem.h"

typedef struct cf_wg_job {
    const cf_problem *p;
    int mt, alpha, vl;        /* output tile size (2, 4 or 6), alpha = mt + 2, vector length */
    int64_t dout, slices;     /* output planes and padded input planes per image: 1 and 1
                                 in 2-D, D_out and D_out + (taps - 1) * dilation in 3-D */
    int64_t dh, dw;           /* phases of each plane: the dilations of its two axes.
                                 Phase (a, b) holds the pixels (a + dh i, b + dw j),
                                 on which the dilated 3x3 is an undilated one */
    int64_t tiles_h, tiles_w; /* tiles per phase: ceil(ceil(H_out / dh) / mt), ... */
    int64_t ntiles;           /* output tiles, N * dout * dh * dw * tiles_h * tiles_w;
                                 tile t = ((((n * dout + od) * dh + a) * dw + b) * tiles_h
                                 + ty) * tiles_w + tx */
    int64_t ntiles_in;        /* input tiles, N * slices * dh * dw * tiles_h * tiles_w,
                                 numbered the same way with the padded input plane */
    int64_t groups;           /* groups of VL input tiles: ceil(ntiles_in / VL) */
    int64_t cb, kb;           /* blocks of VL input / output channels */
    int64_t hp, wp;           /* padded input phase: tiles_h * mt + 2 by tiles_w * mt + 2 */
    const float *xpad;        /* [N * slices * dh * dw][C][hp][wp], zero outside X */
    float *v;                 /* alpha^2 positions of V */
    size_t v_pos;             /* floats per position of v: cb * groups * VL * VL */
    float *mo;                /* alpha^2 positions of M */
    size_t mo_pos;            /* floats per position of mo: ntiles * kb * VL */
    const float *b, *z;       /* bias, residual, or NULL */
    float *y;
} cf_wg_job;

typedef struct cf_wg_kernels {
    int vl;
    void (*input)(const cf_wg_job *j, size_t task);  /* task = channel block * groups + group */
    /* task = output block * (N * tiles_h) + row of tiles */
    void (*output)(const cf_wg_job *j, size_t task);
} cf_wg_kernels;

/* Each level's transforms per tile size (cpu/kernel_table.h picks among them). */
extern const cf_wg_kernels cf_wg2_avx512, cf_wg2_avx2, cf_wg2_portable;
extern const cf_wg_kernels cf_wg4_avx512, cf_wg4_avx2, cf_wg4_portable;
extern const cf_wg_kernels cf_wg6_avx512, cf_wg6_avx2, cf_wg6_portable;

#endif /* CONVFIND_CPU_WINOGRAD_H */
