/*
 * cmd_tune.c - `convfind tune`: obtains and stores the decision of every problem of
 * some problem files (problem_list.h), an ONNX model (onnx_list.h) or one problem given
 * by flags, so that later processes find the decisions in the database instead of
 * measuring (docs/db.md).
 *
 * Each problem goes through an ordinary plan creation under the HYBRID policy (stored
 * decision, else a re-time seeded by a record from another environment or a similar
 * machine, else Find, then stored; EXHAUSTIVE with --policy exhaustive; with --retune
 * the plan option that measures whatever is stored), with constant weights unless its
 * list line says weights=var, so tuning is the very path a first inference would take
 * and decides the keys its plans have.  Results go to stdout: a table and the line
 *   tuned=<decided> failed=<not decided> finds=<finds run> db_hits=<read from the
 *   database> seeded=<finds that re-timed only a record's top candidates>
 *   unstored=<decisions that could not be stored> seconds=<s>
 * or one JSON object; --progress reports on stderr as it goes.  The exit status is 1
 * when a problem failed or a decision could not be stored.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, isatty */

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_common.h"
#include "cli_setup.h"
#include "cuda_copy.h"
#include "decide.h"
#include "json_out.h"
#include "miopen.h"
#include "onnx_list.h"
#include "problem_list.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The problems to tune: the one the flags describe, or those of every file (--math
 * alone goes with the models, to the converter). */
static int collect(const cli_command *cmd, const cli_args *a, cli_problem_list *list)
{
    bool model = false;
    for (int i = 0; i < a->npos; i++)
        model |= ends_with(a->pos[i], ".onnx");
    if (cli_problem_flags_given(a, model ? CLI_MATH : -1)) {
        cli_problem p;
        memset(&p, 0, sizeof p);
        p.count = 1;
        snprintf(p.name, sizeof p.name, "command line");
        int rc = cli_problem_from_args(cmd, a, a->pos, a->npos, &p.desc);
        if (rc != CLI_EXIT_OK)
            return rc;
        list->v = malloc(sizeof p);
        if (!list->v)
            return cli_failure(cmd, "out of memory");
        list->v[0] = p;
        list->n = list->cap = 1;
        return CLI_EXIT_OK;
    }
    if (a->npos == 0)
        return cli_usage_error(cmd, "no problem FILE given, nor a problem's flags (see "
                               "convfind help tune)");
    if (a->n_input_shapes && !model)
        return cli_usage_error(cmd, "--input-shape is for a .onnx model, and no FILE is one");
    char err[800];
    for (int i = 0; i < a->npos; i++) {
        int rc = ends_with(a->pos[i], ".onnx")
                     ? cli_onnx_problems(a->pos[i], a->input_shapes, a->n_input_shapes,
                                         cli_math_names[a->desc.math_mode], list, err,
                                         sizeof err)
                     : cli_problems_read_file(a->pos[i], list, err, sizeof err);
        if (rc != 0)
            return cli_failure(cmd, "%s", err);
    }
    return CLI_EXIT_OK;
}

/* One line per problem where stderr is not a terminal, a bar with ETA where it is. */
static void progress(bool tty, size_t done, size_t total, double elapsed,
                     const cli_decision *row)
{
    if (!tty) {
        if (row->status == CONVFIND_OK)
            fprintf(stderr, "[%zu/%zu] %s: %s (%s) %.3f s\n", done, total, row->name, row->algo,
                    cli_source_name(row->source), row->seconds);
        else
            fprintf(stderr, "[%zu/%zu] %s: %s\n", done, total, row->name,
                    convfind_status_name(row->status));
        return;
    }
    enum { WIDTH = 30 };
    int filled = (int)(WIDTH * done / total);
    double eta = done ? elapsed / (double)done * (double)(total - done) : 0;
    fprintf(stderr, "\r[%.*s%.*s] %zu/%zu  ETA %5.1f s  %-40.40s", filled,
            "##############################", WIDTH - filled, "..............................",
            done, total, eta, row->name);
    if (done == total)
        fputc('\n', stderr);
}

