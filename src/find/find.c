/*
 * find.c - the one Find harness: candidates, timing protocol, refinement, final round
 * and ranking, driven through a backend's hooks (see find.h, algo/backend.h).
 */
#include "find/find.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/registry.h"
#include "find/rank.h"
#include "util/clock.h"
#include "util/error.h"

static bool cancelled(const cf_find_config *cfg)
{
    return cfg->cancel && atomic_load_explicit(cfg->cancel, memory_order_relaxed);
}

static convfind_status cancel_status(const cf_find_config *cfg)
{
    return cancelled(cfg) ? cf_fail(CONVFIND_ERR_BACKEND, "find cancelled") : CONVFIND_OK;
}

/* ------------------------------------------------------------------------- */
/* Candidates                                                                 */
/* ------------------------------------------------------------------------- */

/* The candidates of one Find in list order: algos[i] runs the form named stats[i].algo.
 * `cap` is the backend's most candidates; knob refinement appends up to it. */
typedef struct cands {
    int n, cap;
    const cf_algo **algos;
    cf_candidate_stats *stats;
} cands;

static void cands_free(cands *c)
{
    free(c->algos);
    free(c->stats);
}

/* A backend without enumerate(): its algorithm list, each usable within `limit`. */
static int list_algos(const cf_backend *b, const cf_problem *p, size_t limit,
                      const cf_algo **algos, cf_candidate_stats *stats, int cap)
{
    int n;
    const cf_algo *const *all = cf_backend_algos(b, &n);
    n = n < cap ? n : cap;
    for (int i = 0; i < n; i++) {
        algos[i] = all[i];
        snprintf(stats[i].algo, sizeof stats[i].algo, "%s", all[i]->name);
        stats[i].status = cf_algo_usable(all[i], p, limit, &stats[i].workspace_bytes)
                              ? CF_CAND_OK
                              : CF_CAND_NOT_APPLICABLE;
    }
    return n;
}

static convfind_status cands_list(const cf_backend *b, const cf_backend_state *s,
                                  const cf_problem *p, size_t limit, unsigned lists, cands *c)
{
    memset(c, 0, sizeof *c);
    c->cap = cf_backend_max_candidates(b);
    const size_t cap = (size_t)(c->cap > 0 ? c->cap : 1);
    c->algos = calloc(cap, sizeof *c->algos);
    c->stats = calloc(cap, sizeof *c->stats);
    if (!c->algos || !c->stats) {
        cands_free(c);
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %d candidates", c->cap);
    }
    c->n = b->find->enumerate
               ? b->find->enumerate(s, p, limit, lists, c->algos, c->stats, c->cap)
               : list_algos(b, p, limit, c->algos, c->stats, c->cap);
    return CONVFIND_OK;
}

static convfind_status unsupported(const cf_problem *p, size_t limit)
{
    return cf_fail(CONVFIND_ERR_UNSUPPORTED,
                   "no algorithm runs this problem (dtype %d) within a workspace of %zu bytes",
                   (int)p->dtype, limit);
}

convfind_status cf_find_heuristic(const cf_backend *b, const cf_backend_state *s,
                                  const cf_problem *p, size_t limit, cf_decision *out)
{
    memset(out, 0, sizeof *out);
    cands c;
    convfind_status st = cands_list(b, s, p, limit, 0, &c);
    if (st != CONVFIND_OK)
        return st;
    const int n = c.n;
    cf_candidate_stats *r = calloc((size_t)(n ? n : 1), sizeof *r);
    int k = 0;
    for (int pass = 0; r && pass < 2; pass++) /* usable ones first, each part in list order */
        for (int i = 0; i < n; i++)
            if ((c.stats[i].status == CF_CAND_OK) == (pass == 0))
                r[k++] = c.stats[i];
    cands_free(&c);
    if (!r)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %d candidates", n);
    if (n == 0 || r[0].status != CF_CAND_OK) {
        free(r);
        return unsupported(p, limit);
    }
    memcpy(out->algo, r[0].algo, sizeof out->algo);
    out->n_candidates = n;
    out->candidates = r;
    return CONVFIND_OK;
}

