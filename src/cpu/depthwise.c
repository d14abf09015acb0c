/*
 * depthwise.c - "cpu.depthwise": depthwise Conv (group == C, any channel multiplier),
 * native in both layouts (depthwise.h says how each is vectorised).
 *
 * Depthwise layers do about 2 * k_sp FLOPs per output, so they are bound by memory
 * traffic, not FMAs, and are judged in bytes per second: every path reads X and writes
 * Y once from memory.  NCHW 1-D and 2-D problems with stride 1 along W run in blocks of
 * rows through L1 copies (depthwise.h); other NCHW problems with narrow rows (stride 2
 * at 28x28 and below, 7-wide rows) transpose X and Y around the channels-last kernel,
 * whose two extra passes cost less than vectors along rows of 7 or 14; the rest (3-D,
 * stride 2 on wide rows) run plane by plane in place.  Any kernel size,
 * stride, dilation, asymmetric pads, 1-D to 3-D.  Weights need no packing for NCHW; for
 * the channels-last kernel their [tap][M] transpose is a few KiB, redone per execution
 * in the workspace.
 */

#include "core/algo.h"
#include "cpu/depthwise.h"
#include "cpu/isa.h"
#include "cpu/workspace.h"
#include "util/error.h"

static const cf_dw_kernels *dw_kernels(void)
{
#if defined(__x86_64__)
    switch (cf_isa_active()) {
    case CF_ISA_AVX512F:
        return &cf_dw_avx512;
    case CF_ISA_AVX2_FMA:
        return &cf_dw_avx2;
    default:
        break;
    }
#endif
    return &cf_dw_portable;
}

static bool dw_applicable(const cf_problem *p)
{
    return p->op == CONVFIND_OP_CONV && p->dtype == CONVFIND_DTYPE_F32 && p->group == p->c;
}

/* NCHW input rows narrower than this that the row-block kernel does not take go through
 * the channels-last kernel on transposed copies: vectors along so short a row would be
 * mostly edge lanes.  Measured on MobileNetV2's stride-2 layers: rows of 56 and 112 are
 * faster in place, rows of 28 and below through the transposes. */
#define DW_NARROW 48

/* Plans the NCHW row-block kernel (depthwise.h): the most output rows per block whose
 * padded phase rows and sums fit the kernel's buffers, then blocks of equal size.  False
 * for 3-D problems, strides along W (the phase split they need measured slower than the
 * plane kernel's even-lane loads and the channels-last kernel), rows narrower than
 * DW_BLOCK_MIN (7-wide rows waste more lanes in padding than the transposes cost) and
 * rows too wide for one block. */
#define DW_BLOCK_MIN 12

static bool dw_rows_plan(cf_dw_job *j)
{
    const cf_geom3 *s = &j->s;
    if (s->in[0] != 1 || s->k[0] != 1 || s->out[0] != 1 || s->stride[2] != 1 ||
        s->in[2] < DW_BLOCK_MIN)
        return false;
    int64_t sh = s->stride[1];
    if (sh > CF_DW_IN_FLOATS)
        return false;
    j->qh = (s->k[1] - 1) * s->dil[1] / sh;
    j->pw = s->out[2] + (s->k[2] - 1) * s->dil[2];
    if (j->pw > CF_DW_OUT_FLOATS || j->qh > CF_DW_IN_FLOATS)
        return false;
    int64_t by_out = (CF_DW_OUT_FLOATS - CF_DW_SLACK) / j->pw;
    int64_t by_in = (CF_DW_IN_FLOATS - CF_DW_SLACK) / (sh * j->pw) - j->qh;
    int64_t most = by_out < by_in ? by_out : by_in;
    if (most < 1)
        return false;
    j->blocks = (s->out[1] + most - 1) / most;
    j->rows = (s->out[1] + j->blocks - 1) / j->blocks;
    j->pstride = (j->rows + j->qh) * j->pw;
    return true;
}

/* The row-block kernel's tables (depthwise.h), computed once per execution so that the
 * kernel divides by no stride: tap (kh, kw) reads row phase kh*dh mod sh, shifted by the
 * quotient in rows and by kw*dw in columns; padded column j is input column j - pad. */
