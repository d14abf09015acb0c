/*
 * direct_blocked.c - "cpu.direct_blocked": direct convolution in a channel-blocked
 * layout with register-blocked tile kernels (direct_blocked.h describes the layouts).
 *
 * One execution: (1) pack the weights unless the caller passed packed ones made at the
 * active ISA level, (2) copy X into the padded, blocked, phase-split layout (for a 1x1
 * kernel without padding: only the pixels it reads, densely; on NCHW with whole blocks
 * of channels and X within L2, for a 1x1 of stride 1 or a kernel of stride 1 or 2 along
 * W whose tiles read W padding only with their end pixels: nothing, the tiles read X's
 * channel rows where they are; for a 2-D input many times L2: a slab of rows at a time, each
 * computed at once, see dbk_slabs), (3) run one task per
 * (image, group, group of output blocks, band of the output plane): each walks its band
 * in tiles whose sums stay in registers over a share of the reduction (as many input
 * blocks or taps as keep their weights in a quarter of L2, or for tiles of few pixels in
 * half of L1; a few tiles take turns with each share), then
 * applies bias, residual and activation while storing into Y's own layout.  A tile
 * leaves out the taps whose input is all padding (exactly along D and H, where it is one
 * output row; along W for all of its pixels), so the padding rows are never read, nor
 * written in step (2): atrous layers on small maps (DeepLabV3's rates 6 to 18 on 33x33)
 * skip most of their products, other padded layers a few.  Along W the kernel also
 * leaves out the products of a tile's first and last pixel with the taps that read W's
 * padding there (cf_dbk_tile.skip_first): a tenth of a 3x3's products on 7-pixel rows,
 * a twentieth on 14-pixel ones.  Bands are as large as
 * the thread count allows, so on small planes (7x7, 14x14) each task owns whole output
 * planes: its weights are read by one thread, its stores share no cache line with
 * another task's.  Where even that leaves one tile per task (few output blocks on a small
 * plane), bands take several tiles and the reduction is split among the threads instead
 * (dbk_execute).  Steps (1) and (2) are cheap next to (3) for the layers this
 * algorithm is meant for (reduction lengths of hundreds to thousands per output); Find
 * measures the rest.
 *
 * Conv only, f32, any kernel size, stride, dilation and asymmetric padding, 1-D to 3-D,
 * as long as the padded input stays within cf_geom3_bounded (geom3.h).
 * Grouped convolutions need whole blocks per group (channels per group multiples of 16,
 * which suits every ISA's block); group 1 takes any channel counts and pads them.
 * The ISA level is read at every execution, so forcing a level (tests) takes effect at
 * once; packed weights remember their block size and are repacked into the workspace
 * when they do not match.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "algo/algo.h"
#include "cpu/direct_blocked.h"
#include "cpu/geom3.h"
#include "cpu/kernel_table.h"
#include "cpu/workspace.h"
#include "util/error.h"
#include "util/prefetch.h"
#include "util/shares.h"

/* Channel count of groups > 1 must be a multiple of this (every ISA's block divides it). */
#define DBK_GROUP_ALIGN 16

/* The vector length at which a stride-1 1x1 on NCHW reads X in place (dbk_geom_of):
 * AVX-512's.  At AVX2 (8 lanes) reading in place measured 1.04-1.16x the time of the
 * blocked copy (Inception-v3's 17x17 and 8x8, ResNet-50's 7x7 1x1 layers, 2 threads, Xeon,
 * forced, in turns), where at 16 lanes the same layers took 0.82-0.91x. */
#define DBK_IN_PLACE_VL 16

/* Everything about the blocked layouts that follows from the problem and VL.
 *
 * A 1x1 kernel without padding ("flat") reads exactly one input pixel per output pixel,
 * so its blocked input holds only those pixels, densely in output order: the output
 * plane becomes one row of out_sp pixels, tiles run across the rows of the image (a 7x7
 * plane is 4 tiles of 13 instead of 7 of 7), and a strided 1x1 converts only the pixels
 * it reads.  Other kernels keep the padded, phase-split rows of direct_blocked.h. */
typedef struct dbk_geom {
    int vl;
    cf_geom3 s;
    bool flat;
    bool flat_unit;            /* flat, every axis as long as its output: X's plane is Y's */
    bool in_place;             /* flat_unit, or stride 1 or 2 along W with tiles that read
                                * W padding only with their end pixels, in NCHW with whole
                                * blocks, at 16 lanes, X within L2 (dbk_geom_of): the tiles
                                * read X where it is, a row per channel, and nothing is
                                * converted */
    int64_t groups, cbg, mbg;  /* groups, input / output blocks per group */
    int64_t cg, mg;            /* channels per group */
    int64_t ntaps;
    int64_t dp, hp, wq;        /* padded input depth, height, per-phase width */
    int64_t nph;               /* stride phases stored per row (1 when flat) */
    int64_t rs;                /* floats per blocked input row (all phases) */
    int64_t x_cb;              /* floats per input block */
    int64_t rows, row_len;     /* output rows per image as the tiles see them, pixels each */
    int64_t crows;             /* input rows converted per block (see dbk_convert_rows) */
} dbk_geom;

/* Tiles that take turns with each share of the reduction (see dbk_choose_share): each
 * more tile divides the share's weight traffic from beyond the share's cache further, and
 * 8 keeps their input rows and partial sums (up to 8 x 1.8 KB) in L1.  DBK_SLOT_MAX is
 * the floats of one tile's partial sums at most: nb x np accumulators of VL floats,
 * nb x np <= 2 x CF_DBK_MAX_NP on every ISA (28 zmm on AVX-512, 14 ymm on AVX2; checked
 * in dbk_execute), VL <= 16. */
#define DBK_SHARE_TILES 8

/* How large a share is (dbk_execute, fit_taps).  Every share boundary costs each tile a
 * store and a reload of its partial sums and a call of the tile kernel, so shares are as
 * long as the weights' cache allows.  A tile of np pixels loads 4 / np bytes of weights
 * per multiply-add; from DBK_SHARE_L2_NP pixels on (at most a third of a byte: 11 bytes a
 * cycle at 32 multiply-adds a cycle, two AVX-512 FMAs) L2 feeds them as fast as the FMAs
 * use them, and the share's weights are kept within 1 / DBK_SHARE_L2_PART of L2, leaving
 * room for the next share's, asked for ahead (dbk_weights_ahead), and for the tiles' rows.
 * Where 512-bit FMAs run at half that rate (16 multiply-adds a cycle: Zen 4;
 * cf_cpu_fma512_full_rate), tiles of DBK_SHARE_L2_NP_HALF pixels ask L2 for at most 9
 * bytes a cycle, and the 16-lane tiles get L2 shares from there.
 * Narrower tiles keep their shares within half of L1, where all the tiles taking turns
 * read them.  Against L1 shares for every tile, each layer alone, 2 threads, the fastest
 * of 5 to 6 runs of 30 in turns: on the Zen 4 (16 multiply-adds a cycle) DenseNet-121's
 * 128 -> 32 3x3 0.72-0.95x, ResNet-50's stride-2 3x3 on 14-pixel tiles 0.95x, R3D-18's
 * and DeepSpeech2's 0.96-0.98x, and tiles of 7 to 9 pixels gained too (Inception-v3's
 * 17x17 layers 0.86-0.91x); on the Intel Xeon (32) those narrower tiles lost (wav2vec2's
 * c512 k3, 9 pixels, 1.15x; ResNet-50's res5 stride-2 3x3, 7 pixels, 1.20x), and the
 * 14-pixel ones took 0.93-0.99x but for two stride-2 3x3 layers (ResNet-50's res3 1.13x,
 * YOLOv5s's 1.05x) in that host's noise (about 15% between runs).  At AVX2 L2 shares for
 * tiles of 4 and 6 pixels took R3D-18's 3x3x3 and wav2vec2's layer 1.08-1.09x on one
 * thread (Zen 4). */
#define DBK_SHARE_L2_NP 12
#define DBK_SHARE_L2_NP_HALF 7
#define DBK_SHARE_L2_PART 4
#define DBK_SLOT_MAX (2 * CF_DBK_MAX_NP * 16)

