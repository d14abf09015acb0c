/*
 * algos.c - cuda.cudnn and cuda.direct (see algos.h).
 *
 * A cuda.cudnn plan's prepared state is only the parsed configuration: portable and
 * read-only, so one plan may run on many threads.  The finalized cuDNN plan is looked up
 * in the executing thread's own cache (device.h) and built there on first use, so it is
 * always bound to the handle that runs it.
 */
#include "cuda/algos.h"

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/graph.h"
#include "cuda/kernels.h"
#include "cuda/lister.h"
#include "util/error.h"

#define ALIGN 256

typedef struct cudnn_state {
    cf_cudnn_config config;
    char name[CF_CUDA_NAME_MAX];
} cudnn_state;

static size_t round_up(size_t v)
{
    return (v + ALIGN - 1) / ALIGN * ALIGN;
}

/* Buffers around the engine, which runs problem q (cf_cudnn_engine_problem of the
 * caller's p, before a split): X and Y in its layout when that is not the caller's, W
 * with channels last when the engine runs NHWC (W is always given in ONNX layout), for
 * a padded configuration X's window (Conv) or the full Y before its window
 * (ConvTranspose), in the caller's layout, and for a split one X3 and W3 (graph.h).
 * Swapping an axis with one of size 1 moves nothing (a 1x1 kernel's W, a 1x1 image), so
 * those use the caller's buffer as it is. */
typedef struct layout_plan {
    cf_problem q;              /* what the engine computes, before a split */
    bool swap_x, swap_y, swap_w, window_x, window_y, split;
    int64_t w_outer, w_inner;  /* W as [w_outer][w_inner][k_sp] */
    size_t x_bytes, w_bytes, y_bytes, wx_bytes, wy_bytes, x3_bytes, w3_bytes;
} layout_plan;

static void layout_of(const cf_problem *p, const cf_cudnn_config *c, layout_plan *lp)
{
    cf_cudnn_config plain = *c;
    plain.split = false;
    cf_cudnn_engine_problem(p, &plain, &lp->q);
    const cf_problem *q = &lp->q;
    const size_t e = cf_dtype_size(p->dtype);
    const bool other = c->layout != p->layout;
    const bool tr = p->op == CONVFIND_OP_CONV_TRANSPOSE;
    lp->w_outer = tr ? p->c : p->m;
    lp->w_inner = tr ? p->m / p->group : p->c / p->group;
    lp->swap_x = other && q->c > 1 && q->in_sp > 1;
    lp->swap_y = other && q->m > 1 && q->out_sp > 1;
    lp->swap_w = c->layout == CONVFIND_LAYOUT_NHWC && lp->w_inner > 1 && p->k_sp > 1;
    lp->window_x = c->padded && !tr;
    lp->window_y = c->padded && tr;
    /* A split configuration splits X straight from the caller's layout (one pass). */
    lp->x_bytes = lp->swap_x && !c->split ? round_up(q->x_elems * e) : 0;
    lp->y_bytes = lp->swap_y ? round_up(q->y_elems * e) : 0;
    lp->w_bytes = lp->swap_w ? round_up(p->w_elems * e) : 0;
    lp->wx_bytes = lp->window_x ? round_up(q->x_elems * e) : 0;
    lp->wy_bytes = lp->window_y ? round_up(q->y_elems * e) : 0;
    lp->split = c->split;
    lp->x3_bytes = c->split ? round_up(3 * q->x_elems * e) : 0;
    lp->w3_bytes = c->split ? round_up(3 * q->w_elems * e) : 0;
}

static size_t staging_bytes(const layout_plan *lp)
{
    return lp->x_bytes + lp->y_bytes + lp->w_bytes + lp->wx_bytes + lp->wy_bytes +
           lp->x3_bytes + lp->w3_bytes;
}

/* X3 or W3 of a split configuration from X or W in the engine's layout (graph.h): the
 * channels of each group are the middle axis. */
static int split_x(const layout_plan *lp, convfind_layout layout, const void *x, void *x3,
                   void *stream)
{
    const cf_problem *q = &lp->q;
    const int64_t cg = cf_cin_per_group(q);
    return layout == CONVFIND_LAYOUT_NHWC
               ? cf_cuda_split_tf32(x, x3, q->n * q->in_sp * q->group, cg, 1, 4u, stream)
               : cf_cuda_split_tf32(x, x3, q->n * q->group, cg, q->in_sp, 4u, stream);
}

