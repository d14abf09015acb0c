/*
 * simd.h - one small vector vocabulary over three instruction sets, so that each CPU
 * kernel is written once and compiled once per ISA.
 *
 * A kernel family keeps its code in a *_kernels.h template that uses only the names
 * below; one tiny .c file per ISA defines CF_SIMD_AVX512, CF_SIMD_AVX2 or
 * CF_SIMD_PORTABLE, includes this header and the template, and is compiled with that
 * ISA's flags (CMakeLists.txt sets them per file).  CF_SIMD_SYM(name) gives each
 * instantiation's exported symbols an ISA suffix, so the three objects coexist in one
 * library and the driver picks one at run time (cpu/isa.h).
 *
 *   cf_vf            a vector of CF_VL floats (16 AVX-512, 8 AVX2, 4 portable)
 *   cf_vzero/bcast   all lanes 0 / all lanes one value
 *   cf_vload/store   unaligned full-vector memory access
 *   cf_vload_n/store_n   the first n lanes only (0 < n <= CF_VL); other lanes read as 0
 *                    and are never touched in memory, so tails never read out of bounds
 *   cf_vfma(a,b,c)   a * b + c (fused where the ISA has FMA)
 *   cf_vadd/sub/mul/max/min, cf_vsel_ge0(v, a, b): lanewise v >= 0 ? a : b
 *   cf_veven(a, b), cf_vodd(a, b)  the even (odd) lanes of a followed by b: lane l is
 *                    lane 2l (2l + 1) of the 2 * CF_VL lanes of a, b
 *   cf_vload_even(p)  lanes p[0], p[2], ..., p[2 * CF_VL - 2] (reads 2 * CF_VL floats)
 *   cf_vload_lanes(p, lo, hi)       lane l in [lo, hi) = p[l], other lanes 0;
 *   cf_vload_even_lanes(p, lo, hi)  lane l in [lo, hi) = p[2 * l], other lanes 0;
 *                    both touch memory only for lanes in [lo, hi) (masked loads, which
 *                    do not fault on masked-out lanes), so p may point before the row
 *                    being read as long as those lanes are inside it
 *   cf_vtranspose(r)  r[0..CF_VL) as a CF_VL x CF_VL matrix, transposed in registers
 *   cf_vgather(base, off, idx, mask)  lane l = base[off + idx[l]] where bit l of mask
 *                                    is set, else 0 (masked lanes are never read)
 *   cf_vscatter(base, idx, v, mask)  base[idx[l]] = lane l where bit l is set
 *   cf_vshift(a, b, k)  lanes k .. k + CF_VL - 1 of a followed by b (lane l = a[l + k]
 *                    while l + k < CF_VL, else b[l + k - CF_VL]); k a constant,
 *                    0 < k < CF_VL
 *   cf_vload_mask(p, bits)  lane l = p[l] where bit l of bits is set, else 0; lanes whose
 *                    bit is clear are never read (no fault), so p may point outside
 *                    the array for them
 *   CF_VMASK_FREE    1 where masked loads cost what plain ones do (AVX-512's mask
 *                    registers), 0 where they cost more (AVX2's vmaskmovps and its mask
 *                    vector; the portable lane loop)
 *   cf_vfma_mask(a, b, c, bits)  a * b + c in the lanes whose bit is set, c elsewhere
 *   cf_vadd_mask(a, b, bits)  a + b in the lanes whose bit is set, a elsewhere (b's
 *                    other lanes never reach the result, NaN and infinity included)
 *   cf_vblend(bits, a, b)  b in the lanes whose bit is set, a elsewhere
 *   cf_vstore_mask(p, v, bits)  p[l] = lane l where bit l is set; other lanes' memory
 *                    is never touched, so p may point outside the array for them
 *   cf_vstream(p, v)  stores v at p (CF_VL-float aligned) around the caches (a non-
 *                    temporal store: no read for ownership, nothing evicted); the
 *                    thread must call cf_vstream_fence() before its stores may be read
 *                    by another thread
 *   cf_vidx          CF_VL int32 lane indices; cf_vidx_load(p) loads CF_VL of them
 *   cf_vperm2(a, idx, b)  lane l = lane idx[l] mod 2 CF_VL of a followed by b
 *   cf_vperm2_mask(a, idx, b, bits)  the same in the lanes whose bit is set, 0 elsewhere
 *
 * cf_vmax(a, b) and cf_vmin(a, b) follow the x86 rule "a > b ? a : b" (resp. <), which
 * is what the scalar epilogue computes, so vector and scalar activations agree bit for
 * bit (NaN included) for every activation but sigmoid and tanh, which go through the
 * scalar cf_activate().
 */
