/*
 * gpu_util.c - helpers of the GPU tests (see gpu_util.h).
 */
#include "gpu_util.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gu_require_gpu(void)
{
    char why[256];
    if (!convfind_cuda_available(0, why, sizeof why)) {
        printf("SKIP: %s\n", why);
        exit(GU_SKIP);
    }
}

/* What the test was doing last (gu_doing), for failure messages: a sticky CUDA error
 * surfaces at the next synchronization, after the work that caused it. */
static char doing[256];

void gu_doing(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(doing, sizeof doing, fmt, ap);
    va_end(ap);
}

static void fail_while(void)
{
    if (doing[0])
        fprintf(stderr, "  (while %s)\n", doing);
    exit(1);
}

void gu_check(convfind_status st, const char *what)
{
    if (st != CONVFIND_OK) {
        fprintf(stderr, "FAIL: %s: %s: %s\n", what, convfind_status_name(st),
                convfind_last_error());
        fail_while();
    }
}

static void check_cuda(cudaError_t err, const char *what)
{
    if (err != cudaSuccess) {
        fprintf(stderr, "FAIL: %s: %s\n", what, cudaGetErrorString(err));
        fail_while();
    }
}

convfind_problem *gu_problem(const convfind_conv_desc *desc)
{
    convfind_problem *p;
    gu_check(convfind_problem_create(desc, &p), "convfind_problem_create");
    return p;
}

/* Host rounding to the dtype: round-to-nearest-even, as the device conversions do. */
static float round_bf16(float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&v, &u, 4);
    return v;
}

static uint16_t to_half_bits(float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    uint32_t sign = (u >> 16) & 0x8000u;
    float a = fabsf(v);
    if (a >= 65520.0f)
        return (uint16_t)(sign | 0x7c00u);
    if (a < 6.103515625e-05f) /* subnormal: multiples of 2^-24 */
        return (uint16_t)(sign | (uint32_t)lrintf(a * 16777216.0f));
    memcpy(&u, &a, 4);
    uint32_t e = (u >> 23) - 127 + 15, m = u & 0x7fffffu;
    uint32_t h = (e << 10) | (m >> 13);
    uint32_t rest = m & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        h++;
    return (uint16_t)(sign | h);
}

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    float v = e == 0 ? ldexpf((float)m, -24) : ldexpf((float)(m | 0x400u), (int)e - 25);
    uint32_t u;
    memcpy(&u, &v, 4);
    u |= sign;
    memcpy(&v, &u, 4);
    return v;
}

static float round_to(convfind_dtype dt, float v)
{
    return dt == CONVFIND_DTYPE_F16    ? half_to_float(to_half_bits(v))
           : dt == CONVFIND_DTYPE_BF16 ? round_bf16(v)
                                       : v;
}

static void *upload(const float *v, size_t n, convfind_dtype dt)
{
    size_t e = dt == CONVFIND_DTYPE_F32 ? 4 : 2;
    void *host = malloc(n * e + 1), *dev = NULL;
    for (size_t i = 0; host && i < n; i++) {
        if (dt == CONVFIND_DTYPE_F32) {
            ((float *)host)[i] = v[i];
        } else {
            uint32_t u;
            memcpy(&u, &v[i], 4);
            ((uint16_t *)host)[i] = dt == CONVFIND_DTYPE_F16 ? to_half_bits(v[i])
                                                             : (uint16_t)(u >> 16);
        }
    }
    check_cuda(host ? cudaMalloc(&dev, n * e + 16) : cudaErrorMemoryAllocation, "cudaMalloc");
    check_cuda(cudaMemcpy(dev, host, n * e, cudaMemcpyHostToDevice), "upload");
    free(host);
    return dev;
}

static float *random_floats(size_t n, convfind_dtype dt, unsigned *seed)
{
    float *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) {
        fprintf(stderr, "FAIL: out of host memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1103515245u + 12345u;
        float r = ((float)((*seed >> 8) & 0xffff) - 32767.5f) / 32768.0f;
        v[i] = round_to(dt, r);
    }
    return v;
}

