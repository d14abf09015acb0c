/*
 * direct_blocked_kernels.h - the register-blocked tile kernel of cpu.direct_blocked,
 * written once over cpu/simd.h and included by one direct_blocked_<isa>.c per ISA.
 *
 * The tile keeps nb x np accumulators in registers (up to 28 zmm on AVX-512, 14 ymm on
 * AVX2): per input channel it loads nb weight vectors and broadcasts np input values,
 * so the nb * np FMAs are all independent and both FMA pipes stay busy.  dbk_run is
 * force-inlined into a switch over (nb, np) so every loop below has constant bounds,
 * unrolls completely, and the accumulator array lives in registers.
 */
#include "cpu/direct_blocked.h"
#include "cpu/simd.h"
#include "util/prefetch.h"

#if defined(__GNUC__)
#define DBK_INLINE static inline __attribute__((always_inline))
#else
#define DBK_INLINE static inline
#endif

/* Register budget: accumulators get what the vector register file has left after nb
 * weight vectors and one broadcast (32 zmm; 16 ymm, and 16 for the portable build,
 * whose 4-lane vectors map onto SSE2 / NEON registers). */
#if defined(CF_SIMD_AVX512)
#define DBK_REGS 32
#else
#define DBK_REGS 16
#endif

#define DBK_NP(nb)                                                                         \
    ((DBK_REGS - 1 - (nb)) / (nb) < CF_DBK_MAX_NP ? (DBK_REGS - 1 - (nb)) / (nb) : CF_DBK_MAX_NP)

/* act(sum + bias + z) for the tile's valid channels, stored in Y's layout.  `act` is a
 * constant at every call (dbk_store's switch), so cf_vactivate folds to its one case
 * instead of branching per vector. */
DBK_INLINE void dbk_store_act(const cf_dbk_store *s, const float *buf, int nb, int np,
                              const convfind_activation act)
{
    float alpha = s->p->alpha, beta = s->p->beta;
    for (int j = 0; j < nb && j * CF_VL < s->nm; j++) {
        int nl = s->nm - j * CF_VL < CF_VL ? s->nm - j * CF_VL : CF_VL; /* valid channels */
        cf_vf bias = s->bias ? cf_vload_n(s->bias + j * CF_VL, nl) : cf_vzero();
        const float *b = buf + j * np * CF_VL;
        if (s->ch_stride == 1) {
            /* Channels innermost (NHWC): each buffered vector is a run of Y. */
            for (int px = 0; px < np; px++) {
                ptrdiff_t off = px * s->px_stride + j * CF_VL;
                cf_vf v = cf_vadd(cf_vload(b + px * CF_VL), bias);
                if (s->z)
                    v = cf_vadd(v, cf_vload_n(s->z + off, nl));
                cf_vstore_n(s->y + off, cf_vactivate(v, act, alpha, beta), nl);
            }
            continue;
        }
        /* Pixels innermost (NCHW): transpose VL pixels x VL channels in registers, so
         * each vector becomes a run of one channel's pixels.  Without a residual the
         * epilogue runs before the transpose, on the tile's pixel vectors only. */
        for (int px0 = 0; px0 < np; px0 += CF_VL) {
            int cnt = np - px0 < CF_VL ? np - px0 : CF_VL;
            cf_vf r[CF_VL];
            for (int q = 0; q < CF_VL; q++) {
                r[q] = q < cnt ? cf_vadd(cf_vload(b + (px0 + q) * CF_VL), bias) : cf_vzero();
                if (q < cnt && !s->z)
                    r[q] = cf_vactivate(r[q], act, alpha, beta);
            }
            cf_vtranspose(r);
            for (int l = 0; l < nl; l++) {
                ptrdiff_t off = (j * CF_VL + l) * s->ch_stride + px0;
                cf_vf v = r[l];
                if (s->z)
                    v = cf_vactivate(cf_vadd(v, cf_vload_n(s->z + off, cnt)), act, alpha, beta);
                cf_vstore_n(s->y + off, v, cnt);
            }
        }
    }
}

#define DBK_STORE_ACT(a) dbk_store_act(s, buf, nb, np, a)

static void dbk_store(const cf_dbk_store *s, const float *buf, int nb, int np)
{
    switch (s->p->act) {
        CF_VACT_CASES(DBK_STORE_ACT, return)
    default: /* sigmoid, tanh: per lane through libm whatever the instance */
        dbk_store_act(s, buf, nb, np, s->p->act);
        return;
    }
}

#undef DBK_STORE_ACT

/* The prefetches of reduction step `step` (an input block and tap): the next `per`
 * lines of each output block's (per: pf_lines spread over the ncb * ntaps steps), so
 * that few are in flight at a time. */
