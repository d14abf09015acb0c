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
#include "problem/shape.h"
#include "util/error.h"

/* ---- packed weights ---------------------------------------------------------------- */

#define PACKED_MAGIC 0x434d4547u /* "GEMC" */
#define PACKED_HEADER 64         /* header bytes; the data after it stays 64-aligned */

typedef struct packed_header {
    uint32_t magic;
    cf_isa isa;          /* the kernel (MR, NR) the data was packed for */
    bool per_tap;        /* one operand per kernel tap (cpu.tap_gemm), else one in all */
    size_t group_floats; /* floats of one group's packed operand */
    size_t bytes;        /* of the whole blob, this header included */
} packed_header;

/* The kernel of a GEMM whose rows are a Conv's output pixels: `kern`, or, when 8 does
 * not divide the pixels, its 14-row variant where 14 does (14x14 maps), its 7-row one
 * where 7 does (7x7 maps) or its one-row one for a single pixel. */
static const cf_sgemm_kernel *pixel_rows_kernel(const cf_problem *p, const cf_sgemm_kernel *kern)
{
    size_t pix = (size_t)p->out_sp;
    if (pix % 8 == 0)
        return kern;
    if (kern->mr1 != NULL && pix == 1)
        return kern->mr1;
    if (kern->mr14 != NULL && pix % 14 == 0)
        return kern->mr14;
    return kern->mr7 != NULL && pix % 7 == 0 ? kern->mr7 : kern;
}

/* Whether a Conv's GEMM has output pixels as rows and channels as columns (weights =
 * packed B): NHWC, where that is the memory order; NCHW with one output pixel, where the
 * kernel has a one-row variant; and NCHW when that wastes clearly fewer FMAs and the
 * kernel stores column-major tiles itself (trans_c).  Rows round up to
 * MR and columns to half a panel (a vector), so a 7x7 map computes 49 pixel rows (7-row
 * kernel) instead of 64 pixel columns.  The 5% margin pays for the transposed store.
 * `kern` is the level's kernel (cf_kernel_table's sgemm), never its 7-row variant. */
static bool pixels_as_rows(const cf_problem *p, const cf_sgemm_kernel *kern)
{
    if (p->op != CONVFIND_OP_CONV)
        return false;
    if (p->layout == CONVFIND_LAYOUT_NHWC)
        return true;
    /* One pixel: C's two orders are the same, and the one-row kernel computes no padding. */
    if (p->out_sp == 1 && kern->mr1 != NULL)
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

/* The weights of one group as GEMM operands (see gemm_conv.h): one operand (`blocks` 1)
 * whose K runs over (channel, tap), or, per tap (cpu.tap_gemm), `blocks` = taps operands
 * whose K runs over the channels, block t starting `block_step` elements after block
 * t - 1 in W. */
typedef struct w_operand {
    bool as_a;           /* packed as A (rows x cols = m x k) or as B (k x n) */
    size_t rows, cols;   /* of one block */
    size_t group_stride; /* elements of W from one group to the next */
    ptrdiff_t rs, cs;
    size_t blocks, block_step;
} w_operand;

static w_operand weight_operand(const cf_problem *p, const cf_sgemm_kernel *kern, bool per_tap)
{
    size_t cg = (size_t)cf_cin_per_group(p), mg = (size_t)cf_cout_per_group(p);
    size_t ksp = (size_t)p->k_sp, kdim = cg * ksp;
    w_operand o;
    if (p->op == CONVFIND_OP_CONV_TRANSPOSE) {
        /* W: C x M/g x taps.  A[(m, tap), c] = W[c][m][tap]. */
        o = (w_operand){true, mg * ksp, cg, cg * mg * ksp, 1, (ptrdiff_t)(mg * ksp), 1, 0};
    } else if (per_tap) {
        /* Tap t's weights: W[m][c][t], channels ksp elements apart. */
        bool a = !pixels_as_rows(p, kern);
        o = a ? (w_operand){true, mg, cg, mg * kdim, (ptrdiff_t)kdim, (ptrdiff_t)ksp, ksp, 1}
              : (w_operand){false, cg, mg, mg * kdim, (ptrdiff_t)ksp, (ptrdiff_t)kdim, ksp, 1};
    } else if (!pixels_as_rows(p, kern)) {
        o = (w_operand){true, mg, kdim, mg * kdim, (ptrdiff_t)kdim, 1, 1, 0};
    } else {
        o = (w_operand){false, kdim, mg, mg * kdim, 1, (ptrdiff_t)kdim, 1, 0};
    }
    return o;
}

/* Floats of one block of the operand, packed. */
static size_t block_floats(const cf_sgemm_kernel *kern, const w_operand *o, bool *overflow)
{
    return o->as_a ? cf_sgemm_packed_a_floats(kern, o->rows, o->cols, overflow)
                   : cf_sgemm_packed_b_floats(kern, o->rows, o->cols, overflow);
}

/* Floats of all blocks of the operand (one group), packed. */
static size_t operand_floats(const cf_sgemm_kernel *kern, const w_operand *o, bool *overflow)
{
    size_t f = block_floats(kern, o, overflow);
    if (f != 0 && o->blocks > SIZE_MAX / f) {
        if (overflow != NULL)
            *overflow = true;
        return 0;
    }
    return f * o->blocks;
}

/* The largest packed size over every kernel this machine can run, so a workspace sized
 * once fits whatever level a later execution is forced to.  With `p`, the operand is the
 * weights as each kernel takes them, counted only where they are packed B (the weights a
 * Conv execution must pack itself, weights_for); else `o` itself. */
static size_t operand_floats_max(const cf_problem *p, bool per_tap, const w_operand *o,
                                 bool *overflow)
{
    size_t most = 0;
    for (int level = 0; level < CF_ISA_COUNT; level++) {
        const cf_sgemm_kernel *kern = cf_kernel_table_for((cf_isa)level)->sgemm;
        w_operand wo = p ? weight_operand(p, kern, per_tap) : *o;
        size_t f = wo.as_a ? 0 : operand_floats(kern, &wo, overflow);
        most = f > most ? f : most;
    }
    return most;
}

static void pack_groups(const cf_sgemm_kernel *kern, const cf_problem *p, bool per_tap,
                        const float *w, float *dst, size_t group_floats, cf_threadpool *pool)
{
    w_operand o = weight_operand(p, kern, per_tap);
    size_t bf = block_floats(kern, &o, NULL);
    for (int64_t g = 0; g < p->group; g++) {
        for (size_t blk = 0; blk < o.blocks; blk++) {
            const float *wb = w + (size_t)g * o.group_stride + blk * o.block_step;
            float *d = dst + (size_t)g * group_floats + blk * bf;
            if (o.as_a)
                cf_sgemm_pack_a(kern, o.rows, o.cols, wb, o.rs, o.cs, d);
            else
                cf_sgemm_pack_b(kern, o.rows, o.cols, wb, o.rs, o.cs, d, pool);
        }
    }
}

static convfind_status pack_weights(const cf_problem *p, bool per_tap, const void *w,
                                    void **packed)
{
    if (packed == NULL || w == NULL)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "%s is NULL", w ? "packed" : "w");
    *packed = NULL;
    const cf_sgemm_kernel *kern = cf_kernel_table_active()->sgemm;
    w_operand o = weight_operand(p, kern, per_tap);
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
    *h = (packed_header){PACKED_MAGIC, kern->isa, per_tap, gf, ws.bytes};
    pack_groups(kern, p, per_tap, w, (float *)(blob + PACKED_HEADER), gf, NULL);
    *packed = blob;
    return CONVFIND_OK;
}

