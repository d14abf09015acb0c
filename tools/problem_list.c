/*
 * problem_list.c - reading problem files in their three formats (see problem_list.h).
 *
 * The key=value format is strict for the same reason the flags are: a typo that fell
 * back to a default would tune a different problem than the one the runtime will
 * create, and the stored decision would never be found.
 */
#include "problem_list.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "layers.h"
#include "miopen.h"

enum {
    K_NAME, K_COUNT, K_OP, K_X, K_W, K_GROUP, K_PADS, K_STRIDES, K_DILATIONS, K_KERNEL_SHAPE,
    K_AUTO_PAD, K_OUTPUT_PADDING, K_OUTPUT_SHAPE, K_BIAS, K_RESIDUAL, K_ACT, K_ALPHA, K_BETA,
    K_LAYOUT, K_DTYPE, K_MATH, K_WEIGHTS, K_COUNT_OF_KEYS
};

static const char *const keys[K_COUNT_OF_KEYS] = {
    "name", "count", "op", "x", "w", "group", "pads", "strides", "dilations", "kernel_shape",
    "auto_pad", "output_padding", "output_shape", "bias", "residual", "act", "alpha", "beta",
    "layout", "dtype", "math", "weights"};

static const char *const zero_one[] = {"0", "1", NULL};
static const char *const weights_names[] = {"const", "var", NULL};

static int bad(char *err, size_t errsize, int key, const char *fmt, const char *value)
{
    char what[300];
    snprintf(what, sizeof what, fmt, value);
    snprintf(err, errsize, "key '%s': %s", keys[key], what);
    return -1;
}

static int int_value(int key, const char *v, int64_t min, int64_t *out, char *err,
                     size_t errsize)
{
    if (!cli_int64_from_span(v, strlen(v), out))
        return bad(err, errsize, key, "'%.60s' is not an integer", v);
    if (*out < min) {
        char m[32];
        snprintf(m, sizeof m, "%lld", (long long)min);
        snprintf(err, errsize, "key '%s': %lld must be at least %s", keys[key], (long long)*out,
                 m);
        return -1;
    }
    return 0;
}

static int list_value(int key, const char *v, int max_count, convfind_ints *out, char *err,
                      size_t errsize)
{
    char why[300];
    if (cli_parse_int_list_quiet(v, out, why, sizeof why) != 0)
        return bad(err, errsize, key, "%s", why);
    if (out->count > max_count) {
        snprintf(err, errsize, "key '%s': %d values, at most %d", keys[key], out->count,
                 max_count);
        return -1;
    }
    return 0;
}

static int choice_value(int key, const char *v, const char *const *choices, int *out,
                        char *err, size_t errsize)
{
    char why[300];
    if (cli_parse_choice_quiet(v, choices, out, why, sizeof why) != 0)
        return bad(err, errsize, key, "%s", why);
    return 0;
}

