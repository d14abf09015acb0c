/*
 * cli_help.h - everything the tool says about itself, printed from the command and
 * flag tables (cli_args.h): `convfind help`, `convfind COMMAND --help`, the man pages
 * (`convfind help --man`, installed by `cmake --install`) and the bash completion
 * script (`convfind help --bash-completion`).  One source, so the three cannot
 * disagree with each other or with what the parser accepts.
 */
#ifndef CONVFIND_TOOLS_CLI_HELP_H
#define CONVFIND_TOOLS_CLI_HELP_H

#include <stdio.h>

#include "cli_args.h"

/* A command's help as text: usage, description, every flag, exit status, examples. */
void cli_print_help(FILE *out, const cli_command *cmd);

/* The tool's help: usage, the commands, the environment variables. */
void cli_print_overview(FILE *out);

/* The man page of `cmd` (section 1, roff), or of the tool when `cmd` is NULL. */
void cli_print_man(FILE *out, const cli_command *cmd);

/* A bash completion script for the tool: commands, their flags, the values of flags
 * with a fixed set, subcommands, and file names elsewhere. */
void cli_print_bash_completion(FILE *out);

#endif /* CONVFIND_TOOLS_CLI_HELP_H */
