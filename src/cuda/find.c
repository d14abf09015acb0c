/*
 * find.c - the CUDA backend's Find hooks (see find.h).
 */
#include "cuda/find.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/find_images.h"
#include "cuda/algos.h"
#include "cuda/graph.h"
#include "cuda/kernels.h"
#include "util/error.h"

/* Every candidate name for p on the device, cuDNN configurations first (algos.h), then
 * cuda.direct. */
static int enumerate(const cf_backend_state *s, const cf_problem *p, size_t workspace_limit,
                     unsigned lists, const cf_algo **algos, cf_candidate_stats *stats, int cap)
{
    (void)workspace_limit; /* known only once a configuration is finalized: prepare() */
    const cf_cuda_device *d = (const cf_cuda_device *)s;
    if (cap < 1)
        return 0;
    const unsigned extra = (lists & CF_FIND_LIST_UNVETTED ? CF_CUDA_VARIANTS_UNLISTED : 0) |
                           (lists & CF_FIND_LIST_INEXACT ? CF_CUDA_VARIANTS_SPLIT : 0);
    char (*names)[CF_ALGO_NAME_MAX] = calloc((size_t)cap, sizeof *names);
    /* Without memory for the names, cuda.direct alone: it runs everything. */
    const int n = names ? cf_cuda_cudnn_variants(p, d, extra, names, cap - 1) : 0;
    for (int i = 0; i < n; i++) {
        algos[i] = &cf_algo_cuda_cudnn;
        memcpy(stats[i].algo, names[i], sizeof stats[i].algo);
        stats[i].status = CF_CAND_OK;
    }
    algos[n] = &cf_algo_cuda_direct;
    snprintf(stats[n].algo, sizeof stats[n].algo, "%s", cf_algo_cuda_direct.name);
    stats[n].status = CF_CAND_OK;
    free(names);
    return n + 1;
}

struct cf_find_bench {
    const cf_cuda_device *d;
    const cf_problem *p;
    bool validate, constant_weights;
    size_t workspace_limit;
    int previous_device;     /* cf_cuda_enter()'s, given back when the bench goes */
    cudaStream_t stream;
    cudaEvent_t e0, e1;
    volatile int *hold;      /* mapped host memory: cf_cuda_hold()'s flag (sample()) */
    void *x, *w, *b, *z, *y;
    /* Validation compares the checked images of Y (algo/find_images.h) with
     * cuda.direct's, kept as floats in ref, one after the other; every value of Y is
     * checked for NaN. */
    cf_find_images images;
    float *ref;
    double *acc;             /* device: cf_cuda_error_norms()'s sums */
    char current[CF_ALGO_NAME_MAX]; /* the candidate prepared last */
    /* A sticky CUDA error (an illegal or misaligned address in a kernel) leaves the
     * process's CUDA context unusable: every later call fails.  The error and the
     * candidate after which it appeared; synchronize() then ends the Find. */
    int dead;
    char killed_by[CF_ALGO_NAME_MAX];
};

struct cf_find_ready {
    const cf_algo *a;
    void *state;
    void *packed; /* constant weights: the candidate's pack_weights() of the bench's W */
    char name[CF_ALGO_NAME_MAX];
};

/* How far from cuda.direct candidate `algo` may be, normwise relative: split
 * configurations (graph.h) are held to CF_CUDNN_SPLIT_TOL, tighter than the strict
 * tolerance, because their accuracy depends on the engine. */
static double tolerance(const cf_problem *p, const char *algo)
{
    if (p->dtype != CONVFIND_DTYPE_F32)
        return 1e-2;
    if (p->math_mode == CONVFIND_MATH_ALLOW_TF32)
        return 5e-3;
    return cf_cudnn_name_is_split(algo) ? CF_CUDNN_SPLIT_TOL : 1e-4;
}

static convfind_status run(const cf_find_bench *bn, const cf_algo *a, const void *state,
                           const void *packed)
{
    cf_exec_args args = {
        .x = bn->x, .w = bn->w, .packed_w = packed, .y = bn->y,
        .b = bn->p->has_bias ? bn->b : NULL,
        .z = bn->p->has_residual ? bn->z : NULL, .stream = bn->stream, .device = bn->d,
    };
    return a->execute(bn->p, state, &args);
}

/* Image `image` of Y in the bench's buffer. */
static void *y_image(const cf_find_bench *bn, int64_t image)
{
    return (char *)bn->y + (size_t)image * bn->images.image_y * cf_dtype_size(bn->p->dtype);
}

