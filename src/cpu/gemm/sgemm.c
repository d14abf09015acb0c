/*
 * sgemm.c - the SGEMM driver: packing, cache blocking, threading and edge tiles around
 * the per-ISA microkernels (see sgemm.h for the contract and the packed formats).
 *
 * Loop nest of one task (a block of MR-row panels x a block of NR-column panels of C):
 *   for each KC slice of k          (B micro-panel KC x NR stays in L1)
 *     for each group of NR panels   (the group's KC rows of B stay in L2)
 *       for each MR panel            (the MC x KC block of A stays in L2)
 *         for each NR panel of the group
 *           microkernel
 * When a task's B is larger than L2 it comes from L3 or memory: its groups are then
 * smaller, and the MR panels after the first fetch the next group while they compute.
 * Operands are packed before the product starts, or read in place, so tasks need no
 * workspace and the work splits over any thread count.  The one exception is B read in
 * place from rows far apart, which a task copies a column panel at a time into a buffer on
 * its stack (gemm_task_repack).
 */
#include "cpu/gemm/sgemm.h"

#include <stdint.h>
#include <string.h>

#include "cpu/epilogue.h"
#include "cpu/kernel_table.h"
#include "util/error.h"
#include "util/prefetch.h"

/* Multiply-adds below which a product is not split among threads (run_gemm). */
#define CF_SGEMM_SHARE_MIN_MACS 32768

/* Largest K slice (choose_kc keeps to it): bounds the stack copy of a partial A panel
 * (70 KB with the 14-row kernel). */
#define KC_LIMIT 1280

/* Column panels per microkernel call while B streams in (gemm_task): the call's set-up
 * is paid once for them, and the fetch of the next group's rows stays spread over the
 * group (one call per tile cost AVX2's 6 x 16 tiles 1.16x the time of MobileNet's 112x112
 * K = 16 layers on one thread). */
#define STREAM_RUN 4

static size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

/* ceil(x / unit) * unit * other, or 0 with *overflow set. */
static size_t padded_product(size_t x, size_t unit, size_t other, bool *overflow)
{
    if (x > SIZE_MAX - unit) {
        if (overflow)
            *overflow = true;
        return 0;
    }
    size_t padded = round_up(x, unit);
    if (other != 0 && padded > SIZE_MAX / other) {
        if (overflow)
            *overflow = true;
        return 0;
    }
    return padded * other;
}

size_t cf_sgemm_packed_a_floats(const cf_sgemm_kernel *kern, size_t m, size_t k,
                                bool *overflow)
{
    return padded_product(m, (size_t)kern->mr, k, overflow);
}

size_t cf_sgemm_packed_b_floats(const cf_sgemm_kernel *kern, size_t k, size_t n,
                                bool *overflow)
{
    return padded_product(n, (size_t)kern->nr, k, overflow);
}

void cf_sgemm_pack_a(const cf_sgemm_kernel *kern, size_t m, size_t k, const float *a,
                     ptrdiff_t rs, ptrdiff_t cs, float *dst)
{
    const size_t mr = (size_t)kern->mr;
    for (size_t i0 = 0; i0 < m; i0 += mr) {
        size_t rows = m - i0 < mr ? m - i0 : mr;
        for (size_t kk = 0; kk < k; kk++) {
            float *d = dst + kk * mr;
            for (size_t r = 0; r < rows; r++)
                d[r] = a[(ptrdiff_t)(i0 + r) * rs + (ptrdiff_t)kk * cs];
            for (size_t r = rows; r < mr; r++)
                d[r] = 0.0f;
        }
        dst += k * mr;
    }
}

void cf_sgemm_pack_b_panel(const cf_sgemm_kernel *kern, size_t k, size_t ncols,
                           const float *b, ptrdiff_t rs, ptrdiff_t cs, float *dst)
{
    const size_t nr = (size_t)kern->nr;
    for (size_t kk = 0; kk < k; kk++) {
        float *d = dst + kk * nr;
        const float *src = b + (ptrdiff_t)kk * rs;
        if (cs == 1) {
            memcpy(d, src, ncols * sizeof(float));
        } else {
            for (size_t j = 0; j < ncols; j++)
                d[j] = src[(ptrdiff_t)j * cs];
        }
        for (size_t j = ncols; j < nr; j++)
            d[j] = 0.0f;
    }
}

typedef struct pack_b_job {
    const cf_sgemm_kernel *kern;
    size_t k, n;
    const float *b;
    ptrdiff_t rs, cs;
    float *dst;
} pack_b_job;

