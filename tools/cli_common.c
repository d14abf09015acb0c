/*
 * cli_common.c - messages, value parsers and layout reordering for every convfind
 * command (see cli_common.h).
 *
 * Values are parsed strictly (the whole text must be consumed, no silent wrap-around)
 * because a CLI that reads "--strides 1,x" as "1" computes a different convolution
 * than the user asked for without saying so.  Range checks that belong to ONNX
 * semantics (group 0, negative pads, ...) are deliberately left to the library, so that
 * its status and message are what the user sees.
 */
#include "cli_common.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void cli_one_line(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = ' ';
}

/* Where messages go while cli_capture_errors is in force. */
static char *capture;
static size_t capture_size;

void cli_capture_errors(char *buf, size_t size)
{
    capture = size ? buf : NULL;
    capture_size = size;
    if (capture)
        capture[0] = '\0';
}

bool cli_capturing(void)
{
    return capture != NULL;
}

/* "<prefix>: <message>" on stderr, or "<label>: <message>" (label optional) into the
 * capture buffer, keeping the first. */
static void vprint_error(const char *prefix, const char *label, const char *fmt, va_list ap)
{
    char msg[1200];
    vsnprintf(msg, sizeof msg, fmt, ap);
    cli_one_line(msg);
    if (!capture)
        fprintf(stderr, "%s: %s\n", prefix, msg);
    else if (!capture[0])
        snprintf(capture, capture_size, "%s%s%s", label ? label : "", label ? ": " : "", msg);
}

void cli_value_error(const char *flag, const char *fmt, ...)
{
    char prefix[80];
    snprintf(prefix, sizeof prefix, "convfind: %s", flag);
    va_list ap;
    va_start(ap, fmt);
    vprint_error(prefix, flag, fmt, ap);
    va_end(ap);
}

static int command_message(const cli_command *cmd, int code, const char *fmt, va_list ap)
{
    char prefix[80];
    snprintf(prefix, sizeof prefix, "convfind %s", cmd->name);
    vprint_error(prefix, NULL, fmt, ap);
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
    char msg[1200];
    snprintf(msg, sizeof msg, "%s", convfind_last_error());
    cli_one_line(msg);
    fprintf(stderr, "convfind: %s: %s\n", convfind_status_name(status), msg);
    return CLI_EXIT_FAILURE;
}

/* ---- value parsers -------------------------------------------------------------- */

static bool ascii_iequal_n(const char *a, size_t alen, const char *b)
{
    size_t i = 0;
    for (; i < alen && b[i]; i++) {
        char ca = (a[i] >= 'A' && a[i] <= 'Z') ? (char)(a[i] - 'A' + 'a') : a[i];
        char cb = (b[i] >= 'A' && b[i] <= 'Z') ? (char)(b[i] - 'A' + 'a') : b[i];
        if (ca != cb)
            return false;
    }
    return i == alen && b[i] == '\0';
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
        cli_value_error(flag, "'%s' is not a 64-bit integer", text);
        return -1;
    }
    return 0;
}

