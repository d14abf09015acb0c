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

/* Lanes whose column is not the one that lane `first` starts (every W-th lane from
 * `first` on, `pat` having a bit at each multiple of W below CF_VL): the lanes that may
 * read their left neighbour (first = the lanes in column 0) or their right one (first =
 * the lanes in column W - 1). */
static inline unsigned dw_flat_cols(unsigned pat, int64_t first)
{
    return dw_lanes_below(CF_VL) & ~(first < CF_VL ? pat << first : 0u);
}

/* The first n lanes of acc, plus the residual, through the activation into y. */
DW_INLINE void dw_3x3_out(cf_vf acc, const float *z, float *y, int64_t n,
                          convfind_activation act, float alpha, float beta)
{
    if (n == CF_VL) {
        if (z)
            acc = cf_vadd(acc, cf_vload(z));
        cf_vstore(y, cf_vactivate(acc, act, alpha, beta));
    } else {
        if (z)
            acc = cf_vadd(acc, cf_vload_n(z, (int)n));
        cf_vstore_n(y, cf_vactivate(acc, act, alpha, beta), (int)n);
    }
}

/* Lanes l whose position p0 + off + l lies in [0, hw): a load of the flat plane that
 * reads zeros, without touching memory, outside it. */
static inline unsigned dw_flat_inside(int64_t p0, int64_t off, int64_t hw)
{
    return dw_lanes_below(hw - p0 - off) & ~dw_lanes_below(-(p0 + off));
}

/* The column masks of the next vector along a flat plane of rows of wd: returns the
 * lanes whose column is not 0 (they have a left neighbour) and sets *rv to those whose
 * column is not wd - 1.  *l0 is the first lane in column 0; it moves back by
 * step = CF_VL mod wd lanes per vector, without a division. */
static inline unsigned dw_s1_cols(unsigned pat, int64_t wd, int64_t step, int64_t *l0,
                                  unsigned *rv)
{
    unsigned lv = dw_flat_cols(pat, *l0);
    *rv = dw_flat_cols(pat, *l0 ? *l0 - 1 : wd - 1);
    *l0 -= step;
    *l0 += *l0 < 0 ? wd : 0;
    return lv;
}

/* The stride-1 window as it moves along a flat plane: the vectors before and at the
 * output positions, in the row of the output (vp, v) and in the row above (up, u); and
 * the sums of the vector it was last moved past. */
typedef struct dw_s1_win {
    cf_vf vp, v, up, u, acc;
} dw_s1_win;

/* The output vector at plane position p0 (q = plane + p0).  The rows above and at the
 * output come from the window and are shifted in registers for the side taps; the row
 * below is loaded per tap; three accumulators, one per kernel row, cover the FMA
 * latency.  Left taps only in lanes lv, right ones in lanes rv (columns 0 and W - 1
 * have no neighbour there).  `edge` (a constant in each instance) puts every load
 * under a mask of the lanes inside the plane: positions before it are the row above
 * row 0 and those after it the row below the last, so those zeros are the padding and
 * no other row test is needed.  Returns the window moved on by one vector, with the
 * vector's sums. */
