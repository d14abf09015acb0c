/*
 * direct_small_c_kernels.h - the register-blocked tile kernel of cpu.direct_small_c,
 * written once over cpu/simd.h and included by one direct_small_c_<isa>.c per ISA.
 *
 * Per (input channel, tap) the tile loads npv vectors of staged input (VL consecutive
 * output pixels each) and broadcasts nm weights, one per output channel, so its nm * npv
 * FMAs are independent.  dsc_run is force-inlined into one function per (npv, nm) so every
 * loop has constant bounds, unrolls completely and keeps the accumulators in registers;
 * in NCHW each accumulator is a run of one output row of Y and is stored straight from
 * its register through the epilogue.
 */
#include "cpu/direct_small_c.h"
#include "cpu/simd.h"

#if defined(__GNUC__)
#define DSC_INLINE static inline __attribute__((always_inline))
#else
#define DSC_INLINE static inline
#endif

/* Register budget: the accumulators get what is left after npv input vectors and one
 * broadcast weight (32 zmm; 16 ymm, and 16 for the portable build, whose 4-lane
 * vectors map onto SSE2 / NEON registers). */
#if defined(CF_SIMD_AVX512)
#define DSC_REGS 32
#else
#define DSC_REGS 16
#endif

/* At most this many accumulators on any ISA (nm * npv <= DSC_REGS - 1 - npv).  The
 * array holding them is kept this small, and flat, so that the compiler replaces it by
 * registers (a [CF_DSC_MAX_NM][CF_DSC_MAX_NPV] array is too large for that). */
#define DSC_MAX_ACC 30

#define DSC_NM(npv)                                                                        \
    ((DSC_REGS - 1 - (npv)) / (npv) < CF_DSC_MAX_NM ? (DSC_REGS - 1 - (npv)) / (npv)         \
                                                     : CF_DSC_MAX_NM)

/* Where pixel p of the tile goes, in floats from s->y (a channel's first pixel); -1 for
 * a flat tile's lanes between rows. */
static inline ptrdiff_t dsc_px(const cf_dsc_store *s, int p)
{
    if (!s->pitch)
        return p * s->px_stride;
    int j = s->j0 + p, col = j % s->pitch;
    return col < s->ow ? j / s->pitch * s->y_row + col * s->px_stride : -1;
}

/* A flat tile into NCHW rows: each channel's sums are one run in buf, stored as the
 * pieces that fall on output rows. */
static void dsc_store_flat(const cf_dsc_store *s, const float *buf, int nm, int npv)
{
    const cf_problem *p = s->p;
    for (int i = 0; i < nm; i++) {
        const float *b = buf + i * npv * CF_VL;
        for (int px = 0; px < s->npx;) {
            int j = s->j0 + px, col = j % s->pitch;
            int run = s->npx - px < s->pitch - col ? s->npx - px : s->pitch - col;
            int n = run < s->ow - col ? run : s->ow - col;
            ptrdiff_t off = i * s->ch_stride + j / s->pitch * s->y_row + col;
            for (int q = 0; q < n; q += CF_VL) {
                int cnt = n - q < CF_VL ? n - q : CF_VL;
                cf_vf o = cf_vload_n(b + px + q, cnt);
                if (s->z)
                    o = cf_vadd(o, cf_vload_n(s->z + off + q, cnt));
                cf_vstore_n(s->y + off + q, cf_vactivate(o, p->act, p->alpha, p->beta), cnt);
            }
            px += run;
        }
    }
}

/* NHWC: channels are innermost, so VL channels x VL pixels are transposed in registers
 * and each pixel's channels are stored as one run; `act` is a constant at each call
 * (dsc_store's switch), not a jump per pixel. */
