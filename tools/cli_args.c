/*
 * cli_args.c - the table of every flag of the convfind tool and the one parser (see
 * cli_args.h).
 *
 * Each flag's help is its whole documentation: `convfind help COMMAND`, the man pages
 * and docs/cli.md say what is written here.  MIOpenDriver's flags keep MIOpenDriver's
 * letters, names, defaults and meanings (its driver/conv_driver.hpp): -t is its timing
 * switch, not a thread count, and -F the direction.
 */
#include "cli_args.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "cli_help.h"

void cli_args_init(cli_args *a)
{
    memset(a, 0, sizeof *a);
    convfind_conv_desc_init(&a->desc);
    a->device = CONVFIND_DEVICE_CPU;
    a->repeats = 5;
    /* MIOpenDriver's own defaults, so that an absent flag means what it meant there. */
    static const struct {
        int id;
        int64_t v;
    } mio_defaults[] = {
        {CLI_M_N, 100},      {CLI_M_C, 3},     {CLI_M_H, 32},    {CLI_M_W, 32},
        {CLI_M_K, 32},       {CLI_M_Y, 3},     {CLI_M_X, 3},     {CLI_M_U, 1},
        {CLI_M_V, 1},        {CLI_M_L, 1},     {CLI_M_J, 1},     {CLI_M_G, 1},
        {CLI_M_SPATIAL_DIM, 2}, {CLI_M_IN_D, 32}, {CLI_M_FIL_D, 3}, {CLI_M_STRIDE_D, 1},
        {CLI_M_DIL_D, 1},    {CLI_M_VECTOR_LENGTH, 1}, {CLI_M_VERIFY, 1}, {CLI_M_ITER, 10},
        {CLI_M_PRINTCONV, 1},
    };
    for (size_t i = 0; i < sizeof mio_defaults / sizeof mio_defaults[0]; i++)
        CLI_MIO(a, mio_defaults[i].id) = mio_defaults[i].v;
}

/* ---- appliers ------------------------------------------------------------------- */

static const char *label(const cli_flag *flag, char *buf, size_t size)
{
    snprintf(buf, size, "--%s", flag->name);
    return buf;
}

static void *field(const cli_flag *flag, cli_args *a)
{
    return (char *)a + flag->offset;
}

static int apply_string(const cli_flag *flag, cli_args *a, const char *value)
{
    memcpy(field(flag, a), &value, sizeof value);
    return 0;
}

static int apply_switch(const cli_flag *flag, cli_args *a, const char *value)
{
    (void)value;
    *(int *)field(flag, a) = 1;
    return 0;
}

static int apply_int64(const cli_flag *flag, cli_args *a, const char *value)
{
    char l[64];
    int64_t v;
    if (cli_parse_int64(label(flag, l, sizeof l), value, &v) != 0)
        return -1;
    memcpy(field(flag, a), &v, sizeof v);
    return 0;
}

static int apply_int(const cli_flag *flag, cli_args *a, const char *value)
{
    char l[64];
    int64_t v;
    if (cli_parse_int64(label(flag, l, sizeof l), value, &v) != 0)
        return -1;
    if (v < -2147483647 - 1 || v > 2147483647) {
        cli_value_error(l, "%s is out of the range of int", value);
        return -1;
    }
    *(int *)field(flag, a) = (int)v;
    return 0;
}

/* MIOpenDriver's 0/1 flags: any integer, nonzero meaning yes, as the driver reads them. */
static int apply_nonzero(const cli_flag *flag, cli_args *a, const char *value)
{
    char l[64];
    int64_t v;
    if (cli_parse_int64(label(flag, l, sizeof l), value, &v) != 0)
        return -1;
    *(int *)field(flag, a) = v != 0;
    return 0;
}

static int apply_ints(const cli_flag *flag, cli_args *a, const char *value)
{
    char l[64];
    convfind_ints list;
    if (cli_parse_int_list(label(flag, l, sizeof l), value, &list) != 0)
        return -1;
    memcpy(field(flag, a), &list, sizeof list);
    return 0;
}

static int apply_choice(const cli_flag *flag, cli_args *a, const char *value)
{
    char l[64];
    return cli_parse_choice(label(flag, l, sizeof l), value, flag->choices,
                            (int *)field(flag, a));
}

/* The enum fields of convfind_conv_desc have an implementation-defined underlying
 * type, so they are assigned by name rather than stored through an int pointer. */
