/*
 * winograd_kernels.h - input and output transforms of F(2x2,3x3), F(4x4,3x3) and F(6x6,3x3),
 * written once over cpu/simd.h (one vector lane per tile) and included by one
 * winograd_<isa>.c per ISA.  winograd.h describes the data they move.
 *
 * The 2-D transforms are the 1-D ones applied to columns, then rows.  The 1-D forms
 * below are B^T, A^T of Lavin and Gray, "Fast Algorithms for Convolutional Neural
 * Networks" (2016), with common subexpressions shared; F(6x6,3x3) uses the points 0, +-1,
 * +-2, +-1/2 and infinity (its matrices were checked against direct convolution in double
 * before they were written down here).
 */
#include "cpu/simd.h"
#include "cpu/winograd.h"

#if defined(__GNUC__)
#define WG_INLINE static inline __attribute__((always_inline))
#else
#define WG_INLINE static inline
#endif

/* d[0..alpha) -> B^T d, with stride `st` between the elements of d and of out. */
WG_INLINE void wg_in_1d(const int mt, const cf_vf *d, cf_vf *o, const int st)
{
    if (mt == 2) {
        o[0] = cf_vsub(d[0], d[2 * st]);
        o[st] = cf_vadd(d[st], d[2 * st]);
        o[2 * st] = cf_vsub(d[2 * st], d[st]);
        o[3 * st] = cf_vsub(d[st], d[3 * st]);
        return;
    }
    if (mt == 6) {
        cf_vf d0 = d[0], d1 = d[st], d2 = d[2 * st], d3 = d[3 * st], d4 = d[4 * st];
        cf_vf d5 = d[5 * st], d6 = d[6 * st], d7 = d[7 * st];
        cf_vf c525 = cf_vbcast(5.25f), c425 = cf_vbcast(4.25f), c125 = cf_vbcast(1.25f);
        cf_vf c25 = cf_vbcast(2.5f), half = cf_vbcast(0.5f), quarter = cf_vbcast(0.25f);
        cf_vf two = cf_vbcast(2.0f), four = cf_vbcast(4.0f);
        o[0] = cf_vfma(c525, cf_vsub(d4, d2), cf_vsub(d0, d6));
        o[7 * st] = cf_vfma(c525, cf_vsub(d3, d5), cf_vsub(d7, d1));
        cf_vf t1 = cf_vsub(cf_vadd(d2, d6), cf_vmul(c425, d4));
        cf_vf t2 = cf_vsub(cf_vadd(d1, d5), cf_vmul(c425, d3));
        o[st] = cf_vadd(t1, t2);
        o[2 * st] = cf_vsub(t1, t2);
        cf_vf t3 = cf_vsub(cf_vfma(quarter, d2, d6), cf_vmul(c125, d4));
        cf_vf t4 = cf_vfma(two, d5, cf_vsub(cf_vmul(half, d1), cf_vmul(c25, d3)));
        o[3 * st] = cf_vadd(t3, t4);
        o[4 * st] = cf_vsub(t3, t4);
        cf_vf t5 = cf_vfma(four, cf_vsub(d2, cf_vmul(c125, d4)), d6);
        cf_vf t6 = cf_vfma(half, d5, cf_vsub(cf_vmul(two, d1), cf_vmul(c25, d3)));
        o[5 * st] = cf_vadd(t5, t6);
        o[6 * st] = cf_vsub(t5, t6);
        return;
    }
    cf_vf d0 = d[0], d1 = d[st], d2 = d[2 * st], d3 = d[3 * st], d4 = d[4 * st], d5 = d[5 * st];
    cf_vf four = cf_vbcast(4.0f), five = cf_vbcast(5.0f), two = cf_vbcast(2.0f);
    o[0] = cf_vsub(cf_vfma(four, d0, d4), cf_vmul(five, d2));
    o[st] = cf_vsub(cf_vadd(d3, d4), cf_vmul(four, cf_vadd(d1, d2)));
    o[2 * st] = cf_vfma(four, cf_vsub(d1, d2), cf_vsub(d4, d3));
    o[3 * st] = cf_vsub(cf_vsub(d4, d2), cf_vmul(two, cf_vsub(d1, d3)));
    o[4 * st] = cf_vfma(two, cf_vsub(d1, d3), cf_vsub(d4, d2));
    o[5 * st] = cf_vsub(cf_vfma(four, d1, d5), cf_vmul(five, d3));
}

