/*
 * winograd_kernels.h - input and output transforms of F(2x2,3x3) and F(4x4,3x3),
 * written once over cpu/simd.h (one vector lane per tile) and included by one
 * winograd_<isa>.c per ISA.  winograd.h describes the data they move.
 *
 * The 2-D transforms are the 1-D ones applied to columns, then rows.  The 1-D forms
 * below are B^T, A^T of Lavin and Gray, "Fast Algorithms for Convolutional Neural
 * Networks" (2016), with common subexpressions shared.
 */
#include "cpu/simd.h"
#include "cpu/winograd.h"

#if defined(__GNUC__)
#define WG_INLINE static inline __attribute__((always_inline))
#else
#define WG_INLINE static inline
#endif

#define WG_MAX_ALPHA 6

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
    cf_vf a = cf_vadd(m[st_in], m[2 * st_in]), b = cf_vsub(m[st_in], m[2 * st_in]);
    cf_vf c = cf_vadd(m[3 * st_in], m[4 * st_in]), d = cf_vsub(m[3 * st_in], m[4 * st_in]);
    o[0] = cf_vadd(cf_vadd(m[0], a), c);
    o[st_out] = cf_vfma(cf_vbcast(2.0f), d, b);
    o[2 * st_out] = cf_vfma(cf_vbcast(4.0f), c, a);
    o[3 * st_out] = cf_vadd(cf_vfma(cf_vbcast(8.0f), d, b), m[5 * st_in]);
}

/* Lane coordinates of tile group g: image, tile row, tile column; mask of real tiles. */
typedef struct wg_lanes {
    int32_t n[CF_VL], ty[CF_VL], tx[CF_VL];
    unsigned mask;
} wg_lanes;

static wg_lanes wg_lanes_of(const cf_wg_job *j, int64_t g)
{
    wg_lanes L = {.mask = 0};
    int64_t per_image = j->tiles_h * j->tiles_w;
    for (int l = 0; l < CF_VL; l++) {
        int64_t t = g * CF_VL + l;
        bool real = t < j->ntiles;
        int64_t tt = real ? t : 0;
        L.n[l] = (int32_t)(tt / per_image);
        L.ty[l] = (int32_t)(tt % per_image / j->tiles_w);
        L.tx[l] = (int32_t)(tt % j->tiles_w);
        L.mask |= (unsigned)real << l;
    }
    return L;
}

WG_INLINE void wg_input(const cf_wg_job *j, size_t task, const int mt)
{
    const int alpha = mt + 2;
    const cf_problem *p = j->p;
    int64_t cbi = (int64_t)task / j->groups, g = (int64_t)task % j->groups;
    wg_lanes L = wg_lanes_of(j, g);
    int32_t idx[CF_VL];
    for (int l = 0; l < CF_VL; l++)
        idx[l] = (int32_t)((L.n[l] * p->c * j->hp + L.ty[l] * mt) * j->wp + L.tx[l] * mt);

    /* tr[pos][channel] holds VL tiles; transposed per position into [tile][channel]. */
    cf_vf tr[WG_MAX_ALPHA * WG_MAX_ALPHA][CF_VL];
    for (int l = 0; l < CF_VL; l++) {
        int64_t c = cbi * CF_VL + l;
        if (c >= p->c) {
            for (int pos = 0; pos < alpha * alpha; pos++)
                tr[pos][l] = cf_vzero();
            continue;
        }
        const float *base = j->xpad + c * j->hp * j->wp;
        cf_vf d[WG_MAX_ALPHA * WG_MAX_ALPHA], t[WG_MAX_ALPHA * WG_MAX_ALPHA];
#pragma GCC unroll 6
        for (int r = 0; r < alpha; r++)
#pragma GCC unroll 6
            for (int q = 0; q < alpha; q++)
                d[r * alpha + q] = cf_vgather(base, (int32_t)(r * j->wp + q), idx, L.mask);
#pragma GCC unroll 6
        for (int q = 0; q < alpha; q++)
            wg_in_1d(mt, d + q, t + q, alpha); /* columns */
#pragma GCC unroll 6
        for (int r = 0; r < alpha; r++)
            wg_in_1d(mt, t + r * alpha, d + r * alpha, 1); /* rows */
#pragma GCC unroll 36
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

/* One tile t, output channels [k0, k0 + VL). */
WG_INLINE void wg_output_tile(const cf_wg_job *j, int64_t t, int64_t k0, const int mt)
{
    const int alpha = mt + 2;
    const cf_problem *p = j->p;
    int cnt = p->m - k0 < CF_VL ? (int)(p->m - k0) : CF_VL;
    int64_t per_image = j->tiles_h * j->tiles_w;
    int64_t n = t / per_image, ty = t % per_image / j->tiles_w, tx = t % j->tiles_w;
    int64_t oh_n = p->out[0], ow_n = p->out[1];

    const float *src = j->mo + (size_t)(t * j->kb * CF_VL + k0);
    cf_vf m[WG_MAX_ALPHA * WG_MAX_ALPHA], tt[WG_MAX_ALPHA * 4], y[16];
#pragma GCC unroll 36
    for (int pos = 0; pos < alpha * alpha; pos++)
        m[pos] = cf_vload(src + pos * j->mo_pos);
#pragma GCC unroll 6
    for (int q = 0; q < alpha; q++)
        wg_out_1d(mt, m + q, tt + q, alpha, alpha); /* columns: tt is mt x alpha */
#pragma GCC unroll 4
    for (int r = 0; r < mt; r++)
        wg_out_1d(mt, tt + r * alpha, y + r * mt, 1, 1); /* rows */

    cf_vf bias = j->b ? cf_vload_n(j->b + k0, cnt) : cf_vzero();
    bool nhwc = p->layout == CONVFIND_LAYOUT_NHWC;
    int32_t idx[CF_VL];
    for (int l = 0; l < CF_VL; l++)
        idx[l] = (int32_t)(l * p->out_sp); /* NCHW: channels are planes apart */
    unsigned mask = (unsigned)((1ull << cnt) - 1);
    for (int r = 0; r < mt && ty * mt + r < oh_n; r++) {
        for (int q = 0; q < mt && tx * mt + q < ow_n; q++) {
            int64_t pix = (ty * mt + r) * ow_n + tx * mt + q;
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
WG_INLINE void wg_output(const cf_wg_job *j, size_t task, const int mt)
{
    int64_t rows = j->ntiles / j->tiles_w; /* tile rows over all images */
    int64_t k0 = (int64_t)task / rows * CF_VL, row = (int64_t)task % rows;
    for (int64_t t = row * j->tiles_w; t < (row + 1) * j->tiles_w; t++)
        wg_output_tile(j, t, k0, mt);
}

static void wg2_input(const cf_wg_job *j, size_t task) { wg_input(j, task, 2); }
static void wg4_input(const cf_wg_job *j, size_t task) { wg_input(j, task, 4); }
static void wg2_output(const cf_wg_job *j, size_t task) { wg_output(j, task, 2); }
static void wg4_output(const cf_wg_job *j, size_t task) { wg_output(j, task, 4); }

const cf_wg_kernels CF_SIMD_SYM(cf_wg2) = {.vl = CF_VL, .input = wg2_input, .output = wg2_output};
const cf_wg_kernels CF_SIMD_SYM(cf_wg4) = {.vl = CF_VL, .input = wg4_input, .output = wg4_output};
