/*
 * sgemm_ukernel_avx512.c - the AVX-512F microkernel: an 8 x 32 tile of C in 16 zmm
 * accumulators, and the same with 7 and with 14 rows.  Compiled with -mavx512f -mfma
 * (CMakeLists.txt); cpu/kernel_table.c lists it only where the machine runs it.
 *
 * Why 8 x 32: 16 independent accumulators cover the FMA latency of two 512-bit FMA
 * pipes (4 cycles x 2 pipes = 8 in flight, with room to spare); each k step loads two
 * B vectors and broadcasts 8 A values (10 loads for 16 FMAs, under the 2 loads/cycle
 * the cores sustain); and 8 rows divide the channel counts of common networks (16, 24,
 * 32, 64, 96, 144, ...) exactly, so little of the tile is wasted at the M edge.  (A
 * 12 x 32 variant measured no faster on Zen 5 and wastes more rows.)
 *
 * The last column panel uses masks instead of a scratch tile, and when at most 16
 * columns remain only one vector per row is computed.  The epilogue is applied to the
 * accumulator registers before their stores, so the tile never goes through memory; a
 * column-major C (trans) is transposed in registers first.  Each part of the epilogue is
 * one branch over all rows and the stores follow as straight-line code: a branch per
 * part and vector cost about 10% of the tile at K = 16 (K = 16 to 32 are common in
 * MobileNet's 1x1 layers).
 *
 * The 7-row variant (14 accumulators, 9 loads per 14 FMAs) is for GEMMs whose rows are
 * the pixels of a 7x7 map (49 rows: no row wasted, where 8 rows compute 56), and the
 * 14-row one (28 accumulators, 16 loads per 28 FMAs) for 14x14 maps (196 rows).  With a
 * column-major C (an NCHW output) their tiles are transposed in registers and stored a
 * column at a time; the 14-row tile needs half the stores of two 7-row ones, and those
 * stores, not the shuffles, are what the transposed store costs (196 x 384 x 64, one
 * thread: 7 rows 40.6 us, 14 rows 37.8 us, a row-major store 36.0 us).  Tiles of up to
 * 8 rows keep their own 8 x 16 transpose (24 shuffles where the 16 x 16 one takes 64):
 * through the 16 x 16 one the 7-row kernel measured 2% slower.
 */
#include <immintrin.h>

#include "cpu/gemm/sgemm_kernels.h"

#define NR 32

/* The clamp of the epilogue. */
static inline __attribute__((always_inline)) __m512 clamp_vec(__m512 v, const cf_sgemm_tile_ep *ep)
{
    if (ep->clamp == CF_SGEMM_CLAMP_RELU)
        v = _mm512_max_ps(v, _mm512_setzero_ps());
    else if (ep->clamp == CF_SGEMM_CLAMP_CLIP)
        v = _mm512_min_ps(_mm512_set1_ps(ep->hi), _mm512_max_ps(_mm512_set1_ps(ep->lo), v));
    return v;
}

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
    v = clamp_vec(v, ep);
    _mm512_mask_storeu_ps(cp, m, v);
}

/* The epilogue parts that need nothing from C or z (bias, clamp), applied to the `rows`
 * row vectors of columns 16h..16h+15 before a transpose: one branch per part, each over
 * all rows, in the order of finish_vec. */
static inline __attribute__((always_inline)) void
epilogue_rows(const int rows, __m512 *v, int h, size_t ncols, const cf_sgemm_tile_ep *ep)
{
    if (ep->bias_row)
#pragma GCC unroll 16
        for (int r = 0; r < rows; r++)
            v[r] = _mm512_add_ps(v[r], _mm512_set1_ps(ep->bias_row[r]));
    if (ep->bias_col) {
        const size_t left = ncols - 16 * (size_t)h; /* >= 1 */
        const __mmask16 cm = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
        const __m512 bcol = _mm512_maskz_loadu_ps(cm, ep->bias_col + 16 * h);
#pragma GCC unroll 16
        for (int r = 0; r < rows; r++)
            v[r] = _mm512_add_ps(v[r], bcol);
    }
    if (ep->clamp != CF_SGEMM_CLAMP_NONE)
#pragma GCC unroll 16
        for (int r = 0; r < rows; r++)
            v[r] = clamp_vec(v[r], ep);
}

