/*
 * convtranspose_subpixel.c - "cpu.convtranspose_subpixel": ConvTranspose as stride^d
 * small convolutions (sub-pixel, or phase, decomposition), for dilation 1.
 *
 * Along one axis, output o receives input i through tap t when o + pad_begin = i*s + t.
 * Outputs of one phase phi = (o + pad_begin) mod s are reached only by the taps
 * t = phi + j*s, from inputs i = u - j where u = (o + pad_begin - phi) / s.  So each
 * phase is an ordinary stride-1 convolution of X with the flipped sub-kernel
 * W[.., phi + (J-1-j')*s] (J = the phase's tap count), evaluated on the phase's output
 * grid u: one GEMM on patch panels (gemm/patches.c), no col2im and no scatter-add.
 * Every output belongs to exactly one phase, so it is written once, with its epilogue
 * (a phase with no taps, possible when the kernel is smaller than the stride, writes
 * the epilogue of zero).  Negative pads (output_shape) and output_padding only move
 * where a phase's grid starts and how long it is.  Only phases that hold outputs are
 * visited, at most one per output, so a huge stride whose gaps huge pads crop away costs
 * no more than a small one.
 *
 * Weights are packed per group and phase (flipped and gathered once by pack_weights);
 * like every GEMM algorithm, an execution without matching packed weights packs them
 * into its workspace.  Work per image, group, run of pixels (tiles_of) and phase: where
 * the weights are small, chunks of a run's panels, each through every phase's patches,
 * GEMM and write-out on one thread (chunks_of); otherwise patches and GEMM split over the
 * pool by panels / cf_sgemm_packed, the write-out split over output channels.  Two phases
 * side by side along the innermost axis may share one GEMM and one write-out (pair_of).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "cpu/epilogue.h"
#include "cpu/gemm/patches.h"
#include "cpu/gemm/sgemm.h"
#include "cpu/geom3.h"
#include "cpu/kernel_table.h"
#include "cpu/workspace.h"
#include "problem/shape.h"
#include "util/error.h"

#define PACKED_MAGIC 0x58505553u /* "SUPX" */
#define PACKED_HEADER 64

typedef struct packed_header {
    uint32_t magic;
    cf_isa isa;
    size_t bytes; /* of the whole blob, this header included */
} packed_header;

/* One phase: per geom3 axis its tap count, first grid index u and grid length. */
typedef struct phase {
    int64_t phi[3], taps[3], u_lo[3], count[3];
    size_t taps_sp, count_sp;
} phase;

/* Phases along axis a that hold outputs: one per stride residue, but no more than there
 * are outputs (a stride beyond the output, as huge strides cropped by huge pads give,
 * leaves the other residues empty). */
static int64_t axis_phases(const cf_geom3 *g, int a)
{
    return g->stride[a] < g->out[a] ? g->stride[a] : g->out[a];
}

/* Phase `index` (row-major over the axes' axis_phases): along each axis, the residue of
 * output `i`, phi = (i + pad) mod s, for i below axis_phases; each has outputs. */
static phase phase_of(const cf_geom3 *g, size_t index)
{
    phase ph;
    ph.taps_sp = ph.count_sp = 1;
    for (int a = 2; a >= 0; a--) {
        int64_t s = g->stride[a], n = axis_phases(g, a);
        int64_t i = (int64_t)(index % (size_t)n);
        index /= (size_t)n;
        int64_t phi = i + g->pad[a] - cf_floor_div(i + g->pad[a], s) * s;
        ph.phi[a] = phi;
        ph.taps[a] = g->k[a] > phi ? (g->k[a] - phi + s - 1) / s : 0;
        /* Outputs o = u*s + phi - pad with 0 <= o < out. */
        ph.u_lo[a] = -cf_floor_div(-(g->pad[a] - phi), s);
        int64_t u_hi = cf_floor_div(g->out[a] - 1 + g->pad[a] - phi, s);
        ph.count[a] = u_hi >= ph.u_lo[a] ? u_hi - ph.u_lo[a] + 1 : 0;
        ph.taps_sp *= (size_t)ph.taps[a];
        ph.count_sp *= (size_t)ph.count[a];
    }
    return ph;
}

/* At most out_sp. */
static size_t phase_count(const cf_geom3 *g)
{
    return (size_t)(axis_phases(g, 0) * axis_phases(g, 1) * axis_phases(g, 2));
}