#ifndef CONVFIND_CPU_SIMD_H
#define CONVFIND_CPU_SIMD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cpu/epilogue.h"

#if defined(CF_SIMD_AVX512)
#include <immintrin.h>
#define CF_VL 16
#define CF_VMASK_FREE 1
#define CF_SIMD_SYM(name) name##_avx512
typedef __m512 cf_vf;
#define cf_vzero() _mm512_setzero_ps()
#define cf_vbcast(s) _mm512_set1_ps(s)
#define cf_vload(p) _mm512_loadu_ps(p)
#define cf_vstore(p, v) _mm512_storeu_ps((p), (v))
#define cf_vstream(p, v) _mm512_stream_ps((p), (v))
#define cf_vstream_fence() _mm_sfence()
#define cf_vfma(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define cf_vadd(a, b) _mm512_add_ps((a), (b))
#define cf_vsub(a, b) _mm512_sub_ps((a), (b))
#define cf_vmul(a, b) _mm512_mul_ps((a), (b))
#define cf_vmax(a, b) _mm512_max_ps((a), (b))
#define cf_vmin(a, b) _mm512_min_ps((a), (b))
static inline __mmask16 cf_vmask_n(int n) { return (__mmask16)((1u << n) - 1u); }
static inline cf_vf cf_vload_n(const float *p, int n)
{
    return _mm512_maskz_loadu_ps(cf_vmask_n(n), p);
}
static inline void cf_vstore_n(float *p, cf_vf v, int n)
{
    _mm512_mask_storeu_ps(p, cf_vmask_n(n), v);
}
static inline cf_vf cf_veven(cf_vf a, cf_vf b)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                           28, 30);
    return _mm512_permutex2var_ps(a, even, b);
}
static inline cf_vf cf_vodd(cf_vf a, cf_vf b)
{
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27,
                                          29, 31);
    return _mm512_permutex2var_ps(a, odd, b);
}
static inline cf_vf cf_vload_lanes(const float *p, int lo, int hi)
{
    return _mm512_maskz_loadu_ps((__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u)), p);
}
static inline cf_vf cf_vload_even_lanes(const float *p, int lo, int hi)
{
    uint32_t m =
        0x55555555u & (uint32_t)(((1ull << (2 * hi - 1)) - 1u) & ~((1ull << (2 * lo)) - 1u));
    cf_vf a = _mm512_maskz_loadu_ps((__mmask16)m, p);
    cf_vf b = _mm512_maskz_loadu_ps((__mmask16)(m >> 16), p + 16);
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                           28, 30);
    return _mm512_permutex2var_ps(a, even, b);
}
static inline void cf_vtranspose(cf_vf r[CF_VL])
{
    cf_vf a[16], b[16], c[16];
    for (int i = 0; i < 8; i++) {
        a[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++)
        for (int h = 0; h < 2; h++) {
            __m512d x = _mm512_castps_pd(a[4 * i + h]), y = _mm512_castps_pd(a[4 * i + 2 + h]);
            b[4 * i + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(x, y));
            b[4 * i + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(x, y));
        }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) {
            c[8 * i + j] = _mm512_shuffle_f32x4(b[8 * i + j], b[8 * i + 4 + j], 0x88);
            c[8 * i + 4 + j] = _mm512_shuffle_f32x4(b[8 * i + j], b[8 * i + 4 + j], 0xdd);
        }
    for (int j = 0; j < 8; j++) {
        r[j] = _mm512_shuffle_f32x4(c[j], c[8 + j], 0x88);
        r[8 + j] = _mm512_shuffle_f32x4(c[j], c[8 + j], 0xdd);
    }
}
static inline cf_vf cf_vgather(const float *base, int32_t off, const int32_t *idx, unsigned mask)
{
    __m512i vi = _mm512_add_epi32(_mm512_set1_epi32(off), _mm512_loadu_si512(idx));
    return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), (__mmask16)mask, vi, base, 4);
}
static inline void cf_vscatter(float *base, const int32_t *idx, cf_vf v, unsigned mask)
{
    _mm512_mask_i32scatter_ps(base, (__mmask16)mask, _mm512_loadu_si512(idx), v, 4);
}
#define cf_vshift(a, b, k)                                                                 \
    _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(b), _mm512_castps_si512(a), (k)))
