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
 * columns remain only one vector per row is computed.  The epilogue runs as flat loops
 * over the register tile so the accumulators never leave registers.
 */
#include <immintrin.h>

#include "cpu/gemm/sgemm_kernels.h"

#define MR 8
#define NR 32

static inline __attribute__((always_inline)) void
tile_8xh(const int halves, size_t k, const float *a, const float *b, size_t ldb, float *c,
         size_t ldc,
         const __mmask16 mask[2], const cf_sgemm_tile_ep *ep)
{
    __m512 acc[MR][2];
    for (int r = 0; r < MR; r++)
        for (int h = 0; h < halves; h++)
            acc[r][h] = _mm512_setzero_ps();
    for (size_t kk = 0; kk < k; kk++) {
        __m512 bv[2];
        for (int h = 0; h < halves; h++)
            bv[h] = _mm512_maskz_loadu_ps(mask[h], b + 16 * h);
        for (int r = 0; r < MR; r++) {
            __m512 av = _mm512_set1_ps(a[r]);
            for (int h = 0; h < halves; h++)
                acc[r][h] = _mm512_fmadd_ps(av, bv[h], acc[r][h]);
        }
        a += MR;
        b += ldb;
    }
    if (ep->accumulate)
        for (int r = 0; r < MR; r++)
            for (int h = 0; h < halves; h++)
                acc[r][h] = _mm512_add_ps(
                    acc[r][h], _mm512_maskz_loadu_ps(mask[h], c + (size_t)r * ldc + 16 * h));
    if (ep->bias_row)
        for (int r = 0; r < MR; r++) {
            __m512 bias = _mm512_set1_ps(ep->bias_row[r]);
            for (int h = 0; h < halves; h++)
                acc[r][h] = _mm512_add_ps(acc[r][h], bias);
        }
    if (ep->bias_col)
        for (int h = 0; h < halves; h++) {
            __m512 bias = _mm512_maskz_loadu_ps(mask[h], ep->bias_col + 16 * h);
            for (int r = 0; r < MR; r++)
                acc[r][h] = _mm512_add_ps(acc[r][h], bias);
        }
    if (ep->z)
        for (int r = 0; r < MR; r++)
            for (int h = 0; h < halves; h++)
                acc[r][h] = _mm512_add_ps(
                    acc[r][h],
                    _mm512_maskz_loadu_ps(mask[h], ep->z + (size_t)r * ep->ldz + 16 * h));
    if (ep->clamp == CF_SGEMM_CLAMP_RELU) {
        const __m512 zero = _mm512_setzero_ps();
        for (int r = 0; r < MR; r++)
            for (int h = 0; h < halves; h++)
                acc[r][h] = _mm512_max_ps(acc[r][h], zero);
    } else if (ep->clamp == CF_SGEMM_CLAMP_CLIP) {
        const __m512 lo = _mm512_set1_ps(ep->lo), hi = _mm512_set1_ps(ep->hi);
        for (int r = 0; r < MR; r++)
            for (int h = 0; h < halves; h++)
                acc[r][h] = _mm512_min_ps(hi, _mm512_max_ps(lo, acc[r][h]));
    }
    for (int r = 0; r < MR; r++)
        for (int h = 0; h < halves; h++)
            _mm512_mask_storeu_ps(c + (size_t)r * ldc + 16 * h, mask[h], acc[r][h]);
}

static void ukernel_8x32(size_t k, const float *a, const float *b, size_t ldb, float *c,
                         size_t ldc, size_t ncols, const cf_sgemm_tile_ep *ep)
{
    __mmask16 mask[2];
    mask[0] = ncols >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << ncols) - 1u);
    mask[1] = ncols >= 32 ? (__mmask16)0xffff
                          : ncols > 16 ? (__mmask16)((1u << (ncols - 16)) - 1u) : 0;
    if (ncols > 16)
        tile_8xh(2, k, a, b, ldb, c, ldc, mask, ep);
    else
        tile_8xh(1, k, a, b, ldb, c, ldc, mask, ep);
}

const cf_sgemm_kernel cf_sgemm_kernel_avx512 = {CF_ISA_AVX512F, MR, NR, ukernel_8x32};