static int apply_desc_enum(const cli_flag *flag, cli_args *a, const char *value)
{
    char l[64];
    int v;
    if (cli_parse_choice(label(flag, l, sizeof l), value, flag->choices, &v) != 0)
        return -1;
    const int id = (int)(flag - cli_flags);
    if (id == CLI_OP)
        a->desc.op = (convfind_op)v;
    else if (id == CLI_DTYPE)
        a->desc.dtype = (convfind_dtype)v;
    else if (id == CLI_LAYOUT)
        a->desc.layout = (convfind_layout)v;
    else if (id == CLI_MATH)
        a->desc.math_mode = (convfind_math_mode)v;
    else
        a->desc.auto_pad = (convfind_auto_pad)v;
    return 0;
}

static int apply_activation(const cli_flag *flag, cli_args *a, const char *value)
{
    char l[64];
    return cli_parse_activation(label(flag, l, sizeof l), value, &a->desc.activation,
                                &a->desc.alpha, &a->desc.beta);
}

static int apply_device(const cli_flag *flag, cli_args *a, const char *value)
{
    char l[64];
    int64_t index = 0;
    if (strcmp(value, "cpu") == 0) {
        a->device = CONVFIND_DEVICE_CPU;
        return 0;
    }
    if (strncmp(value, "cuda", 4) == 0 &&
        (value[4] == '\0' ||
         (value[4] == ':' && cli_int64_from_span(value + 5, strlen(value + 5), &index) &&
          index >= 0 && index < 1024))) {
        a->device = CONVFIND_DEVICE_CUDA;
        a->device_index = (int)index;
        return 0;
    }
    cli_value_error(label(flag, l, sizeof l), "'%s' is not cpu, cuda or cuda:N", value);
    return -1;
}

/* A byte count, with an optional K, M or G (powers of 1024). */
static int apply_bytes(const cli_flag *flag, cli_args *a, const char *value)
{
    char l[64];
    size_t len = strlen(value);
    int shift = 0;
    if (len > 1) {
        const int unit = toupper((unsigned char)value[len - 1]);
        shift = unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0;
    }
    int64_t v;
    if (!cli_int64_from_span(value, shift ? len - 1 : len, &v) || v < 0 ||
        v > (INT64_MAX >> shift)) {
        cli_value_error(label(flag, l, sizeof l),
                        "'%s' is not a byte count (digits, optionally followed by K, M or G)",
                        value);
        return -1;
    }
    *(int64_t *)field(flag, a) = v << shift;
    return 0;
}

static int apply_input_shape(const cli_flag *flag, cli_args *a, const char *value)
{
    char l[64];
    if (a->n_input_shapes == CLI_MAX_INPUT_SHAPES) {
        cli_value_error(label(flag, l, sizeof l), "given more than %d times",
                        CLI_MAX_INPUT_SHAPES);
        return -1;
    }
    a->input_shapes[a->n_input_shapes++] = value;
    return 0;
}

/* ---- the table ------------------------------------------------------------------ */

#define A(f) offsetof(cli_args, f)
#define D(f) (offsetof(cli_args, desc) + offsetof(convfind_conv_desc, f))
#define M(id) (offsetof(cli_args, mio) + sizeof(int64_t) * (size_t)((id) - CLI_M_FORW))

static const char *const policy_choices[] = {"hybrid", "exhaustive", NULL};
static const char *const env_policy_choices[] = {"retune", "ignore", NULL};
static const char *const device_choices[] = {"cpu", "cuda", "cuda:0", NULL};
static const char *const mio_mode_choices[] = {"conv", "trans", NULL};
static const char *const mio_pad_mode_choices[] = {"default", "same", "valid", NULL};
static const char *const mio_layout_choices[] = {"NCHW", "NHWC", "NCDHW", "NDHWC", NULL};

/* An integer MIOpenDriver flag. */
#define MIO_INT(id, lname, letter, meta, text)                                                \
    [id] = {lname, letter, meta, text, apply_int64, M(id), NULL, false}

