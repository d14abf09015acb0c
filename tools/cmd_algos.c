/*
 * cmd_algos.c - `convfind algos`: the algorithms compiled into this build, by the names
 * `--algo` and the find database use, and whether the CUDA backend can run here.
 */
#include <stdio.h>

#include "cli_common.h"
#include "json_out.h"

static int algos_main(const cli_command *self, cli_args *a)
{
    (void)self;
    int n = convfind_algorithm_count();
    char why[256] = "";
    int cuda = convfind_cuda_available(0, why, sizeof why);
    if (!a->json) {
        for (int i = 0; i < n; i++)
            printf("%s\n", convfind_algorithm_name(i));
        return CLI_EXIT_OK;
    }
    printf("{\"algorithms\": [");
    for (int i = 0; i < n; i++) {
        printf("%s", i ? ", " : "");
        cli_json_string(stdout, convfind_algorithm_name(i));
    }
    printf("], \"cuda\": {\"available\": %s, \"reason\": ", cuda ? "true" : "false");
    cli_json_string(stdout, cuda ? "" : why);
    printf("}}\n");
    return CLI_EXIT_OK;
}

static const int output_flags[] = {CLI_JSON, -1};
static const cli_section sections[] = {{"output", output_flags}};

const cli_command cli_cmd_algos = {
    .name = "algos",
    .summary = "list the algorithms of this build",
    .synopsis = "[--json]",
    .description =
        "Prints the name of every algorithm compiled into this build, one per line, on "
        "every backend: the names `convfind run --algo` takes and the find database "
        "stores (a CUDA configuration adds its parameters after a colon). With --json: "
        "{\"algorithms\": [...], \"cuda\": {\"available\", \"reason\"}}, where cuda says "
        "whether device 0 can be used here and, if not, why.",
    .sections = sections,
    .nsections = 1,
    .examples = "convfind algos\nconvfind algos --json",
    .max_pos = 0,
    .run = algos_main,
};