void cf_gemm_free_packed(void *packed)
{
    free(packed);
}

size_t cf_gemm_packed_extent(const cf_problem *p, const void *packed, const void **start)
{
    (void)p;
    *start = packed;
    return ((const packed_header *)packed)->bytes;
}

/* The weights of one execution as the GEMM operand of group 0 (its first block), and
 * the distances from one group's operand to the next and from one block to the next. */
typedef struct weights_src {
    cf_sgemm_operand op;
    size_t group_stride, block_stride;
} weights_src;

/* The caller's packed weights when they were made for `kern` and this form (per tap or
 * not); else W itself, read in place, when the weights are the GEMM's A (any strides will
 * do); else (NHWC, where they are B and B must have unit column stride) W packed now into
 * `scratch`. */
static weights_src weights_for(const cf_sgemm_kernel *kern, const cf_problem *p, bool per_tap,
                               const cf_exec_args *a, float *scratch)
{
    const packed_header *h = a->packed_w;
    w_operand o = weight_operand(p, kern, per_tap);
    size_t bf = block_floats(kern, &o, NULL);
    if (h != NULL && h->magic == PACKED_MAGIC && h->isa == kern->isa && h->per_tap == per_tap)
        return (weights_src){{(const float *)((const char *)h + PACKED_HEADER), true, 0, 0},
                             h->group_floats, bf};
    if (o.as_a)
        return (weights_src){{a->w, false, (size_t)o.rs, (size_t)o.cs}, o.group_stride,
                             o.block_step};
    size_t gf = operand_floats(kern, &o, NULL);
    pack_groups(kern, p, per_tap, a->w, scratch, gf, a->pool);
    return (weights_src){{scratch, true, 0, 0}, gf, bf};
}

/* The operand of group g, block blk. */
static cf_sgemm_operand weights_of(const weights_src *w, int64_t g, size_t blk)
{
    cf_sgemm_operand op = w->op;
    op.p += (size_t)g * w->group_stride + blk * w->block_stride;
    return op;
}

/* ---- workspace layout --------------------------------------------------------------- */