DW_INLINE dw_s1_win dw_s1_vector(const float *q, int64_t p0, int64_t wd, int64_t hw, bool edge,
                                 dw_s1_win s, unsigned lv, unsigned rv, const cf_vf *w,
                                 cf_vf bias)
{
    unsigned m_d = edge ? dw_lanes_below(hw - wd - p0) : ~0u; /* lanes with a row below */
    cf_vf vn = edge ? cf_vload_mask(q + CF_VL, dw_flat_inside(p0, CF_VL, hw))
                    : cf_vload(q + CF_VL);
    cf_vf un = edge ? cf_vload_mask(q - wd + CF_VL, dw_flat_inside(p0, CF_VL - wd, hw))
                    : cf_vload(q - wd + CF_VL);
    cf_vf a0 = cf_vfma(w[4], s.v, bias);
    cf_vf a1 = cf_vmul(w[1], s.u);
    cf_vf a2 = cf_vmul(w[7], edge ? cf_vload_mask(q + wd, m_d) : cf_vload(q + wd));
    a0 = cf_vfma_mask(w[3], cf_vshift(s.vp, s.v, CF_VL - 1), a0, lv);
    a1 = cf_vfma_mask(w[0], cf_vshift(s.up, s.u, CF_VL - 1), a1, lv);
    a2 = cf_vfma(w[6], cf_vload_mask(q + wd - 1, lv & m_d), a2);
    a0 = cf_vfma_mask(w[5], cf_vshift(s.v, vn, 1), a0, rv);
    a1 = cf_vfma_mask(w[2], cf_vshift(s.u, un, 1), a1, rv);
    a2 = cf_vfma(w[8], cf_vload_mask(q + wd + 1, rv & m_d), a2);
    dw_s1_win next = {s.v, vn, s.u, un, cf_vadd(a0, cf_vadd(a1, a2))};
    return next;
}

/* Stride 1 (pads 1, so Y's plane is X's) on planes too wide for the window kernel
 * (dw_3x3s1_window): the plane as one flat array, read in place.
 * Output vector k holds positions k * CF_VL .. + CF_VL - 1, running on across rows, and
 * tap (dy, dx) of every lane is the input at the same position plus dy * W + dx, under
 * lane masks for columns 0 and W - 1 (dw_s1_cols).  Vectors whose loads all lie inside
 * the plane load without masks; the first and last few mask their loads to the plane
 * (all four of a 7x7 plane). */
