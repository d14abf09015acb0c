/*
 * convfind.h - the public C API of convfind.
 *
 * convfind runs convolutions with ONNX `Conv` / `ConvTranspose` semantics, finds the
 * fastest correct algorithm for each distinct problem by measuring the candidates, and
 * remembers that decision.  The objects, in the order a caller meets them:
 *
 *   convfind_context   options (threads, find policy, workspace budget, database) and
 *                      everything shared between calls: the decision cache, the thread pool.
 *   convfind_problem   one convolution described with ONNX attributes, validated and
 *                      resolved (pads, output shape).  Immutable; knows nothing of data.
 *   convfind_plan      a problem bound to a context and to the algorithm chosen for it.
 *   convfind_execute   runs a plan on caller-owned buffers.
 *
 * Conventions that hold for every function below unless its comment says otherwise:
 *
 * - Status.  Every function that can fail returns a convfind_status.  On failure no
 *   output parameter is written except that pointer outputs are set to NULL, and no
 *   output tensor is left looking like a valid result (see convfind_execute).
 *   A human-readable message naming the offending value is available from
 *   convfind_last_error() on the same thread until that thread's next convfind call.
 * - Ownership.  Objects returned through `**out` parameters belong to the caller, who
 *   releases each exactly once with its destroy function.  Destroy functions accept NULL.
 *   Tensor buffers always belong to the caller; convfind never keeps a data pointer past
 *   the call that received it.
 * - Thread safety.  convfind keeps no mutable global state visible to callers.  Functions
 *   taking a `const` object may be called from any number of threads at once on the same
 *   object.  A destroy function must not race with any other use of that object.
 * - Tensors are dense, C-ordered and of the problem's data type.  Logical dimensions are
 *   always given in ONNX order (N, C, D1, ..., Dk); the layout says how they are stored.
 */
#ifndef CONVFIND_H
#define CONVFIND_H

#include <stddef.h>
#include <stdint.h>

#include "convfind_version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(CONVFIND_SHARED_BUILD)
#define CONVFIND_API __declspec(dllexport)
#elif defined(__GNUC__)
#define CONVFIND_API __attribute__((visibility("default")))
#else
#define CONVFIND_API
#endif

/* ------------------------------------------------------------------------- */
/* Status                                                                    */
/* ------------------------------------------------------------------------- */

typedef enum convfind_status {
    CONVFIND_OK = 0,
    CONVFIND_ERR_NULL_POINTER,      /* a required pointer argument was NULL */
    CONVFIND_ERR_INVALID_ENUM,      /* an enum argument had an unknown value */
    CONVFIND_ERR_INVALID_RANK,      /* tensor rank or attribute length is wrong */
    CONVFIND_ERR_INVALID_SHAPE,     /* a dimension is <= 0 or inconsistent with another */
    CONVFIND_ERR_INVALID_ATTRIBUTE, /* a stride, dilation, pad, group, ... is out of range */
    CONVFIND_ERR_OVERFLOW,          /* an element, byte or workspace count does not fit */
    CONVFIND_ERR_UNSUPPORTED,       /* valid, but not implemented for this backend / dtype */
    CONVFIND_ERR_OUT_OF_MEMORY,     /* an allocation failed */
    CONVFIND_ERR_NOT_FOUND,         /* a named algorithm, record or key does not exist */
    CONVFIND_ERR_BACKEND,           /* an algorithm or device reported an error */
    CONVFIND_ERR_IO,                /* a file could not be read or written */
    CONVFIND_ERR_UNAVAILABLE        /* the backend asked for cannot run in this process: no
                                       CUDA backend module, driver, device or cuDNN */
} convfind_status;

/* A short, static, English name for a status ("CONVFIND_ERR_INVALID_SHAPE").
 * Never NULL; unknown values give "CONVFIND_ERR_UNKNOWN".  Thread-safe. */
CONVFIND_API const char *convfind_status_name(convfind_status status);

/* The message of the last failed convfind call on the calling thread, or "" if the
 * last call succeeded.  The buffer is thread-local: it is valid until the same thread
 * makes its next convfind call and is never shared between threads. */
CONVFIND_API const char *convfind_last_error(void);

