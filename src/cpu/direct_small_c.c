/*
 * direct_small_c.c - "cpu.direct_small_c": direct convolution for layers with few input
 * channels per group (the first layer of an image or audio network), vectorized along
 * the output row (direct_small_c.h describes the layouts and the tile).
 *
 * One execution: (1) pack the weights unless the caller passed packed ones, (2) split
 * the output into units of (image, group, output plane, band of output rows, chunk of
 * output channels), and run one task per thread that claims units one at a time.  A
 * task stages the input rows of each unit's band, zero-padded and phase-split, into its
 * own slot of the workspace (once for consecutive chunks of one band), then walks the
 * band in tiles whose sums stay in registers over the whole reduction and go through
 * the fused epilogue straight into Y's own layout.  Staging is one pass over C x (rows
 * read) x W floats per band against M x taps FMAs per staged float; the slot stays in
 * the core's cache from band to band.  It reads each input row once for all its stride
 * phases and writes only pixels: the zeros around them (padding, margins) are written
 * once per execution, when a task clears its slot.  With the shortest reductions it is
 * still not negligible: about 11% of the MobileNetV2 stem's time (27 FMA steps per
 * output, docs/performance.md), where reading stride-2 rows from X inside the tile, one
 * permute per vector and tap, measured no faster.  Rows that are not whole vectors (56
 * outputs: 4 vectors of 16, one half empty) are staged flat when that saves lanes
 * (dsc_flat_pays): a tile's vectors then run on from one output row into the next.
 *
 * Conv only, f32, 1-D to 3-D, any kernel size, stride, dilation and asymmetric padding
 * within cf_geom3_bounded (geom3.h), NCHW and NHWC, any group count with at most
 * DSC_MAX_CG input channels per group (depthwise excluded: cpu.depthwise has its own
 * kernels).  The packed weights do not depend on the ISA level, which is read at every
 * execution.
 */
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "cpu/direct_small_c.h"
#include "cpu/geom3.h"
#include "cpu/kernel_table.h"
#include "cpu/workspace.h"
#include "problem/shape.h"
#include "util/error.h"
#include "util/shares.h"

/* cpu.direct_blocked reduces over blocks of 16 input channels, so up to 8 channels per
 * group at least half of its FMAs multiply padding, while this algorithm wastes none;
 * with more channels the blocked kernel wastes less and its per-output reduction is the
 * cheaper one, and the staged band (channels x rows x width) would outgrow L1. */
#define DSC_MAX_CG 8

/* Work is split into units of one band of output rows x one chunk of output channels;
 * DSC_UNITS of them, when the problem has that many rows, so that threads get even
 * shares.  Bands are at most DSC_MAX_BAND rows tall: taller ones would stage more than
 * L1 holds without saving much (neighbouring bands both stage the kernel height -
 * stride rows they share, a small part of a band already).  With fewer rows than
 * DSC_UNITS, output channels are split into chunks of at least DSC_MIN_CHUNK (enough
 * for the widest tiles). */
#define DSC_UNITS 32
#define DSC_MAX_BAND 8
#define DSC_MIN_CHUNK 16
/* A unit's part of Y stays within this fraction of L2 (dsc_geom_of). */
#define DSC_Y_L2_PART 4
/* One task per thread, each with its own staging slot, claims units one at a time, so
 * that a thread that starts late or is slowed down by others does fewer; at most
 * DSC_SLOTS tasks, which bounds the workspace.  Each task claims from its own contiguous
 * share of the units first and then from the others' (dsc_task). */
#define DSC_SLOTS 64
/* A flat tile's vectors cost more to store (a division for their row, two masked pieces
 * where they cross a row end): charged as this many reduction steps per vector against
 * the lanes flat staging saves. */
#define DSC_FLAT_STORE 8

/* Everything about the staged layout and the task split; independent of the ISA, so
 * workspace() sizes every level at once. */