DW_INLINE void dw_3x3s1_plane(const cf_dw_job *j, const float *x, float *y, const float *z,
                              const cf_vf *w, cf_vf bias, convfind_activation act)
{
    const cf_problem *p = j->p;
    const int64_t wd = j->s.in[2], hw = p->in_sp, nvec = (hw + CF_VL - 1) / CF_VL;
    const float alpha = p->alpha, beta = p->beta;
    unsigned pat = 0;
    for (int64_t l = 0; l < CF_VL; l += wd)
        pat |= 1u << l;
    const int64_t step = CF_VL % wd;
    int64_t l0 = 0; /* the first lane in column 0 */
    /* Vectors [k_a, k_b) load inside the plane without masks, the window reloaded at
     * the first of them: from the first whose row above starts a whole vector into the
     * plane to the last whose row below (one past its last lane) and next vector end
     * inside it. */
    const int64_t k_a = (wd + 2 * CF_VL - 1) / CF_VL;
    const int64_t rest = hw - CF_VL - (wd + 1 > CF_VL ? wd + 1 : CF_VL);
    const int64_t k_b = rest >= 0 ? rest / CF_VL + 1 : 0;
    dw_s1_win s = {cf_vzero(), cf_vload_mask(x, dw_flat_inside(0, 0, hw)), cf_vzero(),
                   cf_vload_mask(x - wd, dw_flat_inside(0, -wd, hw)), cf_vzero()};
    unsigned lv, rv;
    int64_t k = 0;
    for (;;) {
        for (; k < nvec && (k < k_a || k >= k_b); k++) {
            int64_t p0 = k * CF_VL, n = hw - p0 < CF_VL ? hw - p0 : CF_VL;
            lv = dw_s1_cols(pat, wd, step, &l0, &rv);
            s = dw_s1_vector(x + p0, p0, wd, hw, true, s, lv, rv, w, bias);
            dw_3x3_out(s.acc, z ? z + p0 : NULL, y + p0, n, act, alpha, beta);
        }
        if (k >= nvec)
            break;
        const float *q = x + k * CF_VL;
        s = (dw_s1_win){cf_vload(q - CF_VL), cf_vload(q), cf_vload(q - wd - CF_VL),
                        cf_vload(q - wd), cf_vzero()};
        for (; k < k_b; k++) {
            int64_t p0 = k * CF_VL;
            lv = dw_s1_cols(pat, wd, step, &l0, &rv);
            s = dw_s1_vector(x + p0, p0, wd, hw, false, s, lv, rv, w, bias);
            dw_3x3_out(s.acc, z ? z + p0 : NULL, y + p0, CF_VL, act, alpha, beta);
        }
    }
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

/* ---- stride 1 on planes of at most DW_WIN_VECS vectors a row: a window of rows ---- */

/* The widest rows, in vectors, that the window kernel takes: its three rows of vectors
 * and the ten weights must stay in registers.  AVX-512's 32 hold rows of 4 vectors
 * (56x56 planes: 1300 cycles a plane against 1780 for the flat kernel; at 7 vectors,
 * 112x112, 7850 against 6550), 16 registers rows of 2 (AVX2: 14x14 planes 243 against
 * 479; 28x28, 4 vectors, 1084 against 1037).  Zen 5, one thread. */
#if CF_VL == 16
#define DW_WIN_VECS 4
#else
#define DW_WIN_VECS 2
#endif

/* Stride 1 on planes whose rows are at most DW_WIN_VECS vectors: each output row is
 * computed from three input rows (above, at and below it) held in registers as a
 * window that moves down the plane, so each input row is loaded once, with one load per
 * vector.  A row's vectors are zero past its end, so a lane shift across the row's
 * vectors gives every lane its left or right neighbour with a zero (the padding) at
 * both ends of the row, and no tap needs a mask.  Rows of at most a vector (7x7 and
 * 14x14 planes at 16 lanes) hold `planes` planes side by side, plane i's row in lanes
 * [i (W + 1), i (W + 1) + W) and a zero lane after each row, so that the shifts never
 * reach into another plane.  The flat kernel below computes every lane of its vectors
 * but pays for it in lane masks per tap and in loads of neighbours that cross cache
 * lines (Zen 5, one thread, cycles a plane, flat -> window): 7x7 46 -> 33 (two planes a
 * vector), 14x14 160 -> 87, 28x28 520 -> 326. */
typedef struct dw_s1_window {
    int vecs;                 /* vectors per row: ceil(W / CF_VL) */
    int planes;               /* planes per vector: (CF_VL + 1) / (W + 1), or 1 */
    unsigned lanes[CF_VL];    /* the lanes of plane i's row in the row's last vector */
    ptrdiff_t shift[CF_VL];   /* plane i's offset, in floats, from plane 0's position
                               * of the same lane: i HW - i (W + 1) */
} dw_s1_window;

static inline void dw_3x3s1_window_of(const cf_dw_job *j, dw_s1_window *pw)
{
    const int64_t wd = j->s.in[2], hw = j->p->in_sp;
    pw->vecs = (int)((wd + CF_VL - 1) / CF_VL);
    pw->planes = pw->vecs == 1 ? (int)((CF_VL + 1) / (wd + 1)) : 1;
    const int64_t last = wd - (pw->vecs - 1) * CF_VL; /* lanes of the last vector */
    for (int i = 0; i < pw->planes; i++) {
        pw->lanes[i] = dw_lanes_below(last) << (i * (wd + 1));
        pw->shift[i] = (ptrdiff_t)(i * hw - i * (wd + 1));
    }
}

/* Vector k of the row at position `at` of the group's first plane; `lanes` as
 * dw_s1_window's, zero for planes the group lacks.  `vecs` and `np` are constants. */
DW_INLINE cf_vf dw_win_load(const float *x, int64_t at, int k, int vecs, int np,
                            const dw_s1_window *pw, const unsigned *lanes)
{
    if (k + 1 < vecs)
        return cf_vload(x + at + k * CF_VL);
    cf_vf v = cf_vload_mask(x + at + k * CF_VL, lanes[0]);
    for (int i = 1; i < np; i++)
        v = cf_vblend(lanes[i], v, cf_vload_mask(x + pw->shift[i] + at, lanes[i]));
    return v;
}

DW_INLINE void dw_win_store(float *y, int64_t at, int k, int vecs, int np,
                            const dw_s1_window *pw, const unsigned *lanes, cf_vf v)
{
    if (k + 1 < vecs) {
        cf_vstore(y + at + k * CF_VL, v);
        return;
    }
    cf_vstore_mask(y + at + k * CF_VL, v, lanes[0]);
    for (int i = 1; i < np; i++)
        cf_vstore_mask(y + pw->shift[i] + at, v, lanes[i]);
}

/* Kernel row t's three taps on vector k of input row `row` (vecs vectors), added to acc. */
DW_INLINE cf_vf dw_win_taps(const cf_vf *row, int k, int vecs, const cf_vf *w, int t,
                            cf_vf acc)
{
    const cf_vf prev = k > 0 ? row[k - 1] : cf_vzero();
    const cf_vf next = k + 1 < vecs ? row[k + 1] : cf_vzero();
    acc = cf_vfma(w[t + 1], row[k], acc);
    acc = cf_vfma(w[t], cf_vshift(prev, row[k], CF_VL - 1), acc);
    return cf_vfma(w[t + 2], cf_vshift(row[k], next, 1), acc);
}

/* `count` planes from `first`, `np` planes a vector (the last group may have fewer),
 * rows of `vecs` vectors. */
DW_INLINE void dw_3x3s1_window(const cf_dw_job *j, size_t first, size_t count, int vecs,
                               int np, const dw_s1_window *pw, convfind_activation act)
{
    const cf_problem *p = j->p;
    const int64_t wd = j->s.in[2], h = j->s.in[1], hw = p->in_sp;
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
        cf_vf up[DW_WIN_VECS], at[DW_WIN_VECS], down[DW_WIN_VECS];
        for (int k = 0; k < vecs; k++) {
            up[k] = cf_vzero();
            at[k] = dw_win_load(x, 0, k, vecs, np, pw, lanes);
        }
        for (int64_t r = 0; r < h; r++) {
            for (int k = 0; k < vecs; k++)
                down[k] = r + 1 < h ? dw_win_load(x, (r + 1) * wd, k, vecs, np, pw, lanes)
                                    : cf_vzero();
            for (int k = 0; k < vecs; k++) {
                cf_vf acc = cf_vadd(dw_win_taps(at, k, vecs, w, 3, w[9]),
                                    cf_vadd(dw_win_taps(up, k, vecs, w, 0, cf_vzero()),
                                            dw_win_taps(down, k, vecs, w, 6, cf_vzero())));
                if (z)
                    acc = cf_vadd(acc, dw_win_load(z, r * wd, k, vecs, np, pw, lanes));
                acc = cf_vactivate(acc, act, p->alpha, p->beta);
                dw_win_store(y, r * wd, k, vecs, np, pw, lanes, acc);
            }
            for (int k = 0; k < vecs; k++) {
                up[k] = at[k];
                at[k] = down[k];
            }
        }
    }
}