const cli_flag cli_flags[CLI_FLAG_COUNT] = {
    [CLI_DB] = {"db", 0, "PATH",
                "The find database: decisions are looked up in it and stored in it "
                "(docs/db.md). Default: $CONVFIND_DB_PATH, else "
                "$XDG_CACHE_HOME/convfind/finddb.sqlite, else ~/.cache/convfind/finddb.sqlite. "
                "\":memory:\" keeps decisions in memory only. A file named here (or in "
                "$CONVFIND_DB_PATH) that cannot be used is an error; it is never replaced by "
                "memory.",
                apply_string, A(db), NULL, false},
    [CLI_SYSTEM_DB] = {"system-db", 0, "PATH",
                       "A read-only system database consulted under the user database, as "
                       "shipped with a deployment (default: $CONVFIND_SYSTEM_DB). One that is "
                       "not a regular SQLite file of convfind, or is damaged, is skipped with "
                       "one warning.",
                       apply_string, A(system_db), NULL, false},
    [CLI_FLEET] = {"fleet", 0, "URL",
                   "Act on the fleet tier, the PostgreSQL database whose decisions a fleet of "
                   "machines shares (a libpq connection string or postgresql:// URI; the "
                   "library uses the one in $CONVFIND_FLEET_DB), instead of the user "
                   "database: stats, list, show, export, import and prune. A server that "
                   "cannot be reached is an error. Its password is never printed.",
                   apply_string, A(fleet), NULL, false},
    [CLI_THREADS] = {"threads", 0, "N",
                     "Worker threads per execution and per Find (default 0: every online "
                     "core). The thread count is part of the decision key.",
                     apply_int, A(threads), NULL, false},
    [CLI_DEVICE] = {"device", 0, "cpu|cuda[:N]",
                    "Where the convolutions run: the CPU (default) or CUDA device N (default "
                    "0). A build without the CUDA backend, or a machine without a usable GPU, "
                    "says so.",
                    apply_device, A(device), device_choices, false},
    [CLI_WORKSPACE] = {"workspace", 0, "BYTES",
                       "The most workspace memory one algorithm may use, in bytes; a K, M or "
                       "G suffix multiplies by 1024, 1024^2 or 1024^3. 0 (default): no limit. "
                       "Its class is part of the decision key.",
                       apply_bytes, A(workspace), NULL, false},
    [CLI_BUDGET_MS] = {"budget-ms", 0, "MS",
                       "Find's time budget per problem in milliseconds (default: the "
                       "library's, 1000). The heuristic choice is always measured, even past "
                       "it.",
                       apply_int, A(budget_ms), NULL, false},
    [CLI_POLICY] = {"policy", 0, "hybrid|exhaustive",
                    "hybrid (default): a decision stored in the database is used; without "
                    "one, a decision stored for the problem in another environment or on a "
                    "similar machine (another CPU model or thread count) has its top "
                    "candidates re-timed, and only the others are measured in full; "
                    "exhaustive: a stored decision is used too, every other problem is "
                    "measured in full. Under both, a stored decision of low confidence "
                    "measured with a smaller --budget-ms is measured again; --retune "
                    "measures every problem.",
                    apply_choice, A(policy), policy_choices, false},
    [CLI_ENV_POLICY] = {"env-policy", 0, "retune|ignore",
                        "What a decision stored in another environment (another library "
                        "version, backend or device) is good for: retune (default) re-times "
                        "its top candidates only; ignore measures as if nothing were stored.",
                        apply_choice, A(env_policy), env_policy_choices, false},
    [CLI_RETUNE] = {"retune", 0, NULL,
                    "Measure every problem now, even when a decision is stored, and replace "
                    "the stored decision with the new one.",
                    apply_switch, A(retune), NULL, false},
    [CLI_JSON] = {"json", 0, NULL,
                  "Print the results as JSON on stdout (one document) instead of text; "
                  "warnings and errors still go to stderr.",
                  apply_switch, A(json), NULL, false},
    [CLI_PROGRESS] = {"progress", 0, NULL,
                      "Report progress on stderr while working: a bar with the remaining "
                      "time on a terminal, one line per problem otherwise (a pipe, a file). "
                      "Results stay on stdout.",
                      apply_switch, A(progress), NULL, false},
    [CLI_X_SHAPE] = {"x-shape", 0, "N,C,D...",
                     "The logical shape of the input X in ONNX order (N, C, then 1 to 3 "
                     "spatial dims), whatever --layout stores.",
                     apply_ints, A(x_shape), NULL, false},
    [CLI_W_SHAPE] = {"w-shape", 0, "M,C/G,K...",
                     "The shape of the weights W in ONNX layout (ConvTranspose: C, M/G, "
                     "K...).",
                     apply_ints, A(w_shape), NULL, false},
    [CLI_OP] = {"op", 0, "conv|conv_transpose",
                "The ONNX operator: Conv (default) or ConvTranspose.",
                apply_desc_enum, 0, cli_op_names, false},
    [CLI_DTYPE] = {"dtype", 0, "f32|f16|bf16",
                   "The data type of every tensor (default f32). The CPU computes f32 only.",
                   apply_desc_enum, 0, cli_dtype_names, false},
    [CLI_LAYOUT] = {"layout", 0, "nchw|nhwc",
                    "How X, Z and Y are stored: channels first (default) or channels last; "
                    "W is always in ONNX layout.",
                    apply_desc_enum, 0, cli_layout_names, false},
    [CLI_MATH] = {"math", 0, "strict|tf32",
                  "strict (default): f32 data is computed in f32. tf32: reduced precision "
                  "is allowed (TensorFloat-32 on a GPU); a separate decision.",
                  apply_desc_enum, 0, cli_math_names, false},
    [CLI_PADS] = {"pads", 0, "P,...",
                  "ONNX pads: all begins, then all ends (for 2-D: H begin, W begin, H end, "
                  "W end). Default all 0.",
                  apply_ints, D(pads), NULL, false},
    [CLI_STRIDES] = {"strides", 0, "S,...", "One stride per spatial axis (default all 1).",
                     apply_ints, D(strides), NULL, false},
    [CLI_DILATIONS] = {"dilations", 0, "D,...",
                       "One dilation per spatial axis (default all 1).", apply_ints,
                       D(dilations), NULL, false},
    [CLI_GROUP] = {"group", 0, "G", "Number of groups (default 1).", apply_int64, D(group),
                   NULL, false},
    [CLI_KERNEL_SHAPE] = {"kernel-shape", 0, "K,...",
                          "The kernel's spatial dims (default: taken from W); must agree "
                          "with W.",
                          apply_ints, D(kernel_shape), NULL, false},
    [CLI_AUTO_PAD] = {"auto-pad", 0, "notset|same_upper|same_lower|valid",
                      "ONNX auto_pad (default notset: --pads applies); any letter case.",
                      apply_desc_enum, 0, cli_auto_pad_names, false},
    [CLI_OUTPUT_PADDING] = {"output-padding", 0, "P,...",
                            "ConvTranspose output_padding, one value per spatial axis "
                            "(default all 0).",
                            apply_ints, D(output_padding), NULL, false},
    [CLI_OUTPUT_SHAPE] = {"output-shape", 0, "O,...",
                          "ConvTranspose output_shape: the spatial dims of Y; the pads are "
                          "derived from it.",
                          apply_ints, D(output_shape), NULL, false},
    [CLI_BIAS] = {"bias", 'b', "0|1",
                  "Whether the problem adds a bias B (default 0); MIOpenDriver's -b, any "
                  "nonzero integer meaning yes.",
                  apply_nonzero, A(bias), NULL, false},
    [CLI_RESIDUAL] = {"residual", 0, "0|1",
                      "Whether the problem adds a residual Z of Y's shape before the "
                      "activation (default 0), as ONNX Runtime's FusedConv.",
                      apply_nonzero, A(residual), NULL, false},
    [CLI_ACTIVATION] = {"activation", 0, "ACT",
                        "The fused activation: none (default), relu, leaky_relu[:ALPHA], "
                        "clip[:MIN,MAX], sigmoid, tanh, hard_sigmoid[:ALPHA,BETA]. Left-out "
                        "parameters take the ONNX defaults (leaky_relu 0.01, hard_sigmoid "
                        "0.2,0.5, clip unbounded).",
                        apply_activation, 0, cli_activation_names, false},
    [CLI_INPUT] = {"input", 0, "X.npy",
                   "The input X (float32 .npy; N, C, spatial... or with --layout nhwc N, "
                   "spatial..., C). Required.",
                   apply_string, A(input), NULL, false},
    [CLI_WEIGHTS] = {"weights", 0, "W.npy",
                     "The weights W in ONNX layout (float32 .npy). Required.", apply_string,
                     A(weights), NULL, false},
    [CLI_BIAS_FILE] = {"bias-file", 0, "B.npy",
                       "The bias B: one value per output channel (shape (M,)). Optional.",
                       apply_string, A(bias_file), NULL, false},
    [CLI_RESIDUAL_FILE] = {"residual-file", 0, "Z.npy",
                           "The residual Z, stored exactly as Y will be, added before the "
                           "activation. Optional.",
                           apply_string, A(residual_file), NULL, false},
    [CLI_OUTPUT] = {"output", 0, "Y.npy",
                    "Where Y is written (same layout as X). It is written to a temporary "
                    "file beside it and renamed into place only when complete; an existing "
                    "file is replaced only then. Required.",
                    apply_string, A(output), NULL, false},
    [CLI_ALGO] = {"algo", 0, "NAME",
                  "Force this algorithm instead of the context's choice (`convfind algos` "
                  "lists them; a wrong name lists them too).",
                  apply_string, A(algo), NULL, false},
    [CLI_INPUT_SHAPE] = {"input-shape", 0, "NAME=D0,D1,...",
                         "For a .onnx model: binds graph input NAME's shape (its symbolic "
                         "dims), passed on to `python3 -m convfind.onnx`. May be given "
                         "several times.",
                         apply_input_shape, 0, NULL, true},
    [CLI_LAYERS] = {"layers", 0, "FILE",
                    "The layer CSV to tune (default: data/resnet50_convs.csv, relative to "
                    "the current directory).",
                    apply_string, A(layers), NULL, false},
    [CLI_REPEATS] = {"repeats", 0, "N",
                     "Timed runs per layer when executing, after one warm-up (default 5, at "
                     "most 1000).",
                     apply_int, A(repeats), NULL, false},
    [CLI_MAN] = {"man", 0, NULL,
                 "Print the help as a man page (roff) instead: of COMMAND, or of the tool "
                 "with its list of commands.",
                 apply_switch, A(man), NULL, false},
    [CLI_BASH_COMPLETION] = {"bash-completion", 0, NULL,
                             "Print the bash completion script of the tool.", apply_switch,
                             A(bash_completion), NULL, false},
    [CLI_COMMANDS] = {"commands", 0, NULL, "Print the names of the commands, one per line.",
                      apply_switch, A(commands), NULL, false},

    MIO_INT(CLI_M_FORW, "forw", 'F', "N",
               "MIOpenDriver's direction: 0 (its default) forward, backward data and backward "
               "weights; 1 forward only; 3 and 5 forward with another. convfind computes the "
               "forward convolution, so 2, 4 and 6 (no forward) are errors."),
    MIO_INT(CLI_M_N, "batchsize", 'n', "N", "Mini-batch size (MIOpenDriver default 100)."),
    MIO_INT(CLI_M_C, "in_channels", 'c', "C", "Input channels (default 3)."),
    MIO_INT(CLI_M_H, "in_h", 'H', "H", "Input height (default 32)."),
    MIO_INT(CLI_M_W, "in_w", 'W', "W", "Input width (default 32)."),
    MIO_INT(CLI_M_K, "out_channels", 'k', "K", "Output channels (default 32)."),
    MIO_INT(CLI_M_Y, "fil_h", 'y', "Y", "Filter height (default 3)."),
    MIO_INT(CLI_M_X, "fil_w", 'x', "X", "Filter width (default 3)."),
    MIO_INT(CLI_M_P, "pad_h", 'p', "P", "Zero padding of the height, on both sides (default 0)."),
    MIO_INT(CLI_M_Q, "pad_w", 'q', "Q", "Zero padding of the width, on both sides (default 0)."),
    MIO_INT(CLI_M_U, "conv_stride_h", 'u', "U", "Stride of the height (default 1)."),
    MIO_INT(CLI_M_V, "conv_stride_w", 'v', "V", "Stride of the width (default 1)."),
    MIO_INT(CLI_M_L, "dilation_h", 'l', "L", "Dilation of the height (default 1)."),
    MIO_INT(CLI_M_J, "dilation_w", 'j', "J", "Dilation of the width (default 1)."),
    MIO_INT(CLI_M_G, "group_count", 'g', "G",
            "Groups (default 1); must divide the input and output channels."),
    MIO_INT(CLI_M_SPATIAL_DIM, "spatial_dim", 0, "2|3",
            "Spatial dimensions (default 2); 3 adds the depth flags below."),
    MIO_INT(CLI_M_IN_D, "in_d", 0, "D", "Input depth, 3-D only (default 32)."),
    MIO_INT(CLI_M_FIL_D, "fil_d", 0, "D", "Filter depth, 3-D only (default 3)."),
    MIO_INT(CLI_M_PAD_D, "pad_d", 0, "P", "Zero padding of the depth, 3-D only (default 0)."),
    MIO_INT(CLI_M_STRIDE_D, "conv_stride_d", 0, "S", "Stride of the depth, 3-D only (default 1)."),
    MIO_INT(CLI_M_DIL_D, "dilation_d", 0, "L", "Dilation of the depth, 3-D only (default 1)."),
    MIO_INT(CLI_M_OPAD_D, "trans_output_pad_d", 0, "P",
            "Output padding of the depth, transposed 3-D only (default 0)."),
    MIO_INT(CLI_M_OPAD_H, "trans_output_pad_h", 'Y', "P",
            "Output padding of the height, transposed only (default 0)."),
    MIO_INT(CLI_M_OPAD_W, "trans_output_pad_w", 'X', "P",
            "Output padding of the width, transposed only (default 0)."),
    [CLI_M_MODE] = {"mode", 'm', "conv|trans",
                    "Convolution (default) or transposed convolution (ONNX ConvTranspose).",
                    apply_string, A(mio_mode), mio_mode_choices, false},
    [CLI_M_PAD_MODE] = {"pad_mode", 'z', "default|same|valid",
                        "default: the -p -q pads; same: pads so that the output is the input "
                        "divided by the stride, rounded up, any odd pad at the end (ONNX "
                        "SAME_UPPER); valid: no padding.",
                        apply_string, A(mio_pad_mode), mio_pad_mode_choices, false},
    [CLI_M_IN_LAYOUT] = {"in_layout", 'I', "NCHW|NHWC",
                         "How the input and output are stored (NCDHW, NDHWC in 3-D); "
                         "default channels first.",
                         apply_string, A(mio_in_layout), mio_layout_choices, false},
    [CLI_M_OUT_LAYOUT] = {"out_layout", 'O', "NCHW|NHWC",
                          "The output's layout; convfind stores Y like X, so it must equal "
                          "the input's.",
                          apply_string, A(mio_out_layout), mio_layout_choices, false},
    [CLI_M_FIL_LAYOUT] = {"fil_layout", 'f', "NCHW",
                          "The filter's layout; convfind takes W in ONNX layout only "
                          "(NCHW, NCDHW).",
                          apply_string, A(mio_fil_layout), mio_layout_choices, false},
    MIO_INT(CLI_M_PAD_VAL, "pad_val", 'r', "0",
            "The padding value; ONNX pads with zeros, so only 0 is accepted."),
    MIO_INT(CLI_M_TENSOR_VECT, "tensor_vect", 'Z', "0",
            "Tensor vectorization; only 0 (none) is accepted."),
    MIO_INT(CLI_M_VECTOR_LENGTH, "vector_length", 'L', "1",
            "Tensor vectorization length; only 1 is accepted."),
    MIO_INT(CLI_M_VERIFY, "verify", 'V', "0|1",
               "Verify each result against a reference (default 1). For Find: 1 checks every "
               "candidate's output against the reference algorithm, 0 trusts them."),
    MIO_INT(CLI_M_TIME, "time", 't', "0|1",
               "MIOpenDriver's timing switch. Find always times every candidate; accepted "
               "so that a pasted line works."),
    MIO_INT(CLI_M_ITER, "iter", 'i', "N",
               "MIOpenDriver's timed iterations. Find repeats each candidate until its "
               "budget (--budget-ms) is spent instead; accepted so that a pasted line works."),
    MIO_INT(CLI_M_WALL, "wall", 'w', "N",
               "MIOpenDriver's wall-clock timing switch; accepted, no effect."),
    MIO_INT(CLI_M_SEARCH, "search", 's', "0|1",
               "MIOpenDriver's exhaustive search switch; convfind's Find always measures "
               "every applicable candidate. Accepted, no effect."),
    MIO_INT(CLI_M_PRINTCONV, "printconv", 'P', "0|1",
               "MIOpenDriver's switch to print the dimensions; accepted, no effect."),
    MIO_INT(CLI_M_DUMP_OUTPUT, "dump_output", 'o', "0|1",
               "MIOpenDriver's switch to dump its buffers; accepted, no effect."),
    [CLI_M_SOLUTION] = {"solution", 'S', "ID",
                        "MIOpenDriver's immediate-mode solution; convfind's algorithms have "
                        "other names (--algo with `convfind run`). Accepted, no effect.",
                        apply_string, A(mio_solution), NULL, false},
    MIO_INT(CLI_M_GPUALLOC, "gpualloc", 'G', "0|1",
               "MIOpenDriver's buffer allocation switch; accepted, no effect."),
};