/* Applies one key's value to `p`. */
static int apply_key(int key, const char *v, cli_problem *p, float *params, char *err,
                     size_t errsize)
{
    convfind_conv_desc *d = &p->desc;
    int c;
    convfind_ints list;
    switch (key) {
    case K_NAME:
        /* A label: a model's long node name is kept as far as it fits. */
        snprintf(p->name, sizeof p->name, "%s", v);
        return 0;
    case K_COUNT:
        return int_value(key, v, 1, &p->count, err, errsize);
    case K_GROUP:
        return int_value(key, v, INT64_MIN, &d->group, err, errsize);
    case K_X:
    case K_W:
        if (list_value(key, v, CONVFIND_MAX_RANK, &list, err, errsize) != 0)
            return -1;
        memcpy(key == K_X ? d->x_dims : d->w_dims, list.v, sizeof(int64_t) * (size_t)list.count);
        *(key == K_X ? &d->x_rank : &d->w_rank) = list.count;
        return 0;
    case K_PADS:
        return list_value(key, v, 2 * CONVFIND_MAX_SPATIAL, &d->pads, err, errsize);
    case K_STRIDES:
        return list_value(key, v, CONVFIND_MAX_SPATIAL, &d->strides, err, errsize);
    case K_DILATIONS:
        return list_value(key, v, CONVFIND_MAX_SPATIAL, &d->dilations, err, errsize);
    case K_KERNEL_SHAPE:
        return list_value(key, v, CONVFIND_MAX_SPATIAL, &d->kernel_shape, err, errsize);
    case K_OUTPUT_PADDING:
        return list_value(key, v, CONVFIND_MAX_SPATIAL, &d->output_padding, err, errsize);
    case K_OUTPUT_SHAPE:
        return list_value(key, v, CONVFIND_MAX_SPATIAL, &d->output_shape, err, errsize);
    case K_ALPHA:
    case K_BETA:
        if (cli_parse_float_quiet(v, strlen(v), &params[key - K_ALPHA]) != 0)
            return bad(err, errsize, key, "'%.60s' is not a float32 number", v);
        return 0;
    default:
        break;
    }
    static const char *const *const choice_of[K_COUNT_OF_KEYS] = {
        [K_OP] = cli_op_names,          [K_AUTO_PAD] = cli_auto_pad_names,
        [K_BIAS] = zero_one,            [K_RESIDUAL] = zero_one,
        [K_ACT] = cli_activation_names, [K_LAYOUT] = cli_layout_names,
        [K_DTYPE] = cli_dtype_names,    [K_MATH] = cli_math_names,
        [K_WEIGHTS] = weights_names,
    };
    if (choice_value(key, v, choice_of[key], &c, err, errsize) != 0)
        return -1;
    switch (key) {
    case K_OP: d->op = (convfind_op)c; break;
    case K_AUTO_PAD: d->auto_pad = (convfind_auto_pad)c; break;
    case K_BIAS: d->has_bias = c; break;
    case K_RESIDUAL: d->has_residual = c; break;
    case K_ACT: d->activation = (convfind_activation)c; break;
    case K_LAYOUT: d->layout = (convfind_layout)c; break;
    case K_DTYPE: d->dtype = (convfind_dtype)c; break;
    case K_MATH: d->math_mode = (convfind_math_mode)c; break;
    default: p->weights = c == 0 ? CLI_WEIGHTS_CONST : CLI_WEIGHTS_VAR; break;
    }
    return 0;
}

/* alpha= and beta= belong to the activation: its ONNX defaults, or the values given
 * where it takes them; given to one that does not take them, an error. */
static int activation_params(const bool *seen, const float *params, convfind_conv_desc *d,
                             char *err, size_t errsize)
{
    const char *name = cli_activation_names[d->activation];
    convfind_activation act;
    int nparams;
    if (!cli_activation_defaults(name, strlen(name), &act, &nparams, &d->alpha, &d->beta))
        return -1;
    for (int k = K_ALPHA; k <= K_BETA; k++) {
        if (!seen[k])
            continue;
        if (k - K_ALPHA >= nparams) {
            snprintf(err, errsize, "key '%s': act=%s takes %s", keys[k], name,
                     nparams == 0 ? "no parameters" : "alpha only");
            return -1;
        }
        *(k == K_ALPHA ? &d->alpha : &d->beta) = params[k - K_ALPHA];
    }
    return 0;
}

int cli_problem_parse(char *line, const char *default_name, cli_problem *p, char *err,
                      size_t errsize)
{
    memset(p, 0, sizeof *p);
    convfind_conv_desc_init(&p->desc);
    p->count = 1;
    snprintf(p->name, sizeof p->name, "%s", default_name);
    bool seen[K_COUNT_OF_KEYS] = {false};
    float params[2] = {0, 0};
    int tokens = 0;
    /* A comment starts with a token that starts with '#': a '#' inside a value (a node
     * name "conv#2") is part of it. */
    for (char *save = NULL, *t = strtok_r(line, " \t", &save); t && t[0] != '#';
         t = strtok_r(NULL, " \t", &save), tokens++) {
        char *eq = strchr(t, '=');
        if (!eq) {
            snprintf(err, errsize, "'%.60s' is not key=value", t);
            return -1;
        }
        *eq = '\0';
        int key = 0;
        while (key < K_COUNT_OF_KEYS && strcmp(t, keys[key]) != 0)
            key++;
        if (key == K_COUNT_OF_KEYS) {
            snprintf(err, errsize, "unknown key '%.40s'", t);
            return -1;
        }
        if (seen[key]) {
            snprintf(err, errsize, "key '%s' given twice", keys[key]);
            return -1;
        }
        seen[key] = true;
        if (apply_key(key, eq + 1, p, params, err, errsize) != 0)
            return -1;
    }
    if (tokens == 0)
        return 1;
    if (!seen[K_X] || !seen[K_W]) {
        snprintf(err, errsize, "key '%s' is required", seen[K_X] ? "w" : "x");
        return -1;
    }
    return activation_params(seen, params, &p->desc, err, errsize);
}

