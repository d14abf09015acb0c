/*
 * cmd_run.c - `convfind run`: computes one Conv or ConvTranspose from .npy files.
 *
 * The shapes come from the files (X, W, and for checking B and Z); the attributes from
 * the shared ONNX problem flags.  B and Z are not described to the library by shape, so
 * their shapes are checked here against the resolved problem before anything runs: a
 * mismatched Z must be an error, not an out-of-bounds read.  Y is written only after a
 * successful execution, so a failed run never leaves a plausible-looking output file.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "npy.h"

typedef struct run_options {
    const char *x, *w, *b, *z, *y;
    const char *algo;
    int threads;
} run_options;

#define RUN_FIELD(f) offsetof(run_options, f)

static const cli_flag run_flags[] = {
    {"input", 'x', "X.npy", "input X (float32; N,C,spatial... or N,spatial...,C with nhwc)",
     cli_apply_string, RUN_FIELD(x), NULL},
    {"weights", 'w', "W.npy", "weights W in ONNX layout", cli_apply_string, RUN_FIELD(w), NULL},
    {"bias", 'b', "B.npy", "optional bias B (1-D, one value per output channel)",
     cli_apply_string, RUN_FIELD(b), NULL},
    {"residual", 'z', "Z.npy", "optional residual Z added before the activation (shape of Y)",
     cli_apply_string, RUN_FIELD(z), NULL},
    {"output", 'o', "Y.npy", "where to write Y (same layout as X)", cli_apply_string,
     RUN_FIELD(y), NULL},
    {"algo", 0, "NAME", "force this algorithm (default: the context's choice)",
     cli_apply_string, RUN_FIELD(algo), NULL},
    {"threads", 0, "N", "worker threads (default 0: all online cores)", cli_apply_int,
     RUN_FIELD(threads), NULL},
};

/* Everything one run holds, released in one place whatever path it fails on. */
typedef struct run_state {
    cf_npy_array x, w, b, z;
    float *y;
    convfind_problem *problem;
    convfind_context *context;
    convfind_plan *plan;
} run_state;

static void run_state_release(run_state *s)
{
    convfind_plan_destroy(s->plan);
    convfind_context_destroy(s->context);
    convfind_problem_destroy(s->problem);
    free(s->y);
    cf_npy_free(&s->x);
    cf_npy_free(&s->w);
    cf_npy_free(&s->b);
    cf_npy_free(&s->z);
}

static int load(const cli_command *cmd, const char *role, const char *path, cf_npy_array *a)
{
    char err[CF_NPY_ERROR_SIZE];
    if (cf_npy_read_file(path, a, err, sizeof err) != CONVFIND_OK)
        return cli_failure(cmd, "%s %s: %s", role, path, err);
    return CLI_EXIT_OK;
}

static void format_dims(char *buf, size_t size, int rank, const int64_t *dims)
{
    size_t len = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < rank && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", i ? ", " : "",
                                (long long)dims[i]);
    if (len < size)
        snprintf(buf + len, size - len, ")");
}

/* The residual must be stored exactly as Y will be. */
static int check_residual(const cli_command *cmd, const char *path, const cf_npy_array *z,
                          int rank, const int64_t *y_stored)
{
    bool same = z->ndim == rank;
    for (int i = 0; same && i < rank; i++)
        same = z->dims[i] == y_stored[i];
    if (same)
        return CLI_EXIT_OK;
    char want[128], got[128];
    format_dims(want, sizeof want, rank, y_stored);
    format_dims(got, sizeof got, z->ndim, z->dims);
    return cli_failure(cmd, "residual %s: shape %s does not match the output shape %s", path,
                       got, want);
}

static int check_bias(const cli_command *cmd, const char *path, const cf_npy_array *b,
                      int64_t m)
{
    if (b->ndim == 1 && b->dims[0] == m)
        return CLI_EXIT_OK;
    char got[128];
    format_dims(got, sizeof got, b->ndim, b->dims);
    return cli_failure(cmd, "bias %s: shape %s, expected (%lld,) (one value per output channel)",
                       path, got, (long long)m);
}