/* ------------------------------------------------------------------------- */
/* Measurement                                                                */
/* ------------------------------------------------------------------------- */

typedef struct find_run {
    const cf_find_hooks *h;
    const cf_algo *reference; /* the backend's */
    const cf_find_config *cfg;
    cf_find_bench *bench;
    cands c;
    bool trace;        /* cfg->trace: one line per candidate on stderr */
    double reported_s; /* what every run so far reported, in all */
} find_run;

/* A point from which Find's spending is counted (clock_start, spent_s). */
typedef struct find_clock {
    double wall_s, reported_s;
} find_clock;

static find_clock clock_start(const find_run *f)
{
    return (find_clock){cf_now_s(), f->reported_s};
}

/* Seconds spent since `c`: the host clock, and never less than what the runs reported
 * meanwhile.  A backend's times may come from another clock than the host's (a device's
 * events) or, for a fake backend in a test, from runs that took no time: the budget
 * follows the larger, so that runs reported longer than the budget end the Find as if
 * they had taken that long. */
static double spent_s(const find_run *f, find_clock c)
{
    const double wall = cf_now_s() - c.wall_s, reported = f->reported_s - c.reported_s;
    return wall > reported ? wall : reported;
}

static int min_repeats(const cf_find_hooks *h)
{
    return h->min_repeats > 0 ? h->min_repeats : CF_FIND_MIN_REPEATS;
}

static int max_repeats(const cf_find_hooks *h)
{
    const int most = h->max_repeats > 0 ? h->max_repeats : CF_FIND_MAX_REPEATS;
    return most < CF_FIND_MAX_REPEATS ? most : CF_FIND_MAX_REPEATS;
}

/* Where a candidate's time went, for the trace. */
typedef struct phase_times {
    double prepare_ms, check_ms, timing_ms;
} phase_times;

static void trace_candidate(const find_run *f, const char *what, const cf_candidate_stats *c,
                            const phase_times *t)
{
    static const char *const names[] = {
        [CF_CAND_OK] = "ok", [CF_CAND_FAILED] = "failed",
        [CF_CAND_NOT_APPLICABLE] = "not_applicable", [CF_CAND_ABANDONED] = "abandoned",
    };
    if (f->trace)
        fprintf(stderr, "find: %s %s %s prepare_ms=%.2f check_ms=%.2f timing_ms=%.2f "
                "repeats=%d median_ms=%.4f\n", what, c->algo, names[c->status], t->prepare_ms,
                t->check_ms, t->timing_ms, c->repeats, c->median_ms);
}

static convfind_status synchronize(const find_run *f)
{
    return f->h->synchronize ? f->h->synchronize(f->bench) : CONVFIND_OK;
}

/* The backend's sample, its runs' time counted as spent. */
static convfind_status sample(find_run *f, cf_find_ready *r, int batch, double *ms)
{
    const convfind_status st = f->h->sample(f->bench, r, batch, ms);
    if (st == CONVFIND_OK)
        f->reported_s += 1e-3 * *ms * batch;
    return st;
}

/* Untimed warm-up runs after the check's `runs`, up to CF_FIND_WARMUPS in all, while
 * the candidate (counted from `since`) has not spent `share_s`: a run that long already
 * leaves little for a cold cache to change. */
static bool warm_up(find_run *f, cf_find_ready *r, int runs, find_clock since, double share_s)
{
    double ms;
    for (int i = runs; i < CF_FIND_WARMUPS && spent_s(f, since) < share_s; i++)
        if (sample(f, r, 1, &ms) != CONVFIND_OK)
            return false;
    return true;
}

/* Runs per sample: 1, or with a sample target as many as fill it by a first sample,
 * whose time per run goes to *first (0 without one). */
static bool batch_size(find_run *f, cf_find_ready *r, int *batch, double *first)
{
    *batch = 1;
    *first = 0;
    const double target = f->h->sample_target_ms;
    if (target <= 0)
        return true;
    if (sample(f, r, 1, first) != CONVFIND_OK)
        return false;
    const double want = *first > 0 ? ceil(target / *first) : CF_FIND_MAX_BATCH;
    *batch = want > CF_FIND_MAX_BATCH ? CF_FIND_MAX_BATCH : want < 1 ? 1 : (int)want;
    return true;
}

