/*
 * cli_common.c - flag parsing, value parsing, the shared ONNX problem flags and error
 * printing for every convfind subcommand (see cli_common.h).
 *
 * Values are parsed strictly (the whole text must be consumed, no silent wrap-around)
 * because a CLI that reads "--strides 1,x" as "1" computes a different convolution
 * than the user asked for without saying so.  Range checks that belong to ONNX
 * semantics (group 0, negative pads, ...) are deliberately left to the library, so that
 * its status and message are what the user sees.
 */
#include "cli_common.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static void vprint_error(const char *prefix, const char *fmt, va_list ap)
{
    fprintf(stderr, "%s: ", prefix);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

static void value_error(const char *flag, const char *fmt, ...) CLI_PRINTF(2, 3);

static void value_error(const char *flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "convfind: %s: ", flag);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static int command_message(const cli_command *cmd, int code, const char *fmt, va_list ap)
{
    char prefix[80];
    snprintf(prefix, sizeof prefix, "convfind %s", cmd->name);
    vprint_error(prefix, fmt, ap);
    return code;
}

int cli_usage_error(const cli_command *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int code = command_message(cmd, CLI_EXIT_USAGE, fmt, ap);
    va_end(ap);
    return code;
}

int cli_failure(const cli_command *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int code = command_message(cmd, CLI_EXIT_FAILURE, fmt, ap);
    va_end(ap);
    return code;
}

int cli_library_error(convfind_status status)
{
    fprintf(stderr, "convfind: %s: %s\n", convfind_status_name(status), convfind_last_error());
    return CLI_EXIT_FAILURE;
}

/* ---- value parsers -------------------------------------------------------------- */

static bool ascii_iequal(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char ca = (*a >= 'A' && *a <= 'Z') ? (char)(*a - 'A' + 'a') : *a;
        char cb = (*b >= 'A' && *b <= 'Z') ? (char)(*b - 'A' + 'a') : *b;
        if (ca != cb)
            return false;
    }
    return *a == *b;
}

bool cli_int64_from_span(const char *text, size_t len, int64_t *out)
{
    char buf[32];
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, text, len);
    buf[len] = '\0';
    /* strtoll would skip leading blanks and accept "+"; neither is a typo to forgive. */
    if (!(buf[0] == '-' || (buf[0] >= '0' && buf[0] <= '9')))
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno != 0 || *end != '\0' || end == buf)
        return false;
    *out = (int64_t)v;
    return true;
}

int cli_parse_int64(const char *flag, const char *text, int64_t *out)
{
    if (!cli_int64_from_span(text, strlen(text), out)) {
        value_error(flag, "'%s' is not a 64-bit integer", text);
        return -1;
    }
    return 0;
}

int cli_parse_int_list(const char *flag, const char *text, convfind_ints *out)
{
    const int max = (int)(sizeof out->v / sizeof out->v[0]);
    convfind_ints list = {0, {0}};
    const char *p = text;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (list.count == max) {
            value_error(flag, "'%s' has more than %d values", text, max);
            return -1;
        }
        if (!cli_int64_from_span(p, len, &list.v[list.count])) {
            value_error(flag, "'%.*s' in '%s' is not an integer (expected a list like 1,2,3)",
                        (int)len, p, text);
            return -1;
        }
        list.count++;
        if (!comma)
            break;
        p = comma + 1;
    }
    *out = list;
    return 0;
}

static int parse_float(const char *flag, const char *text, size_t len, float *out)
{
    char buf[64];
    char *end = NULL;
    if (len > 0 && len < sizeof buf) {
        memcpy(buf, text, len);
        buf[len] = '\0';
        errno = 0;
        *out = strtof(buf, &end);
    }
    if (!end || *end != '\0' || end == buf || isspace((unsigned char)buf[0]) ||
        errno == ERANGE) {
        value_error(flag, "'%.*s' is not a float32 number", (int)len, text);
        return -1;
    }
    return 0;
}

int cli_parse_choice(const char *flag, const char *text, const cli_choice *choices, int *out)
{
    for (const cli_choice *c = choices; c->name; c++) {
        if (ascii_iequal(text, c->name)) {
            *out = c->value;
            return 0;
        }
    }
    char list[256];
    size_t len = 0;
    list[0] = '\0';
    for (const cli_choice *c = choices; c->name && len < sizeof list; c++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", c == choices ? "" : ", ",
                                c->name);
    value_error(flag, "unknown value '%s' (one of: %s)", text, list);
    return -1;
}

