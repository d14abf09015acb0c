/*
 * direct_blocked.c - "cpu.direct_blocked": direct convolution in a channel-blocked
 * layout with register-blocked tile kernels (direct_blocked.h describes the layouts).
 *
 * One execution: (1) pack the weights unless the caller passed packed ones made at the
 * active ISA level, (2) copy X into the padded, blocked, phase-split layout, (3) run one
 * task per (image, group, group of output blocks, output row): each walks its row in
 * tiles whose sums stay in registers over the whole reduction, then applies bias,
 * residual and activation while storing into Y's own layout.  Steps (1) and (2) are
 * cheap next to (3) for the layers this algorithm is meant for (reduction lengths of
 * hundreds to thousands per output); Find measures the rest.
 *
 * Conv only, f32, any kernel size, stride, dilation and asymmetric padding, 1-D to 3-D.
 * Grouped convolutions need whole blocks per group (channels per group multiples of 16,
 * which suits every ISA's block); group 1 takes any channel counts and pads them.
 * The ISA level is read at every execution, so forcing a level (tests) takes effect at
 * once; packed weights remember their block size and are repacked into the workspace
 * when they do not match.
 */
#include <stdlib.h>
#include <string.h>

#include "core/algo.h"
#include "cpu/direct_blocked.h"
#include "cpu/geom3.h"
#include "cpu/isa.h"
#include "cpu/phases.h"
#include "cpu/workspace.h"
#include "util/error.h"

/* Channel count of groups > 1 must be a multiple of this (every ISA's block divides it). */
#define DBK_GROUP_ALIGN 16

const cf_dbk_kernels *cf_dbk_kernels_for(cf_isa isa)
{
#if defined(__x86_64__)
    switch (isa) {
    case CF_ISA_AVX512F:
        return &cf_dbk_avx512;
    case CF_ISA_AVX2_FMA:
        return &cf_dbk_avx2;
    default:
        break;
    }
#endif
    return &cf_dbk_portable;
}

static const cf_dbk_kernels *dbk_kernels(void) { return cf_dbk_kernels_for(cf_isa_active()); }

/* Everything about the blocked layouts that follows from the problem and VL. */
typedef struct dbk_geom {
    int vl;
    cf_geom3 s;
    int64_t groups, cbg, mbg;  /* groups, input / output blocks per group */
    int64_t cg, mg;            /* channels per group */
    int64_t ntaps;
    int64_t dp, hp, wq;        /* padded input depth, height, per-phase width */
    int64_t rs;                /* floats per padded input row (all phases) */
    int64_t x_cb;              /* floats per input block */
    size_t x_floats, w_floats; /* blocked input, packed weights */
} dbk_geom;

/* Workspace parts, in order: blocked input, tap offsets, packed weights. */
typedef struct dbk_ws {
    size_t x, tap, w;
    cf_ws total;
} dbk_ws;

static dbk_geom dbk_geom_of(const cf_problem *p, int vl)
{
    dbk_geom g;
    g.vl = vl;
    g.s = cf_geom3_of(p);
    g.groups = p->group;
    g.cg = cf_cin_per_group(p);
    g.mg = cf_cout_per_group(p);
    g.cbg = (g.cg + vl - 1) / vl;
    g.mbg = (g.mg + vl - 1) / vl;
    g.ntaps = p->k_sp;
    int64_t ext[3];
    for (int a = 0; a < 3; a++)
        ext[a] = (g.s.out[a] - 1) * g.s.stride[a] + (g.s.k[a] - 1) * g.s.dil[a] + 1;
    g.dp = ext[0];
    g.hp = ext[1];
    g.wq = (ext[2] + g.s.stride[2] - 1) / g.s.stride[2];
    g.rs = g.s.stride[2] * g.wq * vl;
    g.x_cb = g.dp * g.hp * g.rs;
    return g;
}

/* Sizes the parts for one VL; overflow is reported through ws->total.overflow. */
static dbk_ws dbk_ws_of(const cf_problem *p, const dbk_geom *g)
{
    dbk_ws w = {0};
    cf_ws *t = &w.total;
    size_t blocks = cf_ws_mul(t, (size_t)p->n, cf_ws_mul(t, (size_t)g->groups, (size_t)g->cbg));
    size_t per_block = cf_ws_mul(t, cf_ws_mul(t, (size_t)g->dp, (size_t)g->hp), (size_t)g->rs);
    size_t x_floats = cf_ws_mul(t, blocks, per_block);
    size_t blocks_w = cf_ws_mul(t, (size_t)g->groups, cf_ws_mul(t, (size_t)g->mbg, (size_t)g->cbg));
    size_t w_floats = cf_ws_mul(t, cf_ws_mul(t, blocks_w, (size_t)g->ntaps), (size_t)(g->vl * g->vl));
    w.x = cf_ws_take(t, x_floats, sizeof(float));
    w.tap = cf_ws_take(t, (size_t)g->ntaps, sizeof(ptrdiff_t));
    w.w = cf_ws_take(t, w_floats, sizeof(float));
    return w;
}