/* The library version as "MAJOR.MINOR.PATCH".  Static storage; thread-safe. */
CONVFIND_API const char *convfind_version_string(void);

/* ------------------------------------------------------------------------- */
/* Problem description (ONNX attributes)                                     */
/* ------------------------------------------------------------------------- */

#define CONVFIND_MAX_SPATIAL 3 /* 1-D, 2-D and 3-D convolutions */
#define CONVFIND_MAX_RANK (CONVFIND_MAX_SPATIAL + 2)

typedef enum convfind_op {
    CONVFIND_OP_CONV = 0,          /* ONNX Conv (and FusedConv's epilogue) */
    CONVFIND_OP_CONV_TRANSPOSE = 1 /* ONNX ConvTranspose */
} convfind_op;

typedef enum convfind_dtype {
    CONVFIND_DTYPE_F32 = 0,
    CONVFIND_DTYPE_F16 = 1,  /* described and keyed; execution reports UNSUPPORTED on CPU */
    CONVFIND_DTYPE_BF16 = 2  /* likewise */
} convfind_dtype;

typedef enum convfind_layout {
    CONVFIND_LAYOUT_NCHW = 0, /* channels first, as ONNX (NCW, NCHW, NCDHW) */
    CONVFIND_LAYOUT_NHWC = 1  /* channels last (NWC, NHWC, NDHWC) */
} convfind_layout;

typedef enum convfind_auto_pad {
    CONVFIND_AUTO_PAD_NOTSET = 0,
    CONVFIND_AUTO_PAD_SAME_UPPER = 1,
    CONVFIND_AUTO_PAD_SAME_LOWER = 2,
    CONVFIND_AUTO_PAD_VALID = 3
} convfind_auto_pad;

/* Fused epilogue, as ONNX Runtime's FusedConv: y = act(conv(x, w) + b + z). */
typedef enum convfind_activation {
    CONVFIND_ACT_NONE = 0,
    CONVFIND_ACT_RELU = 1,
    CONVFIND_ACT_LEAKY_RELU = 2,   /* alpha: slope for x < 0 */
    CONVFIND_ACT_CLIP = 3,         /* alpha: min, beta: max */
    CONVFIND_ACT_SIGMOID = 4,
    CONVFIND_ACT_TANH = 5,
    CONVFIND_ACT_HARD_SIGMOID = 6  /* max(0, min(1, alpha * x + beta)) */
} convfind_activation;

/* Math policy: which arithmetic a backend may use for f32 data.  Part of the decision
 * key: a decision made under one mode never serves another.  f16 and bf16 data are
 * multiplied in their own precision and accumulated in f32 under every mode.
 *
 *   STRICT            f32 products and f32 accumulation, nothing else: on a GPU no
 *                     tensor-core engine, no input converted down, no split.  Plain f32
 *                     engines (Winograd among them) stayed within 4.2e-6 normwise
 *                     relative error of a double-accumulating reference on ResNet-50's
 *                     layers (docs/cuda.md); Find rejects anything above 1e-4.
 *   ALLOW_TF32        inputs may be rounded to TF32 (10 mantissa bits) for tensor cores
 *                     on a GPU, and Winograd F(6x6,3x3) may run on a CPU
 *                     (docs/winograd.md): about 3e-4 normwise relative error on
 *                     ResNet-50's layers; Find rejects anything above 5e-3.
 *   ALLOW_SPLIT_TF32  STRICT's engines, plus on a GPU the "split" (3xTF32) form of an
 *                     f32 Conv: each operand split into its TF32 part and the f32
 *                     remainder, three tensor-core products summed in f32.  A validating
 *                     Find accepts a split configuration only within 1e-5 normwise
 *                     relative error of the reference; measured on ResNet-50's layers,
 *                     split results ranged from 5e-7 to 4.5e-5 by engine, so the bound
 *                     rejects the engines that accumulate less exactly (docs/cuda.md).
 *                     A Find that does not validate never offers split forms; on a CPU
 *                     this mode computes as STRICT. */
typedef enum convfind_math_mode {
    CONVFIND_MATH_STRICT = 0,
    CONVFIND_MATH_ALLOW_TF32 = 1,
    CONVFIND_MATH_ALLOW_SPLIT_TF32 = 2
} convfind_math_mode;

