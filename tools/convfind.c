/*
 * convfind.c - entry point of the convfind command-line tool: dispatches to the
 * subcommands and answers --help and --version.
 *
 * Each subcommand lives in its own cmd_<name>.c and defines `cli_cmd_<name>`; adding
 * one is one X(<name>) line in CONVFIND_COMMANDS below plus the file in
 * tools/CMakeLists.txt.
 */
#include <stdio.h>
#include <string.h>

#include "cli_common.h"

#define CONVFIND_COMMANDS(X) \
    X(run)                   \
    X(find)                  \
    X(tune)                  \
    X(db)                    \
    X(demo)

#define DECLARE_COMMAND(name) extern const cli_command cli_cmd_##name;
CONVFIND_COMMANDS(DECLARE_COMMAND)

#define COMMAND_ENTRY(name) &cli_cmd_##name,
static const cli_command *const commands[] = {CONVFIND_COMMANDS(COMMAND_ENTRY)};
#define COMMAND_COUNT ((int)(sizeof commands / sizeof commands[0]))

static void print_overview(FILE *out)
{
    fprintf(out,
            "usage: convfind <command> [options]\n\n"
            "Runs ONNX Conv/ConvTranspose and finds the fastest correct algorithm per problem.\n\n"
            "commands:\n");
    for (int i = 0; i < COMMAND_COUNT; i++)
        fprintf(out, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(out, "  %-10s %s\n", "help", "show the help of a command: convfind help <command>");
    fprintf(out, "\n  -h, --help     show this help\n  --version      print the version\n");
}

static const cli_command *find_command(const char *name)
{
    for (int i = 0; i < COMMAND_COUNT; i++)
        if (strcmp(commands[i]->name, name) == 0)
            return commands[i];
    return NULL;
}

static int unknown_command(const char *name)
{
    fprintf(stderr, "convfind: unknown command '%s' (see convfind --help)\n", name);
    return CLI_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_overview(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *first = argv[1];
    if (strcmp(first, "-h") == 0 || strcmp(first, "--help") == 0 ||
        (strcmp(first, "help") == 0 && argc == 2)) {
        print_overview(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(first, "--version") == 0) {
        printf("convfind %s\n", convfind_version_string());
        return CLI_EXIT_OK;
    }
    if (strcmp(first, "help") == 0) {
        if (argc > 3) {
            fprintf(stderr, "convfind: help takes one command name, got %d\n", argc - 2);
            return CLI_EXIT_USAGE;
        }
        const cli_command *cmd = find_command(argv[2]);
        if (!cmd)
            return unknown_command(argv[2]);
        char name[64], help[] = "--help";
        snprintf(name, sizeof name, "%s", cmd->name);
        char *help_argv[] = {name, help, NULL};
        return cmd->main(cmd, 2, help_argv);
    }
    const cli_command *cmd = find_command(first);
    if (!cmd)
        return unknown_command(first);
    return cmd->main(cmd, argc - 1, argv + 1);
}