static bool subpixel_applicable(const cf_problem *p)
{
    if (p->dtype != CONVFIND_DTYPE_F32 || p->op != CONVFIND_OP_CONV_TRANSPOSE)
        return false;
    for (int a = 0; a < p->nsp; a++)
        if (p->dil[a] != 1)
            return false;
    return true;
}

/* Floats of one group's packed weights (all phases) for `kern`. */
static size_t group_floats(const cf_problem *p, const cf_sgemm_kernel *kern, bool *overflow)
{
    cf_geom3 g = cf_geom3_of(p);
    size_t cg = (size_t)cf_cin_per_group(p), mg = (size_t)cf_cout_per_group(p), total = 0;
    for (size_t i = 0; i < phase_count(&g); i++) {
        phase ph = phase_of(&g, i);
        size_t f = cf_sgemm_packed_a_floats(kern, mg, cg * ph.taps_sp, overflow);
        if (f > SIZE_MAX - total)
            *overflow = true;
        else
            total += f;
    }
    return total;
}

/* Packs every phase of every group: dense flipped sub-kernel into `dense`, then packed A. */
static void pack_all(const cf_problem *p, const cf_sgemm_kernel *kern, const float *w,
                     float *dense, float *dst)
{
    cf_geom3 g = cf_geom3_of(p);
    size_t cg = (size_t)cf_cin_per_group(p), mg = (size_t)cf_cout_per_group(p);
    size_t ksp = (size_t)p->k_sp;
    for (int64_t grp = 0; grp < p->group; grp++) {
        for (size_t i = 0; i < phase_count(&g); i++) {
            phase ph = phase_of(&g, i);
            size_t kdim = cg * ph.taps_sp;
            if (kdim == 0)
                continue;
            for (size_t m = 0; m < mg; m++)
                for (size_t c = 0; c < cg; c++) {
                    const float *wc = w + (((size_t)grp * cg + c) * mg + m) * ksp;
                    size_t tap = 0;
                    for (int64_t j0 = 0; j0 < ph.taps[0]; j0++)
                    for (int64_t j1 = 0; j1 < ph.taps[1]; j1++)
                    for (int64_t j2 = 0; j2 < ph.taps[2]; j2++, tap++) {
                        int64_t t0 = ph.phi[0] + (ph.taps[0] - 1 - j0) * g.stride[0];
                        int64_t t1 = ph.phi[1] + (ph.taps[1] - 1 - j1) * g.stride[1];
                        int64_t t2 = ph.phi[2] + (ph.taps[2] - 1 - j2) * g.stride[2];
                        dense[m * kdim + c * ph.taps_sp + tap] =
                            wc[(t0 * g.k[1] + t1) * g.k[2] + t2];
                    }
                }
            cf_sgemm_pack_a(kern, mg, kdim, dense, (ptrdiff_t)kdim, 1, dst);
            dst += cf_sgemm_packed_a_floats(kern, mg, kdim, NULL);
        }
    }
}

typedef struct ws_layout {
    size_t weights, dense, panels, cols, bytes;
    size_t tiles;  /* each phase's output grid is done in this many runs of pixels */
    size_t run;    /* pixels of the longest run */
    size_t kmax;   /* rows of the tallest phase's patches: channels x taps */
    bool overflow;
} ws_layout;

/* Runs of pixels per phase: each run's patch panels (K = channels x taps rows) fill
 * about two L2s, like cpu.im2col_gemm's tiles, never below 96 pixels.  The phases go
 * through one run index at a time, so the runs of all phases read about the same part
 * of X while it is in cache, and the buffers hold one run, not a whole phase (U-Net's
 * 2x2 stride-2 layers: 10-20 MB of panels and as much of results per phase when a phase
 * was done whole).  Two L2s are still more than one core keeps: a run's panels and
 * results stay in cache only where chunks_of splits it (4 MB of each went to memory and
 * back between the steps on U-Net's last upconv before the chunks). */
static size_t tiles_of(size_t kmax, size_t umax)
{
    size_t tile = 2 * cf_cpu_caches()->l2 / (kmax ? kmax * sizeof(float) : 1);
    if (tile < 96)
        tile = 96;
    return umax ? (umax + tile - 1) / tile : 1;
}

