/*
 * geom3.h - a Conv problem's spatial attributes on fixed (D, H, W) axes.
 *
 * problem.h stores 1-D, 2-D and 3-D problems with the real axes first and neutral
 * entries after them.  Kernels that treat the last axis specially (it is the contiguous
 * one in memory, and the one their register tiles run along) want the real axes last
 * instead: here W is always the innermost real axis, and missing outer axes have size 1,
 * stride 1, dilation 1 and no padding.
 */
#ifndef CONVFIND_CPU_GEOM3_H
#define CONVFIND_CPU_GEOM3_H

#include <stdint.h>

#include "problem/problem.h"

typedef struct cf_geom3 {
    int64_t in[3], out[3], k[3], stride[3], dil[3], pad[3]; /* pad: begin side */
} cf_geom3;

static inline cf_geom3 cf_geom3_of(const cf_problem *p)
{
    cf_geom3 g;
    int shift = 3 - p->nsp;
    for (int a = 0; a < 3; a++) {
        int s = a - shift;
        bool real = s >= 0;
        g.in[a] = real ? p->in[s] : 1;
        g.out[a] = real ? p->out[s] : 1;
        g.k[a] = real ? p->k[s] : 1;
        g.stride[a] = real ? p->stride[s] : 1;
        g.dil[a] = real ? p->dil[s] : 1;
        g.pad[a] = real ? p->pad_begin[s] : 0;
    }
    return g;
}

#endif /* CONVFIND_CPU_GEOM3_H */
