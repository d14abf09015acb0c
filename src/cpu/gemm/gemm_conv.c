/*
 * gemm_conv.c - Conv and ConvTranspose on the packed SGEMM (see gemm_conv.h for the
 * formulation).  Two parts: the packed weights, shared by the GEMM algorithms, and the
 * Conv and ConvTranspose execute paths; the patch panels come from gemm/patches.c.
 * workspace() and execute() carve the workspace with the same cf_ws sequence (layout_of),
 * so the size and the layout cannot drift apart.
 */
#include "cpu/gemm/gemm_conv.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/epilogue.h"
#include "cpu/gemm/patches.h"
#include "cpu/gemm/sgemm.h"
#include "cpu/geom3.h"
#include "cpu/kernel_table.h"
#include "cpu/workspace.h"
#include "util/error.h"

/* ---- packed weights ---------------------------------------------------------------- */

#define PACKED_MAGIC 0x434d4547u /* "GEMC" */
#define PACKED_HEADER 64         /* header bytes; the data after it stays 64-aligned */

typedef struct packed_header {
    uint32_t magic;
    cf_isa isa;          /* the kernel (MR, NR) the data was packed for */
    size_t group_floats; /* floats of one group's packed operand */
} packed_header;

/* The kernel of a GEMM whose rows are a Conv's output pixels: `kern`, or, when 8 does
 * not divide the pixels, its 14-row variant where 14 does (14x14 maps) or its 7-row one
 * where 7 does (7x7 maps). */
static const cf_sgemm_kernel *pixel_rows_kernel(const cf_problem *p, const cf_sgemm_kernel *kern)
{
    size_t pix = (size_t)p->out_sp;
    if (pix % 8 == 0)
        return kern;
    if (kern->mr14 != NULL && pix % 14 == 0)
        return kern->mr14;
    return kern->mr7 != NULL && pix % 7 == 0 ? kern->mr7 : kern;
}

/* Whether a Conv's GEMM has output pixels as rows and channels as columns (weights =
 * packed B): NHWC, where that is the memory order; and NCHW when that wastes clearly
 * fewer FMAs and the kernel stores column-major tiles itself (trans_c).  Rows round up to
 * MR and columns to half a panel (a vector), so a 7x7 map computes 49 pixel rows (7-row
 * kernel) instead of 64 pixel columns.  The 5% margin pays for the transposed store.
 * `kern` is the level's kernel (cf_kernel_table's sgemm), never its 7-row variant. */
static bool pixels_as_rows(const cf_problem *p, const cf_sgemm_kernel *kern)
{
    if (p->op != CONVFIND_OP_CONV)
        return false;
    if (p->layout == CONVFIND_LAYOUT_NHWC)
        return true;
    if (!kern->trans_c)
        return false;
    size_t mr = (size_t)kern->mr, vec = (size_t)kern->nr / 2;
    size_t pr = (size_t)pixel_rows_kernel(p, kern)->mr;
    size_t pix = (size_t)p->out_sp, ch = (size_t)cf_cout_per_group(p);
    size_t as_cols = (ch + mr - 1) / mr * mr * ((pix + vec - 1) / vec * vec);
    size_t as_rows = (pix + pr - 1) / pr * pr * ((ch + vec - 1) / vec * vec);
    return as_rows * 20 < as_cols * 19;
}

/* The weights of one group as a GEMM operand (see gemm_conv.h). */
typedef struct w_operand {
    bool as_a;           /* packed as A (rows x cols = m x k) or as B (k x n) */
    size_t rows, cols;
    size_t group_stride; /* elements of W from one group to the next */
    ptrdiff_t rs, cs;
} w_operand;

static w_operand weight_operand(const cf_problem *p, const cf_sgemm_kernel *kern)
{
    size_t cg = (size_t)cf_cin_per_group(p), mg = (size_t)cf_cout_per_group(p);
    size_t ksp = (size_t)p->k_sp, kdim = cg * ksp;
    w_operand o;
    if (p->op == CONVFIND_OP_CONV_TRANSPOSE) {
        /* W: C x M/g x taps.  A[(m, tap), c] = W[c][m][tap]. */
        o = (w_operand){true, mg * ksp, cg, cg * mg * ksp, 1, (ptrdiff_t)(mg * ksp)};
    } else if (!pixels_as_rows(p, kern)) {
        o = (w_operand){true, mg, kdim, mg * kdim, (ptrdiff_t)kdim, 1};
    } else {
        o = (w_operand){false, kdim, mg, mg * kdim, 1, (ptrdiff_t)kdim};
    }
    return o;
}