typedef struct activation_spec {
    const char *name;
    convfind_activation act;
    int nparams;
    float alpha, beta; /* ONNX defaults when the parameters are left out */
} activation_spec;

int cli_parse_activation(const char *flag, const char *text, convfind_activation *act,
                         float *alpha, float *beta)
{
    static const activation_spec specs[] = {
        {"none", CONVFIND_ACT_NONE, 0, 0.0f, 0.0f},
        {"relu", CONVFIND_ACT_RELU, 0, 0.0f, 0.0f},
        {"leaky_relu", CONVFIND_ACT_LEAKY_RELU, 1, 0.01f, 0.0f},
        {"clip", CONVFIND_ACT_CLIP, 2, -INFINITY, INFINITY},
        {"sigmoid", CONVFIND_ACT_SIGMOID, 0, 0.0f, 0.0f},
        {"tanh", CONVFIND_ACT_TANH, 0, 0.0f, 0.0f},
        {"hard_sigmoid", CONVFIND_ACT_HARD_SIGMOID, 2, 0.2f, 0.5f},
    };
    const char *colon = strchr(text, ':');
    size_t name_len = colon ? (size_t)(colon - text) : strlen(text);
    const activation_spec *spec = NULL;
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
        if (strlen(specs[i].name) == name_len && strncmp(text, specs[i].name, name_len) == 0)
            spec = &specs[i];
    if (!spec) {
        value_error(flag,
                    "unknown activation '%.*s' (one of: none, relu, leaky_relu:ALPHA, "
                    "clip:MIN,MAX, sigmoid, tanh, hard_sigmoid:ALPHA,BETA)",
                    (int)name_len, text);
        return -1;
    }
    float params[2] = {spec->alpha, spec->beta};
    if (colon) {
        const char *p = colon + 1;
        const char *comma = strchr(p, ',');
        int given = comma ? 2 : 1;
        if (given != spec->nparams) {
            value_error(flag, "'%s': %s takes %d parameter%s, got %d", text, spec->name,
                        spec->nparams, spec->nparams == 1 ? "" : "s",
                        comma && strchr(comma + 1, ',') ? 3 : given);
            return -1;
        }
        if (parse_float(flag, p, comma ? (size_t)(comma - p) : strlen(p), &params[0]) != 0)
            return -1;
        if (comma && parse_float(flag, comma + 1, strlen(comma + 1), &params[1]) != 0)
            return -1;
    }
    *act = spec->act;
    *alpha = params[0];
    *beta = params[1];
    return 0;
}

/* ---- appliers ------------------------------------------------------------------- */

static const char *flag_label(const cli_flag *flag, char *buf, size_t size)
{
    snprintf(buf, size, "--%s", flag->name);
    return buf;
}

int cli_apply_string(const cli_flag *flag, void *target, const char *value)
{
    memcpy((char *)target + flag->offset, &value, sizeof value);
    return 0;
}

int cli_apply_int64(const cli_flag *flag, void *target, const char *value)
{
    char label[64];
    int64_t v;
    if (cli_parse_int64(flag_label(flag, label, sizeof label), value, &v) != 0)
        return -1;
    memcpy((char *)target + flag->offset, &v, sizeof v);
    return 0;
}

int cli_apply_int(const cli_flag *flag, void *target, const char *value)
{
    char label[64];
    int64_t v;
    if (cli_parse_int64(flag_label(flag, label, sizeof label), value, &v) != 0)
        return -1;
    if (v < -2147483647 - 1 || v > 2147483647) {
        value_error(label, "%s is out of the range of int", value);
        return -1;
    }
    int i = (int)v;
    memcpy((char *)target + flag->offset, &i, sizeof i);
    return 0;
}

int cli_apply_ints(const cli_flag *flag, void *target, const char *value)
{
    char label[64];
    convfind_ints list;
    if (cli_parse_int_list(flag_label(flag, label, sizeof label), value, &list) != 0)
        return -1;
    memcpy((char *)target + flag->offset, &list, sizeof list);
    return 0;
}

/* ---- the ONNX problem flags ----------------------------------------------------- */

/* The enum fields of convfind_conv_desc have an implementation-defined underlying
 * type, so they are assigned by name here rather than stored through an int pointer. */