static int split_w(const layout_plan *lp, convfind_layout layout, const void *w, void *w3,
                   void *stream)
{
    const cf_problem *q = &lp->q;
    const int64_t cg = cf_cin_per_group(q);
    return layout == CONVFIND_LAYOUT_NHWC
               ? cf_cuda_split_tf32(w, w3, q->m * q->k_sp, cg, 1, 2u, stream)
               : cf_cuda_split_tf32(w, w3, q->m, cg, q->k_sp, 2u, stream);
}

/* Y's (ConvTranspose) or X's (Conv) window between the caller's tensor and the engine's
 * unpadded one: src -> dst, offsets from the pads. */
static int window(const cf_problem *p, const layout_plan *lp, const void *src, void *dst,
                  void *stream)
{
    int64_t off[CF_SP];
    const bool tr = p->op == CONVFIND_OP_CONV_TRANSPOSE;
    for (int d = 0; d < CF_SP; d++)
        off[d] = tr ? p->pad_begin[d] : -p->pad_begin[d];
    return tr ? cf_cuda_window(src, dst, cf_dtype_size(p->dtype), p->layout, p->n, p->m,
                               lp->q.out, p->out, off, stream)
              : cf_cuda_window(src, dst, cf_dtype_size(p->dtype), p->layout, p->n, p->c, p->in,
                               lp->q.in, off, stream);
}

/* Weights packed once for an NHWC engine or a split configuration (a plan's constant
 * weights, convfind_plan_options.weights). */
typedef struct packed_w {
    convfind_layout layout;
    bool split;
    void *w; /* device, [K][k...][C/group] (NHWC) and/or W3 (split); NULL: W as given */
} packed_w;

/* Set on this thread when an execution inside a CUDA graph capture was refused for
 * want of what only an execution outside one can make (below); cleared by the next
 * cuda.cudnn execution that runs, or by cuda.direct refusing in turn.  The core falls
 * back down the decision's list after a failure, and cuda.direct, which needs nothing
 * prepared, would otherwise be captured in the chosen configuration's place: correct,
 * tens of times slower, and silent. */
static _Thread_local bool capture_refused;

static convfind_status refuse_in_capture(const char *what)
{
    capture_refused = true;
    return cf_fail(CONVFIND_ERR_UNSUPPORTED,
                   "%s is not ready on this thread, and making it inside a CUDA graph capture "
                   "would break the capture: execute the plan once on this thread outside the "
                   "capture first", what);
}

/* Whether `plan` can be captured, by capturing one execution on the thread's own trial
 * stream (thread-local capture mode, so no other thread's capture is disturbed) and
 * throwing the graph away: a capture records and runs nothing.  Made once per thread and
 * plan, after its first execution outside any capture, so that an execution inside a
 * capture can refuse a plan that would break it instead of breaking it. */
static void check_capture(cf_cuda_thread *t, cf_cudnn_plan *plan, const void *x, const void *w,
                          void *y, const void *b, const void *z, void *ws, void *stream)
{
    bool ok = false;
    cudaGraph_t g = NULL;
    if (t->trial_stream ||
        cudaStreamCreateWithFlags(&t->trial_stream, cudaStreamNonBlocking) == cudaSuccess) {
        if (cudaStreamBeginCapture(t->trial_stream, cudaStreamCaptureModeThreadLocal) ==
            cudaSuccess) {
            ok = cudnnSetStream(t->handle, t->trial_stream) == CUDNN_STATUS_SUCCESS &&
                 cf_cudnn_plan_execute(t->handle, plan, x, w, y, b, z, ws) == CONVFIND_OK;
            ok = cudaStreamEndCapture(t->trial_stream, &g) == cudaSuccess && g && ok;
        }
    } else {
        t->trial_stream = NULL;
    }
    if (g)
        cudaGraphDestroy(g);
    cudaGetLastError();
    cf_clear_error();
    cudnnSetStream(t->handle, (cudaStream_t)stream);
    cf_cudnn_plan_set_capturable(plan, ok);
}

