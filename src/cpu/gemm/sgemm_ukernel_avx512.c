/*
 * sgemm_ukernel_avx512.c - the AVX-512F microkernel: an 8 x 32 tile of C in 16 zmm
 * accumulators, and the same with 7 rows.  Compiled with -mavx512f -mfma
 * (CMakeLists.txt); only called when cf_isa_active() >= CF_ISA_AVX512F.
 *
 * Why 8 x 32: 16 independent accumulators cover the FMA latency of two 512-bit FMA
 * pipes (4 cycles x 2 pipes = 8 in flight, with room to spare); each k step loads two
 * B vectors and broadcasts 8 A values (10 loads for 16 FMAs, under the 2 loads/cycle
 * the cores sustain); and 8 rows divide the channel counts of common networks (16, 24,
 * 32, 64, 96, 144, ...) exactly, so little of the tile is wasted at the M edge.  (A
 * 12 x 32 variant measured no faster on Zen 5 and wastes more rows.)
 *
 * The last column panel uses masks instead of a scratch tile, and when at most 16
 * columns remain only one vector per row is computed.  The epilogue is applied to each
 * accumulator register just before its store, so the tile never goes through memory;
 * a column-major C (trans) is transposed in registers first.
 *
 * The 7-row variant (14 accumulators, 9 loads per 14 FMAs) is for GEMMs whose rows are
 * the pixels of a 7x7 or 14x14 map (49 and 196 rows: no row wasted, where 8 rows compute
 * 56 and 200).
 */
#include <immintrin.h>

#include "cpu/gemm/sgemm_kernels.h"

#define NR 32

/* The epilogue of one vector of the tile (row r, columns 16h..16h+15), then its store.
 * Takes the accumulator by value so it never has to leave its register. */
static inline __attribute__((always_inline)) void
finish_vec(__m512 v, int r, int h, float *c, size_t ldc, __mmask16 m, const cf_sgemm_tile_ep *ep)
{
    float *cp = c + (size_t)r * ldc + 16 * h;
    if (ep->accumulate)
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, cp));
    if (ep->bias_row)
        v = _mm512_add_ps(v, _mm512_set1_ps(ep->bias_row[r]));
    if (ep->bias_col)
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, ep->bias_col + 16 * h));
    if (ep->z)
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, ep->z + (size_t)r * ep->ldz + 16 * h));
    if (ep->clamp == CF_SGEMM_CLAMP_RELU)
        v = _mm512_max_ps(v, _mm512_setzero_ps());
    else if (ep->clamp == CF_SGEMM_CLAMP_CLIP)
        v = _mm512_min_ps(_mm512_set1_ps(ep->hi), _mm512_max_ps(_mm512_set1_ps(ep->lo), v));
    _mm512_mask_storeu_ps(cp, m, v);
}

/* Column-major C (tile_ep.trans): the 8 row vectors of columns 16h..16h+15 transposed in
 * registers into 16 columns of 8 rows, two columns per zmm (lanes 0-7 and 8-15), each
 * finished and stored as `rows` (7 or 8) contiguous floats.  Columns at or past ncols are
 * not touched. */