static const char *const weights_words[] = {NULL, "const", "var"};

/* What the summary line and the JSON object report besides the rows. */
typedef struct totals {
    size_t tuned, failed, hits, unstored;
    unsigned long long finds, seeded;
    double seconds;
} totals;

static void print_json(const char *db, const cli_problem_list *list, const cli_decision *rows,
                       const totals *t)
{
    printf("{\"database\": ");
    cli_json_string(stdout, db);
    printf(", \"problems\": [");
    for (size_t i = 0; i < list->n; i++) {
        const cli_decision *r = &rows[i];
        printf("%s{\"name\": ", i ? ", " : "");
        cli_json_string(stdout, r->name);
        printf(", \"count\": %lld, \"weights\": ", (long long)list->v[i].count);
        cli_json_string(stdout, weights_words[list->v[i].weights]);
        printf(", \"status\": \"%s\"", r->status == CONVFIND_OK ? "ok"
                                                                 : convfind_status_name(r->status));
        if (r->status == CONVFIND_OK) {
            printf(", \"algorithm\": ");
            cli_json_string(stdout, r->algo);
            printf(", \"source\": \"%s\", \"median_ms\": ", cli_source_name(r->source));
            cli_json_number(stdout, r->median_ms);
        } else {
            printf(", \"error\": ");
            cli_json_string(stdout, r->error);
        }
        printf(", \"seconds\": ");
        cli_json_number(stdout, r->seconds);
        printf("}");
    }
    printf("], \"tuned\": %zu, \"failed\": %zu, \"finds\": %llu, \"db_hits\": %zu, "
           "\"seeded\": %llu, \"unstored\": %zu, \"seconds\": ",
           t->tuned, t->failed, t->finds, t->hits, t->seeded, t->unstored);
    cli_json_number(stdout, t->seconds);
    printf("}\n");
}

/* Decides every problem of `list` on `ctx` (a CUDA context's constant weights on the
 * device through `cuda`), then reports. */
static int tune(const cli_command *cmd, const cli_args *a, convfind_context *ctx,
                cli_cuda *cuda, const cli_problem_list *list, cli_decision *rows, double t0)
{
    convfind_db *store = convfind_context_db(ctx);
    convfind_db_info info = {.struct_size = sizeof info};
    convfind_status st = convfind_db_get_info(store, &info);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    const char *db = info.path;
    if (!a->json)
        printf("tuning %zu problems into %s\n", list->n, db);
    bool tty = isatty(STDERR_FILENO) != 0;
    totals t = {0};
    double start = now_s();
    for (size_t i = 0; i < list->n; i++) {
        cli_decision *r = &rows[i];
        snprintf(r->name, sizeof r->name, "%s", list->v[i].name);
        const char *unsupported = cli_dtype_unsupported(a, list->v[i].desc.dtype);
        if (unsupported) {
            r->status = CONVFIND_ERR_UNSUPPORTED;
            snprintf(r->error, sizeof r->error, "%s", unsupported);
        } else {
            cli_decide(ctx, &list->v[i].desc, list->v[i].weights != CLI_WEIGHTS_VAR,
                       a->retune != 0, cuda, r, NULL);
        }
        t.hits += r->status == CONVFIND_OK && r->source == CONVFIND_SOURCE_STORED;
        t.failed += r->status != CONVFIND_OK;
        if (a->progress)
            progress(tty, i + 1, list->n, now_s() - start, r);
    }
    if ((st = convfind_db_flush(store)) != CONVFIND_OK ||
        (st = convfind_db_get_info(store, &info)) != CONVFIND_OK)
        return cli_library_error(st);
    t.unstored = (size_t)info.store_failures;
    convfind_context_stats stats = {.struct_size = sizeof stats};
    convfind_context_stats_get(ctx, &stats);
    t.finds = (unsigned long long)stats.finds;
    t.seeded = (unsigned long long)stats.seeded;
    t.tuned = list->n - t.failed;
    t.seconds = now_s() - t0;
    if (a->json) {
        print_json(db, list, rows, &t);
    } else {
        cli_decision_table(rows, list->n);
        printf("tuned=%zu failed=%zu finds=%llu db_hits=%zu seeded=%llu unstored=%zu "
               "seconds=%.2f\n",
               t.tuned, t.failed, t.finds, t.hits, t.seeded, t.unstored, t.seconds);
    }
    for (size_t i = 0; i < list->n; i++)
        if (rows[i].status != CONVFIND_OK)
            return cli_failure(cmd, "%zu of %zu problems failed; the first, %s: %s: %s", t.failed,
                               list->n, rows[i].name, convfind_status_name(rows[i].status),
                               rows[i].error);
    if (t.unstored)
        return cli_failure(cmd, "%zu decisions could not be stored in %s", t.unstored, db);
    return CLI_EXIT_OK;
}

