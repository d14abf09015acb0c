/*
 * convfind.c - entry point of the convfind command-line tool: answers --help and
 * --version, finds the command (commands.c), parses its arguments with the one parser
 * (cli_args.h) and runs it.
 */
#include <stdio.h>
#include <string.h>

#include "cli_common.h"
#include "cli_help.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        cli_print_overview(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *first = argv[1];
    if (strcmp(first, "-h") == 0 || strcmp(first, "--help") == 0) {
        cli_print_overview(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(first, "--version") == 0) {
        printf("convfind %s\n", convfind_version_string());
        return CLI_EXIT_OK;
    }
    const cli_command *cmd = cli_command_find(first);
    if (!cmd) {
        fprintf(stderr, "convfind: unknown command '%s' (see convfind --help)\n", first);
        return CLI_EXIT_USAGE;
    }
    cli_args a;
    cli_args_init(&a);
    switch (cli_parse(cmd, argc - 1, argv + 1, &a)) {
    case CLI_HELP_SHOWN:
        return CLI_EXIT_OK;
    case CLI_BAD_USAGE:
        return CLI_EXIT_USAGE;
    default:
        return cmd->run(cmd, &a);
    }
}