static void pack_b_task(void *arg, size_t panel)
{
    const pack_b_job *j = arg;
    size_t nr = (size_t)j->kern->nr, c0 = panel * nr;
    size_t cols = j->n - c0 < nr ? j->n - c0 : nr;
    cf_sgemm_pack_b_panel(j->kern, j->k, cols, j->b + (ptrdiff_t)c0 * j->cs, j->rs, j->cs,
                          j->dst + panel * j->k * nr);
}

void cf_sgemm_pack_b(const cf_sgemm_kernel *kern, size_t k, size_t n, const float *b,
                     ptrdiff_t rs, ptrdiff_t cs, float *dst, cf_threadpool *pool)
{
    pack_b_job job = {kern, k, n, b, rs, cs, dst};
    size_t panels = (n + (size_t)kern->nr - 1) / (size_t)kern->nr;
    cf_parallel_for(pool, panels, pack_b_task, &job);
}

/* ---- the product ------------------------------------------------------------------ */

typedef struct gemm_job {
    const cf_sgemm_kernel *kern;
    size_t m, n, k;
    const float *pa, *pb;
    size_t a_rs, a_ks;         /* A(r, kk) = a[r * a_rs + kk * a_ks]: (1, MR) when packed */
    size_t a_panel;            /* floats from one A row panel to the next */
    size_t ldb;                /* B row stride: NR when packed */
    size_t b_panel;            /* floats from one B column panel to the next */
    float *c;
    ptrdiff_t rs_c, cs_c;
    cf_sgemm_epilogue ep;
    cf_sgemm_clamp clamp;      /* the part of ep.act the microkernel applies */
    bool act_after;            /* ep.act needs a pass over the stored tile */
    size_t kc;                 /* K slice length */
    size_t mpanels, npanels;   /* MR / NR panels of C */
    size_t unit, nunits;       /* column blocks are whole units of this many columns: NR,
                                * or half a panel where that splits them evenly */
    size_t mblocks, nblocks;   /* task grid */
    size_t b_block_max;        /* bytes of a task's B slice that still fit in L2 */
    size_t b_group_max;        /* bytes of one group of B panels (gemm_task) */
    bool b_stream;             /* fetch the next group while computing this one */
    bool b_repack;             /* B in place, packed a panel at a time (gemm_task_repack) */
    size_t b_j0, b_k0;         /* the column and row of B at pb (0, 0 but in a repacked
                                * panel) */
} gemm_job;

static float bias_at(const cf_sgemm_epilogue *ep, size_t i, size_t j)
{
    if (ep->bias == NULL)
        return 0.0f;
    return ep->bias_per_col ? ep->bias[j] : ep->bias[i];
}

/* The epilogue for one element of C when there is no product (k == 0): the same
 * operations in the same order as the microkernels'. */
static float finish_value(const cf_sgemm_epilogue *ep, float v, size_t i, size_t j)
{
    if (ep->bias != NULL)
        v += bias_at(ep, i, j);
    if (ep->z != NULL)
        v += ep->z[(ptrdiff_t)i * ep->rs_z + (ptrdiff_t)j * ep->cs_z];
    return cf_activate(v, ep->act, ep->alpha, ep->beta);
}

/* Whether the kernel stores tiles of this C column-major itself (tile_ep.trans). */
static bool stores_trans(const cf_sgemm_kernel *kern, ptrdiff_t rs_c, ptrdiff_t cs_c)
{
    return cs_c != 1 && rs_c == 1 && kern->trans_c;
}

/* B at row k0 and column j. */
static const float *b_at(const gemm_job *g, size_t j, size_t k0)
{
    const size_t nr = (size_t)g->kern->nr;
    j -= g->b_j0;
    return g->pb + j / nr * g->b_panel + j % nr + (k0 - g->b_k0) * g->ldb;
}

/* One tile of do_tiles (at most NR columns, inside one column panel) past the row edge
 * or with strided C: the kernel computes the whole tile, epilogue included, into a
 * scratch tile, whose rows and columns inside C are then copied there.  The parts of the
 * epilogue that the kernel would read past the edge come from scratch copies: the bias
 * of the rows there are (zeros after them) and the residual's tile.  (A per-element
 * epilogue here cost more than the tile's FMAs at short K: with 6-row AVX2 tiles, output
 * channel counts such as 16, 32, 64 and 160 end in a partial row panel, and MobileNetV2's
 * c32 k16 1x1 layer spent 47% of its time in it.) */