typedef struct dsc_geom {
    cf_geom3 s;
    int64_t groups, cg, mg;
    int64_t taps;    /* kernel taps */
    int64_t ntaps;   /* cg * taps: the reduction length */
    int64_t band;    /* output rows per band */
    int64_t nbands;  /* bands per output plane */
    int64_t rows;    /* staged rows per (input channel, depth tap) of a full band */
    int64_t b;       /* zeros before a phase's first pixel: the left padding, rounded up */
    int64_t wq;      /* floats per phase of a row: what tiles read or staging writes,
                      * rounded up to a cache line */
    int64_t rs;      /* floats per staged row (all phases) */
    int64_t pitch;   /* flat staging (direct_small_c.h): floats per row of a phase; 0:
                      * rows staged one after another, b, wq and rs as above */
    int64_t plane;   /* flat staging: floats per (channel, kd, row phase, column phase),
                      * rows of `pitch` and room for a last vector past them */
    int64_t nchunks; /* chunks of output channels per group */
    int64_t units;   /* (image, group, plane, band, chunk) */
    int64_t slots;   /* staging slots: the most tasks an execution runs */
} dsc_geom;

/* Workspace parts, in order: packed weights, tap offsets, staging slots. */
typedef struct dsc_ws {
    size_t w, tap, x;
    size_t slot; /* floats per staging slot */
    cf_ws total;
} dsc_ws;

/* The geometry with flat staging or without. */
static dsc_geom dsc_geom_of(const cf_problem *p, bool flat)
{
    dsc_geom g;
    g.s = cf_geom3_of(p);
    const cf_geom3 *s = &g.s;
    g.groups = p->group;
    g.cg = cf_cin_per_group(p);
    g.mg = cf_cout_per_group(p);
    g.taps = p->k_sp;
    g.ntaps = g.cg * g.taps;
    int64_t planes = p->n * g.groups * s->out[0];
    g.band = planes * s->out[1] / DSC_UNITS;
    g.band = g.band < 1 ? 1 : g.band > DSC_MAX_BAND ? DSC_MAX_BAND : g.band;
    g.band = g.band > s->out[1] ? s->out[1] : g.band;
    g.nbands = (s->out[1] + g.band - 1) / g.band;
    g.rows = (g.band - 1) * s->stride[1] + (s->k[1] - 1) * s->dil[1] + 1;
    /* Tap kw reads pixel ow * sw + e, e = kw * dw - pw: index b + ow + floor(e / sw) of
     * phase e mod sw, for ow up to the vectors of the widest ISA (16) that cover the
     * row; staging writes ceil(W / sw) pixels per phase, in whole vectors.  b and the
     * phase rows are multiples of 16, so that each row starts on a cache line (the
     * workspace does) and taps with e = 0 load whole lines. */
    int64_t sw = s->stride[2], e_max = (s->k[2] - 1) * s->dil[2] - s->pad[2];
    g.b = ((s->pad[2] + sw - 1) / sw + 15) / 16 * 16;
    int64_t read = (s->out[2] + 15) / 16 * 16 + cf_floor_div(e_max, sw);
    int64_t written = ((s->in[2] + sw - 1) / sw + 15) / 16 * 16;
    g.wq = g.b + ((read > written ? read : written) + 15) / 16 * 16;
    g.rs = sw * g.wq;
    g.pitch = g.plane = 0;
    if (flat) {
        /* Output column i reads index b + i + q of its staged row, q = floor(e / sw)
         * from -b = floor(-pw / sw) to q_max: the zeros between one row's pixels and the
         * next row's must cover both ends, so pitch >= ceil(W / sw) + b, out + q_max. */
        int64_t q_max = cf_floor_div(e_max, sw), wp = (s->in[2] + sw - 1) / sw;
        g.b = -cf_floor_div(-s->pad[2], sw);
        g.pitch = wp + g.b > s->out[2] + q_max ? wp + g.b : s->out[2] + q_max;
        g.pitch = g.pitch > s->out[2] ? g.pitch : s->out[2];
        /* A band's last vector (up to 15 lanes past its last row) reads up to b + q_max
         * past a row, and staging writes up to 15 zeros past the last one. */
        int64_t rows_h = (g.rows + s->stride[1] - 1) / s->stride[1];
        int64_t over = g.b + (q_max > 0 ? q_max : 0) + 32;
        g.plane = ((rows_h + 1) * g.pitch + over + 15) / 16 * 16;
    }
    int64_t base = planes * g.nbands;
    int64_t most = (g.mg + DSC_MIN_CHUNK - 1) / DSC_MIN_CHUNK;
    g.nchunks = base >= DSC_UNITS ? 1 : (DSC_UNITS + base - 1) / base;
    g.nchunks = g.nchunks > most ? most : g.nchunks;
    /* A unit's Y (its channels x the band's pixels) within 1 / DSC_Y_L2_PART of L2: row
     * tiles walk the band vector group by vector group, each group storing into every
     * channel row of the unit, so the rows of a wider unit leave the cache between
     * groups (wav2vec2's first layer at N=8, 128-channel units of 3199-pixel rows: 6.5
     * ms in units of 128 channels, 4.4 in units of 16; algo_layers, 2 threads). */
    double band_y = (double)g.band * (double)s->out[2] * sizeof(float);
    double y_room = (double)cf_cpu_caches()->l2 / DSC_Y_L2_PART;
    int64_t least = (int64_t)((double)g.mg * band_y / y_room) + 1;
    least = least > most ? most : least;
    g.nchunks = g.nchunks < least ? least : g.nchunks;
    g.units = base * g.nchunks;
    g.slots = g.units < DSC_SLOTS ? g.units : DSC_SLOTS;
    return g;
}