#define cf_vload_mask(p, bits) _mm512_maskz_loadu_ps((__mmask16)(bits), (p))
#define cf_vfma_mask(a, b, c, bits) _mm512_mask3_fmadd_ps((a), (b), (c), (__mmask16)(bits))
#define cf_vadd_mask(a, b, bits) _mm512_mask_add_ps((a), (__mmask16)(bits), (a), (b))
typedef __m512i cf_vidx;
#define cf_vidx_load(p) _mm512_loadu_si512(p)
#define cf_vperm2(a, idx, b) _mm512_permutex2var_ps((a), (idx), (b))
#define cf_vperm2_mask(a, idx, b, bits)                                                    \
    _mm512_maskz_permutex2var_ps((__mmask16)(bits), (a), (idx), (b))
#define cf_vblend(bits, a, b) _mm512_mask_blend_ps((__mmask16)(bits), (a), (b))
#define cf_vstore_mask(p, v, bits) _mm512_mask_storeu_ps((p), (__mmask16)(bits), (v))
static inline cf_vf cf_vsel_ge0(cf_vf v, cf_vf a, cf_vf b)
{
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GE_OQ), b, a);
}

#elif defined(CF_SIMD_AVX2)
#include <immintrin.h>
#define CF_VL 8
#define CF_VMASK_FREE 0
#define CF_SIMD_SYM(name) name##_avx2
typedef __m256 cf_vf;
#define cf_vzero() _mm256_setzero_ps()
#define cf_vbcast(s) _mm256_set1_ps(s)
#define cf_vload(p) _mm256_loadu_ps(p)
#define cf_vstore(p, v) _mm256_storeu_ps((p), (v))
#define cf_vstream(p, v) _mm256_stream_ps((p), (v))
#define cf_vstream_fence() _mm_sfence()
#define cf_vfma(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define cf_vadd(a, b) _mm256_add_ps((a), (b))
#define cf_vsub(a, b) _mm256_sub_ps((a), (b))
#define cf_vmul(a, b) _mm256_mul_ps((a), (b))
#define cf_vmax(a, b) _mm256_max_ps((a), (b))
#define cf_vmin(a, b) _mm256_min_ps((a), (b))
static inline __m256i cf_vmask_n(int n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline cf_vf cf_vload_n(const float *p, int n)
{
    return _mm256_maskload_ps(p, cf_vmask_n(n));
}
/* In plain stores of 4, 2 and 1 floats: AMD's vmaskmovps store is microcoded and costs
 * several times this (NHWC tiles of 5 or 6 channels store a partial vector per pixel). */
static inline void cf_vstore_n(float *p, cf_vf v, int n)
{
    if (n >= CF_VL) {
        _mm256_storeu_ps(p, v);
        return;
    }
    __m128 part = _mm256_castps256_ps128(v);
    if (n >= 4) {
        _mm_storeu_ps(p, part);
        part = _mm256_extractf128_ps(v, 1);
        p += 4;
        n -= 4;
    }
    if (n >= 2) {
        _mm_storel_pi((__m64 *)p, part);
        part = _mm_movehl_ps(part, part);
        p += 2;
        n -= 2;
    }
    if (n)
        _mm_store_ss(p, part);
}
/* shuffle_ps takes two lanes of each source per 128-bit half; permute4x64 puts the
 * halves' pairs in order. */
static inline cf_vf cf_veven(cf_vf a, cf_vf b)
{
    __m256 s = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
}
static inline cf_vf cf_vodd(cf_vf a, cf_vf b)
{
    __m256 s = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
}
static inline void cf_vtranspose(cf_vf r[CF_VL])
{
    cf_vf a[8], b[8];
    for (int i = 0; i < 4; i++) {
        a[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++)
        for (int h = 0; h < 2; h++) {
            __m256d x = _mm256_castps_pd(a[4 * i + h]), y = _mm256_castps_pd(a[4 * i + 2 + h]);
            b[4 * i + 2 * h] = _mm256_castpd_ps(_mm256_unpacklo_pd(x, y));
            b[4 * i + 2 * h + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(x, y));
        }
    for (int c = 0; c < 4; c++) {
        r[c] = _mm256_permute2f128_ps(b[c], b[4 + c], 0x20);
        r[4 + c] = _mm256_permute2f128_ps(b[c], b[4 + c], 0x31);
    }
}
static inline cf_vf cf_vgather(const float *base, int32_t off, const int32_t *idx, unsigned mask)
{
    __m256i bits = _mm256_and_si256(_mm256_set1_epi32((int)mask),
                                    _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128));
    __m256 m = _mm256_castsi256_ps(_mm256_cmpeq_epi32(bits, _mm256_setzero_si256()));
    m = _mm256_xor_ps(m, _mm256_castsi256_ps(_mm256_set1_epi32(-1)));
    __m256i vi = _mm256_add_epi32(_mm256_set1_epi32(off), _mm256_loadu_si256((const __m256i *)idx));
    return _mm256_mask_i32gather_ps(_mm256_setzero_ps(), base, vi, m, 4);
}
static inline void cf_vscatter(float *base, const int32_t *idx, cf_vf v, unsigned mask)
{
    float t[CF_VL];
    _mm256_storeu_ps(t, v);
    for (int l = 0; l < CF_VL; l++)
        if (mask >> l & 1u)
            base[idx[l]] = t[l];
}
/* alignr shifts within 128-bit halves, so each half is shifted together with the half
 * that follows it: m = a's high half then b's low half, and the result is (a, m) shifted
 * by k for k < 4, (m, b) shifted by k - 4 otherwise. */
#define cf_vshift(a, b, k)                                                                 \
    _mm256_castsi256_ps(                                                                   \
        (k) < 4 ? _mm256_alignr_epi8(_mm256_castps_si256(_mm256_permute2f128_ps((a), (b), 0x21)), \
                                     _mm256_castps_si256(a), 4 * ((k) & 3))                \
                : _mm256_alignr_epi8(_mm256_castps_si256(b),                               \
                                     _mm256_castps_si256(_mm256_permute2f128_ps((a), (b), 0x21)), \
                                     4 * ((k) & 3)))
/* bits as a lane mask for maskload and blends: lane l all ones where bit l is set. */
static inline __m256i cf_vbits(unsigned bits)
{
    const __m256i lane = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)bits), lane), lane);
}
static inline cf_vf cf_vload_mask(const float *p, unsigned bits)
{
    return _mm256_maskload_ps(p, cf_vbits(bits));
}
static inline cf_vf cf_vfma_mask(cf_vf a, cf_vf b, cf_vf c, unsigned bits)
{
    return _mm256_fmadd_ps(a, _mm256_and_ps(b, _mm256_castsi256_ps(cf_vbits(bits))), c);
}
static inline cf_vf cf_vblend(unsigned bits, cf_vf a, cf_vf b)
{
    return _mm256_blendv_ps(a, b, _mm256_castsi256_ps(cf_vbits(bits)));
}
static inline cf_vf cf_vadd_mask(cf_vf a, cf_vf b, unsigned bits)
{
    return cf_vblend(bits, a, _mm256_add_ps(a, b));
}
static inline void cf_vstore_mask(float *p, cf_vf v, unsigned bits)
{
    _mm256_maskstore_ps(p, cf_vbits(bits), v);
}
typedef __m256i cf_vidx;
#define cf_vidx_load(p) _mm256_loadu_si256((const __m256i *)(p))
/* Each source permuted by the index's low 3 bits; bit 3, moved to the sign, picks b. */
static inline cf_vf cf_vperm2(cf_vf a, cf_vidx idx, cf_vf b)
{
    return _mm256_blendv_ps(_mm256_permutevar8x32_ps(a, idx), _mm256_permutevar8x32_ps(b, idx),
                            _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)));
}
static inline cf_vf cf_vperm2_mask(cf_vf a, cf_vidx idx, cf_vf b, unsigned bits)
{
    return _mm256_and_ps(cf_vperm2(a, idx, b), _mm256_castsi256_ps(cf_vbits(bits)));
}
static inline cf_vf cf_vsel_ge0(cf_vf v, cf_vf a, cf_vf b)
{
    return _mm256_blendv_ps(b, a, _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GE_OQ));
}