void gu_data_init(gu_data *d, const convfind_conv_desc *desc, const convfind_problem *p,
                  unsigned seed)
{
    memset(d, 0, sizeof *d);
    d->p = p;
    d->dtype = desc->dtype;
    gu_check(convfind_problem_sizes(p, &d->nx, &d->nw, &d->ny, &d->nb), "sizes");
    d->x = random_floats(d->nx, d->dtype, &seed);
    d->w = random_floats(d->nw, d->dtype, &seed);
    d->b = random_floats(d->nb, d->dtype, &seed);
    d->z = random_floats(desc->has_residual ? d->ny : 0, d->dtype, &seed);
    d->expect = random_floats(d->ny, CONVFIND_DTYPE_F32, &seed);
    d->got = random_floats(d->ny, CONVFIND_DTYPE_F32, &seed);
    d->dx = upload(d->x, d->nx, d->dtype);
    d->dw = upload(d->w, d->nw, d->dtype);
    d->db = desc->has_bias ? upload(d->b, d->nb, d->dtype) : NULL;
    d->dz = desc->has_residual ? upload(d->z, d->ny, d->dtype) : NULL;
    d->dy = upload(d->got, d->ny, d->dtype);

    /* The CPU reference, on an f32 copy of the problem. */
    convfind_conv_desc f32 = *desc;
    f32.dtype = CONVFIND_DTYPE_F32;
    f32.math_mode = CONVFIND_MATH_STRICT;
    convfind_problem *rp = gu_problem(&f32);
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.find_policy = CONVFIND_FIND_HEURISTIC;
    o.db_path = ":memory:";
    convfind_context *cpu;
    convfind_plan *plan;
    gu_check(convfind_context_create(&o, &cpu), "CPU context");
    gu_check(convfind_plan_create_with_algorithm(cpu, rp, "cpu.reference", &plan), "reference");
    convfind_tensors t = {.x = d->x, .w = d->w, .y = d->expect,
                          .b = desc->has_bias ? d->b : NULL,
                          .z = desc->has_residual ? d->z : NULL};
    gu_check(convfind_execute(plan, &t), "reference execution");
    convfind_plan_destroy(plan);
    convfind_context_destroy(cpu);
    convfind_problem_destroy(rp);
}

void gu_data_free(gu_data *d)
{
    void *dev[] = {d->dx, d->dw, d->db, d->dz, d->dy};
    for (int i = 0; i < 5; i++)
        if (dev[i])
            cudaFree(dev[i]);
    free(d->x);
    free(d->w);
    free(d->b);
    free(d->z);
    free(d->expect);
    free(d->got);
}

convfind_tensors gu_tensors(const gu_data *d)
{
    convfind_tensors t = {.x = d->dx, .w = d->dw, .b = d->db, .z = d->dz, .y = d->dy};
    return t;
}

void gu_poison(gu_data *d)
{
    check_cuda(cudaMemset(d->dy, 0xff, d->ny * (d->dtype == CONVFIND_DTYPE_F32 ? 4 : 2)),
               "poison");
}

double gu_error(gu_data *d)
{
    check_cuda(cudaDeviceSynchronize(), "synchronize");
    size_t e = d->dtype == CONVFIND_DTYPE_F32 ? 4 : 2;
    void *host = malloc(d->ny * e + 1);
    check_cuda(host ? cudaMemcpy(host, d->dy, d->ny * e, cudaMemcpyDeviceToHost)
                    : cudaErrorMemoryAllocation, "download");
    double num = 0, den = 0;
    for (size_t i = 0; i < d->ny; i++) {
        float v;
        if (d->dtype == CONVFIND_DTYPE_F32) {
            v = ((float *)host)[i];
        } else if (d->dtype == CONVFIND_DTYPE_F16) {
            v = half_to_float(((uint16_t *)host)[i]);
        } else {
            uint32_t u = (uint32_t)((uint16_t *)host)[i] << 16;
            memcpy(&v, &u, 4);
        }
        d->got[i] = v;
        if (isnan(v))
            num = INFINITY;
        double diff = (double)v - d->expect[i];
        num += diff * diff;
        den += (double)d->expect[i] * d->expect[i];
    }
    free(host);
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

double gu_tolerance(const convfind_conv_desc *desc)
{
    if (desc->dtype != CONVFIND_DTYPE_F32)
        return 2e-2;
    /* Under ALLOW_SPLIT_TF32 plain f32 configurations are held to strict's bound and
     * split ones to a tighter one (test_cuda_conv). */
    return desc->math_mode == CONVFIND_MATH_ALLOW_TF32 ? 1e-2 : 1e-4;
}

convfind_context *gu_context(convfind_find_policy policy, const char *db_path)
{
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.device = CONVFIND_DEVICE_CUDA;
    o.find_policy = policy;
    o.find_time_budget_s = 0.05;
    o.db_path = db_path ? db_path : ":memory:";
    convfind_context *ctx;
    gu_check(convfind_context_create(&o, &ctx), "CUDA context");
    return ctx;
}