/* dw_3x3s1_window with the row's vectors and (for one and two) the planes per vector
 * constants in each instance. */
DW_INLINE void dw_3x3s1_window_shapes(const cf_dw_job *j, size_t first, size_t count,
                                      const dw_s1_window *pw, convfind_activation act)
{
    switch (pw->vecs) {
#if DW_WIN_VECS >= 4
    case 4:
        dw_3x3s1_window(j, first, count, 4, 1, pw, act);
        return;
    case 3:
        dw_3x3s1_window(j, first, count, 3, 1, pw, act);
        return;
#endif
    case 2:
        dw_3x3s1_window(j, first, count, 2, 1, pw, act);
        return;
    default:
        if (pw->planes == 1)
            dw_3x3s1_window(j, first, count, 1, 1, pw, act);
        else if (pw->planes == 2)
            dw_3x3s1_window(j, first, count, 1, 2, pw, act);
        else
            dw_3x3s1_window(j, first, count, 1, pw->planes, pw, act);
    }
}

/* The window kernel with the activation a constant in each instance, in a function of
 * its own: inlined into the task beside the other kernels, a stride-1 kernel changed how
 * those were compiled (the stride-2 layers took 12% longer, s2 c96 112², 2 threads: 0.039
 * -> 0.043 ms). */
