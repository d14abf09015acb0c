/*
 * kernels.cu - the CUDA backend's own kernels (see kernels.h): axis swaps for layout
 * changes, spatial windows for explicit padding, the TF32 split, the epilogue, the
 * direct convolution, fills and conversions.
 *
 * None of these is on a hot path the way the cuDNN engines are, except the axis swap,
 * which the "transpose, run, transpose back" candidates pay on every call: it goes
 * through a padded shared-memory tile so that both the reads and the writes coalesce.
 * The activation is written out again here because the CPU one (cpu/epilogue.h) is
 * host code; both follow convfind.h's definitions.
 */
#include "cuda/kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <type_traits>

namespace {

template <typename T> __device__ float load(const T *p, int64_t i);
template <> __device__ float load<float>(const float *p, int64_t i) { return p[i]; }
template <> __device__ float load<__half>(const __half *p, int64_t i) { return __half2float(p[i]); }
template <> __device__ float load<__nv_bfloat16>(const __nv_bfloat16 *p, int64_t i)
{
    return __bfloat162float(p[i]);
}

template <typename T> __device__ void store(T *p, int64_t i, float v);
template <> __device__ void store<float>(float *p, int64_t i, float v) { p[i] = v; }
template <> __device__ void store<__half>(__half *p, int64_t i, float v)
{
    p[i] = __float2half_rn(v);
}
template <> __device__ void store<__nv_bfloat16>(__nv_bfloat16 *p, int64_t i, float v)
{
    p[i] = __float2bfloat16_rn(v);
}

__device__ float activate(float v, const cf_problem &p)
{
    switch (p.act) {
    case CONVFIND_ACT_RELU:
        return v > 0.0f ? v : 0.0f;
    case CONVFIND_ACT_LEAKY_RELU:
        return v >= 0.0f ? v : p.alpha * v;
    case CONVFIND_ACT_CLIP:
        return v < p.alpha ? p.alpha : (v > p.beta ? p.beta : v);
    case CONVFIND_ACT_SIGMOID:
        return 1.0f / (1.0f + expf(-v));
    case CONVFIND_ACT_TANH:
        return tanhf(v);
    case CONVFIND_ACT_HARD_SIGMOID: {
        float h = p.alpha * v + p.beta;
        return h < 0.0f ? 0.0f : (h > 1.0f ? 1.0f : h);
    }
    default:
        return v;
    }
}

/* Offset of (n, channel, spatial index) in a tensor of `ch` channels and `sp` points. */
__device__ int64_t offset(convfind_layout layout, int64_t n, int64_t c, int64_t s, int64_t ch,
                          int64_t sp)
{
    return layout == CONVFIND_LAYOUT_NHWC ? (n * sp + s) * ch + c : (n * ch + c) * sp + s;
}

unsigned grid_for(int64_t work, int block)
{
    int64_t g = (work + block - 1) / block;
    return (unsigned)(g < 1 ? 1 : g > (1 << 20) ? (1 << 20) : g);
}

template <typename T>
__global__ void swap_axes_kernel(const T *src, T *dst, int64_t n, int64_t a, int64_t b)
{
    __shared__ T tile[32][33];
    const int64_t ta_count = (a + 31) / 32, tb_count = (b + 31) / 32;
    const int64_t tiles = n * ta_count * tb_count;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int64_t tb = t % tb_count, ta = (t / tb_count) % ta_count;
        const int64_t batch = t / (tb_count * ta_count);
        const T *s = src + batch * a * b;
        T *d = dst + batch * a * b;
        for (int j = threadIdx.y; j < 32; j += blockDim.y) {
            int64_t ai = ta * 32 + j, bi = tb * 32 + threadIdx.x;
            if (ai < a && bi < b)
                tile[j][threadIdx.x] = s[ai * b + bi];
        }
        __syncthreads();
        for (int j = threadIdx.y; j < 32; j += blockDim.y) {
            int64_t bi = tb * 32 + j, ai = ta * 32 + threadIdx.x;
            if (ai < a && bi < b)
                d[bi * a + ai] = tile[threadIdx.x][j];
        }
        __syncthreads();
    }
}

/* The spatial window of a tensor (see cf_cuda_window); one thread per dst value. */
struct window_shape {
    int64_t n, c, src[CF_SP], dst[CF_SP], off[CF_SP], src_sp, dst_sp;
    convfind_layout layout;
};

