/*
 * find.c - Find on a CUDA context (see find.h).
 */
#include "cuda/find.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda/algos.h"
#include "cuda/graph.h"
#include "cuda/kernels.h"
#include "find/rank.h"
#include "util/error.h"

/* The candidates in list order: algo[i] runs the configuration named s[i].algo. */
typedef struct cands {
    int n;
    const cf_algo *algo[CF_CUDA_MAX_VARIANTS + 1];
    cf_candidate_stats s[CF_CUDA_MAX_VARIANTS + 1];
} cands;

/* Every candidate name for p on d, cuDNN configurations first; for a Find that
 * validates them, also the engines the heuristics do not list and the split
 * configurations (algos.h). */
static convfind_status list_candidates(const cf_cuda_device *d, const cf_problem *p,
                                       bool validating, cands **out)
{
    char (*names)[64] = calloc(CF_CUDA_MAX_VARIANTS, sizeof *names);
    cands *c = calloc(1, sizeof *c);
    if (!names || !c) {
        free(names);
        free(c);
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate the CUDA candidate list");
    }
    int n = cf_cuda_cudnn_variants(
        p, d, validating ? CF_CUDA_VARIANTS_UNLISTED | CF_CUDA_VARIANTS_SPLIT : 0, names,
        CF_CUDA_MAX_VARIANTS);
    for (int i = 0; i < n; i++) {
        c->algo[i] = &cf_algo_cuda_cudnn;
        memcpy(c->s[i].algo, names[i], sizeof c->s[i].algo);
    }
    c->algo[n] = &cf_algo_cuda_direct;
    snprintf(c->s[n].algo, sizeof c->s[n].algo, "%s", cf_algo_cuda_direct.name);
    c->n = n + 1;
    free(names);
    *out = c;
    return CONVFIND_OK;
}

static convfind_status to_decision(const cands *c, cf_decision *out)
{
    const int n = c->n;
    if (n < 1 || n > CF_CUDA_MAX_VARIANTS + 1)
        return cf_fail(CONVFIND_ERR_BACKEND, "%d CUDA candidates", n);
    out->candidates = calloc((size_t)n, sizeof *out->candidates);
    if (!out->candidates)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %d candidates", n);
    memcpy(out->candidates, c->s, (size_t)n * sizeof *out->candidates);
    out->n_candidates = n;
    memcpy(out->algo, out->candidates[0].algo, sizeof out->algo);
    return CONVFIND_OK;
}

convfind_status cf_cuda_find_heuristic(const cf_cuda_device *d, const cf_problem *p,
                                       cf_decision *out)
{
    memset(out, 0, sizeof *out);
    cands *c;
    convfind_status st = list_candidates(d, p, false, &c);
    if (st != CONVFIND_OK)
        return st;
    for (int i = 0; i < c->n; i++)
        c->s[i].status = CF_CAND_OK;
    st = to_decision(c, out);
    free(c);
    return st;
}

/* ------------------------------------------------------------------------- */
/* Measurement                                                                */
/* ------------------------------------------------------------------------- */

typedef struct bench {
    const cf_cuda_device *d;
    const cf_problem *p;
    const cf_find_config *cfg;
    cudaStream_t stream;
    cudaEvent_t e0, e1;
    void *x, *w, *b, *z, *y;
    float *y_float;          /* device: Y converted for checking */
    float *ref, *got;        /* host */
    double ref_norm;
} bench;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static bool cancelled(const cf_find_config *cfg)
{
    return cfg->cancel && atomic_load_explicit(cfg->cancel, memory_order_relaxed);
}

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

static convfind_status run(const bench *bn, const cf_algo *a, const void *state)
{
    cf_exec_args args = {
        .x = bn->x, .w = bn->w, .y = bn->y, .b = bn->p->has_bias ? bn->b : NULL,
        .z = bn->p->has_residual ? bn->z : NULL, .stream = bn->stream, .device = bn->d,
    };
    return a->execute(bn->p, state, &args);
}

/* Y as floats on the host, into `dst`, after the stream's work. */
static convfind_status fetch_y(const bench *bn, float *dst)
{
    const size_t n = bn->p->y_elems;
    int err = cf_cuda_to_float(bn->y, bn->p->dtype, bn->y_float, n, bn->stream);
    if (!err)
        err = cudaMemcpyAsync(dst, bn->y_float, n * sizeof(float), cudaMemcpyDeviceToHost,
                              bn->stream);
    if (!err)
        err = cudaStreamSynchronize(bn->stream);
    return err ? cf_cuda_fail(err, "reading Y back") : CONVFIND_OK;
}

static bool matches(const bench *bn, const char *algo)
{
    double diff = 0;
    for (size_t i = 0; i < bn->p->y_elems; i++) {
        double e = (double)bn->got[i] - (double)bn->ref[i];
        diff += e * e;
        if (isnan(bn->got[i]))
            return false;
    }
    return sqrt(diff) <= tolerance(bn->p, algo) * bn->ref_norm;
}

