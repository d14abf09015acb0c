/*
 * find.h - Find: measure the candidates of one problem on one backend and rank them
 * (DESIGN.md "Find: how to time"), and the heuristic choice that needs no measurement.
 *
 * One harness for every backend: what differs between the CPU and a CUDA device (how
 * test tensors are made, how a run is timed, how a result is checked) comes through the
 * backend's hooks (algo/backend.h, cf_find_hooks).  Protocol of cf_find_measure, in
 * order:
 *   1. The candidates (enumerate; with validation also the CF_FIND_LIST_VALIDATING
 *      kinds).  The heuristic choice is the first usable one; the incumbent is the one
 *      named by cfg->incumbent when usable, else the heuristic choice.  The bench: test
 *      tensors filled with non-zero values; when validating, the reference output.
 *   2. The incumbent is measured first, whatever the budget; then every other usable
 *      candidate in list order while the budget lasts, and past it, on a backend with
 *      look_past_budget, with a share of nothing: its check and one sample, so that a
 *      first candidate slower than the whole budget cannot hide a faster one (RETUNE: only the stored top
 *      CF_FIND_RETUNE_TOP; the rest are ABANDONED without running; with the backend's
 *      reference_last, its reference too once another candidate measured OK, except
 *      under RETUNE when the stored top holds it).
 *   3. Per candidate: prepare (state, workspace, and with constant weights the packed
 *      weights, so that each timed run is what an execution of the key's plans does; a
 *      refusal is FAILED, an allocation failure ABANDONED without a verdict, a workspace
 *      over the limit NOT_APPLICABLE), the check (runs into a poisoned Y, compared with
 *      the reference when validating; a wrong or erroring candidate is FAILED, never
 *      chosen), warm-up
 *      runs up to CF_FIND_WARMUPS in all (the check's runs count), then samples: with a
 *      sample target, one first sample of one run sizes the batch (target / its time,
 *      1 to CF_FIND_MAX_BATCH runs), and a candidate whose first run is slower than
 *      CF_FIND_FIRST_ABANDON_RATIO x the best median so far plus
 *      CF_FIND_FIRST_ABANDON_SLACK_MS (what launching a single run adds to small
 *      kernels' times) is ABANDONED there (or already on the check's timed run, where
 *      the backend's check times one that was not the candidate's first); at
 *      least the backend's min_repeats samples (CF_FIND_MIN_REPEATS), then until its
 *      max_repeats (CF_FIND_MAX_REPEATS) or the candidate's share of the budget
 *      (budget / usable candidates) is spent by the samples.  Warm-ups and the least
 *      samples yield to the share: no further warm-up once the candidate as a whole
 *      (check, warm-ups, samples) has spent it, and when the least samples cannot fit
 *      the share (its fastest sample x least > share), no sample after the first once
 *      it has.  Once CF_FIND_ABANDON_AFTER samples are
 *      in, a candidate whose fastest is slower than CF_FIND_ABANDON_RATIO x the best
 *      median so far is ABANDONED.
 *   4. Knob refinement (backends with neighbors, validating Finds): the neighbouring
 *      forms of the fastest candidate with named forms are measured like the others,
 *      in at most CF_FIND_REFINE_ROUNDS rounds of at most the backend's refine_max, a
 *      further round only when a neighbour won the last one, within
 *      CF_FIND_REFINE_SHARE of the budget again and the room the candidate list has
 *      left.
 *   5. Final round (backends with final_round, not under RETUNE): the fastest median
 *      and the OK candidates whose median is within CF_FIND_FINAL_WINDOW of it or, with
 *      at least CF_FIND_FINAL_BY_FASTEST_SAMPLES samples, whose fastest sample is within
 *      that window or median within CF_FIND_FINAL_REACH x the fastest (at most
 *      CF_FIND_FINALISTS, the fastest medians; the slowest dropped while the least
 *      rounds below do not fit) are timed again in turns, one sample each per round
 *      after an untimed run (a sample of one run, or with a sample target of a batch
 *      sized as in step 3), the order rotating, for CF_FIND_MIN_REPEATS to
 *      CF_FIND_MAX_REPEATS rounds (at most the backend's final_rounds) within
 *      CF_FIND_FINAL_SHARE of the budget, not run when the medians of the two fastest
 *      say its least rounds do not fit it;
 *      their statistics are replaced by this round's, so close candidates are compared
 *      under the same machine conditions.  A backend that takes few samples in step 3
 *      races its candidates this way: a short look at each, a longer one at the few
 *      that came close.
 *   6. Choice and ranked list by rank.h: the incumbent stays unless the fastest median
 *      beats it by more than CF_FIND_MARGIN; otherwise, among the candidates within
 *      CF_FIND_MARGIN of the fastest, the smallest workspace, then the earliest in list
 *      order.  With nothing timed to the end, the backend's reference if it was
 *      ABANDONED, else the first ABANDONED one.
 *   7. With a choice timed to the end, the backend's learn hook hears the ranked list and
 *      which candidates were beyond saving against the choice (the rule of step 3's
 *      first-run abandon, on their medians).
 * Time spent is the host clock's, never less than what the runs reported (a device's
 * events; a test's fake backend, whose runs take no time).
 * CONVFIND_FIND_TRACE=1 in the environment prints one line per measured candidate on
 * stderr (status, milliseconds spent preparing, checking and timing it, its median) and
 * one per Find (candidates, time to list them, total), to see where Find's time goes.
 */