template <typename T>
__global__ void window_kernel(window_shape w, const T *src, T *dst)
{
    const int64_t total = w.n * w.c * w.dst_sp;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t n, c, s;
        if (w.layout == CONVFIND_LAYOUT_NHWC) {
            c = i % w.c;
            s = (i / w.c) % w.dst_sp;
            n = i / (w.c * w.dst_sp);
        } else {
            s = i % w.dst_sp;
            c = (i / w.dst_sp) % w.c;
            n = i / (w.dst_sp * w.c);
        }
        /* dst spatial index -> src spatial index, axis by axis (last axis fastest). */
        int64_t rest = s, src_s = 0, scale = 1;
        bool inside = true;
        for (int d = CF_SP - 1; d >= 0; d--) {
            const int64_t o = rest % w.dst[d] + w.off[d];
            rest /= w.dst[d];
            inside = inside && o >= 0 && o < w.src[d];
            src_s += o * scale;
            scale *= w.src[d];
        }
        dst[i] = inside ? src[offset(w.layout, n, c, src_s, w.c, w.src_sp)] : T(0);
    }
}

template <typename T>
__global__ void epilogue_kernel(cf_problem p, const T *b, const T *z, T *y)
{
    const int64_t total = (int64_t)p.y_elems;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t c = p.layout == CONVFIND_LAYOUT_NHWC ? i % p.m : (i / p.out_sp) % p.m;
        float v = load(y, i);
        if (b)
            v += load(b, c);
        if (z)
            v += load(z, i);
        store(y, i, activate(v, p));
    }
}

/* The epilogue, V values per thread with 16-byte loads and stores and 32-bit index
 * arithmetic: the generic kernel's 64-bit division per value made it compute-bound, and
 * on the H200 it cost more than the convolution for some layers of MobileNetV2 at N=32.
 * For NHWC the channel count is a multiple of V (a vector's channels are consecutive),
 * for NCHW the spatial size is (a vector has one channel); Y and Z 16-byte aligned. */
template <typename T, int V> struct alignas(16) pack {
    T v[V];
};

template <typename T, int V>
__global__ void epilogue_vec_kernel(cf_problem p, const T *b, const T *z, T *y, uint32_t vectors,
                                    uint32_t m, uint32_t sp, bool nhwc)
{
    for (uint32_t vi = blockIdx.x * blockDim.x + threadIdx.x; vi < vectors;
         vi += gridDim.x * blockDim.x) {
        const uint32_t i = vi * V;
        const uint32_t c0 = nhwc ? i % m : (i / sp) % m;
        pack<T, V> out = reinterpret_cast<const pack<T, V> *>(y)[vi];
        pack<T, V> res;
        if (z)
            res = reinterpret_cast<const pack<T, V> *>(z)[vi];
#pragma unroll
        for (int k = 0; k < V; k++) {
            float v = load(out.v, k);
            if (b)
                v += load(b, nhwc ? c0 + k : c0);
            if (z)
                v += load(res.v, k);
            store(out.v, k, activate(v, p));
        }
        reinterpret_cast<pack<T, V> *>(y)[vi] = out;
    }
}