static void scratch_tile(const gemm_job *g, size_t i0, size_t j0, size_t cols, size_t k0,
                         size_t kc, bool first, bool last, size_t rows, const float *a,
                         size_t a_rs, size_t a_ks)
{
    const size_t nr = (size_t)g->kern->nr;
    const bool accumulate = !first || g->ep.accumulate;
    const float *b = b_at(g, j0, k0);
    float *c = g->c + (ptrdiff_t)i0 * g->rs_c + (ptrdiff_t)j0 * g->cs_c;
    _Alignas(64) float tile[CF_SGEMM_MR_MAX * CF_SGEMM_NR_MAX];
    _Alignas(64) float ztile[CF_SGEMM_MR_MAX * CF_SGEMM_NR_MAX];
    float brow[CF_SGEMM_MR_MAX] = {0};
    cf_sgemm_tile_ep tep = {.accumulate = accumulate};
    if (accumulate) {
        memset(tile, 0, sizeof tile); /* rows past `rows` are read, never stored */
        for (size_t r = 0; r < rows; r++)
            for (size_t j = 0; j < cols; j++)
                tile[r * nr + j] = c[(ptrdiff_t)r * g->rs_c + (ptrdiff_t)j * g->cs_c];
    }
    if (first && g->ep.z != NULL) {
        memset(ztile, 0, sizeof ztile);
        for (size_t r = 0; r < rows; r++)
            for (size_t j = 0; j < cols; j++)
                ztile[r * nr + j] = g->ep.z[(ptrdiff_t)(i0 + r) * g->ep.rs_z +
                                            (ptrdiff_t)(j0 + j) * g->ep.cs_z];
        tep.z = ztile;
        tep.ldz = nr;
    }
    if (last) {
        if (g->ep.bias != NULL && g->ep.bias_per_col) {
            tep.bias_col = g->ep.bias + j0;
        } else if (g->ep.bias != NULL) {
            memcpy(brow, g->ep.bias + i0, rows * sizeof(float));
            tep.bias_row = brow;
        }
        tep.clamp = g->clamp;
        tep.lo = g->ep.alpha;
        tep.hi = g->ep.beta;
    }
    g->kern->ukernel(kc, a, a_rs, a_ks, b, g->ldb, g->b_panel, tile, nr, cols, &tep);
    const bool act = last && g->act_after;
    if (g->cs_c == 1) { /* rows of C: copied whole (a scalar loop here cost 26% of the
                         * c32 k16 layer above) */
        for (size_t r = 0; r < rows; r++) {
            float *cr = c + (ptrdiff_t)r * g->rs_c;
            memcpy(cr, tile + r * nr, cols * sizeof(float));
            for (size_t j = 0; act && j < cols; j++)
                cr[j] = cf_activate(cr[j], g->ep.act, g->ep.alpha, g->ep.beta);
        }
        return;
    }
    /* Walk C along its smaller stride (a transposed C is written column by column). */
    const bool by_cols = g->rs_c < g->cs_c;
    const size_t outer = by_cols ? cols : rows, inner = by_cols ? rows : cols;
    for (size_t u = 0; u < outer; u++) {
        for (size_t v = 0; v < inner; v++) {
            size_t r = by_cols ? v : u, j = by_cols ? u : v;
            float val = tile[r * nr + j];
            if (act)
                val = cf_activate(val, g->ep.act, g->ep.alpha, g->ep.beta);
            c[(ptrdiff_t)r * g->rs_c + (ptrdiff_t)j * g->cs_c] = val;
        }
    }
}

/* The tiles of MR rows x `cols` columns at C(i0, j0), product of K slice [k0, k0 + kc):
 * `a` is the A panel at k0 with A(r, kk) at a[r * a_rs + kk * a_ks], packed (zero rows
 * past m) whenever fewer than MR rows remain (gemm_task).  The columns lie inside one
 * column panel, or start at a panel's first column and run over any number of panels:
 * the kernel walks those in one call. */