DSC_INLINE void dsc_store_nhwc(const cf_dsc_store *s, const float *buf, int nm, int npv,
                               const convfind_activation act)
{
    const cf_problem *p = s->p;
    for (int i0 = 0; i0 < nm; i0 += CF_VL) {
        int cnt = nm - i0 < CF_VL ? nm - i0 : CF_VL;
        for (int v = 0; v < npv; v++) {
            int npx = s->npx - v * CF_VL < CF_VL ? s->npx - v * CF_VL : CF_VL;
            cf_vf r[CF_VL];
            for (int q = 0; q < CF_VL; q++)
                r[q] = q < cnt ? cf_vload(buf + ((i0 + q) * npv + v) * CF_VL) : cf_vzero();
            cf_vtranspose(r);
            for (int l = 0; l < npx; l++) {
                ptrdiff_t off = dsc_px(s, v * CF_VL + l);
                if (off < 0)
                    continue;
                off += i0;
                cf_vf o = r[l];
                if (s->z)
                    o = cf_vadd(o, cf_vload_n(s->z + off, cnt));
                cf_vstore_n(s->y + off, cf_vactivate(o, act, p->alpha, p->beta), cnt);
            }
        }
    }
}

/* act(sum + z) for the tile's valid pixels (the sums start from the bias), stored in
 * Y's layout; buf holds the sums as [channel][vector][VL pixels]. */
static void dsc_store(const cf_dsc_store *s, const float *buf, int nm, int npv)
{
    const cf_problem *p = s->p;
    if (s->px_stride == 1 && s->pitch) {
        dsc_store_flat(s, buf, nm, npv);
        return;
    }
    if (s->px_stride == 1) {
        /* NCHW: each buffered vector is a run of one output channel's row; whole
         * vectors first, then the row's masked tail. */
        int whole = s->npx / CF_VL, tail = s->npx % CF_VL;
        for (int i = 0; i < nm; i++) {
            const float *b = buf + i * npv * CF_VL;
            float *y = s->y + i * s->ch_stride;
            const float *z = s->z ? s->z + i * s->ch_stride : NULL;
            for (int v = 0; v < whole; v++) {
                cf_vf o = cf_vload(b + v * CF_VL);
                if (z)
                    o = cf_vadd(o, cf_vload(z + v * CF_VL));
                cf_vstore(y + v * CF_VL, cf_vactivate(o, p->act, p->alpha, p->beta));
            }
            if (tail) {
                cf_vf o = cf_vload(b + whole * CF_VL);
                if (z)
                    o = cf_vadd(o, cf_vload_n(z + whole * CF_VL, tail));
                cf_vstore_n(y + whole * CF_VL, cf_vactivate(o, p->act, p->alpha, p->beta), tail);
            }
        }
        return;
    }
#define DSC_STORE_NHWC(a) dsc_store_nhwc(s, buf, nm, npv, a)
    switch (p->act) {
        CF_VACT_CASES(DSC_STORE_NHWC, return)
    default:
        DSC_STORE_NHWC(p->act);
        return;
    }
#undef DSC_STORE_NHWC
}

/* act(o + z) into y + off in the lanes of `bits` (off: where lane 0 would go). */
DSC_INLINE void dsc_store_bits(float *y, const float *z, ptrdiff_t off, cf_vf o, unsigned bits,
                               const convfind_activation act, float alpha, float beta)
{
    if (z)
        o = cf_vadd(o, cf_vload_mask(z + off, bits));
    cf_vstore_mask(y + off, cf_vactivate(o, act, alpha, beta), bits);
}

/* act(sum + z) from the registers into NCHW rows; `act` is a constant at every call,
 * so cf_vactivate folds to its one call-free case.  Every loop has constant bounds, or
 * the accumulators would go to memory.  A flat tile's vector that runs from one output
 * row into the next (pitch and ow are at least VL: dsc_flat_pays) is two masked
 * pieces, the end of one row and the start of the next, without the lanes between. */
