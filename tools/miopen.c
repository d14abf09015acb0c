/*
 * miopen.c - MIOpenDriver's conv flags as a convfind problem (see miopen.h).
 */
#include "miopen.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli_common.h"

const int cli_miopen_problem_flags[] = {
    CLI_M_N,       CLI_M_C,          CLI_M_H,          CLI_M_W,           CLI_M_K,
    CLI_M_Y,       CLI_M_X,          CLI_M_P,          CLI_M_Q,           CLI_M_U,
    CLI_M_V,       CLI_M_L,          CLI_M_J,          CLI_M_G,           CLI_BIAS,
    CLI_M_MODE,    CLI_M_PAD_MODE,   CLI_M_IN_LAYOUT,  CLI_M_OUT_LAYOUT,  CLI_M_FIL_LAYOUT,
    CLI_M_SPATIAL_DIM, CLI_M_IN_D,   CLI_M_FIL_D,      CLI_M_PAD_D,       CLI_M_STRIDE_D,
    CLI_M_DIL_D,   CLI_M_OPAD_H,     CLI_M_OPAD_W,     CLI_M_OPAD_D,      CLI_M_FORW,
    CLI_M_PAD_VAL, CLI_M_TENSOR_VECT, CLI_M_VECTOR_LENGTH, -1};
const int cli_miopen_driver_flags[] = {CLI_M_VERIFY, CLI_M_TIME,      CLI_M_ITER,
                                       CLI_M_WALL,   CLI_M_SEARCH,    CLI_M_PRINTCONV,
                                       CLI_M_DUMP_OUTPUT, CLI_M_SOLUTION, CLI_M_GPUALLOC,
                                       -1};

bool cli_miopen_flags_given(const cli_args *a)
{
    for (int id = CLI_M_FORW; id < CLI_FLAG_COUNT; id++)
        if (a->given[id])
            return true;
    return false;
}

/* The command words and their data types; other conv* words name types convfind lacks. */
static const struct {
    const char *word;
    convfind_dtype dtype;
} commands[] = {{"conv", CONVFIND_DTYPE_F32},
                {"convfp16", CONVFIND_DTYPE_F16},
                {"convbfp16", CONVFIND_DTYPE_BF16}};

static int command_word(const char *w, convfind_dtype *dtype, char *err, size_t errsize)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(w, commands[i].word) == 0) {
            *dtype = commands[i].dtype;
            return 1;
        }
    }
    if (strncmp(w, "conv", 4) == 0) {
        snprintf(err, errsize, "MIOpenDriver command '%.40s': data type %.30s is not supported "
                 "(conv, convfp16 and convbfp16 are)", w, w + 4);
        return -1;
    }
    return 0;
}

int cli_miopen_words(char *const *words, int n, bool *found, convfind_dtype *dtype, char *err,
                     size_t errsize)
{
    *found = false;
    for (int i = 0; i < n; i++) {
        int c = command_word(words[i], dtype, err, errsize);
        if (c < 0)
            return -1;
        if (c > 0 && !*found) {
            *found = true;
            continue;
        }
        bool program = !*found && strstr(words[i], "MIOpenDriver") != NULL &&
                       strcmp(words[i] + strlen(words[i]) - 12, "MIOpenDriver") == 0;
        if (!program) {
            snprintf(err, errsize, "unexpected argument '%.60s' (a MIOpenDriver line is "
                     "[MIOpenDriver] conv|convfp16|convbfp16 FLAGS)", words[i]);
            return -1;
        }
    }
    return 0;
}

/* A layout name in MIOpenDriver's spelling: 0 channels first, 1 channels last. */
static int layout_of(const char *flag, const char *v, int spatial, char *err, size_t errsize)
{
    const char *first = spatial == 3 ? "NCDHW" : "NCHW", *last = spatial == 3 ? "NDHWC" : "NHWC";
    if (strcasecmp(v, first) == 0)
        return 0;
    if (strcasecmp(v, last) == 0)
        return 1;
    snprintf(err, errsize, "%s %.20s: expected %s or %s", flag, v, first, last);
    return -1;
}