static int tune_main(const cli_command *cmd, cli_args *a)
{
    double t0 = now_s();
    cli_problem_list list = {0};
    int rc = collect(cmd, a, &list);
    cli_decision *rows = NULL;
    convfind_context *ctx = NULL;
    cli_cuda *cuda = NULL;
    char err[300];
    if (rc == CLI_EXIT_OK && !(rows = calloc(list.n, sizeof *rows)))
        rc = cli_failure(cmd, "out of memory for %zu problems", list.n);
    if (rc == CLI_EXIT_OK)
        rc = cli_context_open(cmd, a,
                              a->policy == 1 ? CONVFIND_FIND_EXHAUSTIVE : CONVFIND_FIND_HYBRID,
                              &ctx);
    /* Constant weights live where the context's tensors do. */
    if (rc == CLI_EXIT_OK && a->device == CONVFIND_DEVICE_CUDA &&
        cli_cuda_open(a->device_index, &cuda, err, sizeof err) != 0)
        rc = cli_failure(cmd, "%s", err);
    if (rc == CLI_EXIT_OK)
        rc = tune(cmd, a, ctx, cuda, &list, rows, t0);
    convfind_context_destroy(ctx);
    cli_cuda_close(cuda);
    free(rows);
    cli_problems_free(&list);
    return rc;
}

static const int file_flags[] = {CLI_INPUT_SHAPE, -1};
static const int tune_flags[] = {CLI_POLICY, CLI_ENV_POLICY, CLI_RETUNE,    CLI_BUDGET_MS,
                                 CLI_THREADS, CLI_DEVICE,    CLI_WORKSPACE, CLI_DB,
                                 CLI_SYSTEM_DB, -1};
static const int output_flags[] = {CLI_JSON, CLI_PROGRESS, -1};
static const cli_section sections[] = {
    {"problem files", file_flags},
    {"one problem in ONNX terms", cli_onnx_problem_flags},
    {"one problem as MIOpenDriver conv flags", cli_miopen_problem_flags},
    {"MIOpenDriver flags for the driver itself", cli_miopen_driver_flags},
    {"how it tunes", tune_flags},
    {"output", output_flags},
};