/* An attribute list as ONNX stores it: `count` == 0 means "attribute absent" and the
 * ONNX default applies.  A count larger than the array is rejected. */
typedef struct convfind_ints {
    int count;
    int64_t v[2 * CONVFIND_MAX_SPATIAL];
} convfind_ints;

/* Everything that defines one convolution.  Initialise with convfind_conv_desc_init(),
 * then set the fields that differ from the ONNX defaults.  Plain data: the caller owns
 * it and may reuse or free it as soon as convfind_problem_create() returns. */
typedef struct convfind_conv_desc {
    convfind_op op;
    convfind_dtype dtype;
    convfind_layout layout;       /* layout of X, Z and Y; W is always in ONNX layout */
    convfind_math_mode math_mode;

    int x_rank;                   /* 3, 4 or 5 */
    int64_t x_dims[CONVFIND_MAX_RANK]; /* N, C, spatial... (ONNX order, whatever the layout) */
    int w_rank;                   /* must equal x_rank */
    int64_t w_dims[CONVFIND_MAX_RANK]; /* Conv: M, C/group, k...; ConvTranspose: C, M/group, k... */
    int has_bias;                 /* B: 1-D, M elements */
    int has_residual;             /* Z: same shape and layout as Y, added before the activation */

    int64_t group;                /* default 1 */
    convfind_auto_pad auto_pad;   /* default NOTSET */
    convfind_ints kernel_shape;   /* absent: taken from W */
    convfind_ints strides;        /* absent: all 1 */
    convfind_ints dilations;      /* absent: all 1 */
    convfind_ints pads;           /* all begins, then all ends; absent: all 0 */
    convfind_ints output_padding; /* ConvTranspose only; absent: all 0 */
    convfind_ints output_shape;   /* ConvTranspose only; spatial dims of Y only, as ONNX */

    convfind_activation activation;
    float alpha, beta;            /* activation parameters, see convfind_activation */
} convfind_conv_desc;

/* Sets every field to the ONNX default: Conv, f32, NCHW, strict math, group 1,
 * NOTSET, no attributes, no bias, no residual, no activation; ranks 0 (must be set).
 * Thread-safe; `desc` must not be NULL (nothing happens if it is). */
CONVFIND_API void convfind_conv_desc_init(convfind_conv_desc *desc);

/* A validated, resolved problem.  Immutable once created: any number of threads may use
 * one problem at once. */
typedef struct convfind_problem convfind_problem;

/* Validates `desc` against the ONNX specification, resolves auto_pad, output_shape and
 * the default attributes, and computes the output shape.  On any invalid input returns
 * the specific status with a message that names the offending value, and sets *out to
 * NULL.  Thread-safe. */
CONVFIND_API convfind_status convfind_problem_create(const convfind_conv_desc *desc,
                                                     convfind_problem **out);

/* Releases a problem.  NULL is allowed.  Plans made from it stay valid (they copy it). */
CONVFIND_API void convfind_problem_destroy(convfind_problem *problem);

/* The resolved output Y: its rank and logical dims in ONNX order (N, M, spatial...).
 * `dims` must have room for CONVFIND_MAX_RANK values. */
CONVFIND_API convfind_status convfind_problem_output_dims(const convfind_problem *problem,
                                                          int *rank, int64_t *dims);

/* The resolved pads (all begins, then all ends; 2 * spatial rank values) after auto_pad
 * and output_shape are applied.  A ConvTranspose pad may be negative when output_shape
 * or SAME_* asks for more output than the input produces (docs/onnx-semantics.md).  `pads` needs 2*CONVFIND_MAX_SPATIAL. */
CONVFIND_API convfind_status convfind_problem_resolved_pads(const convfind_problem *problem,
                                                            int64_t *pads);

/* Element counts of X, W, Y and B (Z has Y's count; B has M, or 0 without bias).
 * Any pointer may be NULL. */
CONVFIND_API convfind_status convfind_problem_sizes(const convfind_problem *problem,
                                                    size_t *x_elems, size_t *w_elems,
                                                    size_t *y_elems, size_t *b_elems);

/* Floating-point operations of one execution (2 per multiply-add, epilogue excluded). */
CONVFIND_API double convfind_problem_flops(const convfind_problem *problem);