DSC_INLINE void dsc_store_regs(const cf_dsc_store *s, const cf_vf *acc, const int nm,
                               const int npv, const convfind_activation act)
{
    float alpha = s->p->alpha, beta = s->p->beta;
#pragma GCC unroll 8
    for (int v = 0; v < npv; v++) {
        int n = s->npx - v * CF_VL < CF_VL ? s->npx - v * CF_VL : CF_VL;
        ptrdiff_t off = v * CF_VL;
        if (s->pitch) {
            int j = s->j0 + v * CF_VL, col = j % s->pitch;
            off = j / s->pitch * s->y_row + col;
            if (col + n > s->ow) {
                int ka = col < s->ow ? s->ow - col : 0, lb = s->pitch - col;
                unsigned a = (1u << ka) - 1u;
                unsigned b = lb < n ? ((1u << n) - 1u) & ~((1u << lb) - 1u) : 0;
                ptrdiff_t off_b = (j / s->pitch + 1) * s->y_row - lb;
#pragma GCC unroll 16
                for (int i = 0; i < nm; i++) {
                    float *y = s->y + i * s->ch_stride;
                    const float *z = s->z ? s->z + i * s->ch_stride : NULL;
                    dsc_store_bits(y, z, off, acc[i * npv + v], a, act, alpha, beta);
                    dsc_store_bits(y, z, off_b, acc[i * npv + v], b, act, alpha, beta);
                }
                continue;
            }
        }
#pragma GCC unroll 16
        for (int i = 0; i < nm; i++) {
            float *y = s->y + i * s->ch_stride + off;
            const float *z = s->z ? s->z + i * s->ch_stride + off : NULL;
            cf_vf o = acc[i * npv + v];
            if (n == CF_VL) {
                if (z)
                    o = cf_vadd(o, cf_vload(z));
                o = cf_vactivate(o, act, alpha, beta);
                if (s->stream && (uintptr_t)y % (CF_VL * sizeof(float)) == 0)
                    cf_vstream(y, o);
                else
                    cf_vstore(y, o);
            } else {
                if (z)
                    o = cf_vadd(o, cf_vload_n(z, n));
                cf_vstore_n(y, cf_vactivate(o, act, alpha, beta), n);
            }
        }
    }
}

/* Computes the tile's sums for each row, then stores them through the epilogue. */
DSC_INLINE void dsc_run(const cf_dsc_tile *t, const cf_dsc_store *s, const int nm, const int npv)
{
    const float *x = t->x;
    /* NCHW rows are stored straight from the registers (dsc_store_regs), unless the
     * activation calls libm (sigmoid, tanh): a call in this function would make the
     * compiler keep the accumulators in memory.  -1: through the buffer. */
    int inline_act = s->px_stride == 1 && s->p->act != CONVFIND_ACT_SIGMOID &&
                             s->p->act != CONVFIND_ACT_TANH
                         ? (int)s->p->act
                         : -1;
    for (int r = 0; r < t->rows; r++, x += t->x_row) {
        /* The sums start from the bias: no add per output vector afterwards (the
         * order of a sum's terms is free; the bound in the tests covers any). */
        cf_vf acc[DSC_MAX_ACC];
#pragma GCC unroll 16
        for (int i = 0; i < nm; i++) {
            cf_vf b0 = s->bias ? cf_vbcast(s->bias[i]) : cf_vzero();
#pragma GCC unroll 8
            for (int v = 0; v < npv; v++)
                acc[i * npv + v] = b0;
        }

        const float *w = t->w;
        for (int k = 0; k < t->ntaps; k++, w += t->w_tap) {
            const float *xp = x + t->tap[k];
            cf_vf xv[CF_DSC_MAX_NPV];
#pragma GCC unroll 8
            for (int v = 0; v < npv; v++)
                xv[v] = cf_vload(xp + v * CF_VL);
#pragma GCC unroll 16
            for (int i = 0; i < nm; i++) {
                cf_vf b = cf_vbcast(w[i]);
#pragma GCC unroll 8
                for (int v = 0; v < npv; v++)
                    acc[i * npv + v] = cf_vfma(b, xv[v], acc[i * npv + v]);
            }
        }

        /* This row's store, copied from *s only now: the caller has just written *s
         * field by field, and a copy at entry (one 64-byte load over those stores) waited
         * for them to reach L1 on every call, a seventh of a first layer's tile time on
         * the Xeon. */
        cf_dsc_store row = *s;
        row.y = s->y + r * s->y_row;
        row.z = s->z ? s->z + r * s->y_row : NULL;
#define DSC_STORE_REGS(a) dsc_store_regs(&row, acc, nm, npv, a)
        switch (inline_act) {
            CF_VACT_CASES(DSC_STORE_REGS, continue)
        default:
            break;
        }
#undef DSC_STORE_REGS
        /* Through a buffer: the epilogue's sigmoid and tanh call libm, and a call inside
         * this function would make the compiler keep the accumulators in memory. */
        float buf[DSC_MAX_ACC * CF_VL] __attribute__((aligned(64)));
#pragma GCC unroll 16
        for (int i = 0; i < nm; i++)
#pragma GCC unroll 8
            for (int v = 0; v < npv; v++)
                cf_vstore(buf + (i * npv + v) * CF_VL, acc[i * npv + v]);
        dsc_store(&row, buf, nm, npv);
    }
}