static bool dbk_applicable(const cf_problem *p)
{
    if (p->op != CONVFIND_OP_CONV || p->dtype != CONVFIND_DTYPE_F32)
        return false;
    if (p->group == 1)
        return true;
    return cf_cin_per_group(p) % DBK_GROUP_ALIGN == 0 &&
           cf_cout_per_group(p) % DBK_GROUP_ALIGN == 0;
}

static convfind_status dbk_workspace(const cf_problem *p, size_t *bytes)
{
    /* The active level may change between planning and executing: size for every VL. */
    size_t most = 0;
    const int vls[3] = {4, 8, 16};
    for (int i = 0; i < 3; i++) {
        dbk_geom g = dbk_geom_of(p, vls[i]);
        dbk_ws w = dbk_ws_of(p, &g);
        if (w.total.overflow)
            return cf_fail(CONVFIND_ERR_OVERFLOW,
                           "cpu.direct_blocked workspace for %lld x %lld channels over %lld "
                           "positions does not fit in size_t",
                           (long long)p->c, (long long)p->m, (long long)p->in_sp);
        if (w.total.bytes > most)
            most = w.total.bytes;
    }
    *bytes = most;
    return CONVFIND_OK;
}

/* ---- weights ---------------------------------------------------------------------- */

typedef struct dbk_packed {
    int vl;
    float *w;
} dbk_packed;

typedef struct dbk_pack_job {
    const dbk_geom *g;
    const float *w;
    float *dst;
} dbk_pack_job;

/* Packs one (group, output block) pair: all its input blocks and taps. */
static void dbk_pack_task(void *arg, size_t index)
{
    const dbk_pack_job *job = arg;
    const dbk_geom *g = job->g;
    int vl = g->vl;
    int64_t grp = (int64_t)index / g->mbg, ob = (int64_t)index % g->mbg;
    float *dst = job->dst + (size_t)index * (size_t)(g->cbg * g->ntaps * vl * vl);
    for (int64_t cb = 0; cb < g->cbg; cb++)
        for (int64_t t = 0; t < g->ntaps; t++)
            for (int ci = 0; ci < vl; ci++)
                for (int co = 0; co < vl; co++) {
                    int64_t m = ob * vl + co, c = cb * vl + ci;
                    *dst++ = m < g->mg && c < g->cg
                                 ? job->w[((grp * g->mg + m) * g->cg + c) * g->ntaps + t]
                                 : 0.0f;
                }
}

static void dbk_pack(const dbk_geom *g, const float *w, float *dst, cf_threadpool *pool)
{
    dbk_pack_job job = {g, w, dst};
    cf_parallel_for(pool, (size_t)(g->groups * g->mbg), dbk_pack_task, &job);
}

static convfind_status dbk_pack_weights(const cf_problem *p, const void *state, const void *w,
                                        void **packed)
{
    (void)state;
    *packed = NULL;
    dbk_geom g = dbk_geom_of(p, dbk_kernels()->vl);
    dbk_ws ws = dbk_ws_of(p, &g);
    if (ws.total.overflow)
        return cf_fail(CONVFIND_ERR_OVERFLOW, "cpu.direct_blocked packed weights for %lld x %lld "
                       "channels do not fit in size_t", (long long)p->m, (long long)p->c);
    size_t floats = (size_t)(g.groups * g.mbg * g.cbg * g.ntaps) * (size_t)(g.vl * g.vl);
    dbk_packed *pk = malloc(sizeof *pk);
    float *data = aligned_alloc(64, (floats * sizeof(float) + 63) & ~(size_t)63);
    if (!pk || !data) {
        free(pk);
        free(data);
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of packed weights "
                       "for cpu.direct_blocked", floats * sizeof(float));
    }
    pk->vl = g.vl;
    pk->w = data;
    dbk_pack(&g, w, data, NULL);
    *packed = pk;
    return CONVFIND_OK;
}

static void dbk_free_packed(void *packed)
{
    dbk_packed *pk = packed;
    if (pk)
        free(pk->w);
    free(pk);
}

/* ---- input conversion ------------------------------------------------------------- */

