/*
 * find.h - the CUDA backend's Find hooks (algo/backend.h, cf_find_hooks), which the
 * one harness (src/find/find.h) drives with device-side measurement:
 *   - candidates: every cuda.cudnn configuration the heuristics offer (graph.h: modes A,
 *     B, fallback; the caller's layout and the other interleaved, the caller's first),
 *     then cuda.direct; a validating Find also lists the engines the heuristics do not
 *     (CF_FIND_LIST_UNVETTED) and the split configurations (CF_FIND_LIST_INEXACT);
 *   - the bench: X, W, B, Z on the device, filled with non-zero values, on a stream of
 *     its own; when validating, cuda.direct computes the expected Y once (the tests
 *     check cuda.direct against the CPU reference);
 *   - prepare: the configuration's plan is finalized on this thread (a refusal is
 *     FAILED) and its workspace checked against the limit (NOT_APPLICABLE over it);
 *   - check: one run into a NaN-filled Y, validated by normwise relative error (f32
 *     strict 1e-4, split configurations CF_CUDNN_SPLIT_TOL, TF32 5e-3, f16/bf16 1e-2);
 *   - samples timed with CUDA events, each a batch of back-to-back runs long enough
 *     (CF_CUDA_SAMPLE_MS) to hide launch overhead;
 *   - knob refinement: the neighbours of the fastest cuDNN configuration.
 */
#ifndef CONVFIND_CUDA_FIND_H
#define CONVFIND_CUDA_FIND_H

#include "algo/backend.h"

#define CF_CUDA_SAMPLE_MS 0.25

extern const cf_find_hooks cf_cuda_find_hooks;

#endif /* CONVFIND_CUDA_FIND_H */
