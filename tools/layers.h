/*
 * layers.h - network layer lists in the suite CSV format (docs/benchmarks.md, "Suite
 * format"): the files under data/suites/, data/resnet50_convs.csv and the demo's lists.
 *
 * The first line names the columns, in any order; only `name`, `n`, `c`, `k` and the
 * sizes a row's spatial rank uses are required, every other column may be left out (or
 * a field left empty) and takes its default.  Each further line is one Conv or
 * ConvTranspose (op=convT), 1-D to 3-D, NCHW fp32, with optional bias and fused
 * activation.  The 16-column layout
 *     name,count,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,dil_h,dil_w,group
 * is one instance.  bench/suite_format.py reads the same format for the benchmark; the
 * two readers accept the same files and give every row the same meaning, so a suite
 * tuned with `convfind tune` fills the database with the keys the benchmark looks up.
 *
 * The demo and the benchmark programs read whole files (cli_layers_read); `tune` reads
 * them row by row among its other problem formats (problem_list.h).
 */
#ifndef CONVFIND_TOOLS_LAYERS_H
#define CONVFIND_TOOLS_LAYERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convfind.h"

#define CLI_LAYER_NAME_MAX 128
/* More fields than there are distinct columns cannot be a valid header. */
#define CLI_LAYER_COLUMNS_MAX 32

/* One row.  Per-dimension arrays hold the row's `dims` values, outermost first; pads are
 * all begins, then all ends. */
typedef struct cli_layer {
    char name[CLI_LAYER_NAME_MAX];
    int64_t count;
    bool transpose; /* op=convT */
    int dims;       /* spatial rank, 1 to 3 */
    int64_t n, c, k, group;
    int64_t x[3], kern[3], stride[3], dil[3], pads[6], opad[3];
    bool bias;
    convfind_activation act;
    float alpha, beta;
} cli_layer;

/* The columns of a file, from its header: the column of each field, in file order. */
typedef struct cli_layers_header {
    int fields;
    signed char column[CLI_LAYER_COLUMNS_MAX];
} cli_layers_header;

/* Whether `line` (a file's first significant line) is meant as a suite header: its first
 * comma-separated field is a column name and it has no '='.  No line of the other problem
 * formats looks like that (a key=value token, a MIOpenDriver command with its flags). */
bool cli_layers_is_header(const char *line);

/* Parses a header line.  0, or -1 with the reason in err: an unknown or repeated column,
 * a required column missing, too many fields. */
int cli_layers_header_parse(const char *line, cli_layers_header *h, char *err,
                            size_t err_size);

/* Parses one data line (without its newline) into *layer.  0, or -1 with the reason in
 * err, naming the column ("stride_h 'x' is not an integer"), without the line number:
 * the callers name the line. */
int cli_layer_parse(const char *line, const cli_layers_header *h, cli_layer *layer,
                    char *err, size_t err_size);

/* Reads every row of the CSV file at `path` (blank lines and lines starting with '#'
 * skipped).  On success *layers (malloc'd, released by the caller with free) holds
 * *count >= 1 rows and 0 is returned.  On failure returns -1 with *layers NULL and a
 * one-line message in err ("line LINE: what is wrong"). */
int cli_layers_read(const char *path, cli_layer **layers, size_t *count, char *err,
                    size_t err_size);

/* The convfind_conv_desc of one row: NCHW fp32, W of shape k x c/group x kernel (Conv)
 * or c x k/group x kernel (ConvTranspose).  Values the format does not restrict are
 * passed on unchecked; convfind_problem_create validates them. */
void cli_layer_desc(const cli_layer *layer, convfind_conv_desc *desc);

#endif /* CONVFIND_TOOLS_LAYERS_H */