/* One function per tile shape (npv, nm), reached through a table: each is small enough
 * for the compiler's dataflow passes, which grow faster than linearly with a function's
 * size (one switch holding every shape's inlined body took gcc 12 two and a half minutes
 * at -O3, against half a minute for these). */
#define DSC_FN(npv, nm)                                                                    \
    static void dsc_tile_##npv##_##nm(const cf_dsc_tile *t, const cf_dsc_store *s)         \
    {                                                                                      \
        if ((nm) <= DSC_NM(npv))                                                           \
            dsc_run(t, s, nm, npv);                                                        \
    }
#define DSC_FNS(npv)                                                                       \
    DSC_FN(npv, 1) DSC_FN(npv, 2) DSC_FN(npv, 3) DSC_FN(npv, 4) DSC_FN(npv, 5)             \
    DSC_FN(npv, 6) DSC_FN(npv, 7) DSC_FN(npv, 8) DSC_FN(npv, 9) DSC_FN(npv, 10)            \
    DSC_FN(npv, 11) DSC_FN(npv, 12) DSC_FN(npv, 13) DSC_FN(npv, 14) DSC_FN(npv, 15)        \
    DSC_FN(npv, 16)
DSC_FNS(1) DSC_FNS(2) DSC_FNS(3) DSC_FNS(4) DSC_FNS(5) DSC_FNS(6) DSC_FNS(7) DSC_FNS(8)

