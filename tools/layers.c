/*
 * layers.c - reads the suite CSV format (see layers.h).
 *
 * The header decides which field is which, so a row is first cut into one span per
 * column (empty: the column's default) and only then interpreted; the checks and the
 * messages follow bench/suite_format.py, the benchmark's reader of the same files.
 * There is no quoting: the format's names have no comma.
 */
#include "layers.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "textlines.h"

typedef enum column {
    COL_NAME, COL_COUNT, COL_OP, COL_DIMS, COL_N, COL_C, COL_K, COL_GROUP,
    COL_D, COL_H, COL_W,                   /* input sizes, outermost first */
    COL_T, COL_R, COL_S,                   /* kernel sizes, same order */
    COL_PAD_D, COL_PAD_H, COL_PAD_W, COL_PADS,
    COL_STRIDE_D, COL_STRIDE_H, COL_STRIDE_W,
    COL_DIL_D, COL_DIL_H, COL_DIL_W,
    COL_OPAD, COL_BIAS, COL_ACT, COL_ALPHA, COL_BETA,
    COLUMNS
} column;

/* Each column's name and the text an absent or empty field stands for (NULL: required;
 * "": required where the row's rank uses it). */
static const struct {
    const char *name, *absent;
} columns[COLUMNS] = {
    [COL_NAME] = {"name", NULL},       [COL_COUNT] = {"count", "1"},
    [COL_OP] = {"op", "conv"},         [COL_DIMS] = {"dims", "2"},
    [COL_N] = {"n", NULL},             [COL_C] = {"c", NULL},
    [COL_K] = {"k", NULL},             [COL_GROUP] = {"group", "1"},
    [COL_D] = {"d", ""},               [COL_H] = {"h", ""},
    [COL_W] = {"w", ""},               [COL_T] = {"t", ""},
    [COL_R] = {"r", ""},               [COL_S] = {"s", ""},
    [COL_PAD_D] = {"pad_d", "0"},      [COL_PAD_H] = {"pad_h", "0"},
    [COL_PAD_W] = {"pad_w", "0"},      [COL_PADS] = {"pads", ""},
    [COL_STRIDE_D] = {"stride_d", "1"}, [COL_STRIDE_H] = {"stride_h", "1"},
    [COL_STRIDE_W] = {"stride_w", "1"}, [COL_DIL_D] = {"dil_d", "1"},
    [COL_DIL_H] = {"dil_h", "1"},      [COL_DIL_W] = {"dil_w", "1"},
    [COL_OPAD] = {"output_padding", ""}, [COL_BIAS] = {"bias", "0"},
    [COL_ACT] = {"act", "none"},       [COL_ALPHA] = {"alpha", "0"},
    [COL_BETA] = {"beta", "0"},
};

/* The columns of one spatial axis (0: d, 1: h, 2: w); per_axis[i] + axis. */
static const column per_axis[] = {COL_D, COL_T, COL_PAD_D, COL_STRIDE_D, COL_DIL_D};

static int fail(char *err, size_t err_size, const char *fmt, ...) CLI_PRINTF(3, 4);

static int fail(char *err, size_t err_size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
    return -1;
}

/* A piece of a line: the text of one field without its surrounding blanks. */
typedef struct span {
    const char *p;
    size_t len;
} span;

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static span trimmed(const char *p, size_t len)
{
    while (len > 0 && is_blank(*p))
        p++, len--;
    while (len > 0 && is_blank(p[len - 1]))
        len--;
    return (span){p, len};
}

/* Cuts `line` at commas into at most `max` spans; the number of fields, or max + 1 when
 * there are more. */
static int split(const char *line, span *out, int max)
{
    int n = 0;
    for (;;) {
        const char *comma = strchr(line, ',');
        size_t len = comma ? (size_t)(comma - line) : strlen(line);
        if (n == max)
            return max + 1;
        out[n++] = trimmed(line, len);
        if (!comma)
            return n;
        line = comma + 1;
    }
}