/* The calling thread's finalized plan of `s` for p, built on first use (never inside a
 * capture: finalizing may allocate and synchronize). */
static convfind_status thread_plan(cf_cuda_thread *t, const cf_problem *p, const cudnn_state *s,
                                   bool captured, cf_cudnn_plan **out)
{
    if ((*out = cf_cuda_plan_lookup(t, p, s->name)))
        return CONVFIND_OK;
    if (captured)
        return refuse_in_capture(s->name);
    convfind_status st = cf_cudnn_plan_create(t->handle, p, &s->config, out);
    if (st == CONVFIND_OK)
        cf_cuda_plan_insert(t, p, s->name, *out, cf_cudnn_plan_destroy);
    return st;
}

/* Every problem: pads cuDNN cannot take run as padded configurations (graph.h).  Which
 * configurations exist is the variants' business; there may be none. */
static bool cudnn_applicable(const cf_problem *p)
{
    (void)p;
    return true;
}

static convfind_status cudnn_prepare_named(const cf_problem *p, const char *name, void **state)
{
    cudnn_state *s = calloc(1, sizeof *s);
    if (!s)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate a cuDNN configuration");
    convfind_status st = cf_cudnn_config_parse(name, &s->config);
    if (st == CONVFIND_OK && strlen(name) >= sizeof s->name)
        st = cf_fail(CONVFIND_ERR_NOT_FOUND, "name \"%s\" is too long", name);
    if (st == CONVFIND_OK && s->config.split && !cf_cudnn_splittable(p))
        st = cf_fail(CONVFIND_ERR_UNSUPPORTED, "%s: split configurations are for f32 Conv under "
                     "CONVFIND_MATH_ALLOW_SPLIT_TF32", name);
    if (st != CONVFIND_OK) {
        free(s);
        return st;
    }
    strcpy(s->name, name);
    *state = s;
    return CONVFIND_OK;
}

static void cudnn_release(void *state)
{
    free(state);
}

/* The lists of one Find, interleaved in this order (the caller's layout first): the
 * kind, the layout (0: the caller's, 1: the other), and how many configurations each
 * keeps (graph.h, cf_cudnn_limits).  The caller's layout gets the most: the other one
 * pays two transposes, and won on the H200 mainly where its engines are several times
 * faster (NHWC tensor-core engines for an NCHW caller), which their first configurations
 * show.  A runtime-compiled engine costs tens to hundreds of milliseconds of compilation
 * (graph.c says when they are offered): the caller's layout keeps one where it heads
 * the list (prune_listed), the other layout none (on the H200 the depthwise layers
 * they exist for were always won in the caller's layout, while compiling the other
 * layout's took 140-420 ms per Find).
 * Fused lists and the other layout's keep mode A's configurations only: the fallback
 * mode's (engine 0, a generic kernel, 4-10 ms where the winners took 0.03-0.2 ms) and
 * the unlisted engines never won there; without them strict f32 Finds try 22 fewer
 * candidates over ResNet-50's layers at the same kernel totals
 * (bench/results/gpu_20261202/run13).  Split lists
 * are for a validating Find under CONVFIND_MATH_ALLOW_SPLIT_TF32 only; fused ones exist
 * where the problem has an epilogue cuDNN can fuse, and are not asked for again once a
 * problem of the same pattern got none on the device (fused_pattern).  On the H200 the
 * winner was mode A's first configuration of its list in 73% of 700 Finds, and among
 * its first four in 91%
 * (bench/results/gpu_20261202/run5). */
static const struct {
    cf_cudnn_kind kind;
    int other_layout;
    cf_cudnn_limits limits;
} lists[] = {
    {CF_CUDNN_PLAIN, 0, {.listed = 8, .per_engine = 3, .runtime_compiled = true, .unlisted = 6,
                         .widen = true}},
    {CF_CUDNN_PLAIN, 1, {.listed = 3, .per_engine = 2, .runtime_compiled = false, .unlisted = 0,
                         .widen = false}},
    {CF_CUDNN_FUSED, 0, {.listed = 3, .per_engine = 2, .runtime_compiled = true, .unlisted = 0,
                         .widen = false}},
    {CF_CUDNN_SPLIT, 0, {.listed = 4, .per_engine = 2, .runtime_compiled = false, .unlisted = 0,
                         .widen = true}},
    {CF_CUDNN_SPLIT, 1, {.listed = 2, .per_engine = 2, .runtime_compiled = false, .unlisted = 0,
                         .widen = true}},
};
#define LISTS ((int)(sizeof lists / sizeof lists[0]))