int cli_miopen_desc(const cli_args *a, convfind_dtype dtype, convfind_conv_desc *d, char *err,
                    size_t errsize)
{
#define V(id) CLI_MIO(a, id)
    convfind_conv_desc_init(d);
    int64_t forw = V(CLI_M_FORW);
    if (forw < 0 || forw > 6 || forw == 2 || forw == 4 || forw == 6) {
        snprintf(err, errsize, "-F %" PRId64 ": %s; convfind computes the forward "
                 "convolution (-F 0 or 1)", forw,
                 forw == 2 ? "backward data only" : forw == 4 ? "backward weights only"
                 : forw == 6 ? "backward only" : "not a MIOpenDriver direction");
        return -1;
    }
    int64_t sd = V(CLI_M_SPATIAL_DIM);
    if (sd != 2 && sd != 3) {
        snprintf(err, errsize, "--spatial_dim %" PRId64 " is not 2 or 3", sd);
        return -1;
    }
    const char *mode = a->mio_mode ? a->mio_mode : "conv";
    if (strcmp(mode, "conv") != 0 && strcmp(mode, "trans") != 0) {
        snprintf(err, errsize, "-m %.40s is not conv or trans", mode);
        return -1;
    }
    const bool trans = strcmp(mode, "trans") == 0;
    const char *pad_mode = a->mio_pad_mode ? a->mio_pad_mode : "default";
    if (strcmp(pad_mode, "default") == 0)
        d->auto_pad = CONVFIND_AUTO_PAD_NOTSET;
    else if (strcmp(pad_mode, "same") == 0)
        d->auto_pad = CONVFIND_AUTO_PAD_SAME_UPPER;
    else if (strcmp(pad_mode, "valid") == 0)
        d->auto_pad = CONVFIND_AUTO_PAD_VALID;
    else {
        snprintf(err, errsize, "-z %.40s is not default, same or valid", pad_mode);
        return -1;
    }
    int in_layout = a->mio_in_layout ? layout_of("-I", a->mio_in_layout, (int)sd, err, errsize)
                                     : 0;
    int out_layout = a->mio_out_layout
                         ? layout_of("-O", a->mio_out_layout, (int)sd, err, errsize)
                         : in_layout;
    if (in_layout < 0 || out_layout < 0)
        return -1;
    if (out_layout != in_layout) {
        snprintf(err, errsize, "-O %s: convfind stores the output like the input (-I %s)",
                 a->mio_out_layout, a->mio_in_layout ? a->mio_in_layout : "NCHW");
        return -1;
    }
    int fil_layout = a->mio_fil_layout
                         ? layout_of("-f", a->mio_fil_layout, (int)sd, err, errsize)
                         : 0;
    if (fil_layout < 0)
        return -1;
    if (fil_layout > 0) {
        snprintf(err, errsize, "-f %.20s: convfind takes the filter in ONNX layout only (%s)",
                 a->mio_fil_layout, sd == 3 ? "NCDHW" : "NCHW");
        return -1;
    }
    if (V(CLI_M_PAD_VAL) != 0 || V(CLI_M_TENSOR_VECT) != 0 || V(CLI_M_VECTOR_LENGTH) != 1) {
        snprintf(err, errsize, "%s: ONNX convolutions pad with zeros and take plain tensors",
                 V(CLI_M_PAD_VAL) != 0      ? "-r (a padding value other than 0)"
                 : V(CLI_M_TENSOR_VECT) != 0 ? "-Z (vectorized tensors)"
                                             : "-L (a vector length other than 1)");
        return -1;
    }
    int64_t c = V(CLI_M_C), k = V(CLI_M_K), g = V(CLI_M_G);
    if (g < 1 || c % g != 0 || k % g != 0) {
        snprintf(err, errsize, "-g %" PRId64 " must divide -c %" PRId64 " and -k %" PRId64, g,
                 c, k);
        return -1;
    }
    /* Per spatial axis in ONNX order ((D,) H, W): input, filter, pad, stride, dilation
     * and output padding. */
    static const int axis_flags[3][6] = {
        {CLI_M_IN_D, CLI_M_FIL_D, CLI_M_PAD_D, CLI_M_STRIDE_D, CLI_M_DIL_D, CLI_M_OPAD_D},
        {CLI_M_H, CLI_M_Y, CLI_M_P, CLI_M_U, CLI_M_L, CLI_M_OPAD_H},
        {CLI_M_W, CLI_M_X, CLI_M_Q, CLI_M_V, CLI_M_J, CLI_M_OPAD_W},
    };
    const int ax = (int)sd, first = 3 - ax;
    d->op = trans ? CONVFIND_OP_CONV_TRANSPOSE : CONVFIND_OP_CONV;
    d->dtype = dtype;
    d->layout = in_layout ? CONVFIND_LAYOUT_NHWC : CONVFIND_LAYOUT_NCHW;
    d->x_rank = d->w_rank = 2 + ax;
    d->x_dims[0] = V(CLI_M_N);
    d->x_dims[1] = c;
    d->w_dims[0] = trans ? c : k;
    d->w_dims[1] = trans ? k / g : c / g;
    d->group = g;
    d->strides.count = d->dilations.count = ax;
    d->pads.count = d->auto_pad == CONVFIND_AUTO_PAD_NOTSET ? 2 * ax : 0;
    d->output_padding.count = trans ? ax : 0;
    for (int i = 0; i < ax; i++) {
        const int *f = axis_flags[first + i];
        d->x_dims[2 + i] = V(f[0]);
        d->w_dims[2 + i] = V(f[1]);
        d->pads.v[i] = d->pads.v[ax + i] = V(f[2]);
        d->strides.v[i] = V(f[3]);
        d->dilations.v[i] = V(f[4]);
        d->output_padding.v[i] = V(f[5]);
    }
    if (d->auto_pad != CONVFIND_AUTO_PAD_NOTSET)
        memset(&d->pads, 0, sizeof d->pads);
    return 0;
#undef V
}