DBK_INLINE void dbk_prefetch_step(const cf_dbk_tile *t, int step, int per)
{
    const int line = CF_PREFETCH_LINE / (int)sizeof(float);
    int lo = step * per, hi = lo + per < t->pf_lines ? lo + per : t->pf_lines;
    if (hi <= lo)
        return;
    for (int j = 0; j < t->nb; j++)
        cf_prefetch_l2_run(t->pf + j * t->w_ob + lo * line,
                           (size_t)(hi - lo) * CF_PREFETCH_LINE);
}

/* One tap's products over the VL channels of one input block: `skip0` / `skip1` (constants
 * at every call) leave out the first / last pixel's, which read W's padding with it. */
DBK_INLINE void dbk_tap(cf_vf acc[4][CF_DBK_MAX_NP], const cf_dbk_tile *t, const float *xp,
                        const float *wk, const int nb, const int np, const bool rows,
                        const int px, const bool skip0, const bool skip1)
{
#pragma GCC unroll 2
    for (int ci = 0; ci < CF_VL; ci++) {
        const float *xr = rows ? xp + ci * t->x_ci : xp + ci;
        cf_vf wv[4];
#pragma GCC unroll 4
        for (int j = 0; j < nb; j++)
            wv[j] = cf_vload(wk + j * t->w_ob + ci * CF_VL);
#pragma GCC unroll 14
        for (int p = 0; p < np; p++) {
            if ((skip0 && p == 0) || (skip1 && p == np - 1))
                continue;
            cf_vf b = cf_vbcast(xr[rows ? p * px : p * CF_VL]);
#pragma GCC unroll 4
            for (int j = 0; j < nb; j++)
                acc[j][p] = cf_vfma(wv[j], b, acc[j][p]);
        }
    }
}

/* Computes the tile's sums over its share of the reduction (starting from zero or from
 * the partial sums in acc_in), then saves them to acc_out or, when the share is the
 * last, stores them through the epilogue.  `rows` and `px` (constants at every call): X
 * is read in place, one row per channel (cf_dbk_tile.x_ci), its pixels px floats apart
 * (the stride along W), instead of from the blocked layout; either way a channel step
 * broadcasts from fixed offsets of one base pointer.  A tap
 * with which the first or last pixel reads padding takes the products that leave that
 * pixel's out: on a 7-pixel row of a 3x3 kernel they are a tenth of the products, and X
 * read in place has no padding there to read. */
DBK_INLINE void dbk_run(const cf_dbk_tile *t, const cf_dbk_store *s, const int nb, const int np,
                        const bool rows, const int px)
{
    float buf[4 * CF_DBK_MAX_NP * CF_VL] __attribute__((aligned(64)));
    cf_vf acc[4][CF_DBK_MAX_NP];
#pragma GCC unroll 4
    for (int j = 0; j < nb; j++)
#pragma GCC unroll 14
        for (int p = 0; p < np; p++)
            acc[j][p] = t->acc_in ? cf_vload(t->acc_in + (j * np + p) * CF_VL) : cf_vzero();

    const int steps = t->ncb * t->ntaps;
    const int pf_per = t->pf && steps ? (t->pf_lines + steps - 1) / steps : 0;
    for (int cb = 0; cb < t->ncb; cb++) {
        const float *xc = t->x + cb * t->x_cb;
        const float *w = t->w + cb * t->w_cb;
        for (int k = 0; k < t->ntaps; k++) {
            const float *xp = xc + t->tap[k].x, *wk = w + t->tap[k].w;
            if (pf_per)
                dbk_prefetch_step(t, cb * t->ntaps + k, pf_per);
            const unsigned kw = (unsigned)t->tap[k].kw;
            const int edge = kw >= 64 ? 0
                                      : (int)(t->skip_first >> kw & 1) |
                                            (int)(t->skip_last >> kw & 1) << 1;
            switch (edge) {
            case 0:
                dbk_tap(acc, t, xp, wk, nb, np, rows, px, false, false);
                break;
            case 1:
                dbk_tap(acc, t, xp, wk, nb, np, rows, px, true, false);
                break;
            case 2:
                dbk_tap(acc, t, xp, wk, nb, np, rows, px, false, true);
                break;
            default:
                dbk_tap(acc, t, xp, wk, nb, np, rows, px, true, true);
                break;
            }
        }
    }

    float *out = t->acc_out ? t->acc_out : buf;
#pragma GCC unroll 4
    for (int j = 0; j < nb; j++)
#pragma GCC unroll 14
        for (int p = 0; p < np; p++)
            cf_vstore(out + (j * np + p) * CF_VL, acc[j][p]);
    if (!t->acc_out)
        dbk_store(s, buf, nb, np);
}

#define DBK_CASE(nb, np, rows, px)                                                         \
    case (nb) * 64 + (np):                                                                 \
        if ((np) > DBK_NP(nb))                                                             \
            return;                                                                        \
        dbk_run(t, s, nb, np, rows, px);                                                   \
        break;