static int column_of(span s)
{
    for (int c = 0; c < COLUMNS; c++)
        if (strlen(columns[c].name) == s.len && memcmp(columns[c].name, s.p, s.len) == 0)
            return c;
    return -1;
}

static bool span_is(span s, const char *text)
{
    return s.len == strlen(text) && memcmp(s.p, text, s.len) == 0;
}

bool cli_layers_is_header(const char *line)
{
    span first[1];
    split(line, first, 1);
    return !strchr(line, '=') && column_of(first[0]) >= 0;
}

int cli_layers_header_parse(const char *line, cli_layers_header *h, char *err,
                            size_t err_size)
{
    span f[CLI_LAYER_COLUMNS_MAX];
    int n = split(line, f, CLI_LAYER_COLUMNS_MAX);
    if (n > CLI_LAYER_COLUMNS_MAX)
        return fail(err, err_size, "the header has more than %d columns",
                    CLI_LAYER_COLUMNS_MAX);
    bool seen[COLUMNS] = {false};
    for (int i = 0; i < n; i++) {
        int c = column_of(f[i]);
        if (c < 0)
            return fail(err, err_size, "unknown column '%.*s' (docs/benchmarks.md lists them)",
                        (int)(f[i].len > 40 ? 40 : f[i].len), f[i].p);
        if (seen[c])
            return fail(err, err_size, "column '%s' appears twice", columns[c].name);
        seen[c] = true;
        h->column[i] = (signed char)c;
    }
    for (int c = 0; c < COLUMNS; c++)
        if (!columns[c].absent && !seen[c])
            return fail(err, err_size, "the header lacks the required column '%s'",
                        columns[c].name);
    h->fields = n;
    return 0;
}

/* One row's fields by column; an absent column and an empty field read as its default. */
typedef struct row {
    span v[COLUMNS];
} row;

static span field(const row *r, column c)
{
    if (r->v[c].len > 0)
        return r->v[c];
    const char *d = columns[c].absent ? columns[c].absent : "";
    return (span){d, strlen(d)};
}

static int int_field(const row *r, column c, int64_t low, int64_t *out, char *err,
                     size_t err_size)
{
    span s = field(r, c);
    if (!cli_int64_from_span(s.p, s.len, out))
        return fail(err, err_size, "%s '%.*s' is not an integer", columns[c].name,
                    (int)(s.len > 32 ? 32 : s.len), s.p);
    if (*out < low)
        return fail(err, err_size, "%s %lld must be >= %lld", columns[c].name,
                    (long long)*out, (long long)low);
    return 0;
}

/* A space-separated list of `want` integers >= 0 (pads, output_padding). */
static int int_list(const row *r, column c, int want, int64_t *out, char *err,
                    size_t err_size)
{
    span s = field(r, c);
    int got = 0;
    size_t i = 0;
    while (i < s.len) {
        size_t j = i;
        while (j < s.len && !is_blank(s.p[j]))
            j++;
        int64_t v;
        if (got == want || !cli_int64_from_span(s.p + i, j - i, &v) || v < 0)
            return fail(err, err_size, "%s '%.*s' must be %d integers >= 0, separated by "
                        "spaces", columns[c].name, (int)(s.len > 40 ? 40 : s.len), s.p, want);
        out[got++] = v;
        for (i = j; i < s.len && is_blank(s.p[i]);)
            i++;
    }
    if (got != want)
        return fail(err, err_size, "%s has %d values, a %d-D layer needs %d",
                    columns[c].name, got, want / (c == COL_PADS ? 2 : 1), want);
    return 0;
}

/* The spatial columns: those of axes the row lacks must be absent, empty or at their
 * default (a `d` on a 2-D row is a mistake, not something to ignore). */