static __attribute__((noinline)) void dw_3x3s1_window_any(const cf_dw_job *j, size_t first,
                                                          size_t count,
                                                          convfind_activation act)
{
    dw_s1_window pw;
    dw_3x3s1_window_of(j, &pw);
#define DW_S1_WIN(a) dw_3x3s1_window_shapes(j, first, count, &pw, a)
    switch (act) {
        CF_VACT_CASES(DW_S1_WIN, return)
    default:
        DW_S1_WIN(CONVFIND_ACT_NONE);
    }
#undef DW_S1_WIN
}

/* Kernel row w's three taps for the output vector whose input columns 2 ox .. 2 ox +
 * 2 CF_VL - 1 are a, b, added to acc; *odd carries the odd columns from one vector to
 * the next.  Columns 2 ox and 2 ox + 1 are the even and odd lanes of a, b, and column
 * 2 ox - 1 the odd lanes shifted by one lane, the previous vector's last one shifted
 * in, so each input row is loaded once per output vector and no tap needs a load of
 * its own. */
DW_INLINE cf_vf dw_s2_taps(const cf_vf *w, cf_vf a, cf_vf b, cf_vf *odd, cf_vf acc)
{
    cf_vf o = cf_vodd(a, b);
    acc = cf_vfma(w[0], cf_vshift(*odd, o, CF_VL - 1), acc);
    acc = cf_vfma(w[1], cf_veven(a, b), acc);
    *odd = o;
    return cf_vfma(w[2], o, acc);
}

/* The output columns of a stride-2 row: `fast` whole vectors whose input columns lie
 * inside the row, then at most one more vector of n outputs whose two input vectors
 * read the lanes ma, mb (the rest is past the row's end).  The same for every row. */
typedef struct dw_s2_cols {
    int64_t fast, n;
    unsigned ma, mb;
} dw_s2_cols;

/* Kernel rows r = 0..2 of one output vector, input columns from 2 ox on, under the
 * masks ma & on[r], mb & on[r]; three accumulators, one per kernel row. */
DW_INLINE cf_vf dw_s2_vector(const float *const *rows, const unsigned *on, int64_t ox,
                             unsigned ma, unsigned mb, const cf_vf *w, cf_vf *odd, cf_vf bias)
{
    cf_vf acc[3];
    for (int r = 0; r < 3; r++) {
        const float *q = rows[r] + 2 * ox;
        acc[r] = dw_s2_taps(w + 3 * r, cf_vload_mask(q, ma & on[r]),
                            cf_vload_mask(q + CF_VL, mb & on[r]), &odd[r], r ? cf_vzero() : bias);
    }
    return cf_vadd(acc[0], cf_vadd(acc[1], acc[2]));
}

/* One output row at stride 2: vectors along it, each reading the 2 CF_VL input columns
 * from 2 ox on of its three input rows.  `on[r]` masks off kernel rows outside the input
 * (inlined with constant all-on masks for the rows between, whose whole vectors then
 * load without masks).  Column -1, the padding, is the zero the odd lanes start from. */
DW_INLINE void dw_3x3s2_row(const cf_dw_job *j, const float *const *rows, const unsigned *on,
                            const dw_s2_cols *c, float *y, const float *z, const cf_vf *w,
                            cf_vf bias, convfind_activation act)
{
    const float alpha = j->p->alpha, beta = j->p->beta;
    cf_vf odd[3] = {cf_vzero(), cf_vzero(), cf_vzero()};
    int64_t ox = 0;
    for (int64_t v = 0; v < c->fast; v++, ox += CF_VL)
        dw_3x3_out(dw_s2_vector(rows, on, ox, ~0u, ~0u, w, odd, bias), z ? z + ox : NULL, y + ox,
                   CF_VL, act, alpha, beta);
    if (c->n)
        dw_3x3_out(dw_s2_vector(rows, on, ox, c->ma, c->mb, w, odd, bias), z ? z + ox : NULL,
                   y + ox, c->n, act, alpha, beta);
}