/* m[0..alpha) -> A^T m (mt values), strides as wg_in_1d. */
WG_INLINE void wg_out_1d(const int mt, const cf_vf *m, cf_vf *o, const int st_in, const int st_out)
{
    if (mt == 2) {
        o[0] = cf_vadd(cf_vadd(m[0], m[st_in]), m[2 * st_in]);
        o[st_out] = cf_vsub(cf_vsub(m[st_in], m[2 * st_in]), m[3 * st_in]);
        return;
    }
    if (mt == 6) {
        cf_vf a1 = cf_vadd(m[st_in], m[2 * st_in]), b1 = cf_vsub(m[st_in], m[2 * st_in]);
        cf_vf a2 = cf_vadd(m[3 * st_in], m[4 * st_in]), b2 = cf_vsub(m[3 * st_in], m[4 * st_in]);
        cf_vf a3 = cf_vadd(m[5 * st_in], m[6 * st_in]), b3 = cf_vsub(m[5 * st_in], m[6 * st_in]);
        o[0] = cf_vadd(cf_vadd(m[0], a1), cf_vadd(a2, a3));
        o[st_out] = cf_vfma(cf_vbcast(0.5f), b3, cf_vfma(cf_vbcast(2.0f), b2, b1));
        o[2 * st_out] = cf_vfma(cf_vbcast(0.25f), a3, cf_vfma(cf_vbcast(4.0f), a2, a1));
        o[3 * st_out] = cf_vfma(cf_vbcast(0.125f), b3, cf_vfma(cf_vbcast(8.0f), b2, b1));
        o[4 * st_out] = cf_vfma(cf_vbcast(0.0625f), a3, cf_vfma(cf_vbcast(16.0f), a2, a1));
        o[5 * st_out] = cf_vadd(cf_vfma(cf_vbcast(0.03125f), b3, cf_vfma(cf_vbcast(32.0f), b2, b1)),
                                m[7 * st_in]);
        return;
    }
    cf_vf a = cf_vadd(m[st_in], m[2 * st_in]), b = cf_vsub(m[st_in], m[2 * st_in]);
    cf_vf c = cf_vadd(m[3 * st_in], m[4 * st_in]), d = cf_vsub(m[3 * st_in], m[4 * st_in]);
    o[0] = cf_vadd(cf_vadd(m[0], a), c);
    o[st_out] = cf_vfma(cf_vbcast(2.0f), d, b);
    o[2 * st_out] = cf_vfma(cf_vbcast(4.0f), c, a);
    o[3 * st_out] = cf_vadd(cf_vfma(cf_vbcast(8.0f), d, b), m[5 * st_in]);
}

/* Lane coordinates of input tile group g: padded input plane (image and slice), tile
 * row, tile column; mask of real tiles. */
typedef struct wg_lanes {
    int32_t n[CF_VL], ty[CF_VL], tx[CF_VL];
    unsigned mask;
} wg_lanes;

static wg_lanes wg_lanes_of(const cf_wg_job *j, int64_t g)
{
    wg_lanes L = {.mask = 0};
    int64_t per_plane = j->tiles_h * j->tiles_w;
    for (int l = 0; l < CF_VL; l++) {
        int64_t t = g * CF_VL + l;
        bool real = t < j->ntiles_in;
        int64_t tt = real ? t : 0;
        L.n[l] = (int32_t)(tt / per_plane);
        L.ty[l] = (int32_t)(tt % per_plane / j->tiles_w);
        L.tx[l] = (int32_t)(tt % j->tiles_w);
        L.mask |= (unsigned)real << l;
    }
    return L;
}

/* tr, d and t: alpha^2 x CF_VL, alpha^2 and alpha^2 vectors of the caller's (sized per
 * tile size there, so that F(2x2,3x3) does not carry F(6x6,3x3)'s stack frame). */
WG_INLINE void wg_input(const cf_wg_job *j, size_t task, const int mt, cf_vf (*tr)[CF_VL],
                        cf_vf *d, cf_vf *t)
{
    const int alpha = mt + 2;
    const cf_problem *p = j->p;
    int64_t cbi = (int64_t)task / j->groups, g = (int64_t)task % j->groups;
    wg_lanes L = wg_lanes_of(j, g);
    int32_t idx[CF_VL];
    for (int l = 0; l < CF_VL; l++)
        idx[l] = (int32_t)((L.n[l] * p->c * j->hp + L.ty[l] * mt) * j->wp + L.tx[l] * mt);

    /* tr[pos][channel] holds VL tiles; transposed per position into [tile][channel]. */
    for (int l = 0; l < CF_VL; l++) {
        int64_t c = cbi * CF_VL + l;
        if (c >= p->c) {
            for (int pos = 0; pos < alpha * alpha; pos++)
                tr[pos][l] = cf_vzero();
            continue;
        }
        const float *base = j->xpad + c * j->hp * j->wp;
#pragma GCC unroll 8
        for (int r = 0; r < alpha; r++)
#pragma GCC unroll 8
            for (int q = 0; q < alpha; q++)
                d[r * alpha + q] = cf_vgather(base, (int32_t)(r * j->wp + q), idx, L.mask);
#pragma GCC unroll 8
        for (int q = 0; q < alpha; q++)
            wg_in_1d(mt, d + q, t + q, alpha); /* columns */
#pragma GCC unroll 8
        for (int r = 0; r < alpha; r++)
            wg_in_1d(mt, t + r * alpha, d + r * alpha, 1); /* rows */
#pragma GCC unroll 64
        for (int pos = 0; pos < alpha * alpha; pos++)
            tr[pos][l] = d[pos];
    }
    float *dst = j->v + (size_t)((cbi * j->groups + g) * CF_VL * CF_VL);
    for (int pos = 0; pos < alpha * alpha; pos++) {
        cf_vtranspose(tr[pos]);
        for (int q = 0; q < CF_VL; q++)
            cf_vstore(dst + pos * j->v_pos + q * CF_VL, tr[pos][q]);
    }
}