/* The last step of finish_trans: s[q] and s[4 + q] hold rows 0-3 and 4-7 of columns
 * 4L + q (128-bit lane L); each pair of columns is gathered into one zmm and stored.
 * `late`: the epilogue is applied here (it reads C or z), else it was already applied.
 * `full`: all 16 columns are stored (constant masks). */
static inline __attribute__((always_inline)) void
trans_store(const bool late, const bool full, const int rows, const __m512 s[8], int h,
            float *c, size_t ldc, size_t ncols, const cf_sgemm_tile_ep *ep)
{
    const __mmask16 rmask = rows == 8 ? 0x00ff : 0x007f;
    const __m512i lo = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
    const __m512i hi = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29,
                                         30, 31);
    /* Per-row bias: the 8 rows in both halves of the vector. */
    __m512 brow = _mm512_setzero_ps();
    if (late && ep->bias_row) {
        brow = _mm512_maskz_loadu_ps(rmask, ep->bias_row);
        brow = _mm512_shuffle_f32x4(brow, brow, 0x44);
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) {
#pragma GCC unroll 2
        for (int part = 0; part < 2; part++) {
            /* Columns ja (lanes 0-7) and jb (lanes 8-15) of the tile. */
            __m512 u = _mm512_permutex2var_ps(s[q], part ? hi : lo, s[4 + q]);
            size_t ja = (size_t)(16 * h + 8 * part + q), jb = ja + 4;
            /* Branch-free masks: a column past ncols stores nothing. */
            __mmask16 ka = (__mmask16)(rmask & (0u - (unsigned)(full || ja < ncols)));
            __mmask16 kb = (__mmask16)((rmask << 8) & (0u - (unsigned)(full || jb < ncols)));
            /* Lanes 8-15 address column jb's rows from 8 floats before them (jb >= 4, so
             * that stays inside C's columns). */
            float *pa = c + ja * ldc, *pb = c + jb * ldc - 8;
            if (late) {
                if (ep->accumulate)
                    u = _mm512_add_ps(u, _mm512_mask_loadu_ps(_mm512_maskz_loadu_ps(ka, pa), kb,
                                                              pb));
                if (ep->bias_row)
                    u = _mm512_add_ps(u, brow);
                if (ep->bias_col)
                    u = _mm512_add_ps(u, _mm512_mask_blend_ps(
                                             0xff00, _mm512_set1_ps(ka ? ep->bias_col[ja] : 0.0f),
                                             _mm512_set1_ps(kb ? ep->bias_col[jb] : 0.0f)));
                if (ep->z) {
                    const float *za = ep->z + ja * ep->ldz, *zb = ep->z + jb * ep->ldz - 8;
                    u = _mm512_add_ps(u, _mm512_mask_loadu_ps(_mm512_maskz_loadu_ps(ka, za), kb,
                                                              zb));
                }
                u = clamp_vec(u, ep);
            }
            _mm512_mask_storeu_ps(pa, ka, u);
            _mm512_mask_storeu_ps(pb, kb, u);
        }
    }
}

/* The first two steps of a transpose, for `groups` groups of 4 row vectors (a compile-time
 * constant): out[4g + q] holds, in each 128-bit lane L, rows 4g..4g+3 of column 4L + q.
 * What is left is moving 128-bit lanes between the groups, which the 8- and 16-row
 * stores below do each their own way. */
