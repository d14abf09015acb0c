/*
 * sgemm_ukernel_avx2.c - the AVX2 + FMA microkernel: a 6 x 16 tile of C in 12 ymm
 * accumulators.  Compiled with -mavx2 -mfma (CMakeLists.txt); cpu/kernel_table.c lists
 * it only where the machine runs it.
 *
 * Why 6 x 16: with 16 ymm registers, 12 accumulators + 2 B vectors + 1 broadcast is the
 * largest block that fits, and 12 independent FMA chains cover two FMA pipes.  Only a
 * partial last column panel is read through lane masks (vmaskmov), and it is written in
 * plain stores of 4, 2 and 1 floats (cf_vstore_n): on AMD a masked store costs several
 * times a plain one, and the epilogue's twelve of them on every tile were measured at
 * 1.2-1.35x oneDNN's AVX2 time on MobileNetV2's short-K 1x1 layers.  With at most 8
 * columns left only one vector per row is computed.  A one-row variant (mr1) serves Convs
 * with one output pixel.
 */
#include <immintrin.h>
#include <stdbool.h>

#define CF_SIMD_AVX2
#include "cpu/simd.h"

#include "cpu/gemm/sgemm_kernels.h"

#define MR 6
#define NR 16

/* Loads and stores of one vector of a row: plain for a full tile; otherwise masked loads
 * and stores of the first ncols - 8h floats. */
#define LOAD(p, h) (full ? _mm256_loadu_ps(p) : _mm256_maskload_ps((p), mask[h]))
#define STORE(p, h, v)                                                                   \
    (full ? _mm256_storeu_ps((p), (v)) : cf_vstore_n((p), (v), (int)ncols - 8 * (h)))

/* The tile of `rows` (6 or 1) rows and `halves` vectors per row, column j0 of the block
 * the epilogue `ep` describes. */
