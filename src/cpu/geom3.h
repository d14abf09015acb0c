/*
 * geom3.h - a problem's spatial attributes on fixed (D, H, W) axes, in the form the CPU
 * kernels index with.
 *
 * problem.h stores 1-D, 2-D and 3-D problems with the real axes first and neutral
 * entries after them.  Kernels that treat the last axis specially (it is the contiguous
 * one in memory, and the one their register tiles run along) want the real axes last
 * instead: here W is always the innermost real axis, and missing outer axes have size 1,
 * stride 1, dilation 1 and no padding.
 *
 * Validation accepts any int64 stride, dilation and pad whose output fits (issue 16:
 * strides of 2^62 on a 5-pixel row).  A stride that is never multiplied by a nonzero
 * index, and a dilation that is never multiplied by a nonzero tap, are stored here as 1:
 * that computes the same convolution, and keeps what kernels derive from the stride
 * (phases per row, pixels per phase, interval ends) as small as the data instead of
 * overflowing.  After that, for a Conv every output's window lies inside the padded
 * input, so o * stride - pad + k * dil stays within [-pad_begin, in + pad_end) for every
 * output o and tap k.  Kernels that stage the padded input, or address it through
 * 32-bit vector lanes, also need it to be small: cf_geom3_bounded.
 */
#ifndef CONVFIND_CPU_GEOM3_H
#define CONVFIND_CPU_GEOM3_H

#include <stdbool.h>
#include <stdint.h>

#include "problem/problem.h"

typedef struct cf_geom3 {
    int64_t in[3], out[3], k[3], stride[3], dil[3], pad[3]; /* pad: begin side */
} cf_geom3;

static inline cf_geom3 cf_geom3_of(const cf_problem *p)
{
    cf_geom3 g;
    int shift = 3 - p->nsp;
    bool conv = p->op == CONVFIND_OP_CONV;
    for (int a = 0; a < 3; a++) {
        int s = a - shift;
        bool real = s >= 0;
        g.in[a] = real ? p->in[s] : 1;
        g.out[a] = real ? p->out[s] : 1;
        g.k[a] = real ? p->k[s] : 1;
        g.pad[a] = real ? p->pad_begin[s] : 0;
        /* Conv output o reads o * stride, ConvTranspose input i writes i * stride: one
         * output (one input) only ever multiplies the stride by 0. */
        bool one = conv ? g.out[a] == 1 : g.in[a] == 1;
        g.stride[a] = real && !one ? p->stride[s] : 1;
        g.dil[a] = real && g.k[a] > 1 ? p->dil[s] : 1;
    }
    return g;
}

/* Conv: the span of padded input that axis a's windows cover, from -pad on:
 * (out - 1) * stride + (k - 1) * dil + 1.  Validation made out the largest count of
 * windows that fit in the padded input, so this is at most in + pads and never
 * overflows. */
static inline int64_t cf_geom3_reach(const cf_geom3 *g, int a)
{
    return (g->out[a] - 1) * g->stride[a] + (g->k[a] - 1) * g->dil[a] + 1;
}

/* Bounds of cf_geom3_bounded: an axis's input size, begin pad and reach, and the padded
 * volume the windows cover (the product of the reaches).  2^27 positions times 16 lanes
 * still fit a 32-bit lane offset; a volume of 2^40 floats (4 TiB) is more than any
 * machine stages, and times the few factors kernels apply to it (vector length, stride
 * phases) stays far inside int64. */
#define CF_GEOM3_MAX_AXIS ((int64_t)1 << 27)
#define CF_GEOM3_MAX_VOLUME ((int64_t)1 << 40)

/* Conv: whether every axis's in, begin pad and reach are at most CF_GEOM3_MAX_AXIS and
 * their padded volume at most CF_GEOM3_MAX_VOLUME.  Kernels that copy the padded input
 * (or rows of it) into their own layout, or gather it through 32-bit lane offsets,
 * compute only such problems; huge pads and strides that leave a few outputs far apart
 * go to those that index X directly (cpu.im2col_gemm, cpu.reference). */
static inline bool cf_geom3_bounded(const cf_geom3 *g)
{
    int64_t volume = 1;
    for (int a = 0; a < 3; a++) {
        int64_t reach = cf_geom3_reach(g, a);
        if (g->in[a] > CF_GEOM3_MAX_AXIS || g->pad[a] > CF_GEOM3_MAX_AXIS ||
            reach > CF_GEOM3_MAX_AXIS)
            return false;
        volume *= reach; /* <= 2^40 * 2^27 */
        if (volume > CF_GEOM3_MAX_VOLUME)
            return false;
    }
    return true;
}

#endif /* CONVFIND_CPU_GEOM3_H */