/* Output row oy at stride 2 with row masks: kernel rows outside the input read nothing. */
DW_INLINE void dw_3x3s2_edge_row(const cf_dw_job *j, const float *x, int64_t oy,
                                 const dw_s2_cols *c, float *y, const float *z, const cf_vf *w,
                                 cf_vf bias, convfind_activation act)
{
    const int64_t hi = j->s.in[1], wi = j->s.in[2], wo = j->s.out[2];
    const float *rows[3];
    unsigned on[3];
    for (int r = 0; r < 3; r++) {
        int64_t iy = 2 * oy - 1 + r;
        bool in = iy >= 0 && iy < hi;
        rows[r] = in ? x + iy * wi : x;
        on[r] = in ? ~0u : 0u;
    }
    dw_3x3s2_row(j, rows, on, c, y + oy * wo, z ? z + oy * wo : NULL, w, bias, act);
}

/* Stride 2 (pads 1 at the start of each axis, at most 1 at the end): vectors along each
 * output row.  Rows whose three input rows all lie inside the input (all but the first
 * and perhaps the last) run without row masks. */
DW_INLINE void dw_3x3s2_plane(const cf_dw_job *j, const float *x, float *y, const float *z,
                              const cf_vf *w, cf_vf bias, convfind_activation act)
{
    const int64_t hi = j->s.in[1], wi = j->s.in[2], ho = j->s.out[1], wo = j->s.out[2];
    static const unsigned all[3] = {~0u, ~0u, ~0u};
    dw_s2_cols c;
    c.fast = dw_min(wo / CF_VL, wi / (2 * CF_VL));
    c.n = wo - c.fast * CF_VL; /* at most CF_VL with an end pad of at most 1 */
    c.ma = dw_lanes_below(wi - 2 * c.fast * CF_VL);
    c.mb = dw_lanes_below(wi - (2 * c.fast + 1) * CF_VL);
    int64_t mid = dw_max(1, dw_min(ho, (hi - 2) / 2 + 1)); /* rows [1, mid) are inside */
    /* Rows [1, unmasked) load their last vector without masks too: its lanes past the row
     * read the next row, which only reaches outputs past the row's end, and its loads
     * end inside the plane (row 2 oy + 1 from column 2 fast CF_VL, 2 CF_VL floats).  Not
     * where the last output's right tap is the end padding (2 wo - 1 >= wi).  Masked, the
     * last vector cost a fifth of a 28-wide row (s2 c144 56x56). */
    const int64_t tail = 2 * c.fast * CF_VL + 2 * CF_VL;
    int64_t unmasked = c.n && 2 * wo - 1 < wi ? (hi * wi - tail - wi) / (2 * wi) + 1 : 1;
    unmasked = dw_max(1, dw_min(unmasked, mid));
    const dw_s2_cols cf = {c.fast, c.n, ~0u, ~0u};
    dw_3x3s2_edge_row(j, x, 0, &c, y, z, w, bias, act);
    int64_t oy = 1;
    for (; oy < unmasked; oy++) {
        const float *rows[3] = {x + (2 * oy - 1) * wi, x + 2 * oy * wi, x + (2 * oy + 1) * wi};
        dw_3x3s2_row(j, rows, all, &cf, y + oy * wo, z ? z + oy * wo : NULL, w, bias, act);
    }
    for (; oy < mid; oy++) {
        const float *rows[3] = {x + (2 * oy - 1) * wi, x + 2 * oy * wi, x + (2 * oy + 1) * wi};
        dw_3x3s2_row(j, rows, all, &c, y + oy * wo, z ? z + oy * wo : NULL, w, bias, act);
    }
    for (oy = mid; oy < ho; oy++)
        dw_3x3s2_edge_row(j, x, oy, &c, y, z, w, bias, act);
}