static inline __attribute__((always_inline)) void
tile_rxh(const int rows, const int halves, const bool full, size_t k, const float *a,
         size_t a_rs, size_t a_ks, const float *b, size_t ldb, float *c, size_t ldc,
         size_t ncols, const __m256i mask[2], size_t j0, const cf_sgemm_tile_ep *ep)
{
    /* Named accumulators, not an array, and the epilogue applied to them in place: an
     * array of vectors (or a loop over one) made GCC keep the tile on the stack, so
     * every epilogue part was a load, an add and a store per vector.  Each part is one
     * branch over all rows. */
#define ALL_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define IF_ROW(X, r)                                                                     \
    if ((r) < rows) {                                                                    \
        X(r)                                                                             \
    }
#define ROWS(X)                                                                          \
    IF_ROW(X, 0) IF_ROW(X, 1) IF_ROW(X, 2) IF_ROW(X, 3) IF_ROW(X, 4) IF_ROW(X, 5)
#define BOTH(r, OP)                                                                      \
    {                                                                                    \
        c##r##_0 = OP(c##r##_0, r, 0);                                                   \
        if (halves == 2)                                                                 \
            c##r##_1 = OP(c##r##_1, r, 1);                                               \
    }
#define DECL(r) __m256 c##r##_0 = _mm256_setzero_ps(), c##r##_1 = _mm256_setzero_ps();
#define STEP(r)                                                                          \
    {                                                                                    \
        __m256 av = _mm256_broadcast_ss(a + r * a_rs);                                   \
        c##r##_0 = _mm256_fmadd_ps(av, b0, c##r##_0);                                    \
        if (halves == 2)                                                                 \
            c##r##_1 = _mm256_fmadd_ps(av, b1, c##r##_1);                                \
    }
    ALL_ROWS(DECL)
    size_t kk = 0;
    if (rows == 1) {
        /* One row has one or two sums, each FMA waiting on the last: four k steps at a
         * time go to four sets of sums (the unused rows 1-3's), added up after. */
#define STEP1(j)                                                                         \
    {                                                                                    \
        const __m256 av = _mm256_broadcast_ss(a + (j) * a_ks);                           \
        c##j##_0 = _mm256_fmadd_ps(av, LOAD(b + (j) * ldb, 0), c##j##_0);                \
        if (halves == 2)                                                                 \
            c##j##_1 = _mm256_fmadd_ps(av, LOAD(b + (j) * ldb + 8, 1), c##j##_1);        \
    }
        for (; kk + 4 <= k; kk += 4) {
            STEP1(0) STEP1(1) STEP1(2) STEP1(3)
            a += 4 * a_ks;
            b += 4 * ldb;
        }
#undef STEP1
        c0_0 = _mm256_add_ps(_mm256_add_ps(c0_0, c1_0), _mm256_add_ps(c2_0, c3_0));
        c0_1 = _mm256_add_ps(_mm256_add_ps(c0_1, c1_1), _mm256_add_ps(c2_1, c3_1));
    }
    for (; kk < k; kk++) {
        __m256 b0 = LOAD(b + 0, 0);
        __m256 b1 = halves == 2 ? LOAD(b + 8, 1) : b0;
        ROWS(STEP)
        a += a_ks;
        b += ldb;
    }
#define ADD_C(v, r, h) _mm256_add_ps(v, LOAD(c + (size_t)r * ldc + 8 * h, h))
#define ADD_ROW(v, r, h) _mm256_add_ps(v, brow##r)
#define ADD_COL(v, r, h) _mm256_add_ps(v, bcol##h)
#define ADD_Z(v, r, h) _mm256_add_ps(v, LOAD(ep->z + j0 + (size_t)r * ep->ldz + 8 * h, h))
#define RELU(v, r, h) _mm256_max_ps(v, zero)
#define CLIP(v, r, h) _mm256_min_ps(hi, _mm256_max_ps(lo, v))
#define DO_ADD_C(r) BOTH(r, ADD_C)
#define DO_ADD_ROW(r)                                                                    \
    {                                                                                    \
        const __m256 brow##r = _mm256_broadcast_ss(ep->bias_row + r);                    \
        BOTH(r, ADD_ROW)                                                                 \
    }
#define DO_ADD_COL(r) BOTH(r, ADD_COL)
#define DO_ADD_Z(r) BOTH(r, ADD_Z)
#define DO_RELU(r) BOTH(r, RELU)
#define DO_CLIP(r) BOTH(r, CLIP)
#define DO_STORE(r)                                                                      \
    {                                                                                    \
        STORE(c + (size_t)r * ldc, 0, c##r##_0);                                         \
        if (halves == 2)                                                                 \
            STORE(c + (size_t)r * ldc + 8, 1, c##r##_1);                                 \
    }
    if (ep->accumulate) {
        ROWS(DO_ADD_C)
    }
    if (ep->bias_row) {
        ROWS(DO_ADD_ROW)
    }
    if (ep->bias_col) {
        const __m256 bcol0 = LOAD(ep->bias_col + j0, 0);
        const __m256 bcol1 = halves == 2 ? LOAD(ep->bias_col + j0 + 8, 1) : bcol0;
        ROWS(DO_ADD_COL)
    }
    if (ep->z) {
        ROWS(DO_ADD_Z)
    }
    if (ep->clamp == CF_SGEMM_CLAMP_RELU) {
        const __m256 zero = _mm256_setzero_ps();
        ROWS(DO_RELU)
    } else if (ep->clamp == CF_SGEMM_CLAMP_CLIP) {
        const __m256 lo = _mm256_set1_ps(ep->lo), hi = _mm256_set1_ps(ep->hi);
        ROWS(DO_CLIP)
    }
    ROWS(DO_STORE)
#undef ALL_ROWS
#undef IF_ROW
#undef ROWS
#undef BOTH
#undef DECL
#undef STEP
#undef ADD_C
#undef ADD_ROW
#undef ADD_COL
#undef ADD_Z
#undef RELU
#undef CLIP
#undef DO_ADD_C
#undef DO_ADD_ROW
#undef DO_ADD_COL
#undef DO_ADD_Z
#undef DO_RELU
#undef DO_CLIP
#undef DO_STORE
}
#undef LOAD
#undef STORE

/* One tile of `rows` rows and `ncols` (<= NR) columns, column j0 of the block: its
 * variant by the columns and A's strides.  Packed A (unit row stride) is by far the
 * common case: a constant stride lets the broadcasts use immediate offsets. */
static inline __attribute__((always_inline)) void
tile_rows(const int rows, size_t k, const float *a, size_t a_rs, size_t a_ks, const float *b,
          size_t ldb, float *c, size_t ldc, size_t ncols, const __m256i mask[2], size_t j0,
          const cf_sgemm_tile_ep *ep)
{
    if (a_rs == 1 && a_ks == (size_t)rows) {
        if (ncols == NR)
            tile_rxh(rows, 2, true, k, a, 1, rows, b, ldb, c, ldc, ncols, mask, j0, ep);
        else if (ncols > 8)
            tile_rxh(rows, 2, false, k, a, 1, rows, b, ldb, c, ldc, ncols, mask, j0, ep);
        else
            tile_rxh(rows, 1, false, k, a, 1, rows, b, ldb, c, ldc, ncols, mask, j0, ep);
    } else if (ncols == NR) {
        tile_rxh(rows, 2, true, k, a, a_rs, a_ks, b, ldb, c, ldc, ncols, mask, j0, ep);
    } else if (ncols > 8) {
        tile_rxh(rows, 2, false, k, a, a_rs, a_ks, b, ldb, c, ldc, ncols, mask, j0, ep);
    } else {
        tile_rxh(rows, 1, false, k, a, a_rs, a_ks, b, ldb, c, ldc, ncols, mask, j0, ep);
    }
}

/* One tile per call, out of line: with the loop over column panels around it inlined,
 * GCC held the tile's row pointers on the stack and MobileNet's 112x112 K = 16 layers took
 * 1.2-1.3x as long. */
static __attribute__((noinline)) void
tile_6(size_t k, const float *a, size_t a_rs, size_t a_ks, const float *b, size_t ldb, float *c,
       size_t ldc, size_t ncols, const __m256i mask[2], size_t j0, const cf_sgemm_tile_ep *ep)
{
    tile_rows(MR, k, a, a_rs, a_ks, b, ldb, c, ldc, ncols, mask, j0, ep);
}

static __attribute__((noinline)) void
tile_1(size_t k, const float *a, size_t a_rs, size_t a_ks, const float *b, size_t ldb, float *c,
       size_t ldc, size_t ncols, const __m256i mask[2], size_t j0, const cf_sgemm_tile_ep *ep)
{
    tile_rows(1, k, a, a_rs, a_ks, b, ldb, c, ldc, ncols, mask, j0, ep);
}

/* The kernel of `rows` rows: the tiles of consecutive column panels (sgemm.h).  The
 * epilogue is read where the caller wrote it, its columns offset per tile (j0), as the
 * AVX-512 kernel does and for the same reason (sgemm_ukernel_avx512.c, TILE_FN). */
static inline __attribute__((always_inline)) void
ukernel_rows(const int rows, size_t k, const float *a, size_t a_rs, size_t a_ks, const float *b,
             size_t ldb, size_t b_panel, float *c, size_t ldc, size_t ncols,
             const cf_sgemm_tile_ep *ep)
{
    for (size_t j = 0; j < ncols; j += NR) {
        const size_t cols = ncols - j < NR ? ncols - j : NR;
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        __m256i mask[2];
        mask[0] = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)cols), lane);
        mask[1] = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)cols - 8), lane);
        if (rows == 1)
            tile_1(k, a, a_rs, a_ks, b, ldb, c + j, ldc, cols, mask, j, ep);
        else
            tile_6(k, a, a_rs, a_ks, b, ldb, c + j, ldc, cols, mask, j, ep);
        b += b_panel;
    }
}

static void ukernel_6x16(size_t k, const float *a, size_t a_rs, size_t a_ks, const float *b,
                         size_t ldb, size_t b_panel, float *c, size_t ldc, size_t ncols,
                         const cf_sgemm_tile_ep *ep)
{
    ukernel_rows(MR, k, a, a_rs, a_ks, b, ldb, b_panel, c, ldc, ncols, ep);
}

static void ukernel_1x16(size_t k, const float *a, size_t a_rs, size_t a_ks, const float *b,
                         size_t ldb, size_t b_panel, float *c, size_t ldc, size_t ncols,
                         const cf_sgemm_tile_ep *ep)
{
    ukernel_rows(1, k, a, a_rs, a_ks, b, ldb, b_panel, c, ldc, ncols, ep);
}

static const cf_sgemm_kernel kernel_1x16 = {CF_ISA_AVX2_FMA, 1, NR, ukernel_1x16, false, NULL,
                                            NULL, NULL};
const cf_sgemm_kernel cf_sgemm_kernel_avx2 = {CF_ISA_AVX2_FMA, MR, NR, ukernel_6x16, false, NULL,
                                              NULL, &kernel_1x16};