static ws_layout layout_of(const cf_problem *p)
{
    ws_layout l = {0};
    cf_ws ws = {0};
    cf_geom3 g = cf_geom3_of(p);
    size_t cg = (size_t)cf_cin_per_group(p), mg = (size_t)cf_cout_per_group(p);
    size_t wf = 0, kmax = 0, umax = 0, pf = 0;
    for (size_t i = 0; i < phase_count(&g); i++) {
        phase ph = phase_of(&g, i);
        kmax = ph.taps_sp > kmax ? ph.taps_sp : kmax;
        umax = ph.count_sp > umax ? ph.count_sp : umax;
    }
    kmax = cf_ws_mul(&ws, kmax, cg);
    l.tiles = tiles_of(kmax, umax);
    umax = (umax + l.tiles - 1) / l.tiles; /* the longest run */
    l.run = umax;
    l.kmax = kmax;
    for (int level = 0; level < CF_ISA_COUNT; level++) {
        const cf_sgemm_kernel *kern = cf_kernel_table_for((cf_isa)level)->sgemm;
        size_t f = group_floats(p, kern, &l.overflow);
        wf = f > wf ? f : wf;
        f = cf_sgemm_packed_b_floats(kern, kmax, umax, &l.overflow);
        pf = f > pf ? f : pf;
    }
    l.weights = cf_ws_take(&ws, cf_ws_mul(&ws, wf, (size_t)p->group), sizeof(float));
    l.dense = cf_ws_take(&ws, cf_ws_mul(&ws, mg, kmax), sizeof(float));
    l.panels = cf_ws_take(&ws, pf, sizeof(float));
    /* Room for two phases' results where the innermost axis has two (pair_of). */
    const size_t row_phases = axis_phases(&g, 2) == 2 ? 2 : 1;
    l.cols = cf_ws_take(&ws, cf_ws_mul(&ws, cf_ws_mul(&ws, mg, umax), row_phases),
                        sizeof(float));
    l.bytes = ws.bytes;
    l.overflow = l.overflow || ws.overflow;
    return l;
}

static convfind_status subpixel_workspace(const cf_problem *p, size_t *bytes)
{
    if (bytes == NULL)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "bytes is NULL");
    ws_layout l = layout_of(p);
    if (l.overflow)
        return cf_fail(CONVFIND_ERR_OVERFLOW,
                       "sub-pixel workspace for C=%lld M=%lld kernel taps=%lld overflows size_t",
                       (long long)p->c, (long long)p->m, (long long)p->k_sp);
    *bytes = l.bytes;
    return CONVFIND_OK;
}

static convfind_status subpixel_pack_weights(const cf_problem *p, const void *state,
                                             const void *w, void **packed)
{
    (void)state;
    if (packed == NULL || w == NULL)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "%s is NULL", w ? "packed" : "w");
    *packed = NULL;
    const cf_sgemm_kernel *kern = cf_kernel_table_active()->sgemm;
    ws_layout l = layout_of(p);
    bool overflow = l.overflow;
    size_t gf = group_floats(p, kern, &overflow);
    cf_ws ws = {0};
    cf_ws_take(&ws, PACKED_HEADER, 1);
    cf_ws_take(&ws, cf_ws_mul(&ws, gf, (size_t)p->group), sizeof(float));
    if (overflow || ws.overflow)
        return cf_fail(CONVFIND_ERR_OVERFLOW, "sub-pixel packed weights overflow size_t");
    char *blob = aligned_alloc(64, ws.bytes);
    size_t dense_bytes = l.panels - l.dense; /* the dense part of the workspace layout */
    float *dense = malloc(dense_bytes ? dense_bytes : 1);
    if (blob == NULL || dense == NULL) {
        free(blob);
        free(dense);
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of packed weights",
                       ws.bytes);
    }
    *(packed_header *)blob = (packed_header){PACKED_MAGIC, kern->isa, ws.bytes};
    pack_all(p, kern, w, dense, (float *)(blob + PACKED_HEADER));
    free(dense);
    *packed = blob;
    return CONVFIND_OK;
}

static void subpixel_free_packed(void *packed)
{
    free(packed);
}

static size_t subpixel_packed_extent(const cf_problem *p, const void *packed, const void **start)
{
    (void)p;
    *start = packed;
    return ((const packed_header *)packed)->bytes;
}

/* Writes one output channel of a run of one phase's pixels: the run's GEMM result (or
 * zero when the phase has no taps) through the epilogue into Y. */