/* Whether one run of `ms` is beyond saving against the best median so far (0: none):
 * slower than CF_FIND_FIRST_ABANDON_RATIO times it plus what launching one run alone
 * adds to it. */
static bool far_slower(double ms, double best_ms)
{
    return best_ms > 0 &&
           ms > CF_FIND_FIRST_ABANDON_RATIO * best_ms + CF_FIND_FIRST_ABANDON_SLACK_MS;
}

/* Tells the backend (hooks->learn) how a completed Find ended: which candidates were
 * beyond saving against the choice, by the rule that abandons a first run. */
static void learn(const cf_backend *b, const cf_backend_state *s, const cf_problem *p,
                  const cf_candidate_stats *ranked, int n)
{
    bool *far;
    if (!b->find->learn || n < 1 || ranked[0].status != CF_CAND_OK ||
        !(far = calloc((size_t)n, sizeof *far)))
        return;
    for (int i = 1; i < n; i++)
        far[i] = ranked[i].repeats > 0 && far_slower(ranked[i].median_ms, ranked[0].median_ms);
    b->find->learn(s, p, ranked, far, n);
    free(far);
}

/* Measures candidate i into its statistics.  `best_ms` is the best median so far (0:
 * none); `share_s` its time allowance.  Returns an error only when cancelled or when the
 * backend's synchronize() says the device can run nothing more. */
static convfind_status measure(find_run *f, int i, double best_ms, double share_s)
{
    const cf_find_hooks *h = f->h;
    cf_candidate_stats *c = &f->c.stats[i];
    cf_find_ready *r;
    phase_times pt = {0, 0, 0};
    double t0 = cf_now_s();
    const cf_candidate_status ready = h->prepare(f->bench, f->c.algos[i], c, &r);
    pt.prepare_ms = 1e3 * (cf_now_s() - t0);
    if (ready != CF_CAND_OK) {
        c->status = ready;
        const convfind_status st = synchronize(f);
        trace_candidate(f, "candidate", c, &pt);
        return st != CONVFIND_OK ? st : cancel_status(f->cfg);
    }
    double t[CF_FIND_MAX_REPEATS]; /* milliseconds per run */
    int n = 0, runs = 0, batch;
    double checked, first;
    t0 = cf_now_s();
    const find_clock whole = clock_start(f); /* the check, warm-ups and samples */
    if (!h->check(f->bench, r, &runs, &checked)) {
        c->status = CF_CAND_FAILED;
        pt.check_ms = 1e3 * (cf_now_s() - t0);
        goto done;
    }
    pt.check_ms = 1e3 * (cf_now_s() - t0);
    f->reported_s += 1e-3 * checked * runs;
    t0 = cf_now_s();
    c->validated = f->cfg->validate;
    /* One run already far slower than the best: no batch of samples can save it.  The
     * check's timed run says so when there is one, else the first sample (which sizes
     * the batch). */
    double one = checked;
    if (!far_slower(one, best_ms)) {
        if (!warm_up(f, r, runs, whole, share_s) || !batch_size(f, r, &batch, &first)) {
            c->status = CF_CAND_FAILED;
            goto done;
        }
        one = first;
    }
    if (far_slower(one, best_ms)) {
        c->status = CF_CAND_ABANDONED;
        t[n++] = one;
        cf_find_summarize(c, t, n);
        goto done;
    }
    const find_clock samples = clock_start(f);
    const int least = min_repeats(h), most = max_repeats(h);
    double fastest = 0;
    c->status = CF_CAND_OK;
    while (n < most) {
        if (cancelled(f->cfg)) {
            c->status = CF_CAND_ABANDONED;
            break;
        }
        if (sample(f, r, batch, &t[n]) != CONVFIND_OK) {
            c->status = CF_CAND_FAILED;
            break;
        }
        fastest = n == 0 || t[n] < fastest ? t[n] : fastest;
        n++;
        if (cf_find_abandon(t, n, best_ms)) {
            c->status = CF_CAND_ABANDONED;
            break;
        }
        /* Past the least samples, until the samples alone spent the share.  Before it,
         * a candidate whose least samples cannot fit its share stops once it has spent
         * the share as a whole (check, warm-ups, samples): a run as long as the share
         * gets one sample, its repeats saying how little was measured. */
        const bool least_fits = least * fastest * batch <= 1e3 * share_s;
        if (n >= least ? spent_s(f, samples) >= share_s
                       : !least_fits && spent_s(f, whole) >= share_s)
            break;
    }
    cf_find_summarize(c, t, n);
done:;
    const convfind_status st = synchronize(f);
    h->release(f->bench, r);
    pt.timing_ms = 1e3 * (cf_now_s() - t0);
    trace_candidate(f, "candidate", c, &pt);
    return st != CONVFIND_OK ? st : cancel_status(f->cfg);
}

