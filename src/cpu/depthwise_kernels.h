/*
 * depthwise_kernels.h - cpu.depthwise's row (NHWC) and plane (NCHW) kernels, written
 * once over cpu/simd.h and included by one depthwise_<isa>.c per ISA.
 *
 * Depthwise convolution does a handful of FMAs per loaded value, so these kernels aim
 * at memory traffic, not FMA throughput: weights are loaded once per run of pixels
 * (NHWC) or broadcast once per row of vectors (NCHW), and several independent
 * accumulators hide the FMA latency.  The epilogue is applied to the accumulators and
 * stored straight into Y.
 */
#include "cpu/depthwise.h"
#include "cpu/simd.h"

#if defined(__GNUC__)
#define DW_INLINE static inline __attribute__((always_inline))
#else
#define DW_INLINE static inline
#endif

#define DW_RUN 8  /* NHWC: pixels per run */
#define DW_VECS 4 /* NCHW planes: vectors per row block */
#define DW_FLAT 8 /* NCHW row blocks: vectors per step of the flat run */

static inline int64_t dw_max(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t dw_min(int64_t a, int64_t b) { return a < b ? a : b; }

/* First and one-past-last tap k of an axis whose input i = o * s - pad + k * d lies in
 * [0, in). */
static void dw_tap_range(int64_t o, int64_t s, int64_t pad, int64_t d, int64_t k, int64_t in,
                         int64_t *lo, int64_t *hi)
{
    int64_t base = o * s - pad;
    int64_t l, h;
    if (d == 1) { /* the common case, without divisions */
        l = base >= 0 ? 0 : -base;
        h = base >= in ? 0 : in - base;
    } else {
        l = base >= 0 ? 0 : (-base + d - 1) / d;
        h = base >= in ? 0 : (in - 1 - base) / d + 1;
    }
    *lo = dw_min(l, k);
    *hi = dw_max(dw_min(h, k), *lo);
}

/* np pixels from output column ow of one row, channels [c0, c0 + cnt), taps of W in
 * [kw_lo, kw_hi) valid for all of them (D and H ranges given). */
DW_INLINE void dw_nhwc_pixels(const cf_dw_job *j, int64_t n, int64_t od, int64_t oh, int64_t ow,
                              int64_t c0, int cnt, const int64_t kr[6], const int np,
                              const bool full, const int KW)
{
    /* KW: 3 for interior runs of 3-wide, dilation-1 kernels (taps 0..2, unrolled), or 0
     * for the taps kr[4]..kr[5] of the problem. */
    const int64_t kw_lo = KW ? 0 : kr[4], kw_hi = KW ? KW : kr[5];
    const cf_problem *p = j->p;
    const cf_geom3 *s = &j->s;
    cf_vf acc[DW_RUN];
#pragma GCC unroll 8
    for (int q = 0; q < np; q++)
        acc[q] = cf_vzero();
    for (int64_t kd = kr[0]; kd < kr[1]; kd++) {
        int64_t id = od * s->stride[0] - s->pad[0] + kd * s->dil[0];
        for (int64_t kh = kr[2]; kh < kr[3]; kh++) {
            int64_t ih = oh * s->stride[1] - s->pad[1] + kh * s->dil[1];
            const float *xrow = j->x + ((n * s->in[0] + id) * s->in[1] + ih) * s->in[2] * j->xc + c0;
            const float *wt = j->w + ((kd * s->k[1] + kh) * s->k[2]) * p->m + c0;
#pragma GCC unroll 3
            for (int64_t kw = kw_lo; kw < kw_hi; kw++) {
                cf_vf wv = full ? cf_vload(wt + kw * p->m) : cf_vload_n(wt + kw * p->m, cnt);
                const float *xp =
                    xrow + (ow * s->stride[2] - s->pad[2] + kw * (KW ? 1 : s->dil[2])) * j->xc;
#pragma GCC unroll 8
                for (int q = 0; q < np; q++) {
                    const float *xq = xp + q * s->stride[2] * j->xc;
                    acc[q] = cf_vfma(full ? cf_vload(xq) : cf_vload_n(xq, cnt), wv, acc[q]);
                }
            }
        }
    }
    cf_vf bias = j->b ? (full ? cf_vload(j->b + c0) : cf_vload_n(j->b + c0, cnt)) : cf_vzero();
    int64_t pix = ((n * s->out[0] + od) * s->out[1] + oh) * s->out[2] + ow;
#pragma GCC unroll 8
    for (int q = 0; q < np; q++) {
        int64_t off = (pix + q) * p->m + c0;
        cf_vf v = cf_vadd(acc[q], bias);
        if (j->z)
            v = cf_vadd(v, full ? cf_vload(j->z + off) : cf_vload_n(j->z + off, cnt));
        v = cf_vactivate(v, p->act, p->alpha, p->beta);
        if (full)
            cf_vstore(j->y + off, v);
        else
            cf_vstore_n(j->y + off, v, cnt);
    }
}

#define DW_NP_CASE(np)                                                                     \
    case np:                                                                               \
        if (full)                                                                          \
            dw_nhwc_pixels(j, n, od, oh, ow, c0, cnt, kr, np, true, 0);                    \
        else                                                                               \
            dw_nhwc_pixels(j, n, od, oh, ow, c0, cnt, kr, np, false, 0);                   \
        break;

static void dw_nhwc_dispatch(const cf_dw_job *j, int64_t n, int64_t od, int64_t oh, int64_t ow,
                             int64_t c0, int cnt, const int64_t kr[6], int np, bool k3_run)
{
    bool full = cnt == CF_VL;
    if (k3_run && full && np == DW_RUN) { /* the bulk of 3x3 layers */
        dw_nhwc_pixels(j, n, od, oh, ow, c0, cnt, kr, DW_RUN, true, 3);
        return;
    }
    switch (np) {
        DW_NP_CASE(1) DW_NP_CASE(2) DW_NP_CASE(3) DW_NP_CASE(4)
        DW_NP_CASE(5) DW_NP_CASE(6) DW_NP_CASE(7) DW_NP_CASE(8)
    default:
        break;
    }
}

static void dw_nhwc_row(const cf_dw_job *j, size_t row)
{
    const cf_problem *p = j->p;
    const cf_geom3 *s = &j->s;
    int64_t oh = (int64_t)row % s->out[1];
    int64_t od = ((int64_t)row / s->out[1]) % s->out[0];
    int64_t n = (int64_t)row / (s->out[1] * s->out[0]);
    int64_t kr[6];
    dw_tap_range(od, s->stride[0], s->pad[0], s->dil[0], s->k[0], s->in[0], &kr[0], &kr[1]);
    dw_tap_range(oh, s->stride[1], s->pad[1], s->dil[1], s->k[1], s->in[1], &kr[2], &kr[3]);
    /* Interior columns: every W tap inside the input. */
    int64_t ow_lo = (s->pad[2] + s->stride[2] - 1) / s->stride[2];
    int64_t last = s->in[2] - 1 - (s->k[2] - 1) * s->dil[2] + s->pad[2];
    int64_t ow_hi = last < 0 ? 0 : last / s->stride[2] + 1;
    ow_hi = dw_min(ow_hi, s->out[2]);
    if (ow_hi < ow_lo)
        ow_hi = ow_lo;
    bool k3 = s->k[2] == 3 && s->dil[2] == 1;
    for (int64_t c0 = 0; c0 < p->m; c0 += CF_VL) {
        int cnt = (int)dw_min(CF_VL, p->m - c0);
        for (int64_t ow = 0; ow < s->out[2];) {
            int np;
            bool interior = ow >= ow_lo && ow < ow_hi;
            if (interior) {
                np = (int)dw_min(DW_RUN, ow_hi - ow);
                kr[4] = 0;
                kr[5] = s->k[2];
            } else {
                np = 1;
                dw_tap_range(ow, s->stride[2], s->pad[2], s->dil[2], s->k[2], s->in[2], &kr[4],
                             &kr[5]);
            }
            dw_nhwc_dispatch(j, n, od, oh, ow, c0, cnt, kr, np, interior && k3);
            ow += np;
        }
    }
}

/* One vector of input lanes: lane l reads row[base + l * sw].  Away from the row's
 * ends (for strides 1 and 2) that is one load, or two for the even lanes of stride 2
 * (which also read the float past the last lane); otherwise lanes outside [0, iw_n) read
 * as 0 and are never touched.  `idx` holds l * sw. */
DW_INLINE cf_vf dw_lanes(const float *row, int64_t base, int64_t sw, int64_t iw_n,
                         const int32_t *idx)
{
    if (sw <= 2 && base >= 0 && base + CF_VL * sw <= iw_n)
        return sw == 1 ? cf_vload(row + base) : cf_vload_even(row + base);
    /* Lanes inside the row: [lo, hi), shifts instead of divisions for strides 1 and 2. */
    int64_t lo, hi;
    if (sw <= 2) {
        int sh = (int)sw - 1;
        lo = base >= 0 ? 0 : (-base + sw - 1) >> sh;
        hi = base >= iw_n ? 0 : ((iw_n - 1 - base) >> sh) + 1;
    } else {
        lo = base >= 0 ? 0 : (-base + sw - 1) / sw;
        hi = base >= iw_n ? 0 : (iw_n - 1 - base) / sw + 1;
    }
    hi = hi < CF_VL ? hi : CF_VL;
    if (hi <= lo)
        return cf_vzero();
    if (sw == 1)
        return cf_vload_lanes(row + base, (int)lo, (int)hi);
    if (sw == 2)
        return cf_vload_even_lanes(row + base, (int)lo, (int)hi);
    unsigned mask = (unsigned)(((1ull << hi) - 1) & ~((1ull << lo) - 1));
    return cf_vgather(row, (int32_t)base, idx, mask);
}

/* nv vectors of output row (od, oh) from column ow0 of plane `plane`, through the
 * epilogue; kr holds the D and H tap ranges of the row. */
DW_INLINE void dw_nchw_vectors(const cf_dw_job *j, const float *xplane, const float *w,
                               cf_vf bias, const int32_t *idx, const int64_t kr[4], int64_t od,
                               int64_t oh, int64_t ow0, size_t y_row, const int nv,
                               const int KW, const int SW)
{
    const cf_problem *p = j->p;
    const cf_geom3 *s = &j->s;
    cf_vf acc[DW_VECS];
#pragma GCC unroll 4
    for (int r = 0; r < nv; r++)
        acc[r] = cf_vzero();
    /* KW, SW: compile-time W taps and stride (dilation 1) of the common 3-wide kernels,
     * or 0 for the general case read from the problem. */
    const int64_t sw = SW ? SW : s->stride[2];
    const int64_t kwn = KW ? KW : s->k[2];
    const int64_t dw = KW ? 1 : s->dil[2];
    for (int64_t kd = kr[0]; kd < kr[1]; kd++)
    for (int64_t kh = kr[2]; kh < kr[3]; kh++) {
        int64_t id = od * s->stride[0] - s->pad[0] + kd * s->dil[0];
        int64_t ih = oh * s->stride[1] - s->pad[1] + kh * s->dil[1];
        const float *row = xplane + (id * s->in[1] + ih) * s->in[2];
        const float *wt = w + (kd * s->k[1] + kh) * kwn;
#pragma GCC unroll 3
        for (int64_t kw = 0; kw < kwn; kw++) {
            cf_vf wv = cf_vbcast(wt[kw]);
            int64_t base = ow0 * sw - s->pad[2] + kw * dw;
#pragma GCC unroll 4
            for (int r = 0; r < nv; r++)
                acc[r] = cf_vfma(wv, dw_lanes(row, base + r * CF_VL * sw, sw, s->in[2], idx),
                                 acc[r]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < nv; r++) {
        int64_t ow = ow0 + r * CF_VL;
        int cnt = (int)dw_min(CF_VL, s->out[2] - ow);
        cf_vf v = cf_vadd(acc[r], bias);
        if (j->z)
            v = cf_vadd(v, cf_vload_n(j->z + y_row + ow, cnt));
        cf_vstore_n(j->y + y_row + ow, cf_vactivate(v, p->act, p->alpha, p->beta), cnt);
    }
}

/* One output row of a plane, in blocks of up to DW_VECS vectors. */
DW_INLINE void dw_nchw_row(const cf_dw_job *j, const float *xplane, const float *w, cf_vf bias,
                           const int32_t *idx, const int64_t kr[4], int64_t od, int64_t oh,
                           size_t y_row, const int KW, const int SW)
{
    int64_t ow_n = j->s.out[2];
    for (int64_t ow0 = 0; ow0 < ow_n; ow0 += DW_VECS * CF_VL) {
        int64_t nv = (dw_min(DW_VECS * CF_VL, ow_n - ow0) + CF_VL - 1) / CF_VL;
        switch (nv) {
        case 1: dw_nchw_vectors(j, xplane, w, bias, idx, kr, od, oh, ow0, y_row, 1, KW, SW); break;
        case 2: dw_nchw_vectors(j, xplane, w, bias, idx, kr, od, oh, ow0, y_row, 2, KW, SW); break;
        case 3: dw_nchw_vectors(j, xplane, w, bias, idx, kr, od, oh, ow0, y_row, 3, KW, SW); break;
        default: dw_nchw_vectors(j, xplane, w, bias, idx, kr, od, oh, ow0, y_row, 4, KW, SW); break;
        }
    }
}

/* One (image, output channel) plane straight from NCHW X: vectors along W, with a
 * masked load or gather only where a vector's window crosses the row's ends. */
static void dw_nchw_plane(const cf_dw_job *j, size_t plane)
{
    const cf_problem *p = j->p;
    const cf_geom3 *s = &j->s;
    int64_t n = (int64_t)plane / p->m, m = (int64_t)plane % p->m;
    const float *xplane = j->x + (n * p->c + m / j->mult) * p->in_sp;
    const float *w = j->w + m * j->ntaps;
    cf_vf bias = cf_vbcast(j->b ? j->b[m] : 0.0f);
    size_t y_plane = plane * (size_t)p->out_sp;
    int32_t idx[CF_VL];
    for (int l = 0; l < CF_VL; l++)
        idx[l] = (int32_t)(l * s->stride[2]);
    bool k3 = s->k[2] == 3 && s->dil[2] == 1;
    int spec = k3 && s->stride[2] == 1 ? 1 : k3 && s->stride[2] == 2 ? 2 : 0;
    for (int64_t od = 0; od < s->out[0]; od++)
    for (int64_t oh = 0; oh < s->out[1]; oh++) {
        int64_t kr[4];
        dw_tap_range(od, s->stride[0], s->pad[0], s->dil[0], s->k[0], s->in[0], &kr[0], &kr[1]);
        dw_tap_range(oh, s->stride[1], s->pad[1], s->dil[1], s->k[1], s->in[1], &kr[2], &kr[3]);
        size_t y_row = y_plane + (size_t)((od * s->out[1] + oh) * s->out[2]);
        if (spec == 1)
            dw_nchw_row(j, xplane, w, bias, idx, kr, od, oh, y_row, 3, 1);
        else if (spec == 2)
            dw_nchw_row(j, xplane, w, bias, idx, kr, od, oh, y_row, 3, 2);
        else
            dw_nchw_row(j, xplane, w, bias, idx, kr, od, oh, y_row, 0, 0);
    }
}

/* One phase row of the NCHW row-block kernel: dst[j] = src[j - lo] for j in [lo, hi)
 * and 0 elsewhere in [0, pw) (all of it when src is NULL, a padding row). */
static void dw_phase_row(float *dst, const float *src, int64_t pw, int64_t lo, int64_t hi)
{
    if (!src)
        lo = hi = 0;
    for (int64_t j = 0; j < lo; j += CF_VL)
        cf_vstore_n(dst + j, cf_vzero(), (int)dw_min(CF_VL, lo - j));
    int64_t j = lo;
    for (; j + CF_VL <= hi; j += CF_VL)
        cf_vstore(dst + j, cf_vload(src + (j - lo)));
    if (j < hi)
        cf_vstore_n(dst + j, cf_vload_n(src + (j - lo), (int)(hi - j)), (int)(hi - j));
    for (j = hi; j < pw; j += CF_VL)
        cf_vstore_n(dst + j, cf_vzero(), (int)dw_min(CF_VL, pw - j));
}

/* nv vectors of sums at flat position q0 of a block, tap t reading in + off[t]: for 3x3
 * kernels with dilation 1 along W (K9) the nine weights stay in registers across the
 * block. */
DW_INLINE void dw_flat_vectors(const cf_dw_job *j, const float *in, float *out,
                               const float *w, const int64_t *off, const cf_vf *w9,
                               int64_t q0, const int nv, const bool K9)
{
    cf_vf acc[DW_FLAT];
#pragma GCC unroll 8
    for (int r = 0; r < nv; r++)
        acc[r] = cf_vzero();
    if (K9) {
        /* Taps kw = 1, 2 of a row are its kw = 0 vector shifted by one and two lanes:
         * one load per vector and row instead of three, mostly not splitting a line. */
#pragma GCC unroll 3
        for (int kh = 0; kh < 3; kh++) {
            const float *src = in + off[3 * kh] + q0;
            cf_vf a = cf_vload(src);
#pragma GCC unroll 8
            for (int r = 0; r < nv; r++) {
                cf_vf b = cf_vload(src + (r + 1) * CF_VL);
                acc[r] = cf_vfma(a, w9[3 * kh], acc[r]);
                acc[r] = cf_vfma(cf_vshift(a, b, 1), w9[3 * kh + 1], acc[r]);
                acc[r] = cf_vfma(cf_vshift(a, b, 2), w9[3 * kh + 2], acc[r]);
                a = b;
            }
        }
    } else {
        for (int64_t t = 0; t < j->ntaps; t++) {
            const float *src = in + off[t] + q0;
            cf_vf wv = cf_vbcast(w[t]);
#pragma GCC unroll 8
            for (int r = 0; r < nv; r++)
                acc[r] = cf_vfma(cf_vload(src + r * CF_VL), wv, acc[r]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < nv; r++)
        cf_vstore(out + q0 + r * CF_VL, acc[r]);
}

#define DW_FLAT_CASE(nv)                                                                   \
    case nv:                                                                               \
        dw_flat_vectors(j, in, out, w, off, w9, q0, nv, K9);                               \
        break;

/* All sums of a block, `flat` positions rounded up to whole vectors, in groups of
 * DW_FLAT vectors. */
DW_INLINE void dw_flat_block(const cf_dw_job *j, const float *in, float *out, const float *w,
                             const int64_t *off, const cf_vf *w9, int64_t flat, const bool K9)
{
    int64_t q0 = 0;
    for (; flat - q0 > (DW_FLAT - 1) * CF_VL; q0 += DW_FLAT * CF_VL)
        dw_flat_vectors(j, in, out, w, off, w9, q0, DW_FLAT, K9);
    switch ((flat - q0 + CF_VL - 1) / CF_VL) {
        DW_FLAT_CASE(1) DW_FLAT_CASE(2) DW_FLAT_CASE(3) DW_FLAT_CASE(4)
        DW_FLAT_CASE(5) DW_FLAT_CASE(6) DW_FLAT_CASE(7)
    default:
        break;
    }
}

/* One block of output rows of one (image, output channel) plane.  The block's input rows
 * are copied zero-padded and split into stride phases, so that every tap becomes one
 * unmasked load at a fixed offset from the output position: the block is computed as
 * one flat run of rows pw wide (lanes past OW are computed and dropped), and the
 * epilogue then compacts its rows into Y.  Both buffers live in L1. */
static void dw_nchw_block(const cf_dw_job *j, size_t unit)
{
    const cf_problem *p = j->p;
    const cf_geom3 *s = &j->s;
    _Alignas(64) float in[CF_DW_IN_FLOATS];
    _Alignas(64) float out[CF_DW_OUT_FLOATS];
    int64_t plane = (int64_t)unit / j->blocks, oh0 = (int64_t)unit % j->blocks * j->rows;
    int64_t n = plane / p->m, m = plane % p->m;
    int64_t rows = dw_min(j->rows, s->out[1] - oh0), pw = j->pw, ow_n = s->out[2];
    int64_t sh = s->stride[1], lo = j->cols[0], hi = j->cols[1];
    const float *xplane = j->x + (n * p->c + m / j->mult) * p->in_sp;
    for (int64_t rh = 0; rh < sh; rh++)
        for (int64_t i = 0; i < j->rows + j->qh; i++) { /* whole planes, all defined */
            int64_t ih = (oh0 + i) * sh + rh - s->pad[1];
            bool inside = ih >= 0 && ih < s->in[1] && hi > lo; /* then lo is the pad */
            dw_phase_row(in + rh * j->pstride + i * pw, inside ? xplane + ih * s->in[2] : NULL,
                         pw, lo, hi);
        }
    /* Read only by dropped lanes (K9 reads one vector past the last one it sums). */
    cf_vstore(in + sh * j->pstride, cf_vzero());
    cf_vstore(in + sh * j->pstride + CF_VL, cf_vzero());
    const float *w = j->w + m * j->ntaps;
    int64_t flat = (rows - 1) * pw + ow_n;
    if (s->k[1] == 3 && s->k[2] == 3 && s->dil[2] == 1) {
        cf_vf w9[9];
        for (int t = 0; t < 9; t++)
            w9[t] = cf_vbcast(w[t]);
        dw_flat_block(j, in, out, w, j->off, w9, flat, true);
    } else {
        dw_flat_block(j, in, out, w, j->off, NULL, flat, false);
    }
    cf_vf bias = cf_vbcast(j->b ? j->b[m] : 0.0f);
    for (int64_t r = 0; r < rows; r++) {
        size_t y_row = (size_t)(plane * p->out_sp + (oh0 + r) * ow_n);
        for (int64_t ow = 0; ow < ow_n; ow += CF_VL) {
            int cnt = (int)dw_min(CF_VL, ow_n - ow);
            cf_vf v = cf_vadd(cf_vload_n(out + r * pw + ow, cnt), bias);
            if (j->z)
                v = cf_vadd(v, cf_vload_n(j->z + y_row + ow, cnt));
            cf_vstore_n(j->y + y_row + ow, cf_vactivate(v, p->act, p->alpha, p->beta), cnt);
        }
    }
}

/* X (NCHW) -> [n][pixel][M] for one block of channels of one image: CF_VL x CF_VL
 * blocks transposed in registers, edges element by element. */
static void dw_to_last(const cf_dw_tr *t, size_t task)
{
    const cf_problem *p = t->p;
    int64_t blocks = (p->m + CF_DW_TR_BLOCK - 1) / CF_DW_TR_BLOCK;
    int64_t n = (int64_t)task / blocks, m0 = (int64_t)task % blocks * CF_DW_TR_BLOCK;
    int64_t m1 = dw_min(m0 + CF_DW_TR_BLOCK, p->m), sp = p->in_sp;
    float *dst = t->dst + n * sp * p->m;
    for (int64_t mb = m0; mb < m1; mb += CF_VL) {
        int64_t i = 0;
        if (mb + CF_VL <= m1) {
            const float *rows[CF_VL];
            for (int l = 0; l < CF_VL; l++)
                rows[l] = t->src + (n * p->c + (mb + l) / t->mult) * sp;
            for (; i + CF_VL <= sp; i += CF_VL) {
                cf_vf r[CF_VL];
                for (int l = 0; l < CF_VL; l++)
                    r[l] = cf_vload(rows[l] + i);
                cf_vtranspose(r);
                for (int q = 0; q < CF_VL; q++)
                    cf_vstore(dst + (i + q) * p->m + mb, r[q]);
            }
        }
        for (int64_t m = mb; m < dw_min(mb + CF_VL, m1); m++) {
            const float *src = t->src + (n * p->c + m / t->mult) * sp;
            for (int64_t k = i; k < sp; k++)
                dst[k * p->m + m] = src[k];
        }
    }
}

/* [n][pixel][M] -> Y (NCHW) for one block of channels of one image, adding the residual
 * and applying the activation on the way (bias is already in the sums). */
static void dw_to_first(const cf_dw_tr *t, size_t task)
{
    const cf_problem *p = t->p;
    int64_t blocks = (p->m + CF_DW_TR_BLOCK - 1) / CF_DW_TR_BLOCK;
    int64_t n = (int64_t)task / blocks, m0 = (int64_t)task % blocks * CF_DW_TR_BLOCK;
    int64_t m1 = dw_min(m0 + CF_DW_TR_BLOCK, p->m), sp = p->out_sp;
    const float *src = t->src + n * sp * p->m;
    for (int64_t mb = m0; mb < m1; mb += CF_VL) {
        int64_t i = 0;
        if (mb + CF_VL <= m1) {
            for (; i + CF_VL <= sp; i += CF_VL) {
                cf_vf r[CF_VL];
                for (int q = 0; q < CF_VL; q++)
                    r[q] = cf_vload(src + (i + q) * p->m + mb);
                cf_vtranspose(r);
                for (int l = 0; l < CF_VL; l++) {
                    size_t off = (size_t)((n * p->m + mb + l) * sp + i);
                    cf_vf v = r[l];
                    if (t->z)
                        v = cf_vadd(v, cf_vload(t->z + off));
                    cf_vstore(t->dst + off, cf_vactivate(v, p->act, p->alpha, p->beta));
                }
            }
        }
        for (int64_t m = mb; m < dw_min(mb + CF_VL, m1); m++)
            for (int64_t k = i; k < sp; k++) {
                size_t off = (size_t)((n * p->m + m) * sp + k);
                t->dst[off] = cf_epilogue_value(p, src[k * p->m + m], 0.0f, t->z ? t->z[off] : 0.0f);
            }
    }
}

const cf_dw_kernels CF_SIMD_SYM(cf_dw) = {
    .nhwc_row = dw_nhwc_row,
    .nchw_plane = dw_nchw_plane,
    .nchw_block = dw_nchw_block,
    .to_last = dw_to_last,
    .to_first = dw_to_first,
};