static void bench_free(bench *bn)
{
    void *dev[] = {bn->x, bn->w, bn->b, bn->z, bn->y, bn->y_float};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        if (dev[i])
            cudaFree(dev[i]);
    if (bn->e0)
        cudaEventDestroy(bn->e0);
    if (bn->e1)
        cudaEventDestroy(bn->e1);
    if (bn->stream)
        cudaStreamDestroy(bn->stream);
    free(bn->ref);
    free(bn->got);
}

static convfind_status bench_init(bench *bn, const cf_cuda_device *d, const cf_problem *p,
                                  const cf_find_config *cfg)
{
    memset(bn, 0, sizeof *bn);
    bn->d = d;
    bn->p = p;
    bn->cfg = cfg;
    const size_t e = cf_dtype_size(p->dtype);
    const size_t yn = p->y_elems ? p->y_elems : 1;
    int err = cudaStreamCreateWithFlags(&bn->stream, cudaStreamNonBlocking);
    if (!err)
        err = cudaEventCreate(&bn->e0);
    if (!err)
        err = cudaEventCreate(&bn->e1);
    const struct {
        void **ptr;
        size_t bytes;
    } bufs[] = {
        {&bn->x, p->x_elems * e}, {&bn->w, p->w_elems * e}, {&bn->b, (size_t)p->m * e},
        {&bn->z, yn * e},         {&bn->y, yn * e},         {(void **)&bn->y_float, yn * 4},
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
    bn->ref = malloc(yn * sizeof(float));
    bn->got = malloc(yn * sizeof(float));
    if (!bn->ref || !bn->got)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate 2 x %zu floats", yn);
    if (!cfg->validate)
        return CONVFIND_OK;
    convfind_status st = run(bn, &cf_algo_cuda_direct, NULL);
    if (st == CONVFIND_OK)
        st = fetch_y(bn, bn->ref);
    for (size_t i = 0; i < p->y_elems; i++)
        bn->ref_norm += (double)bn->ref[i] * bn->ref[i];
    bn->ref_norm = sqrt(bn->ref_norm);
    return st;
}

/* One sample: `batch` runs between two events; milliseconds per run. */
static convfind_status sample(const bench *bn, const cf_algo *a, const void *state, int batch,
                              double *ms)
{
    convfind_status st = CONVFIND_OK;
    cudaEventRecord(bn->e0, bn->stream);
    for (int i = 0; i < batch && st == CONVFIND_OK; i++)
        st = run(bn, a, state);
    cudaEventRecord(bn->e1, bn->stream);
    int err = cudaEventSynchronize(bn->e1);
    float elapsed = 0;
    if (!err)
        err = cudaEventElapsedTime(&elapsed, bn->e0, bn->e1);
    if (st == CONVFIND_OK && err)
        st = cf_cuda_fail(err, "timing a candidate");
    *ms = (double)elapsed / batch;
    return st;
}

static void time_candidate(const bench *bn, const cf_algo *a, const void *state,
                           cf_candidate_stats *c, double best_ms, double share_s)
{
    double t[CF_FIND_MAX_REPEATS], first;
    if (sample(bn, a, state, 1, &first) != CONVFIND_OK) {
        c->status = CF_CAND_FAILED;
        return;
    }
    int batch = first > 0 ? (int)ceil(0.25 / first) : 32;
    batch = batch < 1 ? 1 : batch > 32 ? 32 : batch;
    int n = 0;
    const double start = now_s();
    c->status = CF_CAND_OK;
    while (n < CF_FIND_MAX_REPEATS) {
        if (cancelled(bn->cfg)) {
            c->status = CF_CAND_ABANDONED;
            break;
        }
        if (sample(bn, a, state, batch, &t[n]) != CONVFIND_OK) {
            c->status = CF_CAND_FAILED;
            break;
        }
        n++;
        if (cf_find_abandon(t, n, best_ms)) {
            c->status = CF_CAND_ABANDONED;
            break;
        }
        if (n >= CF_FIND_MIN_REPEATS && now_s() - start >= share_s)
            break;
    }
    cf_find_summarize(c, t, n);
}

static void measure_one(const bench *bn, const cf_algo *a, cf_candidate_stats *c, double best_ms,
                        double share_s)
{
    void *state = NULL;
    if (cf_algo_prepare(a, bn->p, c->algo, &state) != CONVFIND_OK ||
        cf_cuda_algo_workspace(bn->d, bn->p, a, c->algo, &c->workspace_bytes) !=
            CONVFIND_OK) {
        c->status = CF_CAND_FAILED;
        goto done;
    }
    if (bn->cfg->workspace_limit && c->workspace_bytes > bn->cfg->workspace_limit) {
        c->status = CF_CAND_NOT_APPLICABLE;
        goto done;
    }
    cudaMemsetAsync(bn->y, 0xff, bn->p->y_elems * cf_dtype_size(bn->p->dtype), bn->stream);
    if (run(bn, a, state) != CONVFIND_OK ||
        (bn->cfg->validate &&
         (fetch_y(bn, bn->got) != CONVFIND_OK || !matches(bn, c->algo)))) {
        c->status = CF_CAND_FAILED;
        goto done;
    }
    c->validated = bn->cfg->validate;
    if (run(bn, a, state) != CONVFIND_OK) {
        c->status = CF_CAND_FAILED;
        goto done;
    }
    time_candidate(bn, a, state, c, best_ms, share_s);
done:
    if (a->release)
        a->release(state);
    cudaStreamSynchronize(bn->stream);
    cudaGetLastError(); /* a refused launch must not be reported by the next candidate */
    cf_clear_error();
}

/* Knob refinement, for a validating Find: the neighbours of the fastest cuDNN
 * configuration (one knob changed within the range its engine advertises, which the
 * heuristics list only partly) are timed like the others, in at most KNOB_ROUNDS
 * rounds, a further round only when a neighbour won the last one, within half the
 * Find budget again and the room the candidate list has left (a retuning Find only
 * the neighbours it retunes). */
#define KNOB_ROUNDS 2

static void refine_knobs(const bench *bn, cands *c, double share, double *best_ms)
{
    const double start = now_s(), budget = bn->cfg->budget_s / 2;
    char (*names)[64] = calloc(CF_CUDA_MAX_VARIANTS, sizeof *names);
    for (int round = 0; names && round < KNOB_ROUNDS; round++) {
        int base = -1;
        for (int i = 0; i < c->n; i++)
            if (c->algo[i] == &cf_algo_cuda_cudnn && c->s[i].status == CF_CAND_OK &&
                (base < 0 || c->s[i].median_ms < c->s[base].median_ms))
                base = i;
        if (base < 0)
            break;
        const double before = c->s[base].median_ms;
        int k = cf_cuda_cudnn_neighbors(bn->p, bn->d, c->s[base].algo, names,
                                        CF_CUDA_MAX_VARIANTS);
        bool won = false;
        for (int j = 0; j < k && c->n < CF_CUDA_MAX_VARIANTS + 1; j++) {
            bool known = false;
            for (int i = 0; i < c->n && !known; i++)
                known = strcmp(c->s[i].algo, names[j]) == 0;
            if (known || (bn->cfg->retune && !cf_find_retuned(bn->cfg->retune, names[j])))
                continue;
            if (now_s() - start > budget || cancelled(bn->cfg))
                break;
            int i = c->n++;
            c->algo[i] = &cf_algo_cuda_cudnn;
            memset(&c->s[i], 0, sizeof c->s[i]);
            memcpy(c->s[i].algo, names[j], sizeof c->s[i].algo);
            measure_one(bn, c->algo[i], &c->s[i], *best_ms, share);
            if (c->s[i].status == CF_CAND_OK && c->s[i].median_ms < *best_ms) {
                *best_ms = c->s[i].median_ms;
                won = won || c->s[i].median_ms < before;
            }
        }
        if (!won)
            break;
    }
    free(names);
}

convfind_status cf_cuda_find_measure(const cf_cuda_device *d, const cf_problem *p,
                                     const cf_find_config *cfg, cf_decision *out)
{
    memset(out, 0, sizeof *out);
    cands *c;
    convfind_status st = list_candidates(d, p, cfg->validate, &c);
    if (st != CONVFIND_OK)
        return st;
    const int n = c->n; /* before refine_knobs() adds to the list */
    cf_candidate_stats *s = c->s;
    int prev = cf_cuda_enter(d);
    bench bn;
    st = bench_init(&bn, d, p, cfg);
    int incumbent = 0;
    for (int i = 0; cfg->incumbent && i < n; i++)
        if (strcmp(s[i].algo, cfg->incumbent) == 0)
            incumbent = i;
    const double start = now_s(), share = cfg->budget_s / n;
    double best_ms = 0;
    for (int k = -1; st == CONVFIND_OK && k < n; k++) {
        int i = k < 0 ? incumbent : k;
        if (k >= 0 && i == incumbent)
            continue;
        if (k >= 0 && (now_s() - start > cfg->budget_s ||
                       (cfg->retune && !cf_find_retuned(cfg->retune, s[i].algo)))) {
            s[i].status = CF_CAND_ABANDONED;
            continue;
        }
        measure_one(&bn, c->algo[i], &s[i], best_ms, share);
        if (cancelled(cfg))
            st = cf_fail(CONVFIND_ERR_BACKEND, "find cancelled");
        if (s[i].status == CF_CAND_OK && (best_ms == 0 || s[i].median_ms < best_ms))
            best_ms = s[i].median_ms;
    }
    if (st == CONVFIND_OK && cfg->validate)
        refine_knobs(&bn, c, share, &best_ms);
    bench_free(&bn);
    cf_cuda_leave(prev);
    /* Nothing timed to the end: the first ABANDONED in list order, no preferred one. */
    int pick = st == CONVFIND_OK ? cf_find_choose(s, c->n, incumbent, NULL) : -1;
    if (st == CONVFIND_OK && pick < 0)
        st = cf_fail(CONVFIND_ERR_BACKEND, "every CUDA candidate failed on this problem");
    if (st == CONVFIND_OK) {
        cf_find_rank(s, c->n, pick);
        st = to_decision(c, out);
    }
    free(c);
    return st;
}