/* Splitting the reduction (dbk_execute): at most this many parts, and only for outputs
 * whose tiles' partial sums are at most DBK_SPLIT_FLOATS floats, for which the
 * workspace keeps room for every part's. */
#define DBK_SPLIT_MAX 4
#define DBK_SPLIT_FLOATS 16384

/* Multiply-adds below which a part of a split reduction does not pay for the threads it
 * wakes: EfficientNet-B0's one-pixel squeeze layers (10-20 thousand) ran in 0.8 us on
 * one thread and in 2.4 us split in two. */
#define DBK_SPLIT_MIN_MACS 65536

/* Workspace parts, in order: blocked input, tap offsets, packed weights and, where the
 * reduction may be split (`split`), each part's partial sums and a counter per band. */
typedef struct dbk_ws {
    size_t x, tap, w, part, done;
    int nb, np;        /* the tile (dbk_choose_tile) the partial sums are sized for */
    bool split;
    cf_ws total;
} dbk_ws;

/* Estimated cycles of one input-channel step of an nb x np tile: nb * np FMAs on two
 * pipes, nb weight loads and np broadcasts on two load ports, and at least the FMA
 * latency (about 4 cycles), which every accumulator's dependency chain must cover. */
static double dbk_step_cost(int nb, int np)
{
    double fma = nb * np / 2.0, ld = (nb + np) / 2.0, c = fma > ld ? fma : ld;
    return c > 4.0 ? c : 4.0;
}

/* Picks the tile with the lowest estimated time over the whole output: every group of
 * nb output blocks (the last one may be smaller) times every tile of a row (balanced
 * pixel runs, the last may be shorter).  Ties go to more accumulators, then to more
 * output blocks, which load fewer broadcasts per FMA. */
static void dbk_choose_tile(const cf_dbk_kernels *k, const dbk_geom *g, int *nb_out, int *np_out)
{
    int best_nb = 1, best_np = 1;
    double best = 0.0;
    int64_t len = g->row_len;
    for (int nb = 1; nb <= 4 && (nb == 1 || nb <= g->mbg); nb++) {
        int64_t tiles = (len + k->max_np[nb] - 1) / k->max_np[nb];
        int np = (int)((len + tiles - 1) / tiles);
        tiles = (len + np - 1) / np;
        int last = (int)(len - (tiles - 1) * np);
        int rem = (int)(g->mbg % nb);
        double cost = (double)(g->mbg / nb) *
                      ((double)(tiles - 1) * dbk_step_cost(nb, np) + dbk_step_cost(nb, last));
        if (rem)
            cost += (double)(tiles - 1) * dbk_step_cost(rem, np) + dbk_step_cost(rem, last);
        if (nb == 1 || cost < best || (cost == best && nb * np >= best_nb * best_np)) {
            best = cost;
            best_nb = nb;
            best_np = np;
        }
    }
    *nb_out = best_nb;
    *np_out = best_np;
}

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
    g.flat = g.flat_unit = true;
    for (int a = 0; a < 3; a++) {
        /* No padding at either end: every output reads a pixel of X. */
        g.flat = g.flat && g.s.k[a] == 1 && g.s.pad[a] == 0 &&
                 (g.s.out[a] - 1) * g.s.stride[a] < g.s.in[a];
        /* Not stride 1: geom3 gives an axis of one output stride 1 whatever its input. */
        g.flat_unit = g.flat_unit && g.s.in[a] == g.s.out[a];
    }
    g.flat_unit = g.flat_unit && g.flat;
    /* In place only while one image and group's X fits in L2: its rows are read again
     * for every group of output blocks, and beyond L2 they come back as hundreds of short
     * runs a page or more apart, where the blocked copy is a few long streams (2 threads,
     * Xeon, L2 2 MiB, forced, against the copy: Inception-v3's 35x35 layers, 1.0-1.4 MB
     * of X, 0.79-0.83x the time; YOLOv5s's 128 -> 64 on 80x80, 3.3 MB, 1.12x, and
     * DeepLabV3's 512 -> 128 on 65x65, 8.6 MB, 1.5x; ResNet-50's 256 -> 64 on 56x56,
     * 3.2 MB, 0.95x, is left out by this bound). */
    /* A kernel of stride 1 or 2 along W reads X in place too where a tile's taps read
     * W padding only with its first or last pixel (at most `stride` pixels of padding
     * read at each end), whose products with them the kernel leaves out
     * (cf_dbk_tile.skip_first); the taps whose D or H position is padding are left out of
     * the tile (dbk_tile_at). */
    const int64_t sw = g.s.stride[2];
    const int64_t pad_end_w = (g.s.out[2] - 1) * sw + (g.s.k[2] - 1) * g.s.dil[2] + 1 -
                              g.s.pad[2] - g.s.in[2];
    const bool rows_in_place = !g.flat && sw <= 2 && g.s.pad[2] <= sw && pad_end_w <= sw &&
                               g.s.k[2] <= 64;
    g.in_place = vl == DBK_IN_PLACE_VL && (g.flat_unit || rows_in_place) &&
                 p->layout == CONVFIND_LAYOUT_NCHW && g.cg % vl == 0 &&
                 (double)g.cg * (double)p->in_sp * sizeof(float) <= (double)cf_cpu_caches()->l2;
    if (g.flat) {
        int64_t out_sp = g.s.out[0] * g.s.out[1] * g.s.out[2];
        g.dp = g.hp = 1;
        g.wq = out_sp;
        g.nph = 1;
        g.rs = out_sp * vl;
        g.rows = 1;
        g.row_len = out_sp;
        /* X's plane is Y's: converted as one run. */
        g.crows = g.flat_unit ? 1 : g.s.out[0] * g.s.out[1];
    } else {
        g.dp = cf_geom3_reach(&g.s, 0);
        g.hp = cf_geom3_reach(&g.s, 1);
        g.wq = (cf_geom3_reach(&g.s, 2) + g.s.stride[2] - 1) / g.s.stride[2];
        g.nph = g.s.stride[2];
        g.rs = g.nph * g.wq * vl;
        g.rows = g.s.out[0] * g.s.out[1];
        g.row_len = g.s.out[2];
        g.crows = g.dp * g.hp;
    }
    g.x_cb = g.dp * g.hp * g.rs;
    return g;
}

/* Output tiles per (image, group, group of output blocks) for tiles of np pixels. */
static int64_t dbk_tiles(const dbk_geom *g, int np)
{
    return g->rows * ((g->row_len + np - 1) / np);
}

/* Sizes the parts for one ISA level's kernels; overflow is reported through
 * ws->total.overflow. */
static dbk_ws dbk_ws_of(const cf_problem *p, const dbk_geom *g, const cf_dbk_kernels *k)
{
    dbk_ws w = {0};
    cf_ws *t = &w.total;
    size_t blocks = cf_ws_mul(t, (size_t)p->n, cf_ws_mul(t, (size_t)g->groups, (size_t)g->cbg));
    size_t per_block = cf_ws_mul(t, cf_ws_mul(t, (size_t)g->dp, (size_t)g->hp), (size_t)g->rs);
    size_t x_floats = g->in_place ? 0 : cf_ws_mul(t, blocks, per_block);
    size_t blocks_w = cf_ws_mul(t, (size_t)g->groups, cf_ws_mul(t, (size_t)g->mbg, (size_t)g->cbg));
    size_t w_floats =
        cf_ws_mul(t, cf_ws_mul(t, blocks_w, (size_t)g->ntaps), (size_t)(g->vl * g->vl));
    w.x = cf_ws_take(t, x_floats, sizeof(float));
    w.tap = cf_ws_take(t, (size_t)g->ntaps, sizeof(cf_dbk_tap));
    w.w = cf_ws_take(t, w_floats, sizeof(float));
    dbk_choose_tile(k, g, &w.nb, &w.np);
    const int nb = w.nb, np = w.np;
    size_t slots = cf_ws_mul(t, cf_ws_mul(t, (size_t)p->n, (size_t)g->groups),
                             cf_ws_mul(t, (size_t)((g->mbg + nb - 1) / nb),
                                       (size_t)dbk_tiles(g, np)));
    size_t floats = cf_ws_mul(t, slots, (size_t)(nb * np * g->vl));
    w.split = !t->overflow && floats <= DBK_SPLIT_FLOATS;
    if (w.split) {
        w.part = cf_ws_take(t, floats * DBK_SPLIT_MAX, sizeof(float));
        w.done = cf_ws_take(t, slots, sizeof(atomic_uint)); /* bands <= tiles */
    }
    return w;
}

