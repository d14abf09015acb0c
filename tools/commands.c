/*
 * commands.c - the table of the tool's commands.  Each command lives in its own
 * cmd_<name>.c and defines `cli_cmd_<name>`; adding one is one line here plus the file
 * in tools/CMakeLists.txt.  The order is the order of `convfind --help`.
 */
#include "cli_args.h"

extern const cli_command cli_cmd_run, cli_cmd_find, cli_cmd_tune, cli_cmd_db, cli_cmd_algos,
    cli_cmd_demo, cli_cmd_help;

const cli_command *const cli_commands[] = {&cli_cmd_run,   &cli_cmd_find, &cli_cmd_tune,
                                           &cli_cmd_db,    &cli_cmd_algos, &cli_cmd_demo,
                                           &cli_cmd_help,  NULL};
