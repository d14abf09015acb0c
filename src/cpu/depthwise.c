/*
 * depthwise.c - "cpu.depthwise": depthwise Conv (group == C, any channel multiplier),
 * native in both layouts (depthwise.h says how each is vectorised); and
 * "cpu.depthwise_3x3", the 3x3 stride-1 and stride-2 NCHW layers of MobileNets without
 * transposes (at the end of this file).
 *
 * Depthwise layers do about 2 * k_sp FLOPs per output, so they are bound by memory
 * traffic and shuffles, not FMAs, and are judged in bytes per second: every path reads
 * X and writes Y once from memory.  NCHW 1-D and 2-D problems (any kernel, stride,
 * dilation, pads) run in blocks of CF_VL channels, transposed to channels-last and back
 * inside L1 as part of one pass, so that planes of 7x7 or 14x14 fill every lane and
 * stride 2 costs no gathers; 3-D problems and rows too wide for that kernel's buffers
 * run plane by plane in place.  Weights are packed once per plan in blocks of CF_VL
 * channels (pack_weights), or per execution into the workspace without a plan.  Padded
 * inputs beyond cf_geom3_bounded (geom3.h) are left to the algorithms that index X
 * directly.
 */

#include "algo/algo.h"
#include "cpu/depthwise.h"
#include "cpu/kernel_table.h"
#include "cpu/workspace.h"
#include "util/error.h"
#include "util/threadpool.h"

#include <stdlib.h>

static bool dw_applicable(const cf_problem *p)
{
    if (p->op != CONVFIND_OP_CONV || p->dtype != CONVFIND_DTYPE_F32 || p->group != p->c)
        return false;
    /* The NCHW plane kernel gathers through 32-bit lane offsets, the channel-block
     * kernel stages padded rows. */
    cf_geom3 s = cf_geom3_of(p);
    return cf_geom3_bounded(&s);
}

/* Plans the NCHW channel-block kernel (depthwise.h) for CF_VL = vl: input rows of
 * `width` pixels (pads included), the most output rows per step whose ring of input rows
 * and sums fit the kernel's buffers, and bands of rows so that there are about
 * DW_BANDS_PER_THREAD tasks per thread (a band re-reads the rows its neighbour also
 * needs, so bands are only cut where channel blocks alone are too few).  False for 3-D
 * problems and rows too wide for the buffers. */
#define DW_BANDS_PER_THREAD 4

/* The most output rows per step whose ring (halo rows for the first, stride[1] more
 * for each further one, and one zero row) and sums fit ring_floats and sums_floats;
 * 0 when not one does. */
static int64_t dw_blocked_step(const cf_dw_job *j, int64_t vl, int64_t halo,
                               int64_t ring_floats, int64_t sums_floats)
{
    const cf_geom3 *s = &j->s;
    int64_t slots = ring_floats / (j->width * vl) - 1;
    int64_t by_sums = (sums_floats / vl - (vl - 1)) / s->out[2];
    if (slots < halo || by_sums < 1)
        return 0;
    int64_t by_ring = (slots - halo) / s->stride[1] + 1;
    return by_ring < by_sums ? by_ring : by_sums;
}

static bool dw_blocked_plan(cf_dw_job *j, int64_t vl, int64_t threads)
{
    const cf_geom3 *s = &j->s;
    const cf_problem *p = j->p;
    if (s->in[0] != 1 || s->k[0] != 1 || s->out[0] != 1 || s->k[1] > CF_DW_KH_MAX)
        return false;
    int64_t reach = (s->out[2] - 1) * s->stride[2] + (s->k[2] - 1) * s->dil[2] + 1;
    j->width = s->pad[2] + s->in[2] > reach ? s->pad[2] + s->in[2] : reach;
    int64_t halo = (s->k[1] - 1) * s->dil[1] + 1;
    /* Half the buffers where that holds a step: X and Y stream through L1 as well
     * (measured faster on MobileNetV2's 28- and 56-wide rows). */
    j->step = dw_blocked_step(j, vl, halo, CF_DW_RING_FLOATS / 2, CF_DW_SUMS_FLOATS / 2);
    if (j->step < 1)
        j->step = dw_blocked_step(j, vl, halo, CF_DW_RING_FLOATS, CF_DW_SUMS_FLOATS);
    if (j->step < 1)
        return false;
    j->step = j->step < s->out[1] ? j->step : s->out[1];
    j->ring = (j->step - 1) * s->stride[1] + halo;
    j->cblocks = (p->m + vl - 1) / vl;
    int64_t want = DW_BANDS_PER_THREAD * threads, have = p->n * j->cblocks;
    int64_t bands = have >= want ? 1 : (want + have - 1) / have;
    bands = bands < s->out[1] ? bands : s->out[1];
    j->band = (s->out[1] + bands - 1) / bands;
    j->bands = (s->out[1] + j->band - 1) / j->band;
    return true;
}

