/*
 * cmd_run.c - `convfind run`: computes one Conv or ConvTranspose from .npy files and
 * says which algorithm computed it.
 *
 * The shapes come from the files (X, W, and for checking B and Z); the attributes from
 * the ONNX problem flags.  B and Z are not described to the library by shape, so their
 * shapes are checked here against the resolved problem before anything runs: a
 * mismatched Z must be an error, not an out-of-bounds read.  Y is written only after a
 * successful execution, through a temporary file (outfile.h), so a failed run never
 * leaves a plausible-looking output file nor damages an existing one.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_common.h"
#include "cli_setup.h"
#include "cuda_copy.h"
#include "decide.h"
#include "json_out.h"
#include "npy.h"

/* Everything one run holds, released in one place whatever path it fails on. */
typedef struct run_state {
    cf_npy_array x, w, b, z;
    float *y;
    convfind_problem *problem;
    convfind_context *context;
    convfind_plan *plan;
    cli_cuda *cuda;
} run_state;

static void run_state_release(run_state *s)
{
    convfind_plan_destroy(s->plan);
    convfind_context_destroy(s->context);
    convfind_problem_destroy(s->problem);
    cli_cuda_close(s->cuda);
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

/* A name this build does not know is a usage error that lists the ones it does; a
 * parameterised form ("name:params") is checked by its name. */
static int check_algo(const cli_command *cmd, const char *algo)
{
    size_t base = strcspn(algo, ":");
    int n = convfind_algorithm_count();
    for (int i = 0; i < n; i++) {
        const char *name = convfind_algorithm_name(i);
        if (strlen(name) == base && strncmp(name, algo, base) == 0)
            return CLI_EXIT_OK;
    }
    char list[2048];
    size_t len = 0;
    list[0] = '\0';
    for (int i = 0; i < n && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "",
                                convfind_algorithm_name(i));
    return cli_usage_error(cmd, "unknown algorithm '%s' (this build has: %s)", algo, list);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Executes the plan on the host buffers, through device copies on a CUDA context. */
static int execute(const cli_command *cmd, const cli_args *a, run_state *s, size_t y_bytes,
                   double *ms)
{
    convfind_tensors t = {.x = s->x.data, .w = s->w.data, .b = a->bias_file ? s->b.data : NULL,
                          .z = a->residual_file ? s->z.data : NULL, .y = s->y};
    char err[300];
    if (a->device == CONVFIND_DEVICE_CUDA) {
        const cf_npy_array *in[4] = {&s->x, &s->w, &s->b, &s->z};
        const void **slot[4] = {&t.x, &t.w, &t.b, &t.z};
        void *dev = NULL;
        if (cli_cuda_open(a->device_index, &s->cuda, err, sizeof err) != 0)
            return cli_failure(cmd, "%s", err);
        for (int i = 0; i < 4; i++) {
            if (!*slot[i])
                continue;
            if (cli_cuda_upload(s->cuda, in[i]->data, in[i]->count * sizeof(float), &dev, err,
                                sizeof err) != 0)
                return cli_failure(cmd, "%s", err);
            *slot[i] = dev;
        }
        if (cli_cuda_upload(s->cuda, NULL, y_bytes, &t.y, err, sizeof err) != 0)
            return cli_failure(cmd, "%s", err);
    }
    double t0 = now_s();
    convfind_status st = convfind_execute(s->plan, &t);
    if (st == CONVFIND_OK && s->cuda &&
        cli_cuda_download(s->cuda, s->y, t.y, y_bytes, err, sizeof err) != 0)
        return cli_failure(cmd, "%s", err);
    *ms = (now_s() - t0) * 1e3;
    return st == CONVFIND_OK ? CLI_EXIT_OK : cli_library_error(st);
}

static void print_summary(const cli_args *a, const convfind_plan_info *info, bool fell_back,
                          double ms, int rank, const int64_t *y_stored)
{
    char shape[200];
    format_dims(shape, sizeof shape, rank, y_stored);
    /* With Y itself on stdout ("--output -"), the summary goes to stderr. */
    FILE *out = strcmp(a->output, "-") == 0 ? stderr : stdout;
    if (!a->json) {
        fprintf(out, "ran %s (%s%s) in %.3f ms: wrote %s %s\n", info->algorithm,
                cli_source_name(info->source),
                fell_back ? ", after the first choice failed" : "", ms, a->output, shape);
        return;
    }
    fprintf(out, "{\"algorithm\": ");
    cli_json_string(out, info->algorithm);
    fprintf(out, ", \"source\": \"%s\", \"fell_back\": %s, \"key\": ",
            cli_source_name(info->source), fell_back ? "true" : "false");
    cli_json_string(out, info->key);
    fprintf(out, ", \"execute_ms\": ");
    cli_json_number(out, ms);
    fprintf(out, ", \"output\": ");
    cli_json_string(out, a->output);
    fprintf(out, ", \"shape\": [");
    for (int i = 0; i < rank; i++)
        fprintf(out, "%s%lld", i ? ", " : "", (long long)y_stored[i]);
    fprintf(out, "]}\n");
}

static int run(const cli_command *cmd, const cli_args *a, run_state *s)
{
    int rc;
    if ((rc = load(cmd, "input", a->input, &s->x)) ||
        (rc = load(cmd, "weights", a->weights, &s->w)) ||
        (a->bias_file && (rc = load(cmd, "bias", a->bias_file, &s->b))) ||
        (a->residual_file && (rc = load(cmd, "residual", a->residual_file, &s->z))))
        return rc;

    /* The descriptor holds at most CONVFIND_MAX_RANK dims; below 3 there is no spatial
     * axis, and channels-last needs one to move C. */
    if (s->x.ndim < 3 || s->x.ndim > CONVFIND_MAX_RANK)
        return cli_failure(cmd, "input %s: rank %d, expected 3 to %d (N, C and 1 to 3 spatial "
                                "dims)", a->input, s->x.ndim, CONVFIND_MAX_RANK);
    if (s->w.ndim > CONVFIND_MAX_RANK)
        return cli_failure(cmd, "weights %s: rank %d, expected %d like the input", a->weights,
                           s->w.ndim, s->x.ndim);
    convfind_conv_desc desc = a->desc;
    desc.x_rank = s->x.ndim;
    cli_stored_to_logical(desc.layout, s->x.ndim, s->x.dims, desc.x_dims);
    desc.w_rank = s->w.ndim;
    memcpy(desc.w_dims, s->w.dims, (size_t)s->w.ndim * sizeof s->w.dims[0]);
    desc.has_bias = a->bias_file != NULL;
    desc.has_residual = a->residual_file != NULL;

    convfind_status st = convfind_problem_create(&desc, &s->problem);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    int y_rank;
    int64_t y_dims[CONVFIND_MAX_RANK], y_stored[CONVFIND_MAX_RANK];
    size_t y_elems;
    if ((st = convfind_problem_output_dims(s->problem, &y_rank, y_dims)) != CONVFIND_OK ||
        (st = convfind_problem_sizes(s->problem, NULL, NULL, &y_elems, NULL)) != CONVFIND_OK)
        return cli_library_error(st);
    cli_logical_to_stored(desc.layout, y_rank, y_dims, y_stored);
    if ((a->bias_file && (rc = check_bias(cmd, a->bias_file, &s->b, y_dims[1]))) ||
        (a->residual_file && (rc = check_residual(cmd, a->residual_file, &s->z, y_rank,
                                                  y_stored))))
        return rc;

    s->y = malloc(y_elems ? y_elems * sizeof(float) : 1);
    if (!s->y)
        return cli_failure(cmd, "cannot allocate %zu floats for the output", y_elems);
    if ((rc = cli_context_open(cmd, a, CONVFIND_FIND_HYBRID, &s->context)) != CLI_EXIT_OK)
        return rc;
    st = a->algo ? convfind_plan_create_with_algorithm(s->context, s->problem, a->algo, &s->plan)
                 : convfind_plan_create(s->context, s->problem, &s->plan);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    convfind_context_stats before = {.struct_size = sizeof before};
    convfind_context_stats after = {.struct_size = sizeof after};
    convfind_context_stats_get(s->context, &before);
    double ms = 0;
    if ((rc = execute(cmd, a, s, y_elems * sizeof(float), &ms)) != CLI_EXIT_OK)
        return rc;
    convfind_context_stats_get(s->context, &after);
    convfind_plan_info info;
    if ((st = convfind_plan_get_info(s->plan, &info)) != CONVFIND_OK)
        return cli_library_error(st);

    char err[CF_NPY_ERROR_SIZE];
    if (cf_npy_write_file(a->output, y_rank, y_stored, s->y, err, sizeof err) != CONVFIND_OK)
        return cli_failure(cmd, "output %s: %s", a->output, err);
    print_summary(a, &info, after.fallbacks > before.fallbacks, ms, y_rank, y_stored);
    return CLI_EXIT_OK;
}

static int run_main(const cli_command *self, cli_args *a)
{
    const char *missing = !a->input ? "--input X.npy" : !a->weights ? "--weights W.npy"
                          : !a->output ? "--output Y.npy" : NULL;
    if (missing)
        return cli_usage_error(self, "missing required flag %s (see convfind help run)",
                               missing);
    int rc;
    if (a->algo && (rc = check_algo(self, a->algo)) != CLI_EXIT_OK)
        return rc;
    run_state s;
    memset(&s, 0, sizeof s);
    rc = run(self, a, &s);
    run_state_release(&s);
    return rc;
}

static const int tensor_flags[] = {CLI_INPUT, CLI_WEIGHTS, CLI_BIAS_FILE, CLI_RESIDUAL_FILE,
                                   CLI_OUTPUT, -1};
static const int attribute_flags[] = {CLI_OP,           CLI_LAYOUT,         CLI_MATH,
                                      CLI_PADS,         CLI_STRIDES,        CLI_DILATIONS,
                                      CLI_GROUP,        CLI_KERNEL_SHAPE,   CLI_AUTO_PAD,
                                      CLI_OUTPUT_PADDING, CLI_OUTPUT_SHAPE, CLI_ACTIVATION, -1};
static const int context_flags[] = {CLI_ALGO,   CLI_THREADS, CLI_DEVICE, CLI_WORKSPACE,
                                    CLI_DB,     CLI_SYSTEM_DB, -1};
static const int output_flags[] = {CLI_JSON, -1};
static const cli_section sections[] = {
    {"tensors", tensor_flags},
    {"ONNX attributes", attribute_flags},
    {"how it runs", context_flags},
    {"output", output_flags},
};

const cli_command cli_cmd_run = {
    .name = "run",
    .summary = "compute one Conv/ConvTranspose from .npy files and say which algorithm did",
    .synopsis = "--input X.npy --weights W.npy [--bias-file B.npy] [--residual-file Z.npy] "
                "--output Y.npy [options]",
    .description =
        "Computes Y = act(conv(X, W) + B + Z) with the semantics of ONNX Conv or "
        "ConvTranspose (opsets 11 to 22): X, W and the optional B and Z are read from "
        "float32 .npy files, Y is written as one. The attributes mean exactly what the "
        "ONNX attributes of the same name mean, in ONNX order; absent ones take the ONNX "
        "defaults.\n"
        "\n"
        "The algorithm is the context's choice (a decision stored in the find database, "
        "else one measured by Find and stored; see `convfind find`), or --algo's. The "
        "summary line says which algorithm ran, where the decision came from (stored, "
        "measured, forced, heuristic) and how long the execution took; with --json it is "
        "one JSON object with the algorithm, source, key, execute_ms, output and shape.\n"
        "\n"
        "The tool checks the shapes the library does not see: B must be (M,), Z must have "
        "Y's stored shape. Y is written only after a successful execution, to a temporary "
        "file beside it that is renamed into place, so a failure never leaves a "
        "plausible output nor damages an existing file. Save inputs with "
        "numpy.save(path, array.astype(numpy.float32)); read are .npy versions 1.0 to "
        "3.0, little-endian float32, C order.\n"
        "\n"
        "With --device cuda the tensors are copied to the GPU, computed there and Y is "
        "copied back; the CUDA driver is loaded at run time.",
    .sections = sections,
    .nsections = 4,
    .examples = "convfind run --input x.npy --weights w.npy --output y.npy --pads 1,1,1,1\n"
                "convfind run --op conv_transpose --input x.npy --weights w.npy "
                "--strides 2,2 --output y.npy --json\n"
                "convfind run --input x.npy --weights w.npy --bias-file b.npy "
                "--activation relu --layout nhwc --algo cpu.reference --output y.npy",
    .max_pos = 0,
    .run = run_main,
};
