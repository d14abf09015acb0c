/*
 * layers.c - reads the benchmark layer CSV files (see layers.h).
 *
 * The format is fixed and produced by the project itself, so the reader insists on
 * the exact header rather than guessing columns: a file with columns in another order
 * would otherwise run different convolutions than its author meant.
 */
#include "layers.h"

#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "textlines.h"

#define LAYER_HEADER \
    "name,count,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,dil_h,dil_w,group"
/* The same without `count` (every row counts once), as `convfind tune` accepts. */
#define LAYER_HEADER_NO_COUNT \
    "name,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,dil_h,dil_w,group"

/* The integer columns, in file order after `name`. */
static const struct {
    const char *name;
    size_t offset;
} int_columns[] = {
    {"count", offsetof(cli_layer, count)},     {"n", offsetof(cli_layer, n)},
    {"c", offsetof(cli_layer, c)},             {"h", offsetof(cli_layer, h)},
    {"w", offsetof(cli_layer, w)},             {"k", offsetof(cli_layer, k)},
    {"r", offsetof(cli_layer, r)},             {"s", offsetof(cli_layer, s)},
    {"pad_h", offsetof(cli_layer, pad_h)},     {"pad_w", offsetof(cli_layer, pad_w)},
    {"stride_h", offsetof(cli_layer, stride_h)}, {"stride_w", offsetof(cli_layer, stride_w)},
    {"dil_h", offsetof(cli_layer, dil_h)},     {"dil_w", offsetof(cli_layer, dil_w)},
    {"group", offsetof(cli_layer, group)},
};
#define INT_COLUMNS (sizeof int_columns / sizeof int_columns[0])

static int fail(char *err, size_t err_size, const char *fmt, ...) CLI_PRINTF(3, 4);

static int fail(char *err, size_t err_size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
    return -1;
}

bool cli_layers_header(const char *line, bool *has_count)
{
    *has_count = strcmp(line, LAYER_HEADER) == 0;
    return *has_count || strcmp(line, LAYER_HEADER_NO_COUNT) == 0;
}

int cli_layer_parse(char *line, long lineno, bool has_count, cli_layer *layer, char *err,
                    size_t err_size)
{
    memset(layer, 0, sizeof *layer);
    layer->count = 1;
    const size_t first = has_count ? 0 : 1, fields = INT_COLUMNS + 1 - first;
    char *field = line;
    char *comma = strchr(field, ',');
    size_t len = comma ? (size_t)(comma - field) : strlen(field);
    if (len == 0 || len >= CLI_LAYER_NAME_MAX)
        return fail(err, err_size, "line %ld: the layer name must have 1 to %d characters",
                    lineno, CLI_LAYER_NAME_MAX - 1);
    memcpy(layer->name, field, len);
    for (size_t i = first; i < INT_COLUMNS; i++) {
        if (!comma)
            return fail(err, err_size, "line %ld: %zu fields, expected %zu", lineno,
                        i + 1 - first, fields);
        field = comma + 1;
        comma = strchr(field, ',');
        len = comma ? (size_t)(comma - field) : strlen(field);
        int64_t v;
        if (!cli_int64_from_span(field, len, &v))
            return fail(err, err_size, "line %ld: %s '%.*s' is not an integer", lineno,
                        int_columns[i].name, (int)(len > 32 ? 32 : len), field);
        memcpy((char *)layer + int_columns[i].offset, &v, sizeof v);
    }
    if (comma)
        return fail(err, err_size, "line %ld: more than %zu fields", lineno, fields);
    if (layer->count < 1)
        return fail(err, err_size, "line %ld: count %lld must be >= 1", lineno,
                    (long long)layer->count);
    return 0;
}

int cli_layers_read(const char *path, cli_layer **layers, size_t *count, char *err,
                    size_t err_size)
{
    *layers = NULL;
    *count = 0;
    cli_lines r;
    if (cli_lines_open(&r, path, err, err_size) != 0)
        return fail(err, err_size, "cannot open: %s", strerror(errno));
    size_t cap = 0;
    bool has_count = true;
    char *line, why[300];
    int got, rc = 0;
    while (rc == 0 && (got = cli_lines_next(&r, &line, why, sizeof why)) != 0) {
        if (got < 0) {
            rc = fail(err, err_size, "line %ld: %s", r.lineno, why);
        } else if (r.lineno == 1) {
            if (!cli_layers_header(line, &has_count))
                rc = fail(err, err_size, "line 1: the header must be %s (count optional)",
                          LAYER_HEADER);
        } else if (line[0] != '\0') {
            if (*count == cap) {
                size_t next = cap ? 2 * cap : 32;
                cli_layer *grown = realloc(*layers, next * sizeof **layers);
                if (!grown) {
                    rc = fail(err, err_size, "line %ld: out of memory", r.lineno);
                    break;
                }
                *layers = grown;
                cap = next;
            }
            rc = cli_layer_parse(line, r.lineno, has_count, &(*layers)[*count], err, err_size);
            *count += rc == 0;
        }
    }
    if (rc == 0 && *count == 0)
        rc = fail(err, err_size, "line %ld: no layers in the file", r.lineno);
    cli_lines_close(&r);
    if (rc != 0) {
        free(*layers);
        *layers = NULL;
        *count = 0;
    }
    return rc;
}

void cli_layer_desc(const cli_layer *l, convfind_conv_desc *d)
{
    convfind_conv_desc_init(d);
    d->x_rank = d->w_rank = 4;
    const int64_t x[4] = {l->n, l->c, l->h, l->w};
    /* A group of 0 is the library's to reject; it must not divide by zero here first. */
    const int64_t w[4] = {l->k, l->group > 0 ? l->c / l->group : l->c, l->r, l->s};
    memcpy(d->x_dims, x, sizeof x);
    memcpy(d->w_dims, w, sizeof w);
    d->group = l->group;
    d->strides = (convfind_ints){2, {l->stride_h, l->stride_w}};
    d->dilations = (convfind_ints){2, {l->dil_h, l->dil_w}};
    d->pads = (convfind_ints){4, {l->pad_h, l->pad_w, l->pad_h, l->pad_w}};
}
