/*
 * find.h - Find on a CUDA context: the candidates, their timing on the device, ranking.
 *
 * The protocol is src/find/find.h's, with device-side measurement:
 *   1. X, W, B, Z on the device, filled with non-zero values; when validating,
 *      cuda.direct computes the expected Y once (the tests check cuda.direct against
 *      the CPU reference).
 *   2. Candidates: every cuda.cudnn configuration the heuristics offer (graph.h: modes
 *      A, B, fallback; the caller's layout and the other interleaved, the caller's
 *      first), then cuda.direct.  The
 *      incumbent (given, else the first, the heuristic choice) is timed first, always.
 *   3. Per candidate: its plan is finalized on this thread (a refusal is FAILED), its
 *      workspace checked against the budget (NOT_APPLICABLE over it), one run into a
 *      NaN-filled Y validated by normwise relative error (f32 strict 1e-4, TF32 5e-3,
 *      f16/bf16 1e-2), a warm-up run, then samples timed with CUDA events, each
 *      sample a batch of back-to-back runs long enough (~0.25 ms) to hide launch
 *      overhead: at least CF_FIND_MIN_REPEATS samples, up to CF_FIND_MAX_REPEATS or the
 *      candidate's share of the budget; abandoned after CF_FIND_ABANDON_AFTER samples
 *      when its fastest is CF_FIND_ABANDON_RATIO x slower than the best median.
 *   4. Statistics, abandon, RETUNE, choice and ranked list by src/find/rank.h, the CPU
 *      Find's own functions (margin CF_FIND_MARGIN, then the smaller workspace, then list
 *      order); with nothing timed to the end, the first ABANDONED candidate.
 */
#ifndef CONVFIND_CUDA_FIND_H
#define CONVFIND_CUDA_FIND_H

#include "cuda/device.h"
#include "decision/decision.h"
#include "find/find.h"

/* The decision without measurement: the candidates above in order, all OK, untimed. */
convfind_status cf_cuda_find_heuristic(const cf_cuda_device *d, const cf_problem *p,
                                       cf_decision *out);

/* Measures and ranks the candidates on `d` (cfg: budget, validation, incumbent, retune,
 * cancel, workspace limit).  Thread-safe: its buffers and stream are its own. */
convfind_status cf_cuda_find_measure(const cf_cuda_device *d, const cf_problem *p,
                                     const cf_find_config *cfg, cf_decision *out);

#endif /* CONVFIND_CUDA_FIND_H */
