/*
 * phases.h - copying one input row into the stride-phase-split form that the direct and
 * depthwise kernels read (see direct_blocked.h): padded position wp = iw + pad goes to
 * phase wp % stride, index wp / stride.  Walking each phase separately keeps divisions
 * out of the per-element loop.
 */
#ifndef CONVFIND_CPU_PHASES_H
#define CONVFIND_CPU_PHASES_H

#include <stddef.h>
#include <stdint.h>

/* Copies src[iw * src_step] for iw in [iw_lo, iw_hi) to
 * dst[((wp % stride) * wq + wp / stride) * dst_step], wp = iw + pad.  Other elements of
 * dst are left alone. */
static inline void cf_split_phases(float *dst, ptrdiff_t dst_step, int64_t wq, int64_t stride,
                                   const float *src, ptrdiff_t src_step, int64_t pad,
                                   int64_t iw_lo, int64_t iw_hi)
{
    if (iw_hi <= iw_lo)
        return;
    for (int64_t ph = 0; ph < stride; ph++) {
        /* First iw >= iw_lo with (iw + pad) % stride == ph. */
        int64_t r = ((iw_lo + pad) % stride + stride) % stride;
        int64_t iw = iw_lo + ((ph - r) % stride + stride) % stride;
        float *d = dst + (ph * wq + (iw + pad) / stride) * dst_step;
        for (; iw < iw_hi; iw += stride, d += dst_step)
            *d = src[iw * src_step];
    }
}

#endif /* CONVFIND_CPU_PHASES_H */