typedef struct out_job {
    const cf_problem *p;
    const cf_geom3 *g;
    const phase *ph;
    size_t lo, count;   /* the run: pixels [lo, lo + count) of the phase's grid */
    const float *cols;  /* mg x count, rows ld floats apart, or NULL for a phase without
                         * taps */
    size_t ld;
    const float *cols2; /* the next phase's, interleaved with these along the innermost
                         * axis (pair_of), or NULL */
    const float *b, *z;
    float *y;
    size_t m0;          /* the group's first channel */
    size_t y_image;     /* offset of the image in Y and Z */
    int64_t yc, ys[3];  /* Y strides: channel, geom3 spatial axes */
} out_job;

#if defined(__GNUC__)
#define OUT_INLINE static inline __attribute__((always_inline))
#else
#define OUT_INLINE static inline
#endif

/* One row of a phase's grid into Y: `len` outputs `step` apart, from the GEMM's results
 * c (NULL: zeros) and the residual z at the same positions (or NULL).  With c2, the row
 * of the phase paired with it along the innermost axis (pair_of) too, each of its
 * outputs `half` after c's: the two fill the row, so Y is written whole (in NCHW, where
 * step is 2 and half 1, contiguously; phase by phase each pass stored every other
 * output).  `act` is a constant at every call (out_row's switch), so the loop carries
 * no branch on it. */
OUT_INLINE void out_row_act(float *y, const float *z, const float *c, const float *c2,
                            size_t len, ptrdiff_t step, ptrdiff_t half, float bias,
                            convfind_activation act, float alpha, float beta)
{
    for (size_t r = 0; r < len; r++) {
        const ptrdiff_t at = (ptrdiff_t)r * step;
        float v = (c ? c[r] : 0.0f) + bias + (z ? z[at] : 0.0f);
        y[at] = cf_activate(v, act, alpha, beta);
        if (c2) {
            float v2 = c2[r] + bias + (z ? z[at + half] : 0.0f);
            y[at + half] = cf_activate(v2, act, alpha, beta);
        }
    }
}

static void out_row(const cf_problem *p, float *y, const float *z, const float *c,
                    const float *c2, size_t len, ptrdiff_t step, ptrdiff_t half, float bias)
{
    /* An NCHW pair with constant strides, so that the compiler vectorizes it. */
    const bool unit = c2 && step == 2 && half == 1;
    switch (p->act) {
    case CONVFIND_ACT_NONE:
        if (unit)
            out_row_act(y, z, c, c2, len, 2, 1, bias, CONVFIND_ACT_NONE, 0.0f, 0.0f);
        else
            out_row_act(y, z, c, c2, len, step, half, bias, CONVFIND_ACT_NONE, 0.0f, 0.0f);
        return;
    case CONVFIND_ACT_RELU:
        if (unit)
            out_row_act(y, z, c, c2, len, 2, 1, bias, CONVFIND_ACT_RELU, 0.0f, 0.0f);
        else
            out_row_act(y, z, c, c2, len, step, half, bias, CONVFIND_ACT_RELU, 0.0f, 0.0f);
        return;
    default:
        out_row_act(y, z, c, c2, len, step, half, bias, p->act, p->alpha, p->beta);
        return;
    }
}

static void out_task(void *arg, size_t m)
{
    const out_job *j = arg;
    const phase *ph = j->ph;
    float bias = j->b ? j->b[j->m0 + m] : 0.0f;
    const float *cm = j->cols ? j->cols + m * j->ld : NULL;
    const float *cm2 = j->cols2 ? j->cols2 + m * j->ld : NULL;
    size_t base = j->y_image + (j->m0 + m) * (size_t)j->yc;
    const int64_t *st = j->g->stride, *pad = j->g->pad;
    /* Between a grid row's outputs; only a row of two or more has one, and then it lies
     * inside Y (a lone output may sit at a stride near INT64_MAX). */
    const ptrdiff_t step = ph->count[2] > 1 ? (ptrdiff_t)(st[2] * j->ys[2]) : 0;
    /* Row by row of the phase's grid: each row's outputs are `step` apart in Y. */
    for (size_t pix = j->lo, end = j->lo + j->count, idx = 0; pix < end;) {
        size_t c2 = (size_t)ph->count[2], u2 = pix % c2, rest = pix / c2;
        size_t len = c2 - u2 < end - pix ? c2 - u2 : end - pix;
        int64_t u1 = (int64_t)rest % ph->count[1], u0 = (int64_t)rest / ph->count[1];
        int64_t o0 = (ph->u_lo[0] + u0) * st[0] + ph->phi[0] - pad[0];
        int64_t o1 = (ph->u_lo[1] + u1) * st[1] + ph->phi[1] - pad[1];
        int64_t o2 = (ph->u_lo[2] + (int64_t)u2) * st[2] + ph->phi[2] - pad[2];
        size_t y0 = base + (size_t)(o0 * j->ys[0] + o1 * j->ys[1] + o2 * j->ys[2]);
        out_row(j->p, j->y + y0, j->z ? j->z + y0 : NULL, cm ? cm + idx : NULL,
                cm2 ? cm2 + idx : NULL, len, step, (ptrdiff_t)j->ys[2], bias);
        idx += len;
        pix += len;
    }
}

