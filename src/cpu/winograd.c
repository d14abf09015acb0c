/*
 * winograd.c - "cpu.winograd_f2x3" and "cpu.winograd_f4x3": Winograd F(2x2,3x3) and
 * F(4x4,3x3) for 2-D 3x3 convolutions with stride 1, dilation 1 and group 1 (any pads,
 * both layouts).  winograd.h describes the method and the data layout.
 *
 * An execution runs four parallel phases: pad X into [N][C][H'][W'], transform the
 * input tiles (per channel and group of tiles), alpha^2 GEMMs on sgemm's packed kernels
 * (per position), and transform the output with the fused epilogue (per output channel
 * and group of tiles).  The weights' transform U = G g G^T is computed in double and
 * packed once per ISA level; packed weights of another level are recomputed into the
 * workspace, since sgemm's panel shapes differ between levels.
 *
 * F(4x4,3x3) does 4x fewer multiplications than direct convolution, F(2x2,3x3) 2.25x,
 * at the price of larger rounding errors (docs/winograd.md gives measured bounds).
 */
#include <stdlib.h>
#include <string.h>

#include "core/algo.h"
#include "cpu/gemm/sgemm.h"
#include "cpu/isa.h"
#include "cpu/winograd.h"
#include "cpu/workspace.h"
#include "util/error.h"

static const cf_wg_kernels *wg_kernels(int mt)
{
#if defined(__x86_64__)
    switch (cf_isa_active()) {
    case CF_ISA_AVX512F:
        return mt == 2 ? &cf_wg2_avx512 : &cf_wg4_avx512;
    case CF_ISA_AVX2_FMA:
        return mt == 2 ? &cf_wg2_avx2 : &cf_wg4_avx2;
    default:
        break;
    }
#endif
    return mt == 2 ? &cf_wg2_portable : &cf_wg4_portable;
}