static size_t operand_floats(const cf_sgemm_kernel *kern, const w_operand *o, bool *overflow)
{
    return o->as_a ? cf_sgemm_packed_a_floats(kern, o->rows, o->cols, overflow)
                   : cf_sgemm_packed_b_floats(kern, o->rows, o->cols, overflow);
}

/* The largest packed size over every kernel this machine can run, so a workspace sized
 * once fits whatever level a later execution is forced to.  With `p`, the operand is the
 * weights as each kernel takes them, counted only where they are packed B (the weights a
 * Conv execution must pack itself, weights_for); else `o` itself. */
static size_t operand_floats_max(const cf_problem *p, const w_operand *o, bool *overflow)
{
    size_t most = 0;
    for (int level = 0; level < CF_ISA_COUNT; level++) {
        const cf_sgemm_kernel *kern = cf_kernel_table_for((cf_isa)level)->sgemm;
        w_operand wo = p ? weight_operand(p, kern) : *o;
        size_t f = wo.as_a ? 0 : operand_floats(kern, &wo, overflow);
        most = f > most ? f : most;
    }
    return most;
}

static void pack_groups(const cf_sgemm_kernel *kern, const cf_problem *p, const float *w,
                        float *dst, size_t group_floats, cf_threadpool *pool)
{
    w_operand o = weight_operand(p, kern);
    for (int64_t g = 0; g < p->group; g++) {
        const float *wg = w + (size_t)g * o.group_stride;
        float *d = dst + (size_t)g * group_floats;
        if (o.as_a)
            cf_sgemm_pack_a(kern, o.rows, o.cols, wg, o.rs, o.cs, d);
        else
            cf_sgemm_pack_b(kern, o.rows, o.cols, wg, o.rs, o.cs, d, pool);
    }
}

static convfind_status pack_weights(const cf_problem *p, const void *w, void **packed)
{
    if (packed == NULL || w == NULL)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "%s is NULL", w ? "packed" : "w");
    *packed = NULL;
    const cf_sgemm_kernel *kern = cf_kernel_table_active()->sgemm;
    w_operand o = weight_operand(p, kern);
    bool overflow = false;
    size_t gf = operand_floats(kern, &o, &overflow);
    cf_ws ws = {0};
    cf_ws_take(&ws, PACKED_HEADER, 1);
    cf_ws_take(&ws, cf_ws_mul(&ws, gf, (size_t)p->group), sizeof(float));
    if (overflow || ws.overflow)
        return cf_fail(CONVFIND_ERR_OVERFLOW, "packed weights of %zu x %zu x %lld groups overflow",
                       o.rows, o.cols, (long long)p->group);
    char *blob = aligned_alloc(64, ws.bytes);
    if (blob == NULL)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of packed weights",
                       ws.bytes);
    packed_header *h = (packed_header *)blob;
    *h = (packed_header){PACKED_MAGIC, kern->isa, gf};
    pack_groups(kern, p, w, (float *)(blob + PACKED_HEADER), gf, NULL);
    *packed = blob;
    return CONVFIND_OK;
}

void cf_gemm_free_packed(void *packed)
{
    free(packed);
}

/* The weights of one execution as a GEMM operand of group 0, and the distance from one
 * group's operand to the next. */
typedef struct weights_src {
    cf_sgemm_operand op;
    size_t group_stride;
} weights_src;

/* The caller's packed weights when they were made for `kern`; else W itself, read in
 * place, when the weights are the GEMM's A (any strides will do); else (NHWC, where they
 * are B and B must have unit column stride) W packed now into `scratch`. */