static int apply_desc_enum(const cli_flag *flag, void *target, const char *value)
{
    char label[64];
    int v;
    if (cli_parse_choice(flag_label(flag, label, sizeof label), value, flag->choices, &v) != 0)
        return -1;
    convfind_conv_desc *desc = target;
    if (flag->offset == offsetof(convfind_conv_desc, op))
        desc->op = (convfind_op)v;
    else if (flag->offset == offsetof(convfind_conv_desc, layout))
        desc->layout = (convfind_layout)v;
    else
        desc->auto_pad = (convfind_auto_pad)v;
    return 0;
}

static int apply_activation(const cli_flag *flag, void *target, const char *value)
{
    char label[64];
    convfind_conv_desc *desc = target;
    return cli_parse_activation(flag_label(flag, label, sizeof label), value, &desc->activation,
                                &desc->alpha, &desc->beta);
}

static const cli_choice op_choices[] = {
    {"conv", CONVFIND_OP_CONV}, {"conv_transpose", CONVFIND_OP_CONV_TRANSPOSE}, {NULL, 0}};
static const cli_choice layout_choices[] = {
    {"nchw", CONVFIND_LAYOUT_NCHW}, {"nhwc", CONVFIND_LAYOUT_NHWC}, {NULL, 0}};
static const cli_choice auto_pad_choices[] = {{"NOTSET", CONVFIND_AUTO_PAD_NOTSET},
                                              {"SAME_UPPER", CONVFIND_AUTO_PAD_SAME_UPPER},
                                              {"SAME_LOWER", CONVFIND_AUTO_PAD_SAME_LOWER},
                                              {"VALID", CONVFIND_AUTO_PAD_VALID},
                                              {NULL, 0}};

#define DESC_FIELD(f) offsetof(convfind_conv_desc, f)

const cli_flag cli_problem_flags[] = {
    {"op", 0, "conv|conv_transpose", "ONNX operator (default conv)", apply_desc_enum,
     DESC_FIELD(op), op_choices},
    {"pads", 0, "P,...", "pads: all begins, then all ends (ONNX order)", cli_apply_ints,
     DESC_FIELD(pads), NULL},
    {"strides", 0, "S,...", "one stride per spatial axis", cli_apply_ints, DESC_FIELD(strides),
     NULL},
    {"dilations", 0, "D,...", "one dilation per spatial axis", cli_apply_ints,
     DESC_FIELD(dilations), NULL},
    {"group", 0, "G", "number of groups (default 1)", cli_apply_int64, DESC_FIELD(group), NULL},
    {"kernel-shape", 0, "K,...", "kernel spatial dims (default: from W)", cli_apply_ints,
     DESC_FIELD(kernel_shape), NULL},
    {"auto-pad", 0, "NOTSET|SAME_UPPER|SAME_LOWER|VALID", "ONNX auto_pad (default NOTSET)",
     apply_desc_enum, DESC_FIELD(auto_pad), auto_pad_choices},
    {"output-padding", 0, "P,...", "ConvTranspose output_padding", cli_apply_ints,
     DESC_FIELD(output_padding), NULL},
    {"output-shape", 0, "O,...", "ConvTranspose output_shape (spatial dims of Y)",
     cli_apply_ints, DESC_FIELD(output_shape), NULL},
    {"activation", 0, "ACT",
     "fused epilogue: relu, leaky_relu:ALPHA, clip:MIN,MAX, sigmoid, tanh, "
     "hard_sigmoid:ALPHA,BETA",
     apply_activation, 0, NULL},
    {"layout", 0, "nchw|nhwc", "storage order of X, Z and Y (default nchw)", apply_desc_enum,
     DESC_FIELD(layout), layout_choices},
};
const int cli_problem_flag_count = (int)(sizeof cli_problem_flags / sizeof cli_problem_flags[0]);

/* ---- flag parser ---------------------------------------------------------------- */

typedef struct flag_ref {
    const cli_flag *flag;
    void *target;
    int index; /* across all groups, for the "given twice" check */
} flag_ref;

static bool find_flag(const cli_flag_group *groups, int ngroups, const char *name,
                      size_t name_len, char short_name, flag_ref *ref)
{
    int index = 0;
    for (int g = 0; g < ngroups; g++) {
        for (int i = 0; i < groups[g].count; i++, index++) {
            const cli_flag *f = &groups[g].flags[i];
            bool hit = name ? strlen(f->name) == name_len && strncmp(f->name, name, name_len) == 0
                            : short_name != 0 && f->short_name == short_name;
            if (hit) {
                *ref = (flag_ref){f, groups[g].target, index};
                return true;
            }
        }
    }
    return false;
}

