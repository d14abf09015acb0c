/*
 * find.h - the CUDA backend's Find hooks (algo/backend.h, cf_find_hooks), which the
 * one harness (src/find/find.h) drives with device-side measurement:
 *   - candidates: the cuda.cudnn configurations the heuristics rank first (graph.h:
 *     mode A, widened by the fallback mode where the math mode cut it short; pruned
 *     per list; the caller's layout and the other interleaved, the caller's first; the
 *     lists made in parallel, lister.h), then cuda.direct; a validating Find also lists
 *     a few engines the heuristics do not (CF_FIND_LIST_UNVETTED) where a list widens
 *     and, under CONVFIND_MATH_ALLOW_SPLIT_TF32, the split configurations
 *     (CF_FIND_LIST_INEXACT);
 *   - the bench: X, W, B, Z on the device, filled with non-zero values, on a stream of
 *     its own; when validating, cuda.direct computes the expected Y of the first and
 *     the last image once and it stays on the device (the tests check cuda.direct
 *     against the CPU reference).  Find refuses to start while a CUDA graph capture is
 *     under way;
 *   - prepare: the configuration's plan is finalized on this thread (a refusal is
 *     FAILED; the plan stays in the thread's cache, so the chosen one is not finalized
 *     again when the plan executes) and its workspace checked against the limit
 *     (NOT_APPLICABLE over it);
 *   - check: runs into a NaN-filled Y (unpacked, then packed and timed when weights
 *     are constant), validated on the device by normwise relative error on the checked
 *     images (f32 strict 1e-4, split configurations CF_CUDNN_SPLIT_TOL, TF32 5e-3,
 *     f16/bf16 1e-2) and a NaN count over all of Y;
 *   - samples timed with CUDA events, each a batch of runs (CF_CUDA_SAMPLE_MS long)
 *     queued behind a held kernel and released at once, so that the device runs them
 *     back to back, as from a CUDA graph, whatever issuing them costs the host:
 *     CF_CUDA_SCREEN_SAMPLES per candidate, then a final round of at most
 *     CF_CUDA_FINAL_ROUNDS turns among the close ones;
 *   - knob refinement: up to CF_CUDA_REFINE_MAX neighbours of the fastest cuDNN
 *     configuration per round;
 *   - a sticky CUDA error (a kernel's illegal or misaligned address) ends the Find: the
 *     candidates after it fail, and the message names the one it followed.
 */
#ifndef CONVFIND_CUDA_FIND_H
#define CONVFIND_CUDA_FIND_H

#include "algo/backend.h"

#define CF_CUDA_SAMPLE_MS 0.1
#define CF_CUDA_HOLD_NS 20000000ull /* 20 ms: cf_cuda_hold()'s timeout in sample() */
#define CF_CUDA_SCREEN_SAMPLES 3
#define CF_CUDA_FINAL_ROUNDS 7
#define CF_CUDA_REFINE_MAX 4

extern const cf_find_hooks cf_cuda_find_hooks;

#endif /* CONVFIND_CUDA_FIND_H */