/* A one-line human-readable description, written into buf (always NUL-terminated when
 * size > 0).  Returns the length the full text needs, excluding the NUL, like snprintf. */
CONVFIND_API size_t convfind_problem_describe(const convfind_problem *problem, char *buf,
                                              size_t size);

/* ------------------------------------------------------------------------- */
/* Find database (persistent decisions; docs/db.md)                          */
/* ------------------------------------------------------------------------- */

/* Decisions are stored in a SQLite file shared by processes: a writable user tier
 * (convfind_context_options.db_path, else $CONVFIND_DB_PATH, else
 * $XDG_CACHE_HOME/convfind/finddb.sqlite, else ~/.cache/convfind/finddb.sqlite, else
 * memory with one warning; the path ":memory:" asks for memory without a warning) over
 * an optional read-only system tier (system_db_path, else $CONVFIND_SYSTEM_DB).  A file
 * named by db_path or $CONVFIND_DB_PATH that cannot be used (not a regular file, no
 * permission, a lock held past the busy timeout; "" is not a path) makes
 * convfind_context_create fail with CONVFIND_ERR_IO; at the default locations it means
 * in-memory operation with one warning on stderr.  A damaged, truncated or foreign file
 * this process can write is renamed to "<file>.quarantine-<time>-<pid>" with one warning;
 * a newer-schema file or one it cannot write is used read-only with one warning.  Once a
 * context exists the database never makes a call fail: a busy database is retried, and a
 * decision that could not be stored is counted (docs/db.md).
 *
 * Every record carries the environment it was measured in (library version, backend
 * versions, device).  A record from another environment is never used as it is; the
 * policy says what happens instead. */
typedef enum convfind_db_env_policy {
    CONVFIND_DB_ENV_RETUNE = 0, /* re-time only the record's stored top candidates (default) */
    CONVFIND_DB_ENV_IGNORE = 1  /* treat it as absent: the find policy decides (full Find) */
} convfind_db_env_policy;

/* ------------------------------------------------------------------------- */
/* Devices (docs/cuda.md; owned by src/cuda/)                                */
/* ------------------------------------------------------------------------- */

/* Where a context's executions run.  A CUDA context takes device pointers for every
 * tensor (x, w, b, z, y), offers only GPU algorithms (cuDNN engine configurations and a
 * direct kernel that runs every problem) and keys its decisions by device name,
 * compute capability and cuDNN version.
 *
 * The CUDA backend is a module of its own, libconvfind_cuda.so, which the library loads
 * (dlopen) the first time a context asks for CONVFIND_DEVICE_CUDA: libconvfind itself
 * needs no CUDA library to load or to run CPU contexts.  It looks for the module at
 * $CONVFIND_CUDA_MODULE (a path; when set, the only place tried), then next to the
 * library (libconvfind.so's directory, or the program's when linked statically), then in
 * the install libdir, then on the dynamic loader's search path; once per process.
 * convfind_context_create() reports CONVFIND_ERR_UNAVAILABLE with a one-line message
 * naming what is missing (the module path tried and the loader's error, "no usable CUDA
 * device", an old cuDNN) when the CUDA backend cannot run; CPU contexts in the same
 * process are unaffected. */
typedef enum convfind_device {
    CONVFIND_DEVICE_CPU = 0,
    CONVFIND_DEVICE_CUDA = 1
} convfind_device;

/* Caller-provided device workspace for a CUDA context.  alloc returns `bytes` of device
 * memory usable by work queued on `stream` (a cudaStream_t; NULL is the default stream)
 * or NULL when it cannot; free gives it back once that work is queued, so it must not
 * hand the memory out again before the stream's work has run (cudaFreeAsync semantics).
 * Both are called from the executing thread, possibly from many threads at once.  With
 * alloc NULL the context keeps one grow-only workspace per host thread. */
typedef struct convfind_device_allocator {
    void *(*alloc)(void *user, size_t bytes, void *stream);
    void (*free)(void *user, void *ptr, void *stream);
    void *user;
} convfind_device_allocator;

/* ------------------------------------------------------------------------- */
/* Context                                                                   */
/* ------------------------------------------------------------------------- */