int cli_parse_int_list_quiet(const char *text, convfind_ints *out, char *err, size_t errsize)
{
    const int max = (int)(sizeof out->v / sizeof out->v[0]);
    convfind_ints list = {0, {0}};
    const char *p = text;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (list.count == max) {
            snprintf(err, errsize, "'%s' has more than %d values", text, max);
            return -1;
        }
        if (!cli_int64_from_span(p, len, &list.v[list.count])) {
            snprintf(err, errsize, "'%.*s' in '%s' is not an integer (expected a list like 1,2,3)",
                     (int)(len > 40 ? 40 : len), p, text);
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

int cli_parse_int_list(const char *flag, const char *text, convfind_ints *out)
{
    char err[300];
    if (cli_parse_int_list_quiet(text, out, err, sizeof err) != 0) {
        cli_value_error(flag, "%s", err);
        return -1;
    }
    return 0;
}

int cli_parse_float_quiet(const char *text, size_t len, float *out)
{
    char buf[64];
    char *end = NULL;
    if (len > 0 && len < sizeof buf) {
        memcpy(buf, text, len);
        buf[len] = '\0';
        errno = 0;
        *out = strtof(buf, &end);
    }
    if (!end || *end != '\0' || end == buf || buf[0] == ' ' || buf[0] == '\t' ||
        errno == ERANGE)
        return -1;
    return 0;
}

int cli_parse_choice_quiet(const char *text, const char *const *choices, int *out, char *err,
                           size_t errsize)
{
    for (int i = 0; choices[i]; i++) {
        if (ascii_iequal_n(text, strlen(text), choices[i])) {
            *out = i;
            return 0;
        }
    }
    size_t len = (size_t)snprintf(err, errsize, "unknown value '%.60s' (one of:", text);
    for (int i = 0; choices[i] && len < errsize; i++)
        len += (size_t)snprintf(err + len, errsize - len, "%s %s", i ? "," : "", choices[i]);
    if (len < errsize)
        snprintf(err + len, errsize - len, ")");
    return -1;
}

int cli_parse_choice(const char *flag, const char *text, const char *const *choices, int *out)
{
    char err[400];
    if (cli_parse_choice_quiet(text, choices, out, err, sizeof err) != 0) {
        cli_value_error(flag, "%s", err);
        return -1;
    }
    return 0;
}

const char *const cli_op_names[] = {"conv", "conv_transpose", NULL};
const char *const cli_dtype_names[] = {"f32", "f16", "bf16", NULL};
const char *const cli_layout_names[] = {"nchw", "nhwc", NULL};
const char *const cli_math_names[] = {"strict", "tf32", NULL};
const char *const cli_auto_pad_names[] = {"notset", "same_upper", "same_lower", "valid", NULL};
const char *const cli_activation_names[] = {"none", "relu", "leaky_relu", "clip",
                                            "sigmoid", "tanh", "hard_sigmoid", NULL};

bool cli_activation_defaults(const char *name, size_t len, convfind_activation *act,
                             int *nparams, float *alpha, float *beta)
{
    /* Indexed by convfind_activation, as cli_activation_names. */
    static const struct {
        int nparams;
        float alpha, beta; /* ONNX defaults when the parameters are left out */
    } specs[] = {{0, 0.0f, 0.0f}, {0, 0.0f, 0.0f},       {1, 0.01f, 0.0f}, {2, -INFINITY, INFINITY},
                 {0, 0.0f, 0.0f}, {0, 0.0f, 0.0f},       {2, 0.2f, 0.5f}};
    for (int i = 0; cli_activation_names[i]; i++) {
        if (strlen(cli_activation_names[i]) == len &&
            strncmp(name, cli_activation_names[i], len) == 0) {
            *act = (convfind_activation)i;
            *nparams = specs[i].nparams;
            *alpha = specs[i].alpha;
            *beta = specs[i].beta;
            return true;
        }
    }
    return false;
}

int cli_parse_activation(const char *flag, const char *text, convfind_activation *act,
                         float *alpha, float *beta)
{
    const char *colon = strchr(text, ':');
    size_t name_len = colon ? (size_t)(colon - text) : strlen(text);
    int nparams;
    float params[2];
    convfind_activation a;
    if (!cli_activation_defaults(text, name_len, &a, &nparams, &params[0], &params[1])) {
        cli_value_error(flag,
                        "unknown activation '%.*s' (one of: none, relu, leaky_relu:ALPHA, "
                        "clip:MIN,MAX, sigmoid, tanh, hard_sigmoid:ALPHA,BETA)",
                        (int)(name_len > 40 ? 40 : name_len), text);
        return -1;
    }
    if (colon) {
        const char *p = colon + 1;
        const char *comma = strchr(p, ',');
        int given = comma ? (strchr(comma + 1, ',') ? 3 : 2) : 1;
        if (given != nparams) {
            cli_value_error(flag, "'%s': %.*s takes %d parameter%s, got %d", text,
                            (int)name_len, text, nparams, nparams == 1 ? "" : "s", given);
            return -1;
        }
        const char *at[2] = {p, comma ? comma + 1 : NULL};
        size_t len[2] = {comma ? (size_t)(comma - p) : strlen(p), at[1] ? strlen(at[1]) : 0};
        for (int i = 0; i < given; i++) {
            if (cli_parse_float_quiet(at[i], len[i], &params[i]) != 0) {
                cli_value_error(flag, "'%.*s' is not a float32 number",
                                (int)(len[i] > 40 ? 40 : len[i]), at[i]);
                return -1;
            }
        }
    }
    *act = a;
    *alpha = params[0];
    *beta = params[1];
    return 0;
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

const char *cli_dtype_unsupported(const cli_args *a, convfind_dtype dtype)
{
    if (a->device == CONVFIND_DEVICE_CPU && dtype != CONVFIND_DTYPE_F32)
        return dtype == CONVFIND_DTYPE_F16
                   ? "data type f16 is not supported on the CPU, whose algorithms compute f32 "
                     "only (use --device cuda)"
                   : "data type bf16 is not supported on the CPU, whose algorithms compute "
                     "f32 only (use --device cuda)";
    return NULL;
}