/* One thread per output value; ConvTranspose gathers the inputs that scatter into it. */
template <typename T>
__global__ void direct_kernel(cf_problem p, const T *x, const T *w, const T *b, const T *z, T *y)
{
    const int64_t total = (int64_t)p.y_elems;
    const int64_t cpg = p.c / p.group, mpg = p.m / p.group;
    const bool transpose = p.op == CONVFIND_OP_CONV_TRANSPOSE;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i;
        const int64_t o2 = r % p.out[2];
        r /= p.out[2];
        const int64_t o1 = r % p.out[1];
        r /= p.out[1];
        const int64_t o0 = r % p.out[0];
        r /= p.out[0];
        const int64_t m = r % p.m, n = r / p.m;
        const int64_t g = m / mpg;
        const int64_t o[3] = {o0, o1, o2};
        float acc = 0.0f;
        for (int64_t ci = 0; ci < cpg; ci++) {
            const int64_t c = g * cpg + ci;
            for (int64_t k0 = 0; k0 < p.k[0]; k0++)
                for (int64_t k1 = 0; k1 < p.k[1]; k1++)
                    for (int64_t k2 = 0; k2 < p.k[2]; k2++) {
                        const int64_t k[3] = {k0, k1, k2};
                        int64_t in[3];
                        bool inside = true;
                        for (int d = 0; d < 3; d++) {
                            if (!transpose) {
                                in[d] = o[d] * p.stride[d] - p.pad_begin[d] + k[d] * p.dil[d];
                            } else {
                                int64_t t = o[d] + p.pad_begin[d] - k[d] * p.dil[d];
                                in[d] = t >= 0 && t % p.stride[d] == 0 ? t / p.stride[d] : -1;
                            }
                            inside = inside && in[d] >= 0 && in[d] < p.in[d];
                        }
                        if (!inside)
                            continue;
                        const int64_t s = (in[0] * p.in[1] + in[1]) * p.in[2] + in[2];
                        const int64_t wk = (k0 * p.k[1] + k1) * p.k[2] + k2;
                        const int64_t wi = transpose ? (c * mpg + (m - g * mpg)) * p.k_sp + wk
                                                     : (m * cpg + ci) * p.k_sp + wk;
                        acc += load(x, offset(p.layout, n, c, s, p.c, p.in_sp)) * load(w, wi);
                    }
        }
        const int64_t s = (o0 * p.out[1] + o1) * p.out[2] + o2;
        const int64_t yi = offset(p.layout, n, m, s, p.m, p.out_sp);
        if (b)
            acc += load(b, m);
        if (z)
            acc += load(z, yi);
        store(y, yi, activate(acc, p));
    }
}

template <typename T> __global__ void fill_kernel(T *dst, int64_t count, uint64_t seed)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x) {
        uint64_t s = (seed + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)i * 0xbf58476d1ce4e5b9ull);
        s ^= s >> 31;
        s *= 0x94d049bb133111ebull;
        s ^= s >> 29;
        float v = ((float)(int32_t)((s >> 40) & 0xffffff) - 8388607.5f) / 8388608.0f;
        store(dst, i, v);
    }
}

/* acc[0] += sum (got - ref)^2, acc[1] += sum ref^2, acc[2] += NaNs in got: a block
 * reduces in shared memory, then one atomic add per block and sum. */
template <typename T>
__global__ void error_norms_kernel(const T *got, const float *ref, int64_t count, double *acc)
{
    __shared__ double part[3][256];
    double d2 = 0.0, r2 = 0.0, nans = 0.0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x) {
        const float g = load(got, i);
        if (!ref) { /* NaNs only */
            nans += isnan(g) ? 1.0 : 0.0;
            continue;
        }
        const float r = ref[i];
        if (isnan(g))
            nans += 1.0;
        else
            d2 += ((double)g - r) * ((double)g - r);
        r2 += (double)r * r;
    }
    part[0][threadIdx.x] = d2;
    part[1][threadIdx.x] = r2;
    part[2][threadIdx.x] = nans;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride)
            for (int k = 0; k < 3; k++)
                part[k][threadIdx.x] += part[k][threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        for (int k = 0; k < 3; k++)
            atomicAdd(&acc[k], part[k][0]);
}

template <typename T> __global__ void to_float_kernel(const T *src, float *dst, int64_t count)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x)
        dst[i] = load(src, i);
}

/* Calls f with a typed null pointer of the dtype's element type. */
template <typename F> int dispatch(convfind_dtype dtype, F f)
{
    switch (dtype) {
    case CONVFIND_DTYPE_F16:
        return f((__half *)nullptr);
    case CONVFIND_DTYPE_BF16:
        return f((__nv_bfloat16 *)nullptr);
    default:
        return f((float *)nullptr);
    }
}

int launched() { return (int)cudaGetLastError(); }

/* v rounded to the nearest TF32 value (10 mantissa bits, ties away from zero, as
 * cvt.rna.tf32.f32), except that a finite v stays finite: one that would round to
 * infinity is truncated instead, so that v - tf32(v) is never infinite. */
__device__ float tf32_round(float v)
{
    const unsigned mask = 0xffffe000u;
    unsigned u = __float_as_uint(v);
    float r = __uint_as_float((u + 0x1000u) & mask);
    return isinf(r) && !isinf(v) ? __uint_as_float(u & mask) : r;
}

/* dst[o][part][c][i] = the TF32 part (hi) or the f32 remainder (lo) of src[o][c][i]:
 * part p is the remainder where bit p of lo_parts is set. */