static dsc_ws dsc_ws_of(const cf_problem *p, const dsc_geom *g)
{
    dsc_ws w = {0};
    cf_ws *t = &w.total;
    size_t planes = cf_ws_mul(t, (size_t)g->cg, (size_t)g->s.k[0]);
    w.slot = g->pitch ? cf_ws_mul(t, planes, cf_ws_mul(t, (size_t)(g->s.stride[1] *
                                                              g->s.stride[2]),
                                                       (size_t)g->plane))
                      : cf_ws_mul(t, planes, cf_ws_mul(t, (size_t)g->rows, (size_t)g->rs));
    w.w = cf_ws_take(t, p->w_elems, sizeof(float));
    w.tap = cf_ws_take(t, (size_t)g->ntaps, sizeof(ptrdiff_t));
    w.x = cf_ws_take(t, cf_ws_mul(t, (size_t)g->slots, w.slot), sizeof(float));
    return w;
}

static bool dsc_applicable(const cf_problem *p)
{
    if (p->op != CONVFIND_OP_CONV || p->dtype != CONVFIND_DTYPE_F32)
        return false;
    cf_geom3 s = cf_geom3_of(p);
    if (!cf_geom3_bounded(&s)) /* the staged rows hold the padding */
        return false;
    int64_t cg = cf_cin_per_group(p);
    return cg <= DSC_MAX_CG && !(cg == 1 && p->group > 1);
}

/* The workspace of either staging, whichever the execution's ISA level picks
 * (dsc_flat_pays): the larger one, which every execution asks for. */
static cf_ws dsc_ws_need(const cf_problem *p)
{
    dsc_geom g = dsc_geom_of(p, false), gf = dsc_geom_of(p, true);
    dsc_ws w = dsc_ws_of(p, &g), wf = dsc_ws_of(p, &gf);
    return wf.total.bytes > w.total.bytes || wf.total.overflow ? wf.total : w.total;
}

static convfind_status dsc_workspace(const cf_problem *p, size_t *bytes)
{
    cf_ws w = dsc_ws_need(p);
    if (w.overflow)
        return cf_fail(CONVFIND_ERR_OVERFLOW, "cpu.direct_small_c workspace for %lld channels "
                       "over %lld positions does not fit in size_t", (long long)p->c,
                       (long long)p->in_sp);
    *bytes = w.bytes;
    return CONVFIND_OK;
}

/* ---- weights ---------------------------------------------------------------------- */

/* W [group][out channel][in channel][tap] into [group][in channel][tap][out channel]. */
static void dsc_pack(const dsc_geom *g, const float *w, float *dst)
{
    for (int64_t grp = 0; grp < g->groups; grp++)
        for (int64_t k = 0; k < g->ntaps; k++)
            for (int64_t m = 0; m < g->mg; m++)
                *dst++ = w[(grp * g->mg + m) * g->ntaps + k];
}