static weights_src weights_for(const cf_sgemm_kernel *kern, const cf_problem *p,
                               const cf_exec_args *a, float *scratch)
{
    const packed_header *h = a->packed_w;
    if (h != NULL && h->magic == PACKED_MAGIC && h->isa == kern->isa)
        return (weights_src){{(const float *)((const char *)h + PACKED_HEADER), true, 0, 0},
                             h->group_floats};
    w_operand o = weight_operand(p, kern);
    if (o.as_a)
        return (weights_src){{a->w, false, (size_t)o.rs, (size_t)o.cs}, o.group_stride};
    size_t gf = operand_floats(kern, &o, NULL);
    pack_groups(kern, p, a->w, scratch, gf, a->pool);
    return (weights_src){{scratch, true, 0, 0}, gf};
}

/* The operand of group g. */
static cf_sgemm_operand weights_of_group(const weights_src *w, int64_t g)
{
    cf_sgemm_operand op = w->op;
    op.p += (size_t)g * w->group_stride;
    return op;
}

/* ---- workspace layout --------------------------------------------------------------- */

typedef struct ws_layout {
    size_t weights; /* byte offsets */
    size_t panels;  /* Conv: one tile of patch panels; ConvTranspose: packed X */
    size_t cols;    /* ConvTranspose: the cols matrix */
    size_t xsplit;  /* Conv with split_x: one image and group of X in phase-split form */
    size_t bytes;
    size_t tile;    /* Conv: output pixels per tile, before rounding to the panel width */
    bool in_place;  /* Conv: the GEMM reads X itself as B or A (no patch panels) */
    bool split;     /* Conv: patches read X's phase-split form (split_x) */
    bool overflow;
} ws_layout;

/* A Conv whose patch matrix is X itself: 1x1, stride 1, no padding.  In NCHW that is
 * B (channels x pixels, rows in_sp apart), in NHWC A (pixels x channels, rows C apart). */
static bool patches_are_x(const cf_problem *p)
{
    if (p->op != CONVFIND_OP_CONV || p->k_sp != 1)
        return false;
    for (int a = 0; a < p->nsp; a++)
        if (p->stride[a] != 1 || p->pad_begin[a] != 0 || p->pad_end[a] != 0)
            return false;
    return true;
}

/* Whether a Conv's patches read a phase-split copy of X (patches.h): NCHW with a stride
 * along the rows and several taps along them, where each X element would otherwise be
 * gathered once per tap (conv1 of ResNet-50: 7 taps at stride 2).  With one tap (a
 * strided 1x1) the split would copy all of X to use a part of it once; with a stride
 * longer than the row, each phase would hold one pixel at most (and a row of phases
 * could outgrow memory). */
static bool split_x(const cf_problem *p)
{
    cf_geom3 g = cf_geom3_of(p);
    return p->op == CONVFIND_OP_CONV && p->layout == CONVFIND_LAYOUT_NCHW && g.stride[2] > 1 &&
           g.stride[2] <= g.in[2] && g.k[2] > 1;
}

/* Floats of one channel of X in phase-split form. */
static size_t split_channel_floats(const cf_geom3 *g)
{
    size_t s = (size_t)g->stride[2], plen = ((size_t)g->in[2] + s - 1) / s;
    return (size_t)g->in[0] * (size_t)g->in[1] * s * plen;
}

/* Pixels per patch tile: the tile's panels fill about two L2s, never below one panel
 * row of 96 (a multiple of every kernel's MR and NR); tiles are balanced in size. */
static size_t conv_tile(const cf_problem *p)
{
    size_t kdim = (size_t)(cf_cin_per_group(p) * p->k_sp);
    size_t budget = 2 * cf_cpu_caches()->l2;
    size_t tile_max = budget / (kdim * sizeof(float));
    if (tile_max < 96)
        tile_max = 96;
    size_t out_sp = (size_t)p->out_sp;
    size_t tiles = (out_sp + tile_max - 1) / tile_max;
    return (out_sp + tiles - 1) / tiles;
}