/* Knob refinement (find.h, step 4). */
static convfind_status refine(find_run *f, double share, double *best_ms)
{
    convfind_status st = CONVFIND_OK;
    cands *c = &f->c;
    const find_clock start = clock_start(f);
    const double budget = f->cfg->budget_s * CF_FIND_REFINE_SHARE;
    char (*names)[CF_ALGO_NAME_MAX] = calloc((size_t)c->cap, sizeof *names);
    for (int round = 0; names && round < CF_FIND_REFINE_ROUNDS; round++) {
        int base = -1;
        for (int i = 0; i < c->n; i++)
            if (c->algos[i]->prepare_named && c->stats[i].status == CF_CAND_OK &&
                (base < 0 || c->stats[i].median_ms < c->stats[base].median_ms))
                base = i;
        if (base < 0)
            break;
        const double before = c->stats[base].median_ms;
        int k = f->h->neighbors(f->bench, c->stats[base].algo, names, c->cap);
        if (f->h->refine_max > 0 && k > f->h->refine_max)
            k = f->h->refine_max;
        bool won = false;
        for (int j = 0; j < k && c->n < c->cap; j++) {
            bool known = false;
            for (int i = 0; i < c->n && !known; i++)
                known = strcmp(c->stats[i].algo, names[j]) == 0;
            if (known || (f->cfg->retune && !cf_find_retuned(f->cfg->retune, names[j])))
                continue;
            if (spent_s(f, start) > budget || cancelled(f->cfg))
                break;
            const int i = c->n++;
            c->algos[i] = c->algos[base];
            memset(&c->stats[i], 0, sizeof c->stats[i]);
            memcpy(c->stats[i].algo, names[j], sizeof c->stats[i].algo);
            if ((st = measure(f, i, *best_ms, share)) != CONVFIND_OK)
                break;
            if (c->stats[i].status == CF_CAND_OK && c->stats[i].median_ms < *best_ms) {
                *best_ms = c->stats[i].median_ms;
                won = won || c->stats[i].median_ms < before;
            }
        }
        if (!won || st != CONVFIND_OK)
            break;
    }
    free(names);
    return st;
}

/* What a finalist of median `m` costs the final round's least rounds: a first sample,
 * then per round an untimed run and a sample of about max(m, sample target). */
static double final_least_ms(const cf_find_hooks *h, double m)
{
    const double batch_ms = m > h->sample_target_ms ? m : h->sample_target_ms;
    return m + CF_FIND_MIN_REPEATS * (m + batch_ms);
}

/* Ends the final round early for the finalists that cannot win it: after each round from
 * the CF_FIND_MIN_REPEATS-th, one whose fastest sample of the round is slower than the
 * window above the fastest median stops racing (its samples, taken in turns with the
 * others', all say it is slower).  Most final rounds then end after a few rounds instead
 * of spending their whole share: with the finalists of a slow minute admitted, ResNet-50's
 * Find took 9.4 s at N=1 where it had taken 7.9.  Returns the finalists still racing. */
static int final_eliminate(double t[][CF_FIND_MAX_REPEATS], const int *runs, bool *racing,
                           int ok)
{
    double fastest[CF_FIND_FINALISTS] = {0}, lead = 0;
    for (int j = 0; j < ok; j++) {
        if (!racing[j])
            continue;
        cf_candidate_stats c = {0};
        cf_find_summarize(&c, t[j], runs[j]);
        fastest[j] = c.min_ms;
        lead = lead == 0 || c.median_ms < lead ? c.median_ms : lead;
    }
    int left = 0;
    for (int j = 0; j < ok; j++) {
        racing[j] = racing[j] && fastest[j] <= lead * (1.0 + CF_FIND_FINAL_WINDOW);
        left += racing[j];
    }
    return left;
}

