/*
 * find.c - the timing protocol, validation and ranking of Find (see find.h).
 */
#include "find/find.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "find/algos.h"
#include "util/error.h"

extern const cf_algo cf_algo_cpu_reference;

double cf_find_error_factor(const char *family)
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

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void set_name(cf_candidate_stats *c, const char *name)
{
    strncpy(c->algo, name, sizeof c->algo - 1);
    c->algo[sizeof c->algo - 1] = '\0';
}

convfind_status cf_find_heuristic(const cf_problem *p, size_t limit, cf_decision *out)
{
    memset(out, 0, sizeof *out);
    int n;
    const cf_algo *const *all = cf_algos(&n);
    cf_candidate_stats *c = calloc((size_t)n, sizeof *c);
    if (!c)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %d candidates", n);
    int k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            size_t ws = 0;
            bool ok = cf_algo_usable(all[i], p, limit, &ws);
            if (ok != (pass == 0))
                continue;
            set_name(&c[k], all[i]->name);
            c[k].status = ok ? CF_CAND_OK : CF_CAND_NOT_APPLICABLE;
            c[k].workspace_bytes = ws;
            k++;
        }
    if (n == 0 || c[0].status != CF_CAND_OK) {
        free(c);
        return cf_fail(CONVFIND_ERR_UNSUPPORTED,
                       "no algorithm runs this problem (dtype %d) within a workspace of %zu bytes",
                       (int)p->dtype, limit);
    }
    memcpy(out->algo, c[0].algo, sizeof out->algo);
    out->n_candidates = n;
    out->candidates = c;
    return CONVFIND_OK;
}

/* ------------------------------------------------------------------------- */
/* Measurement                                                                */
/* ------------------------------------------------------------------------- */

typedef struct bench {
    const cf_problem *p;
    const cf_find_config *cfg;
    float *x, *w, *b, *z, *y, *ref;
    double ref_max;   /* max |ref| */
    size_t reduction; /* multiply-adds summed into one output */
} bench;

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

static convfind_status bench_init(bench *bn, const cf_problem *p, const cf_find_config *cfg)
{
    memset(bn, 0, sizeof *bn);
    bn->p = p;
    bn->cfg = cfg;
    size_t yb = p->y_elems ? p->y_elems : 1;
    bn->x = malloc(p->x_elems * sizeof(float));
    bn->w = malloc(p->w_elems * sizeof(float));
    bn->b = malloc((size_t)p->m * sizeof(float));
    bn->z = malloc(yb * sizeof(float));
    bn->y = malloc(yb * sizeof(float));
    bn->ref = malloc(yb * sizeof(float));
    if (!bn->x || !bn->w || !bn->b || !bn->z || !bn->y || !bn->ref)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY,
                       "cannot allocate Find's test tensors (%zu + %zu + 3 x %zu floats)",
                       p->x_elems, p->w_elems, p->y_elems);
    fill(bn->x, p->x_elems, 1);
    fill(bn->w, p->w_elems, 2);
    fill(bn->b, (size_t)p->m, 3);
    fill(bn->z, p->y_elems, 4);
    bn->reduction = (size_t)cf_cin_per_group(p) * (size_t)p->k_sp;
    return CONVFIND_OK;
}

static void bench_free(bench *bn)
{
    free(bn->x);
    free(bn->w);
    free(bn->b);
    free(bn->z);
    free(bn->y);
    free(bn->ref);
}

static convfind_status run_once(const bench *bn, const cf_algo *a, const void *state, void *ws,
                                size_t ws_size, float *y)
{
    cf_exec_args args = {
        .x = bn->x, .w = bn->w, .y = y, .workspace = ws, .workspace_size = ws_size,
        .b = bn->p->has_bias ? bn->b : NULL, .z = bn->p->has_residual ? bn->z : NULL,
        .pool = bn->cfg->pool,
    };
    return a->execute(bn->p, state, &args);
}

static convfind_status bench_reference(bench *bn)
{
    convfind_status st = run_once(bn, &cf_algo_cpu_reference, NULL, NULL, 0, bn->ref);
    if (st != CONVFIND_OK)
        return st;
    for (size_t i = 0; i < bn->p->y_elems; i++)
        if (fabsf(bn->ref[i]) > bn->ref_max)
            bn->ref_max = fabsf(bn->ref[i]);
    return CONVFIND_OK;
}

static bool matches_reference(const bench *bn, const cf_algo *a)
{
    double bound = cf_find_error_factor(a->family) * FLT_EPSILON * (double)(bn->reduction + 1) *
                   (1.0 + bn->ref_max);
    for (size_t i = 0; i < bn->p->y_elems; i++) {
        double d = fabs((double)bn->y[i] - (double)bn->ref[i]);
        if (!(d <= bound)) /* also catches NaN: the output was not written */
            return false;
    }
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void summarize(cf_candidate_stats *c, double *t, int n)
{
    c->repeats = n;
    if (n == 0)
        return;
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    c->min_ms = t[0] * 1e3;
    c->median_ms = (n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2])) * 1e3;
    double p10 = t[(n - 1) / 10], p90 = t[(n - 1) - (n - 1) / 10];
    c->spread = c->median_ms > 0 ? (p90 - p10) * 1e3 / c->median_ms : 0;
}