/* The normwise relative error of the checked images of Y against the reference, on the
 * device; +inf with a NaN anywhere in Y (poisoned before the run: an image left
 * unwritten is caught too).  Negative when the check itself failed. */
static double y_error(const cf_find_bench *bn)
{
    const cf_problem *p = bn->p;
    const cf_find_images *im = &bn->images;
    double acc[3] = {0, 0, 0};
    int err = cudaMemsetAsync(bn->acc, 0, sizeof acc, bn->stream);
    for (int k = 0; !err && k < im->n; k++)
        err = cf_cuda_error_norms(y_image(bn, im->index[k]), p->dtype,
                                  bn->ref + (size_t)k * im->image_y, im->image_y, bn->acc,
                                  bn->stream);
    if (!err)
        err = cf_cuda_error_norms(bn->y, p->dtype, NULL, p->y_elems, bn->acc, bn->stream);
    if (!err)
        err = cudaMemcpyAsync(acc, bn->acc, sizeof acc, cudaMemcpyDeviceToHost, bn->stream);
    if (!err)
        err = cudaStreamSynchronize(bn->stream);
    if (err)
        return -1;
    if (acc[2] > 0)
        return INFINITY;
    return acc[1] > 0 ? sqrt(acc[0] / acc[1]) : sqrt(acc[0]);
}

static void bench_destroy(cf_find_bench *bn)
{
    if (!bn)
        return;
    void *dev[] = {bn->x, bn->w, bn->b, bn->z, bn->y, bn->ref, bn->acc};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        if (dev[i])
            cudaFree(dev[i]);
    if (bn->e0)
        cudaEventDestroy(bn->e0);
    if (bn->e1)
        cudaEventDestroy(bn->e1);
    if (bn->hold)
        cudaFreeHost((void *)bn->hold);
    if (bn->stream)
        cudaStreamDestroy(bn->stream);
    cf_cuda_leave(bn->previous_device);
    free(bn);
}

/* cuda.direct's Y for the checked images (algo/find_images.h), into ref.  The direct
 * kernel is Find's reference because it is simple, not because it is fast: at N=32 it
 * took 15-30 ms per ResNet-50 layer on the H200, about a tenth of a whole Find. */
static convfind_status reference(cf_find_bench *bn)
{
    const cf_problem *p = bn->p;
    const cf_find_images *im = &bn->images;
    const size_t e = cf_dtype_size(p->dtype);
    convfind_status st = CONVFIND_OK;
    for (int k = 0; st == CONVFIND_OK && k < im->n; k++) {
        const size_t image = (size_t)im->index[k];
        cf_exec_args args = {
            .x = (const char *)bn->x + image * im->image_x * e, .w = bn->w,
            .y = y_image(bn, im->index[k]), .b = p->has_bias ? bn->b : NULL,
            .z = p->has_residual ? (const char *)bn->z + image * im->image_y * e : NULL,
            .stream = bn->stream, .device = bn->d,
        };
        st = cf_algo_cuda_direct.execute(&im->one, NULL, &args);
        int err;
        if (st == CONVFIND_OK &&
            (err = cf_cuda_to_float(args.y, p->dtype, bn->ref + (size_t)k * im->image_y,
                                    im->image_y, bn->stream)) != 0)
            st = cf_cuda_fail(err, "keeping the reference output");
    }
    return st;
}

/* Device tensors and, when validating, cuda.direct's Y of the checked images. */
static convfind_status bench_fill(cf_find_bench *bn)
{
    const cf_problem *p = bn->p;
    const size_t e = cf_dtype_size(p->dtype);
    const size_t yn = p->y_elems ? p->y_elems : 1;
    bn->images = cf_find_images_of(p);
    int err = cudaStreamCreateWithFlags(&bn->stream, cudaStreamNonBlocking);
    if (!err)
        err = cudaEventCreate(&bn->e0);
    if (!err)
        err = cudaEventCreate(&bn->e1);
    if (!err)
        err = cudaHostAlloc((void **)&bn->hold, sizeof *bn->hold, cudaHostAllocMapped);
    const struct {
        void **ptr;
        size_t bytes;
    } bufs[] = {
        {&bn->x, p->x_elems * e}, {&bn->w, p->w_elems * e},     {&bn->b, (size_t)p->m * e},
        {&bn->z, yn * e},         {&bn->y, yn * e},
        {(void **)&bn->ref, (bn->images.image_y ? bn->images.image_y : 1) * 2 * sizeof(float)},
        {(void **)&bn->acc, 3 * sizeof(double)},
    };
    for (size_t i = 0; !err && i < sizeof bufs / sizeof bufs[0]; i++)
        err = cudaMalloc(bufs[i].ptr, bufs[i].bytes);
    const void *fills[] = {bn->x, bn->w, bn->b, bn->z};
    const size_t counts[] = {p->x_elems, p->w_elems, (size_t)p->m, p->y_elems};
    for (int i = 0; !err && i < 4; i++)
        err = cf_cuda_fill((void *)fills[i], p->dtype, counts[i], (uint64_t)i + 1, bn->stream);
    if (err) {
        cudaGetLastError();
        return cf_cuda_fail(err, "allocating Find's device tensors");
    }
    return bn->validate ? reference(bn) : CONVFIND_OK;
}

