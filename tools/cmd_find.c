/*
 * cmd_find.c - `convfind find`: measures every algorithm on one problem and prints the
 * ranked list and the decision (what convfind_find returns).
 *
 * The problem comes from MIOpenDriver's conv flags (miopen.h), so that a MIOpenDriver
 * line can be pasted, or from the ONNX flags with --x-shape and --w-shape
 * (cli_setup.h).  --json prints exactly one JSON object on stdout and nothing else there.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "cli_setup.h"
#include "json_out.h"
#include "miopen.h"

/* The table's word for a status; JSON folds "abandoned" into "ok" plus a flag. */
static const char *status_word(convfind_candidate_status s, bool json)
{
    switch (s) {
    case CONVFIND_CANDIDATE_OK:
        return "ok";
    case CONVFIND_CANDIDATE_FAILED:
        return "failed";
    case CONVFIND_CANDIDATE_NOT_APPLICABLE:
        return "not_applicable";
    case CONVFIND_CANDIDATE_ABANDONED:
    default:
        return json ? "ok" : "abandoned";
    }
}

static void print_json(const char *key, const convfind_find_result *r, int n)
{
    printf("{\"key\": ");
    cli_json_string(stdout, key);
    printf(", \"decision\": ");
    cli_json_string(stdout, r[0].algorithm);
    printf(", \"candidates\": [");
    for (int i = 0; i < n; i++) {
        printf("%s{\"algo\": ", i ? ", " : "");
        cli_json_string(stdout, r[i].algorithm);
        printf(", \"median_ms\": %.6g, \"min_ms\": %.6g, \"spread\": %.4g, \"repeats\": %d, "
               "\"workspace_bytes\": %zu, \"validated\": %s, \"status\": \"%s\", "
               "\"abandoned\": %s}",
               r[i].median_ms, r[i].min_ms, r[i].spread, r[i].repeats, r[i].workspace_bytes,
               r[i].validated ? "true" : "false", status_word(r[i].status, true),
               r[i].status == CONVFIND_CANDIDATE_ABANDONED ? "true" : "false");
    }
    printf("]}\n");
}

static void print_table(const char *key, const char *problem, const convfind_find_result *r,
                        int n, double gflop)
{
    printf("problem  %s\nkey      %s\n\n", problem, key);
    printf("%-4s %-28s %-14s %11s %11s %8s %7s %14s %9s %s\n", "rank", "algorithm", "status",
           "median_ms", "min_ms", "spread", "repeats", "workspace", "GFLOP/s", "validated");
    for (int i = 0; i < n; i++) {
        char rate[32] = "-";
        if (r[i].median_ms > 0)
            snprintf(rate, sizeof rate, "%.1f", gflop / (r[i].median_ms * 1e-3));
        printf("%-4d %-28s %-14s %11.4f %11.4f %8.3f %7d %14zu %9s %s\n", i + 1, r[i].algorithm,
               status_word(r[i].status, false), r[i].median_ms, r[i].min_ms, r[i].spread,
               r[i].repeats, r[i].workspace_bytes, rate, r[i].validated ? "yes" : "no");
    }
    printf("\ndecision %s\n", r[0].algorithm);
}

typedef struct find_state {
    convfind_problem *problem;
    convfind_context *context;
    convfind_find_result *results;
} find_state;

static int run_find(const cli_command *cmd, const cli_args *a, const convfind_conv_desc *d,
                    find_state *s)
{
    const char *unsupported = cli_dtype_unsupported(a, d->dtype);
    if (unsupported)
        return cli_failure(cmd, "%s", unsupported);
    convfind_status st = convfind_problem_create(d, &s->problem);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    int rc = cli_context_open(cmd, a, CONVFIND_FIND_EXHAUSTIVE, &s->context);
    if (rc != CLI_EXIT_OK)
        return rc;
    /* Measured as a plan with constant weights runs, the way inference uses them. */
    const convfind_weights usage = CONVFIND_WEIGHTS_CONSTANT;
    int n = 0;
    if ((st = convfind_find(s->context, s->problem, usage, NULL, 0, &n)) != CONVFIND_OK)
        return cli_library_error(st);
    s->results = calloc((size_t)(n > 0 ? n : 1), sizeof *s->results);
    if (!s->results)
        return cli_failure(cmd, "out of memory");
    if ((st = convfind_find(s->context, s->problem, usage, s->results, n, &n)) != CONVFIND_OK)
        return cli_library_error(st);
    char key[4200], problem[512];
    convfind_problem_key(s->context, s->problem, usage, key, sizeof key);
    convfind_problem_describe(s->problem, problem, sizeof problem);
    if (a->json)
        print_json(key, s->results, n);
    else
        print_table(key, problem, s->results, n, convfind_problem_flops(s->problem) * 1e-9);
    return CLI_EXIT_OK;
}

