/*
 * direct_small_c.h - the contract between cpu.direct_small_c's driver (direct_small_c.c:
 * staging, packing, threads) and its per-ISA tile kernels (direct_small_c_kernels.h,
 * compiled once per ISA by direct_small_c_<isa>.c).
 *
 * First layers have a handful of input channels, so their reduction per output is only
 * C x kernel taps long and blocking over channels (cpu.direct_blocked) pads most of it
 * with zeros.  This algorithm vectorizes along the output row instead: a vector holds
 * VL consecutive output pixels of one output channel (VL = 16 AVX-512, 8 AVX2, 4
 * portable), which is a run of Y itself in NCHW, so sums go to Y without any transpose.
 *
 * Layouts:
 *   staged input  per task, the input rows of one band of output rows, for each input
 *                 channel of the group and each depth tap: [channel][kd][row][phase][wq],
 *                 each row split into `stride_w` phases (input pixel iw goes to phase
 *                 iw % stride_w, index b + iw / stride_w, after a left margin of b
 *                 zeros, a multiple of 16 that covers the padding), so that for every
 *                 kernel tap the VL output pixels of a vector read VL consecutive floats.
 *                 The slot is zeroed once per execution and staging writes only pixels
 *                 (and zeros where a row is shorter than its last vector), so the
 *                 padding around them stays zero without being written again.
 *   flat staging  when output rows are not whole vectors (56 pixels: 4 vectors of
 *                 16, one an eighth empty), the band's rows are also split into
 *                 `stride_h` phases, [channel][kd][row phase][column phase][row][pitch],
 *                 pitch floats per row with the zeros between rows shared by both
 *                 neighbours; output row oh + 1 then reads `pitch` floats past output row
 *                 oh for every tap, so a vector runs on from one output row into the next
 *                 and only pitch - ow lanes per row are wasted (cf_dsc_store).
 *   packed weights [group][input channel][tap][output channel of the group]: the
 *                 weights of one (channel, tap) for consecutive output channels are
 *                 adjacent, so a tile broadcasts them from one cache line.  The layout
 *                 does not depend on the ISA.
 * A tile is `npv` vectors along one output row times `nm` output channels; its nm * npv
 * accumulators stay in registers over the whole reduction (channels x taps), then go
 * through the fused epilogue into Y's layout.
 */
#ifndef CONVFIND_CPU_DIRECT_SMALL_C_H
#define CONVFIND_CPU_DIRECT_SMALL_C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu/isa.h"
#include "problem/problem.h"

/* Tile bounds on every ISA: output channels and pixel vectors per tile (a call runs
 * the tile over several output rows, so that its setup is paid once per band). */
#define CF_DSC_MAX_NM 16
#define CF_DSC_MAX_NPV 8

/* What one tile reduces over, for each of `rows` output rows. */
typedef struct cf_dsc_tile {
    const float *x;       /* staged input at the tile's first pixel, first row */
    ptrdiff_t x_row;      /* floats between the staged input of consecutive rows */
    int rows;
    const ptrdiff_t *tap; /* ntaps offsets (floats) from x, one per (input channel, tap) */
    int ntaps;
    const float *w;       /* packed weights of the tile's first output channel, first tap */
    ptrdiff_t w_tap;      /* floats between the weights of consecutive taps */
    int nm, npv;          /* output channels (1..max_nm[npv]) and vectors (1..CF_DSC_MAX_NPV) */
} cf_dsc_tile;

/* Where the tile's outputs go, in Y's own layout (NCHW or NHWC).  A flat tile (pitch > 0)
 * runs over the output rows of a band laid `pitch` pixels apart: its pixel p is column
 * (j0 + p) % pitch of row (j0 + p) / pitch from y, stored where that column is below ow
 * (the rest are sums over the zeros between staged rows, computed and dropped). */
typedef struct cf_dsc_store {
    const cf_problem *p;  /* activation and its parameters */
    float *y;             /* output (first channel, first pixel of the tile, first row) */
    ptrdiff_t y_row;      /* floats between consecutive rows in y and z */
    const float *z;       /* residual at the same position, or NULL */
    const float *bias;    /* bias of the first channel, or NULL */
    int npx;              /* valid pixels from the first one (1..npv * VL) */
    ptrdiff_t ch_stride;  /* floats between channels in y and z */
    ptrdiff_t px_stride;  /* floats between consecutive pixels (1: NCHW) */
    int pitch, j0, ow;    /* flat tiles only (pitch 0: the pixels are one run of a row) */
    bool stream;          /* NCHW whole vectors at vector-aligned addresses go around the
                           * caches (cf_vstream): Y is too large for them to keep, and
                           * ordinary stores would first read every line of it */
} cf_dsc_store;

typedef struct cf_dsc_kernels {
    int vl;
    /* Most output channels per tile for each npv (index 1..CF_DSC_MAX_NPV; 0: too wide
     * for the register file); never increasing with npv. */
    int max_nm[CF_DSC_MAX_NPV + 1];
    void (*tile)(const cf_dsc_tile *t, const cf_dsc_store *s);
    /* Makes the calling thread's streamed stores visible to the others: a task that ran
     * tiles with `stream` calls it before it ends. */
    void (*fence)(void);
    /* `rows` input rows, row r of w pixels at src + r * src_row (pixels `step` floats
     * apart), into staged rows at dst + r * dst_row (sw phases of wq floats, pixels
     * from index b on); src NULL: zero rows (direct_small_c_kernels.h).  It writes whole
     * vectors: up to VL - 1 zeros past a row's last pixel. */
    void (*stage)(float *dst, ptrdiff_t dst_row, int64_t rows, const float *src,
                  ptrdiff_t src_row, int64_t w, ptrdiff_t step, int64_t sw, int64_t wq,
                  int64_t b);
} cf_dsc_kernels;

/* Each level's kernels (cpu/kernel_table.h picks among them). */
extern const cf_dsc_kernels cf_dsc_avx512, cf_dsc_avx2, cf_dsc_portable;

#endif /* CONVFIND_CPU_DIRECT_SMALL_C_H */