static void do_tiles(const gemm_job *g, size_t i0, size_t j0, size_t cols, size_t k0,
                     size_t kc, const float *a, size_t a_rs, size_t a_ks)
{
    const size_t mr = (size_t)g->kern->mr, nr = (size_t)g->kern->nr;
    const bool first = k0 == 0, last = k0 + kc >= g->k;
    const bool accumulate = !first || g->ep.accumulate;
    const size_t rows = g->m - i0 < mr ? g->m - i0 : mr;
    const float *b = b_at(g, j0, k0);
    float *c = g->c + (ptrdiff_t)i0 * g->rs_c + (ptrdiff_t)j0 * g->cs_c;
    /* The kernel stores the tile itself when C (and z) has unit column stride, or unit
     * row stride (column-major, tile_ep.trans) for a kernel that can transpose. */
    const bool trans = stores_trans(g->kern, g->rs_c, g->cs_c);
    const bool z_fast = g->ep.z == NULL || (trans ? g->ep.rs_z == 1 : g->ep.cs_z == 1);

    if (rows == mr && (g->cs_c == 1 || trans) && z_fast) {
        cf_sgemm_tile_ep tep = {.trans = trans, .accumulate = accumulate};
        if (first && g->ep.z != NULL) {
            tep.z = g->ep.z + (ptrdiff_t)i0 * g->ep.rs_z + (ptrdiff_t)j0 * g->ep.cs_z;
            tep.ldz = (size_t)(trans ? g->ep.cs_z : g->ep.rs_z);
        }
        if (last) {
            if (g->ep.bias != NULL) {
                if (g->ep.bias_per_col)
                    tep.bias_col = g->ep.bias + j0;
                else
                    tep.bias_row = g->ep.bias + i0;
            }
            tep.clamp = g->clamp;
            tep.lo = g->ep.alpha;
            tep.hi = g->ep.beta;
        }
        g->kern->ukernel(kc, a, a_rs, a_ks, b, g->ldb, g->b_panel, c,
                         (size_t)(trans ? g->cs_c : g->rs_c), cols, &tep);
        if (last && g->act_after) {
            for (size_t r = 0; r < mr; r++)
                for (size_t j = 0; j < cols; j++) {
                    float *cp = c + (ptrdiff_t)r * g->rs_c + (ptrdiff_t)j * g->cs_c;
                    *cp = cf_activate(*cp, g->ep.act, g->ep.alpha, g->ep.beta);
                }
        }
        return;
    }
    for (size_t j = j0, je; j < j0 + cols; j = je) {
        je = (j / nr + 1) * nr;
        je = je < j0 + cols ? je : j0 + cols;
        scratch_tile(g, i0, j, je - j, k0, kc, first, last, rows, a, a_rs, a_ks);
    }
}

/* Asks for rows [r0, r1) of the B tile at column j (K slice from k0) into L2: its
 * columns up to the end of j's panel and of B (B read in place ends at column n). */
static void prefetch_b_rows(const gemm_job *g, size_t j, size_t k0, size_t r0, size_t r1)
{
    const size_t nr = (size_t)g->kern->nr;
    const float *b = g->pb + j / nr * g->b_panel + j % nr + k0 * g->ldb;
    size_t cols = nr - j % nr < g->n - j ? nr - j % nr : g->n - j;
    for (size_t r = r0; r < r1; r++)
        cf_prefetch_l2_run(b + r * g->ldb, cols * sizeof(float));
}

/* Floats of the stack buffer of gemm_task_repack (64 KB): one column panel of B.
 * choose_kc keeps a panel within 5/6 of L1, so this holds one for an L1 of up to 64 KB;
 * with a larger L1 the panels stay in place. */
#define REPACK_FLOATS 16384

/* B's row stride from which gemm_task_repack pays (rows of 1024 floats and more: NCHW
 * maps of 32x32 pixels and larger). */
#define REPACK_ROW_BYTES 4096

/* gemm_task for B read in place from rows far apart (an NCHW X as the B of a 1x1
 * convolution, a row per input channel): each column panel is copied into a packed panel
 * on the stack, then multiplied by every row panel of the task's A (BLIS order: the
 * packed panel stays in L1, A comes from L2), while each product asks for its share of
 * the next panel's rows, so they arrive from memory during the FMAs.  Read in place, each
 * k step of the microkernel loads from another row, and on an Intel Xeon that costs it
 * up to 30% of its FMA rate even with every row in L2 (a B panel of 256 rows 66 KB apart:
 * 148 against 211 GFLOP/s, one core; 3 KB apart: 197).  A is packed. */
static __attribute__((noinline)) void gemm_task_repack(const gemm_job *g, size_t p0, size_t p1,
                                                       size_t c0, size_t c1)
{
    const size_t mr = (size_t)g->kern->mr, nr = (size_t)g->kern->nr;
    _Alignas(64) float panel[REPACK_FLOATS];
    gemm_job lg = *g;
    lg.ldb = nr;
    const size_t passes = p1 - p0;
    for (size_t k0 = 0; k0 < g->k; k0 += g->kc) {
        const size_t kc = g->k - k0 < g->kc ? g->k - k0 : g->kc;
        lg.b_panel = kc * nr;
        lg.b_k0 = k0;
        for (size_t j = c0, je; j < c1; j = je) {
            je = (j / nr + 1) * nr;
            je = je < c1 ? je : c1;
            cf_sgemm_pack_b_panel(g->kern, kc, je - j, b_at(g, j, k0), g->ldb, 1, panel);
            lg.pb = panel;
            lg.b_j0 = j;
            for (size_t p = p0; p < p1; p++) {
                if (p + 1 < p1 && j == c0)
                    cf_prefetch_l2_run(g->pa + (p + 1) * g->a_panel + k0 * mr,
                                       kc * mr * sizeof(float));
                do_tiles(&lg, p * mr, j, je - j, k0, kc, g->pa + p * g->a_panel + k0 * mr, 1,
                         mr);
                if (je < c1)
                    prefetch_b_rows(g, je, k0, kc * (p - p0) / passes,
                                    kc * (p - p0 + 1) / passes);
            }
        }
    }
}