/* Alignment class of a channel count: 0, 1, 2 or 3 for a largest power-of-two divisor
 * of 1, 2, 4 or 8 and more (engines' vector widths). */
static uint64_t align_class(int64_t n)
{
    return n % 8 == 0 ? 3 : n % 4 == 0 ? 2 : n % 2 == 0 ? 1 : 0;
}

/* What decides, as far as a Find can tell, which configurations cuDNN has for a problem
 * and how they fare: the layout, element type and math mode, with `epilogue` the
 * epilogue (bias, residual, activation), the spatial rank, a 1x1 kernel or not, the
 * grouping (none, depthwise, other) and the alignment of the channels per group.
 * Problems that share it share the answer to "does the fused list come back empty"
 * (cf_cuda_fused_known_empty), and their lists share the engines' record (list_pattern). */
static uint64_t problem_pattern(const cf_problem *p, bool epilogue)
{
    const int64_t cg = p->c / p->group, mg = p->m / p->group;
    const uint64_t grouping = p->group == 1 ? 0 : (cg == 1 ? 1 : 2);
    uint64_t v = (uint64_t)p->layout & 0xff;
    v = v << 8 | ((uint64_t)p->dtype & 0xff);
    v = v << 8 | ((uint64_t)p->math_mode & 0xff);
    v = v << 8 | (epilogue ? (uint64_t)p->act & 0xff : 0);
    v = v << 2 | (epilogue ? (uint64_t)p->has_bias << 1 | (uint64_t)p->has_residual : 0);
    v = v << 2 | (uint64_t)(p->nsp & 3);
    v = v << 1 | (uint64_t)(p->k_sp == 1);
    v = v << 2 | grouping;
    v = v << 2 | align_class(cg);
    v = v << 2 | align_class(mg);
    return v;
}

/* The pattern of one list of p's: the problem's, the layout the engines run in, and
 * the kind of configuration (device.h, cf_cuda_outcome_note).  A generic engine that
 * is hopeless for one kind in one layout may win another: the fallback list's engine 0
 * was tens of times slower than the choice in every strict f32 Find of ResNet-50's
 * layers on the H200 and the choice for MobileNetV2's NCHW depthwise layers.  Only a
 * fused configuration computes the epilogue in its engine; every other one is followed
 * by the same epilogue kernel, so for those the epilogue says nothing about the engine. */
static uint64_t list_pattern(const cf_problem *p, convfind_layout layout, bool split, bool fused)
{
    return problem_pattern(p, fused) << 3 | (uint64_t)(layout == CONVFIND_LAYOUT_NHWC) << 2 |
           (uint64_t)split << 1 | (uint64_t)fused;
}

int cf_cuda_cudnn_variants(const cf_problem *p, const cf_cuda_device *d, unsigned extra,
                           char (*names)[64], int cap)
{
    int count = 0;
    int prev = cf_cuda_enter(d);
    const convfind_layout other = p->layout == CONVFIND_LAYOUT_NHWC ? CONVFIND_LAYOUT_NCHW
                                                                   : CONVFIND_LAYOUT_NHWC;
    enum { EACH = 32 };
    const uint64_t pattern = problem_pattern(p, true);
    cf_cuda_list_job jobs[LISTS];
    cf_cudnn_config *c = calloc((size_t)LISTS * EACH, sizeof *c);
    int n = 0;
    for (int l = 0; c && l < LISTS; l++) {
        if ((lists[l].kind == CF_CUDNN_SPLIT && !(extra & CF_CUDA_VARIANTS_SPLIT)) ||
            (lists[l].kind == CF_CUDNN_FUSED && cf_cuda_fused_known_empty(d, pattern)))
            continue;
        jobs[n] = (cf_cuda_list_job){.p = p, .layout = lists[l].other_layout ? other : p->layout,
                                     .kind = lists[l].kind, .limits = lists[l].limits,
                                     .out = c + (size_t)l * EACH, .cap = EACH};
        jobs[n].limits.offer_compiled = cf_cuda_runtime_compiled(d);
        cf_cuda_hopeless(d, list_pattern(p, jobs[n].layout, jobs[n].kind == CF_CUDNN_SPLIT,
                                         jobs[n].kind == CF_CUDNN_FUSED),
                         jobs[n].limits.hopeless);
        if (!(extra & CF_CUDA_VARIANTS_UNLISTED))
            jobs[n].limits.unlisted = 0;
        n++;
    }
    cf_cuda_list(cf_cuda_device_lister(d), d, jobs, n);
    for (int j = 0; j < n; j++)
        if (jobs[j].kind == CF_CUDNN_FUSED && jobs[j].count == 0 && cf_cudnn_fusable(p))
            cf_cuda_fused_note_empty(d, pattern);
    /* Interleaved: a Find whose time budget runs out has still tried the best guesses
     * of each list. */
    for (int i = 0; i < EACH && count < cap; i++)
        for (int j = 0; j < n; j++)
            if (i < jobs[j].count && count < cap &&
                cf_cudnn_config_name(&jobs[j].out[i], names[count], 64))
                count++;
    free(c);
    cf_cuda_leave(prev);
    cf_clear_error();
    return count;
}