/* `allow_in_place`: the algorithm reads X in place when patches_are_x (cpu.gemm_1x1). */
static ws_layout layout_of(const cf_problem *p, bool allow_in_place)
{
    ws_layout l = {0};
    l.in_place = allow_in_place && patches_are_x(p);
    cf_ws ws = {0};
    /* Room to pack the weights only where they cannot be read in place (weights_for). */
    size_t wf = operand_floats_max(p, NULL, &l.overflow);
    l.weights = cf_ws_take(&ws, cf_ws_mul(&ws, wf, (size_t)p->group), sizeof(float));
    size_t cg = (size_t)cf_cin_per_group(p);
    if (l.in_place) {
        l.tile = (size_t)p->out_sp;
    } else if (p->op == CONVFIND_OP_CONV) {
        l.tile = conv_tile(p);
        /* + 32: rounding the tile up to any kernel's panel width (<= 32). */
        l.panels = cf_ws_take(&ws, cf_ws_mul(&ws, cg * (size_t)p->k_sp, l.tile + 32),
                              sizeof(float));
        l.split = split_x(p);
        if (l.split) {
            cf_geom3 g = cf_geom3_of(p);
            l.xsplit = cf_ws_take(&ws, cf_ws_mul(&ws, cg, split_channel_floats(&g)),
                                  sizeof(float));
        }
    } else {
        w_operand xo = {false, cg, (size_t)p->in_sp, 0, 0, 0};
        size_t xf = operand_floats_max(NULL, &xo, &l.overflow);
        l.panels = cf_ws_take(&ws, xf, sizeof(float));
        size_t rows = cf_ws_mul(&ws, (size_t)cf_cout_per_group(p), (size_t)p->k_sp);
        l.cols = cf_ws_take(&ws, cf_ws_mul(&ws, rows, (size_t)p->in_sp), sizeof(float));
    }
    l.bytes = ws.bytes;
    l.overflow = l.overflow || ws.overflow;
    return l;
}

static convfind_status workspace_of(const cf_problem *p, bool allow_in_place, size_t *bytes)
{
    if (bytes == NULL)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "bytes is NULL");
    ws_layout l = layout_of(p, allow_in_place);
    if (l.overflow)
        return cf_fail(CONVFIND_ERR_OVERFLOW,
                       "GEMM workspace for C=%lld M=%lld kernel taps=%lld overflows size_t",
                       (long long)p->c, (long long)p->m, (long long)p->k_sp);
    *bytes = l.bytes;
    return CONVFIND_OK;
}

static convfind_status check_args(const cf_problem *p, const cf_exec_args *a,
                                  bool allow_in_place, ws_layout *l)
{
    if (a == NULL || a->x == NULL || a->w == NULL || a->y == NULL)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "%s is NULL",
                       a == NULL ? "args" : (a->x == NULL ? "x" : (a->w == NULL ? "w" : "y")));
    if ((p->has_bias && a->b == NULL) || (p->has_residual && a->z == NULL))
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "%s is NULL but the problem has one",
                       a->b == NULL && p->has_bias ? "bias" : "residual");
    *l = layout_of(p, allow_in_place);
    if (l->overflow)
        return cf_fail(CONVFIND_ERR_OVERFLOW, "GEMM workspace overflows size_t");
    if ((l->bytes > 0 && a->workspace == NULL) || a->workspace_size < l->bytes)
        return cf_fail(CONVFIND_ERR_INVALID_SHAPE,
                       "GEMM convolution needs %zu workspace bytes, got %zu", l->bytes,
                       a->workspace ? a->workspace_size : 0);
    return CONVFIND_OK;
}

/* ---- Conv ------------------------------------------------------------------------ */

/* One tile of one image and group, split into chunks of whole patch panels. */
typedef struct conv_chunk_job {
    cf_patch_job *patch;
    const cf_sgemm_kernel *kern;
    bool pixel_rows;          /* see pixels_as_rows() */
    size_t mg, kdim;
    cf_sgemm_operand wg;      /* this group's weights */
    float *y;                 /* Y (and, at the same offset, Z) at the tile's first pixel */
    ptrdiff_t rs, cs;         /* Y strides of the GEMM's C */
    ptrdiff_t ps;             /* Y stride from one pixel to the next */
    cf_sgemm_epilogue ep;
    size_t panels, chunks;
    const float *x_rows;      /* in place: X at the tile's first pixel, else NULL */
    size_t xps, xcs;          /* in place: X's pixel and channel strides */
} conv_chunk_job;

