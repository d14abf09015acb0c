/*
 * patches.h - im2col straight into the SGEMM's packed panels (internal to the CPU GEMM
 * algorithms).
 *
 * A patch panel holds `width` consecutive output pixels (NR when pixels are the GEMM's
 * B columns, MR when they are A's rows) times K = channels x kernel taps, in the packed
 * form of sgemm.h: row kk = c * taps + tap, element (kk, pixel r) at panel[kk * width + r],
 * zero for padding and for pixels past the last.  The geometry is a plain cf_geom3 (any
 * stride, dilation, padding; 1-D to 3-D), so ConvTranspose's sub-pixel phases can use
 * the same generator with a geometry of their own.
 */
#ifndef CONVFIND_CPU_PATCHES_H
#define CONVFIND_CPU_PATCHES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu/geom3.h"

typedef struct cf_patch_job {
    cf_geom3 g;           /* in, out, k, stride, dil, pad of the patches to build */
    const float *xg;      /* X of this image, first channel of this group */
    int64_t xc, xs[3];    /* X element strides: channel, spatial axes (geom3 order) */
    size_t cg, ksp;       /* channels, kernel taps */
    size_t pix0, npix;    /* the output pixels (row-major over g.out) of this tile */
    size_t width;         /* panel width in pixels (<= CF_SGEMM_NR_MAX) */
    bool channels_last;   /* X is NHWC: read along channels */
    int64_t phase_len;    /* 0: X as it is.  > 0 (NCHW only): each X row (fixed channel and
                           * outer coordinates, xs[1] floats apart) is split into g.stride[2]
                           * phases along the last axis, X(i2) at row[(i2 % stride) *
                           * phase_len + i2 / stride], so every tap's strided gather becomes
                           * a contiguous copy (cf_patch_split_x makes this form) */
    float *dst;           /* panel 0 of the tile; panel q at dst + q * cg * ksp * width */
} cf_patch_job;

/* Writes X's phase-split form for a job with phase_len > 0: `rows` rows of `in2` floats
 * at x (row r at x + r * in2, channels and outer coordinates flattened), each into
 * stride * phase_len floats at dst + r * stride * phase_len, phase_len = ceil(in2 /
 * stride).  The floats past each phase's end are not written (never read). */
void cf_patch_split_x(const float *x, size_t rows, size_t in2, size_t stride, float *dst);

/* Writes panel `panel` of the tile (a cf_task_fn: `arg` is a const cf_patch_job *).
 * Panels are independent, so any set of them may be written concurrently. */
void cf_patch_panel(void *arg, size_t panel);

#endif /* CONVFIND_CPU_PATCHES_H */
