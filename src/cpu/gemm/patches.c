/*
 * patches.c - im2col into packed SGEMM panels (see patches.h).
 *
 * Per kernel tap and per run of a panel's pixels on one output row, the output columns
 * that read inside X form one interval, computed rather than tested per element: zeros
 * before and after it, a strided copy inside it (contiguous at stride 1 in NCHW, a walk
 * along the channels in NHWC).  A strided NCHW convolution with several taps along the
 * row can first split each X row into its stride phases (cf_patch_split_x, one pass over
 * X); every tap's gather is then a contiguous copy from one phase, instead of the per-element
 * gather of each X element once per tap.
 */
#include "cpu/gemm/patches.h"

#include <string.h>

#include "util/prefetch.h"

#include "cpu/gemm/sgemm.h"
#include "problem/shape.h"

/* A run of a panel's pixels that lie on one output row: panel columns [r0, r0 + len)
 * are output positions (o0, o1, o2 .. o2 + len - 1). */
typedef struct row_seg {
    size_t r0, len;
    int64_t o0, o1, o2;
} row_seg;

void cf_patch_split_x(const float *x, size_t rows, size_t in2, size_t stride, float *dst)
{
    const size_t plen = (in2 + stride - 1) / stride;
    for (size_t r = 0; r < rows; r++) {
        const float *src = x + r * in2;
        float *d = dst + r * stride * plen;
        for (size_t ph = 0; ph < stride && ph < in2; ph++) {
            size_t count = (in2 - ph + stride - 1) / stride;
            for (size_t u = 0; u < count; u++)
                d[ph * plen + u] = src[u * stride + ph];
        }
    }
}

/* Copies and zeroes of a panel row's runs, which are at most a panel wide (<= 32
 * floats): short ones in fixed-size pieces the compiler inlines as (SSE) moves, where a
 * libc memcpy or memset per run cost more than the copy (a 7x7 1x1 layer copying 576
 * channels into 4 panels of 16 at AVX2: memmove and memset 46% of its time, 0.84x the
 * layer's time without them).  Runs of 24 floats and more go to libc, whose wide moves
 * copied AVX-512's 32-float panels of 65x65 maps 3% faster than the SSE pieces. */
static inline void copy_run(float *d, const float *s, size_t n)
{
    if (n >= 24) {
        memcpy(d, s, n * sizeof(float));
        return;
    }
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        memcpy(d + i, s + i, 8 * sizeof(float));
    if (n - i >= 4) {
        memcpy(d + i, s + i, 4 * sizeof(float));
        i += 4;
    }
    switch (n - i) {
    case 3:
        d[i + 2] = s[i + 2];
        /* fall through */
    case 2:
        d[i + 1] = s[i + 1];
        /* fall through */
    case 1:
        d[i] = s[i];
        break;
    default:
        break;
    }
}

static inline void zero_run(float *d, size_t n)
{
    static const float zeros[8];
    copy_run(d, zeros, n < 8 ? n : 8);
    for (size_t i = 8; i < n; i += 8)
        copy_run(d + i, zeros, n - i < 8 ? n - i : 8);
}

/* Whether output pixel i reads X's pixel i (a 1x1 kernel at stride 1, no padding, the
 * same extent), so pixels run through X as through the output. */
static bool covers_x(const cf_geom3 *g)
{
    for (int a = 0; a < 3; a++)
        if (g->k[a] != 1 || g->pad[a] != 0 || g->in[a] != g->out[a] ||
            (g->stride[a] != 1 && g->out[a] > 1))
            return false;
    return true;
}

/* Panels ahead whose X the 1x1 copy asks for (below). */
#define PATCH_AHEAD 4

/* Writes panel `panel` of the tile: rows kk = c * ksp + tap, `width` pixels each.
 * Per tap and row segment, the output columns that read inside X form one interval
 * (computed, not tested per element): zeros before and after it, a strided copy (a
 * contiguous copy at stride 1 in NCHW) inside it. */