/* The GEMM of the tile's pixels [first, first + count): weights times patch panels (or X
 * in place), C's rows or columns being those pixels. */
static void conv_gemm(const conv_chunk_job *j, size_t first, size_t count,
                      const float *panels, cf_threadpool *pool)
{
    ptrdiff_t shift = (ptrdiff_t)first * j->ps;
    cf_sgemm_epilogue ep = j->ep;
    if (ep.z != NULL)
        ep.z += shift;
    cf_sgemm_operand x = {panels, true, 0, 0};
    if (j->x_rows != NULL)
        x = j->pixel_rows ? (cf_sgemm_operand){j->x_rows + first * j->xps, false, j->xps, j->xcs}
                          : (cf_sgemm_operand){j->x_rows + first * j->xps, false, j->xcs, j->xps};
    if (j->pixel_rows)
        cf_sgemm_compute(j->kern, count, j->mg, j->kdim, x, j->wg, j->y + shift, j->rs, j->cs,
                         &ep, pool);
    else
        cf_sgemm_compute(j->kern, j->mg, count, j->kdim, j->wg, x, j->y + shift, j->rs, j->cs,
                         &ep, pool);
}

static void conv_chunk_task(void *arg, size_t index)
{
    const conv_chunk_job *j = arg;
    const cf_patch_job *pj = j->patch;
    size_t q0 = j->panels * index / j->chunks, q1 = j->panels * (index + 1) / j->chunks;
    if (j->x_rows == NULL)
        for (size_t q = q0; q < q1; q++)
            cf_patch_panel(j->patch, q);
    size_t first = q0 * pj->width, end = q1 * pj->width < pj->npix ? q1 * pj->width : pj->npix;
    const float *panels = pj->dst + q0 * j->kdim * pj->width;
    conv_gemm(j, first, end - first, panels, NULL);
}

/* Splits the channels of one image and group of X into phase-split form. */
typedef struct split_job {
    const float *x;   /* channel 0; channel c at x + c * in_sp */
    float *dst;       /* channel c at dst + c * chan_floats */
    size_t in_sp, rows, in2, stride, chan_floats;
} split_job;

static void split_task(void *arg, size_t c)
{
    const split_job *s = arg;
    cf_patch_split_x(s->x + c * s->in_sp, s->rows, s->in2, s->stride,
                     s->dst + c * s->chan_floats);
}

bool cf_gemm_conv_applicable(const cf_problem *p)
{
    return p->dtype == CONVFIND_DTYPE_F32 && p->op == CONVFIND_OP_CONV;
}

convfind_status cf_gemm_conv_workspace(const cf_problem *p, size_t *bytes)
{
    return workspace_of(p, false, bytes);
}

convfind_status cf_gemm_1x1_workspace(const cf_problem *p, size_t *bytes)
{
    return workspace_of(p, true, bytes);
}

convfind_status cf_gemm_conv_pack_weights(const cf_problem *p, const void *state,
                                          const void *w, void **packed)
{
    (void)state;
    return pack_weights(p, w, packed);
}

