/*
 * graph.h - convolutions through cuDNN 9's backend (graph) API: operation graphs,
 * engine configurations as named candidates, and finalized execution plans.
 *
 * Conv runs as a forward convolution; ConvTranspose as the backward-data convolution
 * of the Conv that maps Y's shape to X's (its dY is our X, its dX our Y).  1-D problems
 * get a leading spatial axis of size 1.  Pads go in as cuDNN's pre- and post-paddings,
 * so a Conv's asymmetric pads are native wherever an engine accepts them.  Where none
 * does, or for a ConvTranspose with negative, asymmetric or output padding, the
 * configurations are "padded": the engine runs the same convolution
 * without pads (cf_cudnn_engine_problem) and a window kernel pads X before it (Conv)
 * or crops and pads Y after it (ConvTranspose).
 *
 * Split configurations run an f32 Conv under CONVFIND_MATH_ALLOW_SPLIT_TF32 on TF32
 * tensor cores at close to f32 accuracy (the "3xTF32" method; how close depends on the
 * engine, below): X = Xh + Xl and W = Wh + Wl, where Xh and Wh are X and W rounded to
 * TF32 (10 mantissa bits) and Xl, Wl the exact f32 remainders; X * W = Xh*Wh + Xh*Wl +
 * Xl*Wh + Xl*Wl, and the last term, about 2^-22 of the first, is dropped.  The three
 * others are one convolution with three times the input channels of each group:
 * X3 = [Xh, Xh, Xl] and W3 = [Wh, Wl, Wh] along C, run by a tensor-core engine that
 * accumulates in f32.  Each product of TF32 values is exact in f32, so the error is the
 * engine's accumulation error plus the TF32 rounding of the remainders, about 2^-21 of
 * each product; the accumulation differs between engines (measured 5e-7 to 4.5e-5 on
 * ResNet-50's layers, against at most 4.2e-6 for plain f32: docs/cuda.md).  Only Conv
 * with f32 data under that mode has split configurations (cf_cudnn_splittable), and
 * only a validating Find tries them, holding each to CF_CUDNN_SPLIT_TOL.
 *
 * Fused configurations put the epilogue into the graph: the convolution writes a
 * virtual f32 tensor, and pointwise nodes add B (one value per channel) and Z and apply
 * the activation, the last writing Y, so Y is written once instead of written, read and
 * written again by a separate kernel.  Only a Conv in the caller's layout with native
 * pads has them (cf_cudnn_fusable); every other configuration runs the epilogue kernel
 * (kernels.h) after the engine.
 *
 * A configuration's name is what decisions store, stable for one cuDNN version and GPU:
 *     cuda.cudnn:<layout>[+pad][+x3][+ep]:e<engine global index>[:k<type>=<value>,...]
 * e.g. "cuda.cudnn:nhwc:e12:k3=2,5=1".  <layout> is the physical layout the engine runs
 * in; when it differs from the caller's, X and Y are transposed around it.  "+pad" marks
 * a padded configuration, "+x3" a split one, "+ep" a fused one.  Knobs are listed in the
 * order the heuristics gave them.
 */
#ifndef CONVFIND_CUDA_GRAPH_H
#define CONVFIND_CUDA_GRAPH_H

#include <cudnn.h>
#include <stdbool.h>
#include <stdint.h>

#include "algo/backend.h"
#include "convfind.h"
#include "problem/problem.h"

#define CF_CUDNN_PREFIX "cuda.cudnn:"
#define CF_CUDNN_MAX_KNOBS 16

typedef struct cf_cudnn_config {
    convfind_layout layout;      /* physical layout the engine runs in */
    bool padded;                 /* runs cf_cudnn_engine_problem(p) with explicit padding */
    bool split;                  /* the 3xTF32 form of an f32 Conv (above) */
    bool fused;                  /* the epilogue inside the graph (above) */
    bool runtime_compiled;       /* the engine compiles its kernels at run time (NVRTC);
                                    known from the heuristics, not part of the name (in
                                    the form graph.c searches for: such engines admitted) */
    int64_t engine;              /* CUDNN_ATTR_ENGINE_GLOBAL_INDEX */
    int n_knobs;
    int knob_type[CF_CUDNN_MAX_KNOBS];
    int64_t knob_value[CF_CUDNN_MAX_KNOBS];
} cf_cudnn_config;