typedef struct ws_layout {
    size_t weights; /* byte offsets */
    size_t panels;  /* Conv: one tile of patch panels; ConvTranspose: packed X */
    size_t cols;    /* ConvTranspose: the cols matrix */
    size_t xsplit;  /* Conv with split_x: one image and group of X in phase-split form */
    size_t scratch; /* Conv per tap: a C of one tile's output channels x pixels */
    size_t bytes;
    size_t tile;    /* Conv: output pixels per tile, before rounding to the panel width */
    bool in_place;  /* Conv: the GEMM reads X itself as B or A (no patch panels) */
    bool pack_x;    /* in_place, but X is copied into panels where it would be B: see
                     * layout_of */
    bool per_tap;   /* Conv: one GEMM per kernel tap (cpu.tap_gemm) */
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

/* Pixels per patch tile, whose panels have `kdim` rows: the panels fill about two L2s,
 * never below `least` pixels nor one panel row of 96 (a multiple of every kernel's MR
 * and NR); tiles are balanced in size. */
static size_t conv_tile(const cf_problem *p, size_t kdim, size_t least)
{
    size_t budget = 2 * cf_cpu_caches()->l2;
    size_t tile_max = budget / (kdim * sizeof(float));
    if (tile_max < least)
        tile_max = least;
    if (tile_max < 96)
        tile_max = 96;
    size_t out_sp = (size_t)p->out_sp;
    size_t tiles = (out_sp + tile_max - 1) / tile_max;
    return (out_sp + tiles - 1) / tiles;
}

/* cpu.tap_gemm's tiles hold at least this many pixels per output channel of a group.
 * Every tap's weights (channels out x in) are read once per tile, the tile's patches
 * (channels in x pixels) written once per tap, so with tiles of at least 4 x the output
 * channels the weights cost at most a quarter of the patches' traffic.  Sized by L2
 * alone, DeepLabV3's 2048 -> 256 atrous layers ran in 5 tiles, each reading all 19 MB of
 * weights from L3; in 2 (545 pixels) they take 0.94-1.01x that time in a quiet minute of
 * a shared machine and 0.76-0.85x in a loaded one. */
#define TAP_TILE_LEAST 4

/* How a Conv's GEMM runs: on patch panels (cpu.im2col_gemm); reading X in place when
 * patches_are_x (cpu.gemm_1x1); one GEMM per kernel tap (cpu.tap_gemm). */
typedef enum conv_form { FORM_PATCHES, FORM_IN_PLACE, FORM_PER_TAP } conv_form;

static ws_layout layout_of(const cf_problem *p, conv_form form)
{
    ws_layout l = {0};
    l.in_place = form == FORM_IN_PLACE && patches_are_x(p);
    /* NCHW rows of X whose length is not a multiple of 16 floats start at every offset
     * within a cache line, so as the GEMM's B (pixels as columns) nearly every vector
     * load of the microkernel spans two lines.  Copying X into panels costs less than
     * that where each copied float serves 128 FMAs or more (128 output channels):
     * DeepLabV3's 1x1 layers on 33x33 and 65x65 maps 0.78-0.96x the time (layer3.0.conv1
     * 4.91 -> 3.92 ms, 2 threads); and from 32 output channels where an image's X (per
     * group) is beyond twice L2, so that each of two threads' halves of it streams from
     * L3 or memory: there the in-place rows (a B micro-panel reads one line-straddling
     * piece of each of its K rows, pages apart) ran at a third to a half of the FMA
     * rate, and the copy made DeepLabV3's c256 k64 on 129x129 0.63-0.73x the time, c256
     * k32 0.59-0.62x, c64 k64 0.88-0.92x (Zen 4, 2 threads, forced, four rounds in turns;
     * 0.48-0.63x on an Intel Xeon, whose 2 MB L2 puts the bound at 4 MB;
     * docs/performance.md).  Below that bound the copy costs more: the 21-channel
     * classifier 0.069 -> 0.084 ms, Inception-v3's 35x35 c192 k32 0.059 -> 0.079, and its
     * c288 k64 (1.4 MB per image) 1.11x at N = 1 and 2.  Room for the panels is kept
     * either way: execute() still reads X in place where it is A (pixels as rows). */
    const size_t mg_out = (size_t)cf_cout_per_group(p);
    const double x_bytes = (double)cf_cin_per_group(p) * (double)p->in_sp * sizeof(float);
    l.pack_x = l.in_place && p->layout == CONVFIND_LAYOUT_NCHW && p->in_sp % 16 != 0 &&
               (mg_out >= 128 || (mg_out >= 32 && x_bytes > 2.0 * (double)cf_cpu_caches()->l2));
    l.per_tap = form == FORM_PER_TAP;
    cf_ws ws = {0};
    /* Room to pack the weights only where they cannot be read in place (weights_for). */
    size_t wf = operand_floats_max(p, l.per_tap, NULL, &l.overflow);
    l.weights = cf_ws_take(&ws, cf_ws_mul(&ws, wf, (size_t)p->group), sizeof(float));
    size_t cg = (size_t)cf_cin_per_group(p), mg = (size_t)cf_cout_per_group(p);
    if (l.in_place && !l.pack_x) {
        l.tile = (size_t)p->out_sp;
    } else if (p->op == CONVFIND_OP_CONV) {
        /* Per tap, a tile's panels hold one tap's rows at a time. */
        size_t kdim = l.per_tap ? cg : cf_ws_mul(&ws, cg, (size_t)p->k_sp);
        size_t out_sp = (size_t)p->out_sp, least = 0;
        if (l.per_tap)
            least = mg > out_sp / TAP_TILE_LEAST ? out_sp : TAP_TILE_LEAST * mg;
        l.tile = conv_tile(p, kdim ? kdim : 1, least);
        /* + 32: rounding the tile up to any kernel's panel width (<= 32). */
        l.panels = cf_ws_take(&ws, cf_ws_mul(&ws, kdim, l.tile + 32), sizeof(float));
        /* Per tap, each GEMM's patches are one strided read of X per channel (the 1x1
         * case), which the phase split would only copy once more. */
        l.split = !l.per_tap && split_x(p);
        if (l.per_tap)
            l.scratch = cf_ws_take(&ws, cf_ws_mul(&ws, (size_t)cf_cout_per_group(p), l.tile + 32),
                                   sizeof(float));
        if (l.split) {
            cf_geom3 g = cf_geom3_of(p);
            l.xsplit = cf_ws_take(&ws, cf_ws_mul(&ws, cg, split_channel_floats(&g)),
                                  sizeof(float));
        }
    } else {
        w_operand xo = {false, cg, (size_t)p->in_sp, 0, 0, 0, 1, 0};
        size_t xf = operand_floats_max(NULL, false, &xo, &l.overflow);
        l.panels = cf_ws_take(&ws, xf, sizeof(float));
        size_t rows = cf_ws_mul(&ws, (size_t)cf_cout_per_group(p), (size_t)p->k_sp);
        l.cols = cf_ws_take(&ws, cf_ws_mul(&ws, rows, (size_t)p->in_sp), sizeof(float));
    }
    l.bytes = ws.bytes;
    l.overflow = l.overflow || ws.overflow;
    return l;
}

static convfind_status workspace_of(const cf_problem *p, conv_form form, size_t *bytes)
{
    if (bytes == NULL)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "bytes is NULL");
    ws_layout l = layout_of(p, form);
    if (l.overflow)
        return cf_fail(CONVFIND_ERR_OVERFLOW,
                       "GEMM workspace for C=%lld M=%lld kernel taps=%lld overflows size_t",
                       (long long)p->c, (long long)p->m, (long long)p->k_sp);
    *bytes = l.bytes;
    return CONVFIND_OK;
}