static void dw_rows_tables(const cf_dw_job *j, int64_t *off, int64_t *cols)
{
    const cf_geom3 *s = &j->s;
    int64_t sh = s->stride[1];
    for (int64_t kh = 0; kh < s->k[1]; kh++)
        for (int64_t kw = 0; kw < s->k[2]; kw++) {
            int64_t a = kh * s->dil[1];
            off[kh * s->k[2] + kw] = a % sh * j->pstride + a / sh * j->pw + kw * s->dil[2];
        }
    int64_t lo = s->pad[2], hi = s->pad[2] + s->in[2];
    lo = lo < j->pw ? lo : j->pw;
    hi = hi < j->pw ? hi : j->pw;
    cols[0] = lo;
    cols[1] = hi > lo ? hi : lo;
}

static bool dw_transposed(const cf_problem *p, const cf_dw_job *j)
{
    cf_dw_job plan = *j;
    return p->layout == CONVFIND_LAYOUT_NCHW && j->s.in[2] < DW_NARROW && !dw_rows_plan(&plan);
}

/* Workspace parts, for the channels-last kernel only: packed weights, X with M channels
 * per pixel (NHWC with multiplier > 1, or transposed NCHW), and Y channels-last
 * (transposed NCHW). */
typedef struct dw_ws {
    size_t w, xrep, yt, off, cols;
    cf_ws total;
} dw_ws;

static dw_ws dw_ws_of(const cf_problem *p, const cf_dw_job *j)
{
    dw_ws w = {0};
    cf_ws *t = &w.total;
    cf_dw_job plan = *j;
    if (p->layout == CONVFIND_LAYOUT_NCHW && dw_rows_plan(&plan)) {
        w.off = cf_ws_take(t, (size_t)p->k_sp, sizeof(int64_t));
        w.cols = cf_ws_take(t, 2, sizeof(int64_t));
        return w;
    }
    bool transposed = dw_transposed(p, j);
    if (p->layout == CONVFIND_LAYOUT_NHWC || transposed) {
        w.w = cf_ws_take(t, (size_t)p->w_elems, sizeof(float));
        size_t rep = j->mult > 1 || transposed
                         ? cf_ws_mul(t, cf_ws_mul(t, (size_t)p->n, (size_t)p->in_sp), (size_t)p->m)
                         : 0;
        w.xrep = cf_ws_take(t, rep, sizeof(float));
        w.yt = cf_ws_take(t, transposed ? p->y_elems : 0, sizeof(float));
    }
    return w;
}

static cf_dw_job dw_job_of(const cf_problem *p)
{
    cf_dw_job j = {.p = p, .s = cf_geom3_of(p), .mult = p->m / p->c, .ntaps = p->k_sp};
    return j;
}