/* Whether `p`'s pads go to cuDNN natively: non-negative pads; for ConvTranspose also
 * symmetric pads and no output padding (graph.c says why).  Pure. */
bool cf_cudnn_expressible(const cf_problem *p);

/* The normwise relative error, against the reference, within which a validating Find
 * accepts a split configuration: a tenth of the strict f32 tolerance.  Plain f32 engines
 * stayed within 4.2e-6 on ResNet-50's layers (Winograd included), split ones reached
 * 4.5e-5 on some engines whose accumulation loses more (docs/cuda.md); this bound admits
 * split results up to about 2.5x the plain engines' worst, and rejects the rest. */
#define CF_CUDNN_SPLIT_TOL 1e-5

/* Whether `name` is a split configuration's. */
bool cf_cudnn_name_is_split(const char *name);

/* Whether `p` has split configurations: Conv, f32 data, CONVFIND_MATH_ALLOW_SPLIT_TF32
 * (convfind.h: STRICT never splits).  Pure. */
bool cf_cudnn_splittable(const cf_problem *p);

/* The problem configuration c's engine runs for `p`: `p` itself, or when `padded`, `p`
 * without pads and output padding: a Conv over X grown by the pads (X's window), a
 * ConvTranspose to its full output (cropped into Y afterwards); when `split`, with
 * three times the input channels and TF32 allowed.  Pure. */
void cf_cudnn_engine_problem(const cf_problem *p, const cf_cudnn_config *c, cf_problem *q);

/* The name of `c` into buf; false when it does not fit `size` (the configuration is
 * then not offered: decisions store names of bounded length). */
bool cf_cudnn_config_name(const cf_cudnn_config *c, char *buf, size_t size);

/* Parses a name made by cf_cudnn_config_name.  CONVFIND_ERR_NOT_FOUND, naming it, for
 * anything else. */
convfind_status cf_cudnn_config_parse(const char *name, cf_cudnn_config *c);

/* Whether `p` can have fused configurations: a Conv with native pads and an epilogue
 * (bias, residual, an activation other than hard sigmoid).  Pure. */
bool cf_cudnn_fusable(const cf_problem *p);

/* The kinds of configurations cf_cudnn_enumerate lists. */
typedef enum cf_cudnn_kind { CF_CUDNN_PLAIN, CF_CUDNN_SPLIT, CF_CUDNN_FUSED } cf_cudnn_kind;

/* How many configurations of one list cf_cudnn_enumerate keeps, and whether a short list
 * is widened. */
typedef struct cf_cudnn_limits {
    int listed;     /* of the heuristics' lists, in their order */
    int per_engine; /* of those, at most this many of one engine */
    bool runtime_compiled; /* keep a runtime-compiled configuration where it heads the
                              heuristics' list (graph.c, prune_listed, says why) */
    int unlisted;   /* engines of the global list the heuristics do not name (0: none) */
    cf_runtime_compiled offer_compiled; /* where runtime-compiled engines are offered at
                                           all: the context's (cf_cuda_runtime_compiled) */
    bool widen;     /* when the math mode excluded some of mode A's configurations and
                       it admits fewer than `listed`: add the fallback mode's list and
                       the unlisted engines (else mode A alone) */
    uint64_t hopeless[4]; /* engines (bit e % 64 of word e / 64) that a widened list
                             leaves out: hopeless for problems like this one (device.h) */
} cf_cudnn_limits;

/* The configurations cuDNN offers for `p` in physical layout `layout`: heuristic mode A,
 * each configuration with the knob choices it gives, in its order (the first is the
 * heuristic choice), pruned to `limits`.  Where the math mode (or the split form)
 * excluded some of mode A's configurations, it admits fewer than the list keeps and the
 * list widens (`limits->widen`), the fallback mode's list follows
 * (duplicates removed), then up to `limits->unlisted` engines of the graph's global list
 * that neither mode named and that finalize for it, with default knobs (unvetted by
 * cuDNN's heuristics: a caller must check their results); a widened list has no engine
 * of `limits->hopeless`.  When that finds
 * none for pads that are asymmetric or not expressible, the same search on the padded
 * problem gives padded configurations.  Unless TF32 is allowed, f32 data leaves out
 * engines that use tensor cores (TF32) or convert inputs down; runtime-compiled engines
 * only for grouped convolutions (graph.c says why).  With `split`, the split
 * configurations instead (tensor-core engines only; none unless cf_cudnn_splittable), and
 * with `kind` CF_CUDNN_FUSED the fused ones (none unless cf_cudnn_fusable and `layout`
 * is the caller's).  Writes up to `cap` into out and the number written into *count.
 * Must run inside cf_cuda_enter() with `handle` the calling thread's. */