static bool dbk_applicable(const cf_problem *p)
{
    if (p->op != CONVFIND_OP_CONV || p->dtype != CONVFIND_DTYPE_F32)
        return false;
    cf_geom3 s = cf_geom3_of(p);
    if (!cf_geom3_bounded(&s)) /* the blocked input holds the padded rows */
        return false;
    if (p->group == 1)
        return true;
    return cf_cin_per_group(p) % DBK_GROUP_ALIGN == 0 &&
           cf_cout_per_group(p) % DBK_GROUP_ALIGN == 0;
}

static convfind_status dbk_workspace(const cf_problem *p, size_t *bytes)
{
    /* The active level may change between planning and executing: size for every level. */
    size_t most = 0;
    for (int level = 0; level < CF_ISA_COUNT; level++) {
        const cf_dbk_kernels *k = cf_kernel_table_for((cf_isa)level)->direct_blocked;
        dbk_geom g = dbk_geom_of(p, k->vl);
        dbk_ws w = dbk_ws_of(p, &g, k);
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
    size_t bytes; /* of w */
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
    const cf_dbk_kernels *k = cf_kernel_table_active()->direct_blocked;
    dbk_geom g = dbk_geom_of(p, k->vl);
    dbk_ws ws = dbk_ws_of(p, &g, k);
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
    pk->bytes = floats * sizeof(float);
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

static size_t dbk_packed_extent(const cf_problem *p, const void *packed, const void **start)
{
    (void)p;
    const dbk_packed *pk = packed;
    *start = pk->w;
    return pk->bytes;
}

/* ---- input conversion ------------------------------------------------------------- */

/* Tasks per thread for both passes: enough for the pool's dynamic hand-out to balance
 * them, few enough that each task covers a long run of work (whole output planes for
 * small layers, so a block group's weights are read by one thread, once). */
#define DBK_TASKS_PER_THREAD 8

/* How many times the input's size the weights may be, per (image, group), for tasks to
 * split the output plane among the threads rather than the output blocks (dbk_execute).
 * Measured on the layers of 15 networks' N=1 suites that Find gives this algorithm,
 * 2 threads, Xeon, splitting the plane against the blocks: 3x3 stride 2 with weights up
 * to 2.8x the input 0.77-0.95x the time (YOLOv5s, ResNet-50, DeepLabV3, Inception-v3,
 * R3D-18), stride 1 0.94-1.09x (geometric mean 0.99x); Inception-v3's 17x17 1x7 and 7x1
 * layers, weights 3.4x the input, up to 1.07x; ResNet-50's 7x7 and 14x14 3x3, 18-57x,
 * 1.05-1.08x. */
#define DBK_WEIGHTS_PER_INPUT 3.0

/* The most claim slots the conversion shares are dealt over (util/shares.h): one per
 * compute task up to this many, a cache line each on the stack. */
#define DBK_CLAIM_SLOTS 64

typedef struct dbk_job {
    const cf_problem *p;
    const dbk_geom *g;
    const cf_dbk_kernels *k;
    const cf_exec_args *a;
    float *xb;
    const float *wp;
    const cf_dbk_tap *tap; /* every kernel tap, in W's order */
    int nb, np;        /* tile shape: output blocks per task, pixels per tile */
    int64_t fit_taps;  /* taps of nb output blocks whose weights fit a share */
    bool w_refetch;    /* a task's weights exceed half of L2: each run of its tiles reads
                        * them from beyond (dbk_weights_ahead) */
    int64_t nobg;      /* groups of nb output blocks per group */
    int64_t tpr;       /* tiles per output row */
    int64_t bands;     /* compute tasks per (image, group, block group), each a run of tiles */
    bool bands_outer;  /* within an (image, group), task indices run over block groups
                        * within bands, not over bands within block groups (dbk_execute) */
    int64_t ksplit;    /* parts the input blocks of the reduction are split into, each a
                        * run of tasks of its own (1: not split; dbk_execute) */
    size_t part_tasks; /* tasks per part: (image, group, block group, band) */
    float *kpart;      /* split: each part's partial sums per tile, [tile][part][slot] */
    atomic_uint *kdone; /* split: per (image, group, block group, band), parts finished */
    size_t tasks;      /* compute tasks in all */
    bool own_input;    /* each task reads only its (image, group)'s input blocks and
                        * converts them itself, just before it computes */
    size_t crows_all;  /* input rows to convert, all blocks of all images */
    size_t ctasks;     /* conversion shares they are split into */
    cf_share *claims;  /* the conversion shares dealt over nclaims slots (util/shares.h) */
    size_t nclaims;    /* claim slots: compute task i claims from slot i * nclaims / tasks */
    atomic_size_t converted;  /* conversion shares finished */
    /* Slabs instead of a blocked copy of all of X (dbk_slabs; slab_tasks 0: none). */
    size_t slab_tasks;  /* tasks, each with its own slab, in turn at the start of xb */
    size_t slab;        /* floats per slab */
    int64_t slab_rows;  /* padded input rows per input block in a slab */
    int64_t slab_out;   /* output rows computed from one slab at most */
    int64_t slab_parts; /* runs of output rows per (image, group), shared among the tasks */
} dbk_job;

/* Copies the pixels iw in [iw_lo, iw_hi) of one input row (src: that row's pixel 0 in
 * channel `lanes` of one block's first channel, X's own layout) to padded position
 * wp = iw + pad of dst, i.e. phase wp % sw, index wp / sw, keeping phases below nph. */
static void dbk_convert_run(const dbk_job *job, float *dst, const float *src, int lanes,
                            int64_t iw_lo, int64_t iw_hi, int64_t pad, int64_t sw, int64_t nph)
{
    const cf_problem *p = job->p;
    int vl = job->g->vl;
    int64_t wq = job->g->wq;
    if (p->layout != CONVFIND_LAYOUT_NHWC) {
        job->k->nchw_row(dst, src, (ptrdiff_t)p->in_sp, lanes, iw_lo, iw_hi, pad, sw, wq, nph);
        return;
    }
    /* Channels innermost: each pixel's lanes are one contiguous run of X. */
    int64_t wp = iw_lo + pad, ph = wp % sw, q = wp / sw;
    for (int64_t iw = iw_lo; iw < iw_hi; iw++) {
        if (ph < nph) {
            float *d = dst + (ph * wq + q) * vl;
            memcpy(d, src + iw * p->c, (size_t)lanes * sizeof(float));
            memset(d + lanes, 0, (size_t)(vl - lanes) * sizeof(float));
        }
        if (++ph == sw) {
            ph = 0;
            q++;
        }
    }
}

/* X at the first channel of input block `blk` (of all images' blocks, in order), with
 * its lanes (channels of that block that exist) and the floats between its pixels. */
static const float *dbk_block_src(const dbk_job *job, int64_t blk, int *lanes, ptrdiff_t *px)
{
    const cf_problem *p = job->p;
    const dbk_geom *g = job->g;
    int vl = g->vl;
    int64_t b = blk % (g->groups * g->cbg), n = blk / (g->groups * g->cbg);
    int64_t c0 = (b / g->cbg) * g->cg + (b % g->cbg) * vl; /* first channel of the block */
    *lanes = (int)(g->cg - (b % g->cbg) * vl < vl ? g->cg - (b % g->cbg) * vl : vl);
    bool nhwc = p->layout == CONVFIND_LAYOUT_NHWC;
    *px = nhwc ? (ptrdiff_t)p->c : 1;
    return (const float *)job->a->x + (nhwc ? n * p->in_sp * p->c + c0
                                            : (n * p->c + c0) * p->in_sp);
}

/* Converts padded input row `row` (of dp x hp) of input block `blk` into dst, that row's
 * place, for kernels other than flat ones. */
static void dbk_convert_padded_row(const dbk_job *job, int64_t blk, int64_t row, float *dst)
{
    const dbk_geom *g = job->g;
    const cf_geom3 *s = &g->s;
    int vl = g->vl;
    int64_t id = row / g->hp - s->pad[0], ih = row % g->hp - s->pad[1];
    if (id < 0 || id >= s->in[0] || ih < 0 || ih >= s->in[1])
        return; /* a padding row: no tile reads it (dbk_tile_at leaves out its taps) */
    int lanes;
    ptrdiff_t px;
    const float *x = dbk_block_src(job, blk, &lanes, &px);
    int64_t sw = s->stride[2], wp_max = g->wq * sw;
    int64_t iw_lo = s->pad[2] > 0 ? 0 : -s->pad[2];
    int64_t iw_hi = s->in[2] < wp_max - s->pad[2] ? s->in[2] : wp_max - s->pad[2];
    /* Zeros only where no input pixel lands: the padding at both ends of the row. */
    for (int64_t wp = 0; wp < wp_max; wp++)
        if (wp < iw_lo + s->pad[2] || wp >= iw_hi + s->pad[2] || iw_hi <= iw_lo)
            memset(dst + (wp % sw * g->wq + wp / sw) * vl, 0, (size_t)vl * sizeof(float));
    dbk_convert_run(job, dst, x + (id * s->in[1] + ih) * s->in[2] * px, lanes, iw_lo, iw_hi,
                    s->pad[2], sw, sw);
}

/* Converts input row `u` of all images' blocks (row u % crows of block u / crows) into
 * the blocked copy of X. */
static void dbk_convert_row(const dbk_job *job, int64_t u)
{
    const dbk_geom *g = job->g;
    const cf_geom3 *s = &g->s;
    int64_t row = u % g->crows, blk = u / g->crows;
    float *dst = job->xb + (size_t)blk * (size_t)g->x_cb;
    if (!g->flat) {
        dbk_convert_padded_row(job, blk, row, dst + row * g->rs);
        return;
    }
    /* Every converted pixel is read and every lane written: no zero fill. */
    int lanes;
    ptrdiff_t px;
    const float *x = dbk_block_src(job, blk, &lanes, &px);
    if (g->flat_unit) {
        dbk_convert_run(job, dst, x, lanes, 0, job->p->in_sp, 0, 1, 1);
        return;
    }
    int64_t od = row / s->out[1], oh = row % s->out[1];
    int64_t sp = (od * s->stride[0] * s->in[1] + oh * s->stride[1]) * s->in[2];
    dbk_convert_run(job, dst + row * s->out[2] * g->vl, x + sp * px, lanes, 0,
                    (s->out[2] - 1) * s->stride[2] + 1, 0, s->stride[2], 1);
}

/* One contiguous run of the input rows, an equal share of all of them, in the order the
 * compute tasks divide the input among themselves: by image, group and block, each
 * block's rows in turn; with bands_outer by image, group and row, each row of every
 * block of the group in turn, so that the first shares hold the top rows of every
 * block, which the first bands read. */
static void dbk_convert_share(const dbk_job *job, size_t index)
{
    const dbk_geom *g = job->g;
    const size_t cbg = (size_t)g->cbg, crows = (size_t)g->crows;
    size_t u0 = index * job->crows_all / job->ctasks;
    size_t u1 = (index + 1) * job->crows_all / job->ctasks;
    for (size_t u = u0; u < u1; u++) {
        size_t v = u; /* as dbk_convert_row counts: (block of all images) * crows + row */
        if (job->bands_outer) {
            size_t ng = u / (crows * cbg), row = u / cbg % crows, b = u % cbg;
            v = (ng * cbg + b) * crows + row;
        }
        dbk_convert_row(job, (int64_t)v);
    }
}

/* ---- compute ---------------------------------------------------------------------- */

/* Taps in one share at most: a tile's list of those it reads input with is on the
 * stack (4 KB). */
#define DBK_SHARE_TAPS_MAX 256

/* The kernel taps a tile reads input with, per axis [lo, hi) (D, H, W): the others read
 * only padding and are left out.  Exact along D and H, where a tile is one output row,
 * so the padding rows are never read; along W those of any pixel of the tile, reading
 * zeros for the others.  `full`: all of the kernel's taps. */
typedef struct dbk_box {
    int64_t lo[3], hi[3];
    bool full;
} dbk_box;

/* Along axis a, the taps k in [0, s->k[a]) with which output positions from `first` to
 * `last` (the input position of tap 0, pad subtracted) read inside X: lo is the first
 * tap that `last`, the largest, reads input with, hi the end of those that `first`, the
 * smallest, does.  first == last: that position's exact range; a tile's first and last
 * pixel: every tap any of its pixels reads input with (and, where a stride skips over
 * X, a few that none does, which read the zeroed padding columns). */
static void dbk_axis_taps(const cf_geom3 *s, int a, int64_t first, int64_t last, dbk_box *b)
{
    int64_t d = s->dil[a], in = s->in[a];
    int64_t lo = last >= 0 ? 0 : (-last + d - 1) / d;
    int64_t hi = first >= in ? 0 : (in - first + d - 1) / d;
    b->lo[a] = lo;
    b->hi[a] = hi < s->k[a] ? hi : s->k[a];
    b->full = b->full && b->lo[a] == 0 && b->hi[a] == s->k[a];
}

/* The taps along W (bit kw, kw < 64) with which the output pixel whose tap 0 reads
 * input position w (pad subtracted) reads padding. */
static uint64_t dbk_padding_taps(const cf_geom3 *s, int64_t w)
{
    uint64_t taps = 0;
    for (int64_t kw = 0; kw < s->k[2] && kw < 64; kw++) {
        const int64_t at = w + kw * s->dil[2];
        taps |= (uint64_t)(at < 0 || at >= s->in[2]) << kw;
    }
    return taps;
}

/* The taps of the box among [k, k + nt) of the kernel's, in order, into list. */
static int dbk_box_taps(const dbk_job *job, const dbk_box *b, int64_t k, int64_t nt,
                        cf_dbk_tap *list)
{
    const cf_geom3 *s = &job->g->s;
    int n = 0;
    for (int64_t t = k; t < k + nt; t++) {
        int64_t kw = t % s->k[2], kh = t / s->k[2] % s->k[1], kd = t / s->k[2] / s->k[1];
        if (kd >= b->lo[0] && kd < b->hi[0] && kh >= b->lo[1] && kh < b->hi[1] &&
            kw >= b->lo[2] && kw < b->hi[2])
            list[n++] = job->tap[t];
    }
    return n;
}

/* Where the tiles of one (image, group) find its input: block 0's padded input row row0
 * at x, x_cb floats between blocks.  The blocked copy of X (row0 0), a slab of a few of
 * its rows (dbk_slab_task), or X itself (in place: x_cb is VL channel rows). */
typedef struct dbk_xview {
    const float *x;
    ptrdiff_t x_cb;
    int64_t row0;
} dbk_xview;

/* The view of (image, group) n, grp in the blocked copy of X, or in X where read in place. */
static dbk_xview dbk_view_whole(const dbk_job *job, int64_t n, int64_t grp)
{
    const cf_problem *p = job->p;
    const dbk_geom *g = job->g;
    if (g->in_place)
        return (dbk_xview){(const float *)job->a->x + (size_t)((n * p->c + grp * g->cg) * p->in_sp),
                           (ptrdiff_t)(g->vl * p->in_sp), 0};
    return (dbk_xview){job->xb + (size_t)((n * g->groups + grp) * g->cbg) * (size_t)g->x_cb,
                       (ptrdiff_t)g->x_cb, 0};
}

/* One tile's place: its input (in view v), weights and output, and the reduction it spans. */
static void dbk_tile_at(const dbk_job *job, const dbk_xview *v, int64_t n, int64_t grp,
                        int64_t ob0, int64_t t, cf_dbk_tile *tl, cf_dbk_store *st, dbk_box *box)
{
    const cf_problem *p = job->p;
    const dbk_geom *g = job->g;
    const cf_geom3 *s = &g->s;
    int vl = g->vl;
    int64_t w_ob = g->cbg * g->ntaps * vl * vl;
    bool nhwc = p->layout == CONVFIND_LAYOUT_NHWC;
    int64_t r = t / job->tpr, ow0 = t % job->tpr * job->np;
    int np = g->row_len - ow0 < job->np ? (int)(g->row_len - ow0) : job->np;
    int64_t od = r / s->out[1], oh = r % s->out[1];
    const float *xrow = g->flat       ? v->x
                        : g->in_place ? v->x + (od * s->stride[0] * s->in[1] +
                                                oh * s->stride[1]) * s->in[2]
                                      : v->x + (size_t)((od * s->stride[0] * g->hp +
                                                         oh * s->stride[1] - v->row0) * g->rs);
    int64_t px = r * g->row_len + ow0; /* the tile's first pixel in the output plane */
    /* The last group may hold fewer blocks (np fits: max_np never increases). */
    int nb = g->mbg - ob0 < job->nb ? (int)(g->mbg - ob0) : job->nb;
    int64_t m0 = grp * g->mg + ob0 * vl; /* first output channel */
    int64_t nm = g->mg - ob0 * vl < nb * vl ? g->mg - ob0 * vl : nb * vl;
    size_t y_off = nhwc ? (size_t)((n * p->out_sp + px) * p->m + m0)
                        : (size_t)((n * p->m + m0) * p->out_sp + px);
    box->full = true;
    for (int a = 0; a < 3; a++) {
        box->lo[a] = 0;
        box->hi[a] = s->k[a];
    }
    uint64_t skip_first = 0, skip_last = 0;
    if (!g->flat) { /* (a flat kernel's one tap always reads input) */
        int64_t d0 = od * s->stride[0] - s->pad[0], h0 = oh * s->stride[1] - s->pad[1];
        int64_t w0 = ow0 * s->stride[2] - s->pad[2], w1 = w0 + (np - 1) * s->stride[2];
        dbk_axis_taps(s, 0, d0, d0, box);
        dbk_axis_taps(s, 1, h0, h0, box);
        dbk_axis_taps(s, 2, w0, w1, box);
        skip_first = dbk_padding_taps(s, w0);
        skip_last = dbk_padding_taps(s, w1);
    }
    *tl = (cf_dbk_tile){
        .x = xrow + (g->in_place ? ow0 * s->stride[2] : ow0 * vl),
        .tap = job->tap,
        .ntaps = (int)g->ntaps,
        .ncb = (int)g->cbg,
        .x_cb = v->x_cb,
        .x_ci = g->in_place ? (ptrdiff_t)p->in_sp : 0,
        .x_px = (int)s->stride[2],
        .w = job->wp + (size_t)((grp * g->mbg + ob0) * w_ob),
        .w_cb = (ptrdiff_t)(g->ntaps * vl * vl),
        .w_ob = (ptrdiff_t)w_ob,
        .nb = nb,
        .np = np,
        .skip_first = skip_first,
        .skip_last = skip_last,
    };
    *st = (cf_dbk_store){
        .p = p,
        .y = (float *)job->a->y + y_off,
        .z = job->a->z ? (const float *)job->a->z + y_off : NULL,
        .bias = job->a->b ? (const float *)job->a->b + m0 : NULL,
        .nm = (int)nm,
        .ch_stride = nhwc ? 1 : (ptrdiff_t)p->out_sp,
        .px_stride = nhwc ? (ptrdiff_t)p->m : 1,
    };
}

/* Splits a balanced count into runs of at most `fit` (at least 1), so the last run is
 * not a sliver. */
static int64_t dbk_balanced_run(int64_t count, int64_t fit)
{
    if (fit < 1)
        fit = 1;
    int64_t runs = (count + fit - 1) / fit;
    return (count + runs - 1) / runs;
}

/* The shares of the reduction for tiles that read the taps of box `read`: as many input
 * blocks (all taps), or where one block's taps are too many, as many taps of one block,
 * as keep the share's packed weights (nb output blocks x VL x VL per tap read and input
 * block) within the part of the cache DBK_SHARE_L2_NP says (job->fit_taps).  Without
 * shares a tile reads all its weights, up to hundreds of KB (3x3x3 on 64 channels, 3
 * blocks: 166 KB on AVX2; DeepSpeech2's 21x11 kernels: 59 KB per block and output
 * block), once per tile from L2, which then feeds the FMAs more slowly than they run
 * (R3D-18's 3x3x3 layers: 40% of the FMA peak).  Counting only the taps read keeps the
 * shares long where tiles skip most taps (DeepLabV3's 3x3 at rate 18 on 33x33: shares of
 * one or two taps, whose partial sums in memory then cost a third of the time).
 * A share holds at most DBK_SHARE_TAPS_MAX taps, the length of a tile's tap list. */
static void dbk_choose_share(const dbk_job *job, const dbk_box *read, int64_t *share_cb,
                             int64_t *share_taps)
{
    const dbk_geom *g = job->g;
    int64_t taps_read = 1;
    for (int a = 0; a < 3; a++)
        taps_read *= read->hi[a] > read->lo[a] ? read->hi[a] - read->lo[a] : 0;
    taps_read = taps_read > 1 ? taps_read : 1;
    if (job->fit_taps >= taps_read && g->ntaps <= DBK_SHARE_TAPS_MAX) {
        *share_cb = dbk_balanced_run(g->cbg, job->fit_taps / taps_read);
        *share_taps = g->ntaps;
    } else {
        *share_cb = 1;
        *share_taps = dbk_balanced_run(g->ntaps, job->fit_taps < DBK_SHARE_TAPS_MAX
                                                     ? job->fit_taps : DBK_SHARE_TAPS_MAX);
    }
}

/* Packed weights to bring into L2 ahead of their use: `floats` floats (whole cache
 * lines) from w on, for each of the tile's output blocks; none where w is NULL. */
typedef struct dbk_ahead {
    const float *w;
    int64_t floats;
} dbk_ahead;

/* The weights of the share that follows share (input blocks [cb, cb + ncb), taps
 * [k, k + nt)) in a reduction up to input block cb1, for tiles whose first output block's
 * weights start at first->w.  In a network's pass each layer's weights were last read a
 * whole pass ago, from memory, and the first tile of each share waited for them
 * (ResNet-50's 7x7 and 14x14 layers, 2 threads, Xeon: 1.1-1.5x their time with the weights
 * in cache); asked for while the share before computes, they arrive in time.  Only for the
 * band's first tiles (`first_tiles`), unless the task's weights do not stay in L2
 * (w_refetch): later tiles find them there, and asking again cost YOLOv5s's stride-2 3x3
 * layers 3-6% of their time.  Not across tasks: asking for the next task's first share
 * changed nothing in a pass of ResNet-50 and cost MobileNetV2's 7x7 1x1 layers 5-15%. */
static dbk_ahead dbk_weights_ahead(const dbk_job *job, const cf_dbk_tile *first, int64_t cb,
                                   int ncb, int64_t cb1, int64_t k, int nt, int64_t share_cb,
                                   int64_t share_taps, bool first_tiles)
{
    const dbk_geom *g = job->g;
    const int64_t tap_floats = g->vl * g->vl, w_cb = first->w_cb;
    dbk_ahead a = {.w = NULL, .floats = 0};
    if (!first_tiles && !job->w_refetch)
        return a;
    if (k + nt < g->ntaps) {
        int64_t next = g->ntaps - k - nt < share_taps ? g->ntaps - k - nt : share_taps;
        a.w = first->w + cb * w_cb + (k + nt) * tap_floats;
        a.floats = next * tap_floats;
    } else if (cb + ncb < cb1) {
        int64_t next = cb1 - cb - ncb < share_cb ? cb1 - cb - ncb : share_cb;
        a.w = first->w + (cb + ncb) * w_cb;
        a.floats = share_taps == g->ntaps ? next * w_cb : share_taps * tap_floats;
    }
    return a;
}

/* Tiles [t_first, t1) of the output plane of image n, group grp, for output block group
 * obg, over input blocks [cb0, cb1) of the reduction, reading their input in view v.  Up
 * to DBK_SHARE_TILES tiles at a time go through the reduction share by share, so each
 * share's weights are read from L1 by all of them instead of from L2 by each; their
 * partial sums wait in `part` between shares.  kslots: where the reduction is split, the
 * tiles' slots of partial sums, one per part, part kp's for this call; NULL otherwise. */
static void dbk_run_tiles(const dbk_job *job, const dbk_xview *v, int64_t n, int64_t grp,
                          int64_t obg, int64_t cb0, int64_t cb1, int64_t kp, int64_t t_first,
                          int64_t t1, float *kslots)
{
    const dbk_geom *g = job->g;
    float part[DBK_SHARE_TILES * DBK_SLOT_MAX] __attribute__((aligned(64)));
    cf_dbk_tap list[DBK_SHARE_TAPS_MAX]; /* a share's taps that a tile reads input with */
    size_t slot = (size_t)(job->nb * job->np * g->vl);
    for (int64_t t0 = t_first; t0 < t1; t0 += DBK_SHARE_TILES) {
        int64_t tn = t1 - t0 < DBK_SHARE_TILES ? t1 - t0 : DBK_SHARE_TILES;
        /* A tile's place is the same in every share: found once, narrowed per share. */
        cf_dbk_tile whole[DBK_SHARE_TILES];
        cf_dbk_store st[DBK_SHARE_TILES];
        dbk_box box[DBK_SHARE_TILES];
        dbk_box read = {.full = true}; /* the box around every tile's */
        for (int64_t i = 0; i < tn; i++) {
            dbk_tile_at(job, v, n, grp, obg * job->nb, t0 + i, &whole[i], &st[i], &box[i]);
            for (int a = 0; a < 3; a++) {
                read.lo[a] = i == 0 || box[i].lo[a] < read.lo[a] ? box[i].lo[a] : read.lo[a];
                read.hi[a] = i == 0 || box[i].hi[a] > read.hi[a] ? box[i].hi[a] : read.hi[a];
            }
        }
        int64_t share_cb, share_taps;
        dbk_choose_share(job, &read, &share_cb, &share_taps);
        /* Whether a tile has partial sums in `part` yet: a share whose taps the tile
         * reads no input with is left out for it (at rate 18 on 33x33, five of the nine
         * one-tap shares of most tiles), except the last, which stores its sums. */
        bool started[DBK_SHARE_TILES] = {false};
        for (int64_t cb = cb0; cb < cb1; cb += share_cb) {
            int ncb = (int)(cb1 - cb < share_cb ? cb1 - cb : share_cb);
            for (int64_t k = 0; k < g->ntaps; k += share_taps) {
                int nt = (int)(g->ntaps - k < share_taps ? g->ntaps - k : share_taps);
                bool last = cb + ncb == cb1 && k + nt == g->ntaps;
                dbk_ahead ahead = dbk_weights_ahead(job, &whole[0], cb, ncb, cb1, k, nt,
                                                    share_cb, share_taps, t0 == t_first);
                const int64_t line = CF_PREFETCH_LINE / sizeof(float), lines = ahead.floats / line;
                for (int64_t i = 0; i < tn; i++) {
                    cf_dbk_tile tl = whole[i];
                    /* Each tile asks for its part of them. */
                    int64_t lo = i * lines / tn;
                    tl.pf = ahead.w ? ahead.w + lo * line : NULL;
                    tl.pf_lines = (int)((i + 1) * lines / tn - lo);
                    tl.x += cb * tl.x_cb;
                    tl.w += cb * tl.w_cb;
                    tl.ncb = ncb;
                    tl.tap = box[i].full ? job->tap + k : list;
                    tl.ntaps = box[i].full ? nt : dbk_box_taps(job, &box[i], k, nt, list);
                    if (tl.ntaps == 0 && !last)
                        continue;
                    tl.acc_in = started[i] ? part + (size_t)i * slot : NULL;
                    tl.acc_out = !last            ? part + (size_t)i * slot
                                 : job->ksplit > 1 ? kslots + ((size_t)(t0 + i) * (size_t)job->ksplit +
                                                               (size_t)kp) * slot
                                                   : NULL;
                    started[i] = true;
                    job->k->tile(&tl, &st[i]);
                }
            }
        }
    }
}

/* One band (a run of consecutive tiles of the output plane) of one image and group for
 * one group of up to nb output blocks, over one part of the reduction (all of it unless
 * it is split), in the blocked copy of X or in X itself. */
static void dbk_band(const dbk_job *job, size_t index)
{
    const dbk_geom *g = job->g;
    const int64_t kp = (int64_t)(index / job->part_tasks);
    const int64_t cb0 = kp * g->cbg / job->ksplit, cb1 = (kp + 1) * g->cbg / job->ksplit;
    int64_t rest = (int64_t)(index % job->part_tasks), band, obg;
    if (job->bands_outer) {
        obg = rest % job->nobg;
        rest /= job->nobg;
        band = rest % job->bands;
        rest /= job->bands;
    } else {
        band = rest % job->bands;
        rest /= job->bands;
        obg = rest % job->nobg;
        rest /= job->nobg;
    }
    int64_t grp = rest % g->groups;
    int64_t n = rest / g->groups;
    size_t slot = (size_t)(job->nb * job->np * g->vl);
    int64_t tiles = g->rows * job->tpr;
    int64_t t1 = (band + 1) * tiles / job->bands;
    /* Where the reduction is split, this band's tiles' slots: one per part. */
    float *kslots = job->ksplit == 1 ? NULL
                                     : job->kpart + (size_t)(((n * g->groups + grp) * job->nobg +
                                                              obg) * tiles) *
                                                        (size_t)job->ksplit * slot;
    dbk_xview v = dbk_view_whole(job, n, grp);
    dbk_run_tiles(job, &v, n, grp, obg, cb0, cb1, kp, band * tiles / job->bands, t1, kslots);
    /* The part that finishes the band last adds up the others' sums and stores them. */
    if (job->ksplit > 1 &&
        atomic_fetch_add_explicit(&job->kdone[index % job->part_tasks], 1,
                                  memory_order_acq_rel) == (unsigned)job->ksplit - 1)
        for (int64_t t = band * tiles / job->bands; t < t1; t++) {
            float *sum = kslots + (size_t)t * (size_t)job->ksplit * slot;
            for (int64_t q = 1; q < job->ksplit; q++)
                for (size_t f = 0; f < slot; f++)
                    sum[f] += sum[(size_t)q * slot + f];
            cf_dbk_tile tl;
            cf_dbk_store st;
            dbk_box box;
            dbk_tile_at(job, &v, n, grp, obg * job->nb, t, &tl, &st, &box);
            tl.ntaps = tl.ncb = 0;
            tl.acc_in = sum;
            tl.acc_out = NULL;
            job->k->tile(&tl, &st);
        }
}

/* ---- slabs: a few rows of X at a time, for inputs far beyond L2 -------------------- */

/* A slab holds at most this part of L2.  With a quarter (2 MB L2), U-Net's 64-channel
 * 570x570 layer had slabs of one output row, three input rows of which two were moved
 * each time, and gained nothing; with half, five output rows, and 0.94x the time. */
#define DBK_SLAB_L2_PART 2

/* Slabs are used where one (image, group)'s blocked input is at least this many times L2. */
#define DBK_SLAB_X_L2 4

/* Whether job's execution converts X a slab at a time (dbk_slab_task), and if so sets
 * up the slabs.  Converting all of X first, as the other executions do, sends a copy
 * beyond L2 to memory and reads it back for the tiles: on U-Net's 570x570 and 392x392
 * layers (64 and 128 channels, 80 MB) leaving the conversion out altogether took 15-18%
 * off the time, and slabs 6-9% (2 threads, Xeon, forced).  A slab holds the padded input rows of a few output rows of every input block
 * of one (image, group), and is computed for every group of output blocks while it is
 * in L2; the next slab of the same task keeps the rows the two share.  Only for
 * kernels that read rows (not flat), over a 2-D or 1-D plane (input rows then follow
 * each other), with the group's packed weights within half of L2 beside the slab.
 * Slabs live in the workspace of the blocked copy, one per task; with fewer slabs
 * than threads there, the copy is used. */
static bool dbk_slabs(dbk_job *job, size_t want, int threads)
{
    const cf_problem *p = job->p;
    const dbk_geom *g = job->g;
    const cf_geom3 *s = &g->s;
    const double l2 = (double)cf_cpu_caches()->l2;
    const double block_row = (double)g->cbg * (double)g->rs * sizeof(float);
    const double x_bytes = (double)g->x_cb * (double)g->cbg * sizeof(float);
    const double w_bytes = (double)(g->mbg * g->cbg * g->ntaps) * g->vl * g->vl * sizeof(float);
    if (g->flat || g->in_place || s->in[0] != 1 || s->out[0] != 1 ||
        x_bytes < DBK_SLAB_X_L2 * l2 || w_bytes > l2 / 2)
        return false;
    const int64_t sh = s->stride[1], reach = (s->k[1] - 1) * s->dil[1] + 1, out = s->out[1];
    const int64_t fit = (int64_t)(l2 / DBK_SLAB_L2_PART / block_row);
    /* The rows one slab keeps from the last are moved, so at most half of them: not
     * for tall kernels on wide rows (DeepSpeech2's first layer, 41 rows of 64 KB: 1.09x
     * the time with slabs of 41 rows moving 39). */
    if (fit < reach || fit < 2 * (reach - sh))
        return false;
    int64_t slab_out = (fit - reach) / sh + 1;
    slab_out = slab_out < out ? slab_out : out;
    const int64_t slab_rows = (slab_out - 1) * sh + reach;
    const size_t slab = (size_t)(g->cbg * slab_rows * g->rs);
    const size_t planes = (size_t)(p->n * g->groups);
    const size_t most_parts = (size_t)((out + slab_out - 1) / slab_out);
    size_t parts = (want + planes - 1) / planes;
    parts = parts < most_parts ? parts : most_parts;
    size_t tasks = planes * parts < want ? planes * parts : want;
    const size_t room = (size_t)(g->cbg * g->x_cb) * (size_t)p->n * (size_t)g->groups / slab;
    tasks = tasks < room ? tasks : room;
    if (tasks < (size_t)threads)
        return false;
    job->slab_tasks = tasks;
    job->slab = slab;
    job->slab_rows = slab_rows;
    job->slab_out = slab_out;
    job->slab_parts = (int64_t)parts;
    return true;
}

/* Converts padded input rows [r0, r1) of every input block of (image, group) ng into
 * `slab`, whose first row is padded row `first`. */
static void dbk_slab_convert(const dbk_job *job, float *slab, int64_t first, int64_t ng,
                             int64_t r0, int64_t r1)
{
    const dbk_geom *g = job->g;
    for (int64_t b = 0; b < g->cbg; b++)
        for (int64_t r = r0; r < r1; r++)
            dbk_convert_padded_row(job, ng * g->cbg + b, r,
                                   slab + (size_t)((b * job->slab_rows + r - first) * g->rs));
}

/* Task `index` of a slab execution: its own run of the (image, group, run of output
 * rows) units, each a slab at a time, every group of output blocks per slab. */
static void dbk_slab_task(void *arg, size_t index)
{
    const dbk_job *job = arg;
    const dbk_geom *g = job->g;
    const cf_geom3 *s = &g->s;
    const int64_t sh = s->stride[1], reach = (s->k[1] - 1) * s->dil[1] + 1, out = s->out[1];
    const size_t units = (size_t)(job->p->n * g->groups * job->slab_parts);
    float *slab = job->xb + index * job->slab;
    const ptrdiff_t slab_cb = (ptrdiff_t)(job->slab_rows * g->rs);
    for (size_t u = index * units / job->slab_tasks; u < (index + 1) * units / job->slab_tasks;
         u++) {
        const int64_t part = (int64_t)u % job->slab_parts, ng = (int64_t)u / job->slab_parts;
        const int64_t o0 = part * out / job->slab_parts, o1 = (part + 1) * out / job->slab_parts;
        int64_t have0 = 0, have1 = 0; /* the padded rows in the slab */
        for (int64_t s0 = o0; s0 < o1; s0 += job->slab_out) {
            const int64_t s1 = o1 - s0 < job->slab_out ? o1 : s0 + job->slab_out;
            const int64_t r0 = s0 * sh, r1 = (s1 - 1) * sh + reach;
            int64_t from = r0;
            if (have1 > r0 && have0 < r0) { /* keep the rows this slab shares with the last */
                for (int64_t b = 0; b < g->cbg; b++)
                    memmove(slab + b * slab_cb, slab + b * slab_cb + (r0 - have0) * g->rs,
                            (size_t)((have1 - r0) * g->rs) * sizeof(float));
                from = have1;
            }
            dbk_slab_convert(job, slab, r0, ng, from, r1);
            have0 = r0;
            have1 = r1;
            dbk_xview v = {slab, slab_cb, r0};
            for (int64_t obg = 0; obg < job->nobg; obg++)
                dbk_run_tiles(job, &v, ng / g->groups, ng % g->groups, obg, 0, g->cbg, 0,
                              s0 * job->tpr, s1 * job->tpr, NULL);
        }
    }
}

/* ---- both passes in one parallel loop --------------------------------------------- */

/* Converts claimed conversion share `index` and counts it finished. */
static void dbk_convert_claimed(void *arg, size_t index)
{
    dbk_job *job = arg;
    dbk_convert_share(job, index);
    atomic_fetch_add_explicit(&job->converted, 1, memory_order_release);
}

/* A task whose (image, group)'s input blocks no other task reads (one band, one group
 * of output blocks: ResNeXt's 32-group 3x3 layers) converts them itself and computes
 * right away, from its own cache, without waiting for the other tasks' conversions
 * (ResNeXt-50's res4 3x3 stride 2: 0.68x the time of converting first, all of them).
 * Otherwise every task first claims conversion shares until none is left, waits until all are
 * finished, then computes its band.  One parallel loop instead of two saves a fork-join
 * per execution, which on 7x7 layers costs about as much as the conversion, and a
 * worker that arrives late still finds compute tasks.  A thread waits only once every
 * share has been claimed, by threads that finish them without waiting, so the wait
 * ends whatever order and threads the pool runs the tasks on.
 * The conversion shares are dealt in contiguous runs over claim slots, as the pool deals
 * the tasks over its threads (util/shares.h), and a task claims from the slot at its own
 * place in the order first, so that where the tasks split the output plane each thread
 * converts mostly the rows its own tasks read and finds them in its own cache (2
 * threads, Xeon: ResNet-50's layer2.0.conv2 took 1.05-1.12x the time with shares
 * claimed in the order the threads arrived). */
static void dbk_task(void *arg, size_t index)
{
    dbk_job *job = arg;
    if (job->own_input) {
        /* Its part of its (image, group)'s input blocks, which no other task reads. */
        const dbk_geom *g = job->g;
        int64_t kp = (int64_t)(index / job->part_tasks);
        int64_t first = (int64_t)(index % job->part_tasks) * g->cbg; /* (image, group) */
        int64_t b0 = first + kp * g->cbg / job->ksplit;
        int64_t b1 = first + (kp + 1) * g->cbg / job->ksplit;
        for (int64_t u = b0 * g->crows; u < b1 * g->crows; u++)
            dbk_convert_row(job, u);
        dbk_band(job, index);
        return;
    }
    if (atomic_load_explicit(&job->converted, memory_order_acquire) < job->ctasks)
        cf_shares_run(job->claims, job->nclaims, index * job->nclaims / job->tasks,
                      dbk_convert_claimed, job);
    while (atomic_load_explicit(&job->converted, memory_order_acquire) < job->ctasks) {
#if defined(__x86_64__)
        _mm_pause();
#endif
    }
    dbk_band(job, index);
}

static convfind_status dbk_execute(const cf_problem *p, const void *state, const cf_exec_args *a)
{
    (void)state;
    const cf_dbk_kernels *k = cf_kernel_table_active()->direct_blocked;
    dbk_geom g = dbk_geom_of(p, k->vl);
    dbk_ws ws = dbk_ws_of(p, &g, k);
    const dbk_packed *pk = a->packed_w;
    bool repack = !pk || pk->vl != k->vl;
    if (ws.total.overflow)
        return cf_fail(CONVFIND_ERR_OVERFLOW,
                       "cpu.direct_blocked workspace does not fit in size_t");
    if (a->workspace_size < ws.total.bytes || !a->workspace)
        return cf_fail(CONVFIND_ERR_INVALID_SHAPE, "cpu.direct_blocked needs %zu bytes of "
                       "workspace, got %zu", ws.total.bytes, a->workspace_size);

    char *base = a->workspace;
    float *wp = repack ? (float *)(base + ws.w) : pk->w;
    if (repack)
        dbk_pack(&g, a->w, wp, a->pool);

    cf_dbk_tap *tap = (cf_dbk_tap *)(base + ws.tap);
    const cf_geom3 *s = &g.s;
    for (int64_t kd = 0, t = 0; kd < s->k[0]; kd++)
        for (int64_t kh = 0; kh < s->k[1]; kh++)
            for (int64_t kw = 0; kw < s->k[2]; kw++, t++) {
                int64_t wpos = kw * s->dil[2];
                /* In place: from the input pixel of the tile's first output pixel and tap
                 * 0, padding included (the taps that would read before X are left out). */
                tap[t].x = g.in_place
                               ? (ptrdiff_t)(((kd * s->dil[0] - s->pad[0]) * s->in[1] +
                                              kh * s->dil[1] - s->pad[1]) * s->in[2] +
                                             wpos - s->pad[2])
                               : (ptrdiff_t)((kd * s->dil[0] * g.hp + kh * s->dil[1]) * g.rs +
                                             ((wpos % s->stride[2]) * g.wq +
                                              wpos / s->stride[2]) * g.vl);
                tap[t].w = (ptrdiff_t)(t * g.vl * g.vl);
                tap[t].kw = (int)kw;
            }

    dbk_job job = {.p = p, .g = &g, .k = k, .a = a, .xb = (float *)(base + ws.x), .wp = wp,
                   .tap = tap};
    job.nb = ws.nb;
    job.np = ws.np;
    if ((size_t)(job.nb * job.np * g.vl) > DBK_SLOT_MAX) /* a kernel table out of step */
        return cf_fail(CONVFIND_ERR_BACKEND, "cpu.direct_blocked tile %d x %d exceeds its "
                       "partial-sum slots", job.nb, job.np);
    size_t per_tap = (size_t)(job.nb * g.vl * g.vl) * sizeof(float);
    const int l2_np = g.vl == 16 && !cf_cpu_fma512_full_rate() ? DBK_SHARE_L2_NP_HALF
                                                                : DBK_SHARE_L2_NP;
    job.fit_taps = (int64_t)((job.np >= l2_np ? cf_cpu_caches()->l2 / DBK_SHARE_L2_PART
                                                         : cf_cpu_caches()->l1d / 2) /
                             per_tap);
    job.nobg = (g.mbg + job.nb - 1) / job.nb;
    job.tpr = (g.row_len + job.np - 1) / job.np;

    /* Both passes in equal runs, DBK_TASKS_PER_THREAD per thread where there is that much
     * work; compute tasks split the output plane only as far as the blocks do not. */
    size_t want = (size_t)DBK_TASKS_PER_THREAD * (size_t)cf_threadpool_size(a->pool);
    job.crows_all = (size_t)(p->n * g.groups * g.cbg * g.crows);
    job.ctasks = g.in_place ? 0 : job.crows_all < want ? job.crows_all : want;
    atomic_init(&job.converted, 0);
    size_t outer = (size_t)(p->n * g.groups * job.nobg);
    size_t tiles = (size_t)(g.rows * job.tpr);
    size_t bands = (want + outer - 1) / outer;
    job.bands = (int64_t)(bands < tiles ? bands : tiles);
    job.ksplit = 1;
    /* Where that leaves one tile per task (small planes with few output blocks: DenseNet's
     * 128 -> 32 3x3 on 7x7 and 14x14; one-pixel layers), each task would read its block
     * group's weights from L2 for one tile alone.  The bands take up to DBK_SHARE_TILES
     * tiles instead, so that the tiles share each share's weights in cache, and where they
     * are then fewer than the threads, the reduction is split: each part a run of the
     * input blocks, its own tasks, its partial sums added up by the part that finishes a
     * band last.  Each thread then reads its part of the weights once, and converts only
     * its own input blocks where no other task reads them.  2 threads, Xeon, against one
     * tile per task: DenseNet-121's 7x7 layer 0.63x the time, its 14x14 one 0.92x (longer
     * bands alone), DeepLabV3's one-pixel 2048 -> 256 0.82x. */
    if (ws.split && (size_t)job.bands == tiles) {
        int threads = cf_threadpool_size(a->pool);
        size_t split_bands = (tiles + DBK_SHARE_TILES - 1) / DBK_SHARE_TILES;
        size_t parts = (threads + outer * split_bands - 1) / (outer * split_bands);
        double macs = (double)p->n * (double)p->m * (double)p->out_sp * (double)g.cg *
                      (double)p->k_sp;
        parts = parts < DBK_SPLIT_MAX ? parts : DBK_SPLIT_MAX;
        while (parts > 1 && macs / (double)parts < DBK_SPLIT_MIN_MACS)
            parts--;
        job.bands = (int64_t)split_bands;
        job.ksplit = (int64_t)parts < g.cbg ? (int64_t)parts : g.cbg;
    }
    job.part_tasks = outer * (size_t)job.bands;
    if (job.ksplit > 1) {
        job.kpart = (float *)(base + ws.part);
        job.kdone = (atomic_uint *)(base + ws.done);
        for (size_t i = 0; i < job.part_tasks; i++)
            atomic_init(&job.kdone[i], 0);
    }
    job.own_input = !g.in_place && job.bands == 1 && job.nobg == 1;
    /* Tasks dealt out in turn to the threads (util/shares.h) split either the output
     * blocks, each thread reading all of the input and its part of the weights, or the
     * output plane, each reading its rows of the input and all of the weights.  The
     * input was just written, half of it by another core, whose cache must hand each
     * line over; the weights are only read, from L3 or memory, shared.  So the plane is
     * split unless the weights outweigh the input by DBK_WEIGHTS_PER_INPUT. */
    const double x_floats = (double)(g.cbg * g.x_cb);
    const double w_floats = (double)(g.mbg * g.cbg * g.ntaps) * g.vl * g.vl;
    job.bands_outer = job.bands > 1 && job.nobg > 1 &&
                      w_floats < DBK_WEIGHTS_PER_INPUT * x_floats;
    job.tasks = job.part_tasks * (size_t)job.ksplit;
    job.w_refetch = (double)job.nb * g.vl * g.vl * (double)(g.ntaps * g.cbg / job.ksplit) *
                        sizeof(float) > cf_cpu_caches()->l2 / 2;
    if (job.ksplit == 1 && dbk_slabs(&job, want, cf_threadpool_size(a->pool))) {
        cf_parallel_for(a->pool, job.slab_tasks, dbk_slab_task, &job);
        return CONVFIND_OK;
    }
    cf_share claims[DBK_CLAIM_SLOTS];
    job.claims = claims;
    job.nclaims = job.tasks < DBK_CLAIM_SLOTS ? job.tasks : DBK_CLAIM_SLOTS;
    cf_shares_deal(claims, job.nclaims, job.ctasks);
    cf_parallel_for(a->pool, job.tasks, dbk_task, &job);
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
    .packed_extent = dbk_packed_extent,
    .execute = dbk_execute,
};
