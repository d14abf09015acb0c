/*
 * depthwise_kernels.h - cpu.depthwise's row (NHWC), channel-block (NCHW 1-D and 2-D)
 * and plane (other NCHW) kernels, and cpu.depthwise_3x3's plane kernel (NCHW 3x3,
 * strides 1 and 2), written once over cpu/simd.h and included by one depthwise_<isa>.c per ISA.
 *
 * Depthwise convolution does a handful of FMAs per loaded value, so these kernels aim
 * at memory traffic and shuffles, not FMA throughput: weights are loaded once per run
 * of pixels, several independent accumulators hide the FMA latency, and the NCHW
 * channel-block kernel keeps its transposed rows and sums in L1 between reading X and
 * writing Y.  Bias is the accumulators' start; residual and activation follow the sums.
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
#define DW_PIX 8  /* NCHW channel blocks: pixels per step along a row */
#define DW_ROWS 8 /* NCHW channel blocks: output rows per call of the row kernel */

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
            const float *wt = j->w + c0 * j->ntaps + (kd * s->k[1] + kh) * s->k[2] * CF_VL;
#pragma GCC unroll 3
            for (int64_t kw = kw_lo; kw < kw_hi; kw++) {
                cf_vf wv = cf_vload(wt + kw * CF_VL); /* zeros past M */
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
 * a row's start to the first pixel's window, w the block's packed weights.  K3: 3x3
 * kernels with dilation 1 along W (taps unrolled); SW: a compile-time stride along W
 * (0: the problem's). */
DW_INLINE void dw_blocked_pixels(const cf_dw_job *j, const float *const *rows, int64_t at,
                                 const float *w, cf_vf bias, float *sums, const int nq,
                                 const bool K3, const int SW)
{
    const cf_geom3 *s = &j->s;
    const int64_t khn = K3 ? 3 : s->k[1], kwn = K3 ? 3 : s->k[2];
    const int64_t sw = SW ? SW : s->stride[2], dw = K3 ? 1 : s->dil[2];
    cf_vf acc[DW_PIX];
#pragma GCC unroll 8
    for (int q = 0; q < nq; q++)
        acc[q] = bias;
#pragma GCC unroll 3
    for (int64_t kh = 0; kh < khn; kh++) {
        const float *row = rows[kh] + at;
#pragma GCC unroll 3
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
        dw_blocked_pixels(j, rows, ow * sw * CF_VL, w, bias, sums + ow * CF_VL, nq, K3, SW); \
        break;

/* nrows output rows into sums (ow_n pixels of CF_VL channels each, row after row),
 * DW_PIX pixels at a time; rows + r * k[1] are the ring rows of output row r's kernel
 * rows. */
DW_INLINE void dw_blocked_row(const cf_dw_job *j, const float *const *rows_all, int nrows,
                              const float *w, const float *b, int cnt, float *sums,
                              const bool K3, const int SW)
{
    const cf_geom3 *s = &j->s;
    const int64_t sw = SW ? SW : s->stride[2];
    cf_vf bias = b ? cf_vload_n(b, cnt) : cf_vzero();
    for (int r = 0; r < nrows; r++, sums += s->out[2] * CF_VL) {
        const float *const *rows = rows_all + r * s->k[1];
        int64_t ow = 0;
        for (; ow + DW_PIX <= s->out[2]; ow += DW_PIX)
            dw_blocked_pixels(j, rows, ow * sw * CF_VL, w, bias, sums + ow * CF_VL, DW_PIX, K3,
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

static void dw_row_k3s1(const cf_dw_job *j, const float *const *rows, int nrows,
                        const float *w, const float *b, int cnt, float *sums)
{
    dw_blocked_row(j, rows, nrows, w, b, cnt, sums, true, 1);
}

static void dw_row_k3s2(const cf_dw_job *j, const float *const *rows, int nrows,
                        const float *w, const float *b, int cnt, float *sums)
{
    dw_blocked_row(j, rows, nrows, w, b, cnt, sums, true, 2);
}

static void dw_row_any(const cf_dw_job *j, const float *const *rows, int nrows,
                       const float *w, const float *b, int cnt, float *sums)
{
    dw_blocked_row(j, rows, nrows, w, b, cnt, sums, false, 0);
}

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
    bool k3 = s->k[1] == 3 && s->k[2] == 3 && s->dil[2] == 1;
    dw_row_fn row_fn = k3 && s->stride[2] == 1 ? dw_row_k3s1
                       : k3 && s->stride[2] == 2 ? dw_row_k3s2
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

/* ---- cpu.depthwise_3x3: 3x3 planes read in place, stride 1 or 2, NCHW ---- */

/* Lanes l < n of a vector, as bits. */
static inline unsigned dw_lanes_below(int64_t n)
{
    return n <= 0 ? 0u : n >= CF_VL ? (unsigned)((1ull << CF_VL) - 1u) : (1u << n) - 1u;
}

/* The weights and bias of output channel m, one vector each. */
static inline void dw_3x3_weights(const cf_dw_job *j, int64_t m, cf_vf *w, cf_vf *bias)
{
    for (int t = 0; t < 9; t++)
        w[t] = cf_vbcast(j->w[m * 9 + t]);
    *bias = cf_vbcast(j->b ? j->b[m] : 0.0f);
}

/* The weights and biases (w[9]) of a group of np planes of consecutive channels from m
 * on, sharing a vector: plane i's in lanes[i] (lanes[0] is not read: plane 0's fill the
 * rest).  Returns the channel after the group's. */
DW_INLINE int64_t dw_3x3_group_weights(const cf_dw_job *j, int64_t m, int np,
                                       const unsigned *lanes, cf_vf *w)
{
    dw_3x3_weights(j, m, w, &w[9]);
    for (int i = 1; i < np; i++) {
        m = m + 1 == j->p->m ? 0 : m + 1;
        cf_vf wi[10];
        dw_3x3_weights(j, m, wi, &wi[9]);
        for (int t = 0; t < 10; t++)
            w[t] = cf_vblend(lanes[i], w[t], wi[t]);
    }
    return m + 1 == j->p->m ? 0 : m + 1;
}

/* The kernels compute output row oy from its three input rows held in registers as a
 * window that moves down the plane, so each input row is loaded once, one load per
 * vector, and the side taps are lane shifts of the rows' vectors (stride 1) or of their
 * even and odd columns (stride 2).  Loads are masked to the row, so a row's vectors are
 * zero past its end, and the shifts bring in zeros at both ends: the padding, with no
 * mask on any tap.  Rows wider than DW_WIN_VECS output vectors run in strips of
 * columns, each from the top of the plane to the bottom, the columns just outside the
 * strip broadcast into the shifts.  The flat kernels these replaced computed every lane
 * of their vectors but paid for it in lane masks per tap and in loads of neighbours
 * that cross cache lines (docs/performance.md). */

/* The widest strip, in output vectors: the window's rows and the ten weights must stay
 * in registers.  AVX-512's 32 hold strips of 4 vectors (56x56 planes at stride 1: 1300
 * cycles a plane against 1780 for the flat kernel; 7 vectors, 112x112, took 7850
 * against 6550), 16 registers strips of 2 (AVX2: 14x14 planes 243 against 479; 28x28
 * as 4 vectors 1084 against 1037).  Zen 5, one thread. */
#if CF_VL == 16
#define DW_WIN_VECS 4
#else
#define DW_WIN_VECS 2
#endif

/* Strip s of a row of `vecs` output vectors cut into `strips` strips of balanced widths
 * (at most DW_WIN_VECS each) starts at vector dw_strip_start(vecs, strips, s). */
static inline int dw_strips(int64_t vecs)
{
    return (int)((vecs + DW_WIN_VECS - 1) / DW_WIN_VECS);
}

static inline int64_t dw_strip_start(int64_t vecs, int strips, int s)
{
    return vecs * s / strips;
}

/* Runs CALL(k0, v, begin, end) for each strip of a row of `vecs_row` output vectors:
 * from vector k0, v vectors wide (a constant, for the kernels' instances), `begin` and
 * `end` whether the strip starts or ends the row.  A row of one strip (the common case)
 * gets its own instances with `begin` and `end` constant too: with them at run time,
 * 14x14 to 56x56 planes took 15-30% longer. */
#define DW_STRIP_CALL(CALL, v)                                                             \
    (dw_n == 1 ? CALL(0, v, true, true) : CALL(dw_k0, v, dw_s == 0, dw_s + 1 == dw_n))
#if DW_WIN_VECS >= 4
#define DW_STRIP_WIDTHS(CALL)                                                              \
    case 4: DW_STRIP_CALL(CALL, 4); break;                                                 \
    case 3: DW_STRIP_CALL(CALL, 3); break;
#else
#define DW_STRIP_WIDTHS(CALL)
#endif
#define DW_FOR_STRIPS(vecs_row, CALL)                                                      \
    for (int dw_s = 0, dw_n = dw_strips(vecs_row); dw_s < dw_n; dw_s++) {                 \
        const int64_t dw_k0 = dw_strip_start(vecs_row, dw_n, dw_s);                       \
        switch ((int)(dw_strip_start(vecs_row, dw_n, dw_s + 1) - dw_k0)) {                 \
            DW_STRIP_WIDTHS(CALL)                                                          \
        case 2: DW_STRIP_CALL(CALL, 2); break;                                             \
        default: DW_STRIP_CALL(CALL, 1);                                                   \
        }                                                                                  \
    }

/* ---- stride 1 ---- */

/* Stride 1 (pads 1, so Y's planes are X's).  Rows of at most a vector (7x7 and 14x14
 * planes at 16 lanes) hold `planes` planes side by side, plane i's row in lanes
 * [i (W + 1), i (W + 1) + W) and a zero lane after each row, so that the shifts never
 * reach into another plane. */
typedef struct dw_s1_window {
    int64_t vecs;             /* vectors per row: ceil(W / CF_VL) */
    int planes;               /* planes per vector: (CF_VL + 1) / (W + 1), or 1 */
    unsigned lanes[CF_VL];    /* the lanes of plane i's row in the row's last vector */
    ptrdiff_t shift[CF_VL];   /* plane i's offset, in floats, from plane 0's position
                               * of the same lane: i HW - i (W + 1) */
} dw_s1_window;

static inline void dw_3x3s1_window_of(const cf_dw_job *j, dw_s1_window *pw)
{
    const int64_t wd = j->s.in[2], hw = j->p->in_sp;
    pw->vecs = (wd + CF_VL - 1) / CF_VL;
    pw->planes = pw->vecs == 1 ? (int)((CF_VL + 1) / (wd + 1)) : 1;
    const int64_t last = wd - (pw->vecs - 1) * CF_VL; /* lanes of the last vector */
    for (int i = 0; i < pw->planes; i++) {
        pw->lanes[i] = dw_lanes_below(last) << (i * (wd + 1));
        pw->shift[i] = (ptrdiff_t)(i * hw - i * (wd + 1));
    }
}

/* One input row of a strip of `vecs` vectors (a constant): v[1 .. vecs], with the
 * columns just before and after the strip broadcast into v[0] and v[vecs + 1] (zero at
 * the row's ends). */
typedef struct dw_s1_row {
    cf_vf v[DW_WIN_VECS + 2];
} dw_s1_row;

/* Vector k of a strip's row at q (the strip's first column, in the group's first plane);
 * in the row's last strip (`end`), the last vector masked to each plane's lanes
 * (`lanes` as dw_s1_window's, zero for planes the group lacks). */
DW_INLINE cf_vf dw_s1_load(const float *q, int k, int vecs, bool end, int np,
                           const dw_s1_window *pw, const unsigned *lanes)
{
    if (!end || k + 1 < vecs)
        return cf_vload(q + k * CF_VL);
    cf_vf v = cf_vload_mask(q + k * CF_VL, lanes[0]);
    for (int i = 1; i < np; i++)
        v = cf_vblend(lanes[i], v, cf_vload_mask(q + pw->shift[i], lanes[i]));
    return v;
}

DW_INLINE void dw_s1_store(float *q, int k, int vecs, bool end, int np, const dw_s1_window *pw,
                           const unsigned *lanes, cf_vf v)
{
    if (!end || k + 1 < vecs) {
        cf_vstore(q + k * CF_VL, v);
        return;
    }
    cf_vstore_mask(q + k * CF_VL, v, lanes[0]);
    for (int i = 1; i < np; i++)
        cf_vstore_mask(q + pw->shift[i], v, lanes[i]);
}

/* Row q of the strip (NULL: a row of padding) into r. */
DW_INLINE void dw_s1_row_load(dw_s1_row *r, const float *q, int vecs, bool begin, bool end,
                              int np, const dw_s1_window *pw, const unsigned *lanes)
{
    for (int k = 0; k < vecs; k++)
        r->v[k + 1] = q ? dw_s1_load(q, k, vecs, end, np, pw, lanes) : cf_vzero();
    r->v[0] = q && !begin ? cf_vbcast(q[-1]) : cf_vzero();
    r->v[vecs + 1] = q && !end ? cf_vbcast(q[vecs * CF_VL]) : cf_vzero();
}

/* *dst = *src for a strip of `vecs` vectors: a copy of the whole struct moved the unused
 * vectors too (14x14 planes took 10% longer). */
DW_INLINE void dw_s1_row_move(dw_s1_row *dst, const dw_s1_row *src, int vecs)
{
    for (int k = 0; k < vecs + 2; k++)
        dst->v[k] = src->v[k];
}

/* Kernel row t's three taps on vector k of row r, added to acc. */
DW_INLINE cf_vf dw_s1_taps(const dw_s1_row *r, int k, const cf_vf *w, int t, cf_vf acc)
{
    const cf_vf *v = r->v + k + 1;
    acc = cf_vfma(w[t + 1], v[0], acc);
    acc = cf_vfma(w[t], cf_vshift(v[-1], v[0], CF_VL - 1), acc);
    return cf_vfma(w[t + 2], cf_vshift(v[0], v[1], 1), acc);
}

/* The strip of `vecs` vectors (a constant) from vector k0 of the rows of a group of
 * planes at x, y, z; `begin`, `end`: the strip starts (ends) the row. */
DW_INLINE void dw_s1_strip(const cf_dw_job *j, const float *x, float *y, const float *z,
                           int64_t k0, int vecs, bool begin, bool end, int np,
                           const dw_s1_window *pw, const unsigned *lanes, const cf_vf *w,
                           convfind_activation act)
{
    const int64_t wd = j->s.in[2], h = j->s.in[1];
    x += k0 * CF_VL;
    y += k0 * CF_VL;
    z = z ? z + k0 * CF_VL : NULL;
    dw_s1_row up, at, down;
    dw_s1_row_load(&up, NULL, vecs, begin, end, np, pw, lanes);
    dw_s1_row_load(&at, x, vecs, begin, end, np, pw, lanes);
    for (int64_t r = 0; r < h; r++) {
        dw_s1_row_load(&down, r + 1 < h ? x + (r + 1) * wd : NULL, vecs, begin, end, np, pw,
                       lanes);
        for (int k = 0; k < vecs; k++) {
            cf_vf acc = cf_vadd(dw_s1_taps(&at, k, w, 3, w[9]),
                                cf_vadd(dw_s1_taps(&up, k, w, 0, cf_vzero()),
                                        dw_s1_taps(&down, k, w, 6, cf_vzero())));
            if (z)
                acc = cf_vadd(acc, dw_s1_load(z + r * wd, k, vecs, end, np, pw, lanes));
            acc = cf_vactivate(acc, act, j->p->alpha, j->p->beta);
            dw_s1_store(y + r * wd, k, vecs, end, np, pw, lanes, acc);
        }
        dw_s1_row_move(&up, &at, vecs);
        dw_s1_row_move(&at, &down, vecs);
    }
}

/* `count` planes from `first`, `np` planes a vector (the last group may have fewer; more
 * than one only where a row is one vector). */
DW_INLINE void dw_3x3s1_window(const cf_dw_job *j, size_t first, size_t count, int np,
                               const dw_s1_window *pw, convfind_activation act)
{
    const cf_problem *p = j->p;
    const int64_t hw = p->in_sp;
    int64_t m = (int64_t)(first % (size_t)p->m);
    for (size_t g = 0; g < count; g += (size_t)np) {
        const size_t plane = first + g;
        const float *x = j->x + plane * (size_t)hw;
        float *y = j->y + plane * (size_t)hw;
        const float *z = j->z ? j->z + plane * (size_t)hw : NULL;
        /* The group's lanes and weights (w[9] the bias), each plane's in its lanes. */
        unsigned lanes[CF_VL] = {pw->lanes[0]};
        for (int i = 1; i < np; i++)
            lanes[i] = g + (size_t)i < count ? pw->lanes[i] : 0u;
        cf_vf w[10];
        m = dw_3x3_group_weights(j, m, np, lanes, w);
        if (np != 1) {
            dw_s1_strip(j, x, y, z, 0, 1, true, true, np, pw, lanes, w, act);
            continue;
        }
#define DW_S1_STRIP(k0, v, begin, end)                                                     \
    dw_s1_strip(j, x, y, z, k0, v, begin, end, 1, pw, lanes, w, act)
        DW_FOR_STRIPS(pw->vecs, DW_S1_STRIP)
#undef DW_S1_STRIP
    }
}

/* dw_3x3s1_window with the activation and (for one and two) the planes per vector
 * constants in each instance, in a function of its own: inlined into the task beside
 * the other kernels, a stride-1 kernel changed how those were compiled (the stride-2
 * layers took 12% longer, s2 c96 112², 2 threads: 0.039 -> 0.043 ms). */
static __attribute__((noinline)) void dw_3x3s1_window_any(const cf_dw_job *j, size_t first,
                                                          size_t count,
                                                          convfind_activation act)
{
    dw_s1_window pw;
    dw_3x3s1_window_of(j, &pw);
#define DW_S1_WIN(a)                                                                       \
    (pw.planes == 1   ? dw_3x3s1_window(j, first, count, 1, &pw, a)                        \
     : pw.planes == 2 ? dw_3x3s1_window(j, first, count, 2, &pw, a)                        \
                      : dw_3x3s1_window(j, first, count, pw.planes, &pw, a))
    switch (act) {
        CF_VACT_CASES(DW_S1_WIN, return)
    default:
        DW_S1_WIN(CONVFIND_ACT_NONE);
    }
#undef DW_S1_WIN
}

/* ---- stride 2 ---- */

/* Stride 2 (pads 1 at the start of each axis, at most 1 at the end): each input row is
 * split into its even and odd columns once, and the split of row 2 oy + 1, the last of
 * output row oy's three, is kept as the first of row oy + 1's.  Output column ox reads
 * input columns 2 ox - 1 (the odd columns shifted by a lane, the previous vector's last
 * or the column before the strip shifted in), 2 ox and 2 ox + 1.  The two other rows
 * are split a vector at a time as the output vectors need them: held whole, the three
 * rows did not fit AVX2's registers (s2 28x28 planes 297 -> 375 cycles). */

/* Input columns 2 k CF_VL .. + 2 CF_VL - 1 of `q` (the strip's first input column of a
 * row; NULL: a row of padding) as even and odd columns, loads masked by ma, mb. */
DW_INLINE void dw_s2_split(const float *q, int k, unsigned ma, unsigned mb, cf_vf *even,
                           cf_vf *odd)
{
    const cf_vf a = q ? cf_vload_mask(q + 2 * k * CF_VL, ma) : cf_vzero();
    const cf_vf b = q ? cf_vload_mask(q + (2 * k + 1) * CF_VL, mb) : cf_vzero();
    *even = cf_veven(a, b);
    *odd = cf_vodd(a, b);
}

/* Kernel row t's taps on an output vector from its row's even and odd columns and the
 * odd columns before them, added to acc. */
DW_INLINE cf_vf dw_s2_taps(cf_vf even, cf_vf odd, cf_vf odd_prev, const cf_vf *w, int t,
                           cf_vf acc)
{
    acc = cf_vfma(w[t + 1], even, acc);
    acc = cf_vfma(w[t + 2], odd, acc);
    return cf_vfma(w[t], cf_vshift(odd_prev, odd, CF_VL - 1), acc);
}

/* The strip of `vecs` output vectors (a constant) from vector k0 of one plane's rows;
 * `begin`, `end`: the strip starts (ends) the row. */
DW_INLINE void dw_s2_strip(const cf_dw_job *j, const float *x, float *y, const float *z,
                           int64_t k0, int vecs, bool begin, bool end, const cf_vf *w,
                           convfind_activation act)
{
    const int64_t hi = j->s.in[1], wi = j->s.in[2], ho = j->s.out[1], wo = j->s.out[2];
    unsigned ma[DW_WIN_VECS], mb[DW_WIN_VECS];
    for (int k = 0; k < vecs; k++) {
        ma[k] = dw_lanes_below(wi - 2 * (k0 + k) * CF_VL);
        mb[k] = dw_lanes_below(wi - (2 * (k0 + k) + 1) * CF_VL);
    }
    const unsigned last = end ? dw_lanes_below(wo - (k0 + vecs - 1) * CF_VL) : ~0u;
    x += 2 * k0 * CF_VL;
    y += k0 * CF_VL;
    z = z ? z + k0 * CF_VL : NULL;
    /* Row 2 oy - 1, split, and the column before the strip: zeros (padding) for oy = 0. */
    cf_vf e0[DW_WIN_VECS], o0[DW_WIN_VECS], left0 = cf_vzero();
    for (int k = 0; k < vecs; k++)
        e0[k] = o0[k] = cf_vzero();
    for (int64_t oy = 0; oy < ho; oy++) {
        const float *q1 = x + 2 * oy * wi; /* 2 oy <= hi - 1 for every output row */
        const float *q2 = 2 * oy + 1 < hi ? q1 + wi : NULL;
        cf_vf p0 = left0;
        cf_vf p1 = begin ? cf_vzero() : cf_vbcast(q1[-1]);
        cf_vf p2 = begin || !q2 ? cf_vzero() : cf_vbcast(q2[-1]);
        left0 = p2;
        for (int k = 0; k < vecs; k++) {
            cf_vf e1, o1, e2, o2;
            dw_s2_split(q1, k, ma[k], mb[k], &e1, &o1);
            dw_s2_split(q2, k, ma[k], mb[k], &e2, &o2);
            cf_vf acc = cf_vadd(dw_s2_taps(e1, o1, p1, w, 3, w[9]),
                                cf_vadd(dw_s2_taps(e0[k], o0[k], p0, w, 0, cf_vzero()),
                                        dw_s2_taps(e2, o2, p2, w, 6, cf_vzero())));
            p0 = o0[k];
            p1 = o1;
            p2 = o2;
            e0[k] = e2;
            o0[k] = o2;
            float *q = y + oy * wo + k * CF_VL;
            const bool whole = !end || k + 1 < vecs;
            if (z)
                acc = cf_vadd(acc, whole ? cf_vload(z + oy * wo + k * CF_VL)
                                         : cf_vload_mask(z + oy * wo + k * CF_VL, last));
            acc = cf_vactivate(acc, act, j->p->alpha, j->p->beta);
            if (whole)
                cf_vstore(q, acc);
            else
                cf_vstore_mask(q, acc, last);
        }
    }
}

/* `count` planes from `first`, each in strips of output vectors. */
DW_INLINE void dw_3x3s2_window(const cf_dw_job *j, size_t first, size_t count,
                               convfind_activation act)
{
    const cf_problem *p = j->p;
    const int64_t vecs_row = (j->s.out[2] + CF_VL - 1) / CF_VL;
    int64_t m = (int64_t)(first % (size_t)p->m);
    for (size_t plane = first; plane < first + count; plane++) {
        const float *x = j->x + plane * (size_t)p->in_sp;
        float *y = j->y + plane * (size_t)p->out_sp;
        const float *z = j->z ? j->z + plane * (size_t)p->out_sp : NULL;
        cf_vf w[10];
        m = dw_3x3_group_weights(j, m, 1, NULL, w);
#define DW_S2_STRIP(k0, v, begin, end) dw_s2_strip(j, x, y, z, k0, v, begin, end, w, act)
        DW_FOR_STRIPS(vecs_row, DW_S2_STRIP)
#undef DW_S2_STRIP
    }
}

/* dw_3x3s2_window with the activation a constant in each instance, in a function of
 * its own as dw_3x3s1_window_any. */
static __attribute__((noinline)) void dw_3x3s2_window_any(const cf_dw_job *j, size_t first,
                                                          size_t count,
                                                          convfind_activation act)
{
#define DW_S2_WIN(a) dw_3x3s2_window(j, first, count, a)
    switch (act) {
        CF_VACT_CASES(DW_S2_WIN, return)
    default:
        DW_S2_WIN(CONVFIND_ACT_NONE);
    }
#undef DW_S2_WIN
}

/* Stride 2 where two output rows fit one vector (2 wo + 1 <= CF_VL: 7x7 outputs at 16
 * lanes, where a vector per row leaves 9 of 16 lanes idle): two planes at a time, lanes
 * [0, wo) holding row oy of the first and [wo, 2 wo) row oy of the second, each lane
 * with its plane's weights.  For kernel row r, input row 2 oy - 1 + r of each plane is
 * loaded once from its column -1 on, and tap dx of every lane is one two-source permute
 * of the two: lane 2 (l mod wo) + dx of the first plane's row for the first wo lanes, of
 * the second's for the next wo.  (Two rows of one plane per vector left the last of 7
 * rows alone in its vector.)  The permutes zero the lanes whose tap is column -1 or a
 * column past the row (the padding), so the rows whose loads stay inside the plane load
 * without masks: masked, the loads took a fifth of a plane's time; the first and last
 * rows mask their loads to the input. */
typedef struct dw_s2_pairs {
    cf_vidx idx[3];   /* per dx */
    unsigned keep[3]; /* per dx: the lanes whose tap is inside the row */
    unsigned lo, hi;  /* the first plane's lanes, the second's */
    int64_t mid;      /* rows [1, mid) load without masks */
} dw_s2_pairs;

static inline void dw_3x3s2_pairs_of(const cf_dw_job *j, dw_s2_pairs *pp)
{
    const int64_t hi = j->s.in[1], wi = j->s.in[2], ho = j->s.out[1], wo = j->s.out[2];
    for (int dx = 0; dx < 3; dx++) {
        int32_t lanes[CF_VL];
        for (int64_t l = 0; l < CF_VL; l++)
            lanes[l] = (int32_t)(l < wo ? 2 * l + dx : l < 2 * wo ? CF_VL + 2 * (l - wo) + dx : 0);
        pp->idx[dx] = cf_vidx_load(lanes);
    }
    const unsigned all = dw_lanes_below(CF_VL);
    pp->keep[0] = all & ~(1u | 1u << wo);
    pp->keep[1] = all;
    pp->keep[2] = 2 * wo - 1 >= wi ? all & ~(1u << (wo - 1) | 1u << (2 * wo - 1)) : all;
    pp->lo = dw_lanes_below(wo);
    pp->hi = dw_lanes_below(2 * wo) & ~pp->lo;
    /* Row oy >= 1 reads input rows 2 oy - 1 .. 2 oy + 1, each from one column before it
     * to CF_VL - 2 after (past the row's end where CF_VL > wi + 1): inside the plane
     * while (2 oy + 1) wi + CF_VL - 1 <= hi wi. */
    const int64_t room = hi * wi - CF_VL + 1;
    const int64_t last_iy = room >= 0 ? room / wi : -1; /* the last row so read */
    pp->mid = dw_max(1, dw_min(ho, last_iy >= 1 ? (last_iy - 1) / 2 + 1 : 1));
}

/* Input row iy of planes xa and, where `pair`, xb as the three taps (dx = 0, 1, 2) of an
 * output vector, t[dx]: for the first wo lanes columns 2 l + dx - 1 of xa's row, for the
 * next wo lanes the same of xb's.  `inside` (a constant in each instance): the loads
 * need no masks. */
DW_INLINE void dw_s2_pair_taps(const cf_dw_job *j, const float *xa, const float *xb,
                               bool pair, int64_t iy, bool inside, const dw_s2_pairs *pp,
                               cf_vf *t)
{
    const int64_t hi = j->s.in[1], wi = j->s.in[2];
    const unsigned cols = dw_lanes_below(dw_min(wi + 1, CF_VL)) & ~1u;
    const unsigned m = iy >= 0 && iy < hi ? cols : 0u;
    const float *qa = xa + iy * wi - 1, *qb = xb + iy * wi - 1;
    const cf_vf a = inside ? cf_vload(qa) : cf_vload_mask(qa, m);
    const cf_vf b = inside ? cf_vload(qb) : cf_vload_mask(qb, pair ? m : 0u);
    for (int dx = 0; dx < 3; dx++)
        t[dx] = cf_vperm2_mask(a, pp->idx[dx], b, pp->keep[dx]);
}

/* Output row oy of planes (ya, za) and, where `pair`, (yb, zb) from the taps of its
 * input rows 2 oy - 1 + r, t[r]. */
DW_INLINE void dw_3x3s2_pair_out(const cf_dw_job *j, float *ya, float *yb, const float *za,
                                 const float *zb, bool pair, const cf_vf *w,
                                 const dw_s2_pairs *pp, int64_t oy, const cf_vf (*t)[3],
                                 convfind_activation act)
{
    const int64_t wo = j->s.out[2];
    cf_vf acc[3];
    for (int r = 0; r < 3; r++) {
        acc[r] = r ? cf_vzero() : w[9];
        for (int dx = 0; dx < 3; dx++)
            acc[r] = cf_vfma(w[3 * r + dx], t[r][dx], acc[r]);
    }
    cf_vf v = cf_vadd(acc[0], cf_vadd(acc[1], acc[2]));
    const int64_t at = oy * wo;
    const unsigned hi_lanes = pair ? pp->hi : 0u;
    if (za)
        v = cf_vadd(v, cf_vadd(cf_vload_mask(za + at, pp->lo),
                               cf_vload_mask(zb + at - wo, hi_lanes)));
    v = cf_vactivate(v, act, j->p->alpha, j->p->beta);
    cf_vstore_mask(ya + at, v, pp->lo);
    cf_vstore_mask(yb + at - wo, v, hi_lanes);
}

/* Planes `plane` and, where `pair`, plane + 1 (their weights and biases blended into w,
 * the second plane's in the upper lanes), as a window of rows: the taps of input row
 * 2 oy + 1, the last of output row oy's three, are the first of row oy + 1's. */
DW_INLINE void dw_3x3s2_pair_planes(const cf_dw_job *j, size_t plane, bool pair,
                                    const cf_vf *w, const dw_s2_pairs *pp,
                                    convfind_activation act)
{
    const cf_problem *p = j->p;
    const size_t in_sp = (size_t)p->in_sp, out_sp = (size_t)p->out_sp;
    const float *xa = j->x + plane * in_sp, *xb = xa + in_sp;
    float *ya = j->y + plane * out_sp, *yb = ya + out_sp;
    const float *za = j->z ? j->z + plane * out_sp : NULL, *zb = za ? za + out_sp : NULL;
    cf_vf t[3][3] = {{cf_vzero(), cf_vzero(), cf_vzero()}}; /* row -1: the padding */
    for (int64_t oy = 0; oy < j->s.out[1]; oy++) {
        if (pair && oy >= 1 && oy < pp->mid) {
            dw_s2_pair_taps(j, xa, xb, true, 2 * oy, true, pp, t[1]);
            dw_s2_pair_taps(j, xa, xb, true, 2 * oy + 1, true, pp, t[2]);
        } else {
            dw_s2_pair_taps(j, xa, xb, pair, 2 * oy, false, pp, t[1]);
            dw_s2_pair_taps(j, xa, xb, pair, 2 * oy + 1, false, pp, t[2]);
        }
        dw_3x3s2_pair_out(j, ya, yb, za, zb, pair, w, pp, oy, (const cf_vf(*)[3])t, act);
        for (int dx = 0; dx < 3; dx++)
            t[0][dx] = t[2][dx];
    }
}

/* `count` (image, channel) planes from `first` (n * M + m), X and Y in place; W as ONNX
 * stores it.  One call per run of planes: the activation is switched on once, and
 * consecutive planes overlap in the core (2 threads, s2 c96 112²: 0.042-0.045 -> 0.038-0.040
 * ms against a call per plane). */
DW_INLINE void dw_3x3_planes_act(const cf_dw_job *j, size_t first, size_t count,
                                 convfind_activation act)
{
    const cf_problem *p = j->p;
    /* The problem's stride, not geom3's, which is 1 on an axis of one output (a stride-2
     * row of 3 pixels), where the stride-1 kernel would take Y's planes for X's. */
    if (p->stride[1] == 1) {
        dw_3x3s1_window_any(j, first, count, act);
        return;
    }
    if (2 * j->s.out[2] + 1 > CF_VL) {
        dw_3x3s2_window_any(j, first, count, act);
        return;
    }
    dw_s2_pairs pp;
    dw_3x3s2_pairs_of(j, &pp);
    int64_t m = (int64_t)(first % (size_t)p->m);
    const unsigned lanes[2] = {pp.lo, pp.hi};
    for (size_t plane = first; plane < first + count; plane += 2) {
        const bool pair = plane + 1 < first + count;
        cf_vf w[10];
        m = dw_3x3_group_weights(j, m, 2, lanes, w);
        dw_3x3s2_pair_planes(j, plane, pair, w, &pp, act);
    }
}

/* The activation as a compile-time constant in each instance; sigmoid and tanh (libm)
 * go over the planes afterwards, residual already added. */
static void dw_3x3_planes(const cf_dw_job *j, size_t first, size_t count)
{
    const cf_problem *p = j->p;
#define DW_3X3_CALL(a) dw_3x3_planes_act(j, first, count, a)
    switch (p->act) {
        CF_VACT_CASES(DW_3X3_CALL, return)
    default: {
        dw_3x3_planes_act(j, first, count, CONVFIND_ACT_NONE);
        float *y = j->y + first * (size_t)p->out_sp;
        for (size_t i = 0; i < count * (size_t)p->out_sp; i++)
            y[i] = cf_activate(y[i], p->act, p->alpha, p->beta);
    }
    }
#undef DW_3X3_CALL
}

const cf_dw_kernels CF_SIMD_SYM(cf_dw) = {
    .nhwc_row = dw_nhwc_row,
    .nchw_plane = dw_nchw_plane,
    .nchw_blocked = dw_nchw_blocked,
    .nchw_3x3 = dw_3x3_planes,
    .vl = CF_VL,
};
