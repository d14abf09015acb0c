/*
 * find.c - the CPU backend's Find hooks (algo/backend.h, cf_find_hooks): host test
 * tensors, the reference output, preparation with packed weights, timing on the host
 * clock, and validation by a max-abs bound that depends on the algorithm's family.
 *
 * Timed the way a plan runs in steady state inside a network: with the context's thread
 * pool, weights packed once for plans with constant weights and packed by every run for
 * plans given weights per call, the weights a run reads evicted from the caches before
 * it (sample()), one run per sample (no batching: a CPU run is long next to the
 * clock read), the close candidates timed again in turns (cf_find_hooks.final_round),
 * and the reference not timed once another candidate measured
 * (cf_find_hooks.reference_last).
 */
#include "cpu/find.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "algo/find_images.h"
#include "cpu/evict.h"
#include "cpu/registry.h"
#include "util/clock.h"
#include "util/error.h"

double cf_cpu_error_factor(const char *family)
{
    static const struct {
        const char *family;
        double factor;
    } table[] = {
        {"reference", 1.0}, {"direct", 4.0},    {"gemm", 4.0}, {"im2col", 4.0},
        {"depthwise", 4.0}, {"winograd", 64.0}, {"fft", 64.0},
    };
    for (size_t i = 0; family && i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].family, family) == 0)
            return table[i].factor;
    return 16.0;
}

struct cf_find_bench {
    const cf_problem *p;
    cf_threadpool *pool;
    bool validate, constant_weights;
    float *x, *w, *b, *z, *y, *ref;
    /* Validation compares the checked images of Y with the reference's, kept in ref one
     * after the other. */
    cf_find_images images;
    double ref_max;   /* max |ref| */
    size_t reduction; /* multiply-adds summed into one output */
};

/* What one candidate's executions need: its state, workspace and packed weights. */
struct cf_find_ready {
    const cf_algo *a;
    void *state, *ws, *packed;
    size_t ws_size;
    const void *weights;  /* what a timed run reads of the weights: packed or W */
    size_t weights_bytes;
};

static void fill(float *v, size_t n, uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        /* 24 random bits mapped to (-1, 1), never exactly 0 */
        v[i] = ((float)(int32_t)((s >> 40) & 0xffffff) - 8388607.5f) / 8388608.0f;
    }
}

/* A test tensor of n floats starting a page, as large framework tensors (mmap-backed)
 * do.  With malloc's 16-byte alignment the kernels' loads split lines in other places
 * than on a caller's tensors; and where Y started up to 512 bytes after X modulo 4 KiB,
 * loads of X waited on stores to Y that only shared their low address bits (dw c576
 * 14x14, one thread: 157 -> 189-206 cycles a plane for cpu.depthwise_3x3), so Find
 * ranked close candidates by an accident of its own allocations (y - x = 128 for dw
 * c384 14x14 in the MobileNetV2 benchmark).  At least one float, as malloc(0) need not
 * return a pointer. */
static float *test_tensor(size_t n)
{
    return aligned_alloc(4096, ((n ? n : 1) * sizeof(float) + 4095) & ~(size_t)4095);
}

static void bench_destroy(cf_find_bench *bn)
{
    if (!bn)
        return;
    free(bn->x);
    free(bn->w);
    free(bn->b);
    free(bn->z);
    free(bn->y);
    free(bn->ref);
    free(bn);
}

static convfind_status run_once(const cf_find_bench *bn, const cf_algo *a, const void *state,
                                const void *packed, void *ws, size_t ws_size, float *y)
{
    cf_exec_args args = {
        .x = bn->x, .w = bn->w, .packed_w = packed, .y = y, .workspace = ws,
        .workspace_size = ws_size,
        .b = bn->p->has_bias ? bn->b : NULL, .z = bn->p->has_residual ? bn->z : NULL,
        .pool = bn->pool,
    };
    return a->execute(bn->p, state, &args);
}

/* cpu.reference's Y for the checked images (algo/find_images.h), into ref.  The naive
 * loop is the validation's because it is simple, not fast: over the whole batch it took
 * 20 of a 24 s Find of wav2vec2's feature encoder at N=8. */