static convfind_status check_args(const cf_problem *p, const cf_exec_args *a, conv_form form,
                                  ws_layout *l)
{
    if (a == NULL || a->x == NULL || a->w == NULL || a->y == NULL)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "%s is NULL",
                       a == NULL ? "args" : (a->x == NULL ? "x" : (a->w == NULL ? "w" : "y")));
    if ((p->has_bias && a->b == NULL) || (p->has_residual && a->z == NULL))
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "%s is NULL but the problem has one",
                       a->b == NULL && p->has_bias ? "bias" : "residual");
    *l = layout_of(p, form);
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
    return workspace_of(p, FORM_PATCHES, bytes);
}

convfind_status cf_gemm_1x1_workspace(const cf_problem *p, size_t *bytes)
{
    return workspace_of(p, FORM_IN_PLACE, bytes);
}

convfind_status cf_gemm_taps_workspace(const cf_problem *p, size_t *bytes)
{
    return workspace_of(p, FORM_PER_TAP, bytes);
}

convfind_status cf_gemm_conv_pack_weights(const cf_problem *p, const void *state,
                                          const void *w, void **packed)
{
    (void)state;
    return pack_weights(p, false, w, packed);
}

convfind_status cf_gemm_taps_pack_weights(const cf_problem *p, const void *state,
                                          const void *w, void **packed)
{
    (void)state;
    return pack_weights(p, true, w, packed);
}

/* One image and group of a Conv execution: where its tiles' GEMMs read and write. */
typedef struct conv_image {
    conv_chunk_job *cj;
    cf_patch_job *job;
    const cf_problem *p;
    float *y;                 /* Y at (image, first channel of the group, pixel 0) */
    const float *z;           /* Z at the same place, or NULL */
    const float *bias;        /* the group's bias, or NULL */
    size_t chs, ps;           /* Y strides from one channel and one pixel to the next */
    float *scratch;           /* per tap: C of a box narrower than the rows */
    bool x_in_place;          /* the GEMM reads X itself (no patch panels) */
    size_t threads;
    cf_threadpool *pool;
} conv_image;

/* What a GEMM does with its C: store the product, or add it to C; whether it adds the
 * residual Z (which the first GEMM to write a place of Y does, before it writes there,
 * so that Z may be Y itself), and whether it finishes with the bias and the activation. */
typedef struct range_ep {
    bool accumulate, residual, finish;
} range_ep;

/* Where a GEMM's C goes: Y of the image and group (or a scratch C in the same layout),
 * with Z at the same offsets, and the strides from pixel to pixel and channel to
 * channel. */
typedef struct gemm_dest {
    float *y;
    const float *z;
    ptrdiff_t ps, chs;
} gemm_dest;

/* The GEMM of the pixels [pix0, pix0 + np) of ci->job's geometry: its patch panels (or X
 * in place) times the weights ci->cj->wg, into `d` from its pixel pix0 on. */