int cli_parse(const cli_command *cmd, int argc, char **argv, const cli_flag_group *groups,
              int ngroups)
{
    int total = 0;
    for (int g = 0; g < ngroups; g++)
        total += groups[g].count;
    unsigned char seen[128] = {0};
    if (total > (int)sizeof seen) {
        cli_usage_error(cmd, "has %d flags, the parser handles at most %zu", total, sizeof seen);
        return CLI_BAD_USAGE;
    }

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            cli_print_help(stdout, cmd, groups, ngroups);
            return CLI_HELP_SHOWN;
        }
        flag_ref ref;
        const char *inline_value = NULL;
        bool found;
        if (arg[0] == '-' && arg[1] == '-' && arg[2] != '\0') {
            const char *name = arg + 2;
            const char *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            inline_value = eq ? eq + 1 : NULL;
            found = find_flag(groups, ngroups, name, len, 0, &ref);
        } else if (arg[0] == '-' && arg[1] != '\0' && arg[2] == '\0') {
            found = find_flag(groups, ngroups, NULL, 0, arg[1], &ref);
        } else {
            cli_usage_error(cmd, "unexpected argument '%s' (see convfind %s --help)", arg,
                            cmd->name);
            return CLI_BAD_USAGE;
        }
        if (!found) {
            cli_usage_error(cmd, "unknown flag '%s' (see convfind %s --help)", arg, cmd->name);
            return CLI_BAD_USAGE;
        }
        if (seen[ref.index]) {
            cli_usage_error(cmd, "flag '%s' given more than once", arg);
            return CLI_BAD_USAGE;
        }
        seen[ref.index] = 1;
        const char *value = NULL;
        if (ref.flag->metavar) {
            if (inline_value) {
                value = inline_value;
            } else if (i + 1 < argc) {
                value = argv[++i];
            } else {
                cli_usage_error(cmd, "flag '%s' needs a value (%s)", arg, ref.flag->metavar);
                return CLI_BAD_USAGE;
            }
        } else if (inline_value) {
            cli_usage_error(cmd, "flag '--%s' takes no value", ref.flag->name);
            return CLI_BAD_USAGE;
        }
        if (ref.flag->apply(ref.flag, ref.target, value) != 0)
            return CLI_BAD_USAGE;
    }
    return CLI_PARSED;
}

void cli_print_help(FILE *out, const cli_command *cmd, const cli_flag_group *groups,
                    int ngroups)
{
    fprintf(out, "usage: convfind %s %s\n\n%s\n\noptions:\n", cmd->name, cmd->synopsis,
            cmd->summary);
    for (int g = 0; g < ngroups; g++) {
        for (int i = 0; i < groups[g].count; i++) {
            const cli_flag *f = &groups[g].flags[i];
            char left[96];
            int n = f->short_name ? snprintf(left, sizeof left, "-%c, --%s", f->short_name, f->name)
                                  : snprintf(left, sizeof left, "    --%s", f->name);
            if (f->metavar && n >= 0 && (size_t)n < sizeof left)
                snprintf(left + n, sizeof left - (size_t)n, " %s", f->metavar);
            if (strlen(left) > 28)
                fprintf(out, "  %s\n  %-28s %s\n", left, "", f->help);
            else
                fprintf(out, "  %-28s %s\n", left, f->help);
        }
    }
    fprintf(out, "  %-28s %s\n", "-h, --help", "show this help and exit");
}

/* ---- layouts -------------------------------------------------------------------- */

void cli_stored_to_logical(convfind_layout layout, int rank, const int64_t *stored,
                           int64_t *logical)
{
    logical[0] = stored[0];
    if (layout == CONVFIND_LAYOUT_NHWC) {
        logical[1] = stored[rank - 1];
        for (int i = 2; i < rank; i++)
            logical[i] = stored[i - 1];
    } else {
        for (int i = 1; i < rank; i++)
            logical[i] = stored[i];
    }
}

void cli_logical_to_stored(convfind_layout layout, int rank, const int64_t *logical,
                           int64_t *stored)
{
    stored[0] = logical[0];
    if (layout == CONVFIND_LAYOUT_NHWC) {
        stored[rank - 1] = logical[1];
        for (int i = 2; i < rank; i++)
            stored[i - 1] = logical[i];
    } else {
        for (int i = 1; i < rank; i++)
            stored[i] = logical[i];
    }
}