/* Workspace parts: weights packed per execution when the plan has none packed (or
 * packed at another ISA's channel block), and for NHWC with multiplier > 1 X with each
 * input channel repeated. */
typedef struct dw_ws {
    size_t w, xrep;
    cf_ws total;
} dw_ws;

static size_t dw_packed_floats(const cf_problem *p, int64_t vl)
{
    return (size_t)((p->m + vl - 1) / vl * vl * p->k_sp);
}

static dw_ws dw_ws_of(const cf_problem *p, const cf_dw_job *j)
{
    dw_ws w = {0};
    cf_ws *t = &w.total;
    w.w = cf_ws_take(t, dw_packed_floats(p, CF_DW_VL_MAX), sizeof(float));
    size_t rep = p->layout == CONVFIND_LAYOUT_NHWC && j->mult > 1
                     ? cf_ws_mul(t, cf_ws_mul(t, (size_t)p->n, (size_t)p->in_sp), (size_t)p->m)
                     : 0;
    w.xrep = cf_ws_take(t, rep, sizeof(float));
    return w;
}

/* The job of `p` on the tensors of `a` (none when a is NULL: sizes only). */
static cf_dw_job dw_job_of(const cf_problem *p, const cf_exec_args *a)
{
    cf_dw_job j = {.p = p, .s = cf_geom3_of(p), .mult = p->m / p->c, .ntaps = p->k_sp};
    if (a) {
        j.x = a->x;
        j.w = a->w;
        j.b = a->b;
        j.z = a->z;
        j.y = a->y;
    }
    return j;
}

static convfind_status dw_workspace(const cf_problem *p, size_t *bytes)
{
    cf_dw_job j = dw_job_of(p, NULL);
    dw_ws w = dw_ws_of(p, &j);
    if (w.total.overflow)
        return cf_fail(CONVFIND_ERR_OVERFLOW, "cpu.depthwise workspace for %lld channels of "
                       "%lld positions does not fit in size_t", (long long)p->m,
                       (long long)p->in_sp);
    *bytes = w.total.bytes;
    return CONVFIND_OK;
}

/* Tasks take several rows or planes when those are small, so that claiming a task (an
 * atomic shared by the threads) stays cheap next to the work in it. */
#define DW_TASK_OUTPUTS 4096

/* Units (a kernel's rows or planes) in tasks of consecutive units: each task passes its
 * run to `run` in one call where the kernel takes runs, else to `unit` one at a time. */
typedef struct dw_run {
    void (*unit)(const cf_dw_job *j, size_t index);
    void (*run)(const cf_dw_job *j, size_t first, size_t count);
    const cf_dw_job *j;
    size_t per_task, count; /* units per task, and in all */
} dw_run;

static void dw_units_task(void *arg, size_t index)
{
    const dw_run *r = arg;
    size_t first = index * r->per_task;
    size_t n = r->count - first < r->per_task ? r->count - first : r->per_task;
    if (r->run) {
        r->run(r->j, first, n);
        return;
    }
    for (size_t i = first; i < first + n; i++)
        r->unit(r->j, i);
}

/* Runs `count` units of `outputs` outputs each, in tasks of about DW_TASK_OUTPUTS, as
 * many as a multiple of the pool's threads: 7 tasks on 2 threads left one with 4 of them
 * (algo_layers, 2 threads, cpu.depthwise_3x3: s2 c576 14x14 in 8 tasks 0.0072-0.0074 ->
 * 0.0063-0.0067 ms, c960 7x7 in 12 0.0064-0.0069 -> 0.0060-0.0064). */