/* The task's block of C, row panels [p0, p1) and columns [c0, c1), in groups of B
 * column panels (the loop nest at the top of this file). */
static __attribute__((noinline)) void gemm_task_groups(const gemm_job *g, size_t p0, size_t p1,
                                                       size_t c0, size_t c1)
{
    const size_t mr = (size_t)g->kern->mr, nr = (size_t)g->kern->nr;
    _Alignas(64) float a_rows[CF_SGEMM_MR_MAX * KC_LIMIT];
    for (size_t k0 = 0; k0 < g->k; k0 += g->kc) {
        size_t kc = g->k - k0 < g->kc ? g->k - k0 : g->kc;
        /* B column panels in groups that stay in L2 together; within a group, C is
         * walked row block by row block, so it is written as a few long sequential
         * streams (this matters when K is short and C traffic dominates).  A group of
         * one panel is the BLIS order: the B micro-panel stays in L1 across A panels. */
        const bool a_packed = g->a_rs == 1 && g->a_ks == mr;
        const bool a_beyond_l2 = a_packed && (p1 - p0) * kc * mr * sizeof(float) > g->b_block_max;
        size_t group = g->b_group_max / (kc * nr * sizeof(float));
        group = group < 1 ? 1 : group;
        const size_t passes = p1 - p0;
        for (size_t cg = c0; cg < c1; cg += group * nr) {
            size_t ce = c1 - cg < group * nr ? c1 : cg + group * nr;
            /* Streaming B: the first MR panel waits for the group to arrive; the others
             * compute from L2 and each asks for its share of the next group's rows, so
             * that group's arrival overlaps their FMAs (YOLOv5s's c64 k32 1x1 on 160x160
             * at N=8: 5.2 -> 3.1 ms). */
            const bool fetch_next = g->b_stream && passes > 1 && ce < c1;
            for (size_t p = p0; p < p1; p++) {
                const size_t share = p - p0, r0 = share ? kc * (share - 1) / (passes - 1) : 0,
                             r1 = share ? kc * share / (passes - 1) : 0;
                /* The next packed A micro-panel lies K * MR floats further on; where A
                 * comes from beyond L2 the hardware prefetcher restarts cold at every such
                 * jump, so fetch it while this one computes: for every group when A is
                 * larger than L2, and otherwise for the first, which reads A from
                 * wherever the last execution left it: in a network's pass, memory
                 * (ResNet-50's 1x1 layers on this algorithm, in a pass, 2 threads, Xeon:
                 * 0.964-1.007x their time without, four runs). */
                if (a_packed && (a_beyond_l2 || cg == c0) && p + 1 < p1)
                    cf_prefetch_l2_run(g->pa + (p + 1) * g->a_panel + k0 * mr,
                                       kc * mr * sizeof(float));
                const float *a = g->pa + p * g->a_panel + k0 * g->a_ks;
                size_t a_rs = g->a_rs, a_ks = g->a_ks;
                size_t rows = g->m - p * mr < mr ? g->m - p * mr : mr;
                if (rows < mr && !(a_rs == 1 && a_ks == mr)) {
                    /* A read in place has no zero rows past m: copy the rows there
                     * are into a packed panel, once for all the panel's tiles. */
                    for (size_t kk = 0; kk < kc; kk++)
                        for (size_t r = 0; r < mr; r++)
                            a_rows[kk * mr + r] = r < rows ? a[r * a_rs + kk * a_ks] : 0.0f;
                    a = a_rows;
                    a_rs = 1;
                    a_ks = mr;
                }
                /* The group's whole column panels in one call (do_tiles), after the
                 * part of one where a block starts inside it; when streaming B, in runs
                 * of STREAM_RUN panels, each followed by its tiles' shares of the next
                 * group's fetch. */
                for (size_t j = cg, je; j < ce; j = je) {
                    je = j % nr != 0 ? (j / nr + 1) * nr
                         : fetch_next ? j + STREAM_RUN * nr : ce;
                    je = je < ce ? je : ce;
                    do_tiles(g, p * mr, j, je - j, k0, kc, a, a_rs, a_ks);
                    for (size_t t = j; fetch_next && share > 0 && t < je; t = (t / nr + 1) * nr)
                        if (ce + (t - cg) < c1)
                            prefetch_b_rows(g, ce + (t - cg), k0, r0, r1);
                }
            }
        }
    }
}

