/*
 * depthwise_kernels.h - cpu.depthwise's kernels: the row kernel (NHWC), the channel-block
 * kernel (NCHW 1-D and 2-D) and the plane kernel (other NCHW), written once over
 * cpu/simd.h and included by one depthwise_<isa>.c per ISA.
 *
 * Depthwise convolution does a handful of FMAs per loaded value, so these kernels aim
 * at memory traffic and shuffles, not FMA throughput: weights are loaded once per run
 * of pixels, several independent accumulators hide the FMA latency, and the NCHW
 * channel-block kernel keeps its transposed rows and sums in L1 between reading X and
 * writing Y.  Bias is the accumulators' start; residual and activation follow the sums.
 */
#include "cpu/depthwise_simd.h"

#define DW_RUN 8  /* NHWC: pixels per run */
#define DW_VECS 4 /* NCHW planes: vectors per row block */
#define DW_PIX 8  /* NCHW channel blocks: pixels per step along a row */
#define DW_ROWS 8 /* NCHW channel blocks: output rows per call of the row kernel */

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

/* np pixels from output column ow of one row, for the channel vectors from c_lo up to
 * c_hi (full vectors, or one partial vector of cnt channels when !full), taps of W in
 * [kw_lo, kw_hi) valid for all of them (D and H ranges given).  The channel loop is
 * inside, so the row addressing is paid once per run of pixels rather than per channel
 * vector: a call per (run, channel vector) did 72 FMAs for 3x3 and spent more than
 * that on its set-up (a 144-channel 56x56 layer took 3x the NCHW kernel's time). */
DW_INLINE void dw_nhwc_pixels(const cf_dw_job *j, int64_t n, int64_t od, int64_t oh, int64_t ow,
                              int64_t c_lo, int64_t c_hi, int cnt, const int64_t kr[6],
                              const int np, const bool full, const int KW)
{
    /* KW: 3 for interior runs of 3-wide, dilation-1 kernels (taps 0..2, unrolled), or 0
     * for the taps kr[4]..kr[5] of the problem. */
    const int64_t kw_lo = KW ? 0 : kr[4], kw_hi = KW ? KW : kr[5];
    const cf_problem *p = j->p;
    const cf_geom3 *s = &j->s;
    const int64_t xc = j->xc, xq_step = s->stride[2] * xc;
    const int64_t kw_step = (KW ? 1 : s->dil[2]) * xc;
    /* X at the run's first tap of the first (kd, kh) row; further rows are steps away. */
    const int64_t id0 = od * s->stride[0] - s->pad[0] + kr[0] * s->dil[0];
    const int64_t ih0 = oh * s->stride[1] - s->pad[1] + kr[2] * s->dil[1];
    const float *x_run = j->x + ((n * s->in[0] + id0) * s->in[1] + ih0) * s->in[2] * xc +
                         (ow * s->stride[2] - s->pad[2] + kw_lo * (KW ? 1 : s->dil[2])) * xc;
    const int64_t h_step = s->dil[1] * s->in[2] * xc, d_step = s->dil[0] * s->in[1] * s->in[2] * xc;
    const float *w_run = j->w + ((kr[0] * s->k[1] + kr[2]) * s->k[2] + kw_lo) * CF_VL;
    const int64_t wh_step = s->k[2] * CF_VL, wd_step = s->k[1] * s->k[2] * CF_VL;
    const int64_t m = p->m; /* hoisted: GCC reloaded it after every store */
    float *const y_run = j->y + (((n * s->out[0] + od) * s->out[1] + oh) * s->out[2] + ow) * m;
    for (int64_t c0 = c_lo; c0 < c_hi; c0 += CF_VL) {
        cf_vf acc[DW_RUN];
#pragma GCC unroll 8
        for (int q = 0; q < np; q++)
            acc[q] = cf_vzero();
        const float *xd = x_run + c0, *wd = w_run + c0 * j->ntaps;
        for (int64_t kd = kr[0]; kd < kr[1]; kd++, xd += d_step, wd += wd_step) {
            const float *xh = xd, *wh = wd;
            for (int64_t kh = kr[2]; kh < kr[3]; kh++, xh += h_step, wh += wh_step) {
#pragma GCC unroll 3
                for (int64_t kw = 0; kw < kw_hi - kw_lo; kw++) {
                    cf_vf wv = cf_vload(wh + kw * CF_VL); /* zeros past M */
                    /* Two bases, 4 pixels apart: offsets 0-3 steps from each fit x86
                     * addressing with few registers (one base measured about 1.1x slower
                     * in NHWC on the Zen 3). */
                    const float *xp = xh + kw * kw_step, *xp4 = xp + 4 * xq_step;
#pragma GCC unroll 8
                    for (int q = 0; q < np; q++) {
                        const float *xq = q < 4 ? xp + q * xq_step : xp4 + (q - 4) * xq_step;
                        acc[q] = cf_vfma(full ? cf_vload(xq) : cf_vload_n(xq, cnt), wv, acc[q]);
                    }
                }
            }
        }
        cf_vf bias = j->b ? (full ? cf_vload(j->b + c0) : cf_vload_n(j->b + c0, cnt))
                          : cf_vzero();
        float *yq = y_run + c0;
        /* The residual here, before Y's store, so that z may be y (dw_nhwc_finish then
         * applies only the activation). */
        const float *zq = j->z ? j->z + (yq - j->y) : NULL;
#pragma GCC unroll 8
        for (int q = 0; q < np; q++, yq += m) {
            cf_vf v = cf_vadd(acc[q], bias);
            if (zq)
                v = cf_vadd(v, full ? cf_vload(zq + q * m) : cf_vload_n(zq + q * m, cnt));
            if (full)
                cf_vstore(yq, v);
            else
                cf_vstore_n(yq, v, cnt);
        }
    }
}

