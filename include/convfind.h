/*
 * convfind.h - the public C API of convfind.
 *
 * convfind runs convolutions with ONNX `Conv` / `ConvTranspose` semantics, finds the
 * fastest correct algorithm for each distinct problem by measuring the candidates, and
 * remembers that decision.  The objects, in the order a caller meets them:
 *
 *   convfind_context   options (threads or the caller's thread pool, find policy,
 *                      workspace budget, database, log) and everything shared between
 *                      calls: the decision cache, the thread pool.
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
 *   Host tensors may have any alignment of their element type, but the CPU kernels are
 *   fastest on 64-byte aligned ones (a cache line; malloc's 16 bytes make every vector of
 *   a row span two lines: ResNet-50's 56x56 1x1 layers took 1.05-1.2x their time).
 */
#ifndef CONVFIND_H
#define CONVFIND_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/* A static one-sentence English explanation of a status ("a required pointer argument
 * was NULL"), without the details convfind_last_error() names.  Never NULL; unknown
 * values give "an unknown status".  Thread-safe. */
CONVFIND_API const char *convfind_status_message(convfind_status status);

/* The message of the last failed convfind call on the calling thread, or "" if the
 * last call succeeded.  The buffer is thread-local: it is valid until the same thread
 * makes its next convfind call and is never shared between threads. */
CONVFIND_API const char *convfind_last_error(void);

/* The library version as "MAJOR.MINOR.PATCH".  Static storage; thread-safe. */
CONVFIND_API const char *convfind_version_string(void);

/* The library version as MAJOR * 10000 + MINOR * 100 + PATCH: the value of
 * CONVFIND_VERSION_NUMBER the library was built with, which a program compares with the
 * header's macro to detect a library other than the one it was compiled against.  0.x
 * releases may change the API in a minor release (CHANGELOG.md says what breaks).
 * Thread-safe. */
CONVFIND_API int convfind_version_number(void);

/* ------------------------------------------------------------------------- */
/* Options structs that grow                                                 */
/* ------------------------------------------------------------------------- */

/* Every options struct (and every struct the library fills for the caller) starts with
 * `size_t struct_size`: the size of the struct in the header the caller was compiled
 * with.  Its _init function (inline, so that sizeof is the caller's) zeroes the struct
 * and sets it; every other field's zero is its documented default.  A struct_size of 0
 * is read as the library's own size, so `{0}` works too, but only for a program that
 * runs with the release it was compiled against; set struct_size (or call _init) to
 * keep working with later libraries.  A struct_size larger than the library's (a header
 * newer than the library) fails with CONVFIND_ERR_UNSUPPORTED naming both sizes; a
 * smaller one (a caller compiled against an older release) is accepted, and the fields
 * past it take their defaults (for a struct the library fills: are not written). */

/* What every _init function below does: zero the struct and set its struct_size. */
#define CONVFIND_STRUCT_INIT_(p)                                                          \
    do {                                                                                  \
        if (p) {                                                                          \
            memset((p), 0, sizeof *(p));                                                  \
            (p)->struct_size = sizeof *(p);                                               \
        }                                                                                 \
    } while (0)

/* ------------------------------------------------------------------------- */
/* Log messages                                                              */
/* ------------------------------------------------------------------------- */

/* What the library has to say that is not an error of the call at hand: a find database
 * quarantined or replaced by memory, an environment variable it could not use, and at
 * INFO each decision a context publishes.  Every such message goes to the context's (or
 * database handle's) log function; nothing else in the library writes to stderr or
 * stdout.  CONVFIND_LOG_DEFAULT (0) is only a setting: $CONVFIND_LOG (error, warning,
 * info, debug) if set, else WARNING.  A message is passed on when its level is at or
 * below the setting. */
typedef enum convfind_log_level {
    CONVFIND_LOG_DEFAULT = 0,
    CONVFIND_LOG_ERROR = 1,
    CONVFIND_LOG_WARNING = 2,
    CONVFIND_LOG_INFO = 3,
    CONVFIND_LOG_DEBUG = 4
} convfind_log_level;

/* Receives one message: one line of text, without a newline, that never contains a
 * credential; valid only during the call.  It may be called from any thread, also
 * concurrently, and must not call back into convfind on the object that logs (the
 * context or database handle).  With no log function a message goes to stderr as one
 * line, "convfind: warning: <message>". */
typedef void (*convfind_log_fn)(void *user, convfind_log_level level, const char *message);

/* ------------------------------------------------------------------------- */
/* A caller's thread pool                                                    */
/* ------------------------------------------------------------------------- */