/* One task of the grid: a block of row panels times a block of columns.  Each path is
 * its own function, so that only one path's stack buffer is ever on the stack. */
static void gemm_task(void *arg, size_t index)
{
    const gemm_job *g = arg;
    size_t ib = index / g->nblocks, jb = index % g->nblocks;
    size_t p0 = g->mpanels * ib / g->mblocks, p1 = g->mpanels * (ib + 1) / g->mblocks;
    size_t c0 = g->nunits * jb / g->nblocks * g->unit;
    size_t c1 = g->nunits * (jb + 1) / g->nblocks * g->unit;
    c1 = c1 < g->n ? c1 : g->n;
    if (g->b_repack)
        gemm_task_repack(g, p0, p1, c0, c1);
    else
        gemm_task_groups(g, p0, p1, c0, c1);
}

/* C = epilogue(0 [+ C]) when there is no product to compute. */
static void epilogue_only(size_t m, size_t n, float *c, ptrdiff_t rs_c, ptrdiff_t cs_c,
                          const cf_sgemm_epilogue *ep)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            float *cp = c + (ptrdiff_t)i * rs_c + (ptrdiff_t)j * cs_c;
            *cp = finish_value(ep, ep->accumulate ? *cp : 0.0f, i, j);
        }
}

/* K slice: the B micro-panel (KC x NR) in two thirds of L1, the rest for the A
 * micro-panel (a K of 256 is then one slice: 2-8% faster on ResNet-50's res4 1x1 layers
 * than two, whose second pass re-reads C; three quarters measured no better); slices
 * balanced so the last one is not a sliver.
 * A column-major C stored by the kernel (`trans`) is sliced only past KC_LIMIT: each
 * further slice transposes the tile again and reloads it from C's scattered columns,
 * which costs more than streaming the B panel from L2 (5-9% faster on the 7x7 and 14x14
 * 1x1 layers of ResNet-50 and MobileNetV2 whose K is 384 to 2048, one thread). */
static size_t choose_kc(const cf_sgemm_kernel *kern, size_t k, bool trans)
{
    size_t kc_max = cf_cpu_caches()->l1d * 2 / 3 / ((size_t)kern->nr * sizeof(float));
    if (kc_max < 64)
        kc_max = 64;
    if (trans || kc_max > KC_LIMIT * 4 / 5)
        kc_max = KC_LIMIT * 4 / 5; /* so that kc <= KC_LIMIT below */
    if (k <= kc_max + kc_max / 4)
        return k;
    size_t slices = (k + kc_max - 1) / kc_max;
    return round_up((k + slices - 1) / slices, 8);
}

/* The number of blocks, at least `want` (or every panel its own block), into which
 * `panels` divide evenly. */
static size_t even_blocks(size_t panels, size_t want)
{
    for (size_t b = want; b < panels; b++)
        if (panels % b == 0)
            return b;
    return panels;
}

/* The product for every form of the operands: row panel p of A starts at
 * a + p * a_panel with A(r, kk) at [r * a_rs + kk * a_ks]; column panel q of B starts at
 * b + q * b_panel, rows ldb apart. */