#define DBK_CASES(nb, rows, px)                                                            \
    DBK_CASE(nb, 1, rows, px) DBK_CASE(nb, 2, rows, px) DBK_CASE(nb, 3, rows, px)          \
    DBK_CASE(nb, 4, rows, px) DBK_CASE(nb, 5, rows, px) DBK_CASE(nb, 6, rows, px)          \
    DBK_CASE(nb, 7, rows, px) DBK_CASE(nb, 8, rows, px) DBK_CASE(nb, 9, rows, px)          \
    DBK_CASE(nb, 10, rows, px) DBK_CASE(nb, 11, rows, px) DBK_CASE(nb, 12, rows, px)       \
    DBK_CASE(nb, 13, rows, px) DBK_CASE(nb, 14, rows, px)
#define DBK_SWITCH(rows, px)                                                               \
    switch (t->nb * 64 + t->np) {                                                          \
        DBK_CASES(1, rows, px)                                                             \
        DBK_CASES(2, rows, px)                                                             \
        DBK_CASES(3, rows, px)                                                             \
        DBK_CASES(4, rows, px)                                                             \
    default:                                                                               \
        return; /* the driver only asks for the shapes listed in max_np */                 \
    }

/* The blocked layout's tiles and, in functions of their own, those that read X in place:
 * sharing one function, the in-place code changed how the compiler laid out the blocked
 * one's (1-3% slower on stride-2 layers that did not read in place). */
static __attribute__((noinline)) void dbk_tile_blocked(const cf_dbk_tile *t, const cf_dbk_store *s)
{
    DBK_SWITCH(false, 1)
}

/* X read in place is asked for only at 16 lanes (direct_blocked.c, DBK_IN_PLACE_VL), so
 * only the AVX-512 instance has those variants: pixels 1 or 2 floats apart. */
#if defined(CF_SIMD_AVX512)
static __attribute__((noinline)) void dbk_tile_in_place1(const cf_dbk_tile *t,
                                                         const cf_dbk_store *s)
{
    DBK_SWITCH(true, 1)
}

static __attribute__((noinline)) void dbk_tile_in_place2(const cf_dbk_tile *t,
                                                         const cf_dbk_store *s)
{
    DBK_SWITCH(true, 2)
}
#endif

static void dbk_tile(const cf_dbk_tile *t, const cf_dbk_store *s)
{
#if defined(CF_SIMD_AVX512)
    if (t->x_ci) {
        if (t->x_px == 2)
            dbk_tile_in_place2(t, s);
        else
            dbk_tile_in_place1(t, s);
        return;
    }
#endif
    dbk_tile_blocked(t, s);
}

/* Stores the first n of the transposed pixels r (VL channels each) at their stride phase
 * and index (*ph, *q), advancing them. */
static inline void dbk_put_pixels(float *dst, const cf_vf *r, int n, int64_t *ph, int64_t *q,
                                  int64_t sw, int64_t wq, int64_t nph)
{
    for (int k = 0; k < n; k++) {
        if (*ph < nph)
            cf_vstore(dst + (*ph * wq + *q) * CF_VL, r[k]);
        if (++*ph == sw) {
            *ph = 0;
            ++*q;
        }
    }
}

/* VL pixels x VL channels at a time, transposed in registers, the last pixels of the row
 * (fewer than VL) by masked loads: one at a time, they were about a tenth of a grouped
 * 3x3 with 16 channels per group on 14x14 (every pixel of such a row).  The stride phase
 * and index of each pixel advance incrementally instead of by division.  Every lane of a
 * stored pixel is written (zeros past `lanes`). */
static void dbk_nchw_row(float *dst, const float *src, ptrdiff_t ch_stride, int lanes,
                         int64_t iw_lo, int64_t iw_hi, int64_t pad, int64_t sw, int64_t wq,
                         int64_t nph)
{
    int64_t wp = iw_lo + pad, ph = wp % sw, q = wp / sw;
    int64_t iw = iw_lo;
    cf_vf r[CF_VL];
    for (; iw + CF_VL <= iw_hi; iw += CF_VL) {
        for (int l = 0; l < CF_VL; l++)
            r[l] = l < lanes ? cf_vload(src + l * ch_stride + iw) : cf_vzero();
        cf_vtranspose(r);
        dbk_put_pixels(dst, r, CF_VL, &ph, &q, sw, wq, nph);
    }
    if (iw < iw_hi) {
        const int n = (int)(iw_hi - iw);
        for (int l = 0; l < CF_VL; l++)
            r[l] = l < lanes ? cf_vload_n(src + l * ch_stride + iw, n) : cf_vzero();
        cf_vtranspose(r);
        dbk_put_pixels(dst, r, n, &ph, &q, sw, wq, nph);
    }
}

const cf_dbk_kernels CF_SIMD_SYM(cf_dbk) = {
    .vl = CF_VL,
    .max_np = {0, DBK_NP(1), DBK_NP(2), DBK_NP(3), DBK_NP(4)},
    .tile = dbk_tile,
    .nchw_row = dbk_nchw_row,
};