static int spatial(const row *r, cli_layer *l, char *err, size_t err_size)
{
    const int first = 3 - l->dims;
    for (int a = 0; a < first; a++)
        for (size_t i = 0; i < sizeof per_axis / sizeof per_axis[0]; i++) {
            column c = (column)(per_axis[i] + a);
            if (r->v[c].len > 0 && !span_is(r->v[c], columns[c].absent))
                return fail(err, err_size, "%s given for a %d-D layer", columns[c].name,
                            l->dims);
        }
    for (int j = 0; j < l->dims; j++) {
        const int a = first + j;
        if (r->v[COL_D + a].len == 0 || r->v[COL_T + a].len == 0)
            return fail(err, err_size, "%s is required for a %d-D layer",
                        columns[r->v[COL_D + a].len == 0 ? COL_D + a : COL_T + a].name,
                        l->dims);
        if (int_field(r, (column)(COL_D + a), 1, &l->x[j], err, err_size) ||
            int_field(r, (column)(COL_T + a), 1, &l->kern[j], err, err_size) ||
            int_field(r, (column)(COL_STRIDE_D + a), 1, &l->stride[j], err, err_size) ||
            int_field(r, (column)(COL_DIL_D + a), 1, &l->dil[j], err, err_size))
            return -1;
        if (r->v[COL_PADS].len == 0) {
            if (int_field(r, (column)(COL_PAD_D + a), 0, &l->pads[j], err, err_size))
                return -1;
            l->pads[l->dims + j] = l->pads[j];
        }
    }
    if (r->v[COL_PADS].len > 0 && int_list(r, COL_PADS, 2 * l->dims, l->pads, err, err_size))
        return -1;
    if (r->v[COL_OPAD].len > 0) {
        if (int_list(r, COL_OPAD, l->dims, l->opad, err, err_size))
            return -1;
        for (int j = 0; j < l->dims && !l->transpose; j++)
            if (l->opad[j] != 0)
                return fail(err, err_size, "output_padding is for op=convT only");
    }
    return 0;
}

static int epilogue(const row *r, cli_layer *l, char *err, size_t err_size)
{
    int64_t bias;
    if (int_field(r, COL_BIAS, 0, &bias, err, err_size))
        return -1;
    if (bias > 1)
        return fail(err, err_size, "bias %lld must be 0 or 1", (long long)bias);
    l->bias = bias == 1;
    span act = field(r, COL_ACT);
    int known = 0;
    for (; cli_activation_names[known] && !span_is(act, cli_activation_names[known]); known++)
        ;
    if (!cli_activation_names[known])
        return fail(err, err_size, "act '%.*s' is not one of none, relu, leaky_relu, clip, "
                    "sigmoid, tanh, hard_sigmoid", (int)(act.len > 32 ? 32 : act.len), act.p);
    l->act = (convfind_activation)known;
    /* Unlike the problem list, the format gives alpha and beta as written (default 0),
     * not the activation's ONNX defaults: the benchmark reads them the same way. */
    const column params[2] = {COL_ALPHA, COL_BETA};
    float *to[2] = {&l->alpha, &l->beta};
    for (int i = 0; i < 2; i++) {
        span s = field(r, params[i]);
        if (cli_parse_float_quiet(s.p, s.len, to[i]) != 0)
            return fail(err, err_size, "%s '%.*s' is not a number", columns[params[i]].name,
                        (int)(s.len > 32 ? 32 : s.len), s.p);
    }
    return 0;
}