static convfind_status conv_execute(const cf_problem *p, const cf_exec_args *a,
                                    bool allow_in_place)
{
    ws_layout l;
    convfind_status st = check_args(p, a, allow_in_place, &l);
    if (st != CONVFIND_OK)
        return st;
    const cf_sgemm_kernel *kern = cf_kernel_table_active()->sgemm;
    char *ws = a->workspace;
    /* The workspace is NULL when a 1x1 reads both operands in place. */
    const weights_src wsrc = weights_for(kern, p, a, ws ? (float *)(ws + l.weights) : NULL);
    float *panels = ws ? (float *)(ws + l.panels) : NULL;

    const bool nhwc = p->layout == CONVFIND_LAYOUT_NHWC, pixel_rows = pixels_as_rows(p, kern);
    /* The GEMM's kernel: the same packed weights (B), perhaps fewer rows. */
    const cf_sgemm_kernel *gk = pixel_rows ? pixel_rows_kernel(p, kern) : kern;
    const size_t cg = (size_t)cf_cin_per_group(p), mg = (size_t)cf_cout_per_group(p);
    const size_t kdim = cg * (size_t)p->k_sp, out_sp = (size_t)p->out_sp;
    const size_t in_sp = (size_t)p->in_sp, M = (size_t)p->m, C = (size_t)p->c;
    const size_t width = pixel_rows ? (size_t)gk->mr : (size_t)gk->nr;
    const size_t tile = (l.tile + width - 1) / width * width;

    cf_patch_job job = {.g = cf_geom3_of(p), .cg = cg, .ksp = (size_t)p->k_sp, .width = width,
                     .channels_last = nhwc, .dst = panels};
    job.xc = nhwc ? 1 : (int64_t)in_sp;
    int64_t px = nhwc ? (int64_t)C : 1;
    job.xs[2] = px;
    job.xs[1] = px * job.g.in[2];
    job.xs[0] = px * job.g.in[2] * job.g.in[1];
    split_job sj = {.in_sp = in_sp, .rows = (size_t)(job.g.in[0] * job.g.in[1]),
                    .in2 = (size_t)job.g.in[2], .stride = (size_t)job.g.stride[2],
                    .chan_floats = split_channel_floats(&job.g)};
    if (l.split) {
        sj.dst = (float *)(ws + l.xsplit);
        job.phase_len = (int64_t)((sj.in2 + sj.stride - 1) / sj.stride);
        job.xc = (int64_t)sj.chan_floats;
        job.xs[1] = job.phase_len * job.g.stride[2];
        job.xs[0] = job.xs[1] * job.g.in[1];
    }

    /* Y strides from pixel to pixel and channel to channel; C's rows are pixels or
     * channels (pixels_as_rows). */
    const ptrdiff_t ps = nhwc ? (ptrdiff_t)M : 1, chs = nhwc ? 1 : (ptrdiff_t)out_sp;
    conv_chunk_job cj = {.patch = &job, .kern = gk, .pixel_rows = pixel_rows, .mg = mg,
                         .kdim = kdim, .rs = pixel_rows ? ps : chs, .cs = pixel_rows ? chs : ps,
                         .ps = ps, .xps = nhwc ? C : 1, .xcs = nhwc ? 1 : in_sp};
    const size_t threads = (size_t)cf_threadpool_size(a->pool);
    const float *x = a->x, *b = a->b, *z = a->z;
    float *y = a->y;
    for (int64_t n = 0; n < p->n; n++) {
        for (int64_t g = 0; g < p->group; g++) {
            job.xg = x + (size_t)n * C * in_sp + (size_t)g * cg * (size_t)job.xc;
            if (l.split) {
                sj.x = x + (size_t)n * C * in_sp + (size_t)g * cg * in_sp;
                cf_parallel_for(a->pool, cg, split_task, &sj);
                job.xg = sj.dst;
            }
            cj.wg = weights_of_group(&wsrc, g);
            for (size_t t0 = 0; t0 < out_sp; t0 += tile) {
                size_t np = out_sp - t0 < tile ? out_sp - t0 : tile;
                job.pix0 = t0;
                job.npix = np;
                /* Offset of (image n, first channel of group g, pixel t0) in Y and Z. */
                size_t yo = (size_t)n * out_sp * M + (size_t)g * mg * (size_t)chs +
                            t0 * (size_t)ps;
                cj.y = y + yo;
                cj.ep = (cf_sgemm_epilogue){.bias = b ? b + (size_t)g * mg : NULL,
                                            .bias_per_col = pixel_rows, .z = z ? z + yo : NULL,
                                            .rs_z = cj.rs, .cs_z = cj.cs, .act = p->act,
                                            .alpha = p->alpha, .beta = p->beta};
                cj.panels = (np + width - 1) / width;
                cj.x_rows = l.in_place ? job.xg + t0 * (nhwc ? C : 1) : NULL;
                /* 4 chunks per thread balance the threads.  Each chunk's product reads
                 * all the weights, so chunks only where they are the smaller operand
                 * (fewer output channels than tile pixels). */
                const size_t chunks_min = threads == 1 ? 1 : 4 * threads;
                if (!l.in_place && cj.panels >= chunks_min && mg <= np) {
                    /* One parallel pass: each chunk packs its own panels and multiplies
                     * them, so there is a single wake-up of the pool per tile.  When the
                     * weights are small (each chunk's product reads all of them again),
                     * packed chunks are also kept to a quarter of L2, so the product
                     * reads panels its packing has just left there: a whole tile is
                     * about two L2s, and conv1 (64 x 147 weights) took 10% longer on one
                     * thread that way. */
                    size_t chunks = chunks_min;
                    if (mg * kdim * sizeof(float) <= cf_cpu_caches()->l2 / 4) {
                        size_t per_chunk = cf_cpu_caches()->l2 / 4 /
                                           (kdim * width * sizeof(float));
                        per_chunk = per_chunk < 1 ? 1 : per_chunk;
                        size_t need = (cj.panels + per_chunk - 1) / per_chunk;
                        chunks = need > chunks ? need : chunks;
                    }
                    cj.chunks = cj.panels < chunks ? cj.panels : chunks;
                    cf_parallel_for(a->pool, cj.chunks, conv_chunk_task, &cj);
                } else {
                    /* X in place, too few panels for equal chunks (a 7x7 output has 2
                     * to 7), or large weights: pack the panels, then one product split
                     * over both of its dimensions (sgemm.c), so the threads get equal
                     * shares and each reads only its part of the larger operand. */
                    if (!l.in_place)
                        cf_parallel_for(a->pool, cj.panels, cf_patch_panel, &job);
                    conv_gemm(&cj, 0, np, panels, a->pool);
                }
            }
        }
    }
    return CONVFIND_OK;
}