static int find_main(const cli_command *cmd, cli_args *a)
{
    convfind_conv_desc d;
    int rc = cli_problem_from_args(cmd, a, a->pos, a->npos, &d);
    if (rc != CLI_EXIT_OK)
        return rc;
    find_state s = {0};
    rc = run_find(cmd, a, &d, &s);
    free(s.results);
    convfind_context_destroy(s.context);
    convfind_problem_destroy(s.problem);
    return rc;
}

static const int find_flags[] = {CLI_BUDGET_MS, CLI_THREADS, CLI_DEVICE, CLI_WORKSPACE,
                                 CLI_DB,        CLI_SYSTEM_DB, -1};
static const int output_flags[] = {CLI_JSON, -1};
static const cli_section sections[] = {
    {"the problem in ONNX terms", cli_onnx_problem_flags},
    {"the problem as MIOpenDriver conv flags", cli_miopen_problem_flags},
    {"MIOpenDriver flags for the driver itself", cli_miopen_driver_flags},
    {"how Find runs", find_flags},
    {"output", output_flags},
};

const cli_command cli_cmd_find = {
    .name = "find",
    .summary = "measure every algorithm on one problem; print the ranking and the decision",
    .synopsis = "[MIOpenDriver] conv|convfp16|convbfp16 [MIOpenDriver flags] [options]\n"
                "--x-shape N,C,... --w-shape M,C/G,... [ONNX flags] [options]",
    .description =
        "Runs Find on one problem now, whatever is stored: every applicable candidate "
        "algorithm is timed (and, unless -V 0, checked against the reference), the ranked "
        "list is printed best first, and the winner becomes the decision stored in the "
        "find database.\n"
        "\n"
        "The problem is given in one of two ways, never mixed. As a MIOpenDriver command "
        "line, pasted as it is: the program name is optional, the command word conv, "
        "convfp16 or convbfp16 sets the data type (f32, f16, bf16), and every flag has "
        "MIOpenDriver's meaning and default (-n 100 -c 3 -H 32 -W 32 -k 32 -y 3 -x 3 when "
        "absent): -t is its timing switch, -F the direction, -V verification, -i its "
        "iteration count. Or with --x-shape and --w-shape and the ONNX attribute flags of "
        "`convfind run`. The bias, residual, activation and math flags work with either.\n"
        "\n"
        "The table shows each candidate's status (ok, failed, not_applicable, abandoned), "
        "median and minimum milliseconds, spread, repeats, workspace bytes, GFLOP/s and "
        "whether its output was validated; the last line is `decision ALGORITHM`. With "
        "--json stdout holds one object: {\"key\", \"decision\", \"candidates\": [{\"algo\", "
        "\"median_ms\", \"min_ms\", \"spread\", \"repeats\", \"workspace_bytes\", "
        "\"validated\", \"status\", \"abandoned\"}]}.\n"
        "\n"
        "A data type the device cannot compute (f16 or bf16 on the CPU) is an error naming "
        "the data type.",
    .sections = sections,
    .nsections = 5,
    .examples = "convfind find ./bin/MIOpenDriver conv -n 1 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 "
                "-p 1 -q 1 -F 1 -t 1\n"
                "convfind find --x-shape 1,64,56,56 --w-shape 64,64,3,3 --pads 1,1,1,1 "
                "--budget-ms 200 --json\n"
                "convfind find convfp16 -n 32 -c 128 -H 28 -W 28 -k 128 --device cuda",
    .max_pos = -1,
    .run = find_main,
};
