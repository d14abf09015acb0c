/*
 * find.c - the timing protocol, validation and ranking of Find (see find.h).
 */
#include "find/find.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algo/registry.h"
#include "find/rank.h"
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

static convfind_status bench_init(bench *bn, const cf_problem *p, const cf_find_config *cfg)
{
    memset(bn, 0, sizeof *bn);
    bn->p = p;
    bn->cfg = cfg;
    size_t yb = p->y_elems ? p->y_elems : 1;
    bn->x = test_tensor(p->x_elems);
    bn->w = test_tensor(p->w_elems);
    bn->b = test_tensor((size_t)p->m);
    bn->z = test_tensor(yb);
    bn->y = test_tensor(yb);
    bn->ref = test_tensor(yb);
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

static convfind_status run_once(const bench *bn, const cf_algo *a, const void *state,
                                const void *packed, void *ws, size_t ws_size, float *y)
{
    cf_exec_args args = {
        .x = bn->x, .w = bn->w, .packed_w = packed, .y = y, .workspace = ws,
        .workspace_size = ws_size,
        .b = bn->p->has_bias ? bn->b : NULL, .z = bn->p->has_residual ? bn->z : NULL,
        .pool = bn->cfg->pool,
    };
    return a->execute(bn->p, state, &args);
}

static convfind_status bench_reference(bench *bn)
{
    convfind_status st = run_once(bn, &cf_algo_cpu_reference, NULL, NULL, NULL, 0, bn->ref);
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

/* One run into a NaN-filled Y (so an unwritten output fails); true when it succeeded
 * and, when validating, matched the reference. */
static bool validated_run(const bench *bn, const cf_algo *a, const void *state,
                          const void *packed, void *ws, size_t ws_size)
{
    for (size_t i = 0; i < bn->p->y_elems; i++)
        bn->y[i] = NAN;
    return run_once(bn, a, state, packed, ws, ws_size, bn->y) == CONVFIND_OK &&
           (!bn->cfg->validate || matches_reference(bn, a));
}

static bool cancelled(const cf_find_config *cfg)
{
    return cfg->cancel && atomic_load_explicit(cfg->cancel, memory_order_relaxed);
}

/* What one candidate's executions need: its state, workspace and packed weights. */
typedef struct ready {
    const cf_algo *a;
    void *state, *ws, *packed;
    size_t ws_size;
} ready;

static void ready_free(ready *rd)
{
    if (rd->packed && rd->a->free_packed)
        rd->a->free_packed(rd->packed);
    free(rd->ws);
    if (rd->a->release)
        rd->a->release(rd->state);
    memset(rd, 0, sizeof *rd);
}

/* Prepares candidate `a` (its workspace size in c) for timed runs; on failure sets
 * c->status and returns false with nothing held. */
static bool ready_make(const bench *bn, const cf_algo *a, cf_candidate_stats *c, ready *rd)
{
    memset(rd, 0, sizeof *rd);
    rd->a = a;
    rd->ws_size = c->workspace_bytes;
    if (a->prepare && a->prepare(bn->p, &rd->state) != CONVFIND_OK) {
        c->status = CF_CAND_FAILED;
        memset(rd, 0, sizeof *rd); /* nothing to release */
        return false;
    }
    size_t rounded = (rd->ws_size + 63) & ~(size_t)63;
    if (rd->ws_size && (rounded < rd->ws_size || !(rd->ws = aligned_alloc(64, rounded)))) {
        /* No verdict: memory may be available later (DESIGN.md: an out-of-memory during
         * Find must not pin a slow fallback). */
        c->status = CF_CAND_ABANDONED;
        ready_free(rd);
        return false;
    }
    /* Timed as a plan runs with weights packed once (convfind_packed_weights_create),
     * the steady state of inference: charged with packing on every run, direct and
     * Winograd kernels lost ResNet-50's res5 3x3 to im2col (1.45 ms) although they take
     * 0.9 and 0.7 ms with packed weights. */
    if (a->pack_weights && a->pack_weights(bn->p, rd->state, bn->w, &rd->packed) != CONVFIND_OK) {
        c->status = CF_CAND_ABANDONED; /* an allocation, like the workspace: no verdict */
        ready_free(rd);
        return false;
    }
    return true;
}

/* One timed run of a ready candidate into Y, in milliseconds (negative: it failed). */
static double timed_run(const bench *bn, const ready *rd)
{
    double t0 = now_s();
    convfind_status st = run_once(bn, rd->a, rd->state, rd->packed, rd->ws, rd->ws_size, bn->y);
    return st == CONVFIND_OK ? (now_s() - t0) * 1e3 : -1.0;
}

/* Measures one usable candidate into `c`.  `best_ms` is the best median so far (0: none);
 * `share_s` its time allowance.  Returns CONVFIND_ERR_BACKEND only when cancelled. */
static convfind_status measure(const bench *bn, const cf_algo *a, cf_candidate_stats *c,
                               double best_ms, double share_s)
{
    ready rd;
    if (!ready_make(bn, a, c, &rd))
        return cancelled(bn->cfg) ? cf_fail(CONVFIND_ERR_BACKEND, "find cancelled") : CONVFIND_OK;
    void *state = rd.state, *ws = rd.ws, *packed = rd.packed;
    /* Both paths an execution may take are checked: without packed weights (plans whose
     * caller packs nothing, fallbacks) and with them (the one timed). */
    if (!validated_run(bn, a, state, NULL, ws, c->workspace_bytes) ||
        (packed && !validated_run(bn, a, state, packed, ws, c->workspace_bytes))) {
        c->status = CF_CAND_FAILED;
        goto done;
    }
    c->validated = bn->cfg->validate;
    for (int i = packed ? 2 : 1; i < CF_FIND_WARMUPS; i++)
        if (run_once(bn, a, state, packed, ws, c->workspace_bytes, bn->y) != CONVFIND_OK) {
            c->status = CF_CAND_FAILED;
            goto done;
        }
    double t[CF_FIND_MAX_REPEATS]; /* milliseconds */
    int n = 0;
    double start = now_s();
    c->status = CF_CAND_OK;
    while (n < CF_FIND_MAX_REPEATS) {
        if (cancelled(bn->cfg)) {
            c->status = CF_CAND_ABANDONED;
            break;
        }
        double ms = timed_run(bn, &rd);
        if (ms < 0.0) {
            c->status = CF_CAND_FAILED;
            break;
        }
        t[n++] = ms;
        if (cf_find_abandon(t, n, best_ms)) {
            c->status = CF_CAND_ABANDONED;
            break;
        }
        if (n >= CF_FIND_MIN_REPEATS && now_s() - start >= share_s)
            break;
    }
    cf_find_summarize(c, t, n);
done:
    ready_free(&rd);
    return cancelled(bn->cfg) ? cf_fail(CONVFIND_ERR_BACKEND, "find cancelled") : CONVFIND_OK;
}

/* The final round (find.h, step 4): the OK candidates within CF_FIND_FINAL_WINDOW of the
 * fastest median, at most CF_FIND_FINALISTS, timed again in turns, one run each per
 * round (after an untimed one that warms its caches) with the order rotating, for CF_FIND_MIN_REPEATS to CF_FIND_MAX_REPEATS rounds
 * within `round_s`; their statistics become those of this round.  Timed one after the
 * other, candidates meet different machine states (another process's burst, a clock
 * change), and on a shared two-core machine that alone reordered candidates 10-30%
 * apart from one run of Find to the next; in turns, every finalist meets the same ones. */
static void final_round(const bench *bn, const cf_algo *const *all, cf_candidate_stats *r, int n,
                        double round_s)
{
    int pick[CF_FIND_FINALISTS], k = 0;
    /* Fastest first: each pass takes the fastest OK candidate not yet taken. */
    for (; k < CF_FIND_FINALISTS; k++) {
        int next = -1;
        for (int i = 0; i < n; i++) {
            bool taken = false;
            for (int j = 0; j < k && !taken; j++)
                taken = pick[j] == i;
            if (!taken && r[i].status == CF_CAND_OK &&
                (next < 0 || r[i].median_ms < r[next].median_ms))
                next = i;
        }
        if (next < 0 || (k > 0 && r[next].median_ms > r[pick[0]].median_ms *
                                                         (1.0 + CF_FIND_FINAL_WINDOW)))
            break;
        pick[k] = next;
    }
    if (k < 2)
        return;
    ready rd[CF_FIND_FINALISTS];
    int ok = 0;
    for (int j = 0; j < k; j++) {
        cf_candidate_stats scratch = r[pick[j]];
        if (ready_make(bn, all[pick[j]], &scratch, &rd[ok]) &&
            timed_run(bn, &rd[ok]) >= 0.0) /* a warm-up for the restored caches */
            pick[ok++] = pick[j];
        else if (rd[ok].a)
            ready_free(&rd[ok]);
    }
    static _Thread_local double t[CF_FIND_FINALISTS][CF_FIND_MAX_REPEATS];
    int rounds = 0;
    const double start = now_s();
    bool failed = false;
    while (!failed && rounds < CF_FIND_MAX_REPEATS && !cancelled(bn->cfg) &&
           (rounds < CF_FIND_MIN_REPEATS || now_s() - start < round_s)) {
        for (int j = 0; j < ok && !failed; j++) {
            int f = (j + rounds) % ok;
            /* One untimed run first: the previous turn's candidate evicted this one's
             * weights and workspace, and a cold run would favour the algorithm with the
             * smaller footprint (Winograd lost its 3x3 layers to direct that way). */
            failed = timed_run(bn, &rd[f]) < 0.0 || (t[f][rounds] = timed_run(bn, &rd[f])) < 0.0;
        }
        rounds += !failed;
    }
    for (int j = 0; j < ok; j++) {
        if (ok >= 2 && rounds >= CF_FIND_MIN_REPEATS)
            cf_find_summarize(&r[pick[j]], t[j], rounds);
        ready_free(&rd[j]);
    }
}

/* Measures every usable candidate into r (list order); *incumbent: the one timed first. */
static convfind_status measure_all(bench *bn, const cf_algo *const *all, cf_candidate_stats *r,
                                   int n, int *incumbent)
{
    const cf_find_config *cfg = bn->cfg;
    int usable = 0, heuristic = -1;
    for (int i = 0; i < n; i++) {
        set_name(&r[i], all[i]->name);
        if (cf_algo_usable(all[i], bn->p, cfg->workspace_limit, &r[i].workspace_bytes)) {
            usable++;
            heuristic = heuristic < 0 ? i : heuristic;
        } else {
            r[i].status = CF_CAND_NOT_APPLICABLE;
        }
    }
    if (heuristic < 0)
        return cf_fail(CONVFIND_ERR_UNSUPPORTED,
                       "no algorithm runs this problem (dtype %d) within a workspace of %zu bytes",
                       (int)bn->p->dtype, cfg->workspace_limit);
    *incumbent = heuristic;
    for (int i = 0; cfg->incumbent && i < n; i++)
        if (strcmp(all[i]->name, cfg->incumbent) == 0 && r[i].status != CF_CAND_NOT_APPLICABLE)
            *incumbent = i;
    convfind_status st = cfg->validate ? bench_reference(bn) : CONVFIND_OK;
    if (st != CONVFIND_OK)
        return st;
    const double start = now_s(), share = cfg->budget_s / usable;
    double best_ms = 0;
    for (int k = -1; k < n; k++) { /* k == -1: the incumbent, timed first and always */
        int i = k < 0 ? *incumbent : k;
        if ((k >= 0 && i == *incumbent) || r[i].status == CF_CAND_NOT_APPLICABLE)
            continue;
        if (k >= 0 && (now_s() - start > cfg->budget_s ||
                       (cfg->retune && !cf_find_retuned(cfg->retune, all[i]->name)))) {
            r[i].status = CF_CAND_ABANDONED; /* over budget or not re-timed: never started */
            continue;
        }
        if ((st = measure(bn, all[i], &r[i], best_ms, share)) != CONVFIND_OK)
            return st;
        if (r[i].status == CF_CAND_OK && (best_ms == 0 || r[i].median_ms < best_ms))
            best_ms = r[i].median_ms;
    }
    if (!cfg->retune)
        final_round(bn, all, r, n, CF_FIND_FINAL_SHARE * cfg->budget_s);
    return cancelled(cfg) ? cf_fail(CONVFIND_ERR_BACKEND, "find cancelled") : CONVFIND_OK;
}

convfind_status cf_find_measure(const cf_problem *p, const cf_find_config *cfg, cf_decision *out)
{
    memset(out, 0, sizeof *out);
    int n;
    const cf_algo *const *all = cf_algos(&n);
    cf_candidate_stats *r = calloc((size_t)(n ? n : 1), sizeof *r);
    bench bn;
    convfind_status st = bench_init(&bn, p, cfg);
    int incumbent = -1;
    if (!r && st == CONVFIND_OK)
        st = cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %d candidates", n);
    if (st == CONVFIND_OK)
        st = measure_all(&bn, all, r, n, &incumbent);
    bench_free(&bn);
    /* Nothing timed to the end: the reference is the safest of the ABANDONED. */
    int pick = st == CONVFIND_OK ? cf_find_choose(r, n, incumbent, cf_algo_cpu_reference.name)
                                 : -1;
    if (st == CONVFIND_OK && pick < 0)
        st = cf_fail(CONVFIND_ERR_BACKEND, "every candidate failed on this problem");
    if (st != CONVFIND_OK) {
        free(r);
        return st;
    }
    cf_find_rank(r, n, pick);
    memcpy(out->algo, r[0].algo, sizeof out->algo);
    out->n_candidates = n;
    out->candidates = r;
    return CONVFIND_OK;
}