#elif defined(CF_SIMD_PORTABLE)
/* GCC/clang vector extensions: plain C semantics, lowered to whatever the target has.
 * Four lanes: the width every 64-bit target's baseline has (SSE2, NEON), so the
 * vectors live in registers and pass by value without ABI caveats. */
#define CF_VL 4
#define CF_VMASK_FREE 0
#define CF_SIMD_SYM(name) name##_portable
typedef float cf_vf __attribute__((vector_size(CF_VL * sizeof(float))));
typedef int cf_vi __attribute__((vector_size(CF_VL * sizeof(int))));
/* Lanewise mask ? a : b for a comparison mask (all ones or all zeros per lane). */
static inline cf_vf cf_vselect(cf_vi mask, cf_vf a, cf_vf b)
{
    return (cf_vf)((mask & (cf_vi)a) | (~mask & (cf_vi)b));
}
static inline cf_vf cf_vzero(void) { return (cf_vf){0}; }
static inline cf_vf cf_vbcast(float s) { return (cf_vf){0} + s; }
static inline cf_vf cf_vload(const float *p)
{
    cf_vf v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void cf_vstore(float *p, cf_vf v) { memcpy(p, &v, sizeof v); }
static inline void cf_vstream(float *p, cf_vf v) { memcpy(p, &v, sizeof v); }
static inline void cf_vstream_fence(void) {}
static inline cf_vf cf_vfma(cf_vf a, cf_vf b, cf_vf c) { return a * b + c; }
static inline cf_vf cf_vadd(cf_vf a, cf_vf b) { return a + b; }
static inline cf_vf cf_vsub(cf_vf a, cf_vf b) { return a - b; }
static inline cf_vf cf_veven(cf_vf a, cf_vf b)
{
    cf_vf v;
    for (int l = 0; l < CF_VL; l++)
        v[l] = 2 * l < CF_VL ? a[2 * l] : b[2 * l - CF_VL];
    return v;
}
static inline cf_vf cf_vodd(cf_vf a, cf_vf b)
{
    cf_vf v;
    for (int l = 0; l < CF_VL; l++)
        v[l] = 2 * l + 1 < CF_VL ? a[2 * l + 1] : b[2 * l + 1 - CF_VL];
    return v;
}
static inline void cf_vtranspose(cf_vf r[CF_VL])
{
    for (int i = 0; i < CF_VL; i++)
        for (int j = i + 1; j < CF_VL; j++) {
            float t = r[i][j];
            r[i][j] = r[j][i];
            r[j][i] = t;
        }
}
static inline cf_vf cf_vgather(const float *base, int32_t off, const int32_t *idx, unsigned mask)
{
    cf_vf v = {0};
    for (int l = 0; l < CF_VL; l++)
        if (mask >> l & 1u)
            v[l] = base[off + idx[l]];
    return v;
}
static inline void cf_vscatter(float *base, const int32_t *idx, cf_vf v, unsigned mask)
{
    for (int l = 0; l < CF_VL; l++)
        if (mask >> l & 1u)
            base[idx[l]] = v[l];
}
static inline cf_vf cf_vmul(cf_vf a, cf_vf b) { return a * b; }
static inline cf_vf cf_vmax(cf_vf a, cf_vf b) { return cf_vselect(a > b, a, b); }
static inline cf_vf cf_vmin(cf_vf a, cf_vf b) { return cf_vselect(a < b, a, b); }
static inline cf_vf cf_vload_n(const float *p, int n)
{
    cf_vf v = {0};
    memcpy(&v, p, (size_t)n * sizeof(float));
    return v;
}
static inline void cf_vstore_n(float *p, cf_vf v, int n)
{
    memcpy(p, &v, (size_t)n * sizeof(float));
}
static inline cf_vf cf_vshift(cf_vf a, cf_vf b, int k)
{
    float t[2 * CF_VL];
    memcpy(t, &a, sizeof a);
    memcpy(t + CF_VL, &b, sizeof b);
    return cf_vload(t + k);
}
static inline cf_vf cf_vsel_ge0(cf_vf v, cf_vf a, cf_vf b)
{
    return cf_vselect(v >= cf_vzero(), a, b);
}
static inline cf_vf cf_vload_mask(const float *p, unsigned bits)
{
    cf_vf v = {0};
    for (int l = 0; l < CF_VL; l++)
        if (bits >> l & 1u)
            v[l] = p[l];
    return v;
}
static inline cf_vf cf_vfma_mask(cf_vf a, cf_vf b, cf_vf c, unsigned bits)
{
    cf_vf r = cf_vfma(a, b, c);
    for (int l = 0; l < CF_VL; l++)
        if (!(bits >> l & 1u))
            r[l] = c[l];
    return r;
}
static inline cf_vf cf_vblend(unsigned bits, cf_vf a, cf_vf b)
{
    for (int l = 0; l < CF_VL; l++)
        if (bits >> l & 1u)
            a[l] = b[l];
    return a;
}
static inline cf_vf cf_vadd_mask(cf_vf a, cf_vf b, unsigned bits)
{
    return cf_vblend(bits, a, a + b);
}
static inline void cf_vstore_mask(float *p, cf_vf v, unsigned bits)
{
    for (int l = 0; l < CF_VL; l++)
        if (bits >> l & 1u)
            p[l] = v[l];
}
typedef cf_vi cf_vidx;
static inline cf_vidx cf_vidx_load(const int32_t *p)
{
    cf_vidx v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline cf_vf cf_vperm2(cf_vf a, cf_vidx idx, cf_vf b)
{
    cf_vf v;
    for (int l = 0; l < CF_VL; l++) {
        int i = idx[l] & (2 * CF_VL - 1);
        v[l] = i < CF_VL ? a[i] : b[i - CF_VL];
    }
    return v;
}
static inline cf_vf cf_vperm2_mask(cf_vf a, cf_vidx idx, cf_vf b, unsigned bits)
{
    return cf_vblend(bits, cf_vzero(), cf_vperm2(a, idx, b));
}

#else
#error "define CF_SIMD_AVX512, CF_SIMD_AVX2 or CF_SIMD_PORTABLE before including cpu/simd.h"
#endif

static inline cf_vf cf_vload_even(const float *p)
{
    return cf_veven(cf_vload(p), cf_vload(p + CF_VL));
}

#if !defined(CF_SIMD_AVX512)
static inline cf_vf cf_vload_step_lanes(const float *p, int lo, int hi, int step)
{
    float t[CF_VL] = {0};
    for (int l = lo; l < hi; l++)
        t[l] = p[l * step];
    return cf_vload(t);
}
static inline cf_vf cf_vload_lanes(const float *p, int lo, int hi)
{
    return cf_vload_step_lanes(p, lo, hi, 1);
}
static inline cf_vf cf_vload_even_lanes(const float *p, int lo, int hi)
{
    return cf_vload_step_lanes(p, lo, hi, 2);
}
#endif

/* The cases of a switch on a convfind_activation for the activations cf_vactivate()
 * computes in registers, each running CALL(act) with the activation as a compile-time
 * constant and then AFTER (break, continue, return).  Kernels that apply the epilogue to
 * accumulators still in registers switch once per tile on these, so that no branch on
 * the activation sits inside their unrolled loops; the others (sigmoid, tanh: libm
 * calls) are theirs to handle in the switch's default. */
#define CF_VACT_CASE(a, CALL, AFTER)                                                       \
    case a:                                                                                \
        CALL(a);                                                                           \
        AFTER;
#define CF_VACT_CASES(CALL, AFTER)                                                         \
    CF_VACT_CASE(CONVFIND_ACT_NONE, CALL, AFTER)                                           \
    CF_VACT_CASE(CONVFIND_ACT_RELU, CALL, AFTER)                                           \
    CF_VACT_CASE(CONVFIND_ACT_LEAKY_RELU, CALL, AFTER)                                     \
    CF_VACT_CASE(CONVFIND_ACT_CLIP, CALL, AFTER)                                           \
    CF_VACT_CASE(CONVFIND_ACT_HARD_SIGMOID, CALL, AFTER)

/* The problem's activation applied to every lane; identical to cf_activate() per lane. */
static inline cf_vf cf_vactivate(cf_vf v, convfind_activation act, float alpha, float beta)
{
    switch (act) {
    case CONVFIND_ACT_NONE:
        return v;
    case CONVFIND_ACT_RELU:
        return cf_vmax(v, cf_vzero());
    case CONVFIND_ACT_LEAKY_RELU:
        return cf_vsel_ge0(v, v, cf_vmul(cf_vbcast(alpha), v));
    case CONVFIND_ACT_CLIP:
        return cf_vmin(cf_vbcast(beta), cf_vmax(cf_vbcast(alpha), v));
    case CONVFIND_ACT_HARD_SIGMOID: {
        cf_vf h = cf_vadd(cf_vmul(cf_vbcast(alpha), v), cf_vbcast(beta));
        return cf_vmin(cf_vbcast(1.0f), cf_vmax(cf_vzero(), h));
    }
    default: {
        float t[CF_VL];
        cf_vstore(t, v);
        for (int i = 0; i < CF_VL; i++)
            t[i] = cf_activate(t[i], act, alpha, beta);
        return cf_vload(t);
    }
    }
}

#endif /* CONVFIND_CPU_SIMD_H */