/* Stride 2 on output rows of at most DW_WIN_VECS vectors, as the stride-1 window: each
 * input row is loaded and split into its even and odd columns once, and the split of
 * row 2 oy + 1, the last of output row oy's three, is kept in registers as the first of
 * row oy + 1's (the row-by-row kernel above loads and splits it for both).  Column -1,
 * the start padding, is the zero the odd lanes are shifted from; columns and rows past
 * the input (the end padding) are the zeros of masked loads. */
typedef struct dw_s2_window {
    unsigned ma[DW_WIN_VECS], mb[DW_WIN_VECS]; /* input lanes of vectors 2k, 2k + 1 */
    unsigned last;                             /* output lanes of the last vector */
} dw_s2_window;

static inline void dw_3x3s2_window_of(const cf_dw_job *j, int vecs, dw_s2_window *sw)
{
    const int64_t wi = j->s.in[2], wo = j->s.out[2];
    for (int k = 0; k < vecs; k++) {
        sw->ma[k] = dw_lanes_below(wi - 2 * k * CF_VL);
        sw->mb[k] = dw_lanes_below(wi - (2 * k + 1) * CF_VL);
    }
    sw->last = dw_lanes_below(wo - (vecs - 1) * CF_VL);
}

/* Input columns 2 k CF_VL .. + 2 CF_VL - 1 of `row` (NULL: a row of padding) as even
 * and odd columns. */
DW_INLINE void dw_s2_split(const float *row, int k, const dw_s2_window *sw, cf_vf *even,
                           cf_vf *odd)
{
    const cf_vf a = row ? cf_vload_mask(row + 2 * k * CF_VL, sw->ma[k]) : cf_vzero();
    const cf_vf b = row ? cf_vload_mask(row + (2 * k + 1) * CF_VL, sw->mb[k]) : cf_vzero();
    *even = cf_veven(a, b);
    *odd = cf_vodd(a, b);
}

/* Kernel row t's taps on output vector k of a split row: columns 2 ox - 1 (the odd
 * columns shifted by a lane, the previous vector's last shifted in), 2 ox, 2 ox + 1. */
DW_INLINE cf_vf dw_s2_win_taps(cf_vf even, cf_vf odd, cf_vf odd_prev, const cf_vf *w, int t,
                               cf_vf acc)
{
    acc = cf_vfma(w[t + 1], even, acc);
    acc = cf_vfma(w[t + 2], odd, acc);
    return cf_vfma(w[t], cf_vshift(odd_prev, odd, CF_VL - 1), acc);
}

/* One plane, output rows of `vecs` vectors (a constant). */
DW_INLINE void dw_3x3s2_window(const cf_dw_job *j, const float *x, float *y, const float *z,
                               const cf_vf *w, cf_vf bias, int vecs, const dw_s2_window *sw,
                               convfind_activation act)
{
    const int64_t hi = j->s.in[1], wi = j->s.in[2], ho = j->s.out[1], wo = j->s.out[2];
    /* The split of input row 2 oy - 1: zeros (the padding) for oy = 0. */
    cf_vf e0[DW_WIN_VECS], o0[DW_WIN_VECS];
    for (int k = 0; k < vecs; k++)
        e0[k] = o0[k] = cf_vzero();
    for (int64_t oy = 0; oy < ho; oy++) {
        const float *r1 = x + 2 * oy * wi; /* inside: 2 oy <= hi - 1 for every output row */
        const float *r2 = 2 * oy + 1 < hi ? r1 + wi : NULL;
        cf_vf p0 = cf_vzero(), p1 = cf_vzero(), p2 = cf_vzero(); /* odd lanes of vector k-1 */
        for (int k = 0; k < vecs; k++) {
            cf_vf e1, o1, e2, o2;
            dw_s2_split(r1, k, sw, &e1, &o1);
            dw_s2_split(r2, k, sw, &e2, &o2);
            cf_vf acc = cf_vadd(dw_s2_win_taps(e1, o1, p1, w, 3, bias),
                                cf_vadd(dw_s2_win_taps(e0[k], o0[k], p0, w, 0, cf_vzero()),
                                        dw_s2_win_taps(e2, o2, p2, w, 6, cf_vzero())));
            p0 = o0[k];
            p1 = o1;
            p2 = o2;
            e0[k] = e2;
            o0[k] = o2;
            const int64_t at = oy * wo + k * CF_VL;
            const unsigned lanes = k + 1 < vecs ? dw_lanes_below(CF_VL) : sw->last;
            if (z)
                acc = cf_vadd(acc, cf_vload_mask(z + at, lanes));
            cf_vstore_mask(y + at, cf_vactivate(acc, act, j->p->alpha, j->p->beta), lanes);
        }
    }
}