const cli_command cli_cmd_tune = {
    .name = "tune",
    .summary = "measure and store the decision of every problem of some files or a model",
    .synopsis = "FILE... [options]\n"
                "MODEL.onnx [--input-shape NAME=D0,D1,...]... [--math strict|tf32] [options]\n"
                "[MIOpenDriver] conv|convfp16|convbfp16 [MIOpenDriver flags] [options]\n"
                "--x-shape N,C,... --w-shape M,C/G,... [ONNX flags] [options]",
    .description =
        "Decides every problem the way a first inference would (a plan creation under the "
        "hybrid policy: a decision stored in the database is used, any other is measured by "
        "Find and stored), so that later processes read the decisions instead of measuring. "
        "A second run of the same list measures nothing, except the stored decisions of low "
        "confidence (measured with a shorter --budget-ms that did not time every candidate, "
        "or whose runner-up was within the noise) when this run's budget is larger: those "
        "are measured again. A problem stored only for another environment, or for a "
        "similar machine (the same problem with another thread count or CPU model, the same "
        "ISA level), is seeded: only the top candidates of that record are re-timed, and "
        "the count is reported as seeded. --retune measures every problem, stored or not.\n"
        "\n"
        "A FILE (\"-\" for standard input) is in one of three formats, decided by its "
        "first line that is not blank or a comment. The problem list: one problem per line, "
        "'#' starting a comment, whitespace-separated key=value tokens with ONNX meanings:\n"
        "  name=res2a count=3 x=1,64,56,56 w=64,64,3,3 pads=1,1,1,1 bias=1 act=relu\n"
        "Its keys: name, count, op (conv|conv_transpose), x (N,C,D... in logical ONNX order), "
        "w (W's ONNX dims), group, pads (begins, then ends), strides, dilations, "
        "kernel_shape, auto_pad (notset|same_upper|same_lower|valid), output_padding, "
        "output_shape, bias (0|1), residual (0|1), act (none|relu|leaky_relu|clip|sigmoid|"
        "tanh|hard_sigmoid), alpha, beta (the activation's parameters), layout (nchw|nhwc), "
        "dtype (f32|f16|bf16), math (strict|tf32), weights (const, the default: plans given "
        "constant weights, packed once; var: weights given to every execution; part of the "
        "decision key, docs/key.md). x and w are required; absent keys take the ONNX "
        "defaults; an unknown key or a bad value is an error naming the line and the key. "
        "The suite CSV of the benchmark suites (data/suites/), recognised by its header of "
        "comma-separated column names: its columns, in any order, are name, count, op (conv|convT), "
        "dims (1|2|3), n, c, k, group, d, h, w (input sizes), t, r, s (kernel sizes), "
        "pad_d, pad_h, pad_w (symmetric), pads (space-separated begins, then ends), "
        "stride_*, dil_*, output_padding, bias, act, alpha, beta (docs/benchmarks.md); "
        "NCHW f32. Any other line is a MIOpenDriver command line "
        "(whatever precedes the command word conv, convfp16 or convbfp16 is skipped, so log "
        "lines work). A file without any problem, with a NUL byte or with a line longer "
        "than 65536 characters is an error.\n"
        "\n"
        "A FILE ending in .onnx is a model: `python3 -m convfind.onnx MODEL` (convfind's "
        "Python package; $CONVFIND_PYTHON names another interpreter) prints its "
        "convolutions as a problem list, which is tuned; each --input-shape NAME=D0,D1,... "
        "and --math are passed on. Without the module the command says so.\n"
        "\n"
        "Without FILEs, the flags describe one problem, as for `convfind find`.\n"
        "\n"
        "Output: a first line naming the database, a table (problem, algorithm, source, "
        "median ms, seconds) and the line `tuned=T failed=F finds=N db_hits=H seeded=E "
        "unstored=U seconds=S`; with --json one object {\"database\", \"problems\": "
        "[{\"name\", \"count\", \"weights\", \"status\", \"algorithm\", \"source\", "
        "\"median_ms\" or \"error\", \"seconds\"}], \"tuned\", \"failed\", \"finds\", "
        "\"db_hits\", \"seeded\", \"unstored\", \"seconds\"}. A database another process "
        "keeps locked is waited for; decisions that could not be stored in the end are "
        "counted as unstored. The exit status is 1 when a problem failed or a decision could "
        "not be stored.",
    .sections = sections,
    .nsections = 6,
    .examples = "convfind tune data/resnet50_convs.csv --budget-ms 200 --progress\n"
                "convfind tune model.onnx --input-shape input=1,3,224,224 --db team.sqlite\n"
                "convfind tune miopen_lines.txt --json > decisions.json\n"
                "convfind tune conv -n 1 -c 64 -H 56 -W 56 -k 64 -p 1 -q 1",
    .max_pos = -1,
    .run = tune_main,
};