static void range_gemm(const conv_image *ci, const gemm_dest *d, size_t pix0, size_t np,
                       range_ep how)
{
    conv_chunk_job *cj = ci->cj;
    cf_patch_job *job = ci->job;
    const size_t width = job->width;
    const size_t yo = pix0 * (size_t)d->ps;
    job->pix0 = pix0;
    job->npix = np;
    cj->y = d->y + yo;
    cj->ps = d->ps;
    cj->rs = cj->pixel_rows ? d->ps : d->chs;
    cj->cs = cj->pixel_rows ? d->chs : d->ps;
    cj->ep = (cf_sgemm_epilogue){.accumulate = how.accumulate,
                                 .z = how.residual && d->z ? d->z + yo : NULL,
                                 .rs_z = cj->rs, .cs_z = cj->cs};
    if (how.finish) {
        cj->ep.bias = ci->bias;
        cj->ep.bias_per_col = cj->pixel_rows;
        cj->ep.act = ci->p->act;
        cj->ep.alpha = ci->p->alpha;
        cj->ep.beta = ci->p->beta;
    }
    cj->panels = (np + width - 1) / width;
    cj->x_rows = ci->x_in_place ? job->xg + pix0 * cj->xps : NULL;
    /* 4 chunks per thread balance the threads.  Each chunk's product reads all the
     * weights, so chunks only where they are the smaller operand (fewer output channels
     * than tile pixels). */
    const size_t chunks_min = ci->threads == 1 ? 1 : 4 * ci->threads;
    if (!ci->x_in_place && cj->panels >= chunks_min && cj->mg <= np) {
        /* One parallel pass: each chunk packs its own panels and multiplies them, so
         * there is a single wake-up of the pool per tile.  When the weights are small
         * (each chunk's product reads all of them again), packed chunks are also kept to
         * a quarter of L2, so the product reads panels its packing has just left there: a
         * whole tile is about two L2s, and conv1 (64 x 147 weights) took 10% longer on
         * one thread that way. */
        size_t chunks = chunks_min;
        if (cj->mg * cj->kdim * sizeof(float) <= cf_cpu_caches()->l2 / 4) {
            size_t per_chunk = cf_cpu_caches()->l2 / 4 / (cj->kdim * width * sizeof(float));
            per_chunk = per_chunk < 1 ? 1 : per_chunk;
            size_t need = (cj->panels + per_chunk - 1) / per_chunk;
            chunks = need > chunks ? need : chunks;
        }
        cj->chunks = cj->panels < chunks ? cj->panels : chunks;
        cf_parallel_for(ci->pool, cj->chunks, conv_chunk_task, cj);
    } else {
        /* X in place, too few panels for equal chunks (a 7x7 output has 2 to 7), or large
         * weights: pack the panels, then one product split over both of its dimensions
         * (sgemm.c), so the threads get equal shares and each reads only its part of the
         * larger operand. */
        if (!ci->x_in_place)
            cf_parallel_for(ci->pool, cj->panels, cf_patch_panel, job);
        conv_gemm(cj, 0, np, job->dst, ci->pool);
    }
}

/* The outputs for which tap `tap` reads inside X: o with 0 <= o * stride + tap * dil -
 * pad < in on every axis, the box [first[a], last[a]] per axis.  False when it is empty
 * (the tap reads only padding). */
static bool tap_box(const cf_geom3 *g, const int64_t tap[3], int64_t first[3], int64_t last[3])
{
    for (int a = 0; a < 3; a++) {
        int64_t shift = tap[a] * g->dil[a] - g->pad[a]; /* input = o * stride + shift */
        first[a] = -cf_floor_div(shift, g->stride[a]);
        first[a] = first[a] < 0 ? 0 : first[a];
        last[a] = cf_floor_div(g->in[a] - 1 - shift, g->stride[a]);
        last[a] = last[a] >= g->out[a] ? g->out[a] - 1 : last[a];
        if (first[a] > last[a])
            return false;
    }
    return true;
}

static void tap_coords(const cf_geom3 *g, size_t t, int64_t tap[3])
{
    tap[0] = (int64_t)t / (g->k[1] * g->k[2]);
    tap[1] = (int64_t)t / g->k[2] % g->k[1];
    tap[2] = (int64_t)t % g->k[2];
}

/* A tile of per_tap_tile: output rows [r0, r1) (rows counted over the two outer axes) and
 * columns [x0, x1) of each; either whole rows or a part of one row. */
typedef struct out_tile {
    int64_t r0, r1, x0, x1;
} out_tile;

/* Y's pixels [pix0, pix0 + np): set to Z (zeros without one) when `start`, else the
 * bias and the activation applied in place (per_tap_tile's tiles that no tap covers
 * whole need both). */
static void tile_pass(const conv_image *ci, size_t pix0, size_t np, bool start)
{
    const bool nhwc = ci->p->layout == CONVFIND_LAYOUT_NHWC; /* runs of channels */
    const size_t mg = ci->cj->mg;
    const size_t runs = nhwc ? np : mg, len = nhwc ? mg : np;
    for (size_t r = 0; r < runs; r++) {
        /* Offset of the run's first element from Y at pixel 0. */
        size_t o = nhwc ? (pix0 + r) * ci->ps : r * ci->chs + pix0;
        float *y = ci->y + o;
        if (start && ci->z)
            memmove(y, ci->z + o, len * sizeof(float)); /* z may be y */
        else if (start)
            memset(y, 0, len * sizeof(float));
        else if (nhwc)
            cf_epilogue_pixel_run(ci->p, y, len, ci->bias, NULL);
        else
            cf_epilogue_channel_run(ci->p, y, len, ci->bias ? ci->bias[r] : 0.0f, NULL);
    }
}

/* Adds the scratch C of a box of `rows` x `cols` pixels (see box_gemm) to Y, whose
 * pixel (row i, column j) of the box is Y's pixel y0 + i * row_pixels + j. */
