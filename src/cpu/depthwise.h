/*
 * depthwise.h - the contract between the drivers of cpu.depthwise and cpu.depthwise_3x3
 * (depthwise.c) and their per-ISA kernels (depthwise_kernels.h, compiled by
 * depthwise_<isa>.c, and depthwise_3x3_kernels.h, compiled by depthwise_3x3_<isa>.c).
 *
 * The contiguous axis differs between the layouts, so each has its own form:
 *   NHWC  vectors run over channels: one task per output row; each channel vector walks
 *         the row in runs of pixels whose kernel window is entirely inside the input
 *         (no bounds checks in the inner loop), border pixels one at a time with their
 *         own tap ranges.  Channel multipliers > 1 read a copy of X with each input
 *         channel repeated `mult` times, so output channel m always reads channel m.
 *   NCHW channel blocks (1-D and 2-D): one task per block of CF_VL output channels and
 *         band of output rows.  The band's input rows are transposed in registers,
 *         CF_VL pixels at a time, into a ring of channels-last rows in L1 (zero columns
 *         for the pads, a zero row for rows outside the input); each output pixel of
 *         CF_VL channels is then one aligned load and FMA per tap, whatever the stride
 *         or dilation; and the sums go back to the CF_VL output planes through the same
 *         transpose.  Positions run on across rows in both transposes, so 7x7 and 14x14
 *         planes fill whole vectors, which vectors along W cannot.
 *   NCHW planes (3-D, and rows too wide for the ring): vectors along W, one task per
 *         (image, output channel) plane, reading X in place: whole vectors (stride 1) or
 *         even lanes of two vectors (stride 2) where a vector's window lies inside the
 *         row, a masked gather at the row ends (and for larger strides); rows outside
 *         the input are skipped per output row.
 *   NCHW 3x3 planes (cpu.depthwise_3x3: 2-D, 3x3, multiplier 1, stride 1 with one pixel of
 *         padding on every side, or stride 2 with one at the start of each axis): one task
 *         per run of planes, X read and Y written in place, no transposes.  Each output
 *         row is computed from its three input rows held in registers as a window that
 *         moves down the plane, every input row loaded once, the side taps lane shifts
 *         of the rows (stride 1) or of their even and odd columns (stride 2); rows wider
 *         than 4 vectors (2 at 8 lanes) run in strips of columns.  Stride-1 rows of at
 *         most a vector hold several planes side by side; stride-2 output rows of at
 *         most 7 at 16 lanes hold two planes (depthwise_3x3_kernels.h).
 */
#ifndef CONVFIND_CPU_DEPTHWISE_H
#define CONVFIND_CPU_DEPTHWISE_H

#include <stddef.h>
#include <stdint.h>

#include "cpu/geom3.h"
#include "problem/problem.h"

typedef struct cf_dw_job {
    const cf_problem *p;
    cf_geom3 s;
    int64_t mult;         /* output channels per input channel */
    int64_t ntaps;
    const float *x;       /* NHWC: X, or its channel-repeated copy; NCHW: X */
    int64_t xc;           /* NHWC: channels per pixel of x (C, or M for the copy) */
    const float *w;       /* packed [M / CF_VL][tap][CF_VL] (NHWC, NCHW channel blocks), or
                           * W as ONNX stores it, [M][tap] (the other NCHW forms) */
    const float *b, *z;   /* bias (M) and residual (Y's shape), or NULL */
    float *y;
    /* NCHW channel blocks (dw_blocked_plan in depthwise.c): `cblocks` blocks of CF_VL
     * output channels per image, `bands` bands of `band` output rows per block, computed
     * `step` rows at a time from a ring of `ring` transposed input rows, each `width`
     * pixels of CF_VL channels (pad[2] zero pixels, then the input row, then zeros). */
    int64_t cblocks, band, bands, step, ring, width;
} cf_dw_job;

/* Per-call stack buffers of the NCHW channel-block kernel, in floats: the ring of
 * transposed input rows, and the sums of up to `step` output rows plus one chunk of
 * CF_VL pixels waiting for their transpose into Y.  Together about a 48 KiB L1. */
#define CF_DW_RING_FLOATS 8192
#define CF_DW_SUMS_FLOATS 4096
#define CF_DW_KH_MAX 64 /* the most kernel rows the channel-block kernel takes */

/* The widest CF_VL of any ISA: weights are packed in blocks of this many channels at
 * most, which sizes the workspace for every level. */
#define CF_DW_VL_MAX 16

/* cpu.depthwise (depthwise_kernels.h). */
typedef struct cf_dw_kernels {
    void (*nhwc_row)(const cf_dw_job *job, size_t row);     /* row = (n*OD + od)*OH + oh */
    void (*nchw_plane)(const cf_dw_job *job, size_t plane); /* plane = n*M + m */
    /* unit = (n * cblocks + channel block) * bands + band */
    void (*nchw_blocked)(const cf_dw_job *job, size_t unit);
    int vl; /* CF_VL of these kernels: the channel block, and the packed weights' block */
} cf_dw_kernels;

/* cpu.depthwise_3x3 (depthwise_3x3_kernels.h). */
typedef struct cf_dw3x3_kernels {
    /* `count` (image, channel) planes from `first` (n * M + m); W as ONNX stores it */
    void (*planes)(const cf_dw_job *job, size_t first, size_t count);
} cf_dw3x3_kernels;

/* Each level's kernels (cpu/kernel_table.h picks among them). */
extern const cf_dw_kernels cf_dw_avx512, cf_dw_avx2, cf_dw_portable;
extern const cf_dw3x3_kernels cf_dw3x3_avx512, cf_dw3x3_avx2, cf_dw3x3_portable;

#endif /* CONVFIND_CPU_DEPTHWISE_H */