#define DSC_ROW(npv)                                                                       \
    {NULL, dsc_tile_##npv##_1, dsc_tile_##npv##_2, dsc_tile_##npv##_3, dsc_tile_##npv##_4,  \
     dsc_tile_##npv##_5, dsc_tile_##npv##_6, dsc_tile_##npv##_7, dsc_tile_##npv##_8,        \
     dsc_tile_##npv##_9, dsc_tile_##npv##_10, dsc_tile_##npv##_11, dsc_tile_##npv##_12,     \
     dsc_tile_##npv##_13, dsc_tile_##npv##_14, dsc_tile_##npv##_15, dsc_tile_##npv##_16}

/* [npv][nm]; the driver only asks for the shapes listed in max_nm. */
static void (*const dsc_tiles[CF_DSC_MAX_NPV + 1][CF_DSC_MAX_NM + 1])(const cf_dsc_tile *,
                                                                      const cf_dsc_store *) = {
    {NULL}, DSC_ROW(1), DSC_ROW(2), DSC_ROW(3), DSC_ROW(4),
    DSC_ROW(5), DSC_ROW(6), DSC_ROW(7), DSC_ROW(8),
};

static void dsc_tile(const cf_dsc_tile *t, const cf_dsc_store *s)
{
    dsc_tiles[t->npv][t->nm](t, s);
}

static void dsc_fence(void)
{
    cf_vstream_fence();
}

/* The even and odd lanes of p[0 .. 2 VL): one pass over the floats for both phases of a
 * stride-2 row (cpu/simd.h's cf_vload_even gives one phase per pass). */
static inline void dsc_split2(const float *p, cf_vf *even, cf_vf *odd)
{
#if defined(CF_SIMD_AVX512)
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                         28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27,
                                         29, 31);
    cf_vf a = cf_vload(p), b = cf_vload(p + CF_VL);
    *even = _mm512_permutex2var_ps(a, ie, b);
    *odd = _mm512_permutex2var_ps(a, io, b);
#elif defined(CF_SIMD_AVX2)
    cf_vf a = cf_vload(p), b = cf_vload(p + CF_VL);
    __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    __m256 o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    *even = _mm256_castpd_ps(
        _mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
    *odd = _mm256_castpd_ps(
        _mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
#else
    for (int l = 0; l < CF_VL; l++) {
        (*even)[l] = p[2 * l];
        (*odd)[l] = p[2 * l + 1];
    }
#endif
}

/* Stages `rows` input rows (row r at src + r * src_row, w pixels `step` floats apart)
 * into the slot's layout (direct_small_c.h): phase ph of row r, at dst + r * dst_row +
 * ph * wq, gets pixel q * sw + ph at index b + q.  Only pixels are written, plus zeros
 * in the rest of the last vector that holds some (a row's whole vectors are b, b + VL,
 * ... up to b + ceil(w / sw) rounded up to VL, for every row and phase alike); every
 * other float of a phase is zero from the slot's clearing and never written, which is
 * what makes the padding free.  src NULL: the rows (all sw * wq floats) are zeroed, for
 * input rows outside the image.  When consecutive floats of the row alternate at most
 * between two phases (step * sw of 1 or 2: NCHW at stride 1 or 2, NHWC with one or two
 * channels at stride 1) the row goes in whole vectors, one read of step * sw * VL floats
 * per vector of each phase (both phases of a stride-2 row from one read), the last one
 * through a copy that masked loads fill, so that nothing past the row is read (a copy
 * through memset and memcpy there was 10-23% of the time of ResNeXt's grouped 3x3 with 4
 * and 8 channels per group, one thread at AVX-512); any other row goes one float at a
 * time. */
static void dsc_stage(float *dst, ptrdiff_t dst_row, int64_t rows, const float *src,
                      ptrdiff_t src_row, int64_t w, ptrdiff_t step, int64_t sw, int64_t wq,
                      int64_t b)
{
    int64_t period = step * sw, nf = (w - 1) * step + 1; /* floats from the first pixel */
    int64_t blk = period * CF_VL, nb = src ? (nf + blk - 1) / blk : 0;
    const int rem = src ? (int)(nf % blk) : 0; /* floats in a last block they do not fill */
    for (int64_t r = 0; r < rows; r++, dst += dst_row) {
        if (!src) {
            for (int64_t q = 0; q < sw * wq; q += CF_VL)
                cf_vstore(dst + q, cf_vzero());
            continue;
        }
        const float *x = src + r * src_row;
        float *d0 = dst + b;
        if (period > 2) {
            /* Phase by phase: no division per float (a % and a / for each made staging
             * a third of an NHWC stem's time). */
            for (int64_t ph = 0; ph < sw && ph < w; ph++) {
                float *d = d0 + ph * wq;
                const float *xs = x + ph * step;
                for (int64_t q = 0, n = (w - ph + sw - 1) / sw; q < n; q++)
                    d[q] = xs[q * period];
            }
            continue;
        }
        for (int64_t j = 0; j < nb; j++) {
            const float *xp = x + j * blk;
            float t[2 * CF_VL];
            if (j == nb - 1 && rem) {
                cf_vstore(t, rem < CF_VL ? cf_vload_n(xp, rem) : cf_vload(xp));
                cf_vstore(t + CF_VL,
                          rem > CF_VL ? cf_vload_n(xp + CF_VL, rem - CF_VL) : cf_vzero());
                xp = t;
            }
            if (period == 1) {
                cf_vstore(d0 + j * CF_VL, cf_vload(xp));
                continue;
            }
            cf_vf e, o;
            dsc_split2(xp, &e, &o);
            cf_vstore(d0 + j * CF_VL, e);
            if (sw == 2)
                cf_vstore(d0 + wq + j * CF_VL, o);
        }
    }
}

const cf_dsc_kernels CF_SIMD_SYM(cf_dsc) = {
    .vl = CF_VL,
    .max_nm = {0, DSC_NM(1), DSC_NM(2), DSC_NM(3), DSC_NM(4), DSC_NM(5), DSC_NM(6), DSC_NM(7),
               DSC_NM(8)},
    .tile = dsc_tile,
    .fence = dsc_fence,
    .stage = dsc_stage,
};
