/*
 * sgemm_ukernel_avx512.c - the AVX-512F microkernel: an 8 x 32 tile of C in 16 zmm
 * accumulators.  Compiled with -mavx512f -mfma (CMakeLists.txt); only called when
 * cf_isa_active() >= CF_ISA_AVX512F.
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
 * accumulator register just before its store, so the tile never goes through memory.
 */
#include <immintrin.h>

#include "cpu/gemm/sgemm_kernels.h"

#define MR 8
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

static inline __attribute__((always_inline)) void
tile_8xh(const int halves, size_t k, const float *a, size_t a_rs, size_t a_ks, const float *b,
         size_t ldb, float *c, size_t ldc, const __mmask16 mask[2], const cf_sgemm_tile_ep *ep)
{
    /* Named accumulators, not an array: GCC keeps arrays of vectors in memory (inside
     * the loop when only part of them is used, and through the epilogue). */
#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define DECL(r) __m512 c##r##_0 = _mm512_setzero_ps(), c##r##_1 = _mm512_setzero_ps();
#define STEP(r)                                                                          \
    {                                                                                    \
        __m512 av = _mm512_set1_ps(a[r * a_rs]);                                         \
        c##r##_0 = _mm512_fmadd_ps(av, b0, c##r##_0);                                    \
        if (halves == 2)                                                                 \
            c##r##_1 = _mm512_fmadd_ps(av, b1, c##r##_1);                                \
    }
#define FINISH(r)                                                                        \
    finish_vec(c##r##_0, r, 0, c, ldc, mask[0], ep);                                     \
    if (halves == 2)                                                                     \
        finish_vec(c##r##_1, r, 1, c, ldc, mask[1], ep);
    ROWS(DECL)
    for (size_t kk = 0; kk < k; kk++) {
        __m512 b0 = _mm512_maskz_loadu_ps(mask[0], b + 0);
        __m512 b1 = halves == 2 ? _mm512_maskz_loadu_ps(mask[1], b + 16) : b0;
        ROWS(STEP)
        a += a_ks;
        b += ldb;
    }
    ROWS(FINISH)
#undef ROWS
#undef DECL
#undef STEP
#undef FINISH
}

static void ukernel_8x32(size_t k, const float *a, size_t a_rs, size_t a_ks, const float *b,
                         size_t ldb, float *c, size_t ldc, size_t ncols,
                         const cf_sgemm_tile_ep *ep)
{
    __mmask16 mask[2];
    mask[0] = ncols >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << ncols) - 1u);
    mask[1] = ncols >= 32 ? (__mmask16)0xffff
                          : ncols > 16 ? (__mmask16)((1u << (ncols - 16)) - 1u) : 0;
    /* Packed A (unit row stride) is by far the common case: a constant stride lets the
     * broadcasts use immediate offsets. */
    if (a_rs == 1 && a_ks == MR) {
        if (ncols > 16)
            tile_8xh(2, k, a, 1, MR, b, ldb, c, ldc, mask, ep);
        else
            tile_8xh(1, k, a, 1, MR, b, ldb, c, ldc, mask, ep);
    } else if (ncols > 16) {
        tile_8xh(2, k, a, a_rs, a_ks, b, ldb, c, ldc, mask, ep);
    } else {
        tile_8xh(1, k, a, a_rs, a_ks, b, ldb, c, ldc, mask, ep);
    }
}

const cf_sgemm_kernel cf_sgemm_kernel_avx512 = {CF_ISA_AVX512F, MR, NR, ukernel_8x32};
