/*
 * cmd_help.c - `convfind help`: the help of the tool or of one command, as text or as a
 * man page, the bash completion script, the list of commands.  The build runs it to
 * make the man pages and the completion script that `cmake --install` installs.
 */
#include <stdio.h>

#include "cli_common.h"
#include "cli_help.h"

static int help_main(const cli_command *self, cli_args *a)
{
    const cli_command *cmd = NULL;
    if (a->npos == 1 && !(cmd = cli_command_find(a->pos[0])))
        return cli_usage_error(self, "unknown command '%s' (see convfind --help)", a->pos[0]);
    if (a->man + a->bash_completion + a->commands > 1)
        return cli_usage_error(self, "give one of --man, --bash-completion and --commands");
    if (a->bash_completion || a->commands) {
        if (cmd)
            return cli_usage_error(self, "--%s takes no COMMAND",
                                   a->commands ? "commands" : "bash-completion");
        if (a->bash_completion)
            cli_print_bash_completion(stdout);
        for (int i = 0; a->commands && cli_commands[i]; i++)
            printf("%s\n", cli_commands[i]->name);
        return CLI_EXIT_OK;
    }
    if (a->man)
        cli_print_man(stdout, cmd);
    else if (cmd)
        cli_print_help(stdout, cmd);
    else
        cli_print_overview(stdout);
    return CLI_EXIT_OK;
}

static const int help_flags[] = {CLI_MAN, CLI_BASH_COMPLETION, CLI_COMMANDS, -1};
static const cli_section sections[] = {{"options", help_flags}};

const cli_command cli_cmd_help = {
    .name = "help",
    .summary = "show the help of the tool or of a command",
    .synopsis = "[COMMAND] [--man]\n--bash-completion | --commands",
    .description =
        "Prints the help of COMMAND (the same as `convfind COMMAND --help`), or without "
        "COMMAND the tool's: its commands and the environment variables it reads. "
        "`convfind help help` is this text.\n"
        "\n"
        "--man prints the same as a man page in roff, --bash-completion a completion script "
        "for bash, --commands the command names; the build makes the installed man pages "
        "(convfind(1), convfind-COMMAND(1)) and completion script this way.",
    .sections = sections,
    .nsections = 1,
    .examples = "convfind help tune\nconvfind help --man run | man -l -\n"
                "convfind help --bash-completion > /etc/bash_completion.d/convfind",
    .words_are_commands = true,
    .max_pos = 1,
    .run = help_main,
};