typedef enum convfind_find_policy {
    CONVFIND_FIND_HEURISTIC = 0,  /* never benchmark: take the heuristic choice */
    CONVFIND_FIND_EXHAUSTIVE = 1, /* benchmark every applicable candidate on a miss */
    CONVFIND_FIND_HYBRID = 2,     /* use a stored decision, else benchmark */
    CONVFIND_FIND_REPLAY = 3,     /* stored decisions only; heuristic where none */
    CONVFIND_FIND_DEFERRED = 4    /* heuristic now, benchmark in the background */
} convfind_find_policy;

typedef struct convfind_context_options {
    int num_threads;              /* worker threads per execution; 0: all online cores */
    convfind_find_policy find_policy;
    size_t workspace_limit;       /* bytes an algorithm may use as workspace; 0: unlimited */
    const char *db_path;          /* decision database; NULL: default location order */
    /* --- find database (docs/db.md; owned by src/db/) --- */
    const char *system_db_path;   /* read-only system tier; NULL: $CONVFIND_SYSTEM_DB */
    convfind_db_env_policy db_env_policy; /* records from another environment */
    /* --- Find and the decision cache (docs/find.md; owned by src/find/, src/cache/) --- */
    size_t cache_bytes;           /* decision cache budget in bytes; 0: 8 MiB */
    double find_time_budget_s;    /* Find time per problem in seconds; 0: 1 s.  The
                                     heuristic choice is always measured, even past it */
    int find_validate;            /* 1 (default): check every candidate against the
                                     reference during Find; 0: trust them */
    /* --- device (docs/cuda.md; owned by src/cuda/) --- */
    convfind_device device;       /* CONVFIND_DEVICE_CPU (default) or CONVFIND_DEVICE_CUDA */
    int device_index;             /* CUDA device ordinal (default 0) */
    convfind_device_allocator device_allocator; /* CUDA workspace; alloc NULL: the context's */
} convfind_context_options;

/* Fills in the defaults: all cores, HYBRID, unlimited workspace, default database. */
CONVFIND_API void convfind_context_options_init(convfind_context_options *options);

typedef struct convfind_context convfind_context;

/* Creates a context.  `options` may be NULL for the defaults; strings in it are copied.
 * Thread-safe.  A context may be shared by any number of threads. */
CONVFIND_API convfind_status convfind_context_create(const convfind_context_options *options,
                                                     convfind_context **out);

/* Releases a context.  Every plan made from it must have been destroyed first. */
CONVFIND_API void convfind_context_destroy(convfind_context *context);

/* ------------------------------------------------------------------------- */
/* Plans and execution                                                        */
/* ------------------------------------------------------------------------- */

typedef struct convfind_plan convfind_plan;

/* Binds `problem` to `context` and to an algorithm chosen by the context's find policy.
 * Never requires a prior find.  The plan copies what it needs from the problem.
 * Thread-safe: any number of threads may create plans on one context at once. */
CONVFIND_API convfind_status convfind_plan_create(convfind_context *context,
                                                  const convfind_problem *problem,
                                                  convfind_plan **out);

/* Like convfind_plan_create, but forces the algorithm named `algo` (see
 * convfind_algorithm_name).  CONVFIND_ERR_NOT_FOUND if no backend has such an
 * algorithm, CONVFIND_ERR_UNSUPPORTED if it exists but cannot run this problem or runs
 * on another backend than the context's. */
CONVFIND_API convfind_status convfind_plan_create_with_algorithm(convfind_context *context,
                                                                 const convfind_problem *problem,
                                                                 const char *algo,
                                                                 convfind_plan **out);

/* Releases a plan.  Must not race with an execution of the same plan. */
CONVFIND_API void convfind_plan_destroy(convfind_plan *plan);

/* The stable name of the algorithm the plan will try first.  Valid while the plan lives. */
CONVFIND_API const char *convfind_plan_algorithm(const convfind_plan *plan);

typedef struct convfind_packed_weights convfind_packed_weights;

/* Rearranges the weights `w` once into the layout the plan's algorithm reads, so that
 * repeated executions with the same weights skip that work.  The object copies what it
 * needs from `w`; it belongs to the caller and may be used by any number of threads at
 * once with the plan it was made from (or another plan of the same problem and
 * algorithm).  Thread-safe. */