static void dw_run_units(cf_threadpool *pool, dw_run *r, size_t count, size_t outputs)
{
    const size_t threads = (size_t)cf_threadpool_size(pool);
    size_t tasks = (count * outputs + DW_TASK_OUTPUTS - 1) / DW_TASK_OUTPUTS;
    tasks = (tasks + threads - 1) / threads * threads;
    tasks = tasks < count ? tasks : count;
    r->count = count;
    r->per_task = tasks ? (count + tasks - 1) / tasks : 1;
    cf_parallel_for(pool, (count + r->per_task - 1) / r->per_task, dw_units_task, r);
}

/* W as [M / vl][tap][vl], channels past M zero: one vector load per tap and block of
 * vl channels, for the NHWC and the NCHW channel-block kernels. */
static void dw_pack(const cf_problem *p, const float *w, int64_t vl, float *dst)
{
    for (int64_t m0 = 0; m0 < p->m; m0 += vl)
        for (int64_t t = 0; t < p->k_sp; t++)
            for (int64_t l = 0; l < vl; l++)
                *dst++ = m0 + l < p->m ? w[(m0 + l) * p->k_sp + t] : 0.0f;
}

typedef struct dw_packed {
    int vl;
    float *w;
    size_t bytes; /* of w */
} dw_packed;

static convfind_status dw_pack_weights(const cf_problem *p, const void *state, const void *w,
                                       void **packed)
{
    (void)state;
    *packed = NULL;
    int vl = cf_kernel_table_active()->depthwise->vl;
    size_t floats = dw_packed_floats(p, vl);
    dw_packed *pk = malloc(sizeof *pk);
    float *data = aligned_alloc(64, (floats * sizeof(float) + 63) & ~(size_t)63);
    if (!pk || !data) {
        free(pk);
        free(data);
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of packed weights "
                       "for cpu.depthwise", floats * sizeof(float));
    }
    dw_pack(p, w, vl, data);
    pk->vl = vl;
    pk->w = data;
    pk->bytes = floats * sizeof(float);
    *packed = pk;
    return CONVFIND_OK;
}

static void dw_free_packed(void *packed)
{
    dw_packed *pk = packed;
    if (pk)
        free(pk->w);
    free(pk);
}

static size_t dw_packed_extent(const cf_problem *p, const void *packed, const void **start)
{
    (void)p;
    const dw_packed *pk = packed;
    *start = pk->w;
    return pk->bytes;
}

typedef struct dw_blocked_run {
    const cf_dw_kernels *k;
    const cf_dw_job *j;
} dw_blocked_run;

static void dw_blocked_task(void *arg, size_t index)
{
    const dw_blocked_run *r = arg;
    r->k->nchw_blocked(r->j, index);
}

typedef struct dw_rep_job {
    const cf_problem *p;
    const float *x;
    float *dst;
    int64_t mult;
} dw_rep_job;

/* Repeats each input channel of one pixel `mult` times. */
static void dw_repeat_task(void *arg, size_t index)
{
    const dw_rep_job *r = arg;
    const float *src = r->x + index * (size_t)r->p->c;
    float *dst = r->dst + index * (size_t)r->p->m;
    for (int64_t c = 0; c < r->p->c; c++)
        for (int64_t k = 0; k < r->mult; k++)
            dst[c * r->mult + k] = src[c];
}