void cf_cuda_cudnn_learn(const cf_cuda_device *d, const cf_problem *p,
                         const cf_candidate_stats *ranked, const bool *far, int n)
{
    /* (pattern, engine) of the choice first, then of each loss not yet noted: once per
     * Find and engine, and another form of the choice's engine is not its loss. */
    enum { MAX = 64 };
    uint64_t pattern[MAX];
    int64_t engine[MAX];
    int k = 0;
    for (int i = 0; i < n && k < MAX; i++) {
        cf_cudnn_config c;
        if ((i > 0 && !far[i]) || cf_cudnn_config_parse(ranked[i].algo, &c) != CONVFIND_OK)
            continue;
        pattern[k] = list_pattern(p, c.layout, c.split, c.fused);
        engine[k] = c.engine;
        bool seen = false;
        for (int j = 0; j < k && !seen; j++)
            seen = pattern[j] == pattern[k] && engine[j] == engine[k];
        if (!seen)
            cf_cuda_outcome_note(d, pattern[k], engine[k], i == 0);
        k += !seen;
    }
    cf_clear_error();
}

int cf_cuda_cudnn_neighbors(const cf_problem *p, const cf_cuda_device *d, const char *name,
                            char (*names)[64], int cap)
{
    cf_cudnn_config base;
    if (cf_cudnn_config_parse(name, &base) != CONVFIND_OK) {
        cf_clear_error();
        return 0;
    }
    cf_cuda_thread *t;
    int count = 0;
    int prev = cf_cuda_enter(d);
    cf_cudnn_config *c = calloc((size_t)(cap > 0 ? cap : 1), sizeof *c);
    if (c && cf_cuda_thread_get(d, &t) == CONVFIND_OK) {
        int n = cf_cudnn_knob_neighbors(t->handle, p, &base, c, cap);
        for (int i = 0; i < n; i++)
            if (cf_cudnn_config_name(&c[i], names[count], 64))
                count++;
    }
    free(c);
    cf_cuda_leave(prev);
    cf_clear_error();
    return count;
}

static convfind_status aligned16(const cf_exec_args *a)
{
    const void *ptrs[5] = {a->x, a->w, a->y, a->b, a->z};
    for (int i = 0; i < 5; i++)
        if ((uintptr_t)ptrs[i] % 16)
            return cf_fail(CONVFIND_ERR_UNSUPPORTED,
                           "cuDNN engines need 16-byte aligned tensors; tensor %d is at %p", i,
                           ptrs[i]);
    return CONVFIND_OK;
}

static convfind_status launch_status(int err, const char *what)
{
    return err ? cf_cuda_fail(err, what) : CONVFIND_OK;
}

/* The whole call on the stream: window and swap in, the engine, swap and window out,
 * epilogue (inside the engine's graph for a fused configuration). */