/* The final round (find.h, step 5) within `round_s`.  Timed one after the other,
 * candidates meet different machine states (another process's burst, a clock change),
 * and on a shared two-core machine that alone reordered candidates 10-30% apart from one
 * run of Find to the next; in turns, every finalist meets the same ones. */
static void final_round(find_run *f, double round_s)
{
    const cf_find_hooks *h = f->h;
    cf_candidate_stats *r = f->c.stats;
    const int n = f->c.n;
    /* The fastest median, then the candidates whose median is within the window of it,
     * and, among candidates of many samples (the CPU's up to 50, not the CUDA backend's
     * three, whose samples time the device alone and whose finalists cost Find the
     * most), those whose fastest sample is within the window or whose median is within
     * CF_FIND_FINAL_REACH of the fastest.  A burst during a candidate's few milliseconds
     * of samples moves its median but not its fastest sample (DenseNet's 1x1 layers on
     * 7x7, 0.05 ms: cpu.gemm_1x1 measured at a median of 0.12 ms, 0.045 alone, lost to
     * cpu.direct_blocked at 0.06 when left out); a slow minute of the machine moves all
     * of them (MobileNetV2's 1x1 layers on 7x7 went to algorithms 1.2-2.1x slower in
     * some runs of the suite, right in others).  At most CF_FIND_FINALISTS of them, the
     * fastest medians, in order. */
    int best = -1;
    for (int i = 0; i < n; i++)
        if (r[i].status == CF_CAND_OK && (best < 0 || r[i].median_ms < r[best].median_ms))
            best = i;
    if (best < 0)
        return;
    const double window_ms = r[best].median_ms * (1.0 + CF_FIND_FINAL_WINDOW);
    const double reach_ms = r[best].median_ms * CF_FIND_FINAL_REACH;
    int pick[CF_FIND_FINALISTS] = {best}, k = 1;
    for (int i = 0; i < n; i++) {
        const bool many = r[i].repeats >= CF_FIND_FINAL_BY_FASTEST_SAMPLES;
        const bool near = r[i].median_ms <= window_ms ||
                          (many && (r[i].min_ms <= window_ms || r[i].median_ms <= reach_ms));
        if (i == best || r[i].status != CF_CAND_OK || !near)
            continue;
        int at = k; /* insert by median, dropping the slowest when full */
        while (at > 1 && r[pick[at - 1]].median_ms > r[i].median_ms)
            at--;
        if (at == CF_FIND_FINALISTS)
            continue;
        for (int j = (k < CF_FIND_FINALISTS ? k : CF_FIND_FINALISTS - 1); j > at; j--)
            pick[j] = pick[j - 1];
        pick[at] = i;
        k += k < CF_FIND_FINALISTS;
    }
    if (k < 2)
        return;
    /* Its least rounds must fit its share (final_least_ms): the slowest finalists go
     * first; with fewer than two left, the finalists keep their statistics of step 3. */
    double least_ms = 0;
    for (int j = 0; j < k; j++)
        least_ms += final_least_ms(h, r[pick[j]].median_ms);
    while (k > 2 && least_ms > 1e3 * round_s)
        least_ms -= final_least_ms(h, r[pick[--k]].median_ms);
    if (least_ms > 1e3 * round_s) {
        if (f->trace)
            fprintf(stderr, "find: final skipped finalists=%d least_ms=%.2f share_ms=%.2f\n", k,
                    least_ms, 1e3 * round_s);
        return;
    }
    cf_find_ready *rd[CF_FIND_FINALISTS];
    int batch[CF_FIND_FINALISTS];
    int ok = 0;
    for (int j = 0; j < k; j++) {
        cf_candidate_stats scratch = r[pick[j]];
        cf_find_ready *one;
        double first;
        if (h->prepare(f->bench, f->c.algos[pick[j]], &scratch, &one) != CF_CAND_OK)
            continue;
        /* The first sample warms restored caches (and, with a sample target, sizes the
         * batch each turn times, as in step 3). */
        if (h->sample_target_ms > 0 ? batch_size(f, one, &batch[ok], &first)
                                    : sample(f, one, 1, &first) == CONVFIND_OK) {
            batch[ok] = h->sample_target_ms > 0 ? batch[ok] : 1;
            rd[ok] = one;
            pick[ok++] = pick[j];
        } else {
            synchronize(f);
            h->release(f->bench, one);
        }
    }
    static _Thread_local double t[CF_FIND_FINALISTS][CF_FIND_MAX_REPEATS];
    const int most = h->final_rounds > 0 && h->final_rounds < CF_FIND_MAX_REPEATS
                         ? h->final_rounds
                         : CF_FIND_MAX_REPEATS;
    int rounds = 0, runs[CF_FIND_FINALISTS] = {0}, left = ok;
    bool racing[CF_FIND_FINALISTS];
    for (int j = 0; j < ok; j++)
        racing[j] = true;
    const find_clock start = clock_start(f);
    bool failed = false;
    while (!failed && left > 1 && rounds < most && !cancelled(f->cfg) &&
           (rounds < CF_FIND_MIN_REPEATS || spent_s(f, start) < round_s)) {
        for (int j = 0; j < ok && !failed; j++) {
            const int i = (j + rounds) % ok;
            if (!racing[i])
                continue;
            /* One untimed run first: the previous turn's candidate evicted this one's
             * weights and workspace, and a cold run would favour the algorithm with the
             * smaller footprint (Winograd lost its 3x3 layers to direct that way). */
            double warm;
            failed = sample(f, rd[i], 1, &warm) != CONVFIND_OK ||
                     sample(f, rd[i], batch[i], &t[i][runs[i]]) != CONVFIND_OK;
            runs[i] += !failed;
        }
        rounds += !failed;
        if (!failed && rounds >= CF_FIND_MIN_REPEATS)
            left = final_eliminate(t, runs, racing, ok);
    }
    for (int j = 0; j < ok; j++) {
        if (ok >= 2 && runs[j] >= CF_FIND_MIN_REPEATS) {
            cf_find_summarize(&r[pick[j]], t[j], runs[j]);
            if (f->trace)
                fprintf(stderr, "find: final %s rounds=%d median_ms=%.4f round_ms=%.2f\n",
                        r[pick[j]].algo, runs[j], r[pick[j]].median_ms,
                        1e3 * spent_s(f, start));
        }
        synchronize(f);
        h->release(f->bench, rd[j]);
    }
}