void cf_patch_panel(void *arg, size_t panel)
{
    const cf_patch_job *j = arg;
    const cf_geom3 *g = &j->g;
    const size_t width = j->width, kdim = j->cg * j->ksp;
    const size_t first = j->pix0 + panel * width;
    const size_t np = j->pix0 + j->npix - first < width ? j->pix0 + j->npix - first : width;
    float *dst = j->dst + panel * kdim * width;

    row_seg seg[CF_SGEMM_NR_MAX];
    size_t nseg = 0;
    for (size_t r = 0; r < np;) {
        int64_t pix = (int64_t)(first + r);
        int64_t o2 = pix % g->out[2], rest = pix / g->out[2];
        size_t len = (size_t)(g->out[2] - o2) < np - r ? (size_t)(g->out[2] - o2) : np - r;
        seg[nseg++] = (row_seg){r, len, rest / g->out[1], rest % g->out[1], o2};
        r += len;
    }
    if (np < width)
        for (size_t kk = 0; kk < kdim; kk++)
            zero_run(dst + kk * width + np, width - np);

    /* A 1x1 kernel at stride 1 without padding in NCHW (gemm_1x1 copying X into panels,
     * tap_gemm's centre tap): the panel's pixels are consecutive in each channel of X,
     * one copy per channel whatever rows they lie on.  Those copies read a short piece
     * of each channel's row, rows pages apart, which the hardware prefetchers do not
     * follow; each copy asks for the same channel's piece PATCH_AHEAD panels on (within
     * the tile), so a chunk's later panels find X in L2.  Forced cpu.gemm_1x1 on
     * DeepLabV3's 1x1 layers on 129x129 (Zen 4, 2 threads, three runs of 3-6 rounds in
     * turns): c256 k32 0.65-0.79x the time, c256 k64 0.76-0.81x; its 1x1 layers with 128
     * or more output channels, whose copies serve more FMAs, 0.89-1.21x (noise). */
    if (!j->channels_last && j->phase_len == 0 && j->ksp == 1 && covers_x(g)) {
        const size_t ahead = first + PATCH_AHEAD * width, end = j->pix0 + j->npix;
        const size_t na = ahead < end ? (end - ahead < width ? end - ahead : width) : 0;
        for (size_t c = 0; c < j->cg; c++) {
            const float *src = j->xg + (int64_t)c * j->xc;
            if (na)
                cf_prefetch_l2_run(src + ahead, na * sizeof(float));
            copy_run(dst + c * width, src + first, np);
        }
        return;
    }

    /* X step between adjacent output columns.  At a stride of the row's length or more
     * no two columns read X (and the product might not fit). */
    const int64_t xs2 = g->stride[2] < g->in[2] ? j->xs[2] * g->stride[2] : 0;
    size_t tap = 0;
    for (int64_t t0 = 0; t0 < g->k[0]; t0++)
    for (int64_t t1 = 0; t1 < g->k[1]; t1++)
    for (int64_t t2 = 0; t2 < g->k[2]; t2++, tap++) {
        int64_t shift2 = t2 * g->dil[2] - g->pad[2]; /* i2 = o2 * stride + shift2 */
        /* Output columns o2 in [o2_lo, o2_hi) have 0 <= o2 * stride + shift2 < in[2];
         * o2_lo = ceil(-shift2 / stride), without a sum that a huge stride overflows. */
        const int64_t o2_lo = -cf_floor_div(shift2, g->stride[2]);
        const int64_t o2_hi = cf_floor_div(g->in[2] - 1 - shift2, g->stride[2]) + 1;
        for (size_t sgi = 0; sgi < nseg; sgi++) {
            const row_seg *sg = &seg[sgi];
            int64_t i0 = sg->o0 * g->stride[0] - g->pad[0] + t0 * g->dil[0];
            int64_t i1 = sg->o1 * g->stride[1] - g->pad[1] + t1 * g->dil[1];
            int64_t lo = o2_lo - sg->o2, hi = o2_hi - sg->o2; /* relative to the segment */
            if (i0 < 0 || i0 >= g->in[0] || i1 < 0 || i1 >= g->in[1])
                lo = hi = 0;
            lo = lo < 0 ? 0 : lo > (int64_t)sg->len ? (int64_t)sg->len : lo;
            hi = hi < lo ? lo : hi > (int64_t)sg->len ? (int64_t)sg->len : hi;
            float *d0 = dst + tap * width + sg->r0;
            if (lo > 0 || hi < (int64_t)sg->len) /* most runs read no padding */
                for (size_t c = 0; c < j->cg; c++) {
                    float *d = d0 + c * j->ksp * width;
                    zero_run(d, (size_t)lo);
                    zero_run(d + hi, sg->len - (size_t)hi);
                }
            if (hi == lo)
                continue;
            const float *row = j->xg + i0 * j->xs[0] + i1 * j->xs[1];
            const int64_t i2 = (sg->o2 + lo) * g->stride[2] + shift2; /* >= 0 */
            if (j->phase_len > 0) {
                /* Adjacent output columns read adjacent floats of one phase. */
                row += i2 % g->stride[2] * j->phase_len + i2 / g->stride[2];
                for (size_t c = 0; c < j->cg; c++)
                    copy_run(d0 + c * j->ksp * width + lo, row + (int64_t)c * j->xc,
                             (size_t)(hi - lo));
                continue;
            }
            row += i2 * j->xs[2];
            if (j->channels_last) {
                /* A pixel's channels are contiguous in X: read along them. */
                for (int64_t r = lo; r < hi; r++) {
                    const float *src = row + (r - lo) * xs2;
                    for (size_t c = 0; c < j->cg; c++)
                        d0[c * j->ksp * width + (size_t)r] = src[c];
                }
            } else if (xs2 == 1) {
                for (size_t c = 0; c < j->cg; c++)
                    copy_run(d0 + c * j->ksp * width + lo, row + (int64_t)c * j->xc,
                             (size_t)(hi - lo));
            } else if (xs2 == 2) {
                /* Stride 2 (stems, downsampling): a constant stride the compiler turns
                 * into vector shuffles; the general loop below stays scalar. */
                for (size_t c = 0; c < j->cg; c++) {
                    float *d = d0 + c * j->ksp * width + lo;
                    const float *src = row + (int64_t)c * j->xc;
                    for (int64_t r = 0; r < hi - lo; r++)
                        d[r] = src[2 * r];
                }
            } else {
                for (size_t c = 0; c < j->cg; c++) {
                    float *d = d0 + c * j->ksp * width;
                    const float *src = row + (int64_t)c * j->xc;
                    for (int64_t r = lo; r < hi; r++)
                        d[r] = src[(r - lo) * xs2];
                }
            }
        }
    }
}

