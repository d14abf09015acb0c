/*
 * cli_common.h - what every convfind subcommand shares: the command table entry, a
 * table-driven flag parser with generated --help, value parsers (integers, integer
 * lists, enums, activations), the ONNX problem flags that build a convfind_conv_desc,
 * layout reordering and error printing.
 *
 * A subcommand is one file cmd_<name>.c that defines `const cli_command cli_cmd_<name>`
 * and one line in the table of convfind.c.  Its flags are static cli_flag tables; the
 * ONNX attribute flags are not repeated per command but reused as the group
 * cli_problem_flags, so `run`, `find` and `tune` accept exactly the same spelling.
 *
 * All output goes to stdout (results, --help) or stderr (errors, one line each).
 * Nothing here keeps state between calls.
 */
#ifndef CONVFIND_TOOLS_CLI_COMMON_H
#define CONVFIND_TOOLS_CLI_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "convfind.h"

#if defined(__GNUC__)
#define CLI_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define CLI_PRINTF(fmt, args)
#endif

/* Exit statuses of the tool: 0 success, 1 a runtime or library failure, 2 bad usage. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_FAILURE = 1, CLI_EXIT_USAGE = 2 };

typedef struct cli_command {
    const char *name;
    const char *summary;  /* one line for `convfind --help` */
    const char *synopsis; /* arguments after `convfind <name>` */
    /* argv[0] is the command name; returns the process exit status. */
    int (*main)(const struct cli_command *self, int argc, char **argv);
} cli_command;

typedef struct cli_flag cli_flag;

/* Stores `value` (NULL for a flag without metavar) into `target`.  Returns 0, or prints
 * a one-line error naming the flag and the value and returns -1. */
typedef int (*cli_apply_fn)(const cli_flag *flag, void *target, const char *value);

struct cli_flag {
    const char *name;    /* long name without "--" */
    char short_name;     /* single-dash letter, or 0 */
    const char *metavar; /* shown in --help; NULL: the flag takes no value */
    const char *help;
    cli_apply_fn apply;
    size_t offset;       /* field offset in target, for the generic appliers below */
    const void *choices; /* cli_choice table, for appliers of enum flags */
};

/* A table of flags and the struct they write into. */
typedef struct cli_flag_group {
    const cli_flag *flags;
    int count;
    void *target;
} cli_flag_group;

/* Name -> value table for enum flags, terminated by a NULL name.  Matching ignores
 * ASCII case. */
typedef struct cli_choice {
    const char *name;
    int value;
} cli_choice;

enum { CLI_PARSED = 0, CLI_HELP_SHOWN = 1, CLI_BAD_USAGE = 2 };

/* Parses argv[1..argc) of `cmd` against the groups: "--name value", "--name=value",
 * "-s value".  Every flag may be given once.  -h/--help prints cli_print_help and
 * returns CLI_HELP_SHOWN; an unknown flag, a missing or malformed value, a repeated flag
 * or a positional argument prints one line and returns CLI_BAD_USAGE. */
int cli_parse(const cli_command *cmd, int argc, char **argv, const cli_flag_group *groups,
              int ngroups);

/* Usage line, summary and every flag of every group, to `out`. */
void cli_print_help(FILE *out, const cli_command *cmd, const cli_flag_group *groups,
                    int ngroups);

/* "convfind <cmd>: <message>" on stderr, one line.  Returns CLI_EXIT_USAGE. */
int cli_usage_error(const cli_command *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);

/* "convfind <cmd>: <message>" on stderr, one line.  Returns CLI_EXIT_FAILURE. */
int cli_failure(const cli_command *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);

/* "convfind: <status name>: <convfind_last_error()>" on stderr.  Returns
 * CLI_EXIT_FAILURE.  Call it right after the failing library call, on the same thread. */
int cli_library_error(convfind_status status);

/* Generic appliers: the field at target + flag->offset has the type in the name. */
int cli_apply_string(const cli_flag *flag, void *target, const char *value); /* const char * */
int cli_apply_int(const cli_flag *flag, void *target, const char *value);    /* int */
int cli_apply_int64(const cli_flag *flag, void *target, const char *value);  /* int64_t */
int cli_apply_ints(const cli_flag *flag, void *target, const char *value);   /* convfind_ints */

/* Parses exactly the decimal integer spanning [text, text + len): an optional '-' and
 * digits, nothing else, in range.  Prints nothing; false if it is not one. */
bool cli_int64_from_span(const char *text, size_t len, int64_t *out);

/* Value parsers used by the appliers; `flag` only names the flag in the message.
 * Each returns 0, or prints a one-line error and returns -1. */
int cli_parse_int64(const char *flag, const char *text, int64_t *out);
int cli_parse_int_list(const char *flag, const char *text, convfind_ints *out);
int cli_parse_choice(const char *flag, const char *text, const cli_choice *choices, int *out);
/* "relu", "leaky_relu:ALPHA", "clip:MIN,MAX", "sigmoid", "tanh", "hard_sigmoid:A,B",
 * "none".  Parameters may be left out to get the ONNX defaults (LeakyRelu alpha 0.01,
 * HardSigmoid 0.2, 0.5, Clip unbounded). */
int cli_parse_activation(const char *flag, const char *text, convfind_activation *act,
                         float *alpha, float *beta);

/* The ONNX attribute flags (--op, --pads, --strides, --dilations, --group,
 * --kernel-shape, --auto-pad, --output-padding, --output-shape, --activation,
 * --layout).  Their target is a convfind_conv_desc initialised with
 * convfind_conv_desc_init(); shapes, bias and residual are the command's business. */
extern const cli_flag cli_problem_flags[];
extern const int cli_problem_flag_count;

/* Converts between the order a tensor is stored in (for NHWC: N, spatial..., C) and the
 * logical ONNX order (N, C, spatial...) the library takes.  rank >= 2; in and out must
 * not alias. */
void cli_stored_to_logical(convfind_layout layout, int rank, const int64_t *stored,
                           int64_t *logical);
void cli_logical_to_stored(convfind_layout layout, int rank, const int64_t *logical,
                           int64_t *stored);

#endif /* CONVFIND_TOOLS_CLI_COMMON_H */
