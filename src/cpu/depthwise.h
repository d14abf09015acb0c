/*
 * depthwise.h - the contract between cpu.depthwise's driver (depthwise.c) and its
 * per-ISA kernels (depthwise_kernels.h, compiled by depthwise_<isa>.c).
 *
 * Two native forms, one per layout, because the contiguous axis differs:
 *   NHWC  vectors run over channels: one task per output row; each channel vector walks
 *         the row in runs of pixels whose kernel window is entirely inside the input
 *         (no bounds checks in the inner loop), border pixels one at a time with their
 *         own tap ranges.  Channel multipliers > 1 read a copy of X with each input
 *         channel repeated `mult` times, so output channel m always reads channel m.
 *   NCHW  vectors run along W, one task per (image, output channel) plane, reading X in
 *         place: whole vectors (stride 1) or even lanes of two vectors (stride 2) where
 *         a vector's window lies inside the row, a masked gather at the row ends (and
 *         for larger strides); rows outside the input are skipped per output row.
 *         2-D and 1-D problems with stride 1 along W instead run in blocks of output
 *         rows: the block's input rows are copied zero-padded (split by row stride into
 *         phases) into an L1 buffer, where every tap is one unmasked load at a fixed
 *         offset from the output position, so a block is one flat run of vectors over
 *         rows pw wide (lanes past OW computed and dropped); the epilogue compacts the
 *         rows into Y.
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
    const float *w;       /* NHWC: packed [tap][M]; NCHW: W as ONNX stores it, [M][tap] */
    const float *b, *z;   /* bias (M) and residual (Y's shape), or NULL */
    float *y;
    /* NCHW row blocks (dw_rows_plan in depthwise.c): `rows` output rows per block,
     * `blocks` blocks per plane, zero-padded input rows `pw` floats wide, qh the largest
     * tap offset in rows of a row phase, phase planes `pstride` floats apart; off[t]:
     * tap t's offset from the output position; cols[0], cols[1]: the padded columns
     * [lo, hi) that hold input.  off and cols are in the workspace. */
    int64_t rows, blocks, pw, qh, pstride;
    const int64_t *off, *cols;
} cf_dw_job;

/* Per-call stack buffers of the NCHW row-block kernel, in floats: the row phases of
 * the zero-padded input rows of one block, and its sums before they are compacted into
 * Y.  Together they stay inside a 48 KiB L1 data cache.  CF_DW_SLACK covers the two
 * widest vectors read past the last phase row or sum. */
#define CF_DW_IN_FLOATS 6144
#define CF_DW_OUT_FLOATS 3072
#define CF_DW_SLACK 32

/* NCHW problems with narrow rows run the channels-last kernel between two transposes:
 * X (NCHW) -> [n][pixel][M] (output channel m reading input channel m / mult), and the
 * kernel's [n][pixel][M] (sums + bias) -> Y (NCHW) with residual and activation. */
typedef struct cf_dw_tr {
    const cf_problem *p;
    const float *src;
    float *dst;
    const float *z;       /* residual (to_first only), or NULL */
    int64_t mult;
} cf_dw_tr;

#define CF_DW_TR_BLOCK 16 /* channels per transpose task */

typedef struct cf_dw_kernels {
    void (*nhwc_row)(const cf_dw_job *job, size_t row);     /* row = (n*OD + od)*OH + oh */
    void (*nchw_plane)(const cf_dw_job *job, size_t plane); /* plane = n*M + m */
    void (*nchw_block)(const cf_dw_job *job, size_t unit);  /* unit = plane*blocks + block */
    /* task = n * ceil(M / CF_DW_TR_BLOCK) + channel block */
    void (*to_last)(const cf_dw_tr *t, size_t task);
    void (*to_first)(const cf_dw_tr *t, size_t task);
} cf_dw_kernels;

extern const cf_dw_kernels cf_dw_avx512, cf_dw_avx2, cf_dw_portable;

#endif /* CONVFIND_CPU_DEPTHWISE_H */