static convfind_status dsc_pack_weights(const cf_problem *p, const void *state, const void *w,
                                        void **packed)
{
    (void)state;
    dsc_geom g = dsc_geom_of(p, false);
    float *data = aligned_alloc(64, (p->w_elems * sizeof(float) + 63) & ~(size_t)63);
    if (!data) {
        *packed = NULL;
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of packed weights "
                       "for cpu.direct_small_c", p->w_elems * sizeof(float));
    }
    dsc_pack(&g, w, data);
    *packed = data;
    return CONVFIND_OK;
}

static void dsc_free_packed(void *packed) { free(packed); }

static size_t dsc_packed_extent(const cf_problem *p, const void *packed, const void **start)
{
    *start = packed;
    return p->w_elems * sizeof(float);
}

/* ---- execution -------------------------------------------------------------------- */

typedef struct dsc_job {
    const cf_problem *p;
    const dsc_geom *g;
    const cf_dsc_kernels *k;
    const cf_exec_args *a;
    const float *wp;
    const ptrdiff_t *tap;
    cf_share *shares; /* the units, one share per task (util/shares.h) */
    size_t tasks;
    float *xs;       /* staging slots */
    size_t slot;     /* floats per slot */
    int npv;         /* vectors along the row per tile (the last group of a row may be
                      * narrower) */
    bool stream;     /* cf_dsc_store.stream for every tile */
} dsc_job;

/* Flat staging (direct_small_c.h) of one (channel, depth tap): `rows` staged rows, input
 * rows (src on, src_row floats apart) for rows [r_lo, r_hi) and zero rows around them.
 * Staged row r goes to row r / sh of row phase r % sh; a row phase's input rows are sh
 * input rows apart.  Rows go in ascending order, so the zeros staging writes past a
 * row's last pixel land on rows still to be written or zeroed. */
static void dsc_stage_flat(const dsc_job *job, float *dst, int64_t rows, int64_t r_lo,
                           int64_t r_hi, const float *src, ptrdiff_t src_row, ptrdiff_t step)
{
    const dsc_geom *g = job->g;
    int64_t sh = g->s.stride[1], sw = g->s.stride[2], pitch = g->pitch;
    for (int64_t ph = 0; ph < sh && ph < rows; ph++) {
        float *pl = dst + ph * sw * g->plane;
        int64_t n = (rows - ph + sh - 1) / sh;          /* rows of this phase */
        int64_t lo = (r_lo - ph + sh - 1) / sh, hi = (r_hi - ph + sh - 1) / sh;
        lo = lo < 0 ? 0 : lo;
        hi = hi < lo ? lo : hi;
        for (int64_t q = 0; q < sw; q++) {
            memset(pl + q * g->plane, 0, (size_t)(lo * pitch) * sizeof(float));
            memset(pl + q * g->plane + hi * pitch, 0, (size_t)((n - hi) * pitch) * sizeof(float));
        }
        if (hi > lo)
            job->k->stage(pl + lo * pitch, pitch, hi - lo,
                          src + (lo * sh + ph - r_lo) * src_row, sh * src_row, g->s.in[2], step,
                          sw, g->plane, g->b);
    }
}

/* Stages the input rows that output rows [oh0, oh1) of plane od read, for every input
 * channel of group grp and every depth tap: zero rows where the window leaves the input
 * (the slot's zeros around each row's pixels stay from the task's start). */