/* Whether phase `i` and the next one go through one GEMM and one write-out: the two
 * phases of an innermost axis of stride 2 whose taps and grids are the same (a kernel
 * as long as the stride, as U-Net's 2x2 stride-2 layers, or any multiple of it with
 * pads that keep the grids aligned), the second's outputs one to the right of the
 * first's.  Their packed weights lie one after the other, so with channels a multiple of
 * the kernel's rows they are one packed A of twice the rows; the write-out then stores
 * each output row whole instead of every other output in two passes (U-Net's 128 -> 64
 * layer on 196x196 took 2.2x oneDNN's time phase by phase). */
static bool pair_of(const cf_geom3 *g, size_t i, const phase *ph, const cf_sgemm_kernel *kern,
                    size_t mg)
{
    if (axis_phases(g, 2) != 2 || i % 2 != 0 || mg % (size_t)kern->mr != 0 ||
        ph->taps_sp == 0)
        return false;
    const phase next = phase_of(g, i + 1);
    bool same = next.u_lo[2] == ph->u_lo[2] && next.phi[2] == ph->phi[2] + 1;
    for (int ax = 0; ax < 3; ax++)
        same = same && next.count[ax] == ph->count[ax] && next.taps[ax] == ph->taps[ax];
    return same;
}

/* One run of pixels (tile t) of one image and group: what its chunks share. */
typedef struct tile_job {
    const cf_geom3 *g;
    const cf_sgemm_kernel *kern;
    const float *wg;     /* the group's packed weights, every phase's */
    cf_patch_job pj;     /* X of the image and group, and the tile's panels (dst) */
    out_job oj;          /* Y of the image and group */
    float *cols;         /* the GEMM's results for the tile's pixels, one phase (pair):
                          * row r at cols + r * run */
    size_t mg, t, tiles;
    size_t run, kmax;    /* pixels of the longest run, rows of the tallest patches */
    size_t panels;       /* panels of the longest run */
    size_t chunks;       /* 0: each step over the whole tile on the pool (chunks_of) */
} tile_job;

/* Panels [q0, q1) of every phase of the tile (those that exist: a phase's run may be
 * shorter) through patches, GEMM and write-out, on `pool` (NULL: on this thread alone).
 * Each step touches only these panels' pixels, outputs, columns of `cols` and part of the
 * panels, at places that do not depend on the phase (panel q at q x kmax x NR floats,
 * result column j at j), so chunks of panels run concurrently whatever phases they are
 * at. */