/* The bench makes the context's device current on this thread until it is destroyed. */
static convfind_status bench_create(const cf_backend_state *s, const cf_problem *p,
                                    const cf_bench_config *config, cf_find_bench **out)
{
    *out = NULL; /* config->pool is not used: device work is queued on the bench's stream */
    /* Find allocates and synchronizes: inside a capture that would break it. */
    if (cf_cuda_capturing(cudaStreamLegacy))
        return cf_fail(CONVFIND_ERR_UNSUPPORTED,
                       "Find cannot run while a CUDA graph capture is under way on this device "
                       "(it allocates and synchronizes): create plans before capturing");
    cf_find_bench *bn = calloc(1, sizeof *bn);
    if (!bn)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate Find's bench");
    bn->d = (const cf_cuda_device *)s;
    bn->p = p;
    bn->validate = config->validate;
    bn->constant_weights = config->constant_weights;
    bn->workspace_limit = config->workspace_limit;
    bn->previous_device = cf_cuda_enter(bn->d);
    convfind_status st = bench_fill(bn);
    if (st != CONVFIND_OK) {
        bench_destroy(bn);
        return st;
    }
    *out = bn;
    return CONVFIND_OK;
}

static void release(cf_find_bench *bn, cf_find_ready *r)
{
    (void)bn;
    if (r->packed && r->a->free_packed)
        r->a->free_packed(r->packed);
    if (r->a->release)
        r->a->release(r->state);
    free(r);
}

static cf_candidate_status prepare(cf_find_bench *bn, const cf_algo *a, cf_candidate_stats *c,
                                   cf_find_ready **out)
{
    *out = NULL;
    snprintf(bn->current, sizeof bn->current, "%s", c->algo);
    cf_find_ready *r = calloc(1, sizeof *r);
    if (!r)
        return CF_CAND_ABANDONED; /* memory: no verdict */
    r->a = a;
    memcpy(r->name, c->algo, sizeof r->name);
    cf_candidate_status status = CF_CAND_OK;
    if (cf_algo_prepare(a, bn->p, c->algo, &r->state) != CONVFIND_OK ||
        cf_cuda_algo_workspace(bn->d, bn->p, a, c->algo, &c->workspace_bytes) != CONVFIND_OK)
        status = CF_CAND_FAILED;
    else if (bn->workspace_limit && c->workspace_bytes > bn->workspace_limit)
        status = CF_CAND_NOT_APPLICABLE;
    /* With constant weights a plan runs with them packed once: so are they timed. */
    else if (bn->constant_weights && a->pack_weights &&
             a->pack_weights(bn->p, r->state, bn->w, &r->packed) != CONVFIND_OK)
        status = CF_CAND_ABANDONED;
    if (status != CF_CAND_OK) {
        release(bn, r);
        return status;
    }
    *out = r;
    return CF_CAND_OK;
}

/* One run into a poisoned Y, compared with the reference when validating; with `ms`,
 * the run's time by the bench's events. */
static bool checked_run(cf_find_bench *bn, cf_find_ready *r, const void *packed, double *ms)
{
    cudaMemsetAsync(bn->y, 0xff, bn->p->y_elems * cf_dtype_size(bn->p->dtype), bn->stream);
    if (ms)
        cudaEventRecord(bn->e0, bn->stream);
    if (run(bn, r->a, r->state, packed) != CONVFIND_OK)
        return false;
    float elapsed = 0;
    if (ms && cudaEventRecord(bn->e1, bn->stream) == cudaSuccess &&
        cudaEventSynchronize(bn->e1) == cudaSuccess &&
        cudaEventElapsedTime(&elapsed, bn->e0, bn->e1) == cudaSuccess)
        *ms = elapsed;
    if (!bn->validate)
        return true;
    const double err = y_error(bn);
    return err >= 0 && err <= tolerance(bn->p, r->name);
}