typedef struct dbk_job {
    const cf_problem *p;
    const dbk_geom *g;
    const cf_dbk_kernels *k;
    const cf_exec_args *a;
    float *xb;
    const float *wp;
    const ptrdiff_t *tap;
    int nb, np;        /* tile shape: output blocks per task, pixels per tile */
    int64_t nobg;      /* groups of nb output blocks per group */
} dbk_job;

/* Fills one padded row (all phases) of one input block of one image. */
static void dbk_convert_task(void *arg, size_t index)
{
    const dbk_job *job = arg;
    const cf_problem *p = job->p;
    const dbk_geom *g = job->g;
    const cf_geom3 *s = &g->s;
    int vl = g->vl;
    int64_t hpi = (int64_t)index % g->hp;
    int64_t rest = (int64_t)index / g->hp;
    int64_t dpi = rest % g->dp;
    rest /= g->dp;
    int64_t b = rest % (g->groups * g->cbg);
    int64_t n = rest / (g->groups * g->cbg);

    float *dst = job->xb + (size_t)index * (size_t)g->rs;
    memset(dst, 0, (size_t)g->rs * sizeof(float));
    int64_t id = dpi - s->pad[0], ih = hpi - s->pad[1];
    if (id < 0 || id >= s->in[0] || ih < 0 || ih >= s->in[1])
        return;

    int64_t c0 = (b / g->cbg) * g->cg + (b % g->cbg) * vl; /* first channel of the block */
    int64_t lanes = g->cg - (b % g->cbg) * vl;
    if (lanes > vl)
        lanes = vl;
    int64_t sw = s->stride[2], wp_max = (g->wq * sw);
    int64_t iw_lo = s->pad[2] > 0 ? 0 : -s->pad[2];
    int64_t iw_hi = s->in[2] < wp_max - s->pad[2] ? s->in[2] : wp_max - s->pad[2];
    int64_t sp = (id * s->in[1] + ih) * s->in[2];
    const float *x = job->a->x;
    if (p->layout == CONVFIND_LAYOUT_NHWC) {
        const float *src = x + (n * p->in_sp + sp) * p->c + c0;
        for (int64_t l = 0; l < lanes; l++)
            cf_split_phases(dst + l, vl, g->wq, sw, src + l, p->c, s->pad[2], iw_lo, iw_hi);
    } else {
        job->k->nchw_row(dst, x + (n * p->c + c0) * p->in_sp + sp, (ptrdiff_t)p->in_sp,
                         (int)lanes, iw_lo, iw_hi, s->pad[2], sw, g->wq);
    }
}

/* ---- compute ---------------------------------------------------------------------- */

/* One output row of one image for one group of up to nb output blocks. */
static void dbk_row_task(void *arg, size_t index)
{
    const dbk_job *job = arg;
    const cf_problem *p = job->p;
    const dbk_geom *g = job->g;
    const cf_geom3 *s = &g->s;
    int vl = g->vl;
    int64_t rest = (int64_t)index;
    int64_t oh = rest % s->out[1];
    rest /= s->out[1];
    int64_t od = rest % s->out[0];
    rest /= s->out[0];
    int64_t obg = rest % job->nobg;
    rest /= job->nobg;
    int64_t grp = rest % g->groups;
    int64_t n = rest / g->groups;

    const float *xrow = job->xb + (size_t)((n * g->groups + grp) * g->cbg) * (size_t)g->x_cb +
                        (size_t)((od * s->stride[0] * g->hp + oh * s->stride[1]) * g->rs);
    int64_t ob0 = obg * job->nb;
    int64_t obn = g->mbg - ob0 < job->nb ? g->mbg - ob0 : job->nb;
    int64_t w_ob = g->cbg * g->ntaps * vl * vl;
    int64_t row_px = (od * s->out[1] + oh) * s->out[2];
    bool nhwc = p->layout == CONVFIND_LAYOUT_NHWC;
    ptrdiff_t ch_stride = nhwc ? 1 : (ptrdiff_t)p->out_sp;
    ptrdiff_t px_stride = nhwc ? (ptrdiff_t)p->m : 1;

    for (int64_t ow0 = 0; ow0 < s->out[2]; ow0 += job->np) {
        int np = s->out[2] - ow0 < job->np ? (int)(s->out[2] - ow0) : job->np;
        /* The last group may hold fewer blocks, and then takes longer pixel runs. */
        for (int64_t ob = ob0; ob < ob0 + obn;) {
            int nb = ob0 + obn - ob < 4 ? (int)(ob0 + obn - ob) : 4;
            while (job->k->max_np[nb] < np)
                nb--;
            int64_t m0 = grp * g->mg + ob * vl; /* first output channel */
            int64_t nm = g->mg - ob * vl < nb * vl ? g->mg - ob * vl : nb * vl;
            size_t y_off = nhwc ? (size_t)((n * p->out_sp + row_px + ow0) * p->m + m0)
                                : (size_t)((n * p->m + m0) * p->out_sp + row_px + ow0);
            cf_dbk_tile t = {
                .x = xrow + ow0 * vl,
                .tap = job->tap,
                .ntaps = (int)g->ntaps,
                .ncb = (int)g->cbg,
                .x_cb = (ptrdiff_t)g->x_cb,
                .w = job->wp + (size_t)((grp * g->mbg + ob) * w_ob),
                .w_ob = (ptrdiff_t)w_ob,
                .nb = nb,
                .np = np,
            };
            cf_dbk_store st = {
                .p = p,
                .y = (float *)job->a->y + y_off,
                .z = job->a->z ? (const float *)job->a->z + y_off : NULL,
                .bias = job->a->b ? (const float *)job->a->b + m0 : NULL,
                .nm = (int)nm,
                .ch_stride = ch_stride,
                .px_stride = px_stride,
            };
            job->k->tile(&t, &st);
            ob += nb;
        }
    }
}