static void dsc_stage_band(const dsc_job *job, float *slot, int64_t n, int64_t grp, int64_t od,
                           int64_t oh0, int64_t oh1)
{
    const cf_problem *p = job->p;
    const dsc_geom *g = job->g;
    const cf_geom3 *s = &g->s;
    bool nhwc = p->layout == CONVFIND_LAYOUT_NHWC;
    int64_t rows = (oh1 - oh0 - 1) * s->stride[1] + (s->k[1] - 1) * s->dil[1] + 1;
    /* Staged row r holds input row ih0 + r: input for r in [r_lo, r_hi). */
    int64_t ih0 = oh0 * s->stride[1] - s->pad[1];
    int64_t r_lo = ih0 < 0 ? (-ih0 < rows ? -ih0 : rows) : 0;
    int64_t r_hi = s->in[1] - ih0 < rows ? s->in[1] - ih0 : rows;
    r_hi = r_hi < r_lo ? r_lo : r_hi;
    ptrdiff_t step = nhwc ? (ptrdiff_t)p->c : 1, src_row = (ptrdiff_t)(s->in[2] * step);
    const float *x = job->a->x;
    const cf_dsc_kernels *k = job->k;
    for (int64_t c = 0; c < g->cg; c++)
        for (int64_t kd = 0; kd < s->k[0]; kd++) {
            int64_t id = od * s->stride[0] - s->pad[0] + kd * s->dil[0];
            int64_t ch = grp * g->cg + c;
            bool none = r_hi == r_lo || id < 0 || id >= s->in[0];
            int64_t sp = (id * s->in[1] + ih0 + r_lo) * s->in[2];
            const float *src = none ? NULL
                               : nhwc ? x + (n * p->in_sp + sp) * p->c + ch
                                      : x + (n * p->c + ch) * p->in_sp + sp;
            if (g->pitch) {
                float *dst = slot + (c * s->k[0] + kd) * s->stride[1] * s->stride[2] * g->plane;
                dsc_stage_flat(job, dst, rows, none ? 0 : r_lo, none ? 0 : r_hi, src, src_row,
                               step);
                continue;
            }
            float *dst = slot + (c * s->k[0] + kd) * g->rows * g->rs;
            if (none) {
                k->stage(dst, g->rs, rows, NULL, 0, 0, 0, s->stride[2], g->wq, g->b);
                continue;
            }
            k->stage(dst, g->rs, r_lo, NULL, 0, 0, 0, s->stride[2], g->wq, g->b);
            k->stage(dst + r_lo * g->rs, g->rs, r_hi - r_lo, src, src_row, s->in[2], step,
                     s->stride[2], g->wq, g->b);
            k->stage(dst + r_hi * g->rs, g->rs, rows - r_hi, NULL, 0, 0, 0, s->stride[2], g->wq,
                     g->b);
        }
}

/* Where one unit's tiles go: its band, chunk and staged slot. */
typedef struct dsc_band {
    const dsc_job *job;
    const float *slot;
    int64_t n, grp, oh0, oh1, m_lo, cm;
    int64_t span; /* pixels a tile row covers (dsc_span) */
    int64_t row_px; /* output pixel of the band's first row, first column */
} dsc_band;

/* Runs the tile of vectors [v0, v0 + npv) and channel tile mt of mtiles. */
static void dsc_band_tile(const dsc_band *u, int64_t v0, int npv, int64_t mt, int64_t mtiles)
{
    const dsc_job *job = u->job;
    const cf_problem *p = job->p;
    const dsc_geom *g = job->g;
    const cf_geom3 *s = &g->s;
    bool nhwc = p->layout == CONVFIND_LAYOUT_NHWC;
    int vl = job->k->vl;
    int64_t ow = s->out[2], j0 = v0 * vl, px = u->row_px + (g->pitch ? 0 : j0);
    /* Balanced: tiles differ by at most one channel. */
    int64_t m0 = u->m_lo + mt * u->cm / mtiles, nm = u->m_lo + (mt + 1) * u->cm / mtiles - m0;
    int64_t mo = u->grp * g->mg + m0; /* channel of Y */
    size_t y_off = nhwc ? (size_t)((u->n * p->out_sp + px) * p->m + mo)
                        : (size_t)((u->n * p->m + mo) * p->out_sp + px);
    const float *bias = job->a->b, *z = job->a->z;
    cf_dsc_tile t = {
        .x = u->slot + j0,
        .x_row = (ptrdiff_t)(s->stride[1] * g->rs),
        .rows = g->pitch ? 1 : (int)(u->oh1 - u->oh0),
        .tap = job->tap,
        .ntaps = (int)g->ntaps,
        .w = job->wp + u->grp * g->ntaps * g->mg + m0,
        .w_tap = (ptrdiff_t)g->mg,
        .nm = (int)nm,
        .npv = npv,
    };
    cf_dsc_store st = {
        .p = p,
        .y = (float *)job->a->y + y_off,
        .y_row = nhwc ? (ptrdiff_t)(ow * p->m) : (ptrdiff_t)ow,
        .z = z ? (const float *)z + y_off : NULL,
        .bias = bias ? (const float *)bias + mo : NULL,
        .npx = (int)(u->span - j0 < npv * vl ? u->span - j0 : npv * vl),
        .ch_stride = nhwc ? 1 : (ptrdiff_t)p->out_sp,
        .px_stride = nhwc ? (ptrdiff_t)p->m : 1,
        .pitch = (int)g->pitch,
        .j0 = (int)j0,
        .ow = (int)ow,
        .stream = job->stream,
    };
    job->k->tile(&t, &st);
}