static convfind_status dw_workspace(const cf_problem *p, size_t *bytes)
{
    cf_dw_job j = dw_job_of(p);
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

typedef struct dw_run {
    const cf_dw_kernels *k;
    const cf_dw_job *j;
    size_t per_task, count; /* rows or planes per task, and in all */
} dw_run;

static void dw_row_task(void *arg, size_t index)
{
    const dw_run *r = arg;
    for (size_t i = index * r->per_task; i < r->count && i < (index + 1) * r->per_task; i++)
        r->k->nhwc_row(r->j, i);
}

static void dw_block_task(void *arg, size_t index)
{
    const dw_run *r = arg;
    for (size_t i = index * r->per_task; i < r->count && i < (index + 1) * r->per_task; i++)
        r->k->nchw_block(r->j, i);
}

static void dw_plane_task(void *arg, size_t index)
{
    const dw_run *r = arg;
    for (size_t i = index * r->per_task; i < r->count && i < (index + 1) * r->per_task; i++)
        r->k->nchw_plane(r->j, i);
}

/* Splits `count` units of `outputs` outputs each into tasks of about DW_TASK_OUTPUTS. */
static size_t dw_split(dw_run *r, size_t count, size_t outputs)
{
    r->count = count;
    r->per_task = outputs >= DW_TASK_OUTPUTS ? 1 : DW_TASK_OUTPUTS / (outputs ? outputs : 1);
    return (count + r->per_task - 1) / r->per_task;
}

/* NHWC weights as [tap][M]: one vector load per tap and channel run. */
static void dw_pack_nhwc(const cf_problem *p, const float *w, float *dst)
{
    for (int64_t m = 0; m < p->m; m++)
        for (int64_t t = 0; t < p->k_sp; t++)
            dst[t * p->m + m] = w[m * p->k_sp + t];
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

typedef struct dw_tr_run {
    const cf_dw_kernels *k;
    cf_dw_tr t;
} dw_tr_run;

static void dw_to_last_task(void *arg, size_t index)
{
    const dw_tr_run *r = arg;
    r->k->to_last(&r->t, index);
}

static void dw_to_first_task(void *arg, size_t index)
{
    const dw_tr_run *r = arg;
    r->k->to_first(&r->t, index);
}

static convfind_status dw_execute(const cf_problem *p, const void *state, const cf_exec_args *a)
{
    (void)state;
    cf_dw_job j = dw_job_of(p);
    dw_ws ws = dw_ws_of(p, &j);
    if (ws.total.overflow)
        return cf_fail(CONVFIND_ERR_OVERFLOW, "cpu.depthwise workspace does not fit in size_t");
    if (ws.total.bytes && (a->workspace_size < ws.total.bytes || !a->workspace))
        return cf_fail(CONVFIND_ERR_INVALID_SHAPE, "cpu.depthwise needs %zu bytes of workspace, "
                       "got %zu", ws.total.bytes, a->workspace_size);
    char *base = a->workspace;
    j.x = a->x;
    j.w = a->w;
    j.b = a->b;
    j.z = a->z;
    j.y = a->y;
    dw_run run = {dw_kernels(), &j, 1, 0};
    if (dw_transposed(p, &j)) {
        /* Sums and bias channels-last, residual and activation on the way back, so the
         * epilogue keeps its order: act(conv + bias + z). */
        cf_problem q = *p;
        q.act = CONVFIND_ACT_NONE;
        q.layout = CONVFIND_LAYOUT_NHWC;
        j.p = &q;
        float *wp = (float *)(base + ws.w);
        dw_pack_nhwc(p, a->w, wp);
        j.w = wp;
        j.xc = p->m;
        j.x = (float *)(base + ws.xrep);
        j.y = (float *)(base + ws.yt);
        j.z = NULL;
        size_t blocks = (size_t)(p->n * ((p->m + CF_DW_TR_BLOCK - 1) / CF_DW_TR_BLOCK));
        dw_tr_run in = {run.k, {p, a->x, (float *)j.x, NULL, j.mult}};
        cf_parallel_for(a->pool, blocks, dw_to_last_task, &in);
        size_t tasks = dw_split(&run, (size_t)(p->n * j.s.out[0] * j.s.out[1]),
                                (size_t)(j.s.out[2] * p->m));
        cf_parallel_for(a->pool, tasks, dw_row_task, &run);
        dw_tr_run out = {run.k, {p, j.y, a->y, a->z, j.mult}};
        cf_parallel_for(a->pool, blocks, dw_to_first_task, &out);
    } else if (p->layout == CONVFIND_LAYOUT_NHWC) {
        float *wp = (float *)(base + ws.w);
        dw_pack_nhwc(p, a->w, wp);
        j.w = wp;
        j.xc = p->c;
        if (j.mult > 1) {
            dw_rep_job rep = {p, a->x, (float *)(base + ws.xrep), j.mult};
            cf_parallel_for(a->pool, (size_t)(p->n * p->in_sp), dw_repeat_task, &rep);
            j.x = rep.dst;
            j.xc = p->m;
        }
        size_t tasks = dw_split(&run, (size_t)(p->n * j.s.out[0] * j.s.out[1]),
                                (size_t)(j.s.out[2] * p->m));
        cf_parallel_for(a->pool, tasks, dw_row_task, &run);
    } else if (dw_rows_plan(&j)) {
        int64_t *off = (int64_t *)(base + ws.off), *cols = (int64_t *)(base + ws.cols);
        dw_rows_tables(&j, off, cols);
        j.off = off;
        j.cols = cols;
        size_t tasks = dw_split(&run, (size_t)(p->n * p->m * j.blocks),
                                (size_t)(j.rows * j.s.out[2]));
        cf_parallel_for(a->pool, tasks, dw_block_task, &run);
    } else {
        size_t tasks = dw_split(&run, (size_t)(p->n * p->m), (size_t)p->out_sp);
        cf_parallel_for(a->pool, tasks, dw_plane_task, &run);
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
    .execute = dw_execute,
};