static cli_problem *push(cli_problem_list *l)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 32;
        cli_problem *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return NULL;
        l->v = v;
        l->cap = cap;
    }
    return &l->v[l->n++];
}

typedef enum format { FORMAT_UNKNOWN, FORMAT_CSV, FORMAT_LIST, FORMAT_MIOPEN } format;

/* The format of a file, from its first significant line. */
static format detect(const char *line)
{
    if (cli_layers_is_header(line))
        return FORMAT_CSV;
    size_t word = strcspn(line, " \t");
    return memchr(line, '=', word) ? FORMAT_LIST : FORMAT_MIOPEN;
}

/* One significant line of a file of format `f` into `p`; `h` is a CSV file's header. */
static int parse_line(format f, char *line, long lineno, const cli_layers_header *h,
                      cli_problem *p, char *err, size_t errsize)
{
    char name[32];
    snprintf(name, sizeof name, "line%ld", lineno);
    if (f == FORMAT_LIST)
        return cli_problem_parse(line, name, p, err, errsize) < 0 ? -1 : 0;
    memset(p, 0, sizeof *p);
    p->count = 1;
    if (f == FORMAT_MIOPEN)
        return cli_miopen_line(line, &p->desc, p->name, sizeof p->name, err, errsize);
    cli_layer layer;
    if (cli_layer_parse(line, h, &layer, err, errsize) != 0)
        return -1;
    snprintf(p->name, sizeof p->name, "%s", layer.name);
    p->count = layer.count;
    cli_layer_desc(&layer, &p->desc);
    return 0;
}

int cli_problems_read(cli_lines *r, cli_problem_list *list, char *err, size_t errsize)
{
    format f = FORMAT_UNKNOWN;
    cli_layers_header header = {0};
    size_t before = list->n;
    char *line, why[400];
    int got;
    while ((got = cli_lines_next(r, &line, why, sizeof why)) > 0) {
        while (isspace((unsigned char)*line))
            line++;
        if (*line == '\0' || *line == '#')
            continue;
        if (f == FORMAT_UNKNOWN && (f = detect(line)) == FORMAT_CSV) {
            if (cli_layers_header_parse(line, &header, why, sizeof why) == 0)
                continue;
            got = -1;
            break;
        }
        cli_problem *p = push(list);
        if (!p) {
            snprintf(why, sizeof why, "out of memory");
            got = -1;
            break;
        }
        if (parse_line(f, line, r->lineno, &header, p, why, sizeof why) != 0) {
            list->n--;
            got = -1;
            break;
        }
    }
    if (got < 0) {
        snprintf(err, errsize, "%s:%ld: %s", r->name, r->lineno, why);
        return -1;
    }
    if (list->n == before) {
        snprintf(err, errsize, "%s: no problems in it", r->name);
        return -1;
    }
    return 0;
}

int cli_problems_read_file(const char *path, cli_problem_list *list, char *err,
                           size_t errsize)
{
    cli_lines *r = malloc(sizeof *r);
    if (!r) {
        snprintf(err, errsize, "%s: out of memory", path);
        return -1;
    }
    int rc = cli_lines_open(r, path, err, errsize);
    if (rc == 0)
        rc = cli_problems_read(r, list, err, errsize);
    cli_lines_close(r);
    free(r);
    return rc;
}

void cli_problems_free(cli_problem_list *list)
{
    free(list->v);
    memset(list, 0, sizeof *list);
}