static void run_gemm(const cf_sgemm_kernel *kern, size_t m, size_t n, size_t k,
                     const float *a, size_t a_rs, size_t a_ks, size_t a_panel,
                     const float *b, size_t ldb, size_t b_panel, bool b_in_place,
                     float *c, ptrdiff_t rs_c, ptrdiff_t cs_c, const cf_sgemm_epilogue *ep,
                     cf_threadpool *pool)
{
    static const cf_sgemm_epilogue plain = {0};
    if (ep == NULL)
        ep = &plain;
    if (m == 0 || n == 0)
        return;
    if (k == 0) {
        epilogue_only(m, n, c, rs_c, cs_c, ep);
        return;
    }
    gemm_job g = {.kern = kern, .m = m, .n = n, .k = k, .pa = a, .a_rs = a_rs, .a_ks = a_ks,
                  .a_panel = a_panel, .pb = b, .ldb = ldb, .b_panel = b_panel, .c = c,
                  .rs_c = rs_c, .cs_c = cs_c, .ep = *ep};
    if (ep->act == CONVFIND_ACT_RELU)
        g.clamp = CF_SGEMM_CLAMP_RELU;
    else if (ep->act == CONVFIND_ACT_CLIP)
        g.clamp = CF_SGEMM_CLAMP_CLIP;
    else
        g.act_after = ep->act != CONVFIND_ACT_NONE;
    g.kc = choose_kc(kern, k, stores_trans(kern, rs_c, cs_c));
    g.b_block_max = cf_cpu_caches()->l2 / 2;

    const size_t mr = (size_t)kern->mr;
    g.mpanels = (m + mr - 1) / mr;
    g.npanels = (n + (size_t)kern->nr - 1) / (size_t)kern->nr;
    size_t mc_panels = cf_cpu_caches()->l2 / 2 / (g.kc * mr * sizeof(float));
    if (mc_panels < 1)
        mc_panels = 1;
    /* One task per thread, all of equal size (smaller tasks, 4 per thread, measured up
     * to 10% slower on 2 threads: each task walks its panels of A and B again), splitting
     * the larger of M and N first: every task then reads its own part of the larger
     * operand (the weights of a convolution with few pixels, the activations of one with
     * many) and all of the smaller one, shared through L2/L3, so the larger one is read
     * only once.  When column panels do not divide among the threads (the 5 panels of 160
     * channels), half panels may (10 halves: 2 blocks of 2.5 panels); failing that the
     * other dimension is split too. */
    /* A product too small to share runs as one task on the calling thread: handing half
     * of it to a worker costs more than it saves (a spinning worker's hand-over is about
     * a microsecond, a sleeping one's far more), as in squeeze-and-excite layers of
     * 2-19 thousand multiply-adds (2026-12-05: 1.1-1.8 us on one thread, 1.2-2.0 on two). */
    const size_t threads = m * n * k < CF_SGEMM_SHARE_MIN_MACS ? 1
                                                                : (size_t)cf_threadpool_size(pool);
    const bool m_first = m >= n;
    g.unit = (size_t)kern->nr;
    g.nunits = g.npanels;
    size_t first = even_blocks(m_first ? g.mpanels : g.npanels, threads), other = 1;
    if (!m_first && first % threads != 0) {
        size_t half = g.unit / 2, halves = (n + half - 1) / half;
        if (even_blocks(halves, threads) % threads == 0) {
            g.unit = half;
            g.nunits = halves;
            first = even_blocks(halves, threads);
        }
    }
    if (first % threads != 0) {
        size_t po = m_first ? g.nunits : g.mpanels;
        other = threads < po ? threads : po;
    }
    g.mblocks = m_first ? first : other;
    g.nblocks = m_first ? other : first;
    /* Each task's MC x KC block of A in half of L2, in a task count that still gives every
     * thread the same share: 5 blocks of ResNet-50's 2048-channel 1x1 on 7x7 at AVX2 left
     * one thread 3 of them, and 2 threads took 0.6-0.7x one thread's time, not 0.5. */
    size_t mblocks_l2 = (g.mpanels + mc_panels - 1) / mc_panels;
    if (g.mblocks < mblocks_l2) {
        g.mblocks = mblocks_l2;
        while (g.mblocks < g.mpanels && g.mblocks * g.nblocks % threads != 0)
            g.mblocks++;
    }
    /* A task whose B slice is beyond half of L2 reads it from L3 or memory, group after
     * group: in groups of an eighth of L2, so the next one fits beside it as it arrives.
     * Smaller B keeps groups of half of L2: split finer, C's rows are written in shorter
     * runs and A is walked more often, for nothing to overlap (MobileNetV2's and
     * EfficientNet's c64-c144 k24 projections on 56x56 measured up to 1.16x slower). */
    const size_t task_cols = (g.n + g.nblocks - 1) / g.nblocks;
    g.b_stream = g.kc * task_cols * sizeof(float) > g.b_block_max;
    g.b_group_max = g.b_stream ? cf_cpu_caches()->l2 / 8 : g.b_block_max;
    /* B read in place from rows far apart is copied a panel at a time (gemm_task_repack)
     * where each copied float serves 128 FMAs or more and the K loop is long.  On the 1x1
     * layers of 40x40 to 80x80 maps, each timed in turns with the other form (Xeon, strict
     * fp32): DenseNet-121's c96-c256 k128 0.79-0.93x the time, ResNeXt-50's k256 0.85-0.86x,
     * YOLOv5s's k128-k255 0.94-0.97x at 2 threads; 0.90-0.96x on one thread; 0.87-0.97x at
     * AVX2.  With fewer rows it cost more than it saved (c256 k64 on 129x129 1.07x, c192 k32
     * on 35x35 1.5x), and with a short K as well (MobileNetV3's and EfficientNet's 1x1
     * layers of 16 to 32 input channels on 112x112 maps, 1.3-1.6x; not analysed further). */
    g.b_repack = b_in_place && ldb * sizeof(float) >= REPACK_ROW_BYTES && a_rs == 1 &&
                 a_ks == mr && m >= 128 && k >= 96 && g.kc * (size_t)kern->nr <= REPACK_FLOATS;
    cf_parallel_for(pool, g.mblocks * g.nblocks, gemm_task, &g);
}

