/*
 * miopen.h - MIOpenDriver's conv command line as a convfind problem, for `find`,
 * `tune` and the MIOpenDriver lines of problem files.
 *
 * The flags themselves are in the one flag table (cli_args.c) with MIOpenDriver's
 * letters, names and defaults; this turns their values into an ONNX description:
 * "conv", "convfp16" and "convbfp16" give the data type, -m trans a ConvTranspose
 * (weights C x K/G x ...), pads are symmetric, -z same is ONNX SAME_UPPER, -I NHWC the
 * channels-last layout.  What convfind cannot compute (no forward direction in -F, a
 * padding value other than 0, vectorized tensors, a filter layout other than ONNX's,
 * other data types) is an error naming the flag.
 */
#ifndef CONVFIND_TOOLS_MIOPEN_H
#define CONVFIND_TOOLS_MIOPEN_H

#include <stdbool.h>
#include <stddef.h>

#include "cli_args.h"

/* The MIOpenDriver flags that describe the problem, and those that steer the driver,
 * as -1-terminated lists for command sections. */
extern const int cli_miopen_problem_flags[];
extern const int cli_miopen_driver_flags[];

/* True when any MIOpenDriver flag was given. */
bool cli_miopen_flags_given(const cli_args *a);

/* The positional words of a pasted MIOpenDriver line, `words[0..n)`: an optional
 * program (a path ending in MIOpenDriver) and the command word.  *dtype gets the
 * command word's data type; *found is false when there are none.  0, or -1 with the
 * reason in err. */
int cli_miopen_words(char *const *words, int n, bool *found, convfind_dtype *dtype, char *err,
                     size_t errsize);

/* The problem of the MIOpenDriver flags in `a` with data type `dtype`, into `d` (which
 * this initialises); bias and residual are the caller's.  0, or -1 with the reason in
 * err. */
int cli_miopen_desc(const cli_args *a, convfind_dtype dtype, convfind_conv_desc *d, char *err,
                    size_t errsize);

/* One MIOpenDriver line of a file (changed in place): whatever precedes the command word
 * (a log prefix, the program) is skipped; flags that only steer the driver are accepted
 * and have no effect.  Fills `d` and a name made of the shape.  0, or -1 with the reason
 * in err. */
int cli_miopen_line(char *line, convfind_conv_desc *d, char *name, size_t namesize, char *err,
                    size_t errsize);

#endif /* CONVFIND_TOOLS_MIOPEN_H */