CONVFIND_API convfind_status convfind_packed_weights_create(const convfind_plan *plan,
                                                            const void *w,
                                                            convfind_packed_weights **out);
CONVFIND_API void convfind_packed_weights_destroy(convfind_packed_weights *packed);

/* Buffers of one execution.  x, w and y are required; b is required iff the problem has a
 * bias, z iff it has a residual.  Buffers must not overlap y.  packed_w is optional: when
 * it was made for this plan's algorithm it replaces the packing work; w is still
 * required, because a fallback algorithm (see convfind_execute) reads the raw weights. */
typedef struct convfind_tensors {
    const void *x;
    const void *w;
    const void *b;
    const void *z;
    void *y;
    const convfind_packed_weights *packed_w;
} convfind_tensors;

/* Computes Y.  Any number of threads may execute the same plan at once on different
 * output buffers.  On failure Y's contents are unspecified and must not be used (the
 * status says so); convfind never returns CONVFIND_OK with a partially written Y. */
CONVFIND_API convfind_status convfind_execute(const convfind_plan *plan,
                                              const convfind_tensors *tensors);

/* Like convfind_execute, on a CUDA context's `stream` (a cudaStream_t; NULL: the
 * default stream, which is what convfind_execute uses).  The call returns once the work
 * is queued: Y is ready when the stream reaches that point, and the caller must keep
 * every buffer alive and unmodified until then.  Any number of host threads may execute
 * one plan at once, each on its own stream.  On a CPU context `stream` must be NULL
 * (CONVFIND_ERR_INVALID_ATTRIBUTE otherwise) and the call equals convfind_execute.
 *
 * CUDA graphs: the call may be captured (cudaStreamBeginCapture on `stream`, any capture
 * mode); the graph then replays the whole execution, its workspace included (a
 * stream-ordered allocation the graph owns, or the context's device_allocator, which
 * must then be capture-safe).  Nothing inside synchronizes, allocates outside the
 * stream or runs Find.  What that needs is made by the first execution of the plan on
 * the capturing thread outside a capture (its cuDNN handle, its finalized plan, and a
 * trial capture that tells whether the configuration's engine can be captured at all):
 * inside a capture without it, or for a configuration whose engine cannot be captured,
 * the call takes another candidate of the plan's decision that is ready and capturable
 * on this thread, or fails with CONVFIND_ERR_UNSUPPORTED and a message saying so (the
 * slow always-valid kernel is not captured in its place); either way the capture stays
 * intact.  Packed weights, plans and Find belong outside captures; so does a DEFERRED
 * context's background tuner while a global-mode capture runs. */
CONVFIND_API convfind_status convfind_execute_on_stream(const convfind_plan *plan,
                                                        const convfind_tensors *tensors,
                                                        void *stream);

/* 1 when the CUDA backend module loads and device `index` can be used now, else 0 with
 * the reason in `why` (NUL-terminated when size > 0; may be NULL): the message a CUDA
 * context on that device would fail with.  Loads the module on first use.  Thread-safe. */
CONVFIND_API int convfind_cuda_available(int index, char *why, size_t size);

/* ------------------------------------------------------------------------- */
/* Algorithms                                                                 */
/* ------------------------------------------------------------------------- */

/* Number of algorithms on every backend this process can use: the CPU's and, where the
 * CUDA backend module loads (it is loaded by this call), the CUDA backend's.
 * Thread-safe. */
CONVFIND_API int convfind_algorithm_count(void);

/* Stable name of algorithm `index` (0 <= index < count), or NULL if out of range. */
CONVFIND_API const char *convfind_algorithm_name(int index);

/* ------------------------------------------------------------------------- */
/* Find, decisions and statistics (docs/find.md, docs/key.md)                 */
/* ------------------------------------------------------------------------- */

/* A plan's algorithm comes from a decision cached per context under the problem's key
 * (docs/key.md).  On a cache miss the context's find policy obtains it; concurrent
 * misses on one key run Find once while the other callers wait.  Execution never needs
 * convfind_find(): it exists for callers that want the ranked measurements. */