static inline __attribute__((always_inline)) void
transpose_4x4_lanes(const __m512 *r, __m512 *out, const int groups)
{
    __m512 t[16];
#pragma GCC unroll 8
    for (int i = 0; i < 2 * groups; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
#pragma GCC unroll 4
    for (int g = 0; g < groups; g++)
#pragma GCC unroll 2
        for (int i = 0; i < 2; i++) {
            out[4 * g + 2 * i] = _mm512_shuffle_ps(t[4 * g + i], t[4 * g + 2 + i], 0x44);
            out[4 * g + 2 * i + 1] = _mm512_shuffle_ps(t[4 * g + i], t[4 * g + 2 + i], 0xee);
        }
}

/* Column-major C (tile_ep.trans): the 8 row vectors of columns 16h..16h+15 transposed in
 * registers into 16 columns of 8 rows, two columns per zmm (lanes 0-7 and 8-15), each
 * stored as `rows` (7 or 8) contiguous floats.  Columns at or past ncols are not touched.
 * When nothing is read from C or z (no accumulate, no residual: the usual case), the
 * epilogue is applied to the row vectors before the transpose, in the same order, so the
 * transpose and the stores are straight-line code; otherwise to each transposed column
 * pair.  Every loop is unrolled so the vector arrays stay in registers (with a loop left
 * rolled they went through the stack: 196 x 384 x 64 took 44.3 us instead of 40.3). */
static inline __attribute__((always_inline)) void
finish_trans(const int rows, __m512 v[8], int h, float *c, size_t ldc, size_t ncols,
             const cf_sgemm_tile_ep *ep)
{
    const bool late = ep->accumulate || ep->z;
    if (!late)
        epilogue_rows(rows, v, h, ncols, ep);
    /* s[q] (rows 0-3) and s[4 + q] (rows 4-7): in 128-bit lane L, column 4L + q. */
    __m512 s[8];
    transpose_4x4_lanes(v, s, 2);
    if (late)
        trans_store(true, false, rows, s, h, c, ldc, ncols, ep);
    else if (ncols >= 16 * (size_t)h + 16)
        trans_store(false, true, rows, s, h, c, ldc, ncols, ep);
    else
        trans_store(false, false, rows, s, h, c, ldc, ncols, ep);
}

/* Column-major C from the 14-row kernel: the 14 row vectors of columns 16h..16h+15
 * (rows 14 and 15 zero) transposed in registers, 16 x 16, into one zmm per column, each
 * stored as 14 contiguous floats: half the stores of two 7-row tiles, whose 32 masked
 * stores of 7 floats bound the 7-row kernel's transposed store (about 70 cycles a tile).
 * The epilogue is applied as in finish_trans. */
static inline __attribute__((always_inline)) void
finish_trans14(__m512 r[16], int h, float *c, size_t ldc, size_t ncols,
               const cf_sgemm_tile_ep *ep)
{
    const bool late = ep->accumulate || ep->z;
    if (!late)
        epilogue_rows(14, r, h, ncols, ep);
    r[14] = r[15] = _mm512_setzero_ps();
    /* u[4g + q]: in 128-bit lane L, rows 4g..4g+3 of column 4L + q. */
    __m512 u[16];
    transpose_4x4_lanes(r, u, 4);
    const __mmask16 rmask = 0x3fff;
    const __m512 brow = late && ep->bias_row ? _mm512_maskz_loadu_ps(rmask, ep->bias_row)
                                             : _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) {
        const __m512 xl = _mm512_shuffle_f32x4(u[q], u[4 + q], 0x44);
        const __m512 xh = _mm512_shuffle_f32x4(u[q], u[4 + q], 0xee);
        const __m512 yl = _mm512_shuffle_f32x4(u[8 + q], u[12 + q], 0x44);
        const __m512 yh = _mm512_shuffle_f32x4(u[8 + q], u[12 + q], 0xee);
        __m512 col[4] = {_mm512_shuffle_f32x4(xl, yl, 0x88), _mm512_shuffle_f32x4(xl, yl, 0xdd),
                         _mm512_shuffle_f32x4(xh, yh, 0x88), _mm512_shuffle_f32x4(xh, yh, 0xdd)};
#pragma GCC unroll 4
        for (int l = 0; l < 4; l++) {
            const size_t j = 16 * (size_t)h + (size_t)(4 * l + q); /* column of the tile */
            const __mmask16 m = (__mmask16)(rmask & (0u - (unsigned)(j < ncols)));
            float *cp = c + j * ldc;
            __m512 v = col[l];
            if (late) {
                if (ep->accumulate)
                    v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, cp));
                if (ep->bias_row)
                    v = _mm512_add_ps(v, brow);
                if (ep->bias_col)
                    v = _mm512_add_ps(v, _mm512_set1_ps(m ? ep->bias_col[j] : 0.0f));
                if (ep->z)
                    v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, ep->z + j * ep->ldz));
                v = clamp_vec(v, ep);
            }
            _mm512_mask_storeu_ps(cp, m, v);
        }
    }
}