__global__ void split_tf32_kernel(const float *src, float *dst, int64_t outer, int64_t c,
                                  int64_t inner, unsigned lo_parts)
{
    const int64_t per = c * inner, total = outer * per;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t o = e / per, r = e - o * per;
        const float v = src[e], hi = tf32_round(v), lo = v - hi;
        float *d = dst + o * 3 * per + r;
        for (int part = 0; part < 3; part++)
            d[part * per] = (lo_parts >> part & 1u) ? lo : hi;
    }
}

/* The split of X in the engine's layout, read from X in the other layout: one pass where
 * a transpose and a split would take two.  dst is the split operand of the engine's
 * layout: NHWC engine [n][sp][g][3][cg], NCHW engine [n][g][3][cg][sp]; src is X in the
 * caller's (the other) layout.  One thread per source value, writing its three parts. */
__global__ void split_swap_kernel(const float *src, float *dst, int64_t n, int64_t g, int64_t cg,
                                  int64_t sp, int to_nhwc, unsigned lo_parts)
{
    const int64_t total = n * g * cg * sp;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t ni, gi, ci, si;
        if (to_nhwc) { /* src NCHW: [n][g][cg][sp], the spatial index fastest */
            si = e % sp;
            ci = (e / sp) % cg;
            gi = (e / (sp * cg)) % g;
            ni = e / (sp * cg * g);
        } else { /* src NHWC: [n][sp][g][cg], the channel fastest */
            ci = e % cg;
            gi = (e / cg) % g;
            si = (e / (cg * g)) % sp;
            ni = e / (cg * g * sp);
        }
        const float v = src[e], hi = tf32_round(v), lo = v - hi;
        for (int part = 0; part < 3; part++) {
            const int64_t d = to_nhwc ? (((ni * sp + si) * g + gi) * 3 + part) * cg + ci
                                      : (((ni * g + gi) * 3 + part) * cg + ci) * sp + si;
            dst[d] = (lo_parts >> part & 1u) ? lo : hi;
        }
    }
}

} // namespace

extern "C" int cf_cuda_split_tf32(const float *src, float *dst, int64_t outer, int64_t c,
                                  int64_t inner, unsigned lo_parts, void *stream)
{
    const int block = 256;
    split_tf32_kernel<<<grid_for(outer * c * inner, block), block, 0, (cudaStream_t)stream>>>(
        src, dst, outer, c, inner, lo_parts);
    return launched();
}

extern "C" int cf_cuda_swap_axes(const void *src, void *dst, size_t elem_size, int64_t n,
                                 int64_t a, int64_t b, void *stream)
{
    const int64_t tiles = n * ((a + 31) / 32) * ((b + 31) / 32);
    const dim3 block(32, 8);
    const unsigned grid = grid_for(tiles, 1);
    cudaStream_t s = (cudaStream_t)stream;
    if (elem_size == 2)
        swap_axes_kernel<<<grid, block, 0, s>>>((const uint16_t *)src, (uint16_t *)dst, n, a, b);
    else if (elem_size == 4)
        swap_axes_kernel<<<grid, block, 0, s>>>((const uint32_t *)src, (uint32_t *)dst, n, a, b);
    else
        return (int)cudaErrorInvalidValue;
    return launched();
}

extern "C" int cf_cuda_window(const void *src, void *dst, size_t elem_size,
                              convfind_layout layout, int64_t n, int64_t c, const int64_t *src_sp,
                              const int64_t *dst_sp, const int64_t *off, void *stream)
{
    window_shape w = {n, c, {0}, {0}, {0}, 1, 1, layout};
    for (int d = 0; d < CF_SP; d++) {
        w.src[d] = src_sp[d];
        w.dst[d] = dst_sp[d];
        w.off[d] = off[d];
        w.src_sp *= src_sp[d];
        w.dst_sp *= dst_sp[d];
    }
    const unsigned grid = grid_for(n * c * w.dst_sp, 256);
    cudaStream_t s = (cudaStream_t)stream;
    if (elem_size == 2)
        window_kernel<<<grid, 256, 0, s>>>(w, (const uint16_t *)src, (uint16_t *)dst);
    else if (elem_size == 4)
        window_kernel<<<grid, 256, 0, s>>>(w, (const uint32_t *)src, (uint32_t *)dst);
    else
        return (int)cudaErrorInvalidValue;
    return launched();
}