static convfind_status bench_reference(cf_find_bench *bn)
{
    const cf_problem *p = bn->p;
    const cf_find_images *im = &bn->images;
    for (int k = 0; k < im->n; k++) {
        const size_t image = (size_t)im->index[k];
        const cf_exec_args args = {
            .x = bn->x + image * im->image_x, .w = bn->w, .y = bn->ref + k * im->image_y,
            .b = p->has_bias ? bn->b : NULL,
            .z = p->has_residual ? bn->z + image * im->image_y : NULL, .pool = bn->pool,
        };
        const convfind_status st = cf_algo_cpu_reference.execute(&im->one, NULL, &args);
        if (st != CONVFIND_OK)
            return st;
    }
    for (size_t i = 0; i < (size_t)im->n * im->image_y; i++)
        if (fabsf(bn->ref[i]) > bn->ref_max)
            bn->ref_max = fabsf(bn->ref[i]);
    return CONVFIND_OK;
}

/* The workspace limit is not needed: usable() already left out every candidate over it. */
static convfind_status bench_create(const cf_backend_state *s, const cf_problem *p,
                                    const cf_bench_config *config, cf_find_bench **out)
{
    (void)s;
    *out = NULL;
    cf_find_bench *bn = calloc(1, sizeof *bn);
    if (!bn)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate Find's bench");
    bn->p = p;
    bn->pool = config->pool;
    bn->validate = config->validate;
    bn->constant_weights = config->constant_weights;
    size_t yb = p->y_elems ? p->y_elems : 1;
    bn->images = cf_find_images_of(p);
    bn->x = test_tensor(p->x_elems);
    bn->w = test_tensor(p->w_elems);
    bn->b = test_tensor((size_t)p->m);
    bn->z = test_tensor(yb);
    bn->y = test_tensor(yb);
    bn->ref = test_tensor((size_t)bn->images.n * bn->images.image_y);
    if (!bn->x || !bn->w || !bn->b || !bn->z || !bn->y || !bn->ref) {
        bench_destroy(bn);
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY,
                       "cannot allocate Find's test tensors (%zu + %zu + 3 x %zu floats)",
                       p->x_elems, p->w_elems, p->y_elems);
    }
    fill(bn->x, p->x_elems, 1);
    fill(bn->w, p->w_elems, 2);
    fill(bn->b, (size_t)p->m, 3);
    fill(bn->z, p->y_elems, 4);
    bn->reduction = (size_t)cf_cin_per_group(p) * (size_t)p->k_sp;
    convfind_status st = bn->validate ? bench_reference(bn) : CONVFIND_OK;
    if (st != CONVFIND_OK) {
        bench_destroy(bn);
        return st;
    }
    *out = bn;
    return CONVFIND_OK;
}

static void release(cf_find_bench *bn, cf_find_ready *rd)
{
    (void)bn;
    if (rd->packed && rd->a->free_packed)
        rd->a->free_packed(rd->packed);
    free(rd->ws);
    if (rd->a->release)
        rd->a->release(rd->state);
    free(rd);
}

/* State, workspace and (constant weights) packed weights; the workspace size is
 * c->workspace_bytes, found when the candidate was listed. */
static cf_candidate_status prepare(cf_find_bench *bn, const cf_algo *a, cf_candidate_stats *c,
                                   cf_find_ready **out)
{
    *out = NULL;
    cf_find_ready *rd = calloc(1, sizeof *rd);
    if (!rd)
        return CF_CAND_ABANDONED; /* memory: no verdict */
    rd->a = a;
    rd->ws_size = c->workspace_bytes;
    if (a->prepare && a->prepare(bn->p, &rd->state) != CONVFIND_OK) {
        free(rd); /* nothing to release */
        return CF_CAND_FAILED;
    }
    size_t rounded = (rd->ws_size + 63) & ~(size_t)63;
    if (rd->ws_size && (rounded < rd->ws_size || !(rd->ws = aligned_alloc(64, rounded)))) {
        /* No verdict: memory may be available later (DESIGN.md: an out-of-memory during
         * Find must not pin a slow fallback). */
        release(bn, rd);
        return CF_CAND_ABANDONED;
    }
    /* A plan with constant weights runs with them packed once, the steady state of
     * inference: charged with packing on every run, direct and Winograd kernels lost
     * ResNet-50's res5 3x3 to im2col (1.45 ms) although they take 0.9 and 0.7 ms with
     * packed weights.  With per-call weights every run packs, and is timed so. */
    if (bn->constant_weights && a->pack_weights &&
        a->pack_weights(bn->p, rd->state, bn->w, &rd->packed) != CONVFIND_OK) {
        release(bn, rd); /* an allocation, like the workspace: no verdict */
        return CF_CAND_ABANDONED;
    }
    if (rd->packed && a->packed_extent) {
        rd->weights_bytes = a->packed_extent(bn->p, rd->packed, &rd->weights);
    } else {
        rd->weights = bn->w;
        rd->weights_bytes = bn->p->w_elems * sizeof(float);
    }
    *out = rd;
    return CF_CAND_OK;
}