static void add_box(const conv_image *ci, const float *sc, size_t y0, size_t rows, size_t cols,
                    size_t row_pixels)
{
    const bool nhwc = ci->p->layout == CONVFIND_LAYOUT_NHWC;
    const size_t mg = ci->cj->mg, npix = rows * cols;
    for (size_t i = 0; i < rows; i++) {
        if (nhwc) {
            for (size_t j = 0; j < cols; j++) {
                float *y = ci->y + (y0 + i * row_pixels + j) * ci->ps;
                const float *s = sc + (i * cols + j) * mg;
                for (size_t m = 0; m < mg; m++)
                    y[m] += s[m];
            }
        } else {
            for (size_t m = 0; m < mg; m++) {
                float *y = ci->y + m * ci->chs + y0 + i * row_pixels;
                const float *s = sc + m * npix + i * cols;
                for (size_t j = 0; j < cols; j++)
                    y[j] += s[j];
            }
        }
    }
}

/* Tap `t`'s GEMM over the box of outputs o0 = plane, o1 in [o1a, o1b), o2 in [x0, x1),
 * every one of which reads inside X for this tap.  Its patches are X read through a 1x1
 * geometry shifted by the tap and the box's corner, so they hold no padding.  A box of one
 * row or of whole rows is contiguous in Y and gets the product directly; one of several
 * rows narrower than Y's goes through a scratch C (only ever adding: a tap that covers
 * the whole tile, the only kind that stores or carries the epilogue, gives the first
 * kind). */
static void box_gemm(const conv_image *ci, const weights_src *wsrc, int64_t group, size_t t,
                     int64_t plane, int64_t o1a, int64_t o1b, int64_t x0, int64_t x1,
                     range_ep how)
{
    const cf_geom3 g = cf_geom3_of(ci->p);
    int64_t tap[3];
    tap_coords(&g, t, tap);
    const int64_t corner[3] = {plane, o1a, x0};
    cf_geom3 *bg = &ci->job->g;
    *bg = g;
    for (int a = 0; a < 3; a++) {
        bg->pad[a] = g.pad[a] - tap[a] * g.dil[a] - corner[a] * g.stride[a];
        bg->k[a] = bg->dil[a] = 1;
    }
    bg->out[0] = 1;
    bg->out[1] = o1b - o1a;
    bg->out[2] = x1 - x0;
    const size_t rows = (size_t)(o1b - o1a), cols = (size_t)(x1 - x0), npix = rows * cols;
    const size_t y0 = (size_t)((plane * g.out[1] + o1a) * g.out[2] + x0);
    ci->cj->wg = weights_of(wsrc, group, t);
    if (rows == 1 || cols == (size_t)g.out[2]) {
        gemm_dest d = {ci->y + y0 * ci->ps, ci->z ? ci->z + y0 * ci->ps : NULL,
                       (ptrdiff_t)ci->ps, (ptrdiff_t)ci->chs};
        range_gemm(ci, &d, 0, npix, how);
        return;
    }
    const bool nhwc = ci->p->layout == CONVFIND_LAYOUT_NHWC;
    gemm_dest d = {ci->scratch, NULL, nhwc ? (ptrdiff_t)ci->cj->mg : 1,
                   nhwc ? 1 : (ptrdiff_t)npix};
    range_gemm(ci, &d, 0, npix, (range_ep){false, false, false});
    add_box(ci, ci->scratch, y0, rows, cols, (size_t)g.out[2]);
}

/* Tap `t` over the outputs of tile `ot` it reaches: one box per plane of output rows. */
static void tap_tile(const conv_image *ci, const weights_src *wsrc, int64_t group, size_t t,
                     const out_tile *ot, range_ep how)
{
    const cf_geom3 g = cf_geom3_of(ci->p);
    int64_t tap[3], first[3], last[3];
    tap_coords(&g, t, tap);
    if (!tap_box(&g, tap, first, last))
        return;
    int64_t x0 = ot->x0 > first[2] ? ot->x0 : first[2];
    int64_t x1 = ot->x1 < last[2] + 1 ? ot->x1 : last[2] + 1;
    if (x0 >= x1)
        return;
    for (int64_t plane = ot->r0 / g.out[1]; plane <= (ot->r1 - 1) / g.out[1]; plane++) {
        if (plane < first[0] || plane > last[0])
            continue;
        int64_t base = plane * g.out[1];
        int64_t a = base + first[1] > ot->r0 ? base + first[1] : ot->r0;
        int64_t b = base + last[1] + 1 < ot->r1 ? base + last[1] + 1 : ot->r1;
        if (a < b)
            box_gemm(ci, wsrc, group, t, plane, a - base, b - base, x0, x1, how);
    }
}

/* Whether tap `t` reads inside X for every output of tile `ot`. */
static bool tap_covers(const cf_geom3 *g, size_t t, const out_tile *ot)
{
    int64_t tap[3], first[3], last[3];
    tap_coords(g, t, tap);
    if (!tap_box(g, tap, first, last) || ot->x0 < first[2] || ot->x1 > last[2] + 1)
        return false;
    for (int64_t r = ot->r0; r < ot->r1; r++) {
        int64_t o0 = r / g->out[1], o1 = r % g->out[1];
        if (o0 < first[0] || o0 > last[0] || o1 < first[1] || o1 > last[1])
            return false;
    }
    return true;
}