/* Steps 2 to 5 on the bench, from the incumbent. */
static convfind_status time_all(find_run *f, int incumbent, int usable)
{
    const cf_find_config *cfg = f->cfg;
    cands *c = &f->c;
    const int n = c->n; /* before refine() adds to the list */
    const find_clock start = clock_start(f);
    const double share = cfg->budget_s / usable;
    double best_ms = 0;
    for (int k = -1; k < n; k++) { /* k == -1: the incumbent, timed first and always */
        const int i = k < 0 ? incumbent : k;
        if ((k >= 0 && i == incumbent) || c->stats[i].status == CF_CAND_NOT_APPLICABLE)
            continue;
        const bool over = k >= 0 && spent_s(f, start) > cfg->budget_s;
        /* A reference not needed: under RETUNE it is re-timed when it is among the stored
         * top, where it was measured close to the fastest. */
        const bool not_needed = k >= 0 && f->h->reference_last && c->algos[i] == f->reference &&
                                best_ms > 0 && !cfg->retune;
        if ((over && !f->h->look_past_budget) || not_needed ||
            (k >= 0 && cfg->retune && !cf_find_retuned(cfg->retune, c->stats[i].algo))) {
            /* Over budget, not re-timed, or not needed: never started. */
            c->stats[i].status = CF_CAND_ABANDONED;
            c->stats[i].not_needed = not_needed;
            continue;
        }
        /* Over budget with look_past_budget: a share of nothing, which is the check and
         * one sample. */
        convfind_status st = measure(f, i, best_ms, over ? 0 : share);
        if (st != CONVFIND_OK)
            return st;
        if (c->stats[i].status == CF_CAND_OK && (best_ms == 0 || c->stats[i].median_ms < best_ms))
            best_ms = c->stats[i].median_ms;
    }
    if (f->h->neighbors && cfg->validate) {
        convfind_status st = refine(f, share, &best_ms);
        if (st != CONVFIND_OK)
            return st;
    }
    if (f->h->final_round && !cfg->retune)
        final_round(f, CF_FIND_FINAL_SHARE * cfg->budget_s);
    return cancel_status(cfg);
}