static const cli_section line_sections[] = {
    {"MIOpenDriver conv flags", cli_miopen_problem_flags},
    {"MIOpenDriver driver flags", cli_miopen_driver_flags},
};

/* A MIOpenDriver line of a file is parsed by the tool's one parser, as `tune` would
 * parse the same flags on its command line. */
static const cli_command line_command = {
    .name = "tune",
    .summary = "a MIOpenDriver line",
    .synopsis = "conv|convfp16|convbfp16 FLAGS",
    .sections = line_sections,
    .nsections = 2,
    .max_pos = 0,
};

#define MAX_TOKENS 512

int cli_miopen_line(char *line, convfind_conv_desc *d, char *name, size_t namesize, char *err,
                    size_t errsize)
{
    char *tokens[MAX_TOKENS + 1];
    int n = 0;
    for (char *save = NULL, *t = strtok_r(line, " \t", &save); t;
         t = strtok_r(NULL, " \t", &save)) {
        if (n == MAX_TOKENS) {
            snprintf(err, errsize, "more than %d words", MAX_TOKENS);
            return -1;
        }
        tokens[n++] = t;
    }
    convfind_dtype dtype = CONVFIND_DTYPE_F32;
    int start = 0, c = 0;
    for (; start < n && (c = command_word(tokens[start], &dtype, err, errsize)) == 0; start++)
        continue;
    if (c < 0)
        return -1;
    if (start == n) {
        snprintf(err, errsize, "no MIOpenDriver command 'conv', 'convfp16' or 'convbfp16'");
        return -1;
    }
    cli_args a;
    cli_args_init(&a);
    cli_capture_errors(err, errsize);
    int parsed = cli_parse(&line_command, n - start, tokens + start, &a);
    cli_capture_errors(NULL, 0);
    if (parsed != CLI_PARSED)
        return -1;
    if (cli_miopen_desc(&a, dtype, d, err, errsize) != 0)
        return -1;
    d->has_bias = a.bias;
#define V(id) (long long)CLI_MIO(&a, id)
    snprintf(name, namesize, "%s%s_n%lld_c%lld_%lldx%lld_k%lld_%lldx%lld_g%lld",
             d->op == CONVFIND_OP_CONV_TRANSPOSE ? "trans" : "conv",
             dtype == CONVFIND_DTYPE_F32 ? "" : dtype == CONVFIND_DTYPE_F16 ? "fp16" : "bfp16",
             V(CLI_M_N), V(CLI_M_C), V(CLI_M_H), V(CLI_M_W), V(CLI_M_K), V(CLI_M_Y), V(CLI_M_X),
             V(CLI_M_G));
#undef V
    return 0;
}