static bool cancelled(const cf_find_config *cfg)
{
    return cfg->cancel && atomic_load_explicit(cfg->cancel, memory_order_relaxed);
}

/* Measures one usable candidate into `c`.  `best_ms` is the best median so far (0: none);
 * `share_s` its time allowance.  Returns CONVFIND_ERR_BACKEND only when cancelled. */
static convfind_status measure(const bench *bn, const cf_algo *a, cf_candidate_stats *c,
                               double best_ms, double share_s)
{
    void *state = NULL, *ws = NULL;
    if (a->prepare && a->prepare(bn->p, &state) != CONVFIND_OK) {
        c->status = CF_CAND_FAILED;
        return CONVFIND_OK;
    }
    size_t rounded = (c->workspace_bytes + 63) & ~(size_t)63;
    if (c->workspace_bytes && (rounded < c->workspace_bytes || !(ws = aligned_alloc(64, rounded)))) {
        /* No verdict: memory may be available later (DESIGN.md: an out-of-memory during
         * Find must not pin a slow fallback). */
        c->status = CF_CAND_ABANDONED;
        goto done;
    }
    for (size_t i = 0; i < bn->p->y_elems; i++)
        bn->y[i] = NAN;
    if (run_once(bn, a, state, ws, c->workspace_bytes, bn->y) != CONVFIND_OK ||
        (bn->cfg->validate && !matches_reference(bn, a))) {
        c->status = CF_CAND_FAILED;
        goto done;
    }
    c->validated = bn->cfg->validate;
    for (int i = 1; i < CF_FIND_WARMUPS; i++)
        if (run_once(bn, a, state, ws, c->workspace_bytes, bn->y) != CONVFIND_OK) {
            c->status = CF_CAND_FAILED;
            goto done;
        }
    double t[CF_FIND_MAX_REPEATS];
    int n = 0;
    double start = now_s();
    c->status = CF_CAND_OK;
    while (n < CF_FIND_MAX_REPEATS) {
        if (cancelled(bn->cfg)) {
            c->status = CF_CAND_ABANDONED;
            break;
        }
        double t0 = now_s();
        convfind_status st = run_once(bn, a, state, ws, c->workspace_bytes, bn->y);
        t[n++] = now_s() - t0;
        if (st != CONVFIND_OK) {
            c->status = CF_CAND_FAILED;
            break;
        }
        if (n >= CF_FIND_ABANDON_AFTER && best_ms > 0) {
            double fastest = t[0];
            for (int i = 1; i < n; i++)
                fastest = t[i] < fastest ? t[i] : fastest;
            if (fastest * 1e3 > CF_FIND_ABANDON_RATIO * best_ms) {
                c->status = CF_CAND_ABANDONED;
                break;
            }
        }
        if (n >= CF_FIND_MIN_REPEATS && now_s() - start >= share_s)
            break;
    }
    summarize(c, t, n);
done:
    free(ws);
    if (a->release)
        a->release(state);
    return cancelled(bn->cfg) ? cf_fail(CONVFIND_ERR_BACKEND, "find cancelled") : CONVFIND_OK;
}

/* Sort key of the ranked list: class, then median, workspace, list position. */
typedef struct ranked {
    cf_candidate_stats s;
    int cls;
    int index;
} ranked;

static int cmp_ranked(const void *pa, const void *pb)
{
    const ranked *a = pa, *b = pb;
    if (a->cls != b->cls)
        return a->cls - b->cls;
    if (a->s.median_ms != b->s.median_ms)
        return a->s.median_ms < b->s.median_ms ? -1 : 1;
    if (a->s.workspace_bytes != b->s.workspace_bytes)
        return a->s.workspace_bytes < b->s.workspace_bytes ? -1 : 1;
    return a->index - b->index;
}

/* Applies the margin and tie rules; returns the index (into r) of the choice. */
static int choose(const ranked *r, int n, int incumbent)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (r[i].s.status == CF_CAND_OK &&
            (best < 0 || r[i].s.median_ms < r[best].s.median_ms))
            best = i;
    if (best < 0) { /* nothing timed to the end: the reference if it did not fail, else
                       the first runnable in list order */
        int first = -1;
        for (int i = 0; i < n; i++) {
            if (r[i].s.status != CF_CAND_ABANDONED)
                continue;
            if (strcmp(r[i].s.algo, cf_algo_cpu_reference.name) == 0)
                return i;
            first = first < 0 ? i : first;
        }
        return first;
    }
    if (incumbent >= 0 && r[incumbent].s.status == CF_CAND_OK &&
        !(r[best].s.median_ms < r[incumbent].s.median_ms * (1.0 - CF_FIND_MARGIN)))
        return incumbent;
    int pick = best;
    for (int i = 0; i < n; i++) {
        if (r[i].s.status != CF_CAND_OK ||
            r[i].s.median_ms > r[best].s.median_ms * (1.0 + CF_FIND_MARGIN))
            continue;
        if (r[i].s.workspace_bytes < r[pick].s.workspace_bytes ||
            (r[i].s.workspace_bytes == r[pick].s.workspace_bytes && r[i].index < r[pick].index))
            pick = i;
    }
    return pick;
}