/* Picks the tile: the most accumulators per tile (balanced pixel runs), ties to more
 * output blocks, which load fewer broadcasts per FMA. */
static void dbk_choose_tile(const cf_dbk_kernels *k, const dbk_geom *g, int *nb_out, int *np_out)
{
    int best_nb = 1, best_np = 1, best = 0;
    for (int nb = 1; nb <= 4 && (nb == 1 || nb <= g->mbg); nb++) {
        int64_t ow = g->s.out[2];
        int64_t tiles = (ow + k->max_np[nb] - 1) / k->max_np[nb];
        int np = (int)((ow + tiles - 1) / tiles);
        if (nb * np >= best) {
            best = nb * np;
            best_nb = nb;
            best_np = np;
        }
    }
    *nb_out = best_nb;
    *np_out = best_np;
}

static convfind_status dbk_execute(const cf_problem *p, const void *state, const cf_exec_args *a)
{
    (void)state;
    const cf_dbk_kernels *k = dbk_kernels();
    dbk_geom g = dbk_geom_of(p, k->vl);
    dbk_ws ws = dbk_ws_of(p, &g);
    const dbk_packed *pk = a->packed_w;
    bool repack = !pk || pk->vl != k->vl;
    if (ws.total.overflow)
        return cf_fail(CONVFIND_ERR_OVERFLOW, "cpu.direct_blocked workspace does not fit in size_t");
    if (a->workspace_size < ws.total.bytes || !a->workspace)
        return cf_fail(CONVFIND_ERR_INVALID_SHAPE, "cpu.direct_blocked needs %zu bytes of "
                       "workspace, got %zu", ws.total.bytes, a->workspace_size);

    char *base = a->workspace;
    float *wp = repack ? (float *)(base + ws.w) : pk->w;
    if (repack)
        dbk_pack(&g, a->w, wp, a->pool);

    ptrdiff_t *tap = (ptrdiff_t *)(base + ws.tap);
    const cf_geom3 *s = &g.s;
    for (int64_t kd = 0, t = 0; kd < s->k[0]; kd++)
        for (int64_t kh = 0; kh < s->k[1]; kh++)
            for (int64_t kw = 0; kw < s->k[2]; kw++, t++) {
                int64_t wpos = kw * s->dil[2];
                tap[t] = (ptrdiff_t)((kd * s->dil[0] * g.hp + kh * s->dil[1]) * g.rs +
                                     ((wpos % s->stride[2]) * g.wq + wpos / s->stride[2]) * g.vl);
            }

    dbk_job job = {.p = p, .g = &g, .k = k, .a = a, .xb = (float *)(base + ws.x), .wp = wp,
                   .tap = tap};
    dbk_choose_tile(k, &g, &job.nb, &job.np);
    job.nobg = (g.mbg + job.nb - 1) / job.nb;

    size_t rows_in = (size_t)(p->n * g.groups * g.cbg * g.dp * g.hp);
    cf_parallel_for(a->pool, rows_in, dbk_convert_task, &job);
    size_t rows_out = (size_t)(p->n * g.groups * job.nobg * s->out[0] * s->out[1]);
    cf_parallel_for(a->pool, rows_out, dbk_row_task, &job);
    return CONVFIND_OK;
}

const cf_algo cf_algo_cpu_direct_blocked = {
    .name = "cpu.direct_blocked",
    .family = "direct",
    .applicable = dbk_applicable,
    .workspace = dbk_workspace,
    .prepare = NULL,
    .release = NULL,
    .pack_weights = dbk_pack_weights,
    .free_packed = dbk_free_packed,
    .execute = dbk_execute,
};