int cli_layer_parse(const char *line, const cli_layers_header *h, cli_layer *l, char *err,
                    size_t err_size)
{
    memset(l, 0, sizeof *l);
    span f[CLI_LAYER_COLUMNS_MAX];
    int n = split(line, f, h->fields);
    if (n != h->fields)
        return fail(err, err_size, "%s%d fields, expected %d", n > h->fields ? "more than " : "",
                    n > h->fields ? h->fields : n, h->fields);
    row r;
    memset(&r, 0, sizeof r);
    for (int i = 0; i < n; i++)
        r.v[h->column[i]] = f[i];
    span name = r.v[COL_NAME];
    if (name.len == 0 || name.len >= CLI_LAYER_NAME_MAX)
        return fail(err, err_size, "the layer name must have 1 to %d characters",
                    CLI_LAYER_NAME_MAX - 1);
    memcpy(l->name, name.p, name.len);
    span op = field(&r, COL_OP);
    if (!span_is(op, "conv") && !span_is(op, "convT"))
        return fail(err, err_size, "op '%.*s' is not conv or convT",
                    (int)(op.len > 32 ? 32 : op.len), op.p);
    l->transpose = span_is(op, "convT");
    int64_t dims;
    if (int_field(&r, COL_DIMS, 1, &dims, err, err_size))
        return -1;
    if (dims > 3)
        return fail(err, err_size, "dims %lld must be 1, 2 or 3", (long long)dims);
    l->dims = (int)dims;
    if (int_field(&r, COL_COUNT, 1, &l->count, err, err_size) ||
        int_field(&r, COL_N, 1, &l->n, err, err_size) ||
        int_field(&r, COL_C, 1, &l->c, err, err_size) ||
        int_field(&r, COL_K, 1, &l->k, err, err_size) ||
        int_field(&r, COL_GROUP, 1, &l->group, err, err_size))
        return -1;
    /* W's shape is derived by dividing by the group: a remainder would silently make it
     * another convolution (for ConvTranspose one the library would accept). */
    if (l->c % l->group != 0 || l->k % l->group != 0)
        return fail(err, err_size, "group %lld does not divide c %lld and k %lld",
                    (long long)l->group, (long long)l->c, (long long)l->k);
    if (spatial(&r, l, err, err_size) != 0)
        return -1;
    return epilogue(&r, l, err, err_size);
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
    cli_layers_header h;
    bool have_header = false;
    char *line, why[300];
    int got, rc = 0;
    while (rc == 0 && (got = cli_lines_next(&r, &line, why, sizeof why)) != 0) {
        while (got > 0 && is_blank(*line))
            line++;
        if (got < 0) {
            rc = fail(err, err_size, "line %ld: %s", r.lineno, why);
        } else if (*line == '\0' || *line == '#') {
            continue;
        } else if (!have_header) {
            if (cli_layers_header_parse(line, &h, why, sizeof why) != 0)
                rc = fail(err, err_size, "line %ld: %s", r.lineno, why);
            have_header = true;
        } else {
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
            rc = cli_layer_parse(line, &h, &(*layers)[*count], why, sizeof why);
            if (rc != 0)
                fail(err, err_size, "line %ld: %s", r.lineno, why);
            *count += rc == 0;
        }
    }
    if (rc == 0 && *count == 0)
        rc = fail(err, err_size, "line %ld: %s", r.lineno,
                  have_header ? "no layers in the file" : "no header line");
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
    const int nd = l->dims;
    d->op = l->transpose ? CONVFIND_OP_CONV_TRANSPOSE : CONVFIND_OP_CONV;
    d->x_rank = d->w_rank = nd + 2;
    d->x_dims[0] = l->n;
    d->x_dims[1] = l->c;
    /* W: Conv M x C/group x kernel, ConvTranspose C x M/group x kernel. */
    d->w_dims[0] = l->transpose ? l->c : l->k;
    d->w_dims[1] = (l->transpose ? l->k : l->c) / l->group;
    d->group = l->group;
    d->strides.count = d->dilations.count = nd;
    d->pads.count = 2 * nd;
    for (int j = 0; j < nd; j++) {
        d->x_dims[2 + j] = l->x[j];
        d->w_dims[2 + j] = l->kern[j];
        d->strides.v[j] = l->stride[j];
        d->dilations.v[j] = l->dil[j];
        d->pads.v[j] = l->pads[j];
        d->pads.v[nd + j] = l->pads[nd + j];
    }
    if (l->transpose) {
        d->output_padding.count = nd;
        memcpy(d->output_padding.v, l->opad, (size_t)nd * sizeof l->opad[0]);
    }
    d->has_bias = l->bias;
    d->activation = l->act;
    d->alpha = l->alpha;
    d->beta = l->beta;
}