static void run_phases(const tile_job *tj, size_t q0, size_t q1, cf_threadpool *pool)
{
    const cf_geom3 *g = tj->g;
    const cf_sgemm_kernel *kern = tj->kern;
    const size_t nr = (size_t)kern->nr, mg = tj->mg;
    cf_patch_job pj = tj->pj;
    const float *wph = tj->wg;
    /* What the panels hold: phases with the same taps and grid (all of them when the
     * kernel is as long as the stride, as in U-Net's 2x2 stride 2) read the same
     * patches, built once. */
    cf_patch_job built;
    bool have = false;
    for (size_t i = 0; i < phase_count(g); i++) {
        phase ph = phase_of(g, i);
        const bool paired = pair_of(g, i, &ph, kern, mg);
        const size_t kdim = pj.cg * ph.taps_sp;
        const size_t lo = tj->t * ph.count_sp / tj->tiles;
        const size_t len = (tj->t + 1) * ph.count_sp / tj->tiles - lo;
        const size_t first = q0 * nr < len ? q0 * nr : len, end = q1 * nr < len ? q1 * nr : len;
        if (kdim > 0 && end > first) {
            /* The phase as a stride-1 convolution over its output grid. */
            for (int ax = 0; ax < 3; ax++) {
                pj.g.in[ax] = g->in[ax];
                pj.g.out[ax] = ph.count[ax];
                pj.g.k[ax] = ph.taps[ax];
                pj.g.stride[ax] = pj.g.dil[ax] = 1;
                pj.g.pad[ax] = ph.taps[ax] - 1 - ph.u_lo[ax];
            }
            pj.ksp = ph.taps_sp;
            pj.pix0 = lo + first;
            pj.npix = end - first;
            pj.dst = tj->pj.dst + q0 * tj->kmax * nr;
            if (!have || pj.pix0 != built.pix0 || pj.npix != built.npix ||
                memcmp(&pj.g, &built.g, sizeof pj.g) != 0) {
                cf_parallel_for(pool, (pj.npix + nr - 1) / nr, cf_patch_panel, &pj);
                built = pj;
                have = true;
            }
            cf_sgemm_packed(kern, paired ? 2 * mg : mg, end - first, kdim, wph, pj.dst,
                            tj->cols + first, (ptrdiff_t)tj->run, 1, NULL, pool);
        }
        if (kdim > 0)
            wph += cf_sgemm_packed_a_floats(kern, mg, kdim, NULL) * (paired ? 2 : 1);
        if (end > first) {
            out_job oj = tj->oj;
            oj.ph = &ph;
            oj.lo = lo + first;
            oj.count = end - first;
            oj.ld = tj->run;
            oj.cols = kdim > 0 ? tj->cols + first : NULL;
            oj.cols2 = paired ? tj->cols + mg * tj->run + first : NULL;
            cf_parallel_for(pool, mg, out_task, &oj);
        }
        i += paired;
    }
}

static void chunk_task(void *arg, size_t index)
{
    const tile_job *tj = arg;
    run_phases(tj, index * tj->panels / tj->chunks, (index + 1) * tj->panels / tj->chunks,
               NULL);
}

/* A tile split into chunks of panels, each on one thread (one wake-up of the pool per
 * tile), or step by step over the whole pool. */
static void run_tile(const tile_job *tj, cf_threadpool *pool)
{
    if (tj->chunks)
        cf_parallel_for(pool, tj->chunks, chunk_task, (void *)tj);
    else
        run_phases(tj, 0, tj->panels, pool);
}

/* Chunks of panels per tile, each taking its panels through patches, GEMM and write-out
 * on one thread, so that their patches and results stay in that core's L2 (a quarter of
 * it) between the steps instead of going to memory and back: at least 4 per thread,
 * for balance.  Each chunk reads all of the group's packed weights (`w_bytes`), so only
 * where they stay within a quarter of L2 too, and are fewer rows than the run's pixels;
 * otherwise 0: each step is split over the pool as a whole.  2 threads, Xeon, forced,
 * 6 rounds in turns with the steps over the pool: U-Net's 2x2 stride-2 layers 128 -> 64
 * on 196x196 0.73-0.87x the time, 256 -> 128 on 100x100 (512 KB of weights) 0.89-1.01x,
 * and 512 -> 256 on 52x52 (2 MB) 0.98-1.22x, which is left out. */
static size_t chunks_of(const ws_layout *l, const cf_sgemm_kernel *kern, size_t mg,
                        size_t w_bytes, int threads)
{
    const size_t nr = (size_t)kern->nr, panels = (l->run + nr - 1) / nr;
    const size_t rows = 2 * mg; /* at most: a pair of phases */
    if (rows > l->run || w_bytes > cf_cpu_caches()->l2 / 4)
        return 0;
    size_t per_chunk = cf_cpu_caches()->l2 / 4 / ((l->kmax + rows) * nr * sizeof(float));
    per_chunk = per_chunk < 1 ? 1 : per_chunk;
    size_t chunks = (panels + per_chunk - 1) / per_chunk;
    const size_t least = 4 * (size_t)threads;
    chunks = chunks < least ? least : chunks;
    return chunks < panels ? chunks : panels;
}