typedef enum convfind_candidate_status {
    CONVFIND_CANDIDATE_OK = 0,             /* measured (and validated, if asked) */
    CONVFIND_CANDIDATE_FAILED = 1,         /* errored or wrong: never chosen */
    CONVFIND_CANDIDATE_NOT_APPLICABLE = 2, /* cannot run it, or over the workspace budget */
    CONVFIND_CANDIDATE_ABANDONED = 3       /* stopped early (clearly slower, time budget,
                                              workspace unavailable); no verdict */
} convfind_candidate_status;

typedef struct convfind_find_result {
    const char *algorithm;            /* stable name, valid for the process's life; for a
                                         parameterised form (CUDA) the full
                                         "cuda.cudnn:<layout>:e<id>..." name */
    convfind_candidate_status status;
    double median_ms, min_ms;         /* over the timed runs; 0 when none */
    double spread;                    /* (p90 - p10) / median of the timed runs */
    int repeats;                      /* timed runs */
    size_t workspace_bytes;
    int validated;                    /* 1: output matched the reference within bound */
} convfind_find_result;

/* Measures every candidate algorithm for `problem` on `context` now (whatever the find
 * policy, unless the context already holds a measured decision for its key, which is
 * returned as it is) and makes the result the context's decision for that key.  Writes
 * the ranked list, best first (results[0] is the decision), into
 * results[0 .. min(capacity, total)) and the total into *count; `results` may be NULL
 * when capacity is 0.  Thread-safe; concurrent calls for one key measure once.  Errors:
 * NULL_POINTER, INVALID_ATTRIBUTE (capacity < 0), UNSUPPORTED (nothing runs it). */
CONVFIND_API convfind_status convfind_find(convfind_context *context,
                                           const convfind_problem *problem,
                                           convfind_find_result *results, int capacity,
                                           int *count);

/* The canonical decision key of `problem` on `context` into buf (NUL-terminated when
 * size > 0).  Returns the length of the full text like snprintf, or 0 when an argument
 * is NULL.  Thread-safe. */
CONVFIND_API size_t convfind_problem_key(const convfind_context *context,
                                         const convfind_problem *problem, char *buf,
                                         size_t size);

typedef enum convfind_decision_source {
    CONVFIND_SOURCE_HEURISTIC = 0, /* chosen without measuring */
    CONVFIND_SOURCE_MEASURED = 1,  /* Find measured it */
    CONVFIND_SOURCE_STORED = 2,    /* read from the find database */
    CONVFIND_SOURCE_FORCED = 3     /* convfind_plan_create_with_algorithm */
} convfind_decision_source;

typedef struct convfind_plan_info {
    const char *algorithm;         /* what the next execution tries first: static storage,
                                      except a parameterised variant's name ("name:params",
                                      CUDA), which is valid while the plan lives */
    const char *key;               /* canonical key text; valid while the plan lives */
    uint64_t key_hash;
    convfind_decision_source source;
    int provisional;               /* DEFERRED: a heuristic choice awaiting the tuner */
} convfind_plan_info;

/* Which decision the plan uses now.  Under DEFERRED a plan switches to the tuned
 * decision at its first execution after the background Find published it, so two calls
 * may differ.  Thread-safe. */
CONVFIND_API convfind_status convfind_plan_get_info(const convfind_plan *plan,
                                                    convfind_plan_info *info);

typedef struct convfind_context_stats {
    uint64_t hits;          /* plan creations served by a cached decision */
    uint64_t misses;        /* plan creations that had to obtain a decision */
    uint64_t waits;         /* plan creations that waited for another thread's Find */
    uint64_t finds;         /* Find runs (foreground, background and convfind_find) */
    double find_seconds;    /* wall time spent in them */
    uint64_t evictions;     /* decisions dropped to stay within cache_bytes */
    uint64_t fallbacks;     /* executions whose first algorithm failed and that fell back */
    uint64_t deferred_updates; /* decisions improved by the background tuner */
    size_t cache_entries;   /* decisions in the cache now */
    size_t cache_bytes;     /* bytes they are charged (never above cache_budget) */
    size_t cache_peak_bytes;
    size_t cache_budget;
} convfind_context_stats;

/* A snapshot of the context's counters (each read atomically, not all at one instant).
 * Thread-safe. */
CONVFIND_API convfind_status convfind_context_stats_get(const convfind_context *context,
                                                        convfind_context_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* CONVFIND_H */