/* The activation on `count` contiguous outputs from `off` (a run of pixels, all their
 * channels), still in L1: one flat loop with the activation's switch outside it, rather
 * than in the FMA kernel's epilogue, where it made GCC spill its accumulators and
 * addresses. */
static void dw_nhwc_finish(const cf_dw_job *j, int64_t off, int64_t count)
{
    const cf_problem *p = j->p;
    float *y = j->y + off;
    const int64_t whole = count / CF_VL * CF_VL;
    const int tail = (int)(count - whole);
#define DW_FINISH(a)                                                                       \
    for (int64_t i = 0; i < whole; i += CF_VL)                                             \
        cf_vstore(y + i, cf_vactivate(cf_vload(y + i), a, p->alpha, p->beta));             \
    if (tail)                                                                              \
        cf_vstore_n(y + whole, cf_vactivate(cf_vload_n(y + whole, tail), a, p->alpha,      \
                                            p->beta), tail);
    switch (p->act) {
        CF_VACT_CASES(DW_FINISH, break)
    default:
        DW_FINISH(p->act)
        break;
    }
#undef DW_FINISH
}

#define DW_NP_CASE(np)                                                                     \
    case np:                                                                               \
        dw_nhwc_pixels(j, n, od, oh, ow, c_lo, c_hi, cnt, kr, np, full, 0);                \
        break;