void cf_sgemm_packed(const cf_sgemm_kernel *kern, size_t m, size_t n, size_t k,
                     const float *packed_a, const float *packed_b, float *c,
                     ptrdiff_t rs_c, ptrdiff_t cs_c, const cf_sgemm_epilogue *ep,
                     cf_threadpool *pool)
{
    const size_t mr = (size_t)kern->mr, nr = (size_t)kern->nr;
    run_gemm(kern, m, n, k, packed_a, 1, mr, k * mr, packed_b, nr, k * nr, false, c, rs_c, cs_c,
             ep, pool);
}

void cf_sgemm_compute(const cf_sgemm_kernel *kern, size_t m, size_t n, size_t k,
                      cf_sgemm_operand a, cf_sgemm_operand b, float *c, ptrdiff_t rs_c,
                      ptrdiff_t cs_c, const cf_sgemm_epilogue *ep, cf_threadpool *pool)
{
    const size_t mr = (size_t)kern->mr, nr = (size_t)kern->nr;
    if (a.packed)
        a.rs = 1, a.cs = mr;
    run_gemm(kern, m, n, k, a.p, a.rs, a.cs, a.packed ? k * mr : mr * a.rs, b.p,
             b.packed ? nr : b.rs, b.packed ? k * nr : nr, !b.packed, c, rs_c, cs_c, ep, pool);
}

convfind_status cf_sgemm_workspace(cf_isa isa, size_t m, size_t n, size_t k, size_t *bytes)
{
    const cf_sgemm_kernel *kern = cf_kernel_table_for(isa)->sgemm;
    bool overflow = false;
    size_t fa = cf_sgemm_packed_a_floats(kern, m, k, &overflow);
    size_t fb = cf_sgemm_packed_b_floats(kern, k, n, &overflow);
    if (overflow || fa > SIZE_MAX / sizeof(float) / 2 || fb > SIZE_MAX / sizeof(float) / 2)
        return cf_fail(CONVFIND_ERR_OVERFLOW,
                       "sgemm workspace for m=%zu n=%zu k=%zu does not fit in size_t", m, n, k);
    *bytes = round_up(fa * sizeof(float), 64) + fb * sizeof(float);
    return CONVFIND_OK;
}

convfind_status cf_sgemm(cf_isa isa, size_t m, size_t n, size_t k,
                         const float *a, ptrdiff_t rs_a, ptrdiff_t cs_a,
                         const float *b, ptrdiff_t rs_b, ptrdiff_t cs_b,
                         float *c, ptrdiff_t rs_c, ptrdiff_t cs_c,
                         const cf_sgemm_epilogue *ep, void *workspace, size_t workspace_size,
                         cf_threadpool *pool)
{
    if (m == 0 || n == 0)
        return CONVFIND_OK;
    if (c == NULL || (k > 0 && (a == NULL || b == NULL)))
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "sgemm: %s is NULL",
                       c == NULL ? "C" : (a == NULL ? "A" : "B"));
    size_t need = 0;
    convfind_status st = cf_sgemm_workspace(isa, m, n, k, &need);
    if (st != CONVFIND_OK)
        return st;
    if (need > 0 && workspace == NULL)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "sgemm: workspace is NULL, %zu bytes needed",
                       need);
    if (workspace_size < need)
        return cf_fail(CONVFIND_ERR_INVALID_SHAPE,
                       "sgemm: workspace of %zu bytes is smaller than the %zu needed for "
                       "m=%zu n=%zu k=%zu", workspace_size, need, m, n, k);
    const cf_sgemm_kernel *kern = cf_kernel_table_for(isa)->sgemm;
    float *pa = workspace;
    float *pb = (float *)((char *)workspace +
                          round_up(cf_sgemm_packed_a_floats(kern, m, k, NULL) * sizeof(float), 64));
    if (k > 0) {
        cf_sgemm_pack_a(kern, m, k, a, rs_a, cs_a, pa);
        cf_sgemm_pack_b(kern, k, n, b, rs_b, cs_b, pb, pool);
    }
    cf_sgemm_packed(kern, m, n, k, pa, pb, c, rs_c, cs_c, ep, pool);
    return CONVFIND_OK;
}