static int run(const cli_command *cmd, const run_options *o, convfind_conv_desc *desc,
               run_state *s)
{
    int rc;
    if ((rc = load(cmd, "input", o->x, &s->x)) || (rc = load(cmd, "weights", o->w, &s->w)) ||
        (o->b && (rc = load(cmd, "bias", o->b, &s->b))) ||
        (o->z && (rc = load(cmd, "residual", o->z, &s->z))))
        return rc;

    /* The descriptor holds at most CONVFIND_MAX_RANK dims; below 3 there is no spatial
     * axis, and channels-last needs one to move C. */
    if (s->x.ndim < 3 || s->x.ndim > CONVFIND_MAX_RANK)
        return cli_failure(cmd, "input %s: rank %d, expected 3 to %d (N, C and 1 to 3 spatial "
                                "dims)", o->x, s->x.ndim, CONVFIND_MAX_RANK);
    if (s->w.ndim > CONVFIND_MAX_RANK)
        return cli_failure(cmd, "weights %s: rank %d, expected %d like the input", o->w,
                           s->w.ndim, s->x.ndim);
    desc->x_rank = s->x.ndim;
    cli_stored_to_logical(desc->layout, s->x.ndim, s->x.dims, desc->x_dims);
    desc->w_rank = s->w.ndim;
    memcpy(desc->w_dims, s->w.dims, (size_t)s->w.ndim * sizeof s->w.dims[0]);
    desc->has_bias = o->b != NULL;
    desc->has_residual = o->z != NULL;

    convfind_status st = convfind_problem_create(desc, &s->problem);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    int y_rank;
    int64_t y_dims[CONVFIND_MAX_RANK], y_stored[CONVFIND_MAX_RANK];
    size_t y_elems;
    if ((st = convfind_problem_output_dims(s->problem, &y_rank, y_dims)) != CONVFIND_OK ||
        (st = convfind_problem_sizes(s->problem, NULL, NULL, &y_elems, NULL)) != CONVFIND_OK)
        return cli_library_error(st);
    cli_logical_to_stored(desc->layout, y_rank, y_dims, y_stored);
    if ((o->b && (rc = check_bias(cmd, o->b, &s->b, y_dims[1]))) ||
        (o->z && (rc = check_residual(cmd, o->z, &s->z, y_rank, y_stored))))
        return rc;

    s->y = malloc(y_elems ? y_elems * sizeof(float) : 1);
    if (!s->y)
        return cli_failure(cmd, "cannot allocate %zu floats for the output", y_elems);

    convfind_context_options opts;
    convfind_context_options_init(&opts);
    opts.num_threads = o->threads;
    if ((st = convfind_context_create(&opts, &s->context)) != CONVFIND_OK)
        return cli_library_error(st);
    st = o->algo ? convfind_plan_create_with_algorithm(s->context, s->problem, o->algo, &s->plan)
                 : convfind_plan_create(s->context, s->problem, &s->plan);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    const convfind_tensors t = {.x = s->x.data, .w = s->w.data, .b = o->b ? s->b.data : NULL,
                                .z = o->z ? s->z.data : NULL, .y = s->y};
    if ((st = convfind_execute(s->plan, &t)) != CONVFIND_OK)
        return cli_library_error(st);

    char err[CF_NPY_ERROR_SIZE];
    if (cf_npy_write_file(o->y, y_rank, y_stored, s->y, err, sizeof err) != CONVFIND_OK)
        return cli_failure(cmd, "output %s: %s", o->y, err);
    return CLI_EXIT_OK;
}

static int run_main(const cli_command *self, int argc, char **argv)
{
    run_options o = {0};
    convfind_conv_desc desc;
    convfind_conv_desc_init(&desc);
    const cli_flag_group groups[] = {
        {run_flags, (int)(sizeof run_flags / sizeof run_flags[0]), &o},
        {cli_problem_flags, cli_problem_flag_count, &desc},
    };
    int parsed = cli_parse(self, argc, argv, groups, 2);
    if (parsed == CLI_HELP_SHOWN)
        return CLI_EXIT_OK;
    if (parsed != CLI_PARSED)
        return CLI_EXIT_USAGE;
    const char *missing = !o.x ? "-x X.npy" : !o.w ? "-w W.npy" : !o.y ? "-o Y.npy" : NULL;
    if (missing)
        return cli_usage_error(self, "missing required flag %s (see convfind run --help)",
                               missing);

    run_state s;
    memset(&s, 0, sizeof s);
    int rc = run(self, &o, &desc, &s);
    run_state_release(&s);
    return rc;
}

const cli_command cli_cmd_run = {
    "run",
    "compute one Conv/ConvTranspose from .npy files",
    "--op conv|conv_transpose -x X.npy -w W.npy [-b B.npy] [-z Z.npy] -o Y.npy [options]",
    run_main,
};