/* Channels [c_lo, c_hi): whole vectors when `full`, else one vector of cnt channels. */
DW_INLINE void dw_nhwc_run(const cf_dw_job *j, int64_t n, int64_t od, int64_t oh, int64_t ow,
                           int64_t c_lo, int64_t c_hi, int cnt, const int64_t kr[6], int np,
                           bool k3_run, const bool full)
{
    if (k3_run && np == DW_RUN) { /* the bulk of 3x3 layers */
        dw_nhwc_pixels(j, n, od, oh, ow, c_lo, c_hi, cnt, kr, DW_RUN, full, 3);
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
    const int64_t row_px = ((n * s->out[0] + od) * s->out[1] + oh) * s->out[2];
    /* Whole channel vectors, then the partial one. */
    const int64_t m_full = p->m / CF_VL * CF_VL;
    const int tail = (int)(p->m - m_full);
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
        if (m_full > 0)
            dw_nhwc_run(j, n, od, oh, ow, 0, m_full, CF_VL, kr, np, interior && k3, true);
        if (tail > 0)
            dw_nhwc_run(j, n, od, oh, ow, m_full, p->m, tail, kr, np, interior && k3, false);
        if (p->act != CONVFIND_ACT_NONE)
            dw_nhwc_finish(j, (row_px + ow) * p->m, np * p->m);
        ow += np;
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
    /* KW, SW: compile-time W taps and stride (dilation 1) of the common 3- and 5-wide
     * kernels, or 0 for the general case read from the problem. */
    const int64_t sw = SW ? SW : s->stride[2];
    const int64_t kwn = KW ? KW : s->k[2];
    const int64_t dw = KW ? 1 : s->dil[2];
    for (int64_t kd = kr[0]; kd < kr[1]; kd++)
    for (int64_t kh = kr[2]; kh < kr[3]; kh++) {
        int64_t id = od * s->stride[0] - s->pad[0] + kd * s->dil[0];
        int64_t ih = oh * s->stride[1] - s->pad[1] + kh * s->dil[1];
        const float *row = xplane + (id * s->in[1] + ih) * s->in[2];
        const float *wt = w + (kd * s->k[1] + kh) * kwn;
#pragma GCC unroll 5
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
    /* Compile-time forms for 3- and 5-wide rows at strides 1 and 2 (MobileNets' and
     * EfficientNets' kernels), else the problem's taps and stride. */
    const int kw = s->dil[2] == 1 && (s->k[2] == 3 || s->k[2] == 5) ? (int)s->k[2] : 0;
    const int sw = s->stride[2] == 1 || s->stride[2] == 2 ? (int)s->stride[2] : 0;
    for (int64_t od = 0; od < s->out[0]; od++)
    for (int64_t oh = 0; oh < s->out[1]; oh++) {
        int64_t kr[4];
        dw_tap_range(od, s->stride[0], s->pad[0], s->dil[0], s->k[0], s->in[0], &kr[0], &kr[1]);
        dw_tap_range(oh, s->stride[1], s->pad[1], s->dil[1], s->k[1], s->in[1], &kr[2], &kr[3]);
        size_t y_row = y_plane + (size_t)((od * s->out[1] + oh) * s->out[2]);
        if (kw == 3 && sw == 1)
            dw_nchw_row(j, xplane, w, bias, idx, kr, od, oh, y_row, 3, 1);
        else if (kw == 3 && sw == 2)
            dw_nchw_row(j, xplane, w, bias, idx, kr, od, oh, y_row, 3, 2);
        else if (kw == 5 && sw == 1)
            dw_nchw_row(j, xplane, w, bias, idx, kr, od, oh, y_row, 5, 1);
        else if (kw == 5 && sw == 2)
            dw_nchw_row(j, xplane, w, bias, idx, kr, od, oh, y_row, 5, 2);
        else
            dw_nchw_row(j, xplane, w, bias, idx, kr, od, oh, y_row, 0, 0);
    }
}

/* Input positions [p0, p1) of the block's channel planes (lane l reads src[l]),
 * transposed CF_VL at a time in registers into the ring: input row ih goes to slot
 * ih % ring, pixel iw to column pad + iw.  A run may start and end inside rows. */
static void dw_ring_fill(const cf_dw_job *j, const float *const *src, float *ring, int64_t p0,
                         int64_t p1)
{
    const cf_geom3 *s = &j->s;
    int64_t iw_n = s->in[2], slot_floats = j->width * CF_VL;
    int64_t ih = p0 / iw_n, iw = p0 % iw_n, slot = ih % j->ring;
    float *row = ring + slot * slot_floats + s->pad[2] * CF_VL;
    for (int64_t q0 = p0; q0 < p1; q0 += CF_VL) {
        int k = (int)dw_min(CF_VL, p1 - q0);
        cf_vf r[CF_VL];
        if (k == CF_VL)
            for (int l = 0; l < CF_VL; l++)
                r[l] = cf_vload(src[l] + q0);
        else
            for (int l = 0; l < CF_VL; l++)
                r[l] = cf_vload_n(src[l] + q0, k);
        cf_vtranspose(r);
#pragma GCC unroll 16
        for (int q = 0; q < CF_VL; q++) { /* unrolled: r stays in registers */
            if (q >= k)
                break;
            cf_vstore(row + iw * CF_VL, r[q]);
            if (++iw == iw_n) {
                iw = 0;
                slot = slot + 1 == j->ring ? 0 : slot + 1;
                row = ring + slot * slot_floats + s->pad[2] * CF_VL;
            }
        }
    }
}

/* nq pixels of one output row, CF_VL channels each, summed into sums (bias included):
 * one FMA per tap and pixel, each reading one aligned vector of the ring.  rows[kh] is
 * the ring row of kernel row kh (the zero row outside the input), `at` the floats from
 * a row's start to the first pixel's window, w the block's packed weights.  K: 3 or 5
 * for K x K kernels with dilation 1 along W (taps unrolled), 0 for the problem's; SW: a
 * compile-time stride along W (0: the problem's). */
DW_INLINE void dw_blocked_pixels(const cf_dw_job *j, const float *const *rows, int64_t at,
                                 const float *w, cf_vf bias, float *sums, const int nq,
                                 const int K, const int SW)
{
    const cf_geom3 *s = &j->s;
    const int64_t khn = K ? K : s->k[1], kwn = K ? K : s->k[2];
    const int64_t sw = SW ? SW : s->stride[2], dw = K ? 1 : s->dil[2];
    cf_vf acc[DW_PIX];
#pragma GCC unroll 8
    for (int q = 0; q < nq; q++)
        acc[q] = bias;
#pragma GCC unroll 5
    for (int64_t kh = 0; kh < khn; kh++) {
        const float *row = rows[kh] + at;
#pragma GCC unroll 5
        for (int64_t kw = 0; kw < kwn; kw++) {
            cf_vf wv = cf_vload(w + (kh * kwn + kw) * CF_VL);
            const float *xp = row + kw * dw * CF_VL;
#pragma GCC unroll 8
            for (int q = 0; q < nq; q++)
                acc[q] = cf_vfma(cf_vload(xp + q * sw * CF_VL), wv, acc[q]);
        }
    }
#pragma GCC unroll 8
    for (int q = 0; q < nq; q++)
        cf_vstore(sums + q * CF_VL, acc[q]);
}

#define DW_BLK_CASE(nq)                                                                    \
    case nq:                                                                               \
        dw_blocked_pixels(j, rows, ow * sw * CF_VL, w, bias, sums + ow * CF_VL, nq, K, SW); \
        break;

/* nrows output rows into sums (ow_n pixels of CF_VL channels each, row after row),
 * DW_PIX pixels at a time; rows + r * k[1] are the ring rows of output row r's kernel
 * rows. */
DW_INLINE void dw_blocked_row(const cf_dw_job *j, const float *const *rows_all, int nrows,
                              const float *w, const float *b, int cnt, float *sums,
                              const int K, const int SW)
{
    const cf_geom3 *s = &j->s;
    const int64_t sw = SW ? SW : s->stride[2];
    cf_vf bias = b ? cf_vload_n(b, cnt) : cf_vzero();
    for (int r = 0; r < nrows; r++, sums += s->out[2] * CF_VL) {
        const float *const *rows = rows_all + r * s->k[1];
        int64_t ow = 0;
        for (; ow + DW_PIX <= s->out[2]; ow += DW_PIX)
            dw_blocked_pixels(j, rows, ow * sw * CF_VL, w, bias, sums + ow * CF_VL, DW_PIX, K,
                              SW);
        switch (s->out[2] - ow) {
            DW_BLK_CASE(1) DW_BLK_CASE(2) DW_BLK_CASE(3) DW_BLK_CASE(4)
            DW_BLK_CASE(5) DW_BLK_CASE(6) DW_BLK_CASE(7)
        default:
            break;
        }
    }
}

/* The row kernels, compiled apart from the task (not inlined into it) so that each
 * keeps its accumulators in registers. */
typedef void (*dw_row_fn)(const cf_dw_job *j, const float *const *rows, int nrows,
                          const float *w, const float *b, int cnt, float *sums);

#define DW_ROW_FN(name, K, SW)                                                             \
    static void name(const cf_dw_job *j, const float *const *rows, int nrows,              \
                     const float *w, const float *b, int cnt, float *sums)                 \
    {                                                                                      \
        dw_blocked_row(j, rows, nrows, w, b, cnt, sums, K, SW);                            \
    }
DW_ROW_FN(dw_row_k3s1, 3, 1)
DW_ROW_FN(dw_row_k3s2, 3, 2)
DW_ROW_FN(dw_row_k5s1, 5, 1)
DW_ROW_FN(dw_row_k5s2, 5, 2)
DW_ROW_FN(dw_row_any, 0, 0)
#undef DW_ROW_FN

/* rows[kh]: the ring row that kernel row kh of an output row reads, or the zero row
 * (slot `ring`); ih is the input row of kh = 0 and slot its ring slot (ih mod ring, also
 * when ih is a padding row), so that no division is needed per row. */
static void dw_ring_rows(const cf_dw_job *j, const float *ring, int64_t ih, int64_t slot,
                         const float **rows)
{
    const cf_geom3 *s = &j->s;
    int64_t dh = s->dil[1] % j->ring;
    for (int64_t kh = 0; kh < s->k[1]; kh++, ih += s->dil[1]) {
        bool inside = ih >= 0 && ih < s->in[1];
        rows[kh] = ring + (inside ? slot : j->ring) * j->width * CF_VL;
        slot += dh;
        slot -= slot >= j->ring ? j->ring : 0;
    }
}

/* The activation over n vectors, in place (kept out of the summing loops, whose
 * registers it would crowd). */
static void dw_activate(const cf_problem *p, float *v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        cf_vstore(v + i * CF_VL, cf_vactivate(cf_vload(v + i * CF_VL), p->act, p->alpha, p->beta));
}

/* The first k pixels of sums (CF_VL channels each) transposed into the block's cnt
 * output planes from position pos on.  With a residual it is added here and the
 * activation applied after it (only the block's own lanes, in case Z and Y overlap);
 * without one the sums are final already. */
static void dw_sums_out(const cf_dw_job *j, const float *sums, int k, float *const *dst,
                        const float *const *z, int cnt, int64_t pos)
{
    const cf_problem *p = j->p;
    cf_vf r[CF_VL];
#pragma GCC unroll 16
    for (int q = 0; q < CF_VL; q++)
        r[q] = q < k ? cf_vload(sums + q * CF_VL) : cf_vzero();
    cf_vtranspose(r);
    if (z) {
        for (int l = 0; l < cnt; l++) {
            cf_vf v = cf_vadd(r[l], cf_vload_n(z[l] + pos, k));
            cf_vstore_n(dst[l] + pos, cf_vactivate(v, p->act, p->alpha, p->beta), k);
        }
    } else if (k == CF_VL) {
        /* Unrolled (r stays in registers) and in descending lane order: lanes past the
         * last channel point at its plane and store there before its own lane does, so
         * no lane needs a test. */
#pragma GCC unroll 16
        for (int l = CF_VL - 1; l >= 0; l--)
            cf_vstore(dst[l] + pos, r[l]);
    } else {
#pragma GCC unroll 16
        for (int l = CF_VL - 1; l >= 0; l--)
            cf_vstore_n(dst[l] + pos, r[l], k);
    }
}

/* One band of output rows of one block of CF_VL channels of one image, NCHW in and
 * out.  Input rows are transposed into a ring of channels-last rows as the band needs
 * them, `step` output rows are summed with every tap one aligned load, and their sums
 * are transposed back into the output planes CF_VL pixels at a time (pixels of a
 * plane run on across rows, so short rows fill whole vectors).  Everything between X
 * and Y stays in L1. */
static void dw_nchw_blocked(const cf_dw_job *j, size_t unit)
{
    const cf_problem *p = j->p;
    const cf_geom3 *s = &j->s;
    _Alignas(64) float ring[CF_DW_RING_FLOATS];
    _Alignas(64) float sums[CF_DW_SUMS_FLOATS];
    const float *rows[DW_ROWS * CF_DW_KH_MAX];
    int64_t band = (int64_t)unit % j->bands, nb = (int64_t)unit / j->bands;
    int64_t n = nb / j->cblocks, m0 = nb % j->cblocks * CF_VL;
    int cnt = (int)dw_min(CF_VL, p->m - m0);
    int64_t oh0 = band * j->band, oh1 = dw_min(oh0 + j->band, s->out[1]);
    int64_t iw_n = s->in[2], ow_n = s->out[2], slot_floats = j->width * CF_VL;
    /* Lanes past the last channel repeat it: their sums are never stored.  Output
     * channel m reads input channel c = m / mult, counted up without a division per
     * lane. */
    const float *src[CF_VL];
    float *dst[CF_VL];
    const float *zp[CF_VL];
    int64_t c = m0 / j->mult, k = m0 % j->mult;
    for (int l = 0; l < CF_VL; l++) {
        int64_t m = m0 + dw_min(l, cnt - 1);
        src[l] = j->x + (n * p->c + c) * p->in_sp;
        dst[l] = j->y + (n * p->m + m) * p->out_sp;
        zp[l] = j->z ? j->z + (n * p->m + m) * p->out_sp : NULL;
        if (l + 1 < cnt && ++k == j->mult) {
            k = 0;
            c++;
        }
    }
    /* Zero columns of every slot (left padding and past the input row), and slot `ring`
     * all zero: the rows above and below the input. */
    for (int64_t r = 0; r < j->ring; r++) {
        float *row = ring + r * slot_floats;
        for (int64_t c = 0; c < s->pad[2]; c++)
            cf_vstore(row + c * CF_VL, cf_vzero());
        for (int64_t c = s->pad[2] + iw_n; c < j->width; c++)
            cf_vstore(row + c * CF_VL, cf_vzero());
    }
    for (int64_t c = 0; c < j->width; c++)
        cf_vstore(ring + j->ring * slot_floats + c * CF_VL, cf_vzero());
    const float *w = j->w + m0 * j->ntaps, *b = j->b ? j->b + m0 : NULL;
    /* Compile-time forms for 3x3 and 5x5 at strides 1 and 2, else the problem's. */
    const int64_t kk = s->k[1] == s->k[2] && s->dil[2] == 1 ? s->k[2] : 0;
    const dw_row_fn row_fn = kk == 3 && s->stride[2] == 1   ? dw_row_k3s1
                             : kk == 3 && s->stride[2] == 2 ? dw_row_k3s2
                             : kk == 5 && s->stride[2] == 1 ? dw_row_k5s1
                             : kk == 5 && s->stride[2] == 2 ? dw_row_k5s2
                                                            : dw_row_any;
    int64_t done = 0, pend = 0, pos = oh0 * ow_n;
    /* The first kernel row's input row, and its ring slot, for each output row. */
    int64_t ih0 = oh0 * s->stride[1] - s->pad[1], sh = s->stride[1] % j->ring;
    int64_t slot0 = (ih0 % j->ring + j->ring) % j->ring;
    for (int64_t oh = oh0; oh < oh1; oh += j->step) {
        int64_t g = dw_min(j->step, oh1 - oh);
        int64_t lo = dw_max(0, oh * s->stride[1] - s->pad[1]);
        int64_t hi = dw_min(s->in[1], (oh + g - 1) * s->stride[1] - s->pad[1] +
                                          (s->k[1] - 1) * s->dil[1] + 1);
        done = dw_max(done, lo);
        if (hi > done) {
            dw_ring_fill(j, src, ring, done * iw_n, hi * iw_n);
            done = hi;
        }
        for (int64_t r0 = 0; r0 < g; r0 += DW_ROWS) { /* DW_ROWS rows per call */
            int nr = (int)dw_min(DW_ROWS, g - r0);
            for (int r = 0; r < nr; r++) {
                dw_ring_rows(j, ring, ih0, slot0, rows + r * s->k[1]);
                ih0 += s->stride[1];
                slot0 += sh;
                slot0 -= slot0 >= j->ring ? j->ring : 0;
            }
            row_fn(j, rows, nr, w, b, cnt, sums + pend * CF_VL);
            pend += nr * ow_n;
        }
        if (!j->z && p->act != CONVFIND_ACT_NONE) /* else after the residual, in dw_sums_out */
            dw_activate(p, sums + (pend - g * ow_n) * CF_VL, g * ow_n);
        int64_t q = 0;
        for (; q + CF_VL <= pend; q += CF_VL)
            dw_sums_out(j, sums + q * CF_VL, CF_VL, dst, j->z ? zp : NULL, cnt, pos + q);
        for (int64_t i = q; i < pend; i++) /* fewer than CF_VL pixels wait for the next step */
            cf_vstore(sums + (i - q) * CF_VL, cf_vload(sums + i * CF_VL));
        pend -= q;
        pos += q;
    }
    if (pend)
        dw_sums_out(j, sums, (int)pend, dst, j->z ? zp : NULL, cnt, pos);
}

const cf_dw_kernels CF_SIMD_SYM(cf_dw) = {
    .nhwc_row = dw_nhwc_row,
    .nchw_plane = dw_nchw_plane,
    .nchw_blocked = dw_nchw_blocked,
    .vl = CF_VL,
};