/* `count` planes from `first` with dw_3x3s2_window, `vecs` (a constant) vectors a row. */
DW_INLINE void dw_3x3s2_window_planes(const cf_dw_job *j, size_t first, size_t count,
                                      int vecs, convfind_activation act)
{
    const cf_problem *p = j->p;
    dw_s2_window sw;
    dw_3x3s2_window_of(j, vecs, &sw);
    int64_t m = (int64_t)(first % (size_t)p->m);
    for (size_t plane = first; plane < first + count; plane++) {
        cf_vf w[10];
        dw_3x3_weights(j, m, w, &w[9]);
        m = m + 1 == p->m ? 0 : m + 1;
        dw_3x3s2_window(j, j->x + plane * (size_t)p->in_sp, j->y + plane * (size_t)p->out_sp,
                        j->z ? j->z + plane * (size_t)p->out_sp : NULL, w, w[9], vecs, &sw,
                        act);
    }
}

/* The stride-2 window with the activation and the row's vectors constants in each
 * instance, in a function of its own as dw_3x3s1_window_any. */
static __attribute__((noinline)) void dw_3x3s2_window_any(const cf_dw_job *j, size_t first,
                                                          size_t count,
                                                          convfind_activation act)
{
    const int vecs = (int)((j->s.out[2] + CF_VL - 1) / CF_VL);
#if DW_WIN_VECS >= 4
#define DW_S2_WIN(a)                                                                       \
    (vecs == 4   ? dw_3x3s2_window_planes(j, first, count, 4, a)                           \
     : vecs == 3 ? dw_3x3s2_window_planes(j, first, count, 3, a)                           \
     : vecs == 2 ? dw_3x3s2_window_planes(j, first, count, 2, a)                           \
                 : dw_3x3s2_window_planes(j, first, count, 1, a))
#else
#define DW_S2_WIN(a)                                                                       \
    (vecs == 2 ? dw_3x3s2_window_planes(j, first, count, 2, a)                             \
               : dw_3x3s2_window_planes(j, first, count, 1, a))
#endif
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
    if (j->s.stride[2] == 1 && j->s.in[2] <= DW_WIN_VECS * CF_VL) {
        dw_3x3s1_window_any(j, first, count, act);
        return;
    }
    if (j->s.stride[2] == 2 && 2 * j->s.out[2] + 1 <= CF_VL) {
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
        return;
    }
    if (j->s.stride[2] == 2 && j->s.out[2] <= DW_WIN_VECS * CF_VL) {
        dw_3x3s2_window_any(j, first, count, act);
        return;
    }
    for (size_t plane = first; plane < first + count; plane++) {
        const float *x = j->x + plane * (size_t)p->in_sp;
        float *y = j->y + plane * (size_t)p->out_sp;
        const float *z = j->z ? j->z + plane * (size_t)p->out_sp : NULL;
        cf_vf w[9], bias;
        dw_3x3_weights(j, (int64_t)plane % p->m, w, &bias);
        if (j->s.stride[2] == 1)
            dw_3x3s1_plane(j, x, y, z, w, bias, act);
        else
            dw_3x3s2_plane(j, x, y, z, w, bias, act);
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
