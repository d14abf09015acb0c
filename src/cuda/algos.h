/*
 * algos.h - the CUDA backend's algorithms (algos.c) as seen by its Find hooks (find.c).
 *
 *   cuda.cudnn   the cuDNN engine configurations the heuristics rank first, one
 *                variant each (names in graph.h), in the caller's layout and in the
 *                other one (transposed around the engine, timed end to end), plain and,
 *                for an f32 Conv under CONVFIND_MATH_ALLOW_SPLIT_TF32 in a validating
 *                Find, split (3xTF32, graph.h), interleaved so that a Find cut short by
 *                its budget has tried each kind.  A validating Find also gets a few
 *                engines the heuristics do not list.
 *   cuda.direct  the direct kernel (kernels.h): runs every problem; the fallback.
 */
#ifndef CONVFIND_CUDA_ALGOS_H
#define CONVFIND_CUDA_ALGOS_H

#include "algo/algo.h"
#include "cuda/device.h"

/* The most configurations one Find lists: the lists' limits (algos.c) and the
 * neighbours knob refinement adds. */
#define CF_CUDA_MAX_VARIANTS 64

extern const cf_algo cf_algo_cuda_cudnn;
extern const cf_algo cf_algo_cuda_direct;

/* Which configurations cf_cuda_cudnn_variants() lists beyond the heuristics' plain
 * ones.  Both are for a Find that validates each candidate against cuda.direct only:
 *   UNLISTED  engines of cuDNN's global list that the heuristics do not name and that
 *             finalize (on the H200 one such engine finalized and then computed wrong
 *             results, test_cuda_conv);
 *   SPLIT     the split configurations (graph.h), whose accuracy depends on the engine
 *             (with UNLISTED, on the unlisted engines too). */
enum { CF_CUDA_VARIANTS_UNLISTED = 1, CF_CUDA_VARIANTS_SPLIT = 2 };

/* Writes up to `cap` cuda.cudnn configuration names for `p` on `d` (the algorithm's
 * variants, with the kinds `extra` adds) and returns how many.  Thread-safe. */
int cf_cuda_cudnn_variants(const cf_problem *p, const cf_cuda_device *d, unsigned extra,
                           char (*names)[64], int cap);

/* Records on `d` how the cuDNN engines of a completed Find of `p` fared (the learn hook,
 * algo/backend.h): the choice's engine won, the others beyond saving lost, once per Find
 * (device.h, cf_cuda_outcome_note).  Names that are not cuDNN configurations are
 * skipped.  Thread-safe. */
void cf_cuda_cudnn_learn(const cf_cuda_device *d, const cf_problem *p,
                         const cf_candidate_stats *ranked, const bool *far, int n);

/* Writes up to `cap` names of the neighbours of cuda.cudnn configuration `name`
 * (cf_cudnn_knob_neighbors: one knob changed within its advertised range) and returns
 * how many; 0 for a name that is not a cuDNN configuration.  Unvetted like the unlisted
 * engines: for a validating Find only.  Thread-safe. */
int cf_cuda_cudnn_neighbors(const cf_problem *p, const cf_cuda_device *d, const char *name,
                            char (*names)[64], int cap);

/* Device workspace one execution of form `name` needs for `p` on `d` (finalizing and
 * caching its plan on the calling thread).  CONVFIND_ERR_BACKEND when cuDNN refuses it. */
convfind_status cf_cuda_algo_workspace(const cf_cuda_device *d, const cf_problem *p,
                                       const cf_algo *algo, const char *name, size_t *bytes);

#endif /* CONVFIND_CUDA_ALGOS_H */