convfind_status cf_gemm_conv_execute(const cf_problem *p, const void *state,
                                     const cf_exec_args *a)
{
    (void)state;
    return conv_execute(p, a, false);
}

convfind_status cf_gemm_1x1_execute(const cf_problem *p, const void *state,
                                    const cf_exec_args *a)
{
    (void)state;
    return conv_execute(p, a, true);
}

/* ---- ConvTranspose: GEMM, then col2im as a gather ----------------------------------- */

typedef struct gather_job {
    const cf_problem *p;
    cf_geom3 g;
    const float *cols;  /* (mg * ksp) x in_sp of this image and group */
    const float *b, *z;
    float *y;
    size_t mg, m0;      /* channels of the group, first channel's index in M */
    int64_t yc, ys[3];  /* Y strides: channel, spatial axes (geom3 order) */
    size_t y_image;     /* offset of this image in Y and Z */
} gather_job;

/* One output row (fixed channel, fixed outer coordinates): every output gathers the
 * cols entries of the (tap, input) pairs that land on it, then gets its epilogue. */
static void gather_task(void *arg, size_t index)
{
    const gather_job *j = arg;
    const cf_geom3 *g = &j->g;
    size_t rows = (size_t)(g->out[0] * g->out[1]);
    size_t m = index / rows, row = index % rows;
    int64_t o0 = (int64_t)row / g->out[1], o1 = (int64_t)row % g->out[1];
    int64_t ksp = g->k[0] * g->k[1] * g->k[2];
    int64_t in_sp = g->in[0] * g->in[1] * g->in[2];
    const float *cm = j->cols + (int64_t)m * ksp * in_sp;
    float bias = j->b ? j->b[j->m0 + m] : 0.0f;
    size_t ybase = j->y_image + (j->m0 + m) * (size_t)j->yc +
                   (size_t)(o0 * j->ys[0] + o1 * j->ys[1]);
    for (int64_t o2 = 0; o2 < g->out[2]; o2++) {
        float acc = 0.0f;
        for (int64_t t0 = 0; t0 < g->k[0]; t0++) {
            int64_t n0 = o0 + g->pad[0] - t0 * g->dil[0];
            if (n0 < 0 || n0 % g->stride[0] != 0 || n0 / g->stride[0] >= g->in[0])
                continue;
            for (int64_t t1 = 0; t1 < g->k[1]; t1++) {
                int64_t n1 = o1 + g->pad[1] - t1 * g->dil[1];
                if (n1 < 0 || n1 % g->stride[1] != 0 || n1 / g->stride[1] >= g->in[1])
                    continue;
                for (int64_t t2 = 0; t2 < g->k[2]; t2++) {
                    int64_t n2 = o2 + g->pad[2] - t2 * g->dil[2];
                    if (n2 < 0 || n2 % g->stride[2] != 0 || n2 / g->stride[2] >= g->in[2])
                        continue;
                    int64_t tap = (t0 * g->k[1] + t1) * g->k[2] + t2;
                    int64_t i = ((n0 / g->stride[0]) * g->in[1] + n1 / g->stride[1]) * g->in[2] +
                                n2 / g->stride[2];
                    acc += cm[tap * in_sp + i];
                }
            }
        }
        size_t yi = ybase + (size_t)(o2 * j->ys[2]);
        j->y[yi] = cf_epilogue_value(j->p, acc, bias, j->z ? j->z[yi] : 0.0f);
    }
}