/* ---- the parser ----------------------------------------------------------------- */

bool cli_command_takes(const cli_command *cmd, int id)
{
    for (int s = 0; s < cmd->nsections; s++)
        for (const int *f = cmd->sections[s].flags; *f >= 0; f++)
            if (*f == id)
                return true;
    return false;
}

int cli_flag_by_name(const char *name)
{
    for (int i = 0; i < CLI_FLAG_COUNT; i++)
        if (strcmp(cli_flags[i].name, name) == 0)
            return i;
    return -1;
}

static int flag_by_span(const char *name, size_t len)
{
    for (int i = 0; i < CLI_FLAG_COUNT; i++)
        if (strlen(cli_flags[i].name) == len && strncmp(cli_flags[i].name, name, len) == 0)
            return i;
    return -1;
}

static int flag_by_letter(char letter)
{
    for (int i = 0; i < CLI_FLAG_COUNT; i++)
        if (cli_flags[i].short_name == letter)
            return i;
    return -1;
}

int cli_parse(const cli_command *cmd, int argc, char **argv, cli_args *a)
{
    int npos = 0;
    bool options = true;
    for (int i = 1; i < argc; i++) {
        char *arg = argv[i];
        if (!options || arg[0] != '-' || arg[1] == '\0') {
            argv[npos++] = arg; /* positionals gather at the front; argv[0] is spent */
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            options = false;
            continue;
        }
        if ((strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) && cli_capturing()) {
            cli_usage_error(cmd, "'%s' is not a flag of a problem", arg);
            return CLI_BAD_USAGE;
        }
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            cli_print_help(stdout, cmd);
            return CLI_HELP_SHOWN;
        }
        const char *inline_value = NULL;
        int id;
        if (arg[1] == '-') {
            const char *name = arg + 2;
            const char *eq = strchr(name, '=');
            inline_value = eq ? eq + 1 : NULL;
            id = flag_by_span(name, eq ? (size_t)(eq - name) : strlen(name));
        } else {
            id = arg[2] == '\0' ? flag_by_letter(arg[1]) : -1;
        }
        if (id < 0) {
            cli_usage_error(cmd, "unknown flag '%s' (see convfind help %s)", arg, cmd->name);
            return CLI_BAD_USAGE;
        }
        const cli_flag *f = &cli_flags[id];
        if (!cli_command_takes(cmd, id)) {
            cli_usage_error(cmd, "flag '%s' is not an option of this command (see convfind "
                            "help %s)", arg, cmd->name);
            return CLI_BAD_USAGE;
        }
        if (a->given[id] && !f->repeatable) {
            cli_usage_error(cmd, "flag '%s' given more than once", arg);
            return CLI_BAD_USAGE;
        }
        const char *value = NULL;
        if (f->metavar) {
            if (inline_value) {
                value = inline_value;
            } else if (i + 1 < argc) {
                value = argv[++i];
            } else {
                cli_usage_error(cmd, "flag '%s' needs a value (%s)", arg, f->metavar);
                return CLI_BAD_USAGE;
            }
        } else if (inline_value) {
            cli_usage_error(cmd, "flag '--%s' takes no value", f->name);
            return CLI_BAD_USAGE;
        }
        if (f->apply(f, a, value) != 0)
            return CLI_BAD_USAGE;
        a->given[id]++;
    }
    a->pos = argv;
    a->npos = npos;
    if (cmd->max_pos >= 0 && npos > cmd->max_pos) {
        cli_usage_error(cmd, "unexpected argument '%s' (see convfind help %s)",
                        argv[cmd->max_pos], cmd->name);
        return CLI_BAD_USAGE;
    }
    return CLI_PARSED;
}

const cli_command *cli_command_find(const char *name)
{
    for (int i = 0; cli_commands[i]; i++)
        if (strcmp(cli_commands[i]->name, name) == 0)
            return cli_commands[i];
    return NULL;
}