static convfind_status cudnn_run(cf_cuda_thread *t, const cf_problem *p, const cudnn_state *s,
                                 const cf_exec_args *a, bool captured)
{
    cf_cudnn_plan *plan;
    convfind_status st = aligned16(a);
    if (st != CONVFIND_OK || (st = thread_plan(t, p, s, captured, &plan)) != CONVFIND_OK)
        return st;
    if (captured && cf_cudnn_plan_capturable(plan) != 1) {
        if (cf_cudnn_plan_capturable(plan) < 0)
            return refuse_in_capture(s->name);
        capture_refused = true;
        return cf_fail(CONVFIND_ERR_UNSUPPORTED,
                       "%s cannot be captured into a CUDA graph: its cuDNN engine does what a "
                       "capture forbids (a trial capture failed)", s->name);
    }
    layout_plan lp;
    layout_of(p, &s->config, &lp);
    const cf_problem *q = &lp.q;
    const size_t engine_ws = round_up(cf_cudnn_plan_workspace(plan));
    const size_t total = engine_ws + staging_bytes(&lp);
    const size_t limit = cf_cuda_workspace_limit(t->device);
    if (limit && total > limit)
        return cf_fail(CONVFIND_ERR_UNSUPPORTED, "%s needs %zu workspace bytes, over the limit %zu",
                       s->name, total, limit);
    void *ws;
    if ((st = cf_cuda_workspace_acquire(t, total, a->stream, captured, &ws)) != CONVFIND_OK)
        return st;
    char *base = ws;
    void *engine_buf = engine_ws ? base : NULL;
    void *xb = base + engine_ws, *yb = (char *)xb + lp.x_bytes;
    void *wb = (char *)yb + lp.y_bytes, *wxb = (char *)wb + lp.w_bytes;
    void *wyb = (char *)wxb + lp.wx_bytes, *x3b = (char *)wyb + lp.wy_bytes;
    void *w3b = (char *)x3b + lp.x3_bytes;
    const size_t e = cf_dtype_size(p->dtype);
    const bool to_nhwc = s->config.layout == CONVFIND_LAYOUT_NHWC;
    const void *x = a->x, *w = a->w;
    void *y_caller = lp.window_y ? wyb : a->y; /* Y in the caller's layout, q's shape */
    void *y = lp.swap_y ? yb : y_caller;
    int err = 0;
    if (lp.window_x) {
        err = window(p, &lp, a->x, wxb, a->stream);
        x = wxb;
    }
    if (!err && lp.split) {
        err = lp.swap_x ? cf_cuda_split_tf32_swapped(x, x3b, q->n, q->group, cf_cin_per_group(q),
                                                     q->in_sp, to_nhwc, 4u, a->stream)
                        : split_x(&lp, s->config.layout, x, x3b, a->stream);
        x = x3b;
    } else if (!err && lp.swap_x) {
        err = to_nhwc ? cf_cuda_swap_axes(x, xb, e, q->n, q->c, q->in_sp, a->stream)
                      : cf_cuda_swap_axes(x, xb, e, q->n, q->in_sp, q->c, a->stream);
        x = xb;
    }
    const packed_w *pw = a->packed_w;
    if (pw && pw->layout == s->config.layout && pw->split == lp.split && pw->w) {
        w = pw->w;
    } else {
        if (!err && lp.swap_w) {
            err = cf_cuda_swap_axes(a->w, wb, e, lp.w_outer, lp.w_inner, p->k_sp, a->stream);
            w = wb;
        }
        if (!err && lp.split) {
            err = split_w(&lp, s->config.layout, w, w3b, a->stream);
            w = w3b;
        }
    }
    st = launch_status(err, "layout change before cuDNN");
    cudnnStatus_t cs = cudnnSetStream(t->handle, (cudaStream_t)a->stream);
    if (st == CONVFIND_OK && cs != CUDNN_STATUS_SUCCESS)
        st = cf_fail(CONVFIND_ERR_BACKEND, "cudnnSetStream: %s", cudnnGetErrorString(cs));
    if (st == CONVFIND_OK)
        st = cf_cudnn_plan_execute(t->handle, plan, x, w, y, a->b, a->z, engine_buf);
    if (st == CONVFIND_OK && !captured && cf_cudnn_plan_capturable(plan) < 0)
        check_capture(t, plan, x, w, y, a->b, a->z, engine_buf, a->stream);
    if (st == CONVFIND_OK && lp.swap_y)
        st = launch_status(to_nhwc ? cf_cuda_swap_axes(yb, y_caller, e, q->n, q->out_sp, q->m,
                                                       a->stream)
                                   : cf_cuda_swap_axes(yb, y_caller, e, q->n, q->m, q->out_sp,
                                                       a->stream),
                           "layout change after cuDNN");
    if (st == CONVFIND_OK && lp.window_y)
        st = launch_status(window(p, &lp, wyb, a->y, a->stream), "cropping Y after cuDNN");
    if (st == CONVFIND_OK && !s->config.fused &&
        (p->has_bias || p->has_residual || p->act != CONVFIND_ACT_NONE))
        st = launch_status(cf_cuda_epilogue(p, a->b, a->z, a->y, a->stream), "epilogue");
    cf_cuda_workspace_release(t, ws, a->stream, captured);
    return st;
}

