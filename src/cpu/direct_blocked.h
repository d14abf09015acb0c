/*
 * direct_blocked.h - the contract between the channel-blocked direct convolution
 * (direct_blocked.c: layouts, packing, threads) and its per-ISA tile kernels
 * (direct_blocked_kernels.h, compiled once per ISA by direct_blocked_<isa>.c).
 *
 * Layouts, with VL = the ISA's vector length in floats (16 AVX-512, 8 AVX2, 4 portable):
 *   input  [n][channel block][D'][H'][phase][W'/phase][VL]  zero-padded spatially and
 *          in channels; the W axis is split into `stride_w` phases so that the output
 *          pixels of one row read consecutive input pixels for every kernel tap, which
 *          makes the kernel's addressing independent of the stride.  A 1x1 kernel
 *          without padding stores only the pixels it reads: [n][block][out pixel][VL];
 *          one of stride 1 on NCHW with whole blocks of channels (and X within L2)
 *          reads X in place instead at 16 lanes, each input channel a row of pixels
 *          (cf_dbk_tile.x_ci; only the AVX-512 kernel reads it), and so does any
 *          kernel of stride 1 or 2 along W whose tiles read W padding only with their
 *          first and last pixel (the tile leaves out those products).
 *   weights [group][out block][in block][tap][VL in][VL out], zero-padded.
 * A tile is `np` consecutive output pixels of one row times `nb` output blocks; its
 * accumulators (nb * np vectors) stay in registers over a share of the reduction (a
 * run of input blocks and of taps), then either wait in memory for the next share or, at
 * the last, go through the fused epilogue straight into Y's layout.
 */
#ifndef CONVFIND_CPU_DIRECT_BLOCKED_H
#define CONVFIND_CPU_DIRECT_BLOCKED_H

#include <stddef.h>
#include <stdint.h>

#include "cpu/isa.h"
#include "problem/problem.h"

/* Longest pixel run of one tile, on every ISA. */
#define CF_DBK_MAX_NP 14

/* One kernel tap as a tile reads it: its input's offset from the tile's x and its
 * packed weights' offset from the tile's w, both in floats, and its index along W
 * (cf_dbk_tile.skip_first). */
typedef struct cf_dbk_tap {
    ptrdiff_t x, w;
    int kw;
} cf_dbk_tap;

/* What one tile reduces over. */
typedef struct cf_dbk_tile {
    const float *x;       /* input at the tile's first pixel, first input block */
    const cf_dbk_tap *tap; /* the ntaps taps to reduce over: all of the kernel's, or
                            * only those that read some input (a tile skips the
                            * taps that read padding alone) */
    int ntaps;
    int ncb;              /* input blocks to reduce over */
    ptrdiff_t x_cb;       /* floats between input blocks */
    const float *w;       /* packed weights of the first output block and input block */
    ptrdiff_t w_cb;       /* floats between the weights of consecutive input blocks */
    ptrdiff_t w_ob;       /* floats between the packed weights of consecutive out blocks */
    ptrdiff_t x_ci;       /* 0: x is the blocked layout, pixel p's channel ci at
                           * x[p * VL + ci]; otherwise X read in place (NCHW, stride 1
                           * or 2 along W), channel rows x_ci floats apart:
                           * x[ci * x_ci + p * x_px] */
    int nb, np;           /* out blocks (1..4) and pixels (1..max_np[nb]) */
    /* Taps whose product the tile's first (skip_first) or last pixel (skip_last) leaves
     * out because that pixel reads W's zero padding with it: bit kw for the taps of
     * cf_dbk_tap.kw == kw (< 64).  Zero: every product is computed, as it may be, since
     * the padding it would read holds zeros. */
    uint64_t skip_first, skip_last;
    /* Packed weights a later share reads, to be brought into L2 while this one computes
     * (NULL: none): pf_lines cache lines from pf on for each of the nb output blocks, w_ob
     * floats apart, asked for a few at a time over the tile's reduction steps. */
    const float *pf;
    int pf_lines;
    int x_px;             /* X read in place: floats between a row's pixels (1 or 2) */
    /* A reduction split into shares: the partial sums to start from (NULL: zero) and
     * where to leave them (NULL: this share is the last, store through the epilogue).
     * Both hold nb * np vectors, [block][pixel][VL], VL-aligned; they may be the same. */
    const float *acc_in;
    float *acc_out;
} cf_dbk_tile;

/* Where the tile's outputs go, in Y's own layout (NCHW or NHWC). */
typedef struct cf_dbk_store {
    const cf_problem *p;  /* activation and its parameters */
    float *y;             /* output (first channel, first pixel of the tile) */
    const float *z;       /* residual at the same position, or NULL */
    const float *bias;    /* bias of the first channel, or NULL */
    int nm;               /* valid channels from the first one (1..nb*VL) */
    ptrdiff_t ch_stride;  /* floats between channels in y and z */
    ptrdiff_t px_stride;  /* floats between consecutive pixels of the tile */
} cf_dbk_store;

typedef struct cf_dbk_kernels {
    int vl;
    int max_np[5];        /* longest pixel run per nb (index 1..4); never increasing */
    void (*tile)(const cf_dbk_tile *t, const cf_dbk_store *s);
    /* One NCHW input row into the blocked layout: channel l < lanes of pixel iw (in
     * [iw_lo, iw_hi)) is src[l * ch_stride + iw], stored at padded position
     * wp = iw + pad, i.e. dst[((wp % sw) * wq + wp / sw) * VL + l], for the pixels of
     * phases wp % sw < nph only (nph = 1 keeps just the pixels a strided 1x1 reads);
     * lanes >= `lanes` of the stored pixels are zeroed. */
    void (*nchw_row)(float *dst, const float *src, ptrdiff_t ch_stride, int lanes,
                     int64_t iw_lo, int64_t iw_hi, int64_t pad, int64_t sw, int64_t wq,
                     int64_t nph);
} cf_dbk_kernels;

/* Each level's tile kernels (cpu/kernel_table.h picks among them); also the Winograd
 * algorithms' batched products. */
extern const cf_dbk_kernels cf_dbk_avx512, cf_dbk_avx2, cf_dbk_portable;

#endif /* CONVFIND_CPU_DIRECT_BLOCKED_H */