bool cf_gemm_convt_applicable(const cf_problem *p)
{
    return p->dtype == CONVFIND_DTYPE_F32 && p->op == CONVFIND_OP_CONV_TRANSPOSE;
}

convfind_status cf_gemm_convt_workspace(const cf_problem *p, size_t *bytes)
{
    return workspace_of(p, false, bytes);
}

convfind_status cf_gemm_convt_pack_weights(const cf_problem *p, const void *state,
                                           const void *w, void **packed)
{
    (void)state;
    return pack_weights(p, w, packed);
}

convfind_status cf_gemm_convt_execute(const cf_problem *p, const void *state,
                                      const cf_exec_args *a)
{
    (void)state;
    ws_layout l;
    convfind_status st = check_args(p, a, false, &l);
    if (st != CONVFIND_OK)
        return st;
    const cf_sgemm_kernel *kern = cf_kernel_table_active()->sgemm;
    char *ws = a->workspace;
    const weights_src wsrc = weights_for(kern, p, a, (float *)(ws + l.weights));
    float *xpk = (float *)(ws + l.panels), *cols = (float *)(ws + l.cols);

    const bool nhwc = p->layout == CONVFIND_LAYOUT_NHWC;
    const size_t cg = (size_t)cf_cin_per_group(p), mg = (size_t)cf_cout_per_group(p);
    const size_t in_sp = (size_t)p->in_sp, out_sp = (size_t)p->out_sp;
    const size_t C = (size_t)p->c, M = (size_t)p->m, ksp = (size_t)p->k_sp;

    gather_job job = {.p = p, .g = cf_geom3_of(p), .cols = cols, .b = a->b, .z = a->z,
                      .y = a->y, .mg = mg};
    int64_t py = nhwc ? (int64_t)M : 1;
    job.yc = nhwc ? 1 : (int64_t)out_sp;
    job.ys[2] = py;
    job.ys[1] = py * job.g.out[2];
    job.ys[0] = py * job.g.out[2] * job.g.out[1];
    size_t rows = (size_t)(job.g.out[0] * job.g.out[1]);

    const float *x = a->x;
    for (int64_t n = 0; n < p->n; n++) {
        for (int64_t g = 0; g < p->group; g++) {
            /* X of the group as a cg x in_sp matrix. */
            const float *xg = x + (size_t)n * C * in_sp + (size_t)g * cg * (nhwc ? 1 : in_sp);
            ptrdiff_t rs = nhwc ? 1 : (ptrdiff_t)in_sp, cs = nhwc ? (ptrdiff_t)C : 1;
            cf_sgemm_pack_b(kern, cg, in_sp, xg, rs, cs, xpk, a->pool);
            cf_sgemm_compute(kern, mg * ksp, in_sp, cg, weights_of_group(&wsrc, g),
                             (cf_sgemm_operand){xpk, true, 0, 0}, cols, (ptrdiff_t)in_sp, 1,
                             NULL, a->pool);
            job.m0 = (size_t)g * mg;
            job.y_image = (size_t)n * M * out_sp;
            cf_parallel_for(a->pool, mg * rows, gather_task, &job);
        }
    }
    return CONVFIND_OK;
}