static const int status_class[] = {
    [CF_CAND_OK] = 1, [CF_CAND_ABANDONED] = 2, [CF_CAND_FAILED] = 3, [CF_CAND_NOT_APPLICABLE] = 4,
};

/* Whether RETUNE re-times `name`: one of the stored decision's top OK candidates. */
static bool retuned(const cf_decision *stored, const char *name)
{
    for (int i = 0, ok = 0; i < stored->n_candidates && ok < CF_FIND_RETUNE_TOP; i++) {
        if (stored->candidates[i].status != CF_CAND_OK)
            continue;
        if (strcmp(stored->candidates[i].algo, name) == 0)
            return true;
        ok++;
    }
    return false;
}

static convfind_status measure_all(bench *bn, const cf_algo *const *all, ranked *r, int n,
                                   int *incumbent)
{
    const cf_find_config *cfg = bn->cfg;
    int usable = 0, heuristic = -1;
    for (int i = 0; i < n; i++) {
        r[i].index = i;
        set_name(&r[i].s, all[i]->name);
        if (cf_algo_usable(all[i], bn->p, cfg->workspace_limit, &r[i].s.workspace_bytes)) {
            usable++;
            heuristic = heuristic < 0 ? i : heuristic;
        } else {
            r[i].s.status = CF_CAND_NOT_APPLICABLE;
        }
    }
    if (heuristic < 0)
        return cf_fail(CONVFIND_ERR_UNSUPPORTED,
                       "no algorithm runs this problem (dtype %d) within a workspace of %zu bytes",
                       (int)bn->p->dtype, cfg->workspace_limit);
    *incumbent = heuristic;
    for (int i = 0; cfg->incumbent && i < n; i++)
        if (strcmp(all[i]->name, cfg->incumbent) == 0 && r[i].s.status != CF_CAND_NOT_APPLICABLE)
            *incumbent = i;
    convfind_status st = cfg->validate ? bench_reference(bn) : CONVFIND_OK;
    if (st != CONVFIND_OK)
        return st;
    const double start = now_s(), share = cfg->budget_s / usable;
    double best_ms = 0;
    for (int k = -1; k < n; k++) { /* k == -1: the incumbent, timed first and always */
        int i = k < 0 ? *incumbent : k;
        if ((k >= 0 && i == *incumbent) || r[i].s.status == CF_CAND_NOT_APPLICABLE)
            continue;
        if (k >= 0 && (now_s() - start > cfg->budget_s ||
                       (cfg->retune && !retuned(cfg->retune, all[i]->name)))) {
            r[i].s.status = CF_CAND_ABANDONED; /* over budget or not re-timed: never started */
            continue;
        }
        if ((st = measure(bn, all[i], &r[i].s, best_ms, share)) != CONVFIND_OK)
            return st;
        if (r[i].s.status == CF_CAND_OK && (best_ms == 0 || r[i].s.median_ms < best_ms))
            best_ms = r[i].s.median_ms;
    }
    return CONVFIND_OK;
}

convfind_status cf_find_measure(const cf_problem *p, const cf_find_config *cfg, cf_decision *out)
{
    memset(out, 0, sizeof *out);
    int n;
    const cf_algo *const *all = cf_algos(&n);
    ranked *r = calloc((size_t)(n ? n : 1), sizeof *r);
    bench bn;
    convfind_status st = bench_init(&bn, p, cfg);
    int incumbent = -1;
    if (!r && st == CONVFIND_OK)
        st = cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %d candidates", n);
    if (st == CONVFIND_OK)
        st = measure_all(&bn, all, r, n, &incumbent);
    bench_free(&bn);
    int pick = st == CONVFIND_OK ? choose(r, n, incumbent) : -1;
    if (st == CONVFIND_OK && pick < 0)
        st = cf_fail(CONVFIND_ERR_BACKEND, "every candidate failed on this problem");
    cf_candidate_stats *c = st == CONVFIND_OK ? calloc((size_t)n, sizeof *c) : NULL;
    if (st == CONVFIND_OK && !c)
        st = cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %d candidates", n);
    if (st != CONVFIND_OK) {
        free(r);
        return st;
    }
    for (int i = 0; i < n; i++)
        r[i].cls = i == pick ? 0 : status_class[r[i].s.status];
    qsort(r, (size_t)n, sizeof *r, cmp_ranked);
    for (int i = 0; i < n; i++)
        c[i] = r[i].s;
    memcpy(out->algo, c[0].algo, sizeof out->algo);
    out->n_candidates = n;
    out->candidates = c;
    free(r);
    return CONVFIND_OK;
}
