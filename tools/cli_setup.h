/*
 * cli_setup.h - the library objects a command line asks for: the problem its flags
 * describe (ONNX flags or MIOpenDriver flags, never both) and the context its options
 * configure.  `find`, `tune` and `run` build them here, so that a flag means the same
 * to each of them.
 */
#ifndef CONVFIND_TOOLS_CLI_SETUP_H
#define CONVFIND_TOOLS_CLI_SETUP_H

#include <stdbool.h>

#include "cli_args.h"

/* The flags of a problem in ONNX terms, in help order, -1-terminated: a section of
 * `find` and `tune`. */
extern const int cli_onnx_problem_flags[];

/* True when a flag that describes a problem was given (ONNX problem flags or
 * MIOpenDriver problem flags), other than flag `except` (-1: none). */
bool cli_problem_flags_given(const cli_args *a, int except);

/* The problem of the flags into `d`.  `words` are positional arguments that may be a
 * pasted MIOpenDriver line's program and command word.  CLI_EXIT_OK, or a one-line
 * usage error printed and CLI_EXIT_USAGE. */
int cli_problem_from_args(const cli_command *cmd, const cli_args *a, char *const *words,
                          int nwords, convfind_conv_desc *d);

/* A context with the options of `a` (--threads --device --workspace --budget-ms --db
 * --system-db --env-policy, -V) and find policy `policy`.  CLI_EXIT_OK, or the error
 * printed and CLI_EXIT_USAGE or CLI_EXIT_FAILURE. */
int cli_context_open(const cli_command *cmd, const cli_args *a, convfind_find_policy policy,
                     convfind_context **ctx);

#endif /* CONVFIND_TOOLS_CLI_SETUP_H */