/* A runtime with a thread pool of its own can give it to a context (as pthreadpool's
 * users do) instead of the context starting worker threads.  parallel_for must call
 * task(task_context, i) exactly once for every i in [0, range), in any order and possibly
 * concurrently (the calling thread may take part), and return when all are done.  It is
 * called from the threads executing plans (and running Find), possibly several at once. */
typedef void (*convfind_task_fn)(void *task_context, size_t index);
typedef void (*convfind_parallel_for_fn)(void *pool_user, convfind_task_fn task,
                                         void *task_context, size_t range);

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
 * or SAME_* asks for more output than the input produces (docs/onnx-semantics.md).
 * `pads` needs 2*CONVFIND_MAX_SPATIAL. */
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
 * in-memory operation with one warning (log messages).  A damaged, truncated or foreign file
 * this process can write is renamed to "<file>.quarantine-<time>-<pid>" with one warning;
 * a newer-schema file or one it cannot write is used read-only with one warning.  Once a
 * context exists the database never makes a call fail: a busy database is retried, and a
 * decision that could not be stored is counted (docs/db.md).
 *
 * An optional fleet tier shares decisions between machines through a PostgreSQL server
 * (fleet_db, else $CONVFIND_FLEET_DB: a libpq connection string or URI; libpq.so.5 is
 * loaded when one is given).  Lookups go user tier, fleet tier, system tier; a decision
 * found in the fleet tier is copied into the user tier; of several machines missing one
 * key at once, one measures and the others wait for it.  The server is never needed:
 * one that cannot be reached, stops answering (2 s per connection or statement) or
 * refuses us is one warning, the context goes on with its local tiers, and what it
 * measured meanwhile is pushed when the server answers again.  The connection string is
 * never printed (docs/db.md, "The fleet tier").
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
 * $CONVFIND_CUDA_MODULE (a path, as the environment of the first call that needs the
 * module named it: a context's at its creation; when set, the only place tried), then
 * next to the library (libconvfind.so's directory, or the program's when linked
 * statically), then in the install libdir, then on the dynamic loader's search path;
 * once per process.
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

/* Which decisions a context measures.  CONVFIND_FIND_DEFAULT (0) is only a setting:
 * $CONVFIND_FIND_POLICY (heuristic, exhaustive, hybrid, replay or deferred), read when
 * the context is created, if set, else HYBRID.  Precedence: an explicit find_policy,
 * then the variable, then HYBRID; a value the variable cannot mean is a warning (log)
 * and HYBRID.  "Stored" below: a decision in the find database for this environment; one
 * of low confidence (a short budget, a runner-up within the noise) measured with a
 * smaller find_time_budget_s than the context's is measured again (docs/find.md).
 * convfind_plan_options.retune measures whatever is stored, under every policy. */
typedef enum convfind_find_policy {
    CONVFIND_FIND_DEFAULT = 0,
    CONVFIND_FIND_HEURISTIC = 1,  /* never benchmark: take the heuristic choice */
    CONVFIND_FIND_EXHAUSTIVE = 2, /* use a stored decision, else benchmark every applicable
                                     candidate */
    CONVFIND_FIND_HYBRID = 3,     /* use a stored decision, else re-time the top candidates
                                     of one measured elsewhere (another environment, thread
                                     count or CPU model), else benchmark */
    CONVFIND_FIND_REPLAY = 4,     /* stored decisions only; heuristic where none */
    CONVFIND_FIND_DEFERRED = 5    /* a stored decision or the heuristic now, benchmark in
                                     the background */
} convfind_find_policy;

/* A context's options.  Zero is the default of every field (see "Options structs that
 * grow" for struct_size). */
typedef struct convfind_context_options {
    size_t struct_size;           /* sizeof(convfind_context_options); 0: this release's */
    int num_threads;              /* threads per execution; 0: all online cores (with
                                     parallel_for: required, the threads it runs) */
    convfind_find_policy find_policy; /* 0: $CONVFIND_FIND_POLICY, else HYBRID */
    size_t workspace_limit;       /* bytes an algorithm may use as workspace; 0: unlimited */
    const char *db_path;          /* decision database; NULL: default location order */
    /* --- find database (docs/db.md; owned by src/db/) --- */
    const char *system_db_path;   /* read-only system tier; NULL: $CONVFIND_SYSTEM_DB */
    convfind_db_env_policy db_env_policy; /* records from another environment */
    /* --- Find and the decision cache (docs/find.md; owned by src/find/, src/cache/) --- */
    size_t cache_bytes;           /* decision cache budget in bytes; 0: 8 MiB */
    double find_time_budget_s;    /* Find time per problem in seconds; 0: 1 s.  The
                                     heuristic choice is always measured, even past it */
    int find_skip_validation;     /* 0: check every candidate against the reference during
                                     Find; 1: trust them */
    /* --- device (docs/cuda.md; owned by src/cuda/) --- */
    convfind_device device;       /* CONVFIND_DEVICE_CPU (default) or CONVFIND_DEVICE_CUDA */
    int device_index;             /* CUDA device ordinal (default 0) */
    convfind_device_allocator device_allocator; /* CUDA workspace; alloc NULL: the context's */
    /* --- log messages (see convfind_log_fn) --- */
    convfind_log_fn log_fn;       /* NULL: stderr */
    void *log_user;               /* passed to log_fn */
    convfind_log_level log_level; /* 0: $CONVFIND_LOG, else WARNING */
    /* --- a caller's thread pool (see convfind_parallel_for_fn) --- */
    convfind_parallel_for_fn parallel_for; /* NULL: the context's own worker threads */
    void *parallel_for_user;      /* passed to parallel_for */
    /* --- fleet tier (docs/db.md; owned by src/db/) --- */
    const char *fleet_db;         /* PostgreSQL connection string; NULL: $CONVFIND_FLEET_DB;
                                     "": none */
} convfind_context_options;

/* Sets struct_size and every other field to zero, which is each field's default: all
 * cores, the default find policy (HYBRID unless $CONVFIND_FIND_POLICY says otherwise),
 * unlimited workspace, the default database location, validation on, log messages to
 * stderr, the context's own threads.  Nothing happens for NULL. */
static inline void convfind_context_options_init(convfind_context_options *options)
{
    CONVFIND_STRUCT_INIT_(options);
}

typedef struct convfind_context convfind_context;

/* Creates a context.  `options` may be NULL for the defaults; strings in it are copied,
 * the log and thread pool callbacks (and their user pointers) are kept and must stay
 * valid until the context is destroyed.  With parallel_for set, the context starts no
 * worker threads (the DEFERRED policy's one background tuner aside): every parallel loop
 * of an execution (and of Find) is given to it, and num_threads must be > 0
 * (CONVFIND_ERR_INVALID_ATTRIBUTE otherwise); it is part of the decision key as the
 * thread count.  Every environment variable a context depends on ($CONVFIND_FIND_POLICY,
 * $CONVFIND_LOG, $CONVFIND_FIND_TRACE, the database's, the backends'; docs/environment.md
 * lists them) is read here, once: changing one later does not change this context; a
 * value a variable cannot mean is a warning in the context's log.  Errors: NULL_POINTER,
 * INVALID_ENUM and INVALID_ATTRIBUTE naming the option, UNSUPPORTED for a struct_size
 * from a newer header, UNAVAILABLE (CUDA), OUT_OF_MEMORY.  Thread-safe.  A context may be
 * shared by any number of threads. */
CONVFIND_API convfind_status convfind_context_create(const convfind_context_options *options,
                                                     convfind_context **out);

/* Releases a context.  Every plan made from it must have been destroyed first. */
CONVFIND_API void convfind_context_destroy(convfind_context *context);

/* ------------------------------------------------------------------------- */
/* Plans and execution                                                        */
/* ------------------------------------------------------------------------- */

typedef struct convfind_plan convfind_plan;

/* How a plan is given its weights W.  Part of the decision key: with constant weights an
 * algorithm rearranges W once, with per-call weights every execution does, which can
 * change which algorithm is fastest (Winograd's filter transform, for one), so a decision
 * is measured, cached and stored for one usage and never applied to the other. */
typedef enum convfind_weights {
    CONVFIND_WEIGHTS_PER_CALL = 0, /* W at every execution (convfind_tensors.w) */
    CONVFIND_WEIGHTS_CONSTANT = 1  /* W once, at plan creation (convfind_plan_options.weights) */
} convfind_weights;

/* How a plan is made.  Zero is the default of every field. */
typedef struct convfind_plan_options {
    size_t struct_size;    /* sizeof(convfind_plan_options); 0: this release's */
    /* NULL: the context's find policy chooses the algorithm.  Else the algorithm of that
     * name (see convfind_algorithm_name) is forced: CONVFIND_ERR_NOT_FOUND if no backend
     * has it, CONVFIND_ERR_UNSUPPORTED if it exists but cannot run this problem (within
     * the workspace limit) or runs on another backend than the context's. */
    const char *algorithm;
    /* NULL: the weights W are passed to every execution (convfind_tensors.w).  Else the
     * constant weights of the plan, of the problem's W size, in the memory the context's
     * tensors live in (host, or device for a CUDA context): copied now, and rearranged
     * once into the layout the plan's algorithm reads, so that no execution pays for
     * that.  Executions then pass convfind_tensors.w = NULL.  How the weights are given
     * is part of the decision key: Find times each candidate with its weights prepared
     * once here, and with per-call weights each timed run includes the algorithm's own
     * rearranging of W, so a decision is never used for a usage it was not measured
     * for. */
    const void *weights;
    /* 1: measure now, even when a decision for the key is cached or stored, and replace
     * it in the context's cache and in the find database.  0: the find policy decides.
     * Not with `algorithm`. */
    int retune;
} convfind_plan_options;

/* Sets struct_size and every other field to zero (the defaults).  Nothing for NULL. */
static inline void convfind_plan_options_init(convfind_plan_options *options)
{
    CONVFIND_STRUCT_INIT_(options);
}

/* Binds `problem` to `context` and to an algorithm: the forced one, or the one the
 * context's find policy decides for the plan's key (which a cache hit answers at once,
 * and a miss may measure, up to the Find budget).  Never requires a prior find.  The plan
 * copies what it needs from the problem and the options (the weights included); the
 * caller may free them when the call returns.  `options` may be NULL (per-call weights,
 * the find policy).  Errors: NULL_POINTER, INVALID_ATTRIBUTE (retune not 0 or 1, retune
 * with an algorithm), UNSUPPORTED (a struct_size from a newer header; nothing can run the
 * problem; a forced algorithm that cannot), NOT_FOUND (no such algorithm), BACKEND (the
 * forced algorithm failed to prepare, or the weights could not be rearranged),
 * OUT_OF_MEMORY.  Thread-safe: any number of threads may create plans on one context at
 * once. */
CONVFIND_API convfind_status convfind_plan_create_ex(convfind_context *context,
                                                     const convfind_problem *problem,
                                                     const convfind_plan_options *options,
                                                     convfind_plan **out);

/* convfind_plan_create_ex with NULL options: per-call weights, the find policy. */
CONVFIND_API convfind_status convfind_plan_create(convfind_context *context,
                                                  const convfind_problem *problem,
                                                  convfind_plan **out);

/* convfind_plan_create_ex with options.algorithm = `algo` (NULL: NULL_POINTER) and
 * per-call weights. */
CONVFIND_API convfind_status convfind_plan_create_with_algorithm(convfind_context *context,
                                                                 const convfind_problem *problem,
                                                                 const char *algo,
                                                                 convfind_plan **out);

/* Releases a plan (and its copy of the weights).  Must not race with an execution of the
 * same plan.  NULL allowed. */
CONVFIND_API void convfind_plan_destroy(convfind_plan *plan);

/* The stable name of the algorithm the plan will try first.  Valid while the plan lives. */
CONVFIND_API const char *convfind_plan_algorithm(const convfind_plan *plan);

/* The workspace bytes the plan's algorithm needs, for convfind_execute_ex with a
 * workspace of the caller's (0: it needs none).  Under DEFERRED the algorithm, and so
 * this size, may change once the background tuner has published its decision.  A CPU
 * context's plans only: a CUDA context's algorithms take their device workspace from
 * convfind_context_options.device_allocator (CONVFIND_ERR_UNSUPPORTED).  Errors:
 * NULL_POINTER.  Thread-safe. */
CONVFIND_API convfind_status convfind_plan_workspace_size(const convfind_plan *plan,
                                                          size_t *bytes);

/* Buffers of one execution.  x and y are required; w is required unless the plan has
 * constant weights, and must then be NULL (CONVFIND_ERR_INVALID_ATTRIBUTE); b is required
 * iff the problem has a bias, z iff it has a residual.  Buffers must not overlap y, with
 * one exception: on a CPU context z may be y itself (the same pointer), and the residual
 * is then added in place, with the result of separate buffers (a CUDA context answers
 * CONVFIND_ERR_UNSUPPORTED).  Such a call does not fall back past an algorithm that
 * failed once it had started, since Z may then be partly overwritten. */
typedef struct convfind_tensors {
    const void *x;
    const void *w;
    const void *b;
    const void *z;
    void *y;
} convfind_tensors;

/* How one execution runs.  Zero is the default of every field. */
typedef struct convfind_execute_options {
    size_t struct_size;    /* sizeof(convfind_execute_options); 0: this release's */
    void *stream;          /* a CUDA context's cudaStream_t; NULL: the default stream.  Must
                              be NULL on a CPU context (CONVFIND_ERR_INVALID_ATTRIBUTE) */
    /* NULL: the calling thread's own scratch buffer, kept by the library between calls.
     * Else host memory of the caller, 64-byte aligned, `workspace_size` bytes, used by
     * this call only (CPU contexts; CONVFIND_ERR_UNSUPPORTED on a CUDA context).  When it
     * is smaller than the plan's algorithm needs (convfind_plan_workspace_size), that
     * algorithm is skipped as if it had failed: the decision's other candidates that fit
     * run instead, and finally the reference, which needs none. */
    void *workspace;
    size_t workspace_size; /* must be 0 when workspace is NULL */
} convfind_execute_options;

/* Sets struct_size and every other field to zero (the defaults).  Nothing for NULL. */
static inline void convfind_execute_options_init(convfind_execute_options *options)
{
    CONVFIND_STRUCT_INIT_(options);
}

/* Computes Y.  `options` may be NULL (default stream, the library's scratch).  Any number
 * of threads may execute the same plan at once on different output buffers (each with
 * its own workspace, when they give one).  The plan's algorithm is tried first; when it
 * cannot run (its workspace, a failure) the call falls back down the decision's ranked
 * candidates to the reference, which runs every problem, and counts a fallback.  On a
 * CUDA context the call returns once the work is queued on the stream: Y is ready when
 * the stream reaches that point, and the caller keeps every buffer alive and unmodified
 * until then.  On failure Y's contents are unspecified and must not be used (the status
 * says so); convfind never returns CONVFIND_OK with a partially written Y.  Errors:
 * NULL_POINTER (a required tensor), INVALID_ATTRIBUTE (w given with constant weights, a
 * stream on a CPU context, a misaligned workspace or a size without one), UNSUPPORTED (a
 * struct_size from a newer header, a workspace on a CUDA context), BACKEND (even the
 * reference failed: a device error).
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
 * intact.  Plan creation (constant weights included) and Find belong outside captures;
 * so does a DEFERRED context's background tuner while a global-mode capture runs. */
CONVFIND_API convfind_status convfind_execute_ex(const convfind_plan *plan,
                                                 const convfind_tensors *tensors,
                                                 const convfind_execute_options *options);

/* convfind_execute_ex with NULL options. */
CONVFIND_API convfind_status convfind_execute(const convfind_plan *plan,
                                              const convfind_tensors *tensors);

/* convfind_execute_ex with options.stream = `stream`. */
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

/* Measures every candidate algorithm for `problem` on `context` now, the way plans that
 * take their weights as `weights` says run them (whatever the find policy, unless the
 * context already holds a measured decision for that key, which is returned as it is),
 * and makes the result the context's decision for the key.  Writes the ranked list, best
 * first (results[0] is the decision), into results[0 .. min(capacity, total)) and the
 * total into *count; `results` may be NULL when capacity is 0.  Thread-safe; concurrent
 * calls for one key measure once.  Errors: NULL_POINTER, INVALID_ENUM (weights),
 * INVALID_ATTRIBUTE (capacity < 0), UNSUPPORTED (nothing runs it). */
CONVFIND_API convfind_status convfind_find(convfind_context *context,
                                           const convfind_problem *problem,
                                           convfind_weights weights,
                                           convfind_find_result *results, int capacity,
                                           int *count);

/* The canonical decision key of `problem` on `context` for plans that take their weights
 * as `weights` says, into buf (NUL-terminated when size > 0).  Returns the length of the
 * full text like snprintf, or 0 when an argument is NULL or invalid.  Thread-safe. */
CONVFIND_API size_t convfind_problem_key(const convfind_context *context,
                                         const convfind_problem *problem,
                                         convfind_weights weights, char *buf, size_t size);

typedef enum convfind_decision_source {
    CONVFIND_SOURCE_HEURISTIC = 0, /* chosen without measuring */
    CONVFIND_SOURCE_MEASURED = 1,  /* Find measured it */
    CONVFIND_SOURCE_STORED = 2,    /* read from the find database */
    CONVFIND_SOURCE_FORCED = 3     /* convfind_plan_options.algorithm */
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
    size_t struct_size;     /* set by the caller: sizeof(convfind_context_stats) (0: the
                               library's) */
    uint64_t hits;          /* plan creations served by a cached decision */
    uint64_t misses;        /* plan creations that had to obtain a decision */
    uint64_t waits;         /* plan creations that waited for another thread's Find */
    uint64_t finds;         /* Find runs (foreground, background, retune, convfind_find) */
    double find_seconds;    /* wall time spent in them */
    uint64_t evictions;     /* decisions dropped to stay within cache_bytes */
    uint64_t fallbacks;     /* executions whose first algorithm could not run and that fell
                               back */
    uint64_t deferred_updates; /* decisions improved by the background tuner */
    size_t cache_entries;   /* decisions in the cache now */
    size_t cache_bytes;     /* bytes they are charged (never above cache_budget) */
    size_t cache_peak_bytes;
    size_t cache_budget;
    uint64_t stored;        /* decisions the find database accepted */
    uint64_t store_failures; /* decisions measured that the find database could not keep */
    uint64_t seeded;        /* misses answered by re-timing the top candidates of a record
                               from another environment (db_env_policy RETUNE) or of the
                               same problem on a similar machine (another thread count or
                               CPU model, HYBRID) instead of a full Find */
    uint64_t retimed_low_confidence; /* stored decisions of low confidence (see
                               convfind_confidence_flag) measured again: by a Find with a
                               larger budget, or handed to the DEFERRED tuner */
    /* the fleet tier (docs/db.md; all 0 without one) */
    uint64_t fleet_hits;    /* decisions found there (and copied into the user tier) */
    uint64_t fleet_pushed;  /* decisions sent there (measured here, now or while it was away) */
    uint64_t fleet_faults;  /* connections that failed or were lost; the first one is a warning */
    int fleet_connected;    /* 1 while connected */
    /* code compiled at run time (cuDNN's runtime-compiled engines; docs/db.md) */
    uint64_t compiled_stored; /* compiled forms of Find's choices kept in the find database */
    uint64_t compiled_loaded; /* plans that loaded their compiled form from it instead of
                                 compiling it (a later process, or another thread) */
} convfind_context_stats;

/* A snapshot of the context's counters (each read atomically, not all at one instant)
 * into the first stats->struct_size bytes of `stats` (0: all of this release's).
 * Errors: NULL_POINTER, UNSUPPORTED (a struct_size from a newer header).  Thread-safe. */
CONVFIND_API convfind_status convfind_context_stats_get(const convfind_context *context,
                                                        convfind_context_stats *stats);

/* ------------------------------------------------------------------------- */
/* The find database as an object (docs/db.md)                               */
/* ------------------------------------------------------------------------- */

/* A handle on a find database: a context's own (convfind_context_db), or one opened
 * alone (convfind_db_open) to inspect or maintain a database file, as `convfind db` does.
 * Any number of threads may use one handle at once; each call holds the handle's lock
 * for its SQLite work.  Records this build cannot use (an algorithm it does not have,
 * one that cannot run the key's problem, every candidate failed) are treated as
 * unreadable: lookups miss them (the decision is measured again under the policy),
 * import refuses them naming the line, listings skip them and verification reports them. */
typedef struct convfind_db convfind_db;

typedef enum convfind_db_mode {
    /* Maintenance: import, prune and vacuum write the file, so it must be writable; a
     * problem that would mean read-only use or memory fails convfind_db_open instead. */
    CONVFIND_DB_READ_WRITE = 0,
    /* Inspection: opens nothing for writing, creates no directory, file or sidecar,
     * quarantines nothing; a missing file reads as empty.  Import, prune and vacuum fail
     * with CONVFIND_ERR_UNSUPPORTED. */
    CONVFIND_DB_READ_ONLY = 1
} convfind_db_mode;

/* Zero is the default of every field. */
typedef struct convfind_db_options {
    size_t struct_size;        /* sizeof(convfind_db_options); 0: this release's */
    const char *path;          /* the user tier; NULL: the location order a context uses */
    const char *system_path;   /* NULL: $CONVFIND_SYSTEM_DB, else none; "": none */
    convfind_db_mode mode;
    convfind_log_fn log_fn;    /* as in convfind_context_options */
    void *log_user;
    convfind_log_level log_level;
    /* NULL: the SQLite tiers above.  Else the fleet tier (a libpq connection string or
     * postgresql:// URI; $CONVFIND_FLEET_DB is not read here): the handle is that tier
     * alone, path and system_path must be NULL, and get_info, foreach, export, import
     * and prune act on the server, which must answer when the handle is opened (IO
     * otherwise).  Pruning it removes expired leases and records this build cannot
     * read, never other environments' records: they are other machines' decisions.
     * verify and vacuum are for SQLite files (UNSUPPORTED). */
    const char *fleet_db;
} convfind_db_options;

/* Sets struct_size and every other field to zero (the defaults).  Nothing for NULL. */
static inline void convfind_db_options_init(convfind_db_options *options)
{
    CONVFIND_STRUCT_INIT_(options);
}

/* Opens a database: the user tier at `path` or where a context would find it
 * ($CONVFIND_DB_PATH, $XDG_CACHE_HOME/convfind, ~/.cache/convfind; read now, once), and
 * the system tier.  `options` may be NULL (READ_WRITE, default locations).  The handle
 * belongs to the caller (convfind_db_close).  Errors: NULL_POINTER, INVALID_ENUM,
 * INVALID_ATTRIBUTE (fleet_db with path or system_path), UNSUPPORTED (a struct_size from
 * a newer header), IO naming the file when it cannot be used as the mode needs
 * (READ_ONLY: damaged, not a regular file, unreadable; READ_WRITE: also read-only, or no
 * location at all), or naming the fleet tier (never its password) when it does not
 * answer, or has a newer schema and READ_WRITE was asked for, OUT_OF_MEMORY.
 * Thread-safe. */
CONVFIND_API convfind_status convfind_db_open(const convfind_db_options *options,
                                              convfind_db **out);

/* Writes what is still pending, releases this process's leases and closes the handle.
 * NULL allowed; a context's handle (convfind_context_db) is not closed this way. */
CONVFIND_API void convfind_db_close(convfind_db *db);

/* The context's own database handle, borrowed: valid while the context lives, never
 * closed by the caller.  NULL for a NULL context.  Thread-safe. */
CONVFIND_API convfind_db *convfind_context_db(convfind_context *context);

typedef struct convfind_db_info {
    size_t struct_size;        /* set by the caller: sizeof(convfind_db_info) (0: the
                                  library's) */
    const char *path;          /* the user tier's file, or ":memory:"; valid while the
                                  handle is open */
    int exists;                /* the file exists (READ_ONLY may look at a missing one) */
    int persistent;            /* the user tier is a file (read-only or not) */
    int read_only;             /* decisions are not written to the file */
    const char *system_path;   /* the system tier's file while open, else NULL */
    const char *environment;   /* this process's environment, "library|backends|device":
                                  what "current" means below; valid while open */
    size_t records;            /* user tier, all environments */
    size_t current;            /* user tier, this environment */
    size_t foreign;            /* user tier, other environments */
    size_t unreadable;         /* user tier, records this build cannot read or use */
    size_t leases;             /* leases held now (live or not) */
    size_t system_records;     /* system tier, all environments */
    int64_t file_bytes;        /* size of the user file; -1 in memory or when missing */
    uint64_t stored;           /* decisions this handle has written */
    uint64_t store_failures;   /* decisions this handle could not keep in its file */
    size_t pending;            /* decisions waiting for a busy database */
    int warnings;              /* warnings this handle has logged */
    size_t artifacts;          /* user tier: compiled forms of algorithms (a serialized
                                  execution plan, say), all environments */
    int64_t artifact_bytes;    /* their bytes */
} convfind_db_info;

/* Counts the records now into the first info->struct_size bytes of `info`.  Errors:
 * NULL_POINTER, UNSUPPORTED (struct_size), IO (the file cannot be read).  Thread-safe. */
CONVFIND_API convfind_status convfind_db_get_info(convfind_db *db, convfind_db_info *info);

/* Writes the decisions still waiting for a busy database now, waiting up to the busy
 * timeout; those that still cannot be written count as store failures.  Errors:
 * NULL_POINTER.  Thread-safe. */
CONVFIND_API convfind_status convfind_db_flush(convfind_db *db);

/* Why a stored decision is of low confidence (convfind_db_record.low_confidence, bits;
 * 0: confident).  A low-confidence decision is measured again when time allows: by HYBRID
 * and EXHAUSTIVE when their Find budget is larger than the one it had, by the DEFERRED
 * tuner in the background (docs/find.md, "Confidence"). */
typedef enum convfind_confidence_flag {
    CONVFIND_CONFIDENCE_UNKNOWN_BUDGET = 1, /* its Find budget is not known (an old record) */
    CONVFIND_CONFIDENCE_UNTIMED = 2,        /* a candidate that could run was never timed */
    CONVFIND_CONFIDENCE_NOISE = 4,          /* the runner-up is within the noise: the margin
                                               is below the larger of the two spreads */
    CONVFIND_CONFIDENCE_ONCE = 8            /* the decision or its runner-up was timed once
                                               (a budget too short for more): no spread */
} convfind_confidence_flag;

/* One stored record, as a callback of convfind_db_foreach sees it: every pointer is valid
 * only during that call. */
typedef struct convfind_db_record {
    const char *key;           /* canonical key text (docs/key.md) */
    const char *algorithm;     /* the decision */
    const char *library;       /* the environment it was measured in: convfind version, */
    const char *backends;      /* backends and their versions, */
    const char *device;        /* and the device fingerprint */
    int current_environment;   /* 1: that is this process's environment */
    const char *host;          /* where it was measured */
    const char *tier;          /* "user", "system", or "fleet" (a fleet_db handle) */
    int64_t time;              /* when it was measured, Unix seconds */
    int n_candidates;
    const convfind_find_result *candidates; /* ranked, as convfind_find gives them */
    /* How it was measured: */
    double budget_s;           /* the Find budget, seconds; 0: unknown (an old record) */
    double margin;             /* how far the runner-up's median is behind the decision's,
                                  relative ((runner-up - best) / best; negative when a
                                  faster candidate lost to the incumbent within the noise);
                                  0 without a runner-up */
    const char *runner_up;     /* the fastest other timed candidate; NULL without one */
    int untimed;               /* candidates that could run and were never timed */
    unsigned low_confidence;   /* convfind_confidence_flag bits; 0: confident */
} convfind_db_record;

/* Returns 0 to go on, anything else to stop the walk. */
typedef int (*convfind_db_record_fn)(void *user, const convfind_db_record *record);

/* Calls `fn` for every usable record of the user tier, then of the system tier, in key
 * order (with `key` not NULL: that key's only).  Must not call back into `db`.  Errors:
 * NULL_POINTER, IO.  Thread-safe. */
CONVFIND_API convfind_status convfind_db_foreach(convfind_db *db, const char *key,
                                                 convfind_db_record_fn fn, void *user);

/* Export and import go through the caller's functions, so the records can go to a file,
 * a socket or memory (as TensorRT's timing cache is serialized in code):
 *   write(user, data, size): 0 when all `size` bytes were taken, else the export stops;
 *   read(user, buf, size): bytes read into buf (at most size), 0 at the end, < 0 error.
 * The format is JSON Lines, one record per line with its environment and provenance
 * (docs/db.md), the same as `convfind db export` writes. */
typedef int (*convfind_write_fn)(void *user, const void *data, size_t size);
typedef long (*convfind_read_fn)(void *user, void *buf, size_t size);

/* Writes every user-tier record; *count (may be NULL) gets how many.  Errors:
 * NULL_POINTER, IO (a write refused, the file unreadable).  Thread-safe. */
CONVFIND_API convfind_status convfind_db_export(convfind_db *db, convfind_write_fn write,
                                                void *user, size_t *count);

/* Reads records until `read` reports the end and stores them in one transaction, each
 * keeping its own environment and provenance: all or nothing.  A line that does not
 * parse, is longer than 1 MiB, or is a record this build cannot use fails the import
 * with a message naming `name` (NULL: "import") and the line number.  *count (may be
 * NULL) gets how many were stored.  Errors: NULL_POINTER, UNSUPPORTED (READ_ONLY), IO,
 * OUT_OF_MEMORY.  Thread-safe. */
CONVFIND_API convfind_status convfind_db_import(convfind_db *db, convfind_read_fn read,
                                                void *user, const char *name, size_t *count);

/* Deletes the records of other environments, those this build cannot read or use, and
 * dead or expired leases; *removed (may be NULL) gets how many records went.  Errors:
 * NULL_POINTER, UNSUPPORTED (READ_ONLY), IO.  Thread-safe. */
CONVFIND_API convfind_status convfind_db_prune(convfind_db *db, size_t *removed);

/* SQLite's integrity check and a check of every record; changes nothing.  IO naming the
 * first problem (one line) when there is one, also when the file does not exist; *bad
 * (may be NULL) gets how many records this build cannot read or use.  Thread-safe. */
CONVFIND_API convfind_status convfind_db_verify(convfind_db *db, size_t *bad);

/* Rebuilds the file to its minimal size.  Errors: NULL_POINTER, UNSUPPORTED (READ_ONLY),
 * IO.  Thread-safe. */
CONVFIND_API convfind_status convfind_db_vacuum(convfind_db *db);

#ifdef __cplusplus
}
#endif

#endif /* CONVFIND_H */