/* The tile of `rows` (1, 7, 8 or 14) rows and `halves` vectors per row; `whole`: all 32
 * columns are there, so B's rows load without masks. */
static inline __attribute__((always_inline)) void
tile_rxh(const int rows, const int halves, const bool whole, size_t k, const float *a,
         size_t a_rs, size_t a_ks,
         const float *b, size_t ldb, float *c, size_t ldc, size_t ncols, const __mmask16 mask[2],
         const cf_sgemm_tile_ep *ep)
{
    /* Named accumulators, not an array: GCC keeps arrays of vectors in memory (inside
     * the loop when only part of them is used, and through the epilogue). */
#define ROWS(X)                                                                          \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13)
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
        finish_vec(c##r##_0, r, 0, c, ldc, m0, ep);                                      \
        if (halves == 2)                                                                 \
            finish_vec(c##r##_1, r, 1, c, ldc, m1, ep);                                  \
    }
#define BIAS_ROW(r)                                                                      \
    if (r < rows) {                                                                      \
        const __m512 br = _mm512_set1_ps(ep->bias_row[r]);                               \
        c##r##_0 = _mm512_add_ps(c##r##_0, br);                                          \
        if (halves == 2)                                                                 \
            c##r##_1 = _mm512_add_ps(c##r##_1, br);                                      \
    }
#define BIAS_COL(r)                                                                      \
    if (r < rows) {                                                                      \
        c##r##_0 = _mm512_add_ps(c##r##_0, bc0);                                         \
        if (halves == 2)                                                                 \
            c##r##_1 = _mm512_add_ps(c##r##_1, bc1);                                     \
    }
#define CLAMP(r)                                                                         \
    if (r < rows) {                                                                      \
        c##r##_0 = clamp_vec(c##r##_0, ep);                                              \
        if (halves == 2)                                                                 \
            c##r##_1 = clamp_vec(c##r##_1, ep);                                          \
    }
#define STORE(r)                                                                         \
    if (r < rows) {                                                                      \
        _mm512_mask_storeu_ps(c + (size_t)r * ldc, m0, c##r##_0);                        \
        if (halves == 2)                                                                 \
            _mm512_mask_storeu_ps(c + (size_t)r * ldc + 16, m1, c##r##_1);               \
    }
    /* A whole tile's masks are constants, so its stores and epilogue loads are plain. */
    const __mmask16 m0 = whole ? (__mmask16)0xffff : mask[0];
    const __mmask16 m1 = whole ? (__mmask16)0xffff : mask[1];
    ROWS(DECL)
    size_t kk = 0;
    if (rows == 1) {
        /* One row has one or two sums, each FMA waiting on the last: four k steps at a
         * time go to four sets of sums (the unused rows 1-3's), added up after. */
#define STEP1(j)                                                                         \
    {                                                                                    \
        const __m512 av = _mm512_set1_ps(a[(j) * a_ks]);                                 \
        const float *bj = b + (j) * ldb;                                                 \
        c##j##_0 = _mm512_fmadd_ps(av, whole ? _mm512_loadu_ps(bj)                       \
                                             : _mm512_maskz_loadu_ps(mask[0], bj),       \
                                   c##j##_0);                                            \
        if (halves == 2)                                                                 \
            c##j##_1 = _mm512_fmadd_ps(av, whole ? _mm512_loadu_ps(bj + 16)              \
                                                 : _mm512_maskz_loadu_ps(mask[1], bj + 16), \
                                       c##j##_1);                                        \
    }
        for (; kk + 4 <= k; kk += 4) {
            STEP1(0) STEP1(1) STEP1(2) STEP1(3)
            a += 4 * a_ks;
            b += 4 * ldb;
        }
#undef STEP1
        c0_0 = _mm512_add_ps(_mm512_add_ps(c0_0, c1_0), _mm512_add_ps(c2_0, c3_0));
        c0_1 = _mm512_add_ps(_mm512_add_ps(c0_1, c1_1), _mm512_add_ps(c2_1, c3_1));
    }
    /* Unrolled: the loop's counter, pointer steps and branch cost 1-2% of the FMA rate
     * at one k step per iteration, in L1 (8 and 7 rows alike). */
#pragma GCC unroll 4
    for (; kk < k; kk++) {
        /* A masked load in this loop cost an Intel Xeon about a quarter of its FMA rate
         * (a tile in L1: 175 against 230 GFLOP/s on one core). */
        __m512 b0 = whole ? _mm512_loadu_ps(b) : _mm512_maskz_loadu_ps(mask[0], b);
        __m512 b1 = halves == 1 ? b0
                    : whole     ? _mm512_loadu_ps(b + 16)
                                : _mm512_maskz_loadu_ps(mask[1], b + 16);
        ROWS(STEP)
        a += a_ks;
        b += ldb;
    }
    if (ep->trans && rows == 14) {
        __m512 v0[16] = {c0_0, c1_0, c2_0, c3_0, c4_0, c5_0, c6_0,
                         c7_0, c8_0, c9_0, c10_0, c11_0, c12_0, c13_0};
        finish_trans14(v0, 0, c, ldc, ncols, ep);
        if (halves == 2) {
            __m512 v1[16] = {c0_1, c1_1, c2_1, c3_1, c4_1, c5_1, c6_1,
                             c7_1, c8_1, c9_1, c10_1, c11_1, c12_1, c13_1};
            finish_trans14(v1, 1, c, ldc, ncols, ep);
        }
        return;
    }
    if (ep->trans) {
        __m512 v0[8] = {c0_0, c1_0, c2_0, c3_0, c4_0, c5_0, c6_0, c7_0};
        finish_trans(rows, v0, 0, c, ldc, ncols, ep);
        if (halves == 2) {
            __m512 v1[8] = {c0_1, c1_1, c2_1, c3_1, c4_1, c5_1, c6_1, c7_1};
            finish_trans(rows, v1, 1, c, ldc, ncols, ep);
        }
        return;
    }
    if (ep->accumulate || ep->z) {
        ROWS(FINISH)
        return;
    }
    /* Nothing to read from C or z (the usual case): each part of the epilogue is one
     * branch over all rows, then the stores are straight-line code. */
    if (ep->bias_row) {
        ROWS(BIAS_ROW)
    }
    if (ep->bias_col) {
        const __m512 bc0 = _mm512_maskz_loadu_ps(m0, ep->bias_col);
        const __m512 bc1 = halves == 2 ? _mm512_maskz_loadu_ps(m1, ep->bias_col + 16) : bc0;
        ROWS(BIAS_COL)
    }
    if (ep->clamp != CF_SGEMM_CLAMP_NONE) {
        ROWS(CLAMP)
    }
    ROWS(STORE)
#undef ROWS
#undef DECL
#undef STEP
#undef FINISH
#undef BIAS_ROW
#undef BIAS_COL
#undef CLAMP
#undef STORE
}

/* One tile variant as its own function: `rows` rows, `halves` vectors per row, `whole`
 * (all NR columns: no masks) and A's row stride fixed to 1 when `unit` (the broadcasts
 * then use immediate offsets); the tile is column j0 of the block the epilogue `ep`
 * describes.  Kept out of line on purpose: inlined into one kernel function per row
 * count, the six variants made that function so large that clang with ASan and UBSan
 * took over ten minutes to compile this file (about three this way), at the same speed.
 * And one tile per call: with the loop over column panels inside, GCC kept that loop's
 * state in registers across the tile and spilled a dozen others, so the MobileNet layers
 * on 112x112 maps (K = 16) took 1.3x as long.  The local copy of the epilogue is made
 * here, inside each variant: the stores to C could alias *ep as far as the compiler
 * knows, so it would reload every field after each store.  It is read field by field
 * from the caller's own copy, which the caller never rewrites: the copy of a copy
 * stepped from tile to tile was read in 8-byte words, whose loads cannot be forwarded
 * from the byte stores of its bool fields, so every tile waited for the last tile's
 * stores to C to drain (MobileNet's 112x112 K = 16 layers 1.08x as long). */
#define TILE_FN(rows, halves, whole, unit)                                               \
    static __attribute__((noinline)) void tile_##rows##_##halves##_##whole##_##unit(   \
        size_t k, const float *a, size_t a_rs, size_t a_ks, const float *b, size_t ldb,   \
        float *c, size_t ldc, size_t ncols, const __mmask16 mask[2], size_t j0,           \
        const cf_sgemm_tile_ep *ep)                                                       \
    {                                                                                     \
        cf_sgemm_tile_ep e = *ep;                                                         \
        if (e.bias_col)                                                                   \
            e.bias_col += j0;                                                             \
        if (e.z)                                                                          \
            e.z += j0 * (e.trans ? e.ldz : 1);                                            \
        tile_rxh(rows, halves, whole, k, a, unit ? 1 : a_rs, a_ks, b, ldb, c, ldc, ncols, \
                 mask, &e);                                                               \
    }

/* The kernel of one row count: its six tile variants, and the entry point that walks the
 * column panels (sgemm.h), each whole one through a `whole` variant and a last partial
 * one through a masked variant, picked by A's row stride too (unit stride, packed A or an
 * NCHW X read in place as pixel rows, is by far the common case). */
#define UKERNEL(rows)                                                                    \
    TILE_FN(rows, 2, 1, 1)                                                               \
    TILE_FN(rows, 2, 0, 1)                                                               \
    TILE_FN(rows, 1, 0, 1)                                                               \
    TILE_FN(rows, 2, 1, 0)                                                               \
    TILE_FN(rows, 2, 0, 0)                                                               \
    TILE_FN(rows, 1, 0, 0)                                                               \
    static void ukernel_##rows##x32(size_t k, const float *a, size_t a_rs, size_t a_ks,  \
                                    const float *b, size_t ldb, size_t b_panel, float *c, \
                                    size_t ldc, size_t ncols, const cf_sgemm_tile_ep *ep) \
    {                                                                                    \
        const size_t c_step = ep->trans ? NR * ldc : NR;                                 \
        __mmask16 mask[2] = {(__mmask16)0xffff, (__mmask16)0xffff};                      \
        size_t j = 0;                                                                    \
        for (; j + NR <= ncols; j += NR) {                                               \
            if (a_rs == 1)                                                               \
                tile_##rows##_2_1_1(k, a, a_rs, a_ks, b, ldb, c, ldc, NR, mask, j, ep);  \
            else                                                                         \
                tile_##rows##_2_1_0(k, a, a_rs, a_ks, b, ldb, c, ldc, NR, mask, j, ep);  \
            b += b_panel;                                                                \
            c += c_step;                                                                 \
        }                                                                                \
        const size_t left = ncols - j;                                                   \
        if (left == 0)                                                                   \
            return;                                                                      \
        mask[0] = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);       \
        mask[1] = left > 16 ? (__mmask16)((1u << (left - 16)) - 1u) : 0;                 \
        if (a_rs == 1) {                                                                 \
            if (left > 16)                                                               \
                tile_##rows##_2_0_1(k, a, a_rs, a_ks, b, ldb, c, ldc, left, mask, j, ep); \
            else                                                                         \
                tile_##rows##_1_0_1(k, a, a_rs, a_ks, b, ldb, c, ldc, left, mask, j, ep); \
        } else if (left > 16) {                                                          \
            tile_##rows##_2_0_0(k, a, a_rs, a_ks, b, ldb, c, ldc, left, mask, j, ep);    \
        } else {                                                                         \
            tile_##rows##_1_0_0(k, a, a_rs, a_ks, b, ldb, c, ldc, left, mask, j, ep);    \
        }                                                                                \
    }

UKERNEL(8)
UKERNEL(7)
UKERNEL(14)
UKERNEL(1)

static const cf_sgemm_kernel kernel_7x32 = {CF_ISA_AVX512F, 7, NR, ukernel_7x32, true, NULL,
                                            NULL, NULL};
static const cf_sgemm_kernel kernel_14x32 = {CF_ISA_AVX512F, 14, NR, ukernel_14x32, true, NULL,
                                             NULL, NULL};
/* Column-major tiles of one row go through the driver's scratch tile: the transposed
 * store works on four rows at a time. */
static const cf_sgemm_kernel kernel_1x32 = {CF_ISA_AVX512F, 1, NR, ukernel_1x32, false, NULL,
                                            NULL, NULL};
const cf_sgemm_kernel cf_sgemm_kernel_avx512 = {CF_ISA_AVX512F, 8, NR, ukernel_8x32, true,
                                                &kernel_7x32, &kernel_14x32, &kernel_1x32};