/* One tile, one GEMM per kernel tap over exactly the outputs that tap reads inside X
 * for: the products with padding, which im2col computes as zeros, are skipped
 * (DeepLabV3's dilated 3x3 classifiers at rate 18 on 33x33 maps: 59% of them).  A tap
 * that covers the whole tile stores first, adding the residual (else the tile is set to
 * Z or zeroed), the others add, and a second whole one goes last with the bias and the
 * activation (else they are a pass of their own). */
static void per_tap_tile(const conv_image *ci, const weights_src *wsrc, int64_t group,
                         const out_tile *ot)
{
    const cf_geom3 g = cf_geom3_of(ci->p);
    const size_t ksp = (size_t)ci->p->k_sp, none = SIZE_MAX;
    const size_t pix0 = (size_t)(ot->r0 * g.out[2] + ot->x0);
    const size_t np = (size_t)((ot->r1 - ot->r0 - 1) * g.out[2] + ot->x1 - ot->x0);
    size_t first = none, last = none;
    for (size_t t = 0; t < ksp && last == none; t++)
        if (tap_covers(&g, t, ot)) {
            if (first == none)
                first = t;
            else
                last = t;
        }
    const bool finish = ci->bias || ci->p->act != CONVFIND_ACT_NONE;
    if (first == none)
        tile_pass(ci, pix0, np, true);
    else
        tap_tile(ci, wsrc, group, first, ot, (range_ep){false, true, false});
    for (size_t t = 0; t < ksp; t++)
        if (t != first && t != last)
            tap_tile(ci, wsrc, group, t, ot, (range_ep){true, false, false});
    if (last != none)
        tap_tile(ci, wsrc, group, last, ot, (range_ep){true, false, finish});
    else if (finish)
        tile_pass(ci, pix0, np, false);
}

/* The tiles of one image and group, per tap: whole rows, as many as `tile` pixels hold,
 * or, where one row is longer than that, parts of a row. */
static void per_tap_image(const conv_image *ci, const weights_src *wsrc, int64_t group,
                          size_t tile)
{
    const cf_geom3 g = cf_geom3_of(ci->p);
    const int64_t rows = g.out[0] * g.out[1], row = g.out[2];
    if ((int64_t)tile >= row) {
        /* Tiles of equal row counts. */
        int64_t most = (int64_t)tile / row, tiles = (rows + most - 1) / most;
        int64_t per = (rows + tiles - 1) / tiles;
        for (int64_t r0 = 0; r0 < rows; r0 += per) {
            out_tile ot = {r0, r0 + per < rows ? r0 + per : rows, 0, row};
            per_tap_tile(ci, wsrc, group, &ot);
        }
        return;
    }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t x0 = 0; x0 < row; x0 += (int64_t)tile) {
            out_tile ot = {r, r + 1, x0, x0 + (int64_t)tile < row ? x0 + (int64_t)tile : row};
            per_tap_tile(ci, wsrc, group, &ot);
        }
}

/* Whether a batch of one-pixel images is one GEMM whose rows are the images: a 1x1 on
 * 1x1 maps (squeeze-and-excite and classifier layers; X in place implies the 1x1 input)
 * at N > 1, with the weights packed as B (pixels as rows).  Image after image, each image
 * would be a one-row product reading all the weights again (docs/performance.md,
 * cpu.gemm_1x1: 0.36-0.65x the time at N=8 this way). */
static bool batch_as_rows(const cf_problem *p, bool x_in_place, bool pixel_rows)
{
    return x_in_place && pixel_rows && p->out_sp == 1 && p->n > 1;
}

/* The batch_as_rows product of each group: A = X (image n's channels of the group at
 * x + n * C), B = the group's packed weights, C = Y (image n's at y + n * M), with the
 * epilogue's bias per column and Z in Y's layout. */
static void batch_gemm(const cf_problem *p, const cf_exec_args *a, const cf_sgemm_kernel *kern,
                       const weights_src *wsrc)
{
    const size_t C = (size_t)p->c, M = (size_t)p->m;
    const size_t cg = (size_t)cf_cin_per_group(p), mg = (size_t)cf_cout_per_group(p);
    for (int64_t g = 0; g < p->group; g++) {
        const size_t xo = (size_t)g * cg, yo = (size_t)g * mg;
        const cf_sgemm_operand xa = {(const float *)a->x + xo, false, C, 1};
        cf_sgemm_epilogue ep = {.bias = a->b ? (const float *)a->b + yo : NULL,
                                .bias_per_col = true,
                                .z = a->z ? (const float *)a->z + yo : NULL,
                                .rs_z = (ptrdiff_t)M, .cs_z = 1,
                                .act = p->act, .alpha = p->alpha, .beta = p->beta};
        cf_sgemm_compute(kern, (size_t)p->n, mg, cg, xa, weights_of(wsrc, g, 0),
                         (float *)a->y + yo, (ptrdiff_t)M, 1, &ep, a->pool);
    }
}