static convfind_status subpixel_execute(const cf_problem *p, const void *state,
                                        const cf_exec_args *a)
{
    (void)state;
    if (a == NULL || a->x == NULL || a->w == NULL || a->y == NULL)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "%s is NULL",
                       a == NULL ? "args" : (a->x == NULL ? "x" : (a->w == NULL ? "w" : "y")));
    if ((p->has_bias && a->b == NULL) || (p->has_residual && a->z == NULL))
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "%s is NULL but the problem has one",
                       a->b == NULL && p->has_bias ? "bias" : "residual");
    ws_layout l = layout_of(p);
    if (l.overflow)
        return cf_fail(CONVFIND_ERR_OVERFLOW, "sub-pixel workspace overflows size_t");
    if ((l.bytes > 0 && a->workspace == NULL) || a->workspace_size < l.bytes)
        return cf_fail(CONVFIND_ERR_INVALID_SHAPE,
                       "sub-pixel ConvTranspose needs %zu workspace bytes, got %zu", l.bytes,
                       a->workspace ? a->workspace_size : 0);
    const cf_sgemm_kernel *kern = cf_kernel_table_active()->sgemm;
    char *ws = a->workspace;
    const packed_header *h = a->packed_w;
    const float *wpk;
    if (h != NULL && h->magic == PACKED_MAGIC && h->isa == kern->isa) {
        wpk = (const float *)((const char *)h + PACKED_HEADER);
    } else {
        pack_all(p, kern, a->w, (float *)(ws + l.dense), (float *)(ws + l.weights));
        wpk = (const float *)(ws + l.weights);
    }
    float *panels = (float *)(ws + l.panels), *cols = (float *)(ws + l.cols);

    const cf_geom3 g = cf_geom3_of(p);
    const bool nhwc = p->layout == CONVFIND_LAYOUT_NHWC;
    const size_t cg = (size_t)cf_cin_per_group(p), mg = (size_t)cf_cout_per_group(p);
    const size_t C = (size_t)p->c, M = (size_t)p->m;
    const size_t in_sp = (size_t)p->in_sp, out_sp = (size_t)p->out_sp;
    const size_t nr = (size_t)kern->nr;
    bool unused = false;
    const size_t gf = group_floats(p, kern, &unused);

    tile_job tj = {.g = &g, .kern = kern, .mg = mg, .tiles = l.tiles, .cols = cols};
    tj.pj = (cf_patch_job){.cg = cg, .width = nr, .channels_last = nhwc, .dst = panels};
    tj.pj.xc = nhwc ? 1 : (int64_t)in_sp;
    int64_t px = nhwc ? (int64_t)C : 1;
    tj.pj.xs[2] = px;
    tj.pj.xs[1] = px * g.in[2];
    tj.pj.xs[0] = px * g.in[2] * g.in[1];
    tj.oj = (out_job){.p = p, .g = &g, .b = a->b, .z = a->z, .y = a->y};
    int64_t py = nhwc ? (int64_t)M : 1;
    tj.oj.yc = nhwc ? 1 : (int64_t)out_sp;
    tj.oj.ys[2] = py;
    tj.oj.ys[1] = py * g.out[2];
    tj.oj.ys[0] = py * g.out[2] * g.out[1];
    tj.run = l.run;
    tj.kmax = l.kmax;
    tj.panels = (l.run + nr - 1) / nr;
    tj.chunks = chunks_of(&l, kern, mg, gf * sizeof(float), cf_threadpool_size(a->pool));

    const float *x = a->x;
    for (int64_t n = 0; n < p->n; n++) {
        for (int64_t grp = 0; grp < p->group; grp++) {
            tj.wg = wpk + (size_t)grp * gf;
            tj.pj.xg = x + (size_t)n * C * in_sp + (size_t)grp * cg * (size_t)tj.pj.xc;
            tj.oj.m0 = (size_t)grp * mg;
            tj.oj.y_image = (size_t)n * M * out_sp;
            for (tj.t = 0; tj.t < l.tiles; tj.t++)
                run_tile(&tj, a->pool);
        }
    }
    return CONVFIND_OK;
}

const cf_algo cf_algo_cpu_convtranspose_subpixel = {
    .name = "cpu.convtranspose_subpixel",
    .family = "gemm",
    .applicable = subpixel_applicable,
    .workspace = subpixel_workspace,
    .pack_weights = subpixel_pack_weights,
    .free_packed = subpixel_free_packed,
    .packed_extent = subpixel_packed_extent,
    .execute = subpixel_execute,
};