/* Everything up to the choice: the incumbent, the bench, the timing. */
static convfind_status measure_all(find_run *f, const cf_backend_state *s, const cf_problem *p,
                                   int *incumbent)
{
    const cf_find_config *cfg = f->cfg;
    const cands *c = &f->c;
    int usable = 0, heuristic = -1;
    for (int i = 0; i < c->n; i++)
        if (c->stats[i].status != CF_CAND_NOT_APPLICABLE) {
            usable++;
            heuristic = heuristic < 0 ? i : heuristic;
        }
    if (heuristic < 0)
        return unsupported(p, cfg->workspace_limit);
    *incumbent = heuristic;
    for (int i = 0; cfg->incumbent && i < c->n; i++)
        if (strcmp(c->stats[i].algo, cfg->incumbent) == 0 &&
            c->stats[i].status != CF_CAND_NOT_APPLICABLE)
            *incumbent = i;
    const cf_bench_config bench = {.validate = cfg->validate,
                                   .constant_weights = cfg->constant_weights,
                                   .workspace_limit = cfg->workspace_limit,
                                   .pool = cfg->pool};
    convfind_status st = f->h->bench_create(s, p, &bench, &f->bench);
    if (st != CONVFIND_OK)
        return st;
    st = time_all(f, *incumbent, usable);
    f->h->bench_destroy(f->bench);
    return st;
}

convfind_status cf_find_measure(const cf_backend *b, const cf_backend_state *s,
                                const cf_problem *p, const cf_find_config *cfg, cf_decision *out)
{
    memset(out, 0, sizeof *out);
    find_run f = {.h = b->find, .reference = b->reference, .cfg = cfg, .trace = cfg->trace};
    const double t0 = cf_now_s();
    convfind_status st = cands_list(b, s, p, cfg->workspace_limit,
                                    cfg->validate ? CF_FIND_LIST_VALIDATING : 0, &f.c);
    if (st != CONVFIND_OK)
        return st;
    const double listed_s = cf_now_s() - t0;
    int incumbent = -1;
    st = measure_all(&f, s, p, &incumbent);
    if (f.trace)
        fprintf(stderr, "find: done candidates=%d list_ms=%.2f total_ms=%.2f\n", f.c.n,
                1e3 * listed_s, 1e3 * (cf_now_s() - t0));
    const int n = f.c.n;
    /* Nothing timed to the end: the reference is the safest of the ABANDONED. */
    const int pick = st == CONVFIND_OK ? cf_find_choose(f.c.stats, n, incumbent, b->reference->name)
                                       : -1;
    if (st == CONVFIND_OK && pick < 0) {
        char last[256]; /* what the last candidate said, e.g. a device left unusable */
        snprintf(last, sizeof last, "%s", convfind_last_error());
        st = cf_fail(CONVFIND_ERR_BACKEND, "every candidate failed on this problem%s%s",
                     last[0] ? "; the last: " : "", last);
    }
    if (st == CONVFIND_OK) {
        cf_find_rank(f.c.stats, n, pick);
        learn(b, s, p, f.c.stats, n);
        if (!(out->candidates = malloc((size_t)n * sizeof *out->candidates)))
            st = cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %d candidates", n);
    }
    if (st == CONVFIND_OK) {
        memcpy(out->candidates, f.c.stats, (size_t)n * sizeof *out->candidates);
        out->n_candidates = n;
        memcpy(out->algo, out->candidates[0].algo, sizeof out->algo);
    }
    cands_free(&f.c);
    return st;
}