/* Without packed weights (per-call weights, fallbacks) and, with constant weights, with
 * them (the path timed), that one last and timed: the first run of a kernel also waits
 * for its code to load, which the events would count, so only a second run says what a
 * run costs (one run, timed, when nothing is packed and so a first run is all there is:
 * then *ms stays 0). */
static bool check(cf_find_bench *bn, cf_find_ready *r, int *runs, double *ms)
{
    *runs = r->packed ? 2 : 1;
    *ms = 0;
    return checked_run(bn, r, NULL, NULL) &&
           (!r->packed || checked_run(bn, r, r->packed, ms));
}

/* One sample: `batch` runs between two events; milliseconds per run.  The runs are
 * queued behind cf_cuda_hold(), released once they all are, so that the events time the
 * device's work alone, back to back, as a CUDA graph replays it or as a host that runs
 * ahead of the device sees it.  Queued as they were issued, runs of about 10 us that
 * take the host as long to issue (a cuDNN execution and a separate epilogue kernel) were
 * timed at the host's pace: Find then ranked MobileNetV2's 1x1 projections at N=32 in
 * fp16 and bf16 by what their launches cost and chose configurations 1.3-1.5x slower
 * than PyTorch's under graph replay (docs/cuda.md).  The hold gives up after
 * CF_CUDA_HOLD_NS, so a run that waits for the device while it is held only costs that
 * sample its precision. */
static convfind_status sample(cf_find_bench *bn, cf_find_ready *r, int batch, double *ms)
{
    convfind_status st = CONVFIND_OK;
    *bn->hold = 0; /* the last sample's hold has ended: its stream was synchronized */
    int held = cf_cuda_hold(bn->hold, CF_CUDA_HOLD_NS, bn->stream);
    cudaEventRecord(bn->e0, bn->stream);
    for (int i = 0; i < batch && st == CONVFIND_OK; i++)
        st = run(bn, r->a, r->state, r->packed);
    cudaEventRecord(bn->e1, bn->stream);
    __atomic_store_n(bn->hold, 1, __ATOMIC_RELEASE);
    int err = held ? held : (int)cudaEventSynchronize(bn->e1);
    float elapsed = 0;
    if (!err)
        err = cudaEventElapsedTime(&elapsed, bn->e0, bn->e1);
    if (st == CONVFIND_OK && err)
        st = cf_cuda_fail(err, "timing a candidate");
    *ms = (double)elapsed / batch;
    return st;
}

static convfind_status synchronize(cf_find_bench *bn)
{
    if (!bn->dead) {
        const cudaError_t err = cudaStreamSynchronize(bn->stream);
        cudaGetLastError(); /* a refused launch must not be reported by the next candidate */
        cf_clear_error();
        /* A sticky error survives cudaGetLastError(): every later call returns it. */
        if (err != cudaSuccess && cudaStreamQuery(bn->stream) != cudaSuccess) {
            bn->dead = (int)err;
            snprintf(bn->killed_by, sizeof bn->killed_by, "%s", bn->current);
        }
    }
    return bn->dead ? cf_fail(CONVFIND_ERR_BACKEND,
                              "candidate %s left a sticky CUDA error (%s): nothing more can run "
                              "on this device in this process", bn->killed_by,
                              cudaGetErrorString((cudaError_t)bn->dead))
                    : CONVFIND_OK;
}

static int neighbors(cf_find_bench *bn, const char *name, char (*names)[CF_ALGO_NAME_MAX], int cap)
{
    return cf_cuda_cudnn_neighbors(bn->p, bn->d, name, names, cap);
}

static void learn(const cf_backend_state *s, const cf_problem *p,
                  const cf_candidate_stats *ranked, const bool *far, int n)
{
    cf_cuda_cudnn_learn((const cf_cuda_device *)s, p, ranked, far, n);
}

const cf_find_hooks cf_cuda_find_hooks = {
    .enumerate = enumerate,
    .bench_create = bench_create,
    .bench_destroy = bench_destroy,
    .prepare = prepare,
    .release = release,
    .check = check,
    .sample = sample,
    .synchronize = synchronize,
    .neighbors = neighbors,
    .learn = learn,
    .sample_target_ms = CF_CUDA_SAMPLE_MS,
    /* A race: each candidate gets CF_CUDA_SCREEN_SAMPLES samples, the close ones a final
     * round in turns (find.h). */
    .final_round = true,
    .reference_last = true,
    .min_repeats = CF_CUDA_SCREEN_SAMPLES,
    .max_repeats = CF_CUDA_SCREEN_SAMPLES,
    .final_rounds = CF_CUDA_FINAL_ROUNDS,
    .refine_max = CF_CUDA_REFINE_MAX,
};