/* One unit of work: one band of output rows for one chunk of output channels, reading
 * the band staged in `slot`. */
static void dsc_unit(const dsc_job *job, float *slot, int64_t unit, bool staged)
{
    const dsc_geom *g = job->g;
    const cf_geom3 *s = &g->s;
    int64_t rest = unit;
    int64_t chunk = rest % g->nchunks;
    rest /= g->nchunks;
    int64_t band = rest % g->nbands;
    rest /= g->nbands;
    int64_t od = rest % s->out[0];
    rest /= s->out[0];
    dsc_band u = {.job = job, .slot = slot, .grp = rest % g->groups, .n = rest / g->groups};
    u.oh0 = band * g->band;
    u.oh1 = u.oh0 + g->band < s->out[1] ? u.oh0 + g->band : s->out[1];
    if (!staged)
        dsc_stage_band(job, slot, u.n, u.grp, od, u.oh0, u.oh1);
    u.m_lo = chunk * g->mg / g->nchunks;
    u.cm = (chunk + 1) * g->mg / g->nchunks - u.m_lo;
    /* Row tiles run over one row's pixels for each row of the band; flat tiles once over
     * the band's rows laid pitch apart, up to the last row's last pixel. */
    u.span = g->pitch ? (u.oh1 - u.oh0 - 1) * g->pitch + s->out[2] : s->out[2];
    u.row_px = (od * s->out[1] + u.oh0) * s->out[2];

    const int *max_nm = job->k->max_nm;
    int64_t vecs = (u.span + job->k->vl - 1) / job->k->vl;
    if (!g->pitch) {
        /* Each group of vectors, then its channel tiles: a narrower last group takes as
         * many channels as its width allows. */
        for (int64_t v0 = 0; v0 < vecs; v0 += job->npv) {
            int npv = vecs - v0 < job->npv ? (int)(vecs - v0) : job->npv;
            int64_t mtiles = (u.cm + max_nm[npv] - 1) / max_nm[npv];
            for (int64_t mt = 0; mt < mtiles; mt++)
                dsc_band_tile(&u, v0, npv, mt, mtiles);
        }
        return;
    }
    /* Flat: channel tiles outer, so that one tile's weights stay in L1 while it walks
     * the band (groups outer read every weight from L2 for each group of vectors:
     * measured about 10% slower on R3D-18's stem, one thread). */
    int64_t mtiles = (u.cm + max_nm[job->npv] - 1) / max_nm[job->npv];
    for (int64_t mt = 0; mt < mtiles; mt++)
        for (int64_t v0 = 0; v0 < vecs; v0 += job->npv)
            dsc_band_tile(&u, v0, vecs - v0 < job->npv ? (int)(vecs - v0) : job->npv, mt,
                          mtiles);
}

/* What one task carries from unit to unit: its staging slot and the band it holds. */
typedef struct dsc_worker {
    const dsc_job *job;
    float *slot;
    int64_t staged; /* the band (unit / chunks) the slot holds; -1: none */
} dsc_worker;

static void dsc_worker_unit(void *arg, size_t unit)
{
    dsc_worker *w = arg;
    int64_t u = (int64_t)unit, band = u / w->job->g->nchunks;
    dsc_unit(w->job, w->slot, u, band == w->staged);
    w->staged = band;
}

/* One thread's work: units claimed one at a time, its own share's first, then the other
 * tasks' (util/shares.h), staged into one slot, which stays in the core's cache from
 * unit to unit; consecutive chunks of one band stage it once.  Own shares first give a
 * thread the same bands every time a layer runs, so it finds their X and Y in its core's
 * cache (claimed from one counter, bands went to either thread: the MobileNetV2 stem on
 * 2 threads took 0.14-0.24 ms against 0.236 on one). */