static convfind_status dw_execute(const cf_problem *p, const void *state, const cf_exec_args *a)
{
    (void)state;
    cf_dw_job j = dw_job_of(p, a);
    dw_ws ws = dw_ws_of(p, &j);
    if (ws.total.overflow)
        return cf_fail(CONVFIND_ERR_OVERFLOW, "cpu.depthwise workspace does not fit in size_t");
    if (ws.total.bytes && (a->workspace_size < ws.total.bytes || !a->workspace))
        return cf_fail(CONVFIND_ERR_INVALID_SHAPE, "cpu.depthwise needs %zu bytes of workspace, "
                       "got %zu", ws.total.bytes, a->workspace_size);
    char *base = a->workspace;
    const cf_dw_kernels *k = cf_kernel_table_active()->depthwise;
    int vl = k->vl;
    bool nhwc = p->layout == CONVFIND_LAYOUT_NHWC;
    int64_t threads = cf_threadpool_size(a->pool);
    bool blocked = !nhwc && dw_blocked_plan(&j, vl, threads);
    if (nhwc || blocked) {
        const dw_packed *pk = a->packed_w;
        if (pk && pk->vl == vl) {
            j.w = pk->w;
        } else {
            float *wp = (float *)(base + ws.w);
            dw_pack(p, a->w, vl, wp);
            j.w = wp;
        }
    }
    if (blocked) {
        dw_blocked_run br = {k, &j};
        cf_parallel_for(a->pool, (size_t)(p->n * j.cblocks * j.bands), dw_blocked_task, &br);
    } else if (nhwc) {
        j.xc = p->c;
        if (j.mult > 1) {
            dw_rep_job rep = {p, a->x, (float *)(base + ws.xrep), j.mult};
            cf_parallel_for(a->pool, (size_t)(p->n * p->in_sp), dw_repeat_task, &rep);
            j.x = rep.dst;
            j.xc = p->m;
        }
        dw_run run = {.unit = k->nhwc_row, .j = &j};
        dw_run_units(a->pool, &run, (size_t)(p->n * j.s.out[0] * j.s.out[1]),
                     (size_t)(j.s.out[2] * p->m));
    } else {
        dw_run run = {.unit = k->nchw_plane, .j = &j};
        dw_run_units(a->pool, &run, (size_t)(p->n * p->m), (size_t)p->out_sp);
    }
    return CONVFIND_OK;
}

const cf_algo cf_algo_cpu_depthwise = {
    .name = "cpu.depthwise",
    .family = "depthwise",
    .applicable = dw_applicable,
    .workspace = dw_workspace,
    .prepare = NULL,
    .release = NULL,
    .pack_weights = dw_pack_weights,
    .free_packed = dw_free_packed,
    .packed_extent = dw_packed_extent,

    .execute = dw_execute,
};

/* "cpu.depthwise_3x3": the 3x3 depthwise Conv of MobileNets and EfficientNets at
 * strides 1 and 2, NCHW in and out, without the channel-block kernel's transposes: X is
 * read and Y written in place (depthwise.h says how each stride is vectorised).  Its
 * FMAs and loads cost about what the channel-block kernel's sums alone cost; Find
 * measures which of the two is faster per problem.  W is read as ONNX stores it: there
 * is nothing to pack, and the plan keeps no state. */
static bool dw_3x3_applicable(const cf_problem *p)
{
    if (!dw_applicable(p) || p->m != p->c || p->layout != CONVFIND_LAYOUT_NCHW || p->nsp != 2)
        return false;
    int64_t s = p->stride[0];
    if (s != p->stride[1] || (s != 1 && s != 2))
        return false;
    /* Stride 2 takes an end pad of at most 1, so that a row ends in at most one partial
     * vector (depthwise_3x3_kernels.h). */
    for (int a = 0; a < 2; a++)
        if (p->k[a] != 3 || p->dil[a] != 1 || p->pad_begin[a] != 1 ||
            (s == 1 ? p->pad_end[a] != 1 : p->pad_end[a] > 1))
            return false;
    return true;
}

static convfind_status dw_3x3_workspace(const cf_problem *p, size_t *bytes)
{
    (void)p;
    *bytes = 0;
    return CONVFIND_OK;
}

static convfind_status dw_3x3_execute(const cf_problem *p, const void *state,
                                      const cf_exec_args *a)
{
    (void)state;
    cf_dw_job j = dw_job_of(p, a);
    dw_run run = {.run = cf_kernel_table_active()->depthwise_3x3->planes, .j = &j};
    dw_run_units(a->pool, &run, (size_t)(p->n * p->m), (size_t)p->out_sp);
    return CONVFIND_OK;
}

const cf_algo cf_algo_cpu_depthwise_3x3 = {
    .name = "cpu.depthwise_3x3",
    .family = "depthwise",
    .applicable = dw_3x3_applicable,
    .workspace = dw_3x3_workspace,
    .execute = dw_3x3_execute,
};