static inline __attribute__((always_inline)) void
finish_trans(const int rows, const __m512 v[8], int h, float *c, size_t ldc, size_t ncols,
             const cf_sgemm_tile_ep *ep)
{
    const __mmask16 rmask = rows == 8 ? 0x00ff : 0x007f;
    __m512 t[8], s[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]);
    }
    /* s[q] (rows 0-3) and s[4 + q] (rows 4-7): in 128-bit lane L, column 4L + q. */
    for (int g = 0; g < 2; g++)
        for (int i = 0; i < 2; i++) {
            s[4 * g + 2 * i] = _mm512_shuffle_ps(t[4 * g + i], t[4 * g + 2 + i], 0x44);
            s[4 * g + 2 * i + 1] = _mm512_shuffle_ps(t[4 * g + i], t[4 * g + 2 + i], 0xee);
        }
    const __m512i lo = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
    const __m512i hi = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29,
                                         30, 31);
    /* Per-row bias: the 8 rows in both halves of the vector. */
    __m512 brow = _mm512_setzero_ps();
    if (ep->bias_row) {
        brow = _mm512_maskz_loadu_ps(rmask, ep->bias_row);
        brow = _mm512_shuffle_f32x4(brow, brow, 0x44);
    }
    for (int q = 0; q < 4; q++) {
        for (int part = 0; part < 2; part++) {
            /* Columns ja (lanes 0-7) and jb (lanes 8-15) of the tile. */
            __m512 u = _mm512_permutex2var_ps(s[q], part ? hi : lo, s[4 + q]);
            size_t ja = (size_t)(16 * h + 8 * part + q), jb = ja + 4;
            __mmask16 ka = ja < ncols ? rmask : 0;
            __mmask16 kb = jb < ncols ? (__mmask16)(rmask << 8) : 0;
            /* Lanes 8-15 address column jb's rows from 8 floats before them (jb >= 4, so
             * that stays inside C's columns). */
            float *pa = c + ja * ldc, *pb = c + jb * ldc - 8;
            if (ep->accumulate)
                u = _mm512_add_ps(u, _mm512_mask_loadu_ps(_mm512_maskz_loadu_ps(ka, pa), kb, pb));
            if (ep->bias_row)
                u = _mm512_add_ps(u, brow);
            if (ep->bias_col)
                u = _mm512_add_ps(u, _mm512_mask_blend_ps(
                                         0xff00, _mm512_set1_ps(ka ? ep->bias_col[ja] : 0.0f),
                                         _mm512_set1_ps(kb ? ep->bias_col[jb] : 0.0f)));
            if (ep->z) {
                const float *za = ep->z + ja * ep->ldz, *zb = ep->z + jb * ep->ldz - 8;
                u = _mm512_add_ps(u, _mm512_mask_loadu_ps(_mm512_maskz_loadu_ps(ka, za), kb, zb));
            }
            if (ep->clamp == CF_SGEMM_CLAMP_RELU)
                u = _mm512_max_ps(u, _mm512_setzero_ps());
            else if (ep->clamp == CF_SGEMM_CLAMP_CLIP)
                u = _mm512_min_ps(_mm512_set1_ps(ep->hi), _mm512_max_ps(_mm512_set1_ps(ep->lo), u));
            _mm512_mask_storeu_ps(pa, ka, u);
            _mm512_mask_storeu_ps(pb, kb, u);
        }
    }
}