static convfind_status conv_execute(const cf_problem *p, const cf_exec_args *a, conv_form form)
{
    ws_layout l;
    convfind_status st = check_args(p, a, form, &l);
    if (st != CONVFIND_OK)
        return st;
    const cf_sgemm_kernel *kern = cf_kernel_table_active()->sgemm;
    char *ws = a->workspace;
    /* The workspace is NULL when a 1x1 reads both operands in place. */
    const weights_src wsrc =
        weights_for(kern, p, l.per_tap, a, ws ? (float *)(ws + l.weights) : NULL);
    float *panels = ws ? (float *)(ws + l.panels) : NULL;

    const bool nhwc = p->layout == CONVFIND_LAYOUT_NHWC, pixel_rows = pixels_as_rows(p, kern);
    /* The GEMM's kernel: the same packed weights (B), perhaps fewer rows. */
    const cf_sgemm_kernel *gk = pixel_rows ? pixel_rows_kernel(p, kern) : kern;
    const size_t cg = (size_t)cf_cin_per_group(p), mg = (size_t)cf_cout_per_group(p);
    const size_t ksp = (size_t)p->k_sp, kdim = l.per_tap ? cg : cg * ksp;
    const size_t out_sp = (size_t)p->out_sp;
    const size_t in_sp = (size_t)p->in_sp, M = (size_t)p->m, C = (size_t)p->c;
    const size_t width = pixel_rows ? (size_t)gk->mr : (size_t)gk->nr;
    const bool x_in_place = l.in_place && (!l.pack_x || pixel_rows);
    const size_t tile = x_in_place ? out_sp : (l.tile + width - 1) / width * width;

    cf_patch_job job = {.g = cf_geom3_of(p), .cg = cg, .ksp = l.per_tap ? 1 : ksp,
                        .width = width, .channels_last = nhwc, .dst = panels};
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
                         .kdim = kdim, .xps = nhwc ? C : 1, .xcs = nhwc ? 1 : in_sp};
    conv_image ci = {.cj = &cj, .job = &job, .p = p, .chs = (size_t)chs,
                     .ps = (size_t)ps, .x_in_place = x_in_place,
                     .scratch = l.per_tap ? (float *)(ws + l.scratch) : NULL,
                     .threads = (size_t)cf_threadpool_size(a->pool), .pool = a->pool};
    const float *x = a->x;
    if (batch_as_rows(p, x_in_place, pixel_rows)) {
        batch_gemm(p, a, kern, &wsrc);
        return CONVFIND_OK;
    }
    for (int64_t n = 0; n < p->n; n++) {
        for (int64_t g = 0; g < p->group; g++) {
            job.xg = x + (size_t)n * C * in_sp + (size_t)g * cg * (size_t)job.xc;
            if (l.split) {
                sj.x = x + (size_t)n * C * in_sp + (size_t)g * cg * in_sp;
                cf_parallel_for(a->pool, cg, split_task, &sj);
                job.xg = sj.dst;
            }
            /* Offset of (image n, first channel of group g, pixel 0) in Y and Z. */
            size_t yo = (size_t)n * out_sp * M + (size_t)g * mg * (size_t)chs;
            ci.y = (float *)a->y + yo;
            ci.z = a->z ? (const float *)a->z + yo : NULL;
            ci.bias = a->b ? (const float *)a->b + (size_t)g * mg : NULL;
            if (l.per_tap) {
                per_tap_image(&ci, &wsrc, g, tile);
                continue;
            }
            cj.wg = weights_of(&wsrc, g, 0);
            gemm_dest d = {ci.y, ci.z, ps, chs};
            for (size_t t0 = 0; t0 < out_sp; t0 += tile) {
                size_t np = out_sp - t0 < tile ? out_sp - t0 : tile;
                range_gemm(&ci, &d, t0, np, (range_ep){false, true, true});
            }
        }
    }
    return CONVFIND_OK;
}

convfind_status cf_gemm_conv_execute(const cf_problem *p, const void *state,
                                     const cf_exec_args *a)
{
    (void)state;
    return conv_execute(p, a, FORM_PATCHES);
}

convfind_status cf_gemm_1x1_execute(const cf_problem *p, const void *state,
                                    const cf_exec_args *a)
{
    (void)state;
    return conv_execute(p, a, FORM_IN_PLACE);
}

convfind_status cf_gemm_taps_execute(const cf_problem *p, const void *state,
                                     const cf_exec_args *a)
{
    (void)state;
    return conv_execute(p, a, FORM_PER_TAP);
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
    return workspace_of(p, FORM_PATCHES, bytes);
}

convfind_status cf_gemm_convt_pack_weights(const cf_problem *p, const void *state,
                                           const void *w, void **packed)
{
    (void)state;
    return pack_weights(p, false, w, packed);
}

convfind_status cf_gemm_convt_execute(const cf_problem *p, const void *state,
                                      const cf_exec_args *a)
{
    (void)state;
    ws_layout l;
    convfind_status st = check_args(p, a, FORM_PATCHES, &l);
    if (st != CONVFIND_OK)
        return st;
    const cf_sgemm_kernel *kern = cf_kernel_table_active()->sgemm;
    char *ws = a->workspace;
    const weights_src wsrc = weights_for(kern, p, false, a, (float *)(ws + l.weights));
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
            cf_sgemm_compute(kern, mg * ksp, in_sp, cg, weights_of(&wsrc, g, 0),
                             (cf_sgemm_operand){xpk, true, 0, 0}, cols, (ptrdiff_t)in_sp, 1,
                             NULL, a->pool);
            job.m0 = (size_t)g * mg;
            job.y_image = (size_t)n * M * out_sp;
            cf_parallel_for(a->pool, mg * rows, gather_task, &job);
        }
    }
    return CONVFIND_OK;
}