/* W in the configuration's layout, once, on the calling thread's current device (the
 * context's; packing is not stream-ordered: it finishes before returning). */
static convfind_status cudnn_pack_weights(const cf_problem *p, const void *state, const void *w,
                                          void **packed)
{
    const cudnn_state *s = state;
    layout_plan lp;
    layout_of(p, &s->config, &lp);
    packed_w *pw = calloc(1, sizeof *pw);
    if (!pw)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate packed weights");
    pw->layout = s->config.layout;
    pw->split = lp.split;
    int err = 0;
    void *swapped = NULL; /* W in the engine's layout, when that is not W as given */
    if (lp.swap_w) {
        err = cudaMalloc(&swapped, lp.w_bytes);
        if (!err)
            err = cf_cuda_swap_axes(w, swapped, cf_dtype_size(p->dtype), lp.w_outer, lp.w_inner,
                                    p->k_sp, NULL);
    }
    if (!err && lp.split) {
        err = cudaMalloc(&pw->w, lp.w3_bytes);
        if (!err)
            err = split_w(&lp, s->config.layout, swapped ? swapped : w, pw->w, NULL);
    } else {
        pw->w = swapped;
        swapped = NULL;
    }
    if (!err && (lp.swap_w || lp.split))
        err = cudaStreamSynchronize(NULL);
    if (swapped)
        cudaFree(swapped);
    if (err) {
        cudaGetLastError();
        if (pw->w)
            cudaFree(pw->w);
        free(pw);
        return cf_cuda_fail(err, "packing cuDNN weights");
    }
    *packed = pw;
    return CONVFIND_OK;
}

static void cudnn_free_packed(void *packed)
{
    packed_w *pw = packed;
    if (pw && pw->w)
        cudaFree(pw->w);
    free(pw);
}

static convfind_status cudnn_execute(const cf_problem *p, const void *state, const cf_exec_args *a)
{
    const cf_cuda_device *d = a->device;
    if (!d || !state)
        return cf_fail(CONVFIND_ERR_BACKEND, "cuda.cudnn runs only on a CUDA context");
    int prev = cf_cuda_enter(d);
    const bool captured = cf_cuda_capturing(a->stream);
    cf_cuda_thread *t = captured ? cf_cuda_thread_find(d) : NULL;
    convfind_status st = captured ? (t ? CONVFIND_OK : refuse_in_capture("the cuDNN handle"))
                                  : cf_cuda_thread_get(d, &t);
    if (st == CONVFIND_OK)
        st = cudnn_run(t, p, state, a, captured);
    if (st == CONVFIND_OK)
        capture_refused = false;
    cf_cuda_leave(prev);
    return st;
}

convfind_status cf_cuda_algo_workspace(const cf_cuda_device *d, const cf_problem *p,
                                       const cf_algo *algo, const char *name, size_t *bytes)
{
    *bytes = 0;
    if (algo != &cf_algo_cuda_cudnn)
        return CONVFIND_OK;
    cudnn_state s;
    convfind_status st = cf_cudnn_config_parse(name, &s.config);
    if (st != CONVFIND_OK)
        return st;
    snprintf(s.name, sizeof s.name, "%s", name);
    int prev = cf_cuda_enter(d);
    cf_cuda_thread *t;
    cf_cudnn_plan *plan;
    if ((st = cf_cuda_thread_get(d, &t)) == CONVFIND_OK &&
        (st = thread_plan(t, p, &s, false, &plan)) == CONVFIND_OK) {
        layout_plan lp;
        layout_of(p, &s.config, &lp);
        *bytes = round_up(cf_cudnn_plan_workspace(plan)) + staging_bytes(&lp);
    }
    cf_cuda_leave(prev);
    return st;
}