/* The tile of `rows` (7 or 8) rows and `halves` vectors per row. */
static inline __attribute__((always_inline)) void
tile_rxh(const int rows, const int halves, size_t k, const float *a, size_t a_rs, size_t a_ks,
         const float *b, size_t ldb, float *c, size_t ldc, size_t ncols, const __mmask16 mask[2],
         const cf_sgemm_tile_ep *ep)
{
    /* Named accumulators, not an array: GCC keeps arrays of vectors in memory (inside
     * the loop when only part of them is used, and through the epilogue). */
#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define DECL(r) __m512 c##r##_0 = _mm512_setzero_ps(), c##r##_1 = _mm512_setzero_ps();
#define STEP(r)                                                                          \
    if (r < rows) {                                                                      \
        __m512 av = _mm512_set1_ps(a[r * a_rs]);                                         \
        c##r##_0 = _mm512_fmadd_ps(av, b0, c##r##_0);                                    \
        if (halves == 2)                                                                 \
            c##r##_1 = _mm512_fmadd_ps(av, b1, c##r##_1);                                \
    }
#define FINISH(r)                                                                        \
    if (r < rows) {                                                                      \
        finish_vec(c##r##_0, r, 0, c, ldc, mask[0], ep);                                 \
        if (halves == 2)                                                                 \
            finish_vec(c##r##_1, r, 1, c, ldc, mask[1], ep);                             \
    }
    ROWS(DECL)
    /* Unrolled: the loop's counter, pointer steps and branch cost 1-2% of the FMA rate
     * at one k step per iteration, in L1 (8 and 7 rows alike). */
#pragma GCC unroll 4
    for (size_t kk = 0; kk < k; kk++) {
        __m512 b0 = _mm512_maskz_loadu_ps(mask[0], b + 0);
        __m512 b1 = halves == 2 ? _mm512_maskz_loadu_ps(mask[1], b + 16) : b0;
        ROWS(STEP)
        a += a_ks;
        b += ldb;
    }
    if (ep->trans) {
        const __m512 v0[8] = {c0_0, c1_0, c2_0, c3_0, c4_0, c5_0, c6_0, c7_0};
        finish_trans(rows, v0, 0, c, ldc, ncols, ep);
        if (halves == 2) {
            const __m512 v1[8] = {c0_1, c1_1, c2_1, c3_1, c4_1, c5_1, c6_1, c7_1};
            finish_trans(rows, v1, 1, c, ldc, ncols, ep);
        }
        return;
    }
    ROWS(FINISH)
#undef ROWS
#undef DECL
#undef STEP
#undef FINISH
}

static inline __attribute__((always_inline)) void
ukernel_rx32(const int rows, size_t k, const float *a, size_t a_rs, size_t a_ks,
             const float *b, size_t ldb, float *c, size_t ldc, size_t ncols,
             const cf_sgemm_tile_ep *ep)
{
    /* A local copy: the stores to C could alias *ep as far as the compiler knows, so it
     * would reload every field after each store of the epilogue. */
    const cf_sgemm_tile_ep e = *ep;
    ep = &e;
    __mmask16 mask[2];
    mask[0] = ncols >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << ncols) - 1u);
    mask[1] = ncols >= 32 ? (__mmask16)0xffff
                          : ncols > 16 ? (__mmask16)((1u << (ncols - 16)) - 1u) : 0;
    /* A with unit row stride (packed, or an NCHW X read in place as pixel rows) is by far
     * the common case: the broadcasts then use immediate offsets. */
    if (a_rs == 1) {
        if (ncols > 16)
            tile_rxh(rows, 2, k, a, 1, a_ks, b, ldb, c, ldc, ncols, mask, ep);
        else
            tile_rxh(rows, 1, k, a, 1, a_ks, b, ldb, c, ldc, ncols, mask, ep);
    } else if (ncols > 16) {
        tile_rxh(rows, 2, k, a, a_rs, a_ks, b, ldb, c, ldc, ncols, mask, ep);
    } else {
        tile_rxh(rows, 1, k, a, a_rs, a_ks, b, ldb, c, ldc, ncols, mask, ep);
    }
}

static void ukernel_8x32(size_t k, const float *a, size_t a_rs, size_t a_ks, const float *b,
                         size_t ldb, float *c, size_t ldc, size_t ncols,
                         const cf_sgemm_tile_ep *ep)
{
    ukernel_rx32(8, k, a, a_rs, a_ks, b, ldb, c, ldc, ncols, ep);
}

static void ukernel_7x32(size_t k, const float *a, size_t a_rs, size_t a_ks, const float *b,
                         size_t ldb, float *c, size_t ldc, size_t ncols,
                         const cf_sgemm_tile_ep *ep)
{
    ukernel_rx32(7, k, a, a_rs, a_ks, b, ldb, c, ldc, ncols, ep);
}

static const cf_sgemm_kernel kernel_7x32 = {CF_ISA_AVX512F, 7, NR, ukernel_7x32, true, NULL};
const cf_sgemm_kernel cf_sgemm_kernel_avx512 = {CF_ISA_AVX512F, 8, NR, ukernel_8x32, true,
                                                &kernel_7x32};
