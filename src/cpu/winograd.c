/*
 * winograd.c - "cpu.winograd_f2x3", "cpu.winograd_f4x3" and "cpu.winograd_f6x3":
 * Winograd F(2x2,3x3), F(4x4,3x3) and F(6x6,3x3) for convolutions whose last two axes
 * are 3x3 with stride 1 (any dilation), group 1: 2-D, and 3-D with up to 16 depth taps
 * of stride 1 (any pads, both layouts).  winograd.h describes the method and the data
 * layout.  F(6x6,3x3) is 1.4-2x less accurate than F(4x4,3x3) (10x less than
 * direct convolution) on ResNet-50's layers, so it is only applicable to problems whose
 * math mode allows reduced precision (CONVFIND_MATH_ALLOW_TF32: docs/winograd.md).
 *
 * An execution runs four parallel steps: pad X into [N][D'][phase][C][H'][W'], transform the
 * input tiles (per block of channels and group of tiles), the alpha^2 products on
 * cpu.direct_blocked's tile kernel (per position, group of output blocks and run of
 * tiles), and transform the output with the fused epilogue (per row of tiles and block
 * of output channels).  The weights' transform U = G g G^T is computed in double and
 * packed once per vector length; packed weights of another ISA level are recomputed into
 * the workspace.
 *
 * F(6x6,3x3) does 5.06x fewer multiplications than direct convolution, F(4x4,3x3) 4x,
 * F(2x2,3x3) 2.25x, at the price of larger rounding errors (docs/winograd.md gives
 * measured bounds).
 */
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "cpu/direct_blocked.h"
#include "cpu/kernel_table.h"
#include "cpu/winograd.h"
#include "cpu/workspace.h"
#include "util/error.h"
#include "util/prefetch.h"