/* G of F(2x2,3x3) and F(4x4,3x3), alpha x 3. */
static const double wg_g2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
static const double wg_g4[6][3] = {{1.0 / 4, 0, 0},
                                   {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                   {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                   {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                   {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                   {0, 0, 1}};

static bool wg_applicable(const cf_problem *p, int mt)
{
    if (p->op != CONVFIND_OP_CONV || p->dtype != CONVFIND_DTYPE_F32 || p->nsp != 2 ||
        p->group != 1)
        return false;
    for (int a = 0; a < 2; a++)
        if (p->k[a] != 3 || p->stride[a] != 1 || p->dil[a] != 1)
            return false;
    /* 32-bit lane offsets into the padded input and into Y. */
    int64_t th = (p->out[0] + mt - 1) / mt, tw = (p->out[1] + mt - 1) / mt;
    double xpad = (double)p->n * (double)p->c * (double)(th * mt + 2) * (double)(tw * mt + 2);
    return xpad < 2147483647.0 && (double)p->y_elems < 2147483647.0;
}

/* Geometry of the job (no buffers). */
static cf_wg_job wg_job_of(const cf_problem *p, int mt, const cf_sgemm_kernel *kern)
{
    cf_wg_job j = {.p = p, .mt = mt, .alpha = mt + 2, .nr = kern->nr};
    j.tiles_h = (p->out[0] + mt - 1) / mt;
    j.tiles_w = (p->out[1] + mt - 1) / mt;
    j.ntiles = p->n * j.tiles_h * j.tiles_w;
    j.hp = j.tiles_h * mt + 2;
    j.wp = j.tiles_w * mt + 2;
    j.ldm = (j.ntiles + 15) / 16 * 16;
    return j;
}

/* Workspace parts: padded X, V, M, and U plus one position's K x C when the weights are
 * transformed per execution. */
typedef struct wg_ws {
    size_t x, v, m, u, tmp;
    size_t v_pos, u_pos, m_pos;
    cf_ws total;
} wg_ws;

static wg_ws wg_ws_of(const cf_problem *p, const cf_wg_job *j, const cf_sgemm_kernel *kern)
{
    wg_ws w = {0};
    cf_ws *t = &w.total;
    size_t pos = (size_t)(j->alpha * j->alpha);
    bool ovf = false;
    w.v_pos = cf_sgemm_packed_b_floats(kern, (size_t)p->c, (size_t)j->ntiles, &ovf);
    w.u_pos = cf_sgemm_packed_a_floats(kern, (size_t)p->m, (size_t)p->c, &ovf);
    t->overflow |= ovf;
    w.m_pos = cf_ws_mul(t, (size_t)p->m, (size_t)j->ldm);
    size_t planes = cf_ws_mul(t, (size_t)p->n, (size_t)p->c);
    w.x = cf_ws_take(t, cf_ws_mul(t, planes, cf_ws_mul(t, (size_t)j->hp, (size_t)j->wp)),
                     sizeof(float));
    w.v = cf_ws_take(t, cf_ws_mul(t, pos, w.v_pos), sizeof(float));
    w.m = cf_ws_take(t, cf_ws_mul(t, pos, w.m_pos), sizeof(float));
    w.u = cf_ws_take(t, cf_ws_mul(t, pos, w.u_pos), sizeof(float));
    w.tmp = cf_ws_take(t, cf_ws_mul(t, (size_t)p->m, (size_t)p->c), sizeof(float));
    return w;
}

static convfind_status wg_workspace(const cf_problem *p, size_t *bytes, int mt)
{
    /* The level may change before execution: size for every level's GEMM kernel. */
    size_t most = 0;
    for (int level = 0; level < CF_ISA_COUNT; level++) {
        const cf_sgemm_kernel *kern = cf_sgemm_kernel_for((cf_isa)level);
        cf_wg_job j = wg_job_of(p, mt, kern);
        wg_ws w = wg_ws_of(p, &j, kern);
        if (w.total.overflow)
            return cf_fail(CONVFIND_ERR_OVERFLOW, "cpu.winograd_f%dx3 workspace for %lld x %lld "
                           "channels over %lld positions does not fit in size_t", mt,
                           (long long)p->c, (long long)p->m, (long long)p->out_sp);
        if (w.total.bytes > most)
            most = w.total.bytes;
    }
    *bytes = most;
    return CONVFIND_OK;
}

/* ---- weights ---------------------------------------------------------------------- */

typedef struct wg_packed {
    const cf_sgemm_kernel *kern;
    float *u;
} wg_packed;

/* U = G g G^T for every (k, c), packed per position as sgemm's A (K x C).  `tmp` holds
 * K * C floats. */
static void wg_pack(const cf_problem *p, int mt, const cf_sgemm_kernel *kern, const float *w,
                    float *dst, size_t u_pos, float *tmp)
{
    int alpha = mt + 2;
    const double(*G)[3] = mt == 2 ? wg_g2 : wg_g4;
    for (int r = 0; r < alpha; r++)
        for (int q = 0; q < alpha; q++) {
            for (int64_t kc = 0; kc < p->m * p->c; kc++) {
                const float *g = w + kc * 9;
                double s = 0.0;
                for (int a = 0; a < 3; a++)
                    for (int b = 0; b < 3; b++)
                        s += G[r][a] * (double)g[a * 3 + b] * G[q][b];
                tmp[kc] = (float)s;
            }
            cf_sgemm_pack_a(kern, (size_t)p->m, (size_t)p->c, tmp, (ptrdiff_t)p->c, 1,
                            dst + (size_t)(r * alpha + q) * u_pos);
        }
}

static convfind_status wg_pack_weights(const cf_problem *p, const void *w, void **packed, int mt)
{
    *packed = NULL;
    const cf_sgemm_kernel *kern = cf_sgemm_kernel_for(cf_isa_active());
    cf_wg_job j = wg_job_of(p, mt, kern);
    wg_ws ws = wg_ws_of(p, &j, kern);
    if (ws.total.overflow)
        return cf_fail(CONVFIND_ERR_OVERFLOW, "cpu.winograd_f%dx3 packed weights do not fit", mt);
    size_t floats = ws.u_pos * (size_t)(j.alpha * j.alpha);
    wg_packed *pk = malloc(sizeof *pk);
    float *u = aligned_alloc(64, (floats * sizeof(float) + 63) & ~(size_t)63);
    float *tmp = malloc((size_t)(p->m * p->c) * sizeof(float));
    if (!pk || !u || !tmp) {
        free(pk), free(u), free(tmp);
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of Winograd weights",
                       floats * sizeof(float));
    }
    wg_pack(p, mt, kern, w, u, ws.u_pos, tmp);
    free(tmp);
    pk->kern = kern;
    pk->u = u;
    *packed = pk;
    return CONVFIND_OK;
}

static void wg_free_packed(void *packed)
{
    wg_packed *pk = packed;
    if (pk)
        free(pk->u);
    free(pk);
}

/* ---- execution -------------------------------------------------------------------- */

typedef struct wg_run {
    const cf_wg_job *j;
    const cf_wg_kernels *k;
    const cf_sgemm_kernel *kern;
    const float *x, *u;
    size_t u_pos;
} wg_run;

/* Pads plane (n, c) of X into xpad. */
static void wg_pad_task(void *arg, size_t index)
{
    const wg_run *r = arg;
    const cf_wg_job *j = r->j;
    const cf_problem *p = j->p;
    int64_t n = (int64_t)index / p->c, c = (int64_t)index % p->c;
    float *dst = (float *)j->xpad + index * (size_t)(j->hp * j->wp);
    memset(dst, 0, (size_t)(j->hp * j->wp) * sizeof(float));
    int64_t ih_n = p->in[0], iw_n = p->in[1];
    int64_t pt = p->pad_begin[0], pl = p->pad_begin[1];
    int64_t w_lo = pl > 0 ? 0 : -pl, w_hi = iw_n < j->wp - pl ? iw_n : j->wp - pl;
    for (int64_t ih = pt > 0 ? 0 : -pt; ih < ih_n && ih + pt < j->hp; ih++) {
        float *row = dst + (ih + pt) * j->wp + pl;
        if (p->layout == CONVFIND_LAYOUT_NHWC) {
            const float *src = r->x + ((n * ih_n + ih) * iw_n) * p->c + c;
            for (int64_t iw = w_lo; iw < w_hi; iw++)
                row[iw] = src[iw * p->c];
        } else if (w_hi > w_lo) {
            const float *src = r->x + ((n * p->c + c) * ih_n + ih) * iw_n;
            memcpy(row + w_lo, src + w_lo, (size_t)(w_hi - w_lo) * sizeof(float));
        }
    }
}

static void wg_input_task(void *arg, size_t index)
{
    const wg_run *r = arg;
    r->k->input(r->j, index);
}

static void wg_gemm_task(void *arg, size_t pos)
{
    const wg_run *r = arg;
    const cf_wg_job *j = r->j;
    cf_sgemm_packed(r->kern, (size_t)j->p->m, (size_t)j->ntiles, (size_t)j->p->c,
                    r->u + pos * r->u_pos, j->v + pos * j->v_pos, j->mo + pos * j->mo_pos,
                    (ptrdiff_t)j->ldm, 1, NULL, NULL);
}

static void wg_output_task(void *arg, size_t index)
{
    const wg_run *r = arg;
    r->k->output(r->j, index);
}

static convfind_status wg_execute(const cf_problem *p, const cf_exec_args *a, int mt)
{
    const cf_sgemm_kernel *kern = cf_sgemm_kernel_for(cf_isa_active());
    const cf_wg_kernels *k = wg_kernels(mt);
    cf_wg_job j = wg_job_of(p, mt, kern);
    wg_ws ws = wg_ws_of(p, &j, kern);
    if (ws.total.overflow)
        return cf_fail(CONVFIND_ERR_OVERFLOW, "cpu.winograd_f%dx3 workspace does not fit", mt);
    if (!a->workspace || a->workspace_size < ws.total.bytes)
        return cf_fail(CONVFIND_ERR_INVALID_SHAPE, "cpu.winograd_f%dx3 needs %zu bytes of "
                       "workspace, got %zu", mt, ws.total.bytes, a->workspace_size);
    if (kern->nr % k->vl != 0)
        return cf_fail(CONVFIND_ERR_UNSUPPORTED, "cpu.winograd_f%dx3: GEMM panel width %d is "
                       "not a multiple of the vector length %d", mt, kern->nr, k->vl);
    char *base = a->workspace;
    j.xpad = (float *)(base + ws.x);
    j.v = (float *)(base + ws.v);
    j.v_pos = ws.v_pos;
    j.mo = (float *)(base + ws.m);
    j.mo_pos = ws.m_pos;
    j.b = a->b;
    j.z = a->z;
    j.y = a->y;

    const wg_packed *pk = a->packed_w;
    const float *u = pk && pk->kern == kern ? pk->u : NULL;
    if (!u) {
        float *dst = (float *)(base + ws.u);
        wg_pack(p, mt, kern, a->w, dst, ws.u_pos, (float *)(base + ws.tmp));
        u = dst;
    }
    wg_run run = {&j, k, kern, a->x, u, ws.u_pos};
    int64_t groups = (j.ntiles + k->vl - 1) / k->vl;
    cf_parallel_for(a->pool, (size_t)(p->n * p->c), wg_pad_task, &run);
    cf_parallel_for(a->pool, (size_t)(p->c * groups), wg_input_task, &run);
    cf_parallel_for(a->pool, (size_t)(j.alpha * j.alpha), wg_gemm_task, &run);
    cf_parallel_for(a->pool, (size_t)(p->m * groups), wg_output_task, &run);
    return CONVFIND_OK;
}

/* The two algorithms: the same code with the tile size bound. */
#define WG_ALGO(MT)                                                                        \
    static bool wg##MT##_applicable(const cf_problem *p) { return wg_applicable(p, MT); }  \
    static convfind_status wg##MT##_workspace(const cf_problem *p, size_t *bytes)          \
    {                                                                                      \
        return wg_workspace(p, bytes, MT);                                                 \
    }                                                                                      \
    static convfind_status wg##MT##_pack(const cf_problem *p, const void *state,           \
                                         const void *w, void **packed)                     \
    {                                                                                      \
        (void)state;                                                                       \
        return wg_pack_weights(p, w, packed, MT);                                          \
    }                                                                                      \
    static convfind_status wg##MT##_execute(const cf_problem *p, const void *state,        \
                                            const cf_exec_args *a)                         \
    {                                                                                      \
        (void)state;                                                                       \
        return wg_execute(p, a, MT);                                                       \
    }                                                                                      \
    const cf_algo cf_algo_cpu_winograd_f##MT##x3 = {                                       \
        .name = "cpu.winograd_f" #MT "x3",                                                 \
        .family = "winograd",                                                              \
        .applicable = wg##MT##_applicable,                                                 \
        .workspace = wg##MT##_workspace,                                                   \
        .pack_weights = wg##MT##_pack,                                                     \
        .free_packed = wg_free_packed,                                                     \
        .execute = wg##MT##_execute,                                                       \
    };

WG_ALGO(2)
WG_ALGO(4)