#ifndef CONVFIND_FIND_H
#define CONVFIND_FIND_H

#include <stdatomic.h>
#include <stdbool.h>

#include "algo/backend.h"
#include "decision/decision.h"

#define CF_FIND_MIN_REPEATS 5
#define CF_FIND_MAX_REPEATS 50
#define CF_FIND_WARMUPS 2
#define CF_FIND_MAX_BATCH 32
#define CF_FIND_ABANDON_AFTER 3
#define CF_FIND_ABANDON_RATIO 1.5
#define CF_FIND_FIRST_ABANDON_RATIO 3.0
#define CF_FIND_FIRST_ABANDON_SLACK_MS 0.05
#define CF_FIND_MARGIN 0.03
#define CF_FIND_RETUNE_TOP 3
#define CF_FIND_REFINE_ROUNDS 2
#define CF_FIND_REFINE_SHARE 0.5
#define CF_FIND_FINAL_WINDOW 0.15
#define CF_FIND_FINAL_BY_FASTEST_SAMPLES 10
#define CF_FIND_FINAL_REACH 2.0
#define CF_FIND_FINALISTS 4
#define CF_FIND_FINAL_SHARE 0.25

typedef struct cf_find_config {
    size_t workspace_limit;     /* largest admissible workspace; 0: unlimited */
    double budget_s;            /* total time for one problem (the incumbent is always timed) */
    bool validate;              /* compare every candidate with the reference */
    bool constant_weights;      /* time the usage of plans with constant weights (packed
                                   once), else of plans given weights per call */
    const char *incumbent;      /* name of the current decision, or NULL */
    cf_threadpool *pool;        /* how executions will run */
    const atomic_bool *cancel;  /* may be NULL; when it becomes true Find stops */
    /* NULL, or a stored decision from another environment (docs/db.md, RETUNE): only its
     * first CF_FIND_RETUNE_TOP OK candidates (and the incumbent) are timed, the others
     * are left ABANDONED without running. */
    const cf_decision *retune;
    bool trace;                 /* one line per candidate and per Find on stderr (the
                                   context's CONVFIND_FIND_TRACE=1) */
} cf_find_config;

/* The decision that needs no measurement: the usable candidates of `p` on backend `b`
 * (state `s`) in list order (all status OK, no timings), then the rest as
 * NOT_APPLICABLE.  CONVFIND_ERR_UNSUPPORTED when no candidate can run `p` within
 * `workspace_limit`.  Thread-safe. */
convfind_status cf_find_heuristic(const cf_backend *b, const cf_backend_state *s,
                                  const cf_problem *p, size_t workspace_limit, cf_decision *out);

/* Measures and ranks the candidates as described above.  On success `out` owns a ranked
 * candidate array.  CONVFIND_ERR_UNSUPPORTED when nothing can run `p`,
 * CONVFIND_ERR_OUT_OF_MEMORY when the test tensors cannot be allocated,
 * CONVFIND_ERR_BACKEND when cancelled, when every candidate failed (the message ends with
 * the last candidate's), or when the backend's synchronize() reports a device that can
 * run nothing more (its message).  Thread-safe (its
 * bench is its own). */
convfind_status cf_find_measure(const cf_backend *b, const cf_backend_state *s,
                                const cf_problem *p, const cf_find_config *cfg, cf_decision *out);

#endif /* CONVFIND_FIND_H */
