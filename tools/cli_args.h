/*
 * cli_args.h - the one command line of every convfind command: one table of every
 * flag, one struct every command parses into, one parser, and the command table entry.
 *
 * A flag is defined once, in cli_flags (cli_args.c), with one name, one value syntax
 * and one meaning; a command only lists which flags it takes (its sections).  So the
 * same flag cannot mean two things in two commands, and `help`, the man pages and the
 * bash completion are all printed from the same definitions (cli_help.c).  Options may
 * come before or after positional arguments; "--" ends the options.
 *
 * MIOpenDriver's conv flags are part of the table with MIOpenDriver's meanings (its
 * short letters -n -c -H -W ... and long names --in_channels ...), so a pasted
 * MIOpenDriver line describes the same problem to `find` and `tune` as it did to the
 * driver (miopen.c turns them into a problem).
 */
#ifndef CONVFIND_TOOLS_CLI_ARGS_H
#define CONVFIND_TOOLS_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convfind.h"

/* Every flag of every command.  The order is the order of `help` within a section. */
typedef enum cli_flag_id {
    /* the context */
    CLI_DB, CLI_SYSTEM_DB, CLI_FLEET, CLI_THREADS, CLI_DEVICE, CLI_WORKSPACE, CLI_BUDGET_MS,
    CLI_POLICY, CLI_ENV_POLICY, CLI_RETUNE,
    /* output */
    CLI_JSON, CLI_PROGRESS,
    /* a problem in ONNX terms */
    CLI_X_SHAPE, CLI_W_SHAPE, CLI_OP, CLI_DTYPE, CLI_LAYOUT, CLI_MATH, CLI_PADS, CLI_STRIDES,
    CLI_DILATIONS, CLI_GROUP, CLI_KERNEL_SHAPE, CLI_AUTO_PAD, CLI_OUTPUT_PADDING,
    CLI_OUTPUT_SHAPE, CLI_BIAS, CLI_RESIDUAL, CLI_ACTIVATION,
    /* run's files */
    CLI_INPUT, CLI_WEIGHTS, CLI_BIAS_FILE, CLI_RESIDUAL_FILE, CLI_OUTPUT, CLI_ALGO,
    /* tune */
    CLI_INPUT_SHAPE,
    /* demo */
    CLI_LAYERS, CLI_REPEATS,
    /* help */
    CLI_MAN, CLI_BASH_COMPLETION, CLI_COMMANDS,
    /* MIOpenDriver conv flags that describe the problem */
    CLI_M_FORW, CLI_M_N, CLI_M_C, CLI_M_H, CLI_M_W, CLI_M_K, CLI_M_Y, CLI_M_X, CLI_M_P,
    CLI_M_Q, CLI_M_U, CLI_M_V, CLI_M_L, CLI_M_J, CLI_M_G, CLI_M_SPATIAL_DIM, CLI_M_IN_D,
    CLI_M_FIL_D, CLI_M_PAD_D, CLI_M_STRIDE_D, CLI_M_DIL_D, CLI_M_OPAD_D, CLI_M_OPAD_H,
    CLI_M_OPAD_W, CLI_M_MODE, CLI_M_PAD_MODE, CLI_M_IN_LAYOUT, CLI_M_OUT_LAYOUT,
    CLI_M_FIL_LAYOUT, CLI_M_PAD_VAL, CLI_M_TENSOR_VECT, CLI_M_VECTOR_LENGTH,
    /* MIOpenDriver conv flags that steer the driver itself */
    CLI_M_VERIFY, CLI_M_TIME, CLI_M_ITER, CLI_M_WALL, CLI_M_SEARCH, CLI_M_PRINTCONV,
    CLI_M_DUMP_OUTPUT, CLI_M_SOLUTION, CLI_M_GPUALLOC,
    CLI_FLAG_COUNT
} cli_flag_id;

/* The value of integer MIOpenDriver flag `id` (CLI_M_...) in a cli_args. */
#define CLI_MIO(a, id) ((a)->mio[(id) - CLI_M_FORW])
#define CLI_MAX_INPUT_SHAPES 16