static void dsc_task(void *arg, size_t index)
{
    const dsc_job *job = arg;
    dsc_worker w = {.job = job, .slot = job->xs + index * job->slot, .staged = -1};
    memset(w.slot, 0, job->slot * sizeof(float));
    cf_shares_run(job->shares, job->tasks, index, dsc_worker_unit, &w);
    if (job->stream)
        job->k->fence();
}

/* Pixels a tile row covers: one output row, or with flat staging a full band's rows. */
static int64_t dsc_span(const dsc_geom *g)
{
    return g->pitch ? (g->band - 1) * g->pitch + g->s.out[2] : g->s.out[2];
}

/* Flat staging pays when its vectors per band (pitch - ow lanes of each row wasted),
 * with the cost of their stores, are fewer than whole vectors per row: rows of 56
 * outputs take 4 vectors of 16 each, 8 rows flat at pitch 58 take 29 instead of 32.
 * Rows narrower than a vector are left to row tiles, so that a flat vector touches at
 * most two rows (dsc_store_regs). */
static bool dsc_flat_pays(const cf_dsc_kernels *k, const cf_problem *p)
{
    dsc_geom g = dsc_geom_of(p, false), gf = dsc_geom_of(p, true);
    int64_t vl = k->vl, row = g.band * ((g.s.out[2] + vl - 1) / vl);
    if (g.s.out[2] < vl)
        return false;
    int64_t flat = (dsc_span(&gf) + vl - 1) / vl;
    return flat * (g.ntaps + DSC_FLAT_STORE) < row * g.ntaps;
}

/* Picks the tile width (npv vectors; a tile of a vectors takes up to max_nm[a]
 * channels) by a cost per reduction step summed over the tiles of one row and chunk: a
 * tile issues nm * npv FMAs and loads nm + npv vectors, and the core sustains about as
 * many loads as FMAs per cycle (the loop's scalar work issues alongside).  Channel runs
 * are balanced (they differ by at most one), and so are pixel runs: a row of 7 vectors
 * takes one tile of 7 or tiles of 4 + 3, never 6 + 1.  Ties go to the tile with more
 * accumulators, which measured faster (4 x 6 over 7 x 3 on the ResNet-50 and
 * MobileNetV2 first layers). */
static int dsc_choose_tile(const cf_dsc_kernels *k, const dsc_geom *g)
{
    int64_t vecs = (dsc_span(g) + k->vl - 1) / k->vl;
    int64_t cm = (g->mg + g->nchunks - 1) / g->nchunks;
    int64_t best = -1, best_acc = 0;
    int best_npv = 1;
    for (int npv = 1; npv <= CF_DSC_MAX_NPV && k->max_nm[npv] > 0; npv++) {
        int64_t tw = (vecs + npv - 1) / npv, nv = (vecs + tw - 1) / tw;
        int64_t cost = 0;
        for (int64_t v0 = 0; v0 < vecs; v0 += nv) {
            int64_t a = vecs - v0 < nv ? vecs - v0 : nv;
            int64_t tm = (cm + k->max_nm[a] - 1) / k->max_nm[a];
            for (int64_t mt = 0; mt < tm; mt++) {
                int64_t b = (mt + 1) * cm / tm - mt * cm / tm;
                cost += a * b > a + b ? a * b : a + b;
            }
        }
        int64_t acc = nv * k->max_nm[nv];
        if (best < 0 || cost < best || (cost == best && acc > best_acc)) {
            best = cost;
            best_acc = acc;
            best_npv = (int)nv;
        }
    }
    return best_npv;
}

/* Whether Y goes around the caches (cf_dsc_store.stream): in NCHW, where its rows are
 * runs of whole vectors, and when it is more than DSC_STREAM_L2S times the L2 of the
 * threads together, which no cache level keeps for the next layer (the L3 this VM reports
 * is the whole host's).  Ordinary stores then read every line of Y before writing it, and
 * the YOLOv5s stem (6x6 stride 2 on 640x640, a 4 KiB-multiple plane) at N=2 to 8 took
 * twice as long: 9.9 -> 4.8 ms at N=2, 42.6 -> 19.0 at N=8 (2 threads, the Xeon); up to
 * 12.8 MB of Y (the MobileNetV2 stem at N=8) streaming changed nothing. */