static bool matches_reference(const cf_find_bench *bn, const cf_algo *a)
{
    double bound = cf_cpu_error_factor(a->family) * FLT_EPSILON * (double)(bn->reduction + 1) *
                   (1.0 + bn->ref_max);
    const cf_find_images *im = &bn->images;
    for (int k = 0; k < im->n; k++) {
        const float *y = bn->y + (size_t)im->index[k] * im->image_y;
        const float *ref = bn->ref + (size_t)k * im->image_y;
        for (size_t i = 0; i < im->image_y; i++) {
            double d = fabs((double)y[i] - (double)ref[i]);
            if (!(d <= bound)) /* also catches NaN: the output was not written */
                return false;
        }
    }
    /* The images between: at least written (Y was filled with NaN before the run). */
    for (size_t i = 0; i < bn->p->y_elems; i++)
        if (isnan(bn->y[i]))
            return false;
    return true;
}

/* One run into a NaN-filled Y (so an unwritten output fails); true when it succeeded
 * and, when validating, matched the reference. */
static bool validated_run(const cf_find_bench *bn, const cf_find_ready *rd, const void *packed)
{
    for (size_t i = 0; i < bn->p->y_elems; i++)
        bn->y[i] = NAN;
    return run_once(bn, rd->a, rd->state, packed, rd->ws, rd->ws_size, bn->y) == CONVFIND_OK &&
           (!bn->validate || matches_reference(bn, rd->a));
}

/* Every path an execution may take is checked: without packed weights (plans with
 * per-call weights, and the fallbacks of any plan) and, with constant weights, with them
 * (the one timed). */
static bool check(cf_find_bench *bn, cf_find_ready *rd, int *runs, double *ms)
{
    *runs = rd->packed ? 2 : 1;
    *ms = 0; /* a first run here pays for cold caches and pages: not a run's cost */
    return validated_run(bn, rd, NULL) && (!rd->packed || validated_run(bn, rd, rd->packed));
}

/* In a network a layer's weights are read once per pass, and the other layers' weights
 * and activations (ResNet-50: about 100 MB) have pushed them out of the caches by then;
 * a layer run again and again, as Find runs it, has them in cache.  Timed that way Find
 * chose cpu.winograd_f4x3 for ResNet-50's 3x3 layers on 14x14 at N=1 (0.56 ms), whose
 * 9.4 MB of transformed weights take 0.87 ms from memory, against 0.82 for f2x3's 4.2 MB
 * (docs/find.md).  Evicting costs Find a little (clflushopt: 0.5 ms for those 9.4 MB),
 * and each run is timed alone. */
static convfind_status sample(cf_find_bench *bn, cf_find_ready *rd, int batch, double *ms)
{
    convfind_status st = CONVFIND_OK;
    double seconds = 0;
    for (int i = 0; i < batch && st == CONVFIND_OK; i++) {
        cf_cpu_evict(rd->weights, rd->weights_bytes);
        double t0 = cf_now_s();
        st = run_once(bn, rd->a, rd->state, rd->packed, rd->ws, rd->ws_size, bn->y);
        seconds += cf_now_s() - t0;
    }
    *ms = seconds * 1e3 / batch;
    return st;
}

const cf_find_hooks cf_cpu_find_hooks = {
    .bench_create = bench_create,
    .bench_destroy = bench_destroy,
    .prepare = prepare,
    .release = release,
    .check = check,
    .sample = sample,
    .sample_target_ms = 0,
    .final_round = true,
    /* cpu.reference is a naive loop kept as the always-valid fallback and for the
     * validation output (bench_create runs it once for that): it won only on problems
     * of a few multiply-adds (0.1 us against 0.2 us for a 1x1x1 convolution), while
     * timing it cost seconds per layer on large ones (2.7 s a run on wav2vec2's second
     * feature-encoder layer, 6 runs in Find). */
    .reference_last = true,
    /* Large layers can spend the 1 s budget on the first candidate alone: DeepLabV3's
     * dilated 3x3 (c2048 k256 33x33) at N=8 kept cpu.direct_blocked at 660-790 ms a run
     * without ever running cpu.im2col_gemm.  A CPU Find has a handful of candidates, so
     * each still gets its check and one sample. */
    .look_past_budget = true,
};