/* The plan this thread finalized for the form of `state`, serialized when its engine
 * compiled code at run time: a later process loads it in milliseconds where compiling
 * took tens to hundreds (cf_algo.export_compiled). */
static convfind_status cudnn_export_compiled(const cf_problem *p, const void *state,
                                             const void *device, void **blob, size_t *size)
{
    *blob = NULL;
    *size = 0;
    const cudnn_state *s = state;
    int prev = cf_cuda_enter(device);
    cf_cuda_thread *t = cf_cuda_thread_find(device);
    cf_cudnn_plan *plan = t ? cf_cuda_plan_lookup(t, p, s->name) : NULL;
    convfind_status st = plan ? cf_cudnn_plan_serialize(plan, blob, size) : CONVFIND_OK;
    cf_cuda_leave(prev);
    return st;
}

/* Makes this thread's plan for the form of `state` from a serialized one, when the
 * thread has none yet (cf_algo.import_compiled).  A blob cuDNN refuses (another cuDNN
 * version or device) is dropped: the plan is then finalized on first use as always. */
static bool cudnn_import_compiled(const cf_problem *p, const void *state, const void *device,
                                  bool (*fetch)(void *arg, void **blob, size_t *size), void *arg)
{
    const cudnn_state *s = state;
    int prev = cf_cuda_enter(device);
    cf_cuda_thread *t;
    bool used = false;
    void *blob = NULL;
    size_t size = 0;
    if (cf_cuda_thread_get(device, &t) == CONVFIND_OK && !cf_cuda_plan_lookup(t, p, s->name) &&
        fetch(arg, &blob, &size) && blob) {
        cf_cudnn_plan *plan;
        if (cf_cudnn_plan_load(t->handle, p, &s->config, blob, size, &plan) == CONVFIND_OK) {
            cf_cuda_plan_insert(t, p, s->name, plan, cf_cudnn_plan_destroy);
            used = true;
        }
    }
    free(blob);
    cf_clear_error();
    cf_cuda_leave(prev);
    return used;
}

const cf_algo cf_algo_cuda_cudnn = {
    .name = "cuda.cudnn",
    .family = "cudnn",
    .applicable = cudnn_applicable,
    .release = cudnn_release,
    .pack_weights = cudnn_pack_weights,
    .free_packed = cudnn_free_packed,
    .execute = cudnn_execute,
    .prepare_named = cudnn_prepare_named,
    .export_compiled = cudnn_export_compiled,
    .import_compiled = cudnn_import_compiled,
};

/* ------------------------------------------------------------------------- */
/* cuda.direct                                                                */
/* ------------------------------------------------------------------------- */

static bool direct_applicable(const cf_problem *p)
{
    (void)p;
    return true;
}

static convfind_status direct_execute(const cf_problem *p, const void *state, const cf_exec_args *a)
{
    (void)state;
    const cf_cuda_device *d = a->device;
    if (!d)
        return cf_fail(CONVFIND_ERR_BACKEND, "cuda.direct runs only on a CUDA context");
    int prev = cf_cuda_enter(d);
    convfind_status st = CONVFIND_OK;
    if (capture_refused && cf_cuda_capturing(a->stream)) {
        capture_refused = false;
        st = cf_fail(CONVFIND_ERR_UNSUPPORTED,
                     "the plan's cuDNN configuration is not ready on this thread, and cuda.direct "
                     "is not captured in its place: execute the plan once on this thread outside "
                     "the CUDA graph capture first");
    } else {
        st = launch_status(cf_cuda_direct_conv(p, a->x, a->w, a->b, a->z, a->y, a->stream),
                           "cuda.direct");
    }
    cf_cuda_leave(prev);
    return st;
}

const cf_algo cf_algo_cuda_direct = {
    .name = "cuda.direct",
    .family = "direct",
    .applicable = direct_applicable,
    .execute = direct_execute,
};
