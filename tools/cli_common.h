/*
 * cli_common.h - what every convfind command shares besides its flags: one-line error
 * messages, strict value parsers (integers, integer lists, choices, activations, byte
 * sizes) and the reordering between stored and logical dims of channels-last tensors.
 *
 * Results go to stdout, errors to stderr on exactly one line each (control characters
 * in a message, such as the newlines of a SQLite integrity report, become spaces).
 * Nothing here keeps state between calls.
 */
#ifndef CONVFIND_TOOLS_CLI_COMMON_H
#define CONVFIND_TOOLS_CLI_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli_args.h"
#include "convfind.h"

#if defined(__GNUC__)
#define CLI_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define CLI_PRINTF(fmt, args)
#endif

/* "convfind <cmd>: <message>" on stderr, one line.  Returns CLI_EXIT_USAGE. */
int cli_usage_error(const cli_command *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);

/* "convfind <cmd>: <message>" on stderr, one line.  Returns CLI_EXIT_FAILURE. */
int cli_failure(const cli_command *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);

/* "convfind: <status name>: <convfind_last_error()>" on stderr, one line.  Returns
 * CLI_EXIT_FAILURE.  Call it right after the failing library call, on the same thread. */
int cli_library_error(convfind_status status);

/* "convfind: <flag>: <message>" on stderr, one line: a flag value that does not parse. */
void cli_value_error(const char *flag, const char *fmt, ...) CLI_PRINTF(2, 3);

/* From now on the messages of the functions above (except cli_library_error) are not
 * printed but kept in `buf` (the first one, without the "convfind <cmd>" prefix), until
 * the next call; NULL ends it.  For parsing lines of a file, whose messages must name
 * the file and line.  Not thread-safe: the tool parses on one thread. */
void cli_capture_errors(char *buf, size_t size);
bool cli_capturing(void);

/* Replaces control characters of `s` by spaces. */
void cli_one_line(char *s);

/* Parses exactly the decimal integer spanning [text, text + len): an optional '-' and
 * digits, nothing else, in range.  Prints nothing; false if it is not one. */
bool cli_int64_from_span(const char *text, size_t len, int64_t *out);

/* Value parsers; `flag` only names the flag in the message.  Each returns 0, or prints
 * a one-line error and returns -1.  The *_quiet forms print nothing and write the
 * message to err instead (for problem files, whose messages name a line). */
int cli_parse_int64(const char *flag, const char *text, int64_t *out);
int cli_parse_int_list(const char *flag, const char *text, convfind_ints *out);
int cli_parse_choice(const char *flag, const char *text, const char *const *choices, int *out);
int cli_parse_float_quiet(const char *text, size_t len, float *out);
int cli_parse_int_list_quiet(const char *text, convfind_ints *out, char *err, size_t errsize);
int cli_parse_choice_quiet(const char *text, const char *const *choices, int *out, char *err,
                           size_t errsize);
/* "relu", "leaky_relu:ALPHA", "clip:MIN,MAX", "sigmoid", "tanh", "hard_sigmoid:A,B",
 * "none".  Parameters may be left out to get the ONNX defaults (LeakyRelu alpha 0.01,
 * HardSigmoid 0.2, 0.5, Clip unbounded). */
int cli_parse_activation(const char *flag, const char *text, convfind_activation *act,
                         float *alpha, float *beta);
/* The activation named `name` (no parameters) with its ONNX default parameters and the
 * number of parameters it takes; false for an unknown name. */
bool cli_activation_defaults(const char *name, size_t len, convfind_activation *act,
                             int *nparams, float *alpha, float *beta);

/* Names of the enum values, indexed by value, NULL-terminated. */
extern const char *const cli_op_names[];       /* conv, conv_transpose */
extern const char *const cli_dtype_names[];    /* f32, f16, bf16 */
extern const char *const cli_layout_names[];   /* nchw, nhwc */
extern const char *const cli_math_names[];     /* strict, tf32 */
extern const char *const cli_auto_pad_names[]; /* notset, same_upper, same_lower, valid */
extern const char *const cli_activation_names[]; /* none, relu, ... hard_sigmoid */

/* Converts between the order a tensor is stored in (for NHWC: N, spatial..., C) and the
 * logical ONNX order (N, C, spatial...) the library takes.  rank >= 2; in and out must
 * not alias. */
void cli_stored_to_logical(convfind_layout layout, int rank, const int64_t *stored,
                           int64_t *logical);
void cli_logical_to_stored(convfind_layout layout, int rank, const int64_t *logical,
                           int64_t *stored);

/* NULL when the context of `a` can run data type `dtype`, else why not: the CPU
 * backend computes f32 only.  For a clear error before the library's. */
const char *cli_dtype_unsupported(const cli_args *a, convfind_dtype dtype);

#endif /* CONVFIND_TOOLS_CLI_COMMON_H */