convfind_status cf_cudnn_enumerate(cudnnHandle_t handle, const cf_problem *p,
                                   convfind_layout layout, cf_cudnn_kind kind,
                                   const cf_cudnn_limits *limits, cf_cudnn_config *out, int cap,
                                   int *count);

/* The neighbours of configuration `base` for `p`: base with one knob set to another
 * value of the range its engine advertises (CUDNN_ATTR_ENGINE_KNOB_INFO), for every
 * knob of at most 16 values.  The heuristics list only some of these; none is vetted
 * by them, so a caller must check their results.  Writes up to `cap` into out and
 * returns how many; 0 when the engine does not finalize or has no such knob.  Must run
 * inside cf_cuda_enter() with `handle` the calling thread's. */
int cf_cudnn_knob_neighbors(cudnnHandle_t handle, const cf_problem *p, const cf_cudnn_config *base,
                            cf_cudnn_config *out, int cap);

typedef struct cf_cudnn_plan cf_cudnn_plan;

/* Finalizes configuration `c` for `p` (for a padded one, its engine problem) on `handle`.
 * CONVFIND_ERR_BACKEND with cuDNN's message when cuDNN refuses it.  The plan may only be
 * used with `handle`. */
convfind_status cf_cudnn_plan_create(cudnnHandle_t handle, const cf_problem *p,
                                     const cf_cudnn_config *c, cf_cudnn_plan **out);
void cf_cudnn_plan_destroy(void *plan);

/* The same plan made from `blob`, what cf_cudnn_plan_serialize() wrote for `c` and `p`
 * (in this process or an earlier one) instead of compiling it: cuDNN serializes the
 * finalized plans of its runtime-compiled engines, compiled code included.  Refused
 * (CONVFIND_ERR_BACKEND) when the blob is not one this cuDNN and device can load. */
convfind_status cf_cudnn_plan_load(cudnnHandle_t handle, const cf_problem *p,
                                   const cf_cudnn_config *c, const void *blob, size_t size,
                                   cf_cudnn_plan **out);

/* The plan serialized into a malloc'ed *blob of *size bytes, for cf_cudnn_plan_load(),
 * when its engine compiled its kernels at run time; else *blob = NULL (precompiled code
 * loads fast, and cuDNN serializes only runtime-compiled plans). */
convfind_status cf_cudnn_plan_serialize(const cf_cudnn_plan *plan, void **blob, size_t *size);

/* Whether executions of the plan can be captured into a CUDA graph: -1 until a trial
 * capture says (algos.c makes one after a plan's first execution).  On the H200 engine
 * 28 with knob 3 = 1 broke captures (cudaErrorStreamCaptureInvalidated). */
int cf_cudnn_plan_capturable(const cf_cudnn_plan *plan);
void cf_cudnn_plan_set_capturable(cf_cudnn_plan *plan, bool capturable);

/* Device workspace bytes the plan needs. */
size_t cf_cudnn_plan_workspace(const cf_cudnn_plan *plan);

/* Queues the convolution on the handle's current stream: x, w, y in the plan's physical
 * layout (W as [K][C/group][k...] for NCHW, [K][k...][C/group] for NHWC), all 16-byte
 * aligned, and `ws` of cf_cudnn_plan_workspace() bytes; for a fused configuration also
 * b and z where the problem has them (ignored otherwise).  The plan keeps the last
 * execution's variant pack for the next one on the same buffers, so a plan is used by
 * one thread at a time (device.h: each thread has its own). */
convfind_status cf_cudnn_plan_execute(cudnnHandle_t handle, cf_cudnn_plan *plan, const void *x,
                                      const void *w, void *y, const void *b, const void *z,
                                      void *ws);

#endif /* CONVFIND_CUDA_GRAPH_H */