/* Everything any command can be told.  cli_args_init sets the defaults. */
typedef struct cli_args {
    int given[CLI_FLAG_COUNT]; /* how often each flag was given */
    char **pos;                /* positional arguments, in order (into argv) */
    int npos;
    /* the context */
    const char *db, *system_db, *fleet;
    int threads;
    convfind_device device;
    int device_index;
    int64_t workspace;
    int budget_ms;
    int policy, env_policy, retune;
    /* output */
    int json, progress;
    /* the problem: ONNX flags write into desc; shapes, bias and residual separately */
    convfind_conv_desc desc;
    convfind_ints x_shape, w_shape;
    int bias, residual;
    /* MIOpenDriver */
    int64_t mio[CLI_FLAG_COUNT - CLI_M_FORW]; /* by CLI_MIO; MIOpenDriver's defaults */
    const char *mio_mode, *mio_pad_mode, *mio_in_layout, *mio_out_layout, *mio_fil_layout;
    const char *mio_solution;
    /* run */
    const char *input, *weights, *bias_file, *residual_file, *output, *algo;
    /* tune */
    const char *input_shapes[CLI_MAX_INPUT_SHAPES];
    int n_input_shapes;
    /* demo */
    const char *layers;
    int repeats;
    /* help */
    int man, bash_completion, commands;
} cli_args;

typedef struct cli_flag cli_flag;

/* Stores `value` (NULL for a switch) into `a`.  Returns 0, or prints a one-line error
 * naming the flag and the value and returns -1. */
typedef int (*cli_apply_fn)(const cli_flag *flag, cli_args *a, const char *value);

struct cli_flag {
    const char *name;    /* long name without "--" */
    char short_name;     /* single-dash letter, or 0 */
    const char *metavar; /* NULL: a switch without a value */
    const char *help;    /* the whole description: man-page text, one paragraph */
    cli_apply_fn apply;
    size_t offset;       /* field of cli_args, for the generic appliers */
    const char *const *choices; /* the values it accepts, for help and completion; NULL */
    bool repeatable;     /* may be given more than once (each value kept) */
};

extern const cli_flag cli_flags[CLI_FLAG_COUNT];

/* A titled group of flags in a command's help; `flags` ends with -1. */
typedef struct cli_section {
    const char *title;
    const int *flags;
} cli_section;

typedef struct cli_command {
    const char *name;
    const char *summary;     /* one line for `convfind --help` */
    const char *synopsis;    /* arguments after `convfind <name>`, one usage per line */
    const char *description; /* paragraphs separated by a blank line; a line that starts
                                with two spaces is printed as it is (examples, tables) */
    const cli_section *sections;
    int nsections;
    const char *examples;    /* one command line per line */
    const char *const *words; /* what its positional arguments may be (subcommands) for
                                 completion; NULL: files, or command names when
                                 words_are_commands */
    bool words_are_commands;
    int max_pos;             /* most positional arguments it takes (-1: any number); the
                                command checks what it needs */
    /* Runs the command on parsed arguments; returns the process exit status. */
    int (*run)(const struct cli_command *self, cli_args *a);
} cli_command;

/* Exit statuses of the tool: 0 success, 1 a runtime or library failure, 2 bad usage. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_FAILURE = 1, CLI_EXIT_USAGE = 2 };
enum { CLI_PARSED = 0, CLI_HELP_SHOWN = 1, CLI_BAD_USAGE = 2 };

/* The defaults: no flags given, ONNX defaults for the problem, CPU, hybrid policy. */
void cli_args_init(cli_args *a);

/* Parses argv[1..argc) for `cmd` into `a` (initialised by the caller): "--name value",
 * "--name=value", "-s value", positional arguments anywhere, "--" ending the options.
 * -h/--help prints the command's help and returns CLI_HELP_SHOWN.  An unknown flag, a
 * flag the command does not take, a missing or malformed value, a repeated flag (other
 * than a repeatable one) or more positional arguments than the command takes prints one
 * line and returns CLI_BAD_USAGE.  `argv` is reordered: the positionals end up in a->pos. */
int cli_parse(const cli_command *cmd, int argc, char **argv, cli_args *a);

/* True when `cmd` takes flag `id`. */
bool cli_command_takes(const cli_command *cmd, int id);

/* The flag whose long name is `name`, or -1. */
int cli_flag_by_name(const char *name);

/* The commands of the tool (convfind.c), NULL-terminated, and one by name. */
extern const cli_command *const cli_commands[];
const cli_command *cli_command_find(const char *name);

#endif /* CONVFIND_TOOLS_CLI_ARGS_H */