#define DSC_STREAM_L2S 4

static bool dsc_stream(const cf_problem *p, int threads)
{
    double y_bytes = (double)p->n * (double)p->m * (double)p->out_sp * sizeof(float);
    return p->layout == CONVFIND_LAYOUT_NCHW &&
           y_bytes > DSC_STREAM_L2S * (double)cf_cpu_caches()->l2 * (threads > 0 ? threads : 1);
}

static convfind_status dsc_execute(const cf_problem *p, const void *state, const cf_exec_args *a)
{
    (void)state;
    const cf_dsc_kernels *k = cf_kernel_table_active()->direct_small_c;
    dsc_geom g = dsc_geom_of(p, dsc_flat_pays(k, p));
    dsc_ws ws = dsc_ws_of(p, &g);
    cf_ws need = dsc_ws_need(p); /* what workspace() reports, at least ws.total */
    if (need.overflow)
        return cf_fail(CONVFIND_ERR_OVERFLOW,
                       "cpu.direct_small_c workspace does not fit in size_t");
    if (a->workspace_size < need.bytes || !a->workspace)
        return cf_fail(CONVFIND_ERR_INVALID_SHAPE, "cpu.direct_small_c needs %zu bytes of "
                       "workspace, got %zu", need.bytes, a->workspace_size);

    char *base = a->workspace;
    const float *wp = a->packed_w;
    if (!wp) {
        dsc_pack(&g, a->w, (float *)(base + ws.w));
        wp = (const float *)(base + ws.w);
    }

    /* Reduction step (c, kd, kh, kw) reads the staged row of (c, kd) kh * dh rows below
     * the band row, in phase e mod sw from index b + floor(e / sw) on (e = kw * dw - pw);
     * flat, that row is row kh * dh / sh of row phase kh * dh mod sh. */
    ptrdiff_t *tap = (ptrdiff_t *)(base + ws.tap);
    const cf_geom3 *s = &g.s;
    int64_t sh = s->stride[1], sw = s->stride[2];
    for (int64_t c = 0, t = 0; c < g.cg; c++)
        for (int64_t kd = 0; kd < s->k[0]; kd++)
            for (int64_t kh = 0; kh < s->k[1]; kh++)
                for (int64_t kw = 0; kw < s->k[2]; kw++, t++) {
                    int64_t e = kw * s->dil[2] - s->pad[2], q = cf_floor_div(e, sw);
                    int64_t r = kh * s->dil[1], ph = e - q * sw;
                    tap[t] = (ptrdiff_t)(g.pitch ? (((c * s->k[0] + kd) * sh + r % sh) * sw + ph) *
                                                           g.plane +
                                                       r / sh * g.pitch + g.b + q
                                                 : ((c * s->k[0] + kd) * g.rows + r) * g.rs +
                                                       ph * g.wq + g.b + q);
                }

    dsc_job job = {.p = p, .g = &g, .k = k, .a = a, .wp = wp, .tap = tap,
                   .xs = (float *)(base + ws.x), .slot = ws.slot};
    job.npv = dsc_choose_tile(k, &g);
    job.stream = dsc_stream(p, cf_threadpool_size(a->pool));
    cf_share shares[DSC_SLOTS];
    int64_t tasks = cf_threadpool_size(a->pool);
    job.tasks = (size_t)(tasks < g.slots ? tasks : g.slots);
    job.shares = shares;
    cf_shares_deal(shares, job.tasks, (size_t)g.units);
    cf_parallel_for(a->pool, job.tasks, dsc_task, &job);
    return CONVFIND_OK;
}

const cf_algo cf_algo_cpu_direct_small_c = {
    .name = "cpu.direct_small_c",
    .family = "direct",
    .applicable = dsc_applicable,
    .workspace = dsc_workspace,
    .prepare = NULL,
    .release = NULL,
    .pack_weights = dsc_pack_weights,
    .free_packed = dsc_free_packed,
    .packed_extent = dsc_packed_extent,
    .execute = dsc_execute,
};