/* G of F(2x2,3x3), F(4x4,3x3) and F(6x6,3x3), alpha x 3. */
static const double wg_g2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
static const double wg_g4[6][3] = {{1.0 / 4, 0, 0},
                                   {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                   {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                   {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                   {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                   {0, 0, 1}};
static const double wg_g6[8][3] = {{1, 0, 0},
                                   {-2.0 / 9, -2.0 / 9, -2.0 / 9},
                                   {-2.0 / 9, 2.0 / 9, -2.0 / 9},
                                   {1.0 / 90, 1.0 / 45, 2.0 / 45},
                                   {1.0 / 90, -1.0 / 45, 2.0 / 45},
                                   {32.0 / 45, 16.0 / 45, 8.0 / 45},
                                   {32.0 / 45, -16.0 / 45, 8.0 / 45},
                                   {0, 0, 1}};

/* Geometry of the job for vector length vl (no buffers). */
static cf_wg_job wg_job_of(const cf_problem *p, int mt, int vl)
{
    cf_wg_job j = {.p = p, .mt = mt, .alpha = mt + 2, .vl = vl, .dout = 1, .slices = 1};
    const int ah = p->nsp - 2, aw = p->nsp - 1;
    if (p->nsp == 3) {
        j.dout = p->out[0];
        j.slices = p->out[0] + (p->k[0] - 1) * p->dil[0];
    }
    j.dh = p->dil[ah];
    j.dw = p->dil[aw];
    j.tiles_h = ((p->out[ah] + j.dh - 1) / j.dh + mt - 1) / mt;
    j.tiles_w = ((p->out[aw] + j.dw - 1) / j.dw + mt - 1) / mt;
    int64_t per_slice = j.dh * j.dw * j.tiles_h * j.tiles_w;
    j.ntiles = p->n * j.dout * per_slice;
    j.ntiles_in = p->n * j.slices * per_slice;
    j.groups = (j.ntiles_in + vl - 1) / vl;
    j.cb = (p->c + vl - 1) / vl;
    j.kb = (p->m + vl - 1) / vl;
    j.hp = j.tiles_h * mt + 2;
    j.wp = j.tiles_w * mt + 2;
    return j;
}

/* Depth taps a 3-D problem may have: the product tasks keep one cf_dbk_tap per tap on
 * their stack. */
#define WG_MAX_DEPTH_TAPS 16

static bool wg_applicable(const cf_problem *p, int mt)
{
    if (p->op != CONVFIND_OP_CONV || p->dtype != CONVFIND_DTYPE_F32 || p->nsp < 2 ||
        p->group != 1 || (mt == 6 && p->math_mode != CONVFIND_MATH_ALLOW_TF32))
        return false;
    if (p->nsp == 3 && (p->stride[0] != 1 || p->k[0] > WG_MAX_DEPTH_TAPS))
        return false;
    for (int a = p->nsp - 2; a < p->nsp; a++)
        if (p->k[a] != 3 || p->stride[a] != 1)
            return false;
    /* 32-bit lane offsets into the padded input and into Y. */
    cf_wg_job j = wg_job_of(p, mt, 1);
    double xpad = (double)j.ntiles_in / (double)(j.tiles_h * j.tiles_w) * (double)p->c *
                  (double)j.hp * (double)j.wp;
    return xpad < 2147483647.0 && (double)p->y_elems < 2147483647.0;
}

/* Taps along the depth axis: 1 in 2-D. */
static int wg_depth_taps(const cf_problem *p) { return p->nsp == 3 ? (int)p->k[0] : 1; }

/* Workspace parts: padded X, V, M, and U (used when the weights are transformed per
 * execution). */
typedef struct wg_ws {
    size_t x, v, m, u;
    size_t v_pos, m_pos, u_pos;
    cf_ws total;
} wg_ws;

static wg_ws wg_ws_of(const cf_problem *p, const cf_wg_job *j)
{
    wg_ws w = {0};
    cf_ws *t = &w.total;
    size_t pos = (size_t)(j->alpha * j->alpha), vv = (size_t)(j->vl * j->vl);
    w.v_pos = cf_ws_mul(t, cf_ws_mul(t, (size_t)j->cb, (size_t)j->groups), vv);
    w.m_pos = cf_ws_mul(t, (size_t)j->ntiles, (size_t)(j->kb * j->vl));
    w.u_pos = cf_ws_mul(t, cf_ws_mul(t, (size_t)j->kb, (size_t)j->cb),
                        cf_ws_mul(t, (size_t)wg_depth_taps(p), vv));
    size_t planes = cf_ws_mul(t, (size_t)(j->ntiles_in / (j->tiles_h * j->tiles_w)), (size_t)p->c);
    w.x = cf_ws_take(t, cf_ws_mul(t, planes, cf_ws_mul(t, (size_t)j->hp, (size_t)j->wp)),
                     sizeof(float));
    w.v = cf_ws_take(t, cf_ws_mul(t, pos, w.v_pos), sizeof(float));
    w.m = cf_ws_take(t, cf_ws_mul(t, pos, w.m_pos), sizeof(float));
    w.u = cf_ws_take(t, cf_ws_mul(t, pos, w.u_pos), sizeof(float));
    return w;
}

static convfind_status wg_workspace(const cf_problem *p, size_t *bytes, int mt)
{
    /* The level may change before execution: size for every level's vector length. */
    size_t most = 0;
    for (int level = 0; level < CF_ISA_COUNT; level++) {
        cf_wg_job j = wg_job_of(p, mt, cf_kernel_table_for((cf_isa)level)->direct_blocked->vl);
        wg_ws w = wg_ws_of(p, &j);
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
    int vl;
    float *u;
    size_t bytes; /* of u */
} wg_packed;

#define WG_VL_MAX 16 /* the widest vector length of any ISA level */

/* U = G g G^T for every (k, c, depth tap), per position in cpu.direct_blocked's weight
 * layout [K / VL][C / VL][depth tap][VL c][VL k] (zero-padded).  One pass over the filters, each
 * transformed as (G g) G^T in double.  A pass per position re-read every filter alpha^2
 * times, unvectorized: 39.5 ms for F(4x4,3x3) on 512 x 512 filters (Find pays it for
 * each Winograd candidate, a plan once), 16.7 ms now; F2 18.5 -> 3.4, F6 69 -> 30. */
static void wg_pack(const cf_problem *p, const cf_wg_job *j, const float *w, float *dst,
                    size_t u_pos)
{
    const int alpha = j->alpha, vl = j->vl, kd = wg_depth_taps(p);
    const double(*G)[3] = j->mt == 2 ? wg_g2 : j->mt == 4 ? wg_g4 : wg_g6;
    if (p->m % vl || p->c % vl) /* zero channels past K and C */
        for (int pos = 0; pos < alpha * alpha; pos++)
            memset(dst + (size_t)pos * u_pos, 0, u_pos * sizeof(float));
    /* In the packed order, VL output channels at a time (the innermost loops run over
     * them, so the compiler vectorizes them and each position's stores are contiguous). */
    const int64_t per_ob = j->cb * kd * vl * vl, per_cb = kd * vl * vl;
    for (int64_t i0 = 0; i0 < j->kb * per_ob; i0 += vl) {
        int64_t k0 = i0 / per_ob * vl, rest = i0 % per_ob;
        int64_t c = rest / per_cb * vl + rest % (vl * vl) / vl, tap = rest % per_cb / (vl * vl);
        if (c >= p->c)
            continue;
        double gl[9][WG_VL_MAX], gg[8][3][WG_VL_MAX]; /* g, then G g, per lane */
        for (int co = 0; co < vl; co++)
            for (int e = 0; e < 9; e++)
                gl[e][co] = k0 + co < p->m
                                ? (double)w[(((k0 + co) * p->c + c) * kd + tap) * 9 + e]
                                : 0.0;
        for (int r = 0; r < alpha; r++)
            for (int b = 0; b < 3; b++)
                for (int co = 0; co < vl; co++)
                    gg[r][b][co] = G[r][0] * gl[b][co] + G[r][1] * gl[3 + b][co] +
                                   G[r][2] * gl[6 + b][co];
        for (int r = 0; r < alpha; r++)
            for (int q = 0; q < alpha; q++) {
                float *d = dst + (size_t)(r * alpha + q) * u_pos + (size_t)i0;
                for (int co = 0; co < vl; co++)
                    d[co] = (float)(gg[r][0][co] * G[q][0] + gg[r][1][co] * G[q][1] +
                                    gg[r][2][co] * G[q][2]);
            }
    }
}

static convfind_status wg_pack_weights(const cf_problem *p, const void *w, void **packed, int mt)
{
    *packed = NULL;
    cf_wg_job j = wg_job_of(p, mt, cf_kernel_table_active()->direct_blocked->vl);
    wg_ws ws = wg_ws_of(p, &j);
    if (ws.total.overflow)
        return cf_fail(CONVFIND_ERR_OVERFLOW, "cpu.winograd_f%dx3 packed weights do not fit", mt);
    size_t floats = ws.u_pos * (size_t)(j.alpha * j.alpha);
    wg_packed *pk = malloc(sizeof *pk);
    float *u = aligned_alloc(64, (floats * sizeof(float) + 63) & ~(size_t)63);
    if (!pk || !u) {
        free(pk), free(u);
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of Winograd weights",
                       floats * sizeof(float));
    }
    wg_pack(p, &j, w, u, ws.u_pos);
    pk->vl = j.vl;
    pk->u = u;
    pk->bytes = floats * sizeof(float);
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

static size_t wg_packed_extent(const cf_problem *p, const void *packed, const void **start)
{
    (void)p;
    const wg_packed *pk = packed;
    *start = pk->u;
    return pk->bytes;
}

/* ---- execution -------------------------------------------------------------------- */

/* Tiles per product task, in runs of np: enough work per task to amortise claiming it. */
#define WG_RUNS_PER_TASK 4

typedef struct wg_run {
    const cf_wg_job *j;
    const cf_wg_kernels *k;
    const cf_dbk_kernels *dk;
    const float *x, *u;
    size_t u_pos;
    cf_problem plain;  /* the problem without epilogue, for the products' stores */
    int nb, np;        /* product tile: output blocks x tiles */
    int64_t nobg, chunks;
    int64_t tasks;     /* product tasks: positions x nobg x spans x chunks */
    /* Output tiles whose input tiles are a fixed distance further on, so that one run of
     * products may span them: all of them where input and output planes correspond one
     * to one (2-D, or a depth of one tap), else one image's; and that distance per span. */
    int64_t span, span_shift;
    cf_dbk_tap taps[WG_MAX_DEPTH_TAPS]; /* depth tap d reads the input plane d dilations on */
} wg_run;

/* The first index i >= 0 with 0 <= o + d i, and the first with o + d i >= hi: the
 * positions of a phase's padded row (or column) that read X's pixels o + d i in [0, hi). */
static void wg_inside(int64_t o, int64_t d, int64_t hi, int64_t *lo_out, int64_t *hi_out)
{
    int64_t lo = o >= 0 ? 0 : (-o + d - 1) / d;
    int64_t end = o >= hi ? 0 : (hi - o + d - 1) / d;
    *lo_out = lo;
    *hi_out = end > lo ? end : lo;
}

/* Pads phase (a, b) of plane (image n, padded slice s), channel c, of X into xpad: its
 * position (r, q) holds X's pixel (a - pad_h + dh r, b - pad_w + dw q), or zero. */
static void wg_pad_task(void *arg, size_t index)
{
    const wg_run *r = arg;
    const cf_wg_job *j = r->j;
    const cf_problem *p = j->p;
    int64_t c = (int64_t)index % p->c, plane = (int64_t)index / p->c;
    int64_t b = plane % j->dw, a = plane / j->dw % j->dh, img = plane / (j->dh * j->dw);
    int64_t s = img % j->slices, n = img / j->slices;
    float *dst = (float *)j->xpad + index * (size_t)(j->hp * j->wp);
    memset(dst, 0, (size_t)(j->hp * j->wp) * sizeof(float));
    const int ah = p->nsp - 2, aw = p->nsp - 1;
    int64_t id_n = p->nsp == 3 ? p->in[0] : 1, id = p->nsp == 3 ? s - p->pad_begin[0] : 0;
    if (id < 0 || id >= id_n) /* a padding plane */
        return;
    int64_t ih_n = p->in[ah], iw_n = p->in[aw];
    int64_t oh = a - p->pad_begin[ah], ow = b - p->pad_begin[aw]; /* X's pixel at (0, 0) */
    int64_t r_lo, r_hi, q_lo, q_hi;
    wg_inside(oh, j->dh, ih_n, &r_lo, &r_hi);
    wg_inside(ow, j->dw, iw_n, &q_lo, &q_hi);
    r_hi = r_hi < j->hp ? r_hi : j->hp;
    q_hi = q_hi < j->wp ? q_hi : j->wp;
    /* X's plane and the floats between its pixels (NHWC: C; NCHW: 1). */
    bool nhwc = p->layout == CONVFIND_LAYOUT_NHWC;
    ptrdiff_t ch = nhwc ? (ptrdiff_t)p->c : 1;
    const float *plane_x = r->x + (nhwc ? (n * id_n + id) * ih_n * iw_n * p->c + c
                                        : ((n * p->c + c) * id_n + id) * ih_n * iw_n);
    for (int64_t rr = r_lo; rr < r_hi; rr++) {
        float *row = dst + rr * j->wp;
        const float *src = plane_x + (oh + j->dh * rr) * iw_n * ch;
        if (ch == 1 && j->dw == 1 && q_hi > q_lo)
            memcpy(row + q_lo, src + ow + q_lo, (size_t)(q_hi - q_lo) * sizeof(float));
        else
            for (int64_t q = q_lo; q < q_hi; q++)
                row[q] = src[(ow + j->dw * q) * ch];
    }
}

static void wg_input_task(void *arg, size_t index)
{
    const wg_run *r = arg;
    r->k->input(r->j, index);
}

/* Product task `index`: its run chunk, span, position and group of output blocks (ob0,
 * obn blocks), and where its weights start. */
typedef struct wg_task {
    int64_t chunk, span, pos, ob0, obn;
    const float *w;
} wg_task;

static wg_task wg_task_of(const wg_run *r, int64_t index, int64_t w_ob)
{
    const cf_wg_job *j = r->j;
    const int64_t spans = j->ntiles / r->span;
    wg_task t = {.chunk = index % r->chunks, .span = index / r->chunks % spans};
    int64_t rest = index / r->chunks / spans;
    t.pos = rest / r->nobg;
    t.ob0 = rest % r->nobg * r->nb;
    t.obn = j->kb - t.ob0 < r->nb ? j->kb - t.ob0 : r->nb;
    t.w = r->u + (size_t)t.pos * r->u_pos + t.ob0 * w_ob;
    return t;
}

/* One position, one group of nb output blocks, WG_RUNS_PER_TASK runs of np tiles of one
 * span: the products as a convolution of one tap per depth tap on the direct tile
 * kernel, stored raw into M.
 * A task reads its weights (a position's U for its output blocks) for its first run of
 * tiles, and in a network's pass they come from memory: every layer's transformed
 * weights were read a whole pass ago (ResNet-50's 14x14 and 7x7 layers, 9.4 and 16.8 MB
 * of them).  So each task asks for the weights of the task after it in its thread's
 * share (index + 1, when they differ from its own), a part in each run of tiles, and
 * they arrive while it computes. */
static void wg_product_task(void *arg, size_t index)
{
    const wg_run *r = arg;
    const cf_wg_job *j = r->j;
    int vl = j->vl, kd = wg_depth_taps(j->p);
    const int64_t w_ob = j->cb * kd * vl * vl;
    const wg_task tk = wg_task_of(r, (int64_t)index, w_ob);
    const int64_t span = tk.span, ob0 = tk.ob0, obn = tk.obn;
    const float *v = j->v + (size_t)tk.pos * j->v_pos + span * r->span_shift * vl;
    float *mo = j->mo + (size_t)tk.pos * j->mo_pos;
    int64_t t_lo = span * r->span + tk.chunk * WG_RUNS_PER_TASK * r->np;
    int64_t t_hi = t_lo + WG_RUNS_PER_TASK * r->np < (span + 1) * r->span
                       ? t_lo + WG_RUNS_PER_TASK * r->np
                       : (span + 1) * r->span;
    /* The next task's weights, unless they are these (already here) or there is none. */
    wg_task next = {.w = NULL, .obn = 0};
    if ((int64_t)index + 1 < r->tasks)
        next = wg_task_of(r, (int64_t)index + 1, w_ob);
    if (next.w == tk.w)
        next.w = NULL;
    const int64_t line = CF_PREFETCH_LINE / sizeof(float), lines = w_ob / line;
    const int64_t runs = (t_hi - t_lo + r->np - 1) / r->np;
    for (int64_t t0 = t_lo; t0 < t_hi; t0 += r->np) {
        int np = t_hi - t0 < r->np ? (int)(t_hi - t0) : r->np;
        /* This run's part of each next output block's weights. */
        int64_t run = (t0 - t_lo) / r->np, lo = run * lines / runs,
                hi = (run + 1) * lines / runs;
        for (int64_t ob = ob0; ob < ob0 + obn;) {
            int nb = ob0 + obn - ob < 4 ? (int)(ob0 + obn - ob) : 4;
            while (r->dk->max_np[nb] < np)
                nb--;
            int64_t nm = j->p->m - ob * vl < nb * vl ? j->p->m - ob * vl : nb * vl;
            /* The tile asks for the next task's blocks at its own offset in the group,
             * where the next group has them. */
            bool ask = next.w && ob - ob0 + nb <= next.obn;
            cf_dbk_tile t = {
                .pf = ask ? next.w + (ob - ob0) * w_ob + lo * line : NULL,
                .pf_lines = ask ? (int)(hi - lo) : 0,
                .x = v + t0 * vl,
                .tap = r->taps,
                .ntaps = kd,
                .ncb = (int)j->cb,
                .x_cb = (ptrdiff_t)(j->groups * vl * vl),
                .w = tk.w + (ob - ob0) * w_ob,
                .w_cb = (ptrdiff_t)(kd * vl * vl),
                .w_ob = (ptrdiff_t)w_ob,
                .nb = nb,
                .np = np,
            };
            cf_dbk_store st = {
                .p = &r->plain,
                .y = mo + t0 * j->kb * vl + ob * vl,
                .nm = (int)nm,
                .ch_stride = 1,
                .px_stride = (ptrdiff_t)(j->kb * vl),
            };
            r->dk->tile(&t, &st);
            ob += nb;
        }
    }
}

static void wg_output_task(void *arg, size_t index)
{
    const wg_run *r = arg;
    r->k->output(r->j, index);
}

/* The product tile: the most accumulators per run of tiles, as cpu.direct_blocked picks
 * its tile for a row. */
static void wg_choose_tile(const cf_dbk_kernels *dk, const cf_wg_job *j, int64_t span,
                           int *nb_out, int *np_out)
{
    int best_nb = 1, best_np = 1, best = 0;
    for (int nb = 1; nb <= 4 && (nb == 1 || nb <= j->kb); nb++) {
        int64_t runs = (span + dk->max_np[nb] - 1) / dk->max_np[nb];
        int np = (int)((span + runs - 1) / runs);
        if (nb * np >= best) {
            best = nb * np;
            best_nb = nb;
            best_np = np;
        }
    }
    *nb_out = best_nb;
    *np_out = best_np;
}

static convfind_status wg_execute(const cf_problem *p, const cf_exec_args *a, int mt)
{
    const cf_kernel_table *kt = cf_kernel_table_active();
    const cf_dbk_kernels *dk = kt->direct_blocked;
    const cf_wg_kernels *k = kt->winograd[mt / 2 - 1];
    cf_wg_job j = wg_job_of(p, mt, k->vl);
    wg_ws ws = wg_ws_of(p, &j);
    if (ws.total.overflow)
        return cf_fail(CONVFIND_ERR_OVERFLOW, "cpu.winograd_f%dx3 workspace does not fit", mt);
    if (!a->workspace || a->workspace_size < ws.total.bytes)
        return cf_fail(CONVFIND_ERR_INVALID_SHAPE, "cpu.winograd_f%dx3 needs %zu bytes of "
                       "workspace, got %zu", mt, ws.total.bytes, a->workspace_size);
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
    const float *u = pk && pk->vl == j.vl ? pk->u : NULL;
    if (!u) {
        float *dst = (float *)(base + ws.u);
        wg_pack(p, &j, a->w, dst, ws.u_pos);
        u = dst;
    }
    wg_run run = {.j = &j, .k = k, .dk = dk, .x = a->x, .u = u, .u_pos = ws.u_pos, .plain = *p};
    run.plain.act = CONVFIND_ACT_NONE;
    bool one_to_one = j.slices == j.dout;
    int64_t per_slice = j.ntiles_in / (p->n * j.slices);
    run.span = one_to_one ? j.ntiles : j.dout * per_slice;
    run.span_shift = one_to_one ? 0 : (j.slices - j.dout) * per_slice;
    for (int d = 0; d < wg_depth_taps(p); d++)
        run.taps[d] = (cf_dbk_tap){
            .x = (ptrdiff_t)(d * (p->nsp == 3 ? p->dil[0] : 1) * per_slice * j.vl),
            .w = (ptrdiff_t)(d * j.vl * j.vl)};
    wg_choose_tile(dk, &j, run.span, &run.nb, &run.np);
    run.nobg = (j.kb + run.nb - 1) / run.nb;
    run.chunks = (run.span + WG_RUNS_PER_TASK * run.np - 1) / (WG_RUNS_PER_TASK * run.np);
    size_t positions = (size_t)(j.alpha * j.alpha), spans = (size_t)(j.ntiles / run.span);
    run.tasks = (int64_t)(positions * (size_t)(run.nobg * spans * run.chunks));
    cf_parallel_for(a->pool, (size_t)(j.ntiles_in / (j.tiles_h * j.tiles_w) * p->c), wg_pad_task,
                    &run);
    cf_parallel_for(a->pool, (size_t)(j.cb * j.groups), wg_input_task, &run);
    cf_parallel_for(a->pool, (size_t)run.tasks, wg_product_task, &run);
    cf_parallel_for(a->pool, (size_t)(j.ntiles / j.tiles_w * j.kb), wg_output_task, &run);
    return CONVFIND_OK;
}

/* The three algorithms: the same code with the tile size bound. */
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
        .packed_extent = wg_packed_extent,                                                 \
        .execute = wg##MT##_execute,                                                       \
    };

WG_ALGO(2)
WG_ALGO(4)
WG_ALGO(6)