/* One tile t, output channels [k0, k0 + VL); m, tt and y: alpha^2, mt x alpha and
 * mt^2 vectors of the caller's. */
WG_INLINE void wg_output_tile(const cf_wg_job *j, int64_t t, int64_t k0, const int mt,
                              cf_vf *m, cf_vf *tt, cf_vf *y)
{
    const int alpha = mt + 2;
    const cf_problem *p = j->p;
    int cnt = p->m - k0 < CF_VL ? (int)(p->m - k0) : CF_VL;
    int64_t per_plane = j->tiles_h * j->tiles_w, plane = t / per_plane;
    int64_t ty = t % per_plane / j->tiles_w, tx = t % j->tiles_w;
    /* The tile's phase (a, b) of output plane img = n * dout + od. */
    int64_t b = plane % j->dw, a = plane / j->dw % j->dh, img = plane / (j->dh * j->dw);
    int64_t n = img / j->dout;
    int64_t oh_n = p->out[p->nsp - 2], ow_n = p->out[p->nsp - 1];
    int64_t plane0 = img % j->dout * oh_n * ow_n; /* the output plane's first pixel */

    const float *src = j->mo + (size_t)(t * j->kb * CF_VL + k0);
#pragma GCC unroll 64
    for (int pos = 0; pos < alpha * alpha; pos++)
        m[pos] = cf_vload(src + pos * j->mo_pos);
#pragma GCC unroll 8
    for (int q = 0; q < alpha; q++)
        wg_out_1d(mt, m + q, tt + q, alpha, alpha); /* columns: tt is mt x alpha */
#pragma GCC unroll 6
    for (int r = 0; r < mt; r++)
        wg_out_1d(mt, tt + r * alpha, y + r * mt, 1, 1); /* rows */

    cf_vf bias = j->b ? cf_vload_n(j->b + k0, cnt) : cf_vzero();
    bool nhwc = p->layout == CONVFIND_LAYOUT_NHWC;
    int32_t idx[CF_VL];
    for (int l = 0; l < CF_VL; l++)
        idx[l] = (int32_t)(l * p->out_sp); /* NCHW: channels are planes apart */
    unsigned mask = (unsigned)((1ull << cnt) - 1);
    for (int r = 0; r < mt && a + j->dh * (ty * mt + r) < oh_n; r++) {
        for (int q = 0; q < mt && b + j->dw * (tx * mt + q) < ow_n; q++) {
            int64_t pix = plane0 + (a + j->dh * (ty * mt + r)) * ow_n + b + j->dw * (tx * mt + q);
            cf_vf v = cf_vadd(y[r * mt + q], bias);
            if (nhwc) {
                size_t off = (size_t)((n * p->out_sp + pix) * p->m + k0);
                if (j->z)
                    v = cf_vadd(v, cf_vload_n(j->z + off, cnt));
                cf_vstore_n(j->y + off, cf_vactivate(v, p->act, p->alpha, p->beta), cnt);
            } else {
                size_t off = (size_t)((n * p->m + k0) * p->out_sp + pix);
                if (j->z)
                    v = cf_vadd(v, cf_vgather(j->z, (int32_t)off, idx, mask));
                cf_vscatter(j->y + off, idx, cf_vactivate(v, p->act, p->alpha, p->beta), mask);
            }
        }
    }
}

/* A whole row of tiles per task, so that two threads never write the same lines of Y. */
WG_INLINE void wg_output(const cf_wg_job *j, size_t task, const int mt, cf_vf *m, cf_vf *tt,
                         cf_vf *y)
{
    int64_t rows = j->ntiles / j->tiles_w; /* tile rows over all images */
    int64_t k0 = (int64_t)task / rows * CF_VL, row = (int64_t)task % rows;
    for (int64_t t = row * j->tiles_w; t < (row + 1) * j->tiles_w; t++)
        wg_output_tile(j, t, k0, mt, m, tt, y);
}

/* The kernels of one tile size MT, with buffers of that size. */
#define WG_KERNELS(MT)                                                                     \
    static void wg##MT##_input(const cf_wg_job *j, size_t task)                           \
    {                                                                                      \
        cf_vf tr[(MT + 2) * (MT + 2)][CF_VL], d[(MT + 2) * (MT + 2)], t[(MT + 2) * (MT + 2)]; \
        wg_input(j, task, MT, tr, d, t);                                                   \
    }                                                                                      \
    static void wg##MT##_output(const cf_wg_job *j, size_t task)                          \
    {                                                                                      \
        cf_vf m[(MT + 2) * (MT + 2)], tt[MT * (MT + 2)], y[MT * MT];                       \
        wg_output(j, task, MT, m, tt, y);                                                  \
    }                                                                                      \
    const cf_wg_kernels CF_SIMD_SYM(cf_wg##MT) = {                                         \
        .vl = CF_VL, .input = wg##MT##_input, .output = wg##MT##_output};

WG_KERNELS(2)
WG_KERNELS(4)
WG_KERNELS(6)