extern "C" int cf_cuda_epilogue(const cf_problem *p, const void *b, const void *z, void *y,
                                void *stream)
{
    return dispatch(p->dtype, [&](auto *t) {
        using T = std::remove_pointer_t<decltype(t)>;
        constexpr int V = 16 / sizeof(T);
        const bool nhwc = p->layout == CONVFIND_LAYOUT_NHWC;
        const int64_t inner = nhwc ? p->m : p->out_sp;
        if (p->y_elems < (1u << 31) && inner % V == 0 && (uintptr_t)y % 16 == 0 &&
            (uintptr_t)z % 16 == 0) {
            const uint32_t vectors = (uint32_t)(p->y_elems / V);
            epilogue_vec_kernel<T, V><<<grid_for(vectors, 256), 256, 0, (cudaStream_t)stream>>>(
                *p, (const T *)b, (const T *)z, (T *)y, vectors, (uint32_t)p->m,
                (uint32_t)p->out_sp, nhwc);
        } else {
            epilogue_kernel<<<grid_for((int64_t)p->y_elems, 256), 256, 0,
                              (cudaStream_t)stream>>>(*p, (const T *)b, (const T *)z, (T *)y);
        }
        return launched();
    });
}

extern "C" int cf_cuda_direct_conv(const cf_problem *p, const void *x, const void *w,
                                   const void *b, const void *z, void *y, void *stream)
{
    return dispatch(p->dtype, [&](auto *t) {
        using T = std::remove_pointer_t<decltype(t)>;
        direct_kernel<<<grid_for((int64_t)p->y_elems, 128), 128, 0, (cudaStream_t)stream>>>(
            *p, (const T *)x, (const T *)w, (const T *)b, (const T *)z, (T *)y);
        return launched();
    });
}

__global__ void hold_kernel(const volatile int *flag, uint64_t timeout_ns)
{
    uint64_t start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        if (*flag)
            return;
        __nanosleep(1000); /* a read over PCIe a microsecond is plenty */
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < timeout_ns);
}

extern "C" int cf_cuda_hold(const volatile int *flag, uint64_t timeout_ns, void *stream)
{
    hold_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(flag, timeout_ns);
    return launched();
}

extern "C" int cf_cuda_fill(void *dst, convfind_dtype dtype, size_t count, uint64_t seed,
                            void *stream)
{
    return dispatch(dtype, [&](auto *t) {
        using T = std::remove_pointer_t<decltype(t)>;
        fill_kernel<<<grid_for((int64_t)count, 256), 256, 0, (cudaStream_t)stream>>>(
            (T *)dst, (int64_t)count, seed);
        return launched();
    });
}

extern "C" int cf_cuda_to_float(const void *src, convfind_dtype dtype, float *dst, size_t count,
                                void *stream)
{
    return dispatch(dtype, [&](auto *t) {
        using T = std::remove_pointer_t<decltype(t)>;
        to_float_kernel<<<grid_for((int64_t)count, 256), 256, 0, (cudaStream_t)stream>>>(
            (const T *)src, dst, (int64_t)count);
        return launched();
    });
}

extern "C" int cf_cuda_error_norms(const void *got, convfind_dtype dtype, const float *ref,
                                   size_t count, double *acc, void *stream)
{
    return dispatch(dtype, [&](auto *t) {
        using T = std::remove_pointer_t<decltype(t)>;
        const int block = 256;
        const int64_t blocks = ((int64_t)count + block - 1) / block;
        error_norms_kernel<<<(unsigned)(blocks < 1 ? 1 : blocks > 1024 ? 1024 : blocks), block,
                             0, (cudaStream_t)stream>>>((const T *)got, ref, (int64_t)count,
                                                        acc);
        return launched();
    });
}

extern "C" int cf_cuda_split_tf32_swapped(const float *src, float *dst, int64_t n, int64_t g,
                                          int64_t cg, int64_t sp, int to_nhwc, unsigned lo_parts,
                                          void *stream)
{
    const int block = 256;
    split_swap_kernel<<<grid_for(n * g * cg * sp, block), block, 0, (cudaStream_t)stream>>>(
        src, dst, n, g, cg, sp, to_nhwc, lo_parts);
    return launched();
}
