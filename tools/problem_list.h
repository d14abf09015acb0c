/*
 * problem_list.h - the problem files `convfind tune` reads, in three formats, decided
 * per file by its first line that is not blank or a comment:
 *
 *   the problem list (docs/cli.md; python/convfind/onnx writes it), one problem per
 *   line, whitespace-separated key=value tokens with ONNX meanings, a token that starts
 *   with '#' starting a comment:
 *       name=res2a count=3 x=1,64,56,56 w=64,64,3,3 pads=1,1,1,1 bias=1 act=relu
 *     keys: name count op x w group pads strides dilations kernel_shape auto_pad
 *     output_padding output_shape bias residual act alpha beta layout dtype math weights;
 *     x and w are required (x in logical ONNX order, w in ONNX layout), absent keys take
 *     the ONNX defaults, an unknown key or a bad value is an error naming line and key;
 *   the suite CSV (layers.h) of the benchmark suites, recognised by its header (comma-separated
 *   column names): NCHW f32 Conv and ConvTranspose, 1-D to 3-D;
 *   MIOpenDriver command lines (miopen.h).
 *
 * Every format is read through the bounded line reader (textlines.h).  The reader is
 * the libFuzzer target tests/fuzz/fuzz_problem_list.c.
 */
#ifndef CONVFIND_TOOLS_PROBLEM_LIST_H
#define CONVFIND_TOOLS_PROBLEM_LIST_H

#include <stddef.h>
#include <stdint.h>

#include "convfind.h"
#include "textlines.h"

/* weights=: whether the weights are constant across executions (a model's
 * initializers) or change.  Part of the decision key (docs/key.md): `tune` decides the
 * constant-weights key for const and unspecified, the per-call key for var. */
typedef enum cli_weights {
    CLI_WEIGHTS_UNSPECIFIED = 0,
    CLI_WEIGHTS_CONST,
    CLI_WEIGHTS_VAR
} cli_weights;

typedef struct cli_problem {
    char name[256]; /* longer names are cut */
    int64_t count; /* how often it occurs in the network (default 1) */
    convfind_conv_desc desc;
    cli_weights weights;
} cli_problem;

typedef struct cli_problem_list {
    cli_problem *v;
    size_t n, cap;
} cli_problem_list;

/* Parses one line of the problem-list format (changed in place) into `p`, named
 * `default_name` unless it has name=.  0; 1 for a line with nothing but a comment or
 * blanks; -1 with "key 'K': reason" (or the offending token) in err. */
int cli_problem_parse(char *line, const char *default_name, cli_problem *p, char *err,
                      size_t errsize);

/* Appends every problem of the stream to `list`.  0, or -1 with "NAME:LINE: reason" in
 * err.  A stream without any problem is an error. */
int cli_problems_read(cli_lines *r, cli_problem_list *list, char *err, size_t errsize);

/* The same for a file ("-": standard input). */
int cli_problems_read_file(const char *path, cli_problem_list *list, char *err,
                           size_t errsize);

void cli_problems_free(cli_problem_list *list);

#endif /* CONVFIND_TOOLS_PROBLEM_LIST_H */
