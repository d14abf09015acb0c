/*
 * layers.h - network layer lists in the CSV format of data/resnet50_convs.csv.
 *
 * Each row is one forward Conv of a real network (columns
 * name,count,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,dil_h,dil_w,group; symmetric
 * pads; `count` is how often the shape occurs in the network; a file may leave the
 * column out, and then every row counts once).  The demo reads whole files; `tune`
 * reads them row by row among its other problem formats (problem_list.h), which is the
 * CSV's role now: a shorthand for the plain NCHW f32 Conv.
 */
#ifndef CONVFIND_TOOLS_LAYERS_H
#define CONVFIND_TOOLS_LAYERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convfind.h"

#define CLI_LAYER_NAME_MAX 64

typedef struct cli_layer {
    char name[CLI_LAYER_NAME_MAX];
    int64_t count;
    int64_t n, c, h, w, k, r, s;
    int64_t pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, group;
} cli_layer;

/* Reads every row of the CSV file at `path`.  On success *layers (malloc'd, released by
 * the caller with free) holds *count >= 1 rows and 0 is returned.  On failure returns
 * -1 with *layers NULL and a one-line message in err ("LINE: what is wrong") naming
 * the line and the offending field: a header other than the one above, a row with the
 * wrong number of fields, a field that is not an integer, an empty or too long name, a
 * count below 1, no rows at all, or a file that cannot be read. */
int cli_layers_read(const char *path, cli_layer **layers, size_t *count, char *err,
                    size_t err_size);

/* Whether `line` is one of the two headers; *has_count says which. */
bool cli_layers_header(const char *line, bool *has_count);

/* Parses one data line (without its newline) into *layer.  0, or -1 with
 * "line LINE: what is wrong" in err. */
int cli_layer_parse(char *line, long lineno, bool has_count, cli_layer *layer, char *err,
                    size_t err_size);

/* The convfind_conv_desc of one row: NCHW fp32 Conv, W of shape k x c/group x r x s.
 * Values are passed on unchecked; convfind_problem_create validates them. */
void cli_layer_desc(const cli_layer *layer, convfind_conv_desc *desc);

#endif /* CONVFIND_TOOLS_LAYERS_H */
